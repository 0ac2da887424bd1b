// SPDX-License-Identifier: GPL-2.0
/*
 * Transmit: build a whole RoCE frame and hand it to the netdev, as a NIC
 * that owns its port does.
 *
 * The frame is Ethernet (written by the netdev's header_ops, so a VLAN
 * netdev adds its tag), then either the GRH (RoCEv1, ethertype 0x8915) or
 * IPv4/IPv6 and UDP to port 4791 (RoCEv2), then the BTH, the extension
 * headers the opcode calls for, the payload, the pad to 4 bytes and the
 * ICRC. The host IP stack does not route it: the destination MAC comes
 * from the caller (the address handle) and the frame goes out through
 * dev_queue_xmit() on the source GID's netdev, or, if it is addressed to
 * that netdev's own MAC address (a destination on this device), is
 * handed to the receive path directly (vroce_rx_loopback()). A multicast
 * frame goes out and, when this device has QPs attached to its group, a
 * clone goes to the receive path too: the netdev never returns a frame to
 * its sender, and a NIC delivers multicast to its own attached QPs.
 *
 * The frame is linear, its payload written by @pi->fill, except that a
 * loopback frame may take its payload as page fragments (@pi->frags: an
 * RC requester's pinned user pages, see req.c), and that a loopback frame
 * of more than a page that is copied gets its payload in order-0 pages.
 * A loopback frame never reaches a wire, and only the receive path of this
 * device reads it (vroce_rx_loopback()): it has no Ethernet header, no
 * IPv4 header checksum, and no pad and no ICRC after its payload, so all
 * MAX_SKB_FRAGS fragments can hold payload, and it may carry up to
 * VROCE_TX_PAYLOAD_MAX bytes of it: an IP, UDP or GRH length field that
 * cannot hold its length is 0, as in a BIG TCP or jumbogram packet
 * (RFC 2675), and the receive path takes the skb's length instead.
 *
 * IPv4 gets DF, TOS = traffic class, TTL = hop limit, an IP ID from
 * __ip_select_ident() (0 in a loopback frame, which no wire or other host
 * sees) and a UDP checksum of 0 (allowed for IPv4 and sent by
 * rdma_rxe and hardware). IPv6 gets traffic class, flow label and hop limit
 * and a computed UDP checksum: RFC 8200 forbids a zero UDP checksum over
 * IPv6 outside of tunnels that opted in, and receivers (Linux included)
 * drop such datagrams unless they opted in too.
 *
 * skb->priority is the SL's low 3 bits, or when the SL is 0 what the IP
 * stack gives a socket with the traffic class as its ToS
 * (vroce_cc_prio()); a CNP's is its SL (np_cnp_prio). A VLAN egress-qos-map then sets
 * the PCP and mqprio/DCB on the lower device picks the traffic class. The
 * DSCP is traffic_class >> 2 by construction of the TOS byte.
 *
 * Context: any context that may call dev_queue_xmit() (process or softirq,
 * not hard irq); @gfp must suit it. The caller holds @pi->sgid_attr; the
 * netdev is held from lookup until the frame is queued.
 *
 * Lifetime: every page fragment holds a page reference, dropped when the
 * skb is freed, so a frame may outlive the MR its payload came from.
 */

#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>

#include "counters.h"
#include "device.h"
#include "icrc.h"
#include "mcast.h"
#include "net.h"
#include "grh.h"
#include "opcode.h"
#include "rx.h"
#include "tx.h"

/* Sizes of the frame being built. */
struct vroce_tx_layout {
	enum vroce_net_type type;
	unsigned int l3_len;	/* GRH, IPv4 or IPv6 header */
	unsigned int udp_len;	/* 0 or 8 */
	unsigned int roce_len;	/* BTH through ICRC (loopback: payload) */
	unsigned int pad;	/* to 4 bytes; 0 in a loopback frame */
	unsigned int trailer;	/* pad and ICRC; 0 in a loopback frame */
	bool loopback;		/* to the netdev's own MAC address */
};

static int vroce_tx_net_type(const struct ib_gid_attr *attr,
			     enum vroce_net_type *type)
{
	switch (rdma_gid_attr_network_type(attr)) {
	case RDMA_NETWORK_ROCE_V1:
		*type = VROCE_NET_V1;
		return 0;
	case RDMA_NETWORK_IPV4:
		*type = VROCE_NET_V2_IPV4;
		return 0;
	case RDMA_NETWORK_IPV6:
		*type = VROCE_NET_V2_IPV6;
		return 0;
	default:
		return -EINVAL;
	}
}

/* Internal loopback: a destination MAC address that is @ndev's own. */
static bool vroce_tx_to_self(const struct net_device *ndev, const u8 *dmac)
{
	return ether_addr_equal(dmac, ndev->dev_addr);
}

static int vroce_tx_layout(const struct vroce_pkt_info *pi,
			   struct net_device *ndev, struct vroce_tx_layout *lo)
{
	const struct vroce_opcode_info *op = vroce_opcode(pi->opcode);
	int err;

	if (!op)
		return -EINVAL;
	if (pi->paylen && (!(op->flags & VROCE_OP_PAYLOAD) || !pi->fill))
		return -EINVAL;
	/* No frame can be this big: keeps the sums below from overflowing. */
	if (pi->paylen > VROCE_TX_PAYLOAD_MAX)
		return -EMSGSIZE;
	err = vroce_tx_net_type(pi->sgid_attr, &lo->type);
	if (err)
		return err;

	lo->loopback = vroce_tx_to_self(ndev, pi->dmac);
	lo->pad = lo->loopback ? 0 : -pi->paylen & (VROCE_PAD_ALIGN - 1);
	lo->trailer = lo->loopback ? 0 : lo->pad + VROCE_ICRC_BYTES;
	lo->roce_len = VROCE_BTH_BYTES + vroce_opcode_hdr_len(op) +
		       pi->paylen + lo->trailer;
	lo->udp_len = lo->type == VROCE_NET_V1 ? 0 : sizeof(struct udphdr);
	lo->l3_len = lo->type == VROCE_NET_V2_IPV4 ? sizeof(struct iphdr) :
						     sizeof(struct ipv6hdr);
	return 0;
}

static unsigned int vroce_tx_l3_total(const struct vroce_tx_layout *lo)
{
	return lo->l3_len + lo->udp_len + lo->roce_len;
}

/* A 16-bit length field: 0 if @len does not fit (only a loopback frame). */
static __be16 vroce_tx_len16(unsigned int len)
{
	return htons(len > U16_MAX ? 0 : len);
}

static void vroce_tx_grh(void *p, const struct vroce_pkt_info *pi,
			 const struct vroce_tx_layout *lo)
{
	struct vroce_grh *grh = p;

	grh->vtf = vroce_grh_vtf(pi->traffic_class, pi->flow_label);
	grh->paylen = vroce_tx_len16(lo->roce_len);
	grh->next_hdr = VROCE_GRH_NEXT_HDR_BTH;
	grh->hop_limit = pi->hop_limit;
	memcpy(grh->sgid, pi->sgid_attr->gid.raw, sizeof(grh->sgid));
	memcpy(grh->dgid, pi->dgid.raw, sizeof(grh->dgid));
}

static void vroce_tx_ipv4(void *p, struct net_device *ndev,
			  const struct vroce_pkt_info *pi,
			  const struct vroce_tx_layout *lo)
{
	struct iphdr *iph = p;

	iph->version = 4;
	iph->ihl = sizeof(*iph) / 4;
	iph->tos = pi->traffic_class;
	iph->tot_len = vroce_tx_len16(vroce_tx_l3_total(lo));
	iph->frag_off = htons(IP_DF);
	iph->ttl = pi->hop_limit;
	iph->protocol = IPPROTO_UDP;
	memcpy(&iph->saddr, pi->sgid_attr->gid.raw + 12, sizeof(iph->saddr));
	memcpy(&iph->daddr, pi->dgid.raw + 12, sizeof(iph->daddr));
	/*
	 * DF: any ID will do (RFC 6864). Only a wire frame pays for one and
	 * for a header checksum: nothing checks a loopback frame's.
	 */
	if (lo->loopback) {
		iph->id = 0;
		iph->check = 0;
		return;
	}
	__ip_select_ident(dev_net(ndev), iph, 1);
	ip_send_check(iph);
}

static void vroce_tx_ipv6(void *p, const struct vroce_pkt_info *pi,
			  const struct vroce_tx_layout *lo)
{
	struct ipv6hdr *ip6h = p;

	ip6_flow_hdr(ip6h, pi->traffic_class,
		     cpu_to_be32(pi->flow_label & VROCE_GRH_FLOW));
	ip6h->payload_len = vroce_tx_len16(lo->udp_len + lo->roce_len);
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = pi->hop_limit;
	memcpy(&ip6h->saddr, pi->sgid_attr->gid.raw, sizeof(ip6h->saddr));
	memcpy(&ip6h->daddr, pi->dgid.raw, sizeof(ip6h->daddr));
}

static void vroce_tx_udp(void *p, const struct vroce_pkt_info *pi,
			 const struct vroce_tx_layout *lo)
{
	struct udphdr *udph = p;

	udph->source = htons(rdma_get_udp_sport(pi->flow_label, pi->sqpn,
						pi->dqpn));
	udph->dest = htons(VROCE_ROCE_V2_UDP_PORT);
	udph->len = vroce_tx_len16(lo->udp_len + lo->roce_len);
	udph->check = 0;
}

/* Called last, once the ICRC is in place: the checksum covers it. */
static void vroce_tx_udp6_csum(struct ipv6hdr *ip6h, struct udphdr *udph)
{
	unsigned int len = ntohs(udph->len);
	__wsum csum = csum_partial(udph, len, 0);

	udph->check = csum_ipv6_magic(&ip6h->saddr, &ip6h->daddr, len,
				      IPPROTO_UDP, csum);
	if (!udph->check)
		udph->check = CSUM_MANGLED_0;
}

static void *vroce_tx_bth(void *p, const struct vroce_pkt_info *pi,
			  const struct vroce_tx_layout *lo)
{
	struct vroce_bth *bth = p;

	bth->opcode = pi->opcode;
	bth->flags = (pi->se ? VROCE_BTH_SE : 0) |
		     FIELD_PREP(VROCE_BTH_PADCNT, lo->pad) |
		     FIELD_PREP(VROCE_BTH_TVER_MASK, VROCE_BTH_TVER);
	bth->pkey = htons(pi->pkey);
	bth->qpn = cpu_to_be32((pi->becn ? VROCE_BTH_BECN : 0) |
			       (pi->dqpn & VROCE_BTH_DESTQP));
	bth->apsn = cpu_to_be32((pi->ackreq ? VROCE_BTH_ACKREQ : 0) |
				(pi->psn & VROCE_BTH_PSN));
	return bth + 1;
}

static const void *vroce_tx_ext_src(const struct vroce_ext_hdrs *ext,
				    enum vroce_ext_hdr hdr)
{
	switch (hdr) {
	case VROCE_HDR_DETH:
		return &ext->deth;
	case VROCE_HDR_FETH:
		return &ext->feth;
	case VROCE_HDR_RETH:
		return &ext->reth;
	case VROCE_HDR_AETH:
		return &ext->aeth;
	case VROCE_HDR_ATMACK:
		return &ext->atmack;
	case VROCE_HDR_ATMETH:
		return &ext->atmeth;
	case VROCE_HDR_IMMDT:
		return &ext->immdt;
	case VROCE_HDR_IETH:
		return &ext->ieth;
	default:
		return NULL;	/* the CNP's reserved bytes: zero */
	}
}

static u8 *vroce_tx_ext(u8 *p, const struct vroce_pkt_info *pi)
{
	unsigned long hdrs = vroce_opcode(pi->opcode)->hdrs;
	unsigned int bit, len;
	const void *src;

	for_each_set_bit(bit, &hdrs, VROCE_HDR_NUM) {
		len = vroce_ext_hdr_len(BIT(bit));
		src = vroce_tx_ext_src(&pi->ext, BIT(bit));
		if (src)
			memcpy(p, src, len);
		else
			memset(p, 0, len);
		p += len;
	}
	return p;
}

/* Write L3 through the extension headers at @l3; returns where they end. */
static u8 *vroce_tx_headers(u8 *l3, struct net_device *ndev,
			    const struct vroce_pkt_info *pi,
			    const struct vroce_tx_layout *lo)
{
	u8 *p = l3 + lo->l3_len + lo->udp_len;

	if (lo->type == VROCE_NET_V1)
		vroce_tx_grh(l3, pi, lo);
	else if (lo->type == VROCE_NET_V2_IPV4)
		vroce_tx_ipv4(l3, ndev, pi, lo);
	else
		vroce_tx_ipv6(l3, pi, lo);
	if (lo->udp_len)
		vroce_tx_udp(l3 + lo->l3_len, pi, lo);
	return vroce_tx_ext(vroce_tx_bth(p, pi, lo), pi);
}

/* Bytes of the frame's L3 header through its last extension header. */
static unsigned int vroce_tx_hdrs_len(const struct vroce_pkt_info *pi,
				      const struct vroce_tx_layout *lo)
{
	return vroce_tx_l3_total(lo) - pi->paylen - lo->trailer;
}

/*
 * Write L3 through ICRC at @l3; the skb holds vroce_tx_l3_total() bytes
 * there. A frame that loops back (@lo->loopback) never reaches a wire: it
 * ends with its payload, and its IPv6 UDP checksum stays zero (see
 * vroce_rx_loopback()).
 */
static int vroce_tx_build(u8 *l3, struct net_device *ndev,
			  const struct vroce_pkt_info *pi,
			  const struct vroce_tx_layout *lo)
{
	u8 *p = vroce_tx_headers(l3, ndev, pi, lo);
	__le32 icrc;
	int err;

	if (pi->paylen) {
		err = pi->fill(pi->fill_ctx, p, pi->paylen);
		if (err)
			return err;
		p += pi->paylen;
	}
	if (lo->loopback)
		return 0;
	memset(p, 0, lo->pad);
	p += lo->pad;
	icrc = cpu_to_le32(vroce_icrc(lo->type, l3, p - l3));
	memcpy(p, &icrc, sizeof(icrc));

	if (lo->type == VROCE_NET_V2_IPV6)
		vroce_tx_udp6_csum((struct ipv6hdr *)l3,
				   (struct udphdr *)(l3 + lo->l3_len));
	return 0;
}

static __be16 vroce_tx_proto(enum vroce_net_type type)
{
	if (type == VROCE_NET_V1)
		return htons(ETH_P_IBOE);
	return htons(type == VROCE_NET_V2_IPV4 ? ETH_P_IP : ETH_P_IPV6);
}

/* A CNP's SL is np_cnp_prio; other packets map SL and traffic class. */
static u32 vroce_tx_prio(const struct vroce_pkt_info *pi)
{
	if (pi->opcode == VROCE_OPCODE_CNP)
		return pi->sl & 7;
	return vroce_cc_prio(pi->sl, pi->traffic_class);
}

/*
 * The skb cache: a sender's loopback frames reuse one skb.
 *
 * A frame to a QP of the same device is read and freed by its receiver
 * before its sender's next one, most of the time (the run list, task.c),
 * so each request and each ACK of a message stream would allocate and
 * free an skb and its head. Instead the sender's slot keeps a reference
 * on the skb of its last loopback frame: once the receiver has freed the
 * frame (kfree_skb() and consume_skb() drop only its reference), the
 * slot's is the only one left, and the skb is emptied for the next frame:
 * the page fragments of a frame whose payload is in pages (its headers
 * fit the cached head) are released then (vroce_tx_release_frags()), so
 * the slot keeps them until the QP's next frame or its destruction. A
 * frame while the last is still in flight, or one whose headers and
 * payload do not fit the head, gets an skb of its own.
 *
 * Only a loopback frame is cached. It never reaches a netdev or the IP
 * stack, so its receiver sees an skb that no one else has touched, and
 * reads it (skb_shared() is true while the slot holds it): the receive
 * path changes only its data pointer, length, pkt_type and cb, which the
 * next frame sets anew. A receiver that clones it (a frame to the
 * multicast QPN, a paged frame at a QP that must make it linear) makes
 * the skb leave the cache.
 */
#define VROCE_TX_CACHE_BYTES SKB_WITH_OVERHEAD(1024)

/*
 * Drop the page fragments of a cached skb's last frame, the references
 * vroce_tx_add_frag() took (its receiver has dropped its skb reference).
 */
static void vroce_tx_release_frags(struct sk_buff *skb)
{
	struct skb_shared_info *shinfo = skb_shinfo(skb);
	unsigned int i;

	for (i = 0; i < shinfo->nr_frags; i++)
		put_page(skb_frag_page(&shinfo->frags[i]));
	shinfo->nr_frags = 0;
	skb->truesize -= skb->data_len;
	skb->data_len = 0;
}

/* The cached skb, empty, for @size bytes; NULL if it cannot be reused. */
static struct sk_buff *vroce_tx_reuse(struct sk_buff **slot,
				      unsigned int size, gfp_t gfp)
{
	struct sk_buff *skb = *slot;

	if (size > VROCE_TX_CACHE_BYTES)
		return NULL;
	if (!skb) {
		skb = alloc_skb(VROCE_TX_CACHE_BYTES, gfp);
		if (!skb)
			return NULL;
		*slot = skb;
		return skb_get(skb);
	}
	if (refcount_read(&skb->users) != 1)
		return NULL;	/* the last frame is still in flight */
	/* Its receiver's accesses came before its release, as in skb_unref(). */
	smp_rmb();
	if (skb->cloned || skb_has_frag_list(skb)) {
		vroce_tx_cache_free(slot);
		return NULL;
	}
	vroce_tx_release_frags(skb);
	skb->data = skb->head;
	skb_reset_tail_pointer(skb);
	skb->len = 0;
	return skb_get(skb);
}

/**
 * vroce_tx_cache_free - release a sender's cached skb (struct vroce_pkt_info)
 * @skb_cache: the slot; empty afterwards
 *
 * A frame still in flight in the skb keeps it until its receiver is done.
 */
void vroce_tx_cache_free(struct sk_buff **skb_cache)
{
	consume_skb(*skb_cache);
	*skb_cache = NULL;
}

/*
 * An skb with room for @linear bytes from the L3 header on; a short
 * loopback frame's from @cache (or NULL) if it can.
 */
static struct sk_buff *vroce_tx_alloc(struct net_device *ndev,
				      const struct vroce_tx_layout *lo,
				      unsigned int linear, gfp_t gfp,
				      struct sk_buff **cache)
{
	unsigned int size = LL_RESERVED_SPACE(ndev) + linear +
			    ndev->needed_tailroom;
	struct sk_buff *skb = NULL;

	if (cache && lo->loopback)
		skb = vroce_tx_reuse(cache, size, gfp);
	if (!skb)
		skb = alloc_skb(size, gfp);
	if (!skb)
		return NULL;
	skb_reserve(skb, LL_RESERVED_SPACE(ndev));
	skb_reset_network_header(skb);
	skb_set_transport_header(skb, lo->l3_len);
	return skb;
}

/**
 * vroce_tx_add_frag - append a page fragment to a frame being built
 * @arg: the frame (the struct sk_buff * given to @pi->frags), untyped to
 *	 be the @fn of vroce_mr_pages() and vroce_sge_pages()
 * @page: the page; the frame takes a reference on it
 * @off: offset in @page
 * @len: bytes
 */
void vroce_tx_add_frag(void *arg, struct page *page, u32 off, u32 len)
{
	struct sk_buff *skb = arg;

	get_page(page);
	skb_fill_page_desc(skb, skb_shinfo(skb)->nr_frags, page, off, len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
}

/*
 * A loopback frame whose payload is in page fragments: the headers in the
 * linear area, the payload attached by @payload; nothing follows it.
 * Returns @payload's error as an ERR_PTR(), -EAGAIN included.
 */
static struct sk_buff *
vroce_tx_skb_paged(struct net_device *ndev, const struct vroce_pkt_info *pi,
		   const struct vroce_tx_layout *lo, gfp_t gfp,
		   int (*payload)(const struct vroce_pkt_info *pi,
				  struct sk_buff *skb, gfp_t gfp))
{
	unsigned int hdrs = vroce_tx_hdrs_len(pi, lo);
	struct sk_buff *skb;
	int err;

	skb = vroce_tx_alloc(ndev, lo, hdrs, gfp, pi->skb_cache);
	if (!skb)
		return ERR_PTR(-ENOMEM);
	vroce_tx_headers(skb_put(skb, hdrs), ndev, pi, lo);
	err = payload(pi, skb, gfp);
	if (err) {
		kfree_skb(skb);
		return ERR_PTR(err);
	}
	return skb;
}

/* The payload stays in the sender's pages (@pi->frags; -EAGAIN: declined). */
static int vroce_tx_frags_payload(const struct vroce_pkt_info *pi,
				  struct sk_buff *skb, gfp_t gfp)
{
	return pi->frags(pi->fill_ctx, skb, pi->paylen);
}

/*
 * More than a page of payload that @pi->fill copies: into order-0 pages
 * that @pi->fill writes one after the other, so no frame needs a
 * high-order allocation, whatever VROCE_LOOP_PAYLOAD is.
 */
static int vroce_tx_pages_payload(const struct vroce_pkt_info *pi,
				  struct sk_buff *skb, gfp_t gfp)
{
	u32 left = pi->paylen, len;
	struct page *page;
	void *va;
	int err;

	if (DIV_ROUND_UP(left, PAGE_SIZE) > VROCE_TX_FRAGS_MAX)
		return -EMSGSIZE;
	for (; left; left -= len) {
		len = min_t(u32, left, PAGE_SIZE);
		page = alloc_page(gfp);
		if (!page)
			return -ENOMEM;
		va = kmap_local_page(page);
		err = pi->fill(pi->fill_ctx, va, len);
		kunmap_local(va);
		/* The frame takes its reference; the allocation's goes. */
		vroce_tx_add_frag(skb, page, 0, len);
		put_page(page);
		if (err)
			return err;
	}
	return 0;
}

/* The whole frame in the linear area, the payload written by @pi->fill. */
static struct sk_buff *vroce_tx_skb_linear(struct net_device *ndev,
					   const struct vroce_pkt_info *pi,
					   const struct vroce_tx_layout *lo,
					   gfp_t gfp)
{
	unsigned int len = vroce_tx_l3_total(lo);
	struct sk_buff *skb;
	int err;

	skb = vroce_tx_alloc(ndev, lo, len, gfp, pi->skb_cache);
	if (!skb)
		return ERR_PTR(-ENOMEM);
	err = vroce_tx_build(skb_put(skb, len), ndev, pi, lo);
	if (err) {
		kfree_skb(skb);
		return ERR_PTR(err);
	}
	return skb;
}

static struct sk_buff *vroce_tx_skb(struct net_device *ndev,
				    const struct vroce_pkt_info *pi,
				    struct vroce_tx_layout *lo, gfp_t gfp)
{
	unsigned int len = vroce_tx_l3_total(lo);
	struct sk_buff *skb = ERR_PTR(-EAGAIN);

	/* A loopback frame is bounded by its sender (VROCE_LOOP_PAYLOAD). */
	if (!lo->loopback && len > READ_ONCE(ndev->mtu))
		return ERR_PTR(-EMSGSIZE);

	if (lo->loopback && pi->frags && pi->paylen)
		skb = vroce_tx_skb_paged(ndev, pi, lo, gfp,
					 vroce_tx_frags_payload);
	if (skb == ERR_PTR(-EAGAIN) && lo->loopback && pi->paylen > PAGE_SIZE)
		skb = vroce_tx_skb_paged(ndev, pi, lo, gfp,
					 vroce_tx_pages_payload);
	if (skb == ERR_PTR(-EAGAIN))
		skb = vroce_tx_skb_linear(ndev, pi, lo, gfp);
	if (IS_ERR(skb))
		return skb;

	skb->dev = ndev;
	skb->protocol = vroce_tx_proto(lo->type);
	skb->priority = vroce_tx_prio(pi);
	skb->ip_summed = CHECKSUM_NONE;
	/* A loopback frame's Ethernet header would be read by nothing. */
	if (!lo->loopback &&
	    dev_hard_header(skb, ndev, ntohs(skb->protocol), pi->dmac, NULL,
			    len) < 0) {
		kfree_skb(skb);
		return ERR_PTR(-EINVAL);
	}
	return skb;
}

static struct net_device *vroce_tx_netdev(const struct ib_gid_attr *attr)
{
	struct net_device *ndev;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (IS_ERR(ndev))
		ndev = NULL;
	else
		dev_hold(ndev);
	rcu_read_unlock();
	return ndev;
}

/**
 * vroce_tx_is_loopback - would a frame to @dmac from @attr loop back?
 * @attr: the source GID
 * @dmac: the destination MAC address
 *
 * Return: true if @dmac is the MAC address of @attr's netdev, so that
 * vroce_tx() hands the frame to this device's receive path.
 */
bool vroce_tx_is_loopback(const struct ib_gid_attr *attr, const u8 *dmac)
{
	struct net_device *ndev;
	bool loop = false;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	if (!IS_ERR(ndev))
		loop = vroce_tx_to_self(ndev, dmac);
	rcu_read_unlock();
	return loop;
}

/* A multicast frame for this device's own members of the group too. */
static void vroce_tx_mcast_loop(struct vroce_dev *vdev,
				const struct vroce_pkt_info *pi,
				struct sk_buff *skb, gfp_t gfp)
{
	struct sk_buff *clone;

	if (!is_multicast_ether_addr(pi->dmac) ||
	    !vroce_mcast_has_group(vdev, &pi->dgid))
		return;
	clone = skb_clone(skb, gfp);
	if (clone)
		vroce_rx_self(vdev, clone, pi->run);
}

/**
 * vroce_tx - build and send one RoCE packet
 * @vdev: the sending device, whose counters are updated and which
 *	receives what it sends to itself; the caller keeps it alive
 * @pi: what to send; see struct vroce_pkt_info
 * @gfp: allocation flags for the skb
 *
 * Return: 0 once the netdev accepted the frame, or a negative errno:
 * -EINVAL for an unknown opcode, payload on an opcode without one or a GID
 * of an unusable type, -EMSGSIZE if the frame exceeds the netdev MTU,
 * -ENODEV if the GID's netdev is gone, -ENOMEM, -ENOBUFS if the netdev
 * dropped it, or the error of @pi->fill. Failures count in send_err.
 */
int vroce_tx(struct vroce_dev *vdev, const struct vroce_pkt_info *pi,
	     gfp_t gfp)
{
	struct vroce_tx_layout lo;
	struct net_device *ndev;
	struct sk_buff *skb;
	int err;

	ndev = vroce_tx_netdev(pi->sgid_attr);
	if (!ndev) {
		err = -ENODEV;
		goto err_count;
	}
	err = vroce_tx_layout(pi, ndev, &lo);
	if (err)
		goto err_put_ndev;
	skb = vroce_tx_skb(ndev, pi, &lo, gfp);
	if (IS_ERR(skb)) {
		err = PTR_ERR(skb);
		goto err_put_ndev;
	}
	/* A destination on this device: straight to the receive path. */
	if (lo.loopback) {
		vroce_rx_loopback(vdev, skb, pi->run);
		err = NET_XMIT_SUCCESS;
	} else {
		vroce_tx_mcast_loop(vdev, pi, skb, gfp);
		err = dev_queue_xmit(skb);
	}
	/* net_xmit_eval() evaluates its argument twice: no call in it. */
	if (net_xmit_eval(err)) {
		err = -ENOBUFS;
		goto err_put_ndev;
	}
	dev_put(ndev);
	vroce_counter_inc(&vdev->counters, VROCE_CNT_SENT_PKTS);
	vroce_counter_add(&vdev->counters, VROCE_CNT_SENT_BYTES,
			  vroce_tx_l3_total(&lo));
	return 0;

err_put_ndev:
	dev_put(ndev);
err_count:
	vroce_counter_inc(&vdev->counters, VROCE_CNT_SEND_ERR);
	return err;
}
