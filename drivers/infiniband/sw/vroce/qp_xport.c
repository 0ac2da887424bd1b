// SPDX-License-Identifier: GPL-2.0
/*
 * The transport side of a QP's life: its state set up at create_qp
 * (vroce_xport_qp_init()), changed by modify_qp (vroce_xport_modify(),
 * vroce_xport_reset()), stopped and freed by destroy_qp
 * (vroce_xport_qp_stop(), vroce_xport_qp_free()), and the description of
 * a packet to the QP's peer that its roles start from
 * (vroce_xport_pkt_init()).
 *
 * Locking:
 *
 *   function               context
 *   vroce_xport_qp_init    create_qp, the QP unreachable
 *   vroce_xport_modify     modify_qp, task_mutex held
 *   vroce_xport_reset      task_mutex held, or the QP unreachable
 *   vroce_xport_qp_stop    destroy_qp, no reference left
 *   vroce_xport_qp_free    create_qp's error path, destroy_qp
 *   vroce_xport_pkt_init   the requester's owner (vroce_req_assert_owner())
 */

#include <linux/etherdevice.h>
#include <linux/slab.h>
#include <net/inet_ecn.h>

#include "qp.h"
#include "query.h"
#include "rx.h"
#include "srq.h"
#include "task.h"
#include "timers.h"
#include "tx.h"
#include "ubuf.h"

/*
 * The requester's per-slot state, as large as the SQ ring. A user QP's is
 * charged and bounded like its ring (vroce_ubuf_alloc(), ubuf.c). Freed
 * with kvfree() either way.
 */
static struct vroce_swqe *vroce_xport_wqes_alloc(struct vroce_qp *qp)
{
	size_t n = vroce_queue_capacity(&qp->sq.queue) + 1;

	if (!qp->is_user)
		return kvcalloc(n, sizeof(*qp->req.wqes), GFP_KERNEL);
	return vroce_ubuf_alloc(array_size(n, sizeof(*qp->req.wqes)));
}

/**
 * vroce_xport_qp_init - set up a new QP's transport
 * @qp: the QP, its queues created
 *
 * Return: 0 or -ENOMEM.
 */
int vroce_xport_qp_init(struct vroce_qp *qp)
{
	u32 rq_sge = qp->srq ? qp->srq->rq.max_sge : qp->rq.max_sge;

	vroce_task_qp_init(qp);
	vroce_timers_init(qp);
	skb_queue_head_init(&qp->rxq);
	qp->rxq_bytes = 0;

	qp->req.wqes = vroce_xport_wqes_alloc(qp);
	if (!qp->req.wqes)
		goto err;
	qp->resp.rwqe = kzalloc(vroce_recv_wqe_size(rq_sge), GFP_KERNEL);
	if (!qp->resp.rwqe)
		goto err;
	qp->resp.res = kvcalloc(VROCE_MAX_RD_ATOM, sizeof(*qp->resp.res),
				GFP_KERNEL);
	if (!qp->resp.res)
		goto err;
	qp->resp.nres = 1;
	vroce_cc_rp_setup(qp);
	vroce_req_reset(qp);
	vroce_resp_reset(qp);
	return 0;

err:
	vroce_xport_qp_free(qp);
	return -ENOMEM;
}

/**
 * vroce_xport_reset - forget all transport state (modify to RESET, destroy)
 * @qp: the QP; task_mutex held or the QP unreachable
 */
void vroce_xport_reset(struct vroce_qp *qp)
{
	vroce_timers_reset(qp);
	vroce_rxq_purge(qp);
	vroce_req_reset(qp);
	vroce_resp_reset(qp);
	vroce_cc_rp_reset(qp);
}

/**
 * vroce_xport_modify - apply the transport side of a modify_qp
 * @qp: the QP; task_mutex held, the transition done
 * @attr: the attributes given to modify_qp
 * @mask: their mask
 */
void vroce_xport_modify(struct vroce_qp *qp, const struct ib_qp_attr *attr,
			int mask)
{
	lockdep_assert_held(&qp->task_mutex);

	if (mask & IB_QP_RQ_PSN)
		qp->resp.epsn = attr->rq_psn & VROCE_PSN_MASK;
	if (mask & IB_QP_SQ_PSN) {
		qp->req.psn = attr->sq_psn & VROCE_PSN_MASK;
		qp->req.una = qp->req.psn;
		qp->req.max_psn = qp->req.psn;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->resp.nres = clamp_t(u32, attr->max_dest_rd_atomic, 1,
					VROCE_MAX_RD_ATOM);
	if (mask & IB_QP_RETRY_CNT)
		qp->req.retry_left = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->req.rnr_left = attr->rnr_retry;
	if (mask & IB_QP_AV)
		vroce_cc_rp_path(qp);
}

/**
 * vroce_xport_qp_stop - stop a QP's transport for good
 * @qp: the QP, unreachable and without references (destroy_qp)
 */
void vroce_xport_qp_stop(struct vroce_qp *qp)
{
	vroce_timers_stop(qp);
	vroce_cc_rp_stop(qp);
	vroce_xport_reset(qp);
}

void vroce_xport_qp_free(struct vroce_qp *qp)
{
	kvfree(qp->resp.res);
	kfree(qp->resp.rwqe);
	kvfree(qp->req.wqes);
	vroce_tx_cache_free(&qp->tx_skb);
}

/**
 * vroce_xport_pkt_init - start describing a packet to the QP's peer
 * @qp: the QP (RC: the primary path)
 * @pi: what to fill in
 * @opcode: the BTH opcode
 * @psn: the BTH PSN
 *
 * Context: the QP's task, or its requester borrowed by a doorbell: the
 * packet may reuse the QP's cached skb and put its receiver on the run
 * list of that context.
 */
void vroce_xport_pkt_init(struct vroce_qp *qp, struct vroce_pkt_info *pi,
			  u8 opcode, u32 psn)
{
	const struct rdma_ah_attr *ah = &qp->av.ah;
	const struct ib_global_route *grh = &ah->grh;

	/* pi->skb_cache and pi->run belong to the task, or the borrower. */
	vroce_req_assert_owner(qp);
	memset(pi, 0, sizeof(*pi));
	pi->sgid_attr = qp->av.sgid_attr;
	pi->dgid = grh->dgid;
	ether_addr_copy(pi->dmac, ah->roce.dmac);
	/* The DSCP of the path, the ECN bits of congestion control. */
	pi->traffic_class = (grh->traffic_class & ~INET_ECN_MASK) |
			    vroce_cc_qp_ecn(qp);
	pi->hop_limit = grh->hop_limit;
	pi->flow_label = grh->flow_label;
	pi->sl = ah->sl;
	pi->opcode = opcode;
	pi->pkey = VROCE_DEFAULT_PKEY;
	pi->sqpn = qp->ibqp.qp_num;
	pi->dqpn = qp->attr.dest_qp_num;
	pi->psn = psn & VROCE_PSN_MASK;
	pi->skb_cache = &qp->tx_skb;
	pi->run = qp->run;
}
