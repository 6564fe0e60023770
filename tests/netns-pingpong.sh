#!/bin/sh
# shellcheck disable=SC2086,SC2046 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-pingpong.sh - droce between two network namespaces joined by a veth
# pair, driven by libfabric-bin's stock fi_pingpong, watched by tshark.
#
# Topology (names unique per run, $$ in each):
#
#   netns drpp<pid>a: dpa<pid> 10.77.N.1/24 ==veth== dpb<pid> 10.77.N.2/24 :netns drpp<pid>b
#
# MTU 1500 on both ends (path MTU 1024).  No FI_DROCE_* variable is set (any
# in the caller's environment is removed): droce must pick its packet socket
# (packet:IF, FI_DROCE_KERNEL_PMD) on the namespace's only interface and its
# address by itself, and sends UDP GSO super-frames to its peer.  FI_PROVIDER_PATH
# points at the build tree.
#
# Asserts:
#  1. fi_pingpong -p droce -e msg -c (data verification) exits 0 on both sides
#     and every message is acknowledged (#ack = #sent), both ways (server in
#     A/client in B, then swapped), for 1 B, 64 B, 1 KiB, 4 KiB, 64 KiB and
#     1 MiB messages.
#  2. tshark over the whole session shows ARP, CM ConnectRequest,
#     ConnectReply and ReadyToUse (one of each per connection at least),
#     DisconnectRequest (one per connection at least) and DisconnectReply,
#     RC SEND packets (ONLY, FIRST, MIDDLE) and RC ACKNOWLEDGEs (tshark
#     decodes a super-frame's first packet only: a LAST, which always
#     follows packets of its size, is inside one; point 5 counts it);
#  3. no malformed frame and no expert error (with the RPC-over-RDMA
#     heuristic disabled, see below);
#  4. no ICMP port unreachable (icmp.type==3 && icmp.code==3): while its
#     port is open droce holds a kernel UDP socket on 4791 so the kernel,
#     which sees the same frames as the af_packet socket, stays quiet;
#  5. tools/droce-pcapcheck: every UDP/4791 frame parses with droce's own
#     parser and carries a valid ICRC (Wireshark never checks the ICRC),
#     super-frames cut into their packets; CM messages, ACKs and SEND ONLY,
#     FIRST, MIDDLE and LAST among them.
# Then it prints fi_pingpong's figures (usec/xfer, MB/s) for 64 B, 4 KiB and
# 1 MiB from runs without -c (the data check costs a fill and a compare of
# the whole buffer per message, which is not the transport's time).
#
# Capture: each namespace runs a tshark on its veth end with the capture
# filter "inbound": together they see every frame on the wire exactly once
# (droce's and the kernel's: ARP, fi_pingpong's TCP control connection),
# and mergecap joins them in time order (same clock).  droce now sends
# through the qdisc layer by default (FI_DROCE_QDISC_BYPASS=0), so one
# capture on either end would see both directions too (netns-capture.sh
# asserts that); capturing inbound on both ends keeps this test independent
# of that setting, and each frame is counted once, as it arrived.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, or no ip netns / fi_pingpong /
# tshark), 99 hard error (droce or droce-pcapcheck not built).  Bounded:
# every command runs under timeout, and no new fi_pingpong run starts after
# DROCE_NETNS_BUDGET seconds (default 120; the analysis after it takes
# seconds to tens of seconds).  On failure the merged capture is
# kept as $top_builddir/netns-pingpong.pcapng.

set -u

. "$(dirname "$0")/netns-lib.sh"
need_mergecap
ns_pair_names drpp dp 10.77
ns_pair_up netns-pingpong "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
keep_on_fail merged.pcapng netns-pingpong.pcapng
echo "topology: $NSA/$VA $IPA <-> $NSB/$VB $IPB, MTU 1500"
pp_version=$(dpkg-query -W -f='${Version}' libfabric-bin 2>/dev/null || echo '?')
echo "fi_pingpong: $FI_PINGPONG (libfabric-bin $pp_version)"
echo "tshark: $("$TSHARK" --version 2>/dev/null | head -n 1)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- capture --------------------------------------------------------------------

cap_start "$NSA" "$VA" "$tmp/a.pcapng" -f inbound -B 128
cap_start "$NSB" "$VB" "$tmp/b.pcapng" -f inbound -B 128
cap_wait "$tmp/a.pcapng" "$tmp/b.pcapng"

# ---- fi_pingpong runs ------------------------------------------------------------

port=47600
printf '%-34s %8s %6s %10s %11s %7s\n' "run" "size" "iters" "MB/sec" "usec/xfer" "wall s" \
	>"$tmp/pp.table"

iters_for() { # size -> iterations (keeps the capture and the run short)
	case $1 in
	1048576) echo 10 ;;
	65536) echo 100 ;;
	*) echo 500 ;;
	esac
}

for size in 1 64 1024 4096 65536 1048576; do
	it=$(iters_for $size)
	run_pp "server A, client B, -c" "$NSA" "$NSB" "$IPA" $size "$it" 40 -c
	run_pp "server B, client A, -c" "$NSB" "$NSA" "$IPB" $size "$it" 40 -c
done
# figures for the lead: no -c, server in A
run_pp "figures: server A, client B" "$NSA" "$NSB" "$IPA" 64 5000 40
run_pp "figures: server A, client B" "$NSA" "$NSB" "$IPA" 4096 2000 40
run_pp "figures: server A, client B" "$NSA" "$NSB" "$IPA" 1048576 30 40
connections=$pp_runs

# ---- stop the capture --------------------------------------------------------------

cap_stop
for s in a b; do
	drops=$(cap_drops "$tmp/$s.pcapng")
	echo "capture on the $s side: $(cap_got "$tmp/$s.pcapng") frames${drops:+, $drops dropped by the kernel}"
	if [ -n "$drops" ] && [ "$drops" -ne 0 ]; then
		echo "WARN: the capture lost frames; counts below may be short"
	fi
done
if ! timeout -k 5 60 "$MERGECAP" -w "$tmp/merged.pcapng" "$tmp/a.pcapng" "$tmp/b.pcapng"; then
	echo "FAIL: mergecap"
	exit 1
fi

# ---- what tshark sees -----------------------------------------------------------------

# Wireshark 4.0's RPC-over-RDMA heuristic (packet-rpcrdma.c, heuristic
# "rpcrdma_infiniband" on table infiniband.payload) claims RC SEND payloads
# and marks those under 16 bytes malformed; fi_pingpong's small messages are
# not RPC-over-RDMA.  `tshark -G heuristic-decodes` lists it under its
# protocol name (rpcordma), but --disable-heuristic wants the heuristic's own
# short name.  Tried first; without it if this tshark does not know it.
heur_check "$tmp/merged.pcapng"

if ! tshark_r "$tmp/merged.pcapng" -T fields \
	-E separator=/t -E occurrence=f -e frame.number -e frame.protocols -e infiniband.bth.opcode \
	-e infiniband.mad.attributeid -e icmp.type -e icmp.code \
	>"$tmp/fields.txt" 2>"$tmp/tshark.err"; then
	echo "FAIL: tshark could not read the capture:"
	cat "$tmp/tshark.err"
	exit 1
fi
# counts (${10} and up need braces: $10 is ${1}0): arp cm_req cm_rep cm_rtu
# cm_rej cm_dreq cm_drep send_only send_first send_middle send_last acks
# icmp_unreach roce frames
# (an ICMP error quotes the datagram it answers, which tshark dissects too:
# those InfiniBand headers are not counted)
set -- $(awk -F'\t' '
	{ n++ }
	$2 ~ /:arp(:|$)/ { arp++ }
	$5 == "3" && $6 == "3" { icmp++ }
	$2 ~ /:icmp(:|$)/ || $2 !~ /:infiniband(:|$)/ { next }
	{ roce++ }
	$4 == "0x0010" { req++ }
	$4 == "0x0013" { rep++ }
	$4 == "0x0014" { rtu++ }
	$4 == "0x0012" { rej++ }
	$4 == "0x0015" { dreq++ }
	$4 == "0x0016" { drep++ }
	$3 == "4" { only++ }
	$3 == "0" { first++ }
	$3 == "1" { middle++ }
	$3 == "2" { last++ }
	$3 == "17" { ack++ }
	END { print arp+0, req+0, rep+0, rtu+0, rej+0, dreq+0, drep+0, only+0, first+0,
		middle+0, last+0, ack+0, icmp+0, roce+0, n+0 }' "$tmp/fields.txt")
echo "tshark: ${15} frames, ${14} InfiniBand over UDP 4791, $1 ARP, ICMP port unreachable ${13}"
echo "tshark: CM ConnectRequest $2, ConnectReply $3, ReadyToUse $4, ConnectReject $5," \
	"DisconnectRequest $6, DisconnectReply $7 ($connections connections)"
echo "tshark: RC SEND ONLY $8, FIRST $9, MIDDLE ${10}, LAST ${11}; RC ACKNOWLEDGE ${12}"

need ARP "$1" 1
need ConnectRequest "$2" "$connections"
need ConnectReply "$3" "$connections"
need ReadyToUse "$4" "$connections"
need DisconnectRequest "$6" "$connections"
need DisconnectReply "$7" 1
need "RC SEND ONLY" "$8" 1
need "RC SEND FIRST" "$9" 1
need "RC SEND MIDDLE" "${10}" 1
need "RC ACKNOWLEDGE" "${12}" 1
if [ "$7" -lt "$connections" ]; then
	echo "note: DisconnectReply in $7 of $connections teardowns: a side that sends" \
		"a DREQ and closes its port at once meets the DREP with a closed port" \
		"(ICMP below), and a DREQ that meets a closed port is never answered"
fi
none "ConnectReject in a session that rejects nothing" "$5"
if [ "${13}" -ne 0 ]; then
	echo "FAIL: tshark: ${13} ICMP port unreachable (icmp.type==3 && icmp.code==3):"
	tshark_r "$tmp/merged.pcapng" -Y 'icmp.type==3 && icmp.code==3' -T fields \
		-e frame.number -e frame.time_relative -e ip.src -e ip.dst -e udp.dstport -e infiniband.mad.attributeid 2>/dev/null | head -n 20
	fail=1
else
	echo "ok: no ICMP port unreachable"
fi

no_errors "$tmp/merged.pcapng"

# ---- droce's own parser: every RoCE frame, ICRC included ------------------------------

pcapcheck pcapcheck 150 \
	--require "ARP,CM_REQ:$connections,CM_REP:$connections,CM_RTU:$connections" \
	--require "CM_DREQ:$connections,CM_DREP,RC_SEND_ONLY,RC_SEND_FIRST,RC_SEND_MIDDLE" \
	--require "RC_SEND_LAST,ACK" --min-roce 1000 -v "$tmp/merged.pcapng" &&
	grep '^RC request PSNs' "$tmp/pcapcheck.txt"

# ---- figures ------------------------------------------------------------------------------

echo
echo "fi_pingpong over the veth (MTU 1500, path MTU 1024; load average now" \
	"$(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs):"
cat "$tmp/pp.table"
echo "total $(elapsed)s"

[ $fail -eq 0 ] || exit 1
echo "PASS: netns-pingpong"
exit 0
