// SPDX-License-Identifier: GPL-2.0
/*
 * DCQCN reaction point (RP) and notification point (NP), as pure functions
 * of (state, knobs, time). Fixed-point formats are in dcqcn.h.
 *
 * The RP machine of one QP (the DCQCN paper, "Congestion Control for
 * Large-Scale RDMA Deployments", SIGCOMM 2015, as mlx5's knobs and the HPCC
 * simulator's "Mellanox DCQCN" model run it):
 *
 *  - Unlimited until the first CNP: the QP is not paced, needs no timer.
 *  - First CNP: a limiter is allocated: RC = RT = rp_rate_to_set_on_first_cnp
 *    (0: the maximum rate), alpha = rp_initial_alpha_value/1024, and a
 *    decrease is pending. The first CNP does not count for alpha (HPCC).
 *  - Every CNP marks the current alpha period and makes a decrease pending.
 *    A pending decrease runs when rp_rate_reduce_monitor_period has passed
 *    since the last one (at once if it has already):
 *	if (rp_clamp_tgt_rate || (rp_clamp_tgt_rate_ati && T > 0)) RT = RC
 *	RC = max(RC - RC * alpha / 2^rp_gd,	(alpha in /1024 units)
 *		 RC * rp_min_dec_fac / 100, rp_min_rate)
 *	T = BC = 0, byte counter and increase timer restart.
 *  - Alpha, every rp_dce_tcp_rtt µs:
 *	alpha = alpha * g/1024 + (CNP in the period ? (1024 - g)/1024 : 0)
 *  - Rate increase, every rp_time_reset µs (T++) and every rp_byte_reset
 *    bytes sent (BC++), with F = rp_threshold:
 *	max(T, BC) <= F:	fast recovery	RC = (RT + RC) / 2
 *	min(T, BC) >  F:	hyper increase	RT += (min(T, BC) - F) * rp_hai_rate
 *	otherwise:		additive	RT += rp_ai_rate
 *	then RT = min(RT, max rate) and RC = (RT + RC) / 2 (rounded up).
 *    With rp_byte_reset = 0 the byte counter is off and BC follows T.
 *  - RC stays within [rp_min_rate, max rate]; max rate is rp_max_rate, or
 *    the line rate when 0. When RC reaches the max rate the limiter is
 *    released: the QP is unpaced again and its next CNP is a first CNP.
 *
 * Where the sources disagree (also in Documentation/infiniband/vroce.rst):
 *  - rp_dce_tcp_g: NVIDIA's current text (g is the weight kept, so the gain
 *    is (1024 - g)/1024), not the old mstflint one (gain g/1024): only the
 *    former makes the current default 1019 a sane gain (5/1024, near the
 *    paper's 1/256).
 *  - Stage boundaries: counters are incremented, then compared with "<= F"
 *    (htsim; the same as HPCC's "< F before the increment"), so F = 1 gives
 *    one fast-recovery step; the paper's two-counter rule for additive and
 *    hyper increase, with htsim's i = min(T, BC) - F hyper scaling (HPCC
 *    has no byte counter and no scaling).
 *  - rp_min_dec_fac: NVIDIA's wording (the rate after a decrease is at
 *    least min_dec_fac % of the rate before; 100 prevents decreases).
 *  - rp_byte_reset is in bytes (the old Mellanox text; current units are
 *    not published).
 *  - Decreases are batched per rp_rate_reduce_monitor_period and alpha is
 *    updated on its own period, as mlx5 and HPCC do, not per CNP as in the
 *    paper.
 *  - Averages round up, so RC reaches RT (and the limiter is released)
 *    instead of stopping one kb/s short.
 *
 * Timers are lazy: every event first applies what fell due up to @now, so a
 * late caller gets the same alpha (applied in closed form, alpha * (g/1024)^n)
 * and the same decrease (made at its due time, with the alpha of that
 * time); late increase periods are applied in order, at
 * most VROCE_DCQCN_MAX_CATCHUP of them. Alpha therefore needs no timer of
 * its own; vroce_dcqcn_next_timer() gives the one deadline the caller must
 * arm (increase timer or pending decrease), U64_MAX when unlimited.
 *
 * Wiring into the transport (cc_rp.c, cc_np.c; one state per QP, calls
 * serialised by the QP's task):
 *  - CNP received for the QP (BTH opcode 0x81, RP enabled for the QP's
 *    priority): vroce_dcqcn_on_cnp(); re-arm the pacer timer.
 *  - every data packet sent: vroce_dcqcn_on_bytes_sent(payload + headers).
 *  - the pacer timer (armed at vroce_dcqcn_next_timer(), none when it is
 *    U64_MAX): vroce_dcqcn_on_rate_timer(), then re-arm.
 *  - the pacer sends at vroce_dcqcn_rate_kbps() (0: unpaced).
 *  - receiving a CE-marked packet (NP enabled for its priority): send a
 *    CNP when vroce_np_should_send_cnp() says so.
 */

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/stddef.h>
#include <linux/time64.h>

#include "dcqcn.h"

/* Largest rate knob, Mb/s: kbit/s of it must fit in a u32. */
#define VROCE_CC_MAX_MBPS	4000000
/* Largest time knob, µs (10 s). */
#define VROCE_CC_MAX_US		10000000

#define KNOB(f, lo, hi, d)						\
	{ .name = #f, .offset = offsetof(struct vroce_cc_params, f),	\
	  .min = (lo), .max = (hi), .def = (d) }

const struct vroce_cc_knob vroce_cc_knobs[VROCE_CC_NR_KNOBS] = {
	[VROCE_CC_RP_CLAMP_TGT_RATE] = KNOB(rp_clamp_tgt_rate, 0, 1, 0),
	[VROCE_CC_RP_CLAMP_TGT_RATE_ATI] = KNOB(rp_clamp_tgt_rate_ati, 0, 1, 1),
	[VROCE_CC_RP_TIME_RESET] = KNOB(rp_time_reset, 1, VROCE_CC_MAX_US, 300),
	[VROCE_CC_RP_BYTE_RESET] = KNOB(rp_byte_reset, 0, U32_MAX, 32767),
	[VROCE_CC_RP_THRESHOLD] = KNOB(rp_threshold, 1, 31, 1),
	[VROCE_CC_RP_AI_RATE] = KNOB(rp_ai_rate, 1, VROCE_CC_MAX_MBPS, 5),
	[VROCE_CC_RP_MAX_RATE] = KNOB(rp_max_rate, 0, VROCE_CC_MAX_MBPS, 0),
	[VROCE_CC_RP_HAI_RATE] = KNOB(rp_hai_rate, 1, VROCE_CC_MAX_MBPS, 50),
	[VROCE_CC_RP_MIN_DEC_FAC] = KNOB(rp_min_dec_fac, 1, 100, 50),
	[VROCE_CC_RP_MIN_RATE] = KNOB(rp_min_rate, 1, VROCE_CC_MAX_MBPS, 1),
	[VROCE_CC_RP_RATE_TO_SET_ON_FIRST_CNP] =
		KNOB(rp_rate_to_set_on_first_cnp, 0, VROCE_CC_MAX_MBPS, 0),
	[VROCE_CC_RP_DCE_TCP_G] = KNOB(rp_dce_tcp_g, 0, 1023, 1019),
	[VROCE_CC_RP_DCE_TCP_RTT] = KNOB(rp_dce_tcp_rtt, 1, VROCE_CC_MAX_US, 1),
	[VROCE_CC_RP_RATE_REDUCE_MONITOR_PERIOD] =
		KNOB(rp_rate_reduce_monitor_period, 0, VROCE_CC_MAX_US, 4),
	[VROCE_CC_RP_INITIAL_ALPHA_VALUE] =
		KNOB(rp_initial_alpha_value, 0, 1023, 1023),
	[VROCE_CC_RP_GD] = KNOB(rp_gd, 0, 15, 11),
	[VROCE_CC_NP_MIN_TIME_BETWEEN_CNPS] =
		KNOB(np_min_time_between_cnps, 0, VROCE_CC_MAX_US, 4),
	[VROCE_CC_NP_CNP_DSCP] = KNOB(np_cnp_dscp, 0, 63, 48),
	[VROCE_CC_NP_CNP_PRIO] = KNOB(np_cnp_prio, 0, 7, 6),
};

static u32 *knob_ptr(struct vroce_cc_params *p, enum vroce_cc_knob_id id)
{
	return (u32 *)((u8 *)p + vroce_cc_knobs[id].offset);
}

u32 vroce_cc_knob_get(const struct vroce_cc_params *p,
		      enum vroce_cc_knob_id id)
{
	const u32 *v = (const u32 *)((const u8 *)p + vroce_cc_knobs[id].offset);

	return READ_ONCE(*v);
}

/* Returns -EINVAL, and changes nothing, for a value out of the knob's range. */
int vroce_cc_knob_set(struct vroce_cc_params *p, enum vroce_cc_knob_id id,
		      u32 val)
{
	const struct vroce_cc_knob *k = &vroce_cc_knobs[id];

	if (val < k->min || val > k->max)
		return -EINVAL;
	WRITE_ONCE(*knob_ptr(p, id), val);
	return 0;
}

void vroce_cc_params_init(struct vroce_cc_params *p)
{
	int i;

	for (i = 0; i < VROCE_CC_NR_KNOBS; i++)
		*knob_ptr(p, i) = vroce_cc_knobs[i].def;
}

/* One consistent copy of the knobs per event. */
static void snapshot(struct vroce_cc_params *k,
		     const struct vroce_cc_params *p)
{
	int i;

	for (i = 0; i < VROCE_CC_NR_KNOBS; i++)
		*knob_ptr(k, i) = vroce_cc_knob_get(p, i);
}

static u32 mbps_to_kbps(u32 mbps)
{
	return min_t(u64, (u64)mbps * 1000, U32_MAX);
}

static u64 us_to_ns(u32 us)
{
	return (u64)us * NSEC_PER_USEC;
}

static u32 max_kbps(const struct vroce_dcqcn *st,
		    const struct vroce_cc_params *k)
{
	return k->rp_max_rate ? mbps_to_kbps(k->rp_max_rate) : st->line_kbps;
}

/* Into [rp_min_rate, max rate]; the max wins if the knobs cross. */
static u32 clamp_rate(const struct vroce_dcqcn *st,
		      const struct vroce_cc_params *k, u64 rate)
{
	rate = max_t(u64, rate, mbps_to_kbps(k->rp_min_rate));
	return min_t(u64, rate, max_kbps(st, k));
}

/* (g/1024)^n in Q30, by squaring; exact for n <= 3. */
static u64 pow_q30(u32 g, u64 n)
{
	u64 r = 1ULL << 30, b = (u64)g << 20;

	while (n && r) {
		if (n & 1)
			r = (r * b) >> 30;
		n >>= 1;
		b = (b * b) >> 30;
	}
	return r;
}

static void alpha_catch_up(struct vroce_dcqcn *st,
			   const struct vroce_cc_params *k, u64 now)
{
	u64 period = us_to_ns(max(k->rp_dce_tcp_rtt, 1U));
	u32 g = k->rp_dce_tcp_g;
	u64 n;

	if (!st->limited || now < st->alpha_ns + period)
		return;
	n = div64_u64(now - st->alpha_ns, period);
	st->alpha_ns += n * period;
	if (st->cnp_alpha) {
		st->alpha = ((u64)st->alpha * g +
			     ((u64)(1024 - g) << VROCE_DCQCN_ALPHA_SHIFT)) >> 10;
		st->cnp_alpha = false;
		n--;
	}
	if (n)
		st->alpha = ((u64)st->alpha * pow_q30(g, n)) >> 30;
}

static void release(struct vroce_dcqcn *st, const struct vroce_cc_params *k)
{
	st->limited = false;
	st->rc_kbps = max_kbps(st, k);
	st->rt_kbps = st->rc_kbps;
	st->cnp_alpha = false;
	st->cnp_dec = false;
}

static void decrease(struct vroce_dcqcn *st, const struct vroce_cc_params *k,
		     u64 now)
{
	u64 rc = st->rc_kbps, dec, floor;

	if (k->rp_clamp_tgt_rate || (k->rp_clamp_tgt_rate_ati && st->t_stage))
		st->rt_kbps = st->rc_kbps;
	dec = (rc * st->alpha) >> (k->rp_gd + 10);
	floor = div_u64(rc * k->rp_min_dec_fac, 100);
	st->rc_kbps = clamp_rate(st, k, max(rc - min(dec, rc), floor));
	st->rt_kbps = max(st->rt_kbps, st->rc_kbps);
	st->t_stage = 0;
	st->b_stage = 0;
	st->bytes = 0;
	st->inc_ns = now;
	st->dec_ns = now;
	st->cnp_dec = false;
	st->decreases++;
}

static void try_decrease(struct vroce_dcqcn *st,
			 const struct vroce_cc_params *k, u64 now)
{
	if (st->limited && st->cnp_dec &&
	    now >= st->dec_ns + us_to_ns(k->rp_rate_reduce_monitor_period))
		decrease(st, k, now);
}

/* One rate-increase event, after T or BC was incremented. */
static void increase(struct vroce_dcqcn *st, const struct vroce_cc_params *k)
{
	u32 f = k->rp_threshold, t = st->t_stage;
	u32 bc = k->rp_byte_reset ? st->b_stage : t;
	u64 rt = st->rt_kbps, top = max_kbps(st, k);

	if (min(t, bc) > f)
		rt += (u64)(min(t, bc) - f) * mbps_to_kbps(k->rp_hai_rate);
	else if (max(t, bc) > f)
		rt += mbps_to_kbps(k->rp_ai_rate);
	st->rt_kbps = min(rt, top);
	st->rc_kbps = clamp_rate(st, k,
				 DIV_ROUND_UP((u64)st->rt_kbps + st->rc_kbps, 2));
	if (st->rc_kbps >= top)
		release(st, k);
}

static void timer_catch_up(struct vroce_dcqcn *st,
			   const struct vroce_cc_params *k, u64 now)
{
	u64 period = us_to_ns(max(k->rp_time_reset, 1U));
	u64 n;

	if (!st->limited || now < st->inc_ns + period)
		return;
	n = div64_u64(now - st->inc_ns, period);
	st->inc_ns += n * period;
	n = min_t(u64, n, VROCE_DCQCN_MAX_CATCHUP);
	while (n-- && st->limited) {
		st->t_stage++;
		increase(st, k);
	}
}

/*
 * Everything that fell due up to @now, in the order the hardware does it. A
 * pending decrease that fell due before @now runs at its due time: with the
 * alpha of that time (alpha decays every rp_dce_tcp_rtt, 1 µs by default,
 * so a timer that fires a few ms late must not see the alpha of the time it
 * fires), after the increase periods that ended before it, and with the
 * increase periods counted from it.
 */
static void advance(struct vroce_dcqcn *st, const struct vroce_cc_params *k,
		    u64 now)
{
	u64 due;

	if (!st->limited)
		return;
	/* The rate knobs may have changed since the last event. */
	st->rc_kbps = clamp_rate(st, k, st->rc_kbps);
	st->rt_kbps = clamp_rate(st, k, st->rt_kbps);
	if (st->cnp_dec) {
		due = st->dec_ns + us_to_ns(k->rp_rate_reduce_monitor_period);
		if (due < now) {
			timer_catch_up(st, k, due);
			alpha_catch_up(st, k, due);
			try_decrease(st, k, due);
		}
	}
	alpha_catch_up(st, k, now);
	try_decrease(st, k, now);
	timer_catch_up(st, k, now);
}

/**
 * vroce_dcqcn_init - a QP's RP state: unlimited, at the maximum rate
 * @st: the state
 * @p: the device's knobs
 * @line_kbps: the port's line rate, kbit/s (used when rp_max_rate is 0)
 */
void vroce_dcqcn_init(struct vroce_dcqcn *st,
		      const struct vroce_cc_params *p, u32 line_kbps)
{
	struct vroce_cc_params k;

	snapshot(&k, p);
	*st = (struct vroce_dcqcn){
		.line_kbps = max(line_kbps, 1U),
		.alpha = VROCE_DCQCN_ALPHA_ONE,
	};
	release(st, &k);
}

static void first_cnp(struct vroce_dcqcn *st, const struct vroce_cc_params *k,
		      u64 now)
{
	u32 first = k->rp_rate_to_set_on_first_cnp;

	st->limited = true;
	st->rc_kbps = clamp_rate(st, k, first ? mbps_to_kbps(first) :
					    max_kbps(st, k));
	st->rt_kbps = st->rc_kbps;
	st->alpha = k->rp_initial_alpha_value << 10;
	st->cnp_alpha = false;
	st->cnp_dec = true;
	st->t_stage = 0;
	st->b_stage = 0;
	st->bytes = 0;
	st->alpha_ns = now;
	st->dec_ns = now;
	st->inc_ns = now;
}

/**
 * vroce_dcqcn_on_cnp - a CNP for this QP arrived at @now
 * @st: the QP's RP state
 * @p: the device's knobs
 * @now: time, ns
 */
void vroce_dcqcn_on_cnp(struct vroce_dcqcn *st,
			const struct vroce_cc_params *p, u64 now)
{
	struct vroce_cc_params k;

	snapshot(&k, p);
	st->cnp_handled++;
	advance(st, &k, now);
	if (!st->limited) {
		first_cnp(st, &k, now);
	} else {
		st->cnp_alpha = true;
		st->cnp_dec = true;
	}
	try_decrease(st, &k, now);
}

/**
 * vroce_dcqcn_on_alpha_timer - apply the alpha periods that ended by @now
 * @st: the QP's RP state
 * @p: the device's knobs
 * @now: time, ns
 *
 * Optional: every other event does it first.
 */
void vroce_dcqcn_on_alpha_timer(struct vroce_dcqcn *st,
				const struct vroce_cc_params *p, u64 now)
{
	struct vroce_cc_params k;

	snapshot(&k, p);
	alpha_catch_up(st, &k, now);
}

/**
 * vroce_dcqcn_on_rate_timer - the pacer timer: what fell due by @now
 * @st: the QP's RP state
 * @p: the device's knobs
 * @now: time, ns
 *
 * Alpha periods, then a pending decrease whose monitor period is over, then
 * the rate-increase timer periods that ended (one T stage each).
 */
void vroce_dcqcn_on_rate_timer(struct vroce_dcqcn *st,
			       const struct vroce_cc_params *p, u64 now)
{
	struct vroce_cc_params k;

	snapshot(&k, p);
	advance(st, &k, now);
}

/**
 * vroce_dcqcn_on_bytes_sent - @bytes were sent at @now
 * @st: the QP's RP state
 * @p: the device's knobs
 * @bytes: bytes of the packet(s)
 * @now: time, ns
 *
 * One BC stage per rp_byte_reset bytes while the QP is limited; nothing
 * when unlimited or when the byte counter is off.
 */
void vroce_dcqcn_on_bytes_sent(struct vroce_dcqcn *st,
			       const struct vroce_cc_params *p, u32 bytes,
			       u64 now)
{
	struct vroce_cc_params k;
	u64 n;

	snapshot(&k, p);
	advance(st, &k, now);
	if (!st->limited || !k.rp_byte_reset)
		return;
	st->bytes += bytes;
	n = div_u64_rem(st->bytes, k.rp_byte_reset, &bytes);
	st->bytes = bytes;
	n = min_t(u64, n, VROCE_DCQCN_MAX_CATCHUP);
	while (n-- && st->limited) {
		st->b_stage++;
		increase(st, &k);
	}
}

/**
 * vroce_dcqcn_next_timer - when to call vroce_dcqcn_on_rate_timer() next
 * @st: the QP's RP state
 * @p: the device's knobs
 *
 * Return: time in ns (the increase timer, or a pending decrease if that is
 * sooner), or U64_MAX when the QP is unlimited and needs no timer.
 */
u64 vroce_dcqcn_next_timer(const struct vroce_dcqcn *st,
			   const struct vroce_cc_params *p)
{
	struct vroce_cc_params k;
	u64 t;

	if (!st->limited)
		return U64_MAX;
	snapshot(&k, p);
	t = st->inc_ns + us_to_ns(max(k.rp_time_reset, 1U));
	if (st->cnp_dec)
		t = min(t, st->dec_ns +
			   us_to_ns(k.rp_rate_reduce_monitor_period));
	return t;
}

void vroce_np_init(struct vroce_np *np)
{
	np->sent = false;
	np->last_cnp_ns = 0;
}

/**
 * vroce_np_should_send_cnp - a CE-marked packet for this QP arrived at @now
 * @np: the QP's NP state
 * @p: the device's knobs
 * @now: time, ns
 *
 * At most one CNP per np_min_time_between_cnps µs per QP; marks in between
 * are only counted by the caller (np_ecn_marked_roce_packets), as mlx5's
 * moderation does. (The paper's NP instead remembers the mark and sends
 * when the interval ends; mlx5 documents only the minimum gap.)
 *
 * Return: true if the caller must send a CNP now (it is then accounted).
 */
bool vroce_np_should_send_cnp(struct vroce_np *np,
			      const struct vroce_cc_params *p, u64 now)
{
	u64 gap = us_to_ns(READ_ONCE(p->np_min_time_between_cnps));

	if (np->sent && now >= np->last_cnp_ns &&
	    now - np->last_cnp_ns < gap)
		return false;
	np->last_cnp_ns = now;
	np->sent = true;
	return true;
}

#ifdef VROCE_DEBUG
#include "selftest/dcqcn.c"
#endif
