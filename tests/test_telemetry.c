// SPDX-License-Identifier: BSD-2-Clause
/*
 * The live counters (src/fi/telemetry.c) read through DPDK telemetry's
 * socket, as droce-stat reads them, from a thread of the process while its
 * QPs come and go (fi_fixture.h: two domains on an in-process link).
 *
 * The reader asks /droce/qps and then /droce/qp,N for each QPN listed,
 * and the ports' counters, without pause, while the main thread connects,
 * moves a message with an RNR NAK on the way (the send is posted before
 * the receive) and closes, round after round: every reply is whole (a QP
 * closed between the list and the question answers null), and the port
 * counters that sum the QPs' (rxe's names) count the closed QPs too, to
 * the unit: rcvd_rnr_err and send_rnr_err equal the RNR NAKs the QPs
 * counted (fi_droce_ops.counters: fx_counter, read before each close).
 *
 * And the sweep of stale telemetry sockets at EAL start (src/roce/port_eal.c,
 * sweep_stale): next to the directory the test process's EAL will make,
 * the runner plants a live sibling droce-N whose listener never accepts
 * and whose backlog is full, and a stale one whose socket nobody listens
 * on; EAL start must not wait for the live one (a blocking connect did,
 * until it accepted: forever here), keep it, and remove the stale one.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fi_fixture.h"

#define PAIR   "tel"
#define ROUNDS 40

static struct fx F;

/* with /droce-N/dpdk_telemetry.v2, the length of a sun_path */
#define BASE_LEN 72

/* EAL's runtime directories' parent (eal_create_runtime_dir, DPDK 22.11):
 * $RUNTIME_DIRECTORY, else /var/run for root, else $XDG_RUNTIME_DIR or
 * /tmp; then /dpdk.  Each droce process's directory in it is droce-PID. */
static int dpdk_base(char *buf, size_t len)
{
	const char *dir = getenv("RUNTIME_DIRECTORY");

	if (!dir)
		dir = getuid() == 0 ? "/var/run" : getenv("XDG_RUNTIME_DIR");
	return snprintf(buf, len, "%s/dpdk", dir ? dir : "/tmp");
}

static void sock_path(char *buf, size_t len)
{
	char base[BASE_LEN];

	/* EAL's runtime directory, our prefix */
	dpdk_base(base, sizeof(base));
	snprintf(buf, len, "%s/droce-%d/dpdk_telemetry.v2", base, (int)getpid());
}

static int tel_open(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char greeting[1024];
	int fd;

	sock_path(sun.sun_path, sizeof(sun.sun_path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0, "connect %s: %m",
		      sun.sun_path);
	ck_assert_int_gt(recv(fd, greeting, sizeof(greeting), 0), 0);
	return fd;
}

/* One command, its reply (NUL-terminated) in buf. */
static void tel_ask(int fd, const char *cmd, char *buf, size_t len)
{
	ssize_t n;

	ck_assert_int_eq(send(fd, cmd, strlen(cmd), 0), (ssize_t)strlen(cmd));
	n = recv(fd, buf, len - 1, 0);
	ck_assert_int_gt(n, 0);
	buf[n] = 0;
}

/* The number after "name": in a reply. */
static unsigned long long tel_num(const char *reply, const char *name)
{
	char key[80];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(reply, key);
	ck_assert_msg(p != NULL, "no %s in %s", name, reply);
	return strtoull(p + strlen(key), NULL, 10);
}

static volatile int reader_stop;
static unsigned long qp_answers, qp_gone, asks;
static uint64_t reader_ns;

static void *reader(void *arg)
{
	static char list[16384], reply[16384];
	int fd = tel_open();
	uint64_t t0 = fx_now_ns();

	(void)arg;
	while (!__atomic_load_n(&reader_stop, __ATOMIC_ACQUIRE)) {
		const char *p;

		tel_ask(fd, "/droce/qps", list, sizeof(list));
		ck_assert_msg(!strncmp(list, "{\"/droce/qps\":{", 15), "%s", list);
		/* {"/droce/qps":{"QPN":port,...}} (DPDK 22.11 writes no blanks) */
		for (p = strchr(list + 2, '{'); (p = strchr(p + 1, '"'));) {
			char cmd[64];
			unsigned long qpn = strtoul(p + 1, NULL, 10);

			p = strchr(p + 1, '"');
			snprintf(cmd, sizeof(cmd), "/droce/qp,%lu", qpn);
			tel_ask(fd, cmd, reply, sizeof(reply));
			if (!strcmp(reply, "{\"/droce/qp\":null}")) {
				qp_gone++; /* closed since the list */
				continue;
			}
			ck_assert_msg(strstr(reply, "\"state\":\"") && tel_num(reply, "qpn") == qpn,
				      "%s", reply);
			qp_answers++;
			asks++;
		}
		tel_ask(fd, "/droce/port,1", reply, sizeof(reply));
		ck_assert_msg(strstr(reply, "\"rcvd_rnr_err\":"), "%s", reply);
		asks += 2;
	}
	reader_ns = fx_now_ns() - t0;
	close(fd);
	return NULL;
}

START_TEST(test_counters_while_qps_close)
{
	static char reply[2][16384];
	uint64_t rnr_rx = 0, rnr_tx = 0;
	unsigned long long sum_rx = 0, sum_tx = 0, qps = 0;
	pthread_t th;
	int fd;

	ck_assert_int_eq(pthread_create(&th, NULL, reader, NULL), 0);
	for (int r = 0; r < ROUNDS; r++) {
		struct fi_cq_data_entry e;
		char tx[64] = "counted", rx[64];
		struct fx_conn c;

		fx_connect(&F, &c);
		ck_assert_int_eq(fi_send(c.ep_a, tx, sizeof(tx), NULL, 0, tx), 0);
		/* B has no receive yet: its responder answers RNR NAK */
		fx_cq_drive(c.cq_a, c.cq_b, 5);
		ck_assert_int_eq(fi_recv(c.ep_b, rx, sizeof(rx), NULL, 0, rx), 0);
		ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
		ck_assert_int_eq(fx_cq_wait(c.cq_a, c.cq_b, &e), 1);
		rnr_rx += fx_counter(&c.ep_a->fid, "rx_rnr_naks");
		rnr_tx += fx_counter(&c.ep_b->fid, "tx_rnr_naks");
		fx_conn_close(&c);
	}
	__atomic_store_n(&reader_stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_ge(rnr_rx, ROUNDS); /* the scenario made them */
	ck_assert_uint_eq(rnr_rx, rnr_tx);
	ck_assert_uint_gt(qp_answers, 0); /* the reader ran among the QPs */

	fd = tel_open();
	/* closed endpoints' QPs go once their disconnect is over (the
	 * devices' progress threads): until then they are live, then they
	 * are summed as closed ones; both must give the same totals */
	for (uint64_t end = fx_now_ns() + 10 * FX_NS_PER_S;;) {
		bool last = fx_now_ns() > end;

		sum_rx = sum_tx = qps = 0;
		for (int p = 0; p < 2; p++) {
			tel_ask(fd, p ? "/droce/port,2" : "/droce/port,1", reply[p],
				sizeof(reply[p]));
			sum_rx += tel_num(reply[p], "rcvd_rnr_err");
			sum_tx += tel_num(reply[p], "send_rnr_err");
			qps += tel_num(reply[p], "qps");
		}
		ck_assert_uint_eq(sum_rx, rnr_rx);
		ck_assert_uint_eq(sum_tx, rnr_tx);
		if (qps == 0 || last)
			break;
		usleep(10000);
	}
	ck_assert_uint_eq(qps, 0);
	printf("RNR NAKs %llu; the reader's QP answers %lu, QPs closed under it %lu; "
	       "%lu questions in %.0f ms (%.1f us each)\n",
	       sum_rx, qp_answers, qp_gone, asks, reader_ns / 1e6,
	       asks ? reader_ns / 1e3 / (double)asks : 0.0);
	ck_assert_uint_eq(sum_rx, rnr_rx);
	ck_assert_uint_eq(sum_tx, rnr_tx);
	/* bad questions: null, and the connection goes on */
	tel_ask(fd, "/droce/port,99", reply[0], sizeof(reply[0]));
	ck_assert_str_eq(reply[0], "{\"/droce/port\":null}");
	tel_ask(fd, "/droce/qp,x", reply[0], sizeof(reply[0]));
	ck_assert_str_eq(reply[0], "{\"/droce/qp\":null}");
	tel_ask(fd, "/droce/ports,1", reply[0], sizeof(reply[0]));
	ck_assert_str_eq(reply[0], "{\"/droce/ports\":null}");
	tel_ask(fd, "/droce/ports", reply[0], sizeof(reply[0]));
	ck_assert_msg(strstr(reply[0], "\"1\":\"") && strstr(reply[0], "\"2\":\""), "%s", reply[0]);
	close(fd);
}
END_TEST

/* ---- the sweep of stale telemetry sockets at EAL start ------------------------------ */

/* EAL start's bound: it took 235-260 ms here (the sweep itself
 * microseconds), but the bound covers all of fx_open on a CI host that can
 * be loaded (an EAL start once took 11 s there); a sweep that waits for a
 * listener that never accepts never returns, so a long bound loses
 * nothing */
#define SWEEP_BOUND_S 60
#define SIB_PENDING   8 /* more than a backlog of 1 can hold */

/* The siblings the runner plants (in Check's parent, before the test's
 * child starts EAL; removed by the parent after it, whatever the test
 * did): [0] live, [1] stale.  Named droce-99PPPPPPPK (PPPPPPP: the
 * runner's PID, K: 1 or 2): ten digits, above any PID (pid_max is at
 * most 2^22), so no droce process's droce-PID, and no other runner's. */
static char sib_dir[2][128], sib_sock[2][sizeof(((struct sockaddr_un *)0)->sun_path)];
static bool sib_made[2];
static int sib_listen = -1, sib_pending[SIB_PENDING], sib_npending;
static char plant_err[256];
/* the test process's own runtime directory and socket, for the alarm */
static char own_sock[sizeof(sib_sock[0])], own_dir[sizeof(sib_sock[0])];

/* The first error (why: strerror(errno) if NULL); -1. */
static int plant_fail(const char *what, const char *path, const char *why)
{
	if (!plant_err[0])
		snprintf(plant_err, sizeof(plant_err), "%s %s: %s", what, path,
			 why ? why : strerror(errno));
	return -1;
}

/* A connect as the sweep makes it: 0, or -errno. */
static int connect_nb(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), ret;

	if (fd < 0)
		return -errno;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	ret = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) ? -errno : 0;
	close(fd);
	return ret;
}

static int bind_at(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Async-signal-safe (also the alarm's, under CK_FORK=no). */
static void sweep_unplant_files(void)
{
	for (int i = 0; i < 2; i++)
		if (sib_made[i]) {
			unlink(sib_sock[i]);
			rmdir(sib_dir[i]);
		}
}

static int plant(void)
{
	char base[BASE_LEN];
	int fd;

	if (dpdk_base(base, sizeof(base)) >= (int)sizeof(base)) {
		return plant_fail("runtime directory", base, "too long for a socket path");
	}
	/* EAL's own mkdir, made earlier: EAL never removes it */
	if (mkdir(base, 0700) && errno != EEXIST)
		return plant_fail("mkdir", base, NULL);
	for (int i = 0; i < 2; i++) {
		snprintf(sib_dir[i], sizeof(sib_dir[i]), "%s/droce-99%07d%d", base, (int)getpid(),
			 i + 1);
		if (snprintf(sib_sock[i], sizeof(sib_sock[i]), "%s/dpdk_telemetry.v2",
			     sib_dir[i]) >= (int)sizeof(sib_sock[i])) {
			return plant_fail("socket path in", sib_dir[i], "too long");
		}
		if (mkdir(sib_dir[i], 0700))
			return plant_fail("mkdir", sib_dir[i], NULL);
		sib_made[i] = true;
	}
	/* live: listening as DPDK's telemetry does (backlog 1), never
	 * accepting, its backlog filled with connections it never takes */
	sib_listen = bind_at(sib_sock[0]);
	if (sib_listen < 0 || listen(sib_listen, 1))
		return plant_fail("bind and listen", sib_sock[0], NULL);
	for (;;) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX};

		if (sib_npending == SIB_PENDING) {
			return plant_fail("listener", sib_sock[0], "backlog never full");
		}
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return plant_fail("socket for", sib_sock[0], NULL);
		strcpy(sun.sun_path, sib_sock[0]);
		if (!connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
			sib_pending[sib_npending++] = fd;
			continue;
		}
		close(fd);
		if (errno == EAGAIN)
			break; /* full: a blocking connect would wait */
		return plant_fail("connect", sib_sock[0], NULL);
	}
	/* stale: the socket file of a listener that is gone */
	fd = bind_at(sib_sock[1]);
	if (fd < 0)
		return plant_fail("bind", sib_sock[1], NULL);
	close(fd);
	return 0;
}

/* Unchecked fixture: no assertion (a failed unchecked setup skips the
 * teardown), the first error is the test's failure. */
static void sweep_plant(void)
{
	plant();
}

static void sweep_unplant(void)
{
	for (int i = 0; i < sib_npending; i++)
		close(sib_pending[i]);
	sib_npending = 0;
	if (sib_listen >= 0)
		close(sib_listen);
	sib_listen = -1;
	sweep_unplant_files();
}

static void sweep_alarm(int sig)
{
	static const char msg[] = "test_telemetry: EAL start did not return within "
				  "the bound: the sweep waits for the live sibling\n";

	ssize_t n;

	(void)sig;
	n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	sweep_unplant_files();
	/* killed, EAL's exit handlers will not remove ours */
	unlink(own_sock);
	rmdir(own_dir);
	raise(SIGALRM); /* SA_RESETHAND: the default action, Check reports it */
}

START_TEST(test_sweep_keeps_live_removes_stale)
{
	struct sigaction sa = {.sa_handler = sweep_alarm, .sa_flags = SA_RESETHAND | SA_NODEFER};
	struct stat st;
	uint64_t t0;
	struct fx f;

	ck_assert_msg(!plant_err[0], "planting the siblings: %s", plant_err);
	ck_assert_int_ge(sib_npending, 1);
	/* what the sweep will find: the live one's backlog full (a blocking
	 * connect would wait), nobody at the stale one's socket */
	ck_assert_int_eq(connect_nb(sib_sock[0]), -EAGAIN);
	ck_assert_int_eq(connect_nb(sib_sock[1]), -ECONNREFUSED);

	sock_path(own_sock, sizeof(own_sock));
	snprintf(own_dir, sizeof(own_dir), "%.*s", (int)(strrchr(own_sock, '/') - own_sock),
		 own_sock);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	alarm(SWEEP_BOUND_S);
	mark_point(); /* a signal's report: here or at fx_open's last check */
	t0 = fx_now_ns();
	fx_open(&f, PAIR, FI_MSG, 0); /* the first domain starts EAL, which sweeps */
	alarm(0);
	printf("EAL start with a live sibling (backlog full, %d pending) and a stale one: "
	       "%.1f ms\n",
	       sib_npending, (fx_now_ns() - t0) / 1e6);

	/* our own socket is there: the siblings are where the sweep looks */
	ck_assert_msg(!stat(own_sock, &st) && S_ISSOCK(st.st_mode), "own socket %s: %m", own_sock);
	/* the live one kept, still listening with its backlog full */
	ck_assert_msg(!stat(sib_dir[0], &st) && S_ISDIR(st.st_mode), "%s: %m", sib_dir[0]);
	ck_assert_msg(!stat(sib_sock[0], &st) && S_ISSOCK(st.st_mode), "%s: %m", sib_sock[0]);
	ck_assert_int_eq(connect_nb(sib_sock[0]), -EAGAIN);
	/* the stale one gone, its directory too */
	ck_assert_msg(stat(sib_sock[1], &st) && errno == ENOENT, "%s is still there", sib_sock[1]);
	ck_assert_msg(stat(sib_dir[1], &st) && errno == ENOENT, "%s is still there", sib_dir[1]);
	fx_close(&f);
}
END_TEST

static void setup(void)
{
	fx_open(&F, PAIR, FI_MSG, 0);
}

static void teardown(void)
{
	fx_close(&F);
}

int main(void)
{
	const char *fork = getenv("CK_FORK"), *only = getenv("CK_RUN_CASE");
	Suite *s = suite_create("telemetry");
	TCase *tc = tcase_create("telemetry");
	char rt[] = "/tmp/droce-tel-XXXXXX", rt_dpdk[sizeof(rt) + 8];
	int ret;

	/* EAL's runtime directories under one of this runner's own: in the
	 * shared /var/run/dpdk, a droce process of another test starting
	 * meanwhile (make -j) swept the stale sibling planted below before
	 * the test looked at it (CI: its connect gave ENOENT, not
	 * ECONNREFUSED) */
	if (!mkdtemp(rt)) {
		perror("test_telemetry: mkdtemp");
		return 99;
	}
	setenv("RUNTIME_DIRECTORY", rt, 1);
	snprintf(rt_dpdk, sizeof(rt_dpdk), "%s/dpdk", rt);

	fx_env(PAIR);
	tcase_set_timeout(tc, 120);
	fx_add_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_counters_while_qps_close);
	suite_add_tcase(s, tc);
	/* needs a process whose EAL has not started: its own child, or under
	 * CK_FORK=no (as Check reads it) the process if it runs this case alone */
	if (!fork || strcmp(fork, "no") || (only && !strcmp(only, "sweep"))) {
		tc = tcase_create("sweep");
		tcase_set_timeout(tc, 4 * SWEEP_BOUND_S); /* the alarm reports first */
		tcase_add_unchecked_fixture(tc, sweep_plant, sweep_unplant);
		tcase_add_test(tc, test_sweep_keeps_live_removes_stale);
		suite_add_tcase(s, tc);
	}
	ret = fx_run(s);
	/* each process's droce-PID directory went with it (port_eal.c) */
	rmdir(rt_dpdk);
	rmdir(rt);
	return ret;
}
