// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_qp.c - libFuzzer harness for the RC QP engine (src/qp: requester,
 * responder, completer, MR keys) driven as a connected pair.
 *
 * Two QPs, A (end 0) and B (end 1), are joined by the simulated link of
 * src/qp/simlink.c and its virtual clock, as tests/test_qp.c joins them.
 * The first bytes of the input choose the connection (path MTU, initial
 * PSNs near the 24-bit wrap, timeout, retry and RNR counts, ORD/IRD, queue
 * depths, QP flags); the rest is a script, one action after another:
 *   - post a send WR (any opcode, size, SGE layout, flags, local key and
 *     remote region, good or bad) or a receive WR on either side;
 *   - deliver, drop, duplicate, corrupt (a copy with its payload
 *     inverted, then the frame itself) or reorder the frames queued on
 *     the link
 *     (while the script runs the link holds every frame the QPs emit until
 *     an action says what happens to it);
 *   - deliver a frame built by the harness with the codec (any RC opcode,
 *     PSN relative to the receiver's, keys and addresses of real or bogus
 *     regions, any AETH) or a mutated copy of a frame a QP sent, to either
 *     side, with the ICRC the codec computes (so the frame gets past the
 *     check) or, now and then, a wrong one;
 *   - advance the clock (retransmit and RNR timers fire), flush deferred
 *     ACKs, move a QP to ERROR.
 * When the script ends, the link delivers everything in order and runs
 * until nothing is in flight and no timer is armed, while the application
 * keeps receives posted and flushes deferred ACKs.
 *
 * Invariants, checked after every action (the harness aborts with a
 * message naming the broken one):
 *   - no sanitizer report (ASan, UBSan);
 *   - no access outside registered memory: each side's regions live in one
 *     allocation with poisoned guard bytes between them (ASan reports any
 *     touch), a region registered with no access rights is poisoned whole,
 *     and the guards and the remote-read-only region keep their contents;
 *   - completions on each queue come in posting order, name a WR that is
 *     outstanding, with the opcode it was posted with; a signaled WR never
 *     finishes without a completion; a WR completes at most once; in ERROR
 *     only flush completions, and every WR has completed;
 *   - the QP state never goes back (RTS -> ERROR only);
 *   - every PSN and MSN stays within 24 bits, and the requester/completer
 *     PSNs keep their order (comp.psn <= req.psn <= max_psn);
 *   - every frame a QP emits parses (ICRC included);
 *   - after the final drain a QP still in RTS has no send WR outstanding;
 *   - while no forged or mutated frame was delivered (link faults only,
 *     corrupted copies included: one whose payload was placed before its
 *     ICRC failed must leave no trace once the genuine frame has come):
 *     each message (SEND, SEND_IMM, WRITE_IMM) arrives as the peer posted
 *     it, in order, with its length and immediate; after the drain, with
 *     both QPs in RTS, every message has arrived and each RDMA region
 *     holds exactly what the peer's WRITEs and atomics, applied once each
 *     in posting order, make of it (sources taken from memory nothing
 *     writes: inline data or the read-only region).
 *
 * Build and run: .ci/fuzz.sh (clang -fsanitize=fuzzer,address,undefined);
 * seeds: fuzz/mkseeds_qp.c.  Input format: see decode_cfg() and act().
 */
#include <sanitizer/asan_interface.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_priv.h"
#include "simlink.h"
#define FUZZ_NAME "fuzz_qp"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the two sides ------------------------------------------------------------ */

#define QPN_A 0x000011
#define QPN_B 0x0abc22

/* Each side's memory: one allocation, guard | R0 | guard | R1 | ... */
enum { R_RW, R_RO, R_NONE, R_LOCAL, NREG };
static const uint32_t reg_len[NREG] = {8192, 4096, 256, 16384};
static const unsigned reg_access[NREG] = {
    [R_RW] = DR_ACCESS_REMOTE_WRITE | DR_ACCESS_REMOTE_READ | DR_ACCESS_REMOTE_ATOMIC |
	     DR_ACCESS_LOCAL_WRITE,
    [R_RO] = DR_ACCESS_REMOTE_READ,
    [R_NONE] = 0,
    [R_LOCAL] = DR_ACCESS_LOCAL_WRITE,
};
#define GUARD	   64
#define GUARD_BYTE 0xa5
#define NONE_BYTE  0x5a
#define ARENA_LEN  (GUARD * (NREG + 1) + 8192 + 4096 + 256 + 16384)

/* what the harness expects to complete, per queue, in posting order */
struct wr_rec {
	uint64_t wr_id;
	enum dr_wc_opcode opcode;
	bool signaled;
	uint64_t length;
};

struct wr_fifo {
	struct wr_rec *r;
	size_t head, tail, cap; /* r[head..tail) */
};

/* A message the side will see arrive (the peer's SEND, SEND_IMM or
 * WRITE_IMM), in the peer's posting order. */
struct in_rec {
	enum dr_wc_opcode opcode;
	uint32_t len;
	bool has_imm;
	uint32_t imm;
};

/* A change the peer's WR makes to this side's RDMA region. */
struct rw_op {
	enum dr_wr_opcode op;
	uint32_t off, len;
	uint8_t *data; /* WRITE: the bytes, read at post time from memory no one writes */
	uint64_t compare_add, swap;
};

/* frames the link holds in one direction, oldest first */
struct frame {
	size_t len;
	uint8_t *data;
};
#define LINK_CAP 512
#define RECENT	 16

struct side {
	struct dr_qp *qp;
	struct dr_mr_table mrt;
	uint8_t *arena;
	uint8_t *reg[NREG];
	struct dr_mr *mr[NREG];
	uint8_t ro_copy[4096];
	struct wr_fifo sq, rq;
	/* what an honest link must produce here (checked while no forged
	 * frame was delivered): the messages in order, and the RDMA
	 * region's contents once everything is done */
	struct in_rec *in;
	size_t in_head, in_tail, in_cap;
	struct rw_op *rw;
	size_t nrw, rw_cap;
	bool rw_unknown; /* a WRITE from memory that may change meanwhile */
	uint8_t rw_init[8192];
	enum dr_qp_state state; /* last seen */
	unsigned flags;
	/* frames this side sent: the link's queue towards the peer, and
	 * copies of the latest ones for mutation */
	struct frame q[LINK_CAP];
	size_t nq;
	struct frame recent[RECENT];
	size_t nrecent;
};

static struct {
	struct dr_sim sim;
	struct dr_qp_ops ops;
	struct side s[2];
	bool hold;	 /* the link holds frames (script) or passes them (drain) */
	bool forged;	 /* a forged or mutated frame was delivered */
	uint64_t events; /* dr_sim_run events in the current run */
	uint64_t event_cap;
	uint64_t next_wr_id;
	uint32_t pmtu;
	uint8_t rnr_retry;
	uint8_t payload[DR_MAX_PMTU + 64];
} h;

static void fifo_push(struct wr_fifo *f, const struct wr_rec *w)
{
	if (f->tail == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 64;
		f->r = realloc(f->r, f->cap * sizeof(*f->r));
		if (!f->r)
			abort();
	}
	f->r[f->tail++] = *w;
}

static size_t fifo_len(const struct wr_fifo *f)
{
	return f->tail - f->head;
}

static unsigned side_of(void *ctx)
{
	return ((struct dr_sim_end *)ctx)->idx;
}

/* ---- engine callbacks ------------------------------------------------------------ */

static void on_complete(void *ctx, struct dr_qp *qp, const struct dr_wc *wc)
{
	unsigned i = side_of(ctx);
	struct side *s = &h.s[i];

	if ((unsigned)wc->status >= DR_WC_STATUS_NUM)
		fail("side %u: completion status %d", i, wc->status);
	if (dr_qp_state(qp) == DR_QPS_ERROR && wc->status != DR_WC_WR_FLUSH_ERR)
		fail("side %u: completion '%s' for wr %llu in ERROR (only flushes)", i,
		     dr_wc_status_names[wc->status], (unsigned long long)wc->wr_id);
	if (wc->opcode == DR_WC_RECV || wc->opcode == DR_WC_RECV_WRITE_IMM) {
		const struct wr_rec *w;

		if (wc->status == DR_WC_SUCCESS && !h.forged) {
			const struct in_rec *m;

			if (s->in_head == s->in_tail)
				fail("side %u: a message arrived that the peer never sent (%u "
				     "bytes)",
				     i, wc->byte_len);
			m = &s->in[s->in_head++];
			if (m->opcode != wc->opcode || m->len != wc->byte_len ||
			    m->has_imm != wc->has_imm || (m->has_imm && m->imm != wc->imm))
				fail("side %u: message arrives as opcode %d, %u bytes, imm %d/%#x; "
				     "sent as %d, %u bytes, imm %d/%#x",
				     i, wc->opcode, wc->byte_len, wc->has_imm, wc->imm, m->opcode,
				     m->len, m->has_imm, m->imm);
		}

		if (wc->no_wqe) {
			if (!(s->flags & DR_QP_WRITE_IMM_NO_WQE) ||
			    wc->opcode != DR_WC_RECV_WRITE_IMM || wc->status != DR_WC_SUCCESS ||
			    wc->wr_id)
				fail("side %u: no-WQE completion (opcode %d status %s wr %llu) "
				     "without DR_QP_WRITE_IMM_NO_WQE",
				     i, wc->opcode, dr_wc_status_names[wc->status],
				     (unsigned long long)wc->wr_id);
			return;
		}
		if (!fifo_len(&s->rq))
			fail("side %u: receive completion wr %llu with no receive posted", i,
			     (unsigned long long)wc->wr_id);
		w = &s->rq.r[s->rq.head];
		if (w->wr_id != wc->wr_id)
			fail("side %u: receive completion wr %llu, oldest posted is %llu", i,
			     (unsigned long long)wc->wr_id, (unsigned long long)w->wr_id);
		if (wc->status == DR_WC_SUCCESS && wc->opcode == DR_WC_RECV &&
		    wc->byte_len > w->length)
			fail("side %u: receive wr %llu: %u bytes into a %llu-byte buffer", i,
			     (unsigned long long)wc->wr_id, wc->byte_len,
			     (unsigned long long)w->length);
		s->rq.head++;
		return;
	}
	/* a send: earlier unsignaled WRs may have finished silently */
	for (;;) {
		const struct wr_rec *w;

		if (!fifo_len(&s->sq))
			fail("side %u: send completion for wr %llu (%s), not outstanding", i,
			     (unsigned long long)wc->wr_id, dr_wc_status_names[wc->status]);
		w = &s->sq.r[s->sq.head];
		if (w->wr_id == wc->wr_id) {
			if (w->opcode != wc->opcode)
				fail("side %u: wr %llu completes as opcode %d, posted as %d", i,
				     (unsigned long long)wc->wr_id, wc->opcode, w->opcode);
			if (!w->signaled && wc->status == DR_WC_SUCCESS)
				fail("side %u: unsignaled wr %llu completed with success", i,
				     (unsigned long long)wc->wr_id);
			s->sq.head++;
			return;
		}
		if (w->signaled)
			fail("side %u: send completion for wr %llu before signaled wr %llu", i,
			     (unsigned long long)wc->wr_id, (unsigned long long)w->wr_id);
		s->sq.head++;
	}
}

static void on_remote_op(void *ctx, struct dr_qp *qp, const struct dr_remote_op *op)
{
	if ((unsigned)op->kind >= DR_REMOTE_OP_NUM ||
	    (op->status != DR_WC_SUCCESS && op->status != DR_WC_REM_INV_REQ_ERR &&
	     op->status != DR_WC_REM_ACCESS_ERR && op->status != DR_WC_REM_OP_ERR) ||
	    op->psn > DR_PSN_MASK)
		fail("side %u: remote op kind %d status %d psn %#x", side_of(ctx), op->kind,
		     op->status, op->psn);
}

/* The link: while the script runs, every frame goes to the sender's queue
 * (the simulated link drops it) and waits for an action. */
static enum dr_sim_action on_frame(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct side *s = &h.s[dir];
	struct frame *f;

	/* keep a copy for mutation, in a ring */
	f = &s->recent[s->nrecent++ % RECENT];
	free(f->data);
	f->data = malloc(pkt->frame_len);
	if (!f->data)
		abort();
	memcpy(f->data, pkt->frame, pkt->frame_len);
	f->len = pkt->frame_len;
	if (!h.hold)
		return DR_SIM_PASS;
	if (s->nq == LINK_CAP)
		return DR_SIM_DROP; /* a full link loses frames */
	f = &s->q[s->nq++];
	f->data = malloc(pkt->frame_len);
	if (!f->data)
		abort();
	memcpy(f->data, pkt->frame, pkt->frame_len);
	f->len = pkt->frame_len;
	return DR_SIM_DROP;
}

/* The drain's application: a receive posted for each one consumed (the
 * whole local region, shared: what lands there is not checked). */
static void refill_recv(unsigned i)
{
	struct side *s = &h.s[i];
	struct dr_sge g = {.addr = (uintptr_t)s->reg[R_LOCAL], .length = reg_len[R_LOCAL]};
	struct dr_recv_wr wr = {.sg_list = &g, .num_sge = 1};
	struct wr_rec rec = {.opcode = DR_WC_RECV, .signaled = true, .length = g.length};

	while (dr_qp_state(s->qp) == DR_QPS_RTS && dr_qp_rq_free(s->qp)) {
		wr.wr_id = rec.wr_id = ++h.next_wr_id;
		fifo_push(&s->rq, &rec);
		if (dr_qp_post_recv(s->qp, &wr))
			fail("side %u: drain: receive refused", i);
	}
}

static bool run_stop(void *arg)
{
	unsigned i;

	if (!h.hold) {
		/* the drain: flush deferred ACKs as src/fi does at poll, and
		 * keep receives posted so that RNR NAKs end */
		for (i = 0; i < 2; i++) {
			dr_qp_flush(h.s[i].qp);
			refill_recv(i);
		}
	}
	return ++h.events > h.event_cap;
}

/* ---- invariants ----------------------------------------------------------------- */

static void check_psn(unsigned i, const char *what, uint32_t v)
{
	if (v > DR_PSN_MASK)
		fail("side %u: %s %#x is not 24-bit", i, what, v);
}

static void check_memory(unsigned i)
{
	struct side *s = &h.s[i];
	uint8_t *g = s->arena;

	for (unsigned r = 0; r <= NREG; r++) {
		ASAN_UNPOISON_MEMORY_REGION(g, GUARD);
		for (unsigned k = 0; k < GUARD; k++)
			if (g[k] != GUARD_BYTE)
				fail("side %u: guard %u byte %u overwritten (%02x)", i, r, k, g[k]);
		ASAN_POISON_MEMORY_REGION(g, GUARD);
		if (r < NREG)
			g += GUARD + reg_len[r];
	}
	if (memcmp(s->reg[R_RO], s->ro_copy, reg_len[R_RO]))
		fail("side %u: the remote-read-only region changed", i);
}

static void check_side(unsigned i)
{
	struct side *s = &h.s[i];
	struct dr_qp *qp = s->qp;
	enum dr_qp_state st = dr_qp_state(qp);
	uint32_t sq_out = qp->sq.head - qp->sq.tail, rq_out = qp->rq.head - qp->rq.tail;

	if (st != DR_QPS_RTS && st != DR_QPS_ERROR)
		fail("side %u: state %s", i, dr_qp_state_names[st]);
	if (s->state == DR_QPS_ERROR && st != DR_QPS_ERROR)
		fail("side %u: state went back from ERROR to %s", i, dr_qp_state_names[st]);
	s->state = st;

	check_psn(i, "req.psn", qp->req.psn);
	check_psn(i, "comp.psn", qp->comp.psn);
	check_psn(i, "comp.max_psn", qp->comp.max_psn);
	check_psn(i, "resp.psn", qp->resp.psn);
	check_psn(i, "resp.msn", qp->resp.msn);
	check_psn(i, "resp.ack_psn", qp->resp.ack_psn);
	check_psn(i, "resp.ack_msn", qp->resp.ack_msn);
	for (uint32_t k = qp->sq.tail; k != qp->sq.head; k++)
		if (dr_sq_wqe(qp, k)->state == DR_WQE_PENDING)
			check_psn(i, "wqe first_psn", dr_sq_wqe(qp, k)->first_psn);

	if (sq_out > qp->sq.mask + 1 || rq_out > qp->rq.mask + 1)
		fail("side %u: %u sends / %u receives outstanding in queues of %u / %u", i, sq_out,
		     rq_out, qp->sq.mask + 1, qp->rq.mask + 1);
	if (st == DR_QPS_RTS) {
		if (dr_psn_diff(qp->req.psn, qp->comp.psn) < 0 ||
		    dr_psn_diff(qp->comp.max_psn, qp->req.psn) < 0)
			fail("side %u: PSNs out of order: comp %#x req %#x max %#x", i,
			     qp->comp.psn, qp->req.psn, qp->comp.max_psn);
		if ((uint32_t)(qp->req.wqe - qp->sq.tail) > sq_out)
			fail("side %u: req.wqe %u outside [%u, %u]", i, qp->req.wqe, qp->sq.tail,
			     qp->sq.head);
		if (qp->req.ord_used > qp->attr.max_rd_atomic)
			fail("side %u: %u READ/atomics outstanding, ORD %u", i, qp->req.ord_used,
			     qp->attr.max_rd_atomic);
		if (qp->req.cwnd < DR_QP_MIN_CWND || qp->req.cwnd > DR_QP_MAX_UNACKED_PSNS)
			fail("side %u: cwnd %u", i, qp->req.cwnd);
	}

	/* the harness's outstanding WRs against the engine's: the oldest
	 * ones beyond the engine's count finished silently (unsignaled) */
	while (fifo_len(&s->sq) > sq_out) {
		const struct wr_rec *w = &s->sq.r[s->sq.head++];

		if (w->signaled)
			fail("side %u: signaled wr %llu finished without a completion", i,
			     (unsigned long long)w->wr_id);
	}
	if (fifo_len(&s->sq) != sq_out || fifo_len(&s->rq) != rq_out)
		fail("side %u: engine holds %u sends / %u receives, harness expects %zu / %zu", i,
		     sq_out, rq_out, fifo_len(&s->sq), fifo_len(&s->rq));
	if (st == DR_QPS_ERROR && (sq_out || rq_out))
		fail("side %u: in ERROR with %u sends / %u receives not flushed", i, sq_out,
		     rq_out);
	check_memory(i);
}

static void check_all(void)
{
	if (h.sim.bad_frames)
		fail("a QP emitted a frame the parser refuses: %s",
		     dr_pkt_verdict_str(h.sim.last_bad));
	check_side(0);
	check_side(1);
}

/* ---- setup and teardown ------------------------------------------------------------ */

static int side_setup(unsigned i, uint32_t depth_s, uint32_t depth_r)
{
	struct side *s = &h.s[i];
	struct dr_qp_init_attr ia = {
	    .qpn = i ? QPN_B : QPN_A,
	    .max_send_wr = depth_s,
	    .max_recv_wr = depth_r,
	    .mrt = &s->mrt,
	    .ops = &h.ops,
	    .ctx = &h.sim.end[i],
	    .flags = s->flags,
	};
	struct dr_qp_attr a = {.state = DR_QPS_INIT};
	uint8_t *p;

	s->arena = aligned_alloc(64, ARENA_LEN);
	if (!s->arena || dr_mr_table_init(&s->mrt, 16))
		abort();
	p = s->arena;
	for (unsigned r = 0; r < NREG; r++) {
		uint64_t iova;

		memset(p, GUARD_BYTE, GUARD);
		p += GUARD;
		s->reg[r] = p;
		for (uint32_t k = 0; k < reg_len[r]; k++)
			p[k] = r == R_NONE ? NONE_BYTE : (uint8_t)(k * 13 + r * 7 + i);
		/* side 1's RDMA region sits at the top of the iova space */
		iova = i && r == R_RW ? 0ull - reg_len[r] - 4096 : (uintptr_t)p;
		if (dr_mr_reg(&s->mrt, p, reg_len[r], iova, reg_access[r], &s->mr[r]))
			abort();
		p += reg_len[r];
	}
	memset(p, GUARD_BYTE, GUARD);
	memcpy(s->ro_copy, s->reg[R_RO], reg_len[R_RO]);
	memcpy(s->rw_init, s->reg[R_RW], reg_len[R_RW]);
	/* the guards and the region nobody may touch are out of bounds */
	p = s->arena;
	for (unsigned r = 0; r <= NREG; r++) {
		ASAN_POISON_MEMORY_REGION(p, GUARD);
		if (r < NREG)
			p += GUARD + reg_len[r];
	}
	ASAN_POISON_MEMORY_REGION(s->reg[R_NONE], reg_len[R_NONE]);

	s->qp = dr_qp_create(&ia);
	if (!s->qp)
		abort();
	dr_sim_attach(&h.sim, i, s->qp);
	return dr_qp_modify(s->qp, &a, DR_QP_ATTR_STATE);
}

static void side_free(unsigned i)
{
	struct side *s = &h.s[i];

	dr_qp_destroy(s->qp);
	dr_mr_table_fini(&s->mrt);
	if (s->arena) {
		ASAN_UNPOISON_MEMORY_REGION(s->arena, ARENA_LEN);
		free(s->arena);
	}
	free(s->sq.r);
	free(s->rq.r);
	free(s->in);
	for (size_t k = 0; k < s->nrw; k++)
		free(s->rw[k].data);
	free(s->rw);
	for (size_t k = 0; k < s->nq; k++)
		free(s->q[k].data);
	for (size_t k = 0; k < RECENT; k++)
		free(s->recent[k].data);
}

/*
 * Input header (9 bytes): path MTU, the two initial PSNs (near the wrap or
 * anywhere), timeout, retry_cnt/rnr_retry, ORD/IRD, queue depths, QP flags.
 */
static bool decode_cfg(struct rd *r)
{
	static const uint32_t pmtus[] = {256, 512, 1024, 2048, 4096};
	uint8_t b_mtu = u8(r), b_psn = u8(r), b_t = u8(r), b_retry = u8(r), b_rd = u8(r),
		b_depth = u8(r), b_flags = u8(r), b_psn2 = u8(r), b_timer = u8(r);
	uint32_t psn[2];
	struct dr_sim_cfg sc = {.fault = on_frame, .latency_ns = 1000, .reorder_ns = 5000};

	h.pmtu = pmtus[b_mtu % 5];
	psn[0] = (b_psn & 0x80) ? (0xffffffu - (b_psn & 0x7f)) : (uint32_t)b_psn2 << 16 | b_psn;
	psn[1] = (b_psn2 & 0x80) ? (0xffffffu - (b_psn2 & 0x3f) * 3) : (uint32_t)b_psn << 12;
	h.rnr_retry = (b_retry >> 4) & 7;
	h.s[0].flags = b_flags & 7;
	h.s[1].flags = (b_flags >> 3) & 7;

	memset(&h.sim, 0, sizeof(h.sim));
	dr_sim_init(&h.sim, &sc);
	for (unsigned i = 0; i < 2; i++)
		if (side_setup(i, 1u + ((b_depth >> (4 * i)) & 15) * 2,
			       1u + ((b_depth >> (4 * i + 2)) & 15) * 2))
			return false;
	for (unsigned i = 0; i < 2; i++) {
		struct dr_qp_attr a = {
		    .state = DR_QPS_RTR,
		    .dest_qpn = i ? QPN_A : QPN_B,
		    .rq_psn = psn[i ^ 1],
		    .path_mtu = h.pmtu,
		    .min_rnr_timer = b_timer & 31,
		    .max_dest_rd_atomic = (uint8_t)((b_rd >> (4 * i + 2)) & 3),
		    .path = {.src_mac = {2, 0, 0, 0, 0, (uint8_t)(i + 1)},
			     .dst_mac = {2, 0, 0, 0, 0, (uint8_t)(2 - i)},
			     .src_ip4 = 0xc0a80101 + i,
			     .dst_ip4 = 0xc0a80102 - i},
		};

		if (dr_qp_modify(h.s[i].qp, &a,
				 DR_QP_ATTR_STATE | DR_QP_ATTR_DEST_QPN | DR_QP_ATTR_RQ_PSN |
				     DR_QP_ATTR_PATH_MTU | DR_QP_ATTR_MIN_RNR_TIMER |
				     DR_QP_ATTR_MAX_DEST_RD_ATOMIC | DR_QP_ATTR_PATH))
			fail("side %u: INIT -> RTR refused", i);
	}
	for (unsigned i = 0; i < 2; i++) {
		struct dr_qp_attr a = {
		    .state = DR_QPS_RTS,
		    .sq_psn = psn[i],
		    .timeout = (uint8_t)(1 + b_t % 12), /* at most 16.8 ms: the drain ends */
		    .retry_cnt = b_retry & 7,
		    .rnr_retry = h.rnr_retry,
		    .max_rd_atomic = (uint8_t)((b_rd >> (4 * i)) & 3),
		};

		if (dr_qp_modify(h.s[i].qp, &a,
				 DR_QP_ATTR_STATE | DR_QP_ATTR_SQ_PSN | DR_QP_ATTR_TIMEOUT |
				     DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_RNR_RETRY |
				     DR_QP_ATTR_MAX_RD_ATOMIC))
			fail("side %u: RTR -> RTS refused", i);
		h.s[i].state = DR_QPS_RTS;
	}
	return true;
}

/* ---- actions ------------------------------------------------------------------------ */

/* A local SGE: mostly inside the local region with its key or as a plain
 * pointer, sometimes with a key that does not cover it. */
static void make_sge(struct rd *r, struct side *s, struct dr_sge *g, uint32_t len)
{
	uint8_t m = u8(r);
	uint32_t off = (uint32_t)u16(r) % reg_len[R_LOCAL];

	if (len > reg_len[R_LOCAL])
		len = reg_len[R_LOCAL];
	if (off + len > reg_len[R_LOCAL] && !(m & 0x80))
		off = reg_len[R_LOCAL] - len;
	g->length = len;
	switch (m & 7) {
	case 0: /* trusted pointer: must be in bounds */
		if (off + len > reg_len[R_LOCAL])
			off = reg_len[R_LOCAL] - len;
		g->addr = (uintptr_t)(s->reg[R_LOCAL] + off);
		g->lkey = DR_LKEY_NONE;
		break;
	case 1: /* the read-only region with its own key: a SEND may read it */
	case 5:
		g->addr = s->mr[R_RO]->iova + off % reg_len[R_RO];
		g->lkey = s->mr[R_RO]->key;
		break;
	case 2: /* the RDMA region's key on local memory: out of bounds */
		g->addr = s->mr[R_LOCAL]->iova + off;
		g->lkey = s->mr[R_RW]->key;
		break;
	case 3: /* a key that names nothing */
		g->addr = s->mr[R_LOCAL]->iova + off;
		g->lkey = s->mr[R_LOCAL]->key ^ (1u << (m >> 3 & 15));
		break;
	default:
		g->addr = s->mr[R_LOCAL]->iova + off;
		g->lkey = s->mr[R_LOCAL]->key;
		break;
	}
}

static uint32_t pick_len(struct rd *r)
{
	uint8_t b = u8(r);
	uint32_t p = h.pmtu;
	const uint32_t tab[16] = {0,	     1,	   7,	 8, p - 1, p,	p + 1,	   2 * p,
				  3 * p + 5, 4096, 8192, b, 64,	   255, p * 2 - 1, 4 * p + 3};

	return tab[b & 15] > 16384 ? 16384 : tab[b & 15];
}

/* A remote address and key in the peer's memory. */
static void pick_remote(struct rd *r, const struct side *peer, uint64_t *va, uint32_t *key)
{
	uint8_t m = u8(r);
	int32_t off = (int16_t)u16(r);
	unsigned reg = m & 3;

	*va = peer->mr[reg]->iova + (uint64_t)(int64_t)off;
	if (!(m & 0x40))
		*va = peer->mr[reg]->iova + ((uint32_t)off & 0x7fff) % reg_len[reg];
	*key = (m & 0x80) ? u32(r) : peer->mr[reg]->key;
}

/* What a send WR posted on side i (in RTS) will do at the peer. */
static void expect_at_peer(unsigned i, const struct dr_send_wr *wr, const struct dr_sge *sge)
{
	struct side *s = &h.s[i], *peer = &h.s[i ^ 1];
	const struct dr_mr *rw = peer->mr[R_RW];
	uint32_t len = 0;
	bool stable = true;
	struct rw_op op;

	/* inline data is copied at post time; the read-only region is never
	 * written; anything else may change before a resend reads it */
	for (unsigned k = 0; k < wr->num_sge; k++) {
		len += sge[k].length;
		if (!(wr->flags & DR_WR_INLINE) && sge[k].length && sge[k].lkey != s->mr[R_RO]->key)
			stable = false;
	}
	if (wr->opcode == DR_WR_SEND || wr->opcode == DR_WR_SEND_IMM ||
	    wr->opcode == DR_WR_WRITE_IMM) {
		if (peer->in_tail == peer->in_cap) {
			peer->in_cap = peer->in_cap ? 2 * peer->in_cap : 64;
			peer->in = realloc(peer->in, peer->in_cap * sizeof(*peer->in));
			if (!peer->in)
				abort();
		}
		peer->in[peer->in_tail++] = (struct in_rec){
		    .opcode = wr->opcode == DR_WR_WRITE_IMM ? DR_WC_RECV_WRITE_IMM : DR_WC_RECV,
		    .len = len,
		    .has_imm = wr->opcode != DR_WR_SEND,
		    .imm = wr->imm};
	}
	if (wr->opcode == DR_WR_SEND || wr->opcode == DR_WR_SEND_IMM || wr->opcode == DR_WR_READ ||
	    wr->rkey != rw->key || wr->remote_addr < rw->iova ||
	    wr->remote_addr - rw->iova + len > reg_len[R_RW] ||
	    (len == 0 && !dr_wr_is_atomic(wr->opcode)))
		return; /* no change to the region, or refused (the QP fails) */
	op = (struct rw_op){.op = wr->opcode,
			    .off = (uint32_t)(wr->remote_addr - rw->iova),
			    .len = len,
			    .compare_add = wr->compare_add,
			    .swap = wr->swap};
	if (!dr_wr_is_atomic(wr->opcode)) {
		uint32_t at = 0;

		if (!stable) {
			peer->rw_unknown = true;
			return;
		}
		op.data = malloc(len);
		if (!op.data)
			abort();
		/* the posted local SGEs' iova is their address (only side 1's
		 * RDMA region lives elsewhere, and no local SGE may use it) */
		for (unsigned k = 0; k < wr->num_sge; k++) {
			memcpy(op.data + at, (const uint8_t *)(uintptr_t)sge[k].addr,
			       sge[k].length);
			at += sge[k].length;
		}
	}
	if (peer->nrw == peer->rw_cap) {
		peer->rw_cap = peer->rw_cap ? 2 * peer->rw_cap : 32;
		peer->rw = realloc(peer->rw, peer->rw_cap * sizeof(*peer->rw));
		if (!peer->rw)
			abort();
	}
	peer->rw[peer->nrw++] = op;
}

static void act_post_send(struct rd *r, unsigned i)
{
	static const enum dr_wc_opcode wc_of[DR_WR_NUM] = {
	    DR_WC_SEND, DR_WC_SEND,	 DR_WC_WRITE,	DR_WC_WRITE,
	    DR_WC_READ, DR_WC_FETCH_ADD, DR_WC_CMP_SWAP};
	struct side *s = &h.s[i];
	struct dr_sge sge[3];
	uint8_t b = u8(r), fl = u8(r);
	struct dr_send_wr wr = {
	    .opcode = (enum dr_wr_opcode)(b % DR_WR_NUM),
	    .num_sge = 1 + (b >> 4) % 3,
	    .sg_list = sge,
	    .imm = u32(r),
	};
	uint32_t len = pick_len(r);
	struct wr_rec rec;
	bool was_rts;
	size_t at;
	int ret;

	wr.flags = fl & (DR_WR_SIGNALED | DR_WR_FENCE | DR_WR_INLINE | DR_WR_SOLICITED);
	if (fl & 0x80)
		wr.flags |= DR_WR_SIGNALED;
	if (dr_wr_is_atomic(wr.opcode) && !(fl & 0x40)) {
		len = 8;
		wr.num_sge = 1;
	}
	if (dr_wr_is_atomic(wr.opcode)) {
		wr.compare_add = u64(r);
		wr.swap = u64(r);
	}
	for (unsigned k = 0; k < wr.num_sge; k++)
		make_sge(r, s, &sge[k], k + 1 == wr.num_sge ? len : len / (wr.num_sge + 1));
	if (dr_wr_is_atomic(wr.opcode) && !(fl & 0x40))
		sge[0].addr &= ~7ull;
	pick_remote(r, &h.s[i ^ 1], &wr.remote_addr, &wr.rkey);
	if (dr_wr_is_atomic(wr.opcode) && !(fl & 0x20))
		wr.remote_addr &= ~7ull;

	wr.wr_id = ++h.next_wr_id;
	was_rts = dr_qp_state(s->qp) == DR_QPS_RTS;
	rec = (struct wr_rec){
	    .wr_id = wr.wr_id, .opcode = wc_of[wr.opcode], .signaled = wr.flags & DR_WR_SIGNALED};
	/* recorded first: in ERROR the flush completes it inside the call */
	at = s->sq.tail;
	fifo_push(&s->sq, &rec);
	ret = dr_qp_post_send(s->qp, &wr);
	if (ret) {
		if (s->sq.tail != at + 1 || s->sq.head > at)
			fail("side %u: wr %llu refused (%d) but completed", i,
			     (unsigned long long)wr.wr_id, ret);
		s->sq.tail--;
		return;
	}
	if (was_rts)
		expect_at_peer(i, &wr, sge);
}

static void act_post_recv(struct rd *r, unsigned i)
{
	struct side *s = &h.s[i];
	struct dr_sge sge[3];
	uint8_t b = u8(r);
	struct dr_recv_wr wr = {.num_sge = 1 + b % 3, .sg_list = sge};
	uint32_t len = pick_len(r);
	struct wr_rec rec = {.opcode = DR_WC_RECV, .signaled = true};
	size_t at;
	int ret;

	rec.length = 0;
	for (unsigned k = 0; k < wr.num_sge; k++) {
		make_sge(r, s, &sge[k], k + 1 == wr.num_sge ? len : len / 2);
		rec.length += sge[k].length;
	}
	wr.wr_id = rec.wr_id = ++h.next_wr_id;
	at = s->rq.tail;
	fifo_push(&s->rq, &rec);
	ret = dr_qp_post_recv(s->qp, &wr);
	if (ret) {
		if (s->rq.tail != at + 1 || s->rq.head > at)
			fail("side %u: receive wr %llu refused (%d) but completed", i,
			     (unsigned long long)wr.wr_id, ret);
		s->rq.tail--;
	}
}

/* Hand a whole frame to side `to` as the port would: parse with the ICRC
 * check, drop what fails or names another QP.  A placeable frame's payload
 * is copied where dr_qp_place says while its ICRC is checked
 * (dr_port_set_place), so a frame that fails writes there first. */
static void deliver(unsigned to, const uint8_t *frame, size_t len)
{
	struct dr_qp *qp = h.s[to].qp;
	uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
	struct dr_pkt pkt;
	struct iovec dst[4];
	unsigned n;

	if (!copy)
		abort();
	memcpy(copy, frame, len);
	if (dr_pkt_parse(copy, len, DR_PARSE_DEFER_PLACE, &pkt) != DR_PKT_OK ||
	    pkt.dqpn != dr_qp_num(qp))
		goto out;
	if (pkt.icrc_deferred) {
		n = dr_qp_place(qp, &pkt, dst, 4);
		if (!dr_pkt_icrc_place(&pkt, dst, n))
			goto out;
	}
	dr_qp_input(qp, &pkt);
out:
	free(copy);
}

/* A copy of a frame with its payload inverted (the ICRC then wrong), as a
 * link that corrupts it would deliver; the frame itself stays queued. */
static void deliver_corrupt(unsigned to, const struct frame *f)
{
	uint8_t *c = malloc(f->len ? f->len : 1);
	struct dr_pkt pkt;

	if (!c)
		abort();
	memcpy(c, f->data, f->len);
	if (dr_pkt_parse(c, f->len, DR_PARSE_NO_ICRC, &pkt) == DR_PKT_OK && pkt.payload_len) {
		uint8_t *p = c + (pkt.payload - c);

		for (uint32_t k = 0; k < pkt.payload_len; k++)
			p[k] ^= 0xff;
	} else if (f->len) {
		c[f->len - 1] ^= 0x40;
	}
	deliver(to, c, f->len);
	free(c);
}

/* Take frame k off side i's queue (it goes towards the peer). */
static struct frame take(unsigned i, size_t k)
{
	struct side *s = &h.s[i];
	struct frame f = s->q[k];

	memmove(&s->q[k], &s->q[k + 1], (s->nq - k - 1) * sizeof(s->q[0]));
	s->nq--;
	return f;
}

static void act_link(struct rd *r, unsigned i)
{
	struct side *s = &h.s[i];
	uint8_t b = u8(r), n = u8(r);
	struct frame f;
	size_t k;

	if (!s->nq)
		return;
	switch (b & 7) {
	case 0: /* deliver n in order */
	case 1:
	case 2:
		for (unsigned c = 0; c < 1u + n % 64 && s->nq; c++) {
			f = take(i, 0);
			deliver(i ^ 1, f.data, f.len);
			free(f.data);
		}
		break;
	case 3: /* deliver everything queued now, in order */
		for (size_t c = s->nq; c && s->nq; c--) {
			f = take(i, 0);
			deliver(i ^ 1, f.data, f.len);
			free(f.data);
		}
		break;
	case 4: /* drop n */
		for (unsigned c = 0; c < 1u + n % 8 && s->nq; c++)
			free(take(i, 0).data);
		break;
	case 5: /* duplicate: deliver a copy of frame k, keep it queued; or a
		 * corrupted copy of it (a link fault too: not forged) */
		k = n % s->nq;
		if (b & 0x08)
			deliver_corrupt(i ^ 1, &s->q[k]);
		else
			deliver(i ^ 1, s->q[k].data, s->q[k].len);
		break;
	case 6: /* deliver frame k out of order */
		f = take(i, n % s->nq);
		deliver(i ^ 1, f.data, f.len);
		free(f.data);
		break;
	default: /* swap the head with frame k */
		k = n % s->nq;
		f = s->q[0];
		s->q[0] = s->q[k];
		s->q[k] = f;
		break;
	}
}

static void advance(uint64_t ns)
{
	h.events = 0;
	h.event_cap = 10000;
	dr_sim_run(&h.sim, h.sim.now_ns + ns, run_stop, NULL);
}

static void act_clock(struct rd *r)
{
	static const uint64_t step[8] = {0, 1000, 10000, 100000, 1000000, 10000000, 100000000, 0};
	uint8_t b = u8(r);

	if ((b & 7) == 7) { /* to the next deadline of either QP */
		uint64_t d = dr_qp_deadline_ns(h.s[0].qp);

		if (dr_qp_deadline_ns(h.s[1].qp) < d)
			d = dr_qp_deadline_ns(h.s[1].qp);
		if (d != UINT64_MAX && d > h.sim.now_ns)
			advance(d - h.sim.now_ns);
		return;
	}
	advance(step[b & 7] + (b >> 3) * 37);
}

/* A frame for side `to`, as its peer would address it. */
static void base_desc(unsigned to, struct dr_pkt_desc *d, uint8_t opcode, uint32_t psn)
{
	const struct dr_qp *from = h.s[to ^ 1].qp;

	*d = from->tmpl;
	d->opcode = opcode;
	d->dqpn = from->attr.dest_qpn;
	d->psn = psn & DR_PSN_MASK;
}

static uint32_t pick_psn(struct rd *r, unsigned to)
{
	const struct dr_qp *qp = h.s[to].qp;
	uint8_t b = u8(r);
	int32_t delta = (int8_t)u8(r);
	uint32_t base;

	switch (b & 7) {
	case 0:
	case 1:
		base = qp->resp.psn;
		break;
	case 2:
	case 3:
		base = qp->comp.psn;
		break;
	case 4:
		base = qp->req.psn;
		break;
	case 5:
		base = qp->comp.max_psn;
		break;
	case 6:
		base = qp->comp.psn;
		delta = (int32_t)(b >> 3) - 4; /* the edges of what is in flight */
		break;
	default:
		return u32(r) & DR_PSN_MASK;
	}
	return dr_psn_add(base, delta);
}

static void finish_and_deliver(struct rd *r, unsigned to, const struct dr_pkt_desc *d, uint8_t how)
{
	static uint8_t buf[DR_MAX_PMTU + 256];
	int n = dr_pkt_build(d, buf, sizeof(buf));

	if (n < 0)
		return; /* e.g. a payload on an opcode that carries none */
	if ((how & 0x1f) == 0x1f)
		buf[n - 1 - (how >> 5)] ^= 0x40; /* a wrong ICRC: dropped */
	h.forged = true;
	deliver(to, buf, (size_t)n);
}

/* A request or response built from scratch by the harness. */
static void act_forge(struct rd *r, unsigned to)
{
	static const uint8_t ops[] = {
	    DR_OP_SEND_FIRST,
	    DR_OP_SEND_MIDDLE,
	    DR_OP_SEND_LAST,
	    DR_OP_SEND_LAST_IMM,
	    DR_OP_SEND_ONLY,
	    DR_OP_SEND_ONLY_IMM,
	    DR_OP_WRITE_FIRST,
	    DR_OP_WRITE_MIDDLE,
	    DR_OP_WRITE_LAST,
	    DR_OP_WRITE_LAST_IMM,
	    DR_OP_WRITE_ONLY,
	    DR_OP_WRITE_ONLY_IMM,
	    DR_OP_READ_REQ,
	    DR_OP_READ_RSP_FIRST,
	    DR_OP_READ_RSP_MIDDLE,
	    DR_OP_READ_RSP_LAST,
	    DR_OP_READ_RSP_ONLY,
	    DR_OP_ACK,
	    DR_OP_ATOMIC_ACK,
	    DR_OP_CMP_SWAP,
	    DR_OP_FETCH_ADD,
	    DR_OP_SEND_LAST_INV,
	    DR_OP_SEND_ONLY_INV,
	    DR_OP_ACK,
	    DR_OP_ACK,
	    DR_OP_READ_RSP_ONLY,
	    DR_OP_UD_SEND_ONLY,
	    DR_OP_ACK,
	    DR_OP_WRITE_ONLY,
	    DR_OP_SEND_ONLY,
	    DR_OP_READ_REQ,
	    DR_OP_FETCH_ADD,
	};
	static const uint8_t syndromes[8] = {
	    DR_AETH_ACK_UNLIMITED, DR_AETH_ACK_UNLIMITED,  DR_AETH_RNR_NAK | 1, DR_AETH_NAK_PSN_SEQ,
	    DR_AETH_NAK_INV_REQ,   DR_AETH_NAK_REM_ACCESS, DR_AETH_NAK_REM_OP,	0,
	};
	uint8_t b = u8(r), how = u8(r), fl = u8(r);
	const struct dr_opcode_info *o;
	struct dr_pkt_desc d;
	uint32_t plen;

	base_desc(to, &d, ops[b % sizeof(ops)], pick_psn(r, to));
	o = dr_opcode(d.opcode);
	d.ackreq = fl & 1;
	d.se = fl & 2;
	if (fl & 4)
		d.dqpn = u32(r) & DR_QPN_MASK;
	if (fl & 8)
		d.pkey = u16(r);
	plen = pick_len(r);
	if (plen > DR_MAX_PMTU)
		plen = DR_MAX_PMTU;
	if (o && (o->flags & DR_OPF_PAYLOAD)) {
		memset(h.payload, fl, plen);
		d.payload = h.payload;
		d.payload_len = plen;
	}
	pick_remote(r, &h.s[to], &d.reth.va, &d.reth.rkey);
	d.reth.len = (fl & 0x10) ? u32(r) : (fl & 0x20) ? plen + h.pmtu * (fl >> 6) : plen;
	d.atmeth.va = d.reth.va;
	d.atmeth.rkey = d.reth.rkey;
	d.atmeth.swap_add = u64(r);
	d.atmeth.cmp = u64(r);
	d.aeth.syndrome = syndromes[how & 7] ? syndromes[how & 7] : u8(r);
	if ((how & 7) == 2)
		d.aeth.syndrome = DR_AETH_RNR_NAK | (u8(r) & 31);
	d.aeth.msn = (how & 8) ? u32(r) & 0xffffff : h.s[to ^ 1].qp->resp.msn;
	d.atmack_orig = u64(r);
	d.imm = u32(r);
	d.ieth_rkey = u32(r);
	d.deth.qkey = u32(r);
	d.deth.sqpn = dr_qp_num(h.s[to ^ 1].qp);
	finish_and_deliver(r, to, &d, how);
}

/* A frame a QP sent, edited, to either side. */
static void act_mutate(struct rd *r, unsigned from)
{
	struct side *s = &h.s[from];
	uint8_t b = u8(r), how = u8(r), nedit = 1 + u8(r) % 3;
	struct dr_pkt pkt;
	struct dr_pkt_desc d;
	struct frame *f;
	unsigned to = (b & 0x80) ? from : from ^ 1; /* sometimes reflected */
	uint8_t *copy;

	if (!s->nrecent)
		return;
	f = &s->recent[(s->nrecent - 1 - b % RECENT) % RECENT];
	if (!f->data || dr_pkt_parse(f->data, f->len, DR_PARSE_NO_ICRC, &pkt) != DR_PKT_OK)
		return;
	dr_pkt_to_desc(&pkt, &d);
	if (to == from) { /* turn it around: addressed as the peer would */
		struct dr_pkt_desc t;

		base_desc(to, &t, d.opcode, d.psn);
		memcpy(d.src_mac, t.src_mac, 6);
		memcpy(d.dst_mac, t.dst_mac, 6);
		d.src_ip4 = t.src_ip4;
		d.dst_ip4 = t.dst_ip4;
		d.sport = t.sport;
		d.dqpn = t.dqpn;
	}
	for (unsigned e = 0; e < nedit; e++) {
		uint8_t k = u8(r);

		switch (k & 15) {
		case 0:
			d.psn = dr_psn_add(d.psn, (int8_t)u8(r));
			break;
		case 1:
			d.opcode = u8(r) % 0x18;
			break;
		case 2:
			d.payload_len = pkt.payload_len > (k >> 4) ? pkt.payload_len - (k >> 4) : 0;
			break;
		case 3:
			d.reth.len += (uint32_t)(int8_t)u8(r) * (k >> 4 ? h.pmtu : 1);
			break;
		case 4:
			d.reth.va += (uint64_t)(int64_t)(int16_t)u16(r);
			break;
		case 5:
			d.reth.rkey ^= 1u << (u8(r) & 31);
			d.atmeth.rkey = d.reth.rkey;
			break;
		case 6:
			d.aeth.syndrome = u8(r);
			break;
		case 7:
			d.aeth.msn = u32(r) & 0xffffff;
			break;
		case 8:
			d.ackreq = !d.ackreq;
			break;
		case 9:
			d.atmeth.va += (uint64_t)(int8_t)u8(r);
			break;
		case 10:
			d.dqpn = u32(r) & DR_QPN_MASK;
			break;
		case 11:
			d.pkey = u16(r);
			break;
		case 12:
			d.psn = pick_psn(r, to);
			break;
		default:
			break; /* unchanged: a replay */
		}
	}
	if (!(dr_opcode(d.opcode)->flags & DR_OPF_PAYLOAD))
		d.payload_len = 0;
	/* the payload may have been trimmed; build from a private copy */
	copy = malloc(pkt.payload_len + 1);
	if (!copy)
		abort();
	memcpy(copy, pkt.payload, pkt.payload_len);
	d.payload = copy;
	finish_and_deliver(r, to, &d, how);
	free(copy);
}

static void act_modify(struct rd *r, unsigned i)
{
	uint8_t b = u8(r);
	struct dr_qp_attr a = {.state = DR_QPS_RTS,
			       .retry_cnt = b & 7,
			       .rnr_retry = h.rnr_retry,
			       .min_rnr_timer = b >> 3};

	if (b & 0x80) {
		a.state = DR_QPS_ERROR;
		dr_qp_modify(h.s[i].qp, &a, DR_QP_ATTR_STATE);
		return;
	}
	/* RTS -> RTS with fresh retry counts (refused in ERROR) */
	dr_qp_modify(h.s[i].qp, &a,
		     DR_QP_ATTR_STATE | DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_MIN_RNR_TIMER);
}

/* One action; returns false at the end of the input. */
static bool act(struct rd *r)
{
	unsigned a, i;

	if (!next_action(r, &a, &i))
		return false;
	switch (a % 16) {
	case 0:
	case 1:
	case 2:
		act_post_send(r, i);
		break;
	case 3:
	case 4:
		act_post_recv(r, i);
		break;
	case 5:
	case 6:
	case 7:
	case 8:
		act_link(r, i);
		break;
	case 9:
	case 10:
		act_clock(r);
		break;
	case 11:
	case 12:
		act_forge(r, i);
		break;
	case 13:
		act_mutate(r, i);
		break;
	case 14:
		dr_qp_flush(h.s[i].qp);
		break;
	default:
		act_modify(r, i);
		break;
	}
	return true;
}

/* Both QPs in RTS after the drain, nothing forged: every message the
 * peer sent has arrived, and the RDMA regions hold exactly what the
 * peers' WRITEs and atomics, executed once each in posting order, make. */
static void check_delivered(void)
{
	static uint8_t want[8192];

	for (unsigned i = 0; i < 2; i++) {
		struct side *s = &h.s[i];

		if (s->in_head != s->in_tail)
			fail("side %u: %zu messages sent by the peer never arrived", i,
			     s->in_tail - s->in_head);
		if (s->rw_unknown)
			continue;
		memcpy(want, s->rw_init, reg_len[R_RW]);
		for (size_t k = 0; k < s->nrw; k++) {
			const struct rw_op *op = &s->rw[k];
			uint64_t v;

			if (!dr_wr_is_atomic(op->op)) {
				memcpy(want + op->off, op->data, op->len);
				continue;
			}
			memcpy(&v, want + op->off, 8);
			if (op->op == DR_WR_FETCH_ADD)
				v += op->compare_add;
			else if (v == op->compare_add)
				v = op->swap;
			memcpy(want + op->off, &v, 8);
		}
		for (uint32_t k = 0; k < reg_len[R_RW]; k++)
			if (s->reg[R_RW][k] != want[k])
				fail("side %u: RDMA region byte %u is %02x, the peer's %zu WRITEs "
				     "and "
				     "atomics make it %02x",
				     i, k, s->reg[R_RW][k], s->nrw, want[k]);
	}
}

/* The end of the script: the link delivers what it holds, in order, and
 * then runs freely until nothing is in flight and no timer is armed. */
static void drain(void)
{
	bool quiet;

	for (unsigned round = 0; round < 64 && (h.s[0].nq || h.s[1].nq); round++)
		for (unsigned i = 0; i < 2; i++)
			while (h.s[i].nq) {
				struct frame f = take(i, 0);

				deliver(i ^ 1, f.data, f.len);
				free(f.data);
			}
	check_all();
	h.hold = false;
	h.events = 0;
	h.event_cap = 50000;
	quiet = dr_sim_run(&h.sim, h.sim.now_ns + 3600ull * 1000000000ull, run_stop, NULL) &&
		h.events <= h.event_cap;
	check_all();
	if (!quiet)
		fail("the link never went quiet (%llu events, receives posted all along)",
		     (unsigned long long)h.events);
	if (!h.forged && dr_qp_state(h.s[0].qp) == DR_QPS_RTS &&
	    dr_qp_state(h.s[1].qp) == DR_QPS_RTS)
		check_delivered();
	for (unsigned i = 0; i < 2; i++) {
		struct dr_qp *qp = h.s[i].qp;

		if (dr_qp_state(qp) == DR_QPS_RTS && qp->sq.head != qp->sq.tail)
			fail("side %u: quiet link, no timer, yet %u send WRs outstanding (req %s, "
			     "comp.psn %#x req.psn %#x max %#x)",
			     i, qp->sq.head - qp->sq.tail, dr_req_state_names[qp->req.state],
			     qp->comp.psn, qp->req.psn, qp->comp.max_psn);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd r = {data, size};
	unsigned steps = 0;

	memset(&h, 0, sizeof(h));
	h.ops = dr_sim_qp_ops;
	h.ops.complete = on_complete;
	h.ops.remote_op = on_remote_op;
	h.hold = true;
	if (decode_cfg(&r)) {
		check_all();
		while (steps++ < 400 && act(&r))
			check_all();
		drain();
	}
	for (unsigned i = 0; i < 2; i++)
		side_free(i);
	dr_sim_fini(&h.sim);
	return 0;
}
