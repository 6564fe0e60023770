#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# replay.sh - droce-replay (issue 15 point 3) over the rdma_rxe golden
# captures and over copies of them with faults injected (tests/replay-edit).
#
# 1. Every golden capture with RC traffic replays with every frame accepted
#    by droce's engine: no drop, no NAK, no duplicate, except the two
#    retransmissions rdma_rxe itself made (rc_pingpong, send_lat), which
#    droce answers as duplicates; the exact lines of a SEND, a READ, a
#    WRITE of 4 packets and an atomic are checked.
# 2. Faults injected into rxe-rping.pcapng give the exact lines: a request
#    left out -> "NAK sent: sequence error, expected PSN e, received PSN r";
#    a request written twice -> duplicate, re-ACKed; a bit of the ICRC
#    flipped -> "dropped: bad ICRC"; a wrong P_Key -> "dropped: pkey"; a
#    DestQP nobody has -> "dropped: unknown_qpn"; a forged source address
#    -> "dropped: src_addr"; a WRITE with an R_Key the capture's responder
#    refused -> "NAK sent: remote access error", QP to ERROR; an ACK 3 s late -> B's retransmit timer
#    expires on the capture's clock before it; frames cut by a snaplen ->
#    not replayed, and what follows from it; the same faults with --as requester are not
#    the responder's business.
# 3. The engine's own notes, where it makes them, are printed once each on
#    the frame they are about (exact lines).
# 4. Bad input (no file, not a capture, a truncated pcapng or pcap, no RC
#    traffic, both ends at one address, a bad --as) fails
#    with a message, never a crash.
#
# Run by `make check` with top_srcdir and top_builddir exported.

set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
replay="$top_builddir/tools/droce-replay"
edit="$top_builddir/tests/replay-edit"
golden="$top_srcdir/tests/golden"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/replay.$$.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# has FILE LINE...: each LINE is a whole line of FILE
has() {
	f=$1
	shift
	for l in "$@"; do
		grep -qxF -- "$l" "$f" || fail "$(basename "$f"): no line '$l'"
	done
}

# block FILE FRAME: the lines of frame FRAME's entry, header included
block() {
	awk -v h="frame $2:" 'index($0, h) == 1 { on = 1; print; next }
		/^(frame|timer|summary)/ { on = 0 } on' "$1"
}

# expect_block FILE FRAME <<EOF ... EOF: the entry of FRAME is exactly that,
# the engine's own notes aside (checked in part 3)
expect_block() {
	block "$1" "$2" | grep -v '^  [AB] note: ' >"$tmp/got"
	cat >"$tmp/want"
	if ! cmp -s "$tmp/got" "$tmp/want"; then
		fail "$(basename "$1") frame $2:"
		diff -u "$tmp/want" "$tmp/got"
	fi
}

run() {
	out=$1
	shift
	if ! "$replay" "$@" >"$out" 2>"$out.err"; then
		fail "droce-replay $*: exit $?: $(cat "$out.err")"
	fi
}

# ---- 1. the golden captures -------------------------------------------------
for g in atomic_bw fi_pingpong_verbs ipv6-rping rc_pingpong read_bw rping send_lat ucmatose \
	write_bw write_bw-mtu4200 write_bw_cm; do
	o="$tmp/$g.txt"
	run "$o" "$golden/rxe-$g.pcapng"
	# the RC frames the capture has, all of them replayed
	n_rc=$(grep -c '^frame .*: [AB]->[AB] RC_' "$o")
	n_in=$(awk '/^summary/ { s += $3 } END { print s + 0 }' "$o")
	n_other=$(grep -c '^  not replayed: another connection' "$o")
	[ "$n_rc" -gt 0 ] && [ "$n_rc" -eq $((n_in + n_other)) ] ||
		fail "$g: $n_rc RC frames, $n_in fed to the engine, $n_other of another connection"
	case $g in
	rc_pingpong | send_lat) ;;
	*)
		if grep -E '^  .*(dropped|NAK|duplicate|not in the capture|sent again|failed)|^timer' "$o"; then
			fail "$g: droce did not accept every frame"
		fi
		grep -q '^0 frames dropped by the parser, ' "$o" || fail "$g: parser drops"
		grep -q "^summary A: [0-9]* frames in, 0 dropped, 0 duplicates, 0 sequence NAKs sent, 0 error NAKs sent, 0 RNR NAKs sent$" "$o" &&
			grep -q "^summary B: [0-9]* frames in, 0 dropped, 0 duplicates, 0 sequence NAKs sent, 0 error NAKs sent, 0 RNR NAKs sent$" "$o" ||
			fail "$g: summary: $(grep '^summary' "$o")"
		;;
	esac
done

o="$tmp/rping.txt"
has "$o" \
	"endpoint A: 192.168.77.11 QPN 0x000011, first PSN it sends 13763267 (from the CM REQ), 0 R_Keys" \
	"endpoint B: 192.168.77.12 QPN 0x000011, first PSN it sends 10315128 (from the CM REP), 2 R_Keys" \
	"path MTU 1024 (from the CM REQ), replaying responders and requesters" \
	"summary A: 30 frames in, 0 dropped, 0 duplicates, 0 sequence NAKs sent, 0 error NAKs sent, 0 RNR NAKs sent"
expect_block "$o" 24 <<'EOF'
frame 24: B->A RC_SEND_ONLY QP 0x000011 PSN 10315128, 16 bytes
  B requester: posted SEND of 16 bytes (wr 24)
  B requester: sent 1 request frame, PSN 10315128
  A responder: SEND completed into a receive, 16 bytes
  A responder: ACK sent: PSN 10315128, MSN 1
EOF
expect_block "$o" 26 <<'EOF'
frame 26: A->B RC_RDMA_READ_REQUEST QP 0x000011 PSN 13763267
  A requester: posted RDMA_READ of 64 bytes (wr 26)
  A requester: sent 1 request frame, PSN 13763267
  B responder: accepted: READ of 64 bytes answered with 1 response
  B responder: READ response sent: PSN 13763267, 64 bytes
EOF
expect_block "$o" 27 <<'EOF'
frame 27: B->A RC_RDMA_READ_RESPONSE_ONLY QP 0x000011 PSN 13763267, 64 bytes
  A completer: accepted: READ response PSN 13763267, 64 bytes placed
  A completer: completion: wr 26 success
EOF
expect_block "$o" 32 <<'EOF'
frame 32: A->B RC_RDMA_WRITE_ONLY QP 0x000011 PSN 13763269, 64 bytes
  A requester: posted RDMA_WRITE of 64 bytes (wr 32)
  A requester: sent 1 request frame, PSN 13763269
  B responder: accepted: WRITE placed 64 bytes
  B responder: WRITE of 64 bytes complete
  B responder: ACK sent: PSN 13763269, MSN 3
EOF
expect_block "$tmp/write_bw.txt" 50 <<'EOF'
frame 50: B->A RC_RDMA_WRITE_LAST QP 0x000011 PSN 5651418, 1024 bytes
  A responder: accepted: WRITE placed 1024 bytes
  A responder: WRITE of 4096 bytes complete
  A responder: ACK sent: PSN 5651418, MSN 1
EOF
expect_block "$tmp/read_bw.txt" 37 <<'EOF'
frame 37: B->A RC_RDMA_READ_REQUEST QP 0x000011 PSN 5483785
  B requester: posted RDMA_READ of 4096 bytes (wr 37)
  B requester: sent 1 request frame, PSN 5483785
  A responder: accepted: READ of 4096 bytes answered with 4 responses
  A responder: READ responses sent: 4, PSN 5483785..5483788, 4096 bytes
EOF
expect_block "$tmp/atomic_bw.txt" 39 <<'EOF'
frame 39: B->A RC_FETCH_ADD QP 0x000011 PSN 5600127
  B requester: posted ATOMIC_FETCH_ADD of 8 bytes (wr 39)
  B requester: sent 1 request frame, PSN 5600127
  A responder: accepted: RC_FETCH_ADD executed
  A responder: ATOMIC ACKNOWLEDGE sent: PSN 5600127, original value 0x0
EOF
expect_block "$tmp/atomic_bw.txt" 105 <<'EOF'
frame 105: A->B RC_ATOMIC_ACKNOWLEDGE QP 0x000011 PSN 5600127
  B completer: accepted: ATOMIC ACKNOWLEDGE PSN 5600127
  B completer: completion: wr 39 success
EOF
# perftest's CM capture: the first connection (QPN 0x11) exchanges the
# parameters, the replayed one is the test's (0x12)
has "$tmp/write_bw_cm.txt" \
	"endpoint A: 192.168.77.11 QPN 0x000012, first PSN it sends 7645367 (from the CM REQ), 1 R_Key" \
	"  not replayed: another connection (QPN 0x000011 of A), droce-replay follows QPN 0x000012"
# rdma_rxe resent SEND PSN 12506424 (rc_pingpong) and 9769069 (send_lat)
# after their ACK had gone: droce answers the resend as a duplicate; the
# second ACK finds nothing outstanding
expect_block "$tmp/rc_pingpong.txt" 59 <<'EOF'
frame 59: A->B RC_SEND_ONLY QP 0x000011 PSN 12506424, 1024 bytes
  A requester: PSN 12506424 sent again in the capture: droce resends on its own timer and NAKs, nothing posted
  B responder: duplicate: RC_SEND_ONLY PSN 12506424 re-ACKed
  B responder: ACK sent: PSN 12506424, MSN 7
EOF
expect_block "$tmp/rc_pingpong.txt" 60 <<'EOF'
frame 60: B->A RC_ACKNOWLEDGE QP 0x000011 PSN 12506424
  A completer: dropped: unexpected_rsp
EOF
has "$tmp/send_lat.txt" \
	"  A responder: duplicate: RC_SEND_ONLY PSN 9769069 re-ACKed" \
	"summary A: 101 frames in, 0 dropped, 1 duplicates, 0 sequence NAKs sent, 0 error NAKs sent, 0 RNR NAKs sent" \
	"summary B: 101 frames in, 1 dropped, 0 duplicates, 0 sequence NAKs sent, 0 error NAKs sent, 0 RNR NAKs sent"

# ---- 2. faults injected into rxe-rping ---------------------------------------
rping="$golden/rxe-rping.pcapng"
fault() {
	name=$1
	shift
	if ! "$edit" "$rping" "$tmp/$name.pcapng" "$@"; then
		fail "replay-edit $*"
		return
	fi
	run "$tmp/$name.txt" "$tmp/$name.pcapng"
}

# the WRITE PSN 13763269 (frame 32) lost: the next request (the SEND, now
# frame 33) is out of sequence; A's replayed requester numbers it as the
# capture does
fault drop drop:32
expect_block "$tmp/drop.txt" 33 <<'EOF'
frame 33: A->B RC_SEND_ONLY QP 0x000011 PSN 13763270, 16 bytes
  A requester: PSN 13763269 not in the capture: 1 zero-length WRITE posted in its place
  A requester: posted SEND of 16 bytes (wr 33)
  A requester: sent 2 request frames, PSN 13763269..13763270
  B responder: NAK sent: sequence error, expected PSN 13763269, received PSN 13763270
EOF
# the ACK of the lost WRITE reaches A before A knows of the WRITE
expect_block "$tmp/drop.txt" 32 <<'EOF'
frame 32: B->A RC_ACKNOWLEDGE QP 0x000011 PSN 13763269
  A completer: dropped: unexpected_rsp
EOF
# the capture never resends PSN 13763269: B drops every later request as
# ahead of it (NAKed once)
expect_block "$tmp/drop.txt" 37 <<'EOF'
frame 37: A->B RC_RDMA_READ_REQUEST QP 0x000011 PSN 13763271
  A requester: posted RDMA_READ of 64 bytes (wr 37)
  A requester: sent 1 request frame, PSN 13763271
  B responder: dropped: psn_ahead (expected PSN 13763269, the gap already NAKed)
EOF
has "$tmp/drop.txt" \
	"summary A: 30 frames in, 1 dropped, 0 duplicates, 0 sequence NAKs sent, 0 error NAKs sent, 0 RNR NAKs sent" \
	"summary B: 29 frames in, 16 dropped, 0 duplicates, 1 sequence NAKs sent, 0 error NAKs sent, 0 RNR NAKs sent"

# the SEND PSN 13763268 (frame 28) twice: the second is a duplicate
fault dup dup:28
expect_block "$tmp/dup.txt" 29 <<'EOF'
frame 29: A->B RC_SEND_ONLY QP 0x000011 PSN 13763268, 16 bytes
  A requester: PSN 13763268 sent again in the capture: droce resends on its own timer and NAKs, nothing posted
  B responder: duplicate: RC_SEND_ONLY PSN 13763268 re-ACKed
  B responder: ACK sent: PSN 13763268, MSN 2
EOF
has "$tmp/dup.txt" \
	"summary B: 31 frames in, 0 dropped, 1 duplicates, 0 sequence NAKs sent, 0 error NAKs sent, 0 RNR NAKs sent"

# the READ request's ICRC corrupted: the parser drops it, its response then
# answers nothing A has outstanding
fault icrc icrc:26
expect_block "$tmp/icrc.txt" 26 <<'EOF'
frame 26: A->B RC_RDMA_READ_REQUEST QP 0x000011 PSN 13763267
  dropped: bad ICRC
EOF
expect_block "$tmp/icrc.txt" 27 <<'EOF'
frame 27: B->A RC_RDMA_READ_RESPONSE_ONLY QP 0x000011 PSN 13763267, 64 bytes
  A completer: dropped: unexpected_rsp
EOF
has "$tmp/icrc.txt" "1 frames dropped by the parser, 20 frames not RoCEv2 skipped"

# a P_Key that matches nothing droce has (0x1234)
fault pkey pkey:24:1234
expect_block "$tmp/pkey.txt" 24 <<'EOF'
frame 24: B->A RC_SEND_ONLY QP 0x000011 PSN 10315128, 16 bytes
  B requester: posted SEND of 16 bytes (wr 24)
  B requester: sent 1 request frame, PSN 10315128
  A responder: dropped: pkey
EOF
# so the next SEND from B is out of sequence at A
has "$tmp/pkey.txt" \
	"  A responder: NAK sent: sequence error, expected PSN 10315128, received PSN 10315129"

# a DestQP that no QP has
fault qpn qpn:24:99
expect_block "$tmp/qpn.txt" 24 <<'EOF'
frame 24: B->A RC_SEND_ONLY QP 0x000099 PSN 10315128, 16 bytes
  A device: dropped: unknown_qpn
EOF

# a forged source address on the SEND of frame 28
fault srcip srcip:28:192.168.77.99
expect_block "$tmp/srcip.txt" 28 <<'EOF'
frame 28: 192.168.77.99->B RC_SEND_ONLY QP 0x000011 PSN 13763268, 16 bytes
  B responder: dropped: src_addr
EOF

# the ACK of B's first SEND (frame 25) 3 s late: on the capture's clock B's
# retransmit timer (ACK timeout 19 from the CM REQ: 2.1 s) expires first
fault late delay:25:3000000
awk '/^timer: /, /^frame 25:/' "$tmp/late.txt" >"$tmp/got"
cat >"$tmp/want" <<'EOF'
timer: B at +10.688028 s
  B requester: retransmit timeout
  B requester: sent 1 request frame, PSN 10315128
frame 25: A->B RC_ACKNOWLEDGE QP 0x000011 PSN 10315128
EOF
grep -v '^  [AB] note: ' "$tmp/got" | cmp -s - "$tmp/want" || {
	fail "late ACK: the timer entry"
	diff -u "$tmp/want" "$tmp/got"
}
expect_block "$tmp/late.txt" 25 <<'EOF'
frame 25: A->B RC_ACKNOWLEDGE QP 0x000011 PSN 10315128
  B completer: accepted: ACK PSN 10315128
  B completer: completion: wr 24 success
EOF
[ "$(grep -c '^timer: ' "$tmp/late.txt")" -eq 1 ] || fail "late ACK: not one timer entry"

# the WRITE of frame 32 names an R_Key (0x0badc0de) that B answered with a
# remote access error NAK (frame 33): droce, which has no such key either,
# refuses it the same way and its QP goes to ERROR; so does A's when the
# capture's NAK reaches it
fault badkey rkey:32:0badc0de aeth:33:62
has "$tmp/badkey.txt" \
	"endpoint B: 192.168.77.12 QPN 0x000011, first PSN it sends 10315128 (from the CM REP), 3 R_Keys (1 refused in the capture with a remote access error: not registered)"
expect_block "$tmp/badkey.txt" 32 <<'EOF'
frame 32: A->B RC_RDMA_WRITE_ONLY QP 0x000011 PSN 13763269, 64 bytes
  A requester: posted RDMA_WRITE of 64 bytes (wr 32)
  A requester: sent 1 request frame, PSN 13763269
  B responder: RDMA_WRITE refused: remote access error
  B responder: 32 receives flushed
  B QP: QP state: RTS -> ERROR (remote access error)
  B responder: NAK sent: remote access error, expected PSN 13763269, received PSN 13763269
EOF
expect_block "$tmp/badkey.txt" 33 <<'EOF'
frame 33: B->A RC_ACKNOWLEDGE QP 0x000011 PSN 13763269
  A completer: NAK received: remote access error, PSN 13763269
  A completer: completion: wr 32 remote access error
  A responder: 32 receives flushed
  A QP: QP state: RTS -> ERROR (remote access error)
EOF
expect_block "$tmp/badkey.txt" 34 <<'EOF'
frame 34: A->B RC_SEND_ONLY QP 0x000011 PSN 13763270, 16 bytes
  A requester: posted SEND of 16 bytes (wr 34)
  A completer: 1 work request flushed
  B responder: dropped: qp_state
EOF

# captured with a snaplen of 100 bytes: the READ response (126 bytes), the
# WRITE (138) and the CM's MADs (322) are cut, so not replayed; the ACK of
# the SEND after the READ then tells A's completer the READ response was
# lost (IBA 9.7.5.1.3: an ACK beyond a READ): A resends the READ request,
# with the SEND after it
fault snap snaplen:0:100
has "$tmp/snap.txt" \
	"frame 27: cut to 100 of 126 bytes by the capture's snaplen: not replayed" \
	"frame 32: cut to 100 of 138 bytes by the capture's snaplen: not replayed" \
	"15 RoCEv2 frames cut by the capture's snaplen not replayed"
expect_block "$tmp/snap.txt" 29 <<'EOF'
frame 29: B->A RC_ACKNOWLEDGE QP 0x000011 PSN 13763268
  A completer: accepted: ACK PSN 13763268
  A requester: sent 2 request frames, PSN 13763267..13763268
EOF
"$edit" "$rping" "$tmp/snap60.pcapng" snaplen:0:60 || fail "replay-edit snaplen:0:60"

# --as requester: requests are the capture's responder's, not replayed
run "$tmp/asreq.txt" --as requester "$tmp/drop.pcapng"
expect_block "$tmp/asreq.txt" 33 <<'EOF'
frame 33: A->B RC_SEND_ONLY QP 0x000011 PSN 13763270, 16 bytes
  A requester: PSN 13763269 not in the capture: 1 zero-length WRITE posted in its place
  A requester: posted SEND of 16 bytes (wr 33)
  A requester: sent 2 request frames, PSN 13763269..13763270
  B responder: not replayed (--as requester)
EOF
# --as responder: the responses are the capture's requester's
run "$tmp/asresp.txt" --as responder "$tmp/drop.pcapng"
expect_block "$tmp/asresp.txt" 33 <<'EOF'
frame 33: A->B RC_SEND_ONLY QP 0x000011 PSN 13763270, 16 bytes
  B responder: NAK sent: sequence error, expected PSN 13763269, received PSN 13763270
EOF
expect_block "$tmp/asresp.txt" 27 <<'EOF'
frame 27: B->A RC_RDMA_READ_RESPONSE_ONLY QP 0x000011 PSN 13763267, 64 bytes
  A completer: not replayed (--as responder)
EOF

# a classic pcap (tcpdump's default format) of the same frames replays the same
if "$edit" "$rping" "$tmp/rping.pcap"; then
	run "$tmp/rping-pcap.txt" "$tmp/rping.pcap"
	cmp -s "$tmp/rping.txt" "$tmp/rping-pcap.txt" || {
		fail "classic pcap: not the same replay as pcapng"
		diff -u "$tmp/rping.txt" "$tmp/rping-pcap.txt"
	}
else
	fail "replay-edit: classic pcap"
fi

# droce-pcapgen's conversation of every opcode (pcaps/): droce offers no SEND
# with invalidate, so its responder answers one with an invalid request NAK
# and its QP goes to ERROR; the capture's RNR NAK reaches B's completer.
# The capture's CM REQ carries the PSN its sender sends (rdma_rxe's and
# droce's carry the one they receive): droce-replay notices and says so.
o="$tmp/opcodes.txt"
run "$o" "$top_srcdir/pcaps/droce-opcodes.pcapng"
has "$o.err" "droce-replay: B: the CM's starting PSN 45056 is after its first request's (16777208): using the request's"
expect_block "$o" 32 <<'EOF'
frame 32: B->A RC_SEND_ONLY_WITH_INVALIDATE QP 0x000456 PSN 12, 19 bytes
  B requester: posted SEND of 19 bytes (wr 32)
  B requester: sent 1 request frame, PSN 12
  A responder: 32 receives flushed
  A QP: QP state: RTS -> ERROR (invalid request)
  A responder: NAK sent: invalid request, expected PSN 12, received PSN 12
EOF
expect_block "$o" 33 <<'EOF'
frame 33: A->B RC_ACKNOWLEDGE QP 0x000123 PSN 12
  B completer: RNR NAK received: waiting 1.28 ms
EOF
expect_block "$o" 34 <<'EOF'
frame 34: B->A RC_SEND_ONLY_WITH_INVALIDATE QP 0x000456 PSN 12, 19 bytes
  B requester: PSN 12 sent again in the capture: droce resends on its own timer and NAKs, nothing posted
  A responder: dropped: qp_state
EOF
expect_block "$o" 9 <<'EOF'
frame 9: B->A RC_SEND_LAST_WITH_IMMEDIATE QP 0x000456 PSN 16777212, 2 bytes
  A responder: SEND completed into a receive, 258 bytes, immediate 0xcafe0001
EOF

# ---- 3. the engine's notes (struct dr_qp_ops.note) ----------------------------
# An engine that annotates (issue 15 point 1) adds these lines, its notes
# that say more than droce-replay's own lines; one without notes adds none.
# Either all of them or no note line at all.
cat >"$tmp/notes" <<'EOF'
rc_pingpong|59|  B note: duplicate: SEND_ONLY PSN 12506424 acknowledged again, ACK PSN 12506424
rc_pingpong|60|  A note: dropped: unexpected_rsp, PSN 12506424, nothing outstanding
late|timer|  B note: retransmit: timeout, go-back-N from PSN 10315128, attempt 1 of 7, RTO 4294967 us
drop|32|  A note: dropped: unexpected_rsp, PSN 13763269, nothing outstanding
drop|37|  B note: dropped: psn_ahead, expected PSN 13763269, received PSN 13763271, NAK already sent
dup|29|  B note: duplicate: SEND_ONLY PSN 13763268 acknowledged again, ACK PSN 13763268
icrc|27|  A note: dropped: unexpected_rsp, PSN 13763267, nothing outstanding
pkey|24|  A note: dropped: pkey, P_Key 0x1234
badkey|34|  B note: dropped: qp_state, QP in ERROR
srcip|28|  B note: dropped: src_addr, from 192.168.77.99
EOF
if cat "$tmp"/*.txt | grep -q '^  [AB] note: '; then
	while IFS='|' read -r f n line; do
		if [ "$n" = timer ]; then
			awk '/^timer: /, /^frame/' "$tmp/$f.txt"
		else
			block "$tmp/$f.txt" "$n"
		fi | grep -qxF -- "$line" ||
			fail "$f frame $n: no note '$line'"
	done <"$tmp/notes"
	# the NAK's note says what droce-replay's line says: printed once
	n=$(block "$tmp/drop.txt" 33 | grep -c 'NAK sent: sequence error')
	[ "$n" -eq 1 ] || fail "drop frame 33: the sequence NAK printed $n times"
	# the set-up's state changes are the replay's, not the capture's
	if cat "$tmp"/*.txt | grep -q '(modify)'; then
		fail "a QP state note of the replay's set-up was printed"
	fi
	echo "notes: the engine annotates; its $(wc -l <"$tmp/notes") expected notes found"
else
	echo "notes: the engine makes none (struct dr_qp_ops.note not fed yet)"
fi

# ---- 4. bad input ----------------------------------------------------------------
bad() {
	want=$1
	shift
	"$replay" "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
	rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -gt 2 ] || ! grep -qxF -- "$want" "$tmp/bad.err"; then
		fail "droce-replay $*: exit $rc, stderr '$(cat "$tmp/bad.err")', expected '$want'"
	fi
}
bad "droce-replay: $tmp/none.pcapng: No such file or directory" "$tmp/none.pcapng"
bad "droce-replay: no RC traffic between two endpoints in the capture" \
	"$golden/rxe-ud_pingpong.pcapng"
bad "droce-replay: no RC traffic between two endpoints in the capture" \
	"$golden/rxe-host-cm_reject-client.pcapng"
bad "droce-replay: --as both-ways: not responder, requester or both" --as both-ways "$rping"
head -c 100 "$rping" >"$tmp/cut.pcapng"
"$replay" "$tmp/cut.pcapng" >/dev/null 2>"$tmp/bad.err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "^droce-replay: $tmp/cut.pcapng: " "$tmp/bad.err" ||
	fail "a truncated capture: exit $rc, stderr '$(cat "$tmp/bad.err")'"

bad "droce-replay: no whole RC traffic between two endpoints in the capture: 80 frames were cut by its snaplen (capture with -s 0)" \
	"$tmp/snap60.pcapng"
# both ends at one address (two processes on one host): not told apart
"$edit" "$rping" "$tmp/same.pcapng" srcip:0:10.0.0.1 dstip:0:10.0.0.1 ||
	fail "replay-edit srcip:0 dstip:0"
bad "droce-replay: no RC traffic between two addresses in the capture: 60 RC frames go from an address to itself (two processes on one host), and droce-replay tells the two ends apart by address" \
	"$tmp/same.pcapng"
head -c 100 "$tmp/rping.pcap" >"$tmp/cut.pcap"
bad "droce-replay: $tmp/cut.pcap: record at offset 24 cut short" "$tmp/cut.pcap"

if [ "$fails" -ne 0 ]; then
	echo "FAIL: $fails check(s) failed"
	exit 1
fi
echo "PASS: droce-replay: 11 golden captures (pcapng and classic pcap), 9 injected faults, --as, bad input"
