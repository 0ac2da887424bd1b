#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Teardown under load: everything a user or an administrator can remove
# while RC traffic runs in both directions, alone and in combination.
#
#   [ns tda-*: tda over ta, ta.100] ==veth== [ns tdb-*: tdb over tb, tb.100]
#
# Two rc_stream processes (in init_net: in shared mode every namespace
# sees both devices) move verified data: a WRITE stream from tda to tdb
# over the veth's addresses, and a SEND stream from tdb to tda over the
# VLAN uppers' addresses. Once both devices receive data, a round
# starts its operations at once, each after its own random pause:
#
#   L  rdma link delete tda
#   N  ip link del ta (the veth pair: both devices lose their netdev)
#   V  ip link del ta.100 (the VLAN upper that the SEND stream's GID is on)
#   S  ip netns del of tda's namespace
#   K  SIGKILL of both applications
#   M  rmmod vroce as soon as nothing holds it: right after the
#      applications are gone, with every device and namespace still there
#
# Rounds 0-5 run each operation alone; later rounds a random set of two to
# four of L, N, V, S, K, and M with probability 1/2. With fewer than six
# rounds, round r runs the operations r, r + rounds, ...: every one runs. Each operation must end
# within 5 s of wall time (20 s on the debug kernels, several times
# slower), and so must the applications once killed (those not killed
# by K are killed after the operations: a device removed under a process
# leaves it polling rings that no longer move). No process may stay in D
# state. Then whatever is left is deleted, vroce unloads within that bound, and
# no device, netdev or namespace of the round remains. At the end the
# kernel must not have warned, and the unreclaimable slab is compared with
# its value before the first round (printed; the VM runner's kmemleak scan
# is what finds a leak).
#
# TEARDOWN_ROUNDS sets the number of rounds (default 6, 3 on the
# debug kernels; make soak runs more), TEARDOWN_SEED the random seed
# (printed).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma
renice -n -5 -p $$ >/dev/null 2>&1

ROUNDS=${TEARDOWN_ROUNDS:-6}
vroce_debug_kernel && [ -z "${TEARDOWN_ROUNDS:-}" ] && ROUNDS=3
SEED=${TEARDOWN_SEED:-$((RANDOM * 32768 + RANDOM))}
# The bound on each step; the debug kernels run several times slower.
STEP_S=5
vroce_debug_kernel && STEP_S=20
OPS=(L N V S K M)
NSA=
NSB=
APPS=()
OP_PIDS=()
OP_MS=
T_OPS=0

cleanup() {
	local p

	for p in "${APPS[@]}" "${OP_PIDS[@]#*:}"; do
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rdma link delete tda 2>/dev/null
	rdma link delete tdb 2>/dev/null
	vroce_unload
	rm -f "$VROCE_LOG".*
	vroce_cleanup
}
trap cleanup EXIT

# setup: the two namespaces, the veth pair with a VLAN upper on each end,
# vroce over both ends, and the GIDs of both address pairs. One ip batch
# per namespace: each ip command costs a tenth of a second in a TCG guest.
setup() {
	NSA=tda-$$
	NSB=tdb-$$
	VROCE_NETNS+=("$NSA" "$NSB")
	vroce_load && ip -batch - <<-EOF || return 1
		netns add $NSA
		netns add $NSB
		link add ta netns $NSA type veth peer name tb netns $NSB
	EOF
	end_setup "$NSA" ta 1 && end_setup "$NSB" tb 2 &&
		ip netns exec "$NSA" rdma link add tda type vroce netdev ta &&
		ip netns exec "$NSB" rdma link add tdb type vroce netdev tb &&
		wait_for 10 gid_of GID_A tda ta 192.0.2.1 &&
		wait_for 10 gid_of GID_B tdb tb 192.0.2.2 &&
		wait_for 10 gid_of GID_A100 tda ta.100 198.51.100.1 &&
		wait_for 10 gid_of GID_B100 tdb tb.100 198.51.100.2
}

# gid_of VAR DEV NDEV ADDR: VAR is the index of DEV's RoCE v2 GID of the
# IPv4 address ADDR on NDEV (vroce_gid's, found with builtins only: it
# runs in poll loops).
gid_of() {
	local port=/sys/class/infiniband/$2/ports/1 want g i o1 o2 o3 o4

	IFS=. read -r o1 o2 o3 o4 <<<"$4"
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		"$o1" "$o2" "$o3" "$o4" || return 1
	for ((i = 0; i < 128; i++)); do
		read -r g 2>/dev/null <"$port/gids/$i" || continue
		[ "$g" = "$want" ] || continue
		read -r g 2>/dev/null <"$port/gid_attrs/types/$i" || continue
		[ "$g" = "RoCE v2" ] || continue
		read -r g 2>/dev/null <"$port/gid_attrs/ndevs/$i" || continue
		[ "$g" = "$3" ] || continue
		printf -v "$1" %d "$i"
		return 0
	done
	return 1
}

# end_setup NS NDEV N: NDEV's VLAN upper NDEV.100, the addresses .N of
# both, all up.
end_setup() {
	ip -n "$1" -batch - <<-EOF
		link add link $2 name $2.100 type vlan id 100
		addr add 192.0.2.$3/24 dev $2
		addr add 198.51.100.$3/24 dev $2.100
		link set $2 up
		link set $2.100 up
	EOF
}

# app DEV PEER GID PEER_GID OP: an rc_stream that runs until killed.
app() {
	VROCE_DEV=$1 VROCE_PEER_DEV=$2 VROCE_GID=$3 VROCE_PEER_GID=$4 \
		nice -n 5 "$VROCE_BIN/rc_stream" "$5" 1048576 \
		>>"$VROCE_LOG.apps" 2>&1 &
	APPS+=($!)
}

# received DEV BYTES: DEV's rcvd_bytes counter is above BYTES.
received() {
	local v

	read -r v <"/sys/class/infiniband/$1/ports/1/hw_counters/rcvd_bytes" &&
		((v > $2))
}

# traffic: both streams run and both devices receive their data, over the
# GIDs that setup found.
traffic() {
	local a b c=ports/1/hw_counters/rcvd_bytes

	read -r a <"/sys/class/infiniband/tda/$c" &&
		read -r b <"/sys/class/infiniband/tdb/$c" || return 1
	: >"$VROCE_LOG.apps"
	app tda tdb "$GID_A" "$GID_B" write
	app tdb tda "$GID_B100" "$GID_A100" send
	# A MiB each way, the streams' set-up included.
	if ! wait_for 20 received tda $((a + (1 << 20))) ||
	   ! wait_for 20 received tdb $((b + (1 << 20))); then
		echo "the streams do not move data:"
		echo "$(<"$VROCE_LOG.apps")"
		return 1
	fi
	if ! kill -0 "${APPS[@]}"; then
		echo "a stream ended before any teardown:"
		echo "$(<"$VROCE_LOG.apps")"
		return 1
	fi
}

# op_cmd OP: run operation OP (M is not one: it needs the apps gone).
op_cmd() {
	case $1 in
	L) rdma link delete tda ;;
	N) ip -n "$NSA" link del ta ;;
	V) ip -n "$NSA" link del ta.100 ;;
	S) ip netns del "$NSA" ;;
	K) kill -9 "${APPS[@]}" ;;
	esac
}

# gone_within PID SECONDS WHAT [START_MS]: PID (a child) exits within
# SECONDS of wall time from START_MS (default: now; a poll loop runs slower
# than its naps on a debug kernel); else says what it does in the kernel.
# The loop starts no process: on the debug kernel one per poll kept a vCPU
# busy that the processes being waited for needed.
gone_within() {
	local end us

	now_ms end
	end=$((${4:-$end} + $2 * 1000))
	while ! vroce_exited "$1"; do
		us=${EPOCHREALTIME//[.,]/}
		if ((us / 1000 > end)); then
			echo "$3 (pid $1) still there after $2 s:"
			vroce_stuck_report "$1"
			return 1
		fi
		nap 0.05
	done
	wait "$1" 2>/dev/null
	return 0
}

# run_ops OPS: start each of OPS (a string of letters) after its own random
# pause of up to 0.3 s, and wait for each, bounded. The streams go to nice
# 19 first: they busy-poll their CQs, and at the shell's priority they
# left the shell that starts and times the operations waiting for a CPU
# for seconds (11 s on the debug kernel), time that counted against the
# operations' bound. (From the start they would move their first MiB too
# slowly on the debug kernel.) The shell runs at nice -5 and starts them
# at 0 (app), so that the renice itself gets a CPU: at the streams'
# priority it waited up to 87 s for one on the debug kernel.
run_ops() {
	local ops=$1 i op pause t rc=0

	renice -n 19 -p "${APPS[@]}" >/dev/null 2>&1

	OP_PIDS=()
	OP_MS=
	now_ms T_OPS
	for ((i = 0; i < ${#ops}; i++)); do
		op=${ops:i:1}
		[ "$op" = M ] && continue
		# Drawn here: a subshell draws from a sequence of its own.
		pause=0.$((RANDOM % 4))$((RANDOM % 10))
		{
			nap "$pause"
			op_cmd "$op" 2>/dev/null
		} &
		OP_PIDS+=("$op:$!")
	done
	for op in "${OP_PIDS[@]}"; do
		gone_within "${op#*:}" "$STEP_S" "operation ${op%%:*}" \
			"$T_OPS" || rc=1
		now_ms t
		OP_MS+="${op%%:*} $((t - T_OPS)) "
	done
	OP_PIDS=()
	return $rc
}

# apps_gone: SIGKILL whatever application is left; all go within STEP_S.
apps_gone() {
	local p rc=0

	kill -9 "${APPS[@]}" 2>/dev/null
	for p in "${APPS[@]}"; do
		gone_within "$p" "$STEP_S" "rc_stream" || rc=1
	done
	APPS=()
	return $rc
}

# bounded DESC CMD...: CMD ends within STEP_S.
bounded() {
	local desc=$1 pid

	shift
	"$@" >/dev/null 2>&1 &
	pid=$!
	gone_within "$pid" "$STEP_S" "$desc" || return 1
}

# nothing_left: no RDMA device (shared mode: sysfs in init_net shows every
# namespace's), and neither namespace ("ip netns list" lists /run/netns).
nothing_left() {
	local d

	for d in /sys/class/infiniband/*; do
		[ -e "$d" ] && return 1
	done
	[ ! -e "/run/netns/$NSA" ] && [ ! -e "/run/netns/$NSB" ]
}

# teardown OPS: what is left after the round's operations goes; M unloads
# the module first, with whatever the operations left in place.
teardown() {
	if [[ $1 == *M* ]]; then
		bounded "rmmod vroce (devices still there)" rmmod vroce ||
			return 1
		if vroce_loaded; then
			echo "rmmod vroce failed with the devices still there"
			return 1
		fi
	fi
	# Those that are still there (the operations may have deleted them).
	[ ! -e /sys/class/infiniband/tda ] ||
		bounded "rdma link delete tda" rdma link delete tda
	[ ! -e /sys/class/infiniband/tdb ] ||
		bounded "rdma link delete tdb" rdma link delete tdb
	ns_del_all
	bounded "rmmod vroce" vroce_unload || return 1
	if vroce_loaded; then
		echo "vroce did not unload:"
		lsmod | grep vroce
		return 1
	fi
	if ! wait_for "$STEP_S" nothing_left; then
		echo "left behind:"
		rdma link show
		ip netns list
		return 1
	fi
}

# pick N: ROUND_OPS, the operations of round N (a global: RANDOM drawn in
# a command substitution would not advance here).
pick() {
	local i k

	if ((ROUNDS < ${#OPS[@]})); then
		ROUND_OPS=
		for ((i = $1; i < ${#OPS[@]}; i += ROUNDS)); do
			ROUND_OPS+=${OPS[i]}
		done
		return
	fi
	if (($1 < ${#OPS[@]})); then
		ROUND_OPS=${OPS[$1]}
		return
	fi
	ROUND_OPS=
	k=$((2 + RANDOM % 3))
	while ((${#ROUND_OPS} < k)); do
		i=$((RANDOM % 5))
		[[ $ROUND_OPS == *"${OPS[i]}"* ]] || ROUND_OPS+=${OPS[i]}
	done
	((RANDOM % 2)) && ROUND_OPS+=M
}

# round OPS: one round with the operations OPS; its last line gives the
# time of each phase (figures, never asserted).
round() {
	local t0 t1 t2 t3 t4 t5

	now_ms t0
	setup || { echo "set-up failed"; return 1; }
	now_ms t1
	traffic || return 1
	now_ms t2
	run_ops "$1" || return 1
	now_ms t3
	apps_gone || return 1
	now_ms t4
	teardown "$1" || return 1
	now_ms t5
	echo "ms: set-up $((t1 - t0)), traffic $((t2 - t1)), operations" \
		"$((t3 - t2)) (each done at: ${OP_MS% }), applications gone" \
		"$((t4 - t3)), rest removed and unloaded $((t5 - t4))"
}

# reset: after a failed round, what cleanup does, but the script goes on.
reset() {
	kill -9 "${APPS[@]}" 2>/dev/null
	APPS=()
	wait 2>/dev/null
	rdma link delete tda 2>/dev/null
	rdma link delete tdb 2>/dev/null
	ns_del_all
	wait_for 30 vroce_unload
}

# now_ms VAR: VAR is the wall time in ms (no command substitution: a
# process each on the debug kernel).
now_ms() {
	local us=${EPOCHREALTIME//[.,]/}

	printf -v "$1" %d $((us / 1000))
}

# unreclaimable_kb VAR: VAR is SUnreclaim of /proc/meminfo.
unreclaimable_kb() {
	local k v

	while read -r k v _; do
		[ "$k" = SUnreclaim: ] || continue
		printf -v "$1" %s "$v"
		return
	done </proc/meminfo
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
vroce_unload
ktap_set_plan $((ROUNDS + 1))
ktap_print_msg "TEARDOWN_SEED=$SEED"
RANDOM=$SEED
dmesg_mark teardown
read -r TAINT </proc/sys/kernel/tainted
unreclaimable_kb SLAB0
for ((r = 0; r < ROUNDS; r++)); do
	pick "$r"
	name="round $r under load: $ROUND_OPS"
	if round "$ROUND_OPS" >"$VROCE_LOG" 2>&1; then
		mapfile -t lines <"$VROCE_LOG"
		ktap_print_msg "${lines[-1]}"
		ktap_test_pass "$name"
	else
		sed 's/^/# /' "$VROCE_LOG"
		ktap_test_fail "$name"
		reset
	fi
done
unreclaimable_kb SLAB1
ktap_print_msg "unreclaimable slab: $SLAB0 kB before, $SLAB1 kB after"
check "no kernel warning during the rounds" vroce_no_kernel_report teardown "$TAINT" log
ktap_finished
