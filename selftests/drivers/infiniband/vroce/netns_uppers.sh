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
# The PID of a process in each of A and C (ns_proc), by namespace name.
declare -A NS_PROC=()

cleanup() {
	local pid dev

	for pid in "${NS_PROC[@]}"; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	for dev in nvc nvi nva; do
		rdma_dev_exists "$dev" && rdma link delete "$dev" 2>/dev/null
	done
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# ns_proc NS: a process that sleeps in namespace NS, its PID in
# NS_PROC[NS] once it runs there. ip netns exec mounts NS's sysfs in the
# process's own mount namespace, so the script reads NS's netdevs under
# /proc/PID/root/sys/class/net with builtins: no process per read.
ns_proc() {
	ip netns exec "$1" sleep 600 &
	NS_PROC[$1]=$!
	wait_for 10 vroce_proc_is "$!" sleep
}

setup() {
	vroce_veth_ns nua nub && NSC=$(ns_add nuc) && vroce_ns_devs nva &&
		ns_proc "$NSA" && ns_proc "$NSC"
}

# uppers TYPE MODE NAME ADDR...: upper devices NAME of va, moved into C,
# up, with ADDR each.
uppers() {
	local type=$1 mode=$2 add='' conf=''

	shift 2
	while [ $# -gt 1 ]; do
		add+="link add $1 link va type $type mode $mode"$'\n'
		add+="link set $1 netns $NSC"$'\n'
		conf+="addr add $2/24 dev $1"$'\n'"link set $1 up"$'\n'
		shift 2
	done
	ip -n "$NSA" -batch - <<<"$add" && ip -n "$NSC" -batch - <<<"$conf"
}

macvlans() {
	uppers macvlan bridge mv0 192.0.2.3 mv1 192.0.2.4 &&
		ip netns exec "$NSC" rdma link add nvc type vroce netdev mv1 &&
		wait_for 10 gid_present nvc 0000:0000:0000:0000:0000:ffff:c000:0204
}

ipvlans() {
	ip -n "$NSC" -batch - <<-EOF &&
		link del mv0
		link del mv1
	EOF
		wait_for 10 rdma_dev_gone nvc &&
		uppers ipvlan l2 iv0 192.0.2.5 iv1 192.0.2.6 &&
		ip netns exec "$NSC" rdma link add nvi type vroce netdev iv1 &&
		wait_for 10 gid_present nvi 0000:0000:0000:0000:0000:ffff:c000:0206
}

# hw_counters DEV VAR: DEV's hardware counters into VAR, a "name:value"
# line each.
hw_counters() {
	local -n hw_counters_out=$2
	local f v

	hw_counters_out=
	for f in "/sys/class/infiniband/$1/ports/1/hw_counters/"*; do
		read -r v <"$f" || return 1
		hw_counters_out+="${f##*/}:$v"$'\n'
	done
}

# rx_counted NETDEV_DIR MIN: the netdev has counted MIN received packets.
rx_counted() {
	local n

	read -r n <"$1/statistics/rx_packets" && [ "$n" -ge "$2" ]
}

# send KIND NS IFACE ADDR: N frames from vb to IFACE (in NS) at ADDR; wait
# until IFACE counted them.
send() {
	local sys=/proc/${NS_PROC[$2]}/root/sys/class/net/$3 mac rx0 rx

	read -r mac <"$sys/address" &&
		read -r rx0 <"$sys/statistics/rx_packets" || return 1
	python3 "$RX_PY" ud --ns "$NSB" --ifname vb --kind "$1" \
		--dmac "$mac" --smac "$MACB" --sip 192.0.2.2 --dip "$4" \
		--count "$N" || return 1
	if ! wait_for 10 rx_counted "$sys" $((rx0 + N)); then
		read -r rx <"$sys/statistics/rx_packets"
		echo "$3 received $((rx - rx0)) of $N frames"
		return 1
	fi
	nap 0.5
}

# seen DEV KIND NS IFACE ADDR: the N frames to IFACE are DEV's: its GSI QP
# counts them (rcvd_qkey_err); unless DEV is nva, no counter of nva moves.
# DEV "-": nobody's, no counter of nva moves.
seen() {
	local dev=$1 before after q0=0 q1=0

	local qkey_err=/sys/class/infiniband/$dev/ports/1/hw_counters/rcvd_qkey_err

	shift
	hw_counters nva before || return 1
	[ "$dev" = - ] || read -r q0 <"$qkey_err" || return 1
	send "$@" || return 1
	hw_counters nva after || return 1
	if [ "$dev" != - ]; then
		read -r q1 <"$qkey_err" || return 1
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
