#!/bin/bash
mkdir -p out
# bench_tcp.sh : 1 GiB (1,090,519,040 B, same as the records) over TCP gsoA -> gsoB. Run under flock.
cd "$(dirname "$0")"
ip netns exec gsoA ethtool -K vA tx-udp-segmentation on
ip netns exec gsoB ./tcp_bench -l 5201 > out/bench_tcp.recv 2>&1 & rp=$!
sleep 0.5
ip netns exec gsoA ./tcp_bench -c 10.91.0.2 5201 1090519040 ${1:-65536} > out/bench_tcp.send 2>&1
wait $rp
echo "=== tcp chunk=${1:-65536}"; cat out/bench_tcp.send out/bench_tcp.recv | grep TCP | sed 's/^/  /'
