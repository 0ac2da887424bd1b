#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make incast: the congestion-control incast benchmark. Not a
# timed test: it prints a table and PASS/FAIL against the targets.
#
#   ns is1 (vs1) --veth--+
#   ns is2 (vs2) --veth--+-- br0 (ns isw) --[pr: tbf RATE + RED ECN]--veth-- ns ir (vr)
#   ...          --veth--+
#
# N senders (ib_write_bw clients, one RC QP each, RDMA WRITE) write to one
# receiver at once through a bridge whose port towards the receiver is the
# bottleneck: tbf at RATE Mb/s feeding RED, which marks CE on ECT packets
# (and drops Not-ECT ones) as its average queue grows (RoCE only: the
# perftest TCP control traffic has a queue of its own). The same run is done
# with CC off (rp_enable/np_enable 0 on every device: Not-ECT, RED drops)
# and with CC on (ECT(0), CE marks, CNPs, DCQCN pacing). For each: per-flow
# goodput, Jain's fairness index, bottleneck drops and CE marks (RED's
# counters), retransmitted packets (retrans_pkts of the senders), CNPs sent
# (receiver's np_cnp_sent) and handled (senders' rp_cnp_handled).
#
# Targets with CC on: drops <= 10% of the CC-off drops, Jain >= 0.9,
# aggregate goodput >= 80% of RATE.
#
# The DCQCN knobs are mlx5's defaults scaled to this fabric (see CC_KNOBS
# below and Documentation/infiniband/vroce.rst): the defaults assume
# 25-100 Gb/s links with microsecond RTTs, this one runs at 20 Mb/s under
# TCG with RTTs near a millisecond.
#
#   tools/bench/incast.sh           on the host (make incast): build, boot
#                                   the test VM, run the guest part
#   tools/bench/incast.sh --guest   inside the VM (VROCE_KO set)
#
# Environment: KERNEL (6.12 by default), N (senders, 3), RATE (Mb/s, 20),
# DUR (seconds per run, 24), WIN (the measurement window inside it, 16),
# SIZE (message bytes, 16384: a multiple of the 1024-byte MTU).
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
N=${N:-3}
RATE=${RATE:-20}
DUR=${DUR:-24}
WIN=${WIN:-16}
SIZE=${SIZE:-16384}

# knob value, written to every device for the CC-on run.
CC_KNOBS=(
	"rp_max_rate 100"			# the senders' "NIC" rate, Mb/s
	"rp_time_reset 50000"			# rate increase every 50 ms
	"rp_ai_rate 1"				# additive step, Mb/s
	"rp_hai_rate 2"				# hyper step, Mb/s
	"rp_threshold 5"			# F (the paper's)
	"rp_byte_reset 0"			# timer only
	"rp_rate_reduce_monitor_period 1000"	# at most one cut per ms
	"rp_dce_tcp_rtt 1000"			# alpha updated per ms
	"rp_dce_tcp_g 960"			# alpha gain 1/16
	"np_min_time_between_cnps 1000"		# one CNP per QP per ms
)

# ---------------------------------------------------------------- guest ---

RX=192.0.2.100
PORT0=19800

vsdev() { echo "vs$1"; }

setup() {
	local i

	modprobe -a ib_core ib_uverbs udp_tunnel ip6_udp_tunnel 2>/dev/null
	[ -d /sys/module/vroce ] || insmod "$VROCE_KO" || return 1
	ip netns add isw && ip netns add ir || return 1
	ip -n isw link add br0 type bridge && ip -n isw link set br0 up &&
		ip -n ir link add ir0 type veth peer name pr netns isw &&
		ip -n ir addr add "$RX/24" dev ir0 &&
		ip -n ir link set ir0 up && ip -n ir link set lo up &&
		ip -n isw link set pr master br0 && ip -n isw link set pr up &&
		ip netns exec ir rdma link add vr type vroce netdev ir0 || return 1
	for ((i = 1; i <= N; i++)); do
		ip netns add "is$i" &&
			ip -n "is$i" link add "is${i}0" type veth peer name "ps$i" netns isw &&
			ip -n "is$i" addr add "192.0.2.$i/24" dev "is${i}0" &&
			ip -n "is$i" link set "is${i}0" up &&
			ip -n "is$i" link set lo up &&
			ip -n isw link set "ps$i" master br0 &&
			ip -n isw link set "ps$i" up &&
			ip netns exec "is$i" rdma link add "$(vsdev "$i")" type vroce \
				netdev "is${i}0" || return 1
	done
	# The bottleneck: the bridge's egress towards the receiver, tbf with
	# two strict-priority queues under it, like a switch's traffic
	# classes: RoCE (UDP 4791) in RED with ECN, everything else (the
	# perftest TCP control connections) in a small FIFO ahead of it, so
	# RED's drops of Not-ECT packets hit RDMA only.
	ip netns exec isw tc qdisc add dev pr root handle 1: tbf \
		rate "${RATE}mbit" burst 8kb latency 500ms &&
		ip netns exec isw tc qdisc add dev pr parent 1:1 handle 10: prio \
			bands 2 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 &&
		ip netns exec isw tc filter add dev pr parent 10: protocol ip \
			u32 match ip protocol 17 0xff match ip dport 4791 0xffff \
			flowid 10:2 &&
		ip netns exec isw tc qdisc add dev pr parent 10:1 handle 11: \
			pfifo limit 100 &&
		ip netns exec isw tc qdisc add dev pr parent 10:2 handle 12: red \
			limit 300000 min 8000 max 40000 avpkt 1100 burst 12 \
			bandwidth "${RATE}mbit" probability 0.1 ecn || return 1
	sleep 2
}

# The RoCE v2 GID index of DEV for IPv4 address IP.
gid_index() {
	local dir="/sys/class/infiniband/$1/ports/1" i want

	# shellcheck disable=SC2086 # the four bytes of the address, split
	want=$(printf 'ffff:%02x%02x:%02x%02x' ${2//./ })
	for i in $(seq 0 15); do
		[ "$(cat "$dir/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] ||
			continue
		case $(cat "$dir/gids/$i") in
		*"$want") echo "$i"; return 0 ;;
		esac
	done
	return 1
}

counter() {
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"
}

all_devs() {
	local i

	echo vr
	for ((i = 1; i <= N; i++)); do vsdev "$i"; done
}

# cc_mode on|off: the enables of every device, and the knobs.
cc_mode() {
	local d p kv v=0

	[ "$1" = on ] && v=1
	for d in $(all_devs); do
		for p in 0 1 2 3 4 5 6 7; do
			echo "$v" >"/sys/class/infiniband/$d/cc/rp_enable_$p"
			echo "$v" >"/sys/class/infiniband/$d/cc/np_enable_$p"
		done
		for kv in "${CC_KNOBS[@]}"; do
			# shellcheck disable=SC2086 # "name value"
			set -- $kv
			echo "$2" >"/sys/class/infiniband/$d/cc/$1"
		done
	done
}

# red_stat FIELD: RED's dropped or marked count on the bottleneck.
red_stat() {
	ip netns exec isw tc -s qdisc show dev pr | awk -v f="$1" '
		/qdisc red/ { red = 1 }
		red && f == "dropped" && /dropped/ {
			sub(/.*dropped /, ""); sub(/,.*/, ""); print; exit }
		red && f == "marked" && /marked/ {
			sub(/.*marked /, ""); sub(/ .*/, ""); print; exit }'
}

sum_counter() {
	local i s=0

	for ((i = 1; i <= N; i++)); do
		s=$((s + $(counter "$(vsdev "$i")" "$1")))
	done
	echo "$s"
}

listening() {
	ip netns exec ir ss -Hltn "sport = :$1" | grep -q .
}

# flow_pkts I: request packets sender I sent once (sent_pkts minus
# retrans_pkts; the senders send nothing else on their QP).
flow_pkts() {
	echo $(($(counter "$(vsdev "$1")" sent_pkts) - $(counter "$(vsdev "$1")" retrans_pkts)))
}

# rates MODE: the senders' pacer rates (kb/s, 0 = unlimited) every 0.5 s,
# into $OUT/rates.MODE, until killed.
rates() {
	local i t=0

	while :; do
		printf '%s' "$t"
		for ((i = 1; i <= N; i++)); do
			printf ' %s' "$(awk 'NR > 1 && $1 > 1 { r = $3 } END { print r }' \
				"/sys/kernel/debug/vroce/$(vsdev "$i")/cc_qps")"
		done
		echo
		sleep 0.5
		t=$((t + 1))
	done >"$OUT/rates.$1"
}

# snap: every counter of the table, one line.
snap() {
	local i

	for ((i = 1; i <= N; i++)); do printf '%s ' "$(flow_pkts "$i")"; done
	echo "$(red_stat dropped) $(red_stat marked) $(sum_counter retrans_pkts)" \
		"$(counter vr np_cnp_sent) $(sum_counter rp_cnp_handled)"
}

# run MODE: one incast run; prints one table block and sets RES_* values.
# Everything is measured over a window of WIN seconds while all flows run
# (perftest's own bandwidth figure depends on a cycle-counter calibration
# that TCG on a loaded host breaks). Every packet of a 16 KB WRITE carries
# a full 1024-byte MTU of payload, so goodput = packets sent once x 1024.
RES_DROPS=() RES_JAIN=() RES_AGG=()
run() {
	local mode=$1 i gr gs pids=() spids=() a b rpid
	local bw sum=0 sq=0 jain agg

	cc_mode "$mode"
	gr=$(gid_index vr "$RX")
	for ((i = 1; i <= N; i++)); do
		ip netns exec ir timeout $((DUR + 60)) ib_write_bw -d vr -x "$gr" \
			-p $((PORT0 + i)) -F -D "$DUR" -s "$SIZE" -u 18 \
			>"$OUT/srv.$mode.$i" 2>&1 &
		spids+=($!)
	done
	for ((i = 1; i <= N; i++)); do
		for _ in $(seq 100); do listening $((PORT0 + i)) && break; sleep 0.1; done
	done
	for ((i = 1; i <= N; i++)); do
		gs=$(gid_index "$(vsdev "$i")" "192.0.2.$i")
		ip netns exec "is$i" timeout $((DUR + 60)) ib_write_bw \
			-d "$(vsdev "$i")" -x "$gs" -p $((PORT0 + i)) -F -D "$DUR" \
			-s "$SIZE" -u 18 "$RX" >"$OUT/cli.$mode.$i" 2>&1 &
		pids+=($!)
	done
	rates "$mode" &
	rpid=$!
	sleep $(((DUR - WIN) / 2))
	read -ra a <<<"$(snap)"
	sleep "$WIN"
	read -ra b <<<"$(snap)"
	wait "${pids[@]}" "${spids[@]}"
	kill "$rpid" 2>/dev/null
	# Every device's counters after the run, for a closer look.
	for i in $(all_devs); do
		echo "== $i"
		grep -H . "/sys/class/infiniband/$i/ports/1/hw_counters/"* |
			sed 's|.*/||; /:0$/d'
	done >"$OUT/counters.$mode"
	ip netns exec isw tc -s qdisc show dev pr >"$OUT/qdisc.$mode"
	printf '\nCC %s (N=%d, bottleneck %d Mb/s, %d-byte WRITEs, %d s window)\n' \
		"$mode" "$N" "$RATE" "$SIZE" "$WIN"
	printf '  %-6s %12s\n' flow "goodput Mb/s"
	for ((i = 0; i < N; i++)); do
		bw=$(awk -v p=$((b[i] - a[i])) -v w="$WIN" \
			'BEGIN { printf "%.2f", p * 1024 * 8 / w / 1e6 }')
		printf '  %-6s %12s\n' "vs$((i + 1))" "$bw"
		sum=$(awk -v a="$sum" -v b="$bw" 'BEGIN { print a + b }')
		sq=$(awk -v a="$sq" -v b="$bw" 'BEGIN { print a + b * b }')
	done
	jain=$(awk -v s="$sum" -v q="$sq" -v n="$N" \
		'BEGIN { printf "%.3f", (q > 0) ? s * s / (n * q) : 0 }')
	agg=$(awk -v s="$sum" 'BEGIN { printf "%.2f", s }')
	printf '  %-28s %s Mb/s (%s%% of %d)\n' "aggregate goodput" "$agg" \
		"$(awk -v a="$agg" -v r="$RATE" 'BEGIN { printf "%.0f", 100 * a / r }')" "$RATE"
	printf '  %-28s %s\n' "Jain's fairness index" "$jain"
	printf '  %-28s %s\n' "bottleneck drops" "$((b[N] - a[N]))"
	printf '  %-28s %s\n' "bottleneck CE marks" "$((b[N + 1] - a[N + 1]))"
	printf '  %-28s %s\n' "retransmitted packets" "$((b[N + 2] - a[N + 2]))"
	printf '  %-28s %s\n' "CNPs sent (receiver)" "$((b[N + 3] - a[N + 3]))"
	printf '  %-28s %s\n' "CNPs handled (senders)" "$((b[N + 4] - a[N + 4]))"
	RES_DROPS+=("$((b[N] - a[N]))") RES_JAIN+=("$jain") RES_AGG+=("$agg")
}

verdict() {
	local ok=0

	printf '\nTargets, CC on:\n'
	if [ "${RES_DROPS[1]}" -le $((RES_DROPS[0] / 10)) ]; then
		echo "  PASS drops ${RES_DROPS[1]} <= 10% of CC-off drops ${RES_DROPS[0]}"
	else
		echo "  FAIL drops ${RES_DROPS[1]} > 10% of CC-off drops ${RES_DROPS[0]}"
		ok=1
	fi
	if awk -v j="${RES_JAIN[1]}" 'BEGIN { exit !(j >= 0.9) }'; then
		echo "  PASS Jain's index ${RES_JAIN[1]} >= 0.9"
	else
		echo "  FAIL Jain's index ${RES_JAIN[1]} < 0.9"
		ok=1
	fi
	if awk -v a="${RES_AGG[1]}" -v r="$RATE" 'BEGIN { exit !(a >= 0.8 * r) }'; then
		echo "  PASS aggregate goodput ${RES_AGG[1]} Mb/s >= 80% of $RATE"
	else
		echo "  FAIL aggregate goodput ${RES_AGG[1]} Mb/s < 80% of $RATE"
		ok=1
	fi
	return $ok
}

cleanup() {
	local ns

	for ns in isw ir $(seq -f "is%g" 1 "$N"); do
		ip netns del "$ns" 2>/dev/null
	done
}

guest() {
	# perftest's outputs: in the run's output directory when there is one.
	OUT=${INCAST_OUT:-$(mktemp -d /tmp/vroce-incast.XXXXXX)}
	mkdir -p "$OUT"
	trap cleanup EXIT
	setup || { echo "incast: setup failed" >&2; return 1; }
	echo "incast: kernel $(uname -r), $N senders -> 1 receiver"
	run off
	run on
	verdict
}

# ---------------------------------------------------------------- host ---

host() {
	local kernel out

	"$TOP/tools/deps.sh"
	kernel=${KERNEL:-$("$TOP/tools/kernels.sh" 6.12)} ||
		{ echo "incast: no Debian 6.12 kernel" >&2; return 1; }
	make -s --no-print-directory -C "$TOP" KVER="$kernel" || return 1
	out=$TOP/build/incast
	mkdir -p "$out"
	cd "$TOP" || return 1
	"$TOP/tools/testing/vm/run.sh" -k "$kernel" -t 900 -o "$out" -- \
		env VROCE_KO="$TOP/build/$kernel/vroce.ko" INCAST_OUT="$out/perftest" \
		N="$N" RATE="$RATE" \
		DUR="$DUR" WIN="$WIN" SIZE="$SIZE" tools/bench/incast.sh --guest
}

if [ "${1:-}" = --guest ]; then
	guest
else
	host
fi
