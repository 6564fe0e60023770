/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * comp.c - the completer: consumes ACKs, NAKs, READ responses and atomic
 * acknowledgements (IBA 9.7.5.2, docs/protocol.md B.3-B.6, B.9), completes
 * send WQEs strictly in posting order, runs the retransmit and RNR timers
 * and starts go-back-N.
 *
 * One packet walks a small state machine: CHECK_PSN classifies it, one
 * state per packet kind does the work, and RETRY / RNR / ERROR are the
 * exits that change the requester's course.
 */
#include <stdio.h>
#include <string.h>

#include "qp_priv.h"

/* The causes of a resend, as annotations name them (fi_droce.7). */
static const char dr_comp_timeout_cause[] = "timeout";
static const char dr_comp_seq_cause[] = "NAK sequence error";
static const char dr_comp_rnr_cause[] = "RNR NAK wait over";
static const char dr_comp_gap_cause[] = "READ response gap";

enum dr_comp_state {
	DR_COMP_CHECK_PSN, /* is the PSN one we are waiting for? */
	DR_COMP_ACK,	   /* ACKNOWLEDGE: cumulative up to its PSN */
	DR_COMP_READ,	   /* READ RESPONSE: place, maybe complete */
	DR_COMP_ATOMIC,	   /* ATOMIC ACKNOWLEDGE: store original, complete */
	DR_COMP_NAK,	   /* AETH says NAK or RNR NAK: sort out which */
	DR_COMP_RETRY,	   /* count one of retry_cnt, then RESEND */
	DR_COMP_RESEND,	   /* go-back-N from comp.psn */
	DR_COMP_RNR,	   /* RNR NAK: wait, counting rnr_retry */
	DR_COMP_ERROR,	   /* the WQE at the head fails; QP to ERROR */
	DR_COMP_DROP,	   /* nothing to learn from this packet */
	DR_COMP_DONE,
	DR_COMP_NUM
};

static const char *const dr_comp_state_names[DR_COMP_NUM] = {
    [DR_COMP_CHECK_PSN] = "CHECK_PSN",
    [DR_COMP_ACK] = "ACK",
    [DR_COMP_READ] = "READ",
    [DR_COMP_ATOMIC] = "ATOMIC",
    [DR_COMP_NAK] = "NAK",
    [DR_COMP_RETRY] = "RETRY",
    [DR_COMP_RESEND] = "RESEND",
    [DR_COMP_RNR] = "RNR",
    [DR_COMP_ERROR] = "ERROR",
    [DR_COMP_DROP] = "DROP",
    [DR_COMP_DONE] = "DONE",
};

struct dr_comp_ctx {
	const struct dr_pkt *pkt;
	uint8_t syndrome;
	enum dr_wc_status status; /* for DR_COMP_ERROR */
	const char *cause;	  /* for DR_COMP_RETRY: what asks for a resend (notes) */
};

/* ---- timers ----------------------------------------------------------------- */

static bool dr_comp_outstanding(const struct dr_qp *qp)
{
	return dr_psn_diff(qp->comp.max_psn, qp->comp.psn) > 0;
}

/* Round trips timed, and time passed, without a spurious timeout before
 * the floor that one set halves (dr_comp_spurious).  Samples alone came
 * too fast: 256 round trips of an 8 B ping-pong take 2 ms, while the
 * host's stalls that made the timeout spurious recur for seconds
 * (bench/hoststall: several gaps over 1 ms a second with both CPUs
 * polling); the floor then fell back within milliseconds and the next
 * stall resent again.  A hold of 1 s still let it halve between the
 * stalls of a busy host, which came about a second apart and grew (an
 * 8 B ping-pong over a veth, both sides: answers 0.3, 2.1 and 3.4 ms late
 * in one 2.4 s run, each a spurious timeout): with 10 s, 5-8 timeouts a
 * run where there were 11-12. */
/* The most a late answer raises the floor to (dr_comp_spurious), and the
 * most a tail loss then waits: the stalls logged on a busy 2-core host
 * went up to 4.5 ms over a veth (20 ms once with compiles on both CPUs),
 * while a floor at the QP's 67 ms would take minutes of halving to come
 * down on a lossy link. */
#define DR_RTO_FLOOR_LATE_MAX_NS 10000000ull
#define DR_RTO_FLOOR_DECAY	 256
#define DR_RTO_FLOOR_HOLD_NS 10000000000ull

/* Longest retransmit timeout as a multiple of the QP's: 2^6. */
#define DR_RTO_MAX_BACKOFF 6

/* The timeout the next deadline gets: the base (the QP's timeout, or with
 * DR_QP_ADAPTIVE_RTO the measured one, never more than the QP's) doubled
 * for each timeout since the last progress, at most 2^6 times the QP's.
 *
 * Each timeout without progress doubles it, as TCP backs off: one loss
 * still costs one timeout, but a peer that stalls (a descheduled user-space
 * process, a busy host) gets much longer than retry_cnt + 1 timeouts.  The
 * IBA fixes the timer's minimum, not its growth; rxe retries at a constant
 * 0.5 s from rdma_cm.
 *
 * So a peer that dies (nothing answers from some moment on) fails the WQE
 * at the head this long after the last progress (the last ACK, or the
 * first send after nothing was outstanding), with T = 4.096 us *
 * 2^timeout, R = retry_cnt and b the base:
 *
 *	(T - b) + T * sum(i = 0..R) min(2^i, 2^6)
 *
 * The timeouts below T (b, 2b, ..., T/2: they sum to T - b) resend without
 * counting; then R counted retries at T, 2T, ... and the last timeout,
 * which fails it.  Without an estimate b = T.  The defaults (T = 67.1 ms,
 * R = 7) give 191 T = 12.82 s, at most 12.88 s with an estimate; fi_droce(7)
 * states the same, test_qp's dead-peer tests check it to the nanosecond. */
static uint64_t dr_comp_rto(const struct dr_qp *qp)
{
	uint64_t qpt = dr_qp_timeout_ns(qp->attr.timeout), t = qpt;
	unsigned b = qp->comp.backoff;

	if ((qp->flags & (DR_QP_ADAPTIVE_RTO | DR_QP_LOSSLESS)) == DR_QP_ADAPTIVE_RTO &&
	    qp->comp.rto_base_ns && qp->comp.rto_base_ns < qpt) {
		t = qp->comp.rto_base_ns;
		if (t < qp->comp.rto_floor_ns)
			t = qp->comp.rto_floor_ns < qpt ? qp->comp.rto_floor_ns : qpt;
	}
	while (b-- && t < qpt << DR_RTO_MAX_BACKOFF)
		t <<= 1;
	return t < qpt << DR_RTO_MAX_BACKOFF ? t : qpt << DR_RTO_MAX_BACKOFF;
}

/* Arm the retransmit timer if packets are outstanding and it is not
 * running (called after sending).  B.4: armed on send, re-armed on
 * progress, stopped when nothing is outstanding. */
void dr_comp_arm(struct dr_qp *qp)
{
	uint64_t t;

	/* the timeout computed only when it is armed: after every send the
	 * timer runs already (dr_req_run calls this per burst of sends) */
	if (!qp->comp.rto_deadline_ns && !qp->comp.rnr_deadline_ns && dr_comp_outstanding(qp) &&
	    (t = dr_comp_rto(qp))) {
		qp->comp.rto_deadline_ns = dr_qp_now(qp) + t;
		qp->comp.rto_armed_ns = t;
	}
	dr_qp_timer_update(qp);
}

static void dr_comp_rearm(struct dr_qp *qp)
{
	qp->comp.rearm_due = false;
	qp->comp.rto_deadline_ns = 0;
	dr_comp_arm(qp);
}

/* DR_QP_DEFER_ACK: the burst of input that made progress is handled (or a
 * timer is about to be judged): the retransmit timer restarts from now. */
void dr_comp_rearm_settle(struct dr_qp *qp)
{
	if (qp->comp.rearm_due)
		dr_comp_rearm(qp);
}

/* DR_QP_ADAPTIVE_RTO: time the round trip of an AckReq packet sent for the
 * first time (req.c), one at a time. */
void dr_comp_rtt_start(struct dr_qp *qp, uint32_t psn)
{
	if (!(qp->flags & DR_QP_ADAPTIVE_RTO) || qp->comp.rtt_on)
		return;
	qp->comp.rtt_on = true;
	qp->comp.rtt_psn = psn;
	qp->comp.rtt_start_ns = dr_qp_now(qp);
}

/* Resolution of the timer that runs the QP's deadline (src/fi: the port's
 * timers, 20 us); the variance term is never below it (RFC 6298 "G"). */
#define DR_RTO_GRANULARITY_NS 20000u

/* comp.psn has passed the timed PSN: RFC 6298 section 2 estimators, the
 * base timeout rounded up to an IBA value 4.096 us * 2^n. */
static void dr_comp_rtt_sample(struct dr_qp *qp)
{
	uint64_t now = dr_qp_now(qp), r = now - qp->comp.rtt_start_ns, v, rto;
	unsigned e = DR_RTO_MIN_EXP;

	qp->comp.rtt_on = false;
	qp->stats.rtt_samples++;
	if (!qp->comp.srtt_ns) {
		qp->comp.srtt_ns = r;
		qp->comp.rttvar_ns = r / 2;
	} else {
		uint64_t d = r > qp->comp.srtt_ns ? r - qp->comp.srtt_ns : qp->comp.srtt_ns - r;

		qp->comp.rttvar_ns = (3 * qp->comp.rttvar_ns + d) / 4;
		qp->comp.srtt_ns = (7 * qp->comp.srtt_ns + r) / 8;
	}
	v = 4 * qp->comp.rttvar_ns;
	rto = qp->comp.srtt_ns + (v > DR_RTO_GRANULARITY_NS ? v : DR_RTO_GRANULARITY_NS);
	while (e < 31 && dr_qp_timeout_ns(e) < rto)
		e++;
	qp->comp.rto_base_ns = dr_qp_timeout_ns(e);
	if (!qp->comp.rtt_min_ns || r < qp->comp.rtt_min_ns)
		qp->comp.rtt_min_ns = r;
	if (qp->comp.rto_floor_ns && ++qp->comp.floor_samples >= DR_RTO_FLOOR_DECAY &&
	    now - qp->comp.floor_ns >= DR_RTO_FLOOR_HOLD_NS) {
		qp->comp.floor_samples = 0;
		qp->comp.floor_ns = now;
		qp->comp.rto_floor_ns /= 2;
		if (qp->comp.rto_floor_ns <= qp->comp.rto_base_ns)
			qp->comp.rto_floor_ns = 0;
	}
}

/* A frame was lost (a sequence NAK, a READ response past a gap, a probe
 * answered alone and nothing behind it).  The floor spurious timeouts set
 * (dr_comp_spurious) halves: on a lossy path the next tail loss would
 * wait it, and timeouts there are mostly losses.  And DR_QP_LOSSLESS no
 * longer holds on this path (a full backlog or loop ring dropped, or a
 * memif peer forwards to a lossy link): the adaptive timer's shorter
 * timeouts apply from now on.  Until then a loss that nothing behind it
 * reveals waits for the QP's timeout, once. */
static void dr_comp_loss_seen(struct dr_qp *qp)
{
	/* the last timeout's episode is judged: a loss (one halving) */
	qp->comp.spur_check = false;
	if (qp->comp.rto_floor_ns) {
		qp->comp.rto_floor_ns /= 2;
		if (qp->comp.rto_floor_ns <= qp->comp.rto_base_ns)
			qp->comp.rto_floor_ns = 0;
	}
	if (!(qp->flags & DR_QP_LOSSLESS))
		return;
	qp->flags &= ~DR_QP_LOSSLESS;
	dr_qp_log(qp, "qp %u: a frame was lost on a lossless port: adaptive timeouts from now on",
		  qp->qpn);
}

/*
 * A timeout resent packets, and one of them was answered twice: the
 * original had arrived, only its answer was late (a peer or a requester
 * off its CPU for longer than the estimate; on a shared 2-core host that
 * is milliseconds, while the round trips timed, one at a time and never
 * across a resend (Karn), are the fast ones).  Without this, each such
 * stall resent up to a window of packets: 39,702 of 588,569 (6.7 %) in a
 * 4 MiB WRITE run over a lossless veth, all of them duplicates at the
 * responder.  So the timeout that fired turns out too short: the timeout
 * does not go below twice the late answer's delay again (below), nor
 * above the QP's, until DR_RTO_FLOOR_DECAY round trips have been timed
 * and DR_RTO_FLOOR_HOLD_NS has passed without another, then the floor
 * halves.  Real loss still costs one timeout (the floor), and a NAK still
 * resends at once.
 */
static void dr_comp_spurious(struct dr_qp *qp)
{
	uint64_t qpt = dr_qp_timeout_ns(qp->attr.timeout),
		 late = dr_qp_now(qp) - qp->comp.spur_since_ns;
	uint64_t f = 2 * qp->comp.spur_rto_ns;

	/* The duplicate came this long after the timer was armed: so late
	 * can an answer be here (a peer, or this process, off its CPU that
	 * long), and a timeout of twice the one that fired, as the floor was
	 * before, is still too short when the stall lasted longer.  On a
	 * loaded 2-core host stalls of 1-4 ms recur, and a floor that only
	 * doubled from 131 us took five more spurious timeouts to cover them
	 * (lat_send 8 B over memif: 16-31 in a 2 s run); from the late
	 * answer, one (RFC 4015's response to a spurious timeout also takes
	 * the late answer's round trip).  One later than the QP's own
	 * timeout does not answer this timeout's episode. */
	if (late <= qpt && 2 * late > f)
		f = 2 * late < DR_RTO_FLOOR_LATE_MAX_NS ? 2 * late : DR_RTO_FLOOR_LATE_MAX_NS;
	if (f < 2 * qp->comp.spur_rto_ns) /* the cap lowers nothing */
		f = 2 * qp->comp.spur_rto_ns;
	qp->comp.spur_check = false;
	qp->stats.spurious_timeouts++;
	if (f > qpt)
		f = qpt;
	if (f > qp->comp.rto_floor_ns)
		qp->comp.rto_floor_ns = f;
	qp->comp.floor_samples = 0;
	qp->comp.floor_ns = dr_qp_now(qp);
}

/* A loss: go-back-N will resend what is in flight; halve the window. */
static void dr_comp_cwnd_cut(struct dr_qp *qp)
{
	uint32_t w = qp->req.cwnd / 2;

	if (w < DR_QP_MIN_CWND)
		w = DR_QP_MIN_CWND;
	/* never up: CNPs may have taken it below the floor (cc.c) */
	if (w < qp->req.cwnd)
		qp->req.cwnd = w;
	qp->stats.cwnd_cuts++;
}

/* The annotation of the resend go-back-N is about to start (req.c puts it
 * on the resent frame of comp.psn): what caused it, which retry of how
 * many, the timeout it now runs with. */
static void dr_comp_note_resend(struct dr_qp *qp, const char *cause, unsigned attempt, unsigned max)
{
	char m[16];

	if (!dr_qp_noting(qp))
		return;
	if (max == 7 && cause == dr_comp_rnr_cause)
		snprintf(m, sizeof(m), "unlimited"); /* rnr_retry 7 (IBA 9.7.5.2) */
	else
		snprintf(m, sizeof(m), "%u", max);
	qp->req.note_psn = qp->comp.psn;
	qp->req.note[0] = '\0';
	dr_qp_note_add(
	    qp->req.note, "retransmit: %s, go-back-N from PSN %u, attempt %u of %s, RTO %llu us",
	    cause, qp->comp.psn, attempt, m, (unsigned long long)(dr_comp_rto(qp) / 1000));
}

/* ---- completing WQEs ---------------------------------------------------------- */

/* Complete the WQE at the SQ head.  Unsignaled WQEs report only errors
 * (IBA 10.8, 11.4.1.1). */
static void dr_comp_wqe(struct dr_qp *qp, enum dr_wc_status status, uint8_t syndrome)
{
	struct dr_send_wqe *w = dr_sq_wqe(qp, qp->sq.tail);
	struct dr_wc wc = {
	    .wr_id = w->wr.wr_id,
	    .status = status,
	    .opcode = dr_wr_tab[w->wr.opcode].wc,
	    .syndrome = syndrome,
	};

	w->state = DR_WQE_DONE;
	if (w->ord_token) {
		w->ord_token = false;
		qp->req.ord_used--;
	}
	qp->req.ord_used -= w->rd_tokens;
	w->rd_tokens = 0;
	qp->sq.tail++;
	if ((int32_t)(qp->req.wqe - qp->sq.tail) < 0)
		qp->req.wqe = qp->sq.tail;
	if (status != DR_WC_SUCCESS || (w->wr.flags & DR_WR_SIGNALED))
		dr_qp_complete(qp, &wc);
}

/* How long an answer to a timeout's probe alone holds the requester
 * before go-back-N (dr_comp_probe_settle): the responder answers what it
 * received in PSN order, so the answers to the packets sent before the
 * timeout, if they arrived, follow the probe's original one back to back.
 * The end of the receive burst was not enough: over a veth each frame
 * comes through the kernel on its own, microseconds apart, and the
 * requester read the probe's answer alone, resent the window (64 atomics)
 * and then got the answers to all of it.  The least round trip timed plus
 * the timer's resolution (20 us) covers that gap; a tail loss costs that
 * much more.  Not the smoothed round trip: stalls inflate it. */
static uint64_t dr_comp_probe_hold(const struct dr_qp *qp)
{
	return qp->comp.rtt_min_ns + DR_RTO_GRANULARITY_NS;
}

/* Forward progress: fresh retry budgets (B.4 reset_retry_counters) and a
 * restarted timer. */
static void dr_comp_progress(struct dr_qp *qp)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.retry_started = false;
	qp->comp.backoff = 0;
	qp->comp.rnr_tries = 0;
	if (qp->comp.rtt_on && dr_psn_diff(qp->comp.psn, qp->comp.rtt_psn) > 0)
		dr_comp_rtt_sample(qp);
	if (qp->req.cwnd < qp->max_window)
		qp->req.cwnd++;
	/* while probing, req.psn is one past what the probe asked for */
	if (qp->req.probe)
		qp->req.probe_end = qp->req.psn;
	/* an old ACK may cover PSNs the rewound requester has not resent */
	if (dr_psn_diff(qp->comp.psn, qp->req.psn) > 0) {
		qp->req.psn = qp->comp.psn;
		qp->req.wqe = qp->sq.tail;
	}
	/* A timeout's probe is answered with progress: what it resent had
	 * arrived, or arrives now.  An answer past what the probe asked for
	 * can only answer a packet sent before the timeout: those are under
	 * way (a spurious timeout: the peer or this process was off its
	 * CPU), so go on from where the timeout took the requester instead of
	 * resending them (a loss among them then draws a sequence NAK, a READ
	 * response out of order or another probe).  An answer to the probe
	 * alone does not tell: what followed may have been lost or discarded
	 * behind a loss, or its answers may be in the same receive burst,
	 * behind this one (one-PSN READ responses and atomic ACKs answer one
	 * at a time).  DR_QP_DEFER_ACK: hold the requester until the burst is
	 * handled and a round trip has passed (dr_comp_probe_settle);
	 * otherwise go-back-N resends it. */
	if (qp->req.probe || qp->req.probe_wait) {
		int32_t past = dr_psn_diff(qp->comp.psn, qp->req.probe_end);

		if (past > 0) {
			qp->req.probe = false;
			qp->req.probe_wait = false;
			qp->stats.probe_undos++;
			dr_req_undo(qp);
		} else if (past == 0 && qp->req.probe) {
			/* (nothing sent past the probe: nothing to wait for) */
			qp->req.probe = false;
			qp->req.probe_wait = (qp->flags & DR_QP_DEFER_ACK) &&
					     dr_psn_diff(qp->comp.max_psn, qp->req.probe_end) > 0;
			qp->req.probe_hold_ns = dr_qp_now(qp) + dr_comp_probe_hold(qp);
		}
		/* past < 0: part of the probe's answers; the rest follow */
	}
	/* what the last timeout resent is answered: a second answer shows
	 * it spurious (dr_comp_check_psn); none by the next timeout, a loss
	 * (dr_comp_timeout) */
	if (qp->comp.spur_check && dr_psn_diff(qp->comp.psn, qp->comp.spur_psn) > 0)
		qp->comp.spur_answered = true;
	/* the last rewind's episode is over once its point is acknowledged */
	if (qp->req.undo_ok && dr_psn_diff(qp->comp.psn, qp->req.undo_psn) >= 0)
		qp->req.undo_ok = false;
	/* B.4: progress restarts the timer.  DR_QP_DEFER_ACK: once per burst
	 * of input, when the caller flushes (dr_comp_rearm_settle), as the
	 * coalesced ACKs of WRITEs move it once per burst: each READ response
	 * is progress, and moving the deadline for each (the clock read, the
	 * timeout worked out, the timer told) was 2 % of a 4 KiB READ
	 * client's time over memif (perf, 2026-12-04), about 8 ns a message.
	 * The deadline stays where it was meanwhile, earlier than the moved
	 * one; nothing judges it before the flush but dr_qp_tick, which
	 * settles first.  The deadline is thus the flush's time + the
	 * timeout: the same instant in a burst-polling simulation
	 * (simlink flush_bursts); on a port, one poll later, or after the
	 * application's own work between two polls (src/fi dev_poll), at
	 * most one progress-thread nap (5 ms) when it stops polling.  A
	 * timer that is not running (nothing was outstanding, an RNR wait)
	 * starts at once, as without the flag. */
	if ((qp->flags & DR_QP_DEFER_ACK) && qp->comp.rto_deadline_ns)
		qp->comp.rearm_due = true;
	else
		dr_comp_rearm(qp);
}

/* DR_QP_DEFER_ACK: the caller's burst of input is handled, a round trip
 * has passed since the probe's answer (dr_qp_tick settles it then if no
 * burst does), and nothing came past it: what followed it is lost, and
 * go-back-N resends it from comp.psn. */
void dr_comp_probe_settle(struct dr_qp *qp)
{
	if (!qp->req.probe_wait || dr_qp_now(qp) < qp->req.probe_hold_ns)
		return;
	qp->req.probe_wait = false;
	dr_comp_loss_seen(qp);
	dr_req_run(qp);
	dr_qp_timer_update(qp);
}

/*
 * The last timeout's resend was answered, and never twice, by the time
 * the next timeout fires: the last timeout was a loss (what it resent, or
 * the answer to that, had been lost), not a stall of the peer or of this
 * process.  It counts as one (dr_comp_loss_seen): the floor halves and a
 * lossless port's presumption ends.  Before, only a loss that something
 * behind it revealed (a sequence NAK, a READ response past a gap, a probe
 * with nothing past its answer) did, and a loss with nothing behind it --
 * every loss of a ping-pong -- lowered no floor: each cost the first floor
 * until 10 s of quiet round trips had halved it.  Judged at the next
 * timeout, not a round trip after the answer: an answer delayed on its
 * way back comes after the resend's (test_spurious_timeout_probe).
 */
static void dr_comp_timeout_lost(struct dr_qp *qp)
{
	qp->stats.timeout_losses++;
	dr_comp_loss_seen(qp);
}

enum dr_ack_result {
	DR_ACK_OK,	    /* acknowledged what could be */
	DR_ACK_IMPLIED_NAK, /* passed an unanswered READ/atomic */
};

/* Acknowledge every PSN before psn_end (exclusive): complete SEND/WRITE
 * WQEs wholly covered, note a partial ACK of a long one.  A READ or atomic
 * is only answered by its own responses; an acknowledgement reaching past
 * one means they were lost -- an implied NAK (IBA 9.7.5.2, rxe
 * check_psn). */
static enum dr_ack_result dr_comp_ack_to(struct dr_qp *qp, uint32_t psn_end)
{
	bool moved = false;

	while (qp->sq.tail != qp->sq.head && dr_psn_diff(psn_end, qp->comp.psn) > 0) {
		struct dr_send_wqe *w = dr_sq_wqe(qp, qp->sq.tail);
		uint32_t end;

		if (w->state != DR_WQE_PENDING)
			break;
		if (dr_wr_is_rd_atomic(w->wr.opcode)) {
			if (moved)
				dr_comp_progress(qp);
			return DR_ACK_IMPLIED_NAK;
		}
		end = dr_psn_add(w->first_psn, (int32_t)w->npsn);
		moved = true;
		if (dr_psn_diff(psn_end, end) >= 0) {
			qp->comp.psn = end;
			dr_comp_wqe(qp, DR_WC_SUCCESS, 0);
		} else {
			qp->comp.psn = psn_end; /* part of a long message */
			break;
		}
	}
	if (moved)
		dr_comp_progress(qp);
	return DR_ACK_OK;
}

/* The pending WQE whose PSN range holds psn, or NULL. */
static struct dr_send_wqe *dr_comp_find(struct dr_qp *qp, uint32_t psn)
{
	uint32_t i;

	for (i = qp->sq.tail; i != qp->sq.head; i++) {
		struct dr_send_wqe *w = dr_sq_wqe(qp, i);

		if (w->state != DR_WQE_PENDING)
			break;
		if (dr_psn_diff(psn, w->first_psn) >= 0 &&
		    dr_psn_diff(psn, dr_psn_add(w->first_psn, (int32_t)w->npsn)) < 0)
			return w;
	}
	return NULL;
}

/* ---- states --------------------------------------------------------------------- */

static enum dr_comp_state dr_comp_check_psn(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	const struct dr_pkt *pkt = c->pkt;
	const struct dr_aeth *aeth = dr_pkt_aeth(pkt);

	/* a response must answer something sent and not yet acknowledged
	 * (IBA 9.7.5.2); an ACK one below comp.psn is a re-ACK of what we
	 * know already */
	if (dr_psn_diff(pkt->psn, qp->comp.max_psn) >= 0 || dr_psn_diff(pkt->psn, qp->comp.psn) < 0) {
		/* a second answer to what a timeout resent */
		if (qp->comp.spur_check && dr_psn_diff(pkt->psn, qp->comp.psn) < 0 &&
		    dr_psn_diff(pkt->psn, qp->comp.spur_psn) >= 0)
			dr_comp_spurious(qp);
		return DR_COMP_DROP;
	}
	c->syndrome = aeth ? dr_aeth_syndrome(aeth) : DR_AETH_ACK_UNLIMITED;
	if ((c->syndrome & DR_AETH_TYPE_MASK) != DR_AETH_ACK)
		return DR_COMP_NAK;
	/* the responses (dr_qp_input): acknowledgements, READ responses */
	if (pkt->op->flags & DR_OPF_ACK)
		return pkt->op->flags & DR_OPF_ATOMIC ? DR_COMP_ATOMIC : DR_COMP_ACK;
	if (pkt->op->flags & DR_OPF_READ)
		return DR_COMP_READ;
	return DR_COMP_DROP;
}

static enum dr_comp_state dr_comp_ack(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	/* cumulative: everything up to and including its PSN (B.3) */
	c->cause = dr_comp_gap_cause; /* an ACK past an unanswered READ/atomic */
	if (dr_comp_ack_to(qp, dr_psn_add(c->pkt->psn, 1)) == DR_ACK_IMPLIED_NAK)
		return qp->comp.retry_started ? DR_COMP_DONE : DR_COMP_RETRY;
	return DR_COMP_DONE;
}

/* Payload length of response k of READ w, and whether it ends a request
 * (*end: the READ's last, or the last of a request on the grid, req.c). */
static uint32_t dr_comp_read_plen(const struct dr_qp *qp, const struct dr_send_wqe *w, uint32_t k,
				  bool *end)
{
	uint32_t pmtu = qp->attr.path_mtu;
	uint64_t left = w->length - (uint64_t)k * pmtu;

	*end = k + 1 == w->npsn || (k + 1) % w->rd_chunk == 0;
	return left < pmtu ? (uint32_t)left : pmtu;
}

static enum dr_comp_state dr_comp_read(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	const struct dr_pkt *pkt = c->pkt;
	struct dr_send_wqe *w = dr_comp_find(qp, pkt->psn);
	uint32_t pmtu = qp->attr.path_mtu, k, expect, plen;
	bool last, end;

	if (!w || w->wr.opcode != DR_WR_READ)
		return DR_COMP_DROP;
	c->cause = dr_comp_gap_cause;
	/* a READ response implicitly acknowledges what precedes the READ
	 * (IBA 9.7.5.2) */
	if (dr_comp_ack_to(qp, w->first_psn) == DR_ACK_IMPLIED_NAK ||
	    w != dr_sq_wqe(qp, qp->sq.tail))
		return qp->comp.retry_started ? DR_COMP_DONE : DR_COMP_RETRY;
	expect = dr_psn_add(w->first_psn, (int32_t)w->rsp_psns);
	if (dr_psn_diff(pkt->psn, expect) < 0)
		return DR_COMP_DROP; /* duplicate response */
	if (pkt->psn != expect) {
		/* a response went missing: ask again from the gap at once
		 * (B.6; rxe's check_psn does the same), once per episode */
		qp->stats.rx_rsp_ahead++;
		dr_comp_loss_seen(qp);
		return qp->comp.retry_started ? DR_COMP_DONE : DR_COMP_RETRY;
	}

	k = w->rsp_psns;
	plen = dr_comp_read_plen(qp, w, k, &end);
	last = k + 1 == w->npsn;
	/* each request's responses end at its end of the grid (req.c) */
	if (pkt->payload_len != plen || end != !!(pkt->op->flags & DR_OPF_END))
		return DR_COMP_DROP; /* not the packet we asked for */
	/* the port may have put it there while checking its ICRC: at this
	 * very place, named by dr_comp_place from the same state */
	if (!pkt->payload_placed)
		dr_sge_copy_in(w->sge, w->wr.num_sge, (uint64_t)k * pmtu, pkt->payload, plen);
	w->rsp_psns++;
	if (end && w->rd_tokens) {
		/* that request is answered: its token is free */
		w->rd_tokens--;
		qp->req.ord_used--;
	}
	qp->comp.psn = dr_psn_add(pkt->psn, 1);
	if (last)
		dr_comp_wqe(qp, DR_WC_SUCCESS, 0);
	dr_comp_progress(qp);
	return DR_COMP_DONE;
}

unsigned dr_comp_place(const struct dr_qp *qp, const struct dr_pkt *pkt, struct iovec *dst,
		       unsigned max)
{
	const struct dr_aeth *aeth = dr_pkt_aeth(pkt);
	const struct dr_send_wqe *w;
	uint32_t plen;
	bool end;

	if (!(pkt->op->flags & DR_OPF_RSP) || !(pkt->op->flags & DR_OPF_READ) ||
	    (aeth && (dr_aeth_syndrome(aeth) & DR_AETH_TYPE_MASK) != DR_AETH_ACK))
		return 0;
	/* the next response of the READ at the head, nothing unanswered
	 * before it: the one dr_comp_read copies, and where */
	if (qp->sq.tail == qp->sq.head || pkt->psn != qp->comp.psn ||
	    dr_psn_diff(pkt->psn, qp->comp.max_psn) >= 0)
		return 0;
	w = &qp->sq.ring[qp->sq.tail & qp->sq.mask];
	if (w->state != DR_WQE_PENDING || w->wr.opcode != DR_WR_READ || w->rsp_psns >= w->npsn ||
	    pkt->psn != dr_psn_add(w->first_psn, (int32_t)w->rsp_psns))
		return 0;
	plen = dr_comp_read_plen(qp, w, w->rsp_psns, &end);
	if (pkt->payload_len != plen || end != !!(pkt->op->flags & DR_OPF_END))
		return 0;
	return dr_sge_iov(w->sge, w->wr.num_sge, (uint64_t)w->rsp_psns * qp->attr.path_mtu, plen,
			  dst, max);
}

static enum dr_comp_state dr_comp_atomic(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	const struct dr_pkt *pkt = c->pkt;
	struct dr_send_wqe *w = dr_comp_find(qp, pkt->psn);
	const struct dr_atmack *ack = dr_pkt_atmack(pkt);
	uint64_t orig;

	if (!w || !dr_wr_is_atomic(w->wr.opcode) || !ack)
		return DR_COMP_DROP;
	c->cause = dr_comp_gap_cause;
	if (dr_comp_ack_to(qp, w->first_psn) == DR_ACK_IMPLIED_NAK ||
	    w != dr_sq_wqe(qp, qp->sq.tail))
		return qp->comp.retry_started ? DR_COMP_DONE : DR_COMP_RETRY;
	orig = be64toh(ack->orig);
	dr_sge_copy_in(w->sge, w->wr.num_sge, 0, &orig, sizeof(orig));
	qp->comp.psn = dr_psn_add(pkt->psn, 1);
	dr_comp_wqe(qp, DR_WC_SUCCESS, 0);
	dr_comp_progress(qp);
	return DR_COMP_DONE;
}

static enum dr_comp_state dr_comp_nak(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	/* every NAK implicitly acknowledges the PSNs before its own
	 * (IBA 9.7.5.2) */
	enum dr_ack_result r = dr_comp_ack_to(qp, c->pkt->psn);
	uint8_t s = c->syndrome;

	c->cause = dr_comp_gap_cause;
	if ((s & DR_AETH_TYPE_MASK) == DR_AETH_RNR_NAK) {
		qp->stats.rx_rnr_naks++;
		if (dr_qp_noting(qp))
			dr_qp_note_event(qp, "RNR NAK received: waiting %g ms",
					 (double)dr_rnr_timer_ns(s & 0x1f) / 1e6);
		if (r == DR_ACK_IMPLIED_NAK)
			return qp->comp.retry_started ? DR_COMP_DONE : DR_COMP_RETRY;
		return DR_COMP_RNR;
	}
	if ((s & DR_AETH_TYPE_MASK) != DR_AETH_NAK) {
		dr_qp_drop(qp, DR_RX_DROP_RSP); /* reserved syndrome 010 */
		return DR_COMP_DONE;
	}
	if (dr_qp_noting(qp))
		dr_qp_note_event(qp, "NAK received: %s, PSN %u", dr_qp_nak_name(s), c->pkt->psn);
	if (s == DR_AETH_NAK_PSN_SEQ) {
		qp->stats.rx_seq_naks++;
		dr_comp_loss_seen(qp);
		c->cause = dr_comp_seq_cause;
		/* one go-back-N per loss episode (rxe started_retry): once a
		 * retry is under way, NAKs that bring no progress -- copies,
		 * or NAKs for gaps the resend will fill anyway -- change
		 * nothing; the retransmit timer covers a lost resend.  A NAK
		 * during an RNR wait changes nothing either. */
		if (qp->comp.retry_started || qp->req.state == DR_REQ_WAIT_RNR)
			return DR_COMP_DONE;
		return DR_COMP_RETRY;
	}
	qp->stats.rx_err_naks++;
	c->status = dr_qp_nak_status(s);
	return DR_COMP_ERROR;
}

static enum dr_comp_state dr_comp_retry(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	/* B.4: retry_cnt retries, then the head WQE fails (IBA 9.7.6;
	 * unlike rxe, 7 is not infinite for the transport retry count) */
	if (!qp->comp.retry_left) {
		c->status = DR_WC_RETRY_EXC_ERR;
		return DR_COMP_ERROR;
	}
	qp->comp.retry_left--;
	qp->stats.retries++;
	dr_comp_note_resend(qp, c->cause ? c->cause : dr_comp_timeout_cause,
			    qp->attr.retry_cnt - qp->comp.retry_left, qp->attr.retry_cnt);
	return DR_COMP_RESEND;
}

/* Go-back-N from comp.psn (B.6), with a smaller window; no round trip is
 * timed across a resend (Karn). */
static enum dr_comp_state dr_comp_resend(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	/* a go-back-N ends an RNR wait (dr_req_rewind leaves WAIT_RNR): its
	 * deadline would keep the retransmit timer from arming, and then
	 * fire into a requester no longer waiting, leaving a lost resend
	 * with no timer to recover it (fuzz_qp: an ACK past an unanswered
	 * READ during the wait) */
	qp->comp.rnr_deadline_ns = 0;
	qp->comp.retry_started = true;
	if (!qp->req.undo_ok)
		qp->req.undo_cwnd = qp->req.cwnd; /* the window before the episode */
	dr_comp_cwnd_cut(qp);
	dr_cc_loss(qp);
	dr_req_rewind(qp);
	dr_comp_rearm(qp);
	dr_req_run(qp);
	return DR_COMP_DONE;
}

static enum dr_comp_state dr_comp_rnr(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	/* B.5: wait for the timer the responder named, rnr_retry times
	 * (7 = infinite, IBA 9.7.5.2), then resend from the NAKed PSN */
	if (!qp->comp.rnr_left) {
		c->status = DR_WC_RNR_RETRY_EXC_ERR;
		return DR_COMP_ERROR;
	}
	if (qp->comp.rnr_left != 7)
		qp->comp.rnr_left--;
	qp->comp.rnr_tries++;
	qp->stats.rnr_waits++;
	dr_req_rewind(qp);
	dr_req_set_state(qp, DR_REQ_WAIT_RNR);
	qp->comp.rearm_due = false;
	qp->comp.rto_deadline_ns = 0; /* the retransmit timer sleeps meanwhile */
	qp->comp.rnr_deadline_ns = dr_qp_now(qp) + dr_rnr_timer_ns(c->syndrome & 0x1f);
	dr_qp_timer_update(qp);
	return DR_COMP_DONE;
}

static enum dr_comp_state dr_comp_error(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	/* the failing WQE completes with its status even if unsignaled; the
	 * rest is flushed (B.9) */
	dr_qp_log(qp, "qp %u: send WQE fails: %s (syndrome 0x%02x)", qp->qpn,
		  dr_wc_status_names[c->status], c->syndrome);
	if (qp->sq.tail != qp->sq.head)
		dr_comp_wqe(qp, c->status, c->status == DR_WC_RETRY_EXC_ERR ? 0 : c->syndrome);
	dr_qp_error(qp, dr_wc_status_names[c->status]);
	return DR_COMP_DONE;
}

static enum dr_comp_state dr_comp_drop(struct dr_qp *qp, struct dr_comp_ctx *c)
{
	dr_qp_drop(qp, DR_RX_DROP_RSP);
	return DR_COMP_DONE;
}

typedef enum dr_comp_state (*dr_comp_fn)(struct dr_qp *qp, struct dr_comp_ctx *c);

static const dr_comp_fn dr_comp_tab[DR_COMP_NUM] = {
    [DR_COMP_CHECK_PSN] = dr_comp_check_psn,
    [DR_COMP_ACK] = dr_comp_ack,
    [DR_COMP_READ] = dr_comp_read,
    [DR_COMP_ATOMIC] = dr_comp_atomic,
    [DR_COMP_NAK] = dr_comp_nak,
    [DR_COMP_RETRY] = dr_comp_retry,
    [DR_COMP_RESEND] = dr_comp_resend,
    [DR_COMP_RNR] = dr_comp_rnr,
    [DR_COMP_ERROR] = dr_comp_error,
    [DR_COMP_DROP] = dr_comp_drop,
};

static void dr_comp_run(struct dr_qp *qp, struct dr_comp_ctx *c, enum dr_comp_state s)
{
	while (s != DR_COMP_DONE) {
		enum dr_comp_state next = dr_comp_tab[s](qp, c);

		if (next == DR_COMP_RETRY || next == DR_COMP_RNR || next == DR_COMP_ERROR)
			dr_qp_log(qp, "qp %u comp: %s -> %s psn %u", qp->qpn,
				  dr_comp_state_names[s], dr_comp_state_names[next], qp->comp.psn);
		s = next;
	}
	if (qp->state == DR_QPS_RTS)
		dr_req_run(qp);
	dr_qp_timer_update(qp);
}

void dr_comp_input(struct dr_qp *qp, const struct dr_pkt *pkt)
{
	struct dr_comp_ctx c = {.pkt = pkt};

	dr_comp_run(qp, &c, DR_COMP_CHECK_PSN);
}

void dr_comp_timeout(struct dr_qp *qp)
{
	struct dr_comp_ctx c = {0};
	uint64_t armed_at = qp->comp.rto_deadline_ns - qp->comp.rto_armed_ns;
	bool early;

	qp->comp.rto_deadline_ns = 0;
	if (!dr_comp_outstanding(qp) || qp->req.state == DR_REQ_WAIT_RNR) {
		dr_qp_timer_update(qp);
		return;
	}
	qp->stats.timeouts++;
	early = qp->comp.rto_armed_ns < dr_qp_timeout_ns(qp->attr.timeout);
	/* the last one's resend was answered, never twice */
	if (qp->comp.spur_check && qp->comp.spur_answered)
		dr_comp_timeout_lost(qp);
	qp->comp.spur_answered = false;
	/* what it resends from here on, answered twice, shows it spurious */
	if (!qp->comp.backoff)
		qp->comp.spur_since_ns = armed_at;
	qp->comp.spur_check = true;
	qp->comp.spur_psn = qp->comp.psn;
	qp->comp.spur_rto_ns = qp->comp.rto_armed_ns;
	/* DR_QP_ADAPTIVE_RTO: resend one packet, with AckReq, and the rest
	 * once it is answered (req.probe).  A timeout that was spurious (the
	 * peer, or this process, off its CPU) then costs one duplicate where
	 * it cost a window, 73 packets a timeout in a 4 MiB WRITE run over a
	 * veth on a loaded host; a real loss, one round trip more. */
	if (qp->flags & DR_QP_ADAPTIVE_RTO)
		qp->req.probe = true;
	if (qp->comp.backoff < 2 * DR_RTO_MAX_BACKOFF + 31)
		qp->comp.backoff++;
	/* one timeout is ordinary loss; a second in a row, of the full
	 * timeout, may be a peer that moved to another MAC: have the port ask
	 * now, while retries are left (Linux re-probes a neighbour once TCP
	 * stops confirming it; the port has no such hint but this one).  Not
	 * on the adaptive timer's early ones: on a busy host they come in
	 * pairs every few milliseconds (316 probes in 1.1 s of fi_pingpong
	 * between two namespaces). */
	if (!early && qp->comp.backoff >= 2 && qp->ops->path_suspect)
		qp->ops->path_suspect(qp->ctx, qp);
	if (early) {
		/* DR_QP_ADAPTIVE_RTO: shorter than the QP's timeout, so it
		 * resends without counting a retry (dr_comp_rto) */
		qp->stats.early_timeouts++;
		dr_comp_note_resend(qp, dr_comp_timeout_cause,
				    qp->attr.retry_cnt - qp->comp.retry_left, qp->attr.retry_cnt);
		dr_comp_run(qp, &c, DR_COMP_RESEND);
		return;
	}
	dr_comp_run(qp, &c, DR_COMP_RETRY);
}

void dr_comp_rnr_expired(struct dr_qp *qp)
{
	qp->comp.rnr_deadline_ns = 0;
	if (qp->req.state != DR_REQ_WAIT_RNR)
		return;
	dr_req_set_state(qp, DR_REQ_SEND);
	dr_req_rewind(qp);
	dr_comp_note_resend(qp, dr_comp_rnr_cause, qp->comp.rnr_tries, qp->attr.rnr_retry);
	dr_req_run(qp);
	dr_comp_arm(qp);
}

uint64_t dr_qp_rto_ns(const struct dr_qp *qp)
{
	return dr_comp_rto(qp);
}
