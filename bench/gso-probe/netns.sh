#!/bin/sh
# netns.sh up|down : namespaces gsoA/gsoB joined by veth vA (10.91.0.1) <-> vB (10.91.0.2), MTU 1500
set -e
case "$1" in
up)
  ip netns add gsoA; ip netns add gsoB
  ip link add vA netns gsoA type veth peer name vB netns gsoB
  ip -n gsoA addr add 10.91.0.1/24 dev vA; ip -n gsoB addr add 10.91.0.2/24 dev vB
  ip -n gsoA link set vA mtu 1500 up; ip -n gsoB link set vB mtu 1500 up
  ip -n gsoA link set lo up; ip -n gsoB link set lo up
  # drop the RoCE datagrams after the packet taps so gsoB's UDP stack
  # does not answer each with ICMP port-unreachable
  ip netns exec gsoB nft -f - <<'NFT'
table inet spike {
  chain pre {
    type filter hook prerouting priority -300; policy accept;
    udp dport 4791 drop
  }
}
NFT
  ;;
down)
  ip netns del gsoA 2>/dev/null || true; ip netns del gsoB 2>/dev/null || true
  ip netns del gsoC 2>/dev/null || true
  ;;
esac
