// SPDX-License-Identifier: GPL-2.0
/*
 * The QP state machine (IBTA vol. 1 chapter 10, as ib_core's
 * qp_state_table encodes it).
 *
 * modify_qp validates everything before it changes anything: ib_core's
 * ib_modify_qp_is_ok() decides whether the transition and the attribute
 * mask are legal for the QP type, vroce_qp_check_attr() checks the values.
 * The transition and the attributes are then applied together under
 * vroce_qp.state_lock; an invalid request returns -EINVAL (-EPERM: a
 * controlled Q_Key on a user QP from an unprivileged caller) and leaves the
 * QP as it was. The side effects of a transition (flushes, events) run after
 * the lock is dropped:
 * - entering ERR completes every outstanding send and receive WQE with
 *   IB_WC_WR_FLUSH_ERR, in order, on the QP's send and receive CQ; a QP on
 *   an SRQ gets IB_EVENT_QP_LAST_WQE_REACHED instead of a receive flush;
 *   the receive WQE the responder holds completes before the queue's, and
 *   a post in ERR flushes only once these flushes ran (rq_flushing);
 * - entering RESET drops the queued WQEs without completions;
 * - RTS->SQD sets sq_draining; the requester starts no new WQE, and once
 *   every WQE it started has completed, sq_draining is cleared and
 *   IB_EVENT_SQ_DRAINED raised if en_sqd_async_notify asked for it;
 * - entering RTS (again) kicks the task for the WQEs posted meanwhile.
 *
 * A completion of the transport that its CQ cannot take fails the QP as an
 * affiliated asynchronous error: ERR, flushes, IB_EVENT_QP_FATAL
 * (vroce_qp_complete()).
 *
 * Locking: see qp.c. modify_qp also holds vroce_qp.task_mutex, so the
 * transport (task.c) sees a transition whole, between two of its runs;
 * vroce_qp_error() is called with it held too (by the task itself).
 */

#include "compat.h"
#include "cq.h"
#include "debugfs.h"
#include "device.h"
#include "port.h"
#include "qp.h"
#include "query.h"
#include "srq.h"
#include "task.h"
#include "timers.h"

/*
 * The RDMA FLUSH placement types a peer may ask for: kernels 6.2+.
 * IB_ACCESS_ON_DEMAND means nothing for a QP (the MRs say it) but is
 * accepted, as rdma_rxe and mlx5 accept it: rdma-core's ODP tests give
 * their QPs the access flags of their MRs.
 */
#define VROCE_QP_ACCESS_FLAGS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			       IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			       VROCE_COMPAT_ACCESS_FLUSH | IB_ACCESS_ON_DEMAND)

static int vroce_qp_check_av(const struct rdma_ah_attr *ah)
{
	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH) ||
	    rdma_ah_get_port_num(ah) != 1 || !ah->grh.sgid_attr ||
	    ah->grh.sgid_index >= VROCE_GID_TABLE_LEN)
		return -EINVAL;
	return 0;
}

static int vroce_qp_check_paths(const struct ib_qp_attr *attr, int mask)
{
	/* No alternate path: automatic path migration is not implemented. */
	if (mask & IB_QP_ALT_PATH)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MIG_STATE) &&
	    attr->path_mig_state != IB_MIG_MIGRATED)
		return -EINVAL;
	if ((mask & IB_QP_AV) && vroce_qp_check_av(&attr->ah_attr))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	return 0;
}

static int vroce_qp_check_attr(const struct ib_device_attr *dattr,
			       const struct ib_qp_attr *attr, int mask)
{
	if (((mask & IB_QP_PORT) && attr->port_num != 1) ||
	    ((mask & IB_QP_PKEY_INDEX) &&
	     attr->pkey_index >= VROCE_PKEY_TABLE_LEN) ||
	    ((mask & IB_QP_ACCESS_FLAGS) &&
	     (attr->qp_access_flags & ~VROCE_QP_ACCESS_FLAGS)) ||
	    ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > 0xffffff) ||
	    ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	     attr->max_rd_atomic > dattr->max_qp_init_rd_atom) ||
	    ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	     attr->max_dest_rd_atomic > dattr->max_qp_rd_atom) ||
	    ((mask & IB_QP_TIMEOUT) && attr->timeout > 31) ||
	    ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7) ||
	    ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7) ||
	    ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31))
		return -EINVAL;
	return vroce_qp_check_paths(attr, mask);
}

/*
 * A user QP gets a controlled Q_Key only from a privileged caller (the
 * IBTA Q_Key rules); modify_qp runs in the caller's context. Kernel QPs
 * (the GSI QP, kernel ULPs) may set any. uverbs checks the same before
 * calling us in every supported kernel; the driver does not rely on it.
 */
static int vroce_qp_check_qkey(const struct vroce_qp *qp,
			       const struct ib_qp_attr *attr, int mask)
{
	if (!(mask & IB_QP_QKEY) || !(attr->qkey & VROCE_QKEY_PRIVILEGED) ||
	    !qp->is_user || vroce_compat_privileged_qkey(qp->ibqp.device))
		return 0;
	return -EPERM;
}

/* Copy the attributes in @mask; the AV is handled by the caller. */
static void vroce_qp_store_attr(struct ib_qp_attr *cur,
				const struct ib_qp_attr *attr, int mask)
{
	if (mask & IB_QP_PORT)
		cur->port_num = attr->port_num;
	if (mask & IB_QP_PKEY_INDEX)
		cur->pkey_index = attr->pkey_index;
	if (mask & IB_QP_QKEY)
		cur->qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		cur->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PATH_MTU)
		cur->path_mtu = attr->path_mtu;
	if (mask & IB_QP_DEST_QPN)
		cur->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_RQ_PSN)
		cur->rq_psn = attr->rq_psn & 0xffffff;
	if (mask & IB_QP_SQ_PSN)
		cur->sq_psn = attr->sq_psn & 0xffffff;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		cur->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		cur->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_TIMEOUT)
		cur->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		cur->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		cur->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		cur->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_PATH_MIG_STATE)
		cur->path_mig_state = attr->path_mig_state;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		cur->en_sqd_async_notify = attr->en_sqd_async_notify;
}

/* Under state_lock: check the transition, then apply it and @attr. */
static int vroce_qp_transition(struct vroce_qp *qp,
			       const struct ib_qp_attr *attr, int mask,
			       struct vroce_av *av, enum ib_qp_state *cur,
			       enum ib_qp_state *nextp)
{
	enum ib_qp_state next;

	lockdep_assert_held(&qp->state_lock);

	*cur = qp->state;
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != *cur)
		return -EINVAL;
	next = (mask & IB_QP_STATE) ? attr->qp_state : *cur;
	if (!ib_modify_qp_is_ok(*cur, next, qp->ibqp.qp_type, mask))
		return -EINVAL;
	/* Before the drain finished, SQD may only go to ERR, RESET or SQD. */
	if (qp->sq_draining && next != IB_QPS_ERR && next != IB_QPS_RESET &&
	    next != IB_QPS_SQD)
		return -EINVAL;

	vroce_qp_store_attr(&qp->attr, attr, mask);
	if (mask & IB_QP_AV)
		swap(qp->av, *av);
	if (next == IB_QPS_ERR || next == IB_QPS_RESET)
		qp->sq_draining = false;
	else if (*cur == IB_QPS_RTS && next == IB_QPS_SQD)
		qp->sq_draining = true;
	WRITE_ONCE(qp->state, next);
	*nextp = next;
	return 0;
}

void vroce_qp_flush_sq(struct vroce_qp *qp)
{
	struct vroce_queue *q = &qp->sq.queue;
	struct ib_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.qp = &qp->ibqp,
	};
	unsigned long flags;
	u32 opcode;

	spin_lock_irqsave(&qp->sq.lock, flags);
	vroce_queue_sync(q);
	while (!vroce_queue_empty(q)) {
		vroce_send_wqe_head(&qp->sq, q->cons, &wc.wr_id, &opcode);
		wc.opcode = vroce_wr_to_wc_opcode(opcode);
		vroce_queue_advance_consumer(q);
		vroce_cq_post(qp->scq, &wc, false);
	}
	spin_unlock_irqrestore(&qp->sq.lock, flags);
}

/**
 * vroce_qp_flush_rq - complete the queued receive WQEs as flushed
 * @qp: the QP, in ERR
 * @start: entering ERR (task_mutex held), after the responder completed
 *	the receive WQE it had taken (vroce_resp_flush()): flush, and from
 *	now on let posts flush. Otherwise (a post in ERR): flush only once
 *	that has happened, so no flush overtakes the receive in progress;
 *	before it, the WQEs posted stay queued for the flush that starts.
 */
void vroce_qp_flush_rq(struct vroce_qp *qp, bool start)
{
	struct vroce_queue *q = &qp->rq.queue;
	struct ib_wc wc = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp = &qp->ibqp,
	};
	unsigned long flags;

	if (qp->srq)
		return;
	spin_lock_irqsave(&qp->rq.lock, flags);
	if (start)
		qp->rq_flushing = true;
	vroce_queue_sync(q);
	while (qp->rq_flushing && !vroce_queue_empty(q)) {
		wc.wr_id = vroce_recv_wqe_wr_id(&qp->rq, q->cons);
		vroce_queue_advance_consumer(q);
		vroce_cq_post(qp->rcq, &wc, false);
	}
	spin_unlock_irqrestore(&qp->rq.lock, flags);
}

/*
 * The debugfs knob err_delay_us: entering ERR, wait this long between the
 * state change and the flushes, so that a test can post into the window.
 */
static void vroce_qp_err_delay(struct vroce_qp *qp)
{
	vroce_debug_delay(READ_ONCE(to_vdev(qp->ibqp.device)->err_delay_us));
}

static void vroce_qp_entered_error(struct vroce_qp *qp)
{
	lockdep_assert_held(&qp->task_mutex);

	vroce_qp_err_delay(qp);
	vroce_timers_cancel(qp);
	vroce_resp_flush(qp);
	vroce_req_flush(qp);
	vroce_qp_flush_sq(qp);
	vroce_qp_flush_rq(qp, true);
	if (qp->srq)
		vroce_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

static void vroce_qp_reset_queues(struct vroce_qp *qp)
{
	unsigned long flags;

	spin_lock_irqsave(&qp->sq.lock, flags);
	vroce_queue_discard(&qp->sq.queue);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	vroce_xport_reset(qp);
	if (qp->srq)
		return;
	spin_lock_irqsave(&qp->rq.lock, flags);
	vroce_queue_discard(&qp->rq.queue);
	qp->rq_flushing = false;
	spin_unlock_irqrestore(&qp->rq.lock, flags);
}

/**
 * vroce_qp_sq_drained - the SQ drain of RTS->SQD is over
 * @qp: the QP; no WQE it started is outstanding (called by the requester)
 */
void vroce_qp_sq_drained(struct vroce_qp *qp)
{
	unsigned long flags;
	bool notify = false;

	spin_lock_irqsave(&qp->state_lock, flags);
	if (qp->state == IB_QPS_SQD && qp->sq_draining) {
		qp->sq_draining = false;
		notify = qp->attr.en_sqd_async_notify;
	}
	spin_unlock_irqrestore(&qp->state_lock, flags);
	if (notify)
		vroce_qp_event(qp, IB_EVENT_SQ_DRAINED);
}

static void vroce_qp_after_transition(struct vroce_qp *qp,
				      enum ib_qp_state cur,
				      enum ib_qp_state next)
{
	if (next == IB_QPS_ERR)
		vroce_qp_entered_error(qp);
	else if (next == IB_QPS_RESET && cur != IB_QPS_RESET)
		vroce_qp_reset_queues(qp);
	else if (cur == IB_QPS_RTS && next == IB_QPS_SQD)
		vroce_req_check_drained(qp);	/* or later, by the task */
	if (next == IB_QPS_RTS)
		vroce_req_set_window(qp);
	if (next == IB_QPS_RTS || next == IB_QPS_SQD)
		vroce_task_kick(qp);
}

static void vroce_qp_prepare_av(struct vroce_av *av,
				const struct ib_qp_attr *attr, int mask)
{
	memset(av, 0, sizeof(*av));
	if (!(mask & IB_QP_AV))
		return;
	av->ah = attr->ah_attr;
	av->ah.grh.sgid_attr = NULL;
	av->sgid_attr = attr->ah_attr.grh.sgid_attr;
	rdma_hold_gid_attr(av->sgid_attr);
}

int vroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct vroce_qp *qp = to_vqp(ibqp);
	enum ib_qp_state cur, next;
	struct vroce_av av;
	unsigned long flags;
	int err;

	if (udata && udata->inlen)
		return -EINVAL;
	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	err = vroce_qp_check_qkey(qp, attr, mask);
	if (err)
		return err;
	err = vroce_qp_check_attr(&to_vdev(ibqp->device)->attr, attr, mask);
	if (err)
		return err;
	vroce_qp_prepare_av(&av, attr, mask);

	mutex_lock(&qp->task_mutex);
	spin_lock_irqsave(&qp->state_lock, flags);
	err = vroce_qp_transition(qp, attr, mask, &av, &cur, &next);
	spin_unlock_irqrestore(&qp->state_lock, flags);
	if (!err) {
		vroce_xport_modify(qp, attr, mask);
		vroce_qp_after_transition(qp, cur, next);
		/* Entering ERR retires the WQEs done meanwhile. */
		vroce_qp_check_cq_lost(qp);
	}
	vroce_task_unlock(qp);

	/* The replaced AV on success, the unused new one on failure. */
	if (av.sgid_attr)
		rdma_put_gid_attr(av.sgid_attr);
	return err;
}

/**
 * vroce_qp_error - move a QP to ERR from inside the driver
 * @qp: the QP (e.g. the transport hit a fatal error on it)
 *
 * Flushes everything outstanding, as modify_qp(ERR) does.
 * Context: the QP's task (task_mutex held); no QP spinlock held.
 */
void vroce_qp_error(struct vroce_qp *qp)
{
	unsigned long flags;
	bool changed;

	spin_lock_irqsave(&qp->state_lock, flags);
	changed = qp->state != IB_QPS_ERR;
	qp->sq_draining = false;
	WRITE_ONCE(qp->state, IB_QPS_ERR);
	spin_unlock_irqrestore(&qp->state_lock, flags);
	if (changed)
		vroce_qp_entered_error(qp);
}

/**
 * vroce_qp_complete - post a completion of the transport
 * @qp: the QP; task_mutex held, a queue lock of @qp may be held
 * @cq: @qp's send or receive CQ
 * @wc: the completion
 * @solicited: the completion is solicited
 *
 * IBTA: a completion the CQ cannot take (an overrun, or a CQ already in
 * error: cq.c) is lost, and that is fatal to its QP. The caller may hold a
 * queue lock here, so @qp only notes it (cq_lost); vroce_qp_check_cq_lost(),
 * before task_mutex is released, moves it to ERR. A lost flush completion
 * changes nothing: its QP is in ERR already.
 */
void vroce_qp_complete(struct vroce_qp *qp, struct vroce_cq *cq,
		       const struct ib_wc *wc, bool solicited)
{
	lockdep_assert_held(&qp->task_mutex);

	if (vroce_cq_post(cq, wc, solicited) &&
	    wc->status != IB_WC_WR_FLUSH_ERR)
		qp->cq_lost = true;
}

/**
 * vroce_qp_check_cq_lost - fail a QP that lost a completion
 * @qp: the QP; task_mutex held, no QP spinlock held
 *
 * Moves @qp to ERR (flushing what is left, as modify_qp(ERR)) and raises
 * IB_EVENT_QP_FATAL, after the CQ's IB_EVENT_CQ_ERR.
 */
void vroce_qp_check_cq_lost(struct vroce_qp *qp)
{
	lockdep_assert_held(&qp->task_mutex);

	if (likely(!qp->cq_lost))
		return;
	vroce_qp_error(qp);
	/* The flushes may lose completions too: one event for all. */
	qp->cq_lost = false;
	ibdev_dbg(qp->ibqp.device, "QP %u lost a completion: CQ in error\n",
		  qp->ibqp.qp_num);
	vroce_qp_event(qp, IB_EVENT_QP_FATAL);
}

void vroce_qp_release_av(struct vroce_qp *qp)
{
	if (qp->av.sgid_attr)
		rdma_put_gid_attr(qp->av.sgid_attr);
	qp->av.sgid_attr = NULL;
}
