/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_LOCAL_OP_H
#define _VROCE_LOCAL_OP_H

#include <rdma/ib_verbs.h>
#include <uapi/rdma/rdma_user_rxe.h>

struct vroce_qp;

/* local_op.c APIs: */
bool vroce_is_local_op(u32 opcode);
enum ib_wc_status vroce_local_op(struct vroce_qp *qp,
				 const struct rxe_send_wqe *wqe);

#ifdef VROCE_DEBUG
bool vroce_mw_selftest(void);
#else
static inline bool vroce_mw_selftest(void)
{
	return true;
}
#endif

#endif /* _VROCE_LOCAL_OP_H */
