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

# Fixed MAC addresses: stall.py needs both, and reading them back from
# the namespaces would take a process each.
MACA=02:00:5e:00:53:01
MACB=02:00:5e:00:53:02
NSA=sta-$$
NSB=stb-$$
# stall.py --serve runs the cases, started once (a Python start takes
# seconds on the debug kernel) and again after a case it did not finish.
SERVER_PID=
SERVER_IN=
SERVER_OUT=

cleanup() {
	server_stop
	teardown
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# setup: vroce_veth_ns's topology (with lo up in both namespaces), one ip
# batch per namespace, and the device nva.
setup() {
	ip -batch - <<-EOF &&
		netns add $NSA
		netns add $NSB
		link add va address $MACA netns $NSA type veth peer name vb address $MACB netns $NSB
	EOF
		ip -n "$NSA" -batch - <<-EOF &&
			link set lo up
			addr add 192.0.2.1/24 dev va
			link set va up
		EOF
		ip -n "$NSB" -batch - <<-EOF &&
			link set lo up
			addr add 192.0.2.2/24 dev vb
			link set vb up
		EOF
		vroce_ns_devs nva
}

# nva is gone already after linkdel and netnsdel (shared mode: sysfs in
# init_net shows it wherever it is).
teardown() {
	[ ! -e /sys/class/infiniband/nva ] ||
		timeout 10 ip netns exec "$NSA" rdma link delete nva 2>/dev/null
	ip -force -batch - 2>/dev/null <<-EOF
		netns del $NSA
		netns del $NSB
	EOF
}

# The server's pipes are copies of the coprocess's, which bash closes as
# soon as the server exits.
server_start() {
	coproc STALL_PY { exec python3 "$VROCE_LIB_DIR/stall.py" --serve 2>&1; }
	SERVER_PID=$STALL_PY_PID
	exec {SERVER_IN}>&"${STALL_PY[1]}" {SERVER_OUT}<&"${STALL_PY[0]}"
}

server_stop() {
	[ -n "$SERVER_PID" ] || return 0
	exec {SERVER_IN}>&- {SERVER_OUT}<&-
	kill -9 "$SERVER_PID" 2>/dev/null
	wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
}

# server_case ARGS: stall.py's output for one case, each line commented,
# until its result line (in RESULT), for at most 120 s (a hang guard);
# else the server goes.
server_case() {
	local args line left end=$((SECONDS + 120))

	RESULT=
	[ -n "$SERVER_PID" ] || server_start
	printf -v args '%q ' "$@"
	# A server that died would kill this shell with SIGPIPE.
	trap '' PIPE
	echo "$args" >&"$SERVER_IN"
	trap - PIPE
	while left=$((end - SECONDS)) && ((left > 0)) &&
	      read -r -t "$left" -u "$SERVER_OUT" line; do
		if [[ $line == "RESULT "* ]]; then
			RESULT=$line
			return
		fi
		echo "# $line"
	done
	server_stop
}

# one_case KIND ACTION: a fresh topology, stall.py's result line.
one_case() {
	local kind=$1 action=$2 out=$VROCE_LOG.case

	if ! setup >"$out" 2>&1; then
		sed 's/^/# /' "$out"
		ktap_test_fail "$kind $action: topology"
		teardown
		return
	fi
	server_case "$kind" "$action" --ns-a "$NSA" --ns-b "$NSB" \
		--ifname vb --dev nva --dut-mac "$MACA" --peer-mac "$MACB" \
		--dut-ip 192.0.2.1 --peer-ip 192.0.2.2 \
		--prog "$VROCE_BIN/stall_test"
	case $RESULT in
	"RESULT ok "*) ktap_test_pass "${RESULT#RESULT ok }" ;;
	"RESULT fail "*) ktap_test_fail "${RESULT#RESULT fail }" ;;
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
# Python starts while the first topology is set up.
server_start
ktap_set_plan $((${#CASES[@]} + 1))
for c in "${CASES[@]}"; do
	# shellcheck disable=SC2086 # "kind action"
	one_case $c
done
check "rmmod vroce after the stalled peers" vroce_unload
ktap_finished
