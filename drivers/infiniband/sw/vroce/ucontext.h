/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_UCONTEXT_H
#define _VROCE_UCONTEXT_H

#include <rdma/ib_verbs.h>

/**
 * struct vroce_ucontext - a user verbs context (one per open of uverbs)
 * @ibuc: the ib_core context; ib_core allocates and frees the container
 */
struct vroce_ucontext {
	struct ib_ucontext ibuc;
};

/* ucontext.c APIs: */
int vroce_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata);
void vroce_dealloc_ucontext(struct ib_ucontext *ibuc);
void vroce_disassociate_ucontext(struct ib_ucontext *ibuc);

#endif /* _VROCE_UCONTEXT_H */
