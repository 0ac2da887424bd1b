// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues.
 *
 * Locking and lifetime:
 * - vroce_cq.lock (spinlock, irqsave: completions may be posted from any
 *   context) protects the kernel's side of the ring, ->notify and
 *   ->overflowed. It nests inside the QP queue locks (qp.c) and is never
 *   held while calling out: the completion and event handlers of the
 *   consumer run after it is dropped, because a kernel consumer may re-arm
 *   or poll from its handler.
 * - ib_core refuses to destroy a CQ that a QP still uses (ib_cq.usecnt), so
 *   nothing posts to a CQ being destroyed.
 * - User CQs are polled by the provider straight from the ring; the kernel
 *   only produces into them, and reads only the consumer index from the
 *   shared page, masked and checked (queue.c). Kernel CQs are polled with
 *   vroce_poll_cq().
 */

#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "cq.h"
#include "device.h"
#include "query.h"

union vroce_cqe {
	struct ib_wc kwc;
	struct ib_uverbs_wc uwc;
};

static int vroce_cq_check_cqe(struct vroce_dev *vdev, int cqe)
{
	if (cqe < 1 || cqe > vdev->attr.max_cqe)
		return -EINVAL;
	return 0;
}

static int vroce_cq_init_queue(struct vroce_cq *cq, struct vroce_queue *q,
			       struct ib_udata *udata, int cqe)
{
	struct rxe_create_cq_resp resp = {};
	u32 n = cqe;
	int err;

	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	err = vroce_queue_init(q, udata, udata ? VROCE_QUEUE_TO_USER :
			       VROCE_QUEUE_KERNEL, &n, sizeof(union vroce_cqe),
			       &resp.mi);
	if (err)
		return err;
	if (udata) {
		/* rxe_create_cq_resp and rxe_resize_cq_resp are the same. */
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err) {
			vroce_queue_cleanup(q);
			return err;
		}
	}
	return 0;
}

int vroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct vroce_compat_create_cq_arg *arg)
{
	struct ib_udata *udata = vroce_compat_create_cq_udata(arg);
	struct vroce_dev *vdev = to_vdev(ibcq->device);
	struct vroce_cq *cq = to_vcq(ibcq);
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (udata && udata->inlen)
		return -EINVAL;
	err = vroce_cq_check_cqe(vdev, attr->cqe);
	if (err)
		return err;
	if (atomic_inc_return(&vdev->num_cqs) > vdev->attr.max_cq) {
		err = -ENOMEM;
		goto err_count;
	}

	spin_lock_init(&cq->lock);
	cq->is_user = udata;
	err = vroce_cq_init_queue(cq, &cq->queue, udata, attr->cqe);
	if (err)
		goto err_count;
	ibcq->cqe = vroce_queue_capacity(&cq->queue);
	return 0;

err_count:
	atomic_dec(&vdev->num_cqs);
	return err;
}

int vroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct vroce_cq *cq = to_vcq(ibcq);

	vroce_queue_cleanup(&cq->queue);
	atomic_dec(&to_vdev(ibcq->device)->num_cqs);
	return 0;
}

/**
 * vroce_resize_cq - give a CQ room for @cqe completions
 * @ibcq: the CQ
 * @cqe: the new number of entries; at least the completions in the CQ
 * @udata: the user's udata (the provider holds its CQ lock across the call
 *	and maps the new ring from rxe_resize_cq_resp), or NULL
 *
 * A CQ in error (vroce_cq_post()) stays in error until it is destroyed, as
 * IBTA's CQ error: the completions it lost are gone, and so would be the
 * consumer's only sign that the QPs it failed were failed for that.
 *
 * Context: process context.
 * Return: 0, -EINVAL if @cqe is out of range or below the completions
 * present, or -EIO if the CQ is in error; the CQ is unchanged on failure.
 */
int vroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibcq->device);
	struct vroce_cq *cq = to_vcq(ibcq);
	struct vroce_queue newq;
	unsigned long flags;
	int err;

	if (udata && udata->inlen)
		return -EINVAL;
	err = vroce_cq_check_cqe(vdev, cqe);
	if (err)
		return err;
	err = vroce_cq_init_queue(cq, &newq, udata, cqe);
	if (err)
		return err;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflowed)
		err = -EIO;
	else
		err = vroce_queue_resize(&cq->queue, &newq, cqe);
	if (!err)
		ibcq->cqe = vroce_queue_capacity(&cq->queue);
	spin_unlock_irqrestore(&cq->lock, flags);

	/* The old ring on success, the unused new one on failure. */
	vroce_queue_cleanup(&newq);
	return err;
}

int vroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct vroce_cq *cq = to_vcq(ibcq);
	union vroce_cqe *cqe;
	unsigned long flags;
	int n;

	/* The provider polls user CQs from the ring. */
	if (cq->is_user)
		return -EOPNOTSUPP;

	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num_entries && !vroce_queue_empty(&cq->queue); n++) {
		cqe = vroce_queue_consumer_addr(&cq->queue);
		wc[n] = cqe->kwc;
		vroce_queue_advance_consumer(&cq->queue);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int vroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct vroce_cq *cq = to_vcq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* NEXT_COMP covers SOLICITED: an armed NEXT_COMP is not narrowed. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		vroce_queue_sync(&cq->queue);
		ret = !vroce_queue_empty(&cq->queue);
	}
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

static void vroce_cq_event(struct vroce_cq *cq, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.element.cq = &cq->ibcq,
		.event = type,
	};

	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

/*
 * Completion flags as libibverbs reads them from a user CQ entry: GRH and
 * immediate data have the kernel's values, "with invalidate" is bit 3
 * there (IBV_WC_WITH_INV) and bit 2 in the kernel (IB_WC_WITH_INVALIDATE).
 */
#define VROCE_UWC_WITH_INV BIT(3)

static u32 vroce_cq_user_flags(int flags)
{
	return (flags & (IB_WC_GRH | IB_WC_WITH_IMM)) |
	       ((flags & IB_WC_WITH_INVALIDATE) ? VROCE_UWC_WITH_INV : 0);
}

static void vroce_cq_fill(struct vroce_cq *cq, union vroce_cqe *cqe,
			  const struct ib_wc *wc)
{
	struct ib_uverbs_wc *uwc = &cqe->uwc;

	if (!cq->is_user) {
		cqe->kwc = *wc;
		return;
	}
	memset(uwc, 0, sizeof(*uwc));
	uwc->wr_id = wc->wr_id;
	uwc->status = wc->status;
	uwc->opcode = wc->opcode;
	uwc->vendor_err = wc->vendor_err;
	uwc->byte_len = wc->byte_len;
	uwc->ex.imm_data = wc->ex.imm_data;
	uwc->qp_num = wc->qp->qp_num;
	uwc->src_qp = wc->src_qp;
	uwc->wc_flags = vroce_cq_user_flags(wc->wc_flags);
	uwc->pkey_index = wc->pkey_index;
	uwc->slid = wc->slid;
	uwc->sl = wc->sl;
	uwc->dlid_path_bits = wc->dlid_path_bits;
	uwc->port_num = wc->port_num;
}

/**
 * vroce_cq_post - add a completion to a CQ
 * @cq: the CQ
 * @wc: the completion; wc->qp must be set
 * @solicited: the completion is solicited (IB_CQ_SOLICITED notification)
 *
 * A completion that does not fit overflows the CQ: the consumer gets
 * IB_EVENT_CQ_ERR once, the CQ is in error until destroyed, and every later
 * completion is dropped. So does a user CQ whose consumer index user space
 * moved past the producer index (vroce_queue_sync()): the kernel cannot
 * tell which entries are free. The completions already in the CQ can still
 * be polled. A QP whose completion is dropped fails (vroce_qp_complete()).
 *
 * Context: any; the caller may hold its QP queue locks, not this CQ's lock.
 * Return: 0, or -EOVERFLOW if the completion was dropped.
 */
int vroce_cq_post(struct vroce_cq *cq, const struct ib_wc *wc, bool solicited)
{
	bool overflow = false, notify = false;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflowed) {
		spin_unlock_irqrestore(&cq->lock, flags);
		return -EOVERFLOW;
	}
	/* A consumer index past the producer's: as lost as an overflow. */
	if (vroce_queue_sync(&cq->queue) || vroce_queue_full(&cq->queue)) {
		cq->overflowed = true;
		overflow = true;
	} else {
		vroce_cq_fill(cq, vroce_queue_producer_addr(&cq->queue), wc);
		vroce_queue_advance_producer(&cq->queue);
		if (cq->notify == IB_CQ_NEXT_COMP ||
		    (cq->notify == IB_CQ_SOLICITED && solicited)) {
			cq->notify = 0;
			notify = true;
		}
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (overflow) {
		ibdev_dbg(cq->ibcq.device,
			  "CQ overflow or bad consumer index, completions dropped\n");
		vroce_cq_event(cq, IB_EVENT_CQ_ERR);
		return -EOVERFLOW;
	}
	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}
