#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# An interleaved A/B of vroce builds in one VM run: what a driver change
# is worth, on a host whose load moves more than the change does.
#
#   tools/bench/ab.sh REV|. REV|. ...   on the host: build each, boot the
#                                       test VM, print the medians
#   tools/bench/ab.sh --guest           the part that runs inside the VM
#
# Each argument is a git revision (built from `git archive` in build/ab/)
# or "." (the working tree as it is). A round runs every case on every
# build, the builds in a different order each round (rotated), so that a
# slow phase of the host does not land on one build only; AB_ROUNDS
# rounds give the median per build and case, with every sample shown.
# perftest runs as in make bench (tools/bench/topo.sh, -D AB_DURATION
# -f 1, bandwidth = messages in the measured window x size).
#
# Environment (host):
#   AB_CASES="ib_read_bw:65536 ib_write_bw:1048576"   TOOL:SIZE[:QPS]
#   AB_ROUNDS=4         rounds
#   AB_DURATION=4       seconds per run (the middle AB_DURATION - 2 counted)
#   AB_TOPO=vroce-loop  topology (vroce-loop or vroce-veth)
#   BENCH_KERNEL=<release>   kernel to boot (default: newest Debian 6.12)
#
# Output in build/ab/: ab.tsv (round, build, case, MiB/s), report.txt.
set -uo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
CASES=${AB_CASES:-ib_read_bw:65536 ib_write_bw:1048576}
ROUNDS=${AB_ROUNDS:-4}
DURATION=${AB_DURATION:-4}
TOPO=${AB_TOPO:-vroce-loop}

# ---------------------------------------------------------------- guest ---

# ab_run CASE: MiB/s of one perftest run, or fails.
ab_run() {
	local tool size qps args row

	IFS=: read -r tool size qps <<<"$1"
	args=(-s "$size" -D "$DURATION" -f 1)
	[ "${qps:-1}" = 1 ] || args+=(-q "$qps")
	perftest_pair "$tool" "${args[@]}" || return 1
	row=$(perftest_row "$size") || return 1
	perftest_mibs "$row" "$size" $((DURATION - 2))
}

guest() {
	local out=${VROCE_OUT:?} kos=() n i r k c v

	# shellcheck source=tools/bench/topo.sh
	source "$TOP/tools/bench/topo.sh"
	read -r -a kos <<<"${AB_KOS:?}"
	n=${#kos[@]}
	printf 'round\tbuild\tcase\tmibs\n' >"$out/ab.tsv"
	for ((r = 1; r <= ROUNDS; r++)); do
		for ((i = 0; i < n; i++)); do
			k=${kos[$(((i + r) % n))]}
			export VROCE_KO=$k
			if ! topo_up "$TOPO"; then
				log "round $r: cannot set up $TOPO with $k"
				topo_down "$TOPO"
				continue
			fi
			for c in $CASES; do
				v=$(ab_run "$c") || v=$(ab_run "$c") || v=-
				printf '%s\t%s\t%s\t%s\n' "$r" "$(basename "$k" .ko)" \
					"$c" "$v" >>"$out/ab.tsv"
				log "round $r $(basename "$k" .ko) $c: $v"
			done
			topo_down "$TOPO"
		done
	done
	pair_cleanup
}

# ----------------------------------------------------------------- host ---

# ab_build ARG KERNEL DIR: the module of ARG (a revision, or "."), copied
# to DIR/NAME.ko; prints the path.
ab_build() {
	local arg=$1 kernel=$2 dir=$3 name src

	if [ "$arg" = . ]; then
		name=work
		make -s --no-print-directory -C "$TOP" KVER="$kernel" >&2 || return 1
		src=$TOP/build/$kernel/vroce.ko
	else
		name=$(git -C "$TOP" rev-parse --short "$arg") || return 1
		rm -rf "$dir/src-$name"
		mkdir -p "$dir/src-$name"
		git -C "$TOP" archive "$name" | tar -x -C "$dir/src-$name" &&
			make -s --no-print-directory -C "$dir/src-$name" \
				KVER="$kernel" >&2 || return 1
		src=$dir/src-$name/build/$kernel/vroce.ko
	fi
	cp -L "$src" "$dir/$name.ko" && echo "$dir/$name.ko"
}

# ab_report TSV: per case and build, the median of the samples and the
# samples in round order ("-": a run that gave no number, left out).
ab_report() {
	python3 - "$1" <<-'EOF'
		import collections, statistics, sys
		runs = collections.defaultdict(list)
		with open(sys.argv[1]) as f:
		    next(f)
		    for line in f:
		        _, build, case, mibs = line.rstrip("\n").split("\t")
		        runs[(case, build)].append(mibs)
		for (case, build), samples in sorted(runs.items()):
		    ok = [float(v) for v in samples if v != "-"]
		    med = f"{statistics.median(ok):.1f}" if ok else "-"
		    print(f"{case:<22} {build:<10} {med:>8}   {' '.join(samples)}")
	EOF
}

host() {
	local kernel out kos=() a ko rc=0

	[ $# -ge 2 ] || {
		echo "usage: tools/bench/ab.sh REV|. REV|. [...]" >&2
		return 2
	}
	kernel=${BENCH_KERNEL:-$("$TOP/tools/kernels.sh" 6.12)} || {
		echo "ab: no Debian 6.12 kernel to boot (BENCH_KERNEL=...)" >&2
		return 1
	}
	out=$TOP/build/ab
	mkdir -p "$out/vm"
	for a in "$@"; do
		ko=$(ab_build "$a" "$kernel" "$out") || {
			echo "ab: cannot build $a" >&2
			return 1
		}
		kos+=("$ko")
	done
	cd "$TOP" || return 1
	"$TOP/tools/testing/vm/run.sh" -k "$kernel" -t "${AB_TIMEOUT:-2700}" -o "$out/vm" -- \
		env AB_KOS="${kos[*]}" AB_CASES="$CASES" AB_ROUNDS="$ROUNDS" \
		AB_DURATION="$DURATION" AB_TOPO="$TOPO" \
		tools/bench/ab.sh --guest >"$out/vm/run.log" 2>&1 || rc=$?
	if [ $rc != 0 ] || [ ! -s "$out/vm/ab.tsv" ]; then
		echo "ab: the VM run failed (exit $rc), see build/ab/vm/"
		tail -n 20 "$out/vm/run.log"
		return 1
	fi
	cp "$out/vm/ab.tsv" "$out/"
	{
		echo "A/B, $TOPO, $kernel: MiB/s, median (samples in round order)"
		ab_report "$out/ab.tsv"
	} >"$out/report.txt"
	cat "$out/report.txt"
}

if [ "${1:-}" = --guest ]; then
	guest
else
	host "$@"
fi
