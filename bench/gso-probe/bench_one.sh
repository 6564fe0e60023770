#!/bin/bash
mkdir -p out
# bench_one.sh NAME SEG RECVARGS -- SENDARGS... : one timed 1 GiB run (1,048,576 x 1040 B records).
# Run it under: flock /tmp/droce-bench.lock ./bench_one.sh ...
cd "$(dirname "$0")"
name=$1 seg=$2; shift 2
rargs=(); while [ "$1" != "--" ]; do rargs+=("$1"); shift; done; shift
R=${R:-1048576}
ip netns exec gsoA ethtool -K vA tx-udp-segmentation $seg
DMAC=$(ip netns exec gsoB cat /sys/class/net/vB/address)
ip netns exec gsoB ./gso_recv -i vB -e $R -t 2000 "${rargs[@]}" > out/bench_$name.recv 2>&1 & rp=$!
sleep 0.5
read -r _ u0 n0 s0 i0 w0 q0 sq0 _ < /proc/stat
ip netns exec gsoA ./gso_send -i vA -D $DMAC -r $R "$@" > out/bench_$name.send 2>&1
read -r _ u1 n1 s1 i1 w1 q1 sq1 _ < /proc/stat
wait $rp
hz=$(getconf CLK_TCK)
echo "=== $name seg=$seg recv[${rargs[*]}] send[$*]"
sed 's/^/  /' out/bench_$name.send
grep RECV out/bench_$name.recv | sed 's/^/  /'
echo "  machine(/proc/stat, all CPUs, incl. other tenants) during send: user=$(echo "scale=2;($u1-$u0)/$hz"|bc)s sys=$(echo "scale=2;($s1-$s0)/$hz"|bc)s softirq=$(echo "scale=2;($sq1-$sq0)/$hz"|bc)s idle=$(echo "scale=2;($i1-$i0)/$hz"|bc)s"
