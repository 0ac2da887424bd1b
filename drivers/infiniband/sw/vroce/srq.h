/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_SRQ_H
#define _VROCE_SRQ_H

#include <rdma/ib_verbs.h>

#include "wqe.h"

/**
 * struct vroce_srq - a shared receive queue
 * @ibsrq: the ib_core SRQ; ib_core allocates and frees the container
 * @rq: the receive ring; rq.lock also protects @limit
 * @limit: IB_EVENT_SRQ_LIMIT_REACHED fires when the receives left drop
 *	below it; 0 when not armed (the event disarms it)
 * @srq_num: the number reported in rxe_create_srq_resp
 * @is_user: the SRQ belongs to a user context
 */
struct vroce_srq {
	struct ib_srq ibsrq;
	struct vroce_wq rq;
	u32 limit;
	u32 srq_num;
	bool is_user;
};

static inline struct vroce_srq *to_vsrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct vroce_srq, ibsrq);
}

/* srq.c APIs: */
int vroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int vroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int vroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int vroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int vroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);

#endif /* _VROCE_SRQ_H */
