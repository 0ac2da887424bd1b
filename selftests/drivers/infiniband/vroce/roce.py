#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""RoCE frames for the vroce wire tests (wire.sh), written from the RoCE
wire format (IBTA Annex A16/A17) independently of the driver's C code.

  roce.py tx ...   send packets with the device's debugfs xmit_test file,
                   capture them on the peer veth, check every field and the
                   ICRC, append them to a pcap file for tshark
  roce.py rx ...   send good and bad frames to the device from the peer
                   and check that exactly the expected counter moves
  roce.py gid ...  print the index of a GID in the device's GID table
  roce.py decode   check a capture of RC traffic (any RoCEv2 peers) with
                   tshark and our own ICRC
  roce.py live ... send bad frames at live RC and UD QPs (inject_test holds
                   them) and check each is dropped and counted, changes
                   nothing else, and the QPs keep working

Run as root. The peer side runs in another network namespace: its sockets
are opened there with setns(2), everything else runs where we are.
"""

import argparse
import ctypes
import ipaddress
import os
import socket
import struct
import subprocess
import sys
import time
import zlib

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_IBOE = 0x8915
ROCE_PORT = 4791
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

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("# FAIL: " + msg)


def expect(cond, msg):
    if not cond:
        fail(msg)
    return cond


# ---------------------------------------------------------------- ICRC


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


# ---------------------------------------------------------------- building


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


# ---------------------------------------------------------------- system


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


class in_netns:
    """with in_netns(name): ... runs in /run/netns/name (sockets stay there)."""

    def __init__(self, ns):
        self.ns = ns

    def __enter__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.back = os.open("/proc/self/ns/net", os.O_RDONLY)
        if self.ns:
            fd = os.open("/run/netns/" + self.ns, os.O_RDONLY)
            self._setns(fd)
            os.close(fd)

    def __exit__(self, *exc):
        self._setns(self.back)
        os.close(self.back)

    def _setns(self, fd):
        if self.libc.setns(fd, CLONE_NEWNET):
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))


def packet_socket(ns, ifname):
    with in_netns(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                          socket.htons(ETH_P_ALL))
        s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        s.bind((ifname, 0))
    s.settimeout(0.2)
    return s


def recv_frame(s):
    """One frame with its VLAN tag put back in, or None."""
    try:
        data, anc, _, addr = s.recvmsg(65600, socket.CMSG_SPACE(20))
    except socket.timeout:
        return None
    if addr[2] == socket.PACKET_OUTGOING:
        return b""
    for level, typ, cdata in anc:
        if level != SOL_PACKET or typ != PACKET_AUXDATA:
            continue
        status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", cdata[:20])
        if status & TP_STATUS_VLAN_VALID:
            tag = struct.pack("!HH", tpid or ETH_P_8021Q, tci)
            data = data[:12] + tag + data[12:]
    return data


def counters(dev):
    d = "/sys/class/infiniband/%s/ports/1/hw_counters" % dev
    out = {}
    for name in os.listdir(d):
        with open(os.path.join(d, name)) as f:
            out[name] = int(f.read())
    return out


def wait_counters(dev, before, want, timeout=10):
    """Wait until every counter in want moved by its amount; check the rest
    did not move. Returns (ok, what moved, the last snapshot: the next
    case's before)."""
    deadline = time.monotonic() + timeout
    while True:
        # hw_counters are cached by ib_core for 10 ms
        time.sleep(0.02)
        now = counters(dev)
        delta = {k: now[k] - before.get(k, 0) for k in now}
        if all(delta.get(k, 0) >= v for k, v in want.items()) or \
                time.monotonic() > deadline:
            break
    time.sleep(0.05)
    now = counters(dev)
    delta = {k: now[k] - before.get(k, 0) for k in now}
    moved = {k: v for k, v in delta.items() if v}
    return moved == want, moved, now


def pcap_append(path, frames):
    new = not os.path.exists(path)
    with open(path, "ab") as f:
        if new:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            t = time.time()
            f.write(struct.pack("<IIII", int(t), int(t % 1 * 1e6),
                                len(fr), len(fr)))
            f.write(fr)


def pcap_read(path):
    """The frames of a classic little-endian pcap of Ethernet (dumpcap -P)."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, _, _, _, _, link = struct.unpack("<IHHiIII", data[:24])
    if magic not in (0xA1B2C3D4, 0xA1B23C4D) or link != 1:
        raise ValueError("%s: not a little-endian Ethernet pcap" % path)
    frames, off = [], 24
    while off + 16 <= len(data):
        caplen, wirelen = struct.unpack("<II", data[off + 8:off + 16])
        frames.append(data[off + 16:off + 16 + caplen])
        if caplen != wirelen:
            fail("frame %d truncated: %d of %d bytes captured" %
                 (len(frames), caplen, wirelen))
        off += 16 + caplen
    return frames


# ---------------------------------------------------------------- tx


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


def check_v2_headers(kind, l3, a, paylen, opcode):
    ext = OPCODES[opcode][1]
    roce = 12 + ext + paylen + (-paylen % 4) + 4
    if kind == "v4":
        ver_ihl, tos, tot, _, frag, ttl, proto = struct.unpack(
            "!BBHHHBB", l3[:10])
        expect(ver_ihl == 0x45, "IPv4 version/IHL 0x%x" % ver_ihl)
        expect(tos == a.tclass, "TOS %#x, want %#x" % (tos, a.tclass))
        expect(tos >> 2 == a.tclass >> 2, "DSCP")
        expect(ttl == a.hop_limit, "TTL %d" % ttl)
        expect(frag == 0x4000, "DF set, no fragment: %#x" % frag)
        expect(tot == 28 + roce, "IPv4 total length %d" % tot)
        expect(csum16(l3[:20]) == 0, "IPv4 header checksum")
        expect(l3[12:16] == ipaddress.ip_address(a.sip).packed, "IPv4 saddr")
        expect(l3[16:20] == ipaddress.ip_address(a.dip).packed, "IPv4 daddr")
        udp = l3[20:28]
    else:
        vtf, plen, nxt, hop = struct.unpack("!IHBB", l3[:8])
        expect(vtf >> 28 == 6, "IPv6 version")
        expect((vtf >> 20) & 0xFF == a.tclass, "IPv6 traffic class")
        expect(vtf & 0xFFFFF == a.flow_label, "IPv6 flow label %#x" %
               (vtf & 0xFFFFF))
        expect(hop == a.hop_limit, "hop limit")
        expect(plen == 8 + roce, "IPv6 payload length")
        expect(l3[8:24] == ipaddress.ip_address(a.sip).packed, "IPv6 saddr")
        expect(l3[24:40] == ipaddress.ip_address(a.dip).packed, "IPv6 daddr")
        udp = l3[40:48]
        pseudo = l3[8:40] + struct.pack("!IxxxB", 8 + roce, 17)
        expect(csum16(pseudo + l3[40:]) == 0, "UDP/IPv6 checksum")
    sport, dport, ulen, ucsum = struct.unpack("!HHHH", udp)
    expect(dport == ROCE_PORT, "UDP dport %d" % dport)
    expect(sport == calc_sport(a.flow_label, a.sqpn, a.dqpn),
           "UDP sport %#x" % sport)
    expect(ulen == 8 + roce, "UDP length %d" % ulen)
    if kind == "v4":
        expect(ucsum == 0, "UDP/IPv4 checksum 0")


def check_v1_headers(l3, a, paylen, opcode):
    roce = 12 + OPCODES[opcode][1] + paylen + (-paylen % 4) + 4
    vtf, plen, nxt, hop = struct.unpack("!IHBB", l3[:8])
    expect(vtf >> 28 == 6, "GRH IPVer")
    expect((vtf >> 20) & 0xFF == a.tclass, "GRH traffic class")
    expect(vtf & 0xFFFFF == a.flow_label, "GRH flow label")
    expect(nxt == 0x1B, "GRH next header %#x" % nxt)
    expect(hop == a.hop_limit, "GRH hop limit")
    expect(plen == roce, "GRH payload length %d" % plen)
    expect(l3[8:24] == ipaddress.ip_address(a.sgid).packed, "GRH SGID")
    expect(l3[24:40] == ipaddress.ip_address(a.dgid).packed, "GRH DGID")


def check_tx_frame(fr, a, paylen):
    kind, off = is_roce(fr)
    expect(kind == a.kind, "framing %s, want %s" % (kind, a.kind))
    if kind != a.kind:
        return
    expect(fr[:6] == mac_bytes(a.dmac), "destination MAC")
    expect(fr[6:12] == mac_bytes(a.smac), "source MAC")
    if a.vlan is not None:
        expect(off == 18, "VLAN tag present")
        tci = struct.unpack("!H", fr[14:16])[0]
        expect(tci & 0xFFF == a.vlan, "VLAN id %d" % (tci & 0xFFF))
        expect(tci >> 13 == a.sl, "PCP %d, want %d" % (tci >> 13, a.sl))
    else:
        expect(off == 14, "no VLAN tag")
    l3 = fr[off:]
    if kind == "v1":
        check_v1_headers(l3, a, paylen, a.opcode)
        b = 40
    else:
        check_v2_headers(kind, l3, a, paylen, a.opcode)
        b = (20 if kind == "v4" else 40) + 8
    code, ext = OPCODES[a.opcode]
    pad = -paylen % 4
    end = b + 12 + ext + paylen + pad + 4
    expect(len(l3) >= end, "frame holds the whole packet")
    l3 = l3[:end]
    op, flags, pkey, qpn, apsn = struct.unpack("!BBHII", l3[b:b + 12])
    expect(op == code, "BTH opcode %#x" % op)
    expect(flags == pad << 4, "BTH SE/M/PadCnt/TVer %#x" % flags)
    expect(pkey == 0xFFFF, "BTH P_Key")
    expect(qpn == a.dqpn, "BTH DestQP %#x" % qpn)
    expect(apsn & 0xFFFFFF == a.psn, "BTH PSN")
    pl = l3[b + 12 + ext:b + 12 + ext + paylen]
    expect(pl == bytes(i & 0xFF for i in range(paylen)), "payload pattern")
    got = struct.unpack("<I", l3[-4:])[0]
    want = icrc(kind, l3[:-4])
    expect(got == want, "ICRC %08x, computed %08x" % (got, want))


def cmd_tx(a):
    s = packet_socket(a.ns, a.ifname)
    before = counters(a.dev)
    frames = []
    nbytes = 0
    xt = "/sys/kernel/debug/vroce/%s/xmit_test" % a.dev
    sent = 0
    for a.opcode, paylen in [(o, n) for o in a.opcodes for n in a.lens]:
        line = ("sgid_index=%d dgid=%s dmac=%s dqpn=%d opcode=%s len=%d "
                "psn=%d sqpn=%d tclass=%d hop_limit=%d flow_label=%d sl=%d\n"
                % (a.sgid_index, a.dgid, a.dmac, a.dqpn, a.opcode, paylen,
                   a.psn, a.sqpn, a.tclass, a.hop_limit, a.flow_label, a.sl))
        sent += 1
        with open(xt, "w") as f:
            f.write(line)
        deadline = time.monotonic() + 10
        fr = None
        while time.monotonic() < deadline:
            fr = recv_frame(s)
            if fr and is_roce(fr)[0]:
                break
            fr = None
        if not expect(fr is not None, "len %d: no frame captured" % paylen):
            continue
        n = len(FAILURES)
        check_tx_frame(fr, a, paylen)
        print("# %s len %d: %d-byte frame %s" % (a.opcode, paylen, len(fr),
              "ok" if n == len(FAILURES) else "BAD"))
        frames.append(fr)
        off = 18 if a.vlan is not None else 14
        nbytes += len(fr) - off
    pcap_append(a.pcap, frames)
    ok, moved, _ = wait_counters(a.dev, before, {"sent_pkts": sent,
                                                 "sent_bytes": nbytes})
    expect(ok, "counters moved %s" % moved)


# ---------------------------------------------------------------- rx


def rx_cases(kind):
    """(name, builder kwargs, expected counter deltas) for one framing."""
    good = {"rcvd_pkts": 1, "rcvd_no_qp": 1}
    cases = [
        ("good RC_SEND_ONLY 5 bytes", dict(op="RC_SEND_ONLY", paylen=5),
         dict(good)),
        ("good UD_SEND_ONLY 256 bytes", dict(op="UD_SEND_ONLY", paylen=256),
         dict(good)),
        # A CNP for no QP is also one the reaction point ignores.
        ("good CNP", dict(op="CNP", paylen=0),
         dict(good, rp_cnp_ignored=1)),
        ("limited-member P_Key 0x7fff",
         dict(op="RC_SEND_ONLY", paylen=4, pkey=0x7FFF), dict(good)),
        ("bad ICRC", dict(op="RC_SEND_ONLY", paylen=8, corrupt=True),
         {"rx_icrc_encapsulated": 1}),
        ("truncated BTH", dict(truncate=8), {"rcvd_malformed": 1}),
        ("TVer 1", dict(op="RC_SEND_ONLY", paylen=4, tver=1),
         {"rcvd_tver_err": 1}),
        ("unknown opcode 0x1f", dict(op="RC_SEND_ONLY", paylen=4, code=0x1F),
         {"rcvd_opcode_err": 1}),
        ("pad 3 with 0 payload bytes", dict(op="RC_SEND_ONLY", paylen=0,
                                            pad=3),
         {"rcvd_malformed": 1}),
        ("payload not a multiple of 4", dict(op="RC_SEND_ONLY", paylen=4,
                                             extra=1),
         {"rcvd_malformed": 1}),
        ("payload on an ACK", dict(op="RC_ACKNOWLEDGE", paylen=4),
         {"rcvd_malformed": 1}),
        ("RETH cut short", dict(op="RC_RDMA_WRITE_ONLY", paylen=0, cut=8),
         {"rcvd_malformed": 1}),
        ("P_Key 0x1234", dict(op="RC_SEND_ONLY", paylen=4, pkey=0x1234),
         {"rcvd_pkey_err": 1}),
    ]
    if kind == "v1":
        cases += [
            ("GRH next header UDP", dict(op="RC_SEND_ONLY", paylen=4,
                                         next_hdr=0x11),
             {"rcvd_malformed": 1}),
            ("GRH payload length beyond the frame",
             dict(op="RC_SEND_ONLY", paylen=4, paylen_delta=64),
             {"rcvd_malformed": 1}),
        ]
    else:
        cases += [
            ("UDP length shorter than the BTH", dict(udp_short=True),
             {"rcvd_malformed": 1}),
        ]
    return cases


def rx_body(c):
    """c: the case; dqpn, psn and hdrs (the extension headers) if given."""
    if "truncate" in c:
        return bth(0x04, c.get("dqpn", 0x11), c.get("psn", 0))[:c["truncate"]]
    kw = {k: c[k] for k in ("pad", "tver", "pkey", "hdrs") if k in c}
    body = roce_body(c["op"], c["paylen"], dqpn=c.get("dqpn", 0x123),
                     psn=c.get("psn", 7), **kw)
    if "code" in c:
        body = bytes([c["code"]]) + body[1:]
    body += bytes(c.get("extra", 0))
    if "cut" in c:
        body = body[:-c["cut"]]
    return body


def rx_frame(a, c):
    if c.get("udp_short"):
        # A UDP datagram of 8 + 12 bytes: BTH but no room for an ICRC.
        body = bth(0x04, c.get("dqpn", 0x11), c.get("psn", 0))
        src = ipaddress.ip_address(a.sip)
        dst = ipaddress.ip_address(a.dip)
        l3 = frame_v2(a.kind, src, dst, body)[:-4]
        if a.kind == "v4":
            l3 = bytearray(l3)
            l3[2:4] = struct.pack("!H", len(l3))
            l3[24:26] = struct.pack("!H", len(l3) - 20)
            l3[10:12] = b"\0\0"
            l3[10:12] = struct.pack("!H", csum16(bytes(l3[:20])))
        else:
            l3 = bytearray(l3)
            l3[4:6] = struct.pack("!H", len(l3) - 40)
            l3[44:46] = struct.pack("!H", len(l3) - 40)
            l3[46:48] = b"\0\0"
            pseudo = l3[8:40] + struct.pack("!IxxxB", len(l3) - 40, 17)
            l3[46:48] = struct.pack("!H", csum16(bytes(pseudo + l3[40:])))
        return bytes(l3)
    body = rx_body(c)
    corrupt = c.get("corrupt", False)
    if a.kind == "v1":
        return frame_v1(ipaddress.ip_address(a.sip),
                        ipaddress.ip_address(a.dip), body, corrupt,
                        c.get("paylen_delta", 0), c.get("next_hdr", 0x1B))
    if "truncate" in c:
        # No room for an ICRC: send the datagram as it is.
        src = ipaddress.ip_address(a.sip)
        dst = ipaddress.ip_address(a.dip)
        return frame_v2_raw(a.kind, src, dst, body)
    return frame_v2(a.kind, ipaddress.ip_address(a.sip),
                    ipaddress.ip_address(a.dip), body, corrupt_icrc=corrupt)


def frame_v2_raw(kind, src, dst, payload):
    """IP + UDP around payload, no ICRC added."""
    udp_len = 8 + len(payload)
    if kind == "v4":
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0x4000,
                         64, 17, 0, src.packed, dst.packed)
        ip = ip[:10] + struct.pack("!H", csum16(ip)) + ip[12:]
        return ip + struct.pack("!HHHH", 0xC000, ROCE_PORT, udp_len, 0) + \
            payload
    ip = struct.pack("!IHBB16s16s", 6 << 28, udp_len, 17, 64, src.packed,
                     dst.packed)
    udp = struct.pack("!HHHH", 0xC000, ROCE_PORT, udp_len, 0) + payload
    pseudo = src.packed + dst.packed + struct.pack("!IxxxB", udp_len, 17)
    c = csum16(pseudo + udp) or 0xFFFF
    return ip + udp[:6] + struct.pack("!H", c) + udp[8:]


def cmd_rx(a):
    s = packet_socket(a.ns, a.ifname)
    et = {"v1": ETH_P_IBOE, "v4": ETH_P_IP, "v6": ETH_P_IPV6}[a.kind]
    eth = mac_bytes(a.dmac) + mac_bytes(a.smac)
    if a.vlan is not None:
        eth += struct.pack("!HH", ETH_P_8021Q, a.vlan)
    eth += struct.pack("!H", et)
    before = counters(a.dev)
    for name, c, want in rx_cases(a.kind):
        l3 = rx_frame(a, c)
        if "rcvd_pkts" in want:
            want["rcvd_bytes"] = len(l3)
        s.send(eth + l3)
        ok, moved, before = wait_counters(a.dev, before, want)
        print("# %s: %s, counters moved %s" %
              (name, "ok" if ok else "BAD", moved))
        expect(ok, "%s: want %s" % (name, want))


# ---------------------------------------------------------------- live

MALFORMED = {"rcvd_malformed": 1}
OPCODE_ERR = {"rcvd_opcode_err": 1}
# What the receive path passed on to a QP that then drops it (it counts in
# rcvd_pkts and rcvd_bytes first: vroce.rst, Counters).
PASSED = {"rcvd_pkts": 1}


def live_common(kind, op, paylen, hdrs=None):
    """Header validation failures at any QP (IBTA: malformed packets are
    silently dropped): exactly one counter moves."""
    base = dict(op=op, paylen=paylen)
    if hdrs:
        base["hdrs"] = hdrs
    cases = [
        ("bad ICRC", dict(base, corrupt=True), {"rx_icrc_encapsulated": 1}),
        ("TVer 1", dict(base, tver=1), {"rcvd_tver_err": 1}),
        ("P_Key 0x1234", dict(base, pkey=0x1234), {"rcvd_pkey_err": 1}),
        ("P_Key 0x0000", dict(base, pkey=0), {"rcvd_pkey_err": 1}),
        ("truncated BTH: DestQP, no PSN", dict(truncate=8), MALFORMED),
        ("pad 3 with 0 payload bytes", dict(base, paylen=0, pad=3),
         MALFORMED),
        ("payload not a multiple of 4", dict(base, extra=1), MALFORMED),
        ("unknown opcode 0x1f", dict(base, code=0x1F), OPCODE_ERR),
        ("RD opcode 0x44", dict(base, code=0x44), OPCODE_ERR),
        ("XRC opcode 0xa4", dict(base, code=0xA4), OPCODE_ERR),
        ("manufacturer opcode 0xe0", dict(base, code=0xE0), OPCODE_ERR),
    ]
    if kind == "v1":
        cases += [
            ("GRH next header UDP", dict(base, next_hdr=0x11), MALFORMED),
            ("GRH payload length beyond the frame",
             dict(base, paylen_delta=64), MALFORMED),
        ]
    else:
        cases += [
            ("BTH without an ICRC", dict(truncate=12), MALFORMED),
            ("UDP length shorter than BTH + ICRC", dict(udp_short=True),
             MALFORMED),
        ]
    return cases


def live_rc_cases(kind, q):
    """Frames at the live RC QP, at the PSN it expects next."""
    cases = live_common(kind, "RC_SEND_ONLY", 8) + [
        ("RETH cut short", dict(op="RC_RDMA_WRITE_ONLY", paylen=0, cut=8),
         MALFORMED),
        ("ImmDt cut short",
         dict(op="RC_SEND_ONLY_WITH_IMMEDIATE", paylen=0, cut=4), MALFORMED),
        ("AtomicETH cut short", dict(op="RC_COMPARE_SWAP", paylen=0, cut=8),
         MALFORMED),
        ("payload on an ACK", dict(op="RC_ACKNOWLEDGE", paylen=4), MALFORMED),
        ("reserved RC opcode 0x15", dict(op="RC_SEND_ONLY", paylen=8,
                                         code=0x15), OPCODE_ERR),
        # Valid headers of another transport: the QP drops them.
        ("UD SEND (with a DETH) at the RC QP",
         dict(op="UD_SEND_ONLY", paylen=8,
              hdrs=struct.pack("!II", q["qkey"], q["peer_ud_qpn"])),
         dict(PASSED, **OPCODE_ERR)),
        ("UC SEND at the RC QP", dict(op="UC_SEND_ONLY", paylen=8),
         dict(PASSED, **OPCODE_ERR)),
    ]
    return [(n, dict(c, dqpn=q["rc_qpn"], psn=q["rc_psn"]), w, "idle")
            for n, c, w in cases]


def live_ud_cases(kind, q):
    """Frames at the live UD QP: two good ones first (they are delivered:
    the frames reach the QP), then bad ones."""
    deth = struct.pack("!II", q["qkey"], q["peer_ud_qpn"])
    src = "%#x" % q["peer_ud_qpn"]
    cases = [
        ("good UD SEND 256 bytes: delivered",
         dict(op="UD_SEND_ONLY", paylen=256, hdrs=deth), PASSED,
         "ud_recv 256 " + src),
        ("limited-member P_Key 0x7fff: delivered",
         dict(op="UD_SEND_ONLY", paylen=20, hdrs=deth, pkey=0x7FFF), PASSED,
         "ud_recv 20 " + src),
    ]
    bad = live_common(kind, "UD_SEND_ONLY", 64, deth) + [
        ("wrong Q_Key",
         dict(op="UD_SEND_ONLY", paylen=64,
              hdrs=struct.pack("!II", q["qkey"] ^ 1, q["peer_ud_qpn"])),
         dict(PASSED, rcvd_qkey_err=1)),
        ("the GSI Q_Key at a UD QP",
         dict(op="UD_SEND_ONLY", paylen=64,
              hdrs=struct.pack("!II", 0x80010000, q["peer_ud_qpn"])),
         dict(PASSED, rcvd_qkey_err=1)),
        ("DETH cut short", dict(op="UD_SEND_ONLY", paylen=0, hdrs=deth,
                                cut=4), MALFORMED),
        ("ImmDt cut short", dict(op="UD_SEND_ONLY_WITH_IMMEDIATE", paylen=0,
                                 hdrs=deth + bytes(4), cut=4), MALFORMED),
        ("unknown UD opcode 0x7f", dict(op="UD_SEND_ONLY", paylen=64,
                                        hdrs=deth, code=0x7F), OPCODE_ERR),
        ("RC SEND at the UD QP", dict(op="RC_SEND_ONLY", paylen=8),
         dict(PASSED, **OPCODE_ERR)),
    ]
    cases += [(n, c, w, "idle") for n, c, w in bad]
    return [(n, dict(c, dqpn=q["ud_qpn"], psn=0), w, chk)
            for n, c, w, chk in cases]


class Peer:
    """inject_test: the QPs, and its commands."""

    def __init__(self, prog):
        self.p = subprocess.Popen([prog], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  universal_newlines=True)
        line = self.p.stdout.readline().strip()
        print("# inject_test: " + line)
        self.info = {}
        for kv in line.split():
            k, _, v = kv.partition("=")
            self.info[k] = int(v, 0) if v else None

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().strip()
        return line

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except OSError:
            pass
        return self.p.wait(timeout=60)


def live_send(a, s, eth, name, c, want):
    """Send one case's frame; True if exactly the counters in want moved."""
    before = counters(a.dev)
    l3 = rx_frame(a, c)
    want = dict(want)
    if "rcvd_pkts" in want:
        want["rcvd_bytes"] = len(l3)
    s.send(eth + l3)
    ok, moved, _ = wait_counters(a.dev, before, want)
    if ok:
        print("# %s %s: %s" % (a.kind, name, " ".join(
            "%s+%d" % kv for kv in sorted(moved.items()))))
    else:
        fail("%s %s: counters moved %s, want %s" % (a.kind, name, moved,
                                                     want))
    return ok


def live_group(a, s, peer, target, cases):
    n = len(FAILURES)
    et = {"v1": ETH_P_IBOE, "v4": ETH_P_IP, "v6": ETH_P_IPV6}[a.kind]
    eth = mac_bytes(a.dmac) + mac_bytes(a.smac) + struct.pack("!H", et)
    for name, c, want, check in cases:
        if live_send(a, s, eth, target + " " + name, c, want):
            reply = peer.ask(check)
            expect(reply == "ok", "%s %s %s: %s: %s" %
                   (a.kind, target, name, check, reply))
    print("RESULT %s %s: %d frames at the live %s QP" %
          ("ok" if n == len(FAILURES) else "fail", a.kind, len(cases),
           target))


def drain(s):
    while recv_frame(s) is not None:
        pass


def find_nak(s, dqpn, psn):
    """The AETH syndrome of an ACK to dqpn for psn seen on s, or None."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        fr = recv_frame(s)
        if not fr:
            continue
        kind, off = is_roce(fr)
        if kind != "v4":
            continue
        b = off + (fr[off] & 0xF) * 4 + 8
        op, _, _, qpn, apsn = struct.unpack("!BBHII", fr[b:b + 12])
        if op == 0x11 and qpn & 0xFFFFFF == dqpn and \
                apsn & 0xFFFFFF == psn:
            return fr[b + 12]
    return None


def live_seq_error(a, s, peer):
    """A request whose headers are valid but that is out of sequence (SEND
    MIDDLE with no message open) at the expected PSN is not malformed: it
    is an invalid request (IBTA class B), NAKed, and the QP goes to ERR.
    On a spare QP pair."""
    n = len(FAILURES)
    reply = peer.ask("seq_error").split()
    if expect(reply and reply[0] == "ok", "seq_error: %s" % reply):
        q = {k: int(v, 0) for k, _, v in
             (kv.partition("=") for kv in reply[1:])}
        drain(s)
        eth = mac_bytes(a.dmac) + mac_bytes(a.smac) + \
            struct.pack("!H", ETH_P_IP)
        # The NAK: IPv4 20 + UDP 8 + BTH 12 + AETH 4 + ICRC 4 bytes.
        want = {"nak_sent": 1, "sent_pkts": 1, "sent_bytes": 48}
        want.update(PASSED)
        c = dict(op="RC_SEND_MIDDLE", paylen=peer.info["mtu"],
                 dqpn=q["qpn"], psn=q["psn"])
        if live_send(a, s, eth, "SEND MIDDLE out of sequence", c, want):
            syn = find_nak(s, q["peer_qpn"], q["psn"])
            expect(syn == 0x61, "NAK syndrome %s, want 0x61 (invalid "
                   "request)" % (syn if syn is None else hex(syn)))
            reply = peer.ask("seq_check")
            expect(reply == "ok", "seq_check: %s" % reply)
    print("RESULT %s v4: an out-of-sequence SEND MIDDLE at the expected "
          "PSN is NAKed (invalid request), its QP goes to ERR" %
          ("ok" if n == len(FAILURES) else "fail"))


# RC opcodes of READs and their answers (IBTA 9.2 table 38).
RC_READ_REQUEST = 0x0C
RC_READ_RESPONSES = range(0x0D, 0x11)
RC_ACK = 0x11
AETH_ACK = 0x1F             # ACK, credits unlimited
AETH_PSN_SEQ_NAK = 0x60
AETH_RNR_NAK_10US = 0x21    # RNR NAK, timer code 1: 0.01 ms
AETH_REM_ACCESS_NAK = 0x62


def pattern(seed, i):
    """inject_test's pattern(): byte i of a buffer filled with seed."""
    return (i * 131 + seed * 7 + (i >> 8)) & 0xFF


def pattern_bytes(seed, off, n):
    return bytes(pattern(seed, i) for i in range(off, off + n))


def v4_send(a, s, body):
    eth = mac_bytes(a.dmac) + mac_bytes(a.smac) + struct.pack("!H", ETH_P_IP)
    s.send(eth + frame_v2("v4", ipaddress.ip_address(a.sip),
                          ipaddress.ip_address(a.dip), body))


def rc_frames(s, dqpn, opcodes, want, timeout):
    """Up to want RoCE v2 packets to dqpn with one of opcodes seen on s
    within timeout: (opcode, PSN, bytes after the BTH without pad)."""
    out, deadline = [], time.monotonic() + timeout
    while len(out) < want and time.monotonic() < deadline:
        fr = recv_frame(s)
        if not fr:
            continue
        kind, off = is_roce(fr)
        if kind != "v4":
            continue
        pkt = l3_packet(kind, fr[off:])
        b = bth_offset(kind, pkt)
        op, flags, _, qpn, psn = struct.unpack("!BBHII", pkt[b:b + 12])
        if qpn & 0xFFFFFF != dqpn or op not in opcodes:
            continue
        rest = pkt[b + 12:-4]
        out.append((op, psn & 0xFFFFFF, rest[:len(rest) - (flags >> 4 & 3)]))
    return out


def read_resp_body(dqpn, psn, k, n, data):
    """Response k of n of a READ, PSN psn, carrying data."""
    if n == 1:
        op = 0x10
    else:
        op = 0x0D if k == 0 else 0x0F if k == n - 1 else 0x0E
    aeth = b"" if op == 0x0E else struct.pack("!I", AETH_ACK << 24)
    pad = -len(data) % 4
    return bth(op, dqpn, psn, pad=pad) + aeth + data + bytes(pad)


def forge_read_resps(a, s, q, psn0, first, seed, mtu):
    """The READ's responses first..n-1, each with its bytes of the pattern."""
    n = -(-q["len"] // mtu)
    for k in range(first, n):
        data = pattern_bytes(seed, k * mtu, min(mtu, q["len"] - k * mtu))
        v4_send(a, s, read_resp_body(q["qpn"], (psn0 + k) & 0xFFFFFF, k, n,
                                     data))


def nak_in_read(a, s, peer, what, syndrome, seed):
    """One READ of several MTUs, its responder forged: a NAK with a PSN
    inside the READ's responses, then the responses from that PSN on. The
    READ must not complete successfully with misplaced bytes: it waits, and
    the full set of responses from its first PSN completes it exactly."""
    mtu = peer.info["mtu"]
    drain(s)
    reply = peer.ask("read_nak_post").split()
    if not expect(reply and reply[0] == "ok", "read_nak_post: %s" % reply):
        return
    q = {k: int(v, 0) for k, _, v in (kv.partition("=") for kv in reply[1:])}
    req = rc_frames(s, q["peer_qpn"], [RC_READ_REQUEST], 1, 10)
    if not expect(req, "%s: no READ request captured" % what):
        return
    psn0 = req[0][1]
    mid = (psn0 + 2) & 0xFFFFFF
    before = counters(a.dev)
    v4_send(a, s, bth(RC_ACK, q["qpn"], mid) +
            struct.pack("!I", syndrome << 24))
    time.sleep(0.05)
    forge_read_resps(a, s, q, psn0, 2, seed, mtu)
    reply = peer.ask("read_nak_check %d" % seed)
    moved = {k: v - before.get(k, 0) for k, v in counters(a.dev).items()
             if v != before.get(k, 0)}
    print("# %s at PSN %#x of a READ at %#x, responses from there: %s; "
          "counters %s" % (what, mid, psn0, reply, moved))
    if not expect(reply == "ok pending", "%s inside a READ: the READ %s" %
                  (what, reply)):
        return
    forge_read_resps(a, s, q, psn0, 0, seed, mtu)
    reply = peer.ask("read_nak_check %d" % seed)
    print("# then all its responses from PSN %#x: %s" % (psn0, reply))
    expect(reply == "ok done", "%s inside a READ, then all its responses: "
           "%s" % (what, reply))


def live_nak_in_read(a, s, peer):
    """A PSN sequence NAK and an RNR NAK inside a READ's response PSNs,
    which no responder sends (its expected PSN skips a READ's responses),
    must not move the requester into the READ without its data."""
    for what, syn, seed in [("PSN sequence NAK", AETH_PSN_SEQ_NAK, 31),
                            ("RNR NAK", AETH_RNR_NAK_10US, 32)]:
        n = len(FAILURES)
        nak_in_read(a, s, peer, what, syn, seed)
        print("RESULT %s v4: a %s inside a READ's response PSNs is "
              "ignored: no success with misplaced data" %
              ("ok" if n == len(FAILURES) else "fail", what))


def read_req_body(dqpn, psn, va, rkey, length):
    return bth(RC_READ_REQUEST, dqpn, psn) + struct.pack("!QII", va, rkey,
                                                           length)


class DupRead:
    """READ requests at the duplicate READ QP and its answers."""

    def __init__(self, a, s, peer, q):
        self.a, self.s, self.peer, self.q = a, s, peer, q
        self.mtu = peer.info["mtu"]

    def psn(self, k):
        return (self.q["psn"] + k) & 0xFFFFFF

    def send(self, psn, va, rkey, length):
        drain(self.s)
        self.before = counters(self.a.dev)
        v4_send(self.a, self.s, read_req_body(self.q["qpn"], psn, va, rkey,
                                              length))

    def moved(self, names):
        time.sleep(0.05)
        now = counters(self.a.dev)
        return {k: now.get(k, 0) - self.before.get(k, 0) for k in names}

    def served(self, name, psn, off, length, dup, rkey=None):
        """A READ (dup: a duplicate) of length bytes at va + off, PSN psn:
        its responses carry the bytes there, one path MTU each."""
        q = self.q
        self.send(psn, q["va"] + off, rkey or q["rkey"], length)
        n = -(-length // self.mtu) or 1
        got = rc_frames(self.s, q["peer_qpn"], RC_READ_RESPONSES, n, 5)
        ops = [0x10] if n == 1 else [0x0D] + [0x0E] * (n - 2) + [0x0F]
        ok = len(got) == n
        for k, (op, p, rest) in enumerate(got[:n]):
            data = pattern_bytes(q["seed"], off + k * self.mtu,
                                 min(self.mtu, length - k * self.mtu))
            body = rest if op == 0x0E else rest[4:]
            ok = ok and op == ops[k] and p == (psn + k) & 0xFFFFFF and \
                body == data
        moved = self.moved(["duplicate_request", "duplicate_request_dropped",
                            "rx_read_requests"])
        ok = ok and moved == {"duplicate_request": dup,
                              "duplicate_request_dropped": 0,
                              "rx_read_requests": 1 - dup}
        print("# %s: %d responses, PSNs %s: %s; %s" % (
            name, len(got), ",".join("%#x" % p for _, p, _ in got),
            "ok" if ok else "BAD", moved))
        expect(ok, "%s: responses %s, want %d from PSN %#x, counters %s" %
               (name, [(hex(o), hex(p), len(r)) for o, p, r in got], n, psn,
                moved))

    def dropped(self, name, psn, va, rkey, length):
        self.send(psn, va, rkey, length)
        got = rc_frames(self.s, self.q["peer_qpn"],
                        list(RC_READ_RESPONSES) + [RC_ACK], 1, 0.5)
        moved = self.moved(["duplicate_request",
                            "duplicate_request_dropped", "nak_sent"])
        ok = not got and moved == {"duplicate_request": 1,
                                   "duplicate_request_dropped": 1,
                                   "nak_sent": 0}
        print("# %s: %s; %s" % (name, "no answer" if not got else
                                "answered (PSN %#x)" % got[0][1], moved))
        expect(ok, "%s: answered %s, counters %s" % (
            name, [(hex(o), hex(p), len(r)) for o, p, r in got], moved))
        reply = self.peer.ask("dup_read_check")
        expect(reply == "ok", "%s: dup_read_check: %s" % (name, reply))


def live_dup_read(a, s, peer):
    """Duplicate READs at the responder (IBTA 9.7.5.1.3): replayed only as
    a recorded READ allows (its PSNs, its RETH or the tail of it from the
    duplicate's PSN), with the rkey checked again; others are dropped and
    counted, and the QP goes on."""
    n = len(FAILURES)
    reply = peer.ask("dup_read_setup").split()
    if expect(reply and reply[0] == "ok", "dup_read_setup: %s" % reply):
        q = {k: int(v, 0) for k, _, v in
             (kv.partition("=") for kv in reply[1:])}
        d = DupRead(a, s, peer, q)
        mtu, va = d.mtu, q["va"]
        ln = 3 * mtu + 100
        d.served("READ of 4 PSNs across the PSN wrap", d.psn(0), 0, ln, 0)
        d.served("its duplicate", d.psn(0), 0, ln, 1)
        d.served("its tail from its third PSN", d.psn(2), 2 * mtu,
                 ln - 2 * mtu, 1)
        d.dropped("PSN before the recorded READ", d.psn(-3), va,
                  q["rkey"], ln)
        d.dropped("RETH outside the recorded one", d.psn(0), va + 32768,
                  q["rkey"], ln)
        d.dropped("another valid rkey", d.psn(0), va, q["rkey2"], ln)
        d.dropped("tail at the wrong PSN", d.psn(1), va + 2 * mtu,
                  q["rkey"], ln - 2 * mtu)
        d.dropped("length above the maximum message size", d.psn(0), va,
                  q["rkey"], 0x80000001)
        d.served("a new READ after them", d.psn(4), 1000, 2 * mtu, 0)
        d.served("its duplicate tail", d.psn(5), 1000 + mtu, mtu, 1)
        # Recorded with rkey2, whose MR then goes: the replay rechecks it.
        d.served("a READ with rkey2", d.psn(6), 0, mtu, 0, q["rkey2"])
        reply = peer.ask("dup_read_dereg")
        expect(reply == "ok", "dup_read_dereg: %s" % reply)
        d.send(d.psn(6), va, q["rkey2"], mtu)
        syn = find_nak(s, q["peer_qpn"], d.psn(6))
        print("# its duplicate after the MR is deregistered: NAK %s" %
              (syn if syn is None else hex(syn)))
        expect(syn == AETH_REM_ACCESS_NAK, "duplicate READ of a "
               "deregistered MR: NAK %s, want 0x62" % syn)
        reply = peer.ask("dup_read_err")
        expect(reply == "ok", "dup_read_err: %s" % reply)
    print("RESULT %s v4: duplicate READs are replayed only as a recorded "
          "READ allows, the rest dropped and counted" %
          ("ok" if n == len(FAILURES) else "fail"))


# Opcodes of the frames sent at the QP in each state (IBTA 9.2 table 38).
RC_SEND_ONLY = 0x04
RC_WRITE_ONLY = 0x0A
RC_READ_RESP_ONLY = 0x10
RC_ATOMIC_ACK = 0x12
# Counters that frames a QP accepts may move.
ST_ACCEPTED = {"rcvd_pkts", "rcvd_bytes", "sent_pkts", "sent_bytes",
               "rx_write_requests", "rx_read_requests"}
ST_ORDER = ["reset", "init", "rtr", "rts", "sqd", "err", "reset"]


def state_frames(q, psn, seed):
    """Responses (ACK, NAKs, READ and atomic responses) that answer nothing
    the QP sent, then a WRITE of len bytes of pattern(seed) at va, a SEND
    of pattern(seed + 1) and a READ of va, at the PSNs the QP expects."""
    qpn, n = q["qpn"], q["len"]
    aeth = [struct.pack("!I", syn << 24) for syn in
            (AETH_ACK, AETH_PSN_SEQ_NAK, AETH_RNR_NAK_10US)]
    return [
        ("ACK", bth(RC_ACK, qpn, psn - 1) + aeth[0]),
        ("PSN sequence NAK", bth(RC_ACK, qpn, psn) + aeth[1]),
        ("RNR NAK", bth(RC_ACK, qpn, psn) + aeth[2]),
        ("READ response", bth(RC_READ_RESP_ONLY, qpn, psn) + aeth[0] +
         pattern_bytes(seed + 7, 0, n)),
        ("atomic ACK", bth(RC_ATOMIC_ACK, qpn, psn) + aeth[0] + bytes(8)),
        ("WRITE", bth(RC_WRITE_ONLY, qpn, psn) +
         struct.pack("!QII", q["va"], q["rkey"], n) +
         pattern_bytes(seed, 0, n)),
        ("SEND", bth(RC_SEND_ONLY, qpn, psn + 1, ackreq=True) +
         pattern_bytes(seed + 1, 0, n)),
        ("READ request", read_req_body(qpn, psn + 2, q["va"], q["rkey"],
                                       n)),
    ]


def state_round(a, s, peer, q, st, psn, seed):
    """The frames at the QP in state st, the WRITE's bytes pattern(seed
    + 10), the len bytes at va pattern(seed) until then. A QP in RESET, INIT or ERR drops
    them all (rcvd_qp_state_err), sends nothing and is not changed. One in
    RTR, RTS or SQD ignores the responses, executes the WRITE, SEND and
    READ (the READ returns the WRITE's bytes) and moves no error counter.
    Returns True if the QP accepted the requests."""
    frames = state_frames(q, psn, seed + 10)
    l3 = [frame_v2("v4", ipaddress.ip_address(a.sip),
                   ipaddress.ip_address(a.dip), body) for _, body in frames]
    eth = mac_bytes(a.dmac) + mac_bytes(a.smac) + struct.pack("!H", ETH_P_IP)
    active = st in ("rtr", "rts", "sqd")
    drain(s)
    before = counters(a.dev)
    for pkt in l3:
        s.send(eth + pkt)
    if active:
        got = rc_frames(s, q["peer_qpn"], [RC_READ_RESP_ONLY], 1, 10)
        time.sleep(0.1)
        now = counters(a.dev)
        moved = {k: v - before.get(k, 0) for k, v in now.items()
                 if v != before.get(k, 0)}
        want = pattern_bytes(seed + 10, 0, q["len"])
        expect(got and got[0][1] == (psn + 2) & 0xFFFFFF and
               got[0][2][4:] == want,
               "%s: READ response %s, want PSN %#x with the WRITE's bytes" %
               (st, [(hex(p), r.hex()) for _, p, r in got], psn + 2))
        expect(set(moved) <= ST_ACCEPTED and
               moved.get("rx_write_requests") == 1 and
               moved.get("rx_read_requests") == 1 and
               moved.get("rcvd_pkts") == len(l3),
               "%s: counters moved %s" % (st, moved))
        check = "state_check %s %d 1" % (st, seed + 10)
    else:
        want = {"rcvd_pkts": len(l3), "rcvd_bytes": sum(map(len, l3)),
                "rcvd_qp_state_err": len(l3)}
        ok, moved, _ = wait_counters(a.dev, before, want)
        expect(ok, "%s: counters moved %s, want %s" % (st, moved, want))
        got = rc_frames(s, q["peer_qpn"], range(0x100), 1, 0.3)
        expect(not got, "%s: the QP answered %s" %
               (st, [(hex(o), hex(p)) for o, p, _ in got]))
        check = "state_check %s %d 0" % (st, seed)
    print("# %s: %d frames: %s" % (st.upper(), len(l3), " ".join(
        "%s+%d" % kv for kv in sorted(moved.items()))))
    reply = peer.ask(check)
    expect(reply == "ok", "%s: %s: %s" % (st, check, reply))
    return active


def live_states(a, s, peer):
    """Frames at an RC QP in each state it can be in: RESET, INIT, RTR,
    RTS, SQD, ERR and RESET again (an RC QP has no SQE state)."""
    n = len(FAILURES)
    reply = peer.ask("state_setup").split()
    if expect(reply and reply[0] == "ok", "state_setup: %s" % reply):
        q = {k: int(v, 0) for k, _, v in
             (kv.partition("=") for kv in reply[1:])}
        psn, seed = q["psn"], q["seed"]
        for i, st in enumerate(ST_ORDER):
            if i:
                reply = peer.ask("state_to " + st)
                if not expect(reply == "ok", "state_to %s: %s" %
                              (st, reply)):
                    break
            if state_round(a, s, peer, q, st, psn, seed):
                psn, seed = (psn + 3) & 0xFFFFFF, seed + 10
            if n != len(FAILURES):
                break
    print("RESULT %s v4: frames at an RC QP in RESET, INIT, RTR, RTS, SQD "
          "and ERR: dropped and counted where it receives nothing, "
          "executed where it does" %
          ("ok" if n == len(FAILURES) else "fail"))


RC_SEND_FIRST = 0x00


def live_err_race(a, s, peer):
    """A SEND stops after its first packet, so the QP's responder holds a
    receive WQE; the QP then goes to ERR while a receive and a SEND are
    posted, the doorbell landing between the state change and the flushes
    (debugfs err_delay_us). Every receive completes flushed, in the order
    posted: the one the SEND took first."""
    n = len(FAILURES)
    reply = peer.ask("err_race_setup").split()
    if expect(reply and reply[0] == "ok", "err_race_setup: %s" % reply):
        q = {k: int(v, 0) for k, _, v in
             (kv.partition("=") for kv in reply[1:])}
        before = counters(a.dev)["rcvd_pkts"]
        v4_send(a, s, bth(RC_SEND_FIRST, q["qpn"], q["psn"]) +
                pattern_bytes(5, 0, peer.info["mtu"]))
        deadline = time.monotonic() + 10
        while counters(a.dev)["rcvd_pkts"] == before and \
                time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        reply = peer.ask("err_race")
        print("# SEND FIRST at %#x, then ERR with a receive and a SEND "
              "posted meanwhile: %s" % (q["qpn"], reply))
        expect(reply == "ok", "err_race: %s" % reply)
    print("RESULT %s v4: a QP going to ERR while receives are posted "
          "flushes them in order, the one a half-received SEND holds "
          "first" % ("ok" if n == len(FAILURES) else "fail"))


def cmd_live(a):
    s = packet_socket(a.ns, a.ifname)
    peer = Peer(a.prog)
    if not expect(peer.info.get("rc_qpn"), "inject_test did not start"):
        return
    addr = {"v4": (a.sip, a.dip), "v6": (a.sip6, a.dip6),
            "v1": (a.sip6, a.dip6)}
    expect(peer.ask("idle") == "ok", "not idle before any frame")
    for a.kind in a.kinds:
        a.sip, a.dip = addr[a.kind]
        live_group(a, s, peer, "RC", live_rc_cases(a.kind, peer.info))
        live_group(a, s, peer, "UD", live_ud_cases(a.kind, peer.info))
    n = len(FAILURES)
    reply = peer.ask("traffic")
    expect(reply == "ok", "traffic: %s" % reply)
    print("RESULT %s the same QPs then carry RC SEND, WRITE and READ both "
          "ways and UD SEND both ways, byte for byte" %
          ("ok" if n == len(FAILURES) else "fail"))
    a.kind, a.sip, a.dip = "v4", addr["v4"][0], addr["v4"][1]
    live_nak_in_read(a, s, peer)
    live_dup_read(a, s, peer)
    live_states(a, s, peer)
    live_err_race(a, s, peer)
    live_seq_error(a, s, peer)
    expect(peer.close() == 0, "inject_test failed")


def cmd_gid(a):
    """Print the index of the GID of type a.kind for a.sip on a.ndev."""
    port = "/sys/class/infiniband/%s/ports/1" % a.dev
    want = ipaddress.ip_address(a.sip)
    if want.version == 4:
        want = ipaddress.ip_address("::ffff:" + a.sip)
    gtype = "IB/RoCE v1" if a.kind == "v1" else "RoCE v2"
    for i in range(128):
        try:
            with open("%s/gids/%d" % (port, i)) as f:
                gid = ipaddress.ip_address(f.read().strip())
            with open("%s/gid_attrs/types/%d" % (port, i)) as f:
                t = f.read().strip()
            with open("%s/gid_attrs/ndevs/%d" % (port, i)) as f:
                nd = f.read().strip()
        except OSError:
            continue
        if gid == want and t == gtype and nd == a.ifname:
            print(i)
            return
    fail("no %s GID for %s on %s" % (gtype, want, a.ifname))


# ---------------------------------------------------------------- decode

# BTH opcodes of the RC operations, by class (IBTA 9.2 table 38).
RC_CLASSES = {
    "send": range(0x00, 0x06),
    "write": range(0x06, 0x0C),
    "read_request": [0x0C],
    "read_response": range(0x0D, 0x11),
    "ack": [0x11],
    "atomic_ack": [0x12],
    "atomic": [0x13, 0x14],
    "cnp": [0x81],
}
# What a perftest run of each kind must show, and may show besides.
RC_TRAFFIC = {
    "write": (["write", "ack"], []),
    "read": (["read_request", "read_response"], ["ack"]),
    "send": (["send", "ack"], []),
    "atomic": (["atomic", "atomic_ack"], ["ack"]),
    "cnp": (["cnp"], []),
}
# Payload is test data: keep tshark's heuristic ULP dissectors off it.
TSHARK_ULPS = ["rpcordma", "infiniband.eoib", "smc", "smb_direct",
               "nvme-rdma", "lnet", "iser", "infiniband_sdp", "fcoib"]
PI_WARN = 0x00600000


def rc_class(opcode):
    for name, codes in RC_CLASSES.items():
        if opcode in codes:
            return name
    return "opcode %#04x" % opcode


def tshark_fields(path):
    cmd = ["tshark", "-o", "udp.check_checksum:TRUE", "-r", path,
           "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
           "-E", "aggregator=,"]
    for p in TSHARK_ULPS:
        cmd += ["--disable-protocol", p]
    for f in ["frame.number", "frame.protocols", "infiniband.bth.opcode",
              "_ws.malformed", "_ws.expert.severity",
              "infiniband.aeth.syndrome", "infiniband.bth.destqp",
              "infiniband.bth.psn"]:
        cmd += ["-e", f]
    out = subprocess.run(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, check=True)
    return [ln.split("\t") for ln in out.stdout.decode().splitlines()]


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


def check_cnp(i, kind, pkt, bth0):
    """IBTA A17.9.3: BTH with BECN, 16 reserved zero bytes, ICRC; DSCP 48
    (np_cnp_dscp's default)."""
    b = pkt[bth0:]
    expect(len(b) == 12 + 16 + 4, "frame %d: CNP of %d bytes after the "
           "BTH's start, not 32" % (i, len(b)))
    expect(b[4] == 0x40, "frame %d: BTH byte 4 %#04x, not BECN alone" %
           (i, b[4]))
    expect(b[12:28] == bytes(16), "frame %d: CNP reserved bytes not zero" % i)
    expect(dscp_of(kind, pkt) == 48, "frame %d: DSCP %d, not 48" %
           (i, dscp_of(kind, pkt)))


def tshark_check(path, opcodes):
    """tshark reads every frame as InfiniBand with the opcode read here from
    the bytes, nothing malformed or worth a warning; returns the NAK and RNR
    NAK counts."""
    rows = tshark_fields(path)
    expect(len(rows) == len(opcodes), "tshark read %d frames of %d" %
           (len(rows), len(opcodes)))
    naks = {"NAK": 0, "RNR NAK": 0}
    for (num, protos, opcode, malformed, sev, syn, qpn, psn), raw in \
            zip(rows, opcodes):
        if not expect("infiniband" in protos.split(":"),
                      "frame %s is %s" % (num, protos)):
            continue
        expect(opcode and int(opcode, 0) == raw,
               "frame %s: tshark opcode %s, %#04x in the frame" %
               (num, opcode, raw))
        expect(not malformed, "frame %s malformed" % num)
        worst = max([int(x) for x in sev.split(",") if x] or [0])
        expect(worst < PI_WARN, "frame %s: expert severity %#x" % (num, worst))
        if syn and (int(syn, 0) >> 5) & 3 == 3:
            naks["NAK"] += 1
        elif syn and (int(syn, 0) >> 5) & 3 == 1:
            naks["RNR NAK"] += 1
    return naks


def cmd_decode(a):
    """A capture of one RC perftest run (or of CNPs): every frame is RoCE,
    its opcodes are those of the operation, and every ICRC is right
    (computed here, tshark does not); a CNP is laid out as IBTA says. Then,
    unless --no-tshark, tshark decodes every frame as InfiniBand with
    nothing malformed or worth a warning."""
    frames = pcap_read(a.pcap)
    if not expect(frames, "no frame captured"):
        return
    seen, opcodes, cnp_qpns = {}, [], set()
    requests, resent = set(), 0
    for i, fr in enumerate(frames, 1):
        kind, off = is_roce(fr)
        if not expect(kind, "frame %d is not RoCE" % i):
            continue
        pkt = l3_packet(kind, fr[off:])
        got = struct.unpack("<I", pkt[-4:])[0]
        want = icrc(kind, pkt[:-4])
        expect(got == want, "frame %d: ICRC %08x, computed %08x" %
               (i, got, want))
        bth0 = bth_offset(kind, pkt)
        opcode = pkt[bth0]
        opcodes.append(opcode)
        cls = rc_class(opcode)
        seen[cls] = seen.get(cls, 0) + 1
        qpn = struct.unpack("!I", pkt[bth0 + 4:bth0 + 8])[0] & 0xFFFFFF
        psn = struct.unpack("!I", pkt[bth0 + 8:bth0 + 12])[0] & 0xFFFFFF
        if cls == "cnp":
            check_cnp(i, kind, pkt, bth0)
            expect(psn == 0, "frame %d: CNP PSN %#x, not 0" % (i, psn))
            cnp_qpns.add(qpn)
        if cls in ("send", "write", "read_request", "atomic"):
            resent += (qpn, psn) in requests
            requests.add((qpn, psn))
    must, may = RC_TRAFFIC[a.traffic]
    for cls in must:
        expect(cls in seen, "no %s frame" % cls)
    for cls in seen:
        expect(cls in must + may, "unexpected %s frames" % cls)
    if cnp_qpns:
        print("# CNPs to DestQP %s" % ", ".join(
            "%#x" % q for q in sorted(cnp_qpns)))
        expect(len(cnp_qpns) == 1, "CNPs to more than one QP")
    naks = tshark_check(a.pcap, opcodes) if a.tshark else None
    print("# %d frames: %s; %s; %d requests resent" % (
        len(frames), ", ".join("%s %d" % kv for kv in sorted(seen.items())),
        "%d NAK, %d RNR NAK" % (naks["NAK"], naks["RNR NAK"]) if naks
        else "tshark not run", resent))


def cmd_fields(a):
    """One line per RoCE frame of a capture, for the shell to count:
    source address, VLAN ID and PCP ("-" untagged), DSCP, ECN, BTH opcode
    (decimal)."""
    for fr in pcap_read(a.pcap):
        kind, off = is_roce(fr)
        if not kind:
            continue
        vid = pcp = "-"
        if off == 18:
            tci = struct.unpack("!H", fr[14:16])[0]
            vid, pcp = tci & 0xFFF, tci >> 13
        pkt = l3_packet(kind, fr[off:])
        if kind == "v4":
            src, ecn = socket.inet_ntop(socket.AF_INET, pkt[12:16]), pkt[1] & 3
        else:
            src = socket.inet_ntop(socket.AF_INET6, pkt[8:24])
            ecn = (struct.unpack("!I", pkt[:4])[0] >> 20) & 3
        print(src, vid, pcp, dscp_of(kind, pkt), ecn,
              pkt[bth_offset(kind, pkt)])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["tx", "rx", "gid", "decode", "fields",
                                   "live"])
    p.add_argument("--dev", help="vroce device")
    p.add_argument("--ns", help="the peer's netns")
    p.add_argument("--ifname",
                   help="the peer's netdev (gid: the GID's netdev)")
    p.add_argument("--kind", choices=["v1", "v4", "v6"])
    p.add_argument("--traffic", choices=sorted(RC_TRAFFIC),
                   help="decode: the perftest run captured")
    p.add_argument("--dmac")
    p.add_argument("--smac")
    p.add_argument("--sip", help="source IP (tx: the SGID's address)")
    p.add_argument("--dip", help="destination IP")
    p.add_argument("--sgid", help="RoCEv1 SGID as an IPv6 address")
    p.add_argument("--dgid", help="DGID as xmit_test takes it")
    p.add_argument("--sgid-index", type=int)
    p.add_argument("--pcap")
    p.add_argument("--no-tshark", dest="tshark", action="store_false",
                   help="decode: raw checks only")
    p.add_argument("--opcode", dest="opcodes", default=["RC_SEND_ONLY"],
                   type=lambda s: s.split(","), help="tx: comma-separated")
    p.add_argument("--lens", type=lambda s: [int(x) for x in s.split(",")],
                   default=[0])
    p.add_argument("--dqpn", type=lambda s: int(s, 0), default=0x123456)
    p.add_argument("--sqpn", type=lambda s: int(s, 0), default=0x11)
    p.add_argument("--psn", type=lambda s: int(s, 0), default=0xABCDEF)
    p.add_argument("--tclass", type=lambda s: int(s, 0), default=0)
    p.add_argument("--hop-limit", type=int, default=64)
    p.add_argument("--flow-label", type=lambda s: int(s, 0), default=0)
    p.add_argument("--sl", type=int, default=0)
    p.add_argument("--vlan", type=int)
    p.add_argument("--prog", help="live: inject_test")
    p.add_argument("--kinds", type=lambda s: s.split(","),
                   default=["v4", "v6", "v1"], help="live: framings")
    p.add_argument("--sip6", help="live: the peer's IPv6 address (v6, v1)")
    p.add_argument("--dip6", help="live: the device's IPv6 address")
    a = p.parse_args()
    need = ["pcap", "traffic"] if a.cmd == "decode" else ["dev", "ifname",
                                                          "kind"]
    if a.cmd == "fields":
        need = ["pcap"]
    if a.cmd == "live":
        need = ["dev", "ifname", "prog", "dmac", "smac", "sip", "dip",
                "sip6", "dip6"]
    for opt in need:
        if getattr(a, opt) is None:
            p.error("%s needs --%s" % (a.cmd, opt))
    {"tx": cmd_tx, "rx": cmd_rx, "gid": cmd_gid, "decode": cmd_decode,
     "fields": cmd_fields, "live": cmd_live}[a.cmd](a)
    if FAILURES:
        print("# %d check(s) failed" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
