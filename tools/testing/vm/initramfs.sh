#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) the stage-1 initramfs for a kernel and print its path:
#
#   initramfs.sh RELEASE [MODROOT]
#
# RELEASE is the kernel release; its modules are in MODROOT/lib/modules/RELEASE
# (MODROOT defaults to /). The image is an uncompressed cpio holding static
# busybox, the virtio-pci, 9p and configfs modules that RELEASE does not have
# built in (decompressed, in modprobe order), and an /init that loads them,
# mounts the host's / (9p tag "root", read-only), tmpfs on /run, /tmp,
# /var/tmp and /dev/shm, devpts, debugfs, tracefs and configfs, the output dir
# (9p tag "vroce_out") at the host path written in its .vroce/outdir, and then
# switch_roots into it, exec'ing "PROGRAM OUTDIR" where PROGRAM is named by
# vroce.init= on the kernel command line.
#
# Images are cached in $VROCE_CACHE/initramfs (default /var/cache/vroce), keyed
# by RELEASE, this script and the release's module index.
set -euo pipefail

readonly CACHE=${VROCE_CACHE:-/var/cache/vroce}/initramfs
readonly BUSYBOX=/bin/busybox
readonly APPLETS="sh mount mkdir insmod cat switch_root echo sleep ip"
readonly WANTED="virtio_pci 9pnet_virtio 9p configfs"
build_tmp=

die() {
	echo "initramfs: $*" >&2
	exit 1
}

# The stage-1 init. It must stay tiny: everything else happens in the guest
# init (guest-init.sh), which runs from the host's / and needs no rebuild.
write_init() {
	cat >"$1" <<'EOF'
#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# vroce VM stage 1: load virtio/9p, mount the host's / read-only with the
# writable bits the guest needs on top, then switch_root to vroce.init=.
# Mounting here with static busybox is much faster than from the 9p root.

fail() {
	echo "vroce-initramfs: $*" >/dev/console
	echo o >/proc/sysrq-trigger
	echo b >/proc/sysrq-trigger
	sleep 3600
}

mnt() {
	mkdir -p "$2" && mount -t "$1" -o "$3" "$1" "$2" ||
		fail "cannot mount $1 on $2"
}

load_modules() {
	while read -r ko; do
		insmod "/modules/$ko" || fail "insmod $ko failed"
	done </modules/order
}

vroce_init() {
	for arg in $(cat /proc/cmdline); do
		case $arg in
		vroce.init=*) echo "${arg#vroce.init=}" ;;
		esac
	done
}

mount_root() {
	mount -t 9p -o ro,trans=virtio,version=9p2000.L,cache=loose,msize=512000 \
		root /newroot || fail "cannot mount the 9p root"
	for fs in dev proc sys; do
		mount --move "/$fs" "/newroot/$fs" || fail "cannot move /$fs"
	done
	mnt tmpfs /newroot/run mode=0755,nosuid,nodev
	mkdir -p /newroot/run/lock
	mnt devpts /newroot/dev/pts gid=5,mode=620,ptmxmode=0666
	mnt tmpfs /newroot/dev/shm mode=1777,nosuid,nodev
	mnt tmpfs /newroot/tmp mode=1777,nosuid,nodev
	mnt tmpfs /newroot/var/tmp mode=1777,nosuid,nodev
	mnt debugfs /newroot/sys/kernel/debug mode=0700
	if [ -d /newroot/sys/kernel/tracing ]; then
		mnt tracefs /newroot/sys/kernel/tracing mode=0700
	fi
	if [ -d /newroot/sys/kernel/config ]; then
		mnt configfs /newroot/sys/kernel/config rw
	fi
}

# The output dir goes at its host path, read from .vroce/outdir in it; the
# mount point exists unless it is under one of the tmpfs above.
mount_outdir() {
	mkdir -p /out
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vroce_out /out ||
		fail "cannot mount the output dir"
	read -r out </out/.vroce/outdir || fail "no .vroce/outdir"
	src=
	if [ -f /out/.vroce/srcdir ]; then
		read -r src </out/.vroce/srcdir || fail "bad .vroce/srcdir"
	fi
	# First the source tree: the output dir may lie inside it.
	mount_srcdir
	mkdir -p "/newroot$out" && mount --move /out "/newroot$out" ||
		fail "cannot mount the output dir on $out"
}

# A source tree under one of the tmpfs above (a checkout in /tmp) comes as
# its own read-only share, at its host path.
mount_srcdir() {
	[ -n "$src" ] || return 0
	mkdir -p "/newroot$src" &&
		mount -t 9p -o ro,trans=virtio,version=9p2000.L,cache=loose,msize=512000 \
			vroce_src "/newroot$src" ||
		fail "cannot mount the source tree on $src"
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
ln -s /proc/self/fd /dev/fd
ln -s fd/0 /dev/stdin
ln -s fd/1 /dev/stdout
ln -s fd/2 /dev/stderr
echo vroce-vm >/proc/sys/kernel/hostname
load_modules
init=$(vroce_init)
[ -n "$init" ] || fail "no vroce.init= on the kernel command line"
mount_root
mount_outdir
ip link set lo up
echo "<6>vroce-initramfs: switching root" >/newroot/dev/kmsg
exec switch_root /newroot "$init" "$out"
EOF
	chmod 755 "$1"
}

# Print "path" for each module that has to be insmod'ed, dependencies first,
# once each.
module_paths() {
	local release=$1 modroot=$2 mod line

	for mod in $WANTED; do
		modprobe -d "$modroot" -S "$release" --show-depends "$mod" ||
			die "modprobe --show-depends $mod failed for $release"
	done | while read -r line; do
		[[ $line == insmod\ * ]] || continue
		line=${line#insmod }
		echo "${line%% *}"
	done | awk '!seen[$0]++'
}

decompress() {
	case $1 in
	*.ko.xz) xz -dc "$1" ;;
	*.ko.zst) zstd -qdc "$1" ;;
	*.ko.gz) gzip -dc "$1" ;;
	*.ko) cat "$1" ;;
	*) die "unknown module format: $1" ;;
	esac
}

populate() {
	local root=$1 release=$2 modroot=$3 path ko applet

	mkdir -p "$root"/{bin,dev,proc,sys,newroot,modules}
	mknod -m 600 "$root/dev/console" c 5 1
	cp "$BUSYBOX" "$root/bin/busybox"
	for applet in $APPLETS; do
		ln -s busybox "$root/bin/$applet"
	done
	write_init "$root/init"
	: >"$root/modules/order"
	module_paths "$release" "$modroot" | while read -r path; do
		ko=$(basename "$path")
		ko=${ko%.ko*}.ko
		decompress "$path" >"$root/modules/$ko"
		echo "$ko" >>"$root/modules/order"
	done
}

cache_key() {
	local release=$1 modroot=$2

	{
		cat "${BASH_SOURCE[0]}"
		cat "$modroot/lib/modules/$release/modules.dep" \
			"$modroot/lib/modules/$release/modules.builtin"
	} | sha256sum | cut -c1-16
}

main() {
	local release=${1:-} modroot=${2:-/} image

	[[ -n $release && $# -le 2 ]] || die "usage: $0 RELEASE [MODROOT]"
	[[ -d $modroot/lib/modules/$release ]] ||
		die "no modules for $release in $modroot/lib/modules"
	[[ -x $BUSYBOX ]] || die "$BUSYBOX missing (apt-get install busybox-static)"
	image=$CACHE/$release-$(cache_key "$release" "$modroot").cpio
	if [[ ! -f $image ]]; then
		mkdir -p "$CACHE"
		build_tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
		trap 'rm -rf "$build_tmp"' EXIT
		populate "$build_tmp/root" "$release" "$modroot"
		(cd "$build_tmp/root" && find . | LC_ALL=C sort |
			cpio -o -H newc -R 0:0 --quiet) >"$build_tmp/image"
		mv "$build_tmp/image" "$image"
	fi
	echo "$image"
}

main "$@"
