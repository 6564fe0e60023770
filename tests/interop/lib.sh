# SPDX-License-Identifier: BSD-2-Clause
# shellcheck shell=bash
#
# lib.sh - plumbing of the interop suite, sourced by run.sh (bash).
#
# Topology (adapted from the rxe lab; everything inside two network
# namespaces this suite creates and deletes, no host interface touched):
#
#   qemu guest (rdma_rxe on eth0, 192.168.77.11, MAC 52:54:00:77:00:0b)
#     -- tap1 -- br0 (netns $IX_NS) -- vbr0 ==veth== vhost0 (netns $IX_HNS,
#        192.168.77.100/24, MAC 02:00:00:77:00:64): droce's net_af_packet port
#
# The guest is booted once per scenario; the host drives it over its second
# serial port (see guest/init); its console is $RUN/guest.log.  br0 is
# captured with dumpcap into one pcapng per scenario.

IX_CACHE=${DROCE_INTEROP_CACHE:-/var/cache/droce-interop}
IX_NS=${IX_NS:-droce-ixbr}
IX_HNS=${IX_HNS:-droce-ixh}
IX_NET=192.168.77
IX_GUEST_IP=$IX_NET.11
IX_HOST_IP=$IX_NET.100
# the ipv6 scenario (IX_IPV6=1): the host side has only this IPv6 address
# (droce's zero configuration on an IPv6-only interface), the guest this
# one beside its IPv4 address
IX_NET6=fd77::
IX_GUEST_IP6=${IX_NET6}11
IX_HOST_IP6=${IX_NET6}100
IX_HOST_MAC=02:00:00:77:00:64
IX_GUEST_MAC=52:54:00:77:00:0b

IX_T0=${IX_T0:-$(date +%s.%N)}
ix_now() { date +%s.%N; }
ix_dt() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", a-b}'; }
ix_log() { echo "[interop $(ix_dt "$(ix_now)" "$IX_T0")s] $*"; }

# ---- network ------------------------------------------------------------

ix_nsx() { ip netns exec "$IX_NS" "$@"; }
ix_hx() { ip netns exec "$IX_HNS" "$@"; }

# ix_net_up MTU: bridge netns with tap1, veth to the host netns.
ix_net_up() {
	local mtu=${1:-1500}
	ix_net_down
	ip netns add "$IX_NS" && ip netns add "$IX_HNS" || return 1
	ix_nsx ip link set lo up
	ix_nsx sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ix_nsx ip link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0
	ix_nsx ip link set br0 mtu "$mtu" up
	ix_nsx ip tuntap add dev tap1 mode tap
	ix_nsx ip link set tap1 master br0 mtu "$mtu" up
	ix_hx ip link set lo up
	ix_hx sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	ix_nsx ip link add vbr0 type veth peer name vhost0 netns "$IX_HNS"
	ix_nsx ip link set vbr0 master br0 mtu "$mtu" up
	if [ "${IX_IPV6:-0}" = 1 ]; then
		ix_hx sysctl -qw net.ipv6.conf.vhost0.accept_dad=0 \
			net.ipv6.conf.vhost0.router_solicitations=0 net.ipv6.conf.vhost0.accept_ra=0 \
			net.ipv6.conf.vhost0.addr_gen_mode=1 net.ipv6.conf.vhost0.disable_ipv6=0
		ix_hx ip link set vhost0 address "$IX_HOST_MAC" mtu "$mtu" up
		ix_hx ip addr add "$IX_HOST_IP6/64" dev vhost0 nodad
	else
		ix_hx ip link set vhost0 address "$IX_HOST_MAC" mtu "$mtu" up
		ix_hx ip addr add "$IX_HOST_IP/24" dev vhost0
	fi
	# wire-like frames only on the veth (no GSO super-frames, no partial
	# checksums) for net_af_packet; RoCEv2 frames are unaffected either way
	ix_nsx ethtool -K vbr0 gro off gso off tso off tx off rx off >/dev/null 2>&1
	ix_hx ethtool -K vhost0 gro off gso off tso off tx off rx off >/dev/null 2>&1
	# IX_NFT=1: also drop UDP 4791 in the host kernel (droce itself holds a
	# UDP socket on 4791 so that the kernel does not answer with ICMP)
	if [ "${IX_NFT:-0}" = 1 ]; then
		ix_hx nft -f - <<'NFT'
table inet droce_interop {
  chain input { type filter hook input priority filter; policy accept; udp dport 4791 counter drop; }
}
NFT
	fi
	return 0
}

ix_net_down() {
	ip netns list | grep -qw "^$IX_HNS" && ip netns del "$IX_HNS"
	ip netns list | grep -qw "^$IX_NS" && ip netns del "$IX_NS"
	return 0
}

# ix_set_mtu MTU: bridge side and host side (the guest does its own)
ix_set_mtu() {
	ix_nsx ip link set br0 mtu "$1"
	ix_nsx ip link set tap1 mtu "$1"
	ix_nsx ip link set vbr0 mtu "$1"
	ix_hx ip link set vhost0 mtu "$1"
}

# ---- capture ------------------------------------------------------------

# ix_dumpcap FILE TENTHS DUMPCAP-OPTION...: dumpcap on br0 into FILE (its
# log FILE.log), its PID in IX_DC_PID; waits until FILE has its header (at
# most TENTHS x 0.1 s), then 0.3 s
ix_dumpcap() {
	local f=$1 n=$2 i
	shift 2
	rm -f "$f"
	# not through a function: $! must be dumpcap itself (ip netns exec execs it)
	ip netns exec "$IX_NS" dumpcap -q -i br0 -s 0 -w "$f" "$@" >"$f.log" 2>&1 &
	IX_DC_PID=$!
	for i in $(seq "$n"); do
		[ -s "$f" ] && break
		sleep 0.1
	done
	sleep 0.3
}
# ix_dumpcap_stop PID: after 0.5 s for the last frames, SIGINT, and wait
ix_dumpcap_stop() {
	[ -n "$1" ] || return 0
	sleep 0.5
	kill -INT "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# the scenario's capture: ix_cap_start FILE, ix_cap_stop
IX_CAP_PID=""
ix_cap_start() {
	ix_dumpcap "$1" 50 -a duration:1800 -a filesize:262144
	IX_CAP_PID=$IX_DC_PID
}
ix_cap_stop() {
	ix_dumpcap_stop "$IX_CAP_PID"
	IX_CAP_PID=""
}

# ---- the guest ----------------------------------------------------------

IX_QEMU_PID=""
IX_CTL=""
IX_MON=""
# the guest's NIC as qemu's monitor names it
IX_NIC=/machine/peripheral/nic0/virtio-backend
IX_GLOG=""
IX_GSEQ=0
# ix_guest_boot RUNDIR MTU: boot the guest, wait until it is READY (bounded)
ix_guest_boot() {
	local run=$1 mtu=${2:-1500} t0 i
	IX_GLOG=$run/guest.log
	IX_CTL=$run/ctl
	IX_MON=$run/monitor
	rm -f "$IX_CTL.in" "$IX_CTL.out" "$IX_MON.in" "$IX_MON.out" "$IX_GLOG"
	mkfifo "$IX_CTL.in" "$IX_MON.in"
	: >"$IX_CTL.out"
	: >"$IX_MON.out"
	t0=$(ix_now)
	# event_idx=off: with the event index (VIRTIO_RING_F_EVENT_IDX) a
	# transmit notification that qemu does not get silences the guest for
	# good (every later check finds the index qemu waits on already
	# passed); with qemu's NO_NOTIFY flag instead, its next packet notifies
	# (README.md, "A guest that stops transmitting")
	ip netns exec "$IX_NS" qemu-system-x86_64 -accel tcg -machine pc -cpu max -smp 1 -m "${IX_GUEST_MB:-768}" \
		-nodefaults -display none -no-reboot \
		-kernel "$IX_CACHE/vmlinuz" -initrd "$IX_CACHE/initrd.gz" \
		-append "console=ttyS0,115200 loglevel=5 panic=-1 mitigations=off ix_ip=$IX_GUEST_IP/24 ix_mtu=$mtu$([ "${IX_IPV6:-0}" = 1 ] && echo " ix_ip6=$IX_GUEST_IP6/64")" \
		-netdev tap,id=n0,ifname=tap1,script=no,downscript=no \
		-device virtio-net-pci,id=nic0,netdev=n0,mac=$IX_GUEST_MAC,event_idx=off \
		-chardev file,id=s0,path="$IX_GLOG" -serial chardev:s0 \
		-chardev pipe,id=s1,path="$IX_CTL" -serial chardev:s1 \
		-chardev pipe,id=m0,path="$IX_MON" -mon chardev=m0,mode=readline \
		>"$run/qemu.log" 2>&1 &
	IX_QEMU_PID=$!
	# the control FIFO stays open for writing here (fd 9) for the guest's life
	exec 9<>"$IX_CTL.in"
	# and qemu's monitor (fd 8): ix_qemu_mon
	exec 8<>"$IX_MON.in"
	for i in $(seq $((${IX_BOOT_TMO:-120} * 5))); do
		grep -aq "^IXG .* READY" "$IX_GLOG" 2>/dev/null && break
		kill -0 "$IX_QEMU_PID" 2>/dev/null || break
		sleep 0.2
	done
	if ! grep -aq "^IXG .* READY" "$IX_GLOG" 2>/dev/null; then
		ix_log "guest did not boot (see $IX_GLOG, $run/qemu.log)"
		return 1
	fi
	ix_log "guest READY after $(ix_dt "$(ix_now)" "$t0")s ($(grep -a 'IXG .*active_mtu' "$IX_GLOG" | sed 's/.*active_mtu/active_mtu/'))"
}

ix_guest_stop() {
	[ -n "$IX_QEMU_PID" ] || return 0
	if kill -0 "$IX_QEMU_PID" 2>/dev/null; then
		echo "POWEROFF" >&9 2>/dev/null
		local i
		for i in $(seq 25); do kill -0 "$IX_QEMU_PID" 2>/dev/null || break; sleep 0.2; done
		kill "$IX_QEMU_PID" 2>/dev/null
	fi
	wait "$IX_QEMU_PID" 2>/dev/null
	exec 9>&- 8>&-
	IX_QEMU_PID=""
}

# ix_qemu_mon CMD...: the answers of qemu's human monitor to each CMD (one
# line each), without its echo of them; up to 5 s for qemu to answer.
# `info version` goes last: its answer marks the end of theirs.
ix_qemu_mon() {
	local off i ver
	[ -n "$IX_QEMU_PID" ] && kill -0 "$IX_QEMU_PID" 2>/dev/null || return 1
	ver=$(qemu-system-x86_64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')
	off=$(stat -c %s "$IX_MON.out")
	printf '%s\n' "$@" "info version" >&8
	for i in $(seq 25); do
		tail -c +$((off + 1)) "$IX_MON.out" | grep -aq "^$ver" && break
		sleep 0.2
	done
	# its echo of the commands is the lines with escape sequences
	tail -c +$((off + 1)) "$IX_MON.out" | tr -d '\r' | grep -av "$(printf '\033')\|(qemu)\|^$ver"
}

# ix_qemu_ring Q: queue Q's split ring as it is in the guest's memory: the
# index the guest has made available and the used index qemu wrote, with
# each side's event index (VIRTIO_RING_F_EVENT_IDX): qemu is notified when
# the available index passes avail_event, the guest when the used index
# passes used_event.  Q's status (ix_qemu_mon) gives the ring's addresses.
ix_qemu_ring() {
	local st num avail used
	st=$(ix_qemu_mon "info virtio-queue-status $IX_NIC $1")
	num=$(echo "$st" | awk '$1 == "num:" {print $2; exit}')
	avail=$(echo "$st" | awk '$1 == "avail:" {print $2; exit}')
	used=$(echo "$st" | awk '$1 == "used:" {print $2; exit}')
	[ -n "$num" ] && [ -n "$avail" ] && [ -n "$used" ] || return 1
	# avail: flags, idx, ring[num], used_event; used: flags, idx,
	# ring[num] of 8 bytes, avail_event (each answer: "ADDR: v [v]")
	ix_qemu_mon "xp /2hx $avail" "xp /1hx $((avail + 4 + 2 * num))" \
		"xp /2hx $used" "xp /1hx $((used + 4 + 8 * num))" | {
		local af ai ue uf ui ae
		read -r _ af ai && read -r _ ue && read -r _ uf ui && read -r _ ae || return 1
		echo "queue $1 in guest memory: available idx $((ai)) (flags $af, used_event $((ue)))," \
			"used idx $((ui)) (flags $uf, avail_event $((ae)))"
	}
}

# g_start TMO WAIT CMD...: start CMD in the guest; its id is in G_ID.
# WAIT: 0 | tcp:PORT | cm (see guest/init)
G_ID=""
g_start() {
	local tmo=$1 w=$2
	shift 2
	IX_GSEQ=$((IX_GSEQ + 1))
	G_ID=g$IX_GSEQ
	echo "RUN $G_ID $tmo $w $*" >&9
}
# g_wait_listen ID SECS: 0 once the guest says LISTEN ID
g_wait_listen() {
	local i
	for i in $(seq $(($2 * 5))); do
		grep -aq "^IXG .* LISTEN $1[[:space:]]*\$" "$IX_GLOG" && return 0
		grep -aq "^IXG .* DONE $1 " "$IX_GLOG" && return 1
		sleep 0.2
	done
	return 1
}
# g_wait ID SECS: the command's exit status (255: no answer in time)
g_wait() {
	local i l
	for i in $(seq $(($2 * 5))); do
		l=$(grep -a "^IXG .* DONE $1 rc=" "$IX_GLOG" | tail -1 | tr -d '\r')
		if [ -n "$l" ]; then
			return "${l##*rc=}"
		fi
		kill -0 "$IX_QEMU_PID" 2>/dev/null || return 255
		sleep 0.2
	done
	return 255
}
# g_out ID: the command's output lines
g_out() { grep -a "^\[$1\] " "$IX_GLOG" | tr -d '\r' | sed "s/^\[$1\] //"; }
# g_run TMO CMD...: run and wait; prints output; returns rc
g_run() {
	g_start "$1" 0 "${@:2}"
	g_wait "$G_ID" $(($1 + 10))
	local rc=$?
	g_out "$G_ID"
	return $rc
}

# ---- host side (droce in $IX_HNS) ---------------------------------------

# h_start OUTFILE TMO CMD...: run CMD in the host netns in the background
# (own process group), bounded by TMO, with IX_HOST_ENV (VAR=value...) in its
# environment; sets H_PID
H_PID=""
IX_HOST_ENV=()
h_start() {
	local out=$1 tmo=$2
	shift 2
	setsid timeout -k 5 "$tmo" ip netns exec "$IX_HNS" env FI_PROVIDER_PATH="$IX_PROV_PATH" \
		"${IX_HOST_ENV[@]}" "$@" >"$out" 2>&1 &
	H_PID=$!
}
# h_wait: exit status of the last h_start
h_wait() {
	local rc
	wait "$H_PID"
	rc=$?
	H_PID=""
	return $rc
}
h_kill() {
	[ -n "$H_PID" ] && kill -TERM -- "-$H_PID" 2>/dev/null
	[ -n "$H_PID" ] && wait "$H_PID" 2>/dev/null
	H_PID=""
}
# h_wait_tcp PORT SECS: a TCP listener on PORT in the host netns
h_wait_tcp() {
	local i
	for i in $(seq $(($2 * 5))); do
		ix_hx ss -Hltn "sport = :$1" 2>/dev/null | grep -q LISTEN && return 0
		[ -n "$H_PID" ] && ! kill -0 "$H_PID" 2>/dev/null && return 1
		sleep 0.2
	done
	return 1
}
# h_wait_out FILE REGEX SECS
h_wait_out() {
	local i
	for i in $(seq $(($3 * 5))); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		[ -n "$H_PID" ] && ! kill -0 "$H_PID" 2>/dev/null && return 1
		sleep 0.2
	done
	return 1
}
