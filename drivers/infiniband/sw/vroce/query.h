/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_QUERY_H
#define _VROCE_QUERY_H

#include <rdma/ib_verbs.h>
#include <uapi/rdma/vroce.h>

struct vroce_dev;

/* Limits of what is implemented today; a zero limit means "not supported". */
#define VROCE_MAX_PD 0x7ff0
#define VROCE_MAX_MR 0x10000
#define VROCE_MAX_FAST_REG_PAGES 512
#define VROCE_MAX_MW 0x10000
#define VROCE_MAX_QP 0x4000
#define VROCE_MAX_QP_WR 0x4000
#define VROCE_MAX_SGE 32
#define VROCE_MAX_INLINE 256
#define VROCE_MAX_AH 0x4000
#define VROCE_MAX_CQ 0x4000
#define VROCE_MAX_CQE 0x1ffff
#define VROCE_MAX_SRQ 0x4000
#define VROCE_MAX_SRQ_WR 0x4000
#define VROCE_MAX_RD_ATOM 128
#define VROCE_MAX_MSG_SIZE 0x80000000U
#define VROCE_MAX_MCAST_GRP 0x2000
#define VROCE_MAX_MCAST_QP_ATTACH 64
#define VROCE_MAX_TOTAL_MCAST_QP_ATTACH 0x10000

/* query.c APIs: */
void vroce_query_init_attrs(struct vroce_dev *vdev);
int vroce_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		       struct ib_udata *udata);

#endif /* _VROCE_QUERY_H */
