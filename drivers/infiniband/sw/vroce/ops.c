// SPDX-License-Identifier: GPL-2.0
/*
 * The verbs table. vroce speaks rdma_rxe's user ABI and driver id, so
 * libibverbs' stock rxe provider drives it. Entries are in
 * alphabetical order, followed by the sizes of the objects ib_core allocates
 * on the driver's behalf.
 */

#include <rdma/ib_verbs.h>
#include <uapi/rdma/ib_user_ioctl_verbs.h>

#include "ah.h"
#include "cc.h"
#include "compat.h"
#include "cq.h"
#include "counters.h"
#include "device.h"
#include "mcast.h"
#include "mr.h"
#include "mr_odp.h"
#include "mw.h"
#include "ops.h"
#include "pd.h"
#include "port.h"
#include "qp.h"
#include "queue.h"
#include "query.h"
#include "srq.h"
#include "ucontext.h"

const struct ib_device_ops vroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_RXE,
	.uverbs_abi_ver = VROCE_UVERBS_ABI_VERSION,
	/* /sys/class/infiniband/<dev>/cc/ (cc.c) */
	.device_group = &vroce_cc_attr_group,

	.advise_mr = vroce_advise_mr,
	.alloc_hw_port_stats = vroce_alloc_hw_port_stats,
	.alloc_mr = vroce_alloc_mr,
	.alloc_mw = vroce_alloc_mw,
	.alloc_pd = vroce_alloc_pd,
	.alloc_ucontext = vroce_alloc_ucontext,
	.attach_mcast = vroce_attach_mcast,
	.create_ah = vroce_create_ah,
	.create_cq = vroce_create_cq,
	.create_qp = vroce_create_qp,
	.create_srq = vroce_create_srq,
	.create_user_ah = vroce_create_ah,
	.dealloc_driver = vroce_dev_dealloc,
	.dealloc_mw = vroce_dealloc_mw,
	.dealloc_pd = vroce_dealloc_pd,
	.dealloc_ucontext = vroce_dealloc_ucontext,
	.dereg_mr = vroce_dereg_mr,
	.destroy_ah = vroce_destroy_ah,
	.destroy_cq = vroce_destroy_cq,
	.destroy_qp = vroce_destroy_qp,
	.destroy_srq = vroce_destroy_srq,
	.detach_mcast = vroce_detach_mcast,
	.disassociate_ucontext = vroce_disassociate_ucontext,
	.fill_res_qp_entry = vroce_cc_fill_res_qp_entry,
	.get_dma_mr = vroce_get_dma_mr,
	.get_hw_stats = vroce_get_hw_stats,
	.get_link_layer = vroce_get_link_layer,
	.get_port_immutable = vroce_get_port_immutable,
	.map_mr_sg = vroce_map_mr_sg,
	.mmap = vroce_mmap,
	.mmap_free = vroce_mmap_free,
	.modify_qp = vroce_modify_qp,
	.modify_srq = vroce_modify_srq,
	.poll_cq = vroce_poll_cq,
	.post_recv = vroce_post_recv,
	.post_send = vroce_post_send,
	.post_srq_recv = vroce_post_srq_recv,
	.query_ah = vroce_query_ah,
	.query_device = vroce_query_device,
	.query_pkey = vroce_query_pkey,
	.query_port = vroce_query_port,
	.query_qp = vroce_query_qp,
	.query_srq = vroce_query_srq,
	.reg_user_mr = vroce_compat_reg_user_mr,
	.req_notify_cq = vroce_req_notify_cq,
	.rereg_user_mr = vroce_rereg_user_mr,
	.VROCE_COMPAT_RESIZE_CQ_OP = vroce_compat_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, vroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, vroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, vroce_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, vroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, vroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, vroce_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, vroce_ucontext, ibuc),
};
