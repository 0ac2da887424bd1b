/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_DEBUGFS_H
#define _VROCE_DEBUGFS_H

#include <linux/delay.h>
#include <linux/minmax.h>

struct vroce_dev;

/* The most a debugfs delay knob (lend_delay_us, err_delay_us) waits: 1 s. */
#define VROCE_DEBUG_DELAY_MAX_US USEC_PER_SEC

/* Sleep for a debugfs delay knob's value, if set; process context. */
static inline void vroce_debug_delay(u32 us)
{
	if (us)
		fsleep(min_t(u32, us, VROCE_DEBUG_DELAY_MAX_US));
}

/* debugfs.c: the knob that holds "rdma link add" (device.c), in ms. */
extern u32 vroce_link_add_delay_ms;

/* debugfs.c: the cap on the object counts of devices added next (query.c). */
extern u32 vroce_max_objects;

/* debugfs.c APIs: */
void vroce_debugfs_init(void);
void vroce_debugfs_exit(void);
void vroce_debugfs_dev_add(struct vroce_dev *vdev);
void vroce_debugfs_dev_del(struct vroce_dev *vdev);

#endif /* _VROCE_DEBUGFS_H */
