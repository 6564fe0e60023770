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
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fi_fixture.h"

#define PAIR   "tel"
#define ROUNDS 40

static struct fx F;

static void sock_path(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	/* EAL's runtime directory (eal_create_runtime_dir), our prefix */
	if (geteuid() == 0)
		snprintf(buf, len, "/var/run/dpdk/droce-%d/dpdk_telemetry.v2", (int)getpid());
	else
		snprintf(buf, len, "%s/dpdk/droce-%d/dpdk_telemetry.v2", xdg && *xdg ? xdg : "/tmp",
			 (int)getpid());
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
	Suite *s = suite_create("telemetry");
	TCase *tc = tcase_create("telemetry");

	fx_env(PAIR);
	tcase_set_timeout(tc, 120);
	fx_add_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_counters_while_qps_close);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
