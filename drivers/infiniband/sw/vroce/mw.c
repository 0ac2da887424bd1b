// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows: type 1 and type 2B, VA-based (no zero-based windows).
 *
 * Keys: MRs and MWs share the 32-bit key space. An MW key is
 * VROCE_KEY_MW (bit 31) | index << 8 | variant; MR keys never have bit 31
 * set (mr.h), so the bit alone says which table to search. vroce_dev.mws
 * (an allocating xarray) maps the index to the window; indices are
 * allocated cyclically from 1. The variant starts random; each bind sets
 * it to the variant byte of the bind's new rkey (the rxe provider passes
 * ibv_inc_rkey() of the current key). An MW key is never an lkey: lkey
 * lookups search vroce_dev.mrs only, where no index has bit 23 set.
 *
 * Binding: an IB_WR_BIND_MW WQE of a user RC/UC QP (the rxe provider turns
 * ibv_bind_mw() into one), run by the requester in send queue order
 * (local_op.c). Type 1 windows may be rebound while bound, and a
 * zero-length bind unbinds them; type 2B windows bind only while unbound
 * and only with a non-zero length, are tied to the binding QP's number, and
 * are unbound by IB_WR_LOCAL_INV or a Send with Invalidate arriving on that
 * QP. A bound window holds no MR reference: it counts itself in the MR's
 * ->num_mw, and while that is non-zero the MR cannot be deregistered or
 * reregistered (-EBUSY, IBA 10.6.7.2.6) or invalidated, so ->mr stays valid.
 *
 * Locking and lifetime:
 * - vroce_dev.mws' lock (taken irqsave: the transport runs in any context)
 *   protects every field of every window after allocation, and the
 *   ->num_mw and ->mw_closed fields of every MR of the device. It is a
 *   leaf lock: nothing is taken under it.
 * - Every access to a window (bind, lookup, invalidation, dealloc) is done
 *   under that lock, from the xa_load() on, so once dealloc_mw erased the
 *   index no one can reach the window and ib_core may kfree() it at once.
 * - vroce_mw_rkey_get() returns the bound MR with a reference taken under
 *   the lock: the MR's ->refs is at least 1 while a window is bound.
 * - mr.c takes the lock to test ->num_mw and change the MR atomically with
 *   respect to binds: deregistration sets ->mw_closed, invalidation and
 *   reregistration fail while ->num_mw is non-zero.
 */

#include <linux/random.h>
#include <linux/xarray.h>

#include "device.h"
#include "mr.h"
#include "mr_copy.h"
#include "mw.h"
#include "qp.h"
#include "query.h"

#define VROCE_MW_INDEX_MAX ((VROCE_KEY_MW - 1) >> VROCE_MR_KEY_SHIFT)

void vroce_mw_dev_init(struct vroce_dev *vdev)
{
	xa_init_flags(&vdev->mws, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	vdev->mw_next = 1;
	atomic_set(&vdev->num_mws, 0);
}

/* Every MW is deallocated before ib_core deallocates the device. */
void vroce_mw_dev_uninit(struct vroce_dev *vdev)
{
	WARN_ON(!xa_empty(&vdev->mws));
	xa_destroy(&vdev->mws);
}

static u32 mw_index(u32 key)
{
	return (key & ~VROCE_KEY_MW) >> VROCE_MR_KEY_SHIFT;
}

/* The window whose current key is @key, or NULL; the mws lock held. */
static struct vroce_mw *mw_find(struct vroce_dev *vdev, u32 key)
{
	struct vroce_mw *mw;

	lockdep_assert_held(&vdev->mws.xa_lock);
	if (!(key & VROCE_KEY_MW))
		return NULL;
	mw = xa_load(&vdev->mws, mw_index(key));
	return mw && mw->key == key ? mw : NULL;
}

static void mw_unbind(struct vroce_dev *vdev, struct vroce_mw *mw)
{
	lockdep_assert_held(&vdev->mws.xa_lock);
	if (mw->mr)
		mw->mr->num_mw--;
	mw->mr = NULL;
	mw->addr = 0;
	mw->length = 0;
	mw->access = 0;
	mw->qpn = 0;
}

int vroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibmw->device);
	struct vroce_mw *mw = to_vmw(ibmw);
	u32 index;
	int err;

	/* The rdma_user_rxe.h ABI has no driver data for this command. */
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	if (atomic_inc_return(&vdev->num_mws) > vdev->attr.max_mw) {
		err = -ENOMEM;
		goto err_count;
	}

	/* Reserve the index first, so the key is set before lookups see it. */
	err = xa_alloc_cyclic_irq(&vdev->mws, &index, NULL,
				  XA_LIMIT(1, VROCE_MW_INDEX_MAX),
				  &vdev->mw_next, GFP_KERNEL);
	if (err < 0) {
		err = err == -EBUSY ? -ENOMEM : err;
		goto err_count;
	}
	mw->key = VROCE_KEY_MW | index << VROCE_MR_KEY_SHIFT |
		  (get_random_u32() & 0xff);
	ibmw->rkey = mw->key;
	xa_store_irq(&vdev->mws, index, mw, GFP_KERNEL);
	return 0;

err_count:
	atomic_dec(&vdev->num_mws);
	return err;
}

/* Always succeeds: a bound window is unbound first (type 2B included). */
int vroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct vroce_dev *vdev = to_vdev(ibmw->device);
	struct vroce_mw *mw = to_vmw(ibmw);
	unsigned long flags;

	xa_lock_irqsave(&vdev->mws, flags);
	__xa_erase(&vdev->mws, mw_index(mw->key));
	mw_unbind(vdev, mw);
	xa_unlock_irqrestore(&vdev->mws, flags);
	atomic_dec(&vdev->num_mws);
	return 0;
}

/* C10-72..C10-75 and o10-37.2.30/40 on @mw; the mws lock held. */
static int mw_bind_check(struct vroce_dev *vdev, struct vroce_qp *qp,
			 struct vroce_mw *mw, struct vroce_mr *mr,
			 const struct vroce_mw_bind *bind)
{
	lockdep_assert_held(&vdev->mws.xa_lock);
	if (!mw || mw->ibmw.pd != qp->ibqp.pd)
		return -EINVAL;
	if (mw->ibmw.type == IB_MW_TYPE_2 && (mw->mr || !bind->length))
		return -EINVAL;
	if (!mr)
		return 0;
	/* Checked again under the lock: see "Locking" at the top. */
	if (mr->mw_closed || !smp_load_acquire(&mr->valid) ||
	    READ_ONCE(mr->key) != bind->mr_lkey ||
	    READ_ONCE(mr->pd) != qp->ibqp.pd)
		return -EINVAL;
	if (!(READ_ONCE(mr->access) & IB_ACCESS_MW_BIND))
		return -EACCES;
	if ((bind->access & (IB_ACCESS_REMOTE_WRITE |
			     IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(READ_ONCE(mr->access) & IB_ACCESS_LOCAL_WRITE))
		return -EACCES;
	if (!vroce_mr_range_ok(mr, bind->addr, bind->length))
		return -EINVAL;
	return 0;
}

static void mw_do_bind(struct vroce_dev *vdev, struct vroce_qp *qp,
		       struct vroce_mw *mw, struct vroce_mr *mr,
		       const struct vroce_mw_bind *bind)
{
	lockdep_assert_held(&vdev->mws.xa_lock);
	mw_unbind(vdev, mw);
	mw->key = (mw->key & ~0xffU) | (bind->new_rkey & 0xff);
	mw->ibmw.rkey = mw->key;
	if (!mr)
		return;
	mr->num_mw++;
	mw->mr = mr;
	mw->addr = bind->addr;
	mw->length = bind->length;
	mw->access = bind->access & VROCE_MW_ACCESS & ~IB_ACCESS_LOCAL_WRITE;
	if (mw->ibmw.type == IB_MW_TYPE_2)
		mw->qpn = qp->ibqp.qp_num;
}

/**
 * vroce_mw_bind - carry out IB_WR_BIND_MW
 * @qp: the QP that posted the WQE (its PD must be the window's and MR's)
 * @bind: the request, from the WQE (untrusted)
 *
 * Context: the send path of @qp; any context.
 * Return: 0, or a negative errno if the bind is not allowed (complete the
 * WQE with IB_WC_MW_BIND_ERR); nothing changed then.
 */
int vroce_mw_bind(struct vroce_qp *qp, const struct vroce_mw_bind *bind)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);
	struct vroce_mr *mr = NULL;
	struct vroce_mw *mw;
	unsigned long flags;
	int err;

	/* Optional bits (relaxed ordering) may be ignored; others may not. */
	if (bind->access & ~(VROCE_MW_ACCESS | IB_ACCESS_OPTIONAL))
		return -EINVAL;
	if (bind->length) {
		mr = vroce_mr_get(vdev, bind->mr_lkey, qp->ibqp.pd, 0);
		if (!mr)
			return -EINVAL;
	}

	xa_lock_irqsave(&vdev->mws, flags);
	mw = mw_find(vdev, bind->mw_rkey);
	err = mw_bind_check(vdev, qp, mw, mr, bind);
	if (!err)
		mw_do_bind(vdev, qp, mw, mr, bind);
	xa_unlock_irqrestore(&vdev->mws, flags);

	if (mr)
		vroce_mr_put(mr);
	return err;
}

/**
 * vroce_mw_invalidate - unbind a type 2B window (Local or Remote Invalidate)
 * @vdev: the device
 * @ibqp: the QP that posted IB_WR_LOCAL_INV, or on which a Send with
 *	Invalidate arrived
 * @rkey: the window's rkey (untrusted)
 * @remote: Send with Invalidate: the window must be bound to @ibqp
 *
 * Context: the transport, any context.
 * Return: 0; -EINVAL if @rkey names no bound type 2B window that @ibqp may
 * invalidate; -EACCES if the window is in another PD.
 */
int vroce_mw_invalidate(struct vroce_dev *vdev, struct ib_qp *ibqp, u32 rkey,
			bool remote)
{
	struct vroce_mw *mw;
	unsigned long flags;
	int err = 0;

	xa_lock_irqsave(&vdev->mws, flags);
	mw = mw_find(vdev, rkey);
	/* o10-37.2.26: a type 1 window is not invalidated this way. */
	if (!mw || mw->ibmw.type != IB_MW_TYPE_2 || !mw->mr ||
	    (remote && mw->qpn != ibqp->qp_num))
		err = -EINVAL;
	else if (mw->ibmw.pd != ibqp->pd)
		err = -EACCES;
	else
		mw_unbind(vdev, mw);
	xa_unlock_irqrestore(&vdev->mws, flags);
	return err;
}

/* [@va, @va + @len) lies inside @mw, without overflow. */
static bool mw_range_ok(const struct vroce_mw *mw, u64 va, u64 len)
{
	return va >= mw->addr && va - mw->addr <= mw->length &&
	       len <= mw->length - (va - mw->addr);
}

/**
 * vroce_mw_rkey_get - resolve an rkey that names a memory window
 * @vdev: the device
 * @ibqp: the responder QP
 * @rkey: the rkey, VROCE_KEY_MW set (untrusted)
 * @va: the first address the request touches (untrusted)
 * @len: bytes the request touches (untrusted)
 * @access: IB_ACCESS_REMOTE_* the request needs
 *
 * A type 1 window answers any QP of its PD; a type 2B window only the QP it
 * is bound to.
 * Context: the transport, any context.
 * Return: the window's MR with a reference (vroce_mr_put() it), or NULL.
 * The MR covers the window; addresses are the MR's iovas.
 */
struct vroce_mr *vroce_mw_rkey_get(struct vroce_dev *vdev, struct ib_qp *ibqp,
				   u32 rkey, u64 va, u64 len, int access)
{
	struct vroce_mr *mr = NULL;
	struct vroce_mw *mw;
	unsigned long flags;

	xa_lock_irqsave(&vdev->mws, flags);
	mw = mw_find(vdev, rkey);
	if (mw && mw->mr && mw->ibmw.pd == ibqp->pd &&
	    (mw->ibmw.type != IB_MW_TYPE_2 || mw->qpn == ibqp->qp_num) &&
	    !(access & ~mw->access) && mw_range_ok(mw, va, len)) {
		mr = mw->mr;
		/* A bound window keeps the MR registered: ->refs >= 1. */
		refcount_inc(&mr->refs);
	}
	xa_unlock_irqrestore(&vdev->mws, flags);
	return mr;
}

/**
 * vroce_mw_qp_destroyed - unbind the type 2B windows bound to a QP
 * @vdev: the device
 * @qpn: the number of a QP being destroyed
 *
 * Called when the QP is gone, so that a later QP given the same number
 * does not inherit its windows.
 * Context: process.
 */
void vroce_mw_qp_destroyed(struct vroce_dev *vdev, u32 qpn)
{
	struct vroce_mw *mw;
	unsigned long index;

	xa_lock_irq(&vdev->mws);
	xa_for_each(&vdev->mws, index, mw)
		if (mw->ibmw.type == IB_MW_TYPE_2 && mw->mr && mw->qpn == qpn)
			mw_unbind(vdev, mw);
	xa_unlock_irq(&vdev->mws);
}
