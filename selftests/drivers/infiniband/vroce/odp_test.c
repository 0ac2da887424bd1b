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

/* A test's buffer: MAP_LEN bytes of anonymous memory and its MR. */
struct odp_buf {
	uint8_t *p;
	struct ibv_mr *mr;
	uint64_t va;	/* p's address in the MR (its iova) */
};

FIXTURE(odp) {
	struct vroce_dev dev;
	struct ibv_cq *cq_a;
	struct ibv_cq *cq_b;
	struct ibv_qp *a;	/* the requester */
	struct ibv_qp *b;	/* the responder */
	struct odp_buf buf[3];	/* the test's, freed by the teardown */
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
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(self->buf); i++)
		if (self->buf[i].mr)
			ibv_dereg_mr(self->buf[i].mr);
	for (i = 0; i < ARRAY_SIZE(self->buf); i++)
		if (self->buf[i].p)
			munmap(self->buf[i].p, MAP_LEN);
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

/* The next free buffer of the test, mapped fresh: memory nobody touched. */
static struct odp_buf *buf_map(struct __test_metadata *_metadata,
			       FIXTURE_DATA(odp) *self)
{
	unsigned int i = 0;
	void *p;

	while (self->buf[i].p)
		ASSERT_GT(ARRAY_SIZE(self->buf), ++i);
	p = mmap(NULL, MAP_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	self->buf[i].p = p;
	return &self->buf[i];
}

/* Register all of @b with @access. */
static void buf_reg(struct __test_metadata *_metadata,
		    FIXTURE_DATA(odp) *self, struct odp_buf *b, int access)
{
	b->mr = ibv_reg_mr(self->dev.pd, b->p, MAP_LEN, access);
	ASSERT_NE(NULL, b->mr);
	b->va = (uintptr_t)b->p;
}

/* Register each buffer mapped but not registered yet as an ODP MR. */
static void reg_mapped(struct __test_metadata *_metadata,
		       FIXTURE_DATA(odp) *self)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(self->buf) && self->buf[i].p; i++)
		if (!self->buf[i].mr)
			buf_reg(_metadata, self, &self->buf[i], ODP_RW);
}

/* A fresh buffer registered as an ODP MR. */
static struct odp_buf *odp_buf(struct __test_metadata *_metadata,
			       FIXTURE_DATA(odp) *self)
{
	struct odp_buf *b = buf_map(_metadata, self);

	buf_reg(_metadata, self, b, ODP_RW);
	return b;
}

/* Byte @i of pattern @seed. */
static uint8_t pattern_byte(uint32_t seed, uint32_t i)
{
	return (uint8_t)((i * 2654435761u) >> 13) ^ seed;
}

static uint8_t zero_byte(uint32_t seed, uint32_t i)
{
	return 0;
}

static void pattern(uint8_t *p, uint32_t len, uint32_t seed)
{
	vroce_fill(p, len, seed, pattern_byte);
}

/* The first index where @p differs from pattern(@seed), or -1. */
static long pattern_diff(const uint8_t *p, uint32_t len, uint32_t seed)
{
	return vroce_mismatch(p, len, seed, pattern_byte);
}

static long zero_diff(const uint8_t *p, uint32_t len)
{
	return vroce_mismatch(p, len, 0, zero_byte);
}

/* The opcode of a successful completion of a WR of @op. */
static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * Post @wr on QP a and wait for its completion, which must be @status (and
 * with success, of @wr's opcode). 0, or -1 after printing what failed.
 */
static int post_wc(FIXTURE_DATA(odp) *self, struct ibv_send_wr *wr,
		   enum ibv_wc_status status)
{
	struct ibv_send_wr *bad;
	int ret = ibv_post_send(self->a, wr, &bad);

	if (ret) {
		printf("# post_send of wr_id %llu: %s\n",
		       (unsigned long long)wr->wr_id, strerror(ret));
		fflush(stdout);
		return -1;
	}
	return vroce_expect_wc(self->cq_a, self->a, wr->wr_id, status,
			       wc_opcode(wr->opcode), POLL_TIMEOUT_S, NULL);
}

/*
 * By QP a, @op (RDMA WRITE or READ) of @len bytes at @loff in @l, to or
 * from @roff in @r; its completion must be @status. 0, or -1 after
 * printing what failed.
 */
static int rdma(FIXTURE_DATA(odp) *self, enum ibv_wr_opcode op,
		struct odp_buf *l, uint32_t loff, uint32_t len,
		struct odp_buf *r, uint64_t roff, enum ibv_wc_status status)
{
	struct ibv_sge sge = { l->va + loff, len, l->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = r->va + roff, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = r->va + roff, .rkey = r->mr->rkey },
	};

	return post_wc(self, &wr, status);
}

/* An rdma() that must succeed. */
#define RDMA_OK(op, l, loff, len, r, roff)				\
	ASSERT_EQ(0, rdma(self, op, l, loff, len, r, roff, IBV_WC_SUCCESS))

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
	uint8_t *p = buf_map(_metadata, self)->p;
	struct ibv_mr *mr;

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
}

/* WRITE into and READ out of memory nobody touched: faults both ways. */
TEST_F(odp, write_read_untouched)
{
	struct odp_buf *src = buf_map(_metadata, self);
	struct odp_buf *dst = buf_map(_metadata, self);
	struct odp_buf *back = buf_map(_metadata, self);

	pattern(src->p, MAP_LEN, 1);
	reg_mapped(_metadata, self);

	RDMA_OK(IBV_WR_RDMA_WRITE, src, 7, LEN, dst, 11);
	EXPECT_EQ(0, memcmp(dst->p + 11, src->p + 7, LEN));
	EXPECT_EQ(-1, zero_diff(dst->p, 11));
	EXPECT_EQ(-1, zero_diff(dst->p + 11 + LEN, MAP_LEN - 11 - LEN));

	RDMA_OK(IBV_WR_RDMA_READ, back, 3, LEN, dst, 11);
	EXPECT_EQ(0, memcmp(back->p + 3, src->p + 7, LEN));
	EXPECT_EQ(-1, zero_diff(back->p, 3));
}

/*
 * A READ of untouched memory gets zeroes (its zero page); once its owner
 * writes it (a new page replaces that one), a READ gets what was written.
 */
TEST_F(odp, read_zero_page_then_cow)
{
	struct odp_buf *mem = odp_buf(_metadata, self);
	struct odp_buf *back = odp_buf(_metadata, self);

	memset(back->p, 0xee, MAP_LEN);
	RDMA_OK(IBV_WR_RDMA_READ, back, 0, LEN, mem, 0);
	EXPECT_EQ(-1, zero_diff(back->p, LEN));
	pattern(mem->p, MAP_LEN, 2);
	RDMA_OK(IBV_WR_RDMA_READ, back, 0, LEN, mem, 0);
	EXPECT_EQ(-1, pattern_diff(back->p, LEN, 2));
}

TEST_F(odp, send_recv_untouched)
{
	struct odp_buf *src = odp_buf(_metadata, self);
	struct odp_buf *dst = odp_buf(_metadata, self);
	struct ibv_sge rsge, ssge;
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rsge, .num_sge = 1 };
	struct ibv_send_wr swr = {
		.wr_id = 2, .sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc;

	rsge = (struct ibv_sge){ (uintptr_t)dst->p + 5, LEN + 1, dst->mr->lkey };
	ssge = (struct ibv_sge){ (uintptr_t)src->p + 9, LEN, src->mr->lkey };
	pattern(src->p, MAP_LEN, 3);
	ASSERT_EQ(0, ibv_post_recv(self->b, &rwr, &rbad));
	ASSERT_EQ(0, post_wc(self, &swr, IBV_WC_SUCCESS));
	ASSERT_WC(self->cq_b, self->b, 1, IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
	EXPECT_EQ(LEN, wc.byte_len);
	EXPECT_EQ(0, memcmp(dst->p + 5, src->p + 9, LEN));
	EXPECT_EQ(-1, zero_diff(dst->p + 5 + LEN, MAP_LEN - 5 - LEN));
}

/* Atomics on untouched memory; their results land in untouched memory. */
TEST_F(odp, atomics_untouched)
{
	struct odp_buf *tgt = odp_buf(_metadata, self);
	struct odp_buf *res = odp_buf(_metadata, self);
	uint64_t *r = (uint64_t *)(res->p + 3 * PAGE + 8);
	uint64_t *t = (uint64_t *)(tgt->p + 2 * PAGE + 16);
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
	};

	sge = (struct ibv_sge){ (uintptr_t)r, 8, res->mr->lkey };
	wr.wr.atomic.remote_addr = (uintptr_t)t;
	wr.wr.atomic.rkey = tgt->mr->rkey;
	wr.wr.atomic.compare_add = 0x1122334455667788ull;
	ASSERT_EQ(0, post_wc(self, &wr, IBV_WC_SUCCESS));
	EXPECT_EQ(0, *r);
	EXPECT_EQ(0x1122334455667788ull, *t);

	/* The result page goes: the next result must fault it in again. */
	ASSERT_EQ(0, madvise(res->p, MAP_LEN, MADV_DONTNEED));
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 0x1122334455667788ull;
	wr.wr.atomic.swap = 42;
	ASSERT_EQ(0, post_wc(self, &wr, IBV_WC_SUCCESS));
	EXPECT_EQ(0x1122334455667788ull, *r);
	EXPECT_EQ(42, *t);
}

/*
 * After MADV_DONTNEED the memory reads as zeroes, to its owner and to a
 * READ (the device must not keep the old pages); a WRITE after it lands
 * in the new pages. Several rounds.
 */
TEST_F(odp, dontneed_refault)
{
	struct odp_buf *mem = odp_buf(_metadata, self);
	struct odp_buf *buf = odp_buf(_metadata, self);
	uint32_t round;

	for (round = 10; round < 30; round++) {
		pattern(buf->p, LEN, round);
		RDMA_OK(IBV_WR_RDMA_WRITE, buf, 0, LEN, mem, 1);
		ASSERT_EQ(-1, pattern_diff(mem->p + 1, LEN, round))
			TH_LOG("round %u", round);
		ASSERT_EQ(0, madvise(mem->p, MAP_LEN, MADV_DONTNEED));
		ASSERT_EQ(0, madvise(buf->p, MAP_LEN, MADV_DONTNEED));
		ASSERT_EQ(-1, zero_diff(mem->p, MAP_LEN));
		memset(buf->p, 0xa5, LEN);
		RDMA_OK(IBV_WR_RDMA_READ, buf, 0, LEN, mem, 1);
		ASSERT_EQ(-1, zero_diff(buf->p, LEN)) TH_LOG("round %u", round);
	}
}

/*
 * The range is unmapped and a shared file mapping (memfd) takes its
 * place at the same address: a READ returns the file's bytes, a WRITE
 * reaches the file.
 */
TEST_F(odp, remap_same_range)
{
	struct odp_buf *mem = odp_buf(_metadata, self);
	struct odp_buf *buf = odp_buf(_metadata, self);
	uint8_t *file = malloc(MAP_LEN);
	void *again;
	int fd;

	ASSERT_NE(NULL, file);
	pattern(mem->p, MAP_LEN, 4);
	RDMA_OK(IBV_WR_RDMA_READ, buf, 0, LEN, mem, 0);
	ASSERT_EQ(-1, pattern_diff(buf->p, LEN, 4));

	fd = memfd_create("odp_test", 0);
	ASSERT_LE(0, fd);
	pattern(file, MAP_LEN, 5);
	ASSERT_EQ(MAP_LEN, pwrite(fd, file, MAP_LEN, 0));
	ASSERT_EQ(0, munmap(mem->p, MAP_LEN));
	again = mmap(mem->p, MAP_LEN, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_FIXED, fd, 0);
	ASSERT_EQ((void *)mem->p, again);
	RDMA_OK(IBV_WR_RDMA_READ, buf, 0, LEN, mem, 0);
	EXPECT_EQ(-1, pattern_diff(buf->p, LEN, 5));

	pattern(buf->p, LEN, 6);
	RDMA_OK(IBV_WR_RDMA_WRITE, buf, 0, LEN, mem, PAGE);
	ASSERT_EQ(MAP_LEN, pread(fd, file, MAP_LEN, 0));
	EXPECT_EQ(-1, pattern_diff(file + PAGE, LEN, 6));
	EXPECT_EQ(-1, pattern_diff(file, PAGE, 5));
	close(fd);
	free(file);
}

/*
 * Two fresh ODP buffers, a remote one (mem) and a local one (buf); unmap
 * the page at @hole of mem if @remote, else of buf. Then @op of three pages
 * at buf, to or from @roff in mem, must complete with @status.
 */
static void hole_rdma(struct __test_metadata *_metadata,
		      FIXTURE_DATA(odp) *self, bool remote, uint32_t hole,
		      enum ibv_wr_opcode op, uint32_t roff,
		      enum ibv_wc_status status)
{
	struct odp_buf *mem = odp_buf(_metadata, self);
	struct odp_buf *buf = odp_buf(_metadata, self);

	ASSERT_EQ(0, munmap((remote ? mem : buf)->p + hole, PAGE));
	ASSERT_EQ(0, rdma(self, op, buf, 0, 3 * PAGE, mem, roff, status));
}

/* A WRITE to an ODP range that is no longer mapped: remote access error. */
TEST_F(odp, write_to_hole_fails)
{
	hole_rdma(_metadata, self, true, 2 * PAGE, IBV_WR_RDMA_WRITE, PAGE,
		  IBV_WC_REM_ACCESS_ERR);
}

/* A READ of an ODP range no longer mapped: remote access error. */
TEST_F(odp, read_from_hole_fails)
{
	hole_rdma(_metadata, self, true, 3 * PAGE, IBV_WR_RDMA_READ, PAGE + 8,
		  IBV_WC_REM_ACCESS_ERR);
}

/* A READ whose local ODP buffer has a hole: local protection error. */
TEST_F(odp, read_into_hole_fails)
{
	hole_rdma(_metadata, self, false, PAGE, IBV_WR_RDMA_READ, 0,
		  IBV_WC_LOC_PROT_ERR);
}

/*
 * An ODP MR may ask for remote write over memory mapped read-only (it
 * pins nothing): a READ works, a WRITE is a remote access error, and the
 * memory is unchanged.
 */
TEST_F(odp, write_to_read_only_fails)
{
	struct odp_buf *mem = buf_map(_metadata, self);
	struct odp_buf *buf = buf_map(_metadata, self);

	pattern(mem->p, MAP_LEN, 7);
	ASSERT_EQ(0, mprotect(mem->p, MAP_LEN, PROT_READ));
	reg_mapped(_metadata, self);
	RDMA_OK(IBV_WR_RDMA_READ, buf, 0, LEN, mem, 0);
	EXPECT_EQ(-1, pattern_diff(buf->p, LEN, 7));
	ASSERT_EQ(0, rdma(self, IBV_WR_RDMA_WRITE, buf, 0, 8, mem, 64,
			  IBV_WC_REM_ACCESS_ERR));
	EXPECT_EQ(-1, pattern_diff(mem->p, MAP_LEN, 7));
}

/* An iova unlike the address (same page offset): the right bytes move. */
TEST_F(odp, iova_not_address)
{
	struct odp_buf *mem = buf_map(_metadata, self);
	struct odp_buf *buf = odp_buf(_metadata, self);
	uint64_t iova = 0x7e5500000000ull + 0x40;

	mem->mr = ibv_reg_mr_iova2(self->dev.pd, mem->p + 0x40, MAP_LEN - 0x40,
				   iova, ODP_RW);
	ASSERT_NE(NULL, mem->mr) TH_LOG("reg_mr_iova2: %s", strerror(errno));
	/* mem->p + 0x40 is at iova: offsets in mem are offsets from p. */
	mem->va = iova - 0x40;
	pattern(buf->p, LEN, 8);
	RDMA_OK(IBV_WR_RDMA_WRITE, buf, 0, LEN, mem, 0x40 + PAGE);
	EXPECT_EQ(-1, pattern_diff(mem->p + 0x40 + PAGE, LEN, 8));
	EXPECT_EQ(-1, zero_diff(mem->p, 0x40 + PAGE));
	pattern(mem->p, MAP_LEN, 9);
	RDMA_OK(IBV_WR_RDMA_READ, buf, 0, LEN, mem, 0x43);
	EXPECT_EQ(0, memcmp(buf->p, mem->p + 0x43, LEN));
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
	struct odp_buf *mem = odp_buf(_metadata, self);
	struct odp_buf *buf = odp_buf(_metadata, self);
	struct odp_buf *pin = buf_map(_metadata, self);
	struct ibv_sge sge[2];
	unsigned int i, flags;

	buf_reg(_metadata, self, pin, IBV_ACCESS_LOCAL_WRITE);
	for (i = 0; i < 6; i++) {
		flags = i < 3 ? IB_UVERBS_ADVISE_MR_FLAG_FLUSH : 0;
		ASSERT_EQ(0, madvise(mem->p, MAP_LEN, MADV_DONTNEED));
		pattern(buf->p, LEN, 20 + i);
		sge[0] = (struct ibv_sge){ mem->va + 5, LEN, mem->mr->lkey };
		sge[1] = (struct ibv_sge){ buf->va, LEN, buf->mr->lkey };
		ASSERT_EQ(0, advise(self->dev.pd, advice[i % 3], flags, sge, 2))
			TH_LOG("advice %u flags %u", advice[i % 3], flags);
		RDMA_OK(IBV_WR_RDMA_WRITE, buf, 0, LEN, mem, 5);
		EXPECT_EQ(-1, pattern_diff(mem->p + 5, LEN, 20 + i));
	}
	/* Index 0 is never a key's. */
	sge[0] = (struct ibv_sge){ mem->va, PAGE, mem->mr->lkey & 0xff };
	EXPECT_EQ(EINVAL, advise(self->dev.pd, advice[0],
				 IB_UVERBS_ADVISE_MR_FLAG_FLUSH, sge, 1));
	sge[0] = (struct ibv_sge){ pin->va, PAGE, pin->mr->lkey };
	EXPECT_EQ(EINVAL, advise(self->dev.pd, advice[0],
				 IB_UVERBS_ADVISE_MR_FLAG_FLUSH, sge, 1));
	sge[0] = (struct ibv_sge){ mem->va + PAGE, MAP_LEN, mem->mr->lkey };
	EXPECT_EQ(EFAULT, advise(self->dev.pd, advice[1], 0, sge, 1));
}

TEST_HARNESS_MAIN
