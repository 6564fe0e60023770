/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dr_qp.h - the RC queue-pair engine: QP model, requester (req.c),
 * responder (resp.c), completer (comp.c), MR key table (mr.c).
 *
 * The engine knows neither DPDK nor libfabric.  It talks to the outside
 * through struct dr_qp_ops only: a frame-transmit function, a clock, a
 * timer request, a completion sink and an optional responder event sink.
 * Users outside src/qp hold a QP as an opaque struct dr_qp and read it
 * through the accessors below (dr_qp_state(), dr_qp_sq_free(), ...): its
 * fields, the WQEs and the engines' calls into each other are in
 * src/qp/qp_priv.h, which src/fi cannot include.  Frames are built and
 * parsed only with the wire codec (dr_roce.h).  Behaviour follows IBA vol. 1 ch. 9.7
 * (RC reliability) and docs/protocol.md section B (rdma_rxe).
 *
 * Concurrency: a QP is single-threaded.  The caller (src/fi: the domain
 * lock) serialises every call into one QP and its MR table.  Callbacks in
 * struct dr_qp_ops are invoked from inside the engine and must not call
 * back into the same QP.
 */
#ifndef DR_QP_H
#define DR_QP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dr_roce.h"

/* ==== MR key table (mr.c) ============================================== */

enum dr_access {
	DR_ACCESS_LOCAL_WRITE = 1u << 0,
	DR_ACCESS_REMOTE_WRITE = 1u << 1,
	DR_ACCESS_REMOTE_READ = 1u << 2,
	DR_ACCESS_REMOTE_ATOMIC = 1u << 3,
};

/* A registered region.  iova is the address the peer (and local SGEs)
 * name it by; addr is where it lives here.  With virtual addressing
 * (FI_MR_VIRT_ADDR) iova == (uintptr_t)addr. */
struct dr_mr {
	uint8_t *addr;
	uint64_t length;
	uint64_t iova;
	unsigned access; /* enum dr_access */
	uint32_t key;	 /* lkey == rkey */
};

/* Why an access was refused (each maps to one NAK, B.9). */
enum dr_mr_verdict {
	DR_MR_OK,
	DR_MR_BAD_KEY,	  /* no such key (or a deregistered one) */
	DR_MR_BAD_BOUNDS, /* [iova, iova+len) not inside the region */
	DR_MR_NO_ACCESS,  /* region lacks the access right */
};

/* ==== Identifiers (ids.c) ================================================= */

/* Bytes from the kernel's CSPRNG (getrandom(2)), buffered.  0, or -errno
 * when it fails: never a weaker fallback. */
int dr_rand_bytes(void *buf, size_t len);
int dr_rand_u32(uint32_t *out);
/* Tests: every draw fails with -err from now on; 0 restores. */
void dr_rand_fail(int err);

/* Live identifiers (QPNs, MR keys) and their owners: open addressing,
 * at most half full, O(1) lookup.  Identifier 0 is never stored. */
struct dr_idmap_ent {
	uint32_t id;
	void *val;
};

struct dr_idmap {
	struct dr_idmap_ent *ent;
	uint32_t mask; /* capacity - 1, capacity >= 2 * max */
	unsigned shift;
	uint32_t count, max;
};

int dr_idmap_init(struct dr_idmap *m, uint32_t max);
void dr_idmap_fini(struct dr_idmap *m);
void *dr_idmap_find(const struct dr_idmap *m, uint32_t id);
/* 0, -EEXIST, -ENOSPC (max reached) or -EINVAL (id 0, val NULL). */
int dr_idmap_insert(struct dr_idmap *m, uint32_t id, void *val);
/* The value removed, NULL if id was not there. */
void *dr_idmap_remove(struct dr_idmap *m, uint32_t id);
/* Draw a random identifier in [lo, mask] (mask = 2^n - 1) that is not in
 * the map and insert it with val.  0, -ENOSPC, or the random source's
 * error. */
int dr_idmap_alloc(struct dr_idmap *m, uint32_t mask, uint32_t lo, void *val, uint32_t *id);

struct dr_mr_slot; /* mr.c */

struct dr_mr_table {
	struct dr_mr_slot *slot; /* [1, size): slot 0 unused */
	uint32_t size;
	uint32_t free_head, free_tail; /* FIFO of unused slots */
	uint32_t nfree;
	struct dr_idmap keys; /* key -> slot */
};

/* Local SGEs with this lkey are not checked against the table (trusted
 * memory, like a verbs local_dma_lkey). */
#define DR_LKEY_NONE 0u

int dr_mr_table_init(struct dr_mr_table *t, uint32_t max_mr);
void dr_mr_table_fini(struct dr_mr_table *t);
/* 0, -ENOSPC (table full), -EINVAL, or the random source's -errno. */
int dr_mr_reg(struct dr_mr_table *t, void *addr, uint64_t length, uint64_t iova, unsigned access,
	      struct dr_mr **mrp);
int dr_mr_dereg(struct dr_mr_table *t, uint32_t key);
struct dr_mr *dr_mr_lookup(const struct dr_mr_table *t, uint32_t key);
/* Check key, bounds and rights of [iova, iova+len); on DR_MR_OK *ptr is
 * the local address of iova.  A zero-length access is always allowed and
 * yields *ptr = NULL (IBA 9.4.4: no R_Key check for zero-length RDMA). */
enum dr_mr_verdict dr_mr_check(const struct dr_mr_table *t, uint32_t key, uint64_t iova,
			       uint64_t len, unsigned access, uint8_t **ptr);

/* ==== Work requests and completions ==================================== */

#define DR_QP_MAX_SGE	 8
#define DR_QP_MAX_INLINE 256
/* Largest message we post: 1 GiB, so that even at PMTU 256 a message spans
 * at most 2^22 PSNs and 24-bit serial arithmetic stays unambiguous.  As a
 * responder we accept RETH lengths up to 2^31 like rxe (DR_QP_MAX_RETH). */
#define DR_QP_MAX_MSG  (1u << 30)
#define DR_QP_MAX_RETH (1u << 31)
/* Payloads this long go to ops->xmit_split, not copied into the frame. */
#define DR_QP_SPLIT_MIN 1024

struct dr_sge {
	uint64_t addr; /* iova within the MR named by lkey (or a pointer) */
	uint32_t length;
	uint32_t lkey; /* DR_LKEY_NONE: addr is a plain local pointer */
};

enum dr_wr_opcode {
	DR_WR_SEND,
	DR_WR_SEND_IMM,
	DR_WR_WRITE,
	DR_WR_WRITE_IMM,
	DR_WR_READ,
	DR_WR_FETCH_ADD,
	DR_WR_CMP_SWAP,
	DR_WR_NUM
};
extern const char *const dr_wr_opcode_names[DR_WR_NUM];

enum dr_wr_flags {
	DR_WR_SIGNALED = 1u << 0,
	DR_WR_FENCE = 1u << 1,	   /* wait for earlier READ/atomics (IBA 10.8.3.3) */
	DR_WR_INLINE = 1u << 2,	   /* copy the gather list at post time */
	DR_WR_SOLICITED = 1u << 3, /* BTH SE on the last packet */
	/* nothing waits for its completion but its own SQ slot (an fi_inject
	 * without a counter): towards a peer that acknowledges unasked
	 * (dr_qp_set_lazy_ack) its last packet need not ask for an ACK */
	DR_WR_UNWAITED = 1u << 4,
};

struct dr_send_wr {
	uint64_t wr_id;
	enum dr_wr_opcode opcode;
	unsigned flags; /* enum dr_wr_flags */
	const struct dr_sge *sg_list;
	unsigned num_sge;
	uint32_t imm; /* host order; ImmDt on the wire in network order */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add; /* FETCH_ADD: addend; CMP_SWAP: compare */
	uint64_t swap;	      /* CMP_SWAP: swap value */
};

struct dr_recv_wr {
	uint64_t wr_id;
	const struct dr_sge *sg_list;
	unsigned num_sge;
};

enum dr_wc_status {
	DR_WC_SUCCESS,
	DR_WC_LOC_LEN_ERR,	 /* receive buffer too small */
	DR_WC_LOC_PROT_ERR,	 /* local SGE fails its lkey check */
	DR_WC_WR_FLUSH_ERR,	 /* flushed: the QP is in ERROR */
	DR_WC_REM_INV_REQ_ERR,	 /* NAK invalid request */
	DR_WC_REM_ACCESS_ERR,	 /* NAK remote access error */
	DR_WC_REM_OP_ERR,	 /* NAK remote operational error */
	DR_WC_RETRY_EXC_ERR,	 /* retry_cnt exhausted */
	DR_WC_RNR_RETRY_EXC_ERR, /* rnr_retry exhausted */
	DR_WC_STATUS_NUM
};
extern const char *const dr_wc_status_names[DR_WC_STATUS_NUM];

enum dr_wc_opcode {
	DR_WC_SEND,
	DR_WC_WRITE,
	DR_WC_READ,
	DR_WC_FETCH_ADD,
	DR_WC_CMP_SWAP,
	DR_WC_RECV,
	DR_WC_RECV_WRITE_IMM,
};

struct dr_wc {
	uint64_t wr_id; /* 0 when no_wqe */
	enum dr_wc_status status;
	enum dr_wc_opcode opcode;
	uint32_t byte_len; /* receives: bytes placed (WRITE_IMM: the RETH length) */
	bool has_imm;
	uint32_t imm;	  /* host order */
	bool solicited;	  /* receives: the last packet had BTH SE set */
	bool no_wqe;	  /* DR_WC_RECV_WRITE_IMM that took no receive WQE
			   * (DR_QP_WRITE_IMM_NO_WQE) */
	uint8_t syndrome; /* AETH syndrome of the NAK that failed it, else 0 */
};

/* ==== Responder events (struct dr_qp_ops.remote_op) ======================= */

enum dr_remote_op_kind {
	DR_REMOTE_WRITE,     /* RDMA WRITE, with or without immediate */
	DR_REMOTE_READ,	     /* RDMA READ */
	DR_REMOTE_FETCH_ADD, /* ATOMIC FETCH_ADD */
	DR_REMOTE_CMP_SWAP,  /* ATOMIC CMP_SWAP */
	DR_REMOTE_OP_NUM
};
extern const char *const dr_remote_op_names[DR_REMOTE_OP_NUM];

/* One request the responder executed or refused.  Reported once per
 * request: a WRITE when its last packet is placed, a READ or an atomic
 * when executed, any of them when refused with an error NAK (IBA 9.7.5.1,
 * B.9; the QP then goes to ERROR).  Never for duplicates (B.7: replayed
 * from the cache or re-ACKed, not executed again), packets out of order
 * (NAK_SEQ or dropped) or RNR NAKs (retried later).  SENDs are not
 * reported: they complete receive WQEs instead. */
struct dr_remote_op {
	enum dr_remote_op_kind kind;
	enum dr_wc_status status; /* DR_WC_SUCCESS or the DR_WC_REM_*_ERR of the NAK */
	uint8_t syndrome;	  /* the NAK's AETH syndrome, else 0 */
	uint32_t psn;		  /* the packet that finished (or failed) it */
	uint64_t length;	  /* WRITE/READ: the RETH length (0 if not yet known); a READ
				   * asked for in several requests (DR_QP_READ_CHUNK): the
				   * first one's */
	uint64_t compare_add;	  /* FETCH_ADD: the addend; CMP_SWAP: the compare value */
	uint64_t swap;		  /* CMP_SWAP: the swap value */
};

/* ==== QP model ========================================================== */

/* IBA 10.3.1 QP states (SQD/SQE are not modelled). */
enum dr_qp_state { DR_QPS_RESET, DR_QPS_INIT, DR_QPS_RTR, DR_QPS_RTS, DR_QPS_ERROR, DR_QPS_NUM };
extern const char *const dr_qp_state_names[DR_QPS_NUM];

/* Where frames go: filled from the CM exchange and ARP.  Host order. */
struct dr_qp_path {
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip4, dst_ip4;
	bool ipv6; /* over IPv6 between these two (the ip4 fields unused) */
	uint8_t src_ip6[16], dst_ip6[16];
	uint8_t tos, ttl; /* IPv6: traffic class, hop limit */
	uint16_t sport; /* 0xC000..0xFFFF, stable per QP (A.3); see dr_udp_sport */
};

struct dr_qp_attr {
	enum dr_qp_state state;
	uint32_t dest_qpn;
	uint32_t rq_psn;	    /* first PSN the responder expects */
	uint32_t sq_psn;	    /* first PSN the requester sends */
	uint32_t path_mtu;	    /* bytes: 256, 512, 1024, 2048 or 4096 */
	uint8_t timeout;	    /* 4.096 us * 2^timeout; 0 = no timer (IBA 9.7.6) */
	uint8_t retry_cnt;	    /* 0..7 transport retries */
	uint8_t rnr_retry;	    /* 0..7, 7 = infinite (IBA 9.7.5.2) */
	uint8_t min_rnr_timer;	    /* 0..31 code sent in RNR NAKs (table 45) */
	uint8_t max_rd_atomic;	    /* ORD: our outstanding READ/atomics */
	uint8_t max_dest_rd_atomic; /* IRD: replay cache entries as responder */
	struct dr_qp_path path;
};

enum dr_qp_attr_mask {
	DR_QP_ATTR_STATE = 1u << 0,
	DR_QP_ATTR_DEST_QPN = 1u << 1,
	DR_QP_ATTR_RQ_PSN = 1u << 2,
	DR_QP_ATTR_SQ_PSN = 1u << 3,
	DR_QP_ATTR_PATH_MTU = 1u << 4,
	DR_QP_ATTR_TIMEOUT = 1u << 5,
	DR_QP_ATTR_RETRY_CNT = 1u << 6,
	DR_QP_ATTR_RNR_RETRY = 1u << 7,
	DR_QP_ATTR_MIN_RNR_TIMER = 1u << 8,
	DR_QP_ATTR_MAX_RD_ATOMIC = 1u << 9,
	DR_QP_ATTR_MAX_DEST_RD_ATOMIC = 1u << 10,
	DR_QP_ATTR_PATH = 1u << 11,
};

struct dr_qp;

/* The engine's view of the world.  xmit: one whole Ethernet frame, valid
 * only during the call; a frame the port cannot send is simply lost (the
 * protocol recovers).  now_ns: a monotonic clock.  timer_set: the engine
 * wants dr_qp_tick() called at or after deadline_ns (UINT64_MAX: no timer);
 * optional, dr_qp_deadline_ns() gives the same answer.  complete: one work
 * completion, send or receive, in posting order per queue.  remote_op:
 * optional, one responder event (struct dr_remote_op), called after the
 * request's completions, answer and any flush.  log: optional debug log
 * (state transitions, NAKs). */
struct dr_qp_ops {
	void (*xmit)(void *ctx, struct dr_qp *qp, const void *frame, size_t len);
	/* Optional faster transmit paths; xmit remains the fallback.
	 * frame_alloc: a buffer of len bytes to build the frame in, with a
	 * handle; frame_done then sends it (send true) or frees it.
	 * xmit_split: a frame in three pieces, hdr || payload || trailer (as
	 * dr_pkt_build_split makes them), hdr and trailer valid only during
	 * the call, payload pointing into the WQE's memory or a registered
	 * region: the caller must be done with it before it returns to the
	 * application (src/fi: its transmit batch ends under the domain
	 * lock).  Used for payloads of at least DR_QP_SPLIT_MIN bytes. */
	void *(*frame_alloc)(void *ctx, struct dr_qp *qp, size_t len, void **handle);
	void (*frame_done)(void *ctx, struct dr_qp *qp, void *handle, bool send);
	void (*xmit_split)(void *ctx, struct dr_qp *qp, const void *hdr, size_t hdr_len,
			   const void *payload, size_t payload_len, const void *trailer,
			   size_t trailer_len);
	/* Optional: dr_req_run sent packets, and unacked of the QP's PSNs are
	 * now sent and not acknowledged (the transmit batch may let what it
	 * holds leave before the receiver runs dry) */
	void (*sent)(void *ctx, struct dr_qp *qp, uint32_t unacked);
	uint64_t (*now_ns)(void *ctx);
	void (*timer_set)(void *ctx, struct dr_qp *qp, uint64_t deadline_ns);
	void (*complete)(void *ctx, struct dr_qp *qp, const struct dr_wc *wc);
	void (*remote_op)(void *ctx, struct dr_qp *qp, const struct dr_remote_op *op);
	void (*log)(void *ctx, struct dr_qp *qp, const char *msg);
	/* Optional: the peer stopped answering -- called on every retransmit
	 * timeout of the QP's full timeout (not DR_QP_ADAPTIVE_RTO's shorter
	 * ones) that is at least the second in a row without progress, before
	 * the resend.  src/fi has the port re-validate the peer's MAC
	 * (dr_port_neigh_suspect), so that a peer whose MAC changed is
	 * followed long before retry_cnt runs out. */
	void (*path_suspect)(void *ctx, struct dr_qp *qp);
	/* Optional: annotations of protocol events for a capture that explains
	 * itself (issue 15; the vocabulary is in man/fi_droce.7, FI_DROCE_PCAP).
	 * noting: whether anyone listens now (a NULL noting with a note means
	 * always); the engine formats a note only then.  note: one note on a
	 * frame, the one being received (during dr_qp_input) or one about to be
	 * sent (frame, len: at least its headers through the BTH's extension
	 * headers, as built).  text is valid only during the call. */
	bool (*noting)(void *ctx, struct dr_qp *qp);
	void (*note)(void *ctx, struct dr_qp *qp, const void *frame, size_t len, const char *text);
};

/* QP options, fixed at creation (struct dr_qp_init_attr.flags). */
enum dr_qp_flags {
	/* RDMA WRITE with immediate consumes no receive WQE: its last
	 * packet, once executed, completes on its own as a receive
	 * (DR_WC_RECV_WRITE_IMM, wc.no_wqe, byte_len the RETH length) and
	 * never meets an RNR NAK.  Not IBA behaviour (IBA 9.4.3, 9.7.4: it
	 * takes a WQE like a SEND), for APIs that keep RMA apart from the
	 * posted receives (libfabric without FI_RX_CQ_DATA).  The peer sees
	 * no difference on the wire. */
	DR_QP_WRITE_IMM_NO_WQE = 1u << 0,
	/* Coalesced acknowledgements: an ACK a request asked for is not sent
	 * at once but held (one per QP, the latest PSN: ACKs are cumulative,
	 * IBA 9.7.5.1.2) until dr_qp_flush() or until the responder sends
	 * anything else, which it precedes.  The caller flushes when its
	 * burst of input is handled -- or after the application has answered,
	 * so that the ACK leaves behind the reply -- and within the ACK delay
	 * it announced (src/fi: at the latest at the next poll).  The
	 * requester's progress restarts the retransmit timer at that flush
	 * too, once per burst (a running timer; comp.c dr_comp_progress). */
	DR_QP_DEFER_ACK = 1u << 1,
	/* Adaptive retransmit timer: the timer starts at the measured round
	 * trip (srtt + 4 rttvar, RFC 6298, rounded up to an IBA timeout value
	 * 4.096 us * 2^n, at least DR_RTO_MIN_EXP, at most the QP's timeout)
	 * and doubles on each timeout without progress.  Timeouts shorter
	 * than the QP's timeout resend without using up retry_cnt: retries
	 * are counted only once the timer has reached the value the QP was
	 * given (from the CM), so a dead peer is declared no sooner than
	 * without it. */
	DR_QP_ADAPTIVE_RTO = 1u << 2,
	/* Congestion control (docs/protocol.md B.11): request packets are
	 * ECN-capable (ECT(0)); a packet received marked CE is answered with a
	 * CNP (RoCEv2 annex A17.9, at most one per QP a 50 us); a CNP received,
	 * or a go-back-N, cuts the QP's sending rate (DCQCN), which recovers
	 * over time, and the requester is paced to it.  A peer without it
	 * (rdma_rxe) ignores the ECN bits and drops CNPs. */
	DR_QP_CC = 1u << 3,
	/* The link is not expected to lose a frame (src/fi: a memif or ring
	 * port, whose sender waits while the receiver's ring is full):
	 * DR_QP_ADAPTIVE_RTO still times round trips and probes with one
	 * packet, but its timeouts shorter than the QP's are not used.  Only
	 * a stalled peer set them off there, never a loss (bench/RESULTS.md:
	 * 1-39 spurious timeouts a row, no frame lost; answers 1-20 ms late on
	 * a shared 2-core host, bench/PROFILE.md section 8).  The first sign
	 * of a loss (a sequence NAK, a READ response past a gap, a probe that
	 * ends in go-back-N) clears the flag for good: the port can still
	 * drop when its backlog is full, and a memif peer may forward to a
	 * lossy link.  A dead peer is declared at the same time as without. */
	DR_QP_LOSSLESS = 1u << 4,
};

/* Shortest adaptive retransmit timeout: 4.096 us * 2^5 = 131 us. */
#define DR_RTO_MIN_EXP 5

/* ==== Receive checks (qp.c, resp.c, comp.c; src/fi for the device's) ===== */

/* Why a received frame was dropped.  The checks are rxe's (rxe_recv.c
 * hdr_check, rxe_resp.c check_psn): a frame passes them in this order, and
 * the first that fails names the drop.  The device counts every drop per
 * port, the QP its own as well (struct dr_qp_stats.rx_drop). */
enum dr_rx_drop {
	DR_RX_OK, /* not dropped */
	/* the device, before any QP (src/fi dev_rx) */
	DR_RX_DROP_NOT_IPV4,	/* droce's QPs speak RoCEv2 over IPv4 only */
	DR_RX_DROP_UNKNOWN_QPN, /* no QP has this DestQP (or a closed one) */
	DR_RX_DROP_GSI,		/* QP1: not a UD SEND_ONLY with the GSI Q_Key */
	/* the QP (dr_qp_input): who may talk to it */
	DR_RX_DROP_DST_QPN,  /* BTH DestQP is not this QP */
	DR_RX_DROP_TYPE,     /* not an RC opcode (rxe check_type_state) */
	DR_RX_DROP_STATE,    /* request before RTR, response before RTS, ERROR */
	DR_RX_DROP_SRC_ADDR, /* not from the connected peer's IP (rxe check_addr) */
	DR_RX_DROP_DST_ADDR, /* not to this QP's own IP (rxe check_addr) */
	DR_RX_DROP_PKEY,     /* P_Key does not match (rxe check_keys) */
	/* the responder's PSN check (IBA 9.7.5.1.1) */
	DR_RX_DROP_PSN_AHEAD,	  /* ahead of the expected PSN; this gap was NAKed */
	DR_RX_DROP_PSN_AHEAD_RNR, /* ahead, behind an RNR NAK (B.5): not lost */
	DR_RX_DROP_PSN_STALE,	  /* behind it: a READ/atomic no resource covers */
	/* the completer (IBA 9.7.5.2) */
	DR_RX_DROP_RSP, /* a response or ACK for nothing outstanding */
	DR_RX_DROP_NUM
};
extern const char *const dr_rx_drop_names[DR_RX_DROP_NUM];
/* A reason a correct peer on a correct network never gives (a forged or
 * misdirected frame): P_Key, addresses, DestQP, QP type, the GSI's. */
bool dr_rx_drop_hostile(enum dr_rx_drop why);

/* P_Key matching as rxe does it (rxe_recv.c pkey_match): the low 15 bits
 * equal and not 0 (0x0000 and 0x8000 are invalid), and at
 * least one of the two a full member (bit 15). */
static inline bool dr_pkey_match(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) != 0 && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}

struct dr_qp_init_attr {
	uint32_t qpn;
	uint32_t max_send_wr; /* rounded up to a power of two */
	uint32_t max_recv_wr;
	struct dr_mr_table *mrt; /* the protection domain's keys */
	const struct dr_qp_ops *ops;
	void *ctx;
	unsigned flags; /* enum dr_qp_flags */
	/* optional: the port's drop counters, DR_RX_DROP_NUM of them; the QP
	 * adds its drops there too (under the caller's serialisation) */
	uint64_t *port_drops;
	/* The most PSNs the requester ever leaves unacknowledged: 0 for the
	 * engine's window (128, docs/protocol.md B.1), else
	 * DR_QP_WINDOW_MIN..128, which caps the window that grows back after
	 * a loss; dr_qp_create refuses other values.  For a port that loses
	 * frames when too many arrive at once (dr_port_max_window). */
	uint32_t max_window;
	/* DR_QP_ADAPTIVE_RTO: the floor the timer starts with, 0 for none.
	 * The measured timeout is not used below it until losses (each
	 * halves it) or DR_RTO_FLOOR_DECAY round trips and 10 s without a
	 * spurious timeout (then it halves) bring it down, as for the floor a
	 * spurious timeout sets (src/qp/comp.c).  For paths whose answers
	 * wait on a scheduler: a prior on its stalls, as TCP starts at 1 s. */
	uint64_t rto_floor_ns;
};

/* The smallest max_window.  A QP with a max_window below the engine's
 * window asks for READs in requests of max_window response packets. */
#define DR_QP_WINDOW_MIN 64

/* The READ/atomic depth droce offers and asks for (IRD and ORD,
 * docs/protocol.md B.8): the engine's window, so that one-packet READs are
 * paced by the window as WRITEs are, not by the depth.  At 16 (rdma-core's
 * verbs provider's choice), a window of 64 READs of 4 KiB over memif had
 * 16 in flight: one receive burst took them all, so requester and
 * responder took turns instead of working at once, 0.47x the WRITE
 * bandwidth (bench/PROFILE.md).  rxe's device limit is 128 too. */
#define DR_QP_RD_DEPTH 128

struct dr_qp_stats {
	uint64_t tx_frames, rx_frames;
	uint64_t tx_req_pkts;	 /* request packets, first sends and resends */
	uint64_t tx_resent_pkts; /* of which go-back-N resends */
	uint64_t tx_acks, tx_read_rsps, tx_atomic_acks;
	uint64_t acks_coalesced; /* ACKs asked for that a later one covered */
	/* dr_qp_set_lazy_ack: message ends sent without AckReq, and ACKs
	 * sent that no AckReq asked for */
	uint64_t unasked_ends, tx_unasked_acks;
	uint64_t rtt_samples, early_timeouts; /* DR_QP_ADAPTIVE_RTO */
	uint64_t spurious_timeouts; /* a timeout's resend answered twice: nothing was lost */
	uint64_t timeout_losses;    /* answered once, not twice by the next timeout: a loss */
	uint64_t rx_rsp_ahead;	    /* READ responses past a missing one (one was lost) */
	uint64_t probe_undos;	 /* a timeout's probe answered past it: resumed, nothing resent */
	uint64_t cwnd_cuts;	 /* window halvings after a loss or a CNP */
	/* DR_QP_CC: CE-marked packets received, CNPs sent for them (rate
	 * limited), CNPs received, rate cuts (CNPs), and the
	 * rate the requester is paced to now (Mb/s; 0: not limited) */
	uint64_t ce_seen, cnp_sent, cnp_received, rate_cuts, cc_rate_mbps;
	uint64_t rate_holds; /* go-back-N in a limited episode: no increase for a period */
	uint64_t tx_seq_naks, tx_rnr_naks, tx_err_naks;
	uint64_t rx_seq_naks, rx_rnr_naks, rx_err_naks;
	uint64_t rx_dup_reqs; /* duplicate requests answered */
	uint64_t rx_dropped;  /* silently dropped: the sum of rx_drop[] */
	uint64_t rx_drop[DR_RX_DROP_NUM]; /* by reason */
	uint64_t timeouts, retries, rnr_waits;
	uint64_t atomics_executed;
};

struct dr_qp *dr_qp_create(const struct dr_qp_init_attr *ia);
void dr_qp_destroy(struct dr_qp *qp);
/* Verbs-style modify (IBA 11.2.4, Modify QP): mask says which attr fields apply and
 * must include DR_QP_ATTR_STATE; each transition has required attributes.
 * Returns 0 or -EINVAL.  To ERROR flushes every outstanding WR. */
int dr_qp_modify(struct dr_qp *qp, const struct dr_qp_attr *attr, unsigned mask);
/* The most packets the requester sends between two AckReqs (B.2):
 * 1..DR_QP_ACK_PKTS_MAX, 0 for the default (that maximum).  Every AckReq'd packet answered releases
 * that many more: a port that sends a QP's runs of packets as one frame (UDP GSO super-frames) asks
 * for a multiple of its run, so that one ACK releases whole frames.  Returns 0 or -EINVAL. */
#define DR_QP_ACK_PKTS_MAX 64
int dr_qp_set_ack_pkts(struct dr_qp *qp, uint32_t n);
/* Short messages in packets of one size, for a port that sends a QP's runs of packets of one
 * size as one frame (UDP GSO super-frames), where a run can start longer (a FIRST with its RETH, or
 * a READ response's FIRST with its AETH) but only end shorter, so that a message of a few packets
 * would leave as two or three frames.  With it, an RDMA WRITE without immediate data of 2 to
 * DR_QP_SHORT_MAX packets leaves as one WRITE ONLY a packet, each with its own RETH (that
 * packet's address and length), and a READ of at most DR_QP_SHORT_MAX packets is asked for in
 * requests of two response packets, so that the responses are FIRSTs and LASTs, both with an
 * AETH (a READ RESPONSE ONLY for an odd last one), where one request's MIDDLEs, 4 bytes shorter,
 * would cut the runs.  Longer messages keep the usual framing: their runs are long anyway, and a
 * responder checks a WRITE ONLY's ICRC in a pass of its own before placing it, where a MIDDLE's
 * is checked as it is placed.  Same PSNs, payloads and AckReqs (docs/protocol.md A.7). */
#define DR_QP_SHORT_MAX 16
void dr_qp_set_one_size(struct dr_qp *qp, bool on);
/* Acknowledgements without being asked, between two ends that both said they give them (droce's
 * ECE, DR_ECE_LAZY_ACK).  The responder acknowledges a request packet without AckReq too, at the
 * latest DR_QP_LAZY_ACK_NS after it arrived (earlier with the next ACK, NAK or response it sends,
 * or with a post once it is ripe: dr_qp_ack_ripen), so the requester may leave AckReq off the last
 * packet of a DR_WR_UNWAITED SEND or WRITE while few WRs are outstanding (at most 8, and at most
 * half its SQ; its timeout at least four times that delay): a ping-pong of fi_injects then puts
 * an ACK on the wire every few round trips instead of behind every message.  The shortest
 * retransmit timeout (DR_RTO_MIN_EXP: 131 us) is four times that delay.  docs/protocol.md B.2,
 * B.3. */
#define DR_QP_LAZY_ACK_NS 32000u
void dr_qp_set_lazy_ack(struct dr_qp *qp, bool on);
/* Returns 0, -EINVAL (bad WR or wrong state), -ENOMEM (queue full), or
 * -EPERM (an SGE fails its lkey check).  In ERROR the WR is accepted and
 * flushed at once. */
int dr_qp_post_send(struct dr_qp *qp, const struct dr_send_wr *wr);
int dr_qp_post_recv(struct dr_qp *qp, const struct dr_recv_wr *wr);
/* Hand the QP a frame addressed to it (parsed with dr_pkt_parse, OK).
 * Frames that fail dr_qp_rx_check are dropped and counted.  A frame with
 * pkt->payload_placed set must be one this QP's dr_qp_place named a
 * place for, with nothing done to the QP since: that call ran
 * dr_qp_rx_check already, and it is not run again. */
void dr_qp_input(struct dr_qp *qp, const struct dr_pkt *pkt);
/* The QP's own receive checks, without side effects: DR_RX_OK or the
 * reason dr_qp_input would drop the frame before the engines see it. */
enum dr_rx_drop dr_qp_rx_check(const struct dr_qp *qp, const struct dr_pkt *pkt);
/* Where the payload of a placeable frame (dr_icrc_placeable) goes, asked
 * before its ICRC is checked (the port's place function,
 * dr_port_set_place): for a READ response the segments of the next
 * unfilled part of the READ at the head of the send queue, for a WRITE
 * MIDDLE or LAST the next bytes of the WRITE in progress, if pkt is the
 * packet dr_qp_input would copy there; else 0 (it is then copied, or
 * dropped, as usual).  Without side effects: bytes written there before
 * the frame is accepted are overwritten by the packet that fills that
 * part, and the operation completes only after it. */
unsigned dr_qp_place(const struct dr_qp *qp, const struct dr_pkt *pkt, struct iovec *dst,
		     unsigned max);
const struct dr_qp_stats *dr_qp_stats(const struct dr_qp *qp);
/* DR_QP_DEFER_ACK: the caller's burst of input is handled.  Restarts the
 * retransmit timer if the burst made progress (comp.c
 * dr_comp_rearm_settle), sends the held acknowledgement, if any, and lets
 * a requester that holds after a timeout's probe go on once its hold has
 * passed (comp.c dr_comp_probe_settle; otherwise the QP's timer does).
 * dr_qp_flush_due:
 * there is something for it to do; the caller then flushes at the end of
 * the burst. */
void dr_qp_flush(struct dr_qp *qp);
bool dr_qp_flush_due(const struct dr_qp *qp);
/* DR_QP_DEFER_ACK: the caller is about to send a burst for this QP (a post): a lazy ACK held
 * for DR_QP_LAZY_RIPE_NS or more (dr_qp_set_lazy_ack) is held as an asked one, to leave with
 * that burst instead of alone later (dr_qp_flush_due); returns whether it did.  Three quarters of
 * the delay: an 8 B ping-pong over a veth rode an ACK every four round trips instead of every
 * three, 3.00 against 3.15 us a half round trip (medians of 8 alternated runs, bench/PROFILE.md
 * section 7). */
#define DR_QP_LAZY_RIPE_NS (DR_QP_LAZY_ACK_NS / 4 * 3)
bool dr_qp_ack_ripen(struct dr_qp *qp);
/* Send the ACK held, a lazy one (dr_qp_set_lazy_ack) too: the QP is going away. */
void dr_qp_flush_ack(struct dr_qp *qp);
/* Run expired timers (retransmit, RNR, pacing, a probe's hold, a lazy
 * ACK's delay) against ops->now_ns.  DR_QP_DEFER_ACK: a lazy ACK come due
 * is left held (dr_qp_flush_due), for the caller's next flush. */
void dr_qp_tick(struct dr_qp *qp);
uint64_t dr_qp_deadline_ns(const struct dr_qp *qp);

/* Read-only views for the layers above (struct dr_qp is the engine's). */
uint32_t dr_qp_num(const struct dr_qp *qp);
enum dr_qp_state dr_qp_state(const struct dr_qp *qp);
/* The QP's attributes as they stand: sq_psn is the next PSN the requester
 * sends, rq_psn the next the responder expects (the rest as modified). */
void dr_qp_query(const struct dr_qp *qp, struct dr_qp_attr *attr);
/* Work requests dr_qp_post_send / dr_qp_post_recv would take now.  On a
 * QP with nothing outstanding this is the queue's depth: max_send_wr or
 * max_recv_wr rounded up to a power of two. */
uint32_t dr_qp_sq_free(const struct dr_qp *qp);
uint32_t dr_qp_rq_free(const struct dr_qp *qp);
/* The retransmit timeout the requester arms next (adaptive estimate and
 * backoff included), in ns; 0 when the QP has no timer (timeout 0). */
uint64_t dr_qp_rto_ns(const struct dr_qp *qp);

/* The kernel's rdma_get_udp_sport(): a stable 0xC000..0xFFFF source port
 * from the flow label or, if it is 0, from both QPNs (A.3). */
uint16_t dr_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn);
/* 4.096 us * 2^exp (IBA 9.7.6); 0 for exp 0 (no timer). */
uint64_t dr_qp_timeout_ns(unsigned exp);
/* An error NAK syndrome's reason in words ("sequence error", "remote access
 * error", ...), as the annotations (struct dr_qp_ops.note) and droce-replay
 * give it. */
const char *dr_qp_nak_name(uint8_t syndrome);

#endif /* DR_QP_H */
