/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The requester of the reliable transport (req.c): the state it shares
 * with the completer (comp.c), its window and when it asks for ACKs.
 *
 * Who may call what:
 * - vroce_req_step(): the requester's owner, the QP's task or a doorbell
 *   that borrowed it (vroce_req_assert_owner(); the table at the top of
 *   req.c);
 * - vroce_req_progress(), _rewind(), _rewind_tail(), _shrink_window(): the
 *   QP's task only (task_mutex held);
 * - vroce_req_solo(): task.c only, in a doorbell that borrowed it;
 * - vroce_req_flush(), vroce_req_set_window(), vroce_req_check_drained():
 *   modify_qp (qp_state.c, task_mutex held) and the task;
 * - vroce_req_reset(): with task_mutex held or the QP unreachable.
 */
#ifndef _VROCE_REQ_H
#define _VROCE_REQ_H

#include <linux/hrtimer.h>
#include <linux/types.h>
#include <uapi/rdma/rdma_user_rxe.h>

#include "mr_copy.h"

struct vroce_qp;

/*
 * Unacknowledged PSNs the requester allows itself (READ responses
 * included): at most VROCE_REQ_WINDOW, halved down to VROCE_REQ_WINDOW_MIN
 * by every retry and grown back by acknowledgments, so a lossy path does
 * not make go-back-N resend a whole window for each lost packet.
 */
#define VROCE_REQ_WINDOW	256
#define VROCE_REQ_WINDOW_MIN	8
/*
 * The window of a QP whose destination is its own device (internal
 * loopback, where nothing is lost on the way): 32 frames of 64 KiB at a
 * 1024-byte MTU, so that a doorbell runs ahead of the receiver's copies on
 * another CPU (task.c). At most half the receive queue, which holds what
 * the window lets out.
 */
#define VROCE_REQ_WINDOW_LOOP	2048
/* Packets after which the requester asks for an ACK inside a message. */
#define VROCE_REQ_ACKREQ_EVERY	64
/*
 * How long the last packet of an unsignaled SEND or WRITE, sent without
 * AckReq, may stay unacknowledged once nothing follows it: then the
 * requester sends it again, asking (a probe, not a retry). A backstop for
 * a tail nobody waits for: whoever waits asks at once (a drain to SQD, an
 * SQ half full of unacknowledged WQEs). Each new unasked tail moves the
 * deadline, and the timer, when it expires early, re-arms for it: during a
 * stream of unsignaled messages it fires once per this period, an
 * interrupt each time.
 */
#define VROCE_REQ_PROBE_NS	(5 * NSEC_PER_MSEC)
/**
 * struct vroce_swqe - the transport's copy of a send WQE being executed
 * @wr: the WR, copied out of the ring and checked once (vroce_sq_peek())
 * @length: total payload bytes (SGE list or inline; 0 for a FLUSH)
 * @num_sge: SGEs (bounded by the QP's max_sge)
 * @first_psn: PSN of its first packet
 * @last_psn: PSN of its last packet (READ: of its last response)
 * @done: acknowledged or executed; completes when it reaches the head
 * @status: the completion status once @done
 * @atomic_wr: an ATOMIC WRITE's 8 bytes, as the WQE gave them
 * @flush_len: a FLUSH's remote length (RETH), as the WQE gave it
 */
struct vroce_swqe {
	struct rxe_send_wr wr;
	u64 atomic_wr;
	u32 flush_len;
	u32 length;
	u32 num_sge;
	u32 first_psn;
	u32 last_psn;
	bool done;
	u8 status;
};

/**
 * struct vroce_req - requester and completer state, owned by the task
 *	(task_mutex); the task lends the requester's part to a doorbell's
 *	solo run while it copies a long READ response (@lent, req.c)
 * @wqes: one &struct vroce_swqe per send queue slot
 * @idx: the SQ slot being sent (or next to send)
 * @next_new: the first SQ slot never started
 * @started: @wqes[@idx] is copied and has its PSNs (@idx != @next_new)
 * @offset: bytes of @wqes[@idx] already sent
 * @psn: the next PSN to send
 * @una: the oldest unacknowledged PSN
 * @max_psn: one past the highest PSN ever sent (retransmission counting)
 * @window: the current window, in PSNs
 * @window_max: what @window grows back to: VROCE_REQ_WINDOW, or
 *	VROCE_REQ_WINDOW_LOOP for a destination on this device (set on entering
 *	RTS)
 * @since_ackreq: packets sent since the last one with AckReq
 * @rd_atomic: READ and atomic WQEs outstanding
 * @retry_left: transport retries left (reset by forward progress)
 * @rnr_left: RNR retries left (reset by forward progress; 7 = infinite)
 * @rnr_wait: waiting for the RNR timer before retrying
 * @last_nak_una: @una when the last retry for a NAK or an implied NAK
 *	began (> VROCE_PSN_MASK: none): one retry per gap, not per packet
 * @unasked: the last packet sent (before @max_psn) did not ask for an ACK
 * @ack_due: CLOCK_MONOTONIC ns when the ACK timeout or the RNR wait ends;
 *	0: neither runs
 * @probe_due: when an @unasked tail is probed (VROCE_REQ_PROBE_NS after it
 *	went out); 0: none
 * @due: the earlier of @ack_due and @probe_due, 0 if neither: what @timer
 *	waits for (WRITE_ONCE by the task, read by @timer's function)
 * @timer_fired: set by @timer, consumed by the task (atomic bit 0)
 * @timer: fires at @due or earlier; an early expiry re-arms it for @due,
 *	so moving @due later costs no timer operation
 * @cur: gathers the payload of @wqes[@idx] from its SGE list
 * @rcur: scatters READ responses / atomic results of the oldest WQE
 * @rcur_active: @rcur is set up for the WQE at the SQ head
 * @lent: the task lends the requester: set and cleared under
 *	vroce_qp.req_mutex around a long READ response's copy, which touches
 *	only @rcur (vroce_comp_read_copy())
 * @solo: the requester runs in a doorbell that borrowed it (req_mutex
 *	held, @lent set; vroce_req_solo()): it completes nothing
 * @fail_pending: a WQE failed in a solo run; the task completes it
 *	(@fail_slot, @fail_status) before the requester goes on
 * @fail_slot: the failed WQE's slot
 * @fail_status: its completion status
 */
struct vroce_req {
	struct vroce_swqe *wqes;
	u32 idx;
	u32 next_new;
	bool started;
	u32 offset;
	u32 psn;
	u32 una;
	u32 max_psn;
	u32 window;
	u32 window_max;
	u32 since_ackreq;
	u32 rd_atomic;
	u8 retry_left;
	u8 rnr_left;
	bool rnr_wait;
	u32 last_nak_una;
	bool unasked;
	u64 ack_due;
	u64 probe_due;
	u64 due;
	unsigned long timer_fired;
	struct hrtimer timer;
	struct vroce_sge_cursor cur;
	struct vroce_sge_cursor rcur;
	bool rcur_active;
	bool lent;
	bool solo;
	bool fail_pending;
	u32 fail_slot;
	u8 fail_status;
};

/* req.c APIs: */
bool vroce_req_step(struct vroce_qp *qp);
void vroce_req_solo(struct vroce_qp *qp);
void vroce_req_reset(struct vroce_qp *qp);
void vroce_req_flush(struct vroce_qp *qp);
void vroce_req_progress(struct vroce_qp *qp, u32 una);
void vroce_req_rewind(struct vroce_qp *qp);
void vroce_req_rewind_tail(struct vroce_qp *qp);
void vroce_req_check_drained(struct vroce_qp *qp);
void vroce_req_shrink_window(struct vroce_qp *qp);
void vroce_req_set_window(struct vroce_qp *qp);

#endif /* _VROCE_REQ_H */
