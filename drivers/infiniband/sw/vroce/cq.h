/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_CQ_H
#define _VROCE_CQ_H

#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include "compat.h"
#include "queue.h"

/**
 * struct vroce_cq - a completion queue
 * @ibcq: the ib_core CQ; ib_core allocates and frees the container
 * @lock: protects @queue's kernel side, @notify and @overflowed
 * @queue: the ring of completions (struct ib_uverbs_wc for user CQs, the
 *	layout the rxe provider reads; struct ib_wc for kernel CQs)
 * @notify: armed notification, 0 or IB_CQ_SOLICITED or IB_CQ_NEXT_COMP
 * @overflowed: the CQ is in error until destroyed: a completion did not
 *	fit, IB_EVENT_CQ_ERR was raised, every later completion is dropped and
 *	resize fails
 * @is_user: the CQ belongs to a user context
 */
struct vroce_cq {
	struct ib_cq ibcq;
	spinlock_t lock; /* see cq.c */
	struct vroce_queue queue;
	u8 notify;
	bool overflowed;
	bool is_user;
};

static inline struct vroce_cq *to_vcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct vroce_cq, ibcq);
}

/* cq.c APIs: */
int vroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct vroce_compat_create_cq_arg *arg);
int vroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int vroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int vroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int vroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int vroce_cq_post(struct vroce_cq *cq, const struct ib_wc *wc,
		  bool solicited);

#endif /* _VROCE_CQ_H */
