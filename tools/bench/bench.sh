#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench: vroce against rdma_rxe, side by side, in one VM run.
#
#   tools/bench/bench.sh           on the host (what make bench runs): build
#                                  vroce.ko and the memcpy probe, boot the
#                                  test VM, then tools/bench/report.py
#   tools/bench/bench.sh --guest   the part that runs inside the VM
#
# Topologies (tools/bench/topo.sh), RoCE v2 over IPv4; both ends of a loop
# are one device, as rdma_rxe cannot connect two devices of one host:
#
#   rxe-loop    rdma_rxe over a veth (its peer up, unused), init_net
#   vroce-loop  vroce over the same veth, init_net
#   vroce-veth  vroce in two namespaces joined by a veth pair
#
# Matrix per topology: ib_{write,read,send}_bw at 64 B, 4 KiB, 64 KiB and
# 1 MiB; ib_write_bw -q 4 at 64 KiB; ib_{write,send}_lat at 2 B and 4 KiB.
# Each cell runs BENCH_REPS times; a repetition runs every cell of the
# three topologies in turn (rdma_rxe and vroce both bind UDP 4791: one
# module is unloaded before the other loads), so that a slow phase of the
# host does not land on one driver only. CPU time per GiB moved: perftest's
# CPU utilisation (all CPUs, measured window) over its bandwidth; the
# kernel's share of it (system+irq+softirq) from the guest's /proc/stat
# around the whole client run. The guest's single-core memcpy bandwidth
# (tools/bench/memcpy.c) is measured first.
#
# perftest: bw tests in duration mode, -D 4 -f 1 (4 s, the middle 2 s
# measured, with --cpu_util: perftest's /proc/stat over that window), so a
# cell costs the same time on every driver; lat tests 1000 round trips
# (-n). All with -u 18 (TCG is too slow for the default ACK timeout) and
# -F. A cell costs 6-10 s of wall time (perftest's start-up included): a
# repetition (51 cells) took 10-11 minutes, the default 3 about 32, on a
# 2-core host that other TCG guests were loading; less on an idle host
# (BENCH_REPS=1 or BENCH_DURATION=3 for a quicker look). Each run is
# under timeout(1); a run that fails or prints no number is retried once
# and then left out of the median (the table shows how many samples each
# cell has).
#
# Environment (host):
#   BENCH_KERNEL=<release>   kernel to boot (default: newest Debian 6.12)
#   BENCH_REPS=3             repetitions per cell
#   BENCH_DURATION=4         seconds per bw run (-D; 2 s less measured)
#   BENCH_LAT_ITERS=1000     round trips per lat run (-n)
#   BENCH_TOPOS="rxe-loop vroce-loop vroce-veth"   topologies to run
#   BENCH_CELLS=<ERE>        only the cells whose "TOOL SIZE QPS" matches,
#                            e.g. "_lat 2 |_bw 64 1" (default: all)
#   BENCH_TIMEOUT=2700       VM timeout in seconds
#
# Output in build/bench/: results.txt (the table), results.json, raw.tsv
# (one line per run), vm/ (console and dmesg of the VM run). A run of
# every cell and topology also replaces the table of tools/bench/README.
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
REPS=${BENCH_REPS:-3}
ALL_TOPOS="rxe-loop vroce-loop vroce-veth"
TOPOS=${BENCH_TOPOS:-$ALL_TOPOS}

# ---------------------------------------------------------------- guest ---

# shellcheck source=tools/bench/topo.sh
source "$TOP/tools/bench/topo.sh"
RAW=

# perftest's run length: bw tests run DURATION seconds (-D) and measure the
# middle DURATION - 2 s (-f 1), lat tests LAT_ITERS round trips (-n).
DURATION=${BENCH_DURATION:-4}
LAT_ITERS=${BENCH_LAT_ITERS:-1000}

# The matrix, one "TOOL SIZE QPS" a line (BENCH_CELLS filters it).
cells() {
	all_cells | grep -E -- "${BENCH_CELLS:-.}"
}

all_cells() {
	local s t

	for s in 64 4096 65536 1048576; do
		for t in ib_write_bw ib_read_bw ib_send_bw; do
			echo "$t $s 1"
		done
	done
	echo "ib_write_bw 65536 4"
	for s in 2 4096; do
		for t in ib_write_lat ib_send_lat; do
			echo "$t $s 1"
		done
	done
}

# The guest's busy jiffies: "USER SYS" (user+nice, system+irq+softirq).
cpu_jiffies() {
	awk '$1 == "cpu" { print $2 + $3, $4 + $7 + $8; exit }' /proc/stat
}

# Around the client: /proc/stat and the wall clock.
C0='' C1='' T0='' T1=''
pair_before() {
	C0=$(cpu_jiffies)
	T0=$EPOCHREALTIME
}

pair_after() {
	T1=$EPOCHREALTIME
	C1=$(cpu_jiffies)
}

# run_one TOOL SIZE QPS: one perftest run in the current topology. Prints
# "VALUE1 VALUE2 ITERS CPU_UTIL USER_J SYS_J WALL_S PERFTEST_V1" (bw: MiB/s,
# Mpps, perftest's CPU utilisation in % of all CPUs over the measured
# window, perftest's MiB/s; lat: t_typical and t_avg in us), or fails.
run_one() {
	local tool=$1 size=$2 qps=$3 args row mibs=-

	args=(-s "$size")
	case $tool in
	*_lat) args+=(-n "$LAT_ITERS") ;;
	*) args+=(-D "$DURATION" -f 1 --cpu_util) ;;
	esac
	[ "$qps" = 1 ] || args+=(-q "$qps")
	perftest_pair "$tool" "${args[@]}" || return 1
	row=$(perftest_row "$size") || {
		log "$tool ${args[*]}: no result row"
		tail -n 5 "$PAIR_LOG.cli" >&2
		return 1
	}
	# bw: 2 = iterations in the measured window (all QPs), 4 = BW average
	# [MB/sec] (MiB/s), 5 = MsgRate [Mpps], 6 = CPU_Util [%]; lat: 5 =
	# t_typical, 6 = t_avg [usec]. perftest converts cycles with a clock
	# it calibrates at start, which a loaded TCG host can defeat (it then
	# prints 0): VALUE1/2 are the iterations over the nominal window
	# (perftest_mibs), and perftest's own figure (over the window it
	# timed) is kept alongside; report.py prefers it when it is not 0.
	case $tool in
	*_lat) ;;
	*) mibs=$(perftest_mibs "$row" "$size" $((DURATION - 2))) || mibs=0 ;;
	esac
	awk -v c0="$C0" -v c1="$C1" -v t0="$T0" -v t1="$T1" -v lat="${tool##*_}" \
	    -v win=$((DURATION - 2)) -v mibs="$mibs" '
	{
		split(c0, a, " "); split(c1, b, " ")
		if (lat == "lat") {
			v1 = $5; v2 = $6; util = "-"; pt = "-"
		} else {
			v1 = mibs
			v2 = sprintf("%.6f", $2 / win / 1e6)
			util = $6; pt = $4
		}
		if (!(v1 + 0 > 0) || v1 ~ /inf|nan/)
			exit 1
		printf "%s %s %s %s %d %d %.3f %s\n", v1, v2, $2, util,
			b[1] - a[1], b[2] - a[2], t1 - t0, pt
	}' <<<"$row" || {
		log "$tool ${args[*]}: no usable number in: $row"
		grep -i -m 3 'correlation\|conflicting\|warn' "$PAIR_LOG.cli" >&2
		return 1
	}
}

# run_cell TOPO REP TOOL SIZE QPS: run_one, retried once; appends to RAW.
run_cell() {
	local topo=$1 rep=$2 res try

	shift 2
	for try in 1 2; do
		if res=$(run_one "$@"); then
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$topo" "$1" "$2" "$3" \
				"$rep" "${res// /$'\t'}" >>"$RAW"
			return 0
		fi
		log "$topo $*: attempt $try failed"
	done
	return 1
}

guest() {
	local out=${VROCE_OUT:?} rep topo cell start=$SECONDS t0 bin

	bin=$TOP/build/bench
	RAW=$out/raw.tsv
	printf 'topo\ttool\tsize\tqps\trep\tv1\tv2\titers\tcpu_util\tuser_j\tsys_j\twall_s\tperftest_v1\n' >"$RAW"
	{
		echo "kernel $(uname -r)"
		echo "cpus $(nproc)"
		echo "reps $REPS"
		echo "duration $DURATION"
		echo "lat_iters $LAT_ITERS"
		echo "user_hz $(getconf CLK_TCK)"
		"$bin/memcpy" 64 16
	} >"$out/meta.txt"
	cat "$out/meta.txt" >&2
	for ((rep = 1; rep <= REPS; rep++)); do
		for topo in $TOPOS; do
			t0=$SECONDS
			if ! topo_up "$topo"; then
				log "rep $rep: cannot set up $topo"
				topo_down "$topo"
				continue
			fi
			while read -r cell; do
				# shellcheck disable=SC2086 # TOOL SIZE QPS
				run_cell "$topo" "$rep" $cell
			done < <(cells)
			topo_down "$topo"
			log "rep $rep $topo: $((SECONDS - t0)) s (total $((SECONDS - start)) s)"
		done
	done
	pair_cleanup
}

# ----------------------------------------------------------------- host ---

host() {
	local kernel out rc=0 start=$SECONDS

	kernel=${BENCH_KERNEL:-$("$TOP/tools/kernels.sh" 6.12)} || {
		echo "bench: no Debian 6.12 kernel to boot (BENCH_KERNEL=...)" >&2
		return 1
	}
	out=$TOP/build/bench
	mkdir -p "$out/vm"
	echo "bench: building vroce for $kernel and the memcpy probe"
	make -s --no-print-directory -C "$TOP" KVER="$kernel" || return 1
	gcc -O2 -Wall -o "$out/memcpy" "$TOP/tools/bench/memcpy.c" || return 1
	echo "bench: booting $kernel in QEMU (TCG), $REPS repetitions, output in build/bench/"
	cd "$TOP" || return 1
	"$TOP/tools/testing/vm/run.sh" -k "$kernel" -t "${BENCH_TIMEOUT:-2700}" -o "$out/vm" -- \
		env VROCE_KO="$TOP/build/$kernel/vroce.ko" BENCH_REPS="$REPS" \
		BENCH_DURATION="${BENCH_DURATION:-4}" BENCH_TOPOS="$TOPOS" \
		BENCH_LAT_ITERS="${BENCH_LAT_ITERS:-1000}" BENCH_CELLS="${BENCH_CELLS:-.}" \
		tools/bench/bench.sh --guest >"$out/vm/run.log" 2>&1 || rc=$?
	grep '^bench:' "$out/vm/run.log" | tr -d '\r'
	if [ $rc != 0 ]; then
		echo "bench: the VM run failed (run.sh exit $rc), see build/bench/vm/"
		tail -n 20 "$out/vm/run.log"
		return $rc
	fi
	cp "$out/vm/raw.tsv" "$out/vm/meta.txt" "$out/"
	python3 "$TOP/tools/bench/report.py" "$out/raw.tsv" "$out/meta.txt" \
		"$out/results.txt" "$out/results.json" || return 1
	cat "$out/results.txt"
	echo "bench: done in $((SECONDS - start)) s"
	# A complete run replaces the README's table; a partial one does not.
	if [ "${BENCH_CELLS:-.}" = . ] && [ "$TOPOS" = "$ALL_TOPOS" ]; then
		python3 "$TOP/tools/bench/readme_table.py" "$TOP/tools/bench/README" \
			"$out/results.txt" "BENCH_REPS=$REPS make bench, Debian $kernel, 2 vCPUs under TCG, $(date +%F) ($((SECONDS - start)) s)." &&
			echo "bench: tools/bench/README's table replaced"
	fi
}

if [ "${1:-}" = --guest ]; then
	guest
else
	host
fi
