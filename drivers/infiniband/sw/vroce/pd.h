/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_PD_H
#define _VROCE_PD_H

#include <rdma/ib_verbs.h>

/**
 * struct vroce_pd - a protection domain
 * @ibpd: the ib_core PD; ib_core allocates and frees the container
 */
struct vroce_pd {
	struct ib_pd ibpd;
};

/* pd.c APIs: */
int vroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int vroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

#endif /* _VROCE_PD_H */
