// SPDX-License-Identifier: BSD-2-Clause
/*
 * droce-bench: latency, bandwidth, message rate and atomics over any
 * libfabric FI_EP_MSG provider (droce, tcp, verbs ...), so that providers
 * can be compared with the same program, the same buffers and the same
 * completion handling.
 *
 * Two processes: a server (-S) and a client.  They meet on an out-of-band
 * TCP control channel (-O host:port) whose address is independent of the
 * fabric address (-F): the server opens a passive endpoint, tells the
 * client its fabric name over the channel, the client connects with
 * fi_connect.  The client drives every measurement; the server follows
 * (echoes, sinks, answers RMA) and reports what it saw.
 *
 * Fabric protocol inside a test (RC ordering is relied on):
 *   - data messages are >= 4 bytes; a 1-byte send is a "sync" marker and a
 *     2-byte send an "end" marker; the server echoes both.
 *   - windowed tests (bw_*, rate_*, atomic_*) time from the first post to
 *     the echo of the sync marker sent after the last completion, so a
 *     provider that completes early (e.g. when data is in a socket buffer)
 *     is still timed to delivery.
 *   - lat_write: the client writes S bytes whose last byte alternates 1/2
 *     (two source buffers, never modified during the test); the server
 *     polls its last byte and writes the same back; the client polls its.
 *
 * Receive credits (bw_send, rate_send; when both sides have FI_RMA): the
 * server keeps up to 256 receives posted and reposts each as its
 * completion is read, but a SEND completes at the client when the server's
 * device took a receive, not when the server's thread reposted it: with a
 * window of 64 and the server's thread off its CPU, the client would use
 * up every receive and meet RNR NAKs.  So the server grants receives: it
 * RDMA-WRITEs the number of receives it has made available since the
 * connection (posted at the start plus reposted) into a registered word
 * of the client's, and the client never has sent more messages (data and
 * markers) than that number.  See credit_limit() and credit_grant().
 *
 * Every wait is bounded: a stall timeout (-s, no completion for that long)
 * and a watchdog (-X) over the whole process.  Warm-up is excluded.
 *
 * Output: one human line per measurement on stdout, and with -C FILE one
 * CSV line per measurement (header: see CSV_HEADER) appended to FILE
 * ("-C -" puts the CSV on stdout instead of the human lines).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "../tools/fiutil.h"

#include "fi_ext_droce.h"

#define CSV_HEADER                                                                                 \
	"provider,label,test,bytes,window,iters,seconds,value,unit,p50,p99,mean,cpu_user_s,"       \
	"cpu_sys_s,runq_frac,peer_runq_frac,status,resent_pkts,timeouts,drops,rnr_naks,rnr_held"

#define MAX_SIZE    (4u << 20) /* largest message of any test */
#define NCTX	    8192       /* per-operation contexts (> any window) */
#define MAX_WINDOW  4096
#define MAX_SAMPLES (1u << 20)

/* One registered region per side, laid out as: */
enum {
	OFF_TXA = 0,		      /* source A (last byte 1 in lat_write) */
	OFF_TXB = OFF_TXA + MAX_SIZE, /* source B (last byte 2 in lat_write) */
	OFF_RX = OFF_TXB + MAX_SIZE,  /* every posted receive aliases this */
	OFF_RMA = OFF_RX + MAX_SIZE,  /* target of remote writes, source of reads */
	OFF_RD = OFF_RMA + MAX_SIZE,  /* local destination of reads */
	OFF_ATOM = OFF_RD + MAX_SIZE, /* remote atomic target (uint64) */
	OFF_OPND = OFF_ATOM + 64,     /* atomic operands: 1, then 0 */
	OFF_CREDIT = OFF_OPND + 64,   /* client: receives the server grants (uint64) */
	OFF_CRSRC = OFF_CREDIT + 64,  /* server: the source of its credit writes */
	OFF_RES = OFF_CRSRC + 64,     /* atomic results, one slot per window entry */
	REGION = OFF_RES + 8 * MAX_WINDOW + 4096,
};

enum test {
	T_LAT_SEND,
	T_LAT_WRITE,
	T_BW_WRITE,
	T_BW_READ,
	T_BW_SEND,
	T_RATE_SEND,
	T_RATE_WRITE,
	T_ATOMIC,
	T_NTESTS
};

static const char *const test_name[T_NTESTS] = {
    "lat_send", "lat_write", "bw_write",   "bw_read",
    "bw_send",	"rate_send", "rate_write", "atomic_fadd",
};

/* ---- options --------------------------------------------------------------------------- */

static struct {
	bool server;
	const char *prov;
	const char *oob;    /* host:port of the control channel */
	const char *fabric; /* server: fabric node to listen on (FI_SOURCE) */
	const char *label;
	const char *csv;
	const char *tests;
	const char *lat_sizes, *bw_sizes, *rate_sizes;
	unsigned window;
	double secs, warm_secs;
	unsigned alt; /* -A: bw_write and bw_read of a size in this many alternating slices */
	uint64_t min_iters, max_iters;
	double stall;	   /* seconds without progress before a wait fails */
	unsigned watchdog; /* seconds for the whole process */
	bool verbose;
	bool yield; /* -Y: sched_yield() after a poll that found nothing */
} opt = {
    .prov = "droce",
    .oob = "127.0.0.1:47990",
    .label = "-",
    .tests = "all",
    .lat_sizes = "8-1m*4,1m",
    .bw_sizes = "4k-4m*4",
    .rate_sizes = "8,64",
    .window = 64,
    .secs = 1.0,
    .warm_secs = -1,
    .min_iters = 5,
    .max_iters = 10000000,
    .stall = 20.0,
    .watchdog = 900,
};

static FILE *csv_out;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "droce-bench[%s %s]: ", opt.server ? "server" : "client", opt.prov);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	exit(2);
}

static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!opt.verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "droce-bench[%s]: ", opt.server ? "server" : "client");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

static void on_alarm(int sig)
{
	static const char msg[] = "droce-bench: watchdog expired, exiting\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
	_exit(124);
}

/* Time this thread spent runnable but waiting for a CPU (ns; schedstat's
 * second field): how much of a measurement other processes took. */
static uint64_t runq_wait_ns(void)
{
	unsigned long long run, wait;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "%llu %llu", &run, &wait);
	fclose(f);
	return n == 2 ? wait : 0;
}

/* ---- out-of-band control channel ----------------------------------------------------- */

enum oob_type { M_HELLO = 1, M_MRINFO, M_BEGIN, M_READY, M_RESULT, M_QUIT, M_BYE };

struct oob_msg {
	uint32_t type;
	uint32_t test;
	uint64_t size;
	uint32_t window;
	int32_t status;
	uint64_t caps;
	uint64_t addr;		   /* HELLO: fabric IPv4 (host order); MRINFO: remote base */
	uint64_t key;		   /* HELLO: fabric port;              MRINFO: key */
	uint64_t count;		   /* RESULT: data messages received; MRINFO: receives posted */
	uint64_t runq_ns, busy_ns; /* RESULT: the server's run-queue wait, test time */
	uint64_t resent, timeouts, drops; /* RESULT: the server's droce counters (deltas) */
	uint64_t rnr_naks, rnr_held;	  /* RESULT: likewise */
};

/* ---- fabric state ---------------------------------------------------------------------- */

static struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_mr *mr;
	void *desc;
	uint8_t *buf;
	uint64_t base;	      /* what the peer uses as the address of our region */
	uint64_t rbase, rkey; /* the peer's */
	uint64_t caps, peer_caps;
	size_t inject;
	size_t tx_size;
	unsigned rx_post;
	int oob;

	/* counters updated by progress() */
	uint64_t tx_posted, tx_done; /* operations that generate a completion */
	uint64_t rx_data, rx_sync, rx_end;
	size_t rx_last_len;
	uint64_t events; /* completions (and credit grants) seen: what stall detection watches */
	int err;

	/* receive credits (see the top of the file); all under the one
	 * application thread, but the credit word, which the peer writes */
	bool credits;		 /* both sides have FI_RMA: the scheme can run */
	bool credit_take;	 /* client: the current test waits for credits */
	bool credit_give;	 /* server: the current test grants them */
	uint64_t msgs_sent;	 /* messages sent that take one of the peer's receives */
	uint64_t rx_granted;	 /* receives made available: posted + reposted */
	uint64_t credit_seen;	 /* client: the grant last read */
	uint64_t credit_written; /* server: the grant last written */
	unsigned credit_batch;	 /* server: write when this many more are granted */
	bool credit_busy;	 /* server: a credit write is in flight (one at a time) */
	struct fi_context2 credit_ctx;

	struct fi_context2 txctx[NCTX];
	struct fi_context2 *rxctx;
	unsigned txctx_next;
} F;

/* What droce counted (FI_DROCE_OPS_1): packets its requester resent,
 * retransmit timeouts, and frames lost: those the port could not send
 * (tx_dropped, tx_nombuf), and those the responder found a gap before (the
 * first one of a gap draws a sequence NAK, tx_seq_naks; the rest are
 * discarded, rx_drop_psn_ahead), or the requester, READ responses past a
 * missing one (rx_rsp_ahead).  Not
 * the duplicates a spurious timeout causes (those are in resent), nor the
 * port's rx_dropped (on a kernel interface it counts other traffic, the
 * control channel's TCP among it).  Apart from those, flow control: RNR
 * NAKs the responder sent for want of a receive (tx_rnr_naks) and the
 * frames it held back behind them (rx_drop_psn_ahead_rnr: resent once the
 * requester's RNR wait ends, not lost).  All zero for other providers. */
struct dcount {
	uint64_t resent, timeouts, drops;
	uint64_t rnr_naks, rnr_held;
};

static void dcount_get(struct dcount *d)
{
	struct fi_droce_counter c[256];
	struct fi_droce_ops *ops;
	size_t n;

	memset(d, 0, sizeof(*d));
	if (strcmp(opt.prov, "droce") || !F.ep || !F.domain ||
	    fi_open_ops(&F.domain->fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL))
		return;
	n = sizeof(c) / sizeof(c[0]);
	if (!ops->counters(&F.ep->fid, c, &n))
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(c[i].name, "tx_resent_pkts"))
				d->resent += c[i].value;
			else if (!strcmp(c[i].name, "timeouts"))
				d->timeouts += c[i].value;
			else if (!strcmp(c[i].name, "tx_rnr_naks"))
				d->rnr_naks += c[i].value;
			else if (!strcmp(c[i].name, "rx_drop_psn_ahead_rnr"))
				d->rnr_held += c[i].value;
			else if (!strcmp(c[i].name, "rx_drop_psn_ahead") ||
				 !strcmp(c[i].name, "tx_seq_naks") ||
				 !strcmp(c[i].name, "rx_rsp_ahead"))
				d->drops += c[i].value;
		}
	n = sizeof(c) / sizeof(c[0]);
	if (!ops->counters(&F.domain->fid, c, &n))
		for (size_t i = 0; i < n; i++)
			if (!strcmp(c[i].name, "tx_dropped") || !strcmp(c[i].name, "tx_nombuf") ||
			    !strcmp(c[i].name, "rx_ring_drops") ||
			    !strcmp(c[i].name, "rx_truncated") || !strcmp(c[i].name, "rx_nombuf"))
				d->drops += c[i].value;
}

/* -v: every non-zero droce counter of the endpoint and the domain, on
 * stderr, at the end (where a lossless path still loses frames) */
static void dcount_dump(void)
{
	struct fi_droce_counter c[256];
	struct fi_droce_ops *ops;
	struct fid *f[2];
	size_t n;

	if (!opt.verbose || strcmp(opt.prov, "droce") || !F.ep || !F.domain ||
	    fi_open_ops(&F.domain->fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL))
		return;
	f[0] = &F.ep->fid;
	f[1] = &F.domain->fid;
	for (int k = 0; k < 2; k++) {
		n = sizeof(c) / sizeof(c[0]);
		if (ops->counters(f[k], c, &n))
			continue;
		fprintf(stderr, "droce-bench[%s] %s counters:", opt.server ? "server" : "client",
			k ? "domain" : "endpoint");
		for (size_t i = 0; i < n; i++)
			if (c[i].value)
				fprintf(stderr, " %s=%" PRIu64, c[i].name, c[i].value);
		fprintf(stderr, "\n");
	}
}

static void dcount_delta(struct dcount *d, const struct dcount *before)
{
	dcount_get(d);
	d->resent -= before->resent;
	d->timeouts -= before->timeouts;
	d->drops -= before->drops;
	d->rnr_naks -= before->rnr_naks;
	d->rnr_held -= before->rnr_held;
}

/* Stall detection that keeps the clock out of the polling loops: the clock
 * is read every 256 calls; a wait fails after opt.stall seconds in which no
 * completion arrived. */
struct stallwatch {
	uint64_t events, since;
	unsigned spin;
	bool moved;
};

static void sw_init(struct stallwatch *w)
{
	w->events = F.events;
	w->since = fiu_now_ns();
	w->spin = 0;
	w->moved = false;
}

static bool sw_stalled(struct stallwatch *w)
{
	uint64_t now;

	if (F.events != w->events) {
		w->events = F.events;
		w->moved = true;
	}
	if (++w->spin & 255)
		return false;
	now = fiu_now_ns();
	if (w->moved) {
		w->since = now;
		w->moved = false;
		return false;
	}
	return now - w->since > (uint64_t)(opt.stall * 1e9);
}

static int post_rx(struct fi_context2 *c)
{
	return (int)fi_recv(F.ep, F.buf + OFF_RX, MAX_SIZE, F.desc, 0, c);
}

/* Read completions; repost receives; classify them.  Returns < 0 on a
 * completion error (printed once), 0 otherwise. */
static int progress(void)
{
	struct fi_cq_data_entry e[64];
	ssize_t n = fi_cq_read(F.cq, e, 64);

	if (n > 0) {
		F.events += (uint64_t)n;
		for (ssize_t i = 0; i < n; i++) {
			if (e[i].flags & FI_RECV) {
				if (e[i].len == 1)
					F.rx_sync++;
				else if (e[i].len == 2)
					F.rx_end++;
				else {
					F.rx_data++;
					F.rx_last_len = e[i].len;
				}
				int r;
				uint64_t t0 = 0;

				while ((r = post_rx(e[i].op_context)) == -FI_EAGAIN) {
					if (!t0)
						t0 = fiu_now_ns();
					if (fiu_now_ns() - t0 > (uint64_t)(opt.stall * 1e9)) {
						fprintf(stderr,
							"droce-bench: re-posting a receive: "
							"timed out\n");
						return F.err = -FI_ETIMEDOUT;
					}
				}
				if (r) {
					fprintf(stderr, "droce-bench: fi_recv: %s\n",
						fiu_strerror(r));
					return F.err = r;
				}
				F.rx_granted++;
			} else {
				if (e[i].op_context == &F.credit_ctx)
					F.credit_busy = false;
				F.tx_done++;
			}
		}
		return 0;
	}
	if (n == -FI_EAGAIN || n == 0) {
		if (opt.yield)
			sched_yield();
		return 0;
	}
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry ee;
		char pbuf[256];

		memset(&ee, 0, sizeof(ee));
		if (fi_cq_readerr(F.cq, &ee, 0) > 0) {
			fprintf(
			    stderr,
			    "droce-bench[%s]: completion error: %s (%d), prov_errno %d: %s "
			    "(flags 0x%" PRIx64 ")\n",
			    opt.server ? "server" : "client", fiu_strerror(ee.err), ee.err,
			    ee.prov_errno,
			    fi_cq_strerror(F.cq, ee.prov_errno, ee.err_data, pbuf, sizeof(pbuf)),
			    (uint64_t)ee.flags);
			return F.err = -(ee.err ? ee.err : FI_EIO);
		}
		return F.err = -FI_EIO;
	}
	fprintf(stderr, "droce-bench: fi_cq_read: %s\n", fiu_strerror((int)n));
	return F.err = (int)n;
}

/* Wait until *ctr >= want, driving progress; -FI_ETIMEDOUT after opt.stall
 * seconds without any completion. */
static int wait_ctr(const uint64_t *ctr, uint64_t want)
{
	struct stallwatch w;

	sw_init(&w);
	while (*ctr < want) {
		int r = progress();

		if (r)
			return r;
		if (*ctr >= want)
			break;
		if (sw_stalled(&w)) {
			fprintf(stderr,
				"droce-bench[%s]: no completion for %.1f s (have %" PRIu64
				", want %" PRIu64 ")\n",
				opt.server ? "server" : "client", opt.stall, *ctr, want);
			return -FI_ETIMEDOUT;
		}
	}
	return 0;
}

/* ---- receive credits ---------------------------------------------------------------- */

/*
 * Client: the receives the server has granted so far.  The word is
 * written by the server's RDMA WRITEs (8 bytes, naturally aligned, one
 * packet) while this thread reads it: the load is one 64-bit load, and a
 * provider that places the payload with an ascending copy (droce's
 * memcpy, a socket read) can at worst show new low bytes under old high
 * ones, a value below the one written: never more credit than granted.
 * A grant is monotonic, so the largest value seen stands.  A new grant
 * counts as progress for stall detection (it ends no completion).
 */
static uint64_t credit_limit(void)
{
	uint64_t v = __atomic_load_n((uint64_t *)(F.buf + OFF_CREDIT), __ATOMIC_ACQUIRE);

	if (v > F.credit_seen) {
		F.credit_seen = v;
		F.events++;
	}
	return F.credit_seen;
}

/* Client: may one more message go to the server now? */
static bool credit_ok(void)
{
	return !F.credit_take || F.msgs_sent < credit_limit();
}

/* Client: wait for a credit, driving progress; bounded like every wait. */
static int credit_wait(void)
{
	struct stallwatch w;
	int r;

	sw_init(&w);
	while (!credit_ok()) {
		if ((r = progress()))
			return r;
		if (sw_stalled(&w)) {
			fprintf(stderr,
				"droce-bench: no receive credit for %.1f s (sent %" PRIu64
				", granted %" PRIu64 ")\n",
				opt.stall, F.msgs_sent, F.credit_seen);
			return -FI_ETIMEDOUT;
		}
	}
	return 0;
}

/*
 * Server: tell the client how many receives it may use, when that grew
 * by credit_batch (a quarter of the receives posted) or force says so (a
 * test's start: the client's word may be stale).  One write at a time,
 * from its own source word, which is not changed while the write is in
 * flight; -FI_EAGAIN leaves it to the next call.  It cannot deadlock: the
 * client stops only when it has sent all it was granted (W); once those
 * arrived and were reposted the grant is W + the receives posted, at
 * least credit_batch more than written.
 */
static int credit_grant(bool force)
{
	uint64_t *src = (uint64_t *)(F.buf + OFF_CRSRC);
	ssize_t ret;

	if (!F.credit_give || F.credit_busy || F.rx_granted == F.credit_written ||
	    (!force && F.rx_granted - F.credit_written < F.credit_batch))
		return 0;
	*src = F.rx_granted;
	ret = fi_write(F.ep, src, sizeof(*src), F.desc, 0, F.rbase + OFF_CREDIT, F.rkey,
		       &F.credit_ctx);
	if (ret == -FI_EAGAIN)
		return 0;
	if (ret) {
		fprintf(stderr, "droce-bench: fi_write(credit): %s\n", fiu_strerror((int)ret));
		return (int)ret;
	}
	F.tx_posted++;
	F.credit_busy = true;
	F.credit_written = *src;
	return 0;
}

static struct fi_context2 *next_ctx(void)
{
	struct fi_context2 *c = &F.txctx[F.txctx_next];

	F.txctx_next = (F.txctx_next + 1) % NCTX;
	return c;
}

/* Retry a post while it says -FI_EAGAIN, driving progress; bounded. */
#define POST_RETRY(ret, call)                                                                      \
	do {                                                                                       \
		struct stallwatch w_;                                                              \
		bool first_ = true;                                                                \
		while (((ret) = (call)) == -FI_EAGAIN) {                                           \
			int r_;                                                                    \
			if (first_) {                                                              \
				sw_init(&w_);                                                      \
				first_ = false;                                                    \
			}                                                                          \
			r_ = progress();                                                           \
			if (r_) {                                                                  \
				(ret) = r_;                                                        \
				break;                                                             \
			}                                                                          \
			if (sw_stalled(&w_)) {                                                     \
				(ret) = -FI_ETIMEDOUT;                                             \
				break;                                                             \
			}                                                                          \
		}                                                                                  \
	} while (0)

static int send_marker(size_t len)
{
	ssize_t ret = credit_wait();

	if (ret)
		return (int)ret;
	POST_RETRY(ret, fi_inject(F.ep, F.buf + OFF_TXA, len, 0));
	if (ret)
		fprintf(stderr, "droce-bench: fi_inject(marker): %s\n", fiu_strerror((int)ret));
	else
		F.msgs_sent++;
	return (int)ret;
}

/* Send `len` bytes from source A, inline if small enough. */
static int send_data(size_t len, uint8_t *src)
{
	ssize_t ret = credit_wait();

	if (ret)
		return (int)ret;
	if (len <= F.inject) {
		POST_RETRY(ret, fi_inject(F.ep, src, len, 0));
	} else {
		POST_RETRY(ret, fi_send(F.ep, src, len, F.desc, 0, next_ctx()));
		if (!ret)
			F.tx_posted++;
	}
	if (!ret)
		F.msgs_sent++;
	return (int)ret;
}

static int write_data(size_t len, uint8_t *src, uint64_t raddr)
{
	ssize_t ret;

	if (len <= F.inject) {
		POST_RETRY(ret, fi_inject_write(F.ep, src, len, 0, raddr, F.rkey));
		if (ret != -FI_ENOSYS)
			return (int)ret;
	}
	POST_RETRY(ret, fi_write(F.ep, src, len, F.desc, 0, raddr, F.rkey, next_ctx()));
	if (!ret)
		F.tx_posted++;
	return (int)ret;
}

static int drain_tx(void)
{
	return wait_ctr(&F.tx_done, F.tx_posted);
}

/* ---- OOB I/O, with fabric progress while waiting ------------------------------------- */

static int oob_send(struct oob_msg *m)
{
	return fiu_send_all(F.oob, m, sizeof(*m));
}

/* Receive one message; progress the fabric (when there is one) meanwhile;
 * fail after `secs`. */
static int oob_recv(struct oob_msg *m, double secs)
{
	size_t off = 0;
	uint64_t end = fiu_now_ns() + (uint64_t)(secs * 1e9);

	while (off < sizeof(*m)) {
		struct pollfd p = {.fd = F.oob, .events = POLLIN};
		int r = poll(&p, 1, F.cq ? 0 : 100);

		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0) {
			ssize_t n = recv(F.oob, (char *)m + off, sizeof(*m) - off, 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				fprintf(stderr,
					"droce-bench: control channel closed by the peer\n");
				return -1;
			}
			off += (size_t)n;
			continue;
		}
		if (F.cq && progress())
			return -1;
		if (fiu_now_ns() > end) {
			fprintf(stderr, "droce-bench: control channel: no message for %.0f s\n",
				secs);
			return -1;
		}
	}
	return 0;
}

static void split_hostport(const char *s, char *host, size_t hlen, char *port, size_t plen)
{
	const char *c = strrchr(s, ':');

	if (!c)
		die("-O wants host:port, not '%s'\n", s);
	snprintf(host, hlen, "%.*s", (int)(c - s), s);
	snprintf(port, plen, "%s", c + 1);
}

static int oob_listen_accept(void)
{
	char host[256], port[32];
	struct addrinfo hints = {
	    .ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai;
	int one = 1, fd, c;

	split_hostport(opt.oob, host, sizeof(host), port, sizeof(port));
	if (getaddrinfo(host[0] ? host : NULL, port, &hints, &ai))
		die("control channel: cannot resolve %s\n", opt.oob);
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1))
		die("control channel: bind/listen %s: %s\n", opt.oob, strerror(errno));
	freeaddrinfo(ai);
	/* tell a script we are ready (it may wait for this line) */
	fprintf(stderr, "droce-bench[server %s]: listening on %s\n", opt.prov, opt.oob);
	c = fiu_tcp_accept(fd, (int)(opt.watchdog * 1000));
	if (c < 0 && errno == ETIMEDOUT)
		die("control channel: no client\n");
	if (c < 0)
		die("control channel: accept: %s\n", strerror(errno));
	close(fd);
	return c;
}

static int oob_connect(void)
{
	char host[256], port[32];
	int fd, gai_err;

	split_hostport(opt.oob, host, sizeof(host), port, sizeof(port));
	/* the server may still be starting */
	fd = fiu_tcp_connect(host, port, AF_INET, 20, fiu_now_ns() + (uint64_t)(opt.stall * 1e9),
			     &gai_err);
	if (fd < 0 && gai_err)
		die("control channel: cannot resolve %s\n", opt.oob);
	if (fd < 0)
		die("control channel: cannot connect to %s: %s\n", opt.oob, strerror(errno));
	return fd;
}

/* ---- fabric setup ---------------------------------------------------------------------- */

static struct fi_info *get_info(const char *node, const char *service, uint64_t flags)
{
	static const uint64_t tries[] = {
	    FI_MSG | FI_RMA | FI_ATOMIC,
	    FI_MSG | FI_RMA,
	    FI_MSG,
	};

	for (size_t t = 0; t < sizeof(tries) / sizeof(tries[0]); t++) {
		struct fi_info *hints = fiu_msg_hints(opt.prov, tries[t], FI_CONTEXT | FI_CONTEXT2);
		struct fi_info *info = NULL;
		int ret;

		if (!hints)
			die("out of memory\n");
		hints->addr_format = FI_SOCKADDR_IN;
		hints->domain_attr->threading = FI_THREAD_DOMAIN;
		ret = fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info);
		fi_freeinfo(hints);
		if (ret) {
			vlog("fi_getinfo(caps 0x%" PRIx64 "): %s\n", tries[t], fiu_strerror(ret));
			continue;
		}
		/* the provider itself, not a utility provider layered on it */
		for (struct fi_info *i = info; i; i = i->next) {
			if (!strcmp(i->fabric_attr->prov_name, opt.prov)) {
				struct fi_info *pick = fi_dupinfo(i);

				fi_freeinfo(info);
				return pick;
			}
		}
		fi_freeinfo(info);
	}
	die("fi_getinfo: provider '%s' offers no FI_EP_MSG endpoint here\n", opt.prov);
	return NULL;
}

static void wait_eq(uint32_t want, struct fi_eq_cm_entry *entry, size_t len)
{
	uint64_t end = fiu_now_ns() + (uint64_t)(opt.stall * 1e9);

	for (;;) {
		uint32_t ev;
		ssize_t n = fi_eq_read(F.eq, &ev, entry, len, 0);

		if (n > 0) {
			if (ev == want)
				return;
			die("event queue: got event %u, expected %u\n", ev, want);
		}
		if (n == -FI_EAVAIL) {
			char text[256];

			fiu_eq_error(F.eq, text, sizeof(text));
			die("event queue: error %s\n", text);
		}
		if (n != -FI_EAGAIN)
			die("fi_eq_read: %s\n", fiu_strerror((int)n));
		if (fiu_now_ns() > end)
			die("event queue: no event %u in %.0f s\n", want, opt.stall);
		usleep(50);
	}
}

#define CHK(call)                                                                                  \
	do {                                                                                       \
		int r_ = (int)(call);                                                              \
		if (r_)                                                                            \
			die("%s: %s (%d)\n", #call, fiu_strerror(r_), r_);                         \
	} while (0)

static void open_ep_common(struct fi_info *info)
{
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
	uint64_t access = FI_SEND | FI_RECV;

	F.info = info;
	if (!F.domain)
		CHK(fi_domain(F.fabric, info, &F.domain, NULL));
	cqa.size = 8192;
	if (info->tx_attr->size + info->rx_attr->size < cqa.size)
		cqa.size = info->tx_attr->size + info->rx_attr->size + 64;
	CHK(fi_cq_open(F.domain, &cqa, &F.cq, NULL));
	CHK(fi_endpoint(F.domain, info, &F.ep, NULL));
	CHK(fi_ep_bind(F.ep, &F.eq->fid, 0));
	CHK(fi_ep_bind(F.ep, &F.cq->fid, FI_TRANSMIT | FI_RECV));
	CHK(fi_enable(F.ep));

	F.buf = aligned_alloc(4096, REGION);
	if (!F.buf)
		die("out of memory\n");
	memset(F.buf, 0, REGION);
	F.caps = info->caps;
	if (F.caps & FI_RMA)
		access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	if ((F.caps & (FI_RMA | FI_ATOMIC)) || (info->domain_attr->mr_mode & FI_MR_LOCAL)) {
		CHK(fi_mr_reg(F.domain, F.buf, REGION, access, 0, 0, 0, &F.mr, NULL));
		F.desc = fi_mr_desc(F.mr);
		F.base =
		    (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)F.buf : 0;
	}
	F.inject = info->tx_attr->inject_size;
	F.tx_size = info->tx_attr->size;
	F.rx_post = info->rx_attr->size < 256 ? (unsigned)info->rx_attr->size : 256;
	F.rxctx = calloc(F.rx_post, sizeof(*F.rxctx));
	for (unsigned i = 0; i < F.rx_post; i++)
		CHK(post_rx(&F.rxctx[i]));
	F.rx_granted = F.rx_post;
	F.credit_batch = F.rx_post / 4 ? F.rx_post / 4 : 1;
	vlog("%s: inject %zu, tx size %zu, rx posted %u, caps 0x%" PRIx64 ", mr_mode 0x%x\n",
	     opt.prov, F.inject, F.tx_size, F.rx_post, F.caps, info->domain_attr->mr_mode);
}

static void setup_server(void)
{
	struct fi_info *info = get_info(opt.fabric, NULL, FI_SOURCE);
	struct fi_eq_attr eqa = {.size = 64, .wait_obj = FI_WAIT_UNSPEC};
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[256];
	} ent;
	struct sockaddr_in sin;
	size_t alen = sizeof(sin);
	struct oob_msg m;

	CHK(fi_fabric(info->fabric_attr, &F.fabric, NULL));
	CHK(fi_eq_open(F.fabric, &eqa, &F.eq, NULL));
	CHK(fi_passive_ep(F.fabric, info, &F.pep, NULL));
	CHK(fi_pep_bind(F.pep, &F.eq->fid, 0));
	CHK(fi_listen(F.pep));
	CHK(fi_getname(&F.pep->fid, &sin, &alen));
	if (sin.sin_family != AF_INET)
		die("passive endpoint has a non-IPv4 name\n");
	if (sin.sin_addr.s_addr == htonl(INADDR_ANY) && opt.fabric)
		inet_pton(AF_INET, opt.fabric, &sin.sin_addr);
	fi_freeinfo(info);

	F.oob = oob_listen_accept();
	memset(&m, 0, sizeof(m));
	m.type = M_HELLO;
	m.addr = ntohl(sin.sin_addr.s_addr);
	m.key = ntohs(sin.sin_port);
	if (oob_send(&m))
		die("control channel: send\n");

	wait_eq(FI_CONNREQ, &ent.e, sizeof(ent));
	open_ep_common(ent.e.info);
	CHK(fi_accept(F.ep, NULL, 0));
	wait_eq(FI_CONNECTED, &ent.e, sizeof(ent));
}

static void setup_client(void)
{
	struct fi_eq_attr eqa = {.size = 64, .wait_obj = FI_WAIT_UNSPEC};
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[256];
	} ent;
	struct oob_msg m;
	char node[64], service[16];
	struct in_addr ia;
	struct fi_info *info;

	F.oob = oob_connect();
	if (oob_recv(&m, opt.stall) || m.type != M_HELLO)
		die("control channel: no HELLO from the server\n");
	ia.s_addr = htonl((uint32_t)m.addr);
	inet_ntop(AF_INET, &ia, node, sizeof(node));
	snprintf(service, sizeof(service), "%u", (unsigned)m.key);
	vlog("server's fabric address %s:%s\n", node, service);
	info = get_info(node, service, 0);
	CHK(fi_fabric(info->fabric_attr, &F.fabric, NULL));
	CHK(fi_eq_open(F.fabric, &eqa, &F.eq, NULL));
	open_ep_common(info);
	CHK(fi_connect(F.ep, info->dest_addr, NULL, 0));
	wait_eq(FI_CONNECTED, &ent.e, sizeof(ent));
}

/* Both: swap region address/key and capabilities. */
static void exchange_mr(void)
{
	struct oob_msg m, r;

	memset(&m, 0, sizeof(m));
	m.type = M_MRINFO;
	m.addr = F.base;
	m.key = F.mr ? fi_mr_key(F.mr) : 0;
	m.caps = F.caps;
	m.count = F.rx_post;
	if (opt.server) {
		if (oob_recv(&r, opt.stall) || r.type != M_MRINFO || oob_send(&m))
			die("control channel: MRINFO\n");
	} else {
		if (oob_send(&m) || oob_recv(&r, opt.stall) || r.type != M_MRINFO)
			die("control channel: MRINFO\n");
	}
	F.rbase = r.addr;
	F.rkey = r.key;
	F.peer_caps = r.caps;
	/* credits need the client's word registered for remote writes and
	 * the server able to write it */
	F.credits = (F.caps & FI_RMA) && (F.peer_caps & FI_RMA) && F.mr;
	if (opt.server)
		F.credit_written = F.rx_post; /* what the client starts from */
	else
		*(uint64_t *)(F.buf + OFF_CREDIT) = r.count;
}

static void teardown(void)
{
	dcount_dump();
	if (F.ep) {
		fi_shutdown(F.ep, 0);
		fi_close(&F.ep->fid);
	}
	if (F.mr)
		fi_close(&F.mr->fid);
	if (F.cq)
		fi_close(&F.cq->fid);
	if (F.pep)
		fi_close(&F.pep->fid);
	if (F.eq)
		fi_close(&F.eq->fid);
	if (F.domain)
		fi_close(&F.domain->fid);
	if (F.fabric)
		fi_close(&F.fabric->fid);
	if (F.info)
		fi_freeinfo(F.info);
	free(F.buf);
	free(F.rxctx);
}

/* ---- the server ------------------------------------------------------------------------ */

static bool test_supported(enum test t, size_t size)
{
	bool rma = (F.caps & FI_RMA) && (F.peer_caps & FI_RMA);
	bool atomic = (F.caps & FI_ATOMIC) && (F.peer_caps & FI_ATOMIC);

	if (size > MAX_SIZE || size < 4)
		return false;
	switch (t) {
	case T_LAT_WRITE:
	case T_BW_WRITE:
	case T_BW_READ:
	case T_RATE_WRITE:
		return rma;
	case T_ATOMIC:
		if (!atomic)
			return false;
		{
			size_t cnt = 0;

			return !fi_fetch_atomicvalid(F.ep, FI_UINT64, FI_SUM, &cnt) && cnt >= 1;
		}
	default:
		return true;
	}
}

/* Prepare the buffers both sides use for test t at size s. */
static void prepare(enum test t, size_t s)
{
	F.buf[OFF_RMA + s - 1] = 0;
	F.buf[OFF_TXA + s - 1] = 1;
	F.buf[OFF_TXB + s - 1] = 2;
	*(uint64_t *)(F.buf + OFF_ATOM) = 0;
	*(uint64_t *)(F.buf + OFF_OPND) = 1;
	*(uint64_t *)(F.buf + OFF_OPND + 8) = 0;
	(void)t;
}

/* Follow one test until the client's end marker; returns the number of
 * data messages received, or < 0. */
static int64_t serve_test(enum test t, size_t s)
{
	uint64_t data0 = F.rx_data, sync_done = F.rx_sync, end0 = F.rx_end;
	uint64_t echoed = F.rx_data;
	volatile uint8_t *last = F.buf + OFF_RMA + s - 1;
	uint8_t seen = 0;
	unsigned spin = 0;
	bool force = true;
	int r;

	F.credit_give = F.credits && (t == T_BW_SEND || t == T_RATE_SEND);
	for (;;) {
		if ((r = progress()) || (r = credit_grant(force)))
			goto out;
		force = false;
		/* the client says nothing on the control channel during a test:
		 * anything there (its exit closes it) means the test is over */
		if (!(++spin & 1023)) {
			struct pollfd p = {.fd = F.oob, .events = POLLIN};

			if (poll(&p, 1, 0) > 0) {
				fprintf(stderr, "droce-bench[server]: the client left during %s\n",
					test_name[t]);
				r = -FI_ECONNABORTED;
				goto out;
			}
		}
		if (t == T_LAT_SEND) {
			while (echoed < F.rx_data) {
				if ((r = send_data(F.rx_last_len, F.buf + OFF_TXA)))
					goto out;
				echoed++;
			}
		} else if (t == T_LAT_WRITE) {
			uint8_t v = *last;

			if (v != seen) {
				seen = v;
				r = write_data(s, F.buf + (v == 1 ? OFF_TXA : OFF_TXB),
					       F.rbase + OFF_RMA);
				if (r)
					goto out;
			}
		}
		while (sync_done < F.rx_sync) {
			if ((r = send_marker(1)))
				goto out;
			sync_done++;
		}
		if (F.rx_end > end0) {
			F.credit_give = false;
			if ((r = send_marker(2)) || (r = drain_tx()))
				goto out;
			return (int64_t)(F.rx_data - data0);
		}
	}
out:
	F.credit_give = false;
	return r;
}

static int run_server(void)
{
	struct oob_msg m, r;

	setup_server();
	exchange_mr();
	for (;;) {
		if (oob_recv(&m, opt.watchdog))
			return 1;
		if (m.type == M_QUIT) {
			memset(&r, 0, sizeof(r));
			r.type = M_BYE;
			oob_send(&r);
			return 0;
		}
		if (m.type != M_BEGIN || m.test >= T_NTESTS)
			die("control channel: unexpected message %u\n", m.type);
		memset(&r, 0, sizeof(r));
		r.type = M_READY;
		r.status = test_supported(m.test, m.size) ? 0 : -FI_ENOSYS;
		if (!r.status)
			prepare(m.test, m.size);
		if (oob_send(&r))
			return 1;
		if (r.status)
			continue;
		uint64_t q0 = runq_wait_ns(), t0 = fiu_now_ns();
		struct dcount dc0, dc;
		int64_t got;

		dcount_get(&dc0);
		got = serve_test(m.test, m.size);
		memset(&r, 0, sizeof(r));
		dcount_delta(&dc, &dc0);
		r.resent = dc.resent;
		r.timeouts = dc.timeouts;
		r.drops = dc.drops;
		r.rnr_naks = dc.rnr_naks;
		r.rnr_held = dc.rnr_held;
		r.runq_ns = runq_wait_ns() - q0;
		r.busy_ns = fiu_now_ns() - t0;
		r.type = M_RESULT;
		r.status = got < 0 ? (int32_t)got : 0;
		r.count = got < 0 ? 0 : (uint64_t)got;
		if (oob_send(&r))
			return 1;
		if (got < 0)
			return 1; /* the connection is not trustworthy any more */
	}
}

/* ---- the client ------------------------------------------------------------------------ */

struct result {
	uint64_t iters;
	double secs;
	double value, p50, p99, mean;
	const char *unit;
	const char *status;
	double cpu_user, cpu_sys;
	double runq, peer_runq; /* fractions of the time spent waiting for a CPU */
	struct dcount dc;	/* both sides' droce counters over the whole test */
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t *samples;

static double cpu_secs(bool user)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	struct timeval tv = user ? ru.ru_utime : ru.ru_stime;

	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static bool keep_going(uint64_t done, uint64_t t0, uint64_t min, double secs)
{
	if (done >= opt.max_iters)
		return false;
	if (done < min)
		return true;
	return (double)(fiu_now_ns() - t0) < secs * 1e9;
}

/* One ping-pong phase; samples recorded when rec. */
static int pingpong(enum test t, size_t s, uint64_t min, double secs, bool rec, uint64_t *iters,
		    uint64_t *elapsed)
{
	volatile uint8_t *last = F.buf + OFF_RMA + s - 1;
	uint64_t t0 = fiu_now_ns(), i = 0;
	int r;

	while (keep_going(i, t0, min, secs)) {
		uint64_t a = fiu_now_ns();

		if (t == T_LAT_SEND) {
			uint64_t want = F.rx_data + 1;

			if ((r = send_data(s, F.buf + OFF_TXA)) || (r = wait_ctr(&F.rx_data, want)))
				return r;
		} else {
			/* alternate sources: the byte the server polls alternates 1, 2 */
			uint8_t v = (F.buf[OFF_RMA + s - 1] == 1) ? 2 : 1;
			struct stallwatch w;

			if ((r = write_data(s, F.buf + (v == 1 ? OFF_TXA : OFF_TXB),
					    F.rbase + OFF_RMA)))
				return r;
			sw_init(&w);
			while (*last != v) {
				if ((r = progress()))
					return r;
				if (sw_stalled(&w)) {
					fprintf(stderr,
						"droce-bench: lat_write: no answer in %.1f s\n",
						opt.stall);
					return -FI_ETIMEDOUT;
				}
			}
		}
		uint64_t b = fiu_now_ns();

		if (rec && i < MAX_SAMPLES)
			samples[i] = (uint32_t)((b - a) > UINT32_MAX ? UINT32_MAX : (b - a));
		i++;
		/* reap send/write completions so the queue never fills */
		if (F.tx_posted - F.tx_done > F.tx_size / 2 && (r = drain_tx()))
			return r;
	}
	*iters = i;
	*elapsed = fiu_now_ns() - t0;
	return 0;
}

static int post_op(enum test t, size_t s, unsigned slot)
{
	uint64_t raddr = F.rbase + OFF_RMA;

	switch (t) {
	case T_BW_SEND:
	case T_RATE_SEND: {
		int r = (int)fi_send(F.ep, F.buf + OFF_TXA, s, F.desc, 0, next_ctx());

		if (!r)
			F.msgs_sent++;
		return r;
	}
	case T_BW_WRITE:
	case T_RATE_WRITE:
		return (int)fi_write(F.ep, F.buf + OFF_TXA, s, F.desc, 0, raddr, F.rkey,
				     next_ctx());
	case T_BW_READ:
		return (int)fi_read(F.ep, F.buf + OFF_RD, s, F.desc, 0, raddr, F.rkey, next_ctx());
	case T_ATOMIC:
		return (int)fi_fetch_atomic(
		    F.ep, F.buf + OFF_OPND, 1, F.desc, F.buf + OFF_RES + 8 * (slot % MAX_WINDOW),
		    F.desc, 0, F.rbase + OFF_ATOM, F.rkey, FI_UINT64, FI_SUM, next_ctx());
	default:
		return -FI_EINVAL;
	}
}

/* Keep `window` operations in flight until the phase ends, then drain. */
static int windowed(enum test t, size_t s, unsigned window, uint64_t min, double secs,
		    uint64_t *iters)
{
	uint64_t t0 = fiu_now_ns(), posted = 0, base = F.tx_done;
	struct stallwatch w;
	bool more = true;
	int r;

	sw_init(&w);
	for (;;) {
		uint64_t inflight = F.tx_posted - F.tx_done;

		/* the clock is read only when there is room to post */
		if (more && inflight < window)
			more = keep_going(posted, t0, min, secs);

		/* SEND tests: never more messages than the server granted receives */
		while (more && inflight < window && credit_ok()) {
			r = post_op(t, s, (unsigned)posted);
			if (r == -FI_EAGAIN)
				break;
			if (r)
				return r;
			F.tx_posted++;
			posted++;
			inflight++;
			if (posted >= opt.max_iters)
				more = false;
		}
		if (!more && F.tx_done == F.tx_posted)
			break;
		if ((r = progress()))
			return r;
		if (sw_stalled(&w)) {
			fprintf(stderr,
				"droce-bench: %s: no completion for %.1f s (%" PRIu64 " of %" PRIu64
				" done)\n",
				test_name[t], opt.stall, F.tx_done - base, posted);
			return -FI_ETIMEDOUT;
		}
	}
	*iters = posted;
	return 0;
}

static int sync_peer(void)
{
	uint64_t want = F.rx_sync + 1;
	int r;

	if ((r = send_marker(1)) || (r = wait_ctr(&F.rx_sync, want)))
		return r;
	return 0;
}

static void emit(enum test t, size_t s, unsigned window, const struct result *res)
{
	char hs[32];

	if (s >= (1u << 20) && !(s % (1u << 20)))
		snprintf(hs, sizeof(hs), "%zuMiB", s >> 20);
	else if (s >= 1024 && !(s % 1024))
		snprintf(hs, sizeof(hs), "%zuKiB", s >> 10);
	else
		snprintf(hs, sizeof(hs), "%zuB", s);
	if (csv_out)
		fprintf(csv_out,
			"%s,%s,%s,%zu,%u,%" PRIu64
			",%.6f,%.6g,%s,%.6g,%.6g,%.6g,%.3f,%.3f,%.3f,%.3f,%s,%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
			opt.prov, opt.label, test_name[t], s, window, res->iters, res->secs,
			res->value, res->unit, res->p50, res->p99, res->mean, res->cpu_user,
			res->cpu_sys, res->runq, res->peer_runq, res->status, res->dc.resent,
			res->dc.timeouts, res->dc.drops, res->dc.rnr_naks, res->dc.rnr_held);
	if (csv_out != stdout) {
		if (strcmp(res->status, "ok"))
			printf("%-6s %-12s %-7s w=%-3u  %-10s\n", opt.prov, test_name[t], hs,
			       window, res->status);
		else if (!strcmp(res->unit, "us"))
			printf("%-6s %-12s %-7s w=%-3u  %10.2f us  (median; mean %.2f, p99 %.2f)  "
			       "%" PRIu64 " iters",
			       opt.prov, test_name[t], hs, window, res->value, res->mean, res->p99,
			       res->iters);
		else
			printf("%-6s %-12s %-7s w=%-3u  %10.4g %-6s %" PRIu64 " iters in %.3f s",
			       opt.prov, test_name[t], hs, window, res->value, res->unit,
			       res->iters, res->secs);
		if (strcmp(res->status, "ok"))
			;
		else if (!strcmp(opt.prov, "droce"))
			printf("  resent %" PRIu64 " timeouts %" PRIu64 " drops %" PRIu64
			       " rnr_naks %" PRIu64 " rnr_held %" PRIu64 "\n",
			       res->dc.resent, res->dc.timeouts, res->dc.drops, res->dc.rnr_naks,
			       res->dc.rnr_held);
		else
			printf("\n");
		fflush(stdout);
	}
	if (csv_out)
		fflush(csv_out);
}

/* Run one measurement of secs after a warm-up of warm; its row is
 * printed, or with out given and the measurement complete, left in *out
 * (run_alt).  Returns false when the connection cannot be used any
 * more. */
static bool run_part(enum test t, size_t s, unsigned window, double secs, double warm,
		     struct result *out)
{
	struct oob_msg m, r;
	struct result res = {.unit = "", .status = "ok"};
	uint64_t iters = 0, elapsed = 0, total_ops = 0;
	int ret = 0;

	if (window > F.tx_size)
		window = (unsigned)F.tx_size;
	if (window > MAX_WINDOW)
		window = MAX_WINDOW;
	if (!test_supported(t, s)) {
		res.status = "unsupported";
		emit(t, s, window, &res);
		return true;
	}
	prepare(t, s);
	struct dcount dc0;

	dcount_get(&dc0);
	memset(&m, 0, sizeof(m));
	m.type = M_BEGIN;
	m.test = t;
	m.size = s;
	m.window = window;
	if (oob_send(&m) || oob_recv(&r, opt.stall) || r.type != M_READY)
		die("control channel: BEGIN\n");
	if (r.status) {
		res.status = "unsupported";
		emit(t, s, window, &res);
		return true;
	}
	/* through the end marker: the server grants until it has that */
	F.credit_take = F.credits && (t == T_BW_SEND || t == T_RATE_SEND);

	switch (t) {
	case T_LAT_SEND:
	case T_LAT_WRITE: {
		uint64_t wi;

		ret = pingpong(t, s, 2, warm, false, &wi, &elapsed);
		if (ret)
			break;
		res.cpu_user = cpu_secs(true);
		res.cpu_sys = cpu_secs(false);
		res.runq = (double)runq_wait_ns();
		ret = pingpong(t, s, opt.min_iters, secs, true, &iters, &elapsed);
		if (ret)
			break;
		res.secs = (double)elapsed / 1e9;
		res.mean = res.secs / (double)iters / 2 * 1e6;
		res.unit = "us";
		uint64_t n = iters < MAX_SAMPLES ? iters : MAX_SAMPLES;

		qsort(samples, n, sizeof(*samples), cmp_u32);
		res.p50 = samples[n / 2] / 2e3;
		res.p99 = samples[(n * 99) / 100] / 2e3;
		/* the typical half round trip (as ib_send_lat's "typical"): the
		 * median is what a scheduler hiccup on a shared machine does not
		 * move; the mean is in the CSV too */
		res.value = res.p50;
		break;
	}
	default: {
		uint64_t wi, t0;

		ret = windowed(t, s, window, window < 16 ? window : 16, warm, &wi);
		if (!ret)
			ret = sync_peer();
		if (ret)
			break;
		total_ops = wi;
		res.cpu_user = cpu_secs(true);
		res.cpu_sys = cpu_secs(false);
		res.runq = (double)runq_wait_ns();
		t0 = fiu_now_ns();
		ret = windowed(t, s, window, opt.min_iters > window ? opt.min_iters : window, secs,
			       &iters);
		if (!ret)
			ret = sync_peer(); /* delivery, not just local completion */
		if (ret)
			break;
		total_ops += iters;
		elapsed = fiu_now_ns() - t0;
		res.secs = (double)elapsed / 1e9;
		if (t == T_BW_SEND || t == T_BW_WRITE || t == T_BW_READ) {
			res.value = (double)iters * (double)s / res.secs / 1e6;
			res.unit = "MB/s";
		} else {
			res.value = (double)iters / res.secs;
			res.unit = t == T_ATOMIC ? "ops/s" : "msg/s";
		}
		break;
	}
	}
	res.iters = iters;
	res.cpu_user = cpu_secs(true) - res.cpu_user;
	res.cpu_sys = cpu_secs(false) - res.cpu_sys;
	res.runq = elapsed ? ((double)runq_wait_ns() - res.runq) / (double)elapsed : 0;

	if (ret == -FI_ENOSYS || ret == -FI_EOPNOTSUPP) {
		res.status = "unsupported";
		ret = 0;
	} else if (ret) {
		res.status = ret == -FI_ETIMEDOUT ? "timeout" : "error";
	}

	/* atomics: the target must hold exactly the number of increments */
	if (!ret && t == T_ATOMIC) {
		ssize_t pr;

		POST_RETRY(pr, fi_fetch_atomic(F.ep, F.buf + OFF_OPND + 8, 1, F.desc,
					       F.buf + OFF_RES, F.desc, 0, F.rbase + OFF_ATOM,
					       F.rkey, FI_UINT64, FI_SUM, next_ctx()));
		if (!pr) {
			F.tx_posted++;
			pr = drain_tx();
		}
		if (pr)
			res.status = "error";
		else if (*(uint64_t *)(F.buf + OFF_RES) != total_ops) {
			fprintf(stderr,
				"droce-bench: atomic: target holds %" PRIu64 ", expected %" PRIu64
				"\n",
				*(uint64_t *)(F.buf + OFF_RES), total_ops);
			res.status = "wrong-result";
		}
	}

	if (!ret) { /* end the test */
		uint64_t want = F.rx_end + 1;

		ret = send_marker(2);
		F.credit_take = false;
		if (!ret)
			ret = wait_ctr(&F.rx_end, want);
		if (!ret)
			ret = drain_tx();
		if (ret)
			res.status = "error";
	}
	F.credit_take = false;
	if (ret) {
		emit(t, s, window, &res);
		return false;
	}
	if (oob_recv(&r, opt.stall) || r.type != M_RESULT)
		die("control channel: RESULT\n");
	res.peer_runq = r.busy_ns ? (double)r.runq_ns / (double)r.busy_ns : 0;
	dcount_delta(&res.dc, &dc0);
	res.dc.resent += r.resent;
	res.dc.timeouts += r.timeouts;
	res.dc.drops += r.drops;
	res.dc.rnr_naks += r.rnr_naks;
	res.dc.rnr_held += r.rnr_held;
	if (r.status)
		res.status = "server-error";
	else if ((t == T_BW_SEND || t == T_RATE_SEND) && !strcmp(res.status, "ok") &&
		 r.count < iters)
		res.status = "lost-messages";
	if (out && !strcmp(res.status, "ok"))
		*out = res;
	else
		emit(t, s, window, &res);
	return !r.status;
}

static bool run_one(enum test t, size_t s, unsigned window)
{
	return run_part(t, s, window, opt.secs, opt.warm_secs >= 0 ? opt.warm_secs : opt.secs / 5,
			NULL);
}

/* -A N: RDMA write and RDMA read of one size measured in N slices of T/N
 * each, alternated (write, read, write, ...), one row each for the sum.
 * On a host whose speed changes by phases of seconds (other tenants: the
 * memif rows ran at 4-7 or 14-16 GB/s from one session to the next, and
 * within one), two measurements seconds apart can land in different
 * phases and give a READ/WRITE ratio of 0.3 or 2; slices of a fraction of
 * a second share them.  The warm-up is the first slice's; the later ones
 * start with a window that refills at once. */
static bool run_alt(size_t s, unsigned window)
{
	static const enum test pair[2] = {T_BW_WRITE, T_BW_READ};
	struct result sum[2];
	bool live[2] = {true, true};
	double warm = opt.warm_secs >= 0 ? opt.warm_secs : opt.secs / 5;

	memset(sum, 0, sizeof(sum));
	for (unsigned k = 0; k < opt.alt && (live[0] || live[1]); k++) {
		for (int j = 0; j < 2; j++) {
			struct result r = {.status = ""};
			struct result *a = &sum[j];

			if (!live[j])
				continue;
			if (!run_part(pair[j], s, window, opt.secs / opt.alt, k ? 0 : warm, &r))
				return false;
			if (!*r.status) {
				/* not measured (unsupported, an error): its row said
				 * so, and the other test goes on alone */
				live[j] = false;
				continue;
			}
			a->iters += r.iters;
			a->secs += r.secs;
			a->cpu_user += r.cpu_user;
			a->cpu_sys += r.cpu_sys;
			a->runq += r.runq * r.secs;
			a->peer_runq += r.peer_runq * r.secs;
			a->dc.resent += r.dc.resent;
			a->dc.timeouts += r.dc.timeouts;
			a->dc.drops += r.dc.drops;
			a->dc.rnr_naks += r.dc.rnr_naks;
			a->dc.rnr_held += r.dc.rnr_held;
		}
	}
	for (int j = 0; j < 2; j++) {
		struct result *a = &sum[j];

		if (!live[j])
			continue;
		a->status = "ok";
		a->unit = "MB/s";
		a->value = (double)a->iters * (double)s / a->secs / 1e6;
		a->runq /= a->secs;
		a->peer_runq /= a->secs;
		emit(pair[j], s, window, a);
	}
	return true;
}

/* "8,64,4k", "4k-4m" (powers of 2), "8-1m*4" (times 4 each step) */
static size_t parse_size(const char *s, char **end)
{
	unsigned long long v = strtoull(s, end, 0);

	switch (**end) {
	case 'k':
	case 'K':
		v <<= 10;
		(*end)++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		(*end)++;
		break;
	default:
		break;
	}
	return (size_t)v;
}

static size_t parse_sizes(const char *spec, size_t *out, size_t max)
{
	size_t n = 0;
	char *dup = strdup(spec), *save = NULL;

	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *e;
		size_t a = parse_size(tok, &e), b = a, step = 2;

		if (*e == '-') {
			b = parse_size(e + 1, &e);
			if (*e == '*')
				step = strtoul(e + 1, &e, 0);
		}
		if (*e || !a || b < a || step < 2)
			die("bad size list '%s'\n", spec);
		for (size_t v = a; v <= b && n < max; v *= step) {
			bool dupl = false;

			for (size_t i = 0; i < n; i++)
				dupl |= out[i] == v;
			if (!dupl)
				out[n++] = v;
		}
	}
	free(dup);
	return n;
}

static bool want_test(enum test t)
{
	char *dup = strdup(opt.tests), *save = NULL;
	bool yes = false;

	for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all") || !strcmp(tok, test_name[t]) ||
		    (!strcmp(tok, "lat") && t <= T_LAT_WRITE) ||
		    (!strcmp(tok, "bw") && t >= T_BW_WRITE && t <= T_BW_SEND) ||
		    (!strcmp(tok, "rate") && (t == T_RATE_SEND || t == T_RATE_WRITE)) ||
		    (!strcmp(tok, "atomic") && t == T_ATOMIC))
			yes = true;
	}
	free(dup);
	return yes;
}

static int run_client(void)
{
	size_t sz[64], n;
	struct oob_msg m;
	bool ok = true;

	for (const char *p = opt.tests; *p;) { /* reject unknown names early */
		size_t len = strcspn(p, ",");
		bool known =
		    (len == 3 && !strncmp(p, "all", 3)) || (len == 3 && !strncmp(p, "lat", 3)) ||
		    (len == 2 && !strncmp(p, "bw", 2)) || (len == 4 && !strncmp(p, "rate", 4)) ||
		    (len == 6 && !strncmp(p, "atomic", 6));

		for (int t = 0; t < T_NTESTS; t++)
			known |= strlen(test_name[t]) == len && !strncmp(p, test_name[t], len);
		if (!known)
			die("unknown test '%.*s'\n", (int)len, p);
		p += len + (p[len] == ',');
	}
	samples = malloc(MAX_SAMPLES * sizeof(*samples));
	setup_client();
	exchange_mr();
	for (int t = 0; t < T_NTESTS && ok; t++) {
		if (!want_test(t))
			continue;
		const char *spec = t <= T_LAT_WRITE ? opt.lat_sizes
				   : t <= T_BW_SEND ? opt.bw_sizes
				   : t == T_ATOMIC  ? "8"
						    : opt.rate_sizes;

		n = parse_sizes(spec, sz, 64);
		if (opt.alt && t == T_BW_READ && want_test(T_BW_WRITE))
			continue; /* with bw_write, below */
		for (size_t i = 0; i < n && ok; i++) {
			if (opt.alt && t == T_BW_WRITE && want_test(T_BW_READ)) {
				ok = run_alt(sz[i], opt.window);
			} else if (t == T_ATOMIC) {
				ok = run_one(t, 8, 1);
				if (ok && opt.window > 1)
					ok = run_one(t, 8, opt.window);
			} else {
				ok = run_one(t, sz[i], t <= T_LAT_WRITE ? 1 : opt.window);
			}
		}
	}
	if (ok) {
		/* the server closes its endpoint right after BYE: what the fabric
		 * says from now on (flushes) is not a failure of any test */
		struct fid_cq *cq = F.cq;

		memset(&m, 0, sizeof(m));
		m.type = M_QUIT;
		F.cq = NULL;
		if (oob_send(&m) || oob_recv(&m, opt.stall) || m.type != M_BYE)
			ok = false;
		F.cq = cq;
	}
	free(samples);
	return ok ? 0 : 1;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: droce-bench -S [options]        (server)\n"
		"       droce-bench [options]           (client: runs the tests)\n"
		"  -p PROV     libfabric provider (default droce; e.g. tcp)\n"
		"  -O H:P      control channel: server listens on, client connects to H:P\n"
		"              (default 127.0.0.1:47990); independent of the fabric address\n"
		"  -F ADDR     server: fabric address to listen on (FI_SOURCE node)\n"
		"  -t LIST     tests: lat_send,lat_write,bw_write,bw_read,bw_send,rate_send,\n"
		"              rate_write,atomic_fadd or groups lat,bw,rate,atomic,all\n"
		"  -z SIZES    latency sizes (default 8-1m*4,1m); -Z bandwidth sizes (4k-4m*4);\n"
		"              -R message-rate sizes (8,64)\n"
		"  -w N        window for bandwidth/rate/atomic tests (default 64)\n"
		"  -T SECS     timed phase per measurement (default 1.0)\n"
		"  -W SECS     warm-up per measurement, excluded (default T/5)\n"
		"  -A N        bw_write and bw_read of each size in N alternating slices of\n"
		"              T/N (a READ/WRITE ratio that slow host phases do not skew)\n"
		"  -m N / -M N minimum / maximum iterations per measurement\n"
		"  -s SECS     stall timeout: a wait with no completion this long fails (20)\n"
		"  -X SECS     watchdog for the whole process (900)\n"
		"  -C FILE     append one CSV line per measurement (\"-\": stdout)\n"
		"  -L LABEL    label written in the CSV (e.g. memif, veth)\n"
		"  -H          print the CSV header and exit\n"
		"  -Y          yield the CPU after each poll that finds nothing (as Open MPI's\n"
		"              mpi_yield_when_idle does: processes that share CPUs)\n"
		"  -v          verbose\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int c, ret;

	while ((c = getopt(argc, argv, "Sp:O:F:t:z:Z:R:w:T:W:A:m:M:s:X:C:L:HvYh")) != -1) {
		switch (c) {
		case 'S':
			opt.server = true;
			break;
		case 'p':
			opt.prov = optarg;
			break;
		case 'O':
			opt.oob = optarg;
			break;
		case 'F':
			opt.fabric = optarg;
			break;
		case 't':
			opt.tests = optarg;
			break;
		case 'z':
			opt.lat_sizes = optarg;
			break;
		case 'Z':
			opt.bw_sizes = optarg;
			break;
		case 'R':
			opt.rate_sizes = optarg;
			break;
		case 'w':
			opt.window = (unsigned)strtoul(optarg, NULL, 0);
			if (!opt.window || opt.window > MAX_WINDOW)
				die("-w: 1..%u\n", MAX_WINDOW);
			break;
		case 'T':
			opt.secs = strtod(optarg, NULL);
			break;
		case 'W':
			opt.warm_secs = strtod(optarg, NULL);
			break;
		case 'A':
			opt.alt = (unsigned)strtoul(optarg, NULL, 0);
			if (opt.alt > 1000)
				die("-A: 0..1000\n");
			break;
		case 'm':
			opt.min_iters = strtoull(optarg, NULL, 0);
			break;
		case 'M':
			opt.max_iters = strtoull(optarg, NULL, 0);
			break;
		case 's':
			opt.stall = strtod(optarg, NULL);
			break;
		case 'X':
			opt.watchdog = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'C':
			opt.csv = optarg;
			break;
		case 'L':
			opt.label = optarg;
			break;
		case 'H':
			puts(CSV_HEADER);
			return 0;
		case 'v':
			opt.verbose = true;
			break;
		case 'Y':
			opt.yield = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || opt.secs <= 0 || opt.stall <= 0)
		usage();
	if (opt.csv) {
		csv_out = strcmp(opt.csv, "-") ? fopen(opt.csv, "a") : stdout;
		if (!csv_out)
			die("%s: %s\n", opt.csv, strerror(errno));
	}
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	alarm(opt.watchdog);
	ret = opt.server ? run_server() : run_client();
	teardown();
	if (csv_out && csv_out != stdout)
		fclose(csv_out);
	return ret;
}
