/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_MR_H
#define _VROCE_MR_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <rdma/ib_verbs.h>

#include "compat.h"

struct ib_umem;
struct ib_umem_odp;
struct vroce_dev;

/*
 * An MR key is (index << 8) | variant. The index (23 bits) names the slot
 * of vroce_dev.mrs; the variant is the "key" byte that IB_WR_REG_MR updates
 * with ib_update_fast_reg_key(). Index 0 is never allocated, so key 0 is
 * never valid (vroce has no local_dma_lkey: ib_core gives each kernel PD a
 * DMA MR instead). Keys with VROCE_KEY_MW set name memory windows (mw.c):
 * MRs and MWs share one 32-bit key space, and an MW key is never an lkey.
 */
#define VROCE_MR_KEY_SHIFT 8
#define VROCE_KEY_MW BIT(31)
#define VROCE_MR_INDEX_MAX ((VROCE_KEY_MW - 1) >> VROCE_MR_KEY_SHIFT)

/*
 * Access bits a key can grant; all others are rejected at registration.
 * The FLUSH bits exist from 6.2 on (compat.h); persistence only over pages
 * that are all persistent memory.
 */
#define VROCE_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND | VROCE_COMPAT_ACCESS_FLUSH)

enum vroce_mr_kind {
	VROCE_MR_DMA,	/* get_dma_mr: iova is a kernel virtual address */
	VROCE_MR_USER,	/* reg_user_mr: pinned user pages (ib_umem) */
	VROCE_MR_FAST,	/* alloc_mr: a page list set by map_mr_sg */
	VROCE_MR_ODP,	/* reg_user_mr, on-demand paging: faulted on access */
};

/**
 * struct vroce_mr - a memory region
 * @ibmr: the ib_core MR; the driver allocates it (ib_core has no object
 *	size for ib_mr) and frees it after dereg_mr, with kfree_rcu()
 * @vdev: the device whose key table holds the MR
 * @kind: DMA, user or fast-registration MR; set at creation
 * @valid: the key may be used (always for DMA and user MRs; for a fast-reg
 *	MR between IB_WR_REG_MR and invalidation) (READ_ONCE/WRITE_ONCE)
 * @key: lkey == rkey (READ_ONCE/WRITE_ONCE: changed by fast registration)
 * @access: IB_ACCESS_* granted (READ_ONCE/WRITE_ONCE)
 * @pd: the PD lookups check against (READ_ONCE/WRITE_ONCE)
 * @iova: first address of the region (READ_ONCE/WRITE_ONCE)
 * @length: bytes in the region (READ_ONCE/WRITE_ONCE)
 * @umem: pinned user memory of a user MR
 * @pages: the region's pages, @iova's page first (user and fast-reg MRs)
 * @max_pages: size of @pages; page indices are bounded by it, always
 * @npages: pages mapped (fast-reg: by map_mr_sg)
 * @odp: the on-demand paging umem of an ODP MR (@pages stays NULL)
 * @odp_pages: an ODP MR's pages mapped now, one entry per page of @odp
 *	(mr_odp.c; under @odp's umem_mutex)
 * @num_mw: memory windows bound to the MR (vroce_dev.mws' lock)
 * @mw_closed: deregistration started, no window may bind (vroce_dev.mws'
 *	lock)
 * @refs: keeps the structure: 1 while registered, plus one per
 *	vroce_mr_get() user; the last vroce_mr_put() frees it. A reference
 *	does not keep the memory: see @dead
 * @dead: deregistration began; no access to the memory may start
 *	(vroce_mr_enter() fails), and the pages go once @copies is zero
 * @copies: accesses to the memory in progress (vroce_mr_enter())
 * @rcu: frees the MR after lockless lookups are done with it
 */
struct vroce_mr {
	struct ib_mr ibmr;
	struct vroce_dev *vdev;
	enum vroce_mr_kind kind;
	bool valid;
	u32 key;
	int access;
	struct ib_pd *pd;
	u64 iova;
	u64 length;
	struct ib_umem *umem;
	struct page **pages;
	u32 max_pages;
	u32 npages;
	struct ib_umem_odp *odp;
	unsigned long *odp_pages;
	u32 num_mw;
	bool mw_closed;
	refcount_t refs;
	bool dead;
	atomic_t copies;
	struct rcu_head rcu;
};

static inline struct vroce_mr *to_vmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct vroce_mr, ibmr);
}

/**
 * vroce_mr_enter - begin an access to a referenced MR's memory
 * @mr: the MR
 *
 * Pairs with vroce_mr_exit(). Between the two, deregistration waits
 * (vroce_dereg_mr()), so the pages stay pinned and ->pages stays (an ODP
 * MR's umem stays). The access must not sleep or wait for anything but,
 * on an ODP MR (mr_odp.c), its page fault and the umem's mutex: its
 * length, with that fault, is the bound of that wait.
 *
 * Return: false if the MR is being or has been deregistered (then the
 * access fails, as a NIC's does on an invalid key).
 */
static inline bool vroce_mr_enter(struct vroce_mr *mr)
{
	atomic_inc(&mr->copies);
	/* The count before the flag; pairs with mr_kill()'s barrier. */
	smp_mb__after_atomic();
	if (likely(!READ_ONCE(mr->dead)))
		return true;
	atomic_dec(&mr->copies);
	return false;
}

void vroce_mr_exit_slow(struct vroce_mr *mr);

/* End an access begun by a successful vroce_mr_enter(). */
static inline void vroce_mr_exit(struct vroce_mr *mr)
{
	/* atomic_dec_return() is fully ordered: the access, then the flag. */
	if (!atomic_dec_return(&mr->copies) && unlikely(READ_ONCE(mr->dead)))
		vroce_mr_exit_slow(mr);
}

/* mr.c APIs: */
void vroce_mr_dev_init(struct vroce_dev *vdev);
void vroce_mr_dev_uninit(struct vroce_dev *vdev);
struct vroce_mr *vroce_mr_get(struct vroce_dev *vdev, u32 key,
			      struct ib_pd *pd, int access);
void vroce_mr_put(struct vroce_mr *mr);
int vroce_mr_fast_reg(struct vroce_mr *mr, u32 key, int access);
int vroce_mr_invalidate(struct vroce_dev *vdev, u32 key, struct ib_pd *pd);
struct vroce_mr *vroce_rkey_get(struct vroce_dev *vdev, struct ib_qp *ibqp,
				u32 rkey, u64 va, u64 len, int access);
int vroce_rkey_invalidate(struct vroce_dev *vdev, struct ib_qp *ibqp,
			  u32 rkey);

struct ib_mr *vroce_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *vroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *vroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *vroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int vroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int vroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

#endif /* _VROCE_MR_H */
