// SPDX-License-Identifier: BSD-2-Clause
/*
 * The connection side of an FI_EP_MSG endpoint: fi_connect, fi_accept,
 * fi_shutdown, the CM's events, the graceful disconnect (draining) and the
 * endpoint names (fi_cm ops).  dev->lock held for every QP and CM call.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "dr_fi.h"

/* RDMA READ/atomic depths droce offers and asks for (IRD/ORD): the
 * engine's (dr_qp.h DR_QP_RD_DEPTH says why); rdma_cm's default is 1, the
 * verbs provider asks 16, and each side's ORD is the smaller of its own
 * and the peer's IRD. */
#define DR_IRD DR_QP_RD_DEPTH
#define DR_ORD DR_QP_RD_DEPTH
/* Target ACK delay we announce in REPs: 4.096 us * 2^11 = 8.4 ms, what
 * droce's device thread guarantees when the application does not poll (it
 * polls at least every 5 ms); rxe announces 15 (134 ms). */
#define DR_ACK_DELAY 11

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
	ret = dr_qp_modify(ep->qp, &a,
			   DR_QP_ATTR_STATE | DR_QP_ATTR_SQ_PSN | DR_QP_ATTR_TIMEOUT |
			       DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_RNR_RETRY |
			       DR_QP_ATTR_MAX_RD_ATOMIC);
	/* ACKs unasked both ways when both ends offered them (cm_params);
	 * rdma_rxe never does, and needs AckReq at every message's end */
	if (!ret && peer->ece_vendor == DR_ECE_VENDOR && (peer->ece_options & DR_ECE_LAZY_ACK) &&
	    dr_settings_get()->lazy_ack)
		dr_qp_set_lazy_ack(ep->qp, true);
	/* super-frames to a peer whose port said it takes them (its REQ or
	 * REP's ECE), if ours sends them (FI_DROCE_GSO) */
	if (!ret && !a.path.ipv6 && peer->ece_vendor == DR_ECE_VENDOR &&
	    (peer->ece_options & DR_ECE_GSO_RX) &&
	    dr_port_gso_peer(ep->dev->port, peer->ip4, peer->qpn, true) == 0) {
		unsigned run = dr_port_gso_run(ep->dev->port, a.path_mtu);

		ep->gso_peer = true;
		ep->gso_ip4 = peer->ip4;
		ep->gso_qpn = peer->qpn;
		/* each ACK releases whole super-frames: 62 packets at 1024
		 * (64 would leave as 62 and 2), 60 at 4096; and packets of one
		 * size, which a super-frame takes whole where a FIRST would
		 * cut it (a 16 KiB WRITE at 4096 left as two super-frames,
		 * [FIRST, MIDDLE] and [MIDDLE, LAST]) */
		if (run) {
			dr_qp_set_ack_pkts(ep->qp, run * (DR_QP_ACK_PKTS_MAX / run));
			dr_qp_set_one_size(ep->qp, true);
		}
	}
	return ret;
}

static void qp_to_error(struct dr_ep *ep)
{
	struct dr_qp_attr a = {.state = DR_QPS_ERROR};
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

			ret = qp_go_rts(ep, ev->peer, fl, ep->pmtu,
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

/* ---- graceful disconnect ----------------------------------------------- */

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

void dr_ep_drain_start(struct dr_ep *ep)
{
	ep->draining = true;
	ep->drain_until_ns = dr_port_now_ns() + drain_quiet_ns(ep);
	ep->drain_next = ep->dev->draining;
	ep->dev->draining = ep;
}

void dr_ep_peer_heard(struct dr_ep *ep)
{
	/* IBA 12.9.6: data before the RTU establishes the connection */
	if (ep->state == DR_EP_ACCEPTING)
		dr_cm_established(ep->cm_id);
	if (ep->draining)
		ep->drain_until_ns = dr_port_now_ns() + drain_quiet_ns(ep);
}

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
			dr_ep_free(ep);
		} else {
			dr_cm_disconnect(ep->cm_id);
			qp_to_error(ep);
		}
	}
	return left;
}

/* What the REQ and the REP both carry: our QPN, the PSN we expect first,
 * the RNR retries we ask of the peer, and the application's CM data
 * behind its one-byte length (cm_data_of) in priv. */
static void conn_param_init(const struct dr_ep *ep, struct dr_cm_conn_param *cp, uint8_t *priv,
			    const void *param, size_t paramlen)
{
	priv[0] = (uint8_t)paramlen;
	if (paramlen)
		memcpy(priv + 1, param, paramlen);
	memset(cp, 0, sizeof(*cp));
	cp->qpn = dr_qp_num(ep->qp);
	cp->start_psn = ep->start_psn;
	cp->rnr_retry_count = (uint8_t)dr_settings_get()->rnr_retry;
	cp->private_data = priv;
	cp->private_len = 1 + paramlen;
	/* what droce offers a droce peer (ECE): ACKs unasked
	 * (FI_DROCE_LAZY_ACK), and a packet: port takes super-frames whole */
	if (dr_settings_get()->lazy_ack)
		cp->ece_options |= DR_ECE_LAZY_ACK;
	if (dr_port_gso_takes(ep->dev->port))
		cp->ece_options |= DR_ECE_GSO_RX;
	if (cp->ece_options)
		cp->ece_vendor = DR_ECE_VENDOR;
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
	ret = dr_ep_enable_locked(ep);
	if (ret)
		goto out_unlock;
	if (ep->state != DR_EP_IDLE || ep->connreq) {
		ret = -FI_EOPBADSTATE;
		goto out_unlock;
	}
	ep->pmtu = dr_dev_pmtu(dev);
	if (!ep->pmtu) {
		DR_WARN(FI_LOG_EP_CTRL,
			"fi_connect: the MTU of %s is %u, too small for any path MTU (336 at "
			"least)\n",
			dev->cfg.name, dr_port_link_mtu(dev->port));
		ret = -FI_EINVAL;
		goto out_unlock;
	}
	ep->dst = sa;
	if (!dr_sa_port(&ep->src)) {
		ret = ep_connect_port(ep);
		if (ret)
			goto out_unlock;
	}
	conn_param_init(ep, &cp, priv, param, paramlen);
	cp.responder_resources = DR_IRD;
	cp.initiator_depth = DR_ORD;
	cp.retry_count = (uint8_t)s->retry_cnt;
	cp.path_mtu = dr_ib_mtu_enum(ep->pmtu);
	cp.ack_timeout = (uint8_t)s->timeout;
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
		DR_WARN(FI_LOG_EP_CTRL,
			"fi_accept: the endpoint was not made from an FI_CONNREQ\n");
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
	ret = dr_ep_enable_locked(ep);
	if (ret)
		goto out_unlock;
	peer = &ep->connreq->id->peer;
	pmtu = dr_ib_mtu_bytes(peer->path_mtu);
	if (!pmtu || pmtu > dr_dev_pmtu(dev)) {
		/* both sides must segment at the REQ's path MTU (B.9) */
		DR_WARN(FI_LOG_EP_CTRL,
			"fi_accept: peer's path MTU %u exceeds ours (%u, from the MTU %u of "
			"%s): raise FI_DROCE_MTU or the interface's MTU\n",
			pmtu, dr_dev_pmtu(dev), dr_port_link_mtu(dev->port), dev->cfg.name);
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
	conn_param_init(ep, &cp, priv, param, paramlen);
	/* the passive side swaps the REQ's depths (cm.c cm_req_handler) */
	cp.responder_resources = peer->initiator_depth < DR_IRD ? peer->initiator_depth : DR_IRD;
	cp.initiator_depth =
	    peer->responder_resources < DR_ORD ? peer->responder_resources : DR_ORD;
	cp.ack_timeout = DR_ACK_DELAY;
	/* ECE answers what was asked (IBA 12.6.5): a REP to a REQ without
	 * droce's vendor ID carries none -- librdmacm's active side fails a
	 * connection whose REP names a vendor its REQ did not (rdma_rxe:
	 * CONNECT_ERROR, then REJ 28) */
	if (peer->ece_vendor != DR_ECE_VENDOR)
		cp.ece_vendor = cp.ece_options = 0;
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
		dr_ep_drain_start(ep);
	}
	dr_dev_unlock(ep->dev);
	return 0;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct dr_ep *ep = dr_ep_of_fid(fid);
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
	return dr_copy_addr(&dr_ep_of_fid(fid)->src, addr, addrlen);
}

static int ep_getpeer(struct fid_ep *fep, void *addr, size_t *addrlen)
{
	struct dr_ep *ep = dr_ep_of(fep);

	if (!ep->dst.sa.sa_family)
		return -FI_ENOTCONN;
	return dr_copy_addr(&ep->dst, addr, addrlen);
}

const struct fi_ops_cm dr_ep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = ep_setname,
    .getname = ep_getname,
    .getpeer = ep_getpeer,
    .connect = ep_connect,
    .listen = dr_no_listen,
    .accept = ep_accept,
    .reject = dr_no_reject,
    .shutdown = ep_shutdown,
    .join = dr_no_join,
};
