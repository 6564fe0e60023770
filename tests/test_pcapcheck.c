// SPDX-License-Identifier: BSD-2-Clause
/*
 * tools/droce-pcapcheck over captures made here with tools/pcapng's writer
 * (comments, flags, drop counts as FI_DROCE_PCAP writes them): its whole
 * output, exactly - the existing counts, the retransmissions by cause
 * (annotated, the rest of an annotated go-back-N, unexplained), the notes
 * by keyword, the dropped frames by reason (never counted as delivered or
 * retransmitted), --notes' lines, --require/--forbid of the new counters,
 * and a malformed option refused with the reader's message.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ck_run.h"
#include "dr_roce.h"
#include "../tools/pcapng.h"

#define IP_A   0xc0000201u /* 192.0.2.1: the capturing port */
#define IP_B   0xc0000202u /* 192.0.2.2 */
#define QP_A   0x000012
#define QP_B   0x000011
#define T0_NS  1704067200000000000ull /* 2024-01-01T00:00:00Z */
#define STEP   1500		      /* ns between frames */
#define OUT    DR_PCAPNG_FLAG_OUTBOUND
#define IN     DR_PCAPNG_FLAG_INBOUND
#define RTO_C  ", go-back-N from PSN 101, attempt 1 of 7, RTO 16384 us"
#define NAK_C  ", go-back-N from PSN 103, attempt 1 of 7, RTO 16384 us"
#define READ_C ", go-back-N from PSN 105, attempt 2 of 7, RTO 32768 us"
#define FRAMES 21

struct frame {
	bool from_b;	/* B -> A (in), else A -> B (out) */
	uint8_t opcode; /* RC_SEND_ONLY, RDMA_READ_REQUEST (4096 bytes) or ACKNOWLEDGE */
	uint32_t psn;
	uint8_t syndrome;    /* of an ACK */
	bool bad_icrc;	     /* flip the last byte */
	uint32_t flags;	     /* epb_flags beyond the direction */
	int dropcount;	     /* -1: none */
	const char *comment; /* NULL: none */
};

/* The scenario the expected output below counts, frame by frame. */
static const struct frame scenario[FRAMES] = {
    /* 1-3: three sends; 4: the first is acknowledged */
    {false, DR_OP_SEND_ONLY, 100, 0, false, 0, -1, "QP state: RTR -> RTS (connected)"},
    {false, DR_OP_SEND_ONLY, 101, 0, false, 0, -1, NULL},
    {false, DR_OP_SEND_ONLY, 102, 0, false, 0, -1, NULL},
    {true, DR_OP_ACK, 100, DR_AETH_ACK_UNLIMITED, false, 0, -1,
     "ACK coalesced: covers PSN 99..100"},
    /* 5-6: a timeout resends 101 and 102: one note, on the first */
    {false, DR_OP_SEND_ONLY, 101, 0, false, 0, -1, "retransmit: timeout" RTO_C},
    {false, DR_OP_SEND_ONLY, 102, 0, false, 0, -1, NULL},
    /* 7: a sequence NAK; 8-9: 103 sent, and resent for it */
    {true, DR_OP_ACK, 102, DR_AETH_NAK_PSN_SEQ, false, 0, -1,
     "NAK received: PSN sequence error, PSN 103"},
    {false, DR_OP_SEND_ONLY, 103, 0, false, 0, -1, NULL},
    {false, DR_OP_SEND_ONLY, 103, 0, false, 0, -1, "retransmit: NAK sequence error" NAK_C},
    /* 10: new data ends that go-back-N; 11: 102 again, nothing says why */
    {false, DR_OP_SEND_ONLY, 104, 0, false, 0, -1, NULL},
    {false, DR_OP_SEND_ONLY, 102, 0, false, 0, -1, NULL},
    /* 12: a bad ICRC droce dropped; 13: a drop count alone; neither counts */
    {true, DR_OP_SEND_ONLY, 500, 0, true, DR_PCAPNG_FLAG_CRC_ERR, 1, "dropped: bad ICRC"},
    {true, DR_OP_SEND_ONLY, 501, 0, false, 0, 1, NULL},
    /* 14: two comments, five notes (two outside the vocabulary) */
    {true, DR_OP_ACK, 104, DR_AETH_ACK_UNLIMITED, false, 0, -1, NULL},
    /* 15: dropped by its note alone */
    {true, DR_OP_SEND_ONLY, 502, 0, false, 0, -1, "dropped: unknown\tQPN 0x000099, 1 so far"},
    /* 16-17: a 4096-byte READ takes PSNs 105-108 (path MTU 1024), a send
     * 109; 18-19: both resent, one note: 109 is the same go-back-N */
    {false, DR_OP_READ_REQ, 105, 0, false, 0, -1, NULL},
    {false, DR_OP_SEND_ONLY, 109, 0, false, 0, -1, NULL},
    {false, DR_OP_READ_REQ, 105, 0, false, 0, -1, "retransmit: timeout" READ_C},
    {false, DR_OP_SEND_ONLY, 109, 0, false, 0, -1, NULL},
    /* 20-21: B sends 600 twice: the peer's retransmission, which A's note
     * calls a duplicate (B's capture would say why) */
    {true, DR_OP_SEND_ONLY, 600, 0, false, 0, -1, NULL},
    {true, DR_OP_SEND_ONLY, 600, 0, false, 0, -1,
     "duplicate: SEND_ONLY PSN 600 acknowledged again, ACK PSN 600"},
};

static const char *const comments14[2] = {
    "CNP received: rate 10000 -> 5000 Mb/s",
    "duplicate: READ PSN 7 answered again from the request; QP state: RTS -> ERROR (retry "
    "exceeded); frobnicate: x; no keyword\nhere",
};

static char dir[64], cap[96];

static void cleanup(void)
{
	unlink(cap);
	rmdir(dir);
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

/* An option at p: code, length, value, zero padding; returns its size */
static uint32_t opt(uint8_t *p, uint16_t code, const void *v, uint16_t n)
{
	uint32_t size = 4 + ((n + 3u) & ~3u);

	memset(p, 0, size);
	p[0] = (uint8_t)code;
	p[1] = (uint8_t)(code >> 8);
	p[2] = (uint8_t)n;
	p[3] = (uint8_t)(n >> 8);
	memcpy(p + 4, v, n);
	return size;
}

/* Frame 14 by hand, little-endian like the writer: an EPB with two
 * opt_comment options (dr_pcapng_write_epb() takes one) and epb_flags. */
static void write_epb_2comments(FILE *f, uint64_t ts, uint32_t flags, const uint8_t *data,
				uint32_t len)
{
	uint8_t b[1024], v[4];
	uint32_t n = 28;

	le32(b, 6); /* EPB */
	le32(b + 8, 0);
	le32(b + 12, (uint32_t)(ts >> 32));
	le32(b + 16, (uint32_t)ts);
	le32(b + 20, len);
	le32(b + 24, len);
	memcpy(b + n, data, len);
	while (len % 4)
		b[n + len++] = 0;
	n += len;
	n += opt(b + n, 1, comments14[0], (uint16_t)strlen(comments14[0]));
	n += opt(b + n, 1, comments14[1], (uint16_t)strlen(comments14[1]));
	le32(v, flags);
	n += opt(b + n, 2, v, 4);
	n += opt(b + n, 0, "", 0);
	n += 4;
	ck_assert_uint_le(n, sizeof(b));
	le32(b + 4, n);
	le32(b + n - 4, n);
	ck_assert_uint_eq(fwrite(b, 1, n, f), n);
}

/* Write the scenario to cap (frame 14 by hand, the rest with the writer on
 * the same stream, so the blocks stay in order). */
static void write_capture(void)
{
	static const uint8_t payload[16] = "droce pcapcheck";
	struct dr_pcapng_wopts o = {.nanoseconds = true, .appname = "test_pcapcheck"};
	struct dr_pcapng_writer *w;
	uint16_t ip_id = 0x100;
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/test_pcapcheck.%d", (int)getpid());
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(cap, sizeof(cap), "%s/notes.pcapng", dir);
	f = fopen(cap, "wb");
	ck_assert_ptr_nonnull(f);
	w = dr_pcapng_writer_open_opts(f, &o);
	ck_assert_ptr_nonnull(w);
	for (unsigned i = 0; i < FRAMES; i++) {
		const struct frame *fr = &scenario[i];
		struct dr_pcapng_epb e = {
		    .ts = T0_NS + (uint64_t)i * STEP,
		    .flags = (fr->from_b ? IN : OUT) | fr->flags,
		    .has_dropcount = fr->dropcount >= 0,
		    .dropcount = fr->dropcount >= 0 ? (uint64_t)fr->dropcount : 0,
		    .comment = fr->comment,
		};
		struct dr_pkt_desc d;
		uint8_t buf[256];
		int len;

		dr_pkt_desc_init(&d);
		d.src_ip4 = fr->from_b ? IP_B : IP_A;
		d.dst_ip4 = fr->from_b ? IP_A : IP_B;
		d.src_mac[5] = fr->from_b ? 0x0b : 0x0a;
		d.dst_mac[5] = fr->from_b ? 0x0a : 0x0b;
		d.sport = 0xc000 | (fr->from_b ? QP_B : QP_A);
		d.dqpn = fr->from_b ? QP_A : QP_B;
		d.ip_id = ip_id++; /* a new one each transmission, as droce does */
		d.opcode = fr->opcode;
		d.psn = fr->psn;
		if (fr->opcode == DR_OP_ACK) {
			d.aeth.syndrome = fr->syndrome;
			d.aeth.msn = fr->psn;
		} else if (fr->opcode == DR_OP_READ_REQ) {
			d.ackreq = true;
			d.reth.va = 0x10000;
			d.reth.rkey = 0x1234;
			d.reth.len = 4096;
		} else {
			d.ackreq = true;
			d.payload = payload;
			d.payload_len = sizeof(payload);
		}
		len = dr_pkt_build(&d, buf, sizeof(buf));
		ck_assert_int_gt(len, 0);
		if (fr->bad_icrc)
			buf[len - 1] ^= 0xff;
		if (i == 13) {
			write_epb_2comments(f, e.ts, e.flags, buf, (uint32_t)len);
			continue;
		}
		ck_assert_int_eq(dr_pcapng_write_epb(w, &e, buf, (uint32_t)len), 0);
	}
	ck_assert_int_eq(dr_pcapng_writer_close(w), 0);
	ck_assert_int_eq(fclose(f), 0);
}

/* Run droce-pcapcheck with args (shell words) on cap: its stdout and
 * stderr in out, its exit status returned. */
static int run(const char *args, char *out, size_t cap_out)
{
	const char *top = getenv("top_builddir");
	char cmd[512];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s/tools/droce-pcapcheck' %s '%s' 2>&1", top ? top : ".", args,
		 cap);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (n + 1 < cap_out) {
		size_t got = fread(out + n, 1, cap_out - 1 - n, p);

		if (!got)
			break;
		n += got;
	}
	out[n] = '\0';
	ck_assert_uint_lt(n + 1, cap_out); /* all of it */
	st = pclose(p);
	ck_assert_msg(WIFEXITED(st), "%s: status 0x%x", cmd, st);
	return WEXITSTATUS(st);
}

/* out, its first line (the file's name) removed */
static const char *after_name(const char *out)
{
	size_t n = strlen(cap);

	ck_assert_msg(!strncmp(out, cap, n) && out[n] == ':' && out[n + 1] == '\n', "%s", out);
	return out + n + 2;
}

/* The existing lines unchanged in form (the three dropped frames nowhere
 * in them: 21 frames, 18 RoCE, 15 request packets in two flows, 7
 * retransmitted), then the new ones. */
START_TEST(test_report)
{
	static const char want[] =
	    "frames: 21  RoCEv2 (UDP/4791): 18 (ok 18, bad 0)  ARP: 0  other: 0\n"
	    "by verdict:\n"
	    "  ok                                                   18\n"
	    "by opcode:\n"
	    "  0x04 RC_SEND_ONLY                                    13\n"
	    "  0x0c RC_RDMA_READ_REQUEST                             2\n"
	    "  0x11 RC_ACKNOWLEDGE                                   3\n"
	    "AETH syndromes:\n"
	    "  ACK                                                   2\n"
	    "  NAK_PSN_SEQ                                           1\n"
	    "RC request PSNs: 15 packets in 2 flow(s); RETRANSMIT 7, DUPLICATE 0, PSN_GAP 0, "
	    "PSN_LATE 0; READ responses resent 0\n"
	    /* 5 annotated, 6 the rest of its go-back-N, 9 annotated, 11
	     * unexplained, 18 annotated, 19 after its READ's PSNs, 21
	     * received */
	    "retransmissions by cause: 7\n"
	    "  NAK sequence error                                    1\n"
	    "  timeout                                               4\n"
	    "  resent by the peer                                    1\n"
	    "  unexplained                                           1\n"
	    "notes: 14 on 10 frame(s)\n"
	    "  retransmit                                            3\n"
	    "  NAK received                                          1\n"
	    "  duplicate                                             2\n"
	    "  ACK coalesced                                         1\n"
	    "  CNP received                                          1\n"
	    "  QP state                                              2\n"
	    "  dropped                                               2\n"
	    "  (no keyword)                                          1\n"
	    "  frobnicate                                            1\n"
	    "dropped by droce: 3 frame(s)\n"
	    "  (no reason given)                                     1\n"
	    "  bad ICRC                                              1\n"
	    "  unknown\\tQPN 0x000099                                 1\n"
	    "PASS: every RoCE frame parses with a valid ICRC\n";
	char out[8192];

	ck_assert_int_eq(run("", out, sizeof(out)), 0);
	ck_assert_str_eq(after_name(out), want);
}
END_TEST

/* --notes: every frame with a comment (not 13: a drop count alone), as
 * tshark -Y frame.comment would pick them, also with -q; a tab or a newline
 * in a comment escaped (here and in the report) */
START_TEST(test_notes)
{
	static const char want[] =
	    "annotated frames (number, time, direction, summary, comment; tab-separated):\n"
	    "1\t0.000000000\tout\t192.0.2.1 -> 192.0.2.2 RC_SEND_ONLY QP 0x000011 PSN 100\t"
	    "QP state: RTR -> RTS (connected)\n"
	    "4\t0.000004500\tin\t192.0.2.2 -> 192.0.2.1 RC_ACKNOWLEDGE QP 0x000012 PSN 100 ACK\t"
	    "ACK coalesced: covers PSN 99..100\n"
	    "5\t0.000006000\tout\t192.0.2.1 -> 192.0.2.2 RC_SEND_ONLY QP 0x000011 PSN 101\t"
	    "retransmit: timeout" RTO_C "\n"
	    "7\t0.000009000\tin\t192.0.2.2 -> 192.0.2.1 RC_ACKNOWLEDGE QP 0x000012 PSN 102 "
	    "NAK_PSN_SEQ\tNAK received: PSN sequence error, PSN 103\n"
	    "9\t0.000012000\tout\t192.0.2.1 -> 192.0.2.2 RC_SEND_ONLY QP 0x000011 PSN 103\t"
	    "retransmit: NAK sequence error" NAK_C "\n"
	    "12\t0.000016500\tin\t192.0.2.2 -> 192.0.2.1 RC_SEND_ONLY QP 0x000012 PSN 500\t"
	    "dropped: bad ICRC\n"
	    "14\t0.000019500\tin\t192.0.2.2 -> 192.0.2.1 RC_ACKNOWLEDGE QP 0x000012 PSN 104 ACK\t"
	    "CNP received: rate 10000 -> 5000 Mb/s; duplicate: READ PSN 7 answered again from "
	    "the request; QP state: RTS -> ERROR (retry exceeded); frobnicate: x; no keyword"
	    "\\nhere\n"
	    "15\t0.000021000\tin\t192.0.2.2 -> 192.0.2.1 RC_SEND_ONLY QP 0x000012 PSN 502\t"
	    "dropped: unknown\\tQPN 0x000099, 1 so far\n"
	    "18\t0.000025500\tout\t192.0.2.1 -> 192.0.2.2 RC_RDMA_READ_REQUEST QP 0x000011 PSN "
	    "105\t"
	    "retransmit: timeout" READ_C "\n"
	    "21\t0.000030000\tin\t192.0.2.2 -> 192.0.2.1 RC_SEND_ONLY QP 0x000012 PSN 600\t"
	    "duplicate: SEND_ONLY PSN 600 acknowledged again, ACK PSN 600\n";
	char out[8192];

	ck_assert_int_eq(run("-q --notes", out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);
}
END_TEST

/* The new counters in --require and --forbid */
START_TEST(test_conditions)
{
	char out[1024];

	ck_assert_int_eq(run("-q --require DROPPED:3,ANNOTATED:10,RETRANSMIT:7", out, sizeof(out)),
			 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(
	    run("-q --forbid UNEXPLAINED --require DROPPED:4,ANNOTATED:10", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "FAIL: UNEXPLAINED: 1, forbidden\n"
			      "FAIL: DROPPED: 3, at least 4 required\n");
}
END_TEST

/* A UDP GSO super-frame (docs/protocol.md A.10): five SEND MIDDLE packets
 * of 1024 bytes and a shorter SEND LAST, consecutive PSNs and IP IDs,
 * behind the first one's headers with the run's lengths, as a capture on a
 * veth between two packet: ports holds it.  Cut into its six packets, all
 * good, in PSN order; the same frame with one byte of its fourth packet
 * flipped is one bad frame, and counts no packet. */
static void write_gso(const char *path, bool corrupt)
{
	static uint8_t payload[1024];
	struct dr_pcapng_wopts o = {.nanoseconds = true, .appname = "test_pcapcheck"};
	struct dr_pcapng_epb e = {.ts = T0_NS, .flags = OUT};
	struct dr_pcapng_writer *w;
	static uint8_t sf[42 + 6 * 1100];
	size_t sf_len = 0;
	FILE *f;

	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	for (unsigned i = 0; i < 6; i++) {
		struct dr_pkt_desc d;
		uint8_t buf[1200];
		int len;

		dr_pkt_desc_init(&d);
		d.src_ip4 = IP_A;
		d.dst_ip4 = IP_B;
		d.src_mac[5] = 0x0a;
		d.dst_mac[5] = 0x0b;
		d.sport = 0xc000 | QP_A;
		d.dqpn = QP_B;
		d.ip_id = (uint16_t)(0xfffe + i); /* wraps, as the kernel's does */
		d.opcode = i < 5 ? DR_OP_SEND_MIDDLE : DR_OP_SEND_LAST;
		d.psn = 200 + i;
		d.ackreq = i == 5;
		d.payload = payload;
		d.payload_len = i < 5 ? 1024 : 100;
		len = dr_pkt_build(&d, buf, sizeof(buf));
		ck_assert_int_gt(len, 42);
		if (!i) {
			memcpy(sf, buf, 42);
			sf_len = 42;
		}
		memcpy(sf + sf_len, buf + 42, (size_t)len - 42);
		sf_len += (size_t)len - 42;
	}
	sf[16] = (uint8_t)((sf_len - 14) >> 8); /* IPv4 total length */
	sf[17] = (uint8_t)(sf_len - 14);
	sf[38] = (uint8_t)((sf_len - 34) >> 8); /* UDP length */
	sf[39] = (uint8_t)(sf_len - 34);
	if (corrupt)
		sf[42 + 3 * 1040 + 500] ^= 1;
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	w = dr_pcapng_writer_open_opts(f, &o);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(dr_pcapng_write_epb(w, &e, sf, (uint32_t)sf_len), 0);
	ck_assert_int_eq(dr_pcapng_writer_close(w), 0);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_gso)
{
	char out[4096], good[sizeof(cap)];

	memcpy(good, cap, sizeof(cap));
	snprintf(cap, sizeof(cap), "%s/gso.pcapng", dir);
	write_gso(cap, false);
	ck_assert_int_eq(run("", out, sizeof(out)), 0);
	ck_assert_msg(strstr(after_name(out),
			     "frames: 1  RoCEv2 (UDP/4791): 6 (ok 6, bad 0)  ARP: 0  "
			     "other: 0\n"
			     "UDP GSO super-frames: 1 carrying 6 RoCEv2 packets "
			     "(counted above and below one by one)\n") == after_name(out),
		      "%s", out);
	ck_assert_int_eq(run("-q --require UDP_GSO_FRAMES:1,UDP_GSO_PACKETS:6,RC_SEND_MIDDLE:5,"
			     "RC_SEND_LAST:1 --forbid PSN_GAP,PSN_LATE,RETRANSMIT,DUPLICATE",
			     out, sizeof(out)),
			 0);
	ck_assert_str_eq(out, "");
	write_gso(cap, true);
	ck_assert_int_eq(run("-q", out, sizeof(out)), 1);
	ck_assert_int_eq(run("", out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "RoCEv2 (UDP/4791): 1 (ok 0, bad 1)"), "%s", out);
	ck_assert_msg(!strstr(out, "UDP GSO super-frames"), "%s", out);
	unlink(cap);
	memcpy(cap, good, sizeof(cap));
}
END_TEST

/* A malformed option: the reader's message, exit 2 */
START_TEST(test_bad_option)
{
	static const uint8_t frame[20] = "not a RoCE frame";
	struct dr_pcapng_epb e = {.ts = 1, .flags = DR_PCAPNG_FLAG_INBOUND};
	struct dr_pcapng_writer *w;
	char out[1024], want[512], good[sizeof(cap)];
	long epb;
	FILE *f;

	memcpy(good, cap, sizeof(cap));
	snprintf(cap, sizeof(cap), "%s/bad.pcapng", dir);
	f = fopen(cap, "w+b");
	ck_assert_ptr_nonnull(f);
	w = dr_pcapng_writer_open_stream(f, 0, NULL);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(dr_pcapng_writer_flush(w), 0);
	epb = ftell(f);
	ck_assert_int_eq(dr_pcapng_write_epb(w, &e, frame, sizeof(frame)), 0);
	ck_assert_int_eq(dr_pcapng_writer_close(w), 0);
	/* epb_flags, the first option (after 28 bytes and the frame): length 3 */
	ck_assert_int_eq(fseek(f, epb + 28 + (long)sizeof(frame) + 2, SEEK_SET), 0);
	ck_assert_int_eq(fputc(3, f), 3);
	ck_assert_int_eq(fclose(f), 0);

	snprintf(want, sizeof(want),
		 "droce-pcapcheck: %s: offset %ld: enhanced packet block 0x00000006: epb_flags at "
		 "offset %ld: length 3 != 4\n",
		 cap, epb, epb + 28 + (long)sizeof(frame));
	ck_assert_int_eq(run("-q", out, sizeof(out)), 2);
	ck_assert_str_eq(out, want);
	unlink(cap);
	memcpy(cap, good, sizeof(cap));
}
END_TEST

static Suite *pcapcheck_suite(void)
{
	Suite *s = suite_create("pcapcheck");
	TCase *tc = tcase_create("notes");

	tcase_add_unchecked_fixture(tc, write_capture, cleanup);
	tcase_add_test(tc, test_report);
	tcase_add_test(tc, test_notes);
	tcase_add_test(tc, test_conditions);
	tcase_add_test(tc, test_bad_option);
	tcase_add_test(tc, test_gso);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(pcapcheck_suite(), false);
}
