// SPDX-License-Identifier: GPL-2.0
/*
 * The single Ethernet port: its state follows the netdev's carrier and
 * administrative state, its active MTU the netdev MTU, its speed and width
 * the netdev's link settings. The GID table is filled by ib_core from the
 * netdev's addresses (RoCEv1 and RoCEv2 GIDs for each).
 *
 * Nothing here is cached except the last state reported to ib_core
 * (vroce_dev.port_active, RTNL); queries read the netdev directly.
 */

#include <linux/netdevice.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <uapi/rdma/ib_user_ioctl_verbs.h>

#include "device.h"
#include "port.h"
#include "query.h"

bool vroce_port_is_active(struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

/**
 * vroce_port_dispatch_event - tell ib_core's clients the port went up or down
 * @vdev: the device
 * @active: the new state
 *
 * Context: RTNL held; may sleep.
 */
void vroce_port_dispatch_event(struct vroce_dev *vdev, bool active)
{
	struct ib_event event = {
		.device = &vdev->ibdev,
		.element.port_num = 1,
		.event = active ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR,
	};

	ASSERT_RTNL();
	ib_dispatch_event(&event);
}

static enum ib_port_phys_state vroce_port_phys_state(struct net_device *ndev)
{
	if (vroce_port_is_active(ndev))
		return IB_PORT_PHYS_STATE_LINK_UP;
	if (netif_running(ndev))
		return IB_PORT_PHYS_STATE_POLLING;
	return IB_PORT_PHYS_STATE_DISABLED;
}

int vroce_query_port(struct ib_device *ibdev, u32 port_num,
		     struct ib_port_attr *attr)
{
	struct vroce_dev *vdev = to_vdev(ibdev);
	struct net_device *ndev = vdev->ndev;
	u64 qkey_err;
	int err;

	/* ib_core cleared *attr and checked @port_num. */
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = min(iboe_get_mtu(READ_ONCE(ndev->mtu)),
			       attr->max_mtu);
	attr->gid_tbl_len = VROCE_GID_TABLE_LEN;
	attr->pkey_tbl_len = VROCE_PKEY_TABLE_LEN;
	attr->port_cap_flags = IB_UVERBS_PCF_IP_BASED_GIDS;
	attr->max_vl_num = 1;
	attr->max_msg_sz = VROCE_MAX_MSG_SIZE;
	/* A 16-bit counter in IBTA; saturates. */
	qkey_err = vroce_counter_read(&vdev->counters, VROCE_CNT_RCVD_QKEY_ERR);
	attr->qkey_viol_cntr = min_t(u64, qkey_err, 0xffff);
	attr->ip_gids = true;
	attr->phys_state = vroce_port_phys_state(ndev);
	attr->state = attr->phys_state == IB_PORT_PHYS_STATE_LINK_UP ?
		      IB_PORT_ACTIVE : IB_PORT_DOWN;

	/* Takes RTNL: ib_core never queries a port with RTNL held. */
	err = ib_get_eth_speed(ibdev, port_num, &attr->active_speed,
			       &attr->active_width);
	if (err)
		ibdev_dbg(ibdev, "no link speed from %s: %pe\n",
			  netdev_name(ndev), ERR_PTR(err));
	return 0;
}

int vroce_get_port_immutable(struct ib_device *ibdev, u32 port_num,
			     struct ib_port_immutable *immutable)
{
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE |
				    RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->gid_tbl_len = VROCE_GID_TABLE_LEN;
	immutable->pkey_tbl_len = VROCE_PKEY_TABLE_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

int vroce_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
		     u16 *pkey)
{
	if (index >= VROCE_PKEY_TABLE_LEN)
		return -EINVAL;
	/* RoCE has the default full-membership partition only. */
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

enum rdma_link_layer vroce_get_link_layer(struct ib_device *ibdev,
					  u32 port_num)
{
	return IB_LINK_LAYER_ETHERNET;
}
