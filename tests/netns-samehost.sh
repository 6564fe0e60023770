#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-samehost.sh - droce processes on one host reach each other (issue 12):
# servers and clients in ONE namespace on one interface, over the host-local
# wire (src/fi/local.c), never over the veth.
#
#   netns drsh<pid>a: dsa<pid> 10.78.N.1/24 ==veth== dsb<pid> 10.78.N.2/24 :netns drsh<pid>b
#   4 droce-xfer servers and 4 droce-xfer clients, all in A, all to 10.78.N.1
#
# Server 1 starts first and takes slot 0 of the wire.  Clients 1-4 run
# every operation at once (data verified).  Clients 2-4 stop once at their
# first operation (-G), until the slots are checked.  Client 1 stops itself
# at its first operation (-W 1:gate); the script kills server 1 with SIGKILL and
# lets client 1 go on while clients 2-4 go on; a connect (tests/mp-connect)
# to the dead server's port must be refused.  Then server 5 starts -- it
# takes the dead server's slot -- and client 5 runs a short plan with it.
#
# Asserts:
#  1. clients 2-5 and servers 2-5 PASS every operation (droce-xfer's "0
#     failed") and exit 0; client 1 ends with a clean error (exit 1 with a
#     reason, not a timeout nor a signal);
#  2. every process joined the wire (its log names the wire file and its
#     slot); the eight slots held at once are distinct; server 5 took the
#     killed server 1's slot (a reused slot) and served client 5;
#  3. the connect to the dead server's port is refused: its capture
#     (FI_DROCE_PCAP) holds at least one REJ "invalid service ID" and at
#     most one per REQ it sent (one process answers);
#  4. the survivors' logs show frames received from the wire and no
#     warning of frames a correct peer does not send;
#  5. nothing of it went over the veth: tshark on the far end sees no
#     RoCEv2 frame (UDP 4791) at all;
#  6. the registry and the wire file exist while the processes run and are
#     gone once the last one has closed.
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / tshark), 99 hard
# error.  About 15-40 s.

set -u

. "$(dirname "$0")/netns-lib.sh"
CONNECT=$top_builddir/tests/mp-connect
built "$XFER" "$CONNECT"
ns_pair_names drsh ds 10.78
CPORT=$((46700 + $$ % 100 * 10))
PLAN="-S 0,1,1023,4096,65536,1m -I 3"
ns_pair_up netns-samehost "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
echo "topology: $NSA/$VA $IPA <-> $NSB/$VB $IPB; every droce process in $NSA"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# the far end: whatever RoCEv2 leaves the veth
cap_start "$NSB" "$VB" "$tmp/b.pcapng" -f 'udp port 4791'
cap_wait "$tmp/b.pcapng"

mp_server "$NSA" 1
s1_pid=$mp_pid
spids=""
for i in 2 3 4; do
	mp_server "$NSA" $i
	spids="$spids $mp_pid"
done
wire=$(sed -n "s|.*$VA: host-local wire \([^ ,]*\), slot .*|\1|p" "$tmp/s1.log" | head -n 1)
reg=$(sed -n "s|.*$VA: registry \([^ ]*\).*|\1|p" "$tmp/s1.log" | head -n 1)
[ -n "$wire" ] && [ -e "$wire" ] || bad "server 1 names no wire file ($wire)"
[ -n "$reg" ] && [ -e "$reg" ] || bad "server 1 names no registry file ($reg)"
echo "registry $reg, wire $wire"
slot_of() { sed -n "s|.*$VA: host-local wire .*, slot \([0-9]*\)$|\1|p" "$1" | head -n 1; }
s1_slot=$(slot_of "$tmp/s1.log")
s1_port=$(sed -n 's/.*listening at [0-9.]*:\([0-9]*\).*/\1/p' "$tmp/s1.log" | head -n 1)
[ -n "$s1_port" ] || hard "server 1 names no rdma_cm port"

t_start=$(date +%s)
mp_client "$NSA" 1 90 $PLAN -t 5 -W "1:$tmp/gate"
c1_pid=$mp_pid
cpids=""
for i in 2 3 4; do
	mp_client "$NSA" $i 90 $PLAN -t 10 -G "1:$tmp/gate$i"
	cpids="$cpids $mp_pid"
done

# client 1 is connected and at its first operation: kill its server
gate_wait "$c1_pid"
kill -0 $s1_pid 2>/dev/null || bad "server 1 died before it was killed"
# the slots held now: clients 2-4 are held at their first operation too
# (-G: once), so none of the eight processes can have finished and given
# its slot back (a client that ran its whole plan before a slower one had
# joined would let its server exit, and the slower one take that slot)
wait_all_lines 'held until' 600 'clients 2-4 at their first operation' "$tmp/c2.log" \
	"$tmp/c3.log" "$tmp/c4.log"
held=$(for f in s1 s2 s3 s4 c1 c2 c3 c4; do slot_of "$tmp/$f.log"; done | sort -u | wc -l)
[ "$held" -eq 8 ] || bad "the 8 processes hold $held distinct slots of the wire:" \
	"$(for f in s1 s2 s3 s4 c1 c2 c3 c4; do printf '%s=%s ' $f "$(slot_of "$tmp/$f.log")"; done)"
rm -f "$tmp/gate2" "$tmp/gate3" "$tmp/gate4"
kill -KILL $s1_pid
wait $s1_pid
s1_rc=$?
echo "server 1 (PID $s1_pid, slot $s1_slot) killed with SIGKILL after" \
	"$(($(date +%s) - t_start)) s: exit status $s1_rc"
rm -f "$tmp/gate"

# nobody listens on the dead server's port now: a connect to it from this
# host gets one REJ per copy of its REQ, from whichever process holds the
# CM responder role (the CM's rules over the wire, as on the interface)
if ip netns exec "$NSA" env FI_DROCE_PCAP="$tmp/conn.pcapng" timeout -k 5 30 "$CONNECT" \
	"$IPA" "$s1_port" 10 >"$tmp/conn.log" 2>&1; then
	echo "connect to $IPA port $s1_port: $(cat "$tmp/conn.log")"
else
	bad "connect to $IPA port $s1_port, where nobody listens any more, was not refused:"
	cat "$tmp/conn.log"
fi
mads() { # direction attribute: MADs in the connect's capture
	timeout -k 5 60 "$TSHARK" -n -r "$tmp/conn.pcapng" -Y "infiniband.mad.attributeid == $2" \
		-T fields -e frame.packet_flags_direction -e infiniband.cm.rej.reason 2>/dev/null |
		awk -v d="$1" '$1 ~ ("^0x0*" d "$")' >"$tmp/mads"
	wc -l <"$tmp/mads"
}
n_req=$(mads 2 0x0010)
n_rej=$(mads 1 0x0012)
n_rej8=$(awk '$2 ~ /^(0x0*)?8$/' "$tmp/mads" | wc -l)
echo "the connect sent $n_req REQ(s), received $n_rej REJ(s), $n_rej8 'invalid service ID'"
[ "$n_rej" -ge 1 ] && [ "$n_rej" -le "$n_req" ] && [ "$n_rej8" -eq "$n_rej" ] ||
	bad "not one REJ 'invalid service ID' per REQ ($n_req REQ, $n_rej REJ, $n_rej8 reason 8)"

# a new process takes the dead one's slot and is reached through it
mp_server "$NSA" 5
spids="$spids $mp_pid"
s5_slot=$(slot_of "$tmp/s5.log")
[ -n "$s1_slot" ] && [ "$s5_slot" = "$s1_slot" ] ||
	bad "server 5 took slot '$s5_slot', not the killed server 1's ('$s1_slot')"
echo "server 5 took slot $s5_slot, the killed server 1's"
mp_finish "$NSA"
for f in s2 s3 s4 s5 c2 c3 c4 c5; do
	line=$(grep ' local wire (slot' "$tmp/$f.log" | sed 's/.*local wire/local wire/')
	n=$(echo "$line" | sed -n 's/.* received \([0-9]*\) .*/\1/p')
	if [ -z "$n" ] || [ "$n" -eq 0 ]; then
		bad "$f: received nothing from the wire: $line"
	else
		echo "$f: $line"
	fi
done

# ---- files ---------------------------------------------------------------------------

[ -n "$reg" ] && [ -e "$reg" ] && bad "registry $reg left after the last process closed"
[ -n "$wire" ] && [ -e "$wire" ] && bad "wire $wire left after the last process closed"

# ---- the veth --------------------------------------------------------------------------

cap_stop
n=$(timeout -k 5 60 "$TSHARK" -n -r "$tmp/b.pcapng" -T fields -e frame.number 2>/dev/null |
	wc -l)
[ "$n" -eq 0 ] || bad "$n RoCEv2 frames went over the veth"
echo "tshark at $VB: $n RoCEv2 frames on the veth"

[ $fail -eq 0 ] && echo "PASS: 4 servers and 4 clients in one namespace, a kill -9, a reused slot"
exit $fail
