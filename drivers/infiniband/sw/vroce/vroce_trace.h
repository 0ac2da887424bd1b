/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vroce tracepoints (trace.c defines them): congestion control.
 *
 *   vroce:vroce_cnp_sent     the NP sent a CNP
 *   vroce:vroce_cnp_handled  the RP fed a CNP to a QP's rate machine
 *   vroce:vroce_rate_change  a QP's pacer rate changed (old -> new, why)
 *
 * Rates are kbit/s; 0 means unlimited (not paced).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM vroce

#if !defined(_VROCE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _VROCE_TRACE_H

#include <linux/string.h>
#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>

#ifndef _VROCE_TRACE_ONCE
#define _VROCE_TRACE_ONCE
/* Why a QP's rate changed. */
enum vroce_rate_reason {
	VROCE_RATE_CNP,		/* a CNP (first CNP, or its decrease) */
	VROCE_RATE_TIMER,	/* the timer: pending decrease, increase */
	VROCE_RATE_BYTES,	/* the byte counter: increase */
	VROCE_RATE_RESET,	/* the QP went to RESET */
};
#endif

TRACE_DEFINE_ENUM(VROCE_RATE_CNP);
TRACE_DEFINE_ENUM(VROCE_RATE_TIMER);
TRACE_DEFINE_ENUM(VROCE_RATE_BYTES);
TRACE_DEFINE_ENUM(VROCE_RATE_RESET);

TRACE_EVENT(vroce_cnp_sent,
	TP_PROTO(const struct ib_device *ibdev, u32 qpn, u32 dqpn, u8 prio,
		 u8 dscp),
	TP_ARGS(ibdev, qpn, dqpn, prio, dscp),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u32, dqpn)
		__field(u8, prio)
		__field(u8, dscp)
	),
	TP_fast_assign(
		strscpy(__entry->dev, dev_name(&ibdev->dev), IB_DEVICE_NAME_MAX);
		__entry->qpn = qpn;
		__entry->dqpn = dqpn;
		__entry->prio = prio;
		__entry->dscp = dscp;
	),
	TP_printk("%s qpn %u -> dqpn %u prio %u dscp %u", __entry->dev,
		  __entry->qpn, __entry->dqpn, __entry->prio, __entry->dscp)
);

TRACE_EVENT(vroce_cnp_handled,
	TP_PROTO(const struct ib_device *ibdev, u32 qpn, u32 rate_kbps,
		 u32 target_kbps, u32 alpha),
	TP_ARGS(ibdev, qpn, rate_kbps, target_kbps, alpha),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u32, rate_kbps)
		__field(u32, target_kbps)
		__field(u32, alpha)
	),
	TP_fast_assign(
		strscpy(__entry->dev, dev_name(&ibdev->dev), IB_DEVICE_NAME_MAX);
		__entry->qpn = qpn;
		__entry->rate_kbps = rate_kbps;
		__entry->target_kbps = target_kbps;
		__entry->alpha = alpha;
	),
	TP_printk("%s qpn %u rate %u kb/s target %u kb/s alpha %u/1048576",
		  __entry->dev, __entry->qpn, __entry->rate_kbps,
		  __entry->target_kbps, __entry->alpha)
);

TRACE_EVENT(vroce_rate_change,
	TP_PROTO(const struct ib_device *ibdev, u32 qpn, u32 old_kbps,
		 u32 new_kbps, int reason),
	TP_ARGS(ibdev, qpn, old_kbps, new_kbps, reason),
	TP_STRUCT__entry(
		__array(char, dev, IB_DEVICE_NAME_MAX)
		__field(u32, qpn)
		__field(u32, old_kbps)
		__field(u32, new_kbps)
		__field(int, reason)
	),
	TP_fast_assign(
		strscpy(__entry->dev, dev_name(&ibdev->dev), IB_DEVICE_NAME_MAX);
		__entry->qpn = qpn;
		__entry->old_kbps = old_kbps;
		__entry->new_kbps = new_kbps;
		__entry->reason = reason;
	),
	TP_printk("%s qpn %u %u -> %u kb/s (%s)", __entry->dev, __entry->qpn,
		  __entry->old_kbps, __entry->new_kbps,
		  __print_symbolic(__entry->reason,
				   { VROCE_RATE_CNP, "cnp" },
				   { VROCE_RATE_TIMER, "timer" },
				   { VROCE_RATE_BYTES, "bytes" },
				   { VROCE_RATE_RESET, "reset" }))
);

#endif /* _VROCE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE vroce_trace
#include <trace/define_trace.h>
