/* SPDX-License-Identifier: GPL-2.0 */
/*
 * On-demand paging (ODP) user MRs (mr_odp.c): registration, the MMU
 * interval notifier, page faults on the data path and advise_mr.
 *
 * Who may call what:
 * - vroce_odp_init(), vroce_odp_exit(): module load and unload;
 * - vroce_odp_mr_init(), vroce_odp_mr_release(): mr.c, at registration
 *   and once no access to the MR is in progress or can start;
 * - vroce_odp_access(): mr_copy.c, inside vroce_mr_enter()/vroce_mr_exit(),
 *   in process context (it may sleep: see mr_odp.c);
 * - vroce_advise_mr(): ib_core (the ADVISE_MR method of uverbs).
 *
 * Without CONFIG_INFINIBAND_ON_DEMAND_PAGING there is no ODP MR: the
 * registration is refused and vroce claims no ODP capability (query.c).
 */
#ifndef _VROCE_MR_ODP_H
#define _VROCE_MR_ODP_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>

struct uverbs_attr_bundle;
struct vroce_mr;

#ifdef CONFIG_INFINIBAND_ON_DEMAND_PAGING
int vroce_odp_init(void);
void vroce_odp_exit(void);
int vroce_odp_mr_init(struct vroce_mr *mr, u64 start, u64 length,
		      int access);
void vroce_odp_mr_release(struct vroce_mr *mr);
int vroce_odp_access(struct vroce_mr *mr, u64 iova, u32 len, bool write,
		     void (*fn)(void *arg, void *va, u32 len), void *arg);
int vroce_advise_mr(struct ib_pd *ibpd,
		    enum ib_uverbs_advise_mr_advice advice, u32 flags,
		    struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);
#else
static inline int vroce_odp_init(void)
{
	return 0;
}

static inline void vroce_odp_exit(void)
{
}

static inline int vroce_odp_mr_init(struct vroce_mr *mr, u64 start,
				    u64 length, int access)
{
	return -EOPNOTSUPP;
}

static inline void vroce_odp_mr_release(struct vroce_mr *mr)
{
}

static inline int vroce_odp_access(struct vroce_mr *mr, u64 iova, u32 len,
				   bool write,
				   void (*fn)(void *arg, void *va, u32 len),
				   void *arg)
{
	return -EFAULT;
}

static inline int vroce_advise_mr(struct ib_pd *ibpd,
				  enum ib_uverbs_advise_mr_advice advice,
				  u32 flags, struct ib_sge *sg_list,
				  u32 num_sge,
				  struct uverbs_attr_bundle *attrs)
{
	return -EOPNOTSUPP;
}
#endif

#endif /* _VROCE_MR_ODP_H */
