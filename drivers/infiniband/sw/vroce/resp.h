/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The responder of the reliable and unreliable connected transports
 * (resp.c): its state, the READ and atomic requests it keeps for
 * duplicates and the READ responses it sends.
 *
 * Who may call what:
 * - vroce_resp_rx(), vroce_resp_may_overtake(): the receive queue's
 *   dispatch in the QP's task (rxq.c);
 * - vroce_resp_step(), vroce_resp_get_rwqe(): the QP's task (task_mutex),
 *   UD's receive (ud.c) too;
 * - vroce_resp_flush(): the move to ERR (qp_state.c, task_mutex held);
 * - vroce_resp_reset(): with task_mutex held or the QP unreachable.
 */
#ifndef _VROCE_RESP_H
#define _VROCE_RESP_H

#include <linux/types.h>

#include "mr_copy.h"

struct rxe_recv_wqe;
struct sk_buff;
struct vroce_mr;
struct vroce_qp;

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

/* resp.c APIs: */
int vroce_resp_get_rwqe(struct vroce_qp *qp);
void vroce_resp_rx(struct vroce_qp *qp, struct sk_buff *skb);
bool vroce_resp_step(struct vroce_qp *qp);
bool vroce_resp_may_overtake(struct vroce_qp *qp, struct sk_buff *skb);
void vroce_resp_reset(struct vroce_qp *qp);
void vroce_resp_flush(struct vroce_qp *qp);

#endif /* _VROCE_RESP_H */
