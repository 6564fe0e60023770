#!/bin/bash
# bench_rep.sh : 3 repetitions of the headline cases (each run under the lock)
cd "$(dirname "$0")"
B="flock /tmp/droce-bench.lock ./bench_one.sh"
for i in 1 2 3; do
$B gso62_r$i          on  -V -- -m gso -n 62
$B gso62_plainrx_r$i  on  -- -m gso -n 62
$B ringgso62_r$i      on  -V -- -m ringgso -n 62
$B gso62_kseg_r$i     off -V -- -m gso -n 62
$B single_r$i         on  -V -- -m single
$B txring32_r$i       on  -V -- -m ring -n 32
flock /tmp/droce-bench.lock ./bench_tcp.sh
done
