#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make lint: the kernel's checkpatch.pl --strict on the module's sources and
# headers, and shellcheck on the project's shell scripts.
#
# Fails on any checkpatch ERROR or WARNING (and any shellcheck finding at
# severity "warning" or worse); checkpatch CHECKs are printed but are a
# judgement call. checkpatch.pl and its data files come from
# Debian's linux-source-6.12 (tools/linux-src.sh), they are not committed.
# Budget: under 60 s (the files are checked two at a time).
set -euo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$TOP"
SRC=$(tools/linux-src.sh)
CHECKPATCH=$SRC/scripts/checkpatch.pl

# Checks switched off for every file, each because it does not apply to a
# tree that is not the kernel's:
#   FILE_PATH_CHANGES  asks for a MAINTAINERS update when files are added;
#                      there is no MAINTAINERS file here.
IGNORE=FILE_PATH_CHANGES
# ... and for compat.h and compat_ib.h only:
#   LINUX_VERSION_CODE  the module builds for several kernel lines (6.1,
#                      6.12, 7.2); the compat headers are the one place
#                      allowed to test the version, which upstream code
#                      never needs to do.
#   CONSTANT_COMPARISON  fires on "LINUX_VERSION_CODE >= KERNEL_VERSION(..)",
#                      the only way to write such a test.
IGNORE_COMPAT=$IGNORE,LINUX_VERSION_CODE,CONSTANT_COMPARISON

shopt -s nullglob globstar
C_FILES=(drivers/infiniband/sw/vroce/**/*.[ch] include/**/*.h)
SH_FILES=(tools/*.sh tools/bench/*.sh .ci/run selftests/**/*.sh)
# Reported but not (yet) enforced: move to SH_FILES once clean.
SH_ADVISORY=(tools/testing/vm/**/*.sh)

OUT=$TOP/build/lint
mkdir -p "$OUT"
rm -f "$OUT"/*.out

# checkpatch writes its CamelCase cache (.checkpatch-camelcase.*) into the
# current directory: keep that out of the work tree.
run_checkpatch() {
	local f=$1 ignore=$IGNORE

	case "$(basename "$f")" in compat.h | compat_ib.h) ignore=$IGNORE_COMPAT ;; esac
	(cd "$OUT" && perl "$CHECKPATCH" --no-tree --strict --terse --show-types \
		--ignore "$ignore" -f "$TOP/$f" 2>&1) |
		sed "s|$TOP/||" | grep -E '^[^ ]+:[0-9]+: (ERROR|WARNING|CHECK):' || true
}
export -f run_checkpatch
export TOP OUT CHECKPATCH IGNORE IGNORE_COMPAT

start=$SECONDS
rc=0
if [ ${#C_FILES[@]} -gt 0 ]; then
	printf '%s\n' "${C_FILES[@]}" |
		xargs -P 2 -I{} bash -c 'run_checkpatch "$1" >"$OUT/$(echo "$1" | tr / _).out"' _ {}
fi
cat "$OUT"/*.out 2>/dev/null | sort -t: -k1,1 -k2,2n >"$OUT/checkpatch.txt" || true
errors=$(grep -c ': ERROR:' "$OUT/checkpatch.txt" || true)
warnings=$(grep -c ': WARNING:' "$OUT/checkpatch.txt" || true)
checks=$(grep -c ': CHECK:' "$OUT/checkpatch.txt" || true)
grep -E ': (ERROR|WARNING):' "$OUT/checkpatch.txt" || true
grep -E ': CHECK:' "$OUT/checkpatch.txt" || true
echo "lint: checkpatch --strict on ${#C_FILES[@]} files: $errors errors, $warnings warnings, $checks checks"
[ $((errors + warnings)) -eq 0 ] || rc=1

if command -v shellcheck >/dev/null; then
	# Sourced helpers (lib.sh, ktap_helpers.sh) are found at run time only.
	if ! shellcheck -S warning -e SC1090,SC1091 "${SH_FILES[@]}" >"$OUT/shellcheck.txt" 2>&1; then
		cat "$OUT/shellcheck.txt"
		rc=1
	fi
	echo "lint: shellcheck on ${#SH_FILES[@]} scripts: $(grep -c '^In ' "$OUT/shellcheck.txt" || true) findings"
	if [ ${#SH_ADVISORY[@]} -gt 0 ] &&
	   ! shellcheck -f gcc -S warning -e SC1090,SC1091 "${SH_ADVISORY[@]}" >"$OUT/shellcheck-advisory.txt" 2>&1; then
		sed 's/^/advisory: /' "$OUT/shellcheck-advisory.txt"
	fi
else
	echo "lint: shellcheck not installed, shell scripts not checked"
fi

echo "lint: $([ $rc = 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit $rc
