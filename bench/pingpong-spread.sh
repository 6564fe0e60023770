#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# pingpong-spread.sh - N back-to-back runs of the stock
#   fi_pingpong -p droce -e msg -S 8 -I 20000
# between two network namespaces over a veth (droce's zero-config path:
# net_af_packet on the namespace's interface, no FI_DROCE_* set), and how
# far the slowest is from the median (issue 13: none slower than 2x the
# median; a run that loses frames waits for retransmit timers and shows
# as an outlier of hundreds of microseconds).  A benchmark, not a test: it
# reports, it does not fail on timing.
#
#   sudo bench/pingpong-spread.sh [--runs N] [--build DIR] [--size S] [--iters I]
#
# Prints one line per run (usec/xfer, wall time) and the verdict line
#   median X us, max Y us (Y/X = R), runs over 2x median: K
# and writes the same as CSV to --csv FILE if given (run,usec_per_xfer,wall_s).
set -u
runs=20 size=8 iters=20000 csv=''
build=${BENCH_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--csv) csv=$2; shift 2 ;;
	*) echo "usage: $0 [--runs N] [--build DIR] [--size S] [--iters I] [--csv FILE]"; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces)"; exit 1; }
pp=$(command -v fi_pingpong) || { echo "fi_pingpong not found (libfabric-bin)"; exit 1; }
[ -e "$build/.libs/libdroce-fi.so" ] || { echo "no $build/.libs/libdroce-fi.so (--build)"; exit 1; }
for v in $(env | sed -n 's/^\(FI_DROCE_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export FI_PROVIDER_PATH=$build/.libs

# the namespaces, the veth pair and their teardown: tests/netns-lib.sh's
NETNS_LIB_FUNCTIONS=1
. "$(dirname "$0")/../tests/netns-lib.sh"
a=drps$$a b=drps$$b
trap 'teardown_ns "" $a $b' EXIT
trap 'exit 130' INT TERM
setup_ns $a
setup_ns $b
veth_pair $a dpa$$ 10.83.0.1 $b dpb$$ 10.83.0.2

echo "fi_pingpong -p droce -e msg -S $size -I $iters, $runs runs, veth between namespaces" \
	"(load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs)"
[ -n "$csv" ] && echo "run,usec_per_xfer,wall_s" >"$csv"
vals=()
port=$((47800 + $$ % 100))
for i in $(seq "$runs"); do
	port=$((port + 1))
	t0=$(date +%s.%N)
	ip netns exec $a timeout 120 "$pp" -p droce -e msg -B $port -S "$size" -I "$iters" \
		>/tmp/drps$$.srv 2>&1 &
	spid=$!
	wait_listen $a $port
	out=$(ip netns exec $b timeout 120 "$pp" -p droce -e msg -P $port -S "$size" -I "$iters" \
		10.83.0.1 2>&1)
	rc=$?
	wait $spid
	wall=$(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.2f", $2 - $1 }')
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	us=$(echo "$out" | awk '$1 ~ /^[0-9]/ && NF >= 8 { v = $7 } END { print v }')
	if [ $rc -ne 0 ] || [ -z "$us" ]; then
		echo "run $i: failed (exit $rc, ${wall}s)"
		us=NA
	else
		echo "run $i: $us usec/xfer (${wall}s)"
		vals+=("$us")
	fi
	[ -n "$csv" ] && echo "$i,$us,$wall" >>"$csv"
done
rm -f /tmp/drps$$.srv
printf '%s\n' "${vals[@]}" | sort -g | awk -v n="$runs" '
	{ v[NR] = $1 }
	END {
		if (NR == 0) { print "no run completed"; exit 1 }
		med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		over = 0
		for (i = 1; i <= NR; i++) if (v[i] > 2 * med) over++
		printf "median %.2f us, max %.2f us (max/median = %.2f), runs over 2x median: %d, failed: %d\n",
			med, v[NR], v[NR] / med, over, n - NR
	}'
