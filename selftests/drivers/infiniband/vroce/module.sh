#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Module lifecycle: load and unload, a taken UDP port 4791, mutual
# exclusion with rdma_rxe (both use RDMA_DRIVER_RXE), and
# unload with devices and open user contexts present.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ibv_devices python3 modprobe ss

HOLD="$VROCE_BIN/hold_ctx"
NS=
HOLDER_PID=

cleanup() {
	[ -n "$HOLDER_PID" ] && kill "$HOLDER_PID" 2>/dev/null
	udp_port_release
	wait 2>/dev/null
	vroce_unload 2>/dev/null
	[ ! -d /sys/module/rdma_rxe ] || rmmod rdma_rxe 2>/dev/null
	vroce_cleanup
}
trap cleanup EXIT

# has_line FILE PREFIX: a line of FILE starts with PREFIX. Builtins only:
# it is polled while a program starts, seconds on the debug kernel.
has_line() {
	local l

	while read -r l || [ -n "$l" ]; do
		[[ $l == "$2"* ]] && return 0
		l=
	done <"$1"
	return 1
}

# dmesg_has MARK RE: dmesg_since MARK has a line that matches the basic
# regular expression RE (sed exits 9 at the first).
dmesg_has() {
	dmesg | sed -n "/vroce-test: $1\$/,\${/$2/q9}"
	[ "${PIPESTATUS[1]}" = 9 ]
}

load_unload() {
	vroce_load && vroce_loaded && vroce_unload && ! vroce_loaded
}

refuses_when_port_taken() {
	local out

	udp_port_hold "" || return 1
	dmesg_mark port-taken
	vroce_modprobe_deps
	if out=$(insmod "$VROCE_KO" 2>&1); then
		echo "insmod succeeded although UDP 4791 is taken"
		udp_port_release
		return 1
	fi
	udp_port_release
	echo "$out"
	[[ $out == *"Address already in use"* ]] &&
		dmesg_has port-taken "vroce: UDP port 4791 is already in use.*rdma_rxe"
}

loads_after_port_released() {
	load_unload
}

# Whether UDP 4791 (hex 12B7) is bound in init_net: the sockets "ss -uan"
# lists, read from /proc/net/udp and udp6.
port_bound() {
	local f addr

	for f in /proc/net/udp /proc/net/udp6; do
		while read -r _ addr _; do
			[[ $addr == *:12B7 ]] && return 0
		done <"$f"
	done
	return 1
}

# rdma_rxe and vroce share a driver id, and rdma_rxe takes every device with
# it for its own: whichever comes second must not load, on every kernel
# (rdma_rxe of 7.2 no longer binds UDP 4791 when it loads).
rxe_refused_while_loaded() {
	local out

	vroce_load || return 1
	dmesg_mark rxe-refused
	if out=$(modprobe rdma_rxe 2>&1); then
		echo "rdma_rxe loaded next to vroce"
		rmmod rdma_rxe
		return 1
	fi
	echo "$out"
	[[ $out == *busy* ]] &&
		dmesg_has rxe-refused "vroce: refusing to let rdma_rxe load" &&
		vroce_loaded && port_bound && vroce_unload
}

vroce_refused_while_rxe_loaded() {
	local out

	modprobe rdma_rxe || return 1
	dmesg_mark vroce-refused
	if out=$(insmod "$VROCE_KO" 2>&1); then
		echo "vroce loaded next to rdma_rxe"
		return 1
	fi
	echo "$out"
	rmmod rdma_rxe || return 1
	[[ $out == *"Device or resource busy"* ]] &&
		dmesg_has vroce-refused "vroce: rdma_rxe is loaded"
}

# add_devices: modv0 and modv1 over the veth pair mva/mvb in init_net, and
# modv2 over nva in the namespace NS (ns_add's, with lo up), in an ip or
# rdma batch per namespace.
add_devices() {
	local i

	NS=mod-$$
	VROCE_NETNS+=("$NS")
	ip -batch - <<-EOF || return 1
		netns add $NS
		link add mva type veth peer name mvb
		link set mva up
		link set mvb up
	EOF
	ip -n "$NS" -batch - <<-EOF || return 1
		link set lo up
		link add nva type veth peer name nvb
	EOF
	rdma -b - <<-EOF || return 1
		link add modv0 type vroce netdev mva
		link add modv1 type vroce netdev mvb
	EOF
	ip netns exec "$NS" rdma link add modv2 type vroce netdev nva || return 1
	for i in 0 1 2; do
		rdma_dev_exists "modv$i" || return 1
	done
}

unload_with_open_contexts() {
	local out="$VROCE_LOG.hold"

	vroce_load && add_devices || return 1
	"$HOLD" modv0 modv2 >"$out" 2>&1 &
	HOLDER_PID=$!
	wait_for 20 has_line "$out" ready || { echo "$(<"$out")"; return 1; }
	# Must not wait for the process: contexts are disassociated.
	timeout 60 rmmod vroce || return 1
	rdma_dev_gone modv0 && rdma_dev_gone modv1 && rdma_dev_gone modv2 ||
		return 1
	kill -USR1 "$HOLDER_PID"
	wait "$HOLDER_PID"
	local rc=$?
	HOLDER_PID=
	echo "$(<"$out")"
	[ "$rc" = 0 ]
}

reload_after_unload() {
	vroce_load && rdma link add modv0 type vroce netdev mva &&
		rdma_dev_exists modv0 && vroce_unload && rdma_dev_gone modv0
}

ktap_print_header
ktap_set_plan 7
check "module loads and unloads" load_unload
check "load fails with EADDRINUSE and names rdma_rxe when UDP 4791 is taken" \
	refuses_when_port_taken
check "module loads once UDP 4791 is free again" loads_after_port_released
check "rdma_rxe cannot load while vroce is loaded: EBUSY, message" \
	rxe_refused_while_loaded
check "vroce cannot load while rdma_rxe is loaded: EBUSY, message" \
	vroce_refused_while_rxe_loaded
check "rmmod with devices in two namespaces and open user contexts" \
	unload_with_open_contexts
check "module reloads and unloads with a device present" reload_after_unload
ip link del mva 2>/dev/null
ktap_finished
