#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device over a veth and runs mr_test (memory registration
# through libibverbs and the stock rxe provider) against it; the KTAP
# output is mr_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# On a kernel with failslab (the debug kernel), let GFP_KERNEL allocations
# fail so that mr_test can fail each allocation of ibv_reg_mr in turn.
FAILSLAB=/sys/kernel/debug/failslab
FAILSLAB_SAVED=

cleanup() {
	if [ -n "$FAILSLAB_SAVED" ]; then
		echo "${FAILSLAB_SAVED% *}" >$FAILSLAB/ignore-gfp-wait
		echo "${FAILSLAB_SAVED#* }" >$FAILSLAB/verbose
	fi
	vroce_test_dev_cleanup
}

vroce_require ip rdma
# 65536 MRs take longer than mr_test's time limit on the debug kernels.
vroce_setup_or_exit "cannot cap the object counts" vroce_debug_cap 4096
vroce_test_dev wv0 wa wb
trap cleanup EXIT
if [ -w /proc/self/fail-nth ] && [ -w $FAILSLAB/ignore-gfp-wait ]; then
	FAILSLAB_SAVED="$(cat $FAILSLAB/ignore-gfp-wait) $(cat $FAILSLAB/verbose)"
	echo N >$FAILSLAB/ignore-gfp-wait
	echo 0 >$FAILSLAB/verbose
	export VROCE_FAILSLAB=1
fi
VROCE_DEV=wv0 "$VROCE_BIN/mr_test"
