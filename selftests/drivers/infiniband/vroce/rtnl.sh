#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device over a veth and runs rtnl_test against it: QP
# verbs complete while RTNL is held by another task (the line rate they
# need is cached, not read from the netdev under RTNL). The KTAP output is
# rtnl_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma

cleanup() {
	ip link del ra 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

if ! vroce_veth_dev rt0 ra rb >"$VROCE_LOG" 2>&1; then
	ktap_print_header
	sed 's/^/# /' "$VROCE_LOG"
	ktap_exit_fail_msg "cannot set up a vroce device"
fi
VROCE_DEV=rt0 timeout 120 "$VROCE_BIN/rtnl_test"
