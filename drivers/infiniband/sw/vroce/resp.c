// SPDX-License-Identifier: GPL-2.0
/*
 * The responder: executes the requests of the QP's peer and answers them.
 *
 * A request with the expected PSN (resp.epsn) is executed; an earlier PSN
 * is a duplicate (a SEND or WRITE is acknowledged again, a READ or atomic
 * is answered from the record kept for it, see below); a later PSN means
 * packets were lost: one PSN sequence NAK per gap, and the packet is
 * dropped.
 *
 * SEND: the first packet takes a receive WQE (from the SRQ or the RQ) and
 * copies it out of the ring; no WQE means an RNR NAK with min_rnr_timer
 * (the packet is dropped, the requester retries). The payload is scattered
 * into the WQE's SGEs; the last packet completes it. RDMA WRITE: the first
 * packet's RETH is checked (rkey, range, REMOTE_WRITE), and the payload is
 * written at the RETH address. WRITE with immediate data takes a receive
 * WQE at its last packet, before anything of that packet is written, so an
 * RNR retry of the packet is exact. READ: the RETH is checked, and the
 * responses (path MTU each) are sent by vroce_resp_step() before any later
 * request is looked at. Atomics: 8-byte aligned, REMOTE_ATOMIC; executed
 * with the MR's memory as a 64-bit atomic.
 *
 * Duplicate READs and atomics (IBTA 9.7.5.1.3): each one accepted leaves a
 * record (max_dest_rd_atomic of them, round robin): an atomic's original
 * value, a READ's PSNs and RETH. A duplicate atomic is answered from its
 * record. A duplicate READ is executed again only if its PSN lies in a
 * recorded READ's PSNs and its RETH asks for that READ from that PSN on
 * (the whole READ, or the tail a requester that goes back into it asks
 * for again: rkey the same, address and length moved by the path MTUs
 * before its PSN); the rkey is checked again, as for a new READ. A
 * duplicate READ or atomic that no record covers is dropped and counted
 * (duplicate_request_dropped). A replayed READ replaces the READ whose
 * responses are going out, if any (IBTA allows it): the requester, going
 * back, asks again for that one too, and finds it recorded, since it has
 * no more READs and atomics outstanding than the responder keeps records.
 *
 * An ONLY, FIRST, MIDDLE or LAST packet this device sent to itself (internal
 * loopback, req.c) may carry several path MTUs: it is executed as that
 * many packets, one PSN each (vroce_pkt_segs()); so may READ responses
 * this device sends to itself (vroce_loop_pkt_len()).
 *
 * ACKs are coalesced: a packet with AckReq makes an ACK pending, and the
 * ACK goes out once the queued packets are handled, or before any other
 * response (READ data, atomic ACK, NAK) so responses stay in PSN order.
 *
 * RDMA FLUSH (vroce_resp_rdma_flush()) is answered like an ATOMIC WRITE.
 *
 * The QP's own access flags (qp_access_flags) gate RDMA WRITE, READ,
 * atomics and FLUSH before any rkey is looked at.
 *
 * Errors (IBTA class B/C): invalid request (bad opcode sequence, lengths)
 * and remote access errors NAK the request and move the QP to ERR; a
 * receive WQE that cannot take the message completes with
 * IB_WC_LOC_LEN_ERR (NAK invalid request) or IB_WC_LOC_PROT_ERR (NAK
 * remote operational error).
 *
 * Context: the QP's task (task.c), which owns the state.
 */

#include "compat.h"
#include "counters.h"
#include "cq.h"
#include "device.h"
#include "mr.h"
#include "opcode.h"
#include "qp.h"
#include "query.h"
#include "resp.h"
#include "rx.h"
#include "srq.h"
#include "tx.h"

/* The low five bits of an RC opcode, from include/rdma/ib_pack.h. */
#define VROCE_OPC(x) ((x) & 0x1f)

static void vroce_resp_count(struct vroce_qp *qp, enum vroce_counter idx)
{
	vroce_counter_inc(&to_vdev(qp->ibqp.device)->counters, idx);
}

static u32 vroce_resp_mtu(const struct vroce_qp *qp)
{
	return ib_mtu_enum_to_int(qp->attr.path_mtu);
}

static void vroce_resp_send_ack(struct vroce_qp *qp, u8 opcode, u32 psn,
				u8 syndrome, const struct vroce_atmack *atm)
{
	struct vroce_pkt_info pi;

	vroce_xport_pkt_init(qp, &pi, opcode, psn);
	pi.ext.aeth.smsn = vroce_aeth_pack(syndrome, qp->resp.msn);
	if (atm)
		pi.ext.atmack = *atm;
	vroce_tx(to_vdev(qp->ibqp.device), &pi, GFP_KERNEL);
}

/* Send the coalesced ACK, if one is owed. */
static void vroce_resp_flush_ack(struct vroce_qp *qp)
{
	if (!qp->resp.ack_pending)
		return;
	qp->resp.ack_pending = false;
	vroce_resp_send_ack(qp, IB_OPCODE_RC_ACKNOWLEDGE, qp->resp.ack_psn,
			    VROCE_AETH_ACK_UNLIMITED, NULL);
}

static void vroce_resp_ack_later(struct vroce_qp *qp, u32 psn)
{
	qp->resp.ack_pending = true;
	qp->resp.ack_psn = psn;
}

static void vroce_resp_nak(struct vroce_qp *qp, u32 psn, u8 syndrome)
{
	if (qp->ibqp.qp_type == IB_QPT_UC)
		return;		/* UC answers nothing */
	vroce_resp_flush_ack(qp);
	vroce_resp_count(qp, VROCE_CNT_NAK_SENT);
	vroce_resp_send_ack(qp, IB_OPCODE_RC_ACKNOWLEDGE, psn, syndrome, NULL);
}

static void vroce_resp_complete(struct vroce_qp *qp, enum ib_wc_status status,
				enum ib_wc_opcode opcode, u32 byte_len,
				const struct ib_wc *extra, bool solicited)
{
	struct ib_wc wc = {
		.wr_id = qp->resp.rwqe->wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp = &qp->ibqp,
		.src_qp = qp->attr.dest_qp_num,
		.port_num = 1,
	};

	if (extra) {
		wc.wc_flags = extra->wc_flags;
		wc.ex = extra->ex;
	}
	vroce_sge_cursor_done(&qp->resp.cur);
	qp->resp.have_rwqe = false;
	vroce_qp_complete(qp, qp->rcq, &wc, solicited);
}

static void vroce_resp_put_wmr(struct vroce_qp *qp)
{
	if (qp->resp.wmr)
		vroce_mr_put(qp->resp.wmr);
	qp->resp.wmr = NULL;
}

/*
 * UC: forget the message in progress; a receive WQE it took is kept, from
 * its start, for the next message.
 */
static void vroce_resp_uc_abort(struct vroce_qp *qp)
{
	struct vroce_resp *resp = &qp->resp;

	if (resp->have_rwqe) {
		vroce_sge_cursor_done(&resp->cur);
		vroce_sge_cursor_init(&resp->cur, to_vdev(qp->ibqp.device),
				      qp->ibqp.pd, resp->rwqe->dma.sge,
				      resp->rwqe->dma.num_sge,
				      IB_ACCESS_LOCAL_WRITE);
		resp->rlen = 0;
	}
	vroce_resp_put_wmr(qp);
	resp->msg = VROCE_MSG_NONE;
}

/* A class B/C error: NAK it, complete the receive WQE held, fail the QP. */
static void vroce_resp_error(struct vroce_qp *qp, u32 psn, u8 syndrome,
			     enum ib_wc_status status)
{
	/* UC (IBTA class D): the message is dropped, the QP goes on. */
	if (qp->ibqp.qp_type == IB_QPT_UC && status != IB_WC_LOC_PROT_ERR) {
		if (status == IB_WC_LOC_LEN_ERR)
			vroce_resp_count(qp, VROCE_CNT_RESP_LOCAL_LENGTH_ERR);
		else if (status == IB_WC_REM_ACCESS_ERR)
			vroce_resp_count(qp, VROCE_CNT_RESP_REM_ACCESS_ERR);
		vroce_resp_uc_abort(qp);
		return;
	}
	vroce_resp_nak(qp, psn, syndrome);
	if (syndrome == VROCE_AETH_NAK_REM_ACC_ERR)
		vroce_resp_count(qp, VROCE_CNT_RESP_REM_ACCESS_ERR);
	if (status == IB_WC_LOC_LEN_ERR)
		vroce_resp_count(qp, VROCE_CNT_RESP_LOCAL_LENGTH_ERR);
	if (qp->resp.have_rwqe)
		vroce_resp_complete(qp, status, IB_WC_RECV, qp->resp.rlen,
				    NULL, false);
	vroce_qp_error(qp);
}

static void vroce_resp_srq_event(struct vroce_srq *srq)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	if (srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

/* Take a receive WQE. Return: 0, or -ENOENT if there is none. */
int vroce_resp_get_rwqe(struct vroce_qp *qp)
{
	struct vroce_wq *wq = qp->srq ? &qp->srq->rq : &qp->rq;
	struct rxe_recv_wqe *rwqe = qp->resp.rwqe, *src;
	bool limit = false;
	unsigned long flags;
	u32 num_sge;

	spin_lock_irqsave(&wq->lock, flags);
	vroce_queue_sync(&wq->queue);
	if (vroce_queue_empty(&wq->queue)) {
		spin_unlock_irqrestore(&wq->lock, flags);
		return -ENOENT;
	}
	src = vroce_queue_consumer_addr(&wq->queue);
	memcpy(rwqe, src, sizeof(*rwqe));
	num_sge = min(rwqe->dma.num_sge, wq->max_sge);
	rwqe->dma.num_sge = num_sge;
	memcpy(rwqe->dma.sge, src->dma.sge, num_sge * sizeof(struct rxe_sge));
	vroce_queue_advance_consumer(&wq->queue);
	if (qp->srq && qp->srq->limit &&
	    vroce_queue_count(&wq->queue) < qp->srq->limit) {
		qp->srq->limit = 0;
		limit = true;
	}
	spin_unlock_irqrestore(&wq->lock, flags);

	if (limit)
		vroce_resp_srq_event(qp->srq);
	vroce_sge_cursor_init(&qp->resp.cur, to_vdev(qp->ibqp.device),
			      qp->ibqp.pd, rwqe->dma.sge, num_sge,
			      IB_ACCESS_LOCAL_WRITE);
	qp->resp.have_rwqe = true;
	qp->resp.rlen = 0;
	return 0;
}

/* Make sure a receive WQE is held; RNR NAK if none. Return: 0 or -ENOENT. */
static int vroce_resp_need_rwqe(struct vroce_qp *qp, u32 psn)
{
	if (qp->resp.have_rwqe || !vroce_resp_get_rwqe(qp))
		return 0;
	vroce_resp_count(qp, VROCE_CNT_OUT_OF_BUFFER);
	/* The packets after it are dropped without a sequence NAK. */
	qp->resp.nak_sent = true;
	vroce_resp_nak(qp, psn,
		       VROCE_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1f));
	return -ENOENT;
}

static bool vroce_resp_first(const struct vroce_opcode_info *op)
{
	return op->flags & (VROCE_OP_FIRST | VROCE_OP_ONLY);
}

static bool vroce_resp_last(const struct vroce_opcode_info *op)
{
	return op->flags & (VROCE_OP_LAST | VROCE_OP_ONLY);
}

/*
 * Payload length rules: FIRST and MIDDLE carry exactly the path MTU, LAST
 * and ONLY at most that (@segs of them, see vroce_pkt_segs(); a loopback
 * ONLY or LAST frame of several carries more than @segs - 1 by
 * construction).
 */
static bool vroce_resp_len_ok(struct vroce_qp *qp,
			      const struct vroce_opcode_info *op, u32 paylen,
			      u32 segs)
{
	u32 mtu = vroce_resp_mtu(qp);

	if (op->flags & (VROCE_OP_FIRST | VROCE_OP_MIDDLE))
		return paylen == segs * mtu;
	return paylen <= segs * mtu;
}

static int vroce_resp_send_piece(void *arg, void *src, u32 len)
{
	struct vroce_qp *qp = arg;

	return vroce_sge_copy(&qp->resp.cur, src, len, VROCE_COPY_TO_MR);
}

/* SEND_*: Return: 0, or -EAGAIN if the packet is dropped (RNR, error). */
static int vroce_resp_send(struct vroce_qp *qp, struct sk_buff *skb,
			   const struct vroce_opcode_info *op, u32 psn)
{
	const struct vroce_bth *bth = vroce_rx_bth(skb);
	u32 paylen = vroce_rx_cb(skb)->paylen;
	struct ib_wc extra = {};
	int err;

	if (vroce_resp_need_rwqe(qp, psn))
		return -EAGAIN;
	err = vroce_pkt_walk_payload(skb, vroce_resp_send_piece, qp);
	if (err == -ENOSPC) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
				 IB_WC_LOC_LEN_ERR);
		return -EAGAIN;
	}
	if (err) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_OP_ERR,
				 IB_WC_LOC_PROT_ERR);
		return -EAGAIN;
	}
	qp->resp.rlen += paylen;
	qp->resp.msg = VROCE_MSG_SEND;
	if (!vroce_resp_last(op))
		return 0;

	if (op->hdrs & VROCE_HDR_IMMDT) {
		extra.wc_flags |= IB_WC_WITH_IMM;
		extra.ex.imm_data =
			((struct vroce_immdt *)vroce_pkt_hdr(skb,
							     VROCE_HDR_IMMDT))->imm;
	}
	if (op->hdrs & VROCE_HDR_IETH) {
		u32 rkey = be32_to_cpu(((struct vroce_ieth *)
				vroce_pkt_hdr(skb, VROCE_HDR_IETH))->rkey);

		if (vroce_rkey_invalidate(to_vdev(qp->ibqp.device), &qp->ibqp,
					  rkey)) {
			vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
					 IB_WC_REM_INV_REQ_ERR);
			return -EAGAIN;
		}
		extra.wc_flags |= IB_WC_WITH_INVALIDATE;
		extra.ex.invalidate_rkey = rkey;
	}
	qp->resp.msg = VROCE_MSG_NONE;
	qp->resp.msn++;
	vroce_resp_complete(qp, IB_WC_SUCCESS, IB_WC_RECV, qp->resp.rlen,
			    &extra, bth->flags & VROCE_BTH_SE);
	return 0;
}

/* The QP's own remote access flags gate every RDMA request (IBTA). */
static bool vroce_resp_qp_allows(struct vroce_qp *qp, int access)
{
	return (qp->attr.qp_access_flags & access) == access;
}

/* The RETH of a WRITE's first packet. Return: 0 or -EAGAIN (failed). */
static int vroce_resp_write_start(struct vroce_qp *qp, struct sk_buff *skb,
				  const struct vroce_opcode_info *op, u32 psn)
{
	struct vroce_reth *reth = vroce_pkt_hdr(skb, VROCE_HDR_RETH);
	u32 len = be32_to_cpu(reth->len), paylen = vroce_rx_cb(skb)->paylen;
	u64 va = be64_to_cpu(reth->va);

	vroce_resp_count(qp, VROCE_CNT_RX_WRITE_REQUESTS);
	if ((op->flags & VROCE_OP_ONLY) ? len != paylen : len <= paylen) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EAGAIN;
	}
	vroce_resp_put_wmr(qp);
	if (!vroce_resp_qp_allows(qp, IB_ACCESS_REMOTE_WRITE)) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
		return -EAGAIN;
	}
	if (len) {
		qp->resp.wmr = vroce_rkey_get(to_vdev(qp->ibqp.device),
					      &qp->ibqp, be32_to_cpu(reth->rkey),
					      va, len, IB_ACCESS_REMOTE_WRITE);
		if (!qp->resp.wmr) {
			vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_ACC_ERR,
					 IB_WC_REM_ACCESS_ERR);
			return -EAGAIN;
		}
	}
	qp->resp.wva = va;
	qp->resp.wresid = len;
	qp->resp.wlen = len;
	return 0;
}

/* RDMA_WRITE_*: Return: 0, or -EAGAIN if the packet is dropped. */
struct vroce_resp_write_ctx {
	struct vroce_mr *mr;
	u64 va;
};

static int vroce_resp_write_piece(void *arg, void *src, u32 len)
{
	struct vroce_resp_write_ctx *w = arg;
	int err;

	err = vroce_mr_copy(w->mr, w->va, src, len, VROCE_COPY_TO_MR);
	w->va += len;
	return err;
}

/* The packet's payload to wva: all of it, or nothing if out of the MR. */
static int vroce_resp_write_copy(struct vroce_qp *qp, struct sk_buff *skb,
				 u32 paylen)
{
	struct vroce_resp_write_ctx w = {
		.mr = qp->resp.wmr, .va = qp->resp.wva,
	};

	if (!vroce_mr_range_ok(w.mr, w.va, paylen))
		return -EFAULT;
	return vroce_pkt_walk_payload(skb, vroce_resp_write_piece, &w);
}

static int vroce_resp_write(struct vroce_qp *qp, struct sk_buff *skb,
			    const struct vroce_opcode_info *op, u32 psn)
{
	const struct vroce_bth *bth = vroce_rx_bth(skb);
	u32 paylen = vroce_rx_cb(skb)->paylen;
	bool imm = op->hdrs & VROCE_HDR_IMMDT;
	struct ib_wc extra = {};

	/* Before anything of this packet is applied: RNR retries it whole. */
	if (imm && vroce_resp_need_rwqe(qp, psn))
		return -EAGAIN;
	if (vroce_resp_first(op) && vroce_resp_write_start(qp, skb, op, psn))
		return -EAGAIN;
	if (paylen > qp->resp.wresid ||
	    (vroce_resp_last(op) && paylen != qp->resp.wresid)) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EAGAIN;
	}
	if (paylen && vroce_resp_write_copy(qp, skb, paylen)) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
		return -EAGAIN;
	}
	qp->resp.wva += paylen;
	qp->resp.wresid -= paylen;
	qp->resp.msg = VROCE_MSG_WRITE;
	if (!vroce_resp_last(op))
		return 0;

	vroce_resp_put_wmr(qp);
	qp->resp.msg = VROCE_MSG_NONE;
	qp->resp.msn++;
	if (imm) {
		extra.wc_flags = IB_WC_WITH_IMM;
		extra.ex.imm_data =
			((struct vroce_immdt *)vroce_pkt_hdr(skb,
							     VROCE_HDR_IMMDT))->imm;
		vroce_resp_complete(qp, IB_WC_SUCCESS, IB_WC_RECV_RDMA_WITH_IMM,
				    qp->resp.wlen, &extra,
				    bth->flags & VROCE_BTH_SE);
	}
	return 0;
}

static struct vroce_rd_res *vroce_resp_new_res(struct vroce_qp *qp,
					       bool atomic, u32 psn)
{
	struct vroce_rd_res *res = &qp->resp.res[qp->resp.res_next];

	qp->resp.res_next = (qp->resp.res_next + 1) % qp->resp.nres;
	res->valid = true;
	res->atomic = atomic;
	res->psn = psn;
	res->last_psn = psn;
	return res;
}

/*
 * Start READ responses for @reth at @psn. Return: 0, or -EACCES if the
 * rkey does not allow it.
 */
static int vroce_resp_read_start(struct vroce_qp *qp,
				 const struct vroce_reth *reth, u32 psn)
{
	struct vroce_read_job *rd = &qp->resp.rd;
	u32 len = be32_to_cpu(reth->len);
	u64 va = be64_to_cpu(reth->va);
	struct vroce_mr *mr = NULL;

	if (!vroce_resp_qp_allows(qp, IB_ACCESS_REMOTE_READ))
		return -EACCES;
	if (len) {
		mr = vroce_rkey_get(to_vdev(qp->ibqp.device), &qp->ibqp,
				    be32_to_cpu(reth->rkey), va, len,
				    IB_ACCESS_REMOTE_READ);
		if (!mr)
			return -EACCES;
	}
	if (rd->mr)
		vroce_mr_put(rd->mr);
	rd->mr = mr;
	rd->va = va;
	rd->resid = len;
	rd->psn = psn;
	rd->first = true;
	rd->active = true;
	return 0;
}

static int vroce_resp_read(struct vroce_qp *qp, struct sk_buff *skb, u32 psn)
{
	struct vroce_reth *reth = vroce_pkt_hdr(skb, VROCE_HDR_RETH);
	u32 len = be32_to_cpu(reth->len), pkts;
	struct vroce_rd_res *res;

	vroce_resp_count(qp, VROCE_CNT_RX_READ_REQUESTS);
	if (len > VROCE_MAX_MSG_SIZE) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EAGAIN;
	}
	if (vroce_resp_read_start(qp, reth, psn)) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
		return -EAGAIN;
	}
	/* The READ takes one PSN per response packet. */
	pkts = len ? DIV_ROUND_UP(len, vroce_resp_mtu(qp)) : 1;
	res = vroce_resp_new_res(qp, false, psn);
	res->last_psn = vroce_psn_add(psn, pkts - 1);
	res->va = be64_to_cpu(reth->va);
	res->len = len;
	res->rkey = be32_to_cpu(reth->rkey);
	qp->resp.msn++;
	qp->resp.epsn = vroce_psn_add(qp->resp.epsn, pkts - 1);
	return 0;
}

static void vroce_resp_send_atomic_ack(struct vroce_qp *qp, u32 psn, u64 orig)
{
	struct vroce_atmack atm = { .orig = cpu_to_be64(orig) };

	vroce_resp_flush_ack(qp);
	vroce_resp_send_ack(qp, IB_OPCODE_RC_ATOMIC_ACKNOWLEDGE, psn,
			    VROCE_AETH_ACK_UNLIMITED, &atm);
}

static int vroce_resp_atomic(struct vroce_qp *qp, struct sk_buff *skb,
			     u32 psn)
{
	struct vroce_atmeth *atm = vroce_pkt_hdr(skb, VROCE_HDR_ATMETH);
	bool cmp = vroce_rx_bth(skb)->opcode == IB_OPCODE_RC_COMPARE_SWAP;
	u64 va = be64_to_cpu(atm->va), swap_add = be64_to_cpu(atm->swap_add);
	struct vroce_mr *mr;
	u64 orig;
	int err;

	vroce_resp_count(qp, VROCE_CNT_RX_ATOMIC_REQUESTS);
	if (va & (sizeof(u64) - 1)) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EAGAIN;
	}
	mr = NULL;
	if (vroce_resp_qp_allows(qp, IB_ACCESS_REMOTE_ATOMIC))
		mr = vroce_rkey_get(to_vdev(qp->ibqp.device), &qp->ibqp,
				    be32_to_cpu(atm->rkey), va, sizeof(u64),
				    IB_ACCESS_REMOTE_ATOMIC);
	if (!mr) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
		return -EAGAIN;
	}
	if (cmp)
		err = vroce_mr_atomic(mr, va, VROCE_ATOMIC_CMP_SWP,
				      be64_to_cpu(atm->compare), swap_add,
				      &orig);
	else
		err = vroce_mr_atomic(mr, va, VROCE_ATOMIC_FETCH_ADD, swap_add,
				      0, &orig);
	vroce_mr_put(mr);
	if (err) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
		return -EAGAIN;
	}
	vroce_resp_new_res(qp, true, psn)->orig = orig;
	qp->resp.msn++;
	vroce_resp_send_atomic_ack(qp, psn, orig);
	return 0;
}

/* The answer to an ATOMIC WRITE: an RDMA READ response without payload. */
static void vroce_resp_send_atomic_write_ack(struct vroce_qp *qp, u32 psn)
{
	vroce_resp_flush_ack(qp);
	vroce_resp_send_ack(qp, IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY, psn,
			    VROCE_AETH_ACK_UNLIMITED, NULL);
}

/*
 * The end of an ATOMIC WRITE or a FLUSH, executed with result @err (or
 * not granted: -EACCES): a remote access error NAK, or a responder
 * resource and the empty READ response.
 */
static int vroce_resp_empty_read_done(struct vroce_qp *qp, u32 psn, int err)
{
	if (err) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
		return -EAGAIN;
	}
	vroce_resp_new_res(qp, true, psn);
	qp->resp.msn++;
	vroce_resp_send_atomic_write_ack(qp, psn);
	return 0;
}

/*
 * ATOMIC WRITE (IBTA 1.5 A19): 8 bytes, 8-byte aligned, stored as one
 * under REMOTE_WRITE access. It takes a responder resource like a READ, so
 * a duplicate is answered from its record, not written again.
 */
static int vroce_resp_atomic_write(struct vroce_qp *qp, struct sk_buff *skb,
				   u32 psn)
{
	struct vroce_reth *reth = vroce_pkt_hdr(skb, VROCE_HDR_RETH);
	u64 va = be64_to_cpu(reth->va), value, orig;
	struct vroce_mr *mr = NULL;
	int err;

	vroce_resp_count(qp, VROCE_CNT_RX_ATOMIC_REQUESTS);
	if (be32_to_cpu(reth->len) != sizeof(value) ||
	    vroce_rx_cb(skb)->paylen != sizeof(value) ||
	    va & (sizeof(value) - 1)) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EAGAIN;
	}
	if (vroce_resp_qp_allows(qp, IB_ACCESS_REMOTE_WRITE))
		mr = vroce_rkey_get(to_vdev(qp->ibqp.device), &qp->ibqp,
				    be32_to_cpu(reth->rkey), va, sizeof(value),
				    IB_ACCESS_REMOTE_WRITE);
	if (!mr)
		return vroce_resp_empty_read_done(qp, psn, -EACCES);
	if (skb_copy_bits(skb, (u8 *)vroce_pkt_payload(skb) - skb->data,
			  &value, sizeof(value)))
		return -EAGAIN;	/* cannot be: rx.c checked the length */
	err = vroce_mr_atomic(mr, va, VROCE_ATOMIC_WRITE, value, 0, &orig);
	vroce_mr_put(mr);
	return vroce_resp_empty_read_done(qp, psn, err);
}

/* The access bits a FLUSH's placement types need; 0 if none is valid. */
static int vroce_resp_flush_access(u8 type)
{
	int access = 0;

	if (!VROCE_COMPAT_FLUSH || !type ||
	    (type & ~(VROCE_FLUSH_GLOBAL | VROCE_FLUSH_PERSISTENT)))
		return 0;
	if (type & VROCE_FLUSH_GLOBAL)
		access |= VROCE_COMPAT_ACCESS_FLUSH_GLOBAL;
	if (type & VROCE_FLUSH_PERSISTENT)
		access |= VROCE_COMPAT_ACCESS_FLUSH_PERSISTENT;
	return access;
}

/*
 * The MR a FLUSH covers and the range of it: the RETH's range of the
 * rkey's MR or window, or (selectivity level MR) all of the MR the rkey
 * names; a window's rkey names no MR for that. NULL if not granted.
 */
static struct vroce_mr *vroce_resp_flush_mr(struct vroce_qp *qp,
					    const struct vroce_reth *reth,
					    u8 level, int access, u64 *va,
					    u64 *len)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);
	u32 rkey = be32_to_cpu(reth->rkey);
	struct vroce_mr *mr;

	if (level == VROCE_FLUSH_RANGE) {
		*va = be64_to_cpu(reth->va);
		*len = be32_to_cpu(reth->len);
		return vroce_rkey_get(vdev, &qp->ibqp, rkey, *va, *len, access);
	}
	if (rkey & VROCE_KEY_MW)
		return NULL;
	mr = vroce_mr_get(vdev, rkey, qp->ibqp.pd, access);
	if (mr) {
		*va = READ_ONCE(mr->iova);
		*len = READ_ONCE(mr->length);
	}
	return mr;
}

/*
 * RDMA FLUSH (IBTA 1.5 A19): no payload; the FETH names the placement
 * types (a mask) and the selectivity level. The QP and the rkey must grant
 * the FLUSH access bit of each type asked for. Everything this responder
 * executed before is placed already (it executes in PSN order, and every
 * copy is done when it returns); the flush makes it reach the type
 * (vroce_mr_flush()). Like an ATOMIC WRITE it takes a responder resource
 * and is answered by an RDMA READ response without payload; a duplicate is
 * answered from its record.
 */
static int vroce_resp_rdma_flush(struct vroce_qp *qp, struct sk_buff *skb,
				 u32 psn)
{
	struct vroce_feth *feth = vroce_pkt_hdr(skb, VROCE_HDR_FETH);
	struct vroce_reth *reth = vroce_pkt_hdr(skb, VROCE_HDR_RETH);
	u8 type = vroce_feth_type(feth), level = vroce_feth_level(feth);
	int access = vroce_resp_flush_access(type);
	struct vroce_mr *mr = NULL;
	u64 va, len;
	int err;

	if (!access || level > VROCE_FLUSH_MR || vroce_rx_cb(skb)->paylen) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EAGAIN;
	}
	if (vroce_resp_qp_allows(qp, access))
		mr = vroce_resp_flush_mr(qp, reth, level, access, &va, &len);
	if (!mr)
		return vroce_resp_empty_read_done(qp, psn, -EACCES);
	err = vroce_mr_flush(mr, va, len, type & VROCE_FLUSH_PERSISTENT);
	vroce_mr_put(mr);
	return vroce_resp_empty_read_done(qp, psn, err);
}

/* Does @opcode fit the message in progress (IBTA opcode sequence)? */
static bool vroce_resp_seq_ok(struct vroce_qp *qp,
			      const struct vroce_opcode_info *op, u8 opcode)
{
	u8 opc = VROCE_OPC(opcode);
	bool write = opc >= IB_OPCODE_RDMA_WRITE_FIRST &&
		     opc <= IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE;

	if (qp->resp.msg == VROCE_MSG_NONE)
		return vroce_resp_first(op);
	if (vroce_resp_first(op))
		return false;
	return write == (qp->resp.msg == VROCE_MSG_WRITE);
}

static int vroce_resp_execute(struct vroce_qp *qp, struct sk_buff *skb,
			      const struct vroce_opcode_info *op, u32 psn,
			      u32 segs)
{
	u8 opcode = vroce_rx_bth(skb)->opcode;
	u8 opc = VROCE_OPC(opcode);

	if (!vroce_resp_seq_ok(qp, op, opcode) ||
	    !vroce_resp_len_ok(qp, op, vroce_rx_cb(skb)->paylen, segs)) {
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_INVALID_REQ,
				 IB_WC_REM_INV_REQ_ERR);
		return -EAGAIN;
	}
	if (opc <= IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE ||
	    opc == IB_OPCODE_SEND_LAST_WITH_INVALIDATE ||
	    opc == IB_OPCODE_SEND_ONLY_WITH_INVALIDATE)
		return vroce_resp_send(qp, skb, op, psn);
	if (opc <= IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE)
		return vroce_resp_write(qp, skb, op, psn);
	if (opc == IB_OPCODE_RDMA_READ_REQUEST)
		return vroce_resp_read(qp, skb, psn);
	if (opcode == VROCE_OPCODE_RC_ATOMIC_WRITE)
		return vroce_resp_atomic_write(qp, skb, psn);
	if (opcode == VROCE_OPCODE_RC_FLUSH)
		return vroce_resp_rdma_flush(qp, skb, psn);
	return vroce_resp_atomic(qp, skb, psn);
}

/* The record of the atomic (ATOMIC WRITE, FLUSH) at @psn, if still kept. */
static struct vroce_rd_res *vroce_resp_find_atomic(struct vroce_qp *qp,
						   u32 psn)
{
	u32 i;

	for (i = 0; i < qp->resp.nres; i++) {
		struct vroce_rd_res *res = &qp->resp.res[i];

		if (res->valid && res->atomic && res->psn == psn)
			return res;
	}
	return NULL;
}

/*
 * The record of the READ whose responses include @psn, if @reth asks for
 * it from @psn on: the whole READ at its first PSN, its tail at a later
 * one (a READ resumed in the middle, see req.c).
 */
static struct vroce_rd_res *vroce_resp_find_read(struct vroce_qp *qp,
						 u32 psn,
						 const struct vroce_reth *reth)
{
	u32 i;

	for (i = 0; i < qp->resp.nres; i++) {
		struct vroce_rd_res *res = &qp->resp.res[i];
		u64 skip;

		if (!res->valid || res->atomic ||
		    vroce_psn_cmp(psn, res->psn) < 0 ||
		    vroce_psn_cmp(psn, res->last_psn) > 0)
			continue;
		/* Within res->len: @psn is one of its response PSNs. */
		skip = (u64)((psn - res->psn) & VROCE_PSN_MASK) *
		       vroce_resp_mtu(qp);
		if (be32_to_cpu(reth->rkey) == res->rkey &&
		    be64_to_cpu(reth->va) == res->va + skip &&
		    be32_to_cpu(reth->len) == res->len - skip)
			return res;
	}
	return NULL;
}

/*
 * A duplicate READ: executed again as its record allows, its rkey checked
 * again (it may have been invalidated meanwhile: then a remote access
 * error, as for a new READ); else dropped.
 */
static void vroce_resp_dup_read(struct vroce_qp *qp, struct sk_buff *skb,
				u32 psn)
{
	struct vroce_reth *reth = vroce_pkt_hdr(skb, VROCE_HDR_RETH);

	if (!vroce_resp_find_read(qp, psn, reth)) {
		vroce_resp_count(qp, VROCE_CNT_DUPLICATE_DROPPED);
		return;
	}
	if (vroce_resp_read_start(qp, reth, psn))
		vroce_resp_error(qp, psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
}

static void vroce_resp_duplicate(struct vroce_qp *qp, struct sk_buff *skb,
				 u32 psn)
{
	u8 opcode = vroce_rx_bth(skb)->opcode;
	struct vroce_rd_res *res;

	vroce_resp_count(qp, VROCE_CNT_DUPLICATE_REQUEST);
	switch (opcode) {
	case IB_OPCODE_RC_RDMA_READ_REQUEST:
		vroce_resp_dup_read(qp, skb, psn);
		return;
	case IB_OPCODE_RC_COMPARE_SWAP:
	case IB_OPCODE_RC_FETCH_ADD:
		res = vroce_resp_find_atomic(qp, psn);
		if (res)
			vroce_resp_send_atomic_ack(qp, psn, res->orig);
		else
			vroce_resp_count(qp, VROCE_CNT_DUPLICATE_DROPPED);
		return;
	case VROCE_OPCODE_RC_ATOMIC_WRITE:
	case VROCE_OPCODE_RC_FLUSH:
		if (vroce_resp_find_atomic(qp, psn))
			vroce_resp_send_atomic_write_ack(qp, psn);
		else
			vroce_resp_count(qp, VROCE_CNT_DUPLICATE_DROPPED);
		return;
	default:
		vroce_resp_ack_later(qp, vroce_psn_add(qp->resp.epsn,
						       VROCE_PSN_MASK));
		return;
	}
}

/**
 * vroce_resp_may_overtake - may a request be handled while a READ's
 *	responses are going out?
 * @qp: the QP
 * @skb: the request at the head of the QP's receive queue
 *
 * A duplicate READ (the requester went back) is handled at once: replayed
 * from its record, it replaces the responses in progress; not covered by
 * one, it is dropped and they go on. Anything else waits for them.
 */
bool vroce_resp_may_overtake(struct vroce_qp *qp, struct sk_buff *skb)
{
	const struct vroce_bth *bth = vroce_rx_bth(skb);

	return bth->opcode == IB_OPCODE_RC_RDMA_READ_REQUEST &&
	       vroce_psn_cmp(vroce_bth_psn(bth), qp->resp.epsn) < 0;
}

/*
 * UC: no ACKs, no NAKs, no duplicates. A packet with the expected PSN is
 * executed; a gap (or an error, class D) drops the rest of the current
 * message, and the next first or only packet starts afresh at its PSN
 * (IBTA vol. 1 chapter 9, UC).
 */
static void vroce_resp_uc_rx(struct vroce_qp *qp, struct sk_buff *skb,
			     const struct vroce_opcode_info *op, u32 psn,
			     u32 segs)
{
	struct vroce_resp *resp = &qp->resp;

	if (psn != resp->epsn) {
		vroce_resp_count(qp, VROCE_CNT_OUT_OF_SEQUENCE);
		if (!resp->uc_drop)
			vroce_resp_uc_abort(qp);
		resp->uc_drop = true;
	}
	resp->epsn = vroce_psn_add(psn, segs);
	if (resp->uc_drop) {
		if (!vroce_resp_first(op))
			return;
		resp->uc_drop = false;
	}
	/* Bad opcode sequences too: dropped, not an error on UC. */
	if (vroce_resp_execute(qp, skb, op, psn, segs))
		resp->uc_drop = true;
}

/**
 * vroce_resp_rx - handle a request packet
 * @qp: the QP
 * @skb: the packet; consumed
 */
void vroce_resp_rx(struct vroce_qp *qp, struct sk_buff *skb)
{
	const struct vroce_bth *bth = vroce_rx_bth(skb);
	const struct vroce_opcode_info *op = vroce_opcode(bth->opcode);
	u32 psn = vroce_bth_psn(bth), segs = vroce_pkt_segs(skb, vroce_resp_mtu(qp));
	int diff = vroce_psn_cmp(psn, qp->resp.epsn);

	lockdep_assert_held(&qp->task_mutex);

	if (!qp->resp.comm_est && READ_ONCE(qp->state) == IB_QPS_RTR) {
		qp->resp.comm_est = true;
		vroce_qp_event(qp, IB_EVENT_COMM_EST);
	}
	if (qp->ibqp.qp_type == IB_QPT_UC) {
		vroce_resp_uc_rx(qp, skb, op, psn, segs);
	} else if (diff > 0) {
		vroce_resp_count(qp, VROCE_CNT_OUT_OF_SEQUENCE);
		if (!qp->resp.nak_sent) {
			qp->resp.nak_sent = true;
			vroce_resp_nak(qp, qp->resp.epsn,
				       VROCE_AETH_NAK_PSN_SEQ_ERR);
		}
	} else if (diff < 0) {
		vroce_resp_duplicate(qp, skb, psn);
	} else if (!vroce_resp_execute(qp, skb, op, psn, segs)) {
		qp->resp.nak_sent = false;
		qp->resp.epsn = vroce_psn_add(qp->resp.epsn, segs);
		/* READs, atomics, ATOMIC WRITEs, FLUSHes had their own response. */
		if (vroce_bth_ackreq(bth) &&
		    bth->opcode != IB_OPCODE_RC_RDMA_READ_REQUEST &&
		    bth->opcode != IB_OPCODE_RC_COMPARE_SWAP &&
		    bth->opcode != IB_OPCODE_RC_FETCH_ADD &&
		    bth->opcode != VROCE_OPCODE_RC_ATOMIC_WRITE &&
		    bth->opcode != VROCE_OPCODE_RC_FLUSH)
			vroce_resp_ack_later(qp, vroce_psn_add(psn, segs - 1));
	}
	consume_skb(skb);	/* handled, even if ignored: not a drop */
}

/*
 * Where the next bytes of a READ response come from; @err: a copy failed
 * (the MR went, or an ODP MR's page could not be faulted in).
 */
struct vroce_read_src {
	struct vroce_mr *mr;
	u64 va;
	int err;
};

/* The next @len bytes of the response; tx.c may ask piece by piece. */
static int vroce_resp_read_fill(void *arg, void *dst, u32 len)
{
	struct vroce_read_src *src = arg;
	int err;

	err = vroce_mr_copy(src->mr, src->va, dst, len, VROCE_COPY_FROM_MR);
	src->va += len;
	if (err)
		src->err = err;
	return err;
}

/*
 * A loopback READ response carries the responder's pages: the requester
 * copies from them (one copy), so the memory is read a little later than
 * a real RNIC's DMA would read it, still before the READ completes. The
 * frame's page references keep the pages if the MR goes first.
 */
static int vroce_resp_read_frags(void *arg, struct sk_buff *skb, u32 len)
{
	struct vroce_read_src *src = arg;

	return vroce_mr_pages(src->mr, src->va, len, VROCE_TX_FRAGS_MAX,
			      vroce_tx_add_frag, skb);
}

/* Send the next READ response. */
static void vroce_resp_read_step(struct vroce_qp *qp)
{
	struct vroce_read_job *rd = &qp->resp.rd;
	u32 mtu = vroce_resp_mtu(qp);
	u32 len = vroce_loop_pkt_len(qp, rd->resid, mtu, 0);
	bool last = len == rd->resid;
	struct vroce_read_src src = { .mr = rd->mr, .va = rd->va };
	struct vroce_pkt_info pi;
	u8 opcode;

	/* The MR was deregistered under the READ (mr.c): an access error. */
	if (rd->mr && unlikely(READ_ONCE(rd->mr->dead))) {
		vroce_resp_error(qp, rd->psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
		return;
	}
	if (rd->first)
		opcode = last ? IB_OPCODE_RC_RDMA_READ_RESPONSE_ONLY :
				IB_OPCODE_RC_RDMA_READ_RESPONSE_FIRST;
	else
		opcode = last ? IB_OPCODE_RC_RDMA_READ_RESPONSE_LAST :
				IB_OPCODE_RC_RDMA_READ_RESPONSE_MIDDLE;
	vroce_xport_pkt_init(qp, &pi, opcode, rd->psn);
	pi.ext.aeth.smsn = vroce_aeth_pack(VROCE_AETH_ACK_UNLIMITED,
					   qp->resp.msn);
	pi.paylen = len;
	if (len) {
		pi.fill = vroce_resp_read_fill;
		if (len >= VROCE_TX_FRAGS_MIN)
			pi.frags = vroce_resp_read_frags;
		pi.fill_ctx = &src;
	}
	vroce_tx(to_vdev(qp->ibqp.device), &pi, GFP_KERNEL);
	/* Not sent: the memory could not be read, an access error too. */
	if (unlikely(src.err)) {
		vroce_resp_error(qp, rd->psn, VROCE_AETH_NAK_REM_ACC_ERR,
				 IB_WC_REM_ACCESS_ERR);
		return;
	}

	rd->va += len;
	rd->resid -= len;
	rd->psn = vroce_psn_add(rd->psn, DIV_ROUND_UP(len, mtu) ?: 1);
	rd->first = false;
	if (last) {
		rd->active = false;
		if (rd->mr)
			vroce_mr_put(rd->mr);
		rd->mr = NULL;
	}
}

/**
 * vroce_resp_step - send what the responder owes: READ data, then ACKs
 * @qp: the QP
 *
 * Return: true if it sent something.
 */
bool vroce_resp_step(struct vroce_qp *qp)
{
	if (qp->resp.rd.active) {
		vroce_resp_flush_ack(qp);
		vroce_resp_read_step(qp);
		return true;
	}
	if (qp->resp.ack_pending) {
		vroce_resp_flush_ack(qp);
		return true;
	}
	return false;
}

/**
 * vroce_resp_flush - the QP entered ERR: flush the receive WQE held
 * @qp: the QP
 */
void vroce_resp_flush(struct vroce_qp *qp)
{
	if (qp->resp.have_rwqe)
		vroce_resp_complete(qp, IB_WC_WR_FLUSH_ERR, IB_WC_RECV, 0,
				    NULL, false);
	vroce_resp_put_wmr(qp);
	if (qp->resp.rd.mr)
		vroce_mr_put(qp->resp.rd.mr);
	qp->resp.rd.mr = NULL;
	qp->resp.rd.active = false;
	qp->resp.msg = VROCE_MSG_NONE;
	qp->resp.ack_pending = false;
}

/* Forget everything (modify to RESET, destroy): no completions. */
void vroce_resp_reset(struct vroce_qp *qp)
{
	vroce_sge_cursor_done(&qp->resp.cur);
	qp->resp.have_rwqe = false;
	vroce_resp_flush(qp);
	memset(qp->resp.res, 0, VROCE_MAX_RD_ATOM * sizeof(*qp->resp.res));
	qp->resp.res_next = 0;
	qp->resp.epsn = 0;
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.uc_drop = false;
	qp->resp.comm_est = false;
}
