/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_NET_H
#define _VROCE_NET_H

#include <linux/types.h>
#include <uapi/rdma/vroce.h>

struct net;

/* net.c APIs: */
int vroce_net_init(void);
void vroce_net_exit(void);
int vroce_net_get(struct net *net);
void vroce_net_put(struct net *net);

#endif /* _VROCE_NET_H */
