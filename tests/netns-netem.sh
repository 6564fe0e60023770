#!/bin/sh
# shellcheck disable=SC2086,SC2046 # word splitting of option lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-netem.sh - droce's loss recovery on a bad link: fi_pingpong between
# two network namespaces whose link loses, duplicates and reorders 2 % of
# the frames each way and delays the rest by 1 ms.
#
# Topology (names unique per run, $$ in each):
#
#   netns drne<pid>a             netns drne<pid>m              netns drne<pid>b
#   dna<pid> 10.77.N.1 ==veth== dma<pid> [link] dmb<pid> ==veth== dnb<pid> 10.77.N.2
#
# Why a middle namespace: with FI_DROCE_QDISC_BYPASS=1 (DPDK's own default)
# droce's net_af_packet sends past the qdisc layer, so a qdisc on the
# interface droce sends from would not see droce's frames; frames forwarded
# by a middle hop go through that hop's egress qdiscs whatever the setting,
# and both ends stay untouched.  The link in the middle is
#   netem  a Linux bridge between dma and dmb, and on both bridge ports
#          `tc qdisc add dev <port> root netem loss 2% duplicate 2%
#          reorder 2% delay 1ms` - both ports, because a root qdisc acts on
#          egress only: dmb's carries A->B, dma's carries B->A;
#   user   when the kernel has no sch_netem (as on a kernel built without
#          CONFIG_NET_SCH_NETEM), a small user-space forwarder (perl, packet
#          sockets) applies the same model between dma and dmb: per frame,
#          2 % lost, else 2 % sent twice, and each copy 2 % sent at once
#          (overtaking the queue: reordering) or else after 1 ms.
# DROCE_NETEM_MODE=netem|user forces one (default: netem if it works).
# No FI_DROCE_* variable is set: droce runs with its defaults.
# TSO, GSO and GRO are off on all four veth ends (ethtool): with them the
# kernel hands over TCP segments of up to 64 KiB, which the forwarder's
# packet sockets cannot send on a 1500-byte link; every such segment of a
# control channel (fi_pingpong's, droce-xfer's) was lost and stalled the
# channel for a retransmit timeout, 1-7 s each.  UDP segmentation is off
# too: droce's UDP GSO super-frames (FI_DROCE_GSO) are then cut by the
# kernel before the veth, so the link loses packets one by one, as a
# network does behind a NIC that cuts them.
#
# Asserts:
#  1. fi_pingpong -p droce -e msg -c (data verification) exits 0 on both sides
#     with every message acknowledged, both ways, for 64 B, 4 KiB, 64 KiB
#     and 1 MiB messages, each run within its timeout;
#  2. the link really impaired the traffic (netem's or the forwarder's drop,
#     duplicate and reorder counts are not zero);
#  3. tools/droce-pcapcheck on a capture in the middle namespace (on dma:
#     A's frames as A sent them, B's as the link delivered them to A): every
#     RoCE frame parses with a valid ICRC, the connection setup is there,
#     and the loss recovery ran: RETRANSMIT (a PSN sent again with new
#     bytes) and NAK_PSN_SEQ (a PSN sequence error NAK) are present; it
#     prints the retransmission, duplicate, gap and NAK counts.  A second
#     capture on dmb (B's side of the link) must parse as well; the two
#     side by side tell which direction lost what;
#  4. tools/droce-xfer runs every send, RMA and atomic operation at 0 B..1 MiB
#     through the same link with data verified; with the user-space
#     forwarder, the RTU of its connection is dropped on purpose, so the
#     passive side must come up on the CM's REP retry (every 4.3 s) while
#     the active side is connected already; the server waits for that
#     through at least 5 REP resends; and the client's QP logs at close
#     (FI_LOG_LEVEL=info) that it resent some, not all, of its packets.
#
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns / fi_pingpong / tshark
# / ethtool, or neither sch_netem nor perl with Time::HiRes; no tshark or
# ethtool is a failure in CI), 99 hard error.  Every command runs under
# timeout; no new run starts after DROCE_NETNS_BUDGET seconds (default 120).
# On failure the captures are kept as $top_builddir/netns-netem.pcapng (A's
# side of the link) and $top_builddir/netns-netem-b.pcapng (B's side).

set -u

. "$(dirname "$0")/netns-lib.sh"
mode=${DROCE_NETEM_MODE:-auto}
LOSS=2
DUP=2
REORDER=2
DELAY_MS=1

case $mode in
auto | netem | user) ;;
*) hard "DROCE_NETEM_MODE must be auto, netem or user" ;;
esac
have_perl=no
perl -MTime::HiRes -MSocket -e 1 >/dev/null 2>&1 && have_perl=yes
if ! command -v ethtool >/dev/null 2>&1; then
	# tools/install-deps.sh installs it
	[ "${CI:-}" != true ] || { echo "FAIL: ethtool not found, and CI=true"; exit 1; }
	skip "ethtool not found (Debian package ethtool): offloads cannot be turned off"
fi

NSA=drne$$a
NSB=drne$$b
NSM=drne$$m
VA=dna$$
VB=dnb$$
MA=dma$$
MB=dmb$$
BR=dbr$$
net=10.77.$(($$ % 200 + 20))
IPA=$net.1
IPB=$net.2
imp_pid=""
ns_frame netns-netem "$NSA" "$NSB" "$NSM"
keep_on_fail m.pcapng netns-netem.pcapng
keep_on_fail mb.pcapng netns-netem-b.pcapng

# ---- topology -----------------------------------------------------------------

ip -n "$NSA" link add "$VA" type veth peer name "$MA" netns "$NSM" || hard "veth $VA/$MA"
ip -n "$NSB" link add "$VB" type veth peer name "$MB" netns "$NSM" || hard "veth $VB/$MB"
for l in "$NSA $VA" "$NSB $VB" "$NSM $MA" "$NSM $MB"; do
	set -- $l
	ip -n "$1" link set "$2" mtu 1500 up
	# no frame larger than the MTU (see the header): the ends' TSO/GSO
	# would build them, the middle's GRO would merge them; droce's UDP
	# GSO super-frames (FI_DROCE_GSO) are cut by the kernel before the
	# veth, as before a NIC without the offload
	ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx-udp-segmentation off ||
		hard "ethtool -K $2 tso off gso off gro off tx-udp-segmentation off"
done
ip -n "$NSA" addr add "$IPA/24" dev "$VA"
ip -n "$NSB" addr add "$IPB/24" dev "$VB"

netem_args="loss $LOSS% duplicate $DUP% reorder $REORDER% delay ${DELAY_MS}ms"
if [ "$mode" != user ] && command -v tc >/dev/null 2>&1 &&
	tc -n "$NSM" qdisc add dev "$MA" root netem $netem_args 2>"$tmp/tc.err"; then
	tc -n "$NSM" qdisc add dev "$MB" root netem $netem_args || hard "netem on $MB"
	ip -n "$NSM" link add "$BR" type bridge || hard "cannot create bridge $BR"
	ip -n "$NSM" link set "$MA" master "$BR"
	ip -n "$NSM" link set "$MB" master "$BR"
	ip -n "$NSM" link set "$BR" up
	mode=netem
	echo "link: bridge $BR in $NSM, netem on both ports: $netem_args"
elif [ "$mode" = netem ]; then
	skip "DROCE_NETEM_MODE=netem but netem does not work here: $(cat "$tmp/tc.err" 2>/dev/null)"
elif [ "$have_perl" = yes ]; then
	mode=user
	echo "link: no sch_netem in this kernel ($(head -n 1 "$tmp/tc.err" 2>/dev/null));" \
		"user-space forwarder in $NSM: loss $LOSS%, duplicate $DUP%, reorder $REORDER%," \
		"delay ${DELAY_MS}ms, each direction"
	cat >"$tmp/impair.pl" <<'EOF'
# impair.pl IF_A IF_B LOSS% DUP% REORDER% DELAY_S SEED RTU_FLAG: forward
# every frame between two interfaces through packet sockets, netem's model
# per frame: lost (LOSS%), else sent twice (DUP%); each copy sent at once
# (REORDER%: it overtakes the delayed ones) or after DELAY_S.  Once the file
# RTU_FLAG exists, the next IB CM RTU from IF_B's side is dropped (one
# only).  Statistics on stderr at SIGINT/SIGTERM.
use strict;
use warnings;
use Socket qw(SOL_SOCKET SO_RCVBUF SO_SNDBUF MSG_DONTWAIT);
use Time::HiRes qw(time);

my ($if_a, $if_b, $loss, $dup, $reorder, $delay, $seed, $rtu_flag) = @ARGV;
my $rtu_done = 0;

# An IB CM RTU: IPv4/UDP 4791, BTH opcode UD SEND_ONLY, MAD attribute 0x0014
# (Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + DETH 8, attribute at MAD + 16).
sub is_rtu {
	my ($f) = @_;
	return length($f) >= 84 && unpack('n', substr($f, 12, 2)) == 0x0800 &&
	    ord(substr($f, 14, 1)) == 0x45 && ord(substr($f, 23, 1)) == 17 &&
	    unpack('n', substr($f, 36, 2)) == 4791 && ord(substr($f, 42, 1)) == 0x64 &&
	    unpack('n', substr($f, 78, 2)) == 0x0014;
}
srand($seed);
my ($AF_PACKET, $SOCK_RAW, $ETH_P_ALL, $PACKET_OUTGOING) = (17, 3, 3, 4);

sub open_if {
	my ($name) = @_;
	open(my $h, '<', "/sys/class/net/$name/ifindex") or die "$name: $!\n";
	my $idx = <$h>;
	chomp $idx;
	socket(my $s, $AF_PACKET, $SOCK_RAW, unpack('S', pack('n', $ETH_P_ALL)))
	    or die "socket: $!\n";
	setsockopt($s, SOL_SOCKET, SO_RCVBUF, 8 << 20);
	setsockopt($s, SOL_SOCKET, SO_SNDBUF, 8 << 20);
	bind($s, pack('S n i S C C a8', $AF_PACKET, $ETH_P_ALL, $idx, 0, 0, 0, ''))
	    or die "bind $name: $!\n";
	return $s;
}

my $sa = open_if($if_a);
my $sb = open_if($if_b);
my %st;
my $stop = 0;
$SIG{INT} = $SIG{TERM} = sub { $stop = 1 };
my @q;    # [release time, socket, frame, direction], in release order
my $rin = '';
vec($rin, fileno($sa), 1) = 1;
vec($rin, fileno($sb), 1) = 1;
my @dirs = ([$sa, $sb, "$if_a->$if_b"], [$sb, $sa, "$if_b->$if_a"]);
print STDERR "forwarding\n";

# A kernel hands a veth frame over with its TCP checksum left for the
# "hardware" (CHECKSUM_PARTIAL); a packet socket reads it as it is, so the
# checksum of a TCP segment (fi_pingpong's control connection) is computed
# here before the frame goes on.  droce's frames are complete already (UDP
# checksum 0, as RoCEv2 sends them) and are not touched.
sub fix_tcp {
	my ($f) = @_;
	return $f if length($f) < 54 || unpack('n', substr($f, 12, 2)) != 0x0800;
	my $vihl = ord(substr($f, 14, 1));
	my $ihl = ($vihl & 15) * 4;
	return $f if ($vihl >> 4) != 4 || ord(substr($f, 23, 1)) != 6 || $ihl < 20;
	my $l4len = unpack('n', substr($f, 16, 2)) - $ihl;
	my $l4 = 14 + $ihl;
	return $f if $l4len < 20 || $l4 + $l4len > length($f);
	substr($f, $l4 + 16, 2) = "\0\0";
	my $d = substr($f, 26, 8) . pack('n n', 6, $l4len) . substr($f, $l4, $l4len);
	$d .= "\0" if length($d) & 1;
	my $sum = 0;
	$sum += $_ for unpack('n*', $d);
	$sum = ($sum & 0xffff) + ($sum >> 16) while $sum >> 16;
	substr($f, $l4 + 16, 2) = pack('n', ~$sum & 0xffff);
	return $f;
}

sub out {
	my ($s, $frame, $dir) = @_;
	if (send($s, $frame, 0)) { $st{"$dir sent"}++ } else { $st{"$dir send errors"}++ }
}

while (!$stop) {
	my $now = time;
	while (@q && $q[0][0] <= $now) {
		my $e = shift @q;
		out($e->[1], $e->[2], $e->[3]);
	}
	my $to = @q ? $q[0][0] - $now : 0.2;
	$to = 0 if $to < 0;
	my $n = select(my $rout = $rin, undef, undef, $to);
	next if !defined $n || $n <= 0;
	for my $d (@dirs) {
		my ($in, $outs, $dir) = @$d;
		next unless vec($rout, fileno($in), 1);
		for (1 .. 512) {
			my $from = recv($in, my $buf, 65536, MSG_DONTWAIT);
			last unless defined $from;
			next if (unpack('S n i S C', $from))[4] == $PACKET_OUTGOING;
			$st{"$dir in"}++;
			if ($in == $sb && !$rtu_done && -e $rtu_flag && is_rtu($buf)) {
				$rtu_done = 1;
				$st{"$dir RTU dropped"}++;
				next;
			}
			if (rand(100) < $loss) { $st{"$dir lost"}++; next; }
			$buf = fix_tcp($buf);
			my $copies = 1;
			if (rand(100) < $dup) { $copies = 2; $st{"$dir duplicated"}++; }
			for (1 .. $copies) {
				if (rand(100) < $reorder) {
					$st{"$dir reordered"}++;
					out($outs, $buf, $dir);
				} else {
					push @q, [time + $delay, $outs, $buf, $dir];
				}
			}
		}
	}
}
print STDERR "$_: $st{$_}\n" for sort keys %st;
EOF
	ip -n "$NSM" link set "$MA" up
	ip -n "$NSM" link set "$MB" up
	ip netns exec "$NSM" timeout -k 5 $((budget + 30)) perl "$tmp/impair.pl" "$MA" "$MB" \
		$LOSS $DUP $REORDER "$(echo "$DELAY_MS" | awk '{ print $1 / 1000 }')" $$ "$tmp/drop-rtu" \
		2>"$tmp/impair.log" &
	imp_pid=$!
	wait_started "$imp_pid" "$tmp/impair.log" forwarding 50 "the user-space forwarder"
else
	skip "no way to impair the link: tc netem failed ($(head -n 1 "$tmp/tc.err" 2>/dev/null))" \
		"and perl with Time::HiRes is not installed"
fi

veth_wait_up "$NSA" "$VA" "$NSB" "$VB"
echo "topology: $NSA/$VA $IPA <-> [$NSM: $MA | $MB] <-> $NSB/$VB $IPB, MTU 1500"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- capture in the middle, on both sides of the link ------------------------------

# dma: A's frames as A sent them, B's as the link delivered them; dmb: the
# other way round.  A frame in one and not the other was lost on the link.
cap_start "$NSM" "$MA" "$tmp/m.pcapng" -B 128
cap_start "$NSM" "$MB" "$tmp/mb.pcapng" -B 128
cap_wait "$tmp/m.pcapng" "$tmp/mb.pcapng"

# ---- fi_pingpong runs ------------------------------------------------------------

port=47600

for spec in 64:200 4096:100 65536:20 1048576:5; do
	size=${spec%:*}
	it=${spec#*:}
	run_pp "server A, client B" "$NSA" "$NSB" "$IPA" "$size" "$it" 40 -c
	run_pp "server B, client A" "$NSB" "$NSA" "$IPB" "$size" "$it" 40 -c
done

# ---- droce-xfer: every RMA and atomic operation through the same link (issue 5) ---

if [ -x "$XFER" ] && [ "$(elapsed)" -lt "$budget" ]; then
	port=$((port + 1))
	tmo=$((budget - $(elapsed) + 30))
	# the forwarder drops this connection's RTU (B's, the active side's):
	# the passive side comes up on the CM's REP retry while the client,
	# connected since the REP, already waits on the control channel (for
	# 3 x its -t: 30 s).  The REP is resent every 4.096 us x
	# 2^FI_DROCE_CM_TIMEOUT (the provider's default, as fi_info -e shows
	# it: 20, 4.29 s), and each resend or the RTU answering it may be lost
	# on this link too, so the server's wait for FI_CONNECTED (droce-xfer
	# -t, default 10 s: only 2 resends) holds 5 resends: ceil(5 x 4.29) +
	# 3 = 25 s (the 3 s for the last RTU to cross and the server to poll).
	cm_timeout=$(timeout 30 fi_info -e 2>/dev/null |
		sed -n '/FI_DROCE_CM_TIMEOUT:/{n;s/.*(default: \([0-9]*\),.*/\1/p;}')
	[ -n "$cm_timeout" ] || hard "fi_info -e shows no default of FI_DROCE_CM_TIMEOUT"
	rep_ms=$(awk -v e="$cm_timeout" 'BEGIN { printf "%d", 4.096e-3 * 2 ^ e }')
	conn_wait=$(((5 * rep_ms + 999) / 1000 + 3))
	echo "the server waits ${conn_wait} s for FI_CONNECTED: 5 REP resends of ${rep_ms} ms"
	: >"$tmp/drop-rtu"
	crc=99 src=99
	if xfer_start "$NSA" "$tmo" xfer -w 30 -t "$conn_wait"; then
		ip netns exec "$NSB" env FI_LOG_LEVEL=info FI_LOG_PROV=droce \
			timeout -k 5 "$tmo" "$XFER" -p droce -s "$IPA" -P "$port" \
			-S 0,1,4097,65536,1048576 -I 3 >"$tmp/xfer.cli" 2>&1
		crc=$?
		wait "$xs_pid"
		src=$?
	fi
	if [ $crc -ne 0 ] || [ $src -ne 0 ] ||
		! grep -q ' 0 failed, 0 skipped$' "$tmp/xfer.cli"; then
		echo "FAIL: droce-xfer through the impaired link: client exit $crc, server exit $src"
		# the reasons first (a connection that never came up fails
		# every test after it), then the ends of both logs
		echo "--- client, failures:"
		grep -v '^PASS' "$tmp/xfer.cli" | grep -v 'not run: no connection' | head -n 30
		echo "--- server, failures:"
		grep -v '^PASS' "$tmp/xfer.srv" | grep -v 'not run: no connection' | head -n 30
		echo "--- client, last lines:"
		tail -n 10 "$tmp/xfer.cli"
		fail=1
	else
		echo "ok: droce-xfer (send, senddata, write, writedata, read, atomics; 0 B..1 MiB)" \
			"through the impaired link: $(grep 'passed,.* failed,' "$tmp/xfer.cli" | tail -n 1)"
		# and its QP says, at close, what it resent and why (info level)
		rs=$(sed -n 's/.*qp 0x[0-9a-f]\{6\} resent \([0-9]*\) of \([0-9]*\) request packets; timeouts [0-9]*.*/\1 \2/p' \
			"$tmp/xfer.cli" | tail -n 1)
		if [ -n "$rs" ] && [ "${rs% *}" -gt 0 ] && [ "${rs% *}" -lt "${rs#* }" ]; then
			echo "ok: the client's QP logged at close: $(grep -o 'resent [0-9]* of .*' \
				"$tmp/xfer.cli" | tail -n 1)"
		else
			echo "FAIL: the client's QP logged no resends at close through the lossy link (${rs:-none})"
			fail=1
		fi
	fi
else
	echo "FAIL: droce-xfer not built or no time left for it"
	fail=1
fi

# ---- stop capture and link, read their counters -------------------------------------

cap_stop
for c in "m:A's side ($MA)" "mb:B's side ($MB)"; do
	f=$tmp/${c%%:*}.pcapng
	drops=$(cap_drops "$f")
	echo "capture on ${c#*:}: $(cap_got "$f") frames${drops:+, $drops dropped by the kernel}"
done

if [ "$mode" = netem ]; then
	drops=0
	for d in "$MA" "$MB"; do
		line=$(tc -n "$NSM" -s qdisc show dev "$d" | grep -m 1 'Sent')
		echo "netem on $d: $line"
		n=$(echo "$line" | sed -n 's/.*dropped \([0-9]*\).*/\1/p')
		drops=$((drops + ${n:-0}))
	done
	if [ "$drops" -eq 0 ]; then
		echo "FAIL: netem dropped nothing: the link was not impaired"
		fail=1
	fi
	echo "note: netem mode: droce-xfer's RTU is not dropped on purpose (the user-space" \
		"forwarder does that)"
else
	kill -INT "$imp_pid" 2>/dev/null
	wait "$imp_pid" 2>/dev/null
	imp_pid=""
	sed 's/^/forwarder: /' "$tmp/impair.log" | grep -v 'forwarder: forwarding'
	for what in lost duplicated reordered; do
		n=$(awk -v w="$what" '$0 ~ " " w ": " { s += $NF } END { print s + 0 }' "$tmp/impair.log")
		if [ "$n" -eq 0 ]; then
			echo "FAIL: the forwarder $what no frame: the link was not impaired"
			fail=1
		fi
	done
	if grep -q 'send errors' "$tmp/impair.log"; then
		echo "note: the forwarder could not send some frames (counted above)"
	fi
	if grep -q 'RTU dropped: 1$' "$tmp/impair.log"; then
		echo "ok: the forwarder dropped the RTU of droce-xfer's connection"
	else
		echo "FAIL: the forwarder did not drop droce-xfer's RTU: the lost-RTU path was not run"
		fail=1
	fi
fi

# ---- droce's parser over the capture: ICRCs, and the loss recovery at work -----------

pcapcheck pcapcheck 0 \
	--require "CM_REQ:$pp_runs,CM_REP:$pp_runs,CM_RTU:$pp_runs,RC_SEND_ONLY,RC_SEND_FIRST" \
	--require "RC_SEND_MIDDLE,RC_SEND_LAST,ACK,RETRANSMIT,NAK_PSN_SEQ" --min-roce 1000 \
	"$tmp/m.pcapng"
sed -n '/^AETH syndromes:/,$p' "$tmp/pcapcheck.txt" | grep -v '^PASS'
grep -q '^FAIL' "$tmp/pcapcheck.txt" && grep '^FAIL' "$tmp/pcapcheck.txt"
# B's side: every frame parses too; its counts beside A's side's show
# where the link lost, duplicated or reordered (the recovery's presence is
# asserted once, above)
pcapcheck pcapcheck-b 0 --min-roce 1000 "$tmp/mb.pcapng"
sed -n '/^AETH syndromes:/,$p' "$tmp/pcapcheck-b.txt" | grep -v '^PASS' | sed 's/^/B side: /'
grep -q '^FAIL' "$tmp/pcapcheck-b.txt" && grep '^FAIL' "$tmp/pcapcheck-b.txt"

echo "total $(elapsed)s (link: $mode)"
[ $fail -eq 0 ] || exit 1
echo "PASS: netns-netem"
exit 0
