/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * req.c - the requester: turns send WQEs into request packets (IBA 9.7.3
 * and docs/protocol.md B.1/B.2), paced by the PSN window and ORD, and
 * rewinds for go-back-N (B.6).
 *
 * Every WQE owns a fixed PSN range [first_psn, first_psn + npsn) assigned
 * when it is first sent; a resend regenerates exactly the same packets, so
 * "packet k of the WQE" is always PSN first_psn + k.  Which packet comes
 * next follows from req.psn alone: k = req.psn - first_psn.
 */
#include <string.h>

#include "qp_priv.h"

const char *const dr_req_state_names[DR_REQ_NUM] = {
    [DR_REQ_IDLE] = "IDLE",
    [DR_REQ_SEND] = "SEND",
    [DR_REQ_WAIT_WINDOW] = "WAIT_WINDOW",
    [DR_REQ_WAIT_ORD] = "WAIT_ORD",
    [DR_REQ_WAIT_RNR] = "WAIT_RNR",
    [DR_REQ_WAIT_RATE] = "WAIT_RATE",
    [DR_REQ_ERROR] = "ERROR",
};

void dr_req_set_state(struct dr_qp *qp, enum dr_req_state s)
{
	if (qp->req.state == s)
		return;
	if (s != DR_REQ_SEND && qp->req.state != DR_REQ_SEND)
		dr_qp_log(qp, "qp %u req: %s -> %s", qp->qpn, dr_req_state_names[qp->req.state],
			  dr_req_state_names[s]);
	qp->req.state = s;
}

/* Response packets the READ request for packet k of w asks for: to the
 * end of k's request on the grid, or of the READ. */
static uint32_t dr_req_read_span(const struct dr_send_wqe *w, uint32_t k)
{
	uint32_t end = (k / w->rd_chunk + 1) * w->rd_chunk;

	return (end < w->npsn ? end : w->npsn) - k;
}

/* May the next READ request of w (packet k) go now (fewer PSNs than the
 * window in flight, as for any request: dr_req_run)?  One token of
 * max_rd_atomic each, at most DR_QP_READ_REQS of one READ outstanding
 * (all of a short one's requests of two: dr_qp_set_one_size), and
 * its responses within the window (twice it, qp->read_mult) unless nothing
 * is in flight. */
static enum dr_req_state dr_req_read_gate(struct dr_qp *qp, const struct dr_send_wqe *w,
					  uint32_t k)
{
	int32_t inflight = dr_psn_diff(qp->req.psn, qp->comp.psn);

	if (w->rd_tokens >= (w->rd_chunk == 2 ? DR_QP_SHORT_MAX / 2 : DR_QP_READ_REQS) ||
	    qp->req.ord_used >= qp->attr.max_rd_atomic)
		return DR_REQ_WAIT_ORD;
	if (inflight > 0 &&
	    (uint32_t)inflight + dr_req_read_span(w, k) > qp->read_mult * qp->req.cwnd)
		return DR_REQ_WAIT_WINDOW;
	return DR_REQ_SEND;
}

/* Build and send packet k of w.  Returns the PSNs it consumes.  What
 * the packet carries follows from its opcode's entry in the table. */
static uint32_t dr_req_send_pkt(struct dr_qp *qp, struct dr_send_wqe *w, uint32_t k)
{
	uint32_t pmtu = qp->attr.path_mtu, psn = dr_psn_add(w->first_psn, (int32_t)k), used = 1;
	/* a short WRITE split into WRITE ONLYs (dr_qp_set_one_size) ends
	 * where the WQE does; npsn is set before its first packet */
	bool split = qp->one_size && w->wr.opcode == DR_WR_WRITE && w->npsn <= DR_QP_SHORT_MAX;
	uint8_t op = split ? DR_OP_WRITE_ONLY : dr_wr_opcode(w->wr.opcode, k, w->npsn);
	uint32_t f = dr_opcode(op)->flags;
	uint64_t off = (uint64_t)k * pmtu;
	uint32_t plen = w->length - off < pmtu ? (uint32_t)(w->length - off) : pmtu;
	struct dr_pkt_desc d;
	bool end = split ? k + 1 == w->npsn : (f & DR_OPF_END);

	dr_qp_desc(qp, &d, op, psn);
	if (f & DR_OPF_READ) {
		/* one request for the rest of k's request on the grid
		 * (w->rd_chunk); it reserves one PSN per response packet
		 * (B.1); a resend asks only for what is missing */
		used = dr_req_read_span(w, k);
		d.reth.va = w->wr.remote_addr + off;
		d.reth.rkey = w->wr.rkey;
		if (k + used == w->npsn)
			d.reth.len = (uint32_t)(w->length - (off < w->length ? off : w->length));
		else
			d.reth.len = used * pmtu;
		w->rd_tokens++;
		qp->req.ord_used++;
	} else if (split) {
		/* each WRITE ONLY's RETH: its own piece */
		d.reth.va = w->wr.remote_addr + off;
		d.reth.rkey = w->wr.rkey;
		d.reth.len = plen;
	} else if (f & DR_OPF_RETH) {
		/* a WRITE's RETH carries the whole message length (A.5) */
		d.reth.va = w->wr.remote_addr;
		d.reth.rkey = w->wr.rkey;
		d.reth.len = (uint32_t)w->length;
	}
	if (f & DR_OPF_ATMETH) {
		d.atmeth.va = w->wr.remote_addr;
		d.atmeth.rkey = w->wr.rkey;
		if (w->wr.opcode == DR_WR_FETCH_ADD) {
			d.atmeth.swap_add = w->wr.compare_add;
		} else {
			d.atmeth.swap_add = w->wr.swap;
			d.atmeth.cmp = w->wr.compare_add;
		}
	}
	if (f & DR_OPF_IMMDT)
		d.imm = w->wr.imm;
	/* SE only where the receive completes (A.4) */
	if ((f & DR_OPF_RECV_DONE) && (w->wr.flags & DR_WR_SOLICITED))
		d.se = true;
	if (f & DR_OPF_PAYLOAD) {
		const uint8_t *p = dr_sge_span(w->sge, w->wr.num_sge, off, plen);

		if (!p && plen) {
			dr_sge_copy_out(w->sge, w->wr.num_sge, off, qp->gather, plen);
			p = qp->gather;
		}
		d.payload = p;
		d.payload_len = plen;
	}

	/* AckReq on the last packet of a message and at least every
	 * ack_pkts packets (B.2; DR_QP_MAX_PKT_PER_ACK or dr_qp_set_ack_pkts),
	 * or every half window; on a timeout's probe; while paced, at least
	 * once a round trip (dr_cc_ackreq).  Not on the end of a SEND or
	 * WRITE nothing waits for, to a peer that acknowledges unasked,
	 * while few WRs are outstanding (dr_qp_set_lazy_ack) */
	if (end && qp->lazy_ack && (w->wr.flags & DR_WR_UNWAITED) &&
	    !(f & (DR_OPF_READ | DR_OPF_ATMETH)) && dr_qp_lazy_ok(qp)) {
		end = false;
		qp->stats.unasked_ends++;
	}
	if (dr_cc_ackreq(qp, end || qp->req.probe || ++qp->req.noack_pkts >= qp->ack_pkts ||
				 qp->req.noack_pkts >= qp->req.cwnd / 2)) {
		d.ackreq = true;
		qp->req.noack_pkts = 0;
	}
	qp->stats.tx_req_pkts++;
	if (dr_psn_diff(psn, qp->comp.max_psn) < 0)
		qp->stats.tx_resent_pkts++;
	else if (d.ackreq)
		dr_comp_rtt_start(qp, psn);
	dr_cc_mark(qp, &d);
	/* the first packet of a go-back-N carries why (comp.c) */
	if (qp->req.note[0] && psn == qp->req.note_psn) {
		dr_qp_send_frame_note(qp, &d, qp->req.note);
		qp->req.note[0] = '\0';
	} else {
		dr_qp_send_frame(qp, &d);
	}
	dr_cc_sent(qp, d.payload_len);
	return used;
}

/* Is w allowed to start now (first transmission only)? */
static bool dr_req_may_start(struct dr_qp *qp, const struct dr_send_wqe *w)
{
	/* IBA 10.8.3.3 fence: wait until earlier READ/atomics completed */
	if ((w->wr.flags & DR_WR_FENCE) && qp->req.ord_used)
		return false;
	/* ORD: max_rd_atomic outstanding READ/atomics (B.8) */
	if (dr_wr_is_rd_atomic(w->wr.opcode) && qp->req.ord_used >= qp->attr.max_rd_atomic)
		return false;
	return true;
}

void dr_req_run(struct dr_qp *qp)
{
	bool sent = false;

	if (qp->state != DR_QPS_RTS || qp->req.state == DR_REQ_WAIT_RNR ||
	    qp->req.state == DR_REQ_ERROR)
		return;
	for (;;) {
		struct dr_send_wqe *w;
		uint32_t k, used, end;

		if (qp->req.wqe == qp->sq.head) {
			dr_req_set_state(qp, DR_REQ_IDLE);
			break;
		}
		w = dr_sq_wqe(qp, qp->req.wqe);
		if (w->state == DR_WQE_POSTED && !dr_req_may_start(qp, w)) {
			dr_req_set_state(qp, DR_REQ_WAIT_ORD);
			break;
		}
		if (dr_psn_diff(qp->req.psn, qp->comp.psn) >= (int32_t)qp->req.cwnd ||
		    (qp->req.probe && qp->req.psn != qp->comp.psn) || qp->req.probe_wait) {
			dr_req_set_state(qp, DR_REQ_WAIT_WINDOW);
			break;
		}
		dr_req_set_state(qp, DR_REQ_SEND);
		if (w->state == DR_WQE_POSTED) {
			w->first_psn = qp->req.psn;
			w->npsn = dr_qp_npkts(qp, w->length);
			w->rsp_psns = 0;
			w->state = DR_WQE_PENDING;
			w->rd_tokens = 0;
			/* a READ's grid, for good: requests of 126 while two
			 * fit twice the window, of 64 (as many responses at
			 * once as before they grew) after losses or CNPs have
			 * cut it, or at a congestion-controlled start; of two
			 * responses each, a FIRST and a LAST of one size, for
			 * a short READ when packets are to be of one size
			 * (dr_qp_set_one_size) */
			if (qp->one_size && w->npsn <= DR_QP_SHORT_MAX)
				w->rd_chunk = 2;
			else
				w->rd_chunk = qp->read_mult * qp->req.cwnd >= qp->read_chunk
						  ? qp->read_chunk
						  : DR_QP_READ_CHUNK_MIN;
			if (dr_wr_is_atomic(w->wr.opcode)) {
				w->ord_token = true;
				qp->req.ord_used++;
			}
		}
		k = (uint32_t)dr_psn_diff(qp->req.psn, w->first_psn);
		if (w->state != DR_WQE_PENDING || k >= w->npsn) {
			/* cannot happen: the completer keeps req.wqe/req.psn
			 * in step; skip rather than send garbage */
			qp->req.wqe++;
			continue;
		}
		if (w->wr.opcode == DR_WR_READ) {
			enum dr_req_state g = dr_req_read_gate(qp, w, k);

			if (g != DR_REQ_SEND) {
				dr_req_set_state(qp, g);
				break;
			}
		}
		if (!dr_cc_may_send(qp)) {
			dr_req_set_state(qp, DR_REQ_WAIT_RATE);
			break;
		}
		used = dr_req_send_pkt(qp, w, k);
		sent = true;
		qp->req.psn = dr_psn_add(qp->req.psn, (int32_t)used);
		if (dr_psn_diff(qp->req.psn, qp->comp.max_psn) > 0)
			qp->comp.max_psn = qp->req.psn;
		end = dr_psn_add(w->first_psn, (int32_t)w->npsn);
		if (qp->req.psn == end)
			qp->req.wqe++;
	}
	if (sent) {
		dr_comp_arm(qp);
		if (qp->ops->sent)
			qp->ops->sent(qp->ctx, qp,
				      (uint32_t)dr_psn_diff(qp->req.psn, qp->comp.psn));
	}
}

/* Go-back-N (B.6): resend from the first unacknowledged PSN.  The WQE
 * holding comp.psn restarts at its first unacknowledged packet (a READ
 * asks again only for the missing responses); later WQEs restart whole. */
void dr_req_rewind(struct dr_qp *qp)
{
	if (qp->req.state == DR_REQ_ERROR)
		return;
	/* the furthest point of the episode: a second timeout before any
	 * answer rewinds from the probe, not from what was in flight */
	if (!qp->req.undo_ok || dr_psn_diff(qp->req.psn, qp->req.undo_psn) > 0) {
		qp->req.undo_psn = qp->req.psn;
		qp->req.undo_wqe = qp->req.wqe;
	}
	qp->req.undo_ok = true;
	qp->req.probe_wait = false;
	/* the READ requests outstanding are asked again: their tokens go */
	for (uint32_t i = qp->sq.tail; i != qp->sq.head; i++) {
		struct dr_send_wqe *w = dr_sq_wqe(qp, i);

		if (w->state != DR_WQE_PENDING)
			break;
		qp->req.ord_used -= w->rd_tokens;
		w->rd_tokens = 0;
	}
	qp->req.psn = qp->comp.psn;
	qp->req.wqe = qp->sq.tail;
	qp->req.noack_pkts = 0;
	qp->comp.rtt_on = false; /* Karn: no round trip is timed across a resend */
	dr_req_set_state(qp, DR_REQ_SEND);
}

/* The READ requests of w outstanding once the requester has sent its
 * packets before sent: one per grid request (w->rd_chunk) from the
 * one that holds the next response due to the last one sent. */
static uint32_t dr_req_read_outstanding(const struct dr_send_wqe *w, uint32_t sent)
{
	if (sent <= w->rsp_psns)
		return 0;
	return (sent - 1) / w->rd_chunk - w->rsp_psns / w->rd_chunk + 1;
}

/* Undo the last rewind (req.undo_*): what the requester had sent is under
 * way after all (comp.c dr_comp_progress).  The window is what it was;
 * unless the answers have passed it already, the requester goes back to
 * where it was, and the READ requests sent before the rewind hold their
 * tokens again.  False when it does not move. */
bool dr_req_undo(struct dr_qp *qp)
{
	uint32_t ord = 0;

	if (!qp->req.undo_ok)
		return false;
	qp->req.undo_ok = false;
	if (qp->req.cwnd < qp->req.undo_cwnd)
		qp->req.cwnd = qp->req.undo_cwnd;
	if (dr_psn_diff(qp->req.undo_psn, qp->req.psn) <= 0 ||
	    (int32_t)(qp->req.undo_wqe - qp->sq.tail) < 0)
		return false;
	qp->req.psn = qp->req.undo_psn;
	qp->req.wqe = qp->req.undo_wqe;
	for (uint32_t i = qp->sq.tail; i != qp->sq.head; i++) {
		struct dr_send_wqe *w = dr_sq_wqe(qp, i);
		uint32_t sent;

		if (w->state != DR_WQE_PENDING)
			break;
		if (w->ord_token)
			ord++;
		if (w->wr.opcode != DR_WR_READ)
			continue;
		if ((int32_t)(i - qp->req.wqe) < 0)
			sent = w->npsn;
		else if (i == qp->req.wqe)
			sent = (uint32_t)dr_psn_diff(qp->req.psn, w->first_psn);
		else
			sent = 0;
		w->rd_tokens = dr_req_read_outstanding(w, sent);
		ord += w->rd_tokens;
	}
	qp->req.ord_used = ord;
	return true;
}
