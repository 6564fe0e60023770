#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-linkflap.sh - droce through link faults (issue 11, point 2): the
# client's kernel interface goes down for 2 s, then for 5 s, during a loop
# of 1 MiB RDMA writes and during a loop of 1 MiB sends (send/recv both
# ways), between two network namespaces joined by a veth pair.
#
#   netns drlf<pid>a: dla<pid> 10.79.N.1/24 ==veth== dlb<pid> 10.79.N.2/24 :netns drlf<pid>b
#                     droce-xfer server                  droce-xfer client
#
# One droce-xfer session per outage length (-o write,send -S 1m -I 6
# -W 2:gate): droce-xfer holds the client just before the third send and
# again before the third write; each time the test takes dlb<pid> down, lets
# the operation go into the dead link, and brings the link up after 2 or 5
# s: every frame of that operation is due while the link is down (the
# server's end loses its carrier meanwhile).  Each side captures its own
# frames (FI_DROCE_PCAP: stamped when they were due to leave) and tshark
# captures each veth end inbound (what really arrived, headers only).
#
# Asserts, for each session:
#  1. droce-xfer PASSes write and send (data, lengths, completions, guard
#     bytes checked by both sides) and the shutdown, both sides exit 0;
#  2. both ports saw the two outages (downs=2); the client re-created its
#     device each time (recreated=2: its interface was down), the server
#     kept its own (recreated=0: only its carrier was lost, no send failed);
#     the client held frames and dropped stale ones; held = held_sent +
#     stale + held_overflow + held_at_close;
#  3. no frame older than the bound is on the wire: every RC frame each
#     side's peer received is in the sender's own capture, and arrived at
#     most DR_PORT_TX_STALE_NS (67 ms) + 50 ms after it was due (the 50 ms
#     absorb scheduling between droce's stamp and the kernel's send on a
#     loaded CI machine; a frame sent stale is seconds late);
#  4. the drop counters are what the capture implies: every RC frame of a
#     queue pair carries the next IPv4 ID (dr_qp_desc), so the IDs missing
#     between consecutive frames on the wire are the frames the port
#     dropped: stale + held_overflow - dropped_arp + ring_discarded +
#     held_at_close + tx_dropped + tx_nombuf + arp_queue_dropped, exactly.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns, no tshark), 99 hard
# error.  Captures and logs are kept in $top_builddir/netns-linkflap.d on
# failure.  Takes about 40 s.

set -u

. "$(dirname "$0")/netns-lib.sh"
built "$XFER"
ns_pair_names drlf dl 10.79
BOUND_MS=67 # DR_PORT_TX_STALE_NS, include/dr_port.h
SLACK_MS=50
command -v ethtool >/dev/null 2>&1 || skip "ethtool not found (Debian package ethtool)"
ns_pair_up netns-linkflap "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
# droce's UDP GSO super-frames cut by the kernel before the veth (as before
# a NIC without the offload): the inbound captures then hold every frame
# with its own IPv4 ID, which point 4 counts
ip netns exec "$NSA" ethtool -K "$VA" tx-udp-segmentation off >/dev/null &&
	ip netns exec "$NSB" ethtool -K "$VB" tx-udp-segmentation off >/dev/null ||
	hard "ethtool -K tx-udp-segmentation off refused"
keep_on_fail . netns-linkflap.d
echo "topology: $NSA/$VA $IPA (server) <-> $NSB/$VB $IPB (client, its link is faulted)"

# droce's warnings (link down/up, the counters at close) in the logs
FI_LOG_LEVEL=warn
export FI_LOG_LEVEL

wait_line() { # file regex seconds
	j=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		j=$((j + 1))
		[ $j -le $(($3 * 100)) ] || return 1
		sleep 0.01
	done
}

# The RC frames sent by one address, in capture order:
# time, IPv4 ID (decimal), PSN, opcode
rc_frames() { # pcap src_ip
	timeout -k 5 60 "$TSHARK" -n -r "$1" -Y "ip.src == $2 && udp.dstport == 4791 &&
		infiniband.bth.destqp != 1" -T fields -E separator=/t -e frame.time_epoch \
		-e ip.id -e infiniband.bth.psn -e infiniband.bth.opcode 2>/dev/null |
		awk -F'\t' 'function hex(s,  i, v, c) {
			s = tolower(s); sub(/^0x/, "", s); v = 0
			for (i = 1; i <= length(s); i++) {
				c = index("0123456789abcdef", substr(s, i, 1)) - 1
				v = v * 16 + c
			}
			return v
		}
		{ print $1, hex($2), $3, $4 }'
}

# counter NAME FILE: a field of droce's "link faults:" line at close
counter() {
	sed -n "s/.*link faults:.* $1=\([0-9]*\).*/\1/p" "$2" | head -n 1
}

# check_side LABEL SENDER_LOG SENDER_PCAP WIRE_PCAP SENDER_IP
check_side() {
	label=$1 log=$2 own=$3 wire=$4 src=$5
	rc_frames "$own" "$src" >"$tmp/own.txt"
	rc_frames "$wire" "$src" >"$tmp/wire.txt"
	# matched unmatched max_delay_ms missing_ids repeated_ids
	set -- $(awk -v own="$tmp/own.txt" '
		BEGIN {
			while ((getline l < own) > 0) {
				split(l, f, " ")
				due[f[2] ":" f[3] ":" f[4]] = f[1]
			}
		}
		{
			k = $2 ":" $3 ":" $4
			if (n++) {
				d = ($2 - prev + 65536) % 65536
				if (d == 0) rep++; else miss += d - 1
			}
			prev = $2
			if (!(k in due)) { unm++; next }
			m++; lag[m] = $1 - due[k]
			if (m == 1 || lag[m] < off) off = lag[m]
		}
		END {
			for (i = 1; i <= m; i++) if (lag[i] - off > mx) mx = lag[i] - off
			printf "%d %d %.1f %d %d\n", m, unm, mx * 1000, miss, rep
		}' "$tmp/wire.txt")
	matched=$1 unmatched=$2 maxd=$3 missing=$4 repeated=$5
	l_stale=$(counter stale "$log")
	l_over=$(counter held_overflow "$log")
	l_arp=$(counter dropped_arp "$log")
	l_ring=$(counter ring_discarded "$log")
	l_close=$(counter held_at_close "$log")
	l_drop=$(counter tx_dropped "$log")
	l_nombuf=$(counter tx_nombuf "$log")
	l_arpq=$(counter arp_queue_dropped "$log")
	if [ -z "$l_stale" ]; then
		echo "FAIL: $label: no 'link faults:' line in the log"
		fail=1
		return
	fi
	dropped=$((l_stale + l_over - l_arp + l_ring + l_close + l_drop + l_nombuf + l_arpq))
	echo "$label: $matched RC frames on the wire, latest ${maxd} ms after due" \
		"(bound $BOUND_MS ms + $SLACK_MS ms); IPv4 IDs missing on the wire: $missing;" \
		"dropped by the port: $dropped (stale $l_stale, held_overflow $l_over," \
		"of them ARP $l_arp, ring_discarded $l_ring, held_at_close $l_close," \
		"tx_dropped $l_drop, tx_nombuf $l_nombuf, arp_queue_dropped $l_arpq)"
	if [ "$matched" -lt 1000 ] || [ "$unmatched" -ne 0 ] || [ "$repeated" -ne 0 ]; then
		echo "FAIL: $label: $matched frames matched with the sender's capture, $unmatched" \
			"not in it, $repeated repeated IPv4 IDs"
		fail=1
	fi
	if awk -v d="$maxd" -v b=$((BOUND_MS + SLACK_MS)) 'BEGIN { exit !(d > b) }'; then
		echo "FAIL: $label: a frame arrived ${maxd} ms after it was due (bound" \
			"$BOUND_MS ms + $SLACK_MS ms)"
		fail=1
	fi
	if [ "$missing" -ne "$dropped" ]; then
		echo "FAIL: $label: $missing frames missing on the wire, the port counted $dropped"
		fail=1
	fi
}

# session DOWN_SECONDS
session() {
	down=$1 s=$tmp/s$1
	mkdir "$s"
	cap_start "$NSA" "$VA" "$s/wire-a.pcapng" -f inbound -s 128 -B 64
	cap_start "$NSB" "$VB" "$s/wire-b.pcapng" -f inbound -s 128 -B 64
	cap_wait "$s/wire-a.pcapng" "$s/wire-b.pcapng"
	port=$((47700 + down))
	ip netns exec "$NSA" env FI_DROCE_PCAP="$s/own-a.pcapng" timeout -k 5 60 "$XFER" -p droce \
		-P $port -w 30 -t 30 >"$s/server.log" 2>&1 &
	spid=$!
	wait_listen "$NSA" $port || hard "the droce-xfer server never listened on TCP $port"
	ip netns exec "$NSB" env FI_DROCE_PCAP="$s/own-b.pcapng" timeout -k 5 60 "$XFER" -p droce \
		-s "$IPA" -P $port -o write,send -S 1m -I 6 -t 30 -v -W "2:$s/gate" \
		>"$s/client.log" 2>&1 &
	cpid=$!
	# droce-xfer runs send, then write
	for op in send write; do
		if ! wait_line "$s/client.log" "$op 1048576 B iteration 2: held" 30; then
			echo "FAIL: ${down} s: the client was not held before its third $op"
			fail=1
			break
		fi
		ip -n "$NSB" link set "$VB" down
		rm -f "$s/gate"
		echo "${down} s: $VB down before the third $op, for ${down} s"
		sleep "$down"
		t=$(date +%s%N)
		ip -n "$NSB" link set "$VB" up
		t=$((($(date +%s%N) - t) / 1000000))
		# a busy RTNL (other namespaces' set-up elsewhere on the host)
		# once held this for 11 s: the outage then outlasts the retries
		[ $t -lt 1000 ] || echo "note: ${down} s: 'ip link set $VB up' took $t ms:" \
			"the outage was that much longer than meant"
	done
	wait $cpid
	crc=$?
	wait $spid
	src=$?
	cap_stop
	veth_wait_up "$NSA" "$VA" "$NSB" "$VB"
	for side in a b; do
		drops=$(cap_drops "$s/wire-$side.pcapng")
		if [ -n "$drops" ] && [ "$drops" -ne 0 ]; then
			echo "FAIL: ${down} s: tshark lost $drops frames on side $side: the counts" \
				"below cannot be checked"
			fail=1
		fi
	done
	grep -h 'link of\|PASS\|FAIL\|link faults' "$s/client.log" | sed "s/^/${down} s client: /" |
		sed 's/libfabric:[0-9]*:[0-9]*::droce:[a-z]*:port_log():[0-9]*<warn> //'
	grep -h 'link of\|link faults' "$s/server.log" | sed "s/^/${down} s server: /" |
		sed 's/libfabric:[0-9]*:[0-9]*::droce:[a-z]*:port_log():[0-9]*<warn> //'
	for f in client server; do
		if [ $f = client ]; then rc=$crc; else rc=$src; fi
		if [ "$rc" -ne 0 ] || ! grep -q '^PASS write 1048576 B x6' "$s/$f.log" ||
			! grep -q '^PASS send 1048576 B x6' "$s/$f.log" ||
			! grep -q '^PASS shutdown' "$s/$f.log"; then
			echo "FAIL: ${down} s: droce-xfer $f exit $rc (124: timed out):"
			tail -n 15 "$s/$f.log"
			fail=1
		fi
		log=$s/$f.log
		# the client's interface went down: its socket carries the
		# kernel's error, the device is re-created; the server's only
		# lost its carrier and sent nothing meanwhile: kept
		if [ $f = client ]; then rec=2; else rec=0; fi
		for kv in downs=2 recreated=$rec recreate_failed=0; do
			v=$(counter "${kv%=*}" "$log")
			if [ "$v" != "${kv#*=}" ]; then
				echo "FAIL: ${down} s: $f: ${kv%=*} is '${v}', expected ${kv#*=}"
				fail=1
			fi
		done
		held=$(counter held "$log") hs=$(counter held_sent "$log")
		st=$(counter stale "$log") ov=$(counter held_overflow "$log")
		hc=$(counter held_at_close "$log")
		if [ -n "$held" ] && [ "$held" -ne $((hs + st + ov + hc)) ]; then
			echo "FAIL: ${down} s: $f: held $held != held_sent $hs + stale $st +" \
				"held_overflow $ov + held_at_close $hc"
			fail=1
		fi
		if [ $f = client ] && { [ -z "$st" ] || [ "$st" -lt 2 ]; }; then
			echo "FAIL: ${down} s: the client dropped '${st}' stale frames: the" \
				"operations were not sent into the dead link"
			fail=1
		fi
	done
	check_side "${down} s, client -> server" "$s/client.log" "$s/own-b.pcapng" \
		"$s/wire-a.pcapng" "$IPB"
	check_side "${down} s, server -> client" "$s/server.log" "$s/own-a.pcapng" \
		"$s/wire-b.pcapng" "$IPA"
	# the payload-sized captures are not worth keeping
	[ $fail -ne 0 ] || rm -f "$s"/own-*.pcapng
}

session 2
session 5
echo "total $(elapsed)s"
[ $fail -eq 0 ] || exit 1
echo "PASS: netns-linkflap"
exit 0
