#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the Debian kernels vroce is tested on, one per line: the newest
# installed 6.12 and the newest installed 6.1 that have both headers (to
# build against) and an image in /boot (to boot in the test VM). Exits 1,
# after printing what it found, if either line is missing.
#
#   tools/kernels.sh         both
#   tools/kernels.sh 6.12    only the 6.12 one (what the benchmarks boot)
#   tools/kernels.sh all     both, then Debian sid's 7.2 kernels, which
#                            build in the sid root (tools/sid-root.sh
#                            releases; make kernels)
set -euo pipefail

newest() {
	local k

	for k in $(find /lib/modules -mindepth 1 -maxdepth 1 -printf '%f\n' | grep -E "$1" | sort -V -r); do
		if [ -f "/lib/modules/$k/build/Makefile" ] && [ -f "/boot/vmlinuz-$k" ]; then
			echo "$k"
			return 0
		fi
	done
	echo "kernels: no $2 kernel with headers and /boot image (tools/deps.sh installs one)" >&2
	return 1
}

if [ "${1:-}" = all ]; then
	rc=0
	"$0" || rc=1
	"$(dirname "$0")/sid-root.sh" releases
	exit $rc
fi
if [ "${1:-}" = 6.12 ]; then
	newest '^6\.12\.' 6.12
	exit
fi
rc=0
newest '^6\.12\.' 6.12 || rc=1
newest '^6\.1\.' 6.1 || rc=1
exit $rc
