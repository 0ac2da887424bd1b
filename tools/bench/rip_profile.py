#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Sample the guest's RIPs through the QEMU monitor, or report on them.

perf samples nothing but idle in a TCG guest. QEMU's human monitor answers
"info registers -a" with every vCPU's registers; polled every few
milliseconds, the RIPs make a sampling profile. The monitor stops a vCPU
between translated blocks and holds QEMU's big lock while it reads, so
device (MMIO) accesses are over-counted.

  rip_profile.py sample SOCKET OUTDIR SECONDS
      wait for OUTDIR/mark (the guest creates it when the window opens),
      then sample for SECONDS or until the mark is gone; writes
      OUTDIR/samples.txt ("CPU RIP" lines)
  rip_profile.py report KALLSYMS SAMPLES [TOP]
      per vCPU and overall: the share of samples per kernel symbol, user
      space as "[user]"
"""
import bisect
import collections
import os
import re
import socket
import sys
import time


def monitor(path, timeout=600.0):
    end = time.time() + timeout
    while True:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            s.settimeout(10)
            return s
        except OSError:
            if time.time() > end:
                raise
            time.sleep(0.1)


def command(s, cmd):
    s.sendall((cmd + '\n').encode())
    buf = b''
    while not buf.rstrip().endswith(b'(qemu)'):
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError('monitor closed')
        buf += chunk
    return buf.decode(errors='replace')


def sample(path, outdir, seconds):
    mark = os.path.join(outdir, 'mark')
    s = monitor(path)
    command(s, '')
    end = time.time() + 600
    while not os.path.exists(mark):
        if time.time() > end:
            sys.exit('rip_profile: the guest never opened the window')
        time.sleep(0.05)
    samples = []
    stop = time.time() + seconds
    try:
        while time.time() < stop and os.path.exists(mark):
            out = command(s, 'info registers -a')
            cpus = re.findall(r'CPU#(\d+)', out)
            rips = re.findall(r'RIP=([0-9a-f]+)', out)
            samples.extend(zip(cpus, rips))
            time.sleep(0.003)
    except (OSError, EOFError) as e:
        print('rip_profile: monitor: %s' % e, file=sys.stderr)
    with open(os.path.join(outdir, 'samples.txt'), 'w') as f:
        for cpu, rip in samples:
            f.write('%s %s\n' % (cpu, rip))
    print('rip_profile: %d samples' % len(samples))


def report(kallsyms, samples, top):
    syms = []
    with open(kallsyms) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3 and fields[1] in 'tTwW':
                name = fields[2] + (' ' + fields[3] if len(fields) > 3 else '')
                syms.append((int(fields[0], 16), name))
    syms.sort()
    addrs = [a for a, _ in syms]
    per = collections.defaultdict(collections.Counter)
    with open(samples) as f:
        for line in f:
            cpu, rip = line.split()
            rip = int(rip, 16)
            if rip < 0xffff800000000000:
                name = '[user]'
            else:
                i = bisect.bisect_right(addrs, rip) - 1
                name = syms[i][1] if i >= 0 else '[unknown]'
            per['vCPU ' + cpu][name] += 1
            per['all'][name] += 1
    for key in sorted(per):
        n = sum(per[key].values())
        print('== %s: %d samples' % (key, n))
        for name, k in per[key].most_common(top):
            print('  %5.1f%%  %s' % (100.0 * k / n, name))


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == 'sample':
        sample(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    elif len(sys.argv) >= 4 and sys.argv[1] == 'report':
        top = int(sys.argv[4]) if len(sys.argv) > 4 else 40
        report(sys.argv[2], sys.argv[3], top)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
