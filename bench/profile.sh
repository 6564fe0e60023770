#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# bench/profile.sh - profile one droce-bench session over net_memif (two
# processes on this host; server on CPU 0, client on CPU 1).  What
# bench/PROFILE.md was written from.
#
#   bench/profile.sh perf      OUT TESTARGS...  perf record (cpu-clock) of both sides;
#                                               OUT.cli.data / OUT.srv.data + top lists
#   bench/profile.sh callgrind OUT TESTARGS...  the client under callgrind (instruction
#                                               counts; collection only inside the
#                                               measurement loops) + a per-call table
#   bench/profile.sh stats     OUT TESTARGS...  both sides under gdb: the QP and port
#                                               counters when the endpoint shuts down
#
# TESTARGS are droce-bench client options; with callgrind give a fixed count,
# e.g.:  bench/profile.sh callgrind /tmp/rate8 -t rate_send -R 8 -T 600 -W 0 -m 100000 -M 100000
#        (then "per call" columns are per message with DIV=100000)
# Environment: BENCH_BUILD (default /tmp/droce-bench-build), DIV (divisor for the
# callgrind table, default 1), DEV_SRV/DEV_CLI/ADDR_SRV/ADDR_CLI/OOB to use another
# device (e.g. net_af_packet inside namespaces, run under ip netns exec yourself).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:?perf|callgrind|stats}; out=${2:?output prefix}; shift 2
build=${BENCH_BUILD:-/tmp/droce-bench-build}
bin=$build/bench/droce-bench
export FI_PROVIDER_PATH=$build/.libs
[ -x "$bin" ] || { echo "profile.sh: build first (bench/run.sh builds into $build)" >&2; exit 1; }
sock=/tmp/droce-profile-$$.sock
port=$((45000 + $$ % 5000))
DEV_SRV=${DEV_SRV:-net_memif0,role=server,socket=$sock}
DEV_CLI=${DEV_CLI:-net_memif0,role=client,socket=$sock}
ADDR_SRV=${ADDR_SRV:-192.0.2.1/24} ADDR_CLI=${ADDR_CLI:-192.0.2.2/24}
OOB=${OOB:-127.0.0.1:$port}
srv=() cli=()
case $mode in
perf)
	command -v perf >/dev/null || apt-get install -y -q linux-perf >&2
	srv=(perf record -q -e cpu-clock -F 2999 ${PERF_G:-} -o "$out.srv.data" --)
	cli=(perf record -q -e cpu-clock -F 2999 ${PERF_G:-} -o "$out.cli.data" --) ;;
callgrind)
	command -v valgrind >/dev/null || apt-get install -y -q valgrind >&2
	cli=(valgrind -q --tool=callgrind --callgrind-out-file="$out.callgrind"
	     --toggle-collect=windowed --toggle-collect=pingpong) ;;
stats)
	command -v gdb >/dev/null || apt-get install -y -q gdb >&2
	cat >"$out.gdb" <<-'EOF'
	set pagination off
	set breakpoint pending on
	handle SIGUSR1 SIGUSR2 SIG34 SIG35 nostop noprint pass
	break ep_shutdown
	commands
	  silent
	  set $e = (struct dr_ep *)fep
	  printf "qp: "
	  p $e->qp->stats
	  printf "port: "
	  p ((struct dr_port *)$e->dev->port)->stats
	  continue
	end
	run
	EOF
	srv=(gdb -q -batch -x "$out.gdb" --args)
	cli=(gdb -q -batch -x "$out.gdb" --args) ;;
*) echo "profile.sh: mode perf, callgrind or stats" >&2; exit 2 ;;
esac
trap 'kill $spid 2>/dev/null || true; rm -f "$sock"' EXIT
FI_DROCE_DEVICE=$DEV_SRV FI_DROCE_ADDR=$ADDR_SRV taskset -c 0 "${srv[@]}" "$bin" -S -O "$OOB" -s 120 -X 1200 \
	>"$out.srv.log" 2>&1 &
spid=$!
sleep 2
FI_DROCE_DEVICE=$DEV_CLI FI_DROCE_ADDR=$ADDR_CLI taskset -c 1 "${cli[@]}" "$bin" -O "$OOB" -s 120 -X 1200 "$@" \
	2>"$out.cli.log" | tee "$out.out"
wait $spid || true
case $mode in
perf)
	for s in cli srv; do
		echo "== $s"
		perf report -i "$out.$s.data" --stdio --sort dso,sym 2>/dev/null | grep -v '^#' | grep -v '^$' | head -25
	done ;;
callgrind)
	python3 "$here/cgcalls.py" "$out.callgrind" "${DIV:-1}" 40 ;;
stats)
	grep -h -A1 -E '^(qp|port): ' "$out.cli.log" "$out.out" "$out.srv.log" 2>/dev/null | cut -c1-900 || true ;;
esac
