#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Allocation failures at every step of device creation and of opening a
# user context (fail_nth.c): each attempt either succeeds or fails with an
# error, and a failure leaves nothing behind (the VM runner then checks kmemleak and the
# kernel log). Needs a kernel with failslab and fail-nth (the debug kernel);
# skips elsewhere.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ibv_devinfo

FAILSLAB=/sys/kernel/debug/failslab
# A step costs about 2 s on the debug kernel, and "rdma link add" reaches
# hundreds of sites, most in ib_core: the first FAULTS_ALL one by one (the
# driver's own allocations come first), then one in FAULTS_EVERY, at an
# offset drawn from FAULTS_SEED. FAULTS_EVERY=1 walks every site.
WALK=(--all "${FAULTS_ALL:-30}" --every "${FAULTS_EVERY:-250}")
[ -z "${FAULTS_SEED:-}" ] || WALK+=(--seed "$FAULTS_SEED")

[ -w /proc/self/fail-nth ] && [ -d $FAILSLAB ] ||
	vroce_skip_all "kernel without failslab/fail-nth (use the debug kernel)"

cleanup() {
	echo Y >$FAILSLAB/ignore-gfp-wait 2>/dev/null
	ip link del fva 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# failslab set to fail also allocations that may sleep, quietly, and the
# veth pair fva/fvb, both up, in one ip batch.
setup() {
	echo N >$FAILSLAB/ignore-gfp-wait &&
		echo 0 >$FAILSLAB/verbose &&
		ip -batch - <<-EOF
			link add fva type veth peer name fvb
			link set fva up
			link set fvb up
		EOF
}

# Fail the 1st, 2nd, ... fault site "rdma link add" reaches, until it
# reaches none (fail_nth.c): each site fails once, also those whose failure
# the device creation survives.
link_add_under_failures() {
	"$VROCE_BIN/fail_nth" link-add fv0 fva "${WALK[@]}"
}

# Same for opening a user context, querying the device, and a PD.
devinfo_under_failures() {
	rdma link add fv1 type vroce netdev fva || return 1
	"$VROCE_BIN/fail_nth" open fv1 "${WALK[@]}" || return 1
	rdma link delete fv1
}

still_works() {
	rdma link add fv2 type vroce netdev fva &&
		[[ $(ibv_devinfo -d fv2) == *PORT_ACTIVE* ]] &&
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
