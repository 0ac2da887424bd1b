#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Frames for the receive path's bounds tests, built with rocelib's
(roce.py's library).

  rx_frames.py ud ...    send good RoCE frames (a UD SEND ONLY with a wrong
                         Q_Key, which the QP counts in rcvd_qkey_err) from
                         a namespace's netdev: netns_uppers.sh
  rx_frames.py frag ...  send RoCE v2 datagrams of tens of KiB as IPv4
                         fragments at a live RC QP (inject_test holds it,
                         path MTU 1024) at the PSN it expects; check each
                         is dropped and counted at receive, the QP is not
                         affected, and the QPs then carry traffic byte for
                         byte: rx_bounds.sh

Run as root.
"""

import argparse
import ipaddress
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rocelib import net, report, wire  # noqa: E402

IP_MF = 0x2000
FRAG_DATA = 1480    # fragment payload: a 1500-byte MTU, a multiple of 8


def cmd_ud(a):
    """a.count UD SEND ONLY frames to a.dqpn with Q_Key 0x11 (the GSI QP's
    is 0x80010000): a QP that receives one counts rcvd_qkey_err."""
    deth = struct.pack("!II", 0x11, 0x11)
    body = wire.roce_body("UD_SEND_ONLY", 64, dqpn=a.dqpn, psn=0, hdrs=deth)
    src, dst = ipaddress.ip_address(a.sip), ipaddress.ip_address(a.dip)
    if a.kind == "v1":
        sgid = ipaddress.ip_address("::ffff:" + a.sip)
        dgid = ipaddress.ip_address("::ffff:" + a.dip)
        l3, et = wire.frame_v1(sgid, dgid, body), wire.ETH_P_IBOE
    else:
        l3, et = wire.frame_v2("v4", src, dst, body), wire.ETH_P_IP
    s = net.packet_socket(a.ns, a.ifname)
    for _ in range(a.count):
        s.send(wire.eth_header(a.dmac, a.smac, et) + l3)
    print("# sent %d %s frames of %d bytes to %s, QPN %#x" %
          (a.count, a.kind, len(l3), a.dip, a.dqpn))


def datagram_v4(src, dst, body, ident):
    """An IPv4 RoCE v2 datagram without DF, as a reassembled one reads: its
    ICRC covers the header with the fragment fields 0."""
    udp_len = 8 + len(body) + 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, ident, 0, 64,
                     17, 0, src.packed, dst.packed)
    udp = struct.pack("!HHHH", 0xC000, wire.ROCE_PORT, udp_len, 0)
    return wire.append_icrc("v4", ip + udp + body)


def fragments_v4(dgram):
    """The datagram as IPv4 fragments of FRAG_DATA bytes of data each."""
    hdr, data = bytearray(dgram[:20]), dgram[20:]
    frags = []
    for off in range(0, len(data), FRAG_DATA):
        piece = data[off:off + FRAG_DATA]
        more = IP_MF if off + len(piece) < len(data) else 0
        h = bytearray(hdr)
        h[2:4] = struct.pack("!H", 20 + len(piece))
        h[6:8] = struct.pack("!H", more | off // 8)
        h[10:12] = b"\0\0"
        h[10:12] = struct.pack("!H", wire.csum16(bytes(h)))
        frags.append(bytes(h) + piece)
    return frags


def cmd_frag(a):
    s = net.packet_socket(a.ns, a.ifname)
    peer = net.Peer(a.prog)
    q = peer.info
    if not report.expect(q.get("rc_qpn"), "inject_test did not start"):
        return
    report.expect(q["mtu"] == 1024, "path MTU %s, want 1024" % q["mtu"])
    report.expect(peer.ask("idle") == "ok", "not idle before any frame")
    src, dst = ipaddress.ip_address(a.sip), ipaddress.ip_address(a.dip)
    eth = wire.eth_header(a.dmac, a.smac, wire.ETH_P_IP)
    before = net.counters(a.dev)
    total = 0
    for i in range(a.count):
        body = wire.roce_body("RC_SEND_ONLY", a.len, dqpn=q["rc_qpn"],
                              psn=q["rc_psn"])
        dgram = datagram_v4(src, dst, body, 0x4000 + i)
        total += len(dgram)
        for fr in fragments_v4(dgram):
            s.send(eth + fr)
        time.sleep(0.02)    # the peer's backlog holds one datagram's worth
    print("# sent %d RC SEND ONLY datagrams of %d payload bytes (%d IPv4 "
          "fragments each) to QPN %#x at PSN %#x" %
          (a.count, a.len, len(fragments_v4(dgram)), q["rc_qpn"],
           q["rc_psn"]))
    want = {"rcvd_pkts": a.count, "rcvd_bytes": total,
            "rcvd_malformed": a.count}
    ok, moved, _ = net.wait_counters(a.dev, before, want)
    print("# counters moved: %s" % " ".join(
        "%s+%d" % kv for kv in sorted(moved.items())))
    report.expect(ok, "counters moved %s, want %s" % (moved, want))
    reply = peer.ask("idle")
    report.expect(reply == "ok", "the QP is affected: idle: %s" % reply)
    reply = peer.ask("traffic")
    report.expect(reply == "ok", "traffic: %s" % reply)
    report.expect(peer.close() == 0, "inject_test failed")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["ud", "frag"])
    p.add_argument("--ns", help="the sender's netns")
    p.add_argument("--ifname", required=True, help="the sender's netdev")
    p.add_argument("--kind", choices=["v1", "v4"], default="v4")
    p.add_argument("--dmac", required=True)
    p.add_argument("--smac", required=True)
    p.add_argument("--sip", required=True)
    p.add_argument("--dip", required=True)
    p.add_argument("--dqpn", type=lambda s: int(s, 0), default=1)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--len", type=int, default=32768,
                   help="frag: payload bytes of each datagram")
    p.add_argument("--dev", help="frag: the device under test")
    p.add_argument("--prog", help="frag: inject_test")
    a = p.parse_args()
    if a.cmd == "frag" and (not a.dev or not a.prog):
        p.error("frag needs --dev and --prog")
    {"ud": cmd_ud, "frag": cmd_frag}[a.cmd](a)
    if report.FAILURES:
        print("# %d check(s) failed" % len(report.FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
