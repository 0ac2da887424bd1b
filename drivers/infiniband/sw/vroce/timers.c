// SPDX-License-Identifier: GPL-2.0
/*
 * The requester's timer: one hrtimer per QP (req.timer) that stands for
 * three deadlines of the reliable transport. Everything that arms, fires
 * or cancels it is here; what an expiry does is the completer's
 * (vroce_comp_timer(), comp.c).
 *
 *   deadline     armed by                      on expiry (comp.c)      cancelled by
 *   ACK timeout  a packet sent with nothing    probe an unasked tail,  progress that
 *   (ack_due)    timed (req.c), progress,      else retry from una     acknowledges all
 *                a retry (comp.c):             (go-back-N), or fail
 *                vroce_timers_ack_arm()        RETRY_EXC_ERR           (req.c), ERR, reset
 *   RNR wait     an RNR NAK (comp.c):          rewind to una and       reset
 *   (ack_due,    vroce_timers_rnr_wait()       resend                  ERR
 *   rnr_wait)
 *   probe        an unsignaled tail sent       resend the tail,        a tail sent asking,
 *   (probe_due)  without AckReq (req.c):       asking (not a retry)    an RNR wait, full
 *                vroce_timers_probe_arm()                              progress, ERR, reset
 *
 * The hrtimer waits for req.due, the earlier of req.ack_due and
 * req.probe_due (vroce_timers_update()). It is only started when it is
 * not queued, or queued for later than needed: one queued for earlier
 * finds req.due in the future and re-arms itself (vroce_timers_fire()),
 * so an ACK that moves the timeout later costs no timer operation. A
 * deadline is cancelled by setting it to 0: a timer still queued for it
 * expires without effect. Entering ERR (vroce_timers_cancel()), RESET
 * (vroce_timers_reset()) and destroy (vroce_timers_stop()) cancel the
 * hrtimer itself.
 *
 * Locking: ack_due, probe_due and due belong to the requester's owner
 * (vroce_req_assert_owner(), req.c), rnr_wait to the task (a borrower
 * only reads it); due is written with WRITE_ONCE
 * and read by the timer's function.
 *
 * Ordering: the owner writes due, then reads the hrtimer's state; the
 * function runs after the hrtimer code dequeued the timer, then reads
 * due. A full barrier on each side (vroce_timers_update(),
 * vroce_timers_fire()) makes at least one see the other: either the
 * owner finds the timer no longer queued and starts it, or the function
 * finds the new due and re-arms for it or kicks. The owner's read of
 * the expiry may still race with the function's re-arm; either value
 * it reads leads to a start or to a function that has seen the new due.
 * The timer's function only sets
 * req.timer_fired (bit 0) and kicks the task, which consumes it
 * (vroce_timers_fired()) and runs vroce_comp_timer() under task_mutex,
 * where each deadline is checked again against the clock.
 *
 * Lifetime: the timer kicks the task only through refcount_inc_not_zero()
 * (vroce_task_kick()); destroy cancels it once no reference is left
 * (vroce_timers_stop()). Without a reference, the timer's function touches
 * only the hrtimer and req.due: hrtimer_cancel() waits for a running
 * callback and removes what it re-armed, so the QP outlives both.
 *
 * Congestion control's rate timer is another (cc_rp.c).
 */

#include <linux/hrtimer.h>
#include <linux/ktime.h>

#include "compat.h"
#include "qp.h"
#include "task.h"
#include "timers.h"

/*
 * Expired at or before req.due: an end that moved later re-arms the timer
 * (a start from the callback is serialized with the task's by the hrtimer
 * base lock); an end that passed kicks the task, which checks again under
 * task_mutex (vroce_comp_timer()).
 */
static enum hrtimer_restart vroce_timers_fire(struct hrtimer *timer)
{
	struct vroce_qp *qp = container_of(timer, struct vroce_qp, req.timer);
	u64 due;

	/* Pairs with vroce_timers_update(): see "Ordering" above. */
	smp_mb();
	due = READ_ONCE(qp->req.due);
	if (!due)
		return HRTIMER_NORESTART;
	if (ktime_get_ns() < due) {
		hrtimer_start(timer, ns_to_ktime(due), HRTIMER_MODE_ABS_SOFT);
		return HRTIMER_NORESTART;
	}
	set_bit(0, &qp->req.timer_fired);
	vroce_task_kick(qp);
	return HRTIMER_NORESTART;
}

/**
 * vroce_timers_init - set up a new QP's timer
 * @qp: the QP, unreachable (create_qp)
 */
void vroce_timers_init(struct vroce_qp *qp)
{
	vroce_compat_hrtimer_setup(&qp->req.timer, vroce_timers_fire,
				   CLOCK_MONOTONIC, HRTIMER_MODE_ABS_SOFT);
}

/**
 * vroce_timers_update - make the timer fire at the earlier of req.ack_due
 *	and req.probe_due
 * @qp: the QP
 *
 * The hrtimer is only started if it is not queued, or queued for later
 * than needed: one queued for earlier finds req.due in the future and
 * re-arms itself (vroce_timers_fire()). So an ACK that moves the timeout
 * later costs no timer operation.
 */
void vroce_timers_update(struct vroce_qp *qp)
{
	struct vroce_req *req = &qp->req;
	struct hrtimer *timer = &req->timer;
	u64 due = req->ack_due;
	u64 queued_for;

	vroce_req_assert_owner(qp);

	if (req->probe_due && (!due || req->probe_due < due))
		due = req->probe_due;
	WRITE_ONCE(req->due, due);
	/* Pairs with vroce_timers_fire(): see "Ordering" above. */
	smp_mb();
	if (!due)
		return;
	if (hrtimer_is_queued(timer)) {
		/* The function may re-arm meanwhile: see "Ordering" above. */
		queued_for = data_race(ktime_to_ns(hrtimer_get_expires(timer)));
		if (queued_for <= due)
			return;
	}
	hrtimer_start(timer, ns_to_ktime(due), HRTIMER_MODE_ABS_SOFT);
}

/* (Re)start the ACK timeout: 4.096 us << the QP's timeout attribute. */
void vroce_timers_ack_arm(struct vroce_qp *qp)
{
	u8 timeout = qp->attr.timeout;

	if (!timeout || qp->req.rnr_wait)
		return;
	qp->req.ack_due = ktime_get_ns() + (4096ULL << timeout);
	vroce_timers_update(qp);
}

/**
 * vroce_timers_rnr_wait - wait @ns before retrying after an RNR NAK
 * @qp: the QP
 * @ns: the wait its timer code says
 *
 * The wait replaces the ACK timeout, and the probe: the retry after it
 * asks for an ACK at its end.
 */
void vroce_timers_rnr_wait(struct vroce_qp *qp, u64 ns)
{
	struct vroce_req *req = &qp->req;

	lockdep_assert_held(&qp->task_mutex);
	req->rnr_wait = true;
	req->ack_due = ktime_get_ns() + ns;
	req->probe_due = 0;
	vroce_timers_update(qp);
}

/*
 * The newest packet went out without AckReq: probe it VROCE_REQ_PROBE_NS
 * from now unless something follows. Moved at every unasked tail: a timer
 * queued earlier re-arms.
 */
void vroce_timers_probe_arm(struct vroce_qp *qp)
{
	qp->req.probe_due = ktime_get_ns() + VROCE_REQ_PROBE_NS;
	vroce_timers_update(qp);
}

/*
 * Did the timer fire since the task last looked? Consumes the expiry.
 * Context: the QP's task.
 */
bool vroce_timers_fired(struct vroce_qp *qp)
{
	return test_and_clear_bit(0, &qp->req.timer_fired);
}

/* Entering ERR: nothing is retried; a running callback may still kick. */
void vroce_timers_cancel(struct vroce_qp *qp)
{
	hrtimer_try_to_cancel(&qp->req.timer);
}

/* Modify to RESET (task_mutex held) or destroy: forget any expiry. */
void vroce_timers_reset(struct vroce_qp *qp)
{
	hrtimer_try_to_cancel(&qp->req.timer);
	clear_bit(0, &qp->req.timer_fired);
}

/*
 * Destroy, the QP unreachable and without references: wait for a running
 * callback and remove what it re-armed.
 */
void vroce_timers_stop(struct vroce_qp *qp)
{
	hrtimer_cancel(&qp->req.timer);
}
