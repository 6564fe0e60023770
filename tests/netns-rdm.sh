#!/bin/sh
# shellcheck disable=SC2086 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-rdm.sh - FI_EP_RDM over "droce;ofi_rxm" (libfabric's ofi_rxm layered
# on droce's FI_EP_MSG) between two network namespaces joined by a veth
# pair, driven by tests/rdm-check (see its header for the phases).
#
#   netns drrdm<pid>a: dra<pid> 10.79.N.1/24 ==veth== drb<pid> 10.79.N.2/24 :netns drrdm<pid>b
#
# No FI_DROCE_* variable but FI_DROCE_PCAP is set: droce picks
# net_af_packet on the namespace's interface by itself.  Asserts:
#  1. fi_info -p "droce;ofi_rxm" -t FI_EP_RDM in a namespace lists the veth
#     as the domain of a droce;ofi_rxm FI_EP_RDM endpoint;
#  2. rdm-check server (in A) and client (in B) both exit 0 and print every
#     phase's "ok" line: tagged messages 0 B .. 1 MiB sent unexpected and
#     received in reverse tag order, tagged into posted receives (one via an
#     ignore mask), untagged into an FI_MULTI_RECV buffer (some unexpected),
#     fi_write / fi_read / fi_writedata with CQ data, and atomics, every
#     byte verified (guards included);
#  3. tools/droce-pcapcheck over the server's capture (FI_DROCE_PCAP): every
#     frame parses with a valid ICRC, and the capture holds the CM exchange
#     and the RC opcodes rxm's protocols use (sends, RDMA writes with and
#     without immediate, RDMA reads, ACKs);
#  4. two rdm-check peers, each knowing the other's address, send first at
#     the same moment: both connections start at once and ofi_rxm's
#     collision rule (a REJ carrying RXM_REJECT_EALREADY) keeps one; both
#     pass with the data verified, the capture is valid.
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns, no fi_info/tshark
# per netns-lib.sh), 99 hard error.  Bounded: every command under timeout.

set -u

. "$(dirname "$0")/netns-lib.sh"
RDM_CHECK=$top_builddir/tests/rdm-check
[ -x "$RDM_CHECK" ] || hard "$RDM_CHECK not built"
command -v fi_info >/dev/null 2>&1 || skip "fi_info not found (Debian package libfabric-bin)"
ns_pair_names drrdm dr 10.79
ns_pair_up netns-rdm "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
echo "topology: $NSA/$VA $IPA <-> $NSB/$VB $IPB, MTU 1500"

# ---- 1. fi_info ------------------------------------------------------------------

if ip netns exec "$NSA" timeout -k 5 30 fi_info -p "droce;ofi_rxm" -t FI_EP_RDM \
	>"$tmp/fi_info.txt" 2>&1 &&
	grep -qx 'provider: droce;ofi_rxm' "$tmp/fi_info.txt" &&
	grep -qx "    domain: $VA" "$tmp/fi_info.txt" &&
	! grep '^    type:' "$tmp/fi_info.txt" | grep -qv FI_EP_RDM; then
	echo "ok: fi_info -p \"droce;ofi_rxm\" -t FI_EP_RDM lists $VA"
else
	echo "FAIL: fi_info -p \"droce;ofi_rxm\" -t FI_EP_RDM:"
	cat "$tmp/fi_info.txt"
	fail=1
fi

# ---- 2. rdm-check -------------------------------------------------------------------

port=$((47000 + $$ % 1000))
ip netns exec "$NSA" env FI_DROCE_PCAP="$tmp/server.pcapng" timeout -k 5 $budget \
	"$RDM_CHECK" -s "$IPA" -P $port >"$tmp/server.txt" 2>&1 &
server=$!
wait_started $server "$tmp/server.txt" '^server: listening' 300 "rdm-check server"
ip netns exec "$NSB" timeout -k 5 $budget "$RDM_CHECK" -c "$IPA" -P $port \
	>"$tmp/client.txt" 2>&1
crc=$?
wait $server
src=$?
for side in server client; do
	echo "--- $side"
	grep -v '^libfabric' "$tmp/$side.txt"
done
want_server="hello unexpected multi_recv rma atomic"
want_client="hello unexpected expected multi_recv rma atomic"
ok=1
[ $src -eq 0 ] && grep -qx 'PASS server' "$tmp/server.txt" || ok=0
[ $crc -eq 0 ] && grep -qx 'PASS client' "$tmp/client.txt" || ok=0
for p in $want_server; do
	[ "$(grep -c "^ok $p:" "$tmp/server.txt")" -eq 1 ] || ok=0
done
for p in $want_client; do
	[ "$(grep -c "^ok $p:" "$tmp/client.txt")" -eq 1 ] || ok=0
done
if [ $ok -eq 1 ]; then
	echo "ok: rdm-check over droce;ofi_rxm, server exit $src, client exit $crc"
else
	echo "FAIL: rdm-check over droce;ofi_rxm: server exit $src, client exit $crc"
	fail=1
fi

# ---- 3. the server's capture ----------------------------------------------------------

if [ -s "$tmp/server.pcapng" ]; then
	pcapcheck pcapcheck 60 \
		--require "CM_REQ,CM_REP,CM_RTU,RC_SEND_ONLY,RC_SEND_FIRST,RC_SEND_LAST,ACK" \
		--require "RC_RDMA_WRITE_FIRST,RC_RDMA_WRITE_LAST,RC_RDMA_WRITE_LAST_WITH_IMMEDIATE" \
		--require "RC_RDMA_READ_REQUEST,RC_RDMA_READ_RESPONSE_FIRST,RC_RDMA_READ_RESPONSE_LAST" \
		--min-roce 1000 "$tmp/server.pcapng"
else
	bad "no server capture (FI_DROCE_PCAP)"
fi

# ---- 4. peers connecting to each other at once ----------------------------------------

rm -f "$tmp/go"
ip netns exec "$NSA" env FI_DROCE_PCAP="$tmp/peer.pcapng" timeout -k 5 $budget \
	"$RDM_CHECK" -s "$IPA" -x "$IPB" -g "$tmp/go" -P $((port + 1)) >"$tmp/peer-a.txt" 2>&1 &
pa=$!
ip netns exec "$NSB" timeout -k 5 $budget \
	"$RDM_CHECK" -s "$IPB" -x "$IPA" -g "$tmp/go" -P $((port + 1)) >"$tmp/peer-b.txt" 2>&1 &
pb=$!
wait_all_lines '^peer: listening' 300 "rdm-check peers" "$tmp/peer-a.txt" "$tmp/peer-b.txt"
touch "$tmp/go"
wait $pa
ra=$?
wait $pb
rb=$?
if [ $ra -eq 0 ] && [ $rb -eq 0 ] && grep -q '^ok peers:' "$tmp/peer-a.txt" &&
	grep -q '^ok peers:' "$tmp/peer-b.txt"; then
	# whether the two requests crossed depends on timing: said, not asserted
	if timeout -k 5 60 "$PCAPCHECK" --require CM_REQ,CM_REP,CM_RTU "$tmp/peer.pcapng" \
		>"$tmp/peer-pcap.txt" 2>&1; then
		req=$(sed -n 's/^ *CM_REQ .* \([0-9][0-9]*\)$/\1/p' "$tmp/peer-pcap.txt")
		rej=$(sed -n 's/^ *CM_REJ .* \([0-9][0-9]*\)$/\1/p' "$tmp/peer-pcap.txt")
		echo "ok: peers sending first at once both pass (CM_REQ ${req:-0}, CM_REJ" \
			"${rej:-0}: ofi_rxm's collision rule when 2 and 1)"
	else
		echo "FAIL: droce-pcapcheck on the peers' capture:"
		head -n 40 "$tmp/peer-pcap.txt"
		fail=1
	fi
else
	echo "FAIL: peers sending first at once: exits $ra, $rb"
	grep -v '^libfabric' "$tmp/peer-a.txt" "$tmp/peer-b.txt"
	fail=1
fi

echo "total $(elapsed)s"
exit $fail
