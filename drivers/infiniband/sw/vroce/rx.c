// SPDX-License-Identifier: GPL-2.0
/*
 * Receive: find the device a RoCE packet arrived for, validate the packet
 * and hand it to the transport.
 *
 * RoCEv2 datagrams come from the per-namespace UDP socket (net.c) with
 * skb->data at the UDP header; RoCEv1 frames from a packet_type handler
 * for ethertype 0x8915 with skb->data at the GRH. Both run in softirq
 * context under rcu_read_lock().
 *
 * Device lookup and lifetime: skb->dev is the netdev the packet arrived on.
 * The device is the vroce device bound to it or, for an upper device (VLAN,
 * macvlan, ipvlan, bond), bound to one of its lower devices in the same
 * network namespace (vroce_rx_find_dev()): the walk down the lower devices
 * stops at a namespace boundary. Neither receive hook is per namespace in
 * itself (the RoCEv1 handler sees every namespace's frames, and an upper
 * device in one namespace may sit on a lower device of another), so this
 * is what keeps a frame that arrived in one namespace away from the
 * devices and QPs of another. ib_device_get_by_netdev()
 * finds it in ib_core's RCU netdev table and takes a registration reference
 * (ib_device_try_get()) that is dropped with ib_device_put() before the
 * handler returns; ib_unregister_device() waits for that reference, so the
 * device and its counters stay valid while a packet is being processed,
 * and a device that is being unregistered gets no new packets. The device
 * is checked to be ours (its dealloc_driver) because rdma_rxe shares the
 * driver id. A frame the device sent to itself (internal
 * loopback, or the copy of a multicast frame for its own group members) is
 * not looked up: vroce_tx() hands over the sending device, which its
 * caller keeps alive (a QP's task: the device outlives its QPs; a debugfs
 * injection: a registration reference). Such a frame may still arrive
 * while the device is being unregistered, for QPs that are not destroyed
 * yet; vroce_qp_get() finds none once they are.
 *
 * Validation, in this order, every failure counted once and dropped:
 *  1. the packet holds a BTH and an ICRC, lengths agree with the UDP length
 *     or the GRH payload length, GRH version 6 and next header BTH
 *     (rcvd_malformed);
 *  2. the ICRC (rx_icrc_encapsulated): a corrupted packet is counted as
 *     corrupted whatever its corrupted headers say;
 *  3. BTH TVer 0 (rcvd_tver_err);
 *  4. an opcode vroce knows (rcvd_opcode_err);
 *  5. extension headers, pad and payload fit the opcode (rcvd_malformed);
 *  6. the default P_Key, full or limited member (rcvd_pkey_err).
 * A packet that passes counts in rcvd_pkts/rcvd_bytes and is demultiplexed
 * by BTH.DestQP to its QP's receive queue (vroce_qp_rx(), which drops a
 * payload longer than the QP's path MTU, before queueing, as malformed),
 * or, for DestQP
 * 0xFFFFFF, by its destination address to the QPs attached to that
 * multicast group (vroce_mcast_rx()).
 *
 * A frame this device sent to itself (internal loopback, handed over by
 * vroce_rx_loopback()) never was on a wire and is read only here: it has
 * no Ethernet header, no IPv4 header checksum, no pad and no ICRC (tx.c),
 * so its payload needs no alignment and step 2 is skipped, and a length
 * field of 0 in it stands for the skb's length (a frame of more than
 * 64 KiB).
 */

#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <linux/ipv6.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>

#include "counters.h"
#include "device.h"
#include "icrc.h"
#include "grh.h"
#include "mcast.h"
#include "opcode.h"
#include "pkt.h"
#include "qp.h"
#include "rx.h"

/**
 * struct vroce_rx_pkt - a received packet being validated
 * @vdev: the device it arrived for
 * @type: its framing
 * @l3: its GRH or IP header
 * @bth: its BTH
 * @roce_len: bytes from the BTH through the ICRC (loopback: the payload)
 * @op: its opcode, once known
 * @paylen: payload bytes without pad, once known
 * @loopback: sent by this device to itself: never on a wire, no pad and
 *	no ICRC
 * @run: for a loopback packet, the run list of the sender's context (the
 *	receiving QP's task runs there next), or NULL
 */
struct vroce_rx_pkt {
	struct vroce_dev *vdev;
	enum vroce_net_type type;
	const u8 *l3;
	const struct vroce_bth *bth;
	unsigned int roce_len;
	const struct vroce_opcode_info *op;
	unsigned int paylen;
	bool loopback;
	struct vroce_run_list *run;
};

static struct vroce_dev *vroce_rx_dev_get(struct net_device *ndev)
{
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_netdev(ndev, RDMA_DRIVER_RXE);
	if (!ibdev)
		return NULL;
	if (ibdev->ops.dealloc_driver != vroce_dev_dealloc) {
		ib_device_put(ibdev);
		return NULL;
	}
	return to_vdev(ibdev);
}

/*
 * The device bound to @ndev, or to one of its lower devices (VLAN, macvlan,
 * ipvlan, bond), looked for depth first without leaving @ndev's namespace:
 * a lower device in another namespace, and whatever is below it, is not
 * looked at. An upper device moved into a container's namespace thus
 * never reaches the device of the namespace it came from, and each
 * namespace sees only its own devices and QPs. Context: rcu_read_lock().
 * Return: the device with a reference (ib_device_put()), or NULL.
 */
static struct vroce_dev *vroce_rx_find_dev(struct net_device *ndev)
{
	struct list_head *iter[MAX_NEST_DEV];
	struct net_device *dev[MAX_NEST_DEV];
	const struct net *net = dev_net(ndev);
	struct vroce_dev *vdev = vroce_rx_dev_get(ndev);
	struct net_device *lower;
	int top = 0;

	dev[0] = ndev;
	iter[0] = &ndev->adj_list.lower;
	while (!vdev && top >= 0) {
		lower = netdev_next_lower_dev_rcu(dev[top], &iter[top]);
		if (!lower) {
			top--;
			continue;
		}
		if (!net_eq(dev_net(lower), net))
			continue;
		vdev = vroce_rx_dev_get(lower);
		if (!vdev && top + 1 < MAX_NEST_DEV) {
			top++;
			dev[top] = lower;
			iter[top] = &lower->adj_list.lower;
		}
	}
	return vdev;
}

static void vroce_rx_count(struct vroce_rx_pkt *pkt, enum vroce_counter idx)
{
	vroce_counter_inc(&pkt->vdev->counters, idx);
}

/* The ICRC bytes after the pad: none in a loopback frame. */
static unsigned int vroce_rx_icrc_len(const struct vroce_rx_pkt *pkt)
{
	return pkt->loopback ? 0 : VROCE_ICRC_BYTES;
}

/* A 16-bit length field: 0 in a loopback frame stands for @len (tx.c). */
static bool vroce_rx_len16_ok(const struct vroce_rx_pkt *pkt,
			      unsigned int field, unsigned int len)
{
	return field == len || (pkt->loopback && !field && len > U16_MAX);
}

static bool vroce_rx_icrc_ok(const struct vroce_rx_pkt *pkt)
{
	const u8 *end = (const u8 *)pkt->bth + pkt->roce_len;
	__le32 wire;

	memcpy(&wire, end - VROCE_ICRC_BYTES, sizeof(wire));
	return le32_to_cpu(wire) ==
	       vroce_icrc(pkt->type, pkt->l3, end - VROCE_ICRC_BYTES - pkt->l3);
}

/* Extension headers, pad and payload against the opcode. */
static bool vroce_rx_lengths_ok(struct vroce_rx_pkt *pkt)
{
	unsigned int body = pkt->roce_len - VROCE_BTH_BYTES -
			    vroce_rx_icrc_len(pkt);
	unsigned int pad = vroce_bth_pad(pkt->bth);
	unsigned int rest;

	if (body < vroce_opcode_hdr_len(pkt->op))
		return false;
	rest = body - vroce_opcode_hdr_len(pkt->op);
	if (rest && !(pkt->op->flags & VROCE_OP_PAYLOAD))
		return false;
	if ((!pkt->loopback && rest % VROCE_PAD_ALIGN) || pad > rest)
		return false;
	pkt->paylen = rest - pad;
	return true;
}

static bool vroce_rx_pkey_ok(const struct vroce_bth *bth)
{
	u16 pkey = ntohs(bth->pkey);

	return (pkey & VROCE_PKEY_KEY_MASK) ==
	       (VROCE_DEFAULT_PKEY & VROCE_PKEY_KEY_MASK);
}

/* Congestion experienced: CE in the IP ECN field (RoCEv2 only). */
static bool vroce_rx_ce(const struct vroce_rx_pkt *pkt)
{
	if (pkt->type == VROCE_NET_V2_IPV4)
		return INET_ECN_is_ce(((const struct iphdr *)pkt->l3)->tos);
	if (pkt->type == VROCE_NET_V2_IPV6)
		return INET_ECN_is_ce(ipv6_get_dsfield((const struct ipv6hdr *)
						       pkt->l3));
	return false;
}

/* The destination address as a GID: IPv4-mapped, IPv6 or the GRH's DGID. */
static void vroce_rx_dgid(const struct vroce_rx_pkt *pkt, union ib_gid *dgid)
{
	if (pkt->type == VROCE_NET_V2_IPV4)
		ipv6_addr_set_v4mapped(((const struct iphdr *)pkt->l3)->daddr,
				       (struct in6_addr *)dgid->raw);
	else if (pkt->type == VROCE_NET_V2_IPV6)
		memcpy(dgid->raw, &((const struct ipv6hdr *)pkt->l3)->daddr,
		       sizeof(dgid->raw));
	else
		memcpy(dgid->raw, ((const struct vroce_grh *)pkt->l3)->dgid,
		       sizeof(dgid->raw));
}

/*
 * Hand the packet to the QP named by BTH.DestQP, or for the multicast QPN
 * to the QPs of its group; their tasks (task.c) do the rest. A packet for
 * no QP counts in rcvd_no_qp (a CNP also in rp_cnp_ignored) and is
 * dropped.
 */
static void vroce_rx_demux(struct vroce_rx_pkt *pkt, struct sk_buff *skb)
{
	struct vroce_rx_cb *cb = vroce_rx_cb(skb);
	u32 dqpn = vroce_bth_dqpn(pkt->bth);
	struct vroce_qp *qp = NULL;
	union ib_gid dgid;

	/* A CNP names the QP that sent the flow, never a group. */
	if (dqpn != VROCE_QPN_MCAST || pkt->bth->opcode == VROCE_OPCODE_CNP) {
		qp = vroce_qp_get(pkt->vdev, dqpn);
		if (!qp) {
			vroce_rx_count(pkt, VROCE_CNT_RCVD_NO_QP);
			if (pkt->bth->opcode == VROCE_OPCODE_CNP)
				vroce_rx_count(pkt, VROCE_CNT_RP_CNP_IGNORED);
			kfree_skb(skb);
			return;
		}
	}
	cb->bth_off = (const u8 *)pkt->bth - skb->data;
	cb->paylen = pkt->paylen;
	cb->net_type = pkt->type;
	cb->ce = vroce_rx_ce(pkt);
	cb->loopback = pkt->loopback;
	cb->vlan_id = is_vlan_dev(skb->dev) ? vlan_dev_vlan_id(skb->dev) :
					      VROCE_RX_NO_VLAN;
	if (qp) {
		vroce_qp_rx(qp, skb, pkt->run);
		return;
	}
	vroce_rx_dgid(pkt, &dgid);
	vroce_mcast_rx(pkt->vdev, &dgid, skb);
}

/* Steps 2-6 of the validation, then the demux. Consumes @skb. */
static void vroce_rx_roce(struct vroce_rx_pkt *pkt, struct sk_buff *skb)
{
	enum vroce_counter err;

	if (!pkt->loopback && !vroce_rx_icrc_ok(pkt)) {
		err = VROCE_CNT_RX_ICRC_ERR;
		goto drop;
	}
	if (vroce_bth_tver(pkt->bth) != VROCE_BTH_TVER) {
		err = VROCE_CNT_RCVD_TVER_ERR;
		goto drop;
	}
	pkt->op = vroce_opcode(pkt->bth->opcode);
	if (!pkt->op) {
		err = VROCE_CNT_RCVD_OPCODE_ERR;
		goto drop;
	}
	if (!vroce_rx_lengths_ok(pkt)) {
		err = VROCE_CNT_RCVD_MALFORMED;
		goto drop;
	}
	if (!vroce_rx_pkey_ok(pkt->bth)) {
		err = VROCE_CNT_RCVD_PKEY_ERR;
		goto drop;
	}

	vroce_rx_count(pkt, VROCE_CNT_RCVD_PKTS);
	vroce_counter_add(&pkt->vdev->counters, VROCE_CNT_RCVD_BYTES,
			  (const u8 *)pkt->bth + pkt->roce_len - pkt->l3);
	vroce_rx_demux(pkt, skb);
	return;

drop:
	vroce_rx_count(pkt, err);
	kfree_skb(skb);
}

/* RoCEv2: skb->data is at the UDP header; the UDP stack checked its length. */
static bool vroce_rx_v2_frame(struct vroce_rx_pkt *pkt, struct sk_buff *skb)
{
	const struct udphdr *udph = (const struct udphdr *)skb->data;
	unsigned int l3_len = skb->data - skb_network_header(skb);

	pkt->type = skb->protocol == htons(ETH_P_IP) ? VROCE_NET_V2_IPV4 :
						       VROCE_NET_V2_IPV6;
	/* The ICRC covers a plain IPv6 header: extension headers don't fit it. */
	if (pkt->type == VROCE_NET_V2_IPV6 && l3_len != sizeof(struct ipv6hdr))
		return false;
	if (skb->len < sizeof(*udph) + VROCE_BTH_BYTES +
		       vroce_rx_icrc_len(pkt) ||
	    !vroce_rx_len16_ok(pkt, ntohs(udph->len), skb->len))
		return false;
	pkt->l3 = skb_network_header(skb);
	pkt->bth = (const struct vroce_bth *)(udph + 1);
	pkt->roce_len = skb->len - sizeof(*udph);
	return true;
}

/*
 * Linearize, parse the framing with @frame, validate and demultiplex.
 * Consumes @skb.
 */
static void vroce_rx_pkt(struct vroce_rx_pkt *pkt, struct sk_buff *skb,
			 bool (*frame)(struct vroce_rx_pkt *pkt,
				       struct sk_buff *skb))
{
	/*
	 * A loopback frame has its headers in the linear area and may have
	 * its payload in the sender's pages (tx.c, vroce_pkt_walk_payload()).
	 */
	if (!pkt->loopback && skb_linearize(skb)) {
		kfree_skb(skb);
	} else if (!frame(pkt, skb)) {
		vroce_rx_count(pkt, VROCE_CNT_RCVD_MALFORMED);
		kfree_skb(skb);
	} else {
		vroce_rx_roce(pkt, skb);
	}
}

/* Find the device by skb->dev, then vroce_rx_pkt(). Consumes @skb. */
static void vroce_rx_skb(struct sk_buff *skb,
			 bool (*frame)(struct vroce_rx_pkt *pkt,
				       struct sk_buff *skb),
			 struct vroce_run_list *run)
{
	struct vroce_rx_pkt pkt = { .run = run };

	rcu_read_lock();
	pkt.vdev = vroce_rx_find_dev(skb->dev);
	rcu_read_unlock();
	if (!pkt.vdev) {
		kfree_skb(skb);
		return;
	}
	vroce_rx_pkt(&pkt, skb, frame);
	ib_device_put(&pkt.vdev->ibdev);
}

/**
 * vroce_rx_v2 - receive a RoCEv2 datagram
 * @skb: the datagram, skb->data at its UDP header; consumed
 *
 * Context: softirq (the UDP tunnel socket's encap_rcv).
 */
void vroce_rx_v2(struct sk_buff *skb)
{
	vroce_rx_skb(skb, vroce_rx_v2_frame, NULL);
}

/* RoCEv1: skb->data is at the GRH; trailing Ethernet padding is allowed. */
static bool vroce_rx_v1_frame(struct vroce_rx_pkt *pkt, struct sk_buff *skb)
{
	const struct vroce_grh *grh = (const struct vroce_grh *)skb->data;
	unsigned int paylen;

	if (skb->len < VROCE_GRH_BYTES + VROCE_BTH_BYTES +
		       vroce_rx_icrc_len(pkt))
		return false;
	paylen = ntohs(grh->paylen);
	if (vroce_rx_len16_ok(pkt, paylen, skb->len - VROCE_GRH_BYTES))
		paylen = skb->len - VROCE_GRH_BYTES;
	if (vroce_grh_ver(grh) != VROCE_GRH_IPVER ||
	    grh->next_hdr != VROCE_GRH_NEXT_HDR_BTH ||
	    paylen < VROCE_BTH_BYTES + vroce_rx_icrc_len(pkt) ||
	    paylen > skb->len - VROCE_GRH_BYTES)
		return false;
	pkt->type = VROCE_NET_V1;
	pkt->l3 = skb->data;
	pkt->bth = (const struct vroce_bth *)(grh + 1);
	pkt->roce_len = paylen;
	return true;
}

static int vroce_rx_v1(struct sk_buff *skb, struct net_device *ndev,
		       struct packet_type *pt, struct net_device *orig_dev)
{
	if (skb->pkt_type == PACKET_OTHERHOST) {
		kfree_skb(skb);
		return NET_RX_DROP;
	}
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return NET_RX_DROP;
	vroce_rx_skb(skb, vroce_rx_v1_frame, NULL);
	return NET_RX_SUCCESS;
}

/*
 * Parse and validate a frame built by vroce_tx(), skb->data at its L3
 * header, for @pkt's device. Consumes @skb.
 */
static void vroce_rx_local(struct vroce_rx_pkt *pkt, struct sk_buff *skb)
{
	skb->pkt_type = PACKET_HOST;
	if (skb->protocol == htons(ETH_P_IBOE)) {
		vroce_rx_pkt(pkt, skb, vroce_rx_v1_frame);
	} else {
		__skb_pull(skb, skb_transport_offset(skb));
		vroce_rx_pkt(pkt, skb, vroce_rx_v2_frame);
	}
}

/**
 * vroce_rx_loopback - receive a frame vroce sent to its own device
 * @vdev: the device that sent it, which receives it
 * @skb: a frame built by vroce_tx() for its own netdev's MAC address,
 *	skb->data at its L3 header (it has no Ethernet header), network and
 *	transport headers set; consumed
 * @run: the run list of the sending task's context, or NULL
 *
 * The frame does not go through the netdev or the IP stack (which would
 * drop a packet from one of its own addresses as a martian). It never
 * leaves memory, so nothing can corrupt it: it has no Ethernet header, no
 * IPv4 header checksum, no pad and no ICRC (and a zero IPv6 UDP checksum),
 * as a NIC's internal loopback does not serialize a packet, and may be
 * longer than any wire frame (VROCE_LOOP_PAYLOAD). The sender is the
 * receiver, as in a NIC: no lookup by netdev, and no device reference
 * either, as the sending QP's task holds the device.
 * The receive path only queues it for a QP's task, so this does not
 * recurse into the transmit path; the task runs next in the sender's
 * context when @run has room (vroce_qp_rx()), or on the workqueue.
 *
 * Context: process or softirq; runs the receive path with BHs disabled.
 */
void vroce_rx_loopback(struct vroce_dev *vdev, struct sk_buff *skb,
		       struct vroce_run_list *run)
{
	struct vroce_rx_pkt pkt = {
		.vdev = vdev, .loopback = true, .run = run,
	};

	local_bh_disable();
	vroce_rx_local(&pkt, skb);
	local_bh_enable();
}

/**
 * vroce_rx_self - receive a copy of a frame this device sent to a wire
 * @vdev: the device that sent it, which receives it
 * @skb: the copy (a multicast frame for this device's own group members),
 *	skb->data at its Ethernet header; consumed
 * @run: the run list of the sending task's context, or NULL
 *
 * The frame is whole, ICRC included, and is validated as one from a wire.
 *
 * Context: as vroce_rx_loopback().
 */
void vroce_rx_self(struct vroce_dev *vdev, struct sk_buff *skb,
		   struct vroce_run_list *run)
{
	struct vroce_rx_pkt pkt = { .vdev = vdev, .run = run };

	__skb_pull(skb, skb_network_offset(skb));
	local_bh_disable();
	vroce_rx_local(&pkt, skb);
	local_bh_enable();
}

static struct packet_type vroce_rx_v1_ptype = {
	.type = cpu_to_be16(ETH_P_IBOE),
	.func = vroce_rx_v1,
};

/*
 * Start receiving RoCEv1 frames, on every netdev of every namespace; each
 * goes to a device of the namespace it arrived in only (vroce_rx_find_dev()).
 */
void vroce_rx_init(void)
{
	dev_add_pack(&vroce_rx_v1_ptype);
}

/* Stop receiving RoCEv1 frames; returns once no handler runs any more. */
void vroce_rx_exit(void)
{
	dev_remove_pack(&vroce_rx_v1_ptype);
}
