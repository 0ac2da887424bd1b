#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Set up (once) and use a Debian sid root, a debootstrap chroot, in which
# the module is built for sid's kernel (linux 7.2, generic and PREEMPT_RT)
# with sid's compiler, without touching the host's packages.
#
#   sid-root.sh setup      create it if needed, print its path
#   sid-root.sh dir        print its path, exit 1 if not set up
#   sid-root.sh kernels    print the kernel releases it has headers for
#   sid-root.sh run CMD..  run CMD in it as root, in the current directory,
#                          with the source tree bind-mounted at the same
#                          path (so "make KVER=..." works unchanged)
#
# The root is $VROCE_CACHE/sid-<hash> (default /var/cache/vroce), the hash
# covering the package list below: a new list makes a new root. Setting it
# up takes a lock ($dir.lock); "run" takes it shared, so a setup never
# replaces a root a build is using. The root holds the toolchain and
# headers for building, and the kernel images and rdma-core user space for
# booting sid's kernel in the test VM.
#
# The archive is the one the host's apt sources use for bookworm
# (tools/deps.sh finds it): no address is written here. sid's Release file
# may be past its Valid-Until date in a frozen mirror, so the root's apt
# does not check it.
#
# Needs root, debootstrap (installed if missing) and the network to the
# archive. Setup time and size are in $dir/setup.log.
set -euo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
readonly TOP
readonly CACHE=${VROCE_CACHE:-/var/cache/vroce}
# The sid kernel ABI the module is built and booted for.
readonly SID_KABI=7.2.13+deb14
readonly FLAVOURS="amd64 rt-amd64"

die() {
	echo "sid-root: $*" >&2
	exit 1
}

usage() {
	echo "usage: $0 setup|dir|kernels|releases|run CMD..." >&2
	exit 2
}

packages() {
	local f

	echo gcc-16 make kmod sparse libelf-dev bc
	for f in $FLAVOURS; do
		echo "linux-headers-$SID_KABI-$f linux-image-$SID_KABI-$f"
	done
	echo rdma-core ibverbs-utils ibverbs-providers perftest rdmacm-utils
	echo python3-pyverbs iproute2
	# What the selftests use besides, when the VM runs them in this root.
	echo ethtool procps psmisc gawk iputils-ping nvme-cli tshark
}

root_dir() {
	local hash

	hash=$({ packages; echo "$SID_KABI"; } | sha256sum | cut -c1-16)
	echo "$CACHE/sid-$hash"
}

# The Debian archive the host installs bookworm from.
mirror() {
	local uri

	# shellcheck source=tools/deps.sh
	uri=$(. "$TOP/tools/deps.sh" && backports_stanza | awk '$1 == "URIs:" { print $2; exit }')
	[ -n "$uri" ] || die "no apt source for bookworm on this host: cannot tell which archive to use"
	echo "$uri"
}

# chroot_do ROOT CMD...: CMD in ROOT, in a private mount namespace that has
# /proc, /sys, /dev/pts and the source tree; all of them go with it.
chroot_do() {
	local root=$1

	shift
	unshare --mount --propagation private -- /bin/sh -euc '
		root=$1 top=$2 cwd=$3
		shift 3
		mount -t proc proc "$root/proc"
		mount -t sysfs sysfs "$root/sys"
		mount --bind /dev/pts "$root/dev/pts"
		mkdir -p "$root$top"
		mount --bind "$top" "$root$top"
		case $cwd in
		"$top" | "$top"/*) ;;
		*) cwd=/ ;;
		esac
		exec chroot "$root" /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
	' sh "$root" "$TOP" "$PWD" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" "$@"
}

do_setup() {
	local dir=$1 root=$1/root start=$SECONDS uri pkgs

	rm -rf "$root"
	mkdir -p "$dir"
	command -v debootstrap >/dev/null ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
	uri=$(mirror)
	# Fail in seconds, not after wget's retries, without the network.
	if ! wget -q -T 20 -t 1 -O /dev/null "$uri/dists/sid/InRelease"; then
		echo "sid-root: E: cannot fetch sid's InRelease from the host's Debian archive (no network?)"
		return 1
	fi
	echo "sid-root: debootstrap sid into $root (log: $dir/setup.log)"
	debootstrap --variant=minbase sid "$root" "$uri" || return 1
	echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99no-valid-until"
	# No daemon starts from a package's postinst.
	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 755 "$root/usr/sbin/policy-rc.d"
	pkgs=$(packages)
	# shellcheck disable=SC2086 # a list of package names
	chroot_do "$root" apt-get update -q &&
		chroot_do "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends $pkgs &&
		chroot_do "$root" apt-get clean || return 1
	echo "sid-root: set up in $((SECONDS - start)) s, $(du -sh --one-file-system "$root" | cut -f1)"
}

# Debian's 7.2 linux-kbuild lacks scripts/checker-valid.sh, which the
# kernel's Makefile runs to see whether sparse works: without it C=1 and C=2
# quietly check nothing. Put a stand-in of our own where it is looked for:
# it prints 1 if the checker ($1, with its flags) runs on a line of valid C
# without reporting an error (sparse exits 0 on errors). Idempotent.
fix_headers() {
	local root=$1 f src script

	for f in $FLAVOURS; do
		# A relative link: it resolves inside the root.
		src=$(readlink -f "$root/lib/modules/$SID_KABI-$f/source") || continue
		script=$src/scripts/checker-valid.sh
		[ -d "$src/scripts" ] && [ ! -e "$script" ] || continue
		cat >"$script" <<-'EOF'
		#!/bin/sh
		# vroce (tools/sid-root.sh): stand-in for a script this kernel
		# headers package lacks. Prints 1 if the checker works.
		command -v "$1" >/dev/null || { echo 0; exit 0; }
		out=$(echo 'static int vroce_checker_probe;' | "$@" - 2>&1) || { echo 0; exit 0; }
		case $out in
		*error*) echo 0 ;;
		*) echo 1 ;;
		esac
		EOF
		chmod 755 "$script"
	done
}

cmd_setup() {
	local dir lock why

	dir=$(root_dir)
	mkdir -p "$CACHE"
	exec {lock}>"$dir.lock"
	flock "$lock"
	if [ ! -f "$dir/.done" ]; then
		if ! do_setup "$dir" >"$dir.log" 2>&1; then
			tail -n 20 "$dir.log" >&2
			# The first error debootstrap, apt or the probe gave.
			why=$(grep -m1 -E '^(sid-root: )?E: ' "$dir.log" | sed 's/^sid-root: //')
			die "setup failed: ${why:-see $dir.log}"
		fi
		mv "$dir.log" "$dir/setup.log"
		tail -n 1 "$dir/setup.log" >&2
		touch "$dir/.done"
	fi
	fix_headers "$dir/root"
	echo "$dir/root"
}

cmd_dir() {
	local dir

	dir=$(root_dir)
	[ -f "$dir/.done" ] || die "no sid root; run '$0 setup'"
	echo "$dir/root"
}

cmd_kernels() {
	local root f

	root=$(cmd_dir)
	for f in $FLAVOURS; do
		[ -f "$root/lib/modules/$SID_KABI-$f/build/Makefile" ] && echo "$SID_KABI-$f"
	done
	return 0
}

cmd_run() {
	local dir lock

	dir=$(root_dir)
	[ -f "$dir/.done" ] || die "no sid root; run '$0 setup'"
	exec {lock}>"$dir.lock"
	flock -s "$lock"
	chroot_do "$dir/root" "$@"
}

[ $# -ge 1 ] || usage
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
case $1 in
setup) [ $# -eq 1 ] || usage; cmd_setup ;;
dir) [ $# -eq 1 ] || usage; cmd_dir ;;
kernels) [ $# -eq 1 ] || usage; cmd_kernels ;;
releases) [ $# -eq 1 ] || usage; for f in $FLAVOURS; do echo "$SID_KABI-$f"; done ;;
run) [ $# -ge 2 ] || usage; shift; cmd_run "$@" ;;
*) usage ;;
esac
