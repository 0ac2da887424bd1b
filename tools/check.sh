#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make check: every gate and every test, on each supported kernel.
#
#   1. tools/deps.sh                  install missing Debian packages
#   2. make lint                      checkpatch --strict, shellcheck
#   3. the sid root                   tools/sid-root.sh setup (cached)
#   4. module builds                  W=1 C=2 KCFLAGS=-Werror for the newest
#                                     installed Debian 6.12 and 6.1 kernels,
#                                     the debug and kcsan kernels, and sid's
#                                     7.2 and 7.2-rt (in the sid root)
#   5. tools/ksft.sh build            the kselftests, built on the host
#   6. one VM boot per kernel         tools/testing/vm/run.sh runs
#      (two for the debug kernel,     'tools/ksft.sh run' with VROCE_KO set,
#      each with part of the tests)   in two lanes of VMs that run side by
#                                     side (VM_JOBS=1: all in turn), the
#                                     debug kernel's (the longest) first.
#                                     Only the debug kernel's module is built
#                                     before the VMs start; each lane builds
#                                     its first module, then each next one
#                                     while a VM runs
#   7. with VROCE_PAIR=1: two VMs,    tools/testing/vm/pair.sh runs
#      once, on 6.12
#                                     interop.sh: rdma_rxe in vm1, vroce in
#                                     vm2 (it skips in the single VMs)
#
# Debian sid's 7.2 kernels, generic and PREEMPT_RT, are built (W=1 C=2
# KCFLAGS=-Werror) in the sid root of tools/sid-root.sh, set up once
# (cached) before the VMs start, and their VMs run the tests in that root's
# user space (run.sh -u: rdma-core 65). Without the root (no network) each
# is one "# SKIP" line that says why.
#
# What each kernel runs:
#   6.12                  every test but DEBUG_ONLY_TESTS; the largest
#                         rc.sh lists and the checks that need a fast
#                         kernel (wire.sh, cc.sh)
#   debug                 every test, in two VMs (DEBUG2_TESTS: the
#                         second's, without kmemleak), leaner matrices
#                         (lib.sh)
#   kcsan                 KCSAN_TESTS
#   7.2                   SLICE_TESTS and pyverbs.sh (rdma-core 65's
#                         pyverbs suite, rdma_rxe then vroce), leaner
#                         matrices
#   6.1                   SLICE_TESTS and FUZZ_TESTS, leaner matrices
#   7.2-rt                SLICE_TESTS but nvme.sh, leaner matrices
#
# Results come from the KTAP each VM run leaves in build/check/<kernel>/
# ksft.tap, not from exit codes (tools/ksft.sh run exits 0 once the tests
# ran). Counted: each result line a test script prints itself (the
# runner re-prints them as "# ok N ..." / "# not ok N ..."; "# SKIP" ones
# are skipped, "# TODO" ones too), plus one failure per script whose
# top-level result failed (exit=N, TIMEOUT, crash) without an inner failure
# to show for it. A script that prints no KTAP counts as one result.
# One more failure per gate that failed: deps, lint, each module build,
# the selftests build, each VM run that timed out (124), showed a kernel
# WARNING/BUG/KASAN/lockdep/kmemleak report (125), lost the guest (126) or
# produced no results.
#
# The output ends with the time of each step and VM run ("Times"), then the
# failures, each with up to 8 of the last lines its case (or, for a script
# that failed on its own, the script) printed before the result. The last
# line is always "N passed, N failed, N skipped". Exit status 1 if
# anything failed or no test ran.
#
# Environment:
#   KERNELS="6.12.95+deb12-amd64 debug"   kernels to test (default: the
#                                         newest 6.12 and 6.1 with headers,
#                                         debug and kcsan, and the sid
#                                         kernels, which are only built)
#   TESTS="link.sh"                       only these tests (file names)
#   KCSAN_TESTS="rc.sh"                   the kcsan kernel's tests, unless
#                                         TESTS is set (default: those that
#                                         run traffic from several contexts)
#   FUZZ_TESTS="ring_fuzz.sh"             what 6.1 runs beside the slice,
#                                         unless TESTS is set
#   SLICE_TESTS="rc.sh"                   the slice 6.1, 7.2-rt and 7.2 run,
#                                         unless TESTS is set
#   DEBUG2_TESTS="rc.sh"                  the debug kernel's tests its second
#                                         VM (debug.2) runs, unless TESTS is
#                                         set (then one VM runs them)
#   DEBUG_ONLY_TESTS="lifecycle.sh"       what 6.12 leaves to the debug
#                                         kernel, unless TESTS is set
#   VM_JOBS=1                             one VM at a time (default 2)
#   VM_TIMEOUT=2400  VM_MEM=...  VM_CPUS=...   passed to run.sh (the
#                                         debug kernel's default timeout
#                                         is 3600 s: KASAN and lockdep)
#
# Logs: build/check/<kernel>/ (debug.2/ for the second debug VM): build.log
# (module build), run.log (what run.sh printed), console.log, dmesg.txt,
# ksft.tap (the suite's KTAP);
# build/check/pair/: run.log (both consoles), vm1/ and vm2/ as above;
# build/check/ksft-build.log, build/lint/.
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$TOP" || exit 1
OUT=$TOP/build/check
RUNNER=$TOP/tools/testing/vm/run.sh
PAIR=$TOP/tools/testing/vm/pair.sh
DEBUG_KERNEL=$TOP/tools/testing/vm/debug-kernel.sh
SID_ROOT=$TOP/tools/sid-root.sh
# Debian sid's kernels: built in the sid root, booted with its user space.
SID_KERNELS=$("$TOP/tools/sid-root.sh" releases | tr '\n' ' ')
SID_KERNELS=${SID_KERNELS% }
# The sid root's path, once set up (setup_sid_root).
SID_DIR=

PASS=0
FAIL=0
SKIP=0
FAILURES=()
T0=$SECONDS

log() { echo "check: $*"; }

# gate_failed NAME MESSAGE: one failure that is not a test result. Also
# called in a lane's subshell: the failures are kept in a file ($GATES)
# and counted at the end (count_gates).
GATES=
gate_failed() {
	echo "$1: $2" >>"$GATES"
	log "FAILED $1: $2"
}

count_gates() {
	local line

	while IFS= read -r line; do
		FAIL=$((FAIL + 1))
		FAILURES+=("$line")
	done <"$GATES"
}

# timed NAME CMD...: run CMD, log how long it took.
timed() {
	local name=$1 start=$SECONDS rc

	shift
	"$@"
	rc=$?
	log "$name: $((SECONDS - start)) s"
	[ -z "$TIMES" ] || echo "$name $((SECONDS - start)) s" >>"$TIMES"
	return $rc
}

# show_times: what took how long, in one block at the end of the output
# (which may be all of it a reader gets): each timed step, and each VM run
# with its start and end in seconds since the check began.
TIMES=
show_times() {
	[ -s "$TIMES" ] || return 0
	echo
	echo "Times:"
	sed 's/^/  /' "$TIMES"
}

# The data race detector's kernel runs the tests whose traffic runs in
# several contexts at once: doorbells, tasks, softirq receive, timers and
# teardown. KCSAN watches one access in a few thousand, so these are the
# ones with enough concurrent accesses for it to see a race.
KCSAN_TESTS=${KCSAN_TESTS:-user_qp.sh ring_fuzz.sh lifecycle.sh inject.sh stall.sh kill.sh rc.sh ud.sh}

# The slice the kernels beside 6.12 run: each part of the driver that uses a
# kernel API which differs between releases (module and link set-up, netdev
# events and namespaces, ib_core and uverbs, the UDP tunnel, memory
# registration, the transport, a kernel ULP), with the data path under
# killed processes. The long stress runs, the fuzzers and the rest run on
# 6.12 and the debug kernel (a slice of them on 6.1: FUZZ_TESTS).
SLICE_TESTS=${SLICE_TESTS:-module.sh link.sh netns.sh rdma_core.sh verbs.sh mr.sh odp.sh queues.sh user_qp.sh qkey.sh rtnl.sh kill.sh rc.sh ud.sh nvme.sh}

# The oldest kernel also runs a bounded slice of each robustness test: the
# two fuzzers (user rings, received frames), teardown under load and scale.
# 6.12 and the debug kernel run them all.
FUZZ_TESTS=${FUZZ_TESTS:-ring_fuzz.sh frame_fuzz.sh teardown.sh scale.sh}

# The debug kernel's tests run in two VMs, "debug" and "debug.2" (these),
# one in each lane: alone they would outlast the other lane by far. The
# second runs the data-path scripts and boots with kmemleak=off: kmemleak
# tracks every allocation, each frame's too, and halved their speed
# (frame_fuzz.sh: 518 frames/s with it, 1027 without; these scripts in
# two VMs side by side: 1045 s with it, 625 s without). KASAN, lockdep
# and the rest stay on. The first VM, with kmemleak, runs the control
# plane and the scripts that fail and tear down objects under load
# (faults.sh, teardown.sh, lifecycle.sh, netns_race.sh, stall.sh,
# ring_fuzz.sh); make soak runs the data-path ones (kill.sh too) with
# kmemleak on. With TESTS set, one VM runs them, with kmemleak.
DEBUG2_TESTS=${DEBUG2_TESTS:-frame_fuzz.sh inject.sh kill.sh rc.sh netem.sh ud.sh cc.sh nvme.sh scale.sh}

# What the stock 6.12 kernel leaves to the debug kernel, built from the same
# release: control-plane scripts whose cases run whole there, and under
# KCSAN too (lifecycle.sh), and whose value is in the paths they take, not
# in speed.
DEBUG_ONLY_TESTS=${DEBUG_ONLY_TESTS:-lifecycle.sh netns_uppers.sh}

# units KERNEL...: the VM runs for those kernels: each kernel's, and the
# debug kernel's second (debug.2) unless TESTS is set.
units() {
	local k

	for k in "$@"; do
		echo "$k"
		[ "$k" != debug ] || [ -n "${TESTS:-}" ] || echo debug.2
	done
}

# unit_kernel UNIT: the kernel a VM run boots (and whose module it loads).
unit_kernel() {
	case $1 in
	debug.2) echo debug ;;
	*) echo "$1" ;;
	esac
}

# all_but TEST...: the installed tests but those.
all_but() {
	local t

	while IFS= read -r t; do
		t=${t#*:}
		[[ " $* " = *" $t "* ]] || echo -n "$t "
	done < <("$TOP/tools/ksft.sh" list)
}

# tests_for UNIT: the tests its VM runs ("" = every test).
tests_for() {
	if [ -n "${TESTS:-}" ]; then
		echo "$TESTS"
		return
	fi
	case $1 in
	debug)
		# shellcheck disable=SC2086 # a list of names
		all_but $DEBUG2_TESTS
		;;
	debug.2) echo "$DEBUG2_TESTS" ;;
	kcsan) echo "$KCSAN_TESTS" ;;
	6.1.*) echo "$SLICE_TESTS $FUZZ_TESTS" ;;
	*-rt-*)
		# Not nvme.sh: on 7.2-rt its second half (IO, a controller
		# reset, a disconnect under IO) ends, every time, in "list_del
		# corruption" in irq_poll_complete() from ib_core's softirq CQ
		# poller. That kernel is built without PREEMPT_RT_NEEDS_BH_LOCK:
		# two threads may run softirq handlers on one CPU at once, and
		# lib/irq_poll.c's handler assumes it is alone on its CPU's list.
		# Its panic would end the run.
		echo "${SLICE_TESTS/nvme.sh/}"
		;;
	*)
		# 6.12: every test but DEBUG_ONLY_TESTS. sid's 7.2: the slice
		# and rdma-core 65's pyverbs suite.
		if ! is_sid "$1"; then
			# shellcheck disable=SC2086 # a list of names
			all_but $DEBUG_ONLY_TESTS
			return
		fi
		echo "$SLICE_TESTS pyverbs.sh"
		;;
	esac
}

# An estimate of each VM run's time on 2 cores, in seconds, to balance
# the two lanes (run_vms).
vm_weight() {
	case $1 in
	debug) echo 870 ;;
	debug.2) echo 680 ;;
	kcsan) echo 280 ;;
	6.12.*) echo 770 ;;
	6.1.*) echo 350 ;;
	*-rt-*) echo 290 ;;
	*) echo 390 ;;
	esac
}

# Sets KERNELS (unless given): the Debian kernels, then the debug kernels.
pick_kernels() {
	local debian

	[ -n "${KERNELS:-}" ] && return
	debian=$("$TOP/tools/kernels.sh") || gate_failed kernels "a Debian kernel line is missing"
	KERNELS="${debian//$'\n'/ } debug kcsan $SID_KERNELS"
}

# is_sid KERNEL: true for a kernel of the sid root (build only).
is_sid() {
	case " $SID_KERNELS " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}

do_deps() {
	"$TOP/tools/deps.sh" || gate_failed deps "tools/deps.sh exited $?"
}

do_lint() {
	make -s --no-print-directory -C "$TOP" lint || gate_failed lint "make lint failed (see above)"
}

# Compiler and sparse diagnostics about our own files fail the build even
# when make succeeded (sparse never fails it); diagnostics inside the
# kernel's headers are shown but not counted. modpost warnings fail too.
build_module() {
	local k=$1 log=$OUT/$1/build.log src=$TOP/build/$1/src/ rc diag

	mkdir -p "$OUT/$k"
	if { [ "$k" = debug ] || [ "$k" = kcsan ]; } &&
	   ! "$DEBUG_KERNEL" build "$k" >"$OUT/$k/debug-kernel.log" 2>&1; then
		tail -n 20 "$OUT/$k/debug-kernel.log"
		gate_failed "build $k" "$k kernel build failed (build/check/$k/debug-kernel.log)"
		return 1
	fi
	# C=2, not C=1: sparse on every file, also those make finds up to date
	# (C=1 would check only what it recompiles, and pass a second time).
	# One job per host CPU: kbuild compiles and checks the files in
	# parallel (a serial build took 80-90 s per kernel).
	make --no-print-directory -j"$(nproc)" -C "$TOP" KVER="$k" W=1 C=2 KCFLAGS=-Werror >"$log" 2>&1
	rc=$?
	# Ours: under $src, or relative to it (kbuild runs in the module's
	# directory from 6.13 on); the kernel's headers have absolute paths.
	diag=$(awk -v src="$src" '((index($0, src) == 1 || /^(drivers|include)\//) && / (warning|error): /) ||
				  /^(WARNING|ERROR): modpost/ { print substr($0, index($0, src) == 1 ? length(src) + 1 : 1) }' "$log")
	awk -v src="$src" 'index($0, src) != 1 && !/^(drivers|include)\// &&
		/^[^ ]+:[0-9]+(:[0-9]+)?: (warning|error): / { print "  (not ours) " $0 }' "$log"
	if [ $rc -ne 0 ] || [ -n "$diag" ]; then
		[ -n "$diag" ] && echo "$diag" || tail -n 30 "$log"
		gate_failed "build $k" "W=1 C=2 -Werror build failed (build/check/$k/build.log)"
		return 1
	fi
	touch "$OUT/$k/.built"
	log "built build/$k/vroce.ko"
}

# build_once KERNEL: build_module, unless this run tried already.
build_once() {
	[ ! -e "$OUT/$1/.built" ] || return 0
	[ ! -e "$OUT/$1/.tried" ] || return 1
	mkdir -p "$OUT/$1"
	touch "$OUT/$1/.tried"
	timed "build $1" build_module "$1"
}

# lane UNIT...: for each, its kernel's module, then its VM (boot_vm); one
# after the other. The next unit's module builds while a VM runs.
lane() {
	local ks=("$@") i pid=

	build_once "$(unit_kernel "${ks[0]}")"
	for ((i = 0; i < ${#ks[@]}; i++)); do
		[ -z "$pid" ] || wait "$pid"
		pid=
		if [ $((i + 1)) -lt ${#ks[@]} ]; then
			build_once "$(unit_kernel "${ks[i + 1]}")" &
			pid=$!
		fi
		[ ! -e "$OUT/$(unit_kernel "${ks[i]}")/.built" ] || boot_vm "${ks[i]}"
	done
}

# parse_tap KERNEL FILE: print "COUNTS pass fail skip" and "FAIL what" lines;
# after an inner failure, up to WHY "FAIL   | line" lines: the last lines
# the case printed before it (the end of make check's output may be all a
# reader of a CI log gets).
parse_tap() {
	tr -d '\r' <"$2" | awk -v kernel="$1" -v WHY=8 '
	function directive(line) {
		if (match(line, / # (SKIP|TODO|TIMEOUT|XFAIL|exit=).*$/))
			return substr(line, RSTART + 3)
		return ""
	}
	function desc(line, prefix) {
		sub(prefix, "", line)
		sub(/ # (SKIP|TODO|TIMEOUT|XFAIL|exit=).*$/, "", line)
		return line
	}
	function fail(what) {
		F++
		fails[++nf] = kernel ": " what
		keep_why()
	}
	# The kept lines (ctx) go with failure nf.
	function keep_why(	i) {
		for (i = 1; i <= nctx; i++)
			why[nf, i] = ctx[i]
		nwhy[nf] = nctx
	}
	# End of a script: its inner results count; its own result only when
	# it has none, or when it failed without an inner failure to show.
	function close_script(ok, d) {
		if (script == "")
			return
		if (ip + ifl + is == 0) {
			if (ok == 1 && d ~ /^SKIP/)
				S++
			else if (ok == 1)
				P++
			else
				fail(script ": " d)
		} else {
			P += ip; F += ifl; S += is
			if (ok != 1 && ifl == 0)
				fail(script ": " d " after " (ip + is) " results (plan " plan ")")
		}
		script = ""
		ip = ifl = is = nctx = 0
	}
	/^# selftests: / {
		close_script(0, "no result (runner stopped)")
		script = $0
		sub(/^# selftests: [^:]*: /, "", script)
		plan = "?"
		next
	}
	script != "" && /^# 1\.\.[0-9]+/ {
		plan = $2
		sub(/^1\.\./, "", plan)
		next
	}
	# The last lines a case printed before its result ("# # ..."), kept
	# to show beside a failure.
	script != "" && /^# # / {
		line = substr($0, 5)
		if (length(line) > 150)
			line = substr(line, 1, 150) "..."
		ctx[++nctx] = line
		if (nctx > WHY) {
			for (i = 1; i < nctx; i++)
				ctx[i] = ctx[i + 1]
			nctx = WHY
		}
		next
	}
	script != "" && /^# (not )?ok [0-9]+ / {
		d = directive($0)
		if ($2 == "ok" && d ~ /^SKIP/)
			is++
		else if ($2 == "ok")
			ip++
		else if (d ~ /^TODO/)
			is++
		else {
			ifl++
			fails[++nf] = kernel ": " script ": " desc($0, "^# not ok [0-9]+ ")
			keep_why()
		}
		nctx = 0
		next
	}
	/^(not )?ok [0-9]+ selftests: / {
		if (script == "")
			script = desc($0, "^(not )?ok [0-9]+ selftests: [^:]*: ")
		d = directive($0)
		close_script($1 == "ok", d != "" ? d : "failed")
		next
	}
	END {
		close_script(0, "no result (runner stopped)")
		print "COUNTS", P + 0, F + 0, S + 0
		for (i = 1; i <= nf; i++) {
			print "FAIL", fails[i]
			for (j = 1; j <= nwhy[i]; j++)
				print "FAIL", "  | " why[i, j]
		}
	}'
}

# What went wrong in a VM run: run.sh's own report (for a kernel problem
# it lists the offending dmesg lines), then the guest's dmesg from the first
# of those lines on, for the call trace.
show_splats() {
	local dir=$1 first line

	sed -n '/^run.sh:/,$p' "$dir/run.log" | sed 's/^/  | /'
	first=$(sed -n '/^run.sh: kernel problem/{n;p;q}' "$dir/run.log")
	[ -n "$first" ] && [ -f "$dir/dmesg.txt" ] || return 0
	line=$(grep -n -F -m1 -- "$first" "$dir/dmesg.txt" | cut -d: -f1)
	[ -n "$line" ] || return 0
	echo "  dmesg.txt from line $line:"
	sed -n "$line,$((line + 40))p" "$dir/dmesg.txt" | sed 's/^/  | /'
}

# tally LABEL DIR: add the results of the VM run in DIR (its ksft.tap, or
# its console if the runner left none) to the totals; TALLIED = how many,
# TALLY = "N passed, N failed, N skipped".
TALLIED=0
TALLY=
tally() {
	local label=$1 dir=$2 counts p f s line

	if [ -s "$dir/ksft.tap" ]; then
		counts=$(parse_tap "$label" "$dir/ksft.tap")
	elif [ -f "$dir/console.log" ]; then
		counts=$(parse_tap "$label" "$dir/console.log")
	else
		counts=$(parse_tap "$label" /dev/null)
	fi
	read -r _ p f s <<<"$(grep '^COUNTS ' <<<"$counts")"
	PASS=$((PASS + p))
	FAIL=$((FAIL + f))
	SKIP=$((SKIP + s))
	while IFS= read -r line; do
		[ -n "$line" ] && FAILURES+=("${line#FAIL }")
	done < <(grep '^FAIL ' <<<"$counts")
	TALLIED=$((p + f + s))
	TALLY="$p passed, $f failed, $s skipped"
}

# boot_once UNIT: one VM runs the unit's tests; its exit status goes to
# build/check/UNIT/.rc.
boot_once() {
	local k=$1 dir=$OUT/$1 start=$SECONDS tmo=${VM_TIMEOUT:-2400}
	local kernel ko args tests=${TESTS:-} kargs=${VROCE_KARGS:-}

	kernel=$(unit_kernel "$k")
	ko=$TOP/build/$kernel/vroce.ko
	# A 6.12 VM took up to 1460 s and the debug VM up to 2220 s on a
	# busy 2-core host; the limits leave room above both.
	[ "$kernel" = debug ] && tmo=${VM_TIMEOUT:-3600}
	mkdir -p "$dir"
	args=(-k "$kernel" -t "$tmo" -o "$dir")
	tests=$(tests_for "$k")
	is_sid "$k" && args+=(-u "$SID_DIR")

	# The second debug VM runs without kmemleak (see DEBUG2_TESTS).
	[ "$k" = debug.2 ] && kargs="kmemleak=off $kargs"
	[ -n "${VM_MEM:-}" ] && args+=(-m "$VM_MEM")
	[ -n "${VM_CPUS:-}" ] && args+=(-c "$VM_CPUS")
	rm -f "$dir/ksft.tap" "$dir/run.log" "$dir/.rc"
	log "$k: booting the VM (timeout $tmo s)"
	# Each script's result, with the seconds since the boot began.
	# shellcheck disable=SC2086 # a list of names
	VROCE_KARGS=$kargs "$RUNNER" "${args[@]}" -- \
		env VROCE_KO="$ko" tools/ksft.sh run $tests 2>&1 |
		tee "$dir/run.log" | grep --line-buffered -E '^(not )?ok [0-9]+ selftests: ' |
		while IFS= read -r line; do
			echo "  [$k] +$((SECONDS - start)) s $line"
		done
	echo "${PIPESTATUS[0]}" >"$dir/.rc"
	log "$k: VM run: $((SECONDS - start)) s, exit $(cat "$dir/.rc")"
	echo "VM $k $((SECONDS - start)) s (from $((start - T0)) to $((SECONDS - T0)) s)" >>"$TIMES"
}

# boot_vm KERNEL: boot_once, and once more if the guest died before the
# kselftest runner started (no TAP header): TCG occasionally trips over
# kernel text patching at boot (an int3 Oops in sched_clock_init_late,
# before any module is loaded). A failure once the suite runs is never
# retried. The first console stays as console.boot1.log. May run in the
# background; finish_vm reads the outcome.
boot_vm() {
	local k=$1 dir=$OUT/$1

	rm -f "$dir/console.boot1.log"
	boot_once "$k"
	[ "$(cat "$dir/.rc")" != 0 ] || return 0
	grep -q '^TAP version' "$dir/run.log" 2>/dev/null && return 0
	cp "$dir/console.log" "$dir/console.boot1.log" 2>/dev/null
	log "$k: the guest died before the suite started; booting again (first console: build/check/$k/console.boot1.log)"
	boot_once "$k"
}

# finish_vm KERNEL: count the results of boot_vm KERNEL, and its failure.
finish_vm() {
	local k=$1 dir=$OUT/$1 rc n

	rc=$(cat "$dir/.rc" 2>/dev/null || echo 126)
	tally "$k" "$dir"
	n=$TALLIED

	case $rc in
	0) ;;
	124) gate_failed "$k" "VM timed out (run.sh exit 124)" ;;
	125) gate_failed "$k" "kernel warning/BUG/KASAN/lockdep/kmemleak report in the guest (run.sh exit 125)" ;;
	126) gate_failed "$k" "no status came back from the guest (run.sh exit 126)" ;;
	*) gate_failed "$k" "guest command failed (exit $rc, build/check/$k/run.log)" ;;
	esac
	if [ "$rc" != 0 ]; then
		show_splats "$dir"
		echo "  last console lines:"
		grep -v '^run.sh:' "$dir/run.log" | tail -n 15 | sed 's/^/  > /'
	fi
	[ "$n" -gt 0 ] || [ "$rc" != 0 ] || gate_failed "$k" "no test results (build/check/$k/run.log)"
	log "$k: $TALLY"
}

# run_vms KERNEL...: lane (build, boot_vm) for each VM run (units), then
# finish_vm for each whose kernel was built, in order.
# With VM_JOBS=2 (the default) two VMs run at once, in two lanes balanced
# by vm_weight (the heaviest, a debug kernel's, always in the first); each
# lane's VMs take turns, the heaviest first. On 2 cores this is faster than
# running the VMs one after the other, and building the next module while a
# VM runs is faster than building them all first.
run_vms() {
	local jobs=${VM_JOBS:-2} k i w n mask best=-1 max sa sb pids=() a=() b=()
	local ks=() ws=() all=() d1='' d2=''

	[ $# -gt 0 ] || return 0
	mapfile -t all < <(units "$@")
	# The heaviest first: a lane runs its VMs in that order.
	while read -r w k; do
		ks+=("$k")
		ws+=("$w")
	done < <(for k in "${all[@]}"; do echo "$(vm_weight "$k") $k"; done | sort -s -k1,1nr)
	n=${#ks[@]}
	for ((i = 0; i < n; i++)); do
		case ${ks[i]} in
		debug) d1=$i ;;
		debug.2) d2=$i ;;
		esac
	done
	# The split whose longer lane is the shortest (a few kernels: try
	# all), the two debug VMs in different lanes: they run side by side
	# first. In one lane, one after the other, each ran beside the stock
	# kernels' lane instead, and its frame_fuzz.sh took 1.5 times as long,
	# its cc.sh 4 times.
	for ((mask = 0; mask < (1 << n); mask += 2)); do
		[ -z "$d1" ] || [ -z "$d2" ] ||
			[ $(((mask >> d1 ^ mask >> d2) & 1)) = 1 ] || continue
		sa=0
		sb=0
		for ((i = 0; i < n; i++)); do
			if (((mask >> i) & 1)); then sb=$((sb + ws[i])); else sa=$((sa + ws[i])); fi
		done
		max=$((sa > sb ? sa : sb))
		if [ "$best" -lt 0 ] || [ "$max" -lt "$best" ]; then
			best=$max
			a=()
			b=()
			for ((i = 0; i < n; i++)); do
				if (((mask >> i) & 1)); then b+=("${ks[i]}"); else a+=("${ks[i]}"); fi
			done
		fi
	done
	if [ "$jobs" = 1 ] || [ ${#b[@]} -eq 0 ]; then
		lane "${ks[@]}"
	else
		log "lanes: ${a[*]} | ${b[*]} (estimate: ~$best s)"
		echo "lanes: ${a[*]} | ${b[*]} (estimate: ~$best s)" >>"$TIMES"
		lane "${a[@]}" &
		pids+=($!)
		lane "${b[@]}" &
		pids+=($!)
		wait "${pids[@]}"
	fi
	for k in "${all[@]}"; do
		[ -e "$OUT/$(unit_kernel "$k")/.built" ] && finish_vm "$k"
	done
}

# The wire interop test between two VMs, rdma_rxe in vm1 and vroce in vm2
# (interop.sh through tools/testing/vm/pair.sh; in single VMs it skips),
# once, on the first 6.12 kernel built, unless TESTS leaves it out. Its
# results count per VM; a VM that failed (timeout, splat, lost guest) is one
# more failure, as for run_vm.
run_pair() {
	local k=$1 dir=$OUT/pair rc start=$SECONDS v vrc n=0
	local ko=$TOP/build/$1/vroce.ko

	mkdir -p "$dir"
	rm -f "$dir"/vm[12]/ksft.tap "$dir/run.log"
	log "pair ($k): booting two VMs, rdma_rxe and vroce (timeout ${VM_TIMEOUT:-1500} s)"
	"$PAIR" -k "$k" -t "${VM_TIMEOUT:-1500}" -o "$dir" -- \
		env VROCE_INTEROP="rxe vroce" VROCE_KO="$ko" tools/ksft.sh run interop.sh 2>&1 |
		tee "$dir/run.log" | grep --line-buffered -E '^\[vm[12]\] (not )?ok [0-9]+ selftests: ' |
		sed -u "s/^/  [pair $k] /"
	rc=${PIPESTATUS[0]}
	log "pair ($k): VM run: $((SECONDS - start)) s, exit $rc"
	for v in vm1 vm2; do
		tally "$k $v (pair)" "$dir/$v"
		n=$((n + TALLIED))
		log "pair ($k) $v: $TALLY"
		vrc=$(cat "$dir/$v/.pair-status" 2>/dev/null || echo 126)
		case $vrc in
		0) continue ;;
		124) gate_failed "pair $v" "VM timed out (run.sh exit 124)" ;;
		125) gate_failed "pair $v" "kernel warning/BUG/KASAN/lockdep/kmemleak report in the guest (run.sh exit 125)" ;;
		126) gate_failed "pair $v" "no status came back from the guest (run.sh exit 126)" ;;
		*) gate_failed "pair $v" "guest command failed (exit $vrc, build/check/pair/run.log)" ;;
		esac
		grep "^\[$v\] run.sh:" "$dir/run.log" -A 20 | sed 's/^/  | /'
		[ -f "$dir/$v/dmesg.txt" ] && grep -q . "$dir/$v/dmesg.txt" &&
			echo "  (dmesg: build/check/pair/$v/dmesg.txt)"
	done
	[ "$n" -gt 0 ] || [ "$rc" != 0 ] || gate_failed pair "no test results (build/check/pair/run.log)"
	log "pair ($k): done"
}

# The kernel for run_pair: the first 6.12 in $@, if VROCE_PAIR=1 asks for
# the pair and TESTS lets interop.sh run.
pair_kernel() {
	[ "${VROCE_PAIR:-0}" = 1 ] || return 1
	local k

	case " ${TESTS:-interop.sh} " in
	*" interop.sh "*) ;;
	*) return 1 ;;
	esac
	for k in "$@"; do
		case $k in
		6.12.*) echo "$k" && return 0 ;;
		esac
	done
	return 1
}

setup_sid_root() {
	"$SID_ROOT" setup >"$OUT/sid-root.log" 2>&1
}

# sid_ready KERNEL...: set up the sid root (SID_DIR) for the sid kernels'
# VMs. If it cannot be, each kernel is one skip that says why, and the
# status is 1.
sid_ready() {
	local k n=0 why

	log "sid: setting up the Debian sid root (tools/sid-root.sh setup, cached)"
	if timed "sid root" setup_sid_root && SID_DIR=$("$SID_ROOT" dir); then
		return 0
	fi
	why=$(grep '^sid-root: ' "$OUT/sid-root.log" | tail -n 1)
	why=${why#sid-root: }
	for k in "$@"; do
		n=$((n + 1))
		echo "ok $n sid $k # SKIP no sid root: ${why:-see build/check/sid-root.log}"
		SKIP=$((SKIP + 1))
	done
	return 1
}

main() {
	local k built=() ksft_ok=1 vms=() sids=()

	mkdir -p "$OUT"
	GATES=$OUT/.gates
	TIMES=$OUT/.times
	: >"$TIMES"
	# Two checks in one tree would overwrite each other's build/ksft and
	# build/check: take turns.
	exec 8>"$OUT/.lock"
	if ! flock -n 8; then
		log "waiting for another 'make check' in this tree"
		flock 8
	fi
	rm -f "$OUT/summary" "$OUT"/*/.built "$OUT"/*/.tried
	: >"$GATES"
	timed deps do_deps
	timed lint do_lint
	pick_kernels
	log "kernels: $KERNELS${TESTS:+; tests: $TESTS}"
	for k in $KERNELS; do
		if is_sid "$k"; then
			sids+=("$k")
		else
			vms+=("$k")
		fi
	done
	[ ${#sids[@]} -eq 0 ] || ! sid_ready "${sids[@]}" || vms+=("${sids[@]}")
	KERNELS="${vms[*]}"

	# The debug kernel's module now: its VM, the longest, starts first.
	# The others are built in the other lane (run_vms).
	for k in $KERNELS; do
		[ "$k" != debug ] || build_once "$k"
	done
	if [ ${#vms[@]} -eq 0 ]; then
		ksft_ok=0
	elif ! timed "build selftests" "$TOP/tools/ksft.sh" build >"$OUT/ksft-build.log" 2>&1; then
		tail -n 30 "$OUT/ksft-build.log"
		gate_failed selftests "tools/ksft.sh build failed (build/check/ksft-build.log)"
		ksft_ok=0
	fi
	if [ ! -x "$RUNNER" ]; then
		gate_failed vm "$RUNNER missing"
		ksft_ok=0
	fi

	if [ "$ksft_ok" = 1 ]; then
		# shellcheck disable=SC2086 # a list of kernel names
		run_vms $KERNELS
	else
		# No VM: the builds still tell what fails to build.
		for k in $KERNELS; do
			build_once "$k"
		done
	fi
	for k in $KERNELS; do
		[ ! -e "$OUT/$k/.built" ] || built+=("$k")
	done
	if [ "$ksft_ok" = 1 ] && k=$(pair_kernel "${built[@]}"); then
		run_pair "$k"
	fi

	count_gates
	show_times
	if [ ${#FAILURES[@]} -gt 0 ]; then
		echo
		echo "Failures:"
		printf '  %s\n' "${FAILURES[@]}"
	fi
	log "total time $((SECONDS - T0)) s"
	if [ $((PASS + FAIL + SKIP)) -eq 0 ]; then
		log "no test ran"
		[ "$FAIL" -gt 0 ] || FAIL=1
	fi
	echo "$PASS passed, $FAIL failed, $SKIP skipped" | tee "$OUT/summary"
	[ "$FAIL" -eq 0 ]
}

main "$@"
