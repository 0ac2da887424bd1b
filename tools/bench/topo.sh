#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Sourced in the guest by tools/bench/bench.sh, profile.sh, rip-profile.sh
# and ab.sh: the bench topologies (192.0.2.0/24, RoCE v2 over IPv4) and
# one perftest run.
#
#   rxe-loop    rdma_rxe over veth bla (peer blb up, unused), init_net
#   vroce-loop  vroce over the same veth, init_net
#   vroce-veth  vroce over va in netns bena <-veth-> vroce over vb in benb
#
# topo_up TOPO sets DEV_A/DEV_B (client/server device), GID_A/GID_B (their
# RoCE v2 IPv4 GID indices), SERVER_IP and EXEC_A/EXEC_B (the namespace
# prefix of each side); topo_down TOPO undoes it and unloads the module
# (rdma_rxe and vroce both bind UDP 4791). Needs VROCE_KO.

ADDR_A=192.0.2.1
ADDR_B=192.0.2.2
PORT=18515
DEV_A='' DEV_B='' GID_A='' GID_B='' SERVER_IP=''
EXEC_A=() EXEC_B=()
PAIR_LOG=/tmp/bench-pair.$$
# A command the client runs under (e.g. perf stat -a --), if any.
PAIR_WRAP=()

log() {
	echo "bench: $*" >&2
}

wait_for() {
	local tries=$(($1 * 10))

	shift
	while ! "$@" >/dev/null 2>&1; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		sleep 0.1
	done
}

# gid_v4 DEV ADDR: the index of DEV's RoCE v2 GID for IPv4 address ADDR.
gid_v4() {
	local dir=/sys/class/infiniband/$1/ports/1 t i want

	# shellcheck disable=SC2086 # the four bytes of the address, split
	want=0000:0000:0000:0000:0000:ffff:$(printf '%02x%02x:%02x%02x' ${2//./ })
	for t in "$dir"/gid_attrs/types/*; do
		i=${t##*/}
		[ "$(cat "$t" 2>/dev/null)" = "RoCE v2" ] || continue
		[ "$(cat "$dir/gids/$i" 2>/dev/null)" = "$want" ] &&
			echo "$i" && return 0
	done
	return 1
}

vroce_insmod() {
	modprobe -a ib_core ib_uverbs udp_tunnel ip6_udp_tunnel 2>/dev/null
	[ -d /sys/module/vroce ] || insmod "$VROCE_KO"
}

# loop_up DRIVER: one device over veth bla in init_net.
loop_up() {
	local drv=$1 dev=bench_$1

	if [ "$drv" = rxe ]; then
		modprobe rdma_rxe || return 1
	else
		vroce_insmod || return 1
	fi
	ip link add bla type veth peer name blb &&
		ip addr add "$ADDR_A/24" dev bla &&
		ip link set bla up && ip link set blb up &&
		rdma link add "$dev" type "$drv" netdev bla &&
		wait_for 10 gid_v4 "$dev" "$ADDR_A" || return 1
	DEV_A=$dev DEV_B=$dev SERVER_IP=$ADDR_A
	GID_A=$(gid_v4 "$dev" "$ADDR_A") GID_B=$GID_A
	EXEC_A=() EXEC_B=()
}

loop_down() {
	rdma link delete "bench_$1" 2>/dev/null
	ip link del bla 2>/dev/null
	if [ "$1" = rxe ]; then
		wait_for 30 modprobe -r rdma_rxe
	else
		wait_for 30 rmmod vroce
	fi
}

veth_up() {
	vroce_insmod &&
		ip netns add bena && ip netns add benb &&
		ip -n bena link set lo up && ip -n benb link set lo up &&
		ip -n bena link add va type veth peer name vb netns benb &&
		ip -n bena addr add "$ADDR_A/24" dev va &&
		ip -n benb addr add "$ADDR_B/24" dev vb &&
		ip -n bena link set va up && ip -n benb link set vb up &&
		ip netns exec bena rdma link add bench_va type vroce netdev va &&
		ip netns exec benb rdma link add bench_vb type vroce netdev vb &&
		wait_for 10 gid_v4 bench_va "$ADDR_A" &&
		wait_for 10 gid_v4 bench_vb "$ADDR_B" || return 1
	DEV_A=bench_va DEV_B=bench_vb SERVER_IP=$ADDR_B
	GID_A=$(gid_v4 bench_va "$ADDR_A") GID_B=$(gid_v4 bench_vb "$ADDR_B")
	EXEC_A=(ip netns exec bena) EXEC_B=(ip netns exec benb)
}

veth_down() {
	ip netns exec bena rdma link delete bench_va 2>/dev/null
	ip netns exec benb rdma link delete bench_vb 2>/dev/null
	ip netns del bena 2>/dev/null
	ip netns del benb 2>/dev/null
	# Namespace teardown is asynchronous; the module waits for it.
	wait_for 30 rmmod vroce
}

topo_up() {
	case $1 in
	rxe-loop) loop_up rxe ;;
	vroce-loop) loop_up vroce ;;
	vroce-veth) veth_up ;;
	esac
}

topo_down() {
	case $1 in
	rxe-loop) loop_down rxe ;;
	vroce-loop) loop_down vroce ;;
	vroce-veth) veth_down ;;
	esac
}

listening() {
	"${EXEC_B[@]}" ss -Hltn "sport = :$1" | grep -q .
}

# Hooks run right before and right after the client; callers redefine them.
pair_before() { :; }
pair_after() { :; }

# perftest_pair TOOL ARGS...: TOOL as a server on DEV_B and as a client on
# DEV_A (with -F -u 18 and a fresh port), each under timeout(1); both must
# exit 0. The client's output is in $PAIR_LOG.cli.
perftest_pair() {
	local tool=$1 port=$((PORT++)) srv crc src

	shift
	"${EXEC_B[@]}" timeout 120 "$tool" -d "$DEV_B" -x "$GID_B" -F -u 18 \
		-p "$port" "$@" >"$PAIR_LOG.srv" 2>&1 &
	srv=$!
	if ! wait_for 30 listening "$port"; then
		kill "$srv" 2>/dev/null
		wait "$srv" 2>/dev/null
		log "$tool: the server did not listen"
		return 1
	fi
	pair_before
	"${PAIR_WRAP[@]}" "${EXEC_A[@]}" timeout 120 "$tool" -d "$DEV_A" -x "$GID_A" -F -u 18 \
		-p "$port" "$@" "$SERVER_IP" >"$PAIR_LOG.cli" 2>&1
	crc=$?
	wait "$srv"
	src=$?
	pair_after
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		log "$tool $*: client exit $crc, server exit $src"
		sed 's/^/bench:   client: /' "$PAIR_LOG.cli" | tail -n 5 >&2
		sed 's/^/bench:   server: /' "$PAIR_LOG.srv" | tail -n 5 >&2
		return 1
	fi
}

# perftest_row SIZE: the client's result row for SIZE bytes.
perftest_row() {
	awk -v s="$1" '$1 == s && $2 ~ /^[0-9]+$/ { print; f = 1; exit }
		END { exit !f }' "$PAIR_LOG.cli"
}

# perftest_mibs ROW SIZE WINDOW: the MiB/s of a bandwidth row, from the
# iterations it counts in the measured window (column 2, all QPs) x SIZE
# over WINDOW seconds; fails unless that is a positive number.
perftest_mibs() {
	awk -v size="$2" -v win="$3" '{ v = $2 * size / 1048576 / win }
		END { if (!(v > 0) || v ~ /inf|nan/) exit 1
		      printf "%.3f\n", v }' <<<"$1"
}

pair_cleanup() {
	rm -f "$PAIR_LOG".*
}
