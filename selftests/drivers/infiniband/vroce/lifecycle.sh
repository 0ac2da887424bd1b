#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Device removal racing the other ways a device goes away: "rdma link
# delete" against the removal of its netdev, and module unload against a
# deallocation in progress (started by "rdma link delete" or by the
# netdev's removal). The debugfs knob dealloc_delay_ms holds a deallocation
# open so that the other side lands in it every time; other rounds race
# freely. A round fails on a kernel warning or oops, or if anything is left.
#
# LIFECYCLE_ROUNDS and LIFECYCLE_UNLOADS set the number of rounds of each
# race; LIFECYCLE_FULL=1 runs the 6.12 numbers on the lean kernels too.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma modprobe

DBG=/sys/kernel/debug/vroce
if vroce_lean_kernel && [ -z "${LIFECYCLE_FULL:-}" ]; then
	ROUNDS=${LIFECYCLE_ROUNDS:-60}
	UNLOADS=${LIFECYCLE_UNLOADS:-6}
else
	ROUNDS=${LIFECYCLE_ROUNDS:-120}
	UNLOADS=${LIFECYCLE_UNLOADS:-6}
fi
# The debug kernels: several times slower, and what they check (KASAN,
# lockdep, kmemleak) needs the paths, not the numbers.
if vroce_debug_kernel && [ -z "${LIFECYCLE_FULL:-}" ]; then
	ROUNDS=${LIFECYCLE_ROUNDS:-24}
	UNLOADS=${LIFECYCLE_UNLOADS:-3}
fi
# Long enough for the other side to start while a dealloc waits, even on a
# busy host (a command can take a few hundred ms to start in the VM).
NETDEV_DELAY_MS=500
UNLOAD_DELAY_MS=1000
LANES=3
LANE_LOG=$(mktemp -u /tmp/vroce-lifecycle.XXXXXX)
BG=

cleanup() {
	local k

	[ -n "$BG" ] && kill "$BG" 2>/dev/null
	wait 2>/dev/null
	for ((k = 0; k < LANES; k++)); do
		ip link del "lca$k" 2>/dev/null
	done
	rm -f "$LANE_LOG".*
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# spin_until_dealloc DEV: wait until DEV's dealloc runs: it removes the
# device's debugfs directory, then waits dealloc_delay_ms. Polled every
# 5 ms, a hundredth of that wait: a busy loop would hold one of the
# guest's two CPUs from the processes and kernel work it waits for. The
# bound is a hang guard: on a debug kernel in a busy host "rdma link
# delete" took over 30 s to get there.
spin_until_dealloc() {
	local end=$((SECONDS + 120))

	while [ -d "$DBG/$1" ]; do
		[ "$SECONDS" -lt "$end" ] || { echo "$1 still in debugfs"; return 1; }
		nap 0.005
	done
}

# lane K: the names of lane K's device and netdev (the netdev race runs
# in parallel lanes; the unload race uses lane 0).
lane() {
	DEV=lc$1
	NDEV=lca$1
}

# load_vroce: vroce_load, with no modprobe when what it would load (and
# the dummy netdevs) already is.
load_vroce() {
	local m

	vroce_loaded && return 0
	for m in ib_core ib_uverbs udp_tunnel ip6_udp_tunnel dummy; do
		[ -d "/sys/module/$m" ] || { modprobe dummy && vroce_load; return; }
	done
	insmod "$VROCE_KO"
}

# new_dev DELAY_MS: a dummy netdev NDEV and a device DEV over it, whose
# deallocation will wait DELAY_MS.
new_dev() {
	ip link add "$NDEV" type dummy &&
		rdma link add "$DEV" type vroce netdev "$NDEV" &&
		echo "$1" >"$DBG/$DEV/dealloc_delay_ms"
}

# link_delete DEV: "rdma link delete DEV", again while the rdma tool did
# not see DEV. It looks the name up in a dump of the devices, which ib_core
# sends one device per message and resumes by position: a device of
# another lane that goes away meanwhile shifts the positions and hides the
# next one ("Wrong device name").
link_delete() {
	local i out

	for ((i = 0; i < 10; i++)); do
		out=$(rdma link delete "$1" 2>&1) && return 0
		if [[ $out != *"Wrong device name"* ]] || rdma_dev_gone "$1"; then
			break
		fi
	done
	echo "$out" >&2
	return 1
}

netdev_gone() {
	[ ! -e "/sys/class/net/$NDEV" ]
}

# Round I of the netdev race. I % 3 == 0: "rdma link delete" first, and the
# netdev goes once the device's dealloc runs, while it waits; the
# netdev notifier then finds a device whose unregistration has begun.
# 1: both at once. 2: both at once, the netdev's removal started first.
# In the last two either may unregister the device.
netdev_round() {
	local mode=$(($1 % 3))

	case $mode in
	0)
		new_dev "$NETDEV_DELAY_MS" || return 1
		link_delete "$DEV" &
		BG=$!
		spin_until_dealloc "$DEV" || return 1
		ip link del "$NDEV" || return 1
		bg_wait BG || { echo "rdma link delete failed"; return 1; }
		;;
	1)
		new_dev 0 || return 1
		link_delete "$DEV" 2>/dev/null &
		BG=$!
		ip link del "$NDEV" || return 1
		bg_wait BG
		;;
	2)
		new_dev 0 || return 1
		ip link del "$NDEV" &
		BG=$!
		link_delete "$DEV" 2>/dev/null
		bg_wait BG || { echo "ip link del failed"; return 1; }
		;;
	esac
	wait_for 10 rdma_dev_gone "$DEV" || { echo "$DEV left behind"; return 1; }
	netdev_gone || { echo "$NDEV left behind"; return 1; }
}

# netdev_lane K: lane K's share of the netdev race's rounds.
netdev_lane() {
	local i

	lane "$1"
	for ((i = $1; i < ROUNDS; i += LANES)); do
		if ! netdev_round "$i" ||
		   ! vroce_no_kernel_report netdev-race "$2"; then
			echo "lane $1: round $i of $ROUNDS failed"
			return 1
		fi
	done
}

# The rounds run in LANES parallel lanes, whose removals also race each
# other.
netdev_race() {
	local k taint pids=() rc=0

	load_vroce || return 1
	dmesg_mark netdev-race
	read -r taint </proc/sys/kernel/tainted
	for ((k = 0; k < LANES; k++)); do
		netdev_lane "$k" "$taint" >"$LANE_LOG.$k" 2>&1 &
		pids+=($!)
	done
	for ((k = 0; k < LANES; k++)); do
		wait "${pids[k]}" || { rc=1; cat "$LANE_LOG.$k"; }
	done
	rm -f "$LANE_LOG".*
	[ "$rc" = 0 ] || return 1
	vroce_no_kernel_report netdev-race "$taint" log || return 1
	echo "$ROUNDS rounds in $LANES lanes"
}

# Round I of the unload race: rmmod once the device's dealloc runs, while
# it waits. I % 3 == 0: "rdma link delete" unregistered the device;
# 1: the netdev's removal did (from ib_core's work queue); rmmod must wait
# for the deallocation, and what unregistered the device succeeds.
# 2: rmmod right after "rdma link delete" started, no wait; either may
# unregister the device. Every time the module and the device are gone.
unload_round() {
	local mode=$(($1 % 3)) delay=$UNLOAD_DELAY_MS rc=0

	[ "$mode" != 2 ] || delay=0
	load_vroce && new_dev "$delay" || return 1
	if [ "$mode" = 1 ]; then
		ip link del "$NDEV" &
	elif [ "$mode" = 0 ]; then
		rdma link delete "$DEV" &
	else
		rdma link delete "$DEV" 2>/dev/null &
	fi
	BG=$!
	[ "$mode" = 2 ] || spin_until_dealloc "$DEV" || return 1
	rmmod vroce || { echo "rmmod failed"; return 1; }
	bg_wait BG || rc=$?
	if [ "$rc" != 0 ] && [ "$mode" != 2 ]; then
		echo "mode $mode: device removal failed ($rc)"
		return 1
	fi
	! vroce_loaded || { echo "vroce still loaded"; return 1; }
	rdma_dev_gone "$DEV" || { echo "$DEV left behind"; return 1; }
	netdev_gone || ip link del "$NDEV"
}

unload_race() {
	local i taint

	dmesg_mark unload-race
	read -r taint </proc/sys/kernel/tainted
	for ((i = 0; i < UNLOADS; i++)); do
		if ! unload_round "$i" ||
		   ! vroce_no_kernel_report unload-race "$taint"; then
			echo "round $i of $UNLOADS failed"
			return 1
		fi
	done
	vroce_no_kernel_report unload-race "$taint" log || return 1
	echo "$UNLOADS rounds"
}

lane 0
ktap_print_header
ktap_set_plan 2
check "rdma link delete racing the netdev's removal" netdev_race
check "rmmod waits for deallocations in progress" unload_race
ktap_finished
