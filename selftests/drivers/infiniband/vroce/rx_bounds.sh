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
trap vroce_ns_devs_cleanup EXIT

setup() {
	vroce_veth_ns rba rbb && vroce_ns_devs nva nvb
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
