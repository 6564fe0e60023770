// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_notes - captures that explain themselves (issue 15, point 1): the
 * RC engine's annotations of what it decided, on the exact frames of
 * scripted scenarios, as tshark shows them (frame.comment).
 *
 * Two in-process ports over net_ring (no root), each capturing to its own
 * file; on them two QPs wired as src/fi wires them (ep_qp.c: frames through
 * dr_port_send, notes through dr_port_capture_note, an engine's "dropped:"
 * through dr_port_capture_drop; the rx callback drops unknown QPNs as
 * dev.c does).  A is the requester (PSNs from 100), B the responder with
 * deferred ACKs.  The link loses chosen frames: the receiving side's rx
 * callback throws the frame away before its QP sees it, and says so on its
 * record ("test: lost on the link").
 *
 *   1. SEND 100, 101 in one burst: B's ACK coalesced (covers PSN 100..101);
 *      the QPs' setup (QP state: ...) on each side's first frame.
 *   2. SEND 102 lost, 103 arrives: B's NAK (sequence error, expected 102,
 *      received 103); A's "NAK received" and the resend of 102
 *      ("retransmit: NAK sequence error, ..."); B's ACK coalesced 102..103.
 *   3. SEND 104 arrives, its ACK is lost: A times out and resends 104
 *      ("retransmit: timeout, ... RTO 8388 us", the doubled timeout); B
 *      answers the duplicate ("duplicate: SEND_ONLY PSN 104 ...").
 *   4. SEND 105 with no receive posted: B's RNR NAK (asks for 20.48 ms),
 *      A's "RNR NAK received: waiting 20.48 ms", and after the wait the
 *      resend ("retransmit: RNR NAK wait over, attempt 1 of 6, ...").
 *   5. Forged frames to B: a wrong P_Key, a wrong source address, a bad
 *      ICRC, an unknown QPN; and to A an ACK for nothing outstanding: each
 *      recorded dropped (flags inbound, drop count 1) with its reason.
 *   6. A WRITE with a key B does not have: B's NAK (remote access error)
 *      and both QPs to ERROR, each noted on the frame that caused it.
 *
 * Every frame of both captures is checked: the expected comment, exactly,
 * on the expected frame (direction, BTH opcode, PSN, which occurrence),
 * and no comment on any other; then tshark's frame.comment display filters
 * find exactly those frames.  Without tshark the test fails in CI
 * (CI=true) and is skipped (77) elsewhere.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dr_port.h"
#include "dr_qp.h"
#include "dr_roce.h"
#include "ck_run.h"
#include "forge.h"
#include "tshark_fields.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define IP_A		IP4(192, 0, 2, 1)
#define IP_B		IP4(192, 0, 2, 2)
#define IP_FORGED	IP4(192, 0, 2, 9)
#define QPN_A		0x11
#define QPN_B		0x22
#define QPN_NONE	0x33
#define DEADLINE_NS	5000000000ull
#define TIMEOUT_EXP	10 /* 4.096 us * 2^10 = 4194 us */
#define RNR_CODE	22 /* 20.48 ms (IBA table 45) */
#define MAX_WC		32

enum { OP_SEND_ONLY = 4, OP_WRITE_ONLY = 10, OP_ACK = 17 };
enum { IN = 1, OUT = 2 }; /* epb_flags direction */

struct side {
	const char *name;
	struct dr_port *port;
	struct dr_qp *qp;
	uint64_t deadline;
	struct dr_wc wc[MAX_WC];
	uint64_t nwc;
	/* the link loses the next frame to this side with this opcode and PSN */
	bool lose;
	uint8_t lose_op;
	uint32_t lose_psn;
	char path[64];
};

static struct side A = {.name = "A"}, B = {.name = "B"};
static uint8_t rbuf[4][256];
static uint8_t sbuf[64] = "notes test payload";

static void test_log(void *ctx, enum dr_port_log_level level, const char *msg)
{
	if (getenv("VERBOSE") || level == DR_PORT_LOG_WARN)
		fprintf(stderr, "[%d] %s\n", (int)level, msg);
}

/* ---- the QPs wired to the ports, as src/fi/ep_qp.c does --------------------------- */

static void q_xmit(void *ctx, struct dr_qp *qp, const void *frame, size_t len)
{
	struct side *s = ctx;

	ck_assert_int_eq(dr_port_send(s->port, frame, len), 0);
}

static uint64_t q_now(void *ctx)
{
	return dr_port_now_ns();
}

static void q_timer(void *ctx, struct dr_qp *qp, uint64_t deadline)
{
	((struct side *)ctx)->deadline = deadline;
}

static void q_complete(void *ctx, struct dr_qp *qp, const struct dr_wc *wc)
{
	struct side *s = ctx;

	ck_assert_uint_lt(s->nwc, MAX_WC);
	s->wc[s->nwc++] = *wc;
}

static void q_log(void *ctx, struct dr_qp *qp, const char *msg)
{
	if (getenv("VERBOSE"))
		fprintf(stderr, "%s: %s\n", ((struct side *)ctx)->name, msg);
}

static bool q_noting(void *ctx, struct dr_qp *qp)
{
	return dr_port_capturing(((struct side *)ctx)->port);
}

static void q_note(void *ctx, struct dr_qp *qp, const void *frame, size_t len, const char *text)
{
	struct side *s = ctx;

	if (!strncmp(text, "dropped: ", 9))
		dr_port_capture_drop(s->port, "%s", text + 9);
	else
		dr_port_capture_note(s->port, frame, len, "%s", text);
}

static const struct dr_qp_ops ops = {
    .xmit = q_xmit,
    .now_ns = q_now,
    .timer_set = q_timer,
    .complete = q_complete,
    .log = q_log,
    .noting = q_noting,
    .note = q_note,
};

/* the device's part (dev.c dev_rx): the QP by DestQP, else dropped */
static void rx(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	struct side *s = ctx;

	if (s->lose && pkt->opcode == s->lose_op && pkt->psn == s->lose_psn) {
		s->lose = false;
		dr_port_capture_note(s->port, frame, len, "test: lost on the link");
		return;
	}
	if (pkt->dqpn != dr_qp_num(s->qp)) {
		dr_port_capture_drop(s->port, "unknown_qpn, QPN 0x%06x", pkt->dqpn);
		return;
	}
	dr_qp_input(s->qp, pkt);
}

static void poll_side(struct side *s)
{
	ck_assert_int_ge(dr_port_poll(s->port), 0);
	dr_qp_flush(s->qp); /* the deferred ACK, at the end of the burst (dev.c) */
	if (dr_port_now_ns() >= s->deadline)
		dr_qp_tick(s->qp);
}

/* drive both sides until a counter (completions, a QP's) reaches want */
static void drive_until(const uint64_t *ctr, uint64_t want)
{
	uint64_t end = dr_port_now_ns() + DEADLINE_NS;

	while (*ctr < want && dr_port_now_ns() < end) {
		poll_side(&A);
		poll_side(&B);
	}
	ck_assert_uint_eq(*ctr, want);
}

static void bring_up(struct side *s, uint32_t qpn, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn,
		     uint32_t src, uint32_t dst, const uint8_t smac[6], const uint8_t dmac[6],
		     unsigned flags)
{
	struct dr_qp_init_attr ia = {.qpn = qpn,
				     .max_send_wr = 16,
				     .max_recv_wr = 16,
				     .ops = &ops,
				     .ctx = s,
				     .flags = flags};
	struct dr_qp_attr a = {
	    .state = DR_QPS_INIT,
	    .dest_qpn = dqpn,
	    .rq_psn = rq_psn,
	    .sq_psn = sq_psn,
	    .path_mtu = 1024,
	    .timeout = TIMEOUT_EXP,
	    .retry_cnt = 7,
	    .rnr_retry = 6,
	    .min_rnr_timer = RNR_CODE,
	    .max_rd_atomic = 4,
	    .max_dest_rd_atomic = 4,
	    .path = {.src_ip4 = src, .dst_ip4 = dst},
	};

	memcpy(a.path.src_mac, smac, 6);
	memcpy(a.path.dst_mac, dmac, 6);
	s->qp = dr_qp_create(&ia);
	ck_assert_ptr_nonnull(s->qp);
	s->deadline = UINT64_MAX;
	ck_assert_int_eq(dr_qp_modify(s->qp, &a, DR_QP_ATTR_STATE), 0);
	a.state = DR_QPS_RTR;
	ck_assert_int_eq(dr_qp_modify(s->qp, &a,
				      DR_QP_ATTR_STATE | DR_QP_ATTR_DEST_QPN | DR_QP_ATTR_RQ_PSN |
					  DR_QP_ATTR_PATH_MTU | DR_QP_ATTR_MIN_RNR_TIMER |
					  DR_QP_ATTR_MAX_DEST_RD_ATOMIC | DR_QP_ATTR_PATH),
			 0);
	a.state = DR_QPS_RTS;
	ck_assert_int_eq(dr_qp_modify(s->qp, &a,
				      DR_QP_ATTR_STATE | DR_QP_ATTR_SQ_PSN | DR_QP_ATTR_TIMEOUT |
					  DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_RNR_RETRY |
					  DR_QP_ATTR_MAX_RD_ATOMIC),
			 0);
}

static void post_recv(unsigned i)
{
	struct dr_sge sge = {.addr = (uintptr_t)rbuf[i], .length = sizeof(rbuf[i])};
	struct dr_recv_wr wr = {.wr_id = 1000 + i, .sg_list = &sge, .num_sge = 1};

	ck_assert_int_eq(dr_qp_post_recv(B.qp, &wr), 0);
}

static void post_send(enum dr_wr_opcode op, uint64_t id)
{
	struct dr_sge sge = {.addr = (uintptr_t)sbuf, .length = sizeof(sbuf)};
	struct dr_send_wr wr = {
	    .wr_id = id, .opcode = op, .flags = DR_WR_SIGNALED, .sg_list = &sge, .num_sge = 1};

	if (op == DR_WR_WRITE) {
		wr.remote_addr = 0x1000;
		wr.rkey = 0x4242; /* B has no such key (no MR table at all) */
	}
	ck_assert_int_eq(dr_qp_post_send(A.qp, &wr), 0);
}

/* a frame one side's port sends the other as a third party would */
static void forge(struct dr_port *from, uint32_t src_ip, uint32_t dst_ip, uint8_t opcode,
		  uint32_t dqpn, uint32_t psn, uint16_t pkey, bool bad_icrc)
{
	uint8_t f[512];
	int len =
	    forge_frame(f, sizeof(f), src_ip, dst_ip, opcode, dqpn, psn, pkey,
			opcode == DR_OP_ACK ? NULL : sbuf, opcode == DR_OP_ACK ? 0 : sizeof(sbuf));

	ck_assert_int_gt(len, 0);
	if (bad_icrc)
		f[len - 1] ^= 0x5a;
	ck_assert_int_eq(dr_port_send(from, f, (size_t)len), 0);
}

static void open_port(struct side *s, const char *dev, uint32_t ip)
{
	struct dr_port_config c = {0};
	struct dr_port_err err = {0};

	snprintf(s->path, sizeof(s->path), "test_notes-%s-%d.pcapng", s->name, (int)getpid());
	c.ip4 = ip;
	c.prefix_len = 24;
	c.device = dev;
	c.pcap_path = s->path;
	ck_assert_msg(dr_port_open(&c, &s->port, &err) == 0, "%s", err.msg);
	dr_port_set_rx(s->port, rx, s);
}

static void run(void)
{
	uint8_t mac_a[6], mac_b[6], mac[6];
	uint64_t end;
	int ret;

	open_port(&A, "pair:notes:0", IP_A);
	open_port(&B, "pair:notes:1", IP_B);
	dr_port_mac(A.port, mac_a);
	dr_port_mac(B.port, mac_b);
	end = dr_port_now_ns() + DEADLINE_NS;
	while (((ret = dr_port_resolve(A.port, IP_B, mac)) == -EAGAIN ||
		dr_port_resolve(B.port, IP_A, mac) == -EAGAIN) &&
	       dr_port_now_ns() < end) {
		dr_port_poll(A.port);
		dr_port_poll(B.port);
	}
	ck_assert_int_eq(ret, 0);
	bring_up(&A, QPN_A, QPN_B, 100, 500, IP_A, IP_B, mac_a, mac_b, 0);
	bring_up(&B, QPN_B, QPN_A, 500, 100, IP_B, IP_A, mac_b, mac_a, DR_QP_DEFER_ACK);

	/* 1: two SENDs in one burst, one ACK for both */
	post_recv(0);
	post_recv(1);
	post_send(DR_WR_SEND, 1);
	post_send(DR_WR_SEND, 2);
	drive_until(&A.nwc, 2);
	ck_assert_uint_eq(B.nwc, 2);
	ck_assert_uint_eq(dr_qp_stats(B.qp)->acks_coalesced, 1);

	/* 2: 102 lost, 103 arrives */
	post_recv(2);
	post_recv(3);
	B.lose = true;
	B.lose_op = DR_OP_SEND_ONLY;
	B.lose_psn = 102;
	post_send(DR_WR_SEND, 3);
	post_send(DR_WR_SEND, 4);
	drive_until(&A.nwc, 4);
	ck_assert(!B.lose);
	ck_assert_uint_eq(dr_qp_stats(B.qp)->tx_seq_naks, 1);
	ck_assert_uint_eq(dr_qp_stats(A.qp)->retries, 1);

	/* 3: 104's ACK lost: a timeout resends it, B answers the duplicate */
	post_recv(0);
	A.lose = true;
	A.lose_op = DR_OP_ACK;
	A.lose_psn = 104;
	post_send(DR_WR_SEND, 5);
	drive_until(&A.nwc, 5);
	ck_assert(!A.lose);
	ck_assert_uint_eq(dr_qp_stats(A.qp)->timeouts, 1);
	ck_assert_uint_eq(dr_qp_stats(B.qp)->rx_dup_reqs, 1);

	/* 4: 105 with no receive posted; one is posted after the RNR NAK */
	post_send(DR_WR_SEND, 6);
	drive_until(&dr_qp_stats(B.qp)->tx_rnr_naks, 1);
	post_recv(1);
	drive_until(&A.nwc, 6);
	ck_assert_uint_eq(dr_qp_stats(A.qp)->rnr_waits, 1);
	ck_assert_uint_eq(dr_qp_stats(B.qp)->tx_rnr_naks, 1);

	/* 5: forged frames */
	forge(A.port, IP_A, IP_B, DR_OP_SEND_ONLY, QPN_B, 900, 0x1234, false);
	forge(A.port, IP_FORGED, IP_B, DR_OP_SEND_ONLY, QPN_B, 901, 0, false);
	forge(A.port, IP_A, IP_B, DR_OP_SEND_ONLY, QPN_B, 902, 0, true);
	forge(A.port, IP_A, IP_B, DR_OP_SEND_ONLY, QPN_NONE, 903, 0, false);
	forge(B.port, IP_B, IP_A, DR_OP_ACK, QPN_A, 300, 0, false);
	drive_until(&dr_qp_stats(B.qp)->rx_drop[DR_RX_DROP_SRC_ADDR], 1);
	drive_until(&dr_qp_stats(A.qp)->rx_drop[DR_RX_DROP_RSP], 1);
	ck_assert_uint_eq(dr_qp_stats(B.qp)->rx_drop[DR_RX_DROP_PKEY], 1);

	/* 6: a WRITE B refuses: both QPs to ERROR */
	post_send(DR_WR_WRITE, 7);
	drive_until(&A.nwc, 7);
	ck_assert_int_eq(A.wc[6].status, DR_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(dr_qp_state(A.qp), DR_QPS_ERROR);
	ck_assert_int_eq(dr_qp_state(B.qp), DR_QPS_ERROR);
	for (unsigned i = 0; i < 6; i++)
		ck_assert_int_eq(A.wc[i].status, DR_WC_SUCCESS);

	dr_qp_destroy(A.qp);
	dr_qp_destroy(B.qp);
	dr_port_close(A.port);
	dr_port_close(B.port);
}

/* ---- the captures, through tshark ------------------------------------------------ */

struct want {
	unsigned dir;
	unsigned opcode, psn, nth; /* the nth frame (from 1) of that opcode and PSN that way */
	const char *comment;
	bool dropped;
	const char *filter; /* a display filter that must find exactly this frame (or NULL) */
};

#define SETUP                                                                                      \
	"QP state: RESET -> INIT (modify); QP state: INIT -> RTR (modify); "                       \
	"QP state: RTR -> RTS (modify)"

/* clang-format off */
static const struct want want_a[] = {
    {OUT, OP_SEND_ONLY, 100, 1, SETUP, false, NULL},
    {IN, OP_ACK, 102, 1, "NAK received: sequence error, PSN 102", false,
     "frame.comment matches \"^NAK received: sequence error,\""},
    {OUT, OP_SEND_ONLY, 102, 2,
     "retransmit: NAK sequence error, go-back-N from PSN 102, attempt 1 of 7, RTO 4194 us", false,
     "frame.comment contains \"retransmit: NAK sequence error,\""},
    {IN, OP_ACK, 104, 1, "test: lost on the link", false, NULL},
    {OUT, OP_SEND_ONLY, 104, 2,
     "retransmit: timeout, go-back-N from PSN 104, attempt 1 of 7, RTO 8388 us", false,
     "frame.comment contains \"retransmit: timeout,\""},
    {IN, OP_ACK, 105, 1, "RNR NAK received: waiting 20.48 ms", false,
     "frame.comment contains \"RNR NAK received:\""},
    {OUT, OP_SEND_ONLY, 105, 2,
     "retransmit: RNR NAK wait over, go-back-N from PSN 105, attempt 1 of 6, RTO 4194 us", false,
     "frame.comment contains \"retransmit: RNR NAK wait over,\""},
    {IN, OP_ACK, 300, 1, "dropped: unexpected_rsp, PSN 300, nothing outstanding", true,
     "frame.comment contains \"dropped: unexpected_rsp\" && frame.drop_count == 1"},
    {IN, OP_ACK, 106, 1,
     "NAK received: remote access error, PSN 106; QP state: RTS -> ERROR (remote access error)",
     false, "frame.comment contains \"QP state: RTS -> ERROR\""},
};

static const struct want want_b[] = {
    {OUT, OP_ACK, 101, 1, SETUP "; ACK coalesced: covers PSN 100..101", false, NULL},
    {IN, OP_SEND_ONLY, 102, 1, "test: lost on the link", false, NULL},
    {OUT, OP_ACK, 102, 1, "NAK sent: sequence error, expected PSN 102, received PSN 103", false,
     "frame.comment contains \"NAK sent: sequence error\""},
    {OUT, OP_ACK, 103, 1, "ACK coalesced: covers PSN 102..103", false,
     "frame.comment == \"ACK coalesced: covers PSN 102..103\""},
    {IN, OP_SEND_ONLY, 104, 2, "duplicate: SEND_ONLY PSN 104 acknowledged again, ACK PSN 104",
     false, "frame.comment contains \"duplicate:\""},
    {OUT, OP_ACK, 105, 1,
     "RNR NAK sent: no receive posted for SEND_ONLY PSN 105, asks for 20.48 ms", false,
     "frame.comment contains \"RNR NAK sent:\""},
    {IN, OP_SEND_ONLY, 900, 1, "dropped: pkey, P_Key 0x1234", true,
     "frame.comment contains \"dropped: pkey\""},
    {IN, OP_SEND_ONLY, 901, 1, "dropped: src_addr, from 192.0.2.9", true,
     "frame.comment contains \"dropped: src_addr\""},
    {IN, OP_SEND_ONLY, 902, 1, "dropped: bad ICRC", true,
     "frame.comment contains \"dropped: bad ICRC\" && frame.packet_flags_crc_error == 1"},
    {IN, OP_SEND_ONLY, 903, 1, "dropped: unknown_qpn, QPN 0x000033", true,
     "frame.comment contains \"dropped: unknown_qpn\""},
    {IN, OP_WRITE_ONLY, 106, 1, "QP state: RTS -> ERROR (remote access error)", false,
     "frame.comment contains \"QP state: RTS -> ERROR\""},
    {OUT, OP_ACK, 106, 1, "NAK sent: remote access error, expected PSN 106, received PSN 106",
     false, "frame.comment contains \"NAK sent: remote access error\""},
};
/* clang-format on */

#define NF 7
enum { F_NUM, F_OP, F_PSN, F_FLAGS, F_DROPS, F_DQPN, F_COMMENT };
struct row {
	char f[NF][512];
};

/* the RoCE frames (no ARP) of path that filter (NULL: every one) selects */
static unsigned tshark_rows(const char *tshark, const char *path, const char *filter,
			    struct row *rows, unsigned max)
{
	static const char *const fields[NF] = {
	    "frame.number",	"infiniband.bth.opcode", "infiniband.bth.psn", "frame.packet_flags",
	    "frame.drop_count", "infiniband.bth.destqp", "frame.comment",
	};
	char f[512];

	snprintf(f, sizeof(f), "infiniband%s%s%s", filter ? " && (" : "", filter ? filter : "",
		 filter ? ")" : "");
	return tshark_fields(tshark, path, f, fields, NF, rows[0].f[0], sizeof(rows[0].f[0]), max);
}

static unsigned dir_of(const struct row *r)
{
	return (unsigned)strtoul(r->f[F_FLAGS], NULL, 0) & 3;
}

/* the frames of path: each expected comment on its frame, no other */
static void check_capture(const char *tshark, const char *who, const char *path,
			  const struct want *w, unsigned nw)
{
	static struct row rows[256], sel[16];
	unsigned n, found[32] = {0};

	ck_assert_uint_le(nw, 32);
	n = tshark_rows(tshark, path, NULL, rows, 256);
	ck_assert_uint_gt(n, 20);
	/* occurrence counting per (dir, opcode, psn): by scanning in order */
	for (unsigned i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		unsigned d = dir_of(r), op = (unsigned)strtoul(r->f[F_OP], NULL, 0),
			 psn = (unsigned)strtoul(r->f[F_PSN], NULL, 0), nth = 1;
		const struct want *m = NULL;

		for (unsigned k = 0; k < i; k++)
			if (dir_of(&rows[k]) == d && strtoul(rows[k].f[F_OP], NULL, 0) == op &&
			    strtoul(rows[k].f[F_PSN], NULL, 0) == psn)
				nth++;
		for (unsigned k = 0; k < nw; k++)
			if (w[k].dir == d && w[k].opcode == op && w[k].psn == psn &&
			    w[k].nth == nth) {
				m = &w[k];
				found[k]++;
			}
		ck_assert_msg(
		    !strcmp(r->f[F_COMMENT], m ? m->comment : ""),
		    "%s frame %s (%s opcode %u PSN %u #%u): comment \"%s\", expected \"%s\"", who,
		    r->f[F_NUM], d == IN ? "in" : "out", op, psn, nth, r->f[F_COMMENT],
		    m ? m->comment : "");
		ck_assert_msg(!strcmp(r->f[F_DROPS], m && m->dropped ? "1" : ""),
			      "%s frame %s: drop count \"%s\"", who, r->f[F_NUM], r->f[F_DROPS]);
	}
	for (unsigned k = 0; k < nw; k++)
		ck_assert_msg(found[k] == 1, "%s: \"%s\" expected on one frame, found %u", who,
			      w[k].comment, found[k]);
	/* the filters a user types find exactly those frames */
	for (unsigned k = 0; k < nw; k++) {
		char psn[16];

		if (!w[k].filter)
			continue;
		n = tshark_rows(tshark, path, w[k].filter, sel, 16);
		snprintf(psn, sizeof(psn), "%u", w[k].psn);
		ck_assert_msg(n == 1 && !strcmp(sel[0].f[F_PSN], psn),
			      "%s: filter %s: %u frames, first PSN %s", who, w[k].filter, n,
			      n ? sel[0].f[F_PSN] : "-");
	}
}

START_TEST(test_notes_scenarios)
{
	const char *tshark = getenv("TSHARK");
	struct dr_port_err err = {0};

	ck_assert_msg(dr_port_eal_init(NULL, "pair:x:0", &err) == 0, "%s", err.msg);
	run();
	check_capture(tshark, "A", A.path, want_a, sizeof(want_a) / sizeof(want_a[0]));
	check_capture(tshark, "B", B.path, want_b, sizeof(want_b) / sizeof(want_b[0]));
	if (!getenv("KEEP_PCAP")) {
		unlink(A.path);
		unlink(B.path);
	}
}
END_TEST

int main(void)
{
	const char *tshark = getenv("TSHARK"), *ci = getenv("CI");
	Suite *s = suite_create("notes");
	TCase *tc = tcase_create("notes");

	if (!tshark || !*tshark || access(tshark, X_OK)) {
		bool in_ci = ci && !strcmp(ci, "true");

		fprintf(stderr, "test_notes: no tshark (TSHARK)%s\n",
			in_ci ? ": required in CI" : ", skipping");
		return in_ci ? EXIT_FAILURE : 77;
	}
	dr_port_set_log(test_log, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_notes_scenarios);
	suite_add_tcase(s, tc);
	return ck_run(s, true); /* one EAL per process */
}
