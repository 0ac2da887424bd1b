# SPDX-License-Identifier: GPL-2.0
"""roce.py live: the cases of each framing, then traffic, NAKs inside a READ,
duplicate READs, the QP in every state and going to ERR under a
half-received SEND.
"""

from .live import live_group, live_rc_cases, live_seq_error, live_ud_cases
from .live_read import live_dup_read, live_nak_in_read
from .live_states import live_err_race, live_states
from .net import Peer, packet_socket
from .report import FAILURES, expect


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
