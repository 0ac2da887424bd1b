#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# "rdma link add/delete" over every kind of Ethernet netdev, removal when the
# netdev goes away, and clear errors that leave nothing behind.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ibv_devices python3

cleanup() {
	udp_port_release
	wait 2>/dev/null
	ip link del lva 2>/dev/null
	ip link del lbr 2>/dev/null
	ip link del lbond 2>/dev/null
	ip link del ldum 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# add_del DEV NETDEV: create, check every view of it, delete, check it is gone.
add_del() {
	local dev="$1" ndev="$2"

	ip link set "$ndev" up || return 1
	rdma link add "$dev" type vroce netdev "$ndev" || return 1
	rdma_dev_exists "$dev" || return 1
	[ "$(rdma_dev_netdev "$dev")" = "$ndev" ] || {
		echo "rdma link shows netdev '$(rdma_dev_netdev "$dev")'"
		return 1
	}
	ibv_devices | grep -qw "$dev" || return 1
	rdma link delete "$dev" || return 1
	rdma_dev_gone "$dev"
}

over_veth() {
	ip link add lva type veth peer name lvb && add_del lv0 lva
}

over_bridge() {
	ip link add lbr type bridge && add_del lv0 lbr
}

over_bond() {
	ip link add lbond type bond mode active-backup && add_del lv0 lbond
}

over_vlan() {
	ip link add link lva name lva.10 type vlan id 10 && add_del lv0 lva.10
}

over_macvlan() {
	ip link add link lva name lmv type macvlan mode bridge &&
		add_del lv0 lmv
}

over_dummy() {
	ip link add ldum type dummy && add_del lv0 ldum
}

# No vroce device, and nothing under that name, after a failed add.
nothing_left() {
	rdma_dev_gone "$1" && ! rdma link show | grep -q "^link $1/"
}

missing_netdev() {
	fails_with "No such device" \
		rdma link add lbad type vroce netdev no-such-netdev &&
		nothing_left lbad
}

not_ethernet() {
	dmesg_mark not-ethernet
	fails_with "Invalid argument" rdma link add lbad type vroce netdev lo &&
		nothing_left lbad &&
		dmesg_since not-ethernet |
		grep -q "vroce: cannot add lbad: lo is not an Ethernet device"
}

second_device_same_netdev() {
	rdma link add lv1 type vroce netdev lvb || return 1
	dmesg_mark twice
	fails_with "File exists" rdma link add lv2 type vroce netdev lvb &&
		nothing_left lv2 && rdma_dev_exists lv1 &&
		dmesg_since twice | grep -q "vroce: lvb already has a vroce device"
}

same_name_twice() {
	dmesg_mark same-name
	fails_with "File exists" rdma link add lv1 type vroce netdev lva &&
		dmesg_since same-name |
		grep -q "vroce: cannot add lv1 over lva: an RDMA device of that name exists" &&
		rdma_dev_exists lv1 &&
		[ "$(rdma_dev_netdev lv1)" = lvb ] &&
		rdma link delete lv1 && rdma_dev_gone lv1
}

# The message names the namespace (as /proc/PID/ns/net does) and the
# inode of the socket holding the port (as /proc/net/udp does).
port_taken_in_netns() {
	local ns nsid ino want

	ns=$(ns_add link) || return 1
	ip -n "$ns" link add pva type veth peer name pvb || return 1
	if ! udp_port_hold "$ns"; then
		echo "cannot bind UDP 4791 in $ns:"
		cat "$VROCE_LOG.port"
		return 1
	fi
	nsid=$(ip netns exec "$ns" readlink /proc/self/ns/net) || return 1
	# The inode column of /proc/net/udp (port 4791 is 12B7).
	ino=$(ip netns exec "$ns" awk '$2 ~ /:12B7$/ { print $10; exit }' \
	      /proc/net/udp)
	if [ -z "$ino" ]; then
		echo "no socket inode for UDP 4791 in /proc/net/udp:"
		ip netns exec "$ns" cat /proc/net/udp
		return 1
	fi
	echo "holder: $nsid, socket inode $ino"
	want="vroce: UDP port 4791 is already in use in network namespace $nsid"
	# Without udp4_lib_lookup() (no NF_SOCKET/NF_TPROXY) no inode.
	if grep -qw udp4_lib_lookup /proc/kallsyms; then
		want+=", by socket inode $ino "
	else
		want+=" ("
	fi
	dmesg_mark port-in-ns
	fails_with "Address already in use" \
		ip netns exec "$ns" rdma link add lbad type vroce netdev pva &&
		nothing_left lbad &&
		dmesg_since port-in-ns |
		grep -F "$want"
	local rc=$?

	[ "$rc" = 0 ] || dmesg_since port-in-ns | grep vroce

	udp_port_release
	[ "$rc" = 0 ] || return 1
	# Once the port is free the same request succeeds.
	ip netns exec "$ns" rdma link add lv3 type vroce netdev pva &&
		rdma_dev_exists lv3 && rdma link delete lv3
}

netdev_removal() {
	ip link add lrm type veth peer name lrm2 || return 1
	rdma link add lv4 type vroce netdev lrm || return 1
	ip link del lrm || return 1
	wait_for 20 rdma_dev_gone lv4
}

netns_removal() {
	local ns

	ns=$(ns_add gone) || return 1
	ip -n "$ns" link add gva type veth peer name gvb || return 1
	ip netns exec "$ns" rdma link add lv5 type vroce netdev gva || return 1
	ip netns exec "$ns" rdma link add lv6 type vroce netdev gvb || return 1
	ip netns del "$ns" || return 1
	wait_for 30 rdma_dev_gone lv5 && wait_for 30 rdma_dev_gone lv6
}

netdev_moved() {
	local ns

	ns=$(ns_add moved) || return 1
	ip link add lmo type veth peer name lmo2 || return 1
	rdma link add lv7 type vroce netdev lmo || return 1
	ip link set lmo netns "$ns" || return 1
	wait_for 20 rdma_dev_gone lv7
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan 14
check "rdma link add/delete over a veth" over_veth
check "rdma link add/delete over a bridge" over_bridge
check "rdma link add/delete over a bond" over_bond
check "rdma link add/delete over a VLAN" over_vlan
check "rdma link add/delete over a macvlan" over_macvlan
check "rdma link add/delete over a dummy (physical-like) netdev" over_dummy
check "missing netdev: ENODEV, nothing created" missing_netdev
check "non-Ethernet netdev: EINVAL with a kernel message" not_ethernet
check "second device on one netdev: EEXIST with a kernel message" \
	second_device_same_netdev
check "device name already taken: EEXIST, first device intact" same_name_twice
check "UDP 4791 taken in the netns: EADDRINUSE, message, nothing left" \
	port_taken_in_netns
check "netdev unregistration removes the device" netdev_removal
check "namespace deletion removes its devices" netns_removal
check "moving the netdev to another namespace removes the device" \
	netdev_moved
ktap_finished
