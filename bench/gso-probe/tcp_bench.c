// SPDX-License-Identifier: BSD-2-Clause
/* tcp_bench: tiny iperf stand-in.  tcp_bench -l PORT  (receive, count)   |
 *            tcp_bench -c IP PORT BYTES [chunk]  (send BYTES in chunk writes, default 64 KiB) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/resource.h>
static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}
static void ru(double *u, double *s)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	*u = r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6;
	*s = r.ru_stime.tv_sec + r.ru_stime.tv_usec * 1e-6;
}
int main(int argc, char **argv)
{
	double u0, s0, u1, s1, t0, t1;
	size_t chunk = 65536;
	if (argc >= 3 && !strcmp(argv[1], "-l")) {
		int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
		if (bind(l, (void *)&a, sizeof a) || listen(l, 1)) {
			perror("bind/listen");
			return 1;
		}
		printf("READY\n");
		fflush(stdout);
		int c = accept(l, 0, 0);
		char *b = malloc(1 << 20);
		size_t tot = 0;
		ssize_t k;
		ru(&u0, &s0);
		t0 = now_s();
		while ((k = read(c, b, 1 << 20)) > 0)
			tot += k;
		t1 = now_s();
		ru(&u1, &s1);
		printf("TCPRECV bytes=%zu time=%.3fs rate=%.1fMB/s user=%.3fs sys=%.3fs\n", tot,
		       t1 - t0, tot / (t1 - t0) / 1e6, u1 - u0, s1 - s0);
		return 0;
	}
	if (argc < 5 || strcmp(argv[1], "-c")) {
		fprintf(stderr, "usage\n");
		return 2;
	}
	if (argc > 5)
		chunk = atol(argv[5]);
	size_t want = atol(argv[4]), tot = 0;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
	inet_pton(AF_INET, argv[2], &a.sin_addr);
	if (connect(s, (void *)&a, sizeof a)) {
		perror("connect");
		return 1;
	}
	char *b = malloc(chunk);
	memset(b, 0x5a, chunk);
	ru(&u0, &s0);
	t0 = now_s();
	while (tot < want) {
		ssize_t k = write(s, b, want - tot < chunk ? want - tot : chunk);
		if (k < 0) {
			perror("write");
			return 1;
		}
		tot += k;
	}
	shutdown(s, SHUT_WR);
	char x;
	while (read(s, &x, 1) > 0)
		;
	t1 = now_s();
	ru(&u1, &s1);
	printf("TCPSEND bytes=%zu time=%.3fs rate=%.1fMB/s user=%.3fs sys=%.3fs\n", tot, t1 - t0,
	       tot / (t1 - t0) / 1e6, u1 - u0, s1 - s0);
	return 0;
}
