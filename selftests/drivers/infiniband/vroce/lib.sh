#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers for the vroce selftests: KTAP output (from kselftest's
# ktap_helpers.sh), module loading, namespaces, and waiting.
#
# Environment:
#   VROCE_KO   path of the vroce.ko to test (default: build/<uname -r>/vroce.ko
#              of the repository these tests come from)

# The kselftest framework sits three levels up, in the build tree and in an
# installed tree alike (not resolved through symlinks on purpose).
VROCE_LIB_DIR=${BASH_SOURCE[0]%/*}
VROCE_KTAP="$VROCE_LIB_DIR/../../../kselftest/ktap_helpers.sh"
if [ ! -f "$VROCE_KTAP" ]; then
	echo "1..0 # SKIP kselftest framework not found at $VROCE_KTAP"
	exit 4
fi
# shellcheck source=/dev/null
source "$VROCE_KTAP"

# Builtins where they do (a process start is dear on the debug kernel).
VROCE_SRC_DIR=$(readlink -f "${BASH_SOURCE[0]}")
VROCE_SRC_DIR=${VROCE_SRC_DIR%/*}
VROCE_REPO=${VROCE_SRC_DIR%/*/*/*/*}
read -r VROCE_KREL </proc/sys/kernel/osrelease
VROCE_KO=${VROCE_KO:-$VROCE_REPO/build/$VROCE_KREL/vroce.ko}
VROCE_BIN=${VROCE_BIN:-$VROCE_LIB_DIR}
VROCE_NETNS=()
VROCE_LOG=$(mktemp /tmp/vroce-test.XXXXXX)

vroce_skip_all() {
	ktap_print_header
	ktap_skip_all "$*"
	exit "$KSFT_SKIP"
}

# The kernels make check runs leaner matrices on (each script's *_FULL=1
# runs everything): the debug kernels (KASAN, lockdep, kmemleak; or KCSAN:
# several times slower), and every kernel but 6.12, whose matrices are
# the largest: on the others only ib_core and the kernel APIs differ. Two
# VMs share make check's two cores. The stress and fuzz scripts (kill,
# netem, netns_race, ring_fuzz, teardown) run the same counts on every
# kernel, fewer on the debug kernels; their knobs and make soak run more.
vroce_debug_kernel() {
	vroce_kasan_kernel || [ -e /sys/kernel/debug/kcsan ]
}

vroce_lean_kernel() {
	vroce_debug_kernel && return 0
	case $VROCE_KREL in 6.12.*) return 1 ;; esac
	return 0
}

# vroce_kasan_kernel: the debug kernel with KASAN (lockdep, kmemleak too,
# unless booted with kmemleak=off), where memory-safety bugs show.
# vroce_lean_data_path: a lean kernel that is not that one (6.1, 7.2,
# KCSAN), where a script whose data-path cases all run under KASAN may run
# fewer of them.
vroce_kasan_kernel() {
	[ -e /sys/kernel/debug/kmemleak ]
}

vroce_lean_data_path() {
	vroce_lean_kernel && ! vroce_kasan_kernel
}

# Skip the whole script unless we are root and the tools we need exist.
vroce_require() {
	local tool

	[ "$EUID" = 0 ] || vroce_skip_all "must run as root"
	for tool in "$@"; do
		command -v "$tool" >/dev/null ||
			vroce_skip_all "$tool not installed"
	done
	[ -f "$VROCE_KO" ] || vroce_skip_all "no module at $VROCE_KO"
}

# check DESC CMD...: one KTAP result; CMD's output is shown on failure only
# (always with VROCE_VERBOSE=1; with VROCE_TIMES=1, how long CMD took too).
check() {
	local desc="$1" t0=$SECONDS

	shift
	if "$@" >"$VROCE_LOG" 2>&1; then
		[ -z "${VROCE_VERBOSE:-}" ] || sed 's/^/# /' "$VROCE_LOG"
		ktap_test_pass "$desc"
	else
		sed 's/^/# /' "$VROCE_LOG"
		ktap_test_fail "$desc"
	fi
	[ -z "${VROCE_TIMES:-}" ] || ktap_print_msg "$((SECONDS - t0)) s"
}

# fails_with ERRTEXT CMD...: CMD fails and prints ERRTEXT (e.g. the strerror
# of the expected errno).
fails_with() {
	local want="$1" out

	shift
	if out=$("$@" 2>&1); then
		echo "succeeded, expected failure with '$want': $*"
		return 1
	fi
	if [[ $out != *"$want"* ]]; then
		echo "expected '$want' from: $*"
		echo "got: $out"
		return 1
	fi
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
wait_for() {
	local tries=$(($1 * 10))

	shift
	while ! "$@" >/dev/null 2>&1; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		nap 0.1
	done
}

# vroce_exited PID: PID has exited: it is gone, or a zombie. kill -0
# succeeds on a zombie, and a wait loop of builtins (wait_for, nap) starts
# no process after which this shell would reap one: such a loop reported
# an "ip" as running for a whole minute, and its /proc entry was gone as
# soon as the report started a process.
vroce_exited() {
	local state=

	read -r _ _ state _ 2>/dev/null <"/proc/$1/stat"
	[ -z "$state" ] || [ "$state" = Z ]
}

# vroce_proc_is PID COMM: PID runs the program COMM.
vroce_proc_is() {
	local comm

	read -r comm 2>/dev/null <"/proc/$1/comm" && [ "$comm" = "$2" ]
}

# vroce_stuck_report PID: where PID, a command that outlived its bound, and
# every task in D state wait in the kernel, a line each: "PID (comm) state:
# innermost frames". One awk finds the D-state tasks: a process per task
# is slow on a debug kernel.
vroce_stuck_report() {
	local d

	for d in "/proc/$1" $(awk -v me="/proc/$1/stat" \
			'$3 == "D" && FILENAME != me { print FILENAME }' \
			/proc/[0-9]*/stat 2>/dev/null); do
		d=${d%/stat}
		echo "${d#/proc/} ($(cat "$d/comm" 2>/dev/null))" \
			"$(awk '{ print $3 }' "$d/stat" 2>/dev/null):" \
			"$(sed 's/^\[<[^>]*>\] //; s/+0x.*//' "$d/stack" 2>/dev/null |
			   head -n 8 | paste -sd ' ')"
	done
}

# nap S: sleep S seconds without starting a process (sleep(1) costs about
# 0.1 s more in a TCG guest): a read that times out on a pipe with no
# data, whose write end this shell holds open.
nap() {
	[ -n "${VROCE_NAP_FD:-}" ] || exec {VROCE_NAP_FD}<> <(:)
	read -rt "$1" -u "$VROCE_NAP_FD" _ || :
}

# dmesg_since MARK: kernel messages after the line "vroce-test: MARK".
dmesg_mark() {
	echo "vroce-test: $1" >/dev/kmsg
}

dmesg_since() {
	dmesg | sed -n "/vroce-test: $1\$/,\$p"
}

# Taint flags of a kernel warning (W), an oops (D) and a bad page or
# KASAN report (B).
VROCE_TAINT_REPORT=$(((1 << 9) | (1 << 7) | (1 << 5)))

vroce_taint() {
	local taint

	read -r taint </proc/sys/kernel/tainted
	echo "$taint"
}

# vroce_no_kernel_report MARK TAINT [log]: no new taint flag of a report
# since the taint was TAINT (a file read, cheap after every round) and,
# with "log", no warning, BUG, oops or netdev reference leak in the log
# since MARK (dmesg_mark).
vroce_no_kernel_report() {
	local taint

	read -r taint </proc/sys/kernel/tainted
	if (((taint & ~$2) & VROCE_TAINT_REPORT)); then
		echo "kernel taint went from $2 to $taint"
		dmesg_since "$1" | tail -n 40
		return 1
	fi
	[ -z "${3:-}" ] || ! dmesg_since "$1" |
		grep -E -m 5 'WARNING:|BUG:|Oops|KASAN|general protection|waiting for .* to become free'
}

# Loaded already: no modprobe (a process start costs most on the debug
# kernel, and some scripts load vroce once a round).
vroce_modprobe_deps() {
	[ -d /sys/module/ib_uverbs ] && [ -d /sys/module/udp_tunnel ] &&
		[ -d /sys/module/ip6_udp_tunnel ] && return 0
	modprobe -a ib_core ib_uverbs udp_tunnel ip6_udp_tunnel 2>/dev/null
	# Built-in on some kernels: only fail if ib_uverbs is really missing.
	[ -d /sys/module/ib_uverbs ]
}

vroce_loaded() {
	[ -d /sys/module/vroce ]
}

vroce_load() {
	vroce_loaded && return 0
	vroce_modprobe_deps || return 1
	insmod "$VROCE_KO"
}

vroce_unload() {
	vroce_loaded || return 0
	rmmod vroce
}

# ns_add NAME: create a namespace named NAME-<pid>, print its name.
ns_add() {
	local ns="$1-$$"

	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up
	VROCE_NETNS+=("$ns")
	echo "$ns"
}

# Every namespace of this script, in one ip batch: each is named NAME-PID
# (ns_add's, and those a script names itself), so the glob finds those
# made in a command substitution (NS=$(ns_add a)) too, whose record in
# VROCE_NETNS was lost with the subshell.
ns_del_all() {
	local ns cmds=

	for ns in /run/netns/*-"$$"; do
		[ -e "$ns" ] && cmds+="netns del ${ns##*/}"$'\n'
	done
	[ -z "$cmds" ] || ip -force -batch - <<<"$cmds" >/dev/null 2>&1
	VROCE_NETNS=()
}

rdma_dev_exists() {
	[ -d "/sys/class/infiniband/$1" ]
}

rdma_dev_gone() {
	! rdma_dev_exists "$1"
}

# The netdev bound to rdma device $1, as "rdma link" reports it.
rdma_dev_netdev() {
	rdma link show "$1/1" | sed -n 's/.* netdev \([^ ]*\).*/\1/p'
}

port_attr() {
	cat "/sys/class/infiniband/$1/ports/1/$2"
}

# vroce_veth_dev DEV NDEV PEER: load vroce, create the veth pair NDEV/PEER
# (both up) and a vroce device DEV over NDEV, and wait for its first GID.
vroce_veth_dev() {
	vroce_load &&
		ip link add "$2" type veth peer name "$3" &&
		ip link set "$2" up && ip link set "$3" up &&
		rdma link add "$1" type vroce netdev "$2" &&
		wait_for 10 test -e "/sys/class/infiniband/$1/ports/1/gids/0"
}

# vroce_veth_dev_ipv4 DEV NDEV PEER ADDR: vroce_veth_dev, then the IPv4
# address ADDR on NDEV, and wait for its RoCE v2 GID.
vroce_veth_dev_ipv4() {
	vroce_veth_dev "$1" "$2" "$3" &&
		ip addr add "$4/24" dev "$2" &&
		wait_for 10 vroce_gid "$1" v4 "$2" "$4"
}

# vroce_rc_stream DEV PEER_DEV GID PEER_GID OP MIB: rc_stream moves MIB MiB
# with OP (write, read, send) from DEV's QP to PEER_DEV's (one name:
# loopback), 16 operations of 64 KiB in flight, and compares every byte.
# An empty GID index means the first RoCE v2 IPv4 GID. The timeout is a
# hang guard only (rc_stream has its own).
vroce_rc_stream() {
	VROCE_DEV=$1 VROCE_PEER_DEV=$2 VROCE_GID=$3 VROCE_PEER_GID=$4 \
		timeout 600 "$VROCE_BIN/rc_stream" "$5" "$6"
}

# vroce_gid DEV v4|v6|v1 [IFNAME ADDR]: print the index of DEV's GID of that
# kind: RoCE v2 (v4, v6) or RoCE v1, for ADDR on IFNAME if given, else the
# first one (IPv4-mapped, or for v6 IPv6 but not link-local: the one
# vroce_roce_v2_gid() in vroce_test.h picks). Fail if there is none. An
# IPv4 ADDR in the shell (no python start-up: seconds on the debug
# kernel), an IPv6 one by roce.py gid.
vroce_gid() {
	local port=/sys/class/infiniband/$1/ports/1 type="RoCE v2" want='' i g
	local o1 o2 o3 o4

	case ${4:-} in
	*:*)
		python3 "$VROCE_LIB_DIR/roce.py" gid --dev "$1" --kind "$2" \
			--ifname "$3" --sip "$4" | grep -x '[0-9]*'
		return
		;;
	?*)
		IFS=. read -r o1 o2 o3 o4 <<<"$4"
		printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
			"$o1" "$o2" "$o3" "$o4" || return 1
		;;
	esac
	[ "$2" = v1 ] && type="IB/RoCE v1"
	for ((i = 0; i < 128; i++)); do
		read -r g 2>/dev/null <"$port/gid_attrs/types/$i" || continue
		[ "$g" = "$type" ] || continue
		read -r g 2>/dev/null <"$port/gids/$i" || continue
		if [ -n "$want" ]; then
			[ "$g" = "$want" ] || continue
			read -r g 2>/dev/null <"$port/gid_attrs/ndevs/$i" ||
				continue
			[ "$g" = "$3" ] || continue
		else
			case $g in
			0000:0000:0000:0000:0000:0000:0000:0000 | fe80:*) continue ;;
			0000:0000:0000:0000:0000:ffff:*) [ "$2" != v6 ] || continue ;;
			*) [ "$2" = v6 ] || continue ;;
			esac
		fi
		echo "$i"
		return 0
	done
	return 1
}

# udp_port_hold [NETNS]: bind UDP 4791 (IPv4, any address) from user space,
# in NETNS if given, until udp_port_release.
VROCE_PORT_PID=
udp_port_hold() {
	local in_ns=()

	[ -n "${1:-}" ] && in_ns=(ip netns exec "$1")
	# -S: the standard library is enough, and the start the shorter.
	"${in_ns[@]}" python3 -S -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 4791))
print("bound", flush=True)
time.sleep(600)' >"$VROCE_LOG.port" 2>&1 &
	VROCE_PORT_PID=$!
	wait_for 10 vroce_file_has_line "$VROCE_LOG.port" bound
}

# vroce_file_has_line FILE LINE: a builtin grep -qx (wait_for polls it).
vroce_file_has_line() {
	local l

	while read -r l; do
		[ "$l" = "$2" ] && return 0
	done 2>/dev/null <"$1"
	return 1
}

udp_port_release() {
	[ -n "$VROCE_PORT_PID" ] || return 0
	kill "$VROCE_PORT_PID" 2>/dev/null
	wait "$VROCE_PORT_PID" 2>/dev/null
	VROCE_PORT_PID=
}

vroce_cleanup() {
	udp_port_release
	ns_del_all
	rm -f "$VROCE_LOG" "$VROCE_LOG".*
	# make check sums these per kernel (tools/check.sh).
	ktap_print_msg "${0##*/} took $SECONDS s"
}

# vroce_inmodule_selftests NAME...: the whole of a script for the module's
# built-in self-tests NAME... (selftest/NAME.c). A module built with
# VROCE_DEBUG (make KVER=debug) runs them at load and lists them in
# modinfo's vroce_selftests; the script skips unless the first NAME is
# there. One result for the load, one per NAME (its "pass" line in dmesg).
vroce_inmodule_selftests() {
	local mark="$1-selftest" name

	vroce_require modinfo dmesg
	trap 'vroce_unload; vroce_cleanup' EXIT
	grep -qw "$1" <<<"$(modinfo -F vroce_selftests "$VROCE_KO" 2>/dev/null)" ||
		vroce_skip_all "module built without VROCE_DEBUG self-tests"

	ktap_print_header
	ktap_set_plan $(($# + 1))
	vroce_unload
	dmesg_mark "$mark"
	check "module loads with its self-tests" vroce_load
	for name in "$@"; do
		check "$name self-tests pass" vroce_selftest_passed "$mark" "$name"
	done
	ktap_finished
}

# vroce_selftest_passed MARK NAME: NAME's self-tests passed since MARK.
vroce_selftest_passed() {
	dmesg_since "$1" | grep -qx ".*vroce: $2 self-tests: pass"
}

# vroce_test_dev DEV NDEV PEER [ADDR]: the set-up of a script that runs one
# C test program on one device (whose KTAP output is the script's): the
# vroce device DEV over the veth pair NDEV/PEER (vroce_veth_dev), with the
# IPv4 address ADDR and its GIDs if given (vroce_veth_dev_ipv4), all of it
# removed on exit (vroce_test_dev_cleanup). If that fails the script exits
# with a failed plan and the log.
VROCE_TEST_NDEV=
vroce_test_dev() {
	local setup=vroce_veth_dev

	vroce_require ip rdma
	VROCE_TEST_NDEV=$2
	trap vroce_test_dev_cleanup EXIT
	[ $# -lt 4 ] || setup=vroce_veth_dev_ipv4
	vroce_setup_or_exit "cannot set up a vroce device" "$setup" "$@"
}

# vroce_debug_cap N: on the debug kernels, which create objects several
# times slower, devices added from now on advertise at most N objects of
# each kind (debugfs max_objects), so that a test that reaches a count
# limit stays within its time. Loads the module there.
vroce_debug_cap() {
	vroce_debug_kernel || return 0
	vroce_load && echo "$1" >/sys/kernel/debug/vroce/max_objects
}

# vroce_setup_or_exit MSG CMD...: the set-up CMD of a script whose KTAP a C
# test prints; if it fails, the script exits with a failed plan, CMD's
# output and MSG.
vroce_setup_or_exit() {
	"${@:2}" >"$VROCE_LOG" 2>&1 && return 0
	ktap_print_header
	sed 's/^/# /' "$VROCE_LOG"
	ktap_exit_fail_msg "$1"
}

vroce_test_dev_cleanup() {
	[ -z "$VROCE_TEST_NDEV" ] || ip link del "$VROCE_TEST_NDEV" 2>/dev/null
	vroce_unload
	vroce_cleanup
}

# vroce_veth_ns A B [v6] [mtu N]: the two namespaces of a test between two
# devices, joined by a veth pair:
#
#   [ns A-PID: va 192.0.2.1/24] ==veth== [ns B-PID: vb 192.0.2.2/24]
#
# both ends up; with v6 also 2001:db8::1/64 and 2001:db8::2/64 (no DAD),
# with mtu N that MTU on both ends. Sets NSA and NSB (the namespaces' names),
# EXEC_A and EXEC_B (ip netns exec in each), MACA and MACB (va's and vb's
# MAC addresses). ns_del_all (vroce_cleanup) deletes them.
vroce_veth_ns() {
	local v6=0 mtu='' a b

	NSA=$1-$$ NSB=$2-$$
	shift 2
	while [ $# -gt 0 ]; do
		case $1 in
		v6) v6=1 ;;
		mtu) mtu="mtu $2" && shift ;;
		*) echo "vroce_veth_ns: unknown option $1" && return 1 ;;
		esac
		shift
	done
	EXEC_A=(ip netns exec "$NSA") EXEC_B=(ip netns exec "$NSB")
	# Three ip batches (each stops at its first error) instead of an ip
	# per step: a process start costs about 0.5 s on the debug kernel.
	VROCE_NETNS+=("$NSA" "$NSB")
	a="link set lo up
link add va $mtu type veth peer name vb $mtu netns $NSB
addr add 192.0.2.1/24 dev va"
	b="link set lo up
addr add 192.0.2.2/24 dev vb"
	if [ "$v6" = 1 ]; then
		a+=$'\n'"addr add 2001:db8::1/64 dev va nodad"
		b+=$'\n'"addr add 2001:db8::2/64 dev vb nodad"
	fi
	a+=$'\n'"link set va up"
	b+=$'\n'"link set vb up"
	# shellcheck disable=SC2034 # the calling script's
	ip -batch - <<<"netns add $NSA"$'\n'"netns add $NSB" &&
		ip -n "$NSA" -batch - <<<"$a" && ip -n "$NSB" -batch - <<<"$b" &&
		MACA=$(ip netns exec "$NSA" cat /sys/class/net/va/address) &&
		MACB=$(ip netns exec "$NSB" cat /sys/class/net/vb/address)
}

# vroce_ns_devs DEV_A [DEV_B [KIND...]]: vroce loaded, the device DEV_A over
# va in NSA and DEV_B (unless empty) over vb in NSB (vroce_veth_ns), each
# with a GID of each KIND (vroce_gid: v4, v6, v1; default v4).
# vroce_ns_devs_cleanup deletes them.
VROCE_NS_DEVS=()
vroce_ns_devs() {
	local kinds=("${@:3}") dev

	[ ${#kinds[@]} -gt 0 ] || kinds=(v4)
	VROCE_NS_DEVS=()
	vroce_load &&
		ip netns exec "$NSA" rdma link add "$1" type vroce netdev va ||
		return 1
	VROCE_NS_DEVS+=("$1")
	if [ -n "${2:-}" ]; then
		ip netns exec "$NSB" rdma link add "$2" type vroce netdev vb ||
			return 1
		VROCE_NS_DEVS+=("$2")
	fi
	for dev in "${VROCE_NS_DEVS[@]}"; do
		wait_for 10 vroce_gids_ready "$dev" "${kinds[@]}" || return 1
	done
}

# The devices of vroce_ns_devs, last first; then vroce unloaded and the
# script's namespaces and files gone (vroce_cleanup): an EXIT trap.
vroce_ns_devs_cleanup() {
	local i

	for ((i = ${#VROCE_NS_DEVS[@]} - 1; i >= 0; i--)); do
		rdma link delete "${VROCE_NS_DEVS[i]}" 2>/dev/null
	done
	VROCE_NS_DEVS=()
	vroce_unload
	vroce_cleanup
}

# hw_counter DEV NAME: the value of DEV's hardware counter NAME (port 1).
hw_counter() {
	local v

	read -r v <"/sys/class/infiniband/$1/ports/1/hw_counters/$2" &&
		echo "$v"
}

# gid_present DEV GID [TYPE]: DEV's GID table holds GID (as sysfs prints
# it: eight groups of four lower-case hex digits), of TYPE if given
# ("RoCE v2", "IB/RoCE v1").
gid_present() {
	local port=/sys/class/infiniband/$1/ports/1 i g

	for ((i = 0; i < 128; i++)); do
		read -r g 2>/dev/null <"$port/gids/$i" || continue
		[ "$g" = "$2" ] || continue
		[ -z "${3:-}" ] && return 0
		read -r g 2>/dev/null <"$port/gid_attrs/types/$i" || continue
		[ "$g" = "$3" ] && return 0
	done
	return 1
}

# vroce_gids_ready DEV KIND...: DEV has a GID of each KIND (vroce_gid).
vroce_gids_ready() {
	local kind

	for kind in "${@:2}"; do
		vroce_gid "$1" "$kind" >/dev/null || return 1
	done
}

# tcp_listening PORT [CMD...]: something listens on TCP PORT; ss runs under
# CMD if given (e.g. ip netns exec NS).
tcp_listening() {
	"${@:2}" ss -Hltn "sport = :$1" | grep -q .
}

# cm_listening PORT [CMD...]: an rdma_cm ID listens on PORT; rdma runs
# under CMD if given.
cm_listening() {
	"${@:2}" rdma res show cm_id | grep -q "LISTEN.*:$1 "
}

# roce_socket NETNS: vroce's RoCE v2 UDP socket (port 4791) is open in NETNS.
roce_socket() {
	ip netns exec "$1" ss -Huan "sport = :4791" | grep -q 4791
}

# bg_stop VAR [SIGNAL]: end the background job whose PID is in variable
# VAR (if any) with SIGNAL (default TERM), wait for it, and clear VAR.
bg_stop() {
	local -n vroce_bg_pid=$1

	[ -n "$vroce_bg_pid" ] || return 0
	kill "-${2:-TERM}" "$vroce_bg_pid" 2>/dev/null
	wait "$vroce_bg_pid" 2>/dev/null
	vroce_bg_pid=
}

# bg_wait VAR: wait for the background job whose PID is in variable VAR,
# clear VAR, and return the job's exit status.
bg_wait() {
	local -n vroce_bg_pid=$1
	local rc

	wait "$vroce_bg_pid"
	rc=$?
	vroce_bg_pid=
	return "$rc"
}

# vroce_case_names PROG [ARG...]: the names of a kselftest harness
# program's cases, in order, from the run that skips them all (no device).
vroce_case_names() {
	env -u VROCE_DEV "$@" 2>/dev/null | sed -n 's/^ok [0-9]* \([^ ]*\) # SKIP.*/\1/p'
}

# run_pair LISTENING PORT SRV_CMD... -- CLI_CMD...: a server and its client,
# both under timeout TMO, both must exit 0. The server runs under the
# command prefix EXEC_B (an array, e.g. ip netns exec NS; SRV_PID while it
# runs), the client under EXEC_A once "LISTENING PORT EXEC_B..." says the
# server listens (tcp_listening, cm_listening), which it must within 60 s
# (a program's start on a sanitizer kernel in a busy host is slow). The
# client's output is in $VROCE_LOG.cli, the server's in $VROCE_LOG.srv; both
# are shown on failure.
run_pair() {
	local ready=$1 port=$2 srv=() crc src

	shift 2
	while [ "$1" != -- ]; do
		srv+=("$1")
		shift
	done
	shift
	"${EXEC_B[@]}" timeout "$TMO" "${srv[@]}" >"$VROCE_LOG.srv" 2>&1 &
	SRV_PID=$!
	if ! wait_for 60 "$ready" "$port" "${EXEC_B[@]}"; then
		bg_stop SRV_PID
		echo "server did not listen on port $port:"
		cat "$VROCE_LOG.srv"
		return 1
	fi
	"${EXEC_A[@]}" timeout "$TMO" "$@" >"$VROCE_LOG.cli" 2>&1
	crc=$?
	wait "$SRV_PID"
	src=$?
	SRV_PID=
	if [ "$crc" != 0 ] || [ "$src" != 0 ]; then
		echo "client exit $crc, server exit $src"
		echo "--- client: $*"
		cat "$VROCE_LOG.cli"
		echo "--- server: ${srv[*]}"
		cat "$VROCE_LOG.srv"
		return 1
	fi
}
