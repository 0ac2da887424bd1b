#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Check run.sh itself: exit statuses and the rdma_rxe smoke test, per kernel.
#
#   tools/testing/vm/selftest.sh [KERNEL...]   (default: newest 6.12, debug)
#
# The debug kernel also gets an LKDTM-provoked WARNING, which must give 125.
# Prints one line per case with its wall time; exits 1 if any case failed.
set -euo pipefail

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SELF_DIR
readonly RUN=$SELF_DIR/run.sh
readonly SMOKE='set -e; uname -r; modprobe rdma_rxe
ip link add veth0 type veth peer name veth1; ip link set veth0 up
rdma link add r0 type rxe netdev veth0; ibv_devices
rdma link del r0; rmmod rdma_rxe'
readonly WARN='echo WARNING >/sys/kernel/debug/provoke-crash/DIRECT'

failed=0

# expect WANT KERNEL NAME CMD...: run CMD, which must exit WANT.
expect() {
	local want=$1 kernel=$2 name=$3 start=$SECONDS rc=0 out
	shift 3

	out=$(mktemp -d)
	"$RUN" -k "$kernel" -o "$out" -- "$@" >"$out/run.log" 2>&1 || rc=$?
	if ((rc == want)); then
		printf 'ok    %-22s %-8s exit %3d %4d s\n' "$kernel" "$name" "$rc" \
			$((SECONDS - start))
		rm -rf "$out"
	else
		printf 'FAIL  %-22s %-8s exit %3d, want %d (%s)\n' "$kernel" "$name" \
			"$rc" "$want" "$out"
		sed 's/^/      /' "$out/run.log"
		failed=1
	fi
}

check_kernel() {
	local kernel=$1

	expect 0 "$kernel" smoke sh -c "$SMOKE"
	expect 1 "$kernel" false false
	if [[ $kernel == debug ]]; then
		expect 125 "$kernel" warning sh -c "$WARN"
	fi
}

newest_612() {
	local images=(/boot/vmlinuz-6.12.*)

	printf '%s\n' "${images[@]#/boot/vmlinuz-}" | sort -V | tail -n 1
}

main() {
	local kernel kernels=("$@")

	if ((${#kernels[@]} == 0)); then
		kernels=("$(newest_612)" debug)
	fi
	for kernel in "${kernels[@]}"; do
		check_kernel "$kernel"
	done
	return "$failed"
}

main "$@"
