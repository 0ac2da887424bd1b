#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A peer that starts a message and goes silent must not hold anything up.
# For each case, a fresh topology:
#
#   [ns sta-*: nva over va, stall_test] ==veth== [ns stb-*: vb, stall.py]
#
# stall_test holds an RC QP whose MR was registered after it (the rdma_cm
# order); stall.py, a packet socket on vb, sends the first packet of a SEND
# or an RDMA WRITE, or the first response to the QP's RDMA READ, and then
# nothing. Then each of: deregistering the MR (the buffer registers again),
# destroying the QP, SIGKILL of the process, rdma link delete must be over
# within 5 s, and the teardown of a deleted namespace within 15 s (three
# times that on the debug kernel, whose RCU and memory debugging slow a
# teardown under TCG). These are hang guards (stall.py): a teardown that
# waits on the peer never ends, in D state. And a READ whose peer vanished after the first response is
# retried from the second, until the retries run out. Last, the module
# unloads. Ten of the sixteen cases by default, six on a lean kernel (debug,
# 6.1); STALL_FULL=1 runs all, STALL_CASES="send dereg,read kill" those.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma python3 timeout

KINDS=(send write read)
ACTIONS=(dereg destroy kill linkdel netnsdel)

cleanup() {
	teardown
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

setup() {
	vroce_veth_ns sta stb && vroce_ns_devs nva
}

teardown() {
	timeout 10 ip netns exec "$NSA" rdma link delete nva 2>/dev/null
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
}

# one_case KIND ACTION: a fresh topology, stall.py's result line.
one_case() {
	local kind=$1 action=$2 out=$VROCE_LOG.case line

	if ! setup >"$out" 2>&1; then
		sed 's/^/# /' "$out"
		ktap_test_fail "$kind $action: topology"
		teardown
		return
	fi
	timeout 120 python3 "$VROCE_LIB_DIR/stall.py" "$kind" "$action" \
		--ns-a "$NSA" --ns-b "$NSB" --ifname vb --dev nva \
		--dut-mac "$MACA" --peer-mac "$MACB" \
		--dut-ip 192.0.2.1 --peer-ip 192.0.2.2 \
		--prog "$VROCE_BIN/stall_test" >"$out" 2>&1
	line=$(grep '^RESULT ' "$out")
	grep -v '^RESULT ' "$out" | sed 's/^/# /'
	case $line in
	"RESULT ok "*) ktap_test_pass "${line#RESULT ok }" ;;
	"RESULT fail "*) ktap_test_fail "${line#RESULT fail }" ;;
	*) ktap_test_fail "$kind $action: stall.py gave no result" ;;
	esac
	teardown
}

# Every kind of stall with dereg and SIGKILL (the held reference and the
# process exit), and each other teardown once; a lean kernel (debug, 6.1)
# takes each teardown once, each kind twice.
DEFAULT_CASES=("send dereg" "write dereg" "read dereg" "send kill" "write kill"
	"read kill" "send linkdel" "write netnsdel" "read destroy" "read retry")
LEAN_CASES=("send dereg" "send linkdel" "write destroy" "write netnsdel"
	"read kill" "read retry")
CASES=()
if [ -n "${STALL_CASES:-}" ]; then
	IFS=, read -ra CASES <<<"$STALL_CASES"
elif [ -n "${STALL_FULL:-}" ]; then
	for kind in "${KINDS[@]}"; do
		for action in "${ACTIONS[@]}"; do
			CASES+=("$kind $action")
		done
	done
	CASES+=("read retry")
elif vroce_lean_kernel; then
	CASES=("${LEAN_CASES[@]}")
else
	CASES=("${DEFAULT_CASES[@]}")
fi

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan $((${#CASES[@]} + 1))
for c in "${CASES[@]}"; do
	# shellcheck disable=SC2086 # "kind action"
	one_case $c
done
check "rmmod vroce after the stalled peers" vroce_unload
ktap_finished
