// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel buffers whose size a uverbs user chooses: the rings of user
 * objects (queue.c) and a user QP's per-slot requester state (qp_xport.c).
 * Any user can ask for tens of MiB, and the device limits are not per
 * user, so:
 * - the pages are charged to the caller's memory cgroup (__GFP_ACCOUNT);
 * - over the cgroup's limit the allocation fails with ENOMEM instead of
 *   invoking the OOM killer (__GFP_RETRY_MAYFAIL);
 * - a failure has freed every page it took before it returns (their
 *   charge at most in the per-CPU stock the cgroup drains before it
 *   reclaims).
 *
 * The last point is why the pages are allocated here and mapped with
 * vmap() instead of coming from __vmalloc(): a __vmalloc() that fails
 * part way releases its pages from a work item on 7.2 (not on 6.1, 6.12), so
 * the cgroup stays at its limit for a moment after the ENOMEM, and the
 * caller's next charged allocation, even of one page, invokes the cgroup's
 * OOM killer. Measured on 7.2 with __vmalloc(): right after create_qp
 * returned ENOMEM the cgroup held up to 9.8 MB more than 20 ms later, and a
 * process that then created a small QP was OOM-killed in 17 of 300 runs.
 *
 * The buffer is whole pages, zeroed (a ring's last page is mapped to user
 * space whole). vmap()'s VM_MAP_PUT_PAGES hands the pages and their array
 * to the mapping: vfree() releases all of it, as for a vmalloc() buffer,
 * and vmalloc_to_page() finds the pages for mmap(). Unlike vmalloc memory,
 * the pages count in neither VmallocUsed nor memory.stat's vmalloc, only
 * as the cgroup's kernel memory, and KASAN has no redzone after a size
 * that is not whole pages.
 *
 * Context: process context, may sleep; a fatal signal stops the
 * allocation (ENOMEM).
 */

#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "ubuf.h"

#define VROCE_UBUF_GFP \
	(GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/* Pages [0, n) of @pages, or fewer on failure: returns how many. */
static unsigned long vroce_ubuf_get_pages(struct page **pages,
					  unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		if (fatal_signal_pending(current))
			break;
		pages[i] = alloc_page(VROCE_UBUF_GFP);
		if (!pages[i])
			break;
		cond_resched();
	}
	return i;
}

/**
 * vroce_ubuf_alloc - a charged, zeroed, virtually contiguous buffer
 * @size: bytes, rounded up to whole pages
 *
 * Return: the buffer, to be freed with vfree() (process context), or NULL
 * with nothing left allocated.
 */
void *vroce_ubuf_alloc(size_t size)
{
	unsigned long n, got;
	struct page **pages;
	void *buf;

	if (!size || size > (size_t)totalram_pages() << PAGE_SHIFT)
		return NULL;
	n = PAGE_ALIGN(size) >> PAGE_SHIFT;
	if (n > UINT_MAX)	/* vmap()'s count */
		return NULL;
	/* Not charged, as vmalloc()'s own page array. */
	pages = kvcalloc(n, sizeof(*pages),
			 GFP_KERNEL | __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
	if (!pages)
		return NULL;
	got = vroce_ubuf_get_pages(pages, n);
	if (got == n) {
		buf = vmap(pages, n, VM_MAP | VM_MAP_PUT_PAGES, PAGE_KERNEL);
		if (buf)
			return buf;
	}
	while (got)
		__free_page(pages[--got]);
	kvfree(pages);
	return NULL;
}
