/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_MCAST_H
#define _VROCE_MCAST_H

#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <rdma/ib_verbs.h>

struct sk_buff;
struct vroce_dev;
struct vroce_qp;

/* The DestQP of every multicast packet (IBTA 9.2: QP 0xFFFFFF). */
#define VROCE_QPN_MCAST 0xffffff

#define VROCE_MCAST_HASH_BITS 6

/**
 * struct vroce_mcast - a device's multicast groups (mcast.c: locking)
 * @lock: serializes attach, detach and group creation and removal
 * @groups: struct vroce_mcg by MGID; RCU for the receive and send paths
 * @num_grps: groups, bounded by attr.max_mcast_grp (@lock)
 * @num_attach: QP attachments, bounded by attr.max_total_mcast_qp_attach
 *	(@lock)
 */
struct vroce_mcast {
	struct mutex lock; /* see mcast.c */
	DECLARE_HASHTABLE(groups, VROCE_MCAST_HASH_BITS);
	unsigned int num_grps;
	unsigned int num_attach;
};

/* mcast.c APIs: */
void vroce_mcast_dev_init(struct vroce_dev *vdev);
void vroce_mcast_dev_uninit(struct vroce_dev *vdev);
int vroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid);
int vroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid);
void vroce_mcast_qp_destroyed(struct vroce_qp *qp);
void vroce_mcast_mac(const union ib_gid *mgid, u8 *mac);
bool vroce_mcast_has_group(struct vroce_dev *vdev, const union ib_gid *mgid);
void vroce_mcast_rx(struct vroce_dev *vdev, const union ib_gid *dgid,
		    struct sk_buff *skb);

#endif /* _VROCE_MCAST_H */
