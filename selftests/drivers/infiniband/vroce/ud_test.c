// SPDX-License-Identifier: GPL-2.0
/*
 * Address handles, UD and UC QPs through libibverbs. UD: datagrams of every
 * size from 0 to the port MTU checked byte for byte, the 40-byte GRH area
 * (RoCEv1 GRH, IPv6 header, or 20 zero bytes and the IPv4 header), the
 * source QP and flags of the receive completion, immediate data, a too big
 * datagram completing with LOC_LEN_ERR, Q_Key mismatches and datagrams
 * without a receive WQE dropped, the privileged Q_Key rule. UC: SEND, RDMA
 * WRITE and WRITE with immediate across MTU boundaries, byte for byte, and
 * READ refused. AHs: creation errors. Multicast: two QPs of the peer's
 * device and one of the sender's attached to a group (an IPv4-mapped MGID
 * for RoCE v2 over IPv4, else an IPv6 one) each receive a datagram sent to
 * it byte for byte, each with its own Q_Key check; detach stops delivery,
 * re-attach restarts it; the errors of attach and detach. Run by ud.sh:
 *   VROCE_DEV, VROCE_PEER_DEV  the sender's and the receiver's device
 *                              (the same name for a single-device loopback)
 *   VROCE_GID, VROCE_PEER_GID  their GID indices; if unset, the first RoCE
 *                              v2 GID of VROCE_GID_FAMILY (4 or 6, default 4)
 * Datagrams that must be dropped are followed by one that must arrive: the
 * first receive completion tells, without waiting for a time.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

/* A hang guard on every wait for a completion, not a timing assertion. */
#define POLL_TIMEOUT_S	60
#define TEST_TIMEOUT_S	600
#define GRH_BYTES	40
#define BUF_SIZE	(1u << 20)
#define RECV_OFF	(BUF_SIZE / 2)
#define DEPTH		64
#define QKEY		0x11223344u
#define QKEY_OTHER	0x55667788u
#define PRIV_BIT	0x80000000u
#define GUARD		16
#define UC_PSN_A	0xfffffe	/* wraps the 24-bit PSN */
#define UC_PSN_B	0x000100
#define UD_PSN		0x123

struct side {
	const char *name;
	struct vroce_dev dev;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;	/* to the peer */
	uint32_t mtu;		/* in bytes */
};

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	uint32_t x = i * 0x9e3779b1u ^ (seed + 1) * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	return x ^ (x >> 12);
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	vroce_fill(p, len, seed, pattern);
}

/* Index of the first byte of @p that is not pattern @seed, or -1. */
static long mismatch(const uint8_t *p, uint32_t len, uint32_t seed)
{
	return vroce_mismatch(p, len, seed, pattern);
}


/* Wait (bounded: a hang guard) until counter @name of @dev passes @old. */
static void wait_counter(const char *dev, const char *name, long long old)
{
	double end = vroce_now_s() + POLL_TIMEOUT_S;

	if (old < 0) {
		usleep(500000);	/* no such counter (another driver) */
		return;
	}
	while (vroce_hw_counter(dev, name) <= old && vroce_now_s() < end)
		usleep(1000);
}

static void side_open(struct __test_metadata *_metadata, struct side *s,
		      const char *dev, const char *gid_var,
		      enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {};

	s->name = dev;
	ASSERT_EQ(0, vroce_dev_open(&s->dev, dev, gid_var));
	ASSERT_EQ(IBV_PORT_ACTIVE, s->dev.state);
	s->mtu = 128u << s->dev.mtu;
	ASSERT_EQ(0, vroce_dev_buf(&s->dev, dev, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE));
	s->scq = ibv_create_cq(s->dev.ctx, DEPTH * 2, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->dev.ctx, DEPTH * 2, NULL, NULL, 0);
	ASSERT_NE(NULL, s->scq);
	ASSERT_NE(NULL, s->rcq);
	init.send_cq = s->scq;
	init.recv_cq = s->rcq;
	init.qp_type = type;
	init.cap.max_send_wr = DEPTH;
	init.cap.max_recv_wr = DEPTH;
	init.cap.max_send_sge = 2;
	init.cap.max_recv_sge = 2;
	init.cap.max_inline_data = 64;
	s->qp = ibv_create_qp(s->dev.pd, &init);
	ASSERT_NE(NULL, s->qp) TH_LOG("create_qp: %s", strerror(errno));
}

static void side_close(struct side *s)
{
	if (s->ah)
		ibv_destroy_ah(s->ah);
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->rcq)
		ibv_destroy_cq(s->rcq);
	if (s->scq)
		ibv_destroy_cq(s->scq);
	vroce_dev_close(&s->dev);
	memset(s, 0, sizeof(*s));
}

static struct ibv_ah *make_ah(struct side *s, struct side *peer)
{
	struct ibv_ah_attr attr = {
		.is_global = 1,
		.port_num = 1,
		.grh = {
			.dgid = peer->dev.gid,
			.sgid_index = s->dev.gid_idx,
			.hop_limit = 64,
		},
	};

	return ibv_create_ah(s->dev.pd, &attr);
}

/* A UC path from @s to @peer's QP (vroce_uc_connect()). */
static struct vroce_rc_path uc_path(struct side *s, struct side *peer,
				    uint32_t sq_psn, uint32_t rq_psn)
{
	return (struct vroce_rc_path){
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		.mtu = s->dev.mtu < peer->dev.mtu ? s->dev.mtu : peer->dev.mtu,
		.dest_qpn = peer->qp->qp_num, .dgid = peer->dev.gid,
		.sgid_idx = s->dev.gid_idx, .sq_psn = sq_psn, .rq_psn = rq_psn,
	};
}

/* 0 with both sides open; 1 if skipped. */
static int pair_open(struct __test_metadata *_metadata, struct side *a,
		     struct side *b, enum ibv_qp_type type)
{
	const char *dev = getenv("VROCE_DEV");
	const char *peer = getenv("VROCE_PEER_DEV");

	if (!dev || !*dev)
		SKIP(return 1, "VROCE_DEV not set (run ud.sh)");
	if (!peer || !*peer)
		peer = dev;
	side_open(_metadata, a, dev, "VROCE_GID", type);
	side_open(_metadata, b, peer, "VROCE_PEER_GID", type);
	return 0;
}

static void post_recv(struct __test_metadata *_metadata, struct side *s,
		      uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->dev.buf + off, .length = len,
		.lkey = s->dev.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	ASSERT_EQ(0, ibv_post_recv(s->qp, &wr, &bad));
}

static int ud_send(struct side *s, struct side *peer, uint64_t wr_id,
		   uint32_t len, uint32_t qkey, enum ibv_wr_opcode op,
		   uint32_t imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->dev.buf, .length = len, .lkey = s->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(imm),
	}, *bad;

	wr.wr.ud.ah = s->ah;
	wr.wr.ud.remote_qpn = peer->qp->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

/* The GRH area as verbs define it for the sender's GID type. */
static void check_grh(struct __test_metadata *_metadata, const uint8_t *g,
		      struct side *src, struct side *dst)
{
	static const uint8_t zero[20];

	if (src->dev.gid_type == IBV_GID_TYPE_ROCE_V2 &&
	    IN6_IS_ADDR_V4MAPPED((struct in6_addr *)src->dev.gid.raw)) {
		EXPECT_EQ(0, memcmp(g, zero, 20));
		EXPECT_EQ(0x45, g[20]);		/* IPv4, 5 words */
		EXPECT_EQ(17, g[29]);		/* UDP */
		EXPECT_EQ(0, memcmp(g + 32, src->dev.gid.raw + 12, 4));
		EXPECT_EQ(0, memcmp(g + 36, dst->dev.gid.raw + 12, 4));
		return;
	}
	EXPECT_EQ(6, g[0] >> 4);
	/* Next header: UDP (RoCE v2 over IPv6) or the BTH (RoCE v1). */
	EXPECT_EQ(src->dev.gid_type == IBV_GID_TYPE_ROCE_V2 ? 17 : 0x1b, g[6]);
	EXPECT_EQ(64, g[7]);
	EXPECT_EQ(0, memcmp(g + 8, src->dev.gid.raw, 16));
	EXPECT_EQ(0, memcmp(g + 24, dst->dev.gid.raw, 16));
}

FIXTURE(ud) {
	struct side a;
	struct side b;
};

FIXTURE_SETUP(ud)
{
	if (pair_open(_metadata, &self->a, &self->b, IBV_QPT_UD))
		return;
	ASSERT_EQ(0, vroce_ud_connect(self->a.qp, QKEY, UD_PSN))
		TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, vroce_ud_connect(self->b.qp, QKEY, UD_PSN))
		TH_LOG("%s", strerror(errno));
	self->a.ah = make_ah(&self->a, &self->b);
	ASSERT_NE(NULL, self->a.ah) TH_LOG("create_ah: %s", strerror(errno));
}

FIXTURE_TEARDOWN(ud)
{
	side_close(&self->a);
	side_close(&self->b);
}

/* Send @len bytes of @seed from a; b receives them byte-exact after the GRH. */
static void ud_xfer(struct __test_metadata *_metadata, struct side *a,
		    struct side *b, uint32_t len, uint32_t seed, int imm)
{
	uint8_t *r = b->dev.buf + RECV_OFF;
	uint32_t rlen = GRH_BYTES + a->mtu;
	struct ibv_wc wc;

	fill(a->dev.buf, len, seed);
	memset(r, 0xa5, rlen + GUARD);
	post_recv(_metadata, b, seed, RECV_OFF, rlen);
	ASSERT_EQ(0, ud_send(a, b, seed, len, QKEY,
			     imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, seed));
	ASSERT_WC(a->scq, NULL, seed, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	ASSERT_WC(b->rcq, NULL, seed, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(GRH_BYTES + len, wc.byte_len);
	EXPECT_EQ(a->qp->qp_num, wc.src_qp);
	EXPECT_EQ(b->qp->qp_num, wc.qp_num);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
	EXPECT_EQ(!!imm, !!(wc.wc_flags & IBV_WC_WITH_IMM));
	if (imm)
		EXPECT_EQ(seed, ntohl(wc.imm_data));
	check_grh(_metadata, r, a, b);
	EXPECT_EQ(-1, mismatch(r + GRH_BYTES, len, seed))
		TH_LOG("%u bytes: first bad byte at %ld", len,
		       mismatch(r + GRH_BYTES, len, seed));
	/* Nothing past the datagram was written. */
	EXPECT_EQ(0xa5, r[GRH_BYTES + len]);
	EXPECT_EQ(0xa5, r[rlen + GUARD - 1]);
}

TEST_F_TIMEOUT(ud, sizes, TEST_TIMEOUT_S)
{
	uint32_t m = self->a.mtu, sizes[] = {
		0, 1, 2, 3, 4, 5, 7, 63, 64, 255, 256, 1000, 1023, 1024,
		m / 2 + 1, m - 4, m - 1, m,
	};
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (sizes[i] <= m)
			ud_xfer(_metadata, &self->a, &self->b, sizes[i], i + 1, 0);
}

TEST_F_TIMEOUT(ud, send_imm, TEST_TIMEOUT_S)
{
	ud_xfer(_metadata, &self->a, &self->b, 0, 0xabc, 1);
	ud_xfer(_metadata, &self->a, &self->b, 333, 0xabd, 1);
}

/* Several datagrams in flight, received in order. */
TEST_F_TIMEOUT(ud, burst, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	uint32_t rlen = GRH_BYTES + a->mtu, i, n = DEPTH / 2;
	struct ibv_wc wc;

	fill(a->dev.buf, a->mtu, 77);
	for (i = 0; i < n; i++)
		post_recv(_metadata, b, i, RECV_OFF + i * rlen, rlen);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, ud_send(a, b, i, a->mtu - i, QKEY, IBV_WR_SEND, 0));
	for (i = 0; i < n; i++)
		ASSERT_WC(a->scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_SEND,
			  NULL);
	for (i = 0; i < n; i++) {
		ASSERT_WC(b->rcq, NULL, i, IBV_WC_SUCCESS, IBV_WC_RECV,
			  &wc);
		EXPECT_EQ(GRH_BYTES + a->mtu - i, wc.byte_len);
		EXPECT_EQ(-1, mismatch(b->dev.buf + RECV_OFF + i * rlen + GRH_BYTES,
				       a->mtu - i, 77));
	}
}

/* A datagram larger than the MTU completes in error; nothing arrives. */
TEST_F_TIMEOUT(ud, too_big, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;

	post_recv(_metadata, b, 1, RECV_OFF, GRH_BYTES + 2 * a->mtu);
	ASSERT_EQ(0, ud_send(a, b, 1, a->mtu + 1, QKEY, IBV_WR_SEND, 0));
	ASSERT_WC(a->scq, NULL, 1, IBV_WC_LOC_LEN_ERR, 0, NULL);
}

/* A wrong Q_Key is dropped: the next good datagram takes the WQE. */
TEST_F_TIMEOUT(ud, qkey_mismatch, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_wc wc;

	fill(a->dev.buf, 100, 5);
	post_recv(_metadata, b, 9, RECV_OFF, GRH_BYTES + a->mtu);
	ASSERT_EQ(0, ud_send(a, b, 1, 50, QKEY_OTHER, IBV_WR_SEND, 0));
	ASSERT_WC(a->scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	ASSERT_EQ(0, ud_send(a, b, 2, 100, QKEY, IBV_WR_SEND, 0));
	ASSERT_WC(a->scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	ASSERT_WC(b->rcq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(GRH_BYTES + 100, wc.byte_len);
}

/*
 * IBTA privileged Q_Key rule: a WR Q_Key with the high bit set means "the
 * sending QP's Q_Key". a's QP has QKEY_OTHER: a privileged WR Q_Key sends
 * QKEY_OTHER (dropped by b), the same from a QP with QKEY arrives.
 */
TEST_F_TIMEOUT(ud, privileged_qkey, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_qp_attr attr = { .qkey = QKEY_OTHER };
	struct ibv_wc wc;

	fill(a->dev.buf, 64, 6);
	post_recv(_metadata, b, 9, RECV_OFF, GRH_BYTES + a->mtu);
	ASSERT_EQ(0, ibv_modify_qp(a->qp, &attr, IBV_QP_QKEY));
	ASSERT_EQ(0, ud_send(a, b, 1, 10, PRIV_BIT | QKEY, IBV_WR_SEND, 0));
	ASSERT_WC(a->scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	attr.qkey = QKEY;
	ASSERT_EQ(0, ibv_modify_qp(a->qp, &attr, IBV_QP_QKEY));
	ASSERT_EQ(0, ud_send(a, b, 2, 20, PRIV_BIT | QKEY_OTHER, IBV_WR_SEND,
			     0));
	ASSERT_WC(a->scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	ASSERT_WC(b->rcq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(GRH_BYTES + 20, wc.byte_len);
}

/* No receive WQE: the datagram is dropped, the next one is received. */
TEST_F_TIMEOUT(ud, no_recv_dropped, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	long long old = vroce_hw_counter(b->name, "out_of_buffer");
	struct ibv_wc wc;

	fill(a->dev.buf, 64, 8);
	ASSERT_EQ(0, ud_send(a, b, 1, 30, QKEY, IBV_WR_SEND, 0));
	ASSERT_WC(a->scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	/* Until the receiver dropped it, a new WQE could take it. */
	wait_counter(b->name, "out_of_buffer", old);
	if (old >= 0)
		EXPECT_LT(old, vroce_hw_counter(b->name, "out_of_buffer"));
	post_recv(_metadata, b, 9, RECV_OFF, GRH_BYTES + a->mtu);
	ASSERT_EQ(0, ud_send(a, b, 2, 40, QKEY, IBV_WR_SEND, 0));
	ASSERT_WC(a->scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	ASSERT_WC(b->rcq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(GRH_BYTES + 40, wc.byte_len);
}

/* A receive buffer too short for the datagram: dropped, the WQE stays. */
TEST_F_TIMEOUT(ud, recv_too_short, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_wc wc;

	fill(a->dev.buf, 200, 9);
	post_recv(_metadata, b, 9, RECV_OFF, GRH_BYTES + 100);
	ASSERT_EQ(0, ud_send(a, b, 1, 101, QKEY, IBV_WR_SEND, 0));
	ASSERT_WC(a->scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	ASSERT_EQ(0, ud_send(a, b, 2, 100, QKEY, IBV_WR_SEND, 0));
	ASSERT_WC(a->scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	ASSERT_WC(b->rcq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(GRH_BYTES + 100, wc.byte_len);
	EXPECT_EQ(-1, mismatch(b->dev.buf + RECV_OFF + GRH_BYTES, 100, 9));
}

/* AH creation errors come back with the right errno; query_ah works. */
TEST_F_TIMEOUT(ud, ah_errors, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_port_attr pattr;
	struct ibv_ah_attr attr = {
		.is_global = 1, .port_num = 2,
		.grh = { .dgid = b->dev.gid, .sgid_index = a->dev.gid_idx,
			 .hop_limit = 64 },
	};
	struct ibv_ah *ah;

	ah = ibv_create_ah(a->dev.pd, &attr);
	EXPECT_EQ(NULL, ah);
	EXPECT_EQ(EINVAL, errno);
	attr.port_num = 1;
	ASSERT_EQ(0, ibv_query_port(a->dev.ctx, 1, &pattr));
	attr.grh.sgid_index = pattr.gid_tbl_len;
	ah = ibv_create_ah(a->dev.pd, &attr);
	EXPECT_EQ(NULL, ah);
	EXPECT_EQ(EINVAL, errno);
	/* RoCE needs a GRH. */
	attr.grh.sgid_index = a->dev.gid_idx;
	attr.is_global = 0;
	ah = ibv_create_ah(a->dev.pd, &attr);
	EXPECT_EQ(NULL, ah);
	/* Many AHs, each usable, then destroyed. */
	attr.is_global = 1;
	for (int i = 0; i < 8; i++) {
		ah = ibv_create_ah(a->dev.pd, &attr);
		ASSERT_NE(NULL, ah) TH_LOG("%s", strerror(errno));
		EXPECT_EQ(0, ibv_destroy_ah(ah));
	}
}

/*
 * Multicast: receivers rx[0] and rx[1] on the peer's device (over the veth
 * in ud.sh) and rx[2] on the sender's (the device's own loopback).
 */
#define MCAST_QPN	0xffffffu
#define MCAST_RX	3
#define MCAST_RX_OFF	(64 * 1024)

struct mrx {
	struct side *s;		/* its device's PD, MR and buffer */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint32_t off;		/* its receive buffer in s->dev.buf */
	int attached;
};

FIXTURE(mcast) {
	struct side a;
	struct side b;
	struct ibv_ah *mah;	/* a's AH to the group */
	union ibv_gid mgid;
	struct mrx rx[MCAST_RX];
};

/* The verbs return an errno, or -1 and set errno (older providers). */
static int verr(int rc)
{
	return rc < 0 ? errno : rc;
}

/*
 * A group of the sender's address family: ::ffff:239.1.2.<n> for RoCE v2
 * over IPv4, ff0e::1234:56<n> otherwise.
 */
static void mcast_gid(const struct side *s, uint8_t n, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	if (s->dev.gid_type == IBV_GID_TYPE_ROCE_V2 &&
	    IN6_IS_ADDR_V4MAPPED((struct in6_addr *)s->dev.gid.raw)) {
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		g->raw[12] = 239;
		g->raw[13] = 1;
		g->raw[14] = 2;
		g->raw[15] = n;
		return;
	}
	g->raw[0] = 0xff;
	g->raw[1] = 0x0e;
	g->raw[13] = 0x34;
	g->raw[14] = 0x56;
	g->raw[15] = n;
}

static struct ibv_qp *ud_qp(struct side *s, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(s->dev.pd, &init);
}

FIXTURE_SETUP(mcast)
{
	struct ibv_ah_attr attr = { .is_global = 1, .port_num = 1 };
	int i;

	if (pair_open(_metadata, &self->a, &self->b, IBV_QPT_UD))
		return;
	ASSERT_EQ(0, vroce_ud_connect(self->a.qp, QKEY, UD_PSN))
		TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, vroce_ud_connect(self->b.qp, QKEY, UD_PSN))
		TH_LOG("%s", strerror(errno));
	self->a.ah = make_ah(&self->a, &self->b);
	ASSERT_NE(NULL, self->a.ah) TH_LOG("create_ah: %s", strerror(errno));
	mcast_gid(&self->a, 3, &self->mgid);
	attr.grh.dgid = self->mgid;
	attr.grh.sgid_index = self->a.dev.gid_idx;
	attr.grh.hop_limit = 64;
	self->mah = ibv_create_ah(self->a.dev.pd, &attr);
	ASSERT_NE(NULL, self->mah) TH_LOG("create_ah: %s", strerror(errno));
	for (i = 0; i < MCAST_RX; i++) {
		struct mrx *r = &self->rx[i];

		r->s = i < 2 ? &self->b : &self->a;
		r->off = RECV_OFF + i * MCAST_RX_OFF;
		r->cq = ibv_create_cq(r->s->dev.ctx, DEPTH, NULL, NULL, 0);
		ASSERT_NE(NULL, r->cq);
		r->qp = ud_qp(r->s, r->cq);
		ASSERT_NE(NULL, r->qp) TH_LOG("create_qp: %s", strerror(errno));
		ASSERT_EQ(0, vroce_ud_connect(r->qp, QKEY, UD_PSN));
	}
}

FIXTURE_TEARDOWN(mcast)
{
	int i;

	/*
	 * A QP still attached is not destroyed (EBUSY), nor then its CQ:
	 * closing the context detaches and destroys them.
	 */
	for (i = 0; i < MCAST_RX; i++) {
		if (self->rx[i].qp)
			ibv_destroy_qp(self->rx[i].qp);
		if (self->rx[i].cq)
			ibv_destroy_cq(self->rx[i].cq);
	}
	if (self->mah)
		ibv_destroy_ah(self->mah);
	side_close(&self->a);
	side_close(&self->b);
}

static void mrx_attach(struct __test_metadata *_metadata, struct mrx *r,
		       const union ibv_gid *mgid, int attach)
{
	int rc = attach ? ibv_attach_mcast(r->qp, mgid, 0) :
			  ibv_detach_mcast(r->qp, mgid, 0);

	ASSERT_EQ(0, verr(rc)) TH_LOG("%s: %s", attach ? "attach" : "detach",
				      strerror(verr(rc)));
	r->attached = attach;
}

static void mrx_post(struct __test_metadata *_metadata, struct mrx *r,
		     uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)r->s->dev.buf + r->off,
		.length = GRH_BYTES + r->s->mtu, .lkey = r->s->dev.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	memset(r->s->dev.buf + r->off, 0xa5, GRH_BYTES + r->s->mtu + GUARD);
	ASSERT_EQ(0, ibv_post_recv(r->qp, &wr, &bad));
}

/* a sends @len bytes of @seed with @qkey through @ah to @qpn. */
static void send_to(struct __test_metadata *_metadata, struct side *a,
		    struct ibv_ah *ah, uint32_t qpn, uint32_t len,
		    uint32_t seed, uint32_t qkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)a->dev.buf, .length = len, .lkey = a->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = seed, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	fill(a->dev.buf, len, seed);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	ASSERT_EQ(0, ibv_post_send(a->qp, &wr, &bad));
	ASSERT_WC(a->scq, NULL, seed, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
}

/* @r's next completion is @wr_id: @len bytes of @seed to @dgid from a. */
static void mrx_expect(struct __test_metadata *_metadata, struct mrx *r,
		       struct side *a, uint64_t wr_id, uint32_t len,
		       uint32_t seed, const union ibv_gid *dgid)
{
	const uint8_t *g = r->s->dev.buf + r->off;
	struct ibv_wc wc;

	ASSERT_WC(r->cq, NULL, wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(GRH_BYTES + len, wc.byte_len);
	EXPECT_EQ(a->qp->qp_num, wc.src_qp);
	EXPECT_EQ(r->qp->qp_num, wc.qp_num);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
	/* The destination address in the GRH area is the group's. */
	if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)dgid->raw) &&
	    a->dev.gid_type == IBV_GID_TYPE_ROCE_V2) {
		EXPECT_EQ(0, memcmp(g + 36, dgid->raw + 12, 4));
	} else {
		EXPECT_EQ(0, memcmp(g + 24, dgid->raw, 16));
	}
	EXPECT_EQ(-1, mismatch(g + GRH_BYTES, len, seed))
		TH_LOG("rx qp %u: first bad byte at %ld", r->qp->qp_num,
		       mismatch(g + GRH_BYTES, len, seed));
	EXPECT_EQ(0xa5, g[GRH_BYTES + len]);
}

/* Every attached receiver gets one datagram of @len bytes of @seed. */
static void mcast_round(struct __test_metadata *_metadata,
			FIXTURE_DATA(mcast) *self, uint32_t len, uint32_t seed)
{
	int i;

	for (i = 0; i < MCAST_RX; i++)
		mrx_post(_metadata, &self->rx[i], seed);
	send_to(_metadata, &self->a, self->mah, MCAST_QPN, len, seed, QKEY);
	for (i = 0; i < MCAST_RX; i++)
		if (self->rx[i].attached)
			mrx_expect(_metadata, &self->rx[i], &self->a, seed, len,
				   seed, &self->mgid);
}

/*
 * Delivery to every attached QP, byte for byte; detach stops it (the
 * detached QP's receive WQE takes the next datagram sent to it directly),
 * re-attach restarts it; each QP applies its own Q_Key.
 */
TEST_F_TIMEOUT(mcast, deliver, TEST_TIMEOUT_S)
{
	struct side *a = &self->a;
	struct mrx *rx = self->rx;
	int i;

	for (i = 0; i < MCAST_RX; i++)
		mrx_attach(_metadata, &rx[i], &self->mgid, 1);
	mcast_round(_metadata, self, a->mtu, 1);
	mcast_round(_metadata, self, 1, 2);

	/* rx[1] detached: its WQE (wr_id 3) stays for the unicast one. */
	mrx_attach(_metadata, &rx[1], &self->mgid, 0);
	mcast_round(_metadata, self, 200, 3);
	send_to(_metadata, a, a->ah, rx[1].qp->qp_num, 77, 4, QKEY);
	mrx_expect(_metadata, &rx[1], a, 3, 77, 4, &self->b.dev.gid);

	mrx_attach(_metadata, &rx[1], &self->mgid, 1);
	mcast_round(_metadata, self, 300, 5);

	/* rx[0]'s Q_Key differs: only the datagram with its Q_Key arrives. */
	{
		struct ibv_qp_attr attr = { .qkey = QKEY_OTHER };

		ASSERT_EQ(0, ibv_modify_qp(rx[0].qp, &attr, IBV_QP_QKEY));
	}
	mrx_post(_metadata, &rx[0], 6);
	send_to(_metadata, a, self->mah, MCAST_QPN, 60, 6, QKEY);
	send_to(_metadata, a, self->mah, MCAST_QPN, 70, 7, QKEY_OTHER);
	mrx_expect(_metadata, &rx[0], a, 6, 70, 7, &self->mgid);
}

/* @qp posts an unsignaled datagram of 64 bytes through @ah to the group. */
static int post_to_group(FIXTURE_DATA(mcast) *self, struct ibv_qp *qp,
			 struct ibv_ah *ah, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->a.dev.buf, .length = 64,
		.lkey = self->a.dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
	}, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = MCAST_QPN;
	wr.wr.ud.remote_qkey = QKEY;
	return ibv_post_send(qp, &wr, &bad);
}

#define POSTED_ROUNDS	32
#define POSTED_SENDS	4

/* Modifies a QP's Q_Key over and over until told to stop. */
struct busy_modify {
	struct ibv_qp *qp;
	int stop;
};

static void *busy_modify(void *arg)
{
	struct busy_modify *b = arg;
	struct ibv_qp_attr attr = { .qkey = QKEY };

	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE))
		ibv_modify_qp(b->qp, &attr, IBV_QP_QKEY);
	return NULL;
}

/* One round of mcast.posted_then_destroyed: a new QP and AH. */
static void posted_round(struct __test_metadata *_metadata,
			 FIXTURE_DATA(mcast) *self, struct mrx **rx, int nrx,
			 int round)
{
	struct ibv_ah_attr attr = { .is_global = 1, .port_num = 1 };
	struct side *a = &self->a;
	struct busy_modify busy;
	struct ibv_ah *ah;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	pthread_t thread;
	struct ibv_wc wc;
	int i, j;

	attr.grh.dgid = self->mgid;
	attr.grh.sgid_index = a->dev.gid_idx;
	attr.grh.hop_limit = 64;
	cq = ibv_create_cq(a->dev.ctx, POSTED_SENDS, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	qp = ud_qp(a, cq);
	ASSERT_NE(NULL, qp) TH_LOG("create_qp: %s", strerror(errno));
	ASSERT_EQ(0, vroce_ud_connect(qp, QKEY, UD_PSN));
	ah = ibv_create_ah(a->dev.pd, &attr);
	ASSERT_NE(NULL, ah) TH_LOG("create_ah: %s", strerror(errno));
	for (i = 0; i < POSTED_SENDS; i++)
		for (j = 0; j < nrx; j++)
			mrx_post(_metadata, rx[j], i);
	busy.qp = qp;
	busy.stop = 0;
	ASSERT_EQ(0, pthread_create(&thread, NULL, busy_modify, &busy));
	for (i = 0; i < POSTED_SENDS; i++)
		EXPECT_EQ(0, post_to_group(self, qp, ah, i));
	EXPECT_EQ(0, ibv_destroy_ah(ah));
	__atomic_store_n(&busy.stop, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, pthread_join(thread, NULL));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	for (i = 0; i < POSTED_SENDS; i++) {
		for (j = 0; j < nrx; j++) {
			ASSERT_EQ(1, vroce_poll_one(rx[j]->cq, &wc,
						    POLL_TIMEOUT_S))
				TH_LOG("round %d: datagram %d of %d lost (rx %d)",
				       round, i + 1, POSTED_SENDS, j);
			EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
			EXPECT_EQ(i, wc.wr_id);
		}
	}
}

/*
 * Datagrams a QP posted arrive even though its consumer destroys their
 * AH, then the QP, as soon as the posts return, without a completion to
 * wait for (rdma-core's mckey does): on the sender's device (rx[2]) and
 * the peer's (rx[0]). Meanwhile another thread modifies the QP, so a post
 * often finds the QP's task busy.
 */
TEST_F_TIMEOUT(mcast, posted_then_destroyed, TEST_TIMEOUT_S)
{
	struct mrx *rx[] = { &self->rx[2], &self->rx[0] };
	int round, j;

	for (j = 0; j < 2; j++)
		mrx_attach(_metadata, rx[j], &self->mgid, 1);
	for (round = 0; round < POSTED_ROUNDS; round++)
		posted_round(_metadata, self, rx, 2, round);
}

/* A group without QPs on a device: the datagram is counted and dropped. */
TEST_F_TIMEOUT(mcast, no_member, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	long long old = vroce_hw_counter(b->name, "rcvd_no_qp");

	/*
	 * Over RoCE v2 the host IP stack drops datagrams of a group the
	 * interface has not joined, before vroce sees them.
	 */
	if (a->dev.gid_type != IBV_GID_TYPE_ROCE_V1)
		SKIP(return, "RoCE v2: dropped by the IP stack, not counted");
	mrx_attach(_metadata, &self->rx[0], &self->mgid, 1);
	mrx_attach(_metadata, &self->rx[0], &self->mgid, 0);
	send_to(_metadata, a, self->mah, MCAST_QPN, 10, 1, QKEY);
	wait_counter(b->name, "rcvd_no_qp", old);
	if (old >= 0)
		EXPECT_LT(old, vroce_hw_counter(b->name, "rcvd_no_qp"));
}

/*
 * The errors of attach and detach; the per-group limit; an attached QP
 * cannot be destroyed, and closing its context detaches it.
 */
TEST_F_TIMEOUT(mcast, errors, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_qp_init_attr init = {
		.send_cq = b->scq, .recv_cq = b->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qps[256], *qp = self->rx[0].qp;
	struct ibv_device_attr dattr;
	union ibv_gid g2;
	int i, n;

	ASSERT_EQ(0, ibv_query_device(b->dev.ctx, &dattr));
	EXPECT_LT(0, dattr.max_mcast_grp);
	EXPECT_LT(0, dattr.max_mcast_qp_attach);
	EXPECT_LE(dattr.max_mcast_qp_attach, dattr.max_total_mcast_qp_attach);

	/* Not a multicast GID. */
	EXPECT_EQ(EINVAL, verr(ibv_attach_mcast(qp, &a->dev.gid, 0)));
	/* Not attached. */
	EXPECT_EQ(EINVAL, verr(ibv_detach_mcast(qp, &self->mgid, 0)));
	/* Twice is once; one detach undoes it. */
	EXPECT_EQ(0, verr(ibv_attach_mcast(qp, &self->mgid, 0)));
	EXPECT_EQ(0, verr(ibv_attach_mcast(qp, &self->mgid, 0)));
	EXPECT_EQ(0, verr(ibv_detach_mcast(qp, &self->mgid, 0)));
	EXPECT_EQ(EINVAL, verr(ibv_detach_mcast(qp, &self->mgid, 0)));
	/* Not a UD QP. */
	qps[0] = ibv_create_qp(b->dev.pd, &init);
	ASSERT_NE(NULL, qps[0]) TH_LOG("create_qp: %s", strerror(errno));
	EXPECT_EQ(EINVAL, verr(ibv_attach_mcast(qps[0], &self->mgid, 0)));
	EXPECT_EQ(0, ibv_destroy_qp(qps[0]));

	/* max_mcast_qp_attach QPs in one group, and no more. */
	n = dattr.max_mcast_qp_attach;
	if (n + 1 > (int)(sizeof(qps) / sizeof(qps[0])))
		SKIP(return, "max_mcast_qp_attach %d: too many QPs", n);
	mcast_gid(a, 4, &g2);
	for (i = 0; i <= n; i++) {
		qps[i] = ud_qp(b, b->rcq);
		ASSERT_NE(NULL, qps[i]) TH_LOG("create_qp: %s", strerror(errno));
		EXPECT_EQ(i < n ? 0 : ENOMEM,
			  verr(ibv_attach_mcast(qps[i], &g2, 0)))
			TH_LOG("QP %d of %d", i + 1, n + 1);
	}
	/*
	 * ib_core refuses to destroy an attached QP; detached, it goes. The
	 * last 4 stay attached: closing the context detaches them (teardown).
	 */
	for (i = 0; i <= n; i++) {
		if (i >= n - 4 && i < n)
			continue;
		EXPECT_EQ(i < n ? EBUSY : 0, verr(ibv_destroy_qp(qps[i])));
		if (i == n)
			break;
		EXPECT_EQ(0, verr(ibv_detach_mcast(qps[i], &g2, 0)));
		EXPECT_EQ(0, verr(ibv_destroy_qp(qps[i])));
	}
	/* Usable again, and delivery works after all that. */
	for (i = 0; i < MCAST_RX; i++)
		mrx_attach(_metadata, &self->rx[i], &self->mgid, 1);
	mcast_round(_metadata, self, 100, 9);
}

FIXTURE(uc) {
	struct side a;
	struct side b;
};

FIXTURE_SETUP(uc)
{
	struct vroce_rc_path pa, pb;

	if (pair_open(_metadata, &self->a, &self->b, IBV_QPT_UC))
		return;
	pa = uc_path(&self->a, &self->b, UC_PSN_A, UC_PSN_B);
	pb = uc_path(&self->b, &self->a, UC_PSN_B, UC_PSN_A);
	ASSERT_EQ(0, vroce_uc_connect(self->a.qp, &pa));
	ASSERT_EQ(0, vroce_uc_connect(self->b.qp, &pb));
}

FIXTURE_TEARDOWN(uc)
{
	side_close(&self->a);
	side_close(&self->b);
}

static void uc_xfer(struct __test_metadata *_metadata, struct side *a,
		    struct side *b, enum ibv_wr_opcode op, uint32_t len,
		    uint32_t seed)
{
	uint8_t *r = b->dev.buf + RECV_OFF + 8;	/* unaligned */
	struct ibv_sge sge = {
		.addr = (uintptr_t)a->dev.buf + 3, .length = len,
		.lkey = a->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = seed, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(seed),
	}, *bad;
	int recv = op != IBV_WR_RDMA_WRITE;
	struct ibv_wc wc;

	fill(a->dev.buf + 3, len, seed);
	memset(r - GUARD, 0xa5, len + 2 * GUARD);
	if (recv)
		post_recv(_metadata, b, seed, RECV_OFF + 8, len + 1);
	wr.wr.rdma.remote_addr = (uintptr_t)r;
	wr.wr.rdma.rkey = b->dev.mr->rkey;
	ASSERT_EQ(0, ibv_post_send(a->qp, &wr, &bad));
	ASSERT_WC(a->scq, NULL, seed, IBV_WC_SUCCESS,
		  op == IBV_WR_SEND ? IBV_WC_SEND : IBV_WC_RDMA_WRITE, NULL);
	if (recv) {
		ASSERT_WC(b->rcq, NULL, seed, IBV_WC_SUCCESS,
			  op == IBV_WR_SEND ? IBV_WC_RECV :
			  IBV_WC_RECV_RDMA_WITH_IMM, &wc);
		EXPECT_EQ(len, wc.byte_len);
		EXPECT_EQ(a->qp->qp_num, wc.src_qp);
		if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
			EXPECT_EQ(seed, ntohl(wc.imm_data));
	} else {
		/* No completion at b: wait for the last byte to land. */
		double end = vroce_now_s() + POLL_TIMEOUT_S;

		while (len && mismatch(r, len, seed) >= 0 && vroce_now_s() < end)
			usleep(1000);
	}
	EXPECT_EQ(-1, mismatch(r, len, seed))
		TH_LOG("%u bytes: first bad byte at %ld", len,
		       mismatch(r, len, seed));
	EXPECT_EQ(0xa5, r[-1]);
	EXPECT_EQ(0xa5, r[len]);
}

static void uc_sizes(struct __test_metadata *_metadata, struct side *a,
		     struct side *b, enum ibv_wr_opcode op)
{
	uint32_t m = a->mtu < b->mtu ? a->mtu : b->mtu;
	uint32_t sizes[] = { 0, 1, 13, m - 1, m, m + 1, 2 * m, 3 * m + 7,
			     65536 + 5 };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		uc_xfer(_metadata, a, b, op, sizes[i], 100 + i);
}

TEST_F_TIMEOUT(uc, send, TEST_TIMEOUT_S)
{
	uc_sizes(_metadata, &self->a, &self->b, IBV_WR_SEND);
}

TEST_F_TIMEOUT(uc, write, TEST_TIMEOUT_S)
{
	uc_sizes(_metadata, &self->a, &self->b, IBV_WR_RDMA_WRITE);
}

TEST_F_TIMEOUT(uc, write_imm, TEST_TIMEOUT_S)
{
	uc_sizes(_metadata, &self->a, &self->b, IBV_WR_RDMA_WRITE_WITH_IMM);
}

/* READ is not a UC operation: refused at post or completed in error. */
TEST_F_TIMEOUT(uc, read_refused, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_sge sge = {
		.addr = (uintptr_t)a->dev.buf, .length = 8, .lkey = a->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = (uintptr_t)b->dev.buf;
	wr.wr.rdma.rkey = b->dev.mr->rkey;
	if (ibv_post_send(a->qp, &wr, &bad))
		return;
	ASSERT_EQ(1, vroce_poll_one(a->scq, &wc, POLL_TIMEOUT_S));
	EXPECT_NE(IBV_WC_SUCCESS, wc.status);
}

TEST_HARNESS_MAIN
