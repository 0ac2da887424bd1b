// SPDX-License-Identifier: GPL-2.0
/*
 * vroce: a virtual RDMA NIC speaking RoCEv1 and RoCEv2 over any Ethernet
 * netdev.
 *
 * Module load order, and unload in reverse:
 *  0. the guard that keeps rdma_rxe, which shares our driver id, from
 *     loading, and refuses to load next to it (rxe_guard.c);
 *  1. the ICRC's CRC-32 implementation (never fails);
 *  2. namespaces (claims UDP 4791 in init_net);
 *  3. the debugfs root (never fails the load);
 *  4. the RoCEv1 packet handler (drops everything until a device exists);
 *  5. the work queue that unregisters devices whose netdev went away;
 *  6. the netdev notifier, which queues on it;
 *  7. the "vroce" rdma link type, after which users can create devices.
 * Unload first stops device creation (rdma_link_unregister() waits for
 * running newlink calls), then unregisters every device and waits for the
 * deallocations that other contexts (rdma link delete, ib_core's work queue
 * after a netdev went away) have in progress: vroce_dev_remove_all()
 * returns once no dealloc runs (device.c). Once the notifier is gone, the
 * work queue is drained. Only then goes the rest, which a dealloc still
 * uses (debugfs, the namespaces' sockets) or runs in (the module's code).
 */

#include <linux/module.h>
#include <rdma/rdma_netlink.h>
#include <uapi/rdma/vroce.h>

#include "cc.h"
#include "dcqcn.h"
#include "debugfs.h"
#include "device.h"
#include "icrc.h"
#include "local_op.h"
#include "mr_copy.h"
#include "mr_odp.h"
#include "net.h"
#include "netdev.h"
#include "rx.h"
#include "rxe_guard.h"
#include "task.h"
#include "tx.h"

static int vroce_newlink(const char *ibdev_name, struct net_device *ndev)
{
	return vroce_dev_add(ibdev_name, ndev);
}

static struct rdma_link_ops vroce_link_ops = {
	.type = VROCE_LINK_TYPE,
	.newlink = vroce_newlink,
};

static int __init vroce_init(void)
{
	int err;

	/* Built-in self-tests; always true unless built with VROCE_DEBUG. */
	if (!vroce_mr_selftest() || !vroce_mw_selftest() ||
	    !vroce_dcqcn_selftest() || !vroce_cc_selftest())
		return -ENOTRECOVERABLE;

	err = vroce_rxe_guard_init();
	if (err)
		return err;
	vroce_icrc_init();
	err = vroce_task_init();
	if (err)
		goto err_icrc;
	err = vroce_odp_init();
	if (err)
		goto err_task;
	err = vroce_net_init();
	if (err)
		goto err_odp;

	vroce_debugfs_init();
	vroce_rx_init();

	err = vroce_dev_init();
	if (err)
		goto err_rx;
	err = vroce_netdev_init();
	if (err)
		goto err_dev;

	rdma_link_register(&vroce_link_ops);
	pr_info("loaded\n");
	return 0;

err_dev:
	vroce_dev_exit();
err_rx:
	vroce_rx_exit();
	vroce_debugfs_exit();
	vroce_net_exit();
err_odp:
	vroce_odp_exit();
err_task:
	vroce_task_exit();
err_icrc:
	vroce_icrc_exit();
	vroce_rxe_guard_exit();
	return err;
}

static void __exit vroce_exit(void)
{
	rdma_link_unregister(&vroce_link_ops);
	vroce_dev_remove_all();
	vroce_netdev_exit();
	vroce_dev_exit();
	vroce_rx_exit();
	vroce_debugfs_exit();
	vroce_net_exit();
	vroce_odp_exit();
	vroce_task_exit();
	vroce_icrc_exit();
	vroce_rxe_guard_exit();
	pr_info("unloaded\n");
}

module_init(vroce_init);
module_exit(vroce_exit);

MODULE_AUTHOR("The vroce developers");
MODULE_DESCRIPTION("Virtual RDMA NIC: RoCEv1 and RoCEv2 over any Ethernet netdev");
MODULE_LICENSE("GPL");
#ifdef VROCE_VERSION
MODULE_VERSION(VROCE_VERSION);
#endif
#ifdef VROCE_DEBUG
MODULE_INFO(vroce_selftests, "mr mw dcqcn cc");
#endif
MODULE_ALIAS_RDMA_LINK("vroce");
