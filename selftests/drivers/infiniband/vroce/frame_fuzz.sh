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
#   FRAME_FUZZ_ITERATIONS=N  frames (default 100000; 50000 on 6.1, 20000
#                            on the debug kernels, which take ~100 a second)
#   FRAME_FUZZ_FIRST=I       start at frame I (replay a batch it printed)
#   FRAME_FUZZ_BATCH=N       frames per batch (default 64; 1 prints the
#                            frame whose counters are off)

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma timeout

NSA=
NSB=

cleanup() {
	rdma link delete nvb 2>/dev/null
	rdma link delete nva 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

setup() {
	NSA=$(ns_add ffa) && NSB=$(ns_add ffb) || return 1
	vroce_load &&
		ip -n "$NSA" link add va mtu 9000 type veth peer name vb mtu 9000 \
			netns "$NSB" &&
		ip -n "$NSA" link add link va name va.100 type vlan id 100 &&
		ip -n "$NSA" addr add 192.0.2.1/24 dev va &&
		ip -n "$NSA" addr add 2001:db8::1/64 dev va nodad &&
		ip -n "$NSB" addr add 192.0.2.2/24 dev vb &&
		ip -n "$NSB" addr add 2001:db8::2/64 dev vb nodad &&
		ip -n "$NSA" link set va up && ip -n "$NSA" link set va.100 up &&
		ip -n "$NSB" link set vb up &&
		ip netns exec "$NSA" rdma link add nva type vroce netdev va &&
		ip netns exec "$NSB" rdma link add nvb type vroce netdev vb &&
		wait_for 10 vroce_gid nva v4 va 192.0.2.1 &&
		wait_for 10 vroce_gid nvb v4 vb 192.0.2.2
}

iters=100000
case "$(uname -r)" in 6.1.*) iters=50000 ;; esac
vroce_debug_kernel && iters=20000
args=(--iterations "${FRAME_FUZZ_ITERATIONS:-$iters}")
[ -n "${FRAME_FUZZ_SEED:-}" ] && args+=(--seed "$FRAME_FUZZ_SEED")
[ -n "${FRAME_FUZZ_FIRST:-}" ] && args+=(--first "$FRAME_FUZZ_FIRST")
[ -n "${FRAME_FUZZ_BATCH:-}" ] && args+=(--batch "$FRAME_FUZZ_BATCH")

if ! setup >"$VROCE_LOG" 2>&1; then
	ktap_print_header
	sed 's/^/# /' "$VROCE_LOG"
	ktap_exit_fail_msg "cannot set up two namespaces with a vroce device each"
fi
maca=$(ip netns exec "$NSA" cat /sys/class/net/va/address)
macb=$(ip netns exec "$NSB" cat /sys/class/net/vb/address)
VROCE_DEV=nva VROCE_PEER_DEV=nvb timeout 1800 "$VROCE_BIN/frame_fuzz" \
	--netns "$NSB" --smac "$macb" --dmac "$maca" "${args[@]}"
