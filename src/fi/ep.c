// SPDX-License-Identifier: BSD-2-Clause
/*
 * FI_EP_MSG endpoints: one RC QP of the engine each, connected with the IB
 * CM (rdma_cm's conventions), fed by the device's receive dispatch.
 *
 * Connection (ep_cm.c), as rdma_cm runs it (docs/protocol.md C.6):
 *   active:  fi_connect -> REQ; REP -> QP to RTR/RTS, RTU, FI_CONNECTED
 *   passive: FI_CONNREQ; fi_accept -> QP to RTR/RTS, REP; RTU (or the
 *            first data packet) -> FI_CONNECTED
 *   either:  fi_shutdown -> DREQ, QP to ERROR (flush); DREQ/DREP -> FI_SHUTDOWN
 *
 * Data transfer: messages in ep_msg.c, RMA in rma.c and atomics in
 * atomic.c, all posted through dr_ep_post_send (ep_msg.c).  Completions of
 * every kind come back through qp_complete (ep_qp.c), which applies
 * FI_SELECTIVE_COMPLETION and bumps the bound counters; the responder's
 * events come back through qp_remote_op, which feeds the FI_RMA_EVENT
 * counters.  Only dr_qp.h's public calls are
 * used on the QP: the engine's fields are its own.
 *
 * This file: the endpoint fid -- open, bind, enable, control, close.
 * Every call that touches the QP, the CM or the port holds dev->lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_fi.h"

/* ---- fid and ep ops -------------------------------------------------------- */

int dr_ep_enable_locked(struct dr_ep *ep)
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

/* At close, at info level: what the QP resent and why, so that a run that
 * was slow for timeouts or RNR waits says so (the counters are also live
 * through droce-stat and fi_droce_ep_stats). */
static void ep_log_resends(const char *who, const struct dr_qp_stats *s)
{
	if (!s->tx_resent_pkts && !s->timeouts && !s->early_timeouts && !s->rnr_waits &&
	    !s->rx_seq_naks && !s->tx_seq_naks && !s->tx_rnr_naks)
		return;
	DR_INFO(FI_LOG_EP_DATA,
		"%s resent %llu of %llu request packets; timeouts %llu (early %llu, "
		"spurious %llu, losses %llu), retries %llu; NAKs received: sequence %llu, "
		"RNR %llu (RNR waits %llu); NAKs sent: sequence %llu, RNR %llu\n",
		who, (unsigned long long)s->tx_resent_pkts, (unsigned long long)s->tx_req_pkts,
		(unsigned long long)s->timeouts, (unsigned long long)s->early_timeouts,
		(unsigned long long)s->spurious_timeouts, (unsigned long long)s->timeout_losses,
		(unsigned long long)s->retries, (unsigned long long)s->rx_seq_naks,
		(unsigned long long)s->rx_rnr_naks, (unsigned long long)s->rnr_waits,
		(unsigned long long)s->tx_seq_naks, (unsigned long long)s->tx_rnr_naks);
}

/* Everything but the QP's connection: under dev->lock, the QP no longer
 * reachable by the application. */
void dr_ep_free(struct dr_ep *ep)
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
	if (ep->src_port_claimed)
		dr_dev_port_free(dev, dr_sa_port(&ep->src));
	if (ep->gso_peer)
		dr_port_gso_peer(dev->port, ep->gso_ip4, ep->gso_qpn, false);
	snprintf(who, sizeof(who), "qp 0x%06x", dr_qp_num(ep->qp));
	dr_rx_drops_log(who, dr_qp_stats(ep->qp)->rx_drop);
	ep_log_resends(who, dr_qp_stats(ep->qp));
	dr_ep_flush_ack(ep);
	dr_dev_qp_destroy(dev, ep->qp, ep);
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
		dr_ref_put(&ep->eq->ref);
	if (ep->tx_cq)
		dr_ref_put(&ep->tx_cq->ref);
	if (ep->rx_cq)
		dr_ref_put(&ep->rx_cq->ref);
	for (int i = 0; i < DR_CNTR_NUM; i++) {
		struct dr_cntr *c = ep->cntr[i];

		if (c) {
			dr_ref_put(&c->ref);
			ep->cntr[i] = NULL;
		}
	}
	ep->eq = NULL;
	ep->tx_cq = ep->rx_cq = NULL;
	dr_ref_put(&ep->dom->ref);
}

static int ep_close(struct fid *fid)
{
	struct dr_ep *ep = dr_ep_of_fid(fid);
	struct dr_dev *dev = ep->dev;

	dr_dev_lock(dev);
	/* completions and events from here on go nowhere */
	ep_unbind_all(ep);
	if (ep->state == DR_EP_CONNECTED || ep->state == DR_EP_ACCEPTING || ep->draining) {
		/* disconnect gracefully in the background (see drain_start) */
		ep->orphan = true;
		if (!ep->draining)
			dr_ep_drain_start(ep);
		dr_dev_unlock(dev);
		return 0;
	}
	if (ep->cm_id) {
		dr_cm_set_ctx(ep->cm_id, NULL);
		dr_cm_release(ep->cm_id);
	}
	dr_ep_free(ep);
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
		dr_ref_get(&c->ref);
	}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct dr_ep *ep = dr_ep_of_fid(fid);

	if (ep->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_EQ:
		if (ep->eq)
			return -FI_EINVAL;
		ep->eq = dr_eq_of_fid(bfid);
		dr_ref_get(&ep->eq->ref);
		return 0;
	case FI_CLASS_CQ: {
		struct dr_cq *cq = dr_cq_of_fid(bfid);

		if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION) ||
		    !(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EBADFLAGS;
		if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
			return -FI_EINVAL;
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = cq;
			ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
			dr_ref_get(&cq->ref);
		}
		if (flags & FI_RECV) {
			ep->rx_cq = cq;
			ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
			dr_ref_get(&cq->ref);
		}
		return 0;
	}
	case FI_CLASS_CNTR:
		return ep_bind_cntr(ep, dr_cntr_of_fid(bfid), flags);
	default:
		DR_WARN(FI_LOG_EP_CTRL, "fi_ep_bind: class %zu not supported\n", bfid->fclass);
		return -FI_EINVAL;
	}
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct dr_ep *ep = dr_ep_of_fid(fid);
	uint64_t *flags = arg;
	int ret;

	switch (command) {
	case FI_ENABLE:
		dr_dev_lock(ep->dev);
		ret = dr_ep_enable_locked(ep);
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

/* fi_tx_size_left / fi_rx_size_left: the free entries of a QP queue. */
static ssize_t size_left(struct fid_ep *fep, bool tx)
{
	struct dr_ep *ep = dr_ep_of(fep);
	ssize_t n;

	dr_dev_lock(ep->dev);
	n = (ssize_t)(tx ? dr_qp_sq_free(ep->qp) : dr_qp_rq_free(ep->qp));
	dr_dev_unlock(ep->dev);
	return n;
}

static ssize_t ep_tx_size_left(struct fid_ep *fep)
{
	return size_left(fep, true);
}

static ssize_t ep_rx_size_left(struct fid_ep *fep)
{
	return size_left(fep, false);
}

static const struct fi_ops ep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = dr_ext_ops_open,
    .tostr = dr_no_tostr,
    .ops_set = dr_no_ops_set,
};

static const struct fi_ops_ep ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = dr_no_tx_ctx,
    .rx_ctx = dr_no_rx_ctx,
    .rx_size_left = ep_rx_size_left,
    .tx_size_left = ep_tx_size_left,
};

/* The retransmit timer's first floor on a port that may lose frames
 * (af_packet, af_xdp, a NIC): an answer there waits on two processes'
 * schedulers and the kernel's softirq, whose stalls on a shared host run
 * to milliseconds (bench/hoststall on the 2-core Xeon host: 5-13 gaps
 * over 1 ms in 10 s, the longest 2-3 ms; 4.5 ms logged over a veth, 20 ms
 * once with compiles), while an 8 B round trip measures 7 us and the
 * measured timeout is 131 us.  At 1 ms (stop 24) every 1 s ping-pong over
 * a lossless veth still timed out once or twice; at 10 ms, the most a
 * late answer raises it to (comp.c DR_RTO_FLOOR_LATE_MAX_NS), none did
 * (bench/PROFILE.md section 8).  Losses bring it down: each one the QP
 * sees halves it, a tail loss too once its resend has been answered only
 * once by the next timeout (comp.c dr_comp_timeout_lost), so a lossy path
 * pays its first timeouts at 10, 10, 5, 2.5 ... ms; and so do quiet round
 * trips, as for the floor a late answer sets. */
#define DR_EP_RTO_FLOOR_NS 10000000ull

/* The endpoint's QP, its retransmit timer and the rings beside its queues
 * (dev->lock held).  0, or -FI_* with none of them left. */
static int ep_qp_new(struct dr_ep *ep, const struct fi_info *info)
{
	struct dr_dev *dev = ep->dev;
	struct dr_qp_init_attr ia = {0};
	int ret;

	/* the connection's identifiers, unpredictable from outside: the
	 * QPN, and the first PSN we expect, announced in the REQ or REP */
	ret = dr_rand_u32(&ep->start_psn);
	if (ret) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_endpoint: no random PSN: getrandom: %s\n",
			strerror(-ret));
		return -FI_EIO;
	}
	ep->start_psn &= DR_PSN_MASK;
	ia.max_send_wr =
	    info->tx_attr && info->tx_attr->size ? (uint32_t)info->tx_attr->size : DR_MAX_TX_SIZE;
	ia.max_recv_wr =
	    info->rx_attr && info->rx_attr->size ? (uint32_t)info->rx_attr->size : DR_MAX_RX_SIZE;
	dr_ep_qp_ops_init(ep);
	ia.ops = &ep->qp_ops;
	ia.ctx = ep;
	/* without FI_RX_CQ_DATA, writes with CQ data leave the receives alone */
	ia.flags =
	    DR_QP_DEFER_ACK | DR_QP_ADAPTIVE_RTO | (ep->rx_cq_data ? 0 : DR_QP_WRITE_IMM_NO_WQE);
	/* FI_DROCE_CC (the settings were read when the domain opened) */
	if (dr_settings_get() && dr_settings_get()->cc)
		ia.flags |= DR_QP_CC;
	/* a port that loses frames when too many arrive at once (af_xdp) */
	ia.max_window = dr_port_max_window(dev->port);
	/* or none at all (memif, ring): no timeout shorter than the QP's */
	if (dr_port_lossless(dev->port))
		ia.flags |= DR_QP_LOSSLESS;
	else
		ia.rto_floor_ns = DR_EP_RTO_FLOOR_NS;
	ret = dr_dev_qp_create(dev, ep, &ia, &ep->qp);
	if (ret)
		return ret;
	ep->qp_timer = dr_ep_qp_timer_new(ep);
	if (ep->qp_timer) {
		/* nothing posted yet: the free slots are the queue depths */
		ep->tx_depth = dr_qp_sq_free(ep->qp);
		ep->rx_depth = dr_qp_rq_free(ep->qp);
		ep->txq = calloc(ep->tx_depth, sizeof(*ep->txq));
		ep->rxq = calloc(ep->rx_depth, sizeof(*ep->rxq));
	}
	if (!ep->qp_timer || !ep->txq || !ep->rxq) {
		if (ep->qp_timer)
			dr_port_timer_free(ep->qp_timer);
		dr_dev_qp_destroy(dev, ep->qp, ep);
		return -FI_ENOMEM;
	}
	return 0;
}

int dr_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out,
	       void *context)
{
	struct dr_domain *dom = dr_domain_of(domain);
	struct dr_dev *dev = dom->dev;
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
	ret = ep_qp_new(ep, info);
	dr_dev_unlock(dev);
	if (ret)
		goto out_free;

	if (info->handle)
		ep->connreq = dr_connreq_of_fid(info->handle);
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = DR_OPS(&ep_fi_ops);
	ep->ep.ops = DR_OPS(&ep_ops);
	ep->ep.cm = DR_OPS(&dr_ep_cm_ops);
	ep->ep.msg = DR_OPS(&dr_ep_msg_ops);
	/* chosen once: an endpoint without the capability answers -FI_ENOSYS */
	ep->ep.rma = DR_OPS((caps & FI_RMA) ? &dr_rma_ops : &dr_no_rma_ops);
	ep->ep.tagged = DR_OPS(&dr_no_tagged_ops);
	ep->ep.atomic = DR_OPS((caps & FI_ATOMIC) ? &dr_atomic_ops : &dr_no_atomic_ops);
	ep->ep.collective = DR_OPS(&dr_no_collective_ops);
	dr_ref_get(&dom->ref);
	*out = &ep->ep;
	return 0;

out_free:
	fi_freeinfo(ep->info);
	free(ep->txq);
	free(ep->rxq);
	free(ep);
	return ret;
}
