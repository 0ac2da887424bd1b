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

if ! vroce_veth_dev_ipv4 wv0 wa wb 192.0.2.11 >"$VROCE_LOG" 2>&1; then
	ktap_print_header
	sed 's/^/# /' "$VROCE_LOG"
	ktap_exit_fail_msg "cannot set up a vroce device"
fi
VROCE_DEV=wv0 "$VROCE_BIN/mw_test"
