#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Address handles, UD, UC and the GSI QP (rdma_cm) end to end, between two
# namespaces joined by a veth pair, with a vroce device in each:
#
#   [ns uda-*: uda over va] ==veth== [ns udb-*: udb over vb]
#
# For RoCE v2 IPv4, RoCE v2 IPv6 and RoCE v1 GIDs: ud_test (AHs, UD and UC
# byte for byte, Q_Key rules, drops; its results are re-emitted here, one
# line per case), ibv_ud_pingpong, ibv_uc_pingpong, ib_send_bw/ib_send_lat
# -c UD and ib_write_bw -c UC. Then rdma_cm, which runs over the GSI QP
# (ib_cm's MADs): rping with data verification, ucmatose, udaddy, and
# perftest's write, read and send with -R, over IPv4 and IPv6 with RoCE v2,
# and over IPv4 with RoCE v1 (rdma_cm's default_roce_mode in configfs);
# mckey (rdma_cm multicast over UD) between the namespaces and within one
# device, over IPv4 (rdma_cm has no RoCE v2 multicast over IPv6).
# perftest results are checked for a zero exit status and a result row,
# never for speed. Every program runs under timeout(1).
#
# By default (TURNS) each case runs once, for one of the GID kinds:
# ud_test's cases take the three kinds in turn (ud_test_kind), the
# programs run for the kind their table gives (UD_FULL=1 runs every case
# for every kind).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# shellcheck disable=SC2034 # run_pair's (lib.sh), like SRV_PID
TMO=${UD_TIMEOUT:-180}
ITERS=5
TOOLS=(ip rdma ss timeout ibv_ud_pingpong ibv_uc_pingpong ib_send_bw
       ib_send_lat ib_write_bw ib_read_bw rping ucmatose udaddy mckey stdbuf
       rdma_server rdma_client)
vroce_require "${TOOLS[@]}"

GID_A=
GID_B=
SERVER_IP=192.0.2.2
CM_IP=
PORT=19500
# shellcheck disable=SC2034 # run_pair's
SRV_PID=

TURNS=1
[ -z "${UD_FULL:-}" ] || TURNS=

cleanup() {
	bg_stop SRV_PID
	rmdir /sys/kernel/config/rdma_cm/uda /sys/kernel/config/rdma_cm/udb \
		2>/dev/null
	vroce_ns_devs_cleanup
}
trap cleanup EXIT

setup() {
	vroce_veth_ns uda udb v6 && vroce_ns_devs uda udb v4 v6 v1
}

# use_gids KIND: both ends' GIDs, and the server's address for rdma_cm
# (the programs' own TCP connection always uses IPv4: their servers listen
# on the first address getaddrinfo() gives).
use_gids() {
	local kind=${1/v2-/v}

	GID_A=$(vroce_gid uda "$kind") &&
		GID_B=$(vroce_gid udb "$kind") || return 1
	CM_IP=192.0.2.2
	[ "$1" != v2-6 ] || CM_IP=2001:db8::2
}

# pingpong TOOL ARGS...: an ibv_*_pingpong pair over the current GIDs.
pingpong() {
	local tool=$1 port=$((PORT++))

	shift
	run_pair tcp_listening "$port" "$tool" -d udb -g "$GID_B" -p "$port" \
		"$@" -- "$tool" -d uda -g "$GID_A" -p "$port" "$@" \
		"$SERVER_IP" || return 1
	grep -q "bytes in .* seconds" "$VROCE_LOG.cli" || {
		cat "$VROCE_LOG.cli"
		return 1
	}
}

# perf SIZE TOOL ARGS...: a perftest pair (-R: connected by rdma_cm); its
# result row for SIZE bytes has at least the iterations asked for.
perf() {
	local size=$1 tool=$2 port=$((PORT++)) iters=$ITERS ready=tcp_listening
	local gid_a=(-x "$GID_A") gid_b=(-x "$GID_B") lat=() row ip=$SERVER_IP

	shift 2
	case $tool in *_lat) iters=20 lat=(-C) ;; esac
	# With -R, rdma_cm picks the GIDs from the addresses.
	case " $* " in
	*" -R "*) gid_a=() gid_b=() ready=cm_listening ip=$CM_IP ;;
	esac
	if ! run_pair "$ready" "$port" "$tool" -d udb "${gid_b[@]}" \
		-p "$port" -s "$size" -u 18 "$@" "${lat[@]}" -F -n "$iters" -- \
		"$tool" -d uda "${gid_a[@]}" -p "$port" -s "$size" -u 18 \
		"$@" "${lat[@]}" -F -n "$iters" "$ip"; then
		# Seen once on a busy host: the server's listener was in
		# "rdma res show cm_id", yet its rdma_cm answered the client's
		# request with a reject (reason 8, no listener) and perftest
		# gave up (cause not found). Once more, on a new port; a second
		# reject fails the case.
		[ "$ready" = cm_listening ] &&
			grep -qi "reject" "$VROCE_LOG.cli" || return 1
		echo "# rejected by the server, perftest -R once more"
		port=$((PORT++))
		run_pair "$ready" "$port" "$tool" -d udb "${gid_b[@]}" \
			-p "$port" -s "$size" -u 18 "$@" "${lat[@]}" -F \
			-n "$iters" -- "$tool" -d uda "${gid_a[@]}" -p "$port" \
			-s "$size" -u 18 "$@" "${lat[@]}" -F -n "$iters" "$ip" ||
			return 1
	fi
	row=$(awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/ { print; exit }' \
		"$VROCE_LOG.cli")
	if ! awk -v n="$iters" '{ exit !($2 >= n) }' <<<"$row"; then
		echo "no result row for $size bytes, $iters iterations:"
		cat "$VROCE_LOG.cli"
		return 1
	fi
}

rping_pair() {
	local port=$((PORT++))

	run_pair cm_listening "$port" rping -s -a "$CM_IP" -p "$port" \
		-V -C 5 -S 1000 -- \
		rping -c -a "$CM_IP" -p "$port" -V -C 5 -S 1000
}

# rdma_server/rdma_client: librdmacm's own example pair (rdma_getaddrinfo,
# rdma_create_ep, one inline SEND each way on an RC QP).
rdma_ex_pair() {
	local port=$((PORT++))

	run_pair cm_listening "$port" rdma_server -s "$CM_IP" -p "$port" -- \
		rdma_client -s "$CM_IP" -p "$port" || return 1
	grep -q "end 0" "$VROCE_LOG.srv" && grep -q "end 0" "$VROCE_LOG.cli"
}

ucmatose_pair() {
	local port=$((PORT++))

	run_pair cm_listening "$port" ucmatose -b "$CM_IP" -p "$port" -C 4 -S 1000 -- \
		ucmatose -s "$CM_IP" -p "$port" -C 4 -S 1000
}

# udaddy has no port option (its -p is the port space): 7174.
udaddy_pair() {
	run_pair cm_listening 7174 udaddy -b "$CM_IP" -C 4 -S 500 -- \
		udaddy -s "$CM_IP" -C 4 -S 500
}

mckey_receiving() {
	grep -q "receiving data transfers" "$VROCE_LOG.srv"
}

# mckey_why: where the datagrams of a failed mckey run went, by the
# counters of both devices (one line each).
mckey_why() {
	local d c line

	for d in uda udb; do
		line=$d:
		for c in sent_pkts send_err rcvd_pkts rcvd_no_qp rcvd_qkey_err \
			 rcvd_malformed out_of_buffer; do
			line+=" $c=$(hw_counter "$d" "$c")"
		done
		echo "$line"
	done
}

# mckey: a receiver in udb's namespace, then a sender in uda's; the
# receiver exits 0 once it got every message.
mckey_pair() {
	run_pair mckey_receiving - stdbuf -oL mckey -m 239.1.2.5 -b 192.0.2.2 -C 4 -- \
		mckey -m 239.1.2.5 -b 192.0.2.1 -s -C 4 || { mckey_why; return 1; }
}

# mckey within one device (uda): its multicast loops back to its QPs.
mckey_loop() {
	local saved=("${EXEC_B[@]}") rc

	EXEC_B=("${EXEC_A[@]}")
	run_pair mckey_receiving - stdbuf -oL mckey -m 239.1.2.6 -b 192.0.2.1 -C 4 -- \
		mckey -m 239.1.2.6 -b 192.0.2.1 -s -C 4
	rc=$?
	EXEC_B=("${saved[@]}")
	[ "$rc" = 0 ] || mckey_why
	return $rc
}

# roce_mode MODE: rdma_cm's default RoCE mode of both devices.
roce_mode() {
	local d dir

	modprobe -a configfs rdma_cm 2>/dev/null
	[ -d /sys/kernel/config/rdma_cm ] ||
		mount -t configfs none /sys/kernel/config 2>/dev/null
	for d in uda udb; do
		dir=/sys/kernel/config/rdma_cm/$d
		[ -d "$dir" ] || mkdir "$dir" || return 1
		echo "$1" >"$dir/ports/1/default_roce_mode" || return 1
	done
}

# The ud_test cases, re-emitted as ours with a prefix.
UD_TEST_CASES=$(env -u VROCE_DEV "$VROCE_BIN/ud_test" 2>/dev/null |
		sed -n 's/^1\.\.//p')

# Their names, in order ("ok N NAME # SKIP ..." without a device).
mapfile -t UD_TEST_NAMES < <(vroce_case_names "$VROCE_BIN/ud_test")

# ud_test_run PREFIX [ARG...]: ud_test (with ARGs) from uda to udb.
ud_test_run() {
	local prefix=$1 line name

	shift
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*)
			name=${line#ok * }
			ktap_test_skip "$prefix ${name%% # SKIP*}"
			;;
		"ok "*) ktap_test_pass "$prefix ${line#ok * }" ;;
		"not ok "*) ktap_test_fail "$prefix ${line#not ok * }" ;;
		"TAP version"* | "1.."*) ;;
		*) echo "# $line" ;;
		esac
	# In the receiver's namespace, where its hw counters are visible.
	done < <(VROCE_DEV=uda VROCE_PEER_DEV=udb VROCE_GID=$GID_A \
		 VROCE_PEER_GID=$GID_B "${EXEC_B[@]}" timeout 900 \
		 "$VROCE_BIN/ud_test" "$@" 2>&1 | tee "$VROCE_LOG.udt")
	if grep -q "^not ok" "$VROCE_LOG.udt"; then
		"${EXEC_A[@]}" rdma statistic show link uda/1 | sed 's/^/# /'
		"${EXEC_B[@]}" rdma statistic show link udb/1 | sed 's/^/# /'
	fi
}

# ud_test_kind I: with TURNS, the kind ud_test's I-th case runs for:
# KINDS[I mod 3], but a case that only RoCE v1 can show runs for v1 (a
# RoCE v2 datagram to a group nobody joined never reaches the driver: the
# IP stack drops it).
ud_test_kind() {
	case ${UD_TEST_NAMES[$1]} in
	mcast.no_member) echo v1 ;;
	*) echo "${KINDS[$1 % ${#KINDS[@]}]}" ;;
	esac
}

# skip_ud_test KIND REASON: ud_test's cases for KIND skipped (with TURNS,
# those that run for KIND there).
skip_ud_test() {
	local i

	for ((i = 0; i < UD_TEST_CASES; i++)); do
		if [ -z "$TURNS" ]; then
			ktap_test_skip "$1 ud_test case $i: $2"
		elif [ "$(ud_test_kind "$i")" = "$1" ]; then
			ktap_test_skip "ud_test $1 ${UD_TEST_NAMES[i]}: $2"
		fi
	done
}

# ud_test_turn KIND: with TURNS, ud_test's arguments that select the
# cases that run for KIND.
ud_test_turn() {
	local i

	for ((i = 0; i < UD_TEST_CASES; i++)); do
		[ "$(ud_test_kind "$i")" != "$1" ] ||
			echo "-r ${UD_TEST_NAMES[i]}"
	done
}

# The datagram and UC programs and rdma_cm's, as "WHERE|DESC|COMMAND...":
# WHERE lists the GID kinds a case is meant for; by default (TURNS) it runs
# once, for WHERE's "slow=KIND" or else its first kind. UD_FULL=1 runs
# every case for every kind it can run for. make check has little time to
# spare.
xport_cases() {
	echo "v2-4 v2-6 v1 slow=v2-6|ibv_ud_pingpong|pingpong ibv_ud_pingpong -n 5 -s 1000"
	echo "v2-4|ibv_uc_pingpong|pingpong ibv_uc_pingpong -n 5 -s 5000"
	echo "v2-4|ib_send_bw -c UD|perf 1024 ib_send_bw -c UD"
	echo "v2-4|ib_send_lat -c UD|perf 64 ib_send_lat -c UD"
	echo "v2-4|ib_write_bw -c UC|perf 65536 ib_write_bw -c UC"
}

cm_cases() {
	echo "v2-4 v2-6 v1 slow=v2-6|rping -V|rping_pair"
	echo "v2-4|ucmatose|ucmatose_pair"
	echo "v2-4 v2-6 v1 slow=v1|rdma_server/rdma_client|rdma_ex_pair"
	echo "v2-4 v1|udaddy|udaddy_pair"
	echo "v2-4|ib_write_bw -R|perf 65536 ib_write_bw -R"
	echo "v2-4|ib_read_bw -R|perf 65536 ib_read_bw -R"
	echo "v2-4|ib_send_bw -R|perf 65536 ib_send_bw -R"
	echo "v2-4 v1 slow=v1|mckey|mckey_pair"
	echo "v2-4|mckey loopback|mckey_loop"
}

KINDS=(v2-4 v2-6 v1)
# rdma_cm: "KIND|default_roce_mode"
CM_KINDS=("v2-4|RoCE v2" "v2-6|RoCE v2" "v1|IB/RoCE v1")
# UD_KINDS="v2-4 ..." runs only those (the others are skipped).
UD_KINDS=${UD_KINDS:-${KINDS[*]}}
mapfile -t XCASES < <(xport_cases)
mapfile -t CMCASES < <(cm_cases)
# excluded KIND REST: why a case (DESC|COMMAND) cannot run for KIND at all.
excluded() {
	case "$1:$2" in
	v2-6:*" -R"*) echo "perftest's rdma_cm server listens on IPv4 only" ;;
	v2-6:mckey*) echo "rdma_cm has no RoCE v2 multicast over IPv6" ;;
	*) return 1 ;;
	esac
}

# slow_kind CASE: the kind a case (WHERE|DESC|COMMAND) runs for with
# TURNS: WHERE's "slow=KIND", else its first.
slow_kind() {
	local w

	for w in ${1%%|*}; do
		case $w in slow=*) echo "${w#slow=}" && return ;; esac
	done
	w=${1%%|*}
	echo "${w%% *}"
}

# run_case PREFIX KIND CASE: run CASE (WHERE|DESC|COMMAND) or skip it.
# With TURNS, nothing unless it runs for KIND there.
run_case() {
	local rest=${3#*|} why='' no

	if [ -n "$TURNS" ]; then
		[ "$(slow_kind "$3")" = "$2" ] || return 0
		# shellcheck disable=SC2086 # the command is a word list
		check "$1 ${rest%%|*}" ${rest#*|}
		return
	fi
	no=$(excluded "$2" "$rest") && why=$no
	if [ -n "$why" ]; then
		ktap_test_skip "$1 ${rest%%|*}: $why"
		return
	fi
	# shellcheck disable=SC2086 # the command is a word list
	check "$1 ${rest%%|*}" ${rest#*|}
}

# skip_cases PREFIX KIND REASON CASE...: those cases skipped for KIND
# (with TURNS, those that run for KIND there).
skip_cases() {
	local prefix=$1 kind=$2 why=$3 c

	shift 3
	for c in "$@"; do
		[ -z "$TURNS" ] || [ "$(slow_kind "$c")" = "$kind" ] || continue
		c=${c#*|}
		ktap_test_skip "$prefix ${c%%|*}: $why"
	done
}

ktap_print_header
[ -n "$UD_TEST_CASES" ] || ktap_exit_fail_msg "cannot list ud_test's cases"
[ "${#UD_TEST_NAMES[@]}" = "$UD_TEST_CASES" ] ||
	ktap_exit_fail_msg "cannot list ud_test's cases"
if [ -n "$TURNS" ]; then
	# Every case once.
	ktap_set_plan $((UD_TEST_CASES + ${#XCASES[@]} + ${#CMCASES[@]}))
else
	ktap_set_plan $(((UD_TEST_CASES + ${#XCASES[@]}) * ${#KINDS[@]} +
			 ${#CMCASES[@]} * ${#CM_KINDS[@]}))
fi

ok=1 why=
if ! setup >"$VROCE_LOG" 2>&1; then
	sed 's/^/# /' "$VROCE_LOG"
	ok=0 why="cannot set up the veth topology"
fi

# kind_ok KIND: may KIND run at all? Sets k_why if not.
kind_ok() {
	k_why=$why
	[ "$ok" = 1 ] || return 1
	case " $UD_KINDS " in
	*" $1 "*) ;;
	*) k_why="not in UD_KINDS" && return 1 ;;
	esac
	use_gids "$1" || { k_why="no $1 GID" && return 1; }
}

for kind in "${KINDS[@]}"; do
	t0=$SECONDS
	if ! kind_ok "$kind"; then
		skip_ud_test "$kind" "$k_why"
		skip_cases "$kind" "$kind" "$k_why" "${XCASES[@]}"
		continue
	fi
	ktap_print_msg "$kind: uda GID $GID_A <-> udb GID $GID_B"
	if [ -z "$TURNS" ]; then
		ud_test_run "ud_test $kind"
	else
		mapfile -t args < <(ud_test_turn "$kind")
		# shellcheck disable=SC2068 # "-r NAME" pairs
		[ ${#args[@]} = 0 ] || ud_test_run "ud_test $kind" ${args[@]}
	fi
	for c in "${XCASES[@]}"; do
		run_case "$kind" "$kind" "$c"
	done
	ktap_print_msg "$kind: $((SECONDS - t0)) s"
done

for ck in "${CM_KINDS[@]}"; do
	kind=${ck%%|*} t0=$SECONDS
	if kind_ok "$kind" && ! roce_mode "${ck#*|}" >"$VROCE_LOG" 2>&1; then
		sed 's/^/# /' "$VROCE_LOG"
		ok_cm=0 k_why="cannot set rdma_cm's RoCE mode to ${ck#*|}"
	elif kind_ok "$kind"; then
		ok_cm=1
	else
		ok_cm=0
	fi
	if [ "$ok_cm" = 0 ]; then
		skip_cases "rdma_cm $kind" "$kind" "$k_why" "${CMCASES[@]}"
		continue
	fi
	for c in "${CMCASES[@]}"; do
		run_case "rdma_cm $kind" "$kind" "$c"
	done
	ktap_print_msg "rdma_cm $kind: $((SECONDS - t0)) s"
done
ktap_finished
