// SPDX-License-Identifier: GPL-2.0
/*
 * The local end of the stalled-peer test (stall.sh): one RC QP on the
 * device under test, connected to a peer that is not a QP at all but
 * stall.py, which sends the first packet of a message and then nothing.
 *
 *   VROCE_DEV       the device
 *   VROCE_PEER_IP   the peer's IPv4 address (its RoCE v2 GID)
 *   VROCE_GID       the GID index to send from (default: the first RoCE v2
 *                   IPv4 one)
 *   STALL_TIMEOUT   the QP's ACK timeout exponent (default 24: a minute per
 *                   try, so an outstanding READ stays outstanding)
 *
 * The MR is registered after the QP is created, as rdma_cm applications
 * do: at process exit uverbs destroys objects newest first, so the MR goes
 * while the QP still holds it. One receive WQE covers the whole MR.
 *
 * It prints "qpn=N rq_psn=N sq_psn=N rkey=N va=N len=N mtu=N" and then
 * answers commands read from stdin, one line each, with a line that starts
 * with "ok" or "bad":
 *
 *   read LEN   post an RDMA READ of LEN bytes into the start of the MR
 *   dereg      deregister the MR, then register the same buffer again
 *              (the memory is reusable): "ok dereg S reg" (S: seconds)
 *   destroy    destroy the QP, then deregister the MR: "ok destroy S"
 *   poll S     the next completion within S seconds: "ok status=N
 *              wr_id=N", or "bad" if none came
 *   quit       exit
 *
 * The timeouts are hang guards, not timing assertions: stall.sh bounds
 * each step.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "vroce_test.h"

#define BUF_SIZE	(1u << 20)
#define PEER_QPN	0x000777u
#define RQ_PSN		0x00fff0u
#define SQ_PSN		0x123456u
#define FAKE_RKEY	0x1234u
#define FAKE_VA		0x10000ull

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *buf;
static enum ibv_mtu mtu;

static int fail(const char *what)
{
	printf("bad: %s: %s\n", what, strerror(errno));
	fflush(stdout);
	return -1;
}

/* To the peer's QP (stall.py) at @peer_ip: one READ in flight each way. */
static int connect_qp(int gid_idx, const char *peer_ip)
{
	const char *timeout = getenv("STALL_TIMEOUT");
	struct vroce_rc_path p = {
		VROCE_RC_DEFAULTS,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ,
		.rd_atomic = 1, .dest_rd_atomic = 1,
		.timeout = timeout ? atoi(timeout) : 24,
		.dest_qpn = PEER_QPN, .sgid_idx = gid_idx, .mtu = mtu,
		.rq_psn = RQ_PSN, .sq_psn = SQ_PSN,
		.dgid = { .raw = { [10] = 0xff, [11] = 0xff } },
	};

	if (inet_pton(AF_INET, peer_ip, &p.dgid.raw[12]) != 1)
		return fail("VROCE_PEER_IP");
	if (vroce_rc_init(qp, &p))
		return fail("modify to INIT");
	if (vroce_rc_rtr(qp, &p))
		return fail("modify to RTR");
	if (vroce_rc_rts(qp, &p))
		return fail("modify to RTS");
	return 0;
}

static int reg(void)
{
	mr = ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	return mr ? 0 : fail("reg_mr");
}

static int setup(void)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	const char *peer_ip = getenv("VROCE_PEER_IP");
	struct vroce_dev dev = {};

	if (!peer_ip || vroce_dev_open(&dev, getenv("VROCE_DEV"), "VROCE_GID"))
		return fail("VROCE_DEV, VROCE_PEER_IP or its GID");
	ctx = dev.ctx;
	mtu = dev.mtu;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	buf = aligned_alloc(4096, BUF_SIZE);
	if (!pd || !cq || !buf)
		return fail("pd, cq or buffer");
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		return fail("create_qp");
	/* After the QP, as rdma_cm applications do. */
	if (reg() || connect_qp(dev.gid_idx, peer_ip))
		return -1;
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = BUF_SIZE,
				.lkey = mr->lkey };
	if (ibv_post_recv(qp, &wr, &bad))
		return fail("post_recv");
	printf("qpn=%u rq_psn=%u sq_psn=%u rkey=%u va=%llu len=%u mtu=%d\n",
	       qp->qp_num, RQ_PSN, SQ_PSN, mr->rkey,
	       (unsigned long long)(uintptr_t)buf, BUF_SIZE,
	       128 << mtu);
	fflush(stdout);
	return 0;
}

static int cmd_read(unsigned int len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = FAKE_VA, .rkey = FAKE_RKEY },
	}, *bad;

	if (!len || len > BUF_SIZE || ibv_post_send(qp, &wr, &bad))
		return fail("post_send READ");
	printf("ok\n");
	return 0;
}

static int cmd_dereg(void)
{
	double t = vroce_now_s();

	if (ibv_dereg_mr(mr))
		return fail("dereg_mr");
	t = vroce_now_s() - t;
	if (reg())
		return -1;
	printf("ok dereg %.3f reg\n", t);
	return 0;
}

static int cmd_destroy(void)
{
	double t = vroce_now_s();

	if (ibv_destroy_qp(qp))
		return fail("destroy_qp");
	qp = NULL;
	if (ibv_dereg_mr(mr))
		return fail("dereg_mr after destroy_qp");
	mr = NULL;
	printf("ok destroy %.3f\n", vroce_now_s() - t);
	return 0;
}

static int cmd_poll(unsigned int s)
{
	struct ibv_wc wc;

	if (vroce_poll_one(cq, &wc, s) != 1)
		return fail("no completion");
	printf("ok status=%d wr_id=%llu\n", wc.status,
	       (unsigned long long)wc.wr_id);
	return 0;
}

int main(void)
{
	char line[128];
	unsigned int n;
	int err = 0;

	if (setup())
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "read %u", &n) == 1)
			err = cmd_read(n);
		else if (sscanf(line, "poll %u", &n) == 1)
			err = cmd_poll(n);
		else if (!strncmp(line, "dereg", 5))
			err = cmd_dereg();
		else if (!strncmp(line, "destroy", 7))
			err = cmd_destroy();
		else if (!strncmp(line, "quit", 4))
			break;
		else
			err = fail("unknown command");
		fflush(stdout);
		if (err)
			break;
	}
	return err ? 1 : 0;
}
