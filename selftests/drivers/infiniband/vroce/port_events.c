// SPDX-License-Identifier: GPL-2.0
/*
 * Helper for port.sh: open DEV, run CMD (which should change the port
 * state), and wait up to 10 s for the async event named EVENT on port 1.
 * Usage: port_events DEV IBV_EVENT_PORT_ERR|IBV_EVENT_PORT_ACTIVE CMD...
 * Exits 0 when the event arrived.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "vroce_test.h"

static int run(char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv)
{
	struct ibv_async_event ev;
	struct ibv_context *ctx;
	struct pollfd pfd;
	int want;

	if (argc < 4) {
		fprintf(stderr, "usage: %s DEV EVENT CMD...\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[2], "IBV_EVENT_PORT_ERR"))
		want = IBV_EVENT_PORT_ERR;
	else if (!strcmp(argv[2], "IBV_EVENT_PORT_ACTIVE"))
		want = IBV_EVENT_PORT_ACTIVE;
	else
		return 2;

	ctx = vroce_open_by_name(argv[1]);
	if (!ctx) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	if (run(argv + 3)) {
		fprintf(stderr, "command failed\n");
		return 1;
	}
	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, 10000) > 0) {
		while (!ibv_get_async_event(ctx, &ev)) {
			int type = ev.event_type, port = ev.element.port_num;

			ibv_ack_async_event(&ev);
			printf("event %s on port %d\n", ibv_event_type_str(type),
			       port);
			if (type == want && port == 1) {
				ibv_close_device(ctx);
				return 0;
			}
		}
	}
	fprintf(stderr, "no %s within 10 s\n", argv[2]);
	return 1;
}
