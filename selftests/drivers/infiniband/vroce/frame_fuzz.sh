#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fuzzes the frames vroce receives (frame_fuzz): structure-aware mutations
# of valid RoCE v1 and RoCE v2 (IPv4, IPv6) frames of every opcode, sent
# from the peer end of a veth pair at the device's QPs while a live RC QP
# pair moves verified data between the two ends:
#
#   [ns ffa-*: nva over va, va.100] ==veth== [ns ffb-*: nvb over vb]
#
# Every injected frame must land in the drop counter a model of vroce's
# receive checks predicts, or be accepted (rcvd_pkts is exact too), the
# live transfer must stay byte-exact; make check reads dmesg for kernel
# reports.
# The KTAP output is frame_fuzz's; it prints its seed, and the seed and
# frames of a batch whose counters are off.
#
#   FRAME_FUZZ_SEED=N        replay a run (default: a new seed each run)
#   FRAME_FUZZ_ITERATIONS=N  frames (default 100000; 50000 on 6.1; the
#                            debug kernel takes about 600 a second)
#   FRAME_FUZZ_FIRST=I       start at frame I (replay a batch it printed)
#   FRAME_FUZZ_BATCH=N       frames per batch (default 256; 1 prints the
#                            frame whose counters are off)

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma timeout

trap vroce_ns_devs_cleanup EXIT

# va.100: a VLAN vroce receives on (VLAN_BOUND in frame_fuzz.c).
setup() {
	vroce_veth_ns ffa ffb v6 mtu 9000 &&
		ip -n "$NSA" link add link va name va.100 type vlan id 100 &&
		ip -n "$NSA" link set va.100 up &&
		vroce_ns_devs nva nvb
}

iters=100000
case "$(uname -r)" in 6.1.*) iters=50000 ;; esac
iters=${FRAME_FUZZ_ITERATIONS:-$iters}
# A hang guard: 30 minutes, or 50 frames a second for a longer run.
tmo=$((iters / 50 > 1800 ? iters / 50 : 1800))
args=(--iterations "$iters")
[ -n "${FRAME_FUZZ_SEED:-}" ] && args+=(--seed "$FRAME_FUZZ_SEED")
[ -n "${FRAME_FUZZ_FIRST:-}" ] && args+=(--first "$FRAME_FUZZ_FIRST")
[ -n "${FRAME_FUZZ_BATCH:-}" ] && args+=(--batch "$FRAME_FUZZ_BATCH")

vroce_setup_or_exit "cannot set up two namespaces with a vroce device each" \
	setup
VROCE_DEV=nva VROCE_PEER_DEV=nvb timeout "$tmo" "$VROCE_BIN/frame_fuzz" \
	--netns "$NSB" --smac "$MACB" --dmac "$MACA" "${args[@]}"
