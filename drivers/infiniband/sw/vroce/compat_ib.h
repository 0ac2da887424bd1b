/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ib_core's and uverbs' API differences between the supported kernels, in
 * the style of compat.h, which includes this header: include compat.h.
 */
#ifndef _VROCE_COMPAT_IB_H
#define _VROCE_COMPAT_IB_H

#include <linux/capability.h>
#include <linux/hmm.h>
#include <linux/version.h>
#include <net/net_namespace.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/rdma_user_rxe.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
/* The device name came from "rdma link add NAME": keep it across netns moves. */
static inline void vroce_compat_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}
#else
static inline void vroce_compat_name_assigned_by_user(struct ib_device *ibdev)
{
}
#endif

/*
 * create_cq gets the udata (6.1) or the whole attribute bundle, NULL for a
 * kernel CQ (6.11+): "struct vroce_compat_create_cq_arg *" is either.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define vroce_compat_create_cq_arg uverbs_attr_bundle

static inline struct ib_udata *
vroce_compat_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define vroce_compat_create_cq_arg ib_udata

static inline struct ib_udata *
vroce_compat_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * RDMA ATOMIC WRITE (IBTA 1.5 annex A19): ib_core names it from 6.2 on.
 * Its user ABI values, the WR opcode 15 and the completion opcode 9, are
 * the same on every kernel, and the rxe provider writes the 8-byte value
 * where the inline data goes; so user QPs get it on 6.1 too. Only 6.2+
 * has the device capability bit to claim it with.
 */
#define VROCE_WR_ATOMIC_WRITE 15
#define VROCE_WC_ATOMIC_WRITE ((enum ib_wc_opcode)9)
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
static_assert(IB_WR_ATOMIC_WRITE == VROCE_WR_ATOMIC_WRITE);
static_assert(IB_WC_ATOMIC_WRITE == VROCE_WC_ATOMIC_WRITE);
#define VROCE_COMPAT_DEVICE_ATOMIC_WRITE IB_DEVICE_ATOMIC_WRITE
#else
#define VROCE_COMPAT_DEVICE_ATOMIC_WRITE 0
#endif

/*
 * RDMA FLUSH (IBTA 1.5 annex A19): ib_core and the rxe user ABI have it
 * from 6.2 on (the WR opcode 14, the completion opcode 8, the access and
 * device capability bits, and the flush fields of struct rxe_send_wr).
 * Before, the feature is absent: VROCE_COMPAT_FLUSH is false, no access
 * bit can ask for it, the WR opcode is refused and a FLUSH request from
 * the wire finds no QP or MR that grants it.
 */
#define VROCE_WR_FLUSH 14
#define VROCE_WC_FLUSH ((enum ib_wc_opcode)8)
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
static_assert(IB_WR_FLUSH == VROCE_WR_FLUSH);
static_assert(IB_WC_FLUSH == VROCE_WC_FLUSH);
#define VROCE_COMPAT_FLUSH true
#define VROCE_COMPAT_ACCESS_FLUSH_GLOBAL IB_ACCESS_FLUSH_GLOBAL
#define VROCE_COMPAT_ACCESS_FLUSH_PERSISTENT IB_ACCESS_FLUSH_PERSISTENT
#define VROCE_COMPAT_DEVICE_FLUSH (IB_DEVICE_FLUSH_GLOBAL | \
				   IB_DEVICE_FLUSH_PERSISTENT)

/* A FLUSH WQE's remote address, rkey, placement type and selectivity. */
static inline void vroce_compat_wr_flush(const struct rxe_send_wr *wr,
					 u64 *va, u32 *rkey, u8 *type,
					 u8 *level)
{
	*va = wr->wr.flush.remote_addr;
	*rkey = wr->wr.flush.rkey;
	*type = wr->wr.flush.type;
	*level = wr->wr.flush.level;
}
#else
#define VROCE_COMPAT_FLUSH false
#define VROCE_COMPAT_ACCESS_FLUSH_GLOBAL 0
#define VROCE_COMPAT_ACCESS_FLUSH_PERSISTENT 0
#define VROCE_COMPAT_DEVICE_FLUSH 0

static inline void vroce_compat_wr_flush(const struct rxe_send_wr *wr,
					 u64 *va, u32 *rkey, u8 *type,
					 u8 *level)
{
	*va = 0;
	*rkey = 0;
	*type = 0;
	*level = 0;
}
#endif
#define VROCE_COMPAT_ACCESS_FLUSH (VROCE_COMPAT_ACCESS_FLUSH_GLOBAL | \
				   VROCE_COMPAT_ACCESS_FLUSH_PERSISTENT)

/*
 * May the calling task give a user QP of @dev a controlled Q_Key (high bit
 * set)? ib_core's rule: anyone after "rdma system set privileged-qkey on",
 * else CAP_NET_RAW in the user namespace that owns @dev's network
 * namespace (init_net's in shared mode, where devices never move).
 * rdma_nl_get_privileged_qkey() is exported by ib_core in every supported
 * kernel (Debian's 6.1 has it from a stable update) but declared only in
 * its private core_priv.h; up to 6.15 it also tests capable(CAP_NET_RAW),
 * from 6.16 on (and stable updates since) only the setting. The
 * namespace-aware capability test is made here in every kernel.
 */
bool rdma_nl_get_privileged_qkey(void);

static inline bool vroce_compat_privileged_qkey(struct ib_device *dev)
{
	struct net *net = read_pnet(&dev->coredev.rdma_net);

	return rdma_nl_get_privileged_qkey() ||
	       ns_capable(net->user_ns, CAP_NET_RAW);
}

/* Pin user memory: ib_umem_get() became ib_umem_get_va() in 7.2. */
static inline struct ib_umem *
vroce_compat_umem_get(struct ib_device *device, unsigned long addr,
		      size_t size, int access)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
	return ib_umem_get_va(device, addr, size, access);
#else
	return ib_umem_get(device, addr, size, access);
#endif
}

/*
 * reg_user_mr: 6.17 added a DMA handle argument (TPH steering hints).
 * vroce has no alloc_dmah, so a user cannot make one for it; a handle that
 * arrives anyway is refused rather than ignored. The ops table names
 * vroce_compat_reg_user_mr; the driver's own verb keeps one signature.
 */
struct ib_mr *vroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
static inline struct ib_mr *
vroce_compat_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length, u64 iova,
			 int access, struct ib_dmah *dmah,
			 struct ib_udata *udata)
{
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	return vroce_reg_user_mr(ibpd, start, length, iova, access, udata);
}
#else
#define vroce_compat_reg_user_mr vroce_reg_user_mr
#endif

/*
 * The resize CQ verb: ib_device_ops.resize_cq (int cqe) became
 * resize_user_cq (unsigned int cqe) in 7.1. The ops table fills
 * ".VROCE_COMPAT_RESIZE_CQ_OP = vroce_compat_resize_cq".
 */
int vroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);

#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 1, 0)
#define VROCE_COMPAT_RESIZE_CQ_OP resize_user_cq

static inline int vroce_compat_resize_cq(struct ib_cq *ibcq, unsigned int cqe,
					 struct ib_udata *udata)
{
	if (cqe > INT_MAX)
		return -EINVAL;
	return vroce_resize_cq(ibcq, cqe, udata);
}
#else
#define VROCE_COMPAT_RESIZE_CQ_OP resize_cq
#define vroce_compat_resize_cq vroce_resize_cq
#endif

/*
 * On-demand paging (mr_odp.c). From 6.16 on (the hmm_dma_map rework of
 * ib_umem_odp) the per-page state of an ODP umem is odp->map.pfn_list,
 * HMM_PFN_VALID and HMM_PFN_WRITE saying what is mapped; before, it is
 * odp->dma_list, ODP_READ_ALLOWED_BIT and ODP_WRITE_ALLOWED_BIT (the
 * page in odp->pfn_list). Read only under umem_mutex, right after
 * ib_umem_odp_map_dma_and_lock() returned. The page shift is PAGE_SHIFT
 * (no IB_ACCESS_HUGETLB), so both lists have one entry per page.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
static inline struct page *
vroce_compat_odp_page(struct ib_umem_odp *odp, unsigned long idx,
		      bool *writable)
{
	unsigned long pfn = odp->map.pfn_list[idx];

	*writable = pfn & HMM_PFN_WRITE;
	return pfn & HMM_PFN_VALID ? hmm_pfn_to_page(pfn) : NULL;
}
#else
static inline struct page *
vroce_compat_odp_page(struct ib_umem_odp *odp, unsigned long idx,
		      bool *writable)
{
	dma_addr_t dma = odp->dma_list[idx];

	*writable = dma & ODP_WRITE_ALLOWED_BIT;
	return dma & ODP_READ_ALLOWED_BIT ?
	       hmm_pfn_to_page(odp->pfn_list[idx]) : NULL;
}
#endif

/*
 * The access_mask of ib_umem_odp_map_dma_and_lock(): HMM_PFN_WRITE or
 * nothing from 6.16 on; ODP_READ_ALLOWED_BIT and maybe
 * ODP_WRITE_ALLOWED_BIT before (0 is EINVAL there).
 */
static inline u64 vroce_compat_odp_access(bool write)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
	return write ? HMM_PFN_WRITE : 0;
#else
	return ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
#endif
}

/*
 * Does ib_umem_odp_unmap_dma_pages() mark the pages mapped for writing
 * dirty? Before 6.16 it does; from 6.16 on only those it DMA-unmapped,
 * which are none on a device without a DMA device (vroce): the driver
 * marks them itself.
 */
#define VROCE_COMPAT_ODP_UNMAP_DIRTIES \
	(LINUX_VERSION_CODE < KERNEL_VERSION(6, 16, 0))

/*
 * The ODP capability bits of RDMA FLUSH and ATOMIC WRITE: ib_core has
 * them from 6.16 on; vroce claims them there only (the operations work on
 * ODP MRs on every kernel that has them).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
#define VROCE_COMPAT_ODP_SUPPORT_FLUSH IB_ODP_SUPPORT_FLUSH
#define VROCE_COMPAT_ODP_SUPPORT_ATOMIC_WRITE IB_ODP_SUPPORT_ATOMIC_WRITE
#else
#define VROCE_COMPAT_ODP_SUPPORT_FLUSH 0
#define VROCE_COMPAT_ODP_SUPPORT_ATOMIC_WRITE 0
#endif

#endif /* _VROCE_COMPAT_IB_H */
