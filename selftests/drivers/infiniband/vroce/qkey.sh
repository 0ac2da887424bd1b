#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device with an IPv4 RoCE v2 GID over a veth and runs
# qkey_test in loopback on it: controlled Q_Keys need CAP_NET_RAW on user
# QPs. The KTAP output is qkey_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma

cleanup() {
	ip link del qa 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

if ! vroce_veth_dev_ipv4 qk0 qa qb 192.0.2.21 >"$VROCE_LOG" 2>&1; then
	ktap_print_header
	sed 's/^/# /' "$VROCE_LOG"
	ktap_exit_fail_msg "cannot set up a vroce device"
fi
# ib_core's "privileged-qkey" setting (6.5+) lets anyone set one: say so.
rdma system show 2>/dev/null | sed 's/^/# /'
VROCE_DEV=qk0 timeout 120 "$VROCE_BIN/qkey_test"
