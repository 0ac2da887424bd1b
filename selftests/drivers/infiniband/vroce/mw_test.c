// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows through the stock rdma-core rxe provider: allocation of
 * type 1 and type 2 windows and their rkeys, bad types, the PD a window
 * holds, windows left behind by a closed context, and MRs deregistered
 * beside unbound windows. Run by mw.sh, which creates the device and
 * exports VROCE_DEV.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

/* vroce's MW keys have bit 31 set; MR keys never do (mw.c). */
#define MW_KEY_BIT 0x80000000u

FIXTURE(mw) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

FIXTURE_SETUP(mw)
{
	const char *name = getenv("VROCE_DEV");

	if (!name)
		SKIP(return, "VROCE_DEV not set (run mw.sh)");
	self->ctx = vroce_open_by_name(name);
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", name);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
}

FIXTURE_TEARDOWN(mw)
{
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F(mw, alloc_both_types)
{
	struct ibv_mw *mw1 = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);

	ASSERT_NE(NULL, mw1) TH_LOG("type 1: %s", strerror(errno));
	ASSERT_NE(NULL, mw2) TH_LOG("type 2: %s", strerror(errno));
	EXPECT_EQ(IBV_MW_TYPE_1, mw1->type);
	EXPECT_EQ(IBV_MW_TYPE_2, mw2->type);
	EXPECT_EQ(self->pd, mw1->pd);
	EXPECT_EQ(MW_KEY_BIT, mw1->rkey & MW_KEY_BIT);
	EXPECT_EQ(MW_KEY_BIT, mw2->rkey & MW_KEY_BIT);
	EXPECT_NE(0, (mw1->rkey & ~MW_KEY_BIT) >> 8);
	EXPECT_NE(mw1->rkey >> 8, mw2->rkey >> 8);
	EXPECT_EQ(0, ibv_dealloc_mw(mw1));
	EXPECT_EQ(0, ibv_dealloc_mw(mw2));
}

TEST_F(mw, bad_types)
{
	static const int types[] = { 0, 3, 0x80, -1 };
	int i;

	for (i = 0; i < 4; i++) {
		struct ibv_mw *mw = ibv_alloc_mw(self->pd, types[i]);

		EXPECT_EQ(NULL, mw) TH_LOG("type %d allocated", types[i]);
		if (mw)
			ibv_dealloc_mw(mw);
		else
			EXPECT_EQ(EINVAL, errno);
	}
}

/* A window holds its PD; the MRs of the PD are independent of it. */
TEST_F(mw, pd_in_use)
{
	static char buf[4096];
	struct ibv_mw *mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	struct ibv_mr *mr;

	ASSERT_NE(NULL, mw);
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd));
	mr = ibv_reg_mr(self->pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(0, mr->rkey & MW_KEY_BIT);
	/* No window is bound to the MR: deregistration works. */
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dealloc_pd(self->pd));
	self->pd = NULL;
}

/* Windows of a closed context are freed with it; others are unaffected. */
TEST_F(mw, closed_context)
{
	struct ibv_context *ctx = vroce_open_by_name(getenv("VROCE_DEV"));
	struct ibv_mw *keep, *mw;
	struct ibv_pd *pd;
	int i;

	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	keep = ibv_alloc_mw(self->pd, IBV_MW_TYPE_1);
	ASSERT_NE(NULL, keep);
	for (i = 0; i < 64; i++)
		ASSERT_NE(NULL, ibv_alloc_mw(pd, i & 1 ? IBV_MW_TYPE_2 :
						    IBV_MW_TYPE_1));
	EXPECT_EQ(0, ibv_close_device(ctx));
	mw = ibv_alloc_mw(self->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, mw);
	EXPECT_NE(keep->rkey >> 8, mw->rkey >> 8);
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dealloc_mw(keep));
}

TEST_HARNESS_MAIN
