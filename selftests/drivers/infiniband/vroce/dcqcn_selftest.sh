#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module's built-in DCQCN self-tests (selftest/dcqcn.c: knob defaults
# and ranges, first CNP, decrease with alpha, the min_dec_fac and min_rate
# floors, the monitor period, alpha gain and decay, fast recovery, additive
# and hyper increase by timer and byte counter, clamp_tgt_rate(_ati), the
# max rate and limiter release, late timers, CNP moderation) and of the
# device's CC state (selftest/cc.c: enables, ECN bits per priority, per-QP
# hooks). They run at module load when the module was built with
# VROCE_DEBUG (make KVER=debug), which modinfo shows as
# "vroce_selftests: mr dcqcn cc"; the test skips for other builds.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require modinfo dmesg

cleanup() {
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

grep -qw dcqcn <<<"$(modinfo -F vroce_selftests "$VROCE_KO" 2>/dev/null)" ||
	vroce_skip_all "module built without VROCE_DEBUG self-tests"

ktap_print_header
ktap_set_plan 3

vroce_unload
dmesg_mark dcqcn-selftest
check "module loads with its self-tests" vroce_load
check "dcqcn self-tests pass" \
	sh -c "dmesg | sed -n '/vroce-test: dcqcn-selftest\$/,\$p' | grep -qx '.*vroce: dcqcn self-tests: pass'"
check "cc self-tests pass" \
	sh -c "dmesg | sed -n '/vroce-test: dcqcn-selftest\$/,\$p' | grep -qx '.*vroce: cc self-tests: pass'"

ktap_finished
