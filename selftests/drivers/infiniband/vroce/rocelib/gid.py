# SPDX-License-Identifier: GPL-2.0
"""roce.py gid: the index of a GID in the device's GID table."""

import ipaddress

from .report import fail


def cmd_gid(a):
    """Print the index of the GID of type a.kind for a.sip on a.ifname."""
    port = "/sys/class/infiniband/%s/ports/1" % a.dev
    want = ipaddress.ip_address(a.sip)
    if want.version == 4:
        want = ipaddress.ip_address("::ffff:" + a.sip)
    gtype = "IB/RoCE v1" if a.kind == "v1" else "RoCE v2"
    for i in range(128):
        try:
            with open("%s/gids/%d" % (port, i)) as f:
                gid = ipaddress.ip_address(f.read().strip())
            with open("%s/gid_attrs/types/%d" % (port, i)) as f:
                t = f.read().strip()
            with open("%s/gid_attrs/ndevs/%d" % (port, i)) as f:
                nd = f.read().strip()
        except OSError:
            continue
        if gid == want and t == gtype and nd == a.ifname:
            print(i)
            return
    fail("no %s GID for %s on %s" % (gtype, want, a.ifname))
