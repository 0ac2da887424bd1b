// SPDX-License-Identifier: GPL-2.0
/*
 * A structure-aware fuzzer of the frames vroce receives. Run by
 * frame_fuzz.sh: two devices over a veth pair, the device under test
 * (VROCE_DEV, on netdev va) and its peer (VROCE_PEER_DEV, on vb, in the
 * namespace given by --netns, where the frames are sent from).
 *
 *   frame_fuzz --netns NS --smac MAC --dmac MAC [--seed N]
 *              [--iterations N] [--first I] [--batch N]
 *
 * Meanwhile a live RC QP pair moves verified data: the peer RDMA WRITEs
 * CHUNK-byte chunks into the device's memory, each checked byte for byte
 * when it completes.
 *
 * Frame I is drawn from a generator seeded by (seed, I) alone: a valid
 * frame of one kind vroce sends (RoCE v1, RoCE v2 over IPv4 or IPv6; every
 * RC, UC and UD opcode, READ responses, atomics and their ACKs, ACK, NAK,
 * RNR NAK, CNP; unicast or to a multicast group), at one target (the live
 * RC QP, a spare RC, UC or UD QP, the GSI QP, a QPN nobody has, the
 * multicast QPN), then mutated: opcode, TVer, P_Key, pad, PSN, QPN, AckReq,
 * extension header bytes (keys, lengths, addresses, syndromes, Q_Keys),
 * payload length, truncation and extension, the UDP or GRH length, the
 * ICRC-masked fields (ECN, TTL, flow label, resv8a), the ICRC made valid
 * again or left invalid, a bad IPv4 header checksum, VLAN tags (priority,
 * a VLAN vroce is bound under, an unknown one) and IPv4 fragmentation.
 * --first I --iterations 1 replays frame I alone.
 *
 * A model of vroce's receive checks (rx.c: lengths, ICRC, TVer, opcode,
 * headers against the opcode, P_Key; then the QP lookup and the QP's
 * payload limit) predicts, from the frame's final bytes, the one drop
 * counter the frame lands in or that it is accepted; frames the network
 * stack drops (bad IPv4 checksum, bad UDP length, unknown VLAN) reach no
 * counter. What must hold:
 * - after each batch, rx_icrc_encapsulated, rcvd_tver_err, rcvd_pkey_err,
 *   rcvd_no_qp and rcvd_malformed moved by exactly the batch's
 *   predictions, and rcvd_opcode_err by at least its prediction and at
 *   most that plus the accepted frames whose opcode is not of their QP's
 *   transport (those a QP drops later); a batch that fails prints its
 *   seed and frames, to replay;
 * - at the end, rcvd_pkts moved by exactly the frames the model accepts
 *   plus the packets the peer device sent (sent_pkts): every injected
 *   frame is accounted for;
 * - the live transfer completed, every chunk byte-exact, both QPs in RTS.
 * The harness checks dmesg and the taint for kernel reports.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#include "../../../kselftest.h"
#include "vroce_test.h"

#define HANG_S		60
#define CHUNK		(16u << 10)
#define DEPTH		8
#define LIVE_MIN	64		/* chunks the live stream moves at least */
/*
 * The live stream is paced by the fuzzing: one chunk more may be posted
 * for each batch of frames sent (DEPTH chunks in flight at most). Its cost
 * is then a fixed share of the run's, on a fast kernel and a slow one.
 */
#define LIVE_POLL_US	500
#define FZ_LEN		(64u << 10)	/* the spare QPs' MR */
#define UD_RECVS	32
#define UD_RECV_LEN	(4096 + 40)
#define UD_QKEY		0x11223344u
#define GSI_QKEY	0x80010000u
#define MAX_FRAGS	3
#define MAX_L3		9000
#define MAX_BATCH	256
#define VLAN_BOUND	100		/* va.100 exists: vroce receives it */
#define VLAN_UNKNOWN	200		/* nothing on va: the stack drops it */
#define QPN_MCAST	0xffffffu
#define SETTLE_S	10.0

/* Extension headers, in the order they follow the BTH (opcode.c). */
enum {
	H_DETH = 1, H_FETH = 2, H_RETH = 4, H_AETH = 8, H_ATMACK = 16,
	H_ATMETH = 32, H_IMMDT = 64, H_IETH = 128, H_CNP = 256,
};

static const uint8_t hdr_bytes[9] = { 8, 4, 16, 4, 8, 28, 4, 4, 16 };

enum { Q_RC = 1, Q_UC = 2, Q_UD = 4, Q_NONE = 8 };

struct opi {
	bool known;
	uint16_t hdrs;
	bool payload;
	uint8_t qpt;
	bool request;
};

static struct opi ops[256];

static void op_set(int code, uint16_t hdrs, bool pl, uint8_t qpt, bool req)
{
	ops[code] = (struct opi){ true, hdrs, pl, qpt, req };
}

/* vroce's opcode table (drivers/infiniband/sw/vroce/opcode.c). */
static void ops_init(void)
{
	static const uint8_t send_write[12] = {
		0, 0, 0, H_IMMDT, 0, H_IMMDT,
		H_RETH, 0, 0, H_IMMDT, H_RETH, H_RETH | H_IMMDT,
	};
	int i;

	for (i = 0; i < 12; i++) {
		op_set(i, send_write[i], true, Q_RC, true);
		op_set(0x20 + i, send_write[i], true, Q_UC, true);
	}
	op_set(0x0c, H_RETH, false, Q_RC, true);	/* READ request */
	op_set(0x0d, H_AETH, true, Q_RC, false);	/* READ response first */
	op_set(0x0e, 0, true, Q_RC, false);
	op_set(0x0f, H_AETH, true, Q_RC, false);
	op_set(0x10, H_AETH, true, Q_RC, false);
	op_set(0x11, H_AETH, false, Q_RC, false);	/* ACK, NAK, RNR NAK */
	op_set(0x12, H_AETH | H_ATMACK, false, Q_RC, false);
	op_set(0x13, H_ATMETH, false, Q_RC, true);	/* compare and swap */
	op_set(0x14, H_ATMETH, false, Q_RC, true);	/* fetch and add */
	op_set(0x16, H_IETH, true, Q_RC, true);	/* SEND with invalidate */
	op_set(0x17, H_IETH, true, Q_RC, true);
	op_set(0x1c, H_FETH | H_RETH, false, Q_RC, true);	/* FLUSH */
	op_set(0x1d, H_RETH, true, Q_RC, true);	/* ATOMIC WRITE */
	op_set(0x64, H_DETH, true, Q_UD, true);
	op_set(0x65, H_DETH | H_IMMDT, true, Q_UD, true);
	op_set(0x81, H_CNP, false, Q_NONE, false);
}

static unsigned int hdr_len(uint16_t hdrs)
{
	unsigned int b, len = 0;

	for (b = 0; b < 9; b++)
		if (hdrs & (1u << b))
			len += hdr_bytes[b];
	return len;
}

/* ------------------------------------------------------------ random */

static uint64_t rng;

static uint64_t rnd(void)
{
	return vroce_rnd(&rng);
}

static uint32_t rn(uint32_t n)
{
	return rnd() % n;
}

static bool chance(unsigned int percent)
{
	return rn(100) < percent;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static uint16_t get16(const uint8_t *p)
{
	return p[0] << 8 | p[1];
}

/* ------------------------------------------------------------ CRC */

static uint32_t crc_table[256];

static void crc_init(void)
{
	uint32_t c, i, k;

	for (i = 0; i < 256; i++) {
		for (c = i, k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc32_upd(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

enum kind { K_V1, K_V4, K_V6, K_NR };
static const char *const kind_name[K_NR] = { "v1", "v4", "v6" };

/* The ICRC of the bytes from @l3 to @end (icrc.c: masked fields). */
static uint32_t icrc(enum kind k, const uint8_t *l3, unsigned int len)
{
	static const uint8_t lrh[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	uint8_t ps[60 + 8 + 12];
	unsigned int l3len = k == K_V4 ? (l3[0] & 0xf) * 4 : 40;
	unsigned int hlen = l3len + 12 + (k == K_V1 ? 0 : 8);
	uint32_t crc;

	if (len < hlen)		/* a truncated frame: no BTH to mask */
		return crc32_upd(0, l3, len);
	memcpy(ps, l3, hlen);
	if (k == K_V4) {
		ps[1] = 0xff;
		ps[8] = 0xff;
		put16(ps + 10, 0xffff);
	} else {
		ps[0] |= 0x0f;
		memset(ps + 1, 0xff, 3);
		ps[7] = 0xff;
	}
	if (k != K_V1)
		put16(ps + l3len + 6, 0xffff);
	ps[hlen - 12 + 4] = 0xff;
	crc = crc32_upd(0xffffffffu, lrh, sizeof(lrh));
	crc = crc32_upd(crc, ps, hlen);
	crc = crc32_upd(crc, l3 + hlen, len - hlen);
	return ~crc;
}

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static uint32_t csum_add(uint32_t s, const uint8_t *p, unsigned int len)
{
	unsigned int i;

	for (i = 0; i + 1 < len; i += 2)
		s += p[i] << 8 | p[i + 1];
	if (len & 1)
		s += p[len - 1] << 8;
	return s;
}

/* ------------------------------------------------------------ setup */

/*
 * A device (vroce_dev_open, vroce_dev_buf: the live QP's PD and memory)
 * and what the fuzzing adds: the spare QPs' PD, MR and CQ.
 */
struct side {
	const char *name;
	struct vroce_dev dev;
	struct ibv_pd *fz_pd;
	struct ibv_mr *fz_mr;
	uint8_t *fz_buf;
	struct ibv_cq *cq, *fz_cq;
	struct ibv_qp *live;
};

static struct side a, b;
static struct ibv_qp *spare, *uc, *ud, *dead_rc, *dead_uc;

/* The spare QPs' PD and MR, both CQs and the live QP of @s. */
static int side_extra(struct side *s)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * DEPTH, .max_recv_wr = UD_RECVS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	s->fz_pd = ibv_alloc_pd(s->dev.ctx);
	s->fz_buf = aligned_alloc(4096, FZ_LEN);
	if (!s->fz_pd || !s->fz_buf)
		return -1;
	memset(s->fz_buf, 0, FZ_LEN);
	s->fz_mr = ibv_reg_mr(s->fz_pd, s->fz_buf, FZ_LEN,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC);
	s->cq = ibv_create_cq(s->dev.ctx, 4 * DEPTH, NULL, NULL, 0);
	s->fz_cq = ibv_create_cq(s->dev.ctx, 1024, NULL, NULL, 0);
	if (!s->fz_mr || !s->cq || !s->fz_cq)
		return -1;
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	s->live = ibv_create_qp(s->dev.pd, &init);
	return s->live ? 0 : -1;
}

static int side_open(struct side *s, const char *dev, const char *gid_var)
{
	s->name = dev;
	if (vroce_dev_open(&s->dev, dev, gid_var) ||
	    vroce_dev_buf(&s->dev, dev, CHUNK * DEPTH,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE))
		return -1;
	return side_extra(s);
}

static struct ibv_qp *fz_qp(struct side *s, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.send_cq = s->fz_cq, .recv_cq = s->fz_cq, .qp_type = type,
		.cap = { .max_send_wr = 4, .max_recv_wr = UD_RECVS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(s->fz_pd, &init);
}

/* From @s's QP to @peer's QP @qp: RC with every access, or UC. */
static struct vroce_rc_path path_to(struct side *s, struct side *peer,
				    struct ibv_qp *qp)
{
	return (struct vroce_rc_path){
		VROCE_RC_DEFAULTS,
		.dest_qpn = qp->qp_num, .dgid = peer->dev.gid,
		.sgid_idx = s->dev.gid_idx,
		.mtu = s->dev.mtu < peer->dev.mtu ? s->dev.mtu : peer->dev.mtu,
	};
}

static int rc_up(struct ibv_qp *qp, struct ibv_qp *peer_qp)
{
	struct vroce_rc_path p = path_to(&a, &b, peer_qp);

	return vroce_rc_connect(qp, &p);
}

static int uc_up(struct ibv_qp *qp, struct ibv_qp *peer_qp)
{
	struct vroce_rc_path p = path_to(&a, &b, peer_qp);

	p.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	return vroce_uc_connect(qp, &p);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return IBV_QPS_UNKNOWN;
	return attr.qp_state;
}

/* A spare QP the fuzzing moved to ERR goes back to RTS. */
static int revive(struct ibv_qp *qp, enum ibv_qp_type type)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };

	if (qp_state(qp) == IBV_QPS_RTS)
		return 0;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		return -1;
	if (type == IBV_QPT_RC)
		return rc_up(qp, dead_rc);
	return uc_up(qp, dead_uc);
}

static int ud_post_recv(void)
{
	struct ibv_sge sge = { .addr = (uintptr_t)a.fz_buf,
			       .length = UD_RECV_LEN, .lkey = a.fz_mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(ud, &wr, &bad);
}

/* Keep the UD QP's receive queue stocked (its completions are reaped). */
static void ud_refill(void)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(a.fz_cq, 16, wc)) > 0)
		for (i = 0; i < n; i++)
			if (wc[i].qp_num == ud->qp_num &&
			    wc[i].opcode & IBV_WC_RECV)
				ud_post_recv();
}

/* The groups the UD QP joins: 239.1.2.3 and ff0e::1:2:3. */
static const union ibv_gid mgid4 = {
	.raw = { [10] = 0xff, [11] = 0xff, [12] = 239, 1, 2, 3 },
};

static const union ibv_gid mgid6 = {
	.raw = { 0xff, 0x0e, [11] = 1, [13] = 2, [15] = 3 },
};

/* The live RC QPs connected, the spare QPs in RTS, the UD QP joined. */
static int fuzz_qps_open(void)
{
	struct vroce_rc_path pa = path_to(&a, &b, b.live);
	struct vroce_rc_path pb = path_to(&b, &a, a.live);
	int i;

	if (vroce_rc_connect(a.live, &pa) || vroce_rc_connect(b.live, &pb))
		return -1;
	spare = fz_qp(&a, IBV_QPT_RC);
	uc = fz_qp(&a, IBV_QPT_UC);
	ud = fz_qp(&a, IBV_QPT_UD);
	dead_rc = fz_qp(&b, IBV_QPT_RC);
	dead_uc = fz_qp(&b, IBV_QPT_UC);
	if (!spare || !uc || !ud || !dead_rc || !dead_uc)
		return -1;
	if (rc_up(spare, dead_rc) || uc_up(uc, dead_uc) ||
	    vroce_ud_connect(ud, UD_QKEY, 0))
		return -1;
	for (i = 0; i < UD_RECVS; i++)
		if (ud_post_recv())
			return -1;
	return ibv_attach_mcast(ud, &mgid4, 0) || ibv_attach_mcast(ud, &mgid6, 0);
}

/* ------------------------------------------------------------ live */

static atomic_uint_fast64_t live_posted, live_done;	/* packets */
static atomic_bool live_stop;
static atomic_uint_fast64_t live_credit;	/* batches sent */
static uint32_t live_pkts_per_chunk;
static char live_err[256];
static uint64_t live_chunks;

static uint8_t pattern(uint64_t chunk, uint32_t i)
{
	uint32_t x = i * 0x9e3779b1u ^ (uint32_t)(chunk + 1) * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	return x ^ (x >> 12);
}

static int live_post(unsigned int slot, uint64_t chunk)
{
	struct ibv_sge sge = { .addr = (uintptr_t)b.dev.buf + slot * CHUNK,
			       .length = CHUNK, .lkey = b.dev.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = chunk, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)a.dev.buf + slot * CHUNK,
			     .rkey = a.dev.mr->rkey },
	}, *bad;
	uint32_t i;

	for (i = 0; i < CHUNK; i++)
		b.dev.buf[slot * CHUNK + i] = pattern(chunk, i);
	atomic_fetch_add(&live_posted, live_pkts_per_chunk);
	return ibv_post_send(b.live, &wr, &bad);
}

/* Chunk @chunk, written to @slot: byte-exact, or why not in live_err. */
static bool live_check(uint64_t chunk, unsigned int slot)
{
	const uint8_t *p = a.dev.buf + slot * CHUNK;
	uint32_t i;

	for (i = 0; i < CHUNK; i++) {
		if (p[i] != pattern(chunk, i)) {
			snprintf(live_err, sizeof(live_err),
				 "chunk %llu byte %u: 0x%02x, want 0x%02x",
				 (unsigned long long)chunk, i, p[i],
				 pattern(chunk, i));
			return false;
		}
	}
	return true;
}

/* The completion of chunk @chunk, successful, or why not in live_err. */
static bool live_complete(uint64_t chunk)
{
	struct ibv_wc wc;

	if (vroce_poll_one(b.cq, &wc, HANG_S) != 1) {
		snprintf(live_err, sizeof(live_err),
			 "chunk %llu: no completion in %d s",
			 (unsigned long long)chunk, HANG_S);
		return false;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != chunk) {
		snprintf(live_err, sizeof(live_err),
			 "chunk %llu: completion %llu %s",
			 (unsigned long long)chunk,
			 (unsigned long long)wc.wr_id,
			 ibv_wc_status_str(wc.status));
		return false;
	}
	return true;
}

/*
 * The peer WRITEs chunks into the device's memory, DEPTH in flight and one
 * more per batch sent, until told to stop (and at least LIVE_MIN); each is
 * compared when it completes.
 */
static void *live_run(void *arg)
{
	uint64_t next = 0, done = 0;
	unsigned int slot;

	for (slot = 0; slot < DEPTH; slot++)
		if (live_post(slot, next++))
			goto post_err;
	while (done < next) {
		slot = done % DEPTH;
		if (!live_complete(done) || !live_check(done, slot))
			return NULL;
		done++;
		atomic_fetch_add(&live_done, live_pkts_per_chunk);
		while (!atomic_load(&live_stop) &&
		       next >= DEPTH + atomic_load(&live_credit))
			usleep(LIVE_POLL_US);
		if ((!atomic_load(&live_stop) || next < LIVE_MIN) &&
		    live_post(slot, next++))
			goto post_err;
	}
	live_chunks = done;
	return NULL;
post_err:
	snprintf(live_err, sizeof(live_err), "post_send: %s", strerror(errno));
	return NULL;
}

/* ------------------------------------------------------------ frames */

enum outcome {
	O_STACK,	/* dropped by the network stack: no vroce counter */
	O_ICRC, O_TVER, O_OPCODE, O_MALFORMED, O_PKEY, O_NOQP,
	O_ACCEPT,	/* rcvd_pkts; then maybe more below */
	O_NR
};

static const char *const out_name[O_NR] = {
	"stack", "icrc", "tver", "opcode", "malformed", "pkey", "no_qp",
	"accepted",
};

/* vroce's counter for each drop; none for O_STACK. */
static const char *const out_counter[O_NR] = {
	NULL, "rx_icrc_encapsulated", "rcvd_tver_err", "rcvd_opcode_err",
	"rcvd_malformed", "rcvd_pkey_err", "rcvd_no_qp", "rcvd_pkts",
};

struct verdict {
	enum outcome o;
	bool over_mtu;		/* accepted, then malformed by its QP */
	bool wrong_qpt;		/* accepted, then maybe opcode error */
};

enum target { T_LIVE, T_SPARE, T_UC, T_UD, T_GSI, T_NOQP, T_MCAST, T_NR };

struct frame {
	enum kind kind;
	enum target target;
	int vlan;		/* -1: untagged */
	bool frag;
	uint8_t l3[MAX_L3];
	unsigned int len;	/* of l3 */
	struct verdict v;
};

struct env {
	uint8_t smac[6], dmac[6];
	uint32_t seed;
	uint32_t mtu_bytes;	/* the RC and UC QPs' path MTU */
	uint32_t ip_id;
};

static struct env E;

static uint32_t target_qpn(enum target t)
{
	switch (t) {
	case T_LIVE:
		return a.live->qp_num;
	case T_SPARE:
		return spare->qp_num;
	case T_UC:
		return uc->qp_num;
	case T_UD:
		return ud->qp_num;
	case T_GSI:
		return 1;
	case T_MCAST:
		return QPN_MCAST;
	default:
		/* None of the few QPNs from 16 up that exist. */
		return rn(2) ? 0 : 0x1000 + rn(0xffe000);
	}
}

/* The QP type of QPN @qpn on the device, 0 if it has no such QP. */
static uint8_t qpn_type(uint32_t qpn)
{
	if (qpn == a.live->qp_num || qpn == spare->qp_num)
		return Q_RC;
	if (qpn == uc->qp_num)
		return Q_UC;
	if (qpn == ud->qp_num || qpn == 1)
		return Q_UD;
	return 0;
}

/*
 * A PSN the live QP's responder can only take for a duplicate or for one
 * far ahead of what the peer sends (never the PSN it expects next).
 */
static uint32_t live_psn(void)
{
	uint64_t lo = atomic_load(&live_done), hi = atomic_load(&live_posted);

	if (rn(2))
		return (uint32_t)(lo - 1 - rn(1u << 22)) & 0xffffff;
	return (uint32_t)(hi + (1u << 16) + rn(1u << 22)) & 0xffffff;
}

/* Opcodes a target's seed frame is drawn from. */
static int seed_opcode(enum target t)
{
	static const uint8_t rc[] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
		0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x11, 0x11,
		0x12, 0x13, 0x14, 0x16, 0x17, 0x1c, 0x1d, 0x81,
	};
	int op;

	if (chance(10)) {
		do
			op = rn(256);
		while (!ops[op].known);
		return op;
	}
	switch (t) {
	case T_UC:
		return 0x20 + rn(12);
	case T_UD:
	case T_GSI:
	case T_MCAST:
		return 0x64 + rn(2);
	default:
		return rc[rn(sizeof(rc))];
	}
}

/* Mostly short: long frames are few, so that many frames go out. */
static uint32_t seed_paylen(void)
{
	switch (rn(16)) {
	case 0:
		return 0;
	case 1:
		return E.mtu_bytes;
	case 2:
		return 4096;
	case 3:
		return 4097 + rn(3900);
	default:
		return 1 + rn(256);
	}
}

/* The AETH syndrome of an ACK, a NAK or an RNR NAK. */
static uint8_t seed_syndrome(void)
{
	switch (rn(4)) {
	case 0:
		return 0x60 + rn(5);	/* NAK: PSN seq, inv req, access... */
	case 1:
		return 0x20 | rn(32);	/* RNR NAK, timer */
	default:
		return rn(32);		/* ACK, credits */
	}
}

/* A RETH or the start of an AtomicETH: @va, the spare MR's R_Key, @len. */
static void seed_reth(uint8_t *p, uint64_t va, uint32_t len)
{
	put32(p, va >> 32);
	put32(p + 4, va);
	put32(p + 8, a.fz_mr->rkey);
	put32(p + 12, len);
}

/* An AETH: of an ACK, a NAK or an RNR NAK for opcode 0x11. */
static void seed_aeth(uint8_t *p, int op)
{
	p[0] = op == 0x11 ? seed_syndrome() : rn(32);
	put16(p + 1, rn(1u << 16));
	p[3] = rn(256);
}

/*
 * The extension headers of opcode @op at @p for a packet to @t with
 * @paylen bytes of payload, at @va in the spare MR; returns their length.
 */
static unsigned int seed_ext(uint8_t *p, int op, enum target t,
			     uint64_t va, uint32_t paylen)
{
	uint16_t hdrs = ops[op].hdrs;
	unsigned int i;

	if (hdrs & H_DETH) {
		put32(p, t == T_GSI ? GSI_QKEY :
			 chance(90) ? UD_QKEY : (uint32_t)rnd());
		put32(p + 4, b.live->qp_num);
	}
	p += hdrs & H_DETH ? 8 : 0;
	/* A FLUSH's placement type and selectivity level, sometimes bad. */
	if (hdrs & H_FETH)
		put32(p, chance(90) ? 1 + rn(2) + 16 * rn(2) : (uint32_t)rnd());
	p += hdrs & H_FETH ? 4 : 0;
	if (hdrs & H_RETH)
		seed_reth(p, va, op == 0x0c ? rn(FZ_LEN / 2) : paylen);
	p += hdrs & H_RETH ? 16 : 0;
	if (hdrs & H_AETH)
		seed_aeth(p, op);
	p += hdrs & H_AETH ? 4 : 0;
	for (i = 0; hdrs & H_ATMACK && i < 8; i += 4)
		put32(p + i, rnd());
	p += hdrs & H_ATMACK ? 8 : 0;
	if (hdrs & H_ATMETH) {
		seed_reth(p, va, 0);
		for (i = 12; i < 28; i++)
			p[i] = rn(256);
	}
	p += hdrs & H_ATMETH ? 28 : 0;
	if (hdrs & H_IMMDT)
		put32(p, rnd());
	p += hdrs & H_IMMDT ? 4 : 0;
	if (hdrs & H_IETH)
		put32(p, chance(50) ? a.fz_mr->rkey : (uint32_t)rnd());
	p += hdrs & H_IETH ? 4 : 0;
	if (hdrs & H_CNP)
		memset(p, 0, 16);
	return hdr_len(hdrs);
}

/*
 * The BTH, extension headers, payload and pad of a valid packet of opcode
 * @op at @qpn into @p; returns their length.
 */
static unsigned int seed_body(uint8_t *p, int op, uint32_t qpn,
			      enum target t)
{
	const struct opi *o = &ops[op];
	uint32_t paylen = o->payload ? seed_paylen() : 0;
	uint64_t va = (uintptr_t)a.fz_buf + (rn(FZ_LEN / 2) & ~7u);
	unsigned int pad = -paylen & 3, off, i;

	p[0] = op;
	p[1] = pad << 4;
	put16(p + 2, 0xffff);
	put32(p + 4, qpn);
	put32(p + 8, (o->request && o->qpt == Q_RC ? 0x80000000u : 0) |
		     (t == T_LIVE && o->request ? live_psn() : rn(1u << 24)));
	off = 12 + seed_ext(p + 12, op, t, va, paylen);
	for (i = 0; i < paylen + pad; i++)
		p[off + i] = i < paylen ? (uint8_t)(i * 7 + op) : 0;
	return off + paylen + pad;
}

/* Mutations of the BTH and what follows, before the ICRC is computed. */
static unsigned int mutate_body(uint8_t *p, unsigned int len, enum target *t)
{
	unsigned int n = rn(4), i, k;
	uint32_t qpn;

	while (n--) {
		switch (rn(11)) {
		case 0:		/* opcode */
			p[0] = chance(50) ? rn(256) : seed_opcode(*t);
			break;
		case 1:		/* TVer */
			p[1] = (p[1] & 0xf0) | rn(16);
			break;
		case 2:		/* P_Key: limited, other, invalid */
			put16(p + 2, chance(50) ? 0x7fff : rn(1u << 16));
			break;
		case 3:		/* pad, MigReq, SE */
			p[1] = (p[1] & 0x0f) | rn(256) << 4;
			break;
		case 4:		/* PSN, AckReq, reserved bits */
			put32(p + 8, (uint32_t)rnd());
			break;
		case 5:		/* another target */
			*t = rn(T_NR);
			qpn = target_qpn(*t);
			put32(p + 4, qpn);
			break;
		case 6:		/* bytes of the extension headers or payload */
			for (k = 1 + rn(4); k-- && len > 12;)
				p[12 + rn(len - 12)] = rn(256);
			break;
		case 7:		/* truncate */
			k = 1 + rn(chance(50) ? 8 : 64);
			len = len > k ? len - k : 0;
			break;
		case 8:		/* extend */
			k = chance(50) ? 4 * (1 + rn(4)) : 1 + rn(64);
			for (i = 0; i < k && len < MAX_L3 - 100; i++)
				p[len++] = rn(256);
			break;
		case 9:		/* resv8a: masked in the ICRC */
			p[4] = rn(256);
			break;
		default:	/* QPN to 0xFFFFFF */
			put32(p + 4, (p[4] << 24) | QPN_MCAST);
			break;
		}
	}
	return len;
}

static void ip_csum(uint8_t *ip)
{
	put16(ip + 10, 0);
	put16(ip + 10, ~csum_fold(csum_add(0, ip, 20)));
}

/* The UDP checksum of an IPv6 datagram over its UDP length. */
static void udp6_csum(uint8_t *l3, unsigned int avail)
{
	uint16_t ulen = get16(l3 + 44);
	uint32_t s;
	uint16_t c;

	put16(l3 + 46, 0);
	if (!ulen)		/* the stack takes 0 for the IPv6 length */
		ulen = avail;
	if (ulen < 8 || ulen > avail)
		return;
	s = csum_add(0, l3 + 8, 32) + ulen + 17;
	c = ~csum_fold(csum_add(s, l3 + 40, ulen));
	put16(l3 + 46, c ? c : 0xffff);
}

static const uint8_t ip4_a[4] = { 192, 0, 2, 1 }, ip4_b[4] = { 192, 0, 2, 2 };
static const uint8_t ip6_a[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
static const uint8_t ip6_b[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };

/* The L3 header(s) in front of @blen bytes of RoCE body at l3 + hlen. */
static unsigned int l3_hlen(enum kind k)
{
	return k == K_V4 ? 28 : k == K_V6 ? 48 : 40;
}

static void build_l3(struct frame *f, unsigned int blen)
{
	uint8_t *h = f->l3;
	unsigned int tot = l3_hlen(f->kind) + blen + 4;
	bool mc = f->target == T_MCAST;

	memset(h, 0, l3_hlen(f->kind));
	if (f->kind == K_V4) {
		h[0] = 0x45;
		put16(h + 2, tot);
		put16(h + 4, E.ip_id);
		h[8] = 64;
		h[9] = 17;
		memcpy(h + 12, ip4_b, 4);
		if (mc)
			memcpy(h + 16, mgid4.raw + 12, 4);
		else
			memcpy(h + 16, ip4_a, 4);
		put16(h + 20, 0xc000 + rn(0x4000));
		put16(h + 22, 4791);
		put16(h + 24, tot - 20);
		return;
	}
	h[0] = 0x60;
	put16(h + 4, tot - 40);
	h[6] = f->kind == K_V6 ? 17 : 0x1b;
	h[7] = 64;
	if (f->kind == K_V6) {
		memcpy(h + 8, ip6_b, 16);
		memcpy(h + 24, mc ? mgid6.raw : ip6_a, 16);
		put16(h + 40, 0xc000 + rn(0x4000));
		put16(h + 42, 4791);
		put16(h + 44, tot - 40);
		return;
	}
	memcpy(h + 8, b.dev.gid.raw, 16);
	memcpy(h + 24, mc ? (rn(2) ? mgid4.raw : mgid6.raw) : a.dev.gid.raw, 16);
}

/* ICRC-masked fields: ECN (CE too), DSCP, TTL or hop limit, flow label. */
static void mutate_masked(struct frame *f)
{
	if (f->kind == K_V4) {
		f->l3[1] = rn(256);
		f->l3[8] = 1 + rn(255);
		return;
	}
	f->l3[0] = 0x60 | rn(16);
	f->l3[1] = rn(256);
	f->l3[2] = rn(256);
	f->l3[3] = rn(256);
	f->l3[7] = 1 + rn(255);
}

/* The UDP length (v2) or GRH payload length (v1): a random other value. */
static void mutate_l3_len(struct frame *f)
{
	unsigned int at = f->kind == K_V4 ? 24 : f->kind == K_V6 ? 44 : 4;
	int v = get16(f->l3 + at);

	v += chance(50) ? (int)rn(41) - 20 : (int)rn(1u << 16);
	put16(f->l3 + at, v);
}

/* ------------------------------------------------------------ model */

/* The payload a QP takes (task.c, vroce_qp_rx_max_payload()). */
static uint32_t qp_max_payload(uint8_t qpt)
{
	return qpt == Q_RC || qpt == Q_UC ? E.mtu_bytes : 4096;
}

static bool mgid_joined(const uint8_t *dgid)
{
	return !memcmp(dgid, mgid4.raw, 16) || !memcmp(dgid, mgid6.raw, 16);
}

/*
 * The network stack's checks of f: O_STACK if it drops the frame,
 * O_MALFORMED for a datagram it passes that vroce cannot frame, else
 * O_ACCEPT with the datagram's length from f->l3 in *@len and its
 * destination as a GID in @dgid.
 */
static enum outcome model_stack(const struct frame *f, unsigned int *len,
				uint8_t *dgid)
{
	const uint8_t *l3 = f->l3;
	unsigned int plen;

	/*
	 * An unknown VLAN; or an IP multicast datagram on va.100, which did
	 * not join the group (vroce joins it on va).
	 */
	if (f->vlan == VLAN_UNKNOWN ||
	    (f->vlan == VLAN_BOUND && f->kind == K_V4 && l3[16] >= 224 &&
	     l3[16] < 240) ||
	    (f->vlan == VLAN_BOUND && f->kind == K_V6 && l3[24] == 0xff))
		return O_STACK;
	*len = f->len;
	if (f->kind == K_V1) {
		memcpy(dgid, l3 + 24, 16);
		return O_ACCEPT;
	}
	if (f->kind == K_V4) {
		plen = get16(l3 + 24);
		if (csum_fold(csum_add(0, l3, 20)) != 0xffff ||
		    plen < 8 || plen > *len - 20)
			return O_STACK;
		*len = 20 + plen;
		memcpy(dgid + 10, "\xff\xff", 2);
		memcpy(dgid + 12, l3 + 16, 4);
		return O_ACCEPT;
	}
	/* UDP length 0 (jumbogram): the stack passes it, vroce not. */
	plen = get16(l3 + 44);
	if (!plen && *len >= 48)
		return O_MALFORMED;
	if (plen < 8 || plen > *len - 40)
		return O_STACK;
	*len = 40 + plen;
	memcpy(dgid, l3 + 24, 16);
	return O_ACCEPT;
}

/*
 * The BTH of the @len-byte datagram at f->l3 into *@bth and the length of
 * the RoCE packet (BTH to ICRC) into *@roce; false if vroce cannot frame it.
 */
static bool model_framing(const struct frame *f, unsigned int len,
			  const uint8_t **bth, unsigned int *roce)
{
	const uint8_t *l3 = f->l3;
	unsigned int hl, plen;

	if (f->kind != K_V1) {
		hl = f->kind == K_V4 ? 20 : 40;
		if (len - hl < 8 + 12 + 4)
			return false;
		*roce = len - hl - 8;
		*bth = l3 + hl + 8;
		return true;
	}
	if (len < 40 + 12 + 4)
		return false;
	plen = get16(l3 + 4);
	if ((l3[0] >> 4) != 6 || l3[6] != 0x1b || plen < 16 || plen > len - 40)
		return false;
	*roce = plen;
	*bth = l3 + 40;
	return true;
}

/*
 * The checks of the RoCE packet at @bth, @roce bytes long: the ICRC, TVer,
 * the opcode, headers against the opcode, the P_Key. O_ACCEPT with the
 * payload's length in *@plen, or the drop.
 */
static enum outcome model_packet(const struct frame *f, const uint8_t *bth,
				 unsigned int roce, unsigned int *plen)
{
	const struct opi *o = &ops[bth[0]];
	unsigned int body, rest, pad;
	uint32_t wire;

	memcpy(&wire, bth + roce - 4, 4);
	if (le32toh(wire) != icrc(f->kind, f->l3, bth + roce - 4 - f->l3))
		return O_ICRC;
	if (bth[1] & 0xf)
		return O_TVER;
	if (!o->known)
		return O_OPCODE;
	body = roce - 12 - 4;
	pad = (bth[1] >> 4) & 3;
	if (body < hdr_len(o->hdrs))
		return O_MALFORMED;
	rest = body - hdr_len(o->hdrs);
	if ((rest && !o->payload) || rest % 4 || pad > rest)
		return O_MALFORMED;
	*plen = rest - pad;
	if ((get16(bth + 2) & 0x7fff) != 0x7fff)
		return O_PKEY;
	return O_ACCEPT;
}

/*
 * An accepted packet's QP lookup: O_NOQP, or accepted by a QP that maybe
 * drops it later (payload over its limit, opcode of another transport).
 */
static struct verdict model_qp(const uint8_t *bth, const uint8_t *dgid,
			       unsigned int plen)
{
	struct verdict v = { .o = O_NOQP };
	uint32_t dqpn = (bth[5] << 16) | (bth[6] << 8) | bth[7];
	uint8_t qpt;

	if (dqpn == QPN_MCAST && bth[0] != 0x81)
		qpt = mgid_joined(dgid) ? Q_UD : 0;
	else
		qpt = qpn_type(dqpn);
	if (!qpt)
		return v;
	v.o = O_ACCEPT;
	v.over_mtu = plen > qp_max_payload(qpt);
	v.wrong_qpt = !(ops[bth[0]].qpt & qpt);
	return v;
}

/*
 * What vroce does with the datagram at f->l3 (rx.c): after the stack's
 * checks, the framing, the ICRC, TVer, the opcode, headers against the
 * opcode, the P_Key, then the QP lookup.
 */
static struct verdict model(const struct frame *f)
{
	struct verdict v = {};
	unsigned int len, roce, plen;
	uint8_t dgid[16] = { 0 };
	const uint8_t *bth;

	v.o = model_stack(f, &len, dgid);
	if (v.o != O_ACCEPT)
		return v;
	if (!model_framing(f, len, &bth, &roce)) {
		v.o = O_MALFORMED;
		return v;
	}
	v.o = model_packet(f, bth, roce, &plen);
	if (v.o != O_ACCEPT)
		return v;
	return model_qp(bth, dgid, plen);
}

/* ------------------------------------------------------------ one frame */

/* Frame @idx's kind, target, VLAN tag and fragmentation. */
static void frame_pick(struct frame *f)
{
	f->kind = rn(K_NR);
	f->target = rn(100) < 20 ? T_LIVE : rn(T_NR);
	/* Few at the GSI QP: ib_core logs most of what it gets. */
	if (f->target == T_GSI && chance(85))
		f->target = T_SPARE;
	f->vlan = -1;
	if (chance(15))
		f->vlan = chance(70) ? VLAN_BOUND : chance(70) ? 0 :
					VLAN_UNKNOWN;
	f->frag = f->kind == K_V4 && chance(15);
}

/* The RoCE packet of @f from its BTH, mostly mutated; returns its length. */
static unsigned int frame_body(struct frame *f)
{
	uint8_t *body = f->l3 + l3_hlen(f->kind);
	int op = seed_opcode(f->target);
	unsigned int blen;

	blen = seed_body(body, op, target_qpn(f->target), f->target);
	if (!chance(8))
		blen = mutate_body(body, blen, &f->target);
	/* The live QP's responder never gets the PSN it expects. */
	if ((((body[5] << 16) | (body[6] << 8) | body[7]) == a.live->qp_num) &&
	    (!ops[body[0]].known || ops[body[0]].request))
		put32(body + 8, (body[8] << 24) | live_psn());
	return blen;
}

/* The ICRC after the @blen-byte RoCE packet of @f; maybe broken after. */
static void frame_icrc(struct frame *f, unsigned int blen)
{
	unsigned int hl = l3_hlen(f->kind);
	uint32_t crc = htole32(icrc(f->kind, f->l3, hl + blen));

	f->len = hl + blen + 4;
	memcpy(f->l3 + hl + blen, &crc, 4);
	if (chance(10))		/* an invalid ICRC */
		f->l3[hl + blen + rn(4)] ^= 1u << rn(8);
	if (blen && chance(3))	/* a covered byte after the ICRC */
		f->l3[hl + rn(blen)] ^= 1u << rn(8);
}

/* The IPv4 header checksum (rarely a bad one) or the IPv6 UDP checksum. */
static void frame_csum(struct frame *f)
{
	if (f->kind == K_V4) {
		ip_csum(f->l3);
		if (chance(1)) {	/* the stack drops it, whole */
			f->l3[10] ^= 0x40;
			f->frag = false;
		}
	} else if (f->kind == K_V6) {
		udp6_csum(f->l3, f->len - 40);
	}
}

/* Frame @idx of the run: drawn from the seed and @idx alone. */
static void frame_make(struct frame *f, uint64_t idx)
{
	bool post_len = false;
	unsigned int blen;

	rng = ((uint64_t)E.seed << 32) ^ (idx * 0xd1342543de82ef95ull);
	rnd();
	frame_pick(f);
	E.ip_id++;
	blen = frame_body(f);
	build_l3(f, blen);
	if (chance(25))
		mutate_masked(f);
	if (chance(6)) {
		if (chance(50))
			mutate_l3_len(f);
		else
			post_len = true;
	}
	frame_icrc(f, blen);
	if (post_len)
		mutate_l3_len(f);
	frame_csum(f);
	f->v = model(f);
}

/*
 * The frame that ends each batch: an IPv4 ACK with a bad ICRC. The receive
 * path takes the frames of a batch in order (one CPU's backlog: the sender
 * is pinned), so once it is counted every frame before it went through
 * the checks of rx.c and the QP's payload limit.
 */
static void marker_make(struct frame *f)
{
	uint8_t *body = f->l3 + l3_hlen(K_V4);
	uint32_t bad;

	memset(f, 0, offsetof(struct frame, l3));
	f->kind = K_V4;
	f->target = T_NOQP;
	f->vlan = -1;
	memset(body, 0, 16);
	body[0] = 0x11;
	put16(body + 2, 0xffff);
	build_l3(f, 16);
	/* Stored as the ICRC is (frame_icrc()), every bit flipped. */
	bad = htole32(~icrc(K_V4, f->l3, l3_hlen(K_V4) + 16));
	memcpy(f->l3 + l3_hlen(K_V4) + 16, &bad, 4);
	f->len = l3_hlen(K_V4) + 16 + 4;
	ip_csum(f->l3);
	f->v = model(f);
}

/* The Ethernet header (VLAN tag too) of @f at @e; returns its length. */
static unsigned int eth_header(const struct frame *f, uint8_t *e)
{
	bool mc = f->target == T_MCAST;
	unsigned int eh = 12;

	if (mc && f->kind == K_V4) {
		memcpy(e, "\x01\x00\x5e\x01\x02\x03", 6);
	} else if (mc && f->kind != K_V1) {
		memcpy(e, "\x33\x33\x00\x02\x00\x03", 6);
	} else if (mc) {
		e[0] = 0x33;
		e[1] = 0x33;
		memcpy(e + 2, f->l3 + 36, 4);
	} else {
		memcpy(e, E.dmac, 6);
	}
	memcpy(e + 6, E.smac, 6);
	if (f->vlan >= 0) {
		put16(e + 12, 0x8100);
		put16(e + 14, f->vlan | rn(8) << 13);
		eh = 16;
	}
	put16(e + eh, f->kind == K_V1 ? 0x8915 :
		      f->kind == K_V4 ? 0x0800 : 0x86dd);
	return eh + 2;
}

/* Ethernet frames of @f into @out (MAX_FRAGS of ETH_FRAME_LEN + ...). */
static unsigned int frame_eth(struct frame *f, uint8_t (*out)[MAX_L3 + 32],
			      unsigned int *olen)
{
	unsigned int n = 0, off = 0, piece, eh, pl = f->len - 20, nf;
	uint8_t *e;

	nf = f->frag && pl > 16 ? 2 + rn(2) : 1;
	do {
		e = out[n];
		eh = eth_header(f, e);
		if (nf == 1) {
			memcpy(e + eh, f->l3, f->len);
			olen[n++] = eh + f->len;
			break;
		}
		/* IPv4 fragment n of nf: 8-byte units of the L4 bytes. */
		piece = n + 1 == nf ? pl - off : ((pl / nf) & ~7u) ? : 8;
		if (off + piece > pl)
			piece = pl - off;
		memcpy(e + eh, f->l3, 20);
		memcpy(e + eh + 20, f->l3 + 20 + off, piece);
		put16(e + eh + 2, 20 + piece);
		put16(e + eh + 6, (off / 8) | (off + piece < pl ? 0x2000 : 0));
		ip_csum(e + eh);
		olen[n++] = eh + 20 + piece;
		off += piece;
	} while (off < pl);
	return n;
}

/* ------------------------------------------------------------ counters */

enum { C_ICRC, C_TVER, C_OPCODE, C_MAL, C_PKEY, C_NOQP, C_PKTS, C_NR };

/*
 * The device's counters, read through files kept open (pread from 0 shows
 * a sysfs attribute afresh): a lookup per read costs a debug kernel more
 * than a batch of frames does.
 */
static void counters_read(long long *c)
{
	static int fd[C_NR] = { [0 ... C_NR - 1] = -1 };
	char path[256], buf[32];
	ssize_t n;
	int i;

	for (i = 0; i < C_NR; i++) {
		if (fd[i] < 0) {
			vroce_hw_counter_path(path, sizeof(path), a.name,
					      out_counter[i + 1]);
			fd[i] = open(path, O_RDONLY | O_CLOEXEC);
		}
		n = fd[i] < 0 ? -1 : pread(fd[i], buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = 0;
		c[i] = n > 0 ? strtoll(buf, NULL, 10) : -1;
	}
}

struct tally {
	uint64_t out[O_NR];
	uint64_t over_mtu, wrong_qpt, kind[K_NR], frags, vlan, frames;
};

/*
 * The counters moved by @want since @base; rcvd_opcode_err, which a QP's
 * task may count later, by [@opc_lo, @opc_hi] since the run's start
 * (@start). Waits for the receive path to catch up.
 */
static bool batch_ok(const long long *base, const long long *want,
		     const long long *start, long long opc_lo,
		     long long opc_hi, long long *now)
{
	double end = vroce_now_s() + SETTLE_S;
	long long opc;
	bool ok;
	int i;

	do {
		counters_read(now);
		ok = true;
		for (i = 0; i < C_PKTS; i++)
			if (i != C_OPCODE)
				ok &= now[i] - base[i] == want[i];
		opc = now[C_OPCODE] - start[C_OPCODE];
		ok &= opc >= opc_lo && opc <= opc_hi;
		if (ok)
			return true;
		for (i = 0; i < C_PKTS; i++)
			if (i != C_OPCODE && now[i] - base[i] > want[i])
				return false;
		if (opc > opc_hi)
			return false;
		usleep(1000);
	} while (vroce_now_s() < end);
	return false;
}

/* ------------------------------------------------------------ main */

static int packet_socket(const char *ns, const char *ifname)
{
	char path[128];
	struct sockaddr_ll ll = { .sll_family = AF_PACKET };
	int back, fd, s = -1, one = 1;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	back = open("/proc/self/ns/net", O_RDONLY);
	fd = open(path, O_RDONLY);
	if (back < 0 || fd < 0 || setns(fd, CLONE_NEWNET))
		return -1;
	s = socket(AF_PACKET, SOCK_RAW, 0);
	ll.sll_ifindex = if_nametoindex(ifname);
	if (s >= 0 && (!ll.sll_ifindex ||
		       bind(s, (struct sockaddr *)&ll, sizeof(ll)))) {
		close(s);
		s = -1;
	}
	if (s >= 0)
		setsockopt(s, SOL_PACKET, PACKET_QDISC_BYPASS, &one,
			   sizeof(one));
	if (setns(back, CLONE_NEWNET))
		s = -1;
	close(fd);
	close(back);
	return s;
}

static int parse_mac(const char *s, uint8_t *mac)
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1],
		      &mac[2], &mac[3], &mac[4], &mac[5]) == 6 ? 0 : -1;
}

#define MAX_ETH	(MAX_BATCH * MAX_FRAGS + 1)
static uint8_t (*ebuf)[MAX_L3 + 32];
static unsigned int elen[MAX_ETH];
static struct mmsghdr msgs[MAX_ETH];
static struct iovec iov[MAX_ETH];

static int send_all(int s, unsigned int n)
{
	unsigned int i, sent = 0;
	int r;

	for (i = 0; i < n; i++) {
		iov[i].iov_base = ebuf[i];
		iov[i].iov_len = elen[i];
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (sent < n) {
		r = sendmmsg(s, msgs + sent, n - sent, 0);
		if (r < 0 && errno != ENOBUFS && errno != EAGAIN)
			return -1;
		if (r < 0) {
			usleep(100);
			continue;
		}
		sent += r;
	}
	return 0;
}

static void print_frame(const struct frame *f, uint64_t idx)
{
	unsigned int i, hl = l3_hlen(f->kind);

	ksft_print_msg("frame %llu: %s target %d vlan %d frag %d len %u: %s%s%s; bth+:",
		       (unsigned long long)idx, kind_name[f->kind], f->target,
		       f->vlan, f->frag, f->len, out_name[f->v.o],
		       f->v.over_mtu ? " over-mtu" : "",
		       f->v.wrong_qpt ? " wrong-qpt" : "");
	for (i = hl; i < f->len && i < hl + 48; i++)
		printf(" %02x", f->l3[i]);
	printf("\n");
}

static void print_usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s --netns NS --smac MAC --dmac MAC [--seed N] [--iterations N] [--first I] [--batch N]\n",
		argv0);
	exit(KSFT_FAIL);
}

struct run {
	uint64_t first, iters;
	unsigned int batch;
	int sock;
	struct tally t;
	long long start[C_NR], b_sent0;
	long long opc_lo, opc_hi;	/* rcvd_opcode_err since the start */
	uint64_t bad_batches;
	struct frame marker;
};

/* Count frame @f in @r's tally and the counters it must move, in @want. */
static void tally_frame(struct run *r, const struct frame *f, long long *want)
{
	r->t.out[f->v.o]++;
	r->t.kind[f->kind]++;
	r->t.frags += f->frag;
	r->t.vlan += f->vlan >= 0;
	if (f->v.o >= O_ICRC && f->v.o < O_ACCEPT)
		want[f->v.o - O_ICRC]++;
	if (f->v.o == O_NOQP || f->v.o == O_ACCEPT)
		want[C_PKTS]++;
	if (f->v.o == O_ACCEPT && f->v.over_mtu) {
		want[C_MAL]++;
		r->t.over_mtu++;
	} else if (f->v.o == O_ACCEPT && f->v.wrong_qpt) {
		r->opc_hi++;
		r->t.wrong_qpt++;
	}
}

/* Frames @from..@to - 1 into @fr and ebuf, then the marker; Ethernet frames. */
static unsigned int batch_build(struct run *r, uint64_t from, uint64_t to,
				struct frame *fr, long long *want)
{
	unsigned int ne = 0;
	uint64_t idx;
	struct frame *f;

	for (idx = from; idx < to; idx++) {
		f = &fr[idx - from];
		frame_make(f, idx);
		ne += frame_eth(f, ebuf + ne, elen + ne);
		tally_frame(r, f, want);
	}
	marker_make(&r->marker);
	if (r->marker.v.o != O_ICRC)
		ksft_exit_fail_msg("the batch marker is not an ICRC error\n");
	ne += frame_eth(&r->marker, ebuf + ne, elen + ne);
	want[C_ICRC]++;
	r->opc_lo += want[C_OPCODE];
	r->opc_hi += want[C_OPCODE];
	r->t.frames += ne - 1;
	return ne;
}

/* A batch whose counters are off: how to replay it, and what moved. */
static void batch_report(const struct run *r, uint64_t from, uint64_t to,
			 const struct frame *fr, const long long *base,
			 const long long *want, const long long *now)
{
	uint64_t idx;
	int i;

	ksft_print_msg("frames %llu..%llu (--seed %u --first %llu --iterations %llu): counters moved:",
		       (unsigned long long)from, (unsigned long long)to - 1,
		       E.seed, (unsigned long long)from,
		       (unsigned long long)(to - from));
	for (i = 0; i < C_PKTS; i++)
		printf(" %s %lld (want %lld)", out_counter[i + 1],
		       now[i] - base[i], want[i]);
	printf("; rcvd_opcode_err since the start %lld (want %lld..%lld)",
	       now[C_OPCODE] - r->start[C_OPCODE], r->opc_lo, r->opc_hi);
	printf("\n");
	if (to - from <= 4)
		for (idx = from; idx < to; idx++)
			print_frame(&fr[idx - from], idx);
}

/* One batch of frames; false if its counters are off. */
static bool run_batch(struct run *r, uint64_t from, uint64_t to,
		      struct frame *fr)
{
	long long base[C_NR], want[C_NR] = { 0 }, now[C_NR];
	unsigned int ne;

	ud_refill();
	if (revive(spare, IBV_QPT_RC) || revive(uc, IBV_QPT_UC))
		ksft_print_msg("cannot move a spare QP back to RTS\n");
	counters_read(base);
	ne = batch_build(r, from, to, fr, want);
	if (send_all(r->sock, ne))
		ksft_exit_fail_msg("sendmmsg: %s\n", strerror(errno));
	atomic_fetch_add(&live_credit, 1);
	if (batch_ok(base, want, r->start, r->opc_lo, r->opc_hi, now))
		return true;
	r->bad_batches++;
	batch_report(r, from, to, fr, base, want, now);
	return false;
}

static int setup(void)
{
	if (side_open(&a, getenv("VROCE_DEV"), "VROCE_GID") ||
	    side_open(&b, getenv("VROCE_PEER_DEV"), "VROCE_PEER_GID") ||
	    fuzz_qps_open())
		return -1;
	E.mtu_bytes = 128u << path_to(&a, &b, b.live).mtu;
	live_pkts_per_chunk = (CHUNK + E.mtu_bytes - 1) / E.mtu_bytes;
	return 0;
}

static void report(struct run *r, double secs)
{
	int i;

	ksft_print_msg("%llu frames (%llu Ethernet frames: %llu IPv4 fragmented, %llu VLAN tagged) in %.1f s: %.0f/s; v1 %llu v4 %llu v6 %llu\n",
		       (unsigned long long)r->iters,
		       (unsigned long long)r->t.frames,
		       (unsigned long long)r->t.frags,
		       (unsigned long long)r->t.vlan, secs, r->iters / secs,
		       (unsigned long long)r->t.kind[K_V1],
		       (unsigned long long)r->t.kind[K_V4],
		       (unsigned long long)r->t.kind[K_V6]);
	ksft_print_msg("predicted:");
	for (i = 0; i < O_NR; i++)
		printf(" %s %llu", out_name[i], (unsigned long long)r->t.out[i]);
	printf(" (of the accepted: over the QP's MTU %llu, other transport %llu)\n",
	       (unsigned long long)r->t.over_mtu,
	       (unsigned long long)r->t.wrong_qpt);
}

/* The options into @r, E and *@ns; exits with the usage if one is bad. */
static void parse_args(int argc, char **argv, struct run *r, const char **ns)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "first", required_argument, NULL, 'f' },
		{ "batch", required_argument, NULL, 'b' },
		{ "netns", required_argument, NULL, 'N' },
		{ "smac", required_argument, NULL, 'S' },
		{ "dmac", required_argument, NULL, 'D' },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			E.seed = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			r->iters = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			r->first = strtoull(optarg, NULL, 0);
			break;
		case 'b':
			r->batch = strtoul(optarg, NULL, 0);
			break;
		case 'N':
			*ns = optarg;
			break;
		case 'S':
			if (parse_mac(optarg, E.smac))
				print_usage(argv[0]);
			break;
		case 'D':
			if (parse_mac(optarg, E.dmac))
				print_usage(argv[0]);
			break;
		default:
			print_usage(argv[0]);
		}
	}
	if (!*ns || !r->batch || r->batch > MAX_BATCH)
		print_usage(argv[0]);
}

/* Every batch, while the live transfer runs on; returns the seconds. */
static double fuzz_all(struct run *r, struct frame *fr)
{
	double t0 = vroce_now_s();
	uint64_t i, to;
	cpu_set_t cpus;
	pthread_t th;

	if (pthread_create(&th, NULL, live_run, NULL))
		ksft_exit_fail_msg("pthread_create\n");
	CPU_ZERO(&cpus);
	CPU_SET(sched_getcpu(), &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	for (i = r->first; i < r->first + r->iters && !live_err[0]; i = to) {
		to = i + r->batch;
		if (to > r->first + r->iters)
			to = r->first + r->iters;
		run_batch(r, i, to, fr);
	}
	t0 = vroce_now_s() - t0;
	atomic_store(&live_stop, true);
	pthread_join(th, NULL);
	return t0;
}

/* Every frame is counted, or accepted: rcvd_pkts is exact too. */
static void check_accounted(const struct run *r)
{
	double end = vroce_now_s() + SETTLE_S;
	long long now[C_NR], b_sent, accepted;
	bool ok;

	accepted = r->t.out[O_ACCEPT] + r->t.out[O_NOQP];
	do {
		usleep(10000);
		counters_read(now);
		b_sent = vroce_hw_counter(b.name, "sent_pkts") - r->b_sent0;
		ok = now[C_PKTS] - r->start[C_PKTS] == accepted + b_sent;
	} while (!ok && vroce_now_s() < end);
	ksft_print_msg("rcvd_pkts moved %lld: %lld accepted frames + %lld packets the peer sent\n",
		       now[C_PKTS] - r->start[C_PKTS], accepted, b_sent);
	ksft_test_result(ok, "every injected frame accounted for (--seed %u)\n",
			 E.seed);
}

int main(int argc, char **argv)
{
	struct run r = { .iters = 20000, .batch = MAX_BATCH };
	const char *ns = NULL;
	struct frame *fr;
	double secs;
	bool ok;

	E.seed = (uint32_t)(vroce_now_s() * 1e6) ^ (uint32_t)getpid();
	parse_args(argc, argv, &r, &ns);
	ksft_print_header();
	if (!getenv("VROCE_DEV") || !getenv("VROCE_PEER_DEV"))
		ksft_exit_skip("VROCE_DEV, VROCE_PEER_DEV not set (run frame_fuzz.sh)\n");
	ksft_set_plan(3);
	ops_init();
	crc_init();
	if (setup())
		ksft_exit_fail_msg("cannot set up the QPs: %s\n", strerror(errno));
	r.sock = packet_socket(ns, "vb");
	ebuf = calloc(MAX_ETH, sizeof(*ebuf));
	fr = calloc(MAX_BATCH, sizeof(*fr));
	if (r.sock < 0 || !ebuf || !fr)
		ksft_exit_fail_msg("packet socket in %s: %s\n", ns,
				   strerror(errno));
	ksft_print_msg("seed %u, frames %llu..%llu, path MTU %u\n", E.seed,
		       (unsigned long long)r.first,
		       (unsigned long long)(r.first + r.iters - 1), E.mtu_bytes);
	counters_read(r.start);
	r.b_sent0 = vroce_hw_counter(b.name, "sent_pkts");
	secs = fuzz_all(&r, fr);
	report(&r, secs);
	ksft_test_result(!r.bad_batches,
			 "every drop counted where the model says: %llu batches of %u off\n",
			 (unsigned long long)r.bad_batches, r.batch);
	check_accounted(&r);
	if (live_err[0])
		ksft_print_msg("live transfer: %s\n", live_err);
	ok = !live_err[0] && qp_state(a.live) == IBV_QPS_RTS &&
	     qp_state(b.live) == IBV_QPS_RTS;
	ksft_test_result(ok, "the live RC transfer moved %llu chunks of %u bytes, byte-exact (--seed %u)\n",
			 (unsigned long long)live_chunks, CHUNK, E.seed);
	ksft_finished();
}
