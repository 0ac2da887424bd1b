// SPDX-License-Identifier: GPL-2.0
/*
 * Netdev events: a device follows the netdev it is bound to. Carrier and
 * up/down changes become port events and re-read the line rate congestion
 * control uses (cc.c); unregistration of the netdev (also
 * when it moves to another namespace) removes the device.
 *
 * Context: the notifier runs with RTNL held, in process context. It never
 * unregisters an ib_device synchronously (ib_core takes RTNL while
 * unregistering); it queues the unregistration instead.
 */

#include <linux/netdevice.h>

#include "device.h"
#include "netdev.h"

static int vroce_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);

	switch (event) {
	case NETDEV_UNREGISTER:
		vroce_dev_netdev_unregister(ndev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		vroce_dev_port_event(ndev);
		break;
	default:
		break;
	}
	return NOTIFY_DONE;
}

static struct notifier_block vroce_netdev_notifier = {
	.notifier_call = vroce_netdev_event,
};

int vroce_netdev_init(void)
{
	return register_netdevice_notifier(&vroce_netdev_notifier);
}

void vroce_netdev_exit(void)
{
	unregister_netdevice_notifier(&vroce_netdev_notifier);
}
