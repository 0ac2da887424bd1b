#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The RC data path end to end, in two topologies and with IPv4 and IPv6
# RoCE v2 GIDs, and rc_test's transfers over RoCE v1 in loopback:
#
#   veth:  [ns rca-*: rca over va] ==veth== [ns rcb-*: rcb over vb]
#   loop:  [ns rcl-*: rcl over la] (la's veth peer lb is up, unused):
#          both ends on one device
#
# In each: rc_test (byte-exact data for every opcode, error paths; its
# results are re-emitted here, one line per case), ibv_rc_pingpong,
# ibv_srq_pingpong and perftest (write/read/send/atomic bw, write/read/send
# lat) with sizes crossing MTU boundaries and with several QPs. perftest
# results are checked for a zero exit status and a parsed, non-zero number,
# never for speed. Every program runs under timeout(1).
#
# RDMA_TEST_DRIVER=rxe runs the same cases against rdma_rxe instead (only
# in the initial namespace and only in loopback: rxe supports nothing
# else), to tell a test bug from a driver bug.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DRIVER=${RDMA_TEST_DRIVER:-vroce}
# A hang guard per program, far above what the slowest kernel needs.
# shellcheck disable=SC2034 # run_pair's (lib.sh), like EXEC_* and SRV_PID
TMO=${RC_TIMEOUT:-180}
ITERS=5
# perftest latency needs more samples than that to report a number.
LAT_ITERS=20
TOOLS=(ip rdma ss timeout ibv_rc_pingpong ibv_srq_pingpong ib_write_bw
       ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat
       ib_send_lat)

# The current topology: devices, GID indices, namespaces, the server's
# address for the out-of-band TCP connection.
DEV_A=
DEV_B=
GID_A=
GID_B=
SERVER_IP=
EXEC_A=() EXEC_B=()
PORT=19000
# shellcheck disable=SC2034 # run_pair's
SRV_PID=

if [ "$DRIVER" = rxe ]; then
	[ "$(id -u)" = 0 ] || vroce_skip_all "must run as root"
	for t in "${TOOLS[@]}"; do
		command -v "$t" >/dev/null || vroce_skip_all "$t not installed"
	done
else
	vroce_require "${TOOLS[@]}"
fi

cleanup() {
	bg_stop SRV_PID
	rdma link delete rca 2>/dev/null
	rdma link delete rcb 2>/dev/null
	rdma link delete rcl 2>/dev/null
	if [ "$DRIVER" = rxe ]; then
		rdma link delete rxe_rc 2>/dev/null
		ip link del rxa 2>/dev/null
		modprobe -r rdma_rxe 2>/dev/null
	else
		vroce_unload
	fi
	vroce_cleanup
}
trap cleanup EXIT

setup_veth() {
	vroce_veth_ns rca rcb v6 && vroce_ns_devs rca rcb v4 v6 || return 1
	DEV_A=rca DEV_B=rcb SERVER_IP=192.0.2.2
}

setup_loop() {
	local ns="" dev=rcl nd=la

	if [ "$DRIVER" = rxe ]; then
		# rdma_rxe only works in the initial namespace.
		dev=rxe_rc nd=rxa
		vroce_unload && modprobe rdma_rxe &&
			ip link add rxa type veth peer name rxb || return 1
		EXEC_A=() EXEC_B=()
	else
		ns=$(ns_add rcl) && vroce_load &&
			ip -n "$ns" link add la type veth peer name lb || return 1
		# shellcheck disable=SC2034 # run_pair's
		EXEC_A=(ip netns exec "$ns") EXEC_B=(ip netns exec "$ns")
	fi
	"${EXEC_A[@]}" ip addr add 192.0.2.1/24 dev "$nd" &&
		"${EXEC_A[@]}" ip addr add 2001:db8::1/64 dev "$nd" nodad &&
		"${EXEC_A[@]}" ip link set "$nd" up &&
		"${EXEC_A[@]}" ip link set "${nd%a}b" up &&
		"${EXEC_A[@]}" rdma link add "$dev" type "$DRIVER" netdev "$nd" &&
		wait_for 10 vroce_gids_ready "$dev" v4 v6 || return 1
	DEV_A=$dev DEV_B=$dev SERVER_IP=192.0.2.1
}

# use_family 4|6: pick both ends' GIDs.
use_family() {
	GID_A=$(vroce_gid "$DEV_A" "v$1") &&
		GID_B=$(vroce_gid "$DEV_B" "v$1")
}

# pair TOOL ARGS...: TOOL as a server on DEV_B (with ARGS) and as a client on
# DEV_A connecting to it (run_pair).
pair() {
	local tool=$1 gidopt=-x port=$((PORT++))

	shift
	case $tool in ibv_*) gidopt=-g ;; esac
	run_pair tcp_listening "$port" \
		"$tool" -d "$DEV_B" "$gidopt" "$GID_B" -p "$port" "$@" -- \
		"$tool" -d "$DEV_A" "$gidopt" "$GID_A" -p "$port" "$@" "$SERVER_IP"
}

pingpong() {
	pair "$@" || return 1
	grep -q "bytes in .* seconds" "$VROCE_LOG.cli" || {
		cat "$VROCE_LOG.cli"
		return 1
	}
}

# stream OP MIB: vroce_rc_stream between the topology's two devices (or
# within the loop's one). In loopback on two CPUs, a doorbell's 64 KiB
# frames are received on the other CPU while the requester runs up to its
# loopback window ahead (task.c, VROCE_REQ_WINDOW_LOOP).
stream() {
	vroce_rc_stream "$DEV_A" "$DEV_B" "$GID_A" "$GID_B" "$@"
}

# perf SIZE COLUMN TOOL ARGS...: perftest's result row for SIZE bytes has
# at least the iterations asked for (-q multiplies them) and a number > 0 in COLUMN (bw: 5 =
# MsgRate, as a few small messages round the MB/s columns to 0.00; lat: 5
# = t_typical, in cycles (-C)). perftest converts bw from cycles with a
# clock it calibrates at start; under TCG on a loaded host that can fail
# ("Correlation coefficient r^2 ... < 0.9") and print 0, and on a slow
# kernel a few large messages round to 0: the bw is then not checked.
perf() {
	local size=$1 col=$2 iters=$ITERS lat=() row

	shift 2
	case $1 in *_lat) iters=$LAT_ITERS lat=(-C) ;; esac
	pair "$@" "${lat[@]}" -F -n "$iters" || return 1
	row=$(awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/ { print; exit }' \
		"$VROCE_LOG.cli")
	if ! awk -v c="$col" -v n="$iters" '{ exit !($2 >= n && NF >= c) }' \
	     <<<"$row"; then
		echo "no result row for $size bytes, $iters iterations:"
		cat "$VROCE_LOG.cli"
		return 1
	fi
	awk -v c="$col" '{ exit !($c + 0 > 0) }' <<<"$row" && return 0
	if [ ${#lat[@]} = 0 ] && grep -q "Correlation coefficient" "$VROCE_LOG.cli"; then
		echo "# perftest's clock calibration failed: bw not checked"
		return 0
	fi
	# A few messages taking seconds print as 0.000000 Mpps.
	if [ ${#lat[@]} = 0 ] && [ -n "$SLOW" ]; then
		echo "# rate rounds to 0 on a slow kernel: not checked"
		return 0
	fi
	echo "result column $col for $size bytes is not > 0:"
	cat "$VROCE_LOG.cli"
	return 1
}

# The rc_test cases, re-emitted as ours with a prefix.
RC_TEST_CASES=$(env -u VROCE_DEV "$VROCE_BIN/rc_test" 2>/dev/null | sed -n 's/^1\.\.//p')
# Their names, in order ("ok N NAME # SKIP ..." without a device).
mapfile -t RC_TEST_NAMES < <(vroce_case_names "$VROCE_BIN/rc_test")
# Its transfers (every opcode, size and SGE layout): the RoCE v1 run.
RC_V1_ARGS=(-f xfer)
RC_V1_CASES=$(env -u VROCE_DEV "$VROCE_BIN/rc_test" "${RC_V1_ARGS[@]}" 2>/dev/null |
	      sed -n 's/^1\.\.//p')

# rc_test_run PREFIX [ARG...]: rc_test (with ARGs) on DEV_A/GID_A and
# DEV_B/GID_B.
rc_test_run() {
	local prefix=$1 line name

	shift
	# Streamed (the debug kernel is slow: show progress), and kept.
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*)
			name=${line#ok * }
			ktap_test_skip "$prefix ${name%% # SKIP*}"
			;;
		"ok "*)
			ktap_test_pass "$prefix ${line#ok * }"
			;;
		"not ok "*)
			ktap_test_fail "$prefix ${line#not ok * }"
			;;
		"TAP version"* | "1.."*) ;;
		*) echo "# $line" ;;
		esac
	done < <(VROCE_DEV=$DEV_A VROCE_PEER_DEV=$DEV_B VROCE_GID=$GID_A \
		 VROCE_PEER_GID=$GID_B timeout 1800 "$VROCE_BIN/rc_test" "$@" 2>&1 |
		 tee "$VROCE_LOG.rct")
	# The devices' counters, to tell what the transport saw.
	if grep -q "^not ok" "$VROCE_LOG.rct"; then
		rdma statistic show link "$DEV_A/1" | sed 's/^/# /'
		[ "$DEV_B" = "$DEV_A" ] ||
			rdma statistic show link "$DEV_B/1" | sed 's/^/# /'
	fi
}

# By default (TURNS) each rc_test case and each program runs once, in one
# of the configurations, which take turns by the case's index: every case
# and every configuration runs, and the whole costs what one configuration
# would. RoCE v1's turn takes only rc_test's transfers (xfer). A debug
# kernel (KASAN, lockdep, kmemleak; or KCSAN) is several times slower, and
# the ACK timeouts there make go-back-N retransmit a lot (SLOW): there
# rc_test runs quick sizes and the programs a short list. The other
# kernels but 6.12 (LEAN), where only ib_core and the kernel APIs differ,
# run a short list too. RC_FULL=1 runs everything everywhere, and rdma_rxe
# (which has no veth topology) runs its loopback whole.
TURNS=
SLOW=
LEAN=
if [ -z "${RC_FULL:-}" ] && vroce_debug_kernel; then
	TURNS=1 SLOW=1
	export VROCE_RC_QUICK=1
elif [ -z "${RC_FULL:-}" ] && [ "$DRIVER" = vroce ]; then
	TURNS=1
	! vroce_lean_kernel || LEAN=1
fi

# cases 4|6: the cases run in each topology for that GID family, as
# "DESC|COMMAND...". A perftest run costs seconds of fixed overhead on TCG,
# so by default every tool runs with sizes across MTU boundaries, and
# rc_stream's three operations, each once (TURNS; the same list for both
# families); RC_FULL=1 runs every size of every tool in each
# configuration; a slow or lean kernel runs a few. Without turns (rdma_rxe)
# IPv4 runs the default list and IPv6 a short one.
cases() {
	local s bw=() lat=() q=() atomic=(FETCH_AND_ADD) stream=()

	if [ -n "${RC_FULL:-}" ]; then
		bw=(1 1023 1025 4096 65536 1048576) lat=(1 1025 65536) q=(65536)
		atomic=(FETCH_AND_ADD CMP_AND_SWAP) stream=(write read send)
	elif [ -n "$SLOW$LEAN" ]; then
		bw=(65536)
		[ -z "$LEAN" ] || q=(65536) lat=(1025)
	elif [ -n "$TURNS" ]; then
		bw=(1 1025 65536 1048576) lat=(1025) q=(65536)
		atomic=(FETCH_AND_ADD CMP_AND_SWAP) stream=(write read send)
	elif [ "$1" = 4 ]; then
		bw=(1 1025 65536) lat=(1025) q=(65536) stream=(write read send)
	else
		bw=(1048576) atomic=(CMP_AND_SWAP)
	fi
	echo "ibv_rc_pingpong|pingpong ibv_rc_pingpong -n 5 -s 5000 -c"
	echo "ibv_srq_pingpong|pingpong ibv_srq_pingpong -n 5 -s 5000 -q 4"
	for s in "${bw[@]}"; do
		echo "ib_write_bw -s $s|perf $s 5 ib_write_bw -s $s"
		echo "ib_read_bw -s $s|perf $s 5 ib_read_bw -s $s"
		echo "ib_send_bw -s $s|perf $s 5 ib_send_bw -s $s"
	done
	for s in "${q[@]}"; do
		echo "ib_write_bw -q 4 -s $s|perf $s 5 ib_write_bw -s $s -q 4"
		echo "ib_read_bw -q 4 -s $s|perf $s 5 ib_read_bw -s $s -q 4"
		echo "ib_send_bw -q 4 -s $s|perf $s 5 ib_send_bw -s $s -q 4"
	done
	for s in "${atomic[@]}"; do
		echo "ib_atomic_bw $s|perf 8 5 ib_atomic_bw -A $s"
	done
	for s in "${stream[@]}"; do
		echo "rc_stream $s 16 MiB, every byte checked|stream $s 16"
	done
	for s in "${lat[@]}"; do
		echo "ib_write_lat -s $s|perf $s 5 ib_write_lat -s $s"
		echo "ib_read_lat -s $s|perf $s 5 ib_read_lat -s $s"
		echo "ib_send_lat -s $s|perf $s 5 ib_send_lat -s $s"
	done
}

TOPOS=(veth loop)
FAMILIES=(4 6)
mapfile -t CASES4 < <(cases 4)
mapfile -t CASES6 < <(cases 6)
N_CASES=$(((${#CASES4[@]} + ${#CASES6[@]}) * ${#TOPOS[@]}))

# The configurations in order ("TOPOLOGY ipvN", then "loop roce-v1"), and
# with TURNS each rc_test case's turn (TURN[i], an index in CONFIGS):
# the i-th case runs in configuration i mod 5, or i mod 4 if that is RoCE
# v1's and the case is not a transfer.
CONFIGS=("veth ipv4" "veth ipv6" "loop ipv4" "loop ipv6" "loop roce-v1")
TURN=()
for ((i = 0; i < ${#RC_TEST_NAMES[@]}; i++)); do
	t=$((i % 5))
	[ "$t" != 4 ] || [[ ${RC_TEST_NAMES[i]} = xfer.* ]] || t=$((i % 4))
	TURN+=("$t")
done

ktap_print_header
if [ -z "$RC_TEST_CASES" ] || [ -z "$RC_V1_CASES" ] ||
   [ "${#RC_TEST_NAMES[@]}" != "$RC_TEST_CASES" ]; then
	ktap_exit_fail_msg "cannot list rc_test's cases"
fi
if [ -n "$TURNS" ]; then
	# Every rc_test case and every program once (the lists of both
	# families are the same there).
	ktap_set_plan $((RC_TEST_CASES + ${#CASES4[@]}))
else
	ktap_set_plan $((RC_TEST_CASES * ${#TOPOS[@]} * ${#FAMILIES[@]} +
			N_CASES + RC_V1_CASES))
fi

# turn_args CONFIG: rc_test's arguments that select the cases whose turn
# CONFIG (an index in CONFIGS) is.
turn_args() {
	local i

	for ((i = 0; i < ${#RC_TEST_NAMES[@]}; i++)); do
		[ "${TURN[i]}" != "$1" ] || echo "-r ${RC_TEST_NAMES[i]}"
	done
}

# config_index PREFIX: its index in CONFIGS.
config_index() {
	local i

	for ((i = 0; i < ${#CONFIGS[@]}; i++)); do
		[ "${CONFIGS[i]}" != "$1" ] || { echo "$i"; return; }
	done
}

# skip_rc_test PREFIX REASON, skip_cases PREFIX REASON: one topology and
# family's rc_test cases, or its other cases.
skip_rc_test() {
	local i

	for ((i = 0; i < ${3:-$RC_TEST_CASES}; i++)); do
		ktap_test_skip "$1 rc_test case $i: $2"
	done
}

skip_cases() {
	local c

	for c in "${CASES[@]}"; do
		ktap_test_skip "$1 ${c%%|*}: $2"
	done
}

# skip_config PREFIX REASON: all of a configuration's cases (with TURNS,
# those whose turn it is) skipped.
skip_config() {
	local i ci

	if [ -z "$TURNS" ]; then
		if [ "$1" = "loop roce-v1" ]; then
			skip_rc_test "$1" "$2" "$RC_V1_CASES"
		else
			skip_rc_test "$1" "$2"
			skip_cases "$1" "$2"
		fi
		return
	fi
	ci=$(config_index "$1")
	for ((i = 0; i < ${#RC_TEST_NAMES[@]}; i++)); do
		[ "${TURN[i]}" != "$ci" ] ||
			ktap_test_skip "rc_test $1 ${RC_TEST_NAMES[i]}: $2"
	done
	[ "$ci" -lt 4 ] || return 0
	for ((i = ci; i < ${#CASES[@]}; i += 4)); do
		ktap_test_skip "$1 ${CASES[i]%%|*}: $2"
	done
}

# run_turn PREFIX: with TURNS, the rc_test cases and the programs
# whose turn the current topology and family is.
run_turn() {
	local prefix=$1 ci j first args t1

	ci=$(config_index "$prefix")
	mapfile -t args < <(turn_args "$ci")
	# shellcheck disable=SC2068 # "-r NAME" pairs
	[ ${#args[@]} = 0 ] || rc_test_run "rc_test $prefix" ${args[@]}
	t1=$SECONDS
	# The programs take turns among the four RoCE v2 configurations.
	first=$ci
	[ "$ci" -lt 4 ] || first=${#CASES[@]}
	for ((j = first; j < ${#CASES[@]}; j += 4)); do
		# shellcheck disable=SC2086 # the command is a word list
		check "$prefix ${CASES[j]%%|*}" ${CASES[j]#*|}
	done
	ktap_print_msg "$prefix: its turn: ${#args[@]} rc_test cases, programs $((SECONDS - t1)) s"
}

# run_config PREFIX: rc_test and CASES in the current topology and family.
run_config() {
	local prefix=$1 t0=$SECONDS t1 c

	ktap_print_msg "$prefix: $DEV_A GID $GID_A <-> $DEV_B GID $GID_B"
	if [ -n "$TURNS" ]; then
		run_turn "$prefix"
		return
	fi
	rc_test_run "rc_test $prefix"
	t1=$SECONDS
	for c in "${CASES[@]}"; do
		# shellcheck disable=SC2086 # the command is a word list
		check "$prefix ${c%%|*}" ${c#*|}
		[ -z "${RC_VERBOSE:-}" ] || ktap_print_msg "$((SECONDS - t1)) s"
	done
	ktap_print_msg "$prefix: rc_test $((t1 - t0)) s, the rest $((SECONDS - t1)) s"
}

for topo in "${TOPOS[@]}"; do
	ok=1
	if [ "$DRIVER" = rxe ] && [ "$topo" = veth ]; then
		ok=0 why="rdma_rxe cannot connect two devices of one host"
	elif ! "setup_$topo" >"$VROCE_LOG" 2>&1; then
		sed 's/^/# /' "$VROCE_LOG"
		ok=0 why="cannot set up the $topo topology"
	fi
	for fam in "${FAMILIES[@]}"; do
		prefix="$topo ipv$fam"
		if [ "$ok" = 1 ] && ! use_family "$fam"; then
			ok=0 why="no RoCE v2 IPv$fam GID"
		fi
		CASES=("${CASES4[@]}")
		[ "$fam" = 4 ] || CASES=("${CASES6[@]}")
		if [ "$ok" = 0 ]; then
			skip_config "$prefix" "$why"
			continue
		fi
		run_config "$prefix"
	done
	[ "$topo" != loop ] || loop_ok=$ok
done

# RoCE v1 in loopback (the loop topology is still up): rc_test's
# transfers, whose 64 KiB frames have a GRH payload length of 0 (too long
# for the field). Not on rdma_rxe (no RoCE v1).
prefix="loop roce-v1"
if [ "$DRIVER" = rxe ]; then
	skip_config "$prefix" "rdma_rxe has no RoCE v1"
elif [ "${loop_ok:-0}" != 1 ] || ! GID_A=$(vroce_gid "$DEV_A" v1); then
	skip_config "$prefix" "no loop topology or RoCE v1 GID"
elif [ -n "$TURNS" ]; then
	GID_B=$GID_A
	ktap_print_msg "$prefix: $DEV_A GID $GID_A"
	run_turn "$prefix"
else
	GID_B=$GID_A
	ktap_print_msg "$prefix: $DEV_A GID $GID_A"
	rc_test_run "rc_test $prefix" "${RC_V1_ARGS[@]}"
fi
ktap_finished
