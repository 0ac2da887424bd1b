// SPDX-License-Identifier: GPL-2.0
/*
 * The requester: turns send WQEs into request packets.
 *
 * The send queue holds, from its consumer index (the oldest WQE not yet
 * completed) on: WQEs sent and waiting for their acknowledgment, the WQE
 * being sent (req.idx, req.offset bytes of it out), then WQEs not started
 * (from req.next_new, which slot-wise is how far the requester ever got).
 * A WQE is copied out of the ring and checked once, when first started
 * (vroce_sq_peek()), into req.wqes[slot]; only its SGE list or inline data
 * are read from the ring again, when a packet is built, and only within
 * the bounds checked then.
 *
 * Each packet carries up to the path MTU; a message takes consecutive
 * PSNs (a READ request takes as many as it has response packets; an atomic,
 * ATOMIC WRITE or FLUSH one, without payload but for the ATOMIC WRITE's
 * 8 bytes). To a QP
 * of this device (internal loopback), a run of packets of one message goes
 * out as one ONLY, FIRST, MIDDLE or LAST frame of up to VROCE_LOOP_PAYLOAD
 * bytes and takes one PSN per path MTU (vroce_req_segs()). The requester
 * keeps at most VROCE_REQ_WINDOW PSNs unacknowledged, at most
 * max_rd_atomic READ/atomic WQEs outstanding, and waits for them before a
 * fenced WQE.
 *
 * ACKs are batched: AckReq is set every VROCE_REQ_ACKREQ_EVERY PSNs (or
 * half a window, if the window is smaller) and on the last packet of a
 * message that is signaled, a READ or atomic, sent while draining to SQD
 * or with half the SQ unacknowledged; not on the end of another
 * unsignaled SEND or WRITE, which a later ACK covers (vroce_req_ackreq()).
 * So an application that signals one WQE in N costs the responder about
 * one ACK per N messages instead of N. If nothing follows an unasked last
 * packet within VROCE_REQ_PROBE_NS, the requester probes: it sends that
 * packet again, asking, and counts no retry (vroce_req_rewind_tail(),
 * vroce_comp_timer()); a drain to SQD probes at once.
 *
 * The ACK timeout (4.096 us << timeout) runs while anything is
 * unacknowledged: an ACK moves its end (req.ack_due), and the hrtimer
 * catches up only when it expires (vroce_timers_update()).
 *
 * Retransmission is go-back-N: vroce_req_rewind() moves the requester back
 * to the oldest unacknowledged PSN (req.una) and it sends everything from
 * there again, with the opcodes it had (a message resumed in the middle
 * continues with MIDDLE packets; a READ resumed in the middle is a new
 * READ request for the rest).
 *
 * Local operations (fast registration, local invalidation) execute when
 * they are reached, in order, and complete when they reach the head.
 *
 * Context: the QP's task (task.c), which owns the state; or a doorbell's
 * solo run (vroce_req_solo()), which borrows the requester while the task
 * copies a READ response's payload and has lent it. A solo run completes
 * nothing: a WQE that fails in it is left to the task (req.fail_pending),
 * and a local operation, a drain to SQD and a paced QP wait for the task.
 *
 * struct vroce_req, who may touch what ("owner": the task, task_mutex
 * held, or the borrower, req_mutex held and lent set; checked by
 * vroce_req_assert_owner()):
 *
 *   field                          lock                  context
 *   idx, next_new, started,        task_mutex, or        the owner (the
 *   offset, psn, max_psn,          req_mutex while lent  requester, the timer
 *   since_ackreq, rd_atomic, cur,                        API of timers.c)
 *   unasked, ack_due, probe_due,
 *   fail_pending/slot/status,
 *   wqes[next_new..] (starting)
 *   una, window, window_max,       task_mutex, and not   the task (completer,
 *   retry_left, rnr_left,          lent; a borrower      modify_qp): written;
 *   rnr_wait, last_nak_una,        only reads them       lockdep_assert_held
 *   wqes[cons..next_new) .done                           (task_mutex)
 *   rcur, rcur_active              task_mutex            the task, also while
 *                                                        lent (the copy)
 *   lent                           task_mutex and        the task writes;
 *                                  req_mutex to write    READ_ONCE: a doorbell
 *   solo                           req_mutex             the borrower
 *   due                            the owner writes      WRITE_ONCE; READ_ONCE
 *                                                        by the timer's function
 *   timer_fired                    atomic bit            timer sets, task clears
 *   timer                          hrtimer base          any (timers.c)
 *
 * The QP's transmit state (vroce_qp.tx_skb, vroce_qp.run) goes with the
 * requester: the owner's (vroce_xport_pkt_init()).
 *
 * Lending, and why a borrower and the task never touch the same field:
 *  1. The task lends only around the copy of a long READ response
 *     (vroce_comp_read_copy()): holding task_mutex, it sets lent under
 *     req_mutex, copies, and clears lent under req_mutex.
 *  2. During the copy the task touches rcur, the skb and the destination
 *     MR only; no requester code touches rcur. Everything else that could
 *     write the requester's fields (modify_qp, the task's other steps, the
 *     completer) needs task_mutex, which the copying task keeps.
 *  3. A doorbell borrows only with req_mutex held (mutex_trylock) and lent
 *     seen set under it (vroce_task_solo()), so it runs only between the
 *     two writes of step 1.
 *  4. Clearing lent takes req_mutex, so it waits for a borrower to
 *     finish: once the task has taken the requester back, no borrower
 *     runs, and the mutex orders the borrower's writes before the task's
 *     next reads.
 *  5. A borrower runs with solo set: it completes nothing, calls nothing
 *     that asserts task_mutex (completer, UD, the SQD drain check), and
 *     leaves a failure to the task (fail_pending). So what a solo run
 *     reaches (vroce_req_step() on an RC QP, down to vroce_tx() and the
 *     fill and frags callbacks) asserts vroce_req_assert_owner(), never
 *     task_mutex alone.
 */

#include <linux/slab.h>

#include "comp.h"
#include "compat.h"
#include "counters.h"
#include "cq.h"
#include "device.h"
#include "local_op.h"
#include "mr.h"
#include "opcode.h"
#include "qp.h"
#include "req.h"
#include "rx.h"
#include "timers.h"
#include "tx.h"
#include "ud.h"

static u32 vroce_qp_mtu(const struct vroce_qp *qp)
{
	return ib_mtu_enum_to_int(qp->attr.path_mtu);
}

/* WQEs that take a responder resource and wait for a response. */
static bool vroce_wr_rd_atomic(u32 opcode)
{
	return opcode == IB_WR_RDMA_READ || opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IB_WR_ATOMIC_FETCH_AND_ADD ||
	       opcode == VROCE_WR_ATOMIC_WRITE || opcode == VROCE_WR_FLUSH;
}

static bool vroce_wr_local(u32 opcode)
{
	return opcode == IB_WR_REG_MR || opcode == IB_WR_LOCAL_INV ||
	       opcode == IB_WR_BIND_MW;
}

/* Packets (PSNs) a message of @len bytes takes. */
static u32 vroce_msg_pkts(const struct vroce_qp *qp, u32 len)
{
	return len ? DIV_ROUND_UP(len, vroce_qp_mtu(qp)) : 1;
}

/**
 * vroce_req_progress - the peer acknowledged everything before @una
 * @qp: the QP
 * @una: the new oldest unacknowledged PSN (after req.una)
 */
void vroce_req_progress(struct vroce_qp *qp, u32 una)
{
	u32 acked = (una - qp->req.una) & VROCE_PSN_MASK;

	lockdep_assert_held(&qp->task_mutex);
	qp->req.window = min(qp->req.window + max(acked / 2, 1U),
			     qp->req.window_max);
	qp->req.una = una;
	qp->req.retry_left = qp->attr.retry_cnt;
	qp->req.rnr_left = qp->attr.rnr_retry;
	if (qp->req.una != qp->req.psn) {
		vroce_timers_ack_arm(qp);
		return;
	}
	/* Nothing outstanding: a queued timer expires without effect. */
	qp->req.ack_due = 0;
	if (qp->req.psn == qp->req.max_psn) {
		qp->req.unasked = false;
		qp->req.probe_due = 0;
	}
	vroce_timers_update(qp);
}

static void vroce_req_cursor_init(struct vroce_qp *qp, u32 slot)
{
	struct rxe_send_wqe *wqe = vroce_queue_elem(&qp->sq.queue, slot);
	struct vroce_swqe *sw = &qp->req.wqes[slot];

	vroce_sge_cursor_done(&qp->req.cur);
	vroce_sge_cursor_init(&qp->req.cur, to_vdev(qp->ibqp.device),
			      qp->ibqp.pd, wqe->dma.sge, sw->num_sge, 0);
}

static bool vroce_req_inline(const struct vroce_swqe *sw)
{
	return sw->wr.send_flags & IB_SEND_INLINE;
}

/* Does the WQE gather its payload from an SGE list? */
static bool vroce_req_gathers(const struct vroce_swqe *sw)
{
	return !vroce_wr_rd_atomic(sw->wr.opcode) && !vroce_req_inline(sw);
}

/**
 * vroce_req_set_window - size the window for the QP's destination
 * @qp: the QP, entering RTS (its path is set); task_mutex held
 *
 * A destination on this device (internal loopback) loses nothing on the
 * way, and the doorbell runs ahead of the receiver's copies (task.c): its
 * window is VROCE_REQ_WINDOW_LOOP. The frames themselves go where
 * vroce_tx() decides for each, so a path that changes later (the netdev's
 * MAC address) only sizes the window wrongly.
 */
void vroce_req_set_window(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;

	vroce_req_assert_owner(qp);

	if (qp->ibqp.qp_type == IB_QPT_RC && qp->av.sgid_attr &&
	    vroce_tx_is_loopback(qp->av.sgid_attr, qp->av.ah.roce.dmac))
		req->window_max = VROCE_REQ_WINDOW_LOOP;
	else
		req->window_max = VROCE_REQ_WINDOW;
	req->window = min(req->window, req->window_max);
	if (req->una == req->psn)
		req->window = req->window_max;
}

/* A retry: packets were lost, send fewer at a time. */
void vroce_req_shrink_window(struct vroce_qp *qp)
{
	lockdep_assert_held(&qp->task_mutex);
	qp->req.window = max(qp->req.window / 2, (u32)VROCE_REQ_WINDOW_MIN);
}

/* Resend from @psn, a PSN of the WQE in @slot. */
static void vroce_req_resume(struct vroce_qp *qp, u32 slot, u32 psn)
{
	struct vroce_req *req = &qp->req;
	struct vroce_swqe *sw = &req->wqes[slot];
	u32 pkts = (psn - sw->first_psn) & VROCE_PSN_MASK;

	vroce_sge_cursor_done(&req->cur);
	req->idx = slot;
	req->started = true;
	req->psn = psn;
	req->offset = pkts * vroce_qp_mtu(qp);
	req->since_ackreq = 0;
	if (vroce_req_gathers(sw)) {
		vroce_req_cursor_init(qp, slot);
		if (req->offset &&
		    vroce_sge_copy(&req->cur, NULL, req->offset,
				   VROCE_COPY_FROM_MR))
			req->offset = 0;	/* the send will fail again */
	}
}

/**
 * vroce_req_rewind - go back to the oldest unacknowledged PSN
 * @qp: the QP
 *
 * The WQE at the head of the SQ holds req.una: the requester resumes in
 * it, at the packet of that PSN. Also used to move forward, when an ACK
 * acknowledged more than the requester had resent after going back.
 */
void vroce_req_rewind(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	u32 head = qp->sq.queue.cons;

	lockdep_assert_held(&qp->task_mutex);
	if (head == req->next_new) {
		/* Everything was acknowledged: carry on with new WQEs. */
		vroce_sge_cursor_done(&req->cur);
		req->idx = head;
		req->started = false;
		req->offset = 0;
		req->psn = req->una;
		return;
	}
	vroce_req_resume(qp, head, req->una);
}

/**
 * vroce_req_rewind_tail - go back to the newest packet only (the probe)
 * @qp: the QP, with something unacknowledged
 *
 * Sent again, the packet of PSN max_psn - 1 asks for an ACK (it catches
 * up with max_psn); the responder, which has it already, acknowledges
 * everything up to it, or NAKs the first PSN it misses.
 */
void vroce_req_rewind_tail(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	u32 last = vroce_psn_add(req->max_psn, VROCE_PSN_MASK);
	struct vroce_swqe *sw;
	u32 slot;

	lockdep_assert_held(&qp->task_mutex);
	for (slot = qp->sq.queue.cons; slot != req->next_new;
	     slot = vroce_sq_next(qp, slot)) {
		sw = &req->wqes[slot];
		if (!sw->done && vroce_psn_cmp(last, sw->first_psn) >= 0 &&
		    vroce_psn_cmp(last, sw->last_psn) <= 0) {
			vroce_req_resume(qp, slot, last);
			return;
		}
	}
	vroce_req_rewind(qp);
}

/* May the WQE start now? Fences and the READ/atomic limit. */
static bool vroce_req_may_start(struct vroce_qp *qp,
				const struct rxe_send_wqe *wqe)
{
	u32 max = max_t(u32, qp->attr.max_rd_atomic, 1);

	if ((wqe->wr.send_flags & IB_SEND_FENCE) && qp->req.rd_atomic)
		return false;
	if (vroce_wr_rd_atomic(wqe->wr.opcode) && qp->req.rd_atomic >= max)
		return false;
	return true;
}

/*
 * An ATOMIC WRITE's value: the rxe provider puts it where inline data
 * goes (dma.atomic_wr), and dma.length must say 8. Return: false if the
 * WQE is malformed.
 */
static bool vroce_req_atomic_write_value(struct vroce_qp *qp, u32 slot,
					 struct vroce_swqe *sw)
{
	struct rxe_send_wqe *wqe = vroce_queue_elem(&qp->sq.queue, slot);

	if (sw->length != sizeof(u64) ||
	    vroce_queue_elem_size(&qp->sq.queue) <
	    sizeof(*wqe) + sizeof(sw->atomic_wr))
		return false;
	memcpy(&sw->atomic_wr, wqe->dma.inline_data, sizeof(sw->atomic_wr));
	return true;
}

/*
 * The WQE in @slot failed: complete it in error and fail the QP, or in a
 * solo run have the task do that; the requester stops until it has.
 */
static void vroce_req_fail(struct vroce_qp *qp, u32 slot, u8 status)
{
	struct vroce_req *req = &qp->req;

	vroce_req_assert_owner(qp);
	if (!req->solo) {
		vroce_comp_fail_at(qp, slot, status);
		return;
	}
	req->fail_pending = true;
	req->fail_slot = slot;
	req->fail_status = status;
}

/*
 * Start the WQE at req.next_new. Return: true if it started (or failed or
 * was a local operation and is done), false if there is nothing to start
 * or it must wait.
 */
static bool vroce_req_start_new(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	u32 slot = req->next_new;
	struct vroce_swqe *sw = &req->wqes[slot];
	struct rxe_send_wqe wqe;
	int err;

	vroce_req_assert_owner(qp);
	/* The ring can hold at most index_mask WQEs in flight. */
	if (vroce_sq_next(qp, slot) == qp->sq.queue.cons &&
	    slot != qp->sq.queue.cons)
		return false;
	err = vroce_sq_peek(qp, slot, &wqe);
	if (err == -ENOENT)
		return false;

	/* A local operation completes when it is executed: by the task. */
	if (req->solo && !err && vroce_wr_local(wqe.wr.opcode))
		return false;
	memset(sw, 0, sizeof(*sw));
	sw->wr = wqe.wr;
	if (err) {
		req->next_new = vroce_sq_next(qp, slot);
		vroce_req_fail(qp, slot, IB_WC_LOC_QP_OP_ERR);
		return true;
	}
	if (!vroce_req_may_start(qp, &wqe))
		return false;
	sw->length = wqe.dma.length;
	sw->num_sge = wqe.dma.num_sge;

	if (vroce_wr_local(sw->wr.opcode)) {
		sw->status = vroce_local_op(qp, &wqe);
		req->next_new = vroce_sq_next(qp, slot);
		if (sw->status != IB_WC_SUCCESS) {
			vroce_comp_fail_at(qp, slot, sw->status);
			return true;
		}
		sw->done = true;
		req->idx = req->next_new;
		vroce_comp_retire(qp);
		return true;
	}
	if (sw->wr.opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	    sw->wr.opcode == IB_WR_ATOMIC_FETCH_AND_ADD)
		sw->length = sizeof(u64);
	/* A FLUSH's length is the remote range's: it carries no payload. */
	if (sw->wr.opcode == VROCE_WR_FLUSH) {
		sw->flush_len = sw->length;
		sw->length = 0;
	}
	if (sw->wr.opcode == VROCE_WR_ATOMIC_WRITE &&
	    !vroce_req_atomic_write_value(qp, slot, sw)) {
		req->next_new = vroce_sq_next(qp, slot);
		vroce_req_fail(qp, slot, IB_WC_LOC_QP_OP_ERR);
		return true;
	}
	if (vroce_wr_rd_atomic(sw->wr.opcode))
		req->rd_atomic++;
	sw->first_psn = req->psn;
	sw->last_psn = vroce_psn_add(req->psn, vroce_msg_pkts(qp, sw->length) - 1);
	req->next_new = vroce_sq_next(qp, slot);
	req->idx = slot;
	req->started = true;
	req->offset = 0;
	if (vroce_req_gathers(sw))
		vroce_req_cursor_init(qp, slot);
	return true;
}

static u8 vroce_req_send_opcode(u32 wr_opcode, bool first, bool last)
{
	static const u8 send[2][2] = {
		{ IB_OPCODE_RC_SEND_MIDDLE, IB_OPCODE_RC_SEND_LAST },
		{ IB_OPCODE_RC_SEND_FIRST, IB_OPCODE_RC_SEND_ONLY },
	};
	static const u8 write[2][2] = {
		{ IB_OPCODE_RC_RDMA_WRITE_MIDDLE, IB_OPCODE_RC_RDMA_WRITE_LAST },
		{ IB_OPCODE_RC_RDMA_WRITE_FIRST, IB_OPCODE_RC_RDMA_WRITE_ONLY },
	};

	switch (wr_opcode) {
	case IB_WR_SEND_WITH_IMM:
		if (last)
			return first ? IB_OPCODE_RC_SEND_ONLY_WITH_IMMEDIATE :
				       IB_OPCODE_RC_SEND_LAST_WITH_IMMEDIATE;
		break;
	case IB_WR_SEND_WITH_INV:
		if (last)
			return first ? IB_OPCODE_RC_SEND_ONLY_WITH_INVALIDATE :
				       IB_OPCODE_RC_SEND_LAST_WITH_INVALIDATE;
		break;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		if (last)
			return first ?
				IB_OPCODE_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
				IB_OPCODE_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE;
		fallthrough;
	case IB_WR_RDMA_WRITE:
		return write[first][last];
	case IB_WR_RDMA_READ:
		return IB_OPCODE_RC_RDMA_READ_REQUEST;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_OPCODE_RC_COMPARE_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_OPCODE_RC_FETCH_ADD;
	case VROCE_WR_ATOMIC_WRITE:
		return VROCE_OPCODE_RC_ATOMIC_WRITE;
	case VROCE_WR_FLUSH:
		return VROCE_OPCODE_RC_FLUSH;
	default:
		break;
	}
	return send[first][last];
}

/* A FLUSH's FETH and RETH (the rxe ABI has its own fields for them). */
static void vroce_req_flush_ext(const struct vroce_swqe *sw,
				struct vroce_ext_hdrs *ext)
{
	u8 type, level;
	u32 rkey;
	u64 va;

	vroce_compat_wr_flush(&sw->wr, &va, &rkey, &type, &level);
	ext->feth.bits = vroce_feth_pack(type, level);
	ext->reth.va = cpu_to_be64(va);
	ext->reth.rkey = cpu_to_be32(rkey);
	ext->reth.len = cpu_to_be32(sw->flush_len);
}

/* Extension headers of a request packet. */
static void vroce_req_ext(struct vroce_qp *qp, const struct vroce_swqe *sw,
			  struct vroce_pkt_info *pi)
{
	const struct rxe_send_wr *wr = &sw->wr;
	struct vroce_ext_hdrs *ext = &pi->ext;
	bool cmp = wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP;
	u32 offset = qp->req.offset;

	ext->reth.va = cpu_to_be64(wr->wr.rdma.remote_addr + offset);
	ext->reth.rkey = cpu_to_be32(wr->wr.rdma.rkey);
	ext->reth.len = cpu_to_be32(sw->length - offset);
	ext->immdt.imm = wr->ex.imm_data;
	ext->ieth.rkey = cpu_to_be32(wr->ex.invalidate_rkey);
	ext->atmeth.va = cpu_to_be64(wr->wr.atomic.remote_addr);
	ext->atmeth.rkey = cpu_to_be32(wr->wr.atomic.rkey);
	ext->atmeth.swap_add = cpu_to_be64(cmp ? wr->wr.atomic.swap :
					   wr->wr.atomic.compare_add);
	ext->atmeth.compare = cpu_to_be64(cmp ? wr->wr.atomic.compare_add : 0);
	if (wr->opcode == VROCE_WR_FLUSH)
		vroce_req_flush_ext(sw, ext);
}

/* @done: payload bytes of the packet taken so far (req.cur moved past) */
struct vroce_req_fill_ctx {
	struct vroce_qp *qp;
	const struct vroce_swqe *sw;
	u32 done;
	int err;
};

/* The next @len bytes of the packet's payload; tx.c may ask piece by piece. */
static int vroce_req_fill(void *arg, void *dst, u32 len)
{
	struct vroce_req_fill_ctx *ctx = arg;
	struct vroce_qp *qp = ctx->qp;
	u32 off = qp->req.offset + ctx->done;

	vroce_req_assert_owner(qp);	/* req.cur */
	if (ctx->sw->wr.opcode == VROCE_WR_ATOMIC_WRITE) {
		memcpy(dst, (const u8 *)&ctx->sw->atomic_wr + off, len);
	} else if (vroce_req_inline(ctx->sw)) {
		struct rxe_send_wqe *wqe =
			vroce_queue_elem(&qp->sq.queue, qp->req.idx);

		memcpy(dst, wqe->dma.inline_data + off, len);
	} else {
		ctx->err = vroce_sge_copy(&qp->req.cur, dst, len,
					  VROCE_COPY_FROM_MR);
		if (ctx->err)
			return ctx->err;
	}
	ctx->done += len;
	return 0;
}

/*
 * A loopback frame of an RC SEND or WRITE: the payload stays in the
 * sender's pages, the responder copies it from there (one copy). The
 * WQE completes only once the ACK says the responder has done so; a
 * retransmitted or late frame holds its own references on the pages.
 */
static int vroce_req_frags(void *arg, struct sk_buff *skb, u32 len)
{
	struct vroce_req_fill_ctx *ctx = arg;
	int err;

	vroce_req_assert_owner(ctx->qp);	/* req.cur; a solo run too */
	err = vroce_sge_pages(&ctx->qp->req.cur, len, VROCE_TX_FRAGS_MAX,
			      vroce_tx_add_frag, skb);
	if (err == -EAGAIN)
		return err;
	ctx->err = err;
	if (!err)
		ctx->done = len;
	return err;
}

/*
 * RC only: UC is done once sent, before the responder has copied. Not
 * inline or ATOMIC WRITE data either: it is in the WQE, not in an MR.
 */
static bool vroce_req_zero_copy(const struct vroce_qp *qp,
				const struct vroce_swqe *sw, u32 len)
{
	return len >= VROCE_TX_FRAGS_MIN && qp->ibqp.qp_type == IB_QPT_RC &&
	       sw->wr.opcode != VROCE_WR_ATOMIC_WRITE &&
	       !vroce_req_inline(sw);
}

static enum ib_wc_status vroce_req_fill_status(int err)
{
	return err == -ENOSPC ? IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR;
}

/* The WQE at req.idx is fully sent: move on. */
static void vroce_req_wqe_sent(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	u32 slot = vroce_sq_next(qp, req->idx);

	vroce_sge_cursor_done(&req->cur);
	/* After a rewind, WQEs sent before are resent: they are set up. */
	while (slot != req->next_new && req->wqes[slot].done)
		slot = vroce_sq_next(qp, slot);
	req->idx = slot;
	req->offset = 0;
	req->started = slot != req->next_new;
	if (req->started && vroce_req_gathers(&req->wqes[slot]))
		vroce_req_cursor_init(qp, slot);
}

/* UC: nothing is acknowledged, a WQE is done once its last packet is out. */
static void vroce_req_uc_done(struct vroce_qp *qp, struct vroce_swqe *sw)
{
	sw->done = true;
	sw->status = IB_WC_SUCCESS;
	qp->req.una = qp->req.psn;
	vroce_comp_retire(qp);
}

/*
 * The PSNs the next packet of the WQE at req.idx takes: one, or to a QP of
 * this device, one per path MTU of the frame vroce_loop_pkt_len() cuts.
 * Runs end at multiples of VROCE_LOOP_PAYLOAD / MTU packets into the
 * message, so a retransmission cuts it where the first transmission did.
 */
static u32 vroce_req_segs(struct vroce_qp *qp, const struct vroce_swqe *sw)
{
	u32 mtu = vroce_qp_mtu(qp), off = qp->req.offset, len;

	if (vroce_wr_rd_atomic(sw->wr.opcode))
		return 1;
	len = vroce_loop_pkt_len(qp, sw->length - off, mtu, off / mtu);
	return DIV_ROUND_UP(len, mtu) ?: 1;
}

/*
 * Are half the SQ's slots WQEs sent and not acknowledged? Their slots are
 * free again only after an ACK: a consumer that posts only unsignaled WQEs
 * would otherwise find the SQ full until the probe.
 */
static bool vroce_req_sq_half_full(const struct vroce_qp *qp)
{
	const struct vroce_queue *q = &qp->sq.queue;
	u32 sent = (qp->req.next_new - q->cons) & q->index_mask;

	return 2 * sent >= vroce_queue_capacity(q);
}

/*
 * Does a packet of @npsn PSNs ask for an ACK? The responder acknowledges
 * only the packets that do, and an ACK covers every PSN before it. Asked:
 * every VROCE_REQ_ACKREQ_EVERY PSNs (or half a window) so the window keeps
 * moving; the last packet of a message someone waits for (a signaled WQE,
 * the QP draining to SQD, an SQ half full of unacknowledged WQEs; READs
 * and atomics always, their response is the ACK); and the packet of a
 * retransmission that catches up with max_psn. Not asked: the end of any
 * other unsignaled SEND or WRITE. A later ACK covers it; if nothing
 * follows, the probe does (vroce_comp_timer()).
 */
static bool vroce_req_ackreq(struct vroce_qp *qp, const struct vroce_swqe *sw,
			     u8 opcode, u32 npsn)
{
	struct vroce_req *req = &qp->req;
	u32 every = min_t(u32, VROCE_REQ_ACKREQ_EVERY, req->window / 2);
	bool ask;

	req->since_ackreq += npsn;
	if (req->since_ackreq >= every)
		ask = true;
	else if (vroce_psn_cmp(req->psn, req->max_psn) < 0 &&
		 vroce_psn_add(req->psn, npsn) == req->max_psn)
		ask = true;	/* a retransmission's last packet */
	else if (!(vroce_opcode(opcode)->flags & VROCE_OP_ACKREQ))
		ask = false;
	else
		ask = qp->sig_all || (sw->wr.send_flags & IB_SEND_SIGNALED) ||
		      vroce_wr_rd_atomic(sw->wr.opcode) ||
		      READ_ONCE(qp->sq_draining) || vroce_req_sq_half_full(qp);
	if (ask)
		req->since_ackreq = 0;
	return ask;
}

/* The packet just sent is the newest: did it ask for an ACK? */
static void vroce_req_tail_sent(struct vroce_qp *qp, bool asked)
{
	struct vroce_req *req = &qp->req;

	req->unasked = !asked;
	if (asked) {
		req->probe_due = 0;
		return;
	}
	vroce_timers_probe_arm(qp);
}

/* Send the next packet of the WQE at req.idx. */
static void vroce_req_send(struct vroce_qp *qp)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);
	struct vroce_req *req = &qp->req;
	struct vroce_swqe *sw = &req->wqes[req->idx];
	struct vroce_req_fill_ctx ctx = { .qp = qp, .sw = sw };
	bool aw = sw->wr.opcode == VROCE_WR_ATOMIC_WRITE;
	bool rd_atomic = vroce_wr_rd_atomic(sw->wr.opcode) && !aw;
	u32 left = sw->length - req->offset, segs = vroce_req_segs(qp, sw);
	u32 len = rd_atomic ? 0 : min(left, segs * vroce_qp_mtu(qp));
	bool first = req->offset == 0, last = rd_atomic || len == left;
	u32 npsn = rd_atomic ? vroce_msg_pkts(qp, left) : segs;
	bool uc = qp->ibqp.qp_type == IB_QPT_UC;
	struct vroce_pkt_info pi;
	int err;

	vroce_req_assert_owner(qp);
	vroce_xport_pkt_init(qp, &pi, vroce_req_send_opcode(sw->wr.opcode,
							    first, last) |
			     (uc ? IB_OPCODE_UC : IB_OPCODE_RC), req->psn);
	vroce_req_ext(qp, sw, &pi);
	pi.se = last && (sw->wr.send_flags & IB_SEND_SOLICITED);
	pi.ackreq = !uc && vroce_req_ackreq(qp, sw, pi.opcode, npsn);
	pi.paylen = len;
	pi.fill = vroce_req_fill;
	if (vroce_req_zero_copy(qp, sw, len))
		pi.frags = vroce_req_frags;
	pi.fill_ctx = &ctx;

	err = vroce_tx(vdev, &pi, GFP_KERNEL);
	if (ctx.err) {
		/* A local error: bad lkey, SGE outside its MR, short list. */
		vroce_req_fail(qp, req->idx, vroce_req_fill_status(ctx.err));
		return;
	}
	/*
	 * Anything else is a lost packet: retransmission recovers it. The SGE
	 * cursor still moves past the bytes the packet did not take.
	 */
	if (err && ctx.done < len && vroce_req_gathers(sw))
		vroce_sge_copy(&req->cur, NULL, len - ctx.done,
			       VROCE_COPY_FROM_MR);

	if (vroce_psn_cmp(req->psn, req->max_psn) < 0)
		vroce_counter_inc(&vdev->counters, VROCE_CNT_RETRANS_PKTS);
	req->psn = vroce_psn_add(req->psn, npsn);
	if (vroce_psn_cmp(req->psn, req->max_psn) > 0)
		req->max_psn = req->psn;
	req->offset += len;
	if (vroce_cc_paced(&qp->cc))
		vroce_cc_rp_sent(qp, len);
	if (!req->ack_due)
		vroce_timers_ack_arm(qp);
	if (!uc && req->psn == req->max_psn)
		vroce_req_tail_sent(qp, pi.ackreq);
	if (last) {
		vroce_req_wqe_sent(qp);
		if (uc)
			vroce_req_uc_done(qp, sw);
	}
}

/**
 * vroce_req_check_drained - end the SQD drain once nothing is outstanding
 * @qp: the QP; task_mutex held
 *
 * A drain that waits for the ACK of an unsignaled tail sent before it
 * began probes for it now, not when the probe's backstop expires.
 */
void vroce_req_check_drained(struct vroce_qp *qp)
{
	lockdep_assert_held(&qp->task_mutex);
	if (!READ_ONCE(qp->sq_draining))
		return;
	if (qp->sq.queue.cons == qp->req.next_new)
		vroce_qp_sq_drained(qp);
	else if (qp->ibqp.qp_type == IB_QPT_RC)
		vroce_comp_probe_waited(qp);
}

/* May the next packet go out? A READ counts all its response PSNs. */
static bool vroce_req_window_open(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	struct vroce_swqe *sw = &req->wqes[req->idx];
	u32 npsn;

	if (req->una == req->psn)
		return true;
	if (vroce_wr_rd_atomic(sw->wr.opcode))
		npsn = vroce_msg_pkts(qp, sw->length - req->offset);
	else
		npsn = vroce_req_segs(qp, sw);
	return vroce_psn_cmp(vroce_psn_add(req->psn, npsn),
			     vroce_psn_add(req->una, req->window)) <= 0;
}

/**
 * vroce_req_step - send one packet or start one WQE if possible
 * @qp: the QP
 *
 * Return: true if it did something (call again), false if it must wait.
 */
bool vroce_req_step(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	enum ib_qp_state state = READ_ONCE(qp->state);

	vroce_req_assert_owner(qp);

	if (state != IB_QPS_RTS && state != IB_QPS_SQD)
		return false;	/* a failure left pending goes at reset */
	if (unlikely(req->fail_pending)) {
		if (req->solo)
			return false;
		req->fail_pending = false;
		vroce_comp_fail_at(qp, req->fail_slot, req->fail_status);
		return true;
	}
	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI)
		return vroce_ud_req_step(qp);
	if (req->rnr_wait)
		return false;
	if (!req->started) {
		if (state != IB_QPS_RTS || READ_ONCE(qp->sq_draining)) {
			if (!req->solo)
				vroce_req_check_drained(qp);
			return false;
		}
		return vroce_req_start_new(qp);
	}
	if (!vroce_req_window_open(qp))
		return false;
	if (vroce_cc_paced(&qp->cc) &&
	    (req->solo || vroce_cc_rp_wait(qp)))
		return false;
	vroce_req_send(qp);
	return true;
}

/**
 * vroce_req_solo - a doorbell's run of an RC requester alone
 * @qp: the QP; req_mutex held and req.lent set: the task's context, which
 *	holds task_mutex, copies a READ response's payload (comp.c)
 *
 * At most two steps: start a WQE and send its first packet, or send two
 * packets. The copying context waits for req_mutex once it is done.
 */
void vroce_req_solo(struct vroce_qp *qp)
{
	lockdep_assert_held(&qp->req_mutex);
	WARN_ON_ONCE(!qp->req.lent);

	qp->req.solo = true;
	if (vroce_req_step(qp))
		vroce_req_step(qp);
	qp->req.solo = false;
}

/**
 * vroce_req_flush - the QP entered ERR: let go of the MRs the cursors hold
 * @qp: the QP; task_mutex held (the requester is not lent: a borrower
 *	runs only inside the task's READ response copy)
 *
 * Nothing is sent or placed in ERR; the send queue is flushed from its
 * ring, and RESET sets the requester up afresh (vroce_req_reset()).
 */
void vroce_req_flush(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;

	lockdep_assert_held(&qp->task_mutex);
	vroce_sge_cursor_done(&req->cur);
	vroce_sge_cursor_done(&req->rcur);
	req->rcur_active = false;
}

/* Forget everything (modify to RESET, destroy). */
void vroce_req_reset(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;

	vroce_sge_cursor_done(&req->cur);
	vroce_sge_cursor_done(&req->rcur);
	req->rcur_active = false;
	/* The SQ resumes where the ring's consumer index is. */
	req->idx = qp->sq.queue.cons;
	req->next_new = qp->sq.queue.cons;
	req->started = false;
	req->offset = 0;
	req->psn = 0;
	req->una = 0;
	req->max_psn = 0;
	req->since_ackreq = 0;
	req->rd_atomic = 0;
	req->rnr_wait = false;
	req->last_nak_una = VROCE_PSN_MASK + 1;
	req->unasked = false;
	req->ack_due = 0;
	req->probe_due = 0;
	req->due = 0;
	req->window = VROCE_REQ_WINDOW;
	req->window_max = VROCE_REQ_WINDOW;
	req->fail_pending = false;
}
