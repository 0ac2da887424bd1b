// SPDX-License-Identifier: GPL-2.0
/*
 * Work queue elements in the rdma_user_rxe.h layout: a struct rxe_send_wqe
 * or struct rxe_recv_wqe followed by its scatter/gather list (or, for sends,
 * inline data). Kernel QPs use the same layout as user QPs so that the
 * transport reads one format.
 *
 * Fields of an element in a user ring are read with READ_ONCE() and treated
 * as untrusted values: nothing here uses them as a size or an address.
 * Callers hold the work queue's lock.
 */

#include <linux/log2.h>

#include "compat.h"
#include "query.h"
#include "wqe.h"

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
