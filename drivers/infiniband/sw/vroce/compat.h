/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences between the supported kernels: Debian's 6.1 LTS
 * and 6.12 LTS, and sid's 7.2. Every version test of the driver lives here,
 * as a small wrapper with one name per difference, each marked with the
 * kernel that changed the API (those of ib_core and uverbs in
 * compat_ib.h, which this header includes); .c files never test
 * LINUX_VERSION_CODE themselves. Checked against Debian's 6.1 and 6.12
 * headers, which have none of these changes (later 6.12 updates add
 * WQ_PERCPU; 0 stays right there, as nothing checks for it).
 *
 * Checked and found equal in 6.1, 6.12 and 7.2, so not wrapped: the MR
 * verbs other than reg_user_mr (get_dma_mr, rereg_user_mr, dereg_mr,
 * alloc_mr, map_mr_sg) and create_cq (7.1 added create_user_cq beside it).
 * Also equal: driver sysfs attributes go through
 * ib_device_ops.device_group (ib_core puts it in ibdev->groups[1]
 * at registration); none has rdma_set_device_sysfs_group(), which was
 * removed before 6.1.
 * Equal too: the advise_mr verb, the MMU interval notifier's invalidate and
 * ib_umem_odp_get(), _release(), _map_dma_and_lock(), _unmap_dma_pages()
 * (the ODP umem's fields differ: compat_ib.h).
 * ib_core itself differs: it refuses IB_ACCESS_ON_DEMAND on a device without
 * ODP (vroce claims it where the kernel has
 * CONFIG_INFINIBAND_ON_DEMAND_PAGING) with EINVAL in 6.1 and EOPNOTSUPP in
 * 6.12, before the driver is called; and from 7.2 on it calls query_device
 * at registration with no udata (a zeroed one before), which
 * vroce_query_device() takes on every kernel.
 */
#ifndef _VROCE_COMPAT_H
#define _VROCE_COMPAT_H

#include <linux/hrtimer.h>
#include <linux/mm.h>
#include <linux/version.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/udp_tunnel.h>

/*
 * mac_pton() is declared in <linux/hex.h> from 6.4 on, in <linux/kernel.h>
 * before; kernel.h included hex.h in 6.12 and no longer does in 7.2.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#include <linux/hex.h>
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

/* ib_core's and uverbs' differences. */
#include "compat_ib.h"

#endif /* _VROCE_COMPAT_H */
