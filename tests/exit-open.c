// SPDX-License-Identifier: BSD-2-Clause
/*
 * A process that exits with everything of droce's still open (issue 11):
 * fabric, two domains on the two ends of an in-process link ("pair:"
 * devices, net_ring), EQs, CQs, a counter, MRs, a passive endpoint and a
 * connected pair of endpoints with traffic in flight.  libfabric's
 * destructor (fi_fini) then runs droce's cleanup and dlclose()s the
 * provider while droce's and DPDK's threads exist: tests/exit-open.sh runs
 * this many times and counts crashes.
 *
 * exit-open MODE [PCAP]: MODE says how the process leaves, each with its
 * own exit code, so that a run that ended any other way is seen:
 *   return  main returns 2
 *   exit    exit(3) from a function main calls
 *   thread  a second thread calls exit(4) while main spins in fi_cq_read
 *           with sends flowing
 *   busy    the devices' progress threads poll without pause (a CQ's wait
 *           fd was asked for), 64 MiB of writes are queued, and a second
 *           thread calls exit(5) while main sleeps in poll() on that fd
 *   late    exit(6); an exit handler that runs after libfabric's fi_fini
 *           (registered before it, see late_register) then closes every
 *           object, as an application whose objects outlive the library
 *           would, and must see each close succeed
 *   signal  main spins in fi_cq_read as in thread; a signal interrupts it
 *           there (possibly holding droce's locks) and its handler calls
 *           exit(7), as many programs' SIGINT handlers do
 * Every mode first moves messages and an RDMA write and verifies them byte
 * for byte, then prints "verified ..." and leaves with more in flight.
 * With PCAP, only domain a is used (the connection loops back through its
 * port) and its capture goes to that file: tests/exit-open.sh checks that
 * the file was closed properly (it ends with the interface statistics
 * block written at close) and holds the verified traffic.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <signal.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define NS_PER_S 1000000000ull
#define MSG_SIZE 4000 /* several packets at the 1024-byte path MTU */
#define NMSG	 16
#define RMA_SIZE (1u << 20)
#define CQ_DEPTH 256

enum mode { M_RETURN, M_EXIT, M_THREAD, M_BUSY, M_LATE, M_SIGNAL };
static const char *const mode_names[] = {"return", "exit", "thread", "busy", "late", "signal"};
static const int mode_codes[] = {2, 3, 4, 5, 6, 7};
static enum mode mode;

static struct fi_info *info_a, *info_b;
static struct fid_fabric *fabric;
static struct fid_domain *dom_a, *dom_b;
static struct fid_eq *eq_a, *eq_b;
static struct fid_cq *cq_a, *cq_b;
static struct fid_cntr *cntr_a;
static struct fid_pep *pep;
static struct fid_ep *ep_a, *ep_b;
static struct fid_mr *mr_tx, *mr_rx, *mr_rma;
static uint8_t *txbuf, *rxbuf, *rmabuf, *srcbuf;
static struct fid_mr *mr_src;

/* Any failure before the exit under test: a distinct code, never one of
 * mode_codes, and no "verified" line. */
static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "exit-open: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(99);
}

#define CHECK(call)                                                                                \
	do {                                                                                       \
		long _r = (long)(call);                                                            \
		if (_r)                                                                            \
			fail("%s:%d: %s = %ld (%s)", __FILE__, __LINE__, #call, _r,                \
			     fi_strerror((int)-_r));                                               \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint8_t pattern(unsigned msg, size_t i)
{
	return (uint8_t)(msg * 131 + i * 7 + (i >> 8));
}

/* ---- closing after fi_fini (mode late) ---------------------------------- */

/*
 * exit() runs its handlers last registered, first run.  libfabric's fi_fini
 * is a destructor: it runs from _dl_fini, which __libc_start_main registers
 * with __cxa_atexit before the program's own initialisers run.  A handler
 * registered from .preinit_array (run by the dynamic loader before that)
 * therefore runs after _dl_fini, after droce's cleanup and libfabric's
 * dlclose() of the provider: the latest an application's code can touch
 * its fabric objects.  It is registered for no DSO (atexit() would tie it
 * to this program, whose destructors run it early in _dl_fini).
 */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static void late_close(void *arg)
{
	struct fid *fids[] = {&ep_a->fid,   &ep_b->fid,	  &pep->fid,	&mr_tx->fid, &mr_rx->fid,
			      &mr_rma->fid, &mr_src->fid, &cntr_a->fid, &cq_a->fid,  &cq_b->fid,
			      &eq_a->fid,   &eq_b->fid,	  &dom_a->fid,	&dom_b->fid, &fabric->fid};
	unsigned bad = 0;

	if (mode != M_LATE)
		return;
	for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++) {
		int ret;

		if (!fids[i])
			continue;
		ret = fi_close(fids[i]);
		if (ret) {
			fprintf(stderr, "exit-open: late fi_close of object %zu: %d\n", i, ret);
			bad++;
		}
	}
	printf("late-closed %u errors\n", bad);
	fflush(stdout);
	if (bad)
		_exit(98);
}

static void late_register(void)
{
	__cxa_atexit(late_close, NULL, NULL);
}

__attribute__((section(".preinit_array"),
	       used)) static void (*const late_preinit)(void) = late_register;

/* ---- set-up ------------------------------------------------------------- */

static void get_infos(bool one_port)
{
	struct fi_info *hints = fi_allocinfo(), *all, *i;

	if (!hints)
		fail("fi_allocinfo");
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode =
	    FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("droce");
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &all));
	for (i = all; i; i = i->next) {
		if (!strcmp(i->domain_attr->name, "pair:exo:0"))
			info_a = fi_dupinfo(i);
		else if (!strcmp(i->domain_attr->name, "pair:exo:1"))
			info_b = fi_dupinfo(i);
	}
	fi_freeinfo(all);
	fi_freeinfo(hints);
	if (!info_a || (!one_port && !info_b))
		fail("droce's pair:exo devices not found");
}

static uint8_t *buf_reg(struct fid_domain *dom, size_t len, uint64_t access, struct fid_mr **mr)
{
	uint8_t *b = aligned_alloc(4096, len);

	if (!b)
		fail("out of memory");
	memset(b, 0, len);
	CHECK(fi_mr_reg(dom, b, len, access, 0, 0, 0, mr, NULL));
	return b;
}

static ssize_t eq_wait(struct fid_eq *eq, uint32_t *event, struct fi_eq_cm_entry *e)
{
	uint64_t end = now_ns() + 10 * NS_PER_S;
	ssize_t ret;

	do
		ret = fi_eq_read(eq, event, e, sizeof(*e), 0);
	while (ret == -FI_EAGAIN && now_ns() < end);
	return ret;
}

static void open_all(bool one_port)
{
	struct fi_eq_attr eqa = {.wait_obj = FI_WAIT_NONE};
	struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA,
				 .wait_obj = mode == M_BUSY ? FI_WAIT_FD : FI_WAIT_NONE,
				 .size = CQ_DEPTH};
	struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
	struct fi_eq_cm_entry ent;
	struct sockaddr_in server;
	size_t len = sizeof(server);
	uint32_t event;

	CHECK(fi_fabric(info_a->fabric_attr, &fabric, NULL));
	CHECK(fi_domain(fabric, info_a, &dom_a, NULL));
	if (one_port)
		info_b = fi_dupinfo(info_a);
	CHECK(fi_domain(fabric, info_b, &dom_b, NULL));
	CHECK(fi_eq_open(fabric, &eqa, &eq_a, NULL));
	CHECK(fi_eq_open(fabric, &eqa, &eq_b, NULL));
	CHECK(fi_cq_open(dom_a, &cqa, &cq_a, NULL));
	CHECK(fi_cq_open(dom_b, &cqa, &cq_b, NULL));
	CHECK(fi_cntr_open(dom_a, &ca, &cntr_a, NULL));

	txbuf = buf_reg(dom_a, NMSG * MSG_SIZE, FI_SEND, &mr_tx);
	srcbuf = buf_reg(dom_a, RMA_SIZE, FI_WRITE, &mr_src);
	rxbuf = buf_reg(dom_b, NMSG * MSG_SIZE, FI_RECV, &mr_rx);
	rmabuf = buf_reg(dom_b, RMA_SIZE, FI_REMOTE_WRITE, &mr_rma);

	CHECK(fi_passive_ep(fabric, info_b, &pep, NULL));
	CHECK(fi_pep_bind(pep, &eq_b->fid, 0));
	CHECK(fi_listen(pep));
	CHECK(fi_getname(&pep->fid, &server, &len));

	CHECK(fi_endpoint(dom_a, info_a, &ep_a, NULL));
	CHECK(fi_ep_bind(ep_a, &eq_a->fid, 0));
	CHECK(fi_ep_bind(ep_a, &cq_a->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(ep_a, &cntr_a->fid, FI_WRITE));
	CHECK(fi_enable(ep_a));
	CHECK(fi_connect(ep_a, &server, NULL, 0));

	if (eq_wait(eq_b, &event, &ent) != sizeof(ent) || event != FI_CONNREQ)
		fail("no FI_CONNREQ");
	CHECK(fi_endpoint(dom_b, ent.info, &ep_b, NULL));
	fi_freeinfo(ent.info);
	CHECK(fi_ep_bind(ep_b, &eq_b->fid, 0));
	CHECK(fi_ep_bind(ep_b, &cq_b->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_accept(ep_b, NULL, 0));
	if (eq_wait(eq_a, &event, &ent) != sizeof(ent) || event != FI_CONNECTED ||
	    ent.fid != &ep_a->fid)
		fail("client not connected");
	if (eq_wait(eq_b, &event, &ent) != sizeof(ent) || event != FI_CONNECTED ||
	    ent.fid != &ep_b->fid)
		fail("server not connected");
}

/* ---- traffic ------------------------------------------------------------ */

static void post_recvs(void)
{
	for (unsigned m = 0; m < NMSG; m++)
		CHECK(fi_recv(ep_b, rxbuf + m * MSG_SIZE, MSG_SIZE, fi_mr_desc(mr_rx), 0,
			      (void *)(uintptr_t)(m + 1)));
}

static void post_sends(void)
{
	for (unsigned m = 0; m < NMSG; m++)
		CHECK(fi_send(ep_a, txbuf + m * MSG_SIZE, MSG_SIZE, fi_mr_desc(mr_tx), 0,
			      (void *)(uintptr_t)(m + 1)));
}

/* n completions from cq within 10 s, reading the other CQ meanwhile; each
 * must be successful and, on the receive side, carry MSG_SIZE bytes */
static void reap(struct fid_cq *cq, struct fid_cq *other, unsigned n, uint64_t flag)
{
	uint64_t end = now_ns() + 10 * NS_PER_S;
	struct fi_cq_data_entry e;
	unsigned got = 0;

	while (got < n) {
		ssize_t ret = fi_cq_read(cq, &e, 1);

		if (ret == -FI_EAGAIN) {
			fi_cq_read(other, NULL, 0);
			if (now_ns() > end)
				fail("%u of %u completions in 10 s", got, n);
			continue;
		}
		if (ret != 1)
			fail("fi_cq_read: %zd", ret);
		if (!(e.flags & flag))
			fail("completion flags %#llx", (unsigned long long)e.flags);
		if ((flag & FI_RECV) && e.len != MSG_SIZE)
			fail("received %zu bytes", e.len);
		got++;
	}
}

/* A round everything of which is checked: NMSG messages and one RDMA
 * write of RMA_SIZE bytes. */
static void verified_round(void)
{
	struct fi_cq_data_entry e;
	uint64_t end;

	for (unsigned m = 0; m < NMSG; m++)
		for (size_t i = 0; i < MSG_SIZE; i++)
			txbuf[m * MSG_SIZE + i] = pattern(m, i);
	for (size_t i = 0; i < RMA_SIZE; i++)
		srcbuf[i] = pattern(NMSG, i);
	post_recvs();
	post_sends();
	reap(cq_b, cq_a, NMSG, FI_RECV);
	reap(cq_a, cq_b, NMSG, FI_SEND);
	CHECK(fi_write(ep_a, srcbuf, RMA_SIZE, fi_mr_desc(mr_src), 0, (uintptr_t)rmabuf,
		       fi_mr_key(mr_rma), NULL));
	end = now_ns() + 10 * NS_PER_S;
	while (fi_cntr_read(cntr_a) < 1) {
		fi_cq_read(cq_b, &e, 0);
		if (fi_cntr_readerr(cntr_a) || now_ns() > end)
			fail("the write did not complete: counter %llu, errors %llu",
			     (unsigned long long)fi_cntr_read(cntr_a),
			     (unsigned long long)fi_cntr_readerr(cntr_a));
	}
	for (unsigned m = 0; m < NMSG; m++)
		for (size_t i = 0; i < MSG_SIZE; i++)
			if (rxbuf[m * MSG_SIZE + i] != pattern(m, i))
				fail("message %u byte %zu: %#x, want %#x", m, i,
				     rxbuf[m * MSG_SIZE + i], pattern(m, i));
	for (size_t i = 0; i < RMA_SIZE; i++)
		if (rmabuf[i] != pattern(NMSG, i))
			fail("written byte %zu: %#x, want %#x", i, rmabuf[i], pattern(NMSG, i));
	if (fi_cntr_read(cntr_a) != 1 || fi_cntr_readerr(cntr_a) != 0)
		fail("counter %llu, errors %llu, want 1 and 0",
		     (unsigned long long)fi_cntr_read(cntr_a),
		     (unsigned long long)fi_cntr_readerr(cntr_a));
	printf("verified %u messages of %u bytes, write of %u bytes, counter 1\n", NMSG, MSG_SIZE,
	       RMA_SIZE);
	fflush(stdout);
}

/* What is in flight when the process leaves: receives and sends posted,
 * writes queued, nothing waited for. */
static void in_flight(unsigned writes)
{
	post_recvs();
	post_sends();
	for (unsigned w = 0; w < writes; w++) {
		ssize_t ret = fi_write(ep_a, srcbuf, RMA_SIZE, fi_mr_desc(mr_src), 0,
				       (uintptr_t)rmabuf, fi_mr_key(mr_rma), NULL);

		if (ret == -FI_EAGAIN)
			break; /* the send queue is full: enough in flight */
		CHECK(ret);
	}
}

/* ---- the ways out ------------------------------------------------------- */

static volatile unsigned spins; /* main's loops (thread, busy, signal) */
static pthread_t main_thread;

static void on_signal(int sig)
{
	exit(mode_codes[M_SIGNAL]);
}

static void *exiter(void *arg)
{
	/* leave while main is deep in its loop: fi_cq_read (thread, signal)
	 * or poll() with the progress threads at work (busy) */
	uint64_t end = now_ns() + 10 * NS_PER_S;

	while (__atomic_load_n(&spins, __ATOMIC_RELAXED) < 2000 && now_ns() < end)
		sched_yield();
	if (mode == M_SIGNAL) {
		pthread_kill(main_thread, SIGUSR1);
		for (;;)
			pause();
	}
	exit(mode_codes[mode]);
}

static void __attribute__((noreturn)) spin_in_cq_read(void)
{
	struct fi_cq_data_entry e[8];

	for (;;) {
		ssize_t n = fi_cq_read(cq_a, e, 8);

		/* every completed send is posted again (its receive too): the
		 * link stays busy */
		for (ssize_t i = 0; i < n; i++) {
			unsigned m = (unsigned)(uintptr_t)e[i].op_context - 1;

			if (m >= NMSG)
				continue; /* a write's (no context) */
			fi_recv(ep_b, rxbuf + m * MSG_SIZE, MSG_SIZE, fi_mr_desc(mr_rx), 0,
				e[i].op_context);
			fi_send(ep_a, txbuf + m * MSG_SIZE, MSG_SIZE, fi_mr_desc(mr_tx), 0,
				e[i].op_context);
		}
		fi_cq_read(cq_b, e, 8);
		__atomic_add_fetch(&spins, 1, __ATOMIC_RELAXED);
	}
}

static void __attribute__((noreturn)) sleep_on_fd(void)
{
	struct pollfd pfd = {.events = POLLIN};

	/* FI_GETWAIT: droce's devices now run their progress threads
	 * continuously (dev.c dr_dev_background) */
	CHECK(fi_control(&cq_b->fid, FI_GETWAIT, &pfd.fd));
	for (;;) {
		poll(&pfd, 1, 1);
		__atomic_add_fetch(&spins, 1, __ATOMIC_RELAXED);
	}
}

static void leave_by_exit(void)
{
	exit(mode_codes[M_EXIT]);
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_builddir");
	bool one_port = argc > 2;
	char path[4096];
	pthread_t t;
	unsigned m;

	for (m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
		if (argc > 1 && !strcmp(argv[1], mode_names[m]))
			break;
	if (m == sizeof(mode_names) / sizeof(mode_names[0])) {
		fprintf(stderr, "usage: exit-open return|exit|thread|busy|late|signal [PCAP]\n");
		return 97;
	}
	mode = m;
	/* before libfabric initialises: the provider from this build */
	snprintf(path, sizeof(path), "%s/.libs", top ? top : ".");
	setenv("FI_PROVIDER_PATH", path, 0);
	setenv("FI_PROVIDER", "droce", 1);
	if (one_port) {
		setenv("FI_DROCE_DEVICE", "pair:exo:0", 1);
		setenv("FI_DROCE_ADDR", "192.0.2.1/24", 1);
		setenv("FI_DROCE_PCAP", argv[2], 1);
	} else {
		setenv("FI_DROCE_DEVICE", "pair:exo:0;pair:exo:1", 1);
		setenv("FI_DROCE_ADDR", "192.0.2.1/24;192.0.2.2/24", 1);
	}

	get_infos(one_port);
	open_all(one_port);
	verified_round();
	in_flight(mode == M_BUSY ? 64 : 4);

	switch (mode) {
	case M_RETURN:
		break;
	case M_EXIT:
		leave_by_exit();
		break;
	case M_THREAD:
	case M_BUSY:
	case M_SIGNAL:
		main_thread = pthread_self();
		signal(SIGUSR1, on_signal);
		if (pthread_create(&t, NULL, exiter, NULL))
			fail("pthread_create");
		if (mode != M_BUSY)
			spin_in_cq_read();
		sleep_on_fd();
	case M_LATE:
		exit(mode_codes[M_LATE]);
	}
	return mode_codes[M_RETURN];
}
