# SPDX-License-Identifier: GPL-2.0
"""The RoCE wire format (IBTA Annex A16/A17), written from the
specification independently of the driver's C code: constants, the ICRC,
checksums, BTHs and whole RoCE v1 and v2 packets, and where a received
frame's headers are.
"""

import struct
import zlib


ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_IBOE = 0x8915
ROCE_PORT = 4791
# The EtherType of each framing: RoCE v1, RoCE v2 over IPv4 and over IPv6.
ETHERTYPE = {"v1": ETH_P_IBOE, "v4": ETH_P_IP, "v6": ETH_P_IPV6}
SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 1 << 4
CLONE_NEWNET = 0x40000000

# BTH opcodes (IBTA vol. 1 chapter 9) and the extension header bytes after
# the BTH.
OPCODES = {
    "RC_SEND_MIDDLE": (0x01, 0),
    "RC_SEND_ONLY": (0x04, 0),
    "RC_SEND_ONLY_WITH_IMMEDIATE": (0x05, 4),
    "RC_RDMA_WRITE_ONLY": (0x0A, 16),
    "RC_ACKNOWLEDGE": (0x11, 4),
    "RC_COMPARE_SWAP": (0x13, 28),
    "UC_SEND_ONLY": (0x24, 0),
    "UD_SEND_ONLY": (0x64, 8),
    "UD_SEND_ONLY_WITH_IMMEDIATE": (0x65, 12),
    "CNP": (0x81, 16),
}


def icrc(kind, l3):
    """ICRC of a packet from its L3 header up to, not including, the ICRC.

    kind: "v1" (GRH), "v4" (IPv4 + UDP) or "v6" (IPv6 + UDP).
    """
    b = bytearray(l3)
    if kind == "v4":
        ihl = (b[0] & 0x0F) * 4
        b[1] = 0xFF                 # TOS
        b[8] = 0xFF                 # TTL
        b[10:12] = b"\xff\xff"      # header checksum
        b[ihl + 6:ihl + 8] = b"\xff\xff"    # UDP checksum
        bth = ihl + 8
    else:
        b[0] |= 0x0F                # traffic class, high nibble
        b[1:4] = b"\xff\xff\xff"    # traffic class low nibble, flow label
        b[7] = 0xFF                 # hop limit
        bth = 40
        if kind == "v6":
            b[46:48] = b"\xff\xff"  # UDP checksum
            bth = 48
    b[bth + 4] = 0xFF               # FECN, BECN, Resv6a
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF


def append_icrc(kind, l3):
    return l3 + struct.pack("<I", icrc(kind, l3))




def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def bth(opcode, dqpn, psn, pad=0, tver=0, pkey=0xFFFF, ackreq=False):
    return struct.pack("!BBHII", opcode, (pad << 4) | tver, pkey,
                       dqpn & 0xFFFFFF,
                       (0x80000000 if ackreq else 0) | (psn & 0xFFFFFF))


def roce_body(opcode, paylen, **kw):
    """BTH, zeroed extension headers, pattern payload and pad."""
    code, ext = OPCODES[opcode]
    pad = -paylen % 4
    kw.setdefault("pad", pad)
    hdrs = kw.pop("hdrs", None) or bytes(ext)
    return (bth(code, kw.pop("dqpn", 0x11), kw.pop("psn", 0), **kw) +
            hdrs + bytes(i & 0xFF for i in range(paylen)) + bytes(pad))


def frame_v2(kind, src, dst, body, tclass=0, ttl=64, corrupt_icrc=False,
             udp_len_delta=0):
    """IPv4/IPv6 + UDP + body + ICRC; returns the L3 bytes."""
    udp_len = 8 + len(body) + 4
    if kind == "v4":
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, tclass, 20 + udp_len, 0,
                         0x4000, ttl, 17, 0, src.packed, dst.packed)
        ip = ip[:10] + struct.pack("!H", csum16(ip)) + ip[12:]
    else:
        ip = struct.pack("!IHBB16s16s", (6 << 28) | (tclass << 20),
                         udp_len, 17, ttl, src.packed, dst.packed)
    udp = struct.pack("!HHHH", 0xC000, ROCE_PORT, udp_len + udp_len_delta, 0)
    pkt = bytearray(append_icrc(kind, ip + udp + body))
    if corrupt_icrc:
        pkt[-1] ^= 0x01
    if kind == "v6":
        pseudo = (src.packed + dst.packed +
                  struct.pack("!IxxxB", udp_len, 17))
        c = csum16(pseudo + bytes(pkt[40:])) or 0xFFFF
        pkt[46:48] = struct.pack("!H", c)
    return bytes(pkt)


def frame_v1(sgid, dgid, body, corrupt_icrc=False, paylen_delta=0,
             next_hdr=0x1B):
    paylen = len(body) + 4
    grh = struct.pack("!IHBB16s16s", 6 << 28, paylen + paylen_delta,
                      next_hdr, 64, sgid.packed, dgid.packed)
    pkt = bytearray(append_icrc("v1", grh + body))
    if corrupt_icrc:
        pkt[-1] ^= 0x01
    return bytes(pkt)




def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def eth_header(dmac, smac, ethertype, vlan=None):
    """An Ethernet header, 802.1Q-tagged with VLAN ID vlan if given; MAC
    addresses as ip(8) prints them."""
    tag = b"" if vlan is None else struct.pack("!HH", ETH_P_8021Q, vlan)
    return mac_bytes(dmac) + mac_bytes(smac) + tag + \
        struct.pack("!H", ethertype)


def is_roce(fr):
    et = struct.unpack("!H", fr[12:14])[0]
    off = 14
    if et == ETH_P_8021Q:
        et = struct.unpack("!H", fr[16:18])[0]
        off = 18
    if et == ETH_P_IBOE:
        return "v1", off
    if et == ETH_P_IP and fr[off + 9] == 17:
        ihl = (fr[off] & 0xF) * 4
        if struct.unpack("!H", fr[off + ihl + 2:off + ihl + 4])[0] == ROCE_PORT:
            return "v4", off
    if et == ETH_P_IPV6 and fr[off + 6] == 17:
        if struct.unpack("!H", fr[off + 42:off + 44])[0] == ROCE_PORT:
            return "v6", off
    return None, off


def calc_sport(fl, lqpn, rqpn):
    """rdma_get_udp_sport(): flow label, or the symmetric label of the QPNs."""
    if not fl:
        v = lqpn * rqpn
        v ^= v >> 20
        v ^= v >> 40
        fl = v & 0xFFFFF
    return ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000


def l3_packet(kind, l3):
    """The packet without Ethernet padding, from its IP/GRH length."""
    if kind == "v4":
        return l3[:struct.unpack("!H", l3[2:4])[0]]
    return l3[:40 + struct.unpack("!H", l3[4:6])[0]]


def bth_offset(kind, pkt):
    if kind == "v4":
        return (pkt[0] & 0xF) * 4 + 8
    return 48 if kind == "v6" else 40


def dscp_of(kind, pkt):
    if kind == "v4":
        return pkt[1] >> 2
    return (struct.unpack("!I", pkt[:4])[0] >> 22) & 0x3F
