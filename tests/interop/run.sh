#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# run.sh - droce against Linux soft-RoCE (rdma_rxe): the interop suite.
#
# usage: tests/interop/run.sh [-b BUILDDIR] [-o OUTDIR] [-k] [SCENARIO...]
#   -b DIR  droce's build tree (default: the current directory): the provider
#           DSO DIR/.libs/libdroce-fi.so, DIR/tools/droce-xfer,
#           DIR/tools/droce-pcapcheck, DIR/tests/interop/{ix-pcapcheck,droce-rping}
#   -o DIR  artifacts (default BUILDDIR/interop-artifacts): per scenario the
#           bridge capture, the guest console, each host command's output,
#           the wire checks; example.pcapng = the scenario's first step alone
#   -k      keep going after a failed step (default: a scenario stops at its
#           first failure, the remaining steps are reported "not run")
#   SCENARIO: pingpong rping xfer xfer4k loss ipv6 (default: all of them)
#
# Each scenario boots one rdma_rxe guest (qemu TCG, Debian 12 kernel, see
# build-guest.sh) on a bridge inside netns droce-ixbr, with droce on the
# host side (netns droce-ixh, veth vhost0 192.168.77.100, net_af_packet),
# captures the bridge, runs its steps in both roles, then checks the wire:
# every RoCEv2 frame's ICRC with droce's parser (ix-pcapcheck, and
# droce-pcapcheck when built), no malformed frame or expert error in tshark.
#
# Scenarios:
#   pingpong  fi_pingpong -e msg, droce (-p droce) <-> rxe (-p verbs), droce as
#             server and as client, sizes $IX_PP_SIZES (1 B..64 KiB), -c
#   rping     rping (rdma-core) in the guest against tests/interop/droce-rping,
#             guest as client and as server
#   xfer      droce-xfer (all operations, 0 B..1 MiB), both roles, link MTU
#             1500 = path MTU 1024
#   xfer4k    the same with a 4200-byte link MTU = path MTU 4096
#   loss      droce-xfer with 2 % random loss of RoCEv2 frames in both
#             directions on the bridge (nftables numgen: this kernel has no
#             netem), both roles; no retry-exceeded error allowed
#   ipv6      RoCEv2 over IPv6: the host side has only fd77::100/64 (droce
#             configures itself from it), the guest fd77::11/64 beside its
#             IPv4 address; droce serving fi_pingpong -6 (sizes
#             $IX_PP6_SIZES) and droce-xfer (a verbs client: every operation
#             but the atomics, as in xfer), rping against droce-rping in
#             both roles; every RoCEv2 frame IPv6 between the two addresses
# A scenario whose program is not built, or whose droce lacks FI_RMA, is
# skipped.  Needs root.  Ends with "interop: N passed, N failed, N skipped".
#
# Environment: IX_PP_SIZES, IX_PP_ITERS, IX_XFER_SIZES, IX_XFER_ITERS,
# IX_LOSS_PCT, IX_ICMP_FATAL=1 (an ICMP port unreachable for UDP 4791 fails
# the scenario; default: reported only), IX_NFT=1 (drop UDP 4791 in the host
# kernel too), DROCE_INTEROP_CACHE (default /var/cache/droce-interop).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(pwd)
OUT=""
KEEP_GOING=0
while getopts "b:o:kh" o; do
	case $o in
	b) BUILD=$(cd "$OPTARG" && pwd) ;;
	o) OUT=$OPTARG ;;
	k) KEEP_GOING=1 ;;
	*) sed -n '3,48p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
SCENARIOS=${*:-pingpong rping xfer xfer4k loss ipv6}
OUT=${OUT:-$BUILD/interop-artifacts}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# shellcheck source=lib.sh
. "$HERE/lib.sh"
IX_PROV_PATH=${IX_PROV_PATH:-$BUILD/.libs}
PP_SIZES=${IX_PP_SIZES:-1 15 16 64 1023 1024 1025 4096 16384 65536}
PP_ITERS=${IX_PP_ITERS:-10}
XFER_SIZES=${IX_XFER_SIZES:-0,1,7,64,1023,1024,1025,4096,4097,65536,1m}
XFER_ITERS=${IX_XFER_ITERS:-3}
LOSS_PCT=${IX_LOSS_PCT:-2}
# droce runs with its defaults: it takes the ACK timeout the CM exchange
# implies (rxe's REQ asks for 19, 2.1 s; its REP's ACK delay 15 gives 16)
# and backs off on retries.  IX_DROCE_TIMEOUT=N sets FI_DROCE_TIMEOUT.
IX_DROCE_TIMEOUT=${IX_DROCE_TIMEOUT-}
[ -n "$IX_DROCE_TIMEOUT" ] && IX_HOST_ENV+=("FI_DROCE_TIMEOUT=$IX_DROCE_TIMEOUT")
PCAPCHECK=$BUILD/tests/interop/ix-pcapcheck
DROCE_PCAPCHECK=$BUILD/tools/droce-pcapcheck
DROCE_RPING=$BUILD/tests/interop/droce-rping
XFER=$BUILD/tools/droce-xfer

if [ "$(id -u)" != 0 ]; then
	echo "interop: SKIP: needs root (network namespaces, qemu taps)"
	echo "interop: 0 passed, 0 failed, 1 skipped"
	exit 77
fi
if [ ! -f "$IX_PROV_PATH/libdroce-fi.so" ]; then
	echo "interop: FAIL: no provider at $IX_PROV_PATH/libdroce-fi.so (build droce first)"
	exit 1
fi
[ -x "$PCAPCHECK" ] || { echo "interop: FAIL: $PCAPCHECK not built (make tests/interop/ix-pcapcheck)"; exit 1; }

NPASS=0 NFAIL=0 NSKIP=0
SUMMARY=()
FAILS=()
cleanup() {
	h_kill
	ix_guest_stop
	ix_cap_stop
	[ -n "${EX_PID:-}" ] && kill -INT "$EX_PID" 2>/dev/null
	ix_net_down
}
trap cleanup EXIT
trap 'exit 143' INT TERM

# ---- the guest image: kernel + initramfs (cached), droce-xfer shipped in ----
EXTRA=$OUT/guest-extra
rm -rf "$EXTRA"
mkdir -p "$EXTRA"
if [ -x "$XFER" ] && head -c 4 "$XFER" | grep -q ELF; then
	cp -p "$XFER" "$EXTRA/"
fi
ix_log "guest image (build-guest.sh, cache $IX_CACHE)"
if ! bash "$HERE/build-guest.sh" -x "$EXTRA" >"$OUT/build-guest.log" 2>&1; then
	cat "$OUT/build-guest.log"
	echo "interop: FAIL: guest image"
	exit 1
fi
sed 's/^/    /' "$OUT/build-guest.log"
[ ${#IX_HOST_ENV[@]} -gt 0 ] && ix_log "droce runs with ${IX_HOST_ENV[*]}"

# RoCEv2 over IPv6 carries UDP checksum 0, rxe's as droce's (RFC 6935/6936;
# the ICRC covers the datagram): not a tshark error
HEUR="--disable-heuristic rpcrdma_infiniband -o udp.ignore_ipv6_zero_checksum:TRUE"
WSCONF=$(mktemp -d)
export WIRESHARK_CONFIG_DIR=$WSCONF

# ---- scenario plumbing ------------------------------------------------------

S_NAME="" S_DIR="" S_T0="" S_FAIL=0 S_STOP=0 S_NOTES=() S_STEPS=0
EX_PID=""

scenario_begin() { # NAME MTU
	S_NAME=$1 S_DIR=$OUT/$1 S_T0=$(ix_now) S_FAIL=0 S_STOP=0 S_NOTES=() S_STEPS=0
	rm -rf "$S_DIR"
	mkdir -p "$S_DIR"
	echo
	ix_log "=== scenario $S_NAME (link MTU $2) ==="
	if ! ix_net_up "$2"; then
		S_FAIL=1 S_STOP=1
		S_NOTES+=("network setup failed")
		return 1
	fi
	ix_cap_start "$S_DIR/bridge.pcapng"
	if ! ix_guest_boot "$S_DIR" "$2"; then
		S_FAIL=1 S_STOP=1
		S_NOTES+=("guest did not boot")
		return 1
	fi
	return 0
}

# example capture: the scenario's first step alone, for pcaps/interop-*.pcapng
example_start() {
	[ -f "$S_DIR/example.pcapng" ] && return 0
	ix_dumpcap "$S_DIR/example.pcapng" 30 -a duration:600
	EX_PID=$IX_DC_PID
}
example_stop() {
	ix_dumpcap_stop "$EX_PID"
	EX_PID=""
}

# step_done NAME RC_HOST RC_GUEST T0 [NOTE]
step_done() {
	local res=PASS
	S_STEPS=$((S_STEPS + 1))
	if [ "$2" != 0 ] || [ "$3" != 0 ]; then
		res=FAIL
		S_FAIL=1
		[ $KEEP_GOING = 1 ] || S_STOP=1
	fi
	printf '    %-44s %s (host rc=%s, guest rc=%s, %ss)%s\n' "$1" "$res" "$2" "$3" \
		"$(ix_dt "$(ix_now)" "$4")" "${5:+ $5}"
	echo "$1 $res host=$2 guest=$3" >>"$S_DIR/steps.txt"
	if [ $res = FAIL ]; then
		fail_excerpt "$1" "$2" "$3"
		# a failed step leaves the other side waiting: stop it now
		h_kill
		g_run 10 "killall -9 fi_pingpong rping droce-xfer 2>/dev/null; true" >/dev/null
	fi
}

# fail_excerpt NAME RC_HOST RC_GUEST: a failed step's last output lines on
# both sides, repeated after the summary, where a CI log's tail shows them
fail_excerpt() {
	local f g=${ST_HOUT%.host.out}.guest.out
	FAILS+=("--- $S_NAME: $1 (host rc=$2, guest rc=$3)")
	for f in "$ST_HOUT" "$g"; do
		[ -s "$f" ] || continue
		FAILS+=("  $(basename "$f"), last lines:")
		mapfile -t -O "${#FAILS[@]}" FAILS < <(tail -n 12 "$f" | cut -c1-200 | sed 's/^/    /')
	done
}

# step_begin NAME WAIT HOSTOUT TMO HOSTCMD -- GUESTCMD: a step's arguments
# (ST_NAME, ST_WAIT, ST_HOUT, ST_TMO, the array ST_HCMD, ST_GCMD) and its
# start ST_T0; the scenario's first step starts the example capture
step_begin() {
	ST_NAME=$1 ST_WAIT=$2 ST_HOUT=$3 ST_TMO=$4
	shift 4
	ST_HCMD=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		ST_HCMD+=("$1")
		shift
	done
	shift
	ST_GCMD=$*
	ST_T0=$(ix_now)
	[ $S_STEPS = 0 ] && example_start
}

# step_end HOST_RC GUEST_ID SECS [NOTE]: the guest command's status (waited
# for SECS) and output, the example capture stopped, the step's verdict
step_end() {
	local grc
	g_wait "$2" "$3"
	grc=$?
	g_out "$2" >"$S_DIR/$(basename "$ST_HOUT" .host.out).guest.out"
	example_stop
	step_done "$ST_NAME" "$1" "$grc" "$ST_T0" ${4:+"$4"}
}

# host_server_step NAME LISTEN(tcp:PORT|re:REGEX) HOSTOUT TMO HOSTCMD -- GUESTCMD
# droce serves, the guest connects
host_server_step() {
	local gid hrc
	step_begin "$@"
	h_start "$ST_HOUT" "$ST_TMO" "${ST_HCMD[@]}"
	case $ST_WAIT in
	tcp:*) h_wait_tcp "${ST_WAIT#tcp:}" 30 ;;
	re:*) h_wait_out "$ST_HOUT" "${ST_WAIT#re:}" 30 ;;
	esac || {
		h_wait
		step_done "$ST_NAME" "$?" "not-run" "$ST_T0" "(droce did not listen: $(tail -1 "$ST_HOUT"))"
		example_stop
		return
	}
	g_start "$ST_TMO" 0 "$ST_GCMD"
	gid=$G_ID
	h_wait
	hrc=$?
	step_end "$hrc" "$gid" $((ST_TMO + 15))
}

# guest_server_step NAME WAIT(tcp:PORT|cm) HOSTOUT TMO HOSTCMD -- GUESTCMD
# the guest serves, droce connects
guest_server_step() {
	local gid hrc
	step_begin "$@"
	g_start "$ST_TMO" "$ST_WAIT" "$ST_GCMD"
	gid=$G_ID
	if ! g_wait_listen "$gid" 40; then
		step_end "not-run" "$gid" 5 "(the guest did not listen)"
		return
	fi
	h_start "$ST_HOUT" "$ST_TMO" "${ST_HCMD[@]}"
	h_wait
	hrc=$?
	step_end "$hrc" "$gid" $((ST_TMO + 15))
}

# the wire checks of the scenario's capture
wire_check() {
	local pcap=$S_DIR/bridge.pcapng rc n
	if [ ! -s "$pcap" ]; then
		S_FAIL=1
		S_NOTES+=("no capture")
		return
	fi
	"$PCAPCHECK" -v "$pcap" >"$S_DIR/pcapcheck.txt" 2>&1
	rc=$?
	sed "s|$OUT/||" "$S_DIR/pcapcheck.txt" | sed 's/^/    ix-pcapcheck: /' | tail -8
	case $rc in
	0) ;;
	2)
		S_NOTES+=("ICMP port unreachable for UDP 4791 in the capture")
		[ "${IX_ICMP_FATAL:-0}" = 1 ] && S_FAIL=1
		;;
	*)
		S_FAIL=1
		S_NOTES+=("RoCEv2 frames refused by droce's parser (ICRC...)")
		;;
	esac
	if [ -x "$DROCE_PCAPCHECK" ]; then
		"$DROCE_PCAPCHECK" "$pcap" >"$S_DIR/droce-pcapcheck.txt" 2>&1
		rc=$?
		sed "s|$OUT/||" "$S_DIR/droce-pcapcheck.txt" | sed 's/^/    droce-pcapcheck: /' | tail -4
		if [ $rc = 1 ]; then
			S_FAIL=1
			S_NOTES+=("droce-pcapcheck failed")
		fi
	fi
	# shellcheck disable=SC2086
	tshark -n -r "$pcap" $HEUR -Y '_ws.malformed || _ws.expert.severity == error' \
		-T fields -e frame.number -e _ws.col.Protocol -e _ws.expert.message \
		>"$S_DIR/tshark-errors.txt" 2>"$S_DIR/tshark.err"
	sed -i '/Running as user "root"/d' "$S_DIR/tshark.err"
	n=$(grep -c . "$S_DIR/tshark-errors.txt")
	echo "    tshark: $n malformed frames or expert errors ($HEUR)"
	if [ "$n" != 0 ] || [ -s "$S_DIR/tshark.err" ]; then
		S_FAIL=1
		S_NOTES+=("tshark: $n malformed/expert-error frames")
		head -5 "$S_DIR/tshark-errors.txt" "$S_DIR/tshark.err" | sed 's/^/      /'
	fi
	if [ "${IX_IPV6:-0}" = 1 ]; then
		# every RoCEv2 frame on the bridge: IPv6, between the two addresses
		local pair n6 nother
		pair="((ipv6.src == $IX_HOST_IP6 && ipv6.dst == $IX_GUEST_IP6) ||
			(ipv6.src == $IX_GUEST_IP6 && ipv6.dst == $IX_HOST_IP6))"
		n6=$(tshark -n -r "$pcap" -Y "udp.dstport == 4791 && ipv6 && $pair" 2>/dev/null |
			grep -c .)
		nother=$(tshark -n -r "$pcap" -Y "udp.dstport == 4791 && !(ipv6 && $pair)" \
			2>/dev/null | grep -c .)
		echo "    RoCEv2 over IPv6 between $IX_HOST_IP6 and $IX_GUEST_IP6: $n6 frames," \
			"others: $nother"
		if [ "$n6" -lt 100 ] || [ "$nother" != 0 ]; then
			S_FAIL=1
			S_NOTES+=("RoCEv2 frames: $n6 over IPv6 between the two, $nother others")
		fi
	fi
	# shellcheck disable=SC2086
	tshark -n -r "$pcap" $HEUR -Y infiniband -T fields -e _ws.col.Info 2>/dev/null |
		sed -e 's/ QP=.*//' -e 's/^CM: //' -e 's/ *\[.*//' | sort | uniq -c | sort -rn >"$S_DIR/opcodes.txt"
}

scenario_end() {
	local res
	if [ -n "$IX_QEMU_PID" ]; then
		# the guest's view: rxe counters and kernel messages (rxe logs there)
		g_run 20 "cd /sys/class/infiniband/rxe0/ports/1/hw_counters 2>/dev/null && grep -H . * | grep -v ':0\$'; dmesg | grep -iE 'rxe|infiniband|rdma|ib_cm' | tail -30" \
			>"$S_DIR/guest-counters.txt" 2>&1
		if [ -s "$S_DIR/guest-counters.txt" ]; then
			echo "    guest rxe counters / kernel messages (non-zero):"
			sed 's/^/      /' "$S_DIR/guest-counters.txt" | head -20
		fi
		# a failed step: the path's own state, for a guest that stopped
		# sending (once, stop 31: no RoCE, TCP or ARP from it for 130 s)
		if [ $S_FAIL != 0 ]; then
			{
				g_run 20 "cat /proc/net/dev; cd /sys/class/net/eth0 && grep -H . queues/tx-*/tx_timeout carrier operstate statistics/tx_* statistics/rx_dropped statistics/rx_errors; grep -E 'virtio|CPU' /proc/interrupts; cat /proc/net/softnet_stat; dmesg | grep -iE 'virtio|eth0|watchdog|timed out' | grep -v 'speed is unknown' | tail -10"
				echo "host: qemu pid $IX_QEMU_PID, state $(awk '/^State/ {print $2}' /proc/$IX_QEMU_PID/status 2>/dev/null), wchan $(cat /proc/$IX_QEMU_PID/wchan 2>/dev/null)"
				# the device's queues as qemu sees them, transmit (1)
				# and receive (0): the guest's ring indices against
				# what qemu has taken (last_avail_idx) and holds (inuse)
				echo "host: qemu's virtio-net queues (1: transmit, 0: receive) and device status:"
				ix_qemu_ring 1
				ix_qemu_ring 0
				ix_qemu_mon "info virtio-queue-status $IX_NIC 1" "info virtio-queue-status $IX_NIC 0" \
					"info virtio-status $IX_NIC"
				ix_nsx ip -s link show tap1
				ix_nsx tc -s qdisc show dev tap1
			} >"$S_DIR/guest-net.txt" 2>&1
			echo "    the guest's network path (guest-net.txt):"
			sed 's/^/      /' "$S_DIR/guest-net.txt" | head -100
		fi
	fi
	ix_guest_stop
	ix_cap_stop
	example_stop
	ix_net_down
	# the example without the TCP out-of-band traffic: pcaps/interop-*.pcapng
	[ -s "$S_DIR/example.pcapng" ] &&
		tshark -n -r "$S_DIR/example.pcapng" -Y 'udp.port == 4791 || arp || icmp || icmpv6' \
			-w "$S_DIR/example-roce.pcapng" 2>/dev/null
	wire_check
	if [ $S_FAIL = 0 ]; then
		res=PASS
		NPASS=$((NPASS + 1))
	else
		res=FAIL
		NFAIL=$((NFAIL + 1))
	fi
	local line
	line=$(printf 'SCENARIO %-9s %s  wall %ss, %d steps%s' "$S_NAME" "$res" \
		"$(ix_dt "$(ix_now)" "$S_T0")" "$S_STEPS" \
		"$([ ${#S_NOTES[@]} -gt 0 ] && printf '; %s' "${S_NOTES[@]}")")
	ix_log "$line"
	SUMMARY+=("$line")
}

scenario_skip() { # NAME REASON
	local line
	line=$(printf 'SCENARIO %-9s SKIP  (%s)' "$1" "$2")
	echo
	ix_log "$line"
	SUMMARY+=("$line")
	NSKIP=$((NSKIP + 1))
}

droce_has_rma() {
	FI_PROVIDER_PATH=$IX_PROV_PATH fi_info -p droce -c FI_RMA >/dev/null 2>&1
}

# ---- scenarios -------------------------------------------------------------

sc_pingpong() {
	scenario_begin pingpong 1500 || { scenario_end; return; }
	local s
	for s in $PP_SIZES; do
		[ $S_STOP = 1 ] && break
		host_server_step "fi_pingpong droce-server size=$s" tcp:47592 \
			"$S_DIR/pp-droce-server-$s.host.out" 90 \
			fi_pingpong -p droce -e msg -I "$PP_ITERS" -S "$s" -c -- \
			fi_pingpong -p verbs -e msg -d rxe0 -I "$PP_ITERS" -S "$s" -c "$IX_HOST_IP"
	done
	for s in $PP_SIZES; do
		[ $S_STOP = 1 ] && break
		guest_server_step "fi_pingpong droce-client size=$s" tcp:47592 \
			"$S_DIR/pp-droce-client-$s.host.out" 90 \
			fi_pingpong -p droce -e msg -I "$PP_ITERS" -S "$s" -c "$IX_GUEST_IP" -- \
			fi_pingpong -p verbs -e msg -d rxe0 -I "$PP_ITERS" -S "$s" -c
	done
	scenario_end
}

# rping exits 0 whenever its connection ended in DISCONNECTED, pings done or
# not: count the ping lines it prints with -v instead (5 = -C 5).
# Exit 255 with "rdma_get_cm_event: Bad file descriptor" after the pings is
# the guest rping's own teardown race, not the peer's doing: its main
# thread destroys the CM event channel while cm_thread, having just handled
# the last event (DISCONNECTED, whenever the peer's DREP comes), calls
# rdma_get_cm_event on it again and exit()s on the error (rdma-core 44,
# Debian 12; later rping stops cm_thread through an eventfd first).  Seen
# once in CI after 5 verified pings over IPv6.
rping_checked() { # PREFIX CMD...
	local pfx=$1
	shift
	echo "$* >/tmp/rping.out 2>&1; rc=\$?; cat /tmp/rping.out;" \
		"n=\$(grep -c '^$pfx' /tmp/rping.out); echo \"rping rc=\$rc, \$n pings\";" \
		"if [ \$rc = 255 ] && grep -q 'rdma_get_cm_event: Bad file descriptor\$' /tmp/rping.out; then" \
		"echo 'rping: its teardown race (cm_thread read the destroyed event channel), after the pings'; rc=0; fi;" \
		"[ \$rc = 0 ] && [ \$n = 5 ]"
}

# rping_steps HOST_ADDR GUEST_ADDR GUEST_BIND LABEL FILE: rping in the guest
# against droce-rping at 64 and 4000 B, the guest as client, then as server
# bound to GUEST_BIND; LABEL in the step names, outputs FILE-droce-*
rping_steps() {
	local h=$1 g=$2 bind=$3 v=$4 f=$5 s
	for s in 64 4000; do
		[ $S_STOP = 1 ] && break
		host_server_step "rping$v client -> droce-rping server S=$s" 're:listening on' \
			"$S_DIR/$f-droce-server-$s.host.out" 60 \
			"$DROCE_RPING" -s -a "$h" -C 5 -S "$s" -v -t 50 -- \
			"$(rping_checked "ping data: " rping -c -a "$h" -C 5 -S "$s" -v -V)"
		[ $S_STOP = 1 ] && break
		guest_server_step "droce-rping$v client -> rping server S=$s" cm \
			"$S_DIR/$f-droce-client-$s.host.out" 60 \
			"$DROCE_RPING" -c -a "$g" -C 5 -S "$s" -v -t 50 -- \
			"$(rping_checked "server ping data: " rping -s -a "$bind" -C 5 -S "$s" -v -V)"
	done
}

sc_rping() {
	[ -x "$DROCE_RPING" ] || { scenario_skip rping "$DROCE_RPING not built"; return; }
	droce_has_rma || { scenario_skip rping "droce does not offer FI_RMA yet (fi_info -p droce -c FI_RMA)"; return; }
	scenario_begin rping 1500 || { scenario_end; return; }
	rping_steps "$IX_HOST_IP" "$IX_GUEST_IP" 0.0.0.0 "" rping
	scenario_end
}

# libfabric's verbs provider (1.17, and upstream since) cannot be the
# atomic requester: it puts the operand's *address* in the AtomicETH
# (wr.wr.atomic.compare_add = (uintptr_t)buf) and does FI_ATOMIC_READ as an
# RDMA READ; so with rxe as requester the atomics are left out (droce's
# atomic responder is still exercised by those frames, see README.md), and
# droce as requester runs them all.
VERBS_CLIENT_OPS=cm_data,send,senddata,write,writedata,read

xfer_steps() { # TMO
	local tmo=$1 st=${XFER_STEP_TMO:-30}
	# a small first step: the scenario's example capture (every operation,
	# droce requesting, rxe responding)
	guest_server_step "droce-xfer droce-client small (example)" tcp:47593 \
		"$S_DIR/xfer-example.host.out" 120 \
		"$XFER" -p droce -s "$IX_GUEST_IP" -S 0,64,1025 -I 1 -t 30 -- \
		droce-xfer -p verbs -d rxe0 -a "$IX_GUEST_IP" -t 30 -w 120
	[ $S_STOP = 1 ] && return
	host_server_step "droce-xfer droce-server (verbs client)" tcp:47593 \
		"$S_DIR/xfer-droce-server.host.out" "$tmo" \
		"$XFER" -p droce -a "$IX_HOST_IP" -t "$st" -w "$tmo" -- \
		droce-xfer -p verbs -d rxe0 -s "$IX_HOST_IP" -o "$VERBS_CLIENT_OPS" \
		-S "$XFER_SIZES" -I "$XFER_ITERS" -t "$st"
	[ $S_STOP = 1 ] && return
	guest_server_step "droce-xfer droce-client (verbs server)" tcp:47593 \
		"$S_DIR/xfer-droce-client.host.out" "$tmo" \
		"$XFER" -p droce -s "$IX_GUEST_IP" -S "$XFER_SIZES" -I "$XFER_ITERS" -t "$st" -- \
		droce-xfer -p verbs -d rxe0 -a "$IX_GUEST_IP" -t "$st" -w "$tmo"
}

xfer_ready() { # NAME
	[ -f "$EXTRA/droce-xfer" ] || { scenario_skip "$1" "tools/droce-xfer not built"; return 1; }
	droce_has_rma || { scenario_skip "$1" "droce does not offer FI_RMA yet (fi_info -p droce -c FI_RMA)"; return 1; }
	return 0
}

sc_xfer() {
	xfer_ready xfer || return
	scenario_begin xfer 1500 || { scenario_end; return; }
	xfer_steps 300
	scenario_end
}

sc_xfer4k() {
	xfer_ready xfer4k || return
	scenario_begin xfer4k 4200 || { scenario_end; return; }
	xfer_steps 300
	scenario_end
}

sc_loss() {
	xfer_ready loss || return
	scenario_begin loss 1500 || { scenario_end; return; }
	# random loss of RoCEv2 frames crossing the bridge, both directions (after
	# the capture point: br0 sees them, the peer does not)
	ix_nsx nft -f - <<NFT || S_NOTES+=("nft loss rule failed")
table bridge droce_loss {
  chain forward {
    type filter hook forward priority 0; policy accept;
    udp dport 4791 numgen random mod 100 < $LOSS_PCT counter drop
  }
}
NFT
	# rxe recovers a loss during a go-back-N retry only by its retransmit
	# timer (~2.2 s here): smaller sizes and a longer step timeout
	XFER_SIZES=${IX_LOSS_SIZES:-0,1,1024,4097,65536,256k} XFER_STEP_TMO=120 xfer_steps 600
	ix_nsx nft list table bridge droce_loss 2>/dev/null | grep -o 'counter packets [0-9]* bytes [0-9]*' |
		sed 's/^/    frames dropped: /'
	local f
	for f in "$S_DIR"/xfer-*.host.out "$S_DIR"/xfer-*.guest.out; do
		[ -f "$f" ] || continue
		if grep -qiE 'retry.?exceeded|RETRY_EXC|FI_ETIMEDOUT|status 12' "$f"; then
			S_FAIL=1
			S_NOTES+=("retry-exceeded error in $(basename "$f")")
		fi
	done
	scenario_end
}

PP6_SIZES=${IX_PP6_SIZES:-1 1024 4096 65536}

sc_ipv6() {
	xfer_ready ipv6 || return
	IX_IPV6=1
	scenario_begin ipv6 1500 || { scenario_end; IX_IPV6=0; return; }
	local s
	for s in $PP6_SIZES; do
		[ $S_STOP = 1 ] && break
		host_server_step "fi_pingpong -6 droce-server size=$s" tcp:47592 \
			"$S_DIR/pp6-droce-server-$s.host.out" 90 \
			fi_pingpong -6 -p droce -e msg -I "$PP_ITERS" -S "$s" -c -- \
			fi_pingpong -6 -p verbs -e msg -d rxe0 -I "$PP_ITERS" -S "$s" -c "$IX_HOST_IP6"
	done
	# With the guest serving, libfabric's verbs provider cannot be the
	# server over IPv6 here: fi_pingpong -6 moves only its TCP control
	# connection to IPv6 and a verbs server with no node still names its
	# IPv4 address (FI_SOCKADDR_IN 192.168.77.11, seen on the bridge), and
	# with an IPv6 node (droce-xfer -a fd77::11) verbs 1.17's
	# rdma_getaddrinfo fails in this guest ("No space left on device",
	# fi_getinfo -61).  rping serves over IPv6 (rdma_cm directly): droce
	# connects to it with droce-rping.
	if [ $S_STOP = 0 ]; then
		host_server_step "droce-xfer -6 droce-server (verbs client)" tcp:47593 \
			"$S_DIR/xfer6-droce-server.host.out" 300 \
			"$XFER" -p droce -a "$IX_HOST_IP6" -t 30 -w 300 -- \
			droce-xfer -p verbs -d rxe0 -s "$IX_HOST_IP6" -o "$VERBS_CLIENT_OPS" \
			-S "${IX_XFER6_SIZES:-0,1,1025,4096,65536,1m}" -I "$XFER_ITERS" -t 30
	fi
	if [ -x "$DROCE_RPING" ]; then
		rping_steps "$IX_HOST_IP6" "$IX_GUEST_IP6" "$IX_GUEST_IP6" " -6" rping6
	fi
	scenario_end
	IX_IPV6=0
}

T_SUITE=$(ix_now)
for sc in $SCENARIOS; do
	case $sc in
	pingpong | rping | xfer | xfer4k | loss | ipv6) "sc_$sc" ;;
	*) echo "interop: unknown scenario $sc"; NFAIL=$((NFAIL + 1)) ;;
	esac
done
rm -rf "$WSCONF"
echo
echo "==== interop summary (artifacts: $OUT; wall $(ix_dt "$(ix_now)" "$T_SUITE")s)"
printf '%s\n' "${SUMMARY[@]}" | tee "$OUT/summary.txt"
if [ ${#FAILS[@]} -gt 0 ]; then
	echo "==== failed steps"
	printf '%s\n' "${FAILS[@]}" | tee -a "$OUT/summary.txt"
fi
echo "interop: $NPASS passed, $NFAIL failed, $NSKIP skipped" | tee -a "$OUT/summary.txt"
[ $NFAIL = 0 ]
