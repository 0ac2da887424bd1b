#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Devices in network namespaces: two namespaces joined by a veth pair, one
# vroce device in each, created from inside the namespace; each namespace
# has its own RoCEv2 socket; the devices are independent.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ibv_devices ibv_devinfo ss

cleanup() {
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

setup() {
	vroce_veth_ns nsa nsb
}

add_in_each() {
	ip netns exec "$NSA" rdma link add nva type vroce netdev va &&
		ip netns exec "$NSB" rdma link add nvb type vroce netdev vb &&
		rdma_dev_exists nva && rdma_dev_exists nvb
}

sockets_per_netns() {
	roce_socket "$NSA" && roce_socket "$NSB"
}

listed_in_netns() {
	ip netns exec "$NSA" ibv_devices | grep -qw nva &&
		ip netns exec "$NSB" ibv_devinfo -d nvb | grep -q PORT_ACTIVE
}

# Deleting one device leaves the other and keeps B's socket.
independent() {
	rdma link delete nva || return 1
	rdma_dev_gone nva && rdma_dev_exists nvb || return 1
	! roce_socket "$NSA" && roce_socket "$NSB"
}

readd() {
	ip netns exec "$NSA" rdma link add nva type vroce netdev va &&
		roce_socket "$NSA" && rdma link delete nva &&
		rdma link delete nvb && ! roce_socket "$NSB"
}

init_net_socket_while_loaded() {
	ss -Huan "sport = :4791" | grep -q 4791
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
