// SPDX-License-Identifier: GPL-2.0
/*
 * Helper for module.sh: open a user verbs context, a PD and a few MRs on
 * each device named on the command line, print "ready", and wait for
 * SIGUSR1. By then
 * the devices were removed under us: every query must fail (the context was
 * disassociated), and closing must not crash. Exit 0 if so.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define MAX_DEVS 8
#define NUM_MRS 4
#define MR_BYTES (1 << 20)

static struct ibv_context *open_by_name(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx[MAX_DEVS];
	struct ibv_pd *pd[MAX_DEVS];
	struct ibv_mr *mr[MAX_DEVS][NUM_MRS];
	char *buf = calloc(1, MR_BYTES);
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
		ctx[i] = open_by_name(argv[i + 1]);
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
		for (j = 0; j < NUM_MRS; j++)
			ibv_dereg_mr(mr[i][j]);
		ibv_dealloc_pd(pd[i]);
		ibv_close_device(ctx[i]);
	}
	free(buf);
	return failures ? 1 : 0;
}
