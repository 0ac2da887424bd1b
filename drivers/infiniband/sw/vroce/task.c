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
 *   appends the skb to vroce_qp.rxq (rxq.c), which wakes the task
 *   (vroce_task_wake()); a kernel post_send and the timer only kick it.
 *   A user QP's doorbell (the POST_SEND system call) runs the task body
 *   itself (vroce_task_doorbell()), so a send costs no worker wakeup.
 *   Nothing that sends runs in softirq context.
 * - A context that wants a run while another holds task_mutex (an RC or
 *   UC doorbell, a run list) sets VROCE_TASK_AGAIN instead of waiting or
 *   waking the worker: whoever holds the mutex runs the task again after
 *   releasing it (vroce_task_try_run()), and modify_qp kicks it
 *   (vroce_task_unlock()).
 *   A UD doorbell, and destroy_qp of an unreliable QP, wait for the mutex
 *   and send what was posted (vroce_task_run_sync()).
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
 * - While the completer copies a long READ response, the task lends the
 *   requester to a user doorbell, which runs it alone (vroce_task_solo()):
 *   the requests it posted go out beside the copy, on another CPU. The
 *   protocol, and who owns which field meanwhile, is at the top of req.c;
 *   a solo run completes nothing, and the task's context runs again after.
 * - The task runs in process context and sends with dev_queue_xmit(); the
 *   softirqs a transmission raises (veth, loopback) run when it re-enables
 *   bottom halves, so a receiver on the same CPU keeps up with the sender.
 * - modify_qp holds task_mutex across a transition, so the task sees the
 *   QP's state and attributes change only between two of its runs. A run
 *   takes at most VROCE_TASK_BUDGET steps, then requeues itself.
 *
 * Lifetime: a queued task owns a QP reference (taken by vroce_task_kick()
 * or handed over by the receive path, dropped at the end of the run), so
 * destroy_qp's wait for the QP's references waits for the task too;
 * vroce_qp.dying keeps a dying QP's task from doing work or requeueing;
 * the timer kicks it only through refcount_inc_not_zero() (timers.c).
 */

#include <linux/workqueue.h>

#include "comp.h"
#include "compat.h"
#include "qp.h"
#include "rx.h"
#include "task.h"
#include "timers.h"

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
	if (refcount_inc_not_zero(&qp->ref->count))
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
 * ones, whose copy costs less than waking another CPU. Against none
 * (tools/bench/ab.sh, loopback, 6.12, MiB/s): ib_read_bw 64 KiB 3237 vs
 * 2034, ib_send_bw 64 KiB 2520 vs 2053, ib_write_bw 1 MiB 2822 vs 2444.
 */
bool vroce_task_handoff(const struct vroce_run_list *run,
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
 * The receive path queued a packet for @qp (vroce_qp_rx()): run its task,
 * with the reference handed over, on another CPU (@handoff, decided by
 * vroce_task_handoff() before the packet was queued), on @run (the
 * loopback sender's run list) if it has room, else on the workqueue.
 * Context: softirq, or BHs disabled in the context that owns @run.
 */
void vroce_task_wake(struct vroce_qp *qp, struct vroce_run_list *run,
		     bool handoff)
{
	if (handoff) {
		vroce_task_queue_elsewhere(qp);
		return;
	}
	if (run && vroce_run_list_add(run, qp))
		return;
	vroce_task_queue(qp);
}

static bool vroce_task_active(enum ib_qp_state state)
{
	return state == IB_QPS_RTR || state == IB_QPS_RTS ||
	       state == IB_QPS_SQD || state == IB_QPS_SQE;
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
			if (skb && vroce_rxq_may_overtake(qp, skb)) {
				vroce_rxq_dispatch(qp, vroce_rxq_dequeue(qp));
				continue;
			}
			vroce_resp_step(qp);
			continue;
		}
		skb = vroce_rxq_next(qp);
		if (skb) {
			vroce_rxq_dispatch(qp, skb);
			continue;
		}
		/* After the queued responses: they may be the progress. */
		if (vroce_timers_fired(qp)) {
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

/*
 * Run the task here, waiting for task_mutex, until it has nothing left to
 * do or after @runs runs (of VROCE_TASK_BUDGET steps each); what is left
 * then, and a run another context asked for meanwhile, go to the
 * workqueue.
 */
static void vroce_task_run_sync(struct vroce_qp *qp,
				struct vroce_run_list *run, unsigned int runs)
{
	bool more;

	do {
		mutex_lock(&qp->task_mutex);
		clear_bit(VROCE_TASK_AGAIN, &qp->task_flags);
		smp_mb__after_atomic();	/* the clear before reading the rings */
		more = vroce_task_run_locked(qp, run);
		mutex_unlock(&qp->task_mutex);
	} while (more && --runs);
	if (more || vroce_task_again(qp))
		vroce_task_kick(qp);
}

/* Runs that send a whole send queue of single-packet WQEs, and one more. */
static unsigned int vroce_task_sq_runs(struct vroce_qp *qp)
{
	return qp->sq.queue.index_mask / VROCE_TASK_BUDGET + 2;
}

/**
 * vroce_task_doorbell - run the QP's task in the caller's context
 * @qp: the QP, held by the caller (a user QP in a uverbs system call)
 *
 * One run, as the work item would do it, under task_mutex, then the tasks
 * of the QPs it sent loopback packets to (its run list). If another
 * context has the mutex, that one runs the task again for this doorbell
 * once it is done (vroce_task_try_run()); if the budget runs out with work
 * left, the task is kicked. Nothing posted is missed.
 *
 * A UD QP's doorbell instead waits for the mutex and runs the task until
 * every datagram posted is sent (vroce_task_run_sync()): a UD WQE names
 * its address handle by number, and the consumer may destroy the AH as
 * soon as the post returns (rdma-core's mckey does, then the QP), so a
 * datagram left to another context could find it gone and be lost.
 * Sending a datagram waits for nothing on the network.
 *
 * Context: process, may sleep.
 */
void vroce_task_doorbell(struct vroce_qp *qp)
{
	struct vroce_run_list run = { .doorbell = true };

	might_sleep();
	if (qp->ibqp.qp_type == IB_QPT_UD)
		vroce_task_run_sync(qp, &run, vroce_task_sq_runs(qp));
	else if (!vroce_task_solo(qp, &run))
		vroce_task_try_run(qp, &run);
	vroce_run_list_drain(&run);
}

/**
 * vroce_task_finish - run the task here until it has nothing left to do
 * @qp: the QP, held by the caller, who is destroying it: nothing is posted
 *	to it any more
 *
 * For an unreliable QP's destroy_qp: the sends its consumer posted go out,
 * as a NIC's go out once their doorbell was rung, instead of being dropped
 * because the task had not got to them (a kernel consumer's post only
 * kicks the task; a user's doorbell that finds a UC QP's task busy leaves
 * the run to whoever has it). Then the tasks of the QPs it sent loopback
 * packets to. Sending waits for nothing on the network, and the runs are
 * bounded by the send queue's size.
 *
 * Context: process, may sleep.
 */
void vroce_task_finish(struct vroce_qp *qp)
{
	struct vroce_run_list run = {};

	might_sleep();
	vroce_task_run_sync(qp, &run, vroce_task_sq_runs(qp));
	vroce_run_list_drain(&run);
}

/**
 * vroce_task_qp_init - set up a new QP's task
 * @qp: the QP, unreachable (create_qp)
 */
void vroce_task_qp_init(struct vroce_qp *qp)
{
	INIT_WORK(&qp->task, vroce_task_run);
	mutex_init(&qp->task_mutex);
	mutex_init(&qp->req_mutex);
}
