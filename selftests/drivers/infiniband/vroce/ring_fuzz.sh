#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Fuzzes the rings a process shares with vroce (ring_fuzz): random and
# boundary values in the send and receive WQEs of RC, UC and UD QPs, and
# producer indices a well-behaved process never writes, on one device in
# loopback: cases (a fresh QP pair each), then rounds (many WQEs per
# doorbell on one pair of each type). The KTAP output is ring_fuzz's; it
# prints its seed, and the seed and index of any case or round that broke
# the contract.
#
#   RING_FUZZ_SEED=N        replay a run (default: a new seed each run)
#   RING_FUZZ_ITERATIONS=N  cases (default 100)
#   RING_FUZZ_WQES=N        WQEs in rounds, about 97% of them rewritten
#                           (default 20000; 110000 on the KASAN debug
#                           kernel, built from the same release as the
#                           stock 6.12 one)
#   RING_FUZZ_ONLY=I        replay case I alone
#   RING_FUZZ_ROUND=R       replay round R alone

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

iters=100
wqes=20000
# The kernel with KASAN, lockdep and kmemleak runs the full volume.
vroce_kasan_kernel && wqes=110000
args=(--iterations "${RING_FUZZ_ITERATIONS:-$iters}"
	--wqes "${RING_FUZZ_WQES:-$wqes}")
[ -n "${RING_FUZZ_SEED:-}" ] && args+=(--seed "$RING_FUZZ_SEED")
[ -n "${RING_FUZZ_ONLY:-}" ] && args+=(--only "$RING_FUZZ_ONLY")
[ -n "${RING_FUZZ_ROUND:-}" ] && args+=(--round "$RING_FUZZ_ROUND")

vroce_test_dev fz0 fa fb 192.0.2.1
VROCE_DEV=fz0 timeout 1800 "$VROCE_BIN/ring_fuzz" "${args[@]}"
