#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Stock rdma-core sees vroce devices (rxe user ABI): ibv_devices lists them,
# ibv_devinfo -v shows an ACTIVE Ethernet port with RoCE v1 and v2 GIDs,
# and the user-space provider bound is rdma-core's rxe provider.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ibv_devices ibv_devinfo

INFO="$VROCE_LOG.info"

cleanup() {
	ip link del ra 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

has_v2_gid() {
	ibv_devinfo -v -d rv0 >"$INFO" 2>&1 &&
		grep -q "::ffff:192.0.2.21, RoCE v2" "$INFO"
}

setup() {
	ip link add ra type veth peer name rb && ip link set ra up &&
		ip link set rb up &&
		ip addr add 192.0.2.21/24 dev ra &&
		ip addr add 2001:db8::21/64 dev ra nodad &&
		rdma link add rv0 type vroce netdev ra &&
		wait_for 10 has_v2_gid
}

listed() {
	ibv_devices | awk '{print $1}' | grep -qx rv0
}

info_has() {
	ibv_devinfo -v -d rv0 >"$INFO" 2>&1 || { cat "$INFO"; return 1; }
	grep -Eq "$1" "$INFO" || { cat "$INFO"; return 1; }
}

driver_id_rxe() {
	rdma -d dev show rv0 | grep -q "driver rxe" ||
		rdma -d dev show rv0
}

node_type_ca() {
	[ "$(cat /sys/class/infiniband/rv0/node_type)" = "1: CA" ]
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan 10
check "device over a veth with IPv4 and IPv6 addresses" setup
check "ibv_devices lists the device" listed
check "ibv_devinfo: transport InfiniBand, port PORT_ACTIVE" \
	info_has "state:[[:space:]]+PORT_ACTIVE \(4\)"
check "ibv_devinfo: link_layer Ethernet" info_has "link_layer:[[:space:]]+Ethernet"
# ibv_devinfo prints RoCE v1 GIDs in raw form, RoCE v2 GIDs as addresses.
check "ibv_devinfo: RoCE v1 GID for the IPv4 address" \
	info_has "0000:0000:0000:0000:0000:ffff:c000:0215, RoCE v1"
check "ibv_devinfo: RoCE v2 GID for the IPv4 address" \
	info_has "::ffff:192.0.2.21, RoCE v2"
check "ibv_devinfo: RoCE v1 and v2 GIDs for the IPv6 address" \
	sh -c "grep -q '2001:0db8:0000:0000:0000:0000:0000:0021, RoCE v1' $INFO &&
		grep -q '2001:db8::21, RoCE v2' $INFO"
check "ibv_devinfo: vendor id 0xffffff, one port" \
	sh -c "grep -q 'vendor_id:.*0xffffff' $INFO && grep -q 'phys_port_cnt:.*1' $INFO"
check "rdma dev reports the rxe driver id" driver_id_rxe
check "node type is CA" node_type_ca
ktap_finished
