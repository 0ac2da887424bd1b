#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The RoCE wire layer: two namespaces joined by a veth pair (MTU 9000), a
# vroce device on one end. Transmit: packets sent with debugfs xmit_test
# (RoCEv2 over IPv4 and IPv6, RoCEv1, over a VLAN) are captured on the peer
# and checked field by field and by ICRC (roce.py, an implementation of
# the wire format independent of the driver) and by tshark's dissector. Receive:
# good and bad packets sent from the peer move exactly the expected
# counter. RC traffic: perftest between nva and a second device on the
# peer end, each run captured and decoded (tshark, roce.py decode).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Not on the debug kernel unless WIRE_FULL=1: the frames' format is the
# same code on every kernel (checked on 6.12 and 6.1), and the wire path
# runs under KASAN and lockdep there in rc.sh, ud.sh, inject.sh and
# netem.sh. It would be the longest script of the debug kernel's lane.
if vroce_debug_kernel && [ -z "${WIRE_FULL:-}" ]; then
	vroce_skip_all "frame formats are checked on 6.12 and 6.1; WIRE_FULL=1 runs them here"
fi

vroce_require ip rdma python3 tshark dumpcap ss timeout ib_write_bw \
	ib_read_bw ib_send_bw ib_atomic_bw

ROCE_PY="$VROCE_LIB_DIR/roce.py"
XT=/sys/kernel/debug/vroce/nva/xmit_test
PCAP=
GID_V4=
GID_V6=
GID_V1=
GID_VLAN=
NSA=
NSB=
MACA=
MACB=

cleanup() {
	[ ${#CM_DIRS[@]} = 0 ] || rmdir "${CM_DIRS[@]}" 2>/dev/null
	rdma link delete nvb 2>/dev/null
	rdma link delete nva 2>/dev/null
	rm -f "$RC_PCAP" "$VLAN_PCAP"
	vroce_unload
	rm -f "$PCAP"
	vroce_cleanup
}
trap cleanup EXIT

has_gid() {
	vroce_gid nva "$1" "$2" "$3" >/dev/null
}

# end_cmds DEV N: ip -batch lines that address DEV (192.0.2.N, 2001:db8::N)
# and its VLAN DEV.100 (198.51.100.N) and bring both up.
end_cmds() {
	printf '%s\n' "addr add 192.0.2.$2/24 dev $1" \
		"addr add 2001:db8::$2/64 dev $1 nodad" \
		"addr add 198.51.100.$2/24 dev $1.100" \
		"link set $1 up" "link set $1.100 up"
}

setup() {
	NSA=$(ns_add wa) && NSB=$(ns_add wb) || return 1
	# One ip process per namespace (each start costs on the debug kernel).
	{
		echo "link add va mtu 9000 type veth peer name vb mtu 9000 netns $NSB"
		echo "link add link va name va.100 type vlan id 100 egress-qos-map 0:0 5:5"
		end_cmds va 1
	} | ip -n "$NSA" -batch - || return 1
	{
		echo "link add link vb name vb.100 type vlan id 100"
		end_cmds vb 2
	} | ip -n "$NSB" -batch - || return 1
	MACA=$(ip netns exec "$NSA" cat /sys/class/net/va/address) &&
		MACB=$(ip netns exec "$NSB" cat /sys/class/net/vb/address) &&
		ip netns exec "$NSA" rdma link add nva type vroce netdev va &&
		PCAP=$(mktemp /tmp/vroce-wire.XXXXXX.pcap) && rm -f "$PCAP" &&
		wait_for 10 has_gid v4 va 192.0.2.1 &&
		wait_for 10 has_gid v6 va 2001:db8::1 &&
		wait_for 10 has_gid v1 va 2001:db8::1 &&
		wait_for 10 has_gid v4 va.100 198.51.100.1 || return 1
	GID_V4=$(vroce_gid nva v4 va 192.0.2.1) &&
		GID_V6=$(vroce_gid nva v6 va 2001:db8::1) &&
		GID_V1=$(vroce_gid nva v1 va 2001:db8::1) &&
		GID_VLAN=$(vroce_gid nva v4 va.100 198.51.100.1)
}

debugfs_dir() {
	[ -f "$XT" ] && [ "$(stat -c %a "$XT")" = 200 ]
}

# tx KIND SGID_INDEX ARGS...: send with xmit_test, check the captures.
tx() {
	local kind="$1" idx="$2"

	shift 2
	python3 "$ROCE_PY" tx --dev nva --ns "$NSB" --ifname vb --pcap "$PCAP" \
		--kind "$kind" --sgid-index "$idx" --dmac "$MACB" --smac "$MACA" "$@"
}

LENS=0,1,255,256,1024,4096

tx_v4() {
	tx v4 "$GID_V4" --sip 192.0.2.1 --dip 192.0.2.2 --dgid 192.0.2.2 \
		--tclass 0x6a --hop-limit 17 --lens $LENS
}

tx_v6() {
	tx v6 "$GID_V6" --sip 2001:db8::1 --dip 2001:db8::2 \
		--dgid 2001:db8::2 --tclass 0xb8 --flow-label 0x12345 \
		--hop-limit 3 --lens $LENS
}

tx_v6_no_flow_label() {
	tx v6 "$GID_V6" --sip 2001:db8::1 --dip 2001:db8::2 \
		--dgid 2001:db8::2 --sqpn 0x11 --lens 8
}

tx_v1() {
	tx v1 "$GID_V1" --sgid 2001:db8::1 --dgid 2001:db8::2 \
		--opcode UD_SEND_ONLY --tclass 0x20 --flow-label 0xabcde \
		--lens $LENS
}

tx_vlan() {
	tx v4 "$GID_VLAN" --sip 198.51.100.1 --dip 198.51.100.2 \
		--dgid 198.51.100.2 --vlan 100 --sl 5 --tclass 0x88 --lens 0,100
}

tx_opcodes() {
	tx v4 "$GID_V4" --sip 192.0.2.1 --dip 192.0.2.2 --dgid 192.0.2.2 \
		--opcode RC_ACKNOWLEDGE,RC_RDMA_WRITE_ONLY,RC_COMPARE_SWAP,UD_SEND_ONLY_WITH_IMMEDIATE,RC_SEND_ONLY_WITH_IMMEDIATE,CNP
}

# The payload is a test pattern: keep tshark's heuristic ULP dissectors
# (RPC over RDMA, EoIB, ...) from reading it as theirs.
TSHARK=(tshark -o udp.check_checksum:TRUE)
for p in rpcordma infiniband.eoib smc smb_direct nvme-rdma lnet iser \
	infiniband_sdp fcoib; do
	TSHARK+=(--disable-protocol "$p")
done

# Every captured frame is RoCE to tshark, with our DestQP and PSN, nothing
# is malformed or worth a warning, and RoCEv2/IPv6 UDP checksums are good.
# One tshark run: it is slow to start on the debug kernel.
tshark_decodes() {
	local out

	out=$("${TSHARK[@]}" -r "$PCAP" -T fields -E separator=/t \
		-E occurrence=a -E aggregator=, -e frame.number \
		-e infiniband.bth.destqp -e infiniband.bth.psn \
		-e _ws.malformed -e _ws.expert.severity -e ipv6.version \
		-e udp.checksum.status 2>/dev/null) || return 1
	awk -F '\t' '
	$2 != "0x123456" || $3 != 11259375 { print "BTH:", $0; bad = 1 }
	$4 != "" { print "malformed:", $0; bad = 1 }
	{
		n = split($5, sev, ",")
		for (i = 1; i <= n; i++)
			if (sev[i] + 0 >= 6291456) { print "expert:", $0; bad = 1 }
	}
	$6 == 6 && $7 != 1 { print "UDP/IPv6 checksum:", $0; bad = 1 }
	END {
		print NR, "frames"
		# 6 lengths for IPv4, IPv6 and RoCEv1, then 1 + 2 + 6 more
		exit bad || NR != 27
	}' <<<"$out"
}

XT_OK="sgid_index=0 dgid=192.0.2.2 dmac=02:00:00:00:00:01 dqpn=1 opcode=RC_SEND_ONLY len=0"

xt_write() {
	printf '%s' "$1" >"$XT"
}

# A malformed line is refused with EINVAL and sends nothing.
grammar() {
	local sent err line

	sent=$(hw_counter nva sent_pkts) && err=$(hw_counter nva send_err) || return 1
	for line in $'\n' " $XT_OK" "$XT_OK " "${XT_OK/ dqpn/  dqpn}" \
		"$XT_OK foo=1" "$XT_OK len=1" "${XT_OK/ len=0/}" \
		"${XT_OK/dqpn=1/dqpn=0x1000000}" "${XT_OK/dqpn=1/dqpn=-1}" \
		"${XT_OK/dqpn=1/dqpn=1x}" "${XT_OK/dqpn=1/dqpn}" \
		"${XT_OK/02:00:00:00:00:01/02:00:00:00:00}" \
		"${XT_OK/02:00:00:00:00:01/02:00:00:00:00:01:03}" \
		"${XT_OK/192.0.2.2/192.0.2}" "${XT_OK/RC_SEND_ONLY/SEND_ONLY}" \
		"${XT_OK/RC_SEND_ONLY/RC_RDMA_READ_REQUEST_X}" \
		"$XT_OK sl=8" "$XT_OK tclass=256" "$XT_OK flow_label=0x100000" \
		"${XT_OK/sgid_index=0/sgid_index=128}"; do
		fails_with "Invalid argument" xt_write "$line" || return 1
	done
	[ "$(hw_counter nva sent_pkts)" = "$sent" ] && [ "$(hw_counter nva send_err)" = "$err" ]
}

# Lines that parse but cannot be sent fail with the transmit error and
# count in send_err.
send_errors() {
	local idx err

	idx=$GID_V4 && err=$(hw_counter nva send_err) || return 1
	fails_with "Message too long" xt_write \
		"sgid_index=$idx dgid=192.0.2.2 dmac=02:00:00:00:00:01 dqpn=1 opcode=RC_SEND_ONLY len=9000" &&
		fails_with "Invalid argument" xt_write \
			"sgid_index=$idx dgid=192.0.2.2 dmac=02:00:00:00:00:01 dqpn=1 opcode=RC_ACKNOWLEDGE len=4" &&
		[ "$(hw_counter nva send_err)" = $((err + 2)) ]
}

# sgid_index of an empty GID table entry
empty_gid() {
	fails_with "No data available" xt_write \
		"${XT_OK/sgid_index=0/sgid_index=120}"
}

rdma_statistic() {
	rdma statistic show link nva/1 | grep -w sent_pkts &&
		rdma statistic show link nva/1 | grep -w rx_icrc_encapsulated
}

rx() {
	local kind="$1" sip="$2" dip="$3"

	shift 3
	python3 "$ROCE_PY" rx --dev nva --ns "$NSB" --ifname vb --kind "$kind" \
		--dmac "$MACA" --smac "$MACB" --sip "$sip" --dip "$dip" "$@"
}

rx_v4() { rx v4 192.0.2.2 192.0.2.1; }
rx_v6() { rx v6 2001:db8::2 2001:db8::1; }
rx_v1() { rx v1 2001:db8::2 2001:db8::1; }
# Received on va.100: the device is found through the VLAN's lower netdev.
rx_vlan_v4() { rx v4 198.51.100.2 198.51.100.1 --vlan 100; }
rx_vlan_v1() { rx v1 2001:db8::2 2001:db8::1 --vlan 100; }

# RC traffic between two vroce devices, nva in NSA and nvb on the veth's
# other end in NSB: short perftest runs (server in NSA), each captured on
# vb and checked by roce.py decode (tshark: RoCE v2, nothing malformed,
# the operation's opcodes; ICRCs computed by roce.py).
GID_B=
RC_PCAP=
RC_TIMEOUT=60

rc_setup() {
	ip netns exec "$NSB" rdma link add nvb type vroce netdev vb &&
		wait_for 10 vroce_gid nvb v4 vb 192.0.2.2 || return 1
	GID_B=$(vroce_gid nvb v4 vb 192.0.2.2)
}

# More than the 24-byte pcap file header.
pcap_has_frames() {
	[ "$(stat -c %s "$1")" -gt 24 ]
}

# rc_run TOOL ARGS...: TOOL's server in NSA on nva, its client in NSB on
# nvb, captured on vb into RC_PCAP.
rc_run() {
	local tool=$1 spid cpid rc=0

	shift
	RC_PCAP=$(mktemp /tmp/vroce-rc.XXXXXX.pcap) && rm -f "$RC_PCAP"
	ip netns exec "$NSB" dumpcap -q -P -i vb -f "udp port 4791" \
		-w "$RC_PCAP" >"$VROCE_LOG.cap" 2>&1 &
	cpid=$!
	wait_for 20 test -s "$RC_PCAP" || { cat "$VROCE_LOG.cap"; return 1; }
	ip netns exec "$NSA" timeout "$RC_TIMEOUT" "$tool" -d nva -x "$GID_V4" \
		-F "$@" >"$VROCE_LOG.srv" 2>&1 &
	spid=$!
	if wait_for 20 tcp_listening 18515 ip netns exec "$NSA"; then
		ip netns exec "$NSB" timeout "$RC_TIMEOUT" "$tool" -d nvb \
			-x "$GID_B" -F "$@" 192.0.2.1 || rc=$?
	else
		echo "the server did not listen"
		rc=1
	fi
	wait "$spid" || { echo "server: exit $?"; cat "$VROCE_LOG.srv"; rc=1; }
	# dumpcap drops what it has not read yet when interrupted: a short
	# run could end before the first frame reached the file.
	wait_for 5 pcap_has_frames "$RC_PCAP"
	kill -INT "$cpid" 2>/dev/null
	wait "$cpid"
	return $rc
}

# rc_decode OP: check the capture; keep roce.py's summary line.
rc_decode() {
	python3 "$ROCE_PY" decode --pcap "$RC_PCAP" --traffic "$1" |
		tee "$VROCE_LOG.decode"
	return "${PIPESTATUS[0]}"
}

rc_write() { rc_run ib_write_bw -n 20 -s 8192; }
rc_read() { rc_run ib_read_bw -n 20 -s 8192; }
rc_send() { rc_run ib_send_bw -n 20 -s 8192; }
rc_atomic() { rc_run ib_atomic_bw -n 20; }

# On a lean kernel (vroce_lean_kernel: debug, 6.1) only the WRITE run is
# made and decoded (rc.sh runs every operation there, and a capture decodes
# the same way on every kernel) unless WIRE_FULL=1.
SLOW=
vroce_lean_kernel && [ -z "${WIRE_FULL:-}" ] && SLOW=1
# On the debug kernel, tshark does not decode the captures either: the
# frames come from the same code on every kernel, and tshark starts slowly
# there. 6.12 and 6.1 decode everything.
NO_DECODE=
vroce_debug_kernel && [ -z "${WIRE_FULL:-}" ] && NO_DECODE=1

# check_decode DESC CMD...: a check of a capture's decoding, or its skip.
check_decode() {
	if [ -n "$NO_DECODE" ]; then
		ktap_test_skip "$1: not decoded on the debug kernel, WIRE_FULL=1 does"
	else
		check "$@"
	fi
}

# check_rc OP TOOL: one run and its capture.
check_rc() {
	if [ -n "$SLOW" ] && [ "$1" != write ]; then
		ktap_test_skip "RC $2: lean run on this kernel, WIRE_FULL=1 runs it"
		ktap_test_skip "RC $2 capture: lean run on this kernel"
		return
	fi
	check "RC $2 between two vroce devices in two namespaces" "rc_$1"
	check_decode "RC $2 capture: tshark decodes RoCE v2, $1 opcodes, ICRCs right" \
		rc_decode "$1"
	grep -s '^# [0-9]* frames' "$VROCE_LOG.decode"
	rm -f "$RC_PCAP" "$VROCE_LOG.decode"
}

# rping (rdma_cm, RC SEND and RDMA READ/WRITE with data verification)
# between nva and nvb over the VLAN netdevs va.100 and vb.100, captured on
# the lower veth vb. rdma_cm's default ToS for both devices is 0x10:
# rt_tos2priority() gives priority 6, iboe_tos_to_sl() the SL the VLAN's
# egress-qos-map gives priority 6, and vroce's skb->priority is that SL,
# which the map turns into the PCP. Both VLANs map 6 and 5 to 5, so
# every RoCE frame either way must carry VID 100, PCP 5 and DSCP 4.
# (A map where the SL's own entry differs, e.g. 6:5 with 5:0, would give
# the SL's entry, not the SL as hardware does: see vroce.rst, Priority.)
VLAN_PCP=5
VLAN_TOS=16
VLAN_PCAP=
CM_DIRS=()

cm_tos() {
	local dev dir

	modprobe -a configfs rdma_cm 2>/dev/null
	[ -d /sys/kernel/config/rdma_cm ] ||
		mount -t configfs none /sys/kernel/config 2>/dev/null
	for dev in nva nvb; do
		dir=/sys/kernel/config/rdma_cm/$dev
		[ -d "$dir" ] || mkdir "$dir" || return 1
		CM_DIRS+=("$dir")
		echo "$1" >"$dir/ports/1/default_roce_tos" || return 1
	done
}

vlan_rping() {
	local spid cpid rc=0 port=19700

	ip -n "$NSA" link set va.100 type vlan egress-qos-map 6:$VLAN_PCP \
		$VLAN_PCP:$VLAN_PCP &&
		ip -n "$NSB" link set vb.100 type vlan egress-qos-map \
			6:$VLAN_PCP $VLAN_PCP:$VLAN_PCP &&
		cm_tos "$VLAN_TOS" &&
		wait_for 10 vroce_gid nvb v4 vb.100 198.51.100.2 || return 1
	VLAN_PCAP=$(mktemp /tmp/vroce-vlan.XXXXXX.pcap) && rm -f "$VLAN_PCAP"
	ip netns exec "$NSB" dumpcap -q -P -i vb -w "$VLAN_PCAP" \
		>"$VROCE_LOG.cap" 2>&1 &
	cpid=$!
	wait_for 20 test -s "$VLAN_PCAP" || { cat "$VROCE_LOG.cap"; return 1; }
	ip netns exec "$NSB" timeout "$RC_TIMEOUT" rping -s -a 198.51.100.2 \
		-p $port -V -C 5 -S 1000 >"$VROCE_LOG.srv" 2>&1 &
	spid=$!
	if wait_for 20 cm_listening "$port" ip netns exec "$NSB"; then
		ip netns exec "$NSA" timeout "$RC_TIMEOUT" rping -c \
			-a 198.51.100.2 -p $port -V -C 5 -S 1000 || rc=$?
		[ "$rc" = 0 ] || echo "client: exit $rc"
	else
		echo "rping's server did not listen"
		rc=1
	fi
	wait "$spid" || { echo "server: exit $?"; cat "$VROCE_LOG.srv"; rc=1; }
	sleep 0.5
	kill -INT "$cpid" 2>/dev/null
	wait "$cpid"
	return $rc
}

# Every RoCE frame of the capture: VLAN 100 with PCP VLAN_PCP, DSCP of
# VLAN_TOS, decoded as InfiniBand by tshark, nothing malformed; RC frames
# (not only the CM's MADs to QP 1) both ways.
vlan_capture() {
	local out

	out=$("${TSHARK[@]}" -r "$VLAN_PCAP" -Y "udp.dstport == 4791" -T fields \
		-E separator=/t -E occurrence=a -E aggregator=, \
		-e frame.number -e vlan.id -e vlan.priority -e ip.dsfield.dscp \
		-e infiniband.bth.opcode -e infiniband.bth.destqp \
		-e _ws.malformed -e _ws.expert.severity -e ip.src \
		2>/dev/null) || return 1
	awk -F '\t' -v pcp="$VLAN_PCP" -v dscp=$((VLAN_TOS >> 2)) '
	$2 != 100 || $3 != pcp || $4 != dscp {
		print "tag/DSCP:", $0; bad = 1
	}
	$5 == "" { print "not InfiniBand:", $0; bad = 1 }
	$7 != "" { print "malformed:", $0; bad = 1 }
	{
		n = split($8, sev, ",")
		for (i = 1; i <= n; i++)
			if (sev[i] + 0 >= 6291456) { print "expert:", $0; bad = 1 }
	}
	$6 != "0x000001" && $6 != 1 && !rc[$9]++ { nsrc++ }
	{ tags["VID " $2 " PCP " $3 " DSCP " $4]++ }
	END {
		printf "# %d RoCE frames:", NR
		for (s in rc) printf " %d RC from %s,", rc[s], s
		for (t in tags) printf " %d %s", tags[t], t
		printf "\n"
		exit bad || nsrc != 2
	}' <<<"$out" | tee "$VROCE_LOG.vlan"
	return "${PIPESTATUS[0]}"
}

# Not on a lean kernel (debug: wire.sh takes most of its 900 s there; 6.1)
# by default; WIRE_FULL=1 runs it.
check_vlan_rping() {
	local why=

	command -v rping >/dev/null || why="rping not installed"
	if vroce_lean_kernel && [ -z "${WIRE_FULL:-}" ]; then
		why="lean run on this kernel, WIRE_FULL=1 runs it"
	fi
	if [ -n "$why" ]; then
		ktap_test_skip "rping over VLAN netdevs: $why"
		ktap_test_skip "rping over VLAN capture: $why"
		return
	fi
	check "rping -V over VLAN netdevs (rdma_cm ToS $VLAN_TOS)" vlan_rping
	check "rping over VLAN capture: VID 100, PCP $VLAN_PCP from the egress-qos-map, DSCP, RoCE v2" \
		vlan_capture
	grep -s '^# [0-9]* RoCE frames' "$VROCE_LOG.vlan"
	rm -f "$VLAN_PCAP" "$VROCE_LOG.vlan"
}

debugfs_removed() {
	rdma link delete nva && [ ! -e /sys/kernel/debug/vroce/nva ] &&
		[ -d /sys/kernel/debug/vroce ]
}

ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan 30
check "two namespaces, veth pair, VLAN, a device with its GIDs" setup
check "debugfs xmit_test exists, write-only" debugfs_dir
check "tx RoCEv2/IPv4: DF, TOS, TTL, UDP, BTH, payload, ICRC, counters" tx_v4
check "tx RoCEv2/IPv6: traffic class, flow label, UDP csum, ICRC" tx_v6
check "tx RoCEv2/IPv6: UDP sport from the QPNs without a flow label" \
	tx_v6_no_flow_label
check "tx RoCEv1: ethertype 0x8915, GRH, ICRC" tx_v1
check "tx over a VLAN netdev: tag, PCP from the SL" tx_vlan
check "tx opcodes with extension headers and CNP" tx_opcodes
check_decode "tshark decodes every frame as RoCE, nothing malformed" \
	tshark_decodes
check "xmit_test refuses malformed lines with EINVAL" grammar
check "transmit errors are returned and counted in send_err" send_errors
check "xmit_test on an empty GID table entry fails" empty_gid
check "rdma statistic shows the counters" rdma_statistic
check "rx RoCEv2/IPv4: good and bad packets, exact counters" rx_v4
check "rx RoCEv2/IPv6: good and bad packets, exact counters" rx_v6
check "rx RoCEv1: good and bad frames, exact counters" rx_v1
check "rx RoCEv2/IPv4 on a VLAN upper of the netdev" rx_vlan_v4
check "rx RoCEv1 on a VLAN upper of the netdev" rx_vlan_v1
check "a second vroce device on the peer veth, in the other namespace" rc_setup
check_rc write ib_write_bw
check_rc read ib_read_bw
check_rc send ib_send_bw
check_rc atomic ib_atomic_bw
check_vlan_rping
check "the debugfs directory goes with the device" debugfs_removed
ktap_finished
