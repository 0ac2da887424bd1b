/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unreliable datagram transport (ud.c), UD and GSI QPs.
 *
 * Who may call what: the QP's task (task_mutex held) only.
 * vroce_ud_req_step() is the requester's step of a UD QP (req.c);
 * vroce_ud_rx() the receive queue's dispatch of a datagram (rxq.c).
 */
#ifndef _VROCE_UD_H
#define _VROCE_UD_H

#include <linux/types.h>

struct sk_buff;
struct vroce_qp;

/* ud.c APIs: */
bool vroce_ud_req_step(struct vroce_qp *qp);
void vroce_ud_rx(struct vroce_qp *qp, struct sk_buff *skb);

#endif /* _VROCE_UD_H */
