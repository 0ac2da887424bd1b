/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCE v1's network header: the Global Route Header (IBTA vol. 1 chapter
 * 8, Annex A16), shaped like an IPv6 header; "Wire format" in
 * Documentation/infiniband/vroce.rst. The transport headers are in pkt.h.
 *
 * Who may call what: anyone; everything here is a type or a pure function
 * of its arguments.
 */
#ifndef _VROCE_GRH_H
#define _VROCE_GRH_H

#include "pkt.h"

/* Global Route Header (RoCEv1), 40 bytes, shaped like an IPv6 header. */
struct vroce_grh {
	__be32 vtf;		/* IPVer(4), TClass(8), FlowLabel(20) */
	__be16 paylen;
	u8 next_hdr;
	u8 hop_limit;
	u8 sgid[16];
	u8 dgid[16];
} __packed;

#define VROCE_GRH_VER		GENMASK(31, 28)
#define VROCE_GRH_TCLASS	GENMASK(27, 20)
#define VROCE_GRH_FLOW		GENMASK(19, 0)

static inline __be32 vroce_grh_vtf(u8 tclass, u32 flow_label)
{
	return cpu_to_be32(FIELD_PREP(VROCE_GRH_VER, VROCE_GRH_IPVER) |
			   FIELD_PREP(VROCE_GRH_TCLASS, tclass) |
			   FIELD_PREP(VROCE_GRH_FLOW, flow_label & VROCE_GRH_FLOW));
}

static inline unsigned int vroce_grh_ver(const struct vroce_grh *grh)
{
	return FIELD_GET(VROCE_GRH_VER, be32_to_cpu(grh->vtf));
}

#endif /* _VROCE_GRH_H */
