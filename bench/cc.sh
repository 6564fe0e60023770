#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/cc.sh - congestion control off and on through a bottleneck: the
# scenario of tests/netns-cc.sh (three namespaces, tc tbf on the bridge
# port, nftables marking CE), with longer measurements and several rounds,
# reported as a markdown table and a plot (gnuplot, if installed).
#
#   bench/cc.sh [BUILD_DIR]       (root; BUILD_DIR defaults to ./build)
#   bench/cc.sh --plot            the plot again from bench/cc-rows.txt
#
# Environment, passed to the test: DROCE_CC_RATE (tbf rate, 200mbit),
# DROCE_CC_MARK (CE marks per mille of ECT(0) frames, 20), DROCE_CC_QPS
# ("2 4"), DROCE_CC_RUNS (3 here), DROCE_CC_SECS (3 here).  Output:
# bench/cc-results.md (the table, one row per QP count and setting,
# averaged over the rounds), bench/cc-rows.txt (every round: QPs, CC, round,
# goodput MB/s, resent, Jain, CNPs, CE marks, ECT(0) frames, rate cuts, tbf
# drops) and bench/plots/cc.png.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=$src/bench/cc-results.md
rows=$src/bench/cc-rows.txt
: "${DROCE_CC_RUNS:=3}" "${DROCE_CC_SECS:=3}"
export DROCE_CC_RUNS DROCE_CC_SECS
DROCE_CC_TABLE=$(mktemp /tmp/droce-cc.XXXXXX)
export DROCE_CC_TABLE
trap 'rm -f "$DROCE_CC_TABLE" "$DROCE_CC_TABLE.rows" "$DROCE_CC_TABLE.dat"' EXIT

if [ "${1:-}" != --plot ]; then
	build=$(cd "${1:-$src/build}" && pwd)
	top_srcdir=$src top_builddir=$build sh "$src/tests/netns-cc.sh" || {
		echo "cc.sh: tests/netns-cc.sh failed; the table is of what was measured"
	}
	{
		echo "## Congestion control through a bottleneck (FI_DROCE_CC, issue 13)"
		echo
		echo "\`bench/cc.sh\` (the scenario of \`tests/netns-cc.sh\`): two namespaces joined"
		echo "by a bridge in a third; tc tbf ${DROCE_CC_RATE:-40mbit} with a 64 KiB queue on the"
		echo "bridge port towards the receivers; nftables on the bridge marks CE on"
		echo "${DROCE_CC_MARK:-20} per mille of the ECT(0) frames (numgen random).  2 and 4"
		echo "droce-bench bw_write clients (256 KiB, window 16, ${DROCE_CC_SECS} s) at once,"
		echo "FI_DROCE_CC=0 then 1, ${DROCE_CC_RUNS} rounds averaged; every round in"
		echo "\`bench/cc-rows.txt\`.  Measured $(date -u +%Y-%m-%d) on $(nproc) cores, load"
		echo "$(cut -d' ' -f1-3 /proc/loadavg).  Resent: tx_resent_pkts of all QPs;"
		echo "tbf drops: the bottleneck's; Jain: (sum x)^2 / (n sum x^2) of the QPs' goodputs."
		echo
		cat "$DROCE_CC_TABLE"
		echo
		echo "![congestion control](plots/cc.png)"
	} >"$out"
	cat "$out"
	cp "$DROCE_CC_TABLE.rows" "$rows"
fi

if command -v gnuplot >/dev/null 2>&1 && [ -s "$rows" ]; then
	# QPs, goodput off, goodput on, resent off, resent on, Jain off, Jain on
	awk '{ k = $1; g[k, $2] += $4; r[k, $2] += $5; j[k, $2] += $6; n[k, $2]++; q[k] = 1 }
	     END { for (k in q) printf "%s %.2f %.2f %.0f %.0f %.3f %.3f\n", k,
		g[k, 0] / n[k, 0], g[k, 1] / n[k, 1], r[k, 0] / n[k, 0], r[k, 1] / n[k, 1],
		j[k, 0] / n[k, 0], j[k, 1] / n[k, 1] }' "$rows" |
		sort -n >"$DROCE_CC_TABLE.dat"
	mkdir -p "$src/bench/plots"
	gnuplot <<EOF
set terminal pngcairo size 1100,420 font ",10"
set output "$src/bench/plots/cc.png"
set termoption noenhanced
set multiplot layout 1,3 title "droce congestion control through a ${DROCE_CC_RATE:-40mbit} tbf bottleneck (FI_DROCE_CC=0 vs 1)"
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
