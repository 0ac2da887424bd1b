/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_QUEUE_H
#define _VROCE_QUEUE_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <uapi/rdma/rdma_user_rxe.h>

/**
 * enum vroce_queue_type - who produces and who consumes a ring
 * @VROCE_QUEUE_KERNEL: a kernel object's ring; both indices are the kernel's
 * @VROCE_QUEUE_FROM_USER: user space produces (SQ, RQ, SRQ of a user
 *	object); the kernel owns the consumer index
 * @VROCE_QUEUE_TO_USER: the kernel produces (CQ of a user object); user
 *	space owns the consumer index
 */
enum vroce_queue_type {
	VROCE_QUEUE_KERNEL,
	VROCE_QUEUE_FROM_USER,
	VROCE_QUEUE_TO_USER,
};

struct vroce_mmap_entry;

/**
 * struct vroce_queue - a ring in the rdma_user_rxe.h layout
 * @buf: header (struct rxe_queue_buf) followed by the elements
 * @buf_size: bytes of @buf that user space maps (mminfo.size)
 * @mentry: the mmap entry of a user ring, which owns @buf; NULL for kernel
 * @type: who owns which index
 * @index_mask: number of slots - 1; one slot always stays empty
 * @log2_elem_size: log2 of the element size
 * @prod: producer index, masked; the kernel's own copy
 * @cons: consumer index, masked; the kernel's own copy
 *
 * The kernel never trusts an index it reads from the shared page: every
 * read is masked into [0, index_mask] and then only decides how many
 * elements to look at, never where kernel memory is. The index the kernel
 * owns lives in @prod or @cons and is only copied out to the page.
 */
struct vroce_queue {
	struct rxe_queue_buf *buf;
	size_t buf_size;
	struct vroce_mmap_entry *mentry;
	enum vroce_queue_type type;
	u32 index_mask;
	u32 log2_elem_size;
	u32 prod;
	u32 cons;
};

/* queue.c APIs: */
int vroce_queue_init(struct vroce_queue *q, struct ib_udata *udata,
		     enum vroce_queue_type type, u32 *num_elem,
		     size_t elem_size, struct mminfo *mi);
void vroce_queue_cleanup(struct vroce_queue *q);
int vroce_queue_resize(struct vroce_queue *q, struct vroce_queue *newq,
		       u32 want);
int vroce_queue_sync(struct vroce_queue *q);
void vroce_queue_discard(struct vroce_queue *q);
int vroce_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void vroce_mmap_free(struct rdma_user_mmap_entry *rentry);

static inline u32 vroce_queue_capacity(const struct vroce_queue *q)
{
	return q->index_mask;
}

static inline u32 vroce_queue_count(const struct vroce_queue *q)
{
	return (q->prod - q->cons) & q->index_mask;
}

static inline bool vroce_queue_empty(const struct vroce_queue *q)
{
	return q->prod == q->cons;
}

static inline bool vroce_queue_full(const struct vroce_queue *q)
{
	return vroce_queue_count(q) == q->index_mask;
}

static inline void *vroce_queue_elem(const struct vroce_queue *q, u32 index)
{
	return q->buf->data + ((size_t)(index & q->index_mask) <<
			       q->log2_elem_size);
}

static inline size_t vroce_queue_elem_size(const struct vroce_queue *q)
{
	return (size_t)1 << q->log2_elem_size;
}

static inline void *vroce_queue_producer_addr(const struct vroce_queue *q)
{
	return vroce_queue_elem(q, q->prod);
}

static inline void *vroce_queue_consumer_addr(const struct vroce_queue *q)
{
	return vroce_queue_elem(q, q->cons);
}

/*
 * The producer index as published in the page, masked: for a consumer
 * that does not hold the ring's lock. The acquire pairs with the
 * producer's release (user space's, or vroce_queue_advance_producer()).
 */
static inline u32 vroce_queue_published_prod(const struct vroce_queue *q)
{
	/* Pairs with the producer's release of producer_index. */
	return smp_load_acquire(&q->buf->producer_index) & q->index_mask;
}

/* Publish a produced element: its contents become visible before the index. */
static inline void vroce_queue_advance_producer(struct vroce_queue *q)
{
	q->prod = (q->prod + 1) & q->index_mask;
	/* Pairs with the consumer's acquire of producer_index. */
	smp_store_release(&q->buf->producer_index, q->prod);
}

/* Release a consumed slot: reads of it complete before the index moves. */
static inline void vroce_queue_advance_consumer(struct vroce_queue *q)
{
	q->cons = (q->cons + 1) & q->index_mask;
	/* Pairs with the producer's acquire of consumer_index. */
	smp_store_release(&q->buf->consumer_index, q->cons);
}

#endif /* _VROCE_QUEUE_H */
