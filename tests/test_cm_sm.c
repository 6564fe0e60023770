// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CM state machine: two dr_cm instances joined by an in-memory link
 * with a virtual clock and a drop schedule, plus rdma_rxe's own MADs from
 * tests/golden fed to it.  No sleeps: time moves only when the test says.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dr_cm.h"
#include "forge.h"
#include "rss.h"
#include "../tools/pcapng.h"
#include "ck_run.h"

#define IP_A 0xc0000201u /* 192.0.2.1, active */
#define IP_B 0xc0000202u /* 192.0.2.2, passive */
#define IP_X 0xc0000242u /* 192.0.2.66, a forger or a flood */
#define NS   1000000000ull
#define PORT 7471
#define RESP_TIMEOUT 10 /* 4.096 us * 2^10 = 4.19 ms per MAD attempt */
#define RETRIES 3
#define TIMEWAIT_NS 50000000ull
#define BACKLOG 8

static uint64_t now_ns;

struct side {
	struct dr_cm cm;
	uint32_t ip;
	int nev[DR_CM_EV_NUM];
	struct dr_cm_event last[DR_CM_EV_NUM];
	struct dr_cm_peer last_peer[DR_CM_EV_NUM];
	uint8_t last_priv[DR_CM_EV_NUM][DR_CM_DREP_PRIV_LEN]; /* the largest */
	uint64_t ev_ns[DR_CM_EV_NUM]; /* when the last of each came */
	struct dr_cm_id *conn; /* the CONNREQ'd id (passive) */
	int accept;	       /* on CONNREQ: 1 accept, -1 reject, 0 wait */
	uint32_t ece_vendor, ece_options; /* ... accepting with this ECE */
};

static struct side A, B;

/* the wire: a FIFO of MADs; drop_mask drops by attribute, drop_count
 * limits how many of them */
struct msg {
	uint32_t src, dst;
	uint8_t mad[DR_MAD_LEN];
};
static struct msg wire[256];
static unsigned wire_head, wire_tail;
static uint16_t drop_attr;
static int drop_left;
static int sent_by_attr[0x20];

static int send_mad(void *ctx, uint32_t dst, const uint8_t *mad)
{
	struct side *s = ctx;
	uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);

	sent_by_attr[attr & 0x1f]++;
	if (attr == drop_attr && drop_left) {
		drop_left--;
		return 0;
	}
	ck_assert_uint_lt(wire_tail - wire_head, 256);
	wire[wire_tail % 256].src = s->ip;
	wire[wire_tail % 256].dst = dst;
	memcpy(wire[wire_tail % 256].mad, mad, DR_MAD_LEN);
	wire_tail++;
	return 0;
}

static uint64_t clock_ns(void *ctx)
{
	return now_ns;
}

static void on_event(void *ctx, const struct dr_cm_event *ev)
{
	struct side *s = ctx;
	static const struct dr_cm_conn_param rep = {
		.qpn = 0x22, .start_psn = 0x654321, .responder_resources = 4,
		.initiator_depth = 2, .rnr_retry_count = 6, .ack_timeout = 15,
		.private_data = "accepted", .private_len = 8,
	};

	s->nev[ev->type]++;
	s->ev_ns[ev->type] = now_ns;
	s->last[ev->type] = *ev;
	s->last_peer[ev->type] = *ev->peer;
	memset(s->last_priv[ev->type], 0, sizeof(s->last_priv[0]));
	ck_assert_uint_le(ev->private_len, sizeof(s->last_priv[0]));
	if (ev->private_len)
		memcpy(s->last_priv[ev->type], ev->private_data, ev->private_len);
	if (ev->type == DR_CM_EV_CONNREQ) {
		struct dr_cm_conn_param p = rep;

		p.ece_vendor = s->ece_vendor;
		p.ece_options = s->ece_options;
		s->conn = ev->id;
		if (s->accept > 0)
			ck_assert_int_eq(dr_cm_accept(ev->id, &p), 0);
		else if (s->accept < 0)
			ck_assert_int_eq(dr_cm_reject(ev->id, "no thanks", 9), 0);
	}
}

static const struct dr_cm_ops ops = {
	.send_mad = send_mad,
	.now_ns = clock_ns,
	.event = on_event,
};

static void side_init_ops(struct side *s, uint32_t ip, uint8_t resp_timeout, uint8_t retries,
			  const struct dr_cm_ops *cm_ops)
{
	struct dr_cm_config cfg = {
		.local_ip4 = ip,
		.ca_guid = 0x0200000000000000ull | ip,
		.cm_resp_timeout = resp_timeout,
		.max_cm_retries = retries,
		.timewait_ns = TIMEWAIT_NS,
	};

	memset(s, 0, sizeof(*s));
	s->ip = ip;
	ck_assert_int_eq(dr_cm_init(&s->cm, &cfg, cm_ops, s), 0);
}

static void side_init_cfg(struct side *s, uint32_t ip, uint8_t resp_timeout, uint8_t retries)
{
	side_init_ops(s, ip, resp_timeout, retries, &ops);
}

static void side_init(struct side *s, uint32_t ip)
{
	side_init_cfg(s, ip, RESP_TIMEOUT, RETRIES);
}

static void setup(void)
{
	now_ns = 1000000000ull;
	wire_head = wire_tail = 0;
	drop_attr = 0;
	drop_left = 0;
	memset(sent_by_attr, 0, sizeof(sent_by_attr));
	side_init(&A, IP_A);
	side_init(&B, IP_B);
}

static void teardown(void)
{
	dr_cm_fini(&A.cm);
	dr_cm_fini(&B.cm);
}

/* move time to the earliest deadline of the n sides and tick them, in
 * order; false if none is due by limit_ns */
static bool advance(uint64_t limit_ns, struct side *const *sides, unsigned n)
{
	uint64_t d = UINT64_MAX;

	for (unsigned i = 0; i < n; i++)
		if (dr_cm_deadline_ns(&sides[i]->cm) < d)
			d = dr_cm_deadline_ns(&sides[i]->cm);
	if (d == UINT64_MAX || d > limit_ns)
		return false;
	now_ns = d;
	for (unsigned i = 0; i < n; i++)
		dr_cm_tick(&sides[i]->cm);
	return true;
}

/* deliver everything on the wire, then move time to the next deadline,
 * until nothing is left to do or the time limit passes */
static void run_until(uint64_t limit_ns)
{
	do {
		while (wire_head != wire_tail) {
			struct msg *m = &wire[wire_head++ % 256];
			struct side *to = m->dst == IP_A ? &A : &B;

			dr_cm_recv(&to->cm, m->src, m->mad, DR_MAD_LEN);
		}
	} while (advance(limit_ns, (struct side *const[]){&A, &B}, 2));
}

/* A connects to B's listener, its REQ with this ECE (0, 0: none) */
static struct dr_cm_id *connect_ab_ece(const void *priv, size_t len, uint32_t ece_vendor,
				       uint32_t ece_options)
{
	struct dr_cm_conn_param p = {
	    .qpn = 0x11,
	    .start_psn = 0xfffffe,
	    .responder_resources = 2,
	    .initiator_depth = 4,
	    .retry_count = 7,
	    .rnr_retry_count = 7,
	    .path_mtu = 3,
	    .ack_timeout = 14,
	    .private_data = priv,
	    .private_len = len,
	    .ece_vendor = ece_vendor,
	    .ece_options = ece_options,
	};
	struct dr_cm_listener *l;
	struct dr_cm_id *id;

	ck_assert_int_eq(dr_cm_listen(&B.cm, PORT, BACKLOG, (void *)0x1234, &l), 0);
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, PORT, 40000, &p, (void *)0x5678, &id), 0);
	ck_assert_int_eq(id->state, DR_CMS_REQ_SENT);
	return id;
}

static struct dr_cm_id *connect_ab(const void *priv, size_t len)
{
	return connect_ab_ece(priv, len, 0, 0);
}

/* A connects to B, which accepts; run until established */
static struct dr_cm_id *connect_accepted(void)
{
	struct dr_cm_id *id;

	B.accept = 1;
	id = connect_ab(NULL, 0);
	run_until(now_ns + 1000000);
	return id;
}

START_TEST(test_connect_accept)
{
	static const size_t lens[] = { 0, 1, 56 };
	uint8_t data[56];
	struct dr_cm_id *id;

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(0xa0 + i);
	B.accept = 1;
	id = connect_ab(data, lens[_i]);
	run_until(now_ns + 1000000);

	/* passive: one CONNREQ carrying what the REQ said */
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_ptr_eq(B.last[DR_CM_EV_CONNREQ].listen_ctx, (void *)0x1234);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ip4, IP_A);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].port, 40000);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].dst_port, PORT);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].qpn, 0x11);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].start_psn, 0xfffffe);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].responder_resources, 2);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].initiator_depth, 4);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].retry_count, 7);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].rnr_retry_count, 7);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].path_mtu, 3);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ack_timeout, 14);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].flow_label, (40000u * 31 + PORT) & 0xfffff);
	ck_assert_uint_eq(B.last[DR_CM_EV_CONNREQ].private_len, 56);
	ck_assert(!memcmp(B.last_priv[DR_CM_EV_CONNREQ], data, lens[_i]));
	for (size_t i = lens[_i]; i < 56; i++)
		ck_assert_uint_eq(B.last_priv[DR_CM_EV_CONNREQ][i], 0);

	/* active: ESTABLISHED with the REP's values, once */
	ck_assert_int_eq(A.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_ptr_eq(A.last[DR_CM_EV_ESTABLISHED].id, id);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].qpn, 0x22);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].start_psn, 0x654321);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].responder_resources, 4);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].initiator_depth, 2);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].rnr_retry_count, 6);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].ack_timeout, 15);
	ck_assert(!memcmp(A.last_priv[DR_CM_EV_ESTABLISHED], "accepted", 8));
	ck_assert_int_eq(id->state, DR_CMS_ESTABLISHED);
	/* no ECE either way */
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ece_vendor, 0);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ece_options, 0);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].ece_vendor, 0);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].ece_options, 0);

	/* passive: ESTABLISHED on the RTU */
	ck_assert_int_eq(B.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_int_eq(B.conn->state, DR_CMS_ESTABLISHED);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_REQ & 0x1f], 1);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_REP & 0x1f], 1);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_RTU & 0x1f], 1);
	/* nothing left armed once established */
	ck_assert_uint_eq(dr_cm_deadline_ns(&A.cm), UINT64_MAX);
	ck_assert_uint_eq(dr_cm_deadline_ns(&B.cm), UINT64_MAX);
}
END_TEST

/* the REQ on the wire is what rdma_cm sends (docs/protocol.md C.3/C.4) */
START_TEST(test_req_wire_format)
{
	struct dr_cma_hdr cma;
	struct dr_cm_req req;
	struct dr_mad mad;
	struct dr_cm_id *id = connect_ab("hi", 2);
	uint32_t ip;

	ck_assert_uint_eq(wire_tail - wire_head, 1);
	ck_assert_int_eq(dr_mad_parse(wire[0].mad, DR_MAD_LEN, &mad), 0);
	ck_assert(dr_mad_is_cm(&mad));
	ck_assert_int_eq(mad.method, DR_MAD_METHOD_SEND);
	ck_assert_int_eq(mad.attr_id, DR_CM_ATTR_REQ);
	ck_assert_uint_eq(mad.tid, id->tid);
	ck_assert_uint_ne(mad.tid, 0);
	dr_cm_req_unpack(mad.body, &req);
	ck_assert_uint_eq(req.local_comm_id, id->local_comm_id);
	ck_assert_uint_eq(req.service_id, 0x0000000001060000ull + PORT);
	ck_assert_uint_eq(req.local_qpn, 0x11);
	ck_assert_uint_eq(req.starting_psn, 0xfffffe);
	ck_assert_uint_eq(req.pkey, 0xffff);
	ck_assert_uint_eq(req.transport_type, 0);
	ck_assert_uint_eq(req.remote_cm_resp_timeout, RESP_TIMEOUT);
	ck_assert_uint_eq(req.max_cm_retries, RETRIES);
	ck_assert_uint_eq(req.primary.local_lid, 0xffff);
	ck_assert(dr_gid_to_ipv4(req.primary.local_gid, &ip));
	ck_assert_uint_eq(ip, IP_A);
	ck_assert(dr_gid_to_ipv4(req.primary.remote_gid, &ip));
	ck_assert_uint_eq(ip, IP_B);
	ck_assert_uint_eq(req.primary.hop_limit, 64);
	ck_assert_uint_eq(req.alternate.local_lid, 0);
	dr_cma_hdr_unpack(req.private_data, &cma);
	ck_assert_uint_eq(cma.cma_version, 0);
	ck_assert_uint_eq(cma.ip_version, 4);
	ck_assert_uint_eq(cma.src_port, 40000);
	for (int i = 0; i < 12; i++) {
		ck_assert_uint_eq(cma.src_addr[i], 0);
		ck_assert_uint_eq(cma.dst_addr[i], 0);
	}
	ck_assert_uint_eq(cma.src_addr[15], 1);
	ck_assert_uint_eq(cma.dst_addr[15], 2);
	ck_assert(!memcmp(req.private_data + 36, "hi", 2));
}
END_TEST

/* Enhanced Connection Establishment: the REQ's vendor ID in body bytes
 * 5-7, the REP's in bytes 15, 19 and 23, the options in the MAD's
 * attribute modifier (the kernel's cm_format_req / cm_format_rep), and
 * each side's event gives the peer's */
START_TEST(test_ece)
{
	struct dr_cm_id *id;
	struct dr_mad mad;

	B.accept = 1;
	B.ece_vendor = 0x123456;
	B.ece_options = 0x80000001;
	id = connect_ab_ece(NULL, 0, DR_ECE_VENDOR, DR_ECE_GSO_RX);
	ck_assert_uint_eq(wire_tail - wire_head, 1);
	ck_assert_int_eq(dr_mad_parse(wire[0].mad, DR_MAD_LEN, &mad), 0);
	ck_assert_uint_eq(mad.attr_mod, DR_ECE_GSO_RX);
	ck_assert_uint_eq(mad.body[4], 0);
	ck_assert_uint_eq(mad.body[5], 0x02);
	ck_assert_uint_eq(mad.body[6], 0x64);
	ck_assert_uint_eq(mad.body[7], 0x72);
	dr_cm_recv(&B.cm, wire[0].src, wire[0].mad, DR_MAD_LEN);
	wire_head++;
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ece_vendor, DR_ECE_VENDOR);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ece_options, DR_ECE_GSO_RX);
	/* B's REP */
	ck_assert_uint_eq(wire_tail - wire_head, 1);
	ck_assert_int_eq(dr_mad_parse(wire[1].mad, DR_MAD_LEN, &mad), 0);
	ck_assert_int_eq(mad.attr_id, DR_CM_ATTR_REP);
	ck_assert_uint_eq(mad.attr_mod, 0x80000001);
	ck_assert_uint_eq(mad.body[15], 0x12);
	ck_assert_uint_eq(mad.body[19], 0x34);
	ck_assert_uint_eq(mad.body[23], 0x56);
	ck_assert_uint_eq(mad.body[12] << 16 | mad.body[13] << 8 | mad.body[14],
			  0x22); /* QPN intact */
	run_until(now_ns + 1000000);
	ck_assert_int_eq(id->state, DR_CMS_ESTABLISHED);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].ece_vendor, 0x123456);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].ece_options, 0x80000001);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].qpn, 0x22);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].start_psn, 0x654321);
}
END_TEST

START_TEST(test_reject_with_data)
{
	struct dr_cm_id *id;

	B.accept = -1;
	id = connect_ab(NULL, 0);
	run_until(now_ns + 1000000);
	ck_assert_int_eq(A.nev[DR_CM_EV_REJECTED], 1);
	ck_assert_int_eq(A.last[DR_CM_EV_REJECTED].rej_reason, DR_CM_REJ_CONSUMER_DEFINED);
	ck_assert(!memcmp(A.last_priv[DR_CM_EV_REJECTED], "no thanks", 9));
	ck_assert_int_eq(A.last_priv[DR_CM_EV_REJECTED][9], 0);
	ck_assert_int_eq(id->state, DR_CMS_CLOSED);
	ck_assert_int_eq(A.nev[DR_CM_EV_ESTABLISHED] + B.nev[DR_CM_EV_ESTABLISHED], 0);
	dr_cm_release(id);
	ck_assert_ptr_null(A.cm.ids);
	/* the rejected id answers duplicates during time-wait, then goes */
	dr_cm_release(B.conn);
	run_until(now_ns + 2 * TIMEWAIT_NS);
	ck_assert_ptr_null(B.cm.ids);
}
END_TEST

START_TEST(test_no_listener)
{
	struct dr_cm_conn_param p = { .qpn = 5, .path_mtu = 5 };
	struct dr_cm_id *id;

	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, 9999, 1, &p, NULL, &id), 0);
	run_until(now_ns + 1000000);
	ck_assert_int_eq(A.nev[DR_CM_EV_REJECTED], 1);
	ck_assert_int_eq(A.last[DR_CM_EV_REJECTED].rej_reason, DR_CM_REJ_INVALID_SERVICE_ID);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 0);
	ck_assert_uint_eq(B.cm.stats.rej_no_listener, 1);
	ck_assert_ptr_null(B.cm.ids); /* nothing kept for a refused REQ */
}
END_TEST

/* Drop the first N MADs of one kind; the handshake completes anyway and
 * every event happens exactly once. */
static const struct {
	uint16_t attr;
	int n;
} drops[] = {
	{ DR_CM_ATTR_REQ, 1 },
	{ DR_CM_ATTR_REQ, RETRIES }, /* the last try gets through */
	{ DR_CM_ATTR_REP, 1 },	      /* the REQ resend draws the REP again */
	{ DR_CM_ATTR_REP, 2 },
	{ DR_CM_ATTR_RTU, 1 },	      /* the REP resend draws the RTU again */
	{ DR_CM_ATTR_RTU, 3 },
};

START_TEST(test_lossy_handshake)
{
	struct dr_cm_id *id;

	B.accept = 1;
	drop_attr = drops[_i].attr;
	drop_left = drops[_i].n;
	id = connect_ab(NULL, 0);
	run_until(now_ns + 1000000000ull);
	ck_assert_int_eq(drop_left, 0);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_int_eq(A.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_int_eq(B.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_int_eq(id->state, DR_CMS_ESTABLISHED);
	ck_assert_int_eq(B.conn->state, DR_CMS_ESTABLISHED);
	ck_assert_int_eq(A.nev[DR_CM_EV_UNREACHABLE] + B.nev[DR_CM_EV_UNREACHABLE], 0);
}
END_TEST

START_TEST(test_unreachable_timing)
{
	struct dr_cm_id *id;
	uint64_t t0;

	drop_attr = DR_CM_ATTR_REQ;
	drop_left = 1000;
	t0 = now_ns;
	id = connect_ab(NULL, 0);
	run_until(now_ns + 10000000000ull);
	ck_assert_int_eq(A.nev[DR_CM_EV_UNREACHABLE], 1);
	/* first try + RETRIES resends, each waiting 4.096 us * 2^timeout */
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_REQ & 0x1f], 1 + RETRIES);
	ck_assert_uint_eq(now_ns - t0, (RETRIES + 1) * (4096ull << RESP_TIMEOUT));
	ck_assert_int_eq(id->state, DR_CMS_CLOSED);
	ck_assert_uint_eq(dr_cm_deadline_ns(&A.cm), UINT64_MAX);
}
END_TEST

/* both callers let go of the connection: the ids are freed after their
 * time-wait */
static void release_both(struct dr_cm_id *id)
{
	dr_cm_release(id);
	dr_cm_release(B.conn);
	run_until(now_ns + 2 * TIMEWAIT_NS);
	ck_assert_ptr_null(A.cm.ids);
	ck_assert_ptr_null(B.cm.ids);
}

START_TEST(test_disconnect)
{
	struct dr_cm_id *id;

	id = connect_accepted();
	drop_attr = DR_CM_ATTR_DREP;
	drop_left = _i; /* 0: clean; 1, 2: the DREQ is resent, DREP again */
	ck_assert_int_eq(dr_cm_disconnect(id), 0);
	ck_assert_int_eq(dr_cm_disconnect(id), -EINVAL);
	run_until(now_ns + 10000000);
	ck_assert_int_eq(A.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_int_eq(B.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_DREQ & 0x1f], 1 + _i);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_DREP & 0x1f], 1 + _i);
	ck_assert_int_eq(id->state, DR_CMS_TIMEWAIT);
	release_both(id);
}
END_TEST

/* deliver the oldest MAD on the wire; false if there is none */
static bool deliver_one(void)
{
	struct msg *m;

	if (wire_head == wire_tail)
		return false;
	m = &wire[wire_head++ % 256];
	dr_cm_recv(m->dst == IP_A ? &A.cm : &B.cm, m->src, m->mad, DR_MAD_LEN);
	return true;
}

/* Both sides disconnect at once: each answers the other's DREQ and is in
 * time-wait, but each still waits for the DREP to its own DREQ (the port
 * must stay open for it: a closed one answers with ICMP port unreachable,
 * which tests/netns-pingpong.sh caught). */
START_TEST(test_disconnect_crossed)
{
	struct dr_cm_id *id;

	id = connect_accepted();
	ck_assert_int_eq(dr_cm_disconnect(id), 0);
	ck_assert_int_eq(dr_cm_disconnect(B.conn), 0);
	ck_assert(dr_cm_disconnecting(&A.cm));
	ck_assert(dr_cm_disconnecting(&B.cm));
	ck_assert(deliver_one()); /* A's DREQ at B: B answers, time-wait */
	ck_assert_int_eq(B.conn->state, DR_CMS_TIMEWAIT);
	ck_assert_int_eq(B.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_msg(dr_cm_disconnecting(&B.cm), "B stopped waiting for its DREP");
	ck_assert(deliver_one()); /* B's DREQ at A */
	ck_assert_int_eq(id->state, DR_CMS_TIMEWAIT);
	ck_assert_int_eq(A.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert(dr_cm_disconnecting(&A.cm));
	ck_assert(deliver_one()); /* B's DREP at A */
	ck_assert(!dr_cm_disconnecting(&A.cm));
	ck_assert(dr_cm_disconnecting(&B.cm));
	ck_assert(deliver_one()); /* A's DREP at B */
	ck_assert(!dr_cm_disconnecting(&B.cm));
	ck_assert(!deliver_one());
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_DREQ & 0x1f], 2);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_DREP & 0x1f], 2);
	/* one event each, and the ids go after their time-wait */
	run_until(now_ns + 2 * TIMEWAIT_NS);
	ck_assert_int_eq(A.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_int_eq(B.nev[DR_CM_EV_DISCONNECTED], 1);
	release_both(id);
}
END_TEST

START_TEST(test_disconnect_dead_peer)
{
	struct dr_cm_id *id;

	id = connect_accepted();
	drop_attr = DR_CM_ATTR_DREQ;
	drop_left = 1000;
	ck_assert_int_eq(dr_cm_disconnect(id), 0);
	run_until(now_ns + 10000000000ull);
	ck_assert_int_eq(A.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_DREQ & 0x1f], 1 + RETRIES);
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct dr_cm_conn_param p = { .qpn = 1, .path_mtu = 3 };
	uint8_t big[57] = { 0 };
	struct dr_cm_listener *l, *l2;
	struct dr_cm_id *id;

	p.private_data = big;
	p.private_len = sizeof(big);
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, 1, 1, &p, NULL, &id), -EINVAL);
	p.private_len = 0;
	p.path_mtu = 6;
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, 1, 1, &p, NULL, &id), -EINVAL);
	p.path_mtu = 3;
	p.retry_count = 8;
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, 1, 1, &p, NULL, &id), -EINVAL);
	ck_assert_ptr_null(A.cm.ids);
	ck_assert_uint_eq(wire_tail, 0);
	ck_assert_int_eq(dr_cm_listen(&B.cm, 5, 1, NULL, &l), 0);
	ck_assert_int_eq(dr_cm_listen(&B.cm, 5, 1, NULL, &l2), -EADDRINUSE);
	dr_cm_unlisten(l);
	ck_assert_int_eq(dr_cm_listen(&B.cm, 5, 1, NULL, &l2), 0);
}
END_TEST

START_TEST(test_garbage_mads)
{
	uint8_t mad[DR_MAD_LEN + 1];
	struct dr_mad m;

	memset(mad, 0, sizeof(mad));
	dr_cm_recv(&B.cm, IP_A, mad, 10);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN + 1);
	dr_mad_init_cm(&m, DR_CM_ATTR_REQ, 1);
	m.mgmt_class = 0x81; /* not the CM class */
	dr_mad_build(&m, mad);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	dr_mad_init_cm(&m, 0x0019, 1); /* LAP: not spoken */
	dr_mad_build(&m, mad);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	/* REP/RTU/DREP for nobody: ignored or refused, never an event */
	dr_mad_init_cm(&m, DR_CM_ATTR_RTU, 1);
	dr_mad_build(&m, mad);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	dr_mad_init_cm(&m, DR_CM_ATTR_DREP, 1);
	dr_mad_build(&m, mad);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	ck_assert_uint_eq(B.cm.stats.rx_bad, 4);
	for (int e = 0; e < DR_CM_EV_NUM; e++)
		ck_assert_int_eq(B.nev[e], 0);
	ck_assert_ptr_null(B.cm.ids);
	ck_assert_uint_eq(wire_tail, 0);
}
END_TEST

/* rdma_rxe's REQ from rping (tests/golden/rxe-rping.pcapng frame 21),
 * given to droce's CM: a listener on the port accepts it with the REQ's
 * values; without a listener it is refused with reason 8 and the TID and
 * comm ID echoed (cm.c cm_issue_rej) */
/* The CM MAD of frame `number` of tests/golden/<file>, into mad. */
static int load_golden_mad(const char *file, uint32_t number, bool ipv6, uint8_t *mad)
{
	char path[4200], err[256];
	const char *top = getenv("top_srcdir");
	struct dr_pcapng_pkt cp;
	struct dr_pcapng *r;
	int found = 0;

	snprintf(path, sizeof(path), "%s/tests/golden/%s", top ? top : ".", file);
	r = dr_pcapng_open(path, err, sizeof(err));
	ck_assert_msg(r, "%s", err);
	while (dr_pcapng_next(r, &cp) == 1) {
		struct dr_pkt pkt;

		if (cp.number != number)
			continue;
		ck_assert_int_eq(dr_pkt_parse(cp.data, cp.caplen, 0, &pkt), DR_PKT_OK);
		if (ipv6)
			ck_assert_ptr_nonnull(pkt.ip6);
		ck_assert_uint_eq(pkt.payload_len, DR_MAD_LEN);
		memcpy(mad, pkt.payload, DR_MAD_LEN);
		found = 1;
	}
	dr_pcapng_close(r);
	return found;
}

static int load_rping_req(uint8_t *mad)
{
	return load_golden_mad("rxe-rping.pcapng", 21, false, mad);
}

START_TEST(test_rxe_req)
{
	uint8_t mad[DR_MAD_LEN];
	struct dr_cm_listener *l;
	struct dr_cm_rej rej;
	struct dr_mad m;

	ck_assert(load_rping_req(mad));
	/* no listener yet */
	dr_cm_recv(&B.cm, 0xc0a84d0c, mad, DR_MAD_LEN);
	ck_assert_uint_eq(wire_tail, 1);
	ck_assert_int_eq(dr_mad_parse(wire[0].mad, DR_MAD_LEN, &m), 0);
	ck_assert_int_eq(m.attr_id, DR_CM_ATTR_REJ);
	ck_assert_uint_eq(m.tid, 0x00000002cec0cd6full);
	dr_cm_rej_unpack(m.body, &rej);
	ck_assert_uint_eq(rej.reason, DR_CM_REJ_INVALID_SERVICE_ID);
	ck_assert_uint_eq(rej.remote_comm_id, 0x6fcdc0ce);
	ck_assert_uint_eq(rej.local_comm_id, 0);
	ck_assert_uint_eq(rej.msg_rejected, 0);
	ck_assert_uint_eq(wire[0].dst, 0xc0a84d0c);

	/* rping's default port 7174 = 0x1c06 */
	ck_assert_int_eq(dr_cm_listen(&B.cm, 0x1c06, 1, NULL, &l), 0);
	dr_cm_recv(&B.cm, 0xc0a84d0c, mad, DR_MAD_LEN);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].qpn, 0x11);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].start_psn, 0xd202c3);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].port, 0x833f);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].path_mtu, 3);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ack_timeout, 0x13);
	ck_assert_uint_eq(B.conn->tid, 0x00000002cec0cd6full);
	/* a duplicate while deciding: silently absorbed */
	dr_cm_recv(&B.cm, 0xc0a84d0c, mad, DR_MAD_LEN);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_uint_eq(wire_tail, 1);
}
END_TEST

/* A MAD leaves as a UD SEND_ONLY to QP1 with the GSI Q_Key, from QP1 and
 * our address, AckReq set, consecutive PSNs (docs/protocol.md C.1) */
START_TEST(test_mad_frame)
{
	uint8_t mad[DR_MAD_LEN], frame[DR_CM_FRAME_MAX];
	struct dr_pkt pkt;
	int len;

	for (unsigned i = 0; i < sizeof(mad); i++)
		mad[i] = (uint8_t)i;
	for (uint32_t n = 0; n < 2; n++) {
		len = dr_cm_mad_frame(&A.cm, IP_B, mad, frame, sizeof(frame));
		ck_assert_int_gt(len, 0);
		ck_assert_int_eq(dr_pkt_parse(frame, (size_t)len, 0, &pkt), DR_PKT_OK);
		ck_assert_int_eq(pkt.opcode, DR_OP_UD_SEND_ONLY);
		ck_assert_uint_eq(pkt.dqpn, DR_GSI_QPN);
		ck_assert(pkt.ackreq);
		ck_assert_uint_eq(pkt.psn, n);
		ck_assert_uint_eq(dr_deth_qkey(dr_pkt_deth(&pkt)), DR_GSI_QKEY);
		ck_assert_uint_eq(dr_deth_sqp(dr_pkt_deth(&pkt)), DR_GSI_QPN);
		ck_assert_uint_eq(ntohl(pkt.ip4->saddr), IP_A);
		ck_assert_uint_eq(ntohl(pkt.ip4->daddr), IP_B);
		ck_assert_uint_eq(pkt.payload_len, DR_MAD_LEN);
		ck_assert(!memcmp(pkt.payload, mad, DR_MAD_LEN));
	}
	ck_assert_int_lt(dr_cm_mad_frame(&A.cm, IP_B, mad, frame, 100), 0);
}
END_TEST

/* ---- IPv6 (issue 12, point 5) ------------------------------------------------- */

/* A and B again, as IPv6 CMs at fd00::1 and fd00::2, on a wire of their own */
static const uint8_t ip6_a[16] = {0xfd, 0x00, [15] = 1};
static const uint8_t ip6_b[16] = {0xfd, 0x00, [15] = 2};
struct msg6 {
	uint8_t src[16], dst[16];
	uint8_t mad[DR_MAD_LEN];
};
static struct msg6 wire6[64];
static unsigned wire6_head, wire6_tail;

static int send_mad6(void *ctx, const uint8_t dst[16], const uint8_t *mad)
{
	struct msg6 *m = &wire6[wire6_tail++ % 64];

	ck_assert_uint_lt(wire6_tail - wire6_head, 64);
	memcpy(m->src, ctx == &A ? ip6_a : ip6_b, 16);
	memcpy(m->dst, dst, 16);
	memcpy(m->mad, mad, DR_MAD_LEN);
	return 0;
}

static const struct dr_cm_ops ops6 = {
	.send_mad6 = send_mad6,
	.now_ns = clock_ns,
	.event = on_event,
};

static void side6_init(struct side *s, const uint8_t ip6[16])
{
	struct dr_cm_config cfg = {
		.ipv6 = true,
		.ca_guid = 0x0200000000000000ull | ip6[15],
		.cm_resp_timeout = RESP_TIMEOUT,
		.max_cm_retries = RETRIES,
		.timewait_ns = TIMEWAIT_NS,
	};

	dr_cm_fini(&s->cm);
	memset(s, 0, sizeof(*s));
	memcpy(cfg.local_ip6, ip6, 16);
	ck_assert_int_eq(dr_cm_init(&s->cm, &cfg, &ops6, s), 0);
	wire6_head = wire6_tail = 0;
}

static void run6(uint64_t limit_ns)
{
	do {
		while (wire6_head != wire6_tail) {
			struct msg6 *m = &wire6[wire6_head++ % 64];

			dr_cm_recv6(!memcmp(m->dst, ip6_a, 16) ? &A.cm : &B.cm, m->src, m->mad,
				    DR_MAD_LEN);
		}
	} while (advance(limit_ns, (struct side *const[]){&A, &B}, 2));
}

/*
 * A whole connection between two IPv6 CMs: the REQ names both GIDs as the
 * IPv6 addresses themselves and its rdma_cm header says IP version 6 with
 * both addresses whole (as rxe's does, tests/golden/rxe-ipv6-rping), the
 * peer is reported by its IPv6 address, and the disconnect completes.
 */
START_TEST(test_ipv6_connect)
{
	struct dr_cm_conn_param p = {
		.qpn = 0x11, .start_psn = 0x123456, .responder_resources = 2,
		.initiator_depth = 4, .retry_count = 7, .rnr_retry_count = 7,
		.path_mtu = 3, .ack_timeout = 14, .private_data = "v6", .private_len = 2,
	};
	struct dr_cm_listener *l;
	struct dr_cma_hdr cma;
	struct dr_cm_req req;
	struct dr_cm_id *id;
	struct dr_mad m;

	side6_init(&A, ip6_a);
	side6_init(&B, ip6_b);
	B.accept = 1;
	ck_assert_int_eq(dr_cm_listen(&B.cm, PORT, BACKLOG, NULL, &l), 0);
	/* the other family's calls */
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, PORT, 40000, &p, NULL, &id), -EAFNOSUPPORT);
	ck_assert_int_eq(dr_cm_connect6(&A.cm, (const uint8_t[16]){[10] = 0xff, 0xff, 192, 0, 2, 2},
					PORT, 40000, &p, NULL, &id),
			 -EAFNOSUPPORT);
	ck_assert_uint_eq(wire6_tail, 0);

	ck_assert_int_eq(dr_cm_connect6(&A.cm, ip6_b, PORT, 40000, &p, NULL, &id), 0);
	ck_assert_uint_eq(wire6_tail, 1);
	ck_assert_mem_eq(wire6[0].dst, ip6_b, 16);
	ck_assert_int_eq(dr_mad_parse(wire6[0].mad, DR_MAD_LEN, &m), 0);
	ck_assert_uint_eq(m.attr_id, DR_CM_ATTR_REQ);
	dr_cm_req_unpack(m.body, &req);
	ck_assert_mem_eq(req.primary.local_gid, ip6_a, 16);
	ck_assert_mem_eq(req.primary.remote_gid, ip6_b, 16);
	ck_assert_uint_eq(req.primary.flow_label, (40000u * 31 + PORT) & 0xfffff);
	dr_cma_hdr_unpack(req.private_data, &cma);
	ck_assert_uint_eq(cma.ip_version, 6);
	ck_assert_uint_eq(req.private_data[1], 0x60);
	ck_assert_uint_eq(cma.src_port, 40000);
	ck_assert_mem_eq(cma.src_addr, ip6_a, 16);
	ck_assert_mem_eq(cma.dst_addr, ip6_b, 16);
	ck_assert_mem_eq(req.private_data + DR_CMA_HDR_LEN, "v6", 2);

	run6(now_ns + 1000000);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_mem_eq(B.last_peer[DR_CM_EV_CONNREQ].gid, ip6_a, 16);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ip4, 0);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].port, 40000);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].qpn, 0x11);
	ck_assert_int_eq(A.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_mem_eq(A.last_peer[DR_CM_EV_ESTABLISHED].gid, ip6_b, 16);
	ck_assert_uint_eq(A.last_peer[DR_CM_EV_ESTABLISHED].qpn, 0x22);
	ck_assert_int_eq(B.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_int_eq(id->state, DR_CMS_ESTABLISHED);
	ck_assert_int_eq(B.conn->state, DR_CMS_ESTABLISHED);

	/* a MAD from another IPv6 address naming the connection: dropped */
	{
		struct dr_cm_dreq dreq = {.local_comm_id = B.conn->local_comm_id,
					  .remote_comm_id = id->local_comm_id,
					  .remote_qpn = 0x11};
		static const uint8_t ip6_x[16] = {0xfd, 0x00, [15] = 0x66};
		uint8_t buf[DR_MAD_LEN];

		dr_mad_init_cm(&m, DR_CM_ATTR_DREQ, 1);
		dr_cm_dreq_pack(&dreq, m.body);
		dr_mad_build(&m, buf);
		dr_cm_recv6(&A.cm, ip6_x, buf, DR_MAD_LEN);
		ck_assert_uint_eq(A.cm.stats.drop[DR_CM_DROP_ADDR], 1);
		ck_assert_int_eq(id->state, DR_CMS_ESTABLISHED);
		/* an IPv4 source on an IPv6 CM: not even looked at */
		dr_cm_recv(&A.cm, IP_B, buf, DR_MAD_LEN);
		ck_assert_uint_eq(A.cm.stats.rx_bad, 1);
		ck_assert_int_eq(id->state, DR_CMS_ESTABLISHED);
	}

	ck_assert_int_eq(dr_cm_disconnect(id), 0);
	run6(now_ns + 1000000);
	ck_assert_int_eq(A.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_int_eq(B.nev[DR_CM_EV_DISCONNECTED], 1);
}
END_TEST

/* The frame a MAD leaves in from an IPv6 CM: Ethernet/IPv6/UDP 4791 */
START_TEST(test_ipv6_mad_frame)
{
	uint8_t mad[DR_MAD_LEN] = {1, 2, 3}, frame[DR_CM_FRAME_MAX];
	struct dr_pkt pkt;
	int len;

	side6_init(&A, ip6_a);
	ck_assert_int_eq(dr_cm_mad_frame(&A.cm, IP_B, mad, frame, sizeof(frame)), -EAFNOSUPPORT);
	ck_assert_int_eq(dr_cm_mad_frame6(&B.cm, ip6_a, mad, frame, sizeof(frame)), -EAFNOSUPPORT);
	len = dr_cm_mad_frame6(&A.cm, ip6_b, mad, frame, sizeof(frame));
	ck_assert_int_eq(len, 14 + 40 + 8 + 12 + 8 + DR_MAD_LEN + 4);
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)len, 0, &pkt), DR_PKT_OK);
	ck_assert_ptr_nonnull(pkt.ip6);
	ck_assert_mem_eq(pkt.ip6->saddr, ip6_a, 16);
	ck_assert_mem_eq(pkt.ip6->daddr, ip6_b, 16);
	ck_assert_uint_eq(ntohs(pkt.udp->dport), DR_ROCE_UDP_PORT);
	ck_assert_uint_eq(pkt.udp->csum, 0);
	ck_assert_uint_eq(pkt.opcode, DR_OP_UD_SEND_ONLY);
	ck_assert_uint_eq(pkt.dqpn, DR_GSI_QPN);
	ck_assert_uint_eq(dr_deth_qkey(dr_pkt_deth(&pkt)), DR_GSI_QKEY);
	ck_assert(!memcmp(pkt.payload, mad, DR_MAD_LEN));
}
END_TEST

/* rdma_rxe's own REQ over IPv6 (rping, tests/golden/rxe-ipv6-rping.pcapng
 * frame 31, fd77::12 -> fd77::11) */
static int load_rping6_req(uint8_t *mad)
{
	return load_golden_mad("rxe-ipv6-rping.pcapng", 31, true, mad);
}

START_TEST(test_ipv6_rxe_req)
{
	static const uint8_t rxe11[16] = {0xfd, 0x77, [15] = 0x11};
	static const uint8_t rxe12[16] = {0xfd, 0x77, [15] = 0x12};
	uint8_t mad[DR_MAD_LEN];
	struct dr_cm_listener *l;
	struct dr_cm_rej rej;
	struct dr_mad m;

	ck_assert(load_rping6_req(mad));
	/* an IPv4 CM refuses an rdma_cm header of version 6 even on a
	 * port it listens on: REJ invalid service ID, as for no listener */
	ck_assert_int_eq(dr_cm_listen(&B.cm, 0x1c06, 1, NULL, &l), 0);
	dr_cm_recv(&B.cm, 0xc0a84d0c, mad, DR_MAD_LEN);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 0);
	ck_assert_uint_eq(B.cm.stats.rej_no_listener, 1);
	ck_assert_uint_eq(wire_tail, 1);
	ck_assert_int_eq(dr_mad_parse(wire[0].mad, DR_MAD_LEN, &m), 0);
	ck_assert_int_eq(m.attr_id, DR_CM_ATTR_REJ);
	dr_cm_rej_unpack(m.body, &rej);
	ck_assert_uint_eq(rej.reason, DR_CM_REJ_INVALID_SERVICE_ID);

	/* the IPv6 CM at fd77::11 */
	side6_init(&B, rxe11);
	dr_cm_recv6(&B.cm, rxe12, mad, DR_MAD_LEN);
	ck_assert_uint_eq(wire6_tail, 1); /* REJ: no listener */
	ck_assert_mem_eq(wire6[0].dst, rxe12, 16);
	ck_assert_int_eq(dr_mad_parse(wire6[0].mad, DR_MAD_LEN, &m), 0);
	ck_assert_int_eq(m.attr_id, DR_CM_ATTR_REJ);
	dr_cm_rej_unpack(m.body, &rej);
	ck_assert_uint_eq(rej.reason, DR_CM_REJ_INVALID_SERVICE_ID);
	ck_assert_uint_eq(rej.remote_comm_id, 0x3637a8ec);

	ck_assert_int_eq(dr_cm_listen(&B.cm, 0x1c06, 1, NULL, &l), 0);
	dr_cm_recv6(&B.cm, rxe12, mad, DR_MAD_LEN);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_mem_eq(B.last_peer[DR_CM_EV_CONNREQ].gid, rxe12, 16);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].qpn, 0x11);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].start_psn, 0x96a097);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].port, 0xa39f);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].dst_port, 0x1c06);
	/* rdma_cm's (sport * 31 + dport) & 0xfffff: 0x3ec47 (tshark 4.0
	 * shows 0x003ec, the field's bytes 8 bits off) */
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].flow_label,
			  (0xa39fu * 31 + 0x1c06) & 0xfffff);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].flow_label, 0x3ec47);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].path_mtu, 3);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ].ack_timeout, 0x13);
	/* a duplicate while deciding: absorbed; one from another address
	 * is another request */
	dr_cm_recv6(&B.cm, rxe12, mad, DR_MAD_LEN);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_uint_eq(B.cm.stats.dup_reqs, 1);
}
END_TEST

/* ---- hostile peers (issue 11) ------------------------------------------------ */

/* Any other CM MAD, with the fields a forger chooses. */
static void forge(struct side *to, uint32_t src, uint16_t attr, uint32_t local, uint32_t remote,
		  uint32_t qpn, uint8_t msg)
{
	struct dr_cm_rep rep = {.local_comm_id = local, .remote_comm_id = remote, .local_qpn = qpn};
	struct dr_cm_rtu rtu = {.local_comm_id = local, .remote_comm_id = remote};
	struct dr_cm_rej rej = {.local_comm_id = local,
				.remote_comm_id = remote,
				.msg_rejected = msg,
				.reason = DR_CM_REJ_CONSUMER_DEFINED};
	struct dr_cm_dreq dreq = {
	    .local_comm_id = local, .remote_comm_id = remote, .remote_qpn = qpn};
	struct dr_cm_drep drep = {.local_comm_id = local, .remote_comm_id = remote};
	struct dr_cm_mra mra = {.local_comm_id = local,
				.remote_comm_id = remote,
				.msg_mraed = msg,
				.service_timeout = 20};
	uint8_t buf[DR_MAD_LEN];
	struct dr_mad m;

	dr_mad_init_cm(&m, attr, 0x0123456789abcdefull);
	switch (attr) {
	case DR_CM_ATTR_REP:
		dr_cm_rep_pack(&rep, m.body);
		break;
	case DR_CM_ATTR_RTU:
		dr_cm_rtu_pack(&rtu, m.body);
		break;
	case DR_CM_ATTR_REJ:
		dr_cm_rej_pack(&rej, m.body);
		break;
	case DR_CM_ATTR_DREQ:
		dr_cm_dreq_pack(&dreq, m.body);
		break;
	case DR_CM_ATTR_DREP:
		dr_cm_drep_pack(&drep, m.body);
		break;
	case DR_CM_ATTR_MRA:
		dr_cm_mra_pack(&mra, m.body);
		break;
	default:
		ck_abort_msg("forge: attribute 0x%x", attr);
	}
	dr_mad_build(&m, buf);
	dr_cm_recv(&to->cm, src, buf, DR_MAD_LEN);
}

static uint64_t drops_of(const struct side *s)
{
	uint64_t n = 0;

	for (int i = 0; i < DR_CM_DROP_NUM; i++)
		n += s->cm.stats.drop[i];
	return n;
}

/*
 * The flood of issue 11: 60,000 REQs from one address in 19 s while the
 * application answers none (at 4fe6195: 24,950 CONNREQs held, +35 MB, a
 * legitimate client locked out for 28 s).  Both sides use rdma_cm's
 * timeouts (4.3 s x 16 tries), so nothing expires during the flood.
 */
START_TEST(test_req_flood)
{
	enum { N = 60000, BL = 1024, SHARE = DR_CM_SRC_SHARE(BL) };
	const uint64_t step = 19 * NS / N, wait = 16 * (4096ull << 20);
	struct dr_cm_conn_param p = { .qpn = 0x11, .path_mtu = 3, .retry_count = 7 };
	uint8_t mad[DR_MAD_LEN];
	struct dr_cm_listener *l;
	struct dr_cm_id *id;
	uint64_t t0, t_stop;
	long rss0, rss1;

	teardown();
	side_init_cfg(&A, IP_A, 20, 15);
	side_init_cfg(&B, IP_B, 20, 15);
	ck_assert_int_eq(dr_cm_listen(&B.cm, PORT, BL, (void *)0x1234, &l), 0);
	rss0 = rss_kib();
	t0 = now_ns;
	for (uint32_t i = 0; i < N; i++) {
		forge_req_mad(mad, 0x10000 + i, PORT, 20, 15, 0x5000000000ull + i);
		dr_cm_recv(&B.cm, IP_X, mad, DR_MAD_LEN);
		now_ns += step;
		dr_cm_tick(&B.cm);
	}
	rss1 = rss_kib();
	/* one address's share of the backlog held, every other REQ dropped
	 * without a word: nothing reflected at the (maybe forged) source */
	ck_assert_uint_eq(dr_cm_pending(l), SHARE);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], SHARE);
	ck_assert_uint_eq(B.cm.by_local.n, SHARE);
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_SRC_SHARE], N - SHARE);
	ck_assert_uint_eq(drops_of(&B), N - SHARE);
	ck_assert_uint_eq(B.cm.stats.req_expired, 0);
	ck_assert_uint_eq(wire_tail, 0);
	ck_assert_msg(rss1 - rss0 < 10 * 1024, "RSS grew by %ld KiB", rss1 - rss0);
	printf("REQ flood: %d REQs, %d held, RSS +%ld KiB\n", N, SHARE, rss1 - rss0);

	/* the flood stops; a client from another address connects at once
	 * (the application answers again) */
	t_stop = now_ns;
	B.accept = 1;
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, PORT, 40000, &p, NULL, &id), 0);
	run_until(t_stop + 2 * NS);
	ck_assert_int_eq(id->state, DR_CMS_ESTABLISHED);
	ck_assert_int_eq(A.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_int_eq(B.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_uint_lt(B.ev_ns[DR_CM_EV_ESTABLISHED] - t_stop, 2 * NS);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], 0);

	/* the flood's requests expire when their REQ says the peer gave up:
	 * the first exactly then, the last 767 steps later */
	run_until(t0 + wait - 1);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], 0);
	run_until(t0 + wait);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], 1);
	ck_assert_int_eq(B.last[DR_CM_EV_CONNREQ_GONE].err, -ETIMEDOUT);
	ck_assert_ptr_eq(B.last[DR_CM_EV_CONNREQ_GONE].listen_ctx, (void *)0x1234);
	ck_assert_uint_eq(B.last_peer[DR_CM_EV_CONNREQ_GONE].ip4, IP_X);
	run_until(t0 + wait + (SHARE - 1) * step);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], SHARE);
	ck_assert_uint_eq(B.cm.stats.req_expired, SHARE);
	ck_assert_uint_eq(dr_cm_pending(l), 0);
	ck_assert_uint_eq(B.cm.by_local.n, 1); /* the legitimate connection */
	ck_assert_uint_eq(B.cm.by_remote.n, 1);
	ck_assert_uint_eq(B.cm.src_count.n, 0);
	ck_assert_int_eq(B.conn->state, DR_CMS_ESTABLISHED);
	ck_assert_uint_eq(wire_tail - wire_head, 0);
}
END_TEST

/* The backlog and one address's share of it, exactly. */
START_TEST(test_backlog)
{
	struct dr_cm_id *rejected;
	struct dr_cm_listener *l;
	uint8_t mad[DR_MAD_LEN];

	ck_assert_int_eq(dr_cm_listen(&B.cm, PORT, 4, (void *)0x1234, &l), 0);
	ck_assert_int_eq(DR_CM_SRC_SHARE(4), 3);
	for (uint32_t i = 1; i <= 4; i++) {
		forge_req_mad(mad, i, PORT, 20, 15, i);
		dr_cm_recv(&B.cm, IP_X, mad, DR_MAD_LEN);
	}
	ck_assert_uint_eq(dr_cm_pending(l), 3);
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_SRC_SHARE], 1);
	/* another address gets the fourth place */
	forge_req_mad(mad, 5, PORT, 20, 15, 5);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	ck_assert_uint_eq(dr_cm_pending(l), 4);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 4);
	ck_assert_ptr_nonnull(B.conn);
	/* full: a third address is dropped, unanswered */
	forge_req_mad(mad, 6, PORT, 20, 15, 6);
	dr_cm_recv(&B.cm, 0xc0000203, mad, DR_MAD_LEN);
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_BACKLOG], 1);
	ck_assert_uint_eq(dr_cm_pending(l), 4);
	ck_assert_uint_eq(wire_tail, 0);
	/* the application rejects one: the dropped request's resend gets in */
	rejected = B.conn;
	ck_assert_int_eq(dr_cm_reject(rejected, NULL, 0), 0);
	ck_assert_uint_eq(dr_cm_pending(l), 3);
	ck_assert_uint_eq(wire_tail, 1); /* the REJ */
	dr_cm_recv(&B.cm, 0xc0000203, mad, DR_MAD_LEN);
	ck_assert_uint_eq(dr_cm_pending(l), 4);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 5);
	/* a duplicate of a held request is absorbed, not held twice */
	forge_req_mad(mad, 1, PORT, 20, 15, 1);
	dr_cm_recv(&B.cm, IP_X, mad, DR_MAD_LEN);
	ck_assert_uint_eq(B.cm.stats.dup_reqs, 1);
	ck_assert_uint_eq(dr_cm_pending(l), 4);
	/* a smaller backlog keeps what is held and takes nothing new */
	dr_cm_set_backlog(l, 2);
	forge_req_mad(mad, 7, PORT, 20, 15, 7);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_BACKLOG], 2);
	ck_assert_uint_eq(dr_cm_pending(l), 4);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 5);
	/* the listener goes: what it held still times out, for nobody's
	 * listener; the rejected one leaves after its time-wait */
	dr_cm_unlisten(l);
	ck_assert_uint_eq(B.cm.src_count.n, 0);
	dr_cm_release(rejected);
	run_until(now_ns + NS);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], 4);
	ck_assert_ptr_null(B.last[DR_CM_EV_CONNREQ_GONE].listen_ctx);
	ck_assert_uint_eq(B.cm.stats.req_expired, 4);
	ck_assert_ptr_null(B.cm.ids);
}
END_TEST

/* An unanswered request lives as long as its REQ says its peer waits, or
 * as we would, whichever is shorter; a REJ from its peer withdraws it. */
START_TEST(test_req_timeout)
{
	const uint64_t theirs = 3 * (4096ull << 8), ours = (RETRIES + 1) * (4096ull << RESP_TIMEOUT);
	struct dr_cm_listener *l;
	uint8_t mad[DR_MAD_LEN];
	uint64_t t0 = now_ns;

	ck_assert_int_eq(dr_cm_listen(&B.cm, PORT, BACKLOG, (void *)0x1234, &l), 0);
	forge_req_mad(mad, 0x77, PORT, 8, 2, 1); /* 3 tries of 1.05 ms */
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_uint_eq(dr_cm_deadline_ns(&B.cm), t0 + theirs);
	/* its resend does not make it live longer */
	now_ns = t0 + theirs / 2;
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	ck_assert_uint_eq(dr_cm_deadline_ns(&B.cm), t0 + theirs);
	now_ns = t0 + theirs - 1;
	dr_cm_tick(&B.cm);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], 0);
	now_ns = t0 + theirs;
	dr_cm_tick(&B.cm);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], 1);
	ck_assert_int_eq(B.last[DR_CM_EV_CONNREQ_GONE].err, -ETIMEDOUT);
	ck_assert_ptr_eq(B.last[DR_CM_EV_CONNREQ_GONE].listen_ctx, (void *)0x1234);
	ck_assert_ptr_null(B.cm.ids);
	ck_assert_uint_eq(dr_cm_pending(l), 0);
	ck_assert_uint_eq(B.cm.stats.req_expired, 1);
	ck_assert_uint_eq(wire_tail, 0);

	/* a REQ asking for hours is held no longer than we would wait */
	forge_req_mad(mad, 0x78, PORT, 31, 15, 2);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	ck_assert_uint_eq(dr_cm_deadline_ns(&B.cm), now_ns + ours);
	/* the peer withdraws it with a REJ that names only itself -- sent
	 * from another address, it is nobody's */
	forge(&B, IP_X, DR_CM_ATTR_REJ, 0x78, 0, 0, 0);
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_NO_ID], 1);
	ck_assert_uint_eq(dr_cm_pending(l), 1);
	forge(&B, IP_A, DR_CM_ATTR_REJ, 0x78, 0, 0, 0);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], 2);
	ck_assert_int_eq(B.last[DR_CM_EV_CONNREQ_GONE].err, -ECONNABORTED);
	ck_assert_uint_eq(B.cm.stats.req_withdrawn, 1);
	ck_assert_uint_eq(dr_cm_pending(l), 0);
	ck_assert_ptr_null(B.cm.ids);
	ck_assert_uint_eq(dr_cm_deadline_ns(&B.cm), UINT64_MAX);

	/* comm ID 0 is a request like any other, and goes like any other:
	 * once expired, its resend is a new request, not a duplicate */
	forge_req_mad(mad, 0, PORT, 8, 2, 3);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 3);
	ck_assert_uint_eq(B.cm.by_remote.n, 1);
	now_ns += theirs;
	dr_cm_tick(&B.cm);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ_GONE], 3);
	ck_assert_uint_eq(B.cm.by_remote.n, 0);
	ck_assert_ptr_null(B.cm.ids);
	dr_cm_recv(&B.cm, IP_A, mad, DR_MAD_LEN);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ], 4);
	ck_assert_uint_eq(B.cm.stats.dup_reqs, 1);
}
END_TEST

/*
 * Forged MADs against an established connection: each gets one field wrong
 * (or is one the connection does not expect) and must change nothing:
 * no event, no state change, no timer, one drop counted for its reason,
 * and the answer a MAD for nobody gets (DREQ: a DREP echoing it; REP: a
 * REJ stale, unless it named our id from the right address).  The last row
 * is the control: everything right, and the DREQ does tear B down.
 */
enum field { F_NONE, F_LOCAL, F_REMOTE, F_QPN, F_ADDR, F_REMOTE0 };
static const struct forged {
	bool to_b;
	uint16_t attr;
	enum field wrong;
	uint8_t msg;
	int why; /* enum dr_cm_drop, or -1: acts */
	uint16_t reply;
} forged[] = {
	{ true, DR_CM_ATTR_DREQ, F_REMOTE, 0, DR_CM_DROP_NO_ID, DR_CM_ATTR_DREP },
	{ true, DR_CM_ATTR_DREQ, F_LOCAL, 0, DR_CM_DROP_COMM_ID, DR_CM_ATTR_DREP },
	{ true, DR_CM_ATTR_DREQ, F_ADDR, 0, DR_CM_DROP_ADDR, DR_CM_ATTR_DREP },
	{ true, DR_CM_ATTR_DREQ, F_QPN, 0, DR_CM_DROP_QPN, DR_CM_ATTR_DREP },
	{ false, DR_CM_ATTR_DREQ, F_REMOTE, 0, DR_CM_DROP_NO_ID, DR_CM_ATTR_DREP },
	{ false, DR_CM_ATTR_DREQ, F_LOCAL, 0, DR_CM_DROP_COMM_ID, DR_CM_ATTR_DREP },
	{ false, DR_CM_ATTR_DREQ, F_ADDR, 0, DR_CM_DROP_ADDR, DR_CM_ATTR_DREP },
	{ false, DR_CM_ATTR_DREQ, F_QPN, 0, DR_CM_DROP_QPN, DR_CM_ATTR_DREP },
	{ false, DR_CM_ATTR_REJ, F_NONE, 1, DR_CM_DROP_STATE, 0 },
	{ false, DR_CM_ATTR_REJ, F_LOCAL, 1, DR_CM_DROP_COMM_ID, 0 },
	{ true, DR_CM_ATTR_REJ, F_ADDR, 1, DR_CM_DROP_ADDR, 0 },
	{ true, DR_CM_ATTR_REJ, F_REMOTE, 1, DR_CM_DROP_NO_ID, 0 },
	{ true, DR_CM_ATTR_REJ, F_REMOTE0, 0, DR_CM_DROP_STATE, 0 },
	{ true, DR_CM_ATTR_RTU, F_NONE, 0, DR_CM_DROP_STATE, 0 },
	{ true, DR_CM_ATTR_RTU, F_ADDR, 0, DR_CM_DROP_ADDR, 0 },
	{ true, DR_CM_ATTR_RTU, F_LOCAL, 0, DR_CM_DROP_COMM_ID, 0 },
	{ false, DR_CM_ATTR_RTU, F_NONE, 0, DR_CM_DROP_NO_ID, 0 },
	{ false, DR_CM_ATTR_REP, F_ADDR, 0, DR_CM_DROP_ADDR, DR_CM_ATTR_REJ },
	{ false, DR_CM_ATTR_REP, F_LOCAL, 0, DR_CM_DROP_COMM_ID, 0 },
	{ false, DR_CM_ATTR_REP, F_QPN, 0, DR_CM_DROP_QPN, 0 },
	{ false, DR_CM_ATTR_REP, F_REMOTE, 0, DR_CM_DROP_NO_ID, DR_CM_ATTR_REJ },
	{ true, DR_CM_ATTR_REP, F_NONE, 0, DR_CM_DROP_NO_ID, DR_CM_ATTR_REJ },
	{ false, DR_CM_ATTR_DREP, F_NONE, 0, DR_CM_DROP_STATE, 0 },
	{ false, DR_CM_ATTR_DREP, F_ADDR, 0, DR_CM_DROP_ADDR, 0 },
	{ false, DR_CM_ATTR_DREP, F_LOCAL, 0, DR_CM_DROP_COMM_ID, 0 },
	{ false, DR_CM_ATTR_MRA, F_NONE, 0, DR_CM_DROP_STATE, 0 },
	{ true, DR_CM_ATTR_MRA, F_ADDR, 1, DR_CM_DROP_ADDR, 0 },
	{ true, DR_CM_ATTR_MRA, F_REMOTE, 1, DR_CM_DROP_NO_ID, 0 },
	{ true, DR_CM_ATTR_DREQ, F_NONE, 0, -1, DR_CM_ATTR_DREP }, /* the control */
};

START_TEST(test_forged_mads)
{
	const struct forged *f = &forged[_i];
	struct dr_cm_id *a, *b, *to_id;
	struct side *to, *from;
	uint32_t local, remote, qpn, src;
	int nev_a[DR_CM_EV_NUM], nev_b[DR_CM_EV_NUM];
	uint64_t drops_before, why_before = 0;
	struct dr_mad reply;

	a = connect_accepted();
	b = B.conn;
	ck_assert_int_eq(a->state, DR_CMS_ESTABLISHED);
	ck_assert_int_eq(b->state, DR_CMS_ESTABLISHED);
	to = f->to_b ? &B : &A;
	from = f->to_b ? &A : &B;
	to_id = f->to_b ? b : a;
	/* what the real peer would put in: its comm ID, ours, our QPN */
	local = to_id->remote_comm_id;
	remote = to_id->local_comm_id;
	qpn = f->attr == DR_CM_ATTR_REP ? to_id->peer.qpn : to_id->local.qpn;
	src = from->ip;
	switch (f->wrong) {
	case F_LOCAL:
		local ^= 0x5a5a5a5a;
		break;
	case F_REMOTE:
		remote ^= 0x5a5a5a5a;
		break;
	case F_REMOTE0:
		remote = 0;
		break;
	case F_QPN:
		qpn ^= 1;
		break;
	case F_ADDR:
		src = IP_X;
		break;
	case F_NONE:
		break;
	}
	memcpy(nev_a, A.nev, sizeof(nev_a));
	memcpy(nev_b, B.nev, sizeof(nev_b));
	drops_before = drops_of(to);
	if (f->why >= 0)
		why_before = to->cm.stats.drop[f->why];
	ck_assert_uint_eq(wire_tail - wire_head, 0);

	forge(to, src, f->attr, local, remote, qpn, f->msg);

	if (f->reply) {
		ck_assert_uint_eq(wire_tail - wire_head, 1);
		ck_assert_int_eq(dr_mad_parse(wire[wire_head % 256].mad, DR_MAD_LEN, &reply), 0);
		ck_assert_int_eq(reply.attr_id, f->reply);
		ck_assert_uint_eq(wire[wire_head % 256].dst, src);
	} else {
		ck_assert_uint_eq(wire_tail - wire_head, 0);
	}
	wire_head = wire_tail;
	if (f->why < 0) {
		/* the control: the same MAD with everything right acts */
		ck_assert_int_eq(b->state, DR_CMS_TIMEWAIT);
		ck_assert_int_eq(B.nev[DR_CM_EV_DISCONNECTED], 1);
		ck_assert_uint_eq(drops_of(to), drops_before);
		return;
	}
	ck_assert_uint_eq(to->cm.stats.drop[f->why], why_before + 1);
	ck_assert_uint_eq(drops_of(to), drops_before + 1);
	ck_assert(!memcmp(nev_a, A.nev, sizeof(nev_a)));
	ck_assert(!memcmp(nev_b, B.nev, sizeof(nev_b)));
	ck_assert_int_eq(a->state, DR_CMS_ESTABLISHED);
	ck_assert_int_eq(b->state, DR_CMS_ESTABLISHED);
	ck_assert_uint_eq(dr_cm_deadline_ns(&A.cm), UINT64_MAX);
	ck_assert_uint_eq(dr_cm_deadline_ns(&B.cm), UINT64_MAX);
	/* and the connection still closes as it should */
	ck_assert_int_eq(dr_cm_disconnect(a), 0);
	run_until(now_ns + 10000000);
	ck_assert_int_eq(A.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_int_eq(B.nev[DR_CM_EV_DISCONNECTED], 1);
}
END_TEST

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * The IDs of 1,000 connections: never 0, no repeats on a side, and each
 * bit set about half the time.  Each bit of n independent uniform values
 * is Binomial(n, 1/2): mean n/2, standard deviation sqrt(n)/2 (22.4 for
 * the 2,000 comm IDs, 15.8 for the 1,000 TIDs); allowing 6 of them, a
 * correct generator fails one of the 96 bits with probability < 2e-7,
 * while a counter, a clock or a 16-bit generator fails at once.
 */
START_TEST(test_id_distribution)
{
	enum { N = 1000 };
	static uint32_t ids_a[N], ids_b[N];
	static uint64_t tids[N];
	struct dr_cm_conn_param p = { .qpn = 0x11, .path_mtu = 3 };
	struct dr_cm_listener *l;
	int bits[64] = { 0 };
	const int n32 = 2 * N, sd32 = 224; /* tenths: sqrt(2000) / 2 = 22.4 */
	const int sd64 = 158;		   /* sqrt(1000) / 2 = 15.8 */

	B.accept = 1;
	ck_assert_int_eq(dr_cm_listen(&B.cm, PORT, BACKLOG, NULL, &l), 0);
	for (int i = 0; i < N; i++) {
		struct dr_cm_id *id;

		ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, PORT, (uint16_t)(1000 + i), &p, NULL,
					       &id),
				 0);
		run_until(now_ns + 1000000);
		ck_assert_int_eq(id->state, DR_CMS_ESTABLISHED);
		ck_assert_int_eq(B.conn->state, DR_CMS_ESTABLISHED);
		ids_a[i] = id->local_comm_id;
		ids_b[i] = B.conn->local_comm_id;
		tids[i] = id->tid;
		ck_assert_uint_ne(ids_a[i], 0);
		ck_assert_uint_ne(ids_b[i], 0);
		ck_assert_uint_ne(tids[i], 0);
		for (int k = 0; k < 32; k++)
			bits[k] += (ids_a[i] >> k & 1) + (ids_b[i] >> k & 1);
	}
	ck_assert_uint_eq(A.cm.by_local.n, N);
	ck_assert_uint_eq(B.cm.by_local.n, N);
	for (int k = 0; k < 32; k++)
		ck_assert_msg(abs(10 * bits[k] - 10 * n32 / 2) <= 6 * sd32,
			      "comm ID bit %d set %d times of %d", k, bits[k], n32);
	memset(bits, 0, sizeof(bits));
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 64; k++)
			bits[k] += tids[i] >> k & 1;
	for (int k = 0; k < 64; k++)
		ck_assert_msg(abs(10 * bits[k] - 10 * N / 2) <= 6 * sd64,
			      "TID bit %d set %d times of %d", k, bits[k], N);
	qsort(ids_a, N, sizeof(ids_a[0]), cmp_u32);
	qsort(ids_b, N, sizeof(ids_b[0]), cmp_u32);
	qsort(tids, N, sizeof(tids[0]), cmp_u64);
	for (int i = 1; i < N; i++) {
		ck_assert_uint_ne(ids_a[i], ids_a[i - 1]);
		ck_assert_uint_ne(ids_b[i], ids_b[i - 1]);
		ck_assert_uint_ne(tids[i], tids[i - 1]);
	}
}
END_TEST

/* ---- two CMs on one interface (issue 12) -----------------------------------
 *
 * B and B2 are two processes on one host: same address, each sees every
 * MAD to it.  A fake registry (what src/fi/registry.c does with locks)
 * says who holds which comm ID and port, and who answers for nobody.
 */
static struct side B2;
static struct {
	uint32_t comm[64];
	struct side *owner[64];
	unsigned n;
	uint16_t port;
	struct side *port_owner, *responder;
} reg;

static int reg_claim(void *ctx, uint32_t id)
{
	for (unsigned i = 0; i < reg.n; i++)
		if (reg.comm[i] == id)
			return reg.owner[i] == ctx ? 0 : -EBUSY;
	ck_assert_uint_lt(reg.n, 64);
	reg.comm[reg.n] = id;
	reg.owner[reg.n++] = ctx;
	return 0;
}

static void reg_release(void *ctx, uint32_t id)
{
	for (unsigned i = 0; i < reg.n; i++)
		if (reg.comm[i] == id && reg.owner[i] == ctx) {
			reg.comm[i] = reg.comm[--reg.n];
			reg.owner[i] = reg.owner[reg.n];
			return;
		}
}

static enum dr_cm_whose reg_whose(void *ctx, enum dr_cm_key key, uint32_t v)
{
	if (key == DR_CM_KEY_PORT && reg.port_owner && reg.port == v)
		return reg.port_owner == ctx ? DR_CM_WHOSE_MINE : DR_CM_WHOSE_OTHER;
	if (key == DR_CM_KEY_COMM_ID)
		for (unsigned i = 0; i < reg.n; i++)
			if (reg.comm[i] == v)
				return reg.owner[i] == ctx ? DR_CM_WHOSE_MINE : DR_CM_WHOSE_OTHER;
	return reg.responder == ctx ? DR_CM_WHOSE_MINE : DR_CM_WHOSE_NOBODY;
}

static const struct dr_cm_ops shared_ops = {
	.send_mad = send_mad,
	.now_ns = clock_ns,
	.event = on_event,
	.comm_id_claim = reg_claim,
	.comm_id_release = reg_release,
	.whose = reg_whose,
};

static void shared_init(struct side *s)
{
	side_init_ops(s, IP_B, RESP_TIMEOUT, RETRIES, &shared_ops);
}

/* every MAD to IP_B reaches B and B2 */
static void run_shared(uint64_t limit_ns)
{
	do {
		while (wire_head != wire_tail) {
			struct msg *m = &wire[wire_head++ % 256];

			if (m->dst == IP_A) {
				dr_cm_recv(&A.cm, m->src, m->mad, DR_MAD_LEN);
			} else {
				dr_cm_recv(&B.cm, m->src, m->mad, DR_MAD_LEN);
				dr_cm_recv(&B2.cm, m->src, m->mad, DR_MAD_LEN);
			}
		}
	} while (advance(limit_ns, (struct side *const[]){&A, &B, &B2}, 3));
}

START_TEST(test_shared_interface)
{
	struct dr_cm_conn_param p = {
		.qpn = 0x11, .start_psn = 1, .retry_count = 7, .rnr_retry_count = 7,
		.path_mtu = 3, .ack_timeout = 14,
	};
	struct dr_cm_listener *l;
	struct dr_cm_id *id, *id2;

	memset(&reg, 0, sizeof(reg));
	dr_cm_fini(&B.cm);
	shared_init(&B);
	shared_init(&B2);
	reg.responder = &B; /* B came first */

	/* B2 listens: only B2 answers the REQ, and B leaves the RTU alone */
	B2.accept = 1;
	ck_assert_int_eq(dr_cm_listen(&B2.cm, PORT, BACKLOG, NULL, &l), 0);
	reg.port = PORT;
	reg.port_owner = &B2;
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, PORT, 40000, &p, NULL, &id), 0);
	run_shared(now_ns + 1000000);
	ck_assert_int_eq(A.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_int_eq(B2.nev[DR_CM_EV_CONNREQ], 1);
	ck_assert_int_eq(B2.nev[DR_CM_EV_ESTABLISHED], 1);
	ck_assert_int_eq(B.nev[DR_CM_EV_CONNREQ] + B.nev[DR_CM_EV_ESTABLISHED], 0);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_REP & 0x1f], 1);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_REJ & 0x1f], 0);
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_OTHER_CM], 2); /* REQ, RTU */
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_NO_ID], 0);

	/* nobody listens on PORT + 1: one REJ, from the responder B */
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, PORT + 1, 40001, &p, NULL, &id2), 0);
	run_shared(now_ns + 1000000);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_REJ & 0x1f], 1);
	ck_assert_int_eq(A.nev[DR_CM_EV_REJECTED], 1);
	ck_assert_uint_eq(A.last[DR_CM_EV_REJECTED].rej_reason, DR_CM_REJ_INVALID_SERVICE_ID);
	ck_assert_uint_eq(B.cm.stats.rej_no_listener, 1);
	ck_assert_uint_eq(B2.cm.stats.rej_no_listener, 0);
	ck_assert_uint_eq(B2.cm.stats.drop[DR_CM_DROP_RESPONDER], 1);
	dr_cm_release(id2);

	/* the responder is gone: nobody answers, until B2 takes the role
	 * over and answers the resent REQ, once */
	reg.responder = NULL;
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, PORT + 2, 40002, &p, NULL, &id2), 0);
	run_shared(now_ns + 1000000); /* less than one response timeout */
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_REJ & 0x1f], 1);
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_RESPONDER], 1);
	reg.responder = &B2;
	run_shared(now_ns + 10000000);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_REJ & 0x1f], 2);
	ck_assert_int_eq(A.nev[DR_CM_EV_REJECTED], 2);
	ck_assert_uint_eq(B2.cm.stats.rej_no_listener, 1);
	dr_cm_release(id2);

	/* A disconnects: B2 answers the DREQ, B stays silent */
	ck_assert_int_eq(dr_cm_disconnect(id), 0);
	run_shared(now_ns + 1000000);
	ck_assert_int_eq(sent_by_attr[DR_CM_ATTR_DREP & 0x1f], 1);
	ck_assert_int_eq(A.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_int_eq(B2.nev[DR_CM_EV_DISCONNECTED], 1);
	ck_assert_uint_eq(B.cm.stats.drop[DR_CM_DROP_OTHER_CM], 3);
	dr_cm_release(id);
	dr_cm_release(B2.conn);

	/* every comm ID leaves the registry with its id */
	run_shared(now_ns + 2 * TIMEWAIT_NS);
	dr_cm_unlisten(l);
	dr_cm_fini(&A.cm);
	dr_cm_fini(&B2.cm);
	dr_cm_fini(&B.cm);
	ck_assert_uint_eq(reg.n, 0);
	shared_init(&B); /* for teardown */
	side_init(&A, IP_A);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cm_state_machine");
	TCase *tc = tcase_create("cm");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_connect_accept, 0, 3);
	tcase_add_test(tc, test_req_wire_format);
	tcase_add_test(tc, test_ece);
	tcase_add_test(tc, test_reject_with_data);
	tcase_add_test(tc, test_no_listener);
	tcase_add_loop_test(tc, test_lossy_handshake, 0, sizeof(drops) / sizeof(drops[0]));
	tcase_add_test(tc, test_unreachable_timing);
	tcase_add_loop_test(tc, test_disconnect, 0, 3);
	tcase_add_test(tc, test_disconnect_crossed);
	tcase_add_test(tc, test_disconnect_dead_peer);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_garbage_mads);
	tcase_add_test(tc, test_rxe_req);
	tcase_add_test(tc, test_mad_frame);
	tcase_add_test(tc, test_ipv6_connect);
	tcase_add_test(tc, test_ipv6_mad_frame);
	tcase_add_test(tc, test_ipv6_rxe_req);
	tcase_add_test(tc, test_req_flood);
	tcase_add_test(tc, test_backlog);
	tcase_add_test(tc, test_req_timeout);
	tcase_add_loop_test(tc, test_forged_mads, 0, sizeof(forged) / sizeof(forged[0]));
	tcase_add_test(tc, test_id_distribution);
	tcase_add_test(tc, test_shared_interface);
	suite_add_tcase(s, tc);
	return ck_run(s, false);
}
