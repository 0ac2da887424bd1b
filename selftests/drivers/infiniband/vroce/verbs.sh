#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device over a veth and runs verbs_test (libibverbs through
# the stock rxe provider) against it; the KTAP output is verbs_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_test_dev wv0 wa wb 192.0.2.11
VROCE_DEV=wv0 VROCE_MAC=$(cat /sys/class/net/wa/address) \
	VROCE_IPV4=192.0.2.11 "$VROCE_BIN/verbs_test"
