/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _VROCE_OPCODE_H
#define _VROCE_OPCODE_H

#include <linux/bits.h>
#include <linux/types.h>
#include <rdma/ib_pack.h>

/* The BTH opcode of a Congestion Notification Packet (Annex A17). */
#define VROCE_OPCODE_CNP (IB_OPCODE_CNP | 0x01)
/* RC RDMA ATOMIC WRITE (IBTA 1.5 A19); ib_pack.h has it from 6.2 on only. */
#define VROCE_OPCODE_RC_ATOMIC_WRITE (IB_OPCODE_RC | 0x1d)
/* RC RDMA FLUSH (IBTA 1.5 A19); ib_pack.h has it from 6.2 on only. */
#define VROCE_OPCODE_RC_FLUSH (IB_OPCODE_RC | 0x1c)

/*
 * Headers that may follow the BTH. The bit order is the order on the wire:
 * a packet carrying several of them carries them in ascending bit order.
 */
enum vroce_ext_hdr {
	VROCE_HDR_DETH = BIT(0),
	VROCE_HDR_FETH = BIT(1),
	VROCE_HDR_RETH = BIT(2),
	VROCE_HDR_AETH = BIT(3),
	VROCE_HDR_ATMACK = BIT(4),
	VROCE_HDR_ATMETH = BIT(5),
	VROCE_HDR_IMMDT = BIT(6),
	VROCE_HDR_IETH = BIT(7),
	VROCE_HDR_CNP_PAD = BIT(8),
	VROCE_HDR_NUM = 9,
};

enum vroce_op_flags {
	VROCE_OP_PAYLOAD = BIT(0),	/* may carry payload */
	VROCE_OP_FIRST = BIT(1),	/* position in a multi-packet message */
	VROCE_OP_MIDDLE = BIT(2),
	VROCE_OP_LAST = BIT(3),
	VROCE_OP_ONLY = BIT(4),
	VROCE_OP_ACKREQ = BIT(5),	/* AckReq set by default (RC requests) */
	VROCE_OP_REQUEST = BIT(6),	/* sent by a requester */
	VROCE_OP_RESPONSE = BIT(7),	/* sent by a responder */
};

/* Bits of qp_types: which QP types may use the opcode. */
enum vroce_op_qpt {
	VROCE_QPT_RC = BIT(0),
	VROCE_QPT_UC = BIT(1),
	VROCE_QPT_UD = BIT(2),
	VROCE_QPT_NONE = BIT(3),	/* not QP traffic: CNP */
};

/**
 * struct vroce_opcode_info - what a BTH opcode means on the wire
 * @name: the ib_pack.h name without "IB_OPCODE_"; NULL if not supported
 * @hdrs: enum vroce_ext_hdr bits of the headers after the BTH
 * @flags: enum vroce_op_flags
 * @qp_types: enum vroce_op_qpt
 */
struct vroce_opcode_info {
	const char *name;
	u16 hdrs;
	u8 flags;
	u8 qp_types;
};

/* opcode.c APIs: */
extern const struct vroce_opcode_info vroce_opcodes[256];
unsigned int vroce_ext_hdr_len(enum vroce_ext_hdr hdr);
unsigned int vroce_opcode_hdr_len(const struct vroce_opcode_info *op);
unsigned int vroce_ext_hdr_offset(const struct vroce_opcode_info *op,
				  enum vroce_ext_hdr hdr);
int vroce_opcode_by_name(const char *name);

static inline const struct vroce_opcode_info *vroce_opcode(u8 opcode)
{
	return vroce_opcodes[opcode].name ? &vroce_opcodes[opcode] : NULL;
}

#endif /* _VROCE_OPCODE_H */
