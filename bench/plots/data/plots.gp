set terminal pngcairo size 1200,520 font 'DejaVu Sans,10'
set output 'latency.png'
set multiplot layout 1,2 title 'half round-trip latency (median of rounds, bars min-max; lower is better)'
set title 'send/recv ping-pong'
set xlabel 'message size (bytes)'
set ylabel 'half RTT (us)'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set key top left
set offsets graph 0.04, graph 0.04, 0, 0
plot 'data/lat_send-droce-memif-w1.dat' u 1:2:3:4 w yerrorlines lt 1 pt 7 ps 0.6 title 'droce net\_memif', \
  'data/lat_send-tcp-lo-w1.dat' u 1:2:3:4 w yerrorlines lt 2 pt 7 ps 0.6 title 'tcp loopback', \
  'data/lat_send-droce-memifzc-w1.dat' u 1:2:3:4 w yerrorlines lt 5 pt 7 ps 0.6 title 'droce net\_memif zero-copy', \
  'data/lat_send-droce-veth-w1.dat' u 1:2:3:4 w yerrorlines lt 3 pt 7 ps 0.6 title 'droce packet/veth (GSO)', \
  'data/lat_send-tcp-veth-w1.dat' u 1:2:3:4 w yerrorlines lt 4 pt 7 ps 0.6 title 'tcp veth', \
  'data/lat_send-droce-vethafp-w1.dat' u 1:2:3:4 w yerrorlines lt 6 pt 7 ps 0.6 title 'droce net\_af\_packet/veth'
set title 'RDMA write ping-pong'
set xlabel 'message size (bytes)'
set ylabel 'half RTT (us)'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set key top left
set offsets graph 0.04, graph 0.04, 0, 0
plot 'data/lat_write-droce-memif-w1.dat' u 1:2:3:4 w yerrorlines lt 1 pt 7 ps 0.6 title 'droce net\_memif', \
  'data/lat_write-tcp-lo-w1.dat' u 1:2:3:4 w yerrorlines lt 2 pt 7 ps 0.6 title 'tcp loopback', \
  'data/lat_write-droce-memifzc-w1.dat' u 1:2:3:4 w yerrorlines lt 5 pt 7 ps 0.6 title 'droce net\_memif zero-copy', \
  'data/lat_write-droce-veth-w1.dat' u 1:2:3:4 w yerrorlines lt 3 pt 7 ps 0.6 title 'droce packet/veth (GSO)', \
  'data/lat_write-tcp-veth-w1.dat' u 1:2:3:4 w yerrorlines lt 4 pt 7 ps 0.6 title 'tcp veth', \
  'data/lat_write-droce-vethafp-w1.dat' u 1:2:3:4 w yerrorlines lt 6 pt 7 ps 0.6 title 'droce net\_af\_packet/veth'
unset multiplot

set terminal pngcairo size 1500,520 font 'DejaVu Sans,10'
set output 'bandwidth.png'
set multiplot layout 1,3 title 'one-way bandwidth, window 64 (median of rounds, bars min-max)'
set title 'RDMA write'
set xlabel 'message size (bytes)'
set ylabel 'MB/s'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set key top left
set offsets graph 0.04, graph 0.04, 0, 0
plot 'data/bw_write-droce-memif-w64.dat' u 1:2:3:4 w yerrorlines lt 1 pt 7 ps 0.6 title 'droce net\_memif', \
  'data/bw_write-tcp-lo-w64.dat' u 1:2:3:4 w yerrorlines lt 2 pt 7 ps 0.6 title 'tcp loopback', \
  'data/bw_write-droce-memifzc-w64.dat' u 1:2:3:4 w yerrorlines lt 5 pt 7 ps 0.6 title 'droce net\_memif zero-copy', \
  'data/bw_write-droce-veth-w64.dat' u 1:2:3:4 w yerrorlines lt 3 pt 7 ps 0.6 title 'droce packet/veth (GSO)', \
  'data/bw_write-tcp-veth-w64.dat' u 1:2:3:4 w yerrorlines lt 4 pt 7 ps 0.6 title 'tcp veth', \
  'data/bw_write-droce-vethafp-w64.dat' u 1:2:3:4 w yerrorlines lt 6 pt 7 ps 0.6 title 'droce net\_af\_packet/veth'
set title 'RDMA read'
set xlabel 'message size (bytes)'
set ylabel 'MB/s'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set key top left
set offsets graph 0.04, graph 0.04, 0, 0
plot 'data/bw_read-droce-memif-w64.dat' u 1:2:3:4 w yerrorlines lt 1 pt 7 ps 0.6 title 'droce net\_memif', \
  'data/bw_read-tcp-lo-w64.dat' u 1:2:3:4 w yerrorlines lt 2 pt 7 ps 0.6 title 'tcp loopback', \
  'data/bw_read-droce-memifzc-w64.dat' u 1:2:3:4 w yerrorlines lt 5 pt 7 ps 0.6 title 'droce net\_memif zero-copy', \
  'data/bw_read-droce-veth-w64.dat' u 1:2:3:4 w yerrorlines lt 3 pt 7 ps 0.6 title 'droce packet/veth (GSO)', \
  'data/bw_read-tcp-veth-w64.dat' u 1:2:3:4 w yerrorlines lt 4 pt 7 ps 0.6 title 'tcp veth', \
  'data/bw_read-droce-vethafp-w64.dat' u 1:2:3:4 w yerrorlines lt 6 pt 7 ps 0.6 title 'droce net\_af\_packet/veth'
set title 'send/recv'
set xlabel 'message size (bytes)'
set ylabel 'MB/s'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set key top left
set offsets graph 0.04, graph 0.04, 0, 0
plot 'data/bw_send-droce-memif-w64.dat' u 1:2:3:4 w yerrorlines lt 1 pt 7 ps 0.6 title 'droce net\_memif', \
  'data/bw_send-tcp-lo-w64.dat' u 1:2:3:4 w yerrorlines lt 2 pt 7 ps 0.6 title 'tcp loopback', \
  'data/bw_send-droce-memifzc-w64.dat' u 1:2:3:4 w yerrorlines lt 5 pt 7 ps 0.6 title 'droce net\_memif zero-copy', \
  'data/bw_send-droce-veth-w64.dat' u 1:2:3:4 w yerrorlines lt 3 pt 7 ps 0.6 title 'droce packet/veth (GSO)', \
  'data/bw_send-tcp-veth-w64.dat' u 1:2:3:4 w yerrorlines lt 4 pt 7 ps 0.6 title 'tcp veth', \
  'data/bw_send-droce-vethafp-w64.dat' u 1:2:3:4 w yerrorlines lt 6 pt 7 ps 0.6 title 'droce net\_af\_packet/veth'
unset multiplot

set terminal pngcairo size 1800,640 font 'DejaVu Sans,10'
set output 'ratio.png'
set multiplot layout 1,6 title 'droce / tcp (ratio of medians; >1 means droce larger: better for bandwidth and rate, worse for latency)'
set title 'same host: droce/net\_memif vs tcp/loopback'
set xlabel 'message size (bytes)'
set ylabel 'droce / tcp'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set offsets graph 0.04, graph 0.04, 0, 0
set key outside bottom center horizontal maxrows 3 font ',9'
plot 'data/ratio-lat_send-memif.dat' u 1:2 w linespoints lt 1 pt 4 title 'latency send (lower better)', \
  'data/ratio-lat_write-memif.dat' u 1:2 w linespoints lt 2 pt 5 title 'latency write (lower better)', \
  'data/ratio-bw_write-memif.dat' u 1:2 w linespoints lt 3 pt 6 title 'bw write', \
  'data/ratio-bw_read-memif.dat' u 1:2 w linespoints lt 4 pt 7 title 'bw read', \
  'data/ratio-bw_send-memif.dat' u 1:2 w linespoints lt 5 pt 8 title 'bw send', \
  'data/ratio-rate_send-memif.dat' u 1:2 w linespoints lt 6 pt 9 title 'rate send', \
  'data/ratio-rate_write-memif.dat' u 1:2 w linespoints lt 7 pt 10 title 'rate write', \
  1 lt -1 dt 2 notitle
set title 'same host: droce/net\_memif zero-copy client vs tcp/loopback'
set xlabel 'message size (bytes)'
set ylabel 'droce / tcp'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set offsets graph 0.04, graph 0.04, 0, 0
set key outside bottom center horizontal maxrows 3 font ',9'
plot 'data/ratio-lat_send-memifzc.dat' u 1:2 w linespoints lt 1 pt 4 title 'latency send (lower better)', \
  'data/ratio-lat_write-memifzc.dat' u 1:2 w linespoints lt 2 pt 5 title 'latency write (lower better)', \
  'data/ratio-bw_write-memifzc.dat' u 1:2 w linespoints lt 3 pt 6 title 'bw write', \
  'data/ratio-bw_read-memifzc.dat' u 1:2 w linespoints lt 4 pt 7 title 'bw read', \
  'data/ratio-bw_send-memifzc.dat' u 1:2 w linespoints lt 5 pt 8 title 'bw send', \
  'data/ratio-rate_send-memifzc.dat' u 1:2 w linespoints lt 6 pt 9 title 'rate send', \
  'data/ratio-rate_write-memifzc.dat' u 1:2 w linespoints lt 7 pt 10 title 'rate write', \
  1 lt -1 dt 2 notitle
set title 'veth between namespaces: droce on the zero-config path (packet socket, UDP GSO) vs tcp'
set xlabel 'message size (bytes)'
set ylabel 'droce / tcp'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set offsets graph 0.04, graph 0.04, 0, 0
set key outside bottom center horizontal maxrows 3 font ',9'
plot 'data/ratio-lat_send-veth.dat' u 1:2 w linespoints lt 1 pt 4 title 'latency send (lower better)', \
  'data/ratio-lat_write-veth.dat' u 1:2 w linespoints lt 2 pt 5 title 'latency write (lower better)', \
  'data/ratio-bw_write-veth.dat' u 1:2 w linespoints lt 3 pt 6 title 'bw write', \
  'data/ratio-bw_read-veth.dat' u 1:2 w linespoints lt 4 pt 7 title 'bw read', \
  'data/ratio-bw_send-veth.dat' u 1:2 w linespoints lt 5 pt 8 title 'bw send', \
  'data/ratio-rate_send-veth.dat' u 1:2 w linespoints lt 6 pt 9 title 'rate send', \
  'data/ratio-rate_write-veth.dat' u 1:2 w linespoints lt 7 pt 10 title 'rate write', \
  1 lt -1 dt 2 notitle
set title 'veth between namespaces: droce/net\_af\_packet vs tcp'
set xlabel 'message size (bytes)'
set ylabel 'droce / tcp'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set offsets graph 0.04, graph 0.04, 0, 0
set key outside bottom center horizontal maxrows 3 font ',9'
plot 'data/ratio-lat_send-vethafp.dat' u 1:2 w linespoints lt 1 pt 4 title 'latency send (lower better)', \
  'data/ratio-lat_write-vethafp.dat' u 1:2 w linespoints lt 2 pt 5 title 'latency write (lower better)', \
  'data/ratio-bw_write-vethafp.dat' u 1:2 w linespoints lt 3 pt 6 title 'bw write', \
  'data/ratio-bw_read-vethafp.dat' u 1:2 w linespoints lt 4 pt 7 title 'bw read', \
  'data/ratio-bw_send-vethafp.dat' u 1:2 w linespoints lt 5 pt 8 title 'bw send', \
  'data/ratio-rate_send-vethafp.dat' u 1:2 w linespoints lt 6 pt 9 title 'rate send', \
  'data/ratio-rate_write-vethafp.dat' u 1:2 w linespoints lt 7 pt 10 title 'rate write', \
  1 lt -1 dt 2 notitle
set title 'veth between namespaces: droce/net\_af\_xdp vs tcp'
set xlabel 'message size (bytes)'
set ylabel 'droce / tcp'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set offsets graph 0.04, graph 0.04, 0, 0
set key outside bottom center horizontal maxrows 3 font ',9'
plot 'data/ratio-lat_send-vethxdp.dat' u 1:2 w linespoints lt 1 pt 4 title 'latency send (lower better)', \
  'data/ratio-lat_write-vethxdp.dat' u 1:2 w linespoints lt 2 pt 5 title 'latency write (lower better)', \
  'data/ratio-bw_write-vethxdp.dat' u 1:2 w linespoints lt 3 pt 6 title 'bw write', \
  'data/ratio-bw_read-vethxdp.dat' u 1:2 w linespoints lt 4 pt 7 title 'bw read', \
  'data/ratio-bw_send-vethxdp.dat' u 1:2 w linespoints lt 5 pt 8 title 'bw send', \
  'data/ratio-rate_send-vethxdp.dat' u 1:2 w linespoints lt 6 pt 9 title 'rate send', \
  'data/ratio-rate_write-vethxdp.dat' u 1:2 w linespoints lt 7 pt 10 title 'rate write', \
  1 lt -1 dt 2 notitle
set title 'veth at MTU 9000: droce/net\_af\_packet (path MTU 4096) vs tcp'
set xlabel 'message size (bytes)'
set ylabel 'droce / tcp'
set logscale x 2
set logscale y
set xtics ("8" 8, "32" 32, "128" 128, "512" 512, "2K" 2048, "8K" 8192, "32K" 32768, "128K" 131072, "1M" 1048576, "4M" 4194304)
set grid
set offsets graph 0.04, graph 0.04, 0, 0
set key outside bottom center horizontal maxrows 3 font ',9'
plot 'data/ratio-lat_send-veth9k.dat' u 1:2 w linespoints lt 1 pt 4 title 'latency send (lower better)', \
  'data/ratio-lat_write-veth9k.dat' u 1:2 w linespoints lt 2 pt 5 title 'latency write (lower better)', \
  'data/ratio-bw_write-veth9k.dat' u 1:2 w linespoints lt 3 pt 6 title 'bw write', \
  'data/ratio-bw_read-veth9k.dat' u 1:2 w linespoints lt 4 pt 7 title 'bw read', \
  'data/ratio-bw_send-veth9k.dat' u 1:2 w linespoints lt 5 pt 8 title 'bw send', \
  'data/ratio-rate_send-veth9k.dat' u 1:2 w linespoints lt 6 pt 9 title 'rate send', \
  'data/ratio-rate_write-veth9k.dat' u 1:2 w linespoints lt 7 pt 10 title 'rate write', \
  1 lt -1 dt 2 notitle
unset multiplot

set terminal pngcairo size 800,520 font 'DejaVu Sans,10'
set output 'loss.png'
set title 'goodput of 1 MiB RDMA writes under random frame loss, both directions (bridged veth; 0 % plotted at 0.01 %)'
set xlabel 'loss (%)'
set ylabel 'MB/s'
set logscale x
unset logscale y
set yrange [0:*]
set xrange [0.006:8]
set xtics ('0' 0.01, '0.1' 0.1, '1' 1, '5' 5)
set offsets 0, 0, 0, 0
set grid
set key inside top right
plot 'data/loss-droce.dat' u 1:2:3:4 w yerrorlines lt 1 pt 7 title 'droce 1 MiB write', \
  'data/loss-tcp.dat' u 1:2:3:4 w yerrorlines lt 2 pt 7 title 'tcp 1 MiB write'
