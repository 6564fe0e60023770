/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * simlink.c - the simulated link of simlink.h (tests only).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simlink.h"

struct dr_sim_ev {
	uint64_t t_ns;
	uint64_t seq;
	unsigned dir;
	bool in_ring; /* arrived, waiting in the receiver's ring (rx_ring) */
	size_t len;
	uint8_t data[];
};

static uint64_t dr_sim_rand(struct dr_sim *s)
{
	/* xorshift64*: deterministic for a given seed */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545f4914f6cdd1dull;
}

static double dr_sim_unit(struct dr_sim *s)
{
	return (double)(dr_sim_rand(s) >> 11) / (double)(1ull << 53);
}

static bool dr_sim_ev_before(const struct dr_sim_ev *a, const struct dr_sim_ev *b)
{
	return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

static void dr_sim_push(struct dr_sim *s, struct dr_sim_ev *ev)
{
	size_t i;

	if (s->nheap == s->heap_cap) {
		s->heap_cap = s->heap_cap ? 2 * s->heap_cap : 256;
		s->heap = realloc(s->heap, s->heap_cap * sizeof(*s->heap));
		if (!s->heap)
			abort();
	}
	i = s->nheap++;
	while (i && dr_sim_ev_before(ev, s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = ev;
}

static struct dr_sim_ev *dr_sim_pop(struct dr_sim *s)
{
	struct dr_sim_ev *top = s->heap[0], *last = s->heap[--s->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && dr_sim_ev_before(s->heap[c + 1], s->heap[c]))
			c++;
		if (!dr_sim_ev_before(s->heap[c], last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap)
		s->heap[i] = last;
	return top;
}

static void dr_sim_enqueue(struct dr_sim *s, unsigned dir, const void *frame, size_t len,
			   uint64_t t_ns)
{
	struct dr_sim_ev *ev = malloc(sizeof(*ev) + len);

	if (!ev)
		abort();
	ev->t_ns = t_ns;
	ev->seq = s->seq++;
	ev->dir = dir;
	ev->in_ring = false;
	ev->len = len;
	memcpy(ev->data, frame, len);
	dr_sim_push(s, ev);
}

static void dr_sim_xmit(void *ctx, struct dr_qp *qp, const void *frame, size_t len)
{
	struct dr_sim_end *e = ctx;
	struct dr_sim *s = e->sim;
	enum dr_sim_action act = DR_SIM_PASS;
	enum dr_pkt_verdict v;
	struct dr_pkt pkt;
	uint64_t start, tx_ns = 0, t;

	/* wire fidelity: everything the engine emits must parse */
	v = dr_pkt_parse(frame, len, 0, &pkt);
	if (v != DR_PKT_OK) {
		s->bad_frames++;
		s->last_bad = v;
		fprintf(stderr, "simlink: end %u emitted a bad frame: %s\n", e->idx,
			dr_pkt_verdict_str(v));
		return;
	}
	if (s->cfg.fault) {
		act = s->cfg.fault(s->cfg.fault_arg, e->idx, e->frame_no, &pkt);
	} else {
		double u = dr_sim_unit(s);

		if (u < s->cfg.drop)
			act = DR_SIM_DROP;
		else if (u < s->cfg.drop + s->cfg.dup)
			act = DR_SIM_DUP;
		else if (u < s->cfg.drop + s->cfg.dup + s->cfg.reorder)
			act = DR_SIM_DELAY;
	}
	if (getenv("DR_SIM_TRACE"))
		fprintf(stderr, "[%llu ns] %u->%u %-32s psn %u%s %s\n",
			(unsigned long long)s->now_ns, e->idx, e->idx ^ 1,
			dr_opcode_name(pkt.opcode), pkt.psn, pkt.ackreq ? " A" : "",
			act == DR_SIM_DROP	? "DROP"
			: act == DR_SIM_DUP	? "DUP"
			: act == DR_SIM_DELAY	? "DELAY"
			: act == DR_SIM_CORRUPT ? "CORRUPT"
						: "");
	e->frame_no++;
	e->tx_frames++;
	e->tx_bytes += len;
	start = s->now_ns > e->link_free_ns ? s->now_ns : e->link_free_ns;
	if (s->cfg.rate_bps)
		tx_ns = (uint64_t)len * 8 * 1000000000ull / s->cfg.rate_bps;
	e->link_free_ns = start + tx_ns;
	t = e->link_free_ns + s->cfg.latency_ns;
	switch (act) {
	case DR_SIM_DROP:
		e->dropped++;
		return;
	case DR_SIM_DUP:
		e->duplicated++;
		dr_sim_enqueue(s, e->idx, frame, len, t);
		dr_sim_enqueue(s, e->idx, frame, len, t + tx_ns + 1);
		return;
	case DR_SIM_DELAY:
		e->delayed++;
		dr_sim_enqueue(s, e->idx, frame, len, t + s->cfg.reorder_ns);
		return;
	case DR_SIM_CORRUPT: {
		uint8_t *bad = malloc(len);
		size_t at = (size_t)(pkt.payload - (const uint8_t *)frame);

		if (!bad)
			abort();
		memcpy(bad, frame, len);
		for (size_t i = 0; i < pkt.payload_len; i++)
			bad[at + i] ^= 0xff;
		e->corrupted++;
		/* at the same instant: the copy goes first (dr_sim_ev_before) */
		dr_sim_enqueue(s, e->idx, bad, len, t);
		dr_sim_enqueue(s, e->idx, frame, len, t);
		free(bad);
		return;
	}
	default:
		dr_sim_enqueue(s, e->idx, frame, len, t);
	}
}

static uint64_t dr_sim_now(void *ctx)
{
	struct dr_sim_end *e = ctx;

	return e->sim->now_ns;
}

static void dr_sim_sent(void *ctx, struct dr_qp *qp, uint32_t unacked)
{
	struct dr_sim_end *e = ctx;

	e->sent_calls++;
	e->sent_unacked = unacked;
}

static void dr_sim_complete(void *ctx, struct dr_qp *qp, const struct dr_wc *wc)
{
	struct dr_sim_end *e = ctx;

	if (e->nwc == e->wc_cap) {
		e->wc_cap = e->wc_cap ? 2 * e->wc_cap : 64;
		e->wc = realloc(e->wc, e->wc_cap * sizeof(*e->wc));
		if (!e->wc)
			abort();
	}
	e->wc[e->nwc++] = *wc;
}

static void dr_sim_log(void *ctx, struct dr_qp *qp, const char *msg)
{
	struct dr_sim_end *e = ctx;

	if (getenv("DR_SIM_LOG"))
		fprintf(stderr, "[%llu ns] end %u: %s\n", (unsigned long long)e->sim->now_ns,
			e->idx, msg);
}

const struct dr_qp_ops dr_sim_qp_ops = {
    .xmit = dr_sim_xmit,
    .sent = dr_sim_sent,
    .now_ns = dr_sim_now,
    .timer_set = NULL, /* the run loop polls dr_qp_deadline_ns() */
    .complete = dr_sim_complete,
    .log = dr_sim_log,
};

void dr_sim_init(struct dr_sim *s, const struct dr_sim_cfg *cfg)
{
	unsigned i;

	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->rng = cfg->seed ? cfg->seed : 0x9e3779b97f4a7c15ull;
	for (i = 0; i < 2; i++) {
		s->end[i].sim = s;
		s->end[i].idx = i;
	}
}

void dr_sim_fini(struct dr_sim *s)
{
	unsigned i;

	while (s->nheap)
		free(dr_sim_pop(s));
	free(s->heap);
	for (i = 0; i < 2; i++)
		free(s->end[i].wc);
	memset(s, 0, sizeof(*s));
}

void dr_sim_attach(struct dr_sim *s, unsigned idx, struct dr_qp *qp)
{
	s->end[idx].qp = qp;
}

/* A frame arriving at or leaving the receiver's ring (dr_sim_cfg.rx_ring).
 * Arriving: dropped if the ring is full, else it waits there until the
 * receiver takes it (the event comes back then, in_ring).  True when the
 * frame is to be handed to the QP now. */
static bool dr_sim_ring(struct dr_sim *s, struct dr_sim_ev *ev)
{
	struct dr_sim_end *to = &s->end[ev->dir ^ 1];
	uint64_t take;

	if (ev->in_ring) {
		to->rx_waiting--;
		return true;
	}
	if (to->rx_waiting >= s->cfg.rx_ring) {
		to->ring_drops++;
		if (getenv("DR_SIM_TRACE"))
			fprintf(stderr, "[%llu ns] %u->%u ring full (%u): DROP\n",
				(unsigned long long)s->now_ns, ev->dir, ev->dir ^ 1,
				to->rx_waiting);
		free(ev);
		return false;
	}
	take = to->rx_next_ns > s->now_ns ? to->rx_next_ns : s->now_ns;
	to->rx_next_ns = take + s->cfg.rx_take_ns;
	if (++to->rx_waiting > to->rx_max_waiting)
		to->rx_max_waiting = to->rx_waiting;
	ev->in_ring = true;
	ev->t_ns = take;
	ev->seq = s->seq++;
	dr_sim_push(s, ev);
	return false;
}

static void dr_sim_deliver(struct dr_sim *s, const struct dr_sim_ev *ev)
{
	struct dr_qp *to = s->end[ev->dir ^ 1].qp;
	struct dr_pkt pkt;

	if (!to ||
	    dr_pkt_parse(ev->data, ev->len, s->cfg.place ? DR_PARSE_DEFER_PLACE : 0, &pkt) !=
		DR_PKT_OK ||
	    pkt.dqpn != dr_qp_num(to))
		return;
	if (pkt.icrc_deferred) {
		struct iovec dst[4];
		unsigned n = dr_qp_place(to, &pkt, dst, 4);

		if (!dr_pkt_icrc_place(&pkt, dst, n)) {
			s->end[ev->dir ^ 1].placed_bad += n > 0;
			return;
		}
		s->end[ev->dir ^ 1].placed += pkt.payload_placed;
	}
	if (s->cfg.deliver)
		s->cfg.deliver(s->cfg.fault_arg, ev->dir, &pkt);
	dr_qp_input(to, &pkt);
}

/* When the end's timers run: its QP's deadline, after any stall. */
static uint64_t dr_sim_deadline(const struct dr_sim_end *e)
{
	uint64_t d = dr_qp_deadline_ns(e->qp);

	return d != UINT64_MAX && d < e->stall_until_ns ? e->stall_until_ns : d;
}

bool dr_sim_run(struct dr_sim *s, uint64_t limit_ns, bool (*stop)(void *arg), void *arg)
{
	for (;;) {
		uint64_t t_frame = s->nheap ? s->heap[0]->t_ns : UINT64_MAX;
		uint64_t t_timer = UINT64_MAX, t;
		unsigned i;

		if (stop && stop(arg))
			return true;
		for (i = 0; i < 2; i++)
			if (s->end[i].qp && dr_sim_deadline(&s->end[i]) < t_timer)
				t_timer = dr_sim_deadline(&s->end[i]);
		t = t_frame < t_timer ? t_frame : t_timer;
		if (t == UINT64_MAX)
			return true;
		if (t > limit_ns) {
			if (s->now_ns < limit_ns)
				s->now_ns = limit_ns;
			return false;
		}
		if (t > s->now_ns)
			s->now_ns = t;
		s->events++;
		if (t_frame <= t_timer) {
			struct dr_sim_ev *ev = dr_sim_pop(s);
			struct dr_sim_end *to = &s->end[ev->dir ^ 1];

			if (to->stall_until_ns > s->now_ns) {
				/* in order: later frames get later seq */
				ev->t_ns = to->stall_until_ns;
				ev->seq = s->seq++;
				dr_sim_push(s, ev);
				continue;
			}
			if (s->cfg.rx_ring && !dr_sim_ring(s, ev))
				continue;
			dr_sim_deliver(s, ev);
			/* the last frame of its burst: the end flushes */
			if (s->cfg.flush_bursts && to->qp &&
			    !(s->nheap && s->heap[0]->t_ns == s->now_ns &&
			      s->heap[0]->dir == ev->dir) &&
			    dr_qp_flush_due(to->qp))
				dr_qp_flush(to->qp);
			free(ev);
		} else {
			for (i = 0; i < 2; i++)
				if (s->end[i].qp && dr_sim_deadline(&s->end[i]) <= s->now_ns) {
					dr_qp_tick(s->end[i].qp);
					/* as a poll flushes what its timers
					 * left due (a lazy ACK come due) */
					if (s->cfg.flush_bursts && dr_qp_flush_due(s->end[i].qp))
						dr_qp_flush(s->end[i].qp);
				}
		}
	}
}
