// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_golden - the codec against real rdma_rxe traffic, and the pcapng
 * reader it is read with.
 *
 * For every capture in tests/golden (copied from ../shared/pcaps/rxe, made by
 * ../shared/rxe-lab: two qemu guests running rdma_rxe on Debian's 6.1 kernel,
 * captured on the host bridge br0; the rxe-host-* ones have a single guest
 * facing a user-space stand-in on the host, which built the CM REJ they hold;
 * rxe-ipv6-rping was made the same way with a script in the guests giving
 * each eth0 a ULA, fd77::11 and fd77::12, and running rping over them):
 *   - every frame to UDP port 4791 parses with dr_pkt_parse (ICRC checked),
 *     dr_pkt_icrc() equals the ICRC carried on the wire, and
 *     dr_pkt_to_desc() + dr_pkt_build() / dr_pkt_build_split() give the
 *     frame back byte for byte;
 *   - every other frame gets the verdict its first non-RoCE layer calls for
 *     (ARP: NOT_IP; TCP, ICMP, ICMPv6: NOT_UDP; other UDP: NOT_ROCE);
 *   - the counts of each, the count of every BTH opcode and of QP1 CM MADs
 *     equal what tshark counts (table below).
 * Also: the worked ICRC vector of docs/protocol.md A.9, and the pcapng
 * reader on hand-made files (both byte orders, every truncation, corrupt
 * blocks).
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dr_roce.h"
#include "../tools/pcapng.h"
#include "ck_run.h"

#define MAX_OPS 8

struct op_count {
	uint8_t op;
	unsigned n;
};

struct golden {
	const char *file;
	unsigned frames;  /* all frames */
	unsigned roce;	  /* udp.dstport == 4791: must parse DR_PKT_OK */
	unsigned arp;	  /* DR_PKT_NOT_IP */
	unsigned not_udp; /* IPv4/IPv6 but not UDP (TCP, ICMP, ICMPv6): DR_PKT_NOT_UDP */
	unsigned gsi;	  /* UD SEND_ONLY to QP1, Q_Key 0x80010000, SrcQP 1, CM MAD */
	struct op_count ops[MAX_OPS]; /* every opcode seen, exact counts */
};

/*
 * Provenance: tshark 4.0.17 over each file, e.g. for F = rxe-rping.pcapng
 *   frames   tshark -r F | wc -l
 *   roce     tshark -r F -Y 'udp.dstport==4791' | wc -l
 *   arp      tshark -r F -Y 'arp' | wc -l
 *   not_udp  tshark -r F -Y '(ip || ipv6) && !udp' | wc -l
 *   gsi      tshark -r F -Y 'infiniband.bth.opcode==100 && infiniband.bth.destqp==1
 *                  && infiniband.deth.q_key==0x80010000 && infiniband.deth.srcqp==1
 *                  && infiniband.mad.mgmtclass==7' | wc -l
 *   ops      tshark -r F -Y 'udp.dstport==4791' -T fields -e infiniband.bth.opcode
 *                  | sort -n | uniq -c
 * frames == roce + arp + not_udp in every file (no other UDP, no VLAN).
 */
static const struct golden goldens[] = {
	{ "rxe-atomic_bw.pcapng", 259, 200, 2, 57, 0,
	  { { DR_OP_ATOMIC_ACK, 100 }, { DR_OP_FETCH_ADD, 100 } } },
	{ "rxe-fi_pingpong_verbs.pcapng", 106, 69, 4, 33, 5,
	  { { DR_OP_SEND_FIRST, 20 }, { DR_OP_SEND_LAST, 20 }, { DR_OP_SEND_ONLY, 2 },
	    { DR_OP_ACK, 22 }, { DR_OP_UD_SEND_ONLY, 5 } } },
	/* REQ from rxe, REJ from the user-space stand-in */
	{ "rxe-host-cm_reject-client.pcapng", 9, 2, 2, 5, 2, { { DR_OP_UD_SEND_ONLY, 2 } } },
	/* 4 REQ retries from rxe, then its own REJ */
	{ "rxe-host-rping-client-nft.pcapng", 19, 5, 4, 10, 5, { { DR_OP_UD_SEND_ONLY, 5 } } },
	/* rping over IPv6 (fd77::12 -> fd77::11, ULAs on both guests'
	 * eth0): GIDs are the IPv6 addresses, UDP checksum 0, hop limit 64 */
	{ "rxe-ipv6-rping.pcapng", 59, 29, 4, 26, 5,
	  { { DR_OP_SEND_ONLY, 8 }, { DR_OP_WRITE_ONLY, 2 }, { DR_OP_READ_REQ, 2 },
	    { DR_OP_READ_RSP_ONLY, 2 }, { DR_OP_ACK, 10 }, { DR_OP_UD_SEND_ONLY, 5 } } },
	{ "rxe-rc_pingpong.pcapng", 72, 42, 3, 27, 0,
	  { { DR_OP_SEND_ONLY, 21 }, { DR_OP_ACK, 21 } } },
	{ "rxe-read_bw.pcapng", 558, 500, 2, 56, 0,
	  { { DR_OP_READ_REQ, 100 }, { DR_OP_READ_RSP_FIRST, 100 },
	    { DR_OP_READ_RSP_MIDDLE, 200 }, { DR_OP_READ_RSP_LAST, 100 } } },
	{ "rxe-rping.pcapng", 85, 65, 5, 15, 5,
	  { { DR_OP_SEND_ONLY, 20 }, { DR_OP_WRITE_ONLY, 5 }, { DR_OP_READ_REQ, 5 },
	    { DR_OP_READ_RSP_ONLY, 5 }, { DR_OP_ACK, 25 }, { DR_OP_UD_SEND_ONLY, 5 } } },
	{ "rxe-send_lat.pcapng", 247, 202, 2, 43, 0,
	  { { DR_OP_SEND_ONLY, 101 }, { DR_OP_ACK, 101 } } },
	{ "rxe-ucmatose.pcapng", 44, 25, 3, 16, 5,
	  { { DR_OP_SEND_ONLY, 10 }, { DR_OP_ACK, 10 }, { DR_OP_UD_SEND_ONLY, 5 } } },
	/* UD data QPs (Q_Key 0x11111111), no CM */
	{ "rxe-ud_pingpong.pcapng", 48, 20, 2, 26, 0, { { DR_OP_UD_SEND_ONLY, 20 } } },
	/* MTU 4200: 4096-byte WRITE ONLY payloads, the largest PMTU */
	{ "rxe-write_bw-mtu4200.pcapng", 265, 200, 5, 60, 0,
	  { { DR_OP_WRITE_ONLY, 100 }, { DR_OP_ACK, 100 } } },
	{ "rxe-write_bw.pcapng", 568, 500, 6, 62, 0,
	  { { DR_OP_WRITE_FIRST, 100 }, { DR_OP_WRITE_MIDDLE, 200 }, { DR_OP_WRITE_LAST, 100 },
	    { DR_OP_ACK, 100 } } },
	{ "rxe-write_bw_cm.pcapng", 594, 574, 4, 16, 10,
	  { { DR_OP_SEND_ONLY, 32 }, { DR_OP_WRITE_FIRST, 100 }, { DR_OP_WRITE_MIDDLE, 200 },
	    { DR_OP_WRITE_LAST, 100 }, { DR_OP_ACK, 132 }, { DR_OP_UD_SEND_ONLY, 10 } } },
};

#define NGOLDEN (sizeof(goldens) / sizeof(goldens[0]))

/* ---- Where the captures are --------------------------------------------- */

static char golden_path[4096];

/* $top_srcdir (exported by make check), else $srcdir (automake's test
 * driver), else the directory this source file was compiled from. */
static const char *golden_dir(void)
{
	const char *env[] = { "top_srcdir", "srcdir" };
	const char *slash;
	char probe[4200];
	unsigned i;

	if (golden_path[0])
		return golden_path;
	for (i = 0; i < 2; i++) {
		const char *d = getenv(env[i]);

		if (!d || !*d)
			continue;
		snprintf(golden_path, sizeof(golden_path), "%s/tests/golden", d);
		snprintf(probe, sizeof(probe), "%s/%s", golden_path, goldens[0].file);
		if (access(probe, R_OK) == 0)
			return golden_path;
	}
	slash = strrchr(__FILE__, '/');
	snprintf(golden_path, sizeof(golden_path), "%.*s/golden",
		 slash ? (int)(slash - __FILE__) : 1, slash ? __FILE__ : ".");
	return golden_path;
}

/* ---- Golden captures ----------------------------------------------------- */

/* The verdict the first non-RoCE layer of a frame calls for, judged from its
 * bytes independently of the parser (untagged Ethernet, as captured). */
static enum dr_pkt_verdict expected_non_roce(const uint8_t *f, size_t len)
{
	uint16_t type = f[12] << 8 | f[13];
	const uint8_t *l3 = f + 14;
	size_t l4;

	if (type == DR_ETH_P_IPV4) {
		if (l3[9] != DR_IPPROTO_UDP)
			return DR_PKT_NOT_UDP;
		l4 = 14 + (l3[0] & 0x0f) * 4;
	} else if (type == DR_ETH_P_IPV6) {
		if (l3[6] != DR_IPPROTO_UDP)
			return DR_PKT_NOT_UDP;
		l4 = 14 + 40;
	} else {
		return DR_PKT_NOT_IP;
	}
	ck_assert_uint_ge(len, l4 + 4);
	return (f[l4 + 2] << 8 | f[l4 + 3]) == DR_ROCE_UDP_PORT ? DR_PKT_OK : DR_PKT_NOT_ROCE;
}

static void check_roce_frame(const struct golden *g, uint64_t num, const uint8_t *f, size_t len,
			     struct dr_pkt *pkt)
{
	static uint8_t re[16384], hdr[512], split[16384];
	enum dr_pkt_verdict v;
	struct dr_pkt_desc d;
	uint8_t trailer[7];
	unsigned tlen;
	size_t dlen;
	int n, h;

	v = dr_pkt_parse(f, len, 0, pkt);
	ck_assert_msg(v == DR_PKT_OK, "%s frame %llu: %s", g->file, (unsigned long long)num,
		      dr_pkt_verdict_str(v));
	dlen = len - pkt->trailer_len;

	/* the ICRC the parser accepted is the one on the wire, and the one
	 * we compute */
	ck_assert_msg(pkt->icrc == dr_icrc_get(f + dlen - DR_ICRC_LEN),
		      "%s frame %llu: carried ICRC misread", g->file, (unsigned long long)num);
	ck_assert_msg(dr_pkt_icrc(pkt) == pkt->icrc, "%s frame %llu: ICRC 0x%08x, carried 0x%08x",
		      g->file, (unsigned long long)num, dr_pkt_icrc(pkt), pkt->icrc);

	dr_pkt_to_desc(pkt, &d);
	n = dr_pkt_build(&d, re, sizeof(re));
	ck_assert_msg(n == (int)dlen, "%s frame %llu: rebuilt %d bytes, captured %zu", g->file,
		      (unsigned long long)num, n, dlen);
	ck_assert_msg(!memcmp(re, f, dlen), "%s frame %llu: rebuilt frame differs", g->file,
		      (unsigned long long)num);

	h = dr_pkt_build_split(&d, hdr, sizeof(hdr), trailer, &tlen);
	ck_assert_msg(h > 0 && (size_t)h + d.payload_len + tlen == dlen,
		      "%s frame %llu: split build %d + %u + %u bytes, captured %zu", g->file,
		      (unsigned long long)num, h, d.payload_len, tlen, dlen);
	memcpy(split, hdr, h);
	memcpy(split + h, d.payload, d.payload_len);
	memcpy(split + h + d.payload_len, trailer, tlen);
	ck_assert_msg(!memcmp(split, f, dlen), "%s frame %llu: split build differs", g->file,
		      (unsigned long long)num);
}

/* A CM MAD on QP1 (docs/protocol.md C.1, C.2) */
static bool is_gsi_mad(const struct dr_pkt *pkt)
{
	const struct dr_deth *deth = dr_pkt_deth(pkt);

	return pkt->opcode == DR_OP_UD_SEND_ONLY && pkt->dqpn == 1 && deth &&
	       dr_deth_qkey(deth) == DR_GSI_QKEY && dr_deth_sqp(deth) == 1 &&
	       pkt->payload_len == 256 && pkt->payload[0] == 1 && pkt->payload[1] == 0x07;
}

START_TEST(test_capture)
{
	const struct golden *g = &goldens[_i];
	unsigned frames = 0, roce = 0, arp = 0, not_udp = 0, gsi = 0, k;
	unsigned ops[256] = { 0 }, want_ops[256] = { 0 };
	struct dr_pcapng_pkt p;
	struct dr_pcapng *r;
	char path[4400], err[256];
	int ret;

	snprintf(path, sizeof(path), "%s/%s", golden_dir(), g->file);
	r = dr_pcapng_open(path, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);

	while ((ret = dr_pcapng_next(r, &p)) == 1) {
		enum dr_pkt_verdict want, v;
		struct dr_pkt pkt;

		frames++;
		ck_assert_uint_eq(p.linktype, DR_LINKTYPE_ETHERNET);
		ck_assert_msg(p.caplen == p.origlen, "%s frame %llu: cut by snaplen", g->file,
			      (unsigned long long)p.number);
		ck_assert_uint_ge(p.caplen, 14);

		want = expected_non_roce(p.data, p.caplen);
		if (want == DR_PKT_OK) {
			check_roce_frame(g, p.number, p.data, p.caplen, &pkt);
			roce++;
			ops[pkt.opcode]++;
			gsi += is_gsi_mad(&pkt);
			continue;
		}
		v = dr_pkt_parse(p.data, p.caplen, 0, &pkt);
		ck_assert_msg(v == want, "%s frame %llu: verdict '%s', want '%s'", g->file,
			      (unsigned long long)p.number, dr_pkt_verdict_str(v),
			      dr_pkt_verdict_str(want));
		arp += v == DR_PKT_NOT_IP;
		not_udp += v == DR_PKT_NOT_UDP;
	}
	ck_assert_msg(ret == 0, "%s", dr_pcapng_strerror(r));
	dr_pcapng_close(r);

	ck_assert_uint_eq(frames, g->frames);
	ck_assert_uint_eq(roce, g->roce);
	ck_assert_uint_eq(arp, g->arp);
	ck_assert_uint_eq(not_udp, g->not_udp);
	ck_assert_uint_eq(gsi, g->gsi);
	for (k = 0; k < MAX_OPS && g->ops[k].n; k++)
		want_ops[g->ops[k].op] = g->ops[k].n;
	for (k = 0; k < 256; k++)
		ck_assert_msg(ops[k] == want_ops[k], "%s: %u frames of opcode 0x%02x (%s), want %u",
			      g->file, ops[k], k, dr_opcode_name(k), want_ops[k]);
}
END_TEST

/* The table covers every capture in the directory, so a new one cannot be
 * skipped silently. */
START_TEST(test_all_captures_listed)
{
	struct dirent *de;
	unsigned n = 0, i;
	DIR *dir;

	dir = opendir(golden_dir());
	ck_assert_msg(dir != NULL, "%s: cannot open", golden_dir());
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name);
		bool listed = false;

		if (len < 7 || strcmp(de->d_name + len - 7, ".pcapng"))
			continue;
		for (i = 0; i < NGOLDEN; i++)
			listed |= !strcmp(de->d_name, goldens[i].file);
		ck_assert_msg(listed, "%s/%s has no row in goldens[]", golden_dir(), de->d_name);
		n++;
	}
	closedir(dir);
	ck_assert_uint_eq(n, NGOLDEN);
}
END_TEST

/* ---- docs/protocol.md A.9 worked vector --------------------------------- */

static int unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (s[0] && s[1] && n < cap) {
		unsigned v;

		if (s[0] == ' ') {
			s++;
			continue;
		}
		if (sscanf(s, "%2x", &v) != 1)
			return -1;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return (int)n;
}

/* IPv4 192.168.1.1 -> 192.168.1.2, ID 0x1234, DF, TTL 64, TOS 0, UDP 0xC123
 * -> 4791, RC SEND_ONLY, P_Key 0xFFFF, DestQP 0x11, AckReq, PSN 1, "hello";
 * ICRC 0xB6778305, on the wire 05 83 77 b6 (A.9: computed independently and
 * cross-checked against all rxe captures). */
static const char a9_wire[] = "45000034123440004011a531c0a80101c0a80102c12312b7002000000430ffff"
			      "000000118000000168656c6c6f000000 058377b6";

START_TEST(test_icrc_vector_a9)
{
	static const uint8_t dmac[6] = { 0x02, 0, 0, 0, 0, 0x02 }, smac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
	uint8_t frame[128], want[64], hdr[128], trailer[7], split[128];
	struct dr_pkt_desc d;
	struct dr_pkt pkt;
	unsigned tlen;
	int n, wn, h;

	wn = unhex(a9_wire, want, sizeof(want));
	ck_assert_int_eq(wn, 52);

	dr_pkt_desc_init(&d);
	memcpy(d.dst_mac, dmac, 6);
	memcpy(d.src_mac, smac, 6);
	d.src_ip4 = 0xc0a80101;
	d.dst_ip4 = 0xc0a80102;
	d.ip_id = 0x1234;
	d.ttl = 64;
	d.tos = 0;
	d.sport = 0xc123;
	d.dport = DR_ROCE_UDP_PORT;
	d.opcode = DR_OP_SEND_ONLY;
	d.pkey = 0xffff;
	d.dqpn = 0x11;
	d.ackreq = true;
	d.psn = 1;
	d.payload = "hello";
	d.payload_len = 5;

	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(n, 14 + 52);
	ck_assert_mem_eq(frame, dmac, 6);
	ck_assert_mem_eq(frame + 6, smac, 6);
	ck_assert_uint_eq(frame[12] << 8 | frame[13], DR_ETH_P_IPV4);
	ck_assert_mem_eq(frame + 14, want, 52);
	ck_assert_uint_eq(dr_icrc_get(frame + n - 4), 0xB6778305u);

	ck_assert_int_eq(dr_pkt_parse(frame, n, 0, &pkt), DR_PKT_OK);
	ck_assert_uint_eq(pkt.icrc, 0xB6778305u);
	ck_assert_uint_eq(dr_pkt_icrc(&pkt), 0xB6778305u);
	ck_assert_uint_eq(pkt.padcnt, 3);
	ck_assert_uint_eq(pkt.payload_len, 5);

	h = dr_pkt_build_split(&d, hdr, sizeof(hdr), trailer, &tlen);
	ck_assert_int_eq(h, 14 + 20 + 8 + 12);
	ck_assert_uint_eq(tlen, 3 + 4);
	memcpy(split, hdr, h);
	memcpy(split + h, "hello", 5);
	memcpy(split + h + 5, trailer, tlen);
	ck_assert_mem_eq(split, frame, n);
}
END_TEST

/* ---- pcapng reader and writer ------------------------------------------- */

/* A little-endian or big-endian block assembler for hand-made files. */
struct mk {
	uint8_t b[1024];
	size_t n;
	bool be;
};

static void mk8(struct mk *m, uint8_t v)
{
	ck_assert_uint_lt(m->n, sizeof(m->b));
	m->b[m->n++] = v;
}

static void mk16(struct mk *m, uint16_t v)
{
	mk8(m, m->be ? v >> 8 : v & 0xff);
	mk8(m, m->be ? v & 0xff : v >> 8);
}

static void mk32(struct mk *m, uint32_t v)
{
	mk16(m, m->be ? v >> 16 : v & 0xffff);
	mk16(m, m->be ? v & 0xffff : v >> 16);
}

static void mkbytes(struct mk *m, const void *p, size_t n)
{
	ck_assert_uint_le(m->n + n, sizeof(m->b));
	memcpy(m->b + m->n, p, n);
	m->n += n;
}

/* type | len | body | len; len_fix != 0 overrides the trailing length */
static void mkblock(struct mk *m, uint32_t type, const struct mk *body, uint32_t len_fix)
{
	uint32_t len = 12 + (uint32_t)body->n;

	mk32(m, type);
	mk32(m, len);
	mkbytes(m, body->b, body->n);
	mk32(m, len_fix ? len_fix : len);
}

static void mkshb(struct mk *m, uint16_t major)
{
	struct mk b = { .be = m->be };

	mk32(&b, 0x1A2B3C4D);
	mk16(&b, major);
	mk16(&b, 0);
	mk32(&b, 0xffffffff);
	mk32(&b, 0xffffffff);
	mkblock(m, 0x0A0D0D0A, &b, 0);
}

/* IDB; tsresol 0xff: no option */
static void mkidb(struct mk *m, uint32_t snaplen, uint8_t tsresol)
{
	struct mk b = { .be = m->be };

	mk16(&b, DR_LINKTYPE_ETHERNET);
	mk16(&b, 0);
	mk32(&b, snaplen);
	if (tsresol != 0xff) {
		mk16(&b, 9);
		mk16(&b, 1);
		mk8(&b, tsresol);
		mkbytes(&b, "\0\0\0", 3);
		mk32(&b, 0);
	}
	mkblock(m, 1, &b, 0);
}

/* EPB with the options already assembled in opts (NULL: none) */
static void mkepb_opts(struct mk *m, uint32_t ifid, uint64_t ts, const void *data, uint32_t caplen,
		       uint32_t origlen, const struct mk *opts)
{
	struct mk b = { .be = m->be };

	mk32(&b, ifid);
	mk32(&b, (uint32_t)(ts >> 32));
	mk32(&b, (uint32_t)ts);
	mk32(&b, caplen);
	mk32(&b, origlen);
	mkbytes(&b, data, caplen);
	while (b.n % 4)
		mk8(&b, 0);
	if (opts)
		mkbytes(&b, opts->b, opts->n);
	mkblock(m, 6, &b, 0);
}

static void mkepb(struct mk *m, uint32_t ifid, uint64_t ts, const void *data, uint32_t caplen,
		  uint32_t origlen)
{
	mkepb_opts(m, ifid, ts, data, caplen, origlen, NULL);
}

/* One option: code, length, value (n bytes, given in file order), padding */
static void mkopt(struct mk *m, uint16_t code, uint16_t len, const void *val, size_t n)
{
	mk16(m, code);
	mk16(m, len);
	mkbytes(m, val, n);
	while (m->n % 4)
		mk8(m, 0);
}

static struct dr_pcapng *open_mem(const void *buf, size_t len, FILE **fp, char *err,
				  size_t errlen)
{
	struct dr_pcapng *r;

	/* fmemopen() of 0 bytes fails on some libcs: back it with 1 byte */
	*fp = fmemopen((void *)buf, len ? len : 1, "rb");
	ck_assert_ptr_nonnull(*fp);
	if (!len)
		fgetc(*fp);
	r = dr_pcapng_open_stream(*fp, "mem", err, errlen);
	return r;
}

/* A writer into memory: *buf and *len once *f is closed */
static struct dr_pcapng_writer *mem_writer(FILE **f, char **buf, size_t *len, uint32_t snaplen,
					   const char *appname)
{
	struct dr_pcapng_writer *w;

	*f = open_memstream(buf, len);
	ck_assert_ptr_nonnull(*f);
	w = dr_pcapng_writer_open_stream(*f, snaplen, appname);
	ck_assert_ptr_nonnull(w);
	return w;
}

START_TEST(test_pcapng_roundtrip)
{
	static const uint8_t a[] = { 1, 2, 3, 4, 5 }, b[64] = { 0xab };
	struct dr_pcapng_writer *w;
	struct dr_pcapng_pkt p;
	struct dr_pcapng *r;
	char *buf = NULL, err[256];
	size_t len = 0;
	FILE *f, *in;

	w = mem_writer(&f, &buf, &len, 32, "test_golden");
	ck_assert_int_eq(dr_pcapng_write(w, 1704067200123456ull, a, sizeof(a)), 0);
	ck_assert_int_eq(dr_pcapng_write(w, 1704067201000001ull, b, sizeof(b)), 0);
	ck_assert_int_eq(dr_pcapng_writer_close(w), 0);
	fclose(f);

	/* SHB 28 + 16 (shb_userappl "test_golden") + 4 (opt_endofopt);
	 * IDB 20 + 12 (if_tsresol, opt_endofopt); EPBs 32 + 8 and 32 + 32 */
	ck_assert_uint_eq(len, 48 + 32 + 40 + 64);
	ck_assert_mem_eq(buf, "\x0a\x0d\x0d\x0a", 4);

	r = open_mem(buf, len, &in, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.number, 1);
	ck_assert_uint_eq(p.linktype, DR_LINKTYPE_ETHERNET);
	ck_assert_uint_eq(p.caplen, 5);
	ck_assert_uint_eq(p.origlen, 5);
	ck_assert_mem_eq(p.data, a, 5);
	ck_assert_uint_eq(p.ts_sec, 1704067200);
	ck_assert_uint_eq(p.ts_nsec, 123456000);
	ck_assert_uint_eq(p.offset, 48 + 32);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.number, 2);
	ck_assert_uint_eq(p.caplen, 32); /* cut to snaplen */
	ck_assert_uint_eq(p.origlen, 64);
	ck_assert_mem_eq(p.data, b, 32);
	ck_assert_uint_eq(p.ts_sec, 1704067201);
	ck_assert_uint_eq(p.ts_nsec, 1000);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 0);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 0);
	dr_pcapng_close(r);
	fclose(in);
	free(buf);
}
END_TEST

/* Every prefix of a valid file: a cut at a block boundary is a clean end
 * with the packets before it, a cut anywhere else is an error (never a
 * silently shorter packet). */
START_TEST(test_pcapng_truncated)
{
	static const uint8_t data[] = "droce truncation";
	size_t bounds[8], nb = 0, cut, i;
	struct mk m = { .be = false };

	mkshb(&m, 1);
	bounds[nb++] = m.n;
	mkidb(&m, 0, 0xff);
	bounds[nb++] = m.n;
	mkepb(&m, 0, 1, data, 17, 17);
	bounds[nb++] = m.n;
	mkepb(&m, 0, 2, data, 5, 9);
	bounds[nb++] = m.n;

	for (cut = 0; cut < m.n; cut++) {
		struct dr_pcapng_pkt p;
		struct dr_pcapng *r;
		char err[256] = "";
		int ret, npk = 0;
		bool boundary = false;
		FILE *f;

		for (i = 0; i < nb; i++)
			boundary |= cut == bounds[i];
		r = open_mem(m.b, cut, &f, err, sizeof(err));
		if (cut < bounds[0]) {
			ck_assert_msg(r == NULL, "cut %zu: SHB accepted", cut);
			ck_assert_msg(strstr(err, cut ? "truncated" : "empty"), "cut %zu: %s", cut,
				      err);
			fclose(f);
			continue;
		}
		ck_assert_msg(r != NULL, "cut %zu: %s", cut, err);
		while ((ret = dr_pcapng_next(r, &p)) == 1)
			npk++;
		if (boundary) {
			ck_assert_msg(ret == 0, "cut %zu: %s", cut, dr_pcapng_strerror(r));
			ck_assert_int_eq(npk, cut >= bounds[3] ? 2 : cut >= bounds[2] ? 1 : 0);
		} else {
			ck_assert_msg(ret == -1, "cut %zu: no error", cut);
			ck_assert_msg(strstr(dr_pcapng_strerror(r), "truncated"), "cut %zu: %s",
				      cut, dr_pcapng_strerror(r));
			/* the error sticks */
			ck_assert_int_eq(dr_pcapng_next(r, &p), -1);
		}
		dr_pcapng_close(r);
		fclose(f);
	}
}
END_TEST

/* A big-endian section with nanosecond timestamps, an unknown block and a
 * Simple Packet Block, followed by a little-endian section. */
START_TEST(test_pcapng_both_orders)
{
	static const uint8_t d4[4] = { 0xde, 0xad, 0xbe, 0xef }, d6[6] = "abcdef";
	struct mk m = { .be = true }, unk = { .be = true }, spb = { .be = true };
	struct dr_pcapng_pkt p;
	struct dr_pcapng *r;
	char err[256];
	FILE *f;

	mkshb(&m, 1);
	mkidb(&m, 4, 9); /* snaplen 4, if_tsresol 10^-9 */
	mkepb(&m, 0, 1500000000123456789ull, d4, 4, 4);
	mk32(&unk, 0x12345678);
	mkblock(&m, 0x00000BAD, &unk, 0); /* skipped */
	mk32(&spb, 6);			/* original length 6, cut to snaplen 4 */
	mkbytes(&spb, d6, 4);
	mkblock(&m, 3, &spb, 0);
	m.be = false;
	mkshb(&m, 1);
	mkidb(&m, 0, 0x80 | 10); /* 2^-10 s */
	mkepb(&m, 0, 3 * 1024 + 512, d6, 6, 6);

	r = open_mem(m.b, m.n, &f, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.caplen, 4);
	ck_assert_mem_eq(p.data, d4, 4);
	ck_assert_uint_eq(p.ts_sec, 1500000000);
	ck_assert_uint_eq(p.ts_nsec, 123456789);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.number, 2);
	ck_assert_uint_eq(p.caplen, 4);
	ck_assert_uint_eq(p.origlen, 6);
	ck_assert_mem_eq(p.data, d6, 4);
	ck_assert_uint_eq(p.ts_sec, 0);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.caplen, 6);
	ck_assert_uint_eq(p.ts_sec, 3);
	ck_assert_uint_eq(p.ts_nsec, 500000000);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 0);
	dr_pcapng_close(r);
	fclose(f);
}
END_TEST

/* An EPB's options, exactly, in either byte order: several comments (one
 * with the NUL terminator some writers add, one empty), flags, a drop
 * count, an option the reader does not know, and a list without its end
 * marker (allowed when it ends the block). */
START_TEST(test_pcapng_epb_options)
{
	static const char c1[] = "retransmit: timeout, go-back-N from PSN 7, attempt 1 of 7",
			  c2[] = "QP state: RTS -> ERROR (retry exceeded)";
	struct mk m = {.be = _i != 0}, o1 = {.be = m.be}, o2 = {.be = m.be};
	struct dr_pcapng_pkt p;
	struct dr_pcapng *r;
	char err[256];
	FILE *f;

	mkshb(&m, 1);
	mkidb(&m, 0, 9);
	mkopt(&o1, 1, sizeof(c1) - 1, c1, sizeof(c1) - 1);
	mkopt(&o1, 0x0003, 4, "hash", 4);	   /* epb_hash: skipped */
	mkopt(&o1, 1, sizeof(c2), c2, sizeof(c2)); /* NUL included */
	mkopt(&o1, 1, 0, "", 0);
	mk16(&o1, 2); /* epb_flags: inbound, CRC error */
	mk16(&o1, 4);
	mk32(&o1, DR_PCAPNG_FLAG_INBOUND | DR_PCAPNG_FLAG_CRC_ERR);
	mk16(&o1, 4); /* epb_dropcount 2^32 + 3 */
	mk16(&o1, 8);
	mk32(&o1, m.be ? 1 : 3);
	mk32(&o1, m.be ? 3 : 1);
	mk32(&o1, 0); /* opt_endofopt */
	mkepb_opts(&m, 0, 5, "abc", 3, 3, &o1);
	mkepb(&m, 0, 6, "de", 2, 2);
	mk16(&o2, 2);
	mk16(&o2, 4);
	mk32(&o2, DR_PCAPNG_FLAG_OUTBOUND);
	mkepb_opts(&m, 0, 7, "fghij", 5, 5, &o2);

	r = open_mem(m.b, m.n, &f, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.caplen, 3);
	ck_assert_mem_eq(p.data, "abc", 3);
	ck_assert_uint_eq(p.ts_nsec, 5);
	ck_assert_uint_eq(p.ncomments, 3);
	ck_assert_str_eq(p.comments[0], c1);
	ck_assert_str_eq(p.comments[1], c2);
	ck_assert_str_eq(p.comments[2], "");
	ck_assert(p.has_flags);
	ck_assert_uint_eq(p.flags, 0x01000001);
	ck_assert(p.has_dropcount);
	ck_assert_uint_eq(p.dropcount, (1ull << 32) + 3);

	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_mem_eq(p.data, "de", 2);
	ck_assert_uint_eq(p.ncomments, 0);
	ck_assert(!p.has_flags);
	ck_assert_uint_eq(p.flags, 0);
	ck_assert(!p.has_dropcount);
	ck_assert_uint_eq(p.dropcount, 0);

	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_mem_eq(p.data, "fghij", 5);
	ck_assert_uint_eq(p.ncomments, 0);
	ck_assert(p.has_flags);
	ck_assert_uint_eq(p.flags, DR_PCAPNG_FLAG_OUTBOUND);
	ck_assert(!p.has_dropcount);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 0);
	dr_pcapng_close(r);
	fclose(f);
}
END_TEST

/* What dr_pcapng_write_epb() writes, the reader gives back. */
START_TEST(test_pcapng_epb_roundtrip)
{
	static const uint8_t d[7] = "0123456";
	struct dr_pcapng_epb e1 = {.ts = 1,
				   .flags = DR_PCAPNG_FLAG_OUTBOUND,
				   .comment = "NAK sent: PSN sequence error, expected PSN 4, "
					      "received PSN 6"},
			     e2 = {.ts = 2,
				   .flags = DR_PCAPNG_FLAG_INBOUND | DR_PCAPNG_FLAG_CRC_ERR,
				   .has_dropcount = true,
				   .dropcount = 1,
				   .comment = "dropped: bad ICRC"},
			     e3 = {.ts = 3};
	struct dr_pcapng_writer *w;
	struct dr_pcapng_pkt p;
	struct dr_pcapng *r;
	char *buf = NULL, err[256];
	size_t len = 0;
	FILE *f, *in;

	w = mem_writer(&f, &buf, &len, 0, NULL);
	ck_assert_int_eq(dr_pcapng_write_epb(w, &e1, d, 7), 0);
	ck_assert_int_eq(dr_pcapng_write_epb(w, &e2, d, 4), 0);
	ck_assert_int_eq(dr_pcapng_write_epb(w, &e3, d, 1), 0);
	ck_assert_int_eq(dr_pcapng_writer_close(w), 0);
	fclose(f);

	r = open_mem(buf, len, &in, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.ncomments, 1);
	ck_assert_str_eq(p.comments[0], e1.comment);
	ck_assert(p.has_flags);
	ck_assert_uint_eq(p.flags, DR_PCAPNG_FLAG_OUTBOUND);
	ck_assert(!p.has_dropcount);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.caplen, 4);
	ck_assert_uint_eq(p.ncomments, 1);
	ck_assert_str_eq(p.comments[0], "dropped: bad ICRC");
	ck_assert_uint_eq(p.flags, 0x01000001);
	ck_assert(p.has_dropcount);
	ck_assert_uint_eq(p.dropcount, 1);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 1);
	ck_assert_uint_eq(p.ncomments, 0);
	ck_assert(!p.has_flags);
	ck_assert(!p.has_dropcount);
	ck_assert_int_eq(dr_pcapng_next(r, &p), 0);
	dr_pcapng_close(r);
	fclose(in);
	free(buf);
}
END_TEST

enum corrupt {
	C_CLASSIC_PCAP,
	C_BAD_BOM,
	C_VERSION_2,
	C_LEN_NOT_ALIGNED,
	C_LEN_TOO_SMALL,
	C_LEN_HUGE,
	C_TRAILING_LEN,
	C_EPB_NO_IFACE,
	C_EPB_CAPLEN_PAST_END,
	C_IDB_OPTION_PAST_END,
	C_IDB_TSRESOL_LEN,
	C_IDB_TSRESOL_RANGE,
	C_SPB_NO_IFACE,
	C_EPB_SHORT_BODY,
	C_EPB_OPTION_PAST_END,
	C_EPB_FLAGS_LEN,
	C_EPB_FLAGS_TWICE,
	C_EPB_DROPCOUNT_LEN,
	C_EPB_DROPCOUNT_TWICE,
	C_EPB_COMMENT_NUL,
};

struct corrupt_case {
	enum corrupt what;
	bool at_open; /* refused by dr_pcapng_open_stream */
	const char *msg; /* substring of the error */
};

/* One case per check in pcapng.c, with the message that names it. */
/* clang-format off */
static const struct corrupt_case corrupt_cases[] = {
	{ C_CLASSIC_PCAP, true, "classic pcap" },
	{ C_BAD_BOM, true, "byte-order magic" },
	{ C_VERSION_2, true, "unsupported pcapng version 2.0" },
	{ C_LEN_NOT_ALIGNED, false, "not a multiple of 4" },
	{ C_LEN_TOO_SMALL, false, "too small" },
	{ C_LEN_HUGE, false, "over the" },
	{ C_TRAILING_LEN, false, "trailing length" },
	{ C_EPB_NO_IFACE, false, "interface 1 not described" },
	{ C_EPB_CAPLEN_PAST_END, false, "captured length 9 runs past the block" },
	{ C_IDB_OPTION_PAST_END, false, "runs past the block" },
	{ C_IDB_TSRESOL_LEN, false, "if_tsresol length 2" },
	{ C_IDB_TSRESOL_RANGE, false, "if_tsresol 10^-20 out of range" },
	{ C_SPB_NO_IFACE, false, "interface 0 not described" },
	{ C_EPB_SHORT_BODY, false, "body too short" },
	/* the EPB at offset 48 (SHB 28, IDB 20), its options at 80 */
	{ C_EPB_OPTION_PAST_END, false,
	  "offset 48: enhanced packet block 0x00000006: option 1 at offset 80 (64 bytes) runs "
	  "past the block" },
	{ C_EPB_FLAGS_LEN, false,
	  "offset 48: enhanced packet block 0x00000006: epb_flags at offset 80: length 3 != 4" },
	{ C_EPB_FLAGS_TWICE, false,
	  "offset 48: enhanced packet block 0x00000006: epb_flags at offset 88: a second one" },
	{ C_EPB_DROPCOUNT_LEN, false,
	  "offset 48: enhanced packet block 0x00000006: epb_dropcount at offset 80: length 4 != "
	  "8" },
	{ C_EPB_DROPCOUNT_TWICE, false,
	  "offset 48: enhanced packet block 0x00000006: epb_dropcount at offset 92: a second "
	  "one" },
	{ C_EPB_COMMENT_NUL, false,
	  "offset 48: enhanced packet block 0x00000006: opt_comment at offset 80: NUL byte at 2 "
	  "of its 5 bytes" },
};
/* clang-format on */

START_TEST(test_pcapng_corrupt)
{
	const struct corrupt_case *c = &corrupt_cases[_i];
	struct mk m = { .be = false }, b = { .be = false };
	struct dr_pcapng_pkt p;
	struct dr_pcapng *r;
	char err[256] = "";
	const char *msg;
	FILE *f;
	int ret;

	switch (c->what) {
	case C_CLASSIC_PCAP:
		mkbytes(&m, "\xd4\xc3\xb2\xa1\x02\x00\x04\x00", 8);
		mkbytes(&m, "\0\0\0\0\0\0\0\0\xff\xff\0\0\x01\0\0\0", 16);
		break;
	case C_BAD_BOM:
		mkshb(&m, 1);
		m.b[8] = 0x1B;
		break;
	case C_VERSION_2:
		mkshb(&m, 2);
		break;
	case C_LEN_NOT_ALIGNED:
	case C_LEN_TOO_SMALL:
	case C_LEN_HUGE:
		mkshb(&m, 1);
		mk32(&m, 1);
		mk32(&m, c->what == C_LEN_NOT_ALIGNED ? 22 : c->what == C_LEN_TOO_SMALL ? 8 : 0x7ffffffc);
		mkbytes(&m, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 14);
		break;
	case C_TRAILING_LEN:
		mkshb(&m, 1);
		mk32(&b, 1);
		mk32(&b, 0);
		mkblock(&m, 1, &b, 24);
		break;
	case C_EPB_NO_IFACE:
		mkshb(&m, 1);
		mkidb(&m, 0, 0xff);
		mkepb(&m, 1, 0, "abcd", 4, 4);
		break;
	case C_EPB_CAPLEN_PAST_END:
		mkshb(&m, 1);
		mkidb(&m, 0, 0xff);
		mkepb(&m, 0, 0, "abcdefgh", 8, 8);
		/* caplen field of the EPB: 8 -> 9, still 8 bytes of data */
		m.b[m.n - 4 - 8 - 8] = 9;
		break;
	case C_IDB_OPTION_PAST_END:
	case C_IDB_TSRESOL_LEN:
	case C_IDB_TSRESOL_RANGE:
		mkshb(&m, 1);
		mk16(&b, DR_LINKTYPE_ETHERNET);
		mk16(&b, 0);
		mk32(&b, 0);
		mk16(&b, 9);
		mk16(&b, c->what == C_IDB_OPTION_PAST_END ? 64 : c->what == C_IDB_TSRESOL_LEN ? 2 : 1);
		mk8(&b, 20);
		mkbytes(&b, "\0\0\0", 3);
		mkblock(&m, 1, &b, 0);
		break;
	case C_SPB_NO_IFACE:
		mkshb(&m, 1);
		mk32(&b, 4);
		mkbytes(&b, "abcd", 4);
		mkblock(&m, 3, &b, 0);
		break;
	case C_EPB_SHORT_BODY:
		mkshb(&m, 1);
		mkidb(&m, 0, 0xff);
		mk32(&b, 0);
		mk32(&b, 0);
		mkblock(&m, 6, &b, 0);
		break;
	case C_EPB_OPTION_PAST_END:
		mk16(&b, 1); /* a 64-byte comment with 4 bytes in the block */
		mk16(&b, 64);
		mkbytes(&b, "abcd", 4);
		goto epb;
	case C_EPB_FLAGS_LEN:
		mkopt(&b, 2, 3, "\1\0\0", 3);
		goto epb;
	case C_EPB_DROPCOUNT_LEN:
		mkopt(&b, 4, 4, "\1\0\0\0", 4);
		goto epb;
	case C_EPB_FLAGS_TWICE: /* epb_flags (2, 4 bytes) or epb_dropcount (4, 8) twice */
	case C_EPB_DROPCOUNT_TWICE:
		for (int k = 0; k < 2; k++)
			mkopt(&b, c->what == C_EPB_FLAGS_TWICE ? 2 : 4,
			      c->what == C_EPB_FLAGS_TWICE ? 4 : 8, "\1\0\0\0\0\0\0\0",
			      c->what == C_EPB_FLAGS_TWICE ? 4 : 8);
		goto epb;
	case C_EPB_COMMENT_NUL:
		mkopt(&b, 1, 5, "ab\0cd", 5);
	epb:
		mkshb(&m, 1);
		mkidb(&m, 0, 0xff);
		mkepb_opts(&m, 0, 0, "abcd", 4, 4, &b);
		break;
	}

	r = open_mem(m.b, m.n, &f, err, sizeof(err));
	if (c->at_open) {
		ck_assert_msg(r == NULL, "case %d: opened", c->what);
		msg = err;
	} else {
		ck_assert_msg(r != NULL, "case %d: %s", c->what, err);
		ret = dr_pcapng_next(r, &p);
		ck_assert_msg(ret == -1, "case %d: dr_pcapng_next returned %d", c->what, ret);
		msg = dr_pcapng_strerror(r);
	}
	ck_assert_msg(strstr(msg, c->msg), "case %d: '%s' does not say '%s'", c->what, msg,
		      c->msg);
	ck_assert_msg(strstr(msg, "mem: ") == msg, "case %d: '%s' does not name the file",
		      c->what, msg);
	dr_pcapng_close(r);
	fclose(f);
}
END_TEST

static Suite *golden_suite(void)
{
	Suite *s = suite_create("golden");
	TCase *tc;

	tc = tcase_create("rxe");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_all_captures_listed);
	tcase_add_loop_test(tc, test_capture, 0, NGOLDEN);
	suite_add_tcase(s, tc);

	tc = tcase_create("icrc");
	tcase_add_test(tc, test_icrc_vector_a9);
	suite_add_tcase(s, tc);

	tc = tcase_create("pcapng");
	tcase_add_test(tc, test_pcapng_roundtrip);
	tcase_add_test(tc, test_pcapng_truncated);
	tcase_add_test(tc, test_pcapng_both_orders);
	tcase_add_loop_test(tc, test_pcapng_epb_options, 0, 2); /* little, big endian */
	tcase_add_test(tc, test_pcapng_epb_roundtrip);
	tcase_add_loop_test(tc, test_pcapng_corrupt, 0,
			    sizeof(corrupt_cases) / sizeof(corrupt_cases[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	printf("golden captures: %s\n", golden_dir());
	return ck_run(golden_suite(), false);
}
