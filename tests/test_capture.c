// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_capture - what FI_DROCE_PCAP writes besides the frames (issue 15,
 * point 1): wall-clock nanosecond timestamps, increasing; the interface
 * named (if_name, if_description); a note on a sent frame and on a
 * received one (opt_comment); received frames droce dropped, marked so
 * (epb_flags inbound + link-layer error bits, epb_dropcount 1, "dropped:
 * <reason>"), by the port (bad ICRC) and by the rx callback
 * (dr_port_capture_drop); frames that are not RoCEv2 left unmarked.
 *
 * Two in-process ports over net_ring (no root): A captures, B sends it
 * frames.  The capture is read back with the project's reader (every frame
 * byte for byte, stamps between the test's own clock readings) and with
 * tshark (the fields Wireshark shows; skipped, and said so, without
 * tshark).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dr_port.h"
#include "dr_roce.h"
#include "../tools/pcapng.h"
#include "tshark_fields.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define IP_A		IP4(192, 0, 2, 1)
#define IP_B		IP4(192, 0, 2, 2)
#define MAX_FRAME	2048
#define DEADLINE_NS	2000000000ull
#define NFRAMES		7 /* RoCE (and one UDP) frames the test makes */

/* the frames of the scenario, by PSN */
enum {
	PSN_NOTED = 7,	    /* A -> B, two notes */
	PSN_PLAIN = 8,	    /* A -> B, none */
	PSN_BAD_ICRC = 100, /* B -> A, dropped by the port */
	PSN_RX_NOTED = 101, /* B -> A, noted by A's rx callback, which answers */
	PSN_DROPPED = 102,  /* B -> A, dropped by A's rx callback */
	PSN_ANSWER = 200,   /* A -> B, sent by A's rx callback, noted */
	PSN_NOT_ROCE = 103, /* B -> A on UDP port 4792: not RoCEv2 */
};

struct frame {
	uint8_t b[MAX_FRAME];
	int len;
};

static struct frame sent[NFRAMES];
static unsigned nsent;
static struct dr_port *pa, *pb;
static unsigned a_rx, b_rx;
static uint8_t mac_a[6];
static char name_a[64]; /* A's ethdev */

static const uint8_t payload[64] = "capture test payload: 0123456789abcdefghijklmnopqrstuvwxyz!";

static void test_log(void *ctx, enum dr_port_log_level level, const char *msg)
{
	if (getenv("VERBOSE") || level == DR_PORT_LOG_WARN)
		fprintf(stderr, "[%d] %s\n", (int)level, msg);
}

/* A RoCE SEND_ONLY frame from -> to, remembered in sent[] */
static struct frame *build(struct dr_port *from, struct dr_port *to, uint32_t psn)
{
	struct frame *f = &sent[nsent++];
	struct dr_pkt_desc d;

	ck_assert_uint_le(nsent, NFRAMES);
	dr_pkt_desc_init(&d);
	dr_port_mac(from, d.src_mac);
	dr_port_mac(to, d.dst_mac);
	d.src_ip4 = dr_port_ip4(from);
	d.dst_ip4 = dr_port_ip4(to);
	d.ip_id = (uint16_t)psn;
	d.opcode = DR_OP_SEND_ONLY;
	d.dqpn = 0x11;
	d.psn = psn;
	d.payload = payload;
	d.payload_len = sizeof(payload);
	f->len = dr_pkt_build(&d, f->b, sizeof(f->b));
	ck_assert_int_gt(f->len, 0);
	return f;
}

/* A's rx callback: notes PSN_RX_NOTED and answers it with a noted frame;
 * drops PSN_DROPPED as an engine would (an unknown QPN) */
static void a_recv(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	a_rx++;
	if (pkt->psn == PSN_RX_NOTED) {
		struct frame *f;

		dr_port_capture_note(pa, frame, len, "test: received psn %u", pkt->psn);
		f = build(pa, pb, PSN_ANSWER);
		dr_port_capture_note(pa, f->b, f->len, "test: answer to psn %u", pkt->psn);
		ck_assert_int_eq(dr_port_send(pa, f->b, f->len), 0);
	} else if (pkt->psn == PSN_DROPPED) {
		dr_port_capture_drop(pa, "unknown QPN 0x%06x", pkt->dqpn);
	}
}

static void b_recv(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	b_rx++;
}

static void poll_until(unsigned *n, unsigned want)
{
	uint64_t end = dr_port_now_ns() + DEADLINE_NS;

	while (*n < want && dr_port_now_ns() < end) {
		ck_assert_int_ge(dr_port_poll(pa), 0);
		ck_assert_int_ge(dr_port_poll(pb), 0);
	}
	ck_assert_uint_eq(*n, want);
}

static uint64_t real_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* the scenario: returns the capture's path; t0/t1 bracket it */
static void run(const char *path, uint64_t *t0, uint64_t *t1)
{
	struct dr_port_config ca, cb;
	struct dr_port_err err = {0};
	struct dr_port_stats s;
	struct frame *f;
	uint8_t mac[6];
	uint64_t end;
	int ret;

	memset(&ca, 0, sizeof(ca));
	ca.ip4 = IP_A;
	ca.prefix_len = 24;
	ca.device = "pair:cap:0";
	ca.pcap_path = path;
	cb = ca;
	cb.ip4 = IP_B;
	cb.device = "pair:cap:1";
	cb.pcap_path = NULL;
	*t0 = real_ns();
	ck_assert_msg(dr_port_open(&ca, &pa, &err) == 0, "%s", err.msg);
	ck_assert_msg(dr_port_open(&cb, &pb, &err) == 0, "%s", err.msg);
	dr_port_mac(pa, mac_a);
	snprintf(name_a, sizeof(name_a), "%s", dr_port_name(pa));
	ck_assert(dr_port_capturing(pa));
	ck_assert(!dr_port_capturing(pb));
	dr_port_set_rx(pa, a_recv, NULL);
	dr_port_set_rx(pb, b_recv, NULL);
	end = dr_port_now_ns() + DEADLINE_NS;
	while (((ret = dr_port_resolve(pa, IP_B, mac)) == -EAGAIN ||
		dr_port_resolve(pb, IP_A, mac) == -EAGAIN) &&
	       dr_port_now_ns() < end) {
		dr_port_poll(pa);
		dr_port_poll(pb);
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(dr_port_resolve(pb, IP_A, mac), 0);

	/* A sends: one frame with two notes, one without */
	f = build(pa, pb, PSN_NOTED);
	dr_port_capture_note(pa, f->b, f->len, "test: sent note psn %d", PSN_NOTED);
	dr_port_capture_note(pa, f->b, f->len, "second");
	ck_assert_int_eq(dr_port_send(pa, f->b, f->len), 0);
	f = build(pa, pb, PSN_PLAIN);
	ck_assert_int_eq(dr_port_send(pa, f->b, f->len), 0);
	poll_until(&b_rx, 2);
	/* B sends: a bad ICRC, one A notes and answers, one A drops */
	f = build(pb, pa, PSN_BAD_ICRC);
	f->b[f->len - 1] ^= 0x5a;
	ck_assert_int_eq(dr_port_send(pb, f->b, f->len), 0);
	f = build(pb, pa, PSN_RX_NOTED);
	ck_assert_int_eq(dr_port_send(pb, f->b, f->len), 0);
	f = build(pb, pa, PSN_DROPPED);
	ck_assert_int_eq(dr_port_send(pb, f->b, f->len), 0);
	/* and UDP to port 4792: the interface's other traffic */
	f = build(pb, pa, PSN_NOT_ROCE);
	f->b[14 + 20 + 2] = 0x12;
	f->b[14 + 20 + 3] = 0xb8;
	ck_assert_int_eq(dr_port_send(pb, f->b, f->len), 0);
	poll_until(&a_rx, 2);
	poll_until(&b_rx, 3); /* the answer */
	dr_port_get_stats(pa, &s);
	ck_assert_uint_eq(s.rx_verdict[DR_PKT_BAD_ICRC], 1);
	ck_assert_uint_eq(s.rx_verdict[DR_PKT_NOT_ROCE], 1);
	ck_assert_uint_eq(s.capture_errors, 0);
	/* notes on frames that never leave: the 17th pushes the oldest out */
	for (int i = 0; i < 17; i++) {
		uint8_t never[80] = {0};

		never[20] = (uint8_t)i;
		dr_port_capture_note(pa, never, sizeof(never), "never sent %d", i);
	}
	dr_port_get_stats(pa, &s);
	ck_assert_uint_eq(s.capture_errors, 1);
	dr_port_close(pa);
	dr_port_close(pb);
	*t1 = real_ns();
	ck_assert_uint_eq(nsent, NFRAMES);
}

/* ---- the project's reader: the bytes, the stamps --------------------------------- */

static void check_reader(const char *path, uint64_t t0, uint64_t t1)
{
	unsigned found[NFRAMES] = {0}, frames = 0;
	struct dr_pcapng_pkt pk;
	struct dr_pcapng *r;
	uint64_t prev = 0;
	char err[256];

	r = dr_pcapng_open(path, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	while (dr_pcapng_next(r, &pk) == 1) {
		uint64_t ts = pk.ts_sec * 1000000000u + pk.ts_nsec;

		frames++;
		ck_assert_uint_eq(pk.caplen, pk.origlen);
		ck_assert_msg(ts >= t0 && ts <= t1,
			      "frame %u stamped %" PRIu64 " ns, not in [%" PRIu64 ", %" PRIu64 "]",
			      frames, ts, t0, t1);
		ck_assert_msg(ts > prev, "frame %u: %" PRIu64 " ns, not after %" PRIu64, frames, ts,
			      prev);
		prev = ts;
		for (unsigned i = 0; i < NFRAMES; i++)
			if (pk.caplen == (uint32_t)sent[i].len &&
			    !memcmp(pk.data, sent[i].b, pk.caplen))
				found[i]++;
	}
	ck_assert_msg(dr_pcapng_next(r, &pk) == 0, "%s", dr_pcapng_strerror(r));
	dr_pcapng_close(r);
	/* each frame of the scenario once, byte for byte (the bad ICRC too) */
	for (unsigned i = 0; i < NFRAMES; i++)
		ck_assert_msg(found[i] == 1, "frame %u of the scenario found %u times", i,
			      found[i]);
}

/* ---- tshark: what Wireshark shows ------------------------------------------------------ */

#define NF 9
struct row {
	char f[NF][512]; /* the fields of tshark_rows(), in order */
};
enum { F_NUM, F_TIME, F_PSN, F_DPORT, F_FLAGS, F_DROPS, F_COMMENT, F_IFNAME, F_IFDESC };

/* tshark's fields of each frame matching filter (NULL: every one) */
static unsigned tshark_rows(const char *tshark, const char *path, const char *filter,
			    struct row *rows, unsigned max)
{
	static const char *const fields[NF] = {
	    "frame.number",  "frame.time_epoch",     "infiniband.bth.psn",
	    "udp.dstport",   "frame.packet_flags",   "frame.drop_count",
	    "frame.comment", "frame.interface_name", "frame.interface_description",
	};

	return tshark_fields(tshark, path, filter, fields, NF, rows[0].f[0], sizeof(rows[0].f[0]),
			     max);
}

static const struct row *by_psn(const struct row *rows, unsigned n, unsigned psn)
{
	const struct row *found = NULL;
	char want[16];

	snprintf(want, sizeof(want), "%u", psn);
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(rows[i].f[F_PSN], want)) {
			ck_assert_msg(!found, "psn %u twice", psn);
			found = &rows[i];
		}
	ck_assert_msg(found, "psn %u not in the capture", psn);
	return found;
}

/* a frame's flags, drop count and comment, exactly */
static void expect(const struct row *r, uint32_t flags, const char *drops, const char *comment)
{
	ck_assert_msg(strtoul(r->f[F_FLAGS], NULL, 0) == flags, "frame %s: flags %s, not 0x%08x",
		      r->f[F_NUM], r->f[F_FLAGS], flags);
	ck_assert_str_eq(r->f[F_DROPS], drops);
	ck_assert_str_eq(r->f[F_COMMENT], comment);
}

static void check_tshark(const char *tshark, const char *path, uint64_t t0, uint64_t t1)
{
	static struct row rows[64], sel[8];
	const struct row *r, *ans;
	char mac[32], desc[160];
	unsigned n, m, prev_s = 0, prev_ns = 0;
	const uint8_t *a = mac_a;

	n = tshark_rows(tshark, path, NULL, rows, 64);
	ck_assert_uint_ge(n, NFRAMES);
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3], a[4],
		 a[5]);
	for (unsigned i = 0; i < n; i++) {
		unsigned s, ns;

		/* wall-clock time, nanoseconds, increasing */
		ck_assert_msg(sscanf(rows[i].f[F_TIME], "%u.%9u", &s, &ns) == 2 &&
				  strlen(strchr(rows[i].f[F_TIME], '.') + 1) == 9,
			      "time %s", rows[i].f[F_TIME]);
		ck_assert_uint_ge(s, t0 / 1000000000u);
		ck_assert_uint_le(s, t1 / 1000000000u);
		ck_assert_msg(s > prev_s || (s == prev_s && ns > prev_ns), "frame %u at %s", i + 1,
			      rows[i].f[F_TIME]);
		prev_s = s;
		prev_ns = ns;
		/* the interface block */
		ck_assert_str_eq(rows[i].f[F_IFNAME], name_a);
		snprintf(desc, sizeof(desc), "droce port %s (net_ring) 192.0.2.1/24 %s", name_a,
			 mac);
		ck_assert_str_eq(rows[i].f[F_IFDESC], desc);
	}
	expect(by_psn(rows, n, PSN_NOTED), DR_PCAPNG_FLAG_OUTBOUND, "",
	       "test: sent note psn 7; second");
	expect(by_psn(rows, n, PSN_PLAIN), DR_PCAPNG_FLAG_OUTBOUND, "", "");
	expect(by_psn(rows, n, PSN_BAD_ICRC), DR_PCAPNG_FLAG_INBOUND | DR_PCAPNG_FLAG_CRC_ERR, "1",
	       "dropped: bad ICRC");
	r = by_psn(rows, n, PSN_RX_NOTED);
	expect(r, DR_PCAPNG_FLAG_INBOUND, "", "test: received psn 101");
	/* the answer, sent from the rx callback (it leaves when the poll
	 * ends), after what it answers */
	ans = by_psn(rows, n, PSN_ANSWER);
	expect(ans, DR_PCAPNG_FLAG_OUTBOUND, "", "test: answer to psn 101");
	ck_assert_uint_gt(strtoul(ans->f[F_NUM], NULL, 10), strtoul(r->f[F_NUM], NULL, 10));
	expect(by_psn(rows, n, PSN_DROPPED), DR_PCAPNG_FLAG_INBOUND, "1",
	       "dropped: unknown QPN 0x000011");
	/* not RoCEv2: recorded, not marked */
	m = 0;
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(rows[i].f[F_DPORT], "4792")) {
			expect(&rows[i], DR_PCAPNG_FLAG_INBOUND, "", "");
			m++;
		}
	ck_assert_uint_eq(m, 1);
	/* the display filters a user types find exactly those frames */
	m = tshark_rows(tshark, path, "frame.comment contains \"dropped:\"", sel, 8);
	ck_assert_uint_eq(m, 2);
	ck_assert_str_eq(sel[0].f[F_PSN], "100");
	ck_assert_str_eq(sel[1].f[F_PSN], "102");
	m = tshark_rows(tshark, path, "frame.packet_flags_crc_error == 1 && frame.drop_count == 1",
			sel, 8);
	ck_assert_uint_eq(m, 1);
	ck_assert_str_eq(sel[0].f[F_PSN], "100");
	m = tshark_rows(tshark, path, "frame.comment contains \"test:\"", sel, 8);
	ck_assert_uint_eq(m, 3);
	/* every frame without an annotation has no comment at all */
	m = tshark_rows(tshark, path, "frame.comment", sel, 8);
	ck_assert_uint_eq(m, 5);
}

START_TEST(test_capture_records)
{
	/* configure's, exported by make check (AM_TESTS_ENVIRONMENT) */
	const char *tshark = getenv("TSHARK");
	struct dr_port_err err = {0};
	uint64_t t0, t1;
	char path[256];

	ck_assert_msg(dr_port_eal_init(NULL, "pair:x:0", &err) == 0, "%s", err.msg);
	snprintf(path, sizeof(path), "test_capture-%d.pcapng", (int)getpid());
	run(path, &t0, &t1);
	check_reader(path, t0, t1);
	if (!tshark || !*tshark || access(tshark, X_OK))
		fprintf(stderr, "test_capture: no tshark (TSHARK), skipping the tshark checks\n");
	else
		check_tshark(tshark, path, t0, t1);
	if (!getenv("KEEP_PCAP"))
		unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("capture");
	TCase *tc = tcase_create("capture");
	SRunner *sr;
	int failed;

	dr_port_set_log(test_log, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_capture_records);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	/* one EAL per process */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
