/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * qp_priv.h - the QP engine's own header: the QP and WQE structures and
 * what qp.c, req.c, resp.c and comp.c call in each other.  Only src/qp
 * (and the tests and fuzzers of its internals) include it; src/fi has
 * include/dr_qp.h alone on its path, so the rule that it uses the engine
 * only through that API is the compiler's to enforce.
 */
#ifndef DR_QP_PRIV_H
#define DR_QP_PRIV_H

#include "dr_qp.h"

/* ==== Pacing ============================================================ */

/* Requester pacing (B.1, B.2): at most this many PSNs unacknowledged, and
 * AckReq at least every DR_QP_MAX_PKT_PER_ACK packets. */
#ifndef DR_QP_MAX_UNACKED_PSNS
#define DR_QP_MAX_UNACKED_PSNS 128
#endif
#define DR_QP_MAX_PKT_PER_ACK DR_QP_ACK_PKTS_MAX
/* Unasked ACKs (dr_qp_set_lazy_ack) stand in for AckReq while at most this
 * many WRs are outstanding (dr_qp_lazy_ok) */
#define DR_QP_LAZY_WRS 8
/* Go-back-N resends what is in flight after a loss, so the window in
 * flight shrinks on loss: halved on each retry (not below DR_QP_MIN_CWND),
 * one PSN more per ACK that makes progress, up to DR_QP_MAX_UNACKED_PSNS
 * or the QP's max_window;
 * AckReq at least every cwnd/2 packets so that ACKs keep it open. */
#define DR_QP_MIN_CWND 16
/* An RDMA READ is asked for in requests of at most this many response
 * packets (qp->read_chunk), on a grid fixed from the READ's first PSN (a
 * resend from the middle of one asks for the rest of that request only,
 * which the responder's resource then covers, B.7), at most two requests
 * of a READ outstanding, each holding one of max_rd_atomic.  The window
 * then bounds READ responses in flight as it bounds requests, at twice its
 * size (dr_req_read_gate): two requests of 126 at the full window, so a
 * READ of 4 MiB no longer arrives as 4,096 back-to-back frames that
 * overrun the receiver's ring (512 slots).  126 at path MTU 1024 is a
 * FIRST, two super-frames of 62 MIDDLEs and a LAST.  Requests of 64 within
 * the window (as droce asked before) were 5-10 % slower over a veth, and a
 * window of 252 for everything made 64 KiB WRITEs at path MTU 4096 7-14 %
 * slower (bench/PROFILE.md section 7, "Stop 41"); READ responses are the
 * peer's frames, never ECN-capable (cc.c), paced by this window alone.
 * A READ that starts while twice the window is less than a request of 126
 * (cut by losses or CNPs, or a DR_QP_CC start) asks in requests of
 * DR_QP_READ_CHUNK_MIN for good (w->rd_chunk), as many responses at once
 * as before.  A QP whose max_window is less than the engine's (af_xdp's
 * 64, dr_port_max_window) asks in requests of its max_window, one in
 * flight, as before; the responder knows both sizes (resp.c). */
#define DR_QP_READ_CHUNK     126
#define DR_QP_READ_CHUNK_MIN DR_QP_WINDOW_MIN
#define DR_QP_READ_REQS	     2
_Static_assert(DR_QP_READ_REQS == 2 && DR_QP_READ_CHUNK <= DR_QP_MAX_UNACKED_PSNS,
	       "two READ requests fit twice the window");
/* the CM carries IRD and ORD in a byte; one-packet READs up to the window
 * need as many */
_Static_assert(DR_QP_RD_DEPTH <= 255 && DR_QP_RD_DEPTH >= DR_QP_MAX_UNACKED_PSNS,
	       "the READ/atomic depth covers the window and fits the CM's byte");

/* Bytes of one frame's annotations held by the engine (struct dr_qp_ops.note). */
#define DR_QP_NOTE_LEN 256

/* Congestion control (DR_QP_CC, cc.c, docs/protocol.md B.11).  A receiver
 * sends at most one CNP a DR_CC_CNP_GAP_NS per QP (the annex leaves the
 * interval to the implementation; DCQCN's NP used 50 us); a sender cuts
 * its rate at most once a DR_CC_CUT_GAP_NS.  alpha moves by 1/DR_CC_G_INV
 * a DR_CC_ALPHA_NS; the rate rises each DR_CC_PERIOD_NS: DR_CC_FAST_STEPS
 * steps of fast recovery, as many of additive increase (DR_CC_AI_MBPS),
 * then hyper increase (DR_CC_HAI_MBPS more each step), never below
 * DR_CC_MIN_MBPS; at DR_CC_MAX_MBPS the limit ends. */
#define DR_CC_CNP_GAP_NS 50000u
#define DR_CC_CUT_GAP_NS 50000u
#define DR_CC_ALPHA_NS	 55000u
#define DR_CC_G_INV	 16u
#define DR_CC_PERIOD_NS	 100000u
#define DR_CC_FAST_STEPS 5u
#define DR_CC_AI_MBPS	 40u
#define DR_CC_HAI_MBPS	 200u
#define DR_CC_MIN_MBPS	 10u
#define DR_CC_MAX_MBPS	 100000u
#define DR_CC_MEASURE_NS 100000u
/* A paced QP asks for an ACK at least every half smoothed round trip, at
 * most this often (cc.c dr_cc_ackreq). */
#define DR_CC_ACKREQ_MIN_NS 50000u
/* A go-back-N cuts the rate only above this much standing queue (cc.c
 * dr_cc_loss). */
#define DR_CC_LOSS_QUEUE_NS 250000u
/* A CNP that cuts the rate halves the PSN window too, not below this
 * (cc.c dr_cc_cnp_input); a loss then never raises it to DR_QP_MIN_CWND. */
#define DR_CC_MIN_CWND 4u
/* The window a QP with congestion control starts with, growing one PSN per
 * ACK that makes progress up to max_window, as TCP's slow start.  Started
 * at max_window (128), every QP through a bottleneck put its whole window
 * into the queue at once, before any CNP could come back: through
 * netns-cc's 40 Mbit/s tbf (64 KiB queue) 4 QPs resent 59 % of what they
 * resent without congestion control, 30-37 % starting at 16
 * (bench/PROFILE.md section 8, "Stop 30"). */
#define DR_CC_INIT_CWND DR_QP_MIN_CWND
/* The pacer's bucket: this much sending time at the current rate, and at
 * least two frames, may leave back to back.  The deadline that refills it
 * is run by the caller's timers (src/fi: 20 us granularity), so a bucket
 * shorter than a few timer ticks would only add wake-ups. */
#define DR_CC_BURST_NS 64000u

/* ==== Work requests by kind ============================================== */

/* Where packet k of a message of n packets sits in it (IBA 9.7.3.1). */
enum dr_pos { DR_POS_ONLY, DR_POS_FIRST, DR_POS_MIDDLE, DR_POS_LAST, DR_POS_NUM };

static inline enum dr_pos dr_pos_of(uint32_t k, uint32_t n)
{
	if (n == 1)
		return DR_POS_ONLY;
	if (k == 0)
		return DR_POS_FIRST;
	return k + 1 < n ? DR_POS_MIDDLE : DR_POS_LAST;
}

/* What each kind of send WR is (qp.c dr_wr_tab): the opcode of its
 * request packets by position (IBA table 38; a READ request and an atomic
 * are one packet whatever part of the message they ask for) and the
 * opcode its completion reports. */
struct dr_wr_info {
	uint8_t opcode[DR_POS_NUM];
	enum dr_wc_opcode wc;
};
extern const struct dr_wr_info dr_wr_tab[DR_WR_NUM];

/* The opcode of request packet k of n of a WR of kind op. */
static inline uint8_t dr_wr_opcode(enum dr_wr_opcode op, uint32_t k, uint32_t n)
{
	return dr_wr_tab[op].opcode[dr_pos_of(k, n)];
}
/* The opcode table's flags of a WR kind's first request: its class
 * (DR_OPF_SEND, _WRITE, _READ, _ATOMIC) among them. */
static inline uint32_t dr_wr_opf(enum dr_wr_opcode op)
{
	return dr_opcode(dr_wr_tab[op].opcode[DR_POS_ONLY])->flags;
}
/* A READ or an atomic: holds one of max_rd_atomic (ORD) while outstanding,
 * answered by its own responses, never by an ACK. */
static inline bool dr_wr_is_rd_atomic(enum dr_wr_opcode op)
{
	return dr_wr_opf(op) & (DR_OPF_READ | DR_OPF_ATOMIC);
}
static inline bool dr_wr_is_atomic(enum dr_wr_opcode op)
{
	return dr_wr_opf(op) & DR_OPF_ATOMIC;
}

/* ==== QP model ========================================================== */

/* Requester (req.c): what stops the next packet. */
enum dr_req_state {
	DR_REQ_IDLE,	    /* nothing to send */
	DR_REQ_SEND,	    /* sending packets */
	DR_REQ_WAIT_WINDOW, /* the window's PSNs unacknowledged (B.1, rxe) */
	DR_REQ_WAIT_ORD,    /* max_rd_atomic READ/atomics outstanding or a fence */
	DR_REQ_WAIT_RNR,    /* RNR NAK: waiting for the RNR timer (B.5) */
	DR_REQ_WAIT_RATE,   /* DR_QP_CC: the pacer's tokens are spent (B.11) */
	DR_REQ_ERROR,	    /* QP in error: nothing more is sent */
	DR_REQ_NUM
};
extern const char *const dr_req_state_names[DR_REQ_NUM];

enum dr_wqe_state {
	DR_WQE_POSTED,	/* not yet transmitted */
	DR_WQE_PENDING, /* PSNs assigned, (partly) sent, not acknowledged */
	DR_WQE_DONE,	/* acknowledged / answered; completion due */
};

struct dr_send_wqe {
	struct dr_send_wr wr; /* wr.sg_list points to sge[] below */
	struct dr_sge sge[DR_QP_MAX_SGE];
	uint8_t inline_data[DR_QP_MAX_INLINE];
	uint64_t length;
	enum dr_wqe_state state;
	uint32_t first_psn;
	uint32_t npsn;	   /* PSNs the message occupies (READ: one per response) */
	uint32_t rsp_psns; /* READ: response packets placed so far */
	bool ord_token;	   /* an atomic: holds one of max_rd_atomic */
	uint8_t rd_tokens; /* a READ: requests outstanding, one of max_rd_atomic each */
	uint32_t rd_chunk; /* a READ: responses a request asks for, its grid's (set as it starts) */
};

struct dr_recv_wqe {
	struct dr_recv_wr wr;
	struct dr_sge sge[DR_QP_MAX_SGE];
	uint64_t length;
};

/* One responder resource (IBA 9.7.5.1 "responder resources"): a READ or
 * an atomic already executed, kept for replay of duplicates (B.7). */
struct dr_rd_res {
	bool valid;
	bool atomic;
	uint32_t first_psn, last_psn;
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
	uint64_t orig; /* atomic: the original value returned */
};

/* Congestion control state (cc.c); rates in Mb/s. */
struct dr_cc {
	bool on;	      /* DR_QP_CC */
	bool limited;	      /* a cut happened and the rate has not recovered */
	uint32_t rate_mbps;   /* DCQCN's current rate RC */
	uint32_t target_mbps; /* and target rate RT */
	uint32_t alpha;	      /* DR_CC_ONE = 1 */
	uint32_t stage;	      /* increase periods since the last cut */
	bool cut_any;
	uint64_t cut_ns, inc_ns, alpha_ns;
	int64_t tokens; /* the pacer's bucket, bytes; may go one frame negative */
	uint64_t tok_ns;
	uint64_t pace_ns; /* DR_REQ_WAIT_RATE until then; 0: no wait */
	uint64_t meas_ns, meas_bytes;
	uint32_t meas_pkts;  /* packets in the period so far */
	uint32_t meas_every; /* read the clock every this many packets (>= 1) */
	uint32_t meas_left;  /* packets before the next read */
	uint32_t meas_mbps;  /* measured sending rate */
	uint64_t ackreq_ns; /* the last AckReq while limited (dr_cc_ackreq) */
	bool cnp_any;	    /* the notification point's last CNP, at cnp_ns */
	uint64_t cnp_ns;
};

struct dr_qp {
	uint32_t qpn;
	enum dr_qp_state state;
	unsigned flags;	     /* enum dr_qp_flags */
	uint32_t max_window; /* PSNs: DR_QP_MAX_UNACKED_PSNS or the init_attr's */
	/* READ requests' responses: DR_QP_READ_CHUNK within twice the window
	 * (DR_QP_READ_CHUNK_MIN for a READ that starts while twice the window
	 * is less), or, with a max_window below the engine's, max_window
	 * within it */
	uint32_t read_chunk, read_mult;
	uint32_t ack_pkts;   /* AckReq at least every this many (dr_qp_set_ack_pkts) */
	bool one_size;	     /* packets of one size (dr_qp_set_one_size) */
	bool lazy_ack;	     /* ACKs unasked, AckReq only where awaited (dr_qp_set_lazy_ack) */
	uint64_t rto_floor_init_ns; /* the init_attr's first floor (DR_QP_ADAPTIVE_RTO) */
	struct dr_qp_attr attr;
	const struct dr_qp_ops *ops;
	void *ctx;
	struct dr_mr_table *mrt;
	uint64_t *port_drops; /* struct dr_qp_init_attr.port_drops */

	struct dr_pkt_desc tmpl; /* addressing for every frame */
	uint16_t ip_id;
	uint8_t *frame;	 /* scratch for one frame */
	uint8_t *gather; /* scratch for one packet's payload */

	struct {
		struct dr_send_wqe *ring;
		uint32_t mask;
		uint32_t head; /* next free slot (posts), free-running */
		uint32_t tail; /* oldest not completed, free-running */
	} sq;
	struct {
		struct dr_recv_wqe *ring;
		uint32_t mask;
		uint32_t head, tail;
	} rq;

	struct {
		enum dr_req_state state;
		uint32_t wqe;	     /* SQ index of the WQE being sent */
		uint32_t psn;	     /* next PSN to send */
		uint32_t noack_pkts; /* packets since the last AckReq (B.2) */
		uint32_t ord_used;   /* READ requests and atomics holding a token */
		uint32_t cwnd;	     /* PSNs allowed unacknowledged */
		/* an early timeout (DR_QP_ADAPTIVE_RTO) resends one packet,
		 * with AckReq, and nothing more until an answer makes progress:
		 * a timeout that was spurious costs one duplicate, not a window */
		bool probe;
		/* DR_QP_DEFER_ACK: the probe has been answered, and nothing
		 * past it yet; the requester holds until the caller's burst of
		 * input is handled (dr_qp_flush) and probe_hold_ns has come,
		 * as answers to the packets sent before the timeout may still
		 * come (dr_comp_probe_settle) */
		bool probe_wait;
		uint64_t probe_hold_ns;
		uint32_t probe_end; /* one past the PSNs the probe asked for */
		/* where the last rewind took the requester from, and its
		 * window: an answer past the probe's shows the packets in
		 * flight arrived, and resumes there instead of resending them
		 * (dr_req_undo; READ requests take their tokens back) */
		bool undo_ok;
		uint32_t undo_psn, undo_wqe, undo_cwnd;
		/* the annotation of the next resend of note_psn ("retransmit:
		 * ..."), written by the completer when it rewinds, only while
		 * someone listens (dr_qp_noting) */
		uint32_t note_psn;
		char note[DR_QP_NOTE_LEN];
	} req;

	struct {
		uint32_t psn;	  /* first PSN not yet acknowledged */
		uint32_t max_psn; /* one past the highest PSN ever sent */
		uint8_t retry_left;
		uint8_t rnr_left;
		bool retry_started;    /* go-back-N begun, no progress since */
		uint8_t backoff;       /* timeouts since the last progress */
		uint64_t rto_armed_ns; /* the timeout the deadline was set with */
		/* DR_QP_ADAPTIVE_RTO: one round trip timed at a time (Karn:
		 * never across a resend) */
		bool rtt_on;
		uint32_t rtt_psn;
		uint64_t rtt_start_ns;
		uint64_t srtt_ns, rttvar_ns, rto_base_ns;
		uint64_t rtt_min_ns; /* the least round trip timed */
		/* spurious timeouts (comp.c dr_comp_spurious): the timeout
		 * never goes below rto_floor_ns, which halves every
		 * DR_RTO_FLOOR_DECAY samples and DR_RTO_FLOOR_HOLD_NS (since
		 * floor_ns) without another */
		bool spur_check;   /* a timeout resent; duplicates would show it spurious */
		uint32_t spur_psn; /* the first PSN it resent */
		uint64_t spur_rto_ns;
		/* when the timer that fired first since the last progress had
		 * been armed: a duplicate answer this long after it shows how
		 * late an answer may come (dr_comp_spurious) */
		uint64_t spur_since_ns;
		/* and it was answered: without a second answer by the next
		 * timeout it was a loss (dr_comp_timeout) */
		bool spur_answered;
		uint64_t rto_floor_ns;
		uint32_t floor_samples;
		uint64_t floor_ns;
		uint64_t rto_deadline_ns;
		uint64_t rnr_deadline_ns;
		uint32_t rnr_tries; /* RNR waits since the last progress */
		/* DR_QP_DEFER_ACK: progress was made while the retransmit
		 * timer ran; its deadline moves once the caller's burst of
		 * input is handled (dr_comp_rearm_settle: dr_qp_flush, or
		 * dr_qp_tick before it judges the deadline) */
		bool rearm_due;
	} comp;

	struct {
		uint32_t psn;  /* expected PSN */
		uint32_t msn;  /* messages completed (IBA 9.7.5.1) */
		bool nak_sent; /* one NAK per gap (B.6) */
		bool nak_rnr;  /* that NAK was an RNR NAK: what follows is held, not lost */
		bool ack_due;  /* DR_QP_DEFER_ACK: an ACK for ack_psn is held */
		/* it answers no AckReq (dr_qp_set_lazy_ack): it goes by
		 * lazy_ns unless something takes it earlier */
		bool ack_lazy;
		bool ack_unasked; /* the last packet it covers asked for none */
		uint64_t lazy_ns;
		uint32_t ack_psn, ack_msn;
		uint32_t ack_from; /* the first PSN whose ACK was held */
		/* the multi-packet message in progress: its class,
		 * DR_OPF_SEND or DR_OPF_WRITE; 0 when none is */
		uint32_t in;
		bool rwqe;	   /* a receive WQE has been taken (rq.tail) */
		uint64_t rcv_off;  /* bytes placed into it */
		uint8_t *wr_ptr;   /* WRITE: next byte to write */
		uint64_t wr_resid; /* WRITE: bytes still due */
		uint64_t wr_len;   /* WRITE: RETH length, for WRITE_WITH_IMM */
		struct dr_rd_res *res;
		uint32_t nres, res_next;
		/* the READ request that would continue the last one on
		 * its grid (req.c): PSN, address, key, and the run's request
		 * size (DR_QP_READ_CHUNK or DR_QP_READ_CHUNK_MIN packets) */
		uint32_t rd_cont_psn, rd_cont_rkey, rd_cont_n;
		uint64_t rd_cont_va;
		bool rd_cont;
	} resp;

	struct dr_cc cc;

	uint64_t deadline_ns; /* last value given to timer_set */
	struct dr_qp_stats stats;
	/* annotations: the frame dr_qp_input is handling (notes about it
	 * go on it), and notes for the next frame this QP sends */
	const struct dr_pkt *rx_pkt;
	char tx_note[DR_QP_NOTE_LEN];
};

/* ==== Engine internals (qp.c, req.c, resp.c, comp.c) ==================== */

static inline struct dr_send_wqe *dr_sq_wqe(struct dr_qp *qp, uint32_t idx)
{
	return &qp->sq.ring[idx & qp->sq.mask];
}
static inline struct dr_recv_wqe *dr_rq_wqe(struct dr_qp *qp, uint32_t idx)
{
	return &qp->rq.ring[idx & qp->rq.mask];
}
/* Packets (= PSNs) a message of len bytes takes at this path MTU. */
static inline uint32_t dr_qp_npkts(const struct dr_qp *qp, uint64_t len)
{
	return len ? (uint32_t)((len + qp->attr.path_mtu - 1) / qp->attr.path_mtu) : 1;
}

/* qp.c */
/* Count one dropped frame (QP and port). */
void dr_qp_drop(struct dr_qp *qp, enum dr_rx_drop why);
/* RNR NAK timer code -> delay (IBA table 45). */
uint64_t dr_rnr_timer_ns(unsigned code);
void dr_qp_log(struct dr_qp *qp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Annotations (struct dr_qp_ops.note): test dr_qp_noting() before working
 * out what a note says; dr_qp_note() formats and hands it over.
 * dr_qp_note_event(): a note on the frame dr_qp_input is handling, or,
 * outside it, on the next frame this QP sends.  dr_qp_note_add() joins
 * a note to buf (size DR_QP_NOTE_LEN) with "; ". */
bool dr_qp_noting(const struct dr_qp *qp);
void dr_qp_note(struct dr_qp *qp, const void *frame, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void dr_qp_note_event(struct dr_qp *qp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dr_qp_note_add(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An opcode's name in notes: "READ", "ATOMIC", else the table's without "RC_". */
const char *dr_qp_note_op(const struct dr_opcode_info *op);
uint64_t dr_qp_now(struct dr_qp *qp);
void dr_qp_timer_update(struct dr_qp *qp);
/* The requester may count on unasked ACKs (dr_qp_set_lazy_ack): at most
 * DR_QP_LAZY_WRS WRs are outstanding, at most half its SQ (a stream asks
 * at every message's end, as it did, so that its window and SQ keep
 * moving), and its timeout is not shorter than four times their delay
 * (or infinite). */
static inline bool dr_qp_lazy_ok(const struct dr_qp *qp)
{
	uint32_t out = qp->sq.head - qp->sq.tail;
	uint64_t t;

	if (out > DR_QP_LAZY_WRS || out > (qp->sq.mask + 1) / 2)
		return false;
	t = dr_qp_timeout_ns(qp->attr.timeout);
	return !t || t >= 4ull * DR_QP_LAZY_ACK_NS;
}
/* Fill d with this QP's addressing and the BTH basics. */
void dr_qp_desc(struct dr_qp *qp, struct dr_pkt_desc *d, uint8_t opcode, uint32_t psn);
void dr_qp_send_frame(struct dr_qp *qp, const struct dr_pkt_desc *d);
/* The same, with an annotation (NULL or "": none) for the frame. */
void dr_qp_send_frame_note(struct dr_qp *qp, const struct dr_pkt_desc *d, const char *note);
/* To ERROR; why: the cause, for the annotation "QP state: X -> ERROR (why)". */
void dr_qp_error(struct dr_qp *qp, const char *why);
void dr_qp_complete(struct dr_qp *qp, const struct dr_wc *wc);
/* The completion status an error NAK's AETH syndrome stands for (B.9). */
enum dr_wc_status dr_qp_nak_status(uint8_t syndrome);
/* Copy between an SGE list and a flat buffer, starting at byte off of the
 * list.  The SGEs were checked and turned into local pointers at post time
 * (their lkey is then DR_LKEY_NONE). */
void dr_sge_copy_out(const struct dr_sge *sge, unsigned n, uint64_t off, void *dst, uint64_t len);
void dr_sge_copy_in(const struct dr_sge *sge, unsigned n, uint64_t off, const void *src,
		    uint64_t len);
/* [off, off+len) of the list as at most max segments: their number, or 0
 * if the list does not hold it all or it takes more. */
unsigned dr_sge_iov(const struct dr_sge *sge, unsigned n, uint64_t off, uint64_t len,
		    struct iovec *iov, unsigned max);
/* A pointer to [off, off+len) of the list if it lies in one SGE, else NULL. */
const uint8_t *dr_sge_span(const struct dr_sge *sge, unsigned n, uint64_t off, uint64_t len);

/* req.c */
void dr_req_run(struct dr_qp *qp);
void dr_req_rewind(struct dr_qp *qp);
bool dr_req_undo(struct dr_qp *qp);
void dr_req_set_state(struct dr_qp *qp, enum dr_req_state s);

/* comp.c */
void dr_comp_input(struct dr_qp *qp, const struct dr_pkt *pkt);
/* dr_qp_place for a response and for a request, after dr_qp_rx_check */
unsigned dr_comp_place(const struct dr_qp *qp, const struct dr_pkt *pkt, struct iovec *dst,
		       unsigned max);
unsigned dr_resp_place(const struct dr_qp *qp, const struct dr_pkt *pkt, struct iovec *dst,
		       unsigned max);
void dr_comp_timeout(struct dr_qp *qp);
void dr_comp_probe_settle(struct dr_qp *qp);
void dr_comp_rearm_settle(struct dr_qp *qp);
void dr_comp_rnr_expired(struct dr_qp *qp);
void dr_comp_arm(struct dr_qp *qp);
void dr_comp_rtt_start(struct dr_qp *qp, uint32_t psn);

/* cc.c */
void dr_cc_init(struct dr_qp *qp);
/* ECT(0) on a data packet's IP header, when DR_QP_CC */
void dr_cc_mark(const struct dr_qp *qp, struct dr_pkt_desc *d);
/* Does this request packet ask for an ACK (asked: B.2's own rules say so)?
 * A paced QP also asks by time. */
bool dr_cc_ackreq(struct dr_qp *qp, bool asked);
/* May the requester send a packet now?  If not, the pacer's deadline is
 * set (DR_REQ_WAIT_RATE); dr_cc_paced() resumes it. */
bool dr_cc_may_send(struct dr_qp *qp);
void dr_cc_sent(struct dr_qp *qp, uint32_t payload_len);
void dr_cc_paced(struct dr_qp *qp);
/* A received frame for this QP: CNP if it is marked CE */
void dr_cc_ce(struct dr_qp *qp, const struct dr_pkt *pkt);
void dr_cc_cnp_input(struct dr_qp *qp, const struct dr_pkt *pkt);
void dr_cc_loss(struct dr_qp *qp);

/* resp.c */
void dr_resp_input(struct dr_qp *qp, const struct dr_pkt *pkt);
void dr_resp_flush_ack(struct dr_qp *qp);

#endif /* DR_QP_PRIV_H */
