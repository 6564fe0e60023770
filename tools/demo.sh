#!/bin/sh
# droce's main job, from a fresh Debian 12 machine:
#  1. install what is missing (apt-get; the only step that needs root),
#  2. build,
#  3. start two processes joined by a DPDK net_memif pair (no root, no
#     hugepages): droce-xfer as server and as client, running send/recv,
#     send with immediate, RDMA write (and write with immediate), RDMA read
#     and the three atomics, every byte verified on both sides,
#  4. capture every frame the server's port sends and receives to a pcapng,
#     check every ICRC in it with droce's own parser (which also breaks the
#     retransmissions down by the cause droce wrote in the capture's
#     comments), list the first frames droce annotated (why it
#     retransmitted, NAKed, changed a QP or CM state, dropped a frame: the
#     demo's link loses nothing, so mostly state changes and the odd resend
#     after a timeout) and print tshark's summary of the start of it,
#  5. run one RDMA write with a wrong remote key on purpose (droce-xfer -X
#     badkey): the write must fail with a remote access error, and the
#     server's capture says why (its NAK and its QP's move to ERROR).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}

sh "$top/tools/install-deps.sh"
[ -x "$top/configure" ] || (cd "$top" && autoreconf -fi >/dev/null)
mkdir -p "$build"
cd "$build"
[ -f Makefile ] || "$top/configure" -q
echo "demo: building droce"
make -j"$(nproc)" >/dev/null

work=$(mktemp -d /tmp/droce-demo.XXXXXX)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
	rm -f "$work/memif.sock"
}
trap cleanup EXIT INT TERM

pcap="$work/droce-demo.pcapng"
port=$((47600 + $$ % 300))
ops=send,senddata,write,writedata,read,fetch_add,cswap,atomic_read
sizes=1,1024,4096,65536,1048576

# The two ends of the memif link; 192.0.2.0/24 exists only inside DPDK,
# so the test program's out-of-band channel runs over 127.0.0.1.
export FI_PROVIDER_PATH="$build/.libs" FI_PROVIDER=droce
echo "demo: server on net_memif (192.0.2.1), capturing to $pcap"
FI_DROCE_DEVICE="net_memif0,role=server,socket=$work/memif.sock" \
	FI_DROCE_ADDR=192.0.2.1/24 FI_DROCE_PCAP="$pcap" \
	"$build/tools/droce-xfer" -p droce -a 192.0.2.1 -P "$port" -o "$ops" \
	>"$work/server.log" 2>&1 &
server_pid=$!
sleep 1
echo "demo: client on net_memif (192.0.2.2)"
rc=0
FI_DROCE_DEVICE="net_memif0,role=client,socket=$work/memif.sock" \
	FI_DROCE_ADDR=192.0.2.2/24 \
	"$build/tools/droce-xfer" -p droce -s 127.0.0.1 -P "$port" -o "$ops" -S "$sizes" \
	-I 3 || rc=$?
wait "$server_pid" || rc=$?
server_pid=
echo
echo "demo: the server's view"
tail -n 1 "$work/server.log"
[ "$rc" -eq 0 ] || { echo "demo: FAILED (see $work/server.log)"; exit 1; }

echo
echo "demo: every RoCEv2 frame of the capture through droce's parser (ICRC included)"
"$build/tools/droce-pcapcheck" "$pcap"
echo
echo "demo: the first 12 frames droce annotated (droce-pcapcheck --notes; the same with tshark:"
echo "      tshark -r $pcap -Y frame.comment -T fields -e frame.number -e _ws.col.Info -e frame.comment)"
"$build/tools/droce-pcapcheck" -q --notes "$pcap" >"$work/notes.txt"
head -n 13 "$work/notes.txt"
[ "$(wc -l <"$work/notes.txt")" -gt 1 ] || echo "(no frame of this run carries a comment)"
echo
echo "demo: tshark's summary of the first 40 frames (tshark -r $pcap)"
# Wireshark 4.0's RPC-over-RDMA heuristic misreads short SEND payloads
tshark --disable-heuristic rpcrdma_infiniband -r "$pcap" -c 40

# One protocol event on purpose: the demo's link loses nothing, but a
# wrong remote key makes the server NAK the write (docs/protocol.md B.*)
pcap2="$work/droce-demo-badkey.pcapng"
echo
echo "demo: one RDMA write with a wrong remote key, on purpose (droce-xfer -X badkey:write);"
echo "      the server captures to $pcap2"
rm -f "$work/memif.sock"
FI_DROCE_DEVICE="net_memif0,role=server,socket=$work/memif.sock" \
	FI_DROCE_ADDR=192.0.2.1/24 FI_DROCE_PCAP="$pcap2" \
	"$build/tools/droce-xfer" -p droce -a 192.0.2.1 -P "$((port + 1))" -o write \
	>"$work/server2.log" 2>&1 &
server_pid=$!
sleep 1
rc=0
FI_DROCE_DEVICE="net_memif0,role=client,socket=$work/memif.sock" \
	FI_DROCE_ADDR=192.0.2.2/24 \
	"$build/tools/droce-xfer" -p droce -s 127.0.0.1 -P "$((port + 1))" -o write -S 64 -I 1 \
	-X badkey:write >"$work/client2.log" 2>&1 || rc=$?
wait "$server_pid" || true # it reports the failed write too
server_pid=
grep "FAIL write" "$work/client2.log" || true
[ "$rc" -ne 0 ] && grep -q "remote access error" "$work/client2.log" ||
	{ echo "demo: FAILED: the wrong key was not refused (see $work/client2.log)"; exit 1; }
echo "demo: what the server's capture says about it (droce-pcapcheck --notes, NAK and ERROR lines)"
"$build/tools/droce-pcapcheck" -q --notes "$pcap2" >"$work/notes2.txt"
grep -E "NAK|ERROR" "$work/notes2.txt" ||
	echo "(no frame of this run carries a comment)"
echo
echo "demo: done; the captures are $pcap and $pcap2 (open them in Wireshark)"
