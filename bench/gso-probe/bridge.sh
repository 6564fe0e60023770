#!/bin/bash
mkdir -p out
# bridge.sh : super-frames from gsoA (vA2) across a bridge in gsoC to gsoB (vB2); the bridge port
# towards gsoB has tx-udp-segmentation off, so the kernel segments while forwarding.
cd "$(dirname "$0")"
ip netns add gsoC
ip link add vA2 netns gsoA type veth peer name pA netns gsoC
ip link add vB2 netns gsoB type veth peer name pB netns gsoC
ip -n gsoC link add br0 type bridge; ip -n gsoC link set pA master br0; ip -n gsoC link set pB master br0
for l in br0 pA pB; do ip -n gsoC link set $l up; done
ip -n gsoA addr add 10.91.1.1/24 dev vA2; ip -n gsoA link set vA2 up
ip -n gsoB addr add 10.91.1.2/24 dev vB2; ip -n gsoB link set vB2 up
ip netns exec gsoC ethtool -K pB tx-udp-segmentation off
sleep 1
DMAC=$(ip netns exec gsoB cat /sys/class/net/vB2/address)
ip netns exec gsoB dumpcap -q -i vB2 -w out/bridge_vB2.pcapng >/dev/null 2>&1 & D=$!
ip netns exec gsoC dumpcap -q -i pA -w out/bridge_pA.pcapng >/dev/null 2>&1 & E=$!
ip netns exec gsoB ./gso_recv -i vB2 -V -v -P 2 -t 1500 > out/bridge_recv.txt 2>&1 & R=$!
sleep 1.5
ip netns exec gsoA ./gso_send -i vA2 -D $DMAC -S 10.91.1.1 -d 10.91.1.2 -m gso -n 62 -r 186 -L 300
sleep 1; kill $D $E; wait $R
grep -v READY out/bridge_recv.txt
for f in out/bridge_pA.pcapng out/bridge_vB2.pcapng; do echo "$f:"; tshark -r $f 2>/dev/null | awk '{print $6,$7}' | sort | uniq -c; ${DROCE_BUILD:-../../build}/tools/droce-pcapcheck $f | grep -E "^frames|PASS|FAIL"; done
ip netns del gsoC
