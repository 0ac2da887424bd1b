/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the vroce selftest programs (libibverbs).
 */
#ifndef _VROCE_TEST_H
#define _VROCE_TEST_H

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

/* CLOCK_MONOTONIC, in seconds. */
static inline double vroce_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The sysfs file of port 1's counter @name of device @dev, in @path. */
static inline void vroce_hw_counter_path(char *path, size_t len,
					 const char *dev, const char *name)
{
	snprintf(path, len, "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
		 dev, name);
}

/* A hw counter of @dev's port 1; -1 if it has none of that name. */
static inline long long vroce_hw_counter(const char *dev, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	vroce_hw_counter_path(path, sizeof(path), dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Write @val to the debugfs knob @knob of the device named by $VROCE_DEV
 * (/sys/kernel/debug/vroce/DEV/KNOB): 0, or -1 with errno set.
 */
static inline int vroce_debugfs_set(const char *knob, uint32_t val)
{
	char path[256];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "/sys/kernel/debug/vroce/%s/%s",
		 getenv("VROCE_DEV"), knob);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ret = fprintf(f, "%u\n", val) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * Poll @cq for one completion into @wc: 1, 0 after @timeout_s seconds (a
 * hang guard), or -1 if polling failed. The first 1000 empty polls yield
 * the CPU, the later ones sleep 100 us each.
 */
static inline int vroce_poll_one(struct ibv_cq *cq, struct ibv_wc *wc,
				 double timeout_s)
{
	double end = vroce_now_s() + timeout_s;
	unsigned int idle = 0;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n < 0 ? -1 : 1;
		if (++idle < 1000) {
			sched_yield();
			continue;
		}
		if (vroce_now_s() > end)
			return 0;
		usleep(100);
	}
}

/*
 * libibverbs loads every provider it is configured with (dlopen) the first
 * time a process finds a device. The kselftest harness forks a child per
 * test, so each test would load them again. Listing the devices once in
 * the parent, before the harness forks, leaves the providers loaded in
 * every child: queues.sh's 22 cases took 27-31 s in a debug guest with
 * this, 40-45 s without.
 */
static void __attribute__((constructor, unused)) vroce_load_providers(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (list)
		ibv_free_device_list(list);
}

/* Open the RDMA device called @name; NULL if there is none or it fails. */
static inline struct ibv_context *vroce_open_by_name(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; name && list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

/*
 * The index of the first RoCE v2 GID of @family (AF_INET: IPv4-mapped,
 * AF_INET6: any other but link-local) on @port of @ctx; -1 if there is none.
 */
static inline int vroce_roce_v2_gid(struct ibv_context *ctx, uint8_t port,
				    int family)
{
	struct ibv_port_attr pattr;
	struct ibv_gid_entry e;
	struct in6_addr *a;
	int i, v4;

	if (ibv_query_port(ctx, port, &pattr))
		return -1;
	for (i = 0; i < pattr.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(ctx, port, i, &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		a = (struct in6_addr *)e.gid.raw;
		v4 = IN6_IS_ADDR_V4MAPPED(a);
		if (family == AF_INET ? v4 :
		    !v4 && !IN6_IS_ADDR_LINKLOCAL(a) && !IN6_IS_ADDR_UNSPECIFIED(a))
			return i;
	}
	return -1;
}

/*
 * The GID index in environment variable @var, or if it is unset the first
 * RoCE v2 GID of port 1 of the family in VROCE_GID_FAMILY (4 or 6, default
 * 4); -1 if there is none.
 */
static inline int vroce_env_gid(struct ibv_context *ctx, const char *var)
{
	const char *v = getenv(var);
	const char *fam = getenv("VROCE_GID_FAMILY");

	if (v && *v)
		return atoi(v);
	return vroce_roce_v2_gid(ctx, 1, fam && !strcmp(fam, "6") ?
				 AF_INET6 : AF_INET);
}

/*
 * The next number of a splitmix64 generator whose state is @state. A test
 * that prints its seed sets the state from it alone, so that the seed
 * replays the same numbers.
 */
static inline uint64_t vroce_rnd(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A test's data pattern: byte @i of buffer @seed. */
typedef uint8_t (*vroce_pattern_fn)(uint32_t seed, uint32_t i);

/* Fill @len bytes at @p with pattern @pat, buffer @seed. */
static inline void vroce_fill(uint8_t *p, uint32_t len, uint32_t seed,
			      vroce_pattern_fn pat)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(seed, i);
}

/* Index of the first byte of @p that is not pattern @pat, @seed; or -1. */
static inline long vroce_mismatch(const uint8_t *p, uint32_t len,
				  uint32_t seed, vroce_pattern_fn pat)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(seed, i))
			return i;
	return -1;
}

/*
 * 0 with the next async event of @ctx in @ev, -1 if none came within
 * @timeout_s seconds (a hang guard, not a timing assertion).
 */
static inline int vroce_wait_async(struct ibv_context *ctx,
				   struct ibv_async_event *ev, int timeout_s)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, timeout_s * 1000) != 1)
		return -1;
	return ibv_get_async_event(ctx, ev);
}

/*
 * A device opened for a test: port 1's state and active MTU, the GID it
 * sends from, a PD, and one page-aligned buffer registered as one MR.
 */
struct vroce_dev {
	struct ibv_context *ctx;
	enum ibv_port_state state;
	enum ibv_mtu mtu;
	int gid_idx;
	union ibv_gid gid;
	enum ibv_gid_type gid_type;
	struct ibv_pd *pd;
	uint8_t *buf;
	struct ibv_mr *mr;
};

/* A failed step of a helper below: its name and errno, as a KTAP comment. */
static inline int vroce_step_failed(const char *dev, const char *step)
{
	printf("# %s: %s: %s\n", dev ? dev : "(VROCE_DEV unset)", step,
	       strerror(errno));
	fflush(stdout);
	return -1;
}

/*
 * Open the device @name for a test into @d: its context, port 1's state
 * and active MTU, and the GID that @gid_var names (vroce_env_gid). 0, or
 * -1 after printing which step failed.
 */
static inline int vroce_dev_open(struct vroce_dev *d, const char *name,
				 const char *gid_var)
{
	struct ibv_port_attr pattr;
	struct ibv_gid_entry ge;

	d->ctx = vroce_open_by_name(name);
	if (!d->ctx)
		return vroce_step_failed(name, "cannot open");
	if (ibv_query_port(d->ctx, 1, &pattr))
		return vroce_step_failed(name, "query_port");
	d->state = pattr.state;
	d->mtu = pattr.active_mtu;
	d->gid_idx = vroce_env_gid(d->ctx, gid_var);
	if (d->gid_idx < 0) {
		errno = ENOENT;
		return vroce_step_failed(name, "no RoCE v2 GID");
	}
	if (ibv_query_gid_ex(d->ctx, 1, d->gid_idx, &ge, 0))
		return vroce_step_failed(name, "query_gid");
	d->gid = ge.gid;
	d->gid_type = ge.gid_type;
	return 0;
}

/*
 * A PD on @d and a @len-byte buffer, filled with 0x5a and registered with
 * @access. 0, or -1 after printing which step failed.
 */
static inline int vroce_dev_buf(struct vroce_dev *d, const char *name,
				size_t len, int access)
{
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		return vroce_step_failed(name, "alloc_pd");
	d->buf = aligned_alloc(4096, len);
	if (!d->buf)
		return vroce_step_failed(name, "buffer");
	memset(d->buf, 0x5a, len);
	d->mr = ibv_reg_mr(d->pd, d->buf, len, access);
	if (!d->mr)
		return vroce_step_failed(name, "reg_mr");
	return 0;
}

/* Undo vroce_dev_open() and vroce_dev_buf(), also half-done ones. */
static inline void vroce_dev_close(struct vroce_dev *d)
{
	if (d->mr)
		ibv_dereg_mr(d->mr);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
	free(d->buf);
	memset(d, 0, sizeof(*d));
}

/*
 * An RC QP's connection: where it sends to, its first PSNs, and the
 * attributes tests vary. Start from VROCE_RC_DEFAULTS.
 */
struct vroce_rc_path {
	uint32_t dest_qpn;
	union ibv_gid dgid;
	int sgid_idx;
	enum ibv_mtu mtu;
	uint32_t sq_psn;
	uint32_t rq_psn;
	unsigned int access;	/* qp_access_flags */
	uint8_t rd_atomic;	/* max_rd_atomic */
	uint8_t dest_rd_atomic;	/* max_dest_rd_atomic */
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
};

/* Every access, 16 reads in flight each way, and the spec's usual timers. */
#define VROCE_RC_DEFAULTS						\
	.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |	\
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,	\
	.rd_atomic = 16, .dest_rd_atomic = 16, .min_rnr_timer = 12,	\
	.timeout = 14, .retry_cnt = 7, .rnr_retry = 7

/* RESET -> INIT with @p's access flags; 0 or an errno. */
static inline int vroce_rc_init(struct ibv_qp *qp, const struct vroce_rc_path *p)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = p->access,
	};

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/*
 * INIT -> RTR towards @p; 0 or an errno. UC takes a path as RC does, but
 * none of RC's reads, atomics, timers or retries (@rc false).
 */
static inline int vroce_path_rtr(struct ibv_qp *qp,
				 const struct vroce_rc_path *p, bool rc)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = p->mtu,
		.dest_qp_num = p->dest_qpn,
		.rq_psn = p->rq_psn,
		.max_dest_rd_atomic = p->dest_rd_atomic,
		.min_rnr_timer = p->min_rnr_timer,
		.ah_attr = {
			.is_global = 1,
			.grh = { .dgid = p->dgid, .sgid_index = p->sgid_idx,
				 .hop_limit = 64 },
			.port_num = 1,
		},
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	if (rc)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	return ibv_modify_qp(qp, &attr, mask);
}

static inline int vroce_rc_rtr(struct ibv_qp *qp, const struct vroce_rc_path *p)
{
	return vroce_path_rtr(qp, p, true);
}

static inline int vroce_uc_rtr(struct ibv_qp *qp, const struct vroce_rc_path *p)
{
	return vroce_path_rtr(qp, p, false);
}

/* RTR -> RTS with @p's send PSN, timers and reads; 0 or an errno. */
static inline int vroce_rc_rts(struct ibv_qp *qp, const struct vroce_rc_path *p)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.timeout = p->timeout,
		.retry_cnt = p->retry_cnt,
		.rnr_retry = p->rnr_retry,
		.sq_psn = p->sq_psn,
		.max_rd_atomic = p->rd_atomic,
	};

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* RESET -> INIT -> RTR -> RTS along @p; 0 or an errno. */
static inline int vroce_rc_connect(struct ibv_qp *qp,
				   const struct vroce_rc_path *p)
{
	return vroce_rc_init(qp, p) ?: vroce_rc_rtr(qp, p) ?:
	       vroce_rc_rts(qp, p);
}

/* RTR -> RTS with @psn as the send PSN, for UC and UD; 0 or an errno. */
static inline int vroce_sq_rts(struct ibv_qp *qp, uint32_t psn)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTS, .sq_psn = psn };

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* RESET -> INIT -> RTR -> RTS of a UC QP along @p; 0 or an errno. */
static inline int vroce_uc_connect(struct ibv_qp *qp,
				   const struct vroce_rc_path *p)
{
	return vroce_rc_init(qp, p) ?: vroce_uc_rtr(qp, p) ?:
	       vroce_sq_rts(qp, p->sq_psn);
}

/* RESET -> INIT -> RTR of a UD QP on port 1 with Q_Key @qkey; 0 or an errno. */
static inline int vroce_ud_rtr(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qkey = qkey,
	};

	int ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_QKEY);

	if (ret)
		return ret;
	attr.qp_state = IBV_QPS_RTR;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

/*
 * RESET -> INIT -> RTR -> RTS of a UD QP on port 1: Q_Key @qkey, send PSN
 * @sq_psn; 0 or an errno.
 */
static inline int vroce_ud_connect(struct ibv_qp *qp, uint32_t qkey,
				   uint32_t sq_psn)
{
	return vroce_ud_rtr(qp, qkey) ?: vroce_sq_rts(qp, sq_psn);
}

/*
 * Wait (up to @timeout_s: a hang guard) for the next completion on @cq,
 * into @out if not NULL, and check it: @status, @wr_id, the QP number
 * unless @qp is NULL, and with success also @opcode (undefined in error
 * completions). 0, or -1 after printing what differed.
 */
static inline int vroce_expect_wc(struct ibv_cq *cq, struct ibv_qp *qp,
				  uint64_t wr_id, enum ibv_wc_status status,
				  enum ibv_wc_opcode opcode, double timeout_s,
				  struct ibv_wc *out)
{
	struct ibv_wc wc = {};
	int ret = 0;

	if (vroce_poll_one(cq, &wc, timeout_s) != 1) {
		printf("# no completion for wr_id %llu within %g s (want %s)\n",
		       (unsigned long long)wr_id, timeout_s,
		       ibv_wc_status_str(status));
		return -1;
	}
	if (wc.status != status) {
		printf("# wr_id %llu: %s, want %s\n",
		       (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
		ret = -1;
	}
	if (wc.wr_id != wr_id || (qp && wc.qp_num != qp->qp_num)) {
		printf("# completion of wr_id %llu on QP %u, want wr_id %llu on QP %u\n",
		       (unsigned long long)wc.wr_id, wc.qp_num,
		       (unsigned long long)wr_id, qp ? qp->qp_num : wc.qp_num);
		ret = -1;
	}
	if (status == IBV_WC_SUCCESS && wc.status == IBV_WC_SUCCESS &&
	    wc.opcode != opcode) {
		printf("# wr_id %llu: opcode %d, want %d\n",
		       (unsigned long long)wr_id, wc.opcode, opcode);
		ret = -1;
	}
	fflush(stdout);
	if (out)
		*out = wc;
	return ret;
}

/* In a kselftest_harness test: vroce_expect_wc() or fail the test. */
#define ASSERT_WC(cq, qp, wr_id, status, opcode, out)			\
	ASSERT_EQ(0, vroce_expect_wc(cq, qp, wr_id, status, opcode,	\
				     POLL_TIMEOUT_S, out))

#endif /* _VROCE_TEST_H */
