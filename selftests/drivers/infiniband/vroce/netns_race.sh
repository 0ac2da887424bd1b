#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Device creation racing the netdev's namespace: "rdma link add" inside a
# namespace S while its netdev moves to another namespace X, or while S is
# deleted; and, with the RDMA subsystem in exclusive namespace mode, the
# netdev's removal racing "rdma dev set netns".
#
# The debugfs knob link_add_delay_ms holds "rdma link add" after it
# took S's sockets and before it publishes the device, so that the move
# lands in that window every time; other rounds race freely. Each step
# must end within 5 s (30 s in a free round, which races the other lanes'
# namespace churn), nothing may be left (devices, netdevs, sockets),
# namespace teardown must not stall, and the kernel must not warn.
#
# NETNS_RACE_ROUNDS sets the number of free rounds (30, in three lanes; 8
# in one on the debug kernels); NETNS_RACE_FULL=1 runs 60 (and more
# exclusive-mode rounds) everywhere.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma ss

PARAM=/sys/kernel/debug/vroce/link_add_delay_ms
if [ -z "${NETNS_RACE_FULL:-}" ]; then
	ROUNDS=${NETNS_RACE_ROUNDS:-30}
	EXCL_ROUNDS=10
else
	ROUNDS=${NETNS_RACE_ROUNDS:-60}
	EXCL_ROUNDS=15
fi
# The window the deterministic rounds move the netdev in; the most the
# knob allows. The move starts once S's socket exists, well inside it.
ADD_DELAY_MS=1000
# The free rounds' parallel lanes; one on the debug kernels, for time.
LANES=3
if vroce_debug_kernel && [ -z "${NETNS_RACE_FULL:-}" ]; then
	LANES=1
	ROUNDS=${NETNS_RACE_ROUNDS:-8}
	EXCL_ROUNDS=5
fi
STEP_S=5
# A free round's steps race the other lanes' namespace creations and
# deletions, which hold RTNL: its waits are hang guards with this bound;
# one that expires says where the command and every blocked task wait
# (vroce_stuck_report).
FREE_STEP_S=30
# In shared mode ib_core gives a device a sysfs copy in every namespace
# that has not gone through its exit yet, dying ones included: "rdma link
# add" on the debug kernel took 0.5 s with no other namespace, 7 s with 50
# (rdma_rxe's: 75 s). A free round starts once the namespaces deleted
# before it are gone, waiting up to SETTLE_S for the kernel to catch up;
# its link add then pays for the live lanes' namespaces only.
SETTLE_S=60
ERR=$(mktemp /tmp/vroce-netns-race.XXXXXX)
BG=
NS_S=
NS_X=

cleanup() {
	[ -n "$BG" ] && kill "$BG" 2>/dev/null
	wait 2>/dev/null
	[ -w "$PARAM" ] && echo 0 >"$PARAM"
	for ((k = 0; k < LANES; k++)); do
		rdma link delete "nr$k" 2>/dev/null
	done
	ip link del nra 2>/dev/null
	ns_del_all
	wait_for 10 rdma system set netns shared
	vroce_unload
	rm -f "$ERR"
	vroce_cleanup
}
trap cleanup EXIT

# No RDMA device in init_net, as its sysfs (this script's) lists them: a
# device leaves sysfs during its unregistration, after "rdma link show"
# stopped listing it.
no_vroce_device() {
	local d

	for d in /sys/class/infiniband/*; do
		[ ! -e "$d" ] || return 1
	done
}

# bounded DESC CMD...: run CMD in the background; fail if it takes more
# than STEP_S (a command stuck in the kernel is left behind, reported).
bounded() {
	local desc="$1" pid

	shift
	"$@" 2>/dev/null &
	pid=$!
	if ! wait_for "$STEP_S" vroce_exited "$pid"; then
		echo "$desc: still running after $STEP_S s"
		vroce_stuck_report "$pid"
		return 1
	fi
	wait "$pid"
}

# lane K: the names of lane K's objects (free rounds run in parallel
# lanes; the other checks use lane 0).
lane() {
	LANE=$1
	DEV=nr$1
	VA=nra$1
	VB=nrb$1
	NS_S=nrs$1-$$
	NS_X=nrx$1-$$
}

dev_gone() {
	[ ! -e "/sys/class/infiniband/$DEV" ]
}

# new_pair: namespaces S and X, a veth pair VA/VB in S, up. One ip
# process per namespace (each costs a tenth of a second in the VM, half a
# second on the debug kernel); the names carry the script's "-PID" suffix,
# which ns_del_all deletes. "up" in the link add would fail for the peer,
# which veth brings up before it links the pair (ENOTCONN).
new_pair() {
	# Whatever a failed round left (ip netns add makes /run/netns/NAME).
	if [ -e "/run/netns/$NS_S" ] || [ -e "/run/netns/$NS_X" ]; then
		del_pair
	fi
	ip -batch - <<-EOF || return 1
		netns add $NS_S
		netns add $NS_X
		link add $VA netns $NS_S type veth peer name $VB netns $NS_S
	EOF
	ip -n "$NS_S" -batch - <<-EOF
		link set $VA up
		link set $VB up
	EOF
}

del_pair() {
	ip -force -batch - >/dev/null 2>&1 <<-EOF
		netns del $NS_S
		netns del $NS_X
	EOF
}

# netns_barrier SECONDS: namespace teardown has caught up, within
# SECONDS: a fresh namespace's exit deletes the init_net end of a veth
# pair whose other end it holds. The kernel tears namespaces down in the
# order they were released, in batches whose every pernet exit runs before
# the netdevs go, so every namespace deleted earlier has gone through
# ib_core's exit too. A namespace whose exit waits forever stalls every
# later one.
netns_barrier() {
	local ns=nrp$LANE-$$ p=nrp$LANE

	ip -batch - <<-EOF || return 1
		netns add $ns
		link add $p type veth peer name nrq$LANE netns $ns
		netns del $ns
	EOF
	# p leaves init_net's sysfs (this script's) after ip link show stops
	# finding it.
	if ! wait_for "$1" test ! -e "/sys/class/net/$p"; then
		echo "namespace teardown stalled: $p still exists after $1 s"
		ip link del "$p"
		return 1
	fi
}

# ns_roce_socket NS: vroce's RoCE v2 UDP socket (port 4791) is open in NS:
# roce_socket with one process, ss switching to NS itself.
ns_roce_socket() {
	[ -n "$(ss -N "$1" -Huan "sport = :4791")" ]
}

# After a failure: leave nothing that would stall the namespaces' exit.
forget_device() {
	rdma link show
	rdma link delete "$DEV" 2>/dev/null
}

# add_opened_socket PID NS: process PID, in namespace NS, sees a UDP
# socket on port 4791 (0x12B7). Builtins only: a poll that started
# processes took a second on a guest beside another, longer than the
# window it must find the socket in.
add_opened_socket() {
	local f addr

	[ "/proc/$1/ns/net" -ef "/run/netns/$2" ] || return 1
	for f in "/proc/$1/net/udp" "/proc/$1/net/udp6"; do
		while read -r _ addr _; do
			[[ $addr != *:12B7 ]] || return 0
		done 2>/dev/null <"$f"
	done
	return 1
}

# Round I with the window held: I % 2 == 0 moves the netdev to X, which
# must fail "rdma link add" with ENODEV and leave nothing behind in S;
# 1 deletes S, which cannot tear S down before "rdma link add" returned
# (it holds S), after which the device goes with S's netdevs.
# The window opens when S's socket appears, after the last poll that did
# not see it; a move that ended later than the window can have closed
# (a slow VM) proves nothing: the round returns 2, to be run again.
window_round() {
	local rc=0 unseen start t

	new_pair || return 1
	echo "$ADD_DELAY_MS" >"$PARAM" || return 1
	start=${EPOCHREALTIME//[.,]/}
	start=$((start / 1000))
	unseen=$start
	ip netns exec "$NS_S" rdma link add "$DEV" type vroce netdev "$VA" 2>"$ERR" &
	BG=$!
	while :; do
		t=${EPOCHREALTIME//[.,]/}
		add_opened_socket "$BG" "$NS_S" && break
		unseen=$((t / 1000))
		if ! kill -0 "$BG" 2>/dev/null ||
		   ((unseen - start > STEP_S * 1000)); then
			echo "rdma link add did not open S's socket"
			return 1
		fi
	done
	if (($1 % 2 == 0)); then
		ip -n "$NS_S" link set "$VA" netns "$NS_X" || return 1
		t=${EPOCHREALTIME//[.,]/}
		if ((t / 1000 - unseen >= ADD_DELAY_MS * 9 / 10)); then
			bg_wait BG
			echo 0 >"$PARAM"
			rdma link delete "$DEV" 2>/dev/null
			del_pair
			wait_for "$STEP_S" dev_gone || return 1
			return 2
		fi
		bg_wait BG || rc=$?
		echo 0 >"$PARAM"
		if [ "$rc" = 0 ]; then
			echo "rdma link add succeeded over a netdev that left its namespace:"
			forget_device
			return 1
		fi
		if [[ $(<"$ERR") != *"No such device"* ]]; then
			echo "expected ENODEV, got: $(cat "$ERR")"
			return 1
		fi
		dev_gone || { echo "device left behind"; forget_device; return 1; }
		! ns_roce_socket "$NS_S" || { echo "S's socket left behind"; return 1; }
		del_pair
	else
		ip netns del "$NS_S"
		bg_wait BG || rc=$?
		echo 0 >"$PARAM"
		echo "link add while S is deleted: exit status $rc"
		del_pair
	fi
	wait_for "$STEP_S" dev_gone ||
		{ echo "device left behind"; forget_device; return 1; }
	netns_barrier "$STEP_S"
}

# Two moves and two deletions in the window; up to 10 tries.
window_race() {
	local i done=0 rc taint

	vroce_load || return 1
	dmesg_mark netns-window
	read -r taint </proc/sys/kernel/tainted
	for ((i = 0; i < 10 && done < 4; i++)); do
		rc=0
		window_round "$done" || rc=$?
		if [ "$rc" = 2 ]; then
			echo "try $i: the move came too late, again"
			continue
		fi
		if [ "$rc" != 0 ]; then
			echo "round $done failed"
			return 1
		fi
		done=$((done + 1))
	done
	[ "$done" = 4 ] || { echo "only $done rounds in the window"; return 1; }
	vroce_no_kernel_report netns-window "$taint" log
}

# After a move: a device that "rdma link add" created holds the sockets
# of its netdev's namespace, and S's are gone. A device created before the
# move is removed by it; one created after ib_core found VA in S and
# before vroce read its namespace is X's.
sockets_follow_netdev() {
	if ! wait_for "$STEP_S" eval "! ns_roce_socket $NS_S"; then
		echo "S holds a RoCE socket after its netdev moved:"
		rdma link show
		return 1
	fi
	if ! wait_for "$STEP_S" eval "dev_gone || ns_roce_socket $NS_X"; then
		echo "a device over $VA in X without X's RoCE socket"
		return 1
	fi
}

# Round I, free: "rdma link add" in S, with a delay of 0..(I % 4) * 3 ms,
# against the netdev's move to X (I even) or the deletion of S, started
# after a random pause of up to 9 ms.
free_round() {
	local rc=0 STEP_S=$FREE_STEP_S

	netns_barrier "$SETTLE_S" && new_pair || return 1
	echo "$((RANDOM % ($1 % 4 * 3 + 1)))" >"$PARAM" || return 1
	ip netns exec "$NS_S" rdma link add "$DEV" type vroce netdev "$VA" \
		2>/dev/null &
	BG=$!
	nap "0.00$((RANDOM % 10))"
	if (($1 % 2 == 0)); then
		bounded "ip link set netns" ip -n "$NS_S" link set "$VA" \
			netns "$NS_X" || return 1
	else
		ip netns del "$NS_S"
	fi
	if ! wait_for "$STEP_S" vroce_exited "$BG"; then
		echo "rdma link add still running after $STEP_S s"
		vroce_stuck_report "$BG"
		return 1
	fi
	bg_wait BG || rc=$?
	(($1 % 2)) || sockets_follow_netdev || { forget_device; return 1; }
	del_pair
	if ! wait_for "$STEP_S" dev_gone; then
		echo "round $1 (link add: $rc): $DEV left behind"
		forget_device
		return 1
	fi
}

# free_lane K: lane K's share of the free rounds.
free_lane() {
	local i

	lane "$1"
	for ((i = $1; i < ROUNDS; i += LANES)); do
		if ! free_round "$i"; then
			echo "lane $1: round $i of $ROUNDS failed"
			return 1
		fi
	done
}

# The free rounds, in LANES parallel lanes: "rdma link add" calls in
# different namespaces also race each other.
free_race() {
	local k taint pids=() rc=0

	vroce_load || return 1
	dmesg_mark netns-free
	read -r taint </proc/sys/kernel/tainted
	# The earlier scripts' namespaces may still be going.
	netns_barrier "$SETTLE_S" || return 1
	for ((k = 0; k < LANES; k++)); do
		free_lane "$k" >"$ERR.lane$k" 2>&1 &
		pids+=($!)
	done
	for ((k = 0; k < LANES; k++)); do
		wait "${pids[k]}" || { rc=1; cat "$ERR.lane$k"; }
	done
	rm -f "$ERR".lane*
	echo 0 >"$PARAM"
	[ "$rc" = 0 ] || { rdma link show; return 1; }
	wait_for "$STEP_S" no_vroce_device || { rdma link show; return 1; }
	netns_barrier "$STEP_S" || return 1
	vroce_no_kernel_report netns-free "$taint" log || return 1
	echo "$ROUNDS rounds in $LANES lanes"
}

# ib_core only switches modes while init_net is the only namespace.
exclusive_mode() {
	rdma system set netns exclusive 2>/dev/null
}

# dev_gone_everywhere NS: no vroce device in init_net nor in NS.
dev_gone_everywhere() {
	no_vroce_device && [ -z "$(ip netns exec "$1" rdma link show)" ]
}

# nr0_gone_everywhere NS SECONDS: dev_gone_everywhere NS within SECONDS
# (twice that when it fails). The poll looks for nr0's debugfs directory,
# which is in no namespace and goes with the device's dealloc, after its
# unregistration: the processes that look into NS run once, not each poll.
nr0_gone_everywhere() {
	wait_for "$2" test ! -e /sys/kernel/debug/vroce/nr0
	wait_for "$2" dev_gone_everywhere "$1"
}

# new_x: a namespace X for nr0, its name in x. No ns_add: its lo is not
# used, and ns_del_all finds X by its "-PID" suffix.
new_x() {
	x=nrx-$$
	ip netns add "$x"
}

# Round I in exclusive mode: nr0 over nra (init_net) moves to X while nra
# is removed, both started at once (I odd: the removal first). The
# netdev's removal must remove the device wherever it is, and nra must go:
# a lost netdev event leaves it held forever.
exclusive_round() {
	local x pid

	new_x || return 1
	ip link add nra up type veth peer name nrb &&
		rdma link add nr0 type vroce netdev nra || return 1
	if (($1 % 2)); then
		ip link del nra 2>/dev/null &
		pid=$!
		rdma dev set nr0 netns "$x" 2>/dev/null
	else
		rdma dev set nr0 netns "$x" 2>/dev/null &
		ip link del nra 2>/dev/null &
		pid=$!
	fi
	if ! wait_for "$STEP_S" vroce_exited "$pid"; then
		echo "ip link del nra still running after $STEP_S s"
		return 1
	fi
	wait
	if ! nr0_gone_everywhere "$x" "$STEP_S"; then
		echo "nr0 left behind"
		return 1
	fi
	ip netns del "$x"
}

# The mode switch needs no other namespace to exist. The kernel tears
# deleted namespaces down in the background, and after the previous
# scripts' hundreds of them that takes a while on a TCG guest: up to a
# minute, then the namespaces still there are listed.
exclusive_race() {
	local i taint x

	vroce_load || return 1
	if ! wait_for 60 exclusive_mode; then
		echo "cannot switch to exclusive mode:"
		rdma system set netns exclusive
		lsns -t net 2>&1
		ip netns list 2>&1
		return 1
	fi
	dmesg_mark netns-excl
	read -r taint </proc/sys/kernel/tainted
	# vroce supports the move: the device leaves init_net for X.
	new_x || return 1
	ip link add nra type veth peer name nrb &&
		rdma link add nr0 type vroce netdev nra &&
		rdma dev set nr0 netns "$x" || return 1
	# X does not see nra: rdma link shows a netdev only in its namespace.
	if no_vroce_device && ip netns exec "$x" rdma link show nr0/1; then
		echo "nr0 moved to X"
	else
		echo "rdma dev set netns did not move nr0"
		rdma link show
		return 1
	fi
	ip link del nra
	nr0_gone_everywhere "$x" "$STEP_S" ||
		{ echo "nr0 left behind in X"; return 1; }
	ip netns del "$x"
	for ((i = 0; i < EXCL_ROUNDS; i++)); do
		if ! exclusive_round "$i"; then
			echo "round $i of $EXCL_ROUNDS failed"
			return 1
		fi
	done
	if ! wait_for 10 rdma system set netns shared; then
		echo "cannot switch back to shared mode"
		return 1
	fi
	vroce_no_kernel_report netns-excl "$taint" log || return 1
	echo "$EXCL_ROUNDS rounds"
}

lane 0
ktap_print_header
ktap_set_plan 3
check "rdma dev set netns racing the netdev's removal (exclusive mode)" exclusive_race
if vroce_debug_kernel; then
	# Measured: the move alone outlasts the 1 s the knob allows.
	ktap_test_skip "rdma link add fails when its netdev changes namespace meanwhile: a namespace move outlasts the window on the debug kernel"
else
	check "rdma link add fails when its netdev changes namespace meanwhile" window_race
fi
check "rdma link add racing netns moves and namespace deletion" free_race
ktap_finished
