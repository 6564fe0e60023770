# udp_sink.py : a kernel UDP socket on 4791 in gsoB (what rdma_rxe-like consumers see); prints datagram sizes
import socket, sys, select
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET, 33, 8<<20); s.bind(("10.91.0.2", 4791))
print("READY", flush=True); sizes = []
while select.select([s], [], [], 1.0)[0]:
    sizes.append(len(s.recv(70000)))
print("UDP socket got %d datagrams, sizes %s" % (len(sizes), sorted(set(sizes))))
