# SPDX-License-Identifier: GPL-2.0
"""roce.py live, READs: NAKs inside a READ response and duplicate READs."""

import struct
import time

from .live import (
    AETH_ACK, AETH_PSN_SEQ_NAK, AETH_REM_ACCESS_NAK, AETH_RNR_NAK_10US, RC_ACK,
    RC_READ_REQUEST, RC_READ_RESPONSES, drain, find_nak, pattern_bytes,
    rc_frames, v4_send)
from .net import counters
from .report import FAILURES, expect
from .wire import bth


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
