#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# The table of make bench (tools/bench/bench.sh): medians per cell from the
# guest's raw.tsv, vroce/rdma_rxe and vroce/memcpy ratios, the CPU time per
# GiB moved, and a PASS/FAIL line per target (printed, never
# asserted: the exit status only says whether the report could be made).
#
#   report.py RAW.tsv META.txt RESULTS.txt RESULTS.json

import json
import statistics
import sys

TOPOS = ["rxe-loop", "vroce-loop", "vroce-veth"]


def size_str(size):
    if size >= 1 << 20 and size % (1 << 20) == 0:
        return "%d MiB" % (size >> 20)
    if size >= 1 << 10 and size % (1 << 10) == 0:
        return "%d KiB" % (size >> 10)
    return "%d B" % size


def load(raw_path, meta_path):
    meta = {}
    memcpy = None
    with open(meta_path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            if words[0] == "memcpy_mib_s":
                memcpy = {"median": float(words[1]), "best": float(words[2]),
                          "mib": int(words[3]), "passes": int(words[4])}
            else:
                meta[words[0]] = " ".join(words[1:])
    runs = []
    with open(raw_path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            if len(row) != len(header):
                continue
            runs.append(row)
    return meta, memcpy, runs


def prefer_perftest(r):
    """perftest's bw (its measured window in cycles) unless it printed 0.

    bench.sh computed v1/v2 from the iterations over the nominal window;
    perftest divides them by the window it timed, but prints 0 when its
    clock calibration fails on a loaded host.
    """
    try:
        pt = float(r.get("perftest_v1", "-"))
    except ValueError:
        pt = 0.0
    calc = float(r["v1"])
    if pt > 0 and calc > 0:
        r["v2"] = str(float(r["v2"]) * pt / calc)
        r["v1"] = str(pt)
        r["src"] = "perftest"
    else:
        r["src"] = "iterations"


def cells_of(runs, ncpus):
    """Group runs by (topo, tool, size, qps) and take medians."""
    cells = {}
    order = []
    for r in runs:
        key = (r["topo"], r["tool"], int(r["size"]), int(r["qps"]))
        if key not in cells:
            cells[key] = []
            order.append(key)
        cells[key].append(r)
    out = {}
    for key in order:
        topo, tool, size, qps = key
        rs = cells[key]
        lat = tool.endswith("_lat")
        if not lat:
            for r in rs:
                prefer_perftest(r)
        v1 = [float(r["v1"]) for r in rs]
        v2 = [float(r["v2"]) for r in rs]
        c = {"topo": topo, "tool": tool, "size": size, "qps": qps,
             "kind": "lat" if lat else "bw",
             "unit": "us" if lat else "MiB/s",
             "samples": len(rs), "values": v1,
             "median": statistics.median(v1),
             "bw_from": [r.get("src", "-") for r in rs]}
        if lat:
            c["t_avg_us"] = statistics.median(v2)
        else:
            c["mpps"] = statistics.median(v2)
            cpu, sys_ = [], []
            for r in rs:
                bw = float(r["v1"])
                try:
                    util = float(r["cpu_util"])
                except ValueError:
                    continue
                busy = int(r["user_j"]) + int(r["sys_j"])
                share = int(r["sys_j"]) / busy if busy else 0.0
                # util % of all CPUs over the window; bw in MiB/s.
                s_per_gib = util / 100.0 * ncpus * 1024.0 / bw
                cpu.append(s_per_gib)
                sys_.append(s_per_gib * share)
            if cpu:
                c["cpu_s_per_gib"] = statistics.median(cpu)
                c["sys_s_per_gib"] = statistics.median(sys_)
        out[key] = c
    return out


def fmt(v, digits=1):
    if v is None:
        return "-"
    if v >= 1000:
        return "%.0f" % v
    if v >= 100:
        return "%.*f" % (max(digits - 1, 0), v)
    if v >= 10:
        return "%.*f" % (digits, v)
    return "%.*f" % (digits + 1, v)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def rstr(v):
    return "-" if v is None else "%.2fx" % v


def get(cells, topo, tool, size, qps=1, field="median"):
    c = cells.get((topo, tool, size, qps))
    return None if c is None else c.get(field)


def targets(cells, memcpy):
    res = []

    def add(name, value, op, limit, note):
        if value is None:
            verdict = "n/a"
        elif op == ">=":
            verdict = "PASS" if value >= limit else "FAIL"
        else:
            verdict = "PASS" if value <= limit else "FAIL"
        res.append({"target": name, "value": value, "op": op,
                    "limit": limit, "verdict": verdict, "note": note})

    L, R = "vroce-loop", "rxe-loop"
    add("ib_write_bw 64 KiB loopback vroce/rxe",
        ratio(get(cells, L, "ib_write_bw", 65536),
              get(cells, R, "ib_write_bw", 65536)), ">=", 4.0, "bandwidth")
    add("ib_write_lat 2 B loopback vroce/rxe",
        ratio(get(cells, L, "ib_write_lat", 2),
              get(cells, R, "ib_write_lat", 2)), "<=", 0.5, "t_typical")
    add("ib_send_bw 64 B loopback msg rate vroce/rxe",
        ratio(get(cells, L, "ib_send_bw", 64, field="mpps"),
              get(cells, R, "ib_send_bw", 64, field="mpps")), ">=", 3.0,
        "Mpps")
    add("ib_write_bw 1 MiB loopback vroce/memcpy",
        ratio(get(cells, L, "ib_write_bw", 1 << 20),
              memcpy["median"] if memcpy else None), ">=", 0.5,
        "single-core memcpy")
    for topo in (L, "vroce-veth"):
        add("ib_write_bw 64 KiB 4 QPs / 1 QP (%s)" % topo,
            ratio(get(cells, topo, "ib_write_bw", 65536, 4),
                  get(cells, topo, "ib_write_bw", 65536)), ">=", 1.5, "")
    for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
        bws = [get(cells, L, tool, s) for s in (64, 4096, 65536, 1 << 20)]
        big = [get(cells, L, tool, s) for s in (65536, 1 << 20)]
        value = None
        if None not in bws and max(bws) > 0:
            value = min(big) / max(bws)
        add("%s loopback 64 KiB..1 MiB / best size" % tool, value, ">=",
            0.9, "no collapse")
    return res


def table(meta, memcpy, cells, tgts):
    lines = []
    w = lines.append
    w("vroce vs rdma_rxe: perftest, RoCE v2 over IPv4, kernel %s, %s vCPUs "
      "(QEMU TCG), median of %s repetitions"
      % (meta.get("kernel", "?"), meta.get("cpus", "?"), meta.get("reps", "?")))
    if memcpy:
        w("guest single-core memcpy (64 MiB buffers): %.0f MiB/s median, "
          "%.0f MiB/s best" % (memcpy["median"], memcpy["best"]))
    w("loop = server and client on one device (rdma_rxe or vroce over a "
      "veth, init_net); veth = vroce in two namespaces joined by a veth pair")
    dur = meta.get("duration", "?")
    measured = int(dur) - 2 if dur.isdigit() else "?"
    w("bw in MiB/s, perftest's BW average (-D %s -f 1: %s s measured), or "
      "when its clock calibration failed (it prints 0) the messages it "
      "completed in the window x size / %s s; lat: t_typical in us (-n %s)"
      % (dur, measured, measured, meta.get("lat_iters", "?")))
    w("ratios: vroce/rxe (lat: lower is better) and vroce/memcpy; "
      "n = samples (rxe/loop/veth)")
    w("")
    hdr = ("%-12s %7s %2s | %9s | %9s %8s %8s | %9s %8s | %s"
           % ("test", "size", "q", "rxe-loop", "vroce-lp", "v/rxe",
              "v/memcpy", "vroce-vt", "vt/rxe", "n"))
    w(hdr)
    w("-" * len(hdr))
    keys = []
    for (topo, tool, size, qps) in cells:
        if (tool, size, qps) not in keys:
            keys.append((tool, size, qps))
    tools = ["ib_write", "ib_read", "ib_send"]
    keys.sort(key=lambda k: (k[0].endswith("_lat"), k[2], k[1],
                             tools.index(k[0].rsplit("_", 1)[0])))
    for tool, size, qps in keys:
        r = get(cells, "rxe-loop", tool, size, qps)
        lp = get(cells, "vroce-loop", tool, size, qps)
        vt = get(cells, "vroce-veth", tool, size, qps)
        mc = None
        if not tool.endswith("_lat") and memcpy:
            mc = ratio(lp, memcpy["median"])
        n = "/".join(str(get(cells, t, tool, size, qps, "samples") or 0)
                     for t in TOPOS)
        w("%-12s %7s %2d | %9s | %9s %8s %8s | %9s %8s | %s"
          % (tool, size_str(size), qps, fmt(r), fmt(lp), rstr(ratio(lp, r)),
             rstr(mc), fmt(vt), rstr(ratio(vt, r)), n))
    w("")
    w("message rate (kpps) and CPU time per GiB moved: perftest's CPU "
      "utilisation of all vCPUs over its measured window / bandwidth, in "
      "s/GiB; in brackets the kernel's share (system+irq+softirq, from "
      "/proc/stat around the whole client run). perftest polls, so one "
      "busy vCPU is counted for the client however fast the transport")
    hdr2 = ("%-12s %7s %2s | %8s %8s %8s | %15s %15s %15s"
            % ("test", "size", "q", "rxe", "vroce-lp", "vroce-vt",
               "rxe s/GiB", "vroce-lp s/GiB", "vroce-vt s/GiB"))
    w(hdr2)
    w("-" * len(hdr2))
    for tool, size, qps in keys:
        if tool.endswith("_lat"):
            continue
        kpps = []
        cpu = []
        for t in TOPOS:
            m = get(cells, t, tool, size, qps, "mpps")
            kpps.append(fmt(m * 1000 if m is not None else None))
            c = get(cells, t, tool, size, qps, "cpu_s_per_gib")
            s = get(cells, t, tool, size, qps, "sys_s_per_gib")
            cpu.append("-" if c is None else "%s (%s)" % (fmt(c), fmt(s)))
        w("%-12s %7s %2d | %8s %8s %8s | %15s %15s %15s"
          % ((tool, size_str(size), qps) + tuple(kpps) + tuple(cpu)))
    w("")
    w("targets (printed, not asserted)")
    for t in tgts:
        v = "-" if t["value"] is None else "%.2f" % t["value"]
        w("  %-4s %-48s %6s  (%s %.2f) %s"
          % (t["verdict"], t["target"], v, t["op"], t["limit"], t["note"]))
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 5:
        sys.stderr.write("usage: report.py RAW META RESULTS.txt RESULTS.json\n")
        return 2
    meta, memcpy, runs = load(sys.argv[1], sys.argv[2])
    cells = cells_of(runs, float(meta.get("cpus", "1")))
    tgts = targets(cells, memcpy)
    with open(sys.argv[3], "w") as f:
        f.write(table(meta, memcpy, cells, tgts))
    with open(sys.argv[4], "w") as f:
        json.dump({"meta": meta, "memcpy": memcpy,
                   "cells": list(cells.values()), "targets": tgts}, f,
                  indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
