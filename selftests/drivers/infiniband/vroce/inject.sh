#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A raw-socket injector against live QPs: two namespaces joined by a veth
# pair, a vroce device at each end:
#
#   [ns ina-*: nva over va] ==veth== [ns inb-*: nvb over vb]
#
# inject_test holds an RC QP pair and a UD QP at each end (connected over
# RoCE v2 IPv4); roce.py live sends frames from vb at nva's RC QP (at the
# PSN it expects next) and UD QP, framed as RoCE v2 over IPv4 and IPv6 and
# as RoCE v1: a bad ICRC, TVer 1, wrong P_Keys, wrong Q_Keys, truncated
# BTH and extension headers, unknown, reserved and other transports'
# opcodes, bad lengths. Each is dropped and counted: exactly the expected
# counters move (every other hw counter of nva stays), no completion
# appears on any CQ and every QP stays in RTS. Two good datagrams at the
# UD QP are delivered, which shows the frames reach the QP. Then the same
# QPs carry RC SEND, WRITE and READ both ways and UD SEND both ways, byte
# for byte. Then, over RoCE v2 IPv4, at RC QPs of nva whose peer QP stays
# in RESET (so the injector plays the peer):
#  - nva READs several MTUs; a forged PSN sequence NAK, then an RNR NAK,
#    with a PSN inside the READ's response PSNs, and forged responses from
#    that PSN on, must not complete the READ (a success must carry the
#    exact bytes); all its responses from its first PSN then complete it.
#  - forged READ requests at nva's responder: a READ, then duplicates that
#    its record covers (the same RETH, its tail at a later PSN) are served
#    again, byte for byte; duplicates it does not cover (an earlier PSN,
#    another address or rkey, a tail at the wrong PSN, a length above the
#    maximum message size) get no answer and count in
#    duplicate_request_dropped, the QP stays in RTS and serves the next
#    READ; a duplicate of a READ whose MR was deregistered since is NAKed
#    (remote access error, 0x62) and the QP goes to ERR.
#  - an RC QP moved through RESET, INIT, RTR, RTS, SQD, ERR and RESET
#    gets, in each state, ACKs, NAKs, READ and atomic responses that
#    answer nothing it sent, then a WRITE, a SEND and a READ at the PSNs it
#    expects. In RESET, INIT and ERR all are dropped and counted
#    (rcvd_qp_state_err), nothing is answered, written or completed and
#    the state stays; in RTR, RTS and SQD the responses are ignored and the
#    requests executed (the READ returns the WRITE's bytes, the SEND
#    completes a receive), with no error counter moving.
#  - a SEND that stops after its first packet leaves an RC QP's responder
#    holding a receive WQE; the QP goes to ERR while a receive and a SEND
#    are posted between the state change and the flushes (debugfs
#    err_delay_us): every receive completes flushed, in the order posted.
# Last, a request with valid headers but out of sequence (SEND MIDDLE with
# no message open) at a spare RC QP is what IBTA calls an invalid request:
# NAKed (syndrome 0x61, captured) and the QP goes to ERR.
#
# A lean kernel but the KASAN debug kernel (6.1, 7.2, KCSAN:
# vroce_lean_data_path) runs the RoCE v2 IPv4 framing only (INJECT_FULL=1
# runs all three).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma python3 timeout

ROCE_PY="$VROCE_LIB_DIR/roce.py"
KINDS=(v4 v6 v1)

RUN_KINDS=${KINDS[*]}
if vroce_lean_data_path && [ -z "${INJECT_FULL:-}" ]; then
	RUN_KINDS=v4
fi

trap vroce_ns_devs_cleanup EXIT

setup() {
	vroce_veth_ns ina inb v6 && vroce_ns_devs nva nvb
}

live() {
	local kinds=$1

	VROCE_DEV=nva VROCE_PEER_DEV=nvb timeout 900 python3 "$ROCE_PY" live \
		--dev nva --ns "$NSB" --ifname vb --dmac "$MACA" --smac "$MACB" \
		--sip 192.0.2.2 --dip 192.0.2.1 --sip6 2001:db8::2 \
		--dip6 2001:db8::1 --prog "$VROCE_BIN/inject_test" \
		--kinds "${kinds// /,}"
}

# Each framing: the RC and the UD group; then traffic, the two NAKs inside
# a READ, the duplicate READs, the QP in every state, the QP going to ERR
# under a half-received SEND and the spare QP.
ktap_print_header
vroce_load || ktap_exit_fail_msg "cannot load $VROCE_KO"
ktap_set_plan $((1 + 2 * ${#KINDS[@]} + 7))
if ! setup >"$VROCE_LOG" 2>&1; then
	sed 's/^/# /' "$VROCE_LOG"
	ktap_test_fail "two namespaces, veth pair, a vroce device at each end"
	for ((i = 0; i < 2 * ${#KINDS[@]} + 7; i++)); do
		ktap_test_skip "case $i: no topology"
	done
	ktap_finished
	exit
fi
ktap_test_pass "two namespaces, veth pair, a vroce device at each end"
for kind in "${KINDS[@]}"; do
	case " $RUN_KINDS " in *" $kind "*) continue ;; esac
	ktap_test_skip "$kind: frames at the live RC QP: lean run on this kernel, INJECT_FULL=1 runs it"
	ktap_test_skip "$kind: frames at the live UD QP: lean run on this kernel, INJECT_FULL=1 runs it"
done
live "$RUN_KINDS" >"$VROCE_LOG.live" 2>&1
n=0
while IFS= read -r line; do
	case $line in
	"RESULT ok "*) ktap_test_pass "${line#RESULT ok }" ;;
	"RESULT fail "*) ktap_test_fail "${line#RESULT fail }" ;;
	*) continue ;;
	esac
	n=$((n + 1))
done <"$VROCE_LOG.live"
want=0
for kind in $RUN_KINDS; do want=$((want + 2)); done
want=$((want + 7))
grep -v '^RESULT ' "$VROCE_LOG.live" | sed 's/^/# /'
if [ "$n" != "$want" ] || grep -q "^# FAIL" "$VROCE_LOG.live"; then
	ip netns exec "$NSA" rdma statistic show link nva/1 | sed 's/^/# /'
fi
for ((; n < want; n++)); do
	ktap_test_fail "result $n: roce.py live did not report it"
done
ktap_finished
