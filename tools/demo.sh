#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: build vroce for the newest Debian 6.12 kernel, boot it in the
# test VM and show two "hosts" talking RoCE:
#
#     netns a                              netns b
#   +---------------------+            +---------------------+
#   | vroce_a             |            | vroce_b             |
#   |   va 192.0.2.1/24   |--- veth ---|   vb 192.0.2.2/24   |
#   |      2001:db8::1/64 |            |      2001:db8::2/64 |
#   +---------------------+            +---------------------+
#
# The addresses are documentation ranges (RFC 5737, RFC 3849) and exist only
# inside the VM's namespaces.
#
#   tools/demo.sh           on the host (what make demo runs)
#   tools/demo.sh --guest   the part that runs inside the VM
#
# Environment: KERNEL=<release> to boot another kernel (or "debug").
set -euo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)

section() {
	printf '\n=== %s\n' "$*"
}

# Show the command, then run it.
run() {
	echo "# $*"
	"$@"
}

# ---------------------------------------------------------------- guest ---

setup_topology() {
	local ns peer

	ip netns add a
	ip netns add b
	ip link add va netns a type veth peer name vb netns b
	for ns in a b; do
		ip -n "$ns" link set lo up
	done
	ip -n a addr add 192.0.2.1/24 dev va
	ip -n a addr add 2001:db8::1/64 dev va nodad
	ip -n b addr add 192.0.2.2/24 dev vb
	ip -n b addr add 2001:db8::2/64 dev vb nodad
	ip -n a link set va up
	ip -n b link set vb up
	for ns in a b; do
		peer=$([ "$ns" = a ] && echo 192.0.2.2 || echo 192.0.2.1)
		ip netns exec "$ns" ping -q -c 1 -W 5 "$peer" >/dev/null || {
			echo "demo: no IPv4 connectivity from $ns to $peer" >&2
			return 1
		}
	done
}

create_devices() {
	run ip netns exec a rdma link add vroce_a type vroce netdev va
	run ip netns exec b rdma link add vroce_b type vroce netdev vb
}

show_devices() {
	section "rdma link (from each namespace: a netdev is named only in its own)"
	run ip netns exec a rdma link
	run ip netns exec b rdma link
	section "ibv_devices"
	run ibv_devices
	section "ibv_devinfo -v -d vroce_a (port section)"
	echo "# ibv_devinfo -v -d vroce_a | sed -n '/^[[:space:]]*port:/,\$p'"
	ibv_devinfo -v -d vroce_a | sed -n '/^[[:space:]]*port:/,$p'
}

# The index of DEV's RoCE v2 GID for the IPv4 address $2.
v2_gid_index() {
	local t i want

	# shellcheck disable=SC2086 # the four bytes of the address, split
	want=0000:0000:0000:0000:0000:ffff:$(printf '%02x%02x:%02x%02x' ${2//./ })
	for t in /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/*; do
		i=${t##*/}
		[ "$(cat "$t" 2>/dev/null)" = "RoCE v2" ] || continue
		[ "$(cat "/sys/class/infiniband/$1/ports/1/gids/$i")" = "$want" ] &&
			echo "$i" && return 0
	done
	return 1
}

# ib_write_bw from a to b over RoCE v2 (IPv4), then the device counters.
write_bw() {
	local ga gb pid

	section "ib_write_bw vroce_a -> vroce_b (RoCE v2, IPv4)"
	ga=$(v2_gid_index vroce_a 192.0.2.1)
	gb=$(v2_gid_index vroce_b 192.0.2.2)
	ip netns exec b timeout 120 ib_write_bw -d vroce_b -x "$gb" -s 65536 \
		-n 500 -u 18 >/dev/null &
	pid=$!
	sleep 1
	run ip netns exec a timeout 120 ib_write_bw -d vroce_a -x "$ga" \
		-s 65536 -n 500 -u 18 192.0.2.2
	wait "$pid"
	section "rdma statistic show link vroce_a/1"
	run ip netns exec a rdma statistic show link vroce_a/1
}

guest() {
	# lib.sh as installed by tools/ksft.sh: vroce_load and friends.
	# shellcheck source=/dev/null
	source "$TOP/build/ksft/drivers/infiniband/vroce/lib.sh"
	trap vroce_cleanup EXIT

	section "kernel $(uname -r): loading $VROCE_KO"
	vroce_load
	setup_topology
	VROCE_NETNS+=(a b)
	section "netns a and b joined by a veth pair (192.0.2.0/24, 2001:db8::/64)"
	run ip -n a -br addr show dev va
	run ip -n b -br addr show dev vb
	create_devices
	show_devices
	write_bw
	section "done"
}

# ----------------------------------------------------------------- host ---

host() {
	local kernel out rc=0 start=$SECONDS

	"$TOP/tools/deps.sh"
	kernel=${KERNEL:-$("$TOP/tools/kernels.sh" 6.12)} || {
		echo "demo: no Debian 6.12 kernel to boot" >&2
		return 1
	}
	[ "$kernel" != debug ] || "$TOP/tools/testing/vm/debug-kernel.sh" build >/dev/null
	echo "demo: building vroce for $kernel"
	make -s --no-print-directory -C "$TOP" KVER="$kernel"
	"$TOP/tools/ksft.sh" build >/dev/null
	out=$TOP/build/demo
	mkdir -p "$out"
	echo "demo: booting $kernel in QEMU (TCG), output in build/demo/ ($((SECONDS - start)) s so far)"
	cd "$TOP"
	"$TOP/tools/testing/vm/run.sh" -k "$kernel" -t 300 -o "$out" -- \
		env VROCE_KO="$TOP/build/$kernel/vroce.ko" tools/demo.sh --guest || rc=$?
	if [ $rc = 0 ]; then
		echo "demo: finished in $((SECONDS - start)) s"
	else
		echo "demo: FAILED (run.sh exit $rc) after $((SECONDS - start)) s"
	fi
	return $rc
}

if [ "${1:-}" = --guest ]; then
	guest
else
	host
fi
