// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_port - the ARP codec and the DPDK port layer, without root: DPDK's
 * EAL with --no-huge, two in-process ports joined back to back (net_ring
 * over two crossed rte_rings), 192.0.2.1/24 and 192.0.2.2/24 (RFC 5737
 * TEST-NET-1).
 *
 * EAL can start only once per process, so every case runs in this one
 * process, in order, in one Check test case with forking off (CK_FORK is
 * ignored).  The order matters at the start: the refused-EAL-arguments case
 * runs before EAL is up.  ARP timers are real DPDK timers: the unreachable
 * case uses 20 ms retries and polls until a deadline.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dr_port.h"
#include "dr_roce.h"
#include "../tools/pcapng.h"
#include "ck_run.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define IP_A		IP4(192, 0, 2, 1)
#define IP_B		IP4(192, 0, 2, 2)
#define IP_NOBODY	IP4(192, 0, 2, 77)
#define IP_FAKE		IP4(192, 0, 2, 99)
#define TEST_MTU	4200 /* room for a 4096-byte payload */
#define MAX_FRAME	9216
#define DEADLINE_NS	2000000000ull

static bool verbose;
static char last_warning[512];

static void test_log(void *ctx, enum dr_port_log_level level, const char *msg)
{
	static const char *const name[] = {"WARN", "INFO", "DEBUG"};

	if (level == DR_PORT_LOG_WARN)
		snprintf(last_warning, sizeof(last_warning), "%s", msg);
	if (verbose)
		fprintf(stderr, "[%s] %s\n", name[level], msg);
}

/* ---- per-port test state -------------------------------------------------- */

struct sink {
	unsigned rx;		  /* RoCE frames delivered */
	uint8_t frame[MAX_FRAME]; /* the last one */
	size_t len;
	unsigned hook_rx, hook_tx; /* frames seen by the frame hook */
	uint8_t arp_reply[64];	   /* the last ARP reply received */
	size_t arp_reply_len;
	unsigned arp_req_to_nobody; /* requests we sent for IP_NOBODY */
	unsigned neigh_events;
	uint32_t neigh_ip;
	int neigh_status;
};

static void sink_rx(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	struct sink *s = ctx;

	ck_assert_ptr_eq(pkt->frame, frame);
	ck_assert_uint_le(len, sizeof(s->frame));
	memcpy(s->frame, frame, len);
	s->len = len;
	s->rx++;
}

static void sink_hook(void *ctx, enum dr_port_dir dir, const void *frame, size_t len)
{
	struct sink *s = ctx;
	struct dr_arp_msg a;

	if (dir == DR_PORT_DIR_TX)
		s->hook_tx++;
	else
		s->hook_rx++;
	if (dr_arp_parse(frame, len, &a) != DR_ARP_OK)
		return;
	if (dir == DR_PORT_DIR_RX && a.op == DR_ARP_OP_REPLY && len <= sizeof(s->arp_reply)) {
		memcpy(s->arp_reply, frame, len);
		s->arp_reply_len = len;
	}
	if (dir == DR_PORT_DIR_TX && a.op == DR_ARP_OP_REQUEST && a.tpa == IP_NOBODY)
		s->arp_req_to_nobody++;
}

static void sink_neigh(void *ctx, uint32_t ip, int status)
{
	struct sink *s = ctx;

	s->neigh_events++;
	s->neigh_ip = ip;
	s->neigh_status = status;
}

static struct sink sink_a, sink_b;

static void cfg_init(struct dr_port_config *c, uint32_t ip)
{
	memset(c, 0, sizeof(*c));
	c->ip4 = ip;
	c->prefix_len = 24;
	c->mtu = TEST_MTU;
	c->arp.retry_ms = 20;
	c->arp.tries = 3;
	c->arp.failed_ms = 300;
}

static void attach(struct dr_port *p, struct sink *s)
{
	memset(s, 0, sizeof(*s));
	dr_port_set_rx(p, sink_rx, s);
	dr_port_set_frame_hook(p, sink_hook, s);
	dr_port_set_neigh_cb(p, sink_neigh, s);
}

static void open_pair(struct dr_port **a, struct dr_port **b, const char *pcap_a)
{
	struct dr_port_config ca, cb;
	struct dr_port_err err = {0};
	int ret;

	cfg_init(&ca, IP_A);
	cfg_init(&cb, IP_B);
	ca.pcap_path = pcap_a;
	ret = dr_port_open_pair(&ca, &cb, a, b, &err);
	ck_assert_msg(ret == 0, "open pair: %d %s", ret, err.msg);
	attach(*a, &sink_a);
	attach(*b, &sink_b);
}

static void close_pair(struct dr_port *a, struct dr_port *b)
{
	dr_port_close(a);
	dr_port_close(b);
}

static void poll_both(struct dr_port *a, struct dr_port *b)
{
	ck_assert_int_ge(dr_port_poll(a), 0);
	if (b)
		ck_assert_int_ge(dr_port_poll(b), 0);
}

/* Poll both until dr_port_resolve(from, ip) stops saying -EAGAIN. */
static int resolve_wait(struct dr_port *from, struct dr_port *other, uint32_t ip, uint8_t mac[6])
{
	uint64_t end = dr_port_now_ns() + DEADLINE_NS;
	int ret;

	while ((ret = dr_port_resolve(from, ip, mac)) == -EAGAIN && dr_port_now_ns() < end)
		poll_both(from, other);
	return ret;
}

static void poll_until_rx(struct dr_port *a, struct dr_port *b, struct sink *s, unsigned want)
{
	uint64_t end = dr_port_now_ns() + DEADLINE_NS;

	while (s->rx < want && dr_port_now_ns() < end)
		poll_both(a, b);
	ck_assert_uint_eq(s->rx, want);
}

/* A RoCE SEND_ONLY frame from a to b with a patterned payload. */
static int build_send(struct dr_pkt_desc *d, struct dr_port *from, struct dr_port *to,
		      const uint8_t *payload, uint32_t len, uint8_t *buf, size_t cap)
{
	dr_pkt_desc_init(d);
	dr_port_mac(from, d->src_mac);
	dr_port_mac(to, d->dst_mac);
	d->src_ip4 = dr_port_ip4(from);
	d->dst_ip4 = dr_port_ip4(to);
	d->ip_id = 0x1234;
	d->opcode = DR_OP_SEND_ONLY;
	d->dqpn = 0x11;
	d->ackreq = true;
	d->psn = 7;
	d->payload = payload;
	d->payload_len = len;
	return dr_pkt_build(d, buf, cap);
}

static uint8_t pattern[4096];

/* from sends a SEND of len pattern bytes to to; the frame is in buf */
static int send_pattern(struct dr_port *from, struct dr_port *to, uint32_t len, uint8_t *buf,
			size_t cap)
{
	struct dr_pkt_desc d;
	int n = build_send(&d, from, to, pattern, len, buf, cap);

	ck_assert_int_eq(dr_port_send(from, buf, n), 0);
	return n;
}

static void pattern_init(void)
{
	for (unsigned i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + (i >> 8));
}

/* ---- the ARP codec ----------------------------------------------------------------- */

static const uint8_t mac_a[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0a};
static const uint8_t mac_fake[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x99};

/* A request from 02:00:00:00:00:0a 192.0.2.1 for 192.0.2.2, laid out by hand
 * from RFC 826 (hardware type 1, protocol 0x0800, lengths 6 and 4, op 1),
 * zero-padded to 60 bytes; tshark reads it as "Who has 192.0.2.2? Tell
 * 192.0.2.1". */
static const uint8_t arp_req_vec[60] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x08, 0x06,
	0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a,
	0xc0, 0x00, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x02, 0x02,
};

START_TEST(test_arp_build)
{
	struct dr_arp_msg m, r, q;
	uint8_t buf[64];

	dr_arp_request(&m, mac_a, IP_A, IP_B);
	ck_assert_int_eq(dr_arp_build(&m, buf, sizeof(buf)), DR_ETH_ZLEN);
	ck_assert_mem_eq(buf, arp_req_vec, sizeof(arp_req_vec));
	ck_assert_int_eq(dr_arp_build(&m, buf, DR_ETH_ZLEN - 1), -ENOSPC);
	m.op = 3;
	ck_assert_int_eq(dr_arp_build(&m, buf, sizeof(buf)), -EINVAL);

	/* the reply to it, round trip through the parser */
	ck_assert_int_eq(dr_arp_parse(arp_req_vec, sizeof(arp_req_vec), &q), DR_ARP_OK);
	dr_arp_reply(&r, &q, mac_fake);
	ck_assert_int_eq(dr_arp_build(&r, buf, sizeof(buf)), DR_ETH_ZLEN);
	ck_assert_int_eq(dr_arp_parse(buf, DR_ETH_ZLEN, &m), DR_ARP_OK);
	ck_assert_uint_eq(m.op, DR_ARP_OP_REPLY);
	ck_assert_mem_eq(m.eth_dst, mac_a, 6);
	ck_assert_mem_eq(m.eth_src, mac_fake, 6);
	ck_assert_mem_eq(m.sha, mac_fake, 6);
	ck_assert_uint_eq(m.spa, IP_B);
	ck_assert_mem_eq(m.tha, mac_a, 6);
	ck_assert_uint_eq(m.tpa, IP_A);
	/* reply in place (req aliases the result) */
	dr_arp_reply(&q, &q, mac_fake);
	ck_assert_mem_eq(&q, &r, sizeof(q));
}
END_TEST

/* One mutation of the request vector per verdict, at the edges. */
static const struct {
	unsigned off; /* byte to change, or ~0u for none */
	uint8_t val;
	size_t len;
	enum dr_arp_verdict want;
} arp_parse_vec[] = {
	/* clang-format off */ /* one case per line */
	{~0u, 0x00, 60, DR_ARP_OK},
	{~0u, 0x00, 42, DR_ARP_OK},		/* no padding: still whole */
	{~0u, 0x00, 41, DR_ARP_SHORT},
	{~0u, 0x00, 13, DR_ARP_SHORT},
	{13, 0x00, 60, DR_ARP_NOT_ARP},		/* ethertype 0x0800 */
	{15, 0x06, 60, DR_ARP_BAD_HTYPE},	/* IEEE 802 (6) */
	{16, 0x86, 60, DR_ARP_BAD_PTYPE},	/* 0x8600 */
	{18, 0x08, 60, DR_ARP_BAD_HLEN},
	{19, 0x10, 60, DR_ARP_BAD_PLEN},
	{21, 0x00, 60, DR_ARP_BAD_OPER},	/* op 0 */
	{21, 0x03, 60, DR_ARP_BAD_OPER},	/* op 3 (RARP request) */
	{21, 0x02, 60, DR_ARP_OK},		/* op 2 */
	{22, 0x03, 60, DR_ARP_BAD_SHA},		/* multicast sender */
	{22, 0x00, 60, DR_ARP_OK},		/* 00:00:00:00:00:0a is fine */
	/* clang-format on */
};

START_TEST(test_arp_parse)
{
	struct dr_arp_msg m;
	uint8_t buf[60];

	for (unsigned i = 0; i < sizeof(arp_parse_vec) / sizeof(arp_parse_vec[0]); i++) {
		memcpy(buf, arp_req_vec, sizeof(buf));
		if (arp_parse_vec[i].off != ~0u)
			buf[arp_parse_vec[i].off] = arp_parse_vec[i].val;
		ck_assert_msg(dr_arp_parse(buf, arp_parse_vec[i].len, &m) == arp_parse_vec[i].want,
			      "vector %u: got '%s'", i,
			      dr_arp_verdict_str(dr_arp_parse(buf, arp_parse_vec[i].len, &m)));
	}
	/* an all-zero sender MAC */
	memcpy(buf, arp_req_vec, sizeof(buf));
	memset(buf + 22, 0, 6);
	ck_assert_int_eq(dr_arp_parse(buf, sizeof(buf), &m), DR_ARP_BAD_SHA);
	ck_assert_str_eq(dr_arp_verdict_str(DR_ARP_VERDICT_NUM), "invalid verdict");
	ck_assert_uint_eq(dr_port_pmtu_of(1500), 1024);
	ck_assert_uint_eq(dr_port_pmtu_of(9000), 4096);
	ck_assert_uint_eq(dr_port_pmtu_of(4176), 4096);
	ck_assert_uint_eq(dr_port_pmtu_of(4175), 2048);
}
END_TEST

/* ---- EAL ------------------------------------------------------------------------------ */

START_TEST(test_eal_refused_args)
{
	struct dr_port_err err = {0};

	/* before EAL is up: refused without touching EAL, so not sticky */
	ck_assert(!dr_port_eal_running());
	ck_assert_int_eq(dr_port_eal_init("--help", "pair:x:0", &err), -EINVAL);
	ck_assert_int_eq(err.param, DR_PORT_PARAM_EAL_ARGS);
	ck_assert_ptr_nonnull(strstr(err.msg, "--help"));
	ck_assert_int_eq(dr_port_eal_init("--log-level='warning", "pair:x:0", &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "quote"));
	ck_assert(!dr_port_eal_running());
}
END_TEST

/* EAL failing for real: in a child, since EAL starts once per process.
 * The child checks and exits with the number of the first check that
 * failed; EAL's usage text (stdout) and "EAL: FATAL" (stderr) go to
 * /dev/null. */
static int eal_child(const char *extra)
{
	struct dr_port_config a, b;
	struct dr_port_err err = {0};
	struct dr_port *pa, *pb;
	int devnull = open("/dev/null", O_WRONLY);

	dup2(devnull, 1);
	dup2(devnull, 2);
	cfg_init(&a, IP_A);
	cfg_init(&b, IP_B);
	if (!strcmp(extra, "-m 12")) {
		/* EAL starts, but the pools do not fit: the message says -m */
		if (dr_port_eal_init(extra, NULL, &err) != 0)
			return 1;
		if (dr_port_open_pair(&a, &b, &pa, &pb, &err) >= 0)
			return 2;
		if (err.param != DR_PORT_PARAM_NONE || !strstr(err.msg, "-m in the EAL"))
			return 3;
		return 0;
	}
	if (dr_port_eal_init(extra, NULL, &err) != -EINVAL)
		return 4;
	if (err.param != DR_PORT_PARAM_EAL_ARGS || !strstr(err.msg, "EAL failed to start: EAL: ") ||
	    !strstr(err.msg, extra))
		return 5;
	/* sticky, and what opening a port says too */
	if (dr_port_eal_init(NULL, NULL, &err) != -EINVAL || err.param != DR_PORT_PARAM_EAL_ARGS)
		return 6;
	if (dr_port_open_pair(&a, &b, &pa, &pb, &err) != -EINVAL ||
	    err.param != DR_PORT_PARAM_EAL_ARGS)
		return 7;
	return 0;
}

static void run_eal_child(const char *extra)
{
	pid_t pid;
	int status;

	ck_assert(!dr_port_eal_running()); /* fork before EAL has threads */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(eal_child(extra));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "'%s': child died (signal %d)", extra,
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ck_assert_msg(WEXITSTATUS(status) == 0, "'%s': check %d failed in the child", extra,
		      WEXITSTATUS(status));
}

START_TEST(test_eal_failure)
{
	run_eal_child("--no-such-eal-option");
	run_eal_child("--iova-mode=nonsense");
	run_eal_child("-m 12");
}
END_TEST

START_TEST(test_eal_start)
{
	struct dr_port_err err = {0};
	cpu_set_t before, after;
	char dir[256];
	struct stat st;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(before), &before), 0);
	ck_assert_msg(dr_port_eal_init(NULL, "pair:x:0", &err) == 0, "%s", err.msg);
	ck_assert(dr_port_eal_running());
	/* the calling thread is not re-pinned */
	ck_assert_int_eq(sched_getaffinity(0, sizeof(after), &after), 0);
	ck_assert(CPU_EQUAL(&before, &after));
	/* telemetry on by default: the runtime directory holds its socket and
	 * nothing else (no shared config), until exit (tests/netns-stat.sh) */
	snprintf(dir, sizeof(dir), "/droce-%d/dpdk_telemetry.v2", (int)getpid());
	ck_assert_uint_gt(strlen(dr_tel_socket()), strlen(dir));
	ck_assert_str_eq(dr_tel_socket() + strlen(dr_tel_socket()) - strlen(dir), dir);
	ck_assert_int_eq(stat(dr_tel_socket(), &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	{
		char *d = strdup(dr_tel_socket());
		DIR *dd;
		struct dirent *de;
		int n = 0;

		ck_assert_ptr_nonnull(d);
		*strrchr(d, '/') = 0;
		dd = opendir(d);
		ck_assert_ptr_nonnull(dd);
		while ((de = readdir(dd)))
			n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
		closedir(dd);
		free(d);
		ck_assert_int_eq(n, 1);
	}
	/* once up, later calls are no-ops whatever their arguments */
	ck_assert_int_eq(dr_port_eal_init("--bogus", "pair:x:0", &err), 0);
}
END_TEST

/* ---- bad configuration: a clean error naming what to fix ---------------------- */

static void expect_open_fail(const char *device, uint32_t ip, unsigned prefix, unsigned mtu,
			     const char *pcap, enum dr_port_param param)
{
	struct dr_port_config c;
	struct dr_port_err err = {0};
	struct dr_port *p = (struct dr_port *)1;
	int ret;

	cfg_init(&c, ip);
	c.device = device;
	c.prefix_len = prefix;
	c.mtu = mtu;
	c.pcap_path = pcap;
	ret = dr_port_open(&c, &p, &err);
	ck_assert_msg(ret < 0, "%s opened", device);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(err.err, ret);
	ck_assert_msg(err.param == param, "%s: blamed %d, not %d (%s)", device, err.param, param,
		      err.msg);
	ck_assert(err.msg[0]);
	if (verbose)
		fprintf(stderr, "expected failure: %s\n", err.msg);
}

START_TEST(test_bad_config)
{
	expect_open_fail(NULL, IP_A, 24, 0, NULL, DR_PORT_PARAM_DEVICE);
	expect_open_fail("eth0", IP_A, 24, 0, NULL, DR_PORT_PARAM_DEVICE);
	expect_open_fail("net_bogus0,foo=1", IP_A, 24, 0, NULL, DR_PORT_PARAM_DEVICE);
	expect_open_fail("net_af_packet0,iface=droce-no-such-if", IP_A, 24, 0, NULL,
			 DR_PORT_PARAM_DEVICE);
	expect_open_fail("0000:ff:1f.7", IP_A, 24, 0, NULL, DR_PORT_PARAM_DEVICE);
	expect_open_fail("pair:bad name:0", IP_A, 24, 0, NULL, DR_PORT_PARAM_DEVICE);
	expect_open_fail("pair:ok:2", IP_A, 24, 0, NULL, DR_PORT_PARAM_DEVICE);
	expect_open_fail("pair:bad:0", 0, 24, 0, NULL, DR_PORT_PARAM_ADDR);
	expect_open_fail("pair:bad:0", IP_A, 0, 0, NULL, DR_PORT_PARAM_ADDR);
	expect_open_fail("pair:bad:0", IP_A, 33, 0, NULL, DR_PORT_PARAM_ADDR);
	expect_open_fail("pair:bad:0", IP4(127, 0, 0, 1), 8, 0, NULL, DR_PORT_PARAM_ADDR);
	expect_open_fail("pair:bad:0", IP4(192, 0, 2, 255), 24, 0, NULL, DR_PORT_PARAM_ADDR);
	expect_open_fail("pair:bad:0", IP4(224, 0, 0, 1), 24, 0, NULL, DR_PORT_PARAM_ADDR);
	expect_open_fail("pair:bad:0", IP_A, 24, 100, NULL, DR_PORT_PARAM_MTU);
	expect_open_fail("pair:bad:0", IP_A, 24, 0, "/nonexistent-dir/x.pcapng",
			 DR_PORT_PARAM_PCAP);
}
END_TEST

/* ---- IPv6: neighbour discovery over the pair ------------------------------------------ */

static const uint8_t ip6_a[16] = {0xfd, 0x00, 0, 0, 0, 0, 0, 0, [15] = 1};
static const uint8_t ip6_b[16] = {0xfd, 0x00, 0, 0, 0, 0, 0, 0, [15] = 2};
static const uint8_t ip6_off[16] = {0xfd, 0x01, [15] = 1};

/* what a port's ND looks like on the wire: the last NS each side sent and
 * the last NA, whole */
struct nd_seen {
	struct dr_nd_msg ns, na;
	unsigned ns_n, na_n;
	unsigned rx_frames;
	unsigned rx;
	uint8_t frame[MAX_FRAME];
	size_t len;
	uint8_t neigh_ip6[16];
	int neigh_status;
	unsigned neigh_events;
};
static struct nd_seen nd_a, nd_b;

static void nd_hook(void *ctx, enum dr_port_dir dir, const void *frame, size_t len)
{
	struct nd_seen *s = ctx;
	struct dr_nd_msg m;

	if (dir == DR_PORT_DIR_RX) {
		s->rx_frames++;
		return;
	}
	if (dr_nd_parse(frame, len, &m) != DR_ND_OK)
		return;
	if (m.type == DR_ICMP6_NS) {
		s->ns = m;
		s->ns_n++;
	} else {
		s->na = m;
		s->na_n++;
	}
}

static void nd_rx(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	struct nd_seen *s = ctx;

	ck_assert_ptr_nonnull(pkt->ip6);
	memcpy(s->frame, frame, len);
	s->len = len;
	s->rx++;
}

static void nd_neigh(void *ctx, const uint8_t ip6[16], int status)
{
	struct nd_seen *s = ctx;

	memcpy(s->neigh_ip6, ip6, 16);
	s->neigh_status = status;
	s->neigh_events++;
}

static void open_pair6(struct dr_port **a, struct dr_port **b)
{
	struct dr_port_config ca, cb;
	struct dr_port_err err = {0};
	int ret;

	cfg_init(&ca, 0);
	cfg_init(&cb, 0);
	ca.ipv6 = cb.ipv6 = true;
	ca.prefix_len = cb.prefix_len = 64;
	memcpy(ca.ip6, ip6_a, 16);
	memcpy(cb.ip6, ip6_b, 16);
	ret = dr_port_open_pair(&ca, &cb, a, b, &err);
	ck_assert_msg(ret == 0, "open IPv6 pair: %d %s", ret, err.msg);
	memset(&nd_a, 0, sizeof(nd_a));
	memset(&nd_b, 0, sizeof(nd_b));
	dr_port_set_rx(*a, nd_rx, &nd_a);
	dr_port_set_rx(*b, nd_rx, &nd_b);
	dr_port_set_frame_hook(*a, nd_hook, &nd_a);
	dr_port_set_frame_hook(*b, nd_hook, &nd_b);
	dr_port_set_neigh6_cb(*a, nd_neigh, &nd_a);
	dr_port_set_neigh6_cb(*b, nd_neigh, &nd_b);
}

static int resolve6_wait(struct dr_port *from, struct dr_port *other, const uint8_t ip6[16],
			 uint8_t mac[6])
{
	uint64_t end = dr_port_now_ns() + DEADLINE_NS;
	int ret;

	while ((ret = dr_port_resolve6(from, ip6, mac)) == -EAGAIN && dr_port_now_ns() < end)
		poll_both(from, other);
	return ret;
}

/*
 * Two IPv6 ports: a asks for b by a solicitation to b's solicited-node
 * group (33:33:ff:00:00:02, ff02::1:ff00:2), b answers with a Solicited
 * advertisement unicast to a, a learns b's MAC; b learnt a's from the
 * solicitation (STALE).  Then a RoCEv2 frame over IPv6 crosses, one to
 * our own address loops back, and the IPv4 calls are refused.
 */
START_TEST(test_nd_resolve)
{
	static const uint8_t sn_b[16] = {0xff, 0x02, [11] = 1, 0xff, 0, 0, 2};
	static const uint8_t sn_mac_b[6] = {0x33, 0x33, 0xff, 0, 0, 2};
	struct dr_port *a, *b;
	struct dr_port_stats sa, sb;
	struct dr_pkt_desc d;
	uint8_t ma[6], mb[6], got[6], frame[256], own[16];
	struct dr_pkt pkt;
	int fl;

	open_pair6(&a, &b);
	dr_port_mac(a, ma);
	dr_port_mac(b, mb);
	ck_assert(dr_port_ip6(a, own));
	ck_assert_mem_eq(own, ip6_a, 16);
	ck_assert_uint_eq(dr_port_ip4(a), 0);

	ck_assert_int_eq(dr_port_resolve6(a, ip6_b, got), -EAGAIN);
	ck_assert_uint_eq(nd_a.ns_n, 1);
	ck_assert_mem_eq(nd_a.ns.eth_dst, sn_mac_b, 6);
	ck_assert_mem_eq(nd_a.ns.eth_src, ma, 6);
	ck_assert_mem_eq(nd_a.ns.ip_dst, sn_b, 16);
	ck_assert_mem_eq(nd_a.ns.ip_src, ip6_a, 16);
	ck_assert_mem_eq(nd_a.ns.target, ip6_b, 16);
	ck_assert(nd_a.ns.has_lla);
	ck_assert_mem_eq(nd_a.ns.lla, ma, 6);

	ck_assert_int_eq(resolve6_wait(a, b, ip6_b, got), 0);
	ck_assert_mem_eq(got, mb, 6);
	/* b's answer: Solicited and Override, unicast to a, its MAC */
	ck_assert_uint_ge(nd_b.na_n, 1);
	ck_assert_uint_eq(nd_b.na.na_flags, DR_ND_NA_SOLICITED | DR_ND_NA_OVERRIDE);
	ck_assert_mem_eq(nd_b.na.eth_dst, ma, 6);
	ck_assert_mem_eq(nd_b.na.ip_dst, ip6_a, 16);
	ck_assert_mem_eq(nd_b.na.ip_src, ip6_b, 16);
	ck_assert_mem_eq(nd_b.na.target, ip6_b, 16);
	ck_assert_mem_eq(nd_b.na.lla, mb, 6);
	ck_assert_uint_eq(nd_a.neigh_events, 1);
	ck_assert_mem_eq(nd_a.neigh_ip6, ip6_b, 16);
	ck_assert_int_eq(nd_a.neigh_status, 0);
	/* b learnt a from the solicitation: known at once */
	ck_assert_int_eq(dr_port_resolve6(b, ip6_a, got), 0);
	ck_assert_mem_eq(got, ma, 6);
	ck_assert_int_eq(dr_port_resolve6(a, ip6_a, got), 0); /* ourselves */
	ck_assert_mem_eq(got, ma, 6);
	ck_assert_int_eq(dr_port_resolve6(a, ip6_off, got), -ENETUNREACH);
	/* the IPv4 calls on an IPv6 port */
	ck_assert_int_eq(dr_port_resolve(a, IP_B, got), -EINVAL);
	ck_assert_int_eq(dr_port_neigh_suspect(a, IP_B), -EINVAL);

	/* a RoCEv2 SEND_ONLY over IPv6, a to b */
	dr_pkt_desc_init(&d);
	d.ip_version = 6;
	memcpy(d.src_ip6, ip6_a, 16);
	memcpy(d.dst_ip6, ip6_b, 16);
	d.ttl = 64;
	d.opcode = DR_OP_SEND_ONLY;
	d.dqpn = 0x11;
	d.ackreq = true;
	d.psn = 7;
	d.payload = pattern;
	d.payload_len = 100;
	fl = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_gt(fl, 0);
	ck_assert_int_eq(dr_port_send(a, frame, (size_t)fl), 0);
	while (nd_b.rx < 1)
		poll_both(a, b);
	ck_assert_uint_eq(nd_b.len, (size_t)fl);
	ck_assert_int_eq(dr_pkt_parse(nd_b.frame, nd_b.len, 0, &pkt), DR_PKT_OK);
	ck_assert_mem_eq(pkt.eth->dst, mb, 6);
	ck_assert_mem_eq(pkt.eth->src, ma, 6);
	ck_assert_mem_eq(pkt.ip6->saddr, ip6_a, 16);
	ck_assert_mem_eq(pkt.ip6->daddr, ip6_b, 16);
	ck_assert_mem_eq(pkt.payload, pattern, 100);
	/* the same frame to ourselves comes back through the loop */
	memcpy(d.dst_ip6, ip6_a, 16);
	fl = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send(a, frame, (size_t)fl), 0);
	poll_both(a, NULL);
	ck_assert_uint_eq(nd_a.rx, 1);
	/* off-link without a gateway; an IPv4 frame on an IPv6 port */
	memcpy(d.dst_ip6, ip6_off, 16);
	fl = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send(a, frame, (size_t)fl), -ENETUNREACH);
	d.ip_version = 4;
	d.src_ip4 = IP_A;
	d.dst_ip4 = IP_B;
	fl = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send(a, frame, (size_t)fl), -EINVAL);

	dr_port_get_stats(a, &sa);
	dr_port_get_stats(b, &sb);
	ck_assert_uint_eq(sa.arp_resolved, 1);
	ck_assert_uint_eq(sb.arp_resolved, 0);
	ck_assert_uint_eq(sa.rx_nd_bad + sb.rx_nd_bad, 0);
	/* each announced itself (an unsolicited NA to all-nodes), a asked
	 * for b and b answered; b's first use of the STALE entry for a
	 * probed it by unicast and a answered */
	ck_assert_uint_eq(sa.tx_nd, 3);
	ck_assert_uint_eq(sb.tx_nd, 3);
	ck_assert_uint_eq(sb.rx_roce, 1);
	ck_assert_uint_eq(sa.loopback, 1);
	close_pair(a, b);
}
END_TEST

/*
 * The hardening of the ARP table, on ND: an advertisement nobody asked for
 * (not Solicited, or to a multicast address) naming another MAC for b does
 * not move a's entry, it only makes it STALE, and the probe that follows
 * finds b at its real MAC; a solicitation for someone else is not
 * answered; one from our own address is an address conflict.
 */
START_TEST(test_nd_forged)
{
	static const uint8_t mac_evil[6] = {0x02, 0xee, 0xee, 0xee, 0xee, 0xee};
	struct dr_port *a, *b;
	struct dr_port_stats sa, sb;
	uint8_t ma[6], mb[6], got[6], buf[128];
	struct dr_nd_msg m;
	unsigned na_before;
	int n;

	open_pair6(&a, &b);
	dr_port_mac(a, ma);
	dr_port_mac(b, mb);
	ck_assert_int_eq(resolve6_wait(a, b, ip6_b, got), 0);

	/* an unsolicited NA (Override, to a's MAC) claiming ip6_b */
	memset(&m, 0, sizeof(m));
	m.type = DR_ICMP6_NA;
	m.na_flags = DR_ND_NA_OVERRIDE;
	memcpy(m.eth_dst, ma, 6);
	memcpy(m.eth_src, mac_evil, 6);
	memcpy(m.ip_src, ip6_b, 16);
	memcpy(m.ip_dst, ip6_a, 16);
	memcpy(m.target, ip6_b, 16);
	m.has_lla = true;
	memcpy(m.lla, mac_evil, 6);
	n = dr_nd_build(&m, buf, sizeof(buf));
	ck_assert_int_eq(dr_port_send_raw(b, buf, (size_t)n), 0);
	/* and a Solicited one that answers nothing we asked */
	m.na_flags = DR_ND_NA_SOLICITED | DR_ND_NA_OVERRIDE;
	n = dr_nd_build(&m, buf, sizeof(buf));
	ck_assert_int_eq(dr_port_send_raw(b, buf, (size_t)n), 0);
	poll_both(a, NULL);
	ck_assert_int_eq(dr_port_resolve6(a, ip6_b, got), 0);
	ck_assert_mem_eq(got, mb, 6); /* not moved */
	dr_port_get_stats(a, &sa);
	ck_assert_uint_eq(sa.arp_conflicts, 2);
	ck_assert_uint_eq(sa.arp_moved, 0);
	/* the entry went STALE: that use probed b (unicast to its MAC) and
	 * b's answer confirms the real MAC */
	ck_assert_mem_eq(nd_a.ns.eth_dst, mb, 6);
	ck_assert_mem_eq(nd_a.ns.ip_dst, ip6_b, 16);
	ck_assert_int_eq(resolve6_wait(a, b, ip6_b, got), 0);
	for (int i = 0; i < 5; i++)
		poll_both(a, b);
	ck_assert_int_eq(dr_port_resolve6(a, ip6_b, got), 0);
	ck_assert_mem_eq(got, mb, 6);

	/* a solicitation for another address: b does not answer */
	na_before = nd_b.na_n;
	dr_nd_solicit(&m, ma, ip6_a, ip6_off, NULL);
	n = dr_nd_build(&m, buf, sizeof(buf));
	ck_assert_int_eq(dr_port_send_raw(a, buf, (size_t)n), 0);
	/* one from b's own address: a conflict, not answered either */
	dr_nd_solicit(&m, mac_evil, ip6_b, ip6_b, NULL);
	n = dr_nd_build(&m, buf, sizeof(buf));
	ck_assert_int_eq(dr_port_send_raw(a, buf, (size_t)n), 0);
	/* a corrupt one (hop limit 64): refused, counted */
	dr_nd_solicit(&m, ma, ip6_a, ip6_b, NULL);
	n = dr_nd_build(&m, buf, sizeof(buf));
	buf[21] = 64;
	ck_assert_int_eq(dr_port_send_raw(a, buf, (size_t)n), 0);
	poll_both(b, NULL);
	ck_assert_uint_eq(nd_b.na_n, na_before);
	dr_port_get_stats(b, &sb);
	ck_assert_uint_eq(sb.rx_nd_bad, 1);
	ck_assert_str_eq(last_warning + strlen(last_warning) - strlen("02:ee:ee:ee:ee:ee"),
			 "02:ee:ee:ee:ee:ee");
	close_pair(a, b);
}
END_TEST

static void expect_open6_fail(const uint8_t ip6[16], unsigned prefix)
{
	struct dr_port_config c;
	struct dr_port_err err = {0};
	struct dr_port *p = (struct dr_port *)1;

	cfg_init(&c, 0);
	c.device = "pair:bad6:0";
	c.ipv6 = true;
	memcpy(c.ip6, ip6, 16);
	c.prefix_len = prefix;
	ck_assert_int_eq(dr_port_open(&c, &p, &err), -EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(err.param, DR_PORT_PARAM_ADDR);
}

START_TEST(test_nd_bad_config)
{
	expect_open6_fail(ip6_a, 0);
	expect_open6_fail(ip6_a, 129);
	expect_open6_fail((const uint8_t[16]){0}, 64);
	expect_open6_fail((const uint8_t[16]){[15] = 1}, 128);			   /* ::1 */
	expect_open6_fail((const uint8_t[16]){0xfe, 0x80, [15] = 1}, 64);	   /* link-local */
	expect_open6_fail((const uint8_t[16]){0xff, 0x02, [15] = 1}, 64);	   /* multicast */
	expect_open6_fail((const uint8_t[16]){[10] = 0xff, 0xff, 192, 0, 2, 1}, 96); /* mapped */
}
END_TEST

/* ---- ARP over the pair ---------------------------------------------------------------- */

START_TEST(test_arp_resolve)
{
	struct dr_port *a, *b;
	struct dr_port_stats sa, sb;
	uint8_t ma[6], mb[6], got[6];

	open_pair(&a, &b, NULL);
	dr_port_mac(a, ma);
	dr_port_mac(b, mb);
	ck_assert_mem_ne(ma, mb, 6);
	ck_assert_uint_eq(ma[0] & 3, 2); /* locally administered unicast */
	ck_assert_uint_eq(mb[0] & 3, 2);

	ck_assert_int_eq(dr_port_resolve(a, IP_B, got), -EAGAIN);
	ck_assert_int_eq(resolve_wait(a, b, IP_B, got), 0);
	ck_assert_mem_eq(got, mb, 6);
	/* b learnt a from a's request: usable at once, but not confirmed
	 * (a request asserts nothing), so this first use probes it by
	 * unicast */
	ck_assert_int_eq(dr_port_resolve(b, IP_A, got), 0);
	ck_assert_mem_eq(got, ma, 6);
	ck_assert_int_eq(dr_port_resolve(a, IP_A, got), 0); /* ourselves */
	ck_assert_mem_eq(got, ma, 6);
	ck_assert_int_eq(dr_port_resolve(a, IP4(198, 51, 100, 1), got), -ENETUNREACH);
	ck_assert_uint_eq(sink_a.neigh_events, 1);
	ck_assert_uint_eq(sink_a.neigh_ip, IP_B);
	ck_assert_int_eq(sink_a.neigh_status, 0);

	dr_port_get_stats(a, &sa);
	dr_port_get_stats(b, &sb);
	ck_assert_uint_eq(sa.tx_arp, 2); /* announcement + request */
	ck_assert_uint_eq(sb.tx_arp, 3); /* announcement + reply + probe */
	ck_assert_uint_eq(sa.arp_resolved, 1);
	close_pair(a, b);
}
END_TEST

START_TEST(test_arp_reply_fields)
{
	struct dr_port *a, *b;
	struct dr_arp_msg req, want;
	uint8_t frame[60], expect[60], mb[6], got[6];

	open_pair(&a, &b, NULL);
	dr_port_mac(b, mb);
	/* from a stranger on a's wire: b must answer the stranger */
	dr_arp_request(&req, mac_fake, IP_FAKE, IP_B);
	ck_assert_int_eq(dr_arp_build(&req, frame, sizeof(frame)), 60);
	ck_assert_int_eq(dr_port_send_raw(a, frame, sizeof(frame)), 0);
	for (int i = 0; i < 100 && !sink_a.arp_reply_len; i++)
		poll_both(b, a);
	ck_assert_uint_eq(sink_a.arp_reply_len, 60);

	memset(&want, 0, sizeof(want));
	memcpy(want.eth_dst, mac_fake, 6);
	memcpy(want.eth_src, mb, 6);
	want.op = DR_ARP_OP_REPLY;
	memcpy(want.sha, mb, 6);
	want.spa = IP_B;
	memcpy(want.tha, mac_fake, 6);
	want.tpa = IP_FAKE;
	ck_assert_int_eq(dr_arp_build(&want, expect, sizeof(expect)), 60);
	ck_assert_mem_eq(sink_a.arp_reply, expect, 60);
	/* and field by field, against the wire layout */
	ck_assert_mem_eq(sink_a.arp_reply, mac_fake, 6);
	ck_assert_mem_eq(sink_a.arp_reply + 6, mb, 6);
	ck_assert_uint_eq(sink_a.arp_reply[12] << 8 | sink_a.arp_reply[13], 0x0806);
	ck_assert_uint_eq(sink_a.arp_reply[14] << 8 | sink_a.arp_reply[15], 1);
	ck_assert_uint_eq(sink_a.arp_reply[16] << 8 | sink_a.arp_reply[17], 0x0800);
	ck_assert_uint_eq(sink_a.arp_reply[18], 6);
	ck_assert_uint_eq(sink_a.arp_reply[19], 4);
	ck_assert_uint_eq(sink_a.arp_reply[20] << 8 | sink_a.arp_reply[21], 2);
	ck_assert_mem_eq(sink_a.arp_reply + 22, mb, 6);
	ck_assert_mem_eq(sink_a.arp_reply + 28, "\xc0\x00\x02\x02", 4);
	ck_assert_mem_eq(sink_a.arp_reply + 32, mac_fake, 6);
	ck_assert_mem_eq(sink_a.arp_reply + 38, "\xc0\x00\x02\x63", 4);
	/* b learnt the stranger from its request */
	ck_assert_int_eq(dr_port_resolve(b, IP_FAKE, got), 0);
	ck_assert_mem_eq(got, mac_fake, 6);
	close_pair(a, b);
}
END_TEST

START_TEST(test_arp_unreachable)
{
	struct dr_port *a, *b;
	struct dr_port_stats s;
	struct dr_pkt_desc d;
	uint8_t frame[256], mac[6];
	uint64_t start, end;
	int len, ret;

	open_pair(&a, &b, NULL);
	start = dr_port_now_ns();
	ck_assert_int_eq(dr_port_resolve(a, IP_NOBODY, mac), -EAGAIN);
	/* a frame sent meanwhile is queued, then dropped with the failure */
	len = build_send(&d, a, b, pattern, 16, frame, sizeof(frame));
	ck_assert_int_gt(len, 0);
	d.dst_ip4 = IP_NOBODY;
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send(a, frame, len), 0);
	ret = resolve_wait(a, b, IP_NOBODY, mac);
	end = dr_port_now_ns();
	ck_assert_int_eq(ret, -EHOSTUNREACH);
	ck_assert_uint_ge(end - start, 3 * 20 * 1000000ull); /* tries x retry_ms */
	ck_assert_uint_eq(sink_a.arp_req_to_nobody, 3);
	ck_assert_uint_eq(sink_a.neigh_events, 1);
	ck_assert_uint_eq(sink_a.neigh_ip, IP_NOBODY);
	ck_assert_int_eq(sink_a.neigh_status, -EHOSTUNREACH);
	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.arp_failed, 1);
	ck_assert_uint_eq(s.arp_queued, 1);
	ck_assert_uint_eq(s.arp_queue_dropped, 1);
	/* remembered: fails at once, no new request */
	ck_assert_int_eq(dr_port_send(a, frame, len), -EHOSTUNREACH);
	ck_assert_int_eq(dr_port_resolve(a, IP_NOBODY, mac), -EHOSTUNREACH);
	ck_assert_uint_eq(sink_a.arp_req_to_nobody, 3);
	/* after failed_ms it is forgotten: a new call asks again */
	end = dr_port_now_ns() + DEADLINE_NS;
	while (dr_port_resolve(a, IP_NOBODY, mac) == -EHOSTUNREACH && dr_port_now_ns() < end)
		poll_both(a, b);
	ck_assert_uint_eq(sink_a.arp_req_to_nobody, 4);
	close_pair(a, b);
}
END_TEST

/* ---- forged ARP and peers that move (issue 11) ----------------------------------------------- */

static void open_named(const char *name, struct dr_port **a, struct dr_port **b);

static const uint8_t mac_bc[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static const uint8_t mac_fake2[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x98};

/* What a sends, as the other end of the link sees it (b's frame hook, in
 * the receive direction: before b filters anything). */
#define TAP_MAX 512

struct tap_frame {
	bool arp;
	uint16_t op;	 /* ARP */
	uint32_t tpa;	 /* ARP */
	uint8_t tha[6];	 /* ARP */
	uint8_t dst[6];	 /* Ethernet destination */
	uint64_t t_ns;	 /* when b saw it */
};

struct tap {
	struct sink *sink; /* b's own sink, still fed */
	struct tap_frame f[TAP_MAX];
	unsigned n;
};

static struct tap tap_b;

static void tap_hook(void *ctx, enum dr_port_dir dir, const void *frame, size_t len)
{
	struct tap *t = ctx;
	struct dr_arp_msg a;
	struct tap_frame *f;

	sink_hook(t->sink, dir, frame, len);
	if (dir != DR_PORT_DIR_RX || len < 14)
		return;
	ck_assert_uint_lt(t->n, TAP_MAX);
	f = &t->f[t->n++];
	memset(f, 0, sizeof(*f));
	memcpy(f->dst, frame, 6);
	f->t_ns = dr_port_now_ns();
	if (dr_arp_parse(frame, len, &a) == DR_ARP_OK) {
		f->arp = true;
		f->op = a.op;
		f->tpa = a.tpa;
		memcpy(f->tha, a.tha, 6);
	}
}

/* Requests a sent for ip since frame `from`, unicast to mac (NULL: broadcast). */
static unsigned tap_requests(const struct tap *t, unsigned from, uint32_t ip, const uint8_t *mac)
{
	unsigned n = 0;

	for (unsigned i = from; i < t->n; i++) {
		const struct tap_frame *f = &t->f[i];

		if (!f->arp || f->op != DR_ARP_OP_REQUEST || f->tpa != ip)
			continue;
		if (!mac && !memcmp(f->dst, mac_bc, 6))
			n++;
		/* a unicast probe names its target's MAC in the ARP body too */
		if (mac && !memcmp(f->dst, mac, 6) && !memcmp(f->tha, mac, 6))
			n++;
	}
	return n;
}

/* RoCE (non-ARP) frames a sent since `from` to Ethernet address mac. */
static unsigned tap_data_to(const struct tap *t, unsigned from, const uint8_t mac[6])
{
	unsigned n = 0;

	for (unsigned i = from; i < t->n; i++)
		if (!t->f[i].arp && !memcmp(t->f[i].dst, mac, 6))
			n++;
	return n;
}

/* An ARP frame put on a's wire from b's side, as an attacker (or a peer the
 * test plays) would: Ethernet source = sha. */
static void inject_arp(struct dr_port *wire, uint16_t op, const uint8_t eth_dst[6],
		       const uint8_t sha[6], uint32_t spa, const uint8_t tha[6], uint32_t tpa)
{
	struct dr_arp_msg m = {.op = op, .spa = spa, .tpa = tpa};
	uint8_t frame[60];

	memcpy(m.eth_dst, eth_dst, 6);
	memcpy(m.eth_src, sha, 6);
	memcpy(m.sha, sha, 6);
	if (tha)
		memcpy(m.tha, tha, 6);
	ck_assert_int_eq(dr_arp_build(&m, frame, sizeof(frame)), 60);
	ck_assert_int_eq(dr_port_send_raw(wire, frame, sizeof(frame)), 0);
}

/* A pair whose a has resolved b; b's hook is the tap.  probe_ms: a's. */
static void open_tapped(struct dr_port **a, struct dr_port **b, unsigned probe_ms)
{
	struct dr_port_config ca, cb;
	struct dr_port_err err = {0};
	uint8_t mac[6];

	cfg_init(&ca, IP_A);
	cfg_init(&cb, IP_B);
	ca.arp.probe_ms = probe_ms;
	ca.arp.retry_ms = 1000; /* no broadcast retry within a test step */
	ck_assert_msg(dr_port_open_pair(&ca, &cb, a, b, &err) == 0, "%s", err.msg);
	attach(*a, &sink_a);
	attach(*b, &sink_b);
	memset(&tap_b, 0, sizeof(tap_b));
	tap_b.sink = &sink_b;
	dr_port_set_frame_hook(*b, tap_hook, &tap_b);
	ck_assert_int_eq(resolve_wait(*a, *b, IP_B, mac), 0);
}

/* One RoCE frame a -> b, polled until b has it: proof that a used b's
 * real MAC (b takes only frames to its own). */
static void data_a_to_b(struct dr_port *a, struct dr_port *b)
{
	uint8_t frame[256];
	unsigned before = sink_b.rx;

	send_pattern(a, b, 32, frame, sizeof(frame));
	poll_until_rx(a, b, &sink_b, before + 1);
}

/* Every kind of ARP frame that names b's address with another MAC, each as
 * an off-path attacker can send it blind (issue 11: one forged unicast
 * reply made the entry REACHABLE at the attacker's MAC for 30 s). */
static const struct {
	const char *what;
	uint16_t op;
	bool unicast;	 /* to a's MAC, else broadcast */
	uint32_t tpa;
} forged_tab[] = {
    {"unicast reply to a, 'b is-at fake'", DR_ARP_OP_REPLY, true, IP_A},
    {"broadcast reply", DR_ARP_OP_REPLY, false, IP_A},
    {"broadcast request from b's address for a", DR_ARP_OP_REQUEST, false, IP_A},
    {"unicast request from b's address for a", DR_ARP_OP_REQUEST, true, IP_A},
    {"gratuitous request (announcement) for b", DR_ARP_OP_REQUEST, false, IP_B},
    {"gratuitous reply for b", DR_ARP_OP_REPLY, false, IP_B},
    {"request from b's address for a third host", DR_ARP_OP_REQUEST, false, IP_NOBODY},
    {"unicast reply naming a third host as target", DR_ARP_OP_REPLY, true, IP_NOBODY},
};
#define FORGED_N (sizeof(forged_tab) / sizeof(forged_tab[0]))

static void inject_forged(struct dr_port *a, struct dr_port *b, unsigned k)
{
	uint8_t ma[6];

	dr_port_mac(a, ma);
	inject_arp(b, forged_tab[k].op, forged_tab[k].unicast ? ma : mac_bc, mac_fake, IP_B,
		   forged_tab[k].op == DR_ARP_OP_REPLY ? ma : NULL, forged_tab[k].tpa);
}

/* a's entry for b never moved: resolved once, each forged frame counted
 * as a conflict */
static void expect_held(struct dr_port *a, uint64_t conflicts)
{
	struct dr_port_stats s;

	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.arp_conflicts, conflicts);
	ck_assert_uint_eq(s.arp_moved, 0);
	ck_assert_uint_eq(s.arp_resolved, 1);
}

/* One forged frame of each kind in the middle of a flow: the entry keeps
 * b's MAC, every data frame reaches b, and all a does is re-probe b's MAC by
 * unicast once (never a broadcast: nothing an attacker could answer). */
START_TEST(test_arp_forged_one)
{
	struct dr_port *a, *b;
	uint8_t mb[6], got[6];
	unsigned from;

	open_tapped(&a, &b, 10000);
	dr_port_mac(b, mb);
	data_a_to_b(a, b);
	from = tap_b.n;
	inject_forged(a, b, (unsigned)_i);
	poll_both(a, b);
	ck_assert_int_eq(dr_port_resolve(a, IP_B, got), 0);
	ck_assert_msg(!memcmp(got, mb, 6), "%s moved the entry", forged_tab[_i].what);
	for (int i = 0; i < 5; i++)
		data_a_to_b(a, b);
	for (int i = 0; i < 10; i++)
		poll_both(a, b);
	ck_assert_int_eq(dr_port_resolve(a, IP_B, got), 0);
	ck_assert_mem_eq(got, mb, 6);
	ck_assert_uint_eq(tap_data_to(&tap_b, from, mac_fake), 0);
	ck_assert_uint_eq(tap_data_to(&tap_b, from, mb), 5);
	ck_assert_uint_eq(tap_requests(&tap_b, from, IP_B, NULL), 0);
	ck_assert_uint_eq(tap_requests(&tap_b, from, IP_B, mb), 1);
	expect_held(a, 1);
	close_pair(a, b);
}
END_TEST

/* 100 forged frames, all kinds in turn, in bursts between data frames --
 * and while a's unicast probe is out, a forged answer to it ahead of b's
 * real one.  Nothing changes: b's MAC throughout, every data frame at b,
 * no broadcast request, each forged frame counted as a conflict. */
START_TEST(test_arp_forged_burst)
{
	struct dr_port *a, *b;
	uint8_t ma[6], mb[6], got[6];
	unsigned from, sent = 0;

	open_tapped(&a, &b, 10000);
	dr_port_mac(a, ma);
	dr_port_mac(b, mb);
	from = tap_b.n;
	for (unsigned k = 0; k < 100; k++) {
		inject_forged(a, b, k % FORGED_N);
		if (k % 10 == 9) {
			data_a_to_b(a, b);
			sent++;
			ck_assert_int_eq(dr_port_resolve(a, IP_B, got), 0);
			ck_assert_mem_eq(got, mb, 6);
		}
	}
	/* the race for the probe: a's probe is out, b has not answered yet,
	 * and the forged "answer" comes first */
	inject_forged(a, b, 0);
	ck_assert_int_ge(dr_port_poll(a), 0); /* STALE */
	data_a_to_b(a, b); /* PROBE: the unicast probe leaves with it ... */
	sent++;
	inject_arp(b, DR_ARP_OP_REPLY, ma, mac_fake, IP_B, ma, IP_A);
	ck_assert_int_ge(dr_port_poll(a), 0);
	ck_assert_int_eq(dr_port_resolve(a, IP_B, got), 0);
	ck_assert_mem_eq(got, mb, 6);
	for (int i = 0; i < 10; i++)
		poll_both(a, b); /* ... and b's own answer confirms b */
	ck_assert_int_eq(dr_port_resolve(a, IP_B, got), 0);
	ck_assert_mem_eq(got, mb, 6);

	ck_assert_uint_eq(sink_b.rx, sent + 0u);
	ck_assert_uint_eq(tap_data_to(&tap_b, from, mac_fake), 0);
	ck_assert_uint_eq(tap_data_to(&tap_b, from, mb), sent);
	ck_assert_uint_eq(tap_requests(&tap_b, from, IP_B, NULL), 0);
	ck_assert_uint_le(tap_requests(&tap_b, from, IP_B, mb), sent);
	expect_held(a, 102);
	close_pair(a, b);
}
END_TEST

/* Only a reply to a request of ours resolves: unasked replies create
 * nothing, and while a asks, neither a broadcast reply, a reply to another
 * address, nor a request from the peer answers the question. */
START_TEST(test_arp_solicited_only)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0, s;
	uint8_t ma[6], got[6];

	open_tapped(&a, &b, 10000);
	dr_port_mac(a, ma);
	dr_port_get_stats(a, &s0);
	inject_arp(b, DR_ARP_OP_REPLY, ma, mac_fake, IP_FAKE, ma, IP_A);
	poll_both(a, b);
	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.rx_arp_ignored - s0.rx_arp_ignored, 1);
	ck_assert_int_eq(dr_port_resolve(a, IP_FAKE, got), -EAGAIN); /* asks now */
	ck_assert_uint_eq(tap_requests(&tap_b, 0, IP_FAKE, NULL), 0); /* not yet polled by b */
	poll_both(b, a);
	ck_assert_uint_eq(tap_requests(&tap_b, 0, IP_FAKE, NULL), 1);
	inject_arp(b, DR_ARP_OP_REPLY, mac_bc, mac_fake, IP_FAKE, ma, IP_A);
	inject_arp(b, DR_ARP_OP_REPLY, ma, mac_fake, IP_FAKE, ma, IP_NOBODY);
	inject_arp(b, DR_ARP_OP_REQUEST, mac_bc, mac_fake, IP_FAKE, NULL, IP_A);
	poll_both(a, b);
	ck_assert_int_eq(dr_port_resolve(a, IP_FAKE, got), -EAGAIN);
	/* the answer */
	inject_arp(b, DR_ARP_OP_REPLY, ma, mac_fake2, IP_FAKE, ma, IP_A);
	poll_both(a, b);
	ck_assert_int_eq(dr_port_resolve(a, IP_FAKE, got), 0);
	ck_assert_mem_eq(got, mac_fake2, 6);
	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.rx_arp_unsolicited - s0.rx_arp_unsolicited, 3);
	ck_assert_uint_eq(s.arp_resolved, 2);
	close_pair(a, b);
}
END_TEST

/* A peer that moves without a word (the test plays IP_FAKE on the wire):
 * dr_port_neigh_suspect -- what a QP calls on its second retransmit
 * timeout in a row -- probes the old MAC by unicast, then, after probe_ms
 * of silence, by broadcast; the answer from the new MAC is taken, and the
 * next frame goes there.  A peer that answers nothing at all: the unicast
 * probe and tries broadcasts, then FAILED. */
#define MOVE_PROBE_MS 30

START_TEST(test_arp_suspect_moved)
{
	struct dr_port *a, *b;
	struct dr_port_stats s;
	struct dr_pkt_desc d;
	uint8_t ma[6], got[6], frame[256];
	uint64_t t0, end;
	unsigned from;
	int len;

	open_tapped(&a, &b, MOVE_PROBE_MS);
	dr_port_mac(a, ma);
	ck_assert_int_eq(dr_port_neigh_suspect(a, IP_FAKE), 0); /* unknown: nothing */
	ck_assert_int_eq(dr_port_resolve(a, IP_FAKE, got), -EAGAIN);
	ck_assert_int_eq(dr_port_neigh_suspect(a, IP_FAKE), 0); /* already asking */
	inject_arp(b, DR_ARP_OP_REPLY, ma, mac_fake, IP_FAKE, ma, IP_A);
	poll_both(a, b);
	ck_assert_int_eq(dr_port_resolve(a, IP_FAKE, got), 0);
	ck_assert_mem_eq(got, mac_fake, 6);
	len = build_send(&d, a, b, pattern, 32, frame, sizeof(frame));
	d.dst_ip4 = IP_FAKE;
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(dr_port_send(a, frame, len), 0);

	/* IP_FAKE is now at mac_fake2 and says nothing */
	from = tap_b.n;
	t0 = dr_port_now_ns();
	ck_assert_int_eq(dr_port_neigh_suspect(a, IP_FAKE), 1);
	ck_assert_int_eq(dr_port_neigh_suspect(a, IP_FAKE), 0);
	end = t0 + DEADLINE_NS;
	while (!tap_requests(&tap_b, from, IP_FAKE, NULL) && dr_port_now_ns() < end)
		poll_both(a, b);
	ck_assert_uint_eq(tap_requests(&tap_b, from, IP_FAKE, mac_fake), 1);
	ck_assert_uint_eq(tap_requests(&tap_b, from, IP_FAKE, NULL), 1);
	ck_assert_uint_ge(tap_b.f[tap_b.n - 1].t_ns - t0, MOVE_PROBE_MS * 1000000ull);
	/* meanwhile the old MAC is still used */
	ck_assert_int_eq(dr_port_resolve(a, IP_FAKE, got), 0);
	ck_assert_mem_eq(got, mac_fake, 6);
	inject_arp(b, DR_ARP_OP_REPLY, ma, mac_fake2, IP_FAKE, ma, IP_A);
	poll_both(a, b);
	ck_assert_int_eq(dr_port_resolve(a, IP_FAKE, got), 0);
	ck_assert_mem_eq(got, mac_fake2, 6);
	from = tap_b.n;
	ck_assert_int_eq(dr_port_send(a, frame, len), 0);
	poll_both(a, b);
	ck_assert_uint_eq(tap_data_to(&tap_b, from, mac_fake2), 1);
	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.arp_suspected, 1);
	ck_assert_uint_eq(s.arp_moved, 1);
	ck_assert_uint_eq(s.arp_failed, 0);

	/* now it goes silent for good: 1 unicast + 3 broadcasts, FAILED */
	from = tap_b.n;
	sink_a.neigh_events = 0;
	ck_assert_int_eq(dr_port_neigh_suspect(a, IP_FAKE), 1);
	end = dr_port_now_ns() + 10 * DEADLINE_NS;
	while (!sink_a.neigh_events && dr_port_now_ns() < end)
		poll_both(a, b);
	ck_assert_uint_eq(sink_a.neigh_events, 1);
	ck_assert_int_eq(sink_a.neigh_status, -EHOSTUNREACH);
	ck_assert_uint_eq(tap_requests(&tap_b, from, IP_FAKE, mac_fake2), 1);
	ck_assert_uint_eq(tap_requests(&tap_b, from, IP_FAKE, NULL), 3);
	ck_assert_int_eq(dr_port_resolve(a, IP_FAKE, got), -EHOSTUNREACH);
	close_pair(a, b);
}
END_TEST

/* A real move: b's end of the link re-opened with another MAC.  Its
 * announcement only makes a's entry STALE; the re-probe finds the old MAC
 * silent and the broadcast finds the new one, and frames reach the new b. */
START_TEST(test_arp_peer_reopened)
{
	struct dr_port_config cb;
	struct dr_port_err err = {0};
	struct dr_port *a, *b;
	struct dr_port_stats s;
	uint8_t mb[6], got[6];
	uint64_t end;

	open_named("mv", &a, &b);
	ck_assert_int_eq(resolve_wait(a, b, IP_B, got), 0);
	dr_port_mac(b, mb);
	ck_assert_mem_eq(got, mb, 6);
	data_a_to_b(a, b);
	dr_port_close(b);
	cfg_init(&cb, IP_B);
	cb.device = "pair:mv:1";
	cb.mac = mac_fake2;
	ck_assert_msg(dr_port_open(&cb, &b, &err) == 0, "%s", err.msg);
	attach(b, &sink_b);
	poll_both(a, b); /* the announcement: the entry is STALE */
	/* the QP's second timeout */
	ck_assert_int_eq(dr_port_neigh_suspect(a, IP_B), 1);
	ck_assert_int_eq(dr_port_resolve(a, IP_B, got), 0);
	ck_assert_mem_eq(got, mb, 6); /* not taken on the announcement's word */
	end = dr_port_now_ns() + DEADLINE_NS;
	while ((dr_port_resolve(a, IP_B, got), memcmp(got, mac_fake2, 6)) &&
	       dr_port_now_ns() < end)
		poll_both(a, b);
	ck_assert_mem_eq(got, mac_fake2, 6);
	data_a_to_b(a, b);
	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.arp_moved, 1);
	ck_assert_uint_eq(s.arp_conflicts, 1);
	close_pair(a, b);
}
END_TEST

/* ---- RoCE frames across ------------------------------------------------------------------ */

/* A frame from a to b (whose sink is sb) arrives whole. */
static void check_cross(struct dr_port *a, struct dr_port *b, struct sink *sb, uint32_t payload_len)
{
	struct dr_pkt_desc d;
	uint8_t frame[MAX_FRAME];
	unsigned before = sb->rx;
	int len;

	len = build_send(&d, a, b, pattern, payload_len, frame, sizeof(frame));
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(dr_port_send(a, frame, len), 0);
	poll_until_rx(a, b, sb, before + 1);
	if (len < DR_ETH_ZLEN) {
		/* padded on the way out, zeros after the IP datagram */
		ck_assert_uint_eq(sb->len, DR_ETH_ZLEN);
		for (int i = len; i < DR_ETH_ZLEN; i++)
			ck_assert_uint_eq(sb->frame[i], 0);
	} else {
		ck_assert_uint_eq(sb->len, len);
	}
	ck_assert_mem_eq(sb->frame, frame, len);
}

START_TEST(test_roce_cross)
{
	struct dr_port *a, *b;
	struct dr_port_stats s;
	uint8_t mac[6];

	open_pair(&a, &b, NULL);
	ck_assert_int_eq(resolve_wait(a, b, IP_B, mac), 0);
	check_cross(a, b, &sink_b, 0); /* 58 bytes: padded to 60 */
	check_cross(a, b, &sink_b, 1);
	check_cross(a, b, &sink_b, 5);
	check_cross(a, b, &sink_b, 1024);
	check_cross(a, b, &sink_b, 4096); /* a 4096-PMTU frame, 4154 bytes */
	check_cross(b, a, &sink_a, 100);  /* b learnt a from its request */
	dr_port_get_stats(b, &s);
	ck_assert_uint_eq(s.rx_roce, 5);
	ck_assert_uint_eq(s.rx_dropped, 0);
	close_pair(a, b);
}
END_TEST

START_TEST(test_roce_unresolved_queue)
{
	struct dr_port *a, *b;
	uint8_t frame[512];
	int len;

	/* sent before anything is resolved: held, then sent on the reply */
	open_pair(&a, &b, NULL);
	len = send_pattern(a, b, 300, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send(a, frame, len), 0);
	poll_until_rx(a, b, &sink_b, 2);
	ck_assert_mem_eq(sink_b.frame, frame, len);
	close_pair(a, b);
}
END_TEST

struct zc_done {
	unsigned calls;
	void *arg;
};

static void zc_done(void *arg)
{
	struct zc_done *z = arg;

	z->calls++;
}

static void check_zc(struct dr_port *a, struct dr_port *b, uint32_t payload_len)
{
	struct dr_pkt_desc d;
	uint8_t hdr[128], trailer[7], whole[MAX_FRAME];
	unsigned tlen, before = sink_b.rx;
	struct zc_done z = {0};
	int hlen, len;

	len = build_send(&d, a, b, pattern, payload_len, whole, sizeof(whole));
	hlen = dr_pkt_build_split(&d, hdr, sizeof(hdr), trailer, &tlen);
	ck_assert_int_gt(hlen, 0);
	ck_assert_int_eq(hlen + payload_len + tlen, len);
	ck_assert_int_eq(
	    dr_port_send_zc(a, hdr, hlen, pattern, payload_len, trailer, tlen, zc_done, &z), 0);
	/* still referenced, not copied: the mbuf waits in the ring */
	ck_assert_uint_eq(z.calls, 0);
	poll_until_rx(a, b, &sink_b, before + 1);
	ck_assert_uint_eq(z.calls, 1);
	ck_assert_uint_eq(sink_b.len, len);
	ck_assert_mem_eq(sink_b.frame, whole, len);
}

START_TEST(test_roce_zero_copy)
{
	struct dr_port *a, *b;
	struct zc_done z = {0};
	uint8_t mac[6];

	open_pair(&a, &b, NULL);
	ck_assert(dr_port_zero_copy(a));
	/* only net_af_xdp limits the window of its QPs */
	ck_assert_uint_eq(dr_port_max_window(a), 0);
	/* a full ring holds the sender back: nothing lost (DR_QP_LOSSLESS) */
	ck_assert(dr_port_lossless(a) && dr_port_lossless(b));
	/* a burst into a ring is no system call: posts leave alone (dev_poll) */
	ck_assert(!dr_port_tx_syscall(a) && !dr_port_tx_syscall(b));
	ck_assert_int_eq(resolve_wait(a, b, IP_B, mac), 0);
	check_zc(a, b, 4096);
	check_zc(a, b, 1001); /* PadCnt 3 */
	check_zc(a, b, 2);
	/* refused sends still release the payload */
	ck_assert_int_eq(dr_port_send_zc(a, pattern, 14, pattern, 8000, pattern, 4, zc_done, &z),
			 -EMSGSIZE);
	ck_assert_uint_eq(z.calls, 1);
	close_pair(a, b);
}
END_TEST

START_TEST(test_garbage_dropped)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0, s1;
	struct dr_pkt_desc d;
	uint8_t frame[512], mac[6];
	int len;

	open_pair(&a, &b, NULL);
	ck_assert_int_eq(resolve_wait(a, b, IP_B, mac), 0);
	len = build_send(&d, a, b, pattern, 64, frame, sizeof(frame));
	poll_both(a, b);
	dr_port_get_stats(b, &s0);

	/* UDP, but not to 4791 */
	d.dport = 1234;
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	/* a bad ICRC */
	d.dport = DR_ROCE_UDP_PORT;
	len = dr_pkt_build(&d, frame, sizeof(frame));
	frame[len - 1] ^= 0xff;
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	/* not IP at all: a local experimental ethertype, then random bytes */
	frame[12] = 0x88;
	frame[13] = 0xb5;
	ck_assert_int_eq(dr_port_send_raw(a, frame, 100), 0);
	for (int i = 14; i < 100; i++)
		frame[i] = (uint8_t)(i * 37);
	frame[12] = 0x08;
	frame[13] = 0x00;
	ck_assert_int_eq(dr_port_send_raw(a, frame, 100), 0);
	/* a runt */
	ck_assert_int_eq(dr_port_send_raw(a, frame, 10), 0);
	/* RoCE for another address on b's MAC */
	d.dst_ip4 = IP4(192, 0, 2, 3);
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	/* and for another MAC */
	d.dst_ip4 = IP_B;
	d.dst_mac[5] ^= 1;
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);

	for (int i = 0; i < 10; i++)
		poll_both(a, b);
	dr_port_get_stats(b, &s1);
	ck_assert_uint_eq(sink_b.rx, 0);
	ck_assert_uint_eq(s1.rx_frames - s0.rx_frames, 7);
	ck_assert_uint_eq(s1.rx_dropped - s0.rx_dropped, 7);
	ck_assert_uint_eq(s1.rx_verdict[DR_PKT_NOT_ROCE] - s0.rx_verdict[DR_PKT_NOT_ROCE], 1);
	ck_assert_uint_eq(s1.rx_verdict[DR_PKT_BAD_ICRC] - s0.rx_verdict[DR_PKT_BAD_ICRC], 1);
	ck_assert_uint_eq(s1.rx_verdict[DR_PKT_NOT_IP] - s0.rx_verdict[DR_PKT_NOT_IP], 1);
	ck_assert_uint_eq(s1.rx_verdict[DR_PKT_SHORT_ETH] - s0.rx_verdict[DR_PKT_SHORT_ETH], 1);
	/* the random IPv4 header: whatever the parser says, it is counted */
	ck_assert_uint_eq(s1.rx_not_ours - s0.rx_not_ours, 2);
	ck_assert_uint_eq(s1.rx_roce, s0.rx_roce);
	close_pair(a, b);
}
END_TEST

/* ---- the packet port's socket filter (several processes on one interface) -------- */

/* A frame to UDP port dport (IPv4 with ihl 32-bit words of header, or IPv6)
 * whose BTH names DestQP qpn (its reserved byte set: the filter masks it),
 * or, with proto other than UDP, no UDP at all; frag: an IPv4 fragment. */
static size_t filter_frame(uint8_t *f, bool v6, unsigned ihl, uint8_t proto, uint16_t dport,
			   uint32_t qpn, bool frag)
{
	size_t ip = v6 ? 40 : 4u * ihl, n = 14 + ip + 8 + 12 + 4;
	uint8_t *u = f + 14 + ip, *bth = u + 8;

	memset(f, 0, n);
	f[12] = v6 ? 0x86 : 0x08;
	f[13] = v6 ? 0xdd : 0x00;
	if (v6) {
		f[14] = 0x60;
		f[14 + 6] = proto;
	} else {
		f[14] = (uint8_t)(0x40 | ihl);
		f[14 + 9] = proto;
		f[14 + 6] = frag ? 0x20 : 0x40; /* MF, or DF */
		f[14 + 7] = frag ? 0x08 : 0x00;
	}
	u[2] = (uint8_t)(dport >> 8);
	u[3] = (uint8_t)dport;
	bth[0] = DR_OP_SEND_ONLY;
	bth[4] = 0xff;
	bth[5] = (uint8_t)(qpn >> 16);
	bth[6] = (uint8_t)(qpn >> 8);
	bth[7] = (uint8_t)qpn;
	return n;
}

/* Whether a socket with the filter for qpns takes the frame: the kernel
 * runs the program on any socket, here the receiving end of a datagram
 * socketpair, whose datagrams start where a packet socket's frames do. */
static bool filter_takes(const uint32_t *qpns, unsigned n, const uint8_t *frame, size_t len)
{
	struct sock_filter f[DR_PORT_RX_FILTER_LEN(8)];
	struct sock_fprog prog = {.filter = f};
	uint8_t got[256];
	int sv[2];
	ssize_t r;

	ck_assert_uint_le(n, 8);
	prog.len = (unsigned short)dr_port_rx_filter_build(f, qpns, n);
	ck_assert_uint_eq(prog.len, DR_PORT_RX_FILTER_LEN(n));
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	ck_assert_int_eq(setsockopt(sv[1], SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)), 0);
	ck_assert_int_eq(send(sv[0], frame, len, 0), (ssize_t)len);
	r = recv(sv[1], got, sizeof(got), MSG_DONTWAIT);
	ck_assert_msg(r == (ssize_t)len || (r < 0 && errno == EAGAIN), "recv: %zd (%s)", r,
		      strerror(errno));
	close(sv[0]);
	close(sv[1]);
	return r == (ssize_t)len && !memcmp(got, frame, len);
}

START_TEST(test_rx_filter)
{
	static const uint32_t mine[] = {0x123456, 0xabcdef, 0x000002};
	uint8_t f[128];
	size_t n;

	/* RoCEv2 over IPv4 (with and without IP options) and IPv6: only
	 * frames for its QPNs, and MADs to QP1 */
	for (unsigned v = 0; v < 3; v++) {
		bool v6 = v == 2;
		unsigned ihl = v == 1 ? 7 : 5;

		for (unsigned i = 0; i < 3; i++) {
			n = filter_frame(f, v6, ihl, 17, DR_ROCE_UDP_PORT, mine[i], false);
			ck_assert_msg(filter_takes(mine, 3, f, n), "v %u: QPN 0x%06x refused", v,
				      mine[i]);
		}
		n = filter_frame(f, v6, ihl, 17, DR_ROCE_UDP_PORT, DR_GSI_QPN, false);
		ck_assert(filter_takes(mine, 3, f, n));
		ck_assert(filter_takes(mine, 0, f, n));
		n = filter_frame(f, v6, ihl, 17, DR_ROCE_UDP_PORT, 0x654321, false);
		ck_assert_msg(!filter_takes(mine, 3, f, n), "v %u: another's QPN taken", v);
		n = filter_frame(f, v6, ihl, 17, DR_ROCE_UDP_PORT, 0x123457, false);
		ck_assert(!filter_takes(mine, 3, f, n));
		n = filter_frame(f, v6, ihl, 17, DR_ROCE_UDP_PORT, mine[0], false);
		ck_assert(!filter_takes(mine, 0, f, n));
		ck_assert(!filter_takes(mine + 1, 2, f, n));
		/* not RoCEv2: another UDP port, TCP */
		n = filter_frame(f, v6, ihl, 17, DR_ROCE_UDP_PORT + 1, 0x654321, false);
		ck_assert(filter_takes(mine, 3, f, n));
		n = filter_frame(f, v6, ihl, 6, DR_ROCE_UDP_PORT, 0x654321, false);
		ck_assert(filter_takes(mine, 3, f, n));
	}
	/* an IPv4 fragment: the parser decides */
	n = filter_frame(f, false, 5, 17, DR_ROCE_UDP_PORT, 0x654321, true);
	ck_assert(filter_takes(mine, 3, f, n));
	/* neither IPv4 nor IPv6: ARP */
	n = filter_frame(f, false, 5, 17, DR_ROCE_UDP_PORT, 0x654321, false);
	f[12] = 0x08;
	f[13] = 0x06;
	ck_assert(filter_takes(mine, 3, f, n));
}
END_TEST

/* A frame tagged with a VLAN ID is another network's (a VLAN interface's):
 * dropped and counted, however well it is addressed; one priority-tagged
 * (VLAN ID 0, priority 3) is the port's own and delivered. */
START_TEST(test_vlan_tagged)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0, s1;
	struct dr_pkt_desc d;
	uint8_t frame[512], mac[6];
	unsigned rx0;
	int len;

	open_pair(&a, &b, NULL);
	ck_assert_int_eq(resolve_wait(a, b, IP_B, mac), 0);
	build_send(&d, a, b, pattern, 64, frame, sizeof(frame));
	poll_both(a, b);
	dr_port_get_stats(b, &s0);
	rx0 = sink_b.rx;

	d.vlan = true;
	d.vlan_tci = 7; /* VLAN 7 */
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	d.vlan_tci = 3 << 13 | 4095; /* VLAN 4095, priority 3 */
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	for (int i = 0; i < 10; i++)
		poll_both(a, b);
	dr_port_get_stats(b, &s1);
	ck_assert_uint_eq(sink_b.rx, rx0);
	ck_assert_uint_eq(s1.rx_vlan - s0.rx_vlan, 2);
	ck_assert_uint_eq(s1.rx_dropped - s0.rx_dropped, 2);
	ck_assert_uint_eq(s1.rx_roce, s0.rx_roce);

	d.vlan_tci = 3 << 13; /* priority 3, VLAN 0 */
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	for (int i = 0; i < 10; i++)
		poll_both(a, b);
	dr_port_get_stats(b, &s0);
	ck_assert_uint_eq(sink_b.rx, rx0 + 1);
	ck_assert_uint_eq(s0.rx_vlan, s1.rx_vlan);
	ck_assert_uint_eq(s0.rx_roce, s1.rx_roce + 1);
	close_pair(a, b);
}
END_TEST

/* dr_port_set_place: the payload of a READ response or of a WRITE MIDDLE
 * or LAST goes where the place function says, checked in the same pass;
 * the rx callback sees it placed.  One with a bad ICRC is dropped and
 * counted as before, never delivered (the bytes it left in the named
 * memory are the caller's to overwrite).  One the place function declines
 * (0) is checked and delivered as usual; other opcodes (a SEND, a WRITE
 * whose RETH names the place) never reach the place function. */
static const uint8_t place_ops[] = {DR_OP_READ_RSP_ONLY, DR_OP_WRITE_MIDDLE, DR_OP_WRITE_LAST_IMM};

static struct {
	unsigned calls;
	bool decline;
	uint8_t buf[4096 + 64];
	bool placed_seen;
} place_b;

static unsigned place_fn(void *ctx, const struct dr_pkt *pkt, struct iovec *dst, unsigned max)
{
	ck_assert_ptr_eq(ctx, &sink_b);
	ck_assert_uint_ge(max, 1);
	ck_assert(pkt->icrc_deferred);
	place_b.calls++;
	if (place_b.decline)
		return 0;
	dst[0].iov_base = place_b.buf + 32;
	dst[0].iov_len = pkt->payload_len;
	return 1;
}

static void place_rx(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	place_b.placed_seen = pkt->payload_placed;
	sink_rx(ctx, frame, len, pkt);
}

START_TEST(test_place)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0, s1;
	struct dr_pkt_desc d;
	uint8_t frame[MAX_FRAME], mac[6];
	int len;

	open_pair(&a, &b, NULL);
	ck_assert_int_eq(resolve_wait(a, b, IP_B, mac), 0);
	dr_port_set_rx(b, place_rx, &sink_b);
	dr_port_set_place(b, place_fn);
	memset(&place_b, 0, sizeof(place_b));
	memset(place_b.buf, 0xa5, sizeof(place_b.buf));
	dr_port_get_stats(b, &s0);

	/* intact: placed, delivered, byte-exact */
	build_send(&d, a, b, pattern, 4096, frame, sizeof(frame));
	d.opcode = place_ops[_i];
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	poll_until_rx(a, b, &sink_b, 1);
	ck_assert_uint_eq(place_b.calls, 1);
	ck_assert(place_b.placed_seen);
	ck_assert(!memcmp(place_b.buf + 32, pattern, 4096));
	for (size_t i = 0; i < sizeof(place_b.buf); i++)
		if (i < 32 || i >= 32 + 4096)
			ck_assert_uint_eq(place_b.buf[i], 0xa5);

	/* a bad ICRC (one payload bit): dropped, counted, not delivered */
	frame[len - 1000] ^= 0x04;
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	for (int i = 0; i < 10; i++)
		poll_both(a, b);
	ck_assert_uint_eq(place_b.calls, 2);
	ck_assert_uint_eq(sink_b.rx, 1);
	dr_port_get_stats(b, &s1);
	ck_assert_uint_eq(s1.rx_verdict[DR_PKT_BAD_ICRC] - s0.rx_verdict[DR_PKT_BAD_ICRC], 1);
	ck_assert_uint_eq(s1.rx_dropped - s0.rx_dropped, 1);
	ck_assert_uint_eq(s1.rx_roce - s0.rx_roce, 1);

	/* declined: checked the usual way, delivered not placed */
	frame[len - 1000] ^= 0x04;
	place_b.decline = true;
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	poll_until_rx(a, b, &sink_b, 2);
	ck_assert_uint_eq(place_b.calls, 3);
	ck_assert(!place_b.placed_seen);
	/* declined and bad: dropped, counted */
	frame[len - 1000] ^= 0x04;
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	for (int i = 0; i < 10; i++)
		poll_both(a, b);
	ck_assert_uint_eq(sink_b.rx, 2);
	dr_port_get_stats(b, &s1);
	ck_assert_uint_eq(s1.rx_verdict[DR_PKT_BAD_ICRC] - s0.rx_verdict[DR_PKT_BAD_ICRC], 2);

	/* a SEND, a WRITE FIRST: never asked about */
	send_pattern(a, b, 4096, frame, sizeof(frame));
	poll_until_rx(a, b, &sink_b, 3);
	d.opcode = DR_OP_WRITE_FIRST;
	d.reth.len = 8192;
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send_raw(a, frame, len), 0);
	poll_until_rx(a, b, &sink_b, 4);
	ck_assert_uint_eq(place_b.calls, 4);
	ck_assert(!place_b.placed_seen);
	dr_port_set_place(b, NULL);
	close_pair(a, b);
}
END_TEST

START_TEST(test_loopback)
{
	struct dr_port *a, *b;
	uint8_t frame[512];
	int len;

	open_pair(&a, &b, NULL);
	len = send_pattern(a, a, 200, frame, sizeof(frame));
	poll_until_rx(a, NULL, &sink_a, 1);
	ck_assert_uint_eq(sink_a.len, len);
	ck_assert_mem_eq(sink_a.frame, frame, len);
	ck_assert_uint_eq(sink_b.rx, 0);
	close_pair(a, b);
}
END_TEST

/* ---- transmit batching ------------------------------------------------------------------- */

/* The sequence numbers of the RoCE frames b receives, in arrival order:
 * each frame's payload starts with its number (big endian), its PSN is the
 * same number. */
#define SEQ_MAX	    80
#define SEQ_PAYLOAD 40

struct seq_sink {
	unsigned n;
	uint32_t seq[SEQ_MAX];
	unsigned bad; /* frames whose payload or PSN did not match */
};

static void seq_rx(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	struct seq_sink *s = ctx;
	uint32_t v;

	if (pkt->payload_len != SEQ_PAYLOAD || s->n == SEQ_MAX) {
		s->bad++;
		return;
	}
	v = (uint32_t)pkt->payload[0] << 24 | (uint32_t)pkt->payload[1] << 16 |
	    (uint32_t)pkt->payload[2] << 8 | pkt->payload[3];
	if (pkt->psn != v || memcmp(pkt->payload + 4, pattern, SEQ_PAYLOAD - 4))
		s->bad++;
	s->seq[s->n++] = v;
}

/* dr_port_send one SEND_ONLY from a to b carrying seq. */
static void send_seq(struct dr_port *a, struct dr_port *b, uint32_t seq)
{
	uint8_t payload[SEQ_PAYLOAD], frame[256];
	struct dr_pkt_desc d;
	int len;

	payload[0] = (uint8_t)(seq >> 24);
	payload[1] = (uint8_t)(seq >> 16);
	payload[2] = (uint8_t)(seq >> 8);
	payload[3] = (uint8_t)seq;
	memcpy(payload + 4, pattern, SEQ_PAYLOAD - 4);
	len = build_send(&d, a, b, payload, SEQ_PAYLOAD, frame, sizeof(frame));
	ck_assert_int_gt(len, 0);
	d.psn = seq;
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(dr_port_send(a, frame, len), 0);
}

/* A pair with b resolved from a (and a from b), nothing left in flight:
 * every frame a sends from now on is one of ours.  a has no frame hook
 * (it would turn batching off); b's RoCE frames go to s. */
static void batch_pair(struct dr_port **a, struct dr_port **b, struct seq_sink *s)
{
	struct dr_port_stats sa, sb, ta, tb;
	uint8_t mac[6];

	open_pair(a, b, NULL);
	ck_assert_int_eq(resolve_wait(*a, *b, IP_B, mac), 0);
	ck_assert_int_eq(dr_port_resolve(*b, IP_A, mac), 0);
	memset(s, 0, sizeof(*s));
	dr_port_set_rx(*b, seq_rx, s);
	dr_port_set_frame_hook(*a, NULL, NULL);
	for (int i = 0; i < 5; i++)
		poll_both(*a, *b);
	/* quiet: more polls move nothing */
	dr_port_get_stats(*a, &sa);
	dr_port_get_stats(*b, &sb);
	for (int i = 0; i < 5; i++)
		poll_both(*a, *b);
	dr_port_get_stats(*a, &ta);
	dr_port_get_stats(*b, &tb);
	ck_assert_uint_eq(ta.tx_frames, sa.tx_frames);
	ck_assert_uint_eq(ta.rx_frames, sa.rx_frames);
	ck_assert_uint_eq(tb.tx_frames, sb.tx_frames);
	ck_assert_uint_eq(tb.rx_frames, sb.rx_frames);
}

/* batch_pair, a's counters in *s0, and a batch begun on a */
static void batch_open(struct dr_port **a, struct dr_port **b, struct seq_sink *s,
		       struct dr_port_stats *s0)
{
	batch_pair(a, b, s);
	dr_port_get_stats(*a, s0);
	dr_port_batch_begin(*a);
}

/* b's polls receive nothing: the frames are still in a's queue. */
static void expect_nothing(struct dr_port *b, const struct seq_sink *s, unsigned have)
{
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(dr_port_poll(b), 0);
	ck_assert_uint_eq(s->n, have);
}

/* b receives exactly frames have..want-1, in order; then nothing more. */
static void expect_seqs(struct dr_port *b, const struct seq_sink *s, unsigned want)
{
	uint64_t end = dr_port_now_ns() + DEADLINE_NS;

	while (s->n < want && dr_port_now_ns() < end)
		ck_assert_int_ge(dr_port_poll(b), 0);
	ck_assert_uint_eq(s->n, want);
	expect_nothing(b, s, want);
	ck_assert_uint_eq(s->bad, 0);
	for (unsigned i = 0; i < want; i++)
		ck_assert_msg(s->seq[i] == i, "frame %u carries %u", i, s->seq[i]);
}

/* a handed bursts bursts of frames frames to the driver since s0 */
static void expect_tx(struct dr_port *a, const struct dr_port_stats *s0, uint64_t bursts,
		      uint64_t frames)
{
	struct dr_port_stats s;

	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.tx_bursts, s0->tx_bursts + bursts);
	ck_assert_uint_eq(s.tx_frames, s0->tx_frames + frames);
}

/* and dropped none, nor had to ask ARP */
static void expect_tx_kept(struct dr_port *a, const struct dr_port_stats *s0)
{
	struct dr_port_stats s;

	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.tx_dropped, s0->tx_dropped);
	ck_assert_uint_eq(s.tx_arp, s0->tx_arp);
}

/* Five frames in one batch: nothing reaches the device (nor b) before the
 * end, then all five in one burst, in order.  Outside a batch each send is
 * a burst of its own, received at b's next poll. */
START_TEST(test_batch_send)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0, sb0, sb;
	struct seq_sink ss;

	batch_pair(&a, &b, &ss);
	dr_port_get_stats(a, &s0);
	dr_port_get_stats(b, &sb0);
	dr_port_batch_begin(a);
	for (unsigned i = 0; i < 5; i++) {
		send_seq(a, b, i);
		expect_tx(a, &s0, 0, 0); /* not handed over yet */
	}
	expect_nothing(b, &ss, 0);
	dr_port_batch_end(a);
	expect_tx(a, &s0, 1, 5);
	expect_tx_kept(a, &s0);
	/* all five are there for b's very next poll */
	ck_assert_int_eq(dr_port_poll(b), 5);
	ck_assert_uint_eq(ss.n, 5);
	expect_seqs(b, &ss, 5);

	/* unbatched: one burst per frame, there at once */
	send_seq(a, b, 5);
	expect_tx(a, &s0, 2, 6);
	ck_assert_int_eq(dr_port_poll(b), 1);
	expect_seqs(b, &ss, 6);
	dr_port_get_stats(b, &sb);
	ck_assert_uint_eq(sb.rx_frames - sb0.rx_frames, 6);
	ck_assert_uint_eq(sb.rx_roce - sb0.rx_roce, 6);
	close_pair(a, b);
}
END_TEST

/* The port's transmit batch (DR_PORT_TXQ, src/roce/port_priv.h): a QP's
 * 64 packets between two AckReqs. */
#define TXQ 64

/* TXQ + 8 frames in one batch: the one after TXQ finds the queue full and
 * sends the first TXQ in one burst; the other 8 leave at the end in a
 * second one. */
START_TEST(test_batch_full)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0;
	struct seq_sink ss;
	unsigned i;

	batch_open(&a, &b, &ss, &s0);
	for (i = 0; i < TXQ; i++)
		send_seq(a, b, i);
	expect_tx(a, &s0, 0, 0);
	expect_nothing(b, &ss, 0);
	send_seq(a, b, TXQ);
	expect_tx(a, &s0, 1, TXQ);
	expect_seqs(b, &ss, TXQ); /* the one after waits */
	for (i = TXQ + 1; i < TXQ + 8; i++)
		send_seq(a, b, i);
	expect_tx(a, &s0, 1, TXQ);
	expect_nothing(b, &ss, TXQ);
	dr_port_batch_end(a);
	expect_tx(a, &s0, 2, TXQ + 8);
	expect_tx_kept(a, &s0);
	expect_seqs(b, &ss, TXQ + 8);
	close_pair(a, b);
}
END_TEST

/* Nested batches: the inner end sends nothing, nor does a's own poll (its
 * internal batch nests in ours); the outer end sends everything at once. */
START_TEST(test_batch_nested)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0, s;
	struct seq_sink ss;
	unsigned i;

	batch_open(&a, &b, &ss, &s0);
	dr_port_batch_begin(a);
	for (i = 0; i < 3; i++)
		send_seq(a, b, i);
	dr_port_batch_end(a);
	expect_tx(a, &s0, 0, 0);
	expect_nothing(b, &ss, 0);
	ck_assert_int_eq(dr_port_poll(a), 0);
	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.tx_bursts, s0.tx_bursts);
	expect_nothing(b, &ss, 0);
	for (; i < 5; i++)
		send_seq(a, b, i);
	dr_port_get_stats(a, &s);
	ck_assert_uint_eq(s.tx_bursts, s0.tx_bursts);
	expect_nothing(b, &ss, 0);
	dr_port_batch_end(a);
	expect_tx(a, &s0, 1, 5);
	ck_assert_int_eq(dr_port_poll(b), 5);
	expect_seqs(b, &ss, 5);
	close_pair(a, b);
}
END_TEST

/* dr_port_tx_early: what the batch holds leaves once it is at least half
 * of what the requester has unacknowledged (the receiver would otherwise
 * run dry), else it waits; an empty batch sends nothing. */
START_TEST(test_batch_early)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0;
	struct seq_sink ss;
	unsigned i;

	batch_open(&a, &b, &ss, &s0);
	dr_port_tx_early(a, 0);
	expect_tx(a, &s0, 0, 0);
	for (i = 0; i < 3; i++)
		send_seq(a, b, i);
	dr_port_tx_early(a, 7); /* 3 held, 4 at the receiver: they wait */
	expect_tx(a, &s0, 0, 0);
	expect_nothing(b, &ss, 0);
	dr_port_tx_early(a, 6); /* 3 held, 3 at the receiver: they go */
	expect_tx(a, &s0, 1, 3);
	expect_seqs(b, &ss, 3);
	dr_port_tx_early(a, 1);
	expect_tx(a, &s0, 1, 3);
	send_seq(a, b, 3);
	dr_port_tx_early(a, 3);
	expect_tx(a, &s0, 1, 3);
	expect_nothing(b, &ss, 3);
	dr_port_tx_early(a, 2);
	expect_tx(a, &s0, 2, 4);
	dr_port_batch_end(a);
	expect_tx(a, &s0, 2, 4);
	expect_tx_kept(a, &s0);
	expect_seqs(b, &ss, 4);
	close_pair(a, b);
}
END_TEST

/* With a frame hook set frames are not batched: inside a batch each send
 * is its own burst, seen by the hook and received by b at once; the end of
 * the batch has nothing left to send. */
START_TEST(test_batch_hook)
{
	struct dr_port *a, *b;
	struct dr_port_stats s0;
	struct seq_sink ss;

	batch_pair(&a, &b, &ss);
	sink_a.hook_tx = 0;
	dr_port_set_frame_hook(a, sink_hook, &sink_a);
	dr_port_get_stats(a, &s0);
	dr_port_batch_begin(a);
	for (unsigned i = 0; i < 5; i++) {
		send_seq(a, b, i);
		expect_tx(a, &s0, i + 1, i + 1);
		ck_assert_uint_eq(sink_a.hook_tx, i + 1);
		ck_assert_int_eq(dr_port_poll(b), 1);
		ck_assert_uint_eq(ss.n, i + 1);
		ck_assert_uint_eq(ss.seq[i], i);
	}
	dr_port_batch_end(a);
	expect_tx(a, &s0, 5, 5);
	ck_assert_uint_eq(sink_a.hook_tx, 5);
	expect_seqs(b, &ss, 5);
	close_pair(a, b);
}
END_TEST

/* ---- capture ----------------------------------------------------------------------------- */

static unsigned tshark_count(const char *tshark, const char *path, const char *filter)
{
	char cmd[1024], line[64];
	unsigned n = 0;
	FILE *f;

	/* Wireshark 4.0's RPC-over-RDMA heuristic marks any RC SEND with an
	 * empty payload "[Malformed Packet: RPCoRDMA]" (with or without
	 * Ethernet padding); it is not about the frame, so it is turned off.
	 * stderr is not read: as root tshark warns about that there. */
	snprintf(cmd, sizeof(cmd),
		 "'%s' --disable-heuristic rpcrdma_infiniband -r '%s' %s%s%s -T fields "
		 "-e frame.number 2>/dev/null",
		 tshark, path, filter ? "-Y '" : "", filter ? filter : "", filter ? "'" : "");
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		ck_assert_msg(line[0] >= '0' && line[0] <= '9', "tshark: %s", line);
		n++;
	}
	ck_assert_int_eq(pclose(f), 0);
	return n;
}

static const char *find_tshark(void)
{
	const char *t = getenv("TSHARK");

	if (t && *t)
		return access(t, X_OK) == 0 ? t : NULL;
	return access("/usr/bin/tshark", X_OK) == 0 ? "/usr/bin/tshark" : NULL;
}

START_TEST(test_capture)
{
	struct dr_port *a, *b;
	struct dr_port_stats s;
	struct dr_pkt_desc d;
	struct dr_pcapng *r;
	struct dr_pcapng_pkt pk;
	struct zc_done z = {0};
	uint8_t frame[MAX_FRAME], hdr[128], trailer[7], mac[6];
	char path[256], err[256];
	unsigned frames, tlen;
	const char *tshark;
	int len, hlen;

	snprintf(path, sizeof(path), "test_port-%d.pcapng", (int)getpid());
	open_pair(&a, &b, path);
	ck_assert_int_eq(resolve_wait(a, b, IP_B, mac), 0);
	for (int i = 0; i < 3; i++) {
		len = build_send(&d, a, b, pattern, 100 * i, frame, sizeof(frame));
		ck_assert_int_eq(dr_port_send(a, frame, len), 0);
	}
	len = build_send(&d, b, a, pattern, 4096, frame, sizeof(frame));
	ck_assert_int_eq(dr_port_send(b, frame, len), 0);
	hlen = dr_pkt_build_split(&d, hdr, sizeof(hdr), trailer, &tlen);
	ck_assert_int_eq(dr_port_send_zc(b, hdr, hlen, pattern, 4096, trailer, tlen, zc_done, &z),
			 0);
	poll_until_rx(a, b, &sink_b, 3);
	poll_until_rx(b, a, &sink_a, 2);
	dr_port_get_stats(a, &s);
	/* a: announcement, request, 3 RoCE, the answer to b's probe out;
	 * b's announcement, the reply, b's probe (b learnt a from a's
	 * request, unconfirmed), 2 RoCE in */
	ck_assert_uint_eq(s.tx_frames, 6);
	ck_assert_uint_eq(s.rx_frames, 5);
	ck_assert_uint_eq(s.capture_errors, 0);
	dr_port_close(a);
	dr_port_close(b);
	ck_assert_uint_eq(z.calls, 1);

	/* the project's own pcapng reader: every frame, whole */
	r = dr_pcapng_open(path, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	frames = 0;
	while (dr_pcapng_next(r, &pk) == 1) {
		frames++;
		ck_assert_uint_eq(pk.caplen, pk.origlen);
		ck_assert_uint_eq(pk.linktype, DR_LINKTYPE_ETHERNET);
	}
	ck_assert_msg(dr_pcapng_next(r, &pk) == 0, "%s", dr_pcapng_strerror(r));
	dr_pcapng_close(r);
	ck_assert_uint_eq(frames, 11);

	tshark = find_tshark();
	if (!tshark) {
		fprintf(stderr, "test_capture: tshark not found, skipping the tshark checks\n");
	} else {
		ck_assert_uint_eq(tshark_count(tshark, path, NULL), 11);
		ck_assert_uint_eq(tshark_count(tshark, path, "arp"), 6);
		ck_assert_uint_eq(tshark_count(tshark, path, "infiniband"), 5);
		ck_assert_uint_eq(tshark_count(tshark, path,
					       "_ws.malformed || "
					       "_ws.expert.severity >= error"),
				  0);
	}
	if (!getenv("KEEP_PCAP"))
		unlink(path);
}
END_TEST

/* ---- lifecycle ------------------------------------------------------------------------------ */

static void open_named(const char *name, struct dr_port **a, struct dr_port **b)
{
	struct dr_port_config ca, cb;
	struct dr_port_err err = {0};
	char da[64], db[64];

	cfg_init(&ca, IP_A);
	cfg_init(&cb, IP_B);
	snprintf(da, sizeof(da), "pair:%s:0", name);
	snprintf(db, sizeof(db), "pair:%s:1", name);
	ca.device = da;
	cb.device = db;
	ck_assert_msg(dr_port_open(&ca, a, &err) == 0, "%s", err.msg);
	ck_assert_msg(dr_port_open(&cb, b, &err) == 0, "%s", err.msg);
	attach(*a, &sink_a);
	attach(*b, &sink_b);
}

START_TEST(test_reopen)
{
	struct dr_port_config c;
	struct dr_port_err err = {0};
	struct dr_port *a, *b, *p, *q;
	uint8_t mac[6];

	for (int round = 0; round < 3; round++) {
		open_named("re", &a, &b);
		/* the same end twice: refused */
		cfg_init(&c, IP_A);
		c.device = "pair:re:0";
		ck_assert_int_eq(dr_port_open(&c, &p, &err), -EBUSY);
		ck_assert_int_eq(err.param, DR_PORT_PARAM_DEVICE);
		ck_assert_int_eq(resolve_wait(a, b, IP_B, mac), 0);
		check_cross(a, b, &sink_b, 64);
		/* closing in the other order the second time */
		if (round & 1) {
			dr_port_close(b);
			dr_port_close(a);
		} else {
			dr_port_close(a);
			dr_port_close(b);
		}
	}
	/* one end re-opened again and again while the other stays */
	open_named("half", &a, &b);
	for (int round = 0; round < 12; round++) {
		struct dr_port_config ca;

		ck_assert_int_eq(resolve_wait(b, a, IP_A, mac), 0);
		check_cross(b, a, &sink_a, 64 + round);
		dr_port_close(a);
		cfg_init(&ca, IP_A);
		ca.device = "pair:half:0";
		ck_assert_msg(dr_port_open(&ca, &a, &err) == 0, "%s", err.msg);
		attach(a, &sink_a);
	}
	dr_port_close(a);
	dr_port_close(b);
	/* a hot-plugged vdev: created and removed each time */
	cfg_init(&c, IP_A);
	c.device = "net_ring0";
	for (int round = 0; round < 2; round++) {
		ck_assert_msg(dr_port_open(&c, &p, &err) == 0, "%s", err.msg);
		ck_assert_str_eq(dr_port_name(p), "net_ring0");
		ck_assert_int_eq(dr_port_open(&c, &q, &err), -EBUSY);
		ck_assert_int_eq(err.param, DR_PORT_PARAM_DEVICE);
		ck_assert_int_ge(dr_port_poll(p), 0);
		dr_port_close(p);
	}
	dr_port_close(NULL);
}
END_TEST

/* net_memif, server and client in this process: a real PMD, hot-plugged
 * and removed.  socket-abstract=no: 22.11's memif leaves an abstract
 * listening socket bound after close, so a server could not be re-created. */
START_TEST(test_memif)
{
	struct dr_port_config ca, cb;
	struct dr_port_err err = {0};
	struct dr_port *a, *b;
	struct dr_pkt_desc d;
	struct zc_done z = {0};
	uint8_t frame[2048], hdr[128], trailer[7], mac[6], mb[6];
	char path[64], da[160], db[160];
	unsigned tlen;
	int len, hlen;

	snprintf(path, sizeof(path), "/tmp/droce-test-%d.sock", (int)getpid());
	snprintf(da, sizeof(da), "net_memif0,role=server,socket=%s,socket-abstract=no", path);
	snprintf(db, sizeof(db), "net_memif1,role=client,socket=%s,socket-abstract=no", path);
	for (int round = 0; round < 2; round++) {
		cfg_init(&ca, IP_A);
		cfg_init(&cb, IP_B);
		ca.device = da;
		cb.device = db;
		ca.mtu = cb.mtu = 1500;
		ca.arp.tries = cb.arp.tries = 50; /* the link comes up asynchronously */
		ck_assert_msg(dr_port_open(&ca, &a, &err) == 0, "%s", err.msg);
		ck_assert_msg(dr_port_open(&cb, &b, &err) == 0, "%s", err.msg);
		attach(a, &sink_a);
		attach(b, &sink_b);
		ck_assert_str_eq(dr_port_name(a), "net_memif0");
		ck_assert_uint_eq(dr_port_max_window(a), 0);
		ck_assert(dr_port_lossless(a) && dr_port_lossless(b));
		ck_assert(!dr_port_tx_syscall(a) && !dr_port_tx_syscall(b));
		ck_assert_int_eq(resolve_wait(a, b, IP_B, mac), 0);
		dr_port_mac(b, mb);
		ck_assert_mem_eq(mac, mb, 6);
		check_cross(a, b, &sink_b, 1000);
		check_cross(b, a, &sink_a, 33);
		/* memif copies into its shared ring: the payload is released
		 * once the frame is sent, received byte for byte */
		len = build_send(&d, a, b, pattern, 1400, frame, sizeof(frame));
		hlen = dr_pkt_build_split(&d, hdr, sizeof(hdr), trailer, &tlen);
		ck_assert_int_eq(
		    dr_port_send_zc(a, hdr, hlen, pattern, 1400, trailer, tlen, zc_done, &z), 0);
		poll_until_rx(a, b, &sink_b, 2);
		ck_assert_uint_eq(z.calls, round + 1);
		ck_assert_uint_eq(sink_b.len, len);
		ck_assert_mem_eq(sink_b.frame, frame, len);
		dr_port_close(a);
		dr_port_close(b);
	}
	ck_assert_int_ne(access(path, F_OK), 0); /* memif removed it */
}
END_TEST

/* ---- timers and threads ------------------------------------------------------------------- */

struct tick {
	struct dr_port_timer *t;
	unsigned fired, rearm;
};

static void tick_fn(void *arg)
{
	struct tick *k = arg;

	k->fired++;
	if (k->rearm) {
		k->rearm--;
		ck_assert_int_eq(dr_port_timer_arm(k->t, 1000000), 0);
	}
}

START_TEST(test_timers)
{
	struct dr_port *a, *b;
	struct tick k = {.rearm = 2}, never = {0};
	uint64_t end;

	open_pair(&a, &b, NULL);
	k.t = dr_port_timer_new(a, tick_fn, &k);
	never.t = dr_port_timer_new(a, tick_fn, &never);
	ck_assert_ptr_nonnull(k.t);
	ck_assert_int_eq(dr_port_timer_arm(k.t, 1000000), 0);
	ck_assert_int_eq(dr_port_timer_arm(never.t, 2000000), 0);
	ck_assert(dr_port_timer_pending(never.t));
	dr_port_timer_cancel(never.t);
	ck_assert(!dr_port_timer_pending(never.t));
	end = dr_port_now_ns() + DEADLINE_NS;
	while (k.fired < 3 && dr_port_now_ns() < end)
		poll_both(a, b);
	ck_assert_uint_eq(k.fired, 3);
	ck_assert(!dr_port_timer_pending(k.t));
	ck_assert_uint_eq(never.fired, 0);
	dr_port_timer_free(k.t);
	dr_port_timer_free(never.t);
	close_pair(a, b);
}
END_TEST

struct thread_arg {
	struct dr_port *a, *b;
	uint32_t ip;
	int ret;
	uint8_t mac[6];
};

static void *resolver_thread(void *v)
{
	struct thread_arg *t = v;
	uint64_t end = dr_port_now_ns() + DEADLINE_NS;

	/* a thread DPDK does not know: it must still run the port's timers */
	while ((t->ret = dr_port_resolve(t->a, t->ip, t->mac)) == -EAGAIN &&
	       dr_port_now_ns() < end) {
		if (dr_port_poll(t->a) < 0 || dr_port_poll(t->b) < 0)
			break;
	}
	return NULL;
}

START_TEST(test_foreign_thread)
{
	struct thread_arg t = {0};
	pthread_t th;

	open_pair(&t.a, &t.b, NULL);
	/* each thread gets an lcore id, and gives it back when it ends */
	for (int i = 0; i < 3; i++) {
		t.ip = IP_NOBODY + 1 + i;
		ck_assert_int_eq(pthread_create(&th, NULL, resolver_thread, &t), 0);
		ck_assert_int_eq(pthread_join(th, NULL), 0);
		ck_assert_int_eq(t.ret, -EHOSTUNREACH);
	}
	t.ip = IP_B;
	ck_assert_int_eq(pthread_create(&th, NULL, resolver_thread, &t), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(t.ret, 0);
	dr_port_close(t.a);
	dr_port_close(t.b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("port");
	TCase *tc = tcase_create("port");

	verbose = getenv("VERBOSE") && *getenv("VERBOSE");
	dr_port_set_log(test_log, NULL);
	pattern_init();

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_arp_build);
	tcase_add_test(tc, test_arp_parse);
	tcase_add_test(tc, test_eal_refused_args);
	tcase_add_test(tc, test_eal_failure);
	tcase_add_test(tc, test_eal_start);
	tcase_add_test(tc, test_bad_config);
	tcase_add_test(tc, test_arp_resolve);
	tcase_add_test(tc, test_nd_resolve);
	tcase_add_test(tc, test_nd_forged);
	tcase_add_test(tc, test_nd_bad_config);
	tcase_add_test(tc, test_arp_reply_fields);
	tcase_add_test(tc, test_arp_unreachable);
	tcase_add_loop_test(tc, test_arp_forged_one, 0, FORGED_N);
	tcase_add_test(tc, test_arp_forged_burst);
	tcase_add_test(tc, test_arp_solicited_only);
	tcase_add_test(tc, test_arp_suspect_moved);
	tcase_add_test(tc, test_arp_peer_reopened);
	tcase_add_test(tc, test_roce_cross);
	tcase_add_test(tc, test_roce_unresolved_queue);
	tcase_add_test(tc, test_roce_zero_copy);
	tcase_add_test(tc, test_garbage_dropped);
	tcase_add_test(tc, test_vlan_tagged);
	tcase_add_test(tc, test_rx_filter);
	tcase_add_loop_test(tc, test_place, 0, sizeof(place_ops));
	tcase_add_test(tc, test_loopback);
	tcase_add_test(tc, test_batch_send);
	tcase_add_test(tc, test_batch_full);
	tcase_add_test(tc, test_batch_nested);
	tcase_add_test(tc, test_batch_early);
	tcase_add_test(tc, test_batch_hook);
	tcase_add_test(tc, test_capture);
	tcase_add_test(tc, test_reopen);
	tcase_add_test(tc, test_memif);
	tcase_add_test(tc, test_timers);
	tcase_add_test(tc, test_foreign_thread);
	suite_add_tcase(s, tc);

	/* one EAL per process: every case in this one */
	return ck_run(s, true);
}
