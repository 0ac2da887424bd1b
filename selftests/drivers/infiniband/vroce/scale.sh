#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Scale and limits. scale_test creates objects by the thousand through
# libibverbs on vroce devices over veths: each kind up to the limit that
# ibv_devinfo -v prints (less those that exist), where one more must fail
# with ENOMEM; SENDs between sampled pairs of the QPs; per-object limits
# (max_cqe, a CQ of 64 Ki entries, max_qp_wr, max_sge, max_srq_wr)
# reachable and one past failing with EINVAL. After destruction the
# "rdma resource" counts are back where they were and the same number can
# be created again, limit and failure included. Then vroce devices, each
# in a namespace of its own over a veth of its own, are added, seen active
# from inside their namespace, and deleted.
#
# Devices: sv1 is added with the debugfs knob max_objects at SCALE_CAP, so
# that every count limit is SCALE_CAP (QPs: SCALE_CAP - 1 besides the GSI
# QP) and is reached in little time; sv0 has the driver's limits, which
# make check reaches for PDs (on 6.12), MRs and MWs.
#
# Each step prints the creation and destruction time per object and the
# kernel memory growth (a benchmark: printed, never asserted; also
# tools/bench/scale.sh).
#
# SCALE_FULL=1 runs everything: SCALE_CAP 1001 (1,000 QPs), every limit of
# sv0 (16384 QPs, CQs, SRQs and AHs; about 400 MB for the QPs) and 64
# devices in 64 namespaces. Otherwise
# SCALE_CAP is 257, and there are 8 devices in namespaces (SCALE_NETNS),
# on a lean kernel (debug, 6.1; vroce_lean_kernel) 4, with 2,000 PDs (the
# debug kernels: sv0's MRs only).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KINDS=(pd mr mw ah cq srq qp)
KNOB=/sys/kernel/debug/vroce/max_objects

if [ -n "${SCALE_FULL:-}" ]; then
	CAP=${SCALE_CAP:-1001}
	NETNS=${SCALE_NETNS:-64}
	SV0_KINDS=("${KINDS[@]}")
	LIMIT_MAX=1000000000
elif vroce_lean_kernel; then
	CAP=${SCALE_CAP:-257}
	NETNS=${SCALE_NETNS:-4}
	SV0_KINDS=(pd mr mw)
	vroce_debug_kernel && SV0_KINDS=(mr)
	LIMIT_MAX=5000
else
	CAP=${SCALE_CAP:-257}
	NETNS=${SCALE_NETNS:-8}
	SV0_KINDS=(pd mr mw)
	LIMIT_MAX=1000000000
fi

cleanup() {
	ip link del scva 2>/dev/null
	vroce_test_dev_cleanup
}

vroce_test_dev sv0 sva svb 192.0.2.1
trap cleanup EXIT

# sv1, with every count limit at CAP (the knob is read at rdma link add).
capped_dev() {
	local ret

	[ -e "$KNOB" ] || {
		echo "no $KNOB"
		return 1
	}
	ip link add scva type veth peer name scvb &&
		ip link set scva up && ip link set scvb up || return 1
	echo "$CAP" >"$KNOB" || return 1
	rdma link add sv1 type vroce netdev scva
	ret=$?
	echo 0 >"$KNOB"
	[ "$ret" = 0 ] && ip addr add 198.51.100.1/24 dev scva &&
		wait_for 10 vroce_gid sv1 v4 scva 198.51.100.1 &&
		[ "$(devinfo_max sv1 max_qp)" = "$CAP" ] &&
		[ "$(devinfo_max sv0 max_qp)" != "$CAP" ]
}

# scale_run DEV DESC ARGS...: one result for scale_test ARGS on DEV; its
# comments (times, counts) are printed either way.
scale_run() {
	local dev="$1" desc="$1: $2" t0=$SECONDS

	shift 2
	if VROCE_DEV=$dev timeout 900 "$VROCE_BIN/scale_test" "$@" \
		>"$VROCE_LOG" 2>&1; then
		grep '^#' "$VROCE_LOG"
		ktap_test_pass "$desc"
	else
		sed 's/^\([^#]\)/# \1/' "$VROCE_LOG"
		ktap_test_fail "$desc"
	fi
	[ -z "${VROCE_TIMES:-}" ] || ktap_print_msg "$((SECONDS - t0)) s"
}

# devinfo_max DEV NAME: the value of NAME in ibv_devinfo -v of DEV.
devinfo_max() {
	ibv_devinfo -v -d "$1" | awk -v k="$2:" '$1 == k { print $2; exit }'
}

# ----------------------------------------------- devices in namespaces ---

NS=()

# netns_devs N: N namespaces, each with a veth pair (one end in it) and a
# vroce device sn<i> over it, added from inside the namespace.
netns_devs() {
	local i ns

	for ((i = 0; i < $1; i++)); do
		ns=$(ns_add "scale$i") || return 1
		NS+=("$ns")
		ip -n "$ns" link add "se$i" type veth peer name "sp$i" &&
			ip -n "$ns" link set "se$i" up &&
			ip -n "$ns" link set "sp$i" up &&
			ip netns exec "$ns" rdma link add "sn$i" type vroce \
				netdev "se$i" || return 1
	done
}

# Every device listed by ibv_devices and, from inside its namespace, by
# rdma link as active over its netdev (rdma link names a netdev only to
# its own namespace).
netns_devs_active() {
	local i devs

	devs=$(ibv_devices) || return 1
	for ((i = 0; i < $1; i++)); do
		grep -qw "sn$i" <<<"$devs" || {
			echo "ibv_devices does not list sn$i"
			return 1
		}
		ip netns exec "${NS[i]}" rdma link show "sn$i/1" |
			grep -q "state ACTIVE .* netdev se$i\b" || {
			echo "sn$i is not active over se$i in ${NS[i]}"
			return 1
		}
	done
}

netns_devs_delete() {
	local i

	for ((i = 0; i < $1; i++)); do
		rdma link delete "sn$i" || return 1
	done
	! compgen -G "/sys/class/infiniband/sn[0-9]*" &&
		! ibv_devices | grep -q '\bsn[0-9]'
}

# timed N VERB CMD...: run CMD, print its time per device.
timed() {
	local n=$1 verb=$2 t0 t1 ret

	shift 2
	t0=$(date +%s%N)
	"$@"
	ret=$?
	t1=$(date +%s%N)
	echo "# $verb device in its namespace: $(((t1 - t0) / n / 1000)) us/object ($n devices)"
	return $ret
}

netns_scale() {
	local n=$1 ret=0

	timed "$n" create netns_devs "$n" &&
		netns_devs_active "$n" &&
		timed "$n" destroy netns_devs_delete "$n" || ret=1
	ns_del_all
	NS=()
	return $ret
}

# ---------------------------------------------------------------- run ---

ktap_print_header
ktap_set_plan $((${#KINDS[@]} + ${#SV0_KINDS[@]} + 3))

scale_run sv0 "per-object limits of ibv_devinfo -v reachable, one past fails with EINVAL" \
	sizes
if check "sv1 added with every count limit at $CAP (debugfs max_objects)" \
	capped_dev; then
	for kind in "${KINDS[@]}"; do
		scale_run sv1 "$kind: the limit is reachable, one past fails with ENOMEM, all returned" \
			"$kind" limit
	done
else
	for kind in "${KINDS[@]}"; do
		ktap_test_fail "sv1: $kind: no device"
	done
fi
for kind in "${SV0_KINDS[@]}"; do
	max=$(devinfo_max sv0 "max_$kind")
	if [ -z "$max" ]; then
		ktap_test_fail "sv0: $kind: no max_$kind in ibv_devinfo -v"
	elif [ "$max" -le "$LIMIT_MAX" ]; then
		scale_run sv0 "$kind: the limit of $max is reachable, one past fails with ENOMEM, all returned" \
			"$kind" limit
	else
		scale_run sv0 "$kind: 2000 objects (limit $max: SCALE_FULL=1 reaches it), all returned" \
			"$kind" 2000
	fi
done
check "$NETNS vroce devices in $NETNS namespaces registered, active, deleted" \
	netns_scale "$NETNS"
[ "${VROCE_VERBOSE:-}" ] || sed -n '/^# \(create\|destroy\)/p' "$VROCE_LOG"
ktap_finished
