#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device with an IPv4 RoCE v2 GID over a veth and runs
# odp_test in loopback on it: on-demand paging MRs (faults on the data
# path, invalidation, prefetch). The KTAP output is odp_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_test_dev odp0 oa ob 192.0.2.1
VROCE_DEV=odp0 timeout 900 "$VROCE_BIN/odp_test"
