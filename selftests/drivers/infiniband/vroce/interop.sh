#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Wire interop between two VMs joined by a virtual Ethernet link
# (tools/testing/vm/pair.sh, which sets VROCE_PEER=1 or 2; skips elsewhere).
# VM N puts its RDMA driver (VROCE_INTEROP="DRIVER1 DRIVER2", default
# "rxe vroce") on its virtio NIC with the address 203.0.113.N, then both run
# ibv_rc_pingpong, ib_write_bw, ib_read_bw, ib_send_bw and ib_atomic_bw over
# the RoCE v2 GID of that address, each once with the server on VM1 and once
# on VM2. Each VM reports its own side of every run (so a run is two
# results). The VMs meet at barriers (a TCP exchange on port 7470 over the
# same link) before each client starts and after each run; a barrier that
# times out means the peer is gone, and every later run fails at once.
# vm2 also captures each perftest run on its NIC (dumpcap) and checks the
# capture with roce.py decode: tshark decodes every frame as RoCE v2 with
# nothing malformed, the opcodes are the operation's, ICRCs are right.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ -n "${VROCE_PEER:-}" ] ||
	vroce_skip_all "needs two VMs: tools/testing/vm/pair.sh (make check runs it on 6.12)"
vroce_require ip rdma python3 ss timeout ibv_rc_pingpong ib_write_bw \
	ib_read_bw ib_send_bw ib_atomic_bw

# DRV[N]: VM N's driver.
read -ra DRV <<<"- ${VROCE_INTEROP:-rxe vroce}"
ME=$VROCE_PEER
PEER=$((3 - ME))
MY_DRV=${DRV[ME]}
PEER_DRV=${DRV[PEER]}
MY_IP=203.0.113.$ME
PEER_IP=203.0.113.$PEER
DEV=peer$ME
SYNC_PORT=7470
TOOL_PORT=18515
# Boot skew between the two guests, and a slow peer.
FIRST_WAIT=180
WAIT=90
# ibv_rc_pingpong and perftest hang forever when the peer does not answer.
TOOL_TIMEOUT=60
GID=
NIC=
PEER_LOST=

cleanup() {
	capture_stop
	rdma link delete "$DEV" 2>/dev/null
	[ "$MY_DRV" = rxe ] && modprobe -r rdma_rxe 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

# barrier NAME PAYLOAD TIMEOUT: meet the peer at NAME; print its PAYLOAD.
# VM1 listens, VM2 connects (retrying until the deadline).
barrier() {
	[ -z "$PEER_LOST" ] || return 1
	if ! python3 - "$ME" "$PEER_IP" "$SYNC_PORT" "$1" "$2" "$3" <<'EOF'; then
import socket, sys, time
me, peer, port, name, payload, timeout = sys.argv[1:]
port, timeout = int(port), float(timeout)
deadline = time.monotonic() + timeout
if me == "1":
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    s.settimeout(timeout)
    c = s.accept()[0]
    s.close()
else:
    while True:
        try:
            c = socket.create_connection((peer, port), timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
c.settimeout(max(deadline - time.monotonic(), 5))
c.sendall(("%s %s\n" % (name, payload)).encode())
got = c.makefile().readline().split()
c.close()
if not got or got[0] != name:
    sys.exit("barrier %s: the peer is at %s" % (name, got))
print(got[1] if len(got) > 1 else "")
EOF
		PEER_LOST=1
		echo "# barrier $1: the peer did not come within $3 s" >&2
		return 1
	fi
}

# The virtio NIC pair.sh gave us.
find_nic() {
	local f

	for f in /sys/class/net/*/address; do
		[ "$(cat "$f")" = "52:54:00:00:76:0$ME" ] && basename "${f%/address}" &&
			return 0
	done
	return 1
}

# The index of DEV's RoCE v2 GID for MY_IP.
gid_v4() {
	local want f i

	# shellcheck disable=SC2086 # the address's four bytes
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
		${MY_IP//./ })
	for f in /sys/class/infiniband/"$DEV"/ports/1/gids/*; do
		i=${f##*/}
		[ "$(cat "$f" 2>/dev/null)" = "$want" ] &&
			[ "$(cat "/sys/class/infiniband/$DEV/ports/1/gid_attrs/types/$i" \
				2>/dev/null)" = "RoCE v2" ] && echo "$i" && return 0
	done
	return 1
}

load_driver() {
	case $MY_DRV in
	rxe) modprobe rdma_rxe ;;
	vroce) vroce_load ;;
	*) echo "unknown driver '$MY_DRV'" && return 1 ;;
	esac
}

setup() {
	NIC=$(find_nic) || { echo "no NIC with MAC 52:54:00:00:76:0$ME"; return 1; }
	ip addr add "$MY_IP/24" dev "$NIC" && ip link set "$NIC" up &&
		load_driver &&
		rdma link add "$DEV" type "$MY_DRV" netdev "$NIC" &&
		wait_for 10 gid_v4 || return 1
	GID=$(gid_v4)
	echo "$DEV ($MY_DRV) on $NIC, $MY_IP, GID index $GID"
}

setup_and_meet() {
	local ok=up peer

	setup || ok=down
	peer=$(barrier setup "$ok" "$FIRST_WAIT") || return 1
	[ "$peer" = up ] || echo "the peer's setup failed"
	[ "$ok" = up ] && [ "$peer" = up ]
}

# args TOOL: the tool's arguments on both sides (the client adds the
# server's address).
args() {
	case $1 in
	ibv_rc_pingpong) echo "-d $DEV -g $GID -n 200 -c" ;;
	ib_atomic_bw) echo "-d $DEV -x $GID -F -n 500" ;;
	*) echo "-d $DEV -x $GID -F -n 100 -s 16384" ;;
	esac
}

# serve N TOOL LOG: run TOOL's server, tell the client when it listens,
# wait for it; then exchange results.
serve() {
	local n=$1 tool=$2 log=$3 pid rc=0 up=up peer

	# shellcheck disable=SC2046 # the argument list
	timeout "$TOOL_TIMEOUT" "$tool" $(args "$tool") >"$log" 2>&1 &
	pid=$!
	wait_for 20 tcp_listening "$TOOL_PORT" || up=down
	barrier "ready-$n" "$up" "$WAIT" >/dev/null || up=down
	[ "$up" = up ] || kill "$pid" 2>/dev/null
	wait "$pid" || rc=$?
	peer=$(barrier "done-$n" "$rc" "$WAIT") || peer="(peer lost)"
	report server "$rc" "$peer" "$log"
}

# connect N TOOL LOG: wait for the server, run the client.
connect() {
	local n=$1 tool=$2 log=$3 rc=0 peer

	peer=$(barrier "ready-$n" up "$WAIT") || peer=down
	if [ "$peer" = up ]; then
		# shellcheck disable=SC2046 # the argument list
		timeout "$TOOL_TIMEOUT" "$tool" $(args "$tool") "$PEER_IP" \
			>"$log" 2>&1 || rc=$?
	else
		echo "the server did not come up" >"$log"
		rc=1
	fi
	peer=$(barrier "done-$n" "$rc" "$WAIT") || peer="(peer lost)"
	report client "$rc" "$peer" "$log"
}

report() {
	echo "this side ($1): exit $2$([ "$2" = 124 ] && echo ' (timeout)');" \
		"the peer: exit $3"
	if [ "$2" != 0 ]; then
		cat "$4"
		if [ "$MY_DRV" = vroce ]; then
			echo "--- kernel messages in this VM (last 30):"
			dmesg | tail -n 30
		fi
		return 1
	fi
	tail -n 3 "$4"
}

# What roce.py decode expects of each perftest tool's traffic.
traffic() {
	case $1 in
	ib_write_bw) echo write ;;
	ib_read_bw) echo read ;;
	ib_send_bw) echo send ;;
	ib_atomic_bw) echo atomic ;;
	*) return 1 ;;
	esac
}

capture_start() {
	rm -f "$PCAP"
	dumpcap -q -P -i "$NIC" -f "udp port 4791" -w "$PCAP" >"$PCAP.log" 2>&1 &
	CAPTURE_PID=$!
	wait_for 20 test -s "$PCAP" || { cat "$PCAP.log"; return 1; }
}

capture_stop() {
	[ -n "$CAPTURE_PID" ] || return 0
	bg_stop CAPTURE_PID INT
}

# step N TOOL SERVER_VM: one run; vm2 captures the perftest ones.
step() {
	local n=$1 tool=$2 server=$3 log="$VROCE_LOG.$1" rc=0 capture=

	if [ "$ME" = 2 ] && traffic "$tool" >/dev/null; then
		capture_start && capture=1 || echo "dumpcap did not start"
	fi
	if [ "$ME" = "$server" ]; then
		serve "$n" "$tool" "$log" || rc=1
	else
		connect "$n" "$tool" "$log" || rc=1
	fi
	if [ -n "$capture" ]; then
		capture_stop
		mv "$PCAP" "$(pcap "$n" "$tool")"
	fi
	return $rc
}

# pcap N TOOL: where run N's capture is kept (the VM's output dir, for
# post-mortems).
pcap() {
	echo "${VROCE_OUT:-/tmp}/interop-$1-$2.pcap"
}

# decode N TOOL: check the capture of run N; keep roce.py's summary.
decode() {
	local f

	f=$(pcap "$1" "$2")
	[ -s "$f" ] || { echo "no capture"; return 1; }
	python3 "$VROCE_LIB_DIR/roce.py" decode --pcap "$f" \
		--traffic "$(traffic "$2")" | tee "$VROCE_LOG.decode"
	return "${PIPESTATUS[0]}"
}

TOOLS="ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw"
PCAP=$VROCE_LOG.pcap
CAPTURE_PID=

if [ "$ME" = 2 ]; then
	vroce_require dumpcap tshark
fi
ktap_print_header
if [ "$ME" = 2 ]; then
	ktap_set_plan 19
else
	ktap_set_plan 11
fi
check "vm$ME: $MY_DRV on the virtio NIC, the peer vm$PEER ($PEER_DRV) up" \
	setup_and_meet
n=0
for tool in $TOOLS; do
	for server in 1 2; do
		n=$((n + 1))
		side=$([ "$ME" = "$server" ] && echo server || echo client)
		what="$tool: server vm$server (${DRV[server]}), client vm$((3 - server)) (${DRV[3 - server]})"
		check "$what: $side side" step "$n" "$tool" "$server"
		if [ "$ME" = 2 ] && traffic "$tool" >/dev/null; then
			check "$what: captured in vm2, tshark decodes RoCE v2, the op's opcodes, good ICRCs" \
				decode "$n" "$tool"
			grep -s '^# [0-9]* frames' "$VROCE_LOG.decode"
			rm -f "$VROCE_LOG.decode"
		fi
	done
done
ktap_finished
