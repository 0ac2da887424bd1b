/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_QP_H
#define _VROCE_QP_H

#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "cc.h"
#include "req.h"
#include "resp.h"
#include "wqe.h"

struct vroce_cq;
struct vroce_dev;
struct vroce_pkt_info;
struct vroce_run_list;
struct vroce_srq;

/*
 * IBTA: a Q_Key with the high bit set is a controlled (privileged) Q_Key.
 * Only privileged consumers may give one to a QP (modify_qp); in a send WR
 * it means "the sending QP's Q_Key".
 */
#define VROCE_QKEY_PRIVILEGED BIT(31)

/**
 * struct vroce_av - the primary path, as the transmit path will use it
 * @ah: the address vector given to modify_qp (RoCE: dmac resolved by
 *	ib_core); ah.grh.sgid_attr is NULL, @sgid_attr holds the reference
 * @sgid_attr: the source GID entry (its netdev and RoCE type), held
 */
struct vroce_av {
	struct rdma_ah_attr ah;
	const struct ib_gid_attr *sgid_attr;
};

/**
 * struct vroce_qp_ref - what a lookup by QPN finds (vroce_dev.qps): a QP's
 *	lookup references, in memory that outlives the QP by an RCU grace
 *	period (see the lifetime rule in qp.c)
 * @count: the references; the creator holds one
 * @qp: the QP, valid while @count is not zero
 * @rcu: frees this once the QP is gone
 */
struct vroce_qp_ref {
	refcount_t count;
	struct vroce_qp *qp;
	struct rcu_head rcu;
};

/**
 * struct vroce_qp - a queue pair
 * @ibqp: the ib_core QP; ib_core allocates it and kfree()s it as soon as
 *	destroy_qp returns (see the lifetime rule in qp.c)
 * @ref: the lookup references (vroce_qp_get()); the creator holds one
 * @released: completed when @ref's count drops to zero
 * @state_lock: protects @state, @sq_draining, @attr and @av (irqsave)
 * @state: the QP state; READ_ONCE() where read without @state_lock
 * @sq_draining: RTS->SQD entered and send WQEs still in flight
 * @attr: the attributes last set by modify_qp (and the caps)
 * @av: the primary address vector (RC, UC)
 * @sq: the send queue
 * @rq: the receive queue, unused when @srq is set
 * @rq_flushing: entering ERR flushed @rq: a later post flushes its own
 *	receive WQEs (set and cleared under rq.lock; qp_state.c)
 * @srq: the shared receive queue, or NULL
 * @scq: the send CQ
 * @rcq: the receive CQ
 * @sig_all: every send WQE completes (IB_SIGNAL_ALL_WR)
 * @is_user: the QP belongs to a user context (rings shared with it)
 * @dying: destroy_qp started; the task does nothing more (READ_ONCE)
 * @cq_lost: a completion of the transport did not fit its CQ; set and
 *	cleared under @task_mutex, and false whenever it is released
 *	(vroce_qp_complete(), qp_state.c)
 * @task: runs the transport (task.c); owns a reference while queued
 * @task_mutex: held by the task while it runs and by modify_qp
 * @req_mutex: guards req.lent, and a doorbell's solo run of the requester
 *	while the task lends it (req.c)
 * @rxq: received packets waiting for the task; appended by the receive
 *	path, removed by the task only, both under rxq.lock (rxq.c)
 * @rxq_bytes: the skb->truesize of the packets in @rxq (rxq.lock)
 * @task_flags: VROCE_TASK_AGAIN: run the task again once task_mutex is
 *	released (task.c)
 * @run: while the task runs, the run list of the context running it (the
 *	receivers of its loopback packets go there; the requester's owner)
 * @tx_skb: the skb the task's loopback frames reuse, or NULL
 *	(tx.c; the requester's owner)
 * @req: requester and completer state, owned by the task
 * @resp: responder state, owned by the task
 * @cc: congestion control (NP, RP, pacer), owned by the task (cc_rp.c)
 * @mcast: the QP's multicast attachments (mcast.c, vroce_mcast.lock)
 */
struct vroce_qp {
	struct ib_qp ibqp;
	struct vroce_qp_ref *ref;
	struct completion released;
	spinlock_t state_lock; /* see qp.c */
	enum ib_qp_state state;
	bool sq_draining;
	struct ib_qp_attr attr;
	struct vroce_av av;
	struct vroce_wq sq;
	struct vroce_wq rq;
	bool rq_flushing;
	struct vroce_srq *srq;
	struct vroce_cq *scq;
	struct vroce_cq *rcq;
	bool sig_all;
	bool is_user;
	bool dying;
	bool cq_lost;
	struct work_struct task;
	struct mutex task_mutex; /* see task.c */
	struct mutex req_mutex; /* see req.c */
	unsigned long task_flags;
	struct sk_buff_head rxq;
	unsigned int rxq_bytes;
	struct vroce_run_list *run;
	struct sk_buff *tx_skb;
	struct vroce_req req;
	struct vroce_resp resp;
	struct vroce_qp_cc cc;
	struct list_head mcast;
};

static inline struct vroce_qp *to_vqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct vroce_qp, ibqp);
}

/*
 * The requester's owner: the QP's task (task_mutex), or a doorbell's solo
 * run that borrowed it (req_mutex, req.lent; the table at the top of req.c).
 */
static inline void vroce_req_assert_owner(struct vroce_qp *qp)
{
	lockdep_assert(lockdep_is_held(&qp->task_mutex) ||
		       lockdep_is_held(&qp->req_mutex));
}

/* qp.c APIs: */
int vroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int vroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int vroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
struct vroce_qp *vroce_qp_get(struct vroce_dev *vdev, u32 qpn);
struct vroce_qp *vroce_qp_tryget(struct vroce_qp_ref *ref);
void vroce_qp_put(struct vroce_qp *qp);
void vroce_qp_event(struct vroce_qp *qp, enum ib_event_type type);

/* qp_state.c APIs: */
int vroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
void vroce_qp_error(struct vroce_qp *qp);
void vroce_qp_complete(struct vroce_qp *qp, struct vroce_cq *cq,
		       const struct ib_wc *wc, bool solicited);
void vroce_qp_check_cq_lost(struct vroce_qp *qp);
void vroce_qp_flush_sq(struct vroce_qp *qp);
void vroce_qp_flush_rq(struct vroce_qp *qp, bool start);
void vroce_qp_release_av(struct vroce_qp *qp);
void vroce_qp_sq_drained(struct vroce_qp *qp);

/* qp_xport.c APIs: */
int vroce_xport_qp_init(struct vroce_qp *qp);
void vroce_xport_qp_stop(struct vroce_qp *qp);
void vroce_xport_qp_free(struct vroce_qp *qp);
void vroce_xport_reset(struct vroce_qp *qp);
void vroce_xport_modify(struct vroce_qp *qp, const struct ib_qp_attr *attr,
			int mask);
void vroce_xport_pkt_init(struct vroce_qp *qp, struct vroce_pkt_info *pi,
			  u8 opcode, u32 psn);

/* qp_post.c APIs: */
int vroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int vroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int vroce_sq_peek(struct vroce_qp *qp, u32 slot, struct rxe_send_wqe *wqe);

/* The send queue slot after @slot. */
static inline u32 vroce_sq_next(const struct vroce_qp *qp, u32 slot)
{
	return (slot + 1) & qp->sq.queue.index_mask;
}

#endif /* _VROCE_QP_H */
