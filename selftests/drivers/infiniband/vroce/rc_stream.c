// SPDX-License-Identifier: GPL-2.0
/*
 * rc_stream: move a large amount of data over one RC QP pair with many
 * operations in flight, and check every byte. netem.sh runs it over a lossy
 * link: what users rely on is that the transfer completes, byte-exact,
 * without hanging.
 *
 *   rc_stream OP MIB     OP: write, read or send; MIB: MiB to move
 *
 * Environment: VROCE_DEV (requester), VROCE_PEER_DEV (responder, default
 * the same device), VROCE_GID / VROCE_PEER_GID (default the first RoCE v2
 * IPv4 GID). The QPs use timeout 14 (67 ms), retry_cnt 7 and rnr_retry 7:
 * a retransmission budget is reset by every ACK that makes progress, so
 * only a dead link exhausts it.
 *
 * The data moves in CHUNK-byte operations, DEPTH of them in flight, each
 * on its own slot of both buffers. When an operation completes, its
 * destination slot is compared with the pattern its source was filled
 * with, then the slot is refilled with the next chunk's pattern and
 * reposted. Exit status 0 only if every chunk arrived intact and every
 * completion was successful; the first difference is printed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "vroce_test.h"

#define CHUNK		(64u << 10)
#define DEPTH		16
#define BUF_SIZE	(CHUNK * DEPTH)
/* No completion for this long: the transfer is hung. */
#define HANG_S		120

enum op { OP_WRITE, OP_READ, OP_SEND };

struct side {
	struct vroce_dev dev;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static int fail(const char *what)
{
	fprintf(stderr, "rc_stream: %s: %s\n", what, strerror(errno));
	return -1;
}

static uint8_t pattern(uint64_t chunk, uint32_t i)
{
	uint32_t x = i * 0x9e3779b1u ^ (uint32_t)(chunk + 1) * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x;
}

static void fill(uint8_t *p, uint64_t chunk)
{
	uint32_t i;

	for (i = 0; i < CHUNK; i++)
		p[i] = pattern(chunk, i);
}

/* -1 and a message at the first byte that differs from @chunk's pattern. */
static int check(const uint8_t *p, uint64_t chunk)
{
	uint32_t i;

	for (i = 0; i < CHUNK; i++) {
		if (p[i] != pattern(chunk, i)) {
			fprintf(stderr,
				"rc_stream: chunk %llu byte %u: got 0x%02x, want 0x%02x\n",
				(unsigned long long)chunk, i, p[i],
				pattern(chunk, i));
			return -1;
		}
	}
	return 0;
}

static int side_open(struct side *s, const char *dev, const char *gid_var)
{
	struct ibv_qp_init_attr init = {};

	if (vroce_dev_open(&s->dev, dev, gid_var) ||
	    vroce_dev_buf(&s->dev, dev, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ))
		return -1;
	s->cq = ibv_create_cq(s->dev.ctx, 4 * DEPTH, NULL, NULL, 0);
	if (!s->cq)
		return fail("create_cq");
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = DEPTH;
	init.cap.max_recv_wr = DEPTH;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(s->dev.pd, &init);
	return s->qp ? 0 : fail("create_qp");
}

static int qp_connect(struct side *s, struct side *peer)
{
	struct vroce_rc_path p = {
		VROCE_RC_DEFAULTS,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ,
		.dest_qpn = peer->qp->qp_num,
		.dgid = peer->dev.gid,
		.sgid_idx = s->dev.gid_idx,
		.mtu = s->dev.mtu < peer->dev.mtu ? s->dev.mtu : peer->dev.mtu,
		.sq_psn = 0x777, .rq_psn = 0x777,
		.min_rnr_timer = 1,
	};

	return vroce_rc_connect(s->qp, &p) ? fail("modify_qp") : 0;
}

struct stream {
	enum op op;
	struct side a, b;	/* requester, responder */
	uint64_t chunks;	/* to move */
	uint64_t posted;	/* chunks posted so far */
	uint64_t done;		/* chunks checked */
	uint64_t slot_chunk[DEPTH];
};

static uint8_t *src_of(struct stream *st, unsigned int slot)
{
	return (st->op == OP_READ ? st->b.dev.buf : st->a.dev.buf) + slot * CHUNK;
}

static uint8_t *dst_of(struct stream *st, unsigned int slot)
{
	return (st->op == OP_READ ? st->a.dev.buf : st->b.dev.buf) + slot * CHUNK;
}

/* Fill slot @slot with the next chunk and post its operation. */
static int post_chunk(struct stream *st, unsigned int slot)
{
	struct side *a = &st->a, *b = &st->b;
	struct ibv_sge sge = {
		.addr = (uintptr_t)a->dev.buf + slot * CHUNK,
		.length = CHUNK, .lkey = a->dev.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = slot, .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	st->slot_chunk[slot] = st->posted++;
	fill(src_of(st, slot), st->slot_chunk[slot]);
	memset(dst_of(st, slot), 0xee, CHUNK);
	if (st->op == OP_SEND) {
		struct ibv_sge rsge = {
			.addr = (uintptr_t)b->dev.buf + slot * CHUNK,
			.length = CHUNK, .lkey = b->dev.mr->lkey,
		};
		struct ibv_recv_wr rwr = {
			.wr_id = slot, .sg_list = &rsge, .num_sge = 1,
		}, *rbad;

		if (ibv_post_recv(b->qp, &rwr, &rbad))
			return fail("post_recv");
		wr.opcode = IBV_WR_SEND;
	} else {
		wr.opcode = st->op == OP_READ ? IBV_WR_RDMA_READ :
						IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)b->dev.buf + slot * CHUNK;
		wr.wr.rdma.rkey = b->dev.mr->rkey;
	}
	if (ibv_post_send(a->qp, &wr, &bad))
		return fail("post_send");
	return 0;
}

/*
 * The chunk of slot @slot is complete: for a send, once both its send and
 * its receive completed (@need counts them down). Check it, post the next.
 */
static int chunk_done(struct stream *st, unsigned int slot, int *need)
{
	if (--need[slot])
		return 0;
	if (check(dst_of(st, slot), st->slot_chunk[slot]))
		return -1;
	st->done++;
	need[slot] = st->op == OP_SEND ? 2 : 1;
	if (st->posted < st->chunks)
		return post_chunk(st, slot);
	return 0;
}

static int poll_side(struct stream *st, struct side *s, int *need)
{
	struct ibv_wc wc[DEPTH];
	int n, i;

	n = ibv_poll_cq(s->cq, DEPTH, wc);
	if (n < 0)
		return fail("poll_cq");
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, "rc_stream: chunk %llu: %s\n",
				(unsigned long long)st->slot_chunk[wc[i].wr_id],
				ibv_wc_status_str(wc[i].status));
			return -1;
		}
		if (chunk_done(st, wc[i].wr_id, need))
			return -1;
	}
	return n;
}

static int run(struct stream *st)
{
	int need[DEPTH];
	double t0 = vroce_now_s(), last = t0;
	unsigned int slot;
	int n, m;

	for (slot = 0; slot < DEPTH && st->posted < st->chunks; slot++) {
		need[slot] = st->op == OP_SEND ? 2 : 1;
		if (post_chunk(st, slot))
			return -1;
	}
	while (st->done < st->chunks) {
		n = poll_side(st, &st->a, need);
		m = poll_side(st, &st->b, need);
		if (n < 0 || m < 0)
			return -1;
		if (n || m) {
			last = vroce_now_s();
		} else if (vroce_now_s() - last > HANG_S) {
			fprintf(stderr, "rc_stream: no completion for %d s after %llu of %llu chunks\n",
				HANG_S, (unsigned long long)st->done,
				(unsigned long long)st->chunks);
			return -1;
		} else {
			usleep(50);
		}
	}
	n = printf("rc_stream: %s %llu MiB in %.1f s, every byte checked\n",
		   st->op == OP_WRITE ? "write" : st->op == OP_READ ? "read" :
		   "send", (unsigned long long)(st->chunks * CHUNK >> 20),
		   vroce_now_s() - t0);
	return n < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	static struct stream st;
	const char *dev = getenv("VROCE_DEV");
	const char *peer = getenv("VROCE_PEER_DEV");
	unsigned long mib;

	if (argc != 3 || !dev) {
		fprintf(stderr, "usage: VROCE_DEV=dev [VROCE_PEER_DEV=dev] rc_stream write|read|send MIB\n");
		return 2;
	}
	if (!strcmp(argv[1], "write"))
		st.op = OP_WRITE;
	else if (!strcmp(argv[1], "read"))
		st.op = OP_READ;
	else if (!strcmp(argv[1], "send"))
		st.op = OP_SEND;
	else
		return 2;
	mib = strtoul(argv[2], NULL, 0);
	st.chunks = (uint64_t)mib * (1u << 20) / CHUNK;
	if (!st.chunks)
		return 2;
	if (side_open(&st.a, dev, "VROCE_GID") ||
	    side_open(&st.b, peer && *peer ? peer : dev, "VROCE_PEER_GID") ||
	    qp_connect(&st.a, &st.b) || qp_connect(&st.b, &st.a))
		return 1;
	return run(&st) ? 1 : 0;
}
