/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * droce-replay - what would droce have done with this trace?
 *
 * Reads a capture (pcapng through tools/pcapng.c, or classic pcap, read
 * here: droce's FI_DROCE_PCAP files, tcpdump's of rdma_rxe or a NIC) and
 * feeds its RoCEv2 RC frames one by one through
 * droce's own QP engine (src/qp), then prints for each frame what the
 * receiving side's responder or completer did with it: accepted (and
 * what), a duplicate answered again, a NAK sent and why, or dropped and
 * why.  It says what droce decides, not what the captured stack decided:
 * the frames the engine sends are described, never sent anywhere.
 *
 * The two endpoints are found from the capture itself (a first pass): their
 * IP addresses, their QPNs (the DestQP of the frames sent to them, or the
 * IB CM REQ/REP), the first PSN each sends (the CM's starting PSNs, else
 * its first request), the path MTU (the CM REQ's, else the size of the
 * first/middle packets).  Each endpoint gets one engine QP in RTS.  The
 * replay has no application memory: each R_Key the requests name gets a
 * zeroed region covering every address they touch, receives are kept
 * posted (one buffer as long as the longest SEND), and the capture's R_Keys
 * are mapped to the regions' own keys before a frame reaches the engine
 * (the ICRC is checked on the frame as captured first).  A key the
 * capture's responder refused with a remote access error NAK, and never
 * honoured, gets no region, so that droce refuses it too.
 *
 * A request a replayed requester sent in the capture is posted to its QP as
 * a work request when its first packet appears, so that its completer has
 * it outstanding when the capture's responses arrive; the engine builds its
 * own frames for it, which are listed, not compared.  The engine's clock is
 * the capture's: retransmit timers expire between frames as they would
 * have.  --as responder (requester) leaves the requesters (responders) to
 * the capture: their frames are listed as not replayed.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_qp.h"
#include "dr_roce.h"
#include "pcapng.h"

#define RP_MAX_REGION (1ull << 30) /* bytes of memory the replay may allocate per R_Key */
#define RP_MAX_KEYS   256
#define RP_RECV_DEPTH 64
#define RP_LINE	      512
#define RP_MAX_FILL   256 /* PSNs missing from a requester's frames that the replay fills */

struct rp_frame {
	uint8_t *data;
	uint32_t len;
	uint32_t origlen; /* on the wire: more than len when the snaplen cut it */
	uint64_t ts_ns;
	uint64_t number;
};

/* An R_Key the capture's requests name, and the region standing in for it */
struct rp_key {
	uint32_t rkey;
	uint64_t lo, hi; /* [lo, hi): every address touched */
	uint8_t *mem;
	uint32_t local; /* the region's key in the engine's table */
	/* the capture's responder answered a request naming it with a remote
	 * access error NAK / positively (by the request's PSN) */
	unsigned refused, confirmed;
};

/* A request naming an R_Key, for matching the capture's answer to it */
struct rp_keyreq {
	const struct rp_end *to;
	uint32_t psn, rkey;
};
static struct rp_keyreq *keyreqs;
static size_t nkeyreqs, keyreqs_cap;

struct rp_end {
	char name; /* 'A', 'B' */
	bool ipv6;
	uint32_t ip4;
	uint8_t ip6[16];
	uint8_t mac[6];
	uint32_t qpn; /* the replayed connection's */
	bool has_qpn;
	struct {
		uint32_t qpn;
		unsigned frames; /* RC frames the capture sends to it */
		bool cm;	 /* announced by the capture's CM */
	} qpns[64];
	unsigned nqpns;
	uint32_t sq_psn; /* the first PSN it sends */
	bool has_psn;
	uint32_t first_psn; /* of the first request the capture shows it send */
	uint32_t next_psn;  /* after the last request posted to its requester */
	bool has_first;
	const char *psn_from;
	uint64_t max_recv; /* longest SEND message sent to it */
	struct rp_key keys[RP_MAX_KEYS];
	unsigned nkeys, nrefused;
	bool resp, req; /* its responder, its requester+completer are replayed */
	struct dr_mr_table mrt;
	struct dr_qp *qp;
	uint8_t *rbuf;
	uint32_t recvs; /* receives posted and not completed */
};

static struct rp_end ends[2] = {{.name = 'A'}, {.name = 'B'}};
static unsigned nends;
static struct rp_frame *frames;
static size_t nframes;
static uint64_t clock_ns;
static uint32_t pmtu;
static const char *pmtu_from = "default";
/* ACK timeout (4.096 us * 2^n) when the capture has no CM REQ: perftest's;
 * READ/atomic depth both ways: enough for any capture's outstanding ones */
static uint8_t ack_timeout = 14, max_rd = 128;
static uint8_t *scratch; /* the replayed requesters' local buffers */
static size_t scratch_len;

/* ---- what one step did: collected by the callbacks, printed after ---- */

struct rp_tx {
	uint8_t opcode;
	uint32_t psn;
	uint8_t syndrome;
	uint32_t msn;
	uint32_t payload_len;
	uint64_t orig;
};

#define RP_MAX_TX 4096
static struct {
	enum dr_qp_state state; /* its QP's state when the step began */
	uint8_t nak_rcvd;	/* the error NAK its completer was given, or 0 */
	struct rp_tx tx[RP_MAX_TX];
	unsigned ntx;
	struct dr_wc wc[64];
	unsigned nwc, nwc_more; /* listed; past the list, counted */
	unsigned nflushed[2];	/* send, receive work requests flushed */
	struct dr_remote_op rop[8];
	unsigned nrop;
	char notes[16][RP_LINE];
	unsigned nnotes;
} step;

static struct rp_end *end_of(const struct dr_qp *qp)
{
	return qp == ends[0].qp ? &ends[0] : &ends[1];
}

static void cb_xmit(void *ctx, struct dr_qp *qp, const void *frame, size_t len)
{
	struct dr_pkt p;
	struct rp_tx *t;

	(void)ctx;
	(void)qp;
	if (step.ntx == RP_MAX_TX || dr_pkt_parse(frame, len, DR_PARSE_NO_ICRC, &p) != DR_PKT_OK)
		return;
	t = &step.tx[step.ntx++];
	memset(t, 0, sizeof(*t));
	t->opcode = p.opcode;
	t->psn = p.psn;
	t->payload_len = p.payload_len;
	if (dr_pkt_aeth(&p)) {
		t->syndrome = dr_aeth_syndrome(dr_pkt_aeth(&p));
		t->msn = dr_aeth_msn(dr_pkt_aeth(&p));
	}
	if (dr_pkt_atmack(&p))
		t->orig = be64toh(dr_pkt_atmack(&p)->orig);
}

static uint64_t cb_now(void *ctx)
{
	(void)ctx;
	return clock_ns;
}

static void cb_complete(void *ctx, struct dr_qp *qp, const struct dr_wc *wc)
{
	(void)ctx;
	bool recv = wc->opcode == DR_WC_RECV || wc->opcode == DR_WC_RECV_WRITE_IMM;

	if (recv && !wc->no_wqe)
		end_of(qp)->recvs--;
	/* a QP gone to ERROR flushes everything: counted, not listed */
	if (wc->status == DR_WC_WR_FLUSH_ERR)
		step.nflushed[recv]++;
	else if (step.nwc < sizeof(step.wc) / sizeof(step.wc[0]))
		step.wc[step.nwc++] = *wc;
	else
		step.nwc_more++;
}

static void cb_remote_op(void *ctx, struct dr_qp *qp, const struct dr_remote_op *op)
{
	(void)ctx;
	(void)qp;
	if (step.nrop < sizeof(step.rop) / sizeof(step.rop[0]))
		step.rop[step.nrop++] = *op;
}

static void cb_note(void *ctx, struct dr_qp *qp, const void *frame, size_t len, const char *text)
{
	(void)ctx;
	(void)qp;
	(void)frame;
	(void)len;
	if (step.nnotes < sizeof(step.notes) / sizeof(step.notes[0]))
		snprintf(step.notes[step.nnotes++], RP_LINE, "%s", text);
}

static const struct dr_qp_ops rp_ops = {
    .xmit = cb_xmit,
    .now_ns = cb_now,
    .complete = cb_complete,
    .remote_op = cb_remote_op,
    .note = cb_note,
};

/* The lines already printed for this frame: a note that says the same is
 * not repeated. */
static char printed[64][RP_LINE];
static unsigned nprinted;

static void say(const struct rp_end *e, const char *role, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const struct rp_end *e, const char *role, const char *fmt, ...)
{
	char text[RP_LINE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	printf("  %c %s: %s\n", e->name, role, text);
	if (nprinted < sizeof(printed) / sizeof(printed[0]))
		memcpy(printed[nprinted++], text, sizeof(text));
}

static void step_begin(struct rp_end *e)
{
	step.ntx = step.nwc = step.nwc_more = step.nrop = step.nnotes = 0;
	step.nflushed[0] = step.nflushed[1] = 0;
	step.state = dr_qp_state(e->qp);
	step.nak_rcvd = 0;
}

/* ---- AETH and RNR texts ---------------------------------------------- */

/* IBA table 45: the RNR NAK timer field in hundredths of a millisecond,
 * eight codes a line */
/* clang-format off */
static const uint32_t rnr_centi_ms[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12,
	16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072,
	4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};
/* clang-format on */

static void say_rnr_ms(char *buf, size_t len, uint8_t code)
{
	uint32_t c = rnr_centi_ms[code & 31];

	snprintf(buf, len, "%" PRIu32 ".%02" PRIu32, c / 100, c % 100);
}

/* The error NAK (not a sequence one) the engine sent during the step, or 0 */
static uint8_t step_err_nak(void)
{
	unsigned i;

	for (i = 0; i < step.ntx; i++) {
		uint8_t syn = step.tx[i].syndrome;

		if (step.tx[i].opcode == DR_OP_ACK && (syn & DR_AETH_TYPE_MASK) == DR_AETH_NAK &&
		    syn != DR_AETH_NAK_PSN_SEQ)
			return syn;
	}
	return 0;
}

/* What the engine sent during a step, in words.  expect_psn, req_psn: the
 * PSN the responder expected and the one of the frame fed (a NAK's
 * "expected PSN", "received PSN"; a sequence NAK carries the expected one). */
static void say_tx(struct rp_end *e, const char *role, uint32_t expect_psn, uint32_t req_psn)
{
	unsigned i, nrsp = 0, nreq = 0;
	uint32_t rsp_first = 0, rsp_last = 0, rsp_bytes = 0, req_first = 0, req_last = 0;
	char ms[16];

	for (i = 0; i < step.ntx; i++) {
		const struct rp_tx *t = &step.tx[i];
		uint32_t f = dr_opcode(t->opcode)->flags;

		if (f & DR_OPF_REQ) {
			if (!nreq++)
				req_first = t->psn;
			req_last = t->psn;
		} else if ((f & DR_OPF_READ) && (f & DR_OPF_RSP)) {
			if (!nrsp++)
				rsp_first = t->psn;
			rsp_last = t->psn;
			rsp_bytes += t->payload_len;
		} else if (t->opcode == DR_OP_ATOMIC_ACK) {
			say(e, role,
			    "ATOMIC ACKNOWLEDGE sent: PSN %" PRIu32 ", original value 0x%" PRIx64,
			    t->psn, t->orig);
		} else if ((t->syndrome & DR_AETH_TYPE_MASK) == DR_AETH_ACK) {
			say(e, role, "ACK sent: PSN %" PRIu32 ", MSN %" PRIu32, t->psn, t->msn);
		} else if ((t->syndrome & DR_AETH_TYPE_MASK) == DR_AETH_RNR_NAK) {
			say_rnr_ms(ms, sizeof(ms), t->syndrome);
			say(e, role, "RNR NAK sent: no receive posted, asks for %s ms", ms);
		} else if (t->syndrome == DR_AETH_NAK_PSN_SEQ) {
			say(e, role,
			    "NAK sent: sequence error, expected PSN %" PRIu32
			    ", received PSN %" PRIu32,
			    t->psn, req_psn);
		} else {
			say(e, role,
			    "NAK sent: %s, expected PSN %" PRIu32 ", received PSN %" PRIu32,
			    dr_qp_nak_name(t->syndrome), expect_psn, req_psn);
		}
	}
	if (nrsp == 1)
		say(e, role, "READ response sent: PSN %" PRIu32 ", %" PRIu32 " bytes", rsp_first,
		    rsp_bytes);
	else if (nrsp)
		say(e, role,
		    "READ responses sent: %u, PSN %" PRIu32 "..%" PRIu32 ", %" PRIu32 " bytes",
		    nrsp, rsp_first, rsp_last, rsp_bytes);
	if (nreq == 1)
		say(e, "requester", "sent 1 request frame, PSN %" PRIu32, req_first);
	else if (nreq)
		say(e, "requester", "sent %u request frames, PSN %" PRIu32 "..%" PRIu32, nreq,
		    req_first, req_last);
}

static void say_wcs(struct rp_end *e)
{
	unsigned i;

	for (i = 0; i < step.nwc; i++) {
		const struct dr_wc *wc = &step.wc[i];

		if (wc->opcode == DR_WC_RECV || wc->opcode == DR_WC_RECV_WRITE_IMM) {
			char imm[32] = "";

			if (wc->has_imm)
				snprintf(imm, sizeof(imm), ", immediate 0x%08" PRIx32, wc->imm);
			if (wc->status == DR_WC_SUCCESS)
				say(e, "responder",
				    "%s completed into a receive, %" PRIu32 " bytes%s",
				    wc->opcode == DR_WC_RECV ? "SEND" : "WRITE with immediate",
				    wc->byte_len, imm);
			else
				say(e, "responder", "receive completed with %s",
				    dr_wc_status_names[wc->status]);
			continue;
		}
		say(e, "completer", "completion: wr %" PRIu64 " %s", wc->wr_id,
		    dr_wc_status_names[wc->status]);
	}
	if (step.nwc_more)
		say(e, "completer", "and %u more completions", step.nwc_more);
	if (step.nflushed[0])
		say(e, "completer", "%u work request%s flushed", step.nflushed[0],
		    step.nflushed[0] == 1 ? "" : "s");
	if (step.nflushed[1])
		say(e, "responder", "%u receive%s flushed", step.nflushed[1],
		    step.nflushed[1] == 1 ? "" : "s");
	if (dr_qp_state(e->qp) != step.state) {
		uint8_t nak = step_err_nak() ? step_err_nak() : step.nak_rcvd;
		char why[64] = "";

		if (nak)
			snprintf(why, sizeof(why), " (%s)", dr_qp_nak_name(nak));
		say(e, "QP", "QP state: %s -> %s%s", dr_qp_state_names[step.state],
		    dr_qp_state_names[dr_qp_state(e->qp)], why);
	}
}

/* One note of a comment: printed unless a line of this frame already said
 * it, or it is a state change of the replay's own set-up (the replay calls
 * dr_qp_modify there only; the engine hands such notes over with the first
 * frame the QP sends). */
static void say_note(const struct rp_end *e, const char *note, size_t len)
{
	static const char setup[] = "(modify)";
	unsigned j;

	if (!strncmp(note, "QP state: ", 10) && len >= sizeof(setup) - 1 &&
	    !memcmp(note + len - (sizeof(setup) - 1), setup, sizeof(setup) - 1))
		return;
	for (j = 0; j < nprinted; j++)
		if (strlen(printed[j]) == len && !memcmp(printed[j], note, len))
			return;
	printf("  %c note: %.*s\n", e->name, (int)len, note);
}

/* A comment is one or more notes joined by "; " (the vocabulary of
 * fi_droce(7)): one line each. */
static void say_notes(const struct rp_end *e)
{
	unsigned i;

	for (i = 0; i < step.nnotes; i++) {
		const char *n = step.notes[i], *sep;

		while ((sep = strstr(n, "; "))) {
			say_note(e, n, (size_t)(sep - n));
			n = sep + 2;
		}
		say_note(e, n, strlen(n));
	}
}

/* ---- setup: the first pass ----------------------------------------------- */

static struct rp_end *end_by_addr(const struct dr_pkt *p, bool src, bool create)
{
	unsigned i;

	for (i = 0; i < nends; i++) {
		struct rp_end *e = &ends[i];

		if (p->ip4 && !e->ipv6 && e->ip4 == ntohl(src ? p->ip4->saddr : p->ip4->daddr))
			return e;
		if (p->ip6 && e->ipv6 && !memcmp(e->ip6, src ? p->ip6->saddr : p->ip6->daddr, 16))
			return e;
	}
	if (!create || nends == 2)
		return NULL;
	ends[nends].ipv6 = !p->ip4;
	if (p->ip4)
		ends[nends].ip4 = ntohl(src ? p->ip4->saddr : p->ip4->daddr);
	else
		memcpy(ends[nends].ip6, src ? p->ip6->saddr : p->ip6->daddr, 16);
	memcpy(ends[nends].mac, src ? p->eth->src : p->eth->dst, 6);
	return &ends[nends++];
}

static void addr_str(const struct rp_end *e, char *buf, size_t len)
{
	if (e->ipv6) {
		inet_ntop(AF_INET6, e->ip6, buf, len);
	} else {
		uint32_t a = htonl(e->ip4);

		inet_ntop(AF_INET, &a, buf, len);
	}
}

static int key_touch(struct rp_end *e, uint32_t rkey, uint64_t va, uint64_t len)
{
	unsigned i;

	if (!len)
		return 0;
	for (i = 0; i < e->nkeys; i++)
		if (e->keys[i].rkey == rkey)
			break;
	if (i == e->nkeys) {
		if (e->nkeys == RP_MAX_KEYS) {
			fprintf(stderr, "droce-replay: more than %d R_Keys to one endpoint\n",
				RP_MAX_KEYS);
			return -ENOSPC;
		}
		e->keys[e->nkeys++] = (struct rp_key){.rkey = rkey, .lo = va, .hi = va + len};
		return 0;
	}
	if (va < e->keys[i].lo)
		e->keys[i].lo = va;
	if (va + len > e->keys[i].hi)
		e->keys[i].hi = va + len;
	return 0;
}

/* Room for one more of n elements of size elem in arr (capacity *cap,
 * doubled from first): the array, moved or not, or NULL (arr is left as
 * it was) when memory runs out. */
static void *grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t ncap = *cap ? 2 * *cap : first;
	void *a;

	if (n < *cap)
		return arr;
	a = realloc(arr, ncap * elem);
	if (a)
		*cap = ncap;
	return a;
}

/* Where a request's R_Key sits in its frame: RETH and AtomicETH alike
 * start with the VA (8 bytes), then the R_Key.  0 when it has neither. */
static size_t rkey_off(const struct dr_pkt *p)
{
	const void *h =
	    dr_pkt_reth(p) ? (const void *)dr_pkt_reth(p) : (const void *)dr_pkt_atmeth(p);

	return h ? (size_t)((const uint8_t *)h - p->frame) + 8 : 0;
}

static uint32_t rkey_of(const struct dr_pkt *p, size_t off)
{
	uint32_t rkey;

	memcpy(&rkey, p->frame + off, 4);
	return ntohl(rkey);
}

static int keyreq_add(const struct rp_end *to, const struct dr_pkt *p)
{
	struct rp_keyreq *a = grow(keyreqs, &keyreqs_cap, nkeyreqs, sizeof(*keyreqs), 256);

	if (!a)
		return -ENOMEM;
	keyreqs = a;
	keyreqs[nkeyreqs++] =
	    (struct rp_keyreq){.to = to, .psn = p->psn, .rkey = rkey_of(p, rkey_off(p))};
	return 0;
}

/* An R_Key the capture's responder refused (remote access error NAK to a
 * request naming it) and never honoured (no positive answer with such a
 * request's PSN) gets no region: droce, not knowing it either, refuses it
 * too.  Any other key the requests name is taken as registered. */
static void keys_judged(void)
{
	size_t i, j;
	unsigned k;

	for (i = 0; i < nframes; i++) {
		const struct rp_end *from;
		struct dr_pkt p;
		uint8_t syn;

		if (dr_pkt_parse(frames[i].data, frames[i].len, DR_PARSE_NO_ICRC, &p) !=
			DR_PKT_OK ||
		    !(p.op->flags & DR_OPF_RSP) || !(from = end_by_addr(&p, true, false)))
			continue;
		syn = dr_pkt_aeth(&p) ? dr_aeth_syndrome(dr_pkt_aeth(&p)) : DR_AETH_ACK;
		if ((syn & DR_AETH_TYPE_MASK) != DR_AETH_ACK && syn != DR_AETH_NAK_REM_ACCESS)
			continue;
		for (j = 0; j < nkeyreqs; j++) {
			struct rp_end *to = (struct rp_end *)keyreqs[j].to;

			if (to != from || keyreqs[j].psn != p.psn)
				continue;
			for (k = 0; k < to->nkeys; k++) {
				if (to->keys[k].rkey != keyreqs[j].rkey)
					continue;
				if (syn == DR_AETH_NAK_REM_ACCESS)
					to->keys[k].refused++;
				else
					to->keys[k].confirmed++;
			}
		}
	}
}

static void qpn_seen(struct rp_end *e, uint32_t qpn, unsigned n, bool cm)
{
	unsigned i;

	for (i = 0; i < e->nqpns; i++)
		if (e->qpns[i].qpn == qpn)
			break;
	if (i == e->nqpns) {
		if (i == sizeof(e->qpns) / sizeof(e->qpns[0]))
			return;
		e->nqpns++;
		e->qpns[i].qpn = qpn;
	}
	e->qpns[i].frames += n;
	e->qpns[i].cm |= cm;
}

static bool qpn_other_conn(const struct rp_end *e, uint32_t qpn)
{
	unsigned i;

	for (i = 0; i < e->nqpns; i++)
		if (e->qpns[i].qpn == qpn)
			return e->qpns[i].cm;
	return false;
}

/* A CM MAD on QP1: the REQ and REP name the QPNs and starting PSNs. */
static bool cm_mad(const struct dr_pkt *p, struct dr_mad *mad)
{
	return (p->op->flags & DR_OPF_UD) && p->dqpn == DR_GSI_QPN &&
	       !dr_mad_parse(p->payload, p->payload_len, mad) && dr_mad_is_cm(mad);
}

/* A connection the capture's CM set up: REQ and REP matched by comm ID */
struct rp_cm_conn {
	struct rp_end *x; /* who sent the REQ */
	uint32_t comm_id, qx, qy, x_psn, y_psn;
	bool have_rep;
	uint8_t mtu_code, ack_timeout;
};

#define RP_MAX_CONN 64
static struct rp_cm_conn conns[RP_MAX_CONN];
static unsigned nconns;

static void scan_cm(const struct dr_pkt *p, const struct dr_mad *mad)
{
	struct rp_end *to = end_by_addr(p, false, true), *from = end_by_addr(p, true, true);
	unsigned i;

	if (!to || !from)
		return;
	if (mad->attr_id == DR_CM_ATTR_REQ && nconns < RP_MAX_CONN) {
		struct dr_cm_req req;

		dr_cm_req_unpack(mad->body, &req);
		for (i = 0; i < nconns; i++)
			if (conns[i].comm_id == req.local_comm_id && conns[i].x == from)
				return; /* a resent REQ */
		/* the CM's starting PSN is the one its sender expects to
		 * receive (src/fi ep_cm.c): the peer's first */
		conns[nconns++] = (struct rp_cm_conn){
		    .x = from,
		    .comm_id = req.local_comm_id,
		    .qx = req.local_qpn,
		    .y_psn = req.starting_psn,
		    .mtu_code = req.path_mtu,
		    .ack_timeout = req.primary.local_ack_timeout,
		};
		qpn_seen(from, req.local_qpn, 0, true);
	} else if (mad->attr_id == DR_CM_ATTR_REP) {
		struct dr_cm_rep rep;

		dr_cm_rep_unpack(mad->body, &rep);
		for (i = 0; i < nconns; i++) {
			if (conns[i].comm_id != rep.remote_comm_id || conns[i].x != to)
				continue;
			conns[i].qy = rep.local_qpn;
			conns[i].x_psn = rep.starting_psn;
			conns[i].have_rep = true;
		}
		qpn_seen(from, rep.local_qpn, 0, true);
	}
}

/* The connection replayed: at each endpoint the QPN most frames go to */
static void choose_qpns(void)
{
	unsigned i, j;

	for (i = 0; i < nends; i++) {
		struct rp_end *e = &ends[i];
		unsigned best = 0;

		for (j = 0; j < e->nqpns; j++)
			if (e->qpns[j].frames > best) {
				best = e->qpns[j].frames;
				e->qpn = e->qpns[j].qpn;
				e->has_qpn = true;
			}
	}
	if (nends < 2)
		return;
	for (i = 0; i < nconns; i++) {
		struct rp_cm_conn *c = &conns[i];
		struct rp_end *y = c->x == &ends[0] ? &ends[1] : &ends[0];

		if (!c->have_rep || c->qx != c->x->qpn || c->qy != y->qpn)
			continue;
		c->x->sq_psn = c->x_psn;
		c->x->has_psn = true;
		c->x->psn_from = "the CM REP";
		y->sq_psn = c->y_psn;
		y->has_psn = true;
		y->psn_from = "the CM REQ";
		if (c->mtu_code >= 1 && c->mtu_code <= 5) {
			pmtu = 128u << c->mtu_code;
			pmtu_from = "the CM REQ";
		}
		if (c->ack_timeout)
			ack_timeout = c->ack_timeout;
	}
}

static int first_pass(void)
{
	uint64_t send_len[2] = {0, 0};
	uint32_t mtu_seen = 0, max_payload = 0;
	struct dr_pkt p;
	struct dr_mad mad;
	size_t i, same_addr = 0;

	for (i = 0; i < nframes; i++) {
		struct rp_end *to, *from;

		if (dr_pkt_parse(frames[i].data, frames[i].len, DR_PARSE_NO_ICRC, &p) != DR_PKT_OK)
			continue;
		if (cm_mad(&p, &mad)) {
			scan_cm(&p, &mad);
			continue;
		}
		if (!(p.op->flags & (DR_OPF_REQ | DR_OPF_RSP)))
			continue;
		to = end_by_addr(&p, false, true);
		from = end_by_addr(&p, true, true);
		if (from && from == to)
			same_addr++;
		else if (from && to)
			qpn_seen(to, p.dqpn, 1, false);
	}
	choose_qpns();
	for (i = 0; i < nframes; i++) {
		struct rp_end *from, *to;
		uint32_t f;

		if (dr_pkt_parse(frames[i].data, frames[i].len, DR_PARSE_NO_ICRC, &p) != DR_PKT_OK)
			continue;
		f = p.op->flags;
		if (!(f & (DR_OPF_REQ | DR_OPF_RSP)))
			continue;
		from = end_by_addr(&p, true, false);
		to = end_by_addr(&p, false, false);
		if (!from || !to || from == to || p.dqpn != to->qpn)
			continue;
		if (p.payload_len > max_payload)
			max_payload = p.payload_len;
		if ((f & (DR_OPF_FIRST | DR_OPF_MIDDLE)) && !mtu_seen)
			mtu_seen = p.payload_len;
		if (!(f & DR_OPF_REQ))
			continue;
		if (!from->has_first) {
			from->first_psn = p.psn;
			from->has_first = true;
		}
		if (f & DR_OPF_SEND) {
			uint64_t *l = &send_len[to - ends];

			*l = (f & DR_OPF_FIRST || f & DR_OPF_ONLY) ? p.payload_len
								   : *l + p.payload_len;
			if (*l > to->max_recv)
				to->max_recv = *l;
		}
		if (dr_pkt_reth(&p) &&
		    key_touch(to, ntohl(dr_pkt_reth(&p)->rkey), be64toh(dr_pkt_reth(&p)->va),
			      ntohl(dr_pkt_reth(&p)->len)))
			return -ENOSPC;
		if (dr_pkt_atmeth(&p) && key_touch(to, ntohl(dr_pkt_atmeth(&p)->rkey),
						   be64toh(dr_pkt_atmeth(&p)->va), 8))
			return -ENOSPC;
		if ((dr_pkt_reth(&p) || dr_pkt_atmeth(&p)) && keyreq_add(to, &p))
			return -ENOMEM;
	}
	keys_judged();
	if (nends < 2 || !ends[0].has_qpn || !ends[1].has_qpn) {
		size_t cut = 0;

		for (i = 0; i < nframes; i++)
			cut += frames[i].origlen > frames[i].len;
		if (same_addr)
			fprintf(stderr,
				"droce-replay: no RC traffic between two addresses in the capture: "
				"%zu RC frames go from an address to itself (two processes on one "
				"host), and droce-replay tells the two ends apart by address\n",
				same_addr);
		else if (cut)
			fprintf(stderr,
				"droce-replay: no whole RC traffic between two endpoints in the "
				"capture: %zu frames were cut by its snaplen (capture with -s 0)\n",
				cut);
		else
			fprintf(
			    stderr,
			    "droce-replay: no RC traffic between two endpoints in the capture\n");
		return -ENOENT;
	}
	for (i = 0; i < 2; i++) {
		struct rp_end *e = &ends[i];

		/* a first request behind the CM's starting PSN would be a resend
		 * of something never sent: the CM's PSN is not what this side
		 * sends (a capture that reads the field the other way) */
		if (e->has_first && (!e->has_psn || dr_psn_diff(e->first_psn, e->sq_psn) < 0)) {
			if (e->has_psn)
				fprintf(stderr,
					"droce-replay: %c: the CM's starting PSN %" PRIu32
					" is after its first request's (%" PRIu32
					"): using the request's\n",
					e->name, e->sq_psn, e->first_psn);
			e->sq_psn = e->first_psn;
			e->has_psn = true;
			e->psn_from = "its first request";
		}
	}
	if (!pmtu && mtu_seen) {
		pmtu = mtu_seen;
		pmtu_from = "its first/middle packets";
	}
	if (!pmtu) {
		pmtu = 4096;
		pmtu_from = "no multi-packet message: the largest";
	}
	if (max_payload > pmtu || (pmtu & (pmtu - 1)) || pmtu < 256 || pmtu > 4096) {
		fprintf(stderr,
			"droce-replay: path MTU %" PRIu32 " (from %s) is not one of 256..4096"
			" or below a payload of %" PRIu32 " bytes\n",
			pmtu, pmtu_from, max_payload);
		return -EINVAL;
	}
	return 0;
}

/* ---- the engine's QPs ------------------------------------------------------ */

static int end_setup(struct rp_end *e, const struct rp_end *peer)
{
	struct dr_qp_init_attr ia = {
	    .qpn = e->qpn,
	    .max_send_wr = 1024,
	    .max_recv_wr = RP_RECV_DEPTH,
	    .mrt = &e->mrt,
	    .ops = &rp_ops,
	};
	struct dr_qp_attr a = {.state = DR_QPS_INIT};
	unsigned i;
	int ret;

	if (!e->has_qpn || !e->qpn) {
		fprintf(stderr, "droce-replay: no QPN for endpoint %c\n", e->name);
		return -EINVAL;
	}
	ret = dr_mr_table_init(&e->mrt, RP_MAX_KEYS + 1);
	if (ret)
		return ret;
	for (i = 0; i < e->nkeys; i++) {
		struct rp_key *k = &e->keys[i];
		struct dr_mr *mr;

		if (k->refused && !k->confirmed) {
			e->nrefused++;
			continue;
		}
		if (k->hi - k->lo > RP_MAX_REGION) {
			fprintf(stderr,
				"droce-replay: R_Key 0x%08" PRIx32 " spans %" PRIu64
				" bytes, more than the replay allocates (%llu)\n",
				k->rkey, k->hi - k->lo, RP_MAX_REGION);
			return -E2BIG;
		}
		k->mem = calloc(1, k->hi - k->lo + 8);
		if (!k->mem)
			return -ENOMEM;
		ret = dr_mr_reg(&e->mrt, k->mem, k->hi - k->lo, k->lo,
				DR_ACCESS_LOCAL_WRITE | DR_ACCESS_REMOTE_WRITE |
				    DR_ACCESS_REMOTE_READ | DR_ACCESS_REMOTE_ATOMIC,
				&mr);
		if (ret)
			return ret;
		k->local = mr->key;
	}
	e->rbuf = calloc(1, e->max_recv ? e->max_recv : 1);
	e->qp = dr_qp_create(&ia);
	if (!e->rbuf || !e->qp)
		return -ENOMEM;
	ret = dr_qp_modify(e->qp, &a, DR_QP_ATTR_STATE);
	if (ret)
		return ret;
	a = (struct dr_qp_attr){
	    .state = DR_QPS_RTR,
	    .dest_qpn = peer->qpn,
	    .rq_psn = peer->sq_psn,
	    .path_mtu = pmtu,
	    .min_rnr_timer = 12,
	    .max_dest_rd_atomic = max_rd,
	    .path = {.ipv6 = e->ipv6, .ttl = 64},
	};
	memcpy(a.path.src_mac, e->mac, 6);
	memcpy(a.path.dst_mac, peer->mac, 6);
	a.path.src_ip4 = e->ip4;
	a.path.dst_ip4 = peer->ip4;
	memcpy(a.path.src_ip6, e->ip6, 16);
	memcpy(a.path.dst_ip6, peer->ip6, 16);
	ret = dr_qp_modify(e->qp, &a,
			   DR_QP_ATTR_STATE | DR_QP_ATTR_DEST_QPN | DR_QP_ATTR_RQ_PSN |
			       DR_QP_ATTR_PATH_MTU | DR_QP_ATTR_MIN_RNR_TIMER |
			       DR_QP_ATTR_MAX_DEST_RD_ATOMIC | DR_QP_ATTR_PATH);
	if (ret)
		return ret;
	a.state = DR_QPS_RTS;
	a.sq_psn = e->sq_psn;
	e->next_psn = e->sq_psn;
	a.timeout = ack_timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = max_rd;
	return dr_qp_modify(e->qp, &a,
			    DR_QP_ATTR_STATE | DR_QP_ATTR_SQ_PSN | DR_QP_ATTR_TIMEOUT |
				DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_RNR_RETRY |
				DR_QP_ATTR_MAX_RD_ATOMIC);
}

/* Keep receives posted: the replay stands for an application that always
 * has one ready (an RNR NAK in the capture is the captured stack's). */
static void recv_refill(struct rp_end *e)
{
	struct dr_sge sge = {.addr = (uintptr_t)e->rbuf,
			     .length = (uint32_t)(e->max_recv ? e->max_recv : 1)};
	struct dr_recv_wr wr = {.sg_list = &sge, .num_sge = 1};

	/* in ERROR a receive is accepted and flushed at once: none to keep */
	if (dr_qp_state(e->qp) == DR_QPS_ERROR)
		return;
	while (e->recvs < RP_RECV_DEPTH / 2 && !dr_qp_post_recv(e->qp, &wr))
		e->recvs++;
}

/* ---- the second pass ------------------------------------------------------- */

/* The length of the SEND message whose first packet is frame i: its
 * packets up to the LAST one, in PSN order, from the same sender. */
static uint64_t send_msg_len(size_t i, const struct dr_pkt *first)
{
	uint64_t len = first->payload_len;
	uint32_t next = dr_psn_add(first->psn, 1);

	if (first->op->flags & DR_OPF_ONLY)
		return len;
	for (i++; i < nframes; i++) {
		struct dr_pkt p;

		if (dr_pkt_parse(frames[i].data, frames[i].len, DR_PARSE_NO_ICRC, &p) !=
			DR_PKT_OK ||
		    !(p.op->flags & DR_OPF_SEND) || !(p.op->flags & DR_OPF_REQ) ||
		    p.dqpn != first->dqpn || p.psn != next ||
		    memcmp(p.eth->src, first->eth->src, 6))
			continue;
		len += p.payload_len;
		next = dr_psn_add(next, 1);
		if (p.op->flags & DR_OPF_LAST)
			break;
	}
	return len;
}

static int scratch_need(uint64_t len)
{
	uint8_t *p;

	if (len <= scratch_len)
		return 0;
	if (len > DR_QP_MAX_MSG)
		return -E2BIG;
	p = realloc(scratch, len);
	if (!p)
		return -ENOMEM;
	/* the engine sends from it: defined bytes, not heap leftovers */
	memset(p + scratch_len, 0, len - scratch_len);
	scratch = p;
	scratch_len = len;
	return 0;
}

/* The work request the capture's request (first packet) stands for. */
static int wr_of(size_t i, const struct dr_pkt *p, struct dr_send_wr *wr, struct dr_sge *sge)
{
	uint32_t f = p->op->flags;
	uint64_t len;

	memset(wr, 0, sizeof(*wr));
	wr->flags = DR_WR_SIGNALED;
	if (f & DR_OPF_SEND) {
		wr->opcode = (f & DR_OPF_IMMDT) ? DR_WR_SEND_IMM : DR_WR_SEND;
		len = send_msg_len(i, p);
	} else if (f & DR_OPF_WRITE) {
		wr->opcode = (f & DR_OPF_IMMDT) ? DR_WR_WRITE_IMM : DR_WR_WRITE;
		len = ntohl(dr_pkt_reth(p)->len);
	} else if (f & DR_OPF_READ) {
		wr->opcode = DR_WR_READ;
		len = ntohl(dr_pkt_reth(p)->len);
	} else {
		const struct dr_atmeth *a = dr_pkt_atmeth(p);

		wr->opcode = p->opcode == DR_OP_CMP_SWAP ? DR_WR_CMP_SWAP : DR_WR_FETCH_ADD;
		wr->remote_addr = be64toh(a->va);
		wr->rkey = ntohl(a->rkey);
		wr->compare_add =
		    p->opcode == DR_OP_CMP_SWAP ? be64toh(a->cmp) : be64toh(a->swap_add);
		wr->swap = be64toh(a->swap_add);
		len = 8;
	}
	if (dr_pkt_reth(p)) {
		wr->remote_addr = be64toh(dr_pkt_reth(p)->va);
		wr->rkey = ntohl(dr_pkt_reth(p)->rkey);
	}
	if (dr_pkt_immdt(p))
		wr->imm = ntohl(dr_pkt_immdt(p)->imm);
	if (scratch_need(len ? len : 1))
		return -ENOMEM;
	sge->addr = (uintptr_t)scratch;
	sge->length = (uint32_t)len;
	sge->lkey = DR_LKEY_NONE;
	wr->sg_list = sge;
	wr->num_sge = len ? 1 : 0;
	wr->wr_id = frames[i].number;
	return 0;
}

/* A request the replayed requester x sent in the capture: post it, so that
 * its completer expects the responses. */
static void requester_post(struct rp_end *x, size_t i, const struct dr_pkt *p)
{
	struct dr_send_wr wr;
	struct dr_sge sge;
	uint32_t next = x->next_psn, npsn;
	int32_t gap;
	int ret;

	if (!(p->op->flags & (DR_OPF_FIRST | DR_OPF_ONLY)))
		return;
	gap = dr_psn_diff(p->psn, next);
	if (gap < 0) {
		say(x, "requester",
		    "PSN %" PRIu32 " sent again in the capture: droce resends on "
		    "its own timer and NAKs, nothing posted",
		    p->psn);
		return;
	}
	if (gap > RP_MAX_FILL) {
		say(x, "requester",
		    "PSN %" PRIu32 " in the capture, %d after droce's next PSN %" PRIu32
		    ": too far to fill, posted as droce would number it",
		    p->psn, (int)gap, next);
	} else if (gap > 0) {
		/* requests missing from the capture: zero-length WRITEs keep the
		 * PSNs of what follows as captured */
		struct dr_send_wr fill = {.opcode = DR_WR_WRITE, .wr_id = 0};
		int32_t k;

		for (k = 0; k < gap; k++)
			if (dr_qp_post_send(x->qp, &fill))
				break;
		next = dr_psn_add(next, k);
		if (gap == 1)
			say(x, "requester",
			    "PSN %" PRIu32 " not in the capture: %d zero-length "
			    "WRITE posted in its place",
			    x->next_psn, (int)k);
		else
			say(x, "requester",
			    "PSN %" PRIu32 "..%" PRIu32 " not in the capture: %d "
			    "zero-length WRITEs posted in their place",
			    x->next_psn, dr_psn_add(p->psn, -1), (int)k);
	}
	if (wr_of(i, p, &wr, &sge)) {
		say(x, "requester", "cannot post %s: out of memory", p->op->name);
		return;
	}
	ret = dr_qp_post_send(x->qp, &wr);
	/* the PSNs the message takes: its packets (a READ: its responses) */
	npsn = wr.opcode == DR_WR_FETCH_ADD || wr.opcode == DR_WR_CMP_SWAP || !sge.length
		   ? 1
		   : (sge.length + pmtu - 1) / pmtu;
	x->next_psn = ret ? next : dr_psn_add(next, (int32_t)npsn);
	if (ret)
		say(x, "requester", "posting %s of %" PRIu32 " bytes failed: %s",
		    dr_wr_opcode_names[wr.opcode], sge.length, strerror(-ret));
	else
		say(x, "requester", "posted %s of %" PRIu32 " bytes (wr %" PRIu64 ")",
		    dr_wr_opcode_names[wr.opcode], sge.length, wr.wr_id);
}

/* Map the capture's R_Key to the region standing for it, in a copy of the
 * frame (parsed again without the ICRC, which was checked as captured). */
static uint8_t copybuf[16384];

static bool map_rkey(struct rp_end *y, const struct dr_pkt *p, struct dr_pkt *out)
{
	size_t off = rkey_off(p);
	uint32_t rkey;
	unsigned i;

	if (!off || p->frame_len > sizeof(copybuf))
		return false;
	rkey = rkey_of(p, off);
	for (i = 0; i < y->nkeys; i++)
		if (y->keys[i].rkey == rkey)
			break;
	if (i == y->nkeys || !y->keys[i].mem)
		return false; /* refused in the capture: droce has no such key either */
	memcpy(copybuf, p->frame, p->frame_len);
	rkey = htonl(y->keys[i].local);
	memcpy(copybuf + off, &rkey, 4);
	return dr_pkt_parse(copybuf, p->frame_len, DR_PARSE_NO_ICRC, out) == DR_PKT_OK;
}

static void say_drops(struct rp_end *e, const char *role, const struct dr_qp_stats *b,
		      const struct dr_qp_stats *s, const struct dr_qp_attr *before)
{
	unsigned r;

	for (r = 0; r < DR_RX_DROP_NUM; r++) {
		if (s->rx_drop[r] == b->rx_drop[r])
			continue;
		if (r == DR_RX_DROP_PSN_AHEAD)
			say(e, role,
			    "dropped: %s (expected PSN %" PRIu32 ", the gap already NAKed)",
			    dr_rx_drop_names[r], before->rq_psn);
		else if (r == DR_RX_DROP_PSN_AHEAD_RNR)
			say(e, role,
			    "dropped: %s (expected PSN %" PRIu32 ", held behind an RNR NAK)",
			    dr_rx_drop_names[r], before->rq_psn);
		else
			say(e, role, "dropped: %s", dr_rx_drop_names[r]);
	}
}

/* A request to y's responder */
static void feed_request(struct rp_end *y, const struct dr_pkt *p0)
{
	struct dr_qp_stats b = *dr_qp_stats(y->qp);
	const struct dr_qp_stats *s;
	struct dr_qp_attr before;
	struct dr_pkt mapped;
	const struct dr_pkt *p = p0;
	uint32_t f = p0->op->flags;
	unsigned i;

	if ((dr_pkt_reth(p0) || dr_pkt_atmeth(p0)) && map_rkey(y, p0, &mapped))
		p = &mapped;
	dr_qp_query(y->qp, &before);
	step_begin(y);
	dr_qp_input(y->qp, p);
	s = dr_qp_stats(y->qp);
	say_drops(y, "responder", &b, s, &before);
	if (s->rx_dropped != b.rx_dropped) {
		/* said by say_drops */
	} else if (s->rx_dup_reqs != b.rx_dup_reqs) {
		if (f & DR_OPF_READ)
			say(y, "responder",
			    "duplicate: READ PSN %" PRIu32 " answered again from the request",
			    p->psn);
		else if (f & DR_OPF_ATOMIC)
			say(y, "responder",
			    "duplicate: %s PSN %" PRIu32 " answered again from the replay cache",
			    p->op->name, p->psn);
		else
			say(y, "responder", "duplicate: %s PSN %" PRIu32 " %s", p->op->name, p->psn,
			    step.ntx ? "re-ACKed" : "not executed again");
	} else if (s->rx_dropped == b.rx_dropped && s->tx_seq_naks == b.tx_seq_naks &&
		   s->tx_rnr_naks == b.tx_rnr_naks && s->tx_err_naks == b.tx_err_naks) {
		if (f & DR_OPF_SEND) {
			if (!(f & DR_OPF_END))
				say(y, "responder",
				    "accepted: SEND packet, %" PRIu32
				    " bytes placed, the message goes on",
				    p->payload_len);
		} else if (f & DR_OPF_WRITE) {
			say(y, "responder", "accepted: WRITE placed %" PRIu32 " bytes",
			    p->payload_len);
		} else if (f & DR_OPF_READ) {
			unsigned k = 0;

			for (i = 0; i < step.ntx; i++)
				k += (dr_opcode(step.tx[i].opcode)->flags & DR_OPF_READ) != 0;
			say(y, "responder",
			    "accepted: READ of %" PRIu32 " bytes answered with %u response%s",
			    ntohl(dr_pkt_reth(p)->len), k, k == 1 ? "" : "s");
		} else if (f & DR_OPF_ATOMIC) {
			say(y, "responder", "accepted: %s executed", p->op->name);
		}
	}
	for (i = 0; i < step.nrop; i++) {
		const struct dr_remote_op *op = &step.rop[i];

		if (op->status == DR_WC_SUCCESS && op->kind == DR_REMOTE_WRITE)
			say(y, "responder", "WRITE of %" PRIu64 " bytes complete", op->length);
		else if (op->status != DR_WC_SUCCESS)
			say(y, "responder", "%s refused: %s", dr_remote_op_names[op->kind],
			    dr_wc_status_names[op->status]);
	}
	say_wcs(y);
	say_tx(y, "responder", before.rq_psn, p->psn);
	say_notes(y);
	recv_refill(y);
}

/* A response to x's completer */
static void feed_response(struct rp_end *x, const struct dr_pkt *p)
{
	struct dr_qp_stats b = *dr_qp_stats(x->qp);
	const struct dr_qp_stats *s;
	struct dr_qp_attr before;
	const struct dr_aeth *aeth = dr_pkt_aeth(p);
	uint8_t syn = aeth ? dr_aeth_syndrome(aeth) : 0;
	char ms[16];

	dr_qp_query(x->qp, &before);
	step_begin(x);
	dr_qp_input(x->qp, p);
	s = dr_qp_stats(x->qp);
	say_drops(x, "completer", &b, s, &before);
	if (s->rx_dropped == b.rx_dropped) {
		if (s->rx_err_naks != b.rx_err_naks)
			step.nak_rcvd = syn;
		if (s->rx_seq_naks != b.rx_seq_naks || s->rx_err_naks != b.rx_err_naks)
			say(x, "completer", "NAK received: %s, PSN %" PRIu32, dr_qp_nak_name(syn),
			    p->psn);
		else if (s->rx_rnr_naks != b.rx_rnr_naks) {
			say_rnr_ms(ms, sizeof(ms), syn);
			say(x, "completer", "RNR NAK received: waiting %s ms", ms);
		} else if (aeth && (syn & DR_AETH_TYPE_MASK) != DR_AETH_ACK)
			say(x, "completer", "NAK received: %s, PSN %" PRIu32 " (nothing to do)",
			    dr_qp_nak_name(syn), p->psn);
		else if ((p->op->flags & DR_OPF_READ))
			say(x, "completer",
			    "accepted: READ response PSN %" PRIu32 ", %" PRIu32 " bytes placed",
			    p->psn, p->payload_len);
		else
			say(x, "completer", "accepted: %s PSN %" PRIu32,
			    p->opcode == DR_OP_ATOMIC_ACK ? "ATOMIC ACKNOWLEDGE" : "ACK", p->psn);
	}
	say_wcs(x);
	say_tx(x, "completer", before.rq_psn, p->psn);
	say_notes(x);
}

/* Timers that expire before t, on the capture's clock */
static void run_timers(uint64_t t)
{
	unsigned i;

	for (i = 0; i < nends; i++) {
		struct rp_end *e = &ends[i];
		uint64_t d;

		while ((d = dr_qp_deadline_ns(e->qp)) <= t) {
			const struct dr_qp_stats b = *dr_qp_stats(e->qp);

			clock_ns = d > clock_ns ? d : clock_ns;
			step_begin(e);
			nprinted = 0;
			printf("timer: %c at +%.6f s\n", e->name,
			       (clock_ns - frames[0].ts_ns) / 1e9);
			dr_qp_tick(e->qp);
			if (dr_qp_stats(e->qp)->timeouts != b.timeouts)
				say(e, "requester", "retransmit timeout");
			say_wcs(e);
			say_tx(e, "requester", 0, 0);
			say_notes(e);
			if (dr_qp_deadline_ns(e->qp) == d)
				break; /* the engine did not move it: do not spin */
		}
	}
}

static unsigned n_skipped, n_parse_drops, n_cut;

/* UDP to port 4791 over IPv4 or IPv6 (optionally 802.1Q-tagged), looked at
 * before the parser: its verdicts on IP lengths and checksums come before
 * the protocol, so a captured TCP super-segment (GSO) would read as a
 * malformed RoCEv2 frame. */
static bool is_roce(const uint8_t *f, uint32_t len)
{
	size_t off = sizeof(struct dr_eth_hdr);
	uint16_t type;
	uint8_t proto;

	if (len < off)
		return false;
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type == DR_ETH_P_VLAN && len >= off + sizeof(struct dr_vlan_hdr)) {
		type = (uint16_t)(f[16] << 8 | f[17]);
		off += sizeof(struct dr_vlan_hdr);
	}
	if (type == DR_ETH_P_IPV4 && len >= off + sizeof(struct dr_ipv4_hdr)) {
		proto = f[off + 9];
		off += (size_t)(f[off] & 0x0f) * 4;
	} else if (type == DR_ETH_P_IPV6 && len >= off + sizeof(struct dr_ipv6_hdr)) {
		proto = f[off + 6];
		off += sizeof(struct dr_ipv6_hdr);
	} else {
		return false;
	}
	return proto == DR_IPPROTO_UDP && len >= off + sizeof(struct dr_udp_hdr) &&
	       (f[off + 2] << 8 | f[off + 3]) == DR_ROCE_UDP_PORT;
}

static void replay_frame(size_t i)
{
	const struct rp_frame *fr = &frames[i];
	enum dr_pkt_verdict v;
	struct dr_pkt p;
	struct dr_mad mad;
	struct rp_end *x, *y;
	char src[64] = "?", dst[64] = "?";
	uint32_t f;

	run_timers(fr->ts_ns);
	clock_ns = fr->ts_ns > clock_ns ? fr->ts_ns : clock_ns;
	if (!is_roce(fr->data, fr->len)) {
		n_skipped++;
		return;
	}
	v = dr_pkt_parse(fr->data, fr->len, 0, &p);
	/* a frame the capture cut (snaplen) says nothing about what droce
	 * would have received */
	if (fr->origlen > fr->len) {
		printf("frame %" PRIu64 ": cut to %" PRIu32 " of %" PRIu32
		       " bytes by the capture's snaplen: not replayed\n",
		       fr->number, fr->len, fr->origlen);
		n_cut++;
		return;
	}
	nprinted = 0;
	/* a frame the parser refuses is described as far as it goes */
	if (v != DR_PKT_OK && dr_pkt_parse(fr->data, fr->len, DR_PARSE_NO_ICRC, &p) != DR_PKT_OK) {
		printf("frame %" PRIu64 ": RoCEv2\n  dropped: %s\n", fr->number,
		       dr_pkt_verdict_str(v));
		n_parse_drops++;
		return;
	}
	x = end_by_addr(&p, true, false);
	y = end_by_addr(&p, false, false);
	if (x)
		snprintf(src, sizeof(src), "%c", x->name);
	if (y)
		snprintf(dst, sizeof(dst), "%c", y->name);
	if (!x && p.ip4)
		inet_ntop(AF_INET, &p.ip4->saddr, src, sizeof(src));
	if (v == DR_PKT_OK && cm_mad(&p, &mad)) {
		printf("frame %" PRIu64
		       ": %s->%s CM attribute 0x%04x on QP1: the CM's, not replayed\n",
		       fr->number, src, dst, mad.attr_id);
		return;
	}
	printf("frame %" PRIu64 ": %s->%s %s QP 0x%06" PRIx32 " PSN %" PRIu32, fr->number, src, dst,
	       p.op->name, p.dqpn, p.psn);
	if (p.payload_len)
		printf(", %" PRIu32 " bytes", p.payload_len);
	printf("\n");
	if (v != DR_PKT_OK) {
		printf("  dropped: %s\n", dr_pkt_verdict_str(v));
		n_parse_drops++;
		return;
	}
	f = p.op->flags;
	if (!(f & (DR_OPF_REQ | DR_OPF_RSP))) {
		printf("  not replayed: not RC\n");
		return;
	}
	/* from an address that is not the peer's: the QP's address check
	 * decides (a forged source), nothing is posted for it */
	if (!y || x == y) {
		printf("  not replayed: not to either endpoint\n");
		return;
	}
	if (p.dqpn != y->qpn) {
		/* another connection the capture's CM set up is not replayed;
		 * a QPN nobody announced is droce's device's drop */
		if (qpn_other_conn(y, p.dqpn))
			printf("  not replayed: another connection (QPN 0x%06" PRIx32 " of %c), "
			       "droce-replay follows QPN 0x%06" PRIx32 "\n",
			       p.dqpn, y->name, y->qpn);
		else
			say(y, "device", "dropped: %s", dr_rx_drop_names[DR_RX_DROP_UNKNOWN_QPN]);
		return;
	}
	if ((f & DR_OPF_REQ) && x && x->req) {
		/* what the requester sends once posted */
		step_begin(x);
		requester_post(x, i, &p);
		say_tx(x, "requester", 0, 0);
		say_wcs(x);
		say_notes(x);
	}
	if (f & DR_OPF_REQ) {
		if (y->resp)
			feed_request(y, &p);
		else
			say(y, "responder", "not replayed (--as requester)");
	} else {
		if (y->req)
			feed_response(y, &p);
		else
			say(y, "completer", "not replayed (--as responder)");
	}
}

static int add_frame(const uint8_t *data, uint32_t len, uint32_t origlen, uint64_t ts_ns,
		     uint64_t number)
{
	static size_t cap;
	struct rp_frame *a = grow(frames, &cap, nframes, sizeof(*frames), 1024);

	if (!a)
		return -ENOMEM;
	frames = a;
	frames[nframes].data = malloc(len ? len : 1);
	if (!frames[nframes].data)
		return -ENOMEM;
	memcpy(frames[nframes].data, data, len);
	frames[nframes].len = len;
	frames[nframes].origlen = origlen;
	frames[nframes].ts_ns = ts_ns;
	frames[nframes].number = number;
	nframes++;
	return 0;
}

/* Classic pcap (tcpdump's default): a 24-byte file header, then records of
 * a 16-byte header and the packet, in the writer's byte order;
 * microsecond or nanosecond timestamps by the magic.  Ethernet only. */
#define RP_PCAP_MAX_REC (256u << 10)

static uint32_t pcap_u32(const uint8_t *p, bool swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static int load_pcap(FILE *f, const char *path, const uint8_t magic[4])
{
	uint8_t hdr[24], rec[16];
	static uint8_t buf[RP_PCAP_MAX_REC];
	uint32_t m, linktype;
	uint64_t off = 24, number = 0;
	bool swap, nsec;
	size_t n;
	int ret;

	memcpy(hdr, magic, 4);
	if (fread(hdr + 4, 1, 20, f) != 20) {
		fprintf(stderr, "droce-replay: %s: classic pcap file header cut short\n", path);
		return -EINVAL;
	}
	memcpy(&m, hdr, 4);
	swap = m == 0xd4c3b2a1u || m == 0x4d3cb2a1u;
	nsec = pcap_u32(hdr, swap) == 0xa1b23c4du;
	linktype = pcap_u32(hdr + 20, swap) & 0xffff;
	if (linktype != DR_LINKTYPE_ETHERNET) {
		fprintf(stderr, "droce-replay: %s: link type %" PRIu32 ", not Ethernet\n", path,
			linktype);
		return -EINVAL;
	}
	while ((n = fread(rec, 1, sizeof(rec), f)) == sizeof(rec)) {
		uint32_t incl = pcap_u32(rec + 8, swap);
		uint64_t sub = pcap_u32(rec + 4, swap);

		if (incl > RP_PCAP_MAX_REC) {
			fprintf(stderr,
				"droce-replay: %s: record at offset %" PRIu64 ": length %" PRIu32
				" over %u bytes\n",
				path, off, incl, RP_PCAP_MAX_REC);
			return -EINVAL;
		}
		if (fread(buf, 1, incl, f) != incl) {
			fprintf(stderr,
				"droce-replay: %s: record at offset %" PRIu64 " cut short\n", path,
				off);
			return -EINVAL;
		}
		ret = add_frame(buf, incl, pcap_u32(rec + 12, swap),
				pcap_u32(rec, swap) * 1000000000ull + (nsec ? sub : sub * 1000),
				++number);
		if (ret)
			return ret;
		off += sizeof(rec) + incl;
	}
	if (n) {
		fprintf(stderr, "droce-replay: %s: record header at offset %" PRIu64 " cut short\n",
			path, off);
		return -EINVAL;
	}
	return 0;
}

static int load(const char *path)
{
	static const uint32_t classic[] = {0xa1b2c3d4u, 0xd4c3b2a1u, 0xa1b23c4du, 0x4d3cb2a1u};
	struct dr_pcapng_pkt pk;
	struct dr_pcapng *r;
	uint8_t magic[4];
	char err[256];
	uint32_t m;
	unsigned i;
	FILE *f;
	int ret;

	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "droce-replay: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (fread(magic, 1, 4, f) == 4) {
		memcpy(&m, magic, 4);
		for (i = 0; i < sizeof(classic) / sizeof(classic[0]); i++) {
			if (m != classic[i])
				continue;
			ret = load_pcap(f, path, magic);
			fclose(f);
			if (ret == -ENOMEM)
				fprintf(stderr, "droce-replay: %s: %s\n", path, strerror(ENOMEM));
			return ret;
		}
	}
	rewind(f);
	r = dr_pcapng_open_stream(f, path, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "droce-replay: %s\n", err);
		fclose(f);
		return -EINVAL;
	}
	while ((ret = dr_pcapng_next(r, &pk)) == 1) {
		if (pk.linktype != DR_LINKTYPE_ETHERNET)
			continue;
		ret = add_frame(pk.data, pk.caplen, pk.origlen,
				pk.ts_sec * 1000000000ull + pk.ts_nsec, pk.number);
		if (ret)
			break;
	}
	if (ret < 0)
		fprintf(stderr, "droce-replay: %s: %s\n", path,
			ret == -ENOMEM ? strerror(ENOMEM) : dr_pcapng_strerror(r));
	dr_pcapng_close(r);
	fclose(f);
	return ret < 0 ? ret : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: droce-replay [--as responder|requester|both] CAPTURE\n"
		   "Feed a capture's RoCEv2 RC frames through droce's QP engine and print what\n"
		   "its responder and completer do with each one (see droce-replay(1)).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"as", required_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool resp = true, req = true;
	unsigned i;
	int c, ret;

	while ((c = getopt_long(argc, argv, "a:h", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (!strcmp(optarg, "responder")) {
				req = false;
			} else if (!strcmp(optarg, "requester")) {
				resp = false;
			} else if (strcmp(optarg, "both")) {
				fprintf(stderr,
					"droce-replay: --as %s: not responder, requester or both\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (load(argv[optind]) || first_pass())
		return 1;
	for (i = 0; i < 2; i++) {
		char a[64];

		ends[i].resp = resp;
		ends[i].req = req;
		if (!ends[i].has_psn)
			ends[i].psn_from = "nothing: it sends no request";
		ret = end_setup(&ends[i], &ends[1 - i]);
		if (ret) {
			fprintf(stderr, "droce-replay: endpoint %c: engine QP: %s\n", ends[i].name,
				strerror(-ret));
			return 1;
		}
		recv_refill(&ends[i]);
		addr_str(&ends[i], a, sizeof(a));
		printf("endpoint %c: %s QPN 0x%06" PRIx32 ", first PSN it sends %" PRIu32
		       " (from %s), %u R_Key%s",
		       ends[i].name, a, ends[i].qpn, ends[i].sq_psn, ends[i].psn_from,
		       ends[i].nkeys, ends[i].nkeys == 1 ? "" : "s");
		if (ends[i].nrefused)
			printf(" (%u refused in the capture with a remote access error: not "
			       "registered)",
			       ends[i].nrefused);
		printf("\n");
	}
	printf("path MTU %" PRIu32 " (from %s), replaying %s\n", pmtu, pmtu_from,
	       resp && req ? "responders and requesters"
	       : resp	   ? "responders"
			   : "requesters");
	clock_ns = nframes ? frames[0].ts_ns : 0;
	for (size_t n = 0; n < nframes; n++)
		replay_frame(n);
	for (i = 0; i < 2; i++) {
		const struct dr_qp_stats *s = dr_qp_stats(ends[i].qp);

		printf("summary %c: %" PRIu64 " frames in, %" PRIu64 " dropped, %" PRIu64
		       " duplicates, %" PRIu64 " sequence NAKs sent, %" PRIu64
		       " error NAKs sent, %" PRIu64 " RNR NAKs sent\n",
		       ends[i].name, s->rx_frames, s->rx_dropped, s->rx_dup_reqs, s->tx_seq_naks,
		       s->tx_err_naks, s->tx_rnr_naks);
	}
	printf("%u frames dropped by the parser, %u frames not RoCEv2 skipped\n", n_parse_drops,
	       n_skipped);
	if (n_cut)
		printf("%u RoCEv2 frames cut by the capture's snaplen not replayed\n", n_cut);
	return 0;
}
