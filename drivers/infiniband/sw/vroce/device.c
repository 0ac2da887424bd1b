// SPDX-License-Identifier: GPL-2.0
/*
 * Device lifecycle: creation from "rdma link add", removal by "rdma link
 * delete", by the netdev going away, or by module unload.
 *
 * Locking and lifetime:
 * - vroce_devs_lock (mutex) protects vroce_devs and each device's ->list,
 *   ->registered and ->ndev_gone. It nests inside RTNL: the netdev notifier
 *   holds RTNL when it takes it, and nothing that holds it takes RTNL.
 * - ib_core owns the memory of a vroce_dev. Once ib_register_device()
 *   succeeded, any unregistration (rdma link delete, the netdev notifier,
 *   module exit) may free it; code that touches a device outside
 *   vroce_devs_lock holds a get_device() reference.
 * - vroce_dev_dealloc() (ib_core's dealloc_driver) is the single place that
 *   undoes vroce_dev_add(). It copes with a partially set up device, so
 *   every error path after ib_alloc_device() is ib_dealloc_device().
 * - A device stays on the list until the last statement of its dealloc,
 *   which drops the netdev reference and takes it off the list under
 *   vroce_devs_lock (so a listed device's ->ndev is never stale). Module
 *   exit relies on this: vroce_dev_remove_all() returns only once the
 *   list is empty, and ib_unregister_device() on a device whose dealloc
 *   is running waits for ib_core's per-device unregistration lock, which
 *   is held until that dealloc has returned; ib_unregister_driver() then
 *   does the same for the devices still in ib_core's table, whose dealloc
 *   may be in its last instructions. Nothing else of the module is torn
 *   down before (main.c), so no dealloc outlives the module.
 * - A device on the list that is not ->registered yet is being registered
 *   by vroce_dev_add(); if its netdev unregisters meanwhile the notifier only
 *   sets ->ndev_gone and vroce_dev_add() unregisters it when done.
 * - A device found on the list may thus be in its dealloc. Whatever acts on
 *   it (queueing its unregistration, a port event, finishing its
 *   registration) does so under a registration reference
 *   (ib_device_try_get()), as ib_core requires for queueing: ib_core drops
 *   the last one when an unregistration has disabled the device, before
 *   its dealloc, so failing to get one means the device is being
 *   unregistered already, and it is left alone.
 */

#include <linux/delay.h>
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/mutex.h>
#include <linux/rtnetlink.h>
#include <net/addrconf.h>

#include "ah.h"
#include "cc.h"
#include "compat.h"
#include "counters.h"
#include "debugfs.h"
#include "device.h"
#include "mr.h"
#include "mw.h"
#include "net.h"
#include "ops.h"
#include "port.h"
#include "query.h"

/* The most the debugfs knob dealloc_delay_ms holds a dealloc: 1 s. */
#define VROCE_DEALLOC_DELAY_MAX_MS MSEC_PER_SEC

static LIST_HEAD(vroce_devs);
static DEFINE_MUTEX(vroce_devs_lock);

static struct vroce_dev *vroce_dev_find_locked(struct net_device *ndev)
{
	struct vroce_dev *vdev;

	lockdep_assert_held(&vroce_devs_lock);

	list_for_each_entry(vdev, &vroce_devs, list)
		if (vdev->ndev == ndev)
			return vdev;
	return NULL;
}

static void vroce_dev_setup(struct vroce_dev *vdev, struct net_device *ndev)
{
	struct ib_device *ibdev = &vdev->ibdev;

	INIT_LIST_HEAD(&vdev->list);
	atomic_set(&vdev->num_pds, 0);
	vroce_mr_dev_init(vdev);
	vroce_mw_dev_init(vdev);
	vroce_ah_dev_init(vdev);
	vroce_mcast_dev_init(vdev);
	atomic_set(&vdev->num_cqs, 0);
	atomic_set(&vdev->num_qps, 0);
	xa_init_flags(&vdev->qps, XA_FLAGS_ALLOC);
	xa_init_flags(&vdev->srqs, XA_FLAGS_ALLOC1);
	vroce_cc_init(&vdev->cc);

	strscpy(ibdev->node_desc, "vroce", sizeof(ibdev->node_desc));
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->local_dma_lkey = 0;
	/* Not in ib_core's default mask: the rxe provider's doorbell and arm. */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid, ndev->dev_addr);
	vroce_query_init_attrs(vdev);
	ib_set_device_ops(ibdev, &vroce_dev_ops);
}

/* Put @vdev on the list unless its netdev is leaving or already has a device. */
static int vroce_dev_publish(struct vroce_dev *vdev, struct net_device *ndev)
{
	int err = 0;

	rtnl_lock();
	mutex_lock(&vroce_devs_lock);
	if (ndev->reg_state != NETREG_REGISTERED) {
		err = -ENODEV;
	} else if (vroce_dev_find_locked(ndev)) {
		pr_err("%s already has a vroce device\n", netdev_name(ndev));
		err = -EEXIST;
	} else {
		vdev->port_active = vroce_port_is_active(ndev);
		vroce_cc_line_update(vdev, ndev);
		list_add_tail(&vdev->list, &vroce_devs);
	}
	mutex_unlock(&vroce_devs_lock);
	rtnl_unlock();
	return err;
}

/* Called with a get_device() reference once ib_register_device() returned 0. */
static void vroce_dev_mark_registered(struct vroce_dev *vdev)
{
	bool gone;

	/*
	 * Fails once an unregistration disabled the device (rdma link delete
	 * may already have found it); while we hold it, no unregistration
	 * reaches the dealloc, so the device stays on the list.
	 */
	if (!ib_device_try_get(&vdev->ibdev))
		return;
	mutex_lock(&vroce_devs_lock);
	vdev->registered = true;
	vroce_debugfs_dev_add(vdev);
	gone = vdev->ndev_gone;
	mutex_unlock(&vroce_devs_lock);

	if (gone)
		ib_unregister_device_queued(&vdev->ibdev);
	ib_device_put(&vdev->ibdev);
}

/* ib_core says ENFILE when the name is taken; users expect EEXIST. */
static int vroce_dev_register_error(const char *name, struct net_device *ndev,
				    int err)
{
	if (err == -ENFILE) {
		pr_err("cannot add %s over %s: an RDMA device of that name exists\n",
		       name, netdev_name(ndev));
		return -EEXIST;
	}
	pr_err("cannot register %s over %s: %pe\n", name, netdev_name(ndev),
	       ERR_PTR(err));
	return err;
}

/**
 * vroce_dev_add - create and register a vroce device over @ndev
 * @name: the ib_device name requested by the user
 * @ndev: an Ethernet netdev; the caller holds a reference for the call
 *
 * Context: process context, RTNL not held (rdma_link_ops.newlink).
 * Return: 0 or a negative errno; nothing is left behind on failure.
 */
int vroce_dev_add(const char *name, struct net_device *ndev)
{
	struct vroce_dev *vdev;
	int err;

	if (ndev->type != ARPHRD_ETHER) {
		pr_err("cannot add %s: %s is not an Ethernet device (ARPHRD type %u)\n",
		       name, netdev_name(ndev), ndev->type);
		return -EINVAL;
	}

	vdev = ib_alloc_device(vroce_dev, ibdev);
	if (!vdev)
		return -ENOMEM;
	vroce_dev_setup(vdev, ndev);

	err = vroce_counters_init(&vdev->counters);
	if (err)
		goto err_dealloc;
	err = vroce_net_get(dev_net(ndev));
	if (err)
		goto err_dealloc;
	vdev->net = dev_net(ndev);

	netdev_hold(ndev, &vdev->ndev_tracker, GFP_KERNEL);
	vdev->ndev = ndev;

	err = ib_device_set_netdev(&vdev->ibdev, ndev, 1);
	if (err)
		goto err_dealloc;

	err = vroce_dev_publish(vdev, ndev);
	if (err)
		goto err_dealloc;

	vroce_compat_name_assigned_by_user(&vdev->ibdev);
	get_device(&vdev->ibdev.dev);
	err = ib_register_device(&vdev->ibdev, name, NULL);
	if (err) {
		put_device(&vdev->ibdev.dev);
		err = vroce_dev_register_error(name, ndev, err);
		goto err_dealloc;
	}
	vroce_dev_mark_registered(vdev);
	put_device(&vdev->ibdev.dev);
	return 0;

err_dealloc:
	ib_dealloc_device(&vdev->ibdev);
	return err;
}

/*
 * The debugfs knob dealloc_delay_ms holds a dealloc once the debugfs
 * directory and the namespace's sockets are released, before the netdev
 * is, so that a test can race module unload and the netdev's removal
 * against it.
 */
static void vroce_dev_dealloc_delay(struct vroce_dev *vdev)
{
	u32 ms = READ_ONCE(vdev->dealloc_delay_ms);

	if (ms)
		msleep(min_t(u32, ms, VROCE_DEALLOC_DELAY_MAX_MS));
}

/*
 * The last step of a dealloc: from here on module exit no longer waits for
 * it. The netdev reference goes under the lock, so that no lookup by
 * netdev compares against a netdev that may be freed.
 */
static void vroce_dev_unlist(struct vroce_dev *vdev)
{
	mutex_lock(&vroce_devs_lock);
	list_del_init(&vdev->list);
	if (vdev->ndev)
		netdev_put(vdev->ndev, &vdev->ndev_tracker);
	mutex_unlock(&vroce_devs_lock);
}

/**
 * vroce_dev_dealloc - ib_core's dealloc_driver: undo vroce_dev_add()
 * @ibdev: the device being freed
 *
 * The device stays on the list until the end (see the top of this file).
 *
 * Context: process context; called by ib_core once no verb can run any more,
 * either from unregistration or from ib_dealloc_device() on an error path.
 */
void vroce_dev_dealloc(struct ib_device *ibdev)
{
	struct vroce_dev *vdev = to_vdev(ibdev);

	vroce_mcast_dev_uninit(vdev);
	vroce_ah_dev_uninit(vdev);
	vroce_mw_dev_uninit(vdev);
	vroce_mr_dev_uninit(vdev);
	/* vroce_dev_mark_registered() can no longer get a reference. */
	vroce_debugfs_dev_del(vdev);
	if (vdev->net)
		vroce_net_put(vdev->net);
	vroce_dev_dealloc_delay(vdev);
	/* ib_core destroyed every QP and SRQ before calling us. */
	WARN_ON(!xa_empty(&vdev->qps) || !xa_empty(&vdev->srqs));
	xa_destroy(&vdev->qps);
	xa_destroy(&vdev->srqs);
	vroce_counters_free(&vdev->counters);
	vroce_dev_unlist(vdev);
}

/**
 * vroce_dev_netdev_unregister - the netdev of a device is going away
 * @ndev: the unregistering netdev
 *
 * Context: RTNL held (netdev notifier).
 */
void vroce_dev_netdev_unregister(struct net_device *ndev)
{
	struct vroce_dev *vdev;

	ASSERT_RTNL();

	mutex_lock(&vroce_devs_lock);
	vdev = vroce_dev_find_locked(ndev);
	if (vdev && !vdev->ndev_gone) {
		vdev->ndev_gone = true;
		/*
		 * Not registered yet: vroce_dev_add() queues it once it is.
		 * No registration reference: an unregistration is under way
		 * already (rdma link delete, module unload), and its dealloc
		 * lets go of the netdev.
		 */
		if (vdev->registered && ib_device_try_get(&vdev->ibdev)) {
			ib_unregister_device_queued(&vdev->ibdev);
			ib_device_put(&vdev->ibdev);
		}
	}
	mutex_unlock(&vroce_devs_lock);
}

/**
 * vroce_dev_port_event - the carrier or administrative state of @ndev changed
 * @ndev: the netdev
 *
 * Re-reads the line rate of the device over @ndev (a link that comes up
 * again may have a new speed), and reports IB_EVENT_PORT_ACTIVE or
 * IB_EVENT_PORT_ERR when its port state changes.
 *
 * Context: RTNL held (netdev notifier).
 */
void vroce_dev_port_event(struct net_device *ndev)
{
	struct vroce_dev *vdev;
	bool active;

	ASSERT_RTNL();

	mutex_lock(&vroce_devs_lock);
	vdev = vroce_dev_find_locked(ndev);
	if (vdev && !vdev->ndev_gone)
		vroce_cc_line_update(vdev, ndev);
	/* No registration reference: the device is being unregistered. */
	if (vdev && vdev->registered && !vdev->ndev_gone &&
	    ib_device_try_get(&vdev->ibdev)) {
		active = vroce_port_is_active(ndev);
		if (active != vdev->port_active) {
			vdev->port_active = active;
			vroce_port_dispatch_event(vdev, active);
		}
		ib_device_put(&vdev->ibdev);
	}
	mutex_unlock(&vroce_devs_lock);
}

/**
 * vroce_dev_remove_all - unregister every device (module unload)
 *
 * Returns once every device's dealloc has returned, also those that other
 * contexts started (rdma link delete, the netdev's removal); none of them
 * waits for a peer, so neither does this.
 *
 * Context: process context; no new device can be created any more.
 */
void vroce_dev_remove_all(void)
{
	struct vroce_dev *vdev;

	for (;;) {
		mutex_lock(&vroce_devs_lock);
		vdev = list_first_entry_or_null(&vroce_devs, struct vroce_dev,
						list);
		if (vdev)
			get_device(&vdev->ibdev.dev);
		mutex_unlock(&vroce_devs_lock);
		if (!vdev)
			break;

		/*
		 * If another context is unregistering the device, this waits
		 * until its dealloc returned, which took it off the list.
		 */
		ib_unregister_device(&vdev->ibdev);
		put_device(&vdev->ibdev.dev);
	}
	/*
	 * A dealloc takes its device off the list just before it returns,
	 * so its last instructions may still run in this module. ib_core
	 * keeps the device in its own table until dealloc_driver returned,
	 * and ib_unregister_driver() waits for each such device's
	 * unregistration lock, which its unregistering context holds until
	 * then. It also completes unregistrations queued and not yet run,
	 * as ib_core requires of ib_unregister_device_queued()'s users.
	 * RDMA_DRIVER_RXE is vroce's alone: rdma_rxe cannot be loaded beside
	 * it (net.c).
	 */
	ib_unregister_driver(RDMA_DRIVER_RXE);
}
