/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The per-QP task (task.c): the scheduler that runs a QP's transport.
 *
 * Who may call what:
 * - vroce_task_kick(): any context (a QP reference is taken if any is
 *   left); vroce_task_doorbell(): a user QP's POST_SEND, may sleep;
 * - vroce_task_unlock(): modify_qp, to release the task_mutex it took;
 * - vroce_task_handoff(), vroce_task_wake(): the receive queue
 *   (vroce_qp_rx(), rxq.c) only;
 * - vroce_task_qp_init(): create_qp (qp_xport.c); vroce_task_init() and
 *   vroce_task_exit(): module load and unload.
 */
#ifndef _VROCE_TASK_H
#define _VROCE_TASK_H

#include <linux/types.h>

struct sk_buff;
struct vroce_qp;
struct vroce_run_list;

/* vroce_qp.task_flags: a run was asked for while task_mutex was held. */
#define VROCE_TASK_AGAIN	0

/* task.c APIs: */
int vroce_task_init(void);
void vroce_task_exit(void);
void vroce_task_qp_init(struct vroce_qp *qp);
void vroce_task_kick(struct vroce_qp *qp);
void vroce_task_doorbell(struct vroce_qp *qp);
void vroce_task_finish(struct vroce_qp *qp);
void vroce_task_unlock(struct vroce_qp *qp);
bool vroce_task_handoff(const struct vroce_run_list *run,
			const struct sk_buff *skb);
void vroce_task_wake(struct vroce_qp *qp, struct vroce_run_list *run,
		     bool handoff);

#endif /* _VROCE_TASK_H */
