#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module's built-in memory-registration self-tests (selftest/mr.c: copy
# at every offset across page boundaries, bounds, lookups, fast-reg, SGE
# walking, atomics). They run at module load when the module was built
# with VROCE_DEBUG (make KVER=debug), which modinfo shows as
# "vroce_selftests: mr"; the test skips for other builds.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_inmodule_selftests mr
