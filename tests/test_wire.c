// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_wire.c - unit tests of the RoCEv2 wire codec (src/roce): the opcode
 * table, CRC-32 and the ICRC, the frame builder and the frame parser.
 *
 * Expected values are written out here as the spec, not derived from the
 * code under test: IBA vol. 1 table 38 and 9.2-9.3 (opcodes and headers),
 * docs/protocol.md section A (what rdma_rxe puts on the wire,
 * A.9 the ICRC and its worked vector), and the check order documented in
 * include/dr_roce.h (enum dr_pkt_verdict: the first fault in wire order).
 *
 * Every parse runs on a heap buffer of exactly the frame's length, so a
 * read one byte past the end is caught by ASan or valgrind.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <check.h>

#include "dr_roce.h"
#include "ck_run.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Layer sizes (IEEE 802.3, 802.1Q, RFC 791, RFC 8200, RFC 768, IBA 9.2) */
#define ETH_LEN 14
#define VLAN_LEN 4
#define IP4_LEN 20
#define IP6_LEN 40
#define UDP_LEN 8
#define BTH_LEN 12
#define ICRC_LEN 4

#define FRAME_MAX (ETH_LEN + VLAN_LEN + IP6_LEN + UDP_LEN + 64 + DR_MAX_PMTU + 64)

/* ---- small helpers --------------------------------------------------------- */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* xorshift64*: reproducible pseudo-random data, seeded per test */
static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
	rng_state = s ? s : 1;
}

static uint32_t rng32(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static void rng_fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng32();
}

/* A heap copy of exactly len bytes: nothing after it is addressable. */
static uint8_t *dup_exact(const uint8_t *p, size_t len)
{
	uint8_t *b = malloc(len);

	ck_assert_msg(b != NULL || len == 0, "malloc(%zu)", len);
	if (len)
		memcpy(b, p, len);
	return b;
}

/* dr_pkt_parse() on a private exact-size copy; *pkt is only good for its
 * scalar fields afterwards (its pointers point into the freed copy). */
static enum dr_pkt_verdict parse_copy(const uint8_t *frame, size_t len, unsigned flags,
				      struct dr_pkt *pkt)
{
	struct dr_pkt tmp;
	uint8_t *b = dup_exact(frame, len);
	enum dr_pkt_verdict v = dr_pkt_parse(b, len, flags, pkt ? pkt : &tmp);

	free(b);
	return v;
}

/* (one ck_assert per call, not per byte: each one costs a write to Check's
 * pipe in fork mode) */
static void assert_bytes_eq(const uint8_t *got, const uint8_t *want, size_t n, const char *ctx)
{
	size_t i = 0;

	while (i < n && got[i] == want[i])
		i++;
	ck_assert_msg(i == n, "%s: byte %zu is %02x, want %02x", ctx, i, i < n ? got[i] : 0,
		      i < n ? want[i] : 0);
}

/* index of the first byte of p[from..to) that is not c, or to */
static size_t first_not(const uint8_t *p, size_t from, size_t to, uint8_t c)
{
	while (from < to && p[from] == c)
		from++;
	return from;
}

/* ---- independent references ------------------------------------------------ */

/* CRC-32, IEEE 802.3 reflected polynomial, one bit at a time (zlib's crc32()
 * semantics: pre- and post-inverted, continuable). */
static uint32_t crc_ref(uint32_t crc, const uint8_t *p, size_t n)
{
	uint32_t c = ~crc;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return ~c;
}

/* RFC 1071 checksum of a 20-byte IPv4 header, skipping the checksum field. */
static uint16_t ip4_csum_ref(const uint8_t *ip)
{
	uint32_t sum = 0;

	for (int i = 0; i < IP4_LEN; i += 2)
		if (i != 10)
			sum += get16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static size_t l3_off(const uint8_t *f)
{
	return get16(f + 12) == DR_ETH_P_VLAN ? ETH_LEN + VLAN_LEN : ETH_LEN;
}

/*
 * The ICRC as docs/protocol.md A.9 spells it out: CRC-32 of
 * FF x 8 || IP/UDP/BTH with TOS, TTL, IP checksum (IPv6: traffic class,
 * flow label, hop limit), UDP checksum and BTH byte 4 set to ones || the
 * rest of the IP datagram up to the ICRC.  The datagram's end is taken from
 * the IP length field.
 */
/* The same over headers ip[0..hl) (IPv4 or IPv6 by the version nibble),
 * a payload and a pad given apart. */
static uint32_t icrc_ref_parts(const uint8_t *ip, size_t hl, const uint8_t *payload, size_t len,
			       const uint8_t *pad, size_t pad_len)
{
	static const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t m[IP6_LEN + UDP_LEN + BTH_LEN];
	size_t iplen = (ip[0] >> 4) == 4 ? IP4_LEN : IP6_LEN, n = iplen + UDP_LEN + BTH_LEN;
	uint32_t c;

	memcpy(m, ip, n);
	if (iplen == IP4_LEN) {
		m[1] = 0xff;			  /* TOS */
		m[8] = 0xff;			  /* TTL */
		m[10] = m[11] = 0xff;		  /* header checksum */
	} else {
		m[0] |= 0x0f;			  /* traffic class, high nibble */
		m[1] = m[2] = m[3] = 0xff;	  /* traffic class low, flow label */
		m[7] = 0xff;			  /* hop limit */
	}
	m[iplen + 6] = m[iplen + 7] = 0xff;	  /* UDP checksum */
	m[iplen + UDP_LEN + 4] = 0xff;		  /* FECN, BECN, resv6a */
	c = crc_ref(0, lrh, sizeof(lrh));
	c = crc_ref(c, m, n);
	c = crc_ref(c, ip + n, hl - n);
	c = crc_ref(c, payload, len);
	return crc_ref(c, pad, pad_len);
}

static uint32_t icrc_ref(const uint8_t *f)
{
	const uint8_t *ip = f + l3_off(f);
	size_t end = (ip[0] >> 4) == 4 ? get16(ip + 2) : IP6_LEN + get16(ip + 4);

	return icrc_ref_parts(ip, end - ICRC_LEN, NULL, 0, NULL, 0);
}

/* ---- the opcode table, written out as the spec ------------------------------ */

/* Extension header sizes, IBA 9.3 / docs/protocol.md A.5, in enum dr_hdr
 * order, which is the order they follow the BTH (IBA 9.2 figure 36). */
static const unsigned ext_size[DR_HDR_NUM] = {
	[DR_HDR_DETH] = 8, [DR_HDR_RETH] = 16, [DR_HDR_ATMETH] = 28, [DR_HDR_AETH] = 4,
	[DR_HDR_ATMACK] = 8, [DR_HDR_IMMDT] = 4, [DR_HDR_IETH] = 4,
};

/* Message classes: who sends it, what it is.  A receive WQE at the target
 * (IBA 9.4.3, 9.7.4; rxe_opcode.c RXE_RWR_MASK and RXE_COMP_MASK): a SEND
 * takes it at its first packet (R_TAKE) and completes it at its last
 * (R_DONE); a WRITE with immediate does both at the packet with the
 * ImmDt. */
/* one opcode a line, read as a table */
/* clang-format off */
#define R_TAKE DR_OPF_RWQE
#define R_DONE DR_OPF_RECV_DONE
#define K_SEND (DR_OPF_REQ | DR_OPF_SEND)
#define K_WRITE (DR_OPF_REQ | DR_OPF_WRITE)
#define K_WRITE_IMM (DR_OPF_REQ | DR_OPF_WRITE | R_TAKE | R_DONE)
#define K_READ_REQ (DR_OPF_REQ | DR_OPF_READ)
#define K_READ_RSP (DR_OPF_RSP | DR_OPF_READ)
#define K_ACK (DR_OPF_RSP | DR_OPF_ACK)
#define K_ATOMIC_ACK (DR_OPF_RSP | DR_OPF_ACK | DR_OPF_ATOMIC)
#define K_ATOMIC (DR_OPF_REQ | DR_OPF_ATOMIC)
/* droce classes a UD send as UD, not as an RC request (rxe adds REQ_MASK) */
#define K_UD (DR_OPF_UD | DR_OPF_SEND | R_TAKE | R_DONE)
/* RoCEv2's congestion notification (annex A17.9.3): neither request nor
 * response, 16 reserved bytes after the BTH */
#define K_CNP DR_OPF_CNP

#define P_FIRST DR_OPF_FIRST
#define P_MIDDLE DR_OPF_MIDDLE
#define P_LAST DR_OPF_LAST
#define P_ONLY DR_OPF_ONLY

struct op_spec {
	uint8_t op;
	const char *name;
	uint32_t hdrs; /* DR_OPF_<header> bits */
	uint32_t pos;  /* first / middle / last / only */
	bool payload;
	enum dr_op_ack ack;
	uint32_t kind;
	unsigned hdr_len; /* payload offset from the BTH */
};

/*
 * IBA vol. 1 table 38 (values, ib_pack.h), rxe_opcode.c (header
 * composition, first/middle/last/only), docs/protocol.md A.6 (payload
 * column and the header-length sanity values: SEND_ONLY 12, WRITE_ONLY 28,
 * WRITE_ONLY_IMM 32, READ_REQ 28, READ_RESP_FIRST/LAST/ONLY 16,
 * READ_RESP_MIDDLE 12, ACK 16, ATOMIC_ACK 24, CMP_SWAP/FETCH_ADD 40,
 * UD_SEND_ONLY 20; the others are 12 + the A.5 sizes of their headers).
 * Ack semantics: IBA 9.7 (SEND/WRITE are acknowledged when AckReq is set,
 * a READ is answered by READ RESPONSEs, an atomic by ATOMIC ACKNOWLEDGE,
 * responses and UD owe nothing).
 */
static const struct op_spec op_spec[] = {
	{ 0x00, "RC_SEND_FIRST", 0, P_FIRST, true, DR_ACK_IF_REQ, K_SEND | R_TAKE, 12 },
	{ 0x01, "RC_SEND_MIDDLE", 0, P_MIDDLE, true, DR_ACK_IF_REQ, K_SEND, 12 },
	{ 0x02, "RC_SEND_LAST", 0, P_LAST, true, DR_ACK_IF_REQ, K_SEND | R_DONE, 12 },
	{ 0x03, "RC_SEND_LAST_WITH_IMMEDIATE", DR_OPF_IMMDT, P_LAST, true, DR_ACK_IF_REQ,
	  K_SEND | R_DONE, 16 },
	{ 0x04, "RC_SEND_ONLY", 0, P_ONLY, true, DR_ACK_IF_REQ, K_SEND | R_TAKE | R_DONE, 12 },
	{ 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", DR_OPF_IMMDT, P_ONLY, true, DR_ACK_IF_REQ,
	  K_SEND | R_TAKE | R_DONE, 16 },
	{ 0x06, "RC_RDMA_WRITE_FIRST", DR_OPF_RETH, P_FIRST, true, DR_ACK_IF_REQ, K_WRITE, 28 },
	{ 0x07, "RC_RDMA_WRITE_MIDDLE", 0, P_MIDDLE, true, DR_ACK_IF_REQ, K_WRITE, 12 },
	{ 0x08, "RC_RDMA_WRITE_LAST", 0, P_LAST, true, DR_ACK_IF_REQ, K_WRITE, 12 },
	{ 0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", DR_OPF_IMMDT, P_LAST, true, DR_ACK_IF_REQ,
	  K_WRITE_IMM, 16 },
	{ 0x0a, "RC_RDMA_WRITE_ONLY", DR_OPF_RETH, P_ONLY, true, DR_ACK_IF_REQ, K_WRITE, 28 },
	{ 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", DR_OPF_RETH | DR_OPF_IMMDT, P_ONLY, true,
	  DR_ACK_IF_REQ, K_WRITE_IMM, 32 },
	{ 0x0c, "RC_RDMA_READ_REQUEST", DR_OPF_RETH, P_ONLY, false, DR_ACK_READ_RSP, K_READ_REQ,
	  28 },
	{ 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", DR_OPF_AETH, P_FIRST, true, DR_ACK_NONE,
	  K_READ_RSP, 16 },
	{ 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 0, P_MIDDLE, true, DR_ACK_NONE, K_READ_RSP, 12 },
	{ 0x0f, "RC_RDMA_READ_RESPONSE_LAST", DR_OPF_AETH, P_LAST, true, DR_ACK_NONE, K_READ_RSP,
	  16 },
	{ 0x10, "RC_RDMA_READ_RESPONSE_ONLY", DR_OPF_AETH, P_ONLY, true, DR_ACK_NONE, K_READ_RSP,
	  16 },
	{ 0x11, "RC_ACKNOWLEDGE", DR_OPF_AETH, P_ONLY, false, DR_ACK_NONE, K_ACK, 16 },
	{ 0x12, "RC_ATOMIC_ACKNOWLEDGE", DR_OPF_AETH | DR_OPF_ATMACK, P_ONLY, false, DR_ACK_NONE,
	  K_ATOMIC_ACK, 24 },
	{ 0x13, "RC_COMPARE_SWAP", DR_OPF_ATMETH, P_ONLY, false, DR_ACK_ATOMIC, K_ATOMIC, 40 },
	{ 0x14, "RC_FETCH_ADD", DR_OPF_ATMETH, P_ONLY, false, DR_ACK_ATOMIC, K_ATOMIC, 40 },
	{ 0x16, "RC_SEND_LAST_WITH_INVALIDATE", DR_OPF_IETH, P_LAST, true, DR_ACK_IF_REQ,
	  K_SEND | R_DONE, 16 },
	{ 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", DR_OPF_IETH, P_ONLY, true, DR_ACK_IF_REQ,
	  K_SEND | R_TAKE | R_DONE, 16 },
	{ 0x64, "UD_SEND_ONLY", DR_OPF_DETH, P_ONLY, true, DR_ACK_NONE, K_UD, 20 },
	{ 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", DR_OPF_DETH | DR_OPF_IMMDT, P_ONLY, true,
	  DR_ACK_NONE, K_UD, 24 },
	{ 0x81, "CNP", 0, P_ONLY, false, DR_ACK_NONE, K_CNP, 28 },
};
/* clang-format on */

/* The valid set, stated independently of op_spec[]: RC 0x00-0x14, 0x16,
 * 0x17 (0x15 is reserved), UD SEND_ONLY(+IMM) 0x64/0x65, CNP 0x81. */
static bool in_valid_set(unsigned op)
{
	return op <= 0x14 || op == 0x16 || op == 0x17 || op == 0x64 || op == 0x65 || op == 0x81;
}

static const struct op_spec *spec_of(unsigned op)
{
	for (size_t i = 0; i < ARRAY_SIZE(op_spec); i++)
		if (op_spec[i].op == op)
			return &op_spec[i];
	return NULL;
}

START_TEST(test_opcode_valid_set)
{
	unsigned nvalid = 0;

	for (unsigned op = 0; op < 256; op++) {
		bool valid = dr_opcode_valid((uint8_t)op);

		ck_assert_msg(valid == in_valid_set(op), "opcode 0x%02x valid=%d", op, valid);
		ck_assert_msg(!!spec_of(op) == in_valid_set(op), "spec row for 0x%02x", op);
		/* the builder's header room holds the longest stack */
		if (valid)
			ck_assert_msg(ETH_LEN + 4 + IP6_LEN + UDP_LEN + dr_opcode((uint8_t)op)->hdr_len <=
					      DR_PKT_HDR_CAP,
				      "opcode 0x%02x headers exceed DR_PKT_HDR_CAP", op);
		nvalid += valid;
	}
	ck_assert_uint_eq(nvalid, 26);
	ck_assert_uint_eq(ARRAY_SIZE(op_spec), 26);
}
END_TEST

START_TEST(test_opcode_spec)
{
	const struct op_spec *s = &op_spec[_i];
	const struct dr_opcode_info *o = dr_opcode(s->op);
	uint32_t want = DR_OPF_VALID | s->hdrs | s->pos | (s->payload ? DR_OPF_PAYLOAD : 0) |
			s->kind;

	ck_assert_ptr_eq(o, &dr_opcode_tab[s->op]);
	ck_assert_msg(o->name != NULL && o->name[0], "0x%02x has a name", s->op);
	ck_assert_str_eq(o->name, s->name);
	ck_assert_str_eq(dr_opcode_name(s->op), s->name);
	ck_assert_msg((o->flags & DR_OPF_HDRS) == s->hdrs, "%s headers %#x want %#x", s->name,
		      o->flags & DR_OPF_HDRS, s->hdrs);
	ck_assert_msg((o->flags & (DR_OPF_FIRST | DR_OPF_MIDDLE | DR_OPF_LAST | DR_OPF_ONLY)) ==
			      s->pos,
		      "%s position", s->name);
	ck_assert_msg(!!(o->flags & DR_OPF_PAYLOAD) == s->payload, "%s payload", s->name);
	ck_assert_msg(o->ack == s->ack, "%s ack %u want %u", s->name, o->ack, s->ack);
	ck_assert_msg(o->flags == want, "%s flags %#x want %#x", s->name, o->flags, want);
	ck_assert_msg(o->hdr_len == s->hdr_len, "%s hdr_len %u want %u", s->name, o->hdr_len,
		      s->hdr_len);
	/* DR_OPF_END is "last or only": exactly one position bit is set */
	ck_assert_int_eq(__builtin_popcount(s->pos), 1);
	ck_assert_msg(!!(o->flags & DR_OPF_END) == !!(s->pos & (P_LAST | P_ONLY)), "%s END",
		      s->name);
}
END_TEST

/* every header offset = 12 + the sizes of the headers present before it */
START_TEST(test_opcode_offsets)
{
	const struct op_spec *s = &op_spec[_i];
	const struct dr_opcode_info *o = dr_opcode(s->op);
	unsigned off = BTH_LEN;

	for (int h = 0; h < DR_HDR_NUM; h++) {
		if (s->hdrs & (1u << h)) {
			ck_assert_msg(o->off[h] == off, "%s header %d at %u want %u", s->name, h,
				      o->off[h], off);
			off += ext_size[h];
		} else {
			ck_assert_msg(o->off[h] == 0, "%s absent header %d at %u", s->name, h,
				      o->off[h]);
		}
	}
	if (s->kind & K_CNP)
		off += 16; /* A17.9.3: the CNP's reserved bytes */
	ck_assert_uint_eq(off, s->hdr_len);
}
END_TEST

/* Spot checks of the multi-header orders (IBA 9.2): written out literally. */
START_TEST(test_opcode_offsets_literal)
{
	static const struct {
		uint8_t op;
		int hdr;
		unsigned off;
	} t[] = {
		{ DR_OP_WRITE_ONLY_IMM, DR_HDR_RETH, 12 },
		{ DR_OP_WRITE_ONLY_IMM, DR_HDR_IMMDT, 28 },
		{ DR_OP_ATOMIC_ACK, DR_HDR_AETH, 12 },
		{ DR_OP_ATOMIC_ACK, DR_HDR_ATMACK, 16 },
		{ DR_OP_UD_SEND_ONLY_IMM, DR_HDR_DETH, 12 },
		{ DR_OP_UD_SEND_ONLY_IMM, DR_HDR_IMMDT, 20 },
		{ DR_OP_CMP_SWAP, DR_HDR_ATMETH, 12 },
		{ DR_OP_SEND_ONLY_INV, DR_HDR_IETH, 12 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		ck_assert_msg(dr_opcode(t[i].op)->off[t[i].hdr] == t[i].off, "row %zu", i);
}
END_TEST

START_TEST(test_opcode_invalid_entries)
{
	for (unsigned op = 0; op < 256; op++) {
		const struct dr_opcode_info *o = dr_opcode((uint8_t)op);

		if (in_valid_set(op))
			continue;
		ck_assert_msg(o->flags == 0, "0x%02x flags %#x", op, o->flags);
		ck_assert_msg(o->name == NULL, "0x%02x named %s", op, o->name);
		ck_assert_msg(o->hdr_len == 0 && o->ack == 0, "0x%02x", op);
		for (int h = 0; h < DR_HDR_NUM; h++)
			ck_assert_msg(o->off[h] == 0, "0x%02x off[%d]", op, h);
		ck_assert_str_eq(dr_opcode_name((uint8_t)op), "UNKNOWN");
	}
}
END_TEST

/*
 * The rules the engines (src/qp) decide by, for every valid opcode: they
 * ask the flags, so the flags must say what IBA says of the opcode.
 *   qp.c dr_qp_rx_check: RC (transport bits 000, IBA 9.2.1) is a request
 *     or a response, never both; UD is neither.
 *   resp.c / comp.c: a request is of exactly one class; a response is a
 *     READ response or an acknowledgement (atomic or not).
 *   resp.c executes and replays by the ack column: SEND/WRITE -> ACK,
 *     READ -> READ responses, atomic -> ATOMIC ACKNOWLEDGE (IBA 9.7.4).
 *   resp.c takes a receive WQE at RWQE packets and completes a receive at
 *     RECV_DONE ones; req.c sets SE only there (IBA 9.4.3, 9.7.4).
 *   req.c writes ImmDt on the last packet only, a WRITE's RETH on its
 *     first, and payload on SENDs, WRITEs and READ responses.
 */
START_TEST(test_opcode_engine_rules)
{
	const uint32_t cls = DR_OPF_SEND | DR_OPF_WRITE | DR_OPF_READ | DR_OPF_ATOMIC;

	for (unsigned op = 0; op < 256; op++) {
		uint32_t f = dr_opcode((uint8_t)op)->flags;
		bool rc = (op >> 5) == 0, ud = (op >> 5) == 3, cnp = (op >> 5) == 4;
		bool req = f & DR_OPF_REQ, rsp = f & DR_OPF_RSP;
		bool send = f & DR_OPF_SEND, write = f & DR_OPF_WRITE, imm = f & DR_OPF_IMMDT;
		unsigned want_ack = DR_ACK_NONE;

		if (!(f & DR_OPF_VALID))
			continue;
		ck_assert_msg(rc || ud || cnp, "0x%02x: RC, UD or CNP", op);
		/* qp.c: a CNP goes to the QP's congestion control, not to the
		 * responder or the completer; it carries nothing */
		ck_assert_msg(cnp == !!(f & DR_OPF_CNP), "0x%02x: CNP", op);
		if (cnp)
			ck_assert_msg(f == (DR_OPF_VALID | DR_OPF_CNP | DR_OPF_ONLY),
				      "0x%02x: a CNP is nothing else", op);
		ck_assert_msg(rc == (req != rsp) && !(req && rsp), "0x%02x: RC is REQ xor RSP", op);
		ck_assert_msg(ud == !!(f & DR_OPF_UD), "0x%02x: UD", op);
		if (req)
			ck_assert_msg(__builtin_popcount(f & cls) == 1, "0x%02x: one class", op);
		if (rsp)
			ck_assert_msg(!!(f & DR_OPF_READ) != !!(f & DR_OPF_ACK) &&
					  !(f & (DR_OPF_SEND | DR_OPF_WRITE)),
				      "0x%02x: READ response or acknowledgement", op);
		if (req && (send || write))
			want_ack = DR_ACK_IF_REQ;
		else if (req && (f & DR_OPF_READ))
			want_ack = DR_ACK_READ_RSP;
		else if (req && (f & DR_OPF_ATOMIC))
			want_ack = DR_ACK_ATOMIC;
		ck_assert_msg(dr_opcode((uint8_t)op)->ack == want_ack, "0x%02x: ack", op);
		ck_assert_msg(!!(f & DR_OPF_RWQE) ==
				  ((send && (f & (DR_OPF_FIRST | DR_OPF_ONLY))) || (write && imm)),
			      "0x%02x: takes a receive WQE", op);
		ck_assert_msg(!!(f & DR_OPF_RECV_DONE) ==
				  ((send && (f & DR_OPF_END)) || (write && imm)),
			      "0x%02x: completes a receive", op);
		ck_assert_msg(!imm || (f & DR_OPF_END), "0x%02x: ImmDt on the last packet", op);
		if (write)
			ck_assert_msg(!!(f & DR_OPF_RETH) == !!(f & (DR_OPF_FIRST | DR_OPF_ONLY)),
				      "0x%02x: a WRITE's RETH starts it", op);
		ck_assert_msg(!!(f & DR_OPF_PAYLOAD) ==
				  (send || write || (rsp && (f & DR_OPF_READ))),
			      "0x%02x: payload", op);
	}
}
END_TEST

START_TEST(test_opcode_names_distinct)
{
	for (size_t i = 0; i < ARRAY_SIZE(op_spec); i++)
		for (size_t j = i + 1; j < ARRAY_SIZE(op_spec); j++)
			ck_assert_str_ne(dr_opcode(op_spec[i].op)->name,
					 dr_opcode(op_spec[j].op)->name);
}
END_TEST

/* ---- CRC-32 and the ICRC ----------------------------------------------------- */

static uint8_t crc_buf[(64 << 10) + 64];

START_TEST(test_crc_known)
{
	static const char check[] = "123456789";
	static const char fox[] = "The quick brown fox jumps over the lazy dog";
	static const uint8_t ff8[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	/* CRC-32/ISO-HDLC check value (the Rocksoft catalogue) and zlib's */
	ck_assert_uint_eq(dr_crc32(0, check, 9), 0xcbf43926u);
	ck_assert_uint_eq(dr_crc32_sb8(0, check, 9), 0xcbf43926u);
	ck_assert_uint_eq(crc_ref(0, (const uint8_t *)check, 9), 0xcbf43926u);
	ck_assert_uint_eq(dr_crc32(0, fox, strlen(fox)), 0x414fa339u);
	ck_assert_uint_eq(dr_crc32(0, NULL, 0), 0);
	ck_assert_uint_eq(dr_crc32(0x12345678u, NULL, 0), 0x12345678u);
	ck_assert_uint_eq(dr_crc32_sb8(0x12345678u, NULL, 0), 0x12345678u);
	/* A.9: the seed stands for 8 bytes of 0xFF (a masked LRH); the raw
	 * register after them is rxe's start value 0xDEBB20E3 */
	ck_assert_uint_eq(DR_ICRC_SEED, dr_crc32(0, ff8, 8));
	ck_assert_uint_eq(DR_ICRC_SEED, crc_ref(0, ff8, 8));
	ck_assert_uint_eq(~DR_ICRC_SEED, 0xdebb20e3u);
	ck_assert_msg(
	    !strcmp(dr_crc32_impl(), "vpclmul") || !strcmp(dr_crc32_impl(), "vpclmul256") ||
		!strcmp(dr_crc32_impl(), "pclmul") || !strcmp(dr_crc32_impl(), "slice-by-8"),
	    "impl %s", dr_crc32_impl());
}
END_TEST

/* The CRC tests below run once per implementation (loop index). */
static const char *const crc_impls[] = {"slice-by-8", "pclmul", "vpclmul", "vpclmul256"};

/* Select implementation i; false (and a note) if this CPU lacks it. */
static bool crc_use(int i)
{
	int rc = dr_crc32_select(crc_impls[i]);

	if (rc == -ENOTSUP) {
		printf("crc: this CPU has no %s; its test is not run\n", crc_impls[i]);
		return false;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(dr_crc32_impl(), crc_impls[i]);
	return true;
}

START_TEST(test_crc_select)
{
	const char *best;

	ck_assert_int_eq(dr_crc32_select(NULL), 0);
	best = dr_crc32_impl();
	ck_assert_int_eq(dr_crc32_select("crc32c"), -EINVAL);
	ck_assert_str_eq(dr_crc32_impl(), best);
	ck_assert_int_eq(dr_crc32_select("slice-by-8"), 0);
	ck_assert_str_eq(dr_crc32_impl(), "slice-by-8");
	ck_assert_int_eq(dr_crc32_select(NULL), 0);
	ck_assert_str_eq(dr_crc32_impl(), best);
#if defined(__x86_64__)
	/* the best is what the CPU has: either vpclmul implies pclmul, and
	 * the 256-bit one is the best only without AVX-512 */
	if (!strcmp(best, "vpclmul") || !strcmp(best, "vpclmul256"))
		ck_assert_int_eq(dr_crc32_select("pclmul"), 0);
	if (!strcmp(best, "vpclmul256"))
		ck_assert_int_eq(dr_crc32_select("vpclmul"), -ENOTSUP);
	if (!strcmp(best, "pclmul")) {
		ck_assert_int_eq(dr_crc32_select("vpclmul"), -ENOTSUP);
		ck_assert_int_eq(dr_crc32_select("vpclmul256"), -ENOTSUP);
	}
	ck_assert_int_eq(dr_crc32_select(NULL), 0);
#endif
}
END_TEST

/* The folding constants are x^n mod P bit-reflected and shifted by one;
 * recompute the ones icrc.c uses from the polynomial and check the values
 * the implementations are built from against the published ones
 * (Gopal et al.; the Linux crc32-pclmul constants). */
static uint64_t crc_fold_const(unsigned n)
{
	uint64_t r = 1, refl = 0;

	for (unsigned i = 0; i < n; i++) {
		r <<= 1;
		if (r >> 32 & 1)
			r ^= 0x104c11db7ull;
	}
	for (int b = 0; b < 32; b++)
		refl |= (r >> b & 1) << (31 - b);
	return refl << 1;
}

START_TEST(test_crc_fold_consts)
{
	ck_assert_uint_eq(crc_fold_const(4 * 128 + 32), 0x154442bd4ull);
	ck_assert_uint_eq(crc_fold_const(4 * 128 - 32), 0x1c6e41596ull);
	ck_assert_uint_eq(crc_fold_const(128 + 32), 0x1751997d0ull);
	ck_assert_uint_eq(crc_fold_const(128 - 32), 0x0ccaa009eull);
	ck_assert_uint_eq(crc_fold_const(64), 0x163cd6124ull);
	/* the 512-bit path's: 2048, 384 and 256 bits */
	ck_assert_uint_eq(crc_fold_const(2048 + 32), 0x11542778aull);
	ck_assert_uint_eq(crc_fold_const(2048 - 32), 0x1322d1430ull);
	ck_assert_uint_eq(crc_fold_const(384 + 32), 0x03db1ecdcull);
	ck_assert_uint_eq(crc_fold_const(384 - 32), 0x174359406ull);
	ck_assert_uint_eq(crc_fold_const(256 + 32), 0x0f1da05aaull);
	ck_assert_uint_eq(crc_fold_const(256 - 32), 0x15a546366ull);
	/* the 256-bit path's: 1024 bits */
	ck_assert_uint_eq(crc_fold_const(1024 + 32), 0x1e88ef372ull);
	ck_assert_uint_eq(crc_fold_const(1024 - 32), 0x14a7fe880ull);
}
END_TEST

/* lengths 0..600 (every tail of the 64- and 256-byte steps) at every
 * alignment 0..15, with and without a running CRC */
START_TEST(test_crc_short_lengths)
{
	uint8_t data[600];

	if (!crc_use(_i))
		return;
	rng_seed(1);
	rng_fill(data, sizeof(data));
	for (size_t len = 0; len <= sizeof(data); len++) {
		uint32_t want0 = crc_ref(0, data, len);
		uint32_t want1 = crc_ref(0xa5a5a5a5u, data, len);

		for (size_t a = 0; a < 16; a++) {
			memcpy(crc_buf + a, data, len);
			ck_assert_msg(dr_crc32(0, crc_buf + a, len) == want0, "len %zu align %zu",
				      len, a);
			ck_assert_msg(dr_crc32_sb8(0, crc_buf + a, len) == want0,
				      "sb8 len %zu align %zu", len, a);
			ck_assert_msg(dr_crc32(0xa5a5a5a5u, crc_buf + a, len) == want1,
				      "seeded len %zu align %zu", len, a);
			ck_assert_msg(dr_crc32_sb8(0xa5a5a5a5u, crc_buf + a, len) == want1,
				      "sb8 seeded len %zu align %zu", len, a);
		}
	}
}
END_TEST

/* random lengths up to 64 KiB, every alignment 0..15 */
START_TEST(test_crc_long_lengths)
{
	static uint8_t data[64 << 10];
	size_t lens[28] = { sizeof(data), sizeof(data) - 1, 4096, 4096 + 63, 65, 127, 128, 129,
			    255, 256, 257, 4096 + 255, 4096 + 16 };

	if (!crc_use(_i))
		return;
	rng_seed(2);
	rng_fill(data, sizeof(data));
	for (size_t i = 13; i < ARRAY_SIZE(lens); i++)
		lens[i] = rng32() % (sizeof(data) + 1);
	for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
		size_t len = lens[i];
		uint32_t want = crc_ref(0, data, len);

		for (size_t a = 0; a < 16; a++) {
			memcpy(crc_buf + a, data, len);
			ck_assert_msg(dr_crc32(0, crc_buf + a, len) == want, "len %zu align %zu",
				      len, a);
			ck_assert_msg(dr_crc32_sb8(0, crc_buf + a, len) == want,
				      "sb8 len %zu align %zu", len, a);
		}
	}
}
END_TEST

/* dr_crc32_copy: the CRC dr_crc32 gives, and dst byte-exact, at the
 * lengths where the paths change (256: 512-bit folding; 64-byte blocks; a
 * tail under 16) and random ones, every source and destination alignment
 * mod 8 (and 63); not a byte written outside dst. */
START_TEST(test_crc_copy)
{
	static uint8_t data[(16 << 10) + 64], dst[(16 << 10) + 256];
	/* and 128: 256-bit folding, its 128-byte steps and 32-byte blocks */
	size_t lens[32] = {0,	1,   15,  16,  63,   64,       255,	  256,	      257,
			   319, 320, 511, 512, 4096, 4096 + 4, 4096 + 63, 4096 + 255, 16 << 10,
			   127, 128, 129, 159, 160,  255 - 32, 256 + 31};
	const size_t aligns[] = {0, 1, 2, 3, 4, 5, 6, 7, 63};

	if (!crc_use(_i))
		return;
	rng_seed(4);
	rng_fill(data, sizeof(data));
	for (size_t i = 25; i < ARRAY_SIZE(lens); i++)
		lens[i] = rng32() % ((16 << 10) + 1);
	for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
		size_t len = lens[i];
		uint32_t want = crc_ref(0x5a5a5a5au, data, len);

		for (size_t a = 0; a < ARRAY_SIZE(aligns); a++) {
			size_t sa = aligns[a], da = aligns[ARRAY_SIZE(aligns) - 1 - a];

			memcpy(crc_buf + sa, data, len);
			memset(dst, 0xa5, sizeof(dst));
			ck_assert_msg(
			    dr_crc32_copy(0x5a5a5a5au, dst + 64 + da, crc_buf + sa, len) == want,
			    "len %zu src %zu dst %zu", len, sa, da);
			ck_assert_msg(!memcmp(dst + 64 + da, data, len), "copy len %zu", len);
			for (size_t k = 0; k < sizeof(dst); k++)
				if (k < 64 + da || k >= 64 + da + len)
					ck_assert_msg(dst[k] == 0xa5, "len %zu: byte %zu outside",
						      len, k);
		}
	}
}
END_TEST

#if defined(__x86_64__)
#include <cpuid.h>

/* XINUSE (XGETBV with ECX = 1): the state components not in their initial
 * configuration; 0 if the CPU cannot tell */
static uint64_t xinuse(void)
{
	unsigned a, b, c, d, lo, hi;

	if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & 1u << 2))
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return (uint64_t)hi << 32 | lo;
}
#endif

/* The 512- and 256-bit paths leave the upper halves of the vector
 * registers clean (VZEROUPPER): dirty, every SSE instruction after them
 * pays for merging them, and a zero-config veth moved a third less
 * (bench/PROFILE.md).  Loop index: 0 the 512-bit path, 1 the 256-bit. */
START_TEST(test_crc_upper_clean)
{
#if defined(__x86_64__)
	/* YMM_Hi128 and ZMM_Hi256: registers 0-15, whose upper halves SSE
	 * instructions merge (glibc's EVEX string functions leave 16-31 in
	 * use, which SSE never touches) */
	const uint64_t upper = 1u << 2 | 1u << 6;
	static uint8_t dst[1024];
	uint64_t before, after_crc, after_copy;
	const int impl = _i ? 3 : 2;

	if (!crc_use(impl))
		return;
	rng_seed(7);
	rng_fill(crc_buf, 1024);
	/* dirty first (all ones in zmm0, or ymm0 without AVX-512): that the
	 * CPU reports it shows the check below can fail */
	if (impl == 2)
		__asm__ volatile("vpternlogd $0xff, %%zmm0, %%zmm0, %%zmm0" ::: "xmm0");
	else
		__asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");
	before = xinuse();
	if (!(before & upper)) {
		__asm__ volatile("vzeroupper");
		dr_crc32_select(NULL);
		printf("crc: XGETBV(1) does not report the upper state; its test is not run\n");
		return;
	}
	(void)dr_crc32(0, crc_buf, 1024);
	after_crc = xinuse();
	if (impl == 2)
		__asm__ volatile("vpternlogd $0xff, %%zmm0, %%zmm0, %%zmm0" ::: "xmm0");
	else
		__asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");
	(void)dr_crc32_copy(0, dst, crc_buf, 1024);
	after_copy = xinuse();
	dr_crc32_select(NULL);
	ck_assert_msg(!(after_crc & upper), "%s: dr_crc32 left XINUSE %#" PRIx64, crc_impls[impl],
		      after_crc);
	ck_assert_msg(!(after_copy & upper), "%s: dr_crc32_copy left XINUSE %#" PRIx64,
		      crc_impls[impl], after_copy);
#endif
}
END_TEST

/* dr_icrc_frame and dr_icrc_frame_copy: the reference's ICRC, and the
 * payload byte-exact in dst, for IPv4 and IPv6 header blocks of every
 * length their one-pass route takes (up to 56 bytes) and the next ones,
 * payloads around its 192-byte minimum and the 64/256-byte steps, with
 * and without a pad, each implementation; nothing written outside dst. */
START_TEST(test_icrc_frame_copy)
{
	static uint8_t l3[64 + 4096 + 8], dst[4096 + 128];
	const size_t hls[] = {40, 44, 48, 52, 56, 60, 64};
	const size_t lens[] = {0,   1,	 100, 111, 112, 113,  143,  191, 192,
			       193, 240, 255, 256, 448, 1021, 4096, 4099};

	if (!crc_use(_i))
		return;
	rng_seed(6);
	for (size_t h = 0; h < ARRAY_SIZE(hls); h++) {
		for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
			for (size_t pad = 0; pad <= 3; pad += 3) {
				size_t hl = hls[h], len = lens[i];
				uint32_t want, got;

				rng_fill(l3, sizeof(l3));
				/* IPv6 where the headers hold it (60 and 64) */
				l3[0] = hl >= 60 && (pad || i % 2) ? 0x60 : 0x45;
				want = icrc_ref_parts(l3, hl, l3 + hl, len, l3 + hl + len, pad);
				ck_assert_int_eq(
				    dr_icrc_frame(l3, hl, l3 + hl, len, l3 + hl + len, pad, &got),
				    0);
				ck_assert_msg(got == want, "hdr %zu len %zu pad %zu", hl, len, pad);
				memset(dst, 0xa5, sizeof(dst));
				ck_assert_int_eq(dr_icrc_frame_copy(l3, hl, l3 + hl, len,
								    l3 + hl + len, pad, dst + 64,
								    &got),
						 0);
				ck_assert_msg(got == want, "hdr %zu len %zu pad %zu", hl, len, pad);
				ck_assert(!memcmp(dst + 64, l3 + hl, len));
				for (size_t k = 0; k < sizeof(dst); k++)
					if (k < 64 || k >= 64 + len)
						ck_assert_msg(dst[k] == 0xa5,
							      "hdr %zu len %zu: byte %zu", hl, len,
							      k);
			}
		}
	}
}
END_TEST

/* The one-pass route loads the 64 bytes that end where the headers end,
 * under a mask: headers at the start of a page after an inaccessible one
 * must not fault, and give the reference's ICRC, each implementation. */
START_TEST(test_icrc_frame_guard)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *map, *l3;
	static uint8_t dst[2048];

	if (!crc_use(_i))
		return;
	map = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(map != MAP_FAILED);
	ck_assert_int_eq(mprotect(map, pg, PROT_NONE), 0);
	l3 = map + pg;
	rng_seed(8);
	rng_fill(l3, 2 * pg);
	l3[0] = 0x45;
	for (size_t hl = 40; hl <= 56; hl += 4) {
		for (size_t len = 0; len <= 1024; len += len < 8 ? 8 : 1016) {
			uint32_t want = icrc_ref_parts(l3, hl, l3 + hl, len, NULL, 0), got;

			ck_assert_int_eq(dr_icrc_frame(l3, hl, l3 + hl, len, NULL, 0, &got), 0);
			ck_assert_msg(got == want, "%s hdr %zu len %zu", crc_impls[_i], hl, len);
			ck_assert_int_eq(
			    dr_icrc_frame_copy(l3, hl, l3 + hl, len, NULL, 0, dst, &got), 0);
			ck_assert_msg(got == want, "%s copy hdr %zu len %zu", crc_impls[_i], hl,
				      len);
			ck_assert(!memcmp(dst, l3 + hl, len));
		}
	}
	munmap(map, 3 * pg);
}
END_TEST

/* crc(a||b) == crc(crc(a), b) at every split, mixing the two paths */
START_TEST(test_crc_continuation)
{
	static uint8_t data[64 << 10];
	uint32_t whole, c;
	size_t n = 1500, off;

	if (!crc_use(_i))
		return;
	rng_seed(3);
	rng_fill(data, sizeof(data));
	whole = crc_ref(0, data, n);
	for (size_t k = 0; k <= n; k++) {
		ck_assert_msg(dr_crc32(dr_crc32(0, data, k), data + k, n - k) == whole, "split %zu",
			      k);
		ck_assert_msg(dr_crc32_sb8(dr_crc32(0, data, k), data + k, n - k) == whole,
			      "split %zu fast then sb8", k);
		ck_assert_msg(dr_crc32(dr_crc32_sb8(0, data, k), data + k, n - k) == whole,
			      "split %zu sb8 then fast", k);
	}
	/* arbitrary splits of 64 KiB into three */
	whole = crc_ref(0, data, sizeof(data));
	for (int i = 0; i < 200; i++) {
		size_t a = rng32() % sizeof(data), b = rng32() % sizeof(data), t;

		if (a > b) {
			t = a;
			a = b;
			b = t;
		}
		c = dr_crc32(0, data, a);
		c = dr_crc32(c, data + a, b - a);
		c = dr_crc32(c, data + b, sizeof(data) - b);
		ck_assert_msg(c == whole, "splits %zu %zu", a, b);
	}
	/* many small pieces, 0..17 bytes each */
	c = 0;
	for (off = 0; off < sizeof(data);) {
		size_t piece = rng32() % 18;

		if (piece > sizeof(data) - off)
			piece = sizeof(data) - off;
		c = (off & 1) ? dr_crc32(c, data + off, piece) : dr_crc32_sb8(c, data + off, piece);
		off += piece;
	}
	ck_assert_uint_eq(c, whole);
	/* pieces around the 64-byte fast-path threshold */
	c = 0;
	for (off = 0; off < sizeof(data);) {
		size_t piece = 60 + rng32() % 72;

		if (piece > sizeof(data) - off)
			piece = sizeof(data) - off;
		c = dr_crc32(c, data + off, piece);
		off += piece;
	}
	ck_assert_uint_eq(c, whole);
}
END_TEST

/* The A.9 worked vector, IP header to ICRC inclusive. */
static const char a9_hex[] = "45000034123440004011a531c0a80101c0a80102c12312b7002000000430ffff00"
			     "0000118000000168656c6c6f000000058377b6";

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;

	for (; s[0] && s[1]; s += 2) {
		unsigned v;

		ck_assert(sscanf(s, "%2x", &v) == 1);
		out[n++] = (uint8_t)v;
	}
	return n;
}

static const uint8_t mac_a[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t mac_b[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

/* A.9: 192.168.1.1 -> 192.168.1.2, ID 0x1234, DF, TTL 64, TOS 0,
 * UDP 0xC123 -> 4791, RC SEND_ONLY, P_Key 0xFFFF, DestQP 0x11, AckReq, PSN 1,
 * payload "hello" */
static void a9_desc(struct dr_pkt_desc *d)
{
	dr_pkt_desc_init(d);
	memcpy(d->dst_mac, mac_b, 6);
	memcpy(d->src_mac, mac_a, 6);
	d->src_ip4 = 0xc0a80101;
	d->dst_ip4 = 0xc0a80102;
	d->ip_id = 0x1234;
	d->sport = 0xc123;
	d->opcode = DR_OP_SEND_ONLY;
	d->dqpn = 0x11;
	d->ackreq = true;
	d->psn = 1;
	d->payload = "hello";
	d->payload_len = 5;
}

START_TEST(test_icrc_vector)
{
	uint8_t want[128], *frame;
	struct dr_pkt_desc d;
	struct dr_pkt pkt;
	size_t n = unhex(a9_hex, want);
	int fl;

	ck_assert_uint_eq(n, 52);
	a9_desc(&d);
	fl = dr_pkt_frame_len(&d);
	ck_assert_int_eq(fl, ETH_LEN + 52);
	frame = malloc((size_t)fl);
	ck_assert_int_eq(dr_pkt_build(&d, frame, (size_t)fl), fl);
	assert_bytes_eq(frame, mac_b, 6, "dst MAC");
	assert_bytes_eq(frame + 6, mac_a, 6, "src MAC");
	ck_assert_uint_eq(get16(frame + 12), 0x0800);
	assert_bytes_eq(frame + ETH_LEN, want, n, "A.9 vector");
	/* the ICRC integer and its LSB-first wire order */
	ck_assert_uint_eq(dr_icrc_get(frame + fl - 4), 0xb6778305u);
	ck_assert_uint_eq(frame[fl - 4], 0x05);
	ck_assert_uint_eq(frame[fl - 3], 0x83);
	ck_assert_uint_eq(frame[fl - 2], 0x77);
	ck_assert_uint_eq(frame[fl - 1], 0xb6);
	ck_assert_uint_eq(icrc_ref(frame), 0xb6778305u);
	/* the IPv4 header checksum of the vector */
	ck_assert_uint_eq(dr_ipv4_csum((const struct dr_ipv4_hdr *)(frame + ETH_LEN)),
			  htons(0xa531));
	ck_assert_uint_eq(ip4_csum_ref(frame + ETH_LEN), 0xa531);

	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)fl, 0, &pkt), DR_PKT_OK);
	ck_assert_uint_eq(pkt.icrc, 0xb6778305u);
	ck_assert_uint_eq(dr_pkt_icrc(&pkt), 0xb6778305u);
	ck_assert_uint_eq(pkt.payload_len, 5);
	ck_assert_uint_eq(pkt.padcnt, 3);
	ck_assert_int_eq(memcmp(pkt.payload, "hello", 5), 0);
	free(frame);
}
END_TEST

/*
 * An IPv6 vector from rdma_rxe itself (tests/golden/rxe-ipv6-rping.pcapng,
 * frame 35: Linux 6.1 rxe, rping over fd77::/64): an ACKNOWLEDGE from
 * fd77::11 to fd77::12, UDP 0xEC48 -> 4791 with checksum 0, hop limit 64,
 * traffic class and flow label 0, DestQP 0x11, PSN 0xD68DEA, AETH 0x1F|MSN 1.
 * The ICRC masks traffic class, flow label and hop limit (A.9): any value
 * there leaves it, any other header byte changes it.
 */
static const char rxe_ipv6_ack_hex[] =
	"60000000001c1140fd770000000000000000000000000011fd7700000000000000000000"
	"00000012ec4812b7001c00001100ffff0000001100d68dea1f000001";

START_TEST(test_icrc_vector_ipv6_rxe)
{
	static const uint8_t s6[16] = {0xfd, 0x77, [15] = 0x11};
	static const uint8_t d6[16] = {0xfd, 0x77, [15] = 0x12};
	uint8_t want[128], frame[128], m[128];
	size_t n = unhex(rxe_ipv6_ack_hex, want);
	struct dr_pkt_desc d;
	struct dr_pkt pkt;
	uint32_t icrc;
	int fl;

	ck_assert_uint_eq(n, 40 + 8 + 12 + 4);
	dr_pkt_desc_init(&d);
	memcpy(d.dst_mac, mac_b, 6);
	memcpy(d.src_mac, mac_a, 6);
	d.ip_version = 6;
	memcpy(d.src_ip6, s6, 16);
	memcpy(d.dst_ip6, d6, 16);
	d.sport = 0xec48;
	d.opcode = DR_OP_ACK;
	d.dqpn = 0x11;
	d.psn = 0xd68dea;
	d.aeth.syndrome = DR_AETH_ACK_UNLIMITED;
	d.aeth.msn = 1;
	fl = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(fl, ETH_LEN + (int)n + 4);
	ck_assert_uint_eq(get16(frame + 12), 0x86dd);
	assert_bytes_eq(frame + ETH_LEN, want, n, "rxe IPv6 ACK");
	/* rxe's ICRC, 58 fb c8 a0 on the wire */
	ck_assert_uint_eq(dr_icrc_get(frame + fl - 4), 0xa0c8fb58u);
	ck_assert_uint_eq(icrc_ref(frame), 0xa0c8fb58u);
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)fl, 0, &pkt), DR_PKT_OK);
	ck_assert_ptr_nonnull(pkt.ip6);
	ck_assert_ptr_null(pkt.ip4);
	ck_assert_uint_eq(pkt.dqpn, 0x11);
	ck_assert_uint_eq(pkt.psn, 0xd68dea);

	/* the masked fields: traffic class, flow label, hop limit */
	for (int f = 0; f < 3; f++) {
		memcpy(m, want, n);
		if (f == 0)
			m[0] = 0x6f, m[1] = 0xf0; /* traffic class 0xff */
		else if (f == 1)
			m[1] |= 0x0f, m[2] = 0xff, m[3] = 0xff; /* flow label 0xfffff */
		else
			m[7] = 1; /* hop limit */
		ck_assert_int_eq(dr_icrc_frame(m, n, NULL, 0, NULL, 0, &icrc), 0);
		ck_assert_msg(icrc == 0xa0c8fb58u, "masked field %d changed the ICRC", f);
	}
	/* every other byte is covered (the UDP checksum and BTH byte 4 are
	 * masked too) */
	for (size_t i = 0; i < n; i++) {
		bool masked = i < 4 || i == 7 || i == 46 || i == 47 || i == 48 + 4;

		memcpy(m, want, n);
		m[i] ^= 0x01; /* byte 0: the version nibble stays 6 */
		ck_assert_int_eq(dr_icrc_frame(m, n, NULL, 0, NULL, 0, &icrc), 0);
		ck_assert_msg((icrc == 0xa0c8fb58u) == masked, "byte %zu: ICRC %08x", i, icrc);
	}
}
END_TEST

/* dr_icrc_start/update over headers and payload in pieces */
START_TEST(test_icrc_pieces)
{
	uint8_t v[64];
	size_t n = unhex(a9_hex, v);
	const size_t hl = IP4_LEN + UDP_LEN + BTH_LEN;
	uint32_t st;

	ck_assert_int_eq(dr_icrc_start(v, hl, &st), 0);
	st = dr_icrc_update(st, v + hl, n - hl - 4);
	ck_assert_uint_eq(st, 0xb6778305u);
	for (size_t k = 0; k <= n - hl - 4; k++) {
		ck_assert_int_eq(dr_icrc_start(v, hl, &st), 0);
		st = dr_icrc_update(st, v + hl, k);
		st = dr_icrc_update(st, v + hl + k, n - hl - 4 - k);
		ck_assert_msg(st == 0xb6778305u, "split %zu", k);
	}
	/* headers longer than IP/UDP/BTH: the rest is CRC'd as is */
	ck_assert_int_eq(dr_icrc_start(v, n - 4, &st), 0);
	ck_assert_uint_eq(st, 0xb6778305u);
	/* refusals: too short for IP+UDP+BTH, not IPv4/IPv6 */
	ck_assert_int_eq(dr_icrc_start(v, hl - 1, &st), -1);
	ck_assert_int_eq(dr_icrc_start(v, 0, &st), -1);
	v[0] = 0x55;
	ck_assert_int_eq(dr_icrc_start(v, hl, &st), -1);
	v[0] = 0x65; /* claims IPv6: needs 60 bytes */
	ck_assert_int_eq(dr_icrc_start(v, hl, &st), -1);
}
END_TEST

/*
 * Every implementation (loop index: crc_impls) builds and checks the same
 * ICRCs as the reference: frames whose headers and payload are gathered in
 * one pass (up to 256 bytes) and those done in pieces, over IPv4 and IPv6,
 * with and without extension headers; and dr_icrc_start on header stacks
 * longer than the codec builds.
 */
START_TEST(test_icrc_impls)
{
	static const uint8_t ops[] = { DR_OP_SEND_ONLY, DR_OP_WRITE_ONLY, DR_OP_ACK,
				       DR_OP_SEND_ONLY_IMM };
	static uint8_t payload[4096 + 8], frame[4096 + 200];
	struct dr_pkt_desc d;
	struct dr_pkt pkt;
	uint32_t st;

	if (!crc_use(_i))
		return;
	rng_seed(7);
	rng_fill(payload, sizeof(payload));
	for (size_t o = 0; o < ARRAY_SIZE(ops); o++)
		for (int v6 = 0; v6 < 2; v6++)
			for (size_t len = 0; len <= 4096; len += len < 300 ? 1 : 541) {
				int fl;

				if (ops[o] == DR_OP_ACK && len)
					break;
				a9_desc(&d);
				d.opcode = ops[o];
				d.payload = payload;
				d.payload_len = len;
				if (v6) {
					static const uint8_t s6[16] = { 0xfe, 0x80, [15] = 1 };
					static const uint8_t d6[16] = { 0xfe, 0x80, [15] = 2 };

					d.ip_version = 6;
					memcpy(d.src_ip6, s6, 16);
					memcpy(d.dst_ip6, d6, 16);
				}
				fl = dr_pkt_build(&d, frame, sizeof(frame));
				ck_assert_msg(fl > 0, "op %u len %zu", ops[o], len);
				ck_assert_msg(dr_icrc_get(frame + fl - 4) == icrc_ref(frame),
					      "%s op %u v6 %d len %zu", crc_impls[_i], ops[o], v6, len);
				ck_assert_int_eq(dr_pkt_parse(frame, (size_t)fl, 0, &pkt), DR_PKT_OK);
				/* in pieces: headers, then payload and pad */
				ck_assert_int_eq(dr_icrc_start(frame + ETH_LEN,
							       (size_t)(pkt.payload - frame) - ETH_LEN,
							       &st),
						 0);
				st = dr_icrc_update(st, pkt.payload,
						    (size_t)fl - 4 - (size_t)(pkt.payload - frame));
				ck_assert_msg(st == icrc_ref(frame), "%s pieces op %u v6 %d len %zu",
					      crc_impls[_i], ops[o], v6, len);
			}
	/* a header stack of 40..300 bytes: IP/UDP/BTH masked, the rest as is */
	a9_desc(&d);
	d.payload = payload;
	d.payload_len = 300;
	ck_assert_int_gt(dr_pkt_build(&d, frame, sizeof(frame)), 0);
	for (size_t hl = 40; hl <= 340; hl++) {
		uint32_t want;

		ck_assert_int_eq(dr_icrc_start(frame + ETH_LEN, 40, &want), 0);
		want = dr_crc32_sb8(want, frame + ETH_LEN + 40, hl - 40);
		ck_assert_int_eq(dr_icrc_start(frame + ETH_LEN, hl, &st), 0);
		ck_assert_msg(st == want, "%s header stack of %zu", crc_impls[_i], hl);
	}
}
END_TEST

START_TEST(test_icrc_byte_order)
{
	uint8_t b[4];

	dr_icrc_put(b, 0xb6778305u);
	ck_assert(b[0] == 0x05 && b[1] == 0x83 && b[2] == 0x77 && b[3] == 0xb6);
	ck_assert_uint_eq(dr_icrc_get(b), 0xb6778305u);
	dr_icrc_put(b, 0x01020304u);
	ck_assert(b[0] == 0x04 && b[1] == 0x03 && b[2] == 0x02 && b[3] == 0x01);
}
END_TEST

/* ---- descriptions for round trips -------------------------------------------- */

static uint8_t pattern[DR_MAX_PMTU + 8];

static void pattern_init(void)
{
	for (size_t i = 0; i < sizeof(pattern); i++)
		pattern[i] = (uint8_t)(i * 7 + 3);
}

/* Values at the edges of every field, picked by a sequence number. */
static const uint32_t psn_vals[] = { 0, 1, 0x7fffff, 0x800000, 0xfffffd, 0xfffffe, 0xffffff };
static const uint32_t qpn_vals[] = { 1, 0x11, 0xabcdef, 0xfffffe, 0xffffff };
static const uint16_t pkey_vals[] = { 0xffff, 0x8001, 0x7fff, 0x0000 };
static const uint8_t syn_vals[] = { 0x1f, 0x00, 0x3f, 0x60, 0x63, 0xff };

/* A description with every field that reaches the wire set to a distinct
 * value; fields that do not reach the wire for this layout keep the
 * dr_pkt_desc_init() defaults, so a parsed-back description equals it. */
static void fill_desc(struct dr_pkt_desc *d, uint8_t op, unsigned ipv, bool vlan, uint32_t len,
		      unsigned seq)
{
	const struct op_spec *s = spec_of(op);

	dr_pkt_desc_init(d);
	memcpy(d->dst_mac, mac_b, 6);
	memcpy(d->src_mac, mac_a, 6);
	d->dst_mac[5] = (uint8_t)seq;
	d->vlan = vlan;
	if (vlan)
		d->vlan_tci = (uint16_t)(0xe000 | (seq & 0xfff));
	d->ip_version = (uint8_t)ipv;
	if (ipv == 4) {
		d->src_ip4 = 0xc0a80101;
		d->dst_ip4 = 0x0a000000 | seq;
		d->ip_id = (uint16_t)(0x1234 + seq * 0x101);
		d->ip_frag = (seq & 8) ? 0 : DR_IP_DF;
	} else {
		for (int i = 0; i < 16; i++) {
			d->src_ip6[i] = (uint8_t)(0xf0 + i);
			d->dst_ip6[i] = (uint8_t)(i * 0x11 ^ seq);
		}
		d->flow_label = (0xfffffu - seq) & 0xfffff;
	}
	d->tos = (uint8_t)(seq * 37);
	d->ttl = (uint8_t)(255 - seq);
	d->sport = (uint16_t)(0xc000 | (seq * 0x151));

	d->opcode = op;
	d->se = seq & 1;
	d->mig = seq & 2;
	d->pkey = pkey_vals[seq % ARRAY_SIZE(pkey_vals)];
	d->bth_rsvd8 = (seq & 4) ? 0xc0 : 0;
	d->dqpn = qpn_vals[seq % ARRAY_SIZE(qpn_vals)];
	d->ackreq = seq & 4;
	d->bth_resv7 = (seq & 16) ? 0x7f : 0;
	d->psn = psn_vals[seq % ARRAY_SIZE(psn_vals)];

	if (s->hdrs & DR_OPF_RETH) {
		d->reth.va = 0x0123456789abcdefull ^ seq;
		d->reth.rkey = 0xdeadbeef ^ seq;
		d->reth.len = 0x80000000u | len;
	}
	if (s->hdrs & DR_OPF_AETH) {
		d->aeth.syndrome = syn_vals[seq % ARRAY_SIZE(syn_vals)];
		d->aeth.msn = 0xffffff - seq;
	}
	if (s->hdrs & DR_OPF_ATMETH) {
		d->atmeth.va = 0xfedcba9876543210ull - seq * 8;
		d->atmeth.rkey = 0x12345678 + seq;
		d->atmeth.swap_add = 0x8000000000000001ull + seq;
		d->atmeth.cmp = 0xffffffffffffffffull - seq;
	}
	if (s->hdrs & DR_OPF_ATMACK)
		d->atmack_orig = 0xa5a5a5a55a5a5a5aull ^ seq;
	if (s->hdrs & DR_OPF_IMMDT)
		d->imm = 0x80000001u ^ seq;
	if (s->hdrs & DR_OPF_IETH)
		d->ieth_rkey = 0xcafef00du + seq;
	if (s->hdrs & DR_OPF_DETH) {
		d->deth.qkey = DR_GSI_QKEY;
		d->deth.resv8 = (uint8_t)(seq * 3);
		d->deth.sqpn = qpn_vals[(seq + 1) % ARRAY_SIZE(qpn_vals)];
	}
	d->payload = len ? pattern + (seq % 8) : NULL;
	d->payload_len = len;
}

static void assert_desc_eq(const struct dr_pkt_desc *g, const struct dr_pkt_desc *w,
			   const char *ctx)
{
	ck_assert_msg(!memcmp(g->dst_mac, w->dst_mac, 6) && !memcmp(g->src_mac, w->src_mac, 6),
		      "%s: MACs", ctx);
	ck_assert_msg(g->vlan == w->vlan && g->vlan_tci == w->vlan_tci, "%s: VLAN", ctx);
	ck_assert_msg(g->ip_version == w->ip_version, "%s: ip_version", ctx);
	ck_assert_msg(g->src_ip4 == w->src_ip4 && g->dst_ip4 == w->dst_ip4, "%s: IPv4 addrs", ctx);
	ck_assert_msg(!memcmp(g->src_ip6, w->src_ip6, 16) && !memcmp(g->dst_ip6, w->dst_ip6, 16),
		      "%s: IPv6 addrs", ctx);
	ck_assert_msg(g->tos == w->tos, "%s: tos %u want %u", ctx, g->tos, w->tos);
	ck_assert_msg(g->ttl == w->ttl, "%s: ttl", ctx);
	ck_assert_msg(g->ip_id == w->ip_id, "%s: ip_id", ctx);
	ck_assert_msg(g->ip_frag == w->ip_frag, "%s: ip_frag %#x want %#x", ctx, g->ip_frag,
		      w->ip_frag);
	ck_assert_msg(g->flow_label == w->flow_label, "%s: flow label", ctx);
	ck_assert_msg(g->sport == w->sport && g->dport == w->dport, "%s: ports", ctx);
	ck_assert_msg(g->opcode == w->opcode, "%s: opcode", ctx);
	ck_assert_msg(g->se == w->se && g->mig == w->mig, "%s: SE/M", ctx);
	ck_assert_msg(g->pkey == w->pkey, "%s: pkey", ctx);
	ck_assert_msg(g->bth_rsvd8 == w->bth_rsvd8, "%s: BTH byte 4", ctx);
	ck_assert_msg(g->dqpn == w->dqpn, "%s: dqpn %#x want %#x", ctx, g->dqpn, w->dqpn);
	ck_assert_msg(g->ackreq == w->ackreq && g->bth_resv7 == w->bth_resv7, "%s: AckReq/resv7",
		      ctx);
	ck_assert_msg(g->psn == w->psn, "%s: psn %#x want %#x", ctx, g->psn, w->psn);
	ck_assert_msg(g->reth.va == w->reth.va && g->reth.rkey == w->reth.rkey &&
			      g->reth.len == w->reth.len,
		      "%s: RETH", ctx);
	ck_assert_msg(g->aeth.syndrome == w->aeth.syndrome && g->aeth.msn == w->aeth.msn,
		      "%s: AETH", ctx);
	ck_assert_msg(g->atmeth.va == w->atmeth.va && g->atmeth.rkey == w->atmeth.rkey &&
			      g->atmeth.swap_add == w->atmeth.swap_add &&
			      g->atmeth.cmp == w->atmeth.cmp,
		      "%s: AtomicETH", ctx);
	ck_assert_msg(g->atmack_orig == w->atmack_orig, "%s: AtomicAckETH", ctx);
	ck_assert_msg(g->imm == w->imm, "%s: ImmDt", ctx);
	ck_assert_msg(g->ieth_rkey == w->ieth_rkey, "%s: IETH", ctx);
	ck_assert_msg(g->deth.qkey == w->deth.qkey && g->deth.resv8 == w->deth.resv8 &&
			      g->deth.sqpn == w->deth.sqpn,
		      "%s: DETH", ctx);
	ck_assert_msg(g->payload_len == w->payload_len, "%s: payload_len %u want %u", ctx,
		      g->payload_len, w->payload_len);
	if (w->payload_len)
		ck_assert_msg(!memcmp(g->payload, w->payload, w->payload_len), "%s: payload", ctx);
}

/* Every field of the parsed view against the description it was built from. */
static void check_view(const struct dr_pkt *p, const struct dr_pkt_desc *d, const uint8_t *f,
		       size_t fl, const char *ctx)
{
	const struct op_spec *s = spec_of(d->opcode);
	size_t l3 = ETH_LEN + (d->vlan ? VLAN_LEN : 0);
	size_t l4 = l3 + (d->ip_version == 4 ? IP4_LEN : IP6_LEN);
	size_t bth = l4 + UDP_LEN;
	unsigned pad = (0u - d->payload_len) & 3;
	const uint8_t *ip = f + l3;

	ck_assert_msg(p->frame == f && p->frame_len == fl && p->trailer_len == 0, "%s: frame",
		      ctx);
	ck_assert_msg(fl == bth + s->hdr_len + d->payload_len + pad + ICRC_LEN, "%s: length", ctx);

	/* layer 2 */
	ck_assert_msg((const uint8_t *)p->eth == f, "%s: eth", ctx);
	ck_assert_msg(!memcmp(f, d->dst_mac, 6) && !memcmp(f + 6, d->src_mac, 6), "%s: MACs",
		      ctx);
	if (d->vlan) {
		ck_assert_msg((const uint8_t *)p->vlan == f + ETH_LEN, "%s: vlan", ctx);
		ck_assert_uint_eq(get16(f + 12), DR_ETH_P_VLAN);
		ck_assert_uint_eq(get16(f + 14), d->vlan_tci);
	} else {
		ck_assert_msg(p->vlan == NULL, "%s: no vlan", ctx);
	}
	ck_assert_uint_eq(get16(f + l3 - 2), d->ip_version == 4 ? 0x0800 : 0x86dd);
	ck_assert_uint_eq(p->ethertype, d->ip_version == 4 ? 0x0800 : 0x86dd);

	/* layer 3: rxe's choices (A.2) */
	if (d->ip_version == 4) {
		ck_assert_msg((const uint8_t *)p->ip4 == ip && p->ip6 == NULL, "%s: ip4", ctx);
		ck_assert_uint_eq(ip[0], 0x45);
		ck_assert_uint_eq(ip[1], d->tos);
		ck_assert_uint_eq(get16(ip + 2), fl - l3);
		ck_assert_uint_eq(get16(ip + 4), d->ip_id);
		ck_assert_uint_eq(get16(ip + 6), d->ip_frag);
		ck_assert_uint_eq(ip[8], d->ttl);
		ck_assert_uint_eq(ip[9], 17);
		ck_assert_uint_eq(get16(ip + 10), ip4_csum_ref(ip));
		ck_assert_uint_eq(get32(ip + 12), d->src_ip4);
		ck_assert_uint_eq(get32(ip + 16), d->dst_ip4);
	} else {
		ck_assert_msg((const uint8_t *)p->ip6 == ip && p->ip4 == NULL, "%s: ip6", ctx);
		ck_assert_uint_eq(get32(ip), 6u << 28 | (uint32_t)d->tos << 20 | d->flow_label);
		ck_assert_uint_eq(get16(ip + 4), fl - l4);
		ck_assert_uint_eq(ip[6], 17);
		ck_assert_uint_eq(ip[7], d->ttl);
		ck_assert_int_eq(memcmp(ip + 8, d->src_ip6, 16), 0);
		ck_assert_int_eq(memcmp(ip + 24, d->dst_ip6, 16), 0);
	}

	/* UDP (A.3): checksum 0, length = 8 + BTH..ICRC */
	ck_assert_msg((const uint8_t *)p->udp == f + l4, "%s: udp", ctx);
	ck_assert_uint_eq(get16(f + l4), d->sport);
	ck_assert_uint_eq(get16(f + l4 + 2), 4791);
	ck_assert_uint_eq(get16(f + l4 + 4), fl - l4);
	ck_assert_uint_eq(get16(f + l4 + 6), 0);

	/* BTH (A.4) through the accessors and as raw bytes */
	ck_assert_msg((const uint8_t *)p->bth == f + bth, "%s: bth", ctx);
	ck_assert_msg(p->op == &dr_opcode_tab[d->opcode], "%s: op", ctx);
	ck_assert_uint_eq(p->opcode, d->opcode);
	ck_assert_uint_eq(f[bth], d->opcode);
	ck_assert_uint_eq(f[bth + 1], (d->se ? 0x80 : 0) | (d->mig ? 0x40 : 0) | pad << 4);
	ck_assert_msg(dr_bth_se(p->bth) == d->se && dr_bth_mig(p->bth) == d->mig, "%s: SE/M",
		      ctx);
	ck_assert_uint_eq(dr_bth_tver(p->bth), 0);
	ck_assert_uint_eq(p->padcnt, pad);
	ck_assert_uint_eq(dr_bth_padcnt(p->bth), pad);
	ck_assert_uint_eq(dr_bth_pkey(p->bth), d->pkey);
	ck_assert_uint_eq(get16(f + bth + 2), d->pkey);
	ck_assert_uint_eq(f[bth + 4], d->bth_rsvd8);
	ck_assert_uint_eq(dr_bth_rsvd8(p->bth), d->bth_rsvd8);
	ck_assert_msg(dr_bth_fecn(p->bth) == !!(d->bth_rsvd8 & 0x80) &&
			      dr_bth_becn(p->bth) == !!(d->bth_rsvd8 & 0x40),
		      "%s: FECN/BECN", ctx);
	ck_assert_uint_eq(p->dqpn, d->dqpn);
	ck_assert_uint_eq(dr_bth_qpn(p->bth), d->dqpn);
	ck_assert_msg(p->ackreq == d->ackreq && dr_bth_ackreq(p->bth) == d->ackreq, "%s: AckReq",
		      ctx);
	ck_assert_uint_eq(dr_bth_resv7(p->bth), d->bth_resv7);
	ck_assert_uint_eq(p->psn, d->psn);
	ck_assert_uint_eq(dr_bth_psn(p->bth), d->psn);
	ck_assert_uint_eq(get32(f + bth + 8), (d->ackreq ? 0x80000000u : 0) |
						      (uint32_t)d->bth_resv7 << 24 | d->psn);

	/* extension headers: present exactly where the spec puts them */
	for (int h = 0, off = BTH_LEN; h < DR_HDR_NUM; h++) {
		if (s->hdrs & (1u << h)) {
			ck_assert_msg((const uint8_t *)p->hdr[h] == f + bth + off,
				      "%s: header %d", ctx, h);
			off += (int)ext_size[h];
		} else {
			ck_assert_msg(p->hdr[h] == NULL, "%s: header %d absent", ctx, h);
		}
	}
	if (dr_pkt_reth(p)) {
		const uint8_t *r = (const uint8_t *)dr_pkt_reth(p);

		ck_assert_msg(get64(r) == d->reth.va && get32(r + 8) == d->reth.rkey &&
				      get32(r + 12) == d->reth.len,
			      "%s: RETH", ctx);
	}
	if (dr_pkt_aeth(p)) {
		ck_assert_uint_eq(dr_aeth_syndrome(dr_pkt_aeth(p)), d->aeth.syndrome);
		ck_assert_uint_eq(dr_aeth_msn(dr_pkt_aeth(p)), d->aeth.msn);
	}
	if (dr_pkt_atmeth(p)) {
		const uint8_t *a = (const uint8_t *)dr_pkt_atmeth(p);

		ck_assert_msg(get64(a) == d->atmeth.va && get32(a + 8) == d->atmeth.rkey &&
				      get64(a + 12) == d->atmeth.swap_add &&
				      get64(a + 20) == d->atmeth.cmp,
			      "%s: AtomicETH", ctx);
	}
	if (dr_pkt_atmack(p))
		ck_assert_msg(get64((const uint8_t *)dr_pkt_atmack(p)) == d->atmack_orig,
			      "%s: AtomicAckETH", ctx);
	if (dr_pkt_immdt(p))
		ck_assert_uint_eq(get32((const uint8_t *)dr_pkt_immdt(p)), d->imm);
	if (dr_pkt_ieth(p))
		ck_assert_uint_eq(get32((const uint8_t *)dr_pkt_ieth(p)), d->ieth_rkey);
	if (dr_pkt_deth(p)) {
		ck_assert_uint_eq(dr_deth_qkey(dr_pkt_deth(p)), d->deth.qkey);
		ck_assert_uint_eq(dr_deth_resv8(dr_pkt_deth(p)), d->deth.resv8);
		ck_assert_uint_eq(dr_deth_sqp(dr_pkt_deth(p)), d->deth.sqpn);
	}

	/* payload, zero pad, ICRC */
	ck_assert_msg(p->payload == f + bth + s->hdr_len, "%s: payload pointer", ctx);
	ck_assert_uint_eq(p->payload_len, d->payload_len);
	if (d->payload_len)
		assert_bytes_eq(p->payload, d->payload, d->payload_len, ctx);
	for (unsigned i = 0; i < pad; i++)
		ck_assert_msg(p->payload[d->payload_len + i] == 0, "%s: pad byte %u", ctx, i);
	ck_assert_uint_eq(p->icrc, dr_icrc_get(f + fl - 4));
	ck_assert_msg(p->icrc == icrc_ref(f), "%s: ICRC %08x, reference %08x", ctx, p->icrc,
		      icrc_ref(f));
	ck_assert_uint_eq(dr_pkt_icrc(p), p->icrc);
}

static const uint32_t rt_sizes[] = { 0, 1, 3, 4, 255, 1024, 4096 };

static bool size_allowed(const struct op_spec *s, uint32_t len)
{
	if (!s->payload)
		return len == 0;
	/* IBA 9.7.6.1.3 / rxe: FIRST/MIDDLE/LAST carry at least one byte */
	return len || !(s->pos & (P_FIRST | P_MIDDLE | P_LAST));
}

START_TEST(test_roundtrip)
{
	const struct op_spec *s = &op_spec[_i];
	unsigned seq = 0, done = 0;

	for (size_t si = 0; si < ARRAY_SIZE(rt_sizes); si++) {
		uint32_t len = rt_sizes[si];

		if (!size_allowed(s, len))
			continue;
		for (unsigned ipv = 4; ipv <= 6; ipv += 2) {
			for (int vlan = 0; vlan < 2; vlan++, seq++) {
				struct dr_pkt_desc d, back;
				struct dr_pkt p;
				uint8_t *f, *f2, *hdr, trailer[7];
				unsigned tl = 0;
				int fl, hl;
				char ctx[128];

				snprintf(ctx, sizeof(ctx), "%s len %u IPv%u vlan %d", s->name, len,
					 ipv, vlan);
				fill_desc(&d, s->op, ipv, vlan, len, seq + _i);
				hl = dr_pkt_hdr_len(&d);
				ck_assert_msg(hl == ETH_LEN + (vlan ? VLAN_LEN : 0) +
							    (ipv == 4 ? IP4_LEN : IP6_LEN) +
							    UDP_LEN + (int)s->hdr_len,
					      "%s: hdr_len %d", ctx, hl);
				fl = dr_pkt_frame_len(&d);
				ck_assert_int_eq(fl, hl + (int)(len + ((0u - len) & 3)) + 4);

				f = malloc((size_t)fl);
				ck_assert_int_eq(dr_pkt_build(&d, f, (size_t)fl), fl);
				ck_assert_msg(dr_pkt_parse(f, (size_t)fl, 0, &p) == DR_PKT_OK,
					      "%s: %s", ctx,
					      dr_pkt_verdict_str(dr_pkt_parse(f, (size_t)fl, 0,
									      &p)));
				check_view(&p, &d, f, (size_t)fl, ctx);

				/* back to a description, and to the same bytes */
				dr_pkt_to_desc(&p, &back);
				assert_desc_eq(&back, &d, ctx);
				ck_assert_msg(back.payload == p.payload || !len, "%s", ctx);
				f2 = malloc((size_t)fl);
				ck_assert_int_eq(dr_pkt_build(&back, f2, (size_t)fl), fl);
				assert_bytes_eq(f2, f, (size_t)fl, ctx);

				/* split: hdr || payload || trailer is the same frame */
				hdr = malloc((size_t)hl);
				ck_assert_int_eq(dr_pkt_build_split(&d, hdr, (size_t)hl, trailer,
								    &tl),
						 hl);
				ck_assert_uint_eq(tl, ((0u - len) & 3) + 4);
				assert_bytes_eq(hdr, f, (size_t)hl, ctx);
				if (len)
					assert_bytes_eq(f + hl, d.payload, len, ctx);
				assert_bytes_eq(trailer, f + hl + len, tl, ctx);

				/* the flag skips the ICRC check, nothing else */
				ck_assert_int_eq(dr_pkt_parse(f, (size_t)fl, DR_PARSE_NO_ICRC, &p),
						 DR_PKT_OK);
				check_view(&p, &d, f, (size_t)fl, ctx);

				free(hdr);
				free(f2);
				free(f);
				done++;
			}
		}
	}
	/* payload opcodes: 6 or 7 sizes; the others: size 0 only; x 4 layouts */
	ck_assert_uint_eq(done, 4 * (!s->payload ? 1 : (s->pos & P_ONLY) ? 7 : 6));
}
END_TEST

/* PSNs at the 24-bit edge, and QPNs, one at a time on the A.9 frame */
START_TEST(test_roundtrip_psn_qpn_edges)
{
	static const uint32_t v[] = { 0, 1, 2, 0x7fffff, 0x800000, 0xfffff0, 0xfffffe, 0xffffff };

	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		for (int which = 0; which < 2; which++) {
			struct dr_pkt_desc d;
			struct dr_pkt p;
			uint8_t *f;
			int fl;

			a9_desc(&d);
			if (which)
				d.dqpn = v[i];
			else
				d.psn = v[i];
			fl = dr_pkt_frame_len(&d);
			f = malloc((size_t)fl);
			ck_assert_int_eq(dr_pkt_build(&d, f, (size_t)fl), fl);
			ck_assert_int_eq(dr_pkt_parse(f, (size_t)fl, 0, &p), DR_PKT_OK);
			ck_assert_uint_eq(which ? p.dqpn : p.psn, v[i]);
			ck_assert_uint_eq(which ? p.psn : p.dqpn, which ? 1 : 0x11);
			ck_assert_uint_eq(icrc_ref(f), p.icrc);
			free(f);
		}
	}
}
END_TEST

/* Ethernet padding after the IP datagram (frames below 60 bytes, or a NIC
 * that pads): the IP length says where the datagram ends. */
START_TEST(test_eth_trailer)
{
	struct dr_pkt_desc d;
	struct dr_pkt p;
	uint8_t *f;
	int fl;

	for (unsigned ipv = 4; ipv <= 6; ipv += 2) {
		fill_desc(&d, DR_OP_ACK, ipv, false, 0, 3);
		fl = dr_pkt_frame_len(&d);
		f = malloc((size_t)fl + 6);
		ck_assert_int_eq(dr_pkt_build(&d, f, (size_t)fl + 6), fl);
		memset(f + fl, 0, 6);
		ck_assert_int_eq(dr_pkt_parse(f, (size_t)fl + 6, 0, &p), DR_PKT_OK);
		ck_assert_uint_eq(p.trailer_len, 6);
		ck_assert_uint_eq(p.frame_len, (size_t)fl + 6);
		ck_assert_uint_eq(p.payload_len, 0);
		ck_assert_uint_eq(p.icrc, dr_icrc_get(f + fl - 4));
		free(f);
	}
}
END_TEST

/* ---- builder refusals --------------------------------------------------------- */

START_TEST(test_build_refusals)
{
	static uint8_t buf[FRAME_MAX + 8];
	uint8_t trailer[7];
	struct dr_pkt_desc d;
	unsigned tl;

	/* every opcode outside the table */
	for (unsigned op = 0; op < 256; op++) {
		if (in_valid_set(op))
			continue;
		a9_desc(&d);
		d.opcode = (uint8_t)op;
		ck_assert_int_eq(dr_pkt_build(&d, buf, sizeof(buf)), -EINVAL);
		ck_assert_int_eq(dr_pkt_build_split(&d, buf, sizeof(buf), trailer, &tl), -EINVAL);
		ck_assert_int_eq(dr_pkt_hdr_len(&d), -EINVAL);
		ck_assert_int_eq(dr_pkt_frame_len(&d), -EINVAL);
	}
	/* payload on every opcode that carries none (A.6) */
	for (size_t i = 0; i < ARRAY_SIZE(op_spec); i++) {
		if (op_spec[i].payload)
			continue;
		fill_desc(&d, op_spec[i].op, 4, false, 0, 0);
		ck_assert_int_gt(dr_pkt_build(&d, buf, sizeof(buf)), 0);
		d.payload = pattern;
		for (uint32_t len = 1; len <= 8; len++) {
			d.payload_len = len;
			ck_assert_int_eq(dr_pkt_build(&d, buf, sizeof(buf)), -EINVAL);
			ck_assert_int_eq(dr_pkt_build_split(&d, buf, sizeof(buf), trailer, &tl),
					 -EINVAL);
		}
	}
	/* payload over the largest path MTU: 4096 is fine, 4097 is not */
	fill_desc(&d, DR_OP_SEND_ONLY, 4, false, DR_MAX_PMTU, 0);
	ck_assert_int_gt(dr_pkt_build(&d, buf, sizeof(buf)), 0);
	d.payload_len = DR_MAX_PMTU + 1;
	ck_assert_int_eq(dr_pkt_build(&d, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(dr_pkt_frame_len(&d), -EINVAL);
	d.payload_len = 0xffffffffu;
	ck_assert_int_eq(dr_pkt_build(&d, buf, sizeof(buf)), -EINVAL);
	/* a length without bytes, and an IP version that is neither 4 nor 6 */
	fill_desc(&d, DR_OP_SEND_ONLY, 4, false, 0, 0);
	d.payload_len = 1;
	ck_assert_int_eq(dr_pkt_build(&d, buf, sizeof(buf)), -EINVAL);
	fill_desc(&d, DR_OP_SEND_ONLY, 4, false, 4, 0);
	d.ip_version = 5;
	ck_assert_int_eq(dr_pkt_build(&d, buf, sizeof(buf)), -EINVAL);
	d.ip_version = 0;
	ck_assert_int_eq(dr_pkt_build(&d, buf, sizeof(buf)), -EINVAL);
}
END_TEST

/* cap too small: -ENOSPC for every cap below the frame, nothing written past
 * cap (canary); and a generous cap is written only up to the frame */
START_TEST(test_build_enospc)
{
	static const struct {
		uint8_t op;
		unsigned ipv;
		bool vlan;
		uint32_t len;
	} t[] = {
		{ DR_OP_SEND_ONLY, 4, false, 5 },     { DR_OP_ACK, 4, false, 0 },
		{ DR_OP_WRITE_ONLY, 6, true, 4096 },  { DR_OP_UD_SEND_ONLY, 4, true, 256 },
		{ DR_OP_ATOMIC_ACK, 6, false, 0 },    { DR_OP_READ_RSP_MIDDLE, 4, false, 1023 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		struct dr_pkt_desc d;
		uint8_t trailer[7 + 8];
		unsigned tl;
		size_t slack = 64, fl, hl, k;
		uint8_t *buf;

		fill_desc(&d, t[i].op, t[i].ipv, t[i].vlan, t[i].len, (unsigned)i);
		fl = (size_t)dr_pkt_frame_len(&d);
		hl = (size_t)dr_pkt_hdr_len(&d);
		buf = malloc(fl + slack);
		for (size_t cap = 0; cap < fl; cap++) {
			memset(buf, 0xa5, fl + slack);
			ck_assert_msg(dr_pkt_build(&d, buf, cap) == -ENOSPC, "row %zu cap %zu", i,
				      cap);
			k = first_not(buf, cap, fl + slack, 0xa5);
			ck_assert_msg(k == fl + slack, "row %zu cap %zu: byte %zu written", i, cap,
				      k);
		}
		for (size_t cap = 0; cap < hl; cap++) {
			memset(buf, 0xa5, fl + slack);
			memset(trailer, 0xa5, sizeof(trailer));
			ck_assert_int_eq(dr_pkt_build_split(&d, buf, cap, trailer, &tl), -ENOSPC);
			k = first_not(buf, cap, fl + slack, 0xa5);
			ck_assert_msg(k == fl + slack, "split row %zu cap %zu: byte %zu written", i,
				      cap, k);
		}
		memset(buf, 0xa5, fl + slack);
		ck_assert_int_eq(dr_pkt_build(&d, buf, fl + slack), (int)fl);
		k = first_not(buf, fl, fl + slack, 0xa5);
		ck_assert_msg(k == fl + slack, "row %zu: byte %zu past the frame written", i, k);
		memset(trailer, 0xa5, sizeof(trailer));
		ck_assert_int_eq(dr_pkt_build_split(&d, buf, hl, trailer, &tl), (int)hl);
		k = first_not(trailer, tl, sizeof(trailer), 0xa5);
		ck_assert_msg(k == sizeof(trailer), "row %zu: trailer byte %zu written", i, k);
		free(buf);
	}
}
END_TEST

/* ---- malformed frames ----------------------------------------------------------- */

/* A frame under edit, with its layer offsets. */
struct frame {
	uint8_t b[FRAME_MAX];
	size_t len;
	size_t l3, l4, bth;
	unsigned ipv;
};

enum base {
	B_SEND,	     /* A.9-like SEND_ONLY, 13-byte payload, PadCnt 3 */
	B_SEND6,     /* the same over IPv6 */
	B_SEND_VLAN, /* the same with an 802.1Q tag */
	B_SEND0,     /* SEND_ONLY without payload */
	B_SEND4093,  /* SEND_ONLY, 4093 bytes + 3 pad */
	B_WRITE,     /* RDMA_WRITE_ONLY, RETH, 64 bytes */
	B_WRITE4096, /* RDMA_WRITE_ONLY, the largest payload */
	B_READ_REQ,  /* RDMA_READ_REQUEST */
	B_ATOMIC,    /* COMPARE_SWAP */
	B_ACK,	     /* ACKNOWLEDGE, rxe's unlimited-credit syndrome */
	B_MAD,	     /* UD_SEND_ONLY to QP1 with a 256-byte MAD (C.1) */
	B_NUM
};

static void base_desc(enum base b, struct dr_pkt_desc *d)
{
	switch (b) {
	case B_SEND:
	case B_SEND6:
	case B_SEND_VLAN:
		a9_desc(d);
		d->payload = "hello, world!";
		d->payload_len = 13;
		if (b == B_SEND6) {
			d->ip_version = 6;
			d->src_ip6[0] = 0xfe;
			d->src_ip6[1] = 0x80;
			d->src_ip6[15] = 1;
			memcpy(d->dst_ip6, d->src_ip6, 16);
			d->dst_ip6[15] = 2;
		}
		d->vlan = b == B_SEND_VLAN;
		d->vlan_tci = 5;
		break;
	case B_SEND0:
		a9_desc(d);
		d->payload = NULL;
		d->payload_len = 0;
		break;
	case B_SEND4093:
		a9_desc(d);
		d->payload = pattern;
		d->payload_len = 4093;
		break;
	case B_WRITE:
	case B_WRITE4096:
		fill_desc(d, DR_OP_WRITE_ONLY, 4, false, b == B_WRITE ? 64 : 4096, 1);
		break;
	case B_READ_REQ:
		fill_desc(d, DR_OP_READ_REQ, 4, false, 0, 2);
		break;
	case B_ATOMIC:
		fill_desc(d, DR_OP_CMP_SWAP, 4, false, 0, 3);
		break;
	case B_ACK:
		fill_desc(d, DR_OP_ACK, 4, false, 0, 0);
		break;
	case B_MAD:
		fill_desc(d, DR_OP_UD_SEND_ONLY, 4, false, 256, 4);
		d->dqpn = 1;
		d->deth.sqpn = 1;
		break;
	default:
		ck_abort_msg("base %d", b);
	}
}

static void frame_build(struct frame *f, enum base b)
{
	struct dr_pkt_desc d;
	int n;

	base_desc(b, &d);
	n = dr_pkt_build(&d, f->b, sizeof(f->b));
	ck_assert_int_gt(n, 0);
	f->len = (size_t)n;
	f->ipv = d.ip_version;
	f->l3 = ETH_LEN + (d.vlan ? VLAN_LEN : 0);
	f->l4 = f->l3 + (f->ipv == 4 ? IP4_LEN : IP6_LEN);
	f->bth = f->l4 + UDP_LEN;
}

/* make the IP and UDP length fields describe the frame as it now is */
static void fix_lens(struct frame *f)
{
	if (f->ipv == 4)
		put16(f->b + f->l3 + 2, (uint16_t)(f->len - f->l3));
	else
		put16(f->b + f->l3 + 4, (uint16_t)(f->len - f->l4));
	if (f->len >= f->l4 + UDP_LEN)
		put16(f->b + f->l4 + 4, (uint16_t)(f->len - f->l4));
}

static void fix_csum(struct frame *f)
{
	if (f->ipv == 4)
		put16(f->b + f->l3 + 10, ip4_csum_ref(f->b + f->l3));
}

static void fix_icrc(struct frame *f)
{
	dr_icrc_put(f->b + f->len - ICRC_LEN, icrc_ref(f->b));
}

/* insert n zero bytes just before the ICRC */
static void frame_grow(struct frame *f, size_t n)
{
	uint8_t *icrc = f->b + f->len - ICRC_LEN;

	ck_assert_uint_le(f->len + n, sizeof(f->b));
	memmove(icrc + n, icrc, ICRC_LEN);
	memset(icrc, 0, n);
	f->len += n;
}

static enum dr_pkt_verdict no_icrc_verdict(enum dr_pkt_verdict v)
{
	return v == DR_PKT_BAD_ICRC ? DR_PKT_OK : v;
}

/* parse under both flag settings; the flag turns BAD_ICRC, and only it, into OK */
static void expect_verdict(const uint8_t *b, size_t len, enum dr_pkt_verdict want,
			   const char *ctx)
{
	enum dr_pkt_verdict v = parse_copy(b, len, 0, NULL);

	ck_assert_msg(v == want, "%s: got %s (%d), want %s (%d)", ctx, dr_pkt_verdict_str(v), v,
		      dr_pkt_verdict_str(want), want);
	v = parse_copy(b, len, DR_PARSE_NO_ICRC, NULL);
	ck_assert_msg(v == no_icrc_verdict(want), "%s, NO_ICRC: got %s, want %s", ctx,
		      dr_pkt_verdict_str(v), dr_pkt_verdict_str(no_icrc_verdict(want)));
}

enum at { AT_ETH, AT_IP, AT_UDP, AT_BTH, AT_END };
enum mk {
	M_SET8,	  /* byte := val */
	M_SET16,  /* big-endian 16 bits := val */
	M_ADD16,  /* big-endian 16 bits += val */
	M_XOR8,	  /* byte ^= val */
	M_GROW,	  /* val zero bytes before the ICRC */
	M_TLEN,	  /* cut the transport part (BTH..end) to val bytes */
	M_APPEND, /* val bytes of Ethernet padding after the datagram */
	M_CUT,	  /* the frame ends where at/off point, lengths untouched */
};

#define FX_LENS 1 /* IP and UDP lengths follow the new frame length */
#define FX_CSUM 2 /* recompute the IPv4 header checksum */
#define FX_ICRC 4 /* recompute the ICRC: only the intended fault remains */

struct mal {
	const char *what;
	enum base base;
	enum at at;
	int off;
	enum mk kind;
	int val;
	unsigned fix;
	enum dr_pkt_verdict want;
};

/*
 * One fault per row; want is the verdict naming it (enum dr_pkt_verdict,
 * first fault in wire order).  Provenance: docs/protocol.md A.1-A.5 and
 * A.9 (what is checked and what the ICRC masks), RFC 791 (IPv4 header),
 * RFC 8200 (IPv6), RFC 768 (UDP), IBA 9.2-9.3 (BTH, PadCnt, TVer).
 */
/* one case a line or two, read as a table */
/* clang-format off */
static const struct mal mal_tab[] = {
	/* truncation (every length is swept by test_truncation) */
	{ "empty frame", B_SEND, AT_ETH, 0, M_CUT, 0, 0, DR_PKT_SHORT_ETH },
	{ "cut inside the Ethernet header", B_SEND, AT_ETH, 13, M_CUT, 0, 0, DR_PKT_SHORT_ETH },
	{ "cut inside the 802.1Q tag", B_SEND_VLAN, AT_ETH, 17, M_CUT, 0, 0, DR_PKT_SHORT_ETH },
	{ "Ethernet header only", B_SEND, AT_ETH, 14, M_CUT, 0, 0, DR_PKT_SHORT_IP },
	{ "cut inside the IPv4 header", B_SEND, AT_ETH, 33, M_CUT, 0, 0, DR_PKT_SHORT_IP },
	{ "cut inside the IPv6 header", B_SEND6, AT_ETH, 53, M_CUT, 0, 0, DR_PKT_SHORT_IP },
	{ "tagged, cut inside the IPv4 header", B_SEND_VLAN, AT_ETH, 37, M_CUT, 0, 0,
	  DR_PKT_SHORT_IP },
	{ "IP header whole, datagram cut", B_SEND, AT_ETH, 34, M_CUT, 0, 0, DR_PKT_BAD_IP_LEN },
	{ "last ICRC byte missing", B_SEND, AT_END, -1, M_CUT, 0, 0, DR_PKT_BAD_IP_LEN },

	/* layer 2 */
	{ "ARP ethertype on a RoCE frame", B_SEND, AT_ETH, 12, M_SET16, 0x0806, 0, DR_PKT_NOT_IP },
	{ "LLDP ethertype", B_SEND, AT_ETH, 12, M_SET16, 0x88cc, 0, DR_PKT_NOT_IP },
	{ "ARP inside an 802.1Q tag", B_SEND_VLAN, AT_ETH, 16, M_SET16, 0x0806, 0,
	  DR_PKT_NOT_IP },
	{ "QinQ: a second 802.1Q tag", B_SEND_VLAN, AT_ETH, 16, M_SET16, 0x8100, 0,
	  DR_PKT_NOT_IP },
	{ "IPv6 ethertype, IPv4 header", B_SEND, AT_ETH, 12, M_SET16, 0x86dd, 0,
	  DR_PKT_BAD_IP_VERSION },
	{ "IPv4 ethertype, IPv6 header", B_SEND6, AT_ETH, 12, M_SET16, 0x0800, 0,
	  DR_PKT_BAD_IP_VERSION },
	{ "MAC addresses are not covered", B_SEND, AT_ETH, 0, M_XOR8, 0xff, 0, DR_PKT_OK },
	{ "Ethernet padding after the datagram", B_SEND, AT_END, 0, M_APPEND, 6, 0, DR_PKT_OK },
	{ "Ethernet padding after an IPv6 datagram", B_SEND6, AT_END, 0, M_APPEND, 17, 0,
	  DR_PKT_OK },

	/* IPv4 header */
	{ "IPv4 version 6", B_SEND, AT_IP, 0, M_SET8, 0x65, FX_CSUM, DR_PKT_BAD_IP_VERSION },
	{ "IPv4 version 0", B_SEND, AT_IP, 0, M_SET8, 0x05, FX_CSUM, DR_PKT_BAD_IP_VERSION },
	{ "IHL 6 (options)", B_SEND, AT_IP, 0, M_SET8, 0x46, FX_CSUM, DR_PKT_BAD_IHL },
	{ "IHL 4", B_SEND, AT_IP, 0, M_SET8, 0x44, FX_CSUM, DR_PKT_BAD_IHL },
	{ "IHL 15", B_SEND, AT_IP, 0, M_SET8, 0x4f, FX_CSUM, DR_PKT_BAD_IHL },
	{ "tot_len one past the frame", B_SEND, AT_IP, 2, M_ADD16, 1, FX_CSUM, DR_PKT_BAD_IP_LEN },
	{ "tot_len 0xffff", B_SEND, AT_IP, 2, M_SET16, 0xffff, FX_CSUM, DR_PKT_BAD_IP_LEN },
	{ "tot_len 19, below the header", B_SEND, AT_IP, 2, M_SET16, 19, FX_CSUM,
	  DR_PKT_BAD_IP_LEN },
	{ "tot_len 0", B_SEND, AT_IP, 2, M_SET16, 0, FX_CSUM, DR_PKT_BAD_IP_LEN },
	{ "tot_len 20: no UDP header", B_SEND, AT_IP, 2, M_SET16, 20, FX_CSUM, DR_PKT_SHORT_UDP },
	{ "tot_len 27: 7 bytes of UDP", B_SEND, AT_IP, 2, M_SET16, 27, FX_CSUM,
	  DR_PKT_SHORT_UDP },
	{ "tot_len 4 short, UDP length disagrees", B_SEND, AT_IP, 2, M_ADD16, -4, FX_CSUM,
	  DR_PKT_BAD_UDP_LEN },
	{ "IP checksum, low bit", B_SEND, AT_IP, 11, M_XOR8, 0x01, 0, DR_PKT_BAD_IP_CSUM },
	{ "IP checksum, high bit", B_SEND, AT_IP, 10, M_XOR8, 0x80, 0, DR_PKT_BAD_IP_CSUM },
	{ "IP checksum 0", B_SEND, AT_IP, 10, M_SET16, 0, 0, DR_PKT_BAD_IP_CSUM },
	{ "ID changed, checksum stale", B_SEND, AT_IP, 4, M_XOR8, 0x10, 0, DR_PKT_BAD_IP_CSUM },
	{ "TTL changed, checksum stale", B_SEND, AT_IP, 8, M_SET8, 1, 0, DR_PKT_BAD_IP_CSUM },
	{ "MF", B_SEND, AT_IP, 6, M_SET16, 0x2000, FX_CSUM, DR_PKT_IP_FRAGMENT },
	{ "DF|MF", B_SEND, AT_IP, 6, M_SET16, 0x6000, FX_CSUM, DR_PKT_IP_FRAGMENT },
	{ "fragment offset 1", B_SEND, AT_IP, 6, M_SET16, 0x4001, FX_CSUM, DR_PKT_IP_FRAGMENT },
	{ "fragment offset 0x1fff", B_SEND, AT_IP, 6, M_SET16, 0x1fff, FX_CSUM,
	  DR_PKT_IP_FRAGMENT },
	{ "DF clear is covered by the ICRC", B_SEND, AT_IP, 6, M_SET16, 0, FX_CSUM,
	  DR_PKT_BAD_ICRC },
	{ "DF clear, ICRC recomputed", B_SEND, AT_IP, 6, M_SET16, 0, FX_CSUM | FX_ICRC,
	  DR_PKT_OK },
	{ "protocol TCP", B_SEND, AT_IP, 9, M_SET8, 6, FX_CSUM, DR_PKT_NOT_UDP },
	{ "protocol 0", B_SEND, AT_IP, 9, M_SET8, 0, FX_CSUM, DR_PKT_NOT_UDP },
	{ "source address is covered", B_SEND, AT_IP, 15, M_XOR8, 0x01, FX_CSUM,
	  DR_PKT_BAD_ICRC },
	{ "ID is covered", B_SEND, AT_IP, 4, M_XOR8, 0x10, FX_CSUM, DR_PKT_BAD_ICRC },
	{ "TTL is masked", B_SEND, AT_IP, 8, M_SET8, 1, FX_CSUM, DR_PKT_OK },
	{ "TOS is masked", B_SEND, AT_IP, 1, M_SET8, 0xb8, FX_CSUM, DR_PKT_OK },

	/* IPv6 header */
	{ "IPv6 version 4", B_SEND6, AT_IP, 0, M_SET8, 0x40, 0, DR_PKT_BAD_IP_VERSION },
	{ "IPv6 payload_len one past the frame", B_SEND6, AT_IP, 4, M_ADD16, 1, 0,
	  DR_PKT_BAD_IP_LEN },
	{ "IPv6 payload_len 0xffff", B_SEND6, AT_IP, 4, M_SET16, 0xffff, 0, DR_PKT_BAD_IP_LEN },
	{ "IPv6 payload_len 4 short", B_SEND6, AT_IP, 4, M_ADD16, -4, 0, DR_PKT_BAD_UDP_LEN },
	{ "IPv6 payload_len 0", B_SEND6, AT_IP, 4, M_SET16, 0, 0, DR_PKT_SHORT_UDP },
	{ "IPv6 payload_len 7", B_SEND6, AT_IP, 4, M_SET16, 7, 0, DR_PKT_SHORT_UDP },
	{ "IPv6 next header TCP", B_SEND6, AT_IP, 6, M_SET8, 6, 0, DR_PKT_NOT_UDP },
	{ "IPv6 next header hop-by-hop", B_SEND6, AT_IP, 6, M_SET8, 0, 0, DR_PKT_NOT_UDP },
	{ "IPv6 traffic class is masked", B_SEND6, AT_IP, 0, M_SET8, 0x6f, 0, DR_PKT_OK },
	{ "IPv6 flow label is masked", B_SEND6, AT_IP, 3, M_SET8, 0x55, 0, DR_PKT_OK },
	{ "IPv6 hop limit is masked", B_SEND6, AT_IP, 7, M_SET8, 1, 0, DR_PKT_OK },
	{ "IPv6 destination is covered", B_SEND6, AT_IP, 39, M_XOR8, 0x80, 0, DR_PKT_BAD_ICRC },

	/* UDP */
	{ "UDP dport 4790", B_SEND, AT_UDP, 2, M_SET16, 4790, 0, DR_PKT_NOT_ROCE },
	{ "UDP dport 0", B_SEND, AT_UDP, 2, M_SET16, 0, 0, DR_PKT_NOT_ROCE },
	{ "UDP dport 4791 byte-swapped", B_SEND, AT_UDP, 2, M_SET16, 0xb712, 0, DR_PKT_NOT_ROCE },
	{ "UDP dport 4790 over IPv6", B_SEND6, AT_UDP, 2, M_SET16, 4790, 0, DR_PKT_NOT_ROCE },
	{ "UDP length +1", B_SEND, AT_UDP, 4, M_ADD16, 1, 0, DR_PKT_BAD_UDP_LEN },
	{ "UDP length -1", B_SEND, AT_UDP, 4, M_ADD16, -1, 0, DR_PKT_BAD_UDP_LEN },
	{ "UDP length 0", B_SEND, AT_UDP, 4, M_SET16, 0, 0, DR_PKT_BAD_UDP_LEN },
	{ "UDP length 8", B_SEND, AT_UDP, 4, M_SET16, 8, 0, DR_PKT_BAD_UDP_LEN },
	{ "UDP length 0xffff", B_SEND, AT_UDP, 4, M_SET16, 0xffff, 0, DR_PKT_BAD_UDP_LEN },
	{ "UDP length -4 over IPv6", B_SEND6, AT_UDP, 4, M_ADD16, -4, 0, DR_PKT_BAD_UDP_LEN },
	{ "UDP source port is covered", B_SEND, AT_UDP, 0, M_XOR8, 0x01, 0, DR_PKT_BAD_ICRC },
	{ "UDP source port is not checked", B_SEND, AT_UDP, 0, M_SET16, 1, FX_ICRC, DR_PKT_OK },
	{ "UDP checksum is masked", B_SEND, AT_UDP, 6, M_SET16, 0x1234, 0, DR_PKT_OK },

	/* transport lengths, IP and UDP lengths kept consistent */
	{ "no transport bytes", B_SEND, AT_BTH, 0, M_TLEN, 0, FX_LENS | FX_CSUM,
	  DR_PKT_SHORT_BTH },
	{ "BTH without room for the ICRC", B_SEND, AT_BTH, 0, M_TLEN, 15, FX_LENS | FX_CSUM,
	  DR_PKT_SHORT_BTH },
	{ "BTH only (12 bytes)", B_SEND6, AT_BTH, 0, M_TLEN, 12, FX_LENS, DR_PKT_SHORT_BTH },
	{ "WRITE_ONLY cut inside the RETH", B_WRITE, AT_BTH, 0, M_TLEN, 24, FX_LENS | FX_CSUM,
	  DR_PKT_SHORT_HDRS },
	{ "WRITE_ONLY: RETH without ICRC room", B_WRITE, AT_BTH, 0, M_TLEN, 31,
	  FX_LENS | FX_CSUM, DR_PKT_SHORT_HDRS },
	{ "COMPARE_SWAP cut inside the AtomicETH", B_ATOMIC, AT_BTH, 0, M_TLEN, 40,
	  FX_LENS | FX_CSUM, DR_PKT_SHORT_HDRS },
	{ "UD cut inside the DETH", B_MAD, AT_BTH, 0, M_TLEN, 20, FX_LENS | FX_CSUM,
	  DR_PKT_SHORT_HDRS },

	/* BTH */
	{ "TVer 1", B_SEND, AT_BTH, 1, M_XOR8, 0x01, 0, DR_PKT_BAD_TVER },
	{ "TVer 15", B_SEND, AT_BTH, 1, M_XOR8, 0x0f, 0, DR_PKT_BAD_TVER },
	{ "TVer 8 with a good ICRC", B_SEND, AT_BTH, 1, M_XOR8, 0x08, FX_ICRC, DR_PKT_BAD_TVER },
	{ "TVer 1 on an ACK", B_ACK, AT_BTH, 1, M_XOR8, 0x01, FX_ICRC, DR_PKT_BAD_TVER },
	{ "reserved opcode 0x15", B_SEND, AT_BTH, 0, M_SET8, 0x15, FX_ICRC, DR_PKT_BAD_OPCODE },
	{ "SEND_FIRST without payload", B_SEND0, AT_BTH, 0, M_SET8, DR_OP_SEND_FIRST, FX_ICRC,
	  DR_PKT_RUNT },
	{ "READ_RESPONSE_MIDDLE without payload", B_SEND0, AT_BTH, 0, M_SET8,
	  DR_OP_READ_RSP_MIDDLE, FX_ICRC, DR_PKT_RUNT },
	{ "UC SEND_ONLY 0x24 (no UC)", B_SEND, AT_BTH, 0, M_SET8, 0x24, FX_ICRC,
	  DR_PKT_BAD_OPCODE },
	{ "IB CNP 0x80 (native InfiniBand's, not RoCEv2's)", B_SEND, AT_BTH, 0, M_SET8, 0x80,
	  FX_ICRC, DR_PKT_BAD_OPCODE },
	{ "FECN is masked", B_SEND, AT_BTH, 4, M_SET8, 0x80, 0, DR_PKT_OK },
	{ "BECN is masked", B_SEND, AT_BTH, 4, M_SET8, 0x40, 0, DR_PKT_OK },
	{ "BTH byte 4 all ones is masked", B_ACK, AT_BTH, 4, M_SET8, 0xff, 0, DR_PKT_OK },
	{ "SE is covered", B_SEND, AT_BTH, 1, M_XOR8, 0x80, 0, DR_PKT_BAD_ICRC },
	{ "P_Key is covered", B_SEND, AT_BTH, 2, M_XOR8, 0x80, 0, DR_PKT_BAD_ICRC },
	{ "DestQP is covered", B_SEND, AT_BTH, 7, M_XOR8, 0x01, 0, DR_PKT_BAD_ICRC },
	{ "AckReq is covered", B_SEND, AT_BTH, 8, M_XOR8, 0x80, 0, DR_PKT_BAD_ICRC },
	{ "PSN is covered", B_SEND, AT_BTH, 11, M_XOR8, 0x01, 0, DR_PKT_BAD_ICRC },

	/* PadCnt and payload (IBA 9.2.1: packets are 4-byte multiples) */
	{ "1 stray byte", B_SEND, AT_END, 0, M_GROW, 1, FX_LENS | FX_CSUM, DR_PKT_BAD_PADCNT },
	{ "2 stray bytes", B_SEND, AT_END, 0, M_GROW, 2, FX_LENS | FX_CSUM, DR_PKT_BAD_PADCNT },
	{ "3 stray bytes", B_SEND6, AT_END, 0, M_GROW, 3, FX_LENS, DR_PKT_BAD_PADCNT },
	{ "PadCnt 1, no payload", B_SEND0, AT_BTH, 1, M_XOR8, 0x10, FX_ICRC, DR_PKT_BAD_PADCNT },
	{ "PadCnt 3, no payload", B_SEND0, AT_BTH, 1, M_XOR8, 0x30, FX_ICRC, DR_PKT_BAD_PADCNT },
	{ "PadCnt 2 on an ACK", B_ACK, AT_BTH, 1, M_XOR8, 0x20, FX_ICRC, DR_PKT_BAD_PADCNT },
	{ "PadCnt 0 for a 13-byte payload", B_SEND, AT_BTH, 1, M_SET8, 0x00, 0,
	  DR_PKT_BAD_ICRC },
	{ "PadCnt 0 for 13 bytes, ICRC recomputed (16-byte payload)", B_SEND, AT_BTH, 1, M_SET8,
	  0x00, FX_ICRC, DR_PKT_OK },
	{ "payload on an ACK", B_ACK, AT_END, 0, M_GROW, 4, FX_LENS | FX_CSUM | FX_ICRC,
	  DR_PKT_BAD_PAYLOAD },
	{ "payload on a READ_REQUEST", B_READ_REQ, AT_END, 0, M_GROW, 8, FX_LENS | FX_CSUM,
	  DR_PKT_BAD_PAYLOAD },
	{ "payload on a COMPARE_SWAP", B_ATOMIC, AT_END, 0, M_GROW, 4, FX_LENS | FX_CSUM,
	  DR_PKT_BAD_PAYLOAD },
	{ "4100-byte payload", B_WRITE4096, AT_END, 0, M_GROW, 4, FX_LENS | FX_CSUM | FX_ICRC,
	  DR_PKT_TOO_LONG },
	{ "4097-byte payload (4100 - PadCnt 3)", B_SEND4093, AT_END, 0, M_GROW, 4,
	  FX_LENS | FX_CSUM | FX_ICRC, DR_PKT_TOO_LONG },

	/* the ICRC itself and what it covers past the BTH */
	{ "ICRC low byte", B_SEND, AT_END, -4, M_XOR8, 0x01, 0, DR_PKT_BAD_ICRC },
	{ "ICRC high byte", B_SEND, AT_END, -1, M_XOR8, 0x80, 0, DR_PKT_BAD_ICRC },
	{ "ICRC low half overwritten", B_SEND, AT_END, -4, M_SET16, 0xb677, 0, DR_PKT_BAD_ICRC },
	{ "pad byte is covered", B_SEND, AT_END, -5, M_XOR8, 0x01, 0, DR_PKT_BAD_ICRC },
	{ "payload byte is covered", B_SEND, AT_BTH, 12, M_XOR8, 0x20, 0, DR_PKT_BAD_ICRC },
	{ "RETH is covered", B_WRITE, AT_BTH, 20, M_XOR8, 0x01, 0, DR_PKT_BAD_ICRC },
	{ "DETH Q_Key is covered", B_MAD, AT_BTH, 12, M_XOR8, 0x01, 0, DR_PKT_BAD_ICRC },
	{ "VLAN TCI is not covered", B_SEND_VLAN, AT_ETH, 14, M_SET16, 0xefff, 0, DR_PKT_OK },
};
/* clang-format on */

static uint8_t *mal_at(struct frame *f, const struct mal *m)
{
	switch (m->at) {
	case AT_ETH:
		return f->b + m->off;
	case AT_IP:
		return f->b + f->l3 + m->off;
	case AT_UDP:
		return f->b + f->l4 + m->off;
	case AT_BTH:
		return f->b + f->bth + m->off;
	case AT_END:
		return f->b + f->len + m->off;
	}
	return NULL;
}

static void mal_apply(struct frame *f, const struct mal *m)
{
	uint8_t *p = mal_at(f, m);

	switch (m->kind) {
	case M_SET8:
		*p = (uint8_t)m->val;
		break;
	case M_XOR8:
		*p ^= (uint8_t)m->val;
		break;
	case M_SET16:
		put16(p, (uint16_t)m->val);
		break;
	case M_ADD16:
		put16(p, (uint16_t)(get16(p) + m->val));
		break;
	case M_GROW:
		frame_grow(f, (size_t)m->val);
		break;
	case M_TLEN:
		ck_assert_uint_lt((size_t)m->val, f->len - f->bth);
		f->len = f->bth + (size_t)m->val;
		break;
	case M_APPEND:
		memset(f->b + f->len, 0, (size_t)m->val);
		f->len += (size_t)m->val;
		break;
	case M_CUT:
		ck_assert_uint_lt((size_t)(p - f->b), f->len);
		f->len = (size_t)(p - f->b);
		break;
	}
	if (m->fix & FX_LENS)
		fix_lens(f);
	if (m->fix & FX_CSUM)
		fix_csum(f);
	if (m->fix & FX_ICRC)
		fix_icrc(f);
}

START_TEST(test_malformed_table)
{
	const struct mal *m = &mal_tab[_i];
	struct frame orig, f;
	char ctx[128];

	frame_build(&orig, m->base);
	f = orig;
	mal_apply(&f, m);
	/* a row that changes nothing tests nothing */
	ck_assert_msg(f.len != orig.len || memcmp(f.b, orig.b, f.len),
		      "row \"%s\" changes nothing", m->what);
	snprintf(ctx, sizeof(ctx), "row %d \"%s\"", _i, m->what);
	expect_verdict(f.b, f.len, m->want, ctx);
}
END_TEST

/* Every verdict is named by some row of the table. */
START_TEST(test_malformed_coverage)
{
	bool seen[DR_PKT_VERDICT_NUM] = { false };

	for (size_t i = 0; i < ARRAY_SIZE(mal_tab); i++)
		seen[mal_tab[i].want] = true;
	for (int v = 0; v < DR_PKT_VERDICT_NUM; v++)
		ck_assert_msg(seen[v], "no case for verdict %d (%s)", v, dr_pkt_verdict_str(v));
}
END_TEST

/* every opcode outside the table, with a good ICRC, IPv4 and IPv6 */
START_TEST(test_malformed_opcodes)
{
	unsigned n = 0;

	for (unsigned op = 0; op < 256; op++) {
		for (enum base b = B_SEND; b <= B_SEND6; b++) {
			struct frame f;
			char ctx[128];

			if (in_valid_set(op))
				continue;
			frame_build(&f, b);
			f.b[f.bth] = (uint8_t)op;
			fix_icrc(&f);
			snprintf(ctx, sizeof(ctx), "opcode 0x%02x base %d", op, b);
			expect_verdict(f.b, f.len, DR_PKT_BAD_OPCODE, ctx);
			n++;
		}
	}
	ck_assert_uint_eq(n, 2 * (256 - 26));
}
END_TEST

/* FIRST/MIDDLE/LAST without payload are runts; one byte is enough */
START_TEST(test_malformed_runts)
{
	unsigned n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(op_spec); i++) {
		const struct op_spec *s = &op_spec[i];

		for (uint32_t len = 0; len <= 1; len++) {
			struct dr_pkt_desc d;
			uint8_t *f;
			int fl;

			if (!s->payload)
				continue;
			fill_desc(&d, s->op, 4, false, len, (unsigned)i);
			fl = dr_pkt_frame_len(&d);
			f = malloc((size_t)fl);
			ck_assert_int_eq(dr_pkt_build(&d, f, (size_t)fl), fl);
			if (len == 0 && (s->pos & (P_FIRST | P_MIDDLE | P_LAST))) {
				expect_verdict(f, (size_t)fl, DR_PKT_RUNT, s->name);
				n++;
			} else {
				expect_verdict(f, (size_t)fl, DR_PKT_OK, s->name);
			}
			free(f);
		}
	}
	/* SEND F/M/L, LAST_IMM, WRITE F/M/L, LAST_IMM, READ_RSP F/M/L, LAST_INV */
	ck_assert_uint_eq(n, 12);
}
END_TEST

/* The checks after UDP, in the order of enum dr_pkt_verdict, as a model
 * for frames whose transport part (BTH..end, tlen bytes) was changed. */
static enum dr_pkt_verdict model_transport(const uint8_t *bth, size_t tlen, bool icrc_ok)
{
	const struct op_spec *s;
	size_t body, pad;

	if (tlen < BTH_LEN + ICRC_LEN)
		return DR_PKT_SHORT_BTH;
	if (bth[1] & 0x0f)
		return DR_PKT_BAD_TVER;
	s = spec_of(bth[0]);
	if (!s)
		return DR_PKT_BAD_OPCODE;
	if (tlen < s->hdr_len + ICRC_LEN)
		return DR_PKT_SHORT_HDRS;
	body = tlen - s->hdr_len - ICRC_LEN;
	pad = (bth[1] >> 4) & 3;
	if ((body & 3) || pad > body)
		return DR_PKT_BAD_PADCNT;
	if (!s->payload && body)
		return DR_PKT_BAD_PAYLOAD;
	if (body == pad && (s->pos & (P_FIRST | P_MIDDLE | P_LAST)))
		return DR_PKT_RUNT;
	if (body - pad > DR_MAX_PMTU)
		return DR_PKT_TOO_LONG;
	return icrc_ok ? DR_PKT_OK : DR_PKT_BAD_ICRC;
}

static const enum base trunc_bases[] = { B_SEND, B_WRITE, B_ATOMIC, B_ACK, B_MAD,
					 B_SEND6, B_SEND_VLAN, B_READ_REQ };

/* Cut a valid frame at every length: the layer that runs out names it. */
START_TEST(test_truncation)
{
	struct frame f;
	size_t l2, ipl;

	frame_build(&f, trunc_bases[_i]);
	l2 = f.l3;
	ipl = f.ipv == 4 ? IP4_LEN : IP6_LEN;
	for (size_t len = 0; len < f.len; len++) {
		enum dr_pkt_verdict want;
		char ctx[128];

		if (len < ETH_LEN || len < l2)
			want = DR_PKT_SHORT_ETH; /* 0..13, and 14..17 with a tag */
		else if (len < l2 + ipl)
			want = DR_PKT_SHORT_IP;
		else
			want = DR_PKT_BAD_IP_LEN; /* the IP length runs past the end */
		snprintf(ctx, sizeof(ctx), "base %d cut to %zu of %zu", trunc_bases[_i], len,
			 f.len);
		expect_verdict(f.b, len, want, ctx);
	}
	expect_verdict(f.b, f.len, DR_PKT_OK, "uncut");
}
END_TEST

/* Cut the IP datagram at every length, fixing the IP and UDP lengths and
 * the checksum, so the cut shows at UDP, BTH, headers, PadCnt or ICRC. */
START_TEST(test_truncation_consistent)
{
	struct frame orig, f;
	size_t l4len;

	frame_build(&orig, trunc_bases[_i]);
	l4len = orig.len - orig.l4;
	for (size_t n = 0; n < l4len; n++) {
		enum dr_pkt_verdict want;
		char ctx[128];

		f = orig;
		f.len = f.l4 + n;
		fix_lens(&f);
		fix_csum(&f);
		if (n < UDP_LEN) {
			want = DR_PKT_SHORT_UDP;
		} else {
			size_t tlen = n - UDP_LEN;
			bool ok = tlen >= BTH_LEN + ICRC_LEN &&
				  icrc_ref(f.b) == dr_icrc_get(f.b + f.len - ICRC_LEN);

			want = model_transport(f.b + f.bth, tlen, ok);
		}
		ck_assert_msg(want != DR_PKT_OK, "a cut frame cannot be whole");
		snprintf(ctx, sizeof(ctx), "base %d UDP datagram cut to %zu of %zu",
			 trunc_bases[_i], n, l4len);
		expect_verdict(f.b, f.len, want, ctx);
	}
}
END_TEST

/*
 * The expected verdict for one flipped bit at byte pos of frame f (IPv4
 * header checksum already fixed up when the bit is not in it).  Masked
 * fields (A.9) and the link layer keep the frame valid; every other covered
 * bit is caught, by the first check that looks at it or by the ICRC.
 */
static enum dr_pkt_verdict flip_expect(const struct frame *f, size_t pos, unsigned bit)
{
	const uint8_t *nb = f->b;
	size_t ipl = f->ipv == 4 ? IP4_LEN : IP6_LEN;

	if (pos < 12)
		return DR_PKT_OK; /* MAC addresses */
	if (pos < f->l3) {
		if (f->l3 == ETH_LEN + VLAN_LEN && (pos == 14 || pos == 15))
			return DR_PKT_OK; /* VLAN TCI */
		return DR_PKT_NOT_IP;	  /* an ethertype */
	}
	if (pos < f->l4) {
		size_t r = pos - f->l3, avail = f->len - f->l3;

		if (f->ipv == 4) {
			size_t tot = get16(nb + f->l3 + 2);

			switch (r) {
			case 0:
				return bit >= 4 ? DR_PKT_BAD_IP_VERSION : DR_PKT_BAD_IHL;
			case 1:
			case 8:
				return DR_PKT_OK; /* TOS, TTL: masked */
			case 2:
			case 3:
				if (tot < IP4_LEN || tot > avail)
					return DR_PKT_BAD_IP_LEN;
				return tot - IP4_LEN < UDP_LEN ? DR_PKT_SHORT_UDP
							       : DR_PKT_BAD_UDP_LEN;
			case 6:
				/* reserved bit and DF are covered; MF and offset are fragments */
				return bit >= 6 ? DR_PKT_BAD_ICRC : DR_PKT_IP_FRAGMENT;
			case 7:
				return DR_PKT_IP_FRAGMENT;
			case 9:
				return DR_PKT_NOT_UDP;
			case 10:
			case 11:
				return DR_PKT_BAD_IP_CSUM;
			default:
				return DR_PKT_BAD_ICRC; /* ID, addresses */
			}
		}
		if (r == 0 && bit >= 4)
			return DR_PKT_BAD_IP_VERSION;
		if (r < 4 || r == 7)
			return DR_PKT_OK; /* traffic class, flow label, hop limit */
		if (r == 4 || r == 5) {
			size_t plen = get16(nb + f->l3 + 4);

			if (plen > avail - ipl)
				return DR_PKT_BAD_IP_LEN;
			return plen < UDP_LEN ? DR_PKT_SHORT_UDP : DR_PKT_BAD_UDP_LEN;
		}
		if (r == 6)
			return DR_PKT_NOT_UDP;
		return DR_PKT_BAD_ICRC; /* addresses */
	}
	if (pos < f->bth) {
		switch (pos - f->l4) {
		case 2:
		case 3:
			return DR_PKT_NOT_ROCE;
		case 4:
		case 5:
			return DR_PKT_BAD_UDP_LEN;
		case 6:
		case 7:
			return DR_PKT_OK; /* UDP checksum: masked */
		default:
			return DR_PKT_BAD_ICRC; /* source port */
		}
	}
	if (pos == f->bth || (pos == f->bth + 1 && (bit == 4 || bit == 5)))
		return model_transport(nb + f->bth, f->len - f->bth, false);
	if (pos == f->bth + 1 && bit < 4)
		return DR_PKT_BAD_TVER;
	if (pos == f->bth + 4)
		return DR_PKT_OK; /* FECN, BECN, resv6a: masked */
	return DR_PKT_BAD_ICRC;
}

static const enum base flip_bases[] = { B_SEND, B_SEND6, B_SEND_VLAN, B_WRITE,
					B_ATOMIC, B_ACK, B_MAD, B_SEND0 };

/* One flipped bit anywhere in the frame, each with its exact verdict. */
START_TEST(test_bit_flips)
{
	struct frame orig, f;
	unsigned counts[DR_PKT_VERDICT_NUM] = { 0 };

	frame_build(&orig, flip_bases[_i]);
	for (size_t pos = 0; pos < orig.len; pos++) {
		for (unsigned bit = 0; bit < 8; bit++) {
			enum dr_pkt_verdict want;
			char ctx[128];

			f = orig;
			f.b[pos] ^= (uint8_t)(1u << bit);
			/* keep the IP checksum right unless it is the target */
			if (f.ipv == 4 && pos >= f.l3 + 1 && pos < f.l4 && pos != f.l3 + 10 &&
			    pos != f.l3 + 11)
				fix_csum(&f);
			want = flip_expect(&f, pos, bit);
			snprintf(ctx, sizeof(ctx), "base %d byte %zu bit %u", flip_bases[_i], pos,
				 bit);
			expect_verdict(f.b, f.len, want, ctx);
			counts[want]++;
		}
	}
	/* the whole transport part past the BTH is ICRC-covered */
	ck_assert_uint_ge(counts[DR_PKT_BAD_ICRC], 8 * (orig.len - orig.bth - BTH_LEN));
	ck_assert_uint_gt(counts[DR_PKT_OK], 0);
}
END_TEST

/* DR_PARSE_DEFER_PLACE: which frames it defers, and that the check it
 * leaves to dr_pkt_icrc_finish / dr_pkt_icrc_copy gives the verdict the
 * parser would have, for an intact frame, one bit flipped in the payload,
 * in a covered header field (the PSN) and in the ICRC itself.  The copy is
 * byte-exact over one or three segments and writes nothing past them. */
static const struct {
	uint8_t opcode;
	uint32_t len; /* payload */
	uint8_t ipv;
	bool deferred;
} defer_tab[] = {
    {DR_OP_READ_RSP_ONLY, 4096, 4, true},
    {DR_OP_READ_RSP_FIRST, 4096, 4, true},
    {DR_OP_READ_RSP_MIDDLE, 4096, 4, true},
    {DR_OP_READ_RSP_LAST, 1021, 4, true}, /* pad 3 */
    {DR_OP_READ_RSP_ONLY, 4096, 6, true},
    {DR_OP_READ_RSP_ONLY, DR_ICRC_DEFER_MIN, 4, true},
    {DR_OP_READ_RSP_ONLY, DR_ICRC_DEFER_MIN - 1, 4, false},
    {DR_OP_READ_RSP_ONLY, 8, 4, false},
    {DR_OP_WRITE_MIDDLE, 4096, 4, true},
    {DR_OP_WRITE_LAST, 1021, 4, true}, /* pad 3 */
    {DR_OP_WRITE_LAST_IMM, 4096, 6, true},
    {DR_OP_WRITE_MIDDLE, DR_ICRC_DEFER_MIN - 1, 4, false},
    {DR_OP_WRITE_FIRST, 4096, 4, false}, /* its RETH names the place */
    {DR_OP_WRITE_ONLY, 4096, 4, false},
    {DR_OP_SEND_MIDDLE, 4096, 4, false},
    {DR_OP_SEND_LAST, 4096, 4, false},
    {DR_OP_SEND_ONLY, 4096, 4, false},
};

START_TEST(test_defer_place)
{
	static uint8_t payload[DR_MAX_PMTU], frame[FRAME_MAX], f[FRAME_MAX], dst[DR_MAX_PMTU + 128];
	struct dr_pkt_desc d;
	struct dr_pkt pkt;
	uint32_t len = defer_tab[_i].len;
	size_t psn_at, pay_at;
	int fl;

	rng_seed(5);
	rng_fill(payload, sizeof(payload));
	dr_pkt_desc_init(&d);
	memcpy(d.dst_mac, mac_b, 6);
	memcpy(d.src_mac, mac_a, 6);
	d.ip_version = defer_tab[_i].ipv;
	d.src_ip4 = 0xc0a80101;
	d.dst_ip4 = 0xc0a80102;
	d.src_ip6[0] = d.dst_ip6[0] = 0xfe;
	d.src_ip6[15] = 1;
	d.dst_ip6[15] = 2;
	d.opcode = defer_tab[_i].opcode;
	d.dqpn = 0x11;
	d.psn = 7;
	d.reth.len = len;
	d.payload = payload;
	d.payload_len = len;
	fl = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_gt(fl, 0);
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)fl, DR_PARSE_DEFER_PLACE, &pkt), DR_PKT_OK);
	ck_assert(pkt.icrc_deferred == defer_tab[_i].deferred);
	/* a deferred check reads the carried ICRC when it is finished */
	ck_assert_uint_eq(pkt.icrc, pkt.icrc_deferred ? 0 : dr_icrc_get(frame + fl - DR_ICRC_LEN));
	ck_assert(!pkt.payload_placed);
	ck_assert(dr_pkt_icrc_finish(&pkt));
	psn_at = (size_t)((const uint8_t *)pkt.bth - frame) + 11;
	pay_at = (size_t)(pkt.payload - frame);
	if (!pkt.icrc_deferred) {
		/* checked at once, as without the flag */
		frame[pay_at] ^= 1;
		ck_assert_int_eq(dr_pkt_parse(frame, (size_t)fl, DR_PARSE_DEFER_PLACE, &pkt),
				 DR_PKT_BAD_ICRC);
		return;
	}
	/* intact, then each corruption: the same verdict both ways */
	for (int c = 0; c < 4; c++) {
		size_t at[4] = {0, pay_at + len / 2, psn_at, (size_t)fl - 1};

		memcpy(f, frame, (size_t)fl);
		if (c)
			f[at[c]] ^= 0x10;
		ck_assert_int_eq(dr_pkt_parse(f, (size_t)fl, DR_PARSE_DEFER_PLACE, &pkt),
				 DR_PKT_OK);
		ck_assert(pkt.icrc_deferred);
		ck_assert_int_eq(dr_pkt_parse(f, (size_t)fl, 0, &(struct dr_pkt){0}),
				 c ? DR_PKT_BAD_ICRC : DR_PKT_OK);
		ck_assert(dr_pkt_icrc_finish(&pkt) == !c);
		for (unsigned nseg = 1; nseg <= 3; nseg += 2) {
			/* three segments: 1 byte, 100, the rest, 8 bytes apart */
			struct iovec iov[3];
			size_t off = 8;

			memset(dst, 0xa5, sizeof(dst));
			if (nseg == 1) {
				iov[0].iov_base = dst + off;
				iov[0].iov_len = len;
			} else {
				iov[0].iov_base = dst + off;
				iov[0].iov_len = 1;
				iov[1].iov_base = dst + off + 1 + 8;
				iov[1].iov_len = 100;
				iov[2].iov_base = dst + off + 101 + 16;
				iov[2].iov_len = len - 101;
			}
			ck_assert_msg(dr_pkt_icrc_copy(&pkt, iov, nseg) == !c,
				      "case %d, %u segments", c, nseg);
			for (unsigned k = 0; k < nseg; k++)
				ck_assert(!memcmp(
				    iov[k].iov_base,
				    f + pay_at + ((uint8_t *)iov[k].iov_base - dst - off - 8 * k),
				    iov[k].iov_len));
			for (size_t k = 0, seg = 0; k < sizeof(dst); k++) {
				uint8_t *b = dst + k;
				bool in = false;

				for (seg = 0; seg < nseg; seg++)
					in |= b >= (uint8_t *)iov[seg].iov_base &&
					      b < (uint8_t *)iov[seg].iov_base + iov[seg].iov_len;
				if (!in)
					ck_assert_msg(*b == 0xa5, "byte %zu outside written", k);
			}
		}
	}
}
END_TEST

/* A real ARP request (RFC 826), with and without a tag: not IP. */
START_TEST(test_arp)
{
	uint8_t f[ETH_LEN + VLAN_LEN + 28 + 14];
	struct dr_arp_hdr *arp;
	struct dr_pkt p;
	uint8_t *b;

	for (int vlan = 0; vlan < 2; vlan++) {
		size_t off = ETH_LEN + (vlan ? VLAN_LEN : 0);

		memset(f, 0, sizeof(f));
		memset(f, 0xff, 6);
		memcpy(f + 6, mac_a, 6);
		if (vlan) {
			put16(f + 12, DR_ETH_P_VLAN);
			put16(f + 14, 7);
			put16(f + 16, DR_ETH_P_ARP);
		} else {
			put16(f + 12, DR_ETH_P_ARP);
		}
		arp = (struct dr_arp_hdr *)(f + off);
		arp->htype = htons(1);
		arp->ptype = htons(DR_ETH_P_IPV4);
		arp->hlen = 6;
		arp->plen = 4;
		arp->oper = htons(1);
		memcpy(arp->sha, mac_a, 6);
		arp->spa = htonl(0xc0a80101);
		arp->tpa = htonl(0xc0a80102);
		for (size_t len = off; len <= sizeof(f); len++)
			expect_verdict(f, len, DR_PKT_NOT_IP, vlan ? "tagged ARP" : "ARP");
		b = dup_exact(f, 60 - 18 + off);
		ck_assert_int_eq(dr_pkt_parse(b, 60 - 18 + off, 0, &p), DR_PKT_NOT_IP);
		/* what was parsed before the fault is there */
		ck_assert_ptr_eq(p.eth, (const struct dr_eth_hdr *)b);
		ck_assert_uint_eq(p.ethertype, DR_ETH_P_ARP);
		ck_assert_ptr_eq(p.vlan, vlan ? (const struct dr_vlan_hdr *)(b + ETH_LEN) : NULL);
		free(b);
	}
}
END_TEST

START_TEST(test_verdict_str)
{
	for (int v = 0; v < DR_PKT_VERDICT_NUM; v++) {
		const char *s = dr_pkt_verdict_str(v);

		ck_assert_msg(s != NULL && s[0], "verdict %d has no string", v);
		for (int w = 0; w < v; w++)
			ck_assert_msg(strcmp(s, dr_pkt_verdict_str(w)), "verdicts %d and %d: %s",
				      w, v, s);
	}
	/* out of range: a string, and not one of the real ones */
	for (int v = DR_PKT_VERDICT_NUM; v < DR_PKT_VERDICT_NUM + 3; v++) {
		const char *s = dr_pkt_verdict_str(v);

		ck_assert_msg(s != NULL && s[0], "verdict %d", v);
		for (int w = 0; w < DR_PKT_VERDICT_NUM; w++)
			ck_assert_str_ne(s, dr_pkt_verdict_str(w));
	}
	ck_assert_str_eq(dr_pkt_verdict_str(DR_PKT_OK), "ok");
}
END_TEST

/* ---- the suite ---------------------------------------------------------------- */

static void setup(void)
{
	pattern_init();
}

/* A frame with a non-zero UDP checksum and non-zero pad bytes is accepted
 * (the ICRC masks the first and covers the second) and rebuilds byte for
 * byte: the description carries both (found by the fuzzer). */
START_TEST(test_roundtrip_udp_csum_pad)
{
	static const uint8_t payload[5] = { 1, 2, 3, 4, 5 };
	struct dr_pkt_desc d, back;
	uint8_t frame[128], again[128];
	struct dr_pkt p;
	int n;

	dr_pkt_desc_init(&d);
	d.opcode = DR_OP_SEND_ONLY;
	d.src_ip4 = 0xc0000201;
	d.dst_ip4 = 0xc0000202;
	d.udp_csum = 0x1234;
	d.pad[0] = 0xaa;
	d.pad[1] = 0xbb;
	d.pad[2] = 0xcc;
	d.payload = payload;
	d.payload_len = sizeof(payload); /* PadCnt 3 */
	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(n, 14 + 20 + 8 + 12 + 5 + 3 + 4);
	ck_assert_uint_eq(frame[40], 0x12);
	ck_assert_uint_eq(frame[41], 0x34);
	ck_assert_uint_eq(frame[59], 0xaa);
	ck_assert_uint_eq(frame[61], 0xcc);
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_OK);
	ck_assert_uint_eq(p.padcnt, 3);
	dr_pkt_to_desc(&p, &back);
	ck_assert_uint_eq(back.udp_csum, 0x1234);
	ck_assert_int_eq(dr_pkt_build(&back, again, sizeof(again)), n);
	ck_assert(!memcmp(frame, again, (size_t)n));
	/* the pad is covered by the ICRC, the UDP checksum is not */
	frame[59] ^= 1;
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_BAD_ICRC);
	frame[59] ^= 1;
	frame[41] ^= 1;
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_OK);
}
END_TEST

/* The CNP (RoCEv2 annex A17.9.3) as droce builds it: BTH with BECN, 16
 * reserved bytes, ICRC; the reserved bytes round-trip whatever they hold
 * (covered by the ICRC); any other length is refused.  The ECN field of
 * both IP versions reads back through dr_pkt_ecn. */
START_TEST(test_cnp_frame)
{
	static const uint8_t bth[12] = {0x81, 0x00, 0xff, 0xff, 0x40, 0x00,
					0x00, 0xd2, 0x00, 0x00, 0x00, 0x00};
	struct dr_pkt_desc d, back;
	uint8_t frame[128], again[128];
	struct dr_pkt p;
	int n;

	dr_pkt_desc_init(&d);
	d.opcode = DR_OP_CNP;
	d.src_ip4 = 0xc0000201;
	d.dst_ip4 = 0xc0000202;
	d.bth_rsvd8 = DR_BTH_BECN;
	d.dqpn = 0xd2;
	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(n, 14 + 20 + 8 + 12 + 16 + 4);
	ck_assert(!memcmp(frame + 42, bth, sizeof(bth)));
	for (int i = 54; i < 70; i++)
		ck_assert_uint_eq(frame[i], 0);
	ck_assert_uint_eq(dr_icrc_get(frame + 70), icrc_ref(frame));
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_OK);
	ck_assert_ptr_eq(p.op, dr_opcode(DR_OP_CNP));
	ck_assert(dr_bth_becn(p.bth) && !dr_bth_fecn(p.bth));
	ck_assert_uint_eq(p.dqpn, 0xd2);
	ck_assert_uint_eq(p.payload_len, 0);
	ck_assert_uint_eq(dr_pkt_ecn(&p), DR_ECN_NOT_ECT);

	/* reserved bytes as received: kept, covered */
	d.cnp_rsvd[3] = 0x5a;
	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_uint_eq(frame[57], 0x5a);
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_OK);
	dr_pkt_to_desc(&p, &back);
	ck_assert_int_eq(dr_pkt_build(&back, again, sizeof(again)), n);
	ck_assert(!memcmp(frame, again, (size_t)n));
	frame[57] ^= 1;
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_BAD_ICRC);

	/* ECN: masked by the ICRC, read from either IP version */
	d.tos = 0xb8 | DR_ECN_CE;
	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_OK);
	ck_assert_uint_eq(dr_pkt_ecn(&p), DR_ECN_CE);
	frame[15] = (frame[15] & ~DR_ECN_MASK) | DR_ECN_ECT0;
	frame[24] = frame[25] = 0;
	{
		struct dr_ipv4_hdr *ip = (struct dr_ipv4_hdr *)(frame + 14);

		ip->csum = dr_ipv4_csum(ip);
	}
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_OK);
	ck_assert_uint_eq(dr_pkt_ecn(&p), DR_ECN_ECT0);
	d.ip_version = 6;
	d.tos = DR_ECN_ECT1;
	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_OK);
	ck_assert_uint_eq(dr_pkt_ecn(&p), DR_ECN_ECT1);
	d.tos = DR_ECN_CE;
	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &p), DR_PKT_OK);
	ck_assert_uint_eq(dr_pkt_ecn(&p), DR_ECN_CE);

	/* the builder writes no payload on a CNP */
	d.ip_version = 4;
	d.payload = bth;
	d.payload_len = 4;
	ck_assert_int_eq(dr_pkt_build(&d, frame, sizeof(frame)), -EINVAL);
}
END_TEST

/* A CNP of another length than BTH + 16 + ICRC is refused. */
START_TEST(test_cnp_lengths)
{
	static const struct {
		int delta;
		enum dr_pkt_verdict v;
	} t[] = {
	    {-16, DR_PKT_SHORT_HDRS},
	    {-4, DR_PKT_SHORT_HDRS},
	    {4, DR_PKT_BAD_PAYLOAD},
	    {16, DR_PKT_BAD_PAYLOAD},
	};
	struct dr_pkt_desc d;

	dr_pkt_desc_init(&d);
	d.opcode = DR_OP_CNP;
	d.bth_rsvd8 = DR_BTH_BECN;
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		uint8_t f[160] = {0};
		struct dr_ipv4_hdr *ip = (struct dr_ipv4_hdr *)(f + 14);
		struct dr_udp_hdr *udp = (struct dr_udp_hdr *)(f + 34);
		int n = dr_pkt_build(&d, f, sizeof(f));
		size_t len = (size_t)(n + t[i].delta);

		ip->tot_len = htons((uint16_t)(len - 14));
		ip->csum = 0;
		ip->csum = dr_ipv4_csum(ip);
		udp->len = htons((uint16_t)(len - 34));
		dr_icrc_put(f + len - 4, icrc_ref(f));
		expect_verdict(f, len, t[i].v, "CNP length");
	}
}
END_TEST

/* One test case of the suite, added to s: a timeout in seconds where the
 * default is too short (0 keeps it), the frame buffers' setup where asked. */
static TCase *wire_tcase(Suite *s, const char *name, int timeout, bool fixture)
{
	TCase *tc = tcase_create(name);

	if (timeout)
		tcase_set_timeout(tc, timeout);
	if (fixture)
		tcase_add_unchecked_fixture(tc, setup, NULL);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc;

	tc = wire_tcase(s, "opcode_table", 0, false);
	tcase_add_test(tc, test_opcode_valid_set);
	tcase_add_loop_test(tc, test_opcode_spec, 0, ARRAY_SIZE(op_spec));
	tcase_add_loop_test(tc, test_opcode_offsets, 0, ARRAY_SIZE(op_spec));
	tcase_add_test(tc, test_opcode_offsets_literal);
	tcase_add_test(tc, test_opcode_invalid_entries);
	tcase_add_test(tc, test_opcode_names_distinct);
	tcase_add_test(tc, test_opcode_engine_rules);

	tc = wire_tcase(s, "crc", 120, false);
	tcase_add_test(tc, test_crc_known);
	tcase_add_test(tc, test_crc_select);
	tcase_add_test(tc, test_crc_fold_consts);
	tcase_add_loop_test(tc, test_crc_short_lengths, 0, ARRAY_SIZE(crc_impls));
	tcase_add_loop_test(tc, test_crc_long_lengths, 0, ARRAY_SIZE(crc_impls));
	tcase_add_loop_test(tc, test_crc_continuation, 0, ARRAY_SIZE(crc_impls));
	tcase_add_loop_test(tc, test_crc_copy, 0, ARRAY_SIZE(crc_impls));
	tcase_add_loop_test(tc, test_icrc_frame_copy, 0, ARRAY_SIZE(crc_impls));
	tcase_add_loop_test(tc, test_icrc_frame_guard, 0, ARRAY_SIZE(crc_impls));
	tcase_add_loop_test(tc, test_crc_upper_clean, 0, 2);

	tc = wire_tcase(s, "icrc", 0, false);
	tcase_add_test(tc, test_icrc_vector);
	tcase_add_test(tc, test_icrc_vector_ipv6_rxe);
	tcase_add_test(tc, test_icrc_pieces);
	tcase_add_loop_test(tc, test_icrc_impls, 0, ARRAY_SIZE(crc_impls));
	tcase_add_test(tc, test_icrc_byte_order);

	tc = wire_tcase(s, "roundtrip", 60, true);
	tcase_add_loop_test(tc, test_roundtrip, 0, ARRAY_SIZE(op_spec));
	tcase_add_test(tc, test_roundtrip_psn_qpn_edges);
	tcase_add_test(tc, test_eth_trailer);
	tcase_add_test(tc, test_roundtrip_udp_csum_pad);
	tcase_add_test(tc, test_cnp_frame);
	tcase_add_test(tc, test_cnp_lengths);

	tc = wire_tcase(s, "builder", 0, true);
	tcase_add_test(tc, test_build_refusals);
	tcase_add_test(tc, test_build_enospc);

	tc = wire_tcase(s, "malformed", 60, true);
	tcase_add_loop_test(tc, test_malformed_table, 0, ARRAY_SIZE(mal_tab));
	tcase_add_test(tc, test_malformed_coverage);
	tcase_add_test(tc, test_malformed_opcodes);
	tcase_add_test(tc, test_malformed_runts);
	tcase_add_loop_test(tc, test_defer_place, 0, ARRAY_SIZE(defer_tab));
	tcase_add_test(tc, test_arp);
	tcase_add_test(tc, test_verdict_str);

	tc = wire_tcase(s, "truncation", 60, true);
	tcase_add_loop_test(tc, test_truncation, 0, ARRAY_SIZE(trunc_bases));
	tcase_add_loop_test(tc, test_truncation_consistent, 0, ARRAY_SIZE(trunc_bases));

	tc = wire_tcase(s, "bit_flips", 120, true);
	tcase_add_loop_test(tc, test_bit_flips, 0, ARRAY_SIZE(flip_bases));

	return s;
}

int main(void)
{
	return ck_run(wire_suite(), false);
}
