#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-capture.sh - a capture on ONE end of a veth holds both directions
# of droce's traffic (issue 13, point 1).
#
#   netns drcp<pid>a: dca<pid> 10.78.N.1/24 ==veth== dcb<pid> 10.78.N.2/24 :netns drcp<pid>b
#
# One tshark, on A's end only, no capture filter.  fi_pingpong -p droce -e msg
# (default configuration: droce's packet socket on the namespace's
# interface, but FI_DROCE_GSO=0: a UDP GSO super-frame crosses a veth whole
# and a capture shows it as one frame, its first packet decoded, which
# tests/netns-gso.sh checks), server in A, client in B, 4 KiB messages
# (path MTU 1024: SEND FIRST/MIDDLE/LAST).
#
# Run 1 (defaults, FI_DROCE_QDISC_BYPASS unset = 0): droce sends through the
# qdisc layer, so the kernel's packet taps see A's own transmissions.  Asserts,
# from tshark's fields ip.src, ip.dst, infiniband.bth.opcode and
# infiniband.mad.attributeid:
#   - exactly one CM ConnectRequest (0x0010) and one ReadyToUse (0x0014),
#     both B -> A, and one ConnectReply (0x0013) A -> B;
#   - RC SEND FIRST (0), MIDDLE (1) and LAST (2), at least one of each per
#     message, and RC ACKNOWLEDGE (17) in each direction, A -> B and B -> A.
# Run 2 (FI_DROCE_QDISC_BYPASS=1 in A only, DPDK's own default): the capture
# on A holds B's frames (REQ, RTU, data, ACKs) and none of A's RoCE frames:
# the parameter does what fi_droce(7) says.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / fi_pingpong /
# tshark), 99 hard error.

set -u

. "$(dirname "$0")/netns-lib.sh"
ns_pair_names drcp dc 10.78
ITERS=50
FI_DROCE_GSO=0
export FI_DROCE_GSO
ns_pair_up netns-capture "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"

# run N BYPASS_A: one fi_pingpong session captured on A's end; fields to
# $tmp/fN.txt (src dst opcode attributeid, one line per RoCE frame)
run() {
	n=$1 bypass=$2
	cap_start "$NSA" "$VA" "$tmp/c$n.pcapng" -B 64
	cap_wait "$tmp/c$n.pcapng"
	port=$((47699 + n))
	pp_env=${bypass:+FI_DROCE_QDISC_BYPASS=$bypass}
	run_pp "run $n" "$NSA" "$NSB" "$IPA" 4096 $ITERS 40 -c
	pp_env=""
	cap_stop
	timeout -k 5 60 "$TSHARK" -n -r "$tmp/c$n.pcapng" -Y 'udp.port == 4791' -T fields \
		-E separator=/t -E occurrence=f -e ip.src -e ip.dst -e infiniband.bth.opcode \
		-e infiniband.mad.attributeid >"$tmp/f$n.txt" 2>"$tmp/t$n.err" ||
		{ cat "$tmp/t$n.err"; hard "tshark cannot read its capture"; }
}

# count FILE SRC DST OPCODE [ATTR]: frames SRC -> DST with that BTH opcode
# (and MAD attribute ID)
count() {
	awk -F'\t' -v s="$2" -v d="$3" -v o="$4" -v a="${5:-}" \
		'$1 == s && $2 == d && $3 == o && (a == "" || $4 == a) { n++ } END { print n + 0 }' "$1"
}

# ---- run 1: the defaults -----------------------------------------------------------
run 1 ""
f=$tmp/f1.txt
echo "run 1 (defaults): $(wc -l <"$f") RoCE frames captured on $VA"
# CM MADs ride UD SEND ONLY (opcode 100) to QP 1
expect_count "ConnectRequest B->A" "$(count "$f" "$IPB" "$IPA" 100 0x0010)" eq 1
expect_count "ConnectReply A->B" "$(count "$f" "$IPA" "$IPB" 100 0x0013)" eq 1
expect_count "ReadyToUse B->A" "$(count "$f" "$IPB" "$IPA" 100 0x0014)" eq 1
for dir in "$IPA $IPB A->B" "$IPB $IPA B->A"; do
	set -- $dir
	expect_count "RC SEND FIRST $3" "$(count "$f" "$1" "$2" 0)" ge $ITERS
	expect_count "RC SEND MIDDLE $3" "$(count "$f" "$1" "$2" 1)" ge $((2 * ITERS))
	expect_count "RC SEND LAST $3" "$(count "$f" "$1" "$2" 2)" ge $ITERS
	expect_count "RC ACKNOWLEDGE $3" "$(count "$f" "$1" "$2" 17)" ge 1
done

# ---- run 2: FI_DROCE_QDISC_BYPASS=1 on A ---------------------------------------------
run 2 1
f=$tmp/f2.txt
echo "run 2 (A with FI_DROCE_QDISC_BYPASS=1): $(wc -l <"$f") RoCE frames captured on $VA"
expect_count "RoCE frames A->B (bypassing the taps)" \
	"$(awk -F'\t' -v s="$IPA" '$1 == s { n++ } END { print n + 0 }' "$f")" eq 0
expect_count "ConnectRequest B->A" "$(count "$f" "$IPB" "$IPA" 100 0x0010)" eq 1
expect_count "ReadyToUse B->A" "$(count "$f" "$IPB" "$IPA" 100 0x0014)" eq 1
expect_count "RC SEND MIDDLE B->A" "$(count "$f" "$IPB" "$IPA" 1)" ge $((2 * ITERS))
expect_count "RC ACKNOWLEDGE B->A" "$(count "$f" "$IPB" "$IPA" 17)" ge 1

[ $fail -eq 0 ] || exit 1
echo "PASS: netns-capture"
exit 0
