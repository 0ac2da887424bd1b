/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Congestion control of a device: its DCQCN knobs, the per-priority NP/RP
 * enables, their sysfs files (/sys/class/infiniband/<dev>/cc/), and the
 * per-QP state the transport drives (dcqcn.h has the machine itself).
 */
#ifndef _VROCE_CC_H
#define _VROCE_CC_H

#include <linux/sysfs.h>
#include <linux/types.h>

#include "dcqcn.h"

struct net_device;
struct vroce_dev;

#define VROCE_CC_NR_PRIOS	8

/**
 * struct vroce_cc - congestion control of one device
 * @params: the knobs (WRITE_ONCE by sysfs, READ_ONCE by the machine)
 * @np_enable: bit p set: the NP answers CE-marked packets of priority p
 * @rp_enable: bit p set: the RP reacts to CNPs on priority p and data
 *	packets of priority p carry ECT(0)
 *
 * No lock: every knob is one u32, the enables are changed with atomic bit
 * operations, and a change takes effect at each QP's next event.
 */
struct vroce_cc {
	struct vroce_cc_params params;
	unsigned long np_enable;
	unsigned long rp_enable;
};

/**
 * struct vroce_qp_cc - congestion-control state of one QP
 * @rp: reaction point (the QP as a sender)
 * @np: notification point (the QP as a receiver of CE-marked packets)
 *
 * Serialised by the caller (the QP's send-side context).
 */
struct vroce_qp_cc {
	struct vroce_dcqcn rp;
	struct vroce_np np;
};

/* cc.c APIs: */
extern const struct attribute_group vroce_cc_attr_group;
void vroce_cc_init(struct vroce_cc *cc);
bool vroce_cc_np_enabled(struct vroce_dev *vdev, u8 prio);
bool vroce_cc_rp_enabled(struct vroce_dev *vdev, u8 prio);
u8 vroce_cc_ecn(struct vroce_dev *vdev, u8 prio);
u32 vroce_cc_line_kbps(struct net_device *ndev);
void vroce_cc_qp_init(struct vroce_dev *vdev, struct vroce_qp_cc *qcc,
		      u32 line_kbps);
void vroce_cc_qp_uninit(struct vroce_dev *vdev, struct vroce_qp_cc *qcc);

#ifdef VROCE_DEBUG
bool vroce_cc_selftest(void);
#else
static inline bool vroce_cc_selftest(void)
{
	return true;
}
#endif

#endif /* _VROCE_CC_H */
