#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/cc.sh - congestion control off and on through a bottleneck: the
# scenario of tests/netns-cc.sh (three namespaces, tc tbf on the bridge
# port, nftables marking CE), with longer measurements and several rounds,
# reported as a markdown table and a plot (gnuplot, if installed).
#
#   bench/cc.sh [BUILD_DIR]       (root; BUILD_DIR defaults to ./build)
#
# Environment, passed to the test: DROCE_CC_RATE (tbf rate, 200mbit),
# DROCE_CC_MARK (CE marks per mille of ECT(0) frames, 20), DROCE_CC_QPS
# ("2 4"), DROCE_CC_RUNS (3 here), DROCE_CC_SECS (3 here).  Output:
# bench/cc-results.md (the table, one row per QP count and setting,
# averaged over the rounds) and bench/plots/cc.png.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
out=$src/bench/cc-results.md
: "${DROCE_CC_RUNS:=3}" "${DROCE_CC_SECS:=3}"
export DROCE_CC_RUNS DROCE_CC_SECS
DROCE_CC_TABLE=$(mktemp /tmp/droce-cc.XXXXXX)
export DROCE_CC_TABLE
trap 'rm -f "$DROCE_CC_TABLE" "$DROCE_CC_TABLE.rows" "$DROCE_CC_TABLE.dat"' EXIT

top_srcdir=$src top_builddir=$build sh "$src/tests/netns-cc.sh" || {
	echo "cc.sh: tests/netns-cc.sh failed; the table is of what was measured"
}
{
	echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg):"
	echo "tbf ${DROCE_CC_RATE:-200mbit}, CE on ${DROCE_CC_MARK:-20} per mille of ECT(0) frames,"
	echo "droce-bench bw_write 1 MiB, window 16, ${DROCE_CC_SECS} s, ${DROCE_CC_RUNS} rounds averaged."
	echo
	cat "$DROCE_CC_TABLE"
} >"$out"
cat "$out"

if command -v gnuplot >/dev/null 2>&1 && [ -s "$DROCE_CC_TABLE.rows" ]; then
	# QPs, goodput off, goodput on, resent off, resent on, Jain off, Jain on
	awk '{ k = $1; g[k, $2] += $4; r[k, $2] += $5; j[k, $2] += $6; n[k, $2]++; q[k] = 1 }
	     END { for (k in q) printf "%s %.2f %.2f %.0f %.0f %.3f %.3f\n", k,
		g[k, 0] / n[k, 0], g[k, 1] / n[k, 1], r[k, 0] / n[k, 0], r[k, 1] / n[k, 1],
		j[k, 0] / n[k, 0], j[k, 1] / n[k, 1] }' "$DROCE_CC_TABLE.rows" |
		sort -n >"$DROCE_CC_TABLE.dat"
	mkdir -p "$src/bench/plots"
	gnuplot <<EOF
set terminal pngcairo size 1100,420 font ",10"
set output "$src/bench/plots/cc.png"
set multiplot layout 1,3 title "droce congestion control through a ${DROCE_CC_RATE:-200mbit} tbf bottleneck (FI_DROCE_CC=0 vs 1)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key top left
set xlabel "competing QPs"
set ylabel "goodput, all QPs (MB/s)"
set yrange [0:*]
plot "$DROCE_CC_TABLE.dat" using 2:xtic(1) title "CC off", "" using 3 title "CC on"
set ylabel "packets resent"
plot "$DROCE_CC_TABLE.dat" using 4:xtic(1) title "CC off", "" using 5 title "CC on"
set ylabel "Jain's fairness index"
set yrange [0:1.05]
plot "$DROCE_CC_TABLE.dat" using 6:xtic(1) title "CC off", "" using 7 title "CC on"
unset multiplot
EOF
	echo "plot: $src/bench/plots/cc.png"
fi
