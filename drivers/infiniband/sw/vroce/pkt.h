/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCE wire format: the IBA transport headers as they appear on the wire
 * (big-endian, checked by sparse through the __be types), their field
 * accessors and the protocol constants (IBTA vol. 1 chapter 9, Annex A16
 * and A17; "Wire format" in Documentation/infiniband/vroce.rst), and PSN
 * arithmetic.
 *
 * Who may call what: anyone; everything here is a constant, a type or a
 * pure function of its arguments.
 */
#ifndef _VROCE_PKT_H
#define _VROCE_PKT_H

#include <linux/bitfield.h>
#include <linux/types.h>
#include <asm/byteorder.h>

/* How a packet is framed below the BTH. */
enum vroce_net_type {
	VROCE_NET_V1,		/* Ethernet, ethertype 0x8915, GRH */
	VROCE_NET_V2_IPV4,	/* Ethernet, IPv4, UDP 4791 */
	VROCE_NET_V2_IPV6,	/* Ethernet, IPv6, UDP 4791 */
};

/* Framing constants. The RoCEv2 UDP port is in net.h. */
enum vroce_wire_const {
	VROCE_ETHERTYPE_ROCE_V1 = 0x8915,	/* ETH_P_IBOE */
	VROCE_GRH_NEXT_HDR_BTH = 0x1b,
	VROCE_GRH_IPVER = 6,
	VROCE_BTH_TVER = 0,
	VROCE_ICRC_BYTES = 4,
	VROCE_PAD_ALIGN = 4,
	VROCE_DEFAULT_PKEY = 0xffff,
	/* P_Key low 15 bits: the key; bit 15: full membership */
	VROCE_PKEY_KEY_MASK = 0x7fff,
	VROCE_QPN_MASK = 0xffffff,
	VROCE_PSN_MASK = 0xffffff,
	VROCE_GSI_QKEY = 0x80010000,
};

/* Base Transport Header, 12 bytes. */
struct vroce_bth {
	u8 opcode;
	u8 flags;		/* SE, MigReq, PadCnt, TVer */
	__be16 pkey;
	__be32 qpn;		/* FECN, BECN, Resv6a, DestQP */
	__be32 apsn;		/* AckReq, Resv7, PSN */
} __packed;

#define VROCE_BTH_SE		BIT(7)
#define VROCE_BTH_MIGREQ	BIT(6)
#define VROCE_BTH_PADCNT	GENMASK(5, 4)
#define VROCE_BTH_TVER_MASK	GENMASK(3, 0)
#define VROCE_BTH_FECN		BIT(31)
#define VROCE_BTH_BECN		BIT(30)
#define VROCE_BTH_DESTQP	GENMASK(23, 0)
#define VROCE_BTH_ACKREQ	BIT(31)
#define VROCE_BTH_PSN		GENMASK(23, 0)
/* Byte 4 of the BTH (FECN, BECN, Resv6a) is masked out of the ICRC. */
#define VROCE_BTH_RESV8A_OFFSET	4

static inline unsigned int vroce_bth_pad(const struct vroce_bth *bth)
{
	return FIELD_GET(VROCE_BTH_PADCNT, bth->flags);
}

static inline unsigned int vroce_bth_tver(const struct vroce_bth *bth)
{
	return FIELD_GET(VROCE_BTH_TVER_MASK, bth->flags);
}

static inline u32 vroce_bth_dqpn(const struct vroce_bth *bth)
{
	return FIELD_GET(VROCE_BTH_DESTQP, be32_to_cpu(bth->qpn));
}

static inline u32 vroce_bth_psn(const struct vroce_bth *bth)
{
	return FIELD_GET(VROCE_BTH_PSN, be32_to_cpu(bth->apsn));
}

static inline bool vroce_bth_ackreq(const struct vroce_bth *bth)
{
	return FIELD_GET(VROCE_BTH_ACKREQ, be32_to_cpu(bth->apsn));
}

static inline bool vroce_bth_becn(const struct vroce_bth *bth)
{
	return FIELD_GET(VROCE_BTH_BECN, be32_to_cpu(bth->qpn));
}

/* RDMA Extended Transport Header, 16 bytes. */
struct vroce_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

/* ACK Extended Transport Header, 4 bytes: syndrome(8) and MSN(24). */
struct vroce_aeth {
	__be32 smsn;
} __packed;

#define VROCE_AETH_SYNDROME	GENMASK(31, 24)
#define VROCE_AETH_MSN		GENMASK(23, 0)

enum vroce_aeth_type {
	VROCE_AETH_ACK = 0x00,
	VROCE_AETH_RNR_NAK = 0x20,
	VROCE_AETH_NAK = 0x60,
	VROCE_AETH_TYPE_MASK = 0xe0,
	VROCE_AETH_ACK_UNLIMITED = 0x1f,
	VROCE_AETH_NAK_PSN_SEQ_ERR = 0x60,
	VROCE_AETH_NAK_INVALID_REQ = 0x61,
	VROCE_AETH_NAK_REM_ACC_ERR = 0x62,
	VROCE_AETH_NAK_REM_OP_ERR = 0x63,
};

static inline u8 vroce_aeth_syndrome(const struct vroce_aeth *aeth)
{
	return FIELD_GET(VROCE_AETH_SYNDROME, be32_to_cpu(aeth->smsn));
}

static inline u32 vroce_aeth_msn(const struct vroce_aeth *aeth)
{
	return FIELD_GET(VROCE_AETH_MSN, be32_to_cpu(aeth->smsn));
}

static inline __be32 vroce_aeth_pack(u8 syndrome, u32 msn)
{
	return cpu_to_be32(FIELD_PREP(VROCE_AETH_SYNDROME, syndrome) |
			   FIELD_PREP(VROCE_AETH_MSN, msn & VROCE_AETH_MSN));
}

/* Atomic Extended Transport Header, 28 bytes. */
struct vroce_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __packed;

/* Atomic ACK Extended Transport Header, 8 bytes. */
struct vroce_atmack {
	__be64 orig;
} __packed;

/* Immediate data, 4 bytes, opaque. */
struct vroce_immdt {
	__be32 imm;
} __packed;

/* Invalidate Extended Transport Header, 4 bytes. */
struct vroce_ieth {
	__be32 rkey;
} __packed;

/* Datagram Extended Transport Header, 8 bytes: Q_Key, reserved(8), SrcQP. */
struct vroce_deth {
	__be32 qkey;
	__be32 sqpn;
} __packed;

#define VROCE_DETH_SQPN		GENMASK(23, 0)

static inline u32 vroce_deth_sqpn(const struct vroce_deth *deth)
{
	return FIELD_GET(VROCE_DETH_SQPN, be32_to_cpu(deth->sqpn));
}

/*
 * FLUSH Extended Transport Header, 4 bytes: reserved(26), the selectivity
 * level (2) and the placement type (4), a bit mask.
 */
struct vroce_feth {
	__be32 bits;
} __packed;

#define VROCE_FETH_SEL		GENMASK(5, 4)
#define VROCE_FETH_PLT		GENMASK(3, 0)

/* Placement types: where the data must have reached when FLUSH answers. */
enum vroce_flush_type {
	VROCE_FLUSH_GLOBAL = BIT(0),		/* global visibility */
	VROCE_FLUSH_PERSISTENT = BIT(1),	/* persistence */
};

/* Selectivity levels: what the FLUSH covers. */
enum vroce_flush_level {
	VROCE_FLUSH_RANGE = 0,	/* the RETH's range of the rkey's region */
	VROCE_FLUSH_MR = 1,	/* the whole region the rkey names */
};

static inline __be32 vroce_feth_pack(u8 type, u8 level)
{
	return cpu_to_be32(FIELD_PREP(VROCE_FETH_SEL, level) |
			   FIELD_PREP(VROCE_FETH_PLT, type));
}

static inline u8 vroce_feth_type(const struct vroce_feth *feth)
{
	return FIELD_GET(VROCE_FETH_PLT, be32_to_cpu(feth->bits));
}

static inline u8 vroce_feth_level(const struct vroce_feth *feth)
{
	return FIELD_GET(VROCE_FETH_SEL, be32_to_cpu(feth->bits));
}

/* The 16 reserved (zero) bytes that follow the BTH of a CNP. */
struct vroce_cnp_pad {
	u8 reserved[16];
} __packed;

/* Header sizes, checked against the structs in opcode.c. */
enum vroce_hdr_len {
	VROCE_BTH_BYTES = 12,
	VROCE_RETH_BYTES = 16,
	VROCE_AETH_BYTES = 4,
	VROCE_ATMETH_BYTES = 28,
	VROCE_ATMACK_BYTES = 8,
	VROCE_IMMDT_BYTES = 4,
	VROCE_IETH_BYTES = 4,
	VROCE_DETH_BYTES = 8,
	VROCE_FETH_BYTES = 4,
	VROCE_CNP_PAD_BYTES = 16,
	VROCE_GRH_BYTES = 40,
};

/* 24-bit PSN order: < 0 if @a is before @b, in half-space terms. */
static inline int vroce_psn_cmp(u32 a, u32 b)
{
	return (s32)((a - b) << 8);
}

static inline u32 vroce_psn_add(u32 psn, u32 n)
{
	return (psn + n) & VROCE_PSN_MASK;
}

#endif /* _VROCE_PKT_H */
