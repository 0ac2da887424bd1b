// SPDX-License-Identifier: GPL-2.0
/*
 * Self-tests of memory registration and the copy API, run at module load
 * when the module is built with VROCE_DEBUG (make KVER=debug). They work on
 * a private, unregistered vroce_dev, so they need no netdev and no ib_core
 * registration: a fast-reg MR mapped from a scatterlist of kernel pages,
 * and a DMA MR over a kmalloc() buffer.
 */

#include <linux/scatterlist.h>
#include <linux/workqueue.h>

#include "../device.h"
#include "../mw.h"
#include "../query.h"

enum { ST_PAGES = 4, ST_OFF0 = 100 };

struct mr_st {
	struct vroce_dev *vdev;
	struct ib_pd pd, other_pd;
	struct page *pages[ST_PAGES];
	struct scatterlist sg[ST_PAGES];
	struct vroce_mr *fast;
	u64 len;	/* bytes in the fast-reg MR */
	u8 *buf, *buf2;
};

static bool st_ok(bool ok, const char *what, const char *func, int line)
{
	if (!ok)
		pr_err("mr self-test %s:%d: %s\n", func, line, what);
	return ok;
}

#define ST_OK(cond) st_ok(!!(cond), #cond, __func__, __LINE__)

/* The byte at offset @x of the fast-reg region, found independently. */
static u8 *st_byte(struct mr_st *st, u64 x)
{
	u64 off = ST_OFF0 + x;

	return (u8 *)page_address(st->pages[off >> PAGE_SHIFT]) +
	       (off & ~PAGE_MASK);
}

static struct vroce_mr *st_mr(struct mr_st *st, struct ib_mr *ibmr,
			      struct ib_pd *pd)
{
	if (IS_ERR(ibmr))
		return NULL;
	ibmr->device = pd->device;
	ibmr->pd = pd;
	return to_vmr(ibmr);
}

/* The region: ST_OFF0 into page 0 up to 50 bytes before the end of page 3. */
static bool st_map_fast(struct mr_st *st)
{
	u32 key;
	int i, n;

	sg_init_table(st->sg, ST_PAGES);
	for (i = 0; i < ST_PAGES; i++) {
		u32 off = i ? 0 : ST_OFF0;
		u32 end = i == ST_PAGES - 1 ? PAGE_SIZE - 50 : PAGE_SIZE;

		sg_set_page(&st->sg[i], st->pages[i], end - off, off);
		/* What ib_dma_map_sg() does for a device without DMA. */
		sg_dma_address(&st->sg[i]) = (uintptr_t)sg_virt(&st->sg[i]);
		sg_dma_len(&st->sg[i]) = st->sg[i].length;
	}
	st->len = ST_PAGES * PAGE_SIZE - ST_OFF0 - 50;

	st->fast = st_mr(st, vroce_alloc_mr(&st->pd, IB_MR_TYPE_MEM_REG,
					    ST_PAGES), &st->pd);
	if (!ST_OK(st->fast))
		return false;
	/* Not usable before IB_WR_REG_MR. */
	if (!ST_OK(!vroce_mr_get(st->vdev, st->fast->key, &st->pd, 0)))
		return false;

	st->fast->ibmr.page_size = PAGE_SIZE;
	n = vroce_map_mr_sg(&st->fast->ibmr, st->sg, ST_PAGES, NULL);
	if (!ST_OK(n == ST_PAGES))
		return false;
	if (!ST_OK(st->fast->ibmr.length == st->len))
		return false;

	key = (st->fast->key & ~0xffU) | ((st->fast->key + 1) & 0xff);
	if (!ST_OK(vroce_mr_fast_reg(st->fast, key ^ 0x100, 0) == -EINVAL))
		return false;
	if (!ST_OK(vroce_mr_fast_reg(st->fast, key, IB_ACCESS_REMOTE_WRITE) ==
		   -EINVAL))
		return false;
	if (!ST_OK(!vroce_mr_fast_reg(st->fast, key, IB_ACCESS_LOCAL_WRITE |
				      IB_ACCESS_REMOTE_READ |
				      IB_ACCESS_REMOTE_WRITE |
				      IB_ACCESS_REMOTE_ATOMIC)))
		return false;
	if (!ST_OK(st->fast->ibmr.lkey == key && st->fast->ibmr.rkey == key))
		return false;
	return true;
}

static bool st_copy_one(struct mr_st *st, u64 x, u32 len)
{
	u64 iova = st->fast->iova + x;
	u32 i;

	for (i = 0; i < len; i++)
		st->buf[i] = (u8)(x * 7 + i * 13 + len);
	if (!ST_OK(!vroce_mr_copy(st->fast, iova, st->buf, len,
				  VROCE_COPY_TO_MR)))
		return false;
	for (i = 0; i < len; i++)
		if (!ST_OK(*st_byte(st, x + i) == st->buf[i]))
			return false;
	memset(st->buf2, 0, len);
	if (!ST_OK(!vroce_mr_copy(st->fast, iova, st->buf2, len,
				  VROCE_COPY_FROM_MR)))
		return false;
	if (!ST_OK(!memcmp(st->buf, st->buf2, len)))
		return false;
	return true;
}

/* Every offset and length around each page boundary, and long copies. */
static bool st_copy(struct mr_st *st)
{
	static const u32 lens[] = { 1, 2, 8, 63, PAGE_SIZE - 1, PAGE_SIZE,
				    PAGE_SIZE + 1, 2 * PAGE_SIZE + 3 };
	u64 b, x;
	u32 len;
	int i;

	for (b = PAGE_SIZE - ST_OFF0; b < st->len; b += PAGE_SIZE)
		for (x = b - 12; x < b + 12; x++)
			for (len = 0; len <= 24 && x + len <= st->len; len++)
				if (!st_copy_one(st, x, len))
					return false;
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		if (!ST_OK(st_copy_one(st, 0, lens[i])))
			return false;
		if (!ST_OK(st_copy_one(st, st->len - lens[i], lens[i])))
			return false;
		if (!ST_OK(st_copy_one(st, 3, lens[i])))
			return false;
	}
	if (!ST_OK(st_copy_one(st, 0, st->len)))
		return false;
	return true;
}

static bool st_bounds(struct mr_st *st)
{
	struct vroce_mr *mr = st->fast;
	u64 end = mr->iova + st->len;

	if (!ST_OK(vroce_mr_copy(mr, mr->iova - 1, st->buf, 1,
				 VROCE_COPY_TO_MR) == -EFAULT))
		return false;
	if (!ST_OK(vroce_mr_copy(mr, end, st->buf, 1,
				 VROCE_COPY_TO_MR) == -EFAULT))
		return false;
	if (!ST_OK(vroce_mr_copy(mr, end - 1, st->buf, 2,
				 VROCE_COPY_FROM_MR) == -EFAULT))
		return false;
	if (!ST_OK(vroce_mr_copy(mr, mr->iova, st->buf, st->len + 1,
				 VROCE_COPY_FROM_MR) == -EFAULT))
		return false;
	if (!ST_OK(vroce_mr_copy(mr, U64_MAX, st->buf, 2,
				 VROCE_COPY_FROM_MR) == -EFAULT))
		return false;
	if (!ST_OK(vroce_mr_copy(mr, end, st->buf, 0, VROCE_COPY_TO_MR) == 0))
		return false;
	if (!ST_OK(!vroce_mr_range_ok(mr, mr->iova + 1, U64_MAX)))
		return false;
	return true;
}

static bool st_lookup(struct mr_st *st)
{
	struct vroce_mr *mr, *ro;
	u32 key = st->fast->key;

	mr = vroce_mr_get(st->vdev, key, &st->pd, IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_ATOMIC);
	if (!ST_OK(mr == st->fast))
		return false;
	vroce_mr_put(mr);
	if (!ST_OK(!vroce_mr_get(st->vdev, key, &st->other_pd, 0)))
		return false;
	if (!ST_OK(!vroce_mr_get(st->vdev, key ^ 1, &st->pd, 0)))
		return false;
	if (!ST_OK(!vroce_mr_get(st->vdev, 0, &st->pd, 0)))
		return false;
	if (!ST_OK(!vroce_mr_get(st->vdev, U32_MAX, &st->pd, 0)))
		return false;
	if (!ST_OK(!vroce_mr_get(st->vdev, key, &st->pd, IB_ACCESS_MW_BIND)))
		return false;

	/* Local write only: no remote access. */
	ro = st_mr(st, vroce_get_dma_mr(&st->pd, IB_ACCESS_LOCAL_WRITE),
		   &st->pd);
	if (!ST_OK(ro))
		return false;
	if (!ST_OK(ro->key != key && ro->key >> 8))
		return false;
	if (!ST_OK(!vroce_mr_get(st->vdev, ro->key, &st->pd,
				 IB_ACCESS_REMOTE_READ)))
		return false;
	mr = vroce_mr_get(st->vdev, ro->key, &st->pd, IB_ACCESS_LOCAL_WRITE);
	if (!ST_OK(mr == ro))
		return false;
	vroce_mr_put(mr);
	if (!ST_OK(!vroce_dereg_mr(&ro->ibmr, NULL)))
		return false;
	if (!ST_OK(!vroce_mr_get(st->vdev, ro->key, &st->pd, 0)))
		return false;

	/* Bad requests. */
	if (!ST_OK(IS_ERR(vroce_alloc_mr(&st->pd, IB_MR_TYPE_SG_GAPS, 4))))
		return false;
	if (!ST_OK(IS_ERR(vroce_alloc_mr(&st->pd, IB_MR_TYPE_MEM_REG,
					 VROCE_MAX_FAST_REG_PAGES + 1))))
		return false;
	if (!ST_OK(PTR_ERR(vroce_get_dma_mr(&st->pd, IB_ACCESS_REMOTE_WRITE)) ==
		   -EINVAL))
		return false;
	if (!ST_OK(PTR_ERR(vroce_get_dma_mr(&st->pd, IB_ACCESS_ON_DEMAND)) ==
		   -EOPNOTSUPP))
		return false;
	return true;
}

/* Three SGEs: DMA MR, fast-reg MR across pages, a zero-length one, DMA. */
static bool st_sge(struct mr_st *st)
{
	struct vroce_sge_cursor cur;
	struct vroce_mr *dma;
	struct rxe_sge sges[4];
	u8 *kbuf = st->buf2 + 8 * PAGE_SIZE;
	u32 total = 100 + 3000 + 50, i;

	dma = st_mr(st, vroce_get_dma_mr(&st->pd, IB_ACCESS_LOCAL_WRITE),
		    &st->pd);
	if (!ST_OK(dma))
		return false;
	sges[0] = (struct rxe_sge){ (uintptr_t)kbuf, 100, dma->key };
	sges[1] = (struct rxe_sge){ st->fast->iova + PAGE_SIZE - 1000, 3000,
				    st->fast->key };
	sges[2] = (struct rxe_sge){ 0, 0, 0xdead };
	sges[3] = (struct rxe_sge){ (uintptr_t)kbuf + 200, 50, dma->key };

	for (i = 0; i < total; i++)
		st->buf[i] = (u8)(i * 31 + 5);
	vroce_sge_cursor_init(&cur, st->vdev, &st->pd, sges, 4,
			      IB_ACCESS_LOCAL_WRITE);
	if (!ST_OK(!vroce_sge_copy(&cur, st->buf, 7, VROCE_COPY_TO_MR)))
		return false;
	if (!ST_OK(!vroce_sge_copy(&cur, st->buf + 7, total - 7,
				   VROCE_COPY_TO_MR)))
		return false;
	if (!ST_OK(vroce_sge_copy(&cur, st->buf, 1, VROCE_COPY_TO_MR) ==
		   -ENOSPC))
		return false;
	vroce_sge_cursor_done(&cur);
	if (!ST_OK(!memcmp(kbuf, st->buf, 100)))
		return false;
	if (!ST_OK(*st_byte(st, PAGE_SIZE - 1000) == st->buf[100]))
		return false;
	if (!ST_OK(!memcmp(kbuf + 200, st->buf + 3100, 50)))
		return false;

	vroce_sge_cursor_init(&cur, st->vdev, &st->pd, sges, 4, 0);
	if (!ST_OK(!vroce_sge_copy(&cur, st->buf2, total, VROCE_COPY_FROM_MR)))
		return false;
	vroce_sge_cursor_done(&cur);
	if (!ST_OK(!memcmp(st->buf, st->buf2, total)))
		return false;

	/* A bad lkey, an SGE outside its MR, the wrong PD. */
	sges[1].lkey ^= 0x100;
	vroce_sge_cursor_init(&cur, st->vdev, &st->pd, sges, 4, 0);
	if (!ST_OK(vroce_sge_copy(&cur, st->buf, total, VROCE_COPY_FROM_MR) ==
		   -EACCES))
		return false;
	vroce_sge_cursor_done(&cur);
	sges[1].lkey ^= 0x100;
	sges[1].length = st->len;
	vroce_sge_cursor_init(&cur, st->vdev, &st->pd, sges, 4, 0);
	if (!ST_OK(vroce_sge_copy(&cur, st->buf, 200, VROCE_COPY_FROM_MR) ==
		   -EFAULT))
		return false;
	vroce_sge_cursor_done(&cur);
	vroce_sge_cursor_init(&cur, st->vdev, &st->other_pd, sges, 4, 0);
	if (!ST_OK(vroce_sge_copy(&cur, st->buf, 1, VROCE_COPY_FROM_MR) ==
		   -EACCES))
		return false;
	vroce_sge_cursor_done(&cur);

	if (!ST_OK(!vroce_dereg_mr(&dma->ibmr, NULL)))
		return false;
	return true;
}

static bool st_atomic(struct mr_st *st)
{
	struct vroce_mr *mr = st->fast;
	/* The first aligned u64 of page 1, and one straddling nothing. */
	u64 x = PAGE_SIZE - ST_OFF0, orig;
	u64 *p = (u64 *)st_byte(st, x);

	*p = 40;
	if (!ST_OK(!vroce_mr_atomic(mr, mr->iova + x, VROCE_ATOMIC_FETCH_ADD, 2,
				    0, &orig)))
		return false;
	if (!ST_OK(orig == 40 && *p == 42))
		return false;
	if (!ST_OK(!vroce_mr_atomic(mr, mr->iova + x, VROCE_ATOMIC_CMP_SWP, 41,
				    7, &orig)))
		return false;
	if (!ST_OK(orig == 42 && *p == 42))
		return false;
	if (!ST_OK(!vroce_mr_atomic(mr, mr->iova + x, VROCE_ATOMIC_CMP_SWP, 42,
				    7, &orig)))
		return false;
	if (!ST_OK(orig == 42 && *p == 7))
		return false;
	if (!ST_OK(vroce_mr_atomic(mr, mr->iova + x + 4, VROCE_ATOMIC_FETCH_ADD,
				   1, 0, &orig) == -EINVAL))
		return false;
	if (!ST_OK(vroce_mr_atomic(mr, (mr->iova + st->len + 7) & ~7ULL,
				   VROCE_ATOMIC_FETCH_ADD, 1, 0, &orig) ==
		   -EFAULT))
		return false;
	return true;
}

struct st_work {
	struct work_struct work;
	struct vroce_mr *mr;
	u64 iova;
	struct completion done;
};

enum { ST_ADDS = 5000 };

static void st_add_fn(struct work_struct *work)
{
	struct st_work *w = container_of(work, struct st_work, work);
	u64 orig;
	int i;

	for (i = 0; i < ST_ADDS; i++)
		vroce_mr_atomic(w->mr, w->iova, VROCE_ATOMIC_FETCH_ADD, 1, 0,
				&orig);
	complete(&w->done);
}

/* Fetch-and-adds from two CPUs at once lose no update. */
static bool st_atomic_concurrent(struct mr_st *st)
{
	u64 x = 2 * PAGE_SIZE - ST_OFF0 + 64;
	u64 *p = (u64 *)st_byte(st, x);
	struct st_work w[2];
	int i;

	*p = 0;
	for (i = 0; i < 2; i++) {
		INIT_WORK_ONSTACK(&w[i].work, st_add_fn);
		init_completion(&w[i].done);
		w[i].mr = st->fast;
		w[i].iova = st->fast->iova + x;
		queue_work(system_unbound_wq, &w[i].work);
	}
	for (i = 0; i < 2; i++) {
		wait_for_completion(&w[i].done);
		destroy_work_on_stack(&w[i].work);
	}
	if (!ST_OK(*p == 2 * ST_ADDS))
		return false;
	return true;
}

static void st_dereg_fn(struct work_struct *work)
{
	struct st_work *w = container_of(work, struct st_work, work);

	vroce_dereg_mr(&w->mr->ibmr, NULL);
	complete(&w->done);
}

/*
 * dereg_mr waits for an access in progress, but not for a reference: it
 * returns while one is held, and the holder's next access fails.
 */
static bool st_dereg_fence(struct mr_st *st)
{
	struct vroce_mr *mr, *ref;
	bool waited, returned, ok;
	struct st_work w;
	u8 byte = 0;

	mr = st_mr(st, vroce_get_dma_mr(&st->pd, 0), &st->pd);
	if (!ST_OK(mr))
		return false;
	ref = vroce_mr_get(st->vdev, mr->key, &st->pd, 0);
	if (!ST_OK(ref == mr) || !ST_OK(vroce_mr_enter(ref))) {
		if (ref)
			vroce_mr_put(ref);
		vroce_dereg_mr(&mr->ibmr, NULL);
		return false;
	}
	INIT_WORK_ONSTACK(&w.work, st_dereg_fn);
	init_completion(&w.done);
	w.mr = mr;
	queue_work(system_unbound_wq, &w.work);
	waited = !wait_for_completion_timeout(&w.done, msecs_to_jiffies(50));
	vroce_mr_exit(ref);
	returned = wait_for_completion_timeout(&w.done, 5 * HZ);
	if (!returned)
		wait_for_completion(&w.done);
	destroy_work_on_stack(&w.work);
	ok = ST_OK(waited) && ST_OK(returned) && ST_OK(!vroce_mr_enter(ref)) &&
	     ST_OK(vroce_mr_copy(ref, (uintptr_t)st->buf, &byte, 1,
				 VROCE_COPY_FROM_MR) == -EACCES);
	vroce_mr_put(ref);
	return ok;
}

static bool st_invalidate(struct mr_st *st)
{
	u32 key = st->fast->key;

	if (!ST_OK(vroce_mr_invalidate(st->vdev, key, &st->other_pd) == -EACCES))
		return false;
	if (!ST_OK(vroce_mr_invalidate(st->vdev, key ^ 1, &st->pd) == -EINVAL))
		return false;
	if (!ST_OK(!vroce_mr_invalidate(st->vdev, key, &st->pd)))
		return false;
	if (!ST_OK(!vroce_mr_get(st->vdev, key, &st->pd, 0)))
		return false;
	/* Registered again with the same key. */
	if (!ST_OK(!vroce_mr_fast_reg(st->fast, key, 0)))
		return false;
	if (!ST_OK(!vroce_mr_get(st->vdev, key, &st->pd, IB_ACCESS_LOCAL_WRITE)))
		return false;
	return true;
}

static bool st_run(struct mr_st *st)
{
	bool ok;

	ok = st_map_fast(st) && st_copy(st) && st_bounds(st) &&
	     st_lookup(st) && st_sge(st) && st_atomic(st) &&
	     st_atomic_concurrent(st) && st_dereg_fence(st) &&
	     st_invalidate(st);
	if (st->fast) {
		u32 key = st->fast->key;

		vroce_dereg_mr(&st->fast->ibmr, NULL);
		ok = ok && !vroce_mr_get(st->vdev, key, &st->pd, 0);
	}
	return ok;
}

static void st_free(struct mr_st *st)
{
	int i;

	for (i = 0; i < ST_PAGES; i++)
		if (st->pages[i])
			__free_page(st->pages[i]);
	kfree(st->buf);
	kfree(st->buf2);
	if (st->vdev) {
		vroce_mw_dev_uninit(st->vdev);
		vroce_mr_dev_uninit(st->vdev);
	}
	kfree(st->vdev);
}

bool vroce_mr_selftest(void)
{
	struct mr_st st = {};
	bool ok = false;
	int i;

	st.vdev = kzalloc(sizeof(*st.vdev), GFP_KERNEL);
	if (!st.vdev)
		goto out;
	vroce_query_init_attrs(st.vdev);
	vroce_mr_dev_init(st.vdev);
	vroce_mw_dev_init(st.vdev);
	st.buf = kzalloc(ST_PAGES * PAGE_SIZE, GFP_KERNEL);
	st.buf2 = kzalloc(10 * PAGE_SIZE, GFP_KERNEL);
	if (!st.buf || !st.buf2)
		goto out;
	for (i = 0; i < ST_PAGES; i++) {
		st.pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!st.pages[i])
			goto out;
	}
	st.pd.device = &st.vdev->ibdev;
	st.other_pd.device = &st.vdev->ibdev;
	ok = st_run(&st);
out:
	st_free(&st);
	if (ok)
		pr_info("mr self-tests: pass\n");
	else
		pr_err("mr self-tests: FAIL\n");
	return ok;
}
