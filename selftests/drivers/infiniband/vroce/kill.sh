#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# perftest killed at random points must leave nothing stuck:
#
#   [ns kla-*: nka over va] ==veth== [ns klb-*: nkb over vb]
#
# Each round runs one of ib_write_bw, ib_read_bw, ib_send_bw and
# ib_atomic_bw (-D 4: for four seconds) between nka and nkb, or on nka
# alone (loopback), and after a random delay (0 to 3 s: connecting or
# moving data) sends SIGKILL or SIGSEGV to the server or the
# client. The victim must be gone within 5 s; the survivor finishes or
# fails on its own, and is SIGKILLed if it has not after 15 s, and must be
# gone within 5 s too. No process may stay in D state (the kernel waiting
# on the dead peer). After the rounds the devices are deleted and the
# module unloads; the VM runner fails the run on any kernel report
# (kmemleak, lockdep, KASAN, hung task).
#
# KILL_ROUNDS (default 4) and KILL_SEED (default random, printed) set the
# rounds: round N uses tool N % 4, loopback when N + N / 4 is odd, the
# client as victim when N / 2 + N / 4 is odd, SIGSEGV when N + N / 2 is
# odd. 4 rounds run every tool, both topologies with each victim, and each
# victim with each signal; 8 run each tool once over the veth pair and
# once in loopback.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ss timeout ib_write_bw ib_read_bw ib_send_bw \
	ib_atomic_bw

TOOLS=(ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw)
ROUNDS=${KILL_ROUNDS:-4}
SEED=${KILL_SEED:-$((RANDOM * 32768 + RANDOM))}
GIDA=
GIDB=
PORT=18515
SRV=
CLI=

cleanup() {
	kill -9 "$SRV" "$CLI" 2>/dev/null
	vroce_ns_devs_cleanup
}
trap cleanup EXIT

setup() {
	vroce_veth_ns kla klb && vroce_ns_devs nka nkb || return 1
	GIDA=$(vroce_gid nka v4 va 192.0.2.1) &&
		GIDB=$(vroce_gid nkb v4 vb 192.0.2.2)
}

# State of process $1 from /proc ("" once it is gone).
proc_state() {
	awk '{print $3}' "/proc/$1/stat" 2>/dev/null
}

# gone_within PID SECONDS: the process exits (is reaped) within SECONDS of
# wall time (a loaded debug guest runs this loop far slower than its
# sleeps). On failure says what it is doing.
gone_within() {
	local pid=$1 end=$((SECONDS + $2))

	while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -le "$end" ]; do
		# Reap it if it is our child and a zombie.
		[ "$(proc_state "$pid")" = Z ] && { wait "$pid"; } 2>/dev/null
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null && [ "$(proc_state "$pid")" != Z ]; then
		echo "pid $pid still there, state $(proc_state "$pid"), in:"
		sed 's/^/  /' "/proc/$pid/stack" 2>/dev/null
		return 1
	fi
	{ wait "$pid"; } 2>/dev/null
	return 0
}

# round N: one kill; prints what happened, returns its verdict.
round() {
	local n=$1 tool=${TOOLS[$(($1 % 4))]} loop=$((($1 + $1 / 4) % 2))
	local victim=server sig=KILL port=$((PORT++)) delay
	local srv_ns=$NSB srv_dev=nkb srv_gid=$GIDB sip=192.0.2.2 args

	(((n / 2 + n / 4) % 2)) && victim=client
	(((n + n / 2) % 2)) && sig=SEGV
	if [ "$loop" = 1 ]; then
		srv_ns=$NSA srv_dev=nka srv_gid=$GIDA sip=192.0.2.1
	fi
	delay=$((RANDOM % 3000))
	delay=$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))
	args=(-F -D 4 -p "$port")
	[ "$tool" = ib_atomic_bw ] || args+=(-s 65536)
	echo "round $n: $tool, $([ "$loop" = 1 ] && echo loopback || echo veth)," \
		"SIG$sig to the $victim after $delay s"

	ip netns exec "$srv_ns" "$tool" -d "$srv_dev" -x "$srv_gid" \
		"${args[@]}" >"$VROCE_LOG.srv" 2>&1 &
	SRV=$!
	if ! wait_for 20 tcp_listening "$port" ip netns exec "$srv_ns"; then
		echo "server did not listen"
		cat "$VROCE_LOG.srv"
		return 1
	fi
	ip netns exec "$NSA" "$tool" -d nka -x "$GIDA" "${args[@]}" "$sip" \
		>"$VROCE_LOG.cli" 2>&1 &
	CLI=$!
	sleep "$delay"
	local vpid=$SRV spid=$CLI ok=0 t0=$SECONDS
	[ "$victim" = client ] && vpid=$CLI spid=$SRV
	kill -s "$sig" "$vpid" 2>/dev/null
	gone_within "$vpid" 5 || ok=1
	echo "the $victim was gone after $((SECONDS - t0)) s"
	# The survivor ends on its own (finished, or its peer's QP is gone).
	if ! gone_within "$spid" 15 >/dev/null; then
		echo "survivor still running after 15 s: SIGKILL"
		kill -9 "$spid" 2>/dev/null
		gone_within "$spid" 5 || ok=1
	fi
	echo "the survivor was gone after $((SECONDS - t0)) s"
	SRV=
	CLI=
	return $ok
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan $((ROUNDS + 2))
ktap_print_msg "KILL_SEED=$SEED"
RANDOM=$SEED
if ! setup >"$VROCE_LOG" 2>&1; then
	sed 's/^/# /' "$VROCE_LOG"
	ktap_test_fail "two namespaces, veth pair, a vroce device at each end"
	ktap_finished
	exit
fi
ktap_test_pass "two namespaces, veth pair, a vroce device at each end"
# Core dumps would go to the (read-only) working directory.
ulimit -c 0
for ((r = 0; r < ROUNDS; r++)); do
	t=$SECONDS
	ok=0
	round "$r" >"$VROCE_LOG.round" 2>&1 || ok=1
	# Not bash's notes of the jobs the round killed.
	tail -n +2 "$VROCE_LOG.round" | grep -v '^[^ ]*: line [0-9]*: *[0-9]* ' |
		sed 's/^/# /'
	if [ "$ok" = 0 ]; then
		ktap_test_pass "$(head -n 1 "$VROCE_LOG.round") ($((SECONDS - t)) s)"
	else
		ktap_test_fail "$(head -n 1 "$VROCE_LOG.round")"
	fi
done
check "the devices go and the module unloads after the kills" \
	sh -c "rdma link delete nkb && rdma link delete nka && rmmod vroce"
ktap_finished
