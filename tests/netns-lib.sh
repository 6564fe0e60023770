# netns-lib.sh - what tests/netns-pingpong.sh and tests/netns-netem.sh share:
# paths, skip/error exits, the prerequisites, droce's default configuration,
# the time budget, namespace set-up and waiting for a TCP listener.
# Sourced (POSIX sh), never run.  Sets top_srcdir, top_builddir, TSHARK,
# budget, FI_PINGPONG, PCAPCHECK, t0.

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

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, veth pairs, packet capture)"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not found"
ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here"
FI_PINGPONG=$(command -v fi_pingpong 2>/dev/null) ||
	skip "fi_pingpong not found (Debian package libfabric-bin)"
[ -n "$TSHARK" ] && [ -x "$TSHARK" ] || skip "tshark not found (Debian package tshark)"
PCAPCHECK=$top_builddir/tools/droce-pcapcheck
[ -x "$PCAPCHECK" ] || hard "$PCAPCHECK not built"
[ -f "$top_builddir/.libs/libdroce-fi.so" ] || hard "$top_builddir/.libs/libdroce-fi.so not built"

# No FI_DROCE_* from the caller: the defaults are what is under test.
for v in $(env | sed -n 's/^\(FI_DROCE_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
unset FI_PROVIDER
FI_PROVIDER_PATH=$top_builddir/.libs
export FI_PROVIDER_PATH

t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }

setup_ns() { # ns
	ip netns add "$1" || skip "cannot create network namespace $1 (no CAP_SYS_ADMIN?)"
	ip -n "$1" link set lo up
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

# A test's failure: said, remembered in $fail, the test goes on.
bad() {
	echo "FAIL: $*"
	fail=1
}

# The usual frame of a two-namespace test: a scratch directory $tmp (kept
# when DROCE_KEEP is set), fail=0, cap_pids="" (capture PIDs that cleanup
# interrupts first), the namespaces and their veth pair, and a cleanup on
# any exit that ends every process in them by PID and removes them.
ns_pair_up() { # tag nsa va ipa nsb vb ipb
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || hard "mktemp failed"
	cap_pids="" fail=0 pair_ns="$2 $5"
	trap ns_pair_cleanup EXIT
	trap 'echo "interrupted"; exit 1' INT TERM HUP
	setup_ns "$2"
	setup_ns "$5"
	veth_pair "$2" "$3" "$4" "$5" "$6" "$7"
}

ns_pair_cleanup() {
	trap - EXIT INT TERM HUP
	# shellcheck disable=SC2086 # the two namespace names
	teardown_ns "$cap_pids" $pair_ns
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
