#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-afxdp.sh - droce over DPDK's net_af_xdp (issue 13, point 3), and
# what FI_DROCE_KERNEL_PMD=auto picks.
#
#   netns drxd<pid>a: dxa<pid> 10.86.N.1/24 ==veth== dxb<pid> 10.86.N.2/24 :netns drxd<pid>b
#                     cxa<pid> 10.87.N.1/24 ==veth== cxb<pid> 10.87.N.2/24  (control)
#
# net_af_xdp's XDP program hands every frame arriving on the interface to
# droce, so the kernel's TCP on that veth stops while a port is open:
# droce-xfer's control connection goes over the second veth pair, the
# fabric address (-a) is on the first.  No FI_DROCE_DEVICE: the zero-config
# kernel port, its driver chosen by FI_DROCE_KERNEL_PMD.
#
# Run 1, MTU 1500, FI_DROCE_KERNEL_PMD=auto on both sides: each log says
#   "FI_DROCE_KERNEL_PMD=auto: net_af_xdp on <its veth>" and
#   "device <veth>: net_af_xdp_<veth>, <ip>/24, MTU 1500, path MTU 1024" and
#   "net_af_xdp_<veth>: net_af_xdp: QPs on this port leave at most 64 PSNs
#   unacknowledged" (dr_port_max_window);
#   droce-xfer runs every operation (cm_data, send, senddata, write,
#   writedata, read, fetch_add, cswap, atomic_read) at 0 B-64 KiB, three
#   iterations, its data verified: exactly 40 passed, 0 failed; and each
#   log says "net_af_xdp: its umem (N bytes) holds all M mbufs".
# Run 4 (after run 1, MTU 1500), FI_DROCE_KERNEL_PMD=af_xdp: droce-bench bw_write,
#   bw_send and bw_read at 4 KiB and 1 MiB, 64 messages in flight, 0.3 s
#   each; a wait of 5 s without a completion fails it.  Before droce made
#   its af_xdp pool fit the umem DPDK registers, the last 128 mbufs of the
#   pool were outside it: the kernel dropped their frames as invalid TX
#   descriptors and held the frames behind them until the next transmit,
#   and such runs stalled 8 times of 9 (bench/PROFILE.md, section 7).
# Run 2, MTU 3500, FI_DROCE_KERNEL_PMD=af_xdp: the port lowers the MTU to
#   what a page-sized umem chunk carries and says so ("MTU 3500 lowered to
#   3438, path MTU 2048"); write, read and send at 2047-2049 B (one and two
#   frames of the 2048 path MTU) and 64 KiB pass.
# Run 3, MTU 9000, FI_DROCE_KERNEL_PMD=auto: auto picks net_af_packet
#   ("its MTU 9000 is larger than net_af_xdp carries ... af_packet keeps
#   path MTU 4096"), the device line says path MTU 4096, no window limit is
#   logged, and write, read and send at 4095-4097 B and 1 MiB pass.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / fi_pingpong /
# tshark, or no XDP socket: a kernel without CONFIG_XDP_SOCKETS or no
# CAP_NET_RAW; never in CI, where that is a failure), 99 hard error.

set -u

. "$(dirname "$0")/netns-lib.sh"
BENCH=$top_builddir/bench/droce-bench
built "$XFER" "$BENCH"
ns_pair_names drxd dx 10.86
CA=cxa$$ CB=cxb$$ CIPA=10.87.${net##*.}.1 CIPB=10.87.${net##*.}.2
ns_pair_up netns-afxdp "$NSA" "$VA" "$IPA" "$NSB" "$VB" "$IPB"
veth_pair "$NSA" "$CA" "$CIPA" "$NSB" "$CB" "$CIPB"

# The kernel must have XDP sockets: the first run's log says so when it
# has not; that alone is a skip (a failure in CI).
no_xdp() {
	grep -h "no XDP socket" "$tmp"/*.srv "$tmp"/*.cli 2>/dev/null | head -1 | grep . || return 1
	[ "${CI:-}" != true ] || { bad "no XDP socket, and CI=true"; exit 1; }
	skip "the kernel gives no XDP socket (see the line above)"
}

# mtu N: both data ends' MTU
mtu() {
	ip -n "$NSA" link set "$VA" mtu "$1" && ip -n "$NSB" link set "$VB" mtu "$1" ||
		hard "cannot set MTU $1"
}

# xfer N PMD WANT OPTIONS...: one droce-xfer session, server in A on the
# data veth's address, client in B over the control veth
xfer() {
	x_n=$1 x_pmd=$2 x_want=$3
	shift 3
	port=$((47720 + x_n))
	xfer_env="FI_DROCE_KERNEL_PMD=$x_pmd FI_LOG_LEVEL=info"
	xfer_start "$NSA" 60 "r$x_n" -a "$IPA" -w 30 -t 10 || return 1
	xfer_end "$NSB" 60 "r$x_n" "droce-xfer: $x_want passed, 0 failed, 0 skipped" \
		"run $x_n (FI_DROCE_KERNEL_PMD=$x_pmd)" -s "$CIPA" -t 10 "$@" || no_xdp
	xfer_env=""
}

# bench N ARGS...: a droce-bench session over net_af_xdp, server in A on
# the data veth's address, client in B, both over the control veth; the
# client must exit 0 (no stall) with one "ok" CSV line per measurement.
bench() {
	b_n=$1
	shift
	port=$((47720 + b_n))
	ip netns exec "$NSA" env FI_DROCE_KERNEL_PMD=af_xdp FI_LOG_LEVEL=info timeout -k 5 60 \
		"$BENCH" -S -O "$CIPA:$port" -F "$IPA" -X 60 >"$tmp/b$b_n.srv" 2>&1 &
	b_pid=$!
	listening "$b_pid" "$NSA" "$port" "$tmp/b$b_n.srv" "the droce-bench server ($b_n)" || return 1
	ip netns exec "$NSB" env FI_DROCE_KERNEL_PMD=af_xdp FI_LOG_LEVEL=info timeout -k 5 60 \
		"$BENCH" -O "$CIPA:$port" -X 60 -C "$tmp/b$b_n.csv" "$@" >"$tmp/b$b_n.cli" 2>&1
	b_crc=$?
	for _ in $(seq 50); do kill -0 "$b_pid" 2>/dev/null || break; sleep 0.1; done
	kill "$b_pid" 2>/dev/null
	wait "$b_pid" 2>/dev/null
	b_ok=$(grep -c ",ok," "$tmp/b$b_n.csv" 2>/dev/null)
	if [ "$b_crc" -ne 0 ] || [ "${b_ok:-0}" -ne 6 ]; then
		bad "run $b_n (droce-bench over net_af_xdp): client exit $b_crc, ${b_ok:-0} of 6 measurements"
		grep -v "^libfabric\|^libbpf\|^libxdp" "$tmp/b$b_n.cli" | tail -n 5
		return 1
	fi
	echo "ok: run $b_n: droce-bench over net_af_xdp: $b_ok of 6 measurements, no stall"
}

# has FILE TEXT: the log holds that exact text (a fixed string)
has() {
	if grep -qF -- "$2" "$1"; then
		echo "ok: $(basename "$1"): $2"
	else
		bad "$(basename "$1") lacks: $2"
		grep -h "KERNEL_PMD\|path MTU\|lowered\|XDP\|xdp" "$1" | head -5
	fi
}

# hasnt FILE TEXT: the log does not hold that text
hasnt() {
	if grep -qF -- "$2" "$1"; then
		bad "$(basename "$1") has: $(grep -F -- "$2" "$1" | head -1)"
	else
		echo "ok: $(basename "$1"): no '$2'"
	fi
}

# ---- run 1: auto at MTU 1500 picks net_af_xdp; every operation --------------------
xfer 1 auto 40 -o all -S 0,1,64,1024,1025,4096,65536 -I 3
no_xdp || true
for s in "srv $VA $IPA" "cli $VB $IPB"; do
	set -- $s
	has "$tmp/r1.$1" "FI_DROCE_KERNEL_PMD=auto: net_af_xdp on $2"
	has "$tmp/r1.$1" "device $2: net_af_xdp_$2, $3/24, MTU 1500, path MTU 1024"
	has "$tmp/r1.$1" "net_af_xdp_$2: net_af_xdp: QPs on this port leave at most 64 PSNs unacknowledged"
	has "$tmp/r1.$1" "net_af_xdp_$2: net_af_xdp: its umem ("
done

# ---- run 4: bulk transfers over af_xdp, many messages in flight -------------------
bench 4 -t bw_write,bw_send,bw_read -Z 4k,1m -T 0.3 -W 0.05 -s 5

# ---- run 2: af_xdp at MTU 3500: lowered to 3438, path MTU 2048 ---------------------
mtu 3500
xfer 2 af_xdp 13 -o write,read,send -S 2047,2048,2049,65536 -I 3
for s in "srv $VA $IPA" "cli $VB $IPB"; do
	set -- $s
	has "$tmp/r2.$1" "MTU 3500 lowered to 3438, path MTU 2048"
	has "$tmp/r2.$1" "device $2: net_af_xdp_$2, $3/24, MTU 3438, path MTU 2048"
done

# ---- run 3: auto at MTU 9000 keeps net_af_packet, path MTU 4096 ---------------------
mtu 9000
xfer 3 auto 13 -o write,read,send -S 4095,4096,4097,1m -I 3
for s in "srv $VA $IPA" "cli $VB $IPB"; do
	set -- $s
	has "$tmp/r3.$1" "FI_DROCE_KERNEL_PMD=auto: net_af_packet on $2: its MTU 9000 is larger than net_af_xdp carries (3438, path MTU 2048); af_packet keeps path MTU 4096"
	has "$tmp/r3.$1" "device $2: net_af_packet_$2, $3/24, MTU 9000, path MTU 4096"
	hasnt "$tmp/r3.$1" "PSNs unacknowledged"
done

[ "$fail" -eq 0 ] || exit 1
echo "PASS: netns-afxdp ($(elapsed) s)"
