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
#                            with run_kselftest.sh, one call per collection
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
# share) as well as to stdout, and exits 0 if the runner ran: verdicts come
# from parsing the TAP (tools/check.sh), because the 6.12 runner exits 0 even
# when tests fail.
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

# run_extended T: an installed test that is not in the default run
# (TEST_PROGS_EXTENDED), run as the runner runs one: its KTAP indented
# under "# selftests: ..." and one result line, so tools/check.sh counts it.
run_extended() {
	local t=$1 dir=$INSTALL/drivers/infiniband/vroce rc=0

	echo "# selftests: drivers/infiniband/vroce: $t"
	(cd "$dir" && timeout -k 10 "${KSFT_TIMEOUT:-1800}" "./$t") 2>&1 |
		sed -u 's/^/# /' || rc=$?
	case $rc in
	0) echo "ok 1 selftests: drivers/infiniband/vroce: $t" ;;
	4) echo "ok 1 selftests: drivers/infiniband/vroce: $t # SKIP" ;;
	124) echo "not ok 1 selftests: drivers/infiniband/vroce: $t # TIMEOUT" ;;
	*) echo "not ok 1 selftests: drivers/infiniband/vroce: $t # exit=$rc" ;;
	esac
	[ "$rc" = 0 ] || [ "$rc" = 4 ]
}

ksft_run() {
	local out=${VROCE_OUT:-/tmp}/ksft.tap
	local c t sel args rc=0 extended=()

	[ -x "$INSTALL/run_kselftest.sh" ] || {
		echo "ksft: $INSTALL not built; run tools/ksft.sh build on the host" >&2
		exit 1
	}
	: >"$out"
	for t in "$@"; do
		grep -q ":$t\$" "$INSTALL/kselftest-list.txt" && continue
		if [ -x "$INSTALL/drivers/infiniband/vroce/$t" ]; then
			extended+=("$t")
			continue
		fi
		echo "ksft: no test named $t (tools/ksft.sh list)" >&2
	done
	for c in $(cut -d: -f1 "$INSTALL/kselftest-list.txt" | sort -u); do
		args=(-c "$c")
		if [ $# -gt 0 ]; then
			args=()
			for t in "$@"; do
				sel=$(grep -x "$c:$t" "$INSTALL/kselftest-list.txt") || continue
				args+=(-t "$sel")
			done
			[ ${#args[@]} -gt 0 ] || continue
		fi
		[ -n "${KSFT_TIMEOUT:-}" ] && args+=(-o "$KSFT_TIMEOUT")
		"$INSTALL/run_kselftest.sh" "${args[@]}" 2>&1 | tee -a "$out" || rc=1
	done
	for t in "${extended[@]}"; do
		run_extended "$t" | tee -a "$out" || rc=1
	done
	return $rc
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
