#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/intree.sh: build vroce as an in-tree driver of Debian's
# linux-source-6.12 (tools/deps.sh installs it).
#
#   1. a tree of hard links to the extracted source (the debug kernel's,
#      tools/testing/vm/debug-kernel.sh source), in $VROCE_CACHE/intree/linux;
#      every file that differs is replaced, never written through a link
#   2. drivers/infiniband/sw/vroce and include/uapi/rdma/vroce.h copied in,
#      the driver's Kconfig sourced from drivers/infiniband/Kconfig and its
#      directory added to drivers/infiniband/sw/Makefile
#   3. a small kernel configured in $VROCE_CACHE/intree/obj: allnoconfig,
#      networking, InfiniBand and CONFIG_RDMA_VROCE=m (the build fails if
#      Kconfig drops any of it)
#   4. the kernel and its modules built, vroce.ko linked against them
#      (cold: about 15 minutes on 2 cores; the object dir is kept, so a
#      later run rebuilds what changed), then the driver's objects again
#      with W=1 and -Werror
#
# Prints the module's path last. JOBS (default 2) sets make -j.
set -euo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
CACHE=${VROCE_CACHE:-/var/cache/vroce}
DIR=$CACHE/intree
TREE=$DIR/linux
OBJ=$DIR/obj
MODDIR=drivers/infiniband/sw/vroce
JOBS=${JOBS:-2}

FRAGMENT=(
	CONFIG_64BIT=y
	CONFIG_SMP=y
	CONFIG_MODULES=y
	CONFIG_MODULE_UNLOAD=y
	CONFIG_NET=y
	CONFIG_INET=y
	CONFIG_IPV6=y
	CONFIG_NET_NS=y
	CONFIG_VLAN_8021Q=m
	CONFIG_INFINIBAND=m
	CONFIG_INFINIBAND_USER_ACCESS=m
	CONFIG_RDMA_VROCE=m
)

die() {
	echo "intree: $*" >&2
	exit 1
}

# replace FILE: FILE becomes a file of its own with stdin's content (a
# hard link to the source tree is unlinked, not written through).
replace() {
	local tmp

	tmp=$(mktemp "$1.XXXXXX")
	cat >"$tmp"
	mv -f "$tmp" "$1"
}

make_tree() {
	local src

	src=$("$TOP/tools/testing/vm/debug-kernel.sh" source)
	[ -f "$src/$MODDIR/Kconfig" ] && die "$src already has a vroce driver"
	rm -rf "$TREE"
	mkdir -p "$DIR"
	cp -al "$src" "$TREE"
	cp -r "$TOP/$MODDIR" "$TREE/$MODDIR"
	cp "$TOP/include/uapi/rdma/vroce.h" "$TREE/include/uapi/rdma/vroce.h"
	sed '/^source "drivers\/infiniband\/sw\/rxe\/Kconfig"$/a source "drivers/infiniband/sw/vroce/Kconfig"' \
		"$src/drivers/infiniband/Kconfig" | replace "$TREE/drivers/infiniband/Kconfig"
	{
		cat "$src/drivers/infiniband/sw/Makefile"
		echo 'obj-$(CONFIG_RDMA_VROCE)		+= vroce/'
	} | replace "$TREE/drivers/infiniband/sw/Makefile"
	grep -q vroce "$TREE/drivers/infiniband/Kconfig" ||
		die "could not hook the Kconfig into drivers/infiniband/Kconfig"
}

configure() {
	local line

	mkdir -p "$OBJ"
	printf '%s\n' "${FRAGMENT[@]}" >"$DIR/fragment.config"
	make -C "$TREE" O="$OBJ" allnoconfig >/dev/null
	(cd "$TREE" && scripts/kconfig/merge_config.sh -n -O "$OBJ" \
		"$DIR/fragment.config") >/dev/null
	make -C "$TREE" O="$OBJ" olddefconfig >/dev/null
	for line in "${FRAGMENT[@]}"; do
		grep -qxF "$line" "$OBJ/.config" ||
			die "Kconfig dropped $line (see $OBJ/.config)"
	done
}

build() {
	echo "intree: building the kernel and its modules in $OBJ (log: $DIR/build.log)" >&2
	make -C "$TREE" O="$OBJ" -j"$JOBS" vmlinux modules >"$DIR/build.log" 2>&1 ||
		{ tail -n 30 "$DIR/build.log" >&2; die "the kernel build failed"; }
	echo "intree: building $MODDIR again with W=1 (log: $DIR/w1.log)" >&2
	touch "$TREE/$MODDIR"/*.c
	make -C "$TREE" O="$OBJ" -j"$JOBS" W=1 KCFLAGS=-Werror "$MODDIR/" \
		>"$DIR/w1.log" 2>&1 ||
		{ grep -E 'warning|error' "$DIR/w1.log" >&2 || tail -n 30 "$DIR/w1.log" >&2
		  die "the W=1 build of the driver failed"; }
	! grep -E "$MODDIR.*warning:" "$DIR/w1.log" >&2 ||
		die "warnings in the W=1 build of the driver"
	[ -f "$OBJ/$MODDIR/vroce.ko" ] || die "no $OBJ/$MODDIR/vroce.ko"
}

make_tree
configure
build
echo "$OBJ/$MODDIR/vroce.ko"
