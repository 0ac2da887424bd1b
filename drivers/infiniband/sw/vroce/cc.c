// SPDX-License-Identifier: GPL-2.0
/*
 * Congestion control of a device: knobs and per-priority enables in sysfs,
 * the ECN bits of data packets, and the per-QP CC state hooks.
 *
 * sysfs: ib_core creates the "cc" group (ib_device_ops.device_group, the
 * same in 6.1 and 6.12) with the device and removes it at unregistration,
 * before dealloc_driver, so a file's show/store always finds its device.
 * Files, all 0644 (Documentation/ABI/testing/sysfs-class-infiniband-vroce):
 *   <knob>          every DCQCN knob of dcqcn.h under its mlx5 name;
 *   np_enable_<p>   0/1, the notification point on priority p (0..7);
 *   rp_enable_<p>   0/1, the reaction point (and ECT marking) on p.
 * A write that is not a number in the knob's range fails with EINVAL and
 * changes nothing.
 *
 * Locking: none (struct vroce_cc): single u32 stores and atomic bitops;
 * the cached line rate is written under RTNL (netdev events), read
 * lock-free (QP creation).
 */

#include <linux/bitops.h>
#include <linux/device.h>
#include <linux/ethtool.h>
#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/slab.h>
#include <net/inet_ecn.h>
#include <rdma/ib_verbs.h>

#include "cc.h"
#include "device.h"

/* Line rate when the netdev reports none (veth, dummy ...): 10 Gb/s. */
#define VROCE_CC_DEFAULT_MBPS	10000

void vroce_cc_init(struct vroce_cc *cc)
{
	vroce_cc_params_init(&cc->params);
	/* Enabled on every priority, as hardware ships (mlx5 prio mask 255). */
	cc->np_enable = GENMASK(VROCE_CC_NR_PRIOS - 1, 0);
	cc->rp_enable = GENMASK(VROCE_CC_NR_PRIOS - 1, 0);
	cc->line_kbps = VROCE_CC_DEFAULT_MBPS * 1000;
}

bool vroce_cc_np_enabled(struct vroce_dev *vdev, u8 prio)
{
	return test_bit(prio % VROCE_CC_NR_PRIOS, &vdev->cc.np_enable);
}

bool vroce_cc_rp_enabled(struct vroce_dev *vdev, u8 prio)
{
	return test_bit(prio % VROCE_CC_NR_PRIOS, &vdev->cc.rp_enable);
}

/**
 * vroce_cc_ecn - the IP ECN bits of a RoCEv2 data packet
 * @vdev: the sending device
 * @prio: the packet's priority (skb->priority, 0..7)
 *
 * Return: INET_ECN_ECT_0 when congestion control (the reaction point) is
 * on for @prio, else INET_ECN_NOT_ECT (0). The caller ORs it into the
 * traffic class, keeping the DSCP bits.
 */
u8 vroce_cc_ecn(struct vroce_dev *vdev, u8 prio)
{
	return vroce_cc_rp_enabled(vdev, prio) ? INET_ECN_ECT_0 :
						 INET_ECN_NOT_ECT;
}

/**
 * vroce_cc_line_update - re-read the line rate of the device's netdev
 * @vdev: the device
 * @ndev: its netdev, registered (the caller checked, under RTNL)
 *
 * The ethtool speed, or 10 Gb/s when the netdev reports none, in kbit/s,
 * kept in vroce_cc.line_kbps for vroce_cc_line_kbps(). Called when the
 * device is created and on the netdev's UP, DOWN and CHANGE events, so
 * that no verb calls into the netdev driver or takes RTNL for it.
 *
 * Context: process context, RTNL held: __ethtool_get_link_ksettings()
 * needs it, and it keeps @ndev from unregistering meanwhile.
 */
void vroce_cc_line_update(struct vroce_dev *vdev, struct net_device *ndev)
{
	struct ethtool_link_ksettings ks;
	u32 mbps = VROCE_CC_DEFAULT_MBPS;

	ASSERT_RTNL();
	if (!__ethtool_get_link_ksettings(ndev, &ks) &&
	    ks.base.speed != SPEED_UNKNOWN && ks.base.speed)
		mbps = min_t(u32, ks.base.speed, U32_MAX / 1000);
	WRITE_ONCE(vdev->cc.line_kbps, mbps * 1000);
}

/**
 * vroce_cc_line_kbps - the line rate of @vdev's port, kbit/s, for the RP
 * @vdev: the device
 *
 * Context: any; lock-free (the value vroce_cc_line_update() cached).
 */
u32 vroce_cc_line_kbps(struct vroce_dev *vdev)
{
	return READ_ONCE(vdev->cc.line_kbps);
}

/**
 * vroce_cc_qp_init - a QP's CC state: unlimited, nothing pending
 * @vdev: the QP's device
 * @qcc: the state, in the QP
 * @line_kbps: vroce_cc_line_kbps() of the device
 */
void vroce_cc_qp_init(struct vroce_dev *vdev, struct vroce_qp_cc *qcc,
		      u32 line_kbps)
{
	vroce_dcqcn_init(&qcc->rp, &vdev->cc.params, line_kbps);
	vroce_np_init(&qcc->np);
}

/**
 * vroce_cc_qp_uninit - undo vroce_cc_qp_init()
 * @vdev: the QP's device
 * @qcc: the state
 *
 * Clears the rate machine and the CNP moderation; the pacer timer and the
 * rest of @qcc belong to cc_rp.c (vroce_cc_rp_stop()).
 */
void vroce_cc_qp_uninit(struct vroce_dev *vdev, struct vroce_qp_cc *qcc)
{
	memset(&qcc->rp, 0, sizeof(qcc->rp));
	memset(&qcc->np, 0, sizeof(qcc->np));
}

struct vroce_cc_attr {
	struct device_attribute attr;
	u8 id;		/* knob id, or priority for the enables */
};

static struct vroce_cc *dev_to_cc(struct device *dev)
{
	return &rdma_device_to_drv_device(dev, struct vroce_dev, ibdev)->cc;
}

static u8 attr_id(struct device_attribute *attr)
{
	return container_of(attr, struct vroce_cc_attr, attr)->id;
}

static ssize_t knob_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  vroce_cc_knob_get(&dev_to_cc(dev)->params,
					    attr_id(attr)));
}

static ssize_t knob_store(struct device *dev, struct device_attribute *attr,
			  const char *buf, size_t count)
{
	u32 val;
	int err;

	/* Not a number, negative or too big: all EINVAL (kstrto* says ERANGE). */
	if (kstrtou32(buf, 0, &val))
		return -EINVAL;
	err = vroce_cc_knob_set(&dev_to_cc(dev)->params, attr_id(attr), val);
	return err ? err : count;
}

static ssize_t enable_show(unsigned long *mask, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%d\n", test_bit(attr_id(attr), mask));
}

static ssize_t enable_store(unsigned long *mask,
			    struct device_attribute *attr, const char *buf,
			    size_t count)
{
	u32 val;

	if (kstrtou32(buf, 0, &val) || val > 1)
		return -EINVAL;
	assign_bit(attr_id(attr), mask, val);
	return count;
}

static ssize_t np_enable_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return enable_show(&dev_to_cc(dev)->np_enable, attr, buf);
}

static ssize_t np_enable_store(struct device *dev,
			       struct device_attribute *attr, const char *buf,
			       size_t count)
{
	return enable_store(&dev_to_cc(dev)->np_enable, attr, buf, count);
}

static ssize_t rp_enable_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return enable_show(&dev_to_cc(dev)->rp_enable, attr, buf);
}

static ssize_t rp_enable_store(struct device *dev,
			       struct device_attribute *attr, const char *buf,
			       size_t count)
{
	return enable_store(&dev_to_cc(dev)->rp_enable, attr, buf, count);
}

#define CC_KNOB(_name, _id)						\
	static struct vroce_cc_attr cc_attr_##_name = {			\
		.attr = __ATTR(_name, 0644, knob_show, knob_store),	\
		.id = (_id),						\
	}

#define CC_ENABLE(_pt, _p)						\
	static struct vroce_cc_attr cc_attr_##_pt##_enable_##_p = {	\
		.attr = __ATTR(_pt##_enable_##_p, 0644, _pt##_enable_show, \
			       _pt##_enable_store),			\
		.id = (_p),						\
	}

CC_KNOB(rp_clamp_tgt_rate, VROCE_CC_RP_CLAMP_TGT_RATE);
CC_KNOB(rp_clamp_tgt_rate_ati, VROCE_CC_RP_CLAMP_TGT_RATE_ATI);
CC_KNOB(rp_time_reset, VROCE_CC_RP_TIME_RESET);
CC_KNOB(rp_byte_reset, VROCE_CC_RP_BYTE_RESET);
CC_KNOB(rp_threshold, VROCE_CC_RP_THRESHOLD);
CC_KNOB(rp_ai_rate, VROCE_CC_RP_AI_RATE);
CC_KNOB(rp_max_rate, VROCE_CC_RP_MAX_RATE);
CC_KNOB(rp_hai_rate, VROCE_CC_RP_HAI_RATE);
CC_KNOB(rp_min_dec_fac, VROCE_CC_RP_MIN_DEC_FAC);
CC_KNOB(rp_min_rate, VROCE_CC_RP_MIN_RATE);
CC_KNOB(rp_rate_to_set_on_first_cnp, VROCE_CC_RP_RATE_TO_SET_ON_FIRST_CNP);
CC_KNOB(rp_dce_tcp_g, VROCE_CC_RP_DCE_TCP_G);
CC_KNOB(rp_dce_tcp_rtt, VROCE_CC_RP_DCE_TCP_RTT);
CC_KNOB(rp_rate_reduce_monitor_period,
	VROCE_CC_RP_RATE_REDUCE_MONITOR_PERIOD);
CC_KNOB(rp_initial_alpha_value, VROCE_CC_RP_INITIAL_ALPHA_VALUE);
CC_KNOB(rp_gd, VROCE_CC_RP_GD);
CC_KNOB(np_min_time_between_cnps, VROCE_CC_NP_MIN_TIME_BETWEEN_CNPS);
CC_KNOB(np_cnp_dscp, VROCE_CC_NP_CNP_DSCP);
CC_KNOB(np_cnp_prio, VROCE_CC_NP_CNP_PRIO);
CC_ENABLE(np, 0);
CC_ENABLE(rp, 0);
CC_ENABLE(np, 1);
CC_ENABLE(rp, 1);
CC_ENABLE(np, 2);
CC_ENABLE(rp, 2);
CC_ENABLE(np, 3);
CC_ENABLE(rp, 3);
CC_ENABLE(np, 4);
CC_ENABLE(rp, 4);
CC_ENABLE(np, 5);
CC_ENABLE(rp, 5);
CC_ENABLE(np, 6);
CC_ENABLE(rp, 6);
CC_ENABLE(np, 7);
CC_ENABLE(rp, 7);

#define CC_ATTR(_name)		(&cc_attr_##_name.attr.attr)

static struct attribute *vroce_cc_attrs[] = {
	CC_ATTR(rp_clamp_tgt_rate),
	CC_ATTR(rp_clamp_tgt_rate_ati),
	CC_ATTR(rp_time_reset),
	CC_ATTR(rp_byte_reset),
	CC_ATTR(rp_threshold),
	CC_ATTR(rp_ai_rate),
	CC_ATTR(rp_max_rate),
	CC_ATTR(rp_hai_rate),
	CC_ATTR(rp_min_dec_fac),
	CC_ATTR(rp_min_rate),
	CC_ATTR(rp_rate_to_set_on_first_cnp),
	CC_ATTR(rp_dce_tcp_g),
	CC_ATTR(rp_dce_tcp_rtt),
	CC_ATTR(rp_rate_reduce_monitor_period),
	CC_ATTR(rp_initial_alpha_value),
	CC_ATTR(rp_gd),
	CC_ATTR(np_min_time_between_cnps),
	CC_ATTR(np_cnp_dscp),
	CC_ATTR(np_cnp_prio),
	CC_ATTR(np_enable_0),
	CC_ATTR(rp_enable_0),
	CC_ATTR(np_enable_1),
	CC_ATTR(rp_enable_1),
	CC_ATTR(np_enable_2),
	CC_ATTR(rp_enable_2),
	CC_ATTR(np_enable_3),
	CC_ATTR(rp_enable_3),
	CC_ATTR(np_enable_4),
	CC_ATTR(rp_enable_4),
	CC_ATTR(np_enable_5),
	CC_ATTR(rp_enable_5),
	CC_ATTR(np_enable_6),
	CC_ATTR(rp_enable_6),
	CC_ATTR(np_enable_7),
	CC_ATTR(rp_enable_7),
	NULL
};

const struct attribute_group vroce_cc_attr_group = {
	.name = "cc",
	.attrs = vroce_cc_attrs,
};

#ifdef VROCE_DEBUG
#include "selftest/cc.c"
#endif
