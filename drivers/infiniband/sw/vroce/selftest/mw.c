// SPDX-License-Identifier: GPL-2.0
/*
 * Self-tests of memory windows and local operations, run at module load
 * when the module is built with VROCE_DEBUG (make KVER=debug). Like
 * selftest/mr.c they work on a private, unregistered vroce_dev and on QPs
 * that are bare structs (a PD, a QP number, user or kernel): they drive
 * vroce_local_op() with WQEs as the requester would, and the responder's
 * rkey lookups (vroce_rkey_get(), vroce_rkey_invalidate()) directly.
 */

#include <linux/scatterlist.h>

#include "../device.h"
#include "../mr_copy.h"
#include "../query.h"

enum { MW_ST_BUF = 2 * PAGE_SIZE };

struct mw_st {
	struct vroce_dev *vdev;
	struct ib_pd pd, other_pd;
	struct vroce_qp *qa, *qb, *qother, *kqp;
	struct vroce_mr *dma;	/* LOCAL_WRITE | MW_BIND, over everything */
	struct vroce_mr *ro;	/* MW_BIND only: no writable windows */
	struct vroce_mr *nobind;	/* LOCAL_WRITE only: no windows */
	struct vroce_mw *mw1, *mw2;
	u8 *buf;
	struct page *pages[2];
	struct scatterlist sg[2];
};

static bool mw_st_ok(bool ok, const char *what, const char *func, int line)
{
	if (!ok)
		pr_err("mw self-test %s:%d: %s\n", func, line, what);
	return ok;
}

#define MW_OK(cond) mw_st_ok(!!(cond), #cond, __func__, __LINE__)

static struct vroce_qp *mw_st_qp(struct mw_st *st, struct ib_pd *pd, u32 qpn,
				 bool is_user)
{
	struct vroce_qp *qp = kzalloc(sizeof(*qp), GFP_KERNEL);

	if (!qp)
		return NULL;
	qp->ibqp.device = &st->vdev->ibdev;
	qp->ibqp.pd = pd;
	qp->ibqp.qp_num = qpn;
	qp->ibqp.qp_type = IB_QPT_RC;
	qp->is_user = is_user;
	return qp;
}

static struct vroce_mw *mw_st_alloc(struct mw_st *st, enum ib_mw_type type)
{
	struct vroce_mw *mw = kzalloc(sizeof(*mw), GFP_KERNEL);

	if (!mw)
		return NULL;
	mw->ibmw.device = &st->vdev->ibdev;
	mw->ibmw.pd = &st->pd;
	mw->ibmw.type = type;
	if (vroce_alloc_mw(&mw->ibmw, NULL)) {
		kfree(mw);
		return NULL;
	}
	return mw;
}

static void mw_st_free(struct vroce_mw *mw)
{
	if (mw) {
		vroce_dealloc_mw(&mw->ibmw);
		kfree(mw);
	}
}

static struct vroce_mr *mw_st_mr(struct ib_mr *ibmr, struct ib_pd *pd)
{
	if (IS_ERR(ibmr))
		return NULL;
	ibmr->device = pd->device;
	ibmr->pd = pd;
	return to_vmr(ibmr);
}

static u32 next_key(u32 key)
{
	return (key & ~0xffU) | ((key + 1) & 0xff);
}

/* IB_WR_BIND_MW as the rxe provider writes it for ibv_bind_mw(). */
static enum ib_wc_status mw_st_bind(struct vroce_qp *qp, struct vroce_mw *mw,
				    struct vroce_mr *mr, u64 addr, u64 len,
				    u32 access)
{
	struct rxe_send_wqe wqe = {};

	wqe.wr.opcode = IB_WR_BIND_MW;
	wqe.wr.wr.mw.addr = addr;
	wqe.wr.wr.mw.length = len;
	wqe.wr.wr.mw.mr_lkey = mr->key;
	wqe.wr.wr.mw.mw_rkey = mw->key;
	wqe.wr.wr.mw.rkey = next_key(mw->key);
	wqe.wr.wr.mw.access = access;
	return vroce_local_op(qp, &wqe);
}

static enum ib_wc_status mw_st_local_inv(struct vroce_qp *qp, u32 key)
{
	struct rxe_send_wqe wqe = {};

	wqe.wr.opcode = IB_WR_LOCAL_INV;
	wqe.wr.ex.invalidate_rkey = key;
	return vroce_local_op(qp, &wqe);
}

static bool mw_st_reaches(struct mw_st *st, struct vroce_qp *qp, u32 rkey,
			  u64 va, u64 len, int access)
{
	struct vroce_mr *mr = vroce_rkey_get(st->vdev, &qp->ibqp, rkey, va,
					     len, access);

	if (mr)
		vroce_mr_put(mr);
	return mr;
}

static bool mw_st_alloc_verbs(struct mw_st *st)
{
	struct vroce_mw bad = {};

	if (!MW_OK(st->mw1 && st->mw2))
		return false;
	if (!MW_OK((st->mw1->key & VROCE_KEY_MW) &&
		   (st->mw2->key & VROCE_KEY_MW)))
		return false;
	if (!MW_OK(st->mw1->ibmw.rkey == st->mw1->key &&
		   (st->mw1->key ^ st->mw2->key) >> 8))
		return false;
	/* An MW key is never an lkey, and names nothing while unbound. */
	if (!MW_OK(!vroce_mr_get(st->vdev, st->mw1->key, &st->pd, 0)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, st->mw1->key, 0, 0, 0)))
		return false;
	bad.ibmw.device = &st->vdev->ibdev;
	bad.ibmw.pd = &st->pd;
	bad.ibmw.type = 3;
	if (!MW_OK(vroce_alloc_mw(&bad.ibmw, NULL) == -EINVAL))
		return false;
	return true;
}

/* Type 1: bind, access through the window only, rebind, unbind. */
static bool mw_st_type1(struct mw_st *st)
{
	struct vroce_mw *mw = st->mw1;
	u64 base = (uintptr_t)st->buf + 100;
	int rw = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE;
	struct vroce_mr *mr;
	u32 old = mw->key;
	u8 byte = 0x5a;

	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, base, 1000, rw) ==
		   IB_WC_SUCCESS))
		return false;
	if (!MW_OK(mw->key == next_key(old) && mw->ibmw.rkey == mw->key))
		return false;
	/* Any QP of the PD; not the old key, another PD, outside, more access. */
	mr = vroce_rkey_get(st->vdev, &st->qb->ibqp, mw->key, base + 999, 1,
			    IB_ACCESS_REMOTE_WRITE);
	if (!MW_OK(mr == st->dma))
		return false;
	if (!MW_OK(!vroce_mr_copy(mr, base + 999, &byte, 1, VROCE_COPY_TO_MR)))
		return false;
	vroce_mr_put(mr);
	if (!MW_OK(st->buf[100 + 999] == 0x5a))
		return false;
	if (!MW_OK(mw_st_reaches(st, st->qa, mw->key, base, 1000, rw)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, old, base, 1, 0)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qother, mw->key, base, 1, 0)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base - 1, 1, 0)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base + 1000, 1, 0)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base, 1001, 0)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base + 1, U64_MAX, 0)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base, 8,
				  IB_ACCESS_REMOTE_ATOMIC)))
		return false;

	/* Bound: the MR stays; type 1 is not invalidated by key. */
	if (!MW_OK(vroce_dereg_mr(&st->dma->ibmr, NULL) == -EBUSY))
		return false;
	if (!MW_OK(mw_st_local_inv(st->qa, mw->key) == IB_WC_LOC_QP_OP_ERR))
		return false;
	if (!MW_OK(vroce_rkey_invalidate(st->vdev, &st->qa->ibqp, mw->key)))
		return false;

	/* Rebind while bound (type 1 may), then a zero-length bind unbinds. */
	if (!MW_OK(mw_st_bind(st->qb, mw, st->dma, base + 8, 8,
			      IB_ACCESS_REMOTE_ATOMIC) == IB_WC_SUCCESS))
		return false;
	if (!MW_OK(mw_st_reaches(st, st->qa, mw->key, base + 8, 8,
				 IB_ACCESS_REMOTE_ATOMIC)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base, 8, 0)))
		return false;
	if (!MW_OK(st->dma->num_mw == 1))
		return false;
	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, 0, 0, 0) == IB_WC_SUCCESS))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base + 8, 0, 0)))
		return false;
	if (!MW_OK(st->dma->num_mw == 0))
		return false;
	return true;
}

/* Type 2B: tied to the binding QP, invalidated locally and remotely. */
static bool mw_st_type2(struct mw_st *st)
{
	struct vroce_mw *mw = st->mw2;
	u64 base = (uintptr_t)st->buf;
	int w = IB_ACCESS_REMOTE_WRITE;

	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, base, 0, w) ==
		   IB_WC_MW_BIND_ERR))
		return false;
	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, base, 64, w) ==
		   IB_WC_SUCCESS))
		return false;
	if (!MW_OK(mw_st_reaches(st, st->qa, mw->key, base, 64, w)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qb, mw->key, base, 64, w)))
		return false;
	/* No rebind while bound. */
	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, base, 32, w) ==
		   IB_WC_MW_BIND_ERR))
		return false;

	/* Send with Invalidate: only on the QP it is bound to. */
	if (!MW_OK(vroce_rkey_invalidate(st->vdev, &st->qb->ibqp, mw->key)))
		return false;
	if (!MW_OK(vroce_rkey_invalidate(st->vdev, &st->qa->ibqp,
					 mw->key ^ 1)))
		return false;
	if (!MW_OK(!vroce_rkey_invalidate(st->vdev, &st->qa->ibqp, mw->key)))
		return false;
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base, 1, w)))
		return false;
	if (!MW_OK(vroce_rkey_invalidate(st->vdev, &st->qa->ibqp, mw->key)))
		return false;

	/* Local Invalidate: any QP of the PD; another PD is a protection error. */
	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, base, 64, w) ==
		   IB_WC_SUCCESS))
		return false;
	if (!MW_OK(mw_st_local_inv(st->qother, mw->key) == IB_WC_LOC_PROT_ERR))
		return false;
	if (!MW_OK(mw_st_local_inv(st->qb, mw->key) == IB_WC_SUCCESS))
		return false;
	if (!MW_OK(mw_st_local_inv(st->qb, mw->key) == IB_WC_LOC_QP_OP_ERR))
		return false;
	if (!MW_OK(st->dma->num_mw == 0))
		return false;

	/* The QP goes away: its windows are unbound. */
	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, base, 64, w) ==
		   IB_WC_SUCCESS))
		return false;
	vroce_mw_qp_destroyed(st->vdev, st->qb->ibqp.qp_num);
	if (!MW_OK(mw_st_reaches(st, st->qa, mw->key, base, 64, w)))
		return false;
	vroce_mw_qp_destroyed(st->vdev, st->qa->ibqp.qp_num);
	if (!MW_OK(!mw_st_reaches(st, st->qa, mw->key, base, 64, w)))
		return false;
	if (!MW_OK(st->dma->num_mw == 0))
		return false;
	return true;
}

/* Binds that must fail and change nothing. */
static bool mw_st_bind_errors(struct mw_st *st)
{
	struct vroce_mw *mw = st->mw1;
	u64 base = (uintptr_t)st->buf;
	struct rxe_send_wqe wqe = {};
	u32 key = mw->key;

	/* The MR lacks MW_BIND; a writable window on an MR without LOCAL_WRITE. */
	if (!MW_OK(mw_st_bind(st->qa, mw, st->nobind, base, 8, 0) ==
		   IB_WC_MW_BIND_ERR))
		return false;
	if (!MW_OK(mw_st_bind(st->qa, mw, st->ro, base, 8, 0) == IB_WC_SUCCESS))
		return false;
	if (!MW_OK(mw_st_bind(st->qa, mw, st->ro, base, 8,
			      IB_ACCESS_REMOTE_WRITE) == IB_WC_MW_BIND_ERR))
		return false;
	if (!MW_OK(mw_st_bind(st->qa, mw, st->ro, base, 0, 0) == IB_WC_SUCCESS))
		return false;
	key = mw->key;
	/* Zero-based windows, unknown access bits, QP of another PD. */
	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, 0, 8, IB_ZERO_BASED) ==
		   IB_WC_MW_BIND_ERR))
		return false;
	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, base, 8, IB_ACCESS_MW_BIND) ==
		   IB_WC_MW_BIND_ERR))
		return false;
	if (!MW_OK(mw_st_bind(st->qother, mw, st->dma, base, 8, 0) ==
		   IB_WC_MW_BIND_ERR))
		return false;
	/* Kernel QPs do not bind windows. */
	if (!MW_OK(mw_st_bind(st->kqp, mw, st->dma, base, 8, 0) ==
		   IB_WC_LOC_QP_OP_ERR))
		return false;
	/* A stale window key, a bad MR key, an MR key as the window key. */
	wqe.wr.opcode = IB_WR_BIND_MW;
	wqe.wr.wr.mw.addr = base;
	wqe.wr.wr.mw.length = 8;
	wqe.wr.wr.mw.mr_lkey = st->dma->key;
	wqe.wr.wr.mw.mw_rkey = key ^ 1;
	if (!MW_OK(vroce_local_op(st->qa, &wqe) == IB_WC_MW_BIND_ERR))
		return false;
	wqe.wr.wr.mw.mw_rkey = st->dma->key;
	if (!MW_OK(vroce_local_op(st->qa, &wqe) == IB_WC_MW_BIND_ERR))
		return false;
	wqe.wr.wr.mw.mw_rkey = key;
	wqe.wr.wr.mw.mr_lkey = st->dma->key ^ 1;
	if (!MW_OK(vroce_local_op(st->qa, &wqe) == IB_WC_MW_BIND_ERR))
		return false;
	wqe.wr.wr.mw.mr_lkey = key;
	if (!MW_OK(vroce_local_op(st->qa, &wqe) == IB_WC_MW_BIND_ERR))
		return false;
	if (!MW_OK(mw->key == key && !mw->mr && !st->dma->num_mw))
		return false;
	/* Unknown opcodes are not local operations. */
	wqe.wr.opcode = IB_WR_SEND;
	if (!MW_OK(vroce_local_op(st->qa, &wqe) == IB_WC_LOC_QP_OP_ERR))
		return false;
	wqe.wr.opcode = 0xffff;
	if (!MW_OK(vroce_local_op(st->qa, &wqe) == IB_WC_LOC_QP_OP_ERR))
		return false;
	return true;
}

static enum ib_wc_status mw_st_reg(struct vroce_qp *qp, struct vroce_mr *mr,
				   u32 key, int access)
{
	struct rxe_send_wqe wqe = {};

	wqe.wr.opcode = IB_WR_REG_MR;
	wqe.wr.wr.reg.mr = &mr->ibmr;
	wqe.wr.wr.reg.key = key;
	wqe.wr.wr.reg.access = access;
	return vroce_local_op(qp, &wqe);
}

/* IB_WR_REG_MR and IB_WR_LOCAL_INV of a fast-registration MR. */
static bool mw_st_fast_reg(struct mw_st *st)
{
	int acc = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		  IB_ACCESS_MW_BIND;
	struct vroce_mr *fmr;
	struct vroce_qp *kother;
	bool ok = false;
	u32 key;
	int i;

	fmr = mw_st_mr(vroce_alloc_mr(&st->pd, IB_MR_TYPE_MEM_REG, 2), &st->pd);
	kother = mw_st_qp(st, &st->other_pd, 40, false);
	if (!MW_OK(fmr && kother))
		goto out;
	sg_init_table(st->sg, 2);
	for (i = 0; i < 2; i++) {
		sg_set_page(&st->sg[i], st->pages[i], PAGE_SIZE, 0);
		sg_dma_address(&st->sg[i]) = (uintptr_t)sg_virt(&st->sg[i]);
		sg_dma_len(&st->sg[i]) = PAGE_SIZE;
	}
	fmr->ibmr.page_size = PAGE_SIZE;
	if (!MW_OK(vroce_map_mr_sg(&fmr->ibmr, st->sg, 2, NULL) == 2))
		goto out;
	key = next_key(fmr->key);

	if (!MW_OK(mw_st_reg(st->qa, fmr, key, acc) == IB_WC_LOC_QP_OP_ERR))
		goto out;
	if (!MW_OK(mw_st_reg(kother, fmr, key, acc) == IB_WC_LOC_PROT_ERR))
		goto out;
	if (!MW_OK(mw_st_reg(st->kqp, fmr, key ^ 0x100, acc) ==
		   IB_WC_LOC_QP_OP_ERR))
		goto out;
	if (!MW_OK(!mw_st_reaches(st, st->kqp, key, fmr->ibmr.iova, 1, 0)))
		goto out;
	if (!MW_OK(mw_st_reg(st->kqp, fmr, key, acc) == IB_WC_SUCCESS))
		goto out;
	if (!MW_OK(mw_st_reaches(st, st->kqp, key, fmr->ibmr.iova,
				 2 * PAGE_SIZE, IB_ACCESS_REMOTE_WRITE)))
		goto out;
	/* Registered: not again before invalidation. */
	if (!MW_OK(mw_st_reg(st->kqp, fmr, next_key(key), acc) ==
		   IB_WC_LOC_QP_OP_ERR))
		goto out;

	/* Windows on it block invalidation; then local, remote invalidation. */
	if (!MW_OK(mw_st_bind(st->qa, st->mw2, fmr, fmr->ibmr.iova, 16,
			      IB_ACCESS_REMOTE_READ) == IB_WC_SUCCESS))
		goto out;
	if (!MW_OK(mw_st_local_inv(st->kqp, key) == IB_WC_LOC_QP_OP_ERR))
		goto out;
	if (!MW_OK(mw_st_local_inv(st->qa, st->mw2->key) == IB_WC_SUCCESS))
		goto out;
	if (!MW_OK(mw_st_local_inv(kother, key) == IB_WC_LOC_PROT_ERR))
		goto out;
	if (!MW_OK(mw_st_local_inv(st->kqp, key) == IB_WC_SUCCESS))
		goto out;
	if (!MW_OK(!mw_st_reaches(st, st->kqp, key, fmr->ibmr.iova, 1, 0)))
		goto out;
	key = next_key(key);
	if (!MW_OK(mw_st_reg(st->kqp, fmr, key, acc) == IB_WC_SUCCESS))
		goto out;
	if (!MW_OK(!vroce_rkey_invalidate(st->vdev, &st->qb->ibqp, key)))
		goto out;
	if (!MW_OK(!mw_st_reaches(st, st->kqp, key, fmr->ibmr.iova, 1, 0)))
		goto out;
	/* A window on an invalid MR cannot bind. */
	if (!MW_OK(mw_st_bind(st->qa, st->mw2, fmr, fmr->ibmr.iova, 16,
			      IB_ACCESS_REMOTE_READ) == IB_WC_MW_BIND_ERR))
		goto out;
	ok = true;
out:
	if (fmr)
		vroce_dereg_mr(&fmr->ibmr, NULL);
	kfree(kother);
	return ok;
}

/* Deallocating a bound window unbinds it; the MR can go then. */
static bool mw_st_dealloc_bound(struct mw_st *st)
{
	struct vroce_mw *mw = mw_st_alloc(st, IB_MW_TYPE_2);
	u32 key;

	if (!MW_OK(mw))
		return false;
	if (!MW_OK(mw_st_bind(st->qa, mw, st->dma, (uintptr_t)st->buf, 8,
			      IB_ACCESS_REMOTE_READ) == IB_WC_SUCCESS)) {
		mw_st_free(mw);
		return false;
	}
	key = mw->key;
	if (!MW_OK(vroce_dereg_mr(&st->dma->ibmr, NULL) == -EBUSY)) {
		mw_st_free(mw);
		return false;
	}
	mw_st_free(mw);
	if (!MW_OK(!mw_st_reaches(st, st->qa, key, (uintptr_t)st->buf, 8, 0)))
		return false;
	if (!MW_OK(st->dma->num_mw == 0))
		return false;
	return true;
}

static bool mw_st_run(struct mw_st *st)
{
	int acc = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_MW_BIND;

	st->qa = mw_st_qp(st, &st->pd, 17, true);
	st->qb = mw_st_qp(st, &st->pd, 18, true);
	st->qother = mw_st_qp(st, &st->other_pd, 19, true);
	st->kqp = mw_st_qp(st, &st->pd, 20, false);
	st->dma = mw_st_mr(vroce_get_dma_mr(&st->pd, acc), &st->pd);
	st->ro = mw_st_mr(vroce_get_dma_mr(&st->pd, IB_ACCESS_MW_BIND),
			  &st->pd);
	st->nobind = mw_st_mr(vroce_get_dma_mr(&st->pd, IB_ACCESS_LOCAL_WRITE),
			      &st->pd);
	st->mw1 = mw_st_alloc(st, IB_MW_TYPE_1);
	st->mw2 = mw_st_alloc(st, IB_MW_TYPE_2);
	if (!MW_OK(st->qa && st->qb && st->qother && st->kqp && st->dma &&
		   st->ro && st->nobind))
		return false;
	return mw_st_alloc_verbs(st) && mw_st_type1(st) && mw_st_type2(st) &&
	       mw_st_bind_errors(st) && mw_st_fast_reg(st) &&
	       mw_st_dealloc_bound(st);
}

static void mw_st_cleanup(struct mw_st *st)
{
	int i;

	mw_st_free(st->mw1);
	mw_st_free(st->mw2);
	if (st->dma)
		WARN_ON(vroce_dereg_mr(&st->dma->ibmr, NULL));
	if (st->ro)
		WARN_ON(vroce_dereg_mr(&st->ro->ibmr, NULL));
	if (st->nobind)
		WARN_ON(vroce_dereg_mr(&st->nobind->ibmr, NULL));
	kfree(st->qa);
	kfree(st->qb);
	kfree(st->qother);
	kfree(st->kqp);
	for (i = 0; i < 2; i++)
		if (st->pages[i])
			__free_page(st->pages[i]);
	kfree(st->buf);
	if (st->vdev) {
		vroce_mw_dev_uninit(st->vdev);
		vroce_mr_dev_uninit(st->vdev);
	}
	kfree(st->vdev);
}

bool vroce_mw_selftest(void)
{
	struct mw_st st = {};
	bool ok = false;

	st.vdev = kzalloc(sizeof(*st.vdev), GFP_KERNEL);
	if (!st.vdev)
		goto out;
	vroce_query_init_attrs(st.vdev);
	vroce_mr_dev_init(st.vdev);
	vroce_mw_dev_init(st.vdev);
	st.buf = kzalloc(MW_ST_BUF, GFP_KERNEL);
	st.pages[0] = alloc_page(GFP_KERNEL | __GFP_ZERO);
	st.pages[1] = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!st.buf || !st.pages[0] || !st.pages[1])
		goto out;
	st.pd.device = &st.vdev->ibdev;
	st.other_pd.device = &st.vdev->ibdev;
	ok = mw_st_run(&st);
out:
	mw_st_cleanup(&st);
	if (ok)
		pr_info("mw self-tests: pass\n");
	else
		pr_err("mw self-tests: FAIL\n");
	return ok;
}
