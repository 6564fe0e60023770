#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-multiproc.sh - many droce processes on one interface (issue 12).
#
#   netns drmp<pid>a: dma<pid> 10.79.N.1/24 ==veth== dmb<pid> 10.79.N.2/24 :netns drmp<pid>b
#   5 droce-xfer servers (control ports P+1..P+5)      5 droce-xfer clients
#
# Every process runs droce on its namespace's one interface with the
# defaults (net_af_packet: each one's packet socket sees every frame of the
# others on its side); each server listens on an ephemeral rdma_cm port,
# unique through the registry (src/fi/registry.c).  Server 1 starts first
# and so holds the CM responder role of its side.  Clients 1-4 run every
# operation at once.  Client 1 stops itself at its first operation (-W
# 1:gate); the script kills server 1 with SIGKILL, lets client 1 go on,
# and makes two connects (tests/mp-connect) to ports nobody listens on:
# the killed server's, and one never used.  Server 5 stands by meanwhile,
# so that the interface has droce processes whenever clients 2-4 finish;
# then client 5 runs a short plan with it.
#
# Asserts:
#  1. clients 2-5 and servers 2-5 PASS every operation (data verified,
#     droce-xfer's "0 failed") and exit 0; the servers' ports are distinct;
#  2. client 1 ends with a clean error: exit 1 (not a timeout, not a
#     signal) with a reason;
#  3. each mp-connect is refused (FI_ECONNREFUSED: a REJ came), and one
#     of servers 2-5 took the CM responder role over from the killed
#     server 1 (its log says so);
#  4. on the wire (tshark at both ends, capture filter: MADs to QP1 and
#     ICMP unreachable): every REQ's transaction is answered exactly once
#     (as many REP+REJ as REQs, per TID) and every DREQ's exactly once
#     (DREPs per TID) -- no process answers for another, and the MADs for
#     nobody (client 1's DREQ to the dead server, the two REQs) get one
#     answer each (one per copy of the REQ); the two connects' transactions
#     refused "invalid service ID" (reason 8); the
#     QPNs the REQs and REPs announce are all distinct; no ICMP port
#     unreachable (the survivors still hold UDP 4791 in the kernel);
#  5. the survivors' logs (FI_LOG_LEVEL=info) show no warning of frames a
#     correct peer does not send; server 5's shows frames left to other
#     processes' QPs (it was up all the while clients 2-4 ran, and the
#     servers run with FI_DROCE_RX_FILTER=0: every process sees the other
#     servers' traffic); and clients 1-4 run with the default: those of
#     clients 2-4 that never held B's CM responder role (at least 2) left
#     no frame to other processes' QPs, the kernel's socket filter kept
#     them out (port_pk.c);
#  6. the registry file exists while the processes run and is gone once
#     the last process of the namespace has closed.
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / tshark), 99 hard
# error.  About 15-40 s.

set -u

. "$(dirname "$0")/netns-lib.sh"
CONNECT=$top_builddir/tests/mp-connect
built "$XFER" "$CONNECT"
ns_pair_names drmp dm 10.79
CPORT=$((47700 + $$ % 100 * 10))
PLAN="-S 0,1,1023,4096,65536,1m -I 3"
# ---- topology ---------------------------------------------------------------------

ns_pair_up netns-multiproc "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
echo "topology: $NSA/$VA $IPA <-> $NSB/$VB $IPB"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- capture: the CM's MADs (BTH DestQP 1) and ICMP unreachable at each end ------
#
# A capture on either end sees both directions (droce sends through the
# qdisc layer, FI_DROCE_QDISC_BYPASS=0, where the packet taps are; the
# kernel's ICMP always was), so each frame is counted at the end it
# arrives at (ip.dst), once.  (With "inbound" in the filter, libpcap
# missed the first MADs of a run.)

filter='(udp dst port 4791 and udp[13:2] = 0 and udp[15] = 1) or (icmp and icmp[0] = 3)'
cap_start "$NSA" "$VA" "$tmp/a.pcapng" -f "$filter"
cap_start "$NSB" "$VB" "$tmp/b.pcapng" -f "$filter"
cap_wait "$tmp/a.pcapng" "$tmp/b.pcapng"
keep_on_fail a.pcapng netns-multiproc-a.pcapng
keep_on_fail b.pcapng netns-multiproc-b.pcapng
for i in 1 2 3 4 5 6; do keep_on_fail s$i.log netns-multiproc-s$i.log; done

# ---- four servers in A, four clients in B ---------------------------------------------

# the servers without the socket filter (FI_DROCE_RX_FILTER=0), the
# clients with it (the default)
xfer_log=$XFER_LOG
XFER_LOG="$XFER_LOG FI_DROCE_RX_FILTER=0"
mp_server "$NSA" 1
s1_pid=$mp_pid
spids=""
for i in 2 3 4 5; do
	mp_server "$NSA" $i
	spids="$spids $mp_pid"
done
XFER_LOG=$xfer_log
reg_a=$(sed -n "s|.*$VA: registry \([^ ]*\).*|\1|p" "$tmp/s1.log" | head -n 1)
[ -n "$reg_a" ] && [ -e "$reg_a" ] || bad "server 1 names no registry file ($reg_a)"
grep -q "registry $reg_a (CM responder)" "$tmp/s1.log" ||
	bad "server 1, the first on $VA, does not hold the CM responder role"
echo "registry of $VA: $reg_a"
s1_port=$(sed -n 's/.*listening at [0-9.]*:\([0-9]*\).*/\1/p' "$tmp/s1.log" | head -n 1)
ports=$(sed -n 's/.*listening at [0-9.]*:\([0-9]*\).*/\1/p' "$tmp/s"[1-5].log | sort -u)
[ "$(echo $ports | wc -w)" -eq 5 ] || bad "the five servers' rdma_cm ports are not distinct: $ports"
echo "servers listening on rdma_cm ports" $ports

t_start=$(date +%s)
# clients 1-4 with the socket filter (the default)
mp_client "$NSB" 1 90 $PLAN -t 5 -W "1:$tmp/gate"
c1_pid=$mp_pid
cpids=""
for i in 2 3 4; do
	mp_client "$NSB" $i 90 $PLAN -t 10
	cpids="$cpids $mp_pid"
done

# client 1 is connected and at its first operation: kill its server
gate_wait "$c1_pid"
kill -0 $s1_pid 2>/dev/null || bad "server 1 died before it was killed"
kill -KILL $s1_pid
wait $s1_pid
s1_rc=$?
echo "server 1 (PID $s1_pid) killed with SIGKILL after $(($(date +%s) - t_start)) s:" \
	"exit status $s1_rc"
rm -f "$tmp/gate"

# nobody listens on the killed server's port now, nor on this one: each
# REQ must get exactly one REJ, from another process than server 1
unused=$((s1_port ^ 0x2000))
for p in $s1_port $unused; do
	if ip netns exec "$NSB" timeout -k 5 30 "$CONNECT" "$IPA" $p 10 >"$tmp/conn$p.log" 2>&1; then
		echo "connect to $IPA port $p: $(cat "$tmp/conn$p.log")"
	else
		bad "connect to $IPA port $p, where nobody listens, was not refused:"
		cat "$tmp/conn$p.log"
	fi
done

# server 5 stood by so that the interface keeps a droce process for the
# connects above, whenever the others finish; now it gets its client
mp_finish "$NSB"
# server 5 is up before clients 2-4 start and stays until after they end:
# it must have seen their traffic.  Servers 2-4 live only as long as their
# own client, which under load may run before the others send anything
# (seen: s3 0 frames, s2 and s4 ~20,000 each), so theirs are printed.
for f in s2 s3 s4 s5; do
	n=$(sed -n 's/.* left \([0-9]*\) frames to the other processes.*/\1/p' "$tmp/$f.log")
	echo "$f: left ${n:-0} frames to other processes' QPs"
	if [ $f = s5 ] && { [ -z "$n" ] || [ "$n" -eq 0 ]; }; then
		bad "$f: no frame left to the other servers' QPs (it was up while clients 2-4 ran)"
	fi
done
# Clients 2-4 run at once, filtered (the default): only B's CM
# responder (client 1 until it ends, then whichever meets a MAD for nobody)
# sees every frame; the others' sockets let in only their own QPs' frames,
# MADs and what is not RoCE (without the filter each left ~20,000 frames).
filtered=0
for f in c2 c3 c4; do
	n=$(sed -n 's/.* left \([0-9]*\) frames to the other processes.*/\1/p' "$tmp/$f.log")
	if grep -q 'now answers CM MADs nobody owns' "$tmp/$f.log"; then
		echo "$f: left ${n:-0} frames to other processes' QPs (held the CM responder role)"
		continue
	fi
	echo "$f: left ${n:-0} frames to other processes' QPs (socket filter, the default)"
	[ "${n:-0}" -eq 0 ] || bad "$f: its socket let in $n frames for other processes' QPs"
	filtered=$((filtered + 1))
done
[ $filtered -ge 2 ] || bad "only $filtered of clients 2-4 never held the CM responder role"
# one at a time (a byte lock); a survivor that took it over and finished
# passes it on to the next that needs it
n=$(cat "$tmp/s"[2-5].log | grep -c 'now answers CM MADs nobody owns')
[ "$n" -ge 1 ] || bad "no survivor took the CM responder role over from server 1"
echo "the CM responder role passed $n time(s) among the survivors"

# ---- a MAD that waited too long: not answered for nobody ----------------------------
# Server 6, alone on A now, holds the responder role.  It is stopped
# (SIGSTOP) for 1 s, longer than the registry's grace of 0.2 s, while a
# connect's first REQ to a port nobody listens on waits in its ring.  Run
# again, it leaves that copy unanswered (an owner may have answered it and
# died since: kill -9 lets go of everything at once, which is how server
# 1's own REQs once drew a second answer); the CM's next copy, 4 s later,
# is young, and refused.
mp_server "$NSA" 6
s6_pid=$mp_pid
kill -STOP "$s6_pid"
stale=$((s1_port ^ 0x1000))
ip netns exec "$NSB" timeout -k 5 30 "$CONNECT" "$IPA" $stale 15 "$tmp/req-sent" \
	>"$tmp/conn$stale.log" 2>&1 &
cs_pid=$!
# its REQ is on its way once fi_connect returned (mp-connect's start-up
# takes seconds on a loaded host); then the scenario: a process off its
# CPU for longer than the grace
w=0
while [ ! -e "$tmp/req-sent" ] && [ $w -lt 300 ] && kill -0 $cs_pid 2>/dev/null; do
	sleep 0.1
	w=$((w + 1))
done
[ -e "$tmp/req-sent" ] || bad "mp-connect never got its REQ out ($((w / 10)) s)"
sleep 1
kill -CONT "$s6_pid"
if wait $cs_pid; then
	echo "connect to $IPA port $stale (server 6 stopped 1 s): $(cat "$tmp/conn$stale.log")"
else
	bad "connect to $IPA port $stale, where nobody listens, was not refused:"
	cat "$tmp/conn$stale.log"
fi
mp_client "$NSB" 6 30 -o write -S 4096 -I 1 -t 10
xfer_wait c 6 $mp_pid
xfer_wait s 6 $s6_pid
n=$(sed -n 's/.* left \([0-9]*\) CM MADs for nobody unanswered.*/\1/p' "$tmp/s6.log")
if [ "${n:-0}" -ge 1 ]; then
	echo "ok: server 6 left $n CM MAD(s) for nobody unanswered: older than the grace"
else
	bad "server 6 answered (or never saw) the REQ that waited 1 s in its ring"
	tail -n 20 "$tmp/s6.log"
fi

# ---- the registries are gone -------------------------------------------------------------

if [ -n "$reg_a" ] && [ -e "$reg_a" ]; then
	bad "registry $reg_a still exists after every process on $VA closed"
fi
left=$(ls /run/droce /dev/shm/droce 2>/dev/null | grep -c "^d[ms][ab]$$@") || true
[ "$left" -eq 0 ] || bad "registry files of this run left behind: $left"

# ---- the wire ---------------------------------------------------------------------------

cap_stop
fields() { # file filter fields...
	f=$1
	flt=$2
	shift 2
	args=""
	for e in "$@"; do
		args="$args -e $e"
	done
	timeout -k 5 60 "$TSHARK" -n -r "$f" -Y "$flt" -T fields -E separator=/t $args 2>/dev/null
}
# what arrived at each end
fields "$tmp/a.pcapng" "infiniband.mad && ip.dst == $IPA" infiniband.mad.attributeid \
	infiniband.mad.transactionid infiniband.cm.rej.reason infiniband.cm.rep.localqpn \
	infiniband.cm.rep.startpsn >"$tmp/mads.txt"
fields "$tmp/b.pcapng" "infiniband.mad && ip.dst == $IPB" infiniband.mad.attributeid \
	infiniband.mad.transactionid infiniband.cm.rej.reason infiniband.cm.rep.localqpn \
	infiniband.cm.rep.startpsn >>"$tmp/mads.txt"
n_icmp=$({
	fields "$tmp/a.pcapng" "icmp.type == 3 && icmp.code == 3 && ip.dst == $IPA" frame.number
	fields "$tmp/b.pcapng" "icmp.type == 3 && icmp.code == 3 && ip.dst == $IPB" frame.number
} | wc -l)
count() { awk -F '\t' -v a="$1" '$1 == a' "$tmp/mads.txt" | wc -l; }
echo "tshark: MADs: REQ $(count 0x0010) REP $(count 0x0013) RTU $(count 0x0014)" \
	"REJ $(count 0x0012) DREQ $(count 0x0015) DREP $(count 0x0016) MRA $(count 0x0011);" \
	"ICMP port unreachable $n_icmp"
# Per transaction, one process answers: a REQ gets REPs of one connection
# (one QPN and start PSN; a REP is resent when its RTU does not come) or at
# most one REJ per copy of the REQ (a REJ is never resent: a second REJ
# for one REQ would be a second process's); a DREQ at most one DREP per
# copy.  At least one answer each.  (A copy may go unanswered: a process
# that has not polled for a while loses frames when its packet socket's
# ring fills with the other processes' traffic; the sender resends.)
awk -F '\t' '
	$1 == "0x0010" { req[$2]++ }
	$1 == "0x0012" { rej[$2]++ }
	$1 == "0x0013" { rep[$2]++; if (!($2 in who)) who[$2] = $4 "/" $5;
			 else if (who[$2] != $4 "/" $5) two[$2] = 1 }
	$1 == "0x0015" { dreq[$2]++ } $1 == "0x0016" { drep[$2]++ }
	END {
		for (t in req) {
			if (rej[t] && rep[t]) print "REQ tid " t ": both REP and REJ"
			else if (!rej[t] && !rep[t]) print "REQ tid " t ": no answer"
			else if (rej[t] > req[t]) print "REQ tid " t ": " req[t] " REQ, " rej[t] " REJ"
			if (t in two) print "REQ tid " t ": REPs of two connections"
		}
		for (t in rej) if (!(t in req)) print "tid " t ": REJ for no REQ"
		for (t in rep) if (!(t in req)) print "tid " t ": REP for no REQ"
		for (t in dreq)
			if (!drep[t] || drep[t] > dreq[t])
				print "DREQ tid " t ": " dreq[t] " DREQ, " drep[t] + 0 " DREP"
		for (t in drep) if (!(t in dreq)) print "tid " t ": DREP for no DREQ"
	}' "$tmp/mads.txt" >"$tmp/unmatched.txt"
if [ -s "$tmp/unmatched.txt" ]; then
	bad "MADs not answered exactly once:"
	cat "$tmp/unmatched.txt"
else
	echo "ok: every REQ and DREQ answered by one process, no MAD answered twice"
fi
# the two connects: each transaction refused with "invalid service ID";
# with the check above, at most one REJ per copy of its REQ (a copy the
# host missed while the responder role changed hands is resent by the CM,
# and that copy is answered too, as the kernel CM answers every REQ)
n_rej8=$(awk -F '\t' '$1 == "0x0012" && $3 ~ /^(0x0*)?8$/ { print $2 }' "$tmp/mads.txt" |
	sort -u | wc -l)
[ "$n_rej8" -eq 3 ] ||
	bad "$n_rej8 transactions refused 'invalid service ID' on the wire, 3 expected (one per connect)"
[ "$(count 0x0010)" -ge 9 ] || bad "only $(count 0x0010) REQs on the wire, 9 at least expected"
[ "$n_icmp" -eq 0 ] || bad "$n_icmp ICMP port unreachable on the wire"
# a resent REQ or REP repeats its transaction: one QPN per transaction
qpns=$(for s in a b; do
	fields "$tmp/$s.pcapng" 'infiniband.mad.attributeid == 0x0010' \
		infiniband.mad.transactionid infiniband.cm.req.localqpn
	fields "$tmp/$s.pcapng" 'infiniband.mad.attributeid == 0x0013' \
		infiniband.mad.transactionid infiniband.cm.rep.localqpn
done | sort -u | awk '{ print $2 }')
dup=$(echo "$qpns" | sort | uniq -d | tr '\n' ' ')
[ -z "$dup" ] || bad "QPNs announced by two connections: $dup"
echo "tshark: $(echo "$qpns" | wc -l) QPNs announced in REQs and REPs, all distinct"

[ $fail -eq 0 ] && echo "PASS: 5 servers and 5 clients on one interface each, a kill -9, one answer per MAD"
exit $fail
