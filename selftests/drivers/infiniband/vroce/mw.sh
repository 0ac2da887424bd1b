#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device over a veth, with an IPv4 GID, and runs mw_test
# (memory windows through libibverbs and the stock rxe provider) against
# it; the KTAP output is mw_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma
# The debug kernels allocate 65536 windows slowly.
vroce_setup_or_exit "cannot cap the object counts" vroce_debug_cap 4096
vroce_test_dev wv0 wa wb 192.0.2.11
VROCE_DEV=wv0 "$VROCE_BIN/mw_test"
