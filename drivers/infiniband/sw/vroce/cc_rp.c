// SPDX-License-Identifier: GPL-2.0
/*
 * The reaction point (RP) of a QP and its pacer: CNPs received for the QP
 * drive its DCQCN rate machine (dcqcn.c), whose rate paces the requester.
 *
 * Execution: everything here runs in the QP's task (task.c, task_mutex
 * held), which owns struct vroce_qp_cc like the rest of the transport: a
 * CNP is queued to the task by the receive path like any packet, the
 * requester asks vroce_cc_rp_wait() before each packet and reports it with
 * vroce_cc_rp_sent(), and the RP timer only sets a bit and kicks the task.
 *
 * Cost: a QP that never got a CNP (or whose rate climbed back to the
 * maximum) is not "limited": the requester tests one bool per packet
 * (vroce_cc_paced()) and nothing else runs, no timer is armed. While
 * limited, the pacer computes when the next packet may leave
 * (next_tx_ns: packet bytes at the current rate, with up to
 * VROCE_CC_BURST_BYTES of credit for a late timer) and, if it is too
 * early, arms the RP timer and makes the task stop: a paced QP sleeps.
 * The same timer serves DCQCN's next event (rate increase or pending
 * decrease), so a limited QP recovers while idle too; once back at the
 * maximum the limiter is released and the timer is not re-armed.
 *
 * Lifetime: the timer kicks the task only through vroce_task_kick()
 * (refcount_inc_not_zero); destroy cancels it once no reference is left
 * (vroce_cc_rp_stop() from vroce_xport_qp_stop()).
 */

#include <linux/ktime.h>
#include <linux/math64.h>
#include <net/inet_ecn.h>
#include <rdma/ib_cache.h>
#include <rdma/restrack.h>

#include "cc.h"
#include "compat.h"
#include "counters.h"
#include "device.h"
#include "qp.h"
#include "rx.h"
#include "task.h"
#include "vroce_trace.h"

/* Wire bytes of a RoCEv2 packet besides its payload and extension headers. */
#define VROCE_CC_PKT_OVERHEAD	(ETH_HLEN + 20 + 8 + 12 + 4)
/* Credit the pacer keeps for packets a late timer held back. */
#define VROCE_CC_BURST_BYTES	8192

static struct vroce_dev *qp_vdev(struct vroce_qp *qp)
{
	return to_vdev(qp->ibqp.device);
}

static enum hrtimer_restart vroce_cc_timer_fn(struct hrtimer *timer)
{
	struct vroce_qp *qp = container_of(timer, struct vroce_qp, cc.timer);

	set_bit(0, &qp->cc.timer_fired);
	vroce_task_kick(qp);
	return HRTIMER_NORESTART;
}

/* The rate the pacer uses (0: unlimited), published for readers. */
static void vroce_cc_publish(struct vroce_qp *qp, u32 old, int reason)
{
	u32 rate = vroce_dcqcn_rate_kbps(&qp->cc.rp);

	if (rate == old)
		return;
	WRITE_ONCE(qp->cc.rate_kbps, rate);
	trace_vroce_rate_change(&qp_vdev(qp)->ibdev, qp->ibqp.qp_num, old,
				rate, reason);
}

/* Arm the timer for the earliest of DCQCN's next event and the pacer. */
static void vroce_cc_rearm(struct vroce_qp *qp)
{
	struct vroce_qp_cc *qcc = &qp->cc;
	u64 t = U64_MAX;

	if (qcc->rp.limited) {
		qcc->due_ns = vroce_dcqcn_next_timer(&qcc->rp,
						     &qp_vdev(qp)->cc.params);
		t = qcc->due_ns;
		if (qcc->blocked)
			t = min(t, qcc->next_tx_ns);
	}
	if (t == qcc->armed_ns)
		return;
	qcc->armed_ns = t;
	if (t == U64_MAX)
		hrtimer_try_to_cancel(&qcc->timer);
	else
		hrtimer_start(&qcc->timer, ns_to_ktime(t),
			      HRTIMER_MODE_ABS_SOFT);
}

/* Apply the DCQCN events due by @now (alpha, decrease, timer increases). */
static void vroce_cc_advance(struct vroce_qp *qp, u64 now)
{
	struct vroce_qp_cc *qcc = &qp->cc;
	u32 old = vroce_dcqcn_rate_kbps(&qcc->rp);

	if (now < qcc->due_ns)
		return;
	vroce_dcqcn_on_rate_timer(&qcc->rp, &qp_vdev(qp)->cc.params, now);
	vroce_cc_publish(qp, old, VROCE_RATE_TIMER);
	vroce_cc_rearm(qp);
}

/**
 * vroce_cc_rp_setup - set up a new QP's RP state and timer
 * @qp: the QP being created (process context)
 */
void vroce_cc_rp_setup(struct vroce_qp *qp)
{
	struct vroce_dev *vdev = qp_vdev(qp);

	vroce_compat_hrtimer_setup(&qp->cc.timer, vroce_cc_timer_fn,
				   CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
	vroce_cc_qp_init(vdev, &qp->cc, vroce_cc_line_kbps(vdev));
	qp->cc.armed_ns = U64_MAX;
	qp->cc.due_ns = U64_MAX;
}

/**
 * vroce_cc_rp_reset - back to unlimited, nothing pending (modify to RESET)
 * @qp: the QP; task_mutex held or the QP unreachable
 */
void vroce_cc_rp_reset(struct vroce_qp *qp)
{
	struct vroce_qp_cc *qcc = &qp->cc;
	u32 old = vroce_dcqcn_rate_kbps(&qcc->rp);

	hrtimer_try_to_cancel(&qcc->timer);
	clear_bit(0, &qcc->timer_fired);
	vroce_cc_qp_init(qp_vdev(qp), qcc, qcc->rp.line_kbps);
	qcc->armed_ns = U64_MAX;
	qcc->due_ns = U64_MAX;
	qcc->next_tx_ns = 0;
	qcc->blocked = false;
	vroce_cc_publish(qp, old, VROCE_RATE_RESET);
}

/**
 * vroce_cc_rp_stop - stop the RP timer for good
 * @qp: the QP, unreachable and without references (destroy_qp)
 */
void vroce_cc_rp_stop(struct vroce_qp *qp)
{
	hrtimer_cancel(&qp->cc.timer);
	vroce_cc_qp_uninit(qp_vdev(qp), &qp->cc);
}

/**
 * vroce_cc_rp_path - the QP's path changed (modify_qp with IB_QP_AV)
 * @qp: the QP; task_mutex held
 */
void vroce_cc_rp_path(struct vroce_qp *qp)
{
	const struct rdma_ah_attr *ah = &qp->av.ah;

	qp->cc.prio = vroce_cc_prio(ah->sl, ah->grh.traffic_class);
	qp->cc.v2 = qp->av.sgid_attr &&
		    rdma_gid_attr_network_type(qp->av.sgid_attr) !=
		    RDMA_NETWORK_ROCE_V1;
}

/**
 * vroce_cc_qp_ecn - the IP ECN bits of the QP's next packet
 * @qp: the QP
 *
 * Return: ECT(0) on a RoCEv2 path whose priority has the RP enabled, else
 * Not-ECT.
 */
u8 vroce_cc_qp_ecn(struct vroce_qp *qp)
{
	if (!qp->cc.v2)
		return INET_ECN_NOT_ECT;
	return vroce_cc_ecn(qp_vdev(qp), qp->cc.prio);
}

/**
 * vroce_cc_rp_cnp - a CNP for this QP arrived
 * @qp: the QP named by the CNP's DestQP
 * @skb: the CNP; consumed
 *
 * Counted in rp_cnp_handled and fed to the rate machine when the RP is
 * enabled on the QP's priority, else counted in rp_cnp_ignored.
 */
void vroce_cc_rp_cnp(struct vroce_qp *qp, struct sk_buff *skb)
{
	struct vroce_dev *vdev = qp_vdev(qp);
	struct vroce_qp_cc *qcc = &qp->cc;
	u64 now = ktime_get_ns();
	u32 old;

	consume_skb(skb);
	if (!vroce_cc_rp_enabled(vdev, qcc->prio)) {
		vroce_counter_inc(&vdev->counters, VROCE_CNT_RP_CNP_IGNORED);
		return;
	}
	vroce_counter_inc(&vdev->counters, VROCE_CNT_RP_CNP_HANDLED);
	old = vroce_dcqcn_rate_kbps(&qcc->rp);
	if (!qcc->rp.limited)
		qcc->next_tx_ns = now;
	vroce_dcqcn_on_cnp(&qcc->rp, &vdev->cc.params, now);
	trace_vroce_cnp_handled(&vdev->ibdev, qp->ibqp.qp_num,
				qcc->rp.rc_kbps, qcc->rp.rt_kbps,
				qcc->rp.alpha);
	vroce_cc_publish(qp, old, VROCE_RATE_CNP);
	vroce_cc_rearm(qp);
}

/**
 * vroce_cc_rp_timer - the RP timer fired: DCQCN events, then the pacer
 * @qp: the QP; called by its task
 */
void vroce_cc_rp_timer(struct vroce_qp *qp)
{
	if (!test_and_clear_bit(0, &qp->cc.timer_fired))
		return;
	qp->cc.armed_ns = U64_MAX;
	qp->cc.blocked = false;
	if (!qp->cc.rp.limited)
		return;
	vroce_cc_advance(qp, ktime_get_ns());
	vroce_cc_rearm(qp);
}

/**
 * vroce_cc_rp_wait - must the requester wait before its next packet?
 * @qp: a limited QP (vroce_cc_paced())
 *
 * Return: true if the pacer holds the packet back; the RP timer is then
 * armed for when it may go, and the task should stop.
 */
bool vroce_cc_rp_wait(struct vroce_qp *qp)
{
	struct vroce_qp_cc *qcc = &qp->cc;
	u64 now = ktime_get_ns();

	vroce_cc_advance(qp, now);
	if (!qcc->rp.limited || now >= qcc->next_tx_ns) {
		qcc->blocked = false;
		return false;
	}
	qcc->blocked = true;
	vroce_cc_rearm(qp);
	return true;
}

/**
 * vroce_cc_rp_sent - a limited QP sent a packet of @bytes payload
 * @qp: the QP (vroce_cc_paced())
 * @bytes: payload bytes
 *
 * Moves the pacer on by the packet's time at the current rate and feeds
 * the byte counter.
 */
void vroce_cc_rp_sent(struct vroce_qp *qp, u32 bytes)
{
	struct vroce_qp_cc *qcc = &qp->cc;
	u32 rate = qcc->rp.rc_kbps, old = vroce_dcqcn_rate_kbps(&qcc->rp);
	u64 now = ktime_get_ns(), credit, base;

	bytes += VROCE_CC_PKT_OVERHEAD;
	credit = div_u64(VROCE_CC_BURST_BYTES * 8000000ULL, max(rate, 1U));
	base = max(qcc->next_tx_ns, now > credit ? now - credit : 0);
	qcc->next_tx_ns = base + div_u64(bytes * 8000000ULL, max(rate, 1U));
	vroce_dcqcn_on_bytes_sent(&qcc->rp, &qp_vdev(qp)->cc.params, bytes,
				  now);
	if (vroce_dcqcn_rate_kbps(&qcc->rp) != old) {
		vroce_cc_publish(qp, old, VROCE_RATE_BYTES);
		vroce_cc_rearm(qp);
	}
}

/**
 * vroce_cc_fill_res_qp_entry - the QP's RP state in "rdma resource show qp"
 * @msg: the netlink message
 * @ibqp: the QP
 *
 * Driver details (rdma -dd): cc_rate_kbps (the pacer, 0 = not limited),
 * cc_current_kbps, cc_target_kbps, cc_alpha (/2^20), cc_cnp_handled. Read
 * without the task lock: each value is current, not a snapshot.
 *
 * Return: 0 or -EMSGSIZE.
 */
int vroce_cc_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	struct vroce_qp *qp = to_vqp(ibqp);
	const struct vroce_dcqcn *rp = &qp->cc.rp;

	if (rdma_nl_put_driver_u32(msg, "cc_rate_kbps",
				   READ_ONCE(qp->cc.rate_kbps)) ||
	    rdma_nl_put_driver_u32(msg, "cc_current_kbps",
				   READ_ONCE(rp->rc_kbps)) ||
	    rdma_nl_put_driver_u32(msg, "cc_target_kbps",
				   READ_ONCE(rp->rt_kbps)) ||
	    rdma_nl_put_driver_u32(msg, "cc_alpha", READ_ONCE(rp->alpha)) ||
	    rdma_nl_put_driver_u64(msg, "cc_cnp_handled",
				   READ_ONCE(rp->cnp_handled)))
		return -EMSGSIZE;
	return 0;
}
