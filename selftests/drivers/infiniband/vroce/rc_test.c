// SPDX-License-Identifier: GPL-2.0
/*
 * The RC data path through libibverbs: every opcode with data checked byte
 * for byte (odd sizes across MTU boundaries, unaligned offsets, multi-SGE,
 * inline), atomics' returned values, many WRs in flight, mixed post lists,
 * and the error completions users rely on (REM_ACCESS_ERR, RNR_RETRY_EXC_ERR,
 * RETRY_EXC_ERR, LOC_LEN_ERR / REM_INV_REQ_ERR, flushes). Run by rc.sh:
 *   VROCE_DEV, VROCE_PEER_DEV  the requester's and the responder's device
 *                              (the same name for a single-device loopback)
 *   VROCE_GID, VROCE_PEER_GID  their GID indices; if unset, the first RoCE
 *                              v2 GID of VROCE_GID_FAMILY (4 or 6, default 4)
 *   VROCE_RC_QUICK             if set, fewer offset combinations per size
 * Nothing here depends on the provider: it passes on rdma_rxe too, but for
 * two cases. recv_too_short: rdma_rxe (6.12) completes with LOC_QP_OP_ERR
 * and REM_OP_ERR where IBTA asks for LOC_LEN_ERR and REM_INV_REQ_ERR.
 * reads_then_bad_lkey_write: rdma_rxe (6.12) flushed the last READ, then
 * completed the failing WRITE as flushed too, so nothing tells the
 * application why the QP failed; here the failing WQE completes with its
 * own status (LOC_PROT_ERR), in order.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"
#include "vroce_ring.h"

/* A hang guard on every wait for a completion, not a timing assertion. */
#define POLL_TIMEOUT_S	60
/* The harness's per-test alarm; the debug kernel under load is slow. */
#define TEST_TIMEOUT_S	600
#define BUF_SIZE	(4u << 20)
#define QP_DEPTH	256
#define CQ_DEPTH	1024
#define MAX_SGE		8
#define WANT_INLINE	64
/* Bytes checked on each side of every destination range. */
#define GUARD		16
/* The requester's first PSN: 1 MiB at MTU 1024 wraps the 24-bit PSN. */
#define A_PSN		0xfffff0
#define B_PSN		0x123456

struct side {
	struct vroce_dev dev;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_qp *qp;
	struct ibv_device_attr attr;
	uint32_t max_inline;
};

/* The QP attributes the error tests change. */
struct conn {
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint32_t dest_qpn;	/* 0: the peer's QP */
};

static const struct conn conn_default = {
	.timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 12,
};

/* A scatter/gather element as an offset into a side's buffer. */
struct seg {
	uint32_t off;
	uint32_t len;
};

/* The requester is side a (VROCE_DEV), the responder side b. */
#define RC_FIXTURE_DATA	\
	struct side a;	\
	struct side b

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	uint32_t x = i * 0x9e3779b1u ^ (seed + 1) * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x;
}

#define POISON(seed)	((seed) ^ 0xdeadbeefu)

static void fill(uint8_t *p, uint32_t len, uint32_t seed, uint32_t start)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(seed, start + i);
}

static const char *wc_str(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

/* No further completion is queued on @cq. */
static void expect_cq_empty(struct __test_metadata *_metadata,
			    struct ibv_cq *cq)
{
	struct ibv_wc wc;

	EXPECT_EQ(0, ibv_poll_cq(cq, 1, &wc))
		TH_LOG("extra completion wr_id %llu status %s",
		       (unsigned long long)wc.wr_id, wc_str(wc.status));
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return (enum ibv_qp_state)-1;
	return attr.qp_state;
}

/*
 * The QP is in ERR after an error completion. rdma_rxe moves it there just
 * after queueing that completion, so wait (bounded) rather than query once.
 */
static void expect_qp_err(struct __test_metadata *_metadata, struct ibv_qp *qp)
{
	double end = vroce_now_s() + POLL_TIMEOUT_S;

	while (qp_state(qp) != IBV_QPS_ERR && vroce_now_s() < end)
		usleep(1000);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(qp));
}

static void side_open(struct __test_metadata *_metadata, struct side *s,
		      const char *dev, const char *gid_var)
{
	struct ibv_qp_init_attr init = {};

	ASSERT_EQ(0, vroce_dev_open(&s->dev, dev, gid_var));
	ASSERT_EQ(IBV_PORT_ACTIVE, s->dev.state);
	ASSERT_EQ(0, ibv_query_device(s->dev.ctx, &s->attr));
	ASSERT_EQ(0, vroce_dev_buf(&s->dev, dev, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC));
	s->scq = ibv_create_cq(s->dev.ctx, CQ_DEPTH, NULL, NULL, 0);
	ASSERT_NE(NULL, s->scq);
	s->rcq = ibv_create_cq(s->dev.ctx, CQ_DEPTH, NULL, NULL, 0);
	ASSERT_NE(NULL, s->rcq);
	init.send_cq = s->scq;
	init.recv_cq = s->rcq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = QP_DEPTH;
	init.cap.max_recv_wr = QP_DEPTH;
	init.cap.max_send_sge = MAX_SGE;
	init.cap.max_recv_sge = MAX_SGE;
	init.cap.max_inline_data = WANT_INLINE;
	s->qp = ibv_create_qp(s->dev.pd, &init);
	ASSERT_NE(NULL, s->qp) TH_LOG("create_qp: %s", strerror(errno));
	s->max_inline = init.cap.max_inline_data;
	ASSERT_LE(WANT_INLINE, s->max_inline);
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->rcq)
		ibv_destroy_cq(s->rcq);
	if (s->scq)
		ibv_destroy_cq(s->scq);
	vroce_dev_close(&s->dev);
	memset(s, 0, sizeof(*s));
}

/* 0 with both sides open; 1 if the test is skipped. */
static int pair_open(struct __test_metadata *_metadata, struct side *a,
		     struct side *b)
{
	const char *dev = getenv("VROCE_DEV");
	const char *peer = getenv("VROCE_PEER_DEV");

	if (!dev || !*dev)
		SKIP(return 1, "VROCE_DEV not set (run rc.sh)");
	if (!peer || !*peer)
		peer = dev;
	side_open(_metadata, a, dev, "VROCE_GID");
	side_open(_metadata, b, peer, "VROCE_PEER_GID");
	return 0;
}

static uint32_t min_u32(uint32_t x, uint32_t y)
{
	return x < y ? x : y;
}

/* RESET -> INIT -> RTR -> RTS for @s towards @peer. */
static int qp_connect(struct side *s, struct side *peer, uint32_t sq_psn,
		      uint32_t rq_psn, const struct conn *c)
{
	struct vroce_rc_path p = {
		VROCE_RC_DEFAULTS,
		.dest_qpn = c->dest_qpn ? c->dest_qpn : peer->qp->qp_num,
		.dgid = peer->dev.gid,
		.sgid_idx = s->dev.gid_idx,
		.mtu = s->dev.mtu < peer->dev.mtu ? s->dev.mtu : peer->dev.mtu,
		.sq_psn = sq_psn,
		.rq_psn = rq_psn,
		.rd_atomic = min_u32(16, s->attr.max_qp_init_rd_atom),
		.dest_rd_atomic = min_u32(16, s->attr.max_qp_rd_atom),
		.min_rnr_timer = c->min_rnr_timer,
		.timeout = c->timeout,
		.retry_cnt = c->retry_cnt,
		.rnr_retry = c->rnr_retry,
	};

	return vroce_rc_connect(s->qp, &p);
}

static void pair_connect(struct __test_metadata *_metadata, struct side *a,
			 struct side *b, const struct conn *c)
{
	ASSERT_EQ(0, qp_connect(a, b, A_PSN, B_PSN, c)) TH_LOG("%s", strerror(errno));
	if (b->qp) {
		ASSERT_EQ(0, qp_connect(b, a, B_PSN, A_PSN, c))
			TH_LOG("%s", strerror(errno));
	}
}

enum op { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ };

static const struct {
	enum ibv_wr_opcode wr;
	enum ibv_wc_opcode swc;	/* the requester's completion */
	enum ibv_wc_opcode rwc;	/* the responder's, if it consumes a recv */
	int recv;		/* consumes a receive WQE */
	int imm;
	int read;		/* data flows from b to a */
	const char *name;
} ops[] = {
	[OP_SEND] = { IBV_WR_SEND, IBV_WC_SEND, IBV_WC_RECV, 1, 0, 0, "SEND" },
	[OP_SEND_IMM] = { IBV_WR_SEND_WITH_IMM, IBV_WC_SEND, IBV_WC_RECV, 1, 1,
			  0, "SEND_WITH_IMM" },
	[OP_WRITE] = { IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, 0, 0, 0, 0,
		       "RDMA_WRITE" },
	[OP_WRITE_IMM] = { IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WC_RDMA_WRITE,
			   IBV_WC_RECV_RDMA_WITH_IMM, 1, 1, 0,
			   "RDMA_WRITE_WITH_IMM" },
	[OP_READ] = { IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, 0, 0, 0, 1,
		      "RDMA_READ" },
};

static void to_sge(struct side *s, const struct seg *g, int n,
		   struct ibv_sge *sge)
{
	int i;

	for (i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)s->dev.buf + g[i].off;
		sge[i].length = g[i].len;
		sge[i].lkey = s->dev.mr->lkey;
	}
}

static uint32_t seg_total(const struct seg *g, int n)
{
	uint32_t t = 0;
	int i;

	for (i = 0; i < n; i++)
		t += g[i].len;
	return t;
}

/* Fill the source segments with one pattern stream. */
static void fill_src(uint8_t *buf, const struct seg *g, int n, uint32_t seed)
{
	uint32_t pos = 0;
	int i;

	for (i = 0; i < n; i++) {
		fill(buf + g[i].off, g[i].len, seed, pos);
		pos += g[i].len;
	}
}

/* Poison the destination segments and GUARD bytes around each. */
static void poison_dst(uint8_t *buf, const struct seg *g, int n, uint32_t seed)
{
	uint32_t lo, hi;
	int i;

	for (i = 0; i < n; i++) {
		lo = g[i].off >= GUARD ? g[i].off - GUARD : 0;
		hi = min_u32(g[i].off + g[i].len + GUARD, BUF_SIZE);
		fill(buf + lo, hi - lo, POISON(seed), lo);
	}
}

/*
 * The destination segments hold the first @total bytes of the stream, then
 * poison; the guards around them are untouched. Returns the number of
 * wrong bytes and reports the first.
 */
static size_t check_dst(struct __test_metadata *_metadata, const uint8_t *buf,
			const struct seg *g, int n, uint32_t total,
			uint32_t seed)
{
	uint32_t pos = 0, lo, hi, j;
	size_t bad = 0;
	uint8_t want;
	int i;

	for (i = 0; i < n; i++) {
		lo = g[i].off >= GUARD ? g[i].off - GUARD : 0;
		hi = min_u32(g[i].off + g[i].len + GUARD, BUF_SIZE);
		for (j = lo; j < hi; j++) {
			if (j >= g[i].off && j < g[i].off + g[i].len &&
			    pos + (j - g[i].off) < total)
				want = pattern(seed, pos + (j - g[i].off));
			else
				want = pattern(POISON(seed), j);
			if (buf[j] == want)
				continue;
			if (!bad++)
				TH_LOG("seg %d (off %u len %u): byte %u is %#x, want %#x%s",
				       i, g[i].off, g[i].len, j, buf[j], want,
				       j < g[i].off || j >= g[i].off + g[i].len ?
				       " (guard)" : "");
		}
		pos += g[i].len;
	}
	return bad;
}

struct xfer {
	enum op op;
	const struct seg *lsg;	/* the requester's SGEs */
	int nl;
	const struct seg *rsg;	/* recv SGEs, or the remote range (1) */
	int nr;
	int inl;		/* IBV_SEND_INLINE, and clobber after post */
	uint32_t seed;
};

/*
 * One signaled WR from a to b, both completions checked, then the data:
 * SEND scatters a's SGEs into b's recv SGEs, WRITE gathers a's SGEs into
 * b's range, READ scatters b's range into a's SGEs.
 */
static void run_xfer(struct __test_metadata *_metadata, struct side *a,
		     struct side *b, const struct xfer *x)
{
	struct ibv_sge lsge[MAX_SGE], rsge[MAX_SGE];
	struct ibv_send_wr swr = {}, *bad_swr;
	struct ibv_recv_wr rwr = {}, *bad_rwr;
	uint32_t total = seg_total(x->lsg, x->nl);
	uint32_t imm = 0xa5000000u | (x->seed & 0xffffff);
	int is_send = x->op == OP_SEND || x->op == OP_SEND_IMM;
	struct ibv_wc wc;
	uint8_t *src_buf, *dst_buf;
	const struct seg *src, *dst;
	int nsrc, ndst;

	if (ops[x->op].read) {
		src_buf = b->dev.buf, src = x->rsg, nsrc = x->nr;
		dst_buf = a->dev.buf, dst = x->lsg, ndst = x->nl;
	} else {
		src_buf = a->dev.buf, src = x->lsg, nsrc = x->nl;
		dst_buf = b->dev.buf, dst = x->rsg, ndst = x->nr;
	}
	if (!is_send)
		ASSERT_EQ(total, seg_total(x->rsg, x->nr));
	fill_src(src_buf, src, nsrc, x->seed);
	poison_dst(dst_buf, dst, ndst, x->seed);

	if (ops[x->op].recv) {
		to_sge(b, x->rsg, x->nr, rsge);
		rwr.wr_id = 0x1000 + x->seed;
		rwr.sg_list = rsge;
		/* WRITE_WITH_IMM consumes a recv WQE but places no data in it. */
		rwr.num_sge = is_send ? x->nr : 0;
		ASSERT_EQ(0, ibv_post_recv(b->qp, &rwr, &bad_rwr));
	}
	to_sge(a, x->lsg, x->nl, lsge);
	swr.wr_id = 0x2000 + x->seed;
	swr.sg_list = lsge;
	swr.num_sge = x->nl;
	swr.opcode = ops[x->op].wr;
	swr.send_flags = IBV_SEND_SIGNALED | (x->inl ? IBV_SEND_INLINE : 0);
	if (ops[x->op].imm)
		swr.imm_data = htonl(imm);
	if (!is_send) {
		swr.wr.rdma.remote_addr = (uintptr_t)b->dev.buf + x->rsg[0].off;
		swr.wr.rdma.rkey = b->dev.mr->rkey;
	}
	ASSERT_EQ(0, ibv_post_send(a->qp, &swr, &bad_swr)) TH_LOG("%s", strerror(errno));
	/* Inline data is copied at post time: the buffer is free again. */
	if (x->inl)
		poison_dst(a->dev.buf, x->lsg, x->nl, x->seed + 1);

	ASSERT_WC(a->scq, a->qp, swr.wr_id, IBV_WC_SUCCESS,
		  ops[x->op].swc, NULL);
	if (ops[x->op].recv) {
		ASSERT_WC(b->rcq, b->qp, rwr.wr_id, IBV_WC_SUCCESS,
			  ops[x->op].rwc, &wc);
		EXPECT_EQ(total, wc.byte_len);
		if (ops[x->op].imm) {
			EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
			EXPECT_EQ(imm, ntohl(wc.imm_data));
		} else {
			EXPECT_FALSE(wc.wc_flags & IBV_WC_WITH_IMM);
		}
	}
	EXPECT_EQ(0, check_dst(_metadata, dst_buf, dst, ndst, total, x->seed))
		TH_LOG("%s of %u bytes", ops[x->op].name, total);
	expect_cq_empty(_metadata, a->scq);
	expect_cq_empty(_metadata, b->rcq);
}

/* Data transfers: one variant per opcode. */
FIXTURE(xfer) {
	RC_FIXTURE_DATA;
};

FIXTURE_VARIANT(xfer) {
	enum op op;
};

FIXTURE_VARIANT_ADD(xfer, send) { .op = OP_SEND };
FIXTURE_VARIANT_ADD(xfer, send_imm) { .op = OP_SEND_IMM };
FIXTURE_VARIANT_ADD(xfer, write) { .op = OP_WRITE };
FIXTURE_VARIANT_ADD(xfer, write_imm) { .op = OP_WRITE_IMM };
FIXTURE_VARIANT_ADD(xfer, read) { .op = OP_READ };

FIXTURE_SETUP(xfer)
{
	if (pair_open(_metadata, &self->a, &self->b))
		return;
	pair_connect(_metadata, &self->a, &self->b, &conn_default);
}

FIXTURE_TEARDOWN(xfer)
{
	side_close(&self->a);
	side_close(&self->b);
}

/*
 * Across the path MTU (1024) and, in loopback, the 64 KiB frame: a message
 * of up to 64 KiB is one frame of several MTUs (65535: odd, no pad; 65536
 * at an unaligned offset: 17 pages), 65537 is two.
 */
static const uint32_t sizes[] = {
	0, 1, 3, 1023, 1024, 1025, 4095, 4097, 65535, 65536, 65537,
	(1u << 20) + 3,
};

/* Offsets into the requester's and the responder's buffer. */
static const struct { uint32_t l, r; } offsets[] = {
	{ 0, 0 }, { 1, 3 }, { 4093, 2049 },
};

/*
 * Every size on aligned and unaligned offsets on both sides; with
 * VROCE_RC_QUICK set (slow debug kernels), each size on one pair of
 * offsets, in turn.
 */
TEST_F_TIMEOUT(xfer, sizes, TEST_TIMEOUT_S)
{
	const char *quick = getenv("VROCE_RC_QUICK");
	unsigned int i, j;
	uint32_t seed = 1;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (j = 0; j < ARRAY_SIZE(offsets); j++) {
			if (quick && *quick && j != i % ARRAY_SIZE(offsets))
				continue;
			struct seg l = { GUARD + offsets[j].l, sizes[i] };
			/* A receive buffer longer than the message. */
			struct seg r = { GUARD + offsets[j].r,
					 sizes[i] + (variant->op <= OP_SEND_IMM ? 13 : 0) };
			struct xfer x = {
				.op = variant->op, .lsg = &l, .nl = 1,
				.rsg = &r, .nr = 1, .seed = seed++,
			};

			run_xfer(_metadata, &self->a, &self->b, &x);
			if (_metadata->exit_code)
				ASSERT_TRUE(0) TH_LOG("failed at size %u, offsets %u/%u",
						      sizes[i], offsets[j].l,
						      offsets[j].r);
		}
	}
}

/* Odd-length SGEs at odd offsets, gaps between them. */
static const struct seg sg_small_l[] = {
	{ 5, 1 }, { 2001, 1023 }, { 8003, 3001 }, { 20001, 17 }, { 30003, 4099 },
};

static const struct seg sg_small_r[] = {
	{ 77, 7 }, { 9001, 4096 }, { 16385, 2049 }, { 40007, 3000 },
};

static const struct seg sg_big_l[] = {
	{ 3, 1 }, { 1001, 65537 }, { 70001, 3 }, { 80009, 4097 }, { 90001, 1023 },
};

static const struct seg sg_big_r[] = {
	{ 101, 4097 }, { 200003, 33 }, { 300001, 67001 }, { 400007, 5 },
};

static void multi_sge(struct __test_metadata *_metadata, struct side *a,
		      struct side *b, enum op opc, const struct seg *l, int nl,
		      const struct seg *r, int nr, uint32_t seed)
{
	struct seg range = { 12345, seg_total(l, nl) };
	struct xfer x = { .op = opc, .lsg = l, .nl = nl, .seed = seed };

	if (opc <= OP_SEND_IMM) {
		x.rsg = r;
		x.nr = nr;
	} else {
		x.rsg = &range;
		x.nr = 1;
	}
	run_xfer(_metadata, a, b, &x);
}

/* Several SGEs on the requester, and on the receiver for SENDs. */
TEST_F_TIMEOUT(xfer, multi_sge, TEST_TIMEOUT_S)
{
	multi_sge(_metadata, &self->a, &self->b, variant->op, sg_small_l,
		  (int)ARRAY_SIZE(sg_small_l), sg_small_r, (int)ARRAY_SIZE(sg_small_r), 101);
	multi_sge(_metadata, &self->a, &self->b, variant->op, sg_big_l,
		  (int)ARRAY_SIZE(sg_big_l), sg_big_r, (int)ARRAY_SIZE(sg_big_r), 102);
}

/* Inline SENDs and WRITEs: data taken at post time, one or more SGEs. */
FIXTURE(inl) {
	RC_FIXTURE_DATA;
};

FIXTURE_VARIANT(inl) {
	enum op op;
};

FIXTURE_VARIANT_ADD(inl, send) { .op = OP_SEND };
FIXTURE_VARIANT_ADD(inl, send_imm) { .op = OP_SEND_IMM };
FIXTURE_VARIANT_ADD(inl, write) { .op = OP_WRITE };
FIXTURE_VARIANT_ADD(inl, write_imm) { .op = OP_WRITE_IMM };

FIXTURE_SETUP(inl)
{
	if (pair_open(_metadata, &self->a, &self->b))
		return;
	pair_connect(_metadata, &self->a, &self->b, &conn_default);
}

FIXTURE_TEARDOWN(inl)
{
	side_close(&self->a);
	side_close(&self->b);
}

TEST_F_TIMEOUT(inl, inline, TEST_TIMEOUT_S)
{
	uint32_t max = self->a.max_inline;
	uint32_t lens[] = { 0, 1, 3, max / 2 + 1, max };
	struct seg three[] = { { 3, 5 }, { 101, 1 }, { 203, max - 6 } };
	struct seg rseg[] = { { 5001, max + 7 } };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		struct seg l = { 1 + i, lens[i] };
		struct seg r = { 1001 + 2 * i, lens[i] };
		struct xfer x = {
			.op = variant->op, .lsg = &l, .nl = 1, .rsg = &r,
			.nr = 1, .inl = 1, .seed = 200 + i,
		};

		run_xfer(_metadata, &self->a, &self->b, &x);
	}
	multi_sge(_metadata, &self->a, &self->b, variant->op, three, (int)ARRAY_SIZE(three),
		  rseg, (int)ARRAY_SIZE(rseg), 300);
}

/* Everything else: atomics, queues in flight, mixed lists, errors. */
FIXTURE(rc) {
	RC_FIXTURE_DATA;
};

FIXTURE_SETUP(rc)
{
	pair_open(_metadata, &self->a, &self->b);
}

FIXTURE_TEARDOWN(rc)
{
	side_close(&self->a);
	side_close(&self->b);
}

static void post_atomic(struct __test_metadata *_metadata, struct side *a,
			struct side *b, enum ibv_wr_opcode opc, uint32_t loff,
			uint32_t roff, uint64_t cmp_add, uint64_t swap,
			uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)a->dev.buf + loff, .length = 8, .lkey = a->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = opc,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.atomic.remote_addr = (uintptr_t)b->dev.buf + roff;
	wr.wr.atomic.rkey = b->dev.mr->rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	ASSERT_EQ(0, ibv_post_send(a->qp, &wr, &bad)) TH_LOG("%s", strerror(errno));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/*
 * One atomic at remote offset @roff (8-aligned), the result into a's buffer
 * at the odd offset @loff: the original value comes back, the remote
 * memory holds @want, the 8 bytes around both are untouched.
 */
static void atomic_one(struct __test_metadata *_metadata, struct side *a,
		       struct side *b, enum ibv_wr_opcode opc, uint32_t loff,
		       uint32_t roff, uint64_t orig, uint64_t cmp_add,
		       uint64_t swap, uint64_t want)
{
	static uint64_t id = 0x3000;
	const uint64_t fence = 0x0f1e2d3c4b5a6978ull;

	put64(b->dev.buf + roff - 8, fence);
	put64(b->dev.buf + roff, orig);
	put64(b->dev.buf + roff + 8, ~fence);
	put64(a->dev.buf + loff - 8, fence);
	put64(a->dev.buf + loff, 0x1111111111111111ull);
	put64(a->dev.buf + loff + 8, ~fence);
	post_atomic(_metadata, a, b, opc, loff, roff, cmp_add, swap, ++id);
	ASSERT_WC(a->scq, a->qp, id, IBV_WC_SUCCESS,
		  opc == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP :
		  IBV_WC_FETCH_ADD, NULL);
	EXPECT_EQ(orig, get64(a->dev.buf + loff)) TH_LOG("returned value, roff %u", roff);
	EXPECT_EQ(want, get64(b->dev.buf + roff)) TH_LOG("memory, roff %u", roff);
	EXPECT_EQ(fence, get64(b->dev.buf + roff - 8));
	EXPECT_EQ(~fence, get64(b->dev.buf + roff + 8));
	EXPECT_EQ(fence, get64(a->dev.buf + loff - 8));
	EXPECT_EQ(~fence, get64(a->dev.buf + loff + 8));
}

static const uint32_t atomic_roffs[] = { 8, 4096 - 8, 65536 + 16, BUF_SIZE - 16 };

TEST_F_TIMEOUT(rc, atomic_cmp_swp, TEST_TIMEOUT_S)
{
	const uint64_t v = 0x0123456789abcdefull, s = 0xfedcba9876543210ull;
	unsigned int i;

	EXPECT_NE(IBV_ATOMIC_NONE, self->b.attr.atomic_cap);
	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	for (i = 0; i < ARRAY_SIZE(atomic_roffs); i++) {
		uint32_t r = atomic_roffs[i], l = 4001 + 32 * i;

		/* Equal: swapped. */
		atomic_one(_metadata, &self->a, &self->b,
			   IBV_WR_ATOMIC_CMP_AND_SWP, l, r, v + i, v + i, s, s);
		/* Different in the top bit only: unchanged. */
		atomic_one(_metadata, &self->a, &self->b,
			   IBV_WR_ATOMIC_CMP_AND_SWP, l, r, v + i,
			   (v + i) ^ (1ull << 63), s, v + i);
		/* Different in the low bit only: unchanged. */
		atomic_one(_metadata, &self->a, &self->b,
			   IBV_WR_ATOMIC_CMP_AND_SWP, l, r, v + i,
			   (v + i) ^ 1, s, v + i);
	}
}

TEST_F_TIMEOUT(rc, atomic_fetch_add, TEST_TIMEOUT_S)
{
	unsigned int i;

	EXPECT_NE(IBV_ATOMIC_NONE, self->b.attr.atomic_cap);
	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	for (i = 0; i < ARRAY_SIZE(atomic_roffs); i++) {
		uint32_t r = atomic_roffs[i], l = 5003 + 32 * i;

		/* A carry across the 32-bit halves. */
		atomic_one(_metadata, &self->a, &self->b,
			   IBV_WR_ATOMIC_FETCH_AND_ADD, l, r,
			   0x00000001ffffffffull, 1, 0, 0x0000000200000000ull);
		/* Wraps around 2^64. */
		atomic_one(_metadata, &self->a, &self->b,
			   IBV_WR_ATOMIC_FETCH_AND_ADD, l, r,
			   0x8000000000000005ull, 0x8000000000000000ull, 0, 5);
		atomic_one(_metadata, &self->a, &self->b,
			   IBV_WR_ATOMIC_FETCH_AND_ADD, l, r, 42,
			   0xffffffffffffffffull, 0, 41);
	}
}

/* Back-to-back fetch-adds on one word all land, each sees the previous. */
/* The ATOMIC WRITE capability bit (IB_UVERBS_DEVICE_ATOMIC_WRITE). */
#define DEVICE_ATOMIC_WRITE	(1ull << 40)

static void atomic_write_post(struct __test_metadata *_metadata,
			      struct ibv_qp_ex *qpx, struct side *b,
			      uint32_t roff, uint64_t val, uint64_t wr_id)
{
	ibv_wr_start(qpx);
	qpx->wr_id = wr_id;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, b->dev.mr->rkey, (uintptr_t)b->dev.buf + roff, &val);
	ASSERT_EQ(0, ibv_wr_complete(qpx)) TH_LOG("%s", strerror(errno));
}

/*
 * RDMA ATOMIC WRITE through ibv_qp_ex: the 8 bytes land whole at aligned
 * targets across pages, nothing around them changes, the completion says
 * ATOMIC_WRITE; a misaligned target is an invalid request.
 */
TEST_F_TIMEOUT(rc, atomic_write, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_qp_init_attr_ex init = {
		.send_cq = a->scq, .recv_cq = a->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = a->dev.pd,
		.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE,
	};
	const uint64_t fence = 0x0f1e2d3c4b5a6978ull;
	struct ibv_device_attr_ex dattr;
	struct ibv_qp_ex *qpx;
	unsigned int i;

	ASSERT_EQ(0, ibv_query_device_ex(a->dev.ctx, NULL, &dattr));
	if (!(dattr.device_cap_flags_ex & DEVICE_ATOMIC_WRITE))
		SKIP(return, "the device does not claim ATOMIC WRITE");
	ibv_destroy_qp(a->qp);
	a->qp = ibv_create_qp_ex(a->dev.ctx, &init);
	ASSERT_NE(NULL, a->qp) TH_LOG("create_qp_ex: %s", strerror(errno));
	qpx = ibv_qp_to_qp_ex(a->qp);
	ASSERT_NE(NULL, qpx);
	pair_connect(_metadata, a, b, &conn_default);

	for (i = 0; i < ARRAY_SIZE(atomic_roffs); i++) {
		uint32_t roff = atomic_roffs[i];
		uint64_t val = 0x0123456789abcdefull * (i + 1);

		put64(b->dev.buf + roff - 8, fence);
		put64(b->dev.buf + roff, ~val);
		put64(b->dev.buf + roff + 8, ~fence);
		atomic_write_post(_metadata, qpx, b, roff, val, 0x4000 + i);
		ASSERT_WC(a->scq, a->qp, 0x4000 + i, IBV_WC_SUCCESS,
			  IBV_WC_ATOMIC_WRITE, NULL);
		EXPECT_EQ(val, get64(b->dev.buf + roff)) TH_LOG("roff %u", roff);
		EXPECT_EQ(fence, get64(b->dev.buf + roff - 8));
		EXPECT_EQ(~fence, get64(b->dev.buf + roff + 8));
	}
	atomic_write_post(_metadata, qpx, b, 8 + 4, 1, 0x4100);
	ASSERT_WC(a->scq, a->qp, 0x4100, IBV_WC_REM_INV_REQ_ERR, 0,
		  NULL);
	expect_qp_err(_metadata, a->qp);
}

/*
 * RDMA FLUSH (IBTA 1.5 A19), in ib_core and the rxe ABI from 6.2 on. The
 * host's libibverbs may predate ibv_wr_flush(): the test posts placeholder
 * WQEs while a is in RTR (the refused doorbell leaves them in the ring),
 * rewrites them into FLUSH WQEs as the rxe provider lays them out, and
 * moves a to RTS. Values from ib_user_verbs.h.
 */
#define WR_FLUSH		14
#define WC_FLUSH		8
#define ACCESS_FLUSH_GLOBAL	(1 << 8)
#define ACCESS_FLUSH_PERSISTENT	(1 << 9)
#define DEVICE_FLUSH_GLOBAL	(1ull << 38)
#define DEVICE_FLUSH_PERSISTENT	(1ull << 39)
#define FLUSH_GLOBAL		1	/* placement types */
#define FLUSH_PERSISTENT	2
#define FLUSH_RANGE		0	/* selectivity levels */
#define FLUSH_MR		1

/* struct rxe_send_wr's wr.flush (rdma_user_rxe.h from 6.2 on). */
struct flush_wr {
	uint64_t remote_addr;
	uint32_t length;
	uint32_t rkey;
	uint8_t type;
	uint8_t level;
};

struct flush_case {
	uint32_t rkey;
	uint64_t va;
	uint32_t len;
	uint8_t type;
	uint8_t level;
	enum ibv_wc_status status;	/* a's completion */
};

/* Has the kernel ib_core's FLUSH (6.2 or later)? */
static int kernel_has_flush(void)
{
	struct utsname u;
	int major, minor;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major > 6 || (major == 6 && minor >= 2);
}

/* A placeholder WQE on a (in RTR) rewritten into the FLUSH @c. */
static void flush_post(struct __test_metadata *_metadata, struct side *a,
		       const struct flush_case *c, uint64_t wr_id)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct rxe_queue_buf *ring;
	struct rxe_send_wqe *w;
	struct flush_wr *f;
	size_t esize;

	ibv_post_send(a->qp, &wr, &bad);	/* the doorbell fails in RTR */
	w = vroce_sq_find(wr_id, &esize, &ring);
	ASSERT_NE(NULL, w) TH_LOG("WQE %#llx not in a mapped SQ",
				  (unsigned long long)wr_id);
	f = (struct flush_wr *)&w->wr.wr;
	w->wr.opcode = WR_FLUSH;
	memset(f, 0, sizeof(*f));
	f->remote_addr = c->va;
	f->rkey = c->rkey;
	f->type = c->type;
	f->level = c->level;
	w->iova = c->va;
	w->dma.length = c->len;
	w->dma.resid = c->len;
	w->dma.num_sge = 0;
	__sync_synchronize();
}

/*
 * Connect b (its QP granting @access) and a, post @n FLUSHes on a, and
 * check their completions in order: FLUSH on success.
 */
static void flush_run(struct __test_metadata *_metadata, struct side *a,
		      struct side *b, unsigned int access,
		      const struct flush_case *c, unsigned int n)
{
	struct vroce_rc_path pa = {
		VROCE_RC_DEFAULTS, .dest_qpn = b->qp->qp_num,
		.dgid = b->dev.gid, .sgid_idx = a->dev.gid_idx,
		.mtu = a->dev.mtu, .sq_psn = A_PSN, .rq_psn = B_PSN,
	};
	struct vroce_rc_path pb = {
		VROCE_RC_DEFAULTS, .dest_qpn = a->qp->qp_num,
		.dgid = a->dev.gid, .sgid_idx = b->dev.gid_idx,
		.mtu = b->dev.mtu, .sq_psn = B_PSN, .rq_psn = A_PSN,
	};
	struct ibv_wc wc;
	unsigned int i;

	pb.access |= access;
	/* The placement types in qp_access_flags bring a QP to INIT. */
	ASSERT_EQ(0, vroce_rc_connect(b->qp, &pb)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, vroce_rc_init(a->qp, &pa)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, vroce_rc_rtr(a->qp, &pa)) TH_LOG("%s", strerror(errno));
	for (i = 0; i < n; i++)
		flush_post(_metadata, a, &c[i], 0xf1000 + i);
	ASSERT_EQ(0, vroce_rc_rts(a->qp, &pa)) TH_LOG("%s", strerror(errno));
	for (i = 0; i < n; i++) {
		ASSERT_WC(a->scq, a->qp, 0xf1000 + i, c[i].status, WC_FLUSH,
			  &wc);
		if (c[i].status != IBV_WC_SUCCESS)
			break;
	}
	if (i < n)
		expect_qp_err(_metadata, a->qp);
}

/* A second MR over [1, 2) MiB of b's buffer with @access. */
static struct ibv_mr *flush_mr(struct side *b, int access)
{
	return ibv_reg_mr(b->dev.pd, b->dev.buf + (1u << 20), 1u << 20,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  access);
}

/*
 * The device claims both placement types; a region of ordinary memory
 * cannot promise persistence (EINVAL), global visibility it can. FLUSH of
 * a range, of a whole region (whatever the RETH says), of zero bytes: each
 * completes as FLUSH. Then a FLUSH through an rkey without the FLUSH
 * access bit is a remote access error.
 */
TEST_F_TIMEOUT(rc, flush, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	uintptr_t base = (uintptr_t)b->dev.buf + (1u << 20);
	struct ibv_device_attr_ex dattr;
	struct ibv_mr *mr;

	if (!kernel_has_flush())
		SKIP(return, "no RDMA FLUSH in ib_core before 6.2");
	ASSERT_EQ(0, ibv_query_device_ex(a->dev.ctx, NULL, &dattr));
	EXPECT_EQ(DEVICE_FLUSH_GLOBAL | DEVICE_FLUSH_PERSISTENT,
		  dattr.device_cap_flags_ex &
		  (DEVICE_FLUSH_GLOBAL | DEVICE_FLUSH_PERSISTENT));
	mr = flush_mr(b, ACCESS_FLUSH_PERSISTENT);
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EINVAL, errno);
	if (mr)
		ibv_dereg_mr(mr);
	mr = flush_mr(b, ACCESS_FLUSH_GLOBAL);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr FLUSH_GLOBAL: %s", strerror(errno));
	{
		const struct flush_case c[] = {
			{ mr->rkey, base + 4096, 8192, FLUSH_GLOBAL,
			  FLUSH_RANGE, IBV_WC_SUCCESS },
			{ mr->rkey, base + 12345, 0, FLUSH_GLOBAL,
			  FLUSH_RANGE, IBV_WC_SUCCESS },
			{ mr->rkey, 0x1234, 0x7fffffff, FLUSH_GLOBAL,
			  FLUSH_MR, IBV_WC_SUCCESS },
			{ b->dev.mr->rkey, (uintptr_t)b->dev.buf, 4096,
			  FLUSH_GLOBAL, FLUSH_RANGE, IBV_WC_REM_ACCESS_ERR },
		};

		flush_run(_metadata, a, b,
			  ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT, c,
			  ARRAY_SIZE(c));
	}
	ibv_dereg_mr(mr);
}

/*
 * Persistence asked of a region that grants only global visibility: a
 * remote access error (after a FLUSH of global visibility succeeded).
 */
TEST_F_TIMEOUT(rc, flush_violations, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	uintptr_t base = (uintptr_t)b->dev.buf + (1u << 20);
	struct ibv_mr *mr;

	if (!kernel_has_flush())
		SKIP(return, "no RDMA FLUSH in ib_core before 6.2");
	mr = flush_mr(b, ACCESS_FLUSH_GLOBAL);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr FLUSH_GLOBAL: %s", strerror(errno));
	{
		const struct flush_case c[] = {
			{ mr->rkey, base, 4096, FLUSH_GLOBAL, FLUSH_RANGE,
			  IBV_WC_SUCCESS },
			{ mr->rkey, base, 4096, FLUSH_PERSISTENT, FLUSH_RANGE,
			  IBV_WC_REM_ACCESS_ERR },
		};

		flush_run(_metadata, a, b,
			  ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT, c,
			  ARRAY_SIZE(c));
	}
	ibv_dereg_mr(mr);
}

TEST_F_TIMEOUT(rc, atomic_fetch_add_burst, TEST_TIMEOUT_S)
{
	const uint32_t roff = 64, n = 40;
	uint32_t i;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	put64(self->b.dev.buf + roff, 1000);
	for (i = 0; i < n; i++)
		post_atomic(_metadata, &self->a, &self->b,
			    IBV_WR_ATOMIC_FETCH_AND_ADD, 8192 + 8 * i, roff,
			    i + 1, 0, i);
	for (i = 0; i < n; i++)
		ASSERT_WC(self->a.scq, self->a.qp, i, IBV_WC_SUCCESS,
			  IBV_WC_FETCH_ADD, NULL);
	/* 1000 + 1 + 2 + ... + i before the i-th add. */
	for (i = 0; i < n; i++)
		EXPECT_EQ(1000 + i * (i + 1) / 2, get64(self->a.dev.buf + 8192 + 8 * i));
	EXPECT_EQ(1000 + n * (n + 1) / 2, get64(self->b.dev.buf + roff));
}

/*
 * 64 unsignaled WRITEs and one signaled one in a single post: one
 * completion, all 65 regions written.
 */
TEST_F_TIMEOUT(rc, writes_in_flight, TEST_TIMEOUT_S)
{
	const uint32_t n = 65, len = 4097, stride = 8192;
	struct ibv_send_wr wr[65], *bad;
	struct ibv_sge sge[65];
	struct seg l, r;
	uint32_t i;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		l = (struct seg){ 1 + i * stride, len };
		r = (struct seg){ GUARD + 3 + i * stride, len };
		fill_src(self->a.dev.buf, &l, 1, 400 + i);
		poison_dst(self->b.dev.buf, &r, 1, 400 + i);
		to_sge(&self->a, &l, 1, &sge[i]);
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].wr.rdma.remote_addr = (uintptr_t)self->b.dev.buf + r.off;
		wr[i].wr.rdma.rkey = self->b.dev.mr->rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	wr[n - 1].send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
	ASSERT_WC(self->a.scq, self->a.qp, n - 1, IBV_WC_SUCCESS,
		  IBV_WC_RDMA_WRITE, NULL);
	expect_cq_empty(_metadata, self->a.scq);
	for (i = 0; i < n; i++) {
		r = (struct seg){ GUARD + 3 + i * stride, len };
		EXPECT_EQ(0, check_dst(_metadata, self->b.dev.buf, &r, 1, len, 400 + i))
			TH_LOG("write %u", i);
	}
}

/*
 * 64 SENDs of different lengths in one post, every 16th signaled: the
 * receives complete in order with their own lengths and data.
 */
TEST_F_TIMEOUT(rc, sends_in_flight, TEST_TIMEOUT_S)
{
	const uint32_t n = 64, stride = 8192;
	struct ibv_send_wr wr[64], *bad;
	struct ibv_recv_wr rwr[64], *rbad;
	struct ibv_sge sge[64], rsge[64];
	struct ibv_wc wc;
	struct seg l, r;
	uint32_t i;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	memset(wr, 0, sizeof(wr));
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < n; i++) {
		l = (struct seg){ 7 + i * stride, 1 + i * 97 };
		r = (struct seg){ GUARD + i * stride, stride - 2 * GUARD };
		fill_src(self->a.dev.buf, &l, 1, 500 + i);
		poison_dst(self->b.dev.buf, &r, 1, 500 + i);
		to_sge(&self->a, &l, 1, &sge[i]);
		to_sge(&self->b, &r, 1, &rsge[i]);
		rwr[i].wr_id = 100 + i;
		rwr[i].sg_list = &rsge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i + 1 < n ? &rwr[i + 1] : NULL;
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = i % 16 == 15 ? IBV_SEND_SIGNALED : 0;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_recv(self->b.qp, rwr, &rbad));
	ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
	for (i = 15; i < n; i += 16)
		ASSERT_WC(self->a.scq, self->a.qp, i, IBV_WC_SUCCESS,
			  IBV_WC_SEND, NULL);
	for (i = 0; i < n; i++) {
		ASSERT_WC(self->b.rcq, self->b.qp, 100 + i,
			  IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
		EXPECT_EQ(1 + i * 97, wc.byte_len);
		r = (struct seg){ GUARD + i * stride, stride - 2 * GUARD };
		EXPECT_EQ(0, check_dst(_metadata, self->b.dev.buf, &r, 1, 1 + i * 97,
				       500 + i)) TH_LOG("send %u", i);
	}
	expect_cq_empty(_metadata, self->a.scq);
}

/*
 * 48 signaled READs in one post, more than max_rd_atomic: all complete in
 * order with their data.
 */
TEST_F_TIMEOUT(rc, reads_in_flight, TEST_TIMEOUT_S)
{
	const uint32_t n = 48, stride = 32768;
	struct ibv_send_wr wr[48], *bad;
	struct ibv_sge sge[48];
	struct seg l, r;
	uint32_t i;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		l = (struct seg){ GUARD + 5 + i * stride, 3 + i * 513 };
		r = (struct seg){ 9 + i * stride, 3 + i * 513 };
		fill_src(self->b.dev.buf, &r, 1, 600 + i);
		poison_dst(self->a.dev.buf, &l, 1, 600 + i);
		to_sge(&self->a, &l, 1, &sge[i]);
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)self->b.dev.buf + r.off;
		wr[i].wr.rdma.rkey = self->b.dev.mr->rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
	for (i = 0; i < n; i++)
		ASSERT_WC(self->a.scq, self->a.qp, i, IBV_WC_SUCCESS,
			  IBV_WC_RDMA_READ, NULL);
	for (i = 0; i < n; i++) {
		l = (struct seg){ GUARD + 5 + i * stride, 3 + i * 513 };
		EXPECT_EQ(0, check_dst(_metadata, self->a.dev.buf, &l, 1, l.len, 600 + i))
			TH_LOG("read %u", i);
	}
}

/*
 * One post list of every opcode, all signaled: completions in post order,
 * the READ sees the earlier WRITE, the atomics see what they should.
 */
TEST_F_TIMEOUT(rc, mixed_list, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	const uint32_t wlen = 5000, slen = 3001;
	struct ibv_send_wr wr[7], *bad;
	struct ibv_recv_wr rwr[3], *rbad;
	struct ibv_sge sge[7], rsge[3];
	/* a's buffer: sources at 1.., READ dest at 100001, atomics 200001.. */
	struct seg w_src = { 1, wlen }, w_dst = { 1003, wlen };
	struct seg s_src = { 20001, slen }, rd_dst = { 100001, wlen };
	struct seg r_buf[3] = { { 300001, 8000 }, { 320001, 8000 }, { 340001, 8000 } };
	static const enum ibv_wc_opcode want[7] = {
		IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_RDMA_READ,
		IBV_WC_RDMA_WRITE, IBV_WC_FETCH_ADD, IBV_WC_SEND,
		IBV_WC_COMP_SWAP,
	};
	struct ibv_wc wc;
	int i;

	pair_connect(_metadata, a, b, &conn_default);
	memset(wr, 0, sizeof(wr));
	memset(rwr, 0, sizeof(rwr));
	fill_src(a->dev.buf, &w_src, 1, 700);
	poison_dst(b->dev.buf, &w_dst, 1, 700);
	poison_dst(a->dev.buf, &rd_dst, 1, 700);
	fill_src(a->dev.buf, &s_src, 1, 701);
	for (i = 0; i < 3; i++) {
		poison_dst(b->dev.buf, &r_buf[i], 1, 701);
		to_sge(b, &r_buf[i], 1, &rsge[i]);
		rwr[i].wr_id = 100 + i;
		rwr[i].sg_list = &rsge[i];
		rwr[i].num_sge = 1;
		rwr[i].next = i < 2 ? &rwr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_recv(b->qp, rwr, &rbad));
	put64(b->dev.buf + 500000, 7);
	put64(b->dev.buf + 500008, 0x77);

	to_sge(a, &w_src, 1, &sge[0]);
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	wr[0].wr.rdma.remote_addr = (uintptr_t)b->dev.buf + w_dst.off;
	to_sge(a, &s_src, 1, &sge[1]);
	wr[1].opcode = IBV_WR_SEND;
	to_sge(a, &rd_dst, 1, &sge[2]);
	wr[2].opcode = IBV_WR_RDMA_READ;
	wr[2].wr.rdma.remote_addr = (uintptr_t)b->dev.buf + w_dst.off;
	to_sge(a, &w_src, 1, &sge[3]);
	sge[3].length = 100;
	wr[3].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[3].imm_data = htonl(0xabcdef01);
	wr[3].wr.rdma.remote_addr = (uintptr_t)b->dev.buf + 400001;
	sge[4] = (struct ibv_sge){ (uintptr_t)a->dev.buf + 200001, 8, a->dev.mr->lkey };
	wr[4].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[4].wr.atomic.remote_addr = (uintptr_t)b->dev.buf + 500000;
	wr[4].wr.atomic.compare_add = 5;
	to_sge(a, &s_src, 1, &sge[5]);
	sge[5].length = 17;
	wr[5].opcode = IBV_WR_SEND_WITH_IMM;
	wr[5].imm_data = htonl(0x12345678);
	sge[6] = (struct ibv_sge){ (uintptr_t)a->dev.buf + 200011, 8, a->dev.mr->lkey };
	wr[6].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr[6].wr.atomic.remote_addr = (uintptr_t)b->dev.buf + 500008;
	wr[6].wr.atomic.compare_add = 0x77;
	wr[6].wr.atomic.swap = 0x88;
	for (i = 0; i < 7; i++) {
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i < 6 ? &wr[i + 1] : NULL;
		if (wr[i].opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		    wr[i].opcode == IBV_WR_ATOMIC_CMP_AND_SWP)
			wr[i].wr.atomic.rkey = b->dev.mr->rkey;
		else
			wr[i].wr.rdma.rkey = b->dev.mr->rkey;
	}
	ASSERT_EQ(0, ibv_post_send(a->qp, wr, &bad)) TH_LOG("%s", strerror(errno));
	for (i = 0; i < 7; i++)
		ASSERT_WC(a->scq, a->qp, i, IBV_WC_SUCCESS, want[i], NULL);

	ASSERT_WC(b->rcq, b->qp, 100, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(slen, wc.byte_len);
	EXPECT_FALSE(wc.wc_flags & IBV_WC_WITH_IMM);
	ASSERT_WC(b->rcq, b->qp, 101, IBV_WC_SUCCESS,
		  IBV_WC_RECV_RDMA_WITH_IMM, &wc);
	EXPECT_EQ(100, wc.byte_len);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(0xabcdef01, ntohl(wc.imm_data));
	ASSERT_WC(b->rcq, b->qp, 102, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(17, wc.byte_len);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(0x12345678, ntohl(wc.imm_data));

	EXPECT_EQ(0, check_dst(_metadata, b->dev.buf, &w_dst, 1, wlen, 700));
	EXPECT_EQ(0, check_dst(_metadata, a->dev.buf, &rd_dst, 1, wlen, 700))
		TH_LOG("the READ after the WRITE");
	EXPECT_EQ(0, check_dst(_metadata, b->dev.buf, &r_buf[0], 1, slen, 701));
	/* WRITE_WITH_IMM places nothing in its receive buffer. */
	EXPECT_EQ(0, check_dst(_metadata, b->dev.buf, &r_buf[1], 1, 0, 701));
	/* The first 17 bytes of the same stream. */
	EXPECT_EQ(0, check_dst(_metadata, b->dev.buf, &r_buf[2], 1, 17, 701));
	EXPECT_EQ(0, memcmp(b->dev.buf + 400001, a->dev.buf + w_src.off, 100));
	EXPECT_EQ(7, get64(a->dev.buf + 200001));
	EXPECT_EQ(12, get64(b->dev.buf + 500000));
	EXPECT_EQ(0x77, get64(a->dev.buf + 200011));
	EXPECT_EQ(0x88, get64(b->dev.buf + 500008));
}

/* An rkey that was valid once: its MR is deregistered. */
static uint32_t stale_rkey(struct __test_metadata *_metadata, struct side *b)
{
	struct ibv_mr *mr;
	uint32_t rkey;

	mr = ibv_reg_mr(b->dev.pd, b->dev.buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr)
		return 0;
	rkey = mr->rkey;
	ibv_dereg_mr(mr);
	return rkey;
}

/*
 * A bad rkey: REM_ACCESS_ERR on that WR, the requester QP in ERR, the WR
 * posted behind it and one posted afterwards flushed, memory untouched.
 */
static void bad_rkey(struct __test_metadata *_metadata, struct side *a,
		     struct side *b, enum ibv_wr_opcode opc)
{
	struct seg l = { 1, 3000 }, r = { 4001, 3000 };
	struct ibv_send_wr wr[2] = {}, more = {}, *bad;
	struct ibv_sge sge;
	uint32_t rkey = stale_rkey(_metadata, b);
	int i;

	ASSERT_NE(0, rkey);
	pair_connect(_metadata, a, b, &conn_default);
	if (opc == IBV_WR_RDMA_WRITE) {
		fill_src(a->dev.buf, &l, 1, 800);
		poison_dst(b->dev.buf, &r, 1, 800);
	} else {
		fill_src(b->dev.buf, &r, 1, 800);
		poison_dst(a->dev.buf, &l, 1, 800);
	}
	to_sge(a, &l, 1, &sge);
	for (i = 0; i < 2; i++) {
		wr[i].wr_id = i + 1;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = opc;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)b->dev.buf + r.off;
		wr[i].wr.rdma.rkey = i ? b->dev.mr->rkey : rkey;
	}
	wr[0].next = &wr[1];
	ASSERT_EQ(0, ibv_post_send(a->qp, wr, &bad));
	ASSERT_WC(a->scq, a->qp, 1, IBV_WC_REM_ACCESS_ERR, 0, NULL);
	ASSERT_WC(a->scq, a->qp, 2, IBV_WC_WR_FLUSH_ERR, 0, NULL);
	expect_qp_err(_metadata, a->qp);

	more = wr[1];
	more.wr_id = 3;
	more.next = NULL;
	ASSERT_EQ(0, ibv_post_send(a->qp, &more, &bad));
	ASSERT_WC(a->scq, a->qp, 3, IBV_WC_WR_FLUSH_ERR, 0, NULL);
	expect_cq_empty(_metadata, a->scq);
	if (opc == IBV_WR_RDMA_WRITE) {
		EXPECT_EQ(0, check_dst(_metadata, b->dev.buf, &r, 1, 0, 800));
	} else {
		EXPECT_EQ(0, check_dst(_metadata, a->dev.buf, &l, 1, 0, 800));
	}
}

TEST_F_TIMEOUT(rc, bad_rkey_write, TEST_TIMEOUT_S)
{
	bad_rkey(_metadata, &self->a, &self->b, IBV_WR_RDMA_WRITE);
}

TEST_F_TIMEOUT(rc, bad_rkey_read, TEST_TIMEOUT_S)
{
	bad_rkey(_metadata, &self->a, &self->b, IBV_WR_RDMA_READ);
}

static void post_send_one(struct __test_metadata *_metadata, struct side *a,
			  uint32_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		(uintptr_t)a->dev.buf + off, len, a->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	ASSERT_EQ(0, ibv_post_send(a->qp, &wr, &bad)) TH_LOG("%s", strerror(errno));
}

/* No receive WQE at the responder, rnr_retry 1: RNR_RETRY_EXC_ERR. */
TEST_F_TIMEOUT(rc, rnr_retry_exceeded, TEST_TIMEOUT_S)
{
	struct conn c = conn_default;

	c.rnr_retry = 1;
	c.min_rnr_timer = 1;	/* 0.01 ms */
	pair_connect(_metadata, &self->a, &self->b, &c);
	post_send_one(_metadata, &self->a, 0, 100, 1);
	ASSERT_WC(self->a.scq, self->a.qp, 1,
		  IBV_WC_RNR_RETRY_EXC_ERR, 0, NULL);
	expect_qp_err(_metadata, self->a.qp);
	expect_cq_empty(_metadata, self->b.rcq);
}

/* A receive WQE posted during the RNR retries is used: rnr_retry 7 is infinite. */
/*
 * A SEND of @len bytes reaches a QP without a receive WQE: RNR NAK (and,
 * for a message of several packets, a PSN sequence NAK for the packets
 * after the first), then a receive is posted and the requester's retry
 * delivers the message whole.
 */
static void rnr_then_recv(struct __test_metadata *_metadata,
			  struct side *a, struct side *b, uint32_t len)
{
	struct conn c = conn_default;
	struct seg l = { 3, len }, r = { 5, len + 223 };
	struct ibv_recv_wr rwr = {}, *rbad;
	struct ibv_sge rsge;
	struct ibv_wc wc;

	c.min_rnr_timer = 1;
	pair_connect(_metadata, a, b, &c);
	fill_src(a->dev.buf, &l, 1, 900);
	poison_dst(b->dev.buf, &r, 1, 900);
	post_send_one(_metadata, a, l.off, l.len, 1);
	usleep(200000);
	to_sge(b, &r, 1, &rsge);
	rwr.wr_id = 2;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ASSERT_EQ(0, ibv_post_recv(b->qp, &rwr, &rbad));
	ASSERT_WC(a->scq, a->qp, 1, IBV_WC_SUCCESS, IBV_WC_SEND,
		  NULL);
	ASSERT_WC(b->rcq, b->qp, 2, IBV_WC_SUCCESS, IBV_WC_RECV,
		  &wc);
	EXPECT_EQ(len, wc.byte_len);
	EXPECT_EQ(0, check_dst(_metadata, b->dev.buf, &r, 1, len, 900));
}

TEST_F_TIMEOUT(rc, rnr_then_recv, TEST_TIMEOUT_S)
{
	rnr_then_recv(_metadata, &self->a, &self->b, 777);
}

/*
 * The same with a message of 65 packets at a 1024-byte MTU: in loopback,
 * runs of its MIDDLE packets travel as one frame each, and go-back-N
 * resends them from the first packet.
 */
TEST_F_TIMEOUT(rc, rnr_then_recv_long, TEST_TIMEOUT_S)
{
	rnr_then_recv(_metadata, &self->a, &self->b, 65536 + 777);
}

static void post_recv_one(struct __test_metadata *_metadata, struct side *b,
			  uint32_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)b->dev.buf + off, len, b->dev.mr->lkey };
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	ASSERT_EQ(0, ibv_post_recv(b->qp, &wr, &bad)) TH_LOG("%s", strerror(errno));
}

static void post_write_unsignaled(struct __test_metadata *_metadata,
				  struct side *a, struct side *b, uint32_t off,
				  uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)a->dev.buf + off, len, a->dev.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
	}, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)b->dev.buf + off;
	wr.wr.rdma.rkey = b->dev.mr->rkey;
	ASSERT_EQ(0, ibv_post_send(a->qp, &wr, &bad)) TH_LOG("%s", strerror(errno));
}

/*
 * Unsignaled SENDs, then nothing for several ACK timeouts, with retry_cnt
 * 0. A requester may leave the end of an unsignaled message without
 * AckReq; it must then get its ACK without counting a retry (one retry
 * would end the QP with RETRY_EXC_ERR). A signaled SEND afterwards
 * completes, and every message arrived once, in order.
 */
TEST_F_TIMEOUT(rc, unsignaled_idle_no_retry, TEST_TIMEOUT_S)
{
	const uint32_t n = 4, len = 100, stride = 256;
	struct conn c = conn_default;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_sge sge;
	struct seg l, r;
	struct ibv_wc wc;
	uint32_t i;

	c.retry_cnt = 0;	/* timeout 14: 67 ms */
	pair_connect(_metadata, &self->a, &self->b, &c);
	for (i = 0; i < n; i++) {
		l = (struct seg){ i * stride, len };
		r = (struct seg){ GUARD + i * stride, len };
		fill_src(self->a.dev.buf, &l, 1, 700 + i);
		poison_dst(self->b.dev.buf, &r, 1, 700 + i);
		post_recv_one(_metadata, &self->b, r.off, len, 10 + i);
	}
	for (i = 0; i < n; i++) {
		if (i == n - 1)
			usleep(300000);
		l = (struct seg){ i * stride, len };
		to_sge(&self->a, &l, 1, &sge);
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = i == n - 1 ? IBV_SEND_SIGNALED : 0;
		ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	}
	ASSERT_WC(self->a.scq, self->a.qp, n - 1, IBV_WC_SUCCESS,
		  IBV_WC_SEND, NULL);
	expect_cq_empty(_metadata, self->a.scq);
	for (i = 0; i < n; i++) {
		r = (struct seg){ GUARD + i * stride, len };
		ASSERT_WC(self->b.rcq, self->b.qp, 10 + i,
			  IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
		EXPECT_EQ(len, wc.byte_len);
		EXPECT_EQ(0, check_dst(_metadata, self->b.dev.buf, &r, 1, len, 700 + i));
	}
	expect_cq_empty(_metadata, self->b.rcq);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->a.qp));
}

/*
 * No ACK timeout (timeout 0) and only unsignaled WRITEs: no retry timer
 * will ever ask for their ACK. A drain to SQD still ends
 * (IBV_EVENT_SQ_DRAINED): everything sent gets acknowledged although no
 * completion waits for it.
 */
TEST_F_TIMEOUT(rc, unsignaled_then_sqd, TEST_TIMEOUT_S)
{
	const uint32_t n = 3, len = 300, stride = 1024;
	struct conn c = conn_default;
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1,
	};
	struct ibv_async_event ev;
	double end;
	struct seg g;
	uint32_t i;

	c.timeout = 0;
	pair_connect(_metadata, &self->a, &self->b, &c);
	for (i = 0; i < n; i++) {
		g = (struct seg){ i * stride, len };
		fill_src(self->a.dev.buf, &g, 1, 800 + i);
		poison_dst(self->b.dev.buf, &g, 1, 800 + i);
		post_write_unsignaled(_metadata, &self->a, &self->b, g.off,
				      len, i);
	}
	/* Sent: the last WRITE's data is there. */
	g = (struct seg){ (n - 1) * stride, len };
	end = vroce_now_s() + POLL_TIMEOUT_S;
	while (vroce_mismatch(self->b.dev.buf + g.off, len, 800 + n - 1,
			      pattern) >= 0 && vroce_now_s() < end)
		usleep(1000);
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &attr, IBV_QP_STATE |
				   IBV_QP_EN_SQD_ASYNC_NOTIFY))
		TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, vroce_wait_async(self->a.dev.ctx, &ev, POLL_TIMEOUT_S))
		TH_LOG("no SQ_DRAINED event within %d s", POLL_TIMEOUT_S);
	EXPECT_EQ(IBV_EVENT_SQ_DRAINED, ev.event_type);
	EXPECT_EQ(self->a.qp, ev.element.qp);
	ibv_ack_async_event(&ev);
	expect_cq_empty(_metadata, self->a.scq);
	for (i = 0; i < n; i++) {
		g = (struct seg){ i * stride, len };
		EXPECT_EQ(0, check_dst(_metadata, self->b.dev.buf, &g, 1, len, 800 + i));
	}
}

/*
 * Only unsignaled WRITEs through a 4-deep SQ: their slots are free again
 * only once acknowledged, and the requester leaves the end of an
 * unsignaled WRITE without AckReq. It must ask once half the SQ waits for
 * an ACK, so a consumer posting as fast as slots free up never waits for
 * the probe of an idle tail (a retransmission each: retrans_pkts). Every
 * WRITE lands, in order.
 */
TEST_F_TIMEOUT(rc, unsignaled_small_sq, TEST_TIMEOUT_S)
{
	const uint32_t n = 256, len = 64, stride = 128;
	const char *dev = getenv("VROCE_DEV");
	struct ibv_qp_init_attr init = {
		.send_cq = self->a.scq, .recv_cq = self->a.rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	long long before, after, tmo_before, tmo_after;
	double end;
	struct seg g;
	uint32_t i;

	ASSERT_EQ(0, ibv_destroy_qp(self->a.qp));
	self->a.qp = ibv_create_qp(self->a.dev.pd, &init);
	ASSERT_NE(NULL, self->a.qp) TH_LOG("create_qp: %s", strerror(errno));
	ASSERT_GE(16U, init.cap.max_send_wr);
	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	/* -1: no such counter (rdma_rxe asks for every ACK: nothing to see). */
	before = vroce_hw_counter(dev, "retrans_pkts");
	tmo_before = vroce_hw_counter(dev, "local_ack_timeout_err");
	for (i = 0; i < n; i++) {
		struct ibv_sge sge = {
			(uintptr_t)self->a.dev.buf + i * stride, len, self->a.dev.mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
		}, *bad;
		int err;

		g = (struct seg){ i * stride, len };
		fill_src(self->a.dev.buf, &g, 1, 900 + i);
		g.off += GUARD;
		poison_dst(self->b.dev.buf, &g, 1, 900 + i);
		wr.wr.rdma.remote_addr = (uintptr_t)self->b.dev.buf + g.off;
		wr.wr.rdma.rkey = self->b.dev.mr->rkey;
		end = vroce_now_s() + POLL_TIMEOUT_S;
		while ((err = ibv_post_send(self->a.qp, &wr, &bad)) == ENOMEM &&
		       vroce_now_s() < end)
			sched_yield();
		ASSERT_EQ(0, err) TH_LOG("post %u: %s", i, strerror(err));
	}
	after = vroce_hw_counter(dev, "retrans_pkts");
	tmo_after = vroce_hw_counter(dev, "local_ack_timeout_err");
	/*
	 * Without the ask, every fill of the SQ waits for a probe: about
	 * n / 7. The margin is for an ACK late by the probe's 5 ms. An ACK
	 * timeout meanwhile (a busy host) retransmits too, and then the
	 * count says nothing about the probes.
	 */
	if (before >= 0 && tmo_after > tmo_before)
		TH_LOG("%lld retransmissions after %lld ACK timeouts: probes not judged",
		       after - before, tmo_after - tmo_before);
	else if (before >= 0)
		EXPECT_GE(before + n / 16, after)
			TH_LOG("%lld probes or retries", after - before);
	g = (struct seg){ GUARD + (n - 1) * stride, len };
	end = vroce_now_s() + POLL_TIMEOUT_S;
	while (vroce_mismatch(self->b.dev.buf + g.off, len, 900 + n - 1,
			      pattern) >= 0 && vroce_now_s() < end)
		usleep(1000);
	for (i = 0; i < n; i++) {
		g = (struct seg){ GUARD + i * stride, len };
		EXPECT_EQ(0, check_dst(_metadata, self->b.dev.buf, &g, 1, len, 900 + i));
	}
	expect_cq_empty(_metadata, self->a.scq);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->a.qp));
}

static const struct conn conn_short = {
	.timeout = 10, .retry_cnt = 2, .rnr_retry = 7, .min_rnr_timer = 12,
};

static void expect_retry_exceeded(struct __test_metadata *_metadata,
				  struct side *a)
{
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_sge sge = { (uintptr_t)a->dev.buf, 100, a->dev.mr->lkey };

	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = 0x10000;
	wr.wr.rdma.rkey = 0x1234;
	ASSERT_EQ(0, ibv_post_send(a->qp, &wr, &bad));
	ASSERT_WC(a->scq, a->qp, 1, IBV_WC_RETRY_EXC_ERR, 0, NULL);
	expect_qp_err(_metadata, a->qp);
}

/* The peer QP is destroyed: the requester retries, then RETRY_EXC_ERR. */
TEST_F_TIMEOUT(rc, retry_exceeded_peer_destroyed, TEST_TIMEOUT_S)
{
	pair_connect(_metadata, &self->a, &self->b, &conn_short);
	ASSERT_EQ(0, ibv_destroy_qp(self->b.qp));
	self->b.qp = NULL;
	expect_retry_exceeded(_metadata, &self->a);
}

/* The destination QP number was never created. */
TEST_F_TIMEOUT(rc, retry_exceeded_no_such_qp, TEST_TIMEOUT_S)
{
	struct conn c = conn_short;

	c.dest_qpn = 0xfffffe;
	ASSERT_EQ(0, qp_connect(&self->a, &self->b, A_PSN, B_PSN, &c));
	expect_retry_exceeded(_metadata, &self->a);
}

/* A UD QP of b's in RTS, with a receive posted into b's buffer. */
static struct ibv_qp *ud_qp_rts(struct __test_metadata *_metadata,
				struct side *b)
{
	struct ibv_qp_init_attr init = {
		.send_cq = b->scq, .recv_cq = b->rcq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)b->dev.buf, 8192, b->dev.mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp *qp = ibv_create_qp(b->dev.pd, &init);

	if (!qp)
		return NULL;
	if (vroce_ud_connect(qp, 0x11111111, 0) ||
	    ibv_post_recv(qp, &rwr, &bad))
		goto err;
	return qp;
err:
	ibv_destroy_qp(qp);
	return NULL;
}

/*
 * The destination is a UD QP: RC SENDs of 4 KiB (in loopback, their
 * payload in the sender's pages) are dropped there, never received; the
 * requester retries, then RETRY_EXC_ERR.
 */
TEST_F_TIMEOUT(rc, retry_exceeded_ud_peer, TEST_TIMEOUT_S)
{
	struct ibv_sge sge = { (uintptr_t)self->a.dev.buf, 4096, self->a.dev.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct conn c = conn_short;
	struct ibv_qp *ud = ud_qp_rts(_metadata, &self->b);
	struct ibv_wc wc;

	ASSERT_NE(NULL, ud) TH_LOG("UD QP: %s", strerror(errno));
	c.dest_qpn = ud->qp_num;
	ASSERT_EQ(0, qp_connect(&self->a, &self->b, A_PSN, B_PSN, &c));
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	ASSERT_WC(self->a.scq, self->a.qp, 1, IBV_WC_RETRY_EXC_ERR,
		  0, NULL);
	expect_qp_err(_metadata, self->a.qp);
	EXPECT_EQ(0, ibv_poll_cq(self->b.rcq, 1, &wc))
		TH_LOG("the UD QP received: status %d", wc.status);
	ASSERT_EQ(0, ibv_destroy_qp(ud));
}

/* A buffer of @len bytes of its own, registered for local and remote access. */
static uint8_t *own_buffer(struct side *s, uint32_t len, struct ibv_mr **mr)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	*mr = ibv_reg_mr(s->dev.pd, p, len, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	if (!*mr) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

/*
 * Post @wr on @s, wait for its completion (@op), then deregister and unmap
 * its own buffer @p of @len bytes (own_buffer()).
 */
static void post_then_free(struct __test_metadata *_metadata, struct side *s,
			   struct ibv_send_wr *wr, enum ibv_wc_opcode op,
			   struct ibv_mr *mr, uint8_t *p, uint32_t len)
{
	struct ibv_send_wr *bad;

	ASSERT_EQ(0, ibv_post_send(s->qp, wr, &bad));
	ASSERT_WC(s->scq, s->qp, wr->wr_id, IBV_WC_SUCCESS, op,
		  NULL);
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	ASSERT_EQ(0, munmap(p, len));
}

/*
 * Messages whose payload lies in buffers that are deregistered and
 * unmapped as soon as they complete: a SEND's source (side a) and a READ's
 * source (side b), each followed by a message from a new buffer, which
 * arrives whole and alone. (In loopback such a payload travels in the
 * buffer's pages, and the sending QP reuses the frame's skb for the next.)
 */
TEST_F_TIMEOUT(rc, payload_buffer_freed, TEST_TIMEOUT_S)
{
	const uint32_t len = 65536, rounds = 4;
	struct seg src = { 0, len }, dst;
	struct ibv_send_wr wr = {
		.num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_sge sge;
	struct ibv_mr *mr;
	uint8_t *p;
	uint32_t i;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	for (i = 0; i < rounds; i++) {
		/* SEND from a's own buffer into b's receive buffer. */
		p = own_buffer(&self->a, len, &mr);
		ASSERT_NE(NULL, p) TH_LOG("buffer: %s", strerror(errno));
		fill_src(p, &src, 1, 1100 + i);
		dst = (struct seg){ GUARD + (i % 2) * 2 * len, len };
		poison_dst(self->b.dev.buf, &dst, 1, 1100 + i);
		post_recv_one(_metadata, &self->b, dst.off, len, 200 + i);
		sge = (struct ibv_sge){ (uintptr_t)p, len, mr->lkey };
		wr.wr_id = 300 + i;
		wr.sg_list = &sge;
		wr.opcode = IBV_WR_SEND;
		post_then_free(_metadata, &self->a, &wr, IBV_WC_SEND, mr, p,
			       len);
		ASSERT_WC(self->b.rcq, self->b.qp, 200 + i,
			  IBV_WC_SUCCESS, IBV_WC_RECV, NULL);
		EXPECT_EQ(0, check_dst(_metadata, self->b.dev.buf, &dst, 1, len,
				       1100 + i)) TH_LOG("SEND %u", i);

		/* READ from b's own buffer into a's. */
		p = own_buffer(&self->b, len, &mr);
		ASSERT_NE(NULL, p) TH_LOG("buffer: %s", strerror(errno));
		fill_src(p, &src, 1, 1200 + i);
		dst = (struct seg){ GUARD + (i % 2) * 2 * len, len };
		poison_dst(self->a.dev.buf, &dst, 1, 1200 + i);
		to_sge(&self->a, &dst, 1, &sge);
		wr.wr_id = 400 + i;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)p;
		wr.wr.rdma.rkey = mr->rkey;
		post_then_free(_metadata, &self->a, &wr, IBV_WC_RDMA_READ, mr,
			       p, len);
		EXPECT_EQ(0, check_dst(_metadata, self->a.dev.buf, &dst, 1, len,
				       1200 + i)) TH_LOG("READ %u", i);
	}
}

/*
 * A buffer of @len bytes mapped for side @s whose MR is deregistered at
 * once: its lkey names no MR. Returns the buffer (munmap() it), NULL on
 * failure.
 */
static uint8_t *stale_lkey_buffer(struct side *s, uint32_t len, uint32_t *lkey)
{
	struct ibv_mr *mr;
	uint8_t *p;

	p = own_buffer(s, len, &mr);
	if (!p)
		return NULL;
	*lkey = mr->lkey;
	if (ibv_dereg_mr(mr)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

/*
 * Poll @n READ completions of @len bytes each, posted with wr_id 0..n-1
 * into a's buffer from the same offsets of b's: in order, successes with
 * their data before flushes (nothing succeeds after a flushed READ).
 * Returns the number flushed.
 */
static uint32_t expect_reads_in_order(struct __test_metadata *_metadata,
				      struct side *a, const struct side *b,
				      uint32_t n, uint32_t len)
{
	uint32_t i, flushed = 0;
	struct ibv_wc wc;

	for (i = 0; i < n; i++) {
		if (vroce_poll_one(a->scq, &wc, POLL_TIMEOUT_S) != 1) {
			EXPECT_TRUE(0) TH_LOG("no completion for READ %u", i);
			return flushed;
		}
		EXPECT_EQ(i, wc.wr_id);
		if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			flushed++;
			continue;
		}
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("READ %u: %s", i, wc_str(wc.status));
		EXPECT_EQ(0, flushed) TH_LOG("READ %u after a flush", i);
		EXPECT_EQ(0, memcmp(a->dev.buf + i * len, b->dev.buf + i * len, len))
			TH_LOG("READ %u: wrong data", i);
	}
	TH_LOG("%u of %u READs flushed", flushed, n);
	return flushed;
}

/*
 * The buffer is the application's again: fill it, wait, and check that
 * nothing landed in it meanwhile (a late write would).
 */
static void expect_buffer_kept(struct __test_metadata *_metadata,
			       uint8_t *buf, uint32_t len)
{
	long bad_at = -1;
	uint32_t i;

	memset(buf, 0x5a, len);
	usleep(300 * 1000);
	for (i = 0; i < len && bad_at < 0; i++)
		if (buf[i] != 0x5a)
			bad_at = i;
	EXPECT_EQ(-1, bad_at) TH_LOG("byte %ld written after the completions",
				     bad_at);
}

/*
 * READs flushed by the requester's move to ERR while the responder still
 * works on them: once the completions are polled, the buffer is the
 * application's again, and nothing that arrives afterwards (responses in
 * flight or queued, or still being sent) lands in it. The READs that
 * completed before the flush hold their data.
 */
TEST_F_TIMEOUT(rc, read_flushed_buffer_owned, TEST_TIMEOUT_S)
{
	const uint32_t n = 15, len = 256u << 10;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr wr[15], *bad;
	struct seg all = { 0, n * len };
	struct ibv_sge sge[15];
	uint32_t i;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	fill_src(self->b.dev.buf, &all, 1, 1300);
	memset(self->a.dev.buf, 0, n * len);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)self->a.dev.buf + i * len,
					   len, self->a.dev.mr->lkey };
		wr[i].wr_id = i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)self->b.dev.buf + i * len;
		wr[i].wr.rdma.rkey = self->b.dev.mr->rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
	ASSERT_EQ(0, ibv_modify_qp(self->a.qp, &attr, IBV_QP_STATE));
	expect_reads_in_order(_metadata, &self->a, &self->b, n, len);
	expect_buffer_kept(_metadata, self->a.dev.buf, n * len);
}

/*
 * READs posted one by one (a doorbell each), then a WRITE whose local SGE
 * names a deregistered MR. The doorbells that come while a READ response
 * is being copied run the requester beside the copy (task.c), and the
 * WRITE fails there: its failure is completed by the task, in order. So:
 * the READs complete in order, successes (with their data) before
 * flushes; the WRITE with LOC_PROT_ERR; the QP in ERR; and nothing lands
 * in the READs' buffer after the completions.
 */
TEST_F_TIMEOUT(rc, reads_then_bad_lkey_write, TEST_TIMEOUT_S)
{
	const uint32_t n = 15, len = 256u << 10, wlen = 65536;
	struct seg all = { 0, n * len };
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t i, lkey;
	uint8_t *p;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	p = stale_lkey_buffer(&self->a, wlen, &lkey);
	ASSERT_NE(NULL, p) TH_LOG("buffer: %s", strerror(errno));
	fill_src(self->b.dev.buf, &all, 1, 1500);
	memset(self->a.dev.buf, 0, n * len);
	memset(self->b.dev.buf + n * len, 0x3c, wlen);
	for (i = 0; i < n; i++) {
		sge = (struct ibv_sge){ (uintptr_t)self->a.dev.buf + i * len, len,
					self->a.dev.mr->lkey };
		wr = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
		};
		wr.wr.rdma.remote_addr = (uintptr_t)self->b.dev.buf + i * len;
		wr.wr.rdma.rkey = self->b.dev.mr->rkey;
		ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	}
	sge = (struct ibv_sge){ (uintptr_t)p, wlen, lkey };
	wr = (struct ibv_send_wr){
		.wr_id = n, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
	};
	wr.wr.rdma.remote_addr = (uintptr_t)self->b.dev.buf + n * len;
	wr.wr.rdma.rkey = self->b.dev.mr->rkey;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));

	expect_reads_in_order(_metadata, &self->a, &self->b, n, len);
	ASSERT_WC(self->a.scq, self->a.qp, n, IBV_WC_LOC_PROT_ERR,
		  0, NULL);
	expect_qp_err(_metadata, self->a.qp);
	for (i = 0; i < wlen && self->b.dev.buf[n * len + i] == 0x3c; i++)
		;
	EXPECT_EQ(wlen, i) TH_LOG("WRITE target byte %u written", i);
	expect_buffer_kept(_metadata, self->a.dev.buf, n * len);
	munmap(p, wlen);
}

/*
 * A READ into a local SGE whose lkey names no MR (deregistered): the
 * requester finds it when the data arrives, LOC_PROT_ERR, the QP in ERR,
 * the buffer untouched.
 */
TEST_F_TIMEOUT(rc, read_bad_lkey, TEST_TIMEOUT_S)
{
	const uint32_t len = 65536;
	struct seg src = { 0, len };
	struct ibv_send_wr wr = {
		.wr_id = 7, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_sge sge;
	struct ibv_send_wr *bad;
	uint32_t lkey, i;
	uint8_t *p;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	p = stale_lkey_buffer(&self->a, len, &lkey);
	ASSERT_NE(NULL, p) TH_LOG("buffer: %s", strerror(errno));
	memset(p, 0x5a, len);
	fill_src(self->b.dev.buf, &src, 1, 1400);
	sge = (struct ibv_sge){ (uintptr_t)p, len, lkey };
	wr.sg_list = &sge;
	wr.wr.rdma.remote_addr = (uintptr_t)self->b.dev.buf;
	wr.wr.rdma.rkey = self->b.dev.mr->rkey;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	ASSERT_WC(self->a.scq, self->a.qp, 7, IBV_WC_LOC_PROT_ERR, 0,
		  NULL);
	expect_qp_err(_metadata, self->a.qp);
	for (i = 0; i < len && p[i] == 0x5a; i++)
		;
	EXPECT_EQ(len, i) TH_LOG("byte %u written", i);
	munmap(p, len);
}

/*
 * A SEND longer than the receive buffer: LOC_LEN_ERR at the receiver,
 * REM_INV_REQ_ERR at the sender, both QPs in ERR.
 */
/* The next async event of @ctx within POLL_TIMEOUT_S; 0 if none came. */
static int next_async_event(struct ibv_context *ctx, int timeout_ms,
			    struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int flags = fcntl(ctx->async_fd, F_GETFL);

	if (flags < 0 || fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK))
		return -1;
	if (poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
	return ibv_get_async_event(ctx, ev) ? -1 : 1;
}

/*
 * @n SENDs of 64 bytes from a; b's SRQ receives are consumed in order, the
 * first of them the @k-th posted (at b's buffer + 4096 * (k + 1)).
 */
static void srq_sends(struct __test_metadata *_metadata, struct side *a,
		      struct side *b, int n, int k)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < n; i++, k++) {
		struct seg l = { GUARD, 64 }, r = { 4096 * (k + 1), 64 };
		uint32_t seed = 0x700 + k;

		fill_src(a->dev.buf, &l, 1, seed);
		poison_dst(b->dev.buf, &r, 1, seed);
		post_send_one(_metadata, a, l.off, l.len, 0x5000 + k);
		ASSERT_WC(a->scq, a->qp, 0x5000 + k, IBV_WC_SUCCESS,
			  IBV_WC_SEND, NULL);
		ASSERT_WC(b->rcq, b->qp, k, IBV_WC_SUCCESS,
			  IBV_WC_RECV, &wc);
		EXPECT_EQ(64, wc.byte_len);
		EXPECT_EQ(0, check_dst(_metadata, b->dev.buf, &r, 1, 64, seed));
	}
}

/*
 * SRQ limit: armed at 4 with 8 receives posted, it stays quiet while 4 are
 * left and raises IBV_EVENT_SRQ_LIMIT_REACHED, once, when 3 are; the limit
 * then reads 0 (disarmed).
 */
TEST_F_TIMEOUT(rc, srq_limit, TEST_TIMEOUT_S)
{
	struct side *a = &self->a, *b = &self->b;
	struct ibv_srq_init_attr sinit = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_qp_init_attr init = {
		.send_cq = b->scq, .recv_cq = b->rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_srq_attr sattr = { .srq_limit = 4 };
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	int i;

	srq = ibv_create_srq(b->dev.pd, &sinit);
	ASSERT_NE(NULL, srq) TH_LOG("create_srq: %s", strerror(errno));
	ibv_destroy_qp(b->qp);
	init.srq = srq;
	b->qp = ibv_create_qp(b->dev.pd, &init);
	ASSERT_NE(NULL, b->qp) TH_LOG("create_qp: %s", strerror(errno));
	pair_connect(_metadata, a, b, &conn_default);
	for (i = 0; i < 8; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)b->dev.buf + 4096 * (i + 1), .length = 64,
			.lkey = b->dev.mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;

		ASSERT_EQ(0, ibv_post_srq_recv(srq, &wr, &bad));
	}
	ASSERT_EQ(0, ibv_modify_srq(srq, &sattr, IBV_SRQ_LIMIT));

	srq_sends(_metadata, a, b, 4, 0);
	/* 4 left: not below the limit. */
	ASSERT_EQ(0, next_async_event(b->dev.ctx, 500, &ev))
		TH_LOG("event %s with 4 receives left",
		       ibv_event_type_str(ev.event_type));
	srq_sends(_metadata, a, b, 1, 4);
	ASSERT_EQ(1, next_async_event(b->dev.ctx, POLL_TIMEOUT_S * 1000, &ev))
		TH_LOG("no SRQ limit event with 3 receives left");
	EXPECT_EQ(IBV_EVENT_SRQ_LIMIT_REACHED, ev.event_type);
	EXPECT_EQ(srq, ev.element.srq);
	ibv_ack_async_event(&ev);
	ASSERT_EQ(0, ibv_query_srq(srq, &sattr));
	EXPECT_EQ(0, sattr.srq_limit);
	/* Disarmed: no second event. */
	srq_sends(_metadata, a, b, 1, 5);
	EXPECT_EQ(0, next_async_event(b->dev.ctx, 500, &ev));

	ibv_destroy_qp(b->qp);
	b->qp = NULL;
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

TEST_F_TIMEOUT(rc, recv_too_short, TEST_TIMEOUT_S)
{
	struct seg r = { 64, 16 };
	struct ibv_recv_wr rwr = {}, *rbad;
	struct ibv_sge rsge;

	pair_connect(_metadata, &self->a, &self->b, &conn_default);
	poison_dst(self->b.dev.buf, &r, 1, 1000);
	to_sge(&self->b, &r, 1, &rsge);
	rwr.wr_id = 2;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	ASSERT_EQ(0, ibv_post_recv(self->b.qp, &rwr, &rbad));
	post_send_one(_metadata, &self->a, 0, 100, 1);
	ASSERT_WC(self->b.rcq, self->b.qp, 2, IBV_WC_LOC_LEN_ERR, 0, NULL);
	ASSERT_WC(self->a.scq, self->a.qp, 1, IBV_WC_REM_INV_REQ_ERR,
		  0, NULL);
	expect_qp_err(_metadata, self->a.qp);
	expect_qp_err(_metadata, self->b.qp);
}

TEST_HARNESS_MAIN
