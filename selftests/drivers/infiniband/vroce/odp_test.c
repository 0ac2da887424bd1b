// SPDX-License-Identifier: GPL-2.0
/*
 * On-demand paging (ODP) MRs through libibverbs and the stock rxe
 * provider, on one device in loopback (two RC QPs): the capabilities,
 * the registrations refused, and RDMA WRITE, READ, SEND and atomics into
 * and out of ODP memory the device never touched (so every access
 * faults), byte for byte; the same after MADV_DONTNEED and after the
 * range is unmapped and mapped again (the device must see the new
 * memory, never the old pages); an iova unlike the address; write access
 * to memory mapped read-only (a remote access error); and advise_mr
 * prefetches, written as the ADVISE_MR ioctl, as the rdma-core 44 rxe
 * provider has no ibv_advise_mr. Run by odp.sh, which creates the device
 * and exports VROCE_DEV.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

#define POLL_TIMEOUT_S	60
#define PAGE		4096u
/* Five pages and a bit: messages cross pages and MTUs. */
#define LEN		(5 * PAGE + 123)
#define MAP_LEN		(8 * PAGE)
#define ODP_RW		(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
			 IBV_ACCESS_ON_DEMAND)

FIXTURE(odp) {
	struct vroce_dev dev;
	struct ibv_cq *cq_a;
	struct ibv_cq *cq_b;
	struct ibv_qp *a;	/* the requester */
	struct ibv_qp *b;	/* the responder */
};

static struct ibv_qp *qp_new(struct vroce_dev *d, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};

	return ibv_create_qp(d->pd, &init);
}

static int connect_to(struct vroce_dev *d, struct ibv_qp *qp,
		      struct ibv_qp *peer)
{
	struct vroce_rc_path p = {
		VROCE_RC_DEFAULTS,
		/* As rdma-core's ODP tests: the QPs get the MRs' flags. */
		.access = ODP_RW,
		.dest_qpn = peer->qp_num,
		.dgid = d->gid,
		.sgid_idx = d->gid_idx,
		.mtu = d->mtu,
		.sq_psn = qp->qp_num & 0xffffff,
		.rq_psn = peer->qp_num & 0xffffff,
	};

	return vroce_rc_connect(qp, &p);
}

FIXTURE_SETUP(odp)
{
	const char *name = getenv("VROCE_DEV");

	if (!name)
		SKIP(return, "VROCE_DEV not set (run odp.sh)");
	ASSERT_EQ(0, vroce_dev_open(&self->dev, name, "VROCE_GID"));
	self->dev.pd = ibv_alloc_pd(self->dev.ctx);
	ASSERT_NE(NULL, self->dev.pd);
	self->cq_a = ibv_create_cq(self->dev.ctx, 64, NULL, NULL, 0);
	self->cq_b = ibv_create_cq(self->dev.ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq_a);
	ASSERT_NE(NULL, self->cq_b);
	self->a = qp_new(&self->dev, self->cq_a);
	self->b = qp_new(&self->dev, self->cq_b);
	ASSERT_NE(NULL, self->a);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, connect_to(&self->dev, self->a, self->b));
	ASSERT_EQ(0, connect_to(&self->dev, self->b, self->a));
}

FIXTURE_TEARDOWN(odp)
{
	if (self->a)
		ibv_destroy_qp(self->a);
	if (self->b)
		ibv_destroy_qp(self->b);
	if (self->cq_a)
		ibv_destroy_cq(self->cq_a);
	if (self->cq_b)
		ibv_destroy_cq(self->cq_b);
	vroce_dev_close(&self->dev);
}

/* Fresh anonymous memory nobody touched; NULL on failure. */
static uint8_t *map_fresh(int prot)
{
	void *p = mmap(NULL, MAP_LEN, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	return p == MAP_FAILED ? NULL : p;
}

static void pattern(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 2654435761u) >> 13) ^ seed;
}

/* The first index where @p differs from pattern(@seed), or -1. */
static long pattern_diff(const uint8_t *p, uint32_t len, uint32_t seed)
{
	uint8_t want;
	uint32_t i;

	for (i = 0; i < len; i++) {
		want = (uint8_t)((i * 2654435761u) >> 13) ^ seed;
		if (p[i] != want)
			return i;
	}
	return -1;
}

static long zero_diff(const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return i;
	return -1;
}

/* Post one RDMA or atomic WR on @qp; 0 or an errno. */
static int post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op,
		     struct ibv_mr *mr, void *addr, uint32_t len,
		     uint64_t raddr, uint32_t rkey, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/* RDMA WRITE or READ of @len bytes, and its successful completion. */
#define RDMA_OK(op, wc_op, mr, addr, len, raddr, rkey)			\
	do {								\
		ASSERT_EQ(0, post_rdma(self->a, op, mr, addr, len,	\
				       raddr, rkey, __LINE__));		\
		ASSERT_WC(self->cq_a, self->a, __LINE__,		\
			  IBV_WC_SUCCESS, wc_op, NULL);			\
	} while (0)

TEST_F(odp, caps)
{
	struct ibv_device_attr_ex attr = {};
	uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		      IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	uint32_t ud = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_SRQ_RECV;

	ASSERT_EQ(0, ibv_query_device_ex(self->dev.ctx, NULL, &attr));
	EXPECT_EQ(IBV_ODP_SUPPORT, attr.odp_caps.general_caps);
	EXPECT_EQ(rc, attr.odp_caps.per_transport_caps.rc_odp_caps & rc);
	EXPECT_EQ(ud, attr.odp_caps.per_transport_caps.ud_odp_caps);
	EXPECT_EQ(0, attr.odp_caps.per_transport_caps.uc_odp_caps);
}

/* Registered and deregistered, or the errno of ibv_reg_mr(). */
static int reg_errno(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		return errno;
	return ibv_dereg_mr(mr) ? -1 : 0;
}

TEST_F(odp, registration)
{
	uint8_t *p = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	ASSERT_NE(NULL, p);
	mr = ibv_reg_mr(self->dev.pd, p + 100, LEN, ODP_RW);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr ODP: %s", strerror(errno));
	EXPECT_EQ(p + 100, mr->addr);
	EXPECT_EQ(LEN, mr->length);
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	/* Read-only memory registers (nothing is faulted in yet). */
	EXPECT_EQ(0, reg_errno(self->dev.pd, p, PAGE, IBV_ACCESS_ON_DEMAND));
	/* Implicit ODP (the whole address space) is not supported. */
	EXPECT_EQ(EINVAL, reg_errno(self->dev.pd, NULL, SIZE_MAX, ODP_RW));
	EXPECT_EQ(EOPNOTSUPP, reg_errno(self->dev.pd, p, PAGE,
					ODP_RW | IBV_ACCESS_HUGETLB));
	munmap(p, MAP_LEN);
}

/* WRITE into and READ out of memory nobody touched: faults both ways. */
TEST_F(odp, write_read_untouched)
{
	uint8_t *src = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *dst = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *back = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *ms, *md, *mb;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_NE(NULL, back);
	pattern(src, MAP_LEN, 1);
	ms = ibv_reg_mr(self->dev.pd, src, MAP_LEN, ODP_RW);
	md = ibv_reg_mr(self->dev.pd, dst, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, back, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, ms);
	ASSERT_NE(NULL, md);
	ASSERT_NE(NULL, mb);

	RDMA_OK(IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, ms, src + 7, LEN,
		(uintptr_t)dst + 11, md->rkey);
	EXPECT_EQ(0, memcmp(dst + 11, src + 7, LEN));
	EXPECT_EQ(-1, zero_diff(dst, 11));
	EXPECT_EQ(-1, zero_diff(dst + 11 + LEN, MAP_LEN - 11 - LEN));

	RDMA_OK(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, mb, back + 3, LEN,
		(uintptr_t)dst + 11, md->rkey);
	EXPECT_EQ(0, memcmp(back + 3, src + 7, LEN));
	EXPECT_EQ(-1, zero_diff(back, 3));

	ibv_dereg_mr(ms);
	ibv_dereg_mr(md);
	ibv_dereg_mr(mb);
	munmap(src, MAP_LEN);
	munmap(dst, MAP_LEN);
	munmap(back, MAP_LEN);
}

/*
 * A READ of untouched memory gets zeroes (its zero page); once its owner
 * writes it (a new page replaces that one), a READ gets what was written.
 */
TEST_F(odp, read_zero_page_then_cow)
{
	uint8_t *mem = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *back = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *mm, *mb;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, back);
	mm = ibv_reg_mr(self->dev.pd, mem, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, back, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mm);
	ASSERT_NE(NULL, mb);
	memset(back, 0xee, MAP_LEN);
	RDMA_OK(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, mb, back, LEN,
		(uintptr_t)mem, mm->rkey);
	EXPECT_EQ(-1, zero_diff(back, LEN));
	pattern(mem, MAP_LEN, 2);
	RDMA_OK(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, mb, back, LEN,
		(uintptr_t)mem, mm->rkey);
	EXPECT_EQ(-1, pattern_diff(back, LEN, 2));
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	munmap(mem, MAP_LEN);
	munmap(back, MAP_LEN);
}

TEST_F(odp, send_recv_untouched)
{
	uint8_t *src = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *dst = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *ms, *md;
	struct ibv_sge rsge, ssge;
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 2, .sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr *rbad;
	struct ibv_send_wr *sbad;
	struct ibv_wc wc;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ms = ibv_reg_mr(self->dev.pd, src, MAP_LEN, ODP_RW);
	md = ibv_reg_mr(self->dev.pd, dst, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, ms);
	ASSERT_NE(NULL, md);
	rsge = (struct ibv_sge){ (uintptr_t)dst + 5, LEN + 1, md->lkey };
	ssge = (struct ibv_sge){ (uintptr_t)src + 9, LEN, ms->lkey };
	pattern(src, MAP_LEN, 3);
	ASSERT_EQ(0, ibv_post_recv(self->b, &rwr, &rbad));
	ASSERT_EQ(0, ibv_post_send(self->a, &swr, &sbad));
	ASSERT_WC(self->cq_a, self->a, 2, IBV_WC_SUCCESS, IBV_WC_SEND, NULL);
	ASSERT_WC(self->cq_b, self->b, 1, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(LEN, wc.byte_len);
	EXPECT_EQ(0, memcmp(dst + 5, src + 9, LEN));
	EXPECT_EQ(-1, zero_diff(dst + 5 + LEN, MAP_LEN - 5 - LEN));
	ibv_dereg_mr(ms);
	ibv_dereg_mr(md);
	munmap(src, MAP_LEN);
	munmap(dst, MAP_LEN);
}

/* Atomics on untouched memory; their results land in untouched memory. */
TEST_F(odp, atomics_untouched)
{
	uint8_t *tgt = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *res = map_fresh(PROT_READ | PROT_WRITE);
	uint64_t *r = (uint64_t *)(res + 3 * PAGE + 8);
	uint64_t *t = (uint64_t *)(tgt + 2 * PAGE + 16);
	struct ibv_mr *mt, *mr;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	ASSERT_NE(NULL, tgt);
	ASSERT_NE(NULL, res);
	mt = ibv_reg_mr(self->dev.pd, tgt, MAP_LEN, ODP_RW);
	mr = ibv_reg_mr(self->dev.pd, res, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mt);
	ASSERT_NE(NULL, mr);
	sge = (struct ibv_sge){ (uintptr_t)r, 8, mr->lkey };
	wr.wr.atomic.remote_addr = (uintptr_t)t;
	wr.wr.atomic.rkey = mt->rkey;
	wr.wr.atomic.compare_add = 0x1122334455667788ull;
	ASSERT_EQ(0, ibv_post_send(self->a, &wr, &bad));
	ASSERT_WC(self->cq_a, self->a, 7, IBV_WC_SUCCESS,
		  IBV_WC_FETCH_ADD, NULL);
	EXPECT_EQ(0, *r);
	EXPECT_EQ(0x1122334455667788ull, *t);

	/* The result page goes: the next result must fault it in again. */
	ASSERT_EQ(0, madvise(res, MAP_LEN, MADV_DONTNEED));
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 0x1122334455667788ull;
	wr.wr.atomic.swap = 42;
	ASSERT_EQ(0, ibv_post_send(self->a, &wr, &bad));
	ASSERT_WC(self->cq_a, self->a, 7, IBV_WC_SUCCESS,
		  IBV_WC_COMP_SWAP, NULL);
	EXPECT_EQ(0x1122334455667788ull, *r);
	EXPECT_EQ(42, *t);
	ibv_dereg_mr(mt);
	ibv_dereg_mr(mr);
	munmap(tgt, MAP_LEN);
	munmap(res, MAP_LEN);
}

/*
 * After MADV_DONTNEED the memory reads as zeroes, to its owner and to a
 * READ (the device must not keep the old pages); a WRITE after it lands
 * in the new pages. Several rounds.
 */
TEST_F(odp, dontneed_refault)
{
	uint8_t *mem = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *buf = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *mm, *mb;
	uint32_t round;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	mm = ibv_reg_mr(self->dev.pd, mem, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, buf, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mm);
	ASSERT_NE(NULL, mb);
	for (round = 10; round < 30; round++) {
		pattern(buf, LEN, round);
		RDMA_OK(IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, mb, buf, LEN,
			(uintptr_t)mem + 1, mm->rkey);
		ASSERT_EQ(-1, pattern_diff(mem + 1, LEN, round))
			TH_LOG("round %u", round);
		ASSERT_EQ(0, madvise(mem, MAP_LEN, MADV_DONTNEED));
		ASSERT_EQ(0, madvise(buf, MAP_LEN, MADV_DONTNEED));
		ASSERT_EQ(-1, zero_diff(mem, MAP_LEN));
		memset(buf, 0xa5, LEN);
		RDMA_OK(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, mb, buf, LEN,
			(uintptr_t)mem + 1, mm->rkey);
		ASSERT_EQ(-1, zero_diff(buf, LEN)) TH_LOG("round %u", round);
	}
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	munmap(mem, MAP_LEN);
	munmap(buf, MAP_LEN);
}

/*
 * The range is unmapped and a shared file mapping (memfd) takes its
 * place at the same address: a READ returns the file's bytes, a WRITE
 * reaches the file.
 */
TEST_F(odp, remap_same_range)
{
	uint8_t *mem = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *buf = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *file = malloc(MAP_LEN);
	struct ibv_mr *mm, *mb;
	void *again;
	int fd;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, file);
	mm = ibv_reg_mr(self->dev.pd, mem, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, buf, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mm);
	ASSERT_NE(NULL, mb);
	pattern(mem, MAP_LEN, 4);
	RDMA_OK(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, mb, buf, LEN,
		(uintptr_t)mem, mm->rkey);
	ASSERT_EQ(-1, pattern_diff(buf, LEN, 4));

	fd = memfd_create("odp_test", 0);
	ASSERT_LE(0, fd);
	pattern(file, MAP_LEN, 5);
	ASSERT_EQ(MAP_LEN, pwrite(fd, file, MAP_LEN, 0));
	ASSERT_EQ(0, munmap(mem, MAP_LEN));
	again = mmap(mem, MAP_LEN, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_FIXED, fd, 0);
	ASSERT_EQ((void *)mem, again);
	RDMA_OK(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, mb, buf, LEN,
		(uintptr_t)mem, mm->rkey);
	EXPECT_EQ(-1, pattern_diff(buf, LEN, 5));

	pattern(buf, LEN, 6);
	RDMA_OK(IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, mb, buf, LEN,
		(uintptr_t)mem + PAGE, mm->rkey);
	ASSERT_EQ(MAP_LEN, pread(fd, file, MAP_LEN, 0));
	EXPECT_EQ(-1, pattern_diff(file + PAGE, LEN, 6));
	EXPECT_EQ(-1, pattern_diff(file, PAGE, 5));
	close(fd);
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	munmap(mem, MAP_LEN);
	munmap(buf, MAP_LEN);
	free(file);
}

/* A WRITE to an ODP range that is no longer mapped: remote access error. */
TEST_F(odp, write_to_hole_fails)
{
	uint8_t *mem = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *buf = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *mm, *mb;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	mm = ibv_reg_mr(self->dev.pd, mem, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, buf, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mm);
	ASSERT_NE(NULL, mb);
	ASSERT_EQ(0, munmap(mem + 2 * PAGE, PAGE));
	ASSERT_EQ(0, post_rdma(self->a, IBV_WR_RDMA_WRITE, mb, buf, 3 * PAGE,
			       (uintptr_t)mem + PAGE, mm->rkey, 9));
	ASSERT_WC(self->cq_a, self->a, 9, IBV_WC_REM_ACCESS_ERR, 0, NULL);
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	munmap(mem, MAP_LEN);
	munmap(buf, MAP_LEN);
}

/* A READ of an ODP range no longer mapped: remote access error. */
TEST_F(odp, read_from_hole_fails)
{
	uint8_t *mem = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *buf = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *mm, *mb;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	mm = ibv_reg_mr(self->dev.pd, mem, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, buf, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mm);
	ASSERT_NE(NULL, mb);
	ASSERT_EQ(0, munmap(mem + 3 * PAGE, PAGE));
	ASSERT_EQ(0, post_rdma(self->a, IBV_WR_RDMA_READ, mb, buf, 3 * PAGE,
			       (uintptr_t)mem + PAGE + 8, mm->rkey, 11));
	ASSERT_WC(self->cq_a, self->a, 11, IBV_WC_REM_ACCESS_ERR, 0, NULL);
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	munmap(mem, MAP_LEN);
	munmap(buf, MAP_LEN);
}

/* A READ whose local ODP buffer has a hole: local protection error. */
TEST_F(odp, read_into_hole_fails)
{
	uint8_t *mem = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *buf = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *mm, *mb;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	mm = ibv_reg_mr(self->dev.pd, mem, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, buf, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mm);
	ASSERT_NE(NULL, mb);
	ASSERT_EQ(0, munmap(buf + PAGE, PAGE));
	ASSERT_EQ(0, post_rdma(self->a, IBV_WR_RDMA_READ, mb, buf, 3 * PAGE,
			       (uintptr_t)mem, mm->rkey, 12));
	ASSERT_WC(self->cq_a, self->a, 12, IBV_WC_LOC_PROT_ERR, 0, NULL);
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	munmap(mem, MAP_LEN);
	munmap(buf, MAP_LEN);
}

/*
 * An ODP MR may ask for remote write over memory mapped read-only (it
 * pins nothing): a READ works, a WRITE is a remote access error, and the
 * memory is unchanged.
 */
TEST_F(odp, write_to_read_only_fails)
{
	uint8_t *mem = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *buf = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *mm, *mb;

	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_NE(NULL, buf);
	pattern(mem, MAP_LEN, 7);
	ASSERT_EQ(0, mprotect(mem, MAP_LEN, PROT_READ));
	mm = ibv_reg_mr(self->dev.pd, mem, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, buf, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mm);
	ASSERT_NE(NULL, mb);
	RDMA_OK(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, mb, buf, LEN,
		(uintptr_t)mem, mm->rkey);
	EXPECT_EQ(-1, pattern_diff(buf, LEN, 7));
	ASSERT_EQ(0, post_rdma(self->a, IBV_WR_RDMA_WRITE, mb, buf, 8,
			       (uintptr_t)mem + 64, mm->rkey, 10));
	ASSERT_WC(self->cq_a, self->a, 10, IBV_WC_REM_ACCESS_ERR, 0, NULL);
	EXPECT_EQ(-1, pattern_diff(mem, MAP_LEN, 7));
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	munmap(mem, MAP_LEN);
	munmap(buf, MAP_LEN);
}

/* An iova unlike the address (same page offset): the right bytes move. */
TEST_F(odp, iova_not_address)
{
	uint8_t *mem = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *buf = map_fresh(PROT_READ | PROT_WRITE);
	uint64_t iova = 0x7e5500000000ull + 0x40;
	struct ibv_mr *mm, *mb;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	mm = ibv_reg_mr_iova2(self->dev.pd, mem + 0x40, MAP_LEN - 0x40, iova,
			      ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, buf, MAP_LEN, ODP_RW);
	ASSERT_NE(NULL, mm) TH_LOG("reg_mr_iova2: %s", strerror(errno));
	ASSERT_NE(NULL, mb);
	pattern(buf, LEN, 8);
	RDMA_OK(IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, mb, buf, LEN,
		iova + PAGE, mm->rkey);
	EXPECT_EQ(-1, pattern_diff(mem + 0x40 + PAGE, LEN, 8));
	EXPECT_EQ(-1, zero_diff(mem, 0x40 + PAGE));
	pattern(mem, MAP_LEN, 9);
	RDMA_OK(IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, mb, buf, LEN,
		iova + 3, mm->rkey);
	EXPECT_EQ(0, memcmp(buf, mem + 0x43, LEN));
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	munmap(mem, MAP_LEN);
	munmap(buf, MAP_LEN);
}

/* The ADVISE_MR method of uverbs (ibv_cmd_advise_mr()); 0 or an errno. */
static int advise(struct ibv_pd *pd, uint32_t advice, uint32_t flags,
		  struct ibv_sge *sge, uint32_t num)
{
	struct {
		struct ib_uverbs_ioctl_hdr hdr;
		struct ib_uverbs_attr attr[4];
	} cmd = {
		.hdr = {
			.length = sizeof(cmd),
			.object_id = UVERBS_OBJECT_MR,
			.method_id = UVERBS_METHOD_ADVISE_MR,
			.num_attrs = 4,
			.driver_id = RDMA_DRIVER_RXE,
		},
		.attr = {
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_PD_HANDLE,
			  .data = pd->handle },
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_ADVICE,
			  .len = sizeof(uint64_t), .data = advice },
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_FLAGS,
			  .len = sizeof(uint32_t), .data = flags },
			{ .attr_id = UVERBS_ATTR_ADVISE_MR_SGE_LIST,
			  .len = num * sizeof(*sge), .data = (uintptr_t)sge },
		},
	};

	cmd.attr[0].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attr[1].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attr[2].flags = UVERBS_ATTR_F_MANDATORY;
	cmd.attr[3].flags = UVERBS_ATTR_F_MANDATORY;
	return ioctl(pd->context->cmd_fd, RDMA_VERBS_IOCTL, &cmd) ? errno : 0;
}

/*
 * Prefetch, synchronous and queued, for reading, writing or without a
 * fault; the data moves right after each. Bad keys, non-ODP MRs and ranges
 * outside the MR are refused.
 */
TEST_F(odp, advise_prefetch)
{
	static const uint32_t advice[] = {
		IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH,
		IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
	};
	uint8_t *mem = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *buf = map_fresh(PROT_READ | PROT_WRITE);
	uint8_t *pin = map_fresh(PROT_READ | PROT_WRITE);
	struct ibv_mr *mm, *mb, *mp;
	struct ibv_sge sge[2];
	unsigned int i, flags;

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, pin);
	mm = ibv_reg_mr(self->dev.pd, mem, MAP_LEN, ODP_RW);
	mb = ibv_reg_mr(self->dev.pd, buf, MAP_LEN, ODP_RW);
	mp = ibv_reg_mr(self->dev.pd, pin, MAP_LEN, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mm);
	ASSERT_NE(NULL, mb);
	ASSERT_NE(NULL, mp);
	for (i = 0; i < 6; i++) {
		flags = i < 3 ? IB_UVERBS_ADVISE_MR_FLAG_FLUSH : 0;
		ASSERT_EQ(0, madvise(mem, MAP_LEN, MADV_DONTNEED));
		pattern(buf, LEN, 20 + i);
		sge[0] = (struct ibv_sge){ (uintptr_t)mem + 5, LEN, mm->lkey };
		sge[1] = (struct ibv_sge){ (uintptr_t)buf, LEN, mb->lkey };
		ASSERT_EQ(0, advise(self->dev.pd, advice[i % 3], flags, sge, 2))
			TH_LOG("advice %u flags %u", advice[i % 3], flags);
		RDMA_OK(IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, mb, buf, LEN,
			(uintptr_t)mem + 5, mm->rkey);
		EXPECT_EQ(-1, pattern_diff(mem + 5, LEN, 20 + i));
	}
	/* Index 0 is never a key's. */
	sge[0] = (struct ibv_sge){ (uintptr_t)mem, PAGE, mm->lkey & 0xff };
	EXPECT_EQ(EINVAL, advise(self->dev.pd, advice[0],
				 IB_UVERBS_ADVISE_MR_FLAG_FLUSH, sge, 1));
	sge[0] = (struct ibv_sge){ (uintptr_t)pin, PAGE, mp->lkey };
	EXPECT_EQ(EINVAL, advise(self->dev.pd, advice[0],
				 IB_UVERBS_ADVISE_MR_FLAG_FLUSH, sge, 1));
	sge[0] = (struct ibv_sge){ (uintptr_t)mem + PAGE, MAP_LEN, mm->lkey };
	EXPECT_EQ(EFAULT, advise(self->dev.pd, advice[1], 0, sge, 1));
	ibv_dereg_mr(mm);
	ibv_dereg_mr(mb);
	ibv_dereg_mr(mp);
	munmap(mem, MAP_LEN);
	munmap(buf, MAP_LEN);
	munmap(pin, MAP_LEN);
}

TEST_HARNESS_MAIN
