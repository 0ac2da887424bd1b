#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The DKMS package (make dkms-deb) as a user installs it, in an overlay of
# the guest's root (the host's, read-only) entered with chroot:
#
#   1. dpkg -i of the older package: DKMS builds vroce for every kernel
#      with headers (the running one among them) and installs it under
#      updates/dkms
#   2. modprobe vroce loads that module (its version is the package's)
#   3. rdma link add over a veth and an ib_write_bw pair on the device
#   4. dpkg -i of the newer package: only the new version is left, in DKMS
#      and on disk
#   5. dpkg -r: no vroce module and no source are left
#
# VROCE_DKMS_DEBS="OLDER.deb NEWER.deb" names the packages
# (tools/dkms-test.sh builds both and boots the VM); the test skips
# without it. Needs the running kernel's headers and dkms in the root.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma dpkg dpkg-deb dkms chroot ib_write_bw ss
[ -n "${VROCE_DKMS_DEBS:-}" ] ||
	vroce_skip_all "VROCE_DKMS_DEBS is not set (tools/dkms-test.sh)"
read -r DEB1 DEB2 <<<"$VROCE_DKMS_DEBS"
[ -f "$DEB1" ] && [ -f "$DEB2" ] ||
	vroce_skip_all "VROCE_DKMS_DEBS: two packages expected"
KERNEL=$(uname -r)
[ -f "/lib/modules/$KERNEL/build/Makefile" ] ||
	vroce_skip_all "no headers for $KERNEL"
V1=$(dpkg-deb -f "$DEB1" Version)
V2=$(dpkg-deb -f "$DEB2" Version)
dpkg --compare-versions "$V1" lt "$V2" ||
	vroce_skip_all "VROCE_DKMS_DEBS: $V1 is not older than $V2"
# Only DKMS's module may load here: vroce_load (lib.sh) must not fall back
# to the module VROCE_KO names.
# shellcheck disable=SC2034 # vroce_load's (lib.sh)
VROCE_KO=/nonexistent/vroce.ko

# shellcheck disable=SC2034 # run_pair's (lib.sh)
TMO=120
# shellcheck disable=SC2034 # run_pair's
EXEC_A=() EXEC_B=()
# shellcheck disable=SC2034 # run_pair's
SRV_PID=
R=$(mktemp -d /tmp/vroce-dkms.XXXXXX)
ROOT=$R/root

cleanup() {
	bg_stop SRV_PID
	rdma link delete dk0 2>/dev/null
	ip link del dka 2>/dev/null
	vroce_unload
	umount -R "$ROOT" 2>/dev/null
	umount "$R" 2>/dev/null
	rmdir "$R"
	vroce_cleanup
}
trap cleanup EXIT

# A writable root: the guest's / under a tmpfs upper layer.
setup_root() {
	local d

	mount -t tmpfs tmpfs "$R" &&
		mkdir "$R/upper" "$R/work" "$ROOT" &&
		mount -t overlay overlay \
			-o "lowerdir=/,upperdir=$R/upper,workdir=$R/work" "$ROOT" ||
		return 1
	for d in proc sys dev; do
		mount --rbind "/$d" "$ROOT/$d" || return 1
	done
	mount -t tmpfs tmpfs "$ROOT/tmp" && mount -t tmpfs tmpfs "$ROOT/run" &&
		cp "$DEB1" "$DEB2" "$ROOT/tmp/"
}

in_root() {
	chroot "$ROOT" env PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"
}

# module_files: the vroce modules DKMS installed in the root, any kernel.
module_files() {
	find "$ROOT/lib/modules" -path '*/updates/*' -name 'vroce.ko*' 2>/dev/null
}

# installed V: DKMS has V, and no other version, installed for every kernel
# with headers (the package's postinst builds for each), and the running
# kernel's module is in place and says it is V.
installed() {
	local status dir file

	status=$(in_root dkms status -m vroce) || return 1
	echo "dkms status: $status"
	! grep -v "^vroce/$1, .*: installed" <<<"$status" | grep -q . ||
		return 1
	for dir in "$ROOT"/lib/modules/*; do
		[ -f "$dir/build/Makefile" ] || continue
		grep -q "^vroce/$1, ${dir##*/}, " <<<"$status" || return 1
	done
	file=$(find "$ROOT/lib/modules/$KERNEL" -path '*/updates/*' \
		-name 'vroce.ko*')
	[ "$(grep -c . <<<"$file")" = 1 ] &&
		[ "$(in_root modinfo -F version "${file#"$ROOT"}")" = "$1" ]
}

step1() {
	in_root dpkg -i "/tmp/$(basename "$DEB1")" && installed "$V1"
}

step2() {
	vroce_modprobe_deps && in_root modprobe vroce &&
		[ "$(cat /sys/module/vroce/version)" = "$V1" ]
}

step3() {
	local gid

	vroce_veth_dev_ipv4 dk0 dka dkb 192.0.2.1 &&
		gid=$(vroce_gid dk0 v4 dka 192.0.2.1) || return 1
	run_pair tcp_listening 18515 ib_write_bw -d dk0 -x "$gid" -D 1 -- \
		ib_write_bw -d dk0 -x "$gid" -D 1 127.0.0.1 || return 1
	grep -E '^ *[0-9]+ +[0-9]+' "$VROCE_LOG.cli" | tail -n 1
	rdma link delete dk0 && ip link del dka && vroce_unload
}

step4() {
	in_root dpkg -i "/tmp/$(basename "$DEB2")" && installed "$V2" &&
		[ ! -e "$ROOT/usr/src/vroce-$V1" ] &&
		[ ! -e "$ROOT/var/lib/dkms/vroce/$V1" ]
}

step5() {
	in_root dpkg -r vroce-dkms || return 1
	[ -z "$(module_files)" ] && [ -z "$(in_root dkms status -m vroce)" ] &&
		! ls -d "$ROOT"/usr/src/vroce-* 2>/dev/null &&
		! in_root modinfo vroce 2>/dev/null
}

ktap_print_header
ktap_set_plan 6
check "a writable overlay of the root" setup_root
check "dpkg -i vroce-dkms $V1: DKMS builds and installs vroce for every kernel with headers" step1
check "modprobe vroce loads the DKMS module, version $V1" step2
check "rdma link add over a veth, ib_write_bw on the device" step3
check "upgrade to $V2: only $V2 is left, in DKMS and on disk" step4
check "dpkg -r vroce-dkms: no vroce module or source left" step5
ktap_finished
