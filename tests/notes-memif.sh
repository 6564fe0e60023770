#!/bin/sh
# notes-memif.sh - the annotations FI_DROCE_PCAP writes through the whole
# provider (src/fi): CM state changes on the exact CM MADs, the QP's setup
# on its first frame, and an error NAK with both QPs' move to ERROR on the
# exact frames.  Two droce-xfer processes joined by a DPDK net_memif pair
# (no root, no hugepages), each capturing to its own file.
#
# Run 1: one 64-byte SEND.  Each side's capture: the REQ, REP and RTU each
# carry exactly one note, "CM state: OLD -> NEW (MSG sent|received)" with
# the states of that side; the first RC frame each side sends carries the
# QP's setup ("QP state: RESET -> INIT (modify); ... RTR -> RTS (modify)");
# every other CM note is on a DREQ or DREP, and says "sent" on frames
# sent, "received" on frames received.
# Run 2: one 64-byte RDMA WRITE with a wrong key (droce-xfer -X badkey).  The
# server's record of the WRITE_ONLY (PSN P) says "QP state: RTS -> ERROR
# (remote access error)", its NAK (ACKNOWLEDGE, PSN P) ends with "NAK sent:
# remote access error, expected PSN P, received PSN P"; the client's record
# of that NAK says "NAK received: remote access error, PSN P; QP state: RTS
# -> ERROR (remote access error)"; no other frame mentions a NAK.
# Run 3: a bare port (tests/notes-inject) sends a server forged frames: its
# capture holds exactly them, each marked dropped (drop count 1) with the
# device's reason: "dropped: unknown_qpn, QPN 0x00abcd", "dropped: pkey,
# P_Key 0x1234", "dropped: bad_gsi, QPN 0x000001".
#
# Exit: 0 pass, 1 fail, 77 skip (no tshark; in CI, CI=true, that fails),
# 99 hard error.
set -u
: "${top_srcdir:?run from make check}" "${top_builddir:?run from make check}"
xfer="$top_builddir/tools/droce-xfer"
[ -x "$xfer" ] || { echo "ERROR: droce-xfer not built"; exit 99; }
TSHARK=${TSHARK:-}
[ -n "$TSHARK" ] || TSHARK=$(command -v tshark 2>/dev/null || true)
if [ -z "$TSHARK" ] || [ ! -x "$TSHARK" ]; then
	[ "${CI:-}" != true ] || { echo "FAIL: tshark not found, and CI=true"; exit 1; }
	echo "SKIP: tshark not installed"
	exit 77
fi

work=$(mktemp -d /tmp/droce-notes.XXXXXX) pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT INT TERM

export FI_PROVIDER_PATH="$top_builddir/.libs" FI_PROVIDER=droce
fail=0

# xfer N OPTIONS...: one server and one client run; captures s$N/c$N.pcapng,
# each frame's fields in s$N.txt/c$N.txt: number flags opcode attr psn comment
xfer() {
	n=$1
	shift
	# below the ephemeral range, apart from memif-xfer.sh and lossless.sh
	port=$((24000 + ($$ + 7 * n) % 1000))
	rm -f "$work/memif.sock"
	FI_DROCE_DEVICE="net_memif0,role=server,socket=$work/memif.sock" \
		FI_DROCE_ADDR=192.0.2.1/24 FI_DROCE_PCAP="$work/s$n.pcapng" \
		timeout 60 "$xfer" -p droce -a 192.0.2.1 -P "$port" -w 30 >"$work/s$n.log" 2>&1 &
	pid=$!
	FI_DROCE_DEVICE="net_memif0,role=client,socket=$work/memif.sock" \
		FI_DROCE_ADDR=192.0.2.2/24 FI_DROCE_PCAP="$work/c$n.pcapng" \
		timeout 50 "$xfer" -p droce -s 127.0.0.1 -P "$port" -S 64 -I 1 "$@" \
		>"$work/c$n.log" 2>&1
	crc=$?
	wait "$pid"
	src=$?
	pid=
	for s in s c; do
		timeout 60 "$TSHARK" --disable-heuristic rpcrdma_infiniband -r "$work/$s$n.pcapng" \
			-Y infiniband -T fields -E separator=/t -e frame.number \
			-e frame.packet_flags -e infiniband.bth.opcode -e infiniband.mad.attributeid \
			-e infiniband.bth.psn -e frame.comment >"$work/$s$n.txt" 2>"$work/t.err" ||
			{ cat "$work/t.err"; echo "ERROR: tshark cannot read $s$n.pcapng"; exit 99; }
	done
}

check() { # what got want
	if [ "$2" = "$3" ]; then
		echo "ok: $1"
	else
		echo "FAIL: $1: got \"$2\", expected \"$3\""
		fail=1
	fi
}

# comments FILE DIR OPCODE ATTR: the comments of the frames that way (1 in,
# 2 out) with that BTH opcode and MAD attribute ("" for none), one a line
comments() {
	awk -F'\t' -v d="$2" -v o="$3" -v a="$4" \
		'substr($2, length($2)) == d && $3 == o && $4 == a { print $6 }' "$1"
}

SETUP="QP state: RESET -> INIT (modify); QP state: INIT -> RTR (modify); QP state: RTR -> RTS (modify)"

# ---- run 1: a clean connection ----------------------------------------------------------
xfer 1 -o send
if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
	cat "$work/c1.log" "$work/s1.log"
	echo "FAIL: droce-xfer: client $crc, server $src"
	exit 1
fi
s=$work/s1.txt c=$work/c1.txt
check "server: REQ received" "$(comments "$s" 1 100 0x0010)" "CM state: IDLE -> REQ_RCVD (REQ received)"
check "server: REP sent" "$(comments "$s" 2 100 0x0013)" "CM state: REQ_RCVD -> REP_SENT (REP sent)"
check "server: RTU received" "$(comments "$s" 1 100 0x0014)" "CM state: REP_SENT -> ESTABLISHED (RTU received)"
check "client: REQ sent" "$(comments "$c" 2 100 0x0010)" "CM state: IDLE -> REQ_SENT (REQ sent)"
check "client: REP received" "$(comments "$c" 1 100 0x0013)" "CM state: REQ_SENT -> ESTABLISHED (REP received)"
check "client: RTU sent" "$(comments "$c" 2 100 0x0014)" ""
for f in "$s" "$c"; do
	who=$([ "$f" = "$s" ] && echo server || echo client)
	check "$who: its first RC frame" \
		"$(awk -F'\t' 'substr($2, length($2)) == 2 && $3 != 100 { print $6; exit }' "$f")" "$SETUP"
	check "$who: frames with the QP's setup" "$(grep -c "QP state: RESET" "$f")" 1
	# the CM notes besides the setup's: on DREQ/DREP only, sent or received
	check "$who: CM notes on other frames" "$(awk -F'\t' '$6 ~ /CM state:/ &&
		!($4 == "0x0010" || $4 == "0x0013" || $4 == "0x0014") &&
		!(($4 == "0x0015" || $4 == "0x0016") &&
		  (substr($2, length($2)) == 2 && $6 ~ /^CM state: [A-Z_]+ -> [A-Z_]+ \(DRE[QP] sent\)$/ ||
		   substr($2, length($2)) == 1 && $6 ~ /^CM state: [A-Z_]+ -> [A-Z_]+ \(DRE[QP] received\)$/))' \
		"$f" | wc -l)" 0
	check "$who: NAK or retransmit notes" "$(grep -c "NAK\|retransmit:" "$f")" 0
done

# ---- run 2: a WRITE with a wrong key ----------------------------------------------------
xfer 2 -o write -X badkey:write
grep -q "FAIL write 64 B x1: client: write: .*remote access error" "$work/c2.log" ||
	{ cat "$work/c2.log"; echo "FAIL: the client's WRITE did not fail with a remote access error"; exit 1; }
s=$work/s2.txt c=$work/c2.txt
psn=$(awk -F'\t' 'substr($2, length($2)) == 1 && $3 == 10 { print $5; exit }' "$s")
[ -n "$psn" ] || { echo "FAIL: no WRITE_ONLY in the server's capture"; exit 1; }
echo "the WRITE: PSN $psn"
check "server: the WRITE_ONLY" "$(awk -F'\t' -v p="$psn" 'substr($2, length($2)) == 1 && $3 == 10 && $5 == p { print $6 }' "$s")" \
	"QP state: RTS -> ERROR (remote access error)"
check "server: its NAK" "$(awk -F'\t' -v p="$psn" 'substr($2, length($2)) == 2 && $3 == 17 && $5 == p { print $6 }' "$s")" \
	"$SETUP; NAK sent: remote access error, expected PSN $psn, received PSN $psn"
check "server: frames noting a NAK" "$(grep -c "NAK" "$s")" 1
check "client: the NAK" "$(awk -F'\t' -v p="$psn" 'substr($2, length($2)) == 1 && $3 == 17 && $5 == p { print $6 }' "$c")" \
	"NAK received: remote access error, PSN $psn; QP state: RTS -> ERROR (remote access error)"
check "client: frames noting a NAK" "$(grep -c "NAK" "$c")" 1

# ---- run 3: forged frames the device refuses ---------------------------------------------
# a server with no client, a bare port sending forged frames in the
# client's place; the server is stopped (SIGTERM) once they are sent: its
# capture has each frame written as it passed
rm -f "$work/memif.sock"
FI_DROCE_DEVICE="net_memif0,role=server,socket=$work/memif.sock" FI_DROCE_ADDR=192.0.2.1/24 \
	FI_DROCE_PCAP="$work/s3.pcapng" timeout 30 "$xfer" -p droce -a 192.0.2.1 \
	-P $((48000 + ($$ + 21) % 1000)) -w 20 >"$work/s3.log" 2>&1 &
pid=$!
# the injector starts once the server listens (its port is then polled and
# answers ARP: started earlier, under load, the injector's address
# resolution could run out -- 3 tries a second apart -- before the server
# polled at all), and connects to the server's memif socket, tried again
# (10 s at most) while it cannot connect
i=0
until grep -q 'listening at' "$work/s3.log" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -ge 300 ] || ! kill -0 "$pid" 2>/dev/null; then
		cat "$work/s3.log"
		echo "ERROR: the server of run 3 never listened"
		exit 99
	fi
	sleep 0.1
done
i=0
until timeout 20 "$top_builddir/tests/notes-inject" \
	"net_memif0,role=client,socket=$work/memif.sock" 2>"$work/inject.err"; do
	i=$((i + 1))
	if [ $i -ge 50 ] || ! grep -q "Failed to connect socket" "$work/inject.err"; then
		cat "$work/inject.err" "$work/s3.log"
		echo "FAIL: notes-inject"
		fail=1
		break
	fi
	sleep 0.2
done
kill "$pid"
wait "$pid"
pid=
timeout 60 "$TSHARK" -r "$work/s3.pcapng" -Y infiniband -T fields -E separator=/t \
	-e frame.packet_flags -e frame.drop_count -e infiniband.bth.psn -e frame.comment \
	>"$work/s3.txt" 2>/dev/null || { echo "ERROR: tshark cannot read s3.pcapng"; exit 99; }
check "server: the forged frames, dropped" "$(cat "$work/s3.txt")" "$(printf '%s\t1\t%s\t%s\n' \
	0x00000001 1792 "dropped: unknown_qpn, QPN 0x00abcd" \
	0x00000001 1793 "dropped: pkey, P_Key 0x1234" \
	0x00000001 1794 "dropped: bad_gsi, QPN 0x000001")"

[ "$fail" -eq 0 ] || { cat "$work/s1.txt" "$work/c1.txt" "$work/s2.txt" "$work/c2.txt"; exit 1; }
echo "PASS: notes-memif"
exit 0
