// SPDX-License-Identifier: GPL-2.0
/*
 * Objects by the thousand, for scale.sh. One run creates N objects of one
 * kind on the device $VROCE_DEV, through the stock rdma-core rxe provider:
 *
 *   scale_test KIND N [ERRNO]
 *   scale_test KIND limit
 *
 * KIND is pd, mr, mw, ah, cq, srq or qp. With ERRNO (a name: ENOMEM,
 * EINVAL), N is the limit: all N must succeed and the next one must fail
 * with ERRNO; without it, all N must succeed. "limit" is the device's
 * limit for KIND (ibv_devinfo -v) less the objects that exist, and ENOMEM.
 * While the objects exist, the kinds that "rdma resource" counts (pd, mr,
 * cq, qp, srq) must count N more than before. Everything is destroyed,
 * then created and destroyed once more (QPs by several threads): the same
 * N (and the same failure one past it) again shows that destruction
 * returned every object to the device. For qp, up to 8 pairs of the QPs,
 * spread over the range, are connected to each other and each side SENDs
 * to the other (SCALE_TRAFFIC_PAIRS).
 *
 *   scale_test sizes
 *
 * checks the per-object limits of ibv_devinfo -v: a CQ of max_cqe entries,
 * a QP of max_qp_wr WRs and max_sge SGEs, an SRQ of max_srq_wr WRs exist;
 * one past each fails with EINVAL, and so does a CQ of 64 Ki entries when
 * max_cqe is below that.
 *
 * Output: KTAP comments, "# ok STEP" or "# FAIL STEP" per step, and
 * "# create KIND: X us/object" and "# destroy KIND: ..." (a benchmark,
 * never asserted); the exit status is 1 if a step failed. The device
 * needs an IPv4 RoCE v2 GID (for AHs and traffic).
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

#include "vroce_test.h"

#define MSG_LEN 64
#define MAX_PAIRS 64

static struct vroce_dev dev;
static int failed;

#define note(...) printf("# " __VA_ARGS__)

/* One step's verdict: "# ok DESC" or "# FAIL DESC" (scale.sh counts). */
#define result(ok, ...)					\
	do {							\
		int ok_ = (ok);					\
								\
		printf(ok_ ? "# ok " : "# FAIL ");		\
		printf(__VA_ARGS__);				\
		failed |= !ok_;					\
	} while (0)

#define die(...)						\
	do {							\
		printf("# FAIL " __VA_ARGS__);			\
		exit(1);					\
	} while (0)

static const char *dev_name;
static struct ibv_cq *cq;	/* shared by every QP and the traffic */
static char buf[4096] __attribute__((aligned(4096)));

/* One kind of object: how to make the i-th one and how to destroy it. */
struct kind {
	const char *name;
	const char *res;	/* its name in "rdma resource show", or NULL */
	size_t max_off;		/* its limit in struct ibv_device_attr */
	void *(*create)(unsigned long i);
	int (*destroy)(void *obj);
};

static void *create_pd(unsigned long i)
{
	return ibv_alloc_pd(dev.ctx);
}

static int destroy_pd(void *o)
{
	return ibv_dealloc_pd(o);
}

static void *create_mr(unsigned long i)
{
	return ibv_reg_mr(dev.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
}

static int destroy_mr(void *o)
{
	return ibv_dereg_mr(o);
}

static void *create_mw(unsigned long i)
{
	return ibv_alloc_mw(dev.pd, IBV_MW_TYPE_1);
}

static int destroy_mw(void *o)
{
	return ibv_dealloc_mw(o);
}

static void *create_ah(unsigned long i)
{
	struct ibv_ah_attr attr = {
		.is_global = 1,
		.grh = { .dgid = dev.gid, .sgid_index = dev.gid_idx,
			 .hop_limit = 64 },
		.port_num = 1,
	};

	return ibv_create_ah(dev.pd, &attr);
}

static int destroy_ah(void *o)
{
	return ibv_destroy_ah(o);
}

static void *create_cq(unsigned long i)
{
	return ibv_create_cq(dev.ctx, 1, NULL, NULL, 0);
}

static int destroy_cq(void *o)
{
	return ibv_destroy_cq(o);
}

static void *create_srq(unsigned long i)
{
	struct ibv_srq_init_attr init = {
		.attr = { .max_wr = 1, .max_sge = 1 },
	};

	return ibv_create_srq(dev.pd, &init);
}

static int destroy_srq(void *o)
{
	return ibv_destroy_srq(o);
}

static struct ibv_qp *rc_qp(uint32_t wr, uint32_t sge)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = wr, .max_recv_wr = 1,
			 .max_send_sge = sge, .max_recv_sge = 1 },
	};

	return ibv_create_qp(dev.pd, &init);
}

static void *create_qp(unsigned long i)
{
	return rc_qp(1, 1);
}

static int destroy_qp(void *o)
{
	return ibv_destroy_qp(o);
}

static const struct kind kinds[] = {
	{ "pd", "pd", offsetof(struct ibv_device_attr, max_pd),
	  create_pd, destroy_pd },
	{ "mr", "mr", offsetof(struct ibv_device_attr, max_mr),
	  create_mr, destroy_mr },
	{ "mw", NULL, offsetof(struct ibv_device_attr, max_mw),
	  create_mw, destroy_mw },
	{ "ah", NULL, offsetof(struct ibv_device_attr, max_ah),
	  create_ah, destroy_ah },
	{ "cq", "cq", offsetof(struct ibv_device_attr, max_cq),
	  create_cq, destroy_cq },
	{ "srq", "srq", offsetof(struct ibv_device_attr, max_srq),
	  create_srq, destroy_srq },
	{ "qp", "qp", offsetof(struct ibv_device_attr, max_qp),
	  create_qp, destroy_qp },
};

/* The count of @res on the device, from "rdma resource show"; -1 if none. */
static long res_count(const char *res)
{
	char cmd[128], word[64];
	long n = -1, v;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>/dev/null",
		 dev_name);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s", word) == 1) {
		if (strcmp(word, res))
			continue;
		if (fscanf(f, "%ld", &v) == 1)
			n = v;
		break;
	}
	pclose(f);
	return n;
}

/*
 * PDs of kernel users (ib_core's MAD agents): "rdma resource" prints their
 * owner in brackets. Each holds a DMA MR of its own (ib_alloc_pd(): vroce
 * has no device-wide local DMA lkey), which counts against max_mr but is
 * not listed as an MR. -1 if rdma failed.
 */
static long kernel_pds(void)
{
	char cmd[128], line[512];
	long n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma resource show pd dev %s 2>/dev/null",
		 dev_name);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, " comm [") != NULL;
	return pclose(f) ? -1 : n;
}

/*
 * Pair @p of @npairs: QPs @a and @b of @objs (their indices spread over
 * @n), connected to each other; each SENDs MSG_LEN bytes to the other.
 * 0, or -1 after printing what failed.
 */
static int pair_traffic(void **objs, unsigned long n, int p, int npairs)
{
	unsigned long ia = (n - 2) * p / (npairs > 1 ? npairs - 1 : 1) & ~1UL;
	struct ibv_qp *qp[2] = { objs[ia], objs[ia + 1] };
	struct ibv_wc wc;
	int s, got = 0, err;

	for (s = 0; s < 2; s++) {
		struct vroce_rc_path path = {
			VROCE_RC_DEFAULTS,
			.dest_qpn = qp[!s]->qp_num,
			.dgid = dev.gid,
			.sgid_idx = dev.gid_idx,
			.mtu = dev.mtu,
		};
		struct ibv_sge rsge = {
			.addr = (uintptr_t)buf + 2048 + s * MSG_LEN,
			.length = MSG_LEN, .lkey = dev.mr->lkey,
		};
		struct ibv_recv_wr rwr = { .wr_id = s, .sg_list = &rsge,
					   .num_sge = 1 }, *rbad;

		err = vroce_rc_connect(qp[s], &path);
		if (!err)
			err = ibv_post_recv(qp[s], &rwr, &rbad);
		if (err) {
			printf("# pair %d: QP %u: connect/recv: %s\n", p,
			       qp[s]->qp_num, strerror(err));
			return -1;
		}
	}
	for (s = 0; s < 2; s++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)buf + s * MSG_LEN,
			.length = MSG_LEN, .lkey = dev.mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 10 + s, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		memset(buf + s * MSG_LEN, 0x30 + p * 2 + s, MSG_LEN);
		err = ibv_post_send(qp[s], &wr, &bad);
		if (err) {
			printf("# pair %d: post_send: %s\n", p, strerror(err));
			return -1;
		}
	}
	/* Two sends and two receives complete, in any order. */
	for (s = 0; s < 4; s++) {
		if (vroce_poll_one(cq, &wc, 30) != 1 ||
		    wc.status != IBV_WC_SUCCESS) {
			printf("# pair %d: completion %d: %s\n", p, s,
			       ibv_wc_status_str(wc.status));
			return -1;
		}
		got |= 1 << (wc.wr_id >= 10 ? wc.wr_id - 8 : wc.wr_id);
	}
	if (got != 0xf) {
		printf("# pair %d: completions %#x\n", p, got);
		return -1;
	}
	/* QP s received what QP !s sent. */
	for (s = 0; s < 2; s++)
		if (memcmp(buf + 2048 + s * MSG_LEN, buf + !s * MSG_LEN,
			   MSG_LEN)) {
			printf("# pair %d: QP %u received other bytes\n", p,
			       qp[s]->qp_num);
			return -1;
		}
	return 0;
}

/*
 * Kernel memory in KiB, from /proc/meminfo: MemTotal less MemFree, Buffers,
 * Cached and AnonPages (user rings are pages of their own, counted neither
 * in Slab nor in VmallocUsed); -1 if unreadable.
 */
static long kernel_kib(void)
{
	static const char * const keys[] = { "MemTotal:", "MemFree:",
					     "Buffers:", "Cached:",
					     "AnonPages:" };
	char line[128], key[32];
	int seen = 0, i;
	long v, sum = 0;
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %ld", key, &v) != 2)
			continue;
		for (i = 0; i < 5; i++)
			if (!strcmp(key, keys[i])) {
				sum += i ? -v : v;
				seen++;
			}
	}
	fclose(f);
	return seen == 5 ? sum : -1;
}

static long peak_kib;

/* Threads that destroy the QPs of the second round (see fill()). */
#define DESTROYERS 8

struct destroyer {
	const struct kind *k;
	void **objs;
	unsigned long n;
	int first;
	int failed;
};

static void *destroy_stride(void *arg)
{
	struct destroyer *d = arg;
	unsigned long i;

	for (i = d->first; i < d->n; i += DESTROYERS)
		if (d->k->destroy(d->objs[i]))
			d->failed = 1;
	return NULL;
}

/* Destroy @objs[0..@n) from DESTROYERS threads; 0 or -1. */
static int destroy_parallel(const struct kind *k, void **objs,
			    unsigned long n)
{
	struct destroyer d[DESTROYERS];
	pthread_t t[DESTROYERS];
	int started[DESTROYERS];
	int i, ret = 0;

	for (i = 0; i < DESTROYERS; i++) {
		d[i] = (struct destroyer){ k, objs, n, i, 0 };
		started[i] = !pthread_create(&t[i], NULL, destroy_stride, &d[i]);
		if (!started[i])
			destroy_stride(&d[i]);
	}
	for (i = 0; i < DESTROYERS; i++) {
		if (started[i])
			pthread_join(t[i], NULL);
		ret |= d[i].failed ? -1 : 0;
	}
	return ret;
}

static void print_rate(const char *what, const struct kind *k,
		       unsigned long n, double t)
{
	note("%s %s: %.1f us/object (%lu objects, %.2f s)\n", what,
	     k->name, n ? t * 1e6 / n : 0, n, t);
}

/*
 * Create @n objects of @k into @objs (and with @want_errno one more, which
 * must fail with it), check "rdma resource" counted them over @base, run
 * traffic (qp), destroy them. 0 or -1; @round 0 prints the times.
 */
static int fill(const struct kind *k, void **objs, unsigned long n,
		int want_errno, long base, int round)
{
	unsigned long i, made = 0;
	int ret = 0, p, npairs;
	double t0, t;
	void *extra;
	long cnt;

	t0 = vroce_now_s();
	for (i = 0; i < n; i++) {
		objs[i] = k->create(i);
		if (!objs[i])
			break;
	}
	t = vroce_now_s() - t0;
	made = i;
	if (round == 0)
		print_rate("create", k, made, t);
	if (made < n) {
		note("%s %lu of %lu failed: %s\n", k->name, made + 1,
		     n, strerror(errno));
		ret = -1;
	} else if (want_errno) {
		errno = 0;
		extra = k->create(n);
		if (extra) {
			note("%s %lu (one past the limit) was created\n",
			     k->name, n + 1);
			k->destroy(extra);
			ret = -1;
		} else if (errno != want_errno) {
			note("%s %lu (one past the limit) failed with %s, want %s\n",
			     k->name, n + 1, strerror(errno),
			     strerror(want_errno));
			ret = -1;
		}
	}
	if (round == 0)
		peak_kib = kernel_kib();
	if (!ret && k->res) {
		cnt = res_count(k->res);
		if (cnt != base + (long)n) {
			note("rdma resource counts %ld %s, want %ld\n",
			     cnt, k->res, base + (long)n);
			ret = -1;
		}
	}
	if (!ret && round == 0 && k->create == create_qp) {
		npairs = getenv("SCALE_TRAFFIC_PAIRS") ?
			 atoi(getenv("SCALE_TRAFFIC_PAIRS")) : 8;
		if (npairs > MAX_PAIRS)
			npairs = MAX_PAIRS;
		if ((unsigned long)npairs * 2 > n)
			npairs = n / 2;
		for (p = 0; p < npairs && !ret; p++)
			ret = pair_traffic(objs, n, p, npairs);
		if (!ret)
			note("traffic on %d pairs of the %lu QPs\n",
			     npairs, n);
	}

	/*
	 * The first round times one destroyer. QPs wait for an RCU grace
	 * period each, which concurrent destroyers share: the second round
	 * destroys them from DESTROYERS threads.
	 */
	t0 = vroce_now_s();
	if (round == 0 || k->create != create_qp) {
		for (i = made; i-- > 0;)
			if (k->destroy(objs[i]) && !ret) {
				note("destroying %s %lu failed\n", k->name, i);
				ret = -1;
			}
	} else if (destroy_parallel(k, objs, made) && !ret) {
		note("destroying the %s objects failed\n", k->name);
		ret = -1;
	}
	t = vroce_now_s() - t0;
	if (round == 0)
		print_rate("destroy", k, made, t);
	else if (k->create == create_qp)
		note("destroy %s from %d threads: %.2f s\n", k->name,
		     DESTROYERS, t);
	return ret;
}

static int errno_of(const char *s)
{
	if (!strcmp(s, "ENOMEM"))
		return ENOMEM;
	if (!strcmp(s, "EINVAL"))
		return EINVAL;
	return -1;
}

static int run_kind(const struct kind *k, unsigned long n, int want_errno)
{
	long base = k->res ? res_count(k->res) : 0;
	const char *past = want_errno ? ", one past fails" : "";
	long kib0 = kernel_kib(), kib1, now;
	void **objs;
	int ret;

	objs = calloc(n ? n : 1, sizeof(*objs));
	if (!objs || base < 0)
		die("no memory or no rdma resource count\n");
	ret = fill(k, objs, n, want_errno, base, 0);
	result(!ret, "%lu %s objects%s\n", n, k->name, past);
	ret = fill(k, objs, n, want_errno, base, 1);
	result(!ret, "%lu %s objects again after destroying them\n",
	       n, k->name);
	/* AHs and MWs: only the second round shows the driver's count. */
	if (k->res) {
		now = res_count(k->res);
		if (now != base)
			note("rdma resource counts %ld %s\n", now, k->res);
		result(now == base, "rdma resource counts %ld %s again\n",
		       base, k->res);
	}
	free(objs);
	/* Slab caches keep some freed objects: reported, not asserted. */
	kib1 = kernel_kib();
	note("kernel memory: %ld KiB at start, +%ld KiB with the %s objects, %+ld KiB after destroying them\n",
	     kib0, peak_kib - kib0, k->name, kib1 - kib0);
	return ret;
}

/* @ok: the object was made; @err: errno if not. One past must fail. */
static void size_result(const char *what, long v, int ok, int want_ok,
			int err)
{
	if (want_ok)
		result(ok, "%s %ld%s%s\n", what, v, ok ? "" : ": ",
		       ok ? "" : strerror(err));
	else
		result(!ok && err == EINVAL,
		       "%s %ld fails with EINVAL%s%s\n", what, v,
		       ok ? " (it was created)" : ": ",
		       ok ? "" : strerror(err));
}

static void try_cq(long cqe, int want_ok)
{
	struct ibv_cq *c;

	errno = 0;
	c = ibv_create_cq(dev.ctx, cqe, NULL, NULL, 0);
	size_result("CQ of max_cqe entries:", cqe, !!c, want_ok, errno);
	if (c)
		ibv_destroy_cq(c);
}

static void try_qp(const char *what, long v, uint32_t wr, uint32_t sge,
		   int want_ok)
{
	struct ibv_qp *q;

	errno = 0;
	q = rc_qp(wr, sge);
	size_result(what, v, !!q, want_ok, errno);
	if (q)
		ibv_destroy_qp(q);
}

static void try_srq(long wr, int want_ok)
{
	struct ibv_srq_init_attr init = {
		.attr = { .max_wr = wr, .max_sge = 1 },
	};
	struct ibv_srq *s;

	errno = 0;
	s = ibv_create_srq(dev.pd, &init);
	size_result("SRQ of max_srq_wr WRs:", wr, !!s, want_ok, errno);
	if (s)
		ibv_destroy_srq(s);
}

static void sizes(void)
{
	struct ibv_device_attr a;

	if (ibv_query_device(dev.ctx, &a))
		die("query_device: %s\n", strerror(errno));
	try_cq(a.max_cqe, 1);
	try_cq(a.max_cqe + 1L, 0);
	if (a.max_cqe < 65536)
		try_cq(65536, 0);
	try_qp("QP of max_qp_wr WRs:", a.max_qp_wr, a.max_qp_wr, 1, 1);
	try_qp("QP of max_qp_wr WRs:", a.max_qp_wr + 1L, a.max_qp_wr + 1, 1, 0);
	try_qp("QP of max_sge SGEs:", a.max_sge, 1, a.max_sge, 1);
	try_qp("QP of max_sge SGEs:", a.max_sge + 1L, 1, a.max_sge + 1, 0);
	try_srq(a.max_srq_wr, 1);
	try_srq(a.max_srq_wr + 1L, 0);
}

/*
 * How many more objects of @k the device takes: its limit in
 * ibv_query_device() (what ibv_devinfo -v prints) less those that exist
 * (rdma resource: ib_core's own PD, CQ and GSI QP, and ours; for MRs also
 * the kernel PDs' DMA MRs). One past must fail with ENOMEM, as on RNICs
 * whose firmware is out of a resource.
 */
static unsigned long limit_of(const struct kind *k, int *want_errno)
{
	struct ibv_device_attr a;
	long in_use = k->res ? res_count(k->res) : 0;
	long kpds = k->create == create_mr ? kernel_pds() : 0;
	int max;

	if (ibv_query_device(dev.ctx, &a) || in_use < 0 || kpds < 0)
		die("query_device or rdma resource failed\n");
	max = *(int *)((char *)&a + k->max_off);
	note("%s: the device's limit is %d, %ld exist%s\n", k->name, max,
	     in_use + kpds, kpds ? " (with the kernel PDs' DMA MRs)" : "");
	in_use += kpds;
	*want_errno = ENOMEM;
	return max > in_use ? max - in_use : 0;
}

int main(int argc, char **argv)
{
	const struct kind *k = NULL;
	int want_errno = 0;
	unsigned long n = 0;
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	dev_name = getenv("VROCE_DEV");
	if (argc < 2 || !dev_name)
		die("usage: VROCE_DEV=dev %s KIND N [ERRNO] | sizes\n",
		    argv[0]);
	if (vroce_dev_open(&dev, dev_name, "VROCE_GID") ||
	    vroce_dev_buf(&dev, dev_name, sizeof(buf),
			  IBV_ACCESS_LOCAL_WRITE))
		die("cannot open %s\n", dev_name);
	/* vroce_dev_buf's own buffer is not used; traffic uses buf's MR. */
	ibv_dereg_mr(dev.mr);
	dev.mr = ibv_reg_mr(dev.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(dev.ctx, 4 * MAX_PAIRS, NULL, NULL, 0);
	if (!dev.mr || !cq)
		die("MR or CQ: %s\n", strerror(errno));

	if (!strcmp(argv[1], "sizes")) {
		sizes();
	} else {
		for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(argv[1], kinds[i].name))
				k = &kinds[i];
		if (argc > 2 && k && !strcmp(argv[2], "limit"))
			n = limit_of(k, &want_errno);
		else if (argc > 2)
			n = strtoul(argv[2], NULL, 0);
		if (argc > 3)
			want_errno = errno_of(argv[3]);
		if (!k || !n || want_errno < 0)
			die("bad arguments\n");
		run_kind(k, n, want_errno);
	}
	ibv_destroy_cq(cq);
	vroce_dev_close(&dev);
	return failed;
}
