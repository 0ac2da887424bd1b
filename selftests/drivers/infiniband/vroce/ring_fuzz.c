// SPDX-License-Identifier: GPL-2.0
/*
 * A fuzzer of the rings a process shares with vroce: it writes random and
 * boundary values into the send and receive WQEs of real RC, UC and UD QPs,
 * moves producer indices, rings the doorbell and changes the QP's state,
 * and checks what any process may rely on. Run by ring_fuzz.sh with
 * VROCE_DEV set (VROCE_GID: the GID index, default the first RoCE v2 IPv4
 * one).
 *
 *   ring_fuzz [--seed N] [--iterations N] [--only I] [--wqes N]
 *             [--batch M] [--round R]
 *
 * One case is one pair of fresh QPs in loopback (a the requester, b the
 * responder, every send signaled): b gets receives, a gets a well-formed
 * WQE while in RTR (the doorbell is refused, the WQE stays in the ring),
 * the case rewrites fields of it (and sometimes of b's receive WQE or the
 * SQ's producer index), then moves a to RTS, when the kernel reads it.
 * Case I draws from a generator seeded by (seed, I) alone, so --seed S
 * --only I replays it. What must hold, for every case:
 * - the WQE completes within HANG_S seconds, and the QPs and CQs are
 *   destroyed (a hang fails the case, and the script's timeout catches a
 *   verb that never returns);
 * - a WQE that breaks a rule of the send queue's contract completes with
 *   IBV_WC_LOC_QP_OP_ERR: an opcode its QP type does not take, unknown
 *   send_flags, INLINE on a READ or an atomic, more inline data than
 *   max_inline_data, more SGEs than max_send_sge, a message over 2 GiB;
 * - a WQE whose first local SGE is outside every MR of its PD that allows
 *   the access (an unknown, stale or other PD's lkey, an address outside
 *   the MR, local write to a read-only MR) does not complete successfully;
 *   on RC neither does one whose remote key or address is bad;
 * - memory that no MR covers, and a read-only MR, keep their bytes.
 *
 * Rounds then fuzz in volume (--wqes N, M per round, M at most 128): one
 * pair of each type lives through every round. A round brings both QPs up
 * from RESET, posts M well-formed WQEs on a in RTR as one list, rewrites
 * every one after the first 0 to 7 (the same changes as a case, without
 * the producer index), and moves a to RTS: the kernel reads all M. Round R
 * draws from (seed, R) alone (--round R replays it). What must hold, for
 * every round: the M completions arrive in order within HANG_S seconds
 * each; until the first error each WQE completes as its case would have
 * to; nothing completes successfully after an error (the QP is in ERR);
 * the guarded memory keeps its bytes.
 *
 * The kernel itself must report no oops, warning, KASAN or lockdep splat:
 * the harness reads dmesg. At the end a clean WRITE must still move its
 * bytes exactly. A failing case or round prints its seed and index.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "../../../kselftest.h"
#include "vroce_test.h"
#include "vroce_ring.h"

#define HANG_S		30
#define DEPTH		8
#define MAX_SGE		4
#define MAX_INLINE	64
#define BUF_SIZE	(4u << 20)
#define RW_OFF		(1u << 20)	/* [1, 2) MiB: every access */
#define RO_OFF		(2u << 20)	/* [2, 3) MiB: local read only */
#define MR_LEN		(1u << 20)
#define MSG_MAX		0x80000000u	/* the device's max_msg_sz */
#define MAGIC		0xf022000000000000ull
#define RMAGIC		0xf023000000000000ull	/* rounds' wr_ids */
#define ROUND_MAX	128	/* WQEs per round, at most (the SQ's depth) */

/* uverbs opcodes (ib_user_verbs.h) and send flags (ibv_post_send(3)). */
enum {
	OP_WRITE = 0, OP_WRITE_IMM = 1, OP_SEND = 2, OP_SEND_IMM = 3,
	OP_READ = 4, OP_CAS = 5, OP_FAA = 6, OP_LOCAL_INV = 7,
	OP_BIND_MW = 8, OP_SEND_INV = 9, OP_FLUSH = 14, OP_ATOMIC_WRITE = 15,
};
/* IB_UVERBS_DEVICE_FLUSH_GLOBAL: the device takes FLUSH WQEs (6.2+). */
#define DEVICE_FLUSH_GLOBAL	(1ull << 38)
static bool dev_flush;
#define FLAGS_KNOWN	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | \
			 IBV_SEND_SOLICITED | IBV_SEND_INLINE)

enum kind { K_RC, K_UC, K_UD, K_NR };
static const char *const kind_name[K_NR] = { "RC", "UC", "UD" };

struct fz {
	struct vroce_dev dev;	/* its PD, buffer and MR unused */
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *rw, *ro, *other;
	uint32_t stale_lkey, stale_rkey;
	struct ibv_ah *ah;
	uint8_t *buf, *shadow;
	uint32_t seed;
};

/* The QPs and CQs of one case. */
struct pair {
	struct ibv_cq *acq, *bcq;
	struct ibv_qp *a, *b;
	uint32_t max_sge, max_inline;
};

/* What one case did, and what the contract then allows. */
struct verdict {
	char what[512];
	size_t len;
	bool rule_bad;		/* must complete with LOC_QP_OP_ERR */
	bool key_bad;		/* must not complete successfully */
	bool index_moved;	/* the producer index moved: any outcome */
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	return vroce_rnd(&rng_state);
}

static uint32_t pick(const uint32_t *v, size_t n)
{
	return v[rnd() % n];
}

#define PICK(...) ({ const uint32_t _v[] = { __VA_ARGS__ };		\
		     pick(_v, ARRAY_SIZE(_v)); })

static void note(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->len >= sizeof(v->what) - 1)
		return;
	va_start(ap, fmt);
	v->len += vsnprintf(v->what + v->len, sizeof(v->what) - v->len,
			    fmt, ap);
	va_end(ap);
	if (v->len > sizeof(v->what) - 1)
		v->len = sizeof(v->what) - 1;
}

static uint8_t guard_byte(uint32_t seed, uint32_t i)
{
	return (uint8_t)(i * 7 + (i >> 11) + seed);
}

/* The opcodes a user QP of @k may post (qp_post.c, vroce_wr_opcode_ok()). */
static bool opcode_ok(enum kind k, uint32_t op)
{
	switch (op) {
	case OP_SEND:
	case OP_SEND_IMM:
		return true;
	case OP_WRITE:
	case OP_WRITE_IMM:
	case OP_LOCAL_INV:
	case OP_BIND_MW:
		return k != K_UD;
	case OP_READ:
	case OP_CAS:
	case OP_FAA:
	case OP_SEND_INV:
	case OP_ATOMIC_WRITE:
		return k == K_RC;
	case OP_FLUSH:
		return k == K_RC && dev_flush;
	default:
		return false;
	}
}

static bool inline_ok(uint32_t op)
{
	return op == OP_SEND || op == OP_SEND_IMM || op == OP_SEND_INV ||
	       op == OP_WRITE || op == OP_WRITE_IMM || op == OP_ATOMIC_WRITE;
}

static bool has_sges(uint32_t op, uint32_t flags)
{
	switch (op) {
	case OP_READ:
	case OP_CAS:
	case OP_FAA:
		return true;
	case OP_SEND:
	case OP_SEND_IMM:
	case OP_SEND_INV:
	case OP_WRITE:
	case OP_WRITE_IMM:
		return !(flags & IBV_SEND_INLINE);
	default:
		return false;
	}
}

static bool writes_locally(uint32_t op)
{
	return op == OP_READ || op == OP_CAS || op == OP_FAA;
}

static bool is_remote(uint32_t op)
{
	return op == OP_WRITE || op == OP_WRITE_IMM || op == OP_READ ||
	       op == OP_CAS || op == OP_FAA || op == OP_ATOMIC_WRITE;
}

/* Does the contract reject this header (see the top of the file)? */
static bool header_bad(enum kind k, const struct pair *p,
		       const struct rxe_send_wqe *w)
{
	uint32_t op = w->wr.opcode, fl = w->wr.send_flags;
	bool inl = fl & IBV_SEND_INLINE;

	if (!opcode_ok(k, op) || (fl & ~FLAGS_KNOWN))
		return true;
	if (inl && !inline_ok(op))
		return true;
	if (inl && op != OP_ATOMIC_WRITE && w->dma.length > p->max_inline)
		return true;
	if (has_sges(op, fl) && w->dma.num_sge > p->max_sge)
		return true;
	return w->dma.length > MSG_MAX;
}

/* Is the first byte at @addr, through @lkey, one the WQE may use? */
static bool local_ok(const struct fz *f, uint32_t lkey, uint64_t addr,
		     bool write)
{
	uint64_t rw = (uintptr_t)f->buf + RW_OFF, ro = (uintptr_t)f->buf + RO_OFF;

	if (lkey == f->rw->lkey)
		return addr >= rw && addr < rw + MR_LEN;
	if (lkey == f->ro->lkey)
		return !write && addr >= ro && addr < ro + MR_LEN;
	return false;
}

static bool remote_ok(const struct fz *f, uint32_t op, uint32_t rkey,
		      uint64_t addr)
{
	uint64_t rw = (uintptr_t)f->buf + RW_OFF;

	if (rkey != f->rw->rkey || addr < rw || addr >= rw + MR_LEN)
		return false;
	return (op != OP_CAS && op != OP_FAA) || !(addr & 7);
}

/* An address: in an MR, at its edges, in memory no MR covers, or wild. */
static uint64_t any_addr(const struct fz *f)
{
	uint64_t b = (uintptr_t)f->buf;

	switch (rnd() % 8) {
	case 0: return b + RW_OFF + rnd() % MR_LEN;
	case 1: return b + RW_OFF - 1;
	case 2: return b + RW_OFF + MR_LEN - 1 - rnd() % 16;
	case 3: return b + RO_OFF + rnd() % MR_LEN;
	case 4: return b + rnd() % BUF_SIZE;
	case 5: return PICK(0, 1, 0xffffffff);
	case 6: return ~0ull - rnd() % 4096;
	default: return rnd();
	}
}

/* A key: of an MR (read-write, read-only, other PD, deregistered) or not. */
static uint32_t any_key(const struct fz *f, bool remote)
{
	switch (rnd() % 6) {
	case 0: return remote ? f->rw->rkey : f->rw->lkey;
	case 1: return remote ? f->ro->rkey : f->ro->lkey;
	case 2: return remote ? f->other->rkey : f->other->lkey;
	case 3: return remote ? f->stale_rkey : f->stale_lkey;
	case 4: return 0;
	default: return (uint32_t)rnd();
	}
}

static uint32_t any_len(void)
{
	return PICK(0, 1, 7, 8, 63, 64, 65, 4096, 65536, MR_LEN, MR_LEN + 1,
		    0x7fffffff, MSG_MAX, MSG_MAX + 1, 0xffffffff,
		    (uint32_t)rnd());
}

/* One random change to the send WQE @w (@esize bytes), noted in @v. */
static void mutate_send(const struct fz *f, enum kind k,
			struct rxe_send_wqe *w, size_t esize, struct verdict *v)
{
	size_t room = (esize - offsetof(struct rxe_send_wqe, dma.sge)) /
		      sizeof(struct rxe_sge);
	struct rxe_sge *sge;
	uint32_t i;

	switch (rnd() % 10) {
	case 0:
		w->wr.opcode = PICK(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				    13, 14, 15, 16, 63, 64, 255, 0x80000000,
				    0xffffffff, (uint32_t)rnd());
		note(v, " opcode=%u", w->wr.opcode);
		break;
	case 1:
		w->wr.send_flags ^= 1u << (rnd() % 32);
		note(v, " send_flags=%#x", w->wr.send_flags);
		break;
	case 2:
		w->wr.send_flags ^= IBV_SEND_INLINE;
		note(v, " send_flags=%#x", w->wr.send_flags);
		break;
	case 3:
		w->dma.num_sge = PICK(0, 1, 2, 3, 4, 5, 8, 255, 256, 0x10000,
				      0x7fffffff, 0x80000000, 0xffffffff,
				      (uint32_t)rnd());
		note(v, " num_sge=%u", w->dma.num_sge);
		break;
	case 4:
		w->dma.length = any_len();
		note(v, " length=%u", w->dma.length);
		break;
	case 5:
	case 6:
		i = rnd() % (room < MAX_SGE ? room : MAX_SGE);
		sge = &w->dma.sge[i];
		switch (rnd() % 3) {
		case 0:
			sge->lkey = any_key(f, false);
			break;
		case 1:
			sge->addr = any_addr(f);
			break;
		default:
			sge->length = any_len();
			break;
		}
		note(v, " sge[%u]={%#llx,%u,%#x}", i,
		     (unsigned long long)sge->addr, sge->length, sge->lkey);
		break;
	case 7:
		if (k == K_UD) {
			w->wr.wr.ud.ah_num = PICK(0, 2, 0xffffffff,
						  (uint32_t)rnd());
			note(v, " ah_num=%u", w->wr.wr.ud.ah_num);
			break;
		}
		w->wr.wr.rdma.rkey = any_key(f, true);
		note(v, " rkey=%#x", w->wr.wr.rdma.rkey);
		break;
	case 8:
		if (k == K_UD) {
			w->wr.wr.ud.remote_qpn = (uint32_t)rnd();
			w->wr.wr.ud.remote_qkey = (uint32_t)rnd();
			note(v, " remote_qpn=%#x", w->wr.wr.ud.remote_qpn);
			break;
		}
		w->wr.wr.rdma.remote_addr = any_addr(f);
		note(v, " remote_addr=%#llx",
		     (unsigned long long)w->wr.wr.rdma.remote_addr);
		break;
	default:
		/* Anything past the wr_id. */
		i = sizeof(w->wr.wr_id) + rnd() % (esize - sizeof(w->wr.wr_id));
		((uint8_t *)w)[i] = (uint8_t)rnd();
		note(v, " byte[%u]=%#x", i, ((uint8_t *)w)[i]);
		break;
	}
}

/*
 * What the rewritten WQE @w may complete with: rule_bad and key_bad in
 * @v, from a snapshot of @w taken after the rewrite. @base_ah is the AH
 * number the provider wrote.
 */
static void judge(const struct fz *f, enum kind k, const struct pair *p,
		  const struct rxe_send_wqe *w, uint32_t base_ah,
		  struct verdict *v)
{
	uint32_t op = w->wr.opcode;

	v->rule_bad = header_bad(k, p, w);
	if (v->rule_bad)
		return;
	/* The first SGE is used first, if the message has a byte. */
	if (has_sges(op, w->wr.send_flags) && w->dma.num_sge &&
	    w->dma.length && w->dma.sge[0].length &&
	    !local_ok(f, w->dma.sge[0].lkey, w->dma.sge[0].addr,
		      writes_locally(op)))
		v->key_bad = true;
	if (k == K_RC && is_remote(op) && w->dma.length &&
	    !remote_ok(f, op, op == OP_CAS || op == OP_FAA ?
			      w->wr.wr.atomic.rkey : w->wr.wr.rdma.rkey,
		       op == OP_CAS || op == OP_FAA ?
			      w->wr.wr.atomic.remote_addr :
			      w->wr.wr.rdma.remote_addr))
		v->key_bad = true;
	if (k == K_UD && w->wr.wr.ud.ah_num && w->wr.wr.ud.ah_num != base_ah)
		v->key_bad = true;
}

static struct ibv_qp *qp_create(struct fz *f, enum kind k, struct ibv_cq *cq,
				unsigned int depth, struct pair *p)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq,
		.qp_type = k == K_RC ? IBV_QPT_RC :
			   k == K_UC ? IBV_QPT_UC : IBV_QPT_UD,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
			 .max_inline_data = MAX_INLINE },
		.sq_sig_all = 1,
	};
	struct ibv_qp *qp = ibv_create_qp(f->pd, &init);

	if (qp) {
		p->max_sge = init.cap.max_send_sge;
		p->max_inline = init.cap.max_inline_data;
	}
	return qp;
}

#define UD_QKEY 0x11111111

/* RTR -> RTS of an RC QP: PSN 0 and the usual timers (vroce_test.h). */
static const struct vroce_rc_path rc_timers = { VROCE_RC_DEFAULTS };

static struct vroce_rc_path path_to(const struct fz *f, struct ibv_qp *peer)
{
	struct vroce_rc_path p = {
		VROCE_RC_DEFAULTS,
		.dest_qpn = peer->qp_num, .dgid = f->dev.gid,
		.sgid_idx = f->dev.gid_idx, .mtu = f->dev.mtu,
	};

	return p;
}

/* b to RTS, a to RTR. */
static int pair_up(const struct fz *f, enum kind k, struct pair *p)
{
	struct vroce_rc_path pa = path_to(f, p->b), pb = path_to(f, p->a);

	switch (k) {
	case K_RC:
		return vroce_rc_connect(p->b, &pb) || vroce_rc_init(p->a, &pa) ||
		       vroce_rc_rtr(p->a, &pa);
	case K_UC:
		pa.access = IBV_ACCESS_REMOTE_WRITE;
		pb.access = IBV_ACCESS_REMOTE_WRITE;
		return vroce_uc_connect(p->b, &pb) || vroce_rc_init(p->a, &pa) ||
		       vroce_uc_rtr(p->a, &pa);
	default:
		return vroce_ud_connect(p->b, UD_QKEY, 0) ||
		       vroce_ud_rtr(p->a, UD_QKEY);
	}
}

/* Two QPs of @depth WQEs each way, b to RTS and a to RTR. */
static int pair_open(struct fz *f, enum kind k, struct pair *p,
		     unsigned int depth)
{
	struct pair unused;

	memset(p, 0, sizeof(*p));
	p->acq = ibv_create_cq(f->dev.ctx, 4 * depth, NULL, NULL, 0);
	p->bcq = ibv_create_cq(f->dev.ctx, 4 * depth, NULL, NULL, 0);
	if (!p->acq || !p->bcq)
		return -1;
	p->a = qp_create(f, k, p->acq, depth, p);
	p->b = qp_create(f, k, p->bcq, depth, &unused);
	if (!p->a || !p->b)
		return -1;
	return pair_up(f, k, p);
}

/* 0, or the first errno of the destroy verbs (each must return). */
static int pair_close(struct pair *p)
{
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	int ret = 0;

	if (p->a)
		ibv_modify_qp(p->a, &err, IBV_QP_STATE);
	if (p->b)
		ibv_modify_qp(p->b, &err, IBV_QP_STATE);
	if (p->a && ibv_destroy_qp(p->a))
		ret = ret ?: errno;
	if (p->b && ibv_destroy_qp(p->b))
		ret = ret ?: errno;
	if (p->acq && ibv_destroy_cq(p->acq))
		ret = ret ?: errno;
	if (p->bcq && ibv_destroy_cq(p->bcq))
		ret = ret ?: errno;
	memset(p, 0, sizeof(*p));
	return ret;
}

static uint64_t rw_addr(const struct fz *f, uint32_t off)
{
	return (uintptr_t)f->buf + RW_OFF + off;
}

/* @n receives of 4 KiB each into the first 1/2 MiB of the RW MR. */
static int post_recvs(const struct fz *f, struct pair *p, uint64_t wr_id,
		      unsigned int n)
{
	struct ibv_recv_wr wr = { .num_sge = 1 }, *bad;
	struct ibv_sge sge = { .length = 4096, .lkey = f->rw->lkey };
	unsigned int i;

	wr.sg_list = &sge;
	for (i = 0; i < n; i++) {
		wr.wr_id = wr_id + i;
		sge.addr = rw_addr(f, (i % 64) * 8192);
		if (ibv_post_recv(p->b, &wr, &bad))
			return -1;
	}
	return 0;
}

/* A well-formed WR for a, its SGEs in @sge (MAX_SGE of them). */
static void base_wr(const struct fz *f, enum kind k, const struct pair *p,
		    struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	static const uint32_t ops[K_NR][7] = {
		[K_RC] = { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM,
			   OP_READ, OP_CAS, OP_FAA },
		[K_UC] = { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM },
		[K_UD] = { OP_SEND, OP_SEND_IMM },
	};
	static const uint32_t nops[K_NR] = { 7, 4, 2 };
	uint32_t op = ops[k][rnd() % nops[k]], total = 0, i;
	bool atomic = op == OP_CAS || op == OP_FAA;

	wr->sg_list = sge;
	wr->next = NULL;
	wr->opcode = (enum ibv_wr_opcode)op;
	wr->num_sge = atomic ? 1 : 1 + rnd() % (p->max_sge < MAX_SGE ?
						  p->max_sge : MAX_SGE);
	for (i = 0; i < (uint32_t)wr->num_sge; i++) {
		sge[i].addr = rw_addr(f, 65536 + (rnd() % 4096) * 64);
		sge[i].length = atomic ? 8 : 1 + rnd() % (k == K_UD ? 64 : 2048);
		sge[i].lkey = f->rw->lkey;
		total += sge[i].length;
	}
	wr->send_flags = IBV_SEND_SIGNALED;
	if (!atomic && op != OP_READ && total <= p->max_inline && rnd() % 2)
		wr->send_flags |= IBV_SEND_INLINE;
	wr->imm_data = (uint32_t)rnd();
	if (atomic) {
		wr->wr.atomic.remote_addr = rw_addr(f, MR_LEN / 2 +
						    (rnd() % 4096) * 8);
		wr->wr.atomic.rkey = f->rw->rkey;
		wr->wr.atomic.compare_add = rnd();
		wr->wr.atomic.swap = rnd();
	} else if (k == K_UD) {
		wr->wr.ud.ah = f->ah;
		wr->wr.ud.remote_qpn = p->b->qp_num;
		wr->wr.ud.remote_qkey = UD_QKEY;
	} else {
		wr->wr.rdma.remote_addr = rw_addr(f, MR_LEN / 2 +
						  rnd() % (MR_LEN / 4));
		wr->wr.rdma.rkey = f->rw->rkey;
	}
}

/*
 * A well-formed WQE on a, posted in RTR: the provider writes it into the
 * ring and the refused doorbell leaves it there.
 */
static void post_base(const struct fz *f, enum kind k, struct pair *p,
		      uint64_t wr_id)
{
	struct ibv_sge sge[MAX_SGE];
	struct ibv_send_wr wr = { .wr_id = wr_id }, *bad;

	base_wr(f, k, p, &wr, sge);
	ibv_post_send(p->a, &wr, &bad);
}

/* One random change to b's first receive WQE, if it is found. */
static void mutate_recv(const struct fz *f, uint64_t wr_id, struct verdict *v)
{
	struct rxe_queue_buf *q;
	struct rxe_recv_wqe *w = vroce_ring_find(wr_id, sizeof(*w),
						 sizeof(struct rxe_send_wqe) - 1,
						 &q);

	if (!w)
		w = vroce_ring_find(wr_id, sizeof(*w), SIZE_MAX, &q);
	if (!w)
		return;
	switch (rnd() % 4) {
	case 0:
		w->dma.num_sge = PICK(0, 5, 255, 0x80000000, 0xffffffff);
		break;
	case 1:
		w->dma.length = any_len();
		break;
	case 2:
		w->dma.sge[0].lkey = any_key(f, false);
		break;
	default:
		w->dma.sge[0].addr = any_addr(f);
		w->dma.sge[0].length = any_len();
		break;
	}
	note(v, " recv={num_sge=%u,length=%u,sge0={%#llx,%u,%#x}}",
	     w->dma.num_sge, w->dma.length,
	     (unsigned long long)w->dma.sge[0].addr, w->dma.sge[0].length,
	     w->dma.sge[0].lkey);
}

/* Move the SQ's producer index somewhere a well-behaved one never goes. */
static void move_index(struct rxe_queue_buf *q, struct verdict *v)
{
	uint32_t prod = __atomic_load_n(&q->producer_index, __ATOMIC_RELAXED);
	uint32_t to;

	switch (rnd() % 4) {
	case 0:
		to = prod - 1;
		break;
	case 1:
		to = prod + 1 + rnd() % (q->index_mask + 3);
		break;
	case 2:
		to = (prod + 1 + rnd() % (q->index_mask + 3)) & q->index_mask;
		break;
	default:
		to = (uint32_t)rnd();
		break;
	}
	__atomic_store_n(&q->producer_index, to, __ATOMIC_RELEASE);
	v->index_moved = true;
	note(v, " producer %u->%u", prod, to);
}

/* A valid WRITE (RC, UC) or SEND (UD) after the fuzzed WQE: a doorbell. */
static void post_follower(const struct fz *f, enum kind k, struct pair *p,
			  uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = rw_addr(f, 65536), .length = 32,
			       .lkey = f->rw->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (k == K_UD) {
		wr.opcode = IBV_WR_SEND;
		wr.wr.ud.ah = f->ah;
		wr.wr.ud.remote_qpn = p->b->qp_num;
		wr.wr.ud.remote_qkey = UD_QKEY;
	} else {
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = rw_addr(f, MR_LEN - 4096);
		wr.wr.rdma.rkey = f->rw->rkey;
	}
	ibv_post_send(p->a, &wr, &bad);
}

/* Wait for @wr_id's completion on @cq; 1 with it in @wc, 0 if none came. */
static int wait_for(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *wc,
		    double timeout_s)
{
	double end = vroce_now_s() + timeout_s;

	while (vroce_poll_one(cq, wc, end - vroce_now_s()) == 1)
		if (wc->wr_id == wr_id)
			return 1;
	return 0;
}

/* Memory that no MR lets anything write, as it was; restored if not. */
static bool guards_intact(struct fz *f, struct verdict *v)
{
	static const uint32_t off[] = { 0, RO_OFF };
	static const uint32_t len[] = { RW_OFF, BUF_SIZE - RO_OFF };
	bool ok = true;
	int i;

	for (i = 0; i < 2; i++) {
		if (!memcmp(f->buf + off[i], f->shadow + off[i], len[i]))
			continue;
		note(v, "; bytes at +%#x..+%#x changed", off[i],
		     off[i] + len[i]);
		memcpy(f->buf + off[i], f->shadow + off[i], len[i]);
		ok = false;
	}
	return ok;
}

struct tally {
	unsigned int cases, bad;	/* cases (rounds) and broken ones */
	unsigned int wqes, rewritten;	/* rounds: WQEs, and rewritten ones */
	unsigned int status[IBV_WC_GENERAL_ERR + 2];
};

/* One case: 0 if everything held, -1 if not (reported with its index). */
static int one_case(struct fz *f, uint32_t it, struct tally *t)
{
	uint64_t base = MAGIC | ((uint64_t)it << 8), follow = base | 1;
	struct verdict v = {};
	struct rxe_queue_buf *q;
	struct rxe_send_wqe *w;
	struct pair p;
	struct ibv_wc wc = {};
	enum kind k;
	size_t esize;
	uint32_t base_ah = 0;
	int n, ret, failed = 0;

	rng_state = ((uint64_t)f->seed << 32) ^ it;
	k = rnd() % K_NR;
	t[k].cases++;
	if (pair_open(f, k, &p, DEPTH) ||
	    post_recvs(f, &p, base | 0x80, DEPTH)) {
		note(&v, " setup failed: %s", strerror(errno));
		failed = 1;
		goto out;
	}
	post_base(f, k, &p, base);
	w = vroce_sq_find(base, &esize, &q);
	if (!w) {
		note(&v, " the WQE is in no mapped ring");
		failed = 1;
		goto out;
	}
	base_ah = w->wr.wr.ud.ah_num;
	note(&v, " %s op %u:", kind_name[k], w->wr.opcode);
	for (n = 1 + rnd() % 3; n > 0; n--)
		mutate_send(f, k, w, esize, &v);
	judge(f, k, &p, w, base_ah, &v);
	if (rnd() % 4 == 0)
		mutate_recv(f, base | 0x80, &v);
	if (rnd() % 8 == 0)
		move_index(q, &v);

	ret = k == K_RC ? vroce_rc_rts(p.a, &rc_timers) :
			    vroce_sq_rts(p.a, 0);
	if (ret) {
		note(&v, "; RTR->RTS failed: %s", strerror(ret));
		failed = 1;
		goto out;
	}
	if (v.index_moved) {
		/* Whatever the ring held then: only a bounded teardown. */
		while (vroce_poll_one(p.acq, &wc, 1) == 1)
			;
		goto out;
	}
	post_follower(f, k, &p, follow);
	if (!wait_for(p.acq, base, &wc, HANG_S)) {
		note(&v, "; no completion within %d s", HANG_S);
		failed = 1;
		goto out;
	}
	t[k].status[wc.status <= IBV_WC_GENERAL_ERR ? wc.status :
		    IBV_WC_GENERAL_ERR + 1]++;
	if (v.rule_bad && wc.status != IBV_WC_LOC_QP_OP_ERR) {
		note(&v, "; completed %s, not local QP operation error",
		     ibv_wc_status_str(wc.status));
		failed = 1;
	} else if (v.key_bad && wc.status == IBV_WC_SUCCESS) {
		note(&v, "; completed successfully with a bad key or address");
		failed = 1;
	}
	if (!wait_for(p.acq, follow, &wc, HANG_S)) {
		note(&v, "; the doorbell's WQE did not complete within %d s",
		     HANG_S);
		failed = 1;
	} else if (wc.status != IBV_WC_SUCCESS &&
		   wc.status != IBV_WC_WR_FLUSH_ERR) {
		note(&v, "; the doorbell's valid WQE completed %s",
		     ibv_wc_status_str(wc.status));
		failed = 1;
	}
out:
	ret = pair_close(&p);
	if (ret) {
		note(&v, "; destroy failed: %s", strerror(ret));
		failed = 1;
	}
	if (!guards_intact(f, &v))
		failed = 1;
	if (failed) {
		t[k].bad++;
		ksft_print_msg("case %u (--seed %u --only %u):%s\n", it,
			       f->seed, it, v.what);
	}
	return failed ? -1 : 0;
}

/* ------------------------------------------------------------ rounds */

/* The WQE of @wr_id in ring @q (elements of @esize bytes), or NULL. */
static struct rxe_send_wqe *ring_wqe(struct rxe_queue_buf *q, size_t esize,
				     uint64_t wr_id)
{
	uint32_t i;

	for (i = 0; i <= q->index_mask; i++)
		if (*(uint64_t *)(q->data + i * esize) == wr_id)
			return (struct rxe_send_wqe *)(q->data + i * esize);
	return NULL;
}

/* Both QPs of @p back to RESET, then up again with @n receives on b. */
static int round_reset(struct fz *f, enum kind k, struct pair *p,
		       uint64_t recv_id, unsigned int n)
{
	struct ibv_qp_attr rst = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc[16];

	if (ibv_modify_qp(p->a, &rst, IBV_QP_STATE) ||
	    ibv_modify_qp(p->b, &rst, IBV_QP_STATE))
		return -1;
	while (ibv_poll_cq(p->acq, 16, wc) > 0)
		;
	while (ibv_poll_cq(p->bcq, 16, wc) > 0)
		;
	return pair_up(f, k, p) || post_recvs(f, p, recv_id, n);
}

/*
 * @m well-formed WQEs on a, posted in RTR as one list, then every one
 * after the first 0 to 7 rewritten (counted in @t); each one's verdict in
 * @v. 0, or -1 with the reason in @v[0].
 */
static int round_fill(struct fz *f, enum kind k, struct pair *p,
		      uint64_t base, unsigned int m, struct verdict *v,
		      struct tally *t)
{
	static struct ibv_send_wr wr[ROUND_MAX];
	static struct ibv_sge sge[ROUND_MAX][MAX_SGE];
	struct ibv_send_wr *bad;
	struct rxe_queue_buf *q;
	struct rxe_send_wqe *w;
	size_t esize = 0;
	unsigned int j, lead = rnd() % 8;
	uint32_t ah, n;

	for (j = 0; j < m; j++) {
		memset(&wr[j], 0, sizeof(wr[j]));
		wr[j].wr_id = base + j;
		base_wr(f, k, p, &wr[j], sge[j]);
		wr[j].next = j + 1 < m ? &wr[j + 1] : NULL;
	}
	ibv_post_send(p->a, wr, &bad);
	for (j = 0; j < m; j++) {
		w = j ? ring_wqe(q, esize, base + j) :
			vroce_sq_find(base, &esize, &q);
		if (!w) {
			note(&v[0], " WQE %u is in no mapped ring", j);
			return -1;
		}
		ah = w->wr.wr.ud.ah_num;
		note(&v[j], " WQE %u %s op %u:", j, kind_name[k],
		     w->wr.opcode);
		if (j >= lead) {
			for (n = 1 + rnd() % 3; n > 0; n--)
				mutate_send(f, k, w, esize, &v[j]);
			t->rewritten++;
		}
		judge(f, k, p, w, ah, &v[j]);
	}
	return 0;
}

/*
 * The completions of WQEs @base.. @base + @m - 1, in order: each as its
 * verdict allows, and none successful after an error (the QP is in ERR
 * then). -1 if all held, else the index of the first WQE that did not
 * (the reason in its @v).
 */
static int round_check(struct pair *p, uint64_t base, unsigned int m,
		       struct verdict *v, struct tally *t)
{
	bool err = false;
	struct ibv_wc wc;
	unsigned int j;

	for (j = 0; j < m; j++) {
		if (vroce_poll_one(p->acq, &wc, HANG_S) != 1) {
			note(&v[j], "; no completion within %d s", HANG_S);
			return j;
		}
		if (wc.wr_id != base + j) {
			note(&v[j], "; completion of wr_id %#llx in its place",
			     (unsigned long long)wc.wr_id);
			return j;
		}
		t->status[wc.status <= IBV_WC_GENERAL_ERR ? wc.status :
			  IBV_WC_GENERAL_ERR + 1]++;
		if (!err && v[j].rule_bad &&
		    wc.status != IBV_WC_LOC_QP_OP_ERR) {
			note(&v[j], "; completed %s, not local QP operation error",
			     ibv_wc_status_str(wc.status));
			return j;
		}
		if ((err || v[j].key_bad) && wc.status == IBV_WC_SUCCESS) {
			note(&v[j], err ? "; completed successfully after an error" :
			     "; completed successfully with a bad key or address");
			return j;
		}
		err |= wc.status != IBV_WC_SUCCESS;
	}
	return -1;
}

/*
 * One round on the pair @pp[k] (k drawn from the round's generator): up
 * from RESET, @m WQEs, most of them rewritten, then RTS, when the kernel
 * reads them all. Round @r draws from (seed, r) alone. 0 if
 * everything held; -1 if not, and the pair is made anew.
 */
static int one_round(struct fz *f, struct pair *pp, uint32_t r,
		     unsigned int m, struct tally *t)
{
	static struct verdict v[ROUND_MAX];
	uint64_t base = RMAGIC | ((uint64_t)r << 16);
	struct pair *p;
	int bad = -1, ret;
	enum kind k;

	rng_state = ((uint64_t)f->seed << 32) ^ RMAGIC ^ r;
	k = rnd() % K_NR;
	p = &pp[k];
	memset(v, 0, m * sizeof(*v));
	t[k].cases++;
	t[k].wqes += m;
	if (round_reset(f, k, p, base | 0x8000, m)) {
		note(&v[0], " %s: up from RESET failed: %s", kind_name[k],
		     strerror(errno));
		bad = 0;
		goto out;
	}
	if (round_fill(f, k, p, base, m, v, &t[k])) {
		bad = 0;
		goto out;
	}
	if (rnd() % 4 == 0)
		mutate_recv(f, base | 0x8000, &v[0]);
	ret = k == K_RC ? vroce_rc_rts(p->a, &rc_timers) : vroce_sq_rts(p->a, 0);
	if (ret) {
		note(&v[0], "; RTR->RTS failed: %s", strerror(ret));
		bad = 0;
		goto out;
	}
	bad = round_check(p, base, m, v, &t[k]);
out:
	if (!guards_intact(f, &v[bad < 0 ? 0 : bad]) && bad < 0)
		bad = 0;
	if (bad < 0)
		return 0;
	t[k].bad++;
	ksft_print_msg("round %u (--seed %u --round %u):%s%s\n", r, f->seed,
		       r, bad ? v[0].what : "", v[bad].what);
	if (pair_close(p) || pair_open(f, k, p, ROUND_MAX))
		ksft_exit_fail_msg("cannot make the %s pair anew: %s\n",
				   kind_name[k], strerror(errno));
	return -1;
}

static int fz_open(struct fz *f)
{
	const char *name = getenv("VROCE_DEV");
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1 };
	struct ibv_device_attr_ex dattr;
	struct ibv_mr *stale;
	uint32_t i;

	if (vroce_dev_open(&f->dev, name, "VROCE_GID"))
		return -1;
	if (!ibv_query_device_ex(f->dev.ctx, NULL, &dattr))
		dev_flush = dattr.device_cap_flags_ex & DEVICE_FLUSH_GLOBAL;
	f->pd = ibv_alloc_pd(f->dev.ctx);
	f->pd2 = ibv_alloc_pd(f->dev.ctx);
	f->buf = aligned_alloc(4096, BUF_SIZE);
	f->shadow = malloc(BUF_SIZE);
	if (!f->pd || !f->pd2 || !f->buf || !f->shadow)
		return -1;
	for (i = 0; i < BUF_SIZE; i++)
		f->buf[i] = guard_byte(f->seed, i);
	memcpy(f->shadow, f->buf, BUF_SIZE);
	f->rw = ibv_reg_mr(f->pd, f->buf + RW_OFF, MR_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	f->ro = ibv_reg_mr(f->pd, f->buf + RO_OFF, MR_LEN, 0);
	f->other = ibv_reg_mr(f->pd2, f->buf + RW_OFF, MR_LEN,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	stale = ibv_reg_mr(f->pd, f->buf + RW_OFF, MR_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!f->rw || !f->ro || !f->other || !stale)
		return -1;
	f->stale_lkey = stale->lkey;
	f->stale_rkey = stale->rkey;
	if (ibv_dereg_mr(stale))
		return -1;
	ah.grh.dgid = f->dev.gid;
	ah.grh.sgid_index = f->dev.gid_idx;
	ah.grh.hop_limit = 64;
	f->ah = ibv_create_ah(f->pd, &ah);
	return f->ah ? 0 : -1;
}

/* After the fuzzing, a clean 64 KiB RC WRITE moves its bytes exactly. */
static bool clean_write(struct fz *f)
{
	struct ibv_sge sge = { .addr = rw_addr(f, 0), .length = 65536,
			       .lkey = f->rw->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = rw_addr(f, MR_LEN / 2),
			     .rkey = f->rw->rkey },
	}, *bad;
	struct ibv_wc wc;
	struct pair p;
	bool ok;
	uint32_t i;

	for (i = 0; i < 65536; i++)
		f->buf[RW_OFF + i] = (uint8_t)(i * 13 + 1);
	ok = !pair_open(f, K_RC, &p, DEPTH) && !vroce_rc_rts(p.a, &rc_timers) &&
	     !ibv_post_send(p.a, &wr, &bad) &&
	     wait_for(p.acq, 7, &wc, HANG_S) && wc.status == IBV_WC_SUCCESS &&
	     !memcmp(f->buf + RW_OFF, f->buf + RW_OFF + MR_LEN / 2, 65536);
	return !pair_close(&p) && ok;
}

static void print_usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--seed N] [--iterations N] [--only I] [--wqes N] [--batch M] [--round R]\n",
		argv0);
	exit(KSFT_FAIL);
}

static void print_tally(const char *what, const struct tally *t, bool rounds)
{
	int i, s;

	for (i = 0; i < K_NR; i++) {
		if (rounds)
			ksft_print_msg("%s: %u WQEs (%u rewritten) in %u rounds; completions:",
				       kind_name[i], t[i].wqes, t[i].rewritten,
				       t[i].cases);
		else
			ksft_print_msg("%s: %u cases; completions:",
				       kind_name[i], t[i].cases);
		for (s = 0; s <= IBV_WC_GENERAL_ERR + 1; s++)
			if (t[i].status[s])
				printf(" %s %u", s > IBV_WC_GENERAL_ERR ? "other" :
				       ibv_wc_status_str(s), t[i].status[s]);
		printf("\n");
		ksft_test_result(!t[i].bad,
				 "%s %s: %u of %u %s broke the contract\n",
				 kind_name[i], what, t[i].bad, t[i].cases,
				 rounds ? "rounds" : "cases");
	}
}

/* Rounds @first..@last - 1 of @m WQEs each, on one pair of each kind. */
static void run_rounds(struct fz *f, uint32_t first, uint32_t last,
		       unsigned int m, struct tally *t)
{
	struct pair pp[K_NR];
	uint32_t r;
	int k;

	for (k = 0; k < K_NR; k++)
		if (pair_open(f, k, &pp[k], ROUND_MAX))
			ksft_exit_fail_msg("cannot open the %s pair: %s\n",
					   kind_name[k], strerror(errno));
	ksft_print_msg("seed %u, rounds %u..%u of %u WQEs\n", f->seed, first,
		       last - 1, m);
	for (r = first; r < last; r++)
		one_round(f, pp, r, m, t);
	for (k = 0; k < K_NR; k++)
		if (pair_close(&pp[k]))
			ksft_exit_fail_msg("cannot close the %s pair: %s\n",
					   kind_name[k], strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "only", required_argument, NULL, 'o' },
		{ "wqes", required_argument, NULL, 'w' },
		{ "batch", required_argument, NULL, 'b' },
		{ "round", required_argument, NULL, 'r' },
		{}
	};
	struct tally t[K_NR] = {}, tr[K_NR] = {};
	struct fz f = {};
	long only = -1, round = -1, iters = 300, wqes = 0, batch = ROUND_MAX;
	uint32_t it, first, last;
	int c;

	f.seed = (uint32_t)(vroce_now_s() * 1e6) ^ (uint32_t)getpid();
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			f.seed = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			iters = strtol(optarg, NULL, 0);
			break;
		case 'o':
			only = strtol(optarg, NULL, 0);
			break;
		case 'w':
			wqes = strtol(optarg, NULL, 0);
			break;
		case 'b':
			batch = strtol(optarg, NULL, 0);
			break;
		case 'r':
			round = strtol(optarg, NULL, 0);
			break;
		default:
			print_usage(argv[0]);
		}
	}
	if (batch < 1 || batch > ROUND_MAX || wqes < 0 || iters < 0)
		print_usage(argv[0]);
	/* A replay runs the one case or round it names. */
	if (only >= 0)
		wqes = 0;
	if (round >= 0)
		iters = 0;
	ksft_print_header();
	if (!getenv("VROCE_DEV"))
		ksft_exit_skip("VROCE_DEV not set (run ring_fuzz.sh)\n");
	ksft_set_plan((iters || only >= 0 ? K_NR : 0) +
		      (wqes || round >= 0 ? K_NR : 0) + 1);
	if (fz_open(&f))
		ksft_exit_fail_msg("cannot set up %s: %s\n",
				   getenv("VROCE_DEV"), strerror(errno));
	if (iters || only >= 0) {
		first = only >= 0 ? only : 0;
		last = only >= 0 ? only + 1 : iters;
		ksft_print_msg("seed %u, cases %u..%u\n", f.seed, first,
			       last - 1);
		for (it = first; it < last; it++)
			one_case(&f, it, t);
		print_tally("send queue", t, false);
	}
	if (wqes || round >= 0) {
		first = round >= 0 ? round : 0;
		last = round >= 0 ? round + 1 : (wqes + batch - 1) / batch;
		run_rounds(&f, first, last, batch, tr);
		print_tally("rounds", tr, true);
	}
	ksft_test_result(clean_write(&f),
			 "a clean 64 KiB WRITE moves its bytes exactly afterwards\n");
	ksft_finished();
}
