/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The reliable transport's per-QP state: the requester (req.c), the
 * completer (comp.c), the responder (resp.c) and the task that runs them
 * (task.c). See the execution model at the top of task.c.
 */
#ifndef _VROCE_XPORT_H
#define _VROCE_XPORT_H

#include <linux/hrtimer.h>
#include <linux/mutex.h>
#include <linux/skbuff.h>
#include <linux/workqueue.h>
#include <uapi/rdma/rdma_user_rxe.h>

#include "mr_copy.h"
#include "pkt.h"
#include "tx.h"

struct vroce_qp;
struct vroce_mr;

/* 24-bit PSN order: < 0 if @a is before @b, in half-space terms. */
static inline int vroce_psn_cmp(u32 a, u32 b)
{
	return (s32)((a - b) << 8);
}

static inline u32 vroce_psn_add(u32 psn, u32 n)
{
	return (psn + n) & VROCE_PSN_MASK;
}

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
/* Received packets a QP queues before its task runs; then drops. */
#define VROCE_RXQ_MAX		4096
static_assert(VROCE_REQ_WINDOW_LOOP * 2 <= VROCE_RXQ_MAX);
/*
 * The skb->truesize of one PSN's share of a queued frame, at most: a
 * linear frame of one packet of the largest path MTU (4 KiB) is an 8 KiB
 * head allocation and a struct sk_buff; a loopback frame of n packets, a
 * head of under 2 KiB and n * 4 KiB of payload in page fragments.
 */
#define VROCE_RXQ_PSN_TRUESIZE	(SZ_8K + SZ_1K)
/*
 * The skb->truesize the packets a QP queues may take in all: 36 MiB. A QP
 * legitimately holds two windows of packets at most (its peer's requests
 * and the responses to its own, as for VROCE_RXQ_MAX), so the loopback
 * window fits whole at any path MTU. This stops what the path MTU check
 * (rxq.c) cannot: reassembled datagrams of a short payload in many IP
 * fragments, each an skb of its own.
 */
#define VROCE_RXQ_BYTES		(VROCE_RXQ_MAX * VROCE_RXQ_PSN_TRUESIZE)
static_assert(VROCE_REQ_WINDOW_LOOP * 2 * VROCE_RXQ_PSN_TRUESIZE <=
	      VROCE_RXQ_BYTES);
/* vroce_qp.task_flags: a run was asked for while task_mutex was held. */
#define VROCE_TASK_AGAIN	0
/*
 * Internal loopback (a destination on the sending device, tx.c): a run of
 * packets of one message goes out as one ONLY, FIRST, MIDDLE or LAST frame
 * carrying up to this much payload, whole path MTUs (an ONLY or LAST
 * frame's last may be short), which the responder executes as that many
 * PSNs. So a message of up to 64 KiB is one frame. The frame never
 * reaches a wire; what bounds it is the skb's page fragments, which hold
 * its payload (the sender's pages, or order-0 pages it was copied to):
 * 64 KiB at any page offset takes 17 fragments with 4 KiB pages
 * (MAX_SKB_FRAGS is at least 17), and a loopback frame has no pad or ICRC
 * after it. Per frame costs (an skb, headers, a receive step) dominated at
 * 12 KiB frames.
 */
#define VROCE_LOOP_PAYLOAD	VROCE_TX_PAYLOAD_MAX

/**
 * struct vroce_swqe - the transport's copy of a send WQE being executed
 * @wr: the WR, copied out of the ring and checked once (vroce_sq_peek())
 * @length: total bytes (SGE list or inline)
 * @num_sge: SGEs (bounded by the QP's max_sge)
 * @first_psn: PSN of its first packet
 * @last_psn: PSN of its last packet (READ: of its last response)
 * @done: acknowledged or executed; completes when it reaches the head
 * @status: the completion status once @done
 * @atomic_wr: an ATOMIC WRITE's 8 bytes, as the WQE gave them
 */
struct vroce_swqe {
	struct rxe_send_wr wr;
	u64 atomic_wr;
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
 *	solo run while it copies a long READ response (@lent, task.c)
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

/**
 * struct vroce_rd_res - a READ or atomic the responder accepted, kept for
 * duplicates (max_dest_rd_atomic of them, reused round robin)
 * @valid: in use
 * @atomic: an atomic (else a READ)
 * @psn: its request PSN
 * @last_psn: a READ's last response PSN (an atomic's: @psn)
 * @orig: the atomic's original value, replayed to duplicates
 * @va: a READ's RETH address,
 * @len: RETH length
 * @rkey: and RETH rkey: a duplicate must ask for the same, or for the
 *	tail of it from its PSN on
 */
struct vroce_rd_res {
	bool valid;
	bool atomic;
	u32 psn;
	u32 last_psn;
	u64 orig;
	u64 va;
	u32 len;
	u32 rkey;
};

/**
 * struct vroce_read_job - READ responses being sent
 * @mr: the MR read from, referenced (NULL for a zero-length READ)
 * @va: next address to read
 * @resid: bytes left
 * @psn: PSN of the next response
 * @first: the next response is the first of the READ
 * @active: responses left to send
 */
struct vroce_read_job {
	struct vroce_mr *mr;
	u64 va;
	u32 resid;
	u32 psn;
	bool first;
	bool active;
};

enum vroce_resp_msg {
	VROCE_MSG_NONE,
	VROCE_MSG_SEND,
	VROCE_MSG_WRITE,
};

/**
 * struct vroce_resp - responder state (task-owned)
 * @epsn: the expected PSN
 * @msn: message sequence number (AETH)
 * @nak_sent: a PSN sequence NAK was sent for the current gap
 * @uc_drop: UC: the rest of the current message is dropped
 * @comm_est: IB_EVENT_COMM_EST was raised
 * @msg: the multi-packet message in progress
 * @rwqe: copy of the receive WQE being filled (@have_rwqe)
 * @have_rwqe: @rwqe holds a WQE taken from the RQ or SRQ
 * @rlen: bytes placed into @rwqe
 * @cur: scatters into @rwqe's SGEs
 * @wmr: the MR of the RDMA WRITE in progress, referenced
 * @wva: next address of the write
 * @wresid: bytes the write still expects
 * @wlen: the write's total length (RETH)
 * @ack_pending: an ACK for @ack_psn is owed (coalesced)
 * @ack_psn: PSN to acknowledge
 * @res: max_dest_rd_atomic READ/atomic records; @nres of them
 * @nres: entries in @res
 * @res_next: the entry to reuse next
 * @rd: READ responses in progress
 */
struct vroce_resp {
	u32 epsn;
	u32 msn;
	bool nak_sent;
	bool uc_drop;
	bool comm_est;
	enum vroce_resp_msg msg;
	struct rxe_recv_wqe *rwqe;
	bool have_rwqe;
	u32 rlen;
	struct vroce_sge_cursor cur;
	struct vroce_mr *wmr;
	u64 wva;
	u32 wresid;
	u32 wlen;
	bool ack_pending;
	u32 ack_psn;
	struct vroce_rd_res *res;
	u32 nres;
	u32 res_next;
	struct vroce_read_job rd;
};

/**
 * struct vroce_rx_cb - what the receive path learned about a packet, kept
 * in skb->cb while it waits in the QP's queue
 * @bth_off: offset of the BTH from skb->data
 * @paylen: payload bytes, without pad and ICRC
 * @net_type: enum vroce_net_type
 * @ce: RoCEv2 with CE in the IP ECN field (congestion experienced)
 * @loopback: sent by this device to itself (vroce_rx_loopback()): an
 *	ONLY, FIRST, MIDDLE or LAST packet may carry several path MTUs
 *	(VROCE_LOOP_PAYLOAD)
 * @vlan_id: the VLAN ID of the VLAN netdev it arrived on, or
 *	VROCE_RX_NO_VLAN (a UD completion's vlan_id, for kernel consumers)
 */
struct vroce_rx_cb {
	u16 bth_off;
	u32 paylen;
	u8 net_type;
	bool ce;
	bool loopback;
	u16 vlan_id;
};

#define VROCE_RX_NO_VLAN 0xffff

static inline struct vroce_rx_cb *vroce_rx_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct vroce_rx_cb) > sizeof(skb->cb));
	return (struct vroce_rx_cb *)skb->cb;
}

static inline struct vroce_bth *vroce_rx_bth(struct sk_buff *skb)
{
	return (struct vroce_bth *)(skb->data + vroce_rx_cb(skb)->bth_off);
}

/* task.c APIs: */
struct vroce_run_list;
int vroce_task_init(void);
void vroce_task_exit(void);
void vroce_task_qp_init(struct vroce_qp *qp);
void vroce_task_kick(struct vroce_qp *qp);
void vroce_task_doorbell(struct vroce_qp *qp);
void vroce_task_unlock(struct vroce_qp *qp);
bool vroce_task_handoff(const struct vroce_run_list *run,
			const struct sk_buff *skb);
void vroce_task_wake(struct vroce_qp *qp, struct vroce_run_list *run,
		     bool handoff);

/* rxq.c APIs: */
void vroce_qp_rx(struct vroce_qp *qp, struct sk_buff *skb,
		 struct vroce_run_list *run);
struct sk_buff *vroce_rxq_next(struct vroce_qp *qp);
struct sk_buff *vroce_rxq_peek(struct vroce_qp *qp);
struct sk_buff *vroce_rxq_dequeue(struct vroce_qp *qp);
void vroce_rxq_purge(struct vroce_qp *qp);
void vroce_rxq_dispatch(struct vroce_qp *qp, struct sk_buff *skb);
bool vroce_rxq_may_overtake(struct vroce_qp *qp, struct sk_buff *skb);

/* qp_xport.c APIs: */
int vroce_xport_qp_init(struct vroce_qp *qp);
void vroce_xport_qp_stop(struct vroce_qp *qp);
void vroce_xport_qp_free(struct vroce_qp *qp);
void vroce_xport_reset(struct vroce_qp *qp);
void vroce_xport_modify(struct vroce_qp *qp, const struct ib_qp_attr *attr,
			int mask);
void vroce_xport_pkt_init(struct vroce_qp *qp, struct vroce_pkt_info *pi,
			  u8 opcode, u32 psn);

/* pkt.c APIs: */
void *vroce_pkt_hdr(struct sk_buff *skb, unsigned int hdr);
void *vroce_pkt_payload(struct sk_buff *skb);
int vroce_pkt_walk_payload(struct sk_buff *skb,
			   int (*copy)(void *arg, void *src, u32 len),
			   void *arg);
u32 vroce_pkt_segs(struct sk_buff *skb, u32 mtu);
u32 vroce_loop_pkt_len(struct vroce_qp *qp, u32 left, u32 mtu,
		       u32 in_run);

/* req.c APIs: */
bool vroce_req_step(struct vroce_qp *qp);
void vroce_req_solo(struct vroce_qp *qp);
void vroce_req_reset(struct vroce_qp *qp);
void vroce_req_flush(struct vroce_qp *qp);
void vroce_req_timer_update(struct vroce_qp *qp);
void vroce_req_timer_arm(struct vroce_qp *qp);
void vroce_req_progress(struct vroce_qp *qp, u32 una);
void vroce_req_rewind(struct vroce_qp *qp);
void vroce_req_rewind_tail(struct vroce_qp *qp);
void vroce_req_check_drained(struct vroce_qp *qp);
void vroce_req_shrink_window(struct vroce_qp *qp);
void vroce_req_set_window(struct vroce_qp *qp);

/* comp.c APIs: */
void vroce_comp_rx(struct vroce_qp *qp, struct sk_buff *skb);
void vroce_comp_timer(struct vroce_qp *qp);
void vroce_comp_probe_waited(struct vroce_qp *qp);
void vroce_comp_retire(struct vroce_qp *qp);
void vroce_comp_fail_at(struct vroce_qp *qp, u32 slot,
			enum ib_wc_status status);

/* ud.c APIs: */
bool vroce_ud_req_step(struct vroce_qp *qp);
void vroce_ud_rx(struct vroce_qp *qp, struct sk_buff *skb);

/* resp.c APIs: */
int vroce_resp_get_rwqe(struct vroce_qp *qp);
void vroce_resp_rx(struct vroce_qp *qp, struct sk_buff *skb);
bool vroce_resp_step(struct vroce_qp *qp);
bool vroce_resp_may_overtake(struct vroce_qp *qp, struct sk_buff *skb);
void vroce_resp_reset(struct vroce_qp *qp);
void vroce_resp_flush(struct vroce_qp *qp);

#endif /* _VROCE_XPORT_H */
