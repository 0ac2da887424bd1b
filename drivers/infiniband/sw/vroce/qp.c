// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs: creation, destruction, query and lookup by QPN.
 * Modification and the state machine are in qp_state.c, posting and the
 * send queue interface of the transport in qp_post.c.
 *
 * Locking:
 * - vroce_qp.state_lock (spinlock, irqsave) protects ->state,
 *   ->sq_draining, ->attr and ->av. It is never held while a queue lock is
 *   taken.
 * - vroce_qp.sq.lock and .rq.lock (spinlocks, irqsave) serialize the
 *   kernel's side of each ring. CQ locks nest inside them: completions
 *   (including flushes) are posted with the queue lock held, so a kernel
 *   consumer must not post to the same QP from its completion handler
 *   (ib_cq's handlers only schedule polling, which is fine).
 *
 * Lifetime (QPN lookup, used by the receive path):
 * - QPNs come from vroce_dev.qps, an allocating xarray: 1 is the GSI QP,
 *   0 and 2..15 are never handed out, the rest is allocated cyclically
 *   below 0xffffff (the multicast QPN). The slot is reserved at the start
 *   of create_qp and the QP's struct vroce_qp_ref is stored in it only
 *   once the QP is complete.
 * - ib_core kfree()s the QP as soon as destroy_qp returns, without an RCU
 *   grace period; the vroce_qp_ref, which holds the reference count, is
 *   freed with kfree_rcu(). vroce_qp_get() loads the vroce_qp_ref under
 *   rcu_read_lock() and takes a reference with refcount_inc_not_zero():
 *   only with one does it touch the QP. A multicast attachment points to
 *   the vroce_qp_ref too (mcast.c). vroce_qp_put() drops a reference.
 * - destroy_qp (1) detaches the multicast groups and erases the QPN, (2)
 *   drops the creation reference and waits for ->released, i.e. for every
 *   reference taken by a lookup (a reader that loaded the vroce_qp_ref
 *   without one finds the count at zero), (3) stops the transport, frees
 *   the rings and hands the vroce_qp_ref to kfree_rcu(). No grace period
 *   is waited for: destroying a QP cost one (about 20 ms) when the count
 *   was in the QP. Deferred work that uses a QP (its task, task.c) owns a
 *   reference, so step 2 waits for it; vroce_qp.dying, set first, keeps
 *   the task from doing more.
 */

#include <linux/slab.h>
#include <linux/xarray.h>
#include <rdma/uverbs_ioctl.h>

#include "cq.h"
#include "device.h"
#include "mcast.h"
#include "mw.h"
#include "qp.h"
#include "query.h"
#include "srq.h"
#include "task.h"

#define VROCE_QPN_GSI 1
#define VROCE_QPN_MIN 16
/* 0xffffff is the multicast QPN (mcast.h). */
#define VROCE_QPN_MAX 0xfffffe

static int vroce_qp_check_caps(struct vroce_dev *vdev,
			       const struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;
	const struct ib_device_attr *dattr = &vdev->attr;

	if (cap->max_send_wr > dattr->max_qp_wr ||
	    cap->max_send_sge > dattr->max_send_sge ||
	    cap->max_inline_data > VROCE_MAX_INLINE)
		return -EINVAL;
	if (!init->srq && (cap->max_recv_wr > dattr->max_qp_wr ||
			   cap->max_recv_sge > dattr->max_recv_sge))
		return -EINVAL;
	return 0;
}

static int vroce_qp_check_init(struct vroce_dev *vdev,
			       const struct ib_qp_init_attr *init,
			       struct ib_udata *udata)
{
	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		if (udata || init->port_num != 1)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (udata && (udata->inlen ||
		      udata->outlen < sizeof(struct rxe_create_qp_resp)))
		return -EINVAL;
	return vroce_qp_check_caps(vdev, init);
}

static int vroce_qp_init_sq(struct vroce_qp *qp, struct ib_qp_init_attr *init,
			    struct ib_udata *udata, struct mminfo *mi)
{
	struct ib_qp_cap *cap = &init->cap;
	u32 max_wr = cap->max_send_wr;
	size_t esize;
	int err;

	qp->sq.max_sge = cap->max_send_sge;
	qp->sq.max_inline = cap->max_inline_data;
	esize = vroce_send_wqe_size(&qp->sq.max_sge, &qp->sq.max_inline);
	err = vroce_queue_init(&qp->sq.queue, udata, udata ?
			       VROCE_QUEUE_FROM_USER : VROCE_QUEUE_KERNEL,
			       &max_wr, esize, mi);
	if (err)
		return err;
	qp->sq.max_wr = max_wr;
	cap->max_send_wr = max_wr;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->sq.max_inline;
	return 0;
}

static int vroce_qp_init_rq(struct vroce_qp *qp, struct ib_qp_init_attr *init,
			    struct ib_udata *udata, struct mminfo *mi)
{
	struct ib_qp_cap *cap = &init->cap;
	u32 max_wr = cap->max_recv_wr;
	int err;

	if (init->srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		return 0;
	}
	qp->rq.max_sge = max_t(u32, cap->max_recv_sge, 1);
	err = vroce_queue_init(&qp->rq.queue, udata, udata ?
			       VROCE_QUEUE_FROM_USER : VROCE_QUEUE_KERNEL,
			       &max_wr, vroce_recv_wqe_size(qp->rq.max_sge),
			       mi);
	if (err)
		return err;
	qp->rq.max_wr = max_wr;
	cap->max_recv_wr = max_wr;
	cap->max_recv_sge = qp->rq.max_sge;
	return 0;
}

static void vroce_qp_setup(struct vroce_qp *qp,
			   const struct ib_qp_init_attr *init,
			   struct ib_udata *udata)
{
	refcount_set(&qp->ref->count, 1);
	qp->ref->qp = qp;
	init_completion(&qp->released);
	spin_lock_init(&qp->state_lock);
	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);
	INIT_LIST_HEAD(&qp->mcast);
	qp->state = IB_QPS_RESET;
	qp->is_user = udata;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->scq = to_vcq(init->send_cq);
	qp->rcq = to_vcq(init->recv_cq);
	qp->srq = init->srq ? to_vsrq(init->srq) : NULL;
	qp->attr.port_num = 1;
	qp->attr.path_mtu = IB_MTU_1024;
	qp->attr.path_mig_state = IB_MIG_MIGRATED;
}

/* Reserve the QPN; the QP is stored in the slot once it is complete. */
static int vroce_qp_reserve_qpn(struct vroce_dev *vdev, struct vroce_qp *qp,
				enum ib_qp_type type)
{
	u32 qpn;
	int err;

	if (type == IB_QPT_GSI) {
		err = xa_insert(&vdev->qps, VROCE_QPN_GSI, NULL, GFP_KERNEL);
		qpn = VROCE_QPN_GSI;
	} else {
		err = xa_alloc_cyclic(&vdev->qps, &qpn, NULL,
				      XA_LIMIT(VROCE_QPN_MIN, VROCE_QPN_MAX),
				      &vdev->next_qpn, GFP_KERNEL);
	}
	if (err < 0)
		return err;
	qp->ibqp.qp_num = qpn;
	return 0;
}

static int vroce_qp_reply(struct vroce_qp *qp, struct ib_udata *udata,
			  struct rxe_create_qp_resp *resp)
{
	if (!udata)
		return 0;
	return ib_copy_to_udata(udata, resp, sizeof(*resp));
}

int vroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibqp->device);
	struct vroce_qp *qp = to_vqp(ibqp);
	struct rxe_create_qp_resp resp = {};
	int err;

	err = vroce_qp_check_init(vdev, init, udata);
	if (err)
		return err;
	if (atomic_inc_return(&vdev->num_qps) > vdev->attr.max_qp) {
		err = -ENOMEM;
		goto err_count;
	}
	qp->ref = kmalloc(sizeof(*qp->ref), GFP_KERNEL_ACCOUNT);
	if (!qp->ref) {
		err = -ENOMEM;
		goto err_count;
	}
	vroce_qp_setup(qp, init, udata);

	err = vroce_qp_reserve_qpn(vdev, qp, init->qp_type);
	if (err)
		goto err_free_ref;
	err = vroce_qp_init_sq(qp, init, udata, &resp.sq_mi);
	if (err)
		goto err_erase_qpn;
	err = vroce_qp_init_rq(qp, init, udata, &resp.rq_mi);
	if (err)
		goto err_cleanup_sq;
	qp->attr.cap = init->cap;
	err = vroce_xport_qp_init(qp);
	if (err)
		goto err_cleanup_rq;
	err = vroce_qp_reply(qp, udata, &resp);
	if (err)
		goto err_free_xport;
	err = xa_err(xa_store(&vdev->qps, ibqp->qp_num, qp->ref, GFP_KERNEL));
	if (err)
		goto err_free_xport;
	return 0;

err_free_xport:
	vroce_xport_qp_free(qp);
err_cleanup_rq:
	vroce_queue_cleanup(&qp->rq.queue);
err_cleanup_sq:
	vroce_queue_cleanup(&qp->sq.queue);
err_erase_qpn:
	xa_erase(&vdev->qps, ibqp->qp_num);
err_free_ref:
	kfree(qp->ref);
err_count:
	atomic_dec(&vdev->num_qps);
	return err;
}

/**
 * vroce_qp_get - find a QP by number and take a reference
 * @vdev: the device
 * @qpn: the QP number (the caller masks it to 24 bits)
 *
 * Context: any.
 * Return: the QP, to be released with vroce_qp_put(), or NULL.
 */
struct vroce_qp *vroce_qp_get(struct vroce_dev *vdev, u32 qpn)
{
	struct vroce_qp *qp;

	rcu_read_lock();
	qp = vroce_qp_tryget(xa_load(&vdev->qps, qpn));
	rcu_read_unlock();
	return qp;
}

/**
 * vroce_qp_tryget - take a reference on the QP of @ref
 * @ref: a vroce_qp_ref found under rcu_read_lock(), or NULL
 *
 * Return: the QP, to be released with vroce_qp_put(), or NULL if @ref is
 * NULL or its QP is being destroyed.
 */
struct vroce_qp *vroce_qp_tryget(struct vroce_qp_ref *ref)
{
	if (!ref || !refcount_inc_not_zero(&ref->count))
		return NULL;
	return ref->qp;
}

void vroce_qp_put(struct vroce_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref->count))
		complete(&qp->released);
}

/* Raise an asynchronous event; the consumer's handler may not sleep. */
void vroce_qp_event(struct vroce_qp *qp, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = type,
	};

	if (qp->ibqp.event_handler)
		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
}

/*
 * An unreliable QP first sends what was posted to it (vroce_task_finish():
 * that waits for nothing on the network); the WQEs still queued after
 * that, and a reliable QP's, are dropped without completions: the
 * consumer is destroying the QP, and its CQs may go right after. The wait
 * for the references also waits for a queued or running task (task.c).
 */
int vroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibqp->device);
	struct vroce_qp *qp = to_vqp(ibqp);

	if (ibqp->qp_type != IB_QPT_RC)
		vroce_task_finish(qp);
	WRITE_ONCE(qp->dying, true);
	vroce_mcast_qp_destroyed(qp);
	xa_erase(&vdev->qps, ibqp->qp_num);
	vroce_qp_put(qp);
	wait_for_completion(&qp->released);
	/* Type 2B windows bound to this QP number are unbound (mw.c). */
	vroce_mw_qp_destroyed(vdev, ibqp->qp_num);

	vroce_xport_qp_stop(qp);
	vroce_xport_qp_free(qp);
	vroce_qp_release_av(qp);
	vroce_queue_cleanup(&qp->rq.queue);
	vroce_queue_cleanup(&qp->sq.queue);
	/* A lookup may still hold the pointer it loaded, without a reference. */
	kfree_rcu(qp->ref, rcu);
	atomic_dec(&vdev->num_qps);
	return 0;
}

int vroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct vroce_qp *qp = to_vqp(ibqp);
	unsigned long flags;

	spin_lock_irqsave(&qp->state_lock, flags);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->sq_draining = qp->sq_draining;
	attr->ah_attr = qp->av.ah;
	spin_unlock_irqrestore(&qp->state_lock, flags);

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->port_num = attr->port_num;
	return 0;
}
