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

#include "dr_cm.h"
#include "../tools/pcapng.h"

#define IP_A 0xc0000201u /* 192.0.2.1, active */
#define IP_B 0xc0000202u /* 192.0.2.2, passive */
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
	struct dr_cm_id *conn; /* the CONNREQ'd id (passive) */
	int accept;	       /* on CONNREQ: 1 accept, -1 reject, 0 wait */
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
	s->last[ev->type] = *ev;
	s->last_peer[ev->type] = *ev->peer;
	memset(s->last_priv[ev->type], 0, sizeof(s->last_priv[0]));
	ck_assert_uint_le(ev->private_len, sizeof(s->last_priv[0]));
	if (ev->private_len)
		memcpy(s->last_priv[ev->type], ev->private_data, ev->private_len);
	if (ev->type == DR_CM_EV_CONNREQ) {
		s->conn = ev->id;
		if (s->accept > 0)
			ck_assert_int_eq(dr_cm_accept(ev->id, &rep), 0);
		else if (s->accept < 0)
			ck_assert_int_eq(dr_cm_reject(ev->id, "no thanks", 9), 0);
	}
}

static const struct dr_cm_ops ops = {
	.send_mad = send_mad,
	.now_ns = clock_ns,
	.event = on_event,
};

static void side_init(struct side *s, uint32_t ip)
{
	struct dr_cm_config cfg = {
		.local_ip4 = ip,
		.ca_guid = 0x0200000000000000ull | ip,
		.cm_resp_timeout = RESP_TIMEOUT,
		.max_cm_retries = RETRIES,
		.timewait_ns = TIMEWAIT_NS,
	};

	memset(s, 0, sizeof(*s));
	s->ip = ip;
	ck_assert_int_eq(dr_cm_init(&s->cm, &cfg, &ops, s), 0);
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

/* deliver everything on the wire, then move time to the next deadline,
 * until nothing is left to do or the time limit passes */
static void run_until(uint64_t limit_ns)
{
	for (;;) {
		uint64_t d;

		while (wire_head != wire_tail) {
			struct msg *m = &wire[wire_head++ % 256];
			struct side *to = m->dst == IP_A ? &A : &B;

			dr_cm_recv(&to->cm, m->src, m->mad, DR_MAD_LEN);
		}
		d = dr_cm_deadline_ns(&A.cm);
		if (dr_cm_deadline_ns(&B.cm) < d)
			d = dr_cm_deadline_ns(&B.cm);
		if (d == UINT64_MAX || d > limit_ns)
			return;
		now_ns = d;
		dr_cm_tick(&A.cm);
		dr_cm_tick(&B.cm);
	}
}

static struct dr_cm_id *connect_ab(const void *priv, size_t len)
{
	struct dr_cm_conn_param p = {
		.qpn = 0x11, .start_psn = 0xfffffe, .responder_resources = 2,
		.initiator_depth = 4, .retry_count = 7, .rnr_retry_count = 7,
		.path_mtu = 3, .ack_timeout = 14, .private_data = priv, .private_len = len,
	};
	struct dr_cm_listener *l;
	struct dr_cm_id *id;

	ck_assert_int_eq(dr_cm_listen(&B.cm, PORT, BACKLOG, (void *)0x1234, &l), 0);
	ck_assert_int_eq(dr_cm_connect(&A.cm, IP_B, PORT, 40000, &p, (void *)0x5678, &id), 0);
	ck_assert_int_eq(id->state, DR_CMS_REQ_SENT);
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

/* the REQ on the wire is what rdma_cm sends (ROCE-REFERENCE.md C.3/C.4) */
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

	B.accept = 1;
	id = connect_ab(NULL, 0);
	run_until(now_ns + 1000000);
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

	B.accept = 1;
	id = connect_ab(NULL, 0);
	run_until(now_ns + 1000000);
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

	B.accept = 1;
	id = connect_ab(NULL, 0);
	run_until(now_ns + 1000000);
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
static int load_rping_req(uint8_t *mad)
{
	char path[4200], err[256];
	const char *top = getenv("top_srcdir");
	struct dr_pcapng_pkt cp;
	struct dr_pcapng *r;
	int found = 0;

	snprintf(path, sizeof(path), "%s/tests/golden/rxe-rping.pcapng", top ? top : ".");
	r = dr_pcapng_open(path, err, sizeof(err));
	ck_assert_msg(r, "%s", err);
	while (dr_pcapng_next(r, &cp) == 1) {
		struct dr_pkt pkt;

		if (cp.number != 21)
			continue;
		ck_assert_int_eq(dr_pkt_parse(cp.data, cp.caplen, 0, &pkt), DR_PKT_OK);
		ck_assert_uint_eq(pkt.payload_len, DR_MAD_LEN);
		memcpy(mad, pkt.payload, DR_MAD_LEN);
		found = 1;
	}
	dr_pcapng_close(r);
	return found;
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
 * our address, AckReq set, consecutive PSNs (ROCE-REFERENCE.md C.1) */
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

int main(void)
{
	Suite *s = suite_create("cm_state_machine");
	TCase *tc = tcase_create("cm");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_connect_accept, 0, 3);
	tcase_add_test(tc, test_req_wire_format);
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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
