#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-gso.sh - droce's own packet socket (FI_DROCE_KERNEL_PMD=packet,
# packet:IF) sending UDP GSO super-frames (FI_DROCE_GSO, on by default)
# between two namespaces (issue 13, point 3).
#
#   netns drgs<pid>a: dga<pid> 10.90.N.1/24 ==veth== dgb<pid> 10.90.N.2/24 :netns drgs<pid>b
#   (a second veth, 10.91.N.x, carries droce-xfer's TCP control connection)
#
# Run 1, a veth that carries super-frames whole: tools/droce-xfer, every
# operation at 0 B .. 4 MiB, data checked on both sides; tshark on A's end
# of the veth, droce's own capture (FI_DROCE_PCAP) on A.  Asserts:
#   - super-frames (frames longer than MTU + 14) in both directions: B's
#     WRITEs and SENDs, A's READ responses; among B's, runs of 62 WRITE
#     packets, a whole IP packet's worth (B asks for an ACK every 62);
#   - the CM's ConnectRequest, ConnectReply and ReadyToUse in that capture
#     (a packet: port sends through the qdisc layer: tcpdump sees both
#     directions);
#   - droce's capture holds the packets one by one (none longer than MTU +
#     14) and droce-pcapcheck finds every ICRC valid and no PSN gap, no
#     sequence NAK, no duplicate (a resend after a timeout is allowed: a
#     process kept off its CPU by a busy make check makes them, see
#     tests/lossless.sh);
#   - each side's log counts super-frames sent and received.
#   - the CM's REQ and REP each carry droce's ECE (IBA 12.6.5): vendor ID
#     0x026472 (REQ bytes 5-7, REP bytes 15, 19 and 23 of the MAD body) and
#     the options "takes super-frames whole" (0x1) and "ACKs unasked" (0x2,
#     FI_DROCE_LAZY_ACK: tests/netns-lazyack.sh) in the attribute modifier;
# Run 2, the kernel cuts them (tx-udp-segmentation off on both veth ends,
# as a NIC without the offload, or a bridge port, would have it): the
# capture on the veth holds only frames of at most MTU + 14 bytes, and
# droce-pcapcheck over that wire capture finds every piece a valid RoCEv2
# packet (ICRC, PSNs in order, nothing resent); the client's log counts
# super-frames sent, its server's counts none received whole.
# Run 3, a peer that does not take them: the server on DPDK's net_af_packet
# (FI_DROCE_KERNEL_PMD=af_packet), whose REP's ECE offers ACKs unasked
# (0x2) but not super-frames (0x1); the client,
# still packet:, sends it none (its log: 0 sent), and every operation
# passes.
#
# Run 4, hostile super-frames (tests/gso-inject) at a packet: server before
# its client connects: one cut at gso_size 8, below a BTH and an ICRC, is
# refused whole (rx_gso_bad, the server's closing line says 1); one of 10
# pieces of noise is cut into 10 frames of 1,042 bytes, each in droce's
# capture marked dropped; the transfers after them pass.
#
# Run 5, a receiver that does not read its ring: the server stopped
# (SIGSTOP, every thread), 1,000 single frames sent to it (tests/gso-inject
# flood), then let go: its ring holds 512 (port_pk.c PK_RX_FRAMES), which
# droce's capture shows; the kernel dropped the other 488, and the port
# counts exactly those (rx_ring_drops, from PACKET_STATISTICS, in its
# closing line); the transfers after them pass.
#
# Run 6, a peer that stops answering: the client (FI_DROCE_RETRY_CNT=1,
# FI_DROCE_TIMEOUT=10: 4 ms) connects, holds at its first operation (-G)
# while the server is stopped (SIGSTOP), then sends into silence: its
# operation fails ("transport retry counter exceeded", exit 1) and droce
# names the cause in one warning: the QP, its retries, the peer's QPN and
# address, that the peer had never answered on it; then (info) that its
# own port dropped nothing, sending or receiving.
#
# Run 7, ring slots sized by the path MTU: both veth ends at MTU 9000,
# where a ring slot holds the longest RoCE frame at path MTU 4096 (4,352
# bytes with the kernel's headers), not a jumbo frame: 3 frames of 8,042
# bytes of noise to the server's port (tests/gso-inject jumbo) are each
# read from the socket's queue (its closing line: 3 longer than a ring slot
# of 4352 bytes, rx_long) and shown dropped in droce's capture; every
# operation at 1 B .. 1 MiB passes, 4 KiB messages as single frames of up
# to 4,174 bytes (a WRITE with immediate data) among them, and neither side
# counts any other frame longer than a slot (client 0, server 3).
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / tshark / ethtool, a
# kernel before 6.2 that takes no UDP GSO from a packet socket),
# 99 hard error.

set -u

. "$(dirname "$0")/netns-lib.sh"
INJECT=$top_builddir/tests/gso-inject
built "$XFER" "$PCAPCHECK" "$INJECT"
command -v ethtool >/dev/null 2>&1 || skip "ethtool not found (Debian package ethtool)"
ns_pair_names drgs dg 10.90
CA=cga$$ CB=cgb$$ CIPA=10.91.${net##*.}.1 CIPB=10.91.${net##*.}.2
ns_pair_up netns-gso "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
veth_pair "$NSA" "$CA" "$CIPA" "$NSB" "$CB" "$CIPB"
BIG=1514 # MTU 1500 + the Ethernet header

# xfer N SERVER-PMD: one droce-xfer session, server in A on that
# FI_DROCE_KERNEL_PMD (droce's capture $tmp/dN.pcapng), client in B on
# packet:, every droce-xfer option after it; both must pass everything
xfer() {
	x_n=$1 x_pmd=$2
	shift 2
	port=$((47760 + x_n))
	xfer_env="FI_DROCE_KERNEL_PMD=packet FI_LOG_LEVEL=info"
	ip netns exec "$NSA" env $xfer_env FI_DROCE_KERNEL_PMD="$x_pmd" \
		FI_DROCE_PCAP="$tmp/d$x_n.pcapng" timeout -k 5 90 \
		"$XFER" -p droce -P "$port" -a "$IPA" -w 30 -t 20 >"$tmp/r$x_n.srv" 2>&1 &
	xs_pid=$!
	listening "$xs_pid" "$NSA" "$port" "$tmp/r$x_n.srv" "the droce-xfer server ($x_n)" || return 1
	# run 4: hostile super-frames to the server's port before the client
	if [ "$x_n" = 4 ]; then
		ip netns exec "$NSB" "$INJECT" "$VB" "$IPB" "$IPA" \
			"$(ip netns exec "$NSA" cat "/sys/class/net/$VA/address")" >"$tmp/inject.log" 2>&1
		x_inj=$?
		[ $x_inj -eq 77 ] && skip "$(cat "$tmp/inject.log")"
		[ $x_inj -eq 0 ] || { bad "gso-inject: $(cat "$tmp/inject.log")"; return 1; }
	fi
	# run 7: jumbo frames of noise, longer than a ring slot
	if [ "$x_n" = 7 ]; then
		ip netns exec "$NSB" "$INJECT" "$VB" "$IPB" "$IPA" \
			"$(ip netns exec "$NSA" cat "/sys/class/net/$VA/address")" jumbo 3 \
			>"$tmp/jumbo.log" 2>&1 || { bad "gso-inject jumbo: $(cat "$tmp/jumbo.log")"; return 1; }
	fi
	# run 5: more frames than its ring holds while the server reads none
	if [ "$x_n" = 5 ]; then
		x_pid=$(pgrep -P "$xs_pid" -x droce-xfer) || hard "no droce-xfer under $xs_pid"
		kill -STOP "$x_pid"
		stopped "$x_pid" || hard "droce-xfer $x_pid did not stop"
		ip netns exec "$NSB" "$INJECT" "$VB" "$IPB" "$IPA" \
			"$(ip netns exec "$NSA" cat "/sys/class/net/$VA/address")" flood 1000 \
			>"$tmp/flood.log" 2>&1
		x_inj=$?
		kill -CONT "$x_pid"
		[ $x_inj -eq 0 ] || { bad "gso-inject flood: $(cat "$tmp/flood.log")"; return 1; }
	fi
	ip netns exec "$NSB" env $xfer_env timeout -k 5 90 "$XFER" -p droce -P "$port" \
		-s "$CIPA" -t 20 "$@" >"$tmp/r$x_n.cli" 2>&1
	x_crc=$?
	wait "$xs_pid"
	x_src=$?
	xfer_env=""
	# a kernel before 6.2 takes no UDP GSO from a packet socket: droce
	# says so and sends one frame per packet (fi_droce(7))
	if grep -q "refuses UDP GSO super-frames" "$tmp/r$x_n.srv" "$tmp/r$x_n.cli"; then
		skip "this kernel ($(uname -r)) takes no UDP GSO from a packet socket"
	fi
	if [ $x_crc -ne 0 ] || [ $x_src -ne 0 ] ||
		! grep -q '^droce-xfer: [0-9]* passed, 0 failed, 0 skipped$' "$tmp/r$x_n.cli"; then
		bad "run $x_n: droce-xfer client exit $x_crc, server exit $x_src"
		tail -n 20 "$tmp/r$x_n.cli" "$tmp/r$x_n.srv"
		return 1
	fi
	echo "ok: run $x_n: $(grep '^droce-xfer: [0-9]* passed' "$tmp/r$x_n.cli")"
}

# stopped PID: every thread of PID stopped (state T), within 5 s
stopped() {
	for _ in $(seq 50); do
		grep -q '^State:[[:space:]]*[^T[:space:]]' /proc/"$1"/task/*/status 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

count() { # file filter: frames tshark's display filter selects
	tshark_r "$1" -Y "$2" -T fields -e frame.number 2>/dev/null | wc -l
}

# gso LOG: "sent received refused" super-frames from the port's closing line
gso() {
	sed -n 's/.*UDP GSO: \([0-9]*\) super-frames sent carrying [0-9]* packets, \([0-9]*\) received.*; \([0-9]*\) refused.*/\1 \2 \3/p' "$1" | tail -n 1
}
# ring_drops LOG: frames the kernel dropped for want of a free ring slot
# (the same line)
ring_drops() {
	sed -n 's/.*UDP GSO: .*, \([0-9]*\) dropped by the kernel for want of a free ring slot.*/\1/p' "$1" | tail -n 1
}
# copied LOG: super-frames copied out of one buffer for want of an idle
# staging buffer, their pieces not handed on in place (the same line)
copied() {
	sed -n 's/.*UDP GSO: .*; \([0-9]*\) copied for want of an idle staging buffer;.*/\1/p' "$1" | tail -n 1
}
# vlan LOG: frames the port dropped for their VLAN tag (the same line)
vlan() {
	sed -n 's/.*UDP GSO: .*; \([0-9]*\) tagged with a VLAN ID, dropped.*/\1/p' "$1" | tail -n 1
}

# long LOG: "rx_long slot-bytes" from the port's closing line
long() {
	sed -n 's/.*; \([0-9]*\) longer than a ring slot (\([0-9]*\) bytes.*(rx_long).*/\1 \2/p' "$1" | tail -n 1
}

wire_fields() { # capture: its RoCE frames as "src dst len opcode attributeid"
	tshark_r "$1" -Y 'udp.dstport == 4791' -T fields -E separator=/t -E occurrence=f \
		-e ip.src -e ip.dst -e frame.len -e infiniband.bth.opcode \
		-e infiniband.mad.attributeid >"$2" 2>/dev/null || hard "tshark cannot read $1"
}

frames() { # fields src dst min-len [opcode [attr]]: how many
	awk -F'\t' -v s="$2" -v d="$3" -v l="$4" -v o="${5:-}" -v a="${6:-}" \
		'$1 == s && $2 == d && $3 >= l && (o == "" || $4 == o) && (a == "" || $5 == a) { n++ }
		END { print n + 0 }' "$1"
}

# ---- run 1: super-frames cross the veth whole ------------------------------------
cap_start "$NSA" "$VA" "$tmp/w1.pcapng" -B 64
cap_wait "$tmp/w1.pcapng"
xfer 1 packet -o all -S 0,1,1024,1025,4096,65536,1048576,4194304 -I 2
cap_stop
heur_check "$tmp/w1.pcapng"
wire_fields "$tmp/w1.pcapng" "$tmp/w1.txt"
expect_count "super-frames B->A on the veth (WRITE, SEND)" "$(frames "$tmp/w1.txt" "$IPB" "$IPA" $((BIG + 1)))" ge 1
expect_count "super-frames A->B on the veth (READ responses)" "$(frames "$tmp/w1.txt" "$IPA" "$IPB" $((BIG + 1)))" ge 1
# whole runs: 62 WRITE packets of 1024 B (BTH, payload, ICRC: 1040 B of
# UDP payload each) fill the 64 KiB of one IP packet; B's QP asks for an
# ACK every 62 packets, so an ACK releases one super-frame, not 62 + 2
expect_count "super-frames B->A of 62 packets" "$(awk -F'\t' -v s="$IPB" -v d="$IPA" \
	'$1 == s && $2 == d && $3 == 42 + 62 * 1040 && $4 == 7 { n++ } END { print n + 0 }' "$tmp/w1.txt")" ge 1
# CM MADs ride UD SEND ONLY (opcode 100) to QP 1
expect_count "ConnectRequest B->A" "$(frames "$tmp/w1.txt" "$IPB" "$IPA" 0 100 0x0010)" eq 1
expect_count "ConnectReply A->B" "$(frames "$tmp/w1.txt" "$IPA" "$IPB" 0 100 0x0013)" eq 1
expect_count "ReadyToUse B->A" "$(frames "$tmp/w1.txt" "$IPB" "$IPA" 0 100 0x0014)" eq 1
# the REQ's MAD body starts at byte 86 of its frame (Ethernet 14, IPv4 20,
# UDP 8, BTH 12, DETH 8, MAD header 24)
ece="infiniband.mad.attributemodifier == 0x3"
expect_count "ECE in the REQ B->A" "$(count "$tmp/w1.pcapng" "ip.src == $IPB && infiniband.mad.attributeid == 0x0010 && $ece && frame[91:3] == 02:64:72")" eq 1
expect_count "ECE in the REP A->B" "$(count "$tmp/w1.pcapng" "ip.src == $IPA && infiniband.mad.attributeid == 0x0013 && $ece && frame[101] == 02 && frame[105] == 64 && frame[109] == 72")" eq 1
expect_count "frames longer than $BIG bytes in droce's own capture" \
	"$(count "$tmp/d1.pcapng" "frame.len > $BIG")" eq 0
# short messages in packets of one size (docs/protocol.md A.7): each 4 KiB
# WRITE (three) as four WRITE ONLYs, each 4 KiB READ asked for in two
# requests (six), answered FIRST and LAST
pcapcheck d1 20 --min-roce 1000 --require RC_RDMA_READ_RESPONSE_MIDDLE,RC_RDMA_WRITE_MIDDLE,RC_SEND_MIDDLE \
	--require RC_RDMA_WRITE_ONLY:12,RC_RDMA_READ_RESPONSE_FIRST:6,RC_RDMA_READ_RESPONSE_LAST:6 \
	--forbid PSN_GAP,NAK_PSN_SEQ,DUPLICATE "$tmp/d1.pcapng"
for side in srv cli; do
	set -- $(gso "$tmp/r1.$side")
	expect_count "$side: super-frames sent" "${1:-0}" ge 1
	expect_count "$side: super-frames received" "${2:-0}" ge 1
	expect_count "$side: super-frames copied, no staging buffer idle" "$(copied "$tmp/r1.$side")" eq 0
done

# ---- run 2: the kernel cuts them before the veth ----------------------------------
ip netns exec "$NSA" ethtool -K "$VA" tx-udp-segmentation off >/dev/null &&
	ip netns exec "$NSB" ethtool -K "$VB" tx-udp-segmentation off >/dev/null ||
	hard "ethtool -K tx-udp-segmentation off refused"
cap_start "$NSA" "$VA" "$tmp/w2.pcapng" -B 64
cap_wait "$tmp/w2.pcapng"
xfer 2 packet -o write,writedata,send,read -S 4096,65536,1048576 -I 3
cap_stop
expect_count "frames longer than $BIG bytes on the veth" "$(count "$tmp/w2.pcapng" "frame.len > $BIG")" eq 0
pcapcheck w2 20 --min-roce 1000 --require RC_RDMA_READ_RESPONSE_MIDDLE,RC_RDMA_WRITE_MIDDLE,RC_SEND_MIDDLE \
	--forbid PSN_GAP,NAK_PSN_SEQ,DUPLICATE "$tmp/w2.pcapng"
no_errors "$tmp/w2.pcapng"
set -- $(gso "$tmp/r2.cli")
expect_count "client: super-frames sent (cut by the kernel)" "${1:-0}" ge 1
set -- $(gso "$tmp/r2.srv")
expect_count "server: super-frames sent (cut by the kernel)" "${1:-0}" ge 1
expect_count "server: super-frames received whole" "${2:-0}" eq 0
keep_on_fail w2.pcapng netns-gso-w2.pcapng

# ---- run 3: a server on net_af_packet, which takes none --------------------------
ip netns exec "$NSA" ethtool -K "$VA" tx-udp-segmentation on >/dev/null &&
	ip netns exec "$NSB" ethtool -K "$VB" tx-udp-segmentation on >/dev/null ||
	hard "ethtool -K tx-udp-segmentation on refused"
cap_start "$NSA" "$VA" "$tmp/w3.pcapng" -B 64
cap_wait "$tmp/w3.pcapng"
xfer 3 af_packet -o write,send,read -S 65536,1048576 -I 3
cap_stop
expect_count "frames longer than $BIG bytes on the veth" "$(count "$tmp/w3.pcapng" "frame.len > $BIG")" eq 0
expect_count "REP A->B with ECE 0x2, no super-frames" "$(count "$tmp/w3.pcapng" "ip.src == $IPA && infiniband.mad.attributeid == 0x0013 && infiniband.mad.attributemodifier == 0x2 && frame[101] == 02 && frame[105] == 64 && frame[109] == 72")" eq 1
set -- $(gso "$tmp/r3.cli")
expect_count "client: super-frames sent to a net_af_packet peer" "${1:-1}" eq 0

# ---- run 4: hostile super-frames -------------------------------------------------
# tests/gso-inject, from B's end, before the client connects: one cut at
# gso_size 8 (below a BTH and an ICRC), refused whole; one of 10 pieces of
# noise, cut into 10 frames of 1,042 bytes that the parser drops; one of 4
# RoCE packets, one with a bad ICRC; the same 4 intact as a super-frame of
# VLAN 7 and one alone of VLAN 7, dropped whole as another network's; one
# priority-tagged (VLAN ID 0), the interface's own; 3 such packets and a
# last piece of 10 bytes; a UDP GSO super-frame over IPv6 and a TCP one
# (TSO), refused whole
xfer 4 packet -o write,read -S 4096,1048576 -I 2
set -- $(gso "$tmp/r4.srv")
expect_count "server: hostile super-frames refused (gso_size 8, IPv6, TCP)" "${3:-0}" eq 3
expect_count "server: super-frames received whole (noise, RoCE, then B's)" "${2:-0}" ge 3
expect_count "noise pieces in the server's capture" \
	"$(count "$tmp/d4.pcapng" "ip.src == $IPB && udp.srcport == 49154 && frame.len == 1042")" eq 10
expect_count "of them, marked dropped by droce" \
	"$(count "$tmp/d4.pcapng" "udp.srcport == 49154 && frame.len == 1042 && frame.comment contains \"dropped\"")" eq 10
# RoCE packets whose ICRCs the port checks as it cuts them: the third's
# payload was changed after its ICRC, the others reach the device
expect_count "RoCE pieces in the server's capture" \
	"$(count "$tmp/d4.pcapng" "ip.src == $IPB && udp.srcport == 49155 && frame.len == 1082")" eq 4
expect_count "of them, the changed one dropped for its ICRC" \
	"$(count "$tmp/d4.pcapng" "udp.srcport == 49155 && ip.id == 0x3002 && frame.comment contains \"dropped: bad ICRC\"")" eq 1
expect_count "of them, the others dropped for their QPN, not their ICRC" \
	"$(count "$tmp/d4.pcapng" "udp.srcport == 49155 && ip.id != 0x3002 && frame.comment contains \"unknown_qpn\" && !(frame.comment contains \"ICRC\")")" eq 3
# the kernel shows a tagged frame untagged, its tag aside (tpacket
# TP_STATUS_VLAN_VALID): VLAN 7's are dropped before the cut and the
# capture, the super-frame's read off the socket's queue unread; VLAN 0's
# (a priority tag) taken as untagged
expect_count "server: frames of VLAN 7 dropped (rx_vlan)" "$(vlan "$tmp/r4.srv")" eq 2
expect_count "VLAN 7 frames in the server's capture" \
	"$(count "$tmp/d4.pcapng" "udp.srcport == 49156 || udp.srcport == 49157")" eq 0
expect_count "the priority-tagged frame, dropped for its QPN" \
	"$(count "$tmp/d4.pcapng" "udp.srcport == 49158 && frame.len == 1082 && frame.comment contains \"unknown_qpn\"")" eq 1
# a super-frame whose last piece is too short for a BTH and an ICRC: cut
# all the same, the short piece dropped by the parser, the others not
expect_count "pieces before a short last one, dropped for their QPN" \
	"$(count "$tmp/d4.pcapng" "udp.srcport == 49159 && frame.len == 1082 && frame.comment contains \"unknown_qpn\"")" eq 3
expect_count "the short last piece, dropped by the parser" \
	"$(count "$tmp/d4.pcapng" "udp.srcport == 49159 && frame.len == 52 && frame.comment contains \"no room for BTH and ICRC\"")" eq 1

# ---- run 5: a receiver that reads nothing while 1,000 frames come -------------------
xfer 5 packet -o write,read -S 4096,1048576 -I 2
expect_count "flood frames in the stopped server's ring (its capture)" \
	"$(count "$tmp/d5.pcapng" "ip.src == $IPB && udp.srcport == 49160")" eq 512
expect_count "server: flood frames the kernel dropped, ring full (rx_ring_drops)" \
	"$(ring_drops "$tmp/r5.srv")" eq 488
# a QP's window (128 PSNs) never fills a ring of 512 slots: none dropped
# in runs 1 and 4, whatever they sent
for log in r1.srv r1.cli r4.srv r4.cli; do
	expect_count "$log: frames the kernel dropped, ring full" "$(ring_drops "$tmp/$log")" eq 0
done

# ---- run 6: a peer that stops answering --------------------------------------------
ip netns exec "$NSA" env FI_DROCE_KERNEL_PMD=packet timeout -k 5 60 "$XFER" -p droce -P 47766 \
	-a "$IPA" -w 30 -t 20 >"$tmp/r6.srv" 2>&1 &
s6_pid=$!
listening "$s6_pid" "$NSA" 47766 "$tmp/r6.srv" "the droce-xfer server (6)" || hard "no server (6)"
ip netns exec "$NSB" env FI_DROCE_KERNEL_PMD=packet FI_DROCE_RETRY_CNT=1 FI_DROCE_TIMEOUT=10 \
	FI_LOG_LEVEL=info \
	timeout -k 5 60 "$XFER" -p droce -P 47766 -s "$CIPA" -t 20 -o write -S 4096 -I 1 \
	-G "0:$tmp/gate6" >"$tmp/r6.cli" 2>&1 &
c6_pid=$!
for _ in $(seq 300); do
	[ -e "$tmp/gate6" ] || ! kill -0 "$c6_pid" 2>/dev/null && break
	sleep 0.1
done
[ -e "$tmp/gate6" ] || { tail -n 20 "$tmp/r6.cli"; hard "client (6) never reached its first operation"; }
x_pid=$(pgrep -P "$s6_pid" -x droce-xfer) || hard "no droce-xfer under $s6_pid"
kill -STOP "$x_pid"
stopped "$x_pid" || hard "droce-xfer $x_pid did not stop"
rm -f "$tmp/gate6"
# the operation fails within the QP's 2 timeouts of 4 ms and their
# backoff; then the server goes on, so that the control connection can
# report it (droce-xfer waits for the server at each step)
for _ in $(seq 100); do
	grep -q 'transport retry counter exceeded' "$tmp/r6.cli" && break
	sleep 0.1
done
kill -CONT "$x_pid"
wait "$c6_pid"
c6_rc=$?
wait "$s6_pid"
expect_count "run 6: client exit status (its operation failed)" "$c6_rc" eq 1
expect_count "run 6: the client's warning naming the cause" "$(grep -c \
	"qp 0x[0-9a-f]*: transport retry counter exceeded: QPN 0x[0-9a-f]* at $IPA answered neither a request nor its 1 retries (it never answered; in all 0 frames received from it" \
	"$tmp/r6.cli")" eq 1
expect_count "run 6: the client's port: nothing dropped" "$(grep -c \
	"qp 0x[0-9a-f]*: its port: [0-9]* frames waited for the device, 0 dropped sending, 0 dropped by the kernel receiving (ring full)$" \
	"$tmp/r6.cli")" eq 1
grep 'transport retry counter exceeded\|: its port: ' "$tmp/r6.cli"

# ---- run 7: MTU 9000, ring slots for path MTU 4096 ----------------------------------
ip -n "$NSA" link set "$VA" mtu 9000 && ip -n "$NSB" link set "$VB" mtu 9000 ||
	hard "cannot set MTU 9000 on the veth"
xfer 7 packet -o write,writedata,send,read -S 1,4096,65536,1048576 -I 2
set -- $(long "$tmp/r7.srv")
expect_count "server: ring slot bytes at MTU 9000" "${2:-0}" eq 4352
expect_count "server: frames longer than a slot, read from the queue (rx_long)" "${1:--1}" eq 3
set -- $(long "$tmp/r7.cli")
expect_count "client: ring slot bytes at MTU 9000" "${2:-0}" eq 4352
expect_count "client: frames longer than a slot (rx_long)" "${1:--1}" eq 0
expect_count "jumbo frames in the server's capture, dropped" \
	"$(count "$tmp/d7.pcapng" "ip.src == $IPB && udp.srcport >= 49184 && udp.srcport <= 49186 && frame.len == 8042 && frame.comment contains \"dropped\"")" eq 3
expect_count "4 KiB WRITEs with immediate data as single frames of 4,174 bytes" \
	"$(count "$tmp/d7.pcapng" "ip.src == $IPB && frame.len == 4174 && infiniband.bth.opcode == 11")" ge 1

[ "$fail" -eq 0 ] || exit 1
echo "PASS: netns-gso ($(elapsed) s)"
exit 0
