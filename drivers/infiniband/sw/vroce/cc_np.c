// SPDX-License-Identifier: GPL-2.0
/*
 * The notification point (NP) of a QP: a RoCEv2 packet that arrives with
 * CE in its IP ECN field makes the QP send a CNP to the QP that sent it
 * (IBTA Annex A17): BTH opcode 0x81, BECN set, DestQP the sender's QP,
 * PSN 0, 16 zero bytes, the ICRC; IP DSCP np_cnp_dscp, priority np_cnp_prio
 * (skb->priority), ECN bits as for data packets of that priority. At most
 * one CNP per QP per np_min_time_between_cnps (vroce_np_should_send_cnp()).
 *
 * The receive path notes CE in the packet's vroce_rx_cb (softirq, rx.c);
 * the QP's task calls vroce_cc_np_rx() before handling the packet, so the
 * NP state needs no lock and the CNP is sent from process context.
 *
 * Where the CNP goes: the QP's destination (its address vector and
 * dest_qp_num), so RC and UC QPs send CNPs. A UD QP counts its CE packets
 * and sends none: vroce's congestion control is per connected QP. Its UD
 * sender adds no ECN bits (the AH's traffic class goes out as given) and
 * is not paced, so a CNP would throttle nothing of vroce's.
 *
 * Counters: np_ecn_marked_roce_packets (CE packets on a priority whose NP
 * is enabled), np_cnp_sent.
 */

#include <linux/ktime.h>
#include <net/inet_ecn.h>

#include "cc.h"
#include "counters.h"
#include "device.h"
#include "opcode.h"
#include "qp.h"
#include "rx.h"
#include "tx.h"
#include "vroce_trace.h"

/* The priority a received packet is judged on: RC/UC the QP's, UD its own. */
static u8 vroce_cc_np_prio(struct vroce_qp *qp, struct sk_buff *skb)
{
	if (qp->ibqp.qp_type == IB_QPT_RC || qp->ibqp.qp_type == IB_QPT_UC)
		return qp->cc.prio;
	return skb->priority & 7;
}

/**
 * vroce_cc_np_send - send a CNP for @qp unless one went out too recently
 * @qp: the QP that received the CE-marked packet
 * @pi: the CNP's addressing, as vroce_xport_pkt_init() fills it in for the
 *	QP's peer; the rest is set here
 *
 * Context: the QP's task (process context).
 */
static void vroce_cc_np_send(struct vroce_qp *qp, struct vroce_pkt_info *pi)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);
	const struct vroce_cc_params *p = &vdev->cc.params;
	u8 dscp = READ_ONCE(p->np_cnp_dscp), prio = READ_ONCE(p->np_cnp_prio);

	if (!vroce_np_should_send_cnp(&qp->cc.np, p, ktime_get_ns()))
		return;
	pi->opcode = VROCE_OPCODE_CNP;
	pi->traffic_class = dscp << 2 | vroce_cc_ecn(vdev, prio);
	pi->sl = prio;
	pi->becn = true;
	pi->se = false;
	pi->ackreq = false;
	pi->pkey = VROCE_DEFAULT_PKEY;
	pi->psn = 0;
	memset(&pi->ext, 0, sizeof(pi->ext));
	pi->paylen = 0;
	pi->fill = NULL;
	if (vroce_tx(vdev, pi, GFP_KERNEL))
		return;
	vroce_counter_inc(&vdev->counters, VROCE_CNT_NP_CNP_SENT);
	trace_vroce_cnp_sent(&vdev->ibdev, qp->ibqp.qp_num, pi->dqpn, prio,
			     dscp);
}

/**
 * vroce_cc_np_rx - a packet with CE arrived for @qp
 * @qp: the QP it is addressed to
 * @skb: the packet (vroce_rx_cb(skb)->ce set); not consumed
 *
 * Context: the QP's task.
 */
void vroce_cc_np_rx(struct vroce_qp *qp, struct sk_buff *skb)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);
	struct vroce_pkt_info pi;

	if (!vroce_cc_np_enabled(vdev, vroce_cc_np_prio(qp, skb)))
		return;
	vroce_counter_inc(&vdev->counters, VROCE_CNT_NP_ECN_MARKED);
	if ((qp->ibqp.qp_type != IB_QPT_RC && qp->ibqp.qp_type != IB_QPT_UC) ||
	    !qp->av.sgid_attr)
		return;
	vroce_xport_pkt_init(qp, &pi, VROCE_OPCODE_CNP, 0);
	vroce_cc_np_send(qp, &pi);
}
