#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the image QEMU should boot for a bzImage:
#
#   kernel-image.sh BZIMAGE
#
# Under TCG, decompressing the kernel costs seconds (3.5 s for Debian's
# xz-compressed 6.1). A kernel built with CONFIG_PVH boots directly from its
# uncompressed vmlinux via QEMU's PVH entry, so extract that once and cache it
# in $VROCE_CACHE/vmlinux (default /var/cache/vroce), keyed by the bzImage's
# path, size and mtime. Kernels without the PVH entry note get BZIMAGE back (the answer
# is cached as well).
set -euo pipefail

readonly CACHE=${VROCE_CACHE:-/var/cache/vroce}/vmlinux
# Compressed payload magics and their decompressors (as in extract-vmlinux).
readonly FORMATS=(
	'\x28\xb5\x2f\xfd' 'zstd -qdc'
	'\xfd\x37\x7a\x58\x5a\x00' 'xz -qdc'
	'\x1f\x8b\x08' 'gzip -qdc'
)
tmp=

die() {
	echo "kernel-image: $*" >&2
	exit 1
}

# extract BZIMAGE OUT: decompress the first payload that is an ELF file.
extract() {
	local image=$1 out=$2 i cmd offset offsets

	for ((i = 0; i < ${#FORMATS[@]}; i += 2)); do
		read -ra cmd <<<"${FORMATS[i + 1]}"
		mapfile -t offsets < <(LC_ALL=C grep -obUaP "${FORMATS[i]}" "$image" | cut -d: -f1)
		for offset in "${offsets[@]}"; do
			tail -c +$((offset + 1)) "$image" | "${cmd[@]}" >"$out" 2>/dev/null || true
			readelf -h "$out" >/dev/null 2>&1 && return 0
		done
	done
	return 1
}

# Xen ELF note 18 is XEN_ELFNOTE_PHYS32_ENTRY, the PVH entry point.
has_pvh_entry() {
	readelf -n "$1" 2>/dev/null | grep -qE 'note type: \(0x00000012\)|PHYS32_ENTRY'
}

main() {
	local image=${1:-} key cached

	[[ $# -eq 1 && -r $image ]] || die "usage: $0 BZIMAGE"
	key=$(stat -L -c '%n %s %Y' "$image" | sha256sum | cut -c1-16)
	cached=$CACHE/$(basename "$image")-$key
	if [[ ! -e $cached && ! -e $cached.none ]]; then
		mkdir -p "$CACHE"
		tmp=$(mktemp "$CACHE/.extract.XXXXXX")
		trap 'rm -f "$tmp"' EXIT
		if extract "$image" "$tmp" && has_pvh_entry "$tmp"; then
			chmod 644 "$tmp"
			mv "$tmp" "$cached"
		else
			touch "$cached.none"
		fi
	fi
	if [[ -e $cached ]]; then
		echo "$cached"
	else
		echo "$image"
	fi
}

main "$@"
