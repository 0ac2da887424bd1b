/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The receive side: rx.c takes frames off the network, rxq.c queues them
 * for their QP's task and hands them to its roles, pkt.c reads them.
 *
 * Who may call what:
 * - vroce_rx_v2(), vroce_rx_loopback(), vroce_rx_self(): the receive
 *   hooks (softirq) and the transmit path (tx.c, BHs disabled);
 *   vroce_rx_init(), vroce_rx_exit(): module load and unload;
 * - vroce_qp_rx(): rx.c and mcast.c only, with a QP reference it consumes;
 * - vroce_rxq_*(): the QP's task (task_mutex held); vroce_rxq_purge() also
 *   whoever holds the QP unreachable (the table at the top of rxq.c);
 * - vroce_rx_cb(), vroce_rx_bth(), vroce_pkt_*(): the skb's owner: the
 *   receive path until it queues it, then the task that took it.
 */
#ifndef _VROCE_RX_H
#define _VROCE_RX_H

#include <linux/sizes.h>
#include <linux/skbuff.h>

#include "pkt.h"

struct vroce_dev;
struct vroce_qp;
struct vroce_run_list;

/* Received packets a QP queues before its task runs; then drops. */
#define VROCE_RXQ_MAX		4096
/*
 * The skb->truesize of one PSN's share of a queued frame, at most: a
 * linear frame of one packet of the largest path MTU (4 KiB) is an 8 KiB
 * head allocation and a struct sk_buff; a loopback frame of n packets, a
 * head of under 2 KiB and n * 4 KiB of payload in page fragments.
 */
#define VROCE_RXQ_PSN_TRUESIZE	(SZ_8K + SZ_1K)
/*
 * The skb->truesize the packets a QP queues may take in all: 36 MiB. A QP
 * legitimately holds two windows of packets at most (its peer's requests
 * and the responses to its own, as for VROCE_RXQ_MAX), so the loopback
 * window fits whole at any path MTU. This stops what the path MTU check
 * (rxq.c) cannot: reassembled datagrams of a short payload in many IP
 * fragments, each an skb of its own.
 */
#define VROCE_RXQ_BYTES		(VROCE_RXQ_MAX * VROCE_RXQ_PSN_TRUESIZE)
/**
 * struct vroce_rx_cb - what the receive path learned about a packet, kept
 * in skb->cb while it waits in the QP's queue
 * @bth_off: offset of the BTH from skb->data
 * @paylen: payload bytes, without pad and ICRC
 * @net_type: enum vroce_net_type
 * @ce: RoCEv2 with CE in the IP ECN field (congestion experienced)
 * @loopback: sent by this device to itself (vroce_rx_loopback()): an
 *	ONLY, FIRST, MIDDLE or LAST packet may carry several path MTUs
 *	(VROCE_LOOP_PAYLOAD)
 * @vlan_id: the VLAN ID of the VLAN netdev it arrived on, or
 *	VROCE_RX_NO_VLAN (a UD completion's vlan_id, for kernel consumers)
 */
struct vroce_rx_cb {
	u16 bth_off;
	u32 paylen;
	u8 net_type;
	bool ce;
	bool loopback;
	u16 vlan_id;
};

#define VROCE_RX_NO_VLAN 0xffff

static inline struct vroce_rx_cb *vroce_rx_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct vroce_rx_cb) > sizeof(skb->cb));
	return (struct vroce_rx_cb *)skb->cb;
}

static inline struct vroce_bth *vroce_rx_bth(struct sk_buff *skb)
{
	return (struct vroce_bth *)(skb->data + vroce_rx_cb(skb)->bth_off);
}

/* rx.c APIs: */
void vroce_rx_v2(struct sk_buff *skb);
void vroce_rx_loopback(struct vroce_dev *vdev, struct sk_buff *skb,
		       struct vroce_run_list *run);
void vroce_rx_self(struct vroce_dev *vdev, struct sk_buff *skb,
		   struct vroce_run_list *run);
void vroce_rx_init(void);
void vroce_rx_exit(void);

/* rxq.c APIs: */
void vroce_qp_rx(struct vroce_qp *qp, struct sk_buff *skb,
		 struct vroce_run_list *run);
struct sk_buff *vroce_rxq_next(struct vroce_qp *qp);
struct sk_buff *vroce_rxq_peek(struct vroce_qp *qp);
struct sk_buff *vroce_rxq_dequeue(struct vroce_qp *qp);
void vroce_rxq_purge(struct vroce_qp *qp);
void vroce_rxq_dispatch(struct vroce_qp *qp, struct sk_buff *skb);
bool vroce_rxq_may_overtake(struct vroce_qp *qp, struct sk_buff *skb);

/* pkt.c APIs: */
void *vroce_pkt_hdr(struct sk_buff *skb, unsigned int hdr);
void *vroce_pkt_payload(struct sk_buff *skb);
int vroce_pkt_walk_payload(struct sk_buff *skb,
			   int (*copy)(void *arg, void *src, u32 len),
			   void *arg);
u32 vroce_pkt_segs(struct sk_buff *skb, u32 mtu);

#endif /* _VROCE_RX_H */
