#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Allocation failures at every step of device creation and of opening a
# user context: each attempt either succeeds or fails with an error, and a
# failure leaves nothing behind (the VM runner then checks kmemleak and the
# kernel log). Needs a kernel with failslab and fail-nth (the debug kernel);
# skips elsewhere.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ibv_devinfo

FAILSLAB=/sys/kernel/debug/failslab
MAX_STEPS=400

[ -w /proc/self/fail-nth ] && [ -d $FAILSLAB ] ||
	vroce_skip_all "kernel without failslab/fail-nth (use the debug kernel)"

cleanup() {
	echo Y >$FAILSLAB/ignore-gfp-wait 2>/dev/null
	ip link del fva 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# run_failing N CMD...: run CMD with its task's Nth slab allocation failing.
run_failing() {
	local n="$1"

	shift
	(echo "$n" >/proc/self/fail-nth && exec "$@") >/dev/null 2>&1
}

setup() {
	echo N >$FAILSLAB/ignore-gfp-wait &&
		echo 0 >$FAILSLAB/verbose &&
		ip link add fva type veth peer name fvb &&
		ip link set fva up && ip link set fvb up
}

# Fail the 1st, 2nd, ... allocation of "rdma link add" until it succeeds.
link_add_under_failures() {
	local n failed=0

	for n in $(seq 1 $MAX_STEPS); do
		if run_failing "$n" rdma link add fv0 type vroce netdev fva; then
			echo "succeeded with allocation $n failing, after $failed failures"
			rdma_dev_exists fv0 && rdma link delete fv0 &&
				rdma_dev_gone fv0
			return
		fi
		failed=$((failed + 1))
		if rdma_dev_exists fv0 || rdma link show | grep -q "^link fv0/"; then
			echo "allocation $n failed, but a device was left behind"
			return 1
		fi
	done
	echo "still failing after $MAX_STEPS steps"
	return 1
}

# Same for opening a user context and querying the device.
devinfo_under_failures() {
	local n

	rdma link add fv1 type vroce netdev fva || return 1
	for n in $(seq 1 $MAX_STEPS); do
		if run_failing "$n" ibv_devinfo -d fv1; then
			echo "succeeded with allocation $n failing"
			rdma link delete fv1
			return
		fi
	done
	echo "still failing after $MAX_STEPS steps"
	return 1
}

still_works() {
	rdma link add fv2 type vroce netdev fva &&
		ibv_devinfo -d fv2 | grep -q PORT_ACTIVE &&
		rdma link delete fv2
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan 4
check "failslab set up" setup
check "rdma link add: every allocation failure fails cleanly" \
	link_add_under_failures
check "open context and query: every allocation failure fails cleanly" \
	devinfo_under_failures
check "the device still works afterwards" still_works
ktap_finished
