# SPDX-License-Identifier: GPL-2.0
"""roce.py live, QP states: the QP in every state, and going to ERR
under a half-received SEND.
"""

import ipaddress
import struct
import time

from .live import (
    AETH_ACK, AETH_PSN_SEQ_NAK, AETH_RNR_NAK_10US, RC_ACK, drain,
    pattern_bytes, rc_frames, v4_send)
from .live_read import read_req_body
from .net import counters, wait_counters
from .report import FAILURES, expect
from .wire import ETH_P_IP, bth, eth_header, frame_v2


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
    eth = eth_header(a.dmac, a.smac, ETH_P_IP)
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
