// SPDX-License-Identifier: BSD-2-Clause
/*
 * droce-xfer: every FI_EP_MSG data operation between a server and a client,
 * over any libfabric provider, with the data verified on both sides.
 *
 * The two processes talk over a plain TCP control connection (like
 * fabtests' out-of-band mode): the server announces its fabric address,
 * what its provider offers and, once the client has chosen the plan
 * (operations, sizes, iterations), its registered buffer (address, key,
 * length).  Then, for every (operation, size) and every iteration:
 *
 *   client -> server  STEP     the server prepares (posts receives, fills or
 *                              poisons its buffer, sets the atomic word)
 *   server -> client  READY
 *            both do their part over the fabric; the client times its own
 *   client -> server  DONE     the client's verdict and its time
 *   server -> client  VERDICT  the server's verdict (it checks what landed in
 *                              its memory, guard bytes included)
 *
 * A server whose part fails sends its VERDICT at once (the client stops
 * waiting when the control socket becomes readable) and then reads DONE.
 * A failure that leaves the connection unusable (an error completion, a
 * timeout, an operation still outstanding) is "fatal": both sides close the
 * endpoint and connect again before the next test.
 *
 * Depends on libfabric and libc only: it runs on rdma_rxe guests.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "fiutil.h"

#define PROG "droce-xfer"
#define DEFAULT_PORT 47593
#define MAX_SIZES 64
#define MAX_SIZE (1ull << 30)
#define GUARD 256		/* poisoned bytes checked on each side of a target */
#define POISON 0xa5
#define SHIFT_MAX 8		/* targets move by 0..7 bytes from one iteration to the next */
#define CM_DATA_LEN 32		/* what we try to carry in connect/accept data */
#define STASH_MAX 32
#define SETTLE_NS 2000000000ull /* how long a target may take to show an RMA write */
#define SPIN_NS 100000000ull	/* busy-polling while waiting for the peer */
#define ATOMIC_AREA 4096
#define ABORTED "aborted: the peer reported a failure"
#define ATOMIC_TARGET GUARD	/* the server's atomic word, in the atomic area */
#define ATOMIC_RESULT GUARD	/* the client's result word, in the atomic area */
#define ATOMIC_OPERAND 2048
#define ATOMIC_COMPARE 2112

enum op {
	OP_CM_DATA,
	OP_SEND,
	OP_SENDDATA,
	OP_WRITE,
	OP_WRITEDATA,
	OP_READ,
	OP_FETCH_ADD,
	OP_CSWAP,
	OP_ATOMIC_READ,
	OP_MAX
};

#define OP_BIT(op) (1u << (op))
#define OPS_ALL (OP_BIT(OP_MAX) - 1)

static const struct op_desc {
	const char *name;
	uint64_t cap; /* the fi_info capability it needs */
	bool atomic;
	bool cq_data;
} op_tab[OP_MAX] = {
	[OP_CM_DATA] = { "cm_data", FI_MSG, false, false },
	[OP_SEND] = { "send", FI_MSG, false, false },
	[OP_SENDDATA] = { "senddata", FI_MSG, false, true },
	[OP_WRITE] = { "write", FI_RMA, false, false },
	[OP_WRITEDATA] = { "writedata", FI_RMA, false, true },
	[OP_READ] = { "read", FI_RMA, false, false },
	[OP_FETCH_ADD] = { "fetch_add", FI_ATOMIC, true, false },
	[OP_CSWAP] = { "cswap", FI_ATOMIC, true, false },
	[OP_ATOMIC_READ] = { "atomic_read", FI_ATOMIC, true, false },
};

static const uint64_t default_sizes[] = { 0,	 1,	7,     64,	1023,	1024,
					  1025,	 4096,	65536, 1048576, 4194304 };

/* The command line: the one global state of the program. */
static struct opts {
	const char *prov;
	const char *domain;
	const char *server;	/* client mode when set */
	const char *src_addr;	/* the server's fabric node */
	unsigned int port;
	uint32_t ops;
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	unsigned int iters;
	int timeout_ms;
	int accept_s;
	int verbose;
	bool no_rx_cq_data;
	int fault;		/* -X: FAULT_* */
	int fault_op;
	unsigned int fault_iter;
	const char *gate;	/* -W: a file to hold the client with ... */
	unsigned int gate_iter; /* ... before the operation of this iteration */
	bool gate_once;		/* -G: only before the first operation */
	const char *hold;	/* -H: a FIFO to hold the process with before it closes */
} opt;

enum { FAULT_NONE, FAULT_CORRUPT, FAULT_BADKEY };

/* ---- small helpers ------------------------------------------------------ */

static uint64_t deadline(void)
{
	return fiu_now_ns() + (uint64_t)opt.timeout_ms * 1000000ull;
}

/* How long to wait for the peer's next message after a step in which it
 * may itself wait up to twice the timeout (and let an RMA write settle). */
static int peer_ms(void)
{
	return 3 * opt.timeout_ms + (int)(SETTLE_NS / 1000000);
}

static void vlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!opt.verbose)
		return;
	va_start(ap, fmt);
	fputs(PROG ": ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout); /* a test harness may follow the iterations */
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(PROG ": ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
}

/* Copy a string, truncating it to fit. */
static void scopy(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i]; i++)
		dst[i] = src[i];
	dst[i] = 0;
}

/* Append to a reason string (first failure wins: later ones are dropped). */
static void why(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void why(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (buf[0])
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The data of one transfer: a function of the operation, the size, the
 * iteration and the direction, so that misplaced or stale data shows. */
static uint64_t seed_of(int op, uint64_t size, unsigned int iter, unsigned int dir)
{
	return mix64(((uint64_t)op << 56) ^ ((uint64_t)dir << 48) ^ (size << 16) ^ iter);
}

static void pattern_fill(uint8_t *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i += 8) {
		uint64_t w = mix64(seed + i / 8);

		memcpy(p + i, &w, n - i < 8 ? n - i : 8);
	}
}

/* Index of the first byte that differs from the pattern, or -1. */
static ssize_t pattern_check(const uint8_t *p, size_t n, uint64_t seed, uint8_t *want)
{
	size_t i, j;

	for (i = 0; i < n; i += 8) {
		uint64_t w = mix64(seed + i / 8);
		size_t k = n - i < 8 ? n - i : 8;

		if (!memcmp(p + i, &w, k))
			continue;
		for (j = 0; j < k; j++) {
			if (p[i + j] != ((uint8_t *)&w)[j]) {
				*want = ((uint8_t *)&w)[j];
				return (ssize_t)(i + j);
			}
		}
	}
	return -1;
}

/* Check n bytes of pattern at p and GUARD poisoned bytes on each side
 * (tail: how many poisoned bytes follow, at least GUARD). */
static bool region_check(const uint8_t *p, size_t n, size_t tail, uint64_t seed,
			 const char *who, char *reason, size_t rlen)
{
	uint8_t want = 0;
	ssize_t bad;
	size_t i;

	for (i = 1; i <= GUARD; i++) {
		if (p[-(ssize_t)i] != POISON) {
			why(reason, rlen, "%s: guard byte %zu before the data overwritten (0x%02x)",
			    who, i, p[-(ssize_t)i]);
			return false;
		}
	}
	bad = pattern_check(p, n, seed, &want);
	if (bad >= 0) {
		why(reason, rlen, "%s: byte %zd of %zu is 0x%02x, expected 0x%02x", who, bad, n,
		    p[bad], want);
		return false;
	}
	for (i = 0; i < tail; i++) {
		if (p[n + i] != POISON) {
			why(reason, rlen, "%s: byte %zu after the data overwritten (0x%02x)", who,
			    i, p[n + i]);
			return false;
		}
	}
	return true;
}

static bool word_check(const uint8_t *p, uint64_t want, const char *who, const char *what,
		       char *reason, size_t rlen)
{
	uint64_t got;
	size_t i;

	for (i = 1; i <= GUARD; i++) {
		if (p[-(ssize_t)i] != POISON || p[7 + i] != POISON) {
			why(reason, rlen, "%s: guard byte around the %s overwritten", who, what);
			return false;
		}
	}
	memcpy(&got, p, 8);
	if (got != want) {
		why(reason, rlen, "%s: %s is 0x%016" PRIx64 ", expected 0x%016" PRIx64, who, what,
		    got, want);
		return false;
	}
	return true;
}

/* ---- the control connection ---------------------------------------------- */

#define OOB_MAGIC 0x64786672u /* "dxfr" */
#define OOB_VERSION 1
#define OOB_NV 8
#define OOB_BLOB 2048
#define OOB_TEXT 512
#define OOB_WIRE (6 * 4 + OOB_NV * 8 + OOB_BLOB + OOB_TEXT)
/* the wire starts magic, type, op, iter, status, fatal (32 bits each) */
#define OOB_TYPE_OFF 4
#define OOB_STATUS_OFF 16
#define REASON_OFF 1024	  /* in the blob: one reason per operation */
#define REASON_LEN 96

enum msg_type {
	M_HELLO = 1, /* S->C: fabric address, what the server can do */
	M_PLAN,	     /* C->S: operations, sizes, iterations */
	M_BUF,	     /* S->C: the server's registered buffer */
	M_CONN,	     /* both: the connection came up (or not) */
	M_STEP,	     /* C->S: prepare iteration */
	M_READY,     /* S->C: prepared */
	M_DONE,	     /* C->S: the client's part is over */
	M_VERDICT,   /* S->C: the server's check */
	M_BYE,	     /* C->S: no more tests; the client shuts down */
	M_FIN,	     /* S->C: the server saw the shutdown (or not) */
};

static const char *const msg_names[] = {
	"?", "HELLO", "PLAN", "BUF", "CONN", "STEP", "READY", "DONE", "VERDICT", "BYE", "FIN",
};

struct msg {
	uint32_t type;
	uint32_t op;
	uint32_t iter;
	uint32_t status; /* 0: fine */
	uint32_t fatal;	 /* the connection must be rebuilt */
	uint64_t v[OOB_NV];
	uint8_t blob[OOB_BLOB];
	char text[OOB_TEXT];
};

static void put32(uint8_t **p, uint32_t v)
{
	v = htobe32(v);
	memcpy(*p, &v, 4);
	*p += 4;
}

static void put64(uint8_t **p, uint64_t v)
{
	v = htobe64(v);
	memcpy(*p, &v, 8);
	*p += 8;
}

static uint32_t get32(const uint8_t **p)
{
	uint32_t v;

	memcpy(&v, *p, 4);
	*p += 4;
	return be32toh(v);
}

static uint64_t get64(const uint8_t **p)
{
	uint64_t v;

	memcpy(&v, *p, 8);
	*p += 8;
	return be64toh(v);
}

/* ---- the fabric side ------------------------------------------------------ */

struct comp {
	struct fi_cq_data_entry e;
	int err; /* an error completion: its FI_E* code */
	int prov_errno;
	char msg[160];
};

struct stash {
	struct comp c[STASH_MAX];
	int n;
	unsigned long dropped;
};

enum { TX, RX };

struct conn {
	struct fid_eq *eq;
	struct fid_ep *ep;
	struct fid_cq *cq[2];
	struct stash st[2];
	bool up;
	bool peer_down; /* FI_SHUTDOWN seen on the EQ */
	char eq_err[160];
};

struct test {
	int op;
	bool per_size; /* the skip is for this size only */
	uint64_t size;
	char skip[2 * REASON_LEN + 32];
};

struct xfer {
	bool server;
	int sock;
	int lsock;
	struct fi_info *hints;
	struct fi_info *info;
	struct fi_info *conn_info; /* the server's, from FI_CONNREQ */
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *peq;
	struct fid_pep *pep;
	struct conn c;
	struct fid_mr *mr;
	void *desc;
	uint8_t *buf;
	size_t buf_len;
	size_t area_len;
	bool post_rx_for_cq_data;
	uint64_t max_msg;   /* both sides' minimum */
	size_t cq_data_bytes; /* both sides' minimum */
	size_t cm_max;	      /* local FI_OPT_CM_DATA_SIZE */
	size_t cm_len;	      /* what the client sends */
	/* the plan */
	uint32_t local_ok;
	char local_why[OP_MAX][REASON_LEN];
	uint32_t peer_ok;
	char peer_why[OP_MAX][REASON_LEN];
	uint32_t req_ops; /* what the client asked for */
	uint32_t run_ops;
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	unsigned int iters;
	char peer_desc[128];
	/* the peer's buffer (client) */
	uint64_t peer_base;
	uint64_t peer_key;
	uint64_t peer_len;
	uint64_t peer_area;
	/* contexts of the operations in flight */
	struct fi_context2 ctx_tx, ctx_rx;
	/* results */
	int cm_status; /* -1 not checked, 0 pass, 1 fail */
	char cm_reason[256];
	unsigned int passed, failed, skipped;
};

static const char *cq_name(int which)
{
	return which == TX ? "TX" : "RX";
}

static void stash_push(struct stash *s, const struct comp *c)
{
	if (s->n == STASH_MAX) {
		s->dropped++;
		return;
	}
	s->c[s->n++] = *c;
}

static void stash_take(struct stash *s, int i, struct comp *out)
{
	*out = s->c[i];
	memmove(&s->c[i], &s->c[i + 1], (size_t)(s->n - i - 1) * sizeof(s->c[0]));
	s->n--;
}

/* One fi_cq_read into the stash: 1 got one, 0 none, <0 the CQ failed. */
static int cq_pull(struct xfer *x, int which)
{
	struct fid_cq *cq = x->c.cq[which];
	struct fi_cq_data_entry e;
	struct comp c;
	ssize_t n;

	if (!cq)
		return 0;
	n = fi_cq_read(cq, &e, 1);
	if (n == -FI_EAGAIN)
		return 0;
	memset(&c, 0, sizeof(c));
	if (n == 1) {
		c.e = e;
		stash_push(&x->c.st[which], &c);
		return 1;
	}
	if (n == -FI_EAVAIL) {
		struct fi_cq_err_entry err;
		char pbuf[128] = "";
		const char *pe;

		memset(&err, 0, sizeof(err));
		n = fi_cq_readerr(cq, &err, 0);
		if (n < 0)
			return (int)n;
		c.e.op_context = err.op_context;
		c.e.flags = err.flags;
		c.e.len = err.len;
		c.e.data = err.data;
		c.err = err.err ? err.err : FI_EOTHER;
		c.prov_errno = err.prov_errno;
		pe = fi_cq_strerror(cq, err.prov_errno, err.err_data, pbuf, sizeof(pbuf));
		snprintf(c.msg, sizeof(c.msg), "%s error completion: %s (%d), prov_errno %d (%s)",
			 cq_name(which), fi_strerror(c.err), c.err, err.prov_errno,
			 pe ? pe : "?");
		stash_push(&x->c.st[which], &c);
		return 1;
	}
	return (int)n;
}

/* An EQ entry with room for the CM data behind it. */
union cm_ent {
	struct fi_eq_cm_entry e;
	uint8_t raw[sizeof(struct fi_eq_cm_entry) + 512];
};

/* Read one event of the connection's EQ, if any, without blocking. */
static void eq_poll(struct xfer *x)
{
	union cm_ent ent;
	uint32_t event;
	ssize_t n;

	if (!x->c.eq)
		return;
	n = fi_eq_read(x->c.eq, &event, &ent, sizeof(ent), 0);
	if (n >= 0) {
		if (event == FI_SHUTDOWN) {
			x->c.peer_down = true;
			vlog("FI_SHUTDOWN on the connection's EQ\n");
		} else {
			vlog("unexpected EQ event %u\n", event);
		}
	} else if (n == -FI_EAVAIL) {
		char text[sizeof(x->c.eq_err) - 16];

		if (fiu_eq_error(x->c.eq, text, sizeof(text))) {
			snprintf(x->c.eq_err, sizeof(x->c.eq_err), "EQ error: %s", text);
			x->c.peer_down = true;
		}
	}
}

/* Make things happen on a provider with manual progress. */
static void progress(struct xfer *x)
{
	while (cq_pull(x, TX) > 0)
		;
	while (cq_pull(x, RX) > 0)
		;
}

/* Is the control socket readable (a message or EOF)? */
static bool oob_readable(struct xfer *x, int ms)
{
	struct pollfd p = { .fd = x->sock, .events = POLLIN };

	return poll(&p, 1, ms) > 0;
}

/* What the peer's next control message says, without taking it: 1 an
 * M_CONN saying it is connected, -1 anything else or a closed connection,
 * 0 nothing whole yet. */
static int oob_peek_conn(struct xfer *x)
{
	uint8_t w[OOB_STATUS_OFF + 4];
	ssize_t r = recv(x->sock, w, sizeof(w), MSG_PEEK | MSG_DONTWAIT);
	uint32_t type, status;

	if ((r < 0 && (errno == EAGAIN || errno == EINTR)) || (r > 0 && r < (ssize_t)sizeof(w)))
		return 0;
	if (r != (ssize_t)sizeof(w))
		return -1;
	memcpy(&type, w + OOB_TYPE_OFF, 4);
	memcpy(&status, w + OOB_STATUS_OFF, 4);
	return be32toh(type) == M_CONN && !be32toh(status) ? 1 : -1;
}

enum wait_ret { WAIT_OK, WAIT_TIMEOUT, WAIT_PEER, WAIT_CQERR, WAIT_LOST };

/*
 * Wait for the completion of the operation whose context is ctx on one CQ
 * (an error completion of any operation ends the wait too; a NULL ctx takes
 * any completion: remote CQ data that consumed no posted receive).  Completions of
 * other operations stay in the stash, where check_stray() finds them.
 */
static enum wait_ret wait_comp(struct xfer *x, int which, void *ctx, struct comp *out,
			       bool watch_oob, char *reason, size_t rlen)
{
	struct stash *s = &x->c.st[which];
	uint64_t end = deadline();
	unsigned long spins = 0;
	int i, ret;

	for (;;) {
		for (i = 0; i < s->n; i++) {
			if (!ctx || s->c[i].e.op_context == ctx || s->c[i].err) {
				stash_take(s, i, out);
				return WAIT_OK;
			}
		}
		ret = cq_pull(x, which);
		if (ret < 0) {
			why(reason, rlen, "fi_cq_read(%s): %s", cq_name(which), fi_strerror(-ret));
			return WAIT_CQERR;
		}
		if (ret > 0)
			continue;
		if (!(++spins & 255)) {
			cq_pull(x, which ^ 1);
			eq_poll(x);
		}
		if (watch_oob && oob_readable(x, 0)) {
			why(reason, rlen, ABORTED);
			return WAIT_PEER;
		}
		if (fiu_now_ns() > end) {
			why(reason, rlen, "no %s completion within %d ms%s%s", cq_name(which),
			    opt.timeout_ms, x->c.peer_down ? " (the connection went down: " : "",
			    x->c.peer_down ? (x->c.eq_err[0] ? x->c.eq_err : "FI_SHUTDOWN)") : "");
			return WAIT_TIMEOUT;
		}
		sched_yield();
	}
}

/* Completions nobody asked for are a failure of the test they show up in. */
static bool check_stray(struct xfer *x, const char *who, char *reason, size_t rlen)
{
	int w;

	progress(x);
	for (w = TX; w <= RX; w++) {
		struct stash *s = &x->c.st[w];

		if (s->dropped) {
			why(reason, rlen, "%s: %lu completions lost (stash full)", who, s->dropped);
			s->dropped = 0;
		}
		if (s->n) {
			struct comp *c = &s->c[0];

			if (c->err)
				why(reason, rlen, "%s: %s", who, c->msg);
			else
				why(reason, rlen,
				    "%s: unexpected %s completion (flags 0x%" PRIx64
				    ", len %zu, context %p)",
				    who, cq_name(w), (uint64_t)c->e.flags, c->e.len, c->e.op_context);
			s->n = 0;
			return false;
		}
	}
	return true;
}

/* ---- the control connection: sending and receiving --------------------- */

static int oob_send(struct xfer *x, const struct msg *m)
{
	uint8_t wire[OOB_WIRE], *p = wire;
	int i;

	put32(&p, OOB_MAGIC);
	put32(&p, m->type);
	put32(&p, m->op);
	put32(&p, m->iter);
	put32(&p, m->status);
	put32(&p, m->fatal);
	for (i = 0; i < OOB_NV; i++)
		put64(&p, m->v[i]);
	memcpy(p, m->blob, OOB_BLOB);
	p += OOB_BLOB;
	memcpy(p, m->text, OOB_TEXT);
	if (fiu_send_all(x->sock, wire, sizeof(wire))) {
		say("control connection: send %s: %s\n", msg_names[m->type], strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Receive one message of the given type, driving the provider while
 * waiting: the peer may need this side's progress to finish its part (an
 * RMA read or write into this side's memory), whatever data_progress the
 * provider claims.  Busy for SPIN_NS, then polling every millisecond.
 * timeout_ms < 0: the -t timeout.
 */
static int oob_recv(struct xfer *x, uint32_t type, struct msg *m, int timeout_ms)
{
	uint8_t wire[OOB_WIRE];
	const uint8_t *p = wire;
	int ms = timeout_ms < 0 ? opt.timeout_ms : timeout_ms;
	uint64_t end = fiu_now_ns() + (uint64_t)ms * 1000000ull;
	uint64_t spin = fiu_now_ns() + SPIN_NS;
	size_t got = 0;
	int i;

	while (got < sizeof(wire)) {
		ssize_t r;

		bool spinning = fiu_now_ns() < spin;

		if (!oob_readable(x, spinning ? 0 : 1)) {
			progress(x);
			eq_poll(x);
			if (fiu_now_ns() > end) {
				say("control connection: no %s from the peer within %d ms\n",
				    msg_names[type], ms);
				return -1;
			}
			if (spinning)
				sched_yield();
			continue;
		}
		r = recv(x->sock, wire + got, sizeof(wire) - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			say("control connection: %s while waiting for %s\n",
			    r ? strerror(errno) : "the peer closed it", msg_names[type]);
			return -1;
		}
		got += (size_t)r;
	}
	memset(m, 0, sizeof(*m));
	if (get32(&p) != OOB_MAGIC) {
		say("control connection: bad magic (not a " PROG " peer?)\n");
		return -1;
	}
	m->type = get32(&p);
	m->op = get32(&p);
	m->iter = get32(&p);
	m->status = get32(&p);
	m->fatal = get32(&p);
	for (i = 0; i < OOB_NV; i++)
		m->v[i] = get64(&p);
	memcpy(m->blob, p, OOB_BLOB);
	p += OOB_BLOB;
	memcpy(m->text, p, OOB_TEXT);
	m->text[OOB_TEXT - 1] = 0;
	if (m->type != type) {
		say("control connection: got %s, expected %s\n",
		    m->type < sizeof(msg_names) / sizeof(msg_names[0]) ? msg_names[m->type] : "?",
		    msg_names[type]);
		return -1;
	}
	return 0;
}

static int oob_listen(struct xfer *x)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	int one = 1, zero = 0, fd;

	a6.sin6_port = htons((uint16_t)opt.port);
	a4.sin_port = htons((uint16_t)opt.port);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, (struct sockaddr *)&a6, sizeof(a6))) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a4, sizeof(a4))) {
			say("control connection: bind port %u: %s\n", opt.port, strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (listen(fd, 1)) {
		say("control connection: listen: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	x->lsock = fd;
	return 0;
}

static int oob_accept(struct xfer *x)
{
	x->sock = fiu_tcp_accept(x->lsock, opt.accept_s ? opt.accept_s * 1000 : -1);
	if (x->sock < 0 && errno == ETIMEDOUT) {
		say("control connection: no client within %d s\n", opt.accept_s);
		return -1;
	}
	if (x->sock < 0) {
		say("control connection: accept: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Connect to the server, retrying until the timeout (it may start later). */
static int oob_connect(struct xfer *x)
{
	char port[16];
	int gai_err;

	snprintf(port, sizeof(port), "%u", opt.port);
	x->sock = fiu_tcp_connect(opt.server, port, AF_UNSPEC, 100, deadline(), &gai_err);
	if (x->sock >= 0)
		return 0;
	if (gai_err)
		say("control connection: %s: %s\n", opt.server, gai_strerror(gai_err));
	else
		say("control connection: connect to %s port %s: %s\n", opt.server, port,
		    strerror(errno));
	return -1;
}

/* ---- fabric setup ---------------------------------------------------------- */

static uint64_t caps_of_ops(uint32_t ops)
{
	uint64_t caps = FI_MSG;
	int op;

	for (op = 0; op < OP_MAX; op++)
		if (ops & OP_BIT(op))
			caps |= op_tab[op].cap;
	return caps;
}

static struct fi_info *make_hints(uint64_t caps)
{
	struct fi_info *h = fiu_msg_hints(
	    opt.prov, caps, FI_CONTEXT | FI_CONTEXT2 | (opt.no_rx_cq_data ? 0 : FI_RX_CQ_DATA));

	if (!h)
		return NULL;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	if (opt.domain)
		h->domain_attr->name = strdup(opt.domain);
	return h;
}

static uint32_t api_version(void)
{
	uint32_t lib = fi_version(), hdr = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

	return lib < hdr ? lib : hdr;
}

/*
 * fi_getinfo with every capability an operation may need (whatever -o says,
 * so that both sides ask alike: some providers refuse a peer whose caps
 * differ), dropping FI_ATOMIC and FI_RMA when the provider refuses them
 * (their operations are then skipped).  Prefers an IPv4 address format.
 */
static int get_info(struct xfer *x, const char *node, const char *service, uint64_t flags,
		    uint32_t addr_format, const void *dest, size_t destlen)
{
	uint64_t want = caps_of_ops(OPS_ALL);
	const uint64_t drops[] = { 0, FI_ATOMIC, FI_RMA, FI_RMA | FI_ATOMIC };
	struct fi_info *list = NULL, *fi, *pick;
	unsigned int i;
	int ret = -FI_ENODATA;

	for (i = 0; i < sizeof(drops) / sizeof(drops[0]); i++) {
		uint64_t caps = want & ~drops[i];

		if (i && caps == (want & ~drops[i - 1]))
			continue;
		fi_freeinfo(x->hints);
		x->hints = make_hints(caps);
		if (!x->hints)
			return -FI_ENOMEM;
		x->hints->addr_format = addr_format;
		if (dest) {
			x->hints->dest_addr = malloc(destlen);
			if (!x->hints->dest_addr)
				return -FI_ENOMEM;
			memcpy(x->hints->dest_addr, dest, destlen);
			x->hints->dest_addrlen = destlen;
		}
		ret = fi_getinfo(api_version(), node, service, flags, x->hints, &list);
		vlog("fi_getinfo(caps 0x%" PRIx64 "): %s\n", caps, ret ? fi_strerror(-ret) : "ok");
		if (!ret)
			break;
	}
	if (ret)
		return ret;
	pick = list;
	for (fi = list; fi; fi = fi->next) {
		if (fi->addr_format == FI_SOCKADDR_IN) {
			pick = fi;
			break;
		}
	}
	x->info = fi_dupinfo(pick);
	fi_freeinfo(list);
	return x->info ? 0 : -FI_ENOMEM;
}

static void describe_info(struct xfer *x, char *buf, size_t len)
{
	snprintf(buf, len, "%s (domain %s)", x->info->fabric_attr->prov_name,
		 x->info->domain_attr->name);
}

/* Can this side initiate (client) or take (server) this atomic? */
static bool atomic_usable(struct xfer *x, int op, char *r)
{
	enum fi_op aop = op == OP_CSWAP ? FI_CSWAP : op == OP_FETCH_ADD ? FI_SUM : FI_ATOMIC_READ;
	uint64_t aflags = op == OP_CSWAP ? FI_COMPARE_ATOMIC : FI_FETCH_ATOMIC;
	const char *aname = op == OP_CSWAP	   ? "FI_CSWAP" :
			    op == OP_FETCH_ADD ? "FI_SUM" :
						 "FI_ATOMIC_READ";
	struct fi_atomic_attr aattr;
	size_t count = 0;
	int ret;

	memset(&aattr, 0, sizeof(aattr));
	ret = fi_query_atomic(x->domain, FI_UINT64, aop, &aattr, aflags);
	if (ret || aattr.count < 1) {
		snprintf(r, REASON_LEN, "fi_query_atomic(FI_UINT64, %s): %s", aname,
			 ret ? fi_strerror(-ret) : "count 0");
		return false;
	}
	if (!x->c.ep) /* the server's endpoint comes with the connection */
		return true;
	ret = op == OP_CSWAP ? fi_compare_atomicvalid(x->c.ep, FI_UINT64, aop, &count) :
			       fi_fetch_atomicvalid(x->c.ep, FI_UINT64, aop, &count);
	if (ret || count < 1) {
		snprintf(r, REASON_LEN, "fi_query_atomic says yes, fi_%satomicvalid(%s) no (%s)",
			 op == OP_CSWAP ? "compare_" : "fetch_", aname,
			 ret ? fi_strerror(-ret) : "count 0");
		return false;
	}
	return true;
}

/* What this side can do, with the reason for what it cannot. */
static void local_abilities(struct xfer *x)
{
	const struct fi_info *fi = x->info;
	const char *prov = fi->fabric_attr->prov_name;
	int op;

	x->local_ok = 0;
	for (op = 0; op < OP_MAX; op++) {
		char *r = x->local_why[op];

		r[0] = 0;
		if (!(fi->caps & op_tab[op].cap)) {
			snprintf(r, REASON_LEN, "%s does not offer %s", prov,
				 op_tab[op].cap == FI_RMA    ? "FI_RMA" :
				 op_tab[op].cap == FI_ATOMIC ? "FI_ATOMIC" :
							       "FI_MSG");
			continue;
		}
		if (op_tab[op].cq_data && !fi->domain_attr->cq_data_size) {
			snprintf(r, REASON_LEN, "%s has cq_data_size 0", prov);
			continue;
		}
		if (op == OP_CM_DATA && !x->cm_max) {
			snprintf(r, REASON_LEN, "%s carries no CM data (FI_OPT_CM_DATA_SIZE)", prov);
			continue;
		}
		if (op_tab[op].atomic && !atomic_usable(x, op, r))
			continue;
		x->local_ok |= OP_BIT(op);
	}
}

static int open_fabric(struct xfer *x)
{
	int ret;

	ret = fi_fabric(x->info->fabric_attr, &x->fabric, NULL);
	if (ret) {
		say("fi_fabric: %s\n", fi_strerror(-ret));
		return ret;
	}
	ret = fi_domain(x->fabric, x->info, &x->domain, NULL);
	if (ret) {
		say("fi_domain: %s\n", fi_strerror(-ret));
		return ret;
	}
	return 0;
}

static int open_eq(struct xfer *x, struct fid_eq **eq)
{
	struct fi_eq_attr attr = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	int ret = fi_eq_open(x->fabric, &attr, eq, NULL);

	if (ret)
		say("fi_eq_open: %s\n", fi_strerror(-ret));
	return ret;
}

/* The layout of both sides' buffers: area 0 (data), area 1 (echo / CQ-data
 * receives), the atomic area. */
static size_t area_len_of(uint64_t max)
{
	return (size_t)((GUARD + max + SHIFT_MAX + 16 + GUARD + 4095) & ~4095ull);
}

static int reg_buffer(struct xfer *x)
{
	uint64_t max = 8, access = 0;
	int i, ret;

	for (i = 0; i < x->nsizes; i++)
		if (x->sizes[i] > max)
			max = x->sizes[i];
	x->area_len = area_len_of(max);
	x->buf_len = 2 * x->area_len + ATOMIC_AREA;
	if (posix_memalign((void **)&x->buf, 4096, x->buf_len)) {
		say("cannot allocate %zu bytes\n", x->buf_len);
		return -FI_ENOMEM;
	}
	memset(x->buf, POISON, x->buf_len);
	if (x->info->caps & FI_MSG)
		access |= FI_SEND | FI_RECV;
	if (x->info->caps & (FI_RMA | FI_ATOMIC))
		access |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	ret = fi_mr_reg(x->domain, x->buf, x->buf_len, access, 0, x->server ? 0x5e : 0xc1, 0,
			&x->mr, NULL);
	if (ret) {
		say("fi_mr_reg(%zu bytes, access 0x%" PRIx64 "): %s\n", x->buf_len, access,
		    fi_strerror(-ret));
		return ret;
	}
	x->desc = fi_mr_desc(x->mr);
	return 0;
}

static void conn_close(struct xfer *x)
{
	int w;

	if (x->c.ep)
		fi_close(&x->c.ep->fid);
	for (w = TX; w <= RX; w++)
		if (x->c.cq[w])
			fi_close(&x->c.cq[w]->fid);
	if (x->c.eq)
		fi_close(&x->c.eq->fid);
	memset(&x->c, 0, sizeof(x->c));
	if (x->conn_info) {
		fi_freeinfo(x->conn_info);
		x->conn_info = NULL;
	}
}

/* An endpoint with its EQ and CQs, enabled, not connected. */
static int conn_ep(struct xfer *x, struct fi_info *info)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE };
	int w, ret;

	ret = open_eq(x, &x->c.eq);
	if (ret)
		return ret;
	ret = fi_endpoint(x->domain, info, &x->c.ep, NULL);
	if (ret) {
		say("fi_endpoint: %s\n", fi_strerror(-ret));
		return ret;
	}
	for (w = TX; w <= RX; w++) {
		cqa.size = w == TX ? info->tx_attr->size : info->rx_attr->size;
		ret = fi_cq_open(x->domain, &cqa, &x->c.cq[w], NULL);
		if (ret) {
			say("fi_cq_open(%s): %s\n", cq_name(w), fi_strerror(-ret));
			return ret;
		}
		ret = fi_ep_bind(x->c.ep, &x->c.cq[w]->fid, w == TX ? FI_TRANSMIT : FI_RECV);
		if (ret) {
			say("fi_ep_bind(%s CQ): %s\n", cq_name(w), fi_strerror(-ret));
			return ret;
		}
	}
	ret = fi_ep_bind(x->c.ep, &x->c.eq->fid, 0);
	if (ret) {
		say("fi_ep_bind(EQ): %s\n", fi_strerror(-ret));
		return ret;
	}
	ret = fi_enable(x->c.ep);
	if (ret)
		say("fi_enable: %s\n", fi_strerror(-ret));
	return ret;
}


/* Wait for one event on an EQ; the CM data length in *dlen. */
static int eq_wait(struct xfer *x, struct fid_eq *eq, uint32_t want, union cm_ent *ent,
		   size_t *dlen, char *reason, size_t rlen)
{
	uint64_t end = deadline();
	bool peer_up = false;

	for (;;) {
		uint32_t event = 0;
		int ms = (int)((end - fiu_now_ns()) / 1000000);
		ssize_t n;

		if (ms > 100)
			ms = 100;
		if (ms < 1)
			ms = 1;
		n = fi_eq_sread(eq, &event, ent, sizeof(*ent), ms, 0);
		if (n >= 0) {
			if (event == want) {
				*dlen = (size_t)n > sizeof(ent->e) ? (size_t)n - sizeof(ent->e) : 0;
				return 0;
			}
			if (event == FI_SHUTDOWN) {
				why(reason, rlen, "FI_SHUTDOWN while waiting for %s",
				    want == FI_CONNECTED ? "FI_CONNECTED" : "FI_CONNREQ");
				return -1;
			}
			vlog("EQ event %u while waiting for %u: ignored\n", event, want);
			continue;
		}
		if (n == -FI_EAVAIL) {
			char text[REASON_LEN];

			fiu_eq_error(eq, text, sizeof(text));
			why(reason, rlen, "EQ error while waiting for %s: %s",
			    want == FI_CONNECTED ? "FI_CONNECTED" : "FI_CONNREQ", text);
			return -1;
		}
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT) {
			why(reason, rlen, "fi_eq_sread: %s", fi_strerror((int)-n));
			return -1;
		}
		progress(x);
		if (!peer_up && oob_readable(x, 0)) {
			/*
			 * The peer spoke first.  Its M_CONN saying it is
			 * connected is no reason to stop: the active side is
			 * connected once the REP is in, and when its RTU is
			 * lost this side waits for the CM's REP retry (then
			 * the RTU again), while the peer waits for our
			 * M_CONN before it sends data that would do as an
			 * RTU.  A closed connection or a failed M_CONN is.
			 */
			int up = oob_peek_conn(x);

			if (up < 0) {
				why(reason, rlen, "the peer gave up connecting");
				return -1;
			}
			if (up > 0) {
				vlog("the peer is connected; still waiting for %s\n",
				     want == FI_CONNECTED ? "FI_CONNECTED" : "FI_CONNREQ");
				peer_up = true;
			}
		}
		if (fiu_now_ns() >= end) {
			why(reason, rlen, "no %s within %d ms",
			    want == FI_CONNECTED ? "FI_CONNECTED" : "FI_CONNREQ", opt.timeout_ms);
			return -1;
		}
	}
}

static void cm_pattern(uint8_t *p, size_t n, unsigned int dir)
{
	pattern_fill(p, n, seed_of(OP_CM_DATA, n, 0, dir));
}

/* Check CM data received; record the verdict the first time. */
static void cm_check(struct xfer *x, const uint8_t *data, size_t len, size_t want_len,
		     unsigned int dir, const char *what)
{
	char reason[256] = "";
	uint8_t want;
	ssize_t bad;

	if (x->cm_status >= 0 || !want_len)
		return;
	if (len < want_len)
		why(reason, sizeof(reason), "%s carried %zu bytes of CM data, expected %zu", what,
		    len, want_len);
	else if ((bad = pattern_check(data, want_len, seed_of(OP_CM_DATA, want_len, 0, dir),
				      &want)) >= 0)
		why(reason, sizeof(reason), "%s CM data byte %zd is 0x%02x, expected 0x%02x", what,
		    bad, data[bad], want);
	if (len > want_len)
		vlog("%s carried %zu bytes of CM data for %zu sent\n", what, len, want_len);
	x->cm_status = reason[0] ? 1 : 0;
	scopy(x->cm_reason, sizeof(x->cm_reason), reason);
}

/* Client: connect, check the accept data; exchange CONN with the server. */
/*
 * Both sides, once this side's connect or accept is done (x->c.up) or
 * failed (reason): tell the peer with M_CONN and take its M_CONN; -2 when
 * the control connection fails, -1 when either side is not connected.
 */
static int conn_exchange(struct xfer *x, const char *reason, const char *what,
			 const char *peer_failed)
{
	struct msg m;

	memset(&m, 0, sizeof(m));
	m.type = M_CONN;
	m.status = x->c.up ? 0 : 1;
	scopy(m.text, sizeof(m.text), reason);
	if (!x->c.up)
		say("%s failed: %s\n", what, reason);
	if (oob_send(x, &m) || oob_recv(x, M_CONN, &m, peer_ms()))
		return -2;
	if (m.status) {
		say("%s: %s\n", peer_failed, m.text);
		x->c.up = false;
	}
	return x->c.up ? 0 : -1;
}

static int client_connect(struct xfer *x)
{
	uint8_t param[CM_DATA_LEN];
	union cm_ent ent;
	char reason[256] = "";
	size_t dlen;
	int ret = 0;

	if (!x->c.ep)
		ret = conn_ep(x, x->info);
	if (ret) {
		why(reason, sizeof(reason), "endpoint setup failed");
		goto out;
	}
	cm_pattern(param, x->cm_len, 0);
	ret = fi_connect(x->c.ep, x->info->dest_addr, x->cm_len ? param : NULL, x->cm_len);
	if (ret) {
		why(reason, sizeof(reason), "fi_connect: %s", fi_strerror(-ret));
		goto out;
	}
	ret = eq_wait(x, x->c.eq, FI_CONNECTED, &ent, &dlen, reason, sizeof(reason));
	if (ret)
		goto out;
	if (ent.e.fid != &x->c.ep->fid)
		vlog("FI_CONNECTED names fid %p, not the endpoint %p\n", (void *)ent.e.fid,
		     (void *)&x->c.ep->fid);
	cm_check(x, ent.e.data, dlen, x->cm_len, 1, "the accept");
	x->c.up = true;
out:
	return conn_exchange(x, reason, "connect", "the server failed to accept");
}

/* Server: wait for a connection request, accept it; exchange CONN. */
static int server_accept(struct xfer *x)
{
	uint8_t param[CM_DATA_LEN];
	union cm_ent ent;
	char reason[256] = "";
	size_t dlen;
	int ret;

	ret = eq_wait(x, x->peq, FI_CONNREQ, &ent, &dlen, reason, sizeof(reason));
	if (ret)
		goto out;
	x->conn_info = ent.e.info;
	cm_check(x, ent.e.data, dlen, x->cm_len, 0, "the connection request");
	ret = conn_ep(x, x->conn_info);
	if (ret) {
		why(reason, sizeof(reason), "endpoint setup failed");
		fi_reject(x->pep, x->conn_info->handle, NULL, 0);
		goto out;
	}
	cm_pattern(param, x->cm_len, 1);
	ret = fi_accept(x->c.ep, x->cm_len ? param : NULL, x->cm_len);
	if (ret) {
		why(reason, sizeof(reason), "fi_accept: %s", fi_strerror(-ret));
		goto out;
	}
	ret = eq_wait(x, x->c.eq, FI_CONNECTED, &ent, &dlen, reason, sizeof(reason));
	if (ret)
		goto out;
	x->c.up = true;
out:
	return conn_exchange(x, reason, "accept", "the client failed to connect");
}

/* ---- posting, with retries while the queue is full -------------------- */

#define POST(x, reason, rlen, what, call)                                                          \
	({                                                                                         \
		uint64_t __end = deadline();                                                       \
		ssize_t __r;                                                                       \
		while ((__r = (call)) == -FI_EAGAIN && fiu_now_ns() < __end)                       \
			progress(x);                                                               \
		if (__r)                                                                           \
			why(reason, rlen, "%s: %s", what, fi_strerror((int)-__r));                 \
		__r;                                                                               \
	})

/* Check a completion: no error, the right context, the flags expected. */
static bool comp_ok(const struct comp *c, void *ctx, uint64_t flags, const char *who,
		    const char *what, char *reason, size_t rlen)
{
	if (c->err) {
		why(reason, rlen, "%s: %s: %s", who, what, c->msg);
		return false;
	}
	if (c->e.op_context != ctx) {
		why(reason, rlen, "%s: %s: completion for context %p, expected %p", who, what,
		    c->e.op_context, ctx);
		return false;
	}
	if ((c->e.flags & flags) != flags) {
		why(reason, rlen, "%s: %s: completion flags 0x%" PRIx64 " lack 0x%" PRIx64, who,
		    what, (uint64_t)c->e.flags, flags & ~(uint64_t)c->e.flags);
		return false;
	}
	return true;
}

static uint64_t cq_data_of(struct xfer *x, int op, uint64_t size, unsigned int iter,
			   unsigned int dir)
{
	uint64_t v = mix64(seed_of(op, size, iter, dir) ^ 0xda7a);

	if (x->cq_data_bytes < 8)
		v &= (1ull << (8 * x->cq_data_bytes)) - 1;
	return v;
}

static bool rx_data_ok(struct xfer *x, const struct comp *c, uint64_t want, const char *who,
		       char *reason, size_t rlen)
{
	uint64_t got = c->e.data;

	if (!(c->e.flags & FI_REMOTE_CQ_DATA)) {
		why(reason, rlen, "%s: RX completion lacks FI_REMOTE_CQ_DATA (flags 0x%" PRIx64 ")",
		    who, (uint64_t)c->e.flags);
		return false;
	}
	if (x->cq_data_bytes < 8)
		got &= (1ull << (8 * x->cq_data_bytes)) - 1;
	if (got != want) {
		why(reason, rlen, "%s: remote CQ data 0x%" PRIx64 ", expected 0x%" PRIx64, who,
		    (uint64_t)c->e.data, want);
		return false;
	}
	return true;
}

/* A plain send must not bring remote CQ data. */
static bool no_rx_data(const struct comp *c, const char *who, char *reason, size_t rlen)
{
	if (!(c->e.flags & FI_REMOTE_CQ_DATA))
		return true;
	why(reason, rlen, "%s: a plain send's completion has FI_REMOTE_CQ_DATA (0x%" PRIx64 ")",
	    who, (uint64_t)c->e.data);
	return false;
}

struct atomic_vals {
	uint64_t v0, a, s, s2;
};

static struct atomic_vals atomic_vals_of(int op, unsigned int iter)
{
	uint64_t seed = seed_of(op, 8, iter, 0);
	struct atomic_vals v = {
		.v0 = mix64(seed ^ 1),
		.a = mix64(seed ^ 2),
		.s = mix64(seed ^ 3),
		.s2 = mix64(seed ^ 4),
	};

	if (v.s == v.v0)
		v.s++;
	return v;
}

static unsigned int lshift(unsigned int iter)
{
	return iter % SHIFT_MAX;
}

static unsigned int rshift(uint64_t size, unsigned int iter)
{
	return (unsigned int)((iter * 5 + size) % SHIFT_MAX);
}

/* ---- one iteration: the server's side ------------------------------------ */

struct iter_res {
	bool ok;
	bool fatal;
	char reason[2 * OOB_TEXT + 8]; /* both sides' */
	uint64_t ns;
	unsigned int nops;
};

/* "side: reason" unless the reason already starts with the side's name. */
static void side_reason(char *out, size_t len, const char *side, const char *r)
{
	size_t n = strlen(side);

	if (!strncmp(r, side, n) && (r[n] == ':' || r[n] == ' '))
		snprintf(out, len, "%s", r);
	else
		snprintf(out, len, "%s: %s", side, r);
}

/* One reason from both sides' (the same text on both): a side that only
 * stopped because the other reported a failure has nothing to add. */
static void combine(char *out, size_t len, const char *cr, const char *sr)
{
	bool c = cr[0] && strcmp(cr, ABORTED), s = sr[0] && strcmp(sr, ABORTED);
	char a[OOB_TEXT], b[OOB_TEXT];

	side_reason(a, sizeof(a), "client", cr);
	side_reason(b, sizeof(b), "server", sr);
	if (c && s)
		snprintf(out, len, "%s; %s", a, b);
	else if (c || s)
		snprintf(out, len, "%s", c ? a : b);
	else if (cr[0] || sr[0])
		snprintf(out, len, "%s", ABORTED);
	else
		out[0] = 0;
}

static uint8_t *area(struct xfer *x, int i)
{
	return x->buf + (size_t)i * x->area_len;
}

static void server_prepare(struct xfer *x, const struct test *t, unsigned int iter, bool *posted,
			   struct iter_res *r)
{
	uint8_t *a0 = area(x, 0), *a1 = area(x, 1), *a2 = area(x, 2);
	unsigned int rs = rshift(t->size, iter);
	struct atomic_vals av;

	*posted = false;
	switch (t->op) {
	case OP_SEND:
	case OP_SENDDATA:
		memset(a0, POISON, x->area_len);
		pattern_fill(a1 + GUARD + rs, t->size, seed_of(t->op, t->size, iter, 1));
		if (POST(x, r->reason, sizeof(r->reason), "server: fi_recv",
			 fi_recv(x->c.ep, a0 + GUARD + rs, t->size + 8, x->desc, 0, &x->ctx_rx)))
			return;
		*posted = true;
		break;
	case OP_WRITE:
	case OP_WRITEDATA:
		memset(a0, POISON, x->area_len);
		memset(a1, POISON, x->area_len);
		if (t->op == OP_WRITEDATA && x->post_rx_for_cq_data) {
			if (POST(x, r->reason, sizeof(r->reason), "server: fi_recv (for CQ data)",
				 fi_recv(x->c.ep, a1 + GUARD, 64, x->desc, 0, &x->ctx_rx)))
				return;
			*posted = true;
		}
		break;
	case OP_READ:
		memset(a0, POISON, x->area_len);
		pattern_fill(a0 + GUARD + rs, t->size, seed_of(t->op, t->size, iter, 0));
		break;
	default:
		av = atomic_vals_of(t->op, iter);
		memset(a2, POISON, ATOMIC_AREA);
		memcpy(a2 + ATOMIC_TARGET, &av.v0, 8);
		break;
	}
	r->ok = true;
}

/*
 * The server waits for its completions while watching the control socket:
 * a DONE that arrives first is either a failure (stop waiting) or the
 * client merely finishing before the server reaped its completion (keep
 * waiting, no longer watching).
 */
static enum wait_ret server_wait(struct xfer *x, int which, void *ctx, struct comp *c,
				 struct iter_res *r, struct msg *done, bool *have_done)
{
	enum wait_ret w;

	for (;;) {
		w = wait_comp(x, which, ctx, c, !*have_done, r->reason, sizeof(r->reason));
		if (w != WAIT_PEER)
			return w;
		r->reason[0] = 0;
		if (oob_recv(x, M_DONE, done, peer_ms()))
			return WAIT_LOST;
		*have_done = true;
		if (done->status)
			return WAIT_PEER;
	}
}

/* The server's fabric part; false when it failed (r says why). */
static bool server_part(struct xfer *x, const struct test *t, unsigned int iter, bool *posted,
			struct iter_res *r, struct msg *done, bool *have_done)
{
	uint8_t *a1 = area(x, 1);
	unsigned int rs = rshift(t->size, iter);
	const char *name = op_tab[t->op].name;
	struct comp c;
	enum wait_ret w;
	char what[64];

	switch (t->op) {
	case OP_SEND:
	case OP_SENDDATA:
		w = server_wait(x, RX, &x->ctx_rx, &c, r, done, have_done);
		if (w != WAIT_OK)
			goto wait_failed;
		*posted = false;
		snprintf(what, sizeof(what), "receive of the %s", name);
		if (!comp_ok(&c, &x->ctx_rx, FI_RECV | FI_MSG, "server", what, r->reason,
			     sizeof(r->reason))) {
			r->fatal = c.err != 0;
			return false;
		}
		if (c.e.len != t->size) {
			why(r->reason, sizeof(r->reason),
			    "server: receive completion len %zu, expected %" PRIu64, c.e.len,
			    t->size);
			return false;
		}
		if (t->op == OP_SENDDATA ?
			    !rx_data_ok(x, &c, cq_data_of(x, t->op, t->size, iter, 0), "server",
					r->reason, sizeof(r->reason)) :
			    !no_rx_data(&c, "server", r->reason, sizeof(r->reason)))
			return false;
		if (t->op == OP_SENDDATA)
			POST(x, r->reason, sizeof(r->reason), "server: fi_senddata",
			     fi_senddata(x->c.ep, a1 + GUARD + rs, t->size, x->desc,
					 cq_data_of(x, t->op, t->size, iter, 1), 0, &x->ctx_tx));
		else
			POST(x, r->reason, sizeof(r->reason), "server: fi_send",
			     fi_send(x->c.ep, a1 + GUARD + rs, t->size, x->desc, 0, &x->ctx_tx));
		if (r->reason[0]) {
			r->fatal = true;
			return false;
		}
		w = server_wait(x, TX, &x->ctx_tx, &c, r, done, have_done);
		if (w != WAIT_OK)
			goto wait_failed;
		if (!comp_ok(&c, &x->ctx_tx, FI_SEND, "server", "echo send", r->reason,
			     sizeof(r->reason))) {
			r->fatal = c.err != 0;
			return false;
		}
		break;
	case OP_WRITEDATA:
		w = server_wait(x, RX, x->post_rx_for_cq_data ? &x->ctx_rx : NULL, &c, r, done,
				have_done);
		if (w != WAIT_OK)
			goto wait_failed;
		*posted = false;
		if (c.err) {
			why(r->reason, sizeof(r->reason), "server: %s", c.msg);
			r->fatal = true;
			return false;
		}
		if (x->post_rx_for_cq_data && c.e.op_context != &x->ctx_rx) {
			why(r->reason, sizeof(r->reason),
			    "server: CQ data completion for context %p, not the posted receive's %p",
			    c.e.op_context, (void *)&x->ctx_rx);
			return false;
		}
		if (!rx_data_ok(x, &c, cq_data_of(x, t->op, t->size, iter, 0), "server",
				r->reason, sizeof(r->reason)))
			return false;
		if (!(c.e.flags & (FI_REMOTE_WRITE | FI_RMA)))
			vlog("writedata: target completion flags 0x%" PRIx64
			     " have neither FI_REMOTE_WRITE nor FI_RMA\n",
			     (uint64_t)c.e.flags);
		break;
	default:
		break;
	}
	return true;

wait_failed:
	r->fatal = w != WAIT_PEER || *posted;
	if (w == WAIT_PEER)
		r->reason[0] = 0; /* the client's reason is the one to show */
	if (w == WAIT_LOST) {
		close(x->sock);
		x->sock = -1;
	}
	return false;
}

/* What the server finds in its memory once the client is done. */
static bool server_verify(struct xfer *x, const struct test *t, unsigned int iter,
			  struct iter_res *r)
{
	uint8_t *a0 = area(x, 0), *a1 = area(x, 1), *a2 = area(x, 2);
	unsigned int rs = rshift(t->size, iter);
	struct atomic_vals av = atomic_vals_of(t->op, iter);
	size_t tail = x->area_len - GUARD - rs - t->size;
	uint64_t start = fiu_now_ns();
	bool ok = false;

	switch (t->op) {
	case OP_SEND:
	case OP_SENDDATA:
		return region_check(a0 + GUARD + rs, t->size, tail,
				    seed_of(t->op, t->size, iter, 0), "server", r->reason,
				    sizeof(r->reason));
	case OP_WRITE:
		/* a write's initiator completion may precede its visibility at
		 * the target (FI_TRANSMIT_COMPLETE): give it a moment */
		for (;;) {
			char tmp[256] = "";

			ok = region_check(a0 + GUARD + rs, t->size, tail,
					  seed_of(t->op, t->size, iter, 0), "server", tmp,
					  sizeof(tmp));
			if (ok || fiu_now_ns() - start > SETTLE_NS) {
				if (!ok)
					why(r->reason, sizeof(r->reason), "%s", tmp);
				break;
			}
			progress(x);
			sched_yield();
		}
		if (ok && fiu_now_ns() - start > 1000000)
			vlog("write: the data showed %.1f ms after the client's completion\n",
			     (double)(fiu_now_ns() - start) / 1e6);
		return ok;
	case OP_WRITEDATA:
		ok = region_check(a0 + GUARD + rs, t->size, tail, seed_of(t->op, t->size, iter, 0),
				  "server", r->reason, sizeof(r->reason));
		if (ok && a1[GUARD] != POISON) {
			why(r->reason, sizeof(r->reason),
			    "server: the receive posted for the CQ data was written to");
			ok = false;
		}
		return ok;
	case OP_READ:
		return region_check(a0 + GUARD + rs, t->size, tail,
				    seed_of(t->op, t->size, iter, 0),
				    "server (the read target changed)", r->reason,
				    sizeof(r->reason));
	case OP_FETCH_ADD:
		return word_check(a2 + ATOMIC_TARGET, av.v0 + av.a, "server", "target word",
				  r->reason, sizeof(r->reason));
	case OP_CSWAP:
		return word_check(a2 + ATOMIC_TARGET, av.s, "server", "target word", r->reason,
				  sizeof(r->reason));
	case OP_ATOMIC_READ:
		return word_check(a2 + ATOMIC_TARGET, av.v0, "server", "target word", r->reason,
				  sizeof(r->reason));
	}
	return false;
}

static void server_iter(struct xfer *x, const struct test *t, unsigned int iter,
			struct iter_res *r)
{
	bool posted = false, have_done = false, verdict_sent = false, part_ok = false;
	struct iter_res s;
	struct msg m, done;

	memset(&s, 0, sizeof(s));
	memset(r, 0, sizeof(*r));
	memset(&done, 0, sizeof(done));
	if (oob_recv(x, M_STEP, &m, peer_ms()))
		goto lost;
	if (m.op != (uint32_t)t->op || m.v[0] != t->size || m.iter != iter) {
		say("protocol: the client is at %u/%" PRIu64 "/%u, the server at %s/%" PRIu64
		    "/%u\n",
		    m.op, m.v[0], m.iter, op_tab[t->op].name, t->size, iter);
		goto lost;
	}
	check_stray(x, "server, before the test", s.reason, sizeof(s.reason));
	if (!s.reason[0])
		server_prepare(x, t, iter, &posted, &s);
	memset(&m, 0, sizeof(m));
	m.type = M_READY;
	m.status = s.reason[0] ? 1 : 0;
	m.fatal = posted && s.reason[0];
	scopy(m.text, sizeof(m.text), s.reason);
	if (oob_send(x, &m))
		goto lost;
	if (!s.reason[0]) {
		part_ok = server_part(x, t, iter, &posted, &s, &done, &have_done);
		if (x->sock < 0)
			goto lost;
	} else {
		s.fatal = posted;
	}
	if (!part_ok && !have_done) {
		/* tell the client at once (it stops waiting), then hear it */
		memset(&m, 0, sizeof(m));
		m.type = M_VERDICT;
		m.status = 1;
		m.fatal = s.fatal;
		scopy(m.text, sizeof(m.text), s.reason);
		if (oob_send(x, &m))
			goto lost;
		verdict_sent = true;
	}
	if (!have_done && oob_recv(x, M_DONE, &done, peer_ms()))
		goto lost;
	r->ns = done.v[0];
	r->nops = (unsigned int)done.v[1];
	if (part_ok && !done.status)
		server_verify(x, t, iter, &s);
	check_stray(x, "server", s.reason, sizeof(s.reason));
	r->ok = !done.status && !s.reason[0];
	r->fatal = done.fatal || s.fatal;
	combine(r->reason, sizeof(r->reason), done.status ? done.text : "", s.reason);
	if (!r->ok && !r->reason[0])
		snprintf(r->reason, sizeof(r->reason), "failed without a reason");
	if (verdict_sent)
		return;
	memset(&m, 0, sizeof(m));
	m.type = M_VERDICT;
	m.status = s.reason[0] ? 1 : 0;
	m.fatal = s.fatal;
	scopy(m.text, sizeof(m.text), s.reason);
	if (oob_send(x, &m))
		goto lost;
	return;
lost:
	r->ok = false;
	r->fatal = true;
	r->nops = 0;
	snprintf(r->reason, sizeof(r->reason), "control connection lost");
	if (x->sock >= 0) {
		close(x->sock);
		x->sock = -1;
	}
}

/* ---- one iteration: the client's side ------------------------------------ */

static uint64_t rma_addr(struct xfer *x, int a, size_t off)
{
	return x->peer_base + (uint64_t)a * x->peer_area + off;
}

/* The client's fabric part; fills r (ok, fatal, reason, ns, nops). */
/* What one client operation works with: its areas, offsets (lshift,
 * rshift), the key it names and the -F fault, and whether a receive is
 * still posted when it ends. */
struct cpart {
	struct xfer *x;
	const struct test *t;
	unsigned int iter;
	struct iter_res *r;
	uint8_t *a0, *a1, *a2;
	unsigned int ls, rs;
	size_t tail;
	uint64_t key;
	uint8_t flip;
	bool posted;
	int comp_err; /* of the completion found wrong */
};

/* How a client operation ended: done and verified; wrong (the connection
 * still usable); broken (no completion, a post failed); or a completion
 * not as expected (broken if it carries an error). */
enum part_end { PART_OK, PART_FAIL, PART_FATAL, PART_BAD_COMP };

static enum part_end bad_comp(struct cpart *p, const struct comp *c)
{
	p->comp_err = c->err;
	return PART_BAD_COMP;
}

/* fi_send/fi_senddata of a pattern; the server echoes it back. */
static enum part_end client_send(struct cpart *p)
{
	struct xfer *x = p->x;
	const struct test *t = p->t;
	struct iter_res *r = p->r;
	unsigned int iter = p->iter, ls = p->ls;
	uint8_t *a0 = p->a0, *a1 = p->a1, flip = p->flip;
	const char *name = op_tab[t->op].name;
	size_t tail = p->tail;
	enum wait_ret w;
	struct comp c;
	char what[64];
	uint64_t t0;
	ssize_t ret;

	r->nops = 2;
	pattern_fill(a0 + GUARD + ls, t->size, seed_of(t->op, t->size, iter, 0));
	a0[GUARD + ls + t->size / 2] ^= flip;
	memset(a1, POISON, x->area_len);
	if (POST(x, r->reason, sizeof(r->reason), "client: fi_recv",
		 fi_recv(x->c.ep, a1 + GUARD + ls, t->size + 8, x->desc, 0, &x->ctx_rx)))
		return PART_FATAL;
	p->posted = true;
	t0 = fiu_now_ns();
	if (t->op == OP_SENDDATA)
		ret = POST(x, r->reason, sizeof(r->reason), "client: fi_senddata",
			   fi_senddata(x->c.ep, a0 + GUARD + ls, t->size, x->desc,
				       cq_data_of(x, t->op, t->size, iter, 0), 0, &x->ctx_tx));
	else
		ret = POST(x, r->reason, sizeof(r->reason), "client: fi_send",
			   fi_send(x->c.ep, a0 + GUARD + ls, t->size, x->desc, 0, &x->ctx_tx));
	if (ret)
		return PART_FATAL;
	w = wait_comp(x, TX, &x->ctx_tx, &c, true, r->reason, sizeof(r->reason));
	if (w != WAIT_OK)
		return PART_FATAL;
	if (!comp_ok(&c, &x->ctx_tx, FI_SEND, "client", name, r->reason, sizeof(r->reason)))
		return bad_comp(p, &c);
	w = wait_comp(x, RX, &x->ctx_rx, &c, true, r->reason, sizeof(r->reason));
	if (w != WAIT_OK)
		return PART_FATAL;
	r->ns = fiu_now_ns() - t0;
	p->posted = false;
	snprintf(what, sizeof(what), "receive of the echo");
	if (!comp_ok(&c, &x->ctx_rx, FI_RECV | FI_MSG, "client", what, r->reason,
		     sizeof(r->reason)))
		return bad_comp(p, &c);
	if (c.e.len != t->size) {
		why(r->reason, sizeof(r->reason),
		    "client: echo completion len %zu, expected %" PRIu64, c.e.len, t->size);
		return PART_FAIL;
	}
	if (t->op == OP_SENDDATA ? !rx_data_ok(x, &c, cq_data_of(x, t->op, t->size, iter, 1),
					       "client (echo)", r->reason, sizeof(r->reason))
				 : !no_rx_data(&c, "client (echo)", r->reason, sizeof(r->reason)))
		return PART_FAIL;
	if (!region_check(a1 + GUARD + ls, t->size, tail, seed_of(t->op, t->size, iter, 1),
			  "client (echo)", r->reason, sizeof(r->reason)))
		return PART_FAIL;
	return PART_OK;
}

/* fi_write/fi_writedata of a pattern into the server's area 0. */
static enum part_end client_write(struct cpart *p)
{
	struct xfer *x = p->x;
	const struct test *t = p->t;
	struct iter_res *r = p->r;
	unsigned int iter = p->iter, ls = p->ls;
	uint8_t *a0 = p->a0, flip = p->flip;
	const char *name = op_tab[t->op].name;
	uint64_t key = p->key;
	unsigned int rs = p->rs;
	enum wait_ret w;
	struct comp c;
	uint64_t t0;
	ssize_t ret;

	pattern_fill(a0 + GUARD + ls, t->size, seed_of(t->op, t->size, iter, 0));
	a0[GUARD + ls + t->size / 2] ^= flip;
	t0 = fiu_now_ns();
	if (t->op == OP_WRITEDATA)
		ret = POST(x, r->reason, sizeof(r->reason), "client: fi_writedata",
			   fi_writedata(x->c.ep, a0 + GUARD + ls, t->size, x->desc,
					cq_data_of(x, t->op, t->size, iter, 0), 0,
					rma_addr(x, 0, GUARD + rs), key, &x->ctx_tx));
	else
		ret = POST(x, r->reason, sizeof(r->reason), "client: fi_write",
			   fi_write(x->c.ep, a0 + GUARD + ls, t->size, x->desc, 0,
				    rma_addr(x, 0, GUARD + rs), key, &x->ctx_tx));
	if (ret)
		return PART_FATAL;
	w = wait_comp(x, TX, &x->ctx_tx, &c, true, r->reason, sizeof(r->reason));
	if (w != WAIT_OK)
		return PART_FATAL;
	r->ns = fiu_now_ns() - t0;
	if (!comp_ok(&c, &x->ctx_tx, FI_WRITE, "client", name, r->reason, sizeof(r->reason)))
		return bad_comp(p, &c);
	return PART_OK;
}

/* fi_read of the server's area 0. */
static enum part_end client_read(struct cpart *p)
{
	struct xfer *x = p->x;
	const struct test *t = p->t;
	struct iter_res *r = p->r;
	unsigned int iter = p->iter, ls = p->ls;
	uint8_t *a0 = p->a0;
	const char *name = op_tab[t->op].name;
	uint64_t key = p->key;
	unsigned int rs = p->rs;
	size_t tail = p->tail;
	enum wait_ret w;
	struct comp c;
	uint64_t t0;

	memset(a0, POISON, x->area_len);
	t0 = fiu_now_ns();
	if (POST(x, r->reason, sizeof(r->reason), "client: fi_read",
		 fi_read(x->c.ep, a0 + GUARD + ls, t->size, x->desc, 0, rma_addr(x, 0, GUARD + rs),
			 key, &x->ctx_tx)))
		return PART_FATAL;
	w = wait_comp(x, TX, &x->ctx_tx, &c, true, r->reason, sizeof(r->reason));
	if (w != WAIT_OK)
		return PART_FATAL;
	r->ns = fiu_now_ns() - t0;
	if (!comp_ok(&c, &x->ctx_tx, FI_READ, "client", name, r->reason, sizeof(r->reason)))
		return bad_comp(p, &c);
	if (!region_check(a0 + GUARD + ls, t->size, tail, seed_of(t->op, t->size, iter, 0),
			  "client (read data)", r->reason, sizeof(r->reason)))
		return PART_FAIL;
	return PART_OK;
}

/* The atomics on the server's word (a compare-and-swap twice: matching,
 * then stale). */
static enum part_end client_atomic(struct cpart *p)
{
	struct xfer *x = p->x;
	const struct test *t = p->t;
	struct iter_res *r = p->r;
	uint8_t *a2 = p->a2, flip = p->flip;
	const char *name = op_tab[t->op].name;
	struct atomic_vals av = atomic_vals_of(t->op, p->iter);
	uint64_t key = p->key, t0, expect;
	enum wait_ret w;
	struct comp c;
	char what[64];
	ssize_t ret;
	uint64_t *operand = (uint64_t *)(a2 + ATOMIC_OPERAND);
	uint64_t *compare = (uint64_t *)(a2 + ATOMIC_COMPARE);
	uint8_t *result = a2 + ATOMIC_RESULT;
	uint64_t addr = rma_addr(x, 2, ATOMIC_TARGET);
	int k, n = t->op == OP_CSWAP ? 2 : 1;

	r->nops = (unsigned int)n;
	r->ns = 0;
	for (k = 0; k < n; k++) {
		memset(a2, POISON, ATOMIC_AREA);
		t0 = fiu_now_ns();
		if (t->op == OP_FETCH_ADD) {
			*operand = av.a ^ flip;
			expect = av.v0;
			ret =
			    POST(x, r->reason, sizeof(r->reason), "client: fi_fetch_atomic(FI_SUM)",
				 fi_fetch_atomic(x->c.ep, operand, 1, x->desc, result, x->desc, 0,
						 addr, key, FI_UINT64, FI_SUM, &x->ctx_tx));
			snprintf(what, sizeof(what), "fetched old value");
		} else if (t->op == OP_ATOMIC_READ) {
			*operand = 0;
			expect = av.v0;
			ret =
			    POST(x, r->reason, sizeof(r->reason),
				 "client: fi_fetch_atomic(FI_ATOMIC_READ)",
				 fi_fetch_atomic(x->c.ep, operand, 1, x->desc, result, x->desc, 0,
						 addr, key, FI_UINT64, FI_ATOMIC_READ, &x->ctx_tx));
			snprintf(what, sizeof(what), "value read");
		} else {
			/* k 0: compare matches, swap; k 1: stale compare, no swap */
			*operand = k ? av.s2 : av.s;
			*compare = av.v0;
			expect = k ? av.s : av.v0;
			ret = POST(x, r->reason, sizeof(r->reason),
				   "client: fi_compare_atomic(FI_CSWAP)",
				   fi_compare_atomic(x->c.ep, operand, 1, x->desc, compare, x->desc,
						     result, x->desc, 0, addr, key, FI_UINT64,
						     FI_CSWAP, &x->ctx_tx));
			snprintf(what, sizeof(what), "%s swap's old value",
				 k ? "failing" : "succeeding");
		}
		if (ret)
			return PART_FATAL;
		w = wait_comp(x, TX, &x->ctx_tx, &c, true, r->reason, sizeof(r->reason));
		if (w != WAIT_OK)
			return PART_FATAL;
		r->ns += fiu_now_ns() - t0;
		/* libfabric's verbs provider does FI_ATOMIC_READ as an RDMA
		 * READ and completes it as one (FI_RMA | FI_READ) */
		if (!comp_ok(&c, &x->ctx_tx,
			     t->op == OP_ATOMIC_READ && (c.e.flags & FI_RMA) ? FI_RMA | FI_READ
									     : FI_ATOMIC,
			     "client", name, r->reason, sizeof(r->reason)))
			return bad_comp(p, &c);
		if (!word_check(result, expect, "client", what, r->reason, sizeof(r->reason)))
			return PART_FAIL;
	}
	return PART_OK;
}

static void client_part(struct xfer *x, const struct test *t, unsigned int iter, struct iter_res *r)
{
	bool fault = opt.fault && opt.fault_op == t->op && opt.fault_iter == iter;
	struct cpart p = {
	    .x = x,
	    .t = t,
	    .iter = iter,
	    .r = r,
	    .a0 = area(x, 0),
	    .a1 = area(x, 1),
	    .a2 = area(x, 2),
	    .ls = lshift(iter),
	    .rs = rshift(t->size, iter),
	    .key = x->peer_key ^ (fault && opt.fault == FAULT_BADKEY ? 0x5a5a5a5aull : 0),
	    .flip = fault && opt.fault == FAULT_CORRUPT && t->size ? 0xff : 0,
	};
	enum part_end end = PART_OK;

	p.tail = x->area_len - GUARD - p.ls - t->size;
	r->nops = 1;
	switch (t->op) {
	case OP_SEND:
	case OP_SENDDATA:
		end = client_send(&p);
		break;
	case OP_WRITE:
	case OP_WRITEDATA:
		end = client_write(&p);
		break;
	case OP_READ:
		end = client_read(&p);
		break;
	case OP_FETCH_ADD:
	case OP_CSWAP:
	case OP_ATOMIC_READ:
		end = client_atomic(&p);
		break;
	}
	if (end == PART_OK && !check_stray(x, "client", r->reason, sizeof(r->reason)))
		end = PART_FAIL;
	switch (end) {
	case PART_OK:
		r->ok = true;
		return;
	case PART_BAD_COMP:
		r->fatal = p.comp_err != 0 || p.posted;
		r->ok = false;
		return;
	case PART_FATAL:
		r->fatal = true;
		/* fall through */
	case PART_FAIL:
		r->fatal |= p.posted;
		r->ok = false;
	}
}

/* -W: let a test harness act just before an operation (take the link
 * down, for instance): create the file, wait until it is removed. */
static void gate_wait(const struct test *t, unsigned int iter)
{
	const char *gate = opt.gate;
	int fd;

	if (!gate || iter != opt.gate_iter)
		return;
	if (opt.gate_once)
		opt.gate = NULL; /* -G: this was the one time */
	fd = open(gate, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		say("cannot create %s: %s\n", gate, strerror(errno));
		return;
	}
	close(fd);
	printf(PROG ": %s %" PRIu64 " B iteration %u: held until %s is removed\n",
	       op_tab[t->op].name, t->size, iter, gate);
	fflush(stdout);
	while (access(gate, F_OK) == 0)
		usleep(1000);
}

static void client_iter(struct xfer *x, const struct test *t, unsigned int iter,
			struct iter_res *r)
{
	struct iter_res s;
	struct msg m;

	memset(r, 0, sizeof(*r));
	memset(&s, 0, sizeof(s));
	memset(&m, 0, sizeof(m));
	m.type = M_STEP;
	m.op = (uint32_t)t->op;
	m.iter = iter;
	m.v[0] = t->size;
	check_stray(x, "client, before the test", s.reason, sizeof(s.reason));
	if (oob_send(x, &m) || oob_recv(x, M_READY, &m, peer_ms()))
		goto lost;
	if (m.status) {
		scopy(s.reason, sizeof(s.reason), m.text);
		s.fatal = m.fatal;
	} else if (!s.reason[0]) {
		gate_wait(t, iter);
		client_part(x, t, iter, &s);
	}
	memset(&m, 0, sizeof(m));
	m.type = M_DONE;
	m.status = s.reason[0] ? 1 : 0;
	m.fatal = s.fatal;
	m.v[0] = s.ns;
	m.v[1] = s.nops;
	scopy(m.text, sizeof(m.text), s.reason);
	if (oob_send(x, &m) || oob_recv(x, M_VERDICT, &m, peer_ms()))
		goto lost;
	r->ns = s.ns;
	r->nops = s.nops;
	r->fatal = s.fatal || m.fatal;
	r->ok = !s.reason[0] && !m.status;
	combine(r->reason, sizeof(r->reason), s.reason, m.status ? m.text : "");
	if (!r->ok && !r->reason[0])
		snprintf(r->reason, sizeof(r->reason), "failed without a reason");
	return;
lost:
	r->ok = false;
	r->fatal = true;
	snprintf(r->reason, sizeof(r->reason), "control connection lost");
	close(x->sock);
	x->sock = -1;
}

/* ---- the plan --------------------------------------------------------------- */

static int build_tests(struct xfer *x, struct test *tests, int max)
{
	int op, i, n = 0;

	for (op = 0; op < OP_MAX; op++) {
		const char *cw = x->server ? x->peer_why[op] : x->local_why[op];
		const char *sw = x->server ? x->local_why[op] : x->peer_why[op];
		int nsz = op_tab[op].atomic || op == OP_CM_DATA ? 1 : x->nsizes;

		if (!(x->req_ops & OP_BIT(op)))
			continue;
		for (i = 0; i < nsz && n < max; i++) {
			struct test *t = &tests[n++];

			memset(t, 0, sizeof(*t));
			t->op = op;
			t->size = op_tab[op].atomic ? 8 : op == OP_CM_DATA ? x->cm_len : x->sizes[i];
			if (!(x->run_ops & OP_BIT(op))) {
				if (cw[0] && sw[0])
					snprintf(t->skip, sizeof(t->skip), "client: %s; server: %s",
						 cw, sw);
				else
					snprintf(t->skip, sizeof(t->skip), "%s: %s",
						 cw[0] ? "client" : "server", cw[0] ? cw : sw);
				break; /* one SKIP line for the operation */
			}
			if (t->size > x->max_msg && op != OP_CM_DATA) {
				snprintf(t->skip, sizeof(t->skip),
					 "exceeds max_msg_size %" PRIu64, x->max_msg);
				t->per_size = true;
			}
		}
	}
	return n;
}

static void print_result(struct xfer *x, const struct test *t, const char *verdict,
			 const char *reason, unsigned int iters, double us)
{
	const char *name = op_tab[t->op].name;

	if (!strcmp(verdict, "SKIP")) {
		x->skipped++;
		if (t->per_size)
			printf("SKIP %s %" PRIu64 " B: %s\n", name, t->size, reason);
		else
			printf("SKIP %s: %s\n", name, reason);
	} else if (!strcmp(verdict, "PASS")) {
		x->passed++;
		if (us >= 0)
			printf("PASS %s %" PRIu64 " B x%u (%.1f us/op)\n", name, t->size, iters, us);
		else
			printf("PASS %s %" PRIu64 " B x%u\n", name, t->size, iters);
	} else {
		x->failed++;
		printf("FAIL %s %" PRIu64 " B x%u: %s\n", name, t->size, iters, reason);
	}
	fflush(stdout);
}

/* Close the broken connection and make a new one. */
static int reconnect(struct xfer *x)
{
	int ret;

	vlog("reconnecting after a fatal failure\n");
	if (x->c.ep)
		fi_shutdown(x->c.ep, 0);
	conn_close(x);
	if (x->sock < 0)
		return -1;
	ret = x->server ? server_accept(x) : client_connect(x);
	return ret;
}

static void run_tests(struct xfer *x)
{
	struct test tests[OP_MAX * MAX_SIZES + 1];
	int n = build_tests(x, tests, (int)(sizeof(tests) / sizeof(tests[0]))), i;
	unsigned int iter;
	const char *dead = x->c.up ? NULL : "not run: no connection";

	for (i = 0; i < n; i++) {
		struct test *t = &tests[i];
		struct iter_res r;
		uint64_t ns = 0;
		unsigned int nops = 0;
		bool ok = true;

		if (t->skip[0]) {
			print_result(x, t, "SKIP", t->skip, 0, 0);
			continue;
		}
		if (t->op == OP_CM_DATA) {
			if (x->cm_status < 0)
				print_result(x, t, "FAIL", "the connection never came up", 1, -1);
			else
				print_result(x, t, x->cm_status ? "FAIL" : "PASS", x->cm_reason, 1,
					     -1);
			continue;
		}
		if (dead) {
			print_result(x, t, "FAIL", dead, x->iters, 0);
			continue;
		}
		memset(&r, 0, sizeof(r));
		for (iter = 0; iter < x->iters; iter++) {
			if (x->server)
				server_iter(x, t, iter, &r);
			else
				client_iter(x, t, iter, &r);
			if (opt.verbose > 1)
				vlog("%s %" PRIu64 " B iteration %u: %s, %.1f us for %u op(s) %s\n",
				     op_tab[t->op].name, t->size, iter, r.ok ? "ok" : "FAILED",
				     (double)r.ns / 1000.0, r.nops, r.reason);
			if (!r.ok)
				break;
			ns += r.ns;
			nops += r.nops;
		}
		if (!r.ok) {
			char reason[sizeof(r.reason) + 32];

			ok = false;
			if (x->iters > 1)
				snprintf(reason, sizeof(reason), "iteration %u: %s", iter, r.reason);
			else
				scopy(reason, sizeof(reason), r.reason);
			print_result(x, t, "FAIL", reason, x->iters, 0);
		} else {
			print_result(x, t, "PASS", "", x->iters,
				     nops ? (double)ns / nops / 1000.0 : 0);
		}
		if (!ok && x->sock < 0) {
			dead = "not run: the control connection was lost";
		} else if (!ok && r.fatal) {
			if (reconnect(x))
				dead = x->sock < 0 ? "not run: the control connection was lost" :
						     "not run: reconnecting after a failure failed";
		}
	}
}

/* ---- the two roles ------------------------------------------------------------ */

static void put_reasons(struct msg *m, char why_tab[OP_MAX][REASON_LEN])
{
	int op;

	for (op = 0; op < OP_MAX; op++)
		memcpy(m->blob + REASON_OFF + op * REASON_LEN, why_tab[op], REASON_LEN);
}

static void get_reasons(const struct msg *m, char why_tab[OP_MAX][REASON_LEN])
{
	int op;

	for (op = 0; op < OP_MAX; op++) {
		memcpy(why_tab[op], m->blob + REASON_OFF + op * REASON_LEN, REASON_LEN);
		why_tab[op][REASON_LEN - 1] = 0;
	}
}

static size_t cm_data_size(fid_t fid)
{
	size_t v = 0, len = sizeof(v);

	if (fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len))
		return 0;
	return v;
}

/* The server's end of the shutdown: the client said BYE and shut down. */
/* -H: a test harness reads the provider's live counters while the
 * connection, its endpoint and its counters still stand: tell it on the
 * FIFO (its reader blocks until then), then block until it opens the FIFO
 * for writing and closes it.  No sleeps on either side. */
static void hold(const char *fifo)
{
	char line[64];
	int fd, n;

	fd = open(fifo, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		say("-H %s: %s\n", fifo, strerror(errno));
		return;
	}
	n = snprintf(line, sizeof(line), "held %d\n", (int)getpid());
	if (write(fd, line, (size_t)n) != n)
		say("-H %s: write: %s\n", fifo, strerror(errno));
	close(fd);
	fd = open(fifo, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say("-H %s: %s\n", fifo, strerror(errno));
		return;
	}
	while (read(fd, line, sizeof(line)) > 0)
		;
	close(fd);
}

static void server_bye(struct xfer *x)
{
	uint64_t end = deadline();
	struct msg m;

	if (x->sock < 0 || oob_recv(x, M_BYE, &m, peer_ms()))
		return;
	while (x->c.up && !x->c.peer_down && fiu_now_ns() < end) {
		eq_poll(x);
		progress(x);
		usleep(1000);
	}
	memset(&m, 0, sizeof(m));
	m.type = M_FIN;
	if (!x->c.up)
		snprintf(m.text, sizeof(m.text), "no connection to shut down");
	else if (!x->c.peer_down)
		snprintf(m.text, sizeof(m.text),
			 "server: no FI_SHUTDOWN within %d ms of the client's fi_shutdown",
			 opt.timeout_ms);
	else if (x->c.eq_err[0])
		snprintf(m.text, sizeof(m.text), "server: %s", x->c.eq_err);
	m.status = m.text[0] ? 1 : 0;
	oob_send(x, &m);
	if (x->c.up)
		printf("%s shutdown%s%s\n", m.status ? "FAIL" : "PASS", m.status ? ": " : "",
		       m.text);
	if (x->c.up)
		m.status ? x->failed++ : x->passed++;
}

static void client_bye(struct xfer *x)
{
	struct msg m;
	int ret = 0;

	if (x->sock < 0)
		return;
	memset(&m, 0, sizeof(m));
	m.type = M_BYE;
	if (oob_send(x, &m))
		return;
	if (x->c.up) {
		ret = fi_shutdown(x->c.ep, 0);
		if (ret)
			say("fi_shutdown: %s\n", fi_strerror(-ret));
	}
	if (oob_recv(x, M_FIN, &m, peer_ms()))
		return;
	if (!x->c.up)
		return;
	if (ret)
		snprintf(m.text, sizeof(m.text), "client: fi_shutdown: %s", fi_strerror(-ret));
	printf("%s shutdown%s%s\n", m.status || ret ? "FAIL" : "PASS",
	       m.status || ret ? ": " : "", m.text);
	m.status || ret ? x->failed++ : x->passed++;
}

static void addr_str(uint32_t fmt, const void *addr, size_t len, char *buf, size_t blen)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (fmt == FI_SOCKADDR_IN && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s = addr;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		snprintf(buf, blen, "%s:%u", ip, ntohs(s->sin_port));
	} else if (fmt == FI_SOCKADDR_IN6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = addr;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		snprintf(buf, blen, "[%s]:%u", ip, ntohs(s->sin6_port));
	} else {
		snprintf(buf, blen, "(format %u, %zu bytes)", fmt, len);
	}
}

static int run_server(struct xfer *x)
{
	char addr[256], desc[160], astr[128];
	size_t alen = sizeof(addr);
	struct msg m;
	int ret, i, plan_ms;

	ret = get_info(x, opt.src_addr, NULL, FI_SOURCE, FI_FORMAT_UNSPEC, NULL, 0);
	if (ret) {
		say("fi_getinfo(%s, FI_EP_MSG): %s\n", opt.prov ? opt.prov : "any provider",
		    fi_strerror(-ret));
		return -1;
	}
	if (open_fabric(x) || open_eq(x, &x->peq))
		return -1;
	ret = fi_passive_ep(x->fabric, x->info, &x->pep, NULL);
	if (!ret)
		ret = fi_pep_bind(x->pep, &x->peq->fid, 0);
	if (!ret)
		ret = fi_listen(x->pep);
	if (!ret)
		ret = fi_getname(&x->pep->fid, addr, &alen);
	if (ret) {
		say("passive endpoint: %s\n", fi_strerror(-ret));
		return -1;
	}
	x->cm_max = cm_data_size(&x->pep->fid);
	local_abilities(x);
	describe_info(x, desc, sizeof(desc));
	addr_str(x->info->addr_format, addr, alen, astr, sizeof(astr));
	say("server: %s, listening at %s, control port %u\n", desc, astr, opt.port);
	if (oob_listen(x) || oob_accept(x))
		return -1;

	memset(&m, 0, sizeof(m));
	m.type = M_HELLO;
	m.v[0] = x->info->addr_format;
	m.v[1] = x->local_ok;
	m.v[2] = opt.ops;
	m.v[3] = x->info->domain_attr->cq_data_size;
	m.v[4] = x->info->ep_attr->max_msg_size;
	m.v[5] = x->cm_max;
	m.v[6] = alen;
	memcpy(m.blob, addr, alen < REASON_OFF ? alen : REASON_OFF);
	put_reasons(&m, x->local_why);
	scopy(m.text, sizeof(m.text), desc);
	/* The client opens its provider only now, with the address HELLO
	 * gives it, and answers when that is done: on a loaded host a start
	 * takes seconds (EAL and port: 9 s in CI, a client starting beside
	 * seven polling droce processes on two CPUs), which is part of
	 * waiting for a client (-w), not an operation's time (-t). */
	plan_ms = opt.accept_s ? opt.accept_s * 1000 : INT_MAX;
	if (plan_ms < opt.timeout_ms)
		plan_ms = opt.timeout_ms;
	if (oob_send(x, &m) || oob_recv(x, M_PLAN, &m, plan_ms))
		return -1;
	x->run_ops = (uint32_t)m.v[0];
	x->peer_ok = (uint32_t)m.v[1];
	x->req_ops = (uint32_t)m.v[2];
	x->iters = (unsigned int)m.v[3];
	x->cq_data_bytes = m.v[4];
	x->cm_len = m.v[5];
	x->max_msg = m.v[6];
	x->nsizes = (int)(m.v[7] > MAX_SIZES ? MAX_SIZES : m.v[7]);
	for (i = 0; i < x->nsizes; i++) {
		const uint8_t *p = m.blob + 8 * i;

		x->sizes[i] = get64(&p);
	}
	get_reasons(&m, x->peer_why);
	scopy(x->peer_desc, sizeof(x->peer_desc), m.text);
	/* the client's -o chose; ours limits (the client knows it already) */
	for (i = 0; i < OP_MAX; i++) {
		if (!(opt.ops & OP_BIT(i)) && !x->local_why[i][0])
			snprintf(x->local_why[i], REASON_LEN, "not in the server's -o");
		if (!(opt.ops & OP_BIT(i)))
			x->run_ops &= ~OP_BIT(i);
	}
	x->post_rx_for_cq_data = ((x->info->mode | x->info->rx_attr->mode) & FI_RX_CQ_DATA) != 0;
	say("server: client %s; %u iteration(s)%s\n", x->peer_desc, x->iters,
	    x->post_rx_for_cq_data ? "; posting receives for CQ data (FI_RX_CQ_DATA)" : "");

	memset(&m, 0, sizeof(m));
	m.type = M_BUF;
	ret = reg_buffer(x);
	if (ret) {
		m.status = 1;
		snprintf(m.text, sizeof(m.text), "server: fi_mr_reg: %s", fi_strerror(-ret));
	} else {
		m.v[0] = x->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ? (uintptr_t)x->buf : 0;
		m.v[1] = fi_mr_key(x->mr);
		m.v[2] = x->buf_len;
		m.v[3] = x->area_len;
		m.v[4] = x->run_ops;
	}
	if (oob_send(x, &m) || ret)
		return -1;

	server_accept(x);
	run_tests(x);
	if (opt.hold)
		hold(opt.hold);
	server_bye(x);
	return 0;
}

static int run_client(struct xfer *x)
{
	char node[INET6_ADDRSTRLEN], service[16], desc[160], astr[128];
	uint8_t addr[REASON_OFF];
	const char *nodep = NULL, *servicep = NULL;
	const void *dest = NULL;
	size_t alen;
	uint32_t fmt;
	struct msg m;
	int ret, i;

	if (oob_connect(x) || oob_recv(x, M_HELLO, &m, -1))
		return -1;
	fmt = (uint32_t)m.v[0];
	x->peer_ok = (uint32_t)m.v[1];
	alen = m.v[6] < sizeof(addr) ? m.v[6] : sizeof(addr);
	memcpy(addr, m.blob, alen);
	get_reasons(&m, x->peer_why);
	scopy(x->peer_desc, sizeof(x->peer_desc), m.text);

	/* an unspecified address (the server bound "any"): the server's host */
	if (fmt == FI_SOCKADDR_IN && alen >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in *s = (struct sockaddr_in *)addr;

		if (s->sin_addr.s_addr == htonl(INADDR_ANY))
			inet_pton(AF_INET, opt.server, &s->sin_addr);
		inet_ntop(AF_INET, &s->sin_addr, node, sizeof(node));
		snprintf(service, sizeof(service), "%u", ntohs(s->sin_port));
		nodep = node;
		servicep = service;
	} else if (fmt == FI_SOCKADDR_IN6 && alen >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)addr;

		if (IN6_IS_ADDR_UNSPECIFIED(&s->sin6_addr))
			inet_pton(AF_INET6, opt.server, &s->sin6_addr);
		inet_ntop(AF_INET6, &s->sin6_addr, node, sizeof(node));
		snprintf(service, sizeof(service), "%u", ntohs(s->sin6_port));
		nodep = node;
		servicep = service;
	} else {
		dest = addr;
	}
	addr_str(fmt, addr, alen, astr, sizeof(astr));
	ret = get_info(x, nodep, servicep, 0, fmt, dest, dest ? alen : 0);
	if (ret) {
		say("fi_getinfo(%s, FI_EP_MSG, to %s): %s\n", opt.prov ? opt.prov : "any provider",
		    astr, fi_strerror(-ret));
		return -1;
	}
	if (open_fabric(x) || conn_ep(x, x->info))
		return -1;
	x->cm_max = cm_data_size(&x->c.ep->fid);
	local_abilities(x);
	describe_info(x, desc, sizeof(desc));
	say("client: %s, server %s at %s\n", desc, x->peer_desc, astr);

	/* the plan: what the client asked for, that both sides can do */
	x->run_ops = opt.ops & x->local_ok & x->peer_ok;
	for (i = 0; i < OP_MAX; i++) {
		if (!(m.v[2] & OP_BIT(i)) && !x->peer_why[i][0])
			snprintf(x->peer_why[i], REASON_LEN, "not in the server's -o");
		if (!(m.v[2] & OP_BIT(i)))
			x->run_ops &= ~OP_BIT(i);
	}
	x->cq_data_bytes = x->info->domain_attr->cq_data_size;
	if (m.v[3] < x->cq_data_bytes)
		x->cq_data_bytes = m.v[3];
	if (x->cq_data_bytes > 8)
		x->cq_data_bytes = 8;
	x->max_msg = x->info->ep_attr->max_msg_size;
	if (m.v[4] < x->max_msg)
		x->max_msg = m.v[4];
	x->cm_len = CM_DATA_LEN;
	if (x->cm_max < x->cm_len)
		x->cm_len = x->cm_max;
	if (m.v[5] < x->cm_len)
		x->cm_len = m.v[5];
	if (!(x->run_ops & OP_BIT(OP_CM_DATA)))
		x->cm_len = 0;
	x->req_ops = opt.ops;
	x->iters = opt.iters;
	x->nsizes = opt.nsizes;
	memcpy(x->sizes, opt.sizes, sizeof(x->sizes));

	memset(&m, 0, sizeof(m));
	m.type = M_PLAN;
	m.v[0] = x->run_ops;
	m.v[1] = x->local_ok;
	m.v[2] = opt.ops;
	m.v[3] = x->iters;
	m.v[4] = x->cq_data_bytes;
	m.v[5] = x->cm_len;
	m.v[6] = x->max_msg;
	m.v[7] = (uint64_t)x->nsizes;
	for (i = 0; i < x->nsizes; i++) {
		uint8_t *p = m.blob + 8 * i;

		put64(&p, x->sizes[i]);
	}
	put_reasons(&m, x->local_why);
	scopy(m.text, sizeof(m.text), desc);
	if (oob_send(x, &m) || oob_recv(x, M_BUF, &m, -1))
		return -1;
	if (m.status) {
		say("%s\n", m.text);
		return -1;
	}
	x->peer_base = m.v[0];
	x->peer_key = m.v[1];
	x->peer_len = m.v[2];
	x->peer_area = m.v[3];
	x->run_ops = (uint32_t)m.v[4]; /* the server may have limited it */
	vlog("server buffer: base 0x%" PRIx64 ", key 0x%" PRIx64 ", %" PRIu64 " bytes\n",
	     x->peer_base, x->peer_key, x->peer_len);
	if (reg_buffer(x))
		return -1;
	if (x->peer_area != x->area_len) {
		say("the server's buffer layout differs (%" PRIu64 " vs %zu)\n", x->peer_area,
		    x->area_len);
		return -1;
	}
	client_connect(x);
	run_tests(x);
	if (opt.hold)
		hold(opt.hold);
	client_bye(x);
	return 0;
}

/* ---- command line ------------------------------------------------------------- */

static void usage(FILE *f)
{
	int op;

	fprintf(f,
		"usage: " PROG " [-p provider] [-d domain] [-a fabric_addr] [-s server] [-P port]\n"
		"                  [-o ops] [-S sizes] [-I iterations] [-t timeout] [-w wait]\n"
		"                  [-N] [-X fault] [-W n:file] [-G n:file] [-H fifo] [-v] [-h]\n"
		"  server without -s, client of the server (host name or address) with -s\n"
		"  -p provider   libfabric provider (droce, verbs, tcp, sockets...)\n"
		"  -d domain     domain name (e.g. a verbs device or an interface)\n"
		"  -a addr       server: the fabric address to listen on (fi_getinfo node)\n"
		"  -P port       control connection TCP port (default %d)\n"
		"  -o ops        comma list of all, rma, atomic or (default all):\n               ",
		DEFAULT_PORT);
	for (op = 0; op < OP_MAX; op++)
		fprintf(f, " %s", op_tab[op].name);
	fprintf(f,
		"\n"
		"  -S sizes      comma list, k/m suffixes (default 0,1,7,64,1023,1024,1025,\n"
		"                4096,65536,1048576,4194304); atomics use 8 bytes\n"
		"  -I n          iterations per operation and size (default 10)\n"
		"  -t seconds    timeout of every step (default 10)\n"
		"  -w seconds    server: how long to wait for a client (default 120, 0: forever)\n"
		"  -N            do not accept the FI_RX_CQ_DATA mode\n"
		"  -X fault      client, to test the tester: corrupt:OP[:ITER] flips a byte of\n"
		"                what it sends or writes, badkey:OP[:ITER] uses a wrong key\n"
		"  -W n:file     client: before the operation of iteration n, create file\n"
		"                and wait until it is removed (for test harnesses)\n"
		"  -G n:file     client: the same, at the first operation only\n"
		"  -H fifo       after the tests, before the disconnect: write one line\n"
		"                (\"held PID\") to fifo, then wait until it is opened for\n"
		"                writing and closed again (live counters read meanwhile)\n"
		"  -v            verbose (twice: every iteration)\n"
		"exit status: 0 when nothing failed, 1 when something failed, 2 on bad usage\n");
}

static int parse_ops(const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int op, ret = 0;

	if (!dup)
		return -1;
	opt.ops = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			opt.ops = OPS_ALL;
			continue;
		}
		if (!strcmp(tok, "rma")) {
			opt.ops |= OP_BIT(OP_WRITE) | OP_BIT(OP_WRITEDATA) | OP_BIT(OP_READ);
			continue;
		}
		if (!strcmp(tok, "atomic")) {
			opt.ops |= OP_BIT(OP_FETCH_ADD) | OP_BIT(OP_CSWAP) | OP_BIT(OP_ATOMIC_READ);
			continue;
		}
		for (op = 0; op < OP_MAX; op++)
			if (!strcmp(tok, op_tab[op].name))
				break;
		if (op == OP_MAX) {
			fprintf(stderr, PROG ": unknown operation '%s'\n", tok);
			ret = -1;
			break;
		}
		opt.ops |= OP_BIT(op);
	}
	free(dup);
	return ret;
}

static int parse_fault(const char *s)
{
	char kind[16], name[32];
	unsigned int iter = 0;
	int n, op;

	n = sscanf(s, "%15[a-z]:%31[a-z_]:%u", kind, name, &iter);
	if (n < 2)
		return -1;
	if (!strcmp(kind, "corrupt"))
		opt.fault = FAULT_CORRUPT;
	else if (!strcmp(kind, "badkey"))
		opt.fault = FAULT_BADKEY;
	else
		return -1;
	for (op = 0; op < OP_MAX; op++)
		if (!strcmp(name, op_tab[op].name))
			break;
	if (op == OP_MAX || op == OP_CM_DATA)
		return -1;
	opt.fault_op = op;
	opt.fault_iter = iter;
	return 0;
}

static int parse_sizes(const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL, *end;
	int ret = 0;

	if (!dup)
		return -1;
	opt.nsizes = 0;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long long v;

		errno = 0;
		v = strtoull(tok, &end, 0);
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		else if (*end == 'g' || *end == 'G')
			v <<= 30, end++;
		if (errno || end == tok || *end || v > MAX_SIZE || opt.nsizes == MAX_SIZES) {
			fprintf(stderr, PROG ": bad size '%s' (at most %d sizes of at most 1 GiB)\n",
				tok, MAX_SIZES);
			ret = -1;
			break;
		}
		opt.sizes[opt.nsizes++] = v;
	}
	free(dup);
	return ret || !opt.nsizes ? -1 : 0;
}

static int parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct xfer *x;
	long v;
	int c, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	opt.port = DEFAULT_PORT;
	opt.ops = OPS_ALL;
	opt.iters = 10;
	opt.timeout_ms = 10000;
	opt.accept_s = 120;
	opt.nsizes = (int)(sizeof(default_sizes) / sizeof(default_sizes[0]));
	memcpy(opt.sizes, default_sizes, sizeof(default_sizes));

	while ((c = getopt(argc, argv, "p:d:a:s:P:o:S:I:t:w:NX:W:G:H:vh")) != -1) {
		switch (c) {
		case 'p':
			opt.prov = optarg;
			break;
		case 'd':
			opt.domain = optarg;
			break;
		case 'a':
			opt.src_addr = optarg;
			break;
		case 's':
			opt.server = optarg;
			break;
		case 'P':
			if (parse_int(optarg, 1, 65535, &v))
				goto bad;
			opt.port = (unsigned int)v;
			break;
		case 'o':
			if (parse_ops(optarg))
				goto bad;
			break;
		case 'S':
			if (parse_sizes(optarg))
				goto bad;
			break;
		case 'I':
			if (parse_int(optarg, 1, 1000000, &v))
				goto bad;
			opt.iters = (unsigned int)v;
			break;
		case 't':
			if (parse_int(optarg, 1, 3600, &v))
				goto bad;
			opt.timeout_ms = (int)v * 1000;
			break;
		case 'w':
			if (parse_int(optarg, 0, 86400, &v))
				goto bad;
			opt.accept_s = (int)v;
			break;
		case 'N':
			opt.no_rx_cq_data = true;
			break;
		case 'X':
			if (parse_fault(optarg))
				goto bad;
			break;
		case 'W':
		case 'G': {
			char *end;

			opt.gate_once = c == 'G';
			opt.gate_iter = (unsigned int)strtoul(optarg, &end, 10);
			if (end == optarg || *end != ':' || !end[1])
				goto bad;
			opt.gate = end + 1;
			break;
		}
		case 'H':
			opt.hold = optarg;
			break;
		case 'v':
			opt.verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc)
		goto bad;

	x = calloc(1, sizeof(*x));
	if (!x)
		return 1;
	x->server = !opt.server;
	x->sock = -1;
	x->lsock = -1;
	x->cm_status = -1;
	ret = x->server ? run_server(x) : run_client(x);
	if (ret) {
		printf("FAIL setup: see above\n");
		x->failed++;
	}
	conn_close(x);
	if (x->mr)
		fi_close(&x->mr->fid);
	if (x->pep)
		fi_close(&x->pep->fid);
	if (x->peq)
		fi_close(&x->peq->fid);
	if (x->domain)
		fi_close(&x->domain->fid);
	if (x->fabric)
		fi_close(&x->fabric->fid);
	fi_freeinfo(x->info);
	fi_freeinfo(x->hints);
	if (x->sock >= 0)
		close(x->sock);
	if (x->lsock >= 0)
		close(x->lsock);
	free(x->buf);
	printf(PROG ": %u passed, %u failed, %u skipped\n", x->passed, x->failed, x->skipped);
	ret = x->failed ? 1 : 0;
	free(x);
	return ret;
bad:
	usage(stderr);
	return 2;
}
