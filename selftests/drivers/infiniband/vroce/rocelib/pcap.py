# SPDX-License-Identifier: GPL-2.0
"""Append frames to a pcap file for tshark, and read them back."""

import os
import struct
import time

from .report import fail


def pcap_append(path, frames):
    new = not os.path.exists(path)
    with open(path, "ab") as f:
        if new:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            t = time.time()
            f.write(struct.pack("<IIII", int(t), int(t % 1 * 1e6),
                                len(fr), len(fr)))
            f.write(fr)


def pcap_read(path):
    """The frames of a classic little-endian pcap of Ethernet (dumpcap -P)."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, _, _, _, _, link = struct.unpack("<IHHiIII", data[:24])
    if magic not in (0xA1B2C3D4, 0xA1B23C4D) or link != 1:
        raise ValueError("%s: not a little-endian Ethernet pcap" % path)
    frames, off = [], 24
    while off + 16 <= len(data):
        caplen, wirelen = struct.unpack("<II", data[off + 8:off + 16])
        frames.append(data[off + 16:off + 16 + caplen])
        if caplen != wirelen:
            fail("frame %d truncated: %d of %d bytes captured" %
                 (len(frames), caplen, wirelen))
        off += 16 + caplen
    return frames
