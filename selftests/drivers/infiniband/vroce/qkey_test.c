// SPDX-License-Identifier: GPL-2.0
/*
 * Controlled (privileged) Q_Keys, the ones with the high bit set, on user
 * UD QPs, in loopback on one device. Run by qkey.sh, which creates the
 * device and exports VROCE_DEV; it runs this as root.
 *
 * Without CAP_NET_RAW, modify_qp refuses a controlled Q_Key with EPERM and
 * leaves the QP as it was; a send WR's controlled Q_Key stands for the
 * sending QP's own, so such a process cannot reach a QP that has one.
 * With CAP_NET_RAW, modify_qp sets it. A case that drops CAP_NET_RAW drops
 * it from its own process only (the harness forks one per case).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <infiniband/verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

#define QKEY		0x11223344u
#define CTRL_QKEY	0x80010000u	/* controlled (IB_QP1_QKEY's value) */
#define GRH_LEN		40
#define MSG_LEN		16
#define SLOT		256		/* buffer bytes per QP */

/* Is CAP_NET_RAW in our effective set? -1 if capget failed. */
static int has_net_raw(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	return !!(d[0].effective & (1u << CAP_NET_RAW));
}

/* Drop CAP_NET_RAW from our effective and permitted sets. */
static int drop_net_raw(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[0].effective &= ~(1u << CAP_NET_RAW);
	d[0].permitted &= ~(1u << CAP_NET_RAW);
	if (syscall(SYS_capset, &h, d))
		return -1;
	return has_net_raw() == 0 ? 0 : -1;
}

/* ibv_modify_qp's error: rdma-core returns it, some versions in errno. */
static int modify_err(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	int ret;

	errno = 0;
	ret = ibv_modify_qp(qp, attr, mask);
	return ret > 0 ? ret : ret ? errno : 0;
}

static int to_init(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qkey = qkey,
	};

	return modify_err(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY);
}

/* INIT (with @qkey) -> RTR -> RTS. */
static int to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTR };
	int err = to_init(qp, qkey);

	if (err)
		return err;
	err = modify_err(qp, &attr, IBV_QP_STATE);
	if (err)
		return err;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 1;
	return modify_err(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static void query(struct __test_metadata *_metadata, struct ibv_qp *qp,
		  enum ibv_qp_state *state, uint32_t *qkey)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	ASSERT_EQ(0, ibv_query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_QKEY,
				  &init));
	*state = attr.qp_state;
	*qkey = attr.qkey;
}

/*
 * One process's verbs objects. uverbs refuses write() commands on a
 * device file opened under other credentials (ib_safe_file_access()), and
 * capset() makes new ones: a side used after dropping CAP_NET_RAW is
 * opened after it, as an unprivileged process would.
 */
struct side {
	struct vroce_dev dev;
	struct ibv_cq *cq[3];
	struct ibv_qp *qp[3];
	struct ibv_ah *ah;
};

/* Open VROCE_DEV with @nqps UD QPs, each with its CQ, and an AH to us. */
static void side_open(struct __test_metadata *_metadata, struct side *s,
		      int nqps)
{
	const char *name = getenv("VROCE_DEV");
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1 };
	int i;

	ASSERT_EQ(0, vroce_dev_open(&s->dev, name, "VROCE_GID"));
	ASSERT_EQ(0, vroce_dev_buf(&s->dev, name, 3 * SLOT,
				   IBV_ACCESS_LOCAL_WRITE));
	for (i = 0; i < nqps; i++) {
		struct ibv_qp_init_attr init = {
			.qp_type = IBV_QPT_UD,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		s->cq[i] = ibv_create_cq(s->dev.ctx, 16, NULL, NULL, 0);
		ASSERT_NE(NULL, s->cq[i]);
		init.send_cq = s->cq[i];
		init.recv_cq = s->cq[i];
		s->qp[i] = ibv_create_qp(s->dev.pd, &init);
		ASSERT_NE(NULL, s->qp[i]) TH_LOG("create_qp: %s",
						 strerror(errno));
	}
	/* Loopback: an AH to our own RoCE v2 IPv4 GID. */
	ah.grh.sgid_index = s->dev.gid_idx;
	ah.grh.hop_limit = 64;
	ah.grh.dgid = s->dev.gid;
	s->ah = ibv_create_ah(s->dev.pd, &ah);
	ASSERT_NE(NULL, s->ah) TH_LOG("create_ah: %s", strerror(errno));
}

static void side_close(struct side *s)
{
	int i;

	if (s->ah)
		ibv_destroy_ah(s->ah);
	for (i = 0; i < 3; i++) {
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
		if (s->cq[i])
			ibv_destroy_cq(s->cq[i]);
	}
	vroce_dev_close(&s->dev);
}

/* root: receivers, opened with CAP_NET_RAW; user: the sender. */
FIXTURE(qk) {
	struct side root;
	struct side user;
};

FIXTURE_SETUP(qk)
{
	if (!getenv("VROCE_DEV"))
		SKIP(return, "VROCE_DEV not set (run qkey.sh)");
}

FIXTURE_TEARDOWN(qk)
{
	side_close(&self->user);
	side_close(&self->root);
}

/* Without CAP_NET_RAW: EPERM, and the QP keeps its state and Q_Key. */
TEST_F(qk, unprivileged_modify_eperm)
{
	struct ibv_qp_attr attr = { .qkey = 0x80000000u };
	enum ibv_qp_state state;
	struct ibv_qp *qp;
	uint32_t qkey;

	ASSERT_EQ(0, drop_net_raw()) TH_LOG("cannot drop CAP_NET_RAW");
	side_open(_metadata, &self->user, 1);
	qp = self->user.qp[0];

	EXPECT_EQ(EPERM, to_init(qp, CTRL_QKEY));
	query(_metadata, qp, &state, &qkey);
	EXPECT_EQ(IBV_QPS_RESET, state);

	ASSERT_EQ(0, to_init(qp, QKEY));
	EXPECT_EQ(EPERM, modify_err(qp, &attr, IBV_QP_QKEY));
	attr.qkey = 0xffffffffu;
	EXPECT_EQ(EPERM, modify_err(qp, &attr, IBV_QP_QKEY));
	query(_metadata, qp, &state, &qkey);
	EXPECT_EQ(IBV_QPS_INIT, state);
	EXPECT_EQ(QKEY, qkey);

	/* The highest non-controlled Q_Key is anyone's. */
	attr.qkey = 0x7fffffffu;
	EXPECT_EQ(0, modify_err(qp, &attr, IBV_QP_QKEY));
	query(_metadata, qp, &state, &qkey);
	EXPECT_EQ(0x7fffffffu, qkey);
}

/* With CAP_NET_RAW a user QP may have a controlled Q_Key. */
TEST_F(qk, privileged_modify)
{
	struct ibv_qp_attr attr = { .qkey = 0xffffffffu };
	enum ibv_qp_state state;
	struct ibv_qp *qp;
	uint32_t qkey;

	if (has_net_raw() != 1)
		SKIP(return, "needs CAP_NET_RAW (run as root)");
	side_open(_metadata, &self->root, 1);
	qp = self->root.qp[0];
	ASSERT_EQ(0, to_init(qp, CTRL_QKEY));
	query(_metadata, qp, &state, &qkey);
	EXPECT_EQ(CTRL_QKEY, qkey);
	ASSERT_EQ(0, modify_err(qp, &attr, IBV_QP_QKEY));
	query(_metadata, qp, &state, &qkey);
	EXPECT_EQ(0xffffffffu, qkey);
}

static void post_recv(struct __test_metadata *_metadata, struct side *s,
		      int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->dev.buf + i * SLOT,
		.length = GRH_LEN + MSG_LEN, .lkey = s->dev.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	ASSERT_EQ(0, ibv_post_recv(s->qp[i], &wr, &bad));
}

/* @s's QP 0 sends MSG_LEN bytes to @dst with WR Q_Key @qkey; 0 if sent. */
static int send_to(struct __test_metadata *_metadata, struct side *s,
		   struct ibv_qp *dst, uint32_t qkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->dev.buf, .length = MSG_LEN,
		.lkey = s->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;
	int ret;

	wr.wr.ud.ah = s->ah;
	wr.wr.ud.remote_qpn = dst->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	ret = ibv_post_send(s->qp[0], &wr, &bad);
	if (ret) {
		TH_LOG("post_send: %s", strerror(ret));
		return -1;
	}
	ret = vroce_poll_one(s->cq[0], &wc, 5);
	if (ret != 1 || wc.status != IBV_WC_SUCCESS) {
		TH_LOG("send completion: poll %d, %s", ret,
		       ret == 1 ? ibv_wc_status_str(wc.status) : "none");
		return -1;
	}
	return 0;
}

/* Did @s's QP @i receive a datagram within @tmo_s? */
static int received(struct side *s, int i, double tmo_s)
{
	struct ibv_wc wc;

	return vroce_poll_one(s->cq[i], &wc, tmo_s) == 1 &&
	       wc.status == IBV_WC_SUCCESS;
}

/*
 * root's QP 1 has a controlled Q_Key, its QP 2 an ordinary one. Without
 * CAP_NET_RAW, user's QP cannot take QP 1's Q_Key, and a WR with it sends
 * the QP's own: QP 1 gets nothing, QP 2 (same Q_Key as the sender) gets
 * the same WR's datagram.
 */
TEST_F(qk, unprivileged_cannot_reach_controlled)
{
	struct side *r = &self->root, *u = &self->user;
	int err;

	if (has_net_raw() != 1)
		SKIP(return, "needs CAP_NET_RAW (run as root)");
	side_open(_metadata, r, 3);
	ASSERT_EQ(0, to_rts(r->qp[1], CTRL_QKEY));
	ASSERT_EQ(0, to_rts(r->qp[2], QKEY));
	post_recv(_metadata, r, 1);
	post_recv(_metadata, r, 2);
	ASSERT_EQ(0, drop_net_raw()) TH_LOG("cannot drop CAP_NET_RAW");
	side_open(_metadata, u, 1);

	/* Try to take the controlled Q_Key; on refusal, take an ordinary one. */
	err = to_rts(u->qp[0], CTRL_QKEY);
	EXPECT_EQ(EPERM, err);
	if (err)
		ASSERT_EQ(0, to_rts(u->qp[0], QKEY));

	ASSERT_EQ(0, send_to(_metadata, u, r->qp[1], CTRL_QKEY));
	EXPECT_FALSE(received(r, 1, 1.0))
		TH_LOG("an unprivileged QP reached a controlled Q_Key");
	ASSERT_EQ(0, send_to(_metadata, u, r->qp[2], CTRL_QKEY));
	EXPECT_TRUE(received(r, 2, 5.0))
		TH_LOG("a WR's controlled Q_Key did not stand for the QP's");
}

TEST_HARNESS_MAIN
