/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_qp_perf.c - what the RC engine costs on the wire, measured on the
 * simulated link (virtual time, so the figures are exact and repeatable):
 * packets per message at 0 % loss, and goodput at 1 %, 5 % and 20 % loss
 * (both directions) relative to 0 %, for 64 KiB and 1 MiB RDMA WRITEs.
 *
 * Link model: 10 Gb/s each way, 5 us one-way latency; QP timeout 8
 * (4.096 us * 2^8 = 1.05 ms), retry_cnt 7; window 128 PSNs, AckReq every
 * 64 packets.  A run posts a batch of WRITEs back to back and measures the
 * virtual time until the last completes; each figure averages 5 seeds.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_qp.h"
#include "simlink.h"
#include "ck_run.h"

#define QPN_A	   0x17
#define QPN_B	   0x2a
#define RATE_BPS   10000000000ull
#define LATENCY_NS 5000
#define N_SEEDS	   5

struct run {
	double seconds;
	uint64_t bytes;
	uint64_t req_frames, rsp_frames;
	uint64_t timeouts, seq_naks;
	bool ok;
};

/* ip: this side's address; the peer's is the other of 10.0.0.1/2 (the QP
 * takes frames only from its peer's address, rxe check_addr) */
static void bring_up(struct dr_qp *qp, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn,
		     uint32_t pmtu, uint32_t ip)
{
	struct dr_qp_attr a = {
	    .state = DR_QPS_INIT,
	    .dest_qpn = dqpn,
	    .rq_psn = rq_psn,
	    .sq_psn = sq_psn,
	    .path_mtu = pmtu,
	    .timeout = 8,
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .min_rnr_timer = 1,
	    .max_rd_atomic = 16,
	    .max_dest_rd_atomic = 16,
	    .path = {.src_ip4 = ip, .dst_ip4 = ip ^ 3},
	};

	ck_assert_int_eq(dr_qp_modify(qp, &a, DR_QP_ATTR_STATE), 0);
	a.state = DR_QPS_RTR;
	ck_assert_int_eq(dr_qp_modify(qp, &a,
				      DR_QP_ATTR_STATE | DR_QP_ATTR_DEST_QPN | DR_QP_ATTR_RQ_PSN |
					  DR_QP_ATTR_PATH_MTU | DR_QP_ATTR_MIN_RNR_TIMER |
					  DR_QP_ATTR_MAX_DEST_RD_ATOMIC | DR_QP_ATTR_PATH),
			 0);
	a.state = DR_QPS_RTS;
	ck_assert_int_eq(dr_qp_modify(qp, &a,
				      DR_QP_ATTR_STATE | DR_QP_ATTR_SQ_PSN | DR_QP_ATTR_TIMEOUT |
					  DR_QP_ATTR_RETRY_CNT | DR_QP_ATTR_RNR_RETRY |
					  DR_QP_ATTR_MAX_RD_ATOMIC),
			 0);
}

static struct run run_writes(uint32_t pmtu, uint32_t msg_len, unsigned nmsg, double loss,
			     uint64_t seed)
{
	struct dr_sim_cfg sc = {
	    .rate_bps = RATE_BPS,
	    .latency_ns = LATENCY_NS,
	    .drop = loss,
	    .seed = seed,
	};
	struct dr_sim sim;
	struct dr_mr_table mrt;
	struct dr_qp *qp[2];
	struct dr_mr *mr;
	uint8_t *src = malloc(msg_len), *dst = malloc(msg_len);
	struct run r = {0};
	unsigned i;

	dr_sim_init(&sim, &sc);
	ck_assert_int_eq(dr_mr_table_init(&mrt, 4), 0);
	for (i = 0; i < 2; i++) {
		struct dr_qp_init_attr ia = {.qpn = i ? QPN_B : QPN_A,
					     .max_send_wr = 256,
					     .max_recv_wr = 16,
					     .mrt = &mrt,
					     .ops = &dr_sim_qp_ops,
					     .ctx = &sim.end[i]};

		qp[i] = dr_qp_create(&ia);
		ck_assert_ptr_nonnull(qp[i]);
		dr_sim_attach(&sim, i, qp[i]);
	}
	bring_up(qp[0], QPN_B, 0xfff000, 0x100, pmtu, 0x0a000001);
	bring_up(qp[1], QPN_A, 0x100, 0xfff000, pmtu, 0x0a000002);
	ck_assert_int_eq(dr_mr_reg(&mrt, dst, msg_len, (uintptr_t)dst, DR_ACCESS_REMOTE_WRITE, &mr),
			 0);
	memset(src, 0x5a, msg_len);
	for (i = 0; i < nmsg; i++) {
		struct dr_sge sge = {(uintptr_t)src, msg_len, 0};
		struct dr_send_wr wr = {.wr_id = i,
					.opcode = DR_WR_WRITE,
					.flags = DR_WR_SIGNALED,
					.sg_list = &sge,
					.num_sge = 1,
					.remote_addr = (uintptr_t)dst,
					.rkey = mr->key};

		ck_assert_int_eq(dr_qp_post_send(qp[0], &wr), 0);
	}
	dr_sim_run(&sim, 3600ull * 1000000000ull, NULL, NULL);
	r.ok = sim.end[0].nwc == nmsg && sim.bad_frames == 0;
	for (i = 0; i < sim.end[0].nwc; i++)
		r.ok =
		    r.ok && sim.end[0].wc[i].status == DR_WC_SUCCESS && sim.end[0].wc[i].wr_id == i;
	r.seconds = (double)sim.now_ns / 1e9;
	r.bytes = (uint64_t)msg_len * nmsg;
	r.req_frames = sim.end[0].tx_frames;
	r.rsp_frames = sim.end[1].tx_frames;
	r.timeouts = dr_qp_stats(qp[0])->timeouts;
	r.seq_naks = dr_qp_stats(qp[1])->tx_seq_naks;
	for (i = 0; i < 2; i++)
		dr_qp_destroy(qp[i]);
	dr_mr_table_fini(&mrt);
	dr_sim_fini(&sim);
	free(src);
	free(dst);
	return r;
}

static const struct {
	uint32_t pmtu, len;
	unsigned nmsg;
} perf_cases[] = {
    {1024, 64 * 1024, 64},
    {1024, 1024 * 1024, 8},
    {4096, 64 * 1024, 64},
    {4096, 1024 * 1024, 8},
};

START_TEST(test_goodput)
{
	static const double rates[] = {0.0, 0.01, 0.05, 0.20};
	uint32_t pmtu = perf_cases[_i].pmtu, len = perf_cases[_i].len;
	unsigned nmsg = perf_cases[_i].nmsg, k, s;
	uint32_t npkts = len / pmtu;
	double base = 0;

	for (k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		double gbps = 0, to = 0, naks = 0, frames = 0;

		for (s = 0; s < N_SEEDS; s++) {
			struct run r = run_writes(pmtu, len, nmsg, rates[k], 1000 + s);

			ck_assert_msg(r.ok, "pmtu %u len %u loss %.2f seed %u failed", pmtu, len,
				      rates[k], s);
			gbps += (double)r.bytes * 8 / r.seconds / 1e9 / N_SEEDS;
			to += (double)r.timeouts / N_SEEDS;
			naks += (double)r.seq_naks / N_SEEDS;
			frames += (double)(r.req_frames + r.rsp_frames) / nmsg / N_SEEDS;
			if (k == 0) {
				/* the minimum: one packet per PMTU, and one ACK
				 * per 64 packets (the last one included) */
				ck_assert_uint_eq(r.req_frames, (uint64_t)npkts * nmsg);
				ck_assert_uint_eq(r.rsp_frames,
						  (uint64_t)((npkts + 63) / 64) * nmsg);
			}
		}
		if (k == 0) {
			base = gbps;
			printf("qp-perf: WRITE %7u B pmtu %4u: %.1f data + %.1f ACK packets per "
			       "message at 0%% loss; %.3f Gb/s goodput on a 10 Gb/s link\n",
			       len, pmtu, (double)npkts, (double)((npkts + 63) / 64), gbps);
		} else {
			printf("qp-perf: WRITE %7u B pmtu %4u: loss %4.1f%%: goodput %.3f Gb/s = "
			       "%5.1f%% of 0%% loss; %.1f frames/msg, %.1f timeouts, %.1f seq NAKs "
			       "per run\n",
			       len, pmtu, rates[k] * 100, gbps, 100 * gbps / base, frames, to,
			       naks);
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("qp-perf");
	TCase *tc = tcase_create("goodput");

	setvbuf(stdout, NULL, _IOLBF, 0);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_goodput, 0, sizeof(perf_cases) / sizeof(perf_cases[0]));
	suite_add_tcase(s, tc);
	return ck_run(s, true); /* keep the printed table in order */
}
