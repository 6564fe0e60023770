// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_parse.c - libFuzzer harness for the RoCEv2 frame parser.
 *
 * Each input is one Ethernet frame.  It is copied into a heap buffer of
 * exactly its size (so ASan sees any read past the end) and parsed with
 * and without DR_PARSE_NO_ICRC.  Beyond "no crash, no sanitizer report",
 * the harness aborts when the codec breaks one of its own promises
 * (include/dr_roce.h):
 *   - the flag skips the ICRC check and nothing else;
 *   - a failed parse still fills eth/ethertype once past layer 2;
 *   - an accepted frame's view stays inside the buffer and adds up;
 *   - dr_pkt_icrc() equals the carried ICRC exactly when the parse says so;
 *   - DR_PARSE_DEFER_PLACE gives the same verdict, except that a frame it
 *     defers (a READ response, a WRITE MIDDLE or LAST: dr_icrc_placeable)
 *     is OK until dr_pkt_icrc_finish() or
 *     dr_pkt_icrc_copy() (which copies the payload byte-exact) gives the
 *     ICRC's verdict;
 *   - dr_pkt_to_desc() + dr_pkt_build() reproduce the frame up to the end
 *     of the IP datagram, and dr_pkt_build_split() gives the same bytes.
 *
 * Build: see .ci/fuzz.sh (clang -fsanitize=fuzzer,address,undefined).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_roce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define FAIL(...)                                            \
	do {                                                 \
		fprintf(stderr, "fuzz_parse: " __VA_ARGS__); \
		fputc('\n', stderr);                         \
		abort();                                     \
	} while (0)


static void check_failed_view(const struct dr_pkt *p, const uint8_t *f, size_t len,
			      enum dr_pkt_verdict v)
{
	if (p->frame != f || p->frame_len != len)
		FAIL("verdict %d: frame/frame_len not recorded", v);
	if (v >= DR_PKT_NOT_IP && (const uint8_t *)p->eth != f)
		FAIL("verdict %d: eth not recorded", v);
}

static void check_view(const struct dr_pkt *p, const uint8_t *f, size_t len)
{
	const uint8_t *l3 = p->ip4 ? (const uint8_t *)p->ip4 : (const uint8_t *)p->ip6;
	const uint8_t *end = f + len - p->trailer_len; /* end of the IP datagram */
	const uint8_t *bth = (const uint8_t *)p->bth;

	if (p->frame != f || p->frame_len != len || p->trailer_len > len)
		FAIL("frame, frame_len or trailer_len");
	if ((const uint8_t *)p->eth != f || !l3 || (p->ip4 && p->ip6) || !p->udp || !bth)
		FAIL("header pointers missing");
	if (p->op != dr_opcode(p->opcode) || !dr_opcode_valid(p->opcode) ||
	    bth[0] != p->opcode)
		FAIL("opcode %#x / op entry", p->opcode);
	if ((const uint8_t *)p->udp <= l3 || bth != (const uint8_t *)p->udp + 8)
		FAIL("UDP/BTH placement");
	if (p->payload != bth + p->op->hdr_len)
		FAIL("payload pointer");
	if (p->padcnt > 3 || p->payload_len > DR_MAX_PMTU)
		FAIL("padcnt %u payload_len %u", p->padcnt, p->payload_len);
	if (p->payload + p->payload_len + p->padcnt + DR_ICRC_LEN != end)
		FAIL("payload + pad + ICRC (%u + %u + 4) do not end the datagram", p->payload_len,
		     p->padcnt);
	for (int h = 0; h < DR_HDR_NUM; h++) {
		bool want = p->op->flags & (1u << h);

		if (want != (p->hdr[h] != NULL))
			FAIL("header %d presence", h);
		if (want && (const uint8_t *)p->hdr[h] != bth + p->op->off[h])
			FAIL("header %d placement", h);
	}
	if (p->psn != dr_bth_psn(p->bth) || p->dqpn != dr_bth_qpn(p->bth) ||
	    p->ackreq != dr_bth_ackreq(p->bth) || p->padcnt != dr_bth_padcnt(p->bth))
		FAIL("BTH fields disagree with the accessors");
	if (p->icrc != dr_icrc_get(end - DR_ICRC_LEN))
		FAIL("carried ICRC %08x misread", p->icrc);
}

static bool same_view(const struct dr_pkt *a, const struct dr_pkt *b)
{
	return a->frame == b->frame && a->frame_len == b->frame_len &&
	       a->trailer_len == b->trailer_len && a->ethertype == b->ethertype &&
	       a->eth == b->eth && a->vlan == b->vlan && a->ip4 == b->ip4 && a->ip6 == b->ip6 &&
	       a->udp == b->udp && a->bth == b->bth && !memcmp(a->hdr, b->hdr, sizeof(a->hdr)) &&
	       a->op == b->op && a->opcode == b->opcode && a->psn == b->psn &&
	       a->dqpn == b->dqpn && a->ackreq == b->ackreq && a->payload == b->payload &&
	       a->payload_len == b->payload_len && a->padcnt == b->padcnt && a->icrc == b->icrc;
}

/* Rebuild an accepted frame from its description and compare. */
static void check_rebuild(const struct dr_pkt *p, const uint8_t *f, bool icrc_good)
{
	size_t dlen = p->frame_len - p->trailer_len;
	size_t pad_off = (size_t)(p->payload - f) + p->payload_len;
	bool exact;
	struct dr_pkt_desc d;
	struct dr_pkt q;
	uint8_t *want, *got, *hdr, trailer[7];
	unsigned tl;
	int n, hl;

	dr_pkt_to_desc(p, &d);
	n = dr_pkt_frame_len(&d);
	if (n < 0 || (size_t)n != dlen)
		FAIL("dr_pkt_frame_len %d, datagram ends at %zu", n, dlen);
	got = malloc(dlen);
	want = malloc(dlen);
	if (!got || !want)
		abort();
	memcpy(want, f, dlen);
	n = dr_pkt_build(&d, got, dlen);
	if (n < 0 || (size_t)n != dlen)
		FAIL("dr_pkt_build %d, want %zu", n, dlen);

	/* with a bad carried ICRC the rebuilt one legitimately differs */
	exact = icrc_good;
	for (size_t i = 0; i < (exact ? dlen : dlen - DR_ICRC_LEN); i++)
		if (got[i] != want[i])
			FAIL("rebuild differs at byte %zu: %02x, frame has %02x", i, got[i],
			     want[i]);
	/* the rebuilt frame is valid, whatever the input's ICRC was */
	if (dr_pkt_parse(got, dlen, 0, &q) != DR_PKT_OK)
		FAIL("rebuilt frame refused: %s",
		     dr_pkt_verdict_str(dr_pkt_parse(got, dlen, 0, &q)));
	if (dr_pkt_icrc(&q) != q.icrc)
		FAIL("rebuilt frame ICRC");

	/* headers || payload || trailer */
	hl = dr_pkt_hdr_len(&d);
	if (hl < 0 || (size_t)hl != (size_t)(p->payload - f))
		FAIL("dr_pkt_hdr_len %d", hl);
	hdr = malloc((size_t)hl);
	if (!hdr)
		abort();
	if (dr_pkt_build_split(&d, hdr, (size_t)hl, trailer, &tl) != hl ||
	    tl != p->padcnt + DR_ICRC_LEN)
		FAIL("dr_pkt_build_split");
	if (memcmp(hdr, got, (size_t)hl) || memcmp(trailer, got + pad_off, tl))
		FAIL("split build differs from the whole build");
	free(hdr);
	free(want);
	free(got);
}

/* DR_PARSE_DEFER_PLACE against the plain parse's verdict v. */
static void check_deferred(const uint8_t *f, size_t size, enum dr_pkt_verdict v)
{
	struct dr_pkt pd;
	enum dr_pkt_verdict vd = dr_pkt_parse(f, size, DR_PARSE_DEFER_PLACE, &pd);
	bool good = v == DR_PKT_OK;
	uint8_t *dst;
	struct iovec iov;

	if (vd == DR_PKT_OK && pd.icrc_deferred) {
		if (!dr_icrc_placeable(pd.opcode) || pd.payload_len < DR_ICRC_DEFER_MIN)
			FAIL("deferred a frame not placeable: opcode 0x%02x, %u bytes", pd.opcode,
			     pd.payload_len);
		if (v != DR_PKT_OK && v != DR_PKT_BAD_ICRC)
			FAIL("deferred, but %s without deferring", dr_pkt_verdict_str(v));
		if (dr_pkt_icrc_finish(&pd) != good)
			FAIL("deferred check says %d, parse %s", !good, dr_pkt_verdict_str(v));
		dst = malloc(pd.payload_len);
		if (!dst)
			abort();
		iov.iov_base = dst;
		iov.iov_len = pd.payload_len;
		if (dr_pkt_icrc_copy(&pd, &iov, 1) != good)
			FAIL("check while copying says %d, parse %s", !good, dr_pkt_verdict_str(v));
		if (memcmp(dst, pd.payload, pd.payload_len))
			FAIL("dr_pkt_icrc_copy's copy differs");
		free(dst);
	} else if (vd != v) {
		FAIL("verdict %s deferring, %s not", dr_pkt_verdict_str(vd), dr_pkt_verdict_str(v));
	}
}

/* One parse pair and every check, on an exact-size heap copy of buf. */
static void run_one(const uint8_t *buf, size_t size)
{
	uint8_t *f = malloc(size); /* malloc(0) too: ASan flags any access */
	struct dr_pkt p, pn;
	enum dr_pkt_verdict v, vn;

	if (!f && size)
		abort();
	if (size)
		memcpy(f, buf, size);
	v = dr_pkt_parse(f, size, 0, &p);
	vn = dr_pkt_parse(f, size, DR_PARSE_NO_ICRC, &pn);

	if ((unsigned)v >= DR_PKT_VERDICT_NUM || (unsigned)vn >= DR_PKT_VERDICT_NUM)
		FAIL("verdict out of range: %d / %d", v, vn);
	if (!dr_pkt_verdict_str(v) || !dr_pkt_verdict_str(v)[0])
		FAIL("verdict %d has no string", v);
	/* the flag turns BAD_ICRC, and only it, into OK */
	if (v == DR_PKT_BAD_ICRC ? vn != DR_PKT_OK : vn != v)
		FAIL("verdict %s with the ICRC check, %s without", dr_pkt_verdict_str(v),
		     dr_pkt_verdict_str(vn));
	if (v != DR_PKT_OK)
		check_failed_view(&p, f, size, v);
	if (vn != DR_PKT_OK)
		check_failed_view(&pn, f, size, vn);

	if (vn == DR_PKT_OK) {
		bool good = v == DR_PKT_OK;

		check_view(&pn, f, size);
		if ((dr_pkt_icrc(&pn) == pn.icrc) != good)
			FAIL("dr_pkt_icrc %08x, carried %08x, verdict %s", dr_pkt_icrc(&pn),
			     pn.icrc, dr_pkt_verdict_str(v));
		if (good && !same_view(&p, &pn))
			FAIL("the two parses of a valid frame differ");
		check_rebuild(&pn, f, good);
	}
	check_deferred(f, size, v);
	free(f);
}

/*
 * Repairs.  A mutation that changes a length or a covered byte is almost
 * always stopped by the IPv4 checksum or the ICRC, so besides the input as
 * is, the harness parses copies with the checksum, the lengths and the
 * ICRC made right again: that lets mutations reach the checks behind them
 * (transport lengths, PadCnt, payload rules) and the rebuild path.  The
 * repairs use only the frame layout, never the parser's own conclusions.
 */
#define FIX_CSUM 1
#define FIX_LENS 2
#define FIX_ICRC 4

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void wr16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* returns false when there is nothing to repair */
static bool repair(uint8_t *f, size_t len, unsigned fix)
{
	size_t l3 = sizeof(struct dr_eth_hdr), iplen, n, dlen;
	uint32_t st, sum = 0;
	uint8_t *ip;

	if (len < l3)
		return false;
	if (rd16(f + 12) == DR_ETH_P_VLAN)
		l3 += sizeof(struct dr_vlan_hdr);
	if (len < l3 + 1)
		return false;
	ip = f + l3;
	if (ip[0] == 0x45)
		iplen = sizeof(struct dr_ipv4_hdr);
	else if ((ip[0] >> 4) == 6)
		iplen = sizeof(struct dr_ipv6_hdr);
	else
		return false;
	if (len < l3 + iplen + sizeof(struct dr_udp_hdr) || len - l3 > 0xffff)
		return false;
	dlen = len - l3;
	if (fix & FIX_LENS) {
		if (iplen == sizeof(struct dr_ipv4_hdr))
			wr16(ip + 2, dlen);
		else
			wr16(ip + 4, dlen - iplen);
		wr16(ip + iplen + 4, dlen - iplen);
	}
	if ((fix & FIX_ICRC) && (fix & FIX_LENS)) {
		n = iplen + sizeof(struct dr_udp_hdr) + sizeof(struct dr_bth);
		if (dlen < n + DR_ICRC_LEN || dr_icrc_start(ip, n, &st))
			return false;
		dr_icrc_put(ip + dlen - DR_ICRC_LEN,
			    dr_icrc_update(st, ip + n, dlen - n - DR_ICRC_LEN));
	}
	if ((fix & FIX_CSUM) && iplen == sizeof(struct dr_ipv4_hdr)) {
		for (int i = 0; i < 20; i += 2)
			if (i != 10)
				sum += rd16(ip + i);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		wr16(ip + 10, (uint16_t)~sum);
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned fixes[] = { FIX_CSUM, FIX_CSUM | FIX_LENS,
					  FIX_CSUM | FIX_LENS | FIX_ICRC };
	uint8_t *t;

	run_one(data, size);
	if (!size)
		return 0;
	t = malloc(size);
	if (!t)
		abort();
	for (size_t i = 0; i < sizeof(fixes) / sizeof(fixes[0]); i++) {
		memcpy(t, data, size);
		if (repair(t, size, fixes[i]) && memcmp(t, data, size))
			run_one(t, size);
	}
	free(t);
	return 0;
}
