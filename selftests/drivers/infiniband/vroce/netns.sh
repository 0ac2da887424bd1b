#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Devices in network namespaces: two namespaces joined by a veth pair, one
# vroce device in each, created from inside the namespace; each namespace
# has its own RoCEv2 socket; the devices are independent.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ibv_devices ibv_devinfo ss

# The PID of a process in A and in B (ns_proc).
NS_PROC_A=
NS_PROC_B=

cleanup() {
	bg_stop NS_PROC_A
	bg_stop NS_PROC_B
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# ns_proc NS VAR: a process that sleeps in namespace NS, its PID in VAR
# once it runs there: /proc/PID/net is NS's, read with builtins (no
# process per look at NS's sockets).
ns_proc() {
	local -n ns_proc_pid=$2

	ip netns exec "$1" sleep 600 &
	ns_proc_pid=$!
	wait_for 10 vroce_proc_is "$ns_proc_pid" sleep
}

setup() {
	vroce_veth_ns nsa nsb && ns_proc "$NSA" NS_PROC_A &&
		ns_proc "$NSB" NS_PROC_B
}

add_in_each() {
	ip netns exec "$NSA" rdma link add nva type vroce netdev va &&
		ip netns exec "$NSB" rdma link add nvb type vroce netdev vb &&
		rdma_dev_exists nva && rdma_dev_exists nvb
}

# udp_4791 PROC_NET: a UDP socket (IPv4 or IPv6) is bound to port 4791
# (hex 12B7) in the namespace of the /proc/net directory PROC_NET: the
# sockets "ss -uan" lists, read with builtins.
udp_4791() {
	local f addr

	for f in "$1/udp" "$1/udp6"; do
		while read -r _ addr _; do
			[[ $addr == *:12B7 ]] && return 0
		done <"$f"
	done
	return 1
}

sockets_per_netns() {
	udp_4791 "/proc/$NS_PROC_A/net" && udp_4791 "/proc/$NS_PROC_B/net"
}

listed_in_netns() {
	local out

	out=$(ip netns exec "$NSA" ibv_devices) &&
		[[ $out =~ (^|[^[:alnum:]_])nva([^[:alnum:]_]|$) ]] &&
		out=$(ip netns exec "$NSB" ibv_devinfo -d nvb) &&
		[[ $out == *PORT_ACTIVE* ]]
}

# Deleting one device leaves the other and keeps B's socket.
independent() {
	rdma link delete nva || return 1
	rdma_dev_gone nva && rdma_dev_exists nvb || return 1
	! udp_4791 "/proc/$NS_PROC_A/net" && udp_4791 "/proc/$NS_PROC_B/net"
}

readd() {
	ip netns exec "$NSA" rdma link add nva type vroce netdev va &&
		udp_4791 "/proc/$NS_PROC_A/net" && rdma link delete nva &&
		rdma link delete nvb && ! udp_4791 "/proc/$NS_PROC_B/net"
}

init_net_socket_while_loaded() {
	udp_4791 /proc/self/net
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan 7
check "two namespaces joined by a veth pair" setup
check "rdma link add from inside each namespace" add_in_each
check "a RoCEv2 UDP socket in each namespace with a device" sockets_per_netns
check "devices are visible from inside their namespaces" listed_in_netns
check "devices are independent; socket closes with the last device" \
	independent
check "devices can be re-created and deleted in a namespace" readd
check "init_net holds UDP 4791 while the module is loaded" \
	init_net_socket_while_loaded
ktap_finished
