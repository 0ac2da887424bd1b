#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module's built-in memory-registration self-tests (selftest/mr.c: copy
# at every offset across page boundaries, bounds, lookups, fast-reg, SGE
# walking, atomics). They run at module load when the module was built
# with VROCE_DEBUG (make KVER=debug), which modinfo shows as
# "vroce_selftests: mr"; the test skips for other builds.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require modinfo dmesg

cleanup() {
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

grep -qw mr <<<"$(modinfo -F vroce_selftests "$VROCE_KO" 2>/dev/null)" ||
	vroce_skip_all "module built without VROCE_DEBUG self-tests"

ktap_print_header
ktap_set_plan 2

vroce_unload
dmesg_mark mr-selftest
check "module loads with its self-tests" vroce_load
check "mr self-tests pass" \
	sh -c "dmesg | sed -n '/vroce-test: mr-selftest\$/,\$p' | grep -qx '.*vroce: mr self-tests: pass'"

ktap_finished
