// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues.
 *
 * Locking and lifetime:
 * - vroce_srq.rq.lock (spinlock, irqsave) serializes the kernel's side of
 *   the ring (kernel posts; consumption by the transport; resize) and
 *   protects ->limit.
 * - ib_core refuses to destroy an SRQ that a QP still uses (ib_srq.usecnt).
 * - The SRQ number comes from vroce_dev.srqs, an allocating xarray.
 *
 * SRQ limit: modify_srq(IB_SRQ_LIMIT) arms the limit;
 * IB_EVENT_SRQ_LIMIT_REACHED is raised, and the limit disarmed, when the
 * transport consumes a receive and fewer than ->limit remain. Consumption
 * comes with the transport; this file implements the arm semantics.
 */

#include <linux/uaccess.h>
#include <linux/xarray.h>
#include <rdma/uverbs_ioctl.h>

#include "device.h"
#include "query.h"
#include "srq.h"

static int vroce_srq_check_attr(struct vroce_dev *vdev,
				const struct ib_srq_attr *attr)
{
	if (attr->max_wr < 1 || attr->max_wr > vdev->attr.max_srq_wr ||
	    attr->max_sge > vdev->attr.max_srq_sge)
		return -EINVAL;
	return 0;
}

static int vroce_srq_init_queue(struct vroce_srq *srq, struct vroce_queue *q,
				struct ib_udata *udata, u32 *max_wr,
				struct mminfo *mi)
{
	return vroce_queue_init(q, udata, udata ? VROCE_QUEUE_FROM_USER :
				VROCE_QUEUE_KERNEL, max_wr,
				vroce_recv_wqe_size(srq->rq.max_sge), mi);
}

static int vroce_srq_reply(struct vroce_srq *srq, struct ib_udata *udata,
			   const struct mminfo *mi)
{
	struct rxe_create_srq_resp resp = {
		.mi = *mi,
		.srq_num = srq->srq_num,
	};

	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

int vroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibsrq->device);
	struct vroce_srq *srq = to_vsrq(ibsrq);
	struct mminfo mi = {};
	u32 max_wr;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (udata && udata->inlen)
		return -EINVAL;
	err = vroce_srq_check_attr(vdev, &init->attr);
	if (err)
		return err;
	if (init->attr.srq_limit > init->attr.max_wr)
		return -EINVAL;

	spin_lock_init(&srq->rq.lock);
	srq->is_user = udata;
	srq->rq.max_sge = max_t(u32, init->attr.max_sge, 1);
	max_wr = init->attr.max_wr;
	err = xa_alloc_cyclic(&vdev->srqs, &srq->srq_num, srq,
			      XA_LIMIT(1, vdev->attr.max_srq), &vdev->next_srqn,
			      GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;

	err = vroce_srq_init_queue(srq, &srq->rq.queue, udata, &max_wr, &mi);
	if (err)
		goto err_erase;
	srq->rq.max_wr = max_wr;
	srq->limit = init->attr.srq_limit;

	if (udata) {
		err = vroce_srq_reply(srq, udata, &mi);
		if (err)
			goto err_queue;
	}
	init->attr.max_wr = srq->rq.max_wr;
	init->attr.max_sge = srq->rq.max_sge;
	return 0;

err_queue:
	vroce_queue_cleanup(&srq->rq.queue);
err_erase:
	xa_erase(&vdev->srqs, srq->srq_num);
	return err;
}

/* The new ring's mminfo goes where the rxe provider's command points. */
static int vroce_srq_reply_resize(struct ib_udata *udata,
				  const struct mminfo *mi)
{
	struct rxe_modify_srq_cmd cmd;
	int err;

	if (udata->inlen < sizeof(cmd))
		return -EINVAL;
	err = ib_copy_from_udata(&cmd, udata, sizeof(cmd));
	if (err)
		return err;
	if (copy_to_user(u64_to_user_ptr(cmd.mmap_info_addr), mi, sizeof(*mi)))
		return -EFAULT;
	return 0;
}

static int vroce_srq_resize(struct vroce_srq *srq, u32 max_wr,
			    struct ib_udata *udata)
{
	struct vroce_queue newq;
	struct mminfo mi = {};
	u32 want = max_wr;
	unsigned long flags;
	int err;

	err = vroce_srq_init_queue(srq, &newq, udata, &max_wr, &mi);
	if (err)
		return err;
	if (udata) {
		err = vroce_srq_reply_resize(udata, &mi);
		if (err)
			goto out_cleanup;
	}

	spin_lock_irqsave(&srq->rq.lock, flags);
	if (srq->limit > max_wr) {
		err = -EINVAL;
	} else {
		err = vroce_queue_resize(&srq->rq.queue, &newq, want);
		if (!err)
			srq->rq.max_wr = max_wr;
	}
	spin_unlock_irqrestore(&srq->rq.lock, flags);

out_cleanup:
	/* The old ring on success, the unused new one on failure. */
	vroce_queue_cleanup(&newq);
	return err;
}

int vroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibsrq->device);
	struct vroce_srq *srq = to_vsrq(ibsrq);
	unsigned long flags;
	int err = 0;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR) {
		if (attr->max_wr < 1 || attr->max_wr > vdev->attr.max_srq_wr)
			return -EINVAL;
		if ((mask & IB_SRQ_LIMIT) && attr->srq_limit > attr->max_wr)
			return -EINVAL;
		err = vroce_srq_resize(srq, attr->max_wr, udata);
		if (err)
			return err;
	}
	if (mask & IB_SRQ_LIMIT) {
		spin_lock_irqsave(&srq->rq.lock, flags);
		if (attr->srq_limit > srq->rq.max_wr)
			err = -EINVAL;
		else
			srq->limit = attr->srq_limit;
		spin_unlock_irqrestore(&srq->rq.lock, flags);
	}
	return err;
}

int vroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct vroce_srq *srq = to_vsrq(ibsrq);
	unsigned long flags;

	spin_lock_irqsave(&srq->rq.lock, flags);
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	spin_unlock_irqrestore(&srq->rq.lock, flags);
	return 0;
}

int vroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct vroce_srq *srq = to_vsrq(ibsrq);

	vroce_queue_cleanup(&srq->rq.queue);
	xa_erase(&to_vdev(ibsrq->device)->srqs, srq->srq_num);
	return 0;
}

int vroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct vroce_srq *srq = to_vsrq(ibsrq);
	unsigned long flags;
	int err = 0;

	if (srq->is_user) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->rq.lock, flags);
	for (; wr; wr = wr->next) {
		err = vroce_recv_wqe_post(&srq->rq, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&srq->rq.lock, flags);
	return err;
}
