#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run a command as root in a throw-away QEMU (TCG) guest whose root is the
# host's / mounted read-only over 9p, and exit with the command's status.
# See README in this directory for the full contract.
#
# Exit status: the command's (0..255) if the guest reported it and its dmesg
# is clean; 125 if the guest kernel warned, oopsed, leaked, ...; 124 on
# timeout; 126 if the guest reported no status or the harness failed.

set -euo pipefail

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SELF_DIR

readonly EXIT_TIMEOUT=124
readonly EXIT_KERNEL=125
readonly EXIT_HARNESS=126

# dmesg lines that fail a run, and lines that look alike but are harmless.
readonly SPLATS=(
	'WARNING:' 'BUG:' 'Oops' 'KASAN' 'UBSAN:' 'general protection fault'
	'possible circular locking' 'INFO: possible' 'WARNING: possible'
	'inconsistent lock state' 'suspicious RCU usage'
	'unreferenced object' 'suspected memory leak'
	'hung_task' 'blocked for more than' 'soft lockup' 'Kernel panic'
	'refcount_t:' 'list_add corruption' 'list_del corruption'
)
readonly BENIGN=(
	'Command line:' 'Kernel command line:'
	'loading out-of-tree module taints kernel' 'module verification failed'
	# A user-space program's fault ("traps: comm[pid] general protection
	# fault ... in lib.so"): the test that ran it fails on its status.
	' traps: [^ ]+\[[0-9]+\] '
)

KERNEL=
TIMEOUT=600
MEM=
CPUS=2
OUT=
SRC=
NETARGS=
USERLAND=
CMD=()
# Set by resolve_kernel.
KIMAGE=
RELEASE=
MODROOT=
GUEST_MODULES=

# usage [STATUS]
usage() {
	cat >&2 <<EOF
usage: $0 [-k KERNEL] [-t TIMEOUT_S] [-m MEM] [-c CPUS] [-o OUTDIR]
          [-n NETARGS] [-u ROOT] -- CMD [ARGS...]
  -k  Debian kernel release in /boot or in the Debian sid root of
      tools/sid-root.sh, or "debug" or "kcsan" (the debug-kernel.sh
      flavours; default: newest 6.12)
  -t  timeout in seconds (default 600)
  -m  guest RAM (default 1024M, 2048M for debug and kcsan)
  -c  vCPUs (default 2)
  -o  output dir, mounted at the same path in the guest (default: mktemp -d)
  -n  extra QEMU networking arguments (default: -nic none)
  -u  run CMD chrooted into ROOT, a Debian root under the host's / (e.g.
      the sid root's user space, rdma-core 65), not in the host's
EOF
	exit "${1:-$EXIT_HARNESS}"
}

die() {
	echo "run.sh: $*" >&2
	exit "$EXIT_HARNESS"
}

default_kernel() {
	local images=(/boot/vmlinuz-6.12.*)

	[[ -e ${images[0]} ]] || die "no 6.12 kernel in /boot; use -k"
	printf '%s\n' "${images[@]#/boot/vmlinuz-}" | sort -V | tail -n 1
}

parse_args() {
	local opt

	while getopts ":k:t:m:c:o:n:u:h" opt; do
		case $opt in
		k) KERNEL=$OPTARG ;;
		t) TIMEOUT=$OPTARG ;;
		m) MEM=$OPTARG ;;
		c) CPUS=$OPTARG ;;
		o) OUT=$OPTARG ;;
		n) NETARGS=$OPTARG ;;
		u) USERLAND=$OPTARG ;;
		h) usage 0 ;;
		*) usage ;;
		esac
	done
	shift $((OPTIND - 1))
	(($#)) || usage
	CMD=("$@")
	[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "bad timeout '$TIMEOUT'"
	[[ -n $KERNEL ]] || KERNEL=$(default_kernel)
}

resolve_kernel() {
	local dir sid

	if [[ $KERNEL == debug || $KERNEL == kcsan ]]; then
		dir=$("$SELF_DIR/debug-kernel.sh" dir "$KERNEL") ||
			die "$KERNEL kernel not built; run $SELF_DIR/debug-kernel.sh build $KERNEL"
		KIMAGE=$dir/bzImage
		RELEASE=$(<"$dir/obj/include/config/kernel.release")
		MODROOT=$dir/mods
		GUEST_MODULES=$dir/mods/lib/modules
		MEM=${MEM:-2048M}
	elif [[ ! -e /boot/vmlinuz-$KERNEL ]] &&
	     sid=$("$SELF_DIR/../../sid-root.sh" dir 2>/dev/null) &&
	     [[ -r $sid/boot/vmlinuz-$KERNEL ]]; then
		# A sid kernel: its image and modules come from the sid root,
		# the guest's user space is still the host's.
		KIMAGE=$sid/boot/vmlinuz-$KERNEL
		RELEASE=$KERNEL
		MODROOT=$sid
		GUEST_MODULES=$sid/lib/modules
		MEM=${MEM:-1024M}
	else
		KIMAGE=/boot/vmlinuz-$KERNEL
		RELEASE=$KERNEL
		MODROOT=/
		MEM=${MEM:-1024M}
		[[ -r $KIMAGE ]] || die "no kernel $KIMAGE"
	fi
}

# The guest sees the host's / and mounts OUTDIR at the same path; paths go
# on the QEMU and kernel command lines, so keep them free of separators.
check_path() {
	[[ $2 =~ ^/[^[:space:],]*$ ]] ||
		die "$1 '$2' must be absolute, without spaces or commas"
}

prepare_outdir() {
	if [[ -z $OUT ]]; then
		OUT=$(mktemp -d -t vroce-vm.XXXXXX)
		echo "run.sh: output in $OUT" >&2
	fi
	mkdir -p "$OUT/.vroce"
	OUT=$(cd "$OUT" && pwd -P)
	check_path OUTDIR "$OUT"
	check_path "script dir" "$SELF_DIR"
	SRC=$(cd "$SELF_DIR/../../.." && pwd -P)
	check_path "source tree" "$SRC"
	if [[ -n $USERLAND ]]; then
		USERLAND=$(cd "$USERLAND" && pwd -P) || die "no root dir $USERLAND"
		check_path "user space root" "$USERLAND"
		[[ -x $USERLAND/bin/sh ]] || die "$USERLAND has no /bin/sh"
	fi
	case $SRC/ in
	/tmp/* | /var/tmp/* | /run/*)
		# Hidden by a tmpfs in the guest: shared on its own.
		echo "$SRC" >"$OUT/.vroce/srcdir"
		;;
	/dev/*)
		die "$SRC is hidden by devtmpfs in the guest; run from elsewhere"
		;;
	*)
		rm -f "$OUT/.vroce/srcdir"
		;;
	esac
	case $PWD/ in
	"$SRC"/*) ;;
	/tmp/* | /var/tmp/* | /run/* | /dev/*)
		die "$PWD is hidden by a tmpfs in the guest; run from the source tree"
		;;
	esac
	rm -f "$OUT/console.log" "$OUT/dmesg.txt" "$OUT/dmesg.live" \
		"$OUT/kmemleak.txt" "$OUT/kcsan-other.txt" "$OUT/dmesg.ours.txt" \
		"$OUT/.vroce/status"
	echo "$OUT" >"$OUT/.vroce/outdir"
	{
		printf 'VROCE_OUT=%q\n' "$OUT"
		printf 'vroce_cwd=%q\n' "$PWD"
		printf 'vroce_modules=%q\n' "$GUEST_MODULES"
		printf 'vroce_userland=%q\n' "$USERLAND"
		printf 'vroce_cmd=('
		printf ' %q' "${CMD[@]}"
		printf ' )\n'
	} >"$OUT/.vroce/env"
}

# host_tsc_khz: the host's TSC frequency in kHz, from its kernel's log
# (the refined calibration if there is one); fails if the log has none.
host_tsc_khz() {
	dmesg 2>/dev/null | awk '
	/tsc: Refined TSC clocksource calibration: [0-9.]+ MHz/ { r = $(NF - 1) }
	/tsc: Detected [0-9.]+ MHz processor/ { d = $(NF - 2) }
	END { m = r ? r : d; if (!m) exit 1; printf "%d\n", m * 1000 }'
}

kernel_cmdline() {
	# tsc=reliable: no clocksource watchdog. On a loaded host it found
	# the TCG guest's TSC skewed against the HPET, marked it unstable,
	# and the static-key flip that follows patched kernel text under the
	# other vCPU: an int3 Oops in __sched_clock_work, in a CI run.
	# trace_options=norecord-cmd: enabling a trace event (cc.sh enables
	# vroce's) does not register ftrace's comm recorder on sched_switch
	# and sched_wakeup, whose static-key flip, patching the scheduler's
	# text under the other vCPU, gave an int3 Oops in ttwu_do_activate.
	local args=(
		console=ttyS0 loglevel=4 log_buf_len=4M panic=-1 reboot=t
		random.trust_cpu=on no_timer_check edd=off tsc=reliable
		trace_options=norecord-cmd
		sysctl.kernel.hung_task_timeout_secs=60
		"vroce.init=$SELF_DIR/guest-init.sh"
	)
	local extra=() khz

	# Under TCG the guest's TSC is the host's. A guest that calibrates it
	# against the PIT on a busy host can measure a fraction of its rate
	# (672 MHz for 2445 once, with two debug guests booting together):
	# its clock then ran 3.6 times too fast, and every timeout in it, the
	# kernel's (hung tasks, netdev unregistration) and the tests', fired
	# that much early. So the guest takes the host's figure.
	if khz=$(host_tsc_khz); then
		args+=("tsc_early_khz=$khz")
	fi

	# The debug kernel has no mitigations to turn off and says so. Its
	# SLUB debugging (built in and on) is switched off: KASAN already
	# redzones, poisons and records every allocation and free, and SLUB's
	# checks on top of it took a quarter of make check's debug-kernel time
	# (rc.sh: 243 s with them, 180 s without). VROCE_KARGS=slub_debug=FZPU
	# brings them back.
	if [[ $KERNEL == debug ]]; then
		args+=(slub_debug=-)
	elif [[ $KERNEL != kcsan ]]; then
		args+=(mitigations=off)
	fi
	# More from VROCE_KARGS in the env (make check's second debug VM:
	# kmemleak=off).
	read -ra extra <<<"${VROCE_KARGS:-}"
	args+=("${extra[@]}")
	echo "${args[*]}"
}

# Streams the console to stdout (and console.log); returns QEMU's status.
run_qemu() {
	local kimage initrd net qemu src_share

	kimage=$("$SELF_DIR/kernel-image.sh" "$KIMAGE") ||
		die "cannot prepare $KIMAGE"
	initrd=$("$SELF_DIR/initramfs.sh" "$RELEASE" "$MODROOT") ||
		die "cannot build the initramfs"
	src_share=()
	if [[ -f $OUT/.vroce/srcdir ]]; then
		src_share=(-virtfs "local,path=$SRC,mount_tag=vroce_src,security_model=none,readonly=on,multidevs=remap")
	fi
	if [[ -n $NETARGS ]]; then
		read -ra net <<<"$NETARGS"
	else
		net=(-nic none)
	fi
	# shellcheck disable=SC2054 # QEMU options are comma-separated
	qemu=(
		qemu-system-x86_64 -nodefaults -no-user-config -display none
		-no-reboot -machine pc -accel tcg,thread=multi -cpu max
		-smp "$CPUS" -m "$MEM"
		-kernel "$kimage" -initrd "$initrd" -append "$(kernel_cmdline)"
		-virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap
		-virtfs "local,path=$OUT,mount_tag=vroce_out,security_model=none,multidevs=remap"
		-chardev "stdio,id=console,signal=off,logfile=$OUT/console.log"
		"${src_share[@]}"
		-serial chardev:console
		-serial "file:$OUT/.vroce/status"
		"${net[@]}"
	)
	timeout --foreground -k 10 "$TIMEOUT" "${qemu[@]}" </dev/null |
		sed -u 's/\r$//'
	return "${PIPESTATUS[0]}"
}

# The kcsan kernel reports every data race it sees, and the core kernel has
# races of its own (known, mostly benign). A KCSAN report fails the run only
# if a frame in it is vroce's; the others go to kcsan-other.txt. Reads a
# dmesg on stdin, prints it without the others.
kcsan_ours() {
	awk -v other="$OUT/kcsan-other.txt" '
	function flush(keep) {
		if (n == 0)
			return
		for (i = 1; i <= n; i++)
			if (keep)
				print block[i]
			else
				print block[i] > other
		n = 0
	}
	/BUG: KCSAN: / { flush(1); inside = 1; ours = 0 }
	inside {
		block[++n] = $0
		if (/\[vroce\]/)
			ours = 1
		if (n > 1 && /=================/) {
			flush(ours)
			inside = 0
		}
		next
	}
	{ print }
	END { flush(ours) }'
}

# Print the lines of the given files that show a kernel problem.
find_splats() {
	local splat benign

	splat=$(IFS='|' && echo "${SPLATS[*]}")
	benign=$(IFS='|' && echo "${BENIGN[*]}")
	grep -h -E -- "$splat" "$@" 2>/dev/null | grep -v -E -- "$benign" |
		awk '!seen[$0]++' || true
}

report_files() {
	local f

	for f in console.log dmesg.txt dmesg.live kmemleak.txt; do
		[[ -s $OUT/$f ]] && echo "run.sh:   $OUT/$f" >&2
	done
	return 0
}

verdict() {
	local qemu_rc=$1 status splats

	if ((qemu_rc == 124 || qemu_rc == 137)); then
		echo "run.sh: timed out after $TIMEOUT s" >&2
		find_splats "$OUT/dmesg.live" "$OUT/console.log" >&2
		report_files
		return "$EXIT_TIMEOUT"
	fi
	status=$(tr -d '\r' <"$OUT/.vroce/status" 2>/dev/null | head -n 1) || true
	if [[ ! $status =~ ^[0-9]+$ ]]; then
		echo "run.sh: the guest reported no exit status (qemu: $qemu_rc)" >&2
		find_splats "$OUT/dmesg.live" "$OUT/console.log" >&2
		report_files
		return "$EXIT_HARNESS"
	fi
	if [[ ! -f $OUT/dmesg.txt ]]; then
		echo "run.sh: the guest saved no dmesg.txt" >&2
		report_files
		return "$EXIT_HARNESS"
	fi
	if [[ $KERNEL == kcsan ]]; then
		kcsan_ours <"$OUT/dmesg.txt" >"$OUT/dmesg.ours.txt"
		splats=$(find_splats "$OUT/dmesg.ours.txt")
	else
		splats=$(find_splats "$OUT/dmesg.txt" "$OUT/kmemleak.txt")
	fi
	if [[ -n $splats ]]; then
		echo "run.sh: kernel problem (command exited $status):" >&2
		echo "$splats" >&2
		report_files
		return "$EXIT_KERNEL"
	fi
	return "$status"
}

main() {
	local rc=0

	parse_args "$@"
	resolve_kernel
	prepare_outdir
	run_qemu || rc=$?
	verdict "$rc"
}

main "$@"
