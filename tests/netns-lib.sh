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
