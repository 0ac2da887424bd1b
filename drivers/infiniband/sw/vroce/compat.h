/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences between the supported kernels: Debian's 6.1 LTS
 * and 6.12 LTS, and sid's 7.2. Every version test of the driver lives here,
 * as a small wrapper with one name per difference, each marked with the
 * kernel that changed the API; .c files never test LINUX_VERSION_CODE
 * themselves. Checked against Debian's 6.1 and 6.12 headers, which have
 * none of these changes (later 6.12 updates add WQ_PERCPU; 0 stays
 * right there, as nothing checks for it).
 *
 * Checked and found equal in 6.1, 6.12 and 7.2, so not wrapped: the MR
 * verbs other than reg_user_mr (get_dma_mr, rereg_user_mr, dereg_mr,
 * alloc_mr, map_mr_sg) and create_cq (7.1 added create_user_cq beside it).
 * Also equal: driver sysfs attributes go through
 * ib_device_ops.device_group (ib_core puts it in ibdev->groups[1]
 * at registration); none has rdma_set_device_sysfs_group(), which was
 * removed before 6.1.
 * ib_core itself differs: it refuses IB_ACCESS_ON_DEMAND on a device without
 * ODP with EINVAL in 6.1 and EOPNOTSUPP in 6.12, before the driver is called;
 * and from 7.2 on it calls query_device at registration with no udata
 * (a zeroed one before), which vroce_query_device() takes on every kernel.
 */
#ifndef _VROCE_COMPAT_H
#define _VROCE_COMPAT_H

#include <linux/capability.h>
#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/version.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/rdma_user_rxe.h>

/*
 * mac_pton() is declared in <linux/hex.h> from 6.4 on, in <linux/kernel.h>
 * before; kernel.h included hex.h in 6.12 and no longer does in 7.2.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#include <linux/hex.h>
#endif

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

/*
 * Set up an hrtimer and its callback: hrtimer_setup() from 6.13 on
 * (hrtimer_init() is gone by 7.2), hrtimer_init() and a store before.
 */
static inline void
vroce_compat_hrtimer_setup(struct hrtimer *timer,
			   enum hrtimer_restart (*fn)(struct hrtimer *),
			   clockid_t clock, enum hrtimer_mode mode)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
	hrtimer_setup(timer, fn, clock, mode);
#else
	hrtimer_init(timer, clock, mode);
	timer->function = fn;
#endif
}

/*
 * A per-CPU work queue, as alloc_workqueue() made by default before 6.17,
 * says so with WQ_PERCPU from 6.17 on; 7.2 warns (a kernel WARNING) when a
 * queue names neither WQ_PERCPU nor WQ_UNBOUND.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define VROCE_COMPAT_WQ_PERCPU WQ_PERCPU
#else
#define VROCE_COMPAT_WQ_PERCPU 0
#endif

/*
 * The owner of a socket: sk_uid() from 6.16 on, which removed
 * sock_i_uid().
 */
static inline kuid_t vroce_compat_sk_uid(struct sock *sk)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 16, 0)
	return sk_uid(sk);
#else
	return sock_i_uid(sk);
#endif
}

/*
 * setup_udp_tunnel_sock() and udp_tunnel_sock_release() take the struct
 * sock in 7.2, the struct socket before; udp_sock_create() still makes a
 * struct socket, which vroce keeps. (Changed after 6.12; 7.2 is the first
 * kernel vroce is built for that has it.)
 */
static inline void
vroce_compat_setup_udp_tunnel_sock(struct net *net, struct socket *sock,
				   struct udp_tunnel_sock_cfg *cfg)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
	setup_udp_tunnel_sock(net, sock->sk, cfg);
#else
	setup_udp_tunnel_sock(net, sock, cfg);
#endif
}

static inline void vroce_compat_udp_tunnel_sock_release(struct socket *sock)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
	udp_tunnel_sock_release(sock->sk);
#else
	udp_tunnel_sock_release(sock);
#endif
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

#endif /* _VROCE_COMPAT_H */
