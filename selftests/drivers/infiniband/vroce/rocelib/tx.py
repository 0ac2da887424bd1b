# SPDX-License-Identifier: GPL-2.0
"""roce.py tx: packets sent with the device's debugfs xmit_test file,
captured on the peer veth and checked field by field and by ICRC.
"""

import ipaddress
import struct
import time

from .net import counters, packet_socket, recv_frame, wait_counters
from .pcap import pcap_append
from .report import FAILURES, expect
from .wire import (
    OPCODES, ROCE_PORT, calc_sport, csum16, icrc, is_roce, mac_bytes)


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
