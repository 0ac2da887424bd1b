// SPDX-License-Identifier: GPL-2.0
/*
 * CQs, QPs and SRQs through the stock rdma-core rxe provider: the rings it
 * maps, the QP state machine (IBTA vol. 1 chapter 10), flush semantics, events
 * and limits. The QPs are connected to a QP number nobody has (their
 * packets are dropped), so WQEs stay outstanding until a flush completes
 * them; the timeout is long enough that no retry runs out meanwhile. Run
 * by queues.sh, which creates the device and exports VROCE_DEV.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

FIXTURE(q) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_device_attr attr;
	union ibv_gid gid;
	struct ibv_mr *mr;
};

/* The buffer the WQEs of post_send() and post_recv() use, and its lkey. */
static char test_buf[128];
static uint32_t test_lkey;

FIXTURE_SETUP(q)
{
	const char *name = getenv("VROCE_DEV");

	if (!name)
		SKIP(return, "VROCE_DEV not set (run queues.sh)");
	self->ctx = vroce_open_by_name(name);
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", name);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &self->attr));
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &self->gid));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->scq = ibv_create_cq(self->ctx, 256, NULL, NULL, 0);
	ASSERT_NE(NULL, self->scq);
	self->rcq = ibv_create_cq(self->ctx, 256, NULL, NULL, 0);
	ASSERT_NE(NULL, self->rcq);
	self->mr = ibv_reg_mr(self->pd, test_buf, sizeof(test_buf),
			      IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, self->mr);
	test_lkey = self->mr->lkey;
}

FIXTURE_TEARDOWN(q)
{
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->rcq)
		ibv_destroy_cq(self->rcq);
	if (self->scq)
		ibv_destroy_cq(self->scq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

static struct ibv_qp *make_qp(FIXTURE_DATA(q) *self, enum ibv_qp_type type,
			      struct ibv_srq *srq)
{
	struct ibv_qp_init_attr init = {
		.send_cq = self->scq,
		.recv_cq = self->rcq,
		.srq = srq,
		.qp_type = type,
		.cap = {
			.max_send_wr = 16,
			.max_recv_wr = 16,
			.max_send_sge = 2,
			.max_recv_sge = 2,
		},
	};

	return ibv_create_qp(self->pd, &init);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

/* Valid values for every attribute the tests set. */
static void fill_attr(FIXTURE_DATA(q) *self, struct ibv_qp_attr *a,
		      enum ibv_qp_state cur, enum ibv_qp_state next)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = next;
	a->cur_qp_state = cur;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qkey = 0x11111111;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = 0x123;
	a->rq_psn = 0x1234;
	a->sq_psn = 0x4321;
	a->max_rd_atomic = 1;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 12;
	a->timeout = 20;	/* 4.3 s */
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->en_sqd_async_notify = 1;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = self->gid;
	a->ah_attr.grh.sgid_index = 0;
	a->ah_attr.grh.hop_limit = 1;
	a->ah_attr.port_num = 1;
}

/*
 * The required attributes of the legal transitions (ib_core's qp_state_table,
 * ibv_modify_qp(3)).
 */
static int req_mask(enum ibv_qp_type t, enum ibv_qp_state cur,
		    enum ibv_qp_state next)
{
	if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT)
		return IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       (t == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) {
		if (t == IBV_QPT_UD)
			return 0;
		return IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN | (t == IBV_QPT_RC ?
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0);
	}
	if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS)
		return IBV_QP_SQ_PSN | (t == IBV_QPT_RC ?
			IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC : 0);
	return 0;
}

/* The optional ones (without IBV_QP_ALT_PATH, which vroce rejects). */
static int opt_mask(enum ibv_qp_type t, enum ibv_qp_state cur,
		    enum ibv_qp_state next)
{
	int ud = t == IBV_QPT_UD, rc = t == IBV_QPT_RC;
	int conn_init = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	int conn_rts = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
		       IBV_QP_PATH_MIG_STATE | (rc ? IBV_QP_MIN_RNR_TIMER : 0);

	if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT)
		return ud ? IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY :
			    conn_init;
	if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR)
		return ud ? IBV_QP_PKEY_INDEX | IBV_QP_QKEY :
			    IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
	if ((cur == IBV_QPS_RTR || cur == IBV_QPS_RTS || cur == IBV_QPS_SQD) &&
	    next == IBV_QPS_RTS)
		return ud ? IBV_QP_CUR_STATE | IBV_QP_QKEY : conn_rts;
	if (cur == IBV_QPS_RTS && next == IBV_QPS_SQD)
		return IBV_QP_EN_SQD_ASYNC_NOTIFY;
	if (cur == IBV_QPS_SQD && next == IBV_QPS_SQD) {
		if (ud)
			return IBV_QP_PKEY_INDEX | IBV_QP_QKEY;
		/*
		 * UC also allows AV, but uverbs adds IB_QP_PORT to an SQD->SQD
		 * AV change, which UC does not allow: that is ib_core's.
		 */
		if (!rc)
			return IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
			       IBV_QP_PATH_MIG_STATE;
		return IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT |
		       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
		       IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
		       IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
	}
	return 0;
}

static int legal(enum ibv_qp_state cur, enum ibv_qp_state next)
{
	switch (cur) {
	case IBV_QPS_RESET:
		return next == IBV_QPS_RESET || next == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		return next == IBV_QPS_RESET || next == IBV_QPS_ERR ||
		       next == IBV_QPS_INIT || next == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		return next == IBV_QPS_RESET || next == IBV_QPS_ERR ||
		       next == IBV_QPS_RTS;
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
		return next == IBV_QPS_RESET || next == IBV_QPS_ERR ||
		       next == IBV_QPS_RTS || next == IBV_QPS_SQD;
	case IBV_QPS_ERR:
		return next == IBV_QPS_RESET || next == IBV_QPS_ERR;
	default:
		return 0;
	}
}

static int modify(FIXTURE_DATA(q) *self, struct ibv_qp *qp,
		  enum ibv_qp_state cur, enum ibv_qp_state next, int mask)
{
	struct ibv_qp_attr a;

	fill_attr(self, &a, cur, next);
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | mask);
}

static const enum ibv_qp_state path[] = {
	IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
};

/* Drive @qp from RESET to @to along the legal path with required attrs. */
static int drive(FIXTURE_DATA(q) *self, struct ibv_qp *qp,
		 enum ibv_qp_type t, enum ibv_qp_state to)
{
	int i, err;

	if (to == IBV_QPS_RESET)
		return 0;
	if (to == IBV_QPS_ERR)
		return drive(self, qp, t, IBV_QPS_INIT) ?:
		       modify(self, qp, IBV_QPS_INIT, IBV_QPS_ERR, 0);
	if (to == IBV_QPS_SQD)
		return drive(self, qp, t, IBV_QPS_RTS) ?:
		       modify(self, qp, IBV_QPS_RTS, IBV_QPS_SQD, 0);
	for (i = 1; i < 4; i++) {
		err = modify(self, qp, path[i - 1], path[i],
			     req_mask(t, path[i - 1], path[i]));
		if (err || path[i] == to)
			return err;
	}
	return EINVAL;
}

/* Attribute bits the table walk tries as missing or extra. */
static const int attr_bits[] = {
	IBV_QP_CUR_STATE, IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_ACCESS_FLAGS,
	IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_QKEY, IBV_QP_AV,
	IBV_QP_PATH_MTU, IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY,
	IBV_QP_RQ_PSN, IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER,
	IBV_QP_SQ_PSN, IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_PATH_MIG_STATE,
	IBV_QP_DEST_QPN,
};

static const enum ibv_qp_state walk_from[] = {
	IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD,
	IBV_QPS_ERR,
};

/* Everything that must fail from @cur fails with EINVAL and changes nothing. */
static void walk_invalid(struct __test_metadata *_metadata,
			 FIXTURE_DATA(q) *self, enum ibv_qp_type t,
			 enum ibv_qp_state cur)
{
	struct ibv_qp *qp = make_qp(self, t, NULL);
	int next, req, opt, b, n = 0;

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, t, cur));
	for (next = IBV_QPS_RESET; next <= IBV_QPS_ERR; next++) {
		req = req_mask(t, cur, next);
		opt = opt_mask(t, cur, next);
		if (!legal(cur, next)) {
			EXPECT_EQ(EINVAL, modify(self, qp, cur, next, req))
				TH_LOG("type %d %d->%d accepted", t, cur, next);
			n++;
			continue;
		}
		for (b = 0; b < (int)(sizeof(attr_bits) / sizeof(*attr_bits));
		     b++) {
			int bit = attr_bits[b];

			if (req & bit) {
				EXPECT_EQ(EINVAL, modify(self, qp, cur, next,
							 req & ~bit))
					TH_LOG("type %d %d->%d without %#x",
					       t, cur, next, bit);
				n++;
			} else if (!(opt & bit)) {
				EXPECT_EQ(EINVAL, modify(self, qp, cur, next,
							 req | bit))
					TH_LOG("type %d %d->%d with %#x",
					       t, cur, next, bit);
				n++;
			}
		}
		EXPECT_EQ(cur, qp_state(qp));
	}
	EXPECT_LT(0, n);
	EXPECT_EQ(cur, qp_state(qp));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Every legal transition from @cur works with its required attributes,
 * and also with all its optional ones.
 */
static void walk_valid(struct __test_metadata *_metadata,
		       FIXTURE_DATA(q) *self, enum ibv_qp_type t,
		       enum ibv_qp_state cur)
{
	struct ibv_qp *qp;
	int next, all;

	for (next = IBV_QPS_RESET; next <= IBV_QPS_ERR; next++) {
		if (!legal(cur, next))
			continue;
		for (all = 0; all < 2; all++) {
			int mask = req_mask(t, cur, next) |
				   (all ? opt_mask(t, cur, next) : 0);

			qp = make_qp(self, t, NULL);
			ASSERT_NE(NULL, qp);
			ASSERT_EQ(0, drive(self, qp, t, cur));
			EXPECT_EQ(0, modify(self, qp, cur, next, mask))
				TH_LOG("type %d %d->%d mask %#x", t, cur, next,
				       mask);
			EXPECT_EQ(next, qp_state(qp));
			EXPECT_EQ(0, ibv_destroy_qp(qp));
		}
	}
}

static void walk_table(struct __test_metadata *_metadata,
		       FIXTURE_DATA(q) *self, enum ibv_qp_type t)
{
	unsigned int i;

	for (i = 0; i < sizeof(walk_from) / sizeof(*walk_from); i++) {
		walk_invalid(_metadata, self, t, walk_from[i]);
		walk_valid(_metadata, self, t, walk_from[i]);
	}
}

TEST_F(q, state_table_rc)
{
	walk_table(_metadata, self, IBV_QPT_RC);
}

TEST_F(q, state_table_uc)
{
	walk_table(_metadata, self, IBV_QPT_UC);
}

TEST_F(q, state_table_ud)
{
	walk_table(_metadata, self, IBV_QPT_UD);
}

/* Bad values fail with EINVAL and change nothing. */
TEST_F(q, modify_bad_values)
{
	struct ibv_qp *qp = make_qp(self, IBV_QPT_RC, NULL);
	struct ibv_qp_attr a;
	int init = req_mask(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT);
	int rtr = req_mask(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR);
	int rts = req_mask(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS);

	ASSERT_NE(NULL, qp);
	fill_attr(self, &a, IBV_QPS_RESET, IBV_QPS_INIT);
	a.pkey_index = 1;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE | init));
	fill_attr(self, &a, IBV_QPS_RESET, IBV_QPS_INIT);
	a.qp_access_flags = 0x8000;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE | init));
	EXPECT_EQ(IBV_QPS_RESET, qp_state(qp));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_RESET, IBV_QPS_INIT, init));

	fill_attr(self, &a, IBV_QPS_INIT, IBV_QPS_RTR);
	a.max_dest_rd_atomic = self->attr.max_qp_rd_atom + 1;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE | rtr));
	fill_attr(self, &a, IBV_QPS_INIT, IBV_QPS_RTR);
	a.min_rnr_timer = 32;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE | rtr));
	fill_attr(self, &a, IBV_QPS_INIT, IBV_QPS_RTR);
	a.ah_attr.grh.sgid_index = 200;
	EXPECT_NE(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | rtr));
	fill_attr(self, &a, IBV_QPS_INIT, IBV_QPS_RTR);
	a.dest_qp_num = 1 << 24;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE | rtr));
	EXPECT_EQ(IBV_QPS_INIT, qp_state(qp));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr));

	fill_attr(self, &a, IBV_QPS_RTR, IBV_QPS_RTS);
	a.timeout = 32;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE | rts));
	fill_attr(self, &a, IBV_QPS_RTR, IBV_QPS_RTS);
	a.retry_cnt = 8;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE | rts));
	fill_attr(self, &a, IBV_QPS_RTR, IBV_QPS_RTS);
	a.max_rd_atomic = self->attr.max_qp_init_rd_atom + 1;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE | rts));
	fill_attr(self, &a, IBV_QPS_RTR, IBV_QPS_RTS);
	a.cur_qp_state = IBV_QPS_RTS;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &a, IBV_QP_STATE |
					IBV_QP_CUR_STATE | rts));
	EXPECT_EQ(IBV_QPS_RTR, qp_state(qp));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* query_qp returns what modify_qp stored. */
TEST_F(q, query_qp_attrs)
{
	struct ibv_qp *qp = make_qp(self, IBV_QPT_RC, NULL);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_RTS));
	memset(&a, 0xa5, sizeof(a));
	ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_STATE, &init));
	EXPECT_EQ(IBV_QPS_RTS, a.qp_state);
	EXPECT_EQ(IBV_MTU_1024, a.path_mtu);
	EXPECT_EQ(0x123, a.dest_qp_num);
	EXPECT_EQ(0x1234, a.rq_psn);
	EXPECT_EQ(0x4321, a.sq_psn);
	EXPECT_EQ(1, a.max_rd_atomic);
	EXPECT_EQ(1, a.max_dest_rd_atomic);
	EXPECT_EQ(12, a.min_rnr_timer);
	EXPECT_EQ(20, a.timeout);
	EXPECT_EQ(7, a.retry_cnt);
	EXPECT_EQ(7, a.rnr_retry);
	EXPECT_EQ(1, a.port_num);
	EXPECT_EQ(0, a.sq_draining);
	EXPECT_EQ(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		  a.qp_access_flags);
	EXPECT_EQ(1, a.ah_attr.is_global);
	EXPECT_EQ(0, memcmp(&a.ah_attr.grh.dgid, &self->gid,
			    sizeof(self->gid)));
	EXPECT_LE(16, init.cap.max_send_wr);
	EXPECT_LE(16, init.cap.max_recv_wr);
	EXPECT_LE(2, init.cap.max_send_sge);
	EXPECT_LE(2, init.cap.max_recv_sge);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(q, qp_caps)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
	};
	struct ibv_qp_init_attr init, qinit;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		memset(&init, 0, sizeof(init));
		init.send_cq = self->scq;
		init.recv_cq = self->rcq;
		init.qp_type = types[i];
		init.cap.max_send_wr = 100;
		init.cap.max_recv_wr = 33;
		init.cap.max_send_sge = 3;
		init.cap.max_recv_sge = 5;
		init.cap.max_inline_data = 64;
		qp = ibv_create_qp(self->pd, &init);
		ASSERT_NE(NULL, qp);
		EXPECT_LE(100, init.cap.max_send_wr);
		EXPECT_LE(33, init.cap.max_recv_wr);
		EXPECT_LE(3, init.cap.max_send_sge);
		EXPECT_LE(5, init.cap.max_recv_sge);
		EXPECT_LE(64, init.cap.max_inline_data);
		ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_CAP, &qinit));
		EXPECT_EQ(init.cap.max_send_wr, qinit.cap.max_send_wr);
		EXPECT_EQ(init.cap.max_recv_wr, qinit.cap.max_recv_wr);
		EXPECT_EQ(init.cap.max_send_sge, qinit.cap.max_send_sge);
		EXPECT_EQ(init.cap.max_inline_data, qinit.cap.max_inline_data);
		EXPECT_EQ(IBV_QPS_RESET, qp_state(qp));
		EXPECT_LE(16, qp->qp_num);
		EXPECT_GT(1 << 24, qp->qp_num);
		EXPECT_EQ(0, ibv_destroy_qp(qp));

		init.cap.max_send_wr = self->attr.max_qp_wr + 1;
		EXPECT_EQ(NULL, ibv_create_qp(self->pd, &init));
		EXPECT_EQ(EINVAL, errno);
		init.cap.max_send_wr = 1;
		init.cap.max_recv_wr = self->attr.max_qp_wr + 1;
		EXPECT_EQ(NULL, ibv_create_qp(self->pd, &init));
		EXPECT_EQ(EINVAL, errno);
		init.cap.max_recv_wr = 1;
		init.cap.max_send_sge = self->attr.max_sge + 1;
		EXPECT_EQ(NULL, ibv_create_qp(self->pd, &init));
		EXPECT_EQ(EINVAL, errno);
		init.cap.max_send_sge = 1;
		init.cap.max_inline_data = 1 << 20;
		EXPECT_EQ(NULL, ibv_create_qp(self->pd, &init));
		EXPECT_EQ(EINVAL, errno);
	}
}

static int post_send(struct ibv_qp *qp, uint64_t wr_id,
		     enum ibv_wr_opcode opcode)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)test_buf, .length = 64, .lkey = test_lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = opcode, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct ibv_qp *qp, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)test_buf + 64, .length = 64,
		.lkey = test_lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int poll_all(struct ibv_cq *cq, struct ibv_wc *wc, int max)
{
	int n = 0, r;

	while (n < max && (r = ibv_poll_cq(cq, max - n, wc + n)) > 0)
		n += r;
	return n;
}

static void expect_flushed(struct __test_metadata *_metadata,
			   struct ibv_wc *wc, int n, struct ibv_qp *qp,
			   uint64_t first_id, enum ibv_wc_opcode opcode)
{
	int i;

	for (i = 0; i < n; i++) {
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status);
		EXPECT_EQ(first_id + i, wc[i].wr_id);
		EXPECT_EQ(qp->qp_num, wc[i].qp_num);
		EXPECT_EQ(opcode, wc[i].opcode);
	}
}

/* Entering ERR completes every outstanding WQE with FLUSH_ERR, in order. */
TEST_F(q, flush_on_error)
{
	enum { N = 5, M = 7 };
	struct ibv_qp *qp = make_qp(self, IBV_QPT_RC, NULL);
	struct ibv_wc wc[32];
	int i;

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_INIT));
	for (i = 0; i < N; i++)
		ASSERT_EQ(0, post_recv(qp, 100 + i));
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_RTS));
	for (i = 0; i < M; i++)
		ASSERT_EQ(0, post_send(qp, 200 + i, IBV_WR_RDMA_WRITE));
	/* Nobody acknowledges them: they stay outstanding. */
	EXPECT_EQ(0, ibv_poll_cq(self->scq, 32, wc));
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 32, wc));

	ASSERT_EQ(0, modify(self, qp, IBV_QPS_RTS, IBV_QPS_ERR, 0));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(qp));
	ASSERT_EQ(M, poll_all(self->scq, wc, 32));
	expect_flushed(_metadata, wc, M, qp, 200, IBV_WC_RDMA_WRITE);
	ASSERT_EQ(N, poll_all(self->rcq, wc, 32));
	expect_flushed(_metadata, wc, N, qp, 100, IBV_WC_RECV);

	/* Posted in ERR: flushed at once (receives by the next doorbell). */
	ASSERT_EQ(0, post_recv(qp, 300));
	ASSERT_EQ(0, post_send(qp, 400, IBV_WR_SEND));
	ASSERT_EQ(1, poll_all(self->scq, wc, 32));
	expect_flushed(_metadata, wc, 1, qp, 400, IBV_WC_SEND);
	ASSERT_EQ(1, poll_all(self->rcq, wc, 32));
	expect_flushed(_metadata, wc, 1, qp, 300, IBV_WC_RECV);

	/* ERR -> RESET -> INIT: the QP is usable again and empty. */
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_ERR, IBV_QPS_RESET, 0));
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_INIT));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_INIT, IBV_QPS_ERR, 0));
	EXPECT_EQ(0, ibv_poll_cq(self->scq, 32, wc));
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 32, wc));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Modify to RESET drops queued WQEs without completions. */
TEST_F(q, reset_discards)
{
	struct ibv_qp *qp = make_qp(self, IBV_QPT_UD, NULL);
	struct ibv_wc wc[8];

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_UD, IBV_QPS_INIT));
	ASSERT_EQ(0, post_recv(qp, 1));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_INIT, IBV_QPS_RESET, 0));
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_UD, IBV_QPS_INIT));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_INIT, IBV_QPS_ERR, 0));
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 8, wc));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * A WQE the QP type does not allow (UC has no RDMA read; the provider does
 * not check) fails the QP, it is not executed. The doorbell may leave the
 * WQE to the QP's task (busy at that moment): its completion may follow
 * the post.
 */
TEST_F(q, bad_wqe_fails_qp)
{
	struct ibv_qp *qp = make_qp(self, IBV_QPT_UC, NULL);
	struct ibv_wc wc[8];

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_UC, IBV_QPS_RTS));
	ASSERT_EQ(0, post_send(qp, 77, IBV_WR_RDMA_READ));
	ASSERT_EQ(1, vroce_poll_one(self->scq, wc, 10));
	EXPECT_EQ(0, ibv_poll_cq(self->scq, 7, wc + 1));
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, wc[0].status);
	EXPECT_EQ(77, wc[0].wr_id);
	EXPECT_EQ(qp->qp_num, wc[0].qp_num);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(qp));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* A full CQ raises IBV_EVENT_CQ_ERR; the completions that fit are kept. */
TEST_F(q, cq_overflow_event)
{
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.send_cq = self->scq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 64,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_async_event ev;
	struct ibv_wc wc[64];
	struct ibv_qp *qp;
	int i;

	ASSERT_NE(NULL, cq);
	ASSERT_LE(4, cq->cqe);
	init.recv_cq = cq;
	qp = ibv_create_qp(self->pd, &init);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_INIT));
	for (i = 0; i < cq->cqe + 3; i++)
		ASSERT_EQ(0, post_recv(qp, i));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_INIT, IBV_QPS_ERR, 0));
	ASSERT_EQ(0, vroce_wait_async(self->ctx, &ev, 10));
	EXPECT_EQ(IBV_EVENT_CQ_ERR, ev.event_type);
	EXPECT_EQ(cq, ev.element.cq);
	ibv_ack_async_event(&ev);
	ASSERT_EQ(cq->cqe, poll_all(cq, wc, 64));
	expect_flushed(_metadata, wc, cq->cqe, qp, 0, IBV_WC_RECV);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/* RC QPs @a and @b of this device, connected to each other, in RTS. */
static int connect_pair(FIXTURE_DATA(q) *self, struct ibv_qp *a,
			struct ibv_qp *b)
{
	struct vroce_rc_path path = {
		VROCE_RC_DEFAULTS,
		.dgid = self->gid, .sgid_idx = 0, .mtu = IBV_MTU_1024,
	};

	if (vroce_rc_init(a, &path) || vroce_rc_init(b, &path))
		return -1;
	path.dest_qpn = b->qp_num;
	if (vroce_rc_rtr(a, &path))
		return -1;
	path.dest_qpn = a->qp_num;
	if (vroce_rc_rtr(b, &path))
		return -1;
	return vroce_rc_rts(a, &path) || vroce_rc_rts(b, &path) ? -1 : 0;
}

/*
 * IBTA: a CQ overrun by traffic is an affiliated asynchronous error. The
 * CQ gets IBV_EVENT_CQ_ERR, then the QP whose completion was lost
 * IBV_EVENT_QP_FATAL, and that QP is in ERR. The completions that fit are
 * kept; the CQ stays in error (resize fails with EIO); the failed QP
 * flushes a send posted later, and a receive posted later is accepted.
 */
TEST_F(q, cq_overrun_fails_qp)
{
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.send_cq = self->scq, .recv_cq = self->rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int cq_err = 0, qp_fatal = 0, seq = 0, i, n;
	struct ibv_async_event ev;
	struct ibv_qp *tx, *rx;
	struct ibv_wc wc[16];

	ASSERT_NE(NULL, cq);
	ASSERT_GE(8, cq->cqe);
	tx = ibv_create_qp(self->pd, &init);
	ASSERT_NE(NULL, tx);
	init.send_cq = self->rcq;	/* tx receives nothing */
	init.recv_cq = cq;
	rx = ibv_create_qp(self->pd, &init);
	ASSERT_NE(NULL, rx);
	ASSERT_EQ(0, connect_pair(self, tx, rx));

	n = cq->cqe + 3;
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, post_recv(rx, i));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, post_send(tx, 100 + i, IBV_WR_SEND));

	while (!(cq_err && qp_fatal) &&
	       !vroce_wait_async(self->ctx, &ev, 10)) {
		if (ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == cq)
			cq_err = ++seq;
		else if (ev.event_type == IBV_EVENT_QP_FATAL &&
			 ev.element.qp == rx)
			qp_fatal = ++seq;
		else
			TH_LOG("other event: %s",
			       ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	EXPECT_EQ(1, cq_err) TH_LOG("no IBV_EVENT_CQ_ERR first");
	EXPECT_EQ(2, qp_fatal) TH_LOG("no IBV_EVENT_QP_FATAL after it");
	EXPECT_EQ(IBV_QPS_ERR, qp_state(rx));

	/* The completions that fit, in order. */
	ASSERT_EQ(cq->cqe, poll_all(cq, wc, 16));
	for (i = 0; i < cq->cqe; i++) {
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
		EXPECT_EQ(i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_RECV, wc[i].opcode);
		EXPECT_EQ(rx->qp_num, wc[i].qp_num);
	}
	EXPECT_EQ(EIO, ibv_resize_cq(cq, 16));

	/* The failed QP: a send flushes, a receive is taken and lost. */
	ASSERT_EQ(0, post_send(rx, 77, IBV_WR_SEND));
	ASSERT_EQ(1, vroce_poll_one(self->rcq, wc, 10));
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);
	EXPECT_EQ(77, wc[0].wr_id);
	EXPECT_EQ(rx->qp_num, wc[0].qp_num);
	EXPECT_EQ(0, post_recv(rx, 78));
	EXPECT_EQ(0, poll_all(cq, wc, 16));

	EXPECT_EQ(0, ibv_destroy_qp(rx));
	EXPECT_EQ(0, ibv_destroy_qp(tx));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/* Move this process into the cgroup v2 directory @dir: 0 or -1. */
static int cg_enter(const char *dir)
{
	char path[512];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fprintf(f, "%d\n", getpid()) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * The memory cgroup @dir's usage, limit and events, in @buf (for a failure
 * message): "memory.current: N memory.max: N memory.events: low N ...",
 * with the error for a file that could not be read.
 */
static const char *cg_usage(const char *dir, char *buf, size_t len)
{
	static const char * const files[] = { "memory.current",
					      "memory.max", "memory.events" };
	size_t off = 0, i, n;
	char path[512], *nl;
	FILE *f;

	buf[0] = '\0';
	for (i = 0; i < sizeof(files) / sizeof(files[0]) && off < len; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		f = fopen(path, "r");
		if (!f) {
			off += snprintf(buf + off, len - off, "%s: %s; ",
					files[i], strerror(errno));
			continue;
		}
		off += snprintf(buf + off, len - off, "%s: ", files[i]);
		if (off < len) {
			n = fread(buf + off, 1, len - off - 1, f);
			buf[off + n] = '\0';
			while ((nl = strchr(buf + off, '\n')))
				*nl = ' ';
			off += n;
		}
		fclose(f);
	}
	return buf;
}

/* An RC QP with @wr send and receive WRs of the device's maximum SGEs. */
static struct ibv_qp *big_qp(FIXTURE_DATA(q) *self, uint32_t wr)
{
	struct ibv_qp_init_attr init = {
		.send_cq = self->scq, .recv_cq = self->rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr,
			 .max_send_sge = self->attr.max_sge,
			 .max_recv_sge = self->attr.max_sge },
	};

	return ibv_create_qp(self->pd, &init);
}

/*
 * User rings are charged to the creator's memory cgroup: in a cgroup whose
 * memory.max (set by queues.sh, VROCE_MEMCG) is below a QP of the maximum
 * size, creating one fails with ENOMEM, a small one still works; back in
 * the parent cgroup the big one is created.
 */
TEST_F(q, rings_charged_to_memcg)
{
	const char *cg = getenv("VROCE_MEMCG");
	char parent[512], use[512];
	struct ibv_qp *qp;
	int err;

	if (!cg || !*cg)
		SKIP(return, "no memory cgroup (VROCE_MEMCG)");
	snprintf(parent, sizeof(parent), "%s/..", cg);
	ASSERT_EQ(0, cg_enter(cg));
	qp = big_qp(self, self->attr.max_qp_wr);
	err = qp ? 0 : errno;
	if (qp)
		ibv_destroy_qp(qp);
	EXPECT_EQ(ENOMEM, err) TH_LOG("a QP bigger than memory.max: %s; %s",
				      err ? strerror(err) : "created",
				      cg_usage(cg, use, sizeof(use)));
	qp = big_qp(self, 16);
	err = qp ? 0 : errno;
	EXPECT_NE(NULL, qp) TH_LOG("small QP: %s; %s", strerror(err),
				   cg_usage(cg, use, sizeof(use)));
	if (qp)
		EXPECT_EQ(0, ibv_destroy_qp(qp));
	ASSERT_EQ(0, cg_enter(parent));
	qp = big_qp(self, self->attr.max_qp_wr);
	err = qp ? 0 : errno;
	ASSERT_NE(NULL, qp) TH_LOG("outside the cgroup: %s; %s", strerror(err),
				   cg_usage(cg, use, sizeof(use)));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* The verbs return an errno, or -1 and set errno (older providers). */
static int verr(int rc)
{
	return rc < 0 ? errno : rc;
}

/* The IPv6 multicast group ff0e::db8:<n>. */
static union ibv_gid *mgid(union ibv_gid *g, int n)
{
	memset(g, 0, sizeof(*g));
	g->raw[0] = 0xff;
	g->raw[1] = 0x0e;
	g->raw[12] = 0x0d;
	g->raw[13] = 0xb8;
	g->raw[14] = n >> 8;
	g->raw[15] = n;
	return g;
}

/*
 * A UD QP joins at most as many groups as a socket of its namespace may
 * (net.ipv4.igmp_max_memberships); ENOMEM beyond, as the other multicast
 * limits. The limit is per QP, and a detach makes room.
 */
TEST_F(q, mcast_groups_per_qp)
{
	struct ibv_qp *qp = make_qp(self, IBV_QPT_UD, NULL);
	struct ibv_qp *other = make_qp(self, IBV_QPT_UD, NULL);
	FILE *f = fopen("/proc/sys/net/ipv4/igmp_max_memberships", "r");
	union ibv_gid g;
	int max = 0, i;

	ASSERT_NE(NULL, f);
	ASSERT_EQ(1, fscanf(f, "%d", &max));
	fclose(f);
	if (max < 1 || max > 1000)
		SKIP(return, "igmp_max_memberships %d", max);
	ASSERT_NE(NULL, qp);
	ASSERT_NE(NULL, other);
	for (i = 0; i < max; i++)
		ASSERT_EQ(0, verr(ibv_attach_mcast(qp, mgid(&g, i), 0)))
			TH_LOG("group %d of %d", i + 1, max);
	EXPECT_EQ(ENOMEM, verr(ibv_attach_mcast(qp, mgid(&g, max), 0)));
	EXPECT_EQ(0, verr(ibv_attach_mcast(other, mgid(&g, 0), 0)));
	EXPECT_EQ(0, verr(ibv_attach_mcast(other, mgid(&g, max), 0)));
	EXPECT_EQ(0, verr(ibv_detach_mcast(qp, mgid(&g, 0), 0)));
	EXPECT_EQ(0, verr(ibv_attach_mcast(qp, mgid(&g, max), 0)));

	for (i = 1; i <= max; i++)
		EXPECT_EQ(0, verr(ibv_detach_mcast(qp, mgid(&g, i), 0)));
	EXPECT_EQ(0, verr(ibv_detach_mcast(other, mgid(&g, 0), 0)));
	EXPECT_EQ(0, verr(ibv_detach_mcast(other, mgid(&g, max), 0)));
	EXPECT_EQ(0, ibv_destroy_qp(other));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Completion channel events, armed with req_notify, from flushes. */
TEST_F(q, cq_notify_channel)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(self->ctx);
	struct ibv_qp_init_attr init = {
		.send_cq = self->scq, .qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct pollfd pfd;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_wc wc[8];
	struct ibv_qp *qp;
	void *ev_ctx;

	ASSERT_NE(NULL, ch);
	cq = ibv_create_cq(self->ctx, 8, (void *)0x1234, ch, 0);
	ASSERT_NE(NULL, cq);
	init.recv_cq = cq;
	qp = ibv_create_qp(self->pd, &init);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_UC, IBV_QPS_INIT));
	ASSERT_EQ(0, post_recv(qp, 1));
	ASSERT_EQ(0, post_recv(qp, 2));

	/* Not armed: no event. */
	ASSERT_EQ(0, ibv_req_notify_cq(cq, 0));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_INIT, IBV_QPS_ERR, 0));
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ(0, ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	EXPECT_EQ(cq, ev_cq);
	EXPECT_EQ((void *)0x1234, ev_ctx);
	ibv_ack_cq_events(cq, 1);
	/* One event per arm: the second completion raised none. */
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(2, poll_all(cq, wc, 8));

	/* Solicited-only arm: flushes are not solicited. */
	ASSERT_EQ(0, ibv_req_notify_cq(cq, 1));
	ASSERT_EQ(0, post_recv(qp, 3));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_ERR, IBV_QPS_ERR, 0));
	EXPECT_EQ(1, poll_all(cq, wc, 8));
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
}

TEST_F(q, cq_create_limits)
{
	struct ibv_cq *cq;
	int sizes[] = { 1, 2, 3, 63, 64, 1000, self->attr.max_cqe };
	unsigned int i;

	for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		cq = ibv_create_cq(self->ctx, sizes[i], NULL, NULL, 0);
		ASSERT_NE(NULL, cq) TH_LOG("cqe %d", sizes[i]);
		EXPECT_LE(sizes[i], cq->cqe);
		EXPECT_GE(self->attr.max_cqe, cq->cqe);
		EXPECT_EQ(0, ibv_destroy_cq(cq));
	}
	EXPECT_EQ(NULL, ibv_create_cq(self->ctx, self->attr.max_cqe + 1,
				      NULL, NULL, 0));
	EXPECT_EQ(EINVAL, errno);
}

/* Resize keeps the completions present, in order; too small is EINVAL. */
TEST_F(q, cq_resize)
{
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr init = {
		.send_cq = self->scq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_wc wc[64];
	struct ibv_qp *qp;
	int i;

	ASSERT_NE(NULL, cq);
	/* Empty: grow and shrink. */
	ASSERT_EQ(0, ibv_resize_cq(cq, 200));
	EXPECT_LE(200, cq->cqe);
	ASSERT_EQ(0, ibv_resize_cq(cq, 4));
	EXPECT_LE(4, cq->cqe);
	EXPECT_GT(200, cq->cqe);
	ASSERT_EQ(0, ibv_resize_cq(cq, 16));

	init.recv_cq = cq;
	qp = ibv_create_qp(self->pd, &init);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_INIT));
	for (i = 0; i < 10; i++)
		ASSERT_EQ(0, post_recv(qp, 500 + i));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_INIT, IBV_QPS_ERR, 0));
	/* Take two, leave eight. */
	ASSERT_EQ(2, ibv_poll_cq(cq, 2, wc));
	expect_flushed(_metadata, wc, 2, qp, 500, IBV_WC_RECV);

	EXPECT_EQ(EINVAL, ibv_resize_cq(cq, 4));
	ASSERT_EQ(0, ibv_resize_cq(cq, 40));
	ASSERT_EQ(1, ibv_poll_cq(cq, 1, wc));
	expect_flushed(_metadata, wc, 1, qp, 502, IBV_WC_RECV);
	ASSERT_EQ(0, ibv_resize_cq(cq, 8));
	ASSERT_EQ(7, poll_all(cq, wc, 64));
	expect_flushed(_metadata, wc, 7, qp, 503, IBV_WC_RECV);

	/* The resized ring is live: new completions land in it. */
	ASSERT_EQ(0, post_recv(qp, 600));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_ERR, IBV_QPS_ERR, 0));
	ASSERT_EQ(1, poll_all(cq, wc, 64));
	expect_flushed(_metadata, wc, 1, qp, 600, IBV_WC_RECV);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/* ib_core keeps a CQ in use by a QP alive. */
TEST_F(q, cq_busy)
{
	struct ibv_qp *qp = make_qp(self, IBV_QPT_RC, NULL);

	ASSERT_NE(NULL, qp);
	EXPECT_EQ(EBUSY, ibv_destroy_cq(self->scq));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* RTS->SQD drains (nothing in flight without a transport) and says so. */
TEST_F(q, sqd_drained_event)
{
	struct ibv_qp *qp = make_qp(self, IBV_QPT_RC, NULL);
	struct ibv_async_event ev;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	struct ibv_wc wc[8];

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_RTS));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_RTS, IBV_QPS_SQD,
			    IBV_QP_EN_SQD_ASYNC_NOTIFY));
	ASSERT_EQ(0, vroce_wait_async(self->ctx, &ev, 10));
	EXPECT_EQ(IBV_EVENT_SQ_DRAINED, ev.event_type);
	EXPECT_EQ(qp, ev.element.qp);
	ibv_ack_async_event(&ev);
	ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_STATE, &init));
	EXPECT_EQ(IBV_QPS_SQD, a.qp_state);
	EXPECT_EQ(0, a.sq_draining);

	/* Posted in SQD: queued, not started, flushed on ERR. */
	ASSERT_EQ(0, post_send(qp, 9, IBV_WR_SEND));
	EXPECT_EQ(0, ibv_poll_cq(self->scq, 8, wc));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_SQD, IBV_QPS_RTS, 0));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_RTS, IBV_QPS_ERR, 0));
	ASSERT_EQ(1, poll_all(self->scq, wc, 8));
	expect_flushed(_metadata, wc, 1, qp, 9, IBV_WC_SEND);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Destroying a QP with WQEs queued completes nothing. */
TEST_F(q, destroy_with_outstanding)
{
	struct ibv_qp *qp = make_qp(self, IBV_QPT_RC, NULL);
	struct ibv_wc wc[8];

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_RTS));
	ASSERT_EQ(0, post_recv(qp, 1));
	ASSERT_EQ(0, post_send(qp, 2, IBV_WR_SEND));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_poll_cq(self->scq, 8, wc));
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 8, wc));
}

TEST_F(q, srq_create_modify_query)
{
	struct ibv_srq_init_attr init = {
		.attr = { .max_wr = 10, .max_sge = 3, .srq_limit = 0 },
	};
	struct ibv_srq_attr a;
	struct ibv_srq *srq;

	srq = ibv_create_srq(self->pd, &init);
	ASSERT_NE(NULL, srq);
	EXPECT_LE(10, init.attr.max_wr);
	EXPECT_LE(3, init.attr.max_sge);
	ASSERT_EQ(0, ibv_query_srq(srq, &a));
	EXPECT_EQ(init.attr.max_wr, a.max_wr);
	EXPECT_EQ(0, a.srq_limit);

	a.srq_limit = 5;
	ASSERT_EQ(0, ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(srq, &a));
	EXPECT_EQ(5, a.srq_limit);
	a.srq_limit = a.max_wr + 1;
	EXPECT_EQ(EINVAL, ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(srq, &a));
	EXPECT_EQ(5, a.srq_limit);

	/* Resize (IBV_SRQ_MAX_WR) keeps posted receives. */
	a.max_wr = 100;
	ASSERT_EQ(0, ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR));
	ASSERT_EQ(0, ibv_query_srq(srq, &a));
	EXPECT_LE(100, a.max_wr);
	a.max_wr = self->attr.max_srq_wr + 1;
	EXPECT_EQ(EINVAL, ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR));
	EXPECT_EQ(0, ibv_destroy_srq(srq));

	init.attr.max_wr = self->attr.max_srq_wr + 1;
	EXPECT_EQ(NULL, ibv_create_srq(self->pd, &init));
	init.attr.max_wr = 4;
	init.attr.max_sge = self->attr.max_srq_sge + 1;
	EXPECT_EQ(NULL, ibv_create_srq(self->pd, &init));
}

static int post_srq(struct ibv_srq *srq, uint64_t wr_id)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id }, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* SRQ receives survive the resize and are not flushed by a QP's error. */
TEST_F(q, srq_qp_last_wqe)
{
	struct ibv_srq_init_attr sinit = {
		.attr = { .max_wr = 8, .max_sge = 1 },
	};
	struct ibv_async_event ev;
	struct ibv_srq_attr a;
	struct ibv_wc wc[8];
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	int i;

	srq = ibv_create_srq(self->pd, &sinit);
	ASSERT_NE(NULL, srq);
	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, post_srq(srq, i));
	a.max_wr = 5;
	EXPECT_EQ(EINVAL, ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR));
	a.max_wr = 64;
	ASSERT_EQ(0, ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR));
	for (i = 6; i < 40; i++)
		ASSERT_EQ(0, post_srq(srq, i));

	qp = make_qp(self, IBV_QPT_RC, srq);
	ASSERT_NE(NULL, qp);
	EXPECT_EQ(EBUSY, ibv_destroy_srq(srq));
	ASSERT_EQ(0, drive(self, qp, IBV_QPT_RC, IBV_QPS_RTS));
	ASSERT_EQ(0, modify(self, qp, IBV_QPS_RTS, IBV_QPS_ERR, 0));
	ASSERT_EQ(0, vroce_wait_async(self->ctx, &ev, 10));
	EXPECT_EQ(IBV_EVENT_QP_LAST_WQE_REACHED, ev.event_type);
	EXPECT_EQ(qp, ev.element.qp);
	ibv_ack_async_event(&ev);
	EXPECT_EQ(0, ibv_poll_cq(self->rcq, 8, wc));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

TEST_F(q, many_qps_and_cqs)
{
	enum { N = 64 };
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_cq *cq[N];
	struct ibv_qp *qp[N];
	struct ibv_wc wc[4];
	int i, j;

	for (i = 0; i < N; i++) {
		cq[i] = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);
		ASSERT_NE(NULL, cq[i]);
		init.send_cq = cq[i];
		init.recv_cq = cq[i];
		qp[i] = ibv_create_qp(self->pd, &init);
		ASSERT_NE(NULL, qp[i]);
		for (j = 0; j < i; j++)
			ASSERT_NE(qp[j]->qp_num, qp[i]->qp_num);
		ASSERT_EQ(0, drive(self, qp[i], IBV_QPT_RC, IBV_QPS_INIT));
		ASSERT_EQ(0, post_recv(qp[i], i));
	}
	for (i = 0; i < N; i++) {
		ASSERT_EQ(0, modify(self, qp[i], IBV_QPS_INIT, IBV_QPS_ERR, 0));
		ASSERT_EQ(1, poll_all(cq[i], wc, 4));
		expect_flushed(_metadata, wc, 1, qp[i], i, IBV_WC_RECV);
	}
	for (i = 0; i < N; i++) {
		EXPECT_EQ(0, ibv_destroy_qp(qp[i]));
		EXPECT_EQ(0, ibv_destroy_cq(cq[i]));
	}
}

TEST_HARNESS_MAIN
