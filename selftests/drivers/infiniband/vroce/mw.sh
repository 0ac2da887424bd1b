#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device over a veth, with an IPv4 GID, and runs mw_test
# (memory windows through libibverbs and the stock rxe provider) against
# it; the KTAP output is mw_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma

cleanup() {
	ip link del wa 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

setup() {
	vroce_veth_dev wv0 wa wb &&
		ip addr add 192.0.2.11/24 dev wa &&
		wait_for 10 sh -c "grep -qx 0000:0000:0000:0000:0000:ffff:c000:020b /sys/class/infiniband/wv0/ports/1/gids/*"
}

if ! setup >"$VROCE_LOG" 2>&1; then
	ktap_print_header
	sed 's/^/# /' "$VROCE_LOG"
	ktap_exit_fail_msg "cannot set up a vroce device"
fi
VROCE_DEV=wv0 "$VROCE_BIN/mw_test"
