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
  roce.py fields   print the header fields of a capture's RoCE frames
  roce.py live ... send bad frames at live RC and UD QPs (inject_test holds
                   them) and check each is dropped and counted, changes
                   nothing else, and the QPs keep working

Run as root. The peer side runs in another network namespace: its sockets
are opened there with setns(2), everything else runs where we are. Each
command is a module of rocelib/, with the wire format (rocelib.wire), the
system side (rocelib.net) and pcap files (rocelib.pcap) they share with
rx_frames.py and stall.py.
"""

import argparse
import sys

from rocelib.decode import RC_TRAFFIC, cmd_decode, cmd_fields
from rocelib.gid import cmd_gid
from rocelib.live_cmd import cmd_live
from rocelib.report import FAILURES
from rocelib.rx import cmd_rx
from rocelib.tx import cmd_tx


def hexint(s):
    return int(s, 0)


def peer_args(p, required=True):
    """The device, and the peer's namespace and netdev."""
    p.add_argument("--dev", required=required, help="vroce device")
    p.add_argument("--ns", help="the peer's netns")
    p.add_argument("--ifname", required=required,
                   help="the peer's netdev (gid: the GID's netdev)")


def frame_args(p):
    """The Ethernet and IP addresses of the frames sent or checked."""
    p.add_argument("--dmac")
    p.add_argument("--smac")
    p.add_argument("--sip", help="source IP (tx: the SGID's address)")
    p.add_argument("--dip", help="destination IP")


def tx_args(p):
    peer_args(p)
    frame_args(p)
    p.add_argument("--kind", required=True, choices=["v1", "v4", "v6"])
    p.add_argument("--pcap")
    p.add_argument("--sgid", help="RoCEv1 SGID as an IPv6 address")
    p.add_argument("--dgid", help="DGID as xmit_test takes it")
    p.add_argument("--sgid-index", type=int)
    p.add_argument("--opcode", dest="opcodes", default=["RC_SEND_ONLY"],
                   type=lambda s: s.split(","), help="comma-separated")
    p.add_argument("--lens", type=lambda s: [int(x) for x in s.split(",")],
                   default=[0])
    p.add_argument("--dqpn", type=hexint, default=0x123456)
    p.add_argument("--sqpn", type=hexint, default=0x11)
    p.add_argument("--psn", type=hexint, default=0xABCDEF)
    p.add_argument("--tclass", type=hexint, default=0)
    p.add_argument("--hop-limit", type=int, default=64)
    p.add_argument("--flow-label", type=hexint, default=0)
    p.add_argument("--sl", type=int, default=0)
    p.add_argument("--vlan", type=int)


def rx_args(p):
    peer_args(p)
    frame_args(p)
    p.add_argument("--kind", required=True, choices=["v1", "v4", "v6"])
    p.add_argument("--vlan", type=int)


def gid_args(p):
    peer_args(p)
    p.add_argument("--kind", required=True, choices=["v1", "v4", "v6"])
    p.add_argument("--sip", required=True, help="the GID's address")


def decode_args(p):
    p.add_argument("--pcap", required=True)
    p.add_argument("--traffic", required=True, choices=sorted(RC_TRAFFIC),
                   help="the perftest run captured")
    p.add_argument("--no-tshark", dest="tshark", action="store_false",
                   help="raw checks only")


def fields_args(p):
    p.add_argument("--pcap", required=True)


def live_args(p):
    peer_args(p)
    for opt in ("--dmac", "--smac", "--sip", "--dip"):
        p.add_argument(opt, required=True)
    p.add_argument("--prog", required=True, help="inject_test")
    p.add_argument("--kinds", type=lambda s: s.split(","),
                   default=["v4", "v6", "v1"], help="framings")
    p.add_argument("--sip6", required=True,
                   help="the peer's IPv6 address (v6, v1)")
    p.add_argument("--dip6", required=True, help="the device's IPv6 address")


COMMANDS = {
    "tx": (tx_args, cmd_tx),
    "rx": (rx_args, cmd_rx),
    "gid": (gid_args, cmd_gid),
    "decode": (decode_args, cmd_decode),
    "fields": (fields_args, cmd_fields),
    "live": (live_args, cmd_live),
}


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, (add_args, cmd) in COMMANDS.items():
        add_args(sub.add_parser(name))
    a = p.parse_args()
    COMMANDS[a.cmd][1](a)
    if FAILURES:
        print("# %d check(s) failed" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
