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
	ip link del pta 2>/dev/null
	ip link del ptt 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

state_is() {
	[ "$(port_attr $DEV state)" = "$1" ] &&
		[ "$(port_attr $DEV phys_state)" = "$2" ]
}

setup() {
	ip link add pta type veth peer name ptb &&
		ip link set pta up && ip link set ptb up &&
		rdma link add $DEV type vroce netdev pta &&
		wait_for 10 state_is "4: ACTIVE" "5: LinkUp"
}

carrier_follows() {
	ip link set ptb down || return 1
	wait_for 10 state_is "1: DOWN" "2: Polling" || return 1
	ibv_devinfo -d $DEV | grep -q "state:.*PORT_DOWN" || return 1
	ip link set ptb up || return 1
	wait_for 10 state_is "4: ACTIVE" "5: LinkUp" || return 1
	ibv_devinfo -d $DEV | grep -q "state:.*PORT_ACTIVE"
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
	ip link set pta mtu "$1" || return 1
	ibv_devinfo -d $DEV | grep -q "active_mtu:[[:space:]]*$2 " || {
		ibv_devinfo -d $DEV | grep mtu
		return 1
	}
}

mtu_follows() {
	mtu_maps 9000 4096 && mtu_maps 4200 4096 && mtu_maps 4000 2048 &&
		mtu_maps 1500 1024 && mtu_maps 1100 512 && mtu_maps 1500 1024
}

rate_follows() {
	local speed rate

	speed=$(ethtool pta | sed -n 's/.*Speed: \([0-9]*\)Mb\/s.*/\1/p')
	rate=$(port_attr $DEV rate)
	echo "netdev speed ${speed}Mb/s, port rate $rate"
	[ -n "$speed" ] && [ "${rate%% *}" = "$((speed / 1000))" ]
}

# The current_kbps of pt1's newest QP (QPN > 1) in cc_qps: a new QP starts
# at its line rate (rp_max_rate is 0).
qp_start_kbps() {
	awk 'NR > 1 && $1 > 1 { r = $4 } END { print r }' \
		/sys/kernel/debug/vroce/pt1/cc_qps 2>/dev/null
}

qp_shown() {
	[ -n "$(qp_start_kbps)" ]
}

# new_qp_starts_at KBPS: a QP created now on pt1 (ibv_rc_pingpong's, as it
# waits for a client) starts at KBPS.
new_qp_starts_at() {
	local pid kbps

	ibv_rc_pingpong -d pt1 -p 18515 >/dev/null 2>&1 &
	pid=$!
	wait_for 10 qp_shown
	kbps=$(qp_start_kbps)
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	echo "netdev speed $(ethtool ptt | sed -n 's/^[[:space:]]*Speed: //p')," \
		"new QP at ${kbps:-?} kb/s"
	[ "$kbps" = "$1" ]
}

tap_speed() {
	ethtool -s ptt speed "$1" duplex full autoneg off &&
		ethtool ptt | grep -q "Speed: $1Mb/s"
}

cc_line_rate_follows() {
	modprobe tun && ip tuntap add ptt mode tap && ip link set ptt up &&
		tap_speed 25000 && rdma link add pt1 type vroce netdev ptt &&
		new_qp_starts_at 25000000 || return 1
	# A link renegotiating a new speed goes down and up.
	tap_speed 40000 && ip link set ptt down && ip link set ptt up &&
		new_qp_starts_at 40000000 || return 1
	ip link del ptt
}

V4_GID=0000:0000:0000:0000:0000:ffff:c000:0201
V6_GID=2001:0db8:0000:0000:0000:0000:0000:0001

gids_for_addresses() {
	ip addr add 192.0.2.1/24 dev pta || return 1
	ip addr add 2001:db8::1/64 dev pta nodad || return 1
	wait_for 10 gid_present "$DEV" $V4_GID "IB/RoCE v1" &&
		wait_for 10 gid_present "$DEV" $V4_GID "RoCE v2" &&
		wait_for 10 gid_present "$DEV" $V6_GID "IB/RoCE v1" &&
		wait_for 10 gid_present "$DEV" $V6_GID "RoCE v2"
}

default_gids() {
	local mac eui

	mac=$(cat /sys/class/net/pta/address)
	eui=$(python3 -c '
import sys
b = bytes.fromhex(sys.argv[1].replace(":", ""))
e = bytes([b[0] ^ 2]) + b[1:3] + b"\xff\xfe" + b[3:]
print(":".join(e[i:i+2].hex() for i in range(0, 8, 2)))' "$mac")
	gid_present "$DEV" "fe80:0000:0000:0000:$eui" "IB/RoCE v1" &&
		gid_present "$DEV" "fe80:0000:0000:0000:$eui" "RoCE v2"
}

gids_removed() {
	ip addr del 192.0.2.1/24 dev pta || return 1
	ip addr del 2001:db8::1/64 dev pta || return 1
	wait_for 10 sh -c "! grep -qx $V4_GID /sys/class/infiniband/$DEV/ports/1/gids/*" &&
		wait_for 10 sh -c "! grep -qx $V6_GID /sys/class/infiniband/$DEV/ports/1/gids/*"
}

gid_table_size() {
	[ "$(ls /sys/class/infiniband/$DEV/ports/1/gids | wc -l)" = 128 ]
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
