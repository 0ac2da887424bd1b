// SPDX-License-Identifier: GPL-2.0
/*
 * The per-QP task: the one execution context of a QP's transport.
 *
 * Execution model:
 * - Everything the reliable transport does for a QP runs in its task, a
 *   work item on the module's workqueue: the responder (request packets,
 *   resp.c), the completer (response packets and timer expiry, comp.c),
 *   READ response generation (resp.c) and the requester (new packets and
 *   retransmissions, req.c). A work item never runs on two CPUs at once,
 *   and the task body runs under vroce_qp.task_mutex, so the state in
 *   vroce_qp.req and vroce_qp.resp needs no other lock (but see the
 *   requester lent to a doorbell, below).
 * - The receive softirq (rx.c) only validates a packet, finds its QP and
 *   appends the skb to vroce_qp.rxq; a kernel post_send and the timer only
 *   kick the task. The queue is bounded in packets (VROCE_RXQ_MAX) and in
 *   skb->truesize (VROCE_RXQ_BYTES, vroce_qp.rxq_bytes), and a packet
 *   longer than its QP's path MTU is dropped before it is queued
 *   (vroce_qp_rx()). rxq.lock protects the queue and rxq_bytes: the
 *   receive path appends under it, and the task alone removes packets,
 *   and reads the head it keeps queued, under it (vroce_rxq_dequeue(),
 *   vroce_rxq_peek()), so the receive path's writes to an skb are seen by
 *   the task. The only lockless access is the test for an empty queue,
 *   which reads no skb.
 *   A user QP's doorbell (the POST_SEND system call, process
 *   context) runs the task body itself (vroce_task_doorbell()), so a send
 *   costs no worker wakeup. Nothing that sends runs in softirq context.
 * - A context that wants a run while another holds task_mutex (a doorbell,
 *   a run list) sets VROCE_TASK_AGAIN instead of waiting or waking the
 *   worker: whoever holds the mutex runs the task again after releasing it
 *   (vroce_task_try_run()), and modify_qp kicks it (vroce_task_unlock()).
 * - A packet to a QP of the same device (internal loopback) is queued on
 *   the receiver's rxq like any other, and the receiver goes on the run
 *   list of the context that sent it (struct vroce_run_list): once that
 *   context has released the task it ran, it runs the receiver's task too,
 *   then the task of the receiver's answer, and so on within a budget. A
 *   request, its ACK and its completion thus cost no worker wakeup, as a
 *   NIC's internal loopback costs no interrupt; a context never holds two
 *   task_mutexes, and never recurses into the transmit path.
 * - Except for a loopback frame of VROCE_TASK_HANDOFF_MIN bytes or more
 *   sent in a user's doorbell (the posting thread's system call): the
 *   receiver's task, which copies its payload, is queued on another CPU
 *   (vroce_task_handoff()), so that the copy runs beside the thread that
 *   posts and polls instead of after it. The requester's loopback window
 *   (VROCE_REQ_WINDOW_LOOP) lets the doorbell run that far ahead of the
 *   copies and their ACKs.
 * - While the completer copies a long READ response
 *   (vroce_comp_read_copy()), which touches nothing but the scatter
 *   cursor and the destination, the task lends the requester: it sets
 *   req.lent under vroce_qp.req_mutex before the copy, and clears it
 *   under req_mutex after, waiting for a borrower to finish. A user
 *   doorbell that finds the requester lent borrows it, holding req_mutex,
 *   and runs it alone (vroce_task_solo()): the requests it posted go out,
 *   and their responder runs on its run list, beside the copy on another
 *   CPU, instead of after it in the copying context. The requester's
 *   state and the QP's transmit state (its cached skb, its run pointer)
 *   thus belong to the task, or to the borrower while lent
 *   (vroce_req_assert_owner()). A solo run completes nothing (req.c); the
 *   task's context runs again after it.
 * - The task runs in process context and sends with dev_queue_xmit(); the
 *   softirqs a transmission raises (veth, loopback) run when it re-enables
 *   bottom halves, so a receiver on the same CPU keeps up with the sender.
 * - modify_qp holds task_mutex across a transition, so the task sees the
 *   QP's state and attributes change only between two of its runs.
 * - A run takes at most VROCE_TASK_BUDGET steps and then requeues itself,
 *   so QPs sharing a worker take turns.
 *
 * Lifetime: a queued task owns a QP reference (taken by vroce_task_kick()
 * or handed over by the receive path, dropped at the end of the run), so
 * destroy_qp's wait for the QP's references waits for the task too;
 * vroce_qp.dying keeps a dying QP's task from doing work or requeueing.
 * The timer kicks the task only through refcount_inc_not_zero(); destroy
 * cancels it once no reference is left (vroce_xport_qp_stop()). Without a
 * reference, the timer's function touches only the hrtimer and req.due
 * (when it re-arms itself for an end that moved later): hrtimer_cancel()
 * waits for a running callback and removes what it re-armed, so the QP
 * outlives both.
 */

#include <linux/etherdevice.h>
#include <linux/slab.h>
#include <net/inet_ecn.h>

#include "compat.h"
#include "counters.h"
#include "cq.h"
#include "device.h"
#include "opcode.h"
#include "qp.h"
#include "query.h"
#include "srq.h"
#include "xport.h"

#define VROCE_TASK_BUDGET 16

/*
 * The run list: the QPs whose tasks the context that runs a task (the work
 * item, a user doorbell) runs next, each entry with a QP reference. It
 * lives on that context's stack and only that context touches it: the
 * receive path adds to it through the vroce_pkt_info of a packet the
 * context's task sent (vroce_rx_loopback()). At most
 * VROCE_RUN_LIST_BUDGET runs per drain; what is left goes to the
 * workqueue, so a ping-pong between two QPs does not keep a system call.
 */
#define VROCE_RUN_LIST_LEN 8
#define VROCE_RUN_LIST_BUDGET 8
/* Runs of one task that vroce_task_try_run() does in a row. */
#define VROCE_TASK_RUNS 4
/*
 * A loopback frame this long or longer, sent in a user's doorbell, is
 * received on another CPU (vroce_task_handoff()). A shorter one's copy
 * (16 KiB: about 5 us under TCG) costs too little next to waking a CPU.
 */
#define VROCE_TASK_HANDOFF_MIN SZ_16K

/**
 * struct vroce_run_list - the tasks a context runs next
 * @doorbell: the context is a user's doorbell (vroce_task_doorbell()),
 *	which hands long loopback frames to another CPU
 * @n: entries in @qp
 * @qp: the QPs, each with a reference
 */
struct vroce_run_list {
	bool doorbell;
	unsigned int n;
	struct vroce_qp *qp[VROCE_RUN_LIST_LEN];
};

static struct workqueue_struct *vroce_wq;

int vroce_task_init(void)
{
	vroce_wq = alloc_workqueue("vroce", WQ_HIGHPRI | WQ_MEM_RECLAIM |
				   VROCE_COMPAT_WQ_PERCPU, 0);
	return vroce_wq ? 0 : -ENOMEM;
}

void vroce_task_exit(void)
{
	destroy_workqueue(vroce_wq);
}

/*
 * Queue the task on @cpu (WORK_CPU_UNBOUND: this one) with the reference
 * the caller hands over; an already queued task keeps its own.
 */
static void vroce_task_queue_on(struct vroce_qp *qp, int cpu)
{
	if (!queue_work_on(cpu, vroce_wq, &qp->task))
		vroce_qp_put(qp);
}

static void vroce_task_queue(struct vroce_qp *qp)
{
	vroce_task_queue_on(qp, WORK_CPU_UNBOUND);
}

/**
 * vroce_task_kick - make the QP's task run (again)
 * @qp: the QP
 *
 * Context: any.
 */
void vroce_task_kick(struct vroce_qp *qp)
{
	if (refcount_inc_not_zero(&qp->ref))
		vroce_task_queue(qp);
}

/* Add @qp with the reference the caller hands over; false if full. */
static bool vroce_run_list_add(struct vroce_run_list *run,
			       struct vroce_qp *qp)
{
	unsigned int i;

	for (i = 0; i < run->n; i++) {
		if (run->qp[i] == qp) {
			vroce_qp_put(qp);
			return true;
		}
	}
	if (run->n == VROCE_RUN_LIST_LEN)
		return false;
	run->qp[run->n++] = qp;
	return true;
}

static struct vroce_qp *vroce_run_list_pop(struct vroce_run_list *run)
{
	struct vroce_qp *qp = run->qp[0];

	run->n--;
	memmove(&run->qp[0], &run->qp[1], run->n * sizeof(run->qp[0]));
	return qp;
}

/*
 * Is @skb, a loopback frame sent in @run's context, received on another
 * CPU? Only a doorbell's long frames are: the posting thread's CPU goes
 * back to posting and polling while the receiver copies. A work item's
 * frames stay on its run list (its CPU is no user's), and so do short
 * ones, whose copy costs less than waking another CPU.
 */
static bool vroce_task_handoff(const struct vroce_run_list *run,
			       const struct sk_buff *skb)
{
	return run->doorbell && skb->len >= VROCE_TASK_HANDOFF_MIN &&
	       num_online_cpus() > 1;
}

/*
 * Queue the task, with the reference the caller hands over, on the next
 * online CPU after this one. Context: preemption disabled (the receive
 * path runs with BHs disabled).
 */
static void vroce_task_queue_elsewhere(struct vroce_qp *qp)
{
	int cpu;

	lockdep_assert_preemption_disabled();
	cpu = cpumask_next(smp_processor_id(), cpu_online_mask);
	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	vroce_task_queue_on(qp, cpu);
}

/*
 * The most payload a packet for @qp may carry: an RC or UC QP's path MTU
 * (before it has one, in RESET or INIT, the largest IB MTU), a UD or GSI
 * QP's largest IB MTU (UD has no path MTU; a datagram is one packet of at
 * most the sender's port MTU); an internal loopback frame's, which may
 * carry several path MTUs, VROCE_LOOP_PAYLOAD (vroce_pkt_segs()).
 */
static u32 vroce_qp_rx_max_payload(struct vroce_qp *qp,
				   const struct vroce_rx_cb *cb)
{
	enum ib_mtu mtu = READ_ONCE(qp->attr.path_mtu);

	if (cb->loopback)
		return VROCE_LOOP_PAYLOAD;
	if ((qp->ibqp.qp_type != IB_QPT_RC && qp->ibqp.qp_type != IB_QPT_UC) ||
	    mtu < IB_MTU_256 || mtu > IB_MTU_4096)
		mtu = IB_MTU_4096;
	return ib_mtu_enum_to_int(mtu);
}

/*
 * Append @skb to the QP's receive queue unless it holds VROCE_RXQ_MAX
 * packets or @skb would take it past VROCE_RXQ_BYTES of skb->truesize.
 */
static bool vroce_rxq_add(struct vroce_qp *qp, struct sk_buff *skb)
{
	unsigned long flags;
	bool room;

	spin_lock_irqsave(&qp->rxq.lock, flags);
	room = skb_queue_len(&qp->rxq) < VROCE_RXQ_MAX &&
	       qp->rxq_bytes + skb->truesize <= VROCE_RXQ_BYTES;
	if (room) {
		qp->rxq_bytes += skb->truesize;
		__skb_queue_tail(&qp->rxq, skb);
	}
	spin_unlock_irqrestore(&qp->rxq.lock, flags);
	return room;
}

/* The head of the receive queue, removed, or NULL. */
static struct sk_buff *vroce_rxq_dequeue(struct vroce_qp *qp)
{
	struct sk_buff *skb;
	unsigned long flags;

	spin_lock_irqsave(&qp->rxq.lock, flags);
	skb = __skb_dequeue(&qp->rxq);
	if (skb)
		qp->rxq_bytes -= skb->truesize;
	spin_unlock_irqrestore(&qp->rxq.lock, flags);
	return skb;
}

/*
 * The head of the receive queue, left there, or NULL. Looked at under the
 * queue's lock: taking it orders the reads of the skb (its control block,
 * its headers) after the receive path's writes, which it made before it
 * queued the skb under the same lock. Only the QP's task removes packets
 * (task_mutex held), so the skb stays queued and valid until it does.
 */
static struct sk_buff *vroce_rxq_peek(struct vroce_qp *qp)
{
	struct sk_buff *skb;
	unsigned long flags;

	if (skb_queue_empty_lockless(&qp->rxq))
		return NULL;
	spin_lock_irqsave(&qp->rxq.lock, flags);
	skb = skb_peek(&qp->rxq);
	spin_unlock_irqrestore(&qp->rxq.lock, flags);
	return skb;
}

/*
 * Drop everything in the receive queue: packets for a QP in a state that
 * receives none (RESET, INIT, ERR), or that is leaving for RESET. IBTA
 * drops them silently; they count in rcvd_qp_state_err.
 */
static void vroce_rxq_purge(struct vroce_qp *qp)
{
	struct sk_buff_head list;
	unsigned long flags;
	u32 n;

	__skb_queue_head_init(&list);
	spin_lock_irqsave(&qp->rxq.lock, flags);
	skb_queue_splice_init(&qp->rxq, &list);
	qp->rxq_bytes = 0;
	spin_unlock_irqrestore(&qp->rxq.lock, flags);
	n = skb_queue_len(&list);
	if (!n)
		return;
	vroce_counter_add(&to_vdev(qp->ibqp.device)->counters,
			  VROCE_CNT_RCVD_QP_STATE_ERR, n);
	__skb_queue_purge(&list);
}

/**
 * vroce_qp_rx - queue a received packet for the QP's task
 * @qp: the QP, with a reference from vroce_qp_get() that this consumes
 * @skb: the validated packet; vroce_rx_cb() filled in; consumed
 * @run: the run list of the context whose task sent @skb (loopback), or
 *	NULL: the QP's task runs there if it has room (a doorbell's long
 *	frame: on another CPU, vroce_task_handoff()), else on the workqueue
 *
 * A payload longer than the QP allows (vroce_qp_rx_max_payload()) is a
 * malformed packet: counted in rcvd_malformed and dropped here, before it
 * is queued, without a NAK, and the QP is not affected. No conforming
 * sender sends one, and a reassembled IPv4 or IPv6 datagram may be up to
 * 64 KiB long. A packet for a full queue (VROCE_RXQ_MAX, VROCE_RXQ_BYTES)
 * is counted in rcvd_qp_queue_full and dropped.
 *
 * Context: softirq, or BHs disabled in the context that owns @run.
 */
void vroce_qp_rx(struct vroce_qp *qp, struct sk_buff *skb,
		 struct vroce_run_list *run)
{
	struct vroce_counters *cnt = &to_vdev(qp->ibqp.device)->counters;
	bool handoff;

	if (unlikely(vroce_rx_cb(skb)->paylen >
		     vroce_qp_rx_max_payload(qp, vroce_rx_cb(skb)))) {
		vroce_counter_inc(cnt, VROCE_CNT_RCVD_MALFORMED);
		goto drop;
	}
	/* Decided before the skb is queued: its QP's task may free it at once. */
	handoff = run && vroce_task_handoff(run, skb);
	if (unlikely(!vroce_rxq_add(qp, skb))) {
		vroce_counter_inc(cnt, VROCE_CNT_RCVD_QUEUE_FULL);
		goto drop;
	}
	if (handoff) {
		vroce_task_queue_elsewhere(qp);
		return;
	}
	if (run && vroce_run_list_add(run, qp))
		return;
	vroce_task_queue(qp);
	return;

drop:
	kfree_skb(skb);
	vroce_qp_put(qp);
}

/*
 * An opcode of another transport than the QP's (a UD SEND at an RC QP, an
 * RC request at a UC QP): a header validation failure, silently dropped
 * and counted as a UD QP counts it (ud.c); the QP is not affected.
 */
static void vroce_task_drop_opcode(struct vroce_qp *qp, struct sk_buff *skb)
{
	vroce_counter_inc(&to_vdev(qp->ibqp.device)->counters,
			  VROCE_CNT_RCVD_OPCODE_ERR);
	kfree_skb(skb);
}

/*
 * Page fragments (a loopback frame's payload, tx.c) are read only by an
 * RC or UC QP's responder and completer (vroce_pkt_walk_payload()). Only
 * RC QPs send them, but a QPN can be misaddressed: anywhere else the
 * packet is made linear first, a clone of it if its sender's skb cache
 * shares it (tx.c). Returns the packet, or NULL if that failed (freed).
 */
static struct sk_buff *vroce_task_rx_linear(struct vroce_qp *qp,
					    struct sk_buff *skb,
					    const struct vroce_opcode_info *op)
{
	u32 qpt;

	if (likely(!skb_is_nonlinear(skb)))
		return skb;
	if (qp->ibqp.qp_type == IB_QPT_RC)
		qpt = VROCE_QPT_RC;
	else if (qp->ibqp.qp_type == IB_QPT_UC)
		qpt = VROCE_QPT_UC;
	else
		qpt = 0;
	if (op->qp_types & qpt)
		return skb;
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (skb && skb_linearize(skb)) {
		kfree_skb(skb);
		skb = NULL;
	}
	return skb;
}

static void vroce_task_rx(struct vroce_qp *qp, struct sk_buff *skb)
{
	const struct vroce_opcode_info *op = vroce_opcode(vroce_rx_bth(skb)->opcode);

	skb = vroce_task_rx_linear(qp, skb, op);
	if (!skb)
		return;

	/* Congestion control (cc_np.c, cc_rp.c). */
	if (unlikely(vroce_rx_bth(skb)->opcode == VROCE_OPCODE_CNP)) {
		vroce_cc_rp_cnp(qp, skb);
		return;
	}
	if (unlikely(vroce_rx_cb(skb)->ce))
		vroce_cc_np_rx(qp, skb);

	switch (qp->ibqp.qp_type) {
	case IB_QPT_UD:
	case IB_QPT_GSI:
		vroce_ud_rx(qp, skb);
		return;
	case IB_QPT_UC:
		/* UC has requests only, and nothing to answer. */
		if (op->qp_types & VROCE_QPT_UC)
			vroce_resp_rx(qp, skb);
		else
			vroce_task_drop_opcode(qp, skb);
		return;
	default:
		break;
	}
	if (!(op->qp_types & VROCE_QPT_RC)) {
		vroce_task_drop_opcode(qp, skb);
		return;
	}
	if (op->flags & VROCE_OP_RESPONSE)
		vroce_comp_rx(qp, skb);
	else
		vroce_resp_rx(qp, skb);
}

static bool vroce_task_may_overtake(struct vroce_qp *qp, struct sk_buff *skb)
{
	const struct vroce_opcode_info *op =
		vroce_opcode(vroce_rx_bth(skb)->opcode);

	if (op->flags & VROCE_OP_RESPONSE)
		return true;
	return vroce_resp_may_overtake(qp, skb);
}

static bool vroce_task_active(enum ib_qp_state state)
{
	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD || state == IB_QPS_SQE;
}

/*
 * The next queued packet. Most steps find the queue empty; they do not
 * take its lock for that. A packet queued after the test makes its sender
 * run the task again (vroce_qp_rx()).
 */
static struct sk_buff *vroce_task_next_rx(struct vroce_qp *qp)
{
	if (skb_queue_empty_lockless(&qp->rxq))
		return NULL;
	return vroce_rxq_dequeue(qp);
}

/* Return: true if the budget ran out with work left. */
static bool vroce_task_steps(struct vroce_qp *qp)
{
	int budget = VROCE_TASK_BUDGET;
	struct sk_buff *skb;

	lockdep_assert_held(&qp->task_mutex);

	if (unlikely(test_bit(0, &qp->cc.timer_fired)))
		vroce_cc_rp_timer(qp);
	while (budget--) {
		vroce_qp_check_cq_lost(qp);
		if (!vroce_task_active(READ_ONCE(qp->state))) {
			vroce_rxq_purge(qp);
			return false;
		}
		/*
		 * READ responses go out before later requests are looked at;
		 * responses to our own requests and retried READs may pass.
		 */
		if (qp->resp.rd.active) {
			skb = vroce_rxq_peek(qp);
			if (skb && vroce_task_may_overtake(qp, skb)) {
				vroce_task_rx(qp, vroce_rxq_dequeue(qp));
				continue;
			}
			vroce_resp_step(qp);
			continue;
		}
		skb = vroce_task_next_rx(qp);
		if (skb) {
			vroce_task_rx(qp, skb);
			continue;
		}
		/* After the queued responses: they may be the progress. */
		if (test_and_clear_bit(0, &qp->req.timer_fired)) {
			vroce_comp_timer(qp);
			continue;
		}
		if (vroce_resp_step(qp))
			continue;
		if (!vroce_req_step(qp))
			return false;
	}
	return true;
}

/*
 * One run of the task, in the context that owns @run.
 * Return: true if the budget ran out with work left.
 */
static bool vroce_task_run_locked(struct vroce_qp *qp,
				  struct vroce_run_list *run)
{
	bool more;

	lockdep_assert_held(&qp->task_mutex);

	if (READ_ONCE(qp->dying))
		return false;
	qp->run = run;
	more = vroce_task_steps(qp);
	vroce_qp_check_cq_lost(qp);
	qp->run = NULL;
	return more;
}

/*
 * After releasing task_mutex: did another context ask for a run while it
 * was held? The barrier orders the release before the test, as
 * vroce_task_try_run() orders its request before its mutex_trylock().
 */
static bool vroce_task_again(struct vroce_qp *qp)
{
	smp_mb();	/* the mutex release before the test; pairs below */
	return test_bit(VROCE_TASK_AGAIN, &qp->task_flags);
}

/*
 * Run the task in this context, unless another context holds task_mutex:
 * then VROCE_TASK_AGAIN tells that one to run it again once it has
 * released the mutex, so nobody waits for the mutex and no worker is
 * woken. At most VROCE_TASK_RUNS runs here; work left over goes to the
 * workqueue.
 */
static void vroce_task_try_run(struct vroce_qp *qp,
			       struct vroce_run_list *run)
{
	unsigned int runs = VROCE_TASK_RUNS;
	bool more;

	set_bit(VROCE_TASK_AGAIN, &qp->task_flags);
	smp_mb__after_atomic();	/* the request before the trylock */
	while (mutex_trylock(&qp->task_mutex)) {
		more = false;
		if (test_and_clear_bit(VROCE_TASK_AGAIN, &qp->task_flags))
			more = vroce_task_run_locked(qp, run);
		mutex_unlock(&qp->task_mutex);
		if (more || !--runs) {
			vroce_task_kick(qp);
			return;
		}
		if (!vroce_task_again(qp))
			return;
	}
}

/**
 * vroce_task_unlock - release task_mutex taken outside of a task run
 * @qp: the QP, task_mutex held (modify_qp)
 *
 * A run asked for meanwhile (vroce_task_try_run()) goes to the workqueue.
 */
void vroce_task_unlock(struct vroce_qp *qp)
{
	mutex_unlock(&qp->task_mutex);
	if (vroce_task_again(qp))
		vroce_task_kick(qp);
}

/*
 * Run the tasks on @run, each under its own task_mutex only; those beyond
 * the budget go to the workqueue, so nothing queued is missed.
 */
static void vroce_run_list_drain(struct vroce_run_list *run)
{
	unsigned int budget = VROCE_RUN_LIST_BUDGET;
	struct vroce_qp *qp;

	while (run->n) {
		qp = vroce_run_list_pop(run);
		if (!budget) {
			vroce_task_queue(qp);
			continue;
		}
		budget--;
		vroce_task_try_run(qp, run);
		vroce_qp_put(qp);
	}
}

static void vroce_task_run(struct work_struct *work)
{
	struct vroce_qp *qp = container_of(work, struct vroce_qp, task);
	struct vroce_run_list run = {};
	bool more;

	mutex_lock(&qp->task_mutex);
	clear_bit(VROCE_TASK_AGAIN, &qp->task_flags);
	smp_mb__after_atomic();	/* the clear before reading the rings */
	more = vroce_task_run_locked(qp, &run);
	mutex_unlock(&qp->task_mutex);

	if (more)
		vroce_task_kick(qp);
	else if (vroce_task_again(qp))
		vroce_task_try_run(qp, &run);
	vroce_qp_put(qp);
	vroce_run_list_drain(&run);
}

/*
 * A doorbell that finds the task copying a READ response, the requester
 * lent (req.lent): borrow it and run it here, alone, so new requests go
 * out beside the copy (vroce_req_solo()). VROCE_TASK_AGAIN, set first,
 * has the task's context run again after the copy, for whatever the solo
 * run left. The QP's run pointer is the borrower's meanwhile; the copy
 * does not send. Return: false if the requester is not lent (the task is
 * idle or busy otherwise): vroce_task_try_run() then.
 */
static bool vroce_task_solo(struct vroce_qp *qp, struct vroce_run_list *run)
{
	struct vroce_run_list *task_run;

	if (qp->ibqp.qp_type != IB_QPT_RC || !READ_ONCE(qp->req.lent))
		return false;
	set_bit(VROCE_TASK_AGAIN, &qp->task_flags);
	smp_mb__after_atomic();	/* the request before the trylock */
	if (!mutex_trylock(&qp->req_mutex))
		return false;
	if (!qp->req.lent) {
		mutex_unlock(&qp->req_mutex);
		return false;
	}
	task_run = qp->run;
	qp->run = run;
	vroce_req_solo(qp);
	qp->run = task_run;
	mutex_unlock(&qp->req_mutex);
	return true;
}

/**
 * vroce_task_doorbell - run the QP's task in the caller's context if idle
 * @qp: the QP, held by the caller (a user QP in a uverbs system call)
 *
 * One run, as the work item would do it, under task_mutex, then the tasks
 * of the QPs it sent loopback packets to (its run list). If another
 * context has the mutex, that one runs the task again for this doorbell
 * once it is done (vroce_task_try_run()); if the budget runs out with work
 * left, the task is kicked. Nothing posted is missed.
 *
 * Context: process, may sleep.
 */
void vroce_task_doorbell(struct vroce_qp *qp)
{
	struct vroce_run_list run = { .doorbell = true };

	might_sleep();
	if (!vroce_task_solo(qp, &run))
		vroce_task_try_run(qp, &run);
	vroce_run_list_drain(&run);
}

/*
 * Expired at or before req.due: an end that moved later re-arms the timer
 * (a start from the callback is serialized with the task's by the hrtimer
 * base lock); an end that passed kicks the task, which checks again under
 * task_mutex (vroce_comp_timer()).
 */
static enum hrtimer_restart vroce_task_timer(struct hrtimer *timer)
{
	struct vroce_qp *qp = container_of(timer, struct vroce_qp, req.timer);
	u64 due = READ_ONCE(qp->req.due);

	if (!due)
		return HRTIMER_NORESTART;
	if (ktime_get_ns() < due) {
		hrtimer_start(timer, ns_to_ktime(due), HRTIMER_MODE_ABS_SOFT);
		return HRTIMER_NORESTART;
	}
	set_bit(0, &qp->req.timer_fired);
	vroce_task_kick(qp);
	return HRTIMER_NORESTART;
}

/**
 * vroce_xport_qp_init - set up a new QP's transport
 * @qp: the QP, its queues created
 *
 * Return: 0 or -ENOMEM.
 */
int vroce_xport_qp_init(struct vroce_qp *qp)
{
	u32 rq_sge = qp->srq ? qp->srq->rq.max_sge : qp->rq.max_sge;

	INIT_WORK(&qp->task, vroce_task_run);
	mutex_init(&qp->task_mutex);
	mutex_init(&qp->req_mutex);
	skb_queue_head_init(&qp->rxq);
	qp->rxq_bytes = 0;
	vroce_compat_hrtimer_setup(&qp->req.timer, vroce_task_timer,
				   CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);

	/* As large as the SQ ring: charged with it (queue.c). */
	qp->req.wqes = kvcalloc(vroce_queue_capacity(&qp->sq.queue) + 1,
				sizeof(*qp->req.wqes),
				qp->is_user ? GFP_KERNEL_ACCOUNT : GFP_KERNEL);
	if (!qp->req.wqes)
		goto err;
	qp->resp.rwqe = kzalloc(vroce_recv_wqe_size(rq_sge), GFP_KERNEL);
	if (!qp->resp.rwqe)
		goto err;
	qp->resp.res = kvcalloc(VROCE_MAX_RD_ATOM, sizeof(*qp->resp.res),
				GFP_KERNEL);
	if (!qp->resp.res)
		goto err;
	qp->resp.nres = 1;
	vroce_cc_rp_setup(qp);
	vroce_req_reset(qp);
	vroce_resp_reset(qp);
	return 0;

err:
	vroce_xport_qp_free(qp);
	return -ENOMEM;
}

/**
 * vroce_xport_reset - forget all transport state (modify to RESET, destroy)
 * @qp: the QP; task_mutex held or the QP unreachable
 */
void vroce_xport_reset(struct vroce_qp *qp)
{
	hrtimer_try_to_cancel(&qp->req.timer);
	clear_bit(0, &qp->req.timer_fired);
	vroce_rxq_purge(qp);
	vroce_req_reset(qp);
	vroce_resp_reset(qp);
	vroce_cc_rp_reset(qp);
}

/**
 * vroce_xport_modify - apply the transport side of a modify_qp
 * @qp: the QP; task_mutex held, the transition done
 * @attr: the attributes given to modify_qp
 * @mask: their mask
 */
void vroce_xport_modify(struct vroce_qp *qp, const struct ib_qp_attr *attr,
			int mask)
{
	lockdep_assert_held(&qp->task_mutex);

	if (mask & IB_QP_RQ_PSN)
		qp->resp.epsn = attr->rq_psn & VROCE_PSN_MASK;
	if (mask & IB_QP_SQ_PSN) {
		qp->req.psn = attr->sq_psn & VROCE_PSN_MASK;
		qp->req.una = qp->req.psn;
		qp->req.max_psn = qp->req.psn;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->resp.nres = clamp_t(u32, attr->max_dest_rd_atomic, 1,
					VROCE_MAX_RD_ATOM);
	if (mask & IB_QP_RETRY_CNT)
		qp->req.retry_left = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->req.rnr_left = attr->rnr_retry;
	if (mask & IB_QP_AV)
		vroce_cc_rp_path(qp);
}

/**
 * vroce_xport_qp_stop - stop a QP's transport for good
 * @qp: the QP, unreachable and without references (destroy_qp)
 */
void vroce_xport_qp_stop(struct vroce_qp *qp)
{
	hrtimer_cancel(&qp->req.timer);
	vroce_cc_rp_stop(qp);
	vroce_xport_reset(qp);
}

void vroce_xport_qp_free(struct vroce_qp *qp)
{
	kvfree(qp->resp.res);
	kfree(qp->resp.rwqe);
	kvfree(qp->req.wqes);
	vroce_tx_cache_free(&qp->tx_skb);
}

/**
 * vroce_xport_pkt_init - start describing a packet to the QP's peer
 * @qp: the QP (RC: the primary path)
 * @pi: what to fill in
 * @opcode: the BTH opcode
 * @psn: the BTH PSN
 *
 * Context: the QP's task, or its requester borrowed by a doorbell: the
 * packet may reuse the QP's cached skb and put its receiver on the run
 * list of that context.
 */
void vroce_xport_pkt_init(struct vroce_qp *qp, struct vroce_pkt_info *pi,
			  u8 opcode, u32 psn)
{
	const struct rdma_ah_attr *ah = &qp->av.ah;
	const struct ib_global_route *grh = &ah->grh;

	/* pi->skb_cache and pi->run belong to the task, or the borrower. */
	vroce_req_assert_owner(qp);
	memset(pi, 0, sizeof(*pi));
	pi->sgid_attr = qp->av.sgid_attr;
	pi->dgid = grh->dgid;
	ether_addr_copy(pi->dmac, ah->roce.dmac);
	/* The DSCP of the path, the ECN bits of congestion control. */
	pi->traffic_class = (grh->traffic_class & ~INET_ECN_MASK) |
			    vroce_cc_qp_ecn(qp);
	pi->hop_limit = grh->hop_limit;
	pi->flow_label = grh->flow_label;
	pi->sl = ah->sl;
	pi->opcode = opcode;
	pi->pkey = VROCE_DEFAULT_PKEY;
	pi->sqpn = qp->ibqp.qp_num;
	pi->dqpn = qp->attr.dest_qp_num;
	pi->psn = psn & VROCE_PSN_MASK;
	pi->skb_cache = &qp->tx_skb;
	pi->run = qp->run;
}

/* An extension header of a received packet; the opcode must have it. */
void *vroce_pkt_hdr(struct sk_buff *skb, unsigned int hdr)
{
	struct vroce_bth *bth = vroce_rx_bth(skb);

	return (u8 *)(bth + 1) +
	       vroce_ext_hdr_offset(vroce_opcode(bth->opcode), hdr);
}

/**
 * vroce_pkt_segs - the packets a received frame stands for
 * @skb: the frame
 * @mtu: the QP's path MTU in bytes
 *
 * Return: 1, or for an ONLY, FIRST, MIDDLE or LAST frame of internal
 * loopback that carries more than one MTU (at most VROCE_LOOP_PAYLOAD;
 * req.c and resp.c send them), one per MTU begun: FIRST and MIDDLE frames
 * carry whole MTUs, an ONLY or LAST frame's last MTU may be short. A frame
 * from a wire always stands for one packet, whose length the caller checks
 * against one MTU; so does a loopback FIRST or MIDDLE frame of a length
 * that is not whole MTUs.
 */
u32 vroce_pkt_segs(struct sk_buff *skb, u32 mtu)
{
	const struct vroce_rx_cb *cb = vroce_rx_cb(skb);
	const struct vroce_opcode_info *op =
		vroce_opcode(vroce_rx_bth(skb)->opcode);

	if (!cb->loopback ||
	    !(op->flags & (VROCE_OP_ONLY | VROCE_OP_FIRST | VROCE_OP_MIDDLE |
			   VROCE_OP_LAST)) ||
	    cb->paylen <= mtu || cb->paylen > VROCE_LOOP_PAYLOAD)
		return 1;
	if (op->flags & (VROCE_OP_ONLY | VROCE_OP_LAST))
		return DIV_ROUND_UP(cb->paylen, mtu);
	return cb->paylen % mtu ? 1 : cb->paylen / mtu;
}

/**
 * vroce_loop_pkt_len - the payload of the next frame of a message
 * @qp: the sending QP
 * @left: bytes of the message left, the next frame's first
 * @mtu: the path MTU in bytes
 * @in_run: packets already sent since the last run boundary
 *
 * Return: up to @mtu bytes, or when the peer is on this device (internal
 * loopback) and the message has more than one MTU left, as many MTUs as fit
 * in VROCE_LOOP_PAYLOAD after @in_run of them (whole ones, but for the
 * message's last): a message of up to VROCE_LOOP_PAYLOAD is one frame.
 */
u32 vroce_loop_pkt_len(struct vroce_qp *qp, u32 left, u32 mtu, u32 in_run)
{
	u32 max = VROCE_LOOP_PAYLOAD / mtu, pkts = DIV_ROUND_UP(left, mtu), n;

	/* The payload at any page offset, as page fragments (tx.c). */
	BUILD_BUG_ON(DIV_ROUND_UP(VROCE_LOOP_PAYLOAD, PAGE_SIZE) + 1 >
		     VROCE_TX_FRAGS_MAX);

	if (left <= mtu || max < 2 ||
	    !vroce_tx_is_loopback(qp->av.sgid_attr, qp->av.ah.roce.dmac))
		return min(left, mtu);
	n = min(pkts, max - in_run % max);
	return min(left, n * mtu);
}

void *vroce_pkt_payload(struct sk_buff *skb)
{
	struct vroce_bth *bth = vroce_rx_bth(skb);

	return (u8 *)(bth + 1) + vroce_opcode_hdr_len(vroce_opcode(bth->opcode));
}

/* The payload bytes of fragment @frag from @off on, page by page. */
static int vroce_pkt_walk_frag(const skb_frag_t *frag, u32 off, u32 len,
			       int (*copy)(void *arg, void *src, u32 len),
			       void *arg)
{
	u32 p_off, p_len, done;
	struct page *p;
	int err = 0;

	skb_frag_foreach_page(frag, skb_frag_off(frag) + off, len, p, p_off,
			      p_len, done) {
		void *va = kmap_local_page(p);

		err = copy(arg, va + p_off, p_len);
		kunmap_local(va);
		if (err)
			break;
	}
	return err;
}

/**
 * vroce_pkt_walk_payload - hand a packet's payload to @copy, piece by piece
 * @skb: a received packet; the payload of a loopback frame may be in page
 *	 fragments (tx.c), every other packet is linear
 * @copy: called for each contiguous piece, in order; nonzero stops the walk
 * @arg: argument of @copy
 *
 * Return: 0, what @copy returned, or -EFAULT if the skb is shorter than
 * its payload length (it never is: rx.c checked the lengths).
 */
int vroce_pkt_walk_payload(struct sk_buff *skb,
			   int (*copy)(void *arg, void *src, u32 len),
			   void *arg)
{
	u32 off = (u8 *)vroce_pkt_payload(skb) - skb->data;
	u32 left = vroce_rx_cb(skb)->paylen, n;
	struct skb_shared_info *sh = skb_shinfo(skb);
	int i, err;

	if (off < skb_headlen(skb)) {
		n = min(left, skb_headlen(skb) - off);
		err = n ? copy(arg, skb->data + off, n) : 0;
		if (err)
			return err;
		left -= n;
		off += n;
	}
	off -= skb_headlen(skb);
	for (i = 0; left && i < sh->nr_frags; i++) {
		u32 size = skb_frag_size(&sh->frags[i]);

		if (off >= size) {
			off -= size;
			continue;
		}
		n = min(left, size - off);
		err = vroce_pkt_walk_frag(&sh->frags[i], off, n, copy, arg);
		if (err)
			return err;
		left -= n;
		off = 0;
	}
	return left ? -EFAULT : 0;
}
