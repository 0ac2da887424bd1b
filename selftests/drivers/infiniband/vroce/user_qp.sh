#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device with an IPv4 RoCE v2 GID over a veth and runs
# user_qp_test in loopback on it: send, receive and completion rings that
# the process corrupts after posting, and doorbells beside long READ
# response copies. The KTAP output is user_qp_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_test_dev uqp0 ua ub 192.0.2.1
VROCE_DEV=uqp0 timeout 1800 "$VROCE_BIN/user_qp_test"
