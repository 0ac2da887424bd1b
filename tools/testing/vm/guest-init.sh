#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# vroce VM stage 2: PID 1 in the guest, run from the host's / (read-only 9p).
# The initramfs (initramfs.sh) has already mounted the writable file systems
# and the output dir. Contract with run.sh:
#
#  - $VROCE_OUT/.vroce/env (bash) sets VROCE_OUT, vroce_cwd, vroce_modules
#    (dir to bind over /lib/modules, may be empty), vroce_userland (a root
#    to run the command in, may be empty) and the vroce_cmd array.
#  - The command's output goes to the console (ttyS0). Afterwards kmemleak
#    (if present and on) is scanned into kmemleak.txt and dmesg saved as
#    dmesg.txt.
#    dmesg.live follows dmesg while the guest runs, for post-mortems.
#  - The very last step writes the command's exit status to ttyS1. No status
#    means the run failed before or during the command.
#
# Called as "guest-init.sh OUTDIR". Every exec reads its binary and libraries
# over 9p, which is slow under TCG, so use builtins where possible. Never
# exit: PID 1 exiting panics the kernel. Power off instead.

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
readonly KMEMLEAK=/sys/kernel/debug/kmemleak
# Set once kmemleak took a command: it is on.
KMEMLEAK_ON=
readonly STATUS_TTY=/dev/ttyS1

# Set by .vroce/env.
VROCE_OUT=
vroce_cwd=/
vroce_modules=
vroce_userland=
vroce_cmd=()
# Where the command's root is assembled when vroce_userland is set.
readonly USERLAND=/mnt/userland

log() {
	echo "vroce-init: $*" >&2
}

# Mark the phases in dmesg, to tell boot noise from the command's.
kmsg() {
	echo "<6>vroce-init: $*" >/dev/kmsg
}

# busybox (static, also used by the initramfs) calls reboot(2) directly; the
# sysrq fallback prints a line on the console.
power_off() {
	if [[ -d /sys/firmware/acpi ]]; then
		busybox poweroff -f || echo o >/proc/sysrq-trigger
	else
		# No ACPI: reset, which -no-reboot turns into a QEMU exit.
		busybox reboot -f || echo b >/proc/sysrq-trigger
	fi
	while :; do
		sleep 60
	done
}

fatal() {
	log "$*"
	power_off
}

load_env() {
	local outdir=$1

	# shellcheck source=/dev/null
	source "$outdir/.vroce/env" || fatal "cannot read $outdir/.vroce/env"
}

# virtio device id 1 is a NIC (run.sh -n).
has_virtio_nic() {
	local f id

	for f in /sys/bus/virtio/devices/*/device; do
		[[ -r $f ]] && read -r id <"$f" && [[ $id == 0x0001 ]] && return 0
	done
	return 1
}

setup_system() {
	if [[ -n $vroce_modules ]]; then
		mount --bind "$vroce_modules" /lib/modules ||
			fatal "cannot bind $vroce_modules over /lib/modules"
	fi
	# Built in on the debug kernel, where this is a no-op.
	if has_virtio_nic; then
		modprobe virtio_net || log "modprobe virtio_net failed"
	fi
}

# enter_userland: with vroce_userland set, the command runs chrooted into
# a writable overlay (on tmpfs) of that root, which sees the guest's /proc,
# /sys, /dev, /run, /tmp, /var/tmp and /lib/modules and has the command's
# cwd and $VROCE_OUT at the same paths.
enter_userland() {
	local d

	[[ -n $vroce_userland ]] || return 0
	[[ -x $vroce_userland/bin/sh ]] || fatal "no root at $vroce_userland"
	mount -t tmpfs -o mode=0755 vroce-userland /mnt &&
		mkdir -p /mnt/upper /mnt/work "$USERLAND" &&
		mount -t overlay overlay -o \
			"lowerdir=$vroce_userland,upperdir=/mnt/upper,workdir=/mnt/work" \
			"$USERLAND" || fatal "cannot overlay $vroce_userland"
	for d in /proc /sys /dev /run /tmp /var/tmp /lib/modules "$vroce_cwd" "$VROCE_OUT"; do
		mkdir -p "$USERLAND$d" && mount --rbind "$d" "$USERLAND$d" ||
			fatal "cannot bind $d into $USERLAND"
	done
	log "the command runs in $vroce_userland"
}

# The command gets a clean environment, stdin from /dev/null.
run_command() {
	local release

	release=$(</proc/sys/kernel/osrelease)
	cd "$vroce_cwd" || {
		log "cannot cd to $vroce_cwd"
		return 126
	}
	(
		mapfile -t vars < <(compgen -e)
		unset -v "${vars[@]}"
		export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TERM=dumb
		export VROCE_KERNEL=$release VROCE_OUT
		[[ -z $vroce_userland ]] || exec chroot "$USERLAND" \
			/usr/bin/env -C "$vroce_cwd" "${vroce_cmd[@]}"
		exec "${vroce_cmd[@]}"
	) </dev/null
}

# An object is reported once it is older than 5 s and unchanged across two
# scans: scan, scan again when the command's last allocations are 5 s old,
# then collect. $1 is $SECONDS when the command ended.
kmemleak_check() {
	local wait

	[[ -n $KMEMLEAK_ON ]] || return 0
	echo scan >"$KMEMLEAK"
	wait=$((6 - (SECONDS - $1)))
	((wait <= 0)) || sleep "$wait"
	echo scan >"$KMEMLEAK"
	cat "$KMEMLEAK" >"$VROCE_OUT/kmemleak.txt"
}

main() {
	local rc

	load_env "$1"
	# Best effort, for post-mortems when no status comes back.
	dmesg --follow >"$VROCE_OUT/dmesg.live" 2>&1 &
	setup_system
	enter_userland
	# Forget what boot itself leaked; only leaks from the command count.
	# No periodic scan meanwhile: each took 8-15 s of a debug guest's CPU
	# (one every 10 minutes), and the scans after the command
	# (kmemleak_check) find every object it leaked.
	# Booted with kmemleak=off, it takes "clear" and refuses the rest.
	if [[ -e $KMEMLEAK ]]; then
		echo clear >"$KMEMLEAK"
		echo scan=off 2>/dev/null >"$KMEMLEAK" && KMEMLEAK_ON=1
	fi
	kmsg "running the command"
	run_command
	rc=$?
	kmsg "the command exited $rc"
	cd / || true
	kmemleak_check "$SECONDS"
	dmesg >"$VROCE_OUT/dmesg.txt"
	echo "$rc" >"$STATUS_TTY"
	power_off
}

main "$@"
