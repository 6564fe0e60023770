// SPDX-License-Identifier: BSD-2-Clause
/*
 * mpi-check - an MPI job's data, verified: what tests/netns-mpi.sh runs over
 * "droce;ofi_rxm" (Open MPI's pml cm + mtl ofi) with ranks in several
 * network namespaces.  Built with mpicc at test time (Open MPI is not a
 * build dependency of droce).
 *
 *   mpirun ... mpi-check [-b DIR] [-l BYTES] [-x PHASE]
 *
 * Phases, each ended by every rank agreeing (MPI_Allreduce of the error
 * counts, the reduction itself checked in phase "allreduce" first) and
 * rank 0 printing "ok PHASE: ...":
 *   ring       every rank sends to rank+1 and receives from rank-1 with
 *              MPI_Sendrecv, 0 B .. 1 MiB (eager and rendezvous sizes), then
 *              32 messages to each neighbour at once with MPI_Isend, received
 *              into MPI_Irecvs posted in reverse tag order after the sends
 *              were started (so most arrive unexpected), one of them with
 *              MPI_ANY_SOURCE/MPI_ANY_TAG and its status checked;
 *   allreduce  MPI_SUM and MPI_MAX of 64-bit integers (1 and 300000
 *              elements), MPI_SUM of doubles, MPI_MINLOC;
 *   alltoall   MPI_Alltoall with 1 KiB and 64 KiB blocks, every block
 *              addressed (source, destination, offset);
 *   big        a 16 MiB message (-l to change) around the ring, each rank's
 *              own pattern, received into a buffer filled with guard bytes;
 *   barrier    100 rounds: each rank creates DIR/ROUND.RANK, calls
 *              MPI_Barrier, then finds all the round's files there: no rank
 *              left the barrier before every rank had entered it (needs a
 *              directory all ranks see: -b; without -b only the rounds are
 *              run and the check is said to be skipped).
 * Every payload byte is a function of (phase, source, destination,
 * offset), so a byte delivered to the wrong rank, at the wrong offset or
 * from the wrong message is caught.  The first bad byte of a buffer is
 * printed with what was expected; the job then exits 1 ("FAIL PHASE").
 * -x PHASE (ring, alltoall or big) makes rank 1 flip one bit of every
 * buffer it fills in that phase, to show that the checks catch it.
 * "PASS N ranks" at the end; exit 0.
 */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int rank, nranks;
static long errors; /* this rank's, in the current phase */
static const char *phase = "";
static const char *corrupt; /* -x PHASE: rank 1 sends one bad byte in it */

static void mismatch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *what)
{
	fprintf(stderr, "rank %d: FATAL %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

static void mpi_ok(int rc, const char *call)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, msg, &len);
	fprintf(stderr, "rank %d: FATAL %s: %s\n", rank, call, msg);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

/* The byte at offset off of the message of phase ph from src to dst. */
static uint8_t pat(unsigned ph, unsigned src, unsigned dst, size_t off)
{
	uint64_t x =
	    ((uint64_t)ph << 56) ^ ((uint64_t)src << 44) ^ ((uint64_t)dst << 32) ^ (uint64_t)off;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 32;
	return (uint8_t)x;
}

static void fill(uint8_t *b, size_t n, unsigned ph, unsigned src, unsigned dst)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(ph, src, dst, i);
	if (n && rank == 1 && corrupt && !strcmp(corrupt, phase))
		b[n / 2] ^= 0x01;
}

/* Count a mismatch of n bytes from src; print the first bad byte. */
static void check(const char *what, const uint8_t *b, size_t n, unsigned ph, unsigned src,
		  unsigned dst)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t want = pat(ph, src, dst, i);

		if (b[i] != want) {
			mismatch("%s: %zu B from rank %u, byte %zu is 0x%02x, expected 0x%02x\n",
				 what, n, src, i, b[i], want);
			return;
		}
	}
}

static void check_guard(const char *what, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (b[i] != 0xa5) {
			mismatch("%s: guard byte %zu after the message is 0x%02x, expected 0xa5\n",
				 what, i, b[i]);
			return;
		}
	}
}

/* Count one error; print its line (at most 5 a rank and phase). */
static void mismatch(const char *fmt, ...)
{
	va_list ap;

	if (errors++ >= 5) {
		if (errors == 6)
			fprintf(stderr, "rank %d: (more mismatches in %s)\n", rank, phase);
		return;
	}
	fprintf(stderr, "rank %d: MISMATCH ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * End of a phase: every rank's error count, summed.  The sum is computed
 * by an allreduce, so a broken allreduce could hide errors: the same sum
 * is also gathered to rank 0 by point-to-point messages and compared.
 */
static void phase_end(const char *name, const char *detail, double t0)
{
	long total = 0, p2p = errors;

	mpi_ok(MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD),
	       "MPI_Allreduce(errors)");
	if (rank == 0) {
		for (int r = 1; r < nranks; r++) {
			long e;

			mpi_ok(
			    MPI_Recv(&e, 1, MPI_LONG, r, 9999, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
			    "MPI_Recv(errors)");
			p2p += e;
		}
	} else {
		mpi_ok(MPI_Send(&errors, 1, MPI_LONG, 0, 9999, MPI_COMM_WORLD), "MPI_Send(errors)");
	}
	if (rank == 0 && p2p != total) {
		fprintf(
		    stderr,
		    "FAIL %s: the ranks report %ld errors by messages, MPI_Allreduce summed %ld\n",
		    name, p2p, total);
		total = total ? total : 1;
	}
	mpi_ok(MPI_Bcast(&total, 1, MPI_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast(errors)");
	if (total) {
		if (rank == 0)
			printf("FAIL %s: %ld errors (see the MISMATCH lines)\n", name, total);
		fflush(stdout);
		MPI_Finalize();
		exit(1);
	}
	if (rank == 0) {
		printf("ok %s: %s (%.2f s)\n", name, detail, now() - t0);
		fflush(stdout);
	}
	errors = 0;
}

/* ---- ring ------------------------------------------------------------- */

#define RING_BURST 32

static void phase_ring(void)
{
	static const size_t sizes[] = {0,    1,	    8,	   64,	  1000,	  4096,
				       8191, 16384, 65536, 65537, 262144, 1048576};
	const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	const size_t burst_len = 3000;
	uint8_t *sb = xmalloc(1048576), *rb = xmalloc(1048576 + 64);
	uint8_t *bs = xmalloc(RING_BURST * burst_len);
	uint8_t *br = xmalloc(RING_BURST * burst_len);
	MPI_Request req[4 * RING_BURST];
	MPI_Status st[4 * RING_BURST];
	double t0 = now();
	char detail[160];

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		MPI_Status s;
		int count;

		fill(sb, n, 1 + k, rank, next);
		memset(rb, 0xa5, n + 64);
		mpi_ok(MPI_Sendrecv(sb, (int)n, MPI_BYTE, next, (int)k, rb, (int)n + 64, MPI_BYTE,
				    prev, (int)k, MPI_COMM_WORLD, &s),
		       "MPI_Sendrecv");
		MPI_Get_count(&s, MPI_BYTE, &count);
		if ((size_t)count != n || s.MPI_SOURCE != prev || s.MPI_TAG != (int)k) {
			mismatch("ring: status count %d source %d tag %d, expected %zu, %d, %zu\n",
				 count, s.MPI_SOURCE, s.MPI_TAG, n, prev, k);
		}
		check("ring", rb, n, 1 + k, prev, rank);
		check_guard("ring", rb + n, 64);
	}

	/*
	 * A burst both ways: sends first, receives posted afterwards in
	 * reverse tag order, so messages wait as unexpected and are matched
	 * by tag, not by arrival order.  Tag t goes to next and to prev.
	 */
	int nreq = 0;
	uint8_t *bs2 = xmalloc(RING_BURST * burst_len);
	uint8_t *br2 = xmalloc(RING_BURST * burst_len);

	for (int t = 0; t < RING_BURST; t++) {
		fill(bs + t * burst_len, burst_len, 100 + t, rank, next);
		fill(bs2 + t * burst_len, burst_len, 200 + t, rank, prev);
		mpi_ok(MPI_Isend(bs + t * burst_len, (int)burst_len, MPI_BYTE, next, 1000 + t,
				 MPI_COMM_WORLD, &req[nreq++]),
		       "MPI_Isend");
		mpi_ok(MPI_Isend(bs2 + t * burst_len, (int)burst_len, MPI_BYTE, prev, 2000 + t,
				 MPI_COMM_WORLD, &req[nreq++]),
		       "MPI_Isend");
	}
	/*
	 * Every neighbour has started its sends before we post a receive
	 * (the sends are not waited for: a send may complete only once it
	 * is matched).
	 */
	mpi_ok(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
	memset(br, 0xa5, RING_BURST * burst_len);
	memset(br2, 0xa5, RING_BURST * burst_len);
	for (int t = RING_BURST - 1; t >= 0; t--) {
		/* tag 1000 + 0 from prev: the wildcard receive, last posted */
		if (t > 0)
			mpi_ok(MPI_Irecv(br + t * burst_len, (int)burst_len, MPI_BYTE, prev,
					 1000 + t, MPI_COMM_WORLD, &req[nreq++]),
			       "MPI_Irecv");
		mpi_ok(MPI_Irecv(br2 + t * burst_len, (int)burst_len, MPI_BYTE, next, 2000 + t,
				 MPI_COMM_WORLD, &req[nreq++]),
		       "MPI_Irecv");
	}
	mpi_ok(MPI_Waitall(nreq, req, st), "MPI_Waitall(burst)");
	{
		MPI_Status s;
		int count;

		/*
		 * Every other message from prev and next has been matched:
		 * the one left is tag 1000 from prev (or, if both neighbours
		 * are the same rank, only that one is left too).
		 */
		mpi_ok(MPI_Recv(br, (int)burst_len, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
				MPI_COMM_WORLD, &s),
		       "MPI_Recv(any)");
		MPI_Get_count(&s, MPI_BYTE, &count);
		if (s.MPI_SOURCE != prev || s.MPI_TAG != 1000 || (size_t)count != burst_len) {
			mismatch("ring burst: the wildcard receive got source %d tag %d count %d, "
				 "expected %d, 1000, %zu\n",
				 s.MPI_SOURCE, s.MPI_TAG, count, prev, burst_len);
		}
	}
	for (int t = 0; t < RING_BURST; t++) {
		check("ring burst (from prev)", br + t * burst_len, burst_len, 100 + t, prev, rank);
		check("ring burst (from next)", br2 + t * burst_len, burst_len, 200 + t, next,
		      rank);
	}
	snprintf(detail, sizeof(detail),
		 "%zu sizes 0 B .. 1 MiB, then %d x %zu B each way received unexpected in reverse "
		 "tag order and one by MPI_ANY_SOURCE/MPI_ANY_TAG",
		 sizeof(sizes) / sizeof(sizes[0]), RING_BURST, burst_len);
	phase_end("ring", detail, t0);
	free(sb);
	free(rb);
	free(bs);
	free(br);
	free(bs2);
	free(br2);
}

/* ---- allreduce --------------------------------------------------------- */

static int64_t ar_val(int r, size_t i)
{
	return (int64_t)(r + 1) * 1000003 + (int64_t)i * 7 - (int64_t)(r * r) * (int64_t)(i % 13);
}

static void phase_allreduce(void)
{
	static const size_t lens[] = {1, 300000};
	double t0 = now();
	char detail[160];

	for (size_t k = 0; k < 2; k++) {
		size_t n = lens[k];
		int64_t *in = xmalloc(n * sizeof(*in));
		int64_t *sum = xmalloc(n * sizeof(*sum));
		int64_t *max = xmalloc(n * sizeof(*max));

		for (size_t i = 0; i < n; i++)
			in[i] = ar_val(rank, i);
		mpi_ok(MPI_Allreduce(in, sum, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD),
		       "MPI_Allreduce(SUM)");
		mpi_ok(MPI_Allreduce(in, max, (int)n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD),
		       "MPI_Allreduce(MAX)");
		for (size_t i = 0; i < n; i++) {
			int64_t s = 0, m = INT64_MIN;

			for (int r = 0; r < nranks; r++) {
				int64_t v = ar_val(r, i);

				s += v;
				m = v > m ? v : m;
			}
			if (sum[i] != s || max[i] != m)
				mismatch("allreduce of %zu: element %zu sum %lld max %lld, "
					 "expected %lld, %lld\n",
					 n, i, (long long)sum[i], (long long)max[i], (long long)s,
					 (long long)m);
		}
		free(in);
		free(sum);
		free(max);
	}

	/* doubles: exact, since every term is a small integer */
	{
		double d[3] = {rank, 0.5 * rank, -2.0 * rank}, ds[3];
		double want = (double)nranks * (nranks - 1) / 2;

		mpi_ok(MPI_Allreduce(d, ds, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
		       "MPI_Allreduce(double)");
		if (ds[0] != want || ds[1] != 0.5 * want || ds[2] != -2.0 * want) {
			mismatch("allreduce doubles: %g %g %g, expected %g %g %g\n", ds[0], ds[1],
				 ds[2], want, 0.5 * want, -2.0 * want);
		}
	}
	/* MINLOC: the minimum (rank - 3)^2 + 1, lowest index on a tie */
	{
		struct {
			int v, r;
		} in = {(rank - 3) * (rank - 3) + 1, rank}, out;
		int wv = INT_MAX, wr = -1;

		for (int r = 0; r < nranks; r++) {
			int v = (r - 3) * (r - 3) + 1;

			if (v < wv) {
				wv = v;
				wr = r;
			}
		}
		mpi_ok(MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD),
		       "MPI_Allreduce(MINLOC)");
		if (out.v != wv || out.r != wr) {
			mismatch("allreduce MINLOC: %d at %d, expected %d at %d\n", out.v, out.r,
				 wv, wr);
		}
	}
	snprintf(detail, sizeof(detail), "SUM and MAX of 1 and %zu int64, SUM of doubles, MINLOC",
		 lens[1]);
	phase_end("allreduce", detail, t0);
}

/* ---- alltoall ---------------------------------------------------------- */

static void phase_alltoall(void)
{
	static const size_t blocks[] = {1024, 65536};
	double t0 = now();
	char detail[160];

	for (size_t k = 0; k < 2; k++) {
		size_t bl = blocks[k];
		uint8_t *s = xmalloc(bl * nranks), *r = xmalloc(bl * nranks);

		for (int d = 0; d < nranks; d++)
			fill(s + d * bl, bl, 40 + k, rank, d);
		memset(r, 0xa5, bl * nranks);
		mpi_ok(MPI_Alltoall(s, (int)bl, MPI_BYTE, r, (int)bl, MPI_BYTE, MPI_COMM_WORLD),
		       "MPI_Alltoall");
		for (int src = 0; src < nranks; src++)
			check("alltoall", r + src * bl, bl, 40 + k, src, rank);
		free(s);
		free(r);
	}
	snprintf(detail, sizeof(detail), "blocks of 1 KiB and 64 KiB, %d x %d blocks each", nranks,
		 nranks);
	phase_end("alltoall", detail, t0);
}

/* ---- big --------------------------------------------------------------- */

static void phase_big(size_t len)
{
	const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
	uint8_t *s = xmalloc(len), *r = xmalloc(len + 4096);
	MPI_Request req[2];
	MPI_Status st[2];
	double t0 = now(), t;
	char detail[160];
	int count;

	if (len > INT_MAX)
		die("-l too large for an MPI count");
	fill(s, len, 77, rank, next);
	memset(r, 0xa5, len + 4096);
	mpi_ok(MPI_Irecv(r, (int)len + 4096, MPI_BYTE, prev, 77, MPI_COMM_WORLD, &req[0]),
	       "MPI_Irecv(big)");
	mpi_ok(MPI_Isend(s, (int)len, MPI_BYTE, next, 77, MPI_COMM_WORLD, &req[1]),
	       "MPI_Isend(big)");
	mpi_ok(MPI_Waitall(2, req, st), "MPI_Waitall(big)");
	t = now() - t0;
	MPI_Get_count(&st[0], MPI_BYTE, &count);
	if ((size_t)count != len) {
		mismatch("big: received %d B, expected %zu\n", count, len);
	}
	check("big", r, len, 77, prev, rank);
	check_guard("big", r + len, 4096);
	snprintf(detail, sizeof(detail),
		 "%zu B from every rank to the next at once (rank 0's in %.2f s)", len, t);
	phase_end("big", detail, t0);
	free(s);
	free(r);
}

/* ---- barrier ----------------------------------------------------------- */

#define BARRIER_ROUNDS 100

static void phase_barrier(const char *dir)
{
	double t0 = now();
	char path[PATH_MAX], detail[200];

	for (int k = 0; k < BARRIER_ROUNDS; k++) {
		if (dir) {
			FILE *f;

			snprintf(path, sizeof(path), "%s/%d.%d", dir, k, rank);
			f = fopen(path, "w");
			if (!f || fclose(f)) {
				perror(path);
				die("cannot create the barrier file");
			}
		}
		mpi_ok(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
		if (!dir)
			continue;
		for (int r = 0; r < nranks; r++) {
			struct stat sb;

			snprintf(path, sizeof(path), "%s/%d.%d", dir, k, r);
			if (stat(path, &sb))
				mismatch("barrier round %d: left the barrier before rank %d "
					 "entered it (%s: %s)\n",
					 k, r, path, strerror(errno));
		}
	}
	if (dir)
		snprintf(detail, sizeof(detail),
			 "%d rounds, after each every rank found the files all %d ranks made "
			 "before entering",
			 BARRIER_ROUNDS, nranks);
	else
		snprintf(detail, sizeof(detail), "%d rounds (no -b DIR: ordering not checked)",
			 BARRIER_ROUNDS);
	phase_end("barrier", detail, t0);
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	size_t big = 16 << 20;
	double t0 = now();
	int c;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	while ((c = getopt(argc, argv, "b:l:x:")) != -1) {
		switch (c) {
		case 'b':
			dir = optarg;
			break;
		case 'l':
			big = strtoull(optarg, NULL, 0);
			break;
		case 'x':
			corrupt = optarg;
			break;
		default:
			if (rank == 0)
				fprintf(stderr,
					"usage: mpi-check [-b DIR] [-l BYTES] [-x PHASE]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (nranks < 2) {
		if (rank == 0)
			fprintf(stderr, "mpi-check: needs at least 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	{
		char host[256] = "?", all[64 * 16] = "";
		char *hosts = NULL;

		gethostname(host, sizeof(host));
		host[15] = 0;
		if (rank == 0)
			hosts = xmalloc((size_t)nranks * 16);
		mpi_ok(MPI_Gather(host, 16, MPI_CHAR, hosts, 16, MPI_CHAR, 0, MPI_COMM_WORLD),
		       "MPI_Gather(hostnames)");
		if (rank == 0) {
			size_t o = 0;

			for (int r = 0; r < nranks && o < sizeof(all) - 20; r++)
				o +=
				    snprintf(all + o, sizeof(all) - o, " %d:%s", r, hosts + 16 * r);
			printf("mpi-check: %d ranks on hosts:%s\n", nranks, all);
			fflush(stdout);
			free(hosts);
		}
	}
	phase = "allreduce";
	phase_allreduce();
	phase = "ring";
	phase_ring();
	phase = "alltoall";
	phase_alltoall();
	phase = "big";
	phase_big(big);
	phase = "barrier";
	phase_barrier(dir);
	if (rank == 0)
		printf("PASS %d ranks (%.2f s)\n", nranks, now() - t0);
	MPI_Finalize();
	return 0;
}
