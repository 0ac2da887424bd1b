/* SPDX-License-Identifier: GPL-2.0 */
/*
 * DCQCN: the reaction-point (RP) rate machine of one QP and the
 * notification-point (NP) CNP rate limit, as pure code. Nothing here reads a
 * clock, takes a lock or allocates: the caller passes the time (ns, any
 * monotonic base) and the device's knobs, and serialises the calls on one
 * state (dcqcn.c says how the transport is meant to drive it).
 *
 * Fixed-point formats (integer arithmetic only):
 *   rates   kbit/s in a u32 (knobs are Mbit/s; 1 Mb/s = 1000 kb/s), so
 *           4 Tb/s is the largest rate and halving stays exact far down;
 *   alpha   Q20 in a u32: 1.0 == 1 << 20 (VROCE_DCQCN_ALPHA_ONE); the knobs
 *           rp_initial_alpha_value and rp_dce_tcp_g are /1024 (Q10), so a
 *           knob value v is v << 10 in Q20;
 *   time    ns in a u64; the µs knobs are multiplied by 1000.
 */
#ifndef _VROCE_DCQCN_H
#define _VROCE_DCQCN_H

#include <linux/bits.h>
#include <linux/types.h>

#define VROCE_DCQCN_ALPHA_SHIFT	20
#define VROCE_DCQCN_ALPHA_ONE	BIT(VROCE_DCQCN_ALPHA_SHIFT)

/*
 * Largest number of elapsed rate-increase periods one call applies; a
 * caller that was away longer gets the rest dropped (the rate then lags,
 * never overshoots).
 */
#define VROCE_DCQCN_MAX_CATCHUP	1024

/**
 * struct vroce_cc_params - the congestion-control knobs of one device
 *
 * Names, units and defaults are mlx5's (cc_params debugfs, NVIDIA's DCQCN
 * parameter documentation);
 * cc.c validates every write. Fields are written with WRITE_ONCE() by sysfs
 * and read once per event with READ_ONCE(): a write takes effect at the
 * next event of each QP.
 *
 * @rp_clamp_tgt_rate: 1: target rate <- current rate on every decrease
 * @rp_clamp_tgt_rate_ati: 1: target <- current on a decrease if the timer
 *	raised the rate since the last decrease
 * @rp_time_reset: rate-increase timer period, µs
 * @rp_byte_reset: bytes sent per byte-counter stage; 0 disables the counter
 * @rp_threshold: stages of fast recovery before additive increase (F)
 * @rp_max_rate: highest rate, Mb/s; 0 = the port's line rate
 * @rp_ai_rate: additive increase step, Mb/s
 * @rp_hai_rate: hyper increase step, Mb/s
 * @rp_min_dec_fac: a decrease keeps at least this % of the current rate
 * @rp_min_rate: lowest rate, Mb/s
 * @rp_rate_to_set_on_first_cnp: current and target rate on the first CNP,
 *	Mb/s; 0 = keep the current (line) rate
 * @rp_dce_tcp_g: alpha update: alpha <- alpha * g/1024 (+ (1024 - g)/1024
 *	when a CNP arrived in the period)
 * @rp_dce_tcp_rtt: alpha update period, µs
 * @rp_rate_reduce_monitor_period: at most one decrease per period, µs
 * @rp_initial_alpha_value: alpha on the first CNP, /1024
 * @rp_gd: decrease = rate * alpha / 2^rp_gd, alpha in /1024 units
 * @np_min_time_between_cnps: at most one CNP per QP per this many µs
 * @np_cnp_dscp: DSCP of the CNPs sent
 * @np_cnp_prio: 802.1p priority (skb->priority) of the CNPs sent
 */
struct vroce_cc_params {
	u32 rp_clamp_tgt_rate;
	u32 rp_clamp_tgt_rate_ati;
	u32 rp_time_reset;
	u32 rp_byte_reset;
	u32 rp_threshold;
	u32 rp_max_rate;
	u32 rp_ai_rate;
	u32 rp_hai_rate;
	u32 rp_min_dec_fac;
	u32 rp_min_rate;
	u32 rp_rate_to_set_on_first_cnp;
	u32 rp_dce_tcp_g;
	u32 rp_dce_tcp_rtt;
	u32 rp_rate_reduce_monitor_period;
	u32 rp_initial_alpha_value;
	u32 rp_gd;
	u32 np_min_time_between_cnps;
	u32 np_cnp_dscp;
	u32 np_cnp_prio;
};

/**
 * struct vroce_dcqcn - reaction-point state of one QP
 * @line_kbps: the port's line rate when the QP was set up
 * @rc_kbps: current rate (RC); the pacer's rate while @limited
 * @rt_kbps: target rate (RT)
 * @alpha: congestion estimate, Q20
 * @limited: a rate limiter is allocated: a CNP arrived and the rate has not
 *	climbed back to the maximum since. While false the QP is not paced
 *	and needs no timer; the next CNP is a "first CNP" again.
 * @cnp_alpha: a CNP arrived in the current alpha period
 * @cnp_dec: a CNP arrived since the last decrease (a decrease is pending)
 * @t_stage: rate-increase timer periods since the last decrease (T)
 * @b_stage: byte-counter stages since the last decrease (BC)
 * @bytes: bytes sent since the last byte stage
 * @alpha_ns: start of the current alpha period
 * @dec_ns: time of the last decrease (or of the first CNP)
 * @inc_ns: start of the current rate-increase timer period
 * @cnp_handled: CNPs fed to the machine (mlx5 rp_cnp_handled)
 * @decreases: rate decreases done
 */
struct vroce_dcqcn {
	u32 line_kbps;
	u32 rc_kbps;
	u32 rt_kbps;
	u32 alpha;
	bool limited;
	bool cnp_alpha;
	bool cnp_dec;
	u32 t_stage;
	u32 b_stage;
	u64 bytes;
	u64 alpha_ns;
	u64 dec_ns;
	u64 inc_ns;
	u64 cnp_handled;
	u64 decreases;
};

/**
 * struct vroce_np - notification-point state of one QP
 * @last_cnp_ns: when the last CNP was sent
 * @sent: a CNP was ever sent (@last_cnp_ns is valid)
 */
struct vroce_np {
	u64 last_cnp_ns;
	bool sent;
};

/* Knob ids, in mlx5's cc_params order (drivers/infiniband/hw/mlx5/cong.c). */
enum vroce_cc_knob_id {
	VROCE_CC_RP_CLAMP_TGT_RATE,
	VROCE_CC_RP_CLAMP_TGT_RATE_ATI,
	VROCE_CC_RP_TIME_RESET,
	VROCE_CC_RP_BYTE_RESET,
	VROCE_CC_RP_THRESHOLD,
	VROCE_CC_RP_AI_RATE,
	VROCE_CC_RP_MAX_RATE,
	VROCE_CC_RP_HAI_RATE,
	VROCE_CC_RP_MIN_DEC_FAC,
	VROCE_CC_RP_MIN_RATE,
	VROCE_CC_RP_RATE_TO_SET_ON_FIRST_CNP,
	VROCE_CC_RP_DCE_TCP_G,
	VROCE_CC_RP_DCE_TCP_RTT,
	VROCE_CC_RP_RATE_REDUCE_MONITOR_PERIOD,
	VROCE_CC_RP_INITIAL_ALPHA_VALUE,
	VROCE_CC_RP_GD,
	VROCE_CC_NP_MIN_TIME_BETWEEN_CNPS,
	VROCE_CC_NP_CNP_DSCP,
	VROCE_CC_NP_CNP_PRIO,
	VROCE_CC_NR_KNOBS
};

/**
 * struct vroce_cc_knob - name, place and valid range of one knob
 * @name: the mlx5 name, also the sysfs file name
 * @offset: offset of the u32 in struct vroce_cc_params
 * @min: smallest valid value
 * @max: largest valid value
 * @def: default (NVIDIA's current DCQCN parameter defaults)
 */
struct vroce_cc_knob {
	const char *name;
	unsigned int offset;
	u32 min;
	u32 max;
	u32 def;
};

/* dcqcn.c APIs: */
extern const struct vroce_cc_knob vroce_cc_knobs[VROCE_CC_NR_KNOBS];
void vroce_cc_params_init(struct vroce_cc_params *p);
u32 vroce_cc_knob_get(const struct vroce_cc_params *p,
		      enum vroce_cc_knob_id id);
int vroce_cc_knob_set(struct vroce_cc_params *p, enum vroce_cc_knob_id id,
		      u32 val);
void vroce_dcqcn_init(struct vroce_dcqcn *st,
		      const struct vroce_cc_params *p, u32 line_kbps);
void vroce_dcqcn_on_cnp(struct vroce_dcqcn *st,
			const struct vroce_cc_params *p, u64 now);
void vroce_dcqcn_on_alpha_timer(struct vroce_dcqcn *st,
				const struct vroce_cc_params *p, u64 now);
void vroce_dcqcn_on_rate_timer(struct vroce_dcqcn *st,
			       const struct vroce_cc_params *p, u64 now);
void vroce_dcqcn_on_bytes_sent(struct vroce_dcqcn *st,
			       const struct vroce_cc_params *p, u32 bytes,
			       u64 now);
u64 vroce_dcqcn_next_timer(const struct vroce_dcqcn *st,
			   const struct vroce_cc_params *p);
void vroce_np_init(struct vroce_np *np);
bool vroce_np_should_send_cnp(struct vroce_np *np,
			      const struct vroce_cc_params *p, u64 now);

/* The pacer's rate: 0 when the QP is not rate limited. */
static inline u32 vroce_dcqcn_rate_kbps(const struct vroce_dcqcn *st)
{
	return st->limited ? st->rc_kbps : 0;
}

#ifdef VROCE_DEBUG
bool vroce_dcqcn_selftest(void);
#else
static inline bool vroce_dcqcn_selftest(void)
{
	return true;
}
#endif

#endif /* _VROCE_DCQCN_H */
