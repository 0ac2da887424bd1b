#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NVMe over Fabrics (RDMA) over vroce: the kernel's nvmet-rdma target
# exports a memory-backed null_blk namespace through one vroce device, the
# kernel's nvme-rdma host connects to it through another, and data written
# through the host comes back byte for byte. This is what kernel consumers
# of verbs do that user space never does: fast registration (ib_alloc_mr,
# ib_map_mr_sg, IB_WR_REG_MR), LOCAL_INV and SEND_WITH_INV, kernel CQs in
# softirq, workqueue and direct polling mode, ib_drain_qp, an SRQ, inline
# data in several receive SGEs.
#
#   [init_net: vrh over nvh 192.0.2.1] ==veth== [vrt over nvt 192.0.2.2]
#         nvme-rdma (host)                         nvmet-rdma (target)
#
# Both ends live in the initial network namespace: nvme-rdma and nvmet-rdma
# create their rdma_cm IDs in init_net whatever namespace nvme-cli or the
# configfs writer runs in (rdma_create_id(&init_net, ...) in both, 6.1 and
# 6.12), so a second namespace cannot hold either side. Two addresses of one
# namespace would normally talk over the loopback device, which rdma_cm
# turns into a loopback connection on one vroce device. Policy routing puts
# the wire back: a table routes each address out of the other end of the
# veth, with the other end's address as source, and is looked up before the
# local table (which moves from rule preference 0 to 1000 meanwhile) by
# locally generated packets (iif lo: rdma_cm's address and route
# resolution) and by lookups bound to the other end (rdma_cm checks that the
# device a connection request came in on routes back to its sender). Packets
# received still find their address local. The rules, the table, nvmet's
# configfs tree and the modules this script loaded are removed again at the
# end.
#
# Cases, IPv4 then IPv6 (each a connect, IO and a disconnect):
#   - IPv4: 2 I/O queues plus a write queue and a poll queue; a 4 KiB
#     write goes inline (the port allows 16 KiB inline data in up to four
#     receive SGEs); a pattern file written with O_DIRECT and read back
#     after dropping caches; odd sizes at odd offsets; polled reads
#     (RWF_HIPRI, completions reaped by IB_POLL_DIRECT).
#   - IPv6: the target's device removed (with the IPv4 port's listener)
#     and created again, nvmet-rdma reloaded to use SRQs (use_srq=1), no
#     inline data beyond the default; pattern and odd IO as above, then a controller
#     reset (queues drained and connected again) and the pattern read back,
#     then the controller deleted (nvme disconnect) under a writer and a
#     reader: it ends within 5 s (60 on the debug kernel), so do the IOs.
# Then: every device's hw_counters moved, no error counter did, and vroce
# unloads (no leaked reference). A debug kernel moves a smaller pattern.
# Each step's time is printed after it (figures, never asserted).
#
# Environment: NVME_MIB (pattern size in MiB: 16, 2 on a debug kernel; the
# IPv6 run moves a quarter), NVME_SRQ=0 (IPv6 without SRQs), NVME_TIMEOUT
# (seconds for nvme connect/disconnect, 120).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TMO=${NVME_TIMEOUT:-120}
TOOLS=(ip rdma nvme dd cmp timeout modprobe python3)
vroce_require "${TOOLS[@]}"

CFG=/sys/kernel/config
NVMET=$CFG/nvmet
NULLB=$CFG/nullb
NQN=nqn.2014-08.org.kernel.vroce:nvme-test-$$
HOSTNQN=
HOSTID=
NB_NAME=vrocenvme$$
NB_DEV=
TABLE=4420
WORK=$(mktemp -d /tmp/vroce-nvme.XXXXXX)
ADDR4_H=192.0.2.1
ADDR4_T=192.0.2.2
ADDR6_H=2001:db8:4420::1
ADDR6_T=2001:db8:4420::2
# Their GIDs, as sysfs shows them.
GID4_H=0000:0000:0000:0000:0000:ffff:c000:0201
GID4_T=0000:0000:0000:0000:0000:ffff:c000:0202
GID6_H=2001:0db8:4420:0000:0000:0000:0000:0001
GID6_T=2001:0db8:4420:0000:0000:0000:0000:0002
# Modules this script loaded, unloaded again at the end (reverse order).
LOADED=()
# The address families whose rules rules_add changed.
RULES_ON=
CTRL=
BDEV=

# Pattern size in MiB: a debug kernel (KASAN, kmemleak) moves less.
MIB=16
! vroce_kasan_kernel || MIB=2
MIB=${NVME_MIB:-$MIB}
# The IPv6 run moves a quarter of it.
MIB6=$(((MIB + 3) / 4))
# The bound on a controller's deletion under IO, and on that IO's end
# after it. A plain disconnect takes 1 s on 6.12, 4 s on the debug kernel;
# under IO 1-4 s on 6.1 and 6.12; on the debug kernel 13 s alone, more late
# in make check: nvme_core's removal of the I/O tag set waits in
# lockdep_unregister_key(), whose cost grows with the lock classes the
# earlier tests registered.
DISC_S=5
! vroce_kasan_kernel || DISC_S=180
IO_BASE_H=0
IO_BASE_T=0
IO_PIDS=()

# modload MOD [PARAM...]: load MOD unless loaded; remember it if we did.
modload() {
	local m=${1//-/_}

	[ -d "/sys/module/$m" ] && return 0
	modprobe "$@" || return 1
	LOADED+=("$m")
}

modules_unload() {
	local i

	for ((i = ${#LOADED[@]} - 1; i >= 0; i--)); do
		modprobe -r "${LOADED[i]}" 2>/dev/null
	done
	LOADED=()
}

# A module the kernel does not have skips the whole script, with its name.
modules_check() {
	local m

	for m in nvme-fabrics nvme-rdma nvmet nvmet-rdma null_blk; do
		[ -d "/sys/module/${m//-/_}" ] || modprobe -n "$m" 2>/dev/null ||
			vroce_skip_all "module $m not available on $(uname -r)"
	done
}

# --- routing over the veth (see the header) ---

# rules_add 4|6 ADDR_H ADDR_T: to each address out of the other end.
rules_add() {
	local ip=(ip "-$1")

	"${ip[@]}" rule add pref 1000 lookup local &&
		"${ip[@]}" rule del pref 0 lookup local || return 1
	RULES_ON="$RULES_ON $1"
	# With its source address: IPv6 would prefer the destination itself
	# (RFC 6724 rule 1), which is not the outgoing device's.
	"${ip[@]}" route add "$3" dev nvh src "$2" table "$TABLE" &&
		"${ip[@]}" route add "$2" dev nvt src "$3" table "$TABLE" &&
		"${ip[@]}" rule add pref 100 iif lo lookup "$TABLE" &&
		"${ip[@]}" rule add pref 101 oif nvt to "$2" lookup "$TABLE" &&
		"${ip[@]}" rule add pref 102 oif nvh to "$3" lookup "$TABLE"
}

rules_del() {
	local ip=(ip "-$1")

	case "$RULES_ON " in *" $1 "*) ;; *) return 0 ;; esac
	"${ip[@]}" rule del pref 100 2>/dev/null
	"${ip[@]}" rule del pref 101 2>/dev/null
	"${ip[@]}" rule del pref 102 2>/dev/null
	"${ip[@]}" route flush table "$TABLE" 2>/dev/null
	"${ip[@]}" rule add pref 0 lookup local &&
		"${ip[@]}" rule del pref 1000 lookup local || return 1
	RULES_ON=${RULES_ON/ $1/}
}

setup_net() {
	vroce_load &&
		ip link add nvh type veth peer name nvt &&
		ip addr add "$ADDR4_H/24" dev nvh &&
		ip addr add "$ADDR4_T/24" dev nvt &&
		ip addr add "$ADDR6_H/64" dev nvh nodad &&
		ip addr add "$ADDR6_T/64" dev nvt nodad &&
		ip link set nvh up && ip link set nvt up &&
		rdma link add vrh type vroce netdev nvh &&
		rdma link add vrt type vroce netdev nvt &&
		wait_for 10 gid_present vrh "$GID4_H" &&
		wait_for 10 gid_present vrt "$GID4_T" &&
		wait_for 10 gid_present vrh "$GID6_H" &&
		wait_for 10 gid_present vrt "$GID6_T" &&
		rules_add 4 "$ADDR4_H" "$ADDR4_T" &&
		rules_add 6 "$ADDR6_H" "$ADDR6_T" || return 1
	# Each address resolves out of the other end, and answers over it.
	ip route get "$ADDR4_T" | grep -q "dev nvh" &&
		ip route get "$ADDR4_H" | grep -q "dev nvt" &&
		ip -6 route get "$ADDR6_T" | grep -q "dev nvh" &&
		ping -q -c 1 -W 5 -I "$ADDR4_H" "$ADDR4_T" &&
		ping -6 -q -c 1 -W 5 -I "$ADDR6_H" "$ADDR6_T"
}

# --- the target: null_blk and nvmet in configfs ---

# A memory-backed null_blk (plain null_blk discards what is written), MIB
# MiB plus room for the odd-offset IO, 512-byte blocks.
nullb_add() {
	local d=$NULLB/$NB_NAME idx

	modload null_blk nr_devices=0 &&
		mkdir "$d" &&
		echo $((MIB + 4)) >"$d/size" &&
		echo 512 >"$d/blocksize" &&
		echo 1 >"$d/memory_backed" &&
		echo 1 >"$d/power" || return 1
	# The disk is named after the configfs item on 6.12, nullb<index> on
	# older kernels.
	idx=$(cat "$d/index")
	NB_DEV=/dev/$NB_NAME
	[ -b "$NB_DEV" ] || NB_DEV=/dev/nullb$idx
	wait_for 10 test -b "$NB_DEV"
}

nullb_del() {
	local d=$NULLB/$NB_NAME

	[ -d "$d" ] || return 0
	echo 0 >"$d/power" && rmdir "$d"
}

subsys_add() {
	local s=$NVMET/subsystems/$NQN

	mkdir "$s" &&
		echo 1 >"$s/attr_allow_any_host" &&
		mkdir "$s/namespaces/1" &&
		echo -n "$NB_DEV" >"$s/namespaces/1/device_path" &&
		echo 1 >"$s/namespaces/1/enable"
}

subsys_del() {
	local s=$NVMET/subsystems/$NQN

	[ -d "$s" ] || return 0
	echo 0 >"$s/namespaces/1/enable"
	rmdir "$s/namespaces/1" && rmdir "$s"
}

# port_add ID ipv4|ipv6 TRADDR [INLINE]: an RDMA port exporting the subsystem.
port_add() {
	local p=$NVMET/ports/$1

	mkdir "$p" &&
		echo rdma >"$p/addr_trtype" &&
		echo "$2" >"$p/addr_adrfam" &&
		echo "$3" >"$p/addr_traddr" &&
		echo 4420 >"$p/addr_trsvcid" || return 1
	if [ -n "${4:-}" ]; then
		echo "$4" >"$p/param_inline_data_size" || return 1
	fi
	ln -s "$NVMET/subsystems/$NQN" "$p/subsystems/$NQN" &&
		wait_for 10 sh -c "rdma res show cm_id | grep -q 'LISTEN.*$3.*:4420'"
}

port_del() {
	local p=$NVMET/ports/$1

	[ -d "$p" ] || return 0
	rm -f "$p/subsystems/$NQN"
	rmdir "$p"
}

# nvmet_rdma_load [use_srq=1]: (re)load nvmet-rdma with these parameters.
nvmet_rdma_load() {
	if [ -d /sys/module/nvmet_rdma ]; then
		rmmod nvmet_rdma || return 1
	fi
	modload nvmet-rdma "$@"
}

target_setup() {
	modload nvmet && modload nvme-fabrics && modload nvme-rdma &&
		nullb_add && subsys_add
}

# IPv4: inline data up to 16 KiB (four pages, so up to five receive SGEs).
port4_add() {
	nvmet_rdma_load && port_add 1 ipv4 "$ADDR4_T" 16384
}

# IPv6: nvmet-rdma reloaded to use SRQs, the default inline size.
port6_add() {
	local srq=use_srq=1

	[ "${NVME_SRQ:-1}" = 1 ] || srq=use_srq=0
	target_dev_del && port_del 1 && nvmet_rdma_load "$srq" &&
		rdma link add vrt type vroce netdev nvt &&
		wait_for 10 gid_present vrt "$GID6_T" &&
		port_add 2 ipv6 "$ADDR6_T"
}

# A port is taken down by removing the target's device first: the port's
# listening rdma_cm ID goes with the device (nvmet-rdma's DEVICE_REMOVAL
# handler), and the port's removal from configfs then has no ID left to
# destroy. Removing the port first destroys the ID (its handler_mutex)
# under nvmet_config_sem, while nvmet-rdma executes a command that arrived
# before its queue's ESTABLISHED event from the rdma_cm handler (holding
# the connection ID's handler_mutex) and takes nvmet_config_sem there
# (nvmet_find_get_subsys()): both mutexes are of one lock class, and
# lockdep reports a possible deadlock (6.12). That order is nvmet's, not
# vroce's; this one also covers nvmet's device removal.
target_dev_del() {
	rdma link delete vrt && wait_for 10 rdma_dev_gone vrt
}

target_teardown() {
	port_del 1
	port_del 2
	subsys_del
	nullb_del
}

# --- the host ---

ctrl_of_nqn() {
	local c

	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn")" = "$NQN" ] || continue
		basename "$c"
		return 0
	done
	return 1
}

# The block device of namespace 1: the multipath head or, without native
# multipath, the controller's own.
bdev_of_nqn() {
	local b

	for b in /sys/block/nvme*n1; do
		[ -e "$b/device/subsysnqn" ] || continue
		[ "$(cat "$b/device/subsysnqn")" = "$NQN" ] || continue
		[ -b "/dev/${b##*/}" ] || continue
		echo "/dev/${b##*/}"
		return 0
	done
	return 1
}

# connect TRADDR [nvme connect options...]
connect() {
	local addr=$1

	shift
	timeout "$TMO" nvme connect -t rdma -a "$addr" -s 4420 -n "$NQN" \
		--hostnqn="$HOSTNQN" --hostid="$HOSTID" "$@" || return 1
	wait_for 30 ctrl_of_nqn && wait_for 30 bdev_of_nqn || return 1
	CTRL=$(ctrl_of_nqn) && BDEV=$(bdev_of_nqn) || return 1
	echo "controller $CTRL, namespace $BDEV," \
		"transport $(cat "/sys/class/nvme/$CTRL/transport")," \
		"address $(cat "/sys/class/nvme/$CTRL/address")"
	[ "$(cat "/sys/class/nvme/$CTRL/transport")" = rdma ]
}

ctrl_gone() {
	! ctrl_of_nqn >/dev/null && [ ! -e "/sys/class/nvme/$CTRL" ]
}

disconnect() {
	local out

	out=$(timeout "$TMO" nvme disconnect -n "$NQN" 2>&1) || {
		echo "$out"
		return 1
	}
	echo "$out"
	grep -q "disconnected 1 controller" <<<"$out" &&
		wait_for 30 ctrl_gone
}

# disconnect_under_io: the controller deleted while a writer and a reader
# keep the I/O queues busy, through its sysfs delete_controller, which is
# what nvme disconnect writes (step 8 runs nvme-cli itself): the bound is
# on the kernel's teardown, not on nvme-cli's start, which on the debug
# kernel late in make check took over 60 s of file lookups on the 9p
# root. The deletion ends within DISC_S, the IO fails within DISC_S after
# it (the namespace is gone), and so does the controller.
disconnect_under_io() {
	local w r d t0

	IO_BASE_H=$(hw_counter vrh rcvd_bytes) &&
		IO_BASE_T=$(hw_counter vrt rcvd_bytes) || return 1
	io_loop if=/dev/zero "of=$BDEV" oflag=direct &
	w=$!
	io_loop "if=$BDEV" of=/dev/null iflag=direct &
	r=$!
	IO_PIDS=("$w" "$r")
	if ! wait_for 10 io_moving; then
		echo "the IO does not move"
		stop_io
		return 1
	fi
	t0=${EPOCHREALTIME//[.,]/}
	(echo 1 >"/sys/class/nvme/$CTRL/delete_controller") >"$VROCE_LOG.disc" 2>&1 &
	d=$!
	# Where a slow one waits (the debug kernel's take seconds).
	if ! wait_for 5 vroce_exited "$d"; then
		echo "controller deletion still running after 5 s, in:"
		sed 's/^/  /' "/proc/$d/stack"
	fi
	if ! wait_for "$DISC_S" vroce_exited "$d"; then
		echo "controller deletion under IO still running after $DISC_S s:"
		sed 's/^/  /' "/proc/$d/stack" 2>/dev/null || echo "  (just ended)"
		stop_io
		return 1
	fi
	cat "$VROCE_LOG.disc"
	echo "deletion under IO: $(((${EPOCHREALTIME//[.,]/} - t0) / 1000)) ms"
	if ! wait "$d"; then
		stop_io
		return 1
	fi
	if ! wait_for "$DISC_S" eval "vroce_exited $w && vroce_exited $r"; then
		echo "IO still running $DISC_S s after the disconnect"
		io_stacks "$w" "$r"
		stop_io
		return 1
	fi
	IO_PIDS=()
	wait_for "$DISC_S" ctrl_gone
}

# stop_io: the IO loops of disconnect_under_io and their dd go (a loop
# left behind would hold the runner's output open).
stop_io() {
	local p

	for p in "${IO_PIDS[@]}"; do
		kill "$p" $(pgrep -P "$p") 2>/dev/null
	done
	IO_PIDS=()
}

# io_stacks PID...: what the IO loops and their dd are waiting for.
io_stacks() {
	local p c

	ls -l "$BDEV" 2>&1 | sed 's/^/  /'
	for p in "$@"; do
		for c in "$p" $(pgrep -P "$p"); do
			echo "  $c: $(tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null)" \
				"state $(awk '/^State/ {print $2}' "/proc/$c/status" 2>/dev/null)"
			sed 's/^/    /' "/proc/$c/stack" 2>/dev/null
		done
	done
}

# io_loop DD_ARGS...: direct IO over the pattern's range until it fails.
# nocreat: once the namespace is gone, dd must not write a regular file
# in its place (devtmpfs takes O_DIRECT on 6.6 and later).
io_loop() {
	while dd "$@" bs=64k count=$((MIB * 16)) conv=nocreat status=none 2>/dev/null; do
		:
	done
}

# io_moving: both devices received a MiB since IO_BASE_H and IO_BASE_T
# (rcvd_bytes): the target's RDMA READs of write data and its RDMA WRITEs
# of read data. The block layer's own statistics are not kept for a
# multipath namespace on every kernel.
io_moving() {
	(($(hw_counter vrh rcvd_bytes) > IO_BASE_H + (1 << 20))) &&
		(($(hw_counter vrt rcvd_bytes) > IO_BASE_T + (1 << 20)))
}

# Drop the page cache, so reads come from the target.
drop_caches() {
	sync && echo 3 >/proc/sys/vm/drop_caches
}

# pattern_io MIB: write MIB MiB of random data with O_DIRECT, read it back
# with O_DIRECT after dropping caches, compare.
pattern_io() {
	local mib=$1 t0 t1 t2

	head -c "$((mib << 20))" /dev/urandom >"$WORK/pattern" || return 1
	t0=$(date +%s%N)
	dd if="$WORK/pattern" of="$BDEV" bs=1M oflag=direct conv=fsync \
		status=none || return 1
	drop_caches
	t1=$(date +%s%N)
	dd if="$BDEV" of="$WORK/back" bs=1M count="$mib" iflag=direct \
		status=none || return 1
	t2=$(date +%s%N)
	cmp "$WORK/pattern" "$WORK/back" || return 1
	# Figures for the log, never asserted.
	echo "write $mib MiB in $(((t1 - t0) / 1000000)) ms," \
		"read in $(((t2 - t1) / 1000000)) ms"
}

# odd_io: direct IO of odd block counts at odd block offsets, past the
# pattern: 512 B (inline), 4 KiB, 4.5 KiB (two pages, unaligned tail),
# 12 KiB and 132.5 KiB; each written and read back, and read again as part
# of one large read of the whole region.
odd_io() {
	local base=$((MIB * 2048)) off=$((MIB * 2048)) n

	: >"$WORK/odd_all"
	for n in 1 8 9 24 265; do
		head -c $((n * 512)) /dev/urandom >"$WORK/odd" || return 1
		dd if="$WORK/odd" of="$BDEV" bs=512 seek="$off" count="$n" \
			oflag=direct status=none || return 1
		dd if="$BDEV" of="$WORK/odd_back" bs=512 skip="$off" \
			count="$n" iflag=direct status=none || return 1
		cmp "$WORK/odd" "$WORK/odd_back" || return 1
		cat "$WORK/odd" >>"$WORK/odd_all"
		off=$((off + n + 3))
		head -c $((3 * 512)) /dev/zero >>"$WORK/odd_all"
		dd if=/dev/zero of="$BDEV" bs=512 seek=$((off - 3)) count=3 \
			oflag=direct status=none || return 1
	done
	drop_caches
	dd if="$BDEV" of="$WORK/odd_back" bs=512 skip="$base" \
		count=$((off - base)) iflag=direct status=none || return 1
	cmp "$WORK/odd_all" "$WORK/odd_back"
}

# polled_io: reads with RWF_HIPRI, which the block layer completes by
# polling a poll queue (nvme-rdma: an IB_POLL_DIRECT CQ), compared with the
# pattern.
polled_io() {
	[ -d "/sys/block/${BDEV#/dev/}/queue" ] || return 1
	python3 - "$BDEV" "$WORK/pattern" <<'EOF'
import mmap, os, sys
dev, pat = sys.argv[1], open(sys.argv[2], "rb").read()
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 65536)
for off, size in ((0, 4096), (65536, 65536), (131072 + 512 * 5, 512 * 9)):
    view = memoryview(buf)[:size]
    n = os.preadv(fd, [view], off, os.RWF_HIPRI)
    if n != size or bytes(view) != pat[off:off + size]:
        sys.exit(f"polled read at {off}, {size} bytes: got {n}, data differs")
print("3 polled reads compared")
EOF
}

ctrl_live() {
	[ "$(cat "/sys/class/nvme/$CTRL/state")" = live ]
}

# reset_reread: reset the controller (every queue drained, its QP
# destroyed, connected again), then read the pattern back once more.
reset_reread() {
	local mib=$1

	echo 1 >"/sys/class/nvme/$CTRL/reset_controller" || return 1
	wait_for 60 ctrl_live || {
		echo "controller $CTRL: $(cat "/sys/class/nvme/$CTRL/state")"
		return 1
	}
	drop_caches
	dd if="$BDEV" of="$WORK/back" bs=1M count="$mib" iflag=direct \
		status=none && cmp "$WORK/pattern" "$WORK/back"
}

# --- counters ---

# Counters that only move when something went wrong.
ERR_COUNTERS=(send_err rx_icrc_encapsulated rcvd_malformed rcvd_opcode_err
	      req_remote_access_errors req_remote_invalid_request
	      resp_remote_access_errors resp_local_length_error
	      req_transport_retries_exceeded req_rnr_retries_exceeded)

counters_ok() {
	local d c v rc=0

	for d in vrh vrt; do
		for c in sent_pkts rcvd_pkts rx_write_requests \
			 rx_read_requests retrans_pkts local_ack_timeout_err \
			 rnr_nak_retry_err out_of_sequence duplicate_request; do
			v=$(hw_counter "$d" "$c") || return 1
			echo "$d $c $v"
		done
		for c in sent_pkts rcvd_pkts; do
			[ "$(hw_counter "$d" "$c")" -gt 0 ] || {
				echo "$d: $c did not move"
				rc=1
			}
		done
		for c in "${ERR_COUNTERS[@]}"; do
			v=$(hw_counter "$d" "$c") || return 1
			[ "$v" = 0 ] || {
				echo "$d: $c = $v"
				rc=1
			}
		done
	done
	# The target's responder saw the host's RDMA READs of write data
	# (nvmet pulls it) and the host's saw RDMA WRITEs of read data.
	if [ "$(hw_counter vrh rx_read_requests)" = 0 ] ||
	   [ "$(hw_counter vrh rx_write_requests)" = 0 ]; then
		echo "vrh: no RDMA READ or WRITE requests from the target"
		rc=1
	fi
	return $rc
}

teardown_all() {
	local rc=0

	[ -z "$CTRL" ] || ctrl_gone || nvme disconnect -n "$NQN" >/dev/null 2>&1
	# The devices first (see target_dev_del).
	rdma link delete vrh 2>/dev/null
	rdma link delete vrt 2>/dev/null
	target_teardown || rc=1
	ip link del nvh 2>/dev/null
	rules_del 4 || rc=1
	rules_del 6 || rc=1
	return $rc
}

unload_all() {
	modules_unload
	vroce_unload && ! vroce_loaded
}

cleanup() {
	stop_io
	teardown_all
	modules_unload
	vroce_unload
	rm -rf "$WORK"
	vroce_cleanup
}
trap cleanup EXIT

# --- main ---

modules_check
modprobe -a configfs 2>/dev/null
[ -d "$CFG/nvmet" ] || mountpoint -q "$CFG" || mount -t configfs none "$CFG"
HOSTID=$(cat /proc/sys/kernel/random/uuid)
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:$HOSTID

ktap_print_header
ktap_set_plan 17

# step DESC CMD...: one result; CMD's output (figures, or what failed) is
# shown either way. After a failure the steps that depend on it are skipped.
OK=1
WHY=
step() {
	local desc=$1 t0

	shift
	if [ "$OK" != 1 ]; then
		ktap_test_skip "$desc: $WHY"
		return 1
	fi
	t0=$SECONDS
	if "$@" >"$VROCE_LOG" 2>&1; then
		sed 's/^/# /' "$VROCE_LOG"
		ktap_test_pass "$desc"
		ktap_print_msg "$((SECONDS - t0)) s"
		return 0
	fi
	sed 's/^/# /' "$VROCE_LOG"
	ktap_test_fail "$desc"
	ktap_print_msg "$((SECONDS - t0)) s"
	OK=0 WHY="an earlier step failed"
	return 1
}

step "two vroce devices over a veth, routed over it" setup_net
step "nvmet: memory-backed null_blk namespace in a subsystem" target_setup
# IPv4: inline data up to 16 KiB, a write queue and a poll queue.
step "nvmet-rdma ipv4 port $ADDR4_T:4420 listens" \
	port4_add
step "ipv4 nvme connect -t rdma" \
	connect "$ADDR4_T" --nr-io-queues=2 --nr-write-queues=1 \
	--nr-poll-queues=1
step "ipv4 $MIB MiB pattern written and read back (O_DIRECT)" \
	pattern_io "$MIB"
step "ipv4 odd sizes at odd offsets (O_DIRECT)" odd_io
step "ipv4 polled reads (RWF_HIPRI)" polled_io
step "ipv4 nvme disconnect" disconnect
# A failed IPv4 run still lets IPv6 try, on a fresh port.
[ "$OK" = 1 ] || { nvme disconnect -n "$NQN" >/dev/null 2>&1; OK=1; }
step "target device re-created, nvmet-rdma use_srq=1, ipv6 port $ADDR6_T 4420 listens" \
	port6_add
step "ipv6 nvme connect -t rdma" connect "$ADDR6_T" --nr-io-queues=2
step "ipv6 $MIB6 MiB pattern written and read back (O_DIRECT)" \
	pattern_io "$MIB6"
step "ipv6 odd sizes at odd offsets (O_DIRECT)" odd_io
step "ipv6 controller reset, pattern read back again" \
	reset_reread "$MIB6"
step "ipv6 controller deleted under IO, in $DISC_S s" disconnect_under_io
OK=1
step "hw_counters moved, no error counter did" counters_ok
step "nvmet, devices and routing torn down" teardown_all
step "vroce unloads (no leaked reference)" \
	unload_all
ktap_finished
