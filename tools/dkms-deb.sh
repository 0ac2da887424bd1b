#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make dkms-deb: build/vroce-dkms_<version>_all.deb, a Debian package that
# installs the module's source under /usr/src/vroce-<version> with a
# dkms.conf (tools/dkms/dkms.conf.in). Its postinst has DKMS build and
# install the module for every kernel whose headers are installed; DKMS's
# kernel hook builds it for each new one; its prerm removes the version
# from every kernel (on removal and on an upgrade).
#
#   DKMS_VERSION=0.9.1   the package's version (default: the VERSION file)
#
# Needs dpkg-deb only. Prints the package's path last.
set -euo pipefail

TOP=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
VERSION=${DKMS_VERSION:-$(cat "$TOP/VERSION")}
STAGE=$TOP/build/dkms/vroce-dkms_$VERSION
DEB=$TOP/build/vroce-dkms_${VERSION}_all.deb
SRC=$STAGE/usr/src/vroce-$VERSION

[[ $VERSION =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || {
	echo "dkms-deb: '$VERSION' is not a package version" >&2
	exit 1
}

# The sources a module build reads, without anything a build left behind.
copy_source() {
	mkdir -p "$SRC/drivers/infiniband/sw" "$SRC/include/uapi/rdma"
	cp "$TOP/Kbuild" "$SRC/"
	echo "$VERSION" >"$SRC/VERSION"
	tar -C "$TOP/drivers/infiniband/sw" --exclude='*.o' --exclude='*.ko' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' \
		--exclude=modules.order --exclude=Module.symvers -cf - vroce |
		tar -C "$SRC/drivers/infiniband/sw" -xf -
	cp "$TOP/include/uapi/rdma/vroce.h" "$SRC/include/uapi/rdma/"
	sed "s/@VERSION@/$VERSION/" "$TOP/tools/dkms/dkms.conf.in" >"$SRC/dkms.conf"
}

control() {
	cat <<-EOF
		Package: vroce-dkms
		Version: $VERSION
		Architecture: all
		Section: kernel
		Priority: optional
		Maintainer: The vroce developers <vroce@localhost>
		Depends: dkms, kmod
		Description: vroce, a software RoCE v1 and v2 RDMA device (DKMS source)
		 vroce registers an RDMA device over any Ethernet netdev and runs
		 the InfiniBand transports over RoCE v1 and RoCE v2, with ECN, CNPs
		 and DCQCN. rdma-core's rxe provider drives it. This package builds
		 the vroce module with DKMS for every installed kernel with headers.
	EOF
}

rm -rf "$STAGE" "$DEB"
mkdir -p "$STAGE/DEBIAN"
copy_source
control >"$STAGE/DEBIAN/control"
for script in postinst prerm; do
	sed "s/@VERSION@/$VERSION/" "$TOP/tools/dkms/$script" >"$STAGE/DEBIAN/$script"
	chmod 0755 "$STAGE/DEBIAN/$script"
done
dpkg-deb --root-owner-group --build "$STAGE" "$DEB" >/dev/null
echo "$DEB"
