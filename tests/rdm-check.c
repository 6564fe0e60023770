// SPDX-License-Identifier: BSD-2-Clause
/*
 * rdm-check: FI_EP_RDM between two processes over a layered provider
 * ("droce;ofi_rxm" by default), every operation's data verified.  The
 * server listens (fi_getinfo FI_SOURCE on ADDR:PORT); the client reaches
 * it there and introduces itself in its first message, so no side channel
 * is used.  Phases, each one line "ok ..." on stdout or a FAIL and exit 1:
 *
 *  hello      client -> server untagged: the client's address (AV insert)
 *  unexpected client -> server tagged messages of every protocol size of
 *             ofi_rxm (inject, eager, segmented, rendezvous: 0 B .. 1 MiB)
 *             sent before the server posts a receive (it waits for a later
 *             tagged marker, which RC delivers after them); fi_trecv
 *             FI_PEEK sees one, then receives posted in reverse order match
 *             each by tag
 *  expected   server -> client: the client posts tagged receives first
 *             (one with an ignore mask), then the server sends
 *  multi_recv client -> server untagged 4000 B messages into one
 *             FI_MULTI_RECV buffer of 32 KiB (min 2048): three arrive
 *             before it is posted (unexpected), five after; each lands at
 *             the next offset, the last completion carries FI_MULTI_RECV
 *  rma        client fi_write 512 KiB into the server's region, fi_read
 *             512 KiB back from it, fi_writedata 4 KiB with CQ data (the
 *             server's completion carries it); the server checks its
 *             region, guard bytes included
 *  atomic     client on the server's uint64: FI_SUM, fetching FI_SUM,
 *             FI_CSWAP (hit and miss), FI_ATOMIC_READ; the final value
 *             checked by both
 *
 *  peers     (-x) both ends know each other and send first at the same
 *             moment: ofi_rxm's simultaneous connection handling over
 *             droce's CM, tagged messages verified both ways
 *
 * Usage: rdm-check [-p PROV] -s ADDR [-P PORT]        (server)
 *        rdm-check [-p PROV] -c ADDR [-P PORT]        (client)
 *        rdm-check [-p PROV] -s ADDR -x PEER -g GOFILE [-P PORT]
 *             (a peer: sends first once GOFILE exists)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define WAIT_NS	 (30ull * 1000000000ull) /* any one completion */
#define MAX_ADDR 128
#define BIG	 (1u << 20) /* largest message, RMA region half */
#define GUARD	 64
#define POISON	 0xa5

/* control messages (untagged unless said) */
enum ctl {
	CTL_HELLO = 1,
	CTL_READY_EXPECTED,
	CTL_READY_MULTI,
	CTL_RMA_INFO,
	CTL_RMA_DONE,
	CTL_BYE
};

struct ctl_msg {
	uint32_t type;
	uint32_t len;		/* HELLO: address length */
	uint8_t addr[MAX_ADDR]; /* HELLO: the client's fi_getname */
	uint64_t rma_addr, rma_key, amo_addr, amo_key;
	uint64_t value; /* RMA_DONE: the atomic word as the client saw it */
};

#define TAG_UNEXP     0x1000u
#define TAG_MARK      0x1fffu
#define TAG_EXP	      0x2000u
#define TAG_WILD_BASE 0x2ff0u /* received with ignore 0xf */
#define TAG_WILD      0x2ff7u

static const size_t unexp_sizes[] = {0, 1, 63, 192, 1000, 4096, 16384, 16385, 65536, 200000, BIG};
#define N_UNEXP (sizeof(unexp_sizes) / sizeof(unexp_sizes[0]))
static const size_t exp_sizes[] = {8, 3000, 40000, 300000};
#define N_EXP (sizeof(exp_sizes) / sizeof(exp_sizes[0]))

#define MR_SIZE	 4000u /* each FI_MULTI_RECV message */
#define MR_BUF	 32768u
#define MR_MIN	 2048u
#define MR_EARLY 3
#define MR_COUNT 8

#define RMA_LEN	  (BIG / 2)
#define WDATA_OFF 600000u
#define WDATA_LEN 4096u
#define WDATA	  0xc0ffee42u
#define AMO_START 1000u

struct ctx {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
	bool server;
};

static const char *role = "?";

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	/* at once: no library destructor runs with the objects still open */
	_exit(1);
}

#define CHECK(call)                                                                                \
	do {                                                                                       \
		ssize_t ret_ = (call);                                                             \
		if (ret_)                                                                          \
			fail("%s: %s (%zd)", #call, fi_strerror((int)-ret_), ret_);                \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The byte at offset i of a message identified by seed. */
static uint8_t pat(uint64_t seed, size_t i)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;

	return (uint8_t)(x >> 56 ^ x >> 29 ^ i);
}

static void fill(uint8_t *b, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(seed, i);
}

/* b holds bytes from..from+len of message seed */
static void verify_at(const uint8_t *b, size_t len, uint64_t seed, size_t from, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(seed, from + i))
			fail("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, len, b[i],
			     pat(seed, from + i));
}

static void verify(const uint8_t *b, size_t len, uint64_t seed, const char *what)
{
	verify_at(b, len, seed, 0, what);
}

static void verify_poison(const uint8_t *b, size_t len, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != POISON)
			fail("%s: byte %zu is 0x%02x, not the poison 0x%02x", what, i, b[i],
			     POISON);
}

/* ---- completions --------------------------------------------------------- */

/* One completion within WAIT_NS; an error completion fails the run. */
static void cq_wait(struct ctx *c, struct fi_cq_tagged_entry *e, const char *what)
{
	uint64_t end = now_ns() + WAIT_NS;
	ssize_t ret;

	do {
		ret = fi_cq_read(c->cq, e, 1);
		if (ret == 1)
			return;
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};
			char buf[256];

			fi_cq_readerr(c->cq, &err, 0);
			fail("%s: error completion: %s (prov_errno %d: %s), len %zu, olen %zu",
			     what, fi_strerror(err.err), err.prov_errno,
			     fi_cq_strerror(c->cq, err.prov_errno, err.err_data, buf, sizeof(buf)),
			     err.len, err.olen);
		}
		if (ret != -FI_EAGAIN)
			fail("%s: fi_cq_read: %s", what, fi_strerror((int)-ret));
	} while (now_ns() < end);
	fail("%s: no completion within %llu s", what, WAIT_NS / 1000000000ull);
}

/* Completions until the one for context ctx (others are stashed, in
 * order, for their own wait_for). */
struct seen {
	struct fi_cq_tagged_entry e[64];
	int n;
};

static void wait_for(struct ctx *c, struct seen *s, void *ctx, struct fi_cq_tagged_entry *out,
		     const char *what)
{
	/* the oldest first: FI_MULTI_RECV completions share one context */
	for (int i = 0; i < s->n; i++)
		if (s->e[i].op_context == ctx) {
			*out = s->e[i];
			memmove(&s->e[i], &s->e[i + 1], (size_t)(s->n - i - 1) * sizeof(s->e[0]));
			s->n--;
			return;
		}
	for (;;) {
		struct fi_cq_tagged_entry e;

		cq_wait(c, &e, what);
		if (e.op_context == ctx) {
			*out = e;
			return;
		}
		if (s->n == 64)
			fail("%s: too many completions stashed", what);
		s->e[s->n++] = e;
	}
}

/* Post with the progress libfabric asks for when a queue is full. */
#define POST(c, call, what)                                                                        \
	do {                                                                                       \
		ssize_t r_;                                                                        \
		uint64_t end_ = now_ns() + WAIT_NS;                                                \
		while ((r_ = (call)) == -FI_EAGAIN && now_ns() < end_)                             \
			fi_cq_read((c)->cq, NULL, 0);                                              \
		if (r_)                                                                            \
			fail("%s: %s: %s", what, #call, fi_strerror((int)-r_));                    \
	} while (0)

/* ---- control messages ---------------------------------------------------- */

static struct seen stash;

static void ctl_send(struct ctx *c, struct ctl_msg *m)
{
	struct fi_context fctx;
	struct fi_cq_tagged_entry e;

	POST(c, fi_send(c->ep, m, sizeof(*m), NULL, c->peer, &fctx), "control send");
	wait_for(c, &stash, &fctx, &e, "control send");
	if (!(e.flags & FI_SEND) || !(e.flags & FI_MSG))
		fail("control send completion flags 0x%llx", (unsigned long long)e.flags);
}

static void ctl_post(struct ctx *c, struct ctl_msg *m, struct fi_context *fctx)
{
	memset(m, 0, sizeof(*m));
	POST(c, fi_recv(c->ep, m, sizeof(*m), NULL, FI_ADDR_UNSPEC, fctx), "control recv");
}

static void ctl_wait(struct ctx *c, struct ctl_msg *m, struct fi_context *fctx, uint32_t type)
{
	struct fi_cq_tagged_entry e;

	wait_for(c, &stash, fctx, &e, "control recv");
	if (!(e.flags & FI_RECV) || e.len != sizeof(*m) || m->type != type)
		fail("control message: type %u len %zu flags 0x%llx, expected type %u", m->type,
		     e.len, (unsigned long long)e.flags, type);
}

static void ctl_recv(struct ctx *c, struct ctl_msg *m, uint32_t type)
{
	struct fi_context fctx;

	ctl_post(c, m, &fctx);
	ctl_wait(c, m, &fctx, type);
}

/* ---- set-up -------------------------------------------------------------- */

static void open_all(struct ctx *c, const char *prov, const char *addr, const char *port)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fi_cq_attr cq_attr = {
	    .format = FI_CQ_FORMAT_TAGGED, .size = 1024, .wait_obj = FI_WAIT_NONE};
	size_t min = MR_MIN;

	if (!hints)
		fail("fi_allocinfo");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_MULTI_RECV;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	CHECK(
	    fi_getinfo(FI_VERSION(1, 17), addr, port, c->server ? FI_SOURCE : 0, hints, &c->info));
	fi_freeinfo(hints);
	if (c->info->domain_attr->cq_data_size < 4)
		fail("cq_data_size %zu", c->info->domain_attr->cq_data_size);
	CHECK(fi_fabric(c->info->fabric_attr, &c->fabric, NULL));
	CHECK(fi_domain(c->fabric, c->info, &c->domain, NULL));
	CHECK(fi_av_open(c->domain, &av_attr, &c->av, NULL));
	CHECK(fi_cq_open(c->domain, &cq_attr, &c->cq, NULL));
	CHECK(fi_endpoint(c->domain, c->info, &c->ep, NULL));
	CHECK(fi_ep_bind(c->ep, &c->av->fid, 0));
	CHECK(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_setopt(&c->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	CHECK(fi_enable(c->ep));
	printf("%s: %s, domain %s, fabric %s\n", role, c->info->fabric_attr->prov_name,
	       c->info->domain_attr->name, c->info->fabric_attr->name);
}

static void close_all(struct ctx *c)
{
	CHECK(fi_close(&c->ep->fid));
	CHECK(fi_close(&c->av->fid));
	CHECK(fi_close(&c->cq->fid));
	CHECK(fi_close(&c->domain->fid));
	CHECK(fi_close(&c->fabric->fid));
	fi_freeinfo(c->info);
}

/* Keys and addresses as the provider's mr_mode says (droce: its own keys
 * and virtual addresses; tcp;ofi_rxm, the reference: ours and offsets). */
static struct fid_mr *reg(struct ctx *c, void *buf, size_t len, uint64_t access, uint64_t key,
			  uint64_t *addr)
{
	int mode = c->info->domain_attr->mr_mode;
	struct fid_mr *mr;

	CHECK(fi_mr_reg(c->domain, buf, len, access, 0, mode & FI_MR_PROV_KEY ? 0 : key, 0, &mr,
			NULL));
	*addr = mode & FI_MR_VIRT_ADDR ? (uintptr_t)buf : 0;
	return mr;
}

/* ---- phases, server side ------------------------------------------------- */

static uint8_t *xalloc(size_t len)
{
	uint8_t *b = malloc(len ? len : 1);

	if (!b)
		fail("out of memory");
	memset(b, POISON, len);
	return b;
}

static void server_unexpected(struct ctx *c)
{
	struct fi_context fctx[N_UNEXP + 1];
	struct fi_cq_tagged_entry e;
	uint8_t *buf[N_UNEXP], mark[8];
	struct fi_msg_tagged msg;
	ssize_t ret;

	/* the marker follows every message on the same connection */
	POST(c, fi_trecv(c->ep, mark, sizeof(mark), NULL, c->peer, TAG_MARK, 0, &fctx[N_UNEXP]),
	     "trecv marker");
	wait_for(c, &stash, &fctx[N_UNEXP], &e, "marker");
	if (e.tag != TAG_MARK || e.len != sizeof(mark))
		fail("marker: tag 0x%llx len %zu", (unsigned long long)e.tag, e.len);

	/* peek at the last one: it is there, unexpected, and stays */
	memset(&msg, 0, sizeof(msg));
	msg.addr = c->peer;
	msg.tag = TAG_UNEXP + N_UNEXP - 1;
	msg.context = &fctx[0];
	ret = fi_trecvmsg(c->ep, &msg, FI_PEEK);
	if (ret)
		fail("fi_trecvmsg(FI_PEEK): %s", fi_strerror((int)-ret));
	wait_for(c, &stash, &fctx[0], &e, "peek");
	if (e.tag != TAG_UNEXP + N_UNEXP - 1 || e.len != unexp_sizes[N_UNEXP - 1])
		fail("peek: tag 0x%llx len %zu", (unsigned long long)e.tag, e.len);

	/* receive them in reverse order: matching is by tag */
	for (int i = (int)N_UNEXP - 1; i >= 0; i--) {
		buf[i] = xalloc(unexp_sizes[i] + GUARD);
		POST(c,
		     fi_trecv(c->ep, buf[i], unexp_sizes[i], NULL, c->peer, TAG_UNEXP + i, 0,
			      &fctx[i]),
		     "trecv unexpected");
	}
	for (int i = (int)N_UNEXP - 1; i >= 0; i--) {
		char what[64];

		snprintf(what, sizeof(what), "unexpected tagged %zu B", unexp_sizes[i]);
		wait_for(c, &stash, &fctx[i], &e, what);
		if (e.tag != TAG_UNEXP + (uint64_t)i || e.len != unexp_sizes[i] ||
		    !(e.flags & FI_TAGGED) || !(e.flags & FI_RECV))
			fail("%s: tag 0x%llx len %zu flags 0x%llx", what, (unsigned long long)e.tag,
			     e.len, (unsigned long long)e.flags);
		verify(buf[i], unexp_sizes[i], TAG_UNEXP + i, what);
		verify_poison(buf[i] + unexp_sizes[i], GUARD, what);
		free(buf[i]);
	}
	printf("ok unexpected: %zu tagged messages of 0 B .. %u B sent before any receive, "
	       "peeked, matched in reverse order, data verified\n",
	       N_UNEXP, BIG);
}

static void server_expected(struct ctx *c)
{
	struct fi_context fctx[N_EXP + 1];
	struct fi_cq_tagged_entry e;
	struct ctl_msg m = {.type = CTL_READY_EXPECTED};
	uint8_t *buf[N_EXP + 1];

	/* wait for the client's receives to be posted */
	ctl_recv(c, &m, CTL_READY_EXPECTED);
	for (size_t i = 0; i < N_EXP; i++) {
		buf[i] = xalloc(exp_sizes[i]);
		fill(buf[i], exp_sizes[i], TAG_EXP + i);
		POST(c, fi_tsend(c->ep, buf[i], exp_sizes[i], NULL, c->peer, TAG_EXP + i, &fctx[i]),
		     "tsend");
	}
	buf[N_EXP] = xalloc(64);
	fill(buf[N_EXP], 64, TAG_WILD);
	POST(c, fi_tsend(c->ep, buf[N_EXP], 64, NULL, c->peer, TAG_WILD, &fctx[N_EXP]),
	     "tsend wild");
	for (size_t i = 0; i <= N_EXP; i++) {
		wait_for(c, &stash, &fctx[i], &e, "tsend");
		if (!(e.flags & FI_SEND) || !(e.flags & FI_TAGGED))
			fail("tsend completion flags 0x%llx", (unsigned long long)e.flags);
		free(buf[i]);
	}
}

static void server_multi_recv(struct ctx *c)
{
	struct fi_context fctx, mfctx;
	struct fi_cq_tagged_entry e;
	struct ctl_msg m;
	uint8_t *buf = xalloc(MR_BUF + GUARD), mark[8];
	struct iovec iov = {.iov_base = buf, .iov_len = MR_BUF};
	struct fi_msg msg = {
	    .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &fctx};

	/* the first MR_EARLY arrive before the buffer: a tagged marker after
	 * them says they are in */
	POST(c, fi_trecv(c->ep, mark, sizeof(mark), NULL, c->peer, TAG_MARK, 0, &mfctx),
	     "trecv marker");
	wait_for(c, &stash, &mfctx, &e, "multi_recv marker");
	POST(c, fi_recvmsg(c->ep, &msg, FI_MULTI_RECV), "recvmsg FI_MULTI_RECV");
	for (unsigned i = 0; i < MR_COUNT; i++) {
		char what[64];
		bool last = (i + 1) * MR_SIZE > MR_BUF - MR_MIN;

		if (i == MR_EARLY) {
			m.type = CTL_READY_MULTI;
			ctl_send(c, &m);
		}
		snprintf(what, sizeof(what), "multi_recv message %u", i);
		wait_for(c, &stash, &fctx, &e, what);
		if (e.len != MR_SIZE || e.buf != buf + (size_t)i * MR_SIZE ||
		    !(e.flags & FI_RECV) || !!(e.flags & FI_MULTI_RECV) != last)
			fail("%s: len %zu at offset %td, flags 0x%llx (FI_MULTI_RECV expected %s)",
			     what, e.len, (uint8_t *)e.buf - buf, (unsigned long long)e.flags,
			     last ? "on this one" : "later");
		verify(e.buf, MR_SIZE, 0x3000 + i, what);
		if (last && i + 1 != MR_COUNT)
			fail("%s: buffer released early", what);
	}
	verify_poison(buf + MR_COUNT * MR_SIZE, MR_BUF - MR_COUNT * MR_SIZE + GUARD,
		      "multi_recv tail");
	free(buf);
	printf("ok multi_recv: %u untagged messages of %u B (%u unexpected) at consecutive "
	       "offsets of one %u B FI_MULTI_RECV buffer, FI_MULTI_RECV on the last, data "
	       "verified\n",
	       MR_COUNT, MR_SIZE, MR_EARLY, MR_BUF);
}

static void server_rma_atomic(struct ctx *c)
{
	size_t len = 2 * RMA_LEN + 2 * GUARD;
	uint8_t *region = xalloc(len), *r = region + GUARD;
	uint64_t *word = calloc(1, 64);
	struct fid_mr *mr, *amr;
	struct ctl_msg m = {.type = CTL_RMA_INFO};
	struct fi_cq_tagged_entry e;

	if (!word)
		fail("out of memory");
	fill(r + RMA_LEN, RMA_LEN, 0x5000); /* what the client reads */
	*word = AMO_START;
	mr = reg(c, r, 2 * RMA_LEN, FI_REMOTE_WRITE | FI_REMOTE_READ, 1, &m.rma_addr);
	amr = reg(c, word, 64, FI_REMOTE_WRITE | FI_REMOTE_READ, 2, &m.amo_addr);
	m.rma_key = fi_mr_key(mr);
	m.amo_key = fi_mr_key(amr);
	ctl_send(c, &m);

	/* fi_writedata's CQ data comes as a completion of its own */
	cq_wait(c, &e, "remote write with CQ data");
	if (!(e.flags & FI_REMOTE_CQ_DATA) || e.data != WDATA)
		fail("remote write completion: flags 0x%llx data 0x%llx, expected 0x%x",
		     (unsigned long long)e.flags, (unsigned long long)e.data, WDATA);
	ctl_recv(c, &m, CTL_RMA_DONE);
	verify_poison(region, GUARD, "rma front guard");
	verify_poison(r + 2 * RMA_LEN, GUARD, "rma back guard");
	verify(r, RMA_LEN, 0x4000, "rma: what fi_write put");
	verify(r + RMA_LEN, WDATA_OFF - RMA_LEN, 0x5000, "rma: before fi_writedata");
	verify(r + WDATA_OFF, WDATA_LEN, 0x6000, "rma: what fi_writedata put");
	verify_at(r + WDATA_OFF + WDATA_LEN, 2 * RMA_LEN - WDATA_OFF - WDATA_LEN, 0x5000,
		  WDATA_OFF + WDATA_LEN - RMA_LEN, "rma: after fi_writedata");
	printf("ok rma: fi_write %u B, fi_read %u B, fi_writedata %u B with CQ data 0x%x; region "
	       "and guards verified\n",
	       RMA_LEN, RMA_LEN, WDATA_LEN, WDATA);
	if (*word != m.value || m.value != 42)
		fail("atomic: the word is %llu, the client saw %llu, expected 42",
		     (unsigned long long)*word, (unsigned long long)m.value);
	printf("ok atomic: FI_SUM, fetching FI_SUM, FI_CSWAP miss and hit, FI_ATOMIC_READ on "
	       "the server's uint64: %u -> 42\n",
	       AMO_START);
	CHECK(fi_close(&mr->fid));
	CHECK(fi_close(&amr->fid));
	free(region);
	free(word);
}

static void server(struct ctx *c, const char *prov, const char *addr, const char *port)
{
	struct ctl_msg m;

	c->server = true;
	open_all(c, prov, addr, port);
	printf("server: listening\n");
	fflush(stdout);
	ctl_recv(c, &m, CTL_HELLO);
	if (m.len > MAX_ADDR || fi_av_insert(c->av, m.addr, 1, &c->peer, 0, NULL) != 1)
		fail("fi_av_insert of the client's address (%u bytes)", m.len);
	printf("ok hello: the client's address inserted\n");
	server_unexpected(c);
	server_expected(c);
	server_multi_recv(c);
	server_rma_atomic(c);
	m.type = CTL_BYE;
	ctl_send(c, &m);
	close_all(c);
}

/* ---- phases, client side ------------------------------------------------- */

static void client_unexpected(struct ctx *c)
{
	struct fi_context fctx[N_UNEXP + 1];
	struct fi_cq_tagged_entry e;
	uint8_t *buf[N_UNEXP], mark[8] = "marker";

	for (size_t i = 0; i < N_UNEXP; i++) {
		buf[i] = xalloc(unexp_sizes[i]);
		fill(buf[i], unexp_sizes[i], TAG_UNEXP + i);
		POST(
		    c,
		    fi_tsend(c->ep, buf[i], unexp_sizes[i], NULL, c->peer, TAG_UNEXP + i, &fctx[i]),
		    "tsend unexpected");
	}
	POST(c, fi_tsend(c->ep, mark, sizeof(mark), NULL, c->peer, TAG_MARK, &fctx[N_UNEXP]),
	     "tsend marker");
	for (size_t i = 0; i <= N_UNEXP; i++) {
		wait_for(c, &stash, &fctx[i], &e, "tsend unexpected");
		if (!(e.flags & FI_SEND) || !(e.flags & FI_TAGGED))
			fail("tsend completion flags 0x%llx", (unsigned long long)e.flags);
		if (i < N_UNEXP)
			free(buf[i]);
	}
	printf("ok unexpected: %zu tagged sends completed\n", N_UNEXP);
}

static void client_expected(struct ctx *c)
{
	struct fi_context fctx[N_EXP + 1];
	struct fi_cq_tagged_entry e;
	struct ctl_msg m = {.type = CTL_READY_EXPECTED};
	uint8_t *buf[N_EXP + 1];

	for (size_t i = 0; i < N_EXP; i++) {
		buf[i] = xalloc(exp_sizes[i] + GUARD);
		POST(c,
		     fi_trecv(c->ep, buf[i], exp_sizes[i], NULL, c->peer, TAG_EXP + i, 0, &fctx[i]),
		     "trecv");
	}
	buf[N_EXP] = xalloc(64 + GUARD);
	POST(
	    c,
	    fi_trecv(c->ep, buf[N_EXP], 64, NULL, FI_ADDR_UNSPEC, TAG_WILD_BASE, 0xf, &fctx[N_EXP]),
	    "trecv wild");
	ctl_send(c, &m);
	for (size_t i = 0; i <= N_EXP; i++) {
		size_t len = i < N_EXP ? exp_sizes[i] : 64;
		uint64_t tag = i < N_EXP ? TAG_EXP + i : TAG_WILD;
		char what[64];

		snprintf(what, sizeof(what), "expected tagged %zu B", len);
		wait_for(c, &stash, &fctx[i], &e, what);
		if (e.tag != tag || e.len != len || !(e.flags & FI_TAGGED) || !(e.flags & FI_RECV))
			fail("%s: tag 0x%llx len %zu flags 0x%llx", what, (unsigned long long)e.tag,
			     e.len, (unsigned long long)e.flags);
		verify(buf[i], len, tag, what);
		verify_poison(buf[i] + len, GUARD, what);
		free(buf[i]);
	}
	printf("ok expected: %zu tagged messages of 8 B .. 300000 B into receives posted first, "
	       "one through an ignore mask (tag 0x%x), data verified\n",
	       N_EXP + 1, TAG_WILD);
}

static void client_multi_recv(struct ctx *c)
{
	struct fi_context fctx[MR_COUNT + 1];
	struct fi_cq_tagged_entry e;
	struct ctl_msg m;
	uint8_t *buf[MR_COUNT], mark[8] = "marker";

	for (unsigned i = 0; i < MR_COUNT; i++) {
		buf[i] = xalloc(MR_SIZE);
		fill(buf[i], MR_SIZE, 0x3000 + i);
	}
	for (unsigned i = 0; i < MR_EARLY; i++)
		POST(c, fi_send(c->ep, buf[i], MR_SIZE, NULL, c->peer, &fctx[i]), "send early");
	POST(c, fi_tsend(c->ep, mark, sizeof(mark), NULL, c->peer, TAG_MARK, &fctx[MR_COUNT]),
	     "tsend marker");
	/* READY_MULTI: the buffer is posted and has taken the early ones */
	ctl_recv(c, &m, CTL_READY_MULTI);
	for (unsigned i = MR_EARLY; i < MR_COUNT; i++)
		POST(c, fi_send(c->ep, buf[i], MR_SIZE, NULL, c->peer, &fctx[i]), "send");
	for (unsigned i = 0; i <= MR_COUNT; i++) {
		wait_for(c, &stash, &fctx[i], &e, "multi_recv send");
		if (i < MR_COUNT)
			free(buf[i]);
	}
	printf("ok multi_recv: %u sends completed\n", MR_COUNT);
}

static void client_rma_atomic(struct ctx *c)
{
	struct ctl_msg info, m;
	struct fi_context fctx;
	struct fi_cq_tagged_entry e;
	uint8_t *w = xalloc(RMA_LEN), *rd = xalloc(RMA_LEN + GUARD), *wd = xalloc(WDATA_LEN);
	uint64_t operand, compare, result;

	ctl_recv(c, &info, CTL_RMA_INFO);
	fill(w, RMA_LEN, 0x4000);
	fill(wd, WDATA_LEN, 0x6000);
	POST(c, fi_write(c->ep, w, RMA_LEN, NULL, c->peer, info.rma_addr, info.rma_key, &fctx),
	     "fi_write");
	wait_for(c, &stash, &fctx, &e, "fi_write");
	if (!(e.flags & FI_WRITE) || !(e.flags & FI_RMA))
		fail("fi_write completion flags 0x%llx", (unsigned long long)e.flags);
	POST(c,
	     fi_read(c->ep, rd, RMA_LEN, NULL, c->peer, info.rma_addr + RMA_LEN, info.rma_key,
		     &fctx),
	     "fi_read");
	wait_for(c, &stash, &fctx, &e, "fi_read");
	if (!(e.flags & FI_READ) || !(e.flags & FI_RMA))
		fail("fi_read completion flags 0x%llx", (unsigned long long)e.flags);
	verify(rd, RMA_LEN, 0x5000, "fi_read");
	verify_poison(rd + RMA_LEN, GUARD, "fi_read guard");
	POST(c,
	     fi_writedata(c->ep, wd, WDATA_LEN, NULL, WDATA, c->peer, info.rma_addr + WDATA_OFF,
			  info.rma_key, &fctx),
	     "fi_writedata");
	wait_for(c, &stash, &fctx, &e, "fi_writedata");
	printf("ok rma: fi_write, fi_read (data verified), fi_writedata completed\n");

	/* atomics on the server's word: 1000 +5 -> 1005, +7 (fetch 1005) ->
	 * 1012, CSWAP 1 != 1012 (miss, fetch 1012), CSWAP 1012 -> 42 (hit),
	 * READ -> 42 */
	operand = 5;
	POST(c,
	     fi_atomic(c->ep, &operand, 1, NULL, c->peer, info.amo_addr, info.amo_key, FI_UINT64,
		       FI_SUM, &fctx),
	     "fi_atomic FI_SUM");
	wait_for(c, &stash, &fctx, &e, "fi_atomic");
	if (!(e.flags & FI_ATOMIC))
		fail("fi_atomic completion flags 0x%llx", (unsigned long long)e.flags);
	operand = 7;
	result = 0;
	POST(c,
	     fi_fetch_atomic(c->ep, &operand, 1, NULL, &result, NULL, c->peer, info.amo_addr,
			     info.amo_key, FI_UINT64, FI_SUM, &fctx),
	     "fi_fetch_atomic FI_SUM");
	wait_for(c, &stash, &fctx, &e, "fi_fetch_atomic");
	if (result != AMO_START + 5)
		fail("fetching FI_SUM returned %llu, expected %u", (unsigned long long)result,
		     AMO_START + 5);
	/* FI_CSWAP 42 twice: compare 1 misses, compare AMO_START + 12 hits and
	 * swaps; both return the value before, AMO_START + 12 */
	operand = 42;
	for (int hit = 0; hit < 2; hit++) {
		compare = hit ? AMO_START + 12 : 1;
		POST(c,
		     fi_compare_atomic(c->ep, &operand, 1, NULL, &compare, NULL, &result, NULL,
				       c->peer, info.amo_addr, info.amo_key, FI_UINT64, FI_CSWAP,
				       &fctx),
		     hit ? "fi_compare_atomic hit" : "fi_compare_atomic miss");
		wait_for(c, &stash, &fctx, &e, "fi_compare_atomic");
		if (result != AMO_START + 12)
			fail("FI_CSWAP (%s) returned %llu, expected %u", hit ? "hit" : "miss",
			     (unsigned long long)result, AMO_START + 12);
	}
	POST(c,
	     fi_fetch_atomic(c->ep, &operand, 1, NULL, &result, NULL, c->peer, info.amo_addr,
			     info.amo_key, FI_UINT64, FI_ATOMIC_READ, &fctx),
	     "fi_fetch_atomic FI_ATOMIC_READ");
	wait_for(c, &stash, &fctx, &e, "fi_fetch_atomic read");
	if (result != 42)
		fail("FI_ATOMIC_READ returned %llu, expected 42", (unsigned long long)result);
	printf("ok atomic: results 1005, 1012, 1012, 42 as expected\n");

	memset(&m, 0, sizeof(m));
	m.type = CTL_RMA_DONE;
	m.value = result;
	ctl_send(c, &m);
	free(w);
	free(rd);
	free(wd);
}

static void client(struct ctx *c, const char *prov, const char *addr, const char *port)
{
	struct ctl_msg m = {.type = CTL_HELLO};
	size_t len = MAX_ADDR;

	open_all(c, prov, addr, port);
	if (!c->info->dest_addr)
		fail("fi_getinfo gave no destination address");
	if (fi_av_insert(c->av, c->info->dest_addr, 1, &c->peer, 0, NULL) != 1)
		fail("fi_av_insert of the server's address");
	CHECK(fi_getname(&c->ep->fid, m.addr, &len));
	m.len = (uint32_t)len;
	ctl_send(c, &m);
	printf("ok hello: sent our address (%zu bytes)\n", len);
	client_unexpected(c);
	client_expected(c);
	client_multi_recv(c);
	client_rma_atomic(c);
	ctl_recv(c, &m, CTL_BYE);
	close_all(c);
}

/* ---- peers: both ends connect at once ------------------------------------ */

#define TAG_PEER     0x7000u
#define TAG_PEER_BYE 0x7fffu
static const size_t peer_sizes[] = {100, 5000, 70000, 300000};
#define N_PEER (sizeof(peer_sizes) / sizeof(peer_sizes[0]))

/* Each sends to the other first, at the same moment (when the go file
 * appears): both connections are set up at once and ofi_rxm keeps one
 * (its collision rule: the higher address's request wins, the other is
 * rejected with RXM_REJECT_EALREADY in the REJ's private data). */
static void peer(struct ctx *c, const char *prov, const char *addr, const char *peer_addr,
		 const char *port, const char *go)
{
	struct fi_context rctx[N_PEER + 1], sctx[N_PEER + 1];
	struct fi_cq_tagged_entry e;
	uint8_t *rbuf[N_PEER], *sbuf[N_PEER], bye[8] = "bye", pbye[8];
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
	uint64_t me, them, end;

	c->server = true;
	open_all(c, prov, addr, port);
	if (inet_pton(AF_INET, peer_addr, &sin.sin_addr) != 1)
		fail("%s is not an IPv4 address", peer_addr);
	if (fi_av_insert(c->av, &sin, 1, &c->peer, 0, NULL) != 1)
		fail("fi_av_insert of the peer's address");
	them = ntohl(sin.sin_addr.s_addr);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		fail("%s is not an IPv4 address", addr);
	me = ntohl(sin.sin_addr.s_addr);
	for (size_t i = 0; i < N_PEER; i++) {
		rbuf[i] = xalloc(peer_sizes[i] + GUARD);
		sbuf[i] = xalloc(peer_sizes[i]);
		fill(sbuf[i], peer_sizes[i], me << 16 | (TAG_PEER + i));
		POST(c,
		     fi_trecv(c->ep, rbuf[i], peer_sizes[i], NULL, c->peer, TAG_PEER + i, 0,
			      &rctx[i]),
		     "trecv peer");
	}
	POST(c, fi_trecv(c->ep, pbye, sizeof(pbye), NULL, c->peer, TAG_PEER_BYE, 0, &rctx[N_PEER]),
	     "trecv bye");
	printf("peer: listening\n");
	fflush(stdout);
	end = now_ns() + WAIT_NS;
	while (access(go, F_OK)) {
		if (now_ns() > end)
			fail("no go file %s", go);
		usleep(200);
	}
	for (size_t i = 0; i < N_PEER; i++)
		POST(c,
		     fi_tsend(c->ep, sbuf[i], peer_sizes[i], NULL, c->peer, TAG_PEER + i, &sctx[i]),
		     "tsend peer");
	for (size_t i = 0; i < N_PEER; i++) {
		char what[64];

		snprintf(what, sizeof(what), "peer's tagged %zu B", peer_sizes[i]);
		wait_for(c, &stash, &rctx[i], &e, what);
		if (e.tag != TAG_PEER + i || e.len != peer_sizes[i])
			fail("%s: tag 0x%llx len %zu", what, (unsigned long long)e.tag, e.len);
		verify(rbuf[i], peer_sizes[i], them << 16 | (TAG_PEER + i), what);
		verify_poison(rbuf[i] + peer_sizes[i], GUARD, what);
		wait_for(c, &stash, &sctx[i], &e, "tsend peer");
		free(rbuf[i]);
		free(sbuf[i]);
	}
	/* neither closes before both have all: a bye each way */
	POST(c, fi_tsend(c->ep, bye, sizeof(bye), NULL, c->peer, TAG_PEER_BYE, &sctx[N_PEER]),
	     "tsend bye");
	wait_for(c, &stash, &sctx[N_PEER], &e, "tsend bye");
	wait_for(c, &stash, &rctx[N_PEER], &e, "peer's bye");
	printf("ok peers: both sent first at once, %zu tagged messages of 100 B .. 300000 B each "
	       "way, data verified\n",
	       N_PEER);
	close_all(c);
}

int main(int argc, char **argv)
{
	const char *prov = "droce;ofi_rxm", *port = "47601", *saddr = NULL, *caddr = NULL;
	const char *paddr = NULL, *go = NULL;
	struct ctx c = {0};
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "p:s:c:P:x:g:")) != -1) {
		switch (opt) {
		case 'p':
			prov = optarg;
			break;
		case 's':
			saddr = optarg;
			break;
		case 'c':
			caddr = optarg;
			break;
		case 'P':
			port = optarg;
			break;
		case 'x':
			paddr = optarg;
			break;
		case 'g':
			go = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (!saddr == !caddr || (paddr && (!saddr || !go)))
		goto usage;
	role = paddr ? "peer" : saddr ? "server" : "client";
	if (paddr)
		peer(&c, prov, saddr, paddr, port, go);
	else if (saddr)
		server(&c, prov, saddr, port);
	else
		client(&c, prov, caddr, port);
	printf("PASS %s\n", role);
	return 0;

usage:
	fprintf(stderr,
		"usage: %s [-p PROV] [-P PORT] -s ADDR | -c ADDR | -s ADDR -x PEER -g GOFILE\n",
		argv[0]);
	return 2;
}
