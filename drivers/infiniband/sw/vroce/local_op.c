// SPDX-License-Identifier: GPL-2.0
/*
 * Local work requests: send queue WQEs that change memory registrations
 * and send nothing on the wire. The requester runs each one when it
 * reaches it in send queue order (vroce_local_op()) and completes the WQE
 * with the status returned:
 *
 * - IB_WR_REG_MR (kernel QPs): fast registration of an MR from alloc_mr
 *   (mr.c, vroce_mr_fast_reg()). The WQE carries a kernel pointer to the
 *   ib_mr, so user QPs may never run it (their WQEs are user memory).
 * - IB_WR_LOCAL_INV: invalidates a fast-registration MR of the QP's PD or
 *   a bound type 2B memory window of the QP's PD (mr.c, mw.c).
 * - IB_WR_BIND_MW (user QPs): binds a type 1 or type 2B window, in the
 *   rdma_user_rxe.h layout (wr.mw) the rxe provider writes for both
 *   ibv_bind_mw() and ibv_post_send(IBV_WR_BIND_MW). The provider sets the
 *   new rkey in the MW it returns before the WQE runs; a failed bind
 *   completes with IB_WC_MW_BIND_ERR and leaves the window as it was.
 *
 * Error statuses: a bind that is not allowed, IB_WC_MW_BIND_ERR; a key in
 * another PD, IB_WC_LOC_PROT_ERR; any other bad request,
 * IB_WC_LOC_QP_OP_ERR (as rxe).
 *
 * The WQE is the caller's checked copy (vroce_sq_peek()); every field of it
 * is still untrusted for user QPs. Nothing here sleeps or takes a lock of
 * the QP: the callees take the device's key table locks (mr.c, mw.c).
 */

#include "device.h"
#include "local_op.h"
#include "mr.h"
#include "mw.h"
#include "qp.h"

typedef enum ib_wc_status (*vroce_local_op_fn)(struct vroce_qp *qp,
					       const struct rxe_send_wqe *wqe);

static enum ib_wc_status local_reg_mr(struct vroce_qp *qp,
				      const struct rxe_send_wqe *wqe)
{
	struct ib_mr *ibmr = wqe->wr.wr.reg.mr;
	struct vroce_mr *mr;

	if (qp->is_user || !ibmr || ibmr->device != qp->ibqp.device)
		return IB_WC_LOC_QP_OP_ERR;
	mr = to_vmr(ibmr);
	if (READ_ONCE(mr->pd) != qp->ibqp.pd)
		return IB_WC_LOC_PROT_ERR;
	if (vroce_mr_fast_reg(mr, wqe->wr.wr.reg.key, wqe->wr.wr.reg.access))
		return IB_WC_LOC_QP_OP_ERR;
	return IB_WC_SUCCESS;
}

static enum ib_wc_status local_inv(struct vroce_qp *qp,
				   const struct rxe_send_wqe *wqe)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);
	u32 key = wqe->wr.ex.invalidate_rkey;
	int err;

	if (key & VROCE_KEY_MW)
		err = vroce_mw_invalidate(vdev, &qp->ibqp, key, false);
	else
		err = vroce_mr_invalidate(vdev, key, qp->ibqp.pd);
	if (err == -EACCES)
		return IB_WC_LOC_PROT_ERR;
	return err ? IB_WC_LOC_QP_OP_ERR : IB_WC_SUCCESS;
}

static enum ib_wc_status local_bind_mw(struct vroce_qp *qp,
				       const struct rxe_send_wqe *wqe)
{
	struct vroce_mw_bind bind = {
		.mw_rkey = wqe->wr.wr.mw.mw_rkey,
		.new_rkey = wqe->wr.wr.mw.rkey,
		.mr_lkey = wqe->wr.wr.mw.mr_lkey,
		.addr = wqe->wr.wr.mw.addr,
		.length = wqe->wr.wr.mw.length,
		.access = wqe->wr.wr.mw.access,
	};

	if (!qp->is_user)
		return IB_WC_LOC_QP_OP_ERR;
	return vroce_mw_bind(qp, &bind) ? IB_WC_MW_BIND_ERR : IB_WC_SUCCESS;
}

static const vroce_local_op_fn vroce_local_ops[] = {
	[IB_WR_LOCAL_INV] = local_inv,
	[IB_WR_BIND_MW] = local_bind_mw,
	[IB_WR_REG_MR] = local_reg_mr,
};

/**
 * vroce_is_local_op - @opcode is a local operation (vroce_local_op() runs it)
 * @opcode: a send WQE's IB_WR_* opcode (untrusted)
 */
bool vroce_is_local_op(u32 opcode)
{
	return opcode < ARRAY_SIZE(vroce_local_ops) && vroce_local_ops[opcode];
}

/**
 * vroce_local_op - run a local send WQE
 * @qp: the QP whose send queue holds the WQE
 * @wqe: the WQE, a checked copy (vroce_sq_peek())
 *
 * Context: the requester of @qp; any context.
 * Return: the status to complete the WQE with; IB_WC_LOC_QP_OP_ERR for an
 * opcode that is not a local operation.
 */
enum ib_wc_status vroce_local_op(struct vroce_qp *qp,
				 const struct rxe_send_wqe *wqe)
{
	u32 opcode = wqe->wr.opcode;

	if (!vroce_is_local_op(opcode))
		return IB_WC_LOC_QP_OP_ERR;
	return vroce_local_ops[opcode](qp, wqe);
}

#ifdef VROCE_DEBUG
#include "selftest/mw.c"
#endif
