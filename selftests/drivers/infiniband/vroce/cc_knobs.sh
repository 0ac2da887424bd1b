#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Congestion-control knobs in sysfs, /sys/class/infiniband/<dev>/cc/: every
# DCQCN knob under its mlx5 name reads back its documented default, takes
# every value of its range and refuses anything else with EINVAL, leaving
# the value as it was; np_enable_<p> and rp_enable_<p> switch the
# notification and reaction point per priority, all on by default; the
# knobs belong to one device.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vroce_require ip rdma

DEV=cck0
DEV2=cck1
CC=/sys/class/infiniband/$DEV/cc

# name min max default (Documentation/ABI/testing/sysfs-class-infiniband-vroce)
KNOBS="
rp_clamp_tgt_rate 0 1 0
rp_clamp_tgt_rate_ati 0 1 1
rp_time_reset 1 10000000 300
rp_byte_reset 0 4294967295 32767
rp_threshold 1 31 1
rp_ai_rate 1 4000000 5
rp_max_rate 0 4000000 0
rp_hai_rate 1 4000000 50
rp_min_dec_fac 1 100 50
rp_min_rate 1 4000000 1
rp_rate_to_set_on_first_cnp 0 4000000 0
rp_dce_tcp_g 0 1023 1019
rp_dce_tcp_rtt 1 10000000 1
rp_rate_reduce_monitor_period 0 10000000 4
rp_initial_alpha_value 0 1023 1023
rp_gd 0 15 11
np_min_time_between_cnps 0 10000000 4
np_cnp_dscp 0 63 48
np_cnp_prio 0 7 6
"

cleanup() {
	rm -f "$VROCE_LOG.put"
	ip link del cka 2>/dev/null
	ip link del ckc 2>/dev/null
	vroce_unload
	vroce_cleanup
}
trap cleanup EXIT

setup() {
	vroce_veth_dev $DEV cka ckb &&
		ip link add ckc type veth peer name ckd &&
		rdma link add $DEV2 type vroce netdev ckc &&
		wait_for 10 test -d "/sys/class/infiniband/$DEV2/cc"
}

# The helpers below use shell builtins only (no fork per write): the debug
# kernel under TCG makes every process start slow.

# put FILE VALUE: write VALUE and a newline; the write's error, if any, in
# $PUT_ERR.
PUT_ERR=
put() {
	local errf="$VROCE_LOG.put"

	if { printf '%s\n' "$2" >"$1"; } 2>"$errf"; then
		PUT_ERR=
		return 0
	fi
	read -r PUT_ERR <"$errf"
	return 1
}

# set_ok FILE VALUE: the write succeeds and reads back as VALUE (decimal).
set_ok() {
	local got

	put "$1" "$2" || { echo "writing '$2' to $1: $PUT_ERR"; return 1; }
	read -r got <"$1"
	[ "$got" = "$(($2))" ] || { echo "$1: wrote $2, reads $got"; return 1; }
}

# set_einval FILE VALUE: the write fails with EINVAL and the value stays.
set_einval() {
	local before after

	read -r before <"$1"
	if put "$1" "$2"; then
		echo "writing '$2' to $1 succeeded"
		return 1
	fi
	[[ "$PUT_ERR" == *"Invalid argument"* ]] ||
		{ echo "writing '$2' to $1: $PUT_ERR"; return 1; }
	read -r after <"$1"
	[ "$after" = "$before" ] ||
		{ echo "$1 changed to $after by a refused write"; return 1; }
}

files_as_documented() {
	local want got p

	want=$(
		awk 'NF { print $1 }' <<<"$KNOBS"
		for p in 0 1 2 3 4 5 6 7; do
			echo "np_enable_$p"
			echo "rp_enable_$p"
		done
	)
	got=$(ls "$CC")
	[ "$(sort <<<"$want")" = "$(sort <<<"$got")" ] ||
		{ diff <(sort <<<"$want") <(sort <<<"$got"); return 1; }
}

defaults_as_documented() {
	local name min max def got rc=0

	while read -r name min max def; do
		[ -n "$name" ] || continue
		read -r got <"$CC/$name"
		[ "$got" = "$def" ] || { echo "$name = $got, want $def"; rc=1; }
	done <<<"$KNOBS"
	return $rc
}

# knob_range NAME MIN MAX DEF
knob_range() {
	local f="$CC/$1" min=$2 max=$3 def=$4

	set_ok "$f" "$min" && set_ok "$f" "$max" &&
		set_ok "$f" $(((min + max) / 2)) || return 1
	if [ "$max" -lt 4294967295 ]; then
		set_einval "$f" $((max + 1)) || return 1
	fi
	if [ "$min" -gt 0 ]; then
		set_einval "$f" $((min - 1)) || return 1
	fi
	set_einval "$f" -1 && set_einval "$f" 4294967296 &&
		set_einval "$f" abc && set_einval "$f" "" &&
		set_einval "$f" "1 2" && set_ok "$f" "$def"
}

enables_per_priority() {
	local p pt v

	for pt in np rp; do
		for p in 0 1 2 3 4 5 6 7; do
			read -r v <"$CC/${pt}_enable_$p"
			[ "$v" = 1 ] ||
				{ echo "${pt}_enable_$p is not on by default"; return 1; }
		done
	done
	set_ok "$CC/np_enable_3" 0 && set_ok "$CC/rp_enable_5" 0 || return 1
	for pt in np rp; do
		for p in 0 1 2 3 4 5 6 7; do
			local want=1

			[ "$pt$p" = np3 ] || [ "$pt$p" = rp5 ] && want=0
			read -r v <"$CC/${pt}_enable_$p"
			[ "$v" = $want ] ||
				{ echo "${pt}_enable_$p: want $want"; return 1; }
		done
	done
	set_einval "$CC/np_enable_0" 2 && set_einval "$CC/rp_enable_5" -1 &&
		set_einval "$CC/rp_enable_5" on &&
		set_ok "$CC/np_enable_3" 1 && set_ok "$CC/rp_enable_5" 1
}

per_device() {
	local ai en

	set_ok "$CC/rp_ai_rate" 77 && set_ok "$CC/rp_enable_2" 0 || return 1
	read -r ai <"/sys/class/infiniband/$DEV2/cc/rp_ai_rate"
	read -r en <"/sys/class/infiniband/$DEV2/cc/rp_enable_2"
	[ "$ai" = 5 ] && [ "$en" = 1 ] &&
		set_ok "$CC/rp_ai_rate" 5 && set_ok "$CC/rp_enable_2" 1
}

ktap_print_header
ktap_set_plan $((5 + $(awk 'NF' <<<"$KNOBS" | wc -l)))

check "two vroce devices" setup
check "cc/ holds the documented files" files_as_documented
check "knobs read back their documented defaults" defaults_as_documented
while read -r name min max def; do
	[ -n "$name" ] || continue
	check "$name takes $min..$max, refuses the rest with EINVAL" \
		knob_range "$name" "$min" "$max" "$def"
done <<<"$KNOBS"
check "NP and RP enables per priority, on by default" enables_per_priority
check "knobs are per device" per_device

ktap_finished
