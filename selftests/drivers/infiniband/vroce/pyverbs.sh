#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rdma-core's pyverbs test suite (python3-pyverbs, Debian's copy in
# /usr/share/doc/rdma-core/tests) against vroce, then against rdma_rxe, in
# the same VM, on the same kind of netdev (a veth end in init_net with one
# IPv4 address: rxe works only there, and only in single-device loopback),
# with the same arguments: the device, and its RoCE v2 GID of that address.
# vroce is unloaded before rdma_rxe loads (they share UDP port 4791 and the
# driver id). Both runs go through pyverbs_suite.py, which finds the netdev
# with "rdma link" as rdma-core v45+ does, so the rdmacm tests run too, and
# bounds each test's time.
#
# vroce must have no failure and no error, and pass every test rdma_rxe
# passes, on-demand paging (ODP) ones included. So rdma_rxe runs only the
# tests vroce did not pass (PYVERBS_RXE_ALL=1: every test, for its counts,
# the baseline to beat).
#
# Environment: PYVERBS_TESTS="test_qp test_mr.MRTest" runs only those
# (unittest names below the suite's "tests" package), for both drivers.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE_SRC=/usr/share/doc/rdma-core/tests
SUITE_PY=$(readlink -f "$VROCE_LIB_DIR/pyverbs_suite.py")
IP=192.0.2.41
NETDEV=pya
# Whole-suite guard per driver; the test's own timeout is in settings.
SUITE_TIMEOUT=400

vroce_require ip rdma python3 gzip timeout
[ -f "$SUITE_SRC/run_tests.py" ] || vroce_skip_all "no pyverbs suite in $SUITE_SRC"
python3 -c 'import pyverbs.device' 2>/dev/null ||
	vroce_skip_all "python3-pyverbs not installed"
modinfo rdma_rxe >/dev/null 2>&1 || vroce_skip_all "no rdma_rxe module"

WORK=$(mktemp -d /tmp/vroce-pyverbs.XXXXXX)
# How many tests passed on each driver, -1 if none ran.
RXE_PASS=-1
VROCE_PASS=-1

cleanup() {
	rdma link delete pyrxe 2>/dev/null
	rdma link delete pyvroce 2>/dev/null
	modprobe -r rdma_rxe 2>/dev/null
	ip link del "$NETDEV" 2>/dev/null
	vroce_unload
	rm -rf "$WORK"
	vroce_cleanup
}
trap cleanup EXIT

# The suite, uncompressed, in $WORK/tests.
unpack() {
	cp -r "$SUITE_SRC" "$WORK/tests" && chmod -R u+w "$WORK/tests" &&
		gunzip -f "$WORK"/tests/*.py.gz
}

netdev() {
	ip link add "$NETDEV" type veth peer name pyb &&
		ip addr add "$IP/24" dev "$NETDEV" &&
		ip link set "$NETDEV" up && ip link set pyb up
}

setup() {
	unpack && netdev
}

# gid_v4 DEV: print the index of DEV's RoCE v2 GID for $IP.
gid_v4() {
	local want f i

	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		${IP//./ })
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		[ "$(cat "$f" 2>/dev/null)" = "$want" ] &&
			[ "$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" \
				2>/dev/null)" = "RoCE v2" ] && echo "$i" && return 0
	done
	return 1
}

# add DRIVER DEV: DEV over $NETDEV, up, with its RoCE v2 GID for $IP.
add() {
	rdma link add "$2" type "$1" netdev "$NETDEV" &&
		wait_for 10 gid_v4 "$2" &&
		wait_for 10 grep -q ACTIVE "/sys/class/infiniband/$2/ports/1/state"
}

# suite DEV NAME [TEST...]: run the suite (or those of its tests) on DEV;
# results in $WORK/NAME.res (as they come), unittest's report in
# $WORK/NAME.log, its time in $WORK/NAME.time.
suite() {
	local dev=$1 name=$2 gid start=$SECONDS rc=0

	shift 2
	gid=$(gid_v4 "$dev") || return 1
	(cd "$WORK" && timeout -k 10 "$SUITE_TIMEOUT" python3 "$SUITE_PY" \
		"$WORK/tests" "$WORK/$name.res" --dev "$dev" --gid "$gid" \
		"$@") >"$WORK/$name.log" 2>&1 || rc=$?
	echo "$((SECONDS - start))" >"$WORK/$name.time"
	if [ "$rc" != 0 ]; then
		echo "the suite exited $rc$([ "$rc" = 124 ] && echo " (timeout)")" \
			"after $((SECONDS - start)) s; its last lines:"
		tail -n 15 "$WORK/$2.log"
		return 1
	fi
}

# count NAME OUTCOME
count() {
	grep -c "^$2 " "$WORK/$1.res"
}

# summary NAME: print the counts as a diagnostic (to $WORK/NAME.summary);
# unittest's summary must agree with the per-test results.
summary() {
	local ran n

	ran=$(sed -n 's/^Ran \([0-9]*\) tests\? in .*/\1/p' "$WORK/$1.log")
	n=$(wc -l <"$WORK/$1.res")
	{
		echo "# $1: $(count "$1" pass) pass, $(count "$1" fail) fail," \
			"$(count "$1" error) error, $(count "$1" skip) skip" \
			"($(count "$1" xfail) xfail, $(count "$1" xpass) xpass)" \
			"of $n in $(cat "$WORK/$1.time") s"
		grep -E '^(fail|error|xpass) ' "$WORK/$1.res" | sed "s/^/# $1: /"
	} >"$WORK/$1.summary"
	[ -n "$ran" ] && [ "$ran" = "$n" ] && return 0
	echo "unittest says 'Ran ${ran:-?} tests', $n results recorded"
	return 1
}

# run DRIVER DEV NAME [TEST...]: the suite (or those tests) on a new DEV.
run() {
	local driver=$1 dev=$2 name=$3 rc=0

	shift 3
	add "$driver" "$dev" && suite "$dev" "$name" "$@" || rc=1
	[ -s "$WORK/$name.res" ] || return 1
	summary "$name" || rc=1
	return $rc
}

# The tests to run: PYVERBS_TESTS, or none given (all).
run_vroce() {
	dmesg_mark pyverbs-vroce
	# shellcheck disable=SC2086 # a list of test names
	vroce_load && run vroce pyvroce vroce ${PYVERBS_TESTS:-}
}

unload_vroce() {
	rdma link delete pyvroce && vroce_unload && [ ! -d /sys/module/vroce ]
}

# rdma_rxe on the tests vroce did not pass (their ids, less the suite's
# package name), or on them all with PYVERBS_RXE_ALL=1.
run_rxe() {
	local tests=()

	if [ -n "${PYVERBS_RXE_ALL:-}" ]; then
		# shellcheck disable=SC2206 # a list of test names
		tests=(${PYVERBS_TESTS:-})
	else
		mapfile -t tests < <(awk '$1 != "pass" && $2 ~ /^tests\./ {
			print substr($2, 7) }' "$WORK/vroce.res")
		[ ${#tests[@]} -gt 0 ] || { : >"$WORK/rxe.res"; return 0; }
	fi
	modprobe rdma_rxe && run rxe pyrxe rxe "${tests[@]}"
}

# Each failure with the line unittest printed for it and its traceback's
# last lines.
vroce_clean() {
	local bad

	bad=$(grep -E '^(fail|error|xpass) ' "$WORK/vroce.res") || return 0
	echo "$bad"
	echo "--- the end of each one's traceback:"
	awk '/^=== / { if (head) flush(); head = $0; n = 0; next }
	     { tail[++n % 12] = $0; cnt = n }
	     function flush(  i) { print head
		for (i = (cnt > 12 ? cnt - 11 : 1); i <= cnt; i++) print "    " tail[i % 12] }
	     END { if (head) flush() }' "$WORK/vroce.res.tb"
	# rdmacm tests run their two sides in child processes, which print
	# their exception; the test itself only says that one occurred.
	grep -B1 ' got: ' "$WORK/vroce.log" | grep -v '^--$' | head -n 60
	echo "--- kernel messages since vroce loaded (last 60):"
	dmesg_since pyverbs-vroce | tail -n 60
	return 1
}

# vroce passes every test rdma_rxe passes; the others are named, with
# vroce's result.
vroce_not_worse() {
	local name line bad=0

	while IFS= read -r name; do
		line=$(awk -v n="$name" '$2 == n { print; exit }' "$WORK/vroce.res")
		echo "pass on rdma_rxe, not on vroce: ${line:-$name (no result)}"
		bad=$((bad + 1))
	done < <(comm -23 <(sed -n 's/^pass //p' "$WORK/rxe.res" | sort) \
		<(sed -n 's/^pass //p' "$WORK/vroce.res" | sort))
	echo "vroce passed $VROCE_PASS; rdma_rxe $RXE_PASS of those it ran"
	[ "$RXE_PASS" -ge 0 ] && [ "$bad" = 0 ]
}

# passes NAME: its pass count, -1 if it has no results (rdma_rxe's has
# none when vroce passed everything, and then counts 0).
passes() {
	if [ -e "$WORK/$1.res" ]; then count "$1" pass; else echo -1; fi
}

ktap_print_header
ktap_set_plan 6
check "the suite unpacked, a veth with $IP in init_net" setup
check "vroce: the suite ran on a device over the veth" run_vroce
[ -f "$WORK/vroce.summary" ] && cat "$WORK/vroce.summary"
VROCE_PASS=$(passes vroce)
check "vroce unloads (it holds UDP 4791)" unload_vroce
# rdma_rxe's failures are not ours: they are shown, not counted.
if [ "$VROCE_PASS" -ge 0 ]; then
	check "rdma_rxe: the tests vroce did not pass ran on a device over the same veth" \
		run_rxe
	[ -f "$WORK/rxe.summary" ] && cat "$WORK/rxe.summary"
	RXE_PASS=$(passes rxe)
	check "vroce: no test fails or errors" vroce_clean
	check "vroce: passes what rdma_rxe passes" vroce_not_worse
else
	ktap_test_fail "rdma_rxe: not run (no vroce result)"
	ktap_test_fail "vroce: no test fails or errors (no result)"
	ktap_test_fail "vroce: passes what rdma_rxe passes (no result)"
fi
ktap_finished
