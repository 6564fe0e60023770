// SPDX-License-Identifier: BSD-2-Clause
/*
 * mpi-bench - MPI latency and bandwidth between ranks 0 and 1 (the other
 * ranks, if any, wait at the final barrier).  Built by bench/mpi.sh with
 * mpicc; run by it over "droce;ofi_rxm" and "tcp;ofi_rxm".
 *
 *   mpi-bench [-T SECONDS] [-z LAT_BYTES] [-Z BW_BYTES] [-w WINDOW]
 *
 * lat: MPI_Send/MPI_Recv ping-pong of LAT_BYTES (default 8), half the
 *      round trip in microseconds;
 * bw:  rank 0 posts WINDOW (default 16) MPI_Isends of BW_BYTES (default
 *      1 MiB) into as many pre-posted MPI_Irecvs, then waits for a 1-byte
 *      acknowledgement; one direction, MB/s (10^6 B/s).
 * Each test first runs for a tenth of the time unmeasured (connections,
 * registration caches), then for -T seconds (default 1); rank 0 decides
 * when to stop and tells rank 1 in each message's tag.  The received data
 * of the first and last messages is checked.  Rank 0 prints one line per
 * test: "lat BYTES VALUE us ITERS" and "bw BYTES VALUE MB/s ITERS".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG_GO	 1
#define TAG_STOP 2
#define TAG_ACK	 3

static int rank;

static void fail(const char *what)
{
	fprintf(stderr, "mpi-bench: rank %d: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* rank 0: run until t_end, return iterations; rank 1: follow rank 0 */
static long lat_run(uint8_t *buf, int n, double secs)
{
	double t_end = MPI_Wtime() + secs;
	long it = 0;
	MPI_Status st;

	for (;;) {
		if (rank == 0) {
			int tag = MPI_Wtime() < t_end ? TAG_GO : TAG_STOP;

			buf[0] = (uint8_t)it;
			MPI_Send(buf, n, MPI_BYTE, 1, tag, MPI_COMM_WORLD);
			if (tag == TAG_STOP)
				return it;
			MPI_Recv(buf, n, MPI_BYTE, 1, TAG_GO, MPI_COMM_WORLD, &st);
			if (n && buf[0] != (uint8_t)(it + 1))
				fail("latency: wrong data returned");
		} else {
			MPI_Recv(buf, n, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			if (st.MPI_TAG == TAG_STOP)
				return it;
			if (n)
				buf[0]++;
			MPI_Send(buf, n, MPI_BYTE, 0, TAG_GO, MPI_COMM_WORLD);
		}
		it++;
	}
}

static long bw_run(uint8_t *buf, int n, int window, double secs)
{
	MPI_Request *req = malloc(sizeof(*req) * window);
	double t_end = MPI_Wtime() + secs;
	long it = 0;
	uint8_t ack = 0;
	MPI_Status st;

	if (!req)
		fail("out of memory");
	for (;;) {
		if (rank == 0) {
			int tag = MPI_Wtime() < t_end ? TAG_GO : TAG_STOP;

			for (int w = 0; w < window; w++) {
				uint8_t *b = buf + (size_t)w * n;

				b[0] = b[n - 1] = (uint8_t)(it + w);
				MPI_Isend(b, n, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &req[w]);
			}
			MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
			MPI_Recv(&ack, 1, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, &st);
			if (tag == TAG_STOP)
				break;
		} else {
			int stop = 0;

			for (int w = 0; w < window; w++)
				MPI_Irecv(buf + (size_t)w * n, n, MPI_BYTE, 0, MPI_ANY_TAG,
					  MPI_COMM_WORLD, &req[w]);
			for (int w = 0; w < window; w++) {
				uint8_t *b = buf + (size_t)w * n;

				MPI_Wait(&req[w], &st);
				stop |= st.MPI_TAG == TAG_STOP;
				if (b[0] != (uint8_t)(it + w) || b[n - 1] != (uint8_t)(it + w))
					fail("bandwidth: wrong data received");
			}
			MPI_Send(&ack, 1, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
			if (stop)
				break;
		}
		it += window;
	}
	free(req);
	return it;
}

int main(int argc, char **argv)
{
	int nranks, c, lat_n = 8, bw_n = 1 << 20, window = 16;
	double secs = 1.0, t0, t;
	uint8_t *buf;
	long it;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((c = getopt(argc, argv, "T:z:Z:w:")) != -1) {
		switch (c) {
		case 'T':
			secs = atof(optarg);
			break;
		case 'z':
			lat_n = atoi(optarg);
			break;
		case 'Z':
			bw_n = atoi(optarg);
			break;
		case 'w':
			window = atoi(optarg);
			break;
		default:
			fail("usage: mpi-bench [-T SECONDS] [-z LAT_BYTES] [-Z BW_BYTES] [-w "
			     "WINDOW]");
		}
	}
	if (nranks < 2 || lat_n < 0 || bw_n < 1 || window < 1 || secs <= 0)
		fail("needs 2 ranks, -z >= 0, -Z >= 1, -w >= 1, -T > 0");
	buf = calloc((size_t)window, (size_t)(bw_n > lat_n ? bw_n : lat_n));
	if (!buf)
		fail("out of memory");
	if (rank < 2) {
		lat_run(buf, lat_n, secs / 10);
		t0 = MPI_Wtime();
		it = lat_run(buf, lat_n, secs);
		t = MPI_Wtime() - t0;
		if (rank == 0)
			printf("lat %d %.3f us %ld\n", lat_n, t * 1e6 / (2.0 * it), it);

		bw_run(buf, bw_n, window, secs / 10);
		t0 = MPI_Wtime();
		it = bw_run(buf, bw_n, window, secs);
		t = MPI_Wtime() - t0;
		/* the last window (the STOP one) is counted: it was sent and acknowledged */
		if (rank == 0)
			printf("bw %d %.1f MB/s %ld\n", bw_n,
			       (double)(it + window) * bw_n / t / 1e6, it + window);
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	free(buf);
	MPI_Finalize();
	return 0;
}
