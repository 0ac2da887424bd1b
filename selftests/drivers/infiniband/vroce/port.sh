#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The port follows its netdev: state and physical state from carrier and
# up/down (with IB_EVENT_PORT_ACTIVE/PORT_ERR), active MTU from the netdev
# MTU, rate from the netdev link speed, and a GID table with RoCE v1 and
# RoCE v2 GIDs for each IPv4 and IPv6 address. Congestion control's line
# rate (a new QP's DCQCN maximum) follows the link speed of a tap, whose
# speed ethtool sets, from creation and after the link goes down and up.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ibv_devinfo ethtool ibv_rc_pingpong modprobe

EVENTS="$VROCE_BIN/port_events"
DEV=pv0

cleanup() {
	ip -force -batch - 2>/dev/null <<-EOF
		link del pta
		link del ptt
	EOF
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# Builtin reads: wait_for polls this every 0.1 s.
state_is() {
	local port=/sys/class/infiniband/$DEV/ports/1 state phys

	read -r state <"$port/state" && read -r phys <"$port/phys_state" &&
		[ "$state" = "$1" ] && [ "$phys" = "$2" ]
}

# port_is STATE: ibv_devinfo shows the port in STATE (PORT_ACTIVE, ...).
port_is() {
	local out

	out=$(ibv_devinfo -d $DEV) || return 1
	[[ $out =~ state:[[:blank:]]*$1 ]]
}

setup() {
	ip -batch - <<-EOF &&
		link add pta type veth peer name ptb
		link set pta up
		link set ptb up
	EOF
		rdma link add $DEV type vroce netdev pta &&
		wait_for 10 state_is "4: ACTIVE" "5: LinkUp"
}

carrier_follows() {
	ip link set ptb down || return 1
	wait_for 10 state_is "1: DOWN" "2: Polling" || return 1
	port_is PORT_DOWN || return 1
	ip link set ptb up || return 1
	wait_for 10 state_is "4: ACTIVE" "5: LinkUp" || return 1
	port_is PORT_ACTIVE
}

admin_down_is_disabled() {
	ip link set pta down || return 1
	wait_for 10 state_is "1: DOWN" "3: Disabled" || return 1
	ip link set pta up
	wait_for 10 state_is "4: ACTIVE" "5: LinkUp"
}

event_on() {
	"$EVENTS" $DEV "$1" ip link set ptb "$2"
}

events() {
	event_on IBV_EVENT_PORT_ERR down && event_on IBV_EVENT_PORT_ACTIVE up
}

# mtu_maps NETDEV_MTU IB_MTU: ib_core's iboe_get_mtu() rule.
mtu_maps() {
	local out

	ip link set pta mtu "$1" || return 1
	out=$(ibv_devinfo -d $DEV) || return 1
	[[ $out =~ active_mtu:[[:space:]]*$2\  ]] && return 0
	echo "netdev MTU $1, want active_mtu $2:"
	echo "$out"
	return 1
}

mtu_follows() {
	mtu_maps 9000 4096 && mtu_maps 4200 4096 && mtu_maps 4000 2048 &&
		mtu_maps 1500 1024 && mtu_maps 1100 512 && mtu_maps 1500 1024
}

rate_follows() {
	local speed rate

	# The speed ethtool shows (get_link_ksettings), in Mb/s.
	read -r speed </sys/class/net/pta/speed
	read -r rate </sys/class/infiniband/$DEV/ports/1/rate
	echo "netdev speed ${speed}Mb/s, port rate $rate"
	[ -n "$speed" ] && [ "${rate%% *}" = "$((speed / 1000))" ]
}

# KBPS: the current_kbps of pt1's newest QP (QPN > 1) in cc_qps (after a
# header line), empty if none: a new QP starts at its line rate
# (rp_max_rate is 0). Builtins only: wait_for polls it.
qp_start_kbps() {
	local qpn kbps

	KBPS=
	{
		read -r _ &&
		while read -r qpn _ _ kbps _; do
			[[ $qpn =~ ^[0-9]+$ ]] && ((qpn > 1)) && KBPS=$kbps
		done
	} 2>/dev/null </sys/kernel/debug/vroce/pt1/cc_qps
	[ -n "$KBPS" ]
}

# new_qp_starts_at KBPS: a QP created now on pt1 (ibv_rc_pingpong's, as it
# waits for a client) starts at KBPS.
new_qp_starts_at() {
	local pid speed='?'

	ibv_rc_pingpong -d pt1 -p 18515 >/dev/null 2>&1 &
	pid=$!
	wait_for 10 qp_start_kbps
	qp_start_kbps
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	read -r speed </sys/class/net/ptt/speed
	echo "netdev speed ${speed}Mb/s, new QP at ${KBPS:-?} kb/s"
	[ "$KBPS" = "$1" ]
}

# tap_speed MBPS: ethtool sets the tap's speed, which the netdev then
# reports (sysfs speed: what ethtool shows).
tap_speed() {
	local speed

	ethtool -s ptt speed "$1" duplex full autoneg off &&
		read -r speed </sys/class/net/ptt/speed &&
		[ "$speed" = "$1" ]
}

cc_line_rate_follows() {
	{ [ -d /sys/module/tun ] || modprobe tun; } &&
		ip -batch - <<-EOF &&
		tuntap add ptt mode tap
		link set ptt up
	EOF
		tap_speed 25000 && rdma link add pt1 type vroce netdev ptt &&
		new_qp_starts_at 25000000 || return 1
	# A link renegotiating a new speed goes down and up.
	tap_speed 40000 && ip -batch - <<-EOF &&
		link set ptt down
		link set ptt up
	EOF
		new_qp_starts_at 40000000 || return 1
	ip link del ptt
}

V4_GID=0000:0000:0000:0000:0000:ffff:c000:0201
V6_GID=2001:0db8:0000:0000:0000:0000:0000:0001

gids_for_addresses() {
	ip -batch - <<-EOF || return 1
		addr add 192.0.2.1/24 dev pta
		addr add 2001:db8::1/64 dev pta nodad
	EOF
	wait_for 10 gid_present "$DEV" $V4_GID "IB/RoCE v1" &&
		wait_for 10 gid_present "$DEV" $V4_GID "RoCE v2" &&
		wait_for 10 gid_present "$DEV" $V6_GID "IB/RoCE v1" &&
		wait_for 10 gid_present "$DEV" $V6_GID "RoCE v2"
}

default_gids() {
	local m0 m1 m2 m3 m4 m5 eui

	# The modified EUI-64 of the MAC: ff:fe in the middle, the
	# universal/local bit flipped.
	IFS=: read -r m0 m1 m2 m3 m4 m5 </sys/class/net/pta/address || return 1
	printf -v eui '%02x%s:%sff:fe%s:%s%s' $((0x$m0 ^ 2)) \
		"$m1" "$m2" "$m3" "$m4" "$m5"
	echo "EUI-64 $eui"
	gid_present "$DEV" "fe80:0000:0000:0000:$eui" "IB/RoCE v1" &&
		gid_present "$DEV" "fe80:0000:0000:0000:$eui" "RoCE v2"
}

# gid_absent DEV GID: no entry of DEV's GID table is GID.
gid_absent() {
	! gid_present "$@"
}

gids_removed() {
	ip -batch - <<-EOF || return 1
		addr del 192.0.2.1/24 dev pta
		addr del 2001:db8::1/64 dev pta
	EOF
	wait_for 10 gid_absent "$DEV" $V4_GID &&
		wait_for 10 gid_absent "$DEV" $V6_GID
}

gid_table_size() {
	local gids=("/sys/class/infiniband/$DEV/ports/1/gids/"*)

	echo "${#gids[@]} entries"
	[ "${#gids[@]}" = 128 ]
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan 11
check "port ACTIVE/LinkUp over an up veth with carrier" setup
check "port DOWN/Polling without carrier, ACTIVE again with it" \
	carrier_follows
check "port DOWN/Disabled when the netdev is down" admin_down_is_disabled
check "IB_EVENT_PORT_ERR and IB_EVENT_PORT_ACTIVE reach user space" events
check "active MTU follows the netdev MTU (iboe_get_mtu rule)" mtu_follows
check "port rate follows the netdev link speed" rate_follows
check "a new QP's DCQCN line rate follows the netdev link speed" \
	cc_line_rate_follows
check "GID table has 128 entries" gid_table_size
check "default RoCE v1 and v2 GIDs from the MAC" default_gids
check "RoCE v1 and v2 GIDs for an IPv4 and an IPv6 address" \
	gids_for_addresses
check "GIDs go away with the addresses" gids_removed
ktap_finished
