#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device over a veth and runs mr_test (memory registration
# through libibverbs and the stock rxe provider) against it; the KTAP
# output is mr_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma

cleanup() {
	ip link del wa 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

setup() {
	vroce_load &&
		ip link add wa type veth peer name wb &&
		ip link set wa up && ip link set wb up &&
		rdma link add wv0 type vroce netdev wa &&
		wait_for 10 rdma_dev_exists wv0
}

if ! setup >"$VROCE_LOG" 2>&1; then
	ktap_print_header
	sed 's/^/# /' "$VROCE_LOG"
	ktap_exit_fail_msg "cannot set up a vroce device"
fi
VROCE_DEV=wv0 "$VROCE_BIN/mr_test"
