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

vroce_inmodule_selftests mw
