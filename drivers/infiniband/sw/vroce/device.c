// SPDX-License-Identifier: GPL-2.0
/*
 * Device lifecycle: creation from "rdma link add", removal by "rdma link
 * delete", by the netdev going away, or by module unload.
 *
 * Locking and lifetime:
 * - vroce_devs_lock (mutex) protects vroce_devs and each device's ->list,
 *   ->registered, ->ndev_gone and ->dealloc_started. It nests inside RTNL:
 *   the netdev notifier holds RTNL when it takes it, and nothing that holds
 *   it takes RTNL.
 * - ib_core owns the memory of a vroce_dev. Once ib_register_device()
 *   succeeded, any unregistration (rdma link delete, the netdev notifier,
 *   module exit) may free it; code that touches a device outside
 *   vroce_devs_lock holds a get_device() reference.
 * - vroce_dev_dealloc() (ib_core's dealloc_driver) is the single place that
 *   undoes vroce_dev_add(). It copes with a partially set up device, so
 *   every error path after ib_alloc_device() is ib_dealloc_device().
 * - Namespace: vroce_dev_add() reads the netdev's namespace once, under
 *   RTNL, and holds it (get_net) until it returns, so the namespace cannot
 *   start its exit meanwhile. It takes that namespace's sockets
 *   (->net) and publishes the device only if, under RTNL again, the netdev
 *   is still registered and still in ->net. From then on the netdev leaving
 *   ->net (moved or unregistered) raises NETDEV_UNREGISTER under RTNL, which
 *   unregisters the device; so a listed device whose netdev is not gone is
 *   always in ->net, and the namespace's exit, which runs after its netdevs
 *   are gone, waits only for unregistrations already queued (net.c).
 * - A device stays on the list until the last statement of its dealloc,
 *   which drops the netdev reference and takes it off the list under
 *   vroce_devs_lock (so a listed device's ->ndev is never stale). Module
 *   exit relies on this: vroce_dev_remove_all() returns only once the
 *   list is empty, and ib_unregister_device() on a device whose dealloc
 *   is running waits for ib_core's per-device unregistration lock, which
 *   is held until that dealloc has returned; ib_unregister_driver() then
 *   does the same for the devices still in ib_core's table, whose dealloc
 *   may be in its last instructions. vroce_dev_exit() then drains the
 *   unregistration work. Nothing else of the module is torn down before
 *   (main.c), so no dealloc and no work item outlives the module.
 * - A device on the list that is not ->registered yet is being registered
 *   by vroce_dev_add(); if its netdev unregisters meanwhile the notifier only
 *   sets ->ndev_gone and vroce_dev_add() unregisters it when done.
 * - Removal on the netdev's behalf goes through ->unreg_work, which owns a
 *   get_device() reference and calls ib_unregister_device() synchronously
 *   from vroce_wq (the notifier holds RTNL, which ib_core's unregistration
 *   takes). It does not depend on a registration reference: ib_core drops
 *   that to zero for a while when it moves the device to another namespace
 *   (rdma dev set netns, exclusive mode), and a netdev event then must not
 *   be lost. ib_unregister_device() waits for such a move, and does nothing
 *   for a device another context unregistered already.
 * - Port events act under a registration reference (ib_device_try_get());
 *   failing to get one, the event is skipped: ->port_active keeps the old
 *   state and the next event reports the change.
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
#include "rxe_guard.h"

/*
 * The most the debugfs knobs dealloc_delay_ms and link_add_delay_ms hold
 * a dealloc and an "rdma link add": 1 s.
 */
#define VROCE_DEALLOC_DELAY_MAX_MS MSEC_PER_SEC

static LIST_HEAD(vroce_devs);
static DEFINE_MUTEX(vroce_devs_lock);
static struct workqueue_struct *vroce_wq;

static struct vroce_dev *vroce_dev_find_locked(struct net_device *ndev)
{
	struct vroce_dev *vdev;

	lockdep_assert_held(&vroce_devs_lock);

	list_for_each_entry(vdev, &vroce_devs, list)
		if (vdev->ndev == ndev)
			return vdev;
	return NULL;
}

/* ->unreg_work: unregister the device whose netdev went away. */
static void vroce_dev_unreg_work(struct work_struct *work)
{
	struct vroce_dev *vdev = container_of(work, struct vroce_dev,
					      unreg_work);

	ib_unregister_device(&vdev->ibdev);
	put_device(&vdev->ibdev.dev);
}

/* Queue the unregistration of a registered device whose netdev is gone. */
static void vroce_dev_queue_unregister(struct vroce_dev *vdev)
{
	lockdep_assert_held(&vroce_devs_lock);

	get_device(&vdev->ibdev.dev);
	if (!queue_work(vroce_wq, &vdev->unreg_work))
		put_device(&vdev->ibdev.dev);
}

static void vroce_dev_setup(struct vroce_dev *vdev, struct net_device *ndev)
{
	struct ib_device *ibdev = &vdev->ibdev;

	INIT_LIST_HEAD(&vdev->list);
	INIT_WORK(&vdev->unreg_work, vroce_dev_unreg_work);
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

/*
 * Put @vdev on the list unless its netdev is leaving, has left ->net since
 * vroce_dev_get_net(), or already has a device.
 */
static int vroce_dev_publish(struct vroce_dev *vdev, const char *name,
			     struct net_device *ndev)
{
	int err = 0;

	rtnl_lock();
	mutex_lock(&vroce_devs_lock);
	if (ndev->reg_state != NETREG_REGISTERED ||
	    !net_eq(dev_net(ndev), vdev->net)) {
		pr_info("cannot add %s: %s was removed or moved to another network namespace meanwhile\n",
			name, netdev_name(ndev));
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
	mutex_lock(&vroce_devs_lock);
	/* Not if an unregistration (rdma link delete) got to the dealloc. */
	if (!vdev->dealloc_started) {
		vdev->registered = true;
		vroce_debugfs_dev_add(vdev);
		if (vdev->ndev_gone)
			vroce_dev_queue_unregister(vdev);
	}
	mutex_unlock(&vroce_devs_lock);
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

/*
 * The namespace of @ndev, with a reference (so its exit cannot begin), or
 * NULL if @ndev is unregistering or its namespace is dying. Read under
 * RTNL, which moves between namespaces hold.
 */
static struct net *vroce_dev_get_net(struct net_device *ndev)
{
	struct net *net = NULL;

	rtnl_lock();
	if (ndev->reg_state == NETREG_REGISTERED)
		net = maybe_get_net(dev_net(ndev));
	rtnl_unlock();
	if (!net)
		pr_info("cannot add a device over %s: it is being removed\n",
			netdev_name(ndev));
	return net;
}

/*
 * The debugfs knob link_add_delay_ms (debugfs.c) holds "rdma link add" between
 * taking the netdev's namespace and publishing the device, so that a test
 * can move the netdev or delete a namespace in between.
 */
static void vroce_dev_link_add_delay(void)
{
	u32 ms = READ_ONCE(vroce_link_add_delay_ms);

	if (ms)
		msleep(min_t(u32, ms, VROCE_DEALLOC_DELAY_MAX_MS));
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
	struct net *net = NULL;
	struct vroce_dev *vdev;
	int err;

	if (ndev->type != ARPHRD_ETHER) {
		pr_err("cannot add %s: %s is not an Ethernet device (ARPHRD type %u)\n",
		       name, netdev_name(ndev), ndev->type);
		return -EINVAL;
	}
	err = vroce_rxe_guard_check();
	if (err)
		return err;

	vdev = ib_alloc_device(vroce_dev, ibdev);
	if (!vdev)
		return -ENOMEM;
	vroce_dev_setup(vdev, ndev);

	err = vroce_counters_init(&vdev->counters);
	if (err)
		goto err_dealloc;
	net = vroce_dev_get_net(ndev);
	if (!net) {
		err = -ENODEV;
		goto err_dealloc;
	}
	err = vroce_net_get(net);
	if (err)
		goto err_dealloc;
	vdev->net = net;

	netdev_hold(ndev, &vdev->ndev_tracker, GFP_KERNEL);
	vdev->ndev = ndev;

	err = ib_device_set_netdev(&vdev->ibdev, ndev, 1);
	if (err)
		goto err_dealloc;

	vroce_dev_link_add_delay();
	err = vroce_dev_publish(vdev, name, ndev);
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
	put_net(net);
	return 0;

err_dealloc:
	/* The dealloc puts the namespace's sockets: before put_net(). */
	ib_dealloc_device(&vdev->ibdev);
	if (net)
		put_net(net);
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
	mutex_lock(&vroce_devs_lock);
	/* vroce_dev_mark_registered() leaves the device alone from here on. */
	vdev->dealloc_started = true;
	vroce_debugfs_dev_del(vdev);
	mutex_unlock(&vroce_devs_lock);
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
		 * Queued without a registration reference: see the top of
		 * this file.
		 */
		if (vdev->registered && !vdev->dealloc_started)
			vroce_dev_queue_unregister(vdev);
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
	 * then. Work items still queued find their device unregistered and
	 * do nothing; vroce_dev_exit() waits for them.
	 * RDMA_DRIVER_RXE is vroce's alone: rdma_rxe cannot be loaded beside
	 * it (net.c).
	 */
	ib_unregister_driver(RDMA_DRIVER_RXE);
}

/**
 * vroce_dev_init - create the work queue of netdev-driven unregistrations
 *
 * Return: 0 or -ENOMEM.
 */
int vroce_dev_init(void)
{
	vroce_wq = alloc_workqueue("vroce_dev", VROCE_COMPAT_WQ_PERCPU, 0);
	return vroce_wq ? 0 : -ENOMEM;
}

/**
 * vroce_dev_exit - wait for the unregistration work and free its queue
 *
 * Context: after vroce_dev_remove_all() and once the netdev notifier is
 * gone, so nothing queues any more.
 */
void vroce_dev_exit(void)
{
	destroy_workqueue(vroce_wq);
}
