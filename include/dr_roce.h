/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dr_roce.h - the RoCEv2 wire: header images, the opcode table, the ICRC,
 * and the frame builder/parser.
 *
 * Everything declared here is pure: no DPDK, no libfabric, no allocation.
 * Header structs are literal wire images (packed, big-endian fields, no
 * bitfields); sub-byte and 24-bit fields are reached only through the
 * masking accessors below.  Sources: IBA vol. 1 rel. 1.4 ch. 9, RoCEv2
 * annex A17, and docs/protocol.md section A (rdma_rxe).
 */
#ifndef DR_ROCE_H
#define DR_ROCE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <arpa/inet.h>
#include <endian.h>

/* Big-endian scalar types: a reminder of the byte order, nothing more. */
typedef uint16_t dr_be16_t;
typedef uint32_t dr_be32_t;
typedef uint64_t dr_be64_t;

#define DR_PACKED __attribute__((packed))

#define DR_ROCE_UDP_PORT 4791
#define DR_ETH_P_IPV4 0x0800
#define DR_ETH_P_ARP 0x0806
#define DR_ETH_P_VLAN 0x8100
#define DR_ETH_P_IPV6 0x86DD
#define DR_IPPROTO_UDP 17
#define DR_IP_DF 0x4000
#define DR_IP_MF 0x2000
#define DR_IP_OFFMASK 0x1fff
#define DR_DEF_PKEY 0xffff
#define DR_GSI_QKEY 0x80010000u /* Q_Key of QP1 (IBA 13.5.1) */
#define DR_ICRC_LEN 4
#define DR_MAX_PMTU 4096
#define DR_PSN_MASK 0xffffffu
#define DR_QPN_MASK 0xffffffu

/* ---- Layer 2/3/4 ------------------------------------------------------ */

struct dr_eth_hdr {
	uint8_t dst[6];
	uint8_t src[6];
	dr_be16_t type;
} DR_PACKED;

struct dr_vlan_hdr {
	dr_be16_t tci;
	dr_be16_t type; /* encapsulated ethertype */
} DR_PACKED;

struct dr_arp_hdr {
	dr_be16_t htype; /* 1 = Ethernet */
	dr_be16_t ptype; /* 0x0800 */
	uint8_t hlen;	 /* 6 */
	uint8_t plen;	 /* 4 */
	dr_be16_t oper;	 /* 1 request, 2 reply */
	uint8_t sha[6];
	dr_be32_t spa;
	uint8_t tha[6];
	dr_be32_t tpa;
} DR_PACKED;

struct dr_ipv4_hdr {
	uint8_t ver_ihl;
	uint8_t tos;
	dr_be16_t tot_len;
	dr_be16_t id;
	dr_be16_t frag_off; /* flags (DF, MF) | fragment offset */
	uint8_t ttl;
	uint8_t proto;
	dr_be16_t csum;
	dr_be32_t saddr;
	dr_be32_t daddr;
} DR_PACKED;

struct dr_ipv6_hdr {
	dr_be32_t ver_tc_flow; /* version 4 | traffic class 8 | flow 20 */
	dr_be16_t payload_len;
	uint8_t nexthdr;
	uint8_t hop_limit;
	uint8_t saddr[16];
	uint8_t daddr[16];
} DR_PACKED;

struct dr_udp_hdr {
	dr_be16_t sport;
	dr_be16_t dport;
	dr_be16_t len;
	dr_be16_t csum;
} DR_PACKED;

/* ---- IBA transport headers (IBA 9.2, 9.3) ------------------------------ */

/* Base Transport Header.  flags: SE(7) M(6) PadCnt(5:4) TVer(3:0);
 * qpn: FECN(31) BECN(30) resv6a(29:24) DestQP(23:0);
 * apsn: AckReq(31) resv7(30:24) PSN(23:0). */
struct dr_bth {
	uint8_t opcode;
	uint8_t flags;
	dr_be16_t pkey;
	dr_be32_t qpn;
	dr_be32_t apsn;
} DR_PACKED;

struct dr_reth {
	dr_be64_t va;
	dr_be32_t rkey;
	dr_be32_t len;
} DR_PACKED;

/* AETH: Syndrome(31:24) | MSN(23:0) */
struct dr_aeth {
	dr_be32_t smsn;
} DR_PACKED;

struct dr_atmeth {
	dr_be64_t va;
	dr_be32_t rkey;
	dr_be64_t swap_add;
	dr_be64_t cmp;
} DR_PACKED;

struct dr_atmack {
	dr_be64_t orig;
} DR_PACKED;

struct dr_immdt {
	dr_be32_t imm;
} DR_PACKED;

struct dr_ieth {
	dr_be32_t rkey;
} DR_PACKED;

/* DETH: Q_Key | resv8(31:24) SrcQP(23:0) */
struct dr_deth {
	dr_be32_t qkey;
	dr_be32_t sqp;
} DR_PACKED;

_Static_assert(sizeof(struct dr_eth_hdr) == 14, "Ethernet header");
_Static_assert(sizeof(struct dr_vlan_hdr) == 4, "802.1Q tag");
_Static_assert(sizeof(struct dr_arp_hdr) == 28, "ARP (Ethernet/IPv4)");
_Static_assert(sizeof(struct dr_ipv4_hdr) == 20, "IPv4 header");
_Static_assert(sizeof(struct dr_ipv6_hdr) == 40, "IPv6 header");
_Static_assert(sizeof(struct dr_udp_hdr) == 8, "UDP header");
_Static_assert(sizeof(struct dr_bth) == 12, "BTH");
_Static_assert(sizeof(struct dr_reth) == 16, "RETH");
_Static_assert(sizeof(struct dr_aeth) == 4, "AETH");
_Static_assert(sizeof(struct dr_atmeth) == 28, "AtomicETH");
_Static_assert(sizeof(struct dr_atmack) == 8, "AtomicAckETH");
_Static_assert(sizeof(struct dr_immdt) == 4, "ImmDt");
_Static_assert(sizeof(struct dr_ieth) == 4, "IETH");
_Static_assert(sizeof(struct dr_deth) == 8, "DETH");

/* ---- Accessors --------------------------------------------------------- */

#define DR_BTH_SE 0x80
#define DR_BTH_MIG 0x40
#define DR_BTH_PAD_MASK 0x30
#define DR_BTH_PAD_SHIFT 4
#define DR_BTH_TVER_MASK 0x0f
#define DR_BTH_ACKREQ 0x80000000u
#define DR_BTH_RESV7_MASK 0x7f000000u
#define DR_BTH_RSVD8_MASK 0xff000000u /* FECN | BECN | resv6a */
/* FECN and BECN as bits of BTH byte 4 (dr_bth_rsvd8, bth_rsvd8) */
#define DR_BTH_FECN 0x80
#define DR_BTH_BECN 0x40

/* ECN, the low two bits of the IPv4 TOS / IPv6 traffic class (RFC 3168) */
#define DR_ECN_MASK    0x03
#define DR_ECN_NOT_ECT 0x00
#define DR_ECN_ECT1    0x01
#define DR_ECN_ECT0    0x02
#define DR_ECN_CE      0x03

static inline uint8_t dr_bth_opcode(const struct dr_bth *b) { return b->opcode; }
static inline bool dr_bth_se(const struct dr_bth *b) { return b->flags & DR_BTH_SE; }
static inline bool dr_bth_mig(const struct dr_bth *b) { return b->flags & DR_BTH_MIG; }
static inline unsigned dr_bth_padcnt(const struct dr_bth *b)
{
	return (b->flags & DR_BTH_PAD_MASK) >> DR_BTH_PAD_SHIFT;
}
static inline unsigned dr_bth_tver(const struct dr_bth *b) { return b->flags & DR_BTH_TVER_MASK; }
static inline uint16_t dr_bth_pkey(const struct dr_bth *b) { return ntohs(b->pkey); }
/* byte 4: FECN, BECN and resv6a as one raw byte (masked by the ICRC) */
static inline uint8_t dr_bth_rsvd8(const struct dr_bth *b) { return ntohl(b->qpn) >> 24; }
static inline bool dr_bth_fecn(const struct dr_bth *b) { return dr_bth_rsvd8(b) & 0x80; }
static inline bool dr_bth_becn(const struct dr_bth *b) { return dr_bth_rsvd8(b) & 0x40; }
static inline uint32_t dr_bth_qpn(const struct dr_bth *b) { return ntohl(b->qpn) & DR_QPN_MASK; }
static inline bool dr_bth_ackreq(const struct dr_bth *b) { return ntohl(b->apsn) & DR_BTH_ACKREQ; }
static inline uint8_t dr_bth_resv7(const struct dr_bth *b)
{
	return (ntohl(b->apsn) & DR_BTH_RESV7_MASK) >> 24;
}
static inline uint32_t dr_bth_psn(const struct dr_bth *b) { return ntohl(b->apsn) & DR_PSN_MASK; }

static inline void dr_bth_set_opcode(struct dr_bth *b, uint8_t op) { b->opcode = op; }
static inline void dr_bth_set_flags(struct dr_bth *b, bool se, bool mig, unsigned padcnt,
				    unsigned tver)
{
	b->flags = (se ? DR_BTH_SE : 0) | (mig ? DR_BTH_MIG : 0) |
		   ((padcnt << DR_BTH_PAD_SHIFT) & DR_BTH_PAD_MASK) | (tver & DR_BTH_TVER_MASK);
}
static inline void dr_bth_set_pkey(struct dr_bth *b, uint16_t pkey) { b->pkey = htons(pkey); }
static inline void dr_bth_set_qpn(struct dr_bth *b, uint8_t rsvd8, uint32_t qpn)
{
	b->qpn = htonl(((uint32_t)rsvd8 << 24) | (qpn & DR_QPN_MASK));
}
static inline void dr_bth_set_psn(struct dr_bth *b, bool ackreq, uint8_t resv7, uint32_t psn)
{
	b->apsn = htonl((ackreq ? DR_BTH_ACKREQ : 0) | (((uint32_t)resv7 << 24) & DR_BTH_RESV7_MASK) |
			(psn & DR_PSN_MASK));
}

/* AETH syndromes (IBA 9.7.5.1, table 43) */
#define DR_AETH_TYPE_MASK 0xe0
#define DR_AETH_ACK 0x00
#define DR_AETH_RNR_NAK 0x20
#define DR_AETH_NAK 0x60
#define DR_AETH_ACK_UNLIMITED 0x1f /* credit count "invalid": what rxe sends */
#define DR_AETH_NAK_PSN_SEQ 0x60
#define DR_AETH_NAK_INV_REQ 0x61
#define DR_AETH_NAK_REM_ACCESS 0x62
#define DR_AETH_NAK_REM_OP 0x63
#define DR_AETH_NAK_INV_RD_REQ 0x64

static inline uint8_t dr_aeth_syndrome(const struct dr_aeth *a) { return ntohl(a->smsn) >> 24; }
static inline uint32_t dr_aeth_msn(const struct dr_aeth *a) { return ntohl(a->smsn) & 0xffffff; }
static inline void dr_aeth_set(struct dr_aeth *a, uint8_t syndrome, uint32_t msn)
{
	a->smsn = htonl(((uint32_t)syndrome << 24) | (msn & 0xffffff));
}

static inline uint32_t dr_deth_qkey(const struct dr_deth *d) { return ntohl(d->qkey); }
static inline uint32_t dr_deth_sqp(const struct dr_deth *d) { return ntohl(d->sqp) & DR_QPN_MASK; }
static inline uint8_t dr_deth_resv8(const struct dr_deth *d) { return ntohl(d->sqp) >> 24; }
static inline void dr_deth_set(struct dr_deth *d, uint32_t qkey, uint8_t resv8, uint32_t sqp)
{
	d->qkey = htonl(qkey);
	d->sqp = htonl(((uint32_t)resv8 << 24) | (sqp & DR_QPN_MASK));
}

static inline unsigned dr_ipv4_ihl(const struct dr_ipv4_hdr *ip) { return ip->ver_ihl & 0x0f; }
static inline unsigned dr_ipv4_version(const struct dr_ipv4_hdr *ip) { return ip->ver_ihl >> 4; }
static inline unsigned dr_ipv6_version(const struct dr_ipv6_hdr *ip)
{
	return ntohl(ip->ver_tc_flow) >> 28;
}
static inline uint8_t dr_ipv6_tclass(const struct dr_ipv6_hdr *ip)
{
	return (ntohl(ip->ver_tc_flow) >> 20) & 0xff;
}
static inline uint32_t dr_ipv6_flow(const struct dr_ipv6_hdr *ip)
{
	return ntohl(ip->ver_tc_flow) & 0xfffff;
}

/* ---- PSN arithmetic (24-bit serial numbers, IBA 9.7.1) ----------------- */

static inline uint32_t dr_psn_add(uint32_t psn, int32_t n) { return (psn + (uint32_t)n) & DR_PSN_MASK; }

/* Signed distance a - b in the 24-bit circle: > 0 when a is after b. */
static inline int32_t dr_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* ---- The opcode table --------------------------------------------------- */

/* Extension headers in the order they follow the BTH (IBA 9.2 fig. 36). */
enum dr_hdr {
	DR_HDR_DETH,
	DR_HDR_RETH,
	DR_HDR_ATMETH,
	DR_HDR_AETH,
	DR_HDR_ATMACK,
	DR_HDR_IMMDT,
	DR_HDR_IETH,
	DR_HDR_NUM
};

/* What the receiver of a request owes the sender: the responder answers
 * by this column (resp.c). */
enum dr_op_ack {
	DR_ACK_NONE,	 /* a response, or unreliable: nothing is owed */
	DR_ACK_IF_REQ,	 /* SEND/WRITE: ACKNOWLEDGE when AckReq is set */
	DR_ACK_READ_RSP, /* READ REQUEST: READ RESPONSE packets */
	DR_ACK_ATOMIC,	 /* FETCH_ADD/CMP_SWAP: ATOMIC ACKNOWLEDGE */
};

/*
 * What an opcode is, one fact per flag; the engines (src/qp) decide by
 * these flags, never by comparing opcodes, and test_wire checks every
 * entry against the spec and test_qp the engines' decisions against them.
 */
enum dr_opf {
	/* the packet carries this extension header after the BTH */
	DR_OPF_DETH = 1u << DR_HDR_DETH,
	DR_OPF_RETH = 1u << DR_HDR_RETH,
	DR_OPF_ATMETH = 1u << DR_HDR_ATMETH,
	DR_OPF_AETH = 1u << DR_HDR_AETH,
	DR_OPF_ATMACK = 1u << DR_HDR_ATMACK,
	DR_OPF_IMMDT = 1u << DR_HDR_IMMDT,
	DR_OPF_IETH = 1u << DR_HDR_IETH,
	DR_OPF_HDRS = (1u << DR_HDR_NUM) - 1,
	/* an opcode droce knows (a table entry); the parser refuses others */
	DR_OPF_VALID = 1u << 8,
	/* may carry payload bytes; the parser refuses payload on the others */
	DR_OPF_PAYLOAD = 1u << 9,
	/* where the packet sits in its message: exactly one of the four.
	 * Packets that are a message of their own (READ request, atomics,
	 * acknowledgements, UD) are ONLY */
	DR_OPF_FIRST = 1u << 10,
	DR_OPF_MIDDLE = 1u << 11,
	DR_OPF_LAST = 1u << 12,
	DR_OPF_ONLY = 1u << 13,
	/* RC, sent by a requester: the receiving QP's responder takes it */
	DR_OPF_REQ = 1u << 14,
	/* RC, sent by a responder: the receiving QP's completer takes it */
	DR_OPF_RSP = 1u << 15,
	/* the operation the packet belongs to, requests and responses alike:
	 * SEND (RC or UD, with immediate or invalidate or not); RDMA WRITE
	 * (with immediate or not); RDMA READ (request and responses); atomic
	 * (FETCH_ADD, CMP_SWAP and the ATOMIC ACKNOWLEDGE) */
	DR_OPF_SEND = 1u << 16,
	DR_OPF_WRITE = 1u << 17,
	DR_OPF_READ = 1u << 18,
	DR_OPF_ATOMIC = 1u << 19,
	/* a response that acknowledges by its AETH: ACKNOWLEDGE, ATOMIC
	 * ACKNOWLEDGE (READ responses acknowledge by their PSN) */
	DR_OPF_ACK = 1u << 20,
	/* the responder takes a receive WQE at this packet, and answers RNR
	 * if none is posted: the first packet of a SEND (FIRST, ONLY) and
	 * the packet of a WRITE with immediate that carries the ImmDt (IBA
	 * 9.4.3, 9.7.4; rxe RXE_RWR_MASK) */
	DR_OPF_RWQE = 1u << 21,
	/* the packet completes a receive at the responder: the last packet
	 * of a SEND (LAST, ONLY) and the ImmDt packet of a WRITE with
	 * immediate (rxe RXE_COMP_MASK); the only packets whose BTH SE means
	 * something (A.4) */
	DR_OPF_RECV_DONE = 1u << 22,
	/* unreliable datagram (DETH), QP1's MADs: no RC QP takes it */
	DR_OPF_UD = 1u << 23,
	/* a congestion notification (RoCEv2 annex A17.9.3): transport bits
	 * 100, DR_CNP_RSVD_LEN reserved bytes after the BTH (counted in
	 * hdr_len, no payload); to the sender of the CE-marked packet's QP,
	 * whose congestion control takes it (cc.c) */
	DR_OPF_CNP = 1u << 24,
	DR_OPF_END = DR_OPF_LAST | DR_OPF_ONLY,
};

struct dr_opcode_info {
	const char *name;  /* NULL for an opcode droce does not know */
	uint32_t flags;	   /* enum dr_opf */
	uint8_t ack;	   /* enum dr_op_ack */
	uint8_t hdr_len;   /* BTH + extension headers = payload offset from BTH */
	uint8_t off[DR_HDR_NUM]; /* offset of each header from BTH, 0 if absent */
};

extern const struct dr_opcode_info dr_opcode_tab[256];

static inline const struct dr_opcode_info *dr_opcode(uint8_t op)
{
	return &dr_opcode_tab[op];
}

/* RC opcodes (IBA table 38) and the two UD ones droce speaks (QP1 MADs). */
enum dr_opcode {
	DR_OP_SEND_FIRST = 0x00,
	DR_OP_SEND_MIDDLE = 0x01,
	DR_OP_SEND_LAST = 0x02,
	DR_OP_SEND_LAST_IMM = 0x03,
	DR_OP_SEND_ONLY = 0x04,
	DR_OP_SEND_ONLY_IMM = 0x05,
	DR_OP_WRITE_FIRST = 0x06,
	DR_OP_WRITE_MIDDLE = 0x07,
	DR_OP_WRITE_LAST = 0x08,
	DR_OP_WRITE_LAST_IMM = 0x09,
	DR_OP_WRITE_ONLY = 0x0a,
	DR_OP_WRITE_ONLY_IMM = 0x0b,
	DR_OP_READ_REQ = 0x0c,
	DR_OP_READ_RSP_FIRST = 0x0d,
	DR_OP_READ_RSP_MIDDLE = 0x0e,
	DR_OP_READ_RSP_LAST = 0x0f,
	DR_OP_READ_RSP_ONLY = 0x10,
	DR_OP_ACK = 0x11,
	DR_OP_ATOMIC_ACK = 0x12,
	DR_OP_CMP_SWAP = 0x13,
	DR_OP_FETCH_ADD = 0x14,
	DR_OP_SEND_LAST_INV = 0x16,
	DR_OP_SEND_ONLY_INV = 0x17,
	DR_OP_UD_SEND_ONLY = 0x64,
	DR_OP_UD_SEND_ONLY_IMM = 0x65,
	DR_OP_CNP = 0x81, /* RoCEv2 congestion notification (annex A17.9.3) */
};

/* A CNP's body: 16 reserved bytes, sent as zero, between BTH and ICRC. */
#define DR_CNP_RSVD_LEN 16

static inline bool dr_opcode_valid(uint8_t op) { return dr_opcode_tab[op].flags & DR_OPF_VALID; }
static inline const char *dr_opcode_name(uint8_t op)
{
	return dr_opcode_tab[op].name ? dr_opcode_tab[op].name : "UNKNOWN";
}

/* ---- CRC-32 and the ICRC (docs/protocol.md A.9) -------------------------- */

/* zlib-compatible CRC-32 (reflected 0x04C11DB7): dr_crc32(0, p, n) is the
 * CRC of p; dr_crc32(dr_crc32(0, a, n), b, m) the CRC of a||b. */
uint32_t dr_crc32(uint32_t crc, const void *buf, size_t len);
/* dr_crc32(crc, src, len), copying src to dst in the same pass (one read of
 * each byte where memcpy then dr_crc32 make two).  dst and src must not
 * overlap. */
uint32_t dr_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len);
/* The portable slice-by-8 path, exported for tests and the benchmark. */
uint32_t dr_crc32_sb8(uint32_t crc, const void *buf, size_t len);
/* Which implementation dr_crc32 uses: "vpclmul" (AVX-512 VPCLMULQDQ from
 * 256 bytes, 128-bit PCLMULQDQ below), "vpclmul256" (VPCLMULQDQ on AVX2
 * registers from 128 bytes, without AVX-512), "pclmul" or "slice-by-8". */
const char *dr_crc32_impl(void);
/* Make dr_crc32 use impl (one of those names; NULL: the best this CPU has),
 * for tests and benchmarks; not thread-safe.  0, -ENOTSUP if the CPU lacks
 * it, -EINVAL for an unknown name. */
int dr_crc32_select(const char *impl);

/* CRC-32 state after the 8 bytes of 0xFF that stand for the masked LRH. */
#define DR_ICRC_SEED 0x2144df1cu

/* Start an ICRC over the transport headers of a frame: l3 points to the IPv4
 * or IPv6 header, which is followed contiguously by UDP, BTH and the
 * extension headers, hdr_len bytes in all from l3.  Continue with
 * dr_icrc_update() over payload and pad, in as many pieces as needed; the
 * running value is the ICRC.  Returns 0 with *state set, -1 if l3 is not an
 * IPv4/IPv6 header or hdr_len is too short. */
int dr_icrc_start(const void *l3, size_t hdr_len, uint32_t *state);
/* The whole ICRC of headers (as for dr_icrc_start), payload and pad in one
 * call: a short frame is gathered, masked, into one buffer and checked in a
 * single pass.  Returns 0 with *icrc set, or -1 as dr_icrc_start. */
int dr_icrc_frame(const void *l3, size_t hdr_len, const void *payload, size_t payload_len,
		  const void *pad, size_t pad_len, uint32_t *icrc);
/* dr_icrc_frame, copying the payload to dst (not overlapping it) in the
 * same pass: with AVX-512 and headers of up to 56 bytes, one pass over
 * headers and payload together. */
int dr_icrc_frame_copy(const void *l3, size_t hdr_len, const void *payload, size_t payload_len,
		       const void *pad, size_t pad_len, void *dst, uint32_t *icrc);
static inline uint32_t dr_icrc_update(uint32_t state, const void *p, size_t n)
{
	return dr_crc32(state, p, n);
}
/* The ICRC is stored least-significant byte first (like the Ethernet FCS). */
static inline void dr_icrc_put(void *dst, uint32_t icrc)
{
	uint8_t *d = dst;

	d[0] = icrc;
	d[1] = icrc >> 8;
	d[2] = icrc >> 16;
	d[3] = icrc >> 24;
}
static inline uint32_t dr_icrc_get(const void *src)
{
	const uint8_t *s = src;

	return s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
}

/* Internet checksum of an IPv4 header (RFC 791/1071), ready to store. */
uint16_t dr_ipv4_csum(const struct dr_ipv4_hdr *ip);

/* ---- Frame description, builder and parser ------------------------------ */

/* Room for the headers of any frame the builder writes: Ethernet, 802.1Q,
 * IPv6, UDP, BTH and the longest extension headers (test_wire checks every
 * opcode against it). */
#define DR_PKT_HDR_CAP 160

/* Everything needed to build one RoCEv2 frame.  Multi-byte values are in
 * host order; the builder converts.  Start from dr_pkt_desc_init(). */
struct dr_pkt_desc {
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	bool vlan;
	uint16_t vlan_tci;

	uint8_t ip_version; /* 4 or 6 */
	uint32_t src_ip4, dst_ip4;
	uint8_t src_ip6[16], dst_ip6[16];
	uint8_t tos;	     /* IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;	     /* IPv4 TTL / IPv6 hop limit */
	uint16_t ip_id;	     /* IPv4 identification */
	uint16_t ip_frag;    /* IPv4 flags|offset; default DF */
	uint32_t flow_label; /* IPv6 */

	uint16_t sport, dport;
	uint16_t udp_csum; /* 0, as RoCEv2 senders write it (A.3) */

	uint8_t opcode;
	bool se, mig;
	uint16_t pkey;
	uint8_t bth_rsvd8; /* FECN, BECN, resv6a */
	uint32_t dqpn;
	bool ackreq;
	uint8_t bth_resv7;
	uint32_t psn;

	struct {
		uint64_t va;
		uint32_t rkey, len;
	} reth;
	struct {
		uint8_t syndrome;
		uint32_t msn;
	} aeth;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add, cmp;
	} atmeth;
	uint64_t atmack_orig;
	uint32_t imm;
	uint32_t ieth_rkey;
	struct {
		uint32_t qkey;
		uint8_t resv8;
		uint32_t sqpn;
	} deth;

	const void *payload;
	uint32_t payload_len;
	uint8_t pad[3]; /* the pad bytes' values: zero as sent (IBA 9.2) */
	uint8_t cnp_rsvd[DR_CNP_RSVD_LEN]; /* a CNP's reserved bytes: zero as sent */
};

/* Defaults: IPv4, TTL 64, DF, UDP 0xC000 -> 4791, P_Key 0xFFFF, TVer 0. */
void dr_pkt_desc_init(struct dr_pkt_desc *d);

/* Bytes from the Ethernet header to the end of the extension headers. */
int dr_pkt_hdr_len(const struct dr_pkt_desc *d);
/* Bytes of the whole frame (headers, payload, pad, ICRC). */
int dr_pkt_frame_len(const struct dr_pkt_desc *d);

/* Build a whole frame into buf.  Returns its length, or -EINVAL (unknown
 * opcode, payload on an opcode without one, payload over 4096 bytes, bad IP
 * version) or -ENOSPC (cap too small). */
int dr_pkt_build(const struct dr_pkt_desc *d, void *buf, size_t cap);

/* Build the headers only, for a payload that stays in its own buffer
 * (d->payload): writes the headers into hdr and the pad bytes plus the ICRC
 * into trailer (*trailer_len = pad + 4).  The frame on the wire is
 * hdr || payload || trailer.  Returns the header length or -errno. */
int dr_pkt_build_split(const struct dr_pkt_desc *d, void *hdr, size_t cap, uint8_t trailer[7],
		       unsigned *trailer_len);

/* Why a frame was refused: the first thing found wrong, in wire order. */
enum dr_pkt_verdict {
	DR_PKT_OK,
	DR_PKT_SHORT_ETH,	/* shorter than the Ethernet (+VLAN) header */
	DR_PKT_NOT_IP,		/* ethertype is neither IPv4 nor IPv6 (ARP, ...) */
	DR_PKT_SHORT_IP,	/* shorter than the IP header */
	DR_PKT_BAD_IP_VERSION,	/* version field disagrees with the ethertype */
	DR_PKT_BAD_IHL,		/* IPv4 header length is not 5 (options) */
	DR_PKT_BAD_IP_LEN,	/* IP length below its header or past the frame */
	DR_PKT_BAD_IP_CSUM,	/* IPv4 header checksum */
	DR_PKT_IP_FRAGMENT,	/* MF set or fragment offset != 0 */
	DR_PKT_NOT_UDP,		/* IP protocol / next header is not UDP */
	DR_PKT_SHORT_UDP,	/* no room for the UDP header */
	DR_PKT_BAD_UDP_LEN,	/* UDP length disagrees with the IP length */
	DR_PKT_NOT_ROCE,	/* UDP destination port is not 4791 */
	DR_PKT_SHORT_BTH,	/* no room for BTH and ICRC */
	DR_PKT_BAD_TVER,	/* BTH transport version != 0 */
	DR_PKT_BAD_OPCODE,	/* opcode droce does not know */
	DR_PKT_SHORT_HDRS,	/* extension headers run past the packet */
	DR_PKT_BAD_PADCNT,	/* length not a multiple of 4, or PadCnt > it */
	DR_PKT_BAD_PAYLOAD,	/* payload on an opcode that carries none */
	DR_PKT_RUNT,		/* FIRST/MIDDLE/LAST packet without payload */
	DR_PKT_TOO_LONG,	/* payload over the largest path MTU */
	DR_PKT_BAD_ICRC,	/* invariant CRC mismatch */
	DR_PKT_VERDICT_NUM
};

const char *dr_pkt_verdict_str(enum dr_pkt_verdict v);

/* A parsed frame: pointers into the caller's buffer, valid while it is. */
struct dr_pkt {
	const uint8_t *frame;
	size_t frame_len;
	size_t trailer_len; /* bytes after the IP datagram (Ethernet padding) */
	uint16_t ethertype; /* inner type, after any VLAN tag */

	const struct dr_eth_hdr *eth;
	const struct dr_vlan_hdr *vlan;
	const struct dr_ipv4_hdr *ip4;
	const struct dr_ipv6_hdr *ip6;
	const struct dr_udp_hdr *udp;
	const struct dr_bth *bth;
	const void *hdr[DR_HDR_NUM]; /* extension headers, NULL if absent */
	const struct dr_opcode_info *op;

	uint8_t opcode;
	uint32_t psn;
	uint32_t dqpn;
	bool ackreq;
	const uint8_t *payload;
	uint32_t payload_len;
	unsigned padcnt;
	uint32_t icrc; /* as carried by the frame; 0 while icrc_deferred */
	/* DR_PARSE_DEFER_PLACE: the ICRC is not checked yet
	 * (dr_pkt_icrc_finish, dr_pkt_icrc_copy) */
	bool icrc_deferred;
	/* set by the port (dr_port_set_place): the payload was copied where
	 * the receiver asked, and the ICRC checked while copying */
	bool payload_placed;
};

#define dr_pkt_reth(p) ((const struct dr_reth *)(p)->hdr[DR_HDR_RETH])
#define dr_pkt_aeth(p) ((const struct dr_aeth *)(p)->hdr[DR_HDR_AETH])
#define dr_pkt_atmeth(p) ((const struct dr_atmeth *)(p)->hdr[DR_HDR_ATMETH])
#define dr_pkt_atmack(p) ((const struct dr_atmack *)(p)->hdr[DR_HDR_ATMACK])
#define dr_pkt_immdt(p) ((const struct dr_immdt *)(p)->hdr[DR_HDR_IMMDT])
#define dr_pkt_ieth(p) ((const struct dr_ieth *)(p)->hdr[DR_HDR_IETH])
#define dr_pkt_deth(p) ((const struct dr_deth *)(p)->hdr[DR_HDR_DETH])

/* The ECN field of a parsed frame's IP header (DR_ECN_*). */
static inline unsigned dr_pkt_ecn(const struct dr_pkt *p)
{
	if (p->ip4)
		return p->ip4->tos & DR_ECN_MASK;
	return p->ip6 ? dr_ipv6_tclass(p->ip6) & DR_ECN_MASK : DR_ECN_NOT_ECT;
}

enum dr_parse_flags {
	DR_PARSE_NO_ICRC = 1u << 0, /* skip the ICRC check (caller does it) */
	/* A frame whose payload can be placed before its ICRC is known
	 * (dr_icrc_placeable) with DR_ICRC_DEFER_MIN payload bytes or more:
	 * check nothing of the ICRC yet and set pkt->icrc_deferred; the
	 * caller must finish the check (dr_pkt_icrc_finish, or while placing
	 * the payload, dr_pkt_icrc_copy) before it trusts any field. */
	DR_PARSE_DEFER_PLACE = 1u << 1,
};

/* The opcodes whose payload's place follows from the receiving QP's state
 * alone, so that it can be copied there while its ICRC is checked: READ
 * responses (the next unfilled part of the READ asked for) and the MIDDLE
 * and LAST packets of an RC WRITE (the next bytes of the range its FIRST
 * named).  Every byte a frame that fails the check may have put there is
 * one the genuine frame for that PSN rewrites, and nothing completes
 * before it does.  Not FIRST or ONLY (their RETH names the place), not a
 * SEND (its message may end short of what a bad frame wrote). */
static inline bool dr_icrc_placeable(uint8_t opcode)
{
	return (opcode >= DR_OP_WRITE_MIDDLE && opcode <= DR_OP_WRITE_LAST_IMM) ||
	       (opcode >= DR_OP_READ_RSP_FIRST && opcode <= DR_OP_READ_RSP_ONLY);
}

/* Smallest placeable payload DR_PARSE_DEFER_PLACE defers: below it
 * dr_icrc_frame checks headers and payload in one gathered call. */
#define DR_ICRC_DEFER_MIN 256

/* The DestQP of a RoCEv2 frame (Ethernet, optional 802.1Q, IPv4 or IPv6,
 * UDP 4791), or -1 for a MAD (QP1) or anything else. */
int64_t dr_frame_dqpn(const void *frame, size_t len);

/* Validate and parse one Ethernet frame.  Never reads outside
 * frame[0..len).  On DR_PKT_OK *pkt is filled; otherwise *pkt holds what was
 * parsed before the fault (at least eth/ethertype once past layer 2). */
enum dr_pkt_verdict dr_pkt_parse(const void *frame, size_t len, unsigned flags,
				 struct dr_pkt *pkt);

/* Recompute the ICRC of a parsed frame (whatever it carries). */
uint32_t dr_pkt_icrc(const struct dr_pkt *pkt);

/* Finish a deferred ICRC check (DR_PARSE_DEFER_PLACE) over payload and pad:
 * true if the frame's ICRC is right.  On a frame not deferred, true. */
bool dr_pkt_icrc_finish(const struct dr_pkt *pkt);
/* The same, copying the payload into the n segments of dst on the way
 * (their lengths sum to pkt->payload_len).  The bytes are written whatever
 * the verdict: dst must be memory whose contents do not matter until the
 * frame is accepted.  The frame must be deferred. */
bool dr_pkt_icrc_copy(const struct dr_pkt *pkt, const struct iovec *dst, unsigned n);

/* A deferred frame's check finished as a port with a place function
 * finishes it: with n > 0 while copying the payload into dst
 * (dr_pkt_icrc_copy, and pkt->payload_placed set if it holds), else
 * alone (dr_pkt_icrc_finish).  True if the ICRC is right. */
static inline bool dr_pkt_icrc_place(struct dr_pkt *pkt, const struct iovec *dst, unsigned n)
{
	if (!(n ? dr_pkt_icrc_copy(pkt, dst, n) : dr_pkt_icrc_finish(pkt)))
		return false;
	pkt->payload_placed = n > 0;
	return true;
}

/* Turn a parsed frame back into a description (pointers into the frame);
 * dr_pkt_build() of it reproduces the IP datagram byte for byte. */
void dr_pkt_to_desc(const struct dr_pkt *pkt, struct dr_pkt_desc *d);

/* ---- IB CM management datagrams on QP1 (IBA 12, 13.4; docs/protocol.md C) */
#define DR_MAD_LEN 256
#define DR_MAD_BODY_LEN 232
#define DR_MAD_BASE_VERSION 1
#define DR_MAD_CLASS_CM 0x07
#define DR_MAD_CM_CLASS_VERSION 2
#define DR_MAD_METHOD_SEND 0x03
#define DR_GSI_QPN 1

/* CM attribute IDs (IBA 16.7.2 / include/rdma/ib_cm.h) */
enum dr_cm_attr {
	DR_CM_ATTR_REQ = 0x0010,
	DR_CM_ATTR_MRA = 0x0011,
	DR_CM_ATTR_REJ = 0x0012,
	DR_CM_ATTR_REP = 0x0013,
	DR_CM_ATTR_RTU = 0x0014,
	DR_CM_ATTR_DREQ = 0x0015,
	DR_CM_ATTR_DREP = 0x0016,
};

/* rdma_cm service IDs: RDMA IP CM prefix, TCP port space (IBA annex A11) */
#define DR_CM_SID_TCP_PS 0x0000000001060000ull
#define DR_CM_SID_PREFIX_MASK 0xffffffffff000000ull
#define DR_CM_SID_IP_PREFIX 0x0000000001000000ull

/* REJ reasons (IBA 12.6.7.2 table 112) that droce uses */
#define DR_CM_REJ_TIMEOUT 1
#define DR_CM_REJ_INVALID_SERVICE_ID 8
#define DR_CM_REJ_STALE_CONN 10
#define DR_CM_REJ_CONSUMER_DEFINED 28

#define DR_CM_REQ_PRIV_LEN 92
#define DR_CM_REP_PRIV_LEN 196
#define DR_CM_RTU_PRIV_LEN 224
#define DR_CM_REJ_PRIV_LEN 148
#define DR_CM_REJ_ARI_LEN 72
#define DR_CM_DREQ_PRIV_LEN 220
#define DR_CM_DREP_PRIV_LEN 224
#define DR_CM_MRA_PRIV_LEN 222
#define DR_CM_PATH_LEN 44 /* one path record inside a REQ */

struct dr_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	dr_be16_t status;
	dr_be16_t class_specific;
	dr_be64_t tid;
	dr_be16_t attr_id;
	dr_be16_t resv;
	dr_be32_t attr_mod;
} DR_PACKED;
_Static_assert(sizeof(struct dr_mad_hdr) == DR_MAD_LEN - DR_MAD_BODY_LEN, "MAD header");

/* A MAD in host terms: the common header plus the raw CM body. */
struct dr_mad {
	uint8_t base_version, mgmt_class, class_version, method;
	uint16_t status, class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
	uint8_t body[DR_MAD_BODY_LEN];
};

/* Path record inside a REQ (IBA 12.6.5 table 99, bytes 52..95 / 96..139). */
struct dr_cm_path {
	uint16_t local_lid, remote_lid;
	uint8_t local_gid[16], remote_gid[16];
	uint32_t flow_label;
	uint8_t packet_rate, traffic_class, hop_limit, sl, subnet_local, local_ack_timeout;
};

struct dr_cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id; /* ECE (IBA 1.4, 12.6.5): the sender's 24-bit vendor */
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint8_t responder_resources;
	uint32_t local_eecn;
	uint8_t initiator_depth;
	uint32_t remote_eecn;
	uint8_t remote_cm_resp_timeout, transport_type, e2e_flow_ctrl;
	uint32_t starting_psn;
	uint8_t local_cm_resp_timeout, retry_count;
	uint16_t pkey;
	uint8_t path_mtu, rdc_exists, rnr_retry_count;
	uint8_t max_cm_retries, srq, ext_transport;
	struct dr_cm_path primary, alternate;
	uint8_t private_data[DR_CM_REQ_PRIV_LEN];
};

struct dr_cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint32_t local_eecn;
	uint32_t starting_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t target_ack_delay, failover_accepted, e2e_flow_ctrl;
	uint8_t rnr_retry_count, srq;
	uint64_t local_ca_guid;
	uint32_t vendor_id; /* ECE: bytes 15, 19 and 23, high to low */
	uint8_t private_data[DR_CM_REP_PRIV_LEN];
};

struct dr_cm_rtu {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[DR_CM_RTU_PRIV_LEN];
};

struct dr_cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_rejected; /* 0 REQ, 1 REP, 2 other */
	uint8_t reject_info_len;
	uint16_t reason;
	uint8_t ari[DR_CM_REJ_ARI_LEN];
	uint8_t private_data[DR_CM_REJ_PRIV_LEN];
};

struct dr_cm_dreq {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn;
	uint8_t private_data[DR_CM_DREQ_PRIV_LEN];
};

struct dr_cm_drep {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[DR_CM_DREP_PRIV_LEN];
};

struct dr_cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_mraed;
	uint8_t service_timeout;
	uint8_t private_data[DR_CM_MRA_PRIV_LEN];
};

/* The rdma_cm header at the start of a REQ's private data (cma.c cma_hdr). */
#define DR_CMA_HDR_LEN 36
#define DR_CMA_USER_DATA_LEN (DR_CM_REQ_PRIV_LEN - DR_CMA_HDR_LEN) /* 56 */
struct dr_cma_hdr {
	uint8_t cma_version; /* 0 */
	uint8_t ip_version;  /* 4 or 6 (upper nibble on the wire) */
	uint16_t src_port;
	uint8_t src_addr[16]; /* IPv4: 12 zero bytes then the address */
	uint8_t dst_addr[16];
};

/* MAD <-> bytes.  dr_mad_parse checks the length (exactly 256 bytes) and
 * returns 0 or -EINVAL; dr_mad_build writes 256 bytes. */
int dr_mad_parse(const void *buf, size_t len, struct dr_mad *mad);
void dr_mad_build(const struct dr_mad *mad, void *buf);
/* A CM MAD header: base 1, class 7, version 2, method Send. */
void dr_mad_init_cm(struct dr_mad *mad, uint16_t attr_id, uint64_t tid);
bool dr_mad_is_cm(const struct dr_mad *mad);

/* CM bodies <-> host structs; every field, reserved bits written as 0. */
void dr_cm_req_unpack(const uint8_t *body, struct dr_cm_req *m);
void dr_cm_req_pack(const struct dr_cm_req *m, uint8_t *body);
void dr_cm_rep_unpack(const uint8_t *body, struct dr_cm_rep *m);
void dr_cm_rep_pack(const struct dr_cm_rep *m, uint8_t *body);
void dr_cm_rtu_unpack(const uint8_t *body, struct dr_cm_rtu *m);
void dr_cm_rtu_pack(const struct dr_cm_rtu *m, uint8_t *body);
void dr_cm_rej_unpack(const uint8_t *body, struct dr_cm_rej *m);
void dr_cm_rej_pack(const struct dr_cm_rej *m, uint8_t *body);
void dr_cm_dreq_unpack(const uint8_t *body, struct dr_cm_dreq *m);
void dr_cm_dreq_pack(const struct dr_cm_dreq *m, uint8_t *body);
void dr_cm_drep_unpack(const uint8_t *body, struct dr_cm_drep *m);
void dr_cm_drep_pack(const struct dr_cm_drep *m, uint8_t *body);
void dr_cm_mra_unpack(const uint8_t *body, struct dr_cm_mra *m);
void dr_cm_mra_pack(const struct dr_cm_mra *m, uint8_t *body);

void dr_cma_hdr_unpack(const uint8_t *priv, struct dr_cma_hdr *h);
void dr_cma_hdr_pack(const struct dr_cma_hdr *h, uint8_t *priv);
/* IPv4 address (host order) <-> IPv4-mapped GID ::ffff:a.b.c.d (A.8) */
void dr_gid_from_ipv4(uint8_t gid[16], uint32_t ip4);
bool dr_gid_to_ipv4(const uint8_t gid[16], uint32_t *ip4);

/* Capture annotations (FI_DROCE_PCAP): append a note to the comment in buf
 * (size bytes, NUL-terminated), after "; " if it holds one already, cut to
 * fit. */
void dr_note_vadd(char *buf, size_t size, const char *fmt, va_list ap);

#endif /* DR_ROCE_H */
