#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-notes.sh - a queue pair's drops of forged frames, marked in
# FI_DROCE_PCAP through the whole provider (src/fi/ep_qp.c turns the engine's
# "dropped: <reason>" into a dropped record).
#
#   netns drnt<pid>a: dnta<pid> N.1/24 ==veth== dntb<pid> N.2/24 :netns drnt<pid>b
#
# droce-xfer server in A (FI_DROCE_PCAP), client in B held at its first
# operation (-W 0:gate).  Meanwhile tests/notes-inject, a bare port on B's
# interface, sends the server's queue pair (its QPN from the REP in the
# server's capture) an RC SEND_ONLY with P_Key 0x1234 (PSN 0x703) and one
# from N.9 (PSN 0x704).  Then the client goes on and both end cleanly.
# Asserts, in the server's capture: each forged frame once, marked dropped
# (drop count 1) with exactly "dropped: pkey, P_Key 0x1234" and "dropped:
# src_addr, from N.9"; no other RoCE frame with a drop count.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / tshark), 99 hard
# error.

set -u

. "$(dirname "$0")/netns-lib.sh"
ns_pair_names drnt dnt 10.79
inject=$top_builddir/tests/notes-inject
built "$XFER" "$inject"
ns_pair_up netns-notes "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
keep_on_fail s.pcapng netns-notes.pcapng
port=$((47000 + $$ % 900))

xfer_env="FI_DROCE_PCAP=$tmp/s.pcapng"
xfer_start "$NSA" 60 s -w 30 -t 20 || exit 1
xfer_env=""
ip netns exec "$NSB" timeout -k 5 60 "$XFER" -p droce -s "$IPA" -P "$port" -o send -S 64 \
	-I 1 -t 20 -W "0:$tmp/gate" >"$tmp/c.log" 2>&1 &
c_pid=$!
gate_wait "$c_pid"
qpn=$("$TSHARK" -r "$tmp/s.pcapng" -Y 'infiniband.mad.attributeid == 0x13' -T fields \
	-e infiniband.cm.rep.localqpn 2>/dev/null | head -n 1)
[ -n "$qpn" ] || { cat "$tmp/c.log"; hard "no REP in the server's capture"; }
echo "the server's QPN: $qpn"
ip netns exec "$NSB" timeout 20 "$inject" "net_af_packet_ni,iface=$VB" "$IPB" "$IPA" "$qpn" ||
	bad "notes-inject"
rm -f "$tmp/gate"
wait "$c_pid"
c_rc=$?
wait "$xs_pid"
s_rc=$?
if [ "$c_rc" -ne 0 ] || [ "$s_rc" -ne 0 ]; then
	tail -n 20 "$tmp/c.log" "$tmp/s.srv"
	bad "droce-xfer: client $c_rc, server $s_rc"
fi

rows=$("$TSHARK" -r "$tmp/s.pcapng" -Y 'frame.drop_count && infiniband' -T fields -E separator=/t \
	-e frame.packet_flags -e frame.drop_count -e infiniband.bth.psn -e frame.comment 2>/dev/null)
want=$(printf '0x00000001\t1\t1795\tdropped: pkey, P_Key 0x1234\n0x00000001\t1\t1796\tdropped: src_addr, from %s.9' "$net")
if [ "$rows" = "$want" ]; then
	echo "ok: the forged frames, dropped by the queue pair:"
	echo "$rows"
else
	bad "the frames with a drop count:"
	echo "$rows"
	echo "expected:"
	echo "$want"
fi
[ "$fail" -eq 0 ] || exit 1
echo "PASS: netns-notes"
exit 0
