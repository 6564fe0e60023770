/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_qp.c - the RC QP engine over the simulated link (src/qp/simlink.c):
 * PSN arithmetic, MR keys, every operation at the size edges across the
 * PSN wrap, loss/duplication/reordering, remote errors, RNR, a dead link,
 * duplicated atomics, go-back-N details, WRITE_WITH_IMM without a receive
 * WQE (DR_QP_WRITE_IMM_NO_WQE), the responder's remote_op events (exactly
 * once per executed or refused request), and wire fidelity (every emitted
 * frame passes dr_pkt_parse, ICRC included).  Virtual time only.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_port.h" /* DR_PORT_ARP_PROBE_MS */
#include "qp_priv.h"
#include "simlink.h"
#include "ck_run.h"

#define QPN_A	 0x000011
#define QPN_B	 0x0abc22
#define LIMIT_NS (3600ull * 1000000000ull) /* an hour of virtual time */

/* ---- a connected pair over the simulated link ----------------------------- */

struct pair_cfg {
	uint32_t pmtu;
	uint32_t psn_a, psn_b; /* A's sq_psn (= B's rq_psn), and B's */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t ord, ird;
	unsigned qp_flags[2]; /* enum dr_qp_flags of A and B */
	uint32_t max_window[2];
	uint64_t rto_floor_ns[2];
	bool no_rop;	      /* leave ops->remote_op NULL */
	struct dr_sim_cfg sim;
};

struct pair {
	struct dr_sim sim;
	struct dr_mr_table mrt[2];
	struct dr_qp *qp[2];
};

static struct pair_cfg pair_defaults(void)
{
	struct pair_cfg c = {
	    .pmtu = 1024,
	    .psn_a = 0xfffff0,
	    .psn_b = 0xfffffd,
	    .timeout = 8, /* 1.05 ms */
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .min_rnr_timer = 1, /* 10 us */
	    .ord = 16,
	    .ird = 16,
	    .sim = {.rate_bps = 10000000000ull, .latency_ns = 2000, .reorder_ns = 20000},
	};

	return c;
}

/* Every remote_op event of each side, in order (ctx is &sim.end[i]).
 * Each test runs in its own process, so one global log will do. */
struct rop_log {
	struct dr_remote_op *op;
	size_t n, cap;
};
static struct rop_log rops[2];

static void rop_record(void *ctx, struct dr_qp *qp, const struct dr_remote_op *op)
{
	struct rop_log *l = &rops[((struct dr_sim_end *)ctx)->idx];

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->op = realloc(l->op, l->cap * sizeof(*l->op));
		ck_assert_ptr_nonnull(l->op);
	}
	l->op[l->n++] = *op;
}

/* dr_sim_qp_ops with remote_op and path_suspect recorded */
static struct dr_qp_ops rop_ops;
static void suspect_record(void *ctx, struct dr_qp *qp);

static void expect_rop(unsigned side, size_t i, enum dr_remote_op_kind kind, enum dr_wc_status st,
		       uint64_t length)
{
	const struct dr_remote_op *r;

	ck_assert_msg(i < rops[side].n, "side %u: %zu remote ops, wanted #%zu", side, rops[side].n,
		      i);
	r = &rops[side].op[i];
	ck_assert_msg(r->kind == kind && r->status == st && r->length == length,
		      "side %u remote op %zu: %s %s len %llu, expected %s %s len %llu", side, i,
		      dr_remote_op_names[r->kind], dr_wc_status_names[r->status],
		      (unsigned long long)r->length, dr_remote_op_names[kind],
		      dr_wc_status_names[st], (unsigned long long)length);
}

static void pair_up(struct pair *p, const struct pair_cfg *c)
{
	unsigned i;

	memset(p, 0, sizeof(*p));
	dr_sim_init(&p->sim, &c->sim);
	rop_ops = dr_sim_qp_ops;
	rop_ops.remote_op = rop_record;
	rop_ops.path_suspect = suspect_record;
	for (i = 0; i < 2; i++) {
		struct dr_qp_init_attr ia = {
		    .qpn = i ? QPN_B : QPN_A,
		    .max_send_wr = 512,
		    .max_recv_wr = 512,
		    .mrt = &p->mrt[i],
		    .ops = c->no_rop ? &dr_sim_qp_ops : &rop_ops,
		    .ctx = &p->sim.end[i],
		    .flags = c->qp_flags[i],
		    .max_window = c->max_window[i],
		    .rto_floor_ns = c->rto_floor_ns[i],
		};

		free(rops[i].op);
		memset(&rops[i], 0, sizeof(rops[i]));
		struct dr_qp_attr a = {.state = DR_QPS_INIT};

		ck_assert_int_eq(dr_mr_table_init(&p->mrt[i], 64), 0);
		p->qp[i] = dr_qp_create(&ia);
		ck_assert_ptr_nonnull(p->qp[i]);
		dr_sim_attach(&p->sim, i, p->qp[i]);
		ck_assert_int_eq(dr_qp_modify(p->qp[i], &a, DR_QP_ATTR_STATE), 0);
	}
	for (i = 0; i < 2; i++) {
		struct dr_qp_attr a = {
		    .state = DR_QPS_RTR,
		    .dest_qpn = i ? QPN_A : QPN_B,
		    .rq_psn = i ? c->psn_a : c->psn_b,
		    .path_mtu = c->pmtu,
		    .min_rnr_timer = c->min_rnr_timer,
		    .max_dest_rd_atomic = c->ird,
		    .path =
			{
			    .src_mac = {2, 0, 0, 0, 0, (uint8_t)(i + 1)},
			    .dst_mac = {2, 0, 0, 0, 0, (uint8_t)(2 - i)},
			    .src_ip4 = 0xc0a80101 + i,
			    .dst_ip4 = 0xc0a80102 - i,
			},
		};

		ck_assert_int_eq(dr_qp_modify(p->qp[i], &a,
					      DR_QP_ATTR_STATE | DR_QP_ATTR_DEST_QPN |
						  DR_QP_ATTR_RQ_PSN | DR_QP_ATTR_PATH_MTU |
						  DR_QP_ATTR_MIN_RNR_TIMER |
						  DR_QP_ATTR_MAX_DEST_RD_ATOMIC | DR_QP_ATTR_PATH),
				 0);
		a.state = DR_QPS_RTS;
		a.sq_psn = i ? c->psn_b : c->psn_a;
		a.timeout = c->timeout;
		a.retry_cnt = c->retry_cnt;
		a.rnr_retry = c->rnr_retry;
		a.max_rd_atomic = c->ord;
		ck_assert_int_eq(dr_qp_modify(p->qp[i], &a,
					      DR_QP_ATTR_STATE | DR_QP_ATTR_SQ_PSN |
						  DR_QP_ATTR_TIMEOUT | DR_QP_ATTR_RETRY_CNT |
						  DR_QP_ATTR_RNR_RETRY | DR_QP_ATTR_MAX_RD_ATOMIC),
				 0);
		ck_assert_int_eq(p->qp[i]->state, DR_QPS_RTS);
	}
}

static void pair_down(struct pair *p)
{
	unsigned i;

	/* wire fidelity: nothing the engine emitted failed the parser */
	ck_assert_uint_eq(p->sim.bad_frames, 0);
	for (i = 0; i < 2; i++) {
		dr_qp_destroy(p->qp[i]);
		dr_mr_table_fini(&p->mrt[i]);
		free(rops[i].op);
		memset(&rops[i], 0, sizeof(rops[i]));
	}
	dr_sim_fini(&p->sim);
}

static bool pair_run(struct pair *p)
{
	return dr_sim_run(&p->sim, LIMIT_NS, NULL, NULL);
}

static struct dr_mr *reg(struct pair *p, unsigned side, void *buf, size_t len, unsigned access)
{
	struct dr_mr *mr;

	ck_assert_int_eq(dr_mr_reg(&p->mrt[side], buf, len, (uintptr_t)buf, access, &mr), 0);
	return mr;
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint8_t)(seed >> 16);
	}
}

static int post_send(struct pair *p, unsigned side, uint64_t wr_id, enum dr_wr_opcode op, void *buf,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned flags)
{
	struct dr_sge sge = {.addr = (uintptr_t)buf, .length = len, .lkey = lkey};
	struct dr_send_wr wr = {
	    .wr_id = wr_id,
	    .opcode = op,
	    .flags = flags,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .imm = (uint32_t)(0xabc00000u + wr_id),
	    .remote_addr = raddr,
	    .rkey = rkey,
	};

	return dr_qp_post_send(p->qp[side], &wr);
}

/* A WRITE (wr_id 1) of len bytes from A's src to B's dst, registered for
 * it on B */
static void post_write_to_b(struct pair *p, uint8_t *src, uint8_t *dst, uint32_t len,
			    unsigned flags)
{
	struct dr_mr *dmr = reg(p, 1, dst, len, DR_ACCESS_REMOTE_WRITE);

	ck_assert_int_eq(
	    post_send(p, 0, 1, DR_WR_WRITE, src, len, 0, (uintptr_t)dst, dmr->key, flags), 0);
}

static void post_recv(struct pair *p, unsigned side, uint64_t wr_id, void *buf, uint32_t len)
{
	struct dr_sge sge = {.addr = (uintptr_t)buf, .length = len};
	struct dr_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};

	ck_assert_int_eq(dr_qp_post_recv(p->qp[side], &wr), 0);
}

/* ---- PSN arithmetic -------------------------------------------------------- */

/* Cases at the edges of the 24-bit circle (IBA 9.7.1: serial arithmetic
 * over 2^24, a - b > 0 when a follows b by less than 2^23). */
static const struct {
	uint32_t a, b;
	int32_t diff;
} psn_diff_tab[] = {
    {0, 0, 0},
    {1, 0, 1},
    {0, 1, -1},
    {0, 0xffffff, 1},  /* wrap forward */
    {0xffffff, 0, -1}, /* wrap backward */
    {5, 0xfffffe, 7},
    {0xfffffe, 5, -7},
    {0x7fffff, 0, 0x7fffff},  /* largest "after" */
    {0x800000, 0, -0x800000}, /* half way counts as before */
    {0, 0x800001, 0x7fffff},
    {0x123456, 0x123456, 0},
    {0x000080, 0xffff80, 0x100}, /* a window of 256 across the wrap */
};

START_TEST(test_psn_diff)
{
	ck_assert_int_eq(dr_psn_diff(psn_diff_tab[_i].a, psn_diff_tab[_i].b),
			 psn_diff_tab[_i].diff);
}
END_TEST

static const struct {
	uint32_t psn;
	int32_t n;
	uint32_t sum;
} psn_add_tab[] = {
    {0, 1, 1},
    {0xffffff, 1, 0},
    {0xfffff0, 0x20, 0x10},
    {0, -1, 0xffffff},
    {0x10, -0x20, 0xfffff0},
    {0xffffff, 0xffffff, 0xfffffe},
    {0x800000, 0x800000, 0},
};

START_TEST(test_psn_add)
{
	ck_assert_uint_eq(dr_psn_add(psn_add_tab[_i].psn, psn_add_tab[_i].n), psn_add_tab[_i].sum);
}
END_TEST

/* ---- timers ------------------------------------------------------------------ */

START_TEST(test_timer_tables)
{
	ck_assert_uint_eq(dr_qp_timeout_ns(0), 0);
	ck_assert_uint_eq(dr_qp_timeout_ns(1), 8192);
	ck_assert_uint_eq(dr_qp_timeout_ns(17), 4096ull << 17); /* ~0.54 s, B.4 */
	ck_assert_uint_eq(dr_rnr_timer_ns(0), 655360000ull);
	ck_assert_uint_eq(dr_rnr_timer_ns(1), 10000);
	ck_assert_uint_eq(dr_rnr_timer_ns(14), 1280000);
	ck_assert_uint_eq(dr_rnr_timer_ns(25), 61440000); /* not rxe's 61.41 */
	ck_assert_uint_eq(dr_rnr_timer_ns(31), 491520000);
	/* the kernel's sport formula stays in the dynamic range */
	ck_assert_uint_ge(dr_udp_sport(0, 0x11, 0x22), 0xc000);
	ck_assert_uint_eq(dr_udp_sport(0x12345, 1, 2), 0xc000 | (0x2345 ^ 0x4));
}
END_TEST

/* ---- MR table ---------------------------------------------------------------- */

START_TEST(test_mr_keys)
{
	static uint8_t buf[4096];
	struct dr_mr_table t;
	struct dr_mr *mr, *mr2;
	uint32_t key, key2;
	uint8_t *ptr;
	unsigned i;

	ck_assert_int_eq(dr_mr_table_init(&t, 4), 0);
	ck_assert_int_eq(dr_mr_reg(&t, buf, sizeof(buf), 0x10000, DR_ACCESS_REMOTE_READ, &mr), 0);
	key = mr->key;
	ck_assert_uint_ne(key, DR_LKEY_NONE);
	ck_assert_ptr_eq(dr_mr_lookup(&t, key), mr);
	ck_assert_ptr_null(dr_mr_lookup(&t, key ^ 0x100)); /* tag bits matter */
	ck_assert_ptr_null(dr_mr_lookup(&t, 0));

	ck_assert_int_eq(dr_mr_check(&t, key, 0x10000, 4096, DR_ACCESS_REMOTE_READ, &ptr),
			 DR_MR_OK);
	ck_assert_ptr_eq(ptr, buf);
	ck_assert_int_eq(dr_mr_check(&t, key, 0x10010, 16, DR_ACCESS_REMOTE_READ, &ptr), DR_MR_OK);
	ck_assert_ptr_eq(ptr, buf + 16);
	ck_assert_int_eq(dr_mr_check(&t, key, 0x10001, 4096, DR_ACCESS_REMOTE_READ, &ptr),
			 DR_MR_BAD_BOUNDS);
	ck_assert_int_eq(dr_mr_check(&t, key, 0xffff, 2, DR_ACCESS_REMOTE_READ, &ptr),
			 DR_MR_BAD_BOUNDS);
	ck_assert_int_eq(dr_mr_check(&t, key, UINT64_MAX - 1, 4, DR_ACCESS_REMOTE_READ, &ptr),
			 DR_MR_BAD_BOUNDS);
	ck_assert_int_eq(dr_mr_check(&t, key, 0x10000, 8, DR_ACCESS_REMOTE_WRITE, &ptr),
			 DR_MR_NO_ACCESS);
	ck_assert_int_eq(dr_mr_check(&t, key + 1, 0x10000, 8, DR_ACCESS_REMOTE_READ, &ptr),
			 DR_MR_BAD_KEY);
	/* zero length: no key check (IBA 9.4.4) */
	ck_assert_int_eq(dr_mr_check(&t, 12345, 0, 0, DR_ACCESS_REMOTE_WRITE, &ptr), DR_MR_OK);

	/* a freed key is dead, and the next registrations do not revive it */
	ck_assert_int_eq(dr_mr_dereg(&t, key), 0);
	ck_assert_ptr_null(dr_mr_lookup(&t, key));
	ck_assert_int_eq(dr_mr_dereg(&t, key), -ENOENT);
	for (i = 0; i < 200; i++) {
		ck_assert_int_eq(dr_mr_reg(&t, buf, 64, (uintptr_t)buf, 0, &mr2), 0);
		key2 = mr2->key;
		ck_assert_uint_ne(key2, key);
		ck_assert_ptr_null(dr_mr_lookup(&t, key));
		ck_assert_int_eq(dr_mr_dereg(&t, key2), 0);
	}
	/* capacity: exactly max_mr */
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(dr_mr_reg(&t, buf, 64, 0, 0, &mr2), 0);
	ck_assert_int_eq(dr_mr_reg(&t, buf, 64, 0, 0, &mr2), -ENOSPC);
	dr_mr_table_fini(&t);
}
END_TEST

/* The identifier table against a plain array, through churn that makes
 * long clusters (ids chosen to share home slots) and removals inside
 * them: every live id is found with its value, no removed one is. */
START_TEST(test_idmap)
{
	enum { MAX = 48, ROUNDS = 20000 };
	static uint32_t live[MAX];
	struct dr_idmap m;
	uint64_t x = 88172645463325252ull;
	unsigned n = 0, r, k;

	ck_assert_int_eq(dr_idmap_init(&m, MAX), 0);
	ck_assert_int_eq(dr_idmap_insert(&m, 0, &m), -EINVAL);
	ck_assert_ptr_null(dr_idmap_find(&m, 0));
	for (r = 0; r < ROUNDS; r++) {
		uint32_t id;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* few distinct ids: clusters and repeats */
		id = (uint32_t)(x % 97) * 0x01000193u + 1;
		if (n && (x >> 40) % 3 == 0) {
			k = (unsigned)(x >> 20) % n;
			ck_assert_ptr_eq(dr_idmap_remove(&m, live[k]), live);
			live[k] = live[--n];
		} else if (dr_idmap_find(&m, id)) {
			ck_assert_int_eq(dr_idmap_insert(&m, id, live), -EEXIST);
		} else if (n < MAX) {
			ck_assert_int_eq(dr_idmap_insert(&m, id, live), 0);
			live[n++] = id;
		} else {
			ck_assert_int_eq(dr_idmap_insert(&m, id, live), -ENOSPC);
		}
		ck_assert_uint_eq(m.count, n);
		for (k = 0; k < n; k++)
			ck_assert_ptr_eq(dr_idmap_find(&m, live[k]), live);
	}
	for (r = 0; r < 97; r++) {
		uint32_t id = r * 0x01000193u + 1;
		bool in = false;

		for (k = 0; k < n; k++)
			in |= live[k] == id;
		ck_assert_ptr_eq(dr_idmap_find(&m, id), in ? live : NULL);
	}
	dr_idmap_fini(&m);
}
END_TEST

/* No random bytes, no identifier: the error comes back and nothing
 * changed (never a fallback to a weaker source). */
START_TEST(test_rand_failure)
{
	static uint8_t buf[64];
	struct dr_mr_table t;
	struct dr_idmap m;
	struct dr_mr *mr;
	uint32_t id, v;

	ck_assert_int_eq(dr_mr_table_init(&t, 4), 0);
	ck_assert_int_eq(dr_idmap_init(&m, 4), 0);
	dr_rand_fail(ENOSYS);
	ck_assert_int_eq(dr_rand_u32(&v), -ENOSYS);
	ck_assert_int_eq(dr_mr_reg(&t, buf, sizeof(buf), 0, 0, &mr), -ENOSYS);
	ck_assert_uint_eq(t.nfree, 4);
	ck_assert_uint_eq(t.keys.count, 0);
	ck_assert_int_eq(dr_idmap_alloc(&m, DR_QPN_MASK, 2, &m, &id), -ENOSYS);
	ck_assert_uint_eq(m.count, 0);
	dr_rand_fail(0);
	ck_assert_int_eq(dr_mr_reg(&t, buf, sizeof(buf), 0, 0, &mr), 0);
	ck_assert_ptr_eq(dr_mr_lookup(&t, mr->key), mr);
	ck_assert_int_eq(dr_idmap_alloc(&m, DR_QPN_MASK, 2, &m, &id), 0);
	ck_assert_uint_ge(id, 2);
	ck_assert_uint_le(id, DR_QPN_MASK);
	ck_assert_ptr_eq(dr_idmap_find(&m, id), &m);
	dr_idmap_fini(&m);
	dr_mr_table_fini(&t);
}
END_TEST

/* ---- QP states ------------------------------------------------------------------ */

START_TEST(test_qp_states)
{
	struct pair p;
	struct dr_sim_cfg sc = {0};
	struct dr_qp_init_attr ia = {
	    .qpn = 5,
	    .max_send_wr = 4,
	    .max_recv_wr = 4,
	    .ops = &dr_sim_qp_ops,
	};
	struct dr_qp_attr a = {.state = DR_QPS_RTS};
	struct dr_qp *qp;
	static uint8_t buf[64];

	dr_sim_init(&p.sim, &sc);
	ia.ctx = &p.sim.end[0];
	ia.flags = 1u << 7; /* no such option */
	ck_assert_ptr_null(dr_qp_create(&ia));
	ia.flags = DR_QP_WRITE_IMM_NO_WQE;
	qp = dr_qp_create(&ia);
	ck_assert_ptr_nonnull(qp);
	dr_sim_attach(&p.sim, 0, qp);
	/* the accessors: number, state, and free slots = the depths */
	ck_assert_uint_eq(dr_qp_num(qp), 5);
	ck_assert_int_eq(dr_qp_state(qp), DR_QPS_RESET);
	ck_assert_uint_eq(dr_qp_sq_free(qp), 4);
	ck_assert_uint_eq(dr_qp_rq_free(qp), 4);
	/* RESET -> RTS is not a transition; posting in RESET is refused */
	ck_assert_int_eq(dr_qp_modify(qp, &a, DR_QP_ATTR_STATE), -EINVAL);
	p.qp[0] = qp;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, buf, 8, 0, 0, 0, DR_WR_SIGNALED), -EINVAL);
	a.state = DR_QPS_INIT;
	ck_assert_int_eq(dr_qp_modify(qp, &a, DR_QP_ATTR_STATE), 0);
	/* INIT -> RTR needs its attributes, and valid ones */
	a.state = DR_QPS_RTR;
	ck_assert_int_eq(dr_qp_modify(qp, &a, DR_QP_ATTR_STATE), -EINVAL);
	a.dest_qpn = 7;
	a.path_mtu = 1000;
	ck_assert_int_eq(dr_qp_modify(qp, &a,
				      DR_QP_ATTR_STATE | DR_QP_ATTR_DEST_QPN | DR_QP_ATTR_RQ_PSN |
					  DR_QP_ATTR_PATH_MTU | DR_QP_ATTR_MIN_RNR_TIMER |
					  DR_QP_ATTR_MAX_DEST_RD_ATOMIC | DR_QP_ATTR_PATH),
			 -EINVAL);
	a.path_mtu = 4096;
	ck_assert_int_eq(dr_qp_modify(qp, &a,
				      DR_QP_ATTR_STATE | DR_QP_ATTR_DEST_QPN | DR_QP_ATTR_RQ_PSN |
					  DR_QP_ATTR_PATH_MTU | DR_QP_ATTR_MIN_RNR_TIMER |
					  DR_QP_ATTR_MAX_DEST_RD_ATOMIC | DR_QP_ATTR_PATH),
			 0);
	ck_assert_int_eq(qp->state, DR_QPS_RTR);
	/* receives may be posted from INIT on; SENDs only in RTS */
	post_recv(&p, 0, 10, buf, 64);
	post_recv(&p, 0, 11, buf, 64);
	ck_assert_uint_eq(dr_qp_rq_free(qp), 2);
	ck_assert_int_eq(dr_qp_state(qp), DR_QPS_RTR);
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, buf, 8, 0, 0, 0, DR_WR_SIGNALED), -EINVAL);
	/* to ERROR: every receive flushed, once, in order */
	a.state = DR_QPS_ERROR;
	ck_assert_int_eq(dr_qp_modify(qp, &a, DR_QP_ATTR_STATE), 0);
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	ck_assert_uint_eq(p.sim.end[0].wc[0].wr_id, 10);
	ck_assert_uint_eq(p.sim.end[0].wc[1].wr_id, 11);
	ck_assert_int_eq(p.sim.end[0].wc[0].status, DR_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(dr_qp_rq_free(qp), 4);
	ck_assert_int_eq(dr_qp_state(qp), DR_QPS_ERROR);
	/* in ERROR, new WRs complete at once with a flush */
	ck_assert_int_eq(post_send(&p, 0, 3, DR_WR_SEND, buf, 8, 0, 0, 0, 0), 0);
	post_recv(&p, 0, 12, buf, 64);
	ck_assert_uint_eq(p.sim.end[0].nwc, 4);
	ck_assert_uint_eq(p.sim.end[0].wc[2].wr_id, 3);
	ck_assert_int_eq(p.sim.end[0].wc[2].status, DR_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(p.sim.end[0].wc[3].status, DR_WC_WR_FLUSH_ERR);
	/* back to RESET, then INIT again */
	a.state = DR_QPS_RESET;
	ck_assert_int_eq(dr_qp_modify(qp, &a, DR_QP_ATTR_STATE), 0);
	a.state = DR_QPS_INIT;
	ck_assert_int_eq(dr_qp_modify(qp, &a, DR_QP_ATTR_STATE), 0);
	ck_assert_uint_eq(p.sim.bad_frames, 0);
	dr_qp_destroy(qp);
	dr_sim_fini(&p.sim);
}
END_TEST

/* ---- every operation at the size edges, across the PSN wrap ------------------ */

static const uint32_t size_pmtus[] = {256, 1024, 4096};
static const enum dr_wr_opcode size_ops[] = {DR_WR_SEND, DR_WR_SEND_IMM, DR_WR_WRITE,
					     DR_WR_WRITE_IMM, DR_WR_READ};
#define N_SIZES 7
#define N_OPS	(sizeof(size_ops) / sizeof(size_ops[0]))

static uint32_t size_of(unsigned i, uint32_t pmtu)
{
	const uint32_t s[N_SIZES] = {0, 1, pmtu - 1, pmtu, pmtu + 1, 65536, 1u << 20};

	return s[i];
}

static void expect_wc(const struct dr_wc *wc, uint64_t wr_id, enum dr_wc_status st)
{
	ck_assert_msg(wc->wr_id == wr_id && wc->status == st,
		      "completion wr_id %llu status %s, expected %llu %s",
		      (unsigned long long)wc->wr_id, dr_wc_status_names[wc->status],
		      (unsigned long long)wr_id, dr_wc_status_names[st]);
}

/* _i = op * (pmtus * sizes) + pmtu * sizes + size */
START_TEST(test_op_sizes)
{
	unsigned npm = sizeof(size_pmtus) / sizeof(size_pmtus[0]);
	enum dr_wr_opcode op = size_ops[_i / (npm * N_SIZES)];
	uint32_t pmtu = size_pmtus[(_i / N_SIZES) % npm];
	uint32_t len = size_of(_i % N_SIZES, pmtu), cap = len + 64;
	struct pair_cfg c = pair_defaults();
	uint8_t *src = malloc(cap), *dst = malloc(cap);
	struct dr_mr *smr, *dmr;
	struct pair p;
	uint32_t npkts = len ? (len + pmtu - 1) / pmtu : 1;

	c.pmtu = pmtu;
	/* start PSNs a few packets before 2^24 so messages cross the wrap */
	c.psn_a = (uint32_t)(DR_PSN_MASK - (npkts > 2 ? npkts / 2 : 0));
	pair_up(&p, &c);
	fill(src, cap, _i);
	memset(dst, 0xee, cap);
	smr = reg(&p, 0, src, cap, DR_ACCESS_LOCAL_WRITE);
	dmr = reg(&p, 1, dst, cap,
		  DR_ACCESS_LOCAL_WRITE | DR_ACCESS_REMOTE_WRITE | DR_ACCESS_REMOTE_READ);

	if (op == DR_WR_READ) {
		/* A reads B's buffer into its own */
		fill(dst, cap, _i + 99);
		memset(src, 0xee, cap);
		ck_assert_int_eq(post_send(&p, 0, 7, op, src, len, smr->key, (uintptr_t)dst,
					   dmr->key, DR_WR_SIGNALED),
				 0);
	} else {
		if (op == DR_WR_SEND || op == DR_WR_SEND_IMM || op == DR_WR_WRITE_IMM)
			post_recv(&p, 1, 70, op == DR_WR_WRITE_IMM ? NULL : dst,
				  op == DR_WR_WRITE_IMM ? 0 : cap);
		ck_assert_int_eq(post_send(&p, 0, 7, op, src, len, smr->key, (uintptr_t)dst,
					   dmr->key, DR_WR_SIGNALED),
				 0);
	}
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 7, DR_WC_SUCCESS);
	if (op == DR_WR_READ) {
		ck_assert_int_eq(p.sim.end[0].wc[0].opcode, DR_WC_READ);
		ck_assert(memcmp(src, dst, len) == 0);
		ck_assert_uint_eq(src[len], 0xee); /* nothing past the end */
		ck_assert_uint_eq(p.sim.end[1].nwc, 0);
	} else {
		ck_assert(memcmp(src, dst, len) == 0);
		ck_assert_uint_eq(dst[len], 0xee);
		if (op == DR_WR_WRITE) {
			ck_assert_uint_eq(p.sim.end[1].nwc, 0);
		} else {
			const struct dr_wc *wc = &p.sim.end[1].wc[0];

			ck_assert_uint_eq(p.sim.end[1].nwc, 1);
			expect_wc(wc, 70, DR_WC_SUCCESS);
			ck_assert_uint_eq(wc->byte_len, len);
			ck_assert_int_eq(wc->opcode,
					 op == DR_WR_WRITE_IMM ? DR_WC_RECV_WRITE_IMM : DR_WC_RECV);
			ck_assert_int_eq(wc->has_imm, op != DR_WR_SEND);
			if (op != DR_WR_SEND)
				ck_assert_uint_eq(wc->imm, 0xabc00007u);
		}
	}
	/* the minimum: one packet per PMTU (READ: one request per
	 * DR_QP_READ_CHUNK responses), and ACKs at the end and every 64
	 * packets */
	if (op == DR_WR_READ) {
		ck_assert_uint_eq(p.sim.end[0].tx_frames,
				  (npkts + DR_QP_READ_CHUNK - 1) / DR_QP_READ_CHUNK);
		ck_assert_uint_eq(p.sim.end[1].tx_frames, npkts);
	} else {
		ck_assert_uint_eq(p.sim.end[0].tx_frames, npkts);
		ck_assert_uint_eq(p.sim.end[1].tx_frames, (npkts + 63) / 64);
	}
	/* the responder reports the RDMA operation once, SENDs never */
	ck_assert_uint_eq(rops[0].n, 0);
	if (op == DR_WR_SEND || op == DR_WR_SEND_IMM) {
		ck_assert_uint_eq(rops[1].n, 0);
	} else {
		ck_assert_uint_eq(rops[1].n, 1);
		/* a READ of more than DR_QP_READ_CHUNK packets: several
		 * requests, reported once, with the first one's length */
		expect_rop(1, 0, op == DR_WR_READ ? DR_REMOTE_READ : DR_REMOTE_WRITE, DR_WC_SUCCESS,
			   op == DR_WR_READ && npkts > DR_QP_READ_CHUNK ? DR_QP_READ_CHUNK * pmtu
									: len);
		ck_assert_uint_eq(rops[1].op[0].psn,
				  dr_psn_add(c.psn_a, op == DR_WR_READ ? 0 : (int32_t)npkts - 1));
	}
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	ck_assert_uint_eq(p.qp[0]->comp.psn, dr_psn_add(c.psn_a, (int32_t)npkts));
	ck_assert_uint_eq(p.qp[1]->resp.psn, dr_psn_add(c.psn_a, (int32_t)npkts));
	ck_assert_int_eq(p.qp[0]->state, DR_QPS_RTS);
	pair_down(&p);
	free(src);
	free(dst);
}
END_TEST

/* The requester tells what it has unacknowledged after each run that sent
 * something (dr_qp_ops.sent, which the port's transmit batch acts on):
 * every packet of a WRITE, the PSNs a READ's responses will use, counted
 * from the first PSN not acknowledged. */
START_TEST(test_sent_unacked)
{
	struct pair_cfg c = pair_defaults();
	uint8_t *src = malloc(8192), *dst = malloc(8192);
	struct dr_mr *smr, *dmr;
	struct pair p;

	c.pmtu = 1024;
	pair_up(&p, &c);
	fill(src, 8192, 5);
	memset(dst, 0, 8192);
	smr = reg(&p, 0, src, 8192, DR_ACCESS_LOCAL_WRITE);
	dmr = reg(&p, 1, dst, 8192,
		  DR_ACCESS_LOCAL_WRITE | DR_ACCESS_REMOTE_WRITE | DR_ACCESS_REMOTE_READ);
	ck_assert_uint_eq(p.sim.end[0].sent_calls, 0);
	ck_assert_int_eq(post_send(&p, 0, 7, DR_WR_WRITE, src, 3 * 1024, smr->key, (uintptr_t)dst,
				   dmr->key, DR_WR_SIGNALED),
			 0);
	ck_assert_uint_eq(p.sim.end[0].sent_calls, 1); /* one run, three packets */
	ck_assert_uint_eq(p.sim.end[0].sent_unacked, 3);
	ck_assert_int_eq(post_send(&p, 0, 8, DR_WR_READ, src + 4096, 2048, smr->key,
				   (uintptr_t)dst + 4096, dmr->key, DR_WR_SIGNALED),
			 0);
	ck_assert_uint_eq(p.sim.end[0].sent_calls, 2);
	ck_assert_uint_eq(p.sim.end[0].sent_unacked, 5);
	ck_assert_int_eq(post_send(&p, 0, 9, DR_WR_WRITE, src + 6144, 100, smr->key,
				   (uintptr_t)dst + 6144, dmr->key, DR_WR_SIGNALED),
			 0);
	ck_assert_uint_eq(p.sim.end[0].sent_unacked, 6);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 3);
	ck_assert(memcmp(src, dst, 3 * 1024) == 0);
	ck_assert(memcmp(src + 6144, dst + 6144, 100) == 0);
	/* all acknowledged: the next packet is the only one out */
	ck_assert_int_eq(post_send(&p, 0, 10, DR_WR_WRITE, src, 1, smr->key, (uintptr_t)dst,
				   dmr->key, DR_WR_SIGNALED),
			 0);
	ck_assert_uint_eq(p.sim.end[0].sent_unacked, 1);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 4);
	pair_down(&p);
	free(src);
	free(dst);
}
END_TEST

/* ---- atomics -------------------------------------------------------------------- */

START_TEST(test_atomics)
{
	struct pair_cfg c = pair_defaults();
	uint64_t target[2] = {100, 7}, res[3] = {0, 0, 0};
	struct dr_mr *tmr, *rmr;
	struct pair p;
	struct dr_sge sge;
	struct dr_send_wr wr = {.sg_list = &sge, .num_sge = 1, .flags = DR_WR_SIGNALED};

	pair_up(&p, &c);
	tmr = reg(&p, 1, target, sizeof(target), DR_ACCESS_REMOTE_ATOMIC);
	rmr = reg(&p, 0, res, sizeof(res), DR_ACCESS_LOCAL_WRITE);
	sge = (struct dr_sge){(uintptr_t)&res[0], 8, rmr->key};
	wr.wr_id = 1;
	wr.opcode = DR_WR_FETCH_ADD;
	wr.remote_addr = (uintptr_t)&target[0];
	wr.rkey = tmr->key;
	wr.compare_add = 5;
	ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
	sge.addr = (uintptr_t)&res[1];
	wr.wr_id = 2;
	wr.opcode = DR_WR_CMP_SWAP;
	wr.remote_addr = (uintptr_t)&target[1];
	wr.compare_add = 7;
	wr.swap = 0x1122334455667788ull;
	ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
	sge.addr = (uintptr_t)&res[2];
	wr.wr_id = 3;
	wr.compare_add = 8; /* no match now: unchanged, original returned */
	wr.swap = 1;
	ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
	/* an atomic needs exactly 8 local bytes */
	sge.length = 4;
	ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), -EINVAL);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 3);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert_int_eq(p.sim.end[0].wc[0].opcode, DR_WC_FETCH_ADD);
	expect_wc(&p.sim.end[0].wc[2], 3, DR_WC_SUCCESS);
	ck_assert_int_eq(p.sim.end[0].wc[2].opcode, DR_WC_CMP_SWAP);
	ck_assert_uint_eq(res[0], 100);
	ck_assert_uint_eq(target[0], 105);
	ck_assert_uint_eq(res[1], 7);
	ck_assert_uint_eq(res[2], 0x1122334455667788ull);
	ck_assert_uint_eq(target[1], 0x1122334455667788ull);
	ck_assert_uint_eq(p.qp[1]->stats.atomics_executed, 3);
	/* each reported once with its operands (IBA 9.4.5 AtomicETH) */
	ck_assert_uint_eq(rops[1].n, 3);
	expect_rop(1, 0, DR_REMOTE_FETCH_ADD, DR_WC_SUCCESS, 0);
	ck_assert_uint_eq(rops[1].op[0].compare_add, 5);
	expect_rop(1, 1, DR_REMOTE_CMP_SWAP, DR_WC_SUCCESS, 0);
	ck_assert_uint_eq(rops[1].op[1].compare_add, 7);
	ck_assert_uint_eq(rops[1].op[1].swap, 0x1122334455667788ull);
	expect_rop(1, 2, DR_REMOTE_CMP_SWAP, DR_WC_SUCCESS, 0);
	ck_assert_uint_eq(rops[1].op[2].compare_add, 8);
	ck_assert_uint_eq(rops[1].op[2].swap, 1);
	ck_assert_uint_eq(rops[0].n, 0);
	pair_down(&p);
}
END_TEST

/* ---- gather/scatter lists, inline, unsignaled, fence, ORD --------------------- */

START_TEST(test_sgl_inline_fence)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t a[3000], b[700], r1[1500], r2[3000], r3[16], wbuf[4096], rd[4096];
	struct dr_sge g[2] = {{(uintptr_t)a, sizeof(a), 0}, {(uintptr_t)b, sizeof(b), 0}};
	struct dr_sge s[2] = {{(uintptr_t)r1, sizeof(r1), 0}, {(uintptr_t)r2, sizeof(r2), 0}};
	struct dr_recv_wr rwr = {.wr_id = 50, .sg_list = s, .num_sge = 2};
	struct dr_send_wr wr = {.wr_id = 1, .opcode = DR_WR_SEND, .sg_list = g, .num_sge = 2};
	struct dr_mr *wmr;
	struct pair p;
	uint8_t expect[3700];
	unsigned i;

	c.ord = 1; /* one READ at a time */
	pair_up(&p, &c);
	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	fill(wbuf, sizeof(wbuf), 3);
	memcpy(expect, a, sizeof(a));
	memcpy(expect + sizeof(a), b, sizeof(b));
	wmr = reg(&p, 1, wbuf, sizeof(wbuf), DR_ACCESS_REMOTE_READ | DR_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(dr_qp_post_recv(p.qp[1], &rwr), 0);
	rwr.wr_id = 51;
	rwr.num_sge = 1;
	s[0] = (struct dr_sge){(uintptr_t)r3, sizeof(r3), 0};
	ck_assert_int_eq(dr_qp_post_recv(p.qp[1], &rwr), 0);
	/* unsignaled gather SEND: no completion of its own */
	ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
	/* four READs with ORD 1, then a fenced inline SEND */
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(post_send(&p, 0, 10 + i, DR_WR_READ, rd + i * 1024, 1024, 0,
					   (uintptr_t)wbuf + i * 1024, wmr->key, DR_WR_SIGNALED),
				 0);
	memcpy(a, "inline!", 8);
	g[0].length = 8;
	wr.wr_id = 2;
	wr.num_sge = 1;
	wr.flags = DR_WR_INLINE | DR_WR_FENCE | DR_WR_SIGNALED | DR_WR_SOLICITED;
	ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
	/* so far: the 4 packets of the SEND and one READ request; ORD holds
	 * the other READs and the fence the last SEND */
	ck_assert_uint_eq(p.sim.end[0].tx_frames, 5);
	ck_assert_int_eq(p.qp[0]->req.state, DR_REQ_WAIT_ORD);
	ck_assert_uint_eq(p.qp[0]->req.ord_used, 1);
	memset(a, 0, 8); /* inline: the buffer is free again at once */
	wr.opcode = DR_WR_WRITE;
	wr.flags = DR_WR_INLINE;
	g[0].length = DR_QP_MAX_INLINE + 1;
	ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), -EINVAL);
	ck_assert(pair_run(&p));

	ck_assert_uint_eq(p.sim.end[0].nwc, 5);
	for (i = 0; i < 4; i++)
		expect_wc(&p.sim.end[0].wc[i], 10 + i, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[0].wc[4], 2, DR_WC_SUCCESS);
	ck_assert(memcmp(rd, wbuf, sizeof(rd)) == 0);
	ck_assert_uint_eq(p.sim.end[1].nwc, 2);
	expect_wc(&p.sim.end[1].wc[0], 50, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].wc[0].byte_len, 3700);
	expect_wc(&p.sim.end[1].wc[1], 51, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].wc[1].byte_len, 8);
	ck_assert(!p.sim.end[1].wc[0].solicited);
	ck_assert(p.sim.end[1].wc[1].solicited);
	ck_assert(memcmp(r1, expect, sizeof(r1)) == 0);
	ck_assert(memcmp(r2, expect + sizeof(r1), 3700 - sizeof(r1)) == 0);
	ck_assert(memcmp(r3, "inline!", 8) == 0);
	ck_assert_int_eq(p.qp[0]->req.ord_used, 0);
	pair_down(&p);
}
END_TEST

/* ---- loss, duplication, reordering --------------------------------------------- */

static const double loss_rates[] = {0.0, 0.01, 0.05, 0.20};
static const uint64_t loss_seeds[] = {1, 0x5eed, 20240601};
#define N_RATES (sizeof(loss_rates) / sizeof(loss_rates[0]))
#define N_SEEDS (sizeof(loss_seeds) / sizeof(loss_seeds[0]))

#define MIX_N	 48
#define MIX_SLOT (1u << 17) /* room per WR in the target buffers */

static const uint32_t mix_sizes[] = {0, 1, 1023, 1024, 1025, 3000, 65536, 60000, 7, 4096};

static enum dr_wr_opcode mix_op(unsigned i)
{
	static const enum dr_wr_opcode ops[] = {DR_WR_SEND,	 DR_WR_WRITE,	  DR_WR_READ,
						DR_WR_FETCH_ADD, DR_WR_WRITE_IMM, DR_WR_SEND_IMM,
						DR_WR_CMP_SWAP};

	return ops[i % (sizeof(ops) / sizeof(ops[0]))];
}

static uint32_t mix_len(unsigned i)
{
	return mix_sizes[i % (sizeof(mix_sizes) / sizeof(mix_sizes[0]))];
}

/* how many WRs side posts: A MIX_N, B a quarter of them */
static unsigned mix_count(unsigned side)
{
	return side ? MIX_N / 4 : MIX_N;
}

/* side's WR i left its data where it belongs, byte for byte; side A's
 * atomics (B posted WRITEs in their place) carry none */
static void check_mix_data(unsigned side, unsigned i, const uint8_t *src, const uint8_t *dst)
{
	enum dr_wr_opcode op = mix_op(i);
	uint32_t len = mix_len(i);
	const uint8_t *s = src + (size_t)i * MIX_SLOT;
	const uint8_t *d = dst + (size_t)i * MIX_SLOT;

	if (dr_wr_is_atomic(op) && !side)
		return;
	if (op == DR_WR_READ)
		ck_assert(memcmp(s + MIX_SLOT / 2, d, len) == 0);
	else if (op == DR_WR_SEND || op == DR_WR_SEND_IMM)
		ck_assert(memcmp(s, d + MIX_SLOT / 2, len) == 0);
	else
		ck_assert(memcmp(s, d, len) == 0);
}

/* Does the peer's WR i take one of our receive WQEs? */
static bool mix_takes_rwqe(unsigned i, bool imm_no_wqe)
{
	enum dr_wr_opcode op = mix_op(i);

	return op == DR_WR_SEND || op == DR_WR_SEND_IMM || (op == DR_WR_WRITE_IMM && !imm_no_wqe);
}

/* Both sides run a mixed workload at each other at once: A sends MIX_N WRs
 * to B and B MIX_N/4 to A, over a link that drops, duplicates and reorders
 * at the same rate in both directions.  The second quarter of the runs does
 * it with DR_QP_WRITE_IMM_NO_WQE on both QPs, the third with packets of
 * one size on both (dr_qp_set_one_size: WRITEs as WRITE ONLYs, short READs
 * asked for two responses a request), the last with ACKs unasked both ways
 * (dr_qp_set_lazy_ack, DR_QP_DEFER_ACK, two of three WRs DR_WR_UNWAITED).
 * Either way each responder reports each RDMA and atomic request of its
 * peer exactly once, in order. */
START_TEST(test_loss_mix)
{
	bool imm_no_wqe = _i / (int)(N_RATES * N_SEEDS) == 1;
	bool one_size = _i / (int)(N_RATES * N_SEEDS) == 2;
	bool lazy = _i / (int)(N_RATES * N_SEEDS) == 3;
	unsigned run = (unsigned)_i % (N_RATES * N_SEEDS);
	double rate = loss_rates[run / N_SEEDS];
	struct pair_cfg c = pair_defaults();
	size_t big = (size_t)MIX_N * MIX_SLOT;
	uint8_t *src[2], *dst[2];
	uint64_t *ctr, *res, sum = 0;
	struct dr_mr *smr[2], *dmr[2], *cmr, *rmr;
	unsigned side, i, nrecv[2] = {0, 0};
	struct pair p;

	if (imm_no_wqe)
		c.qp_flags[0] = c.qp_flags[1] = DR_QP_WRITE_IMM_NO_WQE;
	c.sim.drop = rate;
	c.sim.dup = rate;
	/* soak knobs (not used by make check): DR_QP_NOREORDER=1 turns the
	 * reordering off, DR_QP_SEED_OFFSET=n shifts the seeds, and
	 * DR_QP_VERBOSE=1 prints the fault and recovery counts of each run;
	 * simlink.c adds DR_SIM_LOG and DR_SIM_TRACE */
	c.sim.reorder = getenv("DR_QP_NOREORDER") ? 0 : rate;
	c.sim.seed = loss_seeds[run % N_SEEDS];
	if (getenv("DR_QP_SEED_OFFSET"))
		c.sim.seed += strtoull(getenv("DR_QP_SEED_OFFSET"), NULL, 0);
	c.ord = 4;
	c.ird = 4;
	if (lazy) {
		/* as the provider runs its QPs: ACKs held to the end of a
		 * burst of input, flushed then */
		c.qp_flags[0] = c.qp_flags[1] = DR_QP_DEFER_ACK;
		c.sim.flush_bursts = true;
	}
	pair_up(&p, &c);
	if (one_size) {
		dr_qp_set_one_size(p.qp[0], true);
		dr_qp_set_one_size(p.qp[1], true);
	}
	if (lazy) {
		dr_qp_set_lazy_ack(p.qp[0], true);
		dr_qp_set_lazy_ack(p.qp[1], true);
	}
	ctr = calloc(2, sizeof(*ctr));
	res = calloc(MIX_N, sizeof(*res));
	cmr = reg(&p, 1, ctr, 2 * sizeof(*ctr), DR_ACCESS_REMOTE_ATOMIC);
	rmr = reg(&p, 0, res, MIX_N * sizeof(*res), DR_ACCESS_LOCAL_WRITE);
	for (side = 0; side < 2; side++) {
		src[side] = malloc(big);
		dst[side] = malloc(big);
		fill(src[side], big, (uint32_t)(side + 1 + _i * 7));
		fill(dst[side], big, (uint32_t)(side + 11 + _i * 7));
		smr[side] = reg(&p, side, src[side], big, DR_ACCESS_LOCAL_WRITE);
		dmr[side] =
		    reg(&p, side ^ 1, dst[side], big,
			DR_ACCESS_LOCAL_WRITE | DR_ACCESS_REMOTE_WRITE | DR_ACCESS_REMOTE_READ);
	}
	/* receives first: both directions' SENDs and WRITE_IMMs */
	for (side = 0; side < 2; side++) {
		unsigned n = mix_count(side);

		for (i = 0; i < n; i++) {
			if (mix_takes_rwqe(i, imm_no_wqe))
				post_recv(&p, side ^ 1, 1000 + i,
					  dst[side] + (size_t)i * MIX_SLOT + MIX_SLOT / 2,
					  MIX_SLOT / 2);
		}
	}
	for (side = 0; side < 2; side++) {
		unsigned n = mix_count(side);

		for (i = 0; i < n; i++) {
			enum dr_wr_opcode op = mix_op(i);
			uint32_t len = mix_len(i);
			uint8_t *s = src[side] + (size_t)i * MIX_SLOT;
			uint8_t *d = dst[side] + (size_t)i * MIX_SLOT;
			struct dr_sge sge = {(uintptr_t)s, len, smr[side]->key};
			struct dr_send_wr wr = {
			    .wr_id = i,
			    .opcode = op,
			    /* lazy: two of three WRs nothing waits for */
			    .flags = DR_WR_SIGNALED | (lazy && i % 3 ? DR_WR_UNWAITED : 0),
			    .sg_list = &sge,
			    .num_sge = 1,
			    .imm = i * 3,
			    .remote_addr = (uintptr_t)d,
			    .rkey = dmr[side]->key,
			};

			if (dr_wr_is_atomic(op)) {
				if (side) { /* A owns the counter */
					wr.opcode = DR_WR_WRITE;
				} else {
					sge = (struct dr_sge){(uintptr_t)&res[i], 8, rmr->key};
					wr.remote_addr = (uintptr_t)&ctr[op == DR_WR_CMP_SWAP];
					wr.rkey = cmr->key;
					wr.compare_add = i + 1;
					wr.swap = i;
					if (op == DR_WR_CMP_SWAP)
						wr.compare_add = ctr[1]; /* set up below */
				}
			}
			if (op == DR_WR_READ) {
				/* read the remote dst slot into our own src slot copy */
				sge.addr = (uintptr_t)(s + MIX_SLOT / 2);
			}
			ck_assert_int_eq(dr_qp_post_send(p.qp[side], &wr), 0);
		}
	}
	ck_assert(pair_run(&p));

	/* every WR completed exactly once, in order, successfully */
	for (side = 0; side < 2; side++) {
		unsigned n = mix_count(side), ns = 0, nr = 0, nw = 0, nimm = 0;
		unsigned npeer = mix_count(side ^ 1);
		struct dr_sim_end *e = &p.sim.end[side];

		for (i = 0; i < e->nwc; i++) {
			const struct dr_wc *wc = &e->wc[i];

			ck_assert_msg(wc->status == DR_WC_SUCCESS, "side %u wc %u: %s", side, i,
				      dr_wc_status_names[wc->status]);
			if (wc->no_wqe) {
				/* the peer's WRITE_IMMs, in order, each once */
				ck_assert(imm_no_wqe);
				ck_assert_int_eq(wc->opcode, DR_WC_RECV_WRITE_IMM);
				while (nw < npeer && mix_op(nw) != DR_WR_WRITE_IMM)
					nw++;
				ck_assert_uint_lt(nw, npeer);
				ck_assert(wc->has_imm);
				ck_assert_uint_eq(wc->imm, nw * 3);
				ck_assert_uint_eq(wc->byte_len, mix_len(nw));
				nw++;
				nimm++;
			} else if (wc->opcode == DR_WC_RECV || wc->opcode == DR_WC_RECV_WRITE_IMM) {
				/* receives: the peer's WRs that consume one, in order */
				while (nr < npeer && !mix_takes_rwqe(nr, imm_no_wqe))
					nr++;
				ck_assert_uint_eq(wc->wr_id, 1000 + nr);
				nr++;
				nrecv[side]++;
			} else {
				ck_assert_uint_eq(wc->wr_id, ns);
				ns++;
			}
		}
		ck_assert_uint_eq(ns, n);
		/* every receive used, every WRITE_IMM seen, none twice */
		for (i = 0; i < npeer; i++) {
			if (mix_takes_rwqe(i, imm_no_wqe))
				nrecv[side]--;
			else if (mix_op(i) == DR_WR_WRITE_IMM)
				nimm--;
		}
		ck_assert_uint_eq(nrecv[side], 0);
		ck_assert_uint_eq(nimm, 0);
		ck_assert_uint_eq(dr_qp_rq_free(p.qp[side]), 512);
	}
	/* each responder: one event per RDMA or atomic request of its peer,
	 * in the peer's posting order, whatever was lost or duplicated; with
	 * packets of one size a WRITE is one request a packet and a short
	 * READ one a pair of packets */
	for (side = 0; side < 2; side++) {
		unsigned n = mix_count(side);
		size_t k = 0;

		for (i = 0; i < n; i++) {
			enum dr_wr_opcode op = mix_op(i);
			uint32_t len = mix_len(i), piece = 0, left;

			if (dr_wr_is_atomic(op) && side)
				op = DR_WR_WRITE; /* as posted above */
			if (one_size && (len + c.pmtu - 1) / c.pmtu <= DR_QP_SHORT_MAX)
				piece = op == DR_WR_WRITE  ? c.pmtu
					: op == DR_WR_READ ? 2 * c.pmtu
							   : 0;
			switch (op) {
			case DR_WR_WRITE:
			case DR_WR_WRITE_IMM:
			case DR_WR_READ:
				left = len;
				do {
					uint32_t l = piece && left > piece ? piece : left;

					expect_rop(side ^ 1, k++,
						   op == DR_WR_READ ? DR_REMOTE_READ
								    : DR_REMOTE_WRITE,
						   DR_WC_SUCCESS, l);
					left -= l;
				} while (left);
				break;
			case DR_WR_FETCH_ADD:
				expect_rop(side ^ 1, k, DR_REMOTE_FETCH_ADD, DR_WC_SUCCESS, 0);
				ck_assert_uint_eq(rops[side ^ 1].op[k++].compare_add, i + 1);
				break;
			case DR_WR_CMP_SWAP:
				expect_rop(side ^ 1, k, DR_REMOTE_CMP_SWAP, DR_WC_SUCCESS, 0);
				ck_assert_uint_eq(rops[side ^ 1].op[k++].swap, i);
				break;
			default:
				break;
			}
		}
		ck_assert_uint_eq(rops[side ^ 1].n, k);
	}
	/* byte-exact data */
	for (side = 0; side < 2; side++)
		for (i = 0; i < mix_count(side); i++)
			check_mix_data(side, i, src[side], dst[side]);
	/* atomics executed once each, in order: each FETCH_ADD saw the sum of
	 * the ones before it */
	for (i = 0; i < MIX_N; i++) {
		if (mix_op(i) == DR_WR_FETCH_ADD) {
			ck_assert_uint_eq(res[i], sum);
			sum += i + 1;
		}
	}
	ck_assert_uint_eq(ctr[0], sum);
	ck_assert_int_eq(p.qp[0]->state, DR_QPS_RTS);
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_RTS);
	if (getenv("DR_QP_VERBOSE"))
		printf("loss %.2f seed %llu: frames %llu/%llu dropped %llu/%llu dup %llu/%llu "
		       "delayed %llu/%llu resent %llu/%llu timeouts %llu/%llu seq-naks %llu/%llu "
		       "dup-reqs %llu/%llu t=%.3f ms\n",
		       rate, (unsigned long long)c.sim.seed,
		       (unsigned long long)p.sim.end[0].tx_frames,
		       (unsigned long long)p.sim.end[1].tx_frames,
		       (unsigned long long)p.sim.end[0].dropped,
		       (unsigned long long)p.sim.end[1].dropped,
		       (unsigned long long)p.sim.end[0].duplicated,
		       (unsigned long long)p.sim.end[1].duplicated,
		       (unsigned long long)p.sim.end[0].delayed,
		       (unsigned long long)p.sim.end[1].delayed,
		       (unsigned long long)p.qp[0]->stats.tx_resent_pkts,
		       (unsigned long long)p.qp[1]->stats.tx_resent_pkts,
		       (unsigned long long)p.qp[0]->stats.timeouts,
		       (unsigned long long)p.qp[1]->stats.timeouts,
		       (unsigned long long)p.qp[1]->stats.tx_seq_naks,
		       (unsigned long long)p.qp[0]->stats.tx_seq_naks,
		       (unsigned long long)p.qp[1]->stats.rx_dup_reqs,
		       (unsigned long long)p.qp[0]->stats.rx_dup_reqs, p.sim.now_ns / 1e6);
	if (rate == 0.0) {
		ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
		ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	}
	for (side = 0; side < 2; side++) {
		free(src[side]);
		free(dst[side]);
	}
	free(ctr);
	free(res);
	pair_down(&p);
}
END_TEST

/* ---- packets of one size ---------------------------------------------------------------- */

struct size_pkt {
	unsigned dir;
	uint8_t op;
	bool ackreq, reth;
	uint32_t psn, rlen, plen;
	uint64_t va;
};

struct size_log {
	unsigned n;
	struct size_pkt e[256];
};

static enum dr_sim_action log_sizes(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct size_log *l = arg;
	const struct dr_reth *reth = dr_pkt_reth(pkt);

	(void)n;
	if (pkt->opcode != DR_OP_ACK && l->n < 256) {
		l->e[l->n].dir = dir;
		l->e[l->n].op = pkt->opcode;
		l->e[l->n].ackreq = pkt->ackreq;
		l->e[l->n].psn = pkt->psn;
		l->e[l->n].reth = reth != NULL;
		l->e[l->n].va = reth ? be64toh(reth->va) : 0;
		l->e[l->n].rlen = reth ? ntohl(reth->len) : 0;
		l->e[l->n].plen = pkt->payload_len;
		l->n++;
	}
	return DR_SIM_PASS;
}

/* Entry i of l: direction, opcode, PSN, a RETH (rlen >= 0: at va with that
 * length; < 0: none), payload length, and for a request its AckReq. */
static void expect_sized(const struct size_log *l, unsigned i, unsigned dir, uint8_t op,
			 uint32_t psn, uint64_t va, int64_t rlen, uint32_t plen, bool ackreq)
{
	const struct size_pkt *e = &l->e[i];
	bool ok;

	ck_assert_msg(i < l->n, "%u packets, wanted #%u", l->n, i);
	ok = e->dir == dir && e->op == op && e->psn == psn && e->reth == (rlen >= 0) &&
	     (rlen < 0 || (e->va == va && e->rlen == rlen)) && e->plen == plen &&
	     (dir || e->ackreq == ackreq);
	ck_assert_msg(
	    ok,
	    "packet %u: dir %u %s psn 0x%06x reth %d va 0x%llx len %u payload %u ackreq %d; "
	    "expected dir %u %s psn 0x%06x va 0x%llx len %lld payload %u ackreq %d",
	    i, e->dir, dr_opcode_name(e->op), e->psn, e->reth, (unsigned long long)e->va, e->rlen,
	    e->plen, e->ackreq, dir, dr_opcode_name(op), psn, (unsigned long long)va,
	    (long long)rlen, plen, ackreq);
}

/* A's WR wr_id (op, len bytes at buf to raddr), its packets logged in l
 * from the first: posted, run to the end, completed as A's WR wr_id - 1. */
static void one_op(struct pair *p, struct size_log *l, uint64_t wr_id, enum dr_wr_opcode op,
		   void *buf, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	l->n = 0;
	ck_assert_int_eq(post_send(p, 0, wr_id, op, buf, len, lkey, raddr, rkey, DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(p));
	expect_wc(&p->sim.end[0].wc[wr_id - 1], wr_id, DR_WC_SUCCESS);
}

/* Short messages in packets of one size (dr_qp_set_one_size), one
 * operation at a time: a WRITE of five packets leaves as five WRITE ONLYs,
 * each with its own piece's RETH, the AckReq on the last; a WRITE with
 * immediate data keeps FIRST, MIDDLE, LAST (its receiver's completion
 * carries the length); a READ of five packets is asked for in requests of
 * two responses, answered FIRST, LAST, FIRST, LAST, ONLY; a READ and a
 * WRITE of 20 packets, above DR_QP_SHORT_MAX, as without it.  Data byte
 * for byte, and the responder reports each request. */
START_TEST(test_one_size)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[20 * 1024], dst[20 * 1024], back[20 * 1024], rbuf[64];
	const uint32_t wlen = 4 * 1024 + 904, rlen = 20 * 1024;
	static struct size_log l;
	uint32_t psn = c.psn_a, i;
	struct dr_mr *dmr, *smr, *bmr;
	struct pair p;

	c.sim.fault = log_sizes;
	c.sim.fault_arg = &l;
	pair_up(&p, &c);
	dr_qp_set_one_size(p.qp[0], true);
	fill(src, sizeof(src), 91);
	smr = reg(&p, 0, src, sizeof(src), DR_ACCESS_LOCAL_WRITE);
	bmr = reg(&p, 0, back, sizeof(back), DR_ACCESS_LOCAL_WRITE);
	dmr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE | DR_ACCESS_REMOTE_READ);

	/* WRITE, 5 packets */
	one_op(&p, &l, 1, DR_WR_WRITE, src, wlen, smr->key, (uintptr_t)dst, dmr->key);
	ck_assert(memcmp(src, dst, wlen) == 0);
	ck_assert_uint_eq(l.n, 5);
	for (i = 0; i < 5; i++)
		expect_sized(&l, i, 0, DR_OP_WRITE_ONLY, dr_psn_add(psn, (int32_t)i),
			     (uintptr_t)dst + i * 1024, i < 4 ? 1024 : 904, i < 4 ? 1024 : 904,
			     i == 4);
	for (i = 0; i < 5; i++)
		expect_rop(1, i, DR_REMOTE_WRITE, DR_WC_SUCCESS, i < 4 ? 1024 : 904);
	psn = dr_psn_add(psn, 5);

	/* WRITE with immediate data, 3 packets: as without it */
	post_recv(&p, 1, 7, rbuf, sizeof(rbuf));
	one_op(&p, &l, 2, DR_WR_WRITE_IMM, src, 3000, smr->key, (uintptr_t)dst + 8192, dmr->key);
	ck_assert(memcmp(src, dst + 8192, 3000) == 0);
	ck_assert_uint_eq(p.sim.end[1].wc[0].byte_len, 3000);
	ck_assert_uint_eq(l.n, 3);
	expect_sized(&l, 0, 0, DR_OP_WRITE_FIRST, psn, (uintptr_t)dst + 8192, 3000, 1024, false);
	expect_sized(&l, 1, 0, DR_OP_WRITE_MIDDLE, dr_psn_add(psn, 1), 0, -1, 1024, false);
	expect_sized(&l, 2, 0, DR_OP_WRITE_LAST_IMM, dr_psn_add(psn, 2), 0, -1, 952, true);
	expect_rop(1, 5, DR_REMOTE_WRITE, DR_WC_SUCCESS, 3000);
	psn = dr_psn_add(psn, 3);

	/* READ, 5 packets: requests of two responses */
	fill(dst, sizeof(dst), 92);
	memset(back, 0, sizeof(back));
	one_op(&p, &l, 3, DR_WR_READ, back, wlen, bmr->key, (uintptr_t)dst, dmr->key);
	ck_assert(memcmp(back, dst, wlen) == 0);
	ck_assert_uint_eq(l.n, 8);
	/* the three requests leave together, then the responses */
	for (i = 0; i < 3; i++)
		expect_sized(&l, i, 0, DR_OP_READ_REQ, dr_psn_add(psn, (int32_t)(2 * i)),
			     (uintptr_t)dst + 2048 * i, i < 2 ? 2048 : 904, 0, true);
	expect_sized(&l, 3, 1, DR_OP_READ_RSP_FIRST, psn, 0, -1, 1024, false);
	expect_sized(&l, 4, 1, DR_OP_READ_RSP_LAST, dr_psn_add(psn, 1), 0, -1, 1024, false);
	expect_sized(&l, 5, 1, DR_OP_READ_RSP_FIRST, dr_psn_add(psn, 2), 0, -1, 1024, false);
	expect_sized(&l, 6, 1, DR_OP_READ_RSP_LAST, dr_psn_add(psn, 3), 0, -1, 1024, false);
	expect_sized(&l, 7, 1, DR_OP_READ_RSP_ONLY, dr_psn_add(psn, 4), 0, -1, 904, false);
	expect_rop(1, 6, DR_REMOTE_READ, DR_WC_SUCCESS, 2048);
	expect_rop(1, 7, DR_REMOTE_READ, DR_WC_SUCCESS, 2048);
	expect_rop(1, 8, DR_REMOTE_READ, DR_WC_SUCCESS, 904);
	psn = dr_psn_add(psn, 5);

	/* READ, 20 packets: one request, FIRST, 18 MIDDLEs, LAST */
	memset(back, 0, sizeof(back));
	one_op(&p, &l, 4, DR_WR_READ, back, rlen, bmr->key, (uintptr_t)dst, dmr->key);
	ck_assert(memcmp(back, dst, rlen) == 0);
	ck_assert_uint_eq(l.n, 21);
	expect_sized(&l, 0, 0, DR_OP_READ_REQ, psn, (uintptr_t)dst, rlen, 0, true);
	expect_sized(&l, 1, 1, DR_OP_READ_RSP_FIRST, psn, 0, -1, 1024, false);
	for (i = 2; i < 20; i++)
		expect_sized(&l, i, 1, DR_OP_READ_RSP_MIDDLE, dr_psn_add(psn, (int32_t)(i - 1)), 0,
			     -1, 1024, false);
	expect_sized(&l, 20, 1, DR_OP_READ_RSP_LAST, dr_psn_add(psn, 19), 0, -1, 1024, false);
	expect_rop(1, 9, DR_REMOTE_READ, DR_WC_SUCCESS, rlen);
	psn = dr_psn_add(psn, 20);

	/* WRITE, 20 packets: FIRST, 18 MIDDLEs, LAST */
	one_op(&p, &l, 5, DR_WR_WRITE, src, rlen, smr->key, (uintptr_t)dst, dmr->key);
	ck_assert(memcmp(src, dst, rlen) == 0);
	ck_assert_uint_eq(l.n, 20);
	expect_sized(&l, 0, 0, DR_OP_WRITE_FIRST, psn, (uintptr_t)dst, rlen, 1024, false);
	for (i = 1; i < 19; i++)
		expect_sized(&l, i, 0, DR_OP_WRITE_MIDDLE, dr_psn_add(psn, (int32_t)i), 0, -1, 1024,
			     false);
	expect_sized(&l, 19, 0, DR_OP_WRITE_LAST, dr_psn_add(psn, 19), 0, -1, 1024, true);
	expect_rop(1, 10, DR_REMOTE_WRITE, DR_WC_SUCCESS, rlen);
	ck_assert_uint_eq(rops[1].n, 11);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	pair_down(&p);
}
END_TEST

/* ---- remote access errors ---------------------------------------------------------- */

enum err_case { ERR_BAD_KEY, ERR_BOUNDS, ERR_NO_PERM, ERR_MISALIGNED, ERR_READ_PERM, ERR_NUM };

START_TEST(test_remote_errors)
{
	static const enum dr_wc_status want[ERR_NUM] = {
	    [ERR_BAD_KEY] = DR_WC_REM_ACCESS_ERR,   [ERR_BOUNDS] = DR_WC_REM_ACCESS_ERR,
	    [ERR_NO_PERM] = DR_WC_REM_ACCESS_ERR,   [ERR_MISALIGNED] = DR_WC_REM_INV_REQ_ERR,
	    [ERR_READ_PERM] = DR_WC_REM_ACCESS_ERR,
	};
	static const uint8_t syn[ERR_NUM] = {
	    [ERR_BAD_KEY] = DR_AETH_NAK_REM_ACCESS,   [ERR_BOUNDS] = DR_AETH_NAK_REM_ACCESS,
	    [ERR_NO_PERM] = DR_AETH_NAK_REM_ACCESS,   [ERR_MISALIGNED] = DR_AETH_NAK_INV_REQ,
	    [ERR_READ_PERM] = DR_AETH_NAK_REM_ACCESS,
	};
	static const enum dr_remote_op_kind rop_kind[ERR_NUM] = {
	    [ERR_BAD_KEY] = DR_REMOTE_WRITE,  [ERR_BOUNDS] = DR_REMOTE_WRITE,
	    [ERR_NO_PERM] = DR_REMOTE_WRITE,  [ERR_MISALIGNED] = DR_REMOTE_FETCH_ADD,
	    [ERR_READ_PERM] = DR_REMOTE_READ,
	};
	static const uint64_t rop_len[ERR_NUM] = {
	    [ERR_BAD_KEY] = 100,
	    [ERR_BOUNDS] = 4000,
	    [ERR_NO_PERM] = 10,
	    [ERR_READ_PERM] = 10,
	};
	struct pair_cfg c = pair_defaults();
	static uint8_t src[8192], dst[8192], ro[64];
	static uint64_t atom[4], res;
	struct dr_mr *dmr, *romr, *amr;
	struct pair p;
	unsigned i;

	pair_up(&p, &c);
	dmr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE);
	romr = reg(&p, 1, ro, sizeof(ro), DR_ACCESS_REMOTE_READ);
	amr = reg(&p, 1, atom, sizeof(atom), DR_ACCESS_REMOTE_ATOMIC);
	post_recv(&p, 1, 900, dst, 64);
	post_recv(&p, 1, 901, dst, 64);
	post_recv(&p, 0, 800, src, 64); /* the initiator's own receive */
	/* a good WRITE first: it completes before the failure */
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, 3000, 0, (uintptr_t)dst, dmr->key,
				   DR_WR_SIGNALED),
			 0);
	switch (_i) {
	case ERR_BAD_KEY:
		ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_WRITE, src, 100, 0, (uintptr_t)dst,
					   dmr->key ^ 0x80000000u, 0),
				 0);
		break;
	case ERR_BOUNDS: /* multi-packet, one byte too far */
		ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_WRITE, src, 4000, 0,
					   (uintptr_t)dst + sizeof(dst) - 3999, dmr->key, 0),
				 0);
		break;
	case ERR_NO_PERM: /* WRITE into a read-only region */
		ck_assert_int_eq(
		    post_send(&p, 0, 2, DR_WR_WRITE, src, 10, 0, (uintptr_t)ro, romr->key, 0), 0);
		break;
	case ERR_MISALIGNED: {
		struct dr_sge sge = {(uintptr_t)&res, 8, 0};
		struct dr_send_wr wr = {.wr_id = 2,
					.opcode = DR_WR_FETCH_ADD,
					.sg_list = &sge,
					.num_sge = 1,
					.remote_addr = (uintptr_t)atom + 4,
					.rkey = amr->key,
					.compare_add = 1};

		ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
		break;
	}
	case ERR_READ_PERM: /* READ from a write-only region */
		ck_assert_int_eq(
		    post_send(&p, 0, 2, DR_WR_READ, src, 10, 0, (uintptr_t)dst, dmr->key, 0), 0);
		break;
	}
	for (i = 3; i < 6; i++)
		ck_assert_int_eq(post_send(&p, 0, i, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED),
				 0);
	ck_assert(pair_run(&p));

	/* initiator: 1 ok, 2 fails with the NAK's status (though unsignaled),
	 * 3..5 flushed, each once, in order */
	ck_assert_uint_eq(p.sim.end[0].nwc, 6);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[0].wc[1], 2, want[_i]);
	ck_assert_uint_eq(p.sim.end[0].wc[1].syndrome, syn[_i]);
	for (i = 3; i < 6; i++)
		expect_wc(&p.sim.end[0].wc[i - 1], i, DR_WC_WR_FLUSH_ERR);
	expect_wc(&p.sim.end[0].wc[5], 800, DR_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(p.sim.end[0].wc[5].opcode, DR_WC_RECV);
	ck_assert_int_eq(p.qp[0]->state, DR_QPS_ERROR);
	/* the responder is in error too, its receives flushed */
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_ERROR);
	ck_assert_uint_eq(p.sim.end[1].nwc, 2);
	expect_wc(&p.sim.end[1].wc[0], 900, DR_WC_WR_FLUSH_ERR);
	expect_wc(&p.sim.end[1].wc[1], 901, DR_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(p.qp[1]->stats.tx_err_naks, 1);
	ck_assert_uint_eq(atom[0] | atom[1], 0);
	/* the good WRITE executed, the bad request refused: once each, the
	 * SENDs behind it never reached execution */
	ck_assert_uint_eq(rops[1].n, 2);
	expect_rop(1, 0, DR_REMOTE_WRITE, DR_WC_SUCCESS, 3000);
	expect_rop(1, 1, rop_kind[_i], want[_i], rop_len[_i]);
	ck_assert_uint_eq(rops[1].op[1].syndrome, syn[_i]);
	if (_i == ERR_MISALIGNED)
		ck_assert_uint_eq(rops[1].op[1].compare_add, 1);
	ck_assert_uint_eq(rops[0].n, 0);
	pair_down(&p);
}
END_TEST

START_TEST(test_recv_too_small)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[4000], dst[2000];
	struct pair p;

	pair_up(&p, &c);
	post_recv(&p, 1, 900, dst, sizeof(dst));
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src, sizeof(src), 0, 0, 0, 0), 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_REM_INV_REQ_ERR);
	ck_assert_uint_eq(p.sim.end[1].nwc, 1);
	expect_wc(&p.sim.end[1].wc[0], 900, DR_WC_LOC_LEN_ERR);
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_ERROR);
	pair_down(&p);
}
END_TEST

/* Zero-length SGEs that name a registered region: dr_mr_check() gives
 * them no address (IBA 9.4.4: nothing to check), so the engine holds a
 * null base with length 0.  Found by fuzz/fuzz_qp: the requester's
 * dr_sge_span() computed "NULL + 0", undefined behaviour that UBSan
 * reports (build the suite with clang -fsanitize=undefined to see it). */
START_TEST(test_zero_len_keyed_sge)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t lbuf[64], rbuf[64];
	struct dr_mr *lmr, *rmr;
	struct pair p;

	pair_up(&p, &c);
	lmr = reg(&p, 0, lbuf, sizeof(lbuf), DR_ACCESS_LOCAL_WRITE);
	rmr = reg(&p, 1, rbuf, sizeof(rbuf), DR_ACCESS_REMOTE_WRITE | DR_ACCESS_LOCAL_WRITE);
	{
		struct dr_sge sge = {.addr = rmr->iova, .length = 0, .lkey = rmr->key};
		struct dr_recv_wr wr = {.wr_id = 900, .sg_list = &sge, .num_sge = 1};

		ck_assert_int_eq(dr_qp_post_recv(p.qp[1], &wr), 0);
	}
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, lbuf, 0, lmr->key, 0, 0, DR_WR_SIGNALED),
			 0);
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_WRITE, lbuf, 0, lmr->key, rmr->iova, rmr->key,
				   DR_WR_SIGNALED),
			 0);
	ck_assert_int_eq(post_send(&p, 0, 3, DR_WR_READ, lbuf, 0, lmr->key, rmr->iova, rmr->key,
				   DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 3);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[0].wc[1], 2, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[0].wc[2], 3, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].nwc, 1);
	expect_wc(&p.sim.end[1].wc[0], 900, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].wc[0].byte_len, 0);
	ck_assert_int_eq(p.qp[0]->state, DR_QPS_RTS);
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_RTS);
	pair_down(&p);
}
END_TEST

/* ---- RNR ---------------------------------------------------------------------------- */

static bool saw_rnr(void *arg)
{
	struct pair *p = arg;

	return p->qp[0]->stats.rx_rnr_naks > 0;
}

START_TEST(test_rnr_then_recv)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[5000], dst[5000];
	struct pair p;

	c.min_rnr_timer = 14; /* 1.28 ms */
	pair_up(&p, &c);
	fill(src, sizeof(src), 5);
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src, sizeof(src), 0, 0, 0, DR_WR_SIGNALED),
			 0);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, saw_rnr, &p));
	ck_assert_uint_eq(p.qp[1]->stats.tx_rnr_naks, 1);
	ck_assert_int_eq(p.qp[0]->req.state, DR_REQ_WAIT_RNR);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), p.sim.now_ns + 1280000);
	/* later packets of the message were dropped silently, no extra NAK */
	ck_assert(!dr_sim_run(&p.sim, p.sim.now_ns + 1000000, NULL, NULL));
	ck_assert_uint_eq(p.qp[1]->stats.tx_seq_naks, 0);
	ck_assert_uint_eq(p.sim.end[0].nwc, 0);
	post_recv(&p, 1, 900, dst, sizeof(dst));
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[1].wc[0], 900, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, sizeof(src)) == 0);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	pair_down(&p);
}
END_TEST

START_TEST(test_rnr_exhausted)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[100], dst[100];
	struct pair p;

	c.rnr_retry = 3;
	c.min_rnr_timer = 5; /* 60 us */
	pair_up(&p, &c);
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND_IMM, src, 100, 0, 0, 0, 0), 0);
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_WRITE_IMM, src, 100, 0, (uintptr_t)dst, 1, 0),
			 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[1]->stats.tx_rnr_naks, 4); /* first try + 3 retries */
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_RNR_RETRY_EXC_ERR);
	expect_wc(&p.sim.end[0].wc[1], 2, DR_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(p.qp[0]->state, DR_QPS_ERROR);
	/* the responder did nothing wrong and stays up */
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_RTS);
	/* three RNR waits of 60 us each, at least */
	ck_assert_uint_ge(p.sim.now_ns, 3 * 60000);
	pair_down(&p);
}
END_TEST

/* WRITE_WITH_IMM: the RNR comes on its LAST packet after the data went in */
START_TEST(test_rnr_write_imm)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[3000], dst[3000];
	struct dr_mr *dmr;
	struct pair p;

	pair_up(&p, &c);
	fill(src, sizeof(src), 9);
	dmr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE_IMM, src, sizeof(src), 0, (uintptr_t)dst,
				   dmr->key, DR_WR_SIGNALED),
			 0);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, saw_rnr, &p));
	post_recv(&p, 1, 900, NULL, 0);
	ck_assert(pair_run(&p));
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[1].wc[0], 900, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].wc[0].byte_len, sizeof(src));
	ck_assert(memcmp(src, dst, sizeof(src)) == 0);
	/* only the LAST packet was resent */
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 1);
	/* the RNR NAK reported nothing; the resent LAST completed the write */
	ck_assert_uint_eq(rops[1].n, 1);
	expect_rop(1, 0, DR_REMOTE_WRITE, DR_WC_SUCCESS, sizeof(src));
	pair_down(&p);
}
END_TEST

/*
 * RNR is flow control, not loss.  B has no receive posted when a burst of
 * 4 SENDs of 3 packets each (12 packets, PSN p..p+11) arrives.  The link's
 * 100 us latency lets the whole burst leave A before the RNR NAK for p
 * comes back, so B answers p with exactly one RNR NAK and holds the 11
 * packets behind it: rx_drop_psn_ahead_rnr counts them, rx_drop_psn_ahead
 * (frames behind a real gap) stays 0, and no sequence NAK is sent.  The
 * receives are posted during A's RNR wait (1.28 ms): the one retry from p
 * delivers all four messages byte-exact, and the lossless link shows no
 * loss.  Before the fix the 11 were counted as psn_ahead, which
 * droce-bench reports as lost (tests/lossless.sh, memif bw_send 16 KiB:
 * "127 lost" behind one RNR NAK).
 */
#define RNR_HELD_MSGS 4
#define RNR_HELD_LEN  3000 /* 3 packets at PMTU 1024 */

struct rnr_held_wire {
	unsigned rnr_naks, seq_naks; /* as B sent them, on the wire */
};

static enum dr_sim_action rnr_held_watch(void *arg, unsigned dir, uint64_t n,
					 const struct dr_pkt *pkt)
{
	struct rnr_held_wire *w = arg;

	if (dir == 1 && pkt->opcode == DR_OP_ACK) {
		uint8_t syn = dr_aeth_syndrome(dr_pkt_aeth(pkt));

		if ((syn & DR_AETH_TYPE_MASK) == DR_AETH_RNR_NAK)
			w->rnr_naks++;
		else if (syn == DR_AETH_NAK_PSN_SEQ)
			w->seq_naks++;
	}
	return DR_SIM_PASS;
}

START_TEST(test_rnr_held_not_lost)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[RNR_HELD_MSGS][RNR_HELD_LEN], dst[RNR_HELD_MSGS][RNR_HELD_LEN];
	const unsigned npkts = RNR_HELD_MSGS * 3;
	struct rnr_held_wire w = {0};
	const struct dr_qp_stats *bs;
	struct pair p;
	unsigned i;

	c.min_rnr_timer = 14; /* 1.28 ms */
	c.sim.latency_ns = 100000;
	c.sim.fault = rnr_held_watch;
	c.sim.fault_arg = &w;
	pair_up(&p, &c);
	bs = dr_qp_stats(p.qp[1]);
	memset(dst, 0, sizeof(dst));
	for (i = 0; i < RNR_HELD_MSGS; i++) {
		fill(src[i], RNR_HELD_LEN, 40 + i);
		ck_assert_int_eq(post_send(&p, 0, 1 + i, DR_WR_SEND, src[i], RNR_HELD_LEN, 0, 0, 0,
					   DR_WR_SIGNALED),
				 0);
	}
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, saw_rnr, &p));
	ck_assert_int_eq(p.qp[0]->req.state, DR_REQ_WAIT_RNR);
	/* the whole burst left before the NAK came back, and has arrived */
	ck_assert_uint_eq(p.qp[0]->stats.tx_req_pkts, npkts);
	ck_assert_uint_eq(bs->rx_frames, npkts);
	ck_assert_uint_eq(bs->tx_rnr_naks, 1);
	ck_assert_uint_eq(bs->rx_drop[DR_RX_DROP_PSN_AHEAD_RNR], npkts - 1);
	ck_assert_uint_eq(bs->rx_drop[DR_RX_DROP_PSN_AHEAD], 0);
	ck_assert_uint_eq(bs->rx_dropped, npkts - 1);
	ck_assert_uint_eq(bs->tx_seq_naks, 0);

	for (i = 0; i < RNR_HELD_MSGS; i++)
		post_recv(&p, 1, 900 + i, dst[i], RNR_HELD_LEN);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, RNR_HELD_MSGS);
	ck_assert_uint_eq(p.sim.end[1].nwc, RNR_HELD_MSGS);
	for (i = 0; i < RNR_HELD_MSGS; i++) {
		expect_wc(&p.sim.end[0].wc[i], 1 + i, DR_WC_SUCCESS);
		expect_wc(&p.sim.end[1].wc[i], 900 + i, DR_WC_SUCCESS);
		ck_assert_uint_eq(p.sim.end[1].wc[i].byte_len, RNR_HELD_LEN);
		ck_assert(memcmp(src[i], dst[i], RNR_HELD_LEN) == 0);
	}
	/* one RNR NAK, one retry of the whole burst, nothing else */
	ck_assert_uint_eq(bs->tx_rnr_naks, 1);
	ck_assert_uint_eq(w.rnr_naks, 1);
	ck_assert_uint_eq(w.seq_naks, 0);
	ck_assert_uint_eq(p.qp[0]->stats.rx_rnr_naks, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rnr_waits, 1);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, npkts);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(bs->rx_drop[DR_RX_DROP_PSN_AHEAD_RNR], npkts - 1);
	ck_assert_uint_eq(bs->rx_drop[DR_RX_DROP_PSN_AHEAD], 0);
	ck_assert_uint_eq(bs->rx_dropped, npkts - 1);
	ck_assert_uint_eq(bs->rx_dup_reqs, 0);
	pair_down(&p);
}
END_TEST

/* ---- a dead link ------------------------------------------------------------------ */

static enum dr_sim_action drop_all(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	return DR_SIM_DROP;
}

START_TEST(test_dead_link)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[10000];
	struct pair p;

	c.sim = (struct dr_sim_cfg){.fault = drop_all};
	c.timeout = 14; /* 67.1 ms */
	c.retry_cnt = 3;
	pair_up(&p, &c);
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, 0, 0, 0), 0);
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_SEND, src, 1, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert(pair_run(&p)); /* it ends: nothing hangs */
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_RETRY_EXC_ERR);
	expect_wc(&p.sim.end[0].wc[1], 2, DR_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(p.qp[0]->state, DR_QPS_ERROR);
	/* first send at t=0, then retry_cnt timeouts each followed by a
	 * resend, and the failing one; each timeout doubles the last (comp.c
	 * backoff): (1 + 2 + 4 + 8) * 4.096 us * 2^timeout */
	ck_assert_uint_eq(p.sim.now_ns, 15ull * 4096 * (1u << 14));
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 4);
	ck_assert_uint_eq(p.qp[0]->stats.retries, 3);
	/* 10 packets + 1 each try */
	ck_assert_uint_eq(p.sim.end[0].tx_frames, 4 * 11);
	ck_assert_uint_eq(rops[1].n, 0);
	pair_down(&p);
}
END_TEST

/* ---- duplicated atomics -------------------------------------------------------------- */

struct dup_sched {
	unsigned mode; /* 0: duplicate the request; 1: drop the first reply */
	unsigned acks;
	uint64_t orig[4];
	bool done;
};

static enum dr_sim_action dup_atomic(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct dup_sched *d = arg;

	if (dir == 1 && pkt->opcode == DR_OP_ATOMIC_ACK) {
		if (d->acks < 4)
			d->orig[d->acks] = be64toh(dr_pkt_atmack(pkt)->orig);
		if (d->mode == 1 && d->acks++ == 0)
			return DR_SIM_DROP;
		if (d->mode == 0)
			d->acks++;
		return DR_SIM_PASS;
	}
	if (d->mode == 0 && dir == 0 && pkt->opcode == DR_OP_FETCH_ADD && !d->done) {
		d->done = true;
		return DR_SIM_DUP;
	}
	return DR_SIM_PASS;
}

START_TEST(test_dup_atomic)
{
	struct pair_cfg c = pair_defaults();
	struct dup_sched d = {.mode = _i};
	uint64_t target = 40, res = 0;
	struct dr_sge sge = {(uintptr_t)&res, 8, 0};
	struct dr_send_wr wr = {.wr_id = 1,
				.opcode = DR_WR_FETCH_ADD,
				.flags = DR_WR_SIGNALED,
				.sg_list = &sge,
				.num_sge = 1,
				.compare_add = 2};
	struct dr_mr *tmr;
	struct pair p;

	c.sim.fault = dup_atomic;
	c.sim.fault_arg = &d;
	pair_up(&p, &c);
	tmr = reg(&p, 1, &target, 8, DR_ACCESS_REMOTE_ATOMIC);
	wr.remote_addr = (uintptr_t)&target;
	wr.rkey = tmr->key;
	ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
	ck_assert(pair_run(&p));
	/* executed once, answered twice with the same original value */
	ck_assert_uint_eq(target, 42);
	ck_assert_uint_eq(p.qp[1]->stats.atomics_executed, 1);
	ck_assert_uint_eq(p.qp[1]->stats.tx_atomic_acks, 2);
	ck_assert_uint_eq(d.acks, 2);
	ck_assert_uint_eq(d.orig[0], 40);
	ck_assert_uint_eq(d.orig[1], 40);
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert_uint_eq(res, 40);
	if (_i == 1)
		ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);
	/* the replay from the cache is no second event */
	ck_assert_uint_eq(rops[1].n, 1);
	expect_rop(1, 0, DR_REMOTE_FETCH_ADD, DR_WC_SUCCESS, 0);
	ck_assert_uint_eq(rops[1].op[0].compare_add, 2);
	pair_down(&p);
}
END_TEST

/* ---- go-back-N details ------------------------------------------------------------------ */

struct gbn_sched {
	uint32_t drop_psn;
	bool dropped;
	unsigned naks;
	uint32_t nak_psn;
	unsigned seen[2048]; /* by PSN offset from the start */
	uint32_t start;
};

static enum dr_sim_action gbn_drop(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct gbn_sched *g = arg;

	if (dir == 0) {
		uint32_t off = (uint32_t)dr_psn_diff(pkt->psn, g->start);

		if (off < 2048)
			g->seen[off]++;
		if (pkt->psn == g->drop_psn && !g->dropped) {
			g->dropped = true;
			return DR_SIM_DROP;
		}
	} else if (pkt->opcode == DR_OP_ACK &&
		   dr_aeth_syndrome(dr_pkt_aeth(pkt)) == DR_AETH_NAK_PSN_SEQ) {
		g->naks++;
		g->nak_psn = pkt->psn;
	}
	return DR_SIM_PASS;
}

/* One packet lost in the middle of a 1 MiB WRITE: exactly one sequence NAK,
 * and the resend starts at the lost PSN -- the part already acknowledged
 * (the AckReq every 64 packets) is not sent again. */
START_TEST(test_gbn_partial)
{
	struct pair_cfg c = pair_defaults();
	struct gbn_sched g = {0};
	uint32_t len = 1u << 20, i;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	struct pair p;

	g.start = c.psn_a;
	g.drop_psn = dr_psn_add(c.psn_a, 100);
	c.sim.fault = gbn_drop;
	c.sim.fault_arg = &g;
	c.sim.latency_ns = 50000; /* ACKs of 0..63 are back before the NAK */
	pair_up(&p, &c);
	fill(src, len, 77);
	post_write_to_b(&p, src, dst, len, DR_WR_SIGNALED);
	ck_assert(pair_run(&p));
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, len) == 0);
	ck_assert_uint_eq(p.qp[1]->stats.tx_seq_naks, 1);
	ck_assert_uint_eq(g.naks, 1);
	ck_assert_uint_eq(g.nak_psn, g.drop_psn); /* the expected PSN */
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	for (i = 0; i < 100; i++)
		ck_assert_msg(g.seen[i] == 1, "psn +%u sent %u times", i, g.seen[i]);
	ck_assert_uint_eq(g.seen[100], 2);
	/* the packets behind the gap (NAK_SEQ, then dropped) report nothing */
	ck_assert_uint_eq(rops[1].n, 1);
	expect_rop(1, 0, DR_REMOTE_WRITE, DR_WC_SUCCESS, len);
	pair_down(&p);
	free(src);
	free(dst);
}
END_TEST

/* A lost READ response: the READ is asked again from the missing PSN only
 * and the responder replays just that tail. */
static enum dr_sim_action drop_rsp(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct gbn_sched *g = arg;

	if (dir == 1 && pkt->psn == g->drop_psn && !g->dropped) {
		g->dropped = true;
		return DR_SIM_DROP;
	}
	return DR_SIM_PASS;
}

/* Brings the pair up over a link that loses B's READ response PSN
 * +drop_at once, and posts a signaled READ (wr_id 1) of B's src into A's
 * dst; returns src's MR. */
static struct dr_mr *read_lose_rsp(struct pair *p, struct pair_cfg *c, struct gbn_sched *g,
				   uint32_t drop_at, uint8_t *src, uint8_t *dst, uint32_t len)
{
	struct dr_mr *smr;

	g->drop_psn = dr_psn_add(c->psn_a, drop_at);
	c->sim.fault = drop_rsp;
	c->sim.fault_arg = g;
	pair_up(p, c);
	smr = reg(p, 1, src, len, DR_ACCESS_REMOTE_READ);
	ck_assert_int_eq(
	    post_send(p, 0, 1, DR_WR_READ, dst, len, 0, (uintptr_t)src, smr->key, DR_WR_SIGNALED),
	    0);
	return smr;
}

START_TEST(test_read_retry_tail)
{
	struct pair_cfg c = pair_defaults();
	struct gbn_sched g = {0};
	static uint8_t src[20 * 1024], dst[20 * 1024];
	struct pair p;

	fill(src, sizeof(src), 31);
	read_lose_rsp(&p, &c, &g, 15, src, dst, sizeof(src));
	ck_assert(pair_run(&p));
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, sizeof(src)) == 0);
	/* 20 responses, then the 5 from PSN +15 again */
	ck_assert_uint_eq(p.qp[1]->stats.tx_read_rsps, 25);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 1);
	ck_assert_uint_eq(rops[1].n, 1); /* the replayed tail is not a second READ */
	expect_rop(1, 0, DR_REMOTE_READ, DR_WC_SUCCESS, sizeof(src));
	pair_down(&p);
}
END_TEST

/* READ responses placed as the port with a place function takes them
 * (dr_qp_place, simlink cfg.place), over a link that drops, duplicates
 * and reorders: READs of one and three SGEs, a pad, a response too short
 * to defer, a WRITE between them.  Every READ completes byte-exact, and
 * exactly the responses the completer accepted were placed - each PSN once
 * (a duplicate, one ahead of a gap or for a READ not yet at the head is
 * copied nowhere). */
/* The packets of a message of len bytes at pmtu from byte from on whose
 * payload the parser defers (DR_ICRC_DEFER_MIN bytes or more). */
static uint64_t deferred_pkts(uint32_t len, uint32_t from, uint32_t pmtu)
{
	uint64_t n = 0;

	for (uint32_t off = from; off < len; off += pmtu)
		n += len - off >= DR_ICRC_DEFER_MIN;
	return n;
}

static const struct {
	double drop, dup, reorder;
	uint64_t seed;
} placed_tab[] = {
    {0, 0, 0, 1}, {0.05, 0, 0, 2}, {0, 0.1, 0, 3}, {0, 0, 0.1, 4}, {0.03, 0.05, 0.05, 5},
};

START_TEST(test_read_placed)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[5][20 * 1024], dst[5][20 * 1024 + 64], wsrc[3000], wdst[3000];
	/* lengths of the READs; READ 0 goes to three SGEs */
	static const uint32_t len[5] = {20 * 1024, 4096, 1021, 100, 300 + 4096};
	uint64_t want_placed = 0;
	struct dr_mr *smr[5], *wmr;
	struct pair p;

	c.sim.drop = placed_tab[_i].drop;
	c.sim.dup = placed_tab[_i].dup;
	c.sim.reorder = placed_tab[_i].reorder;
	c.sim.seed = placed_tab[_i].seed;
	c.sim.place = true;
	pair_up(&p, &c);
	for (unsigned i = 0; i < 5; i++) {
		fill(src[i], len[i], 40 + i);
		memset(dst[i], 0xa5, sizeof(dst[i]));
		smr[i] = reg(&p, 1, src[i], len[i], DR_ACCESS_REMOTE_READ);
		want_placed += deferred_pkts(len[i], 0, c.pmtu);
	}
	fill(wsrc, sizeof(wsrc), 50);
	wmr = reg(&p, 1, wdst, sizeof(wdst), DR_ACCESS_REMOTE_WRITE);
	{
		/* 1000 bytes, 7000 (from 8 bytes on), the rest (16 on) */
		struct dr_sge sge[3] = {
		    {.addr = (uintptr_t)dst[0], .length = 1000},
		    {.addr = (uintptr_t)dst[0] + 1008, .length = 7000},
		    {.addr = (uintptr_t)dst[0] + 8024, .length = len[0] - 8000},
		};
		struct dr_send_wr wr = {
		    .wr_id = 0,
		    .opcode = DR_WR_READ,
		    .flags = DR_WR_SIGNALED,
		    .sg_list = sge,
		    .num_sge = 3,
		    .remote_addr = (uintptr_t)src[0],
		    .rkey = smr[0]->key,
		};

		ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
	}
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_READ, dst[1], len[1], 0, (uintptr_t)src[1],
				   smr[1]->key, DR_WR_SIGNALED),
			 0);
	ck_assert_int_eq(post_send(&p, 0, 9, DR_WR_WRITE, wsrc, sizeof(wsrc), 0, (uintptr_t)wdst,
				   wmr->key, DR_WR_SIGNALED),
			 0);
	for (unsigned i = 2; i < 5; i++)
		ck_assert_int_eq(post_send(&p, 0, i, DR_WR_READ, dst[i], len[i], 0,
					   (uintptr_t)src[i], smr[i]->key, DR_WR_SIGNALED),
				 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 6);
	for (unsigned i = 0; i < 6; i++)
		ck_assert_int_eq(p.sim.end[0].wc[i].status, DR_WC_SUCCESS);
	ck_assert(!memcmp(dst[0], src[0], 1000));
	ck_assert(!memcmp(dst[0] + 1008, src[0] + 1000, 7000));
	ck_assert(!memcmp(dst[0] + 8024, src[0] + 8000, len[0] - 8000));
	for (unsigned k = 0; k < 8; k++) {
		ck_assert_uint_eq(dst[0][1000 + k], 0xa5);
		ck_assert_uint_eq(dst[0][8016 + k], 0xa5);
		ck_assert_uint_eq(dst[0][len[0] + 24 + k], 0xa5);
	}
	for (unsigned i = 1; i < 5; i++) {
		ck_assert(!memcmp(dst[i], src[i], len[i]));
		ck_assert_uint_eq(dst[i][len[i]], 0xa5);
	}
	ck_assert(!memcmp(wdst, wsrc, sizeof(wsrc)));
	ck_assert_uint_eq(p.sim.end[0].placed, want_placed);
	/* the WRITE's MIDDLE and LAST (1024 and 952 bytes), each once */
	ck_assert_uint_eq(p.sim.end[1].placed, 2);
	ck_assert_uint_eq(p.sim.end[0].placed_bad + p.sim.end[1].placed_bad, 0);
	pair_down(&p);
}
END_TEST

/* Every WRITE MIDDLE/LAST and READ response preceded by a copy of itself
 * with its payload inverted (a wrong ICRC), and one MIDDLE lost: each
 * in-sequence copy is placed - its bytes written where the genuine ones
 * go - then dropped, leaving the QP where it was; the genuine packet
 * rewrites those bytes and completes the operation.  A copy out of
 * sequence (behind the lost MIDDLE) is placed nowhere.  Everything ends
 * byte-exact, and every placeable PSN was placed exactly once from a bad
 * copy and once from the genuine packet. */
struct corrupt_sched {
	unsigned middles; /* WRITE MIDDLEs seen, first transmissions included */
	bool dropped;
};

static enum dr_sim_action corrupt_placeable(void *arg, unsigned dir, uint64_t n,
					    const struct dr_pkt *pkt)
{
	struct corrupt_sched *cs = arg;

	if (pkt->opcode == DR_OP_WRITE_MIDDLE && ++cs->middles == 12 && !cs->dropped) {
		cs->dropped = true;
		return DR_SIM_DROP;
	}
	return dr_icrc_placeable(pkt->opcode) ? DR_SIM_CORRUPT : DR_SIM_PASS;
}

START_TEST(test_write_placed_bad_icrc)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[3][10 * 1024 + 100], dst[3][10 * 1024 + 100 + 64], rsrc[5000],
	    rdst[5000 + 64];
	/* a LAST too short to defer; a LAST with immediate; one lost MIDDLE */
	static const uint32_t len[3] = {10 * 1024 + 100, 4096 + 700, 8192};
	struct corrupt_sched cs = {0};
	uint64_t want_w = 0, want_r = 0;
	struct dr_mr *dmr[3], *rmr;
	struct pair p;

	c.sim.fault = corrupt_placeable;
	c.sim.fault_arg = &cs;
	c.sim.place = true;
	pair_up(&p, &c);
	for (unsigned i = 0; i < 3; i++) {
		fill(src[i], len[i], 70 + i);
		memset(dst[i], 0xa5, sizeof(dst[i]));
		dmr[i] = reg(&p, 1, dst[i], len[i], DR_ACCESS_REMOTE_WRITE);
		want_w += deferred_pkts(len[i], c.pmtu, c.pmtu); /* after the FIRST */
	}
	fill(rsrc, sizeof(rsrc), 80);
	memset(rdst, 0xa5, sizeof(rdst));
	rmr = reg(&p, 1, rsrc, sizeof(rsrc), DR_ACCESS_REMOTE_READ);
	want_r = deferred_pkts(sizeof(rsrc), 0, c.pmtu);
	post_recv(&p, 1, 70, NULL, 0);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(post_send(&p, 0, i, i == 1 ? DR_WR_WRITE_IMM : DR_WR_WRITE, src[i],
					   len[i], 0, (uintptr_t)dst[i], dmr[i]->key,
					   DR_WR_SIGNALED),
				 0);
	ck_assert_int_eq(post_send(&p, 0, 3, DR_WR_READ, rdst, sizeof(rsrc), 0, (uintptr_t)rsrc,
				   rmr->key, DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(&p));
	ck_assert(cs.dropped);
	ck_assert_uint_eq(p.sim.end[0].nwc, 4);
	for (unsigned i = 0; i < 4; i++)
		expect_wc(&p.sim.end[0].wc[i], i, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].nwc, 1);
	expect_wc(&p.sim.end[1].wc[0], 70, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].wc[0].imm, 0xabc00001u);
	for (unsigned i = 0; i < 3; i++) {
		ck_assert(!memcmp(dst[i], src[i], len[i]));
		for (unsigned k = 0; k < 64; k++)
			ck_assert_uint_eq(dst[i][len[i] + k], 0xa5);
	}
	ck_assert(!memcmp(rdst, rsrc, sizeof(rsrc)));
	for (unsigned k = 0; k < 64; k++)
		ck_assert_uint_eq(rdst[sizeof(rsrc) + k], 0xa5);
	ck_assert_uint_gt(p.qp[0]->stats.retries, 0); /* the lost MIDDLE was sent again */
	ck_assert_uint_eq(p.sim.end[1].placed_bad, want_w);
	ck_assert_uint_eq(p.sim.end[1].placed, want_w);
	ck_assert_uint_eq(p.sim.end[0].placed_bad, want_r);
	ck_assert_uint_eq(p.sim.end[0].placed, want_r);
	pair_down(&p);
}
END_TEST

/* dr_qp_place for a WRITE in progress, asked directly: after the FIRST of
 * a 2,500-byte WRITE (1,024 + 1,024 + 452 at PMTU 1024) it names exactly
 * the next packet's bytes, for exactly the packet the responder takes
 * next, and nothing for any other: one PSN ahead or behind, a LAST that
 * does not end the WRITE, a MIDDLE that would run past it, a SEND, too
 * short to defer.  Then the WRITE completes byte-exact. */
struct held_write {
	uint8_t frame[2][2048]; /* the MIDDLE and the LAST as A sent them */
	size_t len[2];
	bool release;
};

static enum dr_sim_action hold_write(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct held_write *hw = arg;
	unsigned k = pkt->opcode == DR_OP_WRITE_LAST;

	if (hw->release || dir != 0 ||
	    (pkt->opcode != DR_OP_WRITE_MIDDLE && pkt->opcode != DR_OP_WRITE_LAST))
		return DR_SIM_PASS;
	if (!hw->len[k]) {
		hw->len[k] = (size_t)(pkt->payload + pkt->payload_len + pkt->padcnt + DR_ICRC_LEN -
				      (const uint8_t *)pkt->eth);
		ck_assert_uint_le(hw->len[k], sizeof(hw->frame[k]));
		memcpy(hw->frame[k], pkt->eth, hw->len[k]);
	}
	return DR_SIM_DROP;
}

static bool write_first_taken(void *arg)
{
	const struct pair *p = arg;

	return p->qp[1]->resp.in == DR_OPF_WRITE;
}

/* Parse frame (modified by the desc changes in edit, if any) and ask B. */
static unsigned place_variant(struct pair *p, const uint8_t *frame, size_t len,
			      void (*edit)(struct dr_pkt_desc *d), struct iovec *dst)
{
	static uint8_t buf[2048];
	struct dr_pkt pkt;
	int n = (int)len;

	ck_assert_int_eq(dr_pkt_parse(frame, len, 0, &pkt), DR_PKT_OK);
	if (edit) {
		struct dr_pkt_desc d;

		dr_pkt_to_desc(&pkt, &d);
		edit(&d);
		n = dr_pkt_build(&d, buf, sizeof(buf));
		ck_assert_int_gt(n, 0);
		frame = buf;
	}
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, DR_PARSE_DEFER_PLACE, &pkt), DR_PKT_OK);
	return dr_qp_place(p->qp[1], &pkt, dst, 4);
}

static void psn_ahead(struct dr_pkt_desc *d)
{
	d->psn = dr_psn_add(d->psn, 1);
}
static void psn_behind(struct dr_pkt_desc *d)
{
	d->psn = dr_psn_add(d->psn, -1);
}
static void as_last(struct dr_pkt_desc *d)
{
	d->opcode = DR_OP_WRITE_LAST;
}
static void as_send_middle(struct dr_pkt_desc *d)
{
	d->opcode = DR_OP_SEND_MIDDLE;
}
static void short_payload(struct dr_pkt_desc *d)
{
	d->payload_len = DR_ICRC_DEFER_MIN - 1;
}
static void as_middle(struct dr_pkt_desc *d)
{
	static uint8_t pay[1024];

	d->opcode = DR_OP_WRITE_MIDDLE;
	d->payload = pay;
	d->payload_len = sizeof(pay);
}

START_TEST(test_write_place_bounds)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[2500], dst[2500 + 64];
	struct held_write hw = {0};
	struct iovec iov[4];
	struct dr_pkt pkt;
	struct dr_mr *dmr;
	struct pair p;

	c.sim.fault = hold_write;
	c.sim.fault_arg = &hw;
	c.sim.place = true;
	pair_up(&p, &c);
	fill(src, sizeof(src), 91);
	memset(dst, 0xa5, sizeof(dst));
	dmr = reg(&p, 1, dst, sizeof(src), DR_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   dmr->key, DR_WR_SIGNALED),
			 0);
	dr_sim_run(&p.sim, LIMIT_NS, write_first_taken, &p);
	ck_assert(write_first_taken(&p));
	ck_assert_uint_gt(hw.len[0], 0);
	ck_assert_uint_gt(hw.len[1], 0);

	/* the MIDDLE: the next 1,024 bytes */
	ck_assert_uint_eq(place_variant(&p, hw.frame[0], hw.len[0], NULL, iov), 1);
	ck_assert_ptr_eq(iov[0].iov_base, dst + 1024);
	ck_assert_uint_eq(iov[0].iov_len, 1024);
	ck_assert_uint_eq(place_variant(&p, hw.frame[0], hw.len[0], psn_ahead, iov), 0);
	ck_assert_uint_eq(place_variant(&p, hw.frame[0], hw.len[0], psn_behind, iov), 0);
	/* a LAST of 1,024 bytes would leave 452 unwritten; the LAST's 452 at
	 * this PSN would too */
	ck_assert_uint_eq(place_variant(&p, hw.frame[0], hw.len[0], as_last, iov), 0);
	ck_assert_uint_eq(place_variant(&p, hw.frame[1], hw.len[1], psn_behind, iov), 0);
	ck_assert_uint_eq(place_variant(&p, hw.frame[0], hw.len[0], as_send_middle, iov), 0);
	/* too short to defer: the parser checked it whole; never asked */
	ck_assert_int_eq(dr_pkt_parse(hw.frame[0], hw.len[0], DR_PARSE_DEFER_PLACE, &pkt),
			 DR_PKT_OK);
	ck_assert(pkt.icrc_deferred);
	{
		static uint8_t buf[2048];
		struct dr_pkt_desc d;
		int n;

		dr_pkt_to_desc(&pkt, &d);
		short_payload(&d);
		n = dr_pkt_build(&d, buf, sizeof(buf));
		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(dr_pkt_parse(buf, (size_t)n, DR_PARSE_DEFER_PLACE, &pkt),
				 DR_PKT_OK);
		ck_assert(!pkt.icrc_deferred);
	}
	/* the MIDDLE taken (checked whole, copied by the responder) */
	ck_assert_int_eq(dr_pkt_parse(hw.frame[0], hw.len[0], 0, &pkt), DR_PKT_OK);
	dr_qp_input(p.qp[1], &pkt);
	ck_assert(!memcmp(dst, src, 2048));
	/* 452 bytes left: the LAST names them; a MIDDLE of 1,024 at this PSN
	 * would run 572 bytes past the WRITE, and is not placed */
	ck_assert_uint_eq(place_variant(&p, hw.frame[1], hw.len[1], NULL, iov), 1);
	ck_assert_ptr_eq(iov[0].iov_base, dst + 2048);
	ck_assert_uint_eq(iov[0].iov_len, 452);
	ck_assert_uint_eq(place_variant(&p, hw.frame[1], hw.len[1], as_middle, iov), 0);
	/* the rest as the link gives it: the LAST placed, the WRITE done */
	hw.release = true;
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert(!memcmp(dst, src, sizeof(src)));
	for (unsigned k = 0; k < 64; k++)
		ck_assert_uint_eq(dst[sizeof(src) + k], 0xa5);
	ck_assert_uint_eq(p.sim.end[1].placed, 1);
	pair_down(&p);
}
END_TEST

/* ---- duplicate SEND re-ACKed with the last in-order PSN and the MSN ------ */

struct ack_log {
	bool delayed;
	unsigned n;
	uint32_t psn[16], msn[16];
	uint8_t syn[16];
};

/* notes B's ACKs: PSN, MSN, syndrome (the first 16) */
static void ack_log_add(struct ack_log *l, unsigned dir, const struct dr_pkt *pkt)
{
	if (dir == 1 && pkt->opcode == DR_OP_ACK && l->n < 16) {
		l->psn[l->n] = pkt->psn;
		l->msn[l->n] = dr_aeth_msn(dr_pkt_aeth(pkt));
		l->syn[l->n++] = dr_aeth_syndrome(dr_pkt_aeth(pkt));
	}
}

/* three SENDs of 10 bytes A -> B (wr_id 0..2) into receives 900..902, run */
static void three_sends(struct pair *p, uint8_t *src, uint8_t (*dst)[64])
{
	unsigned i;

	for (i = 0; i < 3; i++)
		post_recv(p, 1, 900 + i, dst[i], 64);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(post_send(p, 0, i, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED),
				 0);
	ck_assert(pair_run(p));
}

static enum dr_sim_action log_acks(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct ack_log *l = arg;

	ack_log_add(l, dir, pkt);
	if (dir == 0 && n == 0 && !l->delayed) {
		l->delayed = true;
		return DR_SIM_DUP;
	}
	return DR_SIM_PASS;
}

START_TEST(test_dup_send_reack)
{
	struct pair_cfg c = pair_defaults();
	struct ack_log l = {0};
	static uint8_t src[64], dst[3][64];
	struct pair p;
	unsigned i;

	c.sim.fault = log_acks;
	c.sim.fault_arg = &l;
	/* no serialisation delay: all three go at t=0 and the copy of the
	 * first, one nanosecond later, arrives behind the other two */
	c.sim.rate_bps = 0;
	pair_up(&p, &c);
	three_sends(&p, src, dst);
	/* three SENDs, one ACK each (AckReq on every last packet), and the
	 * duplicate of the first answered with the last in-order PSN */
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 1);
	ck_assert_uint_eq(p.sim.end[1].nwc, 3);
	ck_assert_uint_eq(l.n, 4);
	ck_assert_uint_eq(l.psn[0], c.psn_a);
	ck_assert_uint_eq(l.msn[0], 1);
	ck_assert_uint_eq(l.syn[0], DR_AETH_ACK_UNLIMITED);
	ck_assert_uint_eq(l.psn[1], dr_psn_add(c.psn_a, 1));
	ck_assert_uint_eq(l.msn[1], 2);
	ck_assert_uint_eq(l.psn[2], dr_psn_add(c.psn_a, 2));
	ck_assert_uint_eq(l.msn[2], 3);
	/* the late copy of SEND 0: the last in-order PSN, not its own */
	ck_assert_uint_eq(l.psn[3], dr_psn_add(c.psn_a, 2));
	ck_assert_uint_eq(l.msn[3], 3);
	ck_assert_uint_eq(p.sim.end[0].nwc, 3);
	for (i = 0; i < 3; i++)
		expect_wc(&p.sim.end[0].wc[i], i, DR_WC_SUCCESS);
	ck_assert_uint_eq(rops[1].n, 0); /* SENDs are not remote operations */
	pair_down(&p);
}
END_TEST

/* a duplicate that arrives after later messages: re-ACK the newest PSN */
static enum dr_sim_action delay_first(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct ack_log *l = arg;

	ack_log_add(l, dir, pkt);
	return DR_SIM_PASS;
}

START_TEST(test_dup_send_late)
{
	struct pair_cfg c = pair_defaults();
	struct ack_log l = {0};
	static uint8_t src[64], dst[3][64];
	struct dr_pkt_desc d;
	struct pair p;
	uint8_t frame[256];
	struct dr_pkt pkt;
	int len;

	c.sim.fault = delay_first;
	c.sim.fault_arg = &l;
	pair_up(&p, &c);
	three_sends(&p, src, dst);
	ck_assert_uint_eq(l.n, 3);
	/* now replay SEND 0 by hand, built with the codec as A built it */
	dr_qp_desc(p.qp[0], &d, DR_OP_SEND_ONLY, c.psn_a);
	d.ackreq = true;
	d.payload = src;
	d.payload_len = 10;
	len = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)len, 0, &pkt), DR_PKT_OK);
	dr_qp_input(p.qp[1], &pkt);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(l.n, 4);
	ck_assert_uint_eq(l.psn[3], dr_psn_add(c.psn_a, 2)); /* last in-order PSN */
	ck_assert_uint_eq(l.msn[3], 3);
	ck_assert_uint_eq(l.syn[3], DR_AETH_ACK_UNLIMITED);
	ck_assert_uint_eq(p.sim.end[1].nwc, 3); /* not delivered twice */
	ck_assert_uint_eq(p.sim.end[0].nwc, 3);
	pair_down(&p);
}
END_TEST

/* ---- WRITE_WITH_IMM without a receive WQE (DR_QP_WRITE_IMM_NO_WQE) ---------------------- */

#define WIMM_LONG 3000 /* 'L': three packets at PMTU 1024 */

static uint32_t wimm_len(char op)
{
	switch (op) {
	case 'S':
		return 10;
	case 'W':
		return 100;
	case 'L':
		return WIMM_LONG;
	default: /* 'Z' */
		return 0;
	}
}

static bool b_sent_rnr(void *arg)
{
	return ((struct pair *)arg)->qp[1]->stats.tx_rnr_naks > 0;
}

/* A's WRs, one letter each: S a SEND, W a one-packet WRITE_IMM, L a
 * three-packet one, Z a zero-length one.  B's receive completions, one per
 * WR of A's in the same order: R the SEND in the next posted receive, J a
 * WRITE_IMM on the next posted receive (IBA 9.7.4), I a WRITE_IMM on no
 * WQE (wc.no_wqe). */
static const struct {
	bool no_wqe;	 /* DR_QP_WRITE_IMM_NO_WQE on B */
	bool no_rop;	 /* B without a remote_op callback */
	unsigned nrecv;	 /* receives B posts before A posts */
	const char *ops; /* A's WRs */
	const char *want;
	bool rnr; /* B NAKs RNR until a receive is posted for the J */
} wimm_tab[] = {
    /* the option: no receive needed, none taken, never an RNR */
    {true, false, 0, "W", "I", false},
    {true, false, 0, "L", "I", false},
    {true, false, 0, "Z", "I", false},
    {true, false, 0, "WLZW", "IIII", false},
    {true, true, 0, "LW", "II", false},
    {true, false, 3, "WL", "II", false},
    {true, false, 2, "SWSL", "RIRI", false},
    {true, false, 2, "WSLS", "IRIR", false},
    {true, false, 1, "WWSLW", "IIRII", false},
    {true, false, 1, "SZ", "RI", false},
    /* without it, IB: each takes the next receive, RNR when there is none */
    {false, false, 2, "WS", "JR", false},
    {false, false, 2, "SL", "RJ", false},
    {false, false, 3, "LSW", "JRJ", false},
    {false, false, 0, "W", "J", true},
    {false, false, 0, "L", "J", true},
};

START_TEST(test_write_imm_no_wqe)
{
	const char *ops = wimm_tab[_i].ops, *want = wimm_tab[_i].want;
	struct pair_cfg c = pair_defaults();
	static uint8_t src[8][WIMM_LONG], dst[8][WIMM_LONG + 1], rbuf[8][64];
	unsigned n = (unsigned)strlen(ops), nrecv = wimm_tab[_i].nrecv, next_recv = 0, nw = 0, i;
	struct dr_mr *dmr;
	struct pair p;

	ck_assert_uint_eq(strlen(want), n);
	c.qp_flags[1] = wimm_tab[_i].no_wqe ? DR_QP_WRITE_IMM_NO_WQE : 0;
	c.no_rop = wimm_tab[_i].no_rop;
	pair_up(&p, &c);
	memset(dst, 0xee, sizeof(dst));
	memset(rbuf, 0, sizeof(rbuf));
	dmr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE);
	for (i = 0; i < nrecv; i++)
		post_recv(&p, 1, 900 + i, rbuf[i], sizeof(rbuf[i]));
	for (i = 0; i < n; i++) {
		fill(src[i], sizeof(src[i]), i + 1);
		ck_assert_int_eq(post_send(&p, 0, i, ops[i] == 'S' ? DR_WR_SEND : DR_WR_WRITE_IMM,
					   src[i], wimm_len(ops[i]), 0, (uintptr_t)dst[i], dmr->key,
					   DR_WR_SIGNALED),
				 0);
	}
	if (wimm_tab[_i].rnr) {
		ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_sent_rnr, &p));
		ck_assert_uint_eq(p.sim.end[1].nwc, 0);
		post_recv(&p, 1, 900 + nrecv, rbuf[nrecv], sizeof(rbuf[nrecv]));
		nrecv++;
	}
	ck_assert(pair_run(&p));

	ck_assert_uint_eq(p.sim.end[0].nwc, n);
	for (i = 0; i < n; i++)
		expect_wc(&p.sim.end[0].wc[i], i, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].nwc, n);
	for (i = 0; i < n; i++) {
		const struct dr_wc *wc = &p.sim.end[1].wc[i];
		uint32_t len = wimm_len(ops[i]);

		ck_assert_int_eq(wc->status, DR_WC_SUCCESS);
		ck_assert_int_eq(wc->no_wqe, want[i] == 'I');
		if (want[i] == 'R') {
			ck_assert_int_eq(wc->opcode, DR_WC_RECV);
			ck_assert_uint_eq(wc->wr_id, 900 + next_recv);
			ck_assert_uint_eq(wc->byte_len, len);
			ck_assert(memcmp(rbuf[next_recv], src[i], len) == 0);
			next_recv++;
			continue;
		}
		ck_assert_int_eq(wc->opcode, DR_WC_RECV_WRITE_IMM);
		ck_assert_uint_eq(wc->wr_id, want[i] == 'J' ? 900 + next_recv++ : 0);
		ck_assert(wc->has_imm);
		ck_assert_uint_eq(wc->imm, 0xabc00000u + i);
		ck_assert_uint_eq(wc->byte_len, len); /* the DMA length */
		ck_assert(memcmp(dst[i], src[i], len) == 0);
		ck_assert_uint_eq(dst[i][len], 0xee);
		if (!c.no_rop)
			expect_rop(1, nw, DR_REMOTE_WRITE, DR_WC_SUCCESS, len);
		nw++;
	}
	/* a WRITE_IMM's receive takes no data; the ones left are untouched */
	for (i = 0; i < nrecv; i++)
		if (i >= next_recv || wimm_len('S') == 0)
			ck_assert_uint_eq(rbuf[i][0], 0);
	ck_assert_uint_eq(dr_qp_rq_free(p.qp[1]), 512 - (nrecv - next_recv));
	ck_assert_uint_eq(p.qp[1]->stats.tx_rnr_naks > 0, wimm_tab[_i].rnr);
	ck_assert_uint_eq(rops[1].n, c.no_rop ? 0 : nw);
	ck_assert_uint_eq(rops[0].n, 0);
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_RTS);
	pair_down(&p);
}
END_TEST

/* Loss and duplication around WRITE_IMM, the option on and off: each write
 * completes at B once, and is reported once. */
enum wimm_fault { WF_DUP, WF_DROP_LAST, WF_DROP_ACKS, WF_DELAY_FIRST, WF_NUM };

struct wimm_sched {
	enum wimm_fault mode;
	unsigned hits;
};

static enum dr_sim_action wimm_fault(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct wimm_sched *w = arg;
	bool imm = pkt->opcode == DR_OP_WRITE_LAST_IMM || pkt->opcode == DR_OP_WRITE_ONLY_IMM;

	switch (w->mode) {
	case WF_DUP: /* every packet that completes a WRITE_IMM, resends too */
		if (dir == 0 && imm) {
			w->hits++;
			return DR_SIM_DUP;
		}
		break;
	case WF_DROP_LAST: /* the first WRITE_LAST_IMM: a gap, NAK_SEQ, go-back-N */
		if (dir == 0 && pkt->opcode == DR_OP_WRITE_LAST_IMM && !w->hits) {
			w->hits++;
			return DR_SIM_DROP;
		}
		break;
	case WF_DROP_ACKS: /* all four first ACKs: timeout, resend, duplicates */
		if (dir == 1 && pkt->opcode == DR_OP_ACK && w->hits < 4) {
			w->hits++;
			return DR_SIM_DROP;
		}
		break;
	case WF_DELAY_FIRST: /* the WRITE_FIRST overtaken by the rest */
		if (dir == 0 && n == 0) {
			w->hits++;
			return DR_SIM_DELAY;
		}
		break;
	default:
		break;
	}
	return DR_SIM_PASS;
}

/* _i = fault * 2 + option */
START_TEST(test_write_imm_faults)
{
	static const char ops[] = "LSWW";
	struct wimm_sched w = {.mode = (enum wimm_fault)(_i / 2)};
	bool no_wqe = _i % 2;
	struct pair_cfg c = pair_defaults();
	static uint8_t src[4][WIMM_LONG], dst[4][WIMM_LONG], rbuf[6][64];
	unsigned nrecv = no_wqe ? 3 : 6, next_recv = 0, i;
	struct dr_mr *dmr;
	struct pair p;

	c.qp_flags[1] = no_wqe ? DR_QP_WRITE_IMM_NO_WQE : 0;
	c.sim.fault = wimm_fault;
	c.sim.fault_arg = &w;
	pair_up(&p, &c);
	dmr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE);
	/* one receive for each that takes one, and two to spare */
	for (i = 0; i < nrecv; i++)
		post_recv(&p, 1, 900 + i, rbuf[i], sizeof(rbuf[i]));
	for (i = 0; i < 4; i++) {
		fill(src[i], sizeof(src[i]), i + 40);
		ck_assert_int_eq(post_send(&p, 0, i, ops[i] == 'S' ? DR_WR_SEND : DR_WR_WRITE_IMM,
					   src[i], wimm_len(ops[i]), 0, (uintptr_t)dst[i], dmr->key,
					   DR_WR_SIGNALED),
				 0);
	}
	ck_assert(pair_run(&p));

	ck_assert_uint_gt(w.hits, 0);
	ck_assert_uint_eq(p.sim.end[0].nwc, 4);
	for (i = 0; i < 4; i++)
		expect_wc(&p.sim.end[0].wc[i], i, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].nwc, 4);
	for (i = 0; i < 4; i++) {
		const struct dr_wc *wc = &p.sim.end[1].wc[i];
		uint32_t len = wimm_len(ops[i]);

		ck_assert_int_eq(wc->status, DR_WC_SUCCESS);
		if (ops[i] == 'S') {
			ck_assert_int_eq(wc->opcode, DR_WC_RECV);
			ck_assert_uint_eq(wc->wr_id, 900 + next_recv++);
			continue;
		}
		ck_assert_int_eq(wc->opcode, DR_WC_RECV_WRITE_IMM);
		ck_assert_int_eq(wc->no_wqe, no_wqe);
		ck_assert_uint_eq(wc->wr_id, no_wqe ? 0 : 900 + next_recv++);
		ck_assert_uint_eq(wc->imm, 0xabc00000u + i);
		ck_assert_uint_eq(wc->byte_len, len);
		ck_assert(memcmp(dst[i], src[i], len) == 0);
	}
	ck_assert_uint_eq(dr_qp_rq_free(p.qp[1]), 512 - 2);
	ck_assert_uint_eq(p.qp[1]->stats.tx_rnr_naks, 0);
	if (w.mode == WF_DUP || w.mode == WF_DROP_ACKS)
		ck_assert_uint_gt(p.qp[1]->stats.rx_dup_reqs, 0);
	else
		ck_assert_uint_gt(p.qp[1]->stats.tx_seq_naks, 0);
	ck_assert_uint_eq(rops[1].n, 3);
	expect_rop(1, 0, DR_REMOTE_WRITE, DR_WC_SUCCESS, WIMM_LONG);
	expect_rop(1, 1, DR_REMOTE_WRITE, DR_WC_SUCCESS, 100);
	expect_rop(1, 2, DR_REMOTE_WRITE, DR_WC_SUCCESS, 100);
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_RTS);
	pair_down(&p);
}
END_TEST

/* A WRITE_IMM refused (bad rkey), the option on and off: B's receives are
 * flushed, not completed by it; one event with the NAK's status. */
static const struct {
	bool no_wqe;
	unsigned nrecv;
} wimm_ref_tab[] = {{false, 1}, {true, 1}, {true, 0}};

START_TEST(test_write_imm_refused)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[64], dst[64];
	struct dr_mr *dmr;
	struct pair p;

	c.qp_flags[1] = wimm_ref_tab[_i].no_wqe ? DR_QP_WRITE_IMM_NO_WQE : 0;
	pair_up(&p, &c);
	dmr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE);
	if (wimm_ref_tab[_i].nrecv)
		post_recv(&p, 1, 900, dst, sizeof(dst));
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE_IMM, src, 8, 0, (uintptr_t)dst,
				   dmr->key ^ 0x80000000u, DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(p.qp[1]->stats.tx_rnr_naks, 0);
	ck_assert_uint_eq(p.sim.end[1].nwc, wimm_ref_tab[_i].nrecv);
	if (wimm_ref_tab[_i].nrecv) {
		expect_wc(&p.sim.end[1].wc[0], 900, DR_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(p.sim.end[1].wc[0].opcode, DR_WC_RECV);
	}
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_ERROR);
	ck_assert_uint_eq(rops[1].n, 1);
	expect_rop(1, 0, DR_REMOTE_WRITE, DR_WC_REM_ACCESS_ERR, 8);
	ck_assert_uint_eq(rops[1].op[0].syndrome, DR_AETH_NAK_REM_ACCESS);
	pair_down(&p);
}
END_TEST

/* A READ executed, one response lost, and its region deregistered before
 * the retry: the replay is refused (NAK remote access, B.7), yet the
 * request was reported once -- as executed. */
static bool rsp_dropped(void *arg)
{
	return ((struct gbn_sched *)arg)->dropped;
}

START_TEST(test_read_replay_refused)
{
	struct pair_cfg c = pair_defaults();
	struct gbn_sched g = {0};
	static uint8_t src[8 * 1024], dst[8 * 1024];
	struct dr_mr *smr;
	struct pair p;

	smr = read_lose_rsp(&p, &c, &g, 3, src, dst, sizeof(src));
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, rsp_dropped, &g));
	ck_assert_uint_eq(rops[1].n, 1);
	ck_assert_int_eq(dr_mr_dereg(&p.mrt[1], smr->key), 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 1);
	ck_assert_uint_eq(p.qp[1]->stats.tx_err_naks, 1);
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_ERROR);
	ck_assert_uint_eq(rops[1].n, 1);
	expect_rop(1, 0, DR_REMOTE_READ, DR_WC_SUCCESS, sizeof(src));
	pair_down(&p);
}
END_TEST

/* ---- the window -------------------------------------------------------------------------- */

START_TEST(test_window)
{
	struct pair_cfg c = pair_defaults();
	uint32_t len = 1u << 20;
	uint8_t *src = malloc(len), *dst = malloc(len);
	struct pair p;

	c.sim.latency_ns = 1000000; /* 1 ms: the window, not the link, limits */
	c.timeout = 12;
	pair_up(&p, &c);
	post_write_to_b(&p, src, dst, len, 0);
	/* at t=0 exactly the window went out */
	ck_assert_uint_eq(p.sim.end[0].tx_frames, DR_QP_MAX_UNACKED_PSNS);
	ck_assert_int_eq(p.qp[0]->req.state, DR_REQ_WAIT_WINDOW);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].tx_frames, 1024);
	pair_down(&p);
	free(src);
	free(dst);
}
END_TEST

/* ---- the data path: coalesced ACKs, adaptive RTO, loss window ------------------------------ */

/* Every frame on the wire, per direction, with the virtual time it was
 * sent at; optionally one dir-0 PSN dropped once, or everything dropped. */
#define REC_MAX 1024

struct wire_frame {
	uint64_t t;
	uint8_t op;
	uint32_t psn;
	bool ackreq;
	bool has_aeth;
	uint32_t msn;
	uint8_t syn;
};

struct wire_rec {
	const struct dr_sim *sim;
	struct wire_frame f[2][REC_MAX];
	unsigned n[2];
	unsigned overflow;
	bool drop_on; /* drop dir-0 drop_psn once */
	uint32_t drop_psn;
	bool dead; /* drop everything */
};

static enum dr_sim_action rec_fault(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct wire_rec *r = arg;
	const struct dr_aeth *aeth = dr_pkt_aeth(pkt);

	if (r->n[dir] < REC_MAX) {
		struct wire_frame *f = &r->f[dir][r->n[dir]++];

		f->t = r->sim ? r->sim->now_ns : 0;
		f->op = pkt->opcode;
		f->psn = pkt->psn;
		f->ackreq = pkt->ackreq;
		f->has_aeth = aeth != NULL;
		f->msn = aeth ? dr_aeth_msn(aeth) : 0;
		f->syn = aeth ? dr_aeth_syndrome(aeth) : 0;
	} else {
		r->overflow++;
	}
	if (r->dead)
		return DR_SIM_DROP;
	if (dir == 0 && r->drop_on && pkt->psn == r->drop_psn) {
		r->drop_on = false;
		return DR_SIM_DROP;
	}
	return DR_SIM_PASS;
}

/* brings the pair up over a link of latency lat that r records (and
 * faults as r says) */
static void rec_pair_up(struct pair *p, struct pair_cfg *c, struct wire_rec *r, uint64_t lat)
{
	c->sim = (struct dr_sim_cfg){.latency_ns = lat, .fault = rec_fault, .fault_arg = r};
	pair_up(p, c);
	r->sim = &p->sim;
}

/* the same, A with DR_QP_ADAPTIVE_RTO and a timeout of 2^14 * 4.096 us */
static void adaptive_pair_up(struct pair *p, struct pair_cfg *c, struct wire_rec *r, uint64_t lat)
{
	c->qp_flags[0] = DR_QP_ADAPTIVE_RTO;
	c->timeout = 14;
	rec_pair_up(p, c, r, lat);
}

/* Frame i of direction dir: opcode, PSN, and (msn >= 0) an AETH with
 * this MSN and syndrome, (msn < 0) no AETH. */
static void expect_frame(const struct wire_rec *r, unsigned dir, unsigned i, uint8_t op,
			 uint32_t psn, int64_t msn, uint8_t syn)
{
	const struct wire_frame *f;

	ck_assert_msg(i < r->n[dir], "dir %u: %u frames, wanted #%u", dir, r->n[dir], i);
	f = &r->f[dir][i];
	ck_assert_msg(f->op == op && f->psn == psn && f->has_aeth == (msn >= 0) &&
			  (msn < 0 || (f->msn == (uint32_t)msn && f->syn == syn)),
		      "dir %u frame %u: %s psn 0x%06x aeth %d msn %u syn 0x%02x, expected %s psn "
		      "0x%06x msn %lld syn 0x%02x",
		      dir, i, dr_opcode_name(f->op), f->psn, f->has_aeth, f->msn, f->syn,
		      dr_opcode_name(op), psn, (long long)msn, syn);
}

struct until {
	struct pair *p;
	uint32_t psn; /* B's expected PSN to reach */
};

static bool b_reached(void *arg)
{
	struct until *u = arg;

	return dr_psn_diff(u->p->qp[1]->resp.psn, u->psn) >= 0;
}

static bool b_ack_due(void *arg)
{
	return dr_qp_flush_due(((struct pair *)arg)->qp[1]);
}

/* A replay of A's one-packet SEND psn, built with the codec as A built it,
 * handed to B directly (not through the link); tos: the IP TOS (its ECN
 * bits). */
static void inject_send_tos(struct pair *p, uint32_t psn, const void *payload, uint32_t len,
			    uint8_t tos)
{
	struct dr_pkt_desc d;
	uint8_t frame[512];
	struct dr_pkt pkt;
	int n;

	dr_qp_desc(p->qp[0], &d, DR_OP_SEND_ONLY, psn);
	d.ackreq = true;
	d.tos = tos;
	d.payload = payload;
	d.payload_len = len;
	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &pkt), DR_PKT_OK);
	dr_qp_input(p->qp[1], &pkt);
}

static void inject_send(struct pair *p, uint32_t psn, const void *payload, uint32_t len)
{
	inject_send_tos(p, psn, payload, len, 0);
}

#define DEFER_N 20

/* DR_QP_DEFER_ACK on B: DEFER_N one-packet SENDs, each asking for an ACK,
 * reach B and not one ACK leaves until dr_qp_flush(), which sends exactly
 * one: the last PSN (across the 2^24 wrap) with MSN DEFER_N.  It completes
 * all of A's SENDs at once. */
START_TEST(test_defer_ack_coalesce)
{
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	static uint8_t src[DEFER_N][16], dst[DEFER_N][16];
	uint64_t lat = 2000, qpt = dr_qp_timeout_ns(c.timeout);
	uint32_t last = dr_psn_add(c.psn_a, DEFER_N - 1);
	struct pair p;
	struct until u = {&p, dr_psn_add(c.psn_a, DEFER_N)};
	unsigned i;

	ck_assert_ptr_nonnull(r);
	c.qp_flags[1] = DR_QP_DEFER_ACK;
	rec_pair_up(&p, &c, r, lat);
	ck_assert_uint_lt(last, c.psn_a); /* the PSNs wrap */
	for (i = 0; i < DEFER_N; i++) {
		post_recv(&p, 1, 900 + i, dst[i], sizeof(dst[i]));
		fill(src[i], sizeof(src[i]), i + 3);
		ck_assert_int_eq(post_send(&p, 0, i, DR_WR_SEND, src[i], 10, 0, 0, 0, DR_WR_SIGNALED),
				 0);
	}
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_reached, &u));
	ck_assert_uint_eq(p.sim.now_ns, lat);
	ck_assert_uint_eq(r->n[0], DEFER_N);
	for (i = 0; i < DEFER_N; i++) {
		expect_frame(r, 0, i, DR_OP_SEND_ONLY, dr_psn_add(c.psn_a, (int32_t)i), -1, 0);
		ck_assert(r->f[0][i].ackreq);
	}
	/* all delivered, nothing acknowledged on the wire */
	ck_assert_uint_eq(p.sim.end[1].nwc, DEFER_N);
	for (i = 0; i < DEFER_N; i++) {
		expect_wc(&p.sim.end[1].wc[i], 900 + i, DR_WC_SUCCESS);
		ck_assert_uint_eq(p.sim.end[1].wc[i].byte_len, 10);
		ck_assert(memcmp(dst[i], src[i], 10) == 0);
	}
	ck_assert_uint_eq(r->n[1], 0);
	ck_assert_uint_eq(p.sim.end[1].tx_frames, 0);
	ck_assert_uint_eq(p.qp[1]->stats.tx_frames, 0);
	ck_assert_uint_eq(p.qp[1]->stats.tx_acks, 0);
	ck_assert(dr_qp_flush_due(p.qp[1]));
	ck_assert(!dr_qp_flush_due(p.qp[0]));
	ck_assert_uint_eq(p.qp[1]->resp.ack_psn, last);
	ck_assert_uint_eq(p.qp[1]->resp.ack_msn, DEFER_N);
	ck_assert_uint_eq(p.qp[1]->resp.msn, DEFER_N);
	ck_assert_uint_eq(p.qp[1]->stats.acks_coalesced, DEFER_N - 1);
	ck_assert_uint_eq(p.sim.end[0].nwc, 0);
	ck_assert_uint_eq(p.qp[0]->comp.psn, c.psn_a);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), qpt); /* armed at t=0 */

	/* the flush: one cumulative ACK, at once */
	dr_qp_flush(p.qp[1]);
	ck_assert_uint_eq(r->n[1], 1);
	expect_frame(r, 1, 0, DR_OP_ACK, last, DEFER_N, DR_AETH_ACK_UNLIMITED);
	ck_assert_uint_eq(r->f[1][0].t, lat);
	ck_assert(!dr_qp_flush_due(p.qp[1]));
	ck_assert_uint_eq(p.qp[1]->stats.tx_acks, 1);
	/* nothing held any more: flushing again sends nothing; nor does A,
	 * which holds nothing */
	dr_qp_flush(p.qp[1]);
	dr_qp_flush(p.qp[0]);
	ck_assert_uint_eq(r->n[1], 1);
	ck_assert_uint_eq(r->n[0], DEFER_N);

	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.now_ns, 2 * lat);
	ck_assert_uint_eq(p.sim.end[0].nwc, DEFER_N);
	for (i = 0; i < DEFER_N; i++)
		expect_wc(&p.sim.end[0].wc[i], i, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.qp[0]->comp.psn, dr_psn_add(c.psn_a, DEFER_N));
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), UINT64_MAX);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	ck_assert_uint_eq(r->n[0], DEFER_N);
	ck_assert_uint_eq(r->n[1], 1);
	ck_assert_uint_eq(p.qp[1]->stats.acks_coalesced, DEFER_N - 1);
	ck_assert_uint_eq(r->overflow, 0);
	pair_down(&p);
	free(r);
}
END_TEST

/* The held ACK goes out first, before whatever else B sends: a READ
 * response, an ATOMIC ACK, an error NAK, a sequence NAK, an RNR NAK, a
 * duplicate's re-ACK. */
/* B's held ACK flushed by hand: B has sent three frames, the third
 * this ACK */
static void flush_third_ack(struct pair *p, const struct wire_rec *r, uint32_t psn, int64_t msn)
{
	dr_qp_flush(p->qp[1]);
	ck_assert(pair_run(p));
	ck_assert_uint_eq(r->n[1], 3);
	expect_frame(r, 1, 2, DR_OP_ACK, psn, msn, DR_AETH_ACK_UNLIMITED);
}

enum defer_case { DO_READ, DO_ATOMIC, DO_ERR_NAK, DO_SEQ_NAK, DO_RNR_NAK, DO_DUP, DO_NUM };

START_TEST(test_defer_ack_order)
{
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	static uint8_t src[4096], rd[4096], buf[4096], rbuf[4][4096];
	static uint64_t target[1], res[1];
	uint64_t lat = 2000;
	uint32_t psn0 = c.psn_a, psn1 = dr_psn_add(psn0, 1), psn2 = dr_psn_add(psn0, 2),
		 psn3 = dr_psn_add(psn0, 3);
	struct dr_mr *bmr, *tmr;
	struct pair p;
	struct until u = {&p, 0};
	unsigned i, nrecv = _i == DO_RNR_NAK ? 1 : 4;

	ck_assert_ptr_nonnull(r);
	c.qp_flags[1] = DR_QP_DEFER_ACK;
	rec_pair_up(&p, &c, r, lat);
	fill(src, sizeof(src), 61);
	fill(buf, sizeof(buf), 62);
	memset(rd, 0, sizeof(rd));
	memset(rbuf, 0, sizeof(rbuf));
	target[0] = 40;
	res[0] = 0;
	bmr = reg(&p, 1, buf, sizeof(buf), DR_ACCESS_REMOTE_READ | DR_ACCESS_REMOTE_WRITE);
	tmr = reg(&p, 1, target, sizeof(target), DR_ACCESS_REMOTE_ATOMIC);
	for (i = 0; i < nrecv; i++)
		post_recv(&p, 1, 900 + i, rbuf[i], sizeof(rbuf[i]));
	/* every case: SEND 0 first, whose ACK B holds */
	ck_assert_int_eq(post_send(&p, 0, 0, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);

	switch (_i) {
	case DO_READ:
		ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_READ, rd, 3000, 0, (uintptr_t)buf,
					   bmr->key, DR_WR_SIGNALED),
				 0);
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(r->n[1], 4);
		expect_frame(r, 1, 0, DR_OP_ACK, psn0, 1, DR_AETH_ACK_UNLIMITED);
		expect_frame(r, 1, 1, DR_OP_READ_RSP_FIRST, psn1, 2, DR_AETH_ACK_UNLIMITED);
		expect_frame(r, 1, 2, DR_OP_READ_RSP_MIDDLE, psn2, -1, 0);
		expect_frame(r, 1, 3, DR_OP_READ_RSP_LAST, psn3, 2, DR_AETH_ACK_UNLIMITED);
		ck_assert_uint_eq(p.qp[1]->stats.tx_read_rsps, 3);
		ck_assert(memcmp(rd, buf, 3000) == 0);
		ck_assert_uint_eq(p.sim.now_ns, 2 * lat);
		break;
	case DO_ATOMIC: {
		struct dr_sge sge = {(uintptr_t)res, 8, 0};
		struct dr_send_wr wr = {.wr_id = 1,
					.opcode = DR_WR_FETCH_ADD,
					.flags = DR_WR_SIGNALED,
					.sg_list = &sge,
					.num_sge = 1,
					.remote_addr = (uintptr_t)target,
					.rkey = tmr->key,
					.compare_add = 2};

		ck_assert_int_eq(dr_qp_post_send(p.qp[0], &wr), 0);
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(r->n[1], 2);
		expect_frame(r, 1, 0, DR_OP_ACK, psn0, 1, DR_AETH_ACK_UNLIMITED);
		expect_frame(r, 1, 1, DR_OP_ATOMIC_ACK, psn1, 2, DR_AETH_ACK_UNLIMITED);
		ck_assert_uint_eq(res[0], 40);
		ck_assert_uint_eq(target[0], 42);
		ck_assert_uint_eq(p.sim.now_ns, 2 * lat);
		break;
	}
	case DO_ERR_NAK:
		ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, 100, 0, (uintptr_t)buf,
					   bmr->key ^ 0x80000000u, DR_WR_SIGNALED),
				 0);
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(r->n[1], 2);
		expect_frame(r, 1, 0, DR_OP_ACK, psn0, 1, DR_AETH_ACK_UNLIMITED);
		expect_frame(r, 1, 1, DR_OP_ACK, psn1, 1, DR_AETH_NAK_REM_ACCESS);
		ck_assert_int_eq(p.qp[1]->state, DR_QPS_ERROR);
		ck_assert_uint_eq(p.qp[1]->stats.tx_err_naks, 1);
		break;
	case DO_SEQ_NAK:
		/* SEND 1 lost once: B NAKs at SEND 2, after the held ACK */
		r->drop_on = true;
		r->drop_psn = psn1;
		ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src, 20, 0, 0, 0, DR_WR_SIGNALED),
				 0);
		ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_SEND, src, 30, 0, 0, 0, DR_WR_SIGNALED),
				 0);
		u.psn = psn3;
		ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_reached, &u));
		/* the resent SEND 1 and 2 arrived at 3 * lat: one ACK held */
		ck_assert_uint_eq(p.sim.now_ns, 3 * lat);
		ck_assert_uint_eq(r->n[1], 2);
		expect_frame(r, 1, 0, DR_OP_ACK, psn0, 1, DR_AETH_ACK_UNLIMITED);
		expect_frame(r, 1, 1, DR_OP_ACK, psn1, 1, DR_AETH_NAK_PSN_SEQ);
		ck_assert(dr_qp_flush_due(p.qp[1]));
		ck_assert_uint_eq(p.qp[1]->stats.acks_coalesced, 1);
		flush_third_ack(&p, r, psn2, 3);
		ck_assert_uint_eq(p.sim.now_ns, 4 * lat);
		ck_assert_uint_eq(p.qp[0]->stats.rx_seq_naks, 1);
		ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 2);
		break;
	case DO_RNR_NAK:
		/* no receive for SEND 1 */
		ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src, 20, 0, 0, 0, DR_WR_SIGNALED),
				 0);
		ck_assert(dr_sim_run(&p.sim, LIMIT_NS, saw_rnr, &p));
		ck_assert_uint_eq(r->n[1], 2);
		expect_frame(r, 1, 0, DR_OP_ACK, psn0, 1, DR_AETH_ACK_UNLIMITED);
		expect_frame(r, 1, 1, DR_OP_ACK, psn1, 1, DR_AETH_RNR_NAK | c.min_rnr_timer);
		post_recv(&p, 1, 901, rbuf[1], sizeof(rbuf[1]));
		u.psn = psn2;
		ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_reached, &u));
		/* the RNR wait (10 us) and the resend */
		ck_assert_uint_eq(p.sim.now_ns, 3 * lat + dr_rnr_timer_ns(c.min_rnr_timer));
		ck_assert(dr_qp_flush_due(p.qp[1]));
		ck_assert_uint_eq(r->n[1], 2);
		flush_third_ack(&p, r, psn1, 2);
		ck_assert_uint_eq(p.qp[1]->stats.acks_coalesced, 0);
		break;
	case DO_DUP:
		/* a three-packet SEND 1: stop behind its MIDDLE, so that the
		 * last in-order PSN (psn2) is not the held ACK's (psn0) */
		ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src, 3000, 0, 0, 0, DR_WR_SIGNALED),
				 0);
		u.psn = psn3;
		ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_reached, &u));
		ck_assert_uint_eq(r->n[1], 0);
		ck_assert(dr_qp_flush_due(p.qp[1]));
		ck_assert_uint_eq(p.qp[1]->resp.ack_psn, psn0);
		inject_send(&p, psn0, src, 10);
		ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 1);
		ck_assert_uint_eq(r->n[1], 2);
		expect_frame(r, 1, 0, DR_OP_ACK, psn0, 1, DR_AETH_ACK_UNLIMITED);
		expect_frame(r, 1, 1, DR_OP_ACK, psn2, 1, DR_AETH_ACK_UNLIMITED);
		ck_assert(!dr_qp_flush_due(p.qp[1]));
		/* then SEND 1's LAST: held again, flushed by hand */
		ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_ack_due, &p));
		ck_assert_uint_eq(p.qp[1]->resp.ack_psn, psn3);
		ck_assert_uint_eq(p.qp[1]->resp.ack_msn, 2);
		flush_third_ack(&p, r, psn3, 2);
		ck_assert_uint_eq(p.sim.now_ns, 2 * lat);
		ck_assert_uint_eq(p.qp[1]->stats.acks_coalesced, 0);
		ck_assert_uint_eq(p.sim.end[1].nwc, 2); /* SEND 0 not delivered twice */
		expect_wc(&p.sim.end[1].wc[1], 901, DR_WC_SUCCESS);
		ck_assert_uint_eq(p.sim.end[1].wc[1].byte_len, 3000);
		ck_assert(memcmp(rbuf[1], src, 3000) == 0);
		break;
	}
	/* A: everything completed in order, nothing timed out */
	ck_assert_uint_eq(p.sim.end[0].nwc, _i == DO_SEQ_NAK ? 3 : 2);
	expect_wc(&p.sim.end[0].wc[0], 0, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[0].wc[1], 1,
		  _i == DO_ERR_NAK ? DR_WC_REM_ACCESS_ERR : DR_WC_SUCCESS);
	if (_i == DO_SEQ_NAK)
		expect_wc(&p.sim.end[0].wc[2], 2, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert(!dr_qp_flush_due(p.qp[1]));
	ck_assert_uint_eq(p.qp[1]->stats.tx_frames, r->n[1]);
	expect_wc(&p.sim.end[1].wc[0], 900, DR_WC_SUCCESS);
	ck_assert(memcmp(rbuf[0], src, 10) == 0);
	ck_assert_uint_eq(r->overflow, 0);
	pair_down(&p);
	free(r);
}
END_TEST

/* A held ACK dies with the QP: B to ERROR drops it, the flush then sends
 * nothing, and A, never acknowledged, fails after its retries. */
START_TEST(test_defer_ack_error)
{
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	static uint8_t src[16], dst[2][16];
	struct dr_qp_attr a = {.state = DR_QPS_ERROR};
	uint64_t qpt;
	struct pair p;
	struct until u = {&p, 0};

	ck_assert_ptr_nonnull(r);
	c.qp_flags[1] = DR_QP_DEFER_ACK;
	c.retry_cnt = 1;
	qpt = dr_qp_timeout_ns(c.timeout);
	rec_pair_up(&p, &c, r, 2000);
	post_recv(&p, 1, 900, dst[0], sizeof(dst[0]));
	post_recv(&p, 1, 901, dst[1], sizeof(dst[1]));
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);
	u.psn = dr_psn_add(c.psn_a, 1);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_reached, &u));
	ck_assert(dr_qp_flush_due(p.qp[1]));
	ck_assert_int_eq(dr_qp_modify(p.qp[1], &a, DR_QP_ATTR_STATE), 0);
	ck_assert(!dr_qp_flush_due(p.qp[1]));
	dr_qp_flush(p.qp[1]);
	ck_assert_uint_eq(r->n[1], 0);
	ck_assert_uint_eq(p.sim.end[1].nwc, 2);
	expect_wc(&p.sim.end[1].wc[0], 900, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[1].wc[1], 901, DR_WC_WR_FLUSH_ERR);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(r->n[1], 0);
	ck_assert_uint_eq(p.sim.end[1].tx_frames, 0);
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_RETRY_EXC_ERR);
	/* qpt, then 2 qpt (backoff): two timeouts, one retry */
	ck_assert_uint_eq(p.sim.now_ns, 3 * qpt);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 2);
	ck_assert_uint_eq(p.qp[0]->stats.retries, 1);
	ck_assert_uint_eq(r->n[0], 2);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dropped, 1); /* the resend, in ERROR */
	pair_down(&p);
	free(r);
}
END_TEST

/* DR_QP_ADAPTIVE_RTO estimates.  Each step posts one SEND over a link of
 * the given latency (no serialisation: the round trip is exactly twice
 * it) and runs it to its ACK; the deadline armed at the post uses the
 * previous steps' estimate.  Expected values: RFC 6298 in integers,
 * srtt + max(4 rttvar, 20 us) rounded up to 4.096 us * 2^n, n >= 5. */
#define RTO_STEPS 16

static const struct {
	unsigned flags;
	uint8_t timeout;
	unsigned n;
	struct {
		uint32_t lat_us;
		uint64_t srtt, rttvar, base;
	} s[RTO_STEPS];
} rto_tab[] = {
    /* a steady 200 us: the variance decays, the base steps 2^8 -> 2^7 -> 2^6 */
    {DR_QP_ADAPTIVE_RTO,
     14,
     8,
     {{100, 200000, 100000, 1048576},
      {100, 200000, 75000, 524288},
      {100, 200000, 56250, 524288},
      {100, 200000, 42187, 524288},
      {100, 200000, 31640, 524288},
      {100, 200000, 23730, 524288},
      {100, 200000, 17797, 524288},
      {100, 200000, 13347, 262144}}},
    /* a short and a long round trip among them */
    {DR_QP_ADAPTIVE_RTO,
     14,
     8,
     {{100, 200000, 100000, 1048576},
      {100, 200000, 75000, 524288},
      {30, 182500, 91250, 1048576},
      {250, 222187, 147812, 1048576},
      {100, 219413, 116405, 1048576},
      {100, 216986, 92157, 1048576},
      {100, 214862, 73364, 524288},
      {100, 213004, 58738, 524288}}},
    /* 20 us round trips: never below 2^5 (131 us) */
    {DR_QP_ADAPTIVE_RTO,
     14,
     5,
     {{10, 20000, 10000, 131072},
      {10, 20000, 7500, 131072},
      {10, 20000, 5625, 131072},
      {40, 27500, 19218, 131072},
      {10, 26562, 16288, 131072}}},
    /* a steady 244 us: once 4 rttvar < 20 us the timer granularity holds
     * the estimate at 264 us, above 2^6 (262 us) */
    {DR_QP_ADAPTIVE_RTO,
     14,
     16,
     {{122, 244000, 122000, 1048576},
      {122, 244000, 91500, 1048576},
      {122, 244000, 68625, 524288},
      {122, 244000, 51468, 524288},
      {122, 244000, 38601, 524288},
      {122, 244000, 28950, 524288},
      {122, 244000, 21712, 524288},
      {122, 244000, 16284, 524288},
      {122, 244000, 12213, 524288},
      {122, 244000, 9159, 524288},
      {122, 244000, 6869, 524288},
      {122, 244000, 5151, 524288},
      {122, 244000, 3863, 524288},
      {122, 244000, 2897, 524288},
      {122, 244000, 2172, 524288},
      {122, 244000, 1629, 524288}}},
    /* estimate above the QP's timeout (2^7): the QP's is used */
    {DR_QP_ADAPTIVE_RTO, 7, 2, {{100, 200000, 100000, 1048576}, {100, 200000, 75000, 524288}}},
    /* without the option nothing is measured */
    {0, 14, 2, {{100, 0, 0, 0}, {30, 0, 0, 0}}},
};

START_TEST(test_adaptive_rto_estimate)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[16], dst[16];
	bool adaptive = rto_tab[_i].flags & DR_QP_ADAPTIVE_RTO;
	uint64_t qpt, t0, base = 0, lat = 0;
	struct pair p;
	unsigned k, n = rto_tab[_i].n;

	c.qp_flags[0] = rto_tab[_i].flags;
	c.timeout = rto_tab[_i].timeout;
	qpt = dr_qp_timeout_ns(c.timeout);
	c.sim = (struct dr_sim_cfg){.latency_ns = 1000};
	pair_up(&p, &c);
	for (k = 0; k < n; k++) {
		lat = rto_tab[_i].s[k].lat_us * 1000ull;
		p.sim.cfg.latency_ns = lat;
		post_recv(&p, 1, 900 + k, dst, sizeof(dst));
		t0 = p.sim.now_ns;
		ck_assert_int_eq(post_send(&p, 0, k, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED),
				 0);
		ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]),
				  t0 + (base && base < qpt ? base : qpt));
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(p.sim.now_ns, t0 + 2 * lat);
		ck_assert_uint_eq(p.sim.end[0].nwc, k + 1);
		expect_wc(&p.sim.end[0].wc[k], k, DR_WC_SUCCESS);
		ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, adaptive ? k + 1 : 0);
		ck_assert_msg(p.qp[0]->comp.srtt_ns == rto_tab[_i].s[k].srtt &&
				  p.qp[0]->comp.rttvar_ns == rto_tab[_i].s[k].rttvar &&
				  p.qp[0]->comp.rto_base_ns == rto_tab[_i].s[k].base,
			      "step %u: srtt %llu rttvar %llu base %llu, expected %llu %llu %llu", k,
			      (unsigned long long)p.qp[0]->comp.srtt_ns,
			      (unsigned long long)p.qp[0]->comp.rttvar_ns,
			      (unsigned long long)p.qp[0]->comp.rto_base_ns,
			      (unsigned long long)rto_tab[_i].s[k].srtt,
			      (unsigned long long)rto_tab[_i].s[k].rttvar,
			      (unsigned long long)rto_tab[_i].s[k].base);
		base = rto_tab[_i].s[k].base;
	}
	/* four SENDs at once: the deadline is now + the estimate (capped by
	 * the QP's timeout), and only one round trip is timed at a time */
	for (k = 0; k < 4; k++)
		post_recv(&p, 1, 950 + k, dst, sizeof(dst));
	t0 = p.sim.now_ns;
	for (k = 0; k < 4; k++)
		ck_assert_int_eq(
		    post_send(&p, 0, 100 + k, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t0 + (base && base < qpt ? base : qpt));
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.now_ns, t0 + 2 * lat);
	ck_assert_uint_eq(p.sim.end[0].nwc, n + 4);
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, adaptive ? n + 1 : 0);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.early_timeouts, 0);
	ck_assert_uint_eq(p.qp[1]->stats.rtt_samples, 0); /* B sent no requests */
	pair_down(&p);
}
END_TEST

/* One round trip timed at a time: SEND 0 at t=0 is timed, SEND 1 at 50 us
 * (in flight meanwhile) is not.  B (DR_QP_DEFER_ACK) holds its ACKs until
 * SEND 1 is in at 150 us; the one ACK, back at 250 us, covers both and
 * ends the sample of SEND 0: 250 us, not SEND 1's 200 us. */
START_TEST(test_adaptive_rto_one_at_a_time)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[16], dst[2][16];
	uint64_t lat = 100000;
	struct pair p;
	struct until u = {&p, 0};

	c.qp_flags[0] = DR_QP_ADAPTIVE_RTO;
	c.qp_flags[1] = DR_QP_DEFER_ACK;
	c.timeout = 14;
	c.sim = (struct dr_sim_cfg){.latency_ns = lat};
	pair_up(&p, &c);
	post_recv(&p, 1, 900, dst[0], 16);
	post_recv(&p, 1, 901, dst[1], 16);
	ck_assert_int_eq(post_send(&p, 0, 0, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert(p.qp[0]->comp.rtt_on);
	ck_assert_uint_eq(p.qp[0]->comp.rtt_psn, c.psn_a);
	ck_assert(!dr_sim_run(&p.sim, lat / 2, NULL, NULL));
	ck_assert_uint_eq(p.sim.now_ns, lat / 2);
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert_uint_eq(p.qp[0]->comp.rtt_psn, c.psn_a);
	ck_assert_uint_eq(p.qp[0]->comp.rtt_start_ns, 0);
	/* the timer runs from the first send, not re-armed by the second */
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), dr_qp_timeout_ns(c.timeout));
	u.psn = dr_psn_add(c.psn_a, 2);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_reached, &u));
	ck_assert_uint_eq(p.sim.now_ns, lat + lat / 2);
	ck_assert_uint_eq(p.qp[1]->stats.acks_coalesced, 1);
	dr_qp_flush(p.qp[1]);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.now_ns, 2 * lat + lat / 2);
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[1], 1, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.qp[1]->stats.tx_acks, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 1);
	ck_assert(!p.qp[0]->comp.rtt_on);
	ck_assert_uint_eq(p.qp[0]->comp.srtt_ns, 250000);
	ck_assert_uint_eq(p.qp[0]->comp.rttvar_ns, 125000);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, 1048576); /* 750 us -> 2^8 */
	pair_down(&p);
}
END_TEST

/* DR_QP_ADAPTIVE_RTO, one SEND lost: the timer fires at the estimate, far
 * below the QP's timeout -- an early timeout: resent at once, no retry
 * used.  The resent SEND is not timed (Karn), the window is halved and
 * grows back by one with its ACK. */
START_TEST(test_adaptive_rto_early)
{
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	static uint8_t src[16], dst[3][16];
	uint64_t lat = 100000, base = 1048576, t1, t2;
	struct pair p;

	ck_assert_ptr_nonnull(r);
	c.retry_cnt = 3;
	adaptive_pair_up(&p, &c, r, lat);
	post_recv(&p, 1, 900, dst[0], 16);
	post_recv(&p, 1, 901, dst[1], 16);
	post_recv(&p, 1, 902, dst[2], 16);
	ck_assert_int_eq(post_send(&p, 0, 0, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, base); /* 200 us + 4 * 100 us -> 2^8 */

	r->drop_on = true;
	r->drop_psn = dr_psn_add(c.psn_a, 1);
	t1 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t1 + base);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[1], 1, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.now_ns, t1 + base + 2 * lat);
	ck_assert_uint_eq(r->n[0], 3);
	ck_assert_uint_eq(r->f[0][2].t, t1 + base); /* the resend */
	ck_assert_uint_eq(r->f[0][2].psn, r->drop_psn);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.early_timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.retries, 0);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 1);
	/* Karn: the resend's round trip (base + 200 us) taught nothing */
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 1);
	ck_assert_uint_eq(p.qp[0]->comp.srtt_ns, 200000);
	ck_assert_uint_eq(p.qp[0]->comp.rttvar_ns, 100000);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, base);
	/* the loss window: 128 / 2, + 1 for the ACK */
	ck_assert_uint_eq(p.qp[0]->stats.cwnd_cuts, 1);
	ck_assert_uint_eq(p.qp[0]->req.cwnd, DR_QP_MAX_UNACKED_PSNS / 2 + 1);
	ck_assert_uint_eq(p.qp[0]->comp.backoff, 0);

	/* progress ended the backoff: the next SEND gets the base again, and
	 * is timed */
	t2 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t2 + base);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.now_ns, t2 + 2 * lat);
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 2);
	ck_assert_uint_eq(p.qp[0]->comp.srtt_ns, 200000);
	ck_assert_uint_eq(p.qp[0]->comp.rttvar_ns, 75000);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, 524288);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);
	ck_assert_uint_eq(p.sim.end[1].nwc, 3);
	pair_down(&p);
	free(r);
}
END_TEST

/* A spurious timeout (issue 13).  A (DR_QP_ADAPTIVE_RTO) and B 10 us
 * apart; the warm-up SEND measures 20 us: base 2^5 = 131072.  Then the ACK
 * of a 10-packet WRITE is held 1 ms on the way back (a peer off its CPU).
 * A's timer fires at t1 + 131072 and resends one packet, a probe with
 * AckReq, not the window; B, which has everything, re-ACKs the last PSN,
 * which completes the WRITE 20 us later.  The held ACK arrives after it,
 * behind comp.psn: a second answer to what the timeout resent, so the
 * timeout was spurious, and A's timeout does not go below twice the time
 * from t1 (when the timer was armed) to the held ACK's arrival, about
 * 2.02 ms, where twice the timeout that fired (262 us) would not cover
 * the next such stall. */
struct hold_first_ack {
	bool on;
	unsigned held;
	const uint64_t *now; /* the simulated clock */
	uint64_t held_at;    /* when the held ACK was sent */
};

static enum dr_sim_action hold_ack_fault(void *arg, unsigned dir, uint64_t n,
					 const struct dr_pkt *pkt)
{
	struct hold_first_ack *h = arg;

	if (dir == 1 && h->on && pkt->opcode == DR_OP_ACK) {
		h->on = false;
		h->held++;
		h->held_at = *h->now;
		return DR_SIM_DELAY;
	}
	return DR_SIM_PASS;
}

/* A (flags) and B 10 us apart, A's first ACK after h->on held hold_ns on
 * the way back; src filled, dst registered at B; the 10-byte warm-up
 * WRITE done. */
static struct dr_mr *hold_setup(struct pair *p, struct pair_cfg *c, struct hold_first_ack *h,
				unsigned flags, uint64_t hold_ns, uint8_t *src, uint8_t *dst,
				size_t len, uint32_t seed)
{
	struct dr_mr *mr;

	c->qp_flags[0] = flags;
	c->timeout = 14;
	c->sim = (struct dr_sim_cfg){
	    .latency_ns = 10000, .reorder_ns = hold_ns, .fault = hold_ack_fault, .fault_arg = h};
	pair_up(p, c);
	h->now = &p->sim.now_ns;
	fill(src, len, seed);
	mr = reg(p, 1, dst, len, DR_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(
	    post_send(p, 0, 50, DR_WR_WRITE, src, 10, 0, (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
	    0);
	ck_assert(pair_run(p));
	return mr;
}

START_TEST(test_spurious_timeout_probe)
{
	struct pair_cfg c = pair_defaults();
	struct hold_first_ack h = {0};
	static uint8_t src[10000], dst[10000];
	uint64_t lat = 10000, base = 131072, t1, t2, floor;
	struct dr_mr *mr;
	struct pair p;

	mr = hold_setup(&p, &c, &h, DR_QP_ADAPTIVE_RTO, 1000000, src, dst, sizeof(src), 5);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, base);

	h.on = true;
	t1 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t1 + base);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(h.held, 1);
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[1], 1, DR_WC_SUCCESS);
	ck_assert_mem_eq(dst, src, sizeof(src));
	/* 1 warm-up + 10 + one probe, never the window again */
	ck_assert_uint_eq(p.sim.end[0].tx_frames, 12);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.early_timeouts, 1);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 1);
	ck_assert_uint_eq(p.qp[0]->stats.spurious_timeouts, 1);
	/* armed at t1, the held ACK arrived at held_at + lat + 1 ms */
	floor = 2 * (h.held_at + lat + 1000000 - t1);
	ck_assert_uint_gt(floor, 2000000);
	ck_assert_uint_lt(floor, 2100000);
	ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, floor);
	ck_assert(!p.qp[0]->req.probe);

	/* the next send gets the floor, not the base */
	t2 = p.sim.now_ns;
	ck_assert_int_eq(
	    post_send(&p, 0, 2, DR_WR_WRITE, src, 10, 0, (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
	    0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t2 + floor);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 3);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);

	/* 300 more round trips (6 ms): more than DR_RTO_FLOOR_DECAY samples,
	 * but the floor holds for DR_RTO_FLOOR_HOLD_NS */
	for (unsigned i = 0; i < 300; i++) {
		ck_assert_int_eq(post_send(&p, 0, 3, DR_WR_WRITE, src, 10, 0, (uintptr_t)dst,
					   mr->key, DR_WR_SIGNALED),
				 0);
		ck_assert(pair_run(&p));
	}
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 302);
	ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, floor);
	/* then it halves with 256 samples and 10 s (DR_RTO_FLOOR_HOLD_NS), and
	 * is gone once half is no more than the base: 2.02 ms, 1.01 ms, 505 us,
	 * 253 us, gone; after 9.9 s it still holds */
	p.sim.now_ns = t2 + 9900000000ull;
	ck_assert_int_eq(
	    post_send(&p, 0, 4, DR_WR_WRITE, src, 10, 0, (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
	    0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, floor);
	for (unsigned k = 1; k <= 4; k++) {
		p.sim.now_ns += 10000000000ull;
		ck_assert_int_eq(post_send(&p, 0, 4, DR_WR_WRITE, src, 10, 0, (uintptr_t)dst,
					   mr->key, DR_WR_SIGNALED),
				 0);
		ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), p.sim.now_ns + (floor >> (k - 1)));
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, k < 4 ? floor >> k : 0);
		for (unsigned i = 0; i < 256; i++) {
			ck_assert_int_eq(post_send(&p, 0, 3, DR_WR_WRITE, src, 10, 0,
						   (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
					 0);
			ck_assert(pair_run(&p));
		}
	}
	ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, 0);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 1);
	pair_down(&p);
}
END_TEST

/* The same with the ACK held 30 ms: twice the late answer would be 60 ms,
 * near the QP's 67 ms, and a floor that high would take a minute of
 * halvings to come down on a lossy link; it stops at 10 ms
 * (DR_RTO_FLOOR_LATE_MAX_NS). */
START_TEST(test_spurious_floor_cap)
{
	struct pair_cfg c = pair_defaults();
	struct hold_first_ack h = {0};
	static uint8_t src[10000], dst[10000];
	struct dr_mr *mr;
	struct pair p;

	mr = hold_setup(&p, &c, &h, DR_QP_ADAPTIVE_RTO, 30000000, src, dst, sizeof(src), 8);
	h.on = true;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(h.held, 1);
	ck_assert_mem_eq(dst, src, sizeof(src));
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.spurious_timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, 10000000);
	pair_down(&p);
}
END_TEST

/* DR_QP_LOSSLESS (a memif or ring port): the same warm-up measures the
 * round trip and the same 1 ms hold delays the ACK, but the timer runs
 * with the QP's own timeout: no timeout, nothing resent, and the WRITE
 * completes when the held ACK arrives. */
START_TEST(test_lossless_no_early_timeout)
{
	struct pair_cfg c = pair_defaults();
	struct hold_first_ack h = {0};
	static uint8_t src[10000], dst[10000];
	uint64_t lat = 10000, t1;
	struct dr_mr *mr;
	struct pair p;

	mr = hold_setup(&p, &c, &h, DR_QP_ADAPTIVE_RTO | DR_QP_LOSSLESS, 1000000, src, dst,
			sizeof(src), 6);
	/* measured as with DR_QP_ADAPTIVE_RTO alone, not used */
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 1);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, 131072);

	h.on = true;
	t1 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t1 + dr_qp_timeout_ns(14));
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(h.held, 1);
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[1], 1, DR_WC_SUCCESS);
	ck_assert_mem_eq(dst, src, sizeof(src));
	/* completed by the held ACK, the last event: 1 ms + 10 us after it
	 * left B */
	ck_assert_uint_eq(p.sim.now_ns, h.held_at + lat + 1000000);
	ck_assert_uint_eq(p.sim.end[0].tx_frames, 11);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 0);
	pair_down(&p);
}
END_TEST

/* A timeout's probe among answers that come one PSN at a time (issue 13).
 * A (DR_QP_ADAPTIVE_RTO | DR_QP_DEFER_ACK) and B 10 us apart, no
 * serialisation, each polling in bursts (flush_bursts); the warm-up WRITE
 * measures 20 us: base 2^5 = 131072.  Then B is off its CPU for 300 us
 * while A sends PU_N operations of one kind: 32 FETCH_ADDs, 16 READs of
 * 4 KiB (4 responses each) or 16 WRITEs of 4 KiB.  A's timer fires at
 * 131 us and resends one packet; B, back at 300 us, answers everything,
 * the probe last, in one burst.  The first answer covers only the probe's
 * PSNs; the next one, in the same burst, answers something the probe did
 * not ask for: A goes on where it was (probe_undos), with its window and
 * the READ requests' tokens back, and resends nothing more.  Before,
 * a READ or atomic timeout resent the whole window.  With B off its CPU
 * for 1 ms instead, A's timer fires three times (131, 393 and 917 us, the
 * timeout doubling) and each resends the probe alone; the answers still
 * take A back to where the first timeout found it, not to the probe
 * (before, the second timeout's rewind replaced that point, and the
 * WRITE case resent 32 packets over memif). */
#define PU_KINDS 3

/* A's buffers and regions: READs read src into dst, WRITEs write src to
 * dst, the FETCH_ADDs add 5 to target and return the old values in res */
struct pu {
	uint8_t src[16 * 4096], dst[16 * 4096];
	uint64_t res[32], target;
	struct dr_mr *rmr, *tmr, *lmr;
};

static void pu_post(struct pair *p, unsigned kind, struct pu *u)
{
	unsigned i;

	if (kind == 0) {
		for (i = 0; i < 32; i++) {
			struct dr_sge sge = {(uintptr_t)&u->res[i], 8, u->lmr->key};
			struct dr_send_wr wr = {.wr_id = i,
						.opcode = DR_WR_FETCH_ADD,
						.flags = DR_WR_SIGNALED,
						.sg_list = &sge,
						.num_sge = 1,
						.remote_addr = (uintptr_t)&u->target,
						.rkey = u->tmr->key,
						.compare_add = 5};

			ck_assert_int_eq(dr_qp_post_send(p->qp[0], &wr), 0);
		}
		return;
	}
	for (i = 0; i < 16; i++) {
		if (kind == 1)
			ck_assert_int_eq(post_send(p, 0, i, DR_WR_READ, u->dst + i * 4096, 4096, 0,
						   (uintptr_t)u->src + i * 4096, u->rmr->key,
						   DR_WR_SIGNALED),
					 0);
		else
			ck_assert_int_eq(post_send(p, 0, i, DR_WR_WRITE, u->src + i * 4096, 4096, 0,
						   (uintptr_t)u->dst + i * 4096, u->rmr->key,
						   DR_WR_SIGNALED),
					 0);
	}
}

/* what A must end with: every operation done once, in order, byte-exact */
static void pu_check(struct pair *p, unsigned kind, const struct pu *u)
{
	unsigned i, n = kind == 0 ? 32 : 16;

	ck_assert_uint_eq(p->sim.end[0].nwc, 1 + n);
	for (i = 0; i < n; i++)
		expect_wc(&p->sim.end[0].wc[1 + i], i, DR_WC_SUCCESS);
	if (kind == 0) {
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(u->res[i], 100 + 5 * i);
		ck_assert_uint_eq(u->target, 100 + 5 * n);
		ck_assert_uint_eq(p->qp[1]->stats.atomics_executed, n);
	} else {
		ck_assert_mem_eq(u->dst, u->src, sizeof(u->src));
	}
	ck_assert_uint_eq(p->qp[0]->req.ord_used, 0);
	ck_assert(!p->qp[0]->req.probe && !p->qp[0]->req.probe_wait);
}

/* The pair, A's buffers and regions, and the warm-up WRITE (its round
 * trip, 20 us, gives the adaptive timer its base, 2^5 x 4.096 us) */
static void pu_setup(struct pair *p, struct pair_cfg *c, struct pu *u, unsigned kind, uint32_t seed,
		     void *fault, void *arg)
{
	c->qp_flags[0] = DR_QP_ADAPTIVE_RTO | DR_QP_DEFER_ACK;
	c->qp_flags[1] = DR_QP_DEFER_ACK;
	c->timeout = 14;
	c->ord = c->ird = 64;
	c->sim = (struct dr_sim_cfg){
	    .latency_ns = 10000, .flush_bursts = true, .fault = fault, .fault_arg = arg};
	pair_up(p, c);
	fill(u->src, sizeof(u->src), seed);
	memset(u->dst, 0, sizeof(u->dst));
	memset(u->res, 0, sizeof(u->res));
	u->target = 100;
	u->rmr = reg(p, 1, kind == 1 ? u->src : u->dst, sizeof(u->src),
		     DR_ACCESS_REMOTE_READ | DR_ACCESS_REMOTE_WRITE);
	u->tmr = reg(p, 1, &u->target, sizeof(u->target), DR_ACCESS_REMOTE_ATOMIC);
	u->lmr = reg(p, 0, u->res, sizeof(u->res), DR_ACCESS_LOCAL_WRITE);
	ck_assert_int_eq(post_send(p, 0, 99, DR_WR_WRITE, u->src, 10, 0, u->rmr->iova, u->rmr->key,
				   DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(p));
	ck_assert_uint_eq(p->qp[0]->comp.rto_base_ns, 131072);
	ck_assert_uint_eq(p->qp[0]->req.cwnd, DR_QP_MAX_UNACKED_PSNS);
}

START_TEST(test_probe_undo)
{
	struct pair_cfg c = pair_defaults();
	static struct pu u;
	unsigned kind = (unsigned)_i % PU_KINDS, probes = _i < PU_KINDS ? 1 : 3;
	struct pair p;

	pu_setup(&p, &c, &u, kind, 3300 + kind, NULL, NULL);
	p.sim.end[1].stall_until_ns = p.sim.now_ns + (probes == 1 ? 300000 : 1000000);
	pu_post(&p, kind, &u);
	ck_assert(pair_run(&p));
	pu_check(&p, kind, &u);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, probes);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, probes);
	ck_assert_uint_eq(p.qp[0]->stats.probe_undos, 1);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, probes);
	ck_assert_uint_eq(p.qp[0]->stats.spurious_timeouts, 1);
	/* the window the timeout halved is back */
	ck_assert_uint_eq(p.qp[0]->req.cwnd, DR_QP_MAX_UNACKED_PSNS);
	pair_down(&p);
}
END_TEST

/* The same 300 us stall, but on a 1 Gb/s link: B's answers come one at a
 * time, 0.6 us apart (atomic ACKs) or 8.8 us (READ responses, WRITE
 * ACKs behind the WRITEs still leaving A), each its own burst, as frames
 * through a kernel's af_packet socket do.  The answer to the probe's
 * original is read alone and ends its burst; A holds a round trip
 * (dr_comp_probe_hold: 20 us) for the next, which answers something the
 * probe did not ask for, and goes on where it was.  Held only to the end
 * of the burst, A resent them all: 32 atomics, 16 READ requests (veth:
 * 64 resent by one timeout of atomic_fadd at window 64).  WRITEs passed
 * either way: B's coalesced ACK answers past the probe at once. */
START_TEST(test_probe_undo_spaced)
{
	struct pair_cfg c = pair_defaults();
	static struct pu u;
	unsigned kind = (unsigned)_i;
	struct pair p;

	pu_setup(&p, &c, &u, kind, 3500 + kind, NULL, NULL);
	p.sim.cfg.rate_bps = 1000000000ull;
	p.sim.end[1].stall_until_ns = p.sim.now_ns + 300000;
	pu_post(&p, kind, &u);
	ck_assert(pair_run(&p));
	pu_check(&p, kind, &u);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.probe_undos, 1);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 1);
	ck_assert_uint_eq(p.qp[0]->stats.spurious_timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->req.cwnd, DR_QP_MAX_UNACKED_PSNS);
	pair_down(&p);
}
END_TEST

/* The same, but what followed the probe was lost on the way to B (a tail
 * loss: nothing after it shows B a gap), and B is not stalled.  The probe
 * is answered alone: A holds to the end of the burst and a round trip,
 * then go-back-N resends every lost packet once, and nothing else. */
struct pu_loss {
	uint32_t from, to; /* drop A's first sends of PSNs [from, to) */
	uint32_t dropped;
	bool armed;
};

static enum dr_sim_action pu_loss_fault(void *arg, unsigned dir, uint64_t n,
					const struct dr_pkt *pkt)
{
	struct pu_loss *l = arg;

	if (dir == 0 && l->armed && dr_psn_diff(pkt->psn, l->from) >= 0 &&
	    dr_psn_diff(pkt->psn, l->to) < 0) {
		l->dropped++;
		return DR_SIM_DROP;
	}
	return DR_SIM_PASS;
}

START_TEST(test_probe_tail_loss)
{
	struct pair_cfg c = pair_defaults();
	static struct pu u;
	unsigned kind = (unsigned)_i, lost;
	struct pu_loss l = {0};
	struct pair p;

	pu_setup(&p, &c, &u, kind, 3400 + kind, pu_loss_fault, &l);
	/* everything after the first operation: 31 atomics, 15 READ
	 * requests (4 PSNs each) or 15 x 4 WRITE packets */
	l.from = dr_psn_add(c.psn_a, kind == 0 ? 2 : 5);
	l.to = dr_psn_add(c.psn_a, kind == 0 ? 33 : 65);
	l.armed = true;
	pu_post(&p, kind, &u);
	l.armed = false; /* the first sends left while posting */
	lost = l.dropped;
	ck_assert_uint_eq(lost, kind == 0 ? 31 : kind == 1 ? 15 : 60);
	ck_assert(pair_run(&p));
	pu_check(&p, kind, &u);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, lost);
	ck_assert_uint_eq(p.qp[0]->stats.probe_undos, 0);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 0);
	pair_down(&p);
}
END_TEST

/* A QP that goes to ERROR while a probe's answer holds it (the peer's
 * DREQ, fi_shutdown): the hold ends with it, and no deadline is left
 * behind.  Before, the past hold stayed the QP's deadline, so its timer
 * fired at every pass of the port's timers, and the simulated link never
 * went quiet. */
static bool a_probe_wait(void *arg)
{
	return ((struct pair *)arg)->qp[0]->req.probe_wait;
}

START_TEST(test_probe_hold_error)
{
	struct pair_cfg c = pair_defaults();
	struct dr_qp_attr a = {.state = DR_QPS_ERROR};
	static struct pu u;
	struct pair p;

	pu_setup(&p, &c, &u, 0, 3600, NULL, NULL);
	p.sim.cfg.rate_bps = 1000000000ull;
	p.sim.end[1].stall_until_ns = p.sim.now_ns + 300000;
	pu_post(&p, 0, &u);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, a_probe_wait, &p));
	/* the first FETCH_ADD answered; its hold: the 20 us warm-up + 20 us */
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	ck_assert_uint_eq(p.qp[0]->req.probe_hold_ns - p.sim.now_ns, 40000);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), p.qp[0]->req.probe_hold_ns);
	ck_assert_int_eq(dr_qp_modify(p.qp[0], &a, DR_QP_ATTR_STATE), 0);
	ck_assert(!p.qp[0]->req.probe_wait);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), UINT64_MAX);
	ck_assert(pair_run(&p));
	/* the other 31 flushed, in order */
	ck_assert_uint_eq(p.sim.end[0].nwc, 33);
	for (unsigned i = 2; i < 33; i++) {
		ck_assert_uint_eq(p.sim.end[0].wc[i].wr_id, i - 1);
		ck_assert_int_eq(p.sim.end[0].wc[i].status, DR_WC_WR_FLUSH_ERR);
	}
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), UINT64_MAX);
	pair_down(&p);
}
END_TEST

/* A loss halves the floor spurious timeouts set: on a lossy path the next
 * tail loss would wait it.  The floor of the held-ACK test (2 x 1.02 ms),
 * then a 10-packet WRITE whose fourth packet is lost: B's sequence NAK
 * halves it; a second such loss halves it again.  (Bridged veth, 5 %
 * random loss both ways, 1 MiB writes, 4 rounds: with the floor held
 * through the losses 21-86 MB/s, halved by each loss 100-106.) */
struct hold_loss {
	struct hold_first_ack h;
	struct pu_loss l;
};

static enum dr_sim_action hold_loss_fault(void *arg, unsigned dir, uint64_t n,
					  const struct dr_pkt *pkt)
{
	struct hold_loss *hl = arg;

	if (hold_ack_fault(&hl->h, dir, n, pkt) != DR_SIM_PASS)
		return DR_SIM_DELAY;
	return pu_loss_fault(&hl->l, dir, n, pkt);
}

START_TEST(test_spurious_floor_loss)
{
	struct pair_cfg c = pair_defaults();
	static struct hold_loss hl;
	static uint8_t src[10000], dst[10000];
	uint64_t floor;
	struct dr_mr *mr;
	struct pair p;

	memset(&hl, 0, sizeof(hl));
	mr = hold_setup(&p, &c, &hl.h, DR_QP_ADAPTIVE_RTO, 1000000, src, dst, sizeof(src), 9);
	p.sim.cfg.fault = hold_loss_fault;
	p.sim.cfg.fault_arg = &hl;
	hl.h.on = true;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[0]->stats.spurious_timeouts, 1);
	floor = p.qp[0]->comp.rto_floor_ns;
	ck_assert_uint_gt(floor, 2000000);
	for (unsigned k = 1; k <= 2; k++) {
		uint32_t first = p.qp[0]->comp.psn;

		hl.l.from = dr_psn_add(first, 3);
		hl.l.to = dr_psn_add(first, 4);
		hl.l.armed = true;
		ck_assert_int_eq(post_send(&p, 0, 1 + k, DR_WR_WRITE, src, sizeof(src), 0,
					   (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
				 0);
		hl.l.armed = false;
		ck_assert_uint_eq(hl.l.dropped, k);
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(p.qp[0]->stats.rx_seq_naks, k);
		ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, floor >> k);
	}
	ck_assert_uint_eq(p.sim.end[0].nwc, 4);
	ck_assert_mem_eq(dst, src, sizeof(src));
	pair_down(&p);
}
END_TEST

/* A first floor (dr_qp_init_attr.rto_floor_ns, what the provider gives
 * QPs on ports that may lose frames): 1 ms.  The warm-up WRITE measures
 * 20 us, base 131072, but the next WRITE's deadline is 1 ms out, and its
 * first ACK held 0.9 ms (a stall of B) costs no timeout and no resend;
 * without the floor A's timer fires at 131 us and probes.  That ACK's
 * round trip (0.92 ms, timed: nothing was resent) raises the estimate to
 * 2^9 x 4.096 us; a loss that B's sequence NAK reports then halves the
 * floor to 500 us, below the estimate, which removes it: the next send's
 * deadline is the estimate's.  (The halvings one by one:
 * test_spurious_floor_loss.) */
START_TEST(test_rto_floor_start)
{
	struct pair_cfg c = pair_defaults();
	static struct hold_loss hl;
	static uint8_t src[10000], dst[10000];
	uint64_t lat = 10000, t1;
	struct dr_mr *mr;
	struct pair p;

	memset(&hl, 0, sizeof(hl));
	c.rto_floor_ns[0] = 1000000;
	mr = hold_setup(&p, &c, &hl.h, DR_QP_ADAPTIVE_RTO, 900000, src, dst, sizeof(src), 11);
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 1);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, 131072);
	ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, 1000000);
	ck_assert_uint_eq(p.qp[1]->comp.rto_floor_ns, 0); /* B's attr: none */
	p.sim.cfg.fault = hold_loss_fault;
	p.sim.cfg.fault_arg = &hl;

	hl.h.on = true;
	t1 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t1 + 1000000);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(hl.h.held, 1);
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[1], 1, DR_WC_SUCCESS);
	ck_assert_mem_eq(dst, src, sizeof(src));
	ck_assert_uint_eq(p.sim.now_ns, hl.h.held_at + lat + 900000);
	ck_assert_uint_eq(p.sim.end[0].tx_frames, 11);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 0);
	ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, 1000000);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, dr_qp_timeout_ns(9));

	hl.h.on = false;
	hl.l.from = dr_psn_add(p.qp[0]->comp.psn, 3);
	hl.l.to = dr_psn_add(p.qp[0]->comp.psn, 4);
	hl.l.armed = true;
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	hl.l.armed = false;
	ck_assert_uint_eq(hl.l.dropped, 1);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[0]->stats.rx_seq_naks, 1);
	ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, 0);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.sim.end[0].nwc, 3);
	expect_wc(&p.sim.end[0].wc[2], 2, DR_WC_SUCCESS);
	ck_assert_mem_eq(dst, src, sizeof(src));
	t1 = p.sim.now_ns;
	ck_assert_int_eq(
	    post_send(&p, 0, 3, DR_WR_WRITE, src, 10, 0, (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
	    0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t1 + p.qp[0]->comp.rto_base_ns);
	ck_assert(pair_run(&p));
	pair_down(&p);
}
END_TEST

/* A (c->qp_flags[0]) and B (DR_QP_DEFER_ACK) 10 us apart, the QP's
 * timeout 2^14, A's first sends that l names dropped; src filled, dst
 * registered at B and zeroed; the warm-up WRITE of 8 bytes done and timed
 * (the adaptive timeout 131072 ns). */
static struct dr_mr *loss_pair_up(struct pair *p, struct pair_cfg *c, struct pu_loss *l,
				  uint8_t *src, uint8_t *dst, size_t len, uint32_t seed)
{
	struct dr_mr *mr;

	c->qp_flags[1] = DR_QP_DEFER_ACK;
	c->timeout = 14;
	c->sim = (struct dr_sim_cfg){
	    .latency_ns = 10000, .flush_bursts = true, .fault = pu_loss_fault, .fault_arg = l};
	pair_up(p, c);
	fill(src, len, seed);
	memset(dst, 0, len);
	mr = reg(p, 1, dst, len, DR_ACCESS_REMOTE_WRITE);
	ck_assert_int_eq(
	    post_send(p, 0, 50, DR_WR_WRITE, src, 8, 0, (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
	    0);
	ck_assert(pair_run(p));
	ck_assert_uint_eq(p->qp[0]->comp.rto_base_ns, 131072);
	return mr;
}

/* DR_QP_LOSSLESS is a presumption: the first loss ends it.  A (with
 * DR_QP_ADAPTIVE_RTO) sends a 10-packet WRITE after the warm-up, whose
 * first sends of some packets are lost: (0) the fourth, which B's
 * sequence NAK reports at once; (1) the last five, which nothing reveals.
 * Only the last asked for an ACK, so A waits the QP's full timeout
 * (2^14 x 4.096 us, not an early one) and probes with the first packet,
 * which B answers with an ACK of all five it has: A resumes where it was
 * (probe_undos), waits a second full timeout from that progress, probes
 * with the sixth, whose answer comes alone, and goes back N.  Either way
 * the WRITE completes byte-exact and A's next send gets the adaptive
 * timeout, 131072 ns. */
START_TEST(test_lossless_loss_seen)
{
	struct pair_cfg c = pair_defaults();
	struct pu_loss l = {0};
	static uint8_t src[10000], dst[10000];
	uint64_t t0, qpt = dr_qp_timeout_ns(14);
	struct dr_mr *mr;
	struct pair p;

	c.qp_flags[0] = DR_QP_ADAPTIVE_RTO | DR_QP_LOSSLESS | DR_QP_DEFER_ACK;
	mr = loss_pair_up(&p, &c, &l, src, dst, sizeof(dst), 37 + _i);
	l.from = dr_psn_add(c.psn_a, _i == 0 ? 4 : 6);
	l.to = dr_psn_add(c.psn_a, _i == 0 ? 5 : 11);
	l.armed = true;
	t0 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	l.armed = false;
	ck_assert_uint_eq(l.dropped, _i == 0 ? 1 : 5);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t0 + qpt);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[1], 1, DR_WC_SUCCESS);
	ck_assert_mem_eq(dst, src, sizeof(src));
	ck_assert(!(p.qp[0]->flags & DR_QP_LOSSLESS));
	ck_assert_uint_eq(p.qp[0]->stats.rx_seq_naks, _i == 0 ? 1 : 0);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, _i == 0 ? 0 : 2);
	ck_assert_uint_eq(p.qp[0]->stats.early_timeouts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.probe_undos, _i == 0 ? 0 : 1);
	/* (0) go-back-N from the fourth: 7; (1) two probes, then the four
	 * behind the second once */
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, _i == 0 ? 7 : 6);
	if (_i == 1)
		ck_assert_uint_ge(p.sim.now_ns - t0, 2 * qpt);
	t0 = p.sim.now_ns;
	ck_assert_int_eq(
	    post_send(&p, 0, 2, DR_WR_WRITE, src, 10, 0, (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
	    0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t0 + p.qp[0]->comp.rto_base_ns);
	ck_assert_uint_lt(p.qp[0]->comp.rto_base_ns, qpt);
	ck_assert(pair_run(&p));
	pair_down(&p);
}
END_TEST

/* A timeout whose resend is answered once is a loss (comp.c
 * dr_comp_timeout_lost): a tail loss lowers the floor as a NAKed loss
 * does, and ends a lossless port's presumption.  A and B 10 us apart, A
 * with DR_QP_ADAPTIVE_RTO and (0) a first floor of 10 ms, the provider's
 * on a kernel port, or (1) DR_QP_LOSSLESS, the QP's timeout 2^14.  Four
 * one-packet WRITEs after the warm-up each lose their first send, with
 * nothing behind it to draw a NAK (every loss of a ping-pong): each waits
 * its timeout, is resent and answered once.  The next timeout judges the
 * last: (0) the deadlines are 10, 10, 5, 2.5 ms after the posts, the floor
 * 10 ms >> k after the k-th WRITE; (1) 67 ms twice, then the adaptive
 * timeout.  Nothing is spurious, every WRITE lands byte-exact. */
START_TEST(test_timeout_loss_floor)
{
	struct pair_cfg c = pair_defaults();
	struct pu_loss l = {0};
	static uint8_t src[64], dst[64];
	const uint64_t floor = 10000000, qpt = dr_qp_timeout_ns(14);
	struct dr_mr *mr;
	struct pair p;

	c.qp_flags[0] = DR_QP_ADAPTIVE_RTO | DR_QP_DEFER_ACK | (_i ? DR_QP_LOSSLESS : 0);
	c.rto_floor_ns[0] = _i ? 0 : floor;
	mr = loss_pair_up(&p, &c, &l, src, dst, sizeof(dst), 41 + _i);
	for (unsigned k = 0; k < 4; k++) {
		uint64_t t0 = p.sim.now_ns, want;
		uint8_t *d = dst + 8 + 8 * k;

		l.from = p.qp[0]->comp.psn;
		l.to = dr_psn_add(l.from, 1);
		l.armed = true;
		ck_assert_int_eq(post_send(&p, 0, 1 + k, DR_WR_WRITE, src + 8 + 8 * k, 8, 0,
					   (uintptr_t)d, mr->key, DR_WR_SIGNALED),
				 0);
		l.armed = false;
		ck_assert_uint_eq(l.dropped, k + 1);
		if (_i)
			want = k < 2 ? qpt : 131072;
		else
			want = floor >> (k ? k - 1 : 0);
		ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t0 + want);
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(p.sim.end[0].nwc, 2 + k);
		expect_wc(&p.sim.end[0].wc[1 + k], 1 + k, DR_WC_SUCCESS);
		ck_assert_mem_eq(d, src + 8 + 8 * k, 8);
		ck_assert_uint_eq(p.qp[0]->stats.timeouts, k + 1);
		ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, k + 1);
		ck_assert_uint_eq(p.qp[0]->stats.timeout_losses, k);
		ck_assert_uint_eq(p.qp[0]->stats.spurious_timeouts, 0);
		ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 0);
		if (_i)
			ck_assert(!(p.qp[0]->flags & DR_QP_LOSSLESS) == (k >= 1));
		else
			ck_assert_uint_eq(p.qp[0]->comp.rto_floor_ns, floor >> k);
	}
	ck_assert_mem_eq(dst, src, 40);
	pair_down(&p);
}
END_TEST

/* Karn's rule across an RNR NAK.  A (DR_QP_ADAPTIVE_RTO, timeout 2^14)
 * and B 10 us apart, B's min_rnr_timer 14 (1.28 ms).  The warm-up SEND
 * measures 20 us: srtt 20000, rttvar 10000, base 20 us + 4 * 10 us = 60 us
 * rounded up to 2^5 = 131072.  SEND 1 at t1 is timed when first sent,
 * finds no receive WQE and is RNR NAKed (back at t1 + 20 us); the receive
 * is posted then; A resends at t1 + 20 us + 1.28 ms and the ACK is back
 * 20 us later.  That ACK passes the PSN whose timing started at t1, but
 * the PSN was resent meanwhile: the 1.32 ms is no round trip and must not
 * be sampled (it would give srtt 182500, rttvar 332500, base 2^9).  So the
 * episode adds no sample at all: rtt_samples stays 1 and the estimate is
 * untouched.  SEND 2, first sent after the episode, is timed as usual:
 * the one legitimate sample, 20 us, makes rtt_samples 2, rttvar
 * (3 * 10000 + 0) / 4 = 7500, srtt 20000, base 20 us + 30 us -> 2^5. */
START_TEST(test_adaptive_rto_rnr_karn)
{
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	static uint8_t src[3][16], dst[3][16];
	uint64_t lat = 10000, rnr = 1280000, base = 131072, t1, t2;
	uint32_t psn1 = dr_psn_add(c.psn_a, 1), psn2 = dr_psn_add(c.psn_a, 2);
	struct pair p;

	ck_assert_ptr_nonnull(r);
	c.min_rnr_timer = 14;
	adaptive_pair_up(&p, &c, r, lat);
	for (unsigned i = 0; i < 3; i++)
		fill(src[i], sizeof(src[i]), 40 + i);
	ck_assert_uint_eq(dr_rnr_timer_ns(14), rnr);

	/* warm-up */
	post_recv(&p, 1, 900, dst[0], 16);
	ck_assert_int_eq(post_send(&p, 0, 0, DR_WR_SEND, src[0], 16, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.now_ns, 2 * lat);
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 1);
	ck_assert_uint_eq(p.qp[0]->comp.srtt_ns, 20000);
	ck_assert_uint_eq(p.qp[0]->comp.rttvar_ns, 10000);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, base);

	/* SEND 1: no receive WQE at B */
	t1 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_SEND, src[1], 16, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert(p.qp[0]->comp.rtt_on);
	ck_assert_uint_eq(p.qp[0]->comp.rtt_psn, psn1);
	ck_assert_uint_eq(p.qp[0]->comp.rtt_start_ns, t1);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t1 + base);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, saw_rnr, &p));
	ck_assert_uint_eq(p.sim.now_ns, t1 + 2 * lat);
	ck_assert_uint_eq(p.qp[1]->stats.tx_rnr_naks, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rx_rnr_naks, 1);
	ck_assert_int_eq(p.qp[0]->req.state, DR_REQ_WAIT_RNR);
	/* the RNR wait replaced the retransmit timer */
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t1 + 2 * lat + rnr);
	/* the timing of PSN 1 ended with the rewind */
	ck_assert(!p.qp[0]->comp.rtt_on);
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	post_recv(&p, 1, 901, dst[1], 16);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.now_ns, t1 + 2 * lat + rnr + 2 * lat);
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[1], 1, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].nwc, 2);
	expect_wc(&p.sim.end[1].wc[1], 901, DR_WC_SUCCESS);
	ck_assert_uint_eq(p.sim.end[1].wc[1].byte_len, 16);
	ck_assert_mem_eq(dst[1], src[1], 16);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rnr_waits, 1);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.retries, 0);
	/* Karn: the 1.32 ms of SEND 1 taught nothing */
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 1);
	ck_assert(!p.qp[0]->comp.rtt_on);
	ck_assert_uint_eq(p.qp[0]->comp.srtt_ns, 20000);
	ck_assert_uint_eq(p.qp[0]->comp.rttvar_ns, 10000);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, base);
	/* on the wire: SEND 1 at t1, its resend after the RNR timer */
	ck_assert_uint_eq(r->n[0], 3);
	ck_assert_uint_eq(r->n[1], 3);
	expect_frame(r, 0, 1, DR_OP_SEND_ONLY, psn1, -1, 0);
	ck_assert_uint_eq(r->f[0][1].t, t1);
	expect_frame(r, 0, 2, DR_OP_SEND_ONLY, psn1, -1, 0);
	ck_assert_uint_eq(r->f[0][2].t, t1 + 2 * lat + rnr);
	expect_frame(r, 1, 1, DR_OP_ACK, psn1, 1, DR_AETH_RNR_NAK | 14);
	expect_frame(r, 1, 2, DR_OP_ACK, psn1, 2, DR_AETH_ACK_UNLIMITED);

	/* SEND 2, after the episode: first sent, so timed (20 us) */
	post_recv(&p, 1, 902, dst[2], 16);
	t2 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_SEND, src[2], 16, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert(p.qp[0]->comp.rtt_on);
	ck_assert_uint_eq(p.qp[0]->comp.rtt_psn, psn2);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t2 + base);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.now_ns, t2 + 2 * lat);
	ck_assert_uint_eq(p.sim.end[0].nwc, 3);
	expect_wc(&p.sim.end[0].wc[2], 2, DR_WC_SUCCESS);
	ck_assert_mem_eq(dst[2], src[2], 16);
	ck_assert_mem_eq(dst[0], src[0], 16);
	ck_assert_uint_eq(p.qp[0]->stats.rtt_samples, 2);
	ck_assert_uint_eq(p.qp[0]->comp.srtt_ns, 20000);
	ck_assert_uint_eq(p.qp[0]->comp.rttvar_ns, 7500);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, base);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rnr_waits, 1);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(r->overflow, 0);
	pair_down(&p);
	free(r);
}
END_TEST

/* DR_QP_ADAPTIVE_RTO on a link that dies after a warm-up that measured
 * the base 4.096 us * 2^e: the timer doubles from 2^e, the timeouts below
 * the QP's 2^14 resend without counting, then retry_cnt + 1 counted ones
 * at 2^14 .. 2^17 as without the option.  No warm-up: no estimate, the
 * old behaviour exactly (test_dead_link). */
static const struct {
	unsigned warmups;
	uint64_t lat_ns;
	unsigned exp; /* of the base the warm-up measured */
} adead_tab[] = {{0, 0, 14}, {1, 10000, 5}, {1, 100000, 8}};

START_TEST(test_adaptive_dead_link)
{
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	static uint8_t src[10000], dst[16];
	unsigned e = adead_tab[_i].exp, early = 14 - e, tries = early + 4, k, n0, seen = 0;
	uint64_t t0, unit = 4096, frames0;
	uint32_t first;
	struct pair p;

	ck_assert_ptr_nonnull(r);
	c.retry_cnt = 3;
	adaptive_pair_up(&p, &c, r, adead_tab[_i].lat_ns);
	for (k = 0; k < adead_tab[_i].warmups; k++) {
		post_recv(&p, 1, 900 + k, dst, sizeof(dst));
		ck_assert_int_eq(
		    post_send(&p, 0, 50 + k, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED), 0);
		ck_assert(pair_run(&p));
	}
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, adead_tab[_i].warmups ? unit << e : 0);
	first = dr_psn_add(c.psn_a, (int32_t)adead_tab[_i].warmups);
	r->dead = true;
	t0 = p.sim.now_ns;
	n0 = r->n[0];
	frames0 = p.sim.end[0].tx_frames;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, 0, 0, 0), 0);
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_SEND, src, 1, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t0 + (unit << e));
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, adead_tab[_i].warmups + 2);
	expect_wc(&p.sim.end[0].wc[adead_tab[_i].warmups], 1, DR_WC_RETRY_EXC_ERR);
	expect_wc(&p.sim.end[0].wc[adead_tab[_i].warmups + 1], 2, DR_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(p.qp[0]->state, DR_QPS_ERROR);
	/* 2^e + 2^(e+1) + ... + 2^17 */
	ck_assert_uint_eq(p.sim.now_ns - t0, ((1ull << 18) - (1ull << e)) * unit);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, tries);
	ck_assert_uint_eq(p.qp[0]->stats.early_timeouts, early);
	ck_assert_uint_eq(p.qp[0]->stats.retries, 3);
	/* the first try: the 10 WRITE packets and the SEND; each later one,
	 * after a timeout, a probe: the first packet only; the first at
	 * t0 + (2^e + ... + 2^(e+k-1)) */
	uint64_t per_try = 1;

	ck_assert_uint_eq(p.sim.end[0].tx_frames - frames0, 11 + per_try * (tries - 1));
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, per_try * (tries - 1));
	for (k = n0; k < r->n[0]; k++) {
		if (r->f[0][k].psn != first)
			continue;
		ck_assert_uint_eq(r->f[0][k].t - t0, ((1ull << (e + seen)) - (1ull << e)) * unit);
		seen++;
	}
	ck_assert_uint_eq(seen, tries);
	/* each resend halves the window, down to its floor */
	ck_assert_uint_eq(p.qp[0]->stats.cwnd_cuts, tries - 1);
	ck_assert_uint_eq(p.qp[0]->req.cwnd, DR_QP_MIN_CWND);
	ck_assert_uint_eq(r->overflow, 0);
	pair_down(&p);
	free(r);
}
END_TEST

/* ---- the time a dead peer takes, and a peer that moves ----------------------------- */

/* The bound fi_droce(7) states (comp.c dr_comp_rto): a WQE whose peer
 * stops answering fails (T - b) + T * sum(i = 0..R) min(2^i, 2^6) after
 * the last progress, T = 4.096 us * 2^timeout, R = retry_cnt, b the
 * adaptive base (T without one). */
static uint64_t dead_peer_ns(unsigned timeout, uint64_t base, unsigned retry_cnt)
{
	uint64_t t = dr_qp_timeout_ns(timeout), sum = t - base;

	for (unsigned i = 0; i <= retry_cnt; i++)
		sum += t << (i < 6 ? i : 6);
	return sum;
}

/* When path_suspect was called (ops->path_suspect of every pair_up QP). */
#define SUSPECT_MAX 64
static struct {
	unsigned n;
	uint64_t t[SUSPECT_MAX];
} suspects[2];

static void suspect_record(void *ctx, struct dr_qp *qp)
{
	struct dr_sim_end *e = ctx;

	if (suspects[e->idx].n < SUSPECT_MAX)
		suspects[e->idx].t[suspects[e->idx].n] = e->sim->now_ns;
	suspects[e->idx].n++;
}

static bool a_completed(void *arg)
{
	return ((struct pair *)arg)->sim.end[0].nwc > 0;
}

/* The peer dies (every frame lost from then on) and A's WQE fails with
 * retry-exceeded at exactly dead_peer_ns(); the defaults (FI_DROCE_TIMEOUT
 * 14, FI_DROCE_RETRY_CNT 7) give the 191 * 67.108864 ms = 12.817793024 s
 * the man page states (measured with kill -9 between namespaces: 12.9 s).
 * path_suspect comes at each full (not early) timeout from the second on. */
static const struct {
	uint8_t timeout, retry_cnt;
	bool adaptive;
	uint64_t warmup_lat_ns; /* one SEND first to measure the base; 0: none */
	unsigned base_exp;	/* what that measures */
	uint64_t want_ns;	/* the formula, worked out by hand (0: none) */
} dpeer_tab[] = {
    {14, 7, false, 0, 14, 12817793024ull},		/* the defaults: 191 T */
    {14, 7, true, 0, 14, 12817793024ull},		/* adaptive, nothing measured */
    {14, 7, true, 10000, 5, 12817793024ull + 67108864 - 131072}, /* + T - b */
    {14, 7, true, 100000, 8, 12817793024ull + 67108864 - 1048576},
    {14, 0, false, 0, 14, 67108864},	  /* no retry: T */
    {14, 6, false, 0, 14, 127ull * 67108864}, /* below the cap */
    {8, 7, false, 0, 8, 191ull * 1048576},
    {19, 7, false, 0, 19, 191ull * 2147483648ull}, /* rxe's REQ timeout: 410 s */
};

START_TEST(test_dead_peer_time)
{
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	static uint8_t src[10000], dst[16];
	uint64_t t = dr_qp_timeout_ns(dpeer_tab[_i].timeout), base, t0, at;
	unsigned timeouts, early;
	struct pair p;

	ck_assert_ptr_nonnull(r);
	c.timeout = dpeer_tab[_i].timeout;
	c.retry_cnt = dpeer_tab[_i].retry_cnt;
	c.qp_flags[0] = dpeer_tab[_i].adaptive ? DR_QP_ADAPTIVE_RTO : 0;
	c.sim = (struct dr_sim_cfg){
	    .latency_ns = dpeer_tab[_i].warmup_lat_ns, .fault = rec_fault, .fault_arg = r};
	pair_up(&p, &c);
	if (dpeer_tab[_i].warmup_lat_ns) {
		post_recv(&p, 1, 900, dst, sizeof(dst));
		ck_assert_int_eq(post_send(&p, 0, 50, DR_WR_SEND, src, 10, 0, 0, 0, DR_WR_SIGNALED),
				 0);
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(p.sim.end[0].nwc, 1);
		p.sim.end[0].nwc = 0;
	}
	base = dr_qp_timeout_ns(dpeer_tab[_i].base_exp);
	ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, dpeer_tab[_i].warmup_lat_ns ? base : 0);
	ck_assert_uint_eq(dead_peer_ns(c.timeout, base, c.retry_cnt), dpeer_tab[_i].want_ns);
	r->dead = true;
	memset(suspects, 0, sizeof(suspects));
	t0 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, 0, 0, 0), 0);
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_SEND, src, 1, 0, 0, 0, DR_WR_SIGNALED), 0);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, a_completed, &p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 2); /* the failure and the flush, together */
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_RETRY_EXC_ERR);
	expect_wc(&p.sim.end[0].wc[1], 2, DR_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(p.sim.now_ns - t0, dpeer_tab[_i].want_ns);
	ck_assert_uint_eq(p.qp[0]->stats.retries, c.retry_cnt);
	timeouts = p.qp[0]->stats.timeouts;
	early = c.timeout - dpeer_tab[_i].base_exp;
	ck_assert_uint_eq(timeouts, c.retry_cnt + 1u + early);
	ck_assert_uint_eq(p.qp[0]->stats.early_timeouts, early);
	/* suspected at each full timeout from the second timeout on */
	ck_assert_uint_eq(suspects[0].n, c.retry_cnt + (early ? 1u : 0u));
	ck_assert_uint_eq(suspects[1].n, 0);
	at = t0;
	for (unsigned k = 0, n = 0; k < timeouts; k++) {
		uint64_t rto = base << k;

		at += rto < t << 6 ? rto : t << 6;
		if (k >= 1 && rto >= t && n < SUSPECT_MAX)
			ck_assert_uint_eq(suspects[0].t[n++], at);
	}
	ck_assert_uint_eq(at - t0, dpeer_tab[_i].want_ns);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.now_ns - t0, dpeer_tab[_i].want_ns); /* nothing after */
	pair_down(&p);
	free(r);
}
END_TEST

/* ---- the retransmit timer restarted once per burst (DR_QP_DEFER_ACK) ------------- */

/* Four READs of 4 KiB (4 responses each), answered in part: B's first six
 * responses reach A, in one burst 20 us after the posts (10 us each way),
 * then the link dies.  READ 0 completes; READ 1 fails exactly 15 T after
 * that burst (T = 4.096 us * 2^14, retry_cnt 3: 1 + 2 + 4 + 8 T), whether
 * the timer restarts at each response (no flag) or, with DR_QP_DEFER_ACK,
 * once when A flushes the burst (flush_bursts): the same instant.  A
 * caller that never flushes: the deadline armed at the posts (T) stays
 * until it comes due, and dr_qp_tick then restarts the timer from there
 * instead of timing out (no timeout counted at T); READ 1 fails 15 T
 * later, T + 15 T after the posts. */
struct cut {
	const struct dr_sim *sim;
	unsigned pass, seen; /* B's frames let through, and so far */
	uint64_t t_last;     /* when B sent the last of them */
};

static enum dr_sim_action cut_fault(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct cut *c = arg;

	if (c->seen >= c->pass)
		return DR_SIM_DROP;
	if (dir == 1) {
		c->seen++;
		c->t_last = c->sim->now_ns;
	}
	return DR_SIM_PASS;
}

static bool a_six_answered(void *arg)
{
	const struct pair *p = arg;

	return p->qp[0]->comp.psn == dr_psn_add(0xfffff0, 6);
}

static const struct {
	unsigned flags_a;
	bool flush;
} rearm_tab[] = {{0, false}, {DR_QP_DEFER_ACK, true}, {DR_QP_DEFER_ACK, false}};

START_TEST(test_read_rearm)
{
	struct pair_cfg c = pair_defaults();
	static uint8_t src[4 * 4096], dst[4 * 4096];
	uint64_t t = dr_qp_timeout_ns(14), lat = 10000, t_arr;
	struct cut cut = {.pass = 6};
	bool late = rearm_tab[_i].flags_a && !rearm_tab[_i].flush;
	struct dr_mr *rmr;
	struct pair p;
	unsigned i;

	c.timeout = 14;
	c.retry_cnt = 3;
	c.qp_flags[0] = rearm_tab[_i].flags_a;
	c.sim = (struct dr_sim_cfg){.latency_ns = lat,
				    .flush_bursts = rearm_tab[_i].flush,
				    .fault = cut_fault,
				    .fault_arg = &cut};
	pair_up(&p, &c);
	cut.sim = &p.sim;
	ck_assert_uint_eq(c.psn_a, 0xfffff0);
	fill(src, sizeof(src), 13);
	memset(dst, 0, sizeof(dst));
	rmr = reg(&p, 1, src, sizeof(src), DR_ACCESS_REMOTE_READ);
	ck_assert_uint_eq(p.sim.now_ns, 0);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(post_send(&p, 0, i, DR_WR_READ, dst + i * 4096, 4096, 0,
					   (uintptr_t)src + i * 4096, rmr->key, DR_WR_SIGNALED),
				 0);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), t);
	/* the burst of six responses is in (and flushed, with flush_bursts) */
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, a_six_answered, &p));
	t_arr = cut.t_last + lat;
	ck_assert_uint_eq(t_arr, 2 * lat);
	ck_assert_uint_eq(p.sim.now_ns, t_arr);
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	ck_assert_uint_eq(p.qp[0]->comp.rearm_due, late);
	ck_assert(dr_qp_flush_due(p.qp[0]) == late);
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[0]), late ? t : t_arr + t);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 4);
	expect_wc(&p.sim.end[0].wc[0], 0, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[0].wc[1], 1, DR_WC_RETRY_EXC_ERR);
	expect_wc(&p.sim.end[0].wc[2], 2, DR_WC_WR_FLUSH_ERR);
	expect_wc(&p.sim.end[0].wc[3], 3, DR_WC_WR_FLUSH_ERR);
	ck_assert_mem_eq(dst, src, 4096);
	ck_assert_int_eq(p.qp[0]->state, DR_QPS_ERROR);
	ck_assert_uint_eq(p.sim.now_ns, (late ? t : t_arr) + 15 * t);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 4);
	ck_assert_uint_eq(p.qp[0]->stats.retries, 3);
	ck_assert(!p.qp[0]->comp.rearm_due);
	pair_down(&p);
}
END_TEST

/* A peer that moves to another MAC: A's frames go to the old one and are
 * lost until the port has re-probed.  The port is modelled by what
 * dr_port_neigh_suspect does on a live link: from the call, a unicast
 * probe the old MAC never answers, the broadcast after
 * DR_PORT_ARP_PROBE_MS, the new MAC one round trip later.  A's first
 * retransmission after that reaches the peer: with the fixed timer the
 * third (suspected at the second, 3T; 3T + 100 ms < 7T); with the adaptive
 * one (b = T/2^9) the second full one (suspected at the first full one,
 * the 10th timeout at 2T - b; through at 4T - b).  Retries to spare. */
struct move_sched {
	const struct dr_sim *sim;
	uint64_t lat_ns;
	bool moved;
	unsigned dropped;
};

static enum dr_sim_action move_fault(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct move_sched *m = arg;
	uint64_t found;

	if (dir != 0 || !m->moved)
		return DR_SIM_PASS;
	found = suspects[0].n ? suspects[0].t[0] + DR_PORT_ARP_PROBE_MS * 1000000ull +
				    2 * m->lat_ns
			      : UINT64_MAX;
	if (m->sim->now_ns < found) {
		m->dropped++;
		return DR_SIM_DROP;
	}
	return DR_SIM_PASS;
}

static const struct {
	bool adaptive;
	unsigned retries;	 /* counted before it gets through */
	unsigned timeouts;
	unsigned suspects;	 /* path_suspect calls */
	uint64_t suspect_ns;	 /* the first, after the post */
	uint64_t through_ns;	 /* the resend that reaches the new MAC */
	unsigned rtts;		 /* round trips from it to the completion */
} move_tab[] = {
    {false, 3, 3, 2, 3 * 67108864ull, 7 * 67108864ull, 1},
    /* adaptive: each timeout resends a probe (one packet): the probe's
     * ACK, then the rest and its ACK */
    {true, 2, 11, 2, 2 * 67108864ull - 131072, 4 * 67108864ull - 131072, 2},
};

START_TEST(test_peer_moved)
{
	struct pair_cfg c = pair_defaults();
	struct move_sched m = {.lat_ns = 10000};
	static uint8_t src[10000], dst[10000];
	uint64_t t0;
	struct pair p;
	struct dr_mr *mr;

	_Static_assert(3 * 67108864ull + DR_PORT_ARP_PROBE_MS * 1000000ull < 7 * 67108864ull,
		       "the re-probe ends within the timeout after the second");
	c.timeout = 14;
	c.retry_cnt = 7;
	c.qp_flags[0] = move_tab[_i].adaptive ? DR_QP_ADAPTIVE_RTO : 0;
	c.sim = (struct dr_sim_cfg){.latency_ns = m.lat_ns, .fault = move_fault, .fault_arg = &m};
	pair_up(&p, &c);
	m.sim = &p.sim;
	fill(src, sizeof(src), 77);
	mr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE);
	if (move_tab[_i].adaptive) {
		/* measure the round trip: base 2^5 */
		ck_assert_int_eq(post_send(&p, 0, 50, DR_WR_WRITE, src, 10, 0, (uintptr_t)dst,
					   mr->key, DR_WR_SIGNALED),
				 0);
		ck_assert(pair_run(&p));
		ck_assert_uint_eq(p.qp[0]->comp.rto_base_ns, 131072);
		p.sim.end[0].nwc = 0;
	}
	memset(suspects, 0, sizeof(suspects));
	m.moved = true;
	t0 = p.sim.now_ns;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, a_completed, &p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert_mem_eq(dst, src, sizeof(src));
	ck_assert_uint_ge(suspects[0].n, 1);
	ck_assert_uint_eq(suspects[0].t[0] - t0, move_tab[_i].suspect_ns);
	/* the resend at through_ns, its ACK a round trip later */
	ck_assert_uint_eq(p.sim.now_ns - t0,
			  move_tab[_i].through_ns + 2 * m.lat_ns * move_tab[_i].rtts);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, move_tab[_i].timeouts);
	ck_assert_uint_eq(p.qp[0]->stats.retries, move_tab[_i].retries);
	ck_assert_uint_eq(suspects[0].n, move_tab[_i].suspects);
	/* every packet of each try that went to the old MAC: all 10 at
	 * first, then all 10 again or, once probes, one */
	ck_assert_uint_eq(m.dropped, 10 + (move_tab[_i].timeouts - 1) * (move_tab[_i].adaptive ? 1 : 10));
	ck_assert(pair_run(&p));
	pair_down(&p);
}
END_TEST

/* The loss window: one packet of a 512-packet WRITE lost.  No
 * serialisation and 10 us each way, so the window alone paces A: rounds of
 * 128 PSNs every 20 us.  Round 2 loses PSN +300; B NAKs it, A halves
 * the window to 64 and resends 300..363 (AckReq every 32), then the window
 * grows by one per ACK.  The fault callback checks every packet A sends
 * against A's window and the AckReq spacing. */
#define CW_PKTS 512
#define CW_DROP 300

struct cwnd_sched {
	struct wire_rec rec; /* first: rec_fault's arg */
	struct dr_qp *a;
	uint32_t start;
	bool resending;
	uint32_t cwnd_at_resend;
	unsigned run; /* packets since the last AckReq */
	int32_t max_out;
	unsigned over_window, over_ackreq;
};

static enum dr_sim_action cwnd_fault(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct cwnd_sched *s = arg;
	bool drop_pending = s->rec.drop_on;
	enum dr_sim_action act = rec_fault(&s->rec, dir, n, pkt);
	int32_t out;

	if (dir != 0 || !s->a)
		return act;
	if (!s->resending && !drop_pending && pkt->psn == s->rec.drop_psn) {
		/* the go-back-N resend starts: the window was just cut, the
		 * AckReq count starts afresh */
		s->resending = true;
		s->cwnd_at_resend = s->a->req.cwnd;
		s->run = 0;
	}
	/* PSNs unacknowledged once this one is out */
	out = dr_psn_diff(pkt->psn, s->a->comp.psn) + 1;
	if (out > (int32_t)s->a->req.cwnd)
		s->over_window++;
	if (s->resending && out > s->max_out)
		s->max_out = out;
	if (pkt->ackreq) {
		s->run = 0;
	} else if (++s->run >= s->a->req.cwnd / 2 || s->run >= DR_QP_MAX_PKT_PER_ACK) {
		s->over_ackreq++;
	}
	return act;
}

START_TEST(test_cwnd_loss)
{
	struct pair_cfg c = pair_defaults();
	struct cwnd_sched *s = calloc(1, sizeof(*s));
	uint32_t len = CW_PKTS * 1024;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	uint64_t lat = 10000;
	/* A's bursts: at 2kL, from PSN +first, count packets */
	static const struct {
		unsigned t, first, count;
	} burst[] = {{0, 0, 128},   {2, 128, 128}, {4, 256, 128}, {6, 300, 64},
		     {8, 364, 66}, {10, 430, 67}, {12, 497, 15}};
	static const unsigned ackreq_at[] = {63, 127, 191, 255, 319, 383, 331, 363,
					     395, 428, 461, 495, 511};
	unsigned i, b, k, nack = 0, acks_after_nak = 0;
	bool nak_seen = false;
	struct pair p;

	ck_assert_ptr_nonnull(s);
	c.sim = (struct dr_sim_cfg){.latency_ns = lat, .fault = cwnd_fault, .fault_arg = s};
	pair_up(&p, &c);
	s->rec.sim = &p.sim;
	s->a = p.qp[0];
	s->start = c.psn_a;
	s->rec.drop_on = true;
	s->rec.drop_psn = dr_psn_add(c.psn_a, CW_DROP);
	ck_assert_uint_eq(p.qp[0]->req.cwnd, DR_QP_MAX_UNACKED_PSNS);
	fill(src, len, 123);
	post_write_to_b(&p, src, dst, len, DR_WR_SIGNALED);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, len) == 0);
	ck_assert_uint_eq(s->rec.overflow, 0);
	ck_assert(!s->rec.drop_on);

	/* one loss, one NAK, one go-back-N, one cut: exactly half */
	ck_assert(s->resending);
	ck_assert_uint_eq(s->cwnd_at_resend, DR_QP_MAX_UNACKED_PSNS / 2);
	ck_assert_uint_eq(p.qp[0]->stats.cwnd_cuts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rx_seq_naks, 1);
	ck_assert_uint_eq(p.qp[0]->stats.retries, 1);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.qp[1]->stats.tx_seq_naks, 1);
	/* never more than the window unacknowledged, AckReq every cwnd/2 */
	ck_assert_uint_eq(s->over_window, 0);
	ck_assert_uint_eq(s->over_ackreq, 0);
	ck_assert_int_eq(s->max_out, 68);
	/* the bursts, from the wire */
	k = 0;
	for (b = 0; b < sizeof(burst) / sizeof(burst[0]); b++) {
		for (i = 0; i < burst[b].count; i++, k++) {
			const struct wire_frame *f = &s->rec.f[0][k];

			ck_assert_msg(k < s->rec.n[0], "only %u frames", s->rec.n[0]);
			ck_assert_msg(f->t == burst[b].t * lat &&
					  f->psn == dr_psn_add(c.psn_a, (int32_t)(burst[b].first + i)),
				      "frame %u: psn +%d at %llu ns, expected +%u at %llu", k,
				      dr_psn_diff(f->psn, c.psn_a), (unsigned long long)f->t,
				      burst[b].first + i, (unsigned long long)burst[b].t * lat);
		}
	}
	ck_assert_uint_eq(s->rec.n[0], k);
	ck_assert_uint_eq(k, CW_PKTS + (3 * 128 - CW_DROP));
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 3 * 128 - CW_DROP);
	/* AckReq exactly where the window puts it */
	for (i = 0, k = 0; i < s->rec.n[0]; i++) {
		if (!s->rec.f[0][i].ackreq)
			continue;
		ck_assert_msg(k < sizeof(ackreq_at) / sizeof(ackreq_at[0]), "extra AckReq psn +%d",
			      dr_psn_diff(s->rec.f[0][i].psn, c.psn_a));
		ck_assert_msg(s->rec.f[0][i].psn == dr_psn_add(c.psn_a, (int32_t)ackreq_at[k]),
			      "AckReq %u at psn +%d, expected +%u", k,
			      dr_psn_diff(s->rec.f[0][i].psn, c.psn_a), ackreq_at[k]);
		k++;
	}
	ck_assert_uint_eq(k, sizeof(ackreq_at) / sizeof(ackreq_at[0]));
	/* B: an ACK per AckReq it accepted, the NAK; each ACK after the NAK
	 * opened the window by one */
	for (i = 0; i < s->rec.n[1]; i++) {
		const struct wire_frame *f = &s->rec.f[1][i];

		ck_assert_int_eq(f->op, DR_OP_ACK);
		if (f->syn == DR_AETH_NAK_PSN_SEQ) {
			ck_assert_uint_eq(f->psn, s->rec.drop_psn);
			nak_seen = true;
			continue;
		}
		ck_assert_uint_eq(f->syn, DR_AETH_ACK_UNLIMITED);
		nack++;
		if (nak_seen)
			acks_after_nak++;
	}
	ck_assert(nak_seen);
	ck_assert_uint_eq(nack, 11);
	ck_assert_uint_eq(acks_after_nak, 7);
	ck_assert_uint_eq(p.qp[0]->req.cwnd, DR_QP_MAX_UNACKED_PSNS / 2 + acks_after_nak);
	/* B dropped what followed the gap until the resend: +302..+383 */
	ck_assert_uint_eq(p.qp[1]->stats.rx_dropped, 3 * 128 - CW_DROP - 2);
	ck_assert_uint_eq(p.sim.now_ns, 14 * lat);
	ck_assert_uint_eq(rops[1].n, 1);
	expect_rop(1, 0, DR_REMOTE_WRITE, DR_WC_SUCCESS, len);
	pair_down(&p);
	free(src);
	free(dst);
	free(s);
}
END_TEST

/* ---- max_window: a port's cap on PSNs in flight (dr_port_max_window) ---------------- */

/* The PSNs A has unacknowledged, from the frames alone: each request frame
 * A sends takes its PSN (a READ request one per response it asks for); A
 * learns of acknowledgements as B's frames reach it (dr_sim_cfg.deliver):
 * an ACK or a READ response with an AETH acknowledges its PSN, a sequence
 * NAK the PSNs before its own, a READ response without one (MIDDLE) its
 * PSN if it is the next due.  Exact on a lossless link. */
struct win_rec {
	uint32_t pmtu;
	uint32_t acked; /* the first PSN A has not seen acknowledged */
	int32_t max_out;
	unsigned req_frames;
};

static enum dr_sim_action win_fault(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct win_rec *w = arg;
	uint32_t span = 1;
	int32_t out;

	if (dir != 0)
		return DR_SIM_PASS;
	if (pkt->op->flags & DR_OPF_READ) {
		uint32_t len = ntohl(dr_pkt_reth(pkt)->len);

		span = len ? (len + w->pmtu - 1) / w->pmtu : 1;
	}
	out = dr_psn_diff(dr_psn_add(pkt->psn, (int32_t)span), w->acked);
	if (out > w->max_out)
		w->max_out = out;
	w->req_frames++;
	return DR_SIM_PASS;
}

static void win_deliver(void *arg, unsigned dir, const struct dr_pkt *pkt)
{
	struct win_rec *w = arg;
	const struct dr_aeth *aeth = dr_pkt_aeth(pkt);
	uint32_t next;

	if (dir != 1)
		return;
	if (aeth && (dr_aeth_syndrome(aeth) & DR_AETH_TYPE_MASK) == DR_AETH_ACK)
		next = dr_psn_add(pkt->psn, 1);
	else if (aeth && dr_aeth_syndrome(aeth) == DR_AETH_NAK_PSN_SEQ)
		next = pkt->psn;
	else if (!aeth && pkt->psn == w->acked)
		next = dr_psn_add(pkt->psn, 1);
	else
		return;
	if (dr_psn_diff(next, w->acked) > 0)
		w->acked = next;
}

/* 1 MiB at path MTU 1024 (1,024 PSNs) over a link of 100 us each way, which
 * a window of 128 PSNs does not fill: the window alone limits what is in
 * flight.  max_window 0 is the engine's 128.  A READ asks in requests of
 * DR_QP_READ_CHUNK = 126 responses, at most two outstanding, the second
 * only once its responses fit twice the window beside what is in flight:
 * nine requests (the last of 16), two at once.  With a smaller max_window
 * (af_xdp's 64, or 100) requests of max_window, within the window: one at
 * a time, eleven of 100 or sixteen of 64. */
static const struct {
	enum dr_wr_opcode op;
	uint32_t max_window;
	int32_t max_out;     /* the most PSNs ever unacknowledged */
	unsigned at_zero;    /* request frames sent at t = 0 */
	unsigned req_frames; /* request frames in all: no resend */
	uint32_t chunk;	     /* READ: responses a request asks for */
	size_t reports;	     /* remote ops the responder reports */
} mw_tab[] = {
    {DR_WR_WRITE, 0, 128, 128, 1024, 0, 1},
    {DR_WR_WRITE, 128, 128, 128, 1024, 0, 1},
    {DR_WR_WRITE, 100, 100, 100, 1024, 0, 1},
    {DR_WR_WRITE, 64, 64, 64, 1024, 0, 1},
    {DR_WR_READ, 0, 252, 2, 9, 126, 1},
    {DR_WR_READ, 128, 252, 2, 9, 126, 1},
    /* requests of a size the responder does not know as droce's (no port
     * makes it: af_xdp's is 64) are reported one by one */
    {DR_WR_READ, 100, 100, 1, 11, 100, 11},
    {DR_WR_READ, 64, 64, 1, 16, 64, 1},
};

START_TEST(test_max_window)
{
	struct pair_cfg c = pair_defaults();
	struct win_rec w = {.pmtu = 1024};
	uint32_t len = 1u << 20;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	struct dr_mr *mr;
	struct pair p;

	c.sim.latency_ns = 100000;
	c.sim.fault = win_fault;
	c.sim.deliver = win_deliver;
	c.sim.fault_arg = &w;
	c.timeout = 12;
	c.max_window[0] = mw_tab[_i].max_window;
	w.acked = c.psn_a;
	pair_up(&p, &c);
	fill(src, len, 4242);
	if (mw_tab[_i].op == DR_WR_WRITE) {
		post_write_to_b(&p, src, dst, len, DR_WR_SIGNALED);
	} else {
		mr = reg(&p, 1, src, len, DR_ACCESS_REMOTE_READ);
		ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_READ, dst, len, 0, (uintptr_t)src,
					   mr->key, DR_WR_SIGNALED),
				 0);
	}
	/* at t = 0 exactly the window went out (READ: whole requests) */
	ck_assert_uint_eq(w.req_frames, mw_tab[_i].at_zero);
	ck_assert_int_eq(w.max_out, mw_tab[_i].op == DR_WR_READ
					? (int32_t)(mw_tab[_i].at_zero * mw_tab[_i].chunk)
					: (int32_t)mw_tab[_i].at_zero);
	ck_assert_int_eq(p.qp[0]->req.state, DR_REQ_WAIT_WINDOW);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, len) == 0);
	/* never more than the window, and the window was used */
	ck_assert_int_eq(w.max_out, mw_tab[_i].max_out);
	ck_assert_uint_eq(w.req_frames, mw_tab[_i].req_frames);
	ck_assert_uint_eq(p.sim.end[0].tx_frames, mw_tab[_i].req_frames);
	/* a READ of several requests once, with the first one's length */
	ck_assert_uint_eq(rops[1].n, mw_tab[_i].reports);
	expect_rop(1, 0, mw_tab[_i].op == DR_WR_READ ? DR_REMOTE_READ : DR_REMOTE_WRITE,
		   DR_WC_SUCCESS, mw_tab[_i].op == DR_WR_READ ? mw_tab[_i].chunk * 1024u : len);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert(w.acked == dr_psn_add(c.psn_a, 1024));
	pair_down(&p);
	free(src);
	free(dst);
}
END_TEST

/* READs back to back, each where the last ended (path MTU 1024): the
 * responder reports each once, its requests being one run of one size.
 * 0: 190 packets (requests of 126 and 64) then 126 (one of 126): two
 * reports, the second READ not taken for the first one's continuation
 * though its first request is a whole chunk and adjacent.  1: the same
 * with the window cut to 16 when the first starts (after losses, or a
 * congestion-controlled start): that READ asks in requests of 64 (three:
 * 64, 64, 62), the next one, started once the window has grown back, in
 * 126; still two reports. */
START_TEST(test_read_runs)
{
	struct pair_cfg c = pair_defaults();
	const uint32_t n1 = 190, n2 = 126, len = (n1 + n2) * 1024;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	struct dr_mr *mr;
	struct pair p;

	pair_up(&p, &c);
	fill(src, len, 9191);
	mr = reg(&p, 1, src, len, DR_ACCESS_REMOTE_READ);
	if (_i)
		p.qp[0]->req.cwnd = 16;
	ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_READ, dst, n1 * 1024, 0, (uintptr_t)src, mr->key,
				   DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].tx_frames, _i ? 3 : 2);
	if (_i)
		ck_assert_uint_ge(p.qp[0]->req.cwnd, DR_QP_READ_CHUNK / 2);
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_READ, dst + n1 * 1024, n2 * 1024, 0,
				   (uintptr_t)src + n1 * 1024, mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].tx_frames, (_i ? 3 : 2) + 1);
	ck_assert_uint_eq(p.sim.end[0].nwc, 2);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	expect_wc(&p.sim.end[0].wc[1], 2, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, len) == 0);
	ck_assert_uint_eq(rops[1].n, 2);
	expect_rop(1, 0, DR_REMOTE_READ, DR_WC_SUCCESS, (_i ? 64u : 126u) * 1024);
	expect_rop(1, 1, DR_REMOTE_READ, DR_WC_SUCCESS, n2 * 1024);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	pair_down(&p);
	free(src);
	free(dst);
}
END_TEST

/* max_window: 0, or DR_QP_WINDOW_MIN to the
 * engine's own window; dr_qp_create refuses the rest. */
START_TEST(test_max_window_bounds)
{
	static const struct {
		uint32_t max_window;
		bool ok;
	} tab[] = {
	    {0, true},
	    {1, false},
	    {DR_QP_WINDOW_MIN - 1, false},
	    {DR_QP_WINDOW_MIN, true},
	    {100, true},
	    {DR_QP_MAX_UNACKED_PSNS, true},
	    {DR_QP_MAX_UNACKED_PSNS + 1, false},
	    {1u << 24, false},
	};
	struct dr_mr_table mrt;
	struct dr_sim sim;
	struct dr_sim_cfg cfg = {0};
	unsigned i;

	dr_sim_init(&sim, &cfg);
	ck_assert_int_eq(dr_mr_table_init(&mrt, 4), 0);
	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		struct dr_qp_init_attr ia = {
		    .qpn = QPN_A,
		    .max_send_wr = 4,
		    .max_recv_wr = 4,
		    .mrt = &mrt,
		    .ops = &dr_sim_qp_ops,
		    .ctx = &sim.end[0],
		    .max_window = tab[i].max_window,
		};
		struct dr_qp *qp = dr_qp_create(&ia);

		ck_assert_msg(!!qp == tab[i].ok, "max_window %u: %s", tab[i].max_window,
			      qp ? "taken" : "refused");
		if (qp)
			ck_assert_uint_eq(qp->max_window, tab[i].max_window
							      ? tab[i].max_window
							      : DR_QP_MAX_UNACKED_PSNS);
		dr_qp_destroy(qp);
	}
	dr_mr_table_fini(&mrt);
	dr_sim_fini(&sim);
}
END_TEST

/* dr_qp_set_ack_pkts (what src/fi asks for on a packet: port that sends a
 * QP's runs as UDP GSO super-frames, 62 packets of 1024 B each): a WRITE
 * of 200 packets carries AckReq exactly on every 62nd and on its last, B
 * answers each, the data lands; out-of-range values are refused, 0 gives
 * back the default of 64. */
START_TEST(test_ack_pkts)
{
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	uint32_t len = 200 * 1024;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	static const unsigned ackreq_at[] = {61, 123, 185, 199};
	unsigned i, k = 0, acks = 0;
	struct pair p;

	ck_assert_ptr_nonnull(r);
	rec_pair_up(&p, &c, r, 10000);
	ck_assert_uint_eq(p.qp[0]->ack_pkts, DR_QP_ACK_PKTS_MAX);
	ck_assert_int_eq(dr_qp_set_ack_pkts(p.qp[0], DR_QP_ACK_PKTS_MAX + 1), -EINVAL);
	ck_assert_int_eq(dr_qp_set_ack_pkts(p.qp[0], 0), 0);
	ck_assert_uint_eq(p.qp[0]->ack_pkts, DR_QP_ACK_PKTS_MAX);
	ck_assert_int_eq(dr_qp_set_ack_pkts(p.qp[0], 62), 0);
	fill(src, len, 77);
	post_write_to_b(&p, src, dst, len, DR_WR_SIGNALED);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, len) == 0);
	ck_assert_uint_eq(r->overflow, 0);
	ck_assert_uint_eq(r->n[0], 200);
	for (i = 0; i < r->n[0]; i++) {
		ck_assert_uint_eq(r->f[0][i].psn, dr_psn_add(c.psn_a, (int32_t)i));
		if (!r->f[0][i].ackreq)
			continue;
		ck_assert_msg(k < sizeof(ackreq_at) / sizeof(ackreq_at[0]), "extra AckReq at +%u",
			      i);
		ck_assert_msg(i == ackreq_at[k], "AckReq %u at +%u, expected +%u", k, i,
			      ackreq_at[k]);
		k++;
	}
	ck_assert_uint_eq(k, sizeof(ackreq_at) / sizeof(ackreq_at[0]));
	for (i = 0; i < r->n[1]; i++) {
		ck_assert_int_eq(r->f[1][i].op, DR_OP_ACK);
		ck_assert_uint_eq(r->f[1][i].syn, DR_AETH_ACK_UNLIMITED);
		acks++;
	}
	ck_assert_uint_eq(acks, sizeof(ackreq_at) / sizeof(ackreq_at[0]));
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	pair_down(&p);
	free(src);
	free(dst);
	free(r);
}
END_TEST

/* ---- ACKs unasked (dr_qp_set_lazy_ack, docs/protocol.md B.2, B.3) --------------------------- */

/* A posts one SEND of 10 bytes (wr_id i, slot i) with these flags; B
 * receives it into its slot i. */
static void lazy_send(struct pair *p, unsigned i, uint8_t (*src)[16], uint8_t (*dst)[16],
		      unsigned flags)
{
	post_recv(p, 1, 900 + i, dst[i], sizeof(dst[i]));
	fill(src[i], sizeof(src[i]), i + 5);
	ck_assert_int_eq(post_send(p, 0, i, DR_WR_SEND, src[i], 10, 0, 0, 0, flags), 0);
}

/* Everything A posted so far completed once, in order, successfully, with
 * its data in B's receive; no timeout, no resend. */
static void lazy_all_done(struct pair *p, unsigned n, uint8_t (*src)[16], uint8_t (*dst)[16])
{
	unsigned i;

	ck_assert_uint_eq(p->sim.end[0].nwc, n);
	ck_assert_uint_eq(p->sim.end[1].nwc, n);
	for (i = 0; i < n; i++) {
		expect_wc(&p->sim.end[0].wc[i], i, DR_WC_SUCCESS);
		expect_wc(&p->sim.end[1].wc[i], 900 + i, DR_WC_SUCCESS);
		ck_assert(memcmp(dst[i], src[i], 10) == 0);
	}
	ck_assert_uint_eq(p->qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p->qp[0]->stats.tx_resent_pkts, 0);
}

/* Both ends acknowledge unasked.  An unwaited SEND's only packet leaves
 * without AckReq, and the responder acknowledges it DR_QP_LAZY_ACK_NS after
 * it arrived, or at once when DR_QP_LAZY_RIPE_NS have passed and the caller is about
 * to send (dr_qp_ack_ripen); a waited SEND asks, and is answered at once; so
 * are unwaited ones beyond DR_QP_LAZY_WRS outstanding, and every one to a
 * peer that does not acknowledge unasked or with a timeout below four lazy
 * delays.  A lazy ACK held when the responder fails is never sent.  _i 0:
 * no DR_QP_DEFER_ACK (the lazy ACK leaves from the timer), 1: with it, each
 * end flushing after its bursts and timers (the provider's way). */
START_TEST(test_lazy_ack)
{
	bool defer = _i;
	struct pair_cfg c = pair_defaults();
	struct wire_rec *r = calloc(1, sizeof(*r));
	static uint8_t src[32][16], dst[32][16];
	const uint64_t lat = 2000, d = DR_QP_LAZY_ACK_NS;
	const unsigned uw = DR_WR_SIGNALED | DR_WR_UNWAITED;
	struct pair p;
	struct until u = {&p, 0};
	uint64_t t;
	unsigned i, n;

	ck_assert_ptr_nonnull(r);
	c.qp_flags[0] = c.qp_flags[1] = defer ? DR_QP_DEFER_ACK : 0;
	c.sim = (struct dr_sim_cfg){
	    .latency_ns = lat, .flush_bursts = defer, .fault = rec_fault, .fault_arg = r};
	pair_up(&p, &c);
	r->sim = &p.sim;
	dr_qp_set_lazy_ack(p.qp[0], true);
	dr_qp_set_lazy_ack(p.qp[1], true);

	/* three unwaited SENDs: none asks; B holds one ACK for them */
	for (i = 0; i < 3; i++)
		lazy_send(&p, i, src, dst, uw);
	u.psn = dr_psn_add(c.psn_a, 3);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_reached, &u));
	ck_assert_uint_eq(p.sim.now_ns, lat);
	ck_assert_uint_eq(r->n[0], 3);
	for (i = 0; i < 3; i++) {
		expect_frame(r, 0, i, DR_OP_SEND_ONLY, dr_psn_add(c.psn_a, (int32_t)i), -1, 0);
		ck_assert(!r->f[0][i].ackreq);
	}
	ck_assert_uint_eq(p.qp[0]->stats.unasked_ends, 3);
	ck_assert_uint_eq(r->n[1], 0);
	ck_assert(!dr_qp_flush_due(p.qp[1]));
	ck_assert_uint_eq(dr_qp_deadline_ns(p.qp[1]), lat + d);
	/* ... and sends it when its delay is over: one ACK for the three */
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(r->n[1], 1);
	expect_frame(r, 1, 0, DR_OP_ACK, dr_psn_add(c.psn_a, 2), 3, DR_AETH_ACK_UNLIMITED);
	ck_assert_uint_eq(r->f[1][0].t, lat + d);
	ck_assert_uint_eq(p.qp[1]->stats.tx_unasked_acks, 1);
	ck_assert_uint_eq(p.sim.end[0].wc[2].wr_id, 2);
	lazy_all_done(&p, 3, src, dst);

	/* a waited SEND asks, and is answered at once */
	t = p.sim.now_ns;
	lazy_send(&p, 3, src, dst, DR_WR_SIGNALED);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(r->n[0], 4);
	ck_assert(r->f[0][3].ackreq);
	ck_assert_uint_eq(r->n[1], 2);
	expect_frame(r, 1, 1, DR_OP_ACK, dr_psn_add(c.psn_a, 3), 4, DR_AETH_ACK_UNLIMITED);
	ck_assert_uint_eq(r->f[1][1].t, t + lat);
	ck_assert_uint_eq(p.qp[1]->stats.tx_unasked_acks, 1);
	lazy_all_done(&p, 4, src, dst);

	/* ten unwaited SENDs at once: the first DR_QP_LAZY_WRS go unasked,
	 * then each asks (one ACK each, or one for the burst with
	 * DR_QP_DEFER_ACK), at once */
	t = p.sim.now_ns;
	for (i = 4; i < 14; i++)
		lazy_send(&p, i, src, dst, uw);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(r->n[0], 14);
	for (i = 4; i < 14; i++)
		ck_assert_uint_eq(r->f[0][i].ackreq, i - 4 >= DR_QP_LAZY_WRS);
	n = defer ? 3 : 4;
	ck_assert_uint_eq(r->n[1], n);
	if (!defer)
		expect_frame(r, 1, 2, DR_OP_ACK, dr_psn_add(c.psn_a, 12), 13,
			     DR_AETH_ACK_UNLIMITED);
	expect_frame(r, 1, n - 1, DR_OP_ACK, dr_psn_add(c.psn_a, 13), 14, DR_AETH_ACK_UNLIMITED);
	ck_assert_uint_eq(r->f[1][n - 1].t, t + lat);
	ck_assert_uint_eq(p.qp[1]->stats.tx_unasked_acks, 1);
	lazy_all_done(&p, 14, src, dst);

	/* ripening: not before DR_QP_LAZY_RIPE_NS; from then on the ACK goes
	 * with the caller's next flush */
	t = p.sim.now_ns;
	lazy_send(&p, 14, src, dst, uw);
	ck_assert(!dr_sim_run(&p.sim, t + lat + DR_QP_LAZY_RIPE_NS - 1, NULL, NULL));
	ck_assert(!dr_qp_ack_ripen(p.qp[1]));
	ck_assert(!dr_qp_flush_due(p.qp[1]));
	ck_assert(!dr_sim_run(&p.sim, t + lat + DR_QP_LAZY_RIPE_NS, NULL, NULL));
	ck_assert(dr_qp_ack_ripen(p.qp[1]));
	ck_assert(dr_qp_flush_due(p.qp[1]));
	dr_qp_flush(p.qp[1]);
	ck_assert_uint_eq(r->n[1], n + 1);
	expect_frame(r, 1, n, DR_OP_ACK, dr_psn_add(c.psn_a, 14), 15, DR_AETH_ACK_UNLIMITED);
	ck_assert_uint_eq(r->f[1][n].t, t + lat + DR_QP_LAZY_RIPE_NS);
	ck_assert_uint_eq(p.qp[1]->stats.tx_unasked_acks, 2);
	ck_assert(pair_run(&p)); /* and nothing more when the delay is over */
	ck_assert_uint_eq(r->n[1], n + 1);
	lazy_all_done(&p, 15, src, dst);

	/* a timeout below four lazy delays, or a peer that does not
	 * acknowledge unasked: every end asks */
	p.qp[0]->attr.timeout = 4; /* 65.5 us */
	lazy_send(&p, 15, src, dst, uw);
	p.qp[0]->attr.timeout = c.timeout;
	dr_qp_set_lazy_ack(p.qp[0], false);
	lazy_send(&p, 16, src, dst, uw);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(r->n[0], 17);
	ck_assert(r->f[0][15].ackreq);
	ck_assert(r->f[0][16].ackreq);
	ck_assert_uint_eq(p.qp[0]->stats.unasked_ends, 3 + DR_QP_LAZY_WRS + 1);
	lazy_all_done(&p, 17, src, dst);

	/* B fails with a lazy ACK held: it never leaves; A's SEND runs out
	 * of retries */
	dr_qp_set_lazy_ack(p.qp[0], true);
	n = r->n[1];
	lazy_send(&p, 17, src, dst, uw);
	u.psn = dr_psn_add(c.psn_a, 18);
	ck_assert(dr_sim_run(&p.sim, LIMIT_NS, b_reached, &u));
	ck_assert(p.qp[1]->resp.ack_lazy);
	dr_qp_error(p.qp[1], "test");
	ck_assert(!p.qp[1]->resp.ack_lazy);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(r->n[1], n);
	ck_assert_uint_eq(p.sim.end[0].nwc, 18);
	expect_wc(&p.sim.end[0].wc[17], 17, DR_WC_RETRY_EXC_ERR);
	ck_assert_uint_eq(r->overflow, 0);
	pair_down(&p);
	free(r);
}
END_TEST

/* ---- READ depth (IRD/ORD, docs/protocol.md B.8) ------------------------------------------ */

/* RD_DEPTH_N one-packet READs (1 KiB at path MTU 1024) posted at once, over
 * a link of 1 ms each way: nothing is answered while they are posted.  The
 * requester stops at whichever comes first, its ORD (one token a READ) or
 * the window (one PSN a READ).  With droce's own depth, DR_QP_RD_DEPTH,
 * which src/fi offers and asks for in the CM, the window stops it, at the
 * same count as one-packet WRITEs (test_max_window): a READ window is as
 * deep as a WRITE window.  Every READ is then answered once, from a
 * responder with as many resources (IRD), none resent. */
#define RD_DEPTH_N 160

static const struct {
	uint8_t depth;		/* ORD of A, IRD of B */
	uint32_t max_window;	/* A's; 0: the engine's 128 */
	unsigned at_zero;	/* READ requests sent at t = 0 */
	enum dr_req_state stop; /* what stops the requester then */
} rdd_tab[] = {
    {16, 0, 16, DR_REQ_WAIT_ORD}, /* the depth droce had: ORD stops it */
    {64, 0, 64, DR_REQ_WAIT_ORD},
    /* both run out together: 128 tokens, 128 PSNs */
    {DR_QP_RD_DEPTH, 0, DR_QP_MAX_UNACKED_PSNS, DR_REQ_WAIT_ORD},
    /* a smaller window (af_xdp's 64, or 100) stops it before the ORD */
    {DR_QP_RD_DEPTH, 100, 100, DR_REQ_WAIT_WINDOW},
    {DR_QP_RD_DEPTH, 64, 64, DR_REQ_WAIT_WINDOW},
};

START_TEST(test_read_depth)
{
	struct pair_cfg c = pair_defaults();
	uint32_t len = RD_DEPTH_N * 1024;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	struct dr_mr *mr;
	struct pair p;
	unsigned i;

	ck_assert_uint_eq(DR_QP_RD_DEPTH, DR_QP_MAX_UNACKED_PSNS);
	c.sim.latency_ns = 1000000;
	c.timeout = 14; /* 67 ms: round trips of 2 ms never time out */
	c.ord = c.ird = rdd_tab[_i].depth;
	c.max_window[0] = rdd_tab[_i].max_window;
	pair_up(&p, &c);
	fill(src, len, 7070);
	mr = reg(&p, 1, src, len, DR_ACCESS_REMOTE_READ);
	for (i = 0; i < RD_DEPTH_N; i++)
		ck_assert_int_eq(post_send(&p, 0, i, DR_WR_READ, dst + i * 1024, 1024, 0,
					   (uintptr_t)src + i * 1024, mr->key, DR_WR_SIGNALED),
				 0);
	ck_assert_uint_eq(p.sim.end[0].tx_frames, rdd_tab[_i].at_zero);
	ck_assert_uint_eq(p.qp[0]->req.ord_used, rdd_tab[_i].at_zero);
	ck_assert_int_eq(p.qp[0]->req.state, rdd_tab[_i].stop);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.sim.end[0].nwc, RD_DEPTH_N);
	for (i = 0; i < RD_DEPTH_N; i++)
		expect_wc(&p.sim.end[0].wc[i], i, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, len) == 0);
	/* one request and one response a READ: nothing resent or replayed */
	ck_assert_uint_eq(p.sim.end[0].tx_frames, RD_DEPTH_N);
	ck_assert_uint_eq(p.qp[1]->stats.tx_read_rsps, RD_DEPTH_N);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs, 0);
	ck_assert_uint_eq(p.qp[0]->req.ord_used, 0);
	pair_down(&p);
	free(src);
	free(dst);
}
END_TEST

/* ---- go-back-N under receive-ring overrun (dr_sim_cfg.rx_ring) ------------------------ */

/* Each end receives through a ring of D descriptors that it drains one
 * frame per 5 us, behind a 10 Gb/s link that brings a 1 KiB frame every
 * 0.88 us: a burst of the window overruns the ring, as af_xdp's and
 * af_packet's rings overrun when the poll loop falls behind.  With D = 4
 * and 12 every burst loses frames; with D = 100 only a window of more than
 * about 120 PSNs does.  Whatever is lost -- in the middle of a burst (a
 * sequence NAK, or a READ response out of order, tells) or at its tail
 * (only the timer tells) -- go-back-N must recover it, with the fixed
 * retransmit timer and with DR_QP_ADAPTIVE_RTO. */
static const unsigned ro_depths[] = {4, 12, 100};
#define RO_NDEPTH (sizeof(ro_depths) / sizeof(ro_depths[0]))

START_TEST(test_ring_overrun)
{
	unsigned depth = ro_depths[_i % RO_NDEPTH];
	bool read = (_i / RO_NDEPTH) % 2, adaptive = _i / (2 * RO_NDEPTH);
	struct pair_cfg c = pair_defaults();
	uint32_t len = 1u << 20;
	uint8_t *src = malloc(len), *dst = calloc(1, len);
	const struct dr_qp_stats *a, *b;
	struct dr_mr *mr;
	struct pair p;
	size_t i;

	c.sim = (struct dr_sim_cfg){
	    .rate_bps = 10000000000ull, .latency_ns = 10000, .rx_ring = depth, .rx_take_ns = 5000};
	if (adaptive) {
		c.qp_flags[0] = DR_QP_ADAPTIVE_RTO;
		c.timeout = 14;
	}
	pair_up(&p, &c);
	fill(src, len, 1000 + _i);
	if (!read) {
		post_write_to_b(&p, src, dst, len, DR_WR_SIGNALED);
	} else {
		mr = reg(&p, 1, src, len, DR_ACCESS_REMOTE_READ);
		ck_assert_int_eq(post_send(&p, 0, 1, DR_WR_READ, dst, len, 0, (uintptr_t)src,
					   mr->key, DR_WR_SIGNALED),
				 0);
	}
	ck_assert(pair_run(&p));
	a = dr_qp_stats(p.qp[0]);
	b = dr_qp_stats(p.qp[1]);
	/* byte-exact, one successful completion, no error anywhere */
	ck_assert_uint_eq(p.sim.end[0].nwc, 1);
	expect_wc(&p.sim.end[0].wc[0], 1, DR_WC_SUCCESS);
	ck_assert(memcmp(src, dst, len) == 0);
	ck_assert_uint_eq(p.sim.end[1].nwc, 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(dr_qp_state(p.qp[i]), DR_QPS_RTS);
	ck_assert_uint_eq(a->tx_err_naks + a->rx_err_naks + b->tx_err_naks + b->rx_err_naks, 0);
	/* the ring overran where the bulk arrives (B for a WRITE, A for a
	 * READ's responses), never held more than D, and what it dropped was
	 * sent again */
	ck_assert_uint_gt(p.sim.end[read ? 0 : 1].ring_drops, 0);
	for (i = 0; i < 2; i++)
		ck_assert_uint_le(p.sim.end[i].rx_max_waiting, depth);
	ck_assert_uint_eq(p.sim.end[read ? 0 : 1].rx_max_waiting, depth);
	ck_assert_uint_gt(a->tx_resent_pkts, 0);
	ck_assert_uint_gt(a->retries, 0);
	if (read)
		ck_assert_uint_gt(b->tx_read_rsps, 1024);
	else
		ck_assert_uint_gt(a->tx_req_pkts, 1024);
	/* reported once, resends or not (a READ with its first request's
	 * length, struct dr_remote_op) */
	ck_assert_uint_eq(rops[1].n, 1);
	expect_rop(1, 0, read ? DR_REMOTE_READ : DR_REMOTE_WRITE, DR_WC_SUCCESS,
		   read ? DR_QP_READ_CHUNK * 1024 : len);
	if (getenv("DR_TEST_VERBOSE"))
		printf("ring %3u %-5s %-8s: %llu us, drops %llu, resent %llu, retries %llu, "
		       "timeouts %llu, seq NAKs %llu, rsp gaps %llu, cwnd cuts %llu, rtt samples "
		       "%llu\n",
		       depth, read ? "READ" : "WRITE", adaptive ? "adaptive" : "fixed",
		       (unsigned long long)p.sim.now_ns / 1000,
		       (unsigned long long)p.sim.end[read ? 0 : 1].ring_drops,
		       (unsigned long long)a->tx_resent_pkts, (unsigned long long)a->retries,
		       (unsigned long long)a->timeouts, (unsigned long long)a->rx_seq_naks,
		       (unsigned long long)a->rx_rsp_ahead, (unsigned long long)a->cwnd_cuts,
		       (unsigned long long)a->rtt_samples);
	pair_down(&p);
	free(src);
	free(dst);
}
END_TEST

/* ---- receive checks (rxe_recv.c hdr_check, rxe_resp.c check_psn) ----------------- */

#define RX_GUARD 64
#define RX_LEN	 4096

/* B's region with guard bytes either side: nothing outside [buf, buf+len)
 * may ever change, nor anything inside unless a correctly keyed write says so */
struct rx_target {
	uint8_t mem[RX_GUARD + RX_LEN + RX_GUARD];
	uint8_t *buf;
	struct dr_mr *mr;
};

static void rx_target_init(struct pair *p, struct rx_target *t)
{
	memset(t->mem, 0xa5, sizeof(t->mem));
	t->buf = t->mem + RX_GUARD;
	memset(t->buf, 0x11, RX_LEN);
	t->mr = reg(p, 1, t->buf, RX_LEN,
		    DR_ACCESS_REMOTE_WRITE | DR_ACCESS_REMOTE_READ | DR_ACCESS_REMOTE_ATOMIC);
}

/* untouched: guards 0xa5, the region 0x11 */
static void rx_target_check(const struct rx_target *t)
{
	for (size_t i = 0; i < sizeof(t->mem); i++) {
		uint8_t want = i < RX_GUARD || i >= RX_GUARD + RX_LEN ? 0xa5 : 0x11;

		if (t->mem[i] != want)
			ck_abort_msg("byte %zd of the target changed: 0x%02x", (ssize_t)i - RX_GUARD,
				     t->mem[i]);
	}
}

/* A's WRITE_ONLY of 8 bytes of 0xee to the start of the region, at psn,
 * built with the codec as A builds it; the caller spoils it */
static void rx_forge_write(struct pair *p, const struct rx_target *t, struct dr_pkt_desc *d,
			   uint32_t psn)
{
	static const uint8_t payload[8] = {0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee};

	dr_qp_desc(p->qp[0], d, DR_OP_WRITE_ONLY, psn);
	d->ackreq = true;
	d->reth.va = (uintptr_t)t->buf;
	d->reth.rkey = t->mr->key;
	d->reth.len = 8;
	d->payload = payload;
	d->payload_len = 8;
}

static void rx_inject(struct pair *p, const struct dr_pkt_desc *d)
{
	uint8_t frame[512];
	struct dr_pkt pkt;
	int n = dr_pkt_build(d, frame, sizeof(frame));

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &pkt), DR_PKT_OK);
	dr_qp_input(p->qp[1], &pkt);
}

/* A real write of 8 bytes of 0x77 at offset 64 still goes through: the
 * connection was not hurt.  Restores the region's pattern afterwards. */
static void rx_still_works(struct pair *p, struct rx_target *t)
{
	static uint8_t src[8];
	size_t n0 = p->sim.end[0].nwc;

	memset(src, 0x77, sizeof(src));
	ck_assert_int_eq(post_send(p, 0, 4242, DR_WR_WRITE, src, 8, 0, (uintptr_t)t->buf + 64,
				   t->mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(p));
	ck_assert_uint_eq(p->sim.end[0].nwc, n0 + 1);
	ck_assert_uint_eq(p->sim.end[0].wc[n0].wr_id, 4242);
	ck_assert_int_eq(p->sim.end[0].wc[n0].status, DR_WC_SUCCESS);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(t->buf[64 + i], 0x77);
	memset(t->buf + 64, 0x11, 8);
}

enum rx_spoil {
	RX_PKEY_1234,	  /* P_Key of another partition */
	RX_PKEY_0000,	  /* the invalid P_Key */
	RX_PKEY_8000,	  /* the invalid P_Key, full member */
	RX_SRC_IP,	  /* from another IP */
	RX_DST_IP,	  /* to another IP */
	RX_DST_QPN,	  /* to another QP */
	RX_PKEY_7FFF,	  /* limited member of the default partition: accepted */
	RX_PSN_AHEAD,	  /* 2^22 ahead: one NAK_SEQ, then dropped */
	RX_PSN_BEHIND,	  /* 2^22 behind: a duplicate, re-ACKed, not executed */
	RX_READ_BEHIND,	  /* a READ 2^22 behind, no resource covers it: dropped */
	RX_BAD_RKEY,	  /* at the expected PSN, a wrong R_Key: IBA's class C error */
	RX_SPOIL_NUM
};

static const struct rx_case {
	enum rx_spoil spoil;
	const char *what;
	enum dr_rx_drop why;  /* counted drop of the 2nd frame (DR_RX_OK: none) */
	bool executes;	      /* the write lands */
	bool to_error;	      /* B goes to ERROR (IBA 9.7.5.1, as rxe does) */
} rx_cases[] = {
    {RX_PKEY_1234, "P_Key 0x1234", DR_RX_DROP_PKEY, false, false},
    {RX_PKEY_0000, "P_Key 0x0000", DR_RX_DROP_PKEY, false, false},
    {RX_PKEY_8000, "P_Key 0x8000", DR_RX_DROP_PKEY, false, false},
    {RX_SRC_IP, "source IP", DR_RX_DROP_SRC_ADDR, false, false},
    {RX_DST_IP, "destination IP", DR_RX_DROP_DST_ADDR, false, false},
    {RX_DST_QPN, "DestQP", DR_RX_DROP_DST_QPN, false, false},
    {RX_PKEY_7FFF, "P_Key 0x7fff", DR_RX_OK, true, false},
    {RX_PSN_AHEAD, "PSN far ahead", DR_RX_DROP_PSN_AHEAD, false, false},
    {RX_PSN_BEHIND, "PSN far behind", DR_RX_OK, false, false},
    {RX_READ_BEHIND, "READ far behind", DR_RX_DROP_PSN_STALE, false, false},
    {RX_BAD_RKEY, "R_Key at the expected PSN", DR_RX_OK, false, true},
};

/* One forged frame of each kind, sent twice, handed to B: the exact drop
 * counter (per QP and per port), the exact answer, the QP's state, and
 * memory outside a correctly keyed write untouched. */
START_TEST(test_rx_checks)
{
	const struct rx_case *rc = &rx_cases[_i];
	struct pair_cfg c = pair_defaults();
	uint64_t port_drops[DR_RX_DROP_NUM] = {0};
	static struct rx_target t;
	struct dr_qp_stats before;
	struct dr_pkt_desc d;
	struct pair p;
	uint64_t b_tx;
	unsigned k;

	pair_up(&p, &c);
	p.qp[1]->port_drops = port_drops; /* as src/fi's device gives it */
	rx_target_init(&p, &t);
	rx_still_works(&p, &t);
	before = p.qp[1]->stats;
	b_tx = p.sim.end[1].tx_frames;
	for (k = 0; k < 2; k++) {
		uint32_t epsn = p.qp[1]->resp.psn;

		rx_forge_write(&p, &t, &d, epsn);
		switch (rc->spoil) {
		case RX_PKEY_1234:
			d.pkey = 0x1234;
			break;
		case RX_PKEY_0000:
			d.pkey = 0x0000;
			break;
		case RX_PKEY_8000:
			d.pkey = 0x8000;
			break;
		case RX_PKEY_7FFF:
			d.pkey = 0x7fff;
			break;
		case RX_SRC_IP:
			d.src_ip4 ^= 0x40;
			break;
		case RX_DST_IP:
			d.dst_ip4 ^= 0x40;
			break;
		case RX_DST_QPN:
			d.dqpn ^= 1;
			break;
		case RX_PSN_AHEAD:
			d.psn = dr_psn_add(epsn, 1 << 22);
			break;
		case RX_PSN_BEHIND:
			d.psn = dr_psn_add(epsn, -(1 << 22));
			break;
		case RX_READ_BEHIND:
			dr_qp_desc(p.qp[0], &d, DR_OP_READ_REQ, dr_psn_add(epsn, -(1 << 22)));
			d.ackreq = true;
			d.reth.va = (uintptr_t)t.buf;
			d.reth.rkey = t.mr->key;
			d.reth.len = 8;
			break;
		case RX_BAD_RKEY:
			d.reth.rkey ^= 0x10000;
			break;
		default:
			break;
		}
		rx_inject(&p, &d);
		ck_assert(pair_run(&p));
		if (rc->to_error)
			break;
	}
	/* exactly the named drops, per QP and per port, nothing else */
	for (k = 0; k < DR_RX_DROP_NUM; k++) {
		uint64_t want = 0;

		if (k == rc->why && rc->why != DR_RX_OK)
			want = rc->spoil == RX_PSN_AHEAD ? 1 : 2; /* the 1st was NAKed */
		ck_assert_msg(p.qp[1]->stats.rx_drop[k] - before.rx_drop[k] == want,
			      "%s: %s drops %llu, want %llu", rc->what, dr_rx_drop_names[k],
			      (unsigned long long)(p.qp[1]->stats.rx_drop[k] - before.rx_drop[k]),
			      (unsigned long long)want);
		ck_assert_uint_eq(port_drops[k], want);
	}
	switch (rc->spoil) {
	case RX_PSN_AHEAD:
		/* IBA 9.7.5.1.1 / B.6: one NAK_SEQ for the gap, with the expected PSN */
		ck_assert_uint_eq(p.qp[1]->stats.tx_seq_naks - before.tx_seq_naks, 1);
		ck_assert_uint_eq(p.sim.end[1].tx_frames - b_tx, 1);
		break;
	case RX_PSN_BEHIND:
		/* B.7: a duplicate WRITE is re-ACKed, never executed */
		ck_assert_uint_eq(p.qp[1]->stats.rx_dup_reqs - before.rx_dup_reqs, 2);
		ck_assert_uint_eq(p.sim.end[1].tx_frames - b_tx, 2);
		break;
	case RX_PKEY_7FFF:
		ck_assert_uint_eq(p.sim.end[1].tx_frames - b_tx, 2); /* two ACKs */
		break;
	case RX_BAD_RKEY:
		/* rxe: RESPST_ERR_RKEY_VIOLATION, a class C error: NAK remote
		 * access error for the packet and the QP to ERROR */
		ck_assert_uint_eq(p.qp[1]->stats.tx_err_naks - before.tx_err_naks, 1);
		ck_assert_uint_eq(p.sim.end[1].tx_frames - b_tx, 1);
		break;
	default:
		/* a dropped frame has no answer */
		ck_assert_uint_eq(p.sim.end[1].tx_frames - b_tx, 0);
		break;
	}
	ck_assert_int_eq(p.qp[1]->state, rc->to_error ? DR_QPS_ERROR : DR_QPS_RTS);
	if (rc->executes) {
		for (k = 0; k < 8; k++)
			ck_assert_uint_eq(t.buf[k], 0xee);
		memset(t.buf, 0x11, 8);
	}
	rx_target_check(&t);
	/* (an accepted forgery took PSNs A never sent: A and B are out of
	 * step from there on, as they would be on a real wire) */
	if (!rc->to_error && !rc->executes) {
		ck_assert_int_eq(p.qp[0]->state, DR_QPS_RTS);
		rx_still_works(&p, &t);
		rx_target_check(&t);
	}
	pair_down(&p);
}
END_TEST

#define SWEEP_N (1u << 18) /* 262,144 frames, as the blind sweep of issue 11 */

/* A blind sweep: SWEEP_N forged WRITE_ONLYs at every PSN in
 * [ePSN - SWEEP_N/2, ePSN + SWEEP_N/2) -- the expected PSN among them -- with
 * the right R_Key and source but the wrong DestQP (_i 0), or the right
 * DestQP and the wrong source IP (_i 1).  Each is dropped and counted;
 * B stays in RTS, sends nothing, and no byte changes. */
START_TEST(test_rx_blind_sweep)
{
	struct pair_cfg c = pair_defaults();
	enum dr_rx_drop why = _i ? DR_RX_DROP_SRC_ADDR : DR_RX_DROP_DST_QPN;
	static struct rx_target t;
	struct dr_pkt_desc d;
	struct pair p;
	uint64_t b_tx, drops0;
	uint32_t epsn, k;

	pair_up(&p, &c);
	rx_target_init(&p, &t);
	rx_still_works(&p, &t);
	epsn = p.qp[1]->resp.psn;
	b_tx = p.sim.end[1].tx_frames;
	drops0 = p.qp[1]->stats.rx_dropped;
	for (k = 0; k < SWEEP_N; k++) {
		rx_forge_write(&p, &t, &d, dr_psn_add(epsn, (int32_t)k - (int32_t)(SWEEP_N / 2)));
		if (_i)
			d.src_ip4 = 0xc0a80100 | (k % 250 + 3); /* anyone but A */
		else
			d.dqpn = (QPN_B + 1 + k) & DR_QPN_MASK;
		rx_inject(&p, &d);
	}
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[1]->stats.rx_drop[why], SWEEP_N);
	ck_assert_uint_eq(p.qp[1]->stats.rx_dropped - drops0, SWEEP_N);
	ck_assert_uint_eq(p.sim.end[1].tx_frames, b_tx);
	ck_assert_uint_eq(p.qp[1]->resp.psn, epsn);
	ck_assert_int_eq(p.qp[1]->state, DR_QPS_RTS);
	rx_target_check(&t);
	rx_still_works(&p, &t);
	rx_target_check(&t);
	pair_down(&p);
}
END_TEST

/* ---- the opcode table drives the engines ----------------------------------- */

/* Each WR kind's request opcodes by position and its completion's opcode,
 * written out from IBA table 38 (ONLY, FIRST, MIDDLE, LAST). */
static const struct {
	enum dr_wr_opcode wr;
	uint8_t op[4];
	enum dr_wc_opcode wc;
	bool rd_atomic, atomic;
} wr_spec[] = {
    {DR_WR_SEND, {0x04, 0x00, 0x01, 0x02}, DR_WC_SEND, false, false},
    {DR_WR_SEND_IMM, {0x05, 0x00, 0x01, 0x03}, DR_WC_SEND, false, false},
    {DR_WR_WRITE, {0x0a, 0x06, 0x07, 0x08}, DR_WC_WRITE, false, false},
    {DR_WR_WRITE_IMM, {0x0b, 0x06, 0x07, 0x09}, DR_WC_WRITE, false, false},
    {DR_WR_READ, {0x0c, 0x0c, 0x0c, 0x0c}, DR_WC_READ, true, false},
    {DR_WR_FETCH_ADD, {0x14, 0x14, 0x14, 0x14}, DR_WC_FETCH_ADD, true, true},
    {DR_WR_CMP_SWAP, {0x13, 0x13, 0x13, 0x13}, DR_WC_CMP_SWAP, true, true},
};

/* dr_wr_tab and dr_pos_of: packet k of n of every WR kind, n = 1..5 */
START_TEST(test_wr_table)
{
	ck_assert_uint_eq(sizeof(wr_spec) / sizeof(wr_spec[0]), DR_WR_NUM);
	for (unsigned i = 0; i < DR_WR_NUM; i++) {
		enum dr_wr_opcode wr = wr_spec[i].wr;

		ck_assert_int_eq(dr_wr_tab[wr].wc, wr_spec[i].wc);
		ck_assert_int_eq(dr_wr_is_rd_atomic(wr), wr_spec[i].rd_atomic);
		ck_assert_int_eq(dr_wr_is_atomic(wr), wr_spec[i].atomic);
		for (uint32_t n = 1; n <= 5; n++)
			for (uint32_t k = 0; k < n; k++) {
				unsigned pos = n == 1 ? 0 : k == 0 ? 1 : k + 1 == n ? 3 : 2;

				ck_assert_msg(dr_wr_opcode(wr, k, n) == wr_spec[i].op[pos],
					      "%s packet %u of %u", dr_wr_opcode_names[wr], k, n);
			}
	}
}
END_TEST

/* What B's responder and completer do with one packet of each opcode, at
 * the expected PSN and one behind it (a duplicate): B is fresh, in RTS,
 * with one receive posted and nothing sent.  Written out from IBA 9.7.4,
 * 9.7.5.1 (sequence: a message starts with FIRST or ONLY; B.7 duplicates:
 * SEND/WRITE re-ACKed, a READ or atomic no resource covers dropped) and
 * droce's choices (no SEND with invalidate; responses for nothing sent and
 * UD frames dropped). */
enum { ANS_NONE = -1 };
enum { RWC_NONE, RWC_OK, RWC_FLUSH };
static const struct {
	uint8_t op;
	int answer;	     /* opcode of B's one answer, ANS_NONE */
	uint8_t syndrome;    /* its AETH syndrome */
	enum dr_rx_drop why; /* or the frame's drop */
	bool error;	     /* B goes to ERROR */
	int rwc;	     /* B's receive completion */
	enum dr_wc_opcode rwc_op;
	int dup_answer; /* as a duplicate: ACK (0x11) or ANS_NONE */
	enum dr_rx_drop dup_why;
} op_spec[] = {
    {0x00, 0x11, 0x1f, DR_RX_OK, false, RWC_NONE, 0, 0x11, DR_RX_OK},
    {0x01, 0x11, 0x61, DR_RX_OK, true, RWC_FLUSH, DR_WC_RECV, 0x11, DR_RX_OK},
    {0x02, 0x11, 0x61, DR_RX_OK, true, RWC_FLUSH, DR_WC_RECV, 0x11, DR_RX_OK},
    {0x03, 0x11, 0x61, DR_RX_OK, true, RWC_FLUSH, DR_WC_RECV, 0x11, DR_RX_OK},
    {0x04, 0x11, 0x1f, DR_RX_OK, false, RWC_OK, DR_WC_RECV, 0x11, DR_RX_OK},
    {0x05, 0x11, 0x1f, DR_RX_OK, false, RWC_OK, DR_WC_RECV, 0x11, DR_RX_OK},
    {0x06, 0x11, 0x1f, DR_RX_OK, false, RWC_NONE, 0, 0x11, DR_RX_OK},
    {0x07, 0x11, 0x61, DR_RX_OK, true, RWC_FLUSH, DR_WC_RECV, 0x11, DR_RX_OK},
    {0x08, 0x11, 0x61, DR_RX_OK, true, RWC_FLUSH, DR_WC_RECV, 0x11, DR_RX_OK},
    {0x09, 0x11, 0x61, DR_RX_OK, true, RWC_FLUSH, DR_WC_RECV, 0x11, DR_RX_OK},
    {0x0a, 0x11, 0x1f, DR_RX_OK, false, RWC_NONE, 0, 0x11, DR_RX_OK},
    {0x0b, 0x11, 0x1f, DR_RX_OK, false, RWC_OK, DR_WC_RECV_WRITE_IMM, 0x11, DR_RX_OK},
    {0x0c, 0x10, 0x1f, DR_RX_OK, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_PSN_STALE},
    {0x0d, ANS_NONE, 0, DR_RX_DROP_RSP, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_RSP},
    {0x0e, ANS_NONE, 0, DR_RX_DROP_RSP, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_RSP},
    {0x0f, ANS_NONE, 0, DR_RX_DROP_RSP, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_RSP},
    {0x10, ANS_NONE, 0, DR_RX_DROP_RSP, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_RSP},
    {0x11, ANS_NONE, 0, DR_RX_DROP_RSP, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_RSP},
    {0x12, ANS_NONE, 0, DR_RX_DROP_RSP, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_RSP},
    {0x13, 0x12, 0x1f, DR_RX_OK, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_PSN_STALE},
    {0x14, 0x12, 0x1f, DR_RX_OK, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_PSN_STALE},
    {0x16, 0x11, 0x61, DR_RX_OK, true, RWC_FLUSH, DR_WC_RECV, ANS_NONE, DR_RX_DROP_PSN_STALE},
    {0x17, 0x11, 0x61, DR_RX_OK, true, RWC_FLUSH, DR_WC_RECV, ANS_NONE, DR_RX_DROP_PSN_STALE},
    {0x64, ANS_NONE, 0, DR_RX_DROP_TYPE, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_TYPE},
    {0x65, ANS_NONE, 0, DR_RX_DROP_TYPE, false, RWC_NONE, 0, ANS_NONE, DR_RX_DROP_TYPE},
};

struct answers {
	unsigned n;
	uint8_t op, syndrome;
};

/* B's frames: noted and kept from A */
static enum dr_sim_action answers_note(void *arg, unsigned dir, uint64_t frame_no,
				       const struct dr_pkt *pkt)
{
	struct answers *a = arg;

	if (dir == 0)
		return DR_SIM_PASS;
	if (a->n++ == 0) {
		a->op = pkt->opcode;
		a->syndrome = dr_pkt_aeth(pkt) ? dr_aeth_syndrome(dr_pkt_aeth(pkt)) : 0;
	}
	return DR_SIM_DROP;
}

START_TEST(test_opcode_decisions)
{
	unsigned row = (unsigned)_i / 2;
	bool dup = _i & 1;
	uint8_t op = op_spec[row].op;
	uint32_t f = dr_opcode(op)->flags;
	struct answers ans = {0};
	struct pair_cfg c = pair_defaults();
	static uint8_t payload[256], rbuf[4096];
	static struct rx_target t;
	enum dr_rx_drop why = dup ? op_spec[row].dup_why : op_spec[row].why;
	int answer = dup ? op_spec[row].dup_answer : op_spec[row].answer;
	struct dr_pkt_desc d;
	struct pair p;
	uint32_t epsn;

	ck_assert_uint_eq(sizeof(op_spec) / sizeof(op_spec[0]), 25);
	c.pmtu = 256; /* a FIRST or MIDDLE packet fits rx_inject's frame */
	c.sim.fault = answers_note;
	c.sim.fault_arg = &ans;
	pair_up(&p, &c);
	rx_target_init(&p, &t);
	post_recv(&p, 1, 77, rbuf, sizeof(rbuf));
	epsn = p.qp[1]->resp.psn;

	/* a well-formed packet of this opcode from A */
	dr_qp_desc(p.qp[0], &d, op, dup ? dr_psn_add(epsn, -1) : epsn);
	d.ackreq = true;
	if (f & DR_OPF_PAYLOAD) {
		d.payload = payload;
		d.payload_len = f & (DR_OPF_FIRST | DR_OPF_MIDDLE) ? c.pmtu : 8;
	}
	d.reth.va = (uintptr_t)t.buf;
	d.reth.rkey = t.mr->key;
	d.reth.len = f & DR_OPF_FIRST ? 2 * c.pmtu : 8;
	d.atmeth.va = (uintptr_t)t.buf;
	d.atmeth.rkey = t.mr->key;
	d.aeth.syndrome = DR_AETH_ACK_UNLIMITED;
	d.deth.sqpn = 1;
	if (f & DR_OPF_UD)
		d.deth.qkey = 0x80010000;
	rx_inject(&p, &d);
	ck_assert(pair_run(&p));

	ck_assert_msg(ans.n == (answer == ANS_NONE ? 0u : 1u), "%s%s: %u answers",
		      dr_opcode_name(op), dup ? " (dup)" : "", ans.n);
	if (answer != ANS_NONE) {
		ck_assert_msg(ans.op == answer, "%s%s: answer %s", dr_opcode_name(op),
			      dup ? " (dup)" : "", dr_opcode_name(ans.op));
		ck_assert_uint_eq(ans.syndrome,
				  dup ? DR_AETH_ACK_UNLIMITED : op_spec[row].syndrome);
	}
	for (unsigned k = 0; k < DR_RX_DROP_NUM; k++)
		ck_assert_msg(p.qp[1]->stats.rx_drop[k] == (k == why && why != DR_RX_OK),
			      "%s%s: %s drops %llu", dr_opcode_name(op), dup ? " (dup)" : "",
			      dr_rx_drop_names[k], (unsigned long long)p.qp[1]->stats.rx_drop[k]);
	ck_assert_int_eq(p.qp[1]->state, !dup && op_spec[row].error ? DR_QPS_ERROR : DR_QPS_RTS);
	if (dup || op_spec[row].rwc == RWC_NONE) {
		ck_assert_uint_eq(p.sim.end[1].nwc, 0);
	} else {
		ck_assert_uint_eq(p.sim.end[1].nwc, 1);
		ck_assert_uint_eq(p.sim.end[1].wc[0].wr_id, 77);
		ck_assert_int_eq(p.sim.end[1].wc[0].opcode, op_spec[row].rwc_op);
		ck_assert_int_eq(p.sim.end[1].wc[0].status,
				 op_spec[row].rwc == RWC_OK ? DR_WC_SUCCESS : DR_WC_WR_FLUSH_ERR);
	}
	pair_down(&p);
}
END_TEST

/* P_Key matching (rxe pkey_match) against the QP's 0xFFFF and a limited
 * member's 0x7FFF. */
START_TEST(test_pkey_match)
{
	ck_assert(dr_pkey_match(0xffff, 0xffff));
	ck_assert(dr_pkey_match(0x7fff, 0xffff));
	ck_assert(dr_pkey_match(0xffff, 0x7fff));
	ck_assert(!dr_pkey_match(0x7fff, 0x7fff)); /* two limited members */
	ck_assert(!dr_pkey_match(0x1234, 0xffff));
	ck_assert(!dr_pkey_match(0x9234, 0xffff));
	ck_assert(!dr_pkey_match(0x0000, 0xffff));
	ck_assert(!dr_pkey_match(0x8000, 0xffff));
	ck_assert(!dr_pkey_match(0x8000, 0x8000)); /* the invalid P_Key never matches */
}
END_TEST

/* ---- congestion control (DR_QP_CC, docs/protocol.md B.11) ------------------ */

#define CC_FRAMES 64

/* Every frame each side sends, whole, and every note each side makes. */
struct cc_rec {
	struct dr_sim *sim;
	uint8_t f[2][CC_FRAMES][128];
	size_t len[2][CC_FRAMES];
	unsigned n[2];
	uint64_t bytes0_from, bytes0; /* A's frame bytes sent since bytes0_from */
	char note[2][8][128];
	uint8_t note_frame[2][8][128];
	size_t note_len[2][8];
	unsigned nnote[2];
};
static struct cc_rec *ccr;

static enum dr_sim_action cc_fault(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	struct cc_rec *r = arg;

	if (r->n[dir] < CC_FRAMES) {
		size_t l = pkt->frame_len < 128 ? pkt->frame_len : 128;

		memcpy(r->f[dir][r->n[dir]], pkt->frame, l);
		r->len[dir][r->n[dir]++] = pkt->frame_len;
	}
	if (dir == 0 && r->sim->now_ns >= r->bytes0_from)
		r->bytes0 += pkt->frame_len;
	return DR_SIM_PASS;
}

static void cc_note(void *ctx, struct dr_qp *qp, const void *frame, size_t len, const char *text)
{
	unsigned side = ((struct dr_sim_end *)ctx)->idx, i = ccr->nnote[side];

	/* the congestion-control notes; the others (retransmit, QP state, ...)
	 * are test_notes' */
	if (strncmp(text, "CNP ", 4))
		return;
	ck_assert_uint_lt(i, 8);
	snprintf(ccr->note[side][i], sizeof(ccr->note[side][i]), "%s", text);
	memcpy(ccr->note_frame[side][i], frame, len < 128 ? len : 128);
	ccr->note_len[side][i] = len;
	ccr->nnote[side]++;
}

static struct dr_qp_ops cc_ops;

/* A pair with DR_QP_CC on both sides (cc_on), recording into a fresh
 * ccr, notes included. */
static void cc_pair_up_cfg(struct pair *p, struct pair_cfg c, bool cc_on, uint64_t rate_bps)
{
	unsigned i;

	ccr = calloc(1, sizeof(*ccr));
	ck_assert_ptr_nonnull(ccr);
	ccr->bytes0_from = UINT64_MAX;
	for (i = 0; i < 2; i++)
		c.qp_flags[i] |= cc_on ? DR_QP_CC : 0;
	c.sim = (struct dr_sim_cfg){
	    .rate_bps = rate_bps, .latency_ns = 2000, .fault = cc_fault, .fault_arg = ccr};
	pair_up(p, &c);
	ccr->sim = &p->sim;
	cc_ops = *p->qp[0]->ops;
	cc_ops.note = cc_note;
	for (i = 0; i < 2; i++)
		p->qp[i]->ops = &cc_ops;
}

static void cc_pair_up(struct pair *p, bool cc_on, uint64_t rate_bps)
{
	cc_pair_up_cfg(p, pair_defaults(), cc_on, rate_bps);
}

static void cc_pair_down(struct pair *p)
{
	pair_down(p);
	free(ccr);
	ccr = NULL;
}

/* A one-packet SEND from A, IP ECN field ecn, handed to B directly. */
static void cc_inject(struct pair *p, uint32_t psn, unsigned ecn)
{
	static const uint8_t payload[8] = "ecn test";

	inject_send_tos(p, psn, payload, sizeof(payload), (uint8_t)ecn);
}

/* A CNP from B's QP to A's, handed to A directly. */
static void cc_inject_cnp(struct pair *p)
{
	struct dr_pkt_desc d;
	uint8_t frame[128];
	struct dr_pkt pkt;
	int n;

	dr_qp_desc(p->qp[1], &d, DR_OP_CNP, 0);
	d.bth_rsvd8 = DR_BTH_BECN;
	n = dr_pkt_build(&d, frame, sizeof(frame));
	ck_assert_int_eq(dr_pkt_parse(frame, (size_t)n, 0, &pkt), DR_PKT_OK);
	dr_qp_input(p->qp[0], &pkt);
}

static unsigned cc_count(unsigned dir, uint8_t op)
{
	unsigned k = 0;

	for (unsigned i = 0; i < ccr->n[dir] && i < CC_FRAMES; i++)
		k += ccr->f[dir][i][42] == op;
	return k;
}

/* The CNP B sent: exactly A17.9.3's fields, B's addressing, not ECT. */
static void cc_expect_cnp(const uint8_t *f, size_t len)
{
	/* opcode, SE/M/PadCnt/TVer 0, P_Key 0xFFFF, BECN, DestQP A's, AckReq 0,
	 * PSN 0 */
	static const uint8_t want[12] = {
	    0x81,	  0x00, 0xff, 0xff, 0x40, (QPN_A >> 16) & 0xff, (QPN_A >> 8) & 0xff,
	    QPN_A & 0xff, 0x00, 0x00, 0x00, 0x00};
	struct dr_pkt pkt;

	ck_assert_uint_eq(len, 14 + 20 + 8 + 12 + 16 + 4);
	ck_assert_int_eq(dr_pkt_parse(f, len, 0, &pkt), DR_PKT_OK);
	ck_assert(!memcmp(f + 42, want, sizeof(want)));
	for (unsigned i = 54; i < 70; i++)
		ck_assert_uint_eq(f[i], 0);
	ck_assert_uint_eq(dr_pkt_ecn(&pkt), DR_ECN_NOT_ECT);
	ck_assert_uint_eq(ntohl(pkt.ip4->saddr), 0xc0a80102);
	ck_assert_uint_eq(ntohl(pkt.ip4->daddr), 0xc0a80101);
	ck_assert_uint_eq(ntohs(pkt.udp->dport), DR_ROCE_UDP_PORT);
	ck_assert_uint_eq(ntohs(pkt.udp->sport), dr_udp_sport(0, QPN_B, QPN_A));
}

/* B gets SENDs marked CE: the first is answered by one CNP to A's QP (and
 * its ACK); more CE within DR_CC_CNP_GAP_NS are counted, not answered;
 * after it, the next one is.  The note names the PSN on the CNP itself.
 * A takes each CNP as a cut.  Without DR_QP_CC, CE is ignored. */
START_TEST(test_cc_cnp_sent)
{
	bool on = _i;
	struct pair p;
	uint8_t buf[3][8];
	uint32_t psn = 0xfffff0;

	cc_pair_up(&p, on, 10000000000ull);
	for (unsigned i = 0; i < 3; i++)
		post_recv(&p, 1, i, buf[i], sizeof(buf[i]));
	cc_inject(&p, psn, DR_ECN_CE);
	/* a few microseconds later, within the gap */
	p.sim.now_ns += DR_CC_CNP_GAP_NS - 1;
	cc_inject(&p, psn + 1, DR_ECN_CE);
	ck_assert(pair_run(&p));
	if (!on) {
		ck_assert_uint_eq(p.qp[1]->stats.ce_seen, 0);
		ck_assert_uint_eq(p.qp[1]->stats.cnp_sent, 0);
		ck_assert_uint_eq(cc_count(1, DR_OP_CNP), 0);
		ck_assert_uint_eq(ccr->nnote[1], 0);
		cc_pair_down(&p);
		return;
	}
	ck_assert_uint_eq(p.qp[1]->stats.ce_seen, 2);
	ck_assert_uint_eq(p.qp[1]->stats.cnp_sent, 1);
	ck_assert_uint_eq(cc_count(1, DR_OP_CNP), 1);
	/* B's first frame is the CNP: it leaves when the CE packet arrives */
	cc_expect_cnp(ccr->f[1][0], ccr->len[1][0]);
	ck_assert_uint_eq(ccr->nnote[1], 1);
	ck_assert_str_eq(ccr->note[1][0], "CNP sent: CE seen on PSN 16777200");
	ck_assert_uint_eq(ccr->note_len[1][0], ccr->len[1][0]);
	ck_assert(!memcmp(ccr->note_frame[1][0], ccr->f[1][0], ccr->len[1][0]));
	/* A: one cut, from the unlimited rate (DR_CC_MAX_MBPS) by half */
	ck_assert_uint_eq(p.qp[0]->stats.cnp_received, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 1);
	ck_assert_uint_eq(ccr->nnote[0], 1);
	ck_assert_str_eq(ccr->note[0][0],
			 "CNP received: rate 100000 -> 50000 Mb/s, window 16 -> 8");
	ck_assert(!memcmp(ccr->note_frame[0][0], ccr->f[1][0], ccr->len[1][0]));

	/* the gap is over: the next CE draws a CNP again; ECT(0) does not */
	p.sim.now_ns += DR_CC_CNP_GAP_NS;
	cc_inject(&p, psn + 2, DR_ECN_ECT0);
	ck_assert_uint_eq(p.qp[1]->stats.cnp_sent, 1);
	cc_inject(&p, dr_psn_add(psn, 2), DR_ECN_CE); /* a duplicate now: CE all the same */
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[1]->stats.ce_seen, 3);
	ck_assert_uint_eq(p.qp[1]->stats.cnp_sent, 2);
	ck_assert_uint_eq(cc_count(1, DR_OP_CNP), 2);
	ck_assert_uint_eq(p.qp[0]->stats.cnp_received, 2);
	ck_assert_str_eq(ccr->note[1][1], "CNP sent: CE seen on PSN 16777202");
	cc_pair_down(&p);
}
END_TEST

/* DCQCN's rules as docs/protocol.md B.11 states them, for the expected
 * values: a cut from base with alpha a (of 1024); a recovery step. */
static uint32_t cc_model_cut(uint32_t base, uint32_t alpha)
{
	return (uint32_t)(base - (uint64_t)base * alpha / 2048);
}

static void cc_model_step(uint32_t *rc, uint32_t *rt, unsigned stage)
{
	if (stage > 2 * DR_CC_FAST_STEPS)
		*rt += DR_CC_HAI_MBPS * (stage - 2 * DR_CC_FAST_STEPS);
	else if (stage > DR_CC_FAST_STEPS)
		*rt += DR_CC_AI_MBPS;
	if (*rt > DR_CC_MAX_MBPS)
		*rt = DR_CC_MAX_MBPS;
	*rc = (*rc + *rt + 1) / 2;
}

/* The rate A is paced to once the engine has looked at the clock (a
 * zero-byte WRITE posted makes it). */
static uint64_t cc_rate_now(struct pair *p, uint8_t *dst, struct dr_mr *mr)
{
	struct dr_send_wr wr = {
	    .wr_id = 9, .opcode = DR_WR_WRITE, .remote_addr = (uintptr_t)dst, .rkey = mr->key};

	ck_assert_int_eq(dr_qp_post_send(p->qp[0], &wr), 0);
	return p->qp[0]->stats.cc_rate_mbps;
}

/* CNPs cut A's rate by alpha/2 -- half at first --, at most once a
 * DR_CC_CUT_GAP_NS; alpha decays by 1/16 every DR_CC_ALPHA_NS without a
 * cut; the rate recovers every DR_CC_PERIOD_NS: fast recovery, additive,
 * hyper increase, until the limit ends. */
START_TEST(test_cc_cut_recover)
{
	struct pair p;
	uint8_t dst[16];
	struct dr_mr *mr;
	uint64_t t0;
	uint32_t rc, rt, alpha;
	unsigned stage;

	cc_pair_up(&p, true, 0);
	mr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE);
	t0 = p.sim.now_ns = 1000000;
	cc_inject_cnp(&p);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.cc_rate_mbps, 50000);
	/* another one inside the gap: counted, no cut */
	p.sim.now_ns = t0 + DR_CC_CUT_GAP_NS - 1;
	cc_inject_cnp(&p);
	ck_assert_uint_eq(p.qp[0]->stats.cnp_received, 2);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 1);
	ck_assert_str_eq(ccr->note[0][1], "CNP received: rate 50000 -> 50000 Mb/s, window 8 -> 8");
	/* one alpha period later: alpha 1024 - 64, the cut is smaller */
	p.sim.now_ns = t0 + DR_CC_ALPHA_NS;
	cc_inject_cnp(&p);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 2);
	alpha = 1024 - 1024 / 16;
	rt = 50000;
	rc = cc_model_cut(rt, alpha);
	ck_assert_uint_eq(rc, 26563);
	ck_assert_uint_eq(p.qp[0]->stats.cc_rate_mbps, rc);
	ck_assert_str_eq(ccr->note[0][2], "CNP received: rate 50000 -> 26563 Mb/s, window 8 -> 4");
	ck_assert(pair_run(&p));

	/* recovery, period by period from the second cut */
	t0 += DR_CC_ALPHA_NS;
	for (stage = 1; stage <= 60; stage++) {
		cc_model_step(&rc, &rt, stage);
		p.sim.now_ns = t0 + (uint64_t)stage * DR_CC_PERIOD_NS;
		if (rc >= DR_CC_MAX_MBPS)
			break;
		ck_assert_msg(cc_rate_now(&p, dst, mr) == rc, "stage %u: rate %llu, want %u", stage,
			      (unsigned long long)p.qp[0]->stats.cc_rate_mbps, rc);
		ck_assert(pair_run(&p));
		if (stage == DR_CC_FAST_STEPS)
			ck_assert_uint_eq(rc, 49268); /* fast recovery: halfway each period */
	}
	/* the limit ends at DR_CC_MAX_MBPS: 4.4 ms after the cut, hyper
	 * increase steps of 200, 400, ... Mb/s having brought the target back */
	ck_assert_uint_eq(stage, 44);
	ck_assert_uint_eq(cc_rate_now(&p, dst, mr), 0);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 2);
	/* a new episode starts with alpha 1 again, and from the rate A was
	 * measured at: its zero-byte WRITEs, one a period, 58 bytes each, are
	 * 4 Mb/s; halved, below the floor */
	p.sim.now_ns += DR_CC_PERIOD_NS;
	ck_assert_uint_eq(p.qp[0]->cc.meas_mbps, 4);
	cc_inject_cnp(&p);
	ck_assert_uint_eq(p.qp[0]->stats.cc_rate_mbps, DR_CC_MIN_MBPS);
	/* the window grew back one a progressing ACK: 4 + 44 */
	ck_assert_str_eq(ccr->note[0][3], "CNP received: rate 4 -> 10 Mb/s, window 48 -> 24");
	cc_pair_down(&p);
}
END_TEST

/* Every period is at least the smoothed round trip: with srtt 1 ms, a
 * second CNP 0.5 ms after a cut cuts nothing, the rate rises first 1 ms
 * after the cut, and a CNP 1 ms after it cuts again. */
/* A's first cut: srtt 1 ms (least round trip min), a CNP at t0 halves
 * the rate from DR_CC_MAX_MBPS; dst registered on B for cc_rate_now. */
static struct dr_mr *cc_first_cut(struct pair *p, uint8_t *dst, size_t len, uint64_t t0,
				  uint64_t min)
{
	struct dr_mr *mr;

	cc_pair_up(p, true, 0);
	mr = reg(p, 1, dst, len, DR_ACCESS_REMOTE_WRITE);
	p->qp[0]->comp.srtt_ns = 1000000;
	p->qp[0]->comp.rtt_min_ns = min;
	p->sim.now_ns = t0;
	cc_inject_cnp(p);
	ck_assert_uint_eq(p->qp[0]->stats.cc_rate_mbps, 50000);
	return mr;
}

START_TEST(test_cc_srtt_periods)
{
	struct pair p;
	uint8_t dst[16];
	uint64_t t0 = 1000000;
	struct dr_mr *mr = cc_first_cut(&p, dst, sizeof(dst), t0, 0);

	p.sim.now_ns = t0 + 500000;
	cc_inject_cnp(&p);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 1);
	p.sim.now_ns = t0 + 999999;
	ck_assert_uint_eq(cc_rate_now(&p, dst, mr), 50000);
	ck_assert(pair_run(&p));
	p.sim.now_ns = t0 + 1000000;
	ck_assert_uint_eq(cc_rate_now(&p, dst, mr), 75000); /* one fast recovery step */
	ck_assert(pair_run(&p));
	/* alpha decayed once (1 ms without a cut): 75000 x (1 - 960/2048) */
	p.sim.now_ns = t0 + 1000000 + 1000;
	cc_inject_cnp(&p);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 2);
	ck_assert_uint_eq(p.qp[0]->stats.cc_rate_mbps, cc_model_cut(75000, 960));
	cc_pair_down(&p);
}
END_TEST

/* With DR_QP_CC, A's request packets are ECT(0), B's ACKs are not; without
 * it nothing is ECN-capable. */
START_TEST(test_cc_ect)
{
	bool on = _i;
	struct pair p;
	uint8_t src[4096], dst[4096];

	cc_pair_up(&p, on, 10000000000ull);
	fill(src, sizeof(src), 3);
	post_write_to_b(&p, src, dst, sizeof(src), DR_WR_SIGNALED);
	ck_assert(pair_run(&p));
	ck_assert(!memcmp(src, dst, sizeof(dst)));
	ck_assert_uint_eq(ccr->n[0], 4);
	ck_assert_uint_ge(ccr->n[1], 1);
	for (unsigned i = 0; i < ccr->n[0]; i++)
		ck_assert_uint_eq(ccr->f[0][i][15] & DR_ECN_MASK,
				  on ? DR_ECN_ECT0 : DR_ECN_NOT_ECT);
	for (unsigned i = 0; i < ccr->n[1]; i++)
		ck_assert_uint_eq(ccr->f[1][i][15] & DR_ECN_MASK, DR_ECN_NOT_ECT);
	cc_pair_down(&p);
}
END_TEST

/* A cut while A streams a WRITE over a 10 Gb/s link: the reference is
 * the rate A was measured at, and A then sends at the rate it was cut to
 * (the pacer, DR_REQ_WAIT_RATE), within its bucket. */
START_TEST(test_cc_pacing)
{
	static uint8_t src[4 << 20], dst[4 << 20];
	struct pair p;
	uint64_t meas, rate, t, window = DR_CC_PERIOD_NS - 1000, allowed;

	cc_pair_up(&p, true, 10000000000ull);
	fill(src, sizeof(src), 5);
	post_write_to_b(&p, src, dst, sizeof(src), DR_WR_SIGNALED);
	ck_assert(!dr_sim_run(&p.sim, 500000, NULL, NULL));
	meas = p.qp[0]->cc.meas_mbps;
	/* the link's 10 Gb/s, give or take a frame at the sample's edges */
	ck_assert_uint_gt(meas, 9500);
	ck_assert_uint_le(meas, 10500);
	cc_inject_cnp(&p);
	rate = p.qp[0]->stats.cc_rate_mbps;
	ck_assert_uint_eq(rate, meas - meas / 2);
	/* within one increase period A sends at most rate x time plus a
	 * bucket (64 us at the rate) and the frame that overdraws it */
	t = p.sim.now_ns;
	ccr->bytes0_from = t;
	ck_assert(!dr_sim_run(&p.sim, t + window, NULL, NULL));
	allowed = rate * (window + DR_CC_BURST_NS) / 8000 + 2 * 1200;
	ck_assert_msg(ccr->bytes0 <= allowed, "%llu bytes in %llu ns at %llu Mb/s",
		      (unsigned long long)ccr->bytes0, (unsigned long long)window,
		      (unsigned long long)rate);
	ck_assert_msg(ccr->bytes0 >= rate * window / 8000 * 8 / 10, "%llu bytes: paced too slowly",
		      (unsigned long long)ccr->bytes0);
	ck_assert_uint_gt(p.qp[0]->stats.cc_rate_mbps, 0);
	ck_assert(pair_run(&p));
	ck_assert(!memcmp(src, dst, sizeof(dst)));
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	cc_pair_down(&p);
}
END_TEST

/* A paced QP asks for ACKs by time.  Over a link with a 10 ms round trip,
 * A's rate cut to the 10 Mb/s floor, a 256 KiB WRITE: one 1 KiB packet
 * per 0.87 ms (the rate rises first after 5 periods of a round trip), so
 * the packet that asks by count (the 62nd, half the window) would leave
 * 53 ms after the first, past A's 33.5 ms timer, which would fire again
 * and again.  By time, a packet at least every half round trip (5 ms)
 * asks: 5 packets at most between two that ask, and A's timer never
 * fires. */
START_TEST(test_cc_ackreq_paced)
{
	static uint8_t src[256 << 10], dst[256 << 10];
	struct pair_cfg c = pair_defaults();
	struct dr_mr *mr;
	struct pair p;
	unsigned i, asks = 0, since = 0, most = 0;

	c.timeout = 13; /* 33.5 ms */
	c.qp_flags[0] = DR_QP_ADAPTIVE_RTO;
	c.rto_floor_ns[0] = dr_qp_timeout_ns(13);
	cc_pair_up_cfg(&p, c, true, 10000000000ull);
	p.sim.cfg.latency_ns = 5000000;
	mr = reg(&p, 1, dst, sizeof(dst), DR_ACCESS_REMOTE_WRITE);
	fill(src, sizeof(src), 13);
	/* a round trip timed, then a cut (from DR_CC_MAX_MBPS: no sample
	 * yet), the rate then put at the floor from the test's side */
	ck_assert_int_eq(
	    post_send(&p, 0, 1, DR_WR_WRITE, src, 8, 0, (uintptr_t)dst, mr->key, DR_WR_SIGNALED),
	    0);
	ck_assert(pair_run(&p));
	ck_assert_uint_ge(p.qp[0]->comp.srtt_ns, 10000000);
	cc_inject_cnp(&p);
	p.qp[0]->cc.rate_mbps = p.qp[0]->cc.target_mbps = DR_CC_MIN_MBPS;
	p.qp[0]->cc.tokens = 0;
	/* paced, not held by its window (halved by the CNP, grown from
	 * DR_CC_INIT_CWND): the asks by count come every half window */
	p.qp[0]->req.cwnd = p.qp[0]->max_window;
	ccr->n[0] = 0;
	ck_assert_int_eq(post_send(&p, 0, 2, DR_WR_WRITE, src, sizeof(src), 0, (uintptr_t)dst,
				   mr->key, DR_WR_SIGNALED),
			 0);
	ck_assert(pair_run(&p));
	ck_assert(!memcmp(src, dst, sizeof(dst)));
	/* A's first 64 frames, 56 ms at 10 Mb/s: the AckReq bit (BTH byte 8,
	 * bit 7) */
	ck_assert_uint_eq(ccr->n[0], CC_FRAMES);
	for (i = 0; i < CC_FRAMES; i++) {
		if (ccr->f[0][i][42 + 8] & 0x80) {
			asks++;
			since = 0;
		} else if (++since > most) {
			most = since;
		}
	}
	ck_assert_uint_ge(asks, CC_FRAMES / 6);
	ck_assert_uint_le(most, 5);
	ck_assert_uint_eq(p.qp[0]->stats.timeouts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.tx_resent_pkts, 0);
	cc_pair_down(&p);
}
END_TEST

/* A QP with congestion control starts with a window of DR_CC_INIT_CWND
 * (16), not max_window.  A CNP that cuts the rate halves the PSN window
 * (cc.c dr_cc_cnp_input): 16 -> 8 -> 4, one cut a DR_CC_CUT_GAP_NS (srtt
 * 0), never below DR_CC_MIN_CWND; a CNP inside the gap cuts nothing.  Then a
 * 64 KiB WRITE loses its fifth frame: the sequence NAK halves the window,
 * but not up to the loss floor of 16 (DR_QP_MIN_CWND): the resend leaves
 * with the window CNPs left it plus the NAK's progress. */
static struct dr_qp *ccw_qp;
static uint32_t ccw_resend_cwnd;

static enum dr_sim_action ccw_fault(void *arg, unsigned dir, uint64_t n, const struct dr_pkt *pkt)
{
	static uint32_t lost_psn;

	cc_fault(arg, dir, n, pkt);
	if (dir != 0)
		return DR_SIM_PASS;
	if (n == 5) {
		lost_psn = pkt->psn;
		return DR_SIM_DROP;
	}
	if (n > 5 && pkt->psn == lost_psn && !ccw_resend_cwnd)
		ccw_resend_cwnd = ccw_qp->req.cwnd;
	return DR_SIM_PASS;
}

START_TEST(test_cc_cnp_window)
{
	static uint8_t src[64 << 10], dst[64 << 10];
	const uint64_t t0 = 1000000;
	struct pair p;
	unsigned k;

	cc_pair_up(&p, true, 0);
	ck_assert_uint_eq(p.qp[0]->req.cwnd, DR_CC_INIT_CWND);
	ck_assert_uint_eq(p.qp[0]->max_window, DR_QP_MAX_UNACKED_PSNS);
	for (k = 0; k < 6; k++) {
		uint32_t want = DR_CC_INIT_CWND >> (k + 1);

		p.sim.now_ns = t0 + k * DR_CC_CUT_GAP_NS;
		cc_inject_cnp(&p);
		ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, k + 1);
		ck_assert_uint_eq(p.qp[0]->req.cwnd, want > DR_CC_MIN_CWND ? want : DR_CC_MIN_CWND);
	}
	ck_assert_uint_eq(p.qp[0]->stats.cwnd_cuts, 2);
	ck_assert_str_eq(ccr->note[0][1], "CNP received: rate 50000 -> 25000 Mb/s, window 8 -> 4");
	ck_assert_str_eq(ccr->note[0][4], "CNP received: rate 6250 -> 3125 Mb/s, window 4 -> 4");
	ck_assert_str_eq(ccr->note[0][5], "CNP received: rate 3125 -> 1563 Mb/s, window 4 -> 4");
	/* inside the gap: no cut at all */
	p.sim.now_ns += DR_CC_CUT_GAP_NS - 1;
	cc_inject_cnp(&p);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 6);
	ck_assert_uint_eq(p.qp[0]->stats.cwnd_cuts, 2);
	ck_assert_uint_eq(p.qp[0]->req.cwnd, DR_CC_MIN_CWND);

	ccw_qp = p.qp[0];
	ccw_resend_cwnd = 0;
	p.sim.cfg.fault = ccw_fault;
	p.sim.now_ns += DR_CC_CUT_GAP_NS;
	fill(src, sizeof(src), 11);
	post_write_to_b(&p, src, dst, sizeof(src), DR_WR_SIGNALED);
	ck_assert(pair_run(&p));
	ck_assert(!memcmp(src, dst, sizeof(dst)));
	ck_assert_uint_eq(p.qp[0]->stats.rx_seq_naks, 1);
	ck_assert_uint_eq(p.qp[0]->stats.cwnd_cuts, 3);
	ck_assert_uint_gt(ccw_resend_cwnd, 0);
	ck_assert_uint_lt(ccw_resend_cwnd, DR_QP_MIN_CWND);
	cc_pair_down(&p);
}
END_TEST

/* Go-back-N is a congestion signal for the window, not the rate: one lost
 * packet of a WRITE draws a sequence NAK, a resend and a halved window,
 * with or without DR_QP_CC; the rate stays unlimited (no CNP came, and
 * the simulated link builds no queue: test_cc_gbn_queue). */
static enum dr_sim_action cc_drop_fault(void *arg, unsigned dir, uint64_t n,
					const struct dr_pkt *pkt)
{
	cc_fault(arg, dir, n, pkt);
	return dir == 0 && n == 5 ? DR_SIM_DROP : DR_SIM_PASS;
}

START_TEST(test_cc_gbn_window)
{
	bool on = _i;
	static uint8_t src[64 << 10], dst[64 << 10];
	struct pair p;

	cc_pair_up(&p, on, 10000000000ull);
	p.sim.cfg.fault = cc_drop_fault;
	fill(src, sizeof(src), 7);
	post_write_to_b(&p, src, dst, sizeof(src), DR_WR_SIGNALED);
	ck_assert(pair_run(&p));
	ck_assert(!memcmp(src, dst, sizeof(dst)));
	ck_assert_uint_eq(p.qp[0]->stats.rx_seq_naks, 1);
	ck_assert_uint_eq(p.qp[0]->stats.cwnd_cuts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.rate_holds, 0);
	ck_assert_uint_eq(p.qp[0]->stats.cnp_received, 0);
	ck_assert_uint_eq(p.qp[0]->stats.cc_rate_mbps, 0);
	cc_pair_down(&p);
}
END_TEST

/* Within a limited episode a go-back-N holds the rate: with srtt 1 ms, a
 * CNP at t0 halves it, a lost packet at t0 + 0.5 ms restarts the increase
 * period, so the rate has not risen at t0 + 1 ms (it would have without
 * the loss, test_cc_srtt_periods) and takes its fast recovery step at
 * t0 + 1.5 ms. */
START_TEST(test_cc_gbn_hold)
{
	struct pair p;
	uint8_t dst[16];
	uint64_t t0 = 1000000;
	/* least round trip 0.6 ms: no standing queue behind srtt 1 ms */
	struct dr_mr *mr = cc_first_cut(&p, dst, sizeof(dst), t0, 600000);

	p.sim.now_ns = t0 + 500000;
	dr_cc_loss(p.qp[0]);
	ck_assert_uint_eq(p.qp[0]->stats.rate_holds, 1);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.cc_rate_mbps, 50000);
	p.sim.now_ns = t0 + 1000000;
	ck_assert_uint_eq(cc_rate_now(&p, dst, mr), 50000);
	ck_assert(pair_run(&p));
	p.sim.now_ns = t0 + 1500000;
	ck_assert_uint_eq(cc_rate_now(&p, dst, mr), 75000);
	ck_assert(pair_run(&p));
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 1);
	cc_pair_down(&p);
}
END_TEST

/* A go-back-N with a standing queue behind it cuts the rate: least round
 * trip 50 us, so the smoothed one must exceed 2 x 50 + 250 us.  At
 * 350 us it is random loss (nothing limited, nothing cut); at 351 us the
 * unlimited QP's rate halves from DR_CC_MAX_MBPS. */
START_TEST(test_cc_gbn_queue)
{
	struct pair p;

	cc_pair_up(&p, true, 0);
	p.qp[0]->comp.rtt_min_ns = 50000;
	p.qp[0]->comp.srtt_ns = 2 * 50000 + DR_CC_LOSS_QUEUE_NS;
	p.sim.now_ns = 1000000;
	dr_cc_loss(p.qp[0]);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 0);
	ck_assert_uint_eq(p.qp[0]->stats.rate_holds, 0);
	ck_assert_uint_eq(p.qp[0]->stats.cc_rate_mbps, 0);
	p.qp[0]->comp.srtt_ns++;
	dr_cc_loss(p.qp[0]);
	ck_assert_uint_eq(p.qp[0]->stats.rate_cuts, 1);
	ck_assert_uint_eq(p.qp[0]->stats.cc_rate_mbps, DR_CC_MAX_MBPS / 2);
	cc_pair_down(&p);
}
END_TEST

static Suite *qp_suite(void)
{
	Suite *s = suite_create("qp");
	TCase *tc;
	unsigned npm = sizeof(size_pmtus) / sizeof(size_pmtus[0]);

	tc = tcase_create("psn");
	tcase_add_loop_test(tc, test_psn_diff, 0, sizeof(psn_diff_tab) / sizeof(psn_diff_tab[0]));
	tcase_add_loop_test(tc, test_psn_add, 0, sizeof(psn_add_tab) / sizeof(psn_add_tab[0]));
	tcase_add_test(tc, test_timer_tables);
	suite_add_tcase(s, tc);

	tc = tcase_create("mr");
	tcase_add_test(tc, test_mr_keys);
	tcase_add_test(tc, test_idmap);
	tcase_add_test(tc, test_rand_failure);
	suite_add_tcase(s, tc);

	tc = tcase_create("ops");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_qp_states);
	tcase_add_loop_test(tc, test_op_sizes, 0, (int)(N_OPS * npm * N_SIZES));
	tcase_add_test(tc, test_sent_unacked);
	tcase_add_test(tc, test_atomics);
	tcase_add_test(tc, test_sgl_inline_fence);
	tcase_add_test(tc, test_window);
	suite_add_tcase(s, tc);

	tc = tcase_create("faults");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_loss_mix, 0, (int)(4 * N_RATES * N_SEEDS));
	tcase_add_loop_test(tc, test_remote_errors, 0, ERR_NUM);
	tcase_add_test(tc, test_recv_too_small);
	tcase_add_test(tc, test_zero_len_keyed_sge);
	tcase_add_test(tc, test_rnr_then_recv);
	tcase_add_test(tc, test_rnr_exhausted);
	tcase_add_test(tc, test_rnr_write_imm);
	tcase_add_test(tc, test_rnr_held_not_lost);
	tcase_add_test(tc, test_dead_link);
	tcase_add_loop_test(tc, test_dup_atomic, 0, 2);
	tcase_add_test(tc, test_gbn_partial);
	tcase_add_test(tc, test_one_size);
	tcase_add_test(tc, test_read_retry_tail);
	tcase_add_loop_test(tc, test_read_placed, 0, sizeof(placed_tab) / sizeof(placed_tab[0]));
	tcase_add_test(tc, test_write_placed_bad_icrc);
	tcase_add_test(tc, test_write_place_bounds);
	tcase_add_test(tc, test_dup_send_reack);
	tcase_add_test(tc, test_dup_send_late);
	suite_add_tcase(s, tc);

	tc = tcase_create("rx_checks");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pkey_match);
	tcase_add_loop_test(tc, test_rx_checks, 0, (int)(sizeof(rx_cases) / sizeof(rx_cases[0])));
	tcase_add_loop_test(tc, test_rx_blind_sweep, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("opcode_table");
	tcase_add_test(tc, test_wr_table);
	tcase_add_loop_test(tc, test_opcode_decisions, 0,
			    (int)(2 * sizeof(op_spec) / sizeof(op_spec[0])));
	suite_add_tcase(s, tc);

	tc = tcase_create("write_imm");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_write_imm_no_wqe, 0,
			    (int)(sizeof(wimm_tab) / sizeof(wimm_tab[0])));
	tcase_add_loop_test(tc, test_write_imm_faults, 0, 2 * WF_NUM);
	tcase_add_loop_test(tc, test_write_imm_refused, 0,
			    (int)(sizeof(wimm_ref_tab) / sizeof(wimm_ref_tab[0])));
	suite_add_tcase(s, tc);

	tc = tcase_create("remote_op");
	tcase_add_test(tc, test_read_replay_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("data_path");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_defer_ack_coalesce);
	tcase_add_loop_test(tc, test_defer_ack_order, 0, DO_NUM);
	tcase_add_test(tc, test_defer_ack_error);
	tcase_add_loop_test(tc, test_adaptive_rto_estimate, 0,
			    (int)(sizeof(rto_tab) / sizeof(rto_tab[0])));
	tcase_add_test(tc, test_adaptive_rto_one_at_a_time);
	tcase_add_test(tc, test_adaptive_rto_early);
	tcase_add_test(tc, test_spurious_timeout_probe);
	tcase_add_test(tc, test_spurious_floor_cap);
	tcase_add_test(tc, test_lossless_no_early_timeout);
	tcase_add_loop_test(tc, test_probe_undo, 0, 2 * PU_KINDS);
	tcase_add_loop_test(tc, test_probe_undo_spaced, 0, PU_KINDS);
	tcase_add_loop_test(tc, test_probe_tail_loss, 0, PU_KINDS);
	tcase_add_test(tc, test_probe_hold_error);
	tcase_add_loop_test(tc, test_lossless_loss_seen, 0, 2);
	tcase_add_loop_test(tc, test_timeout_loss_floor, 0, 2);
	tcase_add_test(tc, test_spurious_floor_loss);
	tcase_add_test(tc, test_rto_floor_start);
	tcase_add_test(tc, test_adaptive_rto_rnr_karn);
	tcase_add_loop_test(tc, test_adaptive_dead_link, 0,
			    (int)(sizeof(adead_tab) / sizeof(adead_tab[0])));
	tcase_add_loop_test(tc, test_dead_peer_time, 0,
			    (int)(sizeof(dpeer_tab) / sizeof(dpeer_tab[0])));
	tcase_add_loop_test(tc, test_read_rearm, 0, sizeof(rearm_tab) / sizeof(rearm_tab[0]));
	tcase_add_loop_test(tc, test_peer_moved, 0, (int)(sizeof(move_tab) / sizeof(move_tab[0])));
	tcase_add_test(tc, test_cwnd_loss);
	tcase_add_loop_test(tc, test_max_window, 0, (int)(sizeof(mw_tab) / sizeof(mw_tab[0])));
	tcase_add_loop_test(tc, test_read_runs, 0, 2);
	tcase_add_test(tc, test_max_window_bounds);
	tcase_add_test(tc, test_ack_pkts);
	tcase_add_loop_test(tc, test_lazy_ack, 0, 2);
	tcase_add_loop_test(tc, test_read_depth, 0, (int)(sizeof(rdd_tab) / sizeof(rdd_tab[0])));
	tcase_add_loop_test(tc, test_ring_overrun, 0, (int)(4 * RO_NDEPTH));
	suite_add_tcase(s, tc);

	tc = tcase_create("cc");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_cc_cnp_sent, 0, 2);
	tcase_add_test(tc, test_cc_cut_recover);
	tcase_add_test(tc, test_cc_srtt_periods);
	tcase_add_loop_test(tc, test_cc_ect, 0, 2);
	tcase_add_test(tc, test_cc_pacing);
	tcase_add_test(tc, test_cc_ackreq_paced);
	tcase_add_test(tc, test_cc_cnp_window);
	tcase_add_loop_test(tc, test_cc_gbn_window, 0, 2);
	tcase_add_test(tc, test_cc_gbn_hold);
	tcase_add_test(tc, test_cc_gbn_queue);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ck_run(qp_suite(), false);
}
