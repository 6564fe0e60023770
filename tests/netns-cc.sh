#!/bin/sh
# shellcheck disable=SC2086 # word splitting of lists is meant
# SPDX-License-Identifier: BSD-2-Clause
#
# netns-cc.sh - congestion control (FI_DROCE_CC, docs/protocol.md B.11) on a
# bridged path with a bottleneck.  Three namespaces: two ends and a bridge
#
#   cc<pid>a: cc<pid>a N.1/24 --- cc<pid>pa -+- br0 -+- cc<pid>pb --- cc<pid>b N.2/24
#                                  (bridge cc<pid>br: tbf on cc<pid>pb, nftables)
#
# The bridge port towards b has a token bucket (tc tbf, DROCE_CC_RATE,
# default 40 Mbit/s, a 64 KiB queue): the bottleneck, well below what a
# loaded 2-core host moves through af_packet (3-10 MB/s a QP).  An nftables bridge
# table in the bridge namespace counts the RoCEv2 frames that cross it
# ECN-capable (ECT(0)), marks some of them CE (MARKRULE), as a router's
# AQM marks where it would otherwise drop, and counts the CNPs (BTH opcode
# 0x81) going back.  The marks
# are made on the bridge: hooks in the end namespaces run after af_packet's
# taps.
#
# For 2 and 4 QPs (DROCE_CC_QPS), each a droce-bench bw_write client in a
# and its server in b, all at once, with FI_DROCE_CC=0 and then 1
# (DROCE_CC_RUNS rounds of each), it collects per QP the goodput, the
# packets droce resent (tx_resent_pkts) and the congestion counters, and
# Jain's fairness index of the goodputs, and asserts:
#  - every client completes its measurement;
#  - off: nothing crosses the bridge ECN-capable, no CE mark, no CNP, no
#    QP counts a CNP or a rate cut;
#  - on: data crosses ECT(0) and is marked, CNPs cross back, every server
#    QP counted CE and sent CNPs, every client QP received CNPs and cut
#    its rate; the first CNPs, captured on the bridge, have every field
#    RoCEv2 annex A17.9.3 gives them, as tshark decodes them;
#  - on: with the most QPs (4), at least 3/4 of the goodput off (resends
#    are compared and printed; see below why not asserted);
#  - and, with congestion control on, droce-xfer moves 1 MiB WRITEs and
#    READs through the same bottleneck on as many QPs at once, every byte
#    checked.
# DROCE_CC_TABLE=file: the table (markdown) is appended there (bench/cc.sh).
. "$(dirname "$0")/netns-lib.sh"

command -v nft >/dev/null 2>&1 || skip "nft not found (Debian package nftables)"
command -v tc >/dev/null 2>&1 || skip "tc not found (Debian package iproute2)"
BENCH=$top_builddir/bench/droce-bench
built "$BENCH" "$XFER"

RATE=${DROCE_CC_RATE:-40mbit}
# CE marking: DROCE_CC_MARK per mille (default 20) of the ECT(0) frames,
# at random ("numgen random"); or, with DROCE_CC_MARK_RATE=n, a phantom
# queue (HULL, NSDI 2012): the frames beyond n MB/s and a 32 KiB burst
if [ -n "${DROCE_CC_MARK_RATE:-}" ]; then
	MARKRULE="limit rate over $DROCE_CC_MARK_RATE mbytes/second burst 32 kbytes"
	MARKDESC="ECT(0) frames beyond $DROCE_CC_MARK_RATE MB/s (burst 32 KiB)"
else
	MARKRULE="numgen random mod 1000 < ${DROCE_CC_MARK:-20}"
	MARKDESC="${DROCE_CC_MARK:-20} per mille of ECT(0) frames at random"
fi
QPS=${DROCE_CC_QPS:-2 4}
RUNS=${DROCE_CC_RUNS:-1}
SECS=${DROCE_CC_SECS:-2}
P=cc$$
NA=${P}a NB=${P}b NBR=${P}br
net=10.$(($$ % 200 + 20)).$((($$ / 200) % 250 + 1))
ipA=$net.1 ipB=$net.2
port=$((20000 + $$ % 20000))

ns_frame netns-cc "$NA" "$NB" "$NBR"
keep_on_fail . netns-cc-fail
ip -n "$NBR" link add br0 type bridge || hard "cannot create a bridge"
ip -n "$NBR" link set br0 up
for s in a b; do
	if [ $s = a ]; then ns=$NA; else ns=$NB; fi
	ip -n "$ns" link add "$P$s" type veth peer name "${P}p$s" netns "$NBR" ||
		hard "cannot create veth pair $P$s"
	ip -n "$NBR" link set "${P}p$s" master br0
	ip -n "$NBR" link set "${P}p$s" up
	ip -n "$ns" link set "$P$s" up
	veth_wait_up "$ns" "$P$s" "$NBR" "${P}p$s"
done
ip -n "$NA" addr add "$ipA/24" dev "${P}a"
ip -n "$NB" addr add "$ipB/24" dev "${P}b"
tc -n "$NBR" qdisc add dev "${P}pb" root tbf rate "$RATE" burst 16kb limit 64kb ||
	hard "tc tbf failed"
ip netns exec "$NBR" nft -f - <<EOF || hard "nft failed"
table bridge drcc {
	chain forward_roce {
		type filter hook forward priority 0; policy accept;
		udp dport 4791 ip ecn ect0 counter name n_ect
		udp dport 4791 ip ecn ect0 $MARKRULE ip ecn set ce counter name n_ce
		udp dport 4791 @th,64,8 0x81 counter name n_cnp
	}
	counter n_ect { }
	counter n_ce { }
	counter n_cnp { }
}
EOF
tbf_drops() { # the bottleneck's drops so far
	tc -s -n "$NBR" qdisc show dev "${P}pb" | sed -n 's/.*dropped \([0-9]*\),.*/\1/p' | head -n 1
}
nft_count() { # counter: packets since the last reset
	ip netns exec "$NBR" nft list counter bridge drcc "$1" |
		sed -n 's/.*packets \([0-9]*\) bytes.*/\1/p'
}
echo "topology: $ipA -- br0 (tbf $RATE on ${P}pb, CE on $MARKDESC) -- $ipB"

# a counter of the last "droce-bench[who] endpoint counters:" line of a log
ctr() { # file name
	sed -n 's/.*endpoint counters:\(.*\)/\1 /p' "$1" | tail -n 1 |
		sed -n "s/.* $2=\([0-9]*\) .*/\1/p" | grep . || echo 0
}

# The CNPs in a capture, as tshark 4.0 decodes them (it does not name
# opcode 0x81, docs/protocol.md B.11): 74 bytes, b to a, not ECN-capable,
# BTH opcode 129, SE/M/PadCnt/TVer 0, P_Key 0xFFFF, byte 4 0x40 (BECN),
# AckReq 0, PSN 0, to an RC QP (not QP1), then 16 zero bytes and the ICRC
# (tshark shows them as the second of its "vendor" items).
cnp_fields() { # file
	tshark_r "$1" -T fields -E separator='|' -E occurrence=a -e frame.len -e ip.src \
		-e ip.dst -e ip.dsfield.ecn -e udp.dstport -e infiniband.bth.opcode \
		-e infiniband.bth.se -e infiniband.bth.m -e infiniband.bth.padcnt \
		-e infiniband.bth.tver -e infiniband.bth.p_key -e infiniband.reserved \
		-e infiniband.bth.a -e infiniband.bth.psn -e infiniband.bth.destqp \
		-e infiniband.vendor >"$tmp/cnp.txt" 2>"$tmp/cnp.err"
	awk -F'|' '{ $1 = $1 } 1' OFS='|' "$tmp/cnp.txt" |
		sed 's/True/1/g; s/False/0/g' >"$tmp/cnp.norm"
	cf_n=$(wc -l <"$tmp/cnp.norm")
	cf_bad=$(awk -F'|' -v a="$ipA" -v b="$ipB" '{
		v = $16; sub(/^.*,/, "", v) # the reserved bytes and the ICRC, in hex
		if (!($1 == 74 && $2 == b && $3 == a && $4 == 0 && $5 == 4791 && $6 == 129 &&
		      $7 == 0 && $8 == 0 && $9 == 0 && $10 == 0 && $11 == 65535 && $12 == "40" &&
		      $13 == 0 && $14 == 0 && $15 != "0x000001" && $15 != "0x000000" &&
		      length(v) == 40 && substr(v, 1, 32) == "00000000000000000000000000000000"))
			print
	}' "$tmp/cnp.norm" | wc -l)
	if [ "$cf_n" -gt 0 ] && [ "$cf_bad" -eq 0 ]; then
		echo "ok: tshark: $cf_n CNPs captured on the bridge, every field as A17.9.3 says"
	else
		bad "tshark: $cf_n CNPs captured, $cf_bad with other fields than A17.9.3's"
		head -n 5 "$tmp/cnp.txt" "$tmp/cnp.err"
	fi
	no_errors "$1"
}

# One round: n QPs, FI_DROCE_CC=cc.  Leaves $tmp/r-n-cc-i.{csv,err,srv}
# and one line "n cc goodput_MBps resent jain cnp ce ect cuts" in $tmp/rows.
round() { # n cc run
	r_n=$1 r_cc=$2 r_run=$3
	ip netns exec "$NBR" nft reset counters table bridge drcc >/dev/null
	d0=$(tbf_drops)
	# the first CNPs of the first round with congestion control, as they
	# leave the bridge towards a
	cnpcap=""
	if [ "$r_cc" = 1 ] && [ ! -e "$tmp/cnp.pcapng" ]; then
		cnpcap=$tmp/cnp.pcapng
		cap_start "$NBR" "${P}pa" "$cnpcap" -c 16 -f "udp dst port 4791 and udp[8] = 0x81"
		cap_wait "$cnpcap"
	fi
	spids="" cpids=""
	for i in $(seq "$r_n"); do
		f=$tmp/r-$r_n-$r_cc-$r_run-$i
		ip netns exec "$NB" env FI_DROCE_CC="$r_cc" "$BENCH" -S -O "$ipB:$((port + i))" \
			-F "$ipB" -X 120 -v >"$f.srv" 2>&1 &
		spids="$spids $!"
	done
	for i in $(seq "$r_n"); do
		wait_listen "$NB" $((port + i)) || hard "droce-bench server $i is not listening"
	done
	for i in $(seq "$r_n"); do
		f=$tmp/r-$r_n-$r_cc-$r_run-$i
		ip netns exec "$NA" env FI_DROCE_CC="$r_cc" timeout -k 5 90 "$BENCH" \
			-O "$ipB:$((port + i))" -t bw_write -Z 256k -w 16 -T "$SECS" -W 0.5 -s 30 \
			-X 90 -L "cc$r_cc" -C "$f.csv" -v >"$f.out" 2>"$f.err" &
		cpids="$cpids $!"
	done
	i=0
	for p in $cpids; do
		i=$((i + 1))
		wait "$p" || bad "$r_n QPs, FI_DROCE_CC=$r_cc: client $i exit $?"
	done
	for p in $spids; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -z "$cnpcap" ] || { cap_stop; cnp_fields "$cnpcap"; }
	ect=$(nft_count n_ect) ce=$(nft_count n_ce) cnp=$(nft_count n_cnp)
	tdrop=$(($(tbf_drops) - d0))
	sum=0 sq=0 resent=0 cuts=0
	for i in $(seq "$r_n"); do
		f=$tmp/r-$r_n-$r_cc-$r_run-$i
		# provider,label,test,bytes,window,iters,seconds,value,unit,...,status,resent_pkts
		v=$(awk -F, '$3 == "bw_write" { print $8 }' "$f.csv" 2>/dev/null | tail -n 1)
		st=$(awk -F, '$3 == "bw_write" { print $17 }' "$f.csv" 2>/dev/null | tail -n 1)
		rs=$(awk -F, '$3 == "bw_write" { print $18 }' "$f.csv" 2>/dev/null | tail -n 1)
		if [ -z "$v" ] || [ "$st" != ok ]; then
			bad "$r_n QPs, FI_DROCE_CC=$r_cc: QP $i measured nothing (status '$st')"
			tail -n 5 "$f.err" "$f.srv"
			v=0 rs=0
		fi
		q_cnp=$(ctr "$f.err" cnp_received) q_cut=$(ctr "$f.err" rate_cuts)
		s_cnp=$(ctr "$f.srv" cnp_sent) s_ce=$(ctr "$f.srv" ce_seen)
		echo "  QP $i: $v MB/s, resent $rs, CNPs received $q_cnp, rate cuts $q_cut," \
			"server CE $s_ce, CNPs sent $s_cnp"
		if [ "$r_cc" = 1 ]; then
			[ "$q_cnp" -gt 0 ] && [ "$q_cut" -gt 0 ] ||
				bad "$r_n QPs, CC on: QP $i received $q_cnp CNPs, $q_cut rate cuts"
			[ "$s_ce" -gt 0 ] && [ "$s_cnp" -gt 0 ] ||
				bad "$r_n QPs, CC on: server $i saw $s_ce CE, sent $s_cnp CNPs"
		else
			[ "$q_cnp$q_cut$s_cnp$s_ce" = 0000 ] ||
				bad "$r_n QPs, CC off: QP $i counted CNPs, cuts or CE"
		fi
		sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { print a + b }')
		sq=$(awk -v a="$sq" -v b="$v" 'BEGIN { print a + b * b }')
		resent=$((resent + rs)) cuts=$((cuts + q_cut))
	done
	jain=$(awk -v s="$sum" -v q="$sq" -v n="$r_n" 'BEGIN { printf "%.3f", q ? s * s / (n * q) : 0 }')
	echo "$r_n QPs, FI_DROCE_CC=$r_cc: $sum MB/s in all, Jain $jain, resent $resent;" \
		"bridge: $ect ECT(0), $ce marked CE, $cnp CNPs, $tdrop dropped by tbf"
	if [ "$r_cc" = 1 ]; then
		[ "$ect" -gt 0 ] && [ "$ce" -gt 0 ] && [ "$cnp" -gt 0 ] ||
			bad "$r_n QPs, CC on: the bridge saw $ect ECT(0), $ce CE, $cnp CNPs"
	else
		[ "$ect$ce$cnp" = 000 ] ||
			bad "$r_n QPs, CC off: the bridge saw $ect ECT(0), $ce CE, $cnp CNPs"
	fi
	echo "$r_n $r_cc $r_run $sum $resent $jain $cnp $ce $ect $cuts $tdrop" >>"$tmp/rows"
}

: >"$tmp/rows"
for n in $QPS; do
	for run in $(seq "$RUNS"); do
		round "$n" 0 "$run"
		round "$n" 1 "$run"
	done
	off=$(awk -v n="$n" '$1 == n && $2 == 0 { s += $5 } END { print s + 0 }' "$tmp/rows")
	on=$(awk -v n="$n" '$1 == n && $2 == 1 { s += $5 } END { print s + 0 }' "$tmp/rows")
	echo "$n QPs: $on packets resent with congestion control, $off without"
done
# With the most QPs: congestion control must not cost the goodput (at
# least 3/4 of it without; the round-trip reference rates of stop 27 kept
# 0.43-0.83 of it, bench/PROFILE.md section 8).  Resends are compared and
# printed, not asserted: this test once asserted fewer resends with 4
# QPs, which held on the host it was written on (1844/3453, 1153/3789,
# 2060/6300 in 3 rounds), but on the hosts of stops 26-28 the difference
# is 5-15 % against a spread of one 2 s round as large: one round of 4
# QPs resent 0.86-0.95 as many in 6 runs here, 1.12 in one CI run, 1.06
# in stop 26's (most of them in the first round trips, when every QP
# starts at once, before any CNP).  bench/cc.sh measures it over rounds
# (RESULTS.md, "Congestion control through a bottleneck").
n=$(echo $QPS | awk '{ print $NF }')
off=$(awk -v n="$n" '$1 == n && $2 == 0 { s += $4 } END { print s + 0 }' "$tmp/rows")
on=$(awk -v n="$n" '$1 == n && $2 == 1 { s += $4 } END { print s + 0 }' "$tmp/rows")
if awk -v a="$on" -v b="$off" 'BEGIN { exit !(b > 0 && a >= 0.75 * b) }'; then
	echo "ok: $n QPs: $on MB/s with congestion control, at least 3/4 of $off without"
else
	bad "$n QPs: $on MB/s with congestion control, less than 3/4 of $off without"
fi

# every byte through the congested path, congestion control on
xi=0 xpids=""
n=$(echo $QPS | awk '{ print $NF }')
for i in $(seq "$n"); do
	ip netns exec "$NB" env FI_DROCE_CC=1 timeout -k 5 120 "$XFER" -p droce \
		-P $((port + 100 + i)) -o write,read -S 1m -I 8 -t 60 >"$tmp/x$i.srv" 2>&1 &
	xpids="$xpids $!"
done
for i in $(seq "$n"); do
	wait_listen "$NB" $((port + 100 + i)) || hard "droce-xfer server $i is not listening"
done
cl=""
for i in $(seq "$n"); do
	ip netns exec "$NA" env FI_DROCE_CC=1 timeout -k 5 120 "$XFER" -p droce -s "$ipB" \
		-P $((port + 100 + i)) -o write,read -S 1m -I 8 -t 60 >"$tmp/x$i.cli" 2>&1 &
	cl="$cl $!"
done
for p in $cl; do
	xi=$((xi + 1))
	if wait "$p" && grep -q "^droce-xfer: 3 passed, 0 failed" "$tmp/x$xi.cli"; then
		echo "ok: droce-xfer $xi: $(tail -n 1 "$tmp/x$xi.cli")"
	else
		bad "droce-xfer $xi through the bottleneck failed"
		tail -n 10 "$tmp/x$xi.cli" "$tmp/x$xi.srv"
	fi
done
for p in $xpids; do wait "$p" 2>/dev/null; done

if [ -n "${DROCE_CC_TABLE:-}" ]; then
	{
		echo "| QPs | FI_DROCE_CC | goodput MB/s (all QPs) | resent packets | tbf drops | Jain | CNPs | CE marks | ECT(0) frames | rate cuts |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
		awk '{ k = $1 " " $2; n[k]++; g[k] += $4; r[k] += $5; j[k] += $6; c[k] += $7;
		       m[k] += $8; e[k] += $9; u[k] += $10; d[k] += $11 }
		     END { for (k in n) { split(k, a, " ");
			printf "| %s | %s | %.2f | %.0f | %.0f | %.3f | %.0f | %.0f | %.0f | %.0f |\n",
			a[1], a[2], g[k] / n[k], r[k] / n[k], d[k] / n[k], j[k] / n[k], c[k] / n[k],
			m[k] / n[k], e[k] / n[k], u[k] / n[k] } }' "$tmp/rows" | sort -t'|' -k2,2n -k3,3n
	} >>"$DROCE_CC_TABLE"
	cp "$tmp/rows" "$DROCE_CC_TABLE.rows"
fi
[ "$fail" -eq 0 ] || exit 1
echo "PASS: congestion control on a $RATE bottleneck, $QPS QPs"
