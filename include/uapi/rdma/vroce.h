/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * What vroce shows user space beyond the rdma_user_rxe.h ABI it speaks:
 * the values that identify a vroce device and its port. The module and the
 * selftests both use these.
 */
#ifndef _UAPI_RDMA_VROCE_H
#define _UAPI_RDMA_VROCE_H

/* "rdma link add NAME type vroce netdev DEV" */
#define VROCE_LINK_TYPE "vroce"

/* ibv_query_device(): vendor_id (no IEEE OUI: a software device) */
#define VROCE_VENDOR_ID 0xffffff

/* ibv_query_port(): gid_tbl_len; each address takes a RoCE v1 and a v2 GID */
#define VROCE_GID_TABLE_LEN 128

/* RoCEv2 UDP destination port (IBTA Annex A17) */
#define VROCE_ROCE_V2_UDP_PORT 4791

#endif /* _UAPI_RDMA_VROCE_H */
