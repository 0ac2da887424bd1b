# SPDX-License-Identifier: GPL-2.0
"""roce.py rx: good and bad frames sent to the device from the peer; exactly
the expected counter must move.
"""

import ipaddress
import struct

from .net import counters, packet_socket, wait_counters
from .report import expect
from .wire import (
    ETHERTYPE, ROCE_PORT, bth, csum16, eth_header, frame_v1, frame_v2,
    roce_body)


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
    eth = eth_header(a.dmac, a.smac, ETHERTYPE[a.kind], a.vlan)
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
