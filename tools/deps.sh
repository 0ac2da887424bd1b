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

APT_ETC=${APT_ETC:-/etc/apt}
BPO=$APT_ETC/sources.list.d/vroce-backports.sources

# Print a deb822 stanza for bookworm-backports, derived from the source this
# machine already uses for bookworm (sources.list, *.list or *.sources under
# $APT_ETC): same mirror, components, architectures and keyring, so that no
# archive address is written here and a local mirror keeps being used.
# Prints nothing if there is no enabled "deb" source for bookworm.
backports_stanza() {
	local f found=""

	for f in "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		found=$(awk '
			/^[ \t]*deb[ \t]/ {
				i = 2; opts = ""
				if ($i ~ /^\[/) {
					while (i <= NF) {
						opts = opts " " $i
						if ($(i++) ~ /\]$/)
							break
					}
				}
				uri = $(i++); suite = $(i++)
				if (suite != "bookworm")
					next
				comps = ""
				for (; i <= NF && $i !~ /^#/; i++)
					comps = comps " " $i
				gsub(/[][]/, "", opts)
				print "Types: deb"
				print "URIs: " uri
				print "Suites: bookworm-backports"
				print "Components:" comps
				n = split(opts, o, " ")
				for (j = 1; j <= n; j++) {
					split(o[j], kv, "=")
					if (kv[1] == "signed-by")
						print "Signed-By: " kv[2]
					else if (kv[1] == "arch") {
						gsub(",", " ", kv[2])
						print "Architectures: " kv[2]
					}
				}
				exit
			}' "$f")
		[ -n "$found" ] && break
	done
	if [ -z "$found" ]; then
		for f in "$APT_ETC"/sources.list.d/*.sources; do
			[ -r "$f" ] || continue
			# deb822: one stanza per paragraph; continuation lines start
			# with a blank and belong to the field above them.
			found=$(awk '
				BEGIN { RS = ""; FS = "\n" }
				{
					out = ""; deb = bookworm = off = skip = 0
					for (l = 1; l <= NF; l++) {
						line = $l
						if (line ~ /^#/)
							continue
						if (line ~ /^[ \t]/) {
							if (!skip)
								out = out "\n" line
							continue
						}
						c = index(line, ":")
						key = tolower(substr(line, 1, c - 1))
						n = split(substr(line, c + 1), w, " ")
						skip = 0
						if (key == "types") {
							for (j = 1; j <= n; j++)
								deb = deb || w[j] == "deb"
							line = "Types: deb"
						} else if (key == "suites") {
							for (j = 1; j <= n; j++)
								bookworm = bookworm || w[j] == "bookworm"
							line = "Suites: bookworm-backports"
							skip = 1
						} else if (key == "uris") {
							line = "URIs: " w[1]
							skip = 1
						} else if (key == "enabled") {
							off = tolower(w[1]) == "no"
							continue
						}
						out = out (out == "" ? "" : "\n") line
					}
					if (deb && bookworm && !off) {
						print out
						exit
					}
				}' "$f")
			[ -n "$found" ] && break
		done
	fi
	if [ -n "$found" ]; then
		printf '%s\n' "$found"
	fi
}

add_backports() {
	local stanza

	grep -rqs 'bookworm-backports' "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/ && return 0
	stanza=$(backports_stanza)
	if [ -z "$stanza" ]; then
		echo "deps: no apt source for bookworm under $APT_ETC: add bookworm-backports yourself" >&2
		exit 1
	fi
	need_root "bookworm-backports source"
	printf '%s\n' "$stanza" >"$BPO"
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
perftest rdmacm-utils python3-pyverbs tshark sparse linux-source-6.12 dkms
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

# Sourcing this file (tests) defines the functions and runs nothing.
[ "${BASH_SOURCE[0]}" != "$0" ] || main "$@"
