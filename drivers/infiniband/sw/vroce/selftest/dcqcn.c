// SPDX-License-Identifier: GPL-2.0
/*
 * Self-tests of the DCQCN rate machine, run at module load when the module
 * is built with VROCE_DEBUG (make KVER=debug). They feed CNP, timer and
 * byte events with explicit times and compare the rates and alpha with
 * values worked out by hand from the equations in dcqcn.c (the numbers in
 * the comments), or with a step-by-step evaluation of the same equations
 * where a long sequence is checked. Pure code: tools/testing/dcqcn builds
 * this file in user space too.
 */

#define ST_LINE		10000000U	/* 10 Gb/s, in kb/s */
#define ST_T0		1000000ULL	/* 1 ms: any base works */
#define ST_US		1000ULL

static bool st_ok(bool ok, const char *what, const char *func, int line)
{
	if (!ok)
		pr_err("dcqcn self-test %s:%d: %s\n", func, line, what);
	return ok;
}

#define ST_OK(cond) st_ok(!!(cond), #cond, __func__, __LINE__)

/* Equal, or print both. */
static bool st_eq(u64 got, u64 want, const char *what, const char *func,
		  int line)
{
	if (got != want)
		pr_err("dcqcn self-test %s:%d: %s = %llu, want %llu\n", func,
		       line, what, got, want);
	return got == want;
}

#define ST_EQ(got, want) st_eq((got), (want), #got, __func__, __LINE__)

/* Defaults with decreases and alpha kept apart: alpha periods of 1 s. */
static void st_params(struct vroce_cc_params *p)
{
	vroce_cc_params_init(p);
	p->rp_dce_tcp_rtt = 1000000;
}

/* NVIDIA's current DCQCN defaults, written out independently. */
static bool st_defaults(void)
{
	static const struct { enum vroce_cc_knob_id id; u32 def; } want[] = {
		{ VROCE_CC_RP_CLAMP_TGT_RATE, 0 },
		{ VROCE_CC_RP_CLAMP_TGT_RATE_ATI, 1 },
		{ VROCE_CC_RP_TIME_RESET, 300 },
		{ VROCE_CC_RP_BYTE_RESET, 32767 },
		{ VROCE_CC_RP_THRESHOLD, 1 },
		{ VROCE_CC_RP_AI_RATE, 5 },
		{ VROCE_CC_RP_MAX_RATE, 0 },
		{ VROCE_CC_RP_HAI_RATE, 50 },
		{ VROCE_CC_RP_MIN_DEC_FAC, 50 },
		{ VROCE_CC_RP_MIN_RATE, 1 },
		{ VROCE_CC_RP_RATE_TO_SET_ON_FIRST_CNP, 0 },
		{ VROCE_CC_RP_DCE_TCP_G, 1019 },
		{ VROCE_CC_RP_DCE_TCP_RTT, 1 },
		{ VROCE_CC_RP_RATE_REDUCE_MONITOR_PERIOD, 4 },
		{ VROCE_CC_RP_INITIAL_ALPHA_VALUE, 1023 },
		{ VROCE_CC_RP_GD, 11 },
		{ VROCE_CC_NP_MIN_TIME_BETWEEN_CNPS, 4 },
		{ VROCE_CC_NP_CNP_DSCP, 48 },
		{ VROCE_CC_NP_CNP_PRIO, 6 },
	};
	struct vroce_cc_params p;
	bool ok = ST_EQ(ARRAY_SIZE(want), VROCE_CC_NR_KNOBS);
	int i;

	vroce_cc_params_init(&p);
	for (i = 0; i < ARRAY_SIZE(want); i++)
		ok &= ST_EQ(vroce_cc_knob_get(&p, want[i].id), want[i].def);
	ok &= ST_EQ(p.rp_ai_rate, 5) && ST_EQ(p.np_cnp_dscp, 48);
	return ok;
}

/* Out-of-range writes fail with EINVAL and change nothing. */
static bool st_knob_ranges(void)
{
	struct vroce_cc_params p;
	bool ok = true;
	int i;

	vroce_cc_params_init(&p);
	for (i = 0; i < VROCE_CC_NR_KNOBS; i++) {
		const struct vroce_cc_knob *k = &vroce_cc_knobs[i];

		if (k->max < U32_MAX)
			ok &= ST_EQ(vroce_cc_knob_set(&p, i, k->max + 1),
				    (u64)-EINVAL);
		if (k->min > 0)
			ok &= ST_EQ(vroce_cc_knob_set(&p, i, k->min - 1),
				    (u64)-EINVAL);
		ok &= ST_EQ(vroce_cc_knob_get(&p, i), k->def);
		ok &= ST_EQ(vroce_cc_knob_set(&p, i, k->max), 0);
		ok &= ST_EQ(vroce_cc_knob_get(&p, i), k->max);
		ok &= ST_EQ(vroce_cc_knob_set(&p, i, k->min), 0);
		ok &= ST_EQ(vroce_cc_knob_get(&p, i), k->min);
	}
	ok &= ST_EQ(vroce_cc_knob_set(&p, VROCE_CC_NP_CNP_DSCP, 64),
		    (u64)-EINVAL);
	ok &= ST_EQ(vroce_cc_knob_set(&p, VROCE_CC_NP_CNP_PRIO, 8),
		    (u64)-EINVAL);
	ok &= ST_EQ(vroce_cc_knob_set(&p, VROCE_CC_RP_MIN_DEC_FAC, 101),
		    (u64)-EINVAL);
	return ok;
}

/* An unlimited QP: not paced, no timer, timers and bytes change nothing. */
static bool st_unlimited(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	bool ok;

	st_params(&p);
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 1000 * ST_US);
	vroce_dcqcn_on_bytes_sent(&st, &p, 1000000, ST_T0);
	ok = ST_EQ(vroce_dcqcn_rate_kbps(&st), 0) &&
	     ST_EQ(st.rc_kbps, ST_LINE) &&
	     ST_EQ(vroce_dcqcn_next_timer(&st, &p), U64_MAX);

	/* rp_max_rate caps the starting rate below the line rate. */
	p.rp_max_rate = 1000;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	return ok && ST_EQ(st.rc_kbps, 1000000);
}

/*
 * First CNP: RC = RT = line rate, alpha = 1023/1024, a decrease pending for
 * rp_rate_reduce_monitor_period (4 µs). Then
 * RC = 10e6 - 10e6 * 1023 / 2^11 = 10e6 - 4995117 = 5004883, and RT stays
 * (no clamp, no timer increase).
 */
static bool st_first_cnp(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	bool ok;

	st_params(&p);
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	ok = ST_EQ(vroce_dcqcn_rate_kbps(&st), ST_LINE) &&
	     ST_EQ(st.rt_kbps, ST_LINE) && ST_EQ(st.alpha, 1023 << 10) &&
	     ST_EQ(st.cnp_handled, 1) && ST_EQ(st.decreases, 0) &&
	     ST_EQ(vroce_dcqcn_next_timer(&st, &p), ST_T0 + 4 * ST_US);

	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 3 * ST_US);
	ok &= ST_EQ(st.rc_kbps, ST_LINE);
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 4 * ST_US);
	ok &= ST_EQ(st.rc_kbps, 5004883) && ST_EQ(st.rt_kbps, ST_LINE) &&
	      ST_EQ(st.decreases, 1) &&
	      ST_EQ(vroce_dcqcn_next_timer(&st, &p), ST_T0 + 304 * ST_US);

	/* rp_rate_to_set_on_first_cnp, and no monitor period: at once. */
	p.rp_rate_to_set_on_first_cnp = 2000;
	p.rp_rate_reduce_monitor_period = 0;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	/* 2e6 - 2e6 * 1023 / 2048 = 2e6 - 999023 */
	ok &= ST_EQ(st.rt_kbps, 2000000) && ST_EQ(st.rc_kbps, 1000977);

	/* ... capped by rp_max_rate. */
	p.rp_max_rate = 1500;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	ok &= ST_EQ(st.rt_kbps, 1500000) && ST_EQ(st.rc_kbps, 750733);
	return ok;
}

/* The floors of a decrease: rp_min_dec_fac, then rp_min_rate. */
static bool st_floors(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	bool ok;

	st_params(&p);
	p.rp_rate_reduce_monitor_period = 0;
	p.rp_min_dec_fac = 80;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	ok = ST_EQ(st.rc_kbps, 8000000);

	/* rp_gd = 10: alpha * RC / 2^10 ~ RC; min_dec_fac = 50 holds. */
	p.rp_min_dec_fac = 50;
	p.rp_gd = 10;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	ok &= ST_EQ(st.rc_kbps, 5000000);

	/* min_dec_fac = 100 prevents decreases. */
	p.rp_min_dec_fac = 100;
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + ST_US);
	ok &= ST_EQ(st.rc_kbps, 5000000) && ST_EQ(st.decreases, 2);

	/* rp_min_rate: 6000 Mb/s is above half of 10 Gb/s. */
	p.rp_min_dec_fac = 1;
	p.rp_min_rate = 6000;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	ok &= ST_EQ(st.rc_kbps, 6000000);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + ST_US);
	ok &= ST_EQ(st.rc_kbps, 6000000);

	/* Small alpha: 10e6 * 1 / 2048 = 4882.8 */
	p.rp_min_rate = 1;
	p.rp_initial_alpha_value = 1;
	p.rp_gd = 11;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	ok &= ST_EQ(st.rc_kbps, ST_LINE - 4882);
	return ok;
}

/* One decrease per monitor period; CNPs in between make it pending. */
static bool st_monitor_period(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	u32 rc;
	bool ok;

	st_params(&p);
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 4 * ST_US);
	rc = st.rc_kbps;
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + 5 * ST_US);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + 6 * ST_US);
	ok = ST_EQ(st.rc_kbps, rc) && ST_EQ(st.decreases, 1) &&
	     ST_EQ(vroce_dcqcn_next_timer(&st, &p), ST_T0 + 8 * ST_US);
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 8 * ST_US);
	/* 5004883 - 5004883 * 1023 / 2048 = 5004883 - 2499997 */
	ok &= ST_EQ(st.decreases, 2) && ST_EQ(st.rc_kbps, 2504886);
	/* Long after the last decrease: at once. */
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + 20 * ST_US);
	ok &= ST_EQ(st.decreases, 3) && ST_EQ(st.cnp_handled, 4) &&
	      ST_EQ(vroce_dcqcn_next_timer(&st, &p), ST_T0 + 320 * ST_US);
	return ok;
}

/* alpha = alpha * g / 1024 (+ (1024 - g) / 1024), step by step. */
static u32 st_alpha_step(u32 alpha, u32 g, bool cnp)
{
	u64 a = (u64)alpha * g;

	if (cnp)
		a += (u64)(1024 - g) << VROCE_DCQCN_ALPHA_SHIFT;
	return a >> 10;
}

static bool st_alpha_near(u32 got, u32 want, u32 tol, int line)
{
	u32 diff = got > want ? got - want : want - got;

	if (diff > tol)
		pr_err("dcqcn self-test alpha:%d: %u, want %u +- %u\n", line,
		       got, want, tol);
	return diff <= tol;
}

static bool st_alpha(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	u32 want;
	bool ok;
	int i;

	vroce_cc_params_init(&p);	/* 1 µs periods, g = 1019 */
	p.rp_rate_reduce_monitor_period = 1000;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	/* The first CNP does not count: one period without.
	 * 1047552 * 1019 / 1024 = 1042437
	 */
	vroce_dcqcn_on_alpha_timer(&st, &p, ST_T0 + ST_US);
	want = st_alpha_step(1023 << 10, 1019, false);
	ok = ST_EQ(want, 1042437) && ST_EQ(st.alpha, want);

	/* A CNP in the second period. */
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + ST_US + 500);
	vroce_dcqcn_on_alpha_timer(&st, &p, ST_T0 + 2 * ST_US);
	want = st_alpha_step(want, 1019, true);
	ok &= ST_EQ(st.alpha, want);

	/* Three quiet periods at once: (g/1024)^3 is exact in Q30. */
	vroce_dcqcn_on_alpha_timer(&st, &p, ST_T0 + 5 * ST_US + 999);
	ok &= ST_EQ(st.alpha, ((u64)want * 1019 * 1019 * 1019) >> 30);

	/* 1000 quiet periods at once, against 1000 single steps. */
	want = st.alpha;
	for (i = 0; i < 1000; i++)
		want = st_alpha_step(want, 1019, false);
	vroce_dcqcn_on_alpha_timer(&st, &p, ST_T0 + 1005 * ST_US);
	ok &= st_alpha_near(st.alpha, want, want / 64 + 4, __LINE__);

	/* Long idle decays alpha to 0. */
	vroce_dcqcn_on_alpha_timer(&st, &p, ST_T0 + 100000 * ST_US);
	ok &= ST_EQ(st.alpha, 0);

	/* CNPs in every period drive alpha up, toward 1.0. */
	p.rp_initial_alpha_value = 0;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	want = 0;
	for (i = 1; i <= 100; i++) {
		vroce_dcqcn_on_cnp(&st, &p, ST_T0 + i * ST_US - 1);
		vroce_dcqcn_on_alpha_timer(&st, &p, ST_T0 + i * ST_US);
		want = st_alpha_step(want, 1019, true);
	}
	ok &= ST_EQ(st.alpha, want) && ST_OK(want > 0);
	return ok;
}

/* Alpha used by a decrease: updated before it (lazy catch-up). */
static bool st_alpha_decrease(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	u32 a;

	vroce_cc_params_init(&p);
	p.rp_dce_tcp_g = 512;		/* alpha halves per quiet period */
	p.rp_rate_reduce_monitor_period = 2;
	vroce_dcqcn_init(&st, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0);
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 2 * ST_US);
	a = (1023 << 10) / 4;
	/* 10e6 - 10e6 * (a / 2^20) / 2 = 10e6 - 1248779 */
	return ST_EQ(st.alpha, a) && ST_EQ(st.rc_kbps, 8751221);
}

/*
 * The increase stages, from RC = 500489, RT = 1e6 (first CNP at 1 Gb/s on
 * a 10 Gb/s line, one decrease), F = 1, AI = 5 Mb/s, HAI = 50 Mb/s.
 */
static void st_setup_inc(struct vroce_cc_params *p, struct vroce_dcqcn *st)
{
	st_params(p);
	p->rp_rate_to_set_on_first_cnp = 1000;
	p->rp_rate_reduce_monitor_period = 0;
	vroce_dcqcn_init(st, p, ST_LINE);
	vroce_dcqcn_on_cnp(st, p, ST_T0);
}

static bool st_timer_only(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	bool ok;

	st_setup_inc(&p, &st);
	p.rp_byte_reset = 0;		/* BC follows T */
	ok = ST_EQ(st.rc_kbps, 500489) && ST_EQ(st.rt_kbps, 1000000);
	/* T = 1 <= F: fast recovery, (1e6 + 500489) / 2 rounded up */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 300 * ST_US);
	ok &= ST_EQ(st.t_stage, 1) && ST_EQ(st.rc_kbps, 750245) &&
	      ST_EQ(st.rt_kbps, 1000000);
	/* T = 2 > F, both counters: hyper, i = 1 */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 600 * ST_US);
	ok &= ST_EQ(st.rt_kbps, 1050000) && ST_EQ(st.rc_kbps, 900123);
	/* T = 3: i = 2 */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 900 * ST_US);
	ok &= ST_EQ(st.rt_kbps, 1150000) && ST_EQ(st.rc_kbps, 1025062);
	ok &= ST_EQ(vroce_dcqcn_next_timer(&st, &p), ST_T0 + 1200 * ST_US);
	return ok;
}

static bool st_additive(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	bool ok;

	st_setup_inc(&p, &st);
	/* Byte counter on, nothing sent: BC = 0 never passes F. */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 300 * ST_US);
	ok = ST_EQ(st.rc_kbps, 750245);
	/* T = 2 > F, BC = 0: additive */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 600 * ST_US);
	ok &= ST_EQ(st.rt_kbps, 1005000) && ST_EQ(st.rc_kbps, 877623);
	/* Two periods late at once: two more additive steps. */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 1200 * ST_US + 5);
	/* RT 1010000, RC 943812; RT 1015000, RC 979406 */
	ok &= ST_EQ(st.t_stage, 4) && ST_EQ(st.rt_kbps, 1015000) &&
	      ST_EQ(st.rc_kbps, 979406);
	return ok;
}

static bool st_bytes(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	bool ok;

	st_setup_inc(&p, &st);
	p.rp_byte_reset = 1000;
	vroce_dcqcn_on_bytes_sent(&st, &p, 999, ST_T0 + ST_US);
	ok = ST_EQ(st.b_stage, 0) && ST_EQ(st.rc_kbps, 500489);
	/* BC = 1, T = 0: fast recovery */
	vroce_dcqcn_on_bytes_sent(&st, &p, 1, ST_T0 + 2 * ST_US);
	ok &= ST_EQ(st.b_stage, 1) && ST_EQ(st.rc_kbps, 750245);
	/* BC = 2: additive (T = 0 has not passed F) */
	vroce_dcqcn_on_bytes_sent(&st, &p, 1500, ST_T0 + 3 * ST_US);
	ok &= ST_EQ(st.b_stage, 2) && ST_EQ(st.bytes, 500) &&
	      ST_EQ(st.rt_kbps, 1005000) && ST_EQ(st.rc_kbps, 877623);
	/* T = 1, BC = 2: additive */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 300 * ST_US);
	ok &= ST_EQ(st.rt_kbps, 1010000) && ST_EQ(st.rc_kbps, 943812);
	/* T = 2, BC = 2: hyper, i = 1 */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 600 * ST_US);
	ok &= ST_EQ(st.rt_kbps, 1060000) && ST_EQ(st.rc_kbps, 1001906);
	/* BC = 3, 4 in one call: hyper twice, i = min(T, BC) - F = 1 */
	vroce_dcqcn_on_bytes_sent(&st, &p, 1500, ST_T0 + 601 * ST_US);
	ok &= ST_EQ(st.b_stage, 4) && ST_EQ(st.rt_kbps, 1160000) &&
	      ST_EQ(st.rc_kbps, 1107977);
	/* A decrease restarts both counters. */
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + 602 * ST_US);
	ok &= ST_EQ(st.t_stage, 0) && ST_EQ(st.b_stage, 0) &&
	      ST_EQ(st.bytes, 0);
	return ok;
}

/* Which decreases move RT down to RC. */
static bool st_clamp(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	bool ok;

	/* clamp_tgt_rate: every decrease. */
	st_setup_inc(&p, &st);
	p.rp_clamp_tgt_rate = 1;
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + ST_US);
	ok = ST_EQ(st.rt_kbps, 500489);

	/* _ati alone: not after byte-counter increases only ... */
	st_setup_inc(&p, &st);
	p.rp_byte_reset = 1000;
	vroce_dcqcn_on_bytes_sent(&st, &p, 1000, ST_T0 + ST_US);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + 2 * ST_US);
	ok &= ST_EQ(st.rt_kbps, 1000000);
	/* ... but after a timer increase. */
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 302 * ST_US);
	ok &= ST_EQ(st.t_stage, 1);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + 303 * ST_US);
	/* RC 375489 after the decrease, (1e6 + 375489) / 2 rounded up */
	ok &= ST_EQ(st.rt_kbps, 687745) && ST_EQ(st.t_stage, 0);

	/* Neither: RT stays even after a timer increase. */
	st_setup_inc(&p, &st);
	p.rp_clamp_tgt_rate_ati = 0;
	vroce_dcqcn_on_rate_timer(&st, &p, ST_T0 + 300 * ST_US);
	vroce_dcqcn_on_cnp(&st, &p, ST_T0 + 301 * ST_US);
	ok &= ST_EQ(st.rt_kbps, 1000000);
	return ok;
}

/* RT never passes the max rate; RC reaching it releases the limiter. */
static bool st_max_rate(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn st;
	u64 t = ST_T0;
	bool ok;
	int i;

	st_setup_inc(&p, &st);
	p.rp_byte_reset = 0;
	p.rp_max_rate = 1100;
	for (i = 0; i < 3; i++) {
		t += 300 * ST_US;
		vroce_dcqcn_on_rate_timer(&st, &p, t);
	}
	/* FR 750245; HAI RT 1050000, RC 900123; HAI RT 1100000 (capped) */
	ok = ST_EQ(st.rt_kbps, 1100000) && ST_EQ(st.rc_kbps, 1000062) &&
	     ST_OK(st.limited);
	for (i = 0; i < 40 && st.limited; i++) {
		t += 300 * ST_US;
		vroce_dcqcn_on_rate_timer(&st, &p, t);
		ok &= ST_OK(st.rt_kbps <= 1100000 && st.rc_kbps <= 1100000);
	}
	ok &= ST_OK(!st.limited) && ST_EQ(vroce_dcqcn_rate_kbps(&st), 0) &&
	      ST_EQ(st.rc_kbps, 1100000) &&
	      ST_EQ(vroce_dcqcn_next_timer(&st, &p), U64_MAX);

	/* The next CNP is a first CNP again. */
	p.rp_rate_to_set_on_first_cnp = 0;
	vroce_dcqcn_on_cnp(&st, &p, t + ST_US);
	ok &= ST_OK(st.limited) && ST_EQ(st.rt_kbps, 1100000) &&
	      ST_EQ(st.alpha, 1023 << 10);

	/* Lowering rp_max_rate caps a limited QP at its next event. */
	st_setup_inc(&p, &st);
	p.rp_max_rate = 400;
	vroce_dcqcn_on_bytes_sent(&st, &p, 1, ST_T0 + ST_US);
	ok &= ST_EQ(st.rc_kbps, 400000);
	return ok;
}

/* A late timer applies the same periods as timely ones. */
static bool st_catch_up(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn a, b;
	int i;

	st_setup_inc(&p, &a);
	st_setup_inc(&p, &b);
	for (i = 1; i <= 5; i++)
		vroce_dcqcn_on_rate_timer(&a, &p, ST_T0 + i * 300 * ST_US);
	vroce_dcqcn_on_rate_timer(&b, &p, ST_T0 + 5 * 300 * ST_US + 7);
	return ST_EQ(a.rc_kbps, b.rc_kbps) && ST_EQ(a.rt_kbps, b.rt_kbps) &&
	       ST_EQ(a.t_stage, 5) && ST_EQ(b.t_stage, 5);
}

/*
 * A late timer makes the same decrease as a timely one: at its due time,
 * with the alpha of that time (defaults: alpha decays every 1 µs, so 1 ms
 * later it is near 0), and the increase periods count from it.
 */
static bool st_late_decrease(void)
{
	struct vroce_cc_params p;
	struct vroce_dcqcn a, b;
	bool ok;

	vroce_cc_params_init(&p);
	vroce_dcqcn_init(&a, &p, ST_LINE);
	vroce_dcqcn_init(&b, &p, ST_LINE);
	vroce_dcqcn_on_cnp(&a, &p, ST_T0);
	vroce_dcqcn_on_cnp(&b, &p, ST_T0);
	vroce_dcqcn_on_rate_timer(&a, &p, ST_T0 + 4 * ST_US);
	/* Near half: alpha 0.999 * (1019/1024)^4 = 0.979 at 4 µs. */
	ok = ST_EQ(a.decreases, 1) && ST_OK(a.rc_kbps > ST_LINE / 2 + 5000) &&
	     ST_OK(a.rc_kbps < ST_LINE / 2 + 200000);
	vroce_dcqcn_on_rate_timer(&a, &p, ST_T0 + 1000 * ST_US);
	vroce_dcqcn_on_rate_timer(&b, &p, ST_T0 + 1000 * ST_US);
	/* Then three increase periods (304, 604 and 904 µs), the same. */
	return ok && ST_EQ(b.decreases, 1) && ST_EQ(b.rc_kbps, a.rc_kbps) &&
	       ST_EQ(b.rt_kbps, a.rt_kbps) && ST_EQ(b.alpha, a.alpha) &&
	       ST_EQ(b.t_stage, a.t_stage) && ST_EQ(a.t_stage, 3);
}

/* NP: at most one CNP per np_min_time_between_cnps (4 µs). */
static bool st_np(void)
{
	struct vroce_cc_params p;
	struct vroce_np np;
	bool ok;

	vroce_cc_params_init(&p);
	vroce_np_init(&np);
	ok = ST_OK(vroce_np_should_send_cnp(&np, &p, ST_T0)) &&
	     ST_OK(!vroce_np_should_send_cnp(&np, &p, ST_T0 + 1)) &&
	     ST_OK(!vroce_np_should_send_cnp(&np, &p, ST_T0 + 4 * ST_US - 1)) &&
	     ST_OK(vroce_np_should_send_cnp(&np, &p, ST_T0 + 4 * ST_US)) &&
	     ST_OK(!vroce_np_should_send_cnp(&np, &p, ST_T0 + 5 * ST_US));
	p.np_min_time_between_cnps = 0;
	ok &= ST_OK(vroce_np_should_send_cnp(&np, &p, ST_T0 + 5 * ST_US)) &&
	      ST_OK(vroce_np_should_send_cnp(&np, &p, ST_T0 + 5 * ST_US));
	/* A new QP sends at time 0 too. */
	vroce_cc_params_init(&p);
	vroce_np_init(&np);
	ok &= ST_OK(vroce_np_should_send_cnp(&np, &p, 0)) &&
	      ST_OK(!vroce_np_should_send_cnp(&np, &p, 1));
	return ok;
}

bool vroce_dcqcn_selftest(void)
{
	bool ok = true;

	ok &= st_defaults();
	ok &= st_knob_ranges();
	ok &= st_unlimited();
	ok &= st_first_cnp();
	ok &= st_floors();
	ok &= st_monitor_period();
	ok &= st_alpha();
	ok &= st_alpha_decrease();
	ok &= st_timer_only();
	ok &= st_additive();
	ok &= st_bytes();
	ok &= st_clamp();
	ok &= st_max_rate();
	ok &= st_catch_up();
	ok &= st_late_decrease();
	ok &= st_np();
	if (ok)
		pr_info("dcqcn self-tests: pass\n");
	else
		pr_err("dcqcn self-tests: FAIL\n");
	return ok;
}
