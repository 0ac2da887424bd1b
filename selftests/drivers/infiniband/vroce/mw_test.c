// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows through the stock rdma-core rxe provider: allocation of
 * type 1 and type 2 windows and their rkeys, bad types, the PD a window
 * holds, windows left behind by a closed context, and MRs deregistered
 * beside unbound windows; then through the transport, on two RC QPs of one
 * device connected to each other (loopback): an unbound window grants no
 * access and a window key is no lkey. Run by mw.sh, which creates the
 * device, gives it an IPv4 GID and exports VROCE_DEV.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

/* vroce's MW keys have bit 31 set; MR keys never do (mw.c). */
#define MW_KEY_BIT 0x80000000u

FIXTURE(mw) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

FIXTURE_SETUP(mw)
{
	const char *name = getenv("VROCE_DEV");

	if (!name)
		SKIP(return, "VROCE_DEV not set (run mw.sh)");
	self->ctx = vroce_open_by_name(name);
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", name);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
}

FIXTURE_TEARDOWN(mw)
{
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F(mw, alloc_both_types)
{
	struct ibv_mw *mw1 = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);

	ASSERT_NE(NULL, mw1) TH_LOG("type 1: %s", strerror(errno));
	ASSERT_NE(NULL, mw2) TH_LOG("type 2: %s", strerror(errno));
	EXPECT_EQ(IBV_MW_TYPE_1, mw1->type);
	EXPECT_EQ(IBV_MW_TYPE_2, mw2->type);
	EXPECT_EQ(self->pd, mw1->pd);
	EXPECT_EQ(MW_KEY_BIT, mw1->rkey & MW_KEY_BIT);
	EXPECT_EQ(MW_KEY_BIT, mw2->rkey & MW_KEY_BIT);
	EXPECT_NE(0, (mw1->rkey & ~MW_KEY_BIT) >> 8);
	EXPECT_NE(mw1->rkey >> 8, mw2->rkey >> 8);
	EXPECT_EQ(0, ibv_dealloc_mw(mw1));
	EXPECT_EQ(0, ibv_dealloc_mw(mw2));
}

TEST_F(mw, bad_types)
{
	static const int types[] = { 0, 3, 0x80, -1 };
	int i;

	for (i = 0; i < 4; i++) {
		struct ibv_mw *mw = ibv_alloc_mw(self->pd, types[i]);

		EXPECT_EQ(NULL, mw) TH_LOG("type %d allocated", types[i]);
		if (mw)
			ibv_dealloc_mw(mw);
		else
			EXPECT_EQ(EINVAL, errno);
	}
}

/* A window holds its PD; the MRs of the PD are independent of it. */
TEST_F(mw, pd_in_use)
{
	static char buf[4096];
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	struct ibv_mr *mr;

	ASSERT_NE(NULL, mw);
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd));
	mr = ibv_reg_mr(self->pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(0, mr->rkey & MW_KEY_BIT);
	/* No window is bound to the MR: deregistration works. */
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dealloc_pd(self->pd));
	self->pd = NULL;
}

/* Windows of a closed context are freed with it; others are unaffected. */
TEST_F(mw, closed_context)
{
	struct ibv_context *ctx = vroce_open_by_name(getenv("VROCE_DEV"));
	struct ibv_mw *keep, *mw;
	struct ibv_pd *pd;
	int i;

	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	keep = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	ASSERT_NE(NULL, keep);
	for (i = 0; i < 64; i++)
		ASSERT_NE(NULL, ibv_alloc_mw(pd, i & 1 ? IBV_MW_TYPE_2 :
						    IBV_MW_TYPE_1));
	EXPECT_EQ(0, ibv_close_device(ctx));
	mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, mw);
	EXPECT_NE(keep->rkey >> 8, mw->rkey >> 8);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dealloc_mw(keep));
}

/* max_mw windows can be allocated, of both types, and not one more. */
TEST_F_TIMEOUT(mw, max_mw_is_honest, 600)
{
	struct ibv_device_attr attr;
	struct ibv_mw **mws, *again;
	int i, n = 0;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &attr));
	ASSERT_LT(0, attr.max_mw);
	ASSERT_GE(65536, attr.max_mw);
	mws = calloc(attr.max_mw, sizeof(*mws));
	ASSERT_NE(NULL, mws);
	for (; n < attr.max_mw; n++) {
		mws[n] = ibv_alloc_mw(self->pd, n & 1 ? IBV_MW_TYPE_2 :
							IBV_MW_TYPE_1);
		if (!mws[n])
			break;
	}
	EXPECT_EQ(attr.max_mw, n) TH_LOG("failed: %s", strerror(errno));
	if (n == attr.max_mw) {
		struct ibv_mw *extra = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);

		EXPECT_EQ(NULL, extra);
		if (extra)
			ibv_dealloc_mw(extra);
		else
			EXPECT_EQ(ENOMEM, errno);
	}
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, ibv_dealloc_mw(mws[i]));
	free(mws);
	/* All returned: one can be allocated again. */
	again = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	EXPECT_NE(NULL, again);
	if (again)
		ibv_dealloc_mw(again);
}

/*
 * Two RC QPs on one device, connected to each other through the device's
 * IPv4 GID, sharing a PD and a CQ; a buffer registered for windows.
 */
#define BUF_LEN 8192
/* Hang guards only (the debug kernel under TCG and load is slow). */
#define LO_TIMEOUT 300
#define POLL_SECONDS 120

FIXTURE(lo) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr;	/* LOCAL_WRITE | MW_BIND over buf */
	struct ibv_mr *src;	/* LOCAL_WRITE over src_buf */
	char *buf, *src_buf;
};

static int find_ipv4_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
	int i;

	for (i = 0; i < 16; i++)
		if (!ibv_query_gid(ctx, 1, i, gid) && !memcmp(gid->raw, v4, 12))
			return i;
	return -1;
}

/* To QP @dest of GID @gid: path MTU 1024, one READ or atomic in flight. */
static int lo_connect(struct ibv_qp *qp, uint32_t dest, union ibv_gid *gid,
		      int sgid)
{
	struct vroce_rc_path p = {
		VROCE_RC_DEFAULTS,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rd_atomic = 1, .dest_rd_atomic = 1,
		.dest_qpn = dest, .dgid = *gid, .sgid_idx = sgid,
		.mtu = IBV_MTU_1024,
	};

	return vroce_rc_connect(qp, &p);
}

static struct ibv_qp *lo_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &init);
}

FIXTURE_SETUP(lo)
{
	const char *name = getenv("VROCE_DEV");
	union ibv_gid gid;
	int sgid;

	if (!name)
		SKIP(return, "VROCE_DEV not set (run mw.sh)");
	self->ctx = vroce_open_by_name(name);
	ASSERT_NE(NULL, self->ctx);
	sgid = find_ipv4_gid(self->ctx, &gid);
	ASSERT_LE(0, sgid) TH_LOG("no IPv4 GID on %s", name);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	self->qa = lo_qp(self->pd, self->cq);
	self->qb = lo_qp(self->pd, self->cq);
	ASSERT_NE(NULL, self->qa);
	ASSERT_NE(NULL, self->qb);
	ASSERT_EQ(0, lo_connect(self->qa, self->qb->qp_num, &gid, sgid));
	ASSERT_EQ(0, lo_connect(self->qb, self->qa->qp_num, &gid, sgid));
	self->buf = calloc(1, BUF_LEN);
	self->src_buf = calloc(1, BUF_LEN);
	ASSERT_NE(NULL, self->buf);
	ASSERT_NE(NULL, self->src_buf);
	self->mr = ibv_reg_mr(self->pd, self->buf, BUF_LEN,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	self->src = ibv_reg_mr(self->pd, self->src_buf, BUF_LEN,
			       IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, self->mr);
	ASSERT_NE(NULL, self->src);
}

FIXTURE_TEARDOWN(lo)
{
	if (self->src)
		ibv_dereg_mr(self->src);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->qa)
		ibv_destroy_qp(self->qa);
	if (self->qb)
		ibv_destroy_qp(self->qb);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->buf);
	free(self->src_buf);
}

/* The next completion, or status -1 after POLL_SECONDS (a hang guard). */
static struct ibv_wc lo_poll(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	if (vroce_poll_one(cq, &wc, POLL_SECONDS) != 1)
		wc.status = -1;
	return wc;
}

/* Posts one RDMA op from @qp: @len bytes of src_buf at @off, to rkey/va. */
static int lo_rdma(FIXTURE_DATA(lo) *self, struct ibv_qp *qp,
		   enum ibv_wr_opcode op, uint32_t rkey, uint64_t va,
		   uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->src_buf,
		.length = len,
		.lkey = self->src->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = va, .rkey = rkey },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/* An allocated window grants nothing until it is bound. */
TEST_F_TIMEOUT(lo, unbound_window_denies, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	struct ibv_wc wc;

	ASSERT_NE(NULL, mw);
	memset(self->src_buf, 0x77, 64);
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, mw->rkey,
			     (uintptr_t)self->buf, 64, 1));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(0, self->buf[0]);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

/* The MR works through the same QPs when the window is not involved. */
TEST_F_TIMEOUT(lo, mr_rkey_is_not_a_window, LO_TIMEOUT)
{
	struct ibv_mr *rw = ibv_reg_mr(self->pd, self->buf, BUF_LEN,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	struct ibv_wc wc;

	ASSERT_NE(NULL, rw);
	memset(self->src_buf, 0x42, 100);
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, rw->rkey,
			     (uintptr_t)self->buf + 10, 100, 2));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x42, self->buf[10]);
	EXPECT_EQ(0x42, self->buf[109]);
	EXPECT_EQ(0, self->buf[110]);
	/* The MR's rkey with the window bit set names nothing. */
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE,
			     rw->rkey | MW_KEY_BIT, (uintptr_t)self->buf, 1, 3));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	EXPECT_EQ(0, ibv_dereg_mr(rw));
}

/* A window's rkey is never an lkey. */
TEST_F_TIMEOUT(lo, window_key_is_no_lkey, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	struct ibv_mr *rw = ibv_reg_mr(self->pd, self->buf, BUF_LEN,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	struct ibv_wc wc;

	ASSERT_NE(NULL, mw);
	ASSERT_NE(NULL, rw);
	self->src->lkey = mw->rkey;	/* the SGE lkey lo_rdma() uses */
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, rw->rkey,
			     (uintptr_t)self->buf, 8, 4));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dereg_mr(rw));
}

static int lo_bind1(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr,
		    void *addr, size_t len, unsigned int access)
{
	struct ibv_mw_bind bind = {
		.wr_id = 50,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)addr,
			       .length = len, .mw_access_flags = access },
	};

	return ibv_bind_mw(qp, mw, &bind);
}

/* Type 2 windows are bound with a BIND_MW work request; @rkey: new key. */
static int lo_bind2(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr,
		    void *addr, size_t len, unsigned int access,
		    uint32_t *rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = 60,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = { .mr = mr, .addr = (uintptr_t)addr,
				       .length = len,
				       .mw_access_flags = access },
		},
	}, *bad;

	*rkey = wr.bind_mw.rkey;
	return ibv_post_send(qp, &wr, &bad);
}

/* Type 1: bind with ibv_bind_mw(), write and read through the window. */
TEST_F_TIMEOUT(lo, type1_bind_write_read, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	char *win = self->buf + 100;
	uint32_t old;
	struct ibv_wc wc;
	int i;

	ASSERT_NE(NULL, mw);
	old = mw->rkey;
	ASSERT_EQ(0, lo_bind1(self->qb, mw, self->mr, win, 1000,
			      IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ));
	wc = lo_poll(self->cq);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_BIND_MW, wc.opcode);
	EXPECT_EQ(50, wc.wr_id);
	EXPECT_EQ(ibv_inc_rkey(old), mw->rkey);
	/* Bound: the MR stays registered. */
	EXPECT_EQ(EBUSY, ibv_dereg_mr(self->mr));

	for (i = 0; i < 1000; i++)
		self->src_buf[i] = (char)(i * 7 + 1);
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, mw->rkey,
			     (uintptr_t)win, 1000, 1));
	wc = lo_poll(self->cq);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, memcmp(win, self->src_buf, 1000));
	EXPECT_EQ(0, win[-1]);
	EXPECT_EQ(0, win[1000]);

	memset(self->src_buf, 0, 1000);
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_READ, mw->rkey,
			     (uintptr_t)win + 900, 100, 2));
	wc = lo_poll(self->cq);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, memcmp(self->src_buf, win + 900, 100));

	/* One byte past the window. */
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, mw->rkey,
			     (uintptr_t)win + 950, 51, 3));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	EXPECT_EQ(3, wc.wr_id);
	EXPECT_EQ(0, win[1000]);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
}

TEST_F_TIMEOUT(lo, type1_old_key_and_unbind, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	struct ibv_wc wc;
	uint32_t old;

	ASSERT_NE(NULL, mw);
	old = mw->rkey;
	ASSERT_EQ(0, lo_bind1(self->qb, mw, self->mr, self->buf, 64,
			      IBV_ACCESS_REMOTE_WRITE));
	ASSERT_EQ(IBV_WC_SUCCESS, lo_poll(self->cq).status);
	/* A zero-length bind unbinds: the key goes dead. */
	ASSERT_EQ(0, lo_bind1(self->qb, mw, self->mr, self->buf, 0, 0));
	ASSERT_EQ(IBV_WC_SUCCESS, lo_poll(self->cq).status);
	EXPECT_NE(old, mw->rkey);
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, mw->rkey,
			     (uintptr_t)self->buf, 8, 4));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

/* A window on an MR without MW_BIND access does not bind. */
TEST_F_TIMEOUT(lo, bind_needs_mw_bind_access, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	struct ibv_wc wc;

	ASSERT_NE(NULL, mw);
	ASSERT_EQ(0, lo_bind1(self->qb, mw, self->src, self->src_buf, 64,
			      IBV_ACCESS_REMOTE_READ));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_MW_BIND_ERR, wc.status);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

/* Type 2B: only the QP it is bound to; Send with Invalidate unbinds it. */
TEST_F_TIMEOUT(lo, type2_send_with_invalidate, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->buf + 4096,
		.length = 64,
		.lkey = self->mr->lkey,
	};
	struct ibv_recv_wr rwr = { .wr_id = 70, .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 71,
		.opcode = IBV_WR_SEND_WITH_INV,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc;
	uint32_t rkey;
	int i;

	ASSERT_NE(NULL, mw);
	ASSERT_EQ(0, lo_bind2(self->qb, mw, self->mr, self->buf, 256,
			      IBV_ACCESS_REMOTE_WRITE, &rkey));
	wc = lo_poll(self->cq);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_BIND_MW, wc.opcode);
	memset(self->src_buf, 0x3c, 256);
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, rkey,
			     (uintptr_t)self->buf, 256, 5));
	wc = lo_poll(self->cq);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x3c, self->buf[255]);

	ASSERT_EQ(0, ibv_post_recv(self->qb, &rwr, &rbad));
	swr.invalidate_rkey = rkey;
	ASSERT_EQ(0, ibv_post_send(self->qa, &swr, &bad));
	for (i = 0; i < 2; i++) {
		wc = lo_poll(self->cq);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		if (wc.wr_id == 70) {
			/*
			 * Not wc_flags: the user CQ carries the kernel's
			 * IB_WC_WITH_INVALIDATE (1 << 2), which libibverbs
			 * reads as IBV_WC_IP_CSUM_OK, as with rxe.
			 */
			EXPECT_EQ(IBV_WC_RECV, wc.opcode);
			EXPECT_EQ(rkey, wc.invalidated_rkey);
		} else {
			EXPECT_EQ(71, wc.wr_id);
		}
	}
	self->buf[0] = 0;
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, rkey,
			     (uintptr_t)self->buf, 8, 6));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	EXPECT_EQ(0, self->buf[0]);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

/* A type 2B window bound through qa is not reachable through qb. */
TEST_F_TIMEOUT(lo, type2_other_qp_denied, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	struct ibv_wc wc;
	uint32_t rkey;

	ASSERT_NE(NULL, mw);
	ASSERT_EQ(0, lo_bind2(self->qa, mw, self->mr, self->buf, 256,
			      IBV_ACCESS_REMOTE_WRITE, &rkey));
	ASSERT_EQ(IBV_WC_SUCCESS, lo_poll(self->cq).status);
	/* qa's writes arrive at qb. */
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_WRITE, rkey,
			     (uintptr_t)self->buf, 8, 7));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

/* Type 2B: IB_WR_LOCAL_INV unbinds; the MR can then go. */
TEST_F_TIMEOUT(lo, type2_local_invalidate, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr inv = {
		.wr_id = 80,
		.opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	uint32_t rkey;

	ASSERT_NE(NULL, mw);
	ASSERT_EQ(0, lo_bind2(self->qb, mw, self->mr, self->buf, 256,
			      IBV_ACCESS_REMOTE_READ, &rkey));
	ASSERT_EQ(IBV_WC_SUCCESS, lo_poll(self->cq).status);
	EXPECT_EQ(EBUSY, ibv_dereg_mr(self->mr));
	inv.invalidate_rkey = rkey;
	ASSERT_EQ(0, ibv_post_send(self->qb, &inv, &bad));
	wc = lo_poll(self->cq);
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(IBV_WC_LOCAL_INV, wc.opcode);
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
	ASSERT_EQ(0, lo_rdma(self, self->qa, IBV_WR_RDMA_READ, rkey,
			     (uintptr_t)self->buf, 8, 8));
	wc = lo_poll(self->cq);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, wc.status);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

/* Destroying the QP a type 2B window is bound to unbinds the window. */
TEST_F_TIMEOUT(lo, type2_unbound_when_qp_destroyed, LO_TIMEOUT)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	uint32_t rkey;

	ASSERT_NE(NULL, mw);
	ASSERT_EQ(0, lo_bind2(self->qb, mw, self->mr, self->buf, 256,
			      IBV_ACCESS_REMOTE_READ, &rkey));
	ASSERT_EQ(IBV_WC_SUCCESS, lo_poll(self->cq).status);
	EXPECT_EQ(EBUSY, ibv_dereg_mr(self->mr));
	ASSERT_EQ(0, ibv_destroy_qp(self->qb));
	self->qb = NULL;
	EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
}

TEST_HARNESS_MAIN
