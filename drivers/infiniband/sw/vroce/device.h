/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_DEVICE_H
#define _VROCE_DEVICE_H

#include <linux/list.h>
#include <linux/netdevice.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "cc.h"
#include "counters.h"
#include "mcast.h"

/**
 * struct vroce_dev - one virtual RNIC, bound to one Ethernet netdev
 * @ibdev: the ib_core device; ib_core allocates and frees the container
 * @ndev: the bound netdev, held through @ndev_tracker until the device
 *	leaves the list (vroce_devs_lock)
 * @ndev_tracker: reference tracker for @ndev
 * @net: dev_net(@ndev) at creation; pinned by a vroce_net_get() user
 * @list: entry in the driver's device list (vroce_devs_lock)
 * @registered: ib_register_device() succeeded (vroce_devs_lock)
 * @ndev_gone: the netdev is unregistering or left @net (vroce_devs_lock)
 * @dealloc_started: vroce_dev_dealloc() has begun (vroce_devs_lock)
 * @unreg_work: unregisters the device once its netdev is gone; queued
 *	with a get_device() reference (device.c)
 * @port_active: last port state reported to ib_core (RTNL)
 * @attr: device attributes, set before registration and read-only after
 * @num_pds: PDs allocated, bounded by attr.max_pd
 * @mrs: MRs by key index (mr.c: key layout and lookup rules)
 * @mr_next: next index to try, for cyclic allocation (@mrs' lock)
 * @num_mrs: MRs allocated, bounded by attr.max_mr
 * @mws: memory windows by key index (mw.c: key layout, locking)
 * @mw_next: next index to try, for cyclic allocation (@mws' lock)
 * @num_mws: MWs allocated, bounded by attr.max_mw
 * @ahs: address handles by number (ah.c: lookup and lifetime rules)
 * @ah_next: next number to try, for cyclic allocation (@ahs' lock)
 * @num_ahs: AHs allocated, bounded by attr.max_ah
 * @mcast: multicast groups (mcast.c: locking and lifetime rules)
 * @num_cqs: CQs allocated, bounded by attr.max_cq
 * @num_qps: QPs allocated, bounded by attr.max_qp
 * @qps: QPs by QPN (allocating xarray; see qp.c for the lookup rules)
 * @next_qpn: cyclic allocation cursor of @qps
 * @srqs: SRQs by SRQ number (allocating xarray), bounded by attr.max_srq
 * @next_srqn: cyclic allocation cursor of @srqs
 * @counters: hw counters (counters.c)
 * @cc: congestion-control knobs and enables (cc.c)
 * @debugfs: the device's debugfs directory (vroce_devs_lock), or NULL
 * @lend_delay_us: debugfs knob: how long the task keeps the requester lent
 *	after each long READ response copy (comp.c), 0 by default
 * @err_delay_us: debugfs knob: how long a QP entering ERR waits before its
 *	flushes (qp_state.c), 0 by default
 * @dealloc_delay_ms: debugfs knob: how long vroce_dev_dealloc() waits after
 *	releasing debugfs and the namespace's sockets, 0 by default
 */
struct vroce_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	struct net *net;
	struct list_head list;
	bool registered;
	bool ndev_gone;
	bool dealloc_started;
	bool port_active;
	struct work_struct unreg_work;
	struct ib_device_attr attr;
	atomic_t num_pds;
	struct xarray mrs;
	u32 mr_next;
	atomic_t num_mrs;
	struct xarray mws;
	u32 mw_next;
	atomic_t num_mws;
	struct xarray ahs;
	u32 ah_next;
	atomic_t num_ahs;
	struct vroce_mcast mcast;
	atomic_t num_cqs;
	atomic_t num_qps;
	struct xarray qps;
	u32 next_qpn;
	struct xarray srqs;
	u32 next_srqn;
	struct vroce_counters counters;
	struct vroce_cc cc;
	struct dentry *debugfs;
	u32 lend_delay_us;
	u32 err_delay_us;
	u32 dealloc_delay_ms;
};

static inline struct vroce_dev *to_vdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct vroce_dev, ibdev);
}

/* device.c APIs: */
int vroce_dev_init(void);
void vroce_dev_exit(void);
int vroce_dev_add(const char *name, struct net_device *ndev);
void vroce_dev_dealloc(struct ib_device *ibdev);
void vroce_dev_netdev_unregister(struct net_device *ndev);
void vroce_dev_port_event(struct net_device *ndev);
void vroce_dev_remove_all(void);

#endif /* _VROCE_DEVICE_H */
