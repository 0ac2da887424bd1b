#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The RC transport over a bad link: two namespaces joined by a veth pair,
# a vroce device on each end, netem on both ends adding loss, reordering,
# duplication, corruption and delay. rc_stream moves NETEM_MIB MiB (default
# 4, 2 on the debug kernel: make check's time budget; a 256 MiB run takes
# minutes per operation under TCG) of RDMA WRITEs, then READs, then SENDs, with
# 16 operations of 64 KiB in flight, and checks every byte. Then the
# counters must show what the link did: retransmissions on the requesters,
# duplicates and out-of-sequence packets on the responders, ICRC drops.
#
#   NETEM="loss 5% reorder 5% duplicate 1% corrupt 0.1% delay 1ms"
#   NETEM_OPS="write read send"

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma tc

NETEM=${NETEM:-loss 5% reorder 5% duplicate 1% corrupt 0.1% delay 1ms}
read -ra OPS <<<"${NETEM_OPS:-write read send}"
if [ -z "${NETEM_MIB:-}" ]; then
	# 2 on the debug kernel (KASAN and lockdep make it several times
	# slower): make check's time.
	NETEM_MIB=4
	vroce_debug_kernel && NETEM_MIB=2
fi
trap vroce_ns_devs_cleanup EXIT

setup() {
	vroce_veth_ns nma nmb && vroce_ns_devs nma nmb || return 1
	# Static neighbours: ib_core resolves the peer's MAC at modify_qp,
	# and an ARP exchange lost to netem would fail it (ETIMEDOUT).
	ip -n "$NSA" neigh replace 192.0.2.2 dev va nud permanent \
		lladdr "$MACB" &&
		ip -n "$NSB" neigh replace 192.0.2.1 dev vb nud permanent \
			lladdr "$MACA" || return 1
	# shellcheck disable=SC2086 # NETEM is a list of netem arguments
	ip netns exec "$NSA" tc qdisc add dev va root netem $NETEM &&
		ip netns exec "$NSB" tc qdisc add dev vb root netem $NETEM
}

# stream OP: vroce_rc_stream from nma to nmb, NETEM_MIB MiB.
stream() {
	vroce_rc_stream nma nmb "" "" "$1" "$NETEM_MIB"
}

# sum NAME: NAME's counter summed over both devices.
sum() {
	echo $(($(hw_counter nma "$1") + $(hw_counter nmb "$1")))
}

# positive NAME...: each counter is above zero on one device or the other.
positive() {
	local name rc=0

	for name in "$@"; do
		echo "$name: $(sum "$name")"
		[ "$(sum "$name")" -gt 0 ] || rc=1
	done
	return $rc
}

ktap_print_header
ktap_set_plan $((${#OPS[@]} + 2))

if ! setup >"$VROCE_LOG" 2>&1; then
	sed 's/^/# /' "$VROCE_LOG"
	ktap_exit_fail_msg "cannot set up two vroce devices with netem"
fi
echo "# netem $NETEM, $NETEM_MIB MiB per operation"

for op in "${OPS[@]}"; do
	check "$NETEM_MIB MiB of RDMA ${op^^} over netem, byte-exact" stream "$op"
	sed -n 's/^/# /p' "$VROCE_LOG"
done
check "retransmissions counted" \
	positive retrans_pkts duplicate_request out_of_sequence
check "corrupted packets dropped by the ICRC check" positive rx_icrc_encapsulated

rdma statistic show link nma/1 | sed 's/^/# /'
rdma statistic show link nmb/1 | sed 's/^/# /'
ktap_finished
