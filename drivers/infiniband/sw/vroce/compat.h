/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences between the supported kernels, Debian's 6.1 LTS and
 * 6.12 LTS. Every version test of the driver lives here, as a small wrapper
 * with one name; .c files never test LINUX_VERSION_CODE themselves.
 *
 * Checked and found equal in 6.1 and 6.12, so not wrapped: the MR verbs
 * (get_dma_mr, reg_user_mr, rereg_user_mr, dereg_mr, alloc_mr, map_mr_sg)
 * and ib_umem_get(). A kernel after 6.12 that changes them gets a wrapper
 * here. Also equal: driver sysfs attributes go through
 * ib_device_ops.device_group in both (ib_core puts it in ibdev->groups[1]
 * at registration); neither has rdma_set_device_sysfs_group(), which was
 * removed before 6.1.
 * ib_core itself differs: it refuses IB_ACCESS_ON_DEMAND on a device without
 * ODP with EINVAL in 6.1 and EOPNOTSUPP in 6.12, before the driver is called.
 */
#ifndef _VROCE_COMPAT_H
#define _VROCE_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

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
 * Set VMA flags: vm_flags_set() from 6.3 on (vm_flags is read-only there),
 * a plain store before.
 */
static inline void vroce_compat_vm_flags_set(struct vm_area_struct *vma,
					     vm_flags_t flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

/*
 * May the calling task give a user QP a controlled Q_Key (high bit set)?
 * ib_core's answer: CAP_NET_RAW in the initial user namespace, or anyone
 * after "rdma system set privileged-qkey on". rdma_nl_get_privileged_qkey()
 * is exported by ib_core in both kernels (Debian's 6.1 has it from a
 * stable update) but declared only in its private core_priv.h.
 */
bool rdma_nl_get_privileged_qkey(void);

static inline bool vroce_compat_privileged_qkey(void)
{
	return rdma_nl_get_privileged_qkey();
}

#endif /* _VROCE_COMPAT_H */
