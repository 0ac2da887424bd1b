#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) and locate the vroce test kernels made from Debian's
# linux-source-6.12, configured as allnoconfig + a fragment. Two flavours:
#   debug  debug.config: KASAN, lockdep, kmemleak, DEBUG_OBJECTS, DEBUG_VM,
#          fault injection, LKDTM; virtio and 9p built in; ib_core,
#          rdma_rxe, nvme-rdma as modules
#   kcsan  debug.config up to its debugging section, then kcsan.config:
#          the data race detector, which cannot be built with KASAN
#
#   debug-kernel.sh build [FLAVOUR]    build if needed, print the build dir
#   debug-kernel.sh dir [FLAVOUR]      print the build dir, exit 1 if not built
#   debug-kernel.sh release [FLAVOUR]  print the kernel release, exit 1 if not
#                                      built
#   debug-kernel.sh source             extract the source if needed, print
#                                      its root (tools/intree.sh uses it)
#
# FLAVOUR defaults to debug. The build dir is $VROCE_CACHE/FLAVOUR-<hash>
# (default /var/cache/vroce), the hash covering the fragment and the
# source's kernel version. It holds:
#   bzImage                  the kernel
#   obj/                     the O= object dir (make -C obj M=... works)
#   mods/lib/modules/<rel>/  the installed modules
#   build.log                everything make printed
# JOBS (default 2) sets make -j.
set -euo pipefail

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SELF_DIR
readonly DEBUG_CONFIG=$SELF_DIR/debug.config
readonly CACHE=${VROCE_CACHE:-/var/cache/vroce}
readonly TARBALL=/usr/src/linux-source-6.12.tar.xz
readonly SRC=$CACHE/linux-source-6.12

die() {
	echo "debug-kernel: $*" >&2
	exit 1
}

usage() {
	echo "usage: $0 build|dir|release [debug|kcsan]" >&2
	exit 2
}

# The fragment of a flavour, on stdout. kcsan keeps debug.config's system,
# devices, file systems, networking and RDMA, without its release suffix,
# and takes its debugging options from kcsan.config.
fragment() {
	case $FLAVOUR in
	debug) cat "$DEBUG_CONFIG" ;;
	kcsan)
		sed -e '/^# --- debugging ---$/,$d' -e '/^CONFIG_LOCALVERSION=/d' "$DEBUG_CONFIG"
		cat "$SELF_DIR/kcsan.config"
		;;
	esac
}

ensure_source() {
	local tmp

	[[ -f $SRC/Makefile ]] && return 0
	[[ -f $TARBALL ]] || die "$TARBALL missing (apt-get install linux-source-6.12)"
	echo "debug-kernel: extracting $TARBALL" >&2
	mkdir -p "$CACHE"
	tmp=$(mktemp -d "$CACHE/.src.XXXXXX")
	tar -C "$tmp" -xf "$TARBALL"
	mv "$tmp/linux-source-6.12" "$SRC"
	rmdir "$tmp"
}

build_dir() {
	local version hash

	version=$(make -s --no-print-directory -C "$SRC" kernelversion)
	hash=$({ fragment; echo "$version"; } | sha256sum | cut -c1-16)
	echo "$CACHE/$FLAVOUR-$hash"
}

# Kconfig silently drops options whose dependencies are not met: insist that
# every line of the fragment made it into the final .config.
verify_config() {
	local config=$1 fragment=$2 line sym got missing=0

	while IFS= read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)= ]]; then
			grep -qxF -- "$line" "$config" && continue
		elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			grep -q "^${BASH_REMATCH[1]}=" "$config" || continue
		else
			continue
		fi
		sym=${BASH_REMATCH[1]}
		got=$(grep -m1 -E "^(# )?${sym}[= ]" "$config" || echo "$sym absent")
		echo "debug-kernel: wanted '$line', got '$got'" >&2
		missing=1
	done <"$fragment"
	return "$missing"
}

configure() {
	local dir=$1

	fragment >"$dir/fragment.config" &&
		(cd "$SRC" && scripts/kconfig/merge_config.sh -n -O "$dir/obj" "$dir/fragment.config") &&
		make -C "$SRC" O="$dir/obj" olddefconfig &&
		verify_config "$dir/obj/.config" "$dir/fragment.config"
}

compile() {
	local dir=$1

	make -C "$SRC" O="$dir/obj" -j"${JOBS:-2}" bzImage modules &&
		make -C "$SRC" O="$dir/obj" modules_install INSTALL_MOD_PATH="$dir/mods" &&
		cp "$dir/obj/arch/x86/boot/bzImage" "$dir/bzImage"
}

do_build() {
	local dir=$1 start=$SECONDS

	rm -rf "$dir/obj" "$dir/mods" "$dir/bzImage"
	mkdir -p "$dir/obj"
	echo "debug-kernel: building in $dir (log: $dir/build.log)" >&2
	if ! { configure "$dir" && compile "$dir"; } >"$dir/build.log" 2>&1; then
		grep -h '^debug-kernel:' "$dir/build.log" >&2 || tail -n 30 "$dir/build.log" >&2
		die "build failed, see $dir/build.log"
	fi
	echo "debug-kernel: built in $((SECONDS - start)) s" | tee -a "$dir/build.log" >&2
	touch "$dir/.done"
}

cmd_build() {
	local dir lock

	ensure_source
	dir=$(build_dir)
	mkdir -p "$dir"
	exec {lock}>"$dir.lock"
	flock "$lock"
	[[ -f $dir/.done ]] || do_build "$dir"
	echo "$dir"
}

cmd_dir() {
	local dir

	[[ -f $SRC/Makefile ]] || die "no source in $SRC; run '$0 build'"
	dir=$(build_dir)
	[[ -f $dir/.done ]] || die "$FLAVOUR kernel not built; run '$0 build $FLAVOUR'"
	echo "$dir"
}

cmd_release() {
	local dir

	dir=$(cmd_dir)
	cat "$dir/obj/include/config/kernel.release"
}

[[ $# -eq 1 || $# -eq 2 ]] || usage
if [[ $1 == source ]]; then
	ensure_source
	echo "$SRC"
	exit 0
fi
FLAVOUR=${2:-debug}
case $FLAVOUR in
debug | kcsan) ;;
*) usage ;;
esac
readonly FLAVOUR
case $1 in
build) cmd_build ;;
dir) cmd_dir ;;
release) cmd_release ;;
*) usage ;;
esac
