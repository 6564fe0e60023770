#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-kfilter.sh - the kernel's ingress filter of net_af_packet ports
# (FI_DROCE_KERNEL_FILTER, src/roce/port_kfilter.c; issue 13, point 3).
#
#   netns drkf<pid>a: dka<pid> 10.88.N.1/24 ==veth== dkb<pid> 10.88.N.2/24 :netns drkf<pid>b
#
# The kernel holds each end's address, so without the filter its IP stack
# processes every RoCE frame droce receives and discards it in the UDP
# socket droce holds on 4791 (a socket-filter drop, counted in the
# namespace's Udp InErrors of /proc/net/snmp).
#
# Run 1 (the default): droce-xfer write, read and send of 0 B, 4 KiB and
# 1 MiB, data verified.  While the client is held before its second
# iteration of its first operation (-G 1), each namespace has exactly the nftables table its droce
# process named in its info line (table netdev droce_<pid>_<n>).  After the
# run: both pass, each namespace's Udp InErrors grew by exactly 0 (the
# kernel's IP stack saw none of droce's frames) and the tables are gone.
# Run 2 (FI_DROCE_KERNEL_FILTER=0): the same transfers; no table while held;
# Udp InErrors grew in both namespaces (the witness of run 1 works).
# Run 3: a server with the filter, ended by kill -9: its table is gone
# within 2 s (the kernel deletes a table owned by a dead process).
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns, no tshark, no nft),
# 99 hard error.

set -u

. "$(dirname "$0")/netns-lib.sh"
built "$XFER"
command -v nft >/dev/null 2>&1 || skip "needs nft (nftables)"
ns_pair_names drkf dk 10.88
ns_pair_up netns-kfilter "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
ip netns exec "$NSA" nft list tables >/dev/null 2>&1 ||
	skip "nftables does not work in a network namespace here"
FI_LOG_LEVEL=info
export FI_LOG_LEVEL

udp_inerrors() { # ns: its Udp InErrors
	ip netns exec "$1" awk '$1 == "Udp:" { if (!h) { for (i = 2; i <= NF; i++) c[$i] = i; h = 1 }
		else print $c["InErrors"] }' /proc/net/snmp
}

droce_tables() { # ns: its tables named droce_*, one a line
	ip netns exec "$1" nft list tables 2>/dev/null | awk '$1 == "table" && $2 == "netdev" &&
		$3 ~ /^droce_[0-9]+_[0-9]+$/ { print $3 }'
}

named_table() { # log: the table droce's info line names
	sed -n 's/.*(nftables table netdev \(droce_[0-9]*_[0-9]*\), gone with the process).*/\1/p' \
		"$1" | head -n 1
}

wait_file() { # file tenths: it exists within tenths x 0.1 s
	wf_i=0
	until [ -e "$1" ]; do
		wf_i=$((wf_i + 1))
		[ $wf_i -lt "$2" ] || return 1
		sleep 0.1
	done
}

# session N FILTER(1/0): one droce-xfer session, the client held at its
# second iteration while the tables are looked at
session() {
	n=$1 kf=$2
	port=$((47800 + n))
	xfer_env="FI_DROCE_KERNEL_FILTER=$kf"
	ea=$(udp_inerrors "$NSA") eb=$(udp_inerrors "$NSB")
	xfer_start "$NSA" 60 s$n -w 30 -t 30 || return
	gate=$tmp/gate$n
	# shellcheck disable=SC2086 # $xfer_env: assignments
	ip netns exec "$NSB" env $xfer_env timeout -k 5 60 "$XFER" -p droce -s "$IPA" -P $port \
		-o write,read,send -S 0,4096,1m -I 3 -t 30 -G "1:$gate" >"$tmp/c$n.cli" 2>&1 &
	cpid=$!
	if ! wait_file "$gate" 300; then
		bad "run $n: the client never reached its second iteration:"
		tail -n 20 "$tmp/c$n.cli" "$tmp/s$n.srv"
		kill "$cpid" "$xs_pid" 2>/dev/null
		wait "$cpid" "$xs_pid" 2>/dev/null
		return
	fi
	ta=$(droce_tables "$NSA") tb=$(droce_tables "$NSB")
	rm -f "$gate"
	wait "$cpid"
	crc=$?
	wait "$xs_pid"
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || ! grep -q 'droce-xfer: [0-9]* passed, 0 failed' \
		"$tmp/c$n.cli"; then
		bad "run $n: client exit $crc, server exit $src:"
		tail -n 20 "$tmp/c$n.cli" "$tmp/s$n.srv"
		return
	fi
	echo "ok: run $n (FI_DROCE_KERNEL_FILTER=$kf): $(grep "droce-xfer: [0-9]* passed" "$tmp/c$n.cli")"
	da=$(($(udp_inerrors "$NSA") - ea)) db=$(($(udp_inerrors "$NSB") - eb))
	echo "run $n: tables while held: A '$ta', B '$tb'; Udp InErrors grew A $da, B $db"
	if [ "$kf" = 1 ]; then
		na=$(named_table "$tmp/s$n.srv") nb=$(named_table "$tmp/c$n.cli")
		[ -n "$na" ] && [ "$ta" = "$na" ] ||
			bad "run $n: A's tables '$ta', its droce named '$na'"
		[ -n "$nb" ] && [ "$tb" = "$nb" ] ||
			bad "run $n: B's tables '$tb', its droce named '$nb'"
		[ "$da" -eq 0 ] && [ "$db" -eq 0 ] ||
			bad "run $n: the kernel's UDP saw droce's frames (InErrors A +$da, B +$db)"
	else
		[ -z "$ta" ] && [ -z "$tb" ] || bad "run $n: tables without the filter: '$ta' '$tb'"
		grep -q 'nftables table' "$tmp/s$n.srv" "$tmp/c$n.cli" &&
			bad "run $n: a port said it filters"
		[ "$da" -gt 0 ] && [ "$db" -gt 0 ] ||
			bad "run $n: Udp InErrors did not grow without the filter (A +$da, B +$db)"
	fi
	left="$(droce_tables "$NSA")$(droce_tables "$NSB")"
	[ -z "$left" ] || bad "run $n: tables left after the processes ended: $left"
}

session 1 1
session 2 0

# run 3: kill -9 a server that filters
port=47803
ip netns exec "$NSA" timeout -k 5 60 "$XFER" -p droce -P $port -w 30 >"$tmp/s3.srv" 2>&1 &
spid=$!
if listening "$spid" "$NSA" $port "$tmp/s3.srv" "the droce-xfer server (run 3)"; then
	# the port opens when the server listens on the fabric (before TCP)
	t=$(droce_tables "$NSA")
	xpid=$(ip netns pids "$NSA" | while read -r p; do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = droce-xfer ] && echo "$p"
	done | head -n 1)
	if [ -z "$t" ] || [ -z "$xpid" ]; then
		bad "run 3: table '$t', droce-xfer PID '$xpid'"
		kill "$spid" 2>/dev/null
	else
		kill -9 "$xpid"
		i=0
		while [ -n "$(droce_tables "$NSA")" ] && [ $i -lt 20 ]; do
			i=$((i + 1))
			sleep 0.1
		done
		left=$(droce_tables "$NSA")
		[ -z "$left" ] || bad "run 3: table $left outlived its process by 2 s"
		[ -n "$left" ] || echo "ok: run 3: table $t gone after kill -9 of PID $xpid"
	fi
	wait "$spid" 2>/dev/null
fi

[ "$fail" -eq 0 ] || exit 1
echo "PASS: netns-kfilter"
exit 0
