/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_TX_H
#define _VROCE_TX_H

#include <linux/if_ether.h>
#include <linux/sizes.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>

#include "pkt.h"

struct page;
struct sk_buff;
struct vroce_run_list;

struct vroce_dev;
struct vroce_qp;

/**
 * struct vroce_ext_hdrs - extension header values, in wire format; the
 * opcode decides which of them are sent, in enum vroce_ext_hdr order
 */
struct vroce_ext_hdrs {
	struct vroce_deth deth;
	struct vroce_feth feth;
	struct vroce_reth reth;
	struct vroce_aeth aeth;
	struct vroce_atmack atmack;
	struct vroce_atmeth atmeth;
	struct vroce_immdt immdt;
	struct vroce_ieth ieth;
};

/**
 * struct vroce_pkt_info - everything needed to send one packet
 * @sgid_attr: the source GID; its type (RoCEv1, RoCEv2 over IPv4 or IPv6)
 *             selects the framing and its netdev (the bound netdev or a
 *             VLAN upper of it) sends the frame. The caller holds it.
 * @dgid: the destination GID (an IPv4-mapped GID for RoCEv2 over IPv4)
 * @dmac: the destination MAC, resolved by the caller (from the AH)
 * @traffic_class: GRH/IPv6 traffic class or IPv4 TOS (DSCP << 2 | ECN)
 * @hop_limit: GRH/IPv6 hop limit or IPv4 TTL
 * @flow_label: GRH/IPv6 flow label (20 bits); also picks the UDP source port
 * @sl: service level; the low 3 bits become skb->priority
 * @opcode: the BTH opcode; must be in vroce_opcodes[]
 * @se: BTH solicited event
 * @ackreq: BTH AckReq
 * @becn: BTH BECN
 * @pkey: BTH P_Key
 * @sqpn: the source QP number (UDP source port when @flow_label is 0)
 * @dqpn: BTH DestQP
 * @psn: BTH PSN
 * @ext: extension header values
 * @paylen: payload bytes, without pad
 * @fill: writes the next @len payload bytes to @dst; returns 0 or a negative
 *        errno. Called once for all @paylen bytes, or for a loopback frame
 *        of more than a page, once per page, the pieces in order
 *        (tx.c). After an error, nothing more is asked of it.
 * @frags: optional, for a frame that loops back: attaches the @paylen
 *         payload bytes to @skb as page fragments (one reference each)
 *         instead of @fill copying them; returns 0, -EAGAIN to have @fill
 *         called instead (nothing attached, nothing consumed), or a
 *         negative errno
 * @fill_ctx: argument of @fill and @frags
 * @skb_cache: optional, the sender's slot for an skb that its
 *	       loopback frames reuse (vroce_tx_reuse()); only the sender
 *	       touches it, under its own serialization (a QP's task_mutex, or
 *	       its req_mutex in a solo run of its requester, req.c)
 * @run: for a frame that loops back, the run list of the sending task's
 *	 context (the receiver's task runs there next), or NULL
 */
struct vroce_pkt_info {
	const struct ib_gid_attr *sgid_attr;
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u8 traffic_class;
	u8 hop_limit;
	u32 flow_label;
	u8 sl;

	u8 opcode;
	bool se;
	bool ackreq;
	bool becn;
	u16 pkey;
	u32 sqpn;
	u32 dqpn;
	u32 psn;
	struct vroce_ext_hdrs ext;

	u32 paylen;
	int (*fill)(void *fill_ctx, void *dst, u32 len);
	int (*frags)(void *fill_ctx, struct sk_buff *skb, u32 len);
	void *fill_ctx;

	struct sk_buff **skb_cache;
	struct vroce_run_list *run;
};

/* tx.c APIs: */
void vroce_tx_add_frag(void *arg, struct page *page, u32 off, u32 len);
void vroce_tx_cache_free(struct sk_buff **skb_cache);

/*
 * The least payload a frame takes as page fragments (@pi->frags): below
 * it, copying costs less than referencing the pages and mapping them on
 * the receive side.
 */
#define VROCE_TX_FRAGS_MIN	1024

/*
 * The page fragments @pi->frags may add: all of them, a loopback frame has
 * no pad or ICRC after its payload (vroce_rx_loopback()).
 */
#define VROCE_TX_FRAGS_MAX	MAX_SKB_FRAGS

/*
 * The most payload a frame carries: a loopback frame's (below,
 * VROCE_LOOP_PAYLOAD); a frame to a wire is bounded by the netdev's MTU.
 */
#define VROCE_TX_PAYLOAD_MAX	SZ_64K
/*
 * Internal loopback (a destination on the sending device, tx.c): a run of
 * packets of one message goes out as one ONLY, FIRST, MIDDLE or LAST frame
 * carrying up to this much payload, whole path MTUs (an ONLY or LAST
 * frame's last may be short), which the responder executes as that many
 * PSNs. So a message of up to 64 KiB is one frame. The frame never
 * reaches a wire; what bounds it is the skb's page fragments, which hold
 * its payload (the sender's pages, or order-0 pages it was copied to):
 * 64 KiB at any page offset takes 17 fragments with 4 KiB pages
 * (MAX_SKB_FRAGS is at least 17), and a loopback frame has no pad or ICRC
 * after it. Per frame costs (an skb, headers, a receive step) dominated at
 * 12 KiB frames.
 */
#define VROCE_LOOP_PAYLOAD	VROCE_TX_PAYLOAD_MAX

bool vroce_tx_is_loopback(const struct ib_gid_attr *attr, const u8 *dmac);
int vroce_tx(struct vroce_dev *vdev, const struct vroce_pkt_info *pi,
	     gfp_t gfp);

/* pkt.c: the payload of the next frame a QP sends (internal loopback). */
u32 vroce_loop_pkt_len(struct vroce_qp *qp, u32 left, u32 mtu,
		       u32 in_run);

#endif /* _VROCE_TX_H */
