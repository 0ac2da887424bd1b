// SPDX-License-Identifier: GPL-2.0
/*
 * Device attributes. They state what the driver implements today and
 * nothing more. The queue limits are those of the rings (queue.c); the
 * RDMA read/atomic depths bound the transport's per-QP limits. Memory
 * regions (mr.c), on-demand paging MRs (mr_odp.c), fast registration and
 * memory windows of type 1 and 2B (local_op.c, mw.c) are implemented, and
 * multicast groups of UD QPs (mcast.c).
 *
 * The attributes are set once before registration and are read-only after.
 * ib_core copies them into ib_device.attrs when the device registers.
 */

#include "compat.h"
#include "debugfs.h"
#include "device.h"
#include "query.h"

/*
 * The debugfs knob max_objects (debugfs.c), when set, lowers every object
 * count limit to it, as a smaller RNIC would advertise, so that tests can
 * reach them; it is read when a device is added.
 */
static void vroce_query_cap_counts(struct ib_device_attr *attr)
{
	u32 cap = READ_ONCE(vroce_max_objects);

	if (!cap)
		return;
	attr->max_pd = min_t(u32, attr->max_pd, cap);
	attr->max_mr = min_t(u32, attr->max_mr, cap);
	attr->max_mw = min_t(u32, attr->max_mw, cap);
	attr->max_ah = min_t(u32, attr->max_ah, cap);
	attr->max_cq = min_t(u32, attr->max_cq, cap);
	attr->max_srq = min_t(u32, attr->max_srq, cap);
	attr->max_qp = min_t(u32, attr->max_qp, cap);
}

/*
 * On-demand paging (mr_odp.c), when the kernel has it: explicit ODP MRs
 * (no implicit one), for every operation of RC QPs and for UD sends and
 * receives (FLUSH and ATOMIC WRITE are claimed from 6.16 on, where ib_core
 * has their bits).
 */
static void vroce_query_odp_caps(struct ib_device_attr *attr)
{
	struct ib_odp_caps *odp = &attr->odp_caps;

	if (!IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING))
		return;
	attr->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	odp->general_caps = IB_ODP_SUPPORT;
	odp->per_transport_caps.rc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV |
		VROCE_COMPAT_ODP_SUPPORT_FLUSH |
		VROCE_COMPAT_ODP_SUPPORT_ATOMIC_WRITE;
	odp->per_transport_caps.ud_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_SRQ_RECV;
}

void vroce_query_init_attrs(struct vroce_dev *vdev)
{
	struct ib_device_attr *attr = &vdev->attr;

	attr->vendor_id = VROCE_VENDOR_ID;
	attr->sys_image_guid = vdev->ibdev.node_guid;
	attr->page_size_cap = PAGE_SIZE;
	attr->max_pd = VROCE_MAX_PD;
	attr->max_pkeys = 1;
	attr->max_mr = VROCE_MAX_MR;
	attr->max_mr_size = U64_MAX;
	attr->max_fast_reg_page_list_len = VROCE_MAX_FAST_REG_PAGES;
	attr->max_mw = VROCE_MAX_MW;
	attr->max_ah = VROCE_MAX_AH;
	attr->max_mcast_grp = VROCE_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = VROCE_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = VROCE_MAX_TOTAL_MCAST_QP_ATTACH;
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
	vroce_query_cap_counts(attr);
	attr->max_res_rd_atom = VROCE_MAX_RD_ATOM * attr->max_qp;
	/* Atomics are 64-bit atomics on the responder's memory. */
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_SRQ_RESIZE |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 VROCE_COMPAT_DEVICE_ATOMIC_WRITE |
				 VROCE_COMPAT_DEVICE_FLUSH;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	vroce_query_odp_caps(attr);
}

int vroce_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		       struct ib_udata *udata)
{
	/*
	 * The rdma_user_rxe.h ABI has no driver data for this command.
	 * ib_core's own call at registration passes no udata from 7.2 on
	 * (a zeroed one before).
	 */
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	*attr = to_vdev(ibdev)->attr;
	return 0;
}
