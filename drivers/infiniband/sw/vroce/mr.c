// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions: the key table, the registration verbs, and the lookup
 * that the transport uses to turn an lkey or rkey into memory.
 *
 * Keys: key = (index << 8) | variant. vroce_dev.mrs (an allocating xarray)
 * maps the index to the MR; indices are allocated cyclically from 1, so a
 * freed key is not reused soon and key 0 is never valid. The variant starts
 * random and is what IB_WR_REG_MR changes. lkey == rkey.
 *
 * Locking and lifetime:
 * - vroce_dev.mrs has its own lock (the xarray's); nothing else is held
 *   while it is taken.
 * - ib_core does not allocate struct ib_mr (there is no INIT_RDMA_OBJ_SIZE
 *   for it in 6.1 or 6.12): the driver allocates struct vroce_mr and frees
 *   it itself, after dereg_mr, with kfree_rcu().
 * - An MR holds one reference (->refs) while it is in the table.
 *   vroce_mr_get() finds it under rcu_read_lock() and takes a reference
 *   with refcount_inc_not_zero(), so it never revives an MR being freed.
 *   A reference keeps the structure, not the memory: the transport may
 *   hold one for as long as a peer leaves a message half done (a WRITE's
 *   MR, a receive WQE's cursor), so deregistration never waits for
 *   references.
 * - Every access to the memory (mr_copy.c) is bracketed by
 *   vroce_mr_enter() and vroce_mr_exit(), and never sleeps inside but to
 *   fault in a page of an on-demand paging (ODP) MR (mr_odp.c).
 * - Deregistration: (1) erase the index, so no new lookup finds the MR;
 *   (2) mr_kill(): set ->dead, so no access starts, and wait for those in
 *   progress (->copies), a wait bounded by one copy of at most one frame
 *   and, on an ODP MR, one page fault, never by the network; (3) unpin
 *   and free the pages (an ODP MR's umem); (4) drop the
 *   table's reference. Whoever still holds a reference finds the MR dead:
 *   its next access fails, as a NIC's does on a key that is gone (a local
 *   protection error, or a remote access error NAK). The last
 *   vroce_mr_put() frees the structure with kfree_rcu(): a lookup that
 *   loaded the pointer before (1) but lost the refcount race may still
 *   read ->refs until its RCU read section ends.
 * - Memory windows (mw.c) bound to an MR count themselves in ->num_mw
 *   under vroce_dev.mws' lock. Deregistration, reregistration and
 *   invalidation test ->num_mw under that lock (deregistration also sets
 *   ->mw_closed there, so no bind starts after it) and fail while windows
 *   are bound: IBA 10.6.7.2.6 for deregistration, EBUSY.
 * - ->valid, ->key, ->access, ->pd, ->iova and ->length change while the
 *   MR is in the table (fast registration, invalidation, rereg): writers
 *   use WRITE_ONCE and publish ->valid last with smp_store_release();
 *   readers use READ_ONCE after smp_load_acquire(->valid). A transport
 *   that races a registration change with a data transfer on the same MR
 *   gets either view, never memory outside ->pages.
 * - IB_ACCESS_FLUSH_PERSISTENT promises that an RDMA FLUSH makes the data
 *   persistent: only an MR whose pages are all persistent memory grants it
 *   (mr_persistence_ok()), checked when its pages are set (registration,
 *   fast registration, reregistration of the access); -EINVAL otherwise.
 */

#include <linux/ioport.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>

#include "compat.h"
#include "device.h"
#include "mr.h"
#include "mr_copy.h"
#include "mr_odp.h"
#include "mw.h"
#include "query.h"

void vroce_mr_dev_init(struct vroce_dev *vdev)
{
	xa_init_flags(&vdev->mrs, XA_FLAGS_ALLOC1);
	vdev->mr_next = 1;
	atomic_set(&vdev->num_mrs, 0);
}

/* Every MR is deregistered before ib_core deallocates the device. */
void vroce_mr_dev_uninit(struct vroce_dev *vdev)
{
	WARN_ON(!xa_empty(&vdev->mrs));
	xa_destroy(&vdev->mrs);
}

static u32 mr_index(u32 key)
{
	return key >> VROCE_MR_KEY_SHIFT;
}

/*
 * May @access (with IB_ACCESS_FLUSH_PERSISTENT) be granted over @mr's
 * pages? Only if each is persistent memory; a DMA or ODP MR's are not
 * known (an ODP MR has no ->pages).
 */
static bool mr_persistence_ok(const struct vroce_mr *mr, int access)
{
	u32 i;

	if (!(access & VROCE_COMPAT_ACCESS_FLUSH_PERSISTENT))
		return true;
	if (mr->kind == VROCE_MR_DMA || !mr->npages)
		return false;
	for (i = 0; i < mr->npages; i++)
		if (region_intersects(page_to_phys(mr->pages[i]), PAGE_SIZE,
				      IORESOURCE_MEM,
				      IORES_DESC_PERSISTENT_MEMORY) !=
		    REGION_INTERSECTS)
			return false;
	return true;
}

static struct vroce_mr *mr_alloc(struct ib_pd *ibpd, enum vroce_mr_kind kind,
				 int access)
{
	struct vroce_dev *vdev = to_vdev(ibpd->device);
	int known = VROCE_MR_ACCESS | IB_ACCESS_OPTIONAL;
	struct vroce_mr *mr;

	/* On-demand paging only for ODP MRs: never pinned, DMA or fast-reg. */
	if (kind == VROCE_MR_ODP)
		known |= IB_ACCESS_ON_DEMAND;
	/* Optional bits (relaxed ordering) may be ignored; others may not. */
	if (access & ~known)
		return ERR_PTR(-EOPNOTSUPP);
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return ERR_PTR(-EINVAL);

	if (atomic_inc_return(&vdev->num_mrs) > vdev->attr.max_mr) {
		atomic_dec(&vdev->num_mrs);
		return ERR_PTR(-ENOMEM);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		atomic_dec(&vdev->num_mrs);
		return ERR_PTR(-ENOMEM);
	}
	mr->vdev = vdev;
	mr->kind = kind;
	mr->access = access & VROCE_MR_ACCESS;
	mr->pd = ibpd;
	refcount_set(&mr->refs, 1);
	return mr;
}

/* Gives back the memory and the count: no access is in progress or starts. */
static void mr_release(struct vroce_mr *mr)
{
	if (mr->odp)
		vroce_odp_mr_release(mr);
	if (mr->umem)
		ib_umem_release(mr->umem);
	mr->umem = NULL;
	kvfree(mr->pages);
	mr->pages = NULL;
	mr->max_pages = 0;
	mr->npages = 0;
	atomic_dec(&mr->vdev->num_mrs);
}

/* An MR that setup failed to publish: nobody else ever saw it. */
static void mr_free(struct vroce_mr *mr)
{
	mr_release(mr);
	kfree_rcu(mr, rcu);
}

/* Gives @mr a key and makes it visible to lookups: the last setup step. */
static int mr_publish(struct vroce_mr *mr)
{
	struct vroce_dev *vdev = mr->vdev;
	u32 index;
	int err;

	/* Reserve the index first, so the key is set before lookups see it. */
	err = xa_alloc_cyclic(&vdev->mrs, &index, NULL,
			      XA_LIMIT(1, VROCE_MR_INDEX_MAX), &vdev->mr_next,
			      GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;

	mr->key = index << VROCE_MR_KEY_SHIFT | (get_random_u32() & 0xff);
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	/* Fast-reg MRs become valid on IB_WR_REG_MR. */
	mr->valid = mr->kind != VROCE_MR_FAST;
	xa_store(&vdev->mrs, index, mr, GFP_KERNEL);
	return 0;
}

/*
 * Step (2) of deregistration: no access starts after this, and those that
 * began have ended. Each is one copy or atomic that does not sleep, so the
 * wait is bounded by the longest copy (a frame), never by a peer; on an
 * ODP MR, by that and one page fault (mr_odp.c).
 */
static void mr_kill(struct vroce_mr *mr)
{
	WRITE_ONCE(mr->dead, true);
	/* The flag before the count; pairs with vroce_mr_enter(). */
	smp_mb();
	wait_var_event(&mr->copies, !atomic_read(&mr->copies));
}

/* The last access of a dead MR ended: wake mr_kill(). */
void vroce_mr_exit_slow(struct vroce_mr *mr)
{
	wake_up_var(&mr->copies);
}

/* A referenced MR whose current key is @key, valid or not; or NULL. */
static struct vroce_mr *mr_get_any(struct vroce_dev *vdev, u32 key)
{
	struct vroce_mr *mr;

	rcu_read_lock();
	mr = xa_load(&vdev->mrs, mr_index(key));
	if (mr && !refcount_inc_not_zero(&mr->refs))
		mr = NULL;
	rcu_read_unlock();

	if (mr && READ_ONCE(mr->key) != key) {
		vroce_mr_put(mr);
		mr = NULL;
	}
	return mr;
}

/**
 * vroce_mr_get - look up an MR for a data transfer
 * @vdev: the device
 * @key: an lkey or rkey from a WQE or packet (untrusted)
 * @pd: the PD of the QP doing the transfer
 * @access: IB_ACCESS_* the transfer needs; 0 for a local read
 *
 * Context: any, including softirq.
 * Return: the MR with a reference (vroce_mr_put() it), or NULL if @key
 * names no valid MR of @pd that grants all of @access.
 */
struct vroce_mr *vroce_mr_get(struct vroce_dev *vdev, u32 key,
			      struct ib_pd *pd, int access)
{
	struct vroce_mr *mr = mr_get_any(vdev, key);

	if (!mr)
		return NULL;
	/* Pairs with vroce_mr_fast_reg(): the fields below are current. */
	if (!smp_load_acquire(&mr->valid) || READ_ONCE(mr->pd) != pd ||
	    (access & ~READ_ONCE(mr->access))) {
		vroce_mr_put(mr);
		return NULL;
	}
	return mr;
}

/* Context: any. The last reference (the table's went at dereg) frees. */
void vroce_mr_put(struct vroce_mr *mr)
{
	if (refcount_dec_and_test(&mr->refs))
		kfree_rcu(mr, rcu);
}

/**
 * vroce_mr_fast_reg - carry out IB_WR_REG_MR on a fast-registration MR
 * @mr: an MR from alloc_mr whose page list map_mr_sg set
 * @key: the WR's key: @mr's index with a new variant byte
 * @access: the WR's access flags
 *
 * Takes the region (iova, length) that map_mr_sg left in @mr->ibmr. The MR
 * must be invalid (newly allocated or invalidated), as in rxe and siw.
 * Context: the send path of the QP that posted the WR.
 * Return: 0, or -EINVAL if the WR does not fit the MR.
 */
int vroce_mr_fast_reg(struct vroce_mr *mr, u32 key, int access)
{
	u64 iova = mr->ibmr.iova, length = mr->ibmr.length;

	if (mr->kind != VROCE_MR_FAST || mr_index(key) != mr_index(mr->key))
		return -EINVAL;
	if (READ_ONCE(mr->valid))
		return -EINVAL;
	if (access & ~(VROCE_MR_ACCESS | IB_ACCESS_OPTIONAL))
		return -EINVAL;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (iova + length < iova ||
	    (iova & ~PAGE_MASK) + length > (u64)mr->npages << PAGE_SHIFT)
		return -EINVAL;
	if (!mr_persistence_ok(mr, access))
		return -EINVAL;

	WRITE_ONCE(mr->valid, false);
	WRITE_ONCE(mr->iova, iova);
	WRITE_ONCE(mr->length, length);
	WRITE_ONCE(mr->access, access & VROCE_MR_ACCESS);
	WRITE_ONCE(mr->key, key);
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	/* Lookups that see ->valid see the fields above (vroce_mr_get()). */
	smp_store_release(&mr->valid, true);
	return 0;
}

/**
 * vroce_mr_invalidate - IB_WR_LOCAL_INV or a Send with Invalidate
 * @vdev: the device
 * @key: the key to invalidate (untrusted)
 * @pd: the PD of the QP that asks
 *
 * Context: the transport, any context.
 * Return: 0; -EINVAL if @key names no fast-registration MR or windows are
 * bound to it; -EACCES if the MR is in another PD than @pd.
 */
int vroce_mr_invalidate(struct vroce_dev *vdev, u32 key, struct ib_pd *pd)
{
	struct vroce_mr *mr = mr_get_any(vdev, key);
	unsigned long flags;
	int err = -EINVAL;

	if (!mr)
		return err;
	xa_lock_irqsave(&vdev->mws, flags);
	if (mr->kind != VROCE_MR_FAST || mr->num_mw) {
		err = -EINVAL;
	} else if (READ_ONCE(mr->pd) != pd) {
		err = -EACCES;
	} else {
		WRITE_ONCE(mr->valid, false);
		err = 0;
	}
	xa_unlock_irqrestore(&vdev->mws, flags);
	vroce_mr_put(mr);
	return err;
}

/**
 * vroce_rkey_get - resolve the rkey of a request from the wire
 * @vdev: the device
 * @ibqp: the responder QP (its PD is checked against the key's)
 * @rkey: the rkey (untrusted)
 * @va: the first remote address the request touches (untrusted)
 * @len: bytes the request touches (untrusted)
 * @access: IB_ACCESS_REMOTE_* the request needs
 *
 * An rkey with VROCE_KEY_MW set names a memory window: see
 * vroce_mw_rkey_get(); the MR returned is then the one the window is bound
 * to, and [@va, @va + @len) is checked against the window.
 * Context: the transport, any context.
 * Return: the MR with a reference (vroce_mr_put() it), or NULL if @rkey
 * names no valid MR of the QP's PD granting @access over [@va, @va + @len).
 */
struct vroce_mr *vroce_rkey_get(struct vroce_dev *vdev, struct ib_qp *ibqp,
				u32 rkey, u64 va, u64 len, int access)
{
	struct vroce_mr *mr;

	if (rkey & VROCE_KEY_MW)
		return vroce_mw_rkey_get(vdev, ibqp, rkey, va, len, access);
	mr = vroce_mr_get(vdev, rkey, ibqp->pd, access);

	if (mr && !vroce_mr_range_ok(mr, va, len)) {
		vroce_mr_put(mr);
		mr = NULL;
	}
	return mr;
}

/**
 * vroce_rkey_invalidate - the invalidation a Send with Invalidate asks for
 * @vdev: the device
 * @ibqp: the responder QP
 * @rkey: the IETH rkey (untrusted)
 *
 * A fast-registration MR of the QP's PD, or a type 2B window bound to the
 * QP.
 * Return: 0, or a negative errno if @rkey names nothing the QP may
 * invalidate.
 */
int vroce_rkey_invalidate(struct vroce_dev *vdev, struct ib_qp *ibqp,
			  u32 rkey)
{
	if (rkey & VROCE_KEY_MW)
		return vroce_mw_invalidate(vdev, ibqp, rkey, true);
	return vroce_mr_invalidate(vdev, rkey, ibqp->pd);
}

struct ib_mr *vroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct vroce_mr *mr = mr_alloc(ibpd, VROCE_MR_DMA, access);
	int err;

	if (IS_ERR(mr))
		return ERR_CAST(mr);
	if (!mr_persistence_ok(mr, access)) {
		mr_free(mr);
		return ERR_PTR(-EINVAL);
	}
	mr->iova = 0;
	mr->length = U64_MAX;
	err = mr_publish(mr);
	if (err) {
		mr_free(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/* The pinned pages of @mr->umem, in order, into @mr->pages. */
static int mr_collect_user_pages(struct vroce_mr *mr)
{
	struct ib_umem *umem = mr->umem;
	size_t count = ib_umem_num_pages(umem);
	struct sg_page_iter iter;
	u32 i = 0;

	if (count > U32_MAX)
		return -EINVAL;
	mr->pages = kvcalloc(count, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages)
		return -ENOMEM;
	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (i == count)
			break;
		mr->pages[i++] = sg_page_iter_page(&iter);
	}
	if (i != count)
		return -EFAULT;
	mr->max_pages = count;
	mr->npages = count;
	return 0;
}

/* Pin [@start, @start + @length) for @mr, a user MR. */
static int mr_pin_user(struct vroce_mr *mr, u64 start, u64 length,
		       int access)
{
	struct ib_device *ibdev = &mr->vdev->ibdev;
	int err;

	mr->umem = vroce_compat_umem_get(ibdev, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		mr->umem = NULL;
		ibdev_dbg(ibdev, "cannot pin %llu bytes at %#llx: %pe\n",
			  length, start, ERR_PTR(err));
		return err;
	}
	return mr_collect_user_pages(mr);
}

/*
 * A user MR: pinned, or with IB_ACCESS_ON_DEMAND an ODP MR (mr_odp.c),
 * whose pages are found when accessed.
 */
struct ib_mr *vroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	bool odp = access & IB_ACCESS_ON_DEMAND;
	struct vroce_mr *mr;
	int err;

	/* The rdma_user_rxe.h ABI has no driver data for this command. */
	if (udata && (udata->inlen || udata->outlen))
		return ERR_PTR(-EINVAL);
	if (!length || iova + length < iova || start + length < start)
		return ERR_PTR(-EINVAL);
	/* Copies find iova's byte at the same offset in the pinned page. */
	if ((start ^ iova) & ~PAGE_MASK)
		return ERR_PTR(-EINVAL);

	mr = mr_alloc(ibpd, odp ? VROCE_MR_ODP : VROCE_MR_USER, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->iova = iova;
	mr->length = length;

	if (odp)
		err = vroce_odp_mr_init(mr, start, length, access);
	else
		err = mr_pin_user(mr, start, length, access);
	if (err)
		goto err_free;
	if (!mr_persistence_ok(mr, access)) {
		err = -EINVAL;
		goto err_free;
	}
	err = mr_publish(mr);
	if (err)
		goto err_free;
	return &mr->ibmr;

err_free:
	mr_free(mr);
	return ERR_PTR(err);
}

/*
 * In place only: a new PD and new access flags. A new translation
 * (IB_MR_REREG_TRANS) would re-pin the pages, and IB_ACCESS_ON_DEMAND
 * cannot come or go; vroce does not do that.
 * The rdma-core 44 rxe provider has no ibv_rereg_mr at all.
 */
struct ib_mr *vroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct vroce_mr *mr = to_vmr(ibmr);
	unsigned long irqflags;
	struct ib_umem *umem;
	int err = 0;

	if (flags & ~(IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);
	if (mr->kind != VROCE_MR_USER && mr->kind != VROCE_MR_ODP)
		return ERR_PTR(-EINVAL);

	if (flags & IB_MR_REREG_ACCESS) {
		umem = mr->odp ? &mr->odp->umem : mr->umem;
		if (!(access & IB_ACCESS_ON_DEMAND) != !mr->odp)
			return ERR_PTR(-EOPNOTSUPP);
		if (access & ~(VROCE_MR_ACCESS | IB_ACCESS_OPTIONAL |
			       IB_ACCESS_ON_DEMAND))
			return ERR_PTR(-EOPNOTSUPP);
		/* Memory taken read-only cannot be made writable in place. */
		if (ib_access_writable(access) && !umem->writable)
			return ERR_PTR(-EOPNOTSUPP);
		if (!mr_persistence_ok(mr, access))
			return ERR_PTR(-EINVAL);
	}
	/* Not under bound windows (their checks were made against these). */
	xa_lock_irqsave(&mr->vdev->mws, irqflags);
	if (mr->num_mw) {
		err = -EBUSY;
	} else {
		if (flags & IB_MR_REREG_ACCESS)
			WRITE_ONCE(mr->access, access & VROCE_MR_ACCESS);
		if (flags & IB_MR_REREG_PD)
			WRITE_ONCE(mr->pd, ibpd);
	}
	xa_unlock_irqrestore(&mr->vdev->mws, irqflags);
	return err ? ERR_PTR(err) : NULL;
}

struct ib_mr *vroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct vroce_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EINVAL);
	if (!max_num_sg || max_num_sg > VROCE_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);

	mr = mr_alloc(ibpd, VROCE_MR_FAST, 0);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->pages = kcalloc(max_num_sg, sizeof(*mr->pages), GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_free;
	}
	mr->max_pages = max_num_sg;
	err = mr_publish(mr);
	if (err)
		goto err_free;
	return &mr->ibmr;

err_free:
	mr_free(mr);
	return ERR_PTR(err);
}

/* ib_sg_to_pages() callback: @addr is a kernel virtual address (virt DMA). */
static int mr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct vroce_mr *mr = to_vmr(ibmr);
	void *va = (void *)(uintptr_t)addr;

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	if (!virt_addr_valid(va))
		return -EINVAL;
	mr->pages[mr->npages++] = virt_to_page(va);
	return 0;
}

/*
 * The page list of the next IB_WR_REG_MR. The device has no DMA device, so
 * the scatterlist's DMA addresses are kernel virtual addresses.
 */
int vroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct vroce_mr *mr = to_vmr(ibmr);

	if (mr->kind != VROCE_MR_FAST || ibmr->page_size != PAGE_SIZE)
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, mr_set_page);
}

/*
 * Fails with -EBUSY while memory windows are bound (IBA 10.6.7.2.6).
 * Never waits for a QP that holds the MR (see the comment at the top).
 */
int vroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct vroce_mr *mr = to_vmr(ibmr);
	struct vroce_dev *vdev = mr->vdev;
	unsigned long flags;
	int err = 0;

	xa_lock_irqsave(&vdev->mws, flags);
	if (mr->num_mw)
		err = -EBUSY;
	else
		mr->mw_closed = true;
	xa_unlock_irqrestore(&vdev->mws, flags);
	if (err)
		return err;

	xa_erase(&vdev->mrs, mr_index(mr->ibmr.lkey));
	mr_kill(mr);
	mr_release(mr);
	vroce_mr_put(mr);
	return 0;
}
