#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device over a veth and runs rtnl_test against it: QP
# verbs complete while RTNL is held by another task (the line rate they
# need is cached, not read from the netdev under RTNL). The KTAP output is
# rtnl_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_test_dev rt0 ra rb
VROCE_DEV=rt0 timeout 120 "$VROCE_BIN/rtnl_test"
