/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_NETDEV_H
#define _VROCE_NETDEV_H

/* netdev.c APIs: */
int vroce_netdev_init(void);
void vroce_netdev_exit(void);

#endif /* _VROCE_NETDEV_H */
