#!/bin/bash
# bench_all.sh : every timed case, each under the shared benchmark lock.
cd "$(dirname "$0")"
B="flock /tmp/droce-bench.lock ./bench_one.sh"
$B gso16          on  -V -- -m gso -n 16
$B gso32          on  -V -- -m gso -n 32
$B gso62          on  -V -- -m gso -n 62
$B gso62_staleicrc on -V -- -m gso -n 62 -C
$B ringgso62      on  -V -- -m ringgso -n 62
$B gso62_kseg     off -V -- -m gso -n 62
$B gso62_kseg_ring2k off -R -b 2048 -- -m gso -n 62
$B single_vnet    on  -V -- -m single
$B single_plain   on  -V -- -m single -V0
$B single_stale   on  -V -- -m single -C
$B single_qbypass on  -V -- -m single -q
$B single_ring2k_rx on -R -b 2048 -- -m single
$B mmsg32         on  -V -- -m mmsg -n 32
$B txring32       on  -V -- -m ring -n 32
$B txring32_ring2k_rx on -R -b 2048 -- -m ring -n 32
