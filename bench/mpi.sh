#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/mpi.sh - MPI latency (8 B half round trip) and bandwidth (1 MiB,
# window 16) between two Open MPI ranks in two network namespaces joined by
# a veth pair (one rank per "host", pinned to CPUs 0 and 1 unless --no-pin), pml cm + mtl ofi over "droce;ofi_rxm"
# and over "tcp;ofi_rxm", alternated in rounds (order swapped every other
# round); medians [min-max] and droce/tcp ratios as a markdown section.
#
#   sudo bench/mpi.sh [--runs N] [--secs T] [--out FILE] [--raw FILE] [--build DIR] [--no-pin]
#
# droce runs twice: with ofi_rxm's defaults (messages over its 128 KiB SAR
# limit go by rendezvous as one RDMA read) and with
# FI_OFI_RXM_USE_RNDV_WRITE=1 (rendezvous as RDMA writes); see RESULTS.md.
# No FI_DROCE_* variable is set.  --build: a build directory with
# .libs/libdroce-fi.so (default $BENCH_PROVIDER_PATH/.., else ./).  The
# section goes to stdout and, with --out, to FILE; --raw keeps every
# measurement ("CONFIG lat|bw VALUE", or "CONFIG fail 1").  Needs root, mpicc
# (openmpi-bin, libopenmpi-dev: installed when missing).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
runs=5 secs=1 out='' raw='' pin=1 provpath=${BENCH_PROVIDER_PATH:-}
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift ;;
	--secs) secs=$2; shift ;;
	--out) out=$2; shift ;;
	--raw) raw=$2; shift ;;
	--no-pin) pin=0 ;;
	--build) provpath=$2/.libs; shift ;;
	-h|--help) sed -n '3,20p' "$0"; exit 0 ;;
	*) echo "mpi.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$provpath" ] || provpath=$PWD/.libs
provpath=$(cd "$provpath" && pwd)
[ -e "$provpath/libdroce-fi.so" ] || { echo "mpi.sh: no $provpath/libdroce-fi.so" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "mpi.sh: needs root (namespaces)" >&2; exit 1; }
say() { printf '%s\n' "mpi.sh: $*" >&2; }
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	say "installing openmpi-bin libopenmpi-dev"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q openmpi-bin libopenmpi-dev >&2
fi
for v in $(env | sed -n 's/^\(FI_DROCE_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset FI_PROVIDER FI_OFI_RXM_USE_RNDV_WRITE
export FI_PROVIDER_PATH=$provpath

tag=drmb$$
nsA=${tag}a nsB=${tag}b ifc=${tag}
ipA=10.75.0.1 ipB=10.75.0.2
tmp=$(mktemp -d /tmp/droce-mpibench.XXXXXX)
chmod 755 "$tmp"
cleanup() {
	local ns p
	for ns in "$nsA" "$nsB"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
	done
	ip netns del "$nsA" 2>/dev/null || true
	ip netns del "$nsB" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mpicc -O2 -o "$tmp/mpi-bench" "$here/mpi-bench.c"
ip netns add "$nsA"
ip netns add "$nsB"
# the same interface name in both (the "hosts"), as on a real cluster
ip -n "$nsA" link add "$ifc" type veth peer name "${ifc}p" netns "$nsB"
ip -n "$nsB" link set "${ifc}p" name "$ifc"
for x in "$nsA:$ipA" "$nsB:$ipB"; do
	ip -n "${x%%:*}" link set lo up
	ip -n "${x%%:*}" addr add "${x#*:}/24" dev "$ifc"
	ip -n "${x%%:*}" link set "$ifc" mtu 1500 up
done
sleep 1
# rank 0 (started by mpirun) on CPU 0, rank 1 (by the agent) on CPU 1, as
# bench/run.sh pins its server and client
pin0="" pin1=""
if [ $pin = 1 ] && [ "$(nproc)" -ge 2 ]; then pin0="taskset -c 0" pin1="taskset -c 1"; fi
cat >"$tmp/agent.sh" <<EOF
#!/bin/sh
h=\$1
shift
case \$h in $ipA) n=$nsA ;; *) n=$nsB ;; esac
exec $pin1 ip netns exec "\$n" unshare --uts sh -c "hostname \$n; \$*"
EOF
chmod +x "$tmp/agent.sh"
printf '%s slots=1\n%s slots=1\n' "$ipA" "$ipB" >"$tmp/hosts"

results=$tmp/results.txt
: >"$results"
# job CONFIG ROUND: one 2-rank job; appends "CONFIG lat|bw VALUE" lines
job() {
	local cfg=$1 r=$2 prov extra=() log=$tmp/$1-$2.txt
	case $cfg in
	droce) prov="droce;ofi_rxm" ;;
	droce_wr) prov="droce;ofi_rxm" extra=(-x FI_OFI_RXM_USE_RNDV_WRITE=1) ;;
	tcp) prov="tcp;ofi_rxm" extra=(-x FI_TCP_IFACE="$ifc") ;;
	esac
	if timeout -k 5 120 $pin0 ip netns exec "$nsA" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$nsA" \
		mpirun --allow-run-as-root -np 2 --hostfile "$tmp/hosts" --map-by node --bind-to none \
		--mca plm_rsh_agent "$tmp/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include "$ifc" \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
		-x FI_PROVIDER_PATH "${extra[@]}" "$tmp/mpi-bench" -T "$secs" >"$log" 2>&1; then
		awk -v c="$cfg" '/^lat / { print c, "lat", $3 } /^bw / { print c, "bw", $3 }' "$log" >>"$results"
	else
		say "round $r $cfg: job failed: $(grep -v '^ ' "$log" | grep -i -m2 'error\|exceeded\|abort' | tr '\n' ' ')"
		echo "$cfg fail 1" >>"$results"
	fi
}

for r in $(seq "$runs"); do
	say "round $r of $runs"
	if [ $((r % 2)) = 1 ]; then order="droce tcp droce_wr"; else order="droce_wr tcp droce"; fi
	for c in $order; do job "$c" "$r"; done
done

[ -z "$raw" ] || cp "$results" "$raw"
python3 - "$results" "$runs" "$secs" "$pin0" <<'EOF' | tee "${out:-/dev/null}"
import sys, statistics
res, runs, secs = sys.argv[1], sys.argv[2], sys.argv[3]
pinned = ', pinned to CPUs 0 and 1' if sys.argv[4] else ', not pinned'
d = {}
for line in open(res):
    c, k, v = line.split()
    d.setdefault((c, k), []).append(float(v))
def fmt(x):
    return f'{x:.0f}' if x >= 100 else f'{x:.3g}'
def cell(c, k):
    v = d.get((c, k))
    if not v:
        return None, 'failed'
    return statistics.median(v), f'{fmt(statistics.median(v))} [{fmt(min(v))}–{fmt(max(v))}]'
print('## MPI over droce;ofi_rxm (Open MPI, pml cm + mtl ofi)\n')
print(f'Two ranks, one in each of two namespaces joined by a veth pair{pinned}; bench/mpi.sh, {runs} rounds '
      f'of {secs} s per test, droce and tcp alternated; median [min–max]; ratio = droce/tcp of the medians '
      '(latency: lower is better; bandwidth: higher is better). '
      'droce (rndv write) sets FI_OFI_RXM_USE_RNDV_WRITE=1: ofi_rxm moves messages over its 128 KiB '
      'SAR limit by RDMA write instead of its default, one RDMA read of the whole message (which '
      'droce asks for in READ requests of at most 64 response packets; fi_droce(7), MPI JOBS).\n')
print('| test | droce;ofi_rxm | droce;ofi_rxm (rndv write) | tcp;ofi_rxm | ratio | ratio (rndv write) |')
print('|---|---:|---:|---:|---:|---:|')
for k, name, unit in (('lat', '8 B half round trip', 'us'), ('bw', '1 MiB bandwidth, window 16', 'MB/s')):
    md, sd = cell('droce', k)
    mw, sw = cell('droce_wr', k)
    mt, st = cell('tcp', k)
    r1 = f'**{md / mt:.2f}×**' if md and mt else '–'
    r2 = f'**{mw / mt:.2f}×**' if mw and mt else '–'
    print(f'| {name} ({unit}) | {sd} | {sw} | {st} | {r1} | {r2} |')
fails = {c: len(d.get((c, 'fail'), [])) for c in ('droce', 'droce_wr', 'tcp')}
if any(fails.values()):
    print('\nFailed jobs: ' + ', '.join(f'{c} {n}' for c, n in fails.items() if n) + '.')
EOF
