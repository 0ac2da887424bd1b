#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build and run vroce's kselftests with the kernel's own kselftest framework
# (lib.mk, kselftest_harness.h, runner.sh ...), which is taken from Debian's
# linux-source-6.12 at build time and never committed.
#
#   tools/ksft.sh build      on the host: lay out build/selftests/, build the
#                            C tests and install everything into build/ksft/
#   tools/ksft.sh run [T..]  in the test VM (read-only root): run the installed
#                            suite, or only tests T (file names, e.g. link.sh),
#                            one after the other, in KTAP as run_kselftest.sh
#                            prints it (run_one says why not with it)
#   tools/ksft.sh list       the installed collection:test entries
#
# KSFT_TIMEOUT=S overrides each test's time limit (the settings file's) for
# 'run', for long runs such as KILL_ROUNDS=100.
#
# build/selftests/ mirrors the kernel's tools/testing/selftests: the framework
# files are copied there, so lib.mk's $(selfdir) is build/selftests, and each
# of our test directories is a tree of symlinks to selftests/<dir> (cp -as),
# so its Makefile's 'include ../../../lib.mk' works unchanged. build/ksft/ is
# what 'make install' of a kernel tree would produce: run_kselftest.sh,
# kselftest/, kselftest-list.txt and one directory per collection holding
# real copies of the tests (rsync --copy-unsafe-links).
#
# 'run' writes the TAP to $VROCE_OUT/ksft.tap (the VM runner's read-write
# share) as well as to stdout, and exits 0 once the tests ran: verdicts come
# from parsing the TAP (tools/check.sh), each failure once.
set -euo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
MIRROR=$TOP/build/selftests
INSTALL=$TOP/build/ksft
# Our test directories, relative to selftests/ (and so the collection names).
COLLECTIONS=(drivers/infiniband/vroce)

ksft_build() {
	local src fw c
	src=$("$TOP/tools/linux-src.sh")
	fw=$src/tools/testing/selftests

	rm -rf "$MIRROR" "$INSTALL"
	mkdir -p "$MIRROR/kselftest" "$INSTALL/kselftest"
	cp "$fw"/{lib.mk,kselftest.h,kselftest_harness.h,run_kselftest.sh} "$MIRROR/"
	cp "$fw"/kselftest/{runner.sh,prefix.pl,ktap_helpers.sh,module.sh} "$MIRROR/kselftest/"

	# What the top-level selftests Makefile's install target does.
	install -m 744 "$MIRROR"/kselftest/{runner.sh,prefix.pl,ktap_helpers.sh,module.sh} \
		"$INSTALL/kselftest/"
	install -m 744 "$MIRROR/run_kselftest.sh" "$INSTALL/"
	: >"$INSTALL/kselftest-list.txt"

	for c in "${COLLECTIONS[@]}"; do
		mkdir -p "$(dirname "$MIRROR/$c")"
		cp -as "$TOP/selftests/$c" "$MIRROR/$c"
		# MAKELEVEL and MAKEFLAGS come from 'make check'; lib.mk only
		# defaults OUTPUT at MAKELEVEL 0, so always pass it.
		env -u MAKEFLAGS -u MAKELEVEL make -C "$MIRROR/$c" OUTPUT="$MIRROR/$c" all
		env -u MAKEFLAGS -u MAKELEVEL make -s -C "$MIRROR/$c" OUTPUT="$MIRROR/$c" \
			INSTALL_PATH="$INSTALL/$c" install
		env -u MAKEFLAGS -u MAKELEVEL make -s --no-print-directory -C "$MIRROR/$c" \
			OUTPUT="$MIRROR/$c" COLLECTION="$c" emit_tests >>"$INSTALL/kselftest-list.txt"
	done
	echo "ksft: $(wc -l <"$INSTALL/kselftest-list.txt") tests installed in $INSTALL"
}

# The installed tests of a collection, in the order the runner takes them.
tests_of() {
	local line

	while IFS= read -r line; do
		[ "${line%%:*}" != "$1" ] || echo "${line#*:}"
	done <"$INSTALL/kselftest-list.txt"
}

# time_limit DIR: the seconds a test of collection DIR may take: its
# settings file's, or KSFT_TIMEOUT.
time_limit() {
	local key val tmo=45

	if [ -r "$1/settings" ]; then
		while IFS='=' read -r key val; do
			[ "$key" != timeout ] || tmo=$val
		done <"$1/settings"
	fi
	echo "${KSFT_TIMEOUT:-$tmo}"
}

# run_one N C T: test T of collection C as the kselftest runner runs it:
# its KTAP indented under "# selftests: C: T", then one result line, "ok N"
# ("# SKIP" for exit 4) or "not ok N" ("# TIMEOUT", "# exit=RC"), which
# tools/check.sh parses. The runner's own per-test start-up (a dozen
# processes: tr, cut, grep, perl, stdbuf and two timeouts) took 6 s per
# test on the debug kernel, where starting a process takes a quarter of a
# second; this starts two.
run_one() {
	local n=$1 c=$2 t=$3 dir=$INSTALL/$2 tmo rc=0

	tmo=$(time_limit "$dir")
	echo "# selftests: $c: $t"
	if [ ! -x "$dir/$t" ]; then
		echo "not ok $n selftests: $c: $t # not installed"
		return 1
	fi
	(cd "$dir" && exec timeout -k 10 "$tmo" "./$t" </dev/null 2>&1) |
		sed -u 's/^/# /' || rc=$?
	case $rc in
	0) echo "ok $n selftests: $c: $t" ;;
	4) echo "ok $n selftests: $c: $t # SKIP" ;;
	124) echo "not ok $n selftests: $c: $t # TIMEOUT $tmo seconds" ;;
	*) echo "not ok $n selftests: $c: $t # exit=$rc" ;;
	esac
	[ "$rc" = 0 ] || [ "$rc" = 4 ]
}

# ksft_run [T...]: every installed test, or tests T (of the first
# collection that has them; also one not in the default run,
# TEST_PROGS_EXTENDED), in KTAP.
ksft_run() {
	local out=${VROCE_OUT:-/tmp}/ksft.tap
	local c t n=0 run=()

	[ -s "$INSTALL/kselftest-list.txt" ] || {
		echo "ksft: $INSTALL not built; run tools/ksft.sh build on the host" >&2
		exit 1
	}
	if [ $# -eq 0 ]; then
		for c in "${COLLECTIONS[@]}"; do
			while IFS= read -r t; do
				run+=("$c:$t")
			done < <(tests_of "$c")
		done
	fi
	for t in "$@"; do
		for c in "${COLLECTIONS[@]}" ""; do
			[ -n "$c" ] || {
				echo "ksft: no test named $t (tools/ksft.sh list)" >&2
				break
			}
			[ -x "$INSTALL/$c/$t" ] || continue
			run+=("$c:$t")
			break
		done
	done
	{
		echo "TAP version 13"
		echo "1..${#run[@]}"
	} | tee "$out"
	for t in "${run[@]}"; do
		n=$((n + 1))
		run_one "$n" "${t%%:*}" "${t#*:}" | tee -a "$out" || true
	done
}

case "${1:-}" in
build) ksft_build ;;
run) shift; ksft_run "$@" ;;
list) cat "$INSTALL/kselftest-list.txt" ;;
*)
	echo "usage: $0 build | run [TEST...] | list" >&2
	exit 2
	;;
esac
