#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fuzzes the rings a process shares with vroce (ring_fuzz): random and
# boundary values in the send and receive WQEs of RC, UC and UD QPs, and
# producer indices a well-behaved process never writes, on one device in
# loopback. The KTAP output is ring_fuzz's; it prints its seed, and the
# seed and index of any case that broke the contract.
#
#   RING_FUZZ_SEED=N        replay a run (default: a new seed each run)
#   RING_FUZZ_ITERATIONS=N  cases (default 400; 100 on the lean kernels)

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

iters=400
vroce_lean_kernel && iters=100
args=(--iterations "${RING_FUZZ_ITERATIONS:-$iters}")
[ -n "${RING_FUZZ_SEED:-}" ] && args+=(--seed "$RING_FUZZ_SEED")

vroce_test_dev fz0 fa fb 192.0.2.1
VROCE_DEV=fz0 timeout 1800 "$VROCE_BIN/ring_fuzz" "${args[@]}"
