// SPDX-License-Identifier: BSD-2-Clause
/*
 * mtu-follow: connections made one after another by two long-lived droce
 * processes while the interface's MTU changes under them, for
 * tests/netns-mtu.sh.  Each process keeps ONE domain (one droce port) for
 * all its connections, so a connection made after a change shows whether
 * the port followed it.
 *
 *   mtu-follow -s ADDR -P PORT [-n CONNS]     server: one passive endpoint;
 *       serves CONNS connections (default 3), the next while the one before
 *       is still open; exits once the last has exchanged its messages
 *   mtu-follow -c ADDR -P PORT -g GATE [-n CONNS]    client
 *
 * For each connection k (1..CONNS) the client connects, both sides print
 *   conn K: path_mtu N
 * (fi_open_ops FI_DROCE_OPS_1 qp_info), then the client sends one message
 * of MSG_LEN bytes (not a multiple of any path MTU) and the server answers
 * with one of the same length; each side checks every byte and prints
 *   conn K: exchange ok
 * Between connections the client creates GATE and waits until it is
 * removed (the script changes the MTU meanwhile).  After the first gate
 * the client sends once more on connection 1, makes connection 2 and
 * exchanges on it while that send is under way, then prints how the send
 * ended and closes connection 1:
 *   conn 1: send after the change: ok | error ERR (prov_errno N)
 * At the end each side prints its port's counters
 *   port: link_mtu_changes=N tx_refused=N tx_dropped=N
 * Exit 0 when every exchange was byte-exact, 1 otherwise, 2 on bad usage.
 */
#include <getopt.h>
#include <inttypes.h>
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

#include "fi_ext_droce.h"

#define MSG_LEN	  (65536 + 100)
#define MAX_CONNS 8
#define WAIT_S	  20.0

struct conn {
	struct fid_ep *ep;
	struct fid_cq *cq;
	uint8_t *rbuf, *sbuf;
	int k;
	bool open, done;
};

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fi_droce_ops *ops;
static const char *me = "mtu-follow";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fail(const char *what, int ret)
{
	printf("%s: FAIL %s: %s\n", me, what, fi_strerror(ret < 0 ? -ret : ret));
	exit(1);
}

static uint8_t pattern(int k, int dir, size_t i)
{
	return (uint8_t)(i * 7 + (size_t)k * 13 + (size_t)dir * 101 + (i >> 8));
}

static void fill(uint8_t *b, int k, int dir)
{
	for (size_t i = 0; i < MSG_LEN; i++)
		b[i] = pattern(k, dir, i);
}

static bool check(const uint8_t *b, int k, int dir)
{
	for (size_t i = 0; i < MSG_LEN; i++)
		if (b[i] != pattern(k, dir, i)) {
			printf("%s: conn %d: byte %zu is 0x%02x, not 0x%02x\n", me, k, i, b[i],
			       pattern(k, dir, i));
			return false;
		}
	return true;
}

static void conn_setup(struct conn *c, struct fi_info *info, int k)
{
	struct fi_cq_attr cq_attr = {.size = 16, .format = FI_CQ_FORMAT_CONTEXT};
	int ret;

	memset(c, 0, sizeof(*c));
	c->k = k;
	c->rbuf = malloc(MSG_LEN);
	c->sbuf = malloc(MSG_LEN);
	if (!c->rbuf || !c->sbuf)
		fail("malloc", FI_ENOMEM);
	if ((ret = fi_cq_open(domain, &cq_attr, &c->cq, NULL)) ||
	    (ret = fi_endpoint(domain, info, &c->ep, NULL)) ||
	    (ret = fi_ep_bind(c->ep, &eq->fid, 0)) ||
	    (ret = fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(c->ep)))
		fail("endpoint setup", ret);
	ret = (int)fi_recv(c->ep, c->rbuf, MSG_LEN, NULL, 0, c->rbuf);
	if (ret)
		fail("fi_recv", ret);
}

static void conn_close(struct conn *c)
{
	if (c->ep)
		fi_close(&c->ep->fid);
	if (c->cq)
		fi_close(&c->cq->fid);
	free(c->rbuf);
	free(c->sbuf);
	memset(c, 0, sizeof(*c));
}

static void print_pmtu(struct conn *c)
{
	struct fi_droce_qp_info qi;
	int ret = ops->qp_info(c->ep, &qi);

	if (ret)
		fail("qp_info", ret);
	printf("%s: conn %d: path_mtu %" PRIu32 "\n", me, c->k, qi.path_mtu);
}

static void print_counters(void)
{
	struct fi_droce_counter cnt[256];
	size_t n = sizeof(cnt) / sizeof(cnt[0]);
	uint64_t changes = ~0ull, refused = ~0ull, dropped = ~0ull;

	if (ops->counters(&domain->fid, cnt, &n))
		fail("counters", FI_ETOOSMALL);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(cnt[i].name, "link_mtu_changes"))
			changes = cnt[i].value;
		if (!strcmp(cnt[i].name, "tx_refused"))
			refused = cnt[i].value;
		if (!strcmp(cnt[i].name, "tx_dropped"))
			dropped = cnt[i].value;
	}
	if (changes == ~0ull || refused == ~0ull || dropped == ~0ull)
		fail("no counter link_mtu_changes, tx_refused or tx_dropped", FI_ENOENT);
	printf("%s: port: link_mtu_changes=%" PRIu64 " tx_refused=%" PRIu64 " tx_dropped=%" PRIu64
	       "\n",
	       me, changes, refused, dropped);
}

/* One completion of c (or its error): 1, 0 if none within secs, -1 on an
 * error completion (printed into why). */
static int cq_wait(struct conn *c, double secs, void **ctx, char *why, size_t len)
{
	struct fi_cq_entry e;
	double end = now_s() + secs;

	for (;;) {
		ssize_t n = fi_cq_read(c->cq, &e, 1);

		if (n == 1) {
			*ctx = e.op_context;
			return 1;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};

			fi_cq_readerr(c->cq, &err, 0);
			snprintf(why, len, "%s (prov_errno %d)", fi_strerror(err.err),
				 err.prov_errno);
			*ctx = err.op_context;
			return -1;
		}
		if (n != -FI_EAGAIN)
			fail("fi_cq_read", (int)n);
		if (now_s() > end)
			return 0;
	}
}

/* An EQ event of the wanted kind within WAIT_S (FI_SHUTDOWNs of other
 * connections are taken in passing); fills entry. */
static void eq_want(uint32_t want, struct fi_eq_cm_entry *entry, const char *what)
{
	double end = now_s() + WAIT_S;

	for (;;) {
		uint32_t ev;
		ssize_t n = fi_eq_sread(eq, &ev, entry, sizeof(*entry), 100, 0);

		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = {0};

			fi_eq_readerr(eq, &err, 0);
			printf("%s: FAIL %s: EQ error %s (prov_errno %d)\n", me, what,
			       fi_strerror(err.err), err.prov_errno);
			exit(1);
		}
		if (n >= 0 && ev == want)
			return;
		if (n >= 0 && ev == FI_SHUTDOWN) {
			printf("%s: a connection was shut down\n", me);
			continue;
		}
		if (n >= 0) {
			printf("%s: FAIL %s: EQ event %u\n", me, what, ev);
			exit(1);
		}
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT)
			fail("fi_eq_sread", (int)n);
		if (now_s() > end) {
			printf("%s: FAIL %s: nothing within %.0f s\n", me, what, WAIT_S);
			exit(1);
		}
	}
}

/* Send one message on c (dir: 0 client, 1 server); wait for the send and,
 * unless answer is false, for the peer's message; check it. */
static bool exchange(struct conn *c, int dir, bool answer)
{
	bool got_tx = false, got_rx = !answer;
	char why[128];
	int ret;

	fill(c->sbuf, c->k, dir);
	ret = (int)fi_send(c->ep, c->sbuf, MSG_LEN, NULL, 0, c->sbuf);
	if (ret)
		fail("fi_send", ret);
	while (!got_tx || !got_rx) {
		void *ctx = NULL;

		ret = cq_wait(c, WAIT_S, &ctx, why, sizeof(why));
		if (ret < 0) {
			printf("%s: conn %d: FAIL: error completion: %s\n", me, c->k, why);
			return false;
		}
		if (!ret) {
			printf("%s: conn %d: FAIL: no completion within %.0f s\n", me, c->k,
			       WAIT_S);
			return false;
		}
		if (ctx == c->sbuf)
			got_tx = true;
		else if (ctx == c->rbuf) {
			if (!check(c->rbuf, c->k, !dir))
				return false;
			got_rx = true;
		}
	}
	return true;
}

static void gate(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		fail("cannot create the gate file", FI_EIO);
	fclose(f);
	while (access(path, F_OK) == 0)
		usleep(10000);
}

static int client(struct fi_info *info, const char *gpath, int conns)
{
	struct conn c[MAX_CONNS];
	struct fi_eq_cm_entry entry;
	char why[128];
	void *ctx;
	int ret;

	for (int k = 1; k <= conns; k++) {
		if (k > 1)
			gate(gpath);
		if (k == 2) {
			/* connection 1 after the change, under way while
			 * connection 2 is made and used */
			fill(c[0].sbuf, 1, 0);
			ret = (int)fi_send(c[0].ep, c[0].sbuf, MSG_LEN, NULL, 0, c[0].sbuf);
			if (ret)
				fail("fi_send on connection 1", ret);
		}
		conn_setup(&c[k - 1], info, k);
		ret = fi_connect(c[k - 1].ep, info->dest_addr, NULL, 0);
		if (ret)
			fail("fi_connect", ret);
		eq_want(FI_CONNECTED, &entry, "connect");
		print_pmtu(&c[k - 1]);
		if (!exchange(&c[k - 1], 0, true))
			return 1;
		printf("%s: conn %d: exchange ok\n", me, k);
		if (k == 2) {
			/* what became of connection 1's send */
			ret = cq_wait(&c[0], WAIT_S, &ctx, why, sizeof(why));
			printf("%s: conn 1: send after the change: %s%s\n", me,
			       ret > 0	 ? "ok"
			       : ret < 0 ? "error "
					 : "no completion",
			       ret < 0 ? why : "");
			conn_close(&c[0]);
		}
	}
	print_counters();
	for (int k = 2; k <= conns; k++)
		conn_close(&c[k - 1]);
	return 0;
}

static int server(struct fi_info *info, int conns)
{
	struct fid_pep *pep = NULL;
	struct conn c[MAX_CONNS];
	struct fi_eq_cm_entry entry;
	int ret;

	if ((ret = fi_passive_ep(fabric, info, &pep, NULL)) ||
	    (ret = fi_pep_bind(pep, &eq->fid, 0)) || (ret = fi_listen(pep)))
		fail("listen", ret);
	printf("%s: listening\n", me);
	fflush(stdout);
	for (int k = 1; k <= conns; k++) {
		eq_want(FI_CONNREQ, &entry, "connection request");
		conn_setup(&c[k - 1], entry.info, k);
		ret = fi_accept(c[k - 1].ep, NULL, 0);
		fi_freeinfo(entry.info);
		if (ret) {
			printf("%s: conn %d: FAIL: fi_accept: %s\n", me, k, fi_strerror(-ret));
			return 1;
		}
		eq_want(FI_CONNECTED, &entry, "accept");
		print_pmtu(&c[k - 1]);
		/* the client's message first, then the answer */
		{
			char why[128];
			void *ctx = NULL;

			ret = cq_wait(&c[k - 1], WAIT_S, &ctx, why, sizeof(why));
			if (ret <= 0 || ctx != c[k - 1].rbuf || !check(c[k - 1].rbuf, k, 0)) {
				printf("%s: conn %d: FAIL: %s\n", me, k,
				       ret < 0		      ? why
				       : !ret		      ? "no message"
				       : ctx != c[k - 1].rbuf ? "unexpected completion"
							      : "data");
				return 1;
			}
			ret = (int)fi_recv(c[k - 1].ep, c[k - 1].rbuf, MSG_LEN, NULL, 0,
					   c[k - 1].rbuf);
			if (ret)
				fail("fi_recv", ret);
		}
		if (!exchange(&c[k - 1], 1, false))
			return 1;
		printf("%s: conn %d: exchange ok\n", me, k);
		fflush(stdout);
	}
	print_counters();
	for (int k = 1; k <= conns; k++)
		conn_close(&c[k - 1]);
	fi_close(&pep->fid);
	return 0;
}

int main(int argc, char **argv)
{
	struct fi_eq_attr eq_attr = {.size = 16, .wait_obj = FI_WAIT_UNSPEC};
	const char *addr = NULL, *port = NULL, *gpath = NULL;
	struct fi_info *hints, *info = NULL;
	bool srv = false;
	int conns = 3, opt, ret, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "s:c:P:g:n:")) != -1) {
		switch (opt) {
		case 's':
			srv = true;
			addr = optarg;
			break;
		case 'c':
			addr = optarg;
			break;
		case 'P':
			port = optarg;
			break;
		case 'g':
			gpath = optarg;
			break;
		case 'n':
			conns = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!addr || !port || (!srv && !gpath) || conns < 1 || conns > MAX_CONNS) {
		fprintf(stderr, "usage: mtu-follow -s ADDR -P PORT [-n CONNS]\n"
				"       mtu-follow -c ADDR -P PORT -g GATE [-n CONNS]\n");
		return 2;
	}
	me = srv ? "mtu-follow[server]" : "mtu-follow[client]";
	hints = fi_allocinfo();
	if (!hints)
		return 2;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("droce");
	ret = fi_getinfo(FI_VERSION(1, 17), addr, port, srv ? FI_SOURCE : 0, hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		printf("%s: FAIL fi_getinfo: %s\n", me, fi_strerror(-ret));
		return 2;
	}
	if ((ret = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (ret = fi_domain(fabric, info, &domain, NULL)) ||
	    (ret = fi_eq_open(fabric, &eq_attr, &eq, NULL)) ||
	    (ret = fi_open_ops(&domain->fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL)))
		fail("setup", ret);
	rc = srv ? server(info, conns) : client(info, gpath, conns);
	fi_close(&eq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return rc;
}
