#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-ipv6.sh - droce over IPv6 (RoCEv2 over IPv6, neighbour discovery,
# the CM with IPv6 GIDs, FI_SOCKADDR_IN6) between two network namespaces
# joined by a veth pair, watched by tshark.
#
# Topology (names unique per run, $$ in each):
#
#   netns dr6<pid>a: d6a<pid> fd42:X::1/64 ==veth== d6b<pid> fd42:X::2/64 :netns dr6<pid>b
#
# MTU 1500 (path MTU 1024).  IPv6 on the veth ends only (no link-local
# address, no DAD, no router solicitations: the capture holds what droce
# and the tested programs send, and the kernel's ND).
#
# Phase 0, what zero configuration does not take: in a third namespace an
# interface whose only address is a tentative unique-local one (DAD cannot
# finish without a carrier; no link-local address either until there is
# one) gives fi_info -p droce nothing; FI_DROCE_ADDR naming the tentative
# address is taken (FI_SOCKADDR_IN6).  Then the carrier comes: once DAD is
# done (and a link-local address exists too) fi_info -p droce takes
# fd43::1 by itself, not the link-local one.
#
# Phase 1, IPv6 only (the interfaces have no IPv4 address), no FI_DROCE_*
# set: droce must pick the interface and its IPv6 address by itself.
#  1. fi_pingpong -6 -p droce -e msg -c passes both ways for 1 B .. 1 MiB,
#     every message acknowledged.
#     fi_pingpong -6 -e rdm over "droce;ofi_rxm" (FI_EP_RDM) passes too.
#  2. tools/droce-xfer: every operation (CM data, send, senddata, write,
#     writedata, read, fetch_add, cswap, atomic_read), sizes 0 B .. 1 MiB,
#     data verified by the client and the server, PASS.
#  3. tshark over the phase: every RoCEv2 frame is IPv6 between exactly
#     the two addresses (ipv6.src/ipv6.dst), UDP destination port 4791;
#     CM ConnectRequest/Reply/ReadyToUse/DisconnectRequest for every
#     connection, the RC opcodes of every operation (infiniband.bth.opcode:
#     SEND FIRST/MIDDLE/LAST/ONLY, WRITE FIRST/ONLY, READ REQUEST and
#     RESPONSE, COMPARE_SWAP, FETCH_ADD, ATOMIC ACKNOWLEDGE, ACKNOWLEDGE),
#     neighbour solicitations and advertisements for the two addresses, no
#     ARP and no IPv4 frame at all, no ICMPv6 destination unreachable, no
#     malformed frame or expert error.
#  4. tools/droce-pcapcheck: every UDP/4791 frame parses with droce's own
#     parser and carries a valid ICRC (the IPv6 ICRC: traffic class, flow
#     label and hop limit masked); Wireshark never checks the ICRC.
#
# Phase 2, both families on the interfaces (10.78.N.1/24, .2/24 added):
#  5. with FI_DROCE_IP_VERSION=6 on the server (which has no node to tell
#     the family) and the client given the server's IPv6 address,
#     fi_pingpong -6 runs over IPv6; with nothing set and IPv4 addresses,
#     fi_pingpong runs over IPv4 (the default where an interface has both
#     is unchanged); tshark finds RoCEv2 frames over IPv6 between the IPv6
#     addresses and over IPv4 between the IPv4 ones, nothing else.
#
# Phase 3, addresses the kernel does not hold (FI_DROCE_DEVICE names the
# veth end, FI_DROCE_ADDR fd42:X::11 and ::12): droce-xfer (send, write,
# read) passes; while droce runs the interface has joined its
# solicited-node group (ip -6 maddr: ff02::1:ff00:11), so the NIC would
# pass the solicitations net_af_packet cannot ask for (no all-multicast
# mode); only droce can answer them (the kernel has no such address), and
# the capture holds its advertisements for ::11 and ::12 and RoCEv2 frames
# between those two addresses alone.
#
# Capture: net_af_packet's sends bypass the packet taps of their own
# namespace (see netns-pingpong.sh), so each side captures "inbound" and
# mergecap joins the two.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, or no ip netns / fi_pingpong /
# tshark), 99 hard error.  Bounded by timeouts; on failure the merged
# captures are kept as $top_builddir/netns-ipv6-phase{1,2,3}.pcapng.

set -u

. "$(dirname "$0")/netns-lib.sh"
need_mergecap
# no fi_pingpong run starts after this (the phases take about a minute)
budget=${DROCE_NETNS_BUDGET:-300}
built "$XFER"
NSA=dr6$$a
NSB=dr6$$b
NSC=dr6$$c
VA=d6a$$
VB=d6b$$
net6=fd42:$(printf %x $(($$ % 65000 + 1)))
IPA=$net6::1
IPB=$net6::2
net4=10.78.$(($$ % 200 + 20))
IP4A=$net4.1
IP4B=$net4.2
ns_frame netns-ipv6 "$NSA" "$NSB" "$NSC"
for ph in 1 2 3; do
	keep_on_fail phase$ph.pcapng netns-ipv6-phase$ph.pcapng
done

# ---- topology -----------------------------------------------------------------

ip -n "$NSA" link add "$VA" type veth peer name "$VB" netns "$NSB" ||
	hard "cannot create veth pair $VA/$VB"
for e in "$NSA $VA $IPA" "$NSB $VB $IPB"; do
	set -- $e
	# setup_ns turned IPv6 off by default; on for this interface alone,
	# without a link-local address, DAD or router solicitations
	ip netns exec "$1" sysctl -qw net.ipv6.conf."$2".accept_dad=0 \
		net.ipv6.conf."$2".router_solicitations=0 net.ipv6.conf."$2".accept_ra=0 \
		net.ipv6.conf."$2".addr_gen_mode=1 net.ipv6.conf."$2".disable_ipv6=0 ||
		hard "cannot enable IPv6 on $2"
	ip -n "$1" link set "$2" mtu 1500 up
	ip -n "$1" addr add "$3/64" dev "$2" nodad || hard "cannot add $3 to $2"
done
veth_wait_up "$NSA" "$VA" "$NSB" "$VB"
echo "topology: $NSA/$VA $IPA <-> $NSB/$VB $IPB, MTU 1500, IPv6 only"
echo "fi_pingpong: $FI_PINGPONG; tshark: $("$TSHARK" --version 2>/dev/null | head -n 1)"

capture_start() { # phase
	cap_start "$NSA" "$VA" "$tmp/${1}a.pcapng" -f inbound -B 128
	cap_start "$NSB" "$VB" "$tmp/${1}b.pcapng" -f inbound -B 128
	cap_wait "$tmp/${1}a.pcapng" "$tmp/${1}b.pcapng"
}

capture_stop() { # phase -> $tmp/phase.pcapng
	cap_stop
	cap_merge "$tmp/$1.pcapng" "$tmp/${1}a.pcapng" "$tmp/${1}b.pcapng"
}

port=47650
pp_runs=0

# tshark fields of a merged capture, tab separated:
# protocols, ipv6.src, ipv6.dst, ip.src, ip.dst, udp.dstport, opcode,
# CM attribute, icmpv6.type, icmpv6.code, icmpv6.nd.ns.target_address /
# icmpv6.nd.na.target_address
# The RPC-over-RDMA heuristic off (see netns-pingpong.sh).  UDP checksum 0
# over IPv6: RoCEv2 sends it as rdma_rxe does (tests/golden/rxe-ipv6-rping:
# every frame 0; RFC 6935/6936 allow it for tunnels, Linux's rxe socket
# accepts it, the ICRC covers the datagram); tshark calls each such frame
# an "Illegal checksum value (0)" error, rxe's own included, unless told
# not to: udp.ignore_ipv6_zero_checksum.
heur="--disable-heuristic rpcrdma_infiniband -o udp.ignore_ipv6_zero_checksum:TRUE"
fields() { # pcapng out
	tshark_r "$1" -T fields -E separator=/t -E occurrence=f \
		-e frame.protocols -e ipv6.src -e ipv6.dst -e ip.src -e ip.dst -e udp.dstport \
		-e infiniband.bth.opcode -e infiniband.mad.attributeid -e icmpv6.type \
		-e icmpv6.code -e icmpv6.nd.ns.target_address -e icmpv6.nd.na.target_address \
		>"$2" 2>"$tmp/tshark.err" || {
		echo "FAIL: tshark could not read $1:"
		cat "$tmp/tshark.err"
		fail=1
	}
}

# as tshark prints them: fd42:X::1 is already the canonical form (RFC
# 5952: X has no leading zero and is not 0)
A6=$IPA
B6=$IPB

# ---- phase 0: tentative and link-local addresses are not taken --------------

ip -n "$NSC" link add c6a$$ type veth peer name c6b$$ || hard "cannot create veth c6a$$"
ip netns exec "$NSC" sysctl -qw net.ipv6.conf.c6a$$.accept_dad=1 \
	net.ipv6.conf.c6a$$.addr_gen_mode=0 net.ipv6.conf.c6a$$.router_solicitations=0 \
	net.ipv6.conf.c6a$$.disable_ipv6=0 || hard "cannot enable IPv6 on c6a$$"
ip -n "$NSC" addr add fd43::1/64 dev c6a$$ || hard "cannot add fd43::1"
ip -n "$NSC" link set c6a$$ up # its peer stays down: no carrier, DAD never ends
sleep 0.5
echo "phase 0: c6a$$: $(ip -n "$NSC" -6 -o addr show dev c6a$$ | awk '{print $4, $NF}' | tr '\n' ' ')"
if ! ip -n "$NSC" -6 addr show dev c6a$$ | grep -q 'fd43::1/64 scope global tentative'; then
	echo "FAIL: phase 0: fd43::1 is not tentative"
	fail=1
fi
if ip netns exec "$NSC" timeout -k 5 20 fi_info -p droce -t FI_EP_MSG >"$tmp/fi0.out" 2>&1; then
	echo "FAIL: phase 0: fi_info -p droce took a tentative or link-local address:"
	cat "$tmp/fi0.out"
	fail=1
else
	echo "ok: phase 0: no configuration, only a tentative address: fi_info -p droce finds nothing"
fi
if ip netns exec "$NSC" env FI_DROCE_ADDR=fd43::1/64 timeout -k 5 20 fi_info -p droce \
	-t FI_EP_MSG >"$tmp/fi0b.out" 2>&1 && grep -q "domain: c6a$$" "$tmp/fi0b.out" &&
	ip netns exec "$NSC" env FI_DROCE_ADDR=fd43::1/64 timeout -k 5 20 fi_info -p droce \
		-t FI_EP_MSG -v >>"$tmp/fi0b.out" 2>&1 &&
	grep -q 'addr_format: FI_SOCKADDR_IN6' "$tmp/fi0b.out"; then
	echo "ok: phase 0: FI_DROCE_ADDR=fd43::1/64 is taken as asked (FI_SOCKADDR_IN6 on c6a$$)"
else
	echo "FAIL: phase 0: FI_DROCE_ADDR=fd43::1/64 not taken:"
	tail -n 20 "$tmp/fi0b.out"
	fail=1
fi
ip -n "$NSC" link set c6b$$ up
i=0
while ip -n "$NSC" -6 addr show dev c6a$$ | grep -q tentative; do
	i=$((i + 1))
	[ $i -le 100 ] || break
	sleep 0.1
done
echo "phase 0: carrier up: $(ip -n "$NSC" -6 -o addr show dev c6a$$ | awk '{print $4, $NF}' | tr '\n' ' ')"
if ip netns exec "$NSC" timeout -k 5 20 fi_info -p droce -t FI_EP_MSG -v >"$tmp/fi0c.out" 2>&1 &&
	grep -q 'fi_sockaddr_in6://\[fd43::1\]' "$tmp/fi0c.out" &&
	! grep -q 'fi_sockaddr_in6://\[fe80' "$tmp/fi0c.out" &&
	ip -n "$NSC" -6 addr show dev c6a$$ | grep -q 'inet6 fe80'; then
	echo "ok: phase 0: DAD done: fi_info -p droce takes fd43::1 by itself, not the link-local address"
else
	echo "FAIL: phase 0: after DAD, fi_info -p droce does not take fd43::1 alone:"
	grep -i 'sockaddr\|domain' "$tmp/fi0c.out" | head
	ip -n "$NSC" -6 addr show dev c6a$$
	fail=1
fi

# ---- phase 1: IPv6 only, zero configuration -----------------------------------

capture_start phase1
for size in 1 64 1024 4096 65536 1048576; do
	case $size in 1048576) it=10 ;; 65536) it=50 ;; *) it=200 ;; esac
	run_pp "IPv6: server A, client B" "$NSA" "$NSB" "$IPA" $size $it 40 -6 -c
done
run_pp "IPv6: server B, client A" "$NSB" "$NSA" "$IPB" 4096 200 40 -6 -c

# FI_EP_RDM through ofi_rxm over droce's IPv6 connections
pp_prov="droce;ofi_rxm" pp_ep=rdm
run_pp "IPv6, -e rdm over droce;ofi_rxm" "$NSA" "$NSB" "$IPA" 4096 100 40 -6 -c
pp_prov="" pp_ep=""

port=$((port + 1))
pp_runs=$((pp_runs + 1))
# 9 operations (cm_data once, the atomics at 8 B) at these sizes
xfer_start "$NSA" 90 xfer -w 30 -t 20 &&
	xfer_end "$NSB" 90 xfer 'droce-xfer: 45 passed, 0 failed, 0 skipped' \
		"droce-xfer over IPv6, every operation, data verified" -s "$IPA" -t 20 \
		-S 0,1,7,1023,1025,4096,65536,1048576 -I 3
capture_stop phase1

fields "$tmp/phase1.pcapng" "$tmp/f1.txt"
# shellcheck disable=SC2046
set -- $(awk -F'\t' -v a="$A6" -v b="$B6" '
	{ n++ }
	$1 ~ /:arp(:|$)/ { arp++ }
	$1 ~ /:ip(:|$)/ { ip4++ }
	$9 == "1" { unreach++ }
	$9 == "135" && ($11 == a || $11 == b) { ns++ }
	$9 == "136" && ($12 == a || $12 == b) { na++ }
	$1 ~ /:icmpv6(:|$)/ || $1 !~ /:infiniband(:|$)/ { next }
	{ roce++ }
	!(($2 == a && $3 == b) || ($2 == b && $3 == a)) { badaddr++ }
	$6 != "4791" { badport++ }
	$8 == "0x0010" { req++ }
	$8 == "0x0013" { rep++ }
	$8 == "0x0014" { rtu++ }
	$8 == "0x0015" { dreq++ }
	{ op[$7]++ }
	END {
		print n+0, arp+0, ip4+0, unreach+0, ns+0, na+0, roce+0, badaddr+0, badport+0,
			req+0, rep+0, rtu+0, dreq+0, op["0"]+0, op["1"]+0, op["2"]+0, op["4"]+0,
			op["6"]+0, op["10"]+0, op["12"]+0, op["16"]+0, op["13"]+0, op["15"]+0,
			op["19"]+0, op["20"]+0, op["18"]+0, op["17"]+0, op["100"]+0
	}' "$tmp/f1.txt")
echo "phase 1: $1 frames, $7 RoCEv2 over IPv6 ($8 not between $A6 and $B6," \
	"$9 not to UDP 4791), NS $5, NA $6, ARP $2, IPv4 $3, ICMPv6 unreachable $4"
echo "phase 1: CM REQ ${10} REP ${11} RTU ${12} DREQ ${13} ($pp_runs connections);" \
	"SEND F/M/L/O ${14}/${15}/${16}/${17}, WRITE F/O ${18}/${19}, READ REQ ${20}" \
	"RSP O/F/L ${21}/${22}/${23}, CSWAP ${24} FADD ${25} ATOMIC ACK ${26}, ACK ${27}, UD ${28}"
need "RoCEv2 frames over IPv6" "$7" 1000
none "RoCEv2 frames not between the two IPv6 addresses" "$8"
none "RoCEv2 frames not to UDP 4791" "$9"
need "neighbour solicitations for the two addresses" "$5" 1
need "neighbour advertisements for the two addresses" "$6" 1
none ARP "$2"
none "IPv4 frames" "$3"
none "ICMPv6 destination unreachable" "$4"
need ConnectRequest "${10}" "$pp_runs"
need ConnectReply "${11}" "$pp_runs"
need ReadyToUse "${12}" "$pp_runs"
need DisconnectRequest "${13}" "$pp_runs"
need "SEND FIRST" "${14}" 1
need "SEND MIDDLE" "${15}" 1
need "SEND LAST" "${16}" 1
need "SEND ONLY" "${17}" 1
need "RDMA WRITE FIRST" "${18}" 1
need "RDMA WRITE ONLY" "${19}" 1
need "RDMA READ REQUEST" "${20}" 1
need "RDMA READ RESPONSE ONLY" "${21}" 1
need "RDMA READ RESPONSE FIRST" "${22}" 1
need "RDMA READ RESPONSE LAST" "${23}" 1
need "COMPARE SWAP" "${24}" 1
need "FETCH ADD" "${25}" 1
need "ATOMIC ACKNOWLEDGE" "${26}" 1
need ACKNOWLEDGE "${27}" 1
no_errors "$tmp/phase1.pcapng"
pcapcheck pcapcheck1 60 \
	--require "CM_REQ:$pp_runs,CM_REP:$pp_runs,CM_RTU:$pp_runs" \
	--require "RC_SEND_ONLY,RC_SEND_FIRST,RC_RDMA_WRITE_FIRST,RC_RDMA_READ_REQUEST" \
	--require "RC_COMPARE_SWAP,RC_FETCH_ADD,RC_ATOMIC_ACKNOWLEDGE,ACK" --forbid ARP \
	--min-roce 1000 -v "$tmp/phase1.pcapng"

# ---- phase 2: both families on the interfaces ------------------------------------

ip -n "$NSA" addr add "$IP4A/24" dev "$VA"
ip -n "$NSB" addr add "$IP4B/24" dev "$VB"
echo "phase 2: $IP4A/24 and $IP4B/24 added: both families on each interface"
pp_runs=0
capture_start phase2
pp_env=FI_DROCE_IP_VERSION=6
run_pp "FI_DROCE_IP_VERSION=6 server, IPv6 client" "$NSA" "$NSB" "$IPA" 4096 100 40 -6 -c
pp_env=""
run_pp "defaults, IPv4" "$NSA" "$NSB" "$IP4A" 4096 100 40 -c
capture_stop phase2
fields "$tmp/phase2.pcapng" "$tmp/f2.txt"
# shellcheck disable=SC2046
set -- $(awk -F'\t' -v a="$A6" -v b="$B6" -v a4="$IP4A" -v b4="$IP4B" '
	$1 ~ /:icmpv6(:|$)/ || $1 ~ /:icmp(:|$)/ || $1 !~ /:infiniband(:|$)/ { next }
	$2 != "" && (($2 == a && $3 == b) || ($2 == b && $3 == a)) { v6++; next }
	$4 != "" && (($4 == a4 && $5 == b4) || ($4 == b4 && $5 == a4)) { v4++; next }
	{ other++ }
	END { print v6+0, v4+0, other+0 }' "$tmp/f2.txt")
echo "phase 2: RoCEv2 frames over IPv6 $1, over IPv4 $2, other $3"
need "RoCEv2 frames over IPv6 (FI_DROCE_IP_VERSION=6)" "$1" 200
need "RoCEv2 frames over IPv4 (the default)" "$2" 200
none "RoCEv2 frames between other addresses" "$3"
no_errors "$tmp/phase2.pcapng"
pcapcheck pcapcheck2 40 --require "CM_REQ:2,CM_REP:2" --min-roce 400 "$tmp/phase2.pcapng"

# ---- phase 3: addresses only droce holds -------------------------------------------

C6A=$net6::11
C6B=$net6::12
port=$((port + 1))
capture_start phase3
xfer_env="FI_DROCE_DEVICE=net_af_packet_p3,iface=$VA FI_DROCE_ADDR=$C6A/64"
if xfer_start "$NSA" 60 xfer3 -w 30 -t 20; then
	if ip -n "$NSA" -6 maddr show dev "$VA" | grep -q 'ff02::1:ff00:11'; then
		echo "ok: phase 3: $VA joined ff02::1:ff00:11 (the solicited-node group of $C6A)"
	else
		bad "phase 3: $VA has not joined ff02::1:ff00:11:"
		ip -n "$NSA" -6 maddr show dev "$VA"
	fi
	# the control connection to A's kernel address; the fabric address
	# (::11) comes over it from the server
	xfer_env="FI_DROCE_DEVICE=net_af_packet_p3,iface=$VB FI_DROCE_ADDR=$C6B/64"
	xfer_end "$NSB" 60 xfer3 'droce-xfer: 7 passed, 0 failed, 0 skipped' \
		"phase 3: droce-xfer between $C6A and $C6B" -s "$IPA" -t 20 -o send,write,read \
		-S 4096,65536 -I 2
fi
xfer_env=""
capture_stop phase3
fields "$tmp/phase3.pcapng" "$tmp/f3.txt"
# shellcheck disable=SC2046
set -- $(awk -F'\t' -v a="$C6A" -v b="$C6B" '
	$9 == "136" && $12 == a { na_a++ }
	$9 == "136" && $12 == b { na_b++ }
	$1 ~ /:icmpv6(:|$)/ || $1 !~ /:infiniband(:|$)/ { next }
	($2 == a && $3 == b) || ($2 == b && $3 == a) { roce++; next }
	{ other++ }
	END { print na_a+0, na_b+0, roce+0, other+0 }' "$tmp/f3.txt")
echo "phase 3: NA for $C6A $1, for $C6B $2; RoCEv2 between them $3, other $4"
need "advertisements for $C6A (droce's: the kernel has no such address)" "$1" 1
need "advertisements for $C6B" "$2" 1
need "RoCEv2 frames between $C6A and $C6B" "$3" 50
none "RoCEv2 frames between other addresses" "$4"
no_errors "$tmp/phase3.pcapng"

if [ "$fail" -ne 0 ]; then
	echo "FAIL: netns-ipv6"
	exit 1
fi
echo "PASS: netns-ipv6 ($(elapsed) s)"
exit 0
