# SPDX-License-Identifier: GPL-2.0
"""The system side: network namespaces, packet sockets, the device's
counters, and inject_test, which holds the QPs that frames are sent at.
"""

import ctypes
import os
import socket
import struct
import subprocess
import time

from .wire import (
    CLONE_NEWNET, ETH_P_8021Q, ETH_P_ALL, PACKET_AUXDATA, SOL_PACKET,
    TP_STATUS_VLAN_VALID)


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
