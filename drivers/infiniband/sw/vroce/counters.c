// SPDX-License-Identifier: GPL-2.0
/*
 * Per-device counters, exposed as ib_core port hw_stats ("rdma statistic
 * show link DEV/1", /sys/class/infiniband/DEV/ports/1/hw_counters/).
 *
 * Names: mlx5's where the meaning is the same (mlx5's counters.c),
 * rdma_rxe's for the packet totals (sent_pkts, rcvd_pkts, send_err), and
 * vroce's own, shaped like rxe's, for receive checks neither driver counts
 * separately.
 * Bytes count the packet from its L3 header (GRH, IPv4 or IPv6) through the
 * ICRC: no Ethernet header, VLAN tag or FCS.
 *
 * Counters are per CPU (struct vroce_counters), updated without a lock from
 * the transmit path (process or softirq context) and the receive path
 * (softirq), and summed over the possible CPUs when read: a read may miss
 * the updates that run meanwhile, and is not a snapshot across counters.
 * A 64-bit CPU loads each CPU's share whole; a 32-bit one may read a share
 * torn by an update that carries into its high word. They start at zero
 * when the device is created and are never reset.
 */

#include <linux/build_bug.h>
#include <rdma/ib_verbs.h>

#include "counters.h"
#include "device.h"

static const struct rdma_stat_desc vroce_counter_descs[] = {
	[VROCE_CNT_SENT_PKTS].name = "sent_pkts",
	[VROCE_CNT_SENT_BYTES].name = "sent_bytes",
	[VROCE_CNT_SEND_ERR].name = "send_err",
	[VROCE_CNT_RCVD_PKTS].name = "rcvd_pkts",
	[VROCE_CNT_RCVD_BYTES].name = "rcvd_bytes",
	[VROCE_CNT_RX_ICRC_ERR].name = "rx_icrc_encapsulated",
	[VROCE_CNT_RCVD_MALFORMED].name = "rcvd_malformed",
	[VROCE_CNT_RCVD_TVER_ERR].name = "rcvd_tver_err",
	[VROCE_CNT_RCVD_OPCODE_ERR].name = "rcvd_opcode_err",
	[VROCE_CNT_RCVD_PKEY_ERR].name = "rcvd_pkey_err",
	[VROCE_CNT_RCVD_NO_QP].name = "rcvd_no_qp",
	[VROCE_CNT_RCVD_QUEUE_FULL].name = "rcvd_qp_queue_full",
	[VROCE_CNT_RCVD_QP_STATE_ERR].name = "rcvd_qp_state_err",
	[VROCE_CNT_RETRANS_PKTS].name = "retrans_pkts",
	[VROCE_CNT_LOCAL_ACK_TIMEOUT].name = "local_ack_timeout_err",
	[VROCE_CNT_PACKET_SEQ_ERR].name = "packet_seq_err",
	[VROCE_CNT_IMPLIED_NAK].name = "implied_nak_seq_err",
	[VROCE_CNT_RNR_NAK_RCVD].name = "rnr_nak_retry_err",
	[VROCE_CNT_REQ_RETRY_EXC].name = "req_transport_retries_exceeded",
	[VROCE_CNT_REQ_RNR_RETRY_EXC].name = "req_rnr_retries_exceeded",
	[VROCE_CNT_REQ_REM_ACCESS_ERR].name = "req_remote_access_errors",
	[VROCE_CNT_REQ_REM_INV_REQ].name = "req_remote_invalid_request",
	[VROCE_CNT_DUPLICATE_REQUEST].name = "duplicate_request",
	[VROCE_CNT_DUPLICATE_DROPPED].name = "duplicate_request_dropped",
	[VROCE_CNT_OUT_OF_SEQUENCE].name = "out_of_sequence",
	[VROCE_CNT_OUT_OF_BUFFER].name = "out_of_buffer",
	[VROCE_CNT_NAK_SENT].name = "nak_sent",
	[VROCE_CNT_RESP_REM_ACCESS_ERR].name = "resp_remote_access_errors",
	[VROCE_CNT_RESP_LOCAL_LENGTH_ERR].name = "resp_local_length_error",
	[VROCE_CNT_RX_WRITE_REQUESTS].name = "rx_write_requests",
	[VROCE_CNT_RX_READ_REQUESTS].name = "rx_read_requests",
	[VROCE_CNT_RX_ATOMIC_REQUESTS].name = "rx_atomic_requests",
	[VROCE_CNT_RCVD_QKEY_ERR].name = "rcvd_qkey_err",
	[VROCE_CNT_NP_ECN_MARKED].name = "np_ecn_marked_roce_packets",
	[VROCE_CNT_NP_CNP_SENT].name = "np_cnp_sent",
	[VROCE_CNT_RP_CNP_HANDLED].name = "rp_cnp_handled",
	[VROCE_CNT_RP_CNP_IGNORED].name = "rp_cnp_ignored",
};

/* Return: 0, or -ENOMEM. */
int vroce_counters_init(struct vroce_counters *c)
{
	BUILD_BUG_ON(ARRAY_SIZE(vroce_counter_descs) != VROCE_NUM_COUNTERS);
	c->pcpu = alloc_percpu(struct vroce_counter_vals);
	return c->pcpu ? 0 : -ENOMEM;
}

/* Also after a failed vroce_counters_init(). */
void vroce_counters_free(struct vroce_counters *c)
{
	free_percpu(c->pcpu);
	c->pcpu = NULL;
}

/**
 * vroce_counter_read - the value of one counter
 * @c: the device's counters
 * @idx: which
 *
 * Context: any.
 */
u64 vroce_counter_read(const struct vroce_counters *c, enum vroce_counter idx)
{
	const struct vroce_counter_vals *v;
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		v = per_cpu_ptr(c->pcpu, cpu);
		sum += READ_ONCE(v->val[idx]);
	}
	return sum;
}

struct rdma_hw_stats *vroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num)
{
	return rdma_alloc_hw_stats_struct(vroce_counter_descs,
					  ARRAY_SIZE(vroce_counter_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int vroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port_num, int index)
{
	struct vroce_counters *c = &to_vdev(ibdev)->counters;
	int i;

	for (i = 0; i < VROCE_NUM_COUNTERS; i++)
		stats->value[i] = vroce_counter_read(c, i);
	return VROCE_NUM_COUNTERS;
}
