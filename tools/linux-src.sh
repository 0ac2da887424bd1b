#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the root of a Linux 6.12 source tree that holds the files vroce's
# tooling borrows from the kernel (none of them is committed here):
#
#   tools/testing/selftests/{lib.mk,kselftest.h,kselftest_harness.h,
#                            kselftest/*,run_kselftest.sh}   (tools/ksft.sh)
#   scripts/{checkpatch.pl,spelling.txt,const_structs.checkpatch} (tools/lint.sh)
#
# They come from Debian's linux-source-6.12 package (tools/deps.sh installs
# it). A fully extracted tree in the cache (the debug kernel's, see
# tools/testing/vm/debug-kernel.sh) is used as is; otherwise only the files
# above are extracted, once, into $VROCE_CACHE/linux-source-6.12-parts.
# The extraction goes to a temporary directory that is renamed into place, so
# an interrupted run never leaves a half tree behind.
set -euo pipefail

TARBALL=/usr/src/linux-source-6.12.tar.xz
CACHE=${VROCE_CACHE:-/var/cache/vroce}
if ! mkdir -p "$CACHE" 2>/dev/null || [ ! -w "$CACHE" ]; then
	CACHE=$(cd "$(dirname "$0")/.." && pwd)/build/cache
	mkdir -p "$CACHE"
fi

FILES=(
	tools/testing/selftests/lib.mk
	tools/testing/selftests/kselftest.h
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/run_kselftest.sh
	tools/testing/selftests/kselftest/runner.sh
	tools/testing/selftests/kselftest/prefix.pl
	tools/testing/selftests/kselftest/ktap_helpers.sh
	tools/testing/selftests/kselftest/module.sh
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
)

has_all() {
	local f
	for f in "${FILES[@]}"; do
		[ -f "$1/$f" ] || return 1
	done
}

full=$CACHE/linux-source-6.12
if has_all "$full"; then
	echo "$full"
	exit 0
fi

parts=$CACHE/linux-source-6.12-parts
if has_all "$parts" && [ "$parts" -nt "$TARBALL" ]; then
	echo "$parts"
	exit 0
fi

[ -r "$TARBALL" ] || {
	echo "linux-src: $TARBALL missing; run tools/deps.sh (package linux-source-6.12)" >&2
	exit 1
}

exec 9>"$CACHE/.linux-source-6.12-parts.lock"
flock 9
if ! has_all "$parts" || [ "$TARBALL" -nt "$parts" ]; then
	tmp=$(mktemp -d "$CACHE/.parts.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "linux-src: extracting ${#FILES[@]} files from $TARBALL" >&2
	tar -xJf "$TARBALL" -C "$tmp" --wildcards "${FILES[@]/#/linux-source-6.12/}"
	has_all "$tmp/linux-source-6.12" || {
		echo "linux-src: $TARBALL lacks some of: ${FILES[*]}" >&2
		exit 1
	}
	rm -rf "$parts"
	mv "$tmp/linux-source-6.12" "$parts"
	touch "$parts"
fi
echo "$parts"
