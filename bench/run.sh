#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/run.sh - the droce benchmark suite, droce against libfabric's tcp
# provider, in one command:
#
#   sudo bench/run.sh                 full suite -> bench/RESULTS.md, bench/plots/*.png,
#                                     bench/results.csv (every raw measurement)
#   sudo bench/run.sh --quick         headline ratios against the targets (< 2 min);
#                                     what `make bench` runs
#
# Transports: droce over net_memif between two processes (same host) against
# tcp on loopback, in memif's copy mode and with the client in memif's
# zero-copy mode (memifzc); droce's zero-config path (veth: no FI_DROCE_DEVICE,
# so droce's own packet socket with UDP GSO super-frames, FI_DROCE_KERNEL_PMD)
# and DPDK's net_af_packet (vethafp) against tcp on one veth pair
# between two network namespaces this script creates (10.79.0.1/24 and
# 10.79.0.2/24, removed on exit).  Kernel PMDs (issue 13): droce over
# net_af_xdp (vethxdp) on a second veth pair between the same namespaces
# (10.79.2.1/2; its control channel on the first pair, since the XDP program
# takes every frame of its interface from the kernel), compared with tcp on
# the first; and droce's zero-config path against tcp on a third pair at MTU
# 9000 (veth9k, 10.79.3.1/2: path MTU 4096).  Loss (net_af_packet, one frame
# per packet): on a second veth path through a
# bridge namespace (10.79.0.3 <-> 10.79.0.4), netem or, without sch_netem,
# an nftables random drop on the bridge ports.
# Runs are rounds: in each round every configuration runs once, droce and
# tcp alternated (and their order swapped every other round); each figure is
# the median of the rounds, with min-max.
#
# Options:
#   --quick            headline tests only, 5 rounds, short phases; prints ratios
#   --runs N           rounds (default 5; at least 5 for RESULTS.md)
#   --secs T           timed phase per measurement (default 0.5; quick 0.25)
#   --out DIR          where results go (default: bench/ of the source tree;
#                      quick: ./bench-quick)
#   --build DIR        build directory holding bench/droce-bench and .libs/libdroce-fi.so
#                      (default: $BENCH_BUILD or /tmp/droce-bench-build, configured
#                      and built out of tree when missing or stale)
#   --no-veth          skip the namespace/veth part (no root needed)
#   --no-loss          skip the netem loss part
#   --no-pin           do not pin server and client to separate CPUs
#   --no-install       do not apt-get install missing tools
#   --veth-only        the veth tables alone (af_packet, af_xdp, MTU 9000, with
#                      tcp): no memif, loss, MPI or fi_pingpong part
#   --no-mpi           skip the MPI part (bench/mpi.sh: Open MPI over droce;ofi_rxm
#                      and tcp;ofi_rxm between two namespaces; full suite only)
# Environment: BENCH_BIN, BENCH_PROVIDER_PATH override --build.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)

quick=0 runs=5 secs='' out='' build=${BENCH_BUILD:-/tmp/droce-bench-build}
veth=1 loss=1 pin=1 install=1 mpi=1 vethonly=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--runs) runs=$2; shift ;;
	--secs) secs=$2; shift ;;
	--out) out=$2; shift ;;
	--build) build=$2; shift ;;
	--no-veth) veth=0; loss=0 ;;
	--no-loss) loss=0 ;;
	--no-pin) pin=0 ;;
	--no-install) install=0 ;;
	--no-mpi) mpi=0 ;;
	--veth-only) vethonly=1 loss=0 mpi=0 ;;
	-h|--help) sed -n '3,38p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$secs" ] || { [ $quick = 1 ] && secs=0.25 || secs=0.5; }
[ -n "$out" ] || { [ $quick = 1 ] && out=$PWD/bench-quick || out=$here; }
mkdir -p "$out"
out=$(cd "$out" && pwd)

say() { printf '%s\n' "run.sh: $*" >&2; }

# ---- tools ---------------------------------------------------------------------------
need_pkgs=()
command -v python3 >/dev/null || need_pkgs+=(python3)
[ $quick = 1 ] || command -v gnuplot >/dev/null || need_pkgs+=(gnuplot-nox)
if [ $veth = 1 ]; then
	command -v ip >/dev/null || need_pkgs+=(iproute2)
	command -v tc >/dev/null || need_pkgs+=(iproute2)
fi
command -v taskset >/dev/null || need_pkgs+=(util-linux)
[ $veth = 0 ] || command -v ethtool >/dev/null || need_pkgs+=(ethtool)
command -v fi_info >/dev/null || need_pkgs+=(libfabric-bin)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	if [ $install = 1 ] && [ "$(id -u)" = 0 ]; then
		say "installing ${need_pkgs[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_pkgs[@]}" >&2 ||
			{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_pkgs[@]}" >&2; }
	else
		say "missing: ${need_pkgs[*]} (run as root, or install them)"; exit 1
	fi
fi
if [ $veth = 1 ] && [ "$(id -u)" != 0 ]; then
	say "not root: skipping the veth/netem part (--no-veth)"
	veth=0 loss=0
fi

# ---- the build -----------------------------------------------------------------------
if [ -n "${BENCH_BIN:-}" ]; then
	bin=$BENCH_BIN
	provpath=${BENCH_PROVIDER_PATH:-$(dirname "$(dirname "$bin")")/.libs}
else
	if [ ! -x "$build/bench/droce-bench" ] || [ ! -e "$build/.libs/libdroce-fi.so" ] ||
	   [ -n "$(find "$src/src" "$src/include" "$src/bench" -newer "$build/bench/droce-bench" \
		   -name '*.[ch]' 2>/dev/null | head -1)" ]; then
		say "building in $build"
		mkdir -p "$build"
		if [ ! -e "$build/Makefile" ]; then
			[ -x "$src/configure" ] || (cd "$src" && autoreconf -fi >&2)
			(cd "$build" && "$src/configure" -q >&2)
		fi
		make -C "$build" -j"$(nproc)" -s >&2
	fi
	bin=$build/bench/droce-bench
	provpath=$build/.libs
fi
[ -x "$bin" ] || { say "no $bin"; exit 1; }
[ -e "$provpath/libdroce-fi.so" ] || { say "no $provpath/libdroce-fi.so"; exit 1; }
export FI_PROVIDER_PATH=$provpath

# ---- scratch, namespaces, cleanup ----------------------------------------------------
tag=drb$$
tmp=$(mktemp -d /tmp/droce-bench.XXXXXX)
nsA=${tag}a nsB=${tag}b vA=${tag}a vB=${tag}b
pids=()
netns_made=0
cleanup() {
	local p
	for p in "${pids[@]:-}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null || true
	done
	if [ $netns_made = 1 ]; then
		for n in "$nsA" "$nsB" "$nsC" "$nsD" "$nsR"; do ip netns del "$n" 2>/dev/null || true; done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ipA=10.79.0.1 ipB=10.79.0.2 ipC=10.79.0.3 ipD=10.79.0.4
ipE=10.79.2.1 ipF=10.79.2.2 ipG=10.79.3.1 ipH=10.79.3.2
vE=${tag}e vF=${tag}f vG=${tag}g vH=${tag}h
nsC=${tag}c nsD=${tag}d nsR=${tag}r vC=${tag}c vD=${tag}d rC=${tag}rc rD=${tag}rd
lossmethod=none
if [ $veth = 1 ]; then
	netns_made=1
	for n in "$nsA" "$nsB" "$nsC" "$nsD" "$nsR"; do ip netns add "$n"; ip -n "$n" link set lo up; done
	# the veth pair of the main tables: A <-> B
	ip link add "$vA" netns "$nsA" type veth peer name "$vB" netns "$nsB"
	ip -n "$nsA" addr add $ipA/24 dev "$vA"
	ip -n "$nsB" addr add $ipB/24 dev "$vB"
	ip -n "$nsA" link set "$vA" up
	ip -n "$nsB" link set "$vB" up
	# net_af_xdp's pair (E <-> F) and the MTU 9000 pair (G <-> H)
	ip link add "$vE" netns "$nsA" type veth peer name "$vF" netns "$nsB"
	ip link add "$vG" netns "$nsA" type veth peer name "$vH" netns "$nsB"
	ip -n "$nsA" link set "$vG" mtu 9000
	ip -n "$nsB" link set "$vH" mtu 9000
	for x in "$nsA:$vE:$ipE" "$nsB:$vF:$ipF" "$nsA:$vG:$ipG" "$nsB:$vH:$ipH"; do
		IFS=: read -r n v i <<<"$x"
		ip -n "$n" addr add "$i/24" dev "$v"
		ip -n "$n" link set "$v" up
	done
	# The loss path: C <-> bridge in R <-> D.  Frames are dropped inside R,
	# between the sender's transmit and the receiver's packet socket: a
	# drop on an end point's own interface does not work for droce, since
	# an ingress hook runs after AF_PACKET's tap has already seen the frame
	# and a dropped AF_PACKET transmit is retried by the kernel's TX ring.
	# netem on R's two bridge ports if the kernel has it; otherwise (this
	# kernel has no sch_netem) an nftables rule on their ingress drops each
	# frame with probability p (numgen random): the same Bernoulli loss.
	ip link add "$vC" netns "$nsC" type veth peer name "$rC" netns "$nsR"
	ip link add "$vD" netns "$nsD" type veth peer name "$rD" netns "$nsR"
	ip -n "$nsR" link add br0 type bridge
	ip -n "$nsR" link set "$rC" master br0
	ip -n "$nsR" link set "$rD" master br0
	for l in "$rC" "$rD" br0; do ip -n "$nsR" link set "$l" up; done
	ip -n "$nsC" addr add $ipC/24 dev "$vC"
	ip -n "$nsD" addr add $ipD/24 dev "$vD"
	ip -n "$nsC" link set "$vC" up
	ip -n "$nsD" link set "$vD" up
	# No segmentation offloads on the loss path, so that a drop is one
	# MTU-sized frame for tcp too (as on a wire, after a NIC has cut TSO
	# super-frames) and not a 64 KiB GSO super-frame.
	for x in "$nsC:$vC" "$nsD:$vD" "$nsR:$rC" "$nsR:$rD"; do
		ip netns exec "${x%%:*}" ethtool -K "${x#*:}" tso off gso off gro off >/dev/null 2>&1 || true
	done
	if [ $loss = 1 ]; then
		if ip netns exec "$nsR" tc qdisc replace dev "$rC" root netem loss 0% 2>/dev/null; then
			lossmethod=netem
		elif command -v nft >/dev/null || { [ $install = 1 ] &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q nftables >&2; }; then
			lossmethod=nft
		else
			say "no netem and no nft: skipping the loss tests"
			loss=0
		fi
	fi
fi

set_loss() { # percent, both directions, inside R
	local thr
	case $lossmethod in
	netem)
		ip netns exec "$nsR" tc qdisc replace dev "$rC" root netem loss "$1%"
		ip netns exec "$nsR" tc qdisc replace dev "$rD" root netem loss "$1%" ;;
	nft)
		thr=$(awk -v p="$1" 'BEGIN { printf "%d", p * 1000 + 0.5 }')
		ip netns exec "$nsR" nft -f - <<-EOF
		table netdev drbloss
		delete table netdev drbloss
		table netdev drbloss {
			chain c {
				type filter hook ingress device "$rC" priority -500; policy accept;
				numgen random mod 100000 < $thr counter drop
			}
			chain d {
				type filter hook ingress device "$rD" priority -500; policy accept;
				numgen random mod 100000 < $thr counter drop
			}
		}
		EOF
		;;
	esac
}
netem_drops() {
	case $lossmethod in
	netem)
		{ ip netns exec "$nsR" tc -s qdisc show dev "$rC"; ip netns exec "$nsR" tc -s qdisc show dev "$rD"; } |
			awk '/dropped/ { for (i = 1; i <= NF; i++) if ($i == "(dropped") { gsub(",", "", $(i+1)); s += $(i+1) } } END { print s + 0 }' ;;
	nft)
		ip netns exec "$nsR" nft list table netdev drbloss |
			awk '/counter packets/ { for (i = 1; i <= NF; i++) if ($i == "packets") s += $(i+1) } END { print s + 0 }' ;;
	*) echo 0 ;;
	esac
}
[ $loss = 1 ] && set_loss 0

if [ $pin = 1 ] && [ "$(nproc)" -ge 2 ]; then
	pinS="taskset -c 0" pinC="taskset -c 1"
else
	pinS="" pinC=""
fi

raw=$tmp/raw.csv
: >"$raw"
failures=$tmp/failures.txt
: >"$failures"
port=$((40000 + $$ % 10000))

# one measurement session: a server and a client process pair
#   session RUN CONFIG PROVIDER LABEL TESTARGS...
# CONFIG: memif | memifzc | lo | veth | vethafp | vethxdp | veth9k | lossy
session() {
	local run=$1 config=$2 prov=$3 label=$4; shift 4
	local oob srvenv=() clienv=() srvns=() clins=() fabric sock='' rc=0 spid
	port=$((port + 1))
	case $config in
	memif | memifzc)
		sock=$tmp/memif-$port.sock
		srvenv=(FI_DROCE_DEVICE="net_memif0,role=server,socket=$sock" FI_DROCE_ADDR=192.0.2.1/24)
		clienv=(FI_DROCE_DEVICE="net_memif0,role=client,socket=$sock" FI_DROCE_ADDR=192.0.2.2/24)
		# memifzc: the client in memif's zero-copy mode (DPDK wants its
		# memory in one file per segment list for that)
		[ "$config" = memif ] ||
			clienv=(FI_DROCE_DEVICE="net_memif0,role=client,socket=$sock,zero-copy=yes"
				FI_DROCE_EAL_ARGS="--no-huge --no-shconf -m 256 --single-file-segments"
				FI_DROCE_ADDR=192.0.2.2/24)
		oob=127.0.0.1:$port fabric=192.0.2.1 ;;
	lo)
		srvenv=() clienv=() oob=127.0.0.1:$port fabric=127.0.0.1 ;;
	veth)
		# the zero-config path: no FI_DROCE_* at all (droce's packet
		# socket on the interface holding the address)
		srvns=(ip netns exec "$nsA") clins=(ip netns exec "$nsB")
		srvenv=() clienv=()
		oob=$ipA:$port fabric=$ipA ;;
	vethafp)
		srvns=(ip netns exec "$nsA") clins=(ip netns exec "$nsB")
		# FI_DROCE_ADDR only spells out the interface's own address and
		# prefix, which droce takes from it anyway (PROFILE.md 5.11)
		srvenv=(FI_DROCE_DEVICE="net_af_packet0,iface=$vA" FI_DROCE_ADDR="$ipA/24")
		clienv=(FI_DROCE_DEVICE="net_af_packet0,iface=$vB" FI_DROCE_ADDR="$ipB/24")
		oob=$ipA:$port fabric=$ipA ;;
	vethxdp)
		srvns=(ip netns exec "$nsA") clins=(ip netns exec "$nsB")
		srvenv=(FI_DROCE_DEVICE="net_af_xdp0,iface=$vE" FI_DROCE_ADDR="$ipE/24")
		clienv=(FI_DROCE_DEVICE="net_af_xdp0,iface=$vF" FI_DROCE_ADDR="$ipF/24")
		oob=$ipA:$port fabric=$ipE ;;
	veth9k)
		srvns=(ip netns exec "$nsA") clins=(ip netns exec "$nsB")
		srvenv=() clienv=()
		oob=$ipG:$port fabric=$ipG ;;
	lossy)
		srvns=(ip netns exec "$nsC") clins=(ip netns exec "$nsD")
		srvenv=(FI_DROCE_DEVICE="net_af_packet0,iface=$vC" FI_DROCE_ADDR="$ipC/24")
		clienv=(FI_DROCE_DEVICE="net_af_packet0,iface=$vD" FI_DROCE_ADDR="$ipD/24")
		oob=$ipC:$port fabric=$ipC ;;
	esac
	[ "$prov" = droce ] || { srvenv=(); clienv=(); }
	local log=$tmp/$run-$config-$prov-$label-$port
	local wd=$(awk -v s="$secs" 'BEGIN { printf "%d", 300 + 200 * s }')
	"${srvns[@]}" env "${srvenv[@]}" $pinS "$bin" -S -p "$prov" -O "$oob" -F "$fabric" -X "$wd" \
		>"$log.srv" 2>&1 &
	spid=$!
	pids+=("$spid")
	"${clins[@]}" env "${clienv[@]}" $pinC "$bin" -p "$prov" -O "$oob" -L "$label" -T "$secs" \
		-X "$wd" -C "$log.csv" "$@" >"$log.out" 2>"$log.err" || rc=$?
	# the server leaves after the client's QUIT; give it a moment, then end it
	for _ in $(seq 50); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
	kill "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
	if [ $rc != 0 ]; then
		{ echo "round $run $config $prov $label: client exit $rc"; tail -5 "$log.err"; tail -3 "$log.srv"; } >>"$failures"
		say "round $run $config $prov $label: client exit $rc (see RESULTS.md notes)"
	fi
	[ -e "$log.csv" ] && sed "s/^/$run,$config,/" "$log.csv" >>"$raw"
	rm -f "$sock" 2>/dev/null || true
	return 0
}

# ---- the plan ------------------------------------------------------------------------
if [ $quick = 1 ]; then
	# one session per group: a connection that fails (a droce QP in error)
	# costs only its group's figures
	groups=("-t lat_send,rate_send -z 8 -R 8 -W 0.05" "-t bw_write,bw_send -Z 1m -W 0.05")
	loss_list="0 1"
	loss_provs="droce"
else
	# -A 5: RDMA write and read of a size in alternating slices, so that
	# their ratio (issue 13) compares the same phases of a shared host
	groups=("-t lat" "-t bw_write,bw_read -A 5" "-t bw_send,rate,atomic")
	# --veth-only: issue 13's figures (8 B and 1 MiB ping-pong, 1 MiB writes)
	[ $vethonly = 0 ] || groups=("-t lat_send -z 8,1m" "-t bw_write -Z 1m")
	loss_list="0 0.1 1 5"
	loss_provs="droce tcp"
fi
loss_args=(-t bw_write -Z 1m -s 30)

machine() {
	echo "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
	echo "cores=$(nproc)"
	echo "kernel=$(uname -sr)"
	echo "libfabric=$(fi_info --version 2>/dev/null | sed -n 's/^libfabric: *//p')"
	echo "dpdk=$(pkg-config --modversion libdpdk 2>/dev/null || echo '?')"
	echo "commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$src" status --porcelain -- src include 2>/dev/null | grep -q . && echo '+uncommitted provider changes')"
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "pinning=$([ -n "$pinS" ] && echo 'server CPU 0, client CPU 1' || echo none)"
	echo "secs=$secs"
	echo "runs=$runs"
	echo "quick=$quick"
	echo "lossmethod=$lossmethod"
}
machine >"$tmp/machine.txt"
load_sample() { # label
	echo "load $1: $(cut -d' ' -f1-3 /proc/loadavg) | busiest: $(ps -eo pcpu=,comm= --sort=-pcpu | grep -v -e droce-bench -e ' ps$' | head -4 | awk '{ printf "%s %s%%; ", $2, $1 }')" >>"$tmp/machine.txt"
}
# The host's own stalls: bench/hoststall spins a thread on every CPU for
# 2 s and counts the gaps in which it did not run.  Gaps over droce's
# retransmit timeout (1 ms and more) show as timeouts that lost nothing
# (bench/PROFILE.md section 8).
stall_sample() { # label
	local hs
	hs=$(dirname "$bin")/hoststall
	[ -x "$hs" ] || return 0
	echo "load stalls $1: $("$hs" 2 | tail -1)" >>"$tmp/machine.txt"
}
load_sample start
stall_sample start
start=$(date +%s)

done_rounds=0 last_round=0
for r in $(seq "$runs"); do
	# quick mode keeps to its time budget on a loaded machine: at least 3
	# rounds, and no round that would end after 105 s (the report shows n)
	if [ $quick = 1 ] && [ "$r" -gt 3 ] &&
	   [ $(( $(date +%s) - start + last_round )) -gt 105 ]; then
		say "quick mode: time budget spent after $done_rounds rounds"
		break
	fi
	round_start=$(date +%s)
	say "round $r of $runs"
	if [ $((r % 2)) = 1 ]; then order="droce tcp"; else order="tcp droce"; fi
	# droce and tcp back to back for each group of tests
	for g in "${groups[@]}"; do
		[ $vethonly = 0 ] || break
		for p in $order; do
			if [ $p = droce ]; then
				session "$r" memif droce memif $g
				session "$r" memifzc droce memifzc $g
			else
				session "$r" lo tcp lo $g
			fi
		done
	done
	if [ $veth = 1 ] && [ $quick = 0 ]; then
		for g in "${groups[@]}"; do
			for p in $order; do
				session "$r" veth "$p" veth $g
				[ $p = tcp ] || session "$r" vethafp droce vethafp $g
				[ $p = tcp ] || session "$r" vethxdp droce vethxdp $g
			done
			for p in $order; do session "$r" veth9k "$p" veth9k $g; done
		done
	fi
	if [ $loss = 1 ]; then
		for l in $loss_list; do
			set_loss "$l"
			for p in $order; do
				case " $loss_provs " in *" $p "*) ;; *) continue ;; esac
				d0=$(netem_drops)
				session "$r" lossy "$p" "loss$l" "${loss_args[@]}"
				echo "$r,$p,$l,$(( $(netem_drops) - d0 ))" >>"$tmp/drops.csv"
			done
		done
		set_loss 0
	fi
	load_sample "after round $r"
	done_rounds=$r last_round=$(( $(date +%s) - round_start ))
done
stall_sample end
# 20 back-to-back stock fi_pingpong -S 8 -I 20000 runs over the veth (issue
# 13: none slower than 2x their median; a run that lost frames waits for
# retransmit timers)
if [ $veth = 1 ] && [ $quick = 0 ] && [ $vethonly = 0 ] && command -v fi_pingpong >/dev/null 2>&1; then
	say "20 fi_pingpong runs over a veth (pingpong-spread.sh)"
	"$here/pingpong-spread.sh" --runs 20 --build "$(dirname "$provpath")" \
		--csv "$tmp/pingpong.csv" >&2 || say "pingpong-spread.sh failed"
fi
sed -i "s/^runs=.*/runs=$done_rounds/" "$tmp/machine.txt"
echo "elapsed=$(( $(date +%s) - start ))s" >>"$tmp/machine.txt"

# ---- the report ----------------------------------------------------------------------
if [ $quick = 1 ]; then
	cp "$raw" "$out/quick.csv"
	python3 "$here/report.py" --quick --raw "$raw" --machine "$tmp/machine.txt" \
		--failures "$failures"
else
	mkdir -p "$out/plots"
	cp "$raw" "$out/results.csv"
	cp "$tmp/machine.txt" "$out/results-meta.txt"
	cp "$failures" "$out/results-failures.txt"
	[ -e "$tmp/drops.csv" ] && cp "$tmp/drops.csv" "$out/results-drops.csv"
	[ -e "$tmp/pingpong.csv" ] && cp "$tmp/pingpong.csv" "$out/results-pingpong.csv"
	python3 "$here/report.py" --raw "$raw" --machine "$tmp/machine.txt" \
		--failures "$failures" --drops "$tmp/drops.csv" --out "$out" \
		--pingpong "$tmp/pingpong.csv" --profile "$here/PROFILE.md"
	# MPI latency and bandwidth, droce;ofi_rxm against tcp;ofi_rxm: a
	# section of its own at the end of RESULTS.md (raw figures in
	# results-mpi.txt)
	if [ $mpi = 1 ] && [ $veth = 1 ]; then
		say "MPI: bench/mpi.sh, $runs rounds"
		if BENCH_PROVIDER_PATH=$provpath bash "$here/mpi.sh" --runs "$runs" \
			--out "$tmp/mpi.md" --raw "$out/results-mpi.txt" >/dev/null; then
			{ echo; cat "$tmp/mpi.md"; } >>"$out/RESULTS.md"
		else
			say "bench/mpi.sh failed: no MPI section"
		fi
	fi
	# congestion control (bench/cc.sh, run on its own: it needs root and
	# minutes): its last table and plot, a section at the end
	[ -s "$here/cc-results.md" ] && { echo; cat "$here/cc-results.md"; } >>"$out/RESULTS.md"
	say "wrote $out/RESULTS.md, $out/results.csv and $out/plots/"
fi
