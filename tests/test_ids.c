// SPDX-License-Identifier: BSD-2-Clause
/*
 * Identifiers and receive checks of droce through the libfabric API, in one
 * process: two domains on the two ends of an in-process DPDK link
 * ("pair:" devices), as in test_fi_rma.c.  droce's fi_open_ops extension
 * (<rdma/fi_ext_droce.h>) reads the identifiers and the drop counters, and sends frames
 * forged with droce's own codec out of side A's port as is: side B's
 * whole receive path (port, device dispatch, QP checks) judges them.
 *
 * The identifiers are random by design, so their checks are statistical
 * with bounds derived below; each bound fails a correct draw with
 * probability < 1e-8, all of them together < 1e-6.
 */
#include <arpa/inet.h>
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "fi_ext_droce.h"
#include "fi_fixture.h"
#include "dr_qp.h"
#include "dr_roce.h"

#define IP_A	 0xc0000201u /* 192.0.2.1 */
#define IP_B	 0xc0000202u /* 192.0.2.2 */
#define N_CONN	 1000
#define N_KEYS	 10000

static struct fx F;
#define info_a F.info_a
#define info_b F.info_b
#define dom_a  F.dom_a
#define dom_b  F.dom_b
static struct fi_droce_ops *ops;

/* ---- distribution checks ------------------------------------------------------------ */

/*
 * n independent uniform draws of `bits` bits:
 *  - each bit is set in Binomial(n, 1/2) draws: mean n/2, sd sqrt(n)/2;
 *  - the top 4 and the low 4 bits each spread the draws over 16 buckets
 *    of Binomial(n, 1/16): mean n/16, sd sqrt(n * 15/256).
 * Bound: 6.5 sd either side, P(|Z| > 6.5) = 8e-11 per count; at most
 * 32 + 2 * 16 counts per set of values, 3 sets: < 2e-8 in all.  A value
 * that came from a clock, a counter or a 15-bit tag fails these at once
 * (QPN 2 everywhere: bits 2..23 clear in every draw).
 */
#define DIST_SD 6.5

static void check_spread(const char *what, const uint32_t *v, size_t n, unsigned bits)
{
	unsigned ones[32] = {0}, top[16] = {0}, low[16] = {0};
	double sd_bit = sqrt((double)n) / 2, sd_bucket = sqrt((double)n * 15 / 256);

	for (size_t i = 0; i < n; i++) {
		for (unsigned b = 0; b < bits; b++)
			ones[b] += (v[i] >> b) & 1;
		top[v[i] >> (bits - 4)]++;
		low[v[i] & 15]++;
	}
	for (unsigned b = 0; b < bits; b++)
		ck_assert_msg(fabs(ones[b] - n / 2.0) <= DIST_SD * sd_bit,
			      "%s: bit %u set in %u of %zu (bound %.0f +- %.0f)", what, b, ones[b],
			      n, n / 2.0, DIST_SD * sd_bit);
	for (unsigned k = 0; k < 16; k++) {
		ck_assert_msg(fabs(top[k] - n / 16.0) <= DIST_SD * sd_bucket,
			      "%s: top nibble %u in %u of %zu", what, k, top[k], n);
		ck_assert_msg(fabs(low[k] - n / 16.0) <= DIST_SD * sd_bucket,
			      "%s: low nibble %u in %u of %zu", what, k, low[k], n);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Values equal to their predecessor once sorted. */
static unsigned repeats(const uint32_t *v, size_t n)
{
	uint32_t *s = malloc(n * sizeof(*s));
	unsigned r = 0;

	ck_assert_ptr_nonnull(s);
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u32);
	for (size_t i = 1; i < n; i++)
		r += s[i] == s[i - 1];
	free(s);
	return r;
}

/* ---- QPNs and PSNs ------------------------------------------------------------------- */

/*
 * The identifiers of N_CONN endpoints, each what a connection announces
 * in its REQ or REP: the QPN and the first PSN it expects.  QPNs: in
 * [2, 2^24), never repeated on a port (the device's table guarantees it),
 * spread over all 24 bits.  PSNs: 24 random bits each, so repeats are
 * allowed and rare -- among 1000 draws Poisson(1000^2 / 2^25 = 0.030)
 * pairs: more than 3 has probability 3e-8 (forcing them unique would
 * only take entropy away).
 */
START_TEST(test_qpn_psn_values)
{
	static struct fid_ep *ep[N_CONN];
	static uint32_t qpn[N_CONN], psn[N_CONN];
	struct fi_droce_qp_info ids;
	unsigned i;

	for (i = 0; i < N_CONN; i++) {
		ck_assert_int_eq(fi_endpoint(dom_b, info_b, &ep[i], NULL), 0);
		ck_assert_int_eq(ops->qp_info(ep[i], &ids), 0);
		qpn[i] = ids.qpn;
		psn[i] = ids.start_psn;
		ck_assert_uint_ge(qpn[i], 2);
		ck_assert_uint_le(qpn[i], DR_QPN_MASK);
		ck_assert_uint_le(psn[i], DR_PSN_MASK);
	}
	ck_assert_uint_eq(repeats(qpn, N_CONN), 0);
	ck_assert_uint_le(repeats(psn, N_CONN), 3);
	check_spread("QPN", qpn, N_CONN, 24);
	check_spread("PSN", psn, N_CONN, 24);
	for (i = 0; i < N_CONN; i++)
		ck_assert_int_eq(fi_close(&ep[i]->fid), 0);

	/* the other port draws its own: its first QPN is not side B's (it
	 * was 2 on every port of every process) */
	ck_assert_int_eq(fi_endpoint(dom_a, info_a, &ep[0], NULL), 0);
	ck_assert_int_eq(ops->qp_info(ep[0], &ids), 0);
	ck_assert_uint_ne(ids.qpn, qpn[0]);
	ck_assert_int_eq(fi_close(&ep[0]->fid), 0);
}
END_TEST

/*
 * N_KEYS registrations live at once: keys never repeat (the table
 * guarantees it), never 0, and spread over all 32 bits -- the old keys'
 * low 17 bits were a slot index, 1, 2, 3, ...
 */
START_TEST(test_mr_key_values)
{
	static struct fid_mr *mr[N_KEYS];
	static uint32_t key[N_KEYS];
	static uint8_t buf[4096];
	unsigned i;

	for (i = 0; i < N_KEYS; i++) {
		uint64_t k;

		ck_assert_int_eq(
		    fi_mr_reg(dom_a, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0, 0, &mr[i], NULL), 0);
		k = fi_mr_key(mr[i]);
		ck_assert_uint_ne(k, 0);
		ck_assert_uint_le(k, UINT32_MAX); /* an R_Key is 32 bits */
		key[i] = (uint32_t)k;
	}
	ck_assert_uint_eq(repeats(key, N_KEYS), 0);
	check_spread("MR key", key, N_KEYS, 32);
	for (i = 0; i < N_KEYS; i++)
		ck_assert_int_eq(fi_close(&mr[i]->fid), 0);
}
END_TEST

/* ---- a connection to forge frames into ------------------------------------------- */

/* ---- the target: a region with guard bytes ------------------------------------------ */

#define GUARD 64
#define TLEN  4096

static uint8_t tmem[GUARD + TLEN + GUARD];

static void target_check(void)
{
	for (size_t i = 0; i < sizeof(tmem); i++) {
		uint8_t want = i < GUARD || i >= GUARD + TLEN ? 0xa5 : 0x11;

		if (tmem[i] != want)
			ck_abort_msg("target byte %zd changed: 0x%02x", (ssize_t)i - GUARD,
				     tmem[i]);
	}
}

/* ---- forging ------------------------------------------------------------------------ */

struct forge {
	struct fx_conn c;
	struct fid_mr *mr;
	uint64_t key;
	uint8_t mac_a[6], mac_b[6];
	struct fi_droce_qp_info ids_b;
};

/* A WRITE_ONLY of 8 bytes into the target, as A would send it next. */
static void forge_write(const struct forge *f, struct dr_pkt_desc *d)
{
	static const uint8_t payload[8] = {0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee};

	dr_pkt_desc_init(d);
	memcpy(d->src_mac, f->mac_a, 6);
	memcpy(d->dst_mac, f->mac_b, 6);
	d->src_ip4 = IP_A;
	d->dst_ip4 = IP_B;
	d->sport = 0xc123; /* any: rxe and droce do not check it */
	d->opcode = DR_OP_WRITE_ONLY;
	d->dqpn = f->ids_b.qpn;
	d->psn = f->ids_b.rq_psn;
	d->ackreq = true;
	d->reth.va = (uintptr_t)(tmem + GUARD);
	d->reth.rkey = (uint32_t)f->key;
	d->reth.len = 8;
	d->payload = payload;
	d->payload_len = 8;
}

static void counts(struct fid *fid, uint64_t c[DR_RX_DROP_NUM])
{
	ck_assert_int_eq(ops->drops(fid, c, DR_RX_DROP_NUM), DR_RX_DROP_NUM);
}

/* Send n frames (the i-th from make(f, i, d)) out of A's port, in bursts
 * the link holds, and drive B until its port has counted every one as
 * reason why. */
static void forge_send(struct forge *f, unsigned n, enum dr_rx_drop why,
		       void (*make)(struct forge *f, unsigned i, struct dr_pkt_desc *d))
{
	uint64_t c0[DR_RX_DROP_NUM], c[DR_RX_DROP_NUM];
	uint8_t frame[512];
	unsigned i = 0;

	counts(&dom_b->fid, c0);
	while (i < n) {
		uint64_t end = fx_now_ns() + 5 * FX_NS_PER_S;
		unsigned burst = n - i < 32 ? n - i : 32, k;

		for (k = 0; k < burst; k++, i++) {
			struct dr_pkt_desc d;
			int len;

			make(f, i, &d);
			len = dr_pkt_build(&d, frame, sizeof(frame));
			ck_assert_int_gt(len, 0);
			ck_assert_int_eq(ops->send_raw(dom_a, frame, (size_t)len), 0);
		}
		do {
			fi_cq_read(f->c.cq_a, NULL, 0); /* A's port sends */
			fi_cq_read(f->c.cq_b, NULL, 0); /* B's receives */
			counts(&dom_b->fid, c);
		} while (c[why] - c0[why] < i && fx_now_ns() < end);
		ck_assert_msg(c[why] - c0[why] == i, "%s: %llu of %u counted", ops->drop_name(why),
			      (unsigned long long)(c[why] - c0[why]), i);
	}
	/* nothing else was dropped for another reason */
	for (unsigned r = 0; r < DR_RX_DROP_NUM; r++)
		if (r != why)
			ck_assert_uint_eq(c[r], c0[r]);
}

static void make_pkey(struct forge *f, unsigned i, struct dr_pkt_desc *d)
{
	forge_write(f, d);
	d->pkey = 0x1234;
}

static void make_src_ip(struct forge *f, unsigned i, struct dr_pkt_desc *d)
{
	forge_write(f, d);
	d->src_ip4 = IP_A + 2 + i % 200; /* 192.0.2.3.. */
	d->psn = dr_psn_add(f->ids_b.rq_psn, (int32_t)i - 2048);
}

static uint32_t rng32(void)
{
	static uint64_t s = 0x9e3779b97f4a7c15ull; /* fixed: a deterministic sweep */

	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return (uint32_t)(s >> 16);
}

static void make_unknown_qpn(struct forge *f, unsigned i, struct dr_pkt_desc *d)
{
	uint32_t q;

	forge_write(f, d);
	do
		q = rng32() & DR_QPN_MASK;
	while (q == f->ids_b.qpn || q == DR_GSI_QPN);
	d->dqpn = q;
	d->psn = rng32() & DR_PSN_MASK;
}

static void make_bad_qkey(struct forge *f, unsigned i, struct dr_pkt_desc *d)
{
	static uint8_t mad[256];

	forge_write(f, d);
	d->opcode = DR_OP_UD_SEND_ONLY;
	d->dqpn = DR_GSI_QPN;
	d->deth.qkey = 0x12345678;
	d->deth.sqpn = DR_GSI_QPN;
	d->payload = mad;
	d->payload_len = sizeof(mad);
}

static void make_psn_ahead(struct forge *f, unsigned i, struct dr_pkt_desc *d)
{
	forge_write(f, d);
	d->psn = dr_psn_add(f->ids_b.rq_psn, 1 << 22);
}

/* A real write from A still lands and completes. */
static void write_still_works(struct forge *f)
{
	static uint8_t src[8];
	struct fi_cq_data_entry e;
	uint64_t end = fx_now_ns() + 5 * FX_NS_PER_S;
	ssize_t ret;

	memset(src, 0x77, sizeof(src));
	ck_assert_int_eq(
	    fi_write(f->c.ep_a, src, 8, NULL, 0, (uintptr_t)(tmem + GUARD + 64), f->key, &e), 0);
	do {
		ret = fi_cq_read(f->c.cq_a, &e, 1);
		fi_cq_read(f->c.cq_b, NULL, 0);
	} while (ret == -FI_EAGAIN && fx_now_ns() < end);
	ck_assert_int_eq(ret, 1);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(tmem[GUARD + 64 + i], 0x77);
	memset(tmem + GUARD + 64, 0x11, 8);
}

static const struct forge_case {
	const char *what;
	unsigned n;
	enum dr_rx_drop why;
	bool qp_counts; /* B's QP counts it too (else only the port) */
	void (*make)(struct forge *f, unsigned i, struct dr_pkt_desc *d);
} forge_cases[] = {
    {"P_Key 0x1234", 1, DR_RX_DROP_PKEY, true, make_pkey},
    {"source IP sweep", 4096, DR_RX_DROP_SRC_ADDR, true, make_src_ip},
    {"unknown QPN sweep", 4096, DR_RX_DROP_UNKNOWN_QPN, false, make_unknown_qpn},
    {"QP1 Q_Key", 1, DR_RX_DROP_GSI, false, make_bad_qkey},
    /* the first is answered with a NAK_SEQ (IBA 9.7.5.1.1), the second dropped */
    {"PSN 2^22 ahead", 1, DR_RX_DROP_PSN_AHEAD, true, make_psn_ahead},
};

START_TEST(test_forged_frames)
{
	const struct forge_case *fc = &forge_cases[_i];
	uint64_t q0[DR_RX_DROP_NUM], q[DR_RX_DROP_NUM];
	static struct forge f;
	struct fi_droce_qp_info ids;

	memset(tmem, 0xa5, sizeof(tmem));
	memset(tmem + GUARD, 0x11, TLEN);
	fx_connect(&F, &f.c);
	ck_assert_int_eq(fi_mr_reg(dom_b, tmem + GUARD, TLEN, FI_REMOTE_WRITE | FI_REMOTE_READ, 0,
				   0, 0, &f.mr, NULL),
			 0);
	f.key = fi_mr_key(f.mr);
	ck_assert_int_eq(ops->port_mac(dom_a, f.mac_a), 0);
	ck_assert_int_eq(ops->port_mac(dom_b, f.mac_b), 0);
	write_still_works(&f);
	ck_assert_int_eq(ops->qp_info(f.c.ep_b, &f.ids_b), 0);
	ck_assert_int_eq(ops->qp_info(f.c.ep_a, &ids), 0);
	ck_assert_uint_eq(f.ids_b.dest_qpn, ids.qpn);
	ck_assert_uint_eq(ids.dest_qpn, f.ids_b.qpn);
	ck_assert_uint_eq(f.ids_b.rq_psn, ids.sq_psn); /* B expects what A sends next */
	counts(&f.c.ep_b->fid, q0);

	if (fc->why == DR_RX_DROP_PSN_AHEAD) {
		uint8_t frame[512];
		struct dr_pkt_desc d;
		int len;

		/* the first: NAKed, not counted as a drop */
		make_psn_ahead(&f, 0, &d);
		len = dr_pkt_build(&d, frame, sizeof(frame));
		ck_assert_int_eq(ops->send_raw(dom_a, frame, (size_t)len), 0);
	}
	forge_send(&f, fc->n, fc->why, fc->make);
	counts(&f.c.ep_b->fid, q);
	for (unsigned r = 0; r < DR_RX_DROP_NUM; r++)
		ck_assert_uint_eq(q[r] - q0[r], r == fc->why && fc->qp_counts ? fc->n : 0);
	target_check();
	ck_assert_int_eq(ops->qp_info(f.c.ep_b, &ids), 0);
	ck_assert_uint_eq(ids.rq_psn, f.ids_b.rq_psn);
	write_still_works(&f);
	target_check();
	ck_assert_int_eq(fi_close(&f.mr->fid), 0);
	fx_conn_close(&f.c);
}
END_TEST

/* ---- fixture -------------------------------------------------------------------------- */

static void setup(void)
{
	/* small queues: a thousand endpoints at once */
	fx_open(&F, "ids", FI_MSG | FI_RMA, 16);
	ck_assert_int_eq(fi_open_ops(&dom_a->fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL), 0);
	ck_assert_uint_eq(ops->size, sizeof(*ops));
	ck_assert_int_eq(fi_open_ops(&dom_a->fid, "no such ops", 0, (void **)&ops, NULL),
			 -FI_ENOSYS);
	ck_assert_int_eq(fi_open_ops(&dom_a->fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL), 0);
}

static void teardown(void)
{
	fx_close(&F);
}

int main(void)
{
	Suite *s = suite_create("ids");
	TCase *tc = tcase_create("ids");

	fx_env("ids");
	tcase_set_timeout(tc, 120);
	/* in each test's child (fi_fixture.h: fx_run) */
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_qpn_psn_values);
	tcase_add_test(tc, test_mr_key_values);
	tcase_add_loop_test(tc, test_forged_frames, 0,
			    (int)(sizeof(forge_cases) / sizeof(forge_cases[0])));
	suite_add_tcase(s, tc);
	return fx_run(s);
}
