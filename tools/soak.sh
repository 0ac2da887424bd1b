#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make soak SOAK_MINUTES=N: the fuzzers and a mixed load on the debug kernel
# (KASAN, lockdep, kmemleak), in one VM boot, until N minutes are up. Not
# part of make check.
#
# A cycle runs, each with a new seed: ring_fuzz.sh (hostile user rings),
# frame_fuzz.sh (hostile frames beside a verified RC transfer), netem.sh
# (RC WRITE/READ/SEND through loss, reordering, duplication and corruption,
# congestion control on), ud.sh, rc.sh (every opcode, RoCE v1 and v2),
# kill.sh (processes killed mid-transfer), teardown.sh (devices, netdevs,
# namespaces and the module removed under RC traffic), lifecycle.sh and
# netns_race.sh (device, netdev and namespace removal races). No test
# starts after the deadline, so the run ends within one test of it; a
# cycle cut there is not counted, but what its tests did is. The fuzzers
# carry the volume: 600000 frames and 600000 WQEs a cycle unless
# FRAME_FUZZ_ITERATIONS or RING_FUZZ_WQES say otherwise.
#
# The last line is
#   soak: frames=N wqes=N bytes_verified=N cycles=N splats=N leaks=N stuck=N failed=N
# frames: fuzzed frames sent; wqes: fuzzed WQEs (ring_fuzz's cases and
# the WQEs its rounds rewrote);
# bytes_verified: bytes moved by transfers that compared every byte;
# splats: kernel reports (as tools/testing/vm/run.sh counts them); leaks:
# kmemleak objects; stuck: hung-task reports; failed: test results that
# failed. Exit status 0 only if the last four are 0.
#
#   SOAK_MINUTES=60  SOAK_TESTS="ring_fuzz.sh frame_fuzz.sh"  SOAK_OUT=DIR
# The tests' own knobs (RING_FUZZ_ITERATIONS, FRAME_FUZZ_ITERATIONS,
# NETEM_MIB, ...: the selftests' README) are passed on to the guest.
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
SOAK_TESTS=${SOAK_TESTS:-ring_fuzz.sh frame_fuzz.sh netem.sh ud.sh rc.sh kill.sh teardown.sh lifecycle.sh netns_race.sh}

# In the guest: cycles until DEADLINE (epoch seconds); the tests' KTAP
# goes to OUT/cycle-N.tap.
guest() {
	local deadline=$1 out=$2 n=0 t cut

	while (($(date +%s) < deadline)); do
		cut=
		for t in $SOAK_TESTS; do
			if (($(date +%s) >= deadline)); then
				cut=$t
				break
			fi
			KSFT_TIMEOUT=3600 "$TOP/tools/ksft.sh" run "$t"
		done >"$out/cycle-$n.tap" 2>&1
		n=$((n + 1))
		if [ -z "$cut" ]; then
			echo "soak: cycle $n done, $(((deadline - $(date +%s)) / 60)) min left"
		else
			echo "soak: cycle $n cut at the deadline, before $cut"
		fi
	done
}

# sum_field FILES REGEX: the sum of the numbers the sed REGEX captures.
sum_field() {
	local re=$1

	shift
	sed -n -E "s/$re/\\1/p" "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}

# count REGEX FILES: lines matching, but the kernel command line's.
count() {
	local re=$1

	shift
	cat "$@" 2>/dev/null | grep -v 'ommand line:' | grep -c -E -- "$re"
}

report() {
	local out=$1 taps frames wqes mib chunks cycles splats leaks stuck failed

	taps=("$out"/cycle-*.tap)
	frames=$(sum_field '^# # ([0-9]+) frames \(.*' "${taps[@]}")
	wqes=$(($(sum_field '^# # [A-Z]+: ([0-9]+) cases; .*' "${taps[@]}") +
		$(sum_field '^# # [A-Z]+: [0-9]+ WQEs \(([0-9]+) rewritten\) .*' "${taps[@]}")))
	mib=$(sum_field '^# # rc_stream: [a-z]+ ([0-9]+) MiB .*every byte checked.*' "${taps[@]}")
	chunks=$(sed -n -E 's/.*moved ([0-9]+) chunks of ([0-9]+) bytes, byte-exact.*/\1 \2/p' \
		"${taps[@]}" 2>/dev/null | awk '{ s += $1 * $2 } END { print s + 0 }')
	cycles=$(find "$out" -name 'cycle-*.tap' | wc -l)
	# The last cycle may have been cut by the VM's timeout.
	grep -q 'soak: cycle' "$out/console.log" 2>/dev/null &&
		cycles=$(grep -c 'soak: cycle .* done' "$out/console.log")
	splats=$(count 'WARNING:|BUG:|Oops|KASAN|UBSAN:|general protection fault|possible circular locking|inconsistent lock state|suspicious RCU usage|soft lockup|Kernel panic|refcount_t:|list_(add|del) corruption' \
		"$out/dmesg.txt")
	leaks=$(count '^unreferenced object' "$out/kmemleak.txt")
	stuck=$(count 'blocked for more than|hung_task' "$out/dmesg.txt")
	failed=$(count '^# not ok ' "${taps[@]}")
	echo "soak: frames=$frames wqes=$wqes bytes_verified=$((mib * 1048576 + chunks)) cycles=$cycles splats=$splats leaks=$leaks stuck=$stuck failed=$failed"
	((splats == 0 && leaks == 0 && stuck == 0 && failed == 0))
}

main() {
	local minutes=${SOAK_MINUTES:-60} out deadline knobs

	out=${SOAK_OUT:-$TOP/build/soak}
	rm -rf "$out" && mkdir -p "$out" || exit 1
	"$TOP/tools/testing/vm/debug-kernel.sh" build || exit 1
	make -C "$TOP" KVER=debug >"$out/build.log" 2>&1 ||
		{ tail -20 "$out/build.log"; exit 1; }
	"$TOP/tools/ksft.sh" build >"$out/ksft-build.log" 2>&1 ||
		{ tail -20 "$out/ksft-build.log"; exit 1; }
	export FRAME_FUZZ_ITERATIONS=${FRAME_FUZZ_ITERATIONS:-600000}
	export RING_FUZZ_WQES=${RING_FUZZ_WQES:-600000}
	mapfile -t knobs < <(env | grep -E '^((RING_FUZZ|FRAME_FUZZ|NETEM|KILL|TEARDOWN|LIFECYCLE|NETNS_RACE|UD|RC)_[A-Z_]*|VROCE_TIMES)=')
	deadline=$(($(date +%s) + minutes * 60))
	echo "soak: $minutes min on the debug kernel: $SOAK_TESTS"
	# The last test may start just before the deadline: an hour of margin.
	"$TOP/tools/testing/vm/run.sh" -k debug -t $((minutes * 60 + 3600)) \
		-o "$out" -- env "${knobs[@]}" VROCE_KO="$TOP/build/debug/vroce.ko" \
		SOAK_TESTS="$SOAK_TESTS" VROCE_VERBOSE=1 "$TOP/tools/soak.sh" guest "$deadline" \
		"$out" >"$out/run.log" 2>&1
	echo "soak: the VM exited $? (tools/testing/vm/README)"
	report "$out"
}

if [ "${1:-}" = guest ]; then
	guest "$2" "$3"
else
	main
fi
