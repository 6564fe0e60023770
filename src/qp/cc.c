/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cc.c - congestion control (DR_QP_CC, docs/protocol.md B.11): ECN on the
 * data a requester sends, CNPs from a receiver that sees CE (RoCEv2 annex
 * A17.9), and a per-QP sending rate after DCQCN (Zhu et al., SIGCOMM 2015)
 * that CNPs and go-back-N lower and time raises again, enforced by pacing
 * the requester.
 *
 * Everything is evaluated lazily against the QP's clock when the QP sends
 * or hears a signal: the increase and alpha timers of DCQCN are periods
 * counted since the last cut, not timers of their own.  The one deadline
 * is the pacer's (the requester waits for its tokens, DR_REQ_WAIT_RATE),
 * which dr_qp_timer_update hands to the caller with the others.
 */
#include <string.h>

#include "qp_priv.h"

/* Fixed point for alpha: DR_CC_ONE is 1.0. */
#define DR_CC_ONE 1024u

/* Headers a data packet adds to its payload on the wire (Ethernet, IPv4,
 * UDP, BTH, ICRC); the pacer counts frames by payload + this (a RETH on a
 * message's first packet is not worth counting). */
#define DR_CC_HDR_BYTES 58u

static uint64_t dr_cc_burst(const struct dr_qp *qp)
{
	uint64_t b = (uint64_t)qp->cc.rate_mbps * DR_CC_BURST_NS / 8000,
		 two = 2 * ((uint64_t)qp->attr.path_mtu + DR_CC_HDR_BYTES);

	return b > two ? b : two;
}

/*
 * DCQCN's timers are set for round trips of microseconds; a software path's
 * round trip includes a bottleneck's queue, milliseconds (2.6 ms through a
 * 64 KiB queue at 200 Mb/s), and a rate raised again before the last
 * cut's effect is seen only overshoots once more (measured through such a
 * queue: with 100 us periods a QP was back to unlimited between two CNPs
 * and resent as much as without congestion control).  So each period --
 * alpha's, the increase's, the least time between two cuts -- is at least
 * the smoothed round trip (DR_QP_ADAPTIVE_RTO measures it), as TCP cuts at
 * most once and grows once a round trip.
 */
static uint64_t dr_cc_period(const struct dr_qp *qp, uint64_t base)
{
	return qp->comp.srtt_ns > base ? qp->comp.srtt_ns : base;
}

static void dr_cc_publish(struct dr_qp *qp)
{
	qp->stats.cc_rate_mbps = qp->cc.limited ? qp->cc.rate_mbps : 0;
}

void dr_cc_init(struct dr_qp *qp)
{
	memset(&qp->cc, 0, sizeof(qp->cc));
	qp->cc.on = qp->flags & DR_QP_CC;
	qp->cc.alpha = DR_CC_ONE;
	dr_cc_publish(qp);
}

/* One increase period passed without a cut (DCQCN's rate increase event,
 * timer-driven only): fast recovery halves the distance to the target for
 * DR_CC_FAST_STEPS periods, then the target grows additively, then, after
 * as many again, by hyper increase steps that grow by DR_CC_HAI_MBPS a
 * period.  Reaching DR_CC_MAX_MBPS ends the limit. */
static void dr_cc_increase(struct dr_qp *qp)
{
	struct dr_cc *c = &qp->cc;
	uint64_t rt = c->target_mbps;

	c->stage++;
	if (c->stage > 2 * DR_CC_FAST_STEPS)
		rt += (uint64_t)DR_CC_HAI_MBPS * (c->stage - 2 * DR_CC_FAST_STEPS);
	else if (c->stage > DR_CC_FAST_STEPS)
		rt += DR_CC_AI_MBPS;
	c->target_mbps = rt < DR_CC_MAX_MBPS ? (uint32_t)rt : DR_CC_MAX_MBPS;
	c->rate_mbps = (c->rate_mbps + c->target_mbps + 1) / 2;
	if (c->rate_mbps >= DR_CC_MAX_MBPS) {
		/* the episode is over: the next one starts afresh */
		c->limited = false;
		c->alpha = DR_CC_ONE;
	}
}

/* Bring the timers up to now: while the rate is limited, alpha decays by
 * 1/DR_CC_G_INV each period without a cut (DCQCN's alpha update) and the
 * rate rises each increase period; the bucket fills.  An unlimited QP
 * keeps alpha at 1, DCQCN's initial value, so that the first signal of an
 * episode halves the rate whatever the time since the last one. */
static void dr_cc_advance(struct dr_qp *qp, uint64_t now)
{
	struct dr_cc *c = &qp->cc;
	uint64_t ap = dr_cc_period(qp, DR_CC_ALPHA_NS), ip = dr_cc_period(qp, DR_CC_PERIOD_NS);
	unsigned n;

	for (n = 0; c->limited && now - c->alpha_ns >= ap; n++) {
		if (n == 64) { /* long idle: alpha is 0 by now */
			c->alpha = 0;
			c->alpha_ns = now;
			break;
		}
		c->alpha -= c->alpha / DR_CC_G_INV;
		c->alpha_ns += ap;
	}
	for (n = 0; c->limited && now - c->inc_ns >= ip; n++) {
		if (n == 256) {
			c->inc_ns = now;
			break;
		}
		dr_cc_increase(qp);
		c->inc_ns += ip;
	}
	if (c->limited) {
		int64_t burst = (int64_t)dr_cc_burst(qp);

		c->tokens += (int64_t)((now - c->tok_ns) * c->rate_mbps / 8000);
		if (c->tokens > burst)
			c->tokens = burst;
	}
	c->tok_ns = now;
	dr_cc_publish(qp);
}

/* The sending rate the QP has shown: bytes sent over the last period of at
 * least DR_CC_MEASURE_NS (a gap of idleness is not a sample).  The last
 * sample, not an average: the first window of a transfer leaves faster
 * than the path takes it (on a 10 Gb/s link, 14.7 Gb/s over its first
 * 115 us, then 10.1), and the reference must be the rate now.
 *
 * The clock is read every meas_every packets, not on each (an rdtsc per
 * packet was 2 % of a requester posting 4 KiB READs): a period ends at a
 * read, so its bytes and its length still match, and meas_every is set
 * from the last period to at least DR_CC_MEASURE_READS reads a period. */
#define DR_CC_MEASURE_READS	32u
#define DR_CC_MEASURE_EVERY_MAX 16u

static void dr_cc_measure(struct dr_qp *qp, uint32_t bytes)
{
	struct dr_cc *c = &qp->cc;
	uint64_t now, dt;

	c->meas_bytes += bytes;
	c->meas_pkts++;
	if (c->meas_left > 1) {
		c->meas_left--;
		return;
	}
	now = dr_qp_now(qp);
	dt = now - c->meas_ns;
	if (dt < DR_CC_MEASURE_NS) {
		c->meas_left = c->meas_every;
		return;
	}
	if (dt <= 8 * DR_CC_MEASURE_NS) {
		uint64_t s = c->meas_bytes * 8000 / dt;

		c->meas_mbps = (uint32_t)s;
		c->meas_every = c->meas_pkts / DR_CC_MEASURE_READS;
	} else {
		c->meas_every = 1; /* idle: the next period starts afresh */
	}
	if (c->meas_every < 1)
		c->meas_every = 1;
	if (c->meas_every > DR_CC_MEASURE_EVERY_MAX)
		c->meas_every = DR_CC_MEASURE_EVERY_MAX;
	c->meas_left = c->meas_every;
	c->meas_ns = now;
	c->meas_bytes = 0;
	c->meas_pkts = 0;
}

/*
 * One congestion signal: a CNP, or go-back-N.  DCQCN's reaction: the
 * target becomes the current rate, the rate drops by alpha/2 (half, the
 * first time), alpha moves towards 1 by 1/DR_CC_G_INV.  At most one cut a
 * DR_CC_CUT_GAP_NS: the signals of one episode (a CNP a 50 us, a NAK and
 * the timeout behind it) cut once.
 *
 * The reference is the rate the QP sends at.  Unpaced, or paced at a rate
 * it does not reach (the rate recovered past what the host or the
 * application makes), that is the measured rate: a hardware RNIC's line
 * rate has no equivalent here, and halving a rate the QP never reaches
 * would not slow it.  Sets *old to the rate before, in Mb/s; returns
 * whether it cut (not within an episode's gap).
 */
static bool dr_cc_cut(struct dr_qp *qp, uint64_t now, uint32_t *old)
{
	struct dr_cc *c = &qp->cc;
	uint32_t base;

	dr_cc_advance(qp, now);
	base = c->limited ? c->rate_mbps : DR_CC_MAX_MBPS;
	if (c->meas_mbps && base > c->meas_mbps + c->meas_mbps / 4)
		base = c->meas_mbps;
	*old = c->limited ? c->rate_mbps : base;
	if (c->cut_any && now - c->cut_ns < dr_cc_period(qp, DR_CC_CUT_GAP_NS))
		return false;
	c->cut_any = true;
	c->cut_ns = now;
	c->target_mbps = base;
	c->rate_mbps = (uint32_t)(base - (uint64_t)base * c->alpha / (2 * DR_CC_ONE));
	if (c->rate_mbps < DR_CC_MIN_MBPS)
		c->rate_mbps = DR_CC_MIN_MBPS;
	c->alpha += (DR_CC_ONE - c->alpha) / DR_CC_G_INV;
	c->alpha_ns = now;
	c->stage = 0;
	c->meas_every = c->meas_left = 1; /* the rate changes: measure it closely */
	c->inc_ns = now;
	if (!c->limited) {
		c->limited = true;
		c->tokens = 0;
		c->tok_ns = now;
	} else if (c->tokens > (int64_t)dr_cc_burst(qp)) {
		c->tokens = (int64_t)dr_cc_burst(qp);
	}
	qp->stats.rate_cuts++;
	dr_cc_publish(qp);
	return true;
}

/*
 * AckReq (B.2) for a paced QP: at least twice a smoothed round trip (and
 * at most every DR_CC_ACKREQ_MIN_NS), as a QP held by its window asks
 * every half window.  A requester asks for an ACK on a message's last
 * packet and every DR_QP_MAX_PKT_PER_ACK packets or half window; paced to
 * a few Mb/s, the packet that asks leaves after the retransmit timer has
 * fired (62 packets at 10 Mb/s: 50 ms), and timeouts without progress can
 * run a QP into its retry limit (netns-mpi did, with cuts from rates
 * sampled over round trips, bench/PROFILE.md section 8).  asked: the
 * packet asks anyway.  Returns whether it asks.
 */
bool dr_cc_ackreq(struct dr_qp *qp, bool asked)
{
	struct dr_cc *c = &qp->cc;
	uint64_t now, gap = qp->comp.srtt_ns / 2;

	if (!c->limited)
		return asked;
	now = dr_qp_now(qp);
	if (gap < DR_CC_ACKREQ_MIN_NS)
		gap = DR_CC_ACKREQ_MIN_NS;
	if (!asked && now - c->ackreq_ns < gap)
		return false;
	c->ackreq_ns = now;
	return true;
}

void dr_cc_mark(const struct dr_qp *qp, struct dr_pkt_desc *d)
{
	/* ECT(0), as RoCEv2 RNICs mark data (DCQCN); ECT(1) is L4S's */
	if (qp->cc.on)
		d->tos = (d->tos & ~DR_ECN_MASK) | DR_ECN_ECT0;
}

bool dr_cc_may_send(struct dr_qp *qp)
{
	struct dr_cc *c = &qp->cc;
	uint64_t now;

	if (!c->limited)
		return true;
	now = dr_qp_now(qp);
	dr_cc_advance(qp, now);
	if (!c->limited || c->tokens >= 0) {
		c->pace_ns = 0;
		return true;
	}
	/* the time the rate takes to pay the debt back */
	c->pace_ns = now + ((uint64_t)-c->tokens * 8000 + c->rate_mbps - 1) / c->rate_mbps;
	dr_qp_timer_update(qp);
	return false;
}

void dr_cc_sent(struct dr_qp *qp, uint32_t payload_len)
{
	struct dr_cc *c = &qp->cc;
	uint32_t bytes = payload_len + DR_CC_HDR_BYTES;

	if (!c->on)
		return;
	if (c->limited)
		c->tokens -= bytes;
	dr_cc_measure(qp, bytes);
}

void dr_cc_paced(struct dr_qp *qp)
{
	if (!qp->cc.pace_ns || dr_qp_now(qp) < qp->cc.pace_ns)
		return;
	qp->cc.pace_ns = 0;
	if (qp->req.state == DR_REQ_WAIT_RATE)
		dr_req_run(qp);
}

/* The notification point (A17.9.2): a packet for this QP arrived marked CE;
 * the QP that sent it hears of it by a CNP, at most one a DR_CC_CNP_GAP_NS. */
void dr_cc_ce(struct dr_qp *qp, const struct dr_pkt *pkt)
{
	struct dr_pkt_desc d;
	uint64_t now;

	if (!qp->cc.on || dr_pkt_ecn(pkt) != DR_ECN_CE)
		return;
	qp->stats.ce_seen++;
	now = dr_qp_now(qp);
	if (qp->cc.cnp_any && now - qp->cc.cnp_ns < DR_CC_CNP_GAP_NS)
		return;
	qp->cc.cnp_any = true;
	qp->cc.cnp_ns = now;
	/* A17.9.3: BECN set, DestQP the marked packet's sender, the marked
	 * packet's P_Key, PSN 0, AckReq 0, 16 reserved bytes of zero; not
	 * ECN-capable itself, like an ACK */
	dr_qp_desc(qp, &d, DR_OP_CNP, 0);
	d.bth_rsvd8 = DR_BTH_BECN;
	d.pkey = dr_bth_pkey(pkt->bth);
	d.tos &= ~DR_ECN_MASK;
	if (dr_qp_noting(qp)) {
		uint8_t f[DR_PKT_HDR_CAP];
		int n = dr_pkt_build(&d, f, sizeof(f));

		if (n > 0)
			dr_qp_note(qp, f, (size_t)n, "CNP sent: CE seen on PSN %u", pkt->psn);
	}
	qp->stats.cnp_sent++;
	dr_qp_send_frame(qp, &d);
}

/*
 * The reaction point (A17.9.4): the peer saw CE on what this QP sent.  The
 * rate is cut (dr_cc_cut), and with it the PSN window halves, not below
 * DR_CC_MIN_CWND, growing back one PSN per ACK that makes progress (B.1).
 * The rate alone did not slow a QP whose window was its limit: a window
 * of 128 packets leaves in a burst of about 100 us, the rate measured
 * over it is the host's (Gb/s), and halving that paces nothing, while
 * four such windows overflow a 64 KiB switch queue at once
 * (bench/PROFILE.md section 8, "Stop 30").  The window is what a queue
 * holds: halved at each episode's CNP it holds less.
 */
void dr_cc_cnp_input(struct dr_qp *qp, const struct dr_pkt *pkt)
{
	uint32_t old, w = qp->req.cwnd;

	qp->stats.cnp_received++;
	if (!qp->cc.on)
		return;
	if (dr_cc_cut(qp, dr_qp_now(qp), &old) && w > DR_CC_MIN_CWND) {
		qp->req.cwnd = w / 2 > DR_CC_MIN_CWND ? w / 2 : DR_CC_MIN_CWND;
		qp->stats.cwnd_cuts++;
	}
	dr_qp_note(qp, pkt->frame, pkt->frame_len,
		   "CNP received: rate %u -> %u Mb/s, window %u -> %u", old, qp->cc.rate_mbps, w,
		   qp->req.cwnd);
}

/*
 * Go-back-N (a sequence NAK, a timeout, a gap in READ responses).  On a
 * path that drops instead of marking, loss is the only sign of a full
 * queue; but a path also loses frames with no queue at all (a bad link, a
 * software forwarder), and cutting the rate for those held a QP near the
 * floor: 5 % random loss on a bridged veth, 20 MB/s against 90 with the
 * rate left alone (bench/PROFILE.md).  So, as TCP Veno tells random from
 * congestive loss by the queue it has built, a go-back-N cuts the rate
 * only when the smoothed round trip shows a standing queue: more than
 * twice the least round trip plus DR_CC_LOSS_QUEUE_NS (a tail-drop queue
 * that overflows holds milliseconds: 13 ms in 64 KiB at 40 Mb/s; random
 * loss on that veth ran at srtt 100 us over a 42 us minimum).  Otherwise
 * the window's halving (comp.c) is the loss's whole congestion response,
 * and within a limited episode the rate holds: no increase for a period.
 */
void dr_cc_loss(struct dr_qp *qp)
{
	struct dr_cc *c = &qp->cc;
	uint64_t now, min = qp->comp.rtt_min_ns;

	if (!c->on)
		return;
	now = dr_qp_now(qp);
	if (min && qp->comp.srtt_ns > 2 * min + DR_CC_LOSS_QUEUE_NS) {
		uint32_t old;

		dr_cc_cut(qp, now, &old);
		return;
	}
	if (!c->limited)
		return;
	dr_cc_advance(qp, now);
	c->inc_ns = now;
	qp->stats.rate_holds++;
}
