#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot two test guests (run.sh each) joined by a virtual Ethernet link, a
# QEMU "dgram" netdev: UDP datagrams between two ports on 127.0.0.1, one per
# guest, so neither has to start first. Both run the same command, with
# VROCE_PEER=1 or 2 in its environment to tell them apart; each gets its own
# output dir (OUTDIR/vm1, OUTDIR/vm2) and its own verdict, and each fails on
# a kernel splat exactly as run.sh does. See README in this directory.
#
# Guest N has a virtio NIC with MAC 52:54:00:00:76:0N (the test configures
# its addresses). Their consoles are streamed to stdout, each line prefixed
# with "[vm1] " or "[vm2] ".
#
# Exit status: 125 if either guest's kernel reported a problem, else 124 if
# either timed out, else 126 if either lost its status, else the first
# non-zero command status (vm1 first), else 0.

set -euo pipefail

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SELF_DIR
readonly EXIT_HARNESS=126

RUN_ARGS=()
OUT=
CMD=()

usage() {
	cat >&2 <<EOF
usage: $0 [-k KERNEL] [-t TIMEOUT_S] [-m MEM] [-c CPUS] [-o OUTDIR] -- CMD [ARGS...]
  options as for run.sh (each guest gets them); OUTDIR holds vm1/ and vm2/
EOF
	exit "${1:-$EXIT_HARNESS}"
}

die() {
	echo "pair.sh: $*" >&2
	exit "$EXIT_HARNESS"
}

parse_args() {
	local opt

	while getopts ":k:t:m:c:o:h" opt; do
		case $opt in
		k | t | m | c) RUN_ARGS+=("-$opt" "$OPTARG") ;;
		o) OUT=$OPTARG ;;
		h) usage 0 ;;
		*) usage ;;
		esac
	done
	shift $((OPTIND - 1))
	(($#)) || usage
	CMD=("$@")
	if [[ -z $OUT ]]; then
		OUT=$(mktemp -d -t vroce-pair.XXXXXX)
		echo "pair.sh: output in $OUT" >&2
	fi
	mkdir -p "$OUT/vm1" "$OUT/vm2"
	OUT=$(cd "$OUT" && pwd -P)
}

udp_port_free() {
	! ss -Hlun "sport = :$1" | grep -q .
}

# Two free UDP ports on 127.0.0.1 (another pair may be running).
pick_ports() {
	local p tries=50

	while ((tries--)); do
		p=$((20000 + (RANDOM * 2) % 40000))
		if udp_port_free "$p" && udp_port_free "$((p + 1))"; then
			echo "$p $((p + 1))"
			return 0
		fi
	done
	die "no free UDP port pair on 127.0.0.1"
}

# netargs N LOCAL_PORT REMOTE_PORT
netargs() {
	echo "-netdev dgram,id=peer,local.type=inet,local.host=127.0.0.1,local.port=$2,remote.type=inet,remote.host=127.0.0.1,remote.port=$3" \
		"-device virtio-net-pci,netdev=peer,mac=52:54:00:00:76:0$1"
}

# guest N LOCAL_PORT REMOTE_PORT: run.sh for guest N; its exit status goes
# to OUT/vmN/.pair-status.
guest() {
	local rc=0

	"$SELF_DIR/run.sh" "${RUN_ARGS[@]}" -o "$OUT/vm$1" -n "$(netargs "$@")" \
		-- env VROCE_PEER="$1" "${CMD[@]}" 2>&1 | sed -u "s/^/[vm$1] /" ||
		rc=${PIPESTATUS[0]}
	echo "$rc" >"$OUT/vm$1/.pair-status"
}

verdict() {
	local rc1 rc2 rc

	rc1=$(<"$OUT/vm1/.pair-status")
	rc2=$(<"$OUT/vm2/.pair-status")
	echo "pair.sh: vm1 exited $rc1, vm2 exited $rc2" >&2
	for rc in 125 124 126; do
		if ((rc1 == rc || rc2 == rc)); then
			return "$rc"
		fi
	done
	((rc1 != 0)) && return "$rc1"
	return "$rc2"
}

main() {
	local ports pid1 pid2

	parse_args "$@"
	read -ra ports <<<"$(pick_ports)"
	rm -f "$OUT"/vm[12]/.pair-status
	guest 1 "${ports[0]}" "${ports[1]}" &
	pid1=$!
	guest 2 "${ports[1]}" "${ports[0]}" &
	pid2=$!
	wait "$pid1" "$pid2" || true
	[[ -f $OUT/vm1/.pair-status && -f $OUT/vm2/.pair-status ]] ||
		die "a guest's runner died"
	verdict
}

main "$@"
