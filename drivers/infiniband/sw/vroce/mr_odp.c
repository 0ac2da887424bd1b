// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging (ODP) user MRs: an MR registered with
 * IB_ACCESS_ON_DEMAND pins nothing. ib_core's ib_umem_odp tracks the
 * range with an MMU interval notifier and faults pages in
 * (ib_umem_odp_map_dma_and_lock(), hmm_range_fault() in the owner's mm);
 * vroce keeps its own table of the pages it may touch, ->odp_pages: one
 * entry per page of the umem, the struct page and VROCE_ODP_WRITABLE if it
 * was mapped for writing, 0 if not mapped. Only explicit MRs: an implicit
 * one (all of the address space) is EINVAL, IB_ACCESS_HUGETLB EOPNOTSUPP.
 *
 * Addresses: an iova of the MR is at user address
 * umem.address + (iova - mr->iova), at the same offset in its page
 * (registration requires it), whatever the iova is.
 *
 * Locks and lifetime:
 *
 *   what                     rule
 *   ->odp_pages, the         under odp->umem_mutex. Filled only after
 *   notifier sequence        ib_umem_odp_map_dma_and_lock() returned (its
 *                            sequence check passed, umem_mutex held);
 *                            emptied by the invalidation (odp_invalidate())
 *                            before the pages leave the mm, and by
 *                            vroce_odp_mr_release()
 *   an access                vroce_odp_access(): inside the caller's
 *                            vroce_mr_enter()/vroce_mr_exit(), which keeps
 *                            the umem; the copy or atomic runs under
 *                            umem_mutex, so an invalidation waits for it
 *                            and no page goes away under it
 *   a page fault             hmm_range_fault() under the owner's
 *                            mmap_read_lock, never under umem_mutex (it
 *                            may allocate, and reclaim invalidates)
 *   under umem_mutex         no allocation, no fault, no sleep on anything
 *                            else, no second umem_mutex; only memcpy,
 *                            64-bit atomics, marking pages dirty
 *   lock order               task_mutex or req_mutex (the QP's task), then
 *                            mmap_lock (the fault), or then umem_mutex;
 *                            umem_mutex is innermost
 *   ->private of the umem    the MR, set and cleared under umem_mutex; the
 *                            notifier may fire before it is set
 *   prefetch work            owns an MR reference per SGE; runs on
 *                            vroce_odp_wq (unbound, drained at unload);
 *                            each fault inside vroce_mr_enter()/exit()
 *
 * Context: a fault sleeps, so every ODP access runs in process context.
 * It does: the data path calls vroce_odp_access() only from a QP's task,
 * a work item on vroce_wq or a user's doorbell system call (task.c), both
 * under task_mutex or req_mutex; the receive softirq only queues packets
 * for the task, a kernel ULP's post (any context) only kicks it, and a
 * loopback packet's copy runs in the receiver's task too, never in the
 * sender's transmit path. advise_mr faults in its system call or in the
 * prefetch work. might_sleep() below checks it. Some copies run inside a
 * kmap_local_page() section (pkt.c, tx.c): that section may sleep and
 * fault (Documentation/mm/highmem.rst). vroce_wq has a rescuer
 * (WQ_MEM_RECLAIM): under memory pressure, a fault there delays the QPs
 * queued behind it until the fault is done.
 *
 * Deregistration (mr_kill()) waits for accesses in progress, so its wait
 * is bounded by one fault: hmm_range_fault() (as slow as the memory's
 * backing store) retried on invalidation for up to
 * HMM_RANGE_DEFAULT_TIMEOUT.
 */

#include <linux/highmem.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <rdma/ib_umem_odp.h>

#include "compat.h"
#include "device.h"
#include "mr.h"
#include "mr_copy.h"
#include "mr_odp.h"

/* ->odp_pages: the page was mapped for writing. */
#define VROCE_ODP_WRITABLE 1UL

static struct workqueue_struct *vroce_odp_wq;

int vroce_odp_init(void)
{
	vroce_odp_wq = alloc_workqueue("vroce_odp", WQ_UNBOUND, 0);
	return vroce_odp_wq ? 0 : -ENOMEM;
}

/* After every device is gone: runs what prefetch work is left. */
void vroce_odp_exit(void)
{
	destroy_workqueue(vroce_odp_wq);
}

/* The index in ->odp_pages of user address @uva. */
static unsigned long odp_index(struct ib_umem_odp *odp, unsigned long uva)
{
	return (uva - ib_umem_start(odp)) >> PAGE_SHIFT;
}

/* The user address of @iova; the caller checked it is inside @mr. */
static unsigned long odp_uva(struct vroce_mr *mr, u64 iova)
{
	return mr->odp->umem.address + (iova - READ_ONCE(mr->iova));
}

/* Is all of [@uva, @uva + @len) mapped, for writing if @write? */
static bool odp_present(struct vroce_mr *mr, unsigned long uva, u32 len,
			bool write)
{
	unsigned long i = odp_index(mr->odp, uva);
	unsigned long last = odp_index(mr->odp, uva + len - 1);
	unsigned long e;

	lockdep_assert_held(&mr->odp->umem_mutex);
	for (; i <= last; i++) {
		e = mr->odp_pages[i];
		if (!e || (write && !(e & VROCE_ODP_WRITABLE)))
			return false;
	}
	return true;
}

/* Record what ib_umem_odp says is mapped of [@uva, @uva + @len). */
static void odp_record(struct vroce_mr *mr, unsigned long uva, u32 len)
{
	unsigned long i = odp_index(mr->odp, uva);
	unsigned long last = odp_index(mr->odp, uva + len - 1);
	struct page *page;
	bool writable;

	lockdep_assert_held(&mr->odp->umem_mutex);
	for (; i <= last; i++) {
		page = vroce_compat_odp_page(mr->odp, i, &writable);
		mr->odp_pages[i] = page ? (unsigned long)page |
			(writable ? VROCE_ODP_WRITABLE : 0) : 0;
	}
}

/*
 * Forget the pages of [@start, @end) (page aligned): they are leaving the
 * mm, or the MR. Pages written through are marked dirty where ib_core's
 * unmap does not do it.
 */
static void odp_forget(struct vroce_mr *mr, unsigned long start,
		       unsigned long end)
{
	unsigned long i = odp_index(mr->odp, start);
	unsigned long last = odp_index(mr->odp, end - 1);
	unsigned long e;

	lockdep_assert_held(&mr->odp->umem_mutex);
	for (; i <= last; i++) {
		e = mr->odp_pages[i];
		if (!VROCE_COMPAT_ODP_UNMAP_DIRTIES &&
		    (e & VROCE_ODP_WRITABLE))
			set_page_dirty((struct page *)(e & ~VROCE_ODP_WRITABLE));
		mr->odp_pages[i] = 0;
	}
}

/*
 * Map [@uva, @uva + @len), faulting it in (for writing if @write) if
 * @fault, else only what the mm has mapped, and record it. Sleeps.
 * Return: 0 with umem_mutex held, or -EFAULT without it.
 */
static int odp_map(struct vroce_mr *mr, unsigned long uva, u32 len,
		   bool write, bool fault)
{
	int ret;

	might_sleep();
	ret = ib_umem_odp_map_dma_and_lock(mr->odp, uva, len,
					   vroce_compat_odp_access(write),
					   fault);
	if (ret < 0) {
		ibdev_dbg(&mr->vdev->ibdev,
			  "ODP MR %#x: cannot map %u bytes at %#lx: %pe\n",
			  mr->key, len, uva, ERR_PTR(ret));
		return -EFAULT;
	}
	odp_record(mr, uva, len);
	return 0;
}

/*
 * Take umem_mutex with all of [@uva, @uva + @len) mapped (for writing if
 * @write), faulting in what is not. Sleeps.
 * Return: 0 with umem_mutex held, or -EFAULT without it.
 */
static int odp_lock(struct vroce_mr *mr, unsigned long uva, u32 len,
		    bool write)
{
	struct mutex *lock = &mr->odp->umem_mutex;
	int err;

	mutex_lock(lock);
	if (odp_present(mr, uva, len, write))
		return 0;
	mutex_unlock(lock);

	err = odp_map(mr, uva, len, write, true);
	if (err)
		return err;
	if (odp_present(mr, uva, len, write))
		return 0;
	mutex_unlock(lock);
	return -EFAULT;
}

/* Hand [@uva, @uva + @len), mapped, to @fn page by page. */
static void odp_walk(struct vroce_mr *mr, unsigned long uva, u32 len,
		     void (*fn)(void *arg, void *va, u32 len), void *arg)
{
	struct page *page;
	u32 in_page, chunk;
	void *va;

	lockdep_assert_held(&mr->odp->umem_mutex);
	while (len) {
		in_page = uva & ~PAGE_MASK;
		chunk = min_t(u32, len, PAGE_SIZE - in_page);
		page = (struct page *)(mr->odp_pages[odp_index(mr->odp, uva)] &
				       ~VROCE_ODP_WRITABLE);
		va = kmap_local_page(page);
		fn(arg, va + in_page, chunk);
		kunmap_local(va);
		uva += chunk;
		len -= chunk;
	}
}

/**
 * vroce_odp_access - reach [@iova, @iova + @len) of an ODP MR
 * @mr: an ODP MR, inside vroce_mr_enter(); the range checked inside it
 * @iova: where
 * @len: bytes
 * @write: @fn writes (the pages are faulted in for writing)
 * @fn: called page by page with the kernel address of each piece, under
 *	umem_mutex: it must not sleep or allocate
 * @arg: argument of @fn
 *
 * Context: process, may sleep (a page fault); see the top of the file.
 * Return: 0, or -EFAULT if the range cannot be mapped (not mapped in the
 * owner's mm, or not writable there, or the mm is gone).
 */
int vroce_odp_access(struct vroce_mr *mr, u64 iova, u32 len, bool write,
		     void (*fn)(void *arg, void *va, u32 len), void *arg)
{
	unsigned long uva = odp_uva(mr, iova);
	int err;

	might_sleep();
	if (!len)
		return 0;
	err = odp_lock(mr, uva, len, write);
	if (err)
		return err;
	odp_walk(mr, uva, len, fn, arg);
	mutex_unlock(&mr->odp->umem_mutex);
	return 0;
}

/*
 * The MMU interval notifier: pages of the MR leave the mm (munmap,
 * madvise, migration, reclaim, exit). Forget them before they go, after
 * any access in progress (umem_mutex).
 */
static bool odp_invalidate(struct mmu_interval_notifier *mni,
			   const struct mmu_notifier_range *range,
			   unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp,
					       notifier);
	unsigned long start = max(range->start, ib_umem_start(odp));
	unsigned long end = min(range->end, ib_umem_end(odp));
	struct vroce_mr *mr;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	mr = odp->private;
	if (mr && start < end)
		odp_forget(mr, start, end);
	if (start < end)
		ib_umem_odp_unmap_dma_pages(odp, start, end);
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops vroce_odp_ops = {
	.invalidate = odp_invalidate,
};

/**
 * vroce_odp_mr_init - make @mr an ODP MR of [@start, @start + @length)
 * @mr: a new MR of kind VROCE_MR_ODP, not yet published
 * @start: the user address (checked by the caller: no wrap-around, the
 *	iova's page offset)
 * @length: bytes, not 0
 * @access: the registration's access flags, IB_ACCESS_ON_DEMAND among them
 *
 * Context: the registering process (its mm is the MR's).
 * Return: 0, -EINVAL for an implicit MR, or ib_umem_odp_get()'s error.
 */
int vroce_odp_mr_init(struct vroce_mr *mr, u64 start, u64 length,
		      int access)
{
	struct ib_umem_odp *odp;
	unsigned long *pages;

	if (!start && length == U64_MAX)
		return -EINVAL;
	odp = ib_umem_odp_get(&mr->vdev->ibdev, start, length, access,
			      &vroce_odp_ops);
	if (IS_ERR(odp))
		return PTR_ERR(odp);
	pages = kvcalloc(ib_umem_odp_num_pages(odp), sizeof(*pages),
			 GFP_KERNEL | __GFP_NOWARN);
	if (!pages) {
		ib_umem_odp_release(odp);
		return -ENOMEM;
	}
	mr->odp = odp;
	mr->odp_pages = pages;
	mutex_lock(&odp->umem_mutex);
	odp->private = mr;
	mutex_unlock(&odp->umem_mutex);
	return 0;
}

/**
 * vroce_odp_mr_release - give back an ODP MR's umem
 * @mr: an ODP MR no access is in progress on, and none can start (mr.c)
 */
void vroce_odp_mr_release(struct vroce_mr *mr)
{
	struct ib_umem_odp *odp = mr->odp;

	mutex_lock(&odp->umem_mutex);
	odp_forget(mr, ib_umem_start(odp), ib_umem_end(odp));
	odp->private = NULL;
	mutex_unlock(&odp->umem_mutex);
	ib_umem_odp_release(odp);
	kvfree(mr->odp_pages);
	mr->odp = NULL;
	mr->odp_pages = NULL;
}

/* One range of a prefetch: an MR reference, and where. */
struct vroce_odp_range {
	struct vroce_mr *mr;
	u64 iova;
	u32 len;
};

/**
 * struct vroce_odp_prefetch - an asynchronous advise_mr
 * @work: on vroce_odp_wq
 * @write: fault in for writing (PREFETCH_WRITE)
 * @fault: fault in (not PREFETCH_NO_FAULT)
 * @num: entries in @range
 * @range: the SGEs, each with a reference on its MR, which the work owns
 */
struct vroce_odp_prefetch {
	struct work_struct work;
	bool write;
	bool fault;
	u32 num;
	struct vroce_odp_range range[];
};

/* Map one range of a prefetch. Context: process, may sleep. */
static int odp_prefetch_range(const struct vroce_odp_range *r, bool write,
			      bool fault)
{
	unsigned long uva;
	int err;

	if (!r->len)
		return 0;
	if (!vroce_mr_enter(r->mr))
		return -EINVAL;
	uva = odp_uva(r->mr, r->iova);
	if (fault)
		err = odp_lock(r->mr, uva, r->len, write);
	else
		err = odp_map(r->mr, uva, r->len, false, false);
	if (!err)
		mutex_unlock(&r->mr->odp->umem_mutex);
	vroce_mr_exit(r->mr);
	return err;
}

/*
 * The ODP MR of an advise_mr SGE, referenced, with the access asked for
 * and the range inside it; or an ERR_PTR(): -EINVAL if the lkey names no
 * such MR of @ibpd, -EFAULT if the range is outside it.
 */
static struct vroce_mr *odp_prefetch_mr(struct ib_pd *ibpd,
					const struct ib_sge *sge, bool write)
{
	struct vroce_mr *mr;

	mr = vroce_mr_get(to_vdev(ibpd->device), sge->lkey, ibpd,
			  write ? IB_ACCESS_LOCAL_WRITE : 0);
	if (!mr)
		return ERR_PTR(-EINVAL);
	if (mr->kind != VROCE_MR_ODP) {
		vroce_mr_put(mr);
		return ERR_PTR(-EINVAL);
	}
	if (!vroce_mr_range_ok(mr, sge->addr, sge->length)) {
		vroce_mr_put(mr);
		return ERR_PTR(-EFAULT);
	}
	return mr;
}

static void odp_prefetch_put(struct vroce_odp_prefetch *pf)
{
	u32 i;

	for (i = 0; i < pf->num; i++)
		if (pf->range[i].mr)
			vroce_mr_put(pf->range[i].mr);
	kvfree(pf);
}

/* The asynchronous prefetch: best effort, errors are dropped. */
static void odp_prefetch_work(struct work_struct *work)
{
	struct vroce_odp_prefetch *pf =
		container_of(work, struct vroce_odp_prefetch, work);
	u32 i;

	for (i = 0; i < pf->num; i++)
		odp_prefetch_range(&pf->range[i], pf->write, pf->fault);
	odp_prefetch_put(pf);
}

/* Resolve the SGEs of an advise_mr into @pf: 0, or the first error. */
static int odp_prefetch_prepare(struct vroce_odp_prefetch *pf,
				struct ib_pd *ibpd,
				const struct ib_sge *sg_list)
{
	struct vroce_mr *mr;
	u32 i;

	for (i = 0; i < pf->num; i++) {
		mr = odp_prefetch_mr(ibpd, &sg_list[i], pf->write);
		if (IS_ERR(mr))
			return PTR_ERR(mr);
		pf->range[i] = (struct vroce_odp_range) {
			.mr = mr,
			.iova = sg_list[i].addr,
			.len = sg_list[i].length,
		};
	}
	return 0;
}

/* advise_mr with IB_UVERBS_ADVISE_MR_FLAG_FLUSH: here, now. */
static int odp_prefetch_sync(struct vroce_odp_prefetch *pf)
{
	int err = 0;
	u32 i;

	for (i = 0; i < pf->num && !err; i++)
		err = odp_prefetch_range(&pf->range[i], pf->write, pf->fault);
	odp_prefetch_put(pf);
	return err;
}

/**
 * vroce_advise_mr - the advise_mr verb: prefetch ranges of ODP MRs
 * @ibpd: the PD the lkeys must be of
 * @advice: PREFETCH (for reading), PREFETCH_WRITE, or PREFETCH_NO_FAULT
 *	(map only what the mm has mapped already)
 * @flags: IB_UVERBS_ADVISE_MR_FLAG_FLUSH: done when this returns; else
 *	queued (the work owns the MR references)
 * @sg_list: the ranges: lkey, iova and length
 * @num_sge: entries in @sg_list
 * @attrs: unused
 *
 * Context: process (the ADVISE_MR method), may sleep.
 * Return: 0; -EOPNOTSUPP for another advice or flag; -EINVAL if an lkey
 * names no ODP MR of @ibpd granting local write for PREFETCH_WRITE;
 * -EFAULT if a range is outside its MR or (synchronous) cannot be mapped;
 * -ENOMEM.
 */
int vroce_advise_mr(struct ib_pd *ibpd,
		    enum ib_uverbs_advise_mr_advice advice, u32 flags,
		    struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs)
{
	struct vroce_odp_prefetch *pf;
	int err;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	if (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return -EOPNOTSUPP;

	pf = kvzalloc(struct_size(pf, range, num_sge), GFP_KERNEL);
	if (!pf)
		return -ENOMEM;
	pf->num = num_sge;
	pf->write = advice == IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	pf->fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	err = odp_prefetch_prepare(pf, ibpd, sg_list);
	if (err) {
		odp_prefetch_put(pf);
		return err;
	}
	if (flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return odp_prefetch_sync(pf);
	INIT_WORK(&pf->work, odp_prefetch_work);
	queue_work(vroce_odp_wq, &pf->work);
	return 0;
}
