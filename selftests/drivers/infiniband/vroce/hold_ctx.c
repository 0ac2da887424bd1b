// SPDX-License-Identifier: GPL-2.0
/*
 * Helper for module.sh: open a user verbs context and a PD on each device
 * named on the command line, with a few MRs, and a CQ, an SRQ and a QP whose
 * rings are mapped and hold WQEs, print "ready", and wait for SIGUSR1. By
 * then the devices were removed under us: every query must fail (the
 * context was disassociated); touching the still-mapped rings, posting,
 * deregistering and closing must not crash. Exit 0 if so.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "vroce_test.h"

#define MAX_DEVS 8
#define NUM_MRS 4
#define MR_BYTES (1 << 20)

struct objs {
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
};

static char buf[64];

/* Post one receive to the SRQ and one send; errors are only reported. */
static void post(struct objs *o)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8 };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND,
	};
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *sbad;
	int err;

	err = ibv_post_srq_recv(o->srq, &rwr, &rbad);
	if (err)
		printf("post_srq_recv: %s\n", strerror(err));
	err = ibv_post_send(o->qp, &swr, &sbad);
	if (err)
		printf("post_send: %s\n", strerror(err));
}

static int make_objs(struct ibv_pd *pd, struct objs *o)
{
	struct ibv_srq_init_attr sinit = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_qp_init_attr qinit = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	o->cq = ibv_create_cq(pd->context, 4, NULL, NULL, 0);
	o->srq = o->cq ? ibv_create_srq(pd, &sinit) : NULL;
	if (!o->srq)
		return -1;
	qinit.send_cq = o->cq;
	qinit.recv_cq = o->cq;
	qinit.srq = o->srq;
	o->qp = ibv_create_qp(pd, &qinit);
	if (!o->qp || ibv_modify_qp(o->qp, &a, IBV_QP_STATE | IBV_QP_PORT |
				    IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS))
		return -1;
	post(o);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx[MAX_DEVS];
	struct ibv_pd *pd[MAX_DEVS];
	struct ibv_mr *mr[MAX_DEVS][NUM_MRS];
	char *buf = calloc(1, MR_BYTES);
	struct objs o[MAX_DEVS];
	struct ibv_device_attr attr;
	int i, j, n = argc - 1, sig, failures = 0;
	sigset_t set;

	if (!buf)
		return 1;
	if (n < 1 || n > MAX_DEVS) {
		fprintf(stderr, "usage: %s DEV...\n", argv[0]);
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);

	for (i = 0; i < n; i++) {
		ctx[i] = vroce_open_by_name(argv[i + 1]);
		if (!ctx[i]) {
			fprintf(stderr, "cannot open %s\n", argv[i + 1]);
			return 1;
		}
		pd[i] = ibv_alloc_pd(ctx[i]);
		if (!pd[i]) {
			fprintf(stderr, "ibv_alloc_pd(%s): %s\n", argv[i + 1],
				strerror(errno));
			return 1;
		}
		for (j = 0; j < NUM_MRS; j++) {
			mr[i][j] = ibv_reg_mr(pd[i], buf, MR_BYTES,
					      IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_WRITE);
			if (!mr[i][j]) {
				fprintf(stderr, "ibv_reg_mr(%s): %s\n",
					argv[i + 1], strerror(errno));
				return 1;
			}
		}
		if (make_objs(pd[i], &o[i])) {
			fprintf(stderr, "CQ/SRQ/QP on %s: %s\n", argv[i + 1],
				strerror(errno));
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);

	for (i = 0; i < n; i++) {
		int err = ibv_query_device(ctx[i], &attr);

		printf("%s: query after removal: %s\n", argv[i + 1],
		       err ? strerror(err) : "succeeded");
		if (!err)
			failures++;
		post(&o[i]);
		ibv_destroy_qp(o[i].qp);
		ibv_destroy_srq(o[i].srq);
		ibv_destroy_cq(o[i].cq);
		for (j = 0; j < NUM_MRS; j++)
			ibv_dereg_mr(mr[i][j]);
		ibv_dealloc_pd(pd[i]);
		ibv_close_device(ctx[i]);
	}
	free(buf);
	return failures ? 1 : 0;
}
