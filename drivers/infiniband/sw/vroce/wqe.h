/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_WQE_H
#define _VROCE_WQE_H

#include <rdma/ib_verbs.h>
#include <uapi/rdma/rdma_user_rxe.h>

#include "queue.h"

struct vroce_qp;

/**
 * struct vroce_wq - a send or receive work queue (of a QP or an SRQ)
 * @queue: the ring of struct rxe_send_wqe or struct rxe_recv_wqe
 * @lock: serializes the kernel's side of @queue (irqsave; post verbs run
 *	in any context)
 * @max_wr: capacity of @queue, as reported to the consumer
 * @max_sge: scatter/gather entries per WQE, as reported
 * @max_inline: inline bytes per send WQE, as reported (0 for receive)
 */
struct vroce_wq {
	struct vroce_queue queue;
	spinlock_t lock; /* see qp.c, srq.c */
	u32 max_wr;
	u32 max_sge;
	u32 max_inline;
};

/* wqe.c APIs: */
size_t vroce_send_wqe_size(u32 *max_sge, u32 *max_inline);
size_t vroce_recv_wqe_size(u32 max_sge);
int vroce_recv_wqe_post(struct vroce_wq *wq, const struct ib_recv_wr *wr);
enum ib_wc_opcode vroce_wr_to_wc_opcode(u32 wr_opcode);
u64 vroce_recv_wqe_wr_id(const struct vroce_wq *wq, u32 index);
void vroce_send_wqe_head(const struct vroce_wq *wq, u32 index,
			 u64 *wr_id, u32 *opcode);
bool vroce_wr_has_sges(u32 opcode, u32 send_flags);
bool vroce_send_wqe_ok(const struct vroce_qp *qp, u32 opcode, u32 send_flags,
		       u32 num_sge, u32 length);
int vroce_send_wr_check(struct vroce_qp *qp, const struct ib_send_wr *wr,
			u32 *len);
void vroce_send_wqe_fill(struct vroce_qp *qp, struct rxe_send_wqe *wqe,
			 const struct ib_send_wr *wr, u32 len);

#endif /* _VROCE_WQE_H */
