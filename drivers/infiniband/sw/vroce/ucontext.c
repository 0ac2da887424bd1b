// SPDX-License-Identifier: GPL-2.0
/*
 * User verbs contexts.
 *
 * Lifetime: ib_core allocates the context and calls dealloc once every
 * object of the context is destroyed. On device removal with contexts still
 * open (module unload, netdev removal), ib_core destroys their objects and
 * calls disassociate: there is no hardware to quiesce, and user mappings are
 * zapped by ib_core, so the process only sees EIO from then on and the
 * removal does not wait for it to exit.
 */

#include "ucontext.h"

int vroce_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	/* The rdma_user_rxe.h ABI carries no request or response data. */
	return 0;
}

void vroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
}

void vroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}
