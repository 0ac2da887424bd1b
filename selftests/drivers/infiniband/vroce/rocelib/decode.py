# SPDX-License-Identifier: GPL-2.0
"""roce.py decode and fields: a capture of RC traffic checked with tshark
and our own ICRC; its RoCE frames' header fields printed.
"""

import socket
import struct
import subprocess

from .pcap import pcap_read
from .report import expect
from .wire import bth_offset, dscp_of, icrc, is_roce, l3_packet


# BTH opcodes of the RC operations, by class (IBTA 9.2 table 38).
RC_CLASSES = {
    "send": range(0x00, 0x06),
    "write": range(0x06, 0x0C),
    "read_request": [0x0C],
    "read_response": range(0x0D, 0x11),
    "ack": [0x11],
    "atomic_ack": [0x12],
    "atomic": [0x13, 0x14],
    "cnp": [0x81],
}
# What a perftest run of each kind must show, and may show besides.
RC_TRAFFIC = {
    "write": (["write", "ack"], []),
    "read": (["read_request", "read_response"], ["ack"]),
    "send": (["send", "ack"], []),
    "atomic": (["atomic", "atomic_ack"], ["ack"]),
    "cnp": (["cnp"], []),
}
# Payload is test data: keep tshark's heuristic ULP dissectors off it.
TSHARK_ULPS = ["rpcordma", "infiniband.eoib", "smc", "smb_direct",
               "nvme-rdma", "lnet", "iser", "infiniband_sdp", "fcoib"]
PI_WARN = 0x00600000


def rc_class(opcode):
    for name, codes in RC_CLASSES.items():
        if opcode in codes:
            return name
    return "opcode %#04x" % opcode


def tshark_fields(path):
    cmd = ["tshark", "-o", "udp.check_checksum:TRUE", "-r", path,
           "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
           "-E", "aggregator=,"]
    for p in TSHARK_ULPS:
        cmd += ["--disable-protocol", p]
    for f in ["frame.number", "frame.protocols", "infiniband.bth.opcode",
              "_ws.malformed", "_ws.expert.severity",
              "infiniband.aeth.syndrome", "infiniband.bth.destqp",
              "infiniband.bth.psn"]:
        cmd += ["-e", f]
    out = subprocess.run(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, check=True)
    return [ln.split("\t") for ln in out.stdout.decode().splitlines()]


def check_cnp(i, kind, pkt, bth0):
    """IBTA A17.9.3: BTH with BECN, 16 reserved zero bytes, ICRC; DSCP 48
    (np_cnp_dscp's default)."""
    b = pkt[bth0:]
    expect(len(b) == 12 + 16 + 4, "frame %d: CNP of %d bytes after the "
           "BTH's start, not 32" % (i, len(b)))
    expect(b[4] == 0x40, "frame %d: BTH byte 4 %#04x, not BECN alone" %
           (i, b[4]))
    expect(b[12:28] == bytes(16), "frame %d: CNP reserved bytes not zero" % i)
    expect(dscp_of(kind, pkt) == 48, "frame %d: DSCP %d, not 48" %
           (i, dscp_of(kind, pkt)))


def tshark_check(path, opcodes):
    """tshark reads every frame as InfiniBand with the opcode read here from
    the bytes, nothing malformed or worth a warning; returns the NAK and RNR
    NAK counts."""
    rows = tshark_fields(path)
    expect(len(rows) == len(opcodes), "tshark read %d frames of %d" %
           (len(rows), len(opcodes)))
    naks = {"NAK": 0, "RNR NAK": 0}
    for (num, protos, opcode, malformed, sev, syn, qpn, psn), raw in \
            zip(rows, opcodes):
        if not expect("infiniband" in protos.split(":"),
                      "frame %s is %s" % (num, protos)):
            continue
        expect(opcode and int(opcode, 0) == raw,
               "frame %s: tshark opcode %s, %#04x in the frame" %
               (num, opcode, raw))
        expect(not malformed, "frame %s malformed" % num)
        worst = max([int(x) for x in sev.split(",") if x] or [0])
        expect(worst < PI_WARN, "frame %s: expert severity %#x" % (num, worst))
        if syn and (int(syn, 0) >> 5) & 3 == 3:
            naks["NAK"] += 1
        elif syn and (int(syn, 0) >> 5) & 3 == 1:
            naks["RNR NAK"] += 1
    return naks


def cmd_decode(a):
    """A capture of one RC perftest run (or of CNPs): every frame is RoCE,
    its opcodes are those of the operation, and every ICRC is right
    (computed here, tshark does not); a CNP is laid out as IBTA says. Then,
    unless --no-tshark, tshark decodes every frame as InfiniBand with
    nothing malformed or worth a warning."""
    frames = pcap_read(a.pcap)
    if not expect(frames, "no frame captured"):
        return
    seen, opcodes, cnp_qpns = {}, [], set()
    requests, resent = set(), 0
    for i, fr in enumerate(frames, 1):
        kind, off = is_roce(fr)
        if not expect(kind, "frame %d is not RoCE" % i):
            continue
        pkt = l3_packet(kind, fr[off:])
        got = struct.unpack("<I", pkt[-4:])[0]
        want = icrc(kind, pkt[:-4])
        expect(got == want, "frame %d: ICRC %08x, computed %08x" %
               (i, got, want))
        bth0 = bth_offset(kind, pkt)
        opcode = pkt[bth0]
        opcodes.append(opcode)
        cls = rc_class(opcode)
        seen[cls] = seen.get(cls, 0) + 1
        qpn = struct.unpack("!I", pkt[bth0 + 4:bth0 + 8])[0] & 0xFFFFFF
        psn = struct.unpack("!I", pkt[bth0 + 8:bth0 + 12])[0] & 0xFFFFFF
        if cls == "cnp":
            check_cnp(i, kind, pkt, bth0)
            expect(psn == 0, "frame %d: CNP PSN %#x, not 0" % (i, psn))
            cnp_qpns.add(qpn)
        if cls in ("send", "write", "read_request", "atomic"):
            resent += (qpn, psn) in requests
            requests.add((qpn, psn))
    must, may = RC_TRAFFIC[a.traffic]
    for cls in must:
        expect(cls in seen, "no %s frame" % cls)
    for cls in seen:
        expect(cls in must + may, "unexpected %s frames" % cls)
    if cnp_qpns:
        print("# CNPs to DestQP %s" % ", ".join(
            "%#x" % q for q in sorted(cnp_qpns)))
        expect(len(cnp_qpns) == 1, "CNPs to more than one QP")
    naks = tshark_check(a.pcap, opcodes) if a.tshark else None
    print("# %d frames: %s; %s; %d requests resent" % (
        len(frames), ", ".join("%s %d" % kv for kv in sorted(seen.items())),
        "%d NAK, %d RNR NAK" % (naks["NAK"], naks["RNR NAK"]) if naks
        else "tshark not run", resent))


def cmd_fields(a):
    """One line per RoCE frame of a capture, for the shell to count:
    source address, VLAN ID and PCP ("-" untagged), DSCP, ECN, BTH opcode
    (decimal)."""
    for fr in pcap_read(a.pcap):
        kind, off = is_roce(fr)
        if not kind:
            continue
        vid = pcp = "-"
        if off == 18:
            tci = struct.unpack("!H", fr[14:16])[0]
            vid, pcp = tci & 0xFFF, tci >> 13
        pkt = l3_packet(kind, fr[off:])
        if kind == "v4":
            src, ecn = socket.inet_ntop(socket.AF_INET, pkt[12:16]), pkt[1] & 3
        else:
            src = socket.inet_ntop(socket.AF_INET6, pkt[8:24])
            ecn = (struct.unpack("!I", pkt[:4])[0] >> 20) & 3
        print(src, vid, pcp, dscp_of(kind, pkt), ecn,
              pkt[bth_offset(kind, pkt)])
