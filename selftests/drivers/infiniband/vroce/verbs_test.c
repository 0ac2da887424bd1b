// SPDX-License-Identifier: GPL-2.0
/*
 * Device and port verbs through the stock rdma-core rxe provider:
 * query_device, query_port, query_gid(_ex), query_pkey, user contexts and
 * PDs. Run by verbs.sh, which creates the device and exports:
 *   VROCE_DEV   the rdma device name
 *   VROCE_MAC   its netdev's MAC address (aa:bb:cc:dd:ee:ff)
 *   VROCE_IPV4  an IPv4 address on the netdev
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <rdma/vroce.h>

#include "../../../kselftest_harness.h"
#include "vroce_test.h"

FIXTURE(dev) {
	struct ibv_context *ctx;
};

FIXTURE_SETUP(dev)
{
	const char *name = getenv("VROCE_DEV");

	if (!name)
		SKIP(return, "VROCE_DEV not set (run verbs.sh)");
	self->ctx = vroce_open_by_name(name);
	ASSERT_NE(NULL, self->ctx) TH_LOG("cannot open %s", name);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/* Only what is implemented is claimed. */
TEST_F(dev, query_device_is_honest)
{
	struct ibv_device_attr attr;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &attr));
	EXPECT_EQ(1, attr.phys_port_cnt);
	EXPECT_EQ(VROCE_VENDOR_ID, attr.vendor_id);
	EXPECT_NE(0, attr.node_guid);
	EXPECT_EQ(attr.node_guid, attr.sys_image_guid);
	EXPECT_LT(0, attr.max_pd);
	EXPECT_EQ(1, attr.max_pkeys);
	EXPECT_LT(0, attr.max_qp);
	EXPECT_LT(0, attr.max_qp_wr);
	EXPECT_LT(0, attr.max_sge);
	EXPECT_LT(0, attr.max_cq);
	EXPECT_LT(0, attr.max_cqe);
	EXPECT_LT(0, attr.max_mr);
	EXPECT_LT(0, attr.max_srq);
	EXPECT_LT(0, attr.max_srq_wr);
	EXPECT_NE(0, attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
	EXPECT_LT(0, attr.max_ah);
	/* Multicast groups of UD QPs (ud_test's mcast cases use them). */
	EXPECT_LT(0, attr.max_mcast_grp);
	EXPECT_LT(0, attr.max_mcast_qp_attach);
	EXPECT_LE(attr.max_mcast_qp_attach, attr.max_total_mcast_qp_attach);
	EXPECT_EQ(IBV_ATOMIC_HCA, attr.atomic_cap);
	EXPECT_LT(0, attr.max_qp_rd_atom);
	EXPECT_LT(0, attr.max_qp_init_rd_atom);
}

TEST_F(dev, query_device_ex)
{
	struct ibv_device_attr_ex attr = {};

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &attr));
	EXPECT_EQ(1, attr.orig_attr.phys_port_cnt);
}

/* The node GUID is the EUI-64 of the netdev's MAC, as for RoCE hardware. */
TEST_F(dev, node_guid_from_mac)
{
	const char *mac = getenv("VROCE_MAC");
	unsigned int b[6];
	uint8_t eui[8];
	uint64_t guid;

	if (!mac)
		SKIP(return, "VROCE_MAC not set");
	ASSERT_EQ(6, sscanf(mac, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2],
			    &b[3], &b[4], &b[5]));
	eui[0] = b[0] ^ 2;
	eui[1] = b[1];
	eui[2] = b[2];
	eui[3] = 0xff;
	eui[4] = 0xfe;
	eui[5] = b[3];
	eui[6] = b[4];
	eui[7] = b[5];
	memcpy(&guid, eui, sizeof(guid));
	EXPECT_EQ(guid, ibv_get_device_guid(self->ctx->device));
}

TEST_F(dev, query_port)
{
	struct ibv_port_attr attr;

	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &attr));
	EXPECT_EQ(IBV_PORT_ACTIVE, attr.state);
	EXPECT_EQ(IBV_LINK_LAYER_ETHERNET, attr.link_layer);
	EXPECT_EQ(IBV_MTU_4096, attr.max_mtu);
	EXPECT_EQ(IBV_MTU_1024, attr.active_mtu); /* netdev MTU 1500 */
	EXPECT_EQ(VROCE_GID_TABLE_LEN, attr.gid_tbl_len);
	EXPECT_EQ(1, attr.pkey_tbl_len);
	EXPECT_TRUE(attr.port_cap_flags & IBV_PORT_IP_BASED_GIDS);
	EXPECT_EQ(0, attr.lid);
	EXPECT_NE(0, attr.active_width);
	EXPECT_NE(0, attr.active_speed);
}

TEST_F(dev, query_port_bad_port)
{
	struct ibv_port_attr attr;

	EXPECT_NE(0, ibv_query_port(self->ctx, 2, &attr));
	EXPECT_NE(0, ibv_query_port(self->ctx, 0, &attr));
}

TEST_F(dev, query_pkey)
{
	__be16 pkey;

	ASSERT_EQ(0, ibv_query_pkey(self->ctx, 1, 0, &pkey));
	EXPECT_EQ(0xffff, be16toh(pkey));
	EXPECT_NE(0, ibv_query_pkey(self->ctx, 1, 1, &pkey));
}

/* Index 0 is the MAC-derived link-local GID. */
TEST_F(dev, query_gid_default)
{
	union ibv_gid gid;

	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &gid));
	EXPECT_EQ(0xfe, gid.raw[0]);
	EXPECT_EQ(0x80, gid.raw[1]);
	EXPECT_EQ(ibv_get_device_guid(self->ctx->device),
		  gid.global.interface_id);
}

/* An IPv4 address yields a RoCE v1 and a RoCE v2 GID (::ffff:a.b.c.d). */
TEST_F(dev, query_gid_ex_v1_and_v2)
{
	const char *ip = getenv("VROCE_IPV4");
	struct ibv_gid_entry entry;
	union ibv_gid want = {};
	int i, v1 = 0, v2 = 0;

	if (!ip)
		SKIP(return, "VROCE_IPV4 not set");
	want.raw[10] = 0xff;
	want.raw[11] = 0xff;
	ASSERT_EQ(1, inet_pton(AF_INET, ip, &want.raw[12]));
	for (i = 0; i < VROCE_GID_TABLE_LEN; i++) {
		if (ibv_query_gid_ex(self->ctx, 1, i, &entry, 0))
			continue;
		if (memcmp(&entry.gid, &want, sizeof(want)))
			continue;
		EXPECT_EQ(1, entry.port_num);
		if (entry.gid_type == IBV_GID_TYPE_ROCE_V1)
			v1++;
		if (entry.gid_type == IBV_GID_TYPE_ROCE_V2)
			v2++;
	}
	EXPECT_EQ(1, v1);
	EXPECT_EQ(1, v2);
}

TEST_F(dev, pd_alloc_dealloc)
{
	enum { N = 512 };
	struct ibv_pd **pd = calloc(N, sizeof(*pd));
	int i;

	ASSERT_NE(NULL, pd);
	for (i = 0; i < N; i++) {
		pd[i] = ibv_alloc_pd(self->ctx);
		ASSERT_NE(NULL, pd[i]) TH_LOG("PD %d: %s", i, strerror(errno));
	}
	for (i = 0; i < N; i++)
		EXPECT_EQ(0, ibv_dealloc_pd(pd[i]));
	free(pd);
}

TEST(many_contexts)
{
	enum { N = 16 };
	const char *name = getenv("VROCE_DEV");
	struct ibv_context *ctx[N];
	struct ibv_pd *pd[N];
	int i;

	if (!name)
		SKIP(return, "VROCE_DEV not set (run verbs.sh)");
	for (i = 0; i < N; i++) {
		ctx[i] = vroce_open_by_name(name);
		ASSERT_NE(NULL, ctx[i]);
		pd[i] = ibv_alloc_pd(ctx[i]);
		ASSERT_NE(NULL, pd[i]);
	}
	for (i = 0; i < N; i++) {
		EXPECT_EQ(0, ibv_dealloc_pd(pd[i]));
		EXPECT_EQ(0, ibv_close_device(ctx[i]));
	}
}

TEST_HARNESS_MAIN
