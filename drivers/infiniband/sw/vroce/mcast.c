// SPDX-License-Identifier: GPL-2.0
/*
 * Multicast groups of UD QPs: attach_mcast/detach_mcast, the receive
 * fan-out and the lookup the send path uses for the local copy.
 *
 * A group (struct vroce_mcg) exists while at least one QP is attached to
 * its MGID; an attachment (struct vroce_mca) links one QP to one group and
 * counts how many times the QP was attached (a kernel consumer attaching
 * twice must detach twice: ib_core counts every successful attach in the
 * QP's usecnt). uverbs never attaches a user QP twice itself: it answers a
 * repeated attach with 0 and a detach of a group the QP is not in with
 * EINVAL before calling the driver. Errors: EINVAL for a QP that is not UD
 * or an MGID that is not multicast (ib_core checks both first) and for a
 * detach of a QP not attached; ENOMEM beyond max_mcast_grp groups,
 * max_mcast_qp_attach QPs in a group, max_total_mcast_qp_attach
 * attachments, or igmp_max_memberships groups of one QP.
 *
 * A UD QP is to its groups what a UDP socket is to its memberships, so one
 * QP may be in at most as many groups as one socket of the netdev's
 * namespace may join (the sysctl net.ipv4.igmp_max_memberships, 20 by
 * default), IPv4 or IPv6 groups alike (IPv6 has no count of its own).
 *
 * When a group gets its first QP, the netdev learns the group's MAC
 * (dev_mc_add(): IPv4-mapped MGIDs map to 01:00:5e and the low 23 bits,
 * others to 33:33 and the last 4 bytes) and, because RoCEv2 datagrams
 * reach vroce through the host's IP stack, which drops multicast
 * datagrams of groups the interface is not a member of, the bound netdev
 * joins the group at the IP level (ip_mc_inc_group() for IPv4-mapped
 * MGIDs, ipv6_dev_mc_inc() otherwise; that also sends IGMP/MLD reports,
 * which snooping switches need). Both are undone when the group loses its
 * last QP. rdma_cm joins IPv4 groups itself too; the memberships are
 * counted by the IP stack, so each side leaves only what it joined.
 *
 * Receive (vroce_mcast_rx()): a packet with DestQP 0xFFFFFF whose
 * destination address is the MGID of a group goes, as a clone, to every
 * QP attached to it; each QP's task applies its own checks (state, Q_Key,
 * receive WQE). A packet for a group this device does not have counts in
 * rcvd_no_qp.
 *
 * Locking and lifetime:
 * - vroce_mcast.lock (mutex) serializes attach and detach, and with them
 *   every change of the group table, of a group's QP list, of a QP's list
 *   of attachments and of the counts. It is taken in process context only;
 *   RTNL nests inside it (the IP join), and dev_mc_add() takes the
 *   netdev's address lock (a BH spinlock) inside that.
 * - The receive path (softirq) and the send path read the group table and
 *   a group's QP list under RCU. Groups and attachments are unlinked with
 *   the _rcu list helpers and freed with kfree_rcu().
 * - An RCU reader reaches the QP through the attachment's struct
 *   vroce_qp_ref (qp.c), which outlives the QP by a grace period: it
 *   takes a reference with vroce_qp_tryget() before touching the QP, as
 *   vroce_qp_get() does. The QP pointer itself is for the attach and
 *   detach paths, under vroce_mcast.lock.
 * - ib_core refuses to destroy a QP that is still attached (its usecnt)
 *   and uverbs detaches a user QP from every group before destroying it,
 *   so vroce_mcast_qp_destroyed() normally finds nothing; it detaches
 *   whatever is left. Every QP is destroyed before the device is
 *   deallocated, so the table is empty then.
 */

#include <linux/etherdevice.h>
#include <linux/igmp.h>
#include <linux/jhash.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>

#include "counters.h"
#include "device.h"
#include "mcast.h"
#include "qp.h"
#include "rx.h"

/**
 * struct vroce_mcg - a multicast group with at least one QP attached
 * @node: entry in vroce_mcast.groups (RCU)
 * @mgid: the group's GID
 * @mac: its Ethernet multicast address, added to the netdev's filter
 * @qps: the attachments, struct vroce_mca (RCU)
 * @num_qps: entries of @qps (vroce_mcast.lock)
 * @ip_joined: the bound netdev joined the group at the IP level
 * @rcu: frees the group after a grace period
 */
struct vroce_mcg {
	struct hlist_node node;
	union ib_gid mgid;
	u8 mac[ETH_ALEN];
	struct list_head qps;
	unsigned int num_qps;
	bool ip_joined;
	struct rcu_head rcu;
};

/**
 * struct vroce_mca - one QP attached to one group
 * @grp_node: entry in vroce_mcg.qps (RCU)
 * @qp_node: entry in vroce_qp.mcast (vroce_mcast.lock)
 * @qp: the QP (vroce_mcast.lock)
 * @ref: the QP's lookup references, for RCU readers (vroce_qp_tryget())
 * @mcg: the group
 * @count: successful attaches minus detaches, at least 1
 * @rcu: frees the attachment after a grace period
 */
struct vroce_mca {
	struct list_head grp_node;
	struct list_head qp_node;
	struct vroce_qp *qp;
	struct vroce_qp_ref *ref;
	struct vroce_mcg *mcg;
	unsigned int count;
	struct rcu_head rcu;
};

void vroce_mcast_dev_init(struct vroce_dev *vdev)
{
	mutex_init(&vdev->mcast.lock);
	hash_init(vdev->mcast.groups);
	vdev->mcast.num_grps = 0;
	vdev->mcast.num_attach = 0;
}

/* Every QP, so every attachment, is gone before ib_core deallocates. */
void vroce_mcast_dev_uninit(struct vroce_dev *vdev)
{
	WARN_ON(vdev->mcast.num_grps || vdev->mcast.num_attach);
	mutex_destroy(&vdev->mcast.lock);
}

/**
 * vroce_mcast_mac - the Ethernet address of a multicast GID
 * @mgid: a multicast GID (rdma_is_multicast_addr())
 * @mac: gets the address: 01:00:5e and the low 23 bits of the IPv4
 *	address for an IPv4-mapped GID, else 33:33 and its last 4 bytes
 */
void vroce_mcast_mac(const union ib_gid *mgid, u8 *mac)
{
	const struct in6_addr *addr = (const struct in6_addr *)mgid->raw;

	if (ipv6_addr_v4mapped(addr))
		ip_eth_mc_map(addr->s6_addr32[3], mac);
	else
		ipv6_eth_mc_map(addr, mac);
}

static u32 vroce_mcg_hash(const union ib_gid *mgid)
{
	return jhash(mgid->raw, sizeof(mgid->raw), 0);
}

/* Context: under rcu_read_lock() or vroce_mcast.lock. */
static struct vroce_mcg *vroce_mcg_find(struct vroce_dev *vdev,
					const union ib_gid *mgid)
{
	u32 bkt = hash_min(vroce_mcg_hash(mgid), VROCE_MCAST_HASH_BITS);
	struct hlist_head *head = &vdev->mcast.groups[bkt];
	struct vroce_mcg *mcg;

	hlist_for_each_entry_rcu(mcg, head, node,
				 lockdep_is_held(&vdev->mcast.lock))
		if (!memcmp(mcg->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return mcg;
	return NULL;
}

/*
 * Join (@join) or leave the group at the IP level on the bound netdev,
 * so that the IP stack passes its RoCEv2 datagrams to the UDP socket.
 * Without IPv4 or IPv6 on the netdev there is nothing to join.
 */
static bool vroce_mcg_ip(struct net_device *ndev, const union ib_gid *mgid,
			 bool join)
{
	const struct in6_addr *addr = (const struct in6_addr *)mgid->raw;
	struct in_device *in_dev;
	bool done = false;

	rtnl_lock();
	if (ipv6_addr_v4mapped(addr)) {
		in_dev = __in_dev_get_rtnl(ndev);
		if (in_dev && join)
			ip_mc_inc_group(in_dev, addr->s6_addr32[3]);
		else if (in_dev)
			ip_mc_dec_group(in_dev, addr->s6_addr32[3]);
		done = !!in_dev;
	} else if (IS_ENABLED(CONFIG_IPV6)) {
		done = !(join ? ipv6_dev_mc_inc(ndev, addr) :
				ipv6_dev_mc_dec(ndev, addr));
	}
	rtnl_unlock();
	return done;
}

static struct vroce_mcg *vroce_mcg_create(struct vroce_dev *vdev,
					  const union ib_gid *mgid)
{
	struct vroce_mcast *mc = &vdev->mcast;
	struct vroce_mcg *mcg;
	int err;

	lockdep_assert_held(&mc->lock);

	if (mc->num_grps >= vdev->attr.max_mcast_grp)
		return ERR_PTR(-ENOMEM);
	mcg = kzalloc(sizeof(*mcg), GFP_KERNEL);
	if (!mcg)
		return ERR_PTR(-ENOMEM);
	mcg->mgid = *mgid;
	INIT_LIST_HEAD(&mcg->qps);
	vroce_mcast_mac(mgid, mcg->mac);
	err = dev_mc_add(vdev->ndev, mcg->mac);
	if (err) {
		kfree(mcg);
		return ERR_PTR(err);
	}
	mcg->ip_joined = vroce_mcg_ip(vdev->ndev, mgid, true);
	hash_add_rcu(mc->groups, &mcg->node, vroce_mcg_hash(mgid));
	mc->num_grps++;
	return mcg;
}

/* The group's last QP left: readers may still see it until a grace period. */
static void vroce_mcg_destroy(struct vroce_dev *vdev, struct vroce_mcg *mcg)
{
	lockdep_assert_held(&vdev->mcast.lock);

	hash_del_rcu(&mcg->node);
	vdev->mcast.num_grps--;
	if (mcg->ip_joined)
		vroce_mcg_ip(vdev->ndev, &mcg->mgid, false);
	dev_mc_del(vdev->ndev, mcg->mac);
	kfree_rcu(mcg, rcu);
}

static struct vroce_mca *vroce_mca_find(struct vroce_qp *qp,
					const union ib_gid *mgid)
{
	struct vroce_mca *mca;

	lockdep_assert_held(&to_vdev(qp->ibqp.device)->mcast.lock);

	list_for_each_entry(mca, &qp->mcast, qp_node)
		if (!memcmp(mca->mcg->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return mca;
	return NULL;
}

/* May @qp join one group more? As many as a socket of the namespace. */
static bool vroce_mca_qp_room(struct vroce_dev *vdev, struct vroce_qp *qp)
{
	struct net *net = dev_net(vdev->ndev);
	struct vroce_mca *mca;
	int n = 0;

	lockdep_assert_held(&vdev->mcast.lock);

	list_for_each_entry(mca, &qp->mcast, qp_node)
		n++;
	return n < READ_ONCE(net->ipv4.sysctl_igmp_max_memberships);
}

static int vroce_mca_add(struct vroce_dev *vdev, struct vroce_qp *qp,
			 const union ib_gid *mgid)
{
	struct vroce_mcast *mc = &vdev->mcast;
	struct vroce_mcg *mcg;
	struct vroce_mca *mca;

	lockdep_assert_held(&mc->lock);

	if (mc->num_attach >= vdev->attr.max_total_mcast_qp_attach ||
	    !vroce_mca_qp_room(vdev, qp))
		return -ENOMEM;
	mcg = vroce_mcg_find(vdev, mgid);
	if (mcg && mcg->num_qps >= vdev->attr.max_mcast_qp_attach)
		return -ENOMEM;
	mca = kzalloc(sizeof(*mca), GFP_KERNEL);
	if (!mca)
		return -ENOMEM;
	if (!mcg) {
		mcg = vroce_mcg_create(vdev, mgid);
		if (IS_ERR(mcg)) {
			kfree(mca);
			return PTR_ERR(mcg);
		}
	}
	mca->qp = qp;
	mca->ref = qp->ref;
	mca->mcg = mcg;
	mca->count = 1;
	list_add_tail(&mca->qp_node, &qp->mcast);
	list_add_tail_rcu(&mca->grp_node, &mcg->qps);
	mcg->num_qps++;
	mc->num_attach++;
	return 0;
}

static void vroce_mca_del(struct vroce_dev *vdev, struct vroce_mca *mca)
{
	struct vroce_mcg *mcg = mca->mcg;

	lockdep_assert_held(&vdev->mcast.lock);

	list_del(&mca->qp_node);
	list_del_rcu(&mca->grp_node);
	kfree_rcu(mca, rcu);
	vdev->mcast.num_attach--;
	if (!--mcg->num_qps)
		vroce_mcg_destroy(vdev, mcg);
}

/**
 * vroce_attach_mcast - attach a UD QP to a multicast group
 * @ibqp: the QP
 * @mgid: the group's GID
 * @mlid: ignored (RoCE has no LIDs)
 *
 * Context: process context, not holding RTNL.
 * Return: 0, -EINVAL for a QP that is not UD or a GID that is not
 * multicast, -ENOMEM beyond a limit or without memory, or dev_mc_add()'s
 * error.
 */
int vroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid)
{
	struct vroce_dev *vdev = to_vdev(ibqp->device);
	struct vroce_qp *qp = to_vqp(ibqp);
	struct vroce_mca *mca;
	int err = 0;

	if (ibqp->qp_type != IB_QPT_UD ||
	    !rdma_is_multicast_addr((struct in6_addr *)mgid->raw))
		return -EINVAL;

	mutex_lock(&vdev->mcast.lock);
	mca = vroce_mca_find(qp, mgid);
	if (mca)
		mca->count++;
	else
		err = vroce_mca_add(vdev, qp, mgid);
	mutex_unlock(&vdev->mcast.lock);
	return err;
}

/**
 * vroce_detach_mcast - detach a UD QP from a multicast group
 * @ibqp: the QP
 * @mgid: the group's GID
 * @mlid: ignored
 *
 * Context: process context, not holding RTNL.
 * Return: 0, or -EINVAL if the QP is not attached to @mgid.
 */
int vroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 mlid)
{
	struct vroce_dev *vdev = to_vdev(ibqp->device);
	struct vroce_qp *qp = to_vqp(ibqp);
	struct vroce_mca *mca;
	int err = 0;

	mutex_lock(&vdev->mcast.lock);
	mca = vroce_mca_find(qp, mgid);
	if (!mca)
		err = -EINVAL;
	else if (!--mca->count)
		vroce_mca_del(vdev, mca);
	mutex_unlock(&vdev->mcast.lock);
	return err;
}

/**
 * vroce_mcast_qp_destroyed - detach a QP being destroyed from every group
 * @qp: the QP; called by destroy_qp before it waits for the QP's references
 *
 * Context: process context. Nothing concurrent attaches this QP.
 */
void vroce_mcast_qp_destroyed(struct vroce_qp *qp)
{
	struct vroce_dev *vdev = to_vdev(qp->ibqp.device);
	struct vroce_mca *mca, *next;

	if (list_empty(&qp->mcast))
		return;
	mutex_lock(&vdev->mcast.lock);
	list_for_each_entry_safe(mca, next, &qp->mcast, qp_node)
		vroce_mca_del(vdev, mca);
	mutex_unlock(&vdev->mcast.lock);
}

/**
 * vroce_mcast_has_group - does the device have a group for @mgid
 * @vdev: the device
 * @mgid: a GID
 *
 * Context: any.
 */
bool vroce_mcast_has_group(struct vroce_dev *vdev, const union ib_gid *mgid)
{
	bool found;

	rcu_read_lock();
	found = vroce_mcg_find(vdev, mgid);
	rcu_read_unlock();
	return found;
}

/**
 * vroce_mcast_rx - deliver a multicast packet to the QPs of its group
 * @vdev: the device it arrived for
 * @dgid: its destination address as a GID
 * @skb: the validated packet, vroce_rx_cb() filled in; consumed
 *
 * Context: softirq (or BHs disabled), as the receive path.
 */
void vroce_mcast_rx(struct vroce_dev *vdev, const union ib_gid *dgid,
		    struct sk_buff *skb)
{
	struct vroce_mcg *mcg;
	struct vroce_mca *mca;
	struct sk_buff *clone;
	struct vroce_qp *qp;

	rcu_read_lock();
	mcg = vroce_mcg_find(vdev, dgid);
	if (!mcg) {
		rcu_read_unlock();
		vroce_counter_inc(&vdev->counters, VROCE_CNT_RCVD_NO_QP);
		kfree_skb(skb);
		return;
	}
	list_for_each_entry_rcu(mca, &mcg->qps, grp_node) {
		qp = vroce_qp_tryget(mca->ref);
		if (!qp)
			continue;
		clone = skb_clone(skb, GFP_ATOMIC);
		if (!clone) {
			vroce_qp_put(qp);
			continue;	/* unreliable: the others may get it */
		}
		vroce_qp_rx(qp, clone, NULL);
	}
	rcu_read_unlock();
	consume_skb(skb);
}
