#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module's built-in memory-window and local-operation self-tests
# (selftest/mw.c: type 1 and type 2B binds, access through a window only,
# invalidation, dereg of a bound MR, IB_WR_REG_MR and IB_WR_LOCAL_INV run
# through vroce_local_op()). They run at module load when the module was
# built with VROCE_DEBUG (make KVER=debug), which modinfo shows as
# "vroce_selftests: mr mw"; the test skips for other builds.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require modinfo dmesg

cleanup() {
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

grep -qw mw <<<"$(modinfo -F vroce_selftests "$VROCE_KO" 2>/dev/null)" ||
	vroce_skip_all "module built without VROCE_DEBUG self-tests"

ktap_print_header
ktap_set_plan 2

vroce_unload
dmesg_mark mw-selftest
check "module loads with its self-tests" vroce_load
check "mw self-tests pass" \
	sh -c "dmesg | sed -n '/vroce-test: mw-selftest\$/,\$p' | grep -qx '.*vroce: mw self-tests: pass'"

ktap_finished
