#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A peer that starts a message and then goes silent (stall.sh).

  stall.py KIND ACTION --ns-a NSA --ns-b NSB --ifname vb --dev DEV ...

stall_test holds an RC QP on DEV (in namespace NSA) connected to this
"peer", which is only a packet socket on the other end of the veth pair
(in NSB). KIND is what the peer leaves half done:

  send   a SEND FIRST into the QP's receive WQE (AckReq: the ACK shows the
         responder took the WQE and holds its MR)
  write  an RDMA WRITE FIRST into the QP's MR (AckReq, as above)
  read   the first READ response to a READ the QP posted (the requester
         placed it and holds its scatter MR)

and nothing else. Then ACTION, each of which must end within BOUND
seconds, 5 (15 on the debug kernel; a hang guard: before, these waited on
the peer for ever):

  dereg     deregister the MR (and register the buffer again)
  destroy   destroy the QP, then deregister the MR
  kill      SIGKILL stall_test; the process must be gone
  linkdel   rdma link delete DEV while stall_test holds it; then SIGKILL
            stall_test, which must be gone
  retry     (read only) the QP retries the rest of the READ, from the
            response that did not come, until its retries run out
            (IBV_WC_RETRY_EXC_ERR); then dereg as above
  netnsdel  SIGKILL stall_test and delete NSA; the namespace's teardown
            (which takes the veth pair with it) must finish within
            NETNS_BOUND seconds, 15 (45 on the debug kernel)

Prints one "RESULT ok|fail KIND ACTION: ..." line.

  stall.py --serve

runs one case per line of stdin, each line the arguments above, and prints
each case's RESULT line as it ends: stall.sh starts Python once for all its
cases (a start takes seconds on the debug kernel).
"""

import argparse
import ipaddress
import os
import select
import shlex
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rocelib import net, wire  # noqa: E402

BOUND = 5.0
# A namespace is torn down by a kernel work item, after RCU grace periods.
NETNS_BOUND = 15.0
# The debug kernel (kmemleak, KASAN, lockdep, RCU debugging) under TCG runs
# a teardown's RCU grace periods and object frees several times slower: a
# loaded host saw rdma link delete take over 5 s there. A teardown that
# waits on the peer never ends, so a longer guard still catches it.
if os.path.exists("/sys/kernel/debug/kmemleak"):
    BOUND, NETNS_BOUND = 3 * BOUND, 3 * NETNS_BOUND
PEER_QPN = 0x777
AETH_ACK = 0x1F             # ACK, unlimited credits
OP_SEND_FIRST = 0x00
OP_WRITE_FIRST = 0x06
OP_READ_REQUEST = 0x0C
OP_READ_RESPONSE_FIRST = 0x0D
OP_ACK = 0x11
FAKE_VA = 0x10000           # stall_test's READ source
FAKE_RKEY = 0x1234
WC_RETRY_EXC_ERR = 12


class Local:
    """stall_test in namespace NSA."""

    def __init__(self, a):
        env = dict(os.environ, VROCE_DEV=a.dev, VROCE_PEER_IP=a.peer_ip)
        if a.action == "retry":
            # 268 ms per try: the first response comes back well before
            # the retries run out, even on a slow kernel.
            env["STALL_TIMEOUT"] = "16"
        self.p = subprocess.Popen(["ip", "netns", "exec", a.ns_a, a.prog],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=env,
                                  universal_newlines=True)
        line = self.readline(30)
        print("# stall_test: %s" % line)
        self.info = {}
        for kv in (line or "").split():
            k, _, v = kv.partition("=")
            self.info[k] = int(v, 0)

    def readline(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        return self.p.stdout.readline().strip() if r else None

    def ask(self, cmd, timeout):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.readline(timeout)

    def gone_within(self, timeout):
        try:
            self.p.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False


def frame(a, body):
    return wire.eth_header(a.dut_mac, a.peer_mac, wire.ETH_P_IP) + \
        wire.frame_v2("v4", a.src, a.dst, body)


def payload(n):
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


def next_bth(s, want_op, timeout=10):
    """The BTH fields (opcode, qpn, psn, rest) of the next frame from the
    QP to the peer with opcode want_op, or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fr = net.recv_frame(s)
        if not fr:
            continue
        kind, off = wire.is_roce(fr)
        if kind != "v4":
            continue
        b = off + (fr[off] & 0xF) * 4 + 8
        op, _, _, qpn, psn = struct.unpack("!BBHII", fr[b:b + 12])
        if op == want_op and qpn & 0xFFFFFF == PEER_QPN:
            return op, qpn & 0xFFFFFF, psn & 0xFFFFFF, fr[b + 12:]
    return None


def start_send(a, s, q):
    body = wire.bth(OP_SEND_FIRST, q["qpn"], q["rq_psn"], ackreq=True) + \
        payload(q["mtu"])
    s.send(frame(a, body))
    ack = next_bth(s, OP_ACK)
    return ack is not None and ack[2] == q["rq_psn"]


def start_write(a, s, q):
    reth = struct.pack("!QII", q["va"], q["rkey"], 4 * q["mtu"])
    body = wire.bth(OP_WRITE_FIRST, q["qpn"], q["rq_psn"], ackreq=True) + \
        reth + payload(q["mtu"])
    s.send(frame(a, body))
    ack = next_bth(s, OP_ACK)
    return ack is not None and ack[2] == q["rq_psn"]


def start_read(a, s, q, local):
    if local.ask("read %d" % (4 * q["mtu"]), 10) != "ok":
        return False
    req = next_bth(s, OP_READ_REQUEST)
    if req is None or req[2] != q["sq_psn"]:
        return False
    aeth = struct.pack("!I", AETH_ACK << 24)
    body = wire.bth(OP_READ_RESPONSE_FIRST, q["qpn"], q["sq_psn"]) + aeth + \
        payload(q["mtu"])
    s.send(frame(a, body))
    # Nothing answers a READ response: give the QP's task time to place it.
    time.sleep(1)
    return True


def veth_gone(a):
    """The peer's end of the veth pair is gone from NSB (asked in-process:
    an "ip link show" per poll costs half a second on the debug kernel)."""
    with net.in_netns(a.ns_b):
        try:
            socket.if_nametoindex(a.ifname)
        except OSError:
            return True
    return False


def wait_until(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def retried(a, s, local):
    """The READ's retry asks for the rest, after the first response, and
    the QP gives up once its retries are spent."""
    q = local.info
    deadline = time.monotonic() + 2 * BOUND
    while True:
        req = next_bth(s, OP_READ_REQUEST,
                       timeout=max(deadline - time.monotonic(), 0))
        if req is None:
            return False, "no retried READ request for the rest"
        # A retry of the whole READ may go out before the first response
        # arrives; the response still counts (its PSN is the oldest).
        if req[2] != q["sq_psn"]:
            break
    va, rkey, length = struct.unpack("!QII", req[3][:16])
    want = (q["sq_psn"] + 1, FAKE_VA + q["mtu"], FAKE_RKEY, 3 * q["mtu"])
    if (req[2], va, rkey, length) != want:
        return False, "retried READ psn=%d va=%#x rkey=%#x len=%d, want " \
            "psn=%d va=%#x rkey=%#x len=%d" % ((req[2], va, rkey, length) +
                                                 want)
    reply = local.ask("poll 30", 35)
    if reply != "ok status=%d wr_id=2" % WC_RETRY_EXC_ERR:
        return False, "READ completion: %s, want retry exceeded" % reply
    return True, "the rest of the READ was asked for again, then %s" % reply


def act(a, s, local):
    """The action; (ok, what happened)."""
    t = time.monotonic()
    if a.action == "retry":
        ok, what = retried(a, s, local)
        if not ok:
            return ok, what
        reply = local.ask("dereg", BOUND)
        ok = reply is not None and reply.startswith("ok dereg")
        return ok, "%s; dereg: %s" % (what, reply)
    if a.action in ("dereg", "destroy"):
        reply = local.ask(a.action, BOUND)
        ok = reply is not None and reply.startswith("ok " + a.action)
        return ok, "%s: %s" % (a.action, reply or "no answer in %g s" % BOUND)
    if a.action == "kill":
        local.p.kill()
        ok = local.gone_within(BOUND)
    elif a.action == "linkdel":
        p = subprocess.Popen(["ip", "netns", "exec", a.ns_a, "rdma", "link",
                              "delete", a.dev])
        try:
            ok = p.wait(timeout=BOUND) == 0
        except subprocess.TimeoutExpired:
            return False, "rdma link delete: not done in %g s" % BOUND
        local.p.kill()
        ok = ok and local.gone_within(BOUND)
    else:
        local.p.kill()
        subprocess.run(["ip", "netns", "del", a.ns_a])
        ok = local.gone_within(BOUND) and \
            wait_until(lambda: veth_gone(a), NETNS_BOUND)
    return ok, "%s: %s after %.2f s" % (a.action, "done" if ok else
                                        "not done", time.monotonic() - t)


def parser():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["send", "write", "read"])
    ap.add_argument("action", choices=["dereg", "destroy", "kill",
                                       "linkdel", "netnsdel", "retry"])
    for opt in ("ns-a", "ns-b", "ifname", "dev", "dut-mac", "peer-mac",
                "dut-ip", "peer-ip", "prog"):
        ap.add_argument("--" + opt, required=True)
    return ap


def run_case(a):
    """One case: prints its RESULT line; 0 if it passed."""
    a.src = ipaddress.ip_address(a.peer_ip)
    a.dst = ipaddress.ip_address(a.dut_ip)
    s = net.packet_socket(a.ns_b, a.ifname)
    local = None
    try:
        local = Local(a)
        return stall(a, s, local)
    finally:
        s.close()
        # stall_test killed (if the case ended early) and its pipes
        # closed: a server would keep both across its cases.
        if local:
            if local.p.poll() is None:
                local.p.send_signal(signal.SIGKILL)
            local.p.stdin.close()
            local.p.stdout.close()


def stall(a, s, local):
    name = "%s %s" % (a.kind, a.action)
    q = local.info
    if "qpn" not in q:
        print("RESULT fail %s: stall_test did not start" % name)
        return 1
    start = {"send": lambda: start_send(a, s, q),
             "write": lambda: start_write(a, s, q),
             "read": lambda: start_read(a, s, q, local)}[a.kind]
    if not start():
        print("RESULT fail %s: the first packet was not taken" % name)
        return 1
    ok, what = act(a, s, local)
    if ok and a.action in ("dereg", "destroy"):
        local.p.stdin.write("quit\n")
        local.p.stdin.flush()
        ok = local.gone_within(BOUND) and local.p.returncode == 0
    if local.p.poll() is None:
        local.p.send_signal(signal.SIGKILL)
    print("RESULT %s %s: %s" % ("ok" if ok else "fail", name, what))
    return 0 if ok else 1


def main():
    ap = parser()
    if sys.argv[1:] != ["--serve"]:
        return run_case(ap.parse_args())
    # Each line reaches stall.sh as it is printed, also of a case that
    # then hangs.
    sys.stdout.reconfigure(line_buffering=True)
    for line in sys.stdin:
        run_case(ap.parse_args(shlex.split(line)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
