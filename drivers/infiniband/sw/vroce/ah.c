// SPDX-License-Identifier: GPL-2.0
/*
 * Address handles (rdma_user_rxe.h uABI).
 *
 * Every AH gets a number (ah_num, 1 and up) in vroce_dev.ahs. A user AH's
 * number goes back to the rxe provider in struct rxe_create_ah_resp and
 * comes back in each UD send WQE (wr.ud.ah_num); a kernel UD send WQE
 * carries it too (qp_post.c). A user WQE with ah_num 0 comes from a
 * provider that predates ah_num and carries the address vector itself
 * (wr.ud.av), which vroce_ah_av_from_user() reads.
 *
 * Kernel consumers create AHs in atomic context (the MAD layer without
 * RDMA_CREATE_AH_SLEEPABLE): creation allocates nothing itself but the
 * xarray slot, with GFP_ATOMIC then, and destruction never sleeps.
 *
 * Locking and lifetime: ib_core frees the AH as soon as destroy_ah
 * returns, possibly with a send WQE still naming it. So nothing keeps an
 * AH pointer: the sender looks the number up under the xarray's lock
 * (irqsave: destroy_ah may run with interrupts disabled), checks that the
 * AH is in the QP's PD and copies what it needs (struct vroce_ah_av) with
 * its own reference on the source GID before the lock is dropped. An AH
 * destroyed before its WQE is sent fails that WQE. ib_core holds
 * ibah.sgid_attr from creation until after destroy_ah.
 *
 * Source GID: its type (RoCE v1, RoCE v2 over IPv4 or IPv6) selects the
 * framing (tx.c). The destination MAC comes from the AH: ib_core resolves
 * it for user AHs, kernel consumers fill it in; for a multicast DGID it is
 * the group's MAC (vroce_mcast_mac()), whatever the AH says.
 */

#include <linux/etherdevice.h>
#include <linux/xarray.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <uapi/rdma/rdma_user_rxe.h>

#include "ah.h"
#include "device.h"
#include "mcast.h"
#include "query.h"
#include "tx.h"

void vroce_ah_dev_init(struct vroce_dev *vdev)
{
	xa_init_flags(&vdev->ahs, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	vdev->ah_next = 1;
	atomic_set(&vdev->num_ahs, 0);
}

/* Every AH is destroyed before ib_core deallocates the device. */
void vroce_ah_dev_uninit(struct vroce_dev *vdev)
{
	WARN_ON(!xa_empty(&vdev->ahs));
	xa_destroy(&vdev->ahs);
}

static int vroce_ah_check(const struct rdma_ah_attr *attr,
			  const struct ib_gid_attr *sgid_attr)
{
	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH) ||
	    rdma_ah_get_port_num(attr) != 1 || !sgid_attr)
		return -EINVAL;
	switch (rdma_gid_attr_network_type(sgid_attr)) {
	case RDMA_NETWORK_ROCE_V1:
	case RDMA_NETWORK_IPV4:
	case RDMA_NETWORK_IPV6:
		return 0;
	default:
		return -EINVAL;
	}
}

static int vroce_ah_insert(struct vroce_dev *vdev, struct vroce_ah *ah,
			   bool sleepable)
{
	unsigned long flags;
	int err;

	if (sleepable)
		return xa_alloc_cyclic_irq(&vdev->ahs, &ah->ah_num, ah,
					   XA_LIMIT(1, U32_MAX), &vdev->ah_next,
					   GFP_KERNEL) < 0 ? -ENOMEM : 0;
	/* GFP_ATOMIC: __xa_alloc_cyclic() never drops the lock. */
	xa_lock_irqsave(&vdev->ahs, flags);
	err = __xa_alloc_cyclic(&vdev->ahs, &ah->ah_num, ah,
				XA_LIMIT(1, U32_MAX), &vdev->ah_next,
				GFP_ATOMIC);
	xa_unlock_irqrestore(&vdev->ahs, flags);
	return err < 0 ? -ENOMEM : 0;
}

/**
 * vroce_create_ah - create a kernel or user address handle
 * @ibah: the AH, allocated by ib_core (ibah->sgid_attr held by it)
 * @init: the address vector and RDMA_CREATE_AH_SLEEPABLE
 * @udata: user data (rxe_create_ah_resp out), or NULL for a kernel AH
 *
 * Context: process context, atomic unless RDMA_CREATE_AH_SLEEPABLE.
 * Return: 0, -EINVAL for an address vector vroce cannot send to, -ENOMEM
 * if there are max_ah AHs already, or a copy-out error.
 */
int vroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct vroce_dev *vdev = to_vdev(ibah->device);
	struct vroce_ah *ah = to_vah(ibah);
	struct rxe_create_ah_resp resp = {};
	int err;

	err = vroce_ah_check(init->ah_attr, ibah->sgid_attr);
	if (err)
		return err;
	if (atomic_inc_return(&vdev->num_ahs) > vdev->attr.max_ah) {
		err = -ENOMEM;
		goto err_count;
	}
	ah->attr = *init->ah_attr;
	ah->attr.grh.sgid_attr = NULL;
	err = vroce_ah_insert(vdev, ah,
			      init->flags & RDMA_CREATE_AH_SLEEPABLE);
	if (err)
		goto err_count;
	/* A provider older than ah_num sends no room for it. */
	if (udata && udata->outlen >= sizeof(resp)) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&vdev->ahs, ah->ah_num);
err_count:
	atomic_dec(&vdev->num_ahs);
	return err;
}

/* Context: any; sleeps never (RDMA_DESTROY_AH_SLEEPABLE or not). */
int vroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct vroce_dev *vdev = to_vdev(ibah->device);
	struct vroce_ah *ah = to_vah(ibah);
	unsigned long irqflags;

	xa_lock_irqsave(&vdev->ahs, irqflags);
	__xa_erase(&vdev->ahs, ah->ah_num);
	xa_unlock_irqrestore(&vdev->ahs, irqflags);
	atomic_dec(&vdev->num_ahs);
	return 0;
}

int vroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = to_vah(ibah)->attr;
	attr->grh.sgid_attr = ibah->sgid_attr;
	return 0;
}

/* A multicast DGID: the group's MAC, the same for every kind of AH. */
static void vroce_ah_av_mcast(struct vroce_ah_av *av)
{
	if (rdma_is_multicast_addr((struct in6_addr *)av->dgid.raw))
		vroce_mcast_mac(&av->dgid, av->dmac);
}

/**
 * vroce_ah_av_get - copy the address vector of AH number @ah_num
 * @vdev: the device
 * @pd: the PD of the QP that sends: the AH must be in it
 * @ah_num: the AH's number
 * @av: gets the address vector, with a source GID reference
 *	(vroce_ah_av_put())
 *
 * Context: any.
 * Return: 0, or -EINVAL if there is no such AH in @pd.
 */
int vroce_ah_av_get(struct vroce_dev *vdev, struct ib_pd *pd, u32 ah_num,
		    struct vroce_ah_av *av)
{
	const struct rdma_ah_attr *attr;
	struct vroce_ah *ah;
	unsigned long flags;
	int err = -EINVAL;

	xa_lock_irqsave(&vdev->ahs, flags);
	ah = xa_load(&vdev->ahs, ah_num);
	if (ah && ah->ibah.pd == pd) {
		attr = &ah->attr;
		av->sgid_attr = ah->ibah.sgid_attr;
		rdma_hold_gid_attr(av->sgid_attr);
		av->dgid = attr->grh.dgid;
		ether_addr_copy(av->dmac, attr->roce.dmac);
		av->flow_label = attr->grh.flow_label;
		av->traffic_class = attr->grh.traffic_class;
		av->hop_limit = attr->grh.hop_limit;
		av->sl = attr->sl;
		err = 0;
	}
	xa_unlock_irqrestore(&vdev->ahs, flags);
	if (!err)
		vroce_ah_av_mcast(av);
	return err;
}

/**
 * vroce_ah_av_from_user - the address vector of a WQE from an old provider
 * @vdev: the device
 * @uav: the WQE's struct rxe_av, copied out of the ring
 * @av: gets the address vector, with a source GID reference
 *
 * Context: process context.
 * Return: 0, or -EINVAL for a bad port or source GID index.
 */
int vroce_ah_av_from_user(struct vroce_dev *vdev, const struct rxe_av *uav,
			  struct vroce_ah_av *av)
{
	const struct ib_gid_attr *sgid_attr;

	if (uav->port_num != 1)
		return -EINVAL;
	sgid_attr = rdma_get_gid_attr(&vdev->ibdev, 1, uav->grh.sgid_index);
	if (IS_ERR(sgid_attr))
		return -EINVAL;
	av->sgid_attr = sgid_attr;
	memcpy(av->dgid.raw, uav->grh.dgid.raw, sizeof(av->dgid.raw));
	ether_addr_copy(av->dmac, uav->dmac);
	av->flow_label = uav->grh.flow_label;
	av->traffic_class = uav->grh.traffic_class;
	av->hop_limit = uav->grh.hop_limit;
	av->sl = 0;
	vroce_ah_av_mcast(av);
	return 0;
}

void vroce_ah_av_put(struct vroce_ah_av *av)
{
	if (av->sgid_attr)
		rdma_put_gid_attr(av->sgid_attr);
	av->sgid_attr = NULL;
}

/* The addressing part of a packet description; @av stays held meanwhile. */
void vroce_ah_av_to_pkt(const struct vroce_ah_av *av,
			struct vroce_pkt_info *pi)
{
	pi->sgid_attr = av->sgid_attr;
	pi->dgid = av->dgid;
	ether_addr_copy(pi->dmac, av->dmac);
	pi->traffic_class = av->traffic_class;
	pi->hop_limit = av->hop_limit;
	pi->flow_label = av->flow_label;
	pi->sl = av->sl;
}
