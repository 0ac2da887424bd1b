// SPDX-License-Identifier: GPL-2.0
/*
 * The datagram transport: UD QPs and the GSI QP (QPN 1, kernel only).
 *
 * Send: each WQE is one packet (UD SEND_ONLY, with or without immediate
 * data) to the address of its AH (wr.ud.ah_num, or the address vector a
 * provider older than ah_num put in wr.ud.av), with a DETH carrying the
 * WR's Q_Key (or the QP's, when the WR's has its high bit set: IBTA's
 * privileged Q_Key rule) and the QP's number. The payload must fit the
 * port's MTU (UD has no path MTU attribute), else the WQE completes with
 * IB_WC_LOC_LEN_ERR. A WQE completes once its packet is handed to the
 * netdev: UD is unreliable, a frame the netdev drops is a lost datagram.
 * Any WQE error moves the QP to ERR, as rdma_rxe does. A datagram to a
 * multicast DGID goes to the group's MAC (ah.c) with DestQP 0xFFFFFF,
 * whatever the WR's remote QPN, and reaches this device's QPs attached to
 * the group too (tx.c, mcast.c).
 *
 * Receive: the DETH Q_Key must equal the QP's (QPN 1: the GSI Q_Key
 * 0x80010000), else the packet is counted (rcvd_qkey_err) and dropped;
 * the P_Key is checked by the receive path (rx.c). Each datagram takes a
 * receive WQE (none: counted in out_of_buffer and dropped); its first 40
 * bytes get the packet's network header, as verbs define the GRH area:
 * the GRH (RoCEv1), the IPv6 header (RoCEv2 over IPv6), or 20 zero bytes
 * then the IPv4 header (RoCEv2 over IPv4, as rdma_rxe and mlx5 place it);
 * the payload follows. A datagram that does not fit the WQE is dropped
 * and counted (resp_local_length_error) and the WQE is kept for the next
 * one (IBTA class D). The completion has the source QP from the DETH,
 * IB_WC_GRH, and for kernel consumers (the MAD layer, ib_cm) the network
 * header type and, if it came in on a VLAN netdev, its VLAN ID, from which
 * ib_core builds the reply's AH (the GID of that VLAN netdev).
 *
 * Context: the QP's task (task.c), which owns req and resp state.
 */

#include <linux/ip.h>
#include <rdma/ib_addr.h>

#include "ah.h"
#include "comp.h"
#include "counters.h"
#include "cq.h"
#include "device.h"
#include "mcast.h"
#include "opcode.h"
#include "qp.h"
#include "rx.h"
#include "tx.h"
#include "ud.h"

#define VROCE_QPN_GSI 1

static void vroce_ud_count(struct vroce_qp *qp, enum vroce_counter idx)
{
	vroce_counter_inc(&to_vdev(qp->ibqp.device)->counters, idx);
}

/* The port MTU in bytes (what query_port reports as active_mtu). */
static u32 vroce_ud_mtu(struct vroce_qp *qp)
{
	enum ib_mtu mtu =
		iboe_get_mtu(READ_ONCE(to_vdev(qp->ibqp.device)->ndev->mtu));

	return mtu ? ib_mtu_enum_to_int(min(mtu, IB_MTU_4096)) : 0;
}

static int vroce_ud_av(struct vroce_qp *qp, const struct rxe_send_wqe *wqe,
		       struct vroce_ah_av *av)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);

	if (wqe->wr.wr.ud.ah_num)
		return vroce_ah_av_get(vdev, qp->ibqp.pd, wqe->wr.wr.ud.ah_num,
				       av);
	if (!qp->is_user)
		return -EINVAL;
	return vroce_ah_av_from_user(vdev, &wqe->wr.wr.ud.av, av);
}

struct vroce_ud_fill_ctx {
	struct vroce_qp *qp;
	u32 slot;
	bool inl;
	struct vroce_sge_cursor cur;
	int err;
};

static int vroce_ud_fill(void *arg, void *dst, u32 len)
{
	struct vroce_ud_fill_ctx *ctx = arg;
	struct rxe_send_wqe *ring = vroce_queue_elem(&ctx->qp->sq.queue,
						     ctx->slot);

	if (ctx->inl) {
		/* len is the checked length, at most max_inline. */
		memcpy(dst, ring->dma.inline_data, len);
		return 0;
	}
	ctx->err = vroce_sge_copy(&ctx->cur, dst, len, VROCE_COPY_FROM_MR);
	return ctx->err;
}

static void vroce_ud_pkt(struct vroce_qp *qp, const struct rxe_send_wqe *wqe,
			 struct vroce_pkt_info *pi)
{
	u32 qkey = wqe->wr.wr.ud.remote_qkey;

	if (qkey & VROCE_QKEY_PRIVILEGED)
		qkey = qp->attr.qkey;
	pi->opcode = wqe->wr.opcode == IB_WR_SEND_WITH_IMM ?
		     IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE :
		     IB_OPCODE_UD_SEND_ONLY;
	pi->se = wqe->wr.send_flags & IB_SEND_SOLICITED;
	pi->pkey = VROCE_DEFAULT_PKEY;
	pi->sqpn = qp->ibqp.qp_num;
	pi->dqpn = wqe->wr.wr.ud.remote_qpn & VROCE_QPN_MASK;
	/* Set by vroce_ah_av_to_pkt(): a group is addressed as QP 0xFFFFFF. */
	if (rdma_is_multicast_addr((struct in6_addr *)pi->dgid.raw))
		pi->dqpn = VROCE_QPN_MCAST;
	pi->psn = qp->req.psn;
	qp->req.psn = vroce_psn_add(qp->req.psn, 1);
	pi->ext.deth.qkey = cpu_to_be32(qkey);
	pi->ext.deth.sqpn = cpu_to_be32(qp->ibqp.qp_num & VROCE_DETH_SQPN);
	pi->ext.immdt.imm = wqe->wr.ex.imm_data;
	pi->paylen = wqe->dma.length;
}

/* Send the WQE at @slot. Return: its completion status. */
static enum ib_wc_status vroce_ud_send(struct vroce_qp *qp, u32 slot,
				       const struct rxe_send_wqe *wqe)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);
	struct vroce_ud_fill_ctx ctx = {
		.qp = qp,
		.slot = slot,
		.inl = wqe->wr.send_flags & IB_SEND_INLINE,
	};
	struct rxe_send_wqe *ring = vroce_queue_elem(&qp->sq.queue, slot);
	struct vroce_pkt_info pi = {};
	struct vroce_ah_av av;
	int err;

	if (wqe->dma.length > vroce_ud_mtu(qp))
		return IB_WC_LOC_LEN_ERR;
	if (vroce_ud_av(qp, wqe, &av))
		return IB_WC_LOC_QP_OP_ERR;
	vroce_ah_av_to_pkt(&av, &pi);
	vroce_ud_pkt(qp, wqe, &pi);
	pi.run = qp->run;
	pi.fill = vroce_ud_fill;
	pi.fill_ctx = &ctx;
	if (!ctx.inl)
		vroce_sge_cursor_init(&ctx.cur, vdev, qp->ibqp.pd, ring->dma.sge,
				      wqe->dma.num_sge, 0);
	err = vroce_tx(vdev, &pi, GFP_KERNEL);
	if (!ctx.inl)
		vroce_sge_cursor_done(&ctx.cur);
	vroce_ah_av_put(&av);

	if (ctx.err)
		return ctx.err == -ENOSPC ? IB_WC_LOC_LEN_ERR :
					    IB_WC_LOC_PROT_ERR;
	/* Too big for the netdev; anything else is a lost datagram. */
	if (err == -EMSGSIZE)
		return IB_WC_LOC_LEN_ERR;
	return IB_WC_SUCCESS;
}

/**
 * vroce_ud_req_step - send the next datagram WQE
 * @qp: a UD or GSI QP in RTS or SQD
 *
 * Return: true if it did something (call again), false if it must wait.
 */
bool vroce_ud_req_step(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	u32 slot = req->next_new;
	struct vroce_swqe *sw = &req->wqes[slot];
	struct rxe_send_wqe wqe;
	int err;

	lockdep_assert_held(&qp->task_mutex);

	if (READ_ONCE(qp->state) != IB_QPS_RTS || READ_ONCE(qp->sq_draining)) {
		vroce_req_check_drained(qp);
		return false;
	}
	err = vroce_sq_peek(qp, slot, &wqe);
	if (err == -ENOENT)
		return false;

	memset(sw, 0, sizeof(*sw));
	sw->wr = wqe.wr;
	sw->length = wqe.dma.length;
	req->next_new = vroce_sq_next(qp, slot);
	req->idx = req->next_new;
	sw->status = err ? IB_WC_LOC_QP_OP_ERR : vroce_ud_send(qp, slot, &wqe);
	if (sw->status != IB_WC_SUCCESS) {
		vroce_comp_fail_at(qp, slot, sw->status);
		return true;
	}
	sw->done = true;
	vroce_comp_retire(qp);
	return true;
}

/* The 40-byte GRH area of a UD receive buffer, from the packet's L3 header. */
static void vroce_ud_grh(struct sk_buff *skb, u8 *grh)
{
	const u8 *l3 = skb_network_header(skb);

	memset(grh, 0, VROCE_GRH_BYTES);
	if (vroce_rx_cb(skb)->net_type == VROCE_NET_V2_IPV4)
		memcpy(grh + VROCE_GRH_BYTES - sizeof(struct iphdr), l3,
		       sizeof(struct iphdr));
	else
		memcpy(grh, l3, VROCE_GRH_BYTES);
}

static enum rdma_network_type vroce_ud_net_type(struct sk_buff *skb)
{
	switch (vroce_rx_cb(skb)->net_type) {
	case VROCE_NET_V2_IPV4:
		return RDMA_NETWORK_IPV4;
	case VROCE_NET_V2_IPV6:
		return RDMA_NETWORK_IPV6;
	default:
		return RDMA_NETWORK_ROCE_V1;
	}
}

static u32 vroce_ud_rwqe_len(const struct rxe_recv_wqe *rwqe)
{
	u64 len = 0;
	u32 i;

	for (i = 0; i < rwqe->dma.num_sge; i++)
		len += rwqe->dma.sge[i].length;
	return min_t(u64, len, U32_MAX);
}

static void vroce_ud_complete(struct vroce_qp *qp, struct sk_buff *skb,
			      enum ib_wc_status status, u32 byte_len)
{
	const struct vroce_bth *bth = vroce_rx_bth(skb);
	const struct vroce_opcode_info *op = vroce_opcode(bth->opcode);
	const struct vroce_deth *deth = vroce_pkt_hdr(skb, VROCE_HDR_DETH);
	struct ib_wc wc = {
		.wr_id = qp->resp.rwqe->wr_id,
		.status = status,
		.opcode = IB_WC_RECV,
		.byte_len = byte_len,
		.qp = &qp->ibqp,
		.src_qp = vroce_deth_sqpn(deth),
		.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE,
		.network_hdr_type = vroce_ud_net_type(skb),
		.port_num = 1,
	};

	if (op->hdrs & VROCE_HDR_IMMDT) {
		wc.wc_flags |= IB_WC_WITH_IMM;
		wc.ex.imm_data = ((struct vroce_immdt *)
				  vroce_pkt_hdr(skb, VROCE_HDR_IMMDT))->imm;
	}
	/* ib_init_ah_attr_from_wc() picks the reply's GID by VLAN. */
	if (vroce_rx_cb(skb)->vlan_id != VROCE_RX_NO_VLAN) {
		wc.wc_flags |= IB_WC_WITH_VLAN;
		wc.vlan_id = vroce_rx_cb(skb)->vlan_id;
	}
	vroce_sge_cursor_done(&qp->resp.cur);
	qp->resp.have_rwqe = false;
	vroce_qp_complete(qp, qp->rcq, &wc, bth->flags & VROCE_BTH_SE);
}

/* Place a datagram that passed the checks into a receive WQE. */
static void vroce_ud_deliver(struct vroce_qp *qp, struct sk_buff *skb)
{
	u32 paylen = vroce_rx_cb(skb)->paylen;
	u8 grh[VROCE_GRH_BYTES];
	int err;

	if (!qp->resp.have_rwqe && vroce_resp_get_rwqe(qp)) {
		vroce_ud_count(qp, VROCE_CNT_OUT_OF_BUFFER);
		return;
	}
	if (paylen + VROCE_GRH_BYTES > vroce_ud_rwqe_len(qp->resp.rwqe)) {
		/* Class D: dropped, the WQE waits for the next datagram. */
		vroce_ud_count(qp, VROCE_CNT_RESP_LOCAL_LENGTH_ERR);
		return;
	}
	vroce_ud_grh(skb, grh);
	err = vroce_sge_copy(&qp->resp.cur, grh, sizeof(grh), VROCE_COPY_TO_MR);
	if (!err && paylen)
		err = vroce_sge_copy(&qp->resp.cur, vroce_pkt_payload(skb),
				     paylen, VROCE_COPY_TO_MR);
	if (err) {
		vroce_ud_complete(qp, skb, IB_WC_LOC_PROT_ERR, 0);
		vroce_qp_error(qp);
		return;
	}
	vroce_ud_complete(qp, skb, IB_WC_SUCCESS, paylen + VROCE_GRH_BYTES);
}

/**
 * vroce_ud_rx - handle a packet for a UD or GSI QP
 * @qp: the QP, in RTR, RTS, SQD or SQE
 * @skb: the validated packet; consumed
 */
void vroce_ud_rx(struct vroce_qp *qp, struct sk_buff *skb)
{
	const struct vroce_opcode_info *op =
		vroce_opcode(vroce_rx_bth(skb)->opcode);
	const struct vroce_deth *deth;
	u32 qkey;

	lockdep_assert_held(&qp->task_mutex);

	if (!(op->qp_types & VROCE_QPT_UD)) {
		vroce_ud_count(qp, VROCE_CNT_RCVD_OPCODE_ERR);
		goto out;
	}
	deth = vroce_pkt_hdr(skb, VROCE_HDR_DETH);
	qkey = qp->ibqp.qp_num == VROCE_QPN_GSI ? VROCE_GSI_QKEY :
						  qp->attr.qkey;
	if (be32_to_cpu(deth->qkey) != qkey) {
		vroce_ud_count(qp, VROCE_CNT_RCVD_QKEY_ERR);
		goto out;
	}
	vroce_ud_deliver(qp, skb);
	consume_skb(skb);
	return;
out:
	kfree_skb(skb);		/* a drop, counted above */
}
