// SPDX-License-Identifier: GPL-2.0
/*
 * Packet helpers of the transport: where a received packet's extension
 * headers and payload are (vroce_pkt_hdr(), vroce_pkt_payload()), its
 * payload piece by piece (vroce_pkt_walk_payload()), the packets an
 * internal loopback frame stands for (vroce_pkt_segs()) and how long the
 * next one a QP sends may be (vroce_loop_pkt_len()).
 *
 * Locking: none. A received skb belongs to whoever took it off its QP's
 * receive queue (the QP's task, rxq.c); vroce_loop_pkt_len() reads the
 * QP's address vector, which only modify_qp changes (task_mutex held).
 */

#include <linux/highmem.h>
#include <linux/skbuff.h>

#include "opcode.h"
#include "qp.h"
#include "rx.h"
#include "tx.h"

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
