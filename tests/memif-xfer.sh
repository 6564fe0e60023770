#!/bin/sh
# Two processes on one host joined by a DPDK net_memif pair (no root, no
# hugepages) run droce-xfer: every data operation (send, send with
# immediate, RDMA write, write with immediate, RDMA read, FETCH_ADD,
# CMP_SWAP, atomic read) at sizes 0 B..4 MiB, data verified on both sides.
# The server's capture then must hold every RDMA opcode the run used, each
# frame valid by droce's parser (ICRC included) and decoded by tshark with
# no malformed frame.
#
# MEMIF_ZC=1 (tests/memif-xfer-zc.sh): the client runs memif's zero-copy
# mode (zero-copy=yes; DPDK needs --single-file-segments for it), in which
# the server reads the client's frames in place and the client receives
# into its own buffers.
set -u
: "${top_srcdir:?run from make check}" "${top_builddir:?run from make check}"
xfer="$top_builddir/tools/droce-xfer"
check="$top_builddir/tools/droce-pcapcheck"
[ -x "$xfer" ] && [ -x "$check" ] || { echo "ERROR: droce-xfer/droce-pcapcheck not built"; exit 99; }
# tshark checks the decode and the PSN convention below: in CI (CI=true)
# it must be there; elsewhere its absence makes the test a skip, not a pass.
TSHARK=${TSHARK:-}
[ -n "$TSHARK" ] || TSHARK=$(command -v tshark 2>/dev/null || true)
if [ -z "$TSHARK" ] || [ ! -x "$TSHARK" ]; then
	[ "${CI:-}" != true ] || { echo "FAIL: tshark not found, and CI=true"; exit 1; }
	TSHARK=""
fi

work=$(mktemp -d /tmp/droce-memif.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

export FI_PROVIDER_PATH="$top_builddir/.libs" FI_PROVIDER=droce
# The control port, in the host's namespace: below the kernel's ephemeral
# range (32768-60999), where no connection of another process can hold
# it, and apart from the other tests that run there (lossless.sh 23xxx,
# notes-memif.sh 24xxx): CI's distcheck once found 48552 in use
port=$((21000 + ${MEMIF_ZC:-0} * 1000 + $$ % 1000))
pcap="$work/server.pcapng"
sizes=0,1,7,1023,1024,1025,4096,65536,1048576,4194304

FI_DROCE_DEVICE="net_memif0,role=server,socket=$work/memif.sock" FI_DROCE_ADDR=192.0.2.1/24 \
	FI_DROCE_PCAP="$pcap" timeout 240 "$xfer" -p droce -a 192.0.2.1 -P "$port" -w 60 \
	>"$work/server.log" 2>&1 &
pid=$!
cdev="net_memif0,role=client,socket=$work/memif.sock"
ceal=${FI_DROCE_EAL_ARGS:-}
if [ "${MEMIF_ZC:-0}" = 1 ]; then
	cdev="$cdev,zero-copy=yes"
	ceal="--no-huge --no-shconf -m 256 --single-file-segments"
	echo "client: memif zero-copy mode"
fi
FI_DROCE_DEVICE="$cdev" FI_DROCE_EAL_ARGS="$ceal" FI_DROCE_ADDR=192.0.2.2/24 \
	timeout 220 "$xfer" -p droce -s 127.0.0.1 -P "$port" -S "$sizes" -I 3 >"$work/client.log" 2>&1
crc=$?
wait "$pid"
src=$?
pid=
cat "$work/client.log"
echo "server: $(tail -n 1 "$work/server.log")"
if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
	echo "FAIL: droce-xfer client exit $crc, server exit $src"
	cat "$work/server.log"
	exit 1
fi
grep -q ' 0 failed, 0 skipped$' "$work/client.log" || { echo "FAIL: not every operation ran"; exit 1; }

"$check" --min-roce 1000 --require \
RC_SEND_FIRST,RC_SEND_MIDDLE,RC_SEND_LAST,RC_SEND_ONLY,RC_SEND_LAST_WITH_IMMEDIATE,\
RC_SEND_ONLY_WITH_IMMEDIATE,RC_RDMA_WRITE_FIRST,RC_RDMA_WRITE_MIDDLE,RC_RDMA_WRITE_LAST,\
RC_RDMA_WRITE_ONLY,RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,\
RC_RDMA_READ_REQUEST,RC_RDMA_READ_RESPONSE_FIRST,RC_RDMA_READ_RESPONSE_MIDDLE,\
RC_RDMA_READ_RESPONSE_LAST,RC_RDMA_READ_RESPONSE_ONLY,RC_FETCH_ADD,RC_COMPARE_SWAP,\
RC_ATOMIC_ACKNOWLEDGE,RC_ACKNOWLEDGE,CM_REQ,CM_REP,CM_RTU,CM_DREQ,CM_DREP \
	"$pcap" || { echo "FAIL: capture check"; exit 1; }

if [ -z "$TSHARK" ]; then
	echo "SKIP: every operation verified, but tshark is not installed: the Wireshark" \
		"decode and the REP's Starting PSN were not checked"
	exit 77
fi
# Wireshark 4.0's RPC-over-RDMA heuristic misreads short SEND payloads
bad=$("$TSHARK" --disable-heuristic rpcrdma_infiniband -r "$pcap" \
	-Y '_ws.malformed || _ws.expert.severity == error' 2>/dev/null | wc -l)
ib=$("$TSHARK" -r "$pcap" -Y infiniband 2>/dev/null | wc -l)
echo "tshark: $ib InfiniBand frames, $bad malformed or expert errors"
[ "$bad" -eq 0 ] && [ "$ib" -ge 1000 ] || { echo "FAIL: tshark"; exit 1; }

# The PSN convention of the Linux CM (tests/golden/rxe-rping.pcapng): the
# active side sends from the Starting PSN of the REP, the passive side
# expects it there; the client's first request must carry it.
rep_psn=$("$TSHARK" -r "$pcap" -Y 'infiniband.mad.attributeid == 0x13' \
	-T fields -e infiniband.cm.rep.startpsn 2>/dev/null | head -n 1)
first=$("$TSHARK" -r "$pcap" \
	-Y 'ip.src == 192.0.2.2 && infiniband.bth.destqp != 1 && infiniband.bth.opcode <= 0x0c' \
	-T fields -e infiniband.bth.psn 2>/dev/null | head -n 1)
echo "REP Starting PSN $rep_psn, the client's first request PSN $first"
[ -n "$rep_psn" ] && [ -n "$first" ] && [ "$(printf '%d' "$rep_psn")" -eq "$first" ] ||
	{ echo "FAIL: the client does not send from the REP's Starting PSN"; exit 1; }
echo "PASS: every operation verified over net_memif; capture valid"
