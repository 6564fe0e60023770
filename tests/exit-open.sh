#!/bin/sh
# A process that exits with fabric, domains, endpoints (connected, traffic
# in flight), MRs, CQs, EQs and a counter still open must neither crash nor
# hang (issue 11): tests/exit-open, EXIT_OPEN_RUNS times (200), in each of
# its ways out in turn, three runs at a time (a run mostly waits: DPDK's
# 0.1 s clock calibration, the 1 s a signal exit may take).  Every run must
#  - end with exactly the exit code of its way out (a signal, a timeout or
#    any other code fails it; libfabric's PSM libraries would turn a
#    SIGSEGV into exit(1), so their handlers are switched off),
#  - leave no core file (cores are enabled where the pattern writes them
#    to the working directory) and print nothing about a signal,
#  - have verified its data before leaving ("verified" on stdout), and in
#    the late way out have closed every object after libfabric's cleanup
#    with no error.
# One run in eleven (so each way out in turn) uses a single port (the
# connection loops back through it) with a capture file, which must then
# have been closed properly: it ends with the interface statistics block
# that is written at close, and droce-pcapcheck finds every frame of the
# verified traffic valid.  The one exception: a signal whose handler calls
# exit() interrupted a thread inside droce, and droce said it left that
# port as it was (it cannot touch a port another thread is half-way
# through using); the capture must still be valid up to its last frame.
# No root, no network: in-process net_ring ports.
set -u
: "${top_builddir:?run from make check}"
prog="$top_builddir/tests/exit-open"
check="$top_builddir/tools/droce-pcapcheck"
[ -x "$prog" ] && [ -x "$check" ] || { echo "ERROR: exit-open/droce-pcapcheck not built"; exit 99; }
runs=${EXIT_OPEN_RUNS:-200}

work=$(mktemp -d /tmp/droce-exitopen.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
export FI_PROVIDER_PATH="$top_builddir/.libs" IPATH_NO_BACKTRACE=1 HFI_NO_BACKTRACE=1
export FI_LOG_LEVEL=warn # droce's warnings at exit show in a failure's log
ulimit -c unlimited 2>/dev/null || true
case $(cat /proc/sys/kernel/core_pattern 2>/dev/null) in
'|'* | /*) echo "note: cores go to $(cat /proc/sys/kernel/core_pattern); the exit status tells a crash" ;;
esac

# the byte at offset $2 of file $1 as 32-bit little-endian
u32() {
	od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '
}

# run I: prints "ok" or "FAIL ..." lines into $work/result.I
one() {
	i=$1
	d="$work/$i"
	mkdir -p "$d"
	set -- return exit thread busy late signal
	shift $((i % 6))
	mode=$1
	case $mode in
	return) want=2 ;; exit) want=3 ;; thread) want=4 ;; busy) want=5 ;; late) want=6 ;;
	signal) want=7 ;;
	esac
	pcap=
	[ $((i % 11)) = 10 ] && pcap="$d/port.pcapng"
	# shellcheck disable=SC2086 # $pcap: no argument when empty
	(cd "$d" && exec timeout -s KILL 60 "$prog" "$mode" $pcap >out 2>err)
	rc=$?
	why=
	if [ "$rc" = 137 ]; then
		why="killed after 60 s: hung"
	elif [ "$rc" -gt 128 ]; then
		why="signal $((rc - 128))"
	elif [ "$rc" != "$want" ]; then
		why="exit code $rc, want $want"
	fi
	if ls "$d" | grep -q '^core'; then
		why="$why; core dumped"
	fi
	if grep -qi 'signal' "$d/err"; then
		why="$why; stderr tells of a signal"
	fi
	if ! grep -q '^verified 16 messages of 4000 bytes, write of 1048576 bytes, counter 1$' "$d/out"; then
		why="$why; data not verified"
	fi
	if [ "$mode" = late ] && ! grep -q '^late-closed 0 errors$' "$d/out"; then
		why="$why; objects not closed after cleanup"
	fi
	if [ -n "$pcap" ]; then
		size=$(wc -c <"$pcap" 2>/dev/null || echo 0)
		last=0
		[ "$size" -ge 12 ] && last=$(u32 "$pcap" $((size - 4)))
		if [ "$mode" = signal ] && grep -q 'device busy at exit; port left as it is' "$d/err"; then
			: # the interrupted thread held the port: no close, see above
		elif [ "$last" -lt 12 ] || [ "$last" -gt "$size" ] ||
			[ "$(u32 "$pcap" $((size - last)))" != 5 ]; then
			why="$why; capture does not end with the statistics block written at close"
		fi
		if ! "$check" -q --require RC_SEND_FIRST:16,RC_SEND_LAST:16,RC_RDMA_WRITE_FIRST,RC_RDMA_WRITE_LAST,RC_ACKNOWLEDGE,CM_REQ,CM_REP,CM_RTU \
			"$pcap" >"$d/check" 2>&1; then
			why="$why; capture check failed: $(tail -n 1 "$d/check")"
		fi
	fi
	if [ -n "$why" ]; then
		echo "FAIL run $i ($mode${pcap:+, capture}):${why#;}" >"$work/result.$i"
		sed 's/^/    /' "$d/err" | tail -n 20 >>"$work/result.$i"
	else
		echo ok >"$work/result.$i"
		rm -rf "$d"
	fi
}

worker() {
	i=$1
	while [ "$i" -lt "$runs" ]; do
		one "$i"
		i=$((i + 3))
	done
}

start=$(date +%s)
worker 0 &
w0=$!
worker 1 &
w1=$!
worker 2
wait "$w0" "$w1"
end=$(date +%s)

failed=0
i=0
while [ "$i" -lt "$runs" ]; do
	if [ "$(cat "$work/result.$i" 2>/dev/null)" != ok ]; then
		failed=$((failed + 1))
		cat "$work/result.$i" 2>/dev/null || echo "FAIL run $i: no result"
	fi
	i=$((i + 1))
done
echo "exit-open: $runs runs (return, exit, thread, busy, late, signal in turn; every eleventh with a capture) in $((end - start)) s: $((runs - failed)) clean, $failed failed"
[ "$failed" = 0 ]
