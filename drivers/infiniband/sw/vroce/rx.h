/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_RX_H
#define _VROCE_RX_H

struct sk_buff;
struct vroce_dev;
struct vroce_run_list;

/* rx.c APIs: */
void vroce_rx_v2(struct sk_buff *skb);
void vroce_rx_loopback(struct vroce_dev *vdev, struct sk_buff *skb,
		       struct vroce_run_list *run);
void vroce_rx_self(struct vroce_dev *vdev, struct sk_buff *skb,
		   struct vroce_run_list *run);
void vroce_rx_init(void);
void vroce_rx_exit(void);

#endif /* _VROCE_RX_H */
