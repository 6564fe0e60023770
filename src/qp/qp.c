/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * qp.c - the QP object: states and attributes (IBA 10.3, 11.2.4), posting
 * work requests, dispatch of incoming packets to the responder or the
 * completer, timers, frame output, and the move to ERROR with its flush.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qp_priv.h"

#define DR_QP_FRAME_CAP (DR_MAX_PMTU + 256)

const char *const dr_qp_state_names[DR_QPS_NUM] = {
    [DR_QPS_RESET] = "RESET", [DR_QPS_INIT] = "INIT",	[DR_QPS_RTR] = "RTR",
    [DR_QPS_RTS] = "RTS",     [DR_QPS_ERROR] = "ERROR",
};

const char *const dr_wr_opcode_names[DR_WR_NUM] = {
    [DR_WR_SEND] = "SEND",
    [DR_WR_SEND_IMM] = "SEND_WITH_IMM",
    [DR_WR_WRITE] = "RDMA_WRITE",
    [DR_WR_WRITE_IMM] = "RDMA_WRITE_WITH_IMM",
    [DR_WR_READ] = "RDMA_READ",
    [DR_WR_FETCH_ADD] = "ATOMIC_FETCH_ADD",
    [DR_WR_CMP_SWAP] = "ATOMIC_CMP_SWAP",
};

/* IBA table 38: a SEND or WRITE is as many packets as its length needs at
 * the path MTU; a READ request asks for (part of) the READ's responses; an
 * atomic is one packet. */
const struct dr_wr_info dr_wr_tab[DR_WR_NUM] = {
    [DR_WR_SEND] = {{DR_OP_SEND_ONLY, DR_OP_SEND_FIRST, DR_OP_SEND_MIDDLE, DR_OP_SEND_LAST},
		    DR_WC_SEND},
    [DR_WR_SEND_IMM] = {{DR_OP_SEND_ONLY_IMM, DR_OP_SEND_FIRST, DR_OP_SEND_MIDDLE,
			 DR_OP_SEND_LAST_IMM},
			DR_WC_SEND},
    [DR_WR_WRITE] = {{DR_OP_WRITE_ONLY, DR_OP_WRITE_FIRST, DR_OP_WRITE_MIDDLE, DR_OP_WRITE_LAST},
		     DR_WC_WRITE},
    [DR_WR_WRITE_IMM] = {{DR_OP_WRITE_ONLY_IMM, DR_OP_WRITE_FIRST, DR_OP_WRITE_MIDDLE,
			  DR_OP_WRITE_LAST_IMM},
			 DR_WC_WRITE},
    [DR_WR_READ] = {{DR_OP_READ_REQ, DR_OP_READ_REQ, DR_OP_READ_REQ, DR_OP_READ_REQ}, DR_WC_READ},
    [DR_WR_FETCH_ADD] = {{DR_OP_FETCH_ADD, DR_OP_FETCH_ADD, DR_OP_FETCH_ADD, DR_OP_FETCH_ADD},
			 DR_WC_FETCH_ADD},
    [DR_WR_CMP_SWAP] = {{DR_OP_CMP_SWAP, DR_OP_CMP_SWAP, DR_OP_CMP_SWAP, DR_OP_CMP_SWAP},
			DR_WC_CMP_SWAP},
};

const char *const dr_wc_status_names[DR_WC_STATUS_NUM] = {
    [DR_WC_SUCCESS] = "success",
    [DR_WC_LOC_LEN_ERR] = "local length error",
    [DR_WC_LOC_PROT_ERR] = "local protection error",
    [DR_WC_WR_FLUSH_ERR] = "flushed",
    [DR_WC_REM_INV_REQ_ERR] = "remote invalid request",
    [DR_WC_REM_ACCESS_ERR] = "remote access error",
    [DR_WC_REM_OP_ERR] = "remote operational error",
    [DR_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
    [DR_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
};

const char *const dr_remote_op_names[DR_REMOTE_OP_NUM] = {
    [DR_REMOTE_WRITE] = "RDMA_WRITE",
    [DR_REMOTE_READ] = "RDMA_READ",
    [DR_REMOTE_FETCH_ADD] = "ATOMIC_FETCH_ADD",
    [DR_REMOTE_CMP_SWAP] = "ATOMIC_CMP_SWAP",
};

const char *const dr_rx_drop_names[DR_RX_DROP_NUM] = {
    [DR_RX_OK] = "ok",
    [DR_RX_DROP_NOT_IPV4] = "not_ipv4",
    [DR_RX_DROP_UNKNOWN_QPN] = "unknown_qpn",
    [DR_RX_DROP_GSI] = "bad_gsi",
    [DR_RX_DROP_DST_QPN] = "dst_qpn",
    [DR_RX_DROP_TYPE] = "not_rc",
    [DR_RX_DROP_STATE] = "qp_state",
    [DR_RX_DROP_SRC_ADDR] = "src_addr",
    [DR_RX_DROP_DST_ADDR] = "dst_addr",
    [DR_RX_DROP_PKEY] = "pkey",
    [DR_RX_DROP_PSN_AHEAD] = "psn_ahead",
    [DR_RX_DROP_PSN_AHEAD_RNR] = "psn_ahead_rnr",
    [DR_RX_DROP_PSN_STALE] = "psn_stale",
    [DR_RX_DROP_RSP] = "unexpected_rsp",
};

bool dr_rx_drop_hostile(enum dr_rx_drop why)
{
	/* Unknown QPNs are not among them: a peer's retransmissions reach a
	 * QP that was just closed.  Nor are PSN and state drops: loss,
	 * duplication and a peer's late frames make those. */
	switch (why) {
	case DR_RX_DROP_NOT_IPV4:
	case DR_RX_DROP_GSI:
	case DR_RX_DROP_DST_QPN:
	case DR_RX_DROP_TYPE:
	case DR_RX_DROP_SRC_ADDR:
	case DR_RX_DROP_DST_ADDR:
	case DR_RX_DROP_PKEY:
		return true;
	default:
		return false;
	}
}

/* ---- small services ------------------------------------------------------ */

void dr_qp_log(struct dr_qp *qp, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	if (!qp->ops->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	qp->ops->log(qp->ctx, qp, msg);
}

bool dr_qp_noting(const struct dr_qp *qp)
{
	return qp->ops->note && (!qp->ops->noting || qp->ops->noting(qp->ctx, (struct dr_qp *)qp));
}

void dr_qp_note_add(char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dr_note_vadd(buf, DR_QP_NOTE_LEN, fmt, ap);
	va_end(ap);
}

void dr_qp_note(struct dr_qp *qp, const void *frame, size_t len, const char *fmt, ...)
{
	char text[DR_QP_NOTE_LEN] = "";
	va_list ap;

	if (!dr_qp_noting(qp))
		return;
	va_start(ap, fmt);
	dr_note_vadd(text, DR_QP_NOTE_LEN, fmt, ap);
	va_end(ap);
	qp->ops->note(qp->ctx, qp, frame, len, text);
}

void dr_qp_note_event(struct dr_qp *qp, const char *fmt, ...)
{
	char text[DR_QP_NOTE_LEN] = "";
	va_list ap;

	if (!dr_qp_noting(qp))
		return;
	va_start(ap, fmt);
	dr_note_vadd(qp->rx_pkt ? text : qp->tx_note, DR_QP_NOTE_LEN, fmt, ap);
	va_end(ap);
	if (qp->rx_pkt)
		qp->ops->note(qp->ctx, qp, qp->rx_pkt->frame, qp->rx_pkt->frame_len, text);
}

const char *dr_qp_note_op(const struct dr_opcode_info *op)
{
	if (op->flags & DR_OPF_READ && op->flags & DR_OPF_REQ)
		return "READ";
	return strncmp(op->name, "RC_", 3) ? op->name : op->name + 3;
}

uint64_t dr_qp_now(struct dr_qp *qp)
{
	return qp->ops->now_ns(qp->ctx);
}

uint64_t dr_qp_timeout_ns(unsigned exp)
{
	/* IBA 9.7.6 (local ACK timeout): 4.096 us * 2^timeout; 0 = infinite */
	return exp && exp < 32 ? 4096ull << exp : 0;
}

uint64_t dr_rnr_timer_ns(unsigned code)
{
	/* IBA table 45 (RNR NAK timer field), in microseconds */
	static const uint32_t rnr_us[32] = {
	    655360, 10,	   20,	  30,	 40,	60,	80,	120,	160,	240,	320,
	    480,    640,   960,	  1280,	 1920,	2560,	3840,	5120,	7680,	10240,	15360,
	    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)rnr_us[code & 31] * 1000;
}

uint16_t dr_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
	/* include/rdma/ib_verbs.h rdma_get_udp_sport / rdma_calc_flow_label */
	if (!flow_label) {
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		flow_label = (uint32_t)v & 0xfffff;
	}
	return 0xc000 | ((flow_label & 0x3fff) ^ ((flow_label & 0xfc000) >> 14));
}

void dr_qp_timer_update(struct dr_qp *qp)
{
	uint64_t d = UINT64_MAX;

	if (qp->comp.rto_deadline_ns)
		d = qp->comp.rto_deadline_ns;
	if (qp->comp.rnr_deadline_ns && qp->comp.rnr_deadline_ns < d)
		d = qp->comp.rnr_deadline_ns;
	if (qp->cc.pace_ns && qp->cc.pace_ns < d)
		d = qp->cc.pace_ns;
	if (qp->req.probe_wait && qp->state == DR_QPS_RTS && qp->req.probe_hold_ns < d)
		d = qp->req.probe_hold_ns;
	if (qp->resp.ack_lazy && qp->resp.lazy_ns < d)
		d = qp->resp.lazy_ns;
	if (d != qp->deadline_ns) {
		qp->deadline_ns = d;
		if (qp->ops->timer_set)
			qp->ops->timer_set(qp->ctx, qp, d);
	}
}

void dr_qp_flush(struct dr_qp *qp)
{
	if (qp->state == DR_QPS_RTS) {
		/* first: the progress it stands for came before the rest */
		dr_comp_rearm_settle(qp);
	} else {
		qp->comp.rearm_due = false;
	}
	if (qp->state == DR_QPS_RTS || qp->state == DR_QPS_RTR) {
		/* not a lazy ACK before its time: flushes come with the
		 * peer's ACKs, and each would call out the next */
		if (!qp->resp.ack_lazy || dr_qp_now(qp) >= qp->resp.lazy_ns)
			dr_resp_flush_ack(qp);
	} else {
		qp->resp.ack_due = false;
		qp->resp.ack_lazy = false;
	}
	if (qp->state == DR_QPS_RTS)
		dr_comp_probe_settle(qp);
	else
		qp->req.probe_wait = false;
}

bool dr_qp_ack_ripen(struct dr_qp *qp)
{
	if (!qp->resp.ack_lazy ||
	    dr_qp_now(qp) + DR_QP_LAZY_ACK_NS - DR_QP_LAZY_RIPE_NS < qp->resp.lazy_ns)
		return false;
	qp->resp.ack_lazy = false;
	return true;
}

void dr_qp_flush_ack(struct dr_qp *qp)
{
	if (qp->state == DR_QPS_RTS || qp->state == DR_QPS_RTR)
		dr_resp_flush_ack(qp);
}

bool dr_qp_flush_due(const struct dr_qp *qp)
{
	/* a lazy ACK has its own deadline (dr_qp_tick) */
	return (qp->resp.ack_due && !qp->resp.ack_lazy) || qp->req.probe_wait || qp->comp.rearm_due;
}

uint64_t dr_qp_deadline_ns(const struct dr_qp *qp)
{
	return qp->deadline_ns;
}

const struct dr_qp_stats *dr_qp_stats(const struct dr_qp *qp)
{
	return &qp->stats;
}

uint32_t dr_qp_num(const struct dr_qp *qp)
{
	return qp->qpn;
}

enum dr_qp_state dr_qp_state(const struct dr_qp *qp)
{
	return qp->state;
}

void dr_qp_query(const struct dr_qp *qp, struct dr_qp_attr *attr)
{
	*attr = qp->attr;
	attr->state = qp->state;
	attr->sq_psn = qp->req.psn;
	attr->rq_psn = qp->resp.psn;
}

/* head - tail never exceeds mask + 1 (the post functions refuse) */
uint32_t dr_qp_sq_free(const struct dr_qp *qp)
{
	return qp->sq.mask + 1 - (qp->sq.head - qp->sq.tail);
}

uint32_t dr_qp_rq_free(const struct dr_qp *qp)
{
	return qp->rq.mask + 1 - (qp->rq.head - qp->rq.tail);
}

void dr_qp_tick(struct dr_qp *qp)
{
	uint64_t now = dr_qp_now(qp);

	/* a lazy ACK's time has come (dr_qp_set_lazy_ack): DR_QP_DEFER_ACK,
	 * it is held as an asked one, to leave with the caller's next burst
	 * (dr_qp_flush_due), ahead of what that carries; otherwise now */
	if (qp->resp.ack_lazy && now >= qp->resp.lazy_ns &&
	    (qp->state == DR_QPS_RTS || qp->state == DR_QPS_RTR)) {
		if (qp->flags & DR_QP_DEFER_ACK)
			qp->resp.ack_lazy = false;
		else
			dr_resp_flush_ack(qp);
	}
	if (qp->state == DR_QPS_RTS) {
		/* progress not yet flushed (DR_QP_DEFER_ACK) moves the
		 * retransmit deadline before it is judged */
		dr_comp_rearm_settle(qp);
		if (qp->comp.rnr_deadline_ns && now >= qp->comp.rnr_deadline_ns)
			dr_comp_rnr_expired(qp);
		if (qp->state == DR_QPS_RTS && qp->comp.rto_deadline_ns &&
		    now >= qp->comp.rto_deadline_ns)
			dr_comp_timeout(qp);
		if (qp->state == DR_QPS_RTS && qp->req.probe_wait)
			dr_comp_probe_settle(qp);
		if (qp->state == DR_QPS_RTS)
			dr_cc_paced(qp);
	}
	dr_qp_timer_update(qp);
}

/* ---- frames ---------------------------------------------------------------- */

void dr_qp_desc(struct dr_qp *qp, struct dr_pkt_desc *d, uint8_t opcode, uint32_t psn)
{
	*d = qp->tmpl;
	d->ip_id = qp->ip_id++;
	d->opcode = opcode;
	d->dqpn = qp->attr.dest_qpn;
	d->psn = psn & DR_PSN_MASK;
}

/* The notes for a frame about to leave (built, len bytes): the caller's
 * and those waiting for this QP's next frame (dr_qp_note_event). */
static void dr_qp_tx_notes(struct dr_qp *qp, const void *frame, size_t len, const char *note)
{
	if (qp->tx_note[0]) {
		if (note && *note)
			dr_qp_note_add(qp->tx_note, "%s", note);
		note = qp->tx_note;
	}
	if (note && *note && qp->ops->note)
		qp->ops->note(qp->ctx, qp, frame, len, note);
	qp->tx_note[0] = '\0';
}

void dr_qp_send_frame(struct dr_qp *qp, const struct dr_pkt_desc *d)
{
	dr_qp_send_frame_note(qp, d, NULL);
}

void dr_qp_send_frame_note(struct dr_qp *qp, const struct dr_pkt_desc *d, const char *note)
{
	bool noted = (note && *note) || qp->tx_note[0];

	const struct dr_qp_ops *o = qp->ops;
	int len;

	if (o->xmit_split && d->payload_len >= DR_QP_SPLIT_MIN && d->payload != qp->gather) {
		/* zero copy: the payload stays where it is */
		uint8_t hdr[DR_PKT_HDR_CAP], trailer[7];
		unsigned tlen;

		len = dr_pkt_build_split(d, hdr, sizeof(hdr), trailer, &tlen);
		if (len >= 0) {
			qp->stats.tx_frames++;
			if (noted)
				dr_qp_tx_notes(qp, hdr, (size_t)len, note);
			o->xmit_split(qp->ctx, qp, hdr, (size_t)len, d->payload, d->payload_len,
				      trailer, tlen);
			return;
		}
	} else if (o->frame_alloc) {
		/* built in place, in the device's buffer */
		void *h, *buf = NULL;

		len = dr_pkt_frame_len(d);
		if (len > 0)
			buf = o->frame_alloc(qp->ctx, qp, (size_t)len, &h);
		if (buf) {
			int n = dr_pkt_build(d, buf, (size_t)len);

			if (noted && n == len)
				dr_qp_tx_notes(qp, buf, (size_t)len, note);
			o->frame_done(qp->ctx, qp, h, n == len);
			if (n == len) {
				qp->stats.tx_frames++;
				return;
			}
			len = n < 0 ? n : -EINVAL;
		} else if (len > 0) {
			/* no buffer: lost like a full device queue; resent */
			qp->stats.tx_frames++;
			return;
		}
	} else {
		len = dr_pkt_build(d, qp->frame, DR_QP_FRAME_CAP);
		if (len >= 0) {
			qp->stats.tx_frames++;
			if (noted)
				dr_qp_tx_notes(qp, qp->frame, (size_t)len, note);
			o->xmit(qp->ctx, qp, qp->frame, (size_t)len);
			return;
		}
	}
	/* a bug in the engine, never a peer's doing */
	dr_qp_log(qp, "frame build failed (%d) opcode 0x%02x len %u", len, d->opcode,
		  d->payload_len);
}

/* ---- SGE lists ------------------------------------------------------------ */

const uint8_t *dr_sge_span(const struct dr_sge *sge, unsigned n, uint64_t off, uint64_t len)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if (off < sge[i].length || (off == 0 && len == 0))
			/* integer sum: a zero-length SGE may hold address 0 */
			return off + len <= sge[i].length
				   ? (const uint8_t *)(uintptr_t)(sge[i].addr + off)
				   : NULL;
		off -= sge[i].length;
	}
	return NULL;
}

/* Copy len bytes between buf and the list from byte off: into the list
 * (to_sge) or out of it. */
static void dr_sge_copy(const struct dr_sge *sge, unsigned n, uint64_t off, uint8_t *buf,
			uint64_t len, bool to_sge)
{
	unsigned i;

	for (i = 0; i < n && len; i++) {
		uint64_t chunk;
		uint8_t *p;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		p = (uint8_t *)(uintptr_t)sge[i].addr + off;
		chunk = sge[i].length - off;
		if (chunk > len)
			chunk = len;
		memcpy(to_sge ? p : buf, to_sge ? buf : p, chunk);
		buf += chunk;
		len -= chunk;
		off = 0;
	}
}

void dr_sge_copy_out(const struct dr_sge *sge, unsigned n, uint64_t off, void *dst, uint64_t len)
{
	dr_sge_copy(sge, n, off, dst, len, false);
}

void dr_sge_copy_in(const struct dr_sge *sge, unsigned n, uint64_t off, const void *src,
		    uint64_t len)
{
	/* only read: the list is the destination */
	dr_sge_copy(sge, n, off, (uint8_t *)(uintptr_t)src, len, true);
}

unsigned dr_sge_iov(const struct dr_sge *sge, unsigned n, uint64_t off, uint64_t len,
		    struct iovec *iov, unsigned max)
{
	unsigned i, k = 0;

	for (i = 0; i < n && len; i++) {
		uint64_t chunk;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		if (k == max)
			return 0;
		chunk = sge[i].length - off;
		if (chunk > len)
			chunk = len;
		iov[k].iov_base = (uint8_t *)(uintptr_t)sge[i].addr + off;
		iov[k].iov_len = chunk;
		k++;
		len -= chunk;
		off = 0;
	}
	return len ? 0 : k;
}

/* Check each SGE against the MR table and turn it into a local pointer.
 * Returns the total length, or -EPERM / -EINVAL. */
static int64_t dr_sge_import(struct dr_qp *qp, struct dr_sge *dst, const struct dr_sge *src,
			     unsigned n, unsigned access)
{
	uint64_t total = 0;
	unsigned i;

	if (n > DR_QP_MAX_SGE || (n && !src))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		dst[i] = src[i];
		if (src[i].lkey != DR_LKEY_NONE) {
			uint8_t *p;

			if (!qp->mrt || dr_mr_check(qp->mrt, src[i].lkey, src[i].addr,
						    src[i].length, access, &p) != DR_MR_OK)
				return -EPERM;
			dst[i].addr = (uintptr_t)p;
			dst[i].lkey = DR_LKEY_NONE;
		}
		total += src[i].length;
	}
	if (total > DR_QP_MAX_MSG)
		return -EINVAL;
	return (int64_t)total;
}

/* ---- completions, error and flush ------------------------------------------ */

void dr_qp_complete(struct dr_qp *qp, const struct dr_wc *wc)
{
	qp->ops->complete(qp->ctx, qp, wc);
}

enum dr_wc_status dr_qp_nak_status(uint8_t syndrome)
{
	switch (syndrome) {
	case DR_AETH_NAK_INV_REQ:
		return DR_WC_REM_INV_REQ_ERR;
	case DR_AETH_NAK_REM_ACCESS:
		return DR_WC_REM_ACCESS_ERR;
	default: /* remote operational error, and codes we do not know (B.9) */
		return DR_WC_REM_OP_ERR;
	}
}

const char *dr_qp_nak_name(uint8_t syndrome)
{
	switch (syndrome) {
	case DR_AETH_NAK_PSN_SEQ:
		return "sequence error";
	case DR_AETH_NAK_INV_REQ:
		return "invalid request";
	case DR_AETH_NAK_REM_ACCESS:
		return "remote access error";
	case DR_AETH_NAK_REM_OP:
		return "remote operational error";
	case DR_AETH_NAK_INV_RD_REQ:
		return "invalid RD request";
	default:
		return "reserved code";
	}
}

static void dr_qp_flush_send(struct dr_qp *qp, struct dr_send_wqe *w)
{
	struct dr_wc wc = {
	    .wr_id = w->wr.wr_id,
	    .status = DR_WC_WR_FLUSH_ERR,
	    .opcode = dr_wr_tab[w->wr.opcode].wc,
	};

	dr_qp_complete(qp, &wc);
}

static void dr_qp_flush_recv(struct dr_qp *qp, struct dr_recv_wqe *w)
{
	struct dr_wc wc = {
	    .wr_id = w->wr.wr_id,
	    .status = DR_WC_WR_FLUSH_ERR,
	    .opcode = DR_WC_RECV,
	};

	dr_qp_complete(qp, &wc);
}

/* IBA 10.3.1: in ERROR every outstanding WR completes with a flush
 * status, in order, once; nothing more is sent or accepted. */
void dr_qp_error(struct dr_qp *qp, const char *why)
{
	if (qp->state == DR_QPS_ERROR)
		return;
	dr_qp_log(qp, "qp %u: %s -> ERROR", qp->qpn, dr_qp_state_names[qp->state]);
	dr_qp_note_event(qp, "QP state: %s -> ERROR (%s)", dr_qp_state_names[qp->state], why);
	qp->state = DR_QPS_ERROR;
	qp->resp.ack_due = false;
	qp->resp.ack_lazy = false;
	dr_req_set_state(qp, DR_REQ_ERROR);
	qp->comp.rto_deadline_ns = 0;
	qp->comp.rnr_deadline_ns = 0;
	qp->cc.pace_ns = 0;
	qp->req.probe = false;
	qp->req.probe_wait = false;
	dr_qp_timer_update(qp);
	while (qp->sq.tail != qp->sq.head) {
		struct dr_send_wqe *w = dr_sq_wqe(qp, qp->sq.tail++);

		if (w->ord_token)
			qp->req.ord_used--;
		qp->req.ord_used -= w->rd_tokens;
		w->rd_tokens = 0;
		dr_qp_flush_send(qp, w);
	}
	qp->req.wqe = qp->sq.tail;
	while (qp->rq.tail != qp->rq.head)
		dr_qp_flush_recv(qp, dr_rq_wqe(qp, qp->rq.tail++));
	qp->resp.rwqe = false;
	qp->resp.in = 0;
}

/* ---- create / destroy ------------------------------------------------------ */

static uint32_t dr_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

struct dr_qp *dr_qp_create(const struct dr_qp_init_attr *ia)
{
	struct dr_qp *qp;
	uint32_t ns, nr;

	if (!ia->ops || !ia->ops->xmit || !ia->ops->now_ns || !ia->ops->complete || ia->qpn == 0 ||
	    (ia->flags & ~(unsigned)(DR_QP_WRITE_IMM_NO_WQE | DR_QP_DEFER_ACK | DR_QP_ADAPTIVE_RTO |
				     DR_QP_CC | DR_QP_LOSSLESS)) ||
	    ia->qpn > DR_QPN_MASK || !ia->max_send_wr || !ia->max_recv_wr ||
	    ia->max_send_wr > (1u << 16) || ia->max_recv_wr > (1u << 16) ||
	    (ia->max_window &&
	     (ia->max_window < DR_QP_WINDOW_MIN || ia->max_window > DR_QP_MAX_UNACKED_PSNS)))
		return NULL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	ns = dr_pow2(ia->max_send_wr);
	nr = dr_pow2(ia->max_recv_wr);
	qp->sq.ring = calloc(ns, sizeof(*qp->sq.ring));
	qp->rq.ring = calloc(nr, sizeof(*qp->rq.ring));
	qp->frame = malloc(DR_QP_FRAME_CAP);
	qp->gather = malloc(DR_MAX_PMTU);
	if (!qp->sq.ring || !qp->rq.ring || !qp->frame || !qp->gather) {
		dr_qp_destroy(qp);
		return NULL;
	}
	qp->sq.mask = ns - 1;
	qp->rq.mask = nr - 1;
	qp->qpn = ia->qpn;
	qp->ops = ia->ops;
	qp->ctx = ia->ctx;
	qp->mrt = ia->mrt;
	qp->port_drops = ia->port_drops;
	qp->flags = ia->flags;
	qp->max_window = ia->max_window ? ia->max_window : DR_QP_MAX_UNACKED_PSNS;
	qp->read_chunk =
	    qp->max_window < DR_QP_MAX_UNACKED_PSNS ? qp->max_window : DR_QP_READ_CHUNK;
	qp->read_mult = qp->max_window < DR_QP_MAX_UNACKED_PSNS ? 1 : 2;
	qp->ack_pkts = DR_QP_MAX_PKT_PER_ACK;
	qp->rto_floor_init_ns = ia->flags & DR_QP_ADAPTIVE_RTO ? ia->rto_floor_ns : 0;
	qp->state = DR_QPS_RESET;
	qp->deadline_ns = UINT64_MAX;
	return qp;
}

void dr_qp_destroy(struct dr_qp *qp)
{
	if (!qp)
		return;
	if (qp->ops && qp->ops->timer_set && qp->deadline_ns != UINT64_MAX)
		qp->ops->timer_set(qp->ctx, qp, UINT64_MAX);
	free(qp->resp.res);
	free(qp->sq.ring);
	free(qp->rq.ring);
	free(qp->frame);
	free(qp->gather);
	free(qp);
}

/* ---- modify ---------------------------------------------------------------- */

/* IBA 11.2.4 / verbs modify_qp: attributes each transition requires
 * and may carry. */
static const struct dr_qp_trans {
	enum dr_qp_state from, to;
	unsigned required, optional;
} dr_qp_trans_tab[] = {
    {DR_QPS_RESET, DR_QPS_INIT, 0, 0},
    {DR_QPS_INIT, DR_QPS_INIT, 0, 0},
    {DR_QPS_INIT, DR_QPS_RTR,
     DR_QP_ATTR_DEST_QPN | DR_QP_ATTR_RQ_PSN | DR_QP_ATTR_PATH_MTU | DR_QP_ATTR_MAX_DEST_RD_ATOMIC |
	 DR_QP_ATTR_MIN_RNR_TIMER | DR_QP_ATTR_PATH,
     0},
    {DR_QPS_RTR, DR_QPS_RTS,
     DR_QP_ATTR_SQ_PSN | DR_QP_ATTR_TIMEOUT | DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_RNR_RETRY |
	 DR_QP_ATTR_MAX_RD_ATOMIC,
     DR_QP_ATTR_MIN_RNR_TIMER},
    {DR_QPS_RTS, DR_QPS_RTS, 0,
     DR_QP_ATTR_MIN_RNR_TIMER | DR_QP_ATTR_TIMEOUT | DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_RNR_RETRY},
};

static int dr_qp_attr_valid(const struct dr_qp_attr *a, unsigned mask)
{
	if ((mask & DR_QP_ATTR_DEST_QPN) && (a->dest_qpn == 0 || a->dest_qpn > DR_QPN_MASK))
		return 0;
	if ((mask & DR_QP_ATTR_RQ_PSN) && a->rq_psn > DR_PSN_MASK)
		return 0;
	if ((mask & DR_QP_ATTR_SQ_PSN) && a->sq_psn > DR_PSN_MASK)
		return 0;
	if ((mask & DR_QP_ATTR_PATH_MTU) &&
	    (a->path_mtu < 256 || a->path_mtu > 4096 || (a->path_mtu & (a->path_mtu - 1))))
		return 0;
	if ((mask & DR_QP_ATTR_TIMEOUT) && a->timeout > 31)
		return 0;
	if ((mask & DR_QP_ATTR_RETRY_CNT) && a->retry_cnt > 7)
		return 0;
	if ((mask & DR_QP_ATTR_RNR_RETRY) && a->rnr_retry > 7)
		return 0;
	if ((mask & DR_QP_ATTR_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return 0;
	return 1;
}

static void dr_qp_copy_attr(struct dr_qp *qp, const struct dr_qp_attr *a, unsigned mask)
{
	struct dr_qp_attr *q = &qp->attr;

	if (mask & DR_QP_ATTR_DEST_QPN)
		q->dest_qpn = a->dest_qpn;
	if (mask & DR_QP_ATTR_RQ_PSN)
		q->rq_psn = a->rq_psn;
	if (mask & DR_QP_ATTR_SQ_PSN)
		q->sq_psn = a->sq_psn;
	if (mask & DR_QP_ATTR_PATH_MTU)
		q->path_mtu = a->path_mtu;
	if (mask & DR_QP_ATTR_TIMEOUT)
		q->timeout = a->timeout;
	if (mask & DR_QP_ATTR_RETRY_CNT)
		q->retry_cnt = a->retry_cnt;
	if (mask & DR_QP_ATTR_RNR_RETRY)
		q->rnr_retry = a->rnr_retry;
	if (mask & DR_QP_ATTR_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & DR_QP_ATTR_MAX_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic;
	if (mask & DR_QP_ATTR_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & DR_QP_ATTR_PATH)
		q->path = a->path;
}

static void dr_qp_reset(struct dr_qp *qp)
{
	/* verbs: RESET discards every WR without a completion */
	free(qp->resp.res);
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	memset(&qp->cc, 0, sizeof(qp->cc));
	qp->sq.head = qp->sq.tail = 0;
	qp->rq.head = qp->rq.tail = 0;
	memset(&qp->attr, 0, sizeof(qp->attr));
	qp->tx_note[0] = '\0';
	qp->deadline_ns = UINT64_MAX;
	if (qp->ops->timer_set)
		qp->ops->timer_set(qp->ctx, qp, UINT64_MAX);
}

static int dr_qp_to_rtr(struct dr_qp *qp)
{
	const struct dr_qp_path *p = &qp->attr.path;
	struct dr_pkt_desc *d = &qp->tmpl;

	qp->resp.nres = qp->attr.max_dest_rd_atomic;
	free(qp->resp.res);
	qp->resp.res = NULL;
	if (qp->resp.nres) {
		qp->resp.res = calloc(qp->resp.nres, sizeof(*qp->resp.res));
		if (!qp->resp.res)
			return -ENOMEM;
	}
	qp->resp.res_next = 0;
	qp->resp.psn = qp->attr.rq_psn;
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.nak_rnr = false;
	qp->resp.in = 0;
	qp->resp.rwqe = false;
	qp->resp.rd_cont = false;

	dr_pkt_desc_init(d);
	memcpy(d->src_mac, p->src_mac, 6);
	memcpy(d->dst_mac, p->dst_mac, 6);
	if (p->ipv6) {
		d->ip_version = 6;
		memcpy(d->src_ip6, p->src_ip6, 16);
		memcpy(d->dst_ip6, p->dst_ip6, 16);
	} else {
		d->ip_version = 4;
		d->src_ip4 = p->src_ip4;
		d->dst_ip4 = p->dst_ip4;
	}
	d->tos = p->tos;
	d->ttl = p->ttl ? p->ttl : 64;
	d->sport = p->sport ? p->sport : dr_udp_sport(0, qp->qpn, qp->attr.dest_qpn);
	d->dport = DR_ROCE_UDP_PORT;
	d->pkey = DR_DEF_PKEY;
	return 0;
}

static void dr_qp_to_rts(struct dr_qp *qp)
{
	qp->req.psn = qp->attr.sq_psn;
	qp->req.wqe = qp->sq.tail;
	qp->req.noack_pkts = 0;
	/* DR_QP_CC: the window grows from DR_CC_INIT_CWND (qp_priv.h) */
	qp->req.cwnd = qp->flags & DR_QP_CC && DR_CC_INIT_CWND < qp->max_window ? DR_CC_INIT_CWND
										: qp->max_window;
	qp->req.probe = false;
	qp->req.probe_wait = false;
	qp->req.undo_ok = false;
	qp->req.state = DR_REQ_IDLE;
	qp->comp.spur_check = false;
	qp->comp.spur_answered = false;
	qp->comp.rto_floor_ns = qp->rto_floor_init_ns; /* dr_qp_init_attr.rto_floor_ns */
	qp->comp.floor_samples = 0;
	qp->comp.floor_ns = dr_qp_now(qp);
	qp->comp.psn = qp->attr.sq_psn;
	qp->comp.max_psn = qp->attr.sq_psn;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	dr_cc_init(qp);
}

int dr_qp_set_ack_pkts(struct dr_qp *qp, uint32_t n)
{
	if (n > DR_QP_MAX_PKT_PER_ACK)
		return -EINVAL;
	qp->ack_pkts = n ? n : DR_QP_MAX_PKT_PER_ACK;
	return 0;
}

void dr_qp_set_one_size(struct dr_qp *qp, bool on)
{
	qp->one_size = on;
}

/* a lazy ACK is due well within the shortest retransmit timeout */
_Static_assert(4ull * DR_QP_LAZY_ACK_NS <= 4096ull << DR_RTO_MIN_EXP,
	       "DR_QP_LAZY_ACK_NS too long for DR_RTO_MIN_EXP");

void dr_qp_set_lazy_ack(struct dr_qp *qp, bool on)
{
	qp->lazy_ack = on;
}

int dr_qp_modify(struct dr_qp *qp, const struct dr_qp_attr *attr, unsigned mask)
{
	enum dr_qp_state from = qp->state, to;
	const struct dr_qp_trans *t = NULL;
	size_t i;
	int ret;

	if (!(mask & DR_QP_ATTR_STATE) || (unsigned)attr->state >= DR_QPS_NUM)
		return -EINVAL;
	to = attr->state;
	if (to == DR_QPS_RESET) {
		dr_qp_reset(qp);
		qp->state = DR_QPS_RESET;
		return 0;
	}
	if (to == DR_QPS_ERROR) {
		dr_qp_error(qp, "modify");
		return 0;
	}
	for (i = 0; i < sizeof(dr_qp_trans_tab) / sizeof(dr_qp_trans_tab[0]); i++)
		if (dr_qp_trans_tab[i].from == from && dr_qp_trans_tab[i].to == to)
			t = &dr_qp_trans_tab[i];
	mask &= ~DR_QP_ATTR_STATE;
	if (!t || (mask & t->required) != t->required || (mask & ~(t->required | t->optional)) ||
	    !dr_qp_attr_valid(attr, mask))
		return -EINVAL;
	dr_qp_copy_attr(qp, attr, mask);
	if (from == DR_QPS_INIT && to == DR_QPS_RTR) {
		ret = dr_qp_to_rtr(qp);
		if (ret)
			return ret;
	} else if (from == DR_QPS_RTR && to == DR_QPS_RTS) {
		dr_qp_to_rts(qp);
	} else if (from == DR_QPS_RTS && (mask & DR_QP_ATTR_RETRY_CNT)) {
		qp->comp.retry_left = qp->attr.retry_cnt;
	}
	if (from != to) {
		dr_qp_log(qp, "qp %u: %s -> %s", qp->qpn, dr_qp_state_names[from],
			  dr_qp_state_names[to]);
		dr_qp_note_event(qp, "QP state: %s -> %s (modify)", dr_qp_state_names[from],
				 dr_qp_state_names[to]);
	}
	qp->state = to;
	if (to == DR_QPS_RTS)
		dr_req_run(qp);
	return 0;
}

/* ---- posting ---------------------------------------------------------------- */

int dr_qp_post_send(struct dr_qp *qp, const struct dr_send_wr *wr)
{
	struct dr_send_wqe *w;
	unsigned access = 0;
	int64_t len;

	if (qp->state != DR_QPS_RTS && qp->state != DR_QPS_ERROR)
		return -EINVAL;
	if ((unsigned)wr->opcode >= DR_WR_NUM)
		return -EINVAL;
	if (qp->sq.head - qp->sq.tail > qp->sq.mask)
		return -ENOMEM;
	if (dr_wr_is_rd_atomic(wr->opcode)) {
		if (wr->flags & DR_WR_INLINE)
			return -EINVAL;
		if (qp->state == DR_QPS_RTS && qp->attr.max_rd_atomic == 0)
			return -EINVAL; /* it could never be sent */
		access = DR_ACCESS_LOCAL_WRITE;
	}
	w = dr_sq_wqe(qp, qp->sq.head);
	memset(w, 0, offsetof(struct dr_send_wqe, inline_data));
	len = dr_sge_import(qp, w->sge, wr->sg_list, wr->num_sge, access);
	if (len < 0)
		return (int)len;
	if (dr_wr_is_atomic(wr->opcode) && len != 8)
		return -EINVAL; /* the original value lands in 8 local bytes */
	w->wr = *wr;
	w->wr.sg_list = w->sge;
	w->length = (uint64_t)len;
	if (wr->flags & DR_WR_INLINE) {
		if (len > DR_QP_MAX_INLINE)
			return -EINVAL;
		dr_sge_copy_out(w->sge, wr->num_sge, 0, w->inline_data, (uint64_t)len);
		w->sge[0].addr = (uintptr_t)w->inline_data;
		w->sge[0].length = (uint32_t)len;
		w->sge[0].lkey = DR_LKEY_NONE;
		w->wr.num_sge = 1;
	}
	w->state = DR_WQE_POSTED;
	qp->sq.head++;
	if (qp->state == DR_QPS_ERROR) {
		qp->sq.tail++;
		qp->req.wqe = qp->sq.tail;
		dr_qp_flush_send(qp, w);
		return 0;
	}
	dr_req_run(qp);
	return 0;
}

int dr_qp_post_recv(struct dr_qp *qp, const struct dr_recv_wr *wr)
{
	struct dr_recv_wqe *w;
	int64_t len;

	if (qp->state == DR_QPS_RESET)
		return -EINVAL;
	if (qp->rq.head - qp->rq.tail > qp->rq.mask)
		return -ENOMEM;
	w = dr_rq_wqe(qp, qp->rq.head);
	len = dr_sge_import(qp, w->sge, wr->sg_list, wr->num_sge, DR_ACCESS_LOCAL_WRITE);
	if (len < 0)
		return (int)len;
	w->wr = *wr;
	w->wr.sg_list = w->sge;
	w->length = (uint64_t)len;
	qp->rq.head++;
	if (qp->state == DR_QPS_ERROR) {
		qp->rq.tail++;
		dr_qp_flush_recv(qp, w);
	}
	return 0;
}

/* ---- input ------------------------------------------------------------------ */

/* "dropped: <reason>, <what was wrong>" on the frame dr_qp_input handles
 * (src/fi marks its record dropped). */
static void dr_qp_drop_note(struct dr_qp *qp, enum dr_rx_drop why)
{
	const struct dr_pkt *pkt = qp->rx_pkt;
	char what[96] = "";

	switch (why) {
	case DR_RX_DROP_SRC_ADDR:
	case DR_RX_DROP_DST_ADDR:
		if (pkt->ip4 || pkt->ip6) {
			bool src = why == DR_RX_DROP_SRC_ADDR;
			char s[INET6_ADDRSTRLEN];

			if (pkt->ip4)
				inet_ntop(AF_INET, src ? &pkt->ip4->saddr : &pkt->ip4->daddr, s,
					  sizeof(s));
			else
				inet_ntop(AF_INET6, src ? pkt->ip6->saddr : pkt->ip6->daddr, s,
					  sizeof(s));
			snprintf(what, sizeof(what), ", %s %s", src ? "from" : "to", s);
		}
		break;
	case DR_RX_DROP_PKEY:
		snprintf(what, sizeof(what), ", P_Key 0x%04x", dr_bth_pkey(pkt->bth));
		break;
	case DR_RX_DROP_STATE:
		snprintf(what, sizeof(what), ", QP in %s", dr_qp_state_names[qp->state]);
		break;
	case DR_RX_DROP_PSN_AHEAD:
		snprintf(what, sizeof(what), ", expected PSN %u, received PSN %u, NAK already sent",
			 qp->resp.psn, pkt->psn);
		break;
	case DR_RX_DROP_PSN_AHEAD_RNR:
		snprintf(what, sizeof(what),
			 ", expected PSN %u, received PSN %u, held behind an RNR NAK", qp->resp.psn,
			 pkt->psn);
		break;
	case DR_RX_DROP_PSN_STALE:
		snprintf(what, sizeof(what), ", PSN %u, nothing kept to answer it", pkt->psn);
		break;
	case DR_RX_DROP_RSP:
		if (dr_psn_diff(qp->comp.max_psn, qp->comp.psn) > 0)
			snprintf(what, sizeof(what), ", PSN %u, outstanding PSN %u..%u", pkt->psn,
				 qp->comp.psn, dr_psn_add(qp->comp.max_psn, -1));
		else
			snprintf(what, sizeof(what), ", PSN %u, nothing outstanding", pkt->psn);
		break;
	default:
		break;
	}
	dr_qp_note_event(qp, "dropped: %s%s", dr_rx_drop_names[why], what);
}

void dr_qp_drop(struct dr_qp *qp, enum dr_rx_drop why)
{
	qp->stats.rx_dropped++;
	qp->stats.rx_drop[why]++;
	if (qp->port_drops)
		qp->port_drops[why]++;
	if (qp->rx_pkt && dr_qp_noting(qp))
		dr_qp_drop_note(qp, why);
}

/*
 * Who may talk to this QP: rxe_recv.c hdr_check's checks (check_type_state,
 * check_addr, check_keys).  The device has already found the QP by DestQP
 * and the port has checked the ICRC, TVer, the UDP port and that the
 * frame is for our MAC and IP.  The addresses and the P_Key are checked
 * before the state, so that a forged frame is named as such whatever
 * state the QP is in.  The UDP source port is not checked (rxe does not:
 * peers choose it for ECMP entropy, A.3).
 */
enum dr_rx_drop dr_qp_rx_check(const struct dr_qp *qp, const struct dr_pkt *pkt)
{
	uint32_t f = pkt->op->flags;

	if (pkt->dqpn != qp->qpn)
		return DR_RX_DROP_DST_QPN;
	/* IBA 9.2.1: the transport bits say RC (a request or a response),
	 * or it is a CNP (annex A17.9.3); UD (QP1's) is not for us */
	if (!(f & (DR_OPF_REQ | DR_OPF_RSP | DR_OPF_CNP)))
		return DR_RX_DROP_TYPE;
	/* before RTR the QP has no peer to compare with */
	if (qp->state == DR_QPS_RESET || qp->state == DR_QPS_INIT)
		return DR_RX_DROP_STATE;
	/* the connection's addresses, both ways (rxe check_addr) */
	if (qp->attr.path.ipv6) {
		if (!pkt->ip6 || memcmp(pkt->ip6->saddr, qp->attr.path.dst_ip6, 16))
			return DR_RX_DROP_SRC_ADDR;
		if (memcmp(pkt->ip6->daddr, qp->attr.path.src_ip6, 16))
			return DR_RX_DROP_DST_ADDR;
	} else {
		if (!pkt->ip4 || ntohl(pkt->ip4->saddr) != qp->attr.path.dst_ip4)
			return DR_RX_DROP_SRC_ADDR;
		if (ntohl(pkt->ip4->daddr) != qp->attr.path.src_ip4)
			return DR_RX_DROP_DST_ADDR;
	}
	/* rxe check_keys: P_Key against the QP's (0xFFFF, full member) */
	if (!dr_pkey_match(dr_bth_pkey(pkt->bth), qp->tmpl.pkey))
		return DR_RX_DROP_PKEY;
	/* IBA 10.3.1: the responder works in RTR and RTS, the completer in
	 * RTS, and so does a CNP's reaction; in ERROR nothing is accepted */
	if (qp->state == DR_QPS_ERROR ||
	    ((f & (DR_OPF_RSP | DR_OPF_CNP)) && qp->state != DR_QPS_RTS))
		return DR_RX_DROP_STATE;
	return DR_RX_OK;
}

unsigned dr_qp_place(const struct dr_qp *qp, const struct dr_pkt *pkt, struct iovec *dst,
		     unsigned max)
{
	if (!dr_icrc_placeable(pkt->opcode) || dr_qp_rx_check(qp, pkt) != DR_RX_OK)
		return 0;
	return pkt->op->flags & DR_OPF_REQ ? dr_resp_place(qp, pkt, dst, max)
					   : dr_comp_place(qp, pkt, dst, max);
}

void dr_qp_input(struct dr_qp *qp, const struct dr_pkt *pkt)
{
	enum dr_rx_drop why;

	qp->stats.rx_frames++;
	qp->rx_pkt = pkt;
	/* a placed frame passed the check a moment ago, in dr_qp_place,
	 * against this QP in this state (dr_qp_input's contract): once per
	 * frame, not twice */
	why = pkt->payload_placed ? DR_RX_OK : dr_qp_rx_check(qp, pkt);
	if (why != DR_RX_OK)
		dr_qp_drop(qp, why);
	else if (pkt->op->flags & DR_OPF_CNP)
		dr_cc_cnp_input(qp, pkt);
	else if (dr_cc_ce(qp, pkt), pkt->op->flags & DR_OPF_REQ)
		dr_resp_input(qp, pkt);
	else
		dr_comp_input(qp, pkt);
	qp->rx_pkt = NULL;
}
