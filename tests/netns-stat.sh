#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-stat.sh - the live counters (DPDK telemetry, read by droce-stat)
# of two running droce-xfer processes say what their captures show
# (issue 15, point 2).
#
#   netns drst<pid>a: dsa<pid> N.1/24 ==veth== pa-br0-pb ==veth== dsb<pid> N.2/24 :netns drst<pid>b
#                                     (netns drst<pid>r, nftables)
#
# droce-xfer server in A, client in B (send and write, 4 KiB and 64 KiB,
# path MTU 1024), each with FI_DROCE_PCAP (droce's own capture: every frame
# it sent and every frame it received, in the order it counted them).  A
# and B meet on a bridge in a third namespace, whose nftables drop every
# 20th full-size RoCE frame from B (data, not the CM's MADs), so A's
# responder sees PSN gaps (NAK sequence errors) and B's requester
# resends.  Both processes stop after their tests, before the
# disconnect (droce-xfer -H FIFO: a FIFO handshake, no sleeps), with their
# connection, QPs and counters standing and nothing on the wire.  Then,
# for each process, droce-stat's numbers equal the tshark counts of its
# own capture, exactly:
#   port: sent_pkts = RoCE frames it sent; rcvd_pkts = RoCE frames it
#         received (all for its address: none is refused);
#   qp:   sent_pkts / rcvd_pkts = those of its connection's QPNs;
#         out_of_seq_request (A) = NAKs "PSN sequence error" A sent;
#         rcvd_seq_err (B) = those NAKs in B's capture;
#         tx_resent_pkts (B) = request packets B sent with a PSN it had
#         sent already (go-back-N), and > 0 (the loss did happen);
#         duplicate_request (A) = requests A received behind the PSN it
#         expected, replaying A's responder PSN rule over its capture;
#         state RTS, dest_qpn = the peer's QPN.
# Also: dpdk-telemetry-style raw access works (the socket answers "/"
# with the /droce commands), droce-stat -p of a process without droce
# fails cleanly, and the runtime directories (the sockets) go with the
# processes; one a process killed by SIGKILL left is removed by the next
# droce process to start.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / tshark / nft),
# 99 hard error.

set -u

. "$(dirname "$0")/netns-lib.sh"
STAT=$top_builddir/tools/droce-stat
if ! command -v nft >/dev/null 2>&1; then
	# tools/install-deps.sh installs it: missing in CI is a failure
	[ "${CI:-}" != true ] || { echo "FAIL: nft not found, and CI=true"; exit 1; }
	skip "nft not found (Debian package nftables)"
fi
built "$STAT" "$XFER"
ns_pair_names drst ds 10.79
NSR=drst$$r
ns_frame netns-stat "$NSA" "$NSB" "$NSR"
keep_on_fail a.pcapng netns-stat-a.pcapng
keep_on_fail b.pcapng netns-stat-b.pcapng
ip -n "$NSR" link add br0 type bridge || hard "cannot create a bridge"
ip -n "$NSR" link set br0 up
for x in a b; do
	if [ $x = a ]; then ns=$NSA v=$VA a=$IPA; else ns=$NSB v=$VB a=$IPB; fi
	ip -n "$ns" link add "$v" type veth peer name "p$x" netns "$NSR" ||
		hard "cannot create veth pair $v/p$x"
	ip -n "$NSR" link set "p$x" master br0
	ip -n "$NSR" link set "p$x" mtu 1500 up
	ip -n "$ns" link set "$v" mtu 1500 up
	ip -n "$ns" addr add "$a/24" dev "$v"
	veth_wait_up "$ns" "$v" "$NSR" "p$x"
done
# every 20th full-size RoCE frame from B (data; not the CM's MADs, not ACKs)
ip netns exec "$NSR" nft -f - <<EOF || hard "nft failed"
table bridge drst {
	chain forward {
		type filter hook forward priority 0; policy accept;
		iifname "pb" ip length > 1000 udp dport 4791 numgen inc mod 20 == 19 counter drop
	}
}
EOF

mkfifo "$tmp/ha" "$tmp/hb" || hard "mkfifo failed"
port=47731
XFER_ARGS="-o send,write -S 4096,64k -I 20 -t 20"
# shellcheck disable=SC2086 # option lists
{
	xfer_env="FI_DROCE_PCAP=$tmp/a.pcapng"
	xfer_start "$NSA" 120 a -w 60 -H "$tmp/ha" $XFER_ARGS || exit 1
	ip netns exec "$NSB" env FI_DROCE_PCAP="$tmp/b.pcapng" timeout -k 5 120 "$XFER" \
		-p droce -P "$port" -s "$IPA" -H "$tmp/hb" $XFER_ARGS >"$tmp/b.cli" 2>&1 &
	xc_pid=$!
}

# "held PID" from each, in either order (each blocks until read)
held() { # fifo
	timeout 100 sh -c 'read -r w p <"$1" && [ "$w" = held ] && echo "$p"' sh "$1"
}
pid_b=$(held "$tmp/hb") || { tail -n 20 "$tmp/b.cli" "$tmp/a.srv"; hard "client never held"; }
pid_a=$(held "$tmp/ha") || { tail -n 20 "$tmp/b.cli" "$tmp/a.srv"; hard "server never held"; }
echo "held: server $pid_a, client $pid_b"

"$STAT" -a -q -p "$pid_a" >"$tmp/a.stat" 2>&1 || { cat "$tmp/a.stat"; bad "droce-stat -p $pid_a failed"; }
"$STAT" -a -q -p "$pid_b" >"$tmp/b.stat" 2>&1 || { cat "$tmp/b.stat"; bad "droce-stat -p $pid_b failed"; }
# every process found (other droce programs on the host may show too)
"$STAT" >"$tmp/all.stat" 2>&1
for p in "$pid_a" "$pid_b"; do
	grep -q "^link droce-$p/1 qps 1 sent_pkts " "$tmp/all.stat" ||
		{ cat "$tmp/all.stat"; bad "droce-stat without -p does not show $p"; }
done
# the commands' list, as dpdk-telemetry.py shows it on connecting
"$STAT" -p "$pid_a" -c / >"$tmp/list.txt" 2>&1 || { cat "$tmp/list.txt"; bad "droce-stat -c / failed"; }
# the captures, while both still hold (everything they counted is written)
for s in a b; do
	timeout -k 5 60 "$TSHARK" -n -r "$tmp/$s.pcapng" -Y 'udp.dstport == 4791' -T fields \
		-E separator=/t -e ip.src -e ip.dst -e infiniband.bth.opcode \
		-e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.aeth.syndrome \
		>"$tmp/$s.txt" 2>"$tmp/$s.terr" || { cat "$tmp/$s.terr"; hard "tshark cannot read $s.pcapng"; }
done
: >"$tmp/hb"
: >"$tmp/ha"
xfer_wait_rc=0
wait "$xc_pid" || xfer_wait_rc=$?
wait "$xs_pid" || xfer_wait_rc=$?
[ $xfer_wait_rc -eq 0 ] || { tail -n 20 "$tmp/b.cli" "$tmp/a.srv"; bad "droce-xfer failed"; }
echo "client: $(tail -n 1 "$tmp/b.cli")"
cat "$tmp/a.stat" "$tmp/b.stat"

# val FILE LINE-PREFIX NAME: the number after NAME on the line starting so
val() {
	awk -v p="$2" -v n="$3" 'index($0, p) == 1 { for (i = 1; i < NF; i++) if ($i == n) { print $(i + 1); exit } }' "$1"
}
expect() { # what got want
	if [ -z "$2" ] || [ "$2" != "$3" ]; then
		echo "FAIL: $1: droce-stat says '$2', the capture $3"
		fail=1
	else
		echo "ok: $1: $2"
	fi
}
# frames FILE SRC DST [QPN]: RoCE frames SRC -> DST (to that destination
# QP, which tshark writes 0x%06x)
frames() {
	awk -F'\t' -v s="$2" -v d="$3" -v q="${4:-}" \
		'$1 == s && $2 == d && (q == "" || $4 == q) { n++ } END { print n + 0 }' "$1"
}

grep -q '"/droce/qp"' "$tmp/list.txt" && grep -q '"/droce/ports"' "$tmp/list.txt" ||
	{ cat "$tmp/list.txt"; bad "the socket does not list the /droce commands"; }
qpn_a=$(awk '/^qp / { print $2; exit }' "$tmp/a.stat")
qpn_b=$(awk '/^qp / { print $2; exit }' "$tmp/b.stat")
[ -n "$qpn_a" ] && [ -n "$qpn_b" ] || bad "no qp line in droce-stat -q's output"
for s in a b; do
	if [ $s = a ]; then me=$IPA peer=$IPB myqp=${qpn_a:-0} peerqp=${qpn_b:-0} pid=$pid_a
	else me=$IPB peer=$IPA myqp=${qpn_b:-0} peerqp=${qpn_a:-0} pid=$pid_b; fi
	hmy=$(printf '0x%06x' "$myqp") hpeer=$(printf '0x%06x' "$peerqp")
	f=$tmp/$s.txt st=$tmp/$s.stat
	link="link droce-$pid/1 "
	expect "$s port sent_pkts" "$(val "$st" "$link" sent_pkts)" "$(frames "$f" "$me" "$peer")"
	expect "$s port rcvd_pkts" "$(val "$st" "$link" rcvd_pkts)" "$(frames "$f" "$peer" "$me")"
	q="qp $myqp "
	expect "$s qp state" "$(awk -v p="$q" 'index($0, p) == 1 { print $6 }' "$st")" RTS
	expect "$s qp dest_qpn" "$(val "$st" "$q" dest_qpn)" "$peerqp"
	expect "$s qp sent_pkts" "$(val "$st" "$q" sent_pkts)" \
		"$(frames "$f" "$me" "$peer" "$hpeer")"
	expect "$s qp rcvd_pkts" "$(val "$st" "$q" rcvd_pkts)" "$(frames "$f" "$peer" "$me" "$hmy")"
done
# AETH syndrome 0x60 (tshark writes it in decimal): NAK, PSN sequence
# error (IBA table 43)
naks() { # file src dst
	awk -F'\t' -v s="$2" -v d="$3" '$1 == s && $2 == d && $6 == 96 { n++ } END { print n + 0 }' "$1"
}
expect "A out_of_seq_request" "$(val "$tmp/a.stat" "qp $qpn_a " out_of_seq_request)" \
	"$(naks "$tmp/a.txt" "$IPA" "$IPB")"
expect "B rcvd_seq_err" "$(val "$tmp/b.stat" "qp $qpn_b " rcvd_seq_err)" \
	"$(naks "$tmp/b.txt" "$IPA" "$IPB")"
# requests: RC opcodes other than READ responses and ACKs (13..18)
resent=$(awk -F'\t' -v s="$IPB" '$1 == s && $3 < 32 && ($3 < 13 || $3 > 18) {
	if ($5 in seen) n++; seen[$5] = 1 } END { print n + 0 }' "$tmp/b.txt")
expect "B tx_resent_pkts" "$(val "$tmp/b.stat" "qp $qpn_b " tx_resent_pkts)" "$resent"
[ "$resent" -gt 0 ] || { echo "FAIL: no resend: the loss did not happen"; fail=1; }
# A's responder (SEND/WRITE: one PSN per packet): a request at the
# expected PSN advances it, one behind it is a duplicate, one ahead is
# dropped; the first expected PSN is the first request's (none is lost:
# the CM is not RoCE RC)
dups=$(awk -F'\t' -v s="$IPB" '$1 == s && $3 < 32 && ($3 < 13 || $3 > 18) {
	p = $5 + 0
	if (!started) { e = p; started = 1 }
	d = (p - e + 16777216) % 16777216
	if (d == 0) e = (e + 1) % 16777216
	else if (d >= 8388608) n++
	} END { print n + 0 }' "$tmp/a.txt")
expect "A duplicate_request" "$(val "$tmp/a.stat" "qp $qpn_a " duplicate_request)" "$dups"

# droce-stat on a process that is not droce: a clear error, exit 1
"$STAT" -p $$ >"$tmp/none.txt" 2>&1 && { bad "droce-stat -p $$ (a shell) succeeded"; }
grep -q "no telemetry socket of droce process $$" "$tmp/none.txt" ||
	{ cat "$tmp/none.txt"; bad "droce-stat -p of a non-droce process: no clear error"; }
# the runtime directories went with the processes
for p in "$pid_a" "$pid_b"; do
	[ ! -e "/var/run/dpdk/droce-$p" ] || bad "/var/run/dpdk/droce-$p left behind"
done

# a process killed by a signal leaves its socket (no exit handler runs):
# droce-stat passes it over, the next droce process to start removes it
ip netns exec "$NSA" "$XFER" -p droce -P $((port + 1)) -w 60 >"$tmp/k.log" 2>&1 &
k_pid=$!
wait_listen "$NSA" $((port + 1)) || hard "the server to kill never listened"
[ -S "/var/run/dpdk/droce-$k_pid/dpdk_telemetry.v2" ] || bad "no socket for $k_pid"
kill -KILL "$k_pid"
wait "$k_pid" 2>/dev/null
[ -S "/var/run/dpdk/droce-$k_pid/dpdk_telemetry.v2" ] || bad "the killed $k_pid left nothing?"
"$STAT" -p "$k_pid" >"$tmp/k.stat" 2>&1 && bad "droce-stat -p $k_pid (killed) succeeded"
ip netns exec "$NSA" env FI_LOG_LEVEL=info FI_LOG_PROV=droce timeout -k 5 30 "$XFER" -p droce \
	-P $((port + 2)) -w 1 >"$tmp/n.log" 2>&1
# (under a parallel make check another test's droce process may start first
# and be the one that removes it: only droce removes droce-PID directories)
if [ -e "/var/run/dpdk/droce-$k_pid" ]; then
	grep -i 'telemetry\|removed' "$tmp/n.log"
	bad "the killed process's directory stayed"
elif grep -q "removed /var/run/dpdk/droce-$k_pid, left by a droce process killed" "$tmp/n.log"; then
	echo "ok: the next droce process removed /var/run/dpdk/droce-$k_pid"
else
	echo "ok: /var/run/dpdk/droce-$k_pid removed (by another droce process that started first)"
fi

[ $fail -eq 0 ] || exit 1
echo "PASS: netns-stat"
exit 0
