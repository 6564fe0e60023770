#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-mtu.sh - the interface's MTU changed under two long-lived droce
# processes: connections made afterwards follow it, one made before whose
# path MTU no longer fits ends with an error completion, and each change is
# named in a warning.
#
#   netns drmt<pid>a: dma<pid> 10.76.N.1/24 ==veth MTU 9000== dmb<pid> 10.76.N.2/24 :netns drmt<pid>b
#                     tests/mtu-follow -s                      tests/mtu-follow -c
#
# Each process keeps one domain (one port) for three connections, once on
# droce's own packet socket (packet:IF, the default) and once on DPDK's
# net_af_packet (FI_DROCE_KERNEL_PMD=af_packet, which drops a frame longer
# than the MTU unseen: PACKET_LOSS):
#   1. at MTU 9000: path MTU 4096, one 65,636-byte message each way;
#   then both ends' MTU is set to 1500 and the client sends once more on
#   connection 1: its 4,096-byte packets cannot leave any more (the port
#   drops them; no super-frame carries them past the MTU), so the send
#   ends with an error completion once its retries run out (FI_DROCE_TIMEOUT
#   12: about 3 s);
#   2. meanwhile, at MTU 1500: path MTU 1024 on both sides, the messages
#   byte-exact, none of its frames dropped behind connection 1's;
#   then both MTUs go back to 9000;
#   3. path MTU 4096 again, byte-exact.
# Asserts those path MTUs (fi_open_ops qp_info, both sides), the exchanges,
# the error completion, both ports' warnings "the MTU of IF fell to 1500
# (the port's is 9000)" and "rose to 9000", and their counters:
# link_mtu_changes 2 on each side, tx_refused > 0 on the client and equal
# to its tx_dropped (no other frame lost), 0 on the server.  Before droce
# followed the MTU, connection 2 took path MTU 4096 and connection 1's send
# went through on the veth inside super-frames.
# Then tests/tx-refused, on the client's end alone: a packet: port at MTU
# 9000 sends a 4,000-byte frame right after the MTU fell to 1500, before its
# link watch looks (20 rounds; the kernel must refuse at least one): the
# frame is counted in tx_refused and tx_dropped, not in tx_frames, and is
# not in the port's capture; a 100-byte frame after it leaves and is.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns), 99 hard error.
# Takes about 15 s.

set -u

. "$(dirname "$0")/netns-lib.sh"
MTUF=$top_builddir/tests/mtu-follow
TXR=$top_builddir/tests/tx-refused
built "$MTUF" "$TXR"
ns_pair_names drmt dm 10.76
ns_pair_up netns-mtu "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
keep_on_fail . netns-mtu.d
set_mtu() {
	ip -n "$NSA" link set "$VA" mtu "$1" && ip -n "$NSB" link set "$VB" mtu "$1" ||
		hard "cannot set the MTU to $1"
}
gate_at() { # what: the client ($cpid, log $cl) waits at the gate, within 30 s
	i=0
	until [ -e "$gate" ]; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 $cpid 2>/dev/null; then
			cat "$cl" "$sl"
			hard "the client did not reach the gate $1"
		fi
		sleep 0.1
	done
}
FI_DROCE_TIMEOUT=12 FI_LOG_LEVEL=warn
export FI_DROCE_TIMEOUT FI_LOG_LEVEL
port=$((47700 + $$ % 100))
gate=$tmp/gate

session() { # FI_DROCE_KERNEL_PMD
	FI_DROCE_KERNEL_PMD=$1
	export FI_DROCE_KERNEL_PMD
	set_mtu 9000
	port=$((port + 1))
	sl=$tmp/server-$1.log cl=$tmp/client-$1.log
	ip netns exec "$NSA" timeout 60 "$MTUF" -s "$IPA" -P $port >"$sl" 2>&1 &
	spid=$!
	wait_started $spid "$sl" listening 100 "mtu-follow -s ($1)"
	ip netns exec "$NSB" timeout 60 "$MTUF" -c "$IPA" -P $port -g "$gate" >"$cl" 2>&1 &
	cpid=$!
	gate_at "after connection 1"
	set_mtu 1500
	rm -f "$gate"
	gate_at "after connection 2"
	set_mtu 9000
	rm -f "$gate"
	wait $cpid
	crc=$?
	wait $spid
	src=$?
	echo "== FI_DROCE_KERNEL_PMD=$1"
	cat "$cl" "$sl" | grep -v 'mrail\|fi_getinfo'
	[ $crc -eq 0 ] || bad "$1: the client exited $crc"
	[ $src -eq 0 ] || bad "$1: the server exited $src"

	for side in client server; do
		log=$tmp/$side-$1.log
		for want in "conn 1: path_mtu 4096" "conn 2: path_mtu 1024" \
			"conn 3: path_mtu 4096" "conn 1: exchange ok" "conn 2: exchange ok" \
			"conn 3: exchange ok" "link_mtu_changes=2 "; do
			grep -q "\[$side\]: .*$want" "$log" || bad "$1: $side: no '$want'"
		done
		grep -q "the MTU of d.*fell to 1500 (the port's is 9000)" "$log" ||
			bad "$1: $side: no warning of the MTU's fall"
		grep -q "the MTU of d.*rose to 9000" "$log" ||
			bad "$1: $side: no warning of the MTU's rise"
	done
	grep -q 'conn 1: send after the change: error ' "$cl" ||
		bad "$1: the send on connection 1 after the change did not end in an error completion"
	grep -q 'port: .* tx_refused=[1-9]' "$cl" || bad "$1: the client's port refused no frame"
	grep -q 'port: .* tx_refused=\([0-9]*\) tx_dropped=\1$' "$cl" ||
		bad "$1: the client's port dropped frames it did not refuse as too long"
	grep -q 'port: .* tx_refused=0 tx_dropped=0$' "$sl" ||
		bad "$1: the server's port refused or dropped a frame"
}

session packet
session af_packet

echo "== frames the kernel refused (tests/tx-refused)"
mac_a=$(ip -n "$NSA" -o link show "$VA" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
[ -n "$mac_a" ] || hard "no MAC for $VA"
ip netns exec "$NSB" timeout 60 "$TXR" "$VB" "$IPB" "$IPA" "$mac_a" "$tmp/tx-refused.pcapng" \
	>"$tmp/tx-refused.log" 2>&1
trc=$?
grep -v '^droce: ' "$tmp/tx-refused.log"
[ $trc -eq 99 ] && hard "tx-refused could not run"
[ $trc -eq 0 ] || bad "tx-refused: a frame the kernel refused was counted as sent or captured"

echo "total $(elapsed)s"
[ $fail -eq 0 ] || exit 1
echo "PASS: netns-mtu"
exit 0
