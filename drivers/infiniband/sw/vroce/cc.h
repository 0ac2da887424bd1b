/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Congestion control of a device: its DCQCN knobs, the per-priority NP/RP
 * enables, their sysfs files (/sys/class/infiniband/<dev>/cc/), and the
 * per-QP state the transport drives (dcqcn.h has the machine itself).
 */
#ifndef _VROCE_CC_H
#define _VROCE_CC_H

#include <linux/compiler.h>
#include <linux/hrtimer.h>
#include <linux/sysfs.h>
#include <linux/types.h>
#include <net/route.h>

#include "dcqcn.h"

struct ib_qp;
struct net_device;
struct sk_buff;
struct vroce_dev;
struct vroce_pkt_info;
struct vroce_qp;

#define VROCE_CC_NR_PRIOS	8

/**
 * struct vroce_cc - congestion control of one device
 * @params: the knobs (WRITE_ONCE by sysfs, READ_ONCE by the machine)
 * @np_enable: bit p set: the NP answers CE-marked packets of priority p
 * @rp_enable: bit p set: the RP reacts to CNPs on priority p and data
 *	packets of priority p carry ECT(0)
 * @line_kbps: the netdev's link speed, kbit/s, the RP's maximum rate when
 *	rp_max_rate is 0; written under RTNL by vroce_cc_line_update() at
 *	creation and on netdev events, read lock-free by new QPs
 *
 * No lock: every knob is one u32, the enables are changed with atomic bit
 * operations, and a change takes effect at each QP's next event.
 */
struct vroce_cc {
	struct vroce_cc_params params;
	unsigned long np_enable;
	unsigned long rp_enable;
	u32 line_kbps;
};

/**
 * struct vroce_qp_cc - congestion-control state of one QP
 * @rp: reaction point (the QP as a sender)
 * @np: notification point (the QP as a receiver of CE-marked packets)
 * @timer: the RP timer: the pacer's next send and DCQCN's next event;
 *	kicks the task (it takes a QP reference like the transport timer)
 * @timer_fired: set by @timer, consumed by the task (bit 0)
 * @armed_ns: when @timer is set to fire (U64_MAX: not armed)
 * @due_ns: vroce_dcqcn_next_timer() after the last event
 * @next_tx_ns: the pacer: the earliest time of the next packet
 * @blocked: the requester waits for @next_tx_ns
 * @prio: the QP's priority (vroce_cc_prio() of its path)
 * @v2: the QP's path is RoCEv2 (its packets carry IP ECN bits)
 * @rate_kbps: @rp's pacer rate, published for debugfs and rdma (READ_ONCE)
 *
 * Everything but @timer_fired and @rate_kbps is owned by the QP's task
 * (task_mutex), like the rest of the transport (cc_rp.c).
 */
struct vroce_qp_cc {
	struct vroce_dcqcn rp;
	struct vroce_np np;
	struct hrtimer timer;
	unsigned long timer_fired;
	u64 armed_ns;
	u64 due_ns;
	u64 next_tx_ns;
	bool blocked;
	u8 prio;
	bool v2;
	u32 rate_kbps;
};

/**
 * vroce_cc_prio - the priority (skb->priority, 0-7) of a QP's packets
 * @sl: the path's service level
 * @tclass: the path's traffic class
 *
 * The SL when it is not 0 (rdma_cm derives it from the ToS and the VLAN or
 * mqprio configuration, iboe_tos_to_sl()), else what the IP stack gives a
 * socket with that ToS (rt_tos2priority()), so that a VLAN egress map and
 * mqprio/DCB classify vroce's packets as they do a hardware RNIC's.
 */
static inline u8 vroce_cc_prio(u8 sl, u8 tclass)
{
	return (sl ? sl : rt_tos2priority(tclass)) & 7;
}

/* Is the QP rate limited? The only test on the hot path when it is not. */
static inline bool vroce_cc_paced(const struct vroce_qp_cc *qcc)
{
	return unlikely(qcc->rp.limited);
}

/* cc.c APIs: */
extern const struct attribute_group vroce_cc_attr_group;
void vroce_cc_init(struct vroce_cc *cc);
bool vroce_cc_np_enabled(struct vroce_dev *vdev, u8 prio);
bool vroce_cc_rp_enabled(struct vroce_dev *vdev, u8 prio);
u8 vroce_cc_ecn(struct vroce_dev *vdev, u8 prio);
void vroce_cc_line_update(struct vroce_dev *vdev, struct net_device *ndev);
u32 vroce_cc_line_kbps(struct vroce_dev *vdev);
void vroce_cc_qp_init(struct vroce_dev *vdev, struct vroce_qp_cc *qcc,
		      u32 line_kbps);
void vroce_cc_qp_uninit(struct vroce_dev *vdev, struct vroce_qp_cc *qcc);

/* cc_np.c APIs (notification point; context: the QP's task): */
void vroce_cc_np_rx(struct vroce_qp *qp, struct sk_buff *skb);

/* cc_rp.c APIs (reaction point and pacer; context: the QP's task): */
void vroce_cc_rp_setup(struct vroce_qp *qp);
void vroce_cc_rp_reset(struct vroce_qp *qp);
void vroce_cc_rp_stop(struct vroce_qp *qp);
void vroce_cc_rp_path(struct vroce_qp *qp);
void vroce_cc_rp_cnp(struct vroce_qp *qp, struct sk_buff *skb);
void vroce_cc_rp_timer(struct vroce_qp *qp);
bool vroce_cc_rp_wait(struct vroce_qp *qp);
void vroce_cc_rp_sent(struct vroce_qp *qp, u32 bytes);
u8 vroce_cc_qp_ecn(struct vroce_qp *qp);
int vroce_cc_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);

#ifdef VROCE_DEBUG
bool vroce_cc_selftest(void);
#else
static inline bool vroce_cc_selftest(void)
{
	return true;
}
#endif

#endif /* _VROCE_CC_H */
