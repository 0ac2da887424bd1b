// SPDX-License-Identifier: GPL-2.0
/*
 * Rings shared with user space in the rdma_user_rxe.h layout:
 * a struct rxe_queue_buf header, then a power-of-two number of slots of a
 * power-of-two size. Indices are in [0, index_mask]; a ring holds at most
 * index_mask elements because one slot stays empty to tell full from empty.
 *
 * Ownership: the SQ, RQ and SRQ rings of user objects are produced by the
 * rxe provider in user space and consumed by the kernel; the CQ rings of
 * user objects are produced by the kernel and consumed by user space.
 * Kernel objects (kernel ULPs) use the same layout in kernel memory.
 *
 * Trust: user space can write anything into a shared page at any time. The
 * kernel keeps its own copy of the index it owns (vroce_queue.prod or
 * .cons) and only writes it out; the index it reads from the page is masked
 * on every read (vroce_queue_sync(), vroce_queue_published_prod()), so it
 * only ever says how many elements to look at, never where kernel memory
 * is, and the kernel never touches more than index_mask elements of a
 * ring. What a garbage index can still do, and what keeps that sane:
 * - a producer index (SQ, RQ, SRQ) that jumps ahead makes the kernel read
 *   slots user space never wrote: stale or zeroed elements, validated as
 *   any other (below); one that moves back makes posted WQEs disappear,
 *   and the requester reads nothing past it (vroce_sq_peek()). Either way
 *   only the user's own work requests suffer.
 * - a CQ consumer index that runs past the producer index (claims more
 *   completions consumed than were produced) would let the kernel
 *   overwrite completions user space has not read: vroce_queue_sync()
 *   refuses it (-EPROTO) and the CQ fails as on an overflow (cq.c). One
 *   that moves back only makes the CQ look fuller.
 * Element contents read from a user ring are copied once and validated by
 * the object code before use: send WQEs by vroce_sq_peek() (qp_post.c),
 * receive WQEs by vroce_resp_get_rwqe() (resp.c: num_sge clamped to
 * max_sge; dma.length is not used, the SGEs' lengths are).
 *
 * Memory: a user ring comes from vroce_ubuf_alloc() (ubuf.c): charged to
 * the creating task's memory cgroup, ENOMEM over its limit, and zeroed, so
 * the tail of the last page that user space maps holds nothing of the
 * kernel's.
 *
 * Lifetime of a user ring: the buffer belongs to its
 * rdma_user_mmap_entry. Destroying the object removes the entry; ib_core
 * calls vroce_mmap_free() once no mmap() call holds the entry any more, and
 * that frees the buffer. Pages already mapped into a process hold their own
 * page references (vroce_mmap() inserts them with vm_insert_page()), so a
 * process that keeps a stale mapping only keeps memory the kernel no
 * longer looks at. ib_core cannot zap such mappings on disassociation
 * (zap_vma_ptes() only handles PFN maps); that is harmless for the same
 * reason.
 *
 * Locking: a ring has no lock of its own; the owning object's lock
 * serializes the kernel's side (see cq.c, qp.c, srq.c).
 */

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "compat.h"
#include "queue.h"
#include "ubuf.h"
#include "ucontext.h"

/**
 * struct vroce_mmap_entry - an mmap()able user ring
 * @rentry: ib_core's entry; its last reference frees the ring
 * @buf: the buffer, from vroce_ubuf_alloc()
 */
struct vroce_mmap_entry {
	struct rdma_user_mmap_entry rentry;
	void *buf;
};

static struct vroce_mmap_entry *to_mentry(struct rdma_user_mmap_entry *e)
{
	return container_of(e, struct vroce_mmap_entry, rentry);
}

static int vroce_queue_publish(struct vroce_queue *q, struct ib_udata *udata,
			       struct mminfo *mi)
{
	struct vroce_ucontext *uctx;
	struct vroce_mmap_entry *me;
	int err;

	uctx = rdma_udata_to_drv_context(udata, struct vroce_ucontext, ibuc);
	me = kzalloc(sizeof(*me), GFP_KERNEL);
	if (!me)
		return -ENOMEM;
	me->buf = q->buf;
	err = rdma_user_mmap_entry_insert(&uctx->ibuc, &me->rentry,
					  q->buf_size);
	if (err) {
		kfree(me);
		return err;
	}
	q->mentry = me;
	mi->offset = rdma_user_mmap_get_offset(&me->rentry);
	mi->size = q->buf_size;
	return 0;
}

/**
 * vroce_queue_init - allocate an empty ring
 * @q: the ring to set up
 * @udata: the user object's udata, or NULL for a kernel object
 * @type: who produces and consumes
 * @num_elem: in: elements wanted (>= 1); out: the ring's capacity
 * @elem_size: bytes per element, rounded up to a power of two
 * @mi: filled with the mmap offset and size of a user ring
 *
 * Context: process context.
 * Return: 0 or a negative errno; nothing is left allocated on failure.
 */
int vroce_queue_init(struct vroce_queue *q, struct ib_udata *udata,
		     enum vroce_queue_type type, u32 *num_elem,
		     size_t elem_size, struct mminfo *mi)
{
	u32 slots = roundup_pow_of_two(max_t(u32, *num_elem, 1) + 1);
	size_t esize = roundup_pow_of_two(elem_size);
	int err;

	memset(q, 0, sizeof(*q));
	q->type = type;
	q->index_mask = slots - 1;
	q->log2_elem_size = ilog2(esize);
	q->buf_size = size_add(sizeof(*q->buf), size_mul(slots, esize));
	if (q->buf_size == SIZE_MAX)
		return -EINVAL;

	q->buf = udata ? vroce_ubuf_alloc(q->buf_size) :
			 vzalloc(q->buf_size);
	if (!q->buf)
		return -ENOMEM;
	q->buf->log2_elem_size = q->log2_elem_size;
	q->buf->index_mask = q->index_mask;

	if (udata) {
		err = vroce_queue_publish(q, udata, mi);
		if (err) {
			vfree(q->buf);
			q->buf = NULL;
			return err;
		}
	}
	*num_elem = q->index_mask;
	return 0;
}

/**
 * vroce_queue_cleanup - release a ring
 * @q: the ring; may be one that vroce_queue_init() never set up (zeroed)
 *
 * A user ring is only unpublished here; its buffer goes with the last
 * reference to the mmap entry (vroce_mmap_free()).
 */
void vroce_queue_cleanup(struct vroce_queue *q)
{
	if (q->mentry)
		rdma_user_mmap_entry_remove(&q->mentry->rentry);
	else
		vfree(q->buf);
	q->mentry = NULL;
	q->buf = NULL;
}

/**
 * vroce_queue_sync - read the index user space owns, masked
 * @q: the ring
 *
 * The acquire pairs with the provider's release store: the element
 * contents it wrote before moving the index are visible afterwards.
 *
 * Return: 0, or -EPROTO if user space moved the consumer index of a ring
 * the kernel produces past the producer index; the kernel's copy keeps
 * the last consistent value then.
 */
int vroce_queue_sync(struct vroce_queue *q)
{
	u32 cons;

	switch (q->type) {
	case VROCE_QUEUE_FROM_USER:
		q->prod = vroce_queue_published_prod(q);
		break;
	case VROCE_QUEUE_TO_USER:
		/* Pairs with the provider's release of consumer_index. */
		cons = smp_load_acquire(&q->buf->consumer_index) &
		       q->index_mask;
		if (((cons - q->cons) & q->index_mask) > vroce_queue_count(q))
			return -EPROTO;
		q->cons = cons;
		break;
	case VROCE_QUEUE_KERNEL:
		break;
	}
	return 0;
}

/**
 * vroce_queue_discard - drop every element without completing it
 * @q: a ring the kernel consumes (QP reset)
 */
void vroce_queue_discard(struct vroce_queue *q)
{
	vroce_queue_sync(q);
	q->cons = q->prod;
	/* Pairs with the provider's acquire of consumer_index. */
	smp_store_release(&q->buf->consumer_index, q->cons);
}

/**
 * vroce_queue_resize - move the live elements of @q into @newq
 * @q: the ring in use; on success it takes over @newq's buffer
 * @newq: an empty ring from vroce_queue_init(); on success it holds the old
 *	buffer, for the caller to vroce_queue_cleanup() outside its lock
 * @want: the size the consumer asked for; more elements than that present
 *	fail the resize even if the rounded-up ring would hold them
 *
 * Context: the owner's lock held, so that the kernel's side is quiet; user
 * space is told to hold its own lock around the resize call.
 * Return: 0, or -EINVAL if the elements present do not fit or user space
 * left an impossible consumer index.
 */
int vroce_queue_resize(struct vroce_queue *q, struct vroce_queue *newq,
		       u32 want)
{
	size_t esize = vroce_queue_elem_size(q);
	u32 n, i;

	if (vroce_queue_sync(q))
		return -EINVAL;
	n = vroce_queue_count(q);
	if (n > want || n > vroce_queue_capacity(newq) ||
	    newq->log2_elem_size != q->log2_elem_size)
		return -EINVAL;

	for (i = 0; i < n; i++)
		memcpy(vroce_queue_elem(newq, i),
		       vroce_queue_elem(q, q->cons + i), esize);
	newq->prod = n;
	newq->cons = 0;
	newq->buf->producer_index = n;
	newq->buf->consumer_index = 0;
	swap(*q, *newq);
	return 0;
}

/*
 * Map the ring's pages; ib_core checked that the VMA is shared and exactly
 * as long as the ring, rounded up to whole pages.
 */
static int vroce_mmap_ring(struct vm_area_struct *vma, void *buf)
{
	unsigned long off, len = vma->vm_end - vma->vm_start;
	int err;

	vroce_compat_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	for (off = 0; off < len; off += PAGE_SIZE) {
		err = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page(buf + off));
		if (err)
			return err;
	}
	return 0;
}

int vroce_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rentry;
	int err;

	rentry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!rentry)
		return -EINVAL;
	err = vroce_mmap_ring(vma, to_mentry(rentry)->buf);
	rdma_user_mmap_entry_put(rentry);
	return err;
}

void vroce_mmap_free(struct rdma_user_mmap_entry *rentry)
{
	struct vroce_mmap_entry *me = to_mentry(rentry);

	vfree(me->buf);
	kfree(me);
}
