// SPDX-License-Identifier: BSD-2-Clause
/*
 * FI_EP_MSG endpoints: one RC QP of the engine each, connected with the IB
 * CM (rdma_cm's conventions), fed by the device's receive dispatch.
 *
 * Connection, as rdma_cm runs it (ROCE-REFERENCE.md C.6):
 *   active:  fi_connect -> REQ; REP -> QP to RTR/RTS, RTU, FI_CONNECTED
 *   passive: FI_CONNREQ; fi_accept -> QP to RTR/RTS, REP; RTU (or the
 *            first data packet) -> FI_CONNECTED
 *   either:  fi_shutdown -> DREQ, QP to ERROR (flush); DREQ/DREP -> FI_SHUTDOWN
 *
 * Data transfer: messages here; RMA in rma.c and atomics in atomic.c, all
 * posted through dr_ep_post_send.  Completions of every kind come back
 * through qp_complete, which applies FI_SELECTIVE_COMPLETION and bumps the
 * bound counters; the responder's events come back through qp_remote_op,
 * which feeds the FI_RMA_EVENT counters.  Only dr_qp.h's public calls are
 * used on the QP: the engine's fields are its own.
 *
 * Every call that touches the QP, the CM or the port holds dev->lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "dr_fi.h"

/* RDMA READ/atomic depths droce offers and asks for (IRD/ORD); rxe's
 * device limit is 128, rdma_cm's default 1, the verbs provider asks 16. */
#define DR_IRD 16
#define DR_ORD 16
/* Target ACK delay we announce in REPs: 4.096 us * 2^11 = 8.4 ms, what
 * droce's device thread guarantees when the application does not poll (it
 * polls at least every 5 ms); rxe announces 15 (134 ms). */
#define DR_ACK_DELAY 11

static struct dr_ep *ep_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_ep, ep.fid);
}

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

static void zc_done(void *arg)
{
}

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

static void qp_timer_fire(void *arg)
{
	struct dr_ep *ep = arg;
	uint64_t d;

	ep->timer_at = 0;
	dr_qp_tick(ep->qp);
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
		struct dr_cq_ent e = { .op_context = op->context, .flags = op->cq_flags };

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
	struct dr_cq_ent e = { .op_context = op ? op->context : NULL };

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

static void qp_complete(void *ctx, struct dr_qp *qp, const struct dr_wc *wc)
{
	((struct dr_ep *)ctx)->dev->completions++;
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

static const struct dr_qp_ops ep_qp_ops = {
	.xmit = qp_xmit,
	.frame_alloc = qp_frame_alloc,
	.frame_done = qp_frame_done,
	.now_ns = qp_now,
	.timer_set = qp_timer_set,
	.complete = qp_complete,
	.remote_op = qp_remote_op,
	.log = qp_log,
	.path_suspect = qp_path_suspect,
};


/* ---- connection ---------------------------------------------------------- */

/* Bring the QP to RTS with what the CM exchange settled (IBA 12.7.8 and
 * rdma_cm's cma_modify_qp_rtr/rts).  pmtu: the REQ's path MTU. */
static int qp_go_rts(struct dr_ep *ep, const struct dr_cm_peer *peer, uint32_t flow_label,
		     uint32_t pmtu, uint8_t retry_cnt, bool active)
{
	const struct dr_settings *s = dr_settings_get();
	struct dr_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.state = DR_QPS_RTR;
	a.dest_qpn = peer->qpn;
	/* each side announces the PSN it will receive from: ours in the
	 * REQ/REP we sent, the peer's in what it sent (the Linux CM; the rxe
	 * captures in tests/golden show it: rping's client sends from the
	 * REP's Starting PSN, its server from the REQ's) */
	a.rq_psn = ep->start_psn;
	a.path_mtu = pmtu;
	a.min_rnr_timer = (uint8_t)s->min_rnr_timer;
	a.max_dest_rd_atomic = DR_IRD;
	memcpy(a.path.src_mac, ep->dev->mac, 6);
	a.path.src_ip4 = ep->dev->cfg.ip4;
	a.path.dst_ip4 = peer->ip4;
	a.path.ipv6 = ep->dev->cfg.ipv6;
	if (a.path.ipv6) {
		memcpy(a.path.src_ip6, ep->dev->cfg.ip6, 16);
		memcpy(a.path.dst_ip6, peer->gid, 16);
	}
	a.path.ttl = 64;
	/* both sides derive the same UDP source port from the REQ's flow
	 * label, as rxe does (A.3) */
	a.path.sport = dr_udp_sport(flow_label, dr_qp_num(ep->qp), peer->qpn);
	ret = dr_qp_modify(ep->qp, &a,
			   DR_QP_ATTR_STATE | DR_QP_ATTR_DEST_QPN | DR_QP_ATTR_RQ_PSN |
				   DR_QP_ATTR_PATH_MTU | DR_QP_ATTR_MIN_RNR_TIMER |
				   DR_QP_ATTR_MAX_DEST_RD_ATOMIC | DR_QP_ATTR_PATH);
	if (ret)
		return ret;
	a.state = DR_QPS_RTS;
	a.sq_psn = peer->start_psn;
	/* the ACK timeout: ours, or longer if the peer says it needs it --
	 * the passive side takes the REQ's Local ACK Timeout, the active side
	 * the REP's Target ACK Delay plus one (IBA 12.7.34, cm.c
	 * cm_ack_timeout); rxe asks for 19 (2.1 s) */
	a.timeout = (uint8_t)s->timeout;
	if (peer->ack_timeout + (active ? 1 : 0) > a.timeout)
		a.timeout = (uint8_t)(peer->ack_timeout + (active ? 1 : 0));
	if (a.timeout > 31)
		a.timeout = 31;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = peer->rnr_retry_count;
	a.max_rd_atomic = peer->responder_resources < DR_ORD ? peer->responder_resources : DR_ORD;
	return dr_qp_modify(ep->qp, &a,
			    DR_QP_ATTR_STATE | DR_QP_ATTR_SQ_PSN | DR_QP_ATTR_TIMEOUT |
				    DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_RNR_RETRY |
				    DR_QP_ATTR_MAX_RD_ATOMIC);
}

static void qp_to_error(struct dr_ep *ep)
{
	struct dr_qp_attr a = { .state = DR_QPS_ERROR };
	enum dr_qp_state st = dr_qp_state(ep->qp);

	if (st != DR_QPS_ERROR && st != DR_QPS_RESET)
		dr_qp_modify(ep->qp, &a, DR_QP_ATTR_STATE);
}

/* CM data travels behind a one-byte length (DR_CM_DATA_SIZE). */
static size_t cm_data_of(const uint8_t *priv, size_t priv_len, const uint8_t **data)
{
	size_t len;

	if (!priv || !priv_len)
		return 0;
	len = priv[0];
	if (len > DR_CM_DATA_SIZE || len > priv_len - 1)
		return 0; /* not a libfabric peer */
	*data = priv + 1;
	return len;
}

static void push_connected(struct dr_ep *ep, const uint8_t *priv, size_t priv_len)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[DR_CM_DATA_SIZE];
	} ent;
	const uint8_t *data = NULL;
	size_t len = cm_data_of(priv, priv_len, &data);

	memset(&ent, 0, sizeof(ent));
	ent.e.fid = &ep->ep.fid;
	if (len)
		memcpy(ent.data, data, len);
	if (ep->eq)
		dr_eq_push(ep->eq, FI_CONNECTED, &ent, sizeof(ent.e) + len);
}

static void push_error(struct dr_ep *ep, int err, int prov_errno, const uint8_t *priv,
		       size_t priv_len)
{
	const uint8_t *data = NULL;
	size_t len = cm_data_of(priv, priv_len, &data);

	if (ep->eq)
		dr_eq_push_err(ep->eq, &ep->ep.fid, ep->ep.fid.context, 0, err, prov_errno, data,
			       len);
}

void dr_ep_cm_event(struct dr_ep *ep, const struct dr_cm_event *ev)
{
	char abuf[INET6_ADDRSTRLEN];
	struct fi_eq_cm_entry shut;
	int ret;

	switch (ev->type) {
	case DR_CM_EV_ESTABLISHED:
		if (ep->state == DR_EP_CONNECTING) {
			uint32_t fl =
			    ((uint32_t)dr_sa_port(&ep->src) * 31 + dr_sa_port(&ep->dst)) & 0xfffff;

			ret = qp_go_rts(ep, ev->peer, fl, ep->dev->pmtu,
					(uint8_t)dr_settings_get()->retry_cnt, true);
			if (ret) {
				DR_WARN(FI_LOG_EP_CTRL, "QP %06x: cannot go to RTS (%d)\n",
					dr_qp_num(ep->qp), ret);
				ep->state = DR_EP_ERROR;
				dr_cm_disconnect(ev->id);
				push_error(ep, FI_EIO, 0, NULL, 0);
				return;
			}
		} else if (ep->state != DR_EP_ACCEPTING) {
			return;
		}
		ep->state = DR_EP_CONNECTED;
		push_connected(ep, ev->private_data, ev->private_len);
		break;
	case DR_CM_EV_REJECTED:
		ep->state = DR_EP_ERROR;
		DR_INFO(FI_LOG_EP_CTRL, "connection rejected, reason %u\n", ev->rej_reason);
		/* the application's data only comes with its own reject */
		push_error(ep, FI_ECONNREFUSED, ev->rej_reason,
			   ev->rej_reason == DR_CM_REJ_CONSUMER_DEFINED ? ev->private_data : NULL,
			   ev->private_len);
		break;
	case DR_CM_EV_UNREACHABLE:
		ep->state = DR_EP_ERROR;
		qp_to_error(ep);
		DR_WARN(FI_LOG_EP_CTRL, "peer %s: %s\n", dr_sa_str(&ep->dst, abuf, sizeof(abuf)),
			ev->err == -EHOSTUNREACH
			    ? (ep->dev->cfg.ipv6 ? "unreachable (no ND answer)"
						 : "unreachable (no ARP answer)")
			    : "no answer to the connection manager");
		push_error(ep, ev->err == -EHOSTUNREACH ? FI_EHOSTUNREACH : FI_ETIMEDOUT, 0, NULL,
			   0);
		break;
	case DR_CM_EV_DISCONNECTED:
		if (ep->draining)
			ep->drain_until_ns = 0; /* the peer is done too: no wait */
		ep->state = DR_EP_SHUTDOWN;
		qp_to_error(ep);
		memset(&shut, 0, sizeof(shut));
		shut.fid = &ep->ep.fid;
		if (ep->eq)
			dr_eq_push(ep->eq, FI_SHUTDOWN, &shut, sizeof(shut));
		break;
	default:
		break;
	}
}

/* ---- receive path ----------------------------------------------------------- */

/*
 * Graceful disconnect.  The CM's DREQ travels outside the QP's sequence,
 * so a DREQ sent at once can overtake the peer's retransmission of a
 * message whose ACK was lost: the peer then flushes a send that was in
 * fact delivered, and our closed QP never ACKs it again.  So fi_shutdown
 * and fi_close of a connected endpoint keep the QP answering (duplicates
 * are re-ACKed, our own unacknowledged sends retransmitted) until the peer
 * has been quiet for a few retransmit timeouts, and only then send the
 * DREQ, as TCP's FIN follows the data.  Closed endpoints finish this in
 * the background (the device's thread); closing the domain waits for them,
 * bounded.
 */
#define DR_DRAIN_MIN_NS 100000000ull  /* 100 ms */
#define DR_DRAIN_MAX_NS 1000000000ull /* 1 s */

static uint64_t drain_quiet_ns(const struct dr_ep *ep)
{
	uint64_t t = 4 * dr_qp_timeout_ns((unsigned)dr_settings_get()->timeout);

	return t < DR_DRAIN_MIN_NS ? DR_DRAIN_MIN_NS : t > DR_DRAIN_MAX_NS ? DR_DRAIN_MAX_NS : t;
}

static void drain_start(struct dr_ep *ep)
{
	ep->draining = true;
	ep->drain_until_ns = dr_port_now_ns() + drain_quiet_ns(ep);
	ep->drain_next = ep->dev->draining;
	ep->dev->draining = ep;
}

static void ep_free(struct dr_ep *ep);

unsigned dr_ep_drain(struct dr_dev *dev, bool all)
{
	uint64_t now = dr_port_now_ns();
	struct dr_ep **pp = &dev->draining;
	unsigned left = 0;

	while (*pp) {
		struct dr_ep *ep = *pp;

		if (!all && now < ep->drain_until_ns) {
			pp = &ep->drain_next;
			left++;
			continue;
		}
		*pp = ep->drain_next;
		ep->draining = false;
		if (ep->orphan) {
			/* release sends the DREQ */
			dr_cm_set_ctx(ep->cm_id, NULL);
			dr_cm_release(ep->cm_id);
			ep->cm_id = NULL;
			ep_free(ep);
		} else {
			dr_cm_disconnect(ep->cm_id);
			qp_to_error(ep);
		}
	}
	return left;
}

void dr_ep_input(struct dr_ep *ep, const struct dr_pkt *pkt)
{
	/* only a frame that passes the QP's checks (the peer's address, the
	 * P_Key: dr_qp_rx_check) speaks for the peer; dr_qp_input drops and
	 * counts the others */
	if ((ep->state == DR_EP_ACCEPTING || ep->draining) &&
	    dr_qp_rx_check(ep->qp, pkt) == DR_RX_OK) {
		/* IBA 12.9.6: data before the RTU establishes the connection */
		if (ep->state == DR_EP_ACCEPTING)
			dr_cm_established(ep->cm_id);
		if (ep->draining)
			ep->drain_until_ns = dr_port_now_ns() + drain_quiet_ns(ep);
	}
	dr_qp_input(ep->qp, pkt);
	if (!ep->ack_listed && dr_qp_ack_due(ep->qp)) {
		ep->ack_listed = true;
		ep->ack_next = ep->dev->acks;
		ep->dev->acks = ep;
	}
}

/* Its held ACK goes now; off the device's list (dev->lock held). */
static void dr_ep_flush_ack(struct dr_ep *ep)
{
	struct dr_ep **pp;

	if (!ep->ack_listed)
		return;
	for (pp = &ep->dev->acks; *pp; pp = &(*pp)->ack_next)
		if (*pp == ep) {
			*pp = ep->ack_next;
			break;
		}
	ep->ack_listed = false;
	dr_qp_flush(ep->qp);
}

static int ep_enable_locked(struct dr_ep *ep)
{
	struct dr_qp_attr a = { .state = DR_QPS_INIT };
	int ret;

	if (ep->enabled)
		return 0;
	if (!ep->eq) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_enable: bind an EQ first\n");
		return -FI_ENOEQ;
	}
	if (!ep->tx_cq || !ep->rx_cq) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_enable: bind a CQ for FI_TRANSMIT and FI_RECV first\n");
		return -FI_ENOCQ;
	}
	ret = dr_qp_modify(ep->qp, &a, DR_QP_ATTR_STATE);
	if (ret)
		return -FI_EINVAL;
	ep->enabled = true;
	return 0;
}

/* An ephemeral source port, unique among the processes on the interface
 * (dr_dev_port_alloc); released when the endpoint goes.  dev->lock held. */
static int ep_connect_port(struct dr_ep *ep)
{
	uint16_t port;
	int ret = dr_dev_port_alloc(ep->dev, &port);

	if (ret)
		return ret;
	dr_sa_set_port(&ep->src, port);
	ep->src_port_claimed = true;
	return 0;
}

static int ep_connect(struct fid_ep *fep, const void *addr, const void *param, size_t paramlen)
{
	struct dr_ep *ep = dr_ep_of(fep);
	const struct dr_settings *s = dr_settings_get();
	struct dr_dev *dev = ep->dev;
	struct dr_cm_conn_param cp;
	uint8_t priv[1 + DR_CM_DATA_SIZE];
	char abuf[INET6_ADDRSTRLEN];
	union dr_sockaddr sa;
	int ret;

	/* libfabric's fi_connect has no address length: the family says it */
	if (!addr || !dr_sa_take(addr, sizeof(sa), &dev->cfg, &sa) || !dr_sa_port(&sa)) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_connect: need an %s address with a port\n",
			dev->cfg.ipv6 ? "AF_INET6" : "AF_INET");
		return -FI_EINVAL;
	}
	if (paramlen > DR_CM_DATA_SIZE || (paramlen && !param)) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_connect: at most %d bytes of CM data\n",
			DR_CM_DATA_SIZE);
		return -FI_EINVAL;
	}
	dr_dev_lock(dev);
	ret = ep_enable_locked(ep);
	if (ret)
		goto out_unlock;
	if (ep->state != DR_EP_IDLE || ep->connreq) {
		ret = -FI_EOPBADSTATE;
		goto out_unlock;
	}
	ep->dst = sa;
	if (!dr_sa_port(&ep->src)) {
		ret = ep_connect_port(ep);
		if (ret)
			goto out_unlock;
	}
	priv[0] = (uint8_t)paramlen;
	if (paramlen)
		memcpy(priv + 1, param, paramlen);
	memset(&cp, 0, sizeof(cp));
	cp.qpn = dr_qp_num(ep->qp);
	cp.start_psn = ep->start_psn;
	cp.responder_resources = DR_IRD;
	cp.initiator_depth = DR_ORD;
	cp.retry_count = (uint8_t)s->retry_cnt;
	cp.rnr_retry_count = (uint8_t)s->rnr_retry;
	cp.path_mtu = dr_ib_mtu_enum(dev->pmtu);
	cp.ack_timeout = (uint8_t)s->timeout;
	cp.private_data = priv;
	cp.private_len = 1 + paramlen;
	if (dev->cfg.ipv6)
		ret = dr_cm_connect6(&dev->cm, sa.sin6.sin6_addr.s6_addr, dr_sa_port(&sa),
				     dr_sa_port(&ep->src), &cp, ep, &ep->cm_id);
	else
		ret = dr_cm_connect(&dev->cm, ntohl(sa.sin.sin_addr.s_addr), dr_sa_port(&sa),
				    dr_sa_port(&ep->src), &cp, ep, &ep->cm_id);
	if (ret) {
		/* the REQ could not leave: no route (off-link, no gateway) or
		 * ARP already knows the peer does not answer */
		if (ret == -ENETUNREACH || ret == -EHOSTUNREACH)
			DR_WARN(FI_LOG_EP_CTRL, "fi_connect: %s is %s from %s/%u\n",
				dr_sa_str(&sa, abuf, sizeof(abuf)),
				ret == -ENETUNREACH ? "not on the subnet (no gateway)"
				: dev->cfg.ipv6	    ? "not answering neighbour solicitations"
						    : "not answering ARP",
				dev->cfg.name, dev->cfg.prefix);
		ret = ret == -ENOMEM ? -FI_ENOMEM : ret; /* FI_E* are errno values */
		goto out_unlock;
	}
	ep->state = DR_EP_CONNECTING;
out_unlock:
	dr_dev_unlock(dev);
	return ret;
}

static int ep_accept(struct fid_ep *fep, const void *param, size_t paramlen)
{
	struct dr_ep *ep = dr_ep_of(fep);
	const struct dr_settings *s = dr_settings_get();
	struct dr_dev *dev = ep->dev;
	const struct dr_cm_peer *peer;
	struct dr_cm_conn_param cp;
	uint8_t priv[1 + DR_CM_DATA_SIZE];
	uint32_t pmtu;
	int ret;

	if (paramlen > DR_CM_DATA_SIZE || (paramlen && !param)) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_accept: at most %d bytes of CM data\n",
			DR_CM_DATA_SIZE);
		return -FI_EINVAL;
	}
	dr_dev_lock(dev);
	if (!ep->connreq || ep->state != DR_EP_IDLE) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_accept: the endpoint was not made from an FI_CONNREQ\n");
		ret = -FI_EOPBADSTATE;
		goto out_unlock;
	}
	if (!ep->connreq->id) {
		/* the request timed out unanswered, or the peer withdrew it */
		DR_INFO(FI_LOG_EP_CTRL, "fi_accept: the connection request is gone (%s)\n",
			fi_strerror(-ep->connreq->err));
		ret = ep->connreq->err;
		goto out_unlock;
	}
	ret = ep_enable_locked(ep);
	if (ret)
		goto out_unlock;
	peer = &ep->connreq->id->peer;
	pmtu = dr_ib_mtu_bytes(peer->path_mtu);
	if (!pmtu || pmtu > dev->pmtu) {
		/* both sides must segment at the REQ's path MTU (B.9) */
		DR_WARN(FI_LOG_EP_CTRL, "fi_accept: peer's path MTU %u exceeds ours (%u): raise FI_DROCE_MTU\n",
			pmtu, dev->pmtu);
		ret = -FI_EINVAL;
		goto out_unlock;
	}
	dr_sa_from_gid(&ep->dst, &dev->cfg, peer->gid, peer->port);
	dr_sa_set_port(&ep->src, peer->dst_port);
	ret = qp_go_rts(ep, peer, peer->flow_label, pmtu, peer->retry_count, false);
	if (ret) {
		ret = -FI_EINVAL;
		goto out_unlock;
	}
	priv[0] = (uint8_t)paramlen;
	if (paramlen)
		memcpy(priv + 1, param, paramlen);
	memset(&cp, 0, sizeof(cp));
	cp.qpn = dr_qp_num(ep->qp);
	cp.start_psn = ep->start_psn;
	/* the passive side swaps the REQ's depths (cm.c cm_req_handler) */
	cp.responder_resources = peer->initiator_depth < DR_IRD ? peer->initiator_depth : DR_IRD;
	cp.initiator_depth = peer->responder_resources < DR_ORD ? peer->responder_resources : DR_ORD;
	cp.rnr_retry_count = (uint8_t)s->rnr_retry;
	cp.ack_timeout = DR_ACK_DELAY;
	cp.private_data = priv;
	cp.private_len = 1 + paramlen;
	ep->cm_id = ep->connreq->id;
	dr_cm_set_ctx(ep->cm_id, ep);
	ret = dr_cm_accept(ep->cm_id, &cp);
	if (ret) {
		/* still the request's: CONNREQ_GONE must find it */
		dr_cm_set_ctx(ep->cm_id, ep->connreq);
		ep->cm_id = NULL;
		qp_to_error(ep);
		ret = -FI_EOPBADSTATE;
		goto out_unlock;
	}
	dr_connreq_free(ep->connreq);
	ep->connreq = NULL;
	ep->state = DR_EP_ACCEPTING;
out_unlock:
	dr_dev_unlock(dev);
	return ret;
}

static int ep_shutdown(struct fid_ep *fep, uint64_t flags)
{
	struct dr_ep *ep = dr_ep_of(fep);

	if (flags)
		return -FI_EINVAL;
	dr_dev_lock(ep->dev);
	if ((ep->state == DR_EP_CONNECTED || ep->state == DR_EP_ACCEPTING) && !ep->draining) {
		ep->state = DR_EP_SHUTDOWN; /* no new work from here on */
		drain_start(ep);
	}
	dr_dev_unlock(ep->dev);
	return 0;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct dr_ep *ep = ep_of_fid(fid);
	union dr_sockaddr sa;

	if (!dr_sa_take(addr, addrlen, &ep->dev->cfg, &sa))
		return -FI_EINVAL;
	if (ep->state != DR_EP_IDLE)
		return -FI_EOPBADSTATE;
	if (!dr_sa_is_local(&sa, &ep->dev->cfg))
		return -FI_EADDRNOTAVAIL;
	dr_sa_set_port(&ep->src, dr_sa_port(&sa));
	return 0;
}

int dr_copy_addr(const union dr_sockaddr *sa, void *addr, size_t *addrlen)
{
	size_t len = *addrlen, n = dr_sa_len(sa);

	*addrlen = n;
	if (len < n)
		return -FI_ETOOSMALL;
	memcpy(addr, sa, n);
	return 0;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return dr_copy_addr(&ep_of_fid(fid)->src, addr, addrlen);
}

static int ep_getpeer(struct fid_ep *fep, void *addr, size_t *addrlen)
{
	struct dr_ep *ep = dr_ep_of(fep);

	if (!ep->dst.sa.sa_family)
		return -FI_ENOTCONN;
	return dr_copy_addr(&ep->dst, addr, addrlen);
}

static int ep_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int ep_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int ep_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		      void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = ep_no_listen,
	.accept = ep_accept,
	.reject = ep_no_reject,
	.shutdown = ep_shutdown,
	.join = ep_no_join,
};

/* ---- data transfer ------------------------------------------------------- */

static ssize_t post_errno(int ret)
{
	switch (ret) {
	case 0:
		return 0;
	case -ENOMEM:
		return -FI_EAGAIN; /* queue full: read the CQ, then retry */
	default:
		return -FI_EINVAL;
	}
}

int dr_ep_sge_of_iov(const struct iovec *iov, size_t count, struct dr_sge *sge, uint64_t *len)
{
	uint64_t total = 0;

	if (count > DR_MAX_IOV || (count && !iov)) {
		DR_WARN(FI_LOG_EP_DATA, "%zu iov entries: iov_limit is %d\n", count, DR_MAX_IOV);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len > UINT32_MAX) {
			DR_WARN(FI_LOG_EP_DATA, "iov entry of %zu bytes: at most 4 GiB - 1\n",
				iov[i].iov_len);
			return -FI_EMSGSIZE;
		}
		sge[i].addr = (uintptr_t)iov[i].iov_base;
		sge[i].length = (uint32_t)iov[i].iov_len;
		sge[i].lkey = DR_LKEY_NONE; /* no FI_MR_LOCAL: any local memory */
		total += iov[i].iov_len;
	}
	if (total > DR_MAX_MSG_SIZE) {
		DR_WARN(FI_LOG_EP_DATA, "%llu bytes: max_msg_size is %llu\n",
			(unsigned long long)total, (unsigned long long)DR_MAX_MSG_SIZE);
		return -FI_EMSGSIZE;
	}
	*len = total;
	return 0;
}

static bool wr_carries_data(enum dr_wr_opcode op)
{
	return op == DR_WR_SEND || op == DR_WR_SEND_IMM || op == DR_WR_WRITE ||
	       op == DR_WR_WRITE_IMM;
}

/*
 * Completion levels: the engine completes a SEND or WRITE when the peer's
 * ACK covers it, a READ or atomic when its response is in place.  An ACK
 * means the responder executed the request (IBA 9.7.5.1), so completion
 * then satisfies FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE and
 * FI_DELIVERY_COMPLETE alike; FI_INJECT copies the data at post time.
 * FI_FENCE is the IB fence (IBA 10.8.3.3): the WR waits for every earlier
 * READ and atomic to complete; RC already executes earlier SENDs and WRITEs
 * first, so later operations see the results of all earlier ones.
 */
ssize_t dr_ep_post_send(struct dr_ep *ep, struct dr_send_wr *wr, const struct dr_tx_op *op,
			uint64_t flags)
{
	ssize_t ret;

	wr->flags = DR_WR_SIGNALED; /* always: counters count every WR */
	if (flags & FI_FENCE)
		wr->flags |= DR_WR_FENCE;
	if ((flags & FI_INJECT) && wr_carries_data(wr->opcode)) {
		uint64_t len = 0;

		for (unsigned i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > DR_MAX_INLINE) {
			DR_WARN(FI_LOG_EP_DATA, "FI_INJECT of %llu bytes: inject_size is %d\n",
				(unsigned long long)len, DR_MAX_INLINE);
			return -FI_EMSGSIZE;
		}
		wr->flags |= DR_WR_INLINE;
	}

	dr_dev_lock(ep->dev);
	dr_port_batch_begin(ep->dev->port);
	if (ep->state != DR_EP_CONNECTED && ep->state != DR_EP_ACCEPTING) {
		DR_WARN(FI_LOG_EP_DATA, "%s: the endpoint is not connected\n",
			dr_wr_opcode_names[wr->opcode]);
		ret = -FI_EOPBADSTATE;
	} else if (!dr_qp_sq_free(ep->qp)) {
		ret = -FI_EAGAIN; /* before its txq slot is overwritten */
	} else {
		/* the slot is filled first: in ERROR the post completes at once */
		wr->wr_id = ep->tx_posted;
		ep->txq[ep->tx_posted & (ep->tx_depth - 1)] = *op;
		ret = post_errno(dr_qp_post_send(ep->qp, wr));
		if (!ret)
			ep->tx_posted++;
	}
	/* the request leaves with the next post's or first thing at the next
	 * poll (dev_poll), ahead of the ACKs held since the last poll: they
	 * stay off the path of an answer */
	dr_port_batch_hold(ep->dev->port);
	dr_dev_unlock(ep->dev);
	if (ret == -FI_EAGAIN)
		dr_dev_progress(ep->dev);
	return ret;
}

static ssize_t ep_post_send(struct dr_ep *ep, const struct iovec *iov, size_t count,
			    void *context, uint64_t data, uint64_t flags, bool inject_call)
{
	struct dr_sge sge[DR_MAX_IOV];
	struct dr_send_wr wr;
	struct dr_tx_op op = {
		.context = context,
		.cq_flags = FI_SEND | FI_MSG,
		.cntr = DR_CNTR_SEND,
		.comp = !inject_call && dr_ep_tx_comp(ep, flags),
		.inject = inject_call,
	};
	uint64_t len;
	int ret;

	ret = dr_ep_sge_of_iov(iov, count, sge, &len);
	if (ret)
		return ret;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = (flags & FI_REMOTE_CQ_DATA) ? DR_WR_SEND_IMM : DR_WR_SEND;
	wr.imm = (uint32_t)data; /* cq_data_size 4 */
	wr.sg_list = sge;
	wr.num_sge = (unsigned)count;
	return dr_ep_post_send(ep, &wr, &op, flags);
}

/* A receive completes on the CQ unless the CQ was bound with
 * FI_SELECTIVE_COMPLETION and the receive lacks FI_COMPLETION; errors
 * always complete. */
static ssize_t ep_post_recv(struct dr_ep *ep, const struct iovec *iov, size_t count,
			    void *context, uint64_t flags)
{
	struct dr_sge sge[DR_MAX_IOV];
	struct dr_recv_wr wr;
	uint64_t len;
	ssize_t ret;

	ret = dr_ep_sge_of_iov(iov, count, sge, &len);
	if (ret)
		return ret;
	wr.sg_list = sge;
	wr.num_sge = (unsigned)count;
	dr_dev_lock(ep->dev);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
	} else if (!dr_qp_rq_free(ep->qp)) {
		ret = -FI_EAGAIN;
	} else {
		wr.wr_id = ep->rx_posted;
		ep->rxq[ep->rx_posted & (ep->rx_depth - 1)] = (struct dr_rx_op){
			.context = context,
			.comp = !ep->rx_selective || (flags & FI_COMPLETION),
		};
		ret = post_errno(dr_qp_post_recv(ep->qp, &wr));
		if (!ret)
			ep->rx_posted++;
	}
	dr_dev_unlock(ep->dev);
	if (ret == -FI_EAGAIN)
		dr_dev_progress(ep->dev);
	return ret;
}

static ssize_t ep_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
		       void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return ep_post_recv(ep, &iov, 1, context, ep->rx_op_flags);
}

static ssize_t ep_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t src, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);

	return ep_post_recv(ep, iov, count, context, ep->rx_op_flags);
}

static ssize_t ep_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(FI_COMPLETION | FI_MORE)) {
		/* no FI_MULTI_RECV, no FI_CLAIM/FI_PEEK */
		DR_WARN(FI_LOG_EP_DATA, "fi_recvmsg: flags 0x%llx not supported\n",
			(unsigned long long)(flags & ~(FI_COMPLETION | FI_MORE)));
		return -FI_EBADFLAGS;
	}
	return ep_post_recv(dr_ep_of(fep), msg->msg_iov, msg->iov_count, msg->context, flags);
}

static ssize_t ep_send(struct fid_ep *fep, const void *buf, size_t len, void *desc,
		       fi_addr_t dest, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_post_send(ep, &iov, 1, context, 0, ep->tx_op_flags, false);
}

static ssize_t ep_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dest, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);

	return ep_post_send(ep, iov, count, context, 0, ep->tx_op_flags, false);
}

static ssize_t ep_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~DR_SENDMSG_FLAGS) {
		DR_WARN(FI_LOG_EP_DATA, "fi_sendmsg: flags 0x%llx not supported\n",
			(unsigned long long)(flags & ~DR_SENDMSG_FLAGS));
		return -FI_EBADFLAGS;
	}
	return ep_post_send(dr_ep_of(fep), msg->msg_iov, msg->iov_count, msg->context, msg->data,
			    flags, false);
}

/* fi_inject and fi_injectdata never complete on the CQ (errors aside). */
static ssize_t ep_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_post_send(dr_ep_of(fep), &iov, 1, NULL, 0, FI_INJECT, true);
}

static ssize_t ep_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			   uint64_t data, fi_addr_t dest, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_post_send(ep, &iov, 1, context, data, ep->tx_op_flags | FI_REMOTE_CQ_DATA,
			    false);
}

static ssize_t ep_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			     fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_post_send(dr_ep_of(fep), &iov, 1, NULL, data, FI_INJECT | FI_REMOTE_CQ_DATA,
			    true);
}

static struct fi_ops_msg ep_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = ep_recv,
	.recvv = ep_recvv,
	.recvmsg = ep_recvmsg,
	.send = ep_send,
	.sendv = ep_sendv,
	.sendmsg = ep_sendmsg,
	.inject = ep_inject,
	.senddata = ep_senddata,
	.injectdata = ep_injectdata,
};

/* ---- fid and ep ops -------------------------------------------------------- */

/* Everything but the QP's connection: under dev->lock, the QP no longer
 * reachable by the application. */
static void ep_free(struct dr_ep *ep)
{
	struct dr_dev *dev = ep->dev;
	char who[32];

	if (ep->connreq) {
		if (ep->connreq->id) {
			dr_cm_set_ctx(ep->connreq->id, NULL);
			dr_cm_reject(ep->connreq->id, NULL, 0);
			dr_cm_release(ep->connreq->id);
		}
		dr_connreq_free(ep->connreq);
	}
	if (dr_idmap_find(&dev->qps, dr_qp_num(ep->qp)) == ep)
		dr_dev_qpn_free(dev, dr_qp_num(ep->qp));
	if (ep->src_port_claimed)
		dr_dev_port_free(dev, dr_sa_port(&ep->src));
	snprintf(who, sizeof(who), "qp 0x%06x", dr_qp_num(ep->qp));
	dr_rx_drops_log(who, dr_qp_stats(ep->qp)->rx_drop);
	dr_ep_flush_ack(ep);
	dr_qp_destroy(ep->qp);
	if (ep->qp_timer)
		dr_port_timer_free(ep->qp_timer);
	fi_freeinfo(ep->info);
	free(ep->txq);
	free(ep->rxq);
	free(ep);
}

/* Let go of the objects the application bound. */
static void ep_unbind_all(struct dr_ep *ep)
{
	if (ep->eq)
		__atomic_sub_fetch(&ep->eq->ref, 1, __ATOMIC_RELEASE);
	if (ep->tx_cq)
		__atomic_sub_fetch(&ep->tx_cq->ref, 1, __ATOMIC_RELEASE);
	if (ep->rx_cq)
		__atomic_sub_fetch(&ep->rx_cq->ref, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < DR_CNTR_NUM; i++) {
		struct dr_cntr *c = ep->cntr[i];

		if (c) {
			pthread_mutex_lock(&c->lock);
			c->ref--;
			pthread_mutex_unlock(&c->lock);
			ep->cntr[i] = NULL;
		}
	}
	ep->eq = NULL;
	ep->tx_cq = ep->rx_cq = NULL;
	__atomic_sub_fetch(&ep->dom->ref, 1, __ATOMIC_RELEASE);
}

static int ep_close(struct fid *fid)
{
	struct dr_ep *ep = ep_of_fid(fid);
	struct dr_dev *dev = ep->dev;

	dr_dev_lock(dev);
	/* completions and events from here on go nowhere */
	ep_unbind_all(ep);
	if (ep->state == DR_EP_CONNECTED || ep->state == DR_EP_ACCEPTING || ep->draining) {
		/* disconnect gracefully in the background (see drain_start) */
		ep->orphan = true;
		if (!ep->draining)
			drain_start(ep);
		dr_dev_unlock(dev);
		return 0;
	}
	if (ep->cm_id) {
		dr_cm_set_ctx(ep->cm_id, NULL);
		dr_cm_release(ep->cm_id);
	}
	ep_free(ep);
	dr_dev_unlock(dev);
	return 0;
}

/* fi_ep_bind of a counter: one counter per kind of event (a counter may
 * take several kinds at once); remote kinds only with FI_RMA_EVENT. */
static int ep_bind_cntr(struct dr_ep *ep, struct dr_cntr *c, uint64_t flags)
{
	static const struct {
		uint64_t flag;
		enum dr_ep_cntr which;
	} kinds[] = {
		{ FI_SEND, DR_CNTR_SEND },
		{ FI_RECV, DR_CNTR_RECV },
		{ FI_READ, DR_CNTR_READ },
		{ FI_WRITE, DR_CNTR_WRITE },
		{ FI_REMOTE_READ, DR_CNTR_REMOTE_READ },
		{ FI_REMOTE_WRITE, DR_CNTR_REMOTE_WRITE },
	};
	const size_t n = sizeof(kinds) / sizeof(kinds[0]);
	uint64_t all = 0;
	size_t i;

	for (i = 0; i < n; i++)
		all |= kinds[i].flag;
	if (!flags || (flags & ~all)) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_ep_bind(counter): flags 0x%llx; use FI_SEND, FI_RECV, "
			"FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE\n",
			(unsigned long long)flags);
		return -FI_EBADFLAGS;
	}
	if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && !ep->rma_event) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_ep_bind(counter): FI_REMOTE_READ/FI_REMOTE_WRITE need "
			"FI_RMA_EVENT in the endpoint's caps\n");
		return -FI_EINVAL;
	}
	if (c->dom != ep->dom) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_ep_bind(counter): the counter is of another domain\n");
		return -FI_EINVAL;
	}
	for (i = 0; i < n; i++) {
		if ((flags & kinds[i].flag) && ep->cntr[kinds[i].which]) {
			DR_WARN(FI_LOG_EP_CTRL, "fi_ep_bind(counter): 0x%llx already has a counter\n",
				(unsigned long long)kinds[i].flag);
			return -FI_EINVAL;
		}
	}
	for (i = 0; i < n; i++) {
		if (!(flags & kinds[i].flag))
			continue;
		ep->cntr[kinds[i].which] = c;
		pthread_mutex_lock(&c->lock);
		c->ref++;
		pthread_mutex_unlock(&c->lock);
	}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct dr_ep *ep = ep_of_fid(fid);

	if (ep->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_EQ:
		if (ep->eq)
			return -FI_EINVAL;
		ep->eq = container_of(bfid, struct dr_eq, eq.fid);
		__atomic_add_fetch(&ep->eq->ref, 1, __ATOMIC_RELEASE);
		return 0;
	case FI_CLASS_CQ: {
		struct dr_cq *cq = container_of(bfid, struct dr_cq, cq.fid);

		if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION) ||
		    !(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EBADFLAGS;
		if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
			return -FI_EINVAL;
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
			__atomic_add_fetch(&cq->ref, 1, __ATOMIC_RELEASE);
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
			__atomic_add_fetch(&cq->ref, 1, __ATOMIC_RELEASE);
		}
		return 0;
	}
	case FI_CLASS_CNTR:
		return ep_bind_cntr(ep, container_of(bfid, struct dr_cntr, cntr.fid), flags);
	default:
		DR_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: class %zu not supported\n", bfid->fclass);
		return -FI_EINVAL;
	}
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct dr_ep *ep = ep_of_fid(fid);
	uint64_t *flags = arg;
	int ret;

	switch (command) {
	case FI_ENABLE:
		dr_dev_lock(ep->dev);
		ret = ep_enable_locked(ep);
		dr_dev_unlock(ep->dev);
		return ret;
	case FI_GETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if (*flags & FI_TRANSMIT)
			*flags = ep->tx_op_flags;
		else if (*flags & FI_RECV)
			*flags = ep->rx_op_flags;
		else
			return -FI_EINVAL;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if (*flags & FI_TRANSMIT) {
			if (*flags & ~(FI_TRANSMIT | DR_TX_OP_FLAGS)) {
				DR_WARN(FI_LOG_EP_CTRL, "FI_SETOPSFLAG: tx flags 0x%llx not supported\n",
					(unsigned long long)(*flags & ~(FI_TRANSMIT | DR_TX_OP_FLAGS)));
				return -FI_EINVAL;
			}
			ep->tx_op_flags = *flags & ~FI_TRANSMIT;
		} else if (*flags & FI_RECV) {
			if (*flags & ~(FI_RECV | FI_COMPLETION)) {
				DR_WARN(FI_LOG_EP_CTRL, "FI_SETOPSFLAG: rx flags 0x%llx not supported\n",
					(unsigned long long)(*flags & ~(FI_RECV | FI_COMPLETION)));
				return -FI_EINVAL;
			}
			ep->rx_op_flags = *flags & ~FI_RECV;
		} else {
			return -FI_EINVAL;
		}
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t)) {
		*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = DR_CM_DATA_SIZE;
	*optlen = sizeof(size_t);
	return 0;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static ssize_t ep_cancel(fid_t fid, void *context)
{
	return -FI_ENOENT; /* posted work cannot be taken back from the QP */
}

static int ep_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
			struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int ep_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
			struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t ep_tx_size_left(struct fid_ep *fep)
{
	struct dr_ep *ep = dr_ep_of(fep);
	ssize_t n;

	dr_dev_lock(ep->dev);
	n = (ssize_t)dr_qp_sq_free(ep->qp);
	dr_dev_unlock(ep->dev);
	return n;
}

static ssize_t ep_rx_size_left(struct fid_ep *fep)
{
	struct dr_ep *ep = dr_ep_of(fep);
	ssize_t n;

	dr_dev_lock(ep->dev);
	n = (ssize_t)dr_qp_rq_free(ep->qp);
	dr_dev_unlock(ep->dev);
	return n;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = dr_ext_ops_open,
	.tostr = dr_no_tostr,
	.ops_set = dr_no_ops_set,
};

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = ep_no_tx_ctx,
	.rx_ctx = ep_no_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

int dr_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out,
	       void *context)
{
	struct dr_domain *dom = dr_domain_of(domain);
	struct dr_dev *dev = dom->dev;
	struct dr_qp_init_attr ia = { 0 };
	struct dr_ep *ep;
	uint64_t caps;
	int ret;

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_MSG)) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_endpoint: droce has FI_EP_MSG endpoints only\n");
		return -FI_EINVAL;
	}
	if (info->handle && info->handle->fclass != FI_CLASS_CONNREQ)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		ret = -FI_ENOMEM;
		goto out_free;
	}
	ep->dom = dom;
	ep->dev = dev;
	dr_sa_local(&ep->src, &dev->cfg, 0);
	if (info->src_addr && !info->handle) {
		union dr_sockaddr sa;

		if (dr_sa_take(info->src_addr, info->src_addrlen, &dev->cfg, &sa))
			dr_sa_set_port(&ep->src, dr_sa_port(&sa));
	}
	/* getinfo refused other op_flags; a hand-made info gets them masked */
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags & DR_TX_OP_FLAGS : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags & FI_COMPLETION : 0;
	caps = info->caps ? info->caps : DR_CAPS;
	ep->rma_event = caps & FI_RMA_EVENT;
	ep->rx_cq_data = (info->mode | (info->rx_attr ? info->rx_attr->mode : 0)) & FI_RX_CQ_DATA;

	dr_dev_lock(dev);
	/* the connection's identifiers, unpredictable from outside: the
	 * QPN, and the first PSN we expect, announced in the REQ or REP */
	ret = dr_rand_u32(&ep->start_psn);
	if (ret) {
		dr_dev_unlock(dev);
		DR_WARN(FI_LOG_EP_CTRL, "fi_endpoint: no random PSN: getrandom: %s\n",
			strerror(-ret));
		ret = -FI_EIO;
		goto out_free;
	}
	ep->start_psn &= DR_PSN_MASK;
	ret = dr_dev_qpn_alloc(dev, ep, &ia.qpn);
	if (ret) {
		dr_dev_unlock(dev);
		goto out_free;
	}
	ia.max_send_wr = info->tx_attr && info->tx_attr->size ? (uint32_t)info->tx_attr->size :
								DR_MAX_TX_SIZE;
	ia.max_recv_wr = info->rx_attr && info->rx_attr->size ? (uint32_t)info->rx_attr->size :
								DR_MAX_RX_SIZE;
	ia.mrt = &dev->mrt;
	ia.port_drops = dev->rx_drops;
	/* payloads attached, not copied, on ports that allow it */
	ep->qp_ops = ep_qp_ops;
	if (dr_port_zero_copy_sync(ep->dev->port))
		ep->qp_ops.xmit_split = qp_xmit_split;
	ia.ops = &ep->qp_ops;
	ia.ctx = ep;
	/* without FI_RX_CQ_DATA, writes with CQ data leave the receives alone */
	ia.flags = DR_QP_DEFER_ACK | DR_QP_ADAPTIVE_RTO | (ep->rx_cq_data ? 0 : DR_QP_WRITE_IMM_NO_WQE);
	ep->qp = dr_qp_create(&ia);
	ep->qp_timer = ep->qp ? dr_port_timer_new(dev->port, qp_timer_fire, ep) : NULL;
	if (ep->qp) {
		/* nothing posted yet: the free slots are the queue depths */
		ep->tx_depth = dr_qp_sq_free(ep->qp);
		ep->rx_depth = dr_qp_rq_free(ep->qp);
		ep->txq = calloc(ep->tx_depth, sizeof(*ep->txq));
		ep->rxq = calloc(ep->rx_depth, sizeof(*ep->rxq));
	}
	if (!ep->qp || !ep->qp_timer || !ep->txq || !ep->rxq) {
		if (ep->qp_timer)
			dr_port_timer_free(ep->qp_timer);
		if (ep->qp)
			dr_qp_destroy(ep->qp);
		dr_dev_qpn_free(dev, ia.qpn);
		dr_dev_unlock(dev);
		ret = -FI_ENOMEM;
		goto out_free;
	}
	dr_dev_unlock(dev);

	if (info->handle)
		ep->connreq = container_of(info->handle, struct dr_connreq, fid);
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &ep_fi_ops;
	ep->ep.ops = &ep_ops;
	ep->ep.cm = &ep_cm_ops;
	ep->ep.msg = &ep_msg_ops;
	/* chosen once: an endpoint without the capability answers -FI_ENOSYS */
	ep->ep.rma = (caps & FI_RMA) ? &dr_rma_ops : &dr_no_rma_ops;
	ep->ep.tagged = &dr_no_tagged_ops;
	ep->ep.atomic = (caps & FI_ATOMIC) ? &dr_atomic_ops : &dr_no_atomic_ops;
	ep->ep.collective = &dr_no_collective_ops;
	__atomic_add_fetch(&dom->ref, 1, __ATOMIC_RELEASE);
	*out = &ep->ep;
	return 0;

out_free:
	fi_freeinfo(ep->info);
	free(ep->txq);
	free(ep->rxq);
	free(ep);
	return ret;
}
