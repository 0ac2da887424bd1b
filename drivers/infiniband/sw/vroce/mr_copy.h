/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_MR_COPY_H
#define _VROCE_MR_COPY_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <uapi/rdma/rdma_user_rxe.h>

struct page;
struct vroce_dev;
struct vroce_mr;

enum vroce_copy_dir {
	VROCE_COPY_TO_MR,	/* buffer -> MR memory (receive, RDMA write) */
	VROCE_COPY_FROM_MR,	/* MR memory -> buffer (send, RDMA read) */
};

enum vroce_atomic_op {
	VROCE_ATOMIC_CMP_SWP,
	VROCE_ATOMIC_FETCH_ADD,
	VROCE_ATOMIC_WRITE,	/* ATOMIC WRITE: store 8 bytes as one */
};

/**
 * struct vroce_sge_cursor - a position in a WQE's scatter/gather list
 * @vdev: the device whose keys the SGEs name
 * @pd: the PD of the QP the WQE belongs to
 * @sges: the list (it may live in a user-mapped queue: each SGE is read
 *	once, into @sge, when the cursor reaches it)
 * @num_sge: entries in @sges
 * @access: IB_ACCESS_* each lkey must grant
 * @idx: index in @sges of @sge
 * @sge: the current SGE; @sge.length is what is left of it
 * @mr: the MR of @sge, referenced, or NULL before its first byte
 */
struct vroce_sge_cursor {
	struct vroce_dev *vdev;
	struct ib_pd *pd;
	const struct rxe_sge *sges;
	u32 num_sge;
	int access;
	u32 idx;
	struct rxe_sge sge;
	struct vroce_mr *mr;
};

/* mr_copy.c APIs: */
bool vroce_mr_range_ok(struct vroce_mr *mr, u64 iova, u64 len);
int vroce_mr_copy(struct vroce_mr *mr, u64 iova, void *buf, u32 len,
		  enum vroce_copy_dir dir);
int vroce_mr_flush(struct vroce_mr *mr, u64 iova, u64 len, bool persistent);
int vroce_mr_atomic(struct vroce_mr *mr, u64 iova, enum vroce_atomic_op op,
		    u64 compare_add, u64 swap, u64 *orig);
void vroce_sge_cursor_init(struct vroce_sge_cursor *cur,
			   struct vroce_dev *vdev, struct ib_pd *pd,
			   const struct rxe_sge *sges, u32 num_sge,
			   int access);
int vroce_sge_copy(struct vroce_sge_cursor *cur, void *buf, u32 len,
		   enum vroce_copy_dir dir);
int vroce_mr_pages(struct vroce_mr *mr, u64 iova, u32 len, u32 max,
		   void (*fn)(void *arg, struct page *page, u32 off, u32 len),
		   void *arg);
int vroce_sge_pages(struct vroce_sge_cursor *cur, u32 len, u32 max,
		    void (*fn)(void *arg, struct page *page, u32 off,
			       u32 len),
		    void *arg);
void vroce_sge_cursor_done(struct vroce_sge_cursor *cur);

#ifdef VROCE_DEBUG
bool vroce_mr_selftest(void);
#else
static inline bool vroce_mr_selftest(void)
{
	return true;
}
#endif

#endif /* _VROCE_MR_COPY_H */
