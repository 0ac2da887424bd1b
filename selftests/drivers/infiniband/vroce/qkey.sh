#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device with an IPv4 RoCE v2 GID over a veth and runs
# qkey_test in loopback on it: controlled Q_Keys need CAP_NET_RAW on user
# QPs. The KTAP output is qkey_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_test_dev qk0 qa qb 192.0.2.21
# ib_core's "privileged-qkey" setting (6.5+) lets anyone set one: say so.
rdma system show 2>/dev/null | sed 's/^/# /'
VROCE_DEV=qk0 timeout 120 "$VROCE_BIN/qkey_test"
