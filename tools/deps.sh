#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install every Debian package that building and testing vroce needs.
# Idempotent: a second run installs nothing and takes a few seconds.
#
# Prints nothing but errors unless V=1. Exits non-zero if anything is missing.
set -euo pipefail

log() { [ "${V:-0}" = 1 ] && echo "deps: $*" >&2 || true; }

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "deps: must run as root to install packages: $*" >&2
		exit 1
	fi
}

BPO=/etc/apt/sources.list.d/vroce-backports.sources
add_backports() {
	grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
	need_root "bookworm-backports source"
	cat >"$BPO" <<'EOS'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
	UPDATED=0
}

UPDATED=0
apt_update() {
	[ "$UPDATED" = 1 ] && return 0
	log "apt-get update"
	apt-get update -q >/dev/null
	UPDATED=1
}

# First kernel-image package name that linux-image-amd64 of a version
# matching $1 (a regex on Version:) depends on.
kimage_for() {
	# No early exit in awk: apt-cache would die of SIGPIPE under pipefail.
	apt-cache show linux-image-amd64 2>/dev/null |
		awk -v re="$1" '/^Version: /{ok = ($2 ~ re)}
			ok && /^Depends:/ && !found {print $2; found = 1}'
}

PKGS="build-essential bc bison flex libelf-dev libssl-dev dwarves kmod cpio
xz-utils zstd busybox-static qemu-system-x86 qemu-utils iproute2 iputils-ping
rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev
perftest rdmacm-utils python3-pyverbs tshark sparse linux-source-6.12
ethtool procps psmisc python3 gawk rsync shellcheck nvme-cli"

main() {
	add_backports
	if [ -z "$(kimage_for '^6[.]12[.]')" ]; then
		UPDATED=0
		apt_update
	fi
	local k612 k61
	k612=$(kimage_for '^6[.]12[.]')
	k61=$(kimage_for '^6[.]1[.]')
	if [ -z "$k612" ] || [ -z "$k61" ]; then
		apt_update
		k612=$(kimage_for '^6[.]12[.]')
		k61=$(kimage_for '^6[.]1[.]')
	fi
	[ -n "$k612" ] && [ -n "$k61" ] || {
		echo "deps: cannot find Debian 6.12 and 6.1 kernel packages" >&2
		exit 1
	}
	local want="$PKGS $k612 ${k612/linux-image-/linux-headers-} $k61 ${k61/linux-image-/linux-headers-}"
	local missing=""
	for p in $want; do
		[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] ||
			missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		log "all packages present"
		return 0
	fi
	need_root "$missing"
	apt_update
	log "installing:$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o Dpkg::Options::=--force-confdef $missing >/dev/null
}

main "$@"
