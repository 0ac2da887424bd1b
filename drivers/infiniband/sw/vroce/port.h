/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_PORT_H
#define _VROCE_PORT_H

#include <rdma/ib_verbs.h>
#include <uapi/rdma/vroce.h>

struct net_device;
struct vroce_dev;

#define VROCE_PKEY_TABLE_LEN 1

/* port.c APIs: */
bool vroce_port_is_active(struct net_device *ndev);
void vroce_port_dispatch_event(struct vroce_dev *vdev, bool active);
int vroce_query_port(struct ib_device *ibdev, u32 port_num,
		     struct ib_port_attr *attr);
int vroce_get_port_immutable(struct ib_device *ibdev, u32 port_num,
			     struct ib_port_immutable *immutable);
int vroce_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
		     u16 *pkey);
enum rdma_link_layer vroce_get_link_layer(struct ib_device *ibdev,
					  u32 port_num);

#endif /* _VROCE_PORT_H */
