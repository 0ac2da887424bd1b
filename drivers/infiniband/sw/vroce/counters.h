/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_COUNTERS_H
#define _VROCE_COUNTERS_H

#include <linux/percpu.h>
#include <linux/types.h>

struct ib_device;
struct rdma_hw_stats;

/* The device's hardware counters, shown by "rdma statistic show link DEV/1". */
enum vroce_counter {
	VROCE_CNT_SENT_PKTS,
	VROCE_CNT_SENT_BYTES,
	VROCE_CNT_SEND_ERR,
	VROCE_CNT_RCVD_PKTS,
	VROCE_CNT_RCVD_BYTES,
	VROCE_CNT_RX_ICRC_ERR,
	VROCE_CNT_RCVD_MALFORMED,
	VROCE_CNT_RCVD_TVER_ERR,
	VROCE_CNT_RCVD_OPCODE_ERR,
	VROCE_CNT_RCVD_PKEY_ERR,
	VROCE_CNT_RCVD_NO_QP,
	VROCE_CNT_RCVD_QUEUE_FULL,
	VROCE_CNT_RCVD_QP_STATE_ERR,
	/* RC transport, requester side */
	VROCE_CNT_RETRANS_PKTS,
	VROCE_CNT_LOCAL_ACK_TIMEOUT,
	VROCE_CNT_PACKET_SEQ_ERR,
	VROCE_CNT_IMPLIED_NAK,
	VROCE_CNT_RNR_NAK_RCVD,
	VROCE_CNT_REQ_RETRY_EXC,
	VROCE_CNT_REQ_RNR_RETRY_EXC,
	VROCE_CNT_REQ_REM_ACCESS_ERR,
	VROCE_CNT_REQ_REM_INV_REQ,
	/* RC transport, responder side */
	VROCE_CNT_DUPLICATE_REQUEST,
	VROCE_CNT_DUPLICATE_DROPPED,
	VROCE_CNT_OUT_OF_SEQUENCE,
	VROCE_CNT_OUT_OF_BUFFER,
	VROCE_CNT_NAK_SENT,
	VROCE_CNT_RESP_REM_ACCESS_ERR,
	VROCE_CNT_RESP_LOCAL_LENGTH_ERR,
	VROCE_CNT_RX_WRITE_REQUESTS,
	VROCE_CNT_RX_READ_REQUESTS,
	VROCE_CNT_RX_ATOMIC_REQUESTS,
	/* UD and GSI receive */
	VROCE_CNT_RCVD_QKEY_ERR,
	/* congestion control (mlx5 names) */
	VROCE_CNT_NP_ECN_MARKED,
	VROCE_CNT_NP_CNP_SENT,
	VROCE_CNT_RP_CNP_HANDLED,
	VROCE_CNT_RP_CNP_IGNORED,
	VROCE_NUM_COUNTERS
};

/* One CPU's share of every counter. */
struct vroce_counter_vals {
	u64 val[VROCE_NUM_COUNTERS];
};

/**
 * struct vroce_counters - the counters of one device
 * @pcpu: each CPU's share, updated by that CPU with this_cpu_add() (no
 *	  lock, no atomic instruction, no cache line shared between CPUs)
 *	  from any context, summed by vroce_counter_read()
 */
struct vroce_counters {
	struct vroce_counter_vals __percpu *pcpu;
};

static inline void vroce_counter_add(struct vroce_counters *c,
				     enum vroce_counter idx, u64 n)
{
	this_cpu_add(c->pcpu->val[idx], n);
}

static inline void vroce_counter_inc(struct vroce_counters *c,
				     enum vroce_counter idx)
{
	this_cpu_inc(c->pcpu->val[idx]);
}

/* counters.c APIs: */
int vroce_counters_init(struct vroce_counters *c);
void vroce_counters_free(struct vroce_counters *c);
u64 vroce_counter_read(const struct vroce_counters *c, enum vroce_counter idx);
struct rdma_hw_stats *vroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num);
int vroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port_num, int index);

#endif /* _VROCE_COUNTERS_H */
