// SPDX-License-Identifier: GPL-2.0
/*
 * vroce and rdma_rxe never run side by side.
 *
 * Both register their devices with driver id RDMA_DRIVER_RXE: the user ABI
 * is rdma_rxe's, and rdma-core's rxe provider finds vroce's devices by that
 * id. rdma_rxe takes every device with the id for one of its own: its
 * netdev notifier looks up the device of a netdev with
 * ib_device_get_by_netdev(ndev, RDMA_DRIVER_RXE) and writes to it as a
 * struct rxe_dev, and its unload unregisters every device with the id. A
 * vroce device handled that way is memory corruption.
 *
 * rdma_rxe up to 6.12 binds UDP port 4791 in init_net when it loads, as
 * vroce does (net.c), so the second of the two to load failed with
 * EADDRINUSE. Later rdma_rxe binds the port at its first device only, and
 * loads next to vroce. So this file keeps them apart by module name, on
 * every kernel:
 *
 * - While vroce is loaded, a module notifier refuses rdma_rxe's load
 *   (MODULE_STATE_COMING, whose notifiers may fail a load): -EBUSY, with a
 *   message saying why.
 * - vroce's load fails with -EBUSY if rdma_rxe is loaded, as does each new
 *   device (vroce_rxe_guard_check() in vroce_dev_add()). A module is found
 *   by its sysfs entry (/sys/module/NAME), which it gets after its COMING
 *   notification: an rdma_rxe whose notification came before vroce's
 *   notifier existed is found by the device check once its entry is made.
 *
 * The notifier is registered before anything else at load and removed last
 * at unload; it takes no lock of ours.
 */

#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/notifier.h>
#include <linux/string.h>

#include "rxe_guard.h"

#define VROCE_RXE_MODULE "rdma_rxe"

static int vroce_rxe_guard_notify(struct notifier_block *nb,
				  unsigned long state, void *data)
{
	struct module *mod = data;

	if (state != MODULE_STATE_COMING || strcmp(mod->name, VROCE_RXE_MODULE))
		return NOTIFY_DONE;
	pr_err("refusing to let %s load while vroce is loaded: both drive devices with driver id RDMA_DRIVER_RXE, and %s would take vroce's for its own; rmmod vroce first\n",
	       VROCE_RXE_MODULE, VROCE_RXE_MODULE);
	return notifier_from_errno(-EBUSY);
}

static struct notifier_block vroce_rxe_guard_nb = {
	.notifier_call = vroce_rxe_guard_notify,
};

/* Whether rdma_rxe is loaded: its /sys/module entry exists. */
static bool vroce_rxe_loaded(void)
{
#ifdef MODULE
	struct kobject *kobj;

	/* /sys/module: the kset our own module's entry is in. */
	if (!THIS_MODULE->mkobj.kobj.kset)
		return false;
	kobj = kset_find_obj(THIS_MODULE->mkobj.kobj.kset, VROCE_RXE_MODULE);
	if (!kobj)
		return false;
	kobject_put(kobj);
	return true;
#else
	/* Built in, vroce starts before any module loads. */
	return false;
#endif
}

/**
 * vroce_rxe_guard_check() - may vroce run now, as far as rdma_rxe goes
 *
 * Return: 0, or -EBUSY (with a kernel message) while rdma_rxe is loaded.
 */
int vroce_rxe_guard_check(void)
{
	if (!vroce_rxe_loaded())
		return 0;
	pr_err_ratelimited("%s is loaded: it would take vroce's devices for its own (both have driver id RDMA_DRIVER_RXE); rmmod %s first\n",
			   VROCE_RXE_MODULE, VROCE_RXE_MODULE);
	return -EBUSY;
}

/**
 * vroce_rxe_guard_init() - keep rdma_rxe out from now on
 *
 * Return: 0, or -EBUSY if rdma_rxe is already loaded.
 */
int vroce_rxe_guard_init(void)
{
	int err;

	err = register_module_notifier(&vroce_rxe_guard_nb);
	if (err)
		return err;
	err = vroce_rxe_guard_check();
	if (err)
		unregister_module_notifier(&vroce_rxe_guard_nb);
	return err;
}

void vroce_rxe_guard_exit(void)
{
	unregister_module_notifier(&vroce_rxe_guard_nb);
}
