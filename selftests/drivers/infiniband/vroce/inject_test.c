// SPDX-License-Identifier: GPL-2.0
/*
 * The live end of the injector test (inject.sh, roce.py live): an RC QP
 * pair and a UD QP on each of two devices, connected over RoCE v2, held
 * while roce.py sends bad frames at the device under test's QPs.
 *
 *   VROCE_DEV, VROCE_PEER_DEV  the device under test (side a) and its peer
 *   VROCE_GID, VROCE_PEER_GID  their GID indices (default: the first RoCE
 *                              v2 IPv4 GID)
 *
 * It prints one line, "rc_qpn=N rc_psn=N ud_qpn=N qkey=N peer_rc_qpn=N
 * peer_ud_qpn=N mtu=N" (a's QPs, the PSN a's RC QP expects next, the UD
 * Q_Key), then answers commands read from stdin, one line each, with a
 * line that starts with "ok" or "bad":
 *
 *   idle           no completion on any CQ of either side, every QP in RTS
 *   ud_recv LEN    a's UD QP received one datagram of LEN bytes of the
 *                  pattern i & 0xff from the peer's UD QP (its source QPN)
 *   seq_error      a spare RC pair: its a end's QPN, the PSN that end
 *                  expects and its b end's QPN ("ok qpn=N psn=N
 *                  peer_qpn=N"); "seq_check" then checks that the a end
 *                  went to ERR and flushed its receive WQE
 *   traffic        the same QPs carry real traffic, byte for byte: RC SEND
 *                  and RDMA WRITE both ways, RDMA READ, UD SEND both ways;
 *                  then idle
 *   read_nak_post  an RC QP of a whose peer never answers (its QPN is a
 *                  b QP left in RESET) posts an RDMA READ of READ_NAK_MTUS
 *                  path MTUs ("ok qpn=N peer_qpn=N len=N"): the injector
 *                  plays its responder
 *   read_nak_check SEED
 *                  "ok pending" if that READ has not completed within
 *                  CHECK_WAIT_S and its QP is in RTS; "ok done" if it
 *                  completed successfully with exactly the bytes
 *                  pattern(SEED, i); else bad (success with other bytes
 *                  is bad)
 *   dup_read_setup an RC QP of a whose peer never answers, for the
 *                  injector to send READ requests at: "ok qpn=N psn=N
 *                  peer_qpn=N va=N rkey=N rkey2=N seed=N" (the PSN it
 *                  expects, DUP_LEN bytes of pattern(seed, i) at va, and
 *                  two rkeys, of two MRs over the same buffer)
 *   dup_read_check no completion on that QP's CQ, the QP in RTS
 *   dup_read_dereg deregister the MR of rkey2
 *   dup_read_err   that QP went to ERR
 *   state_setup    an RC QP of a in RESET, for the injector to send frames
 *                  at in each state it moves through ("ok qpn=N psn=N
 *                  peer_qpn=N va=N rkey=N seed=N len=N": the PSN it will
 *                  expect first; len bytes of pattern(seed, i) at va)
 *   state_to S     move it to S (reset, init, rtr, rts, sqd, err): at init
 *                  ST_RECVS receives are posted; at err their flushes are
 *                  reaped, and must be all that is on the CQ
 *   state_check S SEED RECVS
 *                  it is in S, the len bytes at va are pattern(SEED, i),
 *                  its CQ holds exactly RECVS more successful receives of
 *                  len bytes of pattern(SEED + 1, i), and nothing else
 *   err_race_setup an RC QP of a with ER_RECVS receives posted (wr_id
 *                  400 on), for the injector to start a SEND at ("ok
 *                  qpn=N psn=N peer_qpn=N")
 *   err_race       with debugfs err_delay_us holding the QP between the
 *                  state change and its flushes, move it to ERR while a
 *                  second thread posts a receive and a SEND (a doorbell in
 *                  ERR) into that window; then every receive completes
 *                  flushed, in the order posted: the one the SEND took
 *                  first
 *   quit           exit
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "vroce_test.h"

#define POLL_TIMEOUT_S	60
#define BUF_SIZE	(2u << 20)
#define DEPTH		64
#define RC_RECVS	4
#define RC_RECV_LEN	16384
#define UD_RECVS	4
#define UD_RECV_LEN	(40 + 4096)
#define GRH_BYTES	40
#define QKEY		0x11223344u
#define A_SQ_PSN	0x00fff0u
#define B_SQ_PSN	0x345678u
#define SPARE_PSN	0x00abcdu
/* The PSN the duplicate READ QP expects first: READs there wrap around. */
#define DUP_PSN		0xfffffeu
#define READ_NAK_MTUS	4
#define DUP_LEN		(64u << 10)
/* The QP moved through every state: its first PSN, its buffers. */
#define ST_PSN		0xfffffdu
#define ST_LEN		64u
#define ST_RECVS	4u
#define ST_RECV_LEN	256u
#define ST_SEED		41u
/* The QP a message stops half way at, then moved to ERR. */
#define ER_PSN		0x001234u
#define ER_RECVS	3u
#define ER_RECV_LEN	(16u << 10)
#define ER_DELAY_US	300000u
/* How long read_nak_check waits for a completion that should not come. */
#define CHECK_WAIT_S	0.3
/* ACK timeout 4.096 us << 19: 2.1 s, longer than any injector step. */
#define SLOW_TIMEOUT	19

/* Buffer layout: where each kind of data goes. */
#define OFF_RC_RECV	0u
#define OFF_UD_RECV	(128u << 10)
#define OFF_SRC		(256u << 10)
#define OFF_WRITE	(512u << 10)
#define OFF_READ	(768u << 10)
#define OFF_NAK_READ	(896u << 10)
#define OFF_DUP		(960u << 10)
#define OFF_STATE	(1024u << 10)	/* ST_LEN bytes, then ST_RECVS receives */
#define OFF_ERR_RACE	(1536u << 10)

struct side {
	const char *name;
	struct vroce_dev dev;
	struct ibv_cq *scq, *rcq, *ucq, *xcq;
	struct ibv_qp *rc, *ud, *spare;
	struct ibv_ah *ah;
	uint64_t next_wr;
	unsigned int rc_rx, ud_rx;	/* receives completed: the next slot */
};

static struct side a = { .name = "a" }, b = { .name = "b" };

static int fail(const char *fmt, ...)
{
	va_list ap;

	printf("bad: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return -1;
}

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	return (i * 131 + seed * 7 + (i >> 8)) & 0xff;
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	vroce_fill(p, len, seed, pattern);
}

/* The index of the first byte that differs, or -1. */
static long mismatch(const uint8_t *p, uint32_t len, uint32_t seed)
{
	return vroce_mismatch(p, len, seed, pattern);
}

static int expect_wc(struct ibv_cq *cq, const char *what, uint64_t wr_id,
		     enum ibv_wc_opcode opcode, struct ibv_wc *out)
{
	if (vroce_expect_wc(cq, NULL, wr_id, IBV_WC_SUCCESS, opcode,
			    POLL_TIMEOUT_S, out))
		return fail("%s", what);
	return 0;
}

static struct ibv_qp *make_qp(struct side *s, enum ibv_qp_type type,
			      struct ibv_cq *scq, struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = type,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(s->dev.pd, &init);
}

static int side_open(struct side *s, const char *dev, const char *gid_var)
{
	if (vroce_dev_open(&s->dev, dev, gid_var) ||
	    vroce_dev_buf(&s->dev, dev, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ))
		return fail("cannot open %s", dev ? dev : "(VROCE_DEV unset)");
	s->scq = ibv_create_cq(s->dev.ctx, DEPTH, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->dev.ctx, DEPTH, NULL, NULL, 0);
	s->ucq = ibv_create_cq(s->dev.ctx, DEPTH, NULL, NULL, 0);
	s->xcq = ibv_create_cq(s->dev.ctx, DEPTH, NULL, NULL, 0);
	if (!s->scq || !s->rcq || !s->ucq || !s->xcq)
		return fail("%s: cq: %s", dev, strerror(errno));
	s->rc = make_qp(s, IBV_QPT_RC, s->scq, s->rcq);
	s->ud = make_qp(s, IBV_QPT_UD, s->ucq, s->ucq);
	s->spare = make_qp(s, IBV_QPT_RC, s->xcq, s->xcq);
	if (!s->rc || !s->ud || !s->spare)
		return fail("%s: create_qp: %s", dev, strerror(errno));
	return 0;
}

/*
 * From @s towards QP @dest_qpn of @peer: one RDMA READ in flight each way,
 * no atomics.
 */
static struct vroce_rc_path path_to(struct side *s, struct side *peer,
				    uint32_t dest_qpn, uint32_t sq_psn,
				    uint32_t rq_psn)
{
	struct vroce_rc_path p = {
		VROCE_RC_DEFAULTS,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ,
		.rd_atomic = 1, .dest_rd_atomic = 1,
		.dest_qpn = dest_qpn, .dgid = peer->dev.gid,
		.sgid_idx = s->dev.gid_idx,
		.mtu = s->dev.mtu < peer->dev.mtu ? s->dev.mtu : peer->dev.mtu,
		.sq_psn = sq_psn, .rq_psn = rq_psn,
	};

	return p;
}

static int rc_connect(struct side *s, struct ibv_qp *qp, struct side *peer,
		      struct ibv_qp *pqp, uint32_t sq_psn, uint32_t rq_psn)
{
	struct vroce_rc_path p = path_to(s, peer, pqp->qp_num, sq_psn, rq_psn);

	return vroce_rc_connect(qp, &p) ? -1 : 0;
}

static int ud_ready(struct side *s, struct side *peer)
{
	struct ibv_ah_attr ah = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = peer->dev.gid, .sgid_index = s->dev.gid_idx,
			 .hop_limit = 64 },
	};

	if (vroce_ud_connect(s->ud, QKEY, 0))
		return -1;
	s->ah = ibv_create_ah(s->dev.pd, &ah);
	return s->ah ? 0 : -1;
}

static int post_recv(struct side *s, struct ibv_qp *qp, uint64_t wr_id,
		     uint32_t off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->dev.buf + off, .length = len,
		.lkey = s->dev.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* Receive WQE i of the RC QP (wr_id i) or the UD QP (wr_id 100 + i). */
static int post_rc_recv(struct side *s, unsigned int i)
{
	return post_recv(s, s->rc, i, OFF_RC_RECV + i * RC_RECV_LEN,
			 RC_RECV_LEN);
}

static int post_ud_recv(struct side *s, unsigned int i)
{
	return post_recv(s, s->ud, 100 + i, OFF_UD_RECV + i * UD_RECV_LEN,
			 UD_RECV_LEN);
}

static int setup(void)
{
	unsigned int i;

	if (side_open(&a, getenv("VROCE_DEV"), "VROCE_GID") ||
	    side_open(&b, getenv("VROCE_PEER_DEV"), "VROCE_PEER_GID"))
		return -1;
	if (rc_connect(&a, a.rc, &b, b.rc, A_SQ_PSN, B_SQ_PSN) ||
	    rc_connect(&b, b.rc, &a, a.rc, B_SQ_PSN, A_SQ_PSN) ||
	    rc_connect(&a, a.spare, &b, b.spare, A_SQ_PSN, SPARE_PSN) ||
	    rc_connect(&b, b.spare, &a, a.spare, SPARE_PSN, A_SQ_PSN) ||
	    ud_ready(&a, &b) || ud_ready(&b, &a))
		return fail("connect: %s", strerror(errno));
	for (i = 0; i < RC_RECVS; i++)
		if (post_rc_recv(&a, i) || post_rc_recv(&b, i))
			return fail("post_recv RC");
	for (i = 0; i < UD_RECVS; i++)
		if (post_ud_recv(&a, i) || post_ud_recv(&b, i))
			return fail("post_recv UD");
	if (post_recv(&a, a.spare, 200, OFF_SRC, 64))
		return fail("post_recv spare");
	return 0;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return (enum ibv_qp_state)-1;
	return attr.qp_state;
}

static int cq_empty(struct side *s, struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	if (n)
		return fail("%s %s CQ: completion wr_id %llu status %s", s->name,
			    what, (unsigned long long)wc.wr_id,
			    n < 0 ? "poll error" : ibv_wc_status_str(wc.status));
	return 0;
}

static int side_idle(struct side *s)
{
	if (cq_empty(s, s->scq, "RC send") || cq_empty(s, s->rcq, "RC recv") ||
	    cq_empty(s, s->ucq, "UD"))
		return -1;
	if (qp_state(s->rc) != IBV_QPS_RTS)
		return fail("%s RC QP in state %d", s->name, qp_state(s->rc));
	if (qp_state(s->ud) != IBV_QPS_RTS)
		return fail("%s UD QP in state %d", s->name, qp_state(s->ud));
	return 0;
}

static int cmd_idle(void)
{
	return side_idle(&a) || side_idle(&b) ? -1 : 0;
}

/* The receive WQE the next completion takes: WQEs are reposted in turn. */
static unsigned int rc_slot(struct side *s)
{
	return s->rc_rx++ % RC_RECVS;
}

static unsigned int ud_slot(struct side *s)
{
	return s->ud_rx++ % UD_RECVS;
}

/* A datagram from the injector, from QPN @src_qpn in its DETH. */
static int cmd_ud_recv(uint32_t len, uint32_t src_qpn)
{
	unsigned int slot = ud_slot(&a);
	struct ibv_wc wc;
	uint32_t j;
	uint8_t *p;

	if (expect_wc(a.ucq, "UD receive", 100 + slot, IBV_WC_RECV, &wc))
		return -1;
	if (wc.byte_len != GRH_BYTES + len || wc.src_qp != src_qpn)
		return fail("byte_len %u src_qp %#x, want %u and %#x",
			    wc.byte_len, wc.src_qp, GRH_BYTES + len, src_qpn);
	p = a.dev.buf + OFF_UD_RECV + slot * UD_RECV_LEN + GRH_BYTES;
	for (j = 0; j < len; j++)
		if (p[j] != (j & 0xff))
			return fail("payload byte %u is %#x", j, p[j]);
	return post_ud_recv(&a, slot) ? fail("post_recv") : 0;
}

static int post_send(struct side *s, struct ibv_qp *qp,
		     enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		     uint64_t raddr, uint32_t rkey, uint64_t *wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->dev.buf + off, .length = len,
		.lkey = s->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = ++s->next_wr, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	*wr_id = wr.wr_id;
	return ibv_post_send(qp, &wr, &bad);
}

/* RC SEND of @len bytes from @s to @d. */
static int rc_send(struct side *s, struct side *d, uint32_t len,
		   uint32_t seed)
{
	unsigned int slot = rc_slot(d);
	struct ibv_wc wc;
	uint64_t id;
	long bad;

	fill(s->dev.buf + OFF_SRC, len, seed);
	if (post_send(s, s->rc, IBV_WR_SEND, OFF_SRC, len, 0, 0, &id))
		return fail("post_send SEND %s", s->name);
	if (expect_wc(s->scq, "SEND", id, IBV_WC_SEND, NULL) ||
	    expect_wc(d->rcq, "RECV", slot, IBV_WC_RECV, &wc))
		return -1;
	if (wc.byte_len != len)
		return fail("RECV %s: %u bytes, want %u", d->name, wc.byte_len,
			    len);
	bad = mismatch(d->dev.buf + OFF_RC_RECV + slot * RC_RECV_LEN, len, seed);
	if (bad >= 0)
		return fail("SEND %s->%s: byte %ld differs", s->name, d->name,
			    bad);
	return post_rc_recv(d, slot) ? fail("post_recv") : 0;
}

/* RDMA WRITE or READ of @len bytes by @s at d's buffer. */
static int rc_rdma(struct side *s, struct side *d, enum ibv_wr_opcode op,
		   uint32_t len, uint32_t seed)
{
	int write = op == IBV_WR_RDMA_WRITE;
	uint32_t loff = write ? OFF_SRC : OFF_READ;
	uint32_t roff = write ? OFF_WRITE : OFF_SRC;
	uint8_t *src = write ? s->dev.buf + OFF_SRC : d->dev.buf + OFF_SRC;
	uint8_t *dst = write ? d->dev.buf + OFF_WRITE : s->dev.buf + OFF_READ;
	uint64_t id;
	long bad;

	fill(src, len, seed);
	memset(dst, 0, len);
	if (post_send(s, s->rc, op, loff, len, (uintptr_t)d->dev.buf + roff,
		      d->dev.mr->rkey, &id))
		return fail("post_send RDMA %s", s->name);
	if (expect_wc(s->scq, write ? "WRITE" : "READ", id,
		      write ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ, NULL))
		return -1;
	bad = mismatch(dst, len, seed);
	if (bad >= 0)
		return fail("%s by %s: byte %ld differs", write ? "WRITE" : "READ",
			    s->name, bad);
	return 0;
}

/* UD SEND of @len bytes from @s to @d. */
static int ud_send(struct side *s, struct side *d, uint32_t len,
		   uint32_t seed)
{
	unsigned int slot = ud_slot(d);
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->dev.buf + OFF_SRC, .length = len,
		.lkey = s->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = ++s->next_wr, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	long diff;

	fill(s->dev.buf + OFF_SRC, len, seed);
	wr.wr.ud.ah = s->ah;
	wr.wr.ud.remote_qpn = d->ud->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(s->ud, &wr, &bad))
		return fail("post_send UD %s", s->name);
	if (expect_wc(s->ucq, "UD SEND", wr.wr_id, IBV_WC_SEND, NULL) ||
	    expect_wc(d->ucq, "UD RECV", 100 + slot, IBV_WC_RECV, &wc))
		return -1;
	if (wc.byte_len != GRH_BYTES + len || wc.src_qp != s->ud->qp_num)
		return fail("UD RECV %s: %u bytes from %#x", d->name,
			    wc.byte_len, wc.src_qp);
	diff = mismatch(d->dev.buf + OFF_UD_RECV + slot * UD_RECV_LEN + GRH_BYTES,
			len, seed);
	if (diff >= 0)
		return fail("UD %s->%s: byte %ld differs", s->name, d->name,
			    diff);
	return post_ud_recv(d, slot) ? fail("post_recv") : 0;
}

static int cmd_traffic(void)
{
	/* b -> a first: the direction the injected frames took. */
	if (rc_send(&b, &a, 3000, 1) || rc_send(&a, &b, 5000, 2) ||
	    rc_send(&b, &a, 1, 3) ||
	    rc_rdma(&b, &a, IBV_WR_RDMA_WRITE, 10000, 4) ||
	    rc_rdma(&a, &b, IBV_WR_RDMA_WRITE, 7000, 5) ||
	    rc_rdma(&a, &b, IBV_WR_RDMA_READ, 9000, 6) ||
	    rc_rdma(&b, &a, IBV_WR_RDMA_READ, 3333, 7) ||
	    ud_send(&b, &a, 1000, 8) || ud_send(&a, &b, 700, 9) ||
	    ud_send(&b, &a, 4, 10))
		return -1;
	return cmd_idle();
}

/*
 * A request with valid headers but out of sequence (the injector's SEND
 * MIDDLE at the expected PSN) is an invalid request (IBTA class B): the
 * spare a end NAKs it and goes to ERR, flushing its receive WQE.
 */
static int cmd_seq_check(void)
{
	double end = vroce_now_s() + POLL_TIMEOUT_S;
	struct ibv_wc wc;

	while (qp_state(a.spare) != IBV_QPS_ERR && vroce_now_s() < end)
		usleep(1000);
	if (qp_state(a.spare) != IBV_QPS_ERR)
		return fail("spare QP in state %d, want ERR", qp_state(a.spare));
	if (vroce_poll_one(a.xcq, &wc, POLL_TIMEOUT_S) != 1 || wc.wr_id != 200 ||
	    wc.status != IBV_WC_WR_FLUSH_ERR)
		return fail("no flushed receive on the spare QP");
	return 0;
}

/*
 * The QPs of the READ NAK and duplicate READ commands, made when first
 * asked for: RC QPs of a connected to a QP of b that stays in RESET, so
 * nothing answers them but the injector.
 */
static struct ibv_qp *dead, *nak_qp, *dup_qp;
static struct ibv_cq *nak_cq, *dup_cq;
static struct ibv_mr *dup_mr2;
static uint64_t nak_wr_id;

/* To RTS like rc_connect(), with an ACK timeout of SLOW_TIMEOUT. */
static int slow_connect(struct ibv_qp *qp, uint32_t dest_qpn, uint32_t rq_psn)
{
	struct vroce_rc_path p = path_to(&a, &b, dest_qpn, A_SQ_PSN, rq_psn);

	p.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	p.timeout = SLOW_TIMEOUT;
	return vroce_rc_connect(qp, &p) ? -1 : 0;
}

static struct ibv_qp *lonely_qp(struct ibv_cq **cq, uint32_t rq_psn)
{
	struct ibv_qp *qp;

	if (!dead)
		dead = make_qp(&b, IBV_QPT_RC, b.xcq, b.xcq);
	*cq = ibv_create_cq(a.dev.ctx, DEPTH, NULL, NULL, 0);
	if (!dead || !*cq)
		return NULL;
	qp = make_qp(&a, IBV_QPT_RC, *cq, *cq);
	if (!qp || slow_connect(qp, dead->qp_num, rq_psn))
		return NULL;
	return qp;
}

static uint32_t path_mtu(void)
{
	return 128u << (a.dev.mtu < b.dev.mtu ? a.dev.mtu : b.dev.mtu);
}

static int cmd_read_nak_post(void)
{
	uint32_t len = READ_NAK_MTUS * path_mtu();

	if (!nak_qp)
		nak_qp = lonely_qp(&nak_cq, 0);
	if (!nak_qp)
		return fail("READ NAK QP: %s", strerror(errno));
	memset(a.dev.buf + OFF_NAK_READ, 0, len);
	/* The injector answers for any address and rkey. */
	if (post_send(&a, nak_qp, IBV_WR_RDMA_READ, OFF_NAK_READ, len, 0x1000,
		      0x1234, &nak_wr_id))
		return fail("post_send READ: %s", strerror(errno));
	printf("ok qpn=%#x peer_qpn=%#x len=%u\n", nak_qp->qp_num,
	       dead->qp_num, len);
	return 1;
}

/* Success is success only with the exact bytes: that is what users see. */
static int cmd_read_nak_check(uint32_t seed)
{
	uint32_t len = READ_NAK_MTUS * path_mtu();
	struct ibv_wc wc;
	long bad;

	if (!nak_qp)
		return fail("no READ posted");
	if (vroce_poll_one(nak_cq, &wc, CHECK_WAIT_S) != 1) {
		if (qp_state(nak_qp) != IBV_QPS_RTS)
			return fail("no completion, QP in state %d",
				    qp_state(nak_qp));
		printf("ok pending\n");
		return 1;
	}
	if (wc.wr_id != nak_wr_id || wc.status != IBV_WC_SUCCESS)
		return fail("READ wr_id %llu completed: %s",
			    (unsigned long long)wc.wr_id,
			    ibv_wc_status_str(wc.status));
	bad = mismatch(a.dev.buf + OFF_NAK_READ, len, seed);
	if (bad >= 0)
		return fail("READ completed successfully, but byte %ld of %u is %#x, not %#x",
			    bad, len, a.dev.buf[OFF_NAK_READ + bad],
			    pattern(seed, bad));
	printf("ok done\n");
	return 1;
}

static int cmd_dup_read_setup(void)
{
	const uint32_t seed = 21;

	if (!dup_qp)
		dup_qp = lonely_qp(&dup_cq, DUP_PSN);
	if (!dup_qp)
		return fail("duplicate READ QP: %s", strerror(errno));
	dup_mr2 = ibv_reg_mr(a.dev.pd, a.dev.buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_READ);
	if (!dup_mr2)
		return fail("second MR: %s", strerror(errno));
	fill(a.dev.buf + OFF_DUP, DUP_LEN, seed);
	printf("ok qpn=%#x psn=%#x peer_qpn=%#x va=%#llx rkey=%#x rkey2=%#x seed=%u\n",
	       dup_qp->qp_num, DUP_PSN, dead->qp_num,
	       (unsigned long long)(uintptr_t)(a.dev.buf + OFF_DUP), a.dev.mr->rkey,
	       dup_mr2->rkey, seed);
	return 1;
}

static int cmd_dup_read_check(void)
{
	struct ibv_wc wc;
	int n;

	if (!dup_qp)
		return fail("no duplicate READ QP");
	n = ibv_poll_cq(dup_cq, 1, &wc);
	if (n)
		return fail("completion on the duplicate READ QP: %s",
			    n < 0 ? "poll error" : ibv_wc_status_str(wc.status));
	if (qp_state(dup_qp) != IBV_QPS_RTS)
		return fail("duplicate READ QP in state %d", qp_state(dup_qp));
	return 0;
}

static int cmd_dup_read_dereg(void)
{
	if (!dup_mr2 || ibv_dereg_mr(dup_mr2))
		return fail("dereg_mr: %s", strerror(errno));
	dup_mr2 = NULL;
	return 0;
}

static int cmd_dup_read_err(void)
{
	double end = vroce_now_s() + POLL_TIMEOUT_S;

	while (dup_qp && qp_state(dup_qp) != IBV_QPS_ERR && vroce_now_s() < end)
		usleep(1000);
	if (!dup_qp || qp_state(dup_qp) != IBV_QPS_ERR)
		return fail("duplicate READ QP not in ERR");
	return 0;
}

static struct ibv_qp *st_qp;
static struct ibv_cq *st_cq;
static unsigned int st_recvd;	/* receives of st_qp completed */

static int cmd_state_setup(void)
{
	if (!dead)
		dead = make_qp(&b, IBV_QPT_RC, b.xcq, b.xcq);
	st_cq = ibv_create_cq(a.dev.ctx, DEPTH, NULL, NULL, 0);
	if (!dead || !st_cq)
		return fail("state QP's CQ: %s", strerror(errno));
	st_qp = make_qp(&a, IBV_QPT_RC, st_cq, st_cq);
	if (!st_qp)
		return fail("state QP: %s", strerror(errno));
	fill(a.dev.buf + OFF_STATE, ST_LEN, ST_SEED);
	printf("ok qpn=%#x psn=%#x peer_qpn=%#x va=%#llx rkey=%#x seed=%u len=%u\n",
	       st_qp->qp_num, ST_PSN, dead->qp_num,
	       (unsigned long long)(uintptr_t)(a.dev.buf + OFF_STATE), a.dev.mr->rkey,
	       ST_SEED, ST_LEN);
	return 1;
}

static int state_init(void)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	unsigned int i;

	if (ibv_modify_qp(st_qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return fail("to INIT: %s", strerror(errno));
	st_recvd = 0;
	for (i = 0; i < ST_RECVS; i++)
		if (post_recv(&a, st_qp, 300 + i,
			      OFF_STATE + ST_LEN + i * ST_RECV_LEN,
			      ST_RECV_LEN))
			return fail("post_recv: %s", strerror(errno));
	return 0;
}

static int state_rtr(void)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .dest_qp_num = dead->qp_num,
		.path_mtu = a.dev.mtu < b.dev.mtu ? a.dev.mtu : b.dev.mtu, .rq_psn = ST_PSN,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = b.dev.gid, .sgid_index = a.dev.gid_idx,
				      .hop_limit = 64 } },
	};

	if (ibv_modify_qp(st_qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return fail("to RTR: %s", strerror(errno));
	return 0;
}

static int state_rts(void)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS, .timeout = SLOW_TIMEOUT,
		.retry_cnt = 7, .rnr_retry = 7, .sq_psn = A_SQ_PSN,
		.max_rd_atomic = 1,
	};

	if (ibv_modify_qp(st_qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return fail("to RTS: %s", strerror(errno));
	return 0;
}

/* To ERR: the receives not consumed are flushed, and nothing else. */
static int state_err(void)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	unsigned int n;
	struct ibv_wc wc;

	if (ibv_modify_qp(st_qp, &attr, IBV_QP_STATE))
		return fail("to ERR: %s", strerror(errno));
	for (n = st_recvd; n < ST_RECVS; n++) {
		if (vroce_poll_one(st_cq, &wc, POLL_TIMEOUT_S) != 1)
			return fail("receive %u not flushed", n);
		if (wc.wr_id != 300 + n || wc.status != IBV_WC_WR_FLUSH_ERR)
			return fail("flush: wr_id %llu %s, want %u flushed",
				    (unsigned long long)wc.wr_id,
				    ibv_wc_status_str(wc.status), 300 + n);
	}
	return 0;
}

static int cmd_state_to(const char *to)
{
	struct ibv_qp_attr attr = { 0 };

	if (!st_qp)
		return fail("no state QP");
	if (!strcmp(to, "init"))
		return state_init();
	if (!strcmp(to, "rtr"))
		return state_rtr();
	if (!strcmp(to, "rts"))
		return state_rts();
	if (!strcmp(to, "err"))
		return state_err();
	if (!strcmp(to, "reset"))
		attr.qp_state = IBV_QPS_RESET;
	else if (!strcmp(to, "sqd"))
		attr.qp_state = IBV_QPS_SQD;
	else
		return fail("unknown state %s", to);
	if (ibv_modify_qp(st_qp, &attr, IBV_QP_STATE))
		return fail("to %s: %s", to, strerror(errno));
	return 0;
}

static const char *const st_names[] = {
	[IBV_QPS_RESET] = "reset", [IBV_QPS_INIT] = "init",
	[IBV_QPS_RTR] = "rtr", [IBV_QPS_RTS] = "rts", [IBV_QPS_SQD] = "sqd",
	[IBV_QPS_SQE] = "sqe", [IBV_QPS_ERR] = "err",
};

static int cmd_state_check(const char *want, uint32_t seed,
			   unsigned int recvs)
{
	enum ibv_qp_state st = qp_state(st_qp);
	struct ibv_wc wc;
	uint32_t off;
	long bad;
	int n;

	if (st > IBV_QPS_ERR || strcmp(st_names[st], want))
		return fail("state QP in state %d, want %s", st, want);
	bad = mismatch(a.dev.buf + OFF_STATE, ST_LEN, seed);
	if (bad >= 0)
		return fail("byte %ld at va is %#x, want %#x", bad,
			    a.dev.buf[OFF_STATE + bad], pattern(seed, bad));
	for (; recvs; recvs--, st_recvd++) {
		if (vroce_poll_one(st_cq, &wc, POLL_TIMEOUT_S) != 1)
			return fail("receive %u did not complete", st_recvd);
		off = OFF_STATE + ST_LEN + st_recvd * ST_RECV_LEN;
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 300 + st_recvd ||
		    wc.byte_len != ST_LEN)
			return fail("receive: wr_id %llu %s %u bytes",
				    (unsigned long long)wc.wr_id,
				    ibv_wc_status_str(wc.status), wc.byte_len);
		if (mismatch(a.dev.buf + off, ST_LEN, seed + 1) >= 0)
			return fail("received bytes are not the SEND's");
	}
	n = ibv_poll_cq(st_cq, 1, &wc);
	if (n)
		return fail("unexpected completion on the state QP: %s",
			    n < 0 ? "poll error" : ibv_wc_status_str(wc.status));
	return 0;
}

static struct ibv_qp *er_qp;
static struct ibv_cq *er_cq;

static int cmd_err_race_setup(void)
{
	unsigned int i;

	er_qp = lonely_qp(&er_cq, ER_PSN);
	if (!er_qp)
		return fail("ERR race QP: %s", strerror(errno));
	for (i = 0; i < ER_RECVS; i++)
		if (post_recv(&a, er_qp, 400 + i, OFF_ERR_RACE + i * ER_RECV_LEN,
			      ER_RECV_LEN))
			return fail("post_recv: %s", strerror(errno));
	printf("ok qpn=%#x psn=%#x peer_qpn=%#x\n", er_qp->qp_num, ER_PSN,
	       dead->qp_num);
	return 1;
}

static void *err_race_modify(void *arg)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	return (void *)(long)ibv_modify_qp(er_qp, &attr, IBV_QP_STATE);
}

/* The receive completions in order; the SEND's (send_id) is skipped. */
static int err_race_reap(uint64_t send_id)
{
	char got[64] = "";
	unsigned int n = 0, len = 0;
	struct ibv_wc wc;
	int bad = 0;

	while (n < ER_RECVS + 1) {
		if (vroce_poll_one(er_cq, &wc, POLL_TIMEOUT_S) != 1)
			return fail("%u of %u receives flushed: %s", n,
				    ER_RECVS + 1, got);
		if (wc.wr_id == send_id)
			continue;
		len += snprintf(got + len, sizeof(got) - len, " %llu",
				(unsigned long long)wc.wr_id);
		bad |= wc.wr_id != 400 + n ||
		       wc.status != IBV_WC_WR_FLUSH_ERR;
		n++;
	}
	if (bad)
		return fail("receives completed as%s, want 400-%u flushed in order",
			    got, 400 + ER_RECVS);
	return 0;
}

static int cmd_err_race(void)
{
	uint64_t wr_id;
	pthread_t th;
	void *ret;
	int err;

	if (!er_qp)
		return fail("no ERR race QP");
	if (vroce_debugfs_set("err_delay_us", ER_DELAY_US))
		return fail("err_delay_us: %s", strerror(errno));
	if (pthread_create(&th, NULL, err_race_modify, NULL))
		return fail("pthread_create");
	usleep(ER_DELAY_US / 3);
	err = post_recv(&a, er_qp, 400 + ER_RECVS,
			OFF_ERR_RACE + ER_RECVS * ER_RECV_LEN, ER_RECV_LEN) ||
	      post_send(&a, er_qp, IBV_WR_SEND, OFF_SRC, 64, 0, 0, &wr_id);
	pthread_join(th, &ret);
	if (vroce_debugfs_set("err_delay_us", 0))
		return fail("err_delay_us: %s", strerror(errno));
	if (err || ret)
		return fail("post or modify to ERR failed: %s", strerror(errno));
	return err_race_reap(wr_id);
}

/* One command; it prints its "ok" or "bad" line. */
static void command(const char *line)
{
	unsigned int len, src;
	char st[16];
	int ret;

	if (!strcmp(line, "idle\n"))
		ret = cmd_idle();
	else if (sscanf(line, "ud_recv %u %x", &len, &src) == 2)
		ret = cmd_ud_recv(len, src);
	else if (!strcmp(line, "traffic\n"))
		ret = cmd_traffic();
	else if (!strcmp(line, "seq_check\n"))
		ret = cmd_seq_check();
	else if (!strcmp(line, "read_nak_post\n"))
		ret = cmd_read_nak_post();
	else if (sscanf(line, "read_nak_check %u", &len) == 1)
		ret = cmd_read_nak_check(len);
	else if (!strcmp(line, "dup_read_setup\n"))
		ret = cmd_dup_read_setup();
	else if (!strcmp(line, "dup_read_check\n"))
		ret = cmd_dup_read_check();
	else if (!strcmp(line, "dup_read_dereg\n"))
		ret = cmd_dup_read_dereg();
	else if (!strcmp(line, "dup_read_err\n"))
		ret = cmd_dup_read_err();
	else if (!strcmp(line, "err_race_setup\n"))
		ret = cmd_err_race_setup();
	else if (!strcmp(line, "err_race\n"))
		ret = cmd_err_race();
	else if (!strcmp(line, "state_setup\n"))
		ret = cmd_state_setup();
	else if (sscanf(line, "state_to %15s", st) == 1)
		ret = cmd_state_to(st);
	else if (sscanf(line, "state_check %15s %u %u", st, &len, &src) == 3)
		ret = cmd_state_check(st, len, src);
	else if (!strcmp(line, "seq_error\n")) {
		printf("ok qpn=%#x psn=%#x peer_qpn=%#x\n", a.spare->qp_num,
		       SPARE_PSN, b.spare->qp_num);
		ret = 1;
	} else {
		ret = fail("unknown command %s", line);
	}
	if (!ret)
		printf("ok\n");
	fflush(stdout);
}

int main(void)
{
	char line[128];

	if (setup())
		return 1;
	printf("rc_qpn=%#x rc_psn=%#x ud_qpn=%#x qkey=%#x peer_rc_qpn=%#x peer_ud_qpn=%#x mtu=%d\n",
	       a.rc->qp_num, B_SQ_PSN, a.ud->qp_num, QKEY, b.rc->qp_num,
	       b.ud->qp_num, 128 << a.dev.mtu);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strcmp(line, "quit\n"))
		command(line);
	return 0;
}
