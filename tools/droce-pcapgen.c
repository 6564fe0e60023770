// SPDX-License-Identifier: BSD-2-Clause
/*
 * droce-pcapgen - write one pcapng holding an example of every opcode the
 * codec supports, built only with dr_pkt_build(), so Wireshark can be asked
 * whether our frames are what we think they are.
 *
 *   droce-pcapgen OUT.pcapng      write the capture (deterministic bytes)
 *   droce-pcapgen --expect        print what tshark must decode, frame by
 *                                 frame (tshark -T fields format, '|'-separated,
 *                                 field names on the first line)
 *   droce-pcapgen --verify FILE.. parse every frame with dr_pkt_parse (ICRC
 *                                 included) and rebuild it; exit 1 on any fault
 *
 * The capture is one plausible conversation on a 256-byte path MTU: an
 * rdma_cm connection set up over QP1 (CM REQ/REP/RTU as UD SEND_ONLY MADs),
 * RC traffic exercising every RC opcode with the PSN wrapping through
 * 0xFFFFFF -> 0, ACKs, an RNR NAK, a PSN-sequence-error NAK and a remote
 * access error NAK, the disconnect (DREQ/DREP), and a UD SEND with
 * immediate between two other hosts.  Payload lengths cover PadCnt 0..3.
 * Addresses are from the documentation ranges (RFC 5737); MACs are locally
 * administered.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_roce.h"
#include "pcapng.h"

#define PMTU 256
#define SNAPLEN 65535
#define MAD_LEN 256
/* 2024-01-01T00:00:00Z, then one frame every 100 us: fixed, so the output is
 * reproducible byte for byte. */
#define TS_BASE_US 1704067200000000ull
#define TS_STEP_US 100

struct host {
	const char *ip;
	uint32_t ip4; /* host order */
	uint8_t mac[6];
	uint16_t ip_id; /* next IPv4 identification */
};

/* RFC 5737 documentation addresses; 02:... = locally administered */
static struct host hosts[] = {
#define A 0 /* active side: rping-like client */
	{ "192.0.2.1", 0xc0000201, { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a }, 0x1000 },
#define B 1 /* passive side */
	{ "192.0.2.2", 0xc0000202, { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b }, 0x2000 },
#define C 2 /* UD sender */
	{ "198.51.100.3", 0xc6336403, { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c }, 0x3000 },
#define D 3 /* UD receiver */
	{ "198.51.100.4", 0xc6336404, { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0d }, 0x4000 },
};

/* Queue pairs.  UDP source ports follow rxe's 0xC000 | (x & 0x3fff) shape
 * with the QPN as x, so each flow is easy to spot. */
#define QP_GSI 1
#define QP_A 0x000123 /* A's RC QP */
#define QP_B 0x000456 /* B's RC QP */
#define QP_C 0x000301 /* C's UD QP */
#define QP_D 0x000402 /* D's UD QP */
#define SPORT(qpn) (0xc000 | ((qpn) & 0x3fff))
#define APP_QKEY 0x11111111u

/* A's send-queue PSN starts 8 before the 24-bit wrap (in the CM REQ). */
#define PSN_A 0xfffff8u
#define PSN_B 0x00b000u
#define PSN_UD 0x00a000u

/* rdma_cm service: TCP port space 0x0106, port 7174 (rping's default) */
#define CM_PORT 7174
#define CM_SERVICE_ID (0x0000000001060000ull | CM_PORT)
#define CM_SRC_PORT 0x9c41 /* A's rdma_cm source port, in the private data */
#define COMM_ID_A 0x6a0c0001u
#define COMM_ID_B 0x5b0c0001u
/* cm.c cm_form_tid: (mad agent hi_tid << 32) | local comm ID; the REP,
 * RTU and DREP echo the TID of the message they answer */
#define CM_TID (0x0000000100000000ull | COMM_ID_A)

/* MAD attribute IDs (IBA 16.7.3, include/rdma/ib_cm.h) */
#define CM_REQ 0x0010
#define CM_REP 0x0013
#define CM_RTU 0x0014
#define CM_DREQ 0x0015
#define CM_DREP 0x0016

/* memory the RC traffic touches on B: two MRs, one 8-byte aligned word */
#define VA_B 0x00007f3a5c000000ull
#define RKEY_B 0x00a1b2c3u
#define VA_B2 0x00007f3a5c002000ull
#define RKEY_B2 0x00d4e5f6u
#define RKEY_BAD 0x0badc0deu

#define RNR_TIMER 0x0e /* RNR NAK timer code 14: 1.92 ms (IBA table 45) */

struct frame {
	uint8_t src, dst; /* index into hosts[] */
	uint16_t sport;
	uint8_t opcode;
	bool se, ackreq;
	uint32_t dqpn, psn;
	uint32_t len;	   /* payload bytes (MADs: 256) */
	uint16_t mad_attr; /* non-zero: the payload is this CM MAD */
	struct {
		uint64_t va;
		uint32_t rkey, len;
	} reth;
	uint8_t syndrome;
	uint32_t msn;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add, cmp;
	} atm;
	uint64_t orig;
	uint32_t imm, ieth;
	uint32_t qkey, sqpn;
	uint8_t rsvd8; /* BTH byte 4: FECN, BECN */
};

/* shorthands for the table */
#define P(n) ((PSN_A + (n)) & DR_PSN_MASK)
#define AB .src = A, .dst = B, .sport = SPORT(QP_A), .dqpn = QP_B
#define BA .src = B, .dst = A, .sport = SPORT(QP_B), .dqpn = QP_A
#define GSI_AB .src = A, .dst = B, .sport = SPORT(QP_GSI), .dqpn = QP_GSI, \
	       .opcode = DR_OP_UD_SEND_ONLY, .ackreq = true, .len = MAD_LEN,   \
	       .qkey = DR_GSI_QKEY, .sqpn = QP_GSI
#define GSI_BA .src = B, .dst = A, .sport = SPORT(QP_GSI), .dqpn = QP_GSI, \
	       .opcode = DR_OP_UD_SEND_ONLY, .ackreq = true, .len = MAD_LEN,   \
	       .qkey = DR_GSI_QKEY, .sqpn = QP_GSI
#define ACK(n, m) BA, .opcode = DR_OP_ACK, .psn = P(n), .syndrome = DR_AETH_ACK_UNLIMITED, \
		.msn = (m)

/* The conversation.  Comments give the message number the responder
 * completes (its MSN, IBA 9.7.5.1.2) and the PadCnt a payload implies. */
/* clang-format off */
static const struct frame frames[] = {
	/* connection setup on QP1: rxe GSI PSNs count from 0 per QP */
	{ GSI_AB, .psn = 0, .mad_attr = CM_REQ },
	{ GSI_BA, .psn = 0, .mad_attr = CM_REP },
	{ GSI_AB, .psn = 1, .mad_attr = CM_RTU },

	/* SEND of 525 bytes: FIRST, MIDDLE, LAST (13 bytes, PadCnt 3); MSN 1 */
	{ AB, .opcode = DR_OP_SEND_FIRST, .psn = P(0), .len = PMTU },
	{ AB, .opcode = DR_OP_SEND_MIDDLE, .psn = P(1), .len = PMTU },
	{ AB, .opcode = DR_OP_SEND_LAST, .psn = P(2), .len = 13, .ackreq = true },
	{ ACK(2, 1) },
	/* SEND with immediate, 258 bytes, solicited (PadCnt 2); MSN 2 */
	{ AB, .opcode = DR_OP_SEND_FIRST, .psn = P(3), .len = PMTU },
	{ AB, .opcode = DR_OP_SEND_LAST_IMM, .psn = P(4), .len = 2, .imm = 0xcafe0001,
	  .se = true },
	/* 17-byte SEND (PadCnt 3), MSN 3; empty SEND with immediate, MSN 4.
	 * SEND_ONLY and SEND_ONLY_INV payloads stay >= 16 bytes: Wireshark
	 * 4.0's RPC-over-RDMA heuristic (packet-rpcrdma.c packet_is_rpcordma)
	 * reads payload offsets 0 and 12 before its length check and marks
	 * anything shorter "Malformed". */
	{ AB, .opcode = DR_OP_SEND_ONLY, .psn = P(5), .len = 17 },
	{ AB, .opcode = DR_OP_SEND_ONLY_IMM, .psn = P(6), .len = 0, .imm = 0xcafe0002,
	  .se = true, .ackreq = true },
	{ ACK(6, 4) }, /* coalesced: covers MSN 2..4 */

	/* WRITE of 599 bytes; the PSN wraps 0xffffff -> 0 mid-message; the
	 * LAST carries 87 bytes (PadCnt 1); MSN 5 */
	{ AB, .opcode = DR_OP_WRITE_FIRST, .psn = P(7), .len = PMTU,
	  .reth = { VA_B, RKEY_B, 599 } },
	{ AB, .opcode = DR_OP_WRITE_MIDDLE, .psn = P(8), .len = PMTU },
	{ AB, .opcode = DR_OP_WRITE_LAST, .psn = P(9), .len = 87, .ackreq = true },
	{ ACK(9, 5) },
	/* WRITE with immediate, 300 bytes (LAST: 44, PadCnt 0); MSN 6 */
	{ AB, .opcode = DR_OP_WRITE_FIRST, .psn = P(10), .len = PMTU,
	  .reth = { VA_B + 0x1000, RKEY_B, 300 } },
	{ AB, .opcode = DR_OP_WRITE_LAST_IMM, .psn = P(11), .len = 44, .imm = 0xcafe0003 },
	/* 3-byte WRITE (PadCnt 1), MSN 7; 8-byte WRITE with immediate, MSN 8 */
	{ AB, .opcode = DR_OP_WRITE_ONLY, .psn = P(12), .len = 3,
	  .reth = { VA_B + 0x2000, RKEY_B, 3 } },
	{ AB, .opcode = DR_OP_WRITE_ONLY_IMM, .psn = P(13), .len = 8, .imm = 0xcafe0004,
	  .ackreq = true, .reth = { VA_B + 0x3000, RKEY_B, 8 } },
	{ ACK(13, 8) },

	/* READ of 600 bytes: one request consumes 3 PSNs (IBA 9.7.4.1.3);
	 * responses FIRST (AETH), MIDDLE (no AETH), LAST (88 bytes); MSN 9 */
	{ AB, .opcode = DR_OP_READ_REQ, .psn = P(14), .ackreq = true,
	  .reth = { VA_B2, RKEY_B2, 600 } },
	{ BA, .opcode = DR_OP_READ_RSP_FIRST, .psn = P(14), .len = PMTU,
	  .syndrome = DR_AETH_ACK_UNLIMITED, .msn = 9 },
	{ BA, .opcode = DR_OP_READ_RSP_MIDDLE, .psn = P(15), .len = PMTU },
	{ BA, .opcode = DR_OP_READ_RSP_LAST, .psn = P(16), .len = 88,
	  .syndrome = DR_AETH_ACK_UNLIMITED, .msn = 9 },
	/* READ of 22 bytes: READ RESPONSE ONLY (PadCnt 2); MSN 10 */
	{ AB, .opcode = DR_OP_READ_REQ, .psn = P(17), .ackreq = true,
	  .reth = { VA_B2 + 0x400, RKEY_B2, 22 } },
	{ BA, .opcode = DR_OP_READ_RSP_ONLY, .psn = P(17), .len = 22,
	  .syndrome = DR_AETH_ACK_UNLIMITED, .msn = 10 },

	/* atomics on one aligned word: CMP_SWAP 0 -> 0x1111111111111111
	 * (matches: original 0), MSN 11; FETCH_ADD +1 (original 41), MSN 12 */
	{ AB, .opcode = DR_OP_CMP_SWAP, .psn = P(18), .ackreq = true,
	  .atm = { VA_B2 + 0x800, RKEY_B2, 0x1111111111111111ull, 0 } },
	{ BA, .opcode = DR_OP_ATOMIC_ACK, .psn = P(18), .syndrome = DR_AETH_ACK_UNLIMITED,
	  .msn = 11, .orig = 0 },
	{ AB, .opcode = DR_OP_FETCH_ADD, .psn = P(19), .ackreq = true,
	  .atm = { VA_B2 + 0x808, RKEY_B2, 1, 0 } },
	{ BA, .opcode = DR_OP_ATOMIC_ACK, .psn = P(19), .syndrome = DR_AETH_ACK_UNLIMITED,
	  .msn = 12, .orig = 41 },

	/* SEND with invalidate, 19 bytes (PadCnt 1): no receive WQE yet, so
	 * an RNR NAK (MSN stays 12); the requester retries the same PSN */
	{ AB, .opcode = DR_OP_SEND_ONLY_INV, .psn = P(20), .len = 19, .ieth = RKEY_B,
	  .ackreq = true },
	{ BA, .opcode = DR_OP_ACK, .psn = P(20), .syndrome = DR_AETH_RNR_NAK | RNR_TIMER,
	  .msn = 12 },
	{ AB, .opcode = DR_OP_SEND_ONLY_INV, .psn = P(20), .len = 19, .ieth = RKEY_B,
	  .ackreq = true },
	{ ACK(20, 13) },
	/* SEND with invalidate, 306 bytes (LAST: 50, PadCnt 2); MSN 14 */
	{ AB, .opcode = DR_OP_SEND_FIRST, .psn = P(21), .len = PMTU },
	{ AB, .opcode = DR_OP_SEND_LAST_INV, .psn = P(22), .len = 50, .ieth = RKEY_B2,
	  .ackreq = true },
	{ ACK(22, 14) },

	/* PSN P(23) lost: the next WRITE draws a PSN sequence error NAK that
	 * names the expected PSN; the resent P(23) uses a bad R_Key and draws
	 * a remote access error NAK (fatal: the QP goes to error) */
	{ AB, .opcode = DR_OP_WRITE_ONLY, .psn = P(24), .len = 4, .ackreq = true,
	  .reth = { VA_B + 0x4000, RKEY_B, 4 } },
	{ BA, .opcode = DR_OP_ACK, .psn = P(23), .syndrome = DR_AETH_NAK_PSN_SEQ, .msn = 14 },
	{ AB, .opcode = DR_OP_WRITE_ONLY, .psn = P(23), .len = 16, .ackreq = true,
	  .reth = { VA_B + 0x5000, RKEY_BAD, 16 } },
	{ BA, .opcode = DR_OP_ACK, .psn = P(23), .syndrome = DR_AETH_NAK_REM_ACCESS,
	  .msn = 14 },

	/* B saw CE on one of A's packets: a CNP to A's QP, BECN set, PSN 0,
	 * 16 reserved bytes (RoCEv2 annex A17.9.3) */
	{ BA, .opcode = DR_OP_CNP, .psn = 0, .rsvd8 = DR_BTH_BECN },

	/* disconnect on QP1 */
	{ GSI_AB, .psn = 2, .mad_attr = CM_DREQ },
	{ GSI_BA, .psn = 1, .mad_attr = CM_DREP },

	/* UD SEND with immediate between two application QPs, 30 bytes
	 * (PadCnt 2) */
	{ .src = C, .dst = D, .sport = SPORT(QP_C), .dqpn = QP_D,
	  .opcode = DR_OP_UD_SEND_ONLY_IMM, .psn = PSN_UD, .len = 30, .imm = 0xcafe0005,
	  .qkey = APP_QKEY, .sqpn = QP_C },
};
/* clang-format on */

#define NFRAMES (sizeof(frames) / sizeof(frames[0]))

/* ---- CM MADs (docs/protocol.md C.2-C.5; IBA 12.6, tables 106-113) ----- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* An IPv4 address as a RoCEv2 GID: ::ffff:a.b.c.d (A.8) */
static void put_gid(uint8_t *p, uint32_t ip4)
{
	memset(p, 0, 10);
	p[10] = p[11] = 0xff;
	put32(p + 12, ip4);
}

/* EUI-64 node GUID from a MAC: flip the U/L bit, insert ff:fe */
static uint64_t guid_of(const uint8_t mac[6])
{
	return (uint64_t)(mac[0] ^ 0x02) << 56 | (uint64_t)mac[1] << 48 |
	       (uint64_t)mac[2] << 40 | 0xfffe000000ull | (uint64_t)mac[3] << 16 |
	       (uint64_t)mac[4] << 8 | mac[5];
}

static void build_mad(uint8_t *mad, uint16_t attr)
{
	uint8_t *body = mad + 24;

	memset(mad, 0, MAD_LEN);
	/* common MAD header: base version 1, class CM, class version 2,
	 * method Send (every CM message) */
	mad[0] = 1;
	mad[1] = 0x07;
	mad[2] = 2;
	mad[3] = 0x03;
	put64(mad + 8, CM_TID);
	put16(mad + 16, attr);

	switch (attr) {
	case CM_REQ:
		put32(body + 0, COMM_ID_A);
		put64(body + 8, CM_SERVICE_ID);
		put64(body + 16, guid_of(hosts[A].mac));
		put32(body + 28, 0);	   /* local Q_Key: 0 for RC */
		put24(body + 32, QP_A);	   /* local QPN */
		body[35] = 1;		   /* responder resources */
		body[39] = 1;		   /* initiator depth */
		body[43] = 20 << 3;	   /* remote CM response timeout; RC; no E2E */
		put24(body + 44, PSN_A);   /* starting PSN */
		body[47] = 20 << 3 | 7;	   /* local CM response timeout; retry count */
		put16(body + 48, DR_DEF_PKEY);
		body[50] = 1 << 4 | 7;	   /* path MTU 256 (IB enum 1); RNR retry 7 */
		body[51] = 15 << 4;	   /* max CM retries */
		put16(body + 52, 0xffff);  /* permissive LIDs (hop limit > 1) */
		put16(body + 54, 0xffff);
		put_gid(body + 56, hosts[A].ip4);
		put_gid(body + 72, hosts[B].ip4);
		body[93] = 64;		   /* primary hop limit */
		body[95] = 19 << 3;	   /* primary local ACK timeout */
		/* private data: rdma_cm header (C.4) */
		body[140] = 0x00;	   /* cma_version */
		body[141] = 4 << 4;	   /* IPv4 */
		put16(body + 142, CM_SRC_PORT);
		put32(body + 144 + 12, hosts[A].ip4);
		put32(body + 160 + 12, hosts[B].ip4);
		break;
	case CM_REP:
		put32(body + 0, COMM_ID_B);
		put32(body + 4, COMM_ID_A);
		put24(body + 12, QP_B);
		put24(body + 20, PSN_B);
		body[24] = 1;		   /* responder resources */
		body[25] = 1;		   /* initiator depth */
		body[26] = 15 << 3;	   /* target ACK delay (rxe: 15) */
		body[27] = 7 << 5;	   /* RNR retry count */
		put64(body + 28, guid_of(hosts[B].mac));
		break;
	case CM_RTU:
		put32(body + 0, COMM_ID_A);
		put32(body + 4, COMM_ID_B);
		break;
	case CM_DREQ:
		put32(body + 0, COMM_ID_A);
		put32(body + 4, COMM_ID_B);
		put24(body + 8, QP_B);	   /* remote QPN */
		break;
	case CM_DREP:
		put32(body + 0, COMM_ID_B);
		put32(body + 4, COMM_ID_A);
		break;
	}
}

/* ---- Building ------------------------------------------------------------ */

static bool has(uint8_t op, enum dr_hdr h)
{
	return dr_opcode(op)->flags & (1u << h);
}

static void fill_payload(const struct frame *fr, unsigned idx, uint8_t *buf)
{
	uint32_t i;

	if (fr->mad_attr) {
		build_mad(buf, fr->mad_attr);
		return;
	}
	/* a recognisable, frame-specific byte ramp */
	for (i = 0; i < fr->len; i++)
		buf[i] = (uint8_t)(idx * 16 + i);
}

static void frame_desc(const struct frame *fr, const uint8_t *payload, struct dr_pkt_desc *d)
{
	struct host *s = &hosts[fr->src], *t = &hosts[fr->dst];

	dr_pkt_desc_init(d);
	memcpy(d->src_mac, s->mac, 6);
	memcpy(d->dst_mac, t->mac, 6);
	d->src_ip4 = s->ip4;
	d->dst_ip4 = t->ip4;
	d->ip_id = s->ip_id++;
	d->sport = fr->sport;
	d->dport = DR_ROCE_UDP_PORT;

	d->opcode = fr->opcode;
	d->bth_rsvd8 = fr->rsvd8;
	d->se = fr->se;
	d->dqpn = fr->dqpn;
	d->ackreq = fr->ackreq;
	d->psn = fr->psn;
	if (has(fr->opcode, DR_HDR_RETH)) {
		d->reth.va = fr->reth.va;
		d->reth.rkey = fr->reth.rkey;
		d->reth.len = fr->reth.len;
	}
	if (has(fr->opcode, DR_HDR_AETH)) {
		d->aeth.syndrome = fr->syndrome;
		d->aeth.msn = fr->msn;
	}
	if (has(fr->opcode, DR_HDR_ATMETH)) {
		d->atmeth.va = fr->atm.va;
		d->atmeth.rkey = fr->atm.rkey;
		d->atmeth.swap_add = fr->atm.swap_add;
		d->atmeth.cmp = fr->atm.cmp;
	}
	if (has(fr->opcode, DR_HDR_ATMACK))
		d->atmack_orig = fr->orig;
	if (has(fr->opcode, DR_HDR_IMMDT))
		d->imm = fr->imm;
	if (has(fr->opcode, DR_HDR_IETH))
		d->ieth_rkey = fr->ieth;
	if (has(fr->opcode, DR_HDR_DETH)) {
		d->deth.qkey = fr->qkey;
		d->deth.sqpn = fr->sqpn;
	}
	d->payload = payload;
	d->payload_len = fr->len;
}

/* The table must hold every opcode the codec knows, and only those. */
static int check_coverage(void)
{
	bool seen[256] = { false };
	unsigned i, bad = 0;

	for (i = 0; i < NFRAMES; i++) {
		if (!dr_opcode_valid(frames[i].opcode)) {
			fprintf(stderr, "frame %u: opcode 0x%02x unknown to the codec\n", i + 1,
				frames[i].opcode);
			bad++;
		}
		seen[frames[i].opcode] = true;
	}
	for (i = 0; i < 256; i++) {
		if (dr_opcode_valid(i) && !seen[i]) {
			fprintf(stderr, "no frame for opcode 0x%02x (%s)\n", i, dr_opcode_name(i));
			bad++;
		}
	}
	return bad ? -1 : 0;
}

/* Parse a frame with the codec and rebuild it: the checks --verify runs on
 * a file and the generator runs on each frame it writes. */
static int verify_frame(const char *where, uint64_t num, const uint8_t *f, size_t len)
{
	static uint8_t re[16384], hdr[256], split[16384];
	uint8_t trailer[7];
	unsigned tlen;
	struct dr_pkt_desc d;
	struct dr_pkt pkt;
	enum dr_pkt_verdict v;
	int n, h;

	v = dr_pkt_parse(f, len, 0, &pkt);
	if (v != DR_PKT_OK) {
		fprintf(stderr, "%s: frame %llu: %s\n", where, (unsigned long long)num,
			dr_pkt_verdict_str(v));
		return -1;
	}
	if (dr_pkt_icrc(&pkt) != pkt.icrc) {
		fprintf(stderr, "%s: frame %llu: dr_pkt_icrc 0x%08x != carried 0x%08x\n", where,
			(unsigned long long)num, dr_pkt_icrc(&pkt), pkt.icrc);
		return -1;
	}
	dr_pkt_to_desc(&pkt, &d);
	n = dr_pkt_build(&d, re, sizeof(re));
	if (n < 0 || (size_t)n != len - pkt.trailer_len || memcmp(re, f, n)) {
		fprintf(stderr, "%s: frame %llu: rebuilt frame differs (%d vs %zu bytes)\n", where,
			(unsigned long long)num, n, len - pkt.trailer_len);
		return -1;
	}
	h = dr_pkt_build_split(&d, hdr, sizeof(hdr), trailer, &tlen);
	if (h < 0 || (size_t)h + d.payload_len + tlen != (size_t)n) {
		fprintf(stderr, "%s: frame %llu: split build: %d + %u + %u bytes != %d\n", where,
			(unsigned long long)num, h, d.payload_len, tlen, n);
		return -1;
	}
	memcpy(split, hdr, h);
	memcpy(split + h, d.payload, d.payload_len);
	memcpy(split + h + d.payload_len, trailer, tlen);
	if (memcmp(split, f, n)) {
		fprintf(stderr, "%s: frame %llu: split build differs\n", where,
			(unsigned long long)num);
		return -1;
	}
	return 0;
}

/* Write to OUT.tmp and rename it over OUT only when every frame built and
 * verified: a failed `make pcaps` leaves the checked-in capture alone. */
static int generate(const char *out)
{
	static uint8_t payload[DR_MAX_PMTU], buf[16384];
	struct dr_pcapng_writer *w;
	struct dr_pkt_desc d;
	char tmp[4096];
	unsigned i;
	int n, ret;

	if (check_coverage() < 0)
		return -1;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", out) >= (int)sizeof(tmp)) {
		fprintf(stderr, "%s: path too long\n", out);
		return -1;
	}
	w = dr_pcapng_writer_open(tmp, SNAPLEN, "droce-pcapgen");
	if (!w) {
		fprintf(stderr, "%s: %s\n", tmp, strerror(errno));
		return -1;
	}
	for (i = 0; i < NFRAMES; i++) {
		fill_payload(&frames[i], i + 1, payload);
		frame_desc(&frames[i], payload, &d);
		n = dr_pkt_build(&d, buf, sizeof(buf));
		if (n < 0) {
			fprintf(stderr, "frame %u: dr_pkt_build: %s\n", i + 1, strerror(-n));
			goto out_remove;
		}
		if (verify_frame("generated", i + 1, buf, n) < 0)
			goto out_remove;
		ret = dr_pcapng_write(w, TS_BASE_US + (uint64_t)i * TS_STEP_US, buf, n);
		if (ret < 0) {
			fprintf(stderr, "%s: %s\n", tmp, strerror(-ret));
			goto out_remove;
		}
	}
	ret = dr_pcapng_writer_close(w);
	w = NULL;
	if (ret < 0) {
		fprintf(stderr, "%s: %s\n", tmp, strerror(-ret));
		goto out_remove;
	}
	if (rename(tmp, out) < 0) {
		fprintf(stderr, "%s: %s\n", out, strerror(errno));
		goto out_remove;
	}
	return 0;

out_remove:
	dr_pcapng_writer_close(w);
	remove(tmp);
	return -1;
}

/* ---- What tshark must show ---------------------------------------------- */

/* The tshark fields compared, in the format tshark 4.0 prints them with
 * -T fields (Wireshark epan/dissectors/packet-infiniband.c; docs/protocol.md
 * section E).  An absent header leaves its fields empty. */
/* clang-format off */
static const char *const expect_fields[] = {
	"frame.number", "frame.len", "ip.src", "ip.dst", "udp.srcport", "udp.dstport",
	"infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.m",
	"infiniband.bth.padcnt", "infiniband.bth.tver", "infiniband.bth.p_key",
	"infiniband.bth.destqp", "infiniband.bth.a", "infiniband.bth.psn",
	/* the first is BTH byte 4 (FECN, BECN), as hex */
	"infiniband.reserved",
	"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
	"infiniband.aeth.syndrome", "infiniband.aeth.msn", "infiniband.atomiceth",
	"infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
	"infiniband.atomicacketh.origremdt", "infiniband.immdt", "infiniband.ieth",
	"infiniband.deth.q_key", "infiniband.deth.srcqp", "infiniband.mad.attributeid",
	/* the CM handshake names the RC QPs and start PSNs the RC frames use */
	"infiniband.cm.req.serviceid.dport", "infiniband.cm.req.localqpn",
	"infiniband.cm.req.startpsn", "infiniband.cm.rep.localqpn", "infiniband.cm.rep.startpsn",
};
/* clang-format on */

static void print_expect(void)
{
	unsigned i, k;

	for (k = 0; k < sizeof(expect_fields) / sizeof(expect_fields[0]); k++)
		printf("%s%s", k ? "|" : "", expect_fields[k]);
	printf("\n");

	for (i = 0; i < NFRAMES; i++) {
		const struct frame *fr = &frames[i];
		uint8_t op = fr->opcode;
		unsigned pad = -fr->len & 3;
		unsigned flen = sizeof(struct dr_eth_hdr) + sizeof(struct dr_ipv4_hdr) +
				sizeof(struct dr_udp_hdr) + dr_opcode(op)->hdr_len + fr->len + pad +
				DR_ICRC_LEN;

		printf("%u|%u|%s|%s|%u|%u|", i + 1, flen, hosts[fr->src].ip, hosts[fr->dst].ip,
		       fr->sport, DR_ROCE_UDP_PORT);
		printf("%u|%d|0|%u|0|%u|0x%06x|%d|%u|%02x|", op, fr->se, pad, DR_DEF_PKEY, fr->dqpn,
		       fr->ackreq, fr->psn, fr->rsvd8);
		/* the dissector shows the AtomicETH VA and R_Key under the RETH
		 * field names */
		if (has(op, DR_HDR_RETH))
			printf("0x%016llx|0x%08x|%u|", (unsigned long long)fr->reth.va,
			       fr->reth.rkey, fr->reth.len);
		else if (has(op, DR_HDR_ATMETH))
			printf("0x%016llx|0x%08x||", (unsigned long long)fr->atm.va, fr->atm.rkey);
		else
			printf("|||");
		if (has(op, DR_HDR_AETH))
			printf("%u|%u|", fr->syndrome, fr->msn);
		else
			printf("||");
		if (has(op, DR_HDR_ATMETH))
			printf("%016llx%08x%016llx%016llx|%llu|%llu|",
			       (unsigned long long)fr->atm.va, fr->atm.rkey,
			       (unsigned long long)fr->atm.swap_add, (unsigned long long)fr->atm.cmp,
			       (unsigned long long)fr->atm.swap_add, (unsigned long long)fr->atm.cmp);
		else
			printf("|||");
		if (has(op, DR_HDR_ATMACK))
			printf("%llu|", (unsigned long long)fr->orig);
		else
			printf("|");
		if (has(op, DR_HDR_IMMDT))
			printf("%08x|", fr->imm);
		else
			printf("|");
		if (has(op, DR_HDR_IETH))
			printf("%08x|", fr->ieth);
		else
			printf("|");
		if (has(op, DR_HDR_DETH))
			printf("0x%016llx|0x%08x|", (unsigned long long)fr->qkey, fr->sqpn);
		else
			printf("||");
		if (fr->mad_attr)
			printf("0x%04x|", fr->mad_attr);
		else
			printf("|");
		if (fr->mad_attr == CM_REQ)
			printf("0x%04x|0x%06x|0x%06x|", CM_PORT, QP_A, PSN_A);
		else
			printf("|||");
		if (fr->mad_attr == CM_REP)
			printf("0x%06x|0x%06x\n", QP_B, PSN_B);
		else
			printf("|\n");
	}
}

/* ---- Verifying a capture ------------------------------------------------- */

static int verify_file(const char *path)
{
	struct dr_pcapng_pkt p;
	struct dr_pcapng *r;
	char err[256];
	unsigned long long ok = 0, bad = 0;
	int ret;

	r = dr_pcapng_open(path, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	while ((ret = dr_pcapng_next(r, &p)) == 1) {
		if (p.linktype != DR_LINKTYPE_ETHERNET || p.caplen != p.origlen ||
		    verify_frame(path, p.number, p.data, p.caplen) < 0) {
			if (p.linktype != DR_LINKTYPE_ETHERNET || p.caplen != p.origlen)
				fprintf(stderr, "%s: frame %llu: link type %u, %u of %u bytes\n",
					path, (unsigned long long)p.number, p.linktype, p.caplen,
					p.origlen);
			bad++;
		} else {
			ok++;
		}
	}
	if (ret < 0)
		fprintf(stderr, "%s\n", dr_pcapng_strerror(r));
	dr_pcapng_close(r);
	printf("%s: %llu frames, %llu parse, verify their ICRC and rebuild byte-exact\n", path,
	       ok + bad, ok);
	return ret < 0 || bad || !ok ? -1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: droce-pcapgen OUT.pcapng\n"
		   "       droce-pcapgen --expect\n"
		   "       droce-pcapgen --verify FILE.pcapng...\n");
}

int main(int argc, char **argv)
{
	int i, ret = 0;

	if (argc == 2 && !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--expect")) {
		if (check_coverage() < 0)
			return 1;
		print_expect();
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "--verify")) {
		for (i = 2; i < argc; i++)
			if (verify_file(argv[i]) < 0)
				ret = 1;
		return ret;
	}
	if (argc != 2 || argv[1][0] == '-') {
		usage(stderr);
		return 2;
	}
	return generate(argv[1]) < 0 ? 1 : 0;
}
