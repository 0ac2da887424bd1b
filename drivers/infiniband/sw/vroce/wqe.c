// SPDX-License-Identifier: GPL-2.0
/*
 * Work queue elements in the rdma_user_rxe.h layout: a struct rxe_send_wqe
 * or struct rxe_recv_wqe followed by its scatter/gather list (or, for sends,
 * inline data). Kernel QPs use the same layout as user QPs so that the
 * transport reads one format.
 *
 * Here: the element sizes, a kernel WR's check and copy into its ring (a
 * send WR: vroce_send_wr_check(), vroce_send_wqe_fill(); a receive WR:
 * vroce_recv_wqe_post()), the checks of a send WQE's header that a user
 * WQE's copy gets too (vroce_send_wqe_ok(), called by vroce_sq_peek(),
 * qp_post.c, which lists them), and readers of a WQE's head.
 *
 * Fields of an element in a user ring are read with READ_ONCE() and treated
 * as untrusted values: nothing here uses them as a size or an address.
 * Callers that write a ring hold the work queue's lock.
 */

#include <linux/log2.h>

#include "ah.h"
#include "compat.h"
#include "qp.h"
#include "query.h"
#include "wqe.h"

#define VROCE_WR_BASIC (BIT_ULL(IB_WR_SEND) | BIT_ULL(IB_WR_SEND_WITH_IMM))
/* UC has no SEND with invalidate opcode (IBTA). */
#define VROCE_WR_UC (VROCE_WR_BASIC | BIT_ULL(IB_WR_RDMA_WRITE) | \
		     BIT_ULL(IB_WR_RDMA_WRITE_WITH_IMM) | \
		     BIT_ULL(IB_WR_LOCAL_INV))
#define VROCE_WR_RC (VROCE_WR_UC | BIT_ULL(IB_WR_SEND_WITH_INV) | \
		     BIT_ULL(IB_WR_RDMA_READ) | \
		     BIT_ULL(IB_WR_ATOMIC_CMP_AND_SWP) | \
		     BIT_ULL(IB_WR_ATOMIC_FETCH_AND_ADD))

/* Opcodes below 64 a QP type accepts; REG_MR (kernel), BIND_MW, ATOMIC_WRITE
 * and FLUSH (user: ib_core defines no kernel WR for them; FLUSH from 6.2 on)
 * are handled in vroce_wr_opcode_ok().
 */
static const u64 vroce_wr_opcodes[] = {
	[IB_QPT_GSI] = VROCE_WR_BASIC,
	[IB_QPT_RC] = VROCE_WR_RC,
	[IB_QPT_UC] = VROCE_WR_UC,
	[IB_QPT_UD] = VROCE_WR_BASIC,
};

static bool vroce_wr_opcode_ok(const struct vroce_qp *qp, u32 opcode)
{
	enum ib_qp_type type = qp->ibqp.qp_type;
	bool connected = type == IB_QPT_RC || type == IB_QPT_UC;

	if (opcode == IB_WR_REG_MR)
		return connected && !qp->is_user;
	if (opcode == IB_WR_BIND_MW)
		return connected && qp->is_user;
	if (opcode == VROCE_WR_ATOMIC_WRITE)
		return type == IB_QPT_RC && qp->is_user;
	if (opcode == VROCE_WR_FLUSH)
		return VROCE_COMPAT_FLUSH && type == IB_QPT_RC && qp->is_user;
	if (type >= ARRAY_SIZE(vroce_wr_opcodes) || opcode >= 64)
		return false;
	return vroce_wr_opcodes[type] & BIT_ULL(opcode);
}

/* The send_flags a WQE may carry (ib_verbs.h, ibv_post_send(3)). */
#define VROCE_SEND_FLAGS (IB_SEND_FENCE | IB_SEND_SIGNALED | \
			  IB_SEND_SOLICITED | IB_SEND_INLINE)

/* May the WQE carry its payload inline? SEND and RDMA WRITE only. */
static bool vroce_wr_inline_ok(u32 opcode)
{
	switch (opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case VROCE_WR_ATOMIC_WRITE:	/* its value is in the WQE anyway */
		return true;
	default:
		return false;
	}
}

/* Does the WQE gather or scatter through an SGE list? */
bool vroce_wr_has_sges(u32 opcode, u32 send_flags)
{
	switch (opcode) {
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return true;
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return !(send_flags & IB_SEND_INLINE);
	default:
		return false;
	}
}

/*
 * The checks of a send WQE's header common to a user WQE (a copy of the
 * ring's) and a kernel WR, see the header comment: @num_sge and @length
 * as the WQE has them.
 */
bool vroce_send_wqe_ok(const struct vroce_qp *qp, u32 opcode, u32 send_flags,
		       u32 num_sge, u32 length)
{
	bool inl = send_flags & IB_SEND_INLINE;

	if (!vroce_wr_opcode_ok(qp, opcode) || (send_flags & ~VROCE_SEND_FLAGS))
		return false;
	if (inl && !vroce_wr_inline_ok(opcode))
		return false;
	if (inl && opcode != VROCE_WR_ATOMIC_WRITE && length > qp->sq.max_inline)
		return false;
	if (vroce_wr_has_sges(opcode, send_flags) && num_sge > qp->sq.max_sge)
		return false;
	return length <= VROCE_MAX_MSG_SIZE;
}

/**
 * vroce_send_wr_check - check a kernel send WR before it is posted
 * @qp: the QP
 * @wr: the WR (only this one, not wr->next)
 * @len: gets the WR's length, the sum of its SGEs'
 *
 * Return: 0, or -EINVAL if the WR is malformed (vroce_send_wqe_ok()).
 */
int vroce_send_wr_check(struct vroce_qp *qp, const struct ib_send_wr *wr,
			u32 *len)
{
	int i;

	if (wr->num_sge < 0 || wr->num_sge > qp->sq.max_sge)
		return -EINVAL;
	*len = 0;
	for (i = 0; i < wr->num_sge; i++) {
		if (check_add_overflow(*len, wr->sg_list[i].length, len))
			return -EINVAL;
	}
	if (!vroce_send_wqe_ok(qp, wr->opcode, wr->send_flags, wr->num_sge,
			       *len))
		return -EINVAL;
	return 0;
}

static void vroce_send_wr_fill(struct rxe_send_wr *swr,
			       const struct ib_send_wr *wr)
{
	swr->wr_id = wr->wr_id;
	swr->opcode = wr->opcode;
	swr->send_flags = wr->send_flags;
	swr->ex.imm_data = wr->ex.imm_data;
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		swr->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		swr->wr.rdma.rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		swr->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
		swr->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
		swr->wr.atomic.swap = atomic_wr(wr)->swap;
		swr->wr.atomic.rkey = atomic_wr(wr)->rkey;
		break;
	case IB_WR_LOCAL_INV:
	case IB_WR_SEND_WITH_INV:
		swr->ex.invalidate_rkey = wr->ex.invalidate_rkey;
		break;
	case IB_WR_REG_MR:
		swr->wr.reg.mr = reg_wr(wr)->mr;
		swr->wr.reg.key = reg_wr(wr)->key;
		swr->wr.reg.access = reg_wr(wr)->access;
		break;
	default:
		break;
	}
}

/* Fill @wqe, a kernel ring's element, from @wr, checked (@len: its length). */
void vroce_send_wqe_fill(struct vroce_qp *qp, struct rxe_send_wqe *wqe,
			 const struct ib_send_wr *wr, u32 len)
{
	u8 *inline_data = wqe->dma.inline_data;
	int i;

	memset(wqe, 0, sizeof(*wqe));
	vroce_send_wr_fill(&wqe->wr, wr);
	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI) {
		wqe->wr.wr.ud.remote_qpn = ud_wr(wr)->remote_qpn;
		wqe->wr.wr.ud.remote_qkey = ud_wr(wr)->remote_qkey;
		wqe->wr.wr.ud.pkey_index = ud_wr(wr)->pkey_index;
		wqe->wr.wr.ud.ah_num = to_vah(ud_wr(wr)->ah)->ah_num;
	}
	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (wr->send_flags & IB_SEND_INLINE) {
			memcpy(inline_data, (void *)(uintptr_t)sge->addr,
			       sge->length);
			inline_data += sge->length;
		} else {
			wqe->dma.sge[i].addr = sge->addr;
			wqe->dma.sge[i].length = sge->length;
			wqe->dma.sge[i].lkey = sge->lkey;
		}
	}
	if (wr->opcode == IB_WR_RDMA_WRITE ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_READ)
		wqe->iova = rdma_wr(wr)->remote_addr;
	else if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		 wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD)
		wqe->iova = atomic_wr(wr)->remote_addr;
	wqe->dma.length = len;
	wqe->dma.resid = len;
	wqe->dma.num_sge = wr->num_sge;
}

/**
 * vroce_send_wqe_size - element size of a send queue
 * @max_sge: in: SGEs wanted; out: SGEs that fit the element
 * @max_inline: in: inline bytes wanted; out: inline bytes that fit
 *
 * The element is a power of two, so the space left after the header is
 * reported back (bounded by the device limits) rather than wasted.
 */
size_t vroce_send_wqe_size(u32 *max_sge, u32 *max_inline)
{
	size_t room = max_t(size_t, *max_sge * sizeof(struct rxe_sge),
			    *max_inline);
	size_t size = roundup_pow_of_two(sizeof(struct rxe_send_wqe) +
					 max_t(size_t, room, 1));

	room = size - sizeof(struct rxe_send_wqe);
	*max_sge = min_t(size_t, room / sizeof(struct rxe_sge), VROCE_MAX_SGE);
	*max_inline = min_t(size_t, room, VROCE_MAX_INLINE);
	return size;
}

size_t vroce_recv_wqe_size(u32 max_sge)
{
	return sizeof(struct rxe_recv_wqe) +
	       max_t(u32, max_sge, 1) * sizeof(struct rxe_sge);
}

/**
 * vroce_recv_wqe_post - append a kernel receive WR to a kernel ring
 * @wq: the receive queue; its lock held
 * @wr: the WR (only this one, not wr->next)
 *
 * Return: 0, -EINVAL for too many SGEs, -ENOMEM if the ring is full.
 */
int vroce_recv_wqe_post(struct vroce_wq *wq, const struct ib_recv_wr *wr)
{
	struct rxe_recv_wqe *wqe;
	u32 len = 0;
	int i;

	lockdep_assert_held(&wq->lock);

	if (wr->num_sge < 0 || wr->num_sge > wq->max_sge)
		return -EINVAL;
	if (vroce_queue_full(&wq->queue))
		return -ENOMEM;

	wqe = vroce_queue_producer_addr(&wq->queue);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	for (i = 0; i < wr->num_sge; i++) {
		wqe->dma.sge[i].addr = wr->sg_list[i].addr;
		wqe->dma.sge[i].length = wr->sg_list[i].length;
		wqe->dma.sge[i].lkey = wr->sg_list[i].lkey;
		len += wr->sg_list[i].length;
	}
	wqe->dma.length = len;
	wqe->dma.resid = len;
	wqe->dma.num_sge = wr->num_sge;
	vroce_queue_advance_producer(&wq->queue);
	return 0;
}

enum ib_wc_opcode vroce_wr_to_wc_opcode(u32 wr_opcode)
{
	switch (wr_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case VROCE_WR_ATOMIC_WRITE:
		return VROCE_WC_ATOMIC_WRITE;
	case VROCE_WR_FLUSH:
		return VROCE_WC_FLUSH;
	default:
		return IB_WC_SEND;
	}
}

u64 vroce_recv_wqe_wr_id(const struct vroce_wq *wq, u32 index)
{
	const struct rxe_recv_wqe *wqe = vroce_queue_elem(&wq->queue, index);

	return READ_ONCE(wqe->wr_id);
}

void vroce_send_wqe_head(const struct vroce_wq *wq, u32 index, u64 *wr_id,
			 u32 *opcode)
{
	const struct rxe_send_wqe *wqe = vroce_queue_elem(&wq->queue, index);

	*wr_id = READ_ONCE(wqe->wr.wr_id);
	*opcode = READ_ONCE(wqe->wr.opcode);
}
