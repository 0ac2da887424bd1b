// SPDX-License-Identifier: GPL-2.0
/*
 * Walks every fault-injection site of a verb: step n fails the nth site
 * the calling task reaches (/proc/thread-self/fail-nth), and the walk is
 * complete at the first step whose operation reaches no nth site. Every
 * site is then failed once, also those whose failure the operation
 * survives. Each step runs in this process, so a step costs the verb and
 * not a program start.
 *
 *   fail_nth link-add DEV NETDEV [OPTIONS]  "rdma link add DEV type vroce
 *       netdev NETDEV" (netlink, RDMA_NLDEV_CMD_NEWLINK). A step that fails
 *       must leave no device; one that succeeds must give a device with an
 *       active port, which is then deleted.
 *   fail_nth open DEV [OPTIONS]  open a user context on DEV, query the
 *       device and port, allocate and free a PD, close. The last step must
 *       succeed.
 *
 * Options: --max N (give up after N steps, default 5000); --all N and
 * --every K: step through the first N sites one by one, then through one
 * site in K, at an offset drawn from --seed S (default: the time; printed),
 * so that runs with different seeds cover different sites.
 *
 * Prints the sites seen and the steps that failed the operation and exits
 * 0, or says what went wrong and exits 1 (2 on a usage or setup error).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <infiniband/verbs.h>

#define DEFAULT_MAX 5000

struct walk {
	unsigned int max;	/* steps at most */
	unsigned int all;	/* sites stepped through one by one */
	unsigned int every;	/* then one site in this many */
	unsigned int offset;	/* 1..every, from the seed */
	unsigned int steps;
	unsigned int failed;
};

/* The site after @n to fail, or 0 after --max steps. */
static unsigned int walk_next(struct walk *w, unsigned int n)
{
	if (++w->steps > w->max)
		return 0;
	if (!n)
		return w->all ? 1 : w->offset;
	if (n < w->all)
		return n + 1;
	if (n == w->all)
		return n + w->offset;
	return n + w->every;
}

static void walk_done(const struct walk *w, unsigned int n)
{
	printf("fewer than %u sites; %u steps, %u failed the operation\n", n,
	       w->steps, w->failed);
}
#define NL_BUF 8192

static int nth_fd = -1;

static int nth_open(void)
{
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth_fd < 0) {
		perror("/proc/thread-self/fail-nth");
		return -1;
	}
	return 0;
}

static int nth_set(unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	return pwrite(nth_fd, buf, len, 0) == len ? 0 : -1;
}

/* Whether the nth site was reached: the count left is then 0. Clears it. */
static int nth_reached(void)
{
	char buf[16] = "";
	ssize_t len = pread(nth_fd, buf, sizeof(buf) - 1, 0);
	unsigned long left;

	if (len <= 0)
		return -1;
	buf[len] = '\0';
	left = strtoul(buf, NULL, 10);
	if (left && nth_set(0))
		return -1;
	return !left;
}

static void nl_put_str(struct nlmsghdr *h, unsigned short type,
		       const char *s)
{
	struct nlattr *a = (void *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));
	size_t len = strlen(s) + 1;

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, s, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* RDMA_NLDEV_CMD_NEWLINK: 0 or the negative errno of the kernel's ack. */
static int nl_newlink(int sk, const char *dev, const char *ndev)
{
	static unsigned int seq;
	char buf[NL_BUF] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *h = (void *)buf;
	struct nlmsgerr *e;
	ssize_t len;

	memset(buf, 0, NLMSG_HDRLEN);
	h->nlmsg_len = NLMSG_HDRLEN;
	h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_NEWLINK);
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = ++seq;
	nl_put_str(h, RDMA_NLDEV_ATTR_DEV_NAME, dev);
	nl_put_str(h, RDMA_NLDEV_ATTR_LINK_TYPE, "vroce");
	nl_put_str(h, RDMA_NLDEV_ATTR_NDEV_NAME, ndev);
	if (send(sk, buf, h->nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		len = recv(sk, buf, sizeof(buf), 0);
		if (len < 0)
			return -errno;
		if ((size_t)len < NLMSG_HDRLEN + sizeof(*e))
			return -EPROTO;
		if (h->nlmsg_seq != seq || h->nlmsg_type != NLMSG_ERROR)
			continue;
		e = NLMSG_DATA(h);
		return e->error;
	}
}

static int nl_open(void)
{
	struct timeval tv = { .tv_sec = 30 };
	int sk = socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA);

	if (sk < 0) {
		perror("netlink");
		return -1;
	}
	if (setsockopt(sk, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		perror("SO_RCVTIMEO");
		close(sk);
		return -1;
	}
	return sk;
}

static int dev_exists(const char *dev)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", dev);
	return !access(path, F_OK);
}

static int port_active(const char *dev)
{
	char path[256], state[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/state",
		 dev);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(state, sizeof(state), f))
		state[0] = '\0';
	fclose(f);
	return !!strstr(state, "ACTIVE");
}

static int dev_delete(const char *dev)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rdma link delete %s", dev);
	if (system(cmd) || dev_exists(dev)) {
		printf("cannot delete %s\n", dev);
		return -1;
	}
	return 0;
}

static int walk_link_add(struct walk *w, const char *dev, const char *ndev)
{
	unsigned int n = 0;
	int sk = nl_open(), err, reached;

	if (sk < 0)
		return 2;
	while ((n = walk_next(w, n))) {
		if (nth_set(n))
			return 2;
		err = nl_newlink(sk, dev, ndev);
		reached = nth_reached();
		if (reached < 0)
			return 2;
		if (err && dev_exists(dev)) {
			printf("site %u: %s, but %s was left behind\n", n,
			       strerror(-err), dev);
			return 1;
		}
		if (!err && !port_active(dev)) {
			printf("site %u: created, but %s has no active port\n",
			       n, dev);
			return 1;
		}
		if (!reached) {
			if (err) {
				printf("failed with no fault injected: %s\n",
				       strerror(-err));
				return 1;
			}
			walk_done(w, n);
			return dev_delete(dev) ? 1 : 0;
		}
		if (err)
			w->failed++;
		else if (dev_delete(dev))
			return 1;
	}
	printf("still reaching fault sites after %u steps\n", w->max);
	return 1;
}

/* One user of the device: 0 if every verb succeeded. */
static int use_device(struct ibv_device *d)
{
	struct ibv_context *ctx = ibv_open_device(d);
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	struct ibv_pd *pd;
	int bad = 1;

	if (!ctx)
		return 1;
	if (ibv_query_device(ctx, &attr) || ibv_query_port(ctx, 1, &port))
		goto out;
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		goto out;
	bad = !!ibv_dealloc_pd(pd);
out:
	return ibv_close_device(ctx) || bad;
}

static int walk_open(struct walk *w, const char *dev)
{
	struct ibv_device **list = ibv_get_device_list(NULL), *d = NULL;
	unsigned int n = 0;
	int i, bad, reached;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			d = list[i];
	if (!d) {
		printf("no verbs device %s\n", dev);
		return 2;
	}
	while ((n = walk_next(w, n))) {
		if (nth_set(n))
			return 2;
		bad = use_device(d);
		reached = nth_reached();
		if (reached < 0)
			return 2;
		if (!reached) {
			if (bad) {
				printf("failed with no fault injected\n");
				return 1;
			}
			walk_done(w, n);
			ibv_free_device_list(list);
			return 0;
		}
		w->failed += bad;
	}
	printf("still reaching fault sites after %u steps\n", w->max);
	return 1;
}

/* Options after the positional arguments; 0, or -1 on a bad one. */
static int walk_options(struct walk *w, int argc, char **argv)
{
	unsigned long seed = time(NULL);
	int i;

	*w = (struct walk){ .max = DEFAULT_MAX, .all = ~0u, .every = 1 };
	for (i = 0; i + 1 < argc; i += 2) {
		unsigned long v = strtoul(argv[i + 1], NULL, 0);

		if (!strcmp(argv[i], "--max"))
			w->max = v;
		else if (!strcmp(argv[i], "--all"))
			w->all = v;
		else if (!strcmp(argv[i], "--every") && v)
			w->every = v;
		else if (!strcmp(argv[i], "--seed"))
			seed = v;
		else
			return -1;
	}
	if (i != argc)
		return -1;
	srandom(seed);
	w->offset = 1 + random() % w->every;
	if (w->every > 1)
		printf("sites 1..%u, then every %u from offset %u (--seed %lu)\n",
		       w->all, w->every, w->offset, seed);
	return 0;
}

int main(int argc, char **argv)
{
	struct walk w;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "link-add")) {
		if (walk_options(&w, argc - 4, argv + 4) || nth_open())
			goto usage;
		return walk_link_add(&w, argv[2], argv[3]);
	}
	if (argc >= 3 && !strcmp(argv[1], "open")) {
		if (walk_options(&w, argc - 3, argv + 3) || nth_open())
			goto usage;
		return walk_open(&w, argv[2]);
	}
usage:
	fprintf(stderr, "usage: fail_nth link-add DEV NETDEV [OPTIONS] | open DEV [OPTIONS]\n"
		"options: --max N --all N --every K --seed S\n");
	return 2;
}
