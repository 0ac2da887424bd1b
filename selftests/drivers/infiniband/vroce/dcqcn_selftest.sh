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

vroce_inmodule_selftests dcqcn cc
