// SPDX-License-Identifier: BSD-2-Clause
/*
 * The IB connection manager, as the Linux CM and rdma_cm run it over
 * RoCEv2 (IBA 12.6-12.9; drivers/infiniband/core/cm.c and cma.c, as
 * summarised in ROCE-REFERENCE.md C):
 *
 *   active                         passive
 *   connect  -- REQ -------------> CONNREQ event; accept / reject
 *   ESTABLISHED <-------- REP ---  (or REJ -> REJECTED)
 *            -- RTU -------------> ESTABLISHED
 *   disconnect -- DREQ ----------> DISCONNECTED; DREP sent
 *   DISCONNECTED <------- DREP ---
 *
 * REQ, REP and DREQ are resent on timeout (4.096 us * 2^cm_resp_timeout,
 * max_cm_retries times); duplicates are answered from the last MAD sent
 * (a duplicate REQ gets the REP again, a duplicate REP the RTU, a duplicate
 * DREQ the DREP), so both sides converge whatever the network drops.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dr_cm.h"
#include "dr_qp.h" /* dr_udp_sport */

const char *const dr_cm_state_names[DR_CMS_NUM] = {
    [DR_CMS_IDLE] = "IDLE",
    [DR_CMS_REQ_SENT] = "REQ_SENT",
    [DR_CMS_REQ_RCVD] = "REQ_RCVD",
    [DR_CMS_REP_SENT] = "REP_SENT",
    [DR_CMS_ESTABLISHED] = "ESTABLISHED",
    [DR_CMS_DREQ_SENT] = "DREQ_SENT",
    [DR_CMS_TIMEWAIT] = "TIMEWAIT",
    [DR_CMS_CLOSED] = "CLOSED",
};

const char *const dr_cm_event_names[DR_CM_EV_NUM] = {
    [DR_CM_EV_CONNREQ] = "CONNREQ",	      [DR_CM_EV_ESTABLISHED] = "ESTABLISHED",
    [DR_CM_EV_REJECTED] = "REJECTED",	      [DR_CM_EV_UNREACHABLE] = "UNREACHABLE",
    [DR_CM_EV_DISCONNECTED] = "DISCONNECTED",
};

struct dr_cm_listener {
	struct dr_cm_listener *next;
	struct dr_cm *cm;
	uint16_t port;
	void *ctx;
};

/* rdma_cm values (cma.c): CMA_CM_RESPONSE_TIMEOUT, CMA_MAX_CM_RETRIES */
#define CM_DEF_RESP_TIMEOUT 20
#define CM_DEF_MAX_RETRIES  15
#define CM_DEF_TIMEWAIT_NS  1000000000ull
#define CM_HOP_LIMIT	    64

static uint64_t rng_next(struct dr_cm *cm)
{
	/* xorshift64*: comm IDs and TIDs need to be unlikely to repeat
	 * across restarts, not secret */
	cm->rng ^= cm->rng >> 12;
	cm->rng ^= cm->rng << 25;
	cm->rng ^= cm->rng >> 27;
	return cm->rng * 0x2545f4914f6cdd1dull;
}

static void cm_log(struct dr_cm *cm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cm_log(struct dr_cm *cm, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!cm->ops->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cm->ops->log(cm->ctx, msg);
}

uint32_t dr_ib_mtu_bytes(uint8_t ib_mtu)
{
	return ib_mtu >= 1 && ib_mtu <= 5 ? 128u << ib_mtu : 0;
}

uint8_t dr_ib_mtu_enum(uint32_t bytes)
{
	for (uint8_t e = 1; e <= 5; e++)
		if (dr_ib_mtu_bytes(e) == bytes)
			return e;
	return 0;
}

static uint64_t mad_timeout_ns(const struct dr_cm *cm)
{
	return 4096ull << cm->cfg.cm_resp_timeout;
}

/* ---- timers -------------------------------------------------------------- */

uint64_t dr_cm_deadline_ns(const struct dr_cm *cm)
{
	uint64_t d = UINT64_MAX;

	for (const struct dr_cm_id *id = cm->ids; id; id = id->next)
		if (id->deadline_ns < d)
			d = id->deadline_ns;
	return d;
}

static void rearm(struct dr_cm *cm)
{
	uint64_t d = dr_cm_deadline_ns(cm);

	if (d != cm->deadline_ns) {
		cm->deadline_ns = d;
		if (cm->ops->timer_set)
			cm->ops->timer_set(cm->ctx, d);
	}
}

static void set_state(struct dr_cm_id *id, enum dr_cm_state st)
{
	cm_log(id->cm, "cm id %08x: %s -> %s", id->local_comm_id, dr_cm_state_names[id->state],
	       dr_cm_state_names[st]);
	id->state = st;
}

/* ---- sending ------------------------------------------------------------- */

static int send_raw(struct dr_cm *cm, uint32_t ip4, const uint8_t *mad)
{
	cm->stats.tx_mads++;
	return cm->ops->send_mad(cm->ctx, ip4, mad);
}

/* Send a MAD on behalf of id and keep it for resends/duplicates; with
 * retries, arm the response timer. */
static int send_kept(struct dr_cm_id *id, const struct dr_mad *mad, bool retried)
{
	struct dr_cm *cm = id->cm;

	dr_mad_build(mad, id->last_mad);
	id->has_last = true;
	id->last_attr = mad->attr_id;
	if (retried) {
		id->retries_left = cm->cfg.max_cm_retries;
		id->deadline_ns = cm->ops->now_ns(cm->ctx) + mad_timeout_ns(cm);
	} else {
		id->deadline_ns = UINT64_MAX;
	}
	return send_raw(cm, id->peer_ip4, id->last_mad);
}

static void copy_priv(uint8_t *dst, size_t room, const void *src, size_t len)
{
	memset(dst, 0, room);
	if (len)
		memcpy(dst, src, len);
}

static int send_req(struct dr_cm_id *id, const struct dr_cm_conn_param *p)
{
	struct dr_cm *cm = id->cm;
	struct dr_cma_hdr cma = {.cma_version = 0, .ip_version = 4, .src_port = id->local_port};
	struct dr_cm_req req;
	struct dr_mad mad;

	memset(&req, 0, sizeof(req));
	req.local_comm_id = id->local_comm_id;
	req.service_id = DR_CM_SID_TCP_PS + id->remote_port;
	req.local_ca_guid = cm->cfg.ca_guid;
	req.local_qpn = p->qpn;
	req.responder_resources = p->responder_resources;
	req.initiator_depth = p->initiator_depth;
	req.remote_cm_resp_timeout = cm->cfg.cm_resp_timeout;
	req.transport_type = 0; /* RC */
	req.starting_psn = p->start_psn & DR_PSN_MASK;
	req.local_cm_resp_timeout = cm->cfg.cm_resp_timeout;
	req.retry_count = p->retry_count;
	req.pkey = DR_DEF_PKEY;
	req.path_mtu = p->path_mtu;
	req.rnr_retry_count = p->rnr_retry_count;
	req.max_cm_retries = cm->cfg.max_cm_retries;
	/* RoCE paths: permissive LIDs when routed (cma.c), IPv4-mapped GIDs */
	req.primary.local_lid = 0xffff;
	req.primary.remote_lid = 0xffff;
	dr_gid_from_ipv4(req.primary.local_gid, cm->cfg.local_ip4);
	dr_gid_from_ipv4(req.primary.remote_gid, id->peer_ip4);
	/* cma_get_roce_udp_flow_label(): the passive side derives the QP's
	 * UDP source port from it (A.3) */
	req.primary.flow_label = ((uint32_t)id->local_port * 31 + id->remote_port) & 0xfffff;
	req.primary.hop_limit = CM_HOP_LIMIT;
	req.primary.local_ack_timeout = p->ack_timeout;
	/* the alternate path stays zero: a non-zero LID means "has one" */

	dr_gid_from_ipv4(cma.src_addr, cm->cfg.local_ip4);
	memset(cma.src_addr, 0, 12); /* cma_hdr: 12 zero bytes, then IPv4 */
	dr_gid_from_ipv4(cma.dst_addr, id->peer_ip4);
	memset(cma.dst_addr, 0, 12);
	dr_cma_hdr_pack(&cma, req.private_data);
	if (p->private_len)
		memcpy(req.private_data + DR_CMA_HDR_LEN, p->private_data, p->private_len);

	dr_mad_init_cm(&mad, DR_CM_ATTR_REQ, id->tid);
	dr_cm_req_pack(&req, mad.body);
	return send_kept(id, &mad, true);
}

static int send_rtu(struct dr_cm_id *id)
{
	struct dr_cm_rtu rtu = {.local_comm_id = id->local_comm_id,
				.remote_comm_id = id->remote_comm_id};
	struct dr_mad mad;

	dr_mad_init_cm(&mad, DR_CM_ATTR_RTU, id->tid);
	dr_cm_rtu_pack(&rtu, mad.body);
	return send_kept(id, &mad, false);
}

/* A REJ for a MAD that matches no id (IBA 12.6.7; cm.c cm_issue_rej). */
static void issue_rej(struct dr_cm *cm, uint32_t ip4, uint64_t tid, uint32_t remote_comm_id,
		      uint8_t msg_rejected, uint16_t reason)
{
	struct dr_cm_rej rej;
	uint8_t buf[DR_MAD_LEN];
	struct dr_mad mad;

	memset(&rej, 0, sizeof(rej));
	rej.remote_comm_id = remote_comm_id;
	rej.msg_rejected = msg_rejected;
	rej.reason = reason;
	dr_mad_init_cm(&mad, DR_CM_ATTR_REJ, tid);
	dr_cm_rej_pack(&rej, mad.body);
	dr_mad_build(&mad, buf);
	send_raw(cm, ip4, buf);
}

static void send_rej(struct dr_cm_id *id, uint8_t msg_rejected, uint16_t reason, const void *priv,
		     size_t len)
{
	struct dr_cm_rej rej;
	struct dr_mad mad;

	memset(&rej, 0, sizeof(rej));
	rej.local_comm_id = id->local_comm_id;
	rej.remote_comm_id = id->remote_comm_id;
	rej.msg_rejected = msg_rejected;
	rej.reason = reason;
	copy_priv(rej.private_data, sizeof(rej.private_data), priv, len);
	dr_mad_init_cm(&mad, DR_CM_ATTR_REJ, id->tid);
	dr_cm_rej_pack(&rej, mad.body);
	send_kept(id, &mad, false);
}

static void send_drep(struct dr_cm *cm, uint32_t ip4, uint64_t tid, uint32_t local_comm_id,
		      uint32_t remote_comm_id)
{
	struct dr_cm_drep drep;
	uint8_t buf[DR_MAD_LEN];
	struct dr_mad mad;

	memset(&drep, 0, sizeof(drep));
	drep.local_comm_id = local_comm_id;
	drep.remote_comm_id = remote_comm_id;
	dr_mad_init_cm(&mad, DR_CM_ATTR_DREP, tid);
	dr_cm_drep_pack(&drep, mad.body);
	dr_mad_build(&mad, buf);
	send_raw(cm, ip4, buf);
}

/* ---- ids ----------------------------------------------------------------- */

static struct dr_cm_id *id_by_local(struct dr_cm *cm, uint32_t local_comm_id)
{
	for (struct dr_cm_id *id = cm->ids; id; id = id->next)
		if (id->local_comm_id == local_comm_id)
			return id;
	return NULL;
}

static struct dr_cm_id *id_by_remote(struct dr_cm *cm, uint32_t ip4, uint32_t remote_comm_id)
{
	for (struct dr_cm_id *id = cm->ids; id; id = id->next)
		if (!id->active && id->peer_ip4 == ip4 && id->remote_comm_id == remote_comm_id)
			return id;
	return NULL;
}

static struct dr_cm_id *id_new(struct dr_cm *cm, uint32_t peer_ip4)
{
	struct dr_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	do
		id->local_comm_id = (uint32_t)rng_next(cm);
	while (!id->local_comm_id || id_by_local(cm, id->local_comm_id));
	id->cm = cm;
	id->peer_ip4 = peer_ip4;
	id->deadline_ns = UINT64_MAX;
	id->next = cm->ids;
	cm->ids = id;
	return id;
}

static void id_free(struct dr_cm_id *id)
{
	struct dr_cm_id **pp;

	for (pp = &id->cm->ids; *pp; pp = &(*pp)->next)
		if (*pp == id) {
			*pp = id->next;
			break;
		}
	free(id);
}

static void emit(struct dr_cm_id *id, enum dr_cm_event_type type, uint16_t reason,
		 const uint8_t *priv, size_t len, void *listen_ctx)
{
	struct dr_cm_event ev = {
	    .type = type,
	    .id = id,
	    .listen_ctx = listen_ctx,
	    .rej_reason = reason,
	    .err = id->fail_err ? id->fail_err : -ETIMEDOUT,
	    .peer = &id->peer,
	    .private_data = priv,
	    .private_len = len,
	};

	if (id->released)
		return;
	cm_log(id->cm, "cm id %08x: event %s", id->local_comm_id, dr_cm_event_names[type]);
	id->cm->ops->event(id->cm->ctx, &ev);
}

/* Closed for good, or answering duplicates for a while first. */
static void to_timewait(struct dr_cm_id *id)
{
	set_state(id, DR_CMS_TIMEWAIT);
	id->deadline_ns = id->cm->ops->now_ns(id->cm->ctx) + id->cm->cfg.timewait_ns;
}

static void to_closed(struct dr_cm_id *id)
{
	set_state(id, DR_CMS_CLOSED);
	id->deadline_ns = UINT64_MAX;
}

/* ---- public calls -------------------------------------------------------- */

int dr_cm_init(struct dr_cm *cm, const struct dr_cm_config *cfg, const struct dr_cm_ops *ops,
	       void *ctx)
{
	struct timespec ts;

	if (!ops || !ops->send_mad || !ops->now_ns || !ops->event)
		return -EINVAL;
	memset(cm, 0, sizeof(*cm));
	cm->cfg = *cfg;
	if (!cm->cfg.cm_resp_timeout)
		cm->cfg.cm_resp_timeout = CM_DEF_RESP_TIMEOUT;
	if (cm->cfg.cm_resp_timeout > 31 || cm->cfg.max_cm_retries > 15)
		return -EINVAL;
	if (!cm->cfg.timewait_ns)
		cm->cfg.timewait_ns = CM_DEF_TIMEWAIT_NS;
	cm->ops = ops;
	cm->ctx = ctx;
	cm->rng = cfg->seed;
	if (!cm->rng) {
		clock_gettime(CLOCK_REALTIME, &ts);
		cm->rng = (uint64_t)ts.tv_nsec << 32 ^ (uint64_t)ts.tv_sec ^ (uintptr_t)cm;
	}
	cm->rng |= 1;
	cm->tid_hi = (uint32_t)rng_next(cm);
	cm->deadline_ns = UINT64_MAX;
	return 0;
}

void dr_cm_fini(struct dr_cm *cm)
{
	while (cm->ids)
		id_free(cm->ids);
	while (cm->lsn) {
		struct dr_cm_listener *l = cm->lsn;

		cm->lsn = l->next;
		free(l);
	}
}

int dr_cm_listen(struct dr_cm *cm, uint16_t port, void *ctx, struct dr_cm_listener **out)
{
	struct dr_cm_listener *l;

	for (l = cm->lsn; l; l = l->next)
		if (l->port == port)
			return -EADDRINUSE;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cm = cm;
	l->port = port;
	l->ctx = ctx;
	l->next = cm->lsn;
	cm->lsn = l;
	*out = l;
	return 0;
}

void dr_cm_unlisten(struct dr_cm_listener *l)
{
	struct dr_cm_listener **pp;

	for (pp = &l->cm->lsn; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	free(l);
}

static bool param_ok(const struct dr_cm_conn_param *p, size_t max_priv)
{
	return p->private_len <= max_priv && (!p->private_len || p->private_data) &&
	       p->retry_count <= 7 && p->rnr_retry_count <= 7 && p->ack_timeout <= 31;
}

int dr_cm_connect(struct dr_cm *cm, uint32_t dst_ip4, uint16_t dst_port, uint16_t src_port,
		  const struct dr_cm_conn_param *p, void *ctx, struct dr_cm_id **out)
{
	struct dr_cm_id *id;
	int ret;

	if (!param_ok(p, DR_CM_MAX_USER_DATA) || !dr_ib_mtu_bytes(p->path_mtu))
		return -EINVAL;
	id = id_new(cm, dst_ip4);
	if (!id)
		return -ENOMEM;
	id->active = true;
	id->ctx = ctx;
	id->local_port = src_port;
	id->remote_port = dst_port;
	id->local = *p;
	id->local.private_data = NULL;
	/* cm.c cm_form_tid(): the agent's high half, our comm ID low */
	id->tid = (uint64_t)cm->tid_hi << 32 | id->local_comm_id;
	set_state(id, DR_CMS_REQ_SENT);
	ret = send_req(id, p);
	if (ret && ret != -EAGAIN) {
		id_free(id);
		return ret;
	}
	rearm(cm);
	*out = id;
	return 0;
}

int dr_cm_accept(struct dr_cm_id *id, const struct dr_cm_conn_param *p)
{
	struct dr_cm *cm = id->cm;
	struct dr_cm_rep rep;
	struct dr_mad mad;

	if (id->state != DR_CMS_REQ_RCVD || !param_ok(p, DR_CM_REP_PRIV_LEN))
		return -EINVAL;
	id->local = *p;
	id->local.private_data = NULL;
	memset(&rep, 0, sizeof(rep));
	rep.local_comm_id = id->local_comm_id;
	rep.remote_comm_id = id->remote_comm_id;
	rep.local_qpn = p->qpn;
	rep.starting_psn = p->start_psn & DR_PSN_MASK;
	rep.responder_resources = p->responder_resources;
	rep.initiator_depth = p->initiator_depth;
	rep.target_ack_delay = p->ack_timeout;
	rep.rnr_retry_count = p->rnr_retry_count;
	rep.local_ca_guid = cm->cfg.ca_guid;
	copy_priv(rep.private_data, sizeof(rep.private_data), p->private_data, p->private_len);
	dr_mad_init_cm(&mad, DR_CM_ATTR_REP, id->tid);
	dr_cm_rep_pack(&rep, mad.body);
	set_state(id, DR_CMS_REP_SENT);
	send_kept(id, &mad, true);
	rearm(cm);
	return 0;
}

int dr_cm_reject(struct dr_cm_id *id, const void *private_data, size_t len)
{
	if (id->state != DR_CMS_REQ_RCVD || len > DR_CM_REJ_PRIV_LEN || (len && !private_data))
		return -EINVAL;
	send_rej(id, 0, DR_CM_REJ_CONSUMER_DEFINED, private_data, len);
	to_timewait(id); /* a duplicate REQ gets the same REJ again */
	rearm(id->cm);
	return 0;
}

void dr_cm_established(struct dr_cm_id *id)
{
	if (id->state != DR_CMS_REP_SENT)
		return;
	set_state(id, DR_CMS_ESTABLISHED);
	id->deadline_ns = UINT64_MAX;
	rearm(id->cm);
	emit(id, DR_CM_EV_ESTABLISHED, 0, NULL, 0, NULL);
}

int dr_cm_disconnect(struct dr_cm_id *id)
{
	struct dr_cm_dreq dreq;
	struct dr_mad mad;

	if (id->state == DR_CMS_REP_SENT)
		dr_cm_established(id);
	if (id->state != DR_CMS_ESTABLISHED)
		return -EINVAL;
	memset(&dreq, 0, sizeof(dreq));
	dreq.local_comm_id = id->local_comm_id;
	dreq.remote_comm_id = id->remote_comm_id;
	dreq.remote_qpn = id->peer.qpn;
	/* a DREQ is a new transaction (cm.c ib_send_cm_dreq) */
	dr_mad_init_cm(&mad, DR_CM_ATTR_DREQ, (uint64_t)id->cm->tid_hi++ << 32 | id->local_comm_id);
	dr_cm_dreq_pack(&dreq, mad.body);
	set_state(id, DR_CMS_DREQ_SENT);
	id->drep_awaited = true;
	send_kept(id, &mad, true);
	rearm(id->cm);
	return 0;
}

void dr_cm_set_ctx(struct dr_cm_id *id, void *ctx)
{
	id->ctx = ctx;
}

void dr_cm_release(struct dr_cm_id *id)
{
	struct dr_cm *cm = id->cm;

	id->released = true;
	switch (id->state) {
	case DR_CMS_CLOSED:
		id_free(id);
		break;
	case DR_CMS_REQ_RCVD:
		/* never answered: refuse it rather than leave the peer hanging */
		send_rej(id, 0, DR_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		to_timewait(id);
		break;
	case DR_CMS_ESTABLISHED:
	case DR_CMS_REP_SENT:
		dr_cm_disconnect(id);
		break;
	default:
		break; /* its timer or the peer finishes it */
	}
	rearm(cm);
}

/* ---- receiving ----------------------------------------------------------- */

static void fill_peer_from_req(struct dr_cm_id *id, const struct dr_cm_req *req,
			       const struct dr_cma_hdr *cma)
{
	struct dr_cm_peer *pe = &id->peer;

	pe->ip4 = id->peer_ip4;
	pe->port = cma->src_port;
	pe->dst_port = (uint16_t)(req->service_id & 0xffff);
	pe->qpn = req->local_qpn;
	pe->start_psn = req->starting_psn;
	pe->responder_resources = req->responder_resources;
	pe->initiator_depth = req->initiator_depth;
	pe->retry_count = req->retry_count;
	pe->rnr_retry_count = req->rnr_retry_count;
	pe->path_mtu = req->path_mtu;
	pe->ack_timeout = req->primary.local_ack_timeout;
	pe->flow_label = req->primary.flow_label;
	pe->ca_guid = req->local_ca_guid;
}

static void recv_req(struct dr_cm *cm, uint32_t ip4, const struct dr_mad *mad)
{
	struct dr_cm_listener *l;
	struct dr_cma_hdr cma;
	struct dr_cm_req req;
	struct dr_cm_id *id;
	uint16_t port;

	dr_cm_req_unpack(mad->body, &req);
	id = id_by_remote(cm, ip4, req.local_comm_id);
	if (id) {
		/* duplicate REQ (cm.c cm_dup_req_handler): answer from what we
		 * sent; still deciding: nothing to say yet */
		cm->stats.dup_reqs++;
		if (id->state == DR_CMS_REQ_RCVD || !id->has_last)
			return;
		if ((id->state == DR_CMS_TIMEWAIT || id->state == DR_CMS_CLOSED) &&
		    id->last_attr != DR_CM_ATTR_REJ)
			/* that connection is over (cm.c: REJ stale) */
			issue_rej(cm, ip4, mad->tid, req.local_comm_id, 0, DR_CM_REJ_STALE_CONN);
		else
			send_raw(cm, ip4, id->last_mad);
		return;
	}

	port = (uint16_t)(req.service_id & 0xffff);
	dr_cma_hdr_unpack(req.private_data, &cma);
	for (l = cm->lsn; l; l = l->next)
		if (l->port == port)
			break;
	if ((req.service_id & ~0xffffull) != DR_CM_SID_TCP_PS || !l || req.transport_type != 0 ||
	    cma.cma_version != 0 || cma.ip_version != 4) {
		/* no listener, not RC, or not an rdma_cm IPv4 header */
		cm->stats.rej_no_listener++;
		cm_log(cm, "cm: REQ for service 0x%016llx from %08x: no listener, REJ",
		       (unsigned long long)req.service_id, ip4);
		issue_rej(cm, ip4, mad->tid, req.local_comm_id, 0, DR_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	if (!dr_ib_mtu_bytes(req.path_mtu)) {
		cm->stats.rx_bad++;
		issue_rej(cm, ip4, mad->tid, req.local_comm_id, 0, DR_CM_REJ_CONSUMER_DEFINED);
		return;
	}

	id = id_new(cm, ip4);
	if (!id)
		return; /* the peer resends */
	id->remote_comm_id = req.local_comm_id;
	id->tid = mad->tid;
	id->local_port = port;
	id->remote_port = cma.src_port;
	fill_peer_from_req(id, &req, &cma);
	set_state(id, DR_CMS_REQ_RCVD);
	emit(id, DR_CM_EV_CONNREQ, 0, req.private_data + DR_CMA_HDR_LEN, DR_CMA_USER_DATA_LEN,
	     l->ctx);
}

static void recv_rep(struct dr_cm *cm, uint32_t ip4, const struct dr_mad *mad)
{
	struct dr_cm_rep rep;
	struct dr_cm_id *id;
	struct dr_cm_peer *pe;

	dr_cm_rep_unpack(mad->body, &rep);
	id = id_by_local(cm, rep.remote_comm_id);
	if (!id || !id->active || id->peer_ip4 != ip4) {
		/* cm.c: a REP for nobody is refused as stale */
		issue_rej(cm, ip4, mad->tid, rep.local_comm_id, 1, DR_CM_REJ_STALE_CONN);
		return;
	}
	if (id->state != DR_CMS_REQ_SENT) {
		/* our RTU was lost: send it again */
		cm->stats.dup_reps++;
		if (id->state == DR_CMS_ESTABLISHED && id->remote_comm_id == rep.local_comm_id)
			send_rtu(id);
		return;
	}
	id->remote_comm_id = rep.local_comm_id;
	pe = &id->peer;
	pe->ip4 = ip4;
	pe->port = id->remote_port;
	pe->dst_port = id->remote_port;
	pe->qpn = rep.local_qpn;
	pe->start_psn = rep.starting_psn;
	pe->responder_resources = rep.responder_resources;
	pe->initiator_depth = rep.initiator_depth;
	pe->rnr_retry_count = rep.rnr_retry_count;
	pe->retry_count = id->local.retry_count;
	pe->path_mtu = id->local.path_mtu;
	pe->ack_timeout = rep.target_ack_delay;
	pe->ca_guid = rep.local_ca_guid;
	/* cma.c cma_rep_recv: the QP goes RTR/RTS (in the event) before RTU */
	set_state(id, DR_CMS_ESTABLISHED);
	emit(id, DR_CM_EV_ESTABLISHED, 0, rep.private_data, DR_CM_REP_PRIV_LEN, NULL);
	if (id->state == DR_CMS_ESTABLISHED)
		send_rtu(id);
	if (id->released) /* the caller gave up on it meanwhile */
		dr_cm_disconnect(id);
}

static void recv_rtu(struct dr_cm *cm, uint32_t ip4, const struct dr_mad *mad)
{
	struct dr_cm_rtu rtu;
	struct dr_cm_id *id;

	dr_cm_rtu_unpack(mad->body, &rtu);
	id = id_by_local(cm, rtu.remote_comm_id);
	if (id && !id->active && id->peer_ip4 == ip4 && id->remote_comm_id == rtu.local_comm_id)
		dr_cm_established(id);
}

static void recv_rej(struct dr_cm *cm, uint32_t ip4, const struct dr_mad *mad)
{
	struct dr_cm_rej rej;
	struct dr_cm_id *id;

	dr_cm_rej_unpack(mad->body, &rej);
	id = id_by_local(cm, rej.remote_comm_id);
	if (!id || id->peer_ip4 != ip4)
		return;
	if (id->state == DR_CMS_REQ_SENT || id->state == DR_CMS_REP_SENT) {
		to_closed(id);
		emit(id, DR_CM_EV_REJECTED, rej.reason, rej.private_data, DR_CM_REJ_PRIV_LEN, NULL);
		if (id->released)
			id_free(id);
	}
}

static void recv_dreq(struct dr_cm *cm, uint32_t ip4, const struct dr_mad *mad)
{
	struct dr_cm_dreq dreq;
	struct dr_cm_id *id;

	dr_cm_dreq_unpack(mad->body, &dreq);
	id = id_by_local(cm, dreq.remote_comm_id);
	if (!id || id->peer_ip4 != ip4) {
		/* cm.c cm_issue_drep: answer a DREQ for nobody, so the peer
		 * stops asking */
		send_drep(cm, ip4, mad->tid, dreq.remote_comm_id, dreq.local_comm_id);
		return;
	}
	send_drep(cm, ip4, mad->tid, id->local_comm_id, id->remote_comm_id);
	switch (id->state) {
	case DR_CMS_REP_SENT:
	case DR_CMS_ESTABLISHED:
	case DR_CMS_DREQ_SENT: /* both sides disconnected at once */
		to_timewait(id);
		emit(id, DR_CM_EV_DISCONNECTED, 0, dreq.private_data, DR_CM_DREQ_PRIV_LEN, NULL);
		break;
	default:
		cm->stats.dup_dreqs++;
		break;
	}
}

static void recv_drep(struct dr_cm *cm, uint32_t ip4, const struct dr_mad *mad)
{
	struct dr_cm_drep drep;
	struct dr_cm_id *id;

	dr_cm_drep_unpack(mad->body, &drep);
	id = id_by_local(cm, drep.remote_comm_id);
	if (!id || id->peer_ip4 != ip4)
		return;
	if (id->state == DR_CMS_TIMEWAIT && id->drep_awaited) {
		/* the answer to our DREQ after the peer's crossed it */
		id->drep_awaited = false;
		return;
	}
	if (id->state != DR_CMS_DREQ_SENT)
		return;
	id->drep_awaited = false;
	to_timewait(id);
	emit(id, DR_CM_EV_DISCONNECTED, 0, drep.private_data, DR_CM_DREP_PRIV_LEN, NULL);
}

static void recv_mra(struct dr_cm *cm, uint32_t ip4, const struct dr_mad *mad)
{
	struct dr_cm_mra mra;
	struct dr_cm_id *id;

	dr_cm_mra_unpack(mad->body, &mra);
	id = id_by_local(cm, mra.remote_comm_id);
	/* the peer needs more time: wait its service timeout (IBA 12.6.6) */
	if (id && id->peer_ip4 == ip4 && id->deadline_ns != UINT64_MAX)
		id->deadline_ns = cm->ops->now_ns(cm->ctx) + mad_timeout_ns(cm) +
				  (4096ull << mra.service_timeout);
}

void dr_cm_recv(struct dr_cm *cm, uint32_t src_ip4, const void *buf, size_t len)
{
	struct dr_mad mad;

	cm->stats.rx_mads++;
	if (dr_mad_parse(buf, len, &mad) || !dr_mad_is_cm(&mad) ||
	    mad.method != DR_MAD_METHOD_SEND) {
		cm->stats.rx_bad++;
		return;
	}
	switch (mad.attr_id) {
	case DR_CM_ATTR_REQ:
		recv_req(cm, src_ip4, &mad);
		break;
	case DR_CM_ATTR_REP:
		recv_rep(cm, src_ip4, &mad);
		break;
	case DR_CM_ATTR_RTU:
		recv_rtu(cm, src_ip4, &mad);
		break;
	case DR_CM_ATTR_REJ:
		recv_rej(cm, src_ip4, &mad);
		break;
	case DR_CM_ATTR_DREQ:
		recv_dreq(cm, src_ip4, &mad);
		break;
	case DR_CM_ATTR_DREP:
		recv_drep(cm, src_ip4, &mad);
		break;
	case DR_CM_ATTR_MRA:
		recv_mra(cm, src_ip4, &mad);
		break;
	default:
		cm->stats.rx_bad++; /* LAP/APR/SIDR: not spoken */
		break;
	}
	rearm(cm);
}

/* One id's timer fired: resend, or give up. */
static void id_timeout(struct dr_cm_id *id)
{
	struct dr_cm *cm = id->cm;

	if (id->state == DR_CMS_TIMEWAIT) {
		to_closed(id);
		if (id->released)
			id_free(id);
		return;
	}
	if (id->retries_left) {
		id->retries_left--;
		cm->stats.resent++;
		id->deadline_ns = cm->ops->now_ns(cm->ctx) + mad_timeout_ns(cm);
		send_raw(cm, id->peer_ip4, id->last_mad);
		return;
	}
	switch (id->state) {
	case DR_CMS_REQ_SENT:
	case DR_CMS_REP_SENT:
		/* IBA 12.9.8.1: tell the peer we gave up (REJ timeout) */
		send_rej(id, id->state == DR_CMS_REQ_SENT ? 0 : 1, DR_CM_REJ_TIMEOUT, NULL, 0);
		to_closed(id);
		emit(id, DR_CM_EV_UNREACHABLE, 0, NULL, 0, NULL);
		break;
	case DR_CMS_DREQ_SENT:
		/* the peer is gone: we are disconnected all the same */
		id->drep_awaited = false;
		to_timewait(id);
		emit(id, DR_CM_EV_DISCONNECTED, 0, NULL, 0, NULL);
		return;
	default:
		id->deadline_ns = UINT64_MAX;
		break;
	}
	if (id->released && id->state == DR_CMS_CLOSED)
		id_free(id);
}

int dr_cm_mad_frame(struct dr_cm *cm, uint32_t dst_ip4, const uint8_t *mad, void *buf,
		    size_t cap)
{
	struct dr_pkt_desc d;

	dr_pkt_desc_init(&d);
	d.src_ip4 = cm->cfg.local_ip4;
	d.dst_ip4 = dst_ip4;
	d.sport = dr_udp_sport(0, DR_GSI_QPN, DR_GSI_QPN);
	d.opcode = DR_OP_UD_SEND_ONLY;
	d.dqpn = DR_GSI_QPN;
	d.ackreq = true; /* as rxe sends its GSI MADs */
	d.psn = cm->gsi_psn++ & DR_PSN_MASK;
	d.deth.qkey = DR_GSI_QKEY;
	d.deth.sqpn = DR_GSI_QPN;
	d.payload = mad;
	d.payload_len = DR_MAD_LEN;
	return dr_pkt_build(&d, buf, cap);
}

bool dr_cm_disconnecting(const struct dr_cm *cm)
{
	/* a DREQ out and unanswered: its DREP is on its way, also when the
	 * peer's own DREQ crossed it and we are in time-wait already (the
	 * peer answers every DREQ); a closed port would meet it with ICMP */
	for (const struct dr_cm_id *id = cm->ids; id; id = id->next)
		if (id->state == DR_CMS_DREQ_SENT ||
		    (id->state == DR_CMS_TIMEWAIT && id->drep_awaited))
			return true;
	return false;
}

void dr_cm_peer_unreachable(struct dr_cm *cm, uint32_t ip4)
{
	uint64_t now = cm->ops->now_ns(cm->ctx);

	for (struct dr_cm_id *id = cm->ids; id; id = id->next)
		if (id->peer_ip4 == ip4 && id->deadline_ns != UINT64_MAX &&
		    (id->state == DR_CMS_REQ_SENT || id->state == DR_CMS_REP_SENT ||
		     id->state == DR_CMS_DREQ_SENT)) {
			id->retries_left = 0;
			id->fail_err = -EHOSTUNREACH;
			id->deadline_ns = now;
		}
	dr_cm_tick(cm);
}

void dr_cm_tick(struct dr_cm *cm)
{
	uint64_t now = cm->ops->now_ns(cm->ctx);
	bool again = true;

	/* an event callback may add or free ids: rescan after each timeout */
	while (again) {
		again = false;
		for (struct dr_cm_id *id = cm->ids; id; id = id->next)
			if (id->deadline_ns <= now) {
				id_timeout(id);
				again = true;
				break;
			}
	}
	rearm(cm);
}
