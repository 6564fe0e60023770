// SPDX-License-Identifier: BSD-2-Clause
/*
 * fuzz_mad.c - libFuzzer harness for the IB CM MAD codec (src/roce/cm_mad.c)
 * and, through it, the CM state machine (src/qp/cm.c).
 *
 * Two CMs, A (192.0.2.1) and B (192.0.2.2), joined by an in-memory wire
 * with a virtual clock as tests/test_cm_sm.c joins them.  Each listens on
 * PORT; at the start A connects to B and B to A, so each CM holds a
 * listener, an active connection and a passive one.  The input is a
 * script, one action after another:
 *   - deliver, drop, duplicate or reorder the MADs on the wire;
 *   - advance the clock (resends, time-wait, give-up);
 *   - inject a MAD built field by field with the codec (REQ, REP, RTU, REJ,
 *     DREQ, DREP, MRA or any attribute, with communication IDs, QPNs and
 *     ports taken from the live connections or from the input, from the
 *     real peer's address or another) into either CM;
 *   - inject 256 raw bytes from the input (the CM header made valid or
 *     not), or a MAD from the wire with some bytes changed, or reflected
 *     back to its sender;
 *   - act as the application: connect, accept or reject a pending request,
 *     disconnect, release, established, unlisten/listen, peer unreachable.
 * At the end both applications release everything and the wire and the
 * clocks run until nothing is left to do.
 *
 * Checks (abort with a message when one breaks):
 *   - codec: every 256-byte MAD parses, rebuilds byte-exact (the reserved
 *     header word zeroed), and for each CM message layout (REQ, REP, RTU,
 *     REJ, DREQ, DREP, MRA) packing what was unpacked gives the body with
 *     exactly the bits no field covers cleared, and unpacking that again
 *     gives the same fields; the rdma_cm header and IPv4-mapped GIDs round
 *     trip as well.  Bodies are unpacked from and packed into exact-size
 *     heap buffers, so ASan sees any field outside the 232 bytes;
 *   - every MAD a CM sends passes the codec checks above, and the QP1
 *     frame dr_cm_mad_frame() wraps it in parses and carries it intact;
 *   - the state machine: no crash; each id only moves forward along the
 *     IBA 12.9 state graph (REQ_SENT/REQ_RCVD -> ... -> CLOSED); events
 *     match the state (CONNREQ in REQ_RCVD, ESTABLISHED once, nothing after
 *     REJECTED/UNREACHABLE/DISCONNECTED, never for a released id); a MAD
 *     from one address changes no id that belongs to another; the number
 *     of ids is bounded by what the applications hold plus released ids
 *     still finishing (each with a timer), and once everything is released
 *     and run out no id is left.
 *
 * Build and run: .ci/fuzz.sh; seeds: fuzz/mkseeds_mad.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_cm.h"
#define FUZZ_NAME "fuzz_mad"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the codec ------------------------------------------------------------------------ */

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		abort();
	return p;
}

/*
 * One CM layout: unpack the body (from an exact-size copy), pack it again
 * and compare with the body masked to the bits the layout's fields cover
 * (found by packing a struct of all ones), then unpack the packed body and
 * compare the fields.
 */
#define CHECK_LAYOUT(name, body)                                                                   \
	do {                                                                                       \
		struct dr_cm_##name *m1 = xmalloc(sizeof(*m1)), *m2 = xmalloc(sizeof(*m2)),        \
				    *ones = xmalloc(sizeof(*ones));                                \
		uint8_t *in = xmalloc(DR_MAD_BODY_LEN), *out = xmalloc(DR_MAD_BODY_LEN),           \
			*mask = xmalloc(DR_MAD_BODY_LEN);                                          \
                                                                                                   \
		memcpy(in, body, DR_MAD_BODY_LEN);                                                 \
		memset(ones, 0xff, sizeof(*ones));                                                 \
		memset(mask, 0x77, DR_MAD_BODY_LEN);                                               \
		dr_cm_##name##_pack(ones, mask);                                                   \
		memset(m1, 0, sizeof(*m1));                                                        \
		memset(m2, 0, sizeof(*m2));                                                        \
		dr_cm_##name##_unpack(in, m1);                                                     \
		memset(out, 0x77, DR_MAD_BODY_LEN);                                                \
		dr_cm_##name##_pack(m1, out);                                                      \
		for (unsigned k = 0; k < DR_MAD_BODY_LEN; k++)                                     \
			if (out[k] != (in[k] & mask[k]))                                           \
				fail(#name ": body byte %u packs as %02x, was %02x (mask %02x)",   \
				     k, out[k], in[k], mask[k]);                                   \
		dr_cm_##name##_unpack(out, m2);                                                    \
		if (memcmp(m1, m2, sizeof(*m1)))                                                   \
			fail(#name ": unpack(pack(unpack(body))) differs");                        \
		free(m1);                                                                          \
		free(m2);                                                                          \
		free(ones);                                                                        \
		free(in);                                                                          \
		free(out);                                                                         \
		free(mask);                                                                        \
	} while (0)

static void check_codec(const uint8_t *raw)
{
	uint8_t *buf = xmalloc(DR_MAD_LEN), *again = xmalloc(DR_MAD_LEN);
	struct dr_mad mad, mad2;
	struct dr_cma_hdr cma;
	uint8_t priv[DR_CMA_HDR_LEN];
	uint32_t ip4;

	memcpy(buf, raw, DR_MAD_LEN);
	memset(&mad, 0, sizeof(mad)); /* padding: compared with memcmp below */
	memset(&mad2, 0, sizeof(mad2));
	if (dr_mad_parse(buf, DR_MAD_LEN - 1, &mad) != -EINVAL ||
	    dr_mad_parse(buf, DR_MAD_LEN + 1, &mad) != -EINVAL)
		fail("dr_mad_parse accepts a MAD that is not 256 bytes");
	if (dr_mad_parse(buf, DR_MAD_LEN, &mad))
		fail("dr_mad_parse refuses 256 bytes");
	dr_mad_build(&mad, again);
	for (unsigned k = 0; k < DR_MAD_LEN; k++)
		if (again[k] != ((k == 18 || k == 19) ? 0 : buf[k]))
			fail("MAD rebuilds byte %u as %02x, was %02x", k, again[k], buf[k]);
	if (dr_mad_parse(again, DR_MAD_LEN, &mad2) || memcmp(&mad, &mad2, sizeof(mad)))
		fail("MAD parse(build(parse())) differs");

	CHECK_LAYOUT(req, mad.body);
	CHECK_LAYOUT(rep, mad.body);
	CHECK_LAYOUT(rtu, mad.body);
	CHECK_LAYOUT(rej, mad.body);
	CHECK_LAYOUT(dreq, mad.body);
	CHECK_LAYOUT(drep, mad.body);
	CHECK_LAYOUT(mra, mad.body);

	/* the rdma_cm header at the start of a REQ's private data */
	dr_cma_hdr_unpack(mad.body + 140, &cma);
	dr_cma_hdr_pack(&cma, priv);
	for (unsigned k = 0; k < DR_CMA_HDR_LEN; k++)
		if (priv[k] != (k == 1 ? (mad.body[140 + k] & 0xf0) : mad.body[140 + k]))
			fail("cma header byte %u repacks as %02x, was %02x", k, priv[k],
			     mad.body[140 + k]);
	/* the REQ's primary path GIDs */
	for (unsigned g = 0; g < 2; g++) {
		const uint8_t *gid = mad.body + 56 + 16 * g;
		uint8_t back[16];

		if (dr_gid_to_ipv4(gid, &ip4)) {
			dr_gid_from_ipv4(back, ip4);
			if (memcmp(back, gid, 16))
				fail("IPv4-mapped GID does not round trip");
		}
	}
	free(buf);
	free(again);
}

/* ---- the two CMs ------------------------------------------------------------------ */

#define IP_A  0xc0000201u
#define IP_B  0xc0000202u
#define IP_X  0xc0000266u /* a third host: the attacker */
#define PORT  7471
#define NHELD 512

/* What the application knows about an id it holds. */
struct held {
	struct dr_cm_id *id;
	bool active;
	bool connreq;  /* CONNREQ reported */
	bool est;      /* ESTABLISHED reported */
	bool terminal; /* REJECTED, UNREACHABLE or DISCONNECTED reported */
};

/* One id as last seen in a CM's list. */
struct seen {
	const struct dr_cm_id *id;
	uint32_t comm_id;
	enum dr_cm_state state;
};

struct side {
	struct dr_cm cm;
	uint32_t ip;
	struct dr_cm_listener *lsn;
	struct held held[NHELD];
	unsigned nheld;
	struct seen seen[4 * NHELD];
	unsigned nseen;
	uint8_t policy; /* on CONNREQ: 0 wait, 1 accept, 2 reject, 3 release */
	uint16_t next_port;
};

struct msg {
	uint32_t src, dst;
	uint8_t mad[DR_MAD_LEN];
};
#define WIRE_CAP 256

static struct {
	struct side s[2];
	uint64_t now_ns;
	struct msg wire[WIRE_CAP];
	unsigned nwire;
	struct msg recent[16];
	unsigned nrecent;
	bool draining;
} h;

static struct side *side_of_ip(uint32_t ip)
{
	return ip == IP_A ? &h.s[0] : ip == IP_B ? &h.s[1] : NULL;
}

static int send_mad(void *ctx, uint32_t dst, const uint8_t *mad)
{
	struct side *s = ctx;
	struct msg *m = &h.recent[h.nrecent++ % 16];
	uint8_t frame[DR_CM_FRAME_MAX];
	struct dr_pkt pkt;
	int n;

	m->src = s->ip;
	m->dst = dst;
	memcpy(m->mad, mad, DR_MAD_LEN);
	/* everything the CM sends must be a well-formed MAD, and the frame
	 * the port would wrap it in must carry it to QP1 */
	check_codec(mad);
	n = dr_cm_mad_frame(&s->cm, dst, mad, frame, sizeof(frame));
	if (n < 0 || dr_pkt_parse(frame, (size_t)n, 0, &pkt) != DR_PKT_OK ||
	    pkt.opcode != DR_OP_UD_SEND_ONLY || pkt.dqpn != DR_GSI_QPN ||
	    pkt.payload_len != DR_MAD_LEN || memcmp(pkt.payload, mad, DR_MAD_LEN))
		fail("cm %u: the QP1 frame of a MAD (%d bytes) does not carry it",
		     (unsigned)(s - h.s), n);
	if (!side_of_ip(dst) || h.nwire == WIRE_CAP)
		return 0; /* to nobody, or lost on a full wire */
	h.wire[h.nwire++] = *m;
	return 0;
}

static uint64_t clock_ns(void *ctx)
{
	return h.now_ns;
}

static struct held *held_of(struct side *s, const struct dr_cm_id *id)
{
	for (unsigned k = 0; k < s->nheld; k++)
		if (s->held[k].id == id)
			return &s->held[k];
	return NULL;
}

static bool listed(const struct side *s, const struct dr_cm_id *id)
{
	for (const struct dr_cm_id *p = s->cm.ids; p; p = p->next)
		if (p == id)
			return true;
	return false;
}

static void forget(struct side *s, struct held *hd)
{
	*hd = s->held[--s->nheld];
}

static void release(struct side *s, struct held *hd)
{
	struct dr_cm_id *id = hd->id;

	forget(s, hd);
	dr_cm_release(id);
}

static void on_event(void *ctx, const struct dr_cm_event *ev)
{
	struct side *s = ctx;
	unsigned i = (unsigned)(s - h.s);
	struct dr_cm_id *id = ev->id;
	struct held *hd;
	enum dr_cm_state want;

	if ((unsigned)ev->type >= DR_CM_EV_NUM || !id)
		fail("cm %u: event %d for id %p", i, ev->type, (void *)id);
	if (!listed(s, id))
		fail("cm %u: event %s for an id not in the list", i, dr_cm_event_names[ev->type]);
	if (id->released)
		fail("cm %u: event %s for a released id", i, dr_cm_event_names[ev->type]);
	if (ev->private_len > DR_CM_DREP_PRIV_LEN || (ev->private_len && !ev->private_data))
		fail("cm %u: event private data %zu bytes", i, ev->private_len);
	hd = held_of(s, id);
	if (ev->type == DR_CM_EV_CONNREQ) {
		if (hd || id->active || id->state != DR_CMS_REQ_RCVD)
			fail("cm %u: CONNREQ for a known id, an active id or in state %s", i,
			     dr_cm_state_names[id->state]);
		if (!s->lsn || ev->listen_ctx != s)
			fail("cm %u: CONNREQ without the listener", i);
		if (s->nheld == NHELD) {
			dr_cm_release(id);
			return;
		}
		hd = &s->held[s->nheld++];
		*hd = (struct held){.id = id, .connreq = true};
		switch (h.draining ? 3 : s->policy & 3) {
		case 1: {
			struct dr_cm_conn_param p = {.qpn = 0x100 + i,
						     .start_psn = 0x123456,
						     .responder_resources = 2,
						     .initiator_depth = 2,
						     .rnr_retry_count = 7,
						     .ack_timeout = 14};

			if (dr_cm_accept(id, &p))
				fail("cm %u: accept refused in REQ_RCVD", i);
			break;
		}
		case 2:
			if (dr_cm_reject(id, "no", 2))
				fail("cm %u: reject refused in REQ_RCVD", i);
			break;
		case 3:
			release(s, hd);
			break;
		default:
			break;
		}
		return;
	}
	if (ev->type == DR_CM_EV_CONNREQ_GONE) {
		/* a request the application held and never answered expired
		 * or was withdrawn by its peer: the CM frees the id itself */
		if (!hd || id->active || hd->est || id->state != DR_CMS_CLOSED ||
		    (ev->err != -ETIMEDOUT && ev->err != -ECONNABORTED))
			fail("cm %u: CONNREQ_GONE for an id not held, active or in state %s", i,
			     dr_cm_state_names[id->state]);
		forget(s, hd);
		return;
	}
	if (!hd)
		fail("cm %u: event %s for an id the application never got", i,
		     dr_cm_event_names[ev->type]);
	if (hd->terminal)
		fail("cm %u: event %s after the id's last one", i, dr_cm_event_names[ev->type]);
	switch (ev->type) {
	case DR_CM_EV_ESTABLISHED:
		if (hd->est)
			fail("cm %u: ESTABLISHED twice", i);
		hd->est = true;
		want = DR_CMS_ESTABLISHED;
		break;
	case DR_CM_EV_REJECTED:
	case DR_CM_EV_UNREACHABLE:
		if (hd->est)
			fail("cm %u: %s after ESTABLISHED", i, dr_cm_event_names[ev->type]);
		hd->terminal = true;
		want = DR_CMS_CLOSED;
		break;
	default: /* DISCONNECTED */
		hd->terminal = true;
		want = DR_CMS_TIMEWAIT;
		break;
	}
	if (id->state != want)
		fail("cm %u: event %s in state %s", i, dr_cm_event_names[ev->type],
		     dr_cm_state_names[id->state]);
	if (h.draining && hd->terminal)
		release(s, hd);
}

static const struct dr_cm_ops cm_ops = {
    .send_mad = send_mad,
    .now_ns = clock_ns,
    .event = on_event,
};

/* ---- state invariants ---------------------------------------------------------------- */

/* IBA 12.9 as cm.c runs it: to[s] is the set of states one step from s. */
#define B(s) (1u << DR_CMS_##s)
static const unsigned step_to[DR_CMS_NUM] = {
    [DR_CMS_REQ_SENT] = B(ESTABLISHED) | B(CLOSED),
    [DR_CMS_REQ_RCVD] = B(REP_SENT) | B(TIMEWAIT),
    [DR_CMS_REP_SENT] = B(ESTABLISHED) | B(CLOSED) | B(TIMEWAIT),
    [DR_CMS_ESTABLISHED] = B(DREQ_SENT) | B(TIMEWAIT),
    [DR_CMS_DREQ_SENT] = B(TIMEWAIT),
    [DR_CMS_TIMEWAIT] = B(CLOSED),
    [DR_CMS_CLOSED] = 0,
};

/* states reachable from s in any number of steps (s included) */
static unsigned reach(enum dr_cm_state s)
{
	unsigned set = 1u << s, prev = 0;

	while (set != prev) {
		prev = set;
		for (unsigned k = 0; k < DR_CMS_NUM; k++)
			if (set & (1u << k))
				set |= step_to[k];
	}
	return set;
}

static void check_cm(unsigned i)
{
	struct side *s = &h.s[i];
	struct seen now[4 * NHELD];
	unsigned n = 0, released_live = 0;

	for (const struct dr_cm_id *id = s->cm.ids; id; id = id->next) {
		const struct seen *old = NULL;
		unsigned ok;

		if ((unsigned)id->state >= DR_CMS_NUM)
			fail("cm %u: id state %d", i, id->state);
		if (n == 4 * NHELD)
			fail("cm %u: more than %u ids", i, 4 * NHELD);
		for (unsigned k = 0; k < s->nseen; k++)
			if (s->seen[k].id == id && s->seen[k].comm_id == id->local_comm_id)
				old = &s->seen[k];
		ok =
		    old ? reach(old->state) : reach(id->active ? DR_CMS_REQ_SENT : DR_CMS_REQ_RCVD);
		if (!(ok & (1u << id->state)))
			fail("cm %u: id %08x went %s -> %s", i, id->local_comm_id,
			     old ? dr_cm_state_names[old->state] : "(new)",
			     dr_cm_state_names[id->state]);
		if (id->released) {
			released_live++;
			if (id->deadline_ns == UINT64_MAX)
				fail("cm %u: released id %08x in %s has no timer: never freed", i,
				     id->local_comm_id, dr_cm_state_names[id->state]);
			if (held_of(s, id))
				fail("cm %u: released id still held", i);
		} else if (!held_of(s, id)) {
			fail("cm %u: id %08x (%s) is neither released nor the application's", i,
			     id->local_comm_id, dr_cm_state_names[id->state]);
		}
		now[n++] = (struct seen){id, id->local_comm_id, id->state};
	}
	for (unsigned k = 0; k < s->nheld; k++)
		if (!listed(s, s->held[k].id))
			fail("cm %u: an id the application holds was freed", i);
	if (n != s->nheld + released_live)
		fail("cm %u: %u ids, %u held + %u released", i, n, s->nheld, released_live);
	memcpy(s->seen, now, n * sizeof(now[0]));
	s->nseen = n;
}

static void check_all(void)
{
	check_cm(0);
	check_cm(1);
}

/* A MAD from src must not touch ids that belong to another address. */
struct snap {
	const struct dr_cm_id *id;
	uint32_t comm_id, remote_comm_id, peer_ip4;
	enum dr_cm_state state;
	uint64_t deadline_ns;
	unsigned retries_left;
};

static void recv_mad(struct side *to, uint32_t src, const uint8_t *mad, size_t len)
{
	static struct snap before[4 * NHELD];
	unsigned n = 0;

	for (const struct dr_cm_id *id = to->cm.ids; id && n < 4 * NHELD; id = id->next)
		before[n++] =
		    (struct snap){id,	     id->local_comm_id, id->remote_comm_id, id->peer_ip4,
				  id->state, id->deadline_ns,	id->retries_left};
	dr_cm_recv(&to->cm, src, mad, len);
	for (unsigned k = 0; k < n; k++) {
		const struct snap *b = &before[k];

		if (b->peer_ip4 == src || !listed(to, b->id))
			continue;
		if (b->id->local_comm_id != b->comm_id)
			continue; /* freed and reused: cannot be another address's */
		if (b->id->state != b->state || b->id->deadline_ns != b->deadline_ns ||
		    b->id->remote_comm_id != b->remote_comm_id ||
		    b->id->retries_left != b->retries_left)
			fail("a MAD from %08x changed id %08x of peer %08x (%s -> %s)", src,
			     b->comm_id, b->peer_ip4, dr_cm_state_names[b->state],
			     dr_cm_state_names[b->id->state]);
	}
}

/* ---- actions ----------------------------------------------------------------------------- */

static struct dr_cm_id *pick_id(struct rd *r, struct side *s)
{
	unsigned n = 0, k = u8(r);
	struct dr_cm_id *id;

	for (id = s->cm.ids; id; id = id->next)
		n++;
	if (!n)
		return NULL;
	k %= n;
	for (id = s->cm.ids; k--; id = id->next)
		;
	return id;
}

static void deliver_one(unsigned k)
{
	struct msg m = h.wire[k];
	struct side *to = side_of_ip(m.dst);

	memmove(&h.wire[k], &h.wire[k + 1], (h.nwire - k - 1) * sizeof(h.wire[0]));
	h.nwire--;
	if (to)
		recv_mad(to, m.src, m.mad, DR_MAD_LEN);
}

static void act_wire(struct rd *r)
{
	uint8_t b = u8(r), n = u8(r);
	struct msg m;

	if (!h.nwire)
		return;
	switch (b & 7) {
	case 0:
	case 1:
	case 2:
		for (unsigned c = 0; c < 1u + n % 16 && h.nwire; c++)
			deliver_one(0);
		break;
	case 3:
		h.nwire -= h.nwire > 0; /* drop the newest */
		break;
	case 4: /* drop the oldest */
		memmove(&h.wire[0], &h.wire[1], (h.nwire - 1) * sizeof(h.wire[0]));
		h.nwire--;
		break;
	case 5: /* duplicate k */
		m = h.wire[n % h.nwire];
		recv_mad(side_of_ip(m.dst), m.src, m.mad, DR_MAD_LEN);
		break;
	case 6: /* k out of order */
		deliver_one(n % h.nwire);
		break;
	default: /* swap */
		m = h.wire[0];
		h.wire[0] = h.wire[n % h.nwire];
		h.wire[n % h.nwire] = m;
		break;
	}
}

static void tick_both(void)
{
	dr_cm_tick(&h.s[0].cm);
	dr_cm_tick(&h.s[1].cm);
}

static void act_clock(struct rd *r)
{
	static const uint64_t step[8] = {0,	   1000000,  4000000,	 5000000,
					 20000000, 60000000, 1000000000, 0};
	uint8_t b = u8(r);

	if ((b & 7) == 7) {
		uint64_t d = dr_cm_deadline_ns(&h.s[0].cm);

		if (dr_cm_deadline_ns(&h.s[1].cm) < d)
			d = dr_cm_deadline_ns(&h.s[1].cm);
		if (d != UINT64_MAX && d > h.now_ns)
			h.now_ns = d;
	} else {
		h.now_ns += step[b & 7] + (uint64_t)(b >> 3) * 100000;
	}
	tick_both();
}

static uint32_t pick_src(struct rd *r, unsigned to)
{
	uint8_t b = u8(r);

	switch (b & 3) {
	case 0:
	case 1:
		return h.s[to ^ 1].ip; /* the real peer (or a spoof of it) */
	case 2:
		return IP_X;
	default:
		return u32(r);
	}
}

/* A communication ID as the MAD's sender would name it: the target's own
 * (as "remote") or the target's idea of the sender's (as "local"). */
static uint32_t pick_comm(struct rd *r, struct side *to, bool remote)
{
	uint8_t b = u8(r);
	struct dr_cm_id *id;

	if ((b & 3) == 3)
		return u32(r);
	id = pick_id(r, to);
	if (!id)
		return b;
	if (b & 4)
		return (remote ? id->local_comm_id : id->remote_comm_id) ^ (b >> 3);
	return remote ? id->local_comm_id : id->remote_comm_id;
}

/* A CM MAD built field by field. */
static void act_forge(struct rd *r, unsigned to_i)
{
	static const uint16_t attrs[8] = {
	    DR_CM_ATTR_REQ,  DR_CM_ATTR_REP,  DR_CM_ATTR_RTU, DR_CM_ATTR_REJ,
	    DR_CM_ATTR_DREQ, DR_CM_ATTR_DREP, DR_CM_ATTR_MRA, 0};
	struct side *to = &h.s[to_i];
	uint8_t b = u8(r), fl = u8(r);
	uint32_t src = pick_src(r, to_i);
	struct dr_cm_id *ref = pick_id(r, to);
	uint8_t buf[DR_MAD_LEN];
	struct dr_mad mad;
	uint16_t attr;

	attr = attrs[b & 7] ? attrs[b & 7] : u16(r);
	dr_mad_init_cm(&mad, attr, (fl & 1) ? u64(r) : ref ? ref->tid : 0);
	if (fl & 2)
		mad.method = u8(r);
	switch (mad.attr_id) {
	case DR_CM_ATTR_REQ: {
		struct dr_cm_req m;
		struct dr_cma_hdr cma = {.ip_version = 4, .src_port = u16(r)};

		memset(&m, 0, sizeof(m));
		m.local_comm_id = (fl & 4) ? pick_comm(r, to, false) : u32(r);
		m.service_id = DR_CM_SID_TCP_PS + ((fl & 8) ? u16(r) : PORT);
		if (fl & 0x10)
			m.service_id = u64(r);
		m.local_qpn = u32(r) & 0xffffff;
		m.starting_psn = u32(r) & 0xffffff;
		m.responder_resources = u8(r);
		m.initiator_depth = u8(r);
		m.path_mtu = (fl & 0x20) ? u8(r) & 15 : 1 + (b >> 3) % 5;
		m.transport_type = (fl & 0x40) ? u8(r) & 3 : 0;
		m.retry_count = b >> 5;
		m.rnr_retry_count = b >> 5;
		m.primary.local_ack_timeout = u8(r) & 31;
		m.primary.flow_label = u32(r) & 0xfffff;
		if (fl & 0x80) {
			cma.cma_version = u8(r);
			cma.ip_version = u8(r) & 15;
		}
		dr_gid_from_ipv4(cma.src_addr, src);
		dr_gid_from_ipv4(cma.dst_addr, to->ip);
		dr_cma_hdr_pack(&cma, m.private_data);
		dr_cm_req_pack(&m, mad.body);
		break;
	}
	case DR_CM_ATTR_REP: {
		struct dr_cm_rep m;

		memset(&m, 0, sizeof(m));
		m.local_comm_id = pick_comm(r, to, false);
		m.remote_comm_id = pick_comm(r, to, true);
		m.local_qpn = u32(r) & 0xffffff;
		m.starting_psn = u32(r) & 0xffffff;
		m.target_ack_delay = u8(r) & 31;
		m.rnr_retry_count = u8(r) & 7;
		dr_cm_rep_pack(&m, mad.body);
		break;
	}
	case DR_CM_ATTR_REJ: {
		struct dr_cm_rej m;

		memset(&m, 0, sizeof(m));
		m.local_comm_id = pick_comm(r, to, false);
		m.remote_comm_id = pick_comm(r, to, true);
		m.msg_rejected = u8(r) & 3;
		m.reason = u16(r);
		dr_cm_rej_pack(&m, mad.body);
		break;
	}
	case DR_CM_ATTR_DREQ: {
		struct dr_cm_dreq m;

		memset(&m, 0, sizeof(m));
		m.local_comm_id = pick_comm(r, to, false);
		m.remote_comm_id = pick_comm(r, to, true);
		m.remote_qpn = (fl & 4) ? u32(r) & 0xffffff : ref ? ref->local.qpn : 0;
		dr_cm_dreq_pack(&m, mad.body);
		break;
	}
	case DR_CM_ATTR_MRA: {
		struct dr_cm_mra m;

		memset(&m, 0, sizeof(m));
		m.local_comm_id = pick_comm(r, to, false);
		m.remote_comm_id = pick_comm(r, to, true);
		m.msg_mraed = u8(r) & 3;
		m.service_timeout = u8(r) & 31;
		dr_cm_mra_pack(&m, mad.body);
		break;
	}
	default: { /* RTU, DREP and anything else: the two IDs first */
		struct dr_cm_drep m;

		memset(&m, 0, sizeof(m));
		m.local_comm_id = pick_comm(r, to, false);
		m.remote_comm_id = pick_comm(r, to, true);
		dr_cm_drep_pack(&m, mad.body);
		break;
	}
	}
	dr_mad_build(&mad, buf);
	check_codec(buf);
	recv_mad(to, src, buf, DR_MAD_LEN);
}

/* 256 bytes from the input, as they are or with a valid CM header. */
static void act_raw(struct rd *r, unsigned to_i)
{
	uint8_t b = u8(r), buf[DR_MAD_LEN];
	uint32_t src = pick_src(r, to_i);
	size_t n = (size_t)u8(r) + 1, len = DR_MAD_LEN;

	memset(buf, 0, sizeof(buf));
	for (size_t k = 0; k < n && r->n; k++)
		buf[k] = u8(r);
	if (b & 1) {
		buf[0] = DR_MAD_BASE_VERSION;
		buf[1] = DR_MAD_CLASS_CM;
		buf[2] = DR_MAD_CM_CLASS_VERSION;
		buf[3] = DR_MAD_METHOD_SEND;
		buf[16] = 0;
		buf[17] = 0x10 + (b >> 1) % 8;
	}
	check_codec(buf);
	if ((b & 0xf0) == 0xf0)
		len = b & 0x0f ? DR_MAD_LEN - (b & 0x0f) : DR_MAD_LEN + 1; /* wrong length */
	if (len > DR_MAD_LEN) {
		uint8_t *big = xmalloc(len);

		memcpy(big, buf, DR_MAD_LEN);
		big[DR_MAD_LEN] = 0;
		recv_mad(&h.s[to_i], src, big, len);
		free(big);
		return;
	}
	recv_mad(&h.s[to_i], src, buf, len);
}

/* A MAD a CM sent, with a few bytes changed, to its destination or back. */
static void act_mutate(struct rd *r)
{
	uint8_t b = u8(r), n = 1 + u8(r) % 4;
	struct msg m;
	struct side *to;

	if (!h.nrecent)
		return;
	m = h.recent[(h.nrecent - 1 - b % 16) % 16];
	if (h.nrecent < 16 && b % 16 >= h.nrecent)
		return;
	for (unsigned k = 0; k < n; k++) {
		uint8_t at = u8(r);

		m.mad[at] ^= u8(r);
	}
	to = side_of_ip((b & 0x80) ? m.src : m.dst);
	if (!to)
		return;
	check_codec(m.mad);
	recv_mad(to, (b & 0x40) ? IP_X : (b & 0x80) ? m.dst : m.src, m.mad, DR_MAD_LEN);
}

static void connect_to_peer(unsigned i, uint16_t port)
{
	struct side *s = &h.s[i];
	struct dr_cm_conn_param p = {.qpn = 0x200 + i,
				     .start_psn = 0xfffffe,
				     .responder_resources = 2,
				     .initiator_depth = 2,
				     .retry_count = 7,
				     .rnr_retry_count = 7,
				     .path_mtu = 3,
				     .ack_timeout = 14,
				     .private_data = "hi",
				     .private_len = 2};
	struct dr_cm_id *id;

	if (s->nheld == NHELD)
		return;
	if (dr_cm_connect(&s->cm, h.s[i ^ 1].ip, port, s->next_port++, &p, s, &id))
		fail("cm %u: connect refused", i);
	s->held[s->nheld++] = (struct held){.id = id, .active = true};
}

/* The application. */
static void act_app(struct rd *r, unsigned i)
{
	struct side *s = &h.s[i];
	uint8_t b = u8(r), k = u8(r);
	struct held *hd = s->nheld ? &s->held[k % s->nheld] : NULL;

	switch (b & 15) {
	case 0:
		connect_to_peer(i, (b & 0x10) ? u16(r) : PORT);
		break;
	case 1:
	case 2:
		if (hd && hd->id->state == DR_CMS_REQ_RCVD) {
			struct dr_cm_conn_param p = {.qpn = 0x300 + i,
						     .start_psn = 1,
						     .private_len = (b & 0x10) ? 300 : 0,
						     .private_data = "x"};

			if ((b & 15) == 1)
				dr_cm_accept(hd->id, &p);
			else
				dr_cm_reject(hd->id, "no", (b & 0x10) ? 200 : 2);
		}
		break;
	case 3:
		if (hd)
			dr_cm_disconnect(hd->id);
		break;
	case 4:
	case 5:
		if (hd)
			release(s, hd);
		break;
	case 6:
		if (hd)
			dr_cm_established(hd->id);
		break;
	case 7:
		if (s->lsn) {
			dr_cm_unlisten(s->lsn);
			s->lsn = NULL;
		} else if (dr_cm_listen(&s->cm, PORT, 0, s, &s->lsn)) {
			fail("cm %u: listen refused", i);
		}
		break;
	case 8:
		dr_cm_peer_unreachable(&s->cm, (b & 0x10) ? IP_X : h.s[i ^ 1].ip);
		break;
	default:
		s->policy = b >> 4;
		break;
	}
}

static bool act(struct rd *r)
{
	unsigned a, i;

	if (!next_action(r, &a, &i))
		return false;
	switch (a % 12) {
	case 0:
	case 1:
	case 2:
		act_wire(r);
		break;
	case 3:
	case 4:
		act_clock(r);
		break;
	case 5:
	case 6:
		act_forge(r, i);
		break;
	case 7:
		act_raw(r, i);
		break;
	case 8:
		act_mutate(r);
		break;
	default:
		act_app(r, i);
		break;
	}
	return true;
}

/* Everything released, then the wire and the clock run out. */
static void drain(void)
{
	unsigned rounds = 0;

	h.draining = true;
	for (unsigned i = 0; i < 2; i++)
		while (h.s[i].nheld)
			release(&h.s[i], &h.s[i].held[0]);
	check_all();
	for (;;) {
		uint64_t d;

		if (++rounds > 100000)
			fail("the CMs never went quiet");
		while (h.nwire)
			deliver_one(0);
		check_all();
		d = dr_cm_deadline_ns(&h.s[0].cm);
		if (dr_cm_deadline_ns(&h.s[1].cm) < d)
			d = dr_cm_deadline_ns(&h.s[1].cm);
		if (d == UINT64_MAX)
			break;
		if (d > h.now_ns)
			h.now_ns = d;
		tick_both();
		check_all();
	}
	for (unsigned i = 0; i < 2; i++)
		if (h.s[i].cm.ids)
			fail("cm %u: ids left after everything was released and ran out (%s)", i,
			     dr_cm_state_names[h.s[i].cm.ids->state]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd r = {data, size};
	unsigned steps = 0;
	uint8_t b = u8(&r);

	memset(&h, 0, sizeof(h));
	h.now_ns = 1000000000ull;
	for (unsigned i = 0; i < 2; i++) {
		struct side *s = &h.s[i];
		struct dr_cm_config cfg = {
		    .local_ip4 = i ? IP_B : IP_A,
		    .ca_guid = 0x0200000000000000ull | i,
		    .cm_resp_timeout = 10, /* 4.2 ms */
		    .max_cm_retries = (b >> (2 * i)) & 3,
		    .timewait_ns = 50000000,
		};

		s->ip = cfg.local_ip4;
		s->policy = (b >> 4) >> (2 * i);
		s->next_port = 40000;
		if (dr_cm_init(&s->cm, &cfg, &cm_ops, s) || dr_cm_listen(&s->cm, PORT, 0, s, &s->lsn))
			abort();
	}
	connect_to_peer(0, PORT);
	connect_to_peer(1, PORT);
	check_all();
	while (steps++ < 300 && act(&r))
		check_all();
	drain();
	for (unsigned i = 0; i < 2; i++)
		dr_cm_fini(&h.s[i].cm);
	return 0;
}
