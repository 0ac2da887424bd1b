/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rings a user QP or CQ shares with the kernel, as this process maps
 * them: the rxe provider writes WQEs into them (rdma_user_rxe.h layout), so
 * a test can find a WQE it posted and rewrite it, as any process may.
 * Include after vroce_test.h (<netinet/in.h> first: libc-compat.h then
 * skips the uapi's copies of its types).
 */
#ifndef _VROCE_RING_H
#define _VROCE_RING_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <rdma/rdma_user_rxe.h>

/*
 * The element of a ring mapped from a uverbs device whose first 8 bytes
 * (a send WQE's, a receive WQE's or a completion's wr_id) are @wr_id, in
 * a ring of elements of [@min_esize, @max_esize] bytes; NULL if none.
 * @ring gets the ring's header. The mappings of /dev/infiniband/uverbs*
 * in /proc/self/maps are searched at element boundaries.
 */
static inline void *vroce_ring_find(uint64_t wr_id, size_t min_esize,
				    size_t max_esize,
				    struct rxe_queue_buf **ring)
{
	unsigned long start, end;
	char line[512];
	void *found = NULL;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && !found && fgets(line, sizeof(line), f)) {
		struct rxe_queue_buf *q;
		size_t esize, i, n;

		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx", &start, &end) != 2 ||
		    end - start < sizeof(*q) || !strstr(line, "rw"))
			continue;
		q = (struct rxe_queue_buf *)start;
		if (q->log2_elem_size < 4 || q->log2_elem_size > 16)
			continue;
		esize = (size_t)1 << q->log2_elem_size;
		n = (size_t)q->index_mask + 1;
		if (n & (n - 1) || esize < min_esize || esize > max_esize ||
		    sizeof(*q) + n * esize > end - start)
			continue;
		for (i = 0; i < n && !found; i++) {
			uint64_t *e = (uint64_t *)(q->data + i * esize);

			if (*e == wr_id) {
				found = e;
				*ring = q;
			}
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* The send WQE of @wr_id in this process's mapping of an SQ. */
static inline struct rxe_send_wqe *vroce_sq_find(uint64_t wr_id,
						 size_t *esize,
						 struct rxe_queue_buf **ring)
{
	void *e = vroce_ring_find(wr_id, sizeof(struct rxe_send_wqe),
				  SIZE_MAX, ring);

	if (e)
		*esize = (size_t)1 << (*ring)->log2_elem_size;
	return e;
}

#endif /* _VROCE_RING_H */
