#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A sampling profile of one perftest case in the test VM, where perf
# samples nothing but idle (TCG has no PMU, and cpu-clock samples land in
# the idle loop): the host polls every vCPU's RIP through the QEMU monitor
# (tools/bench/rip_profile.py) while the case runs, and resolves them
# against the guest's /proc/kallsyms, module symbols included. Device
# accesses (the local APIC's MMIO) are over-counted: the monitor holds
# QEMU's big lock while it reads.
#
#   tools/bench/rip-profile.sh           on the host: build, boot, sample
#   tools/bench/rip-profile.sh --guest   the part that runs inside the VM
#
# Environment (host):
#   BENCH_KERNEL=<release>     kernel to boot (default: newest 6.12)
#   RIP_CASE=ib_send_bw:64     TOOL:SIZE[:QPS], in loopback
#   RIP_TOPO=vroce-loop        topology (tools/bench/topo.sh)
#   RIP_SECONDS=10             length of the sampled window
#
# Output in build/bench/rip/: report.txt (per vCPU and overall, the share
# of samples per symbol), samples.txt, kallsyms, run.log.
set -uo pipefail
TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
CASE=${RIP_CASE:-ib_send_bw:64}
TOPO=${RIP_TOPO:-vroce-loop}
SECS=${RIP_SECONDS:-10}

# ---------------------------------------------------------------- guest ---

guest() {
	local out=${VROCE_OUT:?} tool size qps args pid rc=0

	# shellcheck source=tools/bench/topo.sh
	source "$TOP/tools/bench/topo.sh"
	IFS=: read -r tool size qps <<<"$CASE"
	topo_up "$TOPO" || {
		log "cannot set up $TOPO"
		topo_down "$TOPO"
		return 1
	}
	cat /proc/kallsyms >"$out/kallsyms"
	args=(-s "$size" -D $((SECS + 8)) -f 1)
	[ -z "$qps" ] || [ "$qps" = 1 ] || args+=(-q "$qps")
	perftest_pair "$tool" "${args[@]}" &
	pid=$!
	sleep 5	# perftest's start-up
	touch "$out/mark"
	sleep "$SECS"
	rm -f "$out/mark"
	wait "$pid" || rc=1
	perftest_row "$size" >"$out/row.txt" || rc=1
	topo_down "$TOPO"
	pair_cleanup
	return $rc
}

# ----------------------------------------------------------------- host ---

host() {
	local kernel out sock sampler rc=0

	kernel=${BENCH_KERNEL:-$("$TOP/tools/kernels.sh" 6.12)} || {
		echo "rip-profile: no Debian 6.12 kernel to boot (BENCH_KERNEL=...)" >&2
		return 1
	}
	out=$TOP/build/bench/rip
	rm -rf "$out"
	mkdir -p "$out"
	sock=$out/monitor.sock
	make -s --no-print-directory -C "$TOP" KVER="$kernel" || return 1
	python3 "$TOP/tools/bench/rip_profile.py" sample "$sock" "$out" "$SECS" \
		>"$out/sampler.log" 2>&1 &
	sampler=$!
	cd "$TOP" || return 1
	"$TOP/tools/testing/vm/run.sh" -k "$kernel" -t "${BENCH_TIMEOUT:-600}" -o "$out" \
		-n "-nic none -monitor unix:$sock,server=on,wait=off" -- \
		env VROCE_KO="$TOP/build/$kernel/vroce.ko" RIP_CASE="$CASE" \
		RIP_TOPO="$TOPO" RIP_SECONDS="$SECS" tools/bench/rip-profile.sh --guest \
		>"$out/run.log" 2>&1 || rc=$?
	wait "$sampler" || rc=1
	cat "$out/sampler.log"
	[ $rc = 0 ] || {
		echo "rip-profile: the run failed, see $out"
		tail -n 20 "$out/run.log"
		return 1
	}
	{
		echo "$TOPO $CASE, ${SECS} s sampled; perftest: $(cat "$out/row.txt")"
		python3 "$TOP/tools/bench/rip_profile.py" report "$out/kallsyms" \
			"$out/samples.txt" 40
	} >"$out/report.txt"
	cat "$out/report.txt"
}

if [ "${1:-}" = --guest ]; then
	guest
else
	host
fi
