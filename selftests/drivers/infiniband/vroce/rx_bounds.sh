#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What the receive path queues for a QP is bounded: two namespaces joined
# by a veth pair (MTU 1500), a vroce device at each end:
#
#   [ns rba-*: nva over va] ==veth== [ns rbb-*: nvb over vb]
#
# inject_test holds an RC QP pair (path MTU 1024) and a UD QP at each end;
# rx_frames.py frag sends RoCE v2 datagrams of 32 KiB of payload (RC SEND
# ONLY at the PSN nva's RC QP expects, good ICRC) from vb as IPv4
# fragments, which nva's namespace reassembles. A payload longer than the
# QP's path MTU is dropped at receive, before it is queued, and counted
# (rcvd_malformed; exactly rcvd_pkts, rcvd_bytes and rcvd_malformed move):
# no NAK, no completion, the QP stays in RTS, and the same QPs then carry
# RC SEND, WRITE and READ and UD SEND both ways, byte for byte.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma python3 timeout

RX_PY="$VROCE_LIB_DIR/rx_frames.py"
NSA=
NSB=
MACA=
MACB=

cleanup() {
	rdma link delete nvb 2>/dev/null
	rdma link delete nva 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

v4_gid() {
	grep -qx 0000:0000:0000:0000:0000:ffff:c000:020"$2" \
		/sys/class/infiniband/"$1"/ports/1/gids/*
}

setup() {
	NSA=$(ns_add rba) && NSB=$(ns_add rbb) || return 1
	ip -n "$NSA" link add va type veth peer name vb netns "$NSB" &&
		ip -n "$NSA" addr add 192.0.2.1/24 dev va &&
		ip -n "$NSB" addr add 192.0.2.2/24 dev vb &&
		ip -n "$NSA" link set va up && ip -n "$NSB" link set vb up &&
		ip netns exec "$NSA" rdma link add nva type vroce netdev va &&
		ip netns exec "$NSB" rdma link add nvb type vroce netdev vb &&
		wait_for 10 v4_gid nva 1 && wait_for 10 v4_gid nvb 2 || return 1
	MACA=$(ip netns exec "$NSA" cat /sys/class/net/va/address) &&
		MACB=$(ip netns exec "$NSB" cat /sys/class/net/vb/address)
}

fragments() {
	VROCE_DEV=nva VROCE_PEER_DEV=nvb timeout 600 python3 "$RX_PY" frag \
		--dev nva --ns "$NSB" --ifname vb --dmac "$MACA" --smac "$MACB" \
		--sip 192.0.2.2 --dip 192.0.2.1 --prog "$VROCE_BIN/inject_test" \
		--len 32768 --count 16
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan 2
check "two namespaces, veth pair, a vroce device at each end" setup
VROCE_VERBOSE=1 check "fragmented 32 KiB RoCE v2 datagrams at a live RC QP of path MTU 1024: dropped at receive, QPs unaffected, traffic byte-exact" \
	fragments
ktap_finished
