// SPDX-License-Identifier: GPL-2.0
/*
 * The BTH opcodes vroce knows: RC, UC and UD (IBTA vol. 1 chapter 9,
 * include/rdma/ib_pack.h) and the CNP (Annex A17). RD and XRC are not
 * supported and are rejected on receive, like every opcode not in the table.
 */

#include <linux/bitops.h>
#include <linux/build_bug.h>
#include <linux/log2.h>
#include <linux/string.h>

#include "grh.h"
#include "opcode.h"
#include "pkt.h"

#define OP(_op, _hdrs, _flags, _qpt)					\
	[IB_OPCODE_ ## _op] = {						\
		.name = #_op, .hdrs = (_hdrs), .flags = (_flags),	\
		.qp_types = (_qpt),					\
	}

/* RC requests; UC requests are the same without the AckReq default. */
#define RC(_op, _hdrs, _flags)						\
	OP(RC_ ## _op, _hdrs, VROCE_OP_REQUEST | (_flags), VROCE_QPT_RC)
#define UC(_op, _hdrs, _flags)						\
	OP(UC_ ## _op, _hdrs, VROCE_OP_REQUEST | ((_flags) & ~ACK), VROCE_QPT_UC)

#define PL	VROCE_OP_PAYLOAD
#define ACK	VROCE_OP_ACKREQ
#define RESP	VROCE_OP_RESPONSE

const struct vroce_opcode_info vroce_opcodes[256] = {
	RC(SEND_FIRST, 0, PL | VROCE_OP_FIRST),
	UC(SEND_FIRST, 0, PL | VROCE_OP_FIRST),
	RC(SEND_MIDDLE, 0, PL | VROCE_OP_MIDDLE),
	UC(SEND_MIDDLE, 0, PL | VROCE_OP_MIDDLE),
	RC(SEND_LAST, 0, PL | VROCE_OP_LAST | ACK),
	UC(SEND_LAST, 0, PL | VROCE_OP_LAST | ACK),
	RC(SEND_LAST_WITH_IMMEDIATE, VROCE_HDR_IMMDT,
	   PL | VROCE_OP_LAST | ACK),
	UC(SEND_LAST_WITH_IMMEDIATE, VROCE_HDR_IMMDT,
	   PL | VROCE_OP_LAST | ACK),
	RC(SEND_ONLY, 0, PL | VROCE_OP_ONLY | ACK),
	UC(SEND_ONLY, 0, PL | VROCE_OP_ONLY | ACK),
	RC(SEND_ONLY_WITH_IMMEDIATE, VROCE_HDR_IMMDT,
	   PL | VROCE_OP_ONLY | ACK),
	UC(SEND_ONLY_WITH_IMMEDIATE, VROCE_HDR_IMMDT,
	   PL | VROCE_OP_ONLY | ACK),
	RC(RDMA_WRITE_FIRST, VROCE_HDR_RETH, PL | VROCE_OP_FIRST),
	UC(RDMA_WRITE_FIRST, VROCE_HDR_RETH, PL | VROCE_OP_FIRST),
	RC(RDMA_WRITE_MIDDLE, 0, PL | VROCE_OP_MIDDLE),
	UC(RDMA_WRITE_MIDDLE, 0, PL | VROCE_OP_MIDDLE),
	RC(RDMA_WRITE_LAST, 0, PL | VROCE_OP_LAST | ACK),
	UC(RDMA_WRITE_LAST, 0, PL | VROCE_OP_LAST | ACK),
	RC(RDMA_WRITE_LAST_WITH_IMMEDIATE, VROCE_HDR_IMMDT,
	   PL | VROCE_OP_LAST | ACK),
	UC(RDMA_WRITE_LAST_WITH_IMMEDIATE, VROCE_HDR_IMMDT,
	   PL | VROCE_OP_LAST | ACK),
	RC(RDMA_WRITE_ONLY, VROCE_HDR_RETH, PL | VROCE_OP_ONLY | ACK),
	UC(RDMA_WRITE_ONLY, VROCE_HDR_RETH, PL | VROCE_OP_ONLY | ACK),
	RC(RDMA_WRITE_ONLY_WITH_IMMEDIATE,
	   VROCE_HDR_RETH | VROCE_HDR_IMMDT, PL | VROCE_OP_ONLY | ACK),
	UC(RDMA_WRITE_ONLY_WITH_IMMEDIATE,
	   VROCE_HDR_RETH | VROCE_HDR_IMMDT, PL | VROCE_OP_ONLY | ACK),

	OP(RC_RDMA_READ_REQUEST, VROCE_HDR_RETH,
	   VROCE_OP_ONLY | ACK | VROCE_OP_REQUEST, VROCE_QPT_RC),
	OP(RC_RDMA_READ_RESPONSE_FIRST, VROCE_HDR_AETH,
	   PL | VROCE_OP_FIRST | RESP, VROCE_QPT_RC),
	OP(RC_RDMA_READ_RESPONSE_MIDDLE, 0,
	   PL | VROCE_OP_MIDDLE | RESP, VROCE_QPT_RC),
	OP(RC_RDMA_READ_RESPONSE_LAST, VROCE_HDR_AETH,
	   PL | VROCE_OP_LAST | RESP, VROCE_QPT_RC),
	OP(RC_RDMA_READ_RESPONSE_ONLY, VROCE_HDR_AETH,
	   PL | VROCE_OP_ONLY | RESP, VROCE_QPT_RC),
	OP(RC_ACKNOWLEDGE, VROCE_HDR_AETH, VROCE_OP_ONLY | RESP, VROCE_QPT_RC),
	OP(RC_ATOMIC_ACKNOWLEDGE, VROCE_HDR_AETH | VROCE_HDR_ATMACK,
	   VROCE_OP_ONLY | RESP, VROCE_QPT_RC),
	OP(RC_COMPARE_SWAP, VROCE_HDR_ATMETH,
	   VROCE_OP_ONLY | ACK | VROCE_OP_REQUEST, VROCE_QPT_RC),
	OP(RC_FETCH_ADD, VROCE_HDR_ATMETH,
	   VROCE_OP_ONLY | ACK | VROCE_OP_REQUEST, VROCE_QPT_RC),
	[VROCE_OPCODE_RC_ATOMIC_WRITE] = {
		.name = "RC_ATOMIC_WRITE", .hdrs = VROCE_HDR_RETH,
		.flags = PL | VROCE_OP_ONLY | ACK | VROCE_OP_REQUEST,
		.qp_types = VROCE_QPT_RC,
	},
	[VROCE_OPCODE_RC_FLUSH] = {
		.name = "RC_FLUSH", .hdrs = VROCE_HDR_FETH | VROCE_HDR_RETH,
		.flags = VROCE_OP_ONLY | ACK | VROCE_OP_REQUEST,
		.qp_types = VROCE_QPT_RC,
	},
	OP(RC_SEND_LAST_WITH_INVALIDATE, VROCE_HDR_IETH,
	   PL | VROCE_OP_LAST | ACK | VROCE_OP_REQUEST, VROCE_QPT_RC),
	OP(RC_SEND_ONLY_WITH_INVALIDATE, VROCE_HDR_IETH,
	   PL | VROCE_OP_ONLY | ACK | VROCE_OP_REQUEST, VROCE_QPT_RC),

	OP(UD_SEND_ONLY, VROCE_HDR_DETH,
	   PL | VROCE_OP_ONLY | VROCE_OP_REQUEST, VROCE_QPT_UD),
	OP(UD_SEND_ONLY_WITH_IMMEDIATE, VROCE_HDR_DETH | VROCE_HDR_IMMDT,
	   PL | VROCE_OP_ONLY | VROCE_OP_REQUEST, VROCE_QPT_UD),

	[VROCE_OPCODE_CNP] = {
		.name = "CNP", .hdrs = VROCE_HDR_CNP_PAD,
		.flags = VROCE_OP_ONLY, .qp_types = VROCE_QPT_NONE,
	},
};

static const u8 vroce_ext_hdr_bytes[VROCE_HDR_NUM] = {
	[ilog2(VROCE_HDR_DETH)] = VROCE_DETH_BYTES,
	[ilog2(VROCE_HDR_FETH)] = VROCE_FETH_BYTES,
	[ilog2(VROCE_HDR_RETH)] = VROCE_RETH_BYTES,
	[ilog2(VROCE_HDR_AETH)] = VROCE_AETH_BYTES,
	[ilog2(VROCE_HDR_ATMACK)] = VROCE_ATMACK_BYTES,
	[ilog2(VROCE_HDR_ATMETH)] = VROCE_ATMETH_BYTES,
	[ilog2(VROCE_HDR_IMMDT)] = VROCE_IMMDT_BYTES,
	[ilog2(VROCE_HDR_IETH)] = VROCE_IETH_BYTES,
	[ilog2(VROCE_HDR_CNP_PAD)] = VROCE_CNP_PAD_BYTES,
};

static inline void vroce_opcode_build_checks(void)
{
	BUILD_BUG_ON(sizeof(struct vroce_bth) != VROCE_BTH_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_reth) != VROCE_RETH_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_aeth) != VROCE_AETH_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_atmeth) != VROCE_ATMETH_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_atmack) != VROCE_ATMACK_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_immdt) != VROCE_IMMDT_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_ieth) != VROCE_IETH_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_deth) != VROCE_DETH_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_feth) != VROCE_FETH_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_cnp_pad) != VROCE_CNP_PAD_BYTES);
	BUILD_BUG_ON(sizeof(struct vroce_grh) != VROCE_GRH_BYTES);
	BUILD_BUG_ON(ARRAY_SIZE(vroce_opcodes) != 256);
	BUILD_BUG_ON(VROCE_OPCODE_CNP != 0x81);
	BUILD_BUG_ON(ARRAY_SIZE(vroce_ext_hdr_bytes) != VROCE_HDR_NUM);
}

/**
 * vroce_ext_hdr_len - size of one extension header
 * @hdr: a single enum vroce_ext_hdr bit
 *
 * Return: its size in bytes.
 */
unsigned int vroce_ext_hdr_len(enum vroce_ext_hdr hdr)
{
	vroce_opcode_build_checks();
	return vroce_ext_hdr_bytes[ilog2(hdr)];
}

/**
 * vroce_opcode_hdr_len - bytes of the extension headers of an opcode
 * @op: an entry of vroce_opcodes[]
 *
 * Return: the sum of the sizes of the headers in @op->hdrs.
 */
unsigned int vroce_opcode_hdr_len(const struct vroce_opcode_info *op)
{
	unsigned long hdrs = op->hdrs;
	unsigned int bit, len = 0;

	for_each_set_bit(bit, &hdrs, VROCE_HDR_NUM)
		len += vroce_ext_hdr_bytes[bit];
	return len;
}

/**
 * vroce_ext_hdr_offset - where an extension header starts after the BTH
 * @op: an entry of vroce_opcodes[]
 * @hdr: a single enum vroce_ext_hdr bit, present in @op->hdrs
 *
 * Return: the sum of the sizes of the headers of @op that precede @hdr.
 */
unsigned int vroce_ext_hdr_offset(const struct vroce_opcode_info *op,
				  enum vroce_ext_hdr hdr)
{
	unsigned long hdrs = op->hdrs & (hdr - 1);
	unsigned int bit, len = 0;

	for_each_set_bit(bit, &hdrs, VROCE_HDR_NUM)
		len += vroce_ext_hdr_bytes[bit];
	return len;
}

/**
 * vroce_opcode_by_name - find an opcode by its table name
 * @name: e.g. "RC_SEND_ONLY" or "CNP"
 *
 * Return: the opcode (0-255) or -ENOENT.
 */
int vroce_opcode_by_name(const char *name)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(vroce_opcodes); i++)
		if (vroce_opcodes[i].name && !strcmp(vroce_opcodes[i].name, name))
			return i;
	return -ENOENT;
}
