// SPDX-License-Identifier: BSD-2-Clause
/*
 * droce-rping - rdma-core's rping protocol over libfabric (FI_EP_MSG, any
 * provider; written for droce), so that rping on an rdma_rxe node can be
 * the client of droce or its server.
 *
 *   droce-rping -s [-a addr] [-p port] [-C count] [-S size] [-v] [-V] [-f prov] [-t secs]
 *   droce-rping -c -a addr [-p port] [-C count] [-S size] [-v] [-V] [-f prov] [-t secs]
 *
 * The wire conversation is rping's (librdmacm/examples/rping.c): an rdma_cm
 * connection to port 7174 (TCP port space), then per ping
 *
 *   client -> server  SEND  {be64 addr, be32 rkey, be32 len} of its start_buf
 *   server            RDMA READ of len bytes from there into its buffer
 *   server -> client  SEND  16 bytes "go ahead"
 *   client -> server  SEND  {addr, rkey, len} of its rdma_buf
 *   server            RDMA WRITE of strlen(buffer)+1 bytes there
 *   server -> client  SEND  16 bytes "go ahead"
 *
 * and the client disconnects after -C pings.  Like rping, every message
 * must be exactly 16 bytes.  The client fills start_buf with rping's text
 * ("rdma-ping-N: " then a rotating A..z pattern, NUL-terminated) and always
 * checks that what the server wrote back equals it (-V is accepted for
 * rping compatibility); the server checks what it read has rping's shape.
 *
 * Exit status: 0 when -C pings completed (client) or the client completed
 * -C pings and disconnected (server; with -C 0 any number); 1 otherwise.
 * Prints "droce-rping: listening on ADDR:PORT" once the server listens.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "../../tools/fiutil.h"

#define PROG "droce-rping"
#define RPING_PORT "7174"
#define RPING_MSG_FMT "rdma-ping-%d: "
#define RPING_MIN_SIZE 24 /* sizeof(stringify(INT_MAX)) + sizeof(RPING_MSG_FMT) in rping */
#define RPING_MAX_SIZE (64 * 1024 - 1)

struct rping_info { /* struct rping_rdma_info: big-endian on the wire */
	uint64_t buf;
	uint32_t rkey;
	uint32_t size;
} __attribute__((packed));

_Static_assert(sizeof(struct rping_info) == 16, "rping's message is 16 bytes");

static struct {
	bool server, verbose;
	const char *addr, *port, *prov;
	int count, size, timeout;
} opt = { .port = RPING_PORT, .prov = "droce", .count = 0, .size = 64, .timeout = 60 };

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_pep *pep;
static struct fid_ep *ep;
static struct fid_eq *eq;
static struct fid_cq *cq;
static struct fid_mr *recv_mr, *send_mr, *rdma_mr, *start_mr;
static struct rping_info recv_buf, send_buf;
static char *rdma_buf, *start_buf;
static struct fi_context recv_ctx, send_ctx, rdma_ctx;
static uint64_t deadline_ns;
static bool disconnected;

static void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static bool expired(const char *what)
{
	if (fiu_now_ns() < deadline_ns)
		return false;
	msg("timed out (%d s) waiting for %s", opt.timeout, what);
	return true;
}

static int fail(const char *what, int ret)
{
	msg("%s: %d (%s)", what, ret, fi_strerror(ret < 0 ? -ret : ret));
	return ret ? ret : -1;
}

/* One EQ event, or 0 when none (the read also drives manual progress). */
static int eq_poll(uint32_t *event, struct fi_eq_cm_entry *entry)
{
	ssize_t n = fi_eq_read(eq, event, entry, sizeof(*entry), 0);

	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL) {
		char text[256];
		int ret = fiu_eq_error(eq, text, sizeof(text));

		msg("EQ error: %s", text);
		return ret ? ret : -FI_EIO;
	}
	if (n < 0)
		return fail("fi_eq_read", (int)n);
	return 1;
}

static int eq_wait(uint32_t want, struct fi_eq_cm_entry *entry, const char *what)
{
	uint32_t event;
	int ret;

	while (!expired(what)) {
		ret = eq_poll(&event, entry);
		if (ret < 0)
			return ret;
		if (ret == 0)
			continue;
		if (event == want)
			return 0;
		if (event == FI_SHUTDOWN) {
			disconnected = true;
			msg("peer disconnected while waiting for %s", what);
			return -FI_ECONNRESET;
		}
		msg("unexpected EQ event %u while waiting for %s", event, what);
		return -FI_EOTHER;
	}
	return -FI_ETIMEDOUT;
}

/* Wait for the completion whose context is ctx; a FI_SHUTDOWN on the EQ ends
 * the wait with -FI_ECONNRESET (disconnected set). */
static int cq_wait(void *ctx, const char *what, size_t *len)
{
	struct fi_cq_msg_entry c;
	struct fi_eq_cm_entry entry;
	uint32_t event;
	ssize_t n;
	int ret;

	while (!expired(what)) {
		n = fi_cq_read(cq, &c, 1);
		if (n == 1) {
			if (c.op_context != ctx) {
				msg("completion for an unexpected context while waiting for %s", what);
				return -FI_EOTHER;
			}
			if (len)
				*len = c.len;
			return 0;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(cq, &err, 0);
			if (err.err == FI_ECANCELED) {
				/* flushed by the disconnect, as rping ignores
				 * IBV_WC_WR_FLUSH_ERR; FI_SHUTDOWN follows */
				disconnected = true;
				return -FI_ECONNRESET;
			}
			msg("%s failed: %s (prov_errno %d)", what, fi_strerror(err.err), err.prov_errno);
			return -err.err ? -err.err : -FI_EIO;
		}
		if (n != -FI_EAGAIN)
			return fail("fi_cq_read", (int)n);
		ret = eq_poll(&event, &entry);
		if (ret < 0)
			return ret;
		if (ret == 1 && event == FI_SHUTDOWN) {
			disconnected = true;
			return -FI_ECONNRESET;
		}
		if (ret == 1)
			msg("ignoring EQ event %u while waiting for %s", event, what);
	}
	return -FI_ETIMEDOUT;
}

static void *desc_of(struct fid_mr *mr)
{
	return fi_mr_desc(mr);
}

static int post_recv(void)
{
	ssize_t r;

	while ((r = fi_recv(ep, &recv_buf, sizeof(recv_buf), desc_of(recv_mr), 0, &recv_ctx)) ==
	       -FI_EAGAIN)
		; /* posting drives progress */
	return r ? fail("fi_recv", (int)r) : 0;
}

static int send_info(const char *what)
{
	ssize_t r;

	while ((r = fi_send(ep, &send_buf, sizeof(send_buf), desc_of(send_mr), 0, &send_ctx)) ==
	       -FI_EAGAIN)
		; /* posting drives progress */
	if (r)
		return fail("fi_send", (int)r);
	return cq_wait(&send_ctx, what, NULL);
}

/* Wait for one 16-byte message; rping refuses any other length. */
static int recv_info(const char *what)
{
	size_t len = 0;
	int ret = cq_wait(&recv_ctx, what, &len);

	if (ret)
		return ret;
	if (len != sizeof(recv_buf)) {
		msg("received bogus data, size %zu (rping sends 16)", len);
		return -FI_EOTHER;
	}
	return post_recv();
}

static void format_info(char *buf, struct fid_mr *mr)
{
	uint64_t key = fi_mr_key(mr);
	uint64_t addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uintptr_t)buf : 0;

	send_buf.buf = htobe64(addr);
	send_buf.rkey = htobe32((uint32_t)key);
	send_buf.size = htobe32((uint32_t)opt.size);
}

static int reg(void *buf, size_t len, uint64_t access, struct fid_mr **mr)
{
	int ret = fi_mr_reg(domain, buf, len, access, 0, 0, 0, mr, NULL);

	if (ret)
		return fail("fi_mr_reg", ret);
	if (fi_mr_key(*mr) > UINT32_MAX) {
		msg("MR key 0x%" PRIx64 " does not fit rping's 32-bit rkey", fi_mr_key(*mr));
		return -FI_EINVAL;
	}
	return 0;
}

/* Domain-level objects once the domain exists: CQ and the four buffers. */
static int open_resources(void)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE,
				      .size = 64 };
	int ret;

	ret = fi_cq_open(domain, &cq_attr, &cq, NULL);
	if (ret)
		return fail("fi_cq_open", ret);
	rdma_buf = calloc(1, (size_t)opt.size);
	start_buf = calloc(1, (size_t)opt.size);
	if (!rdma_buf || !start_buf)
		return -FI_ENOMEM;
	if ((ret = reg(&recv_buf, sizeof(recv_buf), FI_RECV, &recv_mr)) ||
	    (ret = reg(&send_buf, sizeof(send_buf), FI_SEND, &send_mr)) ||
	    (ret = reg(rdma_buf, (size_t)opt.size,
		       FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, &rdma_mr)) ||
	    (ret = reg(start_buf, (size_t)opt.size, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND,
		       &start_mr)))
		return ret;
	return 0;
}

static int open_ep(struct fi_info *fi)
{
	int ret = fi_endpoint(domain, fi, &ep, NULL);

	if (ret)
		return fail("fi_endpoint", ret);
	if ((ret = fi_ep_bind(ep, &eq->fid, 0)) ||
	    (ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)))
		return fail("fi_ep_bind", ret);
	if ((ret = fi_enable(ep)))
		return fail("fi_enable", ret);
	return post_recv();
}

static struct fi_info *hints_new(void)
{
	struct fi_info *h = fiu_msg_hints(opt.prov, FI_MSG | FI_RMA, FI_CONTEXT);

	if (!h)
		return NULL;
	/* rping's own choice: the family of the address it is given */
	h->addr_format = opt.addr && strchr(opt.addr, ':') ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	return h;
}

/* A ping's text as rping's client writes it. */
static void fill_ping(char *buf, int ping, int start)
{
	int cc = snprintf(buf, (size_t)opt.size, RPING_MSG_FMT, ping);
	unsigned char c = (unsigned char)start;

	for (int i = cc; i < opt.size; i++) {
		buf[i] = (char)c;
		if (++c > 122)
			c = 65;
	}
	buf[opt.size - 1] = 0;
}

static int run_client(void)
{
	struct fi_info *hints = hints_new();
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_cm_entry entry;
	int ret, ping, start = 65;

	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(FI_VERSION(1, 9), opt.addr, opt.port, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return fail("fi_getinfo", ret);
	if ((ret = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (ret = fi_eq_open(fabric, &eq_attr, &eq, NULL)) ||
	    (ret = fi_domain(fabric, info, &domain, NULL)))
		return fail("fabric/eq/domain", ret);
	if ((ret = open_resources()) || (ret = open_ep(info)))
		return ret;
	ret = fi_connect(ep, info->dest_addr, NULL, 0);
	if (ret)
		return fail("fi_connect", ret);
	if ((ret = eq_wait(FI_CONNECTED, &entry, "FI_CONNECTED")))
		return ret;
	msg("connected to %s:%s (provider %s)", opt.addr, opt.port, info->fabric_attr->prov_name);

	for (ping = 0; !opt.count || ping < opt.count; ping++) {
		fill_ping(start_buf, ping, start);
		if (++start > 122)
			start = 65;
		memset(rdma_buf, 0, (size_t)opt.size);
		format_info(start_buf, start_mr);
		if ((ret = send_info("the start_buf advertisement")) ||
		    (ret = recv_info("the server's go-ahead after its RDMA READ")))
			return ret;
		format_info(rdma_buf, rdma_mr);
		if ((ret = send_info("the rdma_buf advertisement")) ||
		    (ret = recv_info("the server's go-ahead after its RDMA WRITE")))
			return ret;
		if (memcmp(start_buf, rdma_buf, (size_t)opt.size)) {
			msg("ping %d: data mismatch: wrote \"%.40s...\", got back \"%.40s...\"", ping,
			    start_buf, rdma_buf);
			return -FI_EOTHER;
		}
		if (opt.verbose)
			printf("ping data: %s\n", rdma_buf);
	}
	printf(PROG ": client: %d pings of %d bytes ok\n", ping, opt.size);
	fflush(stdout);
	ret = fi_shutdown(ep, 0);
	if (ret)
		return fail("fi_shutdown", ret);
	return 0;
}

static int run_server(void)
{
	struct fi_info *hints = hints_new();
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_cm_entry entry;
	struct fi_info *conn;
	int ret, ping = 0;
	size_t n;

	if (!hints)
		return -FI_ENOMEM;
	ret = fi_getinfo(FI_VERSION(1, 9), opt.addr, opt.port, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return fail("fi_getinfo", ret);
	if ((ret = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (ret = fi_eq_open(fabric, &eq_attr, &eq, NULL)) ||
	    (ret = fi_passive_ep(fabric, info, &pep, NULL)) ||
	    (ret = fi_pep_bind(pep, &eq->fid, 0)) || (ret = fi_listen(pep)))
		return fail("passive endpoint", ret);
	printf(PROG ": listening on %s:%s (provider %s)\n", opt.addr ? opt.addr : "*", opt.port,
	       info->fabric_attr->prov_name);
	fflush(stdout);
	if ((ret = eq_wait(FI_CONNREQ, &entry, "a connection request")))
		return ret;
	conn = entry.info;
	if ((ret = fi_domain(fabric, conn, &domain, NULL)))
		return fail("fi_domain", ret);
	if ((ret = open_resources()) || (ret = open_ep(conn)))
		return ret;
	if ((ret = fi_accept(ep, NULL, 0)))
		return fail("fi_accept", ret);
	if ((ret = eq_wait(FI_CONNECTED, &entry, "FI_CONNECTED")))
		return ret;
	fi_freeinfo(conn);
	msg("client connected");

	for (;;) {
		uint64_t raddr;
		uint32_t rkey, rlen;
		ssize_t r;

		ret = recv_info("the client's start_buf advertisement");
		if (ret == -FI_ECONNRESET && disconnected)
			break;
		if (ret)
			return ret;
		raddr = be64toh(recv_buf.buf);
		rkey = be32toh(recv_buf.rkey);
		rlen = be32toh(recv_buf.size);
		if (rlen != (uint32_t)opt.size) {
			msg("client advertises %u bytes, we use -S %d", rlen, opt.size);
			return -FI_EOTHER;
		}
		memset(rdma_buf, 0, (size_t)opt.size);
		while ((r = fi_read(ep, rdma_buf, rlen, desc_of(rdma_mr), 0, raddr, rkey, &rdma_ctx)) ==
		       -FI_EAGAIN)
			; /* posting drives progress */
		if (r)
			return fail("fi_read", (int)r);
		if ((ret = cq_wait(&rdma_ctx, "the RDMA READ", NULL)))
			return ret;
		n = strnlen(rdma_buf, (size_t)opt.size);
		if (n != (size_t)opt.size - 1 || strncmp(rdma_buf, "rdma-ping-", 10)) {
			msg("ping %d: RDMA READ brought \"%.40s\" (%zu chars): not rping's text", ping,
			    rdma_buf, n);
			return -FI_EOTHER;
		}
		if (opt.verbose)
			printf("server ping data: %s\n", rdma_buf);
		memset(&send_buf, 0, sizeof(send_buf));
		if ((ret = send_info("the go-ahead after the READ")) ||
		    (ret = recv_info("the client's rdma_buf advertisement")))
			return ret;
		raddr = be64toh(recv_buf.buf);
		rkey = be32toh(recv_buf.rkey);
		while ((r = fi_write(ep, rdma_buf, n + 1, desc_of(rdma_mr), 0, raddr, rkey,
				     &rdma_ctx)) == -FI_EAGAIN)
			; /* posting drives progress */
		if (r)
			return fail("fi_write", (int)r);
		if ((ret = cq_wait(&rdma_ctx, "the RDMA WRITE", NULL)) ||
		    (ret = send_info("the go-ahead after the WRITE")))
			return ret;
		ping++;
	}
	printf(PROG ": server: %d pings of %d bytes, then the client disconnected\n", ping,
	       opt.size);
	fflush(stdout);
	if (opt.count && ping != opt.count) {
		msg("expected %d pings", opt.count);
		return -FI_EOTHER;
	}
	return 0;
}

static void close_all(void)
{
	struct fid_mr *mrs[] = { recv_mr, send_mr, rdma_mr, start_mr };

	if (ep)
		fi_close(&ep->fid);
	for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++)
		if (mrs[i])
			fi_close(&mrs[i]->fid);
	if (cq)
		fi_close(&cq->fid);
	if (pep)
		fi_close(&pep->fid);
	if (domain)
		fi_close(&domain->fid);
	if (eq)
		fi_close(&eq->fid);
	if (fabric)
		fi_close(&fabric->fid);
	if (info)
		fi_freeinfo(info);
	free(rdma_buf);
	free(start_buf);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: " PROG " -s [-a addr] [-p port] [-C count] [-S size] [-v] [-V] [-f prov] [-t secs]\n"
		   "       " PROG " -c -a addr [-p port] [-C count] [-S size] [-v] [-V] [-f prov] [-t secs]\n"
		   "  rping's protocol over libfabric FI_EP_MSG; -f provider (default droce),\n"
		   "  -t overall timeout in seconds (default 60); port default 7174\n");
}

int main(int argc, char **argv)
{
	int c, ret, mode = -1;

	while ((c = getopt(argc, argv, "sca:p:C:S:vVf:t:h")) != -1) {
		switch (c) {
		case 's': mode = 1; break;
		case 'c': mode = 0; break;
		case 'a': opt.addr = optarg; break;
		case 'p': opt.port = optarg; break;
		case 'C': opt.count = atoi(optarg); break;
		case 'S': opt.size = atoi(optarg); break;
		case 'v': opt.verbose = true; break;
		case 'V': break; /* the client always validates */
		case 'f': opt.prov = optarg; break;
		case 't': opt.timeout = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (mode < 0 || (mode == 0 && !opt.addr) || opt.count < 0 || opt.timeout <= 0 ||
	    opt.size < RPING_MIN_SIZE || opt.size > RPING_MAX_SIZE) {
		usage(stderr);
		return 2;
	}
	opt.server = mode == 1;
	deadline_ns = fiu_now_ns() + (uint64_t)opt.timeout * 1000000000ull;
	ret = opt.server ? run_server() : run_client();
	close_all();
	if (ret)
		msg("FAILED (%d: %s)", ret, fi_strerror(ret < 0 ? -ret : ret));
	return ret ? 1 : 0;
}
