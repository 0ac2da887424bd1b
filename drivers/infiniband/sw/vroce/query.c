// SPDX-License-Identifier: GPL-2.0
/*
 * Device attributes. They state what the driver implements today and
 * nothing more: memory regions are not implemented yet, so their limits
 * are zero and user space sees that. The queue limits are those of the
 * rings (queue.c); the RDMA read/atomic depths are stored per QP and
 * bounded here for the transport.
 *
 * The attributes are set once before registration and are read-only after.
 * ib_core copies them into ib_device.attrs when the device registers.
 */

#include "device.h"
#include "query.h"

void vroce_query_init_attrs(struct vroce_dev *vdev)
{
	struct ib_device_attr *attr = &vdev->attr;

	attr->vendor_id = VROCE_VENDOR_ID;
	attr->sys_image_guid = vdev->ibdev.node_guid;
	attr->page_size_cap = PAGE_SIZE;
	attr->max_pd = VROCE_MAX_PD;
	attr->max_pkeys = 1;
	attr->max_qp = VROCE_MAX_QP;
	attr->max_qp_wr = VROCE_MAX_QP_WR;
	attr->max_send_sge = VROCE_MAX_SGE;
	attr->max_recv_sge = VROCE_MAX_SGE;
	attr->max_sge_rd = VROCE_MAX_SGE;
	attr->max_cq = VROCE_MAX_CQ;
	attr->max_cqe = VROCE_MAX_CQE;
	attr->max_srq = VROCE_MAX_SRQ;
	attr->max_srq_wr = VROCE_MAX_SRQ_WR;
	attr->max_srq_sge = VROCE_MAX_SGE;
	attr->max_qp_rd_atom = VROCE_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = VROCE_MAX_RD_ATOM;
	attr->max_res_rd_atom = VROCE_MAX_RD_ATOM * VROCE_MAX_QP;
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_SRQ_RESIZE;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
}

int vroce_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		       struct ib_udata *udata)
{
	/* The rdma_user_rxe.h ABI has no driver data for this command. */
	if (udata->inlen || udata->outlen)
		return -EINVAL;

	*attr = to_vdev(ibdev)->attr;
	return 0;
}
