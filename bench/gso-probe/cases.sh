#!/bin/bash
mkdir -p out
# cases.sh SEG : edge cases for UDP_L4 GSO via AF_PACKET.  SEG=off: vA has
# tx-udp-segmentation off (kernel software-segments before the veth); SEG=on: super-frames cross the veth.
cd "$(dirname "$0")"
SEG=${1:-off}
ip netns exec gsoA ethtool -K vA tx-udp-segmentation $SEG
DMAC=$(ip netns exec gsoB cat /sys/class/net/vB/address)
run() { # name, sender args..., receiver slices with -s
  local name=$1; shift; local rs=$1; shift
  ip netns exec gsoB ./gso_recv -i vB -V -v -s $rs -P 2 -t 700 > out/case_${SEG}_$name.recv 2>&1 & local rp=$!
  sleep 0.3
  local d0=$(dmesg | wc -l)
  local tx0=$(ip netns exec gsoA cat /sys/class/net/vA/statistics/tx_packets) txd0=$(ip netns exec gsoA cat /sys/class/net/vA/statistics/tx_dropped)
  local out; out=$(ip netns exec gsoA ./gso_send -i vA -D $DMAC "$@" 2>&1); local rc=$?
  wait $rp
  local tx1=$(ip netns exec gsoA cat /sys/class/net/vA/statistics/tx_packets) txd1=$(ip netns exec gsoA cat /sys/class/net/vA/statistics/tx_dropped)
  echo "=== $name [seg=$SEG] args: $*"
  echo "  sender rc=$rc: $(echo "$out" | sed 's/ wire_bytes.*//')"
  echo "  vA tx_packets +$((tx1-tx0)) tx_dropped +$((txd1-txd0))"
  grep -E "^frame 1|^RECV|bad ICRC" out/case_${SEG}_$name.recv | sed 's/^/  /; s/ time=.*pkt_stats/ pkt_stats/'
  dmesg | tail -n +$((d0+1)) | grep -v promiscuous | sed 's/^/  dmesg: /' | head -5
}
run short_tail   1040 -m gso -n 62 -r 62 -L 100
run n63_ip_over  1040 -m gso -n 63 -r 63
run n1_gso       1040 -m gso -n 1 -r 1
run n2_gso       1040 -m gso -n 2 -r 2
run no_needs_csum 1040 -m gso -n 16 -r 16 -F 0
run hdr_len0     1040 -m gso -n 16 -r 16 -H 0
run hdr_len100   1040 -m gso -n 16 -r 16 -H 100
run gsosize_gt_mtu 1516 -m gso -n 4 -r 4 -p 1500
run gso_udp_ufo  1040 -m gso -n 16 -r 16 -G 3
run segs64       272 -m gso -n 64 -r 64 -p 256
run segs65       272 -m gso -n 65 -r 65 -p 256
run segs128      272 -m gso -n 128 -r 128 -p 256
run segs129      272 -m gso -n 129 -r 129 -p 256
run segs240      272 -m gso -n 240 -r 240 -p 256
run single_nogso 1040 -m single -r 4
run single_over_mtu 1516 -m single -r 1 -p 1500
