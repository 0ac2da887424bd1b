#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creation and destruction times per object, at scale: the selftest
# scale.sh (selftests/drivers/infiniband/vroce) in one VM run, by default
# its whole matrix (SCALE_FULL=1: every limit of a device with the
# driver's limits, 16384 QPs included, and 64 devices in 64 namespaces).
# Nothing is asserted on time; the test's own checks still count.
#
#   tools/bench/scale.sh
#
# Environment:
#   SCALE_KERNEL=<release>   kernel to boot (default: newest Debian 6.12)
#   SCALE_FULL=1             0 runs make check's bounded slice instead
#   SCALE_MEM=2048M          guest RAM (16384 QPs take about 400 MB)
#   SCALE_TIMEOUT=3600       VM timeout in seconds
#
# Output in build/bench/scale/: results.txt (one line per object kind and
# device: "create KIND: X us/object (N objects, T s)", "destroy ...", the
# kernel memory growth and the test's verdicts), vm/ (console, dmesg, the
# whole TAP in vm/ksft.tap).
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
OUT=$TOP/build/bench/scale
FULL=${SCALE_FULL:-1}
[ "$FULL" = 0 ] && FULL=

kernel=${SCALE_KERNEL:-$("$TOP/tools/kernels.sh" 6.12)} || {
	echo "scale: no Debian 6.12 kernel to boot (SCALE_KERNEL=...)" >&2
	exit 1
}
rm -rf "$OUT"
mkdir -p "$OUT/vm"
echo "scale: building vroce for $kernel and the selftests"
make -s --no-print-directory -C "$TOP" KVER="$kernel" || exit 1
"$TOP/tools/ksft.sh" build >"$OUT/ksft-build.log" 2>&1 || {
	echo "scale: tools/ksft.sh build failed, see $OUT/ksft-build.log" >&2
	exit 1
}
echo "scale: booting $kernel in QEMU (TCG)${FULL:+, SCALE_FULL=1}, output in build/bench/scale/"
cd "$TOP" || exit 1
start=$SECONDS
rc=0
"$TOP/tools/testing/vm/run.sh" -k "$kernel" -m "${SCALE_MEM:-2048M}" \
	-t "${SCALE_TIMEOUT:-3600}" -o "$OUT/vm" -- \
	env VROCE_KO="$TOP/build/$kernel/vroce.ko" SCALE_FULL="$FULL" \
	KSFT_TIMEOUT=$((${SCALE_TIMEOUT:-3600} - 120)) \
	tools/ksft.sh run scale.sh >"$OUT/vm/run.log" 2>&1 || rc=$?
{
	echo "scale.sh on $kernel, $(date -u +%F), ${FULL:+SCALE_FULL=1, }VM run $((SECONDS - start)) s"
	tr -d '\r' <"$OUT/vm/run.log" |
		sed -n 's/^\(# \)\?\(\(ok\|not ok\) [0-9]* .*\)/\2/p
			s/^\(# \)*\(\(create\|destroy\) .*\)/  \2/p
			s/^\(# \)*\(kernel memory: .*\)/  \2/p
			s/^\(# \)*\(.*: the device.s limit is .*\)/  \2/p
			s/^\(# \)*\(scale.sh took .*\)/\2/p'
} >"$OUT/results.txt"
cat "$OUT/results.txt"
[ "$rc" = 0 ] || echo "scale: the VM run failed (run.sh exit $rc), see $OUT/vm/"
exit "$rc"
