// SPDX-License-Identifier: GPL-2.0
/*
 * What a process can do to the kernel through the rings it shares with it
 * and through its doorbells, on one vroce device in loopback. Run by
 * user_qp.sh with VROCE_DEV set (VROCE_GID: the GID index, default the
 * first RoCE v2 IPv4 one).
 *
 * Rings (fixture ring): the rxe provider writes WQEs into rings that the
 * process maps (rdma_user_rxe.h layout), so the process can rewrite a WQE
 * after posting it. Each case posts a well-formed WQE while its QP is in
 * RTR (the kernel refuses the doorbell, the WQE stays in the ring), finds
 * it in its own mapping of the ring (the mappings of /dev/infiniband/
 * uverbs* in /proc/self/maps, by wr_id at element boundaries), corrupts
 * it, and moves the QP to RTS: the kernel reads it only then. A malformed
 * send WQE must complete with IBV_WC_LOC_QP_OP_ERR and fail the QP; a
 * corrupted receive WQE must not take the kernel outside the ring; a CQ
 * consumer index moved past the producer must fail the CQ (IBV_EVENT_CQ_ERR)
 * rather than let the kernel overwrite unread completions.
 *
 * Doorbells (fixture doorbell): WRITEs of 4 KiB (sent from the posting
 * process's pages, zero copy) posted one by one from a second thread while
 * the first posts 512 KiB READs, whose responses are copied in 64 KiB
 * frames; every byte is checked. A doorbell that finds the requester lent
 * for such a copy runs it beside the copy (vroce_task_solo()); nothing
 * here shows whether one did. The debugfs knob lend_delay_us then holds
 * the requester lent after each copy, and WRITEs posted meanwhile must
 * land in memory before the READ completes: only a solo run sends them.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"
#include "vroce_ring.h"

/* A hang guard on every wait, not a timing assertion. */
#define POLL_TIMEOUT_S	60
#define TEST_TIMEOUT_S	600
#define BUF_SIZE	(8u << 20)
#define QP_DEPTH	16
#define MAX_SGE		2
#define WANT_INLINE	64
#define MAGIC		0x5eedf00d00000000ull

struct side {
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_qp *qp;
	uint32_t max_sge;
};

struct dev {
	struct vroce_dev dev;
	struct side a;	/* the requester */
	struct side b;	/* the responder */
};

static void side_open(struct __test_metadata *_metadata, struct dev *d,
		      struct side *s, int depth)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
			 .max_inline_data = WANT_INLINE },
	};

	s->scq = ibv_create_cq(d->dev.ctx, 4 * depth, NULL, NULL, 0);
	s->rcq = ibv_create_cq(d->dev.ctx, 4 * depth, NULL, NULL, 0);
	ASSERT_NE(NULL, s->scq);
	ASSERT_NE(NULL, s->rcq);
	init.send_cq = s->scq;
	init.recv_cq = s->rcq;
	s->qp = ibv_create_qp(d->dev.pd, &init);
	ASSERT_NE(NULL, s->qp) TH_LOG("create_qp: %s", strerror(errno));
	s->max_sge = init.cap.max_send_sge;
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->rcq)
		ibv_destroy_cq(s->rcq);
	if (s->scq)
		ibv_destroy_cq(s->scq);
}

/* 0 with the device and two QPs open; 1 if the test is skipped. */
static int dev_open(struct __test_metadata *_metadata, struct dev *d,
		    int depth)
{
	const char *name = getenv("VROCE_DEV");

	if (!name || !*name)
		SKIP(return 1, "VROCE_DEV not set (run user_qp.sh)");
	ASSERT_EQ(0, vroce_dev_open(&d->dev, name, "VROCE_GID"));
	ASSERT_EQ(0, vroce_dev_buf(&d->dev, name, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC));
	side_open(_metadata, d, &d->a, depth);
	side_open(_metadata, d, &d->b, depth);
	return 0;
}

static void dev_close(struct dev *d)
{
	side_close(&d->a);
	side_close(&d->b);
	vroce_dev_close(&d->dev);
	memset(d, 0, sizeof(*d));
}

static struct vroce_rc_path path_to(struct dev *d, struct side *peer)
{
	struct vroce_rc_path p = {
		VROCE_RC_DEFAULTS,
		.dest_qpn = peer->qp->qp_num, .dgid = d->dev.gid,
		.sgid_idx = d->dev.gid_idx, .mtu = d->dev.mtu,
	};

	return p;
}

/* b to RTS; a to RTR, or RTS with @rts. */
static void pair_up(struct __test_metadata *_metadata, struct dev *d, int rts)
{
	struct vroce_rc_path pa = path_to(d, &d->b), pb = path_to(d, &d->a);

	ASSERT_EQ(0, vroce_rc_init(d->b.qp, &pb));
	ASSERT_EQ(0, vroce_rc_rtr(d->b.qp, &pb));
	ASSERT_EQ(0, vroce_rc_rts(d->b.qp, &pb));
	ASSERT_EQ(0, vroce_rc_init(d->a.qp, &pa));
	ASSERT_EQ(0, vroce_rc_rtr(d->a.qp, &pa));
	if (rts)
		ASSERT_EQ(0, vroce_rc_rts(d->a.qp, &pa));
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return (enum ibv_qp_state)-1;
	return attr.qp_state;
}

/* A signaled READ of 64 bytes from b's buffer at 1 MiB, into a's at 0. */
static int post_read(struct dev *d, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)d->dev.buf, .length = 64, .lkey = d->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)d->dev.buf + (1 << 20),
			     .rkey = d->dev.mr->rkey },
	}, *bad;

	return ibv_post_send(d->a.qp, &wr, &bad);
}

/* How a case corrupts the READ WQE it posted. */
typedef void (*corrupt_fn)(struct rxe_send_wqe *wqe, size_t esize,
			   const struct dev *d);

/* Zero what follows the WQE header: SGEs of length 0 as far as they go. */
static void zero_tail(struct rxe_send_wqe *wqe, size_t esize)
{
	memset(wqe->dma.inline_data, 0,
	       esize - offsetof(struct rxe_send_wqe, dma.inline_data));
}

/*
 * The WQE of a READ posted in RTR, rewritten by @fn, is read by the kernel
 * once the QP is in RTS: it must complete with IBV_WC_LOC_QP_OP_ERR and
 * fail the QP, whatever the rest of the ring holds.
 */
static void bad_send_wqe(struct __test_metadata *_metadata, struct dev *d,
			 corrupt_fn fn, uint32_t id)
{
	struct vroce_rc_path pa = path_to(d, &d->b);
	uint64_t wr_id = MAGIC | id;
	struct rxe_send_wqe *wqe;
	struct rxe_queue_buf *q;
	struct ibv_wc wc;
	size_t esize;
	double end;
	int ret;

	pair_up(_metadata, d, 0);
	/* In RTR the doorbell is refused; the WQE is in the ring anyway. */
	ret = post_read(d, wr_id);
	TH_LOG("post_send in RTR: %d", ret);
	wqe = vroce_sq_find(wr_id, &esize, &q);
	ASSERT_NE(NULL, wqe) TH_LOG("the WQE is in no mapped ring");
	fn(wqe, esize, d);
	ASSERT_EQ(0, vroce_rc_rts(d->a.qp, &pa));
	ASSERT_EQ(1, vroce_poll_one(d->a.scq, &wc, POLL_TIMEOUT_S))
		TH_LOG("no completion within %d s", POLL_TIMEOUT_S);
	EXPECT_EQ(wr_id, wc.wr_id);
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc.status)
		TH_LOG("status %s", ibv_wc_status_str(wc.status));
	/* The completion comes first, then the QP goes to ERR (as in rxe). */
	end = vroce_now_s() + POLL_TIMEOUT_S;
	while (qp_state(d->a.qp) != IBV_QPS_ERR && vroce_now_s() < end)
		usleep(1000);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(d->a.qp));
}

FIXTURE(ring) {
	struct dev d;
};

FIXTURE_SETUP(ring)
{
	dev_open(_metadata, &self->d, QP_DEPTH);
}

FIXTURE_TEARDOWN(ring)
{
	dev_close(&self->d);
}

static void read_inline(struct rxe_send_wqe *wqe, size_t esize,
			const struct dev *d)
{
	zero_tail(wqe, esize);
	wqe->wr.send_flags |= IBV_SEND_INLINE;
	wqe->dma.num_sge = 0xffffffff;
}

/* READ with INLINE and any num_sge: the response must not walk them. */
TEST_F_TIMEOUT(ring, read_inline_num_sge, TEST_TIMEOUT_S)
{
	bad_send_wqe(_metadata, &self->d, read_inline, 1);
}

static void cas_inline(struct rxe_send_wqe *wqe, size_t esize,
		       const struct dev *d)
{
	read_inline(wqe, esize, d);
	wqe->wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wqe->wr.wr.atomic.remote_addr = (uintptr_t)d->dev.buf + (2 << 20);
	wqe->wr.wr.atomic.compare_add = 0;
	wqe->wr.wr.atomic.swap = 1;
	wqe->wr.wr.atomic.rkey = d->dev.mr->rkey;
	wqe->dma.length = 8;
}

/* CMP_AND_SWP with INLINE and any num_sge: the same for its ACK. */
TEST_F_TIMEOUT(ring, cas_inline_num_sge, TEST_TIMEOUT_S)
{
	bad_send_wqe(_metadata, &self->d, cas_inline, 2);
}

static void sge_over_max(struct rxe_send_wqe *wqe, size_t esize,
			 const struct dev *d)
{
	wqe->dma.num_sge = d->a.max_sge + 1;
}

TEST_F_TIMEOUT(ring, num_sge_over_max, TEST_TIMEOUT_S)
{
	bad_send_wqe(_metadata, &self->d, sge_over_max, 3);
}

static void sge_huge(struct rxe_send_wqe *wqe, size_t esize,
		     const struct dev *d)
{
	zero_tail(wqe, esize);
	wqe->dma.num_sge = 0xffffffff;
}

TEST_F_TIMEOUT(ring, num_sge_huge, TEST_TIMEOUT_S)
{
	bad_send_wqe(_metadata, &self->d, sge_huge, 4);
}

static void bad_opcode(struct rxe_send_wqe *wqe, size_t esize,
		       const struct dev *d)
{
	wqe->wr.opcode = 0x55;
}

TEST_F_TIMEOUT(ring, unknown_opcode, TEST_TIMEOUT_S)
{
	bad_send_wqe(_metadata, &self->d, bad_opcode, 5);
}

static void bad_flags(struct rxe_send_wqe *wqe, size_t esize,
		      const struct dev *d)
{
	wqe->wr.send_flags |= 1u << 20;
}

TEST_F_TIMEOUT(ring, unknown_send_flags, TEST_TIMEOUT_S)
{
	bad_send_wqe(_metadata, &self->d, bad_flags, 6);
}

static void huge_length(struct rxe_send_wqe *wqe, size_t esize,
			const struct dev *d)
{
	wqe->dma.length = 0xffffffff;
}

/* Longer than max_msg_sz: more PSNs than half the PSN space. */
TEST_F_TIMEOUT(ring, huge_length, TEST_TIMEOUT_S)
{
	bad_send_wqe(_metadata, &self->d, huge_length, 7);
}

/*
 * A receive WQE with a huge num_sge and length, then a SEND arrives: the
 * kernel uses at most max_recv_sge SGEs and whatever it completes with,
 * it completes (the data lands in the SGE that was posted).
 */
TEST_F_TIMEOUT(ring, recv_num_sge_huge, TEST_TIMEOUT_S)
{
	struct dev *d = &self->d;
	uint64_t rid = MAGIC | 0x52, sid = MAGIC | 0x53;
	struct ibv_sge rsge = {
		.addr = (uintptr_t)d->dev.buf + (3 << 20), .length = 256,
		.lkey = d->dev.mr->lkey,
	}, ssge = {
		.addr = (uintptr_t)d->dev.buf, .length = 64, .lkey = d->dev.mr->lkey,
	};
	struct ibv_recv_wr rwr = { .wr_id = rid, .sg_list = &rsge,
				   .num_sge = 1 }, *rbad;
	struct ibv_send_wr swr = { .wr_id = sid, .sg_list = &ssge,
				   .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct rxe_queue_buf *q;
	struct rxe_recv_wqe *rwqe;
	struct ibv_wc wc;
	int i;

	pair_up(_metadata, d, 1);
	for (i = 0; i < 64; i++)
		d->dev.buf[i] = i ^ 0xa5;
	ASSERT_EQ(0, ibv_post_recv(d->b.qp, &rwr, &rbad));
	rwqe = vroce_ring_find(rid, sizeof(*rwqe), SIZE_MAX, &q);
	ASSERT_NE(NULL, rwqe);
	rwqe->dma.num_sge = 0xffffffff;
	rwqe->dma.length = 0xffffffff;
	ASSERT_EQ(0, ibv_post_send(d->a.qp, &swr, &sbad));
	ASSERT_EQ(1, vroce_poll_one(d->b.rcq, &wc, POLL_TIMEOUT_S));
	EXPECT_EQ(rid, wc.wr_id);
	TH_LOG("receive: %s, %u bytes", ibv_wc_status_str(wc.status),
	       wc.byte_len);
	if (wc.status == IBV_WC_SUCCESS) {
		EXPECT_EQ(64, wc.byte_len);
		EXPECT_EQ(0, memcmp(d->dev.buf, d->dev.buf + (3 << 20), 64));
	}
	ASSERT_EQ(1, vroce_poll_one(d->a.scq, &wc, POLL_TIMEOUT_S));
	EXPECT_EQ(sid, wc.wr_id);
}

/* A signaled 64-byte WRITE from a's buffer at 0 to b's at 4 MiB. */
static int post_write(struct dev *d, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)d->dev.buf, .length = 64, .lkey = d->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)d->dev.buf + (4 << 20),
			     .rkey = d->dev.mr->rkey },
	}, *bad;

	return ibv_post_send(d->a.qp, &wr, &bad);
}

/*
 * The send CQ's consumer index moved past its producer index (more
 * completions consumed than were produced): the kernel cannot tell which
 * entries are free, and reports the CQ in error instead of writing on.
 */
TEST_F_TIMEOUT(ring, cq_consumer_past_producer, TEST_TIMEOUT_S)
{
	struct dev *d = &self->d;
	uint64_t wr_id = MAGIC | 0x43;
	struct ibv_async_event ev;
	struct rxe_queue_buf *q;
	struct ibv_wc wc;
	void *cqe;
	int i, got = 0;

	pair_up(_metadata, d, 1);
	ASSERT_EQ(0, post_write(d, wr_id));
	ASSERT_EQ(1, vroce_poll_one(d->a.scq, &wc, POLL_TIMEOUT_S));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	/* The completion stays in the CQ's slot: smaller than a send WQE. */
	cqe = vroce_ring_find(wr_id, sizeof(wc.wr_id),
			sizeof(struct rxe_send_wqe) - 1, &q);
	ASSERT_NE(NULL, cqe) TH_LOG("the completion is in no mapped ring");
	__atomic_store_n(&q->consumer_index,
			 (q->producer_index + 5) & q->index_mask,
			 __ATOMIC_RELEASE);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, post_write(d, wr_id + 1 + i));
	while (!got && !vroce_wait_async(d->dev.ctx, &ev, 10)) {
		got = ev.event_type == IBV_EVENT_CQ_ERR &&
		      ev.element.cq == d->a.scq;
		TH_LOG("async event %s", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	EXPECT_TRUE(got) TH_LOG("no IBV_EVENT_CQ_ERR within 10 s");
}

/*
 * Doorbells beside long READ response copies: READS READs of READ_LEN
 * bytes (64 KiB loopback response frames, long enough that the task lends
 * the requester while it copies each) in flight, and for as long as they
 * are, WRITEs of WRITE_LEN bytes (sent zero copy from the posting
 * process's pages) posted one doorbell at a time, up to SLOTS of them in
 * flight, ROUNDS times. Every byte of both is checked.
 */
#define READS		6
#define READ_LEN	(512u << 10)
#define SLOTS		32
#define WRITE_LEN	4096
#define ROUNDS		8
#define READ_TAG	(1ull << 32)
/* Layout of the buffer: READ sources (b), destinations (a), WRITE ones. */
#define RD_SRC		0
#define RD_DST		(READS * READ_LEN)
#define WR_SRC		(2 * READS * READ_LEN)
#define WR_DST		(WR_SRC + SLOTS * WRITE_LEN)

FIXTURE(doorbell) {
	struct dev d;
};

FIXTURE_SETUP(doorbell)
{
	if (dev_open(_metadata, &self->d, 2 * (READS + SLOTS)))
		return;
	pair_up(_metadata, &self->d, 1);
}

FIXTURE_TEARDOWN(doorbell)
{
	dev_close(&self->d);
}

static uint8_t pattern(uint32_t seed, uint32_t i)
{
	uint32_t x = i * 0x9e3779b1u ^ (seed + 1) * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	return x ^ x >> 12;
}

static int post_rdma(struct dev *d, enum ibv_wr_opcode op, uint64_t wr_id,
		     uint32_t local, uint32_t remote, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)d->dev.buf + local, .length = len,
		.lkey = d->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)d->dev.buf + remote,
			     .rkey = d->dev.mr->rkey },
	}, *bad;

	return ibv_post_send(d->a.qp, &wr, &bad);
}

/*
 * The WRITE thread: posts WRITEs one doorbell at a time (up to SLOTS in
 * flight) until told to stop, and reaps every completion of the QP,
 * counting the READs'. A WRITE's data is checked as it completes.
 */
struct writer {
	struct dev *d;
	uint32_t seed[SLOTS];	/* of the WRITE in flight in a slot, or 0 */
	uint32_t next_seed;
	uint32_t writes;	/* WRITEs completed */
	int reads;		/* READ completions (atomic) */
	int stop;		/* (atomic) */
	char err[128];		/* the first failure */
};

static int writer_post(struct writer *w)
{
	struct dev *d = w->d;
	uint32_t s;

	for (s = 0; s < SLOTS && w->seed[s]; s++)
		;
	if (s == SLOTS)
		return 0;
	w->seed[s] = ++w->next_seed;
	vroce_fill(d->dev.buf + WR_SRC + s * WRITE_LEN, WRITE_LEN, w->seed[s],
		   pattern);
	memset(d->dev.buf + WR_DST + s * WRITE_LEN, 0, WRITE_LEN);
	return post_rdma(d, IBV_WR_RDMA_WRITE, s, WR_SRC + s * WRITE_LEN,
			 WR_DST + s * WRITE_LEN, WRITE_LEN);
}

static int writer_reap(struct writer *w)
{
	struct dev *d = w->d;
	struct ibv_wc wc[8];
	int i, n;
	uint32_t s;

	n = ibv_poll_cq(d->a.scq, 8, wc);
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			snprintf(w->err, sizeof(w->err), "wr_id %llx: %s",
				 (unsigned long long)wc[i].wr_id,
				 ibv_wc_status_str(wc[i].status));
			return -1;
		}
		if (wc[i].wr_id & READ_TAG) {
			__atomic_add_fetch(&w->reads, 1, __ATOMIC_RELEASE);
			continue;
		}
		s = wc[i].wr_id;
		if (s >= SLOTS ||
		    vroce_mismatch(d->dev.buf + WR_DST + s * WRITE_LEN, WRITE_LEN,
				   w->seed[s], pattern) != -1) {
			snprintf(w->err, sizeof(w->err), "WRITE slot %u bad", s);
			return -1;
		}
		w->seed[s] = 0;
		w->writes++;
	}
	return n < 0 ? -1 : 0;
}

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	uint32_t s, busy = 1;
	double end = 0;

	while (busy && !w->err[0]) {
		if (!end && __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
			end = vroce_now_s() + POLL_TIMEOUT_S;
		if (end && vroce_now_s() > end) {
			snprintf(w->err, sizeof(w->err), "WRITEs hung");
			break;
		}
		if (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE) &&
		    writer_post(w)) {
			snprintf(w->err, sizeof(w->err), "post: %s",
				 strerror(errno));
			break;
		}
		if (writer_reap(w) && !w->err[0])
			snprintf(w->err, sizeof(w->err), "poll_cq failed");
		busy = !__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE);
		for (s = 0; s < SLOTS; s++)
			busy |= !!w->seed[s];
	}
	return NULL;
}

/*
 * A doorbell copies the READ responses that come back to it (loopback
 * frames reach their QP's task in the sender's context when it can), so
 * the WRITEs are posted from another thread, on the other CPU.
 */
TEST_F_TIMEOUT(doorbell, writes_beside_read_copies, TEST_TIMEOUT_S)
{
	struct writer w = { .d = &self->d };
	struct dev *d = &self->d;
	uint32_t r, i;
	pthread_t th;
	double end;

	ASSERT_EQ(0, pthread_create(&th, NULL, writer_run, &w));
	for (r = 0; r < ROUNDS && !w.err[0]; r++) {
		for (i = 0; i < READS; i++) {
			vroce_fill(d->dev.buf + RD_SRC + i * READ_LEN, READ_LEN,
				   r * READS + i, pattern);
			memset(d->dev.buf + RD_DST + i * READ_LEN, 0, READ_LEN);
		}
		for (i = 0; i < READS; i++)
			EXPECT_EQ(0, post_rdma(d, IBV_WR_RDMA_READ,
					       READ_TAG | i,
					       RD_DST + i * READ_LEN,
					       RD_SRC + i * READ_LEN,
					       READ_LEN));
		end = vroce_now_s() + POLL_TIMEOUT_S;
		while (__atomic_load_n(&w.reads, __ATOMIC_ACQUIRE) <
		       (int)((r + 1) * READS) && !w.err[0] &&
		       vroce_now_s() < end)
			usleep(100);
		EXPECT_EQ((r + 1) * READS,
			  __atomic_load_n(&w.reads, __ATOMIC_ACQUIRE))
			TH_LOG("round %u: READs missing", r);
		for (i = 0; i < READS; i++)
			EXPECT_EQ(-1, vroce_mismatch(d->dev.buf + RD_DST +
						     i * READ_LEN, READ_LEN,
						     r * READS + i, pattern))
				TH_LOG("round %u READ %u", r, i);
	}
	__atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	EXPECT_EQ(0, w.err[0]) TH_LOG("%s", w.err);
	TH_LOG("%u WRITEs beside %u READs", w.writes, ROUNDS * READS);
}

/*
 * Doorbells into a lent requester: the debugfs knob lend_delay_us keeps
 * the requester lent for LEND_US after each copy of a READ response, so a
 * WRITE posted meanwhile can only go out in a doorbell's solo run. The
 * main thread posts one READ of READ_LEN and waits for it; a second
 * thread, once the READ's first bytes have landed, posts LENT_WRITES
 * WRITEs one at a time and watches each land in memory.
 * Completions come in order, so the WRITEs complete after the READ; their
 * data, though, must land before it (all of them: the windows are long).
 * On a lockdep kernel the solo run must also be warning-free.
 */
#define LEND_US		300000
#define LENT_WRITES	8

struct lent {
	struct dev *d;
	int read_done;		/* the READ completed (atomic) */
	uint32_t early;		/* WRITEs that landed before that */
	char err[128];
};

static void *lent_writer(void *arg)
{
	struct lent *l = arg;
	struct dev *d = l->d;
	uint32_t i;
	double end;

	/* The first response copied: the first window is open. */
	end = vroce_now_s() + POLL_TIMEOUT_S;
	while (vroce_mismatch(d->dev.buf + RD_DST, 64, 7, pattern) != -1) {
		if (vroce_now_s() > end) {
			snprintf(l->err, sizeof(l->err), "READ never began");
			return NULL;
		}
		usleep(100);
	}
	for (i = 0; i < LENT_WRITES; i++) {
		vroce_fill(d->dev.buf + WR_SRC + i * WRITE_LEN, WRITE_LEN, i + 1,
			   pattern);
		if (post_rdma(d, IBV_WR_RDMA_WRITE, i, WR_SRC + i * WRITE_LEN,
			      WR_DST + i * WRITE_LEN, WRITE_LEN)) {
			snprintf(l->err, sizeof(l->err), "post WRITE %u: %s",
				 i, strerror(errno));
			return NULL;
		}
		end = vroce_now_s() + POLL_TIMEOUT_S;
		while (vroce_mismatch(d->dev.buf + WR_DST + i * WRITE_LEN,
				      WRITE_LEN, i + 1, pattern) != -1) {
			if (vroce_now_s() > end) {
				snprintf(l->err, sizeof(l->err),
					 "WRITE %u never landed", i);
				return NULL;
			}
			usleep(100);
		}
		if (!__atomic_load_n(&l->read_done, __ATOMIC_ACQUIRE))
			l->early++;
	}
	return NULL;
}

TEST_F_TIMEOUT(doorbell, writes_while_lent, TEST_TIMEOUT_S)
{
	struct lent l = { .d = &self->d };
	struct dev *d = &self->d;
	struct ibv_wc wc;
	uint32_t got = 0;
	pthread_t th;
	double end;
	int n;

	ASSERT_EQ(0, vroce_debugfs_set("lend_delay_us", LEND_US))
		TH_LOG("cannot set lend_delay_us: %s", strerror(errno));
	vroce_fill(d->dev.buf + RD_SRC, READ_LEN, 7, pattern);
	memset(d->dev.buf + RD_DST, 0, READ_LEN);
	memset(d->dev.buf + WR_DST, 0, LENT_WRITES * WRITE_LEN);
	ASSERT_EQ(0, pthread_create(&th, NULL, lent_writer, &l));
	EXPECT_EQ(0, post_rdma(d, IBV_WR_RDMA_READ, READ_TAG, RD_DST, RD_SRC,
			       READ_LEN));
	end = vroce_now_s() + POLL_TIMEOUT_S;
	while (got < 1 + LENT_WRITES && vroce_now_s() < end) {
		n = ibv_poll_cq(d->a.scq, 1, &wc);
		if (n < 0)
			break;
		if (!n) {
			usleep(100);
			continue;
		}
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("wr_id %llx: %s", (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
		if (wc.wr_id == READ_TAG)
			__atomic_store_n(&l.read_done, 1, __ATOMIC_RELEASE);
		got++;
	}
	__atomic_store_n(&l.read_done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	EXPECT_EQ(0, vroce_debugfs_set("lend_delay_us", 0));
	EXPECT_EQ(0, l.err[0]) TH_LOG("%s", l.err);
	EXPECT_EQ(1 + LENT_WRITES, got) TH_LOG("completions missing");
	EXPECT_EQ(-1, vroce_mismatch(d->dev.buf + RD_DST, READ_LEN, 7, pattern));
	EXPECT_EQ(LENT_WRITES, l.early)
		TH_LOG("%u of %u WRITEs landed before the READ completed",
		       l.early, LENT_WRITES);
	TH_LOG("%u of %u WRITEs landed before the READ completed", l.early,
	       LENT_WRITES);
}

TEST_HARNESS_MAIN
