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
	ip -force -batch - 2>/dev/null <<-EOF
		link del lva
		link del lbr
		link del lbond
		link del ldum
	EOF
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# netdev_is DEV NETDEV: "rdma link" shows DEV's port 1 over NETDEV.
netdev_is() {
	local out

	out=$(rdma link show "$1/1") || return 1
	[[ $out =~ \ netdev\ ([^ ]*) ]] && [ "${BASH_REMATCH[1]}" = "$2" ] &&
		return 0
	echo "rdma link shows: $out"
	return 1
}

# add_del DEV NETDEV ARGS...: "ip link add ARGS" makes NETDEV, set up;
# create DEV over it, check every view of it, delete, check it is gone.
add_del() {
	local dev="$1" ndev="$2" out

	ip -batch - <<-EOF || return 1
		link add ${*:3}
		link set $ndev up
	EOF
	rdma link add "$dev" type vroce netdev "$ndev" || return 1
	rdma_dev_exists "$dev" || return 1
	netdev_is "$dev" "$ndev" || return 1
	out=$(ibv_devices) || return 1
	[[ $out =~ (^|[^[:alnum:]_])$dev([^[:alnum:]_]|$) ]] || return 1
	rdma link delete "$dev" || return 1
	rdma_dev_gone "$dev"
}

over_veth() {
	add_del lv0 lva lva type veth peer name lvb
}

over_bridge() {
	add_del lv0 lbr lbr type bridge
}

over_bond() {
	add_del lv0 lbond lbond type bond mode active-backup
}

over_vlan() {
	add_del lv0 lva.10 link lva name lva.10 type vlan id 10
}

over_macvlan() {
	add_del lv0 lmv link lva name lmv type macvlan mode bridge
}

over_dummy() {
	add_del lv0 ldum ldum type dummy
}

# No vroce device, and nothing under that name, after a failed add.
nothing_left() {
	local out

	rdma_dev_gone "$1" || return 1
	out=$(rdma link show)
	[[ $'\n'$out != *$'\n'"link $1/"* ]]
}

# dmesg_has MARK TEXT: a kernel message since MARK (dmesg_mark) holds
# TEXT (a fixed string); print it.
dmesg_has() {
	dmesg | awk -v mark="vroce-test: $1" -v text="$2" '
		on && index($0, text) { print; found = 1; exit }
		substr($0, length($0) - length(mark) + 1) == mark { on = 1 }
		END { exit !found }'
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
		dmesg_has not-ethernet \
			"vroce: cannot add lbad: lo is not an Ethernet device"
}

second_device_same_netdev() {
	rdma link add lv1 type vroce netdev lvb || return 1
	dmesg_mark twice
	fails_with "File exists" rdma link add lv2 type vroce netdev lvb &&
		nothing_left lv2 && rdma_dev_exists lv1 &&
		dmesg_has twice "vroce: lvb already has a vroce device"
}

same_name_twice() {
	dmesg_mark same-name
	fails_with "File exists" rdma link add lv1 type vroce netdev lva &&
		dmesg_has same-name \
			"vroce: cannot add lv1 over lva: an RDMA device of that name exists" &&
		rdma_dev_exists lv1 && netdev_is lv1 lvb &&
		rdma link delete lv1 && rdma_dev_gone lv1
}

# The message names the namespace (as /proc/PID/ns/net does) and the
# inode of the socket holding the port (as /proc/net/udp does).
port_taken_in_netns() {
	local ns nsid addr inode ino='' want

	ns=$(ns_add link) || return 1
	ip -n "$ns" link add pva type veth peer name pvb || return 1
	if ! udp_port_hold "$ns"; then
		echo "cannot bind UDP 4791 in $ns:"
		cat "$VROCE_LOG.port"
		return 1
	fi
	# The holder runs in the namespace: its /proc/PID/ns/net and
	# /proc/PID/net are the namespace's.
	nsid=$(readlink "/proc/$VROCE_PORT_PID/ns/net") || return 1
	# The inode column of /proc/net/udp (port 4791 is 12B7).
	while read -r _ addr _ _ _ _ _ _ _ inode _; do
		[[ $addr == *:12B7 ]] && ino=$inode && break
	done <"/proc/$VROCE_PORT_PID/net/udp"
	if [ -z "$ino" ]; then
		echo "no socket inode for UDP 4791 in /proc/net/udp:"
		cat "/proc/$VROCE_PORT_PID/net/udp"
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
		dmesg_has port-in-ns "$want"
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
