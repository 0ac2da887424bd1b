// SPDX-License-Identifier: GPL-2.0
/*
 * Memory registration through the stock rdma-core rxe provider:
 * ibv_reg_mr of many sizes and alignments, access flags, bad addresses,
 * keys, the max_mr limit, PDs of other contexts, deregistration, and
 * rereg (the rdma-core 44 rxe provider has no ibv_rereg_mr, so the uverbs
 * REREG_MR command is written to the context's command fd directly).
 * Memory windows are in mw_test.c, on-demand paging in odp_test.c. Run by
 * mr.sh, which creates the device and exports VROCE_DEV.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

#define PAGE 4096UL
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
	    IBV_ACCESS_REMOTE_WRITE)

FIXTURE(mr) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

FIXTURE_SETUP(mr)
{
	const char *name = getenv("VROCE_DEV");

	if (!name)
		SKIP(return, "VROCE_DEV not set (run mr.sh)");
	self->ctx = vroce_open_by_name(name);
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", name);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
}

FIXTURE_TEARDOWN(mr)
{
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

static void *map_anon(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Registers [addr, addr + len), checks what ibv_reg_mr reports, deregisters. */
static int reg_check(struct __test_metadata *_metadata, struct ibv_pd *pd,
		     void *addr, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		return errno;
	EXPECT_EQ(addr, mr->addr);
	EXPECT_EQ(len, mr->length);
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_NE(0, mr->lkey >> 8);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	return 0;
}

TEST_F(mr, query_device_limits)
{
	struct ibv_device_attr attr;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &attr));
	EXPECT_LT(0, attr.max_mr);
	EXPECT_EQ(UINT64_MAX, attr.max_mr_size);
	EXPECT_EQ(PAGE, attr.page_size_cap);
	/* Memory windows of type 1 and 2B (mw_test.c), not 2A. */
	EXPECT_LT(0, attr.max_mw);
	EXPECT_EQ(IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B,
		  attr.device_cap_flags & (IBV_DEVICE_MEM_WINDOW |
					   IBV_DEVICE_MEM_WINDOW_TYPE_2A |
					   IBV_DEVICE_MEM_WINDOW_TYPE_2B));
	/* Fast registration: IB_WR_REG_MR, IB_WR_LOCAL_INV, send with inv. */
	EXPECT_EQ(IBV_DEVICE_MEM_MGT_EXTENSIONS,
		  attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
}

TEST_F(mr, sizes_and_alignments)
{
	size_t big = 64UL << 20;
	char *p = map_anon(big, PROT_READ | PROT_WRITE);
	char *heap = malloc(3 * PAGE + 100);

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, heap);
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p, 1, RW));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p + PAGE - 1, 1, RW));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p, PAGE, RW));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p + 17, PAGE, RW));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p + PAGE - 2, 4, RW));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, heap + 3, 3 * PAGE + 50,
			       RW));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p + 5, 1000 * PAGE + 7,
			       RW));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p, big, RW));
	free(heap);
	munmap(p, big);
}

/* Pinning read-only memory for writing fails with EFAULT; reading works. */
TEST_F(mr, read_only_memory)
{
	char *p = map_anon(2 * PAGE, PROT_READ);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(EFAULT, reg_check(_metadata, self->pd, p, 2 * PAGE,
				    IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EFAULT, reg_check(_metadata, self->pd, p, 2 * PAGE, RW));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p, 2 * PAGE, 0));
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p, 2 * PAGE,
			       IBV_ACCESS_REMOTE_READ));
	munmap(p, 2 * PAGE);
}

/* Remote write or atomic without local write is EINVAL; all else works. */
TEST_F(mr, access_flag_combinations)
{
	static const int bits[] = {
		IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_MW_BIND,
	};
	char *p = map_anon(PAGE, PROT_READ | PROT_WRITE);
	int combo, i;

	ASSERT_NE(NULL, p);
	for (combo = 0; combo < 1 << 5; combo++) {
		int access = 0, want;

		for (i = 0; i < 5; i++)
			if (combo & 1 << i)
				access |= bits[i];
		want = (access & (IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_ATOMIC)) &&
		       !(access & IBV_ACCESS_LOCAL_WRITE) ? EINVAL : 0;
		EXPECT_EQ(want, reg_check(_metadata, self->pd, p, PAGE,
					  access))
			TH_LOG("access %#x", access);
	}
	munmap(p, PAGE);
}

TEST_F(mr, bad_ranges)
{
	char *p = map_anon(4 * PAGE, PROT_READ | PROT_WRITE);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(EINVAL, reg_check(_metadata, self->pd, p, 0, RW));
	/* A hole in the middle, then nothing mapped at all. */
	ASSERT_EQ(0, munmap(p + PAGE, PAGE));
	EXPECT_EQ(EFAULT, reg_check(_metadata, self->pd, p, 4 * PAGE, RW));
	EXPECT_EQ(EFAULT, reg_check(_metadata, self->pd, p + PAGE, 1, 0));
	munmap(p, 4 * PAGE);
	EXPECT_EQ(EFAULT, reg_check(_metadata, self->pd, p, PAGE, 0));
	/* Wraps around the address space. */
	EXPECT_NE(0, reg_check(_metadata, self->pd, (void *)-PAGE, 2 * PAGE,
			       0));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Keys are distinct, also in their index part, and never 0. */
TEST_F(mr, keys_distinct)
{
	enum { N = 256 };
	char *p = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr[N];
	uint32_t idx[N];
	int i;

	ASSERT_NE(NULL, p);
	for (i = 0; i < N; i++) {
		mr[i] = ibv_reg_mr(self->pd, p, PAGE, RW);
		ASSERT_NE(NULL, mr[i]) TH_LOG("MR %d: %s", i, strerror(errno));
		EXPECT_EQ(mr[i]->lkey, mr[i]->rkey);
		idx[i] = mr[i]->lkey >> 8;
	}
	qsort(idx, N, sizeof(idx[0]), cmp_u32);
	EXPECT_NE(0, idx[0]);
	for (i = 1; i < N; i++)
		EXPECT_NE(idx[i - 1], idx[i]);
	for (i = 0; i < N; i++)
		EXPECT_EQ(0, ibv_dereg_mr(mr[i]));
	munmap(p, PAGE);
}

/*
 * Up to max_mr MRs fit, one more fails with ENOMEM, and freeing one makes
 * room. Kernel users of the device (ib_core's MAD agents, once QPs exist)
 * hold a few DMA MRs of their own, which count too.
 */
#define KERNEL_MRS_MAX 16

TEST_F(mr, max_mr_is_honest)
{
	struct ibv_device_attr attr;
	char *p = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr **mr, *extra;
	int i, n;

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &attr));
	n = attr.max_mr;
	ASSERT_GE(100000, n);
	mr = calloc(n, sizeof(*mr));
	ASSERT_NE(NULL, mr);
	for (i = 0; i < n; i++) {
		mr[i] = ibv_reg_mr(self->pd, p, PAGE, IBV_ACCESS_LOCAL_WRITE);
		if (!mr[i])
			break;
	}
	if (i == n) {
		extra = ibv_reg_mr(self->pd, p, PAGE, IBV_ACCESS_LOCAL_WRITE);
		EXPECT_EQ(NULL, extra);
		if (extra)
			ibv_dereg_mr(extra);
	}
	EXPECT_EQ(ENOMEM, errno) TH_LOG("after %d of %d MRs: %s", i, n,
					strerror(errno));
	EXPECT_LE(n - KERNEL_MRS_MAX, i);
	ASSERT_LT(n / 2, i);
	EXPECT_EQ(0, ibv_dereg_mr(mr[n / 2]));
	mr[n / 2] = ibv_reg_mr(self->pd, p, PAGE, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_NE(NULL, mr[n / 2]);
	for (i = 0; i < n; i++)
		if (mr[i])
			EXPECT_EQ(0, ibv_dereg_mr(mr[i]));
	free(mr);
	munmap(p, PAGE);
}

/* A PD with MRs cannot go away; after ibv_dereg_mr it can. */
TEST_F(mr, dereg_releases_pd)
{
	char *p = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	ASSERT_NE(NULL, p);
	mr = ibv_reg_mr(self->pd, p, PAGE, RW);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(self->pd));
	self->pd = NULL;
	munmap(p, PAGE);
}

/*
 * A PD handle of another context names nothing (or another PD) in this
 * one: the command carries this context's handle space. Make the foreign
 * handle one this context does not have.
 */
TEST_F(mr, pd_of_other_context)
{
	struct ibv_context *other = vroce_open_by_name(getenv("VROCE_DEV"));
	char *p = map_anon(PAGE, PROT_READ | PROT_WRITE);
	struct ibv_pd *opd[4], fake;
	struct ibv_mr *mr;
	int i;

	ASSERT_NE(NULL, other);
	ASSERT_NE(NULL, p);
	for (i = 0; i < 4; i++) {
		opd[i] = ibv_alloc_pd(other);
		ASSERT_NE(NULL, opd[i]);
	}
	ASSERT_NE(self->pd->handle, opd[3]->handle);
	fake = *opd[3];
	fake.context = self->ctx;
	mr = ibv_reg_mr(&fake, p, PAGE, RW);
	EXPECT_EQ(NULL, mr);
	EXPECT_NE(0, errno);
	if (mr)
		ibv_dereg_mr(mr);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, ibv_dealloc_pd(opd[i]));
	EXPECT_EQ(0, ibv_close_device(other));
	munmap(p, PAGE);
}

/* The uverbs REREG_MR command; returns 0 or the errno. */
static int rereg(struct ibv_mr *mr, uint32_t flags, struct ibv_pd *pd,
		 int access, struct ib_uverbs_rereg_mr_resp *resp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} req = {
		.hdr = {
			.command = IB_USER_VERBS_CMD_REREG_MR,
			.in_words = sizeof(req) / 4,
			.out_words = sizeof(*resp) / 4,
		},
		.cmd = {
			.response = (uintptr_t)resp,
			.mr_handle = mr->handle,
			.flags = flags,
			.start = (uintptr_t)mr->addr,
			.length = mr->length,
			.hca_va = (uintptr_t)mr->addr,
			.pd_handle = pd ? pd->handle : 0,
			.access_flags = access,
		},
	};

	if (write(mr->context->cmd_fd, &req, sizeof(req)) == sizeof(req))
		return 0;
	return errno;
}

TEST_F(mr, rereg_in_place)
{
	struct ib_uverbs_rereg_mr_resp resp;
	char *p = map_anon(PAGE, PROT_READ | PROT_WRITE);
	char *ro = map_anon(PAGE, PROT_READ);
	struct ibv_pd *pd2 = ibv_alloc_pd(self->ctx);
	struct ibv_mr *mr, *rmr;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, pd2);
	mr = ibv_reg_mr(self->pd, p, PAGE, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);

	/* New access flags, same keys. */
	ASSERT_EQ(0, rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, RW |
			   IBV_ACCESS_REMOTE_ATOMIC, &resp));
	EXPECT_EQ(mr->lkey, resp.lkey);
	EXPECT_EQ(mr->rkey, resp.rkey);
	/* ib_core's check, and ours: a pinned MR cannot become ODP. */
	EXPECT_EQ(EINVAL, rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				IBV_ACCESS_REMOTE_WRITE, &resp));
	EXPECT_EQ(EOPNOTSUPP, rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				    IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_ON_DEMAND, &resp));
	/* A new translation is not supported. */
	EXPECT_EQ(EOPNOTSUPP, rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, 0, &resp));

	/* Moved to pd2: the old PD is free, pd2 is busy. */
	ASSERT_EQ(0, rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, 0, &resp));
	EXPECT_EQ(mr->lkey, resp.lkey);
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(pd2));
	EXPECT_EQ(0, ibv_dealloc_pd(self->pd));
	self->pd = pd2;
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	/* Read-only pinned pages cannot become writable in place. */
	rmr = ibv_reg_mr(pd2, ro, PAGE, IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, rmr);
	EXPECT_EQ(EOPNOTSUPP, rereg(rmr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				    IBV_ACCESS_LOCAL_WRITE, &resp));
	EXPECT_EQ(0, ibv_dereg_mr(rmr));
	munmap(p, PAGE);
	munmap(ro, PAGE);
}

/* Arms /proc/thread-self/fail-nth (@fd) for the @n-th slab allocation. */
static int fail_nth_arm(int fd, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	return pwrite(fd, buf, len, 0) == len ? 0 : -1;
}

/* The armed failure fired (the counter reads 0), then disarm. */
static int fail_nth_fired(int fd)
{
	char buf[16] = "";
	int fired = pread(fd, buf, sizeof(buf) - 1, 0) > 0 && atoi(buf) == 0;

	fail_nth_arm(fd, 0);
	return fired;
}

/*
 * Fail the 1st, 2nd, ... slab allocation of ibv_reg_mr until it succeeds:
 * each attempt fails only because of the injected failure, or succeeds,
 * and leaves nothing behind (the debug kernel's kmemleak and KASAN check
 * that). Needs failslab and fail-nth with GFP_KERNEL failures enabled
 * (mr.sh sets that up on the debug kernel); skips elsewhere.
 */
TEST_F(mr, reg_under_allocation_failures)
{
	enum { MAX_STEPS = 300 };
	int fd = open("/proc/thread-self/fail-nth", O_RDWR);
	char *p = map_anon(64 * PAGE, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr = NULL;
	int n, fired, err;

	if (fd < 0 || !getenv("VROCE_FAILSLAB"))
		SKIP(return, "no fail-nth/failslab (use the debug kernel)");
	ASSERT_NE(NULL, p);
	for (n = 1; n <= MAX_STEPS; n++) {
		ASSERT_EQ(0, fail_nth_arm(fd, n));
		mr = ibv_reg_mr(self->pd, p + 5, 63 * PAGE, RW);
		err = errno;
		fired = fail_nth_fired(fd);
		if (mr) {
			EXPECT_EQ(0, ibv_dereg_mr(mr));
			if (!fired)
				break;
		} else {
			EXPECT_TRUE(fired) TH_LOG("step %d: %s without an injected failure",
						  n, strerror(err));
		}
	}
	EXPECT_GE(MAX_STEPS, n) TH_LOG("still failing after %d steps", n);
	EXPECT_LT(2, n) TH_LOG("fail-nth had no effect");
	close(fd);
	EXPECT_EQ(0, reg_check(_metadata, self->pd, p, 64 * PAGE, RW));
	munmap(p, 64 * PAGE);
}

TEST_HARNESS_MAIN
