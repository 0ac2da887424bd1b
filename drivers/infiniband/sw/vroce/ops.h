/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_OPS_H
#define _VROCE_OPS_H

#include <rdma/ib_verbs.h>

/* rdma_user_rxe.h's ABI version: the stock rdma-core rxe provider binds. */
#define VROCE_UVERBS_ABI_VERSION 2

/* ops.c APIs: */
extern const struct ib_device_ops vroce_dev_ops;

#endif /* _VROCE_OPS_H */
