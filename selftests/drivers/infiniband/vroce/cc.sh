#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Congestion control on the wire, between two vroce devices in two
# namespaces joined by a veth pair:
#
#   [ns cca-*: cca over va (+ VLAN va.10)] ==veth== [ns ccb-*: ccb over vb]
#
# ib_write_bw's client on cca writes to its server on ccb. A tbf feeding a
# RED qdisc with ECN on va's egress plays a congested switch: it marks CE
# on ECT packets once its queue grows. Checked:
#  - CC on: data packets carry ECT(0) and the traffic class's DSCP;
#  - with RED: CNPs on the wire (BTH opcode 0x81, BECN, DestQP the
#    sender's QP, DSCP np_cnp_dscp, ICRC right), np_ecn_marked_roce_packets
#    and np_cnp_sent rise on ccb, rp_cnp_handled on cca, the sender QP's
#    pacer rate (debugfs cc_qps) falls below the line rate and, once RED is
#    gone, climbs back until the QP is unlimited again;
#  - NP disabled on the receiver (np_enable_<p>): CE arrives, no CNP, the
#    CC counters do not move; RP disabled on the sender (rp_enable_<p>):
#    its packets are Not-ECT;
#  - a CNP for no QP counts in rp_cnp_ignored;
#  - priority: SL 5, or SL 0 and traffic class 0x10 (rt_tos2priority: 6),
#    leave a VLAN netdev with egress-qos-map 5:5 6:6 with PCP 5 and 6.
# Nothing here asserts a speed or a time: waits are bounded polls.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma tc tshark dumpcap ss timeout python3 ib_write_bw \
	ib_send_bw

ROCE_PY="$VROCE_LIB_DIR/roce.py"
TMO=300
GID_A=
GID_B=
GIDV_A=
GIDV_B=
PCAP=
CAP_PID=
SRV_PID=
CLI_PID=
PORT=19500
# The line rate of a veth (ethtool 10000 Mb/s), in kb/s.
LINE_KBPS=10000000

cleanup() {
	capture_stop
	[ -z "$CLI_PID" ] || { kill "$CLI_PID" 2>/dev/null; wait "$CLI_PID"; }
	[ -z "$SRV_PID" ] || { kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID"; }
	rm -f /tmp/vroce-cc.*
	vroce_ns_devs_cleanup
}
trap cleanup EXIT

gid_of() {
	vroce_gid "$1" v4 "$2" "$3"
}

setup() {
	vroce_veth_ns cca ccb &&
		ip -n "$NSA" link add link va name va.10 type vlan id 10 \
			egress-qos-map 5:5 6:6 &&
		ip -n "$NSB" link add link vb name vb.10 type vlan id 10 &&
		ip -n "$NSA" addr add 198.51.100.1/24 dev va.10 &&
		ip -n "$NSB" addr add 198.51.100.2/24 dev vb.10 &&
		ip -n "$NSA" link set va.10 up && ip -n "$NSB" link set vb.10 up &&
		vroce_ns_devs cca ccb &&
		wait_for 10 gid_of cca va 192.0.2.1 &&
		wait_for 10 gid_of ccb vb 192.0.2.2 &&
		wait_for 10 gid_of cca va.10 198.51.100.1 &&
		wait_for 10 gid_of ccb vb.10 198.51.100.2 || return 1
	GID_A=$(gid_of cca va 192.0.2.1) && GID_B=$(gid_of ccb vb 192.0.2.2) &&
		GIDV_A=$(gid_of cca va.10 198.51.100.1) &&
		GIDV_B=$(gid_of ccb vb.10 198.51.100.2)
}

# knobs DEV FILE VALUE: write VALUE to DEV's cc/FILE_<p> for every priority.
enables() {
	local p

	for p in 0 1 2 3 4 5 6 7; do
		echo "$3" >"/sys/class/infiniband/$1/cc/$2_$p" || return 1
	done
}

# capture NETNS IFNAME FILTER: dumpcap into a new $PCAP until capture_stop.
capture() {
	PCAP=$(mktemp /tmp/vroce-cc.XXXXXX.pcap) && rm -f "$PCAP"
	ip netns exec "$1" dumpcap -q -P -i "$2" -f "$3" -w "$PCAP" \
		>"$VROCE_LOG.cap" 2>&1 &
	CAP_PID=$!
	wait_for 20 test -s "$PCAP" || { cat "$VROCE_LOG.cap"; return 1; }
}

capture_stop() {
	[ -n "$CAP_PID" ] || return 0
	# Let the last frames reach the file.
	sleep 1
	bg_stop CAP_PID INT
}

# bw_start GIDA GIDB SERVERIP ARGS...: ib_write_bw ($BW_TOOL) server on ccb
# and client on cca, both in the background (bw_wait waits for them).
BW_TOOL=ib_write_bw
bw_start() {
	local ga=$1 gb=$2 ip=$3 port=$((PORT++))

	shift 3
	ip netns exec "$NSB" timeout "$TMO" "$BW_TOOL" -d ccb -x "$gb" \
		-p "$port" -F "$@" >"$VROCE_LOG.srv" 2>&1 &
	SRV_PID=$!
	wait_for 20 tcp_listening "$port" ip netns exec "$NSB" || { cat "$VROCE_LOG.srv"; return 1; }
	ip netns exec "$NSA" timeout "$TMO" "$BW_TOOL" -d cca -x "$ga" \
		-p "$port" -F "$@" "$ip" >"$VROCE_LOG.cli" 2>&1 &
	CLI_PID=$!
}

bw_wait() {
	local rc=0 src=0

	wait "$CLI_PID" || rc=$?
	wait "$SRV_PID" || src=$?
	CLI_PID=
	SRV_PID=
	[ "$rc" = 0 ] || { echo "ib_write_bw client: exit $rc"; cat "$VROCE_LOG.cli"; }
	[ "$src" = 0 ] || { echo "ib_write_bw server: exit $src"; cat "$VROCE_LOG.srv"; }
	[ "$rc" = 0 ] && [ "$src" = 0 ]
}

bw_stop() {
	kill "$CLI_PID" "$SRV_PID" 2>/dev/null
	wait "$CLI_PID" "$SRV_PID" 2>/dev/null
	CLI_PID=
	SRV_PID=
}

# bw ARGS...: one ib_write_bw run over the untagged GIDs.
bw() {
	bw_start "$GID_A" "$GID_B" 192.0.2.2 "$@" && bw_wait
}

# count COND: the RoCE frames of $PCAP for which the awk condition COND
# holds, over roce.py's fields: $1 source address, $2 VLAN ID and $3 PCP
# ("-" untagged), $4 DSCP, $5 ECN, $6 BTH opcode. One python run per
# capture (tshark takes tens of seconds to start in the VM).
count() {
	[ -e "$PCAP.fields" ] ||
		python3 "$ROCE_PY" fields --pcap "$PCAP" >"$PCAP.fields" ||
		return 1
	awk "$1 { n++ } END { print n + 0 }" "$PCAP.fields"
}

TCLASS=0x68	# DSCP 26
ect_and_dscp() {
	local all ect

	capture "$NSB" vb "udp port 4791 and udp[8] < 0x20" &&
		bw -n 200 -s 4096 --tclass=$TCLASS || { capture_stop; return 1; }
	capture_stop
	all=$(count '$6 < 32')
	ect=$(count '$6 < 32 && $5 == 2 && $4 == 26')
	echo "# $all RC frames, $ect with ECT(0) and DSCP 26"
	[ "$all" -gt 0 ] && [ "$ect" = "$all" ]
}

# A congested egress: tbf at 20 Mb/s feeding RED that marks CE early.
# The bottleneck in front of RED: 20 Mb/s, or 2 Mb/s on the debug kernel,
# whose sender did not reach 20 Mb/s (no CE mark in a 230 s run).
RED_RATE=20mbit
vroce_debug_kernel && RED_RATE=2mbit

red_on() {
	ip netns exec "$NSA" tc qdisc replace dev va root handle 1: tbf \
		rate "$RED_RATE" burst 8kb latency 200ms &&
		ip netns exec "$NSA" tc qdisc add dev va parent 1:1 handle 10: \
			red limit 400000 min 4000 max 12000 avpkt 1000 burst 6 \
			bandwidth "$RED_RATE" probability 1 ecn
}

red_off() {
	ip netns exec "$NSA" tc qdisc del dev va root 2>/dev/null
	return 0
}

# The sender's QP: the cca line of cc_qps with the highest QPN.
qp_rate() {
	awk 'NR > 1 && $1 > 1 { r = $3 } END { print r }' \
		/sys/kernel/debug/vroce/cca/cc_qps
}

rate_limited() {
	local r

	r=$(qp_rate)
	[ -n "$r" ] && [ "$r" -gt 0 ] && [ "$r" -lt "$LINE_KBPS" ]
}

qp_exists() {
	[ -n "$(qp_rate)" ]
}

rate_unlimited() {
	[ "$(qp_rate)" = 0 ]
}

# Why a wait on the sender's QP failed: its last rate changes, and if its
# perftest ended (it must outlast the run: bw_stop ends it), what it said.
sender_state() {
	grep -s vroce_rate_change "$TRACE/trace" | tail -n 20
	kill -0 "$CLI_PID" 2>/dev/null && return
	echo "$BW_TOOL client ended before the run did:"
	cat "$VROCE_LOG.cli" "$VROCE_LOG.srv"
}

CNT0=()
cc_counters() {
	echo "$(hw_counter ccb np_ecn_marked_roce_packets) $(hw_counter ccb np_cnp_sent)" \
		"$(hw_counter cca rp_cnp_handled) $(hw_counter cca rp_cnp_ignored)"
}

TRACE=
trace_on() {
	TRACE=/sys/kernel/tracing
	[ -e "$TRACE/events/vroce" ] || TRACE=/sys/kernel/debug/tracing
	[ -e "$TRACE/events/vroce" ] || return 1
	echo >"$TRACE/trace" && echo 1 >"$TRACE/events/vroce/enable"
}

trace_off() {
	[ -z "$TRACE" ] || echo 0 >"$TRACE/events/vroce/enable"
}

# poll_until SECONDS CMD...: like wait_for, in wall-clock seconds.
poll_until() {
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.05
	done
}

RATE_MIN=
# The run under congestion; the capture is kept for the checks below.
congestion() {
	local rc=0 t0=$SECONDS ev=() len=(-D 200) BW_TOOL=$BW_TOOL
	# perftest's hang guard (bw_start) outlasts the three waits below:
	# 300 s was less than a loaded debug kernel took to reach the last.
	local TMO=$((3 * POLL + 120))

	read -ra CNT0 <<<"$(cc_counters)"
	# The debug kernel's CNPs come milliseconds apart (about 200/s): with
	# the 300 µs default increase period the sender's QP is back at the
	# line rate, unpaced, between two of them most of the time. 20 ms
	# keeps it limited long enough to be seen, as on the other kernels,
	# and with the byte counter off (BC follows T) it climbs back within
	# a second or two of the marks stopping; larger additive and hyper
	# increase steps (500 and 2000 Mb/s a period) make that climb from a
	# few Gb/s a few periods, not hundreds. Its one vCPU is not spent on
	# perftest polling its CQs either: SENDs, with completion events (-e;
	# perftest has no event mode for WRITE, nor for a duration: a number
	# of messages it does not reach before bw_stop).
	if vroce_debug_kernel; then
		echo 20000 >/sys/class/infiniband/cca/cc/rp_time_reset &&
			echo 0 >/sys/class/infiniband/cca/cc/rp_byte_reset &&
			echo 500 >/sys/class/infiniband/cca/cc/rp_ai_rate &&
			echo 2000 >/sys/class/infiniband/cca/cc/rp_hai_rate ||
			return 1
		BW_TOOL=ib_send_bw ev=(-e) len=(-n 1000000)
	fi
	trace_on
	capture "$NSA" va "udp port 4791 and udp[8] == 0x81" && red_on &&
		bw_start "$GID_A" "$GID_B" 192.0.2.2 "${len[@]}" -s 65536 -u 18 \
			"${ev[@]}" ||
		{ red_off; capture_stop; return 1; }
	echo "# $((SECONDS - t0)) s: capturing, RED on, $BW_TOOL started"
	# The run is stopped once it has shown what it must (bw_stop).
	poll_until "$POLL" qp_exists
	echo "# $((SECONDS - t0)) s: the sender's QP is there"
	# Falls: the first CNP limits the QP, later ones cut its rate.
	# (One reading: each costs a process start, seconds on a loaded debug
	# kernel; the trace has the rest.)
	if poll_until "$POLL" rate_limited; then
		RATE_MIN=$(qp_rate)
		echo "# $((SECONDS - t0)) s: limited to $RATE_MIN kb/s"
	else
		echo "the sender's QP was never rate limited"
		cat /sys/kernel/debug/vroce/cca/cc_qps
		sender_state
		rc=1
	fi
	red_off
	echo "# $((SECONDS - t0)) s: RED off"
	# Recovers: no more marks, so no CNPs, and the timer climbs back.
	if [ "$rc" = 0 ] && ! poll_until "$POLL" rate_unlimited; then
		echo "$((SECONDS - t0)) s: the rate did not recover: $(qp_rate) kb/s"
		sender_state
		rc=1
	fi
	echo "# $((SECONDS - t0)) s: rate $(qp_rate) kb/s"
	# The run has shown what it had to: no need for the rest of it.
	bw_stop
	echo "# $((SECONDS - t0)) s: $BW_TOOL stopped"
	trace_off
	capture_stop
	echo "# $((SECONDS - t0)) s: capture stopped"
	return "$rc"
}

# The tracepoints fired during the run.
tracepoints() {
	local ev

	[ -n "$TRACE" ] || { echo "no vroce trace events"; return 1; }
	for ev in vroce_cnp_sent vroce_cnp_handled vroce_rate_change; do
		grep -q "$ev:" "$TRACE/trace" || { echo "no $ev"; return 1; }
	done
	grep -m3 vroce_rate_change "$TRACE/trace" | sed 's/^/# /'
}

# Every captured frame (the capture takes BTH opcode 0x81 only) is a CNP
# laid out as IBTA says (BECN, 16 zero bytes, PSN 0, ICRC) with DSCP
# np_cnp_dscp (48), all to one DestQP, the sender's; tshark reads each as
# InfiniBand opcode 0x81, nothing malformed (roce.py decode, one tshark
# pass; none on the debug kernel, where tshark starts slowly).
cnps_on_wire() {
	local tsh=

	! vroce_debug_kernel || [ -n "${CC_FULL:-}" ] || tsh=--no-tshark
	python3 "$ROCE_PY" decode --pcap "$PCAP" --traffic cnp ${tsh:+"$tsh"}
}

np_counters() {
	local c

	read -ra c <<<"$(cc_counters)"
	echo "# np_ecn_marked_roce_packets ${CNT0[0]} -> ${c[0]}," \
		"np_cnp_sent ${CNT0[1]} -> ${c[1]}"
	[ "${c[0]}" -gt "${CNT0[0]}" ] && [ "${c[1]}" -gt "${CNT0[1]}" ] &&
		[ "${c[1]}" -le "${c[0]}" ]
}

rp_counters() {
	local c

	read -ra c <<<"$(cc_counters)"
	echo "# rp_cnp_handled ${CNT0[2]} -> ${c[2]}"
	[ "${c[2]}" -gt "${CNT0[2]}" ] && [ "${c[3]}" = "${CNT0[3]}" ]
}

rate_fell() {
	[ -n "$RATE_MIN" ] && [ "$RATE_MIN" -lt "$LINE_KBPS" ]
}

# NP off on the receiver, RED marking: CE arrives, no CNP, no NP count.
np_off() {
	local ce cnp c

	read -ra CNT0 <<<"$(cc_counters)"
	enables ccb np_enable 0 || return 1
	if ! capture "$NSB" vb "udp port 4791" || ! red_on ||
	   ! bw -n 100 -s 16384 -u 18; then
		red_off
		capture_stop
		enables ccb np_enable 1
		return 1
	fi
	red_off
	capture_stop
	enables ccb np_enable 1 || return 1
	ce=$(count '$5 == 3')
	cnp=$(count '$6 == 129')
	read -ra c <<<"$(cc_counters)"
	echo "# $ce CE-marked frames, $cnp CNPs; counters ${CNT0[*]} -> ${c[*]}"
	[ "$ce" -gt 0 ] && [ "$cnp" = 0 ] && [ "${c[*]}" = "${CNT0[*]}" ]
}

# RP off on the sender: its packets are Not-ECT.
rp_off() {
	local all ect

	enables cca rp_enable 0 || return 1
	if ! capture "$NSB" vb "udp port 4791" || ! bw -n 100 -s 4096; then
		capture_stop
		enables cca rp_enable 1
		return 1
	fi
	capture_stop
	enables cca rp_enable 1 || return 1
	all=$(count '$1 == "192.0.2.1"')
	ect=$(count '$1 == "192.0.2.1" && $5 != 0')
	echo "# $all RoCE frames from cca, $ect with ECN bits"
	[ "$all" -gt 0 ] && [ "$ect" = 0 ]
}

cnp_ignored() {
	local n0 n1

	n0=$(hw_counter ccb rp_cnp_ignored)
	echo "sgid_index=$GID_A dgid=192.0.2.2 dmac=$MACB dqpn=0xabcdef opcode=CNP len=0" \
		>/sys/kernel/debug/vroce/cca/xmit_test || return 1
	wait_for 10 test "$(hw_counter ccb rp_cnp_ignored)" -gt "$n0"
	n1=$(hw_counter ccb rp_cnp_ignored)
	[ "$n1" = $((n0 + 1)) ]
}

# vlan_pcp WANT ARGS...: a run over the VLAN GIDs; every RC frame seen on
# vb carries PCP WANT.
vlan_pcp() {
	local want=$1 all ok sel

	shift
	capture "$NSB" vb "vlan and udp port 4791" &&
		bw_start "$GIDV_A" "$GIDV_B" 198.51.100.2 -n 20 -s 4096 "$@" &&
		bw_wait || { capture_stop; return 1; }
	capture_stop
	sel='$2 == 10 && $1 == "198.51.100.1"'
	all=$(count "$sel")
	ok=$(count "$sel && \$3 == $want")
	echo "# $all RC frames from cca on VLAN 10, $ok with PCP $want"
	[ "$all" -gt 0 ] && [ "$ok" = "$all" ]
}

# On a lean kernel (vroce_lean_kernel: the debug kernel, KASAN, lockdep,
# kmemleak, several times slower; and 6.1), unless CC_FULL=1, only the
# congestion run and the checks on it are made (the rest is the same code
# on every kernel, checked on 6.12), and roce.py alone decodes the CNPs:
# tshark starts slowly on the debug kernel.
SLOW=
vroce_lean_kernel && [ -z "${CC_FULL:-}" ] && SLOW=1
# Bound of each wait of the congestion run, seconds (a hang guard).
POLL=60
vroce_debug_kernel && POLL=180

# slow_skip DESC CMD...: check, or skip on a lean kernel.
slow_skip() {
	if [ -n "$SLOW" ]; then
		ktap_test_skip "$1: lean run on this kernel, CC_FULL=1 runs it"
	else
		check "$@"
	fi
}

ktap_print_header
ktap_set_plan 12
if ! check "two namespaces, veth, VLAN, a vroce device each" setup; then
	ktap_exit_fail_msg "no topology"
fi
slow_skip "CC on: data packets carry ECT(0) and the traffic class's DSCP" \
	ect_and_dscp
check "RED marks CE: the sender is limited, then recovers" congestion
check "CNPs on the wire: opcode 0x81, BECN, DSCP 48, one DestQP, ICRC" \
	cnps_on_wire
check "NP: np_ecn_marked_roce_packets and np_cnp_sent rise" np_counters
check "RP: rp_cnp_handled rises" rp_counters
check "RP: the sender's rate fell below the line rate" rate_fell
check "tracepoints: CNP sent, CNP handled, rate change" tracepoints
slow_skip "NP disabled: CE-marked packets arrive, no CNP, no NP count" np_off
slow_skip "RP disabled: the sender's packets are Not-ECT" rp_off
check "a CNP for no QP counts in rp_cnp_ignored" cnp_ignored
slow_skip "SL 5 and SL 0 + tclass 0x10 give PCP 5 and 6 through egress-qos-map" \
	eval 'vlan_pcp 5 -S 5 && vlan_pcp 6 --tclass=16'
ktap_finished
