/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The completer of the reliable transport (comp.c): ACKs, NAKs and READ or
 * atomic responses against the requester's WQEs, the expiry of its timer
 * and the completions. Its state is the requester's (req.h).
 *
 * Who may call what: with task_mutex held, in the QP's task or in
 * modify_qp (RTS to SQD checks the drain); the requester (req.c, ud.c) in
 * the task's context. vroce_comp_rx() is the receive
 * queue's dispatch of a response (rxq.c); vroce_comp_timer() the task's
 * step after the timer fired (task.c).
 */
#ifndef _VROCE_COMP_H
#define _VROCE_COMP_H

#include <linux/types.h>
#include <rdma/ib_verbs.h>

struct sk_buff;
struct vroce_qp;

/* comp.c APIs: */
void vroce_comp_rx(struct vroce_qp *qp, struct sk_buff *skb);
void vroce_comp_timer(struct vroce_qp *qp);
void vroce_comp_probe_waited(struct vroce_qp *qp);
void vroce_comp_retire(struct vroce_qp *qp);
void vroce_comp_fail_at(struct vroce_qp *qp, u32 slot,
			enum ib_wc_status status);

#endif /* _VROCE_COMP_H */
