// SPDX-License-Identifier: GPL-2.0
/*
 * The completer: acknowledgements, NAKs and READ/atomic responses for the
 * requester's WQEs, the ACK timer and the RNR wait, and completions.
 *
 * Responses come in PSN order. A response for PSN p acknowledges every
 * WQE that ends before p (a SEND or WRITE), except that it cannot stand in
 * for the responses a READ or atomic before p still waits for: that is an
 * implied NAK, and the requester goes back to the oldest unacknowledged
 * PSN (req.una). READ response data is placed only in order (PSN ==
 * req.una), so the scatter cursor (req.rcur) always stands at req.una's
 * bytes of the READ at the head of the send queue.
 *
 * NAKs: PSN sequence error and the ACK timeout retry (retry_cnt times
 * without forward progress, then IB_WC_RETRY_EXC_ERR); RNR NAK waits the
 * time its timer code says and retries (rnr_retry times, 7 = forever, then
 * IB_WC_RNR_RETRY_EXC_ERR); the other NAKs complete the WQE in error.
 * Any error moves the QP to ERR, which flushes what is left. A sequence or
 * RNR NAK inside a READ/atomic's PSNs, past req.una, is ignored (counted
 * as received): no responder sends one (vroce_comp_nak_inside()).
 *
 * WQEs complete in send queue order, from its head, when done; signaled
 * ones (or all, with IB_SIGNAL_ALL_WR, or any in error) produce a
 * completion.
 *
 * Context: the QP's task (task.c), which owns the state; it lends the
 * requester to a doorbell around the copy of a long READ response
 * (vroce_comp_read_copy()).
 */

#include <linux/sizes.h>

#include "comp.h"
#include "counters.h"
#include "cq.h"
#include "debugfs.h"
#include "device.h"
#include "opcode.h"
#include "qp.h"
#include "rx.h"
#include "timers.h"

/*
 * While a READ response payload this long or longer is copied, the task
 * lends the requester (vroce_comp_read_copy()); a shorter copy costs less
 * than a doorbell's run beside it would save (16 KiB: about 5 us under
 * TCG). Measured (tools/bench/ab.sh, loopback, 6.12, 2 vCPUs, medians of
 * 4 rounds) against a build that never lends: ib_read_bw 64 KiB 3237 vs
 * 2254 MiB/s; WRITE and SEND, which never lend, within noise.
 */
#define VROCE_COMP_LEND_MIN SZ_16K

/*
 * RNR NAK timer codes (IBTA vol. 1, the AETH's RNR timer field; enum
 * ib_rnr_timeout) in units of 10 us; code 0 is the longest, 655.36 ms.
 */
static const u32 vroce_rnr_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
	16384, 24576, 32768, 49152,
};

static void vroce_comp_count(struct vroce_qp *qp, enum vroce_counter idx)
{
	vroce_counter_inc(&to_vdev(qp->ibqp.device)->counters, idx);
}

static bool vroce_comp_signaled(const struct vroce_qp *qp,
				const struct vroce_swqe *sw)
{
	return qp->sig_all || (sw->wr.send_flags & IB_SEND_SIGNALED) ||
	       sw->status != IB_WC_SUCCESS;
}

static void vroce_comp_post(struct vroce_qp *qp, const struct vroce_swqe *sw)
{
	struct ib_wc wc = {
		.wr_id = sw->wr.wr_id,
		.status = sw->status,
		.opcode = vroce_wr_to_wc_opcode(sw->wr.opcode),
		.byte_len = sw->length,
		.qp = &qp->ibqp,
		.port_num = 1,
	};

	vroce_qp_complete(qp, qp->scq, &wc, false);
}

/**
 * vroce_comp_retire - complete the done WQEs at the head of the send queue
 * @qp: the QP
 */
void vroce_comp_retire(struct vroce_qp *qp)
{
	struct vroce_queue *q = &qp->sq.queue;
	unsigned long flags;

	lockdep_assert_held(&qp->task_mutex);
	while (q->cons != qp->req.next_new) {
		struct vroce_swqe *sw = &qp->req.wqes[q->cons];

		if (!sw->done)
			break;
		/*
		 * The slot is released before its completion is posted (sw is
		 * the task's copy): a consumer that posts as soon as it polls
		 * the completion must find room in a full ring.
		 */
		spin_lock_irqsave(&qp->sq.lock, flags);
		vroce_queue_advance_consumer(q);
		if (vroce_comp_signaled(qp, sw))
			vroce_comp_post(qp, sw);
		spin_unlock_irqrestore(&qp->sq.lock, flags);
	}
}

static void vroce_comp_count_status(struct vroce_qp *qp,
				    enum ib_wc_status status)
{
	switch (status) {
	case IB_WC_RETRY_EXC_ERR:
		vroce_comp_count(qp, VROCE_CNT_REQ_RETRY_EXC);
		break;
	case IB_WC_RNR_RETRY_EXC_ERR:
		vroce_comp_count(qp, VROCE_CNT_REQ_RNR_RETRY_EXC);
		break;
	case IB_WC_REM_ACCESS_ERR:
		vroce_comp_count(qp, VROCE_CNT_REQ_REM_ACCESS_ERR);
		break;
	case IB_WC_REM_INV_REQ_ERR:
		vroce_comp_count(qp, VROCE_CNT_REQ_REM_INV_REQ);
		break;
	default:
		break;
	}
}

/**
 * vroce_comp_fail_at - a WQE failed: complete it in error, fail the QP
 * @qp: the QP
 * @slot: the WQE's send queue slot (started: before req.next_new)
 * @status: its completion status
 *
 * WQEs before it that are not done complete as flushed (in order), the
 * QP moves to ERR and everything after it is flushed.
 */
void vroce_comp_fail_at(struct vroce_qp *qp, u32 slot,
			enum ib_wc_status status)
{
	u32 i;

	lockdep_assert_held(&qp->task_mutex);
	vroce_comp_count_status(qp, status);
	for (i = qp->sq.queue.cons; i != slot;
	     i = vroce_sq_next(qp, i)) {
		if (!qp->req.wqes[i].done) {
			qp->req.wqes[i].done = true;
			qp->req.wqes[i].status = IB_WC_WR_FLUSH_ERR;
		}
	}
	qp->req.wqes[slot].done = true;
	qp->req.wqes[slot].status = status;
	vroce_comp_retire(qp);
	vroce_qp_error(qp);
}

static void vroce_comp_fail(struct vroce_qp *qp, enum ib_wc_status status)
{
	vroce_comp_fail_at(qp, qp->sq.queue.cons, status);
}

static bool vroce_comp_rd_atomic(const struct vroce_swqe *sw)
{
	return sw->wr.opcode == IB_WR_RDMA_READ ||
	       sw->wr.opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       sw->wr.opcode == IB_WR_ATOMIC_FETCH_AND_ADD ||
	       sw->wr.opcode == VROCE_WR_ATOMIC_WRITE ||
	       sw->wr.opcode == VROCE_WR_FLUSH;
}

/* The WQE at the head is complete; everything up to its end is acked. */
static void vroce_comp_head_done(struct vroce_qp *qp)
{
	struct vroce_swqe *sw = &qp->req.wqes[qp->sq.queue.cons];

	if (vroce_comp_rd_atomic(sw)) {
		qp->req.rd_atomic--;
		vroce_sge_cursor_done(&qp->req.rcur);
		qp->req.rcur_active = false;
	}
	sw->done = true;
	sw->status = IB_WC_SUCCESS;
	vroce_req_progress(qp, vroce_psn_add(sw->last_psn, 1));
	vroce_comp_retire(qp);
}

/* Go back to req.una, once per gap. Return: false if already done. */
static bool vroce_comp_retry(struct vroce_qp *qp)
{
	if (qp->req.last_nak_una == qp->req.una)
		return false;
	qp->req.last_nak_una = qp->req.una;
	vroce_req_shrink_window(qp);
	vroce_req_rewind(qp);
	return true;
}

/* A response shows READ/atomic responses lost: retry, count once per gap. */
static void vroce_comp_implied_nak(struct vroce_qp *qp)
{
	if (vroce_comp_retry(qp))
		vroce_comp_count(qp, VROCE_CNT_IMPLIED_NAK);
}

static bool vroce_comp_outstanding(const struct vroce_qp *qp)
{
	return qp->sq.queue.cons != qp->req.next_new;
}

/*
 * Complete the WQEs that end before @psn. Return: false if one of them is
 * a READ/atomic still waiting for its response (an implied NAK: retried).
 */
static bool vroce_comp_ack_before(struct vroce_qp *qp, u32 psn)
{
	while (vroce_comp_outstanding(qp)) {
		struct vroce_swqe *sw = &qp->req.wqes[qp->sq.queue.cons];

		if (sw->done) {		/* a local operation */
			vroce_comp_retire(qp);
			continue;
		}
		if (vroce_psn_cmp(psn, sw->last_psn) <= 0)
			return true;
		if (vroce_comp_rd_atomic(sw)) {
			vroce_comp_implied_nak(qp);
			return false;
		}
		vroce_comp_head_done(qp);
	}
	return true;
}

/*
 * A NAK inside the PSNs of the READ or atomic at the head, other than
 * req.una, is bogus: a responder's expected PSN skips a READ's response
 * PSNs, so it never NAKs one of them; and req.rcur stands at req.una's
 * bytes, so una cannot move into the READ without its data. Ignored, as
 * a plain ACK there is (vroce_comp_ack()). A NAK at req.una retries from
 * there. vroce_comp_ack_before() left the WQE that holds @psn at the head.
 */
static bool vroce_comp_nak_inside(struct vroce_qp *qp, u32 psn)
{
	return vroce_comp_rd_atomic(&qp->req.wqes[qp->sq.queue.cons]) &&
	       psn != qp->req.una;
}

static void vroce_comp_rnr(struct vroce_qp *qp, u32 psn, u8 code)
{
	struct vroce_req *req = &qp->req;

	vroce_comp_count(qp, VROCE_CNT_RNR_NAK_RCVD);
	if (vroce_comp_nak_inside(qp, psn))
		return;
	if (vroce_psn_cmp(psn, req->una) > 0)
		req->una = psn;
	if (qp->attr.rnr_retry != 7) {
		if (!req->rnr_left) {
			vroce_comp_fail(qp, IB_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		req->rnr_left--;
	}
	vroce_timers_rnr_wait(qp, vroce_rnr_10us[code] * 10000ULL);
}

static void vroce_comp_seq_nak(struct vroce_qp *qp, u32 psn)
{
	vroce_comp_count(qp, VROCE_CNT_PACKET_SEQ_ERR);
	if (vroce_comp_nak_inside(qp, psn))
		return;
	if (vroce_psn_cmp(psn, qp->req.una) > 0)
		vroce_req_progress(qp, psn);
	/* Waiting out an RNR NAK: the retry after it covers this gap. */
	if (qp->req.rnr_wait || qp->req.last_nak_una == qp->req.una)
		return;
	if (!qp->req.retry_left) {
		vroce_comp_fail(qp, IB_WC_RETRY_EXC_ERR);
		return;
	}
	qp->req.retry_left--;
	vroce_comp_retry(qp);
}

static void vroce_comp_ack(struct vroce_qp *qp, struct sk_buff *skb, u32 psn)
{
	struct vroce_aeth *aeth = vroce_pkt_hdr(skb, VROCE_HDR_AETH);
	u8 syn = vroce_aeth_syndrome(aeth);
	struct vroce_swqe *sw = &qp->req.wqes[qp->sq.queue.cons];

	switch (syn & VROCE_AETH_TYPE_MASK) {
	case VROCE_AETH_ACK:
		/* A plain ACK inside a READ/atomic's PSNs is stale. */
		if (vroce_comp_rd_atomic(sw))
			return;
		if (psn == sw->last_psn)
			vroce_comp_head_done(qp);
		else
			vroce_req_progress(qp, vroce_psn_add(psn, 1));
		return;
	case VROCE_AETH_RNR_NAK:
		vroce_comp_rnr(qp, psn, syn & ~VROCE_AETH_TYPE_MASK);
		return;
	case VROCE_AETH_NAK:
		break;
	default:
		return;
	}
	switch (syn) {
	case VROCE_AETH_NAK_PSN_SEQ_ERR:
		vroce_comp_seq_nak(qp, psn);
		break;
	case VROCE_AETH_NAK_INVALID_REQ:
		vroce_comp_fail(qp, IB_WC_REM_INV_REQ_ERR);
		break;
	case VROCE_AETH_NAK_REM_ACC_ERR:
		vroce_comp_fail(qp, IB_WC_REM_ACCESS_ERR);
		break;
	default:
		vroce_comp_fail(qp, IB_WC_REM_OP_ERR);
		break;
	}
}

static int vroce_comp_rcur(struct vroce_qp *qp, struct vroce_swqe *sw)
{
	struct rxe_send_wqe *wqe;

	if (qp->req.rcur_active)
		return 0;
	wqe = vroce_queue_elem(&qp->sq.queue, qp->sq.queue.cons);
	vroce_sge_cursor_init(&qp->req.rcur, to_vdev(qp->ibqp.device),
			      qp->ibqp.pd, wqe->dma.sge, sw->num_sge,
			      IB_ACCESS_LOCAL_WRITE);
	qp->req.rcur_active = true;
	return 0;
}

static enum ib_wc_status vroce_comp_copy_status(int err)
{
	return err == -ENOSPC ? IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR;
}

/*
 * An ATOMIC WRITE or a FLUSH is answered by an RDMA READ response without
 * payload.
 */
static void vroce_comp_no_data_resp(struct vroce_qp *qp,
				    const struct vroce_opcode_info *op,
				    u32 paylen, u32 psn)
{
	struct vroce_swqe *sw = &qp->req.wqes[qp->sq.queue.cons];

	if (psn != sw->first_psn)
		return;
	if (!(op->flags & VROCE_OP_ONLY) || paylen) {
		vroce_comp_fail(qp, IB_WC_BAD_RESP_ERR);
		return;
	}
	vroce_comp_head_done(qp);
}

static int vroce_comp_read_piece(void *arg, void *src, u32 len)
{
	struct vroce_qp *qp = arg;

	return vroce_sge_copy(&qp->req.rcur, src, len, VROCE_COPY_TO_MR);
}

/*
 * The debugfs knob lend_delay_us keeps the requester lent this much
 * longer after a copy, so that a test's doorbells find it lent.
 */
static void vroce_comp_lend_delay(struct vroce_qp *qp)
{
	vroce_debug_delay(READ_ONCE(to_vdev(qp->ibqp.device)->lend_delay_us));
}

/*
 * Copy a READ response's payload through req.rcur. Around a long one the
 * requester is lent, so that a doorbell can run it meanwhile (task.c):
 * the copy touches only rcur, the skb and the destination MR, which no
 * requester does; task_mutex, still held, keeps out everything else that
 * would (modify_qp, the task's other contexts). Taking the requester back
 * waits for a borrower to finish.
 */
static int vroce_comp_read_copy(struct vroce_qp *qp, struct sk_buff *skb,
				u32 paylen)
{
	int err;

	lockdep_assert_held(&qp->task_mutex);

	if (paylen < VROCE_COMP_LEND_MIN)
		return vroce_pkt_walk_payload(skb, vroce_comp_read_piece, qp);
	mutex_lock(&qp->req_mutex);
	WRITE_ONCE(qp->req.lent, true);
	mutex_unlock(&qp->req_mutex);
	err = vroce_pkt_walk_payload(skb, vroce_comp_read_piece, qp);
	vroce_comp_lend_delay(qp);
	mutex_lock(&qp->req_mutex);
	WRITE_ONCE(qp->req.lent, false);
	mutex_unlock(&qp->req_mutex);
	return err;
}

static void vroce_comp_read_resp(struct vroce_qp *qp, struct sk_buff *skb,
				 const struct vroce_opcode_info *op, u32 psn)
{
	struct vroce_swqe *sw = &qp->req.wqes[qp->sq.queue.cons];
	u32 mtu = ib_mtu_enum_to_int(qp->attr.path_mtu);
	u32 paylen = vroce_rx_cb(skb)->paylen, segs = vroce_pkt_segs(skb, mtu);
	u32 done = ((psn - sw->first_psn) & VROCE_PSN_MASK) * mtu;
	bool last = op->flags & (VROCE_OP_LAST | VROCE_OP_ONLY);
	int err;

	if (sw->wr.opcode == VROCE_WR_ATOMIC_WRITE ||
	    sw->wr.opcode == VROCE_WR_FLUSH) {
		vroce_comp_no_data_resp(qp, op, paylen, psn);
		return;
	}
	if (sw->wr.opcode != IB_WR_RDMA_READ)
		return;
	if (psn != qp->req.una) {
		vroce_comp_implied_nak(qp);
		return;
	}
	/*
	 * Every response but the last is full (a loopback FIRST or MIDDLE
	 * frame: @segs full ones); the total is the length.
	 */
	if ((!last && paylen != segs * mtu) || done + paylen > sw->length ||
	    (last && done + paylen != sw->length)) {
		vroce_comp_fail(qp, IB_WC_BAD_RESP_ERR);
		return;
	}
	vroce_comp_rcur(qp, sw);
	err = vroce_comp_read_copy(qp, skb, paylen);
	if (err) {
		vroce_comp_fail(qp, vroce_comp_copy_status(err));
		return;
	}
	if (last)
		vroce_comp_head_done(qp);
	else
		vroce_req_progress(qp, vroce_psn_add(psn, segs));
}

static void vroce_comp_atomic_ack(struct vroce_qp *qp, struct sk_buff *skb,
				  u32 psn)
{
	struct vroce_atmack *ack = vroce_pkt_hdr(skb, VROCE_HDR_ATMACK);
	struct vroce_swqe *sw = &qp->req.wqes[qp->sq.queue.cons];
	u64 orig = be64_to_cpu(ack->orig);
	int err;

	if (!vroce_comp_rd_atomic(sw) || sw->wr.opcode == IB_WR_RDMA_READ ||
	    sw->wr.opcode == VROCE_WR_ATOMIC_WRITE ||
	    sw->wr.opcode == VROCE_WR_FLUSH || psn != sw->first_psn)
		return;
	vroce_comp_rcur(qp, sw);
	err = vroce_sge_copy(&qp->req.rcur, &orig, sizeof(orig),
			     VROCE_COPY_TO_MR);
	if (err) {
		vroce_comp_fail(qp, vroce_comp_copy_status(err));
		return;
	}
	vroce_comp_head_done(qp);
}

/**
 * vroce_comp_rx - handle a response packet
 * @qp: the QP
 * @skb: the packet; consumed
 */
void vroce_comp_rx(struct vroce_qp *qp, struct sk_buff *skb)
{
	const struct vroce_bth *bth = vroce_rx_bth(skb);
	const struct vroce_opcode_info *op = vroce_opcode(bth->opcode);
	u32 psn = vroce_bth_psn(bth);
	enum ib_qp_state state = READ_ONCE(qp->state);

	lockdep_assert_held(&qp->task_mutex);
	if (state != IB_QPS_RTS && state != IB_QPS_SQD && state != IB_QPS_SQE)
		goto out;
	/* Stale (before req.una) or bogus (never sent) responses. */
	if (vroce_psn_cmp(psn, qp->req.una) < 0 ||
	    vroce_psn_cmp(psn, qp->req.max_psn) >= 0)
		goto out;
	if (!vroce_comp_ack_before(qp, psn) || !vroce_comp_outstanding(qp))
		goto out;

	switch (bth->opcode) {
	case IB_OPCODE_RC_ACKNOWLEDGE:
		vroce_comp_ack(qp, skb, psn);
		break;
	case IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE:
		vroce_comp_atomic_ack(qp, skb, psn);
		break;
	default:
		vroce_comp_read_resp(qp, skb, op, psn);
		break;
	}
	/*
	 * Resending after going back, the requester may be behind what the
	 * peer just acknowledged (its earlier ACKs were late): it must not
	 * go on in WQEs that are completed and whose slots are reused.
	 */
	if (vroce_psn_cmp(qp->req.una, qp->req.psn) > 0)
		vroce_req_rewind(qp);
out:
	consume_skb(skb);	/* handled, even if stale: not a drop */
}

/*
 * The newest packet did not ask for an ACK, and the requester is not in
 * the middle of going back (its next PSN is a new one): a probe, not a
 * retry, is due.
 */
static bool vroce_comp_may_probe(const struct vroce_qp *qp)
{
	return qp->req.unasked && qp->req.psn == qp->req.max_psn;
}

/*
 * Send the newest packet again, asking. The responder acknowledges it as
 * a duplicate (or NAKs a gap before it). Not a retry: nothing need have
 * been lost. Once per tail: if the probe goes unanswered too, the next
 * expiry of the ACK timeout is a retry.
 */
static void vroce_comp_probe(struct vroce_qp *qp)
{
	qp->req.unasked = false;
	qp->req.last_nak_una = VROCE_PSN_MASK + 1;
	vroce_req_rewind_tail(qp);
	vroce_timers_ack_arm(qp);
}

/**
 * vroce_comp_probe_waited - probe now for an unasked tail someone waits for
 * @qp: the QP; task_mutex held
 *
 * The end of a drain to SQD waits for the ACK of every WQE started; the
 * probe's timer is only the backstop of a tail nobody waits for.
 */
void vroce_comp_probe_waited(struct vroce_qp *qp)
{
	lockdep_assert_held(&qp->task_mutex);

	if (vroce_comp_outstanding(qp) && vroce_comp_may_probe(qp))
		vroce_comp_probe(qp);
}

/* The ACK timeout expired with WQEs outstanding. */
static void vroce_comp_ack_timeout(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;

	if (vroce_comp_may_probe(qp)) {
		vroce_comp_probe(qp);
		return;
	}
	vroce_comp_count(qp, VROCE_CNT_LOCAL_ACK_TIMEOUT);
	if (!req->retry_left) {
		vroce_comp_fail(qp, IB_WC_RETRY_EXC_ERR);
		return;
	}
	req->retry_left--;
	req->last_nak_una = VROCE_PSN_MASK + 1;
	vroce_req_shrink_window(qp);
	vroce_req_rewind(qp);
	vroce_timers_ack_arm(qp);
}

/**
 * vroce_comp_timer - the timer expired: end of an RNR wait, the probe of
 *	an unasked tail, or the ACK timeout; or none yet (the ends moved)
 * @qp: the QP
 */
void vroce_comp_timer(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	bool waiting = req->una != req->psn && vroce_comp_outstanding(qp);
	u64 now = ktime_get_ns();

	lockdep_assert_held(&qp->task_mutex);

	if (req->rnr_wait) {
		if (now < req->ack_due)
			goto rearm;
		req->rnr_wait = false;
		req->ack_due = 0;
		req->last_nak_una = VROCE_PSN_MASK + 1;
		vroce_req_rewind(qp);
		return;
	}
	if (req->probe_due && now >= req->probe_due) {
		req->probe_due = 0;
		if (vroce_comp_may_probe(qp) && waiting) {
			vroce_comp_probe(qp);
			return;
		}
	}
	if (req->ack_due && now >= req->ack_due) {
		req->ack_due = 0;
		if (waiting) {
			vroce_comp_ack_timeout(qp);
			return;
		}
	}
rearm:
	vroce_timers_update(qp);
}
