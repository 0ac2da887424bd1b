#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A device sees the frames of its own namespace only, also when they
# arrive on an upper device whose lower device is in another namespace:
#
#   [ns nua-*: nva over va] ==veth== [ns nub-*: vb, the sender]
#         |
#         +-- macvlans mv0, mv1 (bridge), or ipvlans iv0, iv1 (l2), of va,
#             moved into [ns nuc-*: nvc over mv1, or nvi over iv1]
#
# rx_frames.py ud sends good RoCE frames from vb (a UD SEND ONLY to QPN 1,
# whose wrong Q_Key the GSI QP that receives it counts) to mv0 and iv0,
# which have no device in C: they arrive there (the upper device counts
# them) and no counter of A's device moves: RoCE v2 (through C's UDP
# socket, which the device in C opens) and RoCE v1 (the ethertype handler,
# which sees every namespace) for the macvlan, RoCE v2 for the ipvlan (an
# ipvlan takes IP packets only; RoCE v1 frames stay on va, in A). A device
# created in C over mv1 or iv1 receives what is sent to it. A macvlan and
# an ipvlan cannot share a lower device, hence the two rounds.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma python3

RX_PY="$VROCE_LIB_DIR/rx_frames.py"
NSC=
N=4

cleanup() {
	rdma link delete nvc 2>/dev/null
	rdma link delete nvi 2>/dev/null
	rdma link delete nva 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

setup() {
	vroce_veth_ns nua nub && NSC=$(ns_add nuc) && vroce_ns_devs nva
}

# upper NAME TYPE MODE ADDR: an upper device of va, moved into C, up,
# with ADDR.
upper() {
	ip -n "$NSA" link add "$1" link va type "$2" mode "$3" &&
		ip -n "$NSA" link set "$1" netns "$NSC" &&
		ip -n "$NSC" addr add "$4/24" dev "$1" &&
		ip -n "$NSC" link set "$1" up
}

macvlans() {
	upper mv0 macvlan bridge 192.0.2.3 &&
		upper mv1 macvlan bridge 192.0.2.4 &&
		ip netns exec "$NSC" rdma link add nvc type vroce netdev mv1 &&
		wait_for 10 gid_present nvc 0000:0000:0000:0000:0000:ffff:c000:0204
}

ipvlans() {
	ip -n "$NSC" link del mv0 && ip -n "$NSC" link del mv1 &&
		wait_for 10 rdma_dev_gone nvc &&
		upper iv0 ipvlan l2 192.0.2.5 && upper iv1 ipvlan l2 192.0.2.6 &&
		ip netns exec "$NSC" rdma link add nvi type vroce netdev iv1 &&
		wait_for 10 gid_present nvi 0000:0000:0000:0000:0000:ffff:c000:0206
}

hw_counters() {
	grep -r . "/sys/class/infiniband/$1/ports/1/hw_counters" |
		sed 's|.*/||' | sort
}

# rx_packets NS IFACE
rx_packets() {
	ip netns exec "$1" cat "/sys/class/net/$2/statistics/rx_packets"
}

# send KIND NS IFACE ADDR: N frames from vb to IFACE (in NS) at ADDR; wait
# until IFACE counted them.
send() {
	local mac rx0

	mac=$(ip netns exec "$2" cat "/sys/class/net/$3/address") &&
		rx0=$(rx_packets "$2" "$3") || return 1
	python3 "$RX_PY" ud --ns "$NSB" --ifname vb --kind "$1" \
		--dmac "$mac" --smac "$MACB" --sip 192.0.2.2 --dip "$4" \
		--count "$N" || return 1
	if ! wait_for 10 test "$(rx_packets "$2" "$3")" -ge $((rx0 + N)); then
		echo "$3 received $(($(rx_packets "$2" "$3") - rx0)) of $N frames"
		return 1
	fi
	sleep 0.5
}

# seen DEV KIND NS IFACE ADDR: the N frames to IFACE are DEV's: its GSI QP
# counts them (rcvd_qkey_err); unless DEV is nva, no counter of nva moves.
# DEV "-": nobody's, no counter of nva moves.
seen() {
	local dev=$1 before after q0=0 q1=0

	shift
	before=$(hw_counters nva) || return 1
	[ "$dev" = - ] || q0=$(hw_counter "$dev" rcvd_qkey_err) || return 1
	send "$@" || return 1
	after=$(hw_counters nva) || return 1
	if [ "$dev" != - ]; then
		q1=$(hw_counter "$dev" rcvd_qkey_err) || return 1
		if [ $((q1 - q0)) != "$N" ]; then
			echo "$dev: rcvd_qkey_err +$((q1 - q0)), want +$N"
			return 1
		fi
	fi
	[ "$dev" = nva ] || [ "$before" = "$after" ] && return 0
	echo "nva's counters moved:"
	diff <(echo "$before") <(echo "$after") | sed -n "s/^< /was /p; s/^> /now /p"
	return 1
}

# both_kinds DEV NS IFACE ADDR: seen, for RoCE v2 and RoCE v1.
both_kinds() {
	seen "$1" v4 "$2" "$3" "$4" && seen "$1" v1 "$2" "$3" "$4"
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan 9
check "three namespaces, a device over va in A" setup
check "the device in A receives RoCE v2 and v1 on va" \
	both_kinds nva "$NSA" va 192.0.2.1
check "macvlans mv0, mv1 of va in C, a device in C over mv1" macvlans
check "RoCE v2 to the macvlan in C: not handled by A's device" \
	seen - v4 "$NSC" mv0 192.0.2.3
check "RoCE v1 to the macvlan in C: not handled by A's device" \
	seen - v1 "$NSC" mv0 192.0.2.3
check "RoCE v2 and v1 to the macvlan with a device in C: that device's" \
	both_kinds nvc "$NSC" mv1 192.0.2.4
check "ipvlans iv0, iv1 (l2) of va in C, a device in C over iv1" ipvlans
check "RoCE v2 to the ipvlan in C: not handled by A's device" \
	seen - v4 "$NSC" iv0 192.0.2.5
check "RoCE v2 to the ipvlan with a device in C: that device's" \
	seen nvi v4 "$NSC" iv1 192.0.2.6
ktap_finished
