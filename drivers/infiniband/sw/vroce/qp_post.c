// SPDX-License-Identifier: GPL-2.0
/*
 * Posting work requests, and the send queue interface of the transport.
 *
 * Kernel QPs: post_send/post_recv copy ib_send_wr/ib_recv_wr into the
 * kernel rings in the rxe WQE layout. User QPs: the rxe provider writes
 * WQEs into the shared rings itself and rings the doorbell with a
 * POST_SEND command that carries no WR (the rxe user ABI); receives need no
 * doorbell.
 *
 * Trust boundary of the send queue: a user SQ ring is user memory that
 * the process may rewrite at any time, before or after posting. A send WQE
 * is only trusted after vroce_sq_peek() copied its header out of the ring
 * and checked that copy; the requester (req.c, ud.c) does that when it
 * reaches the WQE, and a bad one completes with IB_WC_LOC_QP_OP_ERR and
 * moves the QP to ERR. The checks, the same for kernel WRs at post time
 * (vroce_send_wr_check()), all in wqe.c (vroce_send_wqe_ok()):
 * - the opcode is one the QP type takes (vroce_wr_opcode_ok());
 * - send_flags has only FENCE, SIGNALED, SOLICITED and INLINE;
 * - INLINE only on a SEND or RDMA WRITE, the opcodes whose payload the
 *   WQE can carry (as ibv_post_send(3) defines it); READ, the atomics and
 *   local operations with INLINE are malformed. ATOMIC WRITE's 8 bytes are
 *   always in the WQE (dma.atomic_wr), so INLINE changes nothing there;
 * - inline data: dma.length <= max_inline (which fits the element);
 * - an SGE list (non-inline SEND, WRITE, READ, CMP_AND_SWP, FETCH_AND_ADD):
 *   dma.num_sge <= max_sge (which fits the element); the copy's num_sge is
 *   0 for every WQE without one, so no later walk trusts the ring's;
 * - dma.length <= VROCE_MAX_MSG_SIZE, the max_msg_sz the device reports
 *   (a longer message would take more than half the PSN space).
 * Only the checked copy is used afterwards. The requester reads the ring
 * again only for the SGEs (at most the copy's num_sge, each read once into
 * the cursor and checked there, mr_copy.c), inline data (at most the
 * copy's length) and ATOMIC WRITE's value (8 bytes, once). The fields it
 * sends without interpreting (remote address, rkey, immediate data,
 * compare/swap values, a FLUSH's placement type and level, which the
 * responder checks) need no check here; UD's ah_num is looked up in
 * the device's AH table within the QP's PD (ah.c) and a UD WQE's length
 * is bounded by the port MTU (ud.c). A producer index that moved back
 * below the requester's next WQE reads as "nothing posted".
 * Posting kicks the QP's task (task.c); a user doorbell runs it inline when
 * it is idle (vroce_task_doorbell()).
 *
 * Posting in ERR is allowed and flushes at once. User receives posted in
 * ERR (no doorbell) are flushed by the next send doorbell or modify to ERR.
 *
 * Locking: see qp.c.
 */

#include "cq.h"
#include "qp.h"
#include "task.h"

static bool vroce_qp_can_send(enum ib_qp_state state)
{
	return state == IB_QPS_RTS || state == IB_QPS_SQD ||
	       state == IB_QPS_SQE || state == IB_QPS_ERR;
}

/* Is @slot one the producer has published, [cons, prod) of the ring? */
static bool vroce_sq_posted(const struct vroce_queue *q, u32 slot)
{
	u32 cons = READ_ONCE(q->cons);
	u32 prod = vroce_queue_published_prod(q);

	return ((slot - cons) & q->index_mask) < ((prod - cons) & q->index_mask);
}

/**
 * vroce_sq_peek - copy and check a send WQE
 * @qp: the QP; the caller is its requester (vroce_req_assert_owner())
 * @slot: the SQ slot, from the consumer index on
 * @wqe: gets a copy of the WQE header; SGEs or inline data stay in the
 *	ring, at most wqe->dma.num_sge of them or wqe->dma.length bytes
 *
 * No lock: the producer index is read as published in the ring's page
 * (user space or vroce_queue_advance_producer() release it after the
 * element), and a slot before it is not written again until the task
 * retires it (by a well-behaved producer: a user one may write anything
 * at any time, so only the copy is checked and used). The copy's num_sge
 * is 0 if the WQE has no SGE list.
 *
 * Return: 0 with a checked @wqe, -ENOENT if nothing is posted at @slot
 * (it is the producer index, or past it: a user producer index may move
 * back), -EINVAL if the WQE is malformed (complete it with
 * IB_WC_LOC_QP_OP_ERR).
 */
int vroce_sq_peek(struct vroce_qp *qp, u32 slot, struct rxe_send_wqe *wqe)
{
	struct vroce_queue *q = &qp->sq.queue;

	vroce_req_assert_owner(qp);

	if (!vroce_sq_posted(q, slot))
		return -ENOENT;
	memcpy(wqe, vroce_queue_elem(q, slot), sizeof(*wqe));
	if (!vroce_send_wqe_ok(qp, wqe->wr.opcode, wqe->wr.send_flags,
			       wqe->dma.num_sge, wqe->dma.length))
		return -EINVAL;
	if (!vroce_wr_has_sges(wqe->wr.opcode, wqe->wr.send_flags))
		wqe->dma.num_sge = 0;
	return 0;
}

static int vroce_user_doorbell(struct vroce_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	if (!vroce_qp_can_send(state))
		return -EINVAL;
	if (state == IB_QPS_ERR) {
		vroce_qp_flush_sq(qp);
		vroce_qp_flush_rq(qp, false);
	} else {
		vroce_task_doorbell(qp);
	}
	return 0;
}

static int vroce_post_send_one(struct vroce_qp *qp,
			       const struct ib_send_wr *wr)
{
	u32 len;
	int err;

	lockdep_assert_held(&qp->sq.lock);

	err = vroce_send_wr_check(qp, wr, &len);
	if (err)
		return err;
	if (vroce_queue_full(&qp->sq.queue))
		return -ENOMEM;
	vroce_send_wqe_fill(qp, vroce_queue_producer_addr(&qp->sq.queue), wr,
			    len);
	vroce_queue_advance_producer(&qp->sq.queue);
	return 0;
}

int vroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct vroce_qp *qp = to_vqp(ibqp);
	enum ib_qp_state state;
	unsigned long flags;
	int err = 0;

	if (qp->is_user) {
		/* User QPs post through the ring; the command is a doorbell. */
		if (wr) {
			*bad_wr = wr;
			return -EINVAL;
		}
		return vroce_user_doorbell(qp);
	}

	spin_lock_irqsave(&qp->sq.lock, flags);
	state = READ_ONCE(qp->state);
	if (!vroce_qp_can_send(state)) {
		err = -EINVAL;
		*bad_wr = wr;
	}
	for (; wr && !err; wr = wr->next) {
		err = vroce_post_send_one(qp, wr);
		if (err)
			*bad_wr = wr;
	}
	spin_unlock_irqrestore(&qp->sq.lock, flags);

	if (state == IB_QPS_ERR)
		vroce_qp_flush_sq(qp);
	else
		vroce_task_kick(qp);
	return err;
}

int vroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct vroce_qp *qp = to_vqp(ibqp);
	enum ib_qp_state state;
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&qp->rq.lock, flags);
	state = READ_ONCE(qp->state);
	if (qp->is_user || qp->srq || state == IB_QPS_RESET) {
		err = -EINVAL;
		*bad_wr = wr;
	}
	for (; wr && !err; wr = wr->next) {
		err = vroce_recv_wqe_post(&qp->rq, wr);
		if (err)
			*bad_wr = wr;
	}
	spin_unlock_irqrestore(&qp->rq.lock, flags);

	if (state == IB_QPS_ERR)
		vroce_qp_flush_rq(qp, false);
	return err;
}
