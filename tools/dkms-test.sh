#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/dkms-test.sh: the DKMS test (selftest dkms.sh) in the test VM.
# Builds two packages, the VERSION file's and one a step newer
# (DKMS_VERSION), and the selftests, then boots the newest Debian 6.12
# kernel to install, load, use, upgrade and remove the package there.
#
#   DKMS_KERNEL=<release>  kernel to boot (default: newest Debian 6.12)
#
# DKMS builds the module under TCG for each kernel with headers (Debian's
# 6.12 and 6.1 here), at install and again at the upgrade: about half an
# hour in all. Output in build/dkms-test/ (console.log, ksft.tap). Exit
# status: the VM runner's (tools/testing/vm/README).
set -uo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
OUT=$TOP/build/dkms-test
version=$(cat "$TOP/VERSION")
kernel=${DKMS_KERNEL:-$("$TOP/tools/kernels.sh" 6.12)} || exit 1

make -s --no-print-directory -C "$TOP" KVER="$kernel" || exit 1
deb1=$("$TOP/tools/dkms-deb.sh") &&
	deb2=$(DKMS_VERSION="$version.1" "$TOP/tools/dkms-deb.sh") || exit 1
"$TOP/tools/ksft.sh" build >"$TOP/build/dkms-test-ksft.log" 2>&1 || {
	echo "dkms-test: tools/ksft.sh build failed, see build/dkms-test-ksft.log" >&2
	exit 1
}
rm -rf "$OUT"
mkdir -p "$OUT"
"$TOP/tools/testing/vm/run.sh" -k "$kernel" -t 3600 -o "$OUT" -- \
	env VROCE_KO="$TOP/build/$kernel/vroce.ko" \
	VROCE_DKMS_DEBS="$deb1 $deb2" VROCE_VERBOSE=1 \
	"$TOP/tools/ksft.sh" run dkms.sh
