#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Where the transport spends its time, per packet, in the test VM: for each
# case (default: loopback ib_write_bw 64 KiB and ib_send_bw 64 B), two
# perftest runs:
#
#   counts   perf stat -a of scheduler, workqueue, softirq, allocation, skb
#            and network tracepoints around the client; ftrace's function
#            tracer on every function of the driver's module plus the
#            kernel functions in KFUNCS (calls per packet); hist triggers
#            keyed by call site on kmalloc / kmem_cache_alloc and by
#            function on workqueue_execute_start
#   profile  perf record -a -g around the client (cpu-clock: TCG has no
#            PMU), then
#            perf report --no-children: the top kernel symbols, module
#            symbols through /proc/kallsyms
#
# Switching tracepoints on and off patches kernel text, which a TCG guest
# occasionally trips over (an int3 Oops at a jump label, seen once): rerun.
#
# Per-packet figures divide by the device's sent_pkts (hw_counters; data
# packets and ACKs alike, in loopback each is also received once) and by
# the messages perftest reports.
#
#   tools/bench/profile.sh           on the host: build, boot, collect
#   tools/bench/profile.sh --guest   the part that runs inside the VM
#
# Environment (host):
#   BENCH_KERNEL=<release>         kernel to boot (default: newest 6.12)
#   PROFILE_TOPOS="vroce-loop"     topologies (tools/bench/topo.sh), e.g.
#                                  "vroce-loop rxe-loop vroce-veth"
#   PROFILE_CASES="ib_write_bw:65536 ib_send_bw:64"   TOOL:SIZE list
#
# Output in build/bench/profile/: profile.txt (everything below, per case),
# and per topology and case the raw files: *.stat (perf stat), *.funcs
# (function calls), *.hist (hist triggers), *.report (perf report), *.comm
# (samples by command and object).
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
TOPOS=${PROFILE_TOPOS:-vroce-loop}
CASES=${PROFILE_CASES:-ib_write_bw:65536 ib_send_bw:64}

# ---------------------------------------------------------------- guest ---

# shellcheck source=tools/bench/topo.sh
source "$TOP/tools/bench/topo.sh"

TR=/sys/kernel/tracing
EVENTS=(
	sched:sched_switch sched:sched_wakeup
	workqueue:workqueue_queue_work workqueue:workqueue_execute_start
	irq:softirq_raise irq:softirq_entry
	kmem:kmalloc kmem:kmem_cache_alloc kmem:mm_page_alloc
	kmem:kfree kmem:kmem_cache_free
	skb:consume_skb skb:kfree_skb
	net:net_dev_queue net:netif_receive_skb net:netif_rx
	raw_syscalls:sys_enter
)
# Kernel functions counted with the module's (globs; missing ones skipped).
KFUNCS=(
	'crc32_le*' '__alloc_skb' 'kfree_skb*' 'sk_skb_reason_drop'
	'consume_skb' 'skb_release_data' '__queue_work' 'queue_work_on'
	'__dev_queue_xmit' 'veth_xmit' '__netif_rx' 'netif_receive_skb*'
	'udp_queue_rcv_one_skb' 'skb_copy_bits' 'ib_umem_*'
	'ib_uverbs_write' 'ib_uverbs_post_send' 'mutex_lock' 'mutex_unlock'
	'_raw_spin_lock_irqsave' '_raw_spin_lock_bh' '_raw_spin_lock'
	'hrtimer_start_range_ns' 'hrtimer_try_to_cancel' 'try_to_wake_up'
	'kthread_*' '__wake_up' '__mod_timer' 'add_timer*' 'try_to_del_timer_sync'
)

# The iteration counts: counting runs are short (the function trace must
# fit the buffer), profiling runs longer.
count_iters() {
	case $2 in
	64) echo 4000 ;;
	4096) echo 1000 ;;
	65536) echo 200 ;;
	*) echo 16 ;;
	esac
}

prof_iters() {
	echo $(($(count_iters "$@") * 8))
}

module_of() {
	case $1 in
	rxe-*) echo rdma_rxe ;;
	*) echo vroce ;;
	esac
}

# hw_counter DEV NAME
hw_counter() {
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2" 2>/dev/null || echo 0
}

# The hist triggers, as "EVENT TRIGGER".
HISTS=(
	"kmem/kmalloc hist:keys=call_site.sym:vals=hitcount,bytes_alloc:sort=hitcount.descending"
	"kmem/kmem_cache_alloc hist:keys=call_site.sym:vals=hitcount,bytes_alloc:sort=hitcount.descending"
	"workqueue/workqueue_execute_start hist:keys=function.sym:vals=hitcount:sort=hitcount.descending"
	"workqueue/workqueue_queue_work hist:keys=function.sym,cpu:vals=hitcount:sort=hitcount.descending"
)

hists() {
	local h ev trig

	for h in "${HISTS[@]}"; do
		ev=${h%% *} trig=${h#* }
		if [ "$1" = on ]; then
			echo "$trig" >"$TR/events/$ev/trigger" ||
				log "hist trigger on $ev refused"
		else
			echo "!$trig" >"$TR/events/$ev/trigger" 2>/dev/null
		fi
	done
}

ftrace_on() {
	local mod=$1 f

	echo 0 >"$TR/tracing_on"
	echo nop >"$TR/current_tracer"
	echo 32768 >"$TR/buffer_size_kb"
	echo >"$TR/set_ftrace_filter"
	echo "*:mod:$mod" >"$TR/set_ftrace_filter" ||
		log "cannot filter on module $mod"
	for f in "${KFUNCS[@]}"; do
		echo "$f" >>"$TR/set_ftrace_filter" 2>/dev/null
	done
	echo function >"$TR/current_tracer"
	echo >"$TR/trace"
	hists on
	echo 1 >"$TR/tracing_on"
}

# ftrace_off OUT: save the function counts and hists to OUT.*.
ftrace_off() {
	local h ev

	echo 0 >"$TR/tracing_on"
	grep -h overrun "$TR"/per_cpu/cpu*/stats >"$1.overrun"
	# "comm-pid [cpu] flags ts: func <-parent": count func, and the
	# callers of a few.
	awk '/^ *#/ { next } { for (i = 1; i < NF; i++) if ($i ~ /:$/) {
		print $(i + 1), $(i + 2); break } }' "$TR/trace" >"$1.calls"
	awk '{ print $1 }' "$1.calls" | sort | uniq -c | sort -rn >"$1.funcs"
	awk '$1 == "__alloc_skb" || $1 ~ /^kfree_skb/ || $1 == "consume_skb" ||
	     $1 ~ /^crc32_le/ || $1 == "queue_work_on" || $1 == "mutex_lock" ||
	     $1 ~ /^_raw_spin_lock/ || $1 ~ /timer/' "$1.calls" |
		sort | uniq -c | sort -rn >"$1.callers"
	rm -f "$1.calls"
	: >"$1.hist"
	for h in "${HISTS[@]}"; do
		ev=${h%% *}
		{
			echo "=== $ev"
			grep -v '^#' "$TR/events/$ev/hist" | grep -v '^$' | head -n 40
		} >>"$1.hist"
	done
	hists off
	echo nop >"$TR/current_tracer"
	echo >"$TR/set_ftrace_filter"
	echo >"$TR/trace"
	echo 1408 >"$TR/buffer_size_kb"
}

# summary NAME OUT MSGS PKTS: the per-packet table of one case.
summary() {
	local name=$1 out=$2 msgs=$3 pkts=$4

	echo "=== $name: $msgs messages, $pkts packets sent (sent_pkts)"
	echo "--- tracepoints (perf stat -a around the client): total, per message, per packet"
	awk -F, -v m="$msgs" -v p="$pkts" 'NF >= 3 && $1 ~ /^[0-9]+$/ {
		printf "%-34s %10d %10.2f %8.2f\n", $3, $1, $1 / m, $1 / p }' \
		"$out.stat"
	echo "--- function calls (ftrace; $(awk '{ s += $2 } END { print s + 0 }' \
		"$out.overrun") events lost): total, per message, per packet"
	awk -v m="$msgs" -v p="$pkts" 'NR <= 70 {
		printf "%-34s %10d %10.2f %8.2f\n", $2, $1, $1 / m, $1 / p }' \
		"$out.funcs"
	echo "--- callers of skb allocation/free, queue_work, locks: total, per packet"
	awk -v p="$pkts" 'NR <= 40 {
		printf "%-34s %-30s %8d %8.2f\n", $2, $3, $1, $1 / p }' "$out.callers"
	echo "--- allocations by call site, work items by function (hist triggers)"
	cat "$out.hist"
	echo "--- cpu-clock samples by command and object (all CPUs; [kernel.kallsyms] and modules are the kernel)"
	head -n 30 "$out.comm"
	echo "--- perf report --no-children (cpu-clock samples, all CPUs)"
	head -n 70 "$out.report"
	echo "--- call graphs of the symbols above 3% (first 120 lines)"
	head -n 120 "$out.graph"
	echo
}

profile_case() {
	local topo=$1 tool=${2%%:*} size=${2#*:} out dev mod m0 m1 p0 msgs

	out=$VROCE_OUT/$topo.$tool.$size
	dev=$DEV_A mod=$(module_of "$topo")
	# 1. counts
	m0=$(hw_counter "$dev" sent_pkts)
	[ "$DEV_B" = "$DEV_A" ] || p0=$(hw_counter "$DEV_B" sent_pkts)
	ftrace_on "$mod"
	# shellcheck disable=SC2034 # used by perftest_pair
	PAIR_WRAP=(perf stat -a -x ',' -o "$out.stat" -e "$(IFS=, && echo "${EVENTS[*]}")" --)
	if ! perftest_pair "$tool" -s "$size" -n "$(count_iters "$tool" "$size")"; then
		ftrace_off "$out"
		PAIR_WRAP=()
		return 1
	fi
	PAIR_WRAP=()
	ftrace_off "$out"
	msgs=$(perftest_row "$size" | awk '{ print $2 }')
	m1=$(hw_counter "$dev" sent_pkts)
	m1=$((m1 - m0))
	[ "$DEV_B" = "$DEV_A" ] || m1=$((m1 + $(hw_counter "$DEV_B" sent_pkts) - p0))
	# 2. profile: perf starts the client once its events are enabled.
	PERF_DATA=/tmp/perf.$$.data
	PAIR_WRAP=(perf record -a -g -e cpu-clock -F 999 -o "$PERF_DATA" -q --)
	perftest_pair "$tool" -s "$size" -n "$(prof_iters "$tool" "$size")"
	PAIR_WRAP=()
	perftest_row "$size" >"$out.prof_row"
	perf report -i "$PERF_DATA" --kallsyms=/proc/kallsyms --no-children \
		--sort sym --stdio -g none --percent-limit 0.3 2>/dev/null |
		grep -v '^#' | grep -v '^$' >"$out.report"
	# Who spends the time: each command, in user space or the kernel.
	perf report -i "$PERF_DATA" --kallsyms=/proc/kallsyms --no-children \
		--sort comm,dso --stdio -g none --percent-limit 1 2>/dev/null |
		grep -v '^#' | grep -v '^$' >"$out.comm"
	{
		perf report -i "$PERF_DATA" --kallsyms=/proc/kallsyms \
			--no-children --sort sym --stdio -g caller,0.5,callee,function,percent \
			--percent-limit 3 2>/dev/null | grep -v '^#' | grep -v '^$' |
			head -n 400
	} >"$out.graph"
	rm -f "$PERF_DATA"
	summary "$topo $tool -s $size" "$out" "${msgs:-1}" "$((m1 > 0 ? m1 : 1))" \
		>>"$VROCE_OUT/profile.txt"
}

guest() {
	local topo c

	mountpoint -q "$TR" || mount -t tracefs nodev "$TR"
	: >"$VROCE_OUT/profile.txt"
	perf version >&2 || log "no perf"
	for topo in $TOPOS; do
		if ! topo_up "$topo"; then
			log "cannot set up $topo"
			topo_down "$topo"
			continue
		fi
		for c in $CASES; do
			profile_case "$topo" "$c" || log "$topo $c failed"
		done
		topo_down "$topo"
	done
	pair_cleanup
}

# ----------------------------------------------------------------- host ---

host() {
	local kernel out rc=0

	kernel=${BENCH_KERNEL:-$("$TOP/tools/kernels.sh" 6.12)} || {
		echo "profile: no Debian 6.12 kernel to boot (BENCH_KERNEL=...)" >&2
		return 1
	}
	out=$TOP/build/bench/profile
	mkdir -p "$out"
	make -s --no-print-directory -C "$TOP" KVER="$kernel" || return 1
	cd "$TOP" || return 1
	"$TOP/tools/testing/vm/run.sh" -k "$kernel" -t "${BENCH_TIMEOUT:-1500}" -o "$out" -- \
		env VROCE_KO="$TOP/build/$kernel/vroce.ko" PROFILE_TOPOS="$TOPOS" \
		PROFILE_CASES="$CASES" tools/bench/profile.sh --guest \
		>"$out/run.log" 2>&1 || rc=$?
	grep '^bench:' "$out/run.log" | tr -d '\r'
	[ $rc = 0 ] || {
		echo "profile: the VM run failed (run.sh exit $rc), see $out"
		tail -n 20 "$out/run.log"
	}
	cat "$out/profile.txt"
	return $rc
}

if [ "${1:-}" = --guest ]; then
	guest
else
	host
fi
