/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the vroce selftest programs (libibverbs).
 */
#ifndef _VROCE_TEST_H
#define _VROCE_TEST_H

#include <string.h>
#include <infiniband/verbs.h>

/* Open the RDMA device called @name; NULL if there is none or it fails. */
static inline struct ibv_context *vroce_open_by_name(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; name && list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

#endif /* _VROCE_TEST_H */
