#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-lazyack.sh - ACKs without AckReq between two droce endpoints
# (FI_DROCE_LAZY_ACK, docs/protocol.md B.2, B.3), as the wire shows them.
#
#   netns drla<pid>a: dlaa<pid> 10.85.N.1/24 ==veth== dlab<pid> 10.85.N.2/24 :netns drla<pid>b
#
# The stock fi_pingpong -p droce -e msg, 8 B messages (sent with fi_inject:
# nothing waits for their completion), server in A, client in B, the
# default configuration (droce's packet socket), one capture on A's end
# (both directions: netns-capture.sh).
#
# Run 1 (defaults): the REQ B->A and the REP A->B each carry droce's ECE,
# vendor ID 0x026472 and options 0x3 (0x1 super-frames taken whole, 0x2 ACKs
# unasked); in each direction at least ITERS RC SEND ONLYs, most of them
# (at least half) with AckReq clear, and fewer RC ACKNOWLEDGEs than SEND
# ONLYs, at least one.
# Run 2 (FI_DROCE_LAZY_ACK=0 in A only): A's REP offers 0x1 alone, so
# neither end counts on the other: every SEND ONLY both ways asks (AckReq
# set), and ACKs cross both ways.
# Both runs: fi_pingpong passes its data check (-c) on both sides, and
# droce-pcapcheck finds every frame valid, no PSN gap, no sequence NAK, no
# duplicate.
# Run 3 (defaults): bench/droce-bench's RDMA write ping-pong, 4 KiB (fi_write
# with a completion: its last packet asks for an ACK), 2,000 round trips.
# The responder's poll that placed a WRITE holds its ACK for the
# application's next poll (src/fi dev_poll), by which time it has seen the
# data and posted its own WRITE: so after a WRITE from one end the other's
# next frame is its WRITE, with the ACK behind it in the same burst, not an
# ACK sent alone first.  Asserted both ways for at least 75 % of the 2,000
# turns (a turn can still go the other way when the progress thread polls
# in between); droce-bench completes with nothing resent.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / fi_pingpong /
# tshark), 99 hard error.

set -u

. "$(dirname "$0")/netns-lib.sh"
ns_pair_names drla dla 10.85
ITERS=2000
ns_pair_up netns-lazyack "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"

# run N LAZY_A: one session captured on A's end; fields to $tmp/fN.txt
# (src dst opcode AckReq attributeid attributemodifier), one line per RoCE
# frame
run() {
	n=$1 lazy=$2
	cap_start "$NSA" "$VA" "$tmp/c$n.pcapng" -B 64
	cap_wait "$tmp/c$n.pcapng"
	port=$((47799 + 10 * n))
	pp_env=${lazy:+FI_DROCE_LAZY_ACK=$lazy}
	run_pp "run $n" "$NSA" "$NSB" "$IPA" 8 $ITERS 60 -c
	pp_env=""
	cap_stop
	keep_on_fail "c$n.pcapng" "netns-lazyack-c$n.pcapng"
	tshark_r "$tmp/c$n.pcapng" -Y 'udp.port == 4791' -T fields -E separator=/t \
		-E occurrence=f -e ip.src -e ip.dst -e infiniband.bth.opcode -e infiniband.bth.a \
		-e infiniband.mad.attributeid -e infiniband.mad.attributemodifier \
		>"$tmp/f$n.txt" 2>"$tmp/t$n.err" ||
		{ cat "$tmp/t$n.err"; hard "tshark cannot read its capture"; }
	pcapcheck "p$n" 20 --min-roce $((2 * ITERS)) --require RC_SEND_ONLY,ACK \
		--forbid PSN_GAP,NAK_PSN_SEQ,DUPLICATE "$tmp/c$n.pcapng"
}

# count FILE SRC DST OPCODE [ACKREQ]: frames SRC -> DST with that BTH opcode
# (and AckReq, 0 or 1)
count() {
	awk -F'\t' -v s="$2" -v d="$3" -v o="$4" -v a="${5:-}" \
		'$1 == s && $2 == d && $3 == o && (a == "" || $4 == (a ? "1" : "0") || $4 == (a ? "True" : "False")) { n++ } END { print n + 0 }' "$1"
}

# ece_is FILE SRC ATTRID WANT WHAT: the attribute modifier of SRC's CM MAD
# (UD SEND ONLY to QP 1) with that attribute ID is WANT (droce's ECE
# options), else bad
ece_is() {
	ei=$(awk -F'\t' -v s="$2" -v id="$3" '$1 == s && $3 == 100 && $5 == id { print $6; exit }' "$1")
	case $ei in
	0x*) [ $((ei)) -eq $(($4)) ] && echo "ok: $5: ECE options $ei" && return ;;
	esac
	bad "$5: ECE options '$ei', expected $4"
}

# vendor FILE ATTRID: droce's vendor ID in the MAD (REQ bytes 5-7 of its
# body, REP bytes 15, 19 and 23): 1 frame, else 0
vendor() {
	case $2 in
	0x0010) vf="frame[91:3] == 02:64:72" ;;
	0x0013) vf="frame[101] == 02 && frame[105] == 64 && frame[109] == 72" ;;
	esac
	tshark_r "$1" -Y "infiniband.mad.attributeid == $2 && $vf" -T fields -e frame.number 2>/dev/null |
		wc -l
}

# ---- run 1: the defaults -------------------------------------------------------------
run 1 ""
f=$tmp/f1.txt
echo "run 1 (defaults): $(wc -l <"$f") RoCE frames captured on $VA"
expect_count "REQ B->A: droce's vendor ID" "$(vendor "$tmp/c1.pcapng" 0x0010)" eq 1
expect_count "REP A->B: droce's vendor ID" "$(vendor "$tmp/c1.pcapng" 0x0013)" eq 1
ece_is "$f" "$IPB" 0x0010 0x3 "REQ B->A"
ece_is "$f" "$IPA" 0x0013 0x3 "REP A->B"
for dir in "$IPA $IPB A->B" "$IPB $IPA B->A"; do
	set -- $dir
	sends=$(count "$f" "$1" "$2" 4)
	acks=$(count "$f" "$1" "$2" 17)
	expect_count "RC SEND ONLY $3" "$sends" ge $ITERS
	expect_count "RC SEND ONLY without AckReq $3" "$(count "$f" "$1" "$2" 4 0)" ge $((sends / 2))
	expect_count "RC ACKNOWLEDGE $3" "$acks" ge 1
	expect_count "RC ACKNOWLEDGE $3 (fewer than the SEND ONLYs the other way, $(count "$f" "$2" "$1" 4))" \
		"$acks" lt "$(count "$f" "$2" "$1" 4)"
	echo "run 1 $3: $sends SEND ONLY, $(count "$f" "$1" "$2" 4 1) of them with AckReq; $acks ACKs"
done

# ---- run 2: FI_DROCE_LAZY_ACK=0 on A -------------------------------------------------
run 2 0
f=$tmp/f2.txt
echo "run 2 (A with FI_DROCE_LAZY_ACK=0): $(wc -l <"$f") RoCE frames captured on $VA"
ece_is "$f" "$IPB" 0x0010 0x3 "REQ B->A"
ece_is "$f" "$IPA" 0x0013 0x1 "REP A->B"
for dir in "$IPA $IPB A->B" "$IPB $IPA B->A"; do
	set -- $dir
	expect_count "RC SEND ONLY $3" "$(count "$f" "$1" "$2" 4)" ge $ITERS
	expect_count "RC SEND ONLY without AckReq $3" "$(count "$f" "$1" "$2" 4 0)" eq 0
	expect_count "RC ACKNOWLEDGE $3" "$(count "$f" "$1" "$2" 17)" ge 1
done

# ---- run 3: an RDMA write ping-pong of 4 KiB ------------------------------------------
BENCH=$top_builddir/bench/droce-bench
[ -x "$BENCH" ] || hard "$BENCH not built"
cap_start "$NSA" "$VA" "$tmp/c3.pcapng" -B 64
cap_wait "$tmp/c3.pcapng"
port=47831
ip netns exec "$NSA" timeout -k 5 60 "$BENCH" -S -O "$IPA:$port" -F "$IPA" -X 50 \
	>"$tmp/b3.srv" 2>&1 &
bpid=$!
wait_listen "$NSA" $port || bad "run 3: droce-bench's server is not listening"
ip netns exec "$NSB" timeout -k 5 60 "$BENCH" -O "$IPA:$port" -F "$IPB" -X 50 -t lat_write \
	-z 4k -m 2000 -M 2000 -W 0 -T 0.1 >"$tmp/b3.cli" 2>&1 || bad "run 3: droce-bench failed"
wait $bpid || bad "run 3: droce-bench's server failed"
cap_stop
keep_on_fail c3.pcapng netns-lazyack-c3.pcapng
grep lat_write "$tmp/b3.cli"
grep -q 'lat_write.*resent 0 timeouts 0 drops 0' "$tmp/b3.cli" ||
	bad "run 3: droce-bench: $(tail -n 3 "$tmp/b3.cli")"
tshark_r "$tmp/c3.pcapng" -Y 'udp.port == 4791' -T fields -E separator=/t -E occurrence=f \
	-e ip.src -e infiniband.bth.opcode >"$tmp/f3.txt" 2>/dev/null || hard "tshark cannot read c3"
# after a WRITE (ONLY 10, FIRST 6, a super-frame shows its first packet)
# from one end, the other's next frame: its WRITE or an ACK (17)
for dir in "$IPA $IPB A->B" "$IPB $IPA B->A"; do
	set -- $dir
	set -- $(awk -F'\t' -v x="$2" -v y="$1" '
		$1 == x && ($2 == 10 || $2 == 6) { w = 1; next }
		$1 == y && w { if ($2 == 10 || $2 == 6) a++; else if ($2 == 17) b++; w = 0 }
		END { print a + 0, b + 0 }' "$tmp/f3.txt") "$3"
	echo "run 3 $3: after the other end's WRITE, $1 times a WRITE first, $2 times an ACK first"
	expect_count "run 3 $3: WRITE first" "$1" ge 1500
	expect_count "run 3 $3: WRITE first, 75 % of the turns" "$1" ge $((3 * ($1 + $2) / 4))
done

[ $fail -eq 0 ] || exit 1
echo "PASS: netns-lazyack"
exit 0
