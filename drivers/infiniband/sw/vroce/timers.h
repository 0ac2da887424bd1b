/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The requester's timer (timers.c): the ACK timeout, the RNR wait and the
 * probe of an unasked tail, on one hrtimer per QP.
 *
 * Who may call what:
 * - vroce_timers_update(), _ack_arm(), _probe_arm(): the requester's
 *   owner (vroce_req_assert_owner()): req.c, comp.c;
 * - vroce_timers_rnr_wait(): the QP's task (comp.c, task_mutex held);
 * - vroce_timers_fired(): the QP's task (task.c);
 * - vroce_timers_cancel(): the move to ERR (qp_state.c, task_mutex held);
 * - vroce_timers_init(), _reset(), _stop(): the QP's transport setup,
 *   reset and destroy (qp_xport.c).
 */
#ifndef _VROCE_TIMERS_H
#define _VROCE_TIMERS_H

#include <linux/types.h>

struct vroce_qp;

/* timers.c APIs: */
void vroce_timers_init(struct vroce_qp *qp);
void vroce_timers_update(struct vroce_qp *qp);
void vroce_timers_ack_arm(struct vroce_qp *qp);
void vroce_timers_rnr_wait(struct vroce_qp *qp, u64 ns);
void vroce_timers_probe_arm(struct vroce_qp *qp);
bool vroce_timers_fired(struct vroce_qp *qp);
void vroce_timers_cancel(struct vroce_qp *qp);
void vroce_timers_reset(struct vroce_qp *qp);
void vroce_timers_stop(struct vroce_qp *qp);

#endif /* _VROCE_TIMERS_H */
