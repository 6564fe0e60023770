# netns-lib.sh - what the tests/netns-*.sh share: paths, skip/error exits,
# the prerequisites, droce's default configuration, the time budget, the
# namespace test's frame, veth pairs, captures, fi_pingpong and droce-xfer
# runs and their checks.  Sourced (POSIX sh), never run.  Sets top_srcdir,
# top_builddir, TSHARK, budget, FI_PINGPONG, PCAPCHECK, XFER, t0.
# NETNS_LIB_FUNCTIONS=1 before sourcing: the functions alone, no
# prerequisite checked and the environment untouched (tests/lossless.sh,
# whose first half needs no root, and bench/ and tools/ scripts).

srcdir_guess=$(cd "$(dirname "$0")/.." && pwd)
top_srcdir=${top_srcdir:-$srcdir_guess}
top_builddir=${top_builddir:-.}
top_builddir=$(cd "$top_builddir" && pwd)
TSHARK=${TSHARK:-}
[ -n "$TSHARK" ] || TSHARK=$(command -v tshark 2>/dev/null || true)
budget=${DROCE_NETNS_BUDGET:-120}

skip() {
	echo "SKIP: $*"
	exit 77
}
hard() {
	echo "ERROR: $*"
	exit 99
}
# No tshark: a skip, but a failure in CI (CI=true), where
# tools/install-deps.sh installs it.
no_tshark() {
	[ "${CI:-}" != true ] || { echo "FAIL: tshark not found, and CI=true"; exit 1; }
	skip "tshark not found (Debian package tshark)"
}

if [ "${NETNS_LIB_FUNCTIONS:-0}" != 1 ]; then
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, veth pairs, packet capture)"
	command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not found"
	ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here"
	FI_PINGPONG=$(command -v fi_pingpong 2>/dev/null) ||
		skip "fi_pingpong not found (Debian package libfabric-bin)"
	[ -n "$TSHARK" ] && [ -x "$TSHARK" ] || no_tshark
	PCAPCHECK=$top_builddir/tools/droce-pcapcheck
	XFER=$top_builddir/tools/droce-xfer
	[ -x "$PCAPCHECK" ] || hard "$PCAPCHECK not built"
	[ -f "$top_builddir/.libs/libdroce-fi.so" ] || hard "$top_builddir/.libs/libdroce-fi.so not built"

	# No FI_DROCE_* from the caller: the defaults are what is under test.
	for v in $(env | sed -n 's/^\(FI_DROCE_[A-Za-z0-9_]*\)=.*/\1/p'); do
		unset "$v"
	done
	unset FI_PROVIDER
	FI_PROVIDER_PATH=$top_builddir/.libs
	export FI_PROVIDER_PATH
fi

t0=$(date +%s)
pp_runs=0 # run_pp's sessions
elapsed() { echo $(($(date +%s) - t0)); }

setup_ns() { # ns
	ip netns add "$1" || skip "cannot create network namespace $1 (no CAP_SYS_ADMIN?)"
	ip -n "$1" link set lo up
	# Connections take their local ports above every port the tests name
	# (fi_pingpong's and droce-xfer's control ports, all below 50000): a
	# client's connection, still closing on a lossy link, held a port the
	# next fi_pingpong server of its namespace was to bind (EADDRINUSE)
	ip netns exec "$1" sysctl -qw net.ipv4.ip_local_port_range="50000 60999" ||
		hard "cannot set the local port range of namespace $1"
	# no IPv6 router solicitations or ND in the capture
	ip netns exec "$1" sh -c 'for f in /proc/sys/net/ipv6/conf/all/disable_ipv6 \
		/proc/sys/net/ipv6/conf/default/disable_ipv6; do
		[ -w "$f" ] && echo 1 >"$f"; done; true'
}

# Tear down what a test made: SIGINT to the pids named first (tsharks
# flush and exit on it), then SIGKILL to what is left in our own
# namespaces (only processes the test started live there), then the
# namespaces themselves.
teardown_ns() { # "pids to interrupt" ns...
	for p in $1; do
		kill -INT "$p" 2>/dev/null
	done
	shift
	for ns in "$@"; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
	done
	wait 2>/dev/null
	for ns in "$@"; do
		ip netns del "$ns" 2>/dev/null
	done
}

built() { # program...: each one built, else a hard error
	for b_p in "$@"; do
		[ -x "$b_p" ] || hard "$b_p not built"
	done
}

# A test's failure: said, remembered in $fail, the test goes on.
bad() {
	echo "FAIL: $*"
	fail=1
}

# expect_count WHAT GOT OP WANT: GOT (a count) against WANT, OP eq, ge or lt;
# a failure (bad) unless it holds, or if GOT is no number
expect_count() {
	case $2 in
	'' | *[!0-9]*)
		bad "$1: '$2' (not a count)"
		return
		;;
	esac
	# (not "[ eq ] && [ -ne ] || [ ge ] && [ -lt ]": the shell reads it
	# as "((eq && -ne) || ge) && -lt", which passed eq with more than wanted)
	case $3 in
	eq) [ "$2" -eq "$4" ] ;;
	ge) [ "$2" -ge "$4" ] ;;
	lt) [ "$2" -lt "$4" ] ;;
	*) false ;;
	esac
	if [ $? -eq 0 ]; then
		echo "ok: $1: $2"
	else
		bad "$1: $2 (expected $3 $4)"
	fi
}

# The frame of a namespace test: a scratch directory $tmp (kept when
# DROCE_KEEP is set), fail=0, cap_pids="" (capture PIDs that cleanup
# interrupts first), a private Wireshark profile, the namespaces, and a
# cleanup on any exit that ends every process in them by PID, keeps what
# keep_on_fail named if the test failed, and removes them.
ns_frame() { # tag ns...
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || hard "mktemp failed"
	shift
	cap_pids="" fail=0 frame_ns="$*" kept=""
	trap ns_frame_cleanup EXIT
	trap 'echo "interrupted"; exit 1' INT TERM HUP
	for fr_ns in "$@"; do
		setup_ns "$fr_ns"
	done
	mkdir "$tmp/wsconf"
	WIRESHARK_CONFIG_DIR=$tmp/wsconf
	export WIRESHARK_CONFIG_DIR
}

# The usual frame of a two-namespace test: ns_frame and the veth pair.
ns_pair_up() { # tag nsa va ipa nsb vb ipb
	ns_frame "$1" "$2" "$5"
	veth_pair "$2" "$3" "$4" "$5" "$6" "$7"
}

keep_on_fail() { # file-or-dir-in-tmp name: copied to $top_builddir/name on failure
	kept="$kept $1:$2"
}

ns_frame_cleanup() {
	fr_rc=$?
	trap - EXIT INT TERM HUP
	# shellcheck disable=SC2086 # the namespace names
	teardown_ns "$cap_pids" $frame_ns
	if [ "$fail" -ne 0 ] || [ "$fr_rc" -eq 1 ]; then
		for fr_k in $kept; do
			[ -e "$tmp/${fr_k%%:*}" ] || continue
			rm -rf "${top_builddir:?}/${fr_k#*:}"
			cp -r "$tmp/${fr_k%%:*}" "$top_builddir/${fr_k#*:}" 2>/dev/null &&
				echo "kept: $top_builddir/${fr_k#*:}"
		done
	fi
	if [ -n "${DROCE_KEEP:-}" ]; then echo "kept: $tmp"; else rm -rf "$tmp"; fi
}

# droce-xfer processes that must each pass every operation: for the i-th
# PID (i from FIRST), exit 0 and "0 failed" in $tmp/PREFIX<i>.log, else
# bad with the log's tail; a client's result line is printed.
xfer_wait() { # prefix first pids...
	xw_pfx=$1 xw_i=$2
	shift 2
	for xw_p in "$@"; do
		xw_rc=0
		wait "$xw_p" || xw_rc=$?
		xw_log=$tmp/$xw_pfx$xw_i.log
		if [ $xw_rc -ne 0 ] || ! grep -q 'droce-xfer: [0-9]* passed, 0 failed' "$xw_log"; then
			bad "$xw_pfx$xw_i: exit $xw_rc:"
			grep -v '^PASS' "$xw_log" | tail -n 20
		elif [ "$xw_pfx" = c ]; then
			echo "client $xw_i: $(tail -n 1 "$xw_log")"
		fi
		xw_i=$((xw_i + 1))
	done
}

# A veth pair created inside the namespaces (nothing is ever added to the
# host's), MTU 1500, an address on each end, and up.
veth_pair() { # nsa va ipa nsb vb ipb
	ip -n "$1" link add "$2" type veth peer name "$5" netns "$4" ||
		hard "cannot create veth pair $2/$5"
	ip -n "$1" link set "$2" mtu 1500 up
	ip -n "$4" link set "$5" mtu 1500 up
	ip -n "$1" addr add "$3/24" dev "$2"
	ip -n "$4" addr add "$6/24" dev "$5"
	veth_wait_up "$1" "$2" "$4" "$5"
}

veth_wait_up() { # nsa va nsb vb: both ends have a carrier, within 5 s
	i=0
	until ip -n "$1" link show "$2" | grep -q LOWER_UP &&
		ip -n "$3" link show "$4" | grep -q LOWER_UP; do
		i=$((i + 1))
		[ $i -le 50 ] || hard "veth $2/$4 did not come up"
		sleep 0.1
	done
}

# Until every file holds a line matching the pattern (a tshark's "Capturing
# on", a peer's "listening"), for at most tenths x 0.1 s; then the files are
# shown and the test ends as a hard error saying what did not start.
wait_all_lines() { # pattern tenths what file...
	pat=$1 tenths=$2 what=$3
	shift 3
	i=0
	for f in "$@"; do
		until grep -q "$pat" "$f" 2>/dev/null; do
			i=$((i + 1))
			if [ $i -gt "$tenths" ]; then
				cat "$@"
				hard "$what did not start"
			fi
			sleep 0.1
		done
	done
}

wait_listen() { # ns port: a TCP listener (fi_pingpong's control port) is up
	j=0
	while [ $j -lt 100 ]; do
		if ip netns exec "$1" ss -Hltn "sport = :$2" 2>/dev/null | grep -q .; then
			return 0
		fi
		j=$((j + 1))
		sleep 0.1
	done
	return 1
}

# A server just started in the background: listening on TCP port within
# 10 s, else a failure with its output, and it is ended.
listening() { # pid ns port output what
	wait_listen "$2" "$3" && return 0
	bad "$5 never listened on TCP $3:"
	cat "$4"
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 1
}

# A tshark in ns on iface writing file (its log file.log), bounded by the
# budget, its PID added to cap_pids; extra arguments go to tshark.
cap_start() { # ns iface file tshark-args...
	cs_ns=$1 cs_if=$2 cs_f=$3
	shift 3
	rm -f "$cs_f" # cap_wait waits for tshark's
	ip netns exec "$cs_ns" timeout -k 5 $((budget + 60)) "$TSHARK" -q -n -i "$cs_if" "$@" \
		-w "$cs_f" >"$cs_f.log" 2>&1 &
	cap_pids="$cap_pids $!"
}

# dumpcap prints "Capturing on" before it opens the interface; it writes
# the file's header once the interface is open with its filter, and syncs
# it out then.  A header is the sign: a capture of netns-ipv6 (make
# distcheck, loaded host) missed the first 0.24 s of its interface's
# frames, 0.3 s after the message.
cap_wait() { # file...: each capture started by cap_start is capturing
	cw_logs=""
	for cw_f in "$@"; do
		cw_logs="$cw_logs $cw_f.log"
	done
	# shellcheck disable=SC2086 # the log names
	wait_all_lines 'Capturing on' 100 tshark $cw_logs
	cw_i=0
	for cw_f in "$@"; do
		until [ -s "$cw_f" ]; do
			cw_i=$((cw_i + 1))
			if [ $cw_i -gt 100 ]; then
				cat $cw_logs
				hard "tshark wrote no header to $cw_f"
			fi
			sleep 0.1
		done
	done
}

# Every capture of cap_pids flushed and ended (after 0.5 s for the last
# DREQ/DREP).
cap_stop() {
	sleep 0.5
	for cs_p in $cap_pids; do
		kill -INT "$cs_p" 2>/dev/null
	done
	for cs_p in $cap_pids; do
		wait "$cs_p" 2>/dev/null
	done
	cap_pids=""
}

cap_drops() { # file: the frames the kernel dropped in the capture (empty: unknown)
	sed -n 's/.*(\([0-9]*\) packets\{0,1\} dropped.*/\1/p' "$1.log" | head -n 1
}

cap_got() { # file: the frames the capture holds (empty: unknown)
	sed -n 's/^\([0-9]*\) packets\{0,1\} captured.*/\1/p' "$1.log" | head -n 1
}

# One fi_pingpong session (-p $pp_prov -e $pp_ep, default droce and msg)
# on TCP port+1, server in sns (with $pp_env in its environment), client in
# cns to sip, both bounded by tmo and the budget: both exit 0, every message
# acknowledged (#ack = #sent), no "Error at iteration"; else a failure with
# both outputs.  Counts runs; a row per run in $tmp/pp.table.
run_pp() { # label sns cns sip size iters tmo fi_pingpong-option...
	label=$1 sns=$2 cns=$3 sip=$4 size=$5 iters=$6 tmo=$7
	shift 7
	if [ "$(elapsed)" -ge "$budget" ]; then
		bad "$label -S $size: time budget of ${budget}s exhausted before this run"
		return 1
	fi
	left=$((budget - $(elapsed)))
	[ "$tmo" -le "$left" ] || tmo=$left
	port=$((port + 1))
	pp_runs=$((pp_runs + 1))
	out=$tmp/run$pp_runs
	rs=$(date +%s.%N)
	# shellcheck disable=SC2086 # $pp_env: none, one or more assignments
	ip netns exec "$sns" env ${pp_env:-} timeout -k 5 "$tmo" "$FI_PINGPONG" \
		-p "${pp_prov:-droce}" -e "${pp_ep:-msg}" -B "$port" -I "$iters" -S "$size" "$@" \
		>"$out.srv" 2>&1 &
	spid=$!
	listening "$spid" "$sns" "$port" "$out.srv" "$label: the fi_pingpong server" || return 1
	ip netns exec "$cns" timeout -k 5 "$tmo" "$FI_PINGPONG" -p "${pp_prov:-droce}" \
		-e "${pp_ep:-msg}" -P "$port" -I "$iters" -S "$size" "$@" "$sip" >"$out.cli" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	wall=$(echo "$rs $(date +%s.%N)" | awk '{ printf "%.2f", $2 - $1 }')
	res=$(awk '$1 ~ /^[0-9]/ && NF >= 8 { l = $0 } END { print l }' "$out.cli")
	pp_what="$label -S $size -I $iters${*:+ $*}"
	# fields: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	# shellcheck disable=SC2086
	set -- $res
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ $# -lt 8 ] || [ "$3" != "=$2" ] ||
		grep -q 'Error at iteration' "$out.cli" "$out.srv"; then
		bad "$pp_what: client exit $crc, server exit $src (124 = timed out after" \
			"${tmo}s), result '$res' (${wall}s)"
		echo "--- client:"
		tail -n 20 "$out.cli"
		echo "--- server:"
		tail -n 20 "$out.srv"
		printf '%-34s %8s %6s %10s %11s %7s\n' "$label" "$size" "$iters" FAILED - "$wall" \
			>>"$tmp/pp.table"
		return 1
	fi
	printf '%-34s %8s %6s %10s %11s %7s\n' "$label" "$size" "$iters" "$6" "$7" "$wall" \
		>>"$tmp/pp.table"
	echo "ok: $pp_what: $6 MB/s, $7 usec/xfer (${wall}s)"
}

# tshark reads a capture: with the RPC-over-RDMA heuristic off where this
# tshark has it (Wireshark 4.0's, on infiniband.payload, calls RC SEND
# payloads under 16 bytes malformed RPC-over-RDMA), and extra options.
tshark_r() { # file tshark-args...
	tr_f=$1
	shift
	# shellcheck disable=SC2086 # $heur: options
	timeout -k 5 120 "$TSHARK" -n -r "$tr_f" $heur "$@"
}
heur="--disable-heuristic rpcrdma_infiniband"

# tshark finds no malformed frame and no expert error in the capture.
no_errors() { # file
	tshark_r "$1" -Y '_ws.malformed || _ws.expert.severity == error' -T fields \
		-e frame.number -e frame.protocols -e _ws.expert.message >"$tmp/errors.txt" 2>/dev/null
	if [ -s "$tmp/errors.txt" ]; then
		bad "tshark: $(wc -l <"$tmp/errors.txt") malformed frames or expert errors:"
		head -n 20 "$tmp/errors.txt"
	else
		echo "ok: tshark: no malformed frame, no expert error"
	fi
}

need() { # what count minimum: a tshark count
	[ "$2" -ge "$3" ] || bad "tshark: $1: $2, at least $3 expected"
}

none() { # what count: a tshark count that must be 0
	[ "$2" -eq 0 ] || bad "tshark: $1: $2, none expected"
}

heur_check() { # file: $heur dropped when this tshark does not know the heuristic
	tshark_r "$1" -c 1 >/dev/null 2>&1 && return 0
	echo "note: this tshark has no heuristic rpcrdma_infiniband; running without disabling it"
	heur=""
}

need_mergecap() { # sets MERGECAP (wireshark-common, installed with tshark)
	MERGECAP=$(dirname "$TSHARK")/mergecap
	[ -x "$MERGECAP" ] || MERGECAP=$(command -v mergecap 2>/dev/null) ||
		hard "mergecap (wireshark-common, installed with tshark) not found"
}

# tools/droce-pcapcheck over a capture (its report in $tmp/name.txt): its
# "frames:" summary, or a failure with the report's first lines.
pcapcheck() { # name lines droce-pcapcheck-argument...
	pc_n=$1 pc_l=$2
	shift 2
	if timeout -k 5 60 "$PCAPCHECK" "$@" >"$tmp/$pc_n.txt" 2>&1; then
		echo "ok: droce-pcapcheck ($pc_n): $(sed -n 's/^frames: //p' "$tmp/$pc_n.txt")"
		return 0
	fi
	bad "droce-pcapcheck ($pc_n):"
	head -n "$pc_l" "$tmp/$pc_n.txt"
	# why it failed (--require / --forbid / --min-roce) comes last
	echo "..."
	tail -n 12 "$tmp/$pc_n.txt"
	return 1
}

cap_merge() { # out in...: the captures joined in time order (one clock), else the test fails
	timeout -k 5 60 "$MERGECAP" -w "$@" || { bad "mergecap"; exit 1; }
}

# tools/droce-xfer's server in ns ($xfer_env in its environment) on TCP
# $port, bounded by tmo, its log $tmp/name.srv, its PID xs_pid: listening,
# else a failure (and 1).
xfer_start() { # ns tmo name droce-xfer-argument...
	xs_ns=$1 xs_tmo=$2 xs_n=$3
	shift 3
	# shellcheck disable=SC2086 # $xfer_env: assignments
	ip netns exec "$xs_ns" env ${xfer_env:-} timeout -k 5 "$xs_tmo" "$XFER" -p droce \
		-P "$port" "$@" >"$tmp/$xs_n.srv" 2>&1 &
	xs_pid=$!
	listening "$xs_pid" "$xs_ns" "$port" "$tmp/$xs_n.srv" "the droce-xfer server ($xs_n)"
}

# Its client in ns ($xfer_env), log $tmp/name.cli: both exit 0 and the
# client's result line is want, exactly; else a failure with both logs' ends.
xfer_end() { # ns tmo name want label droce-xfer-argument...
	xe_ns=$1 xe_tmo=$2 xe_n=$3 xe_want=$4 xe_label=$5
	shift 5
	# shellcheck disable=SC2086
	ip netns exec "$xe_ns" env ${xfer_env:-} timeout -k 5 "$xe_tmo" "$XFER" -p droce \
		-P "$port" "$@" >"$tmp/$xe_n.cli" 2>&1
	xe_crc=$?
	wait "$xs_pid"
	xe_src=$?
	if [ $xe_crc -ne 0 ] || [ $xe_src -ne 0 ] || ! grep -qx "$xe_want" "$tmp/$xe_n.cli"; then
		bad "$xe_label: client exit $xe_crc, server exit $xe_src"
		tail -n 30 "$tmp/$xe_n.cli" "$tmp/$xe_n.srv"
		return 1
	fi
	echo "ok: $xe_label: $(tail -n 1 "$tmp/$xe_n.cli")"
}

# A process said it started (a line matching pattern in its output) within
# tenths x 0.1 s, or the test ends as a hard error with that output (at
# once if the process is gone).
wait_started() { # pid file pattern tenths what
	ws_i=0
	until grep -q "$3" "$2" 2>/dev/null; do
		ws_i=$((ws_i + 1))
		if [ $ws_i -gt "$4" ] || ! kill -0 "$1" 2>/dev/null; then
			cat "$2"
			hard "$5 did not start"
		fi
		sleep 0.1
	done
}

# The droce-xfer processes of a many-process test: server i in ns on TCP
# CPORT+i, client i in ns to IPA there, logs $tmp/si.log and $tmp/ci.log,
# droce's log at info (registry, CM responder role, frames left to other
# processes, drops).
XFER_LOG="env FI_LOG_LEVEL=info FI_LOG_PROV=droce"

mp_server() { # ns i: started and listening, its PID in mp_pid
	# shellcheck disable=SC2086 # $XFER_LOG: a command and assignments
	if [ "$2" = 1 ] || [ "$2" = 6 ]; then
		# no timeout wrapper: its PID is droce-xfer's own (ip netns exec
		# execs it), the PID a kill names (timeout(1) would also resume a
		# child that SIGSTOP stopped)
		ip netns exec "$1" $XFER_LOG "$XFER" -p droce -P $((CPORT + $2)) -w 60 -t 10 \
			>"$tmp/s$2.log" 2>&1 &
	else
		ip netns exec "$1" timeout -k 5 90 $XFER_LOG "$XFER" -p droce -P $((CPORT + $2)) \
			-w 60 -t 10 >"$tmp/s$2.log" 2>&1 &
	fi
	mp_pid=$!
	wait_listen "$1" $((CPORT + $2)) || hard "server $2 never listened on TCP $((CPORT + $2))"
}

mp_client() { # ns i timeout droce-xfer-argument...: started, its PID in mp_pid
	mc_ns=$1 mc_i=$2 mc_tmo=$3
	shift 3
	# shellcheck disable=SC2086
	ip netns exec "$mc_ns" timeout -k 5 "$mc_tmo" $XFER_LOG "$XFER" -p droce -s "$IPA" \
		-P $((CPORT + mc_i)) "$@" >"$tmp/c$mc_i.log" 2>&1 &
	mp_pid=$!
}

# Within 60 s (the clients' own limit is 90 s); at once, with the logs,
# if the client (PID $1) has ended without getting there.
gate_wait() { # client 1 (-W 1:$tmp/gate) is connected and at its first operation
	gw_i=0
	until [ -e "$tmp/gate" ]; do
		gw_i=$((gw_i + 1))
		if [ $gw_i -gt 600 ] || ! kill -0 "$1" 2>/dev/null; then
			[ -e "$tmp/gate" ] && break
			for gw_f in "$tmp/c1.log" "$tmp/s1.log" "$tmp/c.log"; do
				[ -e "$gw_f" ] || continue
				echo "--- $gw_f"
				tail -n 40 "$gw_f"
			done
			hard "client 1 never reached its first operation ($((gw_i / 10)) s)"
		fi
		sleep 0.1
	done
}

# The end of a many-process test: client 5 runs a short plan with server 5;
# client 1, whose server was killed, ends with a clean error (exit 1 and a
# reason); clients and servers 2-5 pass every operation; no log tells of
# frames a correct peer does not send.
mp_finish() { # ns-of-the-clients
	mp_client "$1" 5 60 -o send,write,read,fetch_add -S 1,4096,1m -I 2 -t 10
	cpids="$cpids $mp_pid"
	c1_rc=0
	wait "$c1_pid" || c1_rc=$?
	echo "client 1: exit $c1_rc after $(($(date +%s) - t_start)) s: $(tail -n 1 "$tmp/c1.log")"
	if [ $c1_rc -ne 1 ] || ! grep -q 'FAIL\|abort\|control connection' "$tmp/c1.log"; then
		bad "client 1 (server killed) should fail cleanly (exit 1, a reason), got exit $c1_rc:"
		tail -n 20 "$tmp/c1.log"
	fi
	# shellcheck disable=SC2086 # the PID lists
	xfer_wait c 2 $cpids
	# shellcheck disable=SC2086
	xfer_wait s 2 $spids
	echo "all done after $(($(date +%s) - t_start)) s"
	for mf_f in s2 s3 s4 s5 c2 c3 c4 c5; do
		if grep -q 'a correct peer does not send' "$tmp/$mf_f.log"; then
			bad "$mf_f: droce saw frames a correct peer does not send:"
			grep 'a correct peer does not send' "$tmp/$mf_f.log"
		fi
	done
}

# The names of a two-namespace test, unique per run ($$ in each):
# NSA/NSB <ns><pid>a/b, VA/VB <veth>a<pid>/b<pid>, IPA/IPB <net>.N.1/.2.
ns_pair_names() { # ns-prefix veth-prefix net-prefix (e.g. drpp dp 10.77)
	NSA=$1$$a NSB=$1$$b VA=${2}a$$ VB=${2}b$$
	net=$3.$(($$ % 200 + 20))
	IPA=$net.1 IPB=$net.2
}
