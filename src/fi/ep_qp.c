// SPDX-License-Identifier: BSD-2-Clause
/*
 * The endpoint as its QP sees it (struct dr_qp_ops): frames out through the
 * port, timers, completions into the bound CQs and counters, the
 * responder's remote-operation events; and frames in from the device's
 * receive dispatch (dr_ep_input).  dev->lock held throughout.
 */
#include <arpa/inet.h>
#include <stdio.h>

#include "dr_fi.h"

/* ---- the engine's view of the outside (struct dr_qp_ops) ---------------- */

static void qp_xmit(void *ctx, struct dr_qp *qp, const void *frame, size_t len)
{
	struct dr_ep *ep = ctx;

	/* a frame the port cannot send is lost; RC retransmission recovers */
	dr_port_send(ep->dev->port, frame, len);
}

/* Frames built straight into the port's buffers. */
static void *qp_frame_alloc(void *ctx, struct dr_qp *qp, size_t len, void **handle)
{
	struct dr_ep *ep = ctx;

	return dr_port_buf_alloc(ep->dev->port, len, (struct dr_port_buf **)handle);
}

static void qp_frame_done(void *ctx, struct dr_qp *qp, void *handle, bool send)
{
	struct dr_ep *ep = ctx;

	if (send)
		dr_port_buf_send(ep->dev->port, handle);
	else
		dr_port_buf_free(handle);
}

/*
 * The port's "done with the payload" callback (dr_port_send_zc), which
 * has nothing to do.  The payload is never droce's to free or recycle: it
 * is the application's posted buffer or registered memory (inline data,
 * in the WQE, is below DR_QP_SPLIT_MIN and copied).  And nothing waits
 * for it: only ports whose device has copied the payload out when the
 * frame leaves (dr_port_zero_copy_sync) get qp_xmit_split, and a frame
 * leaves before the application may touch its payload again -- progress
 * ends its batches under dev->lock, and the batch a post leaves held
 * (dr_ep_post_send) carries that post's own payload, which the
 * application may reuse only on completion, after the peer's ACK of that
 * very frame.
 */
static void zc_done(void *arg) {}

/* Payloads attached, not copied (only on ports whose device has copied
 * them out when the transmit batch ends, dr_port_zero_copy_sync: every
 * engine call runs under dev->lock inside such a batch or sends at once). */
static void qp_xmit_split(void *ctx, struct dr_qp *qp, const void *hdr, size_t hdr_len,
			  const void *payload, size_t payload_len, const void *trailer,
			  size_t trailer_len)
{
	struct dr_ep *ep = ctx;

	dr_port_send_zc(ep->dev->port, hdr, hdr_len, payload, payload_len, trailer, trailer_len,
			zc_done, NULL);
}

static void qp_sent(void *ctx, struct dr_qp *qp, uint32_t unacked)
{
	struct dr_ep *ep = ctx;

	dr_port_tx_early(ep->dev->port, unacked);
}

static uint64_t qp_now(void *ctx)
{
	return dr_port_now_ns();
}

/* Lazily: the retransmit deadline moves later on every ACK, and re-arming
 * an rte_timer each time costs more than the ACK.  The timer stays armed
 * for the earliest deadline asked for; firing early, it finds nothing due
 * and is armed again for the engine's current deadline.  A cancel is left
 * to fire the same way. */
static void qp_timer_set(void *ctx, struct dr_qp *qp, uint64_t deadline_ns)
{
	struct dr_ep *ep = ctx;
	uint64_t now;

	if (!ep->qp_timer || deadline_ns == UINT64_MAX)
		return;
	if (ep->timer_at && ep->timer_at <= deadline_ns && dr_port_timer_pending(ep->qp_timer))
		return;
	now = dr_port_now_ns();
	ep->timer_at = deadline_ns;
	dr_port_timer_arm(ep->qp_timer, deadline_ns > now ? deadline_ns - now : 0);
}

/* On the device's list of QPs to flush at the end of the poll (dev.c
 * dr_dev_flush_acks), if there is something to flush. */
void dr_ep_flush_list(struct dr_ep *ep)
{
	if (!ep->ack_listed && dr_qp_flush_due(ep->qp)) {
		ep->ack_listed = true;
		ep->ack_next = ep->dev->acks;
		ep->dev->acks = ep;
	}
}

static void qp_timer_fire(void *arg)
{
	struct dr_ep *ep = arg;
	uint64_t d;

	ep->timer_at = 0;
	dr_qp_tick(ep->qp);
	dr_ep_flush_list(ep); /* a lazy ACK come due */
	d = dr_qp_deadline_ns(ep->qp);
	if (d != UINT64_MAX)
		qp_timer_set(ep, ep->qp, d);
}

/* fi_cq(3): FI_EIO for a failed transfer, FI_ECANCELED for a flushed one,
 * FI_ETRUNC when a message did not fit; the IB status goes in prov_errno. */
static int wc_err(enum dr_wc_status st)
{
	switch (st) {
	case DR_WC_SUCCESS:
		return 0;
	case DR_WC_WR_FLUSH_ERR:
		return FI_ECANCELED;
	case DR_WC_LOC_LEN_ERR:
		return FI_ETRUNC;
	default:
		return FI_EIO;
	}
}

static void push_err(struct dr_cq *cq, void *context, uint64_t flags, const struct dr_wc *wc)
{
	struct dr_cq_ent e = {
	    .op_context = context,
	    .flags = flags,
	    .err = wc_err(wc->status),
	    .prov_errno = (int)wc->status,
	};

	if (cq)
		dr_cq_push(cq, &e);
}

/* A send-queue WR is done.  Every WR is posted signaled, so this sees them
 * all: a CQ entry when it failed or asked for one (FI_COMPLETION under
 * FI_SELECTIVE_COMPLETION; never for the fi_inject* calls), and its counter
 * either way (fi_cntr(3) counts every completion).  The CQ entry goes
 * first, so a counter waiter finds it there. */
static void tx_complete(struct dr_ep *ep, const struct dr_wc *wc)
{
	const struct dr_tx_op *op = &ep->txq[wc->wr_id & (ep->tx_depth - 1)];
	struct dr_cntr *c = ep->cntr[op->cntr];

	if (wc->status != DR_WC_SUCCESS) {
		/* an fi_inject* has no context to report; its flush after a
		 * shutdown is no news (a failure of its own still is) */
		if (!(op->inject && wc->status == DR_WC_WR_FLUSH_ERR))
			push_err(ep->tx_cq, op->context, op->cq_flags, wc);
		if (c)
			dr_cntr_inc_err(c);
		return;
	}
	if (op->comp && ep->tx_cq) {
		struct dr_cq_ent e = {.op_context = op->context, .flags = op->cq_flags};

		dr_cq_push(ep->tx_cq, &e);
	}
	if (c)
		dr_cntr_inc(c);
}

/*
 * RDMA WRITE with immediate takes a receive WQE at the target (IBA 9.4.3,
 * 9.7.4).  With FI_RX_CQ_DATA the application agreed to that and posts
 * receives for it: its context comes back in the entry.  Without it the QP
 * was created with DR_QP_WRITE_IMM_NO_WQE: the write completes on its own
 * (wc->no_wqe, no context), never takes a receive the SENDs must find in
 * posting order, and never waits for one (no RNR).
 */
static void rx_complete(struct dr_ep *ep, const struct dr_wc *wc)
{
	const struct dr_rx_op *op = wc->no_wqe ? NULL : &ep->rxq[wc->wr_id & (ep->rx_depth - 1)];
	struct dr_cntr *c = ep->cntr[DR_CNTR_RECV];
	struct dr_cq_ent e = {.op_context = op ? op->context : NULL};

	if (wc->opcode == DR_WC_RECV_WRITE_IMM && wc->status == DR_WC_SUCCESS) {
		/* RDMA WRITE with immediate: the data is in place, the entry
		 * carries the immediate.  Always reported, whatever the
		 * receive's FI_COMPLETION: it is the only trace of the data.
		 * Counted by FI_RMA_EVENT's FI_REMOTE_WRITE, not FI_RECV. */
		e.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
		e.len = wc->byte_len;
		e.data = wc->imm;
		if (ep->rx_cq)
			dr_cq_push(ep->rx_cq, &e);
		return;
	}
	if (wc->status != DR_WC_SUCCESS) {
		push_err(ep->rx_cq, e.op_context, FI_RECV | FI_MSG, wc);
		if (c)
			dr_cntr_inc_err(c);
		return;
	}
	if (op->comp && ep->rx_cq) {
		e.flags = FI_RECV | FI_MSG;
		e.len = wc->byte_len;
		if (wc->has_imm) {
			e.flags |= FI_REMOTE_CQ_DATA;
			e.data = wc->imm;
		}
		dr_cq_push(ep->rx_cq, &e);
	}
	if (c)
		dr_cntr_inc(c);
}

/* The first WR of ep that fails because the peer stopped answering: what
 * the QP knows of it, once (the WRs behind it are flushed). */
static void warn_retry_exc(struct dr_ep *ep, struct dr_qp *qp)
{
	const struct dr_qp_stats *s = dr_qp_stats(qp);
	struct dr_qp_attr a;
	char peer[64], who[32];

	dr_qp_query(qp, &a);
	snprintf(who, sizeof(who), "qp 0x%06x", dr_qp_num(qp));
	DR_WARN(FI_LOG_EP_DATA,
		"%s: transport retry counter exceeded: QPN 0x%06x at %s answered neither "
		"a request nor its %u retries (%s; in all %llu frames received from it, %llu "
		"request packets sent, %llu resent, %llu timeouts, %llu spurious)\n",
		who, a.dest_qpn, dr_sa_str(&ep->dst, peer, sizeof(peer)), a.retry_cnt,
		s->rx_frames ? "it answered before: its process stalled, died or lost the QP, or "
			       "the path broke"
			     : "it never answered",
		(unsigned long long)s->rx_frames, (unsigned long long)s->tx_req_pkts,
		(unsigned long long)s->tx_resent_pkts, (unsigned long long)s->timeouts,
		(unsigned long long)s->spurious_timeouts);
	/* answers that came and were refused are no silence */
	dr_rx_drops_log(who, s->rx_drop);
	/* nor are requests that never left this host */
	if (ep->dev->port) {
		struct dr_port_stats ps;

		dr_port_get_stats(ep->dev->port, &ps);
		DR_INFO(FI_LOG_EP_DATA,
			"%s: its port: %llu frames waited for the device, %llu dropped sending, "
			"%llu dropped by the kernel receiving (ring full)\n",
			who, (unsigned long long)ps.tx_backlogged,
			(unsigned long long)ps.tx_dropped, (unsigned long long)ps.rx_ring_drops);
	}
}

static void qp_complete(void *ctx, struct dr_qp *qp, const struct dr_wc *wc)
{
	((struct dr_ep *)ctx)->dev->app_events++;
	if (wc->status == DR_WC_RETRY_EXC_ERR) {
		if (!((struct dr_ep *)ctx)->retry_exc++)
			warn_retry_exc(ctx, qp);
	} else if (wc->status == DR_WC_RNR_RETRY_EXC_ERR)
		((struct dr_ep *)ctx)->rnr_retry_exc++;
	if (wc->opcode == DR_WC_RECV || wc->opcode == DR_WC_RECV_WRITE_IMM)
		rx_complete(ctx, wc);
	else
		tx_complete(ctx, wc);
}

/*
 * FI_RMA_EVENT: the responder reports each request it executed or refused
 * with an error NAK, once (duplicates and out-of-order packets are not
 * reported), after the request's CQ entries.  fi_endpoint(3) classes:
 * writes and base atomics -> FI_REMOTE_WRITE; reads, fetching and compare
 * atomics -> FI_REMOTE_READ.  On the wire fi_atomic(FI_SUM) and
 * fi_fetch_atomic(FI_SUM) are the same FETCH_ADD: a non-zero addend counts
 * as a write, an addend of 0 (FI_ATOMIC_READ) as a read; CMP_SWAP
 * (fi_compare_atomic) as a read.  Without FI_RMA_EVENT no remote counter
 * can be bound (ep_bind_cntr), so nothing is counted.
 */
static void qp_remote_op(void *ctx, struct dr_qp *qp, const struct dr_remote_op *rop)
{
	struct dr_ep *ep = ctx;
	enum dr_ep_cntr which;
	struct dr_cntr *c;

	switch (rop->kind) {
	case DR_REMOTE_WRITE:
		which = DR_CNTR_REMOTE_WRITE;
		/* the application may be polling its memory for it, to
		 * answer: the ACK waits for its next poll (dev_poll) */
		if (rop->status == DR_WC_SUCCESS)
			ep->dev->app_events++;
		break;
	case DR_REMOTE_FETCH_ADD:
		which = rop->compare_add ? DR_CNTR_REMOTE_WRITE : DR_CNTR_REMOTE_READ;
		break;
	default: /* READ, CMP_SWAP */
		which = DR_CNTR_REMOTE_READ;
		break;
	}
	c = ep->cntr[which];
	if (!c)
		return;
	if (rop->status != DR_WC_SUCCESS)
		dr_cntr_inc_err(c);
	else
		dr_cntr_inc(c);
}

static void qp_log(void *ctx, struct dr_qp *qp, const char *msg)
{
	DR_DBG(FI_LOG_EP_DATA, "qp %06x: %s\n", dr_qp_num(qp), msg);
}

/* Retransmissions stopped making progress: the port re-validates the
 * peer's MAC (a peer that moved is followed before the retries run out). */
static void qp_path_suspect(void *ctx, struct dr_qp *qp)
{
	struct dr_ep *ep = ctx;

	if (ep->dev->cfg.ipv6)
		dr_port_neigh_suspect6(ep->dev->port, ep->dst.sin6.sin6_addr.s6_addr);
	else
		dr_port_neigh_suspect(ep->dev->port, ntohl(ep->dst.sin.sin_addr.s_addr));
}

/* Annotations go to the port's capture (FI_DROCE_PCAP), if it has one. */
static bool qp_noting(void *ctx, struct dr_qp *qp)
{
	struct dr_ep *ep = ctx;

	return dr_port_capturing(ep->dev->port);
}

/* The engine's "dropped: <reason>" is on the received frame: its record is
 * marked dropped (epb_flags, epb_dropcount) with the reason. */
static void qp_note(void *ctx, struct dr_qp *qp, const void *frame, size_t len, const char *text)
{
	static const char dropped[] = "dropped: ";
	struct dr_ep *ep = ctx;

	if (!strncmp(text, dropped, sizeof(dropped) - 1))
		dr_port_capture_drop(ep->dev->port, "%s", text + sizeof(dropped) - 1);
	else
		dr_port_capture_note(ep->dev->port, frame, len, "%s", text);
}

static const struct dr_qp_ops ep_qp_ops = {
    .xmit = qp_xmit,
    .frame_alloc = qp_frame_alloc,
    .frame_done = qp_frame_done,
    .sent = qp_sent,
    .now_ns = qp_now,
    .timer_set = qp_timer_set,
    .complete = qp_complete,
    .remote_op = qp_remote_op,
    .log = qp_log,
    .path_suspect = qp_path_suspect,
    .noting = qp_noting,
    .note = qp_note,
};

void dr_ep_qp_ops_init(struct dr_ep *ep)
{
	ep->qp_ops = ep_qp_ops;
	/* payloads attached, not copied, on ports that allow it */
	if (dr_port_zero_copy_sync(ep->dev->port))
		ep->qp_ops.xmit_split = qp_xmit_split;
}

struct dr_port_timer *dr_ep_qp_timer_new(struct dr_ep *ep)
{
	return dr_port_timer_new(ep->dev->port, qp_timer_fire, ep);
}

void dr_ep_input(struct dr_ep *ep, const struct dr_pkt *pkt)
{
	/* only a frame that passes the QP's checks (the peer's address, the
	 * P_Key: dr_qp_rx_check) speaks for the peer; dr_qp_input drops and
	 * counts the others */
	if ((ep->state == DR_EP_ACCEPTING || ep->draining) &&
	    (pkt->payload_placed || dr_qp_rx_check(ep->qp, pkt) == DR_RX_OK))
		dr_ep_peer_heard(ep);
	dr_qp_input(ep->qp, pkt);
	dr_ep_flush_list(ep);
}

/* Its held ACK goes now; off the device's list (dev->lock held). */
void dr_ep_flush_ack(struct dr_ep *ep)
{
	struct dr_ep **pp;

	if (ep->ack_listed) {
		for (pp = &ep->dev->acks; *pp; pp = &(*pp)->ack_next)
			if (*pp == ep) {
				*pp = ep->ack_next;
				break;
			}
		ep->ack_listed = false;
		dr_qp_flush(ep->qp);
	}
	dr_qp_flush_ack(ep->qp); /* a lazy one too */
}
