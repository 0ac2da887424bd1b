# SPDX-License-Identifier: GPL-2.0
"""Bad frames at live RC and UD QPs (inject_test holds them), for roce.py
live: each is dropped and counted, changes nothing else, and the QPs keep
working. The cases of each framing, and what the others share.
"""

import ipaddress
import struct
import time

from .net import counters, recv_frame, wait_counters
from .report import FAILURES, expect, fail
from .rx import rx_frame
from .wire import (
    ETHERTYPE, ETH_P_IP, bth_offset, eth_header, frame_v2, is_roce, l3_packet)


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
    eth = eth_header(a.dmac, a.smac, ETHERTYPE[a.kind])
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
        for _, apsn, rest in rc_frames(s, dqpn, (RC_ACK,), 1,
                                       deadline - time.monotonic()):
            if apsn == psn:
                return rest[0]
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
        eth = eth_header(a.dmac, a.smac, ETH_P_IP)
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
    eth = eth_header(a.dmac, a.smac, ETH_P_IP)
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
