/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the vroce selftest programs (libibverbs).
 */
#ifndef _VROCE_TEST_H
#define _VROCE_TEST_H

#include <poll.h>
#include <sched.h>
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

/* A hw counter of @dev's port 1; -1 if it has none of that name. */
static inline long long vroce_hw_counter(const char *dev, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
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

/* Where an RC QP sends to: the peer's QP and GID, and the path MTU. */
struct vroce_rc_path {
	uint32_t dest_qpn;
	union ibv_gid dgid;
	int sgid_idx;
	enum ibv_mtu mtu;
};

/* RESET -> INIT with every remote access allowed; 0 or an errno. */
static inline int vroce_rc_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* INIT -> RTR towards @p, receive PSN 0; 0 or an errno. */
static inline int vroce_rc_rtr(struct ibv_qp *qp, const struct vroce_rc_path *p)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = p->mtu,
		.dest_qp_num = p->dest_qpn,
		.max_dest_rd_atomic = 16,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.grh = { .dgid = p->dgid, .sgid_index = p->sgid_idx,
				 .hop_limit = 64 },
			.port_num = 1,
		},
	};

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

/* RTR -> RTS, send PSN 0, retries as in rc_test; 0 or an errno. */
static inline int vroce_rc_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 16,
	};

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

#endif /* _VROCE_TEST_H */
