// SPDX-License-Identifier: BSD-2-Clause
/*
 * A hostile peer: frames forged with droce's own codec (correct ICRC unless
 * the case says otherwise) are injected into a live connection between two
 * droce domains on an in-process link (fi_fixture.h), as a third party on
 * the wire would send them: sent as raw frames out of side A's port
 * (FI_DROCE_OPS_1 send_raw), they reach B as A's own frames do.  Each case
 * names the outcome IBA and rdma_rxe give it - dropped and counted, NAK,
 * QP error with flush - and asserts it through droce's counters
 * (fi_open_ops FI_DROCE_OPS_1), the completions, and memory: B's
 * registered region keeps its exact contents unless a correctly keyed
 * request wrote it, and the guard bytes around every region stay intact.
 * After each case the connection must still carry verified data (unless
 * the case is the QP error).
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "dr_port.h"
#include "dr_roce.h"
#include "fi_ext_droce.h"
#include "fi_fixture.h"
#include "forge.h"

#define PAIR	"hostile"
#define REGION	4096
#define PATTERN 0x3c
#define CAPS	(FI_MSG | FI_RMA | FI_ATOMIC)

static struct fx F;
static struct fi_droce_ops *ops;

/* per case */
static struct fx_conn C;
static struct fx_region reg_b; /* B's target: remote write/read */
static struct fx_region reg_a; /* A's source/sink */
static struct fi_droce_qp_info qa, qb;

/* ---- counters ---------------------------------------------------------------- */

#define DOM_B(name) fx_counter(&F.dom_b->fid, name)
#define EP_B(name)  fx_counter(&C.ep_b->fid, name)
#define EP_A(name)  fx_counter(&C.ep_a->fid, name)

static void qp_infos(void)
{
	ck_assert_int_eq(ops->qp_info(C.ep_a, &qa), 0);
	ck_assert_int_eq(ops->qp_info(C.ep_b, &qb), 0);
}

/* ---- the injector -------------------------------------------------------------- */

static void inject(const void *frame, size_t len)
{
	ck_assert_int_eq(ops->send_raw(F.dom_a, frame, len), 0);
}

/* Let B take what was injected (and answer it): drive both sides. */
static void settle(void)
{
	fx_cq_drive(C.cq_b, C.cq_a, 50);
}

/* A frame as A's QP would send it to B's: addresses, UDP port, QPN. */
static void desc_from_a(struct dr_pkt_desc *d, uint8_t opcode, uint32_t psn)
{
	dr_pkt_desc_init(d);
	memcpy(d->src_mac, qa.mac, 6);
	memcpy(d->dst_mac, qb.mac, 6);
	d->src_ip4 = FX_IP_A;
	d->dst_ip4 = FX_IP_B;
	d->sport = qa.udp_sport;
	d->opcode = opcode;
	d->dqpn = qb.qpn;
	d->psn = psn;
	d->ackreq = true;
}

static uint8_t forged_payload[256];

/* WRITE_ONLY of 256 bytes of 0xee into B's region at offset 0, keyed. */
static void desc_write(struct dr_pkt_desc *d, uint32_t psn)
{
	desc_from_a(d, DR_OP_WRITE_ONLY, psn);
	memset(forged_payload, 0xee, sizeof(forged_payload));
	d->reth.va = (uintptr_t)reg_b.buf;
	d->reth.rkey = (uint32_t)reg_b.key;
	d->reth.len = sizeof(forged_payload);
	d->payload = forged_payload;
	d->payload_len = sizeof(forged_payload);
}

static int build(const struct dr_pkt_desc *d, uint8_t *buf, size_t cap)
{
	int len = dr_pkt_build(d, buf, cap);

	ck_assert_int_gt(len, 0);
	return len;
}

/* ---- what every case checks -------------------------------------------------- */

/* B's region holds exactly PATTERN (nothing forged landed), guards intact. */
static void region_b_untouched(void)
{
	for (size_t i = 0; i < REGION; i++)
		if (reg_b.buf[i] != PATTERN)
			ck_abort_msg("B's region byte %zu is 0x%02x, want 0x%02x", i, reg_b.buf[i],
				     PATTERN);
	fx_region_check_guards(&reg_b);
	fx_region_check_guards(&reg_a);
}

static void region_b_untouched_guards(void)
{
	fx_region_check_guards(&reg_b);
	fx_region_check_guards(&reg_a);
}

/* A real RDMA write A -> B and a send/recv still work, byte-exact, with
 * exactly one completion each. */
static void connection_carries_data(unsigned seed)
{
	struct fi_cq_data_entry e;
	uint8_t msg[100], in[100];

	for (size_t i = 0; i < REGION; i++)
		reg_a.buf[i] = (uint8_t)(i * 13 + seed);
	ck_assert_int_eq(fi_write(C.ep_a, reg_a.buf, REGION, fi_mr_desc(reg_a.mr), 0,
				  (uintptr_t)reg_b.buf, reg_b.key, (void *)0x77),
			 0);
	ck_assert_int_eq(fx_cq_wait(C.cq_a, C.cq_b, &e), 1);
	ck_assert_ptr_eq(e.op_context, (void *)0x77);
	ck_assert(e.flags & FI_WRITE);
	ck_assert(!memcmp(reg_b.buf, reg_a.buf, REGION));
	fx_region_check_guards(&reg_b);

	memset(in, 0, sizeof(in));
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i ^ seed);
	ck_assert_int_eq(fi_recv(C.ep_b, in, sizeof(in), NULL, 0, (void *)0x88), 0);
	ck_assert_int_eq(fi_send(C.ep_a, msg, sizeof(msg), NULL, 0, (void *)0x99), 0);
	ck_assert_int_eq(fx_cq_wait(C.cq_a, C.cq_b, &e), 1);
	ck_assert_ptr_eq(e.op_context, (void *)0x99);
	ck_assert_int_eq(fx_cq_wait(C.cq_b, C.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, (void *)0x88);
	ck_assert_uint_eq(e.len, sizeof(msg));
	ck_assert(!memcmp(in, msg, sizeof(msg)));
	/* nothing else completed */
	ck_assert_int_eq(fi_cq_read(C.cq_a, &e, 1), -FI_EAGAIN);
	ck_assert_int_eq(fi_cq_read(C.cq_b, &e, 1), -FI_EAGAIN);
}

/* ---- cases ------------------------------------------------------------------- */

/* Bad ICRC: the port's parser drops it (rxe_icrc_check); the responder
 * never sees it. */
START_TEST(test_bad_icrc)
{
	uint8_t frame[512];
	struct dr_pkt_desc d;
	uint64_t bad = DOM_B("rx_bad_icrc");
	int len;

	desc_write(&d, qb.rq_psn);
	len = build(&d, frame, sizeof(frame));
	frame[len - 1] ^= 0x01;
	inject(frame, (size_t)len);
	settle();
	ck_assert_uint_eq(DOM_B("rx_bad_icrc"), bad + 1);
	qp_infos();
	ck_assert_str_eq(qb.state, "RTS");
	region_b_untouched();
	connection_carries_data(1);
}
END_TEST

/* A READ response with a bad ICRC, at the very PSN B's READ waits for,
 * there before A's real one: B's port copies its payload into the READ's
 * buffer while checking it (dr_port_set_place: no other pass over it),
 * finds the ICRC wrong and drops it - counted, the READ not completed,
 * nothing else touched.  A's real response then fills the buffer and
 * completes the READ once, byte-exact. */
START_TEST(test_bad_icrc_read_response)
{
	static uint8_t frame[REGION + 256], forged[REGION];
	struct fx_region src, dst;
	struct fi_cq_data_entry e;
	struct dr_pkt_desc d;
	uint64_t bad = DOM_B("rx_bad_icrc"), placed = DOM_B("rx_placed");
	uint32_t n;
	int len;

	qp_infos();
	n = qb.path_mtu < REGION ? qb.path_mtu : REGION; /* one response */
	ck_assert_uint_ge(n, DR_ICRC_DEFER_MIN);
	fx_region_open(&src, F.dom_a, REGION, FI_REMOTE_READ, 0);
	fx_region_open(&dst, F.dom_b, REGION, FI_READ, PATTERN);
	for (size_t i = 0; i < REGION; i++)
		src.buf[i] = (uint8_t)(i * 29 + 3);
	memset(forged, 0xee, sizeof(forged));
	desc_from_a(&d, DR_OP_READ_RSP_ONLY, qb.sq_psn);
	d.ackreq = false;
	d.aeth.syndrome = DR_AETH_ACK_UNLIMITED;
	d.payload = forged;
	d.payload_len = n;
	len = build(&d, frame, sizeof(frame));
	frame[len - 1] ^= 0x01;
	/* posted first, so its request is built (and the READ outstanding)
	 * when B's next poll finds the forged response, before that poll
	 * sends the request to A */
	ck_assert_int_eq(
	    fi_read(C.ep_b, dst.buf, n, fi_mr_desc(dst.mr), 0, src.addr, src.key, (void *)0x66), 0);
	inject(frame, (size_t)len);
	ck_assert_int_eq(fi_cq_read(C.cq_b, &e, 1), -FI_EAGAIN);
	ck_assert_uint_eq(DOM_B("rx_bad_icrc"), bad + 1);
	ck_assert_uint_eq(DOM_B("rx_placed"), placed);
	/* the port did place it (the path under test), and no more */
	ck_assert_uint_eq(dst.buf[0], 0xee);
	ck_assert_uint_eq(dst.buf[n - 1], 0xee);
	if (n < REGION)
		ck_assert_uint_eq(dst.buf[n], PATTERN);
	/* placed, not accepted: the READ is still open */
	ck_assert_int_eq(fi_cq_read(C.cq_b, &e, 1), -FI_EAGAIN);

	ck_assert_int_eq(fx_cq_wait(C.cq_b, C.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, (void *)0x66);
	ck_assert(e.flags & FI_READ);
	ck_assert(!memcmp(dst.buf, src.buf, n));
	for (size_t i = n; i < REGION; i++)
		ck_assert_uint_eq(dst.buf[i], PATTERN);
	ck_assert_uint_eq(DOM_B("rx_bad_icrc"), bad + 1);
	ck_assert_uint_eq(DOM_B("rx_placed"), placed + 1);
	ck_assert_int_eq(fi_cq_read(C.cq_b, &e, 1), -FI_EAGAIN);
	ck_assert_int_eq(fi_cq_read(C.cq_a, &e, 1), -FI_EAGAIN);
	fx_region_check_guards(&src);
	fx_region_check_guards(&dst);
	fx_region_close(&src);
	fx_region_close(&dst);
	qp_infos();
	ck_assert_str_eq(qb.state, "RTS");
	region_b_untouched();
	connection_carries_data(11);
}
END_TEST

/* Truncated at every length from 0 to one byte short: each dropped by the
 * parser and counted, none reaches the QP. */
START_TEST(test_truncated)
{
	uint8_t frame[512];
	struct dr_pkt_desc d;
	uint64_t dropped = DOM_B("rx_dropped"), rx_qp = EP_B("rx_frames");
	uint32_t psn = qb.rq_psn;
	int len, n = 0;

	desc_write(&d, qb.rq_psn);
	len = build(&d, frame, sizeof(frame));
	for (int cut = 1; cut < len; cut++) {
		inject(frame, (size_t)cut);
		n++;
		if (n % 64 == 0)
			settle();
	}
	settle();
	ck_assert_uint_eq(DOM_B("rx_dropped"), dropped + (uint64_t)n);
	ck_assert_uint_eq(EP_B("rx_frames"), rx_qp);
	qp_infos();
	ck_assert_uint_eq(qb.rq_psn, psn);
	region_b_untouched();
	connection_carries_data(2);
}
END_TEST

/* A QPN nobody has: dropped and counted by the device. */
START_TEST(test_unknown_qpn)
{
	uint8_t frame[512];
	struct dr_pkt_desc d;
	uint64_t unknown = DOM_B("rx_drop_unknown_qpn");
	int len;

	desc_write(&d, qb.rq_psn);
	d.dqpn = qb.qpn ^ 0x5a5a5;
	len = build(&d, frame, sizeof(frame));
	inject(frame, (size_t)len);
	settle();
	ck_assert_uint_eq(DOM_B("rx_drop_unknown_qpn"), unknown + 1);
	region_b_untouched();
	connection_carries_data(3);
}
END_TEST

/* PSN ahead of the expected one: one sequence-error NAK for the gap
 * (IBA 9.7.5.1.2; rxe check_psn), nothing executed. */
START_TEST(test_psn_ahead)
{
	uint8_t frame[512];
	struct dr_pkt_desc d;
	uint64_t naks = EP_B("tx_seq_naks");
	uint32_t psn = qb.rq_psn;
	int len;

	desc_write(&d, dr_psn_add(qb.rq_psn, 5));
	len = build(&d, frame, sizeof(frame));
	inject(frame, (size_t)len);
	settle();
	ck_assert_uint_eq(EP_B("tx_seq_naks"), naks + 1);
	qp_infos();
	ck_assert_uint_eq(qb.rq_psn, psn);
	ck_assert_str_eq(qb.state, "RTS");
	region_b_untouched();
	connection_carries_data(4);
}
END_TEST

/* PSN just behind the expected one: a duplicate (IBA 9.7.5.1.2): answered
 * with an ACK, a WRITE not executed again - B's memory is untouched. */
START_TEST(test_psn_duplicate)
{
	uint8_t frame[512];
	struct dr_pkt_desc d;
	uint64_t dups;
	int len;

	connection_carries_data(5); /* a PSN behind the expected one was used */
	memset(reg_b.buf, PATTERN, REGION);
	qp_infos();
	dups = EP_B("rx_dup_reqs");
	desc_write(&d, dr_psn_add(qb.rq_psn, -1));
	len = build(&d, frame, sizeof(frame));
	inject(frame, (size_t)len);
	settle();
	ck_assert_uint_eq(EP_B("rx_dup_reqs"), dups + 1);
	region_b_untouched();
	connection_carries_data(6);
}
END_TEST

/* An opcode invalid for the responder's state at the expected PSN (a SEND
 * MIDDLE with no SEND begun): NAK invalid request, the QP goes to error and
 * its receive is flushed (IBA 9.7.5.2.4 class D1, rxe's
 * RESPST_ERR_MISMATCH_OPCODE).  Only a sender who knows QPN and PSN can do
 * this: that is the protocol's limit (both are unpredictable). */
START_TEST(test_invalid_opcode)
{
	uint8_t frame[512], in[64];
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;
	struct dr_pkt_desc d;
	uint64_t naks = EP_B("tx_err_naks");
	int len;

	ck_assert_int_eq(fi_recv(C.ep_b, in, sizeof(in), NULL, 0, (void *)0x55), 0);
	desc_from_a(&d, DR_OP_SEND_MIDDLE, qb.rq_psn);
	d.payload = forged_payload;
	d.payload_len =
	    (uint32_t)qb.path_mtu < sizeof(forged_payload) ? qb.path_mtu : sizeof(forged_payload);
	len = build(&d, frame, sizeof(frame));
	inject(frame, (size_t)len);
	settle();
	ck_assert_uint_eq(EP_B("tx_err_naks"), naks + 1);
	qp_infos();
	ck_assert_str_eq(qb.state, "ERROR");
	/* B's receive comes back flushed */
	ck_assert_int_eq(fx_cq_wait(C.cq_b, C.cq_a, &e), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_cq_readerr(C.cq_b, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, (void *)0x55);
	ck_assert_int_eq(err.err, FI_ECANCELED);
	region_b_untouched();
}
END_TEST

/* A correct request at the expected PSN but for another partition, or
 * from an address that is not the connected peer's: dropped by the QP's
 * receive checks (rxe check_keys, check_addr), counted per QP and per
 * port, nothing answered, nothing executed. */
static void expect_checked_drop(struct dr_pkt_desc *d, const char *counter_name)
{
	uint8_t frame[512];
	uint64_t q0 = EP_B(counter_name), p0 = DOM_B(counter_name);
	uint64_t tx0 = EP_B("tx_frames");
	uint32_t psn = qb.rq_psn;
	int len = build(d, frame, sizeof(frame));

	inject(frame, (size_t)len);
	settle();
	ck_assert_uint_eq(EP_B(counter_name), q0 + 1);
	ck_assert_uint_eq(DOM_B(counter_name), p0 + 1);
	ck_assert_uint_eq(EP_B("tx_frames"), tx0);
	qp_infos();
	ck_assert_uint_eq(qb.rq_psn, psn);
	ck_assert_str_eq(qb.state, "RTS");
	region_b_untouched();
}

START_TEST(test_pkey_mismatch)
{
	struct dr_pkt_desc d;

	desc_write(&d, qb.rq_psn);
	d.pkey = 0x1234;
	expect_checked_drop(&d, "rx_drop_pkey");
	connection_carries_data(7);
}
END_TEST

START_TEST(test_spoofed_source)
{
	struct dr_pkt_desc d;

	desc_write(&d, qb.rq_psn);
	d.src_ip4 = 0xc0000209; /* 192.0.2.9 */
	expect_checked_drop(&d, "rx_drop_src_addr");
	connection_carries_data(8);
}
END_TEST

/* A forged ARP frame about A (192.0.2.1 is-at 02:66:66:66:66:66) to B:
 * reply or request, unicast or broadcast.  Unasked ARP never moves a known
 * neighbour (port_neigh.c): counted as a conflict, B keeps sending to A's
 * real MAC, so A refuses none of B's frames as not its own. */
static void forge_arp(uint8_t *frame, uint16_t oper, bool bcast)
{
	static const uint8_t evil[6] = {0x02, 0x66, 0x66, 0x66, 0x66, 0x66};
	struct dr_eth_hdr *eth = (struct dr_eth_hdr *)frame;
	struct dr_arp_hdr *arp = (struct dr_arp_hdr *)(eth + 1);

	memset(frame, 0, DR_ETH_ZLEN);
	memset(eth->dst, 0xff, 6);
	if (!bcast)
		memcpy(eth->dst, qb.mac, 6);
	memcpy(eth->src, evil, 6);
	eth->type = htons(DR_ETH_P_ARP);
	arp->htype = htons(1);
	arp->ptype = htons(DR_ETH_P_IPV4);
	arp->hlen = 6;
	arp->plen = 4;
	arp->oper = htons(oper);
	memcpy(arp->sha, evil, 6);
	arp->spa = htonl(FX_IP_A);
	if (oper == 2)
		memcpy(arp->tha, qb.mac, 6);
	arp->tpa = htonl(FX_IP_B);
}

static void forged_arp_changes_nothing(unsigned n)
{
	uint8_t frame[DR_ETH_ZLEN];
	uint64_t conflicts = DOM_B("arp_conflicts");
	uint64_t not_ours_a = fx_counter(&F.dom_a->fid, "rx_not_ours");

	for (unsigned i = 0; i < n; i++) {
		forge_arp(frame, i % 2 ? 1 : 2, i % 4 >= 2);
		inject(frame, sizeof(frame));
		if (i % 10 == 9)
			connection_carries_data((uint8_t)i); /* mid-transfer */
	}
	settle();
	ck_assert_uint_eq(DOM_B("arp_conflicts"), conflicts + n);
	connection_carries_data(9);
	/* B kept addressing A's real MAC: A refused none of B's frames as
	 * not its own (resends are no measure: under load an adaptive timer
	 * may fire early with or without a forged frame) */
	ck_assert_uint_eq(fx_counter(&F.dom_a->fid, "rx_not_ours"), not_ours_a);
	region_b_untouched_guards();
}

START_TEST(test_forged_arp_one)
{
	forged_arp_changes_nothing(1);
}
END_TEST

START_TEST(test_forged_arp_burst)
{
	forged_arp_changes_nothing(100);
}
END_TEST

/* ---- the connection manager ------------------------------------------------- */

/* A MAD to B's QP1 as src_ip would send it. */
static void inject_mad(uint32_t src_ip, const uint8_t mad[DR_MAD_LEN])
{
	uint8_t frame[DR_MAD_LEN + 128];
	static uint32_t gsi_psn;
	int len =
	    forge_qp1_frame(frame, sizeof(frame), qa.mac, qb.mac, src_ip, FX_IP_B, gsi_psn++, mad);

	ck_assert_int_gt(len, 0);
	inject(frame, (size_t)len);
}

/* B's EQ holds nothing: no FI_SHUTDOWN, no FI_CONNREQ. */
static void eq_b_empty(void)
{
	struct fi_eq_cm_entry e;
	uint32_t event;

	ck_assert_int_eq(fi_eq_read(C.eq_b, &event, &e, sizeof(e), 0), -FI_EAGAIN);
}

/* DREQ, REJ and RTU from the peer's own address that name the live
 * connection's QPN but guess the communication IDs (random 32-bit IDs: a
 * guess is right once in 2^64): each dropped and counted by the CM, the
 * connection stays up on both sides. */
START_TEST(test_forged_cm)
{
	static const uint16_t attrs[] = {DR_CM_ATTR_DREQ, DR_CM_ATTR_REJ, DR_CM_ATTR_RTU};
	uint64_t no_id = DOM_B("cm_drop_no_id");
	struct fi_eq_cm_entry e;
	uint32_t event;

	for (unsigned i = 0; i < 3; i++) {
		uint8_t raw[DR_MAD_LEN];
		struct dr_mad mad;

		dr_mad_init_cm(&mad, attrs[i], 0x1234567800000000ull + i);
		if (attrs[i] == DR_CM_ATTR_DREQ) {
			struct dr_cm_dreq m = {.local_comm_id = 0x5eed0001 + i,
					       .remote_comm_id = 0x0bad0001 + i,
					       .remote_qpn = qb.qpn};

			dr_cm_dreq_pack(&m, mad.body);
		} else if (attrs[i] == DR_CM_ATTR_REJ) {
			struct dr_cm_rej m = {.local_comm_id = 0x5eed0001 + i,
					      .remote_comm_id = 0x0bad0001 + i,
					      .msg_rejected = 2,
					      .reason = DR_CM_REJ_CONSUMER_DEFINED};

			dr_cm_rej_pack(&m, mad.body);
		} else {
			struct dr_cm_rtu m = {.local_comm_id = 0x5eed0001 + i,
					      .remote_comm_id = 0x0bad0001 + i};

			dr_cm_rtu_pack(&m, mad.body);
		}
		dr_mad_build(&mad, raw);
		inject_mad(FX_IP_A, raw);
	}
	settle();
	ck_assert_uint_eq(DOM_B("cm_drop_no_id"), no_id + 3);
	eq_b_empty();
	ck_assert_int_eq(fi_eq_read(C.eq_a, &event, &e, sizeof(e), 0), -FI_EAGAIN);
	qp_infos();
	ck_assert_str_eq(qb.state, "RTS");
	ck_assert_str_eq(qa.state, "RTS");
	connection_carries_data(10);
}
END_TEST

/* A flood of REQs from one address (192.0.2.66) at B's listener while the
 * application reads no event: the listener holds at most its share of the
 * backlog (3/4 of FI_DROCE_CM_BACKLOG, default 1024), the rest is dropped
 * and counted, nothing is answered to the forged source beyond ARP, and a
 * legitimate client from another address connects at once after it. */
START_TEST(test_cm_flood)
{
	const unsigned n = 2000, share = 1024 * 3 / 4;
	uint64_t backlog0 = DOM_B("cm_drop_src_share") + DOM_B("cm_drop_backlog");
	uint16_t port = ntohs(C.server.sin_port);
	struct fid_ep *ep2_a = NULL, *ep2_b = NULL;
	unsigned forged = 0;
	uint64_t t0;

	for (unsigned i = 0; i < n; i++) {
		uint8_t mad[DR_MAD_LEN];

		forge_req_mad(mad, 0x70000000u + i, port, 20, 15, 0xf100d00000000000ull + i);
		inject_mad(0xc0000242, mad);
		if (i % 64 == 63)
			fx_cq_drive(C.cq_b, NULL, 1);
	}
	settle();
	ck_assert_uint_eq(DOM_B("cm_drop_src_share") + DOM_B("cm_drop_backlog"),
			  backlog0 + (n - share));
	/* the legitimate client: a second endpoint of A's; B's application
	 * now reads its EQ, refuses the forged requests (their source is
	 * 192.0.2.66) and accepts A's */
	t0 = fx_now_ns();
	ck_assert_int_eq(fi_endpoint(F.dom_a, F.info_a, &ep2_a, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep2_a, &C.eq_a->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(ep2_a, &C.cq_a->fid, FI_TRANSMIT | FI_RECV), 0);
	ck_assert_int_eq(fi_enable(ep2_a), 0);
	ck_assert_int_eq(fi_connect(ep2_a, &C.server, NULL, 0), 0);
	while (!ep2_b) {
		struct fi_eq_cm_entry e;
		struct sockaddr_in *from;
		uint32_t event;

		ck_assert_int_eq(fx_eq_wait(C.eq_b, &event, &e, sizeof(e)), (ssize_t)sizeof(e));
		ck_assert_uint_eq(event, FI_CONNREQ);
		from = e.info->dest_addr;
		ck_assert_ptr_nonnull(from);
		if (ntohl(from->sin_addr.s_addr) == 0xc0000242) {
			forged++;
			ck_assert_int_eq(fi_reject(C.pep, e.info->handle, NULL, 0), 0);
		} else {
			ck_assert_uint_eq(ntohl(from->sin_addr.s_addr), FX_IP_A);
			ck_assert_int_eq(fi_endpoint(F.dom_b, e.info, &ep2_b, NULL), 0);
			ck_assert_int_eq(fi_ep_bind(ep2_b, &C.eq_b->fid, 0), 0);
			ck_assert_int_eq(fi_ep_bind(ep2_b, &C.cq_b->fid, FI_TRANSMIT | FI_RECV), 0);
			ck_assert_int_eq(fi_accept(ep2_b, NULL, 0), 0);
		}
		fi_freeinfo(e.info);
	}
	ck_assert_uint_eq(forged, share);
	for (unsigned side = 0; side < 2; side++) {
		struct fi_eq_cm_entry e;
		uint32_t event;

		ck_assert_int_eq(fx_eq_wait(side ? C.eq_b : C.eq_a, &event, &e, sizeof(e)),
				 (ssize_t)sizeof(e));
		ck_assert_uint_eq(event, FI_CONNECTED);
		ck_assert_ptr_eq(e.fid, side ? &ep2_b->fid : &ep2_a->fid);
	}
	ck_assert_uint_lt(fx_now_ns() - t0, 2 * FX_NS_PER_S);
	ck_assert_int_eq(fi_close(&ep2_a->fid), 0);
	ck_assert_int_eq(fi_close(&ep2_b->fid), 0);
	connection_carries_data(11);
}
END_TEST

/* ---- fixtures ------------------------------------------------------------------- */

static void setup(void)
{
	fx_open(&F, PAIR, CAPS, 0);
	ck_assert_int_eq(fi_open_ops(&F.dom_b->fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL), 0);
	ck_assert_uint_eq(ops->size, sizeof(*ops));
	fx_connect(&F, &C);
	fx_region_open(&reg_b, F.dom_b, REGION, FI_REMOTE_WRITE | FI_REMOTE_READ, PATTERN);
	fx_region_open(&reg_a, F.dom_a, REGION, FI_WRITE | FI_READ | FI_SEND | FI_RECV, 0);
	qp_infos();
	ck_assert_str_eq(qa.state, "RTS");
	ck_assert_str_eq(qb.state, "RTS");
	ck_assert_uint_eq(qa.dest_qpn, qb.qpn);
	ck_assert_uint_eq(qb.dest_qpn, qa.qpn);
}

static void teardown(void)
{
	fx_region_close(&reg_a);
	fx_region_close(&reg_b);
	fx_conn_close(&C);
	fx_close(&F);
}

int main(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = tcase_create("forged");
	fx_env(PAIR);
	tcase_set_timeout(tc, 120);
	/* in each test's child (fi_fixture.h: fx_run) */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_bad_icrc);
	tcase_add_test(tc, test_bad_icrc_read_response);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_unknown_qpn);
	tcase_add_test(tc, test_psn_ahead);
	tcase_add_test(tc, test_psn_duplicate);
	tcase_add_test(tc, test_invalid_opcode);
	tcase_add_test(tc, test_pkey_mismatch);
	tcase_add_test(tc, test_spoofed_source);
	tcase_add_test(tc, test_forged_arp_one);
	tcase_add_test(tc, test_forged_arp_burst);
	tcase_add_test(tc, test_forged_cm);
	tcase_add_test(tc, test_cm_flood);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
