// SPDX-License-Identifier: GPL-2.0
/*
 * Moving data between kernel buffers and registered memory: the API the
 * transport builds on.
 *
 * - vroce_mr_copy() copies between a buffer and an MR at an iova, after
 *   checking that [iova, iova + len) lies inside the MR. A DMA MR's iova is
 *   a kernel virtual address. A user or fast-reg MR's bytes live in
 *   ->pages, the page of ->iova first, mapped one at a time with
 *   kmap_local_page(); every page index is checked against ->max_pages.
 *   An on-demand paging (ODP) MR's pages are faulted in when missing and
 *   reached through vroce_odp_access() (mr_odp.c).
 * - struct vroce_sge_cursor walks a WQE's SGE list: each SGE's lkey is
 *   looked up (vroce_mr_get(), with the PD and access of the transfer)
 *   when the cursor reaches its first byte, and its range is checked once.
 *   Zero-length SGEs are skipped without looking at their lkey.
 * - vroce_mr_atomic() does an 8-byte atomic on an aligned iova. It uses the
 *   CPU's 64-bit atomic instructions on the kernel mapping of the page, so
 *   it is atomic against every other vroce atomic on the same memory, from
 *   any QP and any vroce device, with no lock; it is not atomic against
 *   plain CPU stores by the memory's owner (neither is a real RNIC's).
 *
 * - vroce_mr_flush() makes what was placed in a range reach a placement
 *   type of RDMA FLUSH.
 * - vroce_mr_pages() and vroce_sge_pages() hand out the pages of a user
 *   MR's range instead of copying it (a loopback frame's payload, tx.c).
 *   The pages are pinned only while the MR is registered: the callback
 *   must take its own page reference on what it keeps (vroce_tx_add_frag()
 *   does), and the holder may read them after the MR is gone.
 *
 * Callers hold a reference on every MR they pass (vroce_mr_get()). Nothing
 * here sleeps but an access to an ODP MR, which may fault: that takes
 * process context, where the transport's copies run (the QP's task; see
 * mr_odp.c). A reference keeps the MR's structure, not its memory: each
 * access here is bracketed by vroce_mr_enter()/vroce_mr_exit(), and fails
 * with -EACCES once the MR is deregistered (mr.c).
 */

#include <linux/highmem.h>
#include <linux/libnvdimm.h>
#include <linux/minmax.h>

#include "mr.h"
#include "mr_copy.h"
#include "mr_odp.h"

/**
 * vroce_mr_range_ok - [@iova, @iova + @len) lies inside @mr
 * @mr: a referenced MR
 * @iova: first address (untrusted)
 * @len: bytes (untrusted)
 *
 * Return: true if the whole range is inside @mr, without overflow.
 */
bool vroce_mr_range_ok(struct vroce_mr *mr, u64 iova, u64 len)
{
	u64 start = READ_ONCE(mr->iova), length = READ_ONCE(mr->length);

	return iova >= start && iova - start <= length &&
	       len <= length - (iova - start);
}

/* Byte offset of @iova from the start of @mr->pages[0]. */
static u64 mr_page_offset(struct vroce_mr *mr, u64 iova)
{
	u64 start = READ_ONCE(mr->iova);

	return (start & ~PAGE_MASK) + (iova - start);
}

static struct page *mr_page(struct vroce_mr *mr, u64 offset)
{
	u64 idx = offset >> PAGE_SHIFT;

	return idx < mr->max_pages ? READ_ONCE(mr->pages[idx]) : NULL;
}

static void copy_dir(void *mem, void *buf, u32 len, enum vroce_copy_dir dir)
{
	if (dir == VROCE_COPY_TO_MR)
		memcpy(mem, buf, len);
	else
		memcpy(buf, mem, len);
}

static int copy_pages(struct vroce_mr *mr, u64 offset, void *buf, u32 len,
		      enum vroce_copy_dir dir)
{
	while (len) {
		u32 in_page = offset & ~PAGE_MASK;
		u32 chunk = min_t(u32, len, PAGE_SIZE - in_page);
		struct page *page = mr_page(mr, offset);
		void *va;

		if (!page)
			return -EFAULT;
		va = kmap_local_page(page);
		copy_dir(va + in_page, buf, chunk, dir);
		kunmap_local(va);
		offset += chunk;
		buf += chunk;
		len -= chunk;
	}
	return 0;
}

/* A copy to or from an ODP MR: the buffer's position and the direction. */
struct odp_copy {
	void *buf;
	enum vroce_copy_dir dir;
};

static void odp_copy_piece(void *arg, void *va, u32 len)
{
	struct odp_copy *c = arg;

	copy_dir(va, c->buf, len, c->dir);
	c->buf += len;
}

static int odp_copy(struct vroce_mr *mr, u64 iova, void *buf, u32 len,
		    enum vroce_copy_dir dir)
{
	struct odp_copy c = { .buf = buf, .dir = dir };

	return vroce_odp_access(mr, iova, len, dir == VROCE_COPY_TO_MR,
				odp_copy_piece, &c);
}

/**
 * vroce_mr_copy - copy between a kernel buffer and an MR
 * @mr: a referenced MR
 * @iova: where in @mr (untrusted)
 * @buf: the kernel buffer
 * @len: bytes to copy (untrusted)
 * @dir: which way
 *
 * Context: process for an ODP MR (it may sleep); any for the others.
 * Return: 0, -EFAULT if the range is not inside @mr (nothing copied) or an
 * ODP MR's pages cannot be faulted in, or -EACCES if @mr is deregistered.
 */
int vroce_mr_copy(struct vroce_mr *mr, u64 iova, void *buf, u32 len,
		  enum vroce_copy_dir dir)
{
	int err = 0;

	if (!vroce_mr_range_ok(mr, iova, len))
		return -EFAULT;
	if (!len)
		return 0;
	if (!vroce_mr_enter(mr))
		return -EACCES;
	if (mr->kind == VROCE_MR_DMA)
		copy_dir((void *)(uintptr_t)iova, buf, len, dir);
	else if (mr->kind == VROCE_MR_ODP)
		err = odp_copy(mr, iova, buf, len, dir);
	else
		err = copy_pages(mr, mr_page_offset(mr, iova), buf, len, dir);
	vroce_mr_exit(mr);
	return err;
}

/* Write the CPU caches over [@offset, @offset + @len) of @mr back. */
static int writeback_pages(struct vroce_mr *mr, u64 offset, u64 len)
{
	while (len) {
		u32 in_page = offset & ~PAGE_MASK;
		u32 chunk = min_t(u64, len, PAGE_SIZE - in_page);
		struct page *page = mr_page(mr, offset);
		void *va;

		if (!page)
			return -EFAULT;
		va = kmap_local_page(page);
		arch_wb_cache_pmem(va + in_page, chunk);
		kunmap_local(va);
		offset += chunk;
		len -= chunk;
	}
	return 0;
}

/**
 * vroce_mr_flush - make a range of an MR reach an RDMA FLUSH placement type
 * @mr: a referenced MR
 * @iova: where in @mr (untrusted)
 * @len: bytes (untrusted; 0 flushes nothing but still checks @iova)
 * @persistent: persistence asked for, not only global visibility
 *
 * The data was placed by CPU copies that are complete: it is globally
 * visible; a write barrier orders it before the answer that says so. For
 * persistence, the CPU caches over the range are written back to memory
 * (arch_wb_cache_pmem(): a no-op where the architecture has no pmem API).
 * Only an MR whose pages are all persistent memory grants persistence
 * (mr.c), so that memory holds the data once this returns.
 *
 * Return: 0, -EFAULT if the range is not inside @mr, or -EACCES if @mr is
 * deregistered.
 */
int vroce_mr_flush(struct vroce_mr *mr, u64 iova, u64 len, bool persistent)
{
	int err = 0;

	if (!vroce_mr_range_ok(mr, iova, len))
		return -EFAULT;
	if (!vroce_mr_enter(mr))
		return -EACCES;
	if (persistent &&
	    (mr->kind == VROCE_MR_DMA || mr->kind == VROCE_MR_ODP))
		err = -EFAULT;	/* cannot be: neither grants persistence */
	else if (persistent)
		err = writeback_pages(mr, mr_page_offset(mr, iova), len);
	vroce_mr_exit(mr);
	/* The placed data and written-back lines before the FLUSH's answer. */
	wmb();
	return err;
}

static u64 atomic_do(atomic64_t *v, enum vroce_atomic_op op, u64 compare_add,
		     u64 swap)
{
	if (op == VROCE_ATOMIC_CMP_SWP)
		return atomic64_cmpxchg(v, compare_add, swap);
	if (op == VROCE_ATOMIC_WRITE)
		return atomic64_xchg(v, compare_add);
	return atomic64_fetch_add(compare_add, v);
}

/* An atomic on an ODP MR: its operands, and the value before. */
struct odp_atomic {
	enum vroce_atomic_op op;
	u64 compare_add;
	u64 swap;
	u64 orig;
};

static void odp_atomic_piece(void *arg, void *va, u32 len)
{
	struct odp_atomic *a = arg;

	a->orig = atomic_do(va, a->op, a->compare_add, a->swap);
}

static int odp_atomic(struct vroce_mr *mr, u64 iova, enum vroce_atomic_op op,
		      u64 compare_add, u64 swap, u64 *orig)
{
	struct odp_atomic a = {
		.op = op, .compare_add = compare_add, .swap = swap,
	};
	int err;

	/* Aligned: the 8 bytes are one piece. */
	err = vroce_odp_access(mr, iova, sizeof(u64), true, odp_atomic_piece,
			       &a);
	if (!err)
		*orig = a.orig;
	return err;
}

/**
 * vroce_mr_atomic - compare-and-swap, fetch-and-add or write on MR memory
 * @mr: a referenced MR (the caller checked IB_ACCESS_REMOTE_ATOMIC, or
 *	IB_ACCESS_REMOTE_WRITE for VROCE_ATOMIC_WRITE)
 * @iova: the 8-byte target (untrusted)
 * @op: which atomic
 * @compare_add: the compare value, the addend, or the value to write
 * @swap: the swap value (compare-and-swap)
 * @orig: the value before the operation, in CPU byte order
 *
 * Context: process for an ODP MR (it may sleep); any for the others.
 * Return: 0, -EINVAL if @iova is not 8-byte aligned, -EFAULT if it is
 * not inside @mr (or cannot be faulted in), or -EACCES if @mr is
 * deregistered.
 */
int vroce_mr_atomic(struct vroce_mr *mr, u64 iova, enum vroce_atomic_op op,
		    u64 compare_add, u64 swap, u64 *orig)
{
	struct page *page;
	u64 offset;
	void *va;
	int err;

	if (iova & (sizeof(u64) - 1))
		return -EINVAL;
	if (!vroce_mr_range_ok(mr, iova, sizeof(u64)))
		return -EFAULT;
	if (!vroce_mr_enter(mr))
		return -EACCES;
	if (mr->kind == VROCE_MR_DMA) {
		*orig = atomic_do((atomic64_t *)(uintptr_t)iova, op,
				  compare_add, swap);
		vroce_mr_exit(mr);
		return 0;
	}
	if (mr->kind == VROCE_MR_ODP) {
		err = odp_atomic(mr, iova, op, compare_add, swap, orig);
		vroce_mr_exit(mr);
		return err;
	}

	/* Aligned: the 8 bytes never cross a page. */
	offset = mr_page_offset(mr, iova);
	page = mr_page(mr, offset);
	if (page) {
		va = kmap_local_page(page);
		*orig = atomic_do(va + (offset & ~PAGE_MASK), op, compare_add,
				  swap);
		kunmap_local(va);
	}
	vroce_mr_exit(mr);
	return page ? 0 : -EFAULT;
}

/**
 * vroce_sge_cursor_init - start walking an SGE list
 * @cur: the cursor
 * @vdev: the device
 * @pd: the PD of the QP
 * @sges: the SGE list
 * @num_sge: entries in @sges (bounded by the caller by the QP's max_sge)
 * @access: IB_ACCESS_LOCAL_WRITE to scatter into the list, 0 to gather
 */
void vroce_sge_cursor_init(struct vroce_sge_cursor *cur,
			   struct vroce_dev *vdev, struct ib_pd *pd,
			   const struct rxe_sge *sges, u32 num_sge, int access)
{
	*cur = (struct vroce_sge_cursor) {
		.vdev = vdev,
		.pd = pd,
		.sges = sges,
		.num_sge = num_sge,
		.access = access,
		.idx = 0,
	};
	if (num_sge)
		cur->sge = sges[0];
}

/* Moves to the next non-empty SGE with its MR; 0, -ENOSPC or -EACCES. */
static int cursor_next_sge(struct vroce_sge_cursor *cur)
{
	if (cur->mr) {
		vroce_mr_put(cur->mr);
		cur->mr = NULL;
		if (++cur->idx < cur->num_sge)
			cur->sge = cur->sges[cur->idx];
	}
	while (cur->idx < cur->num_sge && !cur->sge.length)
		if (++cur->idx < cur->num_sge)
			cur->sge = cur->sges[cur->idx];
	if (cur->idx >= cur->num_sge)
		return -ENOSPC;

	cur->mr = vroce_mr_get(cur->vdev, cur->sge.lkey, cur->pd, cur->access);
	if (!cur->mr)
		return -EACCES;
	if (!vroce_mr_range_ok(cur->mr, cur->sge.addr, cur->sge.length))
		return -EFAULT;
	return 0;
}

/**
 * vroce_sge_copy - copy the next @len bytes of an SGE list
 * @cur: the cursor
 * @buf: the kernel buffer; NULL skips @len bytes (keys still checked)
 * @len: bytes
 * @dir: VROCE_COPY_TO_MR scatters @buf into the list, VROCE_COPY_FROM_MR
 *	gathers from it
 *
 * Return: 0; -ENOSPC if the list is shorter than what is asked; -EACCES if
 * an lkey is invalid, of another PD, or lacks the access; -EFAULT if an
 * SGE is outside its MR. After an error the cursor is spent and what was
 * copied before it is unspecified.
 */
int vroce_sge_copy(struct vroce_sge_cursor *cur, void *buf, u32 len,
		   enum vroce_copy_dir dir)
{
	int err;

	while (len) {
		u32 chunk;

		if (!cur->mr || !cur->sge.length) {
			err = cursor_next_sge(cur);
			if (err)
				return err;
		}
		chunk = min(len, cur->sge.length);
		if (buf) {
			err = vroce_mr_copy(cur->mr, cur->sge.addr, buf, chunk,
					    dir);
			if (err)
				return err;
			buf += chunk;
		}
		cur->sge.addr += chunk;
		cur->sge.length -= chunk;
		len -= chunk;
	}
	return 0;
}

/**
 * vroce_mr_pages - the pages of [@iova, @iova + @len) of an MR
 * @mr: a referenced MR
 * @iova: where in @mr (untrusted)
 * @len: bytes, at least 1
 * @max: at most this many pieces
 * @fn: called for each piece in order: its page, offset and length
 * @arg: argument of @fn
 *
 * For a transmit without a copy: only a user MR, whose pages stay pinned
 * while it is registered (what @fn keeps of a page beyond that, it must
 * hold a reference on); an ODP MR's pages may move at any time, so it is
 * copied.
 *
 * Return: 0; -EAGAIN if @mr is not a user MR or the range takes more than
 * @max pieces (nothing handed out); -EFAULT if it is not inside @mr;
 * -EACCES if @mr is deregistered.
 */
int vroce_mr_pages(struct vroce_mr *mr, u64 iova, u32 len, u32 max,
		   void (*fn)(void *arg, struct page *page, u32 off, u32 len),
		   void *arg)
{
	u64 offset;
	int err = 0;

	if (!vroce_mr_range_ok(mr, iova, len))
		return -EFAULT;
	if (mr->kind != VROCE_MR_USER)
		return -EAGAIN;
	offset = mr_page_offset(mr, iova);
	if (DIV_ROUND_UP((offset & ~PAGE_MASK) + len, PAGE_SIZE) > max)
		return -EAGAIN;
	if (!vroce_mr_enter(mr))
		return -EACCES;
	while (len) {
		u32 in_page = offset & ~PAGE_MASK;
		u32 chunk = min_t(u32, len, PAGE_SIZE - in_page);
		struct page *page = mr_page(mr, offset);

		if (!page) {
			err = -EFAULT;
			break;
		}
		fn(arg, page, in_page, chunk);
		offset += chunk;
		len -= chunk;
	}
	vroce_mr_exit(mr);
	return err;
}

/**
 * vroce_sge_pages - the pages of the next @len bytes of an SGE list
 * @cur: the cursor
 * @len: bytes, at least 1
 * @max: at most this many pieces
 * @fn: called for each piece in order: its page, offset and length
 * @arg: argument of @fn
 *
 * As vroce_mr_pages(), when the bytes lie in one SGE.
 *
 * Return: 0 and the cursor moved past the bytes; -EAGAIN if they are not
 * in one user MR's SGE or take more than @max pieces: nothing handed out,
 * vroce_sge_copy() can take them; or vroce_sge_copy()'s errors.
 */
int vroce_sge_pages(struct vroce_sge_cursor *cur, u32 len, u32 max,
		    void (*fn)(void *arg, struct page *page, u32 off,
			       u32 len),
		    void *arg)
{
	int err;

	if (!cur->mr || !cur->sge.length) {
		err = cursor_next_sge(cur);
		if (err)
			return err;
	}
	if (len > cur->sge.length)
		return -EAGAIN;
	err = vroce_mr_pages(cur->mr, cur->sge.addr, len, max, fn, arg);
	if (err)
		return err;
	cur->sge.addr += len;
	cur->sge.length -= len;
	return 0;
}

/* Drops the cursor's MR reference; call once the WQE is done with. */
void vroce_sge_cursor_done(struct vroce_sge_cursor *cur)
{
	if (cur->mr)
		vroce_mr_put(cur->mr);
	cur->mr = NULL;
}

#ifdef VROCE_DEBUG
#include "selftest/mr.c"
#endif
