// SPDX-License-Identifier: GPL-2.0
/*
 * A QP's receive queue: received packets waiting for the QP's task, and
 * their dispatch to the role that handles them (responder, completer, UD,
 * congestion control) when the task takes them.
 *
 * The receive softirq (rx.c) only validates a packet, finds its QP and
 * appends the skb to vroce_qp.rxq (vroce_qp_rx()), which wakes the QP's
 * task (task.c). The queue is bounded in packets (VROCE_RXQ_MAX) and in
 * skb->truesize (VROCE_RXQ_BYTES, vroce_qp.rxq_bytes), and a packet longer
 * than its QP's path MTU is dropped before it is queued.
 *
 * Locking:
 *
 *   what                   lock          who
 *   rxq, rxq_bytes         rxq.lock      the receive path appends; the
 *                                        task alone removes and peeks
 *   empty test             none          skb_queue_empty_lockless(); reads
 *                                        no skb
 *   a dequeued skb         task_mutex    the task, until it frees it
 *
 * The task removes packets, and reads the head it keeps queued, under
 * rxq.lock (vroce_rxq_dequeue(), vroce_rxq_peek()), so the receive path's
 * writes to an skb are seen by the task. vroce_rxq_purge() runs in the
 * task, in modify_qp to RESET (task_mutex held), or at destroy (the QP
 * unreachable).
 */

#include <linux/skbuff.h>

#include "comp.h"
#include "counters.h"
#include "device.h"
#include "opcode.h"
#include "qp.h"
#include "resp.h"
#include "rx.h"
#include "task.h"
#include "tx.h"
#include "ud.h"

/* The receive queue holds what the loopback window lets out, twice. */
static_assert(VROCE_REQ_WINDOW_LOOP * 2 <= VROCE_RXQ_MAX);
static_assert(VROCE_REQ_WINDOW_LOOP * 2 * VROCE_RXQ_PSN_TRUESIZE <=
	      VROCE_RXQ_BYTES);

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
struct sk_buff *vroce_rxq_dequeue(struct vroce_qp *qp)
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
struct sk_buff *vroce_rxq_peek(struct vroce_qp *qp)
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
void vroce_rxq_purge(struct vroce_qp *qp)
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
	vroce_task_wake(qp, run, handoff);
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
static void vroce_rxq_drop_opcode(struct vroce_qp *qp, struct sk_buff *skb)
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
static struct sk_buff *vroce_rxq_linear(struct vroce_qp *qp,
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

/* Hand @skb, taken off the queue by the task, to the role it is for. */
void vroce_rxq_dispatch(struct vroce_qp *qp, struct sk_buff *skb)
{
	const struct vroce_opcode_info *op = vroce_opcode(vroce_rx_bth(skb)->opcode);

	skb = vroce_rxq_linear(qp, skb, op);
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
			vroce_rxq_drop_opcode(qp, skb);
		return;
	default:
		break;
	}
	if (!(op->qp_types & VROCE_QPT_RC)) {
		vroce_rxq_drop_opcode(qp, skb);
		return;
	}
	if (op->flags & VROCE_OP_RESPONSE)
		vroce_comp_rx(qp, skb);
	else
		vroce_resp_rx(qp, skb);
}

/*
 * May @skb be handled while READ responses go out, before them? Responses
 * to our own requests may, and a retried READ (vroce_resp_may_overtake()).
 */
bool vroce_rxq_may_overtake(struct vroce_qp *qp, struct sk_buff *skb)
{
	const struct vroce_opcode_info *op =
		vroce_opcode(vroce_rx_bth(skb)->opcode);

	if (op->flags & VROCE_OP_RESPONSE)
		return true;
	return vroce_resp_may_overtake(qp, skb);
}

/*
 * The next queued packet. Most steps find the queue empty; they do not
 * take its lock for that. A packet queued after the test makes its sender
 * run the task again (vroce_qp_rx()).
 */
struct sk_buff *vroce_rxq_next(struct vroce_qp *qp)
{
	if (skb_queue_empty_lockless(&qp->rxq))
		return NULL;
	return vroce_rxq_dequeue(qp);
}
