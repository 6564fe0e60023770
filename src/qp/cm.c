// SPDX-License-Identifier: BSD-2-Clause
/*
 * The IB connection manager, as the Linux CM and rdma_cm run it over
 * RoCEv2 (IBA 12.6-12.9; drivers/infiniband/core/cm.c and cma.c, as
 * summarised in docs/protocol.md C):
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
 *
 * Against peers that lie (issue 11): IDs from getrandom(2); a MAD acts
 * on a connection only if it comes from the connection's peer address and
 * names both communication IDs (and the QPN, where it carries one) -- an
 * off-path forger has to guess 64 random bits or more; mismatches are
 * answered exactly as MADs for nobody are, so that the answer tells no
 * forger which half of a guess was right.  Lookups go through keyed hash
 * tables and deadlines through a heap; a listener holds at most its
 * backlog of unanswered requests, each for as long as its REQ says the
 * peer waits.
 *
 * Many processes on one interface (issue 12): each runs its own CM and
 * sees every MAD; what a MAD names that this CM does not have is asked of
 * ops->whose ("other CMs on the interface" below), and comm IDs are unique
 * across the CMs through ops->comm_id_claim.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>

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
    [DR_CM_EV_DISCONNECTED] = "DISCONNECTED", [DR_CM_EV_CONNREQ_GONE] = "CONNREQ_GONE",
};

const char *const dr_cm_drop_names[DR_CM_DROP_NUM] = {
    [DR_CM_DROP_NO_ID] = "no_id",	  [DR_CM_DROP_ADDR] = "addr",
    [DR_CM_DROP_COMM_ID] = "comm_id",	  [DR_CM_DROP_QPN] = "qpn",
    [DR_CM_DROP_STATE] = "state",	  [DR_CM_DROP_BACKLOG] = "backlog",
    [DR_CM_DROP_SRC_SHARE] = "src_share", [DR_CM_DROP_NOMEM] = "nomem",
    [DR_CM_DROP_OTHER_CM] = "other_cm",	  [DR_CM_DROP_RESPONDER] = "responder",
};

struct dr_cm_listener {
	struct dr_cm_listener *next;
	struct dr_cm *cm;
	uint16_t port;
	void *ctx;
	unsigned backlog;	/* at most this many requests unanswered */
	unsigned pending;	/* requests unanswered now */
	struct dr_cm_id *phead; /* ... a list through id->pnext */
};

/* Requests one address holds unanswered on one listener. */
struct cm_src {
	struct dr_cm_hnode hn; /* key: port << 32 | address */
	unsigned n;
};

#define CM_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* rdma_cm values (cma.c): CMA_CM_RESPONSE_TIMEOUT, CMA_MAX_CM_RETRIES */
#define CM_DEF_RESP_TIMEOUT 20
#define CM_DEF_MAX_RETRIES  15
#define CM_DEF_TIMEWAIT_NS  1000000000ull
#define CM_HOP_LIMIT	    64

static void cm_log(struct dr_cm *cm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- random bits ---------------------------------------------------------- */

/*
 * Comm IDs, TIDs and the hash secret come from the engine's random source
 * (ids.c, getrandom(2), the kernel's CSPRNG): a forger who saw every ID of
 * its own connections (a REJ echoes ours) learns nothing of the next one,
 * which the xorshift generator here before gave away after three samples.
 */
static int cm_random(struct dr_cm *cm, void *out, size_t n)
{
	int ret = dr_rand_bytes(out, n);

	if (ret)
		cm_log(cm, "cm: getrandom(2) failed: %s; no CM identifiers without it",
		       strerror(-ret));
	return ret;
}

/* A 32-bit comm ID or a 64-bit TID: never 0 (0 means "none" in a REJ). */
static int cm_random32(struct dr_cm *cm, uint32_t *v)
{
	int ret;

	do
		ret = cm_random(cm, v, sizeof(*v));
	while (!ret && !*v);
	return ret;
}

static int cm_random64(struct dr_cm *cm, uint64_t *v)
{
	int ret;

	do
		ret = cm_random(cm, v, sizeof(*v));
	while (!ret && !*v);
	return ret;
}

/* ---- hash tables ---------------------------------------------------------- */

/* splitmix64's finaliser around a secret, twice: a peer that picks the
 * keys (its comm IDs, its address) cannot know which of them share a
 * chain.  Chains stay short anyway: every table holds at most the ids
 * alive, and those are bounded by the listeners' backlogs and the
 * application's connections. */
static uint64_t cm_mix(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static size_t htab_slot(const struct dr_cm *cm, const struct dr_cm_htab *t, uint64_t key)
{
	return (size_t)cm_mix(cm_mix(key ^ cm->hkey[0]) ^ cm->hkey[1]) & t->mask;
}

#define CM_HTAB_MIN 64

static int htab_init(struct dr_cm_htab *t)
{
	t->b = calloc(CM_HTAB_MIN, sizeof(*t->b));
	t->mask = CM_HTAB_MIN - 1;
	t->n = 0;
	return t->b ? 0 : -ENOMEM;
}

static struct dr_cm_hnode *htab_find(const struct dr_cm *cm, const struct dr_cm_htab *t,
				     uint64_t key)
{
	for (struct dr_cm_hnode *n = t->b[htab_slot(cm, t, key)]; n; n = n->next)
		if (n->key == key)
			return n;
	return NULL;
}

/* Twice the buckets once there are two nodes a bucket; if memory is short
 * the chains grow longer instead. */
static void htab_grow(const struct dr_cm *cm, struct dr_cm_htab *t)
{
	size_t nb = (t->mask + 1) * 2;
	struct dr_cm_htab g = {.b = calloc(nb, sizeof(*t->b)), .mask = nb - 1, .n = t->n};

	if (!g.b)
		return;
	for (size_t i = 0; i <= t->mask; i++)
		while (t->b[i]) {
			struct dr_cm_hnode *n = t->b[i];
			size_t s = htab_slot(cm, &g, n->key);

			t->b[i] = n->next;
			n->next = g.b[s];
			g.b[s] = n;
		}
	free(t->b);
	*t = g;
}

static void htab_add(const struct dr_cm *cm, struct dr_cm_htab *t, struct dr_cm_hnode *n)
{
	size_t s;

	if (t->n >= 2 * (t->mask + 1))
		htab_grow(cm, t);
	s = htab_slot(cm, t, n->key);
	n->next = t->b[s];
	t->b[s] = n;
	t->n++;
}

static void htab_del(const struct dr_cm *cm, struct dr_cm_htab *t, struct dr_cm_hnode *n)
{
	for (struct dr_cm_hnode **pp = &t->b[htab_slot(cm, t, n->key)]; *pp; pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			t->n--;
			return;
		}
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

/* The ids with a deadline form a binary min-heap on it (cm->heap, each id
 * knowing its place), so the next deadline is the root and a flood of
 * requests costs O(log n) a timer, not a walk over every id. */
static bool heap_less(const struct dr_cm *cm, size_t a, size_t b)
{
	return cm->heap[a]->deadline_ns < cm->heap[b]->deadline_ns;
}

static void heap_swap(struct dr_cm *cm, size_t a, size_t b)
{
	struct dr_cm_id *t = cm->heap[a];

	cm->heap[a] = cm->heap[b];
	cm->heap[b] = t;
	cm->heap[a]->heap_idx = a;
	cm->heap[b]->heap_idx = b;
}

static void heap_fix(struct dr_cm *cm, size_t i)
{
	while (i && heap_less(cm, i, (i - 1) / 2)) {
		heap_swap(cm, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < cm->heap_n && heap_less(cm, l, m))
			m = l;
		if (l + 1 < cm->heap_n && heap_less(cm, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		heap_swap(cm, i, m);
		i = m;
	}
}

/* Room for one more id's deadline, reserved when the id is made so that
 * arming a timer never fails. */
static int heap_reserve(struct dr_cm *cm, size_t n)
{
	struct dr_cm_id **h;
	size_t cap;

	if (n <= cm->heap_cap)
		return 0;
	cap = cm->heap_cap ? cm->heap_cap * 2 : CM_HTAB_MIN;
	h = realloc(cm->heap, cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	cm->heap = h;
	cm->heap_cap = cap;
	return 0;
}

static void set_deadline(struct dr_cm_id *id, uint64_t deadline_ns)
{
	struct dr_cm *cm = id->cm;
	size_t i = id->heap_idx;

	if (id->deadline_ns == UINT64_MAX) {
		id->deadline_ns = deadline_ns;
		if (deadline_ns == UINT64_MAX)
			return;
		i = id->heap_idx = cm->heap_n++;
		cm->heap[i] = id;
		heap_fix(cm, i);
		return;
	}
	id->deadline_ns = deadline_ns;
	if (deadline_ns != UINT64_MAX) {
		heap_fix(cm, i);
		return;
	}
	/* off the heap: the last one takes its place */
	if (i != --cm->heap_n) {
		cm->heap[i] = cm->heap[cm->heap_n];
		cm->heap[i]->heap_idx = i;
		heap_fix(cm, i);
	}
}

uint64_t dr_cm_deadline_ns(const struct dr_cm *cm)
{
	return cm->heap_n ? cm->heap[0]->deadline_ns : UINT64_MAX;
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

static void pending_leave(struct dr_cm_id *id);

/* ---- annotations ("CM state: OLD -> NEW (why)") ----------------------------- */

static bool cm_noting(const struct dr_cm *cm)
{
	return cm->ops->note && (!cm->ops->noting || cm->ops->noting(cm->ctx));
}

/* The CM message a MAD is, by its attribute ID, for notes. */
static const char *mad_name(const uint8_t *mad)
{
	switch (mad[16] << 8 | mad[17]) {
	case DR_CM_ATTR_REQ:
		return "REQ";
	case DR_CM_ATTR_MRA:
		return "MRA";
	case DR_CM_ATTR_REJ:
		return "REJ";
	case DR_CM_ATTR_REP:
		return "REP";
	case DR_CM_ATTR_RTU:
		return "RTU";
	case DR_CM_ATTR_DREQ:
		return "DREQ";
	case DR_CM_ATTR_DREP:
		return "DREP";
	default:
		return "MAD";
	}
}

/* A state change: on the MAD being received, which caused it, or on the
 * next MAD sent, which carries it (a change neither makes -- a timeout
 * that sends nothing, a call of the caller's -- goes unannotated). */
static void note_state(struct dr_cm *cm, enum dr_cm_state from, enum dr_cm_state to)
{
	char text[96];

	if (!cm_noting(cm))
		return;
	if (cm->rx_mad) {
		snprintf(text, sizeof(text), "CM state: %s -> %s (%s received)",
			 dr_cm_state_names[from], dr_cm_state_names[to], mad_name(cm->rx_mad));
		cm->ops->note(cm->ctx, cm->rx_mad, text);
	} else if (cm->nchg < sizeof(cm->chg) / sizeof(cm->chg[0])) {
		cm->chg[cm->nchg][0] = (uint8_t)from;
		cm->chg[cm->nchg++][1] = (uint8_t)to;
	}
}

/* The state changes a MAD about to be sent carries. */
static void note_sent(struct dr_cm *cm, const uint8_t *mad)
{
	char text[96];

	for (unsigned i = 0; i < cm->nchg; i++) {
		snprintf(text, sizeof(text), "CM state: %s -> %s (%s sent)",
			 dr_cm_state_names[cm->chg[i][0]], dr_cm_state_names[cm->chg[i][1]],
			 mad_name(mad));
		cm->ops->note(cm->ctx, mad, text);
	}
	cm->nchg = 0;
}

static void set_state(struct dr_cm_id *id, enum dr_cm_state st)
{
	cm_log(id->cm, "cm id %08x: %s -> %s", id->local_comm_id, dr_cm_state_names[id->state],
	       dr_cm_state_names[st]);
	if (st != id->state)
		note_state(id->cm, id->state, st);
	/* answered (or gone): no longer held against the listener's backlog */
	if (id->state == DR_CMS_REQ_RCVD && st != DR_CMS_REQ_RCVD)
		pending_leave(id);
	id->state = st;
}

/* ---- addresses: GIDs, IPv4 ones mapped (::ffff:a.b.c.d) ------------------- */

static const uint8_t v4_mapped[12] = {[10] = 0xff, [11] = 0xff};

static bool gid_is4(const uint8_t *gid)
{
	return !memcmp(gid, v4_mapped, 12);
}

static uint32_t gid_ip4(const uint8_t *gid)
{
	return (uint32_t)gid[12] << 24 | (uint32_t)gid[13] << 16 | (uint32_t)gid[14] << 8 | gid[15];
}

/* 32 bits that stand for an address in the hash keys: the IPv4 address
 * itself; for IPv6 a fold under the tables' secret (a match on the key is
 * confirmed on the whole address, id_by_remote) */
static uint32_t gid_key(const struct dr_cm *cm, const uint8_t *gid)
{
	uint64_t a, b;

	if (gid_is4(gid))
		return gid_ip4(gid);
	memcpy(&a, gid, 8);
	memcpy(&b, gid + 8, 8);
	a = cm_mix(cm_mix(a ^ cm->hkey[1]) ^ b);
	return (uint32_t)(a ^ (a >> 32));
}

/* for the log: %08x for IPv4, as the IPv4 CM always said */
struct cm_addr_str {
	char s[INET6_ADDRSTRLEN];
};
static struct cm_addr_str addr_str(const uint8_t *gid)
{
	struct cm_addr_str r;

	if (gid_is4(gid))
		snprintf(r.s, sizeof(r.s), "%08x", gid_ip4(gid));
	else
		inet_ntop(AF_INET6, gid, r.s, sizeof(r.s));
	return r;
}

static void drop(struct dr_cm *cm, enum dr_cm_drop why, const char *what, const uint8_t *ip)
{
	cm->stats.drop[why]++;
	cm_log(cm, "cm: %s from %s dropped: %s", what, addr_str(ip).s, dr_cm_drop_names[why]);
}

/* ---- other CMs on the interface (ops->whose) -------------------------------
 *
 * Every process on a shared interface runs its own CM and sees every MAD.
 * A MAD that names an id or a listener of this CM is this CM's, as ever.
 * One that names what this CM does not have -- a port nobody here listens
 * on, a comm ID no id here has -- may be another CM's, and then only that
 * one acts on it; if nobody on the host has it, exactly one CM (the host's
 * CM responder) answers it as a lone CM would.  The comm IDs are unique
 * across the CMs (ops->comm_id_claim), so "whose comm ID" is one question.
 */

/* Does this CM answer a MAD that names nothing it has?  Dropped and
 * counted if not. */
static bool unowned_mine(struct dr_cm *cm, enum dr_cm_key key, uint32_t v, const char *what,
			 const uint8_t *ip)
{
	enum dr_cm_whose w = cm->ops->whose ? cm->ops->whose(cm->ctx, key, v) : DR_CM_WHOSE_MINE;

	if (w == DR_CM_WHOSE_OTHER)
		drop(cm, DR_CM_DROP_OTHER_CM, what, ip);
	else if (w == DR_CM_WHOSE_NOBODY)
		drop(cm, DR_CM_DROP_RESPONDER, what, ip);
	return w == DR_CM_WHOSE_MINE;
}

/* Drop a MAD nobody answers: one that names another CM's comm ID is that
 * CM's business, not a MAD for nobody, and is counted apart. */
static void drop_named(struct dr_cm *cm, enum dr_cm_drop why, uint32_t comm_id, const char *what,
		       const uint8_t *ip)
{
	if (why == DR_CM_DROP_NO_ID && comm_id && cm->ops->whose &&
	    cm->ops->whose(cm->ctx, DR_CM_KEY_COMM_ID, comm_id) == DR_CM_WHOSE_OTHER)
		why = DR_CM_DROP_OTHER_CM;
	drop(cm, why, what, ip);
}

/* ---- sending ------------------------------------------------------------- */

static int send_raw(struct dr_cm *cm, const uint8_t *ip, const uint8_t *mad)
{
	cm->stats.tx_mads++;
	if (cm->nchg)
		note_sent(cm, mad);
	if (cm->cfg.ipv6)
		return cm->ops->send_mad6(cm->ctx, ip, mad);
	return cm->ops->send_mad(cm->ctx, gid_ip4(ip), mad);
}

/* Send a MAD on behalf of id and keep it for resends/duplicates; with
 * retries, arm the response timer. */
static int send_kept(struct dr_cm_id *id, const struct dr_mad *mad, bool retried)
{
	struct dr_cm *cm = id->cm;

	dr_mad_build(mad, id->last_mad);
	id->has_last = true;
	id->last_attr = mad->attr_id;
	id->mra_seen = false;
	if (retried) {
		id->retries_left = cm->cfg.max_cm_retries;
		set_deadline(id, cm->ops->now_ns(cm->ctx) + mad_timeout_ns(cm));
	} else {
		set_deadline(id, UINT64_MAX);
	}
	return send_raw(cm, id->peer_gid, id->last_mad);
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
	struct dr_cma_hdr cma = {
	    .cma_version = 0, .ip_version = cm->cfg.ipv6 ? 6 : 4, .src_port = id->local_port};
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
	/* RoCE paths: permissive LIDs when routed (cma.c); GIDs are the IPv6
	 * addresses, or IPv4-mapped */
	req.primary.local_lid = 0xffff;
	req.primary.remote_lid = 0xffff;
	memcpy(req.primary.local_gid, cm->local_gid, 16);
	memcpy(req.primary.remote_gid, id->peer_gid, 16);
	/* cma_get_roce_udp_flow_label(): the passive side derives the QP's
	 * UDP source port from it (A.3) */
	req.primary.flow_label = ((uint32_t)id->local_port * 31 + id->remote_port) & 0xfffff;
	req.primary.hop_limit = CM_HOP_LIMIT;
	req.primary.local_ack_timeout = p->ack_timeout;
	/* the alternate path stays zero: a non-zero LID means "has one" */

	memcpy(cma.src_addr, cm->local_gid, 16);
	memcpy(cma.dst_addr, id->peer_gid, 16);
	if (!cm->cfg.ipv6) {
		/* cma_hdr: 12 zero bytes, then IPv4 */
		memset(cma.src_addr, 0, 12);
		memset(cma.dst_addr, 0, 12);
	}
	dr_cma_hdr_pack(&cma, req.private_data);
	if (p->private_len)
		memcpy(req.private_data + DR_CMA_HDR_LEN, p->private_data, p->private_len);

	req.vendor_id = p->ece_vendor & 0xffffff;
	dr_mad_init_cm(&mad, DR_CM_ATTR_REQ, id->tid);
	mad.attr_mod = req.vendor_id ? p->ece_options : 0;
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
static void issue_rej(struct dr_cm *cm, const uint8_t *ip, uint64_t tid, uint32_t remote_comm_id,
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
	send_raw(cm, ip, buf);
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

static void send_drep(struct dr_cm *cm, const uint8_t *ip, uint64_t tid, uint32_t local_comm_id,
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
	send_raw(cm, ip, buf);
}

/* ---- ids ----------------------------------------------------------------- */

static struct dr_cm_id *id_by_local(struct dr_cm *cm, uint32_t local_comm_id)
{
	struct dr_cm_hnode *n = htab_find(cm, &cm->by_local, local_comm_id);

	return n ? CM_OF(n, struct dr_cm_id, hn_local) : NULL;
}

static uint64_t remote_key(const struct dr_cm *cm, const uint8_t *ip, uint32_t remote_comm_id)
{
	return (uint64_t)gid_key(cm, ip) << 32 | remote_comm_id;
}

/* A passive id by what its REQ said: duplicates of a REQ find it. */
static struct dr_cm_id *id_by_remote(struct dr_cm *cm, const uint8_t *ip, uint32_t remote_comm_id)
{
	struct dr_cm_hnode *n = htab_find(cm, &cm->by_remote, remote_key(cm, ip, remote_comm_id));
	struct dr_cm_id *id = n ? CM_OF(n, struct dr_cm_id, hn_remote) : NULL;

	return id && !memcmp(id->peer_gid, ip, 16) ? id : NULL;
}

/* A new id with a fresh comm ID: random, not 0, unlike every live one.
 * NULL: no memory, or no random bits (logged). */
static struct dr_cm_id *id_new(struct dr_cm *cm, const uint8_t *peer_ip)
{
	struct dr_cm_id *id;

	if (heap_reserve(cm, cm->by_local.n + 1))
		return NULL;
	id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	/* unique on the host too: another CM may share the interface */
	do {
		if (cm_random32(cm, &id->local_comm_id)) {
			free(id);
			return NULL;
		}
	} while (id_by_local(cm, id->local_comm_id) ||
		 (cm->ops->comm_id_claim &&
		  cm->ops->comm_id_claim(cm->ctx, id->local_comm_id) == -EBUSY));
	id->cm = cm;
	memcpy(id->peer_gid, peer_ip, 16);
	id->peer_ip4 = cm->cfg.ipv6 ? 0 : gid_ip4(peer_ip);
	id->deadline_ns = UINT64_MAX;
	id->hn_local.key = id->local_comm_id;
	htab_add(cm, &cm->by_local, &id->hn_local);
	id->next = cm->ids;
	if (cm->ids)
		cm->ids->prev = id;
	cm->ids = id;
	return id;
}

static void id_free(struct dr_cm_id *id)
{
	struct dr_cm *cm = id->cm;

	pending_leave(id);
	set_deadline(id, UINT64_MAX);
	if (cm->ops->comm_id_release)
		cm->ops->comm_id_release(cm->ctx, id->local_comm_id);
	htab_del(cm, &cm->by_local, &id->hn_local);
	if (id->in_by_remote)
		htab_del(cm, &cm->by_remote, &id->hn_remote);
	if (id->prev)
		id->prev->next = id->next;
	else
		cm->ids = id->next;
	if (id->next)
		id->next->prev = id->prev;
	free(id);
}

/* ---- the backlog ------------------------------------------------------------- */

/* per address: an IPv6 one by its fold, so two sources that fold alike
 * share one count (never more generous than a count each) */
static uint64_t src_key(const struct dr_cm *cm, uint16_t port, const uint8_t *ip)
{
	return (uint64_t)port << 32 | gid_key(cm, ip);
}

static struct cm_src *src_of(struct dr_cm *cm, uint16_t port, const uint8_t *ip)
{
	struct dr_cm_hnode *n = htab_find(cm, &cm->src_count, src_key(cm, port, ip));

	return n ? CM_OF(n, struct cm_src, hn) : NULL;
}

/* id (REQ_RCVD) is held against l's backlog and its address's share. */
static int pending_add(struct dr_cm_listener *l, struct dr_cm_id *id)
{
	struct dr_cm *cm = l->cm;
	struct cm_src *src = src_of(cm, l->port, id->peer_gid);

	if (!src) {
		src = calloc(1, sizeof(*src));
		if (!src)
			return -ENOMEM;
		src->hn.key = src_key(cm, l->port, id->peer_gid);
		htab_add(cm, &cm->src_count, &src->hn);
	}
	src->n++;
	id->lsn = l;
	id->pprev = NULL;
	id->pnext = l->phead;
	if (l->phead)
		l->phead->pprev = id;
	l->phead = id;
	l->pending++;
	return 0;
}

static void pending_leave(struct dr_cm_id *id)
{
	struct dr_cm_listener *l = id->lsn;
	struct cm_src *src;

	if (!l)
		return;
	src = src_of(id->cm, l->port, id->peer_gid);
	if (src && !--src->n) {
		htab_del(id->cm, &id->cm->src_count, &src->hn);
		free(src);
	}
	if (id->pprev)
		id->pprev->pnext = id->pnext;
	else
		l->phead = id->pnext;
	if (id->pnext)
		id->pnext->pprev = id->pprev;
	l->pending--;
	id->lsn = NULL;
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
	set_deadline(id, id->cm->ops->now_ns(id->cm->ctx) + id->cm->cfg.timewait_ns);
}

static void to_closed(struct dr_cm_id *id)
{
	set_state(id, DR_CMS_CLOSED);
	set_deadline(id, UINT64_MAX);
}

/* A request never answered is over (err -ETIMEDOUT: it timed out;
 * -ECONNABORTED: the peer withdrew it): CONNREQ_GONE tells the caller,
 * who forgets the id, and it goes. */
static void req_gone(struct dr_cm_id *id, int err)
{
	void *listen_ctx = id->lsn ? id->lsn->ctx : NULL;

	if (err == -ETIMEDOUT)
		id->cm->stats.req_expired++;
	else
		id->cm->stats.req_withdrawn++;
	id->fail_err = err;
	to_closed(id);
	emit(id, DR_CM_EV_CONNREQ_GONE, 0, NULL, 0, listen_ctx);
	id_free(id);
}

/* ---- public calls -------------------------------------------------------- */

int dr_cm_init(struct dr_cm *cm, const struct dr_cm_config *cfg, const struct dr_cm_ops *ops,
	       void *ctx)
{
	int ret;

	if (!ops || (cfg->ipv6 ? !ops->send_mad6 : !ops->send_mad) || !ops->now_ns || !ops->event)
		return -EINVAL;
	memset(cm, 0, sizeof(*cm));
	cm->cfg = *cfg;
	if (cfg->ipv6)
		memcpy(cm->local_gid, cfg->local_ip6, 16);
	else
		dr_gid_from_ipv4(cm->local_gid, cfg->local_ip4);
	if (!cm->cfg.cm_resp_timeout)
		cm->cfg.cm_resp_timeout = CM_DEF_RESP_TIMEOUT;
	if (cm->cfg.cm_resp_timeout > 31 || cm->cfg.max_cm_retries > 15)
		return -EINVAL;
	if (!cm->cfg.timewait_ns)
		cm->cfg.timewait_ns = CM_DEF_TIMEWAIT_NS;
	cm->ops = ops;
	cm->ctx = ctx;
	cm->deadline_ns = UINT64_MAX;
	ret = cm_random(cm, cm->hkey, sizeof(cm->hkey));
	if (ret)
		return ret;
	if (htab_init(&cm->by_local) || htab_init(&cm->by_remote) || htab_init(&cm->src_count) ||
	    heap_reserve(cm, CM_HTAB_MIN)) {
		dr_cm_fini(cm);
		return -ENOMEM;
	}
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
	/* no id is pending any more: the per-address counts are gone too */
	free(cm->by_local.b);
	free(cm->by_remote.b);
	free(cm->src_count.b);
	free(cm->heap);
	memset(&cm->by_local, 0, sizeof(cm->by_local));
	memset(&cm->by_remote, 0, sizeof(cm->by_remote));
	memset(&cm->src_count, 0, sizeof(cm->src_count));
	cm->heap = NULL;
	cm->heap_n = cm->heap_cap = 0;
}

int dr_cm_listen(struct dr_cm *cm, uint16_t port, unsigned backlog, void *ctx,
		 struct dr_cm_listener **out)
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
	l->backlog = backlog ? backlog : 1;
	l->next = cm->lsn;
	cm->lsn = l;
	*out = l;
	return 0;
}

void dr_cm_set_backlog(struct dr_cm_listener *l, unsigned backlog)
{
	l->backlog = backlog ? backlog : 1;
}

unsigned dr_cm_pending(const struct dr_cm_listener *l)
{
	return l->pending;
}

void dr_cm_unlisten(struct dr_cm_listener *l)
{
	struct dr_cm_listener **pp;

	/* the requests it holds live on, answered or timed out as before,
	 * but count against nothing */
	while (l->phead)
		pending_leave(l->phead);
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

static int cm_connect(struct dr_cm *cm, const uint8_t *dst, uint16_t dst_port, uint16_t src_port,
		      const struct dr_cm_conn_param *p, void *ctx, struct dr_cm_id **out)
{
	struct dr_cm_id *id;
	int ret;

	if (!param_ok(p, DR_CM_MAX_USER_DATA) || !dr_ib_mtu_bytes(p->path_mtu))
		return -EINVAL;
	id = id_new(cm, dst);
	if (!id)
		return -ENOMEM;
	/* a random TID rather than cm.c's agent half and comm ID: peers echo
	 * it and route by the CM class (a SEND is no response), and nothing
	 * in it tells a forger about other transactions */
	ret = cm_random64(cm, &id->tid);
	if (ret) {
		id_free(id);
		return ret;
	}
	id->active = true;
	id->ctx = ctx;
	id->local_port = src_port;
	id->remote_port = dst_port;
	id->local = *p;
	id->local.private_data = NULL;
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
	rep.vendor_id = p->ece_vendor & 0xffffff;
	dr_mad_init_cm(&mad, DR_CM_ATTR_REP, id->tid);
	mad.attr_mod = rep.vendor_id ? p->ece_options : 0;
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
	set_deadline(id, UINT64_MAX);
	rearm(id->cm);
	emit(id, DR_CM_EV_ESTABLISHED, 0, NULL, 0, NULL);
}

int dr_cm_disconnect(struct dr_cm_id *id)
{
	struct dr_cm_dreq dreq;
	struct dr_mad mad;
	uint64_t tid;
	int ret;

	if (id->state == DR_CMS_REP_SENT)
		dr_cm_established(id);
	if (id->state != DR_CMS_ESTABLISHED)
		return -EINVAL;
	/* a DREQ is a new transaction (cm.c ib_send_cm_dreq) */
	ret = cm_random64(id->cm, &tid);
	if (ret)
		return ret;
	memset(&dreq, 0, sizeof(dreq));
	dreq.local_comm_id = id->local_comm_id;
	dreq.remote_comm_id = id->remote_comm_id;
	dreq.remote_qpn = id->peer.qpn;
	dr_mad_init_cm(&mad, DR_CM_ATTR_DREQ, tid);
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
	memcpy(pe->gid, id->peer_gid, 16);
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

/* How long a request waits for the application: until the peer has given
 * up by its REQ's own numbers -- (Max CM Retries + 1) tries, each waiting
 * the Remote CM Response Timeout (IBA 12.6.5, 12.7.39) -- or by ours, if
 * sooner (a forged REQ asking 39 hours is held no longer than we would
 * wait ourselves). */
static uint64_t req_wait_ns(const struct dr_cm *cm, const struct dr_cm_req *req)
{
	uint64_t theirs =
	    (uint64_t)(req->max_cm_retries + 1) * (4096ull << (req->remote_cm_resp_timeout & 31));
	uint64_t ours = (uint64_t)(cm->cfg.max_cm_retries + 1) * mad_timeout_ns(cm);

	return theirs < ours ? theirs : ours;
}

static void recv_req(struct dr_cm *cm, const uint8_t *ip, const struct dr_mad *mad)
{
	struct dr_cm_listener *l;
	struct dr_cma_hdr cma;
	struct dr_cm_req req;
	struct dr_cm_id *id;
	struct cm_src *src;
	uint16_t port;

	dr_cm_req_unpack(mad->body, &req);
	id = id_by_remote(cm, ip, req.local_comm_id);
	if (id) {
		/* duplicate REQ (cm.c cm_dup_req_handler): answer from what we
		 * sent; still deciding: nothing to say yet */
		cm->stats.dup_reqs++;
		if (id->state == DR_CMS_REQ_RCVD || !id->has_last)
			return;
		if ((id->state == DR_CMS_TIMEWAIT || id->state == DR_CMS_CLOSED) &&
		    id->last_attr != DR_CM_ATTR_REJ)
			/* that connection is over (cm.c: REJ stale) */
			issue_rej(cm, ip, mad->tid, req.local_comm_id, 0, DR_CM_REJ_STALE_CONN);
		else
			send_raw(cm, ip, id->last_mad);
		return;
	}

	port = (uint16_t)(req.service_id & 0xffff);
	dr_cma_hdr_unpack(req.private_data, &cma);
	/* the caller's few listeners: a list is enough */
	for (l = cm->lsn; l; l = l->next)
		if (l->port == port)
			break;
	if (!l && !unowned_mine(cm,
				(req.service_id & ~0xffffull) == DR_CM_SID_TCP_PS ? DR_CM_KEY_PORT
										  : DR_CM_KEY_NONE,
				port, "REQ", ip))
		return; /* another CM's listener, or another CM answers it */
	if ((req.service_id & ~0xffffull) != DR_CM_SID_TCP_PS || !l || req.transport_type != 0 ||
	    cma.cma_version != 0 || cma.ip_version != (cm->cfg.ipv6 ? 6 : 4)) {
		/* no listener, not RC, or not an rdma_cm header of our family */
		cm->stats.rej_no_listener++;
		cm_log(cm, "cm: REQ for service 0x%016llx from %s: no listener, REJ",
		       (unsigned long long)req.service_id, addr_str(ip).s);
		issue_rej(cm, ip, mad->tid, req.local_comm_id, 0, DR_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	if (!dr_ib_mtu_bytes(req.path_mtu)) {
		cm->stats.rx_bad++;
		issue_rej(cm, ip, mad->tid, req.local_comm_id, 0, DR_CM_REJ_CONSUMER_DEFINED);
		return;
	}
	/* the backlog, and this address's share of it: beyond, silence (see
	 * dr_cm_listen) */
	if (l->pending >= l->backlog) {
		drop(cm, DR_CM_DROP_BACKLOG, "REQ", ip);
		return;
	}
	src = src_of(cm, port, ip);
	if (src && src->n >= DR_CM_SRC_SHARE(l->backlog)) {
		drop(cm, DR_CM_DROP_SRC_SHARE, "REQ", ip);
		return;
	}

	id = id_new(cm, ip);
	if (!id) {
		drop(cm, DR_CM_DROP_NOMEM, "REQ", ip); /* the peer resends */
		return;
	}
	if (pending_add(l, id)) {
		id_free(id);
		drop(cm, DR_CM_DROP_NOMEM, "REQ", ip);
		return;
	}
	id->remote_comm_id = req.local_comm_id;
	id->hn_remote.key = remote_key(cm, ip, req.local_comm_id);
	htab_add(cm, &cm->by_remote, &id->hn_remote);
	id->in_by_remote = true;
	id->tid = mad->tid;
	id->local_port = port;
	id->remote_port = cma.src_port;
	fill_peer_from_req(id, &req, &cma);
	id->peer.ece_vendor = req.vendor_id;
	id->peer.ece_options = req.vendor_id ? mad->attr_mod : 0;
	set_state(id, DR_CMS_REQ_RCVD);
	set_deadline(id, cm->ops->now_ns(cm->ctx) + req_wait_ns(cm, &req));
	emit(id, DR_CM_EV_CONNREQ, 0, req.private_data + DR_CMA_HDR_LEN, DR_CMA_USER_DATA_LEN,
	     l->ctx);
}

/* The id a MAD names by our comm ID, if the MAD comes from its peer: NULL
 * with *why set otherwise. */
static struct dr_cm_id *id_named(struct dr_cm *cm, const uint8_t *ip, uint32_t our_comm_id,
				 enum dr_cm_drop *why)
{
	struct dr_cm_id *id = our_comm_id ? id_by_local(cm, our_comm_id) : NULL;

	if (!id) {
		*why = DR_CM_DROP_NO_ID;
		return NULL;
	}
	if (memcmp(id->peer_gid, ip, 16)) {
		*why = DR_CM_DROP_ADDR;
		return NULL;
	}
	return id;
}

static void recv_rep(struct dr_cm *cm, const uint8_t *ip, const struct dr_mad *mad)
{
	enum dr_cm_drop why = DR_CM_DROP_NO_ID;
	struct dr_cm_rep rep;
	struct dr_cm_id *id;
	struct dr_cm_peer *pe;

	dr_cm_rep_unpack(mad->body, &rep);
	id = id_named(cm, ip, rep.remote_comm_id, &why);
	if (!id || !id->active) {
		/* cm.c: a REP for nobody is refused as stale -- and so is one
		 * that names an id it does not come from, alike, so that the
		 * answer does not tell a forger our comm ID was right */
		if (!id && why == DR_CM_DROP_NO_ID &&
		    !unowned_mine(cm, DR_CM_KEY_COMM_ID, rep.remote_comm_id, "REP", ip))
			return;
		drop(cm, why, "REP", ip);
		issue_rej(cm, ip, mad->tid, rep.local_comm_id, 1, DR_CM_REJ_STALE_CONN);
		return;
	}
	if (id->state != DR_CMS_REQ_SENT) {
		/* our RTU was lost: send it again, to the very REP only */
		if (rep.local_comm_id != id->remote_comm_id)
			drop(cm, DR_CM_DROP_COMM_ID, "REP", ip);
		else if (rep.local_qpn != id->peer.qpn)
			drop(cm, DR_CM_DROP_QPN, "REP", ip);
		else if (id->state != DR_CMS_ESTABLISHED)
			drop(cm, DR_CM_DROP_STATE, "REP", ip);
		else {
			cm->stats.dup_reps++;
			send_rtu(id);
		}
		return;
	}
	id->remote_comm_id = rep.local_comm_id;
	pe = &id->peer;
	pe->ip4 = id->peer_ip4;
	memcpy(pe->gid, id->peer_gid, 16);
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
	pe->ece_vendor = rep.vendor_id;
	pe->ece_options = rep.vendor_id ? mad->attr_mod : 0;
	/* cma.c cma_rep_recv: the QP goes RTR/RTS (in the event) before RTU */
	set_state(id, DR_CMS_ESTABLISHED);
	emit(id, DR_CM_EV_ESTABLISHED, 0, rep.private_data, DR_CM_REP_PRIV_LEN, NULL);
	if (id->state == DR_CMS_ESTABLISHED)
		send_rtu(id);
	if (id->released) /* the caller gave up on it meanwhile */
		dr_cm_disconnect(id);
}

static void recv_rtu(struct dr_cm *cm, const uint8_t *ip, const struct dr_mad *mad)
{
	enum dr_cm_drop why = DR_CM_DROP_NO_ID;
	struct dr_cm_rtu rtu;
	struct dr_cm_id *id;

	dr_cm_rtu_unpack(mad->body, &rtu);
	id = id_named(cm, ip, rtu.remote_comm_id, &why);
	if (id && id->active)
		why = DR_CM_DROP_NO_ID, id = NULL;
	else if (id && rtu.local_comm_id != id->remote_comm_id)
		why = DR_CM_DROP_COMM_ID, id = NULL;
	else if (id && id->state != DR_CMS_REP_SENT)
		why = DR_CM_DROP_STATE, id = NULL; /* also a duplicate RTU */
	if (!id) {
		drop_named(cm, why, rtu.remote_comm_id, "RTU", ip);
		return;
	}
	dr_cm_established(id);
}

static void recv_rej(struct dr_cm *cm, const uint8_t *ip, const struct dr_mad *mad)
{
	enum dr_cm_drop why = DR_CM_DROP_NO_ID;
	struct dr_cm_rej rej;
	struct dr_cm_id *id;

	dr_cm_rej_unpack(mad->body, &rej);
	if (!rej.remote_comm_id) {
		/* a REJ of our REQ_RCVD's REQ names only its sender (it never
		 * heard our comm ID): the active side gave up (REJ timeout) or
		 * changed its mind -- the request is withdrawn */
		id = id_by_remote(cm, ip, rej.local_comm_id);
		if (!id)
			drop(cm, DR_CM_DROP_NO_ID, "REJ", ip);
		else if (id->state != DR_CMS_REQ_RCVD)
			drop(cm, DR_CM_DROP_STATE, "REJ", ip);
		else
			req_gone(id, -ECONNABORTED);
		return;
	}
	id = id_named(cm, ip, rej.remote_comm_id, &why);
	if (!id) {
		drop_named(cm, why, rej.remote_comm_id, "REJ", ip);
		return;
	}
	/* the sender's comm ID: the REJ of our REQ comes before we know it */
	if (id->state != DR_CMS_REQ_SENT && rej.local_comm_id != id->remote_comm_id) {
		drop(cm, DR_CM_DROP_COMM_ID, "REJ", ip);
		return;
	}
	switch (id->state) {
	case DR_CMS_REQ_SENT:
	case DR_CMS_REP_SENT:
		to_closed(id);
		emit(id, DR_CM_EV_REJECTED, rej.reason, rej.private_data, DR_CM_REJ_PRIV_LEN, NULL);
		if (id->released)
			id_free(id);
		break;
	case DR_CMS_REQ_RCVD:
		req_gone(id, -ECONNABORTED);
		break;
	default:
		drop(cm, DR_CM_DROP_STATE, "REJ", ip);
		break;
	}
}

static void recv_dreq(struct dr_cm *cm, const uint8_t *ip, const struct dr_mad *mad)
{
	enum dr_cm_drop why = DR_CM_DROP_NO_ID;
	struct dr_cm_dreq dreq;
	struct dr_cm_id *id;

	dr_cm_dreq_unpack(mad->body, &dreq);
	id = id_named(cm, ip, dreq.remote_comm_id, &why);
	if (id && dreq.local_comm_id != id->remote_comm_id)
		why = DR_CM_DROP_COMM_ID, id = NULL;
	else if (id && dreq.remote_qpn != id->local.qpn)
		why = DR_CM_DROP_QPN, id = NULL;
	if (!id) {
		/* cm.c cm_issue_drep: answer a DREQ for nobody, so the peer
		 * stops asking -- and one that does not match, alike: the
		 * answer must not tell which half of a forger's guess was
		 * right.  The DREP only echoes the DREQ's IDs. */
		if (why == DR_CM_DROP_NO_ID &&
		    !unowned_mine(cm, DR_CM_KEY_COMM_ID, dreq.remote_comm_id, "DREQ", ip))
			return;
		drop(cm, why, "DREQ", ip);
		send_drep(cm, ip, mad->tid, dreq.remote_comm_id, dreq.local_comm_id);
		return;
	}
	send_drep(cm, ip, mad->tid, id->local_comm_id, id->remote_comm_id);
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

static void recv_drep(struct dr_cm *cm, const uint8_t *ip, const struct dr_mad *mad)
{
	enum dr_cm_drop why = DR_CM_DROP_NO_ID;
	struct dr_cm_drep drep;
	struct dr_cm_id *id;

	dr_cm_drep_unpack(mad->body, &drep);
	id = id_named(cm, ip, drep.remote_comm_id, &why);
	if (id && drep.local_comm_id != id->remote_comm_id)
		why = DR_CM_DROP_COMM_ID, id = NULL;
	else if (id && id->state != DR_CMS_DREQ_SENT &&
		 !(id->state == DR_CMS_TIMEWAIT && id->drep_awaited))
		why = DR_CM_DROP_STATE, id = NULL;
	if (!id) {
		drop_named(cm, why, drep.remote_comm_id, "DREP", ip);
		return;
	}
	id->drep_awaited = false;
	if (id->state == DR_CMS_TIMEWAIT)
		return; /* the answer to our DREQ after the peer's crossed it */
	to_timewait(id);
	emit(id, DR_CM_EV_DISCONNECTED, 0, drep.private_data, DR_CM_DREP_PRIV_LEN, NULL);
}

static void recv_mra(struct dr_cm *cm, const uint8_t *ip, const struct dr_mad *mad)
{
	enum dr_cm_drop why = DR_CM_DROP_NO_ID;
	struct dr_cm_mra mra;
	struct dr_cm_id *id;

	dr_cm_mra_unpack(mad->body, &mra);
	id = id_named(cm, ip, mra.remote_comm_id, &why);
	/* an MRA of our REQ carries the sender's new comm ID, one of our REP
	 * the one we know; each extends the wait once (cm.c moves to
	 * MRA_REQ_RCVD / MRA_REP_RCVD and takes no second) */
	if (id && id->state == DR_CMS_REP_SENT && mra.local_comm_id != id->remote_comm_id)
		why = DR_CM_DROP_COMM_ID, id = NULL;
	else if (id && !((id->state == DR_CMS_REQ_SENT && mra.msg_mraed == 0) ||
			 (id->state == DR_CMS_REP_SENT && mra.msg_mraed == 1)))
		why = DR_CM_DROP_STATE, id = NULL;
	else if (id && (id->mra_seen || id->deadline_ns == UINT64_MAX))
		why = DR_CM_DROP_STATE, id = NULL;
	if (!id) {
		drop_named(cm, why, mra.remote_comm_id, "MRA", ip);
		return;
	}
	/* the peer needs more time: wait its service timeout (IBA 12.6.6) */
	id->mra_seen = true;
	set_deadline(id, cm->ops->now_ns(cm->ctx) + mad_timeout_ns(cm) +
			     (4096ull << (mra.service_timeout & 31)));
}

static void cm_recv(struct dr_cm *cm, const uint8_t *src_ip, const void *buf, size_t len)
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
		recv_req(cm, src_ip, &mad);
		break;
	case DR_CM_ATTR_REP:
		recv_rep(cm, src_ip, &mad);
		break;
	case DR_CM_ATTR_RTU:
		recv_rtu(cm, src_ip, &mad);
		break;
	case DR_CM_ATTR_REJ:
		recv_rej(cm, src_ip, &mad);
		break;
	case DR_CM_ATTR_DREQ:
		recv_dreq(cm, src_ip, &mad);
		break;
	case DR_CM_ATTR_DREP:
		recv_drep(cm, src_ip, &mad);
		break;
	case DR_CM_ATTR_MRA:
		recv_mra(cm, src_ip, &mad);
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
	if (id->state == DR_CMS_REQ_RCVD) {
		/* never answered, and the peer has given up on it by now */
		req_gone(id, -ETIMEDOUT);
		return;
	}
	if (id->retries_left) {
		id->retries_left--;
		cm->stats.resent++;
		set_deadline(id, cm->ops->now_ns(cm->ctx) + mad_timeout_ns(cm));
		send_raw(cm, id->peer_gid, id->last_mad);
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
		set_deadline(id, UINT64_MAX);
		break;
	}
	if (id->released && id->state == DR_CMS_CLOSED)
		id_free(id);
}

static int mad_frame(struct dr_cm *cm, const uint8_t *dst, const uint8_t *mad, void *buf,
		     size_t cap)
{
	struct dr_pkt_desc d;

	dr_pkt_desc_init(&d);
	if (cm->cfg.ipv6) {
		d.ip_version = 6;
		memcpy(d.src_ip6, cm->local_gid, 16);
		memcpy(d.dst_ip6, dst, 16);
	} else {
		d.src_ip4 = cm->cfg.local_ip4;
		d.dst_ip4 = gid_ip4(dst);
	}
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

/* Called when ARP (ND) gives up on ip: rare, so a walk over the ids. */
static void peer_unreachable(struct dr_cm *cm, const uint8_t *ip)
{
	uint64_t now = cm->ops->now_ns(cm->ctx);

	for (struct dr_cm_id *id = cm->ids; id; id = id->next)
		if (!memcmp(id->peer_gid, ip, 16) && id->deadline_ns != UINT64_MAX &&
		    (id->state == DR_CMS_REQ_SENT || id->state == DR_CMS_REP_SENT ||
		     id->state == DR_CMS_DREQ_SENT)) {
			id->retries_left = 0;
			id->fail_err = -EHOSTUNREACH;
			set_deadline(id, now);
		}
	dr_cm_tick(cm);
}

/* ---- the two families' entry points ------------------------------------------ */

int dr_cm_connect(struct dr_cm *cm, uint32_t dst_ip4, uint16_t dst_port, uint16_t src_port,
		  const struct dr_cm_conn_param *p, void *ctx, struct dr_cm_id **out)
{
	uint8_t gid[16];

	if (cm->cfg.ipv6)
		return -EAFNOSUPPORT;
	dr_gid_from_ipv4(gid, dst_ip4);
	return cm_connect(cm, gid, dst_port, src_port, p, ctx, out);
}

int dr_cm_connect6(struct dr_cm *cm, const uint8_t dst_ip6[16], uint16_t dst_port,
		   uint16_t src_port, const struct dr_cm_conn_param *p, void *ctx,
		   struct dr_cm_id **out)
{
	if (!cm->cfg.ipv6 || gid_is4(dst_ip6))
		return -EAFNOSUPPORT;
	return cm_connect(cm, dst_ip6, dst_port, src_port, p, ctx, out);
}

/* cm_recv with the MAD known to the annotations */
static void cm_recv_noted(struct dr_cm *cm, const uint8_t *src_ip, const void *mad, size_t len)
{
	cm->nchg = 0; /* changes no MAD carried: left unannotated */
	cm->rx_mad = len >= DR_MAD_LEN ? mad : NULL;
	cm_recv(cm, src_ip, mad, len);
	cm->rx_mad = NULL;
}

void dr_cm_recv(struct dr_cm *cm, uint32_t src_ip4, const void *mad, size_t len)
{
	uint8_t gid[16];

	if (cm->cfg.ipv6) {
		cm->stats.rx_mads++;
		cm->stats.rx_bad++;
		return;
	}
	dr_gid_from_ipv4(gid, src_ip4);
	cm_recv_noted(cm, gid, mad, len);
}

void dr_cm_recv6(struct dr_cm *cm, const uint8_t src_ip6[16], const void *mad, size_t len)
{
	if (!cm->cfg.ipv6 || gid_is4(src_ip6)) {
		cm->stats.rx_mads++;
		cm->stats.rx_bad++;
		return;
	}
	cm_recv_noted(cm, src_ip6, mad, len);
}

void dr_cm_peer_unreachable(struct dr_cm *cm, uint32_t ip4)
{
	uint8_t gid[16];

	dr_gid_from_ipv4(gid, ip4);
	if (!cm->cfg.ipv6)
		peer_unreachable(cm, gid);
}

void dr_cm_peer_unreachable6(struct dr_cm *cm, const uint8_t ip6[16])
{
	if (cm->cfg.ipv6)
		peer_unreachable(cm, ip6);
}

int dr_cm_mad_frame(struct dr_cm *cm, uint32_t dst_ip4, const uint8_t *mad, void *buf,
		    size_t cap)
{
	uint8_t gid[16];

	if (cm->cfg.ipv6)
		return -EAFNOSUPPORT;
	dr_gid_from_ipv4(gid, dst_ip4);
	return mad_frame(cm, gid, mad, buf, cap);
}

int dr_cm_mad_frame6(struct dr_cm *cm, const uint8_t dst_ip6[16], const uint8_t *mad, void *buf,
		     size_t cap)
{
	if (!cm->cfg.ipv6)
		return -EAFNOSUPPORT;
	return mad_frame(cm, dst_ip6, mad, buf, cap);
}

void dr_cm_tick(struct dr_cm *cm)
{
	uint64_t now = cm->ops->now_ns(cm->ctx);

	cm->nchg = 0; /* changes no MAD carried: left unannotated */
	/* every timeout moves its id's deadline past now or frees it; an
	 * event callback may add or free ids: read the root afresh */
	while (cm->heap_n && cm->heap[0]->deadline_ns <= now)
		id_timeout(cm->heap[0]);
	rearm(cm);
}

bool dr_cm_stats_str(const struct dr_cm *cm, char *buf, size_t len)
{
	const struct dr_cm_stats *st = &cm->stats;
	uint64_t dropped = st->rej_no_listener + st->rx_bad + st->req_expired + st->req_withdrawn;
	size_t off;
	int n;

	for (int i = 0; i < DR_CM_DROP_NUM; i++)
		dropped += st->drop[i];
	n = snprintf(buf, len,
		     "MADs rx %llu tx %llu resent %llu; duplicates: REQ %llu REP %llu DREQ %llu; "
		     "REQs refused (no listener) %llu, malformed %llu; requests expired %llu, "
		     "withdrawn %llu; dropped:",
		     (unsigned long long)st->rx_mads, (unsigned long long)st->tx_mads,
		     (unsigned long long)st->resent, (unsigned long long)st->dup_reqs,
		     (unsigned long long)st->dup_reps, (unsigned long long)st->dup_dreqs,
		     (unsigned long long)st->rej_no_listener, (unsigned long long)st->rx_bad,
		     (unsigned long long)st->req_expired, (unsigned long long)st->req_withdrawn);
	for (int i = 0; i < DR_CM_DROP_NUM && n >= 0 && (size_t)n < len; i++) {
		off = (size_t)n;
		n += snprintf(buf + off, len - off, " %s %llu", dr_cm_drop_names[i],
			      (unsigned long long)st->drop[i]);
	}
	return dropped != 0;
}
