#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Creates a vroce device over a veth and runs queues_test (CQs, QPs, SRQs
# through libibverbs' stock rxe provider) against it; the KTAP output is
# queues_test's.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A memory cgroup that holds less than the biggest QP's rings, for
# queues_test's rings_charged_to_memcg (cgroup2 is mounted if it is not).
MEMCG=
memcg_setup() {
	local root=/sys/fs/cgroup

	[ -e "$root/cgroup.controllers" ] ||
		mount -t cgroup2 none "$root" || return 1
	grep -qw memory "$root/cgroup.controllers" || return 1
	grep -qw memory "$root/cgroup.subtree_control" ||
		echo +memory >"$root/cgroup.subtree_control" || return 1
	mkdir -p "$root/vroce-queues" &&
		echo 16M >"$root/vroce-queues/memory.max" &&
		MEMCG=$root/vroce-queues
}

cleanup() {
	[ -z "$MEMCG" ] || rmdir "$MEMCG"
	vroce_test_dev_cleanup
}

vroce_test_dev qv0 qa qb
trap cleanup EXIT
memcg_setup >>"$VROCE_LOG" 2>&1 || MEMCG=
VROCE_DEV=qv0 VROCE_MEMCG=$MEMCG "$VROCE_BIN/queues_test"
