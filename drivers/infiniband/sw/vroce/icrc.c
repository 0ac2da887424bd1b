// SPDX-License-Identifier: GPL-2.0
/*
 * The Invariant CRC of RoCEv1 and RoCEv2 packets (IBTA vol. 1
 * chapter 7, Annex A16 and A17).
 *
 * CRC-32 (the Ethernet polynomial, reflected, initial value and final XOR
 * all-ones) over: 8 bytes of 0xff standing for the masked LRH, the L3 header
 * (GRH, IPv4 or IPv6) and for RoCEv2 the UDP header with their variant
 * fields set to all-ones, the BTH with byte 4 (FECN, BECN, Resv6a) set to
 * 0xff, then everything after the BTH up to the ICRC as it is. The result
 * goes on the wire least significant byte first.
 *
 * The CRC runs through the kernel crypto API's "crc32" (crc32-pclmul on
 * x86, several times faster than the table-driven crc32_le() of the
 * kernels we support) when it is there and agrees with crc32_le() on a test
 * vector at load time; otherwise, and for short runs, through crc32_le().
 * The shash descriptor context of every "crc32" implementation is the
 * running CRC (a u32), which is how a run is continued from a given value.
 * vroce_icrc_tfm is set once at module load, before any device exists.
 */

#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/string.h>
#include <linux/udp.h>

#include "icrc.h"

/* Below this, the table-driven crc32_le() is as fast as the shash. */
#define VROCE_CRC_FAST_MIN 128

static struct crypto_shash *vroce_icrc_tfm;

/* CRC-32 update, like crc32_le(), by the fastest implementation there is. */
static u32 vroce_crc32(u32 crc, const void *p, size_t len)
{
	struct crypto_shash *tfm = vroce_icrc_tfm;

	if (tfm && len >= VROCE_CRC_FAST_MIN) {
		SHASH_DESC_ON_STACK(desc, tfm);
		u32 *ctx = shash_desc_ctx(desc);

		desc->tfm = tfm;
		*ctx = crc;
		if (!crypto_shash_update(desc, p, len))
			return *ctx;
	}
	return crc32_le(crc, p, len);
}

/* Does @tfm continue a CRC from a given value exactly as crc32_le() does? */
static bool vroce_icrc_tfm_ok(struct crypto_shash *tfm)
{
	static const u32 seed = 0x12345678;
	u8 buf[2 * VROCE_CRC_FAST_MIN + 3];
	u32 want, got;
	unsigned int i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = i * 7 + 1;
	want = crc32_le(seed, buf + 1, sizeof(buf) - 1);
	vroce_icrc_tfm = tfm;
	got = vroce_crc32(seed, buf + 1, sizeof(buf) - 1);
	vroce_icrc_tfm = NULL;
	return got == want;
}

/**
 * vroce_icrc_init - pick the CRC-32 implementation (module load)
 *
 * Never fails: without a usable "crc32" shash, crc32_le() does the work.
 */
void vroce_icrc_init(void)
{
	struct crypto_shash *tfm = crypto_alloc_shash("crc32", 0, 0);

	if (IS_ERR(tfm))
		return;
	if (crypto_shash_descsize(tfm) != sizeof(u32) ||
	    !vroce_icrc_tfm_ok(tfm)) {
		crypto_free_shash(tfm);
		return;
	}
	vroce_icrc_tfm = tfm;
	pr_debug("ICRC by %s\n", crypto_shash_driver_name(tfm));
}

void vroce_icrc_exit(void)
{
	crypto_free_shash(vroce_icrc_tfm);
	vroce_icrc_tfm = NULL;
}

/* Variant header bytes are copied here and masked: IPv4 with options + UDP + BTH. */
#define VROCE_ICRC_PSEUDO_MAX (60 + sizeof(struct udphdr) + VROCE_BTH_BYTES)

static unsigned int mask_ipv4(u8 *p)
{
	struct iphdr *ip4h = (struct iphdr *)p;

	ip4h->tos = 0xff;
	ip4h->ttl = 0xff;
	ip4h->check = (__force __sum16)0xffff;
	return ip4h->ihl * 4;
}

/* The IPv6 header and the GRH share this layout and these masks. */
static unsigned int mask_ipv6(u8 *p)
{
	struct ipv6hdr *ip6h = (struct ipv6hdr *)p;

	ip6h->priority = 0xf;
	memset(ip6h->flow_lbl, 0xff, sizeof(ip6h->flow_lbl));
	ip6h->hop_limit = 0xff;
	return sizeof(*ip6h);
}

static unsigned int vroce_l3_len(enum vroce_net_type type, const u8 *l3)
{
	if (type == VROCE_NET_V2_IPV4)
		return (l3[0] & 0x0f) * 4;
	return VROCE_GRH_BYTES;
}

/**
 * vroce_icrc - compute the ICRC of a packet held in one linear buffer
 * @type: the framing of the packet
 * @l3: the GRH (RoCEv1) or IP header (RoCEv2); for IPv4 its IHL must have
 *      been checked to be at least 5
 * @len: bytes from @l3 up to, not including, the ICRC; the caller has
 *       checked that the L3 header, UDP header and BTH fit
 *
 * Return: the ICRC, to be stored with put_unaligned_le32().
 */
u32 vroce_icrc(enum vroce_net_type type, const void *l3, unsigned int len)
{
	static const u8 masked_lrh[8] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};
	u8 pseudo[VROCE_ICRC_PSEUDO_MAX];
	unsigned int hlen, l3_len;
	u32 crc;

	l3_len = vroce_l3_len(type, l3);
	hlen = l3_len + VROCE_BTH_BYTES;
	if (type != VROCE_NET_V1)
		hlen += sizeof(struct udphdr);
	if (WARN_ON_ONCE(hlen > len || hlen > sizeof(pseudo)))
		return 0;

	memcpy(pseudo, l3, hlen);
	if (type == VROCE_NET_V2_IPV4)
		mask_ipv4(pseudo);
	else
		mask_ipv6(pseudo);
	if (type != VROCE_NET_V1) {
		struct udphdr *udph = (struct udphdr *)(pseudo + l3_len);

		udph->check = (__force __sum16)0xffff;
	}
	pseudo[hlen - VROCE_BTH_BYTES + VROCE_BTH_RESV8A_OFFSET] = 0xff;

	crc = crc32_le(~0U, masked_lrh, sizeof(masked_lrh));
	crc = crc32_le(crc, pseudo, hlen);
	crc = vroce_crc32(crc, (const u8 *)l3 + hlen, len - hlen);
	return ~crc;
}
