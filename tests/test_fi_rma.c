// SPDX-License-Identifier: BSD-2-Clause
/*
 * RMA, atomics, completion semantics and counters of droce through the
 * public libfabric API, each test in a process of its own (fi_fixture.h:
 * fx_run): two domains on the two ends of an in-process DPDK link ("pair:"
 * devices, net_ring), as in test_fi_msg.c.
 * Side A (pair:0) connects and mostly initiates, side B (pair:1) listens
 * and is mostly the target.  Nothing here calls droce directly; the IB
 * statuses are checked through the CQ's err_data text ("... (IB status N)",
 * libibverbs numbering: 5 flushed, 9 remote invalid request, 10 remote
 * access error).
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "fi_fixture.h"

#define PAIR	 "fit"
#define KiB	 1024
#define MiB	 (1024 * 1024)

/* caps the RMA tests ask for; the "_rx" infos accept FI_RX_CQ_DATA */
#define RMA_CAPS (FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT | FI_FENCE)

static struct fx F;				  /* RMA_CAPS, mode 0 */
static struct fi_info *info_a_rx, *info_b_rx;	  /* RMA_CAPS, FI_RX_CQ_DATA */
static struct fi_info *info_a_msg;		  /* FI_MSG only */
static struct fi_info *info_a_noev, *info_b_noev; /* FI_MSG | FI_RMA, no FI_RMA_EVENT */

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + seed + (i >> 12));
}

static void region_check_fill(const struct fx_region *r, size_t from, uint8_t init)
{
	for (size_t i = from; i < r->size; i++)
		if (r->buf[i] != init)
			ck_abort_msg("region byte %zu is 0x%02x, want 0x%02x", i, r->buf[i], init);
}

/* ---- completions ----------------------------------------------------------------- */

static void expect_comp(struct fid_cq *cq, struct fid_cq *other, void *ctx, uint64_t flags)
{
	struct fi_cq_data_entry e;
	ssize_t ret = fx_cq_wait(cq, other, &e);

	if (ret == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};

		fi_cq_readerr(cq, &err, 0);
		ck_abort_msg("error completion: err %d prov_errno %d (%s)", err.err, err.prov_errno,
			     err.err_data_size ? (char *)err.err_data : "");
	}
	ck_assert_int_eq(ret, 1);
	ck_assert_ptr_eq(e.op_context, ctx);
	ck_assert_uint_eq(e.flags, flags);
}

/* The target's entry for a write with CQ data. */
static void expect_imm(struct fid_cq *cq, struct fid_cq *other, void *ctx, uint64_t data,
		       size_t len)
{
	struct fi_cq_data_entry e;

	ck_assert_int_eq(fx_cq_wait(cq, other, &e), 1);
	ck_assert_ptr_eq(e.op_context, ctx);
	ck_assert_uint_eq(e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
	ck_assert_uint_eq(e.data, data);
	ck_assert_uint_eq(e.len, len);
}

/* An error entry: err, and the IB status named in err_data ("(IB status
 * N)"), or no check of it when ib < 0. */
static void expect_err(struct fid_cq *cq, struct fid_cq *other, void *ctx, int err, int ib)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry ee;
	char want[32], buf[128];

	ck_assert_int_eq(fx_cq_wait(cq, other, &e), -FI_EAVAIL);
	memset(&ee, 0, sizeof(ee));
	ck_assert_int_eq(fi_cq_readerr(cq, &ee, 0), 1);
	ck_assert_ptr_eq(ee.op_context, ctx);
	ck_assert_int_eq(ee.err, err);
	ck_assert_int_ne(ee.prov_errno, 0);
	ck_assert_ptr_nonnull(fi_cq_strerror(cq, ee.prov_errno, ee.err_data, buf, sizeof(buf)));
	if (ib >= 0) {
		snprintf(want, sizeof(want), "(IB status %d)", ib);
		ck_assert_uint_gt(ee.err_data_size, 0);
		ck_assert_msg(strstr(ee.err_data, want), "err_data '%s', want '%s'",
			      (char *)ee.err_data, want);
	}
}

/* Neither CQ has anything after both devices ran for a while. */
static void expect_quiet(struct fid_cq *cq, struct fid_cq *other)
{
	struct fi_cq_data_entry e;
	uint64_t end = fx_now_ns() + 20 * 1000 * 1000;

	while (fx_now_ns() < end) {
		ck_assert_int_eq(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
		if (other)
			fi_cq_read(other, NULL, 0);
	}
}

/* Read every entry there is (all successes); how many. */
static int cq_drain(struct fid_cq *cq)
{
	struct fi_cq_data_entry e;
	int n = 0;
	ssize_t ret;

	while ((ret = fi_cq_read(cq, &e, 1)) == 1)
		n++;
	ck_assert_int_eq(ret, -FI_EAGAIN);
	return n;
}

/* A counter reaching value (and err) within 5 s, both devices driven. */
static void cntr_expect(struct fid_cntr *cntr, struct fid_cq *drive, uint64_t value, uint64_t err)
{
	uint64_t end = fx_now_ns() + 5 * FX_NS_PER_S;

	while ((fi_cntr_read(cntr) < value || fi_cntr_readerr(cntr) < err) && fx_now_ns() < end)
		if (drive)
			fi_cq_read(drive, NULL, 0);
	ck_assert_uint_eq(fi_cntr_read(cntr), value);
	ck_assert_uint_eq(fi_cntr_readerr(cntr), err);
}

static struct fid_cntr *cntr_open(struct fid_domain *dom, enum fi_wait_obj wait)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = wait};
	struct fid_cntr *c;

	ck_assert_int_eq(fi_cntr_open(dom, &attr, &c, NULL), 0);
	return c;
}

/* ---- getinfo ---------------------------------------------------------------------- */

START_TEST(test_getinfo)
{
	struct fi_info *hints, *info;

	ck_assert_uint_eq(F.info_a->caps & RMA_CAPS, RMA_CAPS);
	ck_assert(F.info_a->caps & FI_READ && F.info_a->caps & FI_WRITE);
	ck_assert(F.info_a->caps & FI_REMOTE_READ && F.info_a->caps & FI_REMOTE_WRITE);
	ck_assert_uint_eq(F.info_a->tx_attr->caps & (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE),
			  FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE);
	ck_assert_uint_eq(F.info_a->rx_attr->caps &
			      (FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT),
			  FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT);
	ck_assert_uint_eq(F.info_a->tx_attr->rma_iov_limit, 1);
	ck_assert_uint_eq(F.info_a->domain_attr->mr_mode,
			  FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED);
	ck_assert_uint_eq(F.info_a->domain_attr->mr_key_size, 4);
	ck_assert_uint_eq(F.info_a->mode & FI_RX_CQ_DATA, 0);
	ck_assert_uint_eq(F.info_a->rx_attr->mode & FI_RX_CQ_DATA, 0);
	ck_assert_uint_eq(info_b_rx->mode & FI_RX_CQ_DATA, FI_RX_CQ_DATA);
	ck_assert_uint_eq(info_b_rx->rx_attr->mode & FI_RX_CQ_DATA, FI_RX_CQ_DATA);
	ck_assert_uint_eq(info_a_msg->caps & (FI_RMA | FI_ATOMIC), 0);
	ck_assert_uint_eq(info_a_noev->caps & (FI_RMA_EVENT | FI_ATOMIC), 0);

	/* what droce cannot honour is refused now, not later (droce alone:
	 * "droce" also brings ofi_rxm's RDM over it, which has its own rules) */
	hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("droce;^ofi_rxm;^ofi_rxd");
	hints->caps = FI_RMA;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED; /* no PROV_KEY */
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	hints->domain_attr->mr_mode |= FI_MR_PROV_KEY;
	hints->tx_attr->op_flags = FI_COMMIT_COMPLETE; /* no persistent memory */
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	hints->tx_attr->rma_iov_limit = 2;
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	hints->tx_attr->rma_iov_limit = 1;
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), 0);
	ck_assert_uint_eq(info->tx_attr->op_flags, FI_DELIVERY_COMPLETE);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

/* ---- RMA data ----------------------------------------------------------------------- */

static const size_t rma_sizes[] = {0, 1, 4095, 4096, 4097, 64 * KiB, 1 * MiB, 4 * MiB};
#define N_RMA_SIZES (int)(sizeof(rma_sizes) / sizeof(rma_sizes[0]))

START_TEST(test_write_sizes)
{
	size_t size = rma_sizes[_i], rsize = size ? size : 8;
	uint8_t *tx = malloc(size + 1);
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	fill(tx, size, (unsigned)_i);
	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, rsize, FI_REMOTE_WRITE, 0xee);
	ck_assert_int_eq(fi_write(c.ep_a, tx, size, NULL, 0, r.addr, r.key, &ctx), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_WRITE);
	ck_assert(!memcmp(r.buf, tx, size));
	region_check_fill(&r, size, 0xee);
	/* a plain write leaves no trace on the target's CQ */
	expect_quiet(c.cq_b, c.cq_a);
	fx_region_close(&r);
	fx_conn_close(&c);
	free(tx);
}
END_TEST

START_TEST(test_read_sizes)
{
	size_t size = rma_sizes[_i], rsize = size ? size : 8;
	uint8_t *rx = malloc(size + FX_GUARD);
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	memset(rx, 0xee, size + FX_GUARD);
	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, rsize, FI_REMOTE_READ, 0);
	fill(r.buf, rsize, (unsigned)_i + 40);
	ck_assert_int_eq(fi_read(c.ep_a, rx, size, NULL, 0, r.addr, r.key, &ctx), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_READ);
	ck_assert(!memcmp(rx, r.buf, size));
	for (size_t i = size; i < size + FX_GUARD; i++)
		ck_assert_uint_eq(rx[i], 0xee);
	expect_quiet(c.cq_b, c.cq_a);
	fx_region_close(&r);
	fx_conn_close(&c);
	free(rx);
}
END_TEST

/* fi_writedata without FI_RX_CQ_DATA: no receive posted, and the target's
 * entry has no context */
START_TEST(test_writedata_sizes)
{
	size_t size = rma_sizes[_i], rsize = size ? size : 8;
	uint8_t *tx = malloc(size + 1);
	uint64_t data = 0xc0de0000u + (unsigned)_i;
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	fill(tx, size, (unsigned)_i + 80);
	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, rsize, FI_REMOTE_WRITE, 0xee);
	ck_assert_int_eq(fi_writedata(c.ep_a, tx, size, NULL, data, 0, r.addr, r.key, &ctx), 0);
	expect_imm(c.cq_b, c.cq_a, NULL, data, size);
	ck_assert(!memcmp(r.buf, tx, size));
	region_check_fill(&r, size, 0xee);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_WRITE);
	fx_region_close(&r);
	fx_conn_close(&c);
	free(tx);
}
END_TEST

/* fi_writedata with FI_RX_CQ_DATA: each consumes the oldest posted receive,
 * whose context comes back; a SEND then takes the next one */
static const size_t rxcq_sizes[] = {0, 4097, 1 * MiB};

START_TEST(test_writedata_rx_cq_data)
{
	size_t size = rxcq_sizes[_i], rsize = size ? size : 8;
	struct fx_side sa = {.info = info_a_rx}, sb = {.info = info_b_rx};
	uint8_t *tx = malloc(size + 1), rbuf[2][32];
	struct fi_cq_data_entry e;
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	fill(tx, size, 7);
	fx_connect_cfg(&F, &c, &sa, &sb);
	fx_region_open(&r, F.dom_b, rsize, FI_REMOTE_WRITE, 0xee);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[0], sizeof(rbuf[0]), NULL, 0, rbuf[0]), 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[1], sizeof(rbuf[1]), NULL, 0, rbuf[1]), 0);
	memset(rbuf, 0, sizeof(rbuf));
	ck_assert_int_eq(fi_writedata(c.ep_a, tx, size, NULL, 0x1234abcd, 0, r.addr, r.key, &ctx),
			 0);
	ck_assert_int_eq(fi_send(c.ep_a, "after", 6, NULL, 0, NULL), 0);
	expect_imm(c.cq_b, c.cq_a, rbuf[0], 0x1234abcd, size);
	ck_assert(!memcmp(r.buf, tx, size));
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, rbuf[1]);
	ck_assert_uint_eq(e.flags, FI_RECV | FI_MSG);
	ck_assert_str_eq((char *)rbuf[1], "after");
	ck_assert_uint_eq(rbuf[0][0], 0); /* a write's receive takes no data */
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_WRITE);
	expect_comp(c.cq_a, c.cq_b, NULL, FI_SEND | FI_MSG);
	fx_region_close(&r);
	fx_conn_close(&c);
	free(tx);
}
END_TEST

/* FI_RX_CQ_DATA: with no receive posted the write waits (RNR NAK, retried)
 * and completes once one is */
START_TEST(test_writedata_rx_cq_data_rnr)
{
	struct fx_side sa = {.info = info_a_rx}, sb = {.info = info_b_rx};
	struct fx_region r;
	struct fx_conn c;
	uint8_t rbuf[8];

	fx_connect_cfg(&F, &c, &sa, &sb);
	fx_region_open(&r, F.dom_b, 64, FI_REMOTE_WRITE, 0);
	ck_assert_int_eq(fi_writedata(c.ep_a, "rnr", 4, NULL, 77, 0, r.addr, r.key, NULL), 0);
	expect_quiet(c.cq_b, c.cq_a);
	expect_quiet(c.cq_a, c.cq_b);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf, sizeof(rbuf), NULL, 0, rbuf), 0);
	expect_imm(c.cq_b, c.cq_a, rbuf, 77, 4);
	ck_assert_str_eq((char *)r.buf, "rnr");
	expect_comp(c.cq_a, c.cq_b, NULL, FI_RMA | FI_WRITE);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

/* Without FI_RX_CQ_DATA, writes with CQ data and SENDs interleave: the
 * SENDs find the application's receives in order, the writes take none */
START_TEST(test_writedata_mixed_with_recv)
{
	struct fi_cq_data_entry e;
	char rbuf[3][16];
	struct fx_region r;
	struct fx_conn c;

	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, 64, FI_REMOTE_WRITE, 0);
	memset(rbuf, 0, sizeof(rbuf));
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[0], 16, NULL, 0, rbuf[0]), 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[1], 16, NULL, 0, rbuf[1]), 0);
	ck_assert_int_eq(fi_writedata(c.ep_a, "w1", 3, NULL, 1, 0, r.addr, r.key, NULL), 0);
	ck_assert_int_eq(fi_send(c.ep_a, "one", 4, NULL, 0, NULL), 0);
	ck_assert_int_eq(fi_writedata(c.ep_a, "w2", 3, NULL, 2, 0, r.addr + 8, r.key, NULL), 0);
	ck_assert_int_eq(fi_send(c.ep_a, "two", 4, NULL, 0, NULL), 0);
	/* with no receive posted at all */
	ck_assert_int_eq(fi_writedata(c.ep_a, "w3", 3, NULL, 3, 0, r.addr + 16, r.key, NULL), 0);
	ck_assert_int_eq(fi_writedata(c.ep_a, NULL, 0, NULL, 4, 0, r.addr, r.key, NULL), 0);

	expect_imm(c.cq_b, c.cq_a, NULL, 1, 3);
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, rbuf[0]);
	ck_assert_uint_eq(e.len, 4);
	expect_imm(c.cq_b, c.cq_a, NULL, 2, 3);
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, rbuf[1]);
	expect_imm(c.cq_b, c.cq_a, NULL, 3, 3);
	expect_imm(c.cq_b, c.cq_a, NULL, 4, 0);
	ck_assert_str_eq(rbuf[0], "one");
	ck_assert_str_eq(rbuf[1], "two");
	ck_assert_str_eq((char *)r.buf, "w1");
	ck_assert_str_eq((char *)r.buf + 8, "w2");
	ck_assert_str_eq((char *)r.buf + 16, "w3");
	/* the receive queue is as the application left it: one more send
	 * lands in a receive posted now */
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[2], 16, NULL, 0, rbuf[2]), 0);
	ck_assert_int_eq(fi_writedata(c.ep_a, "w5", 3, NULL, 5, 0, r.addr + 24, r.key, NULL), 0);
	ck_assert_int_eq(fi_send(c.ep_a, "three", 6, NULL, 0, NULL), 0);
	expect_imm(c.cq_b, c.cq_a, NULL, 5, 3);
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, rbuf[2]);
	ck_assert_str_eq(rbuf[2], "three");
	for (int i = 0; i < 7; i++)
		ck_assert_int_eq(fx_cq_wait(c.cq_a, c.cq_b, &e), 1);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

START_TEST(test_writev_readv)
{
	uint8_t a[100], b[5000], d[3], back[3][5000];
	struct iovec wiov[3] = {{a, sizeof(a)}, {b, sizeof(b)}, {d, sizeof(d)}};
	struct iovec riov[3] = {{back[0], 3}, {back[1], 5000}, {back[2], 100}};
	struct iovec many[9];
	size_t total = sizeof(a) + sizeof(b) + sizeof(d);
	uint8_t flat[sizeof(a) + sizeof(b) + sizeof(d)];
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	fill(d, sizeof(d), 3);
	memcpy(flat, a, sizeof(a));
	memcpy(flat + sizeof(a), b, sizeof(b));
	memcpy(flat + sizeof(a) + sizeof(b), d, sizeof(d));
	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, total, FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	ck_assert_int_eq(fi_writev(c.ep_a, wiov, NULL, 3, 0, r.addr, r.key, &ctx), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_WRITE);
	ck_assert(!memcmp(r.buf, flat, total));
	ck_assert_int_eq(fi_readv(c.ep_a, riov, NULL, 3, 0, r.addr, r.key, &ctx), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_READ);
	ck_assert(!memcmp(back[0], flat, 3));
	ck_assert(!memcmp(back[1], flat + 3, 5000));
	ck_assert(!memcmp(back[2], flat + 5003, 100));
	for (int i = 0; i < 9; i++)
		many[i] = (struct iovec){a, 1};
	ck_assert_int_eq(fi_writev(c.ep_a, many, NULL, 9, 0, r.addr, r.key, NULL), -FI_EINVAL);
	ck_assert_int_eq(fi_readv(c.ep_a, many, NULL, 9, 0, r.addr, r.key, NULL), -FI_EINVAL);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

START_TEST(test_writemsg_readmsg)
{
	uint8_t src[2][300], back[600];
	struct iovec iov[2] = {{src[0], 300}, {src[1], 300}};
	struct iovec biov = {back, sizeof(back)};
	struct fi_rma_iov rma[2];
	struct fi_msg_rma msg;
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	fill(src[0], 300, 5);
	fill(src[1], 300, 6);
	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, 1024, FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	rma[0] = (struct fi_rma_iov){.addr = r.addr + 100, .len = 600, .key = r.key};
	rma[1] = rma[0];
	msg = (struct fi_msg_rma){.msg_iov = iov,
				  .iov_count = 2,
				  .rma_iov = rma,
				  .rma_iov_count = 1,
				  .context = &ctx,
				  .data = 0xfeed};
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, FI_COMPLETION | FI_REMOTE_CQ_DATA), 0);
	expect_imm(c.cq_b, c.cq_a, NULL, 0xfeed, 600);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_WRITE);
	ck_assert(!memcmp(r.buf + 100, src[0], 300));
	ck_assert(!memcmp(r.buf + 400, src[1], 300));
	region_check_fill(&r, 700, 0);

	msg.msg_iov = &biov;
	msg.iov_count = 1;
	ck_assert_int_eq(fi_readmsg(c.ep_a, &msg, FI_COMPLETION | FI_FENCE), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_READ);
	ck_assert(!memcmp(back, r.buf + 100, 600));

	/* refusals: one remote region, matching lengths, known flags */
	msg.rma_iov_count = 2;
	ck_assert_int_eq(fi_readmsg(c.ep_a, &msg, 0), -FI_EINVAL);
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, 0), -FI_EINVAL);
	msg.rma_iov_count = 0;
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, 0), -FI_EINVAL);
	msg.rma_iov_count = 1;
	rma[0].len = 599;
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, 0), -FI_EINVAL);
	ck_assert_int_eq(fi_readmsg(c.ep_a, &msg, 0), -FI_EINVAL);
	rma[0].len = 600;
	ck_assert_int_eq(fi_readmsg(c.ep_a, &msg, FI_INJECT), -FI_EBADFLAGS);
	ck_assert_int_eq(fi_readmsg(c.ep_a, &msg, FI_REMOTE_CQ_DATA), -FI_EBADFLAGS);
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, FI_COMMIT_COMPLETE), -FI_EBADFLAGS);
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, FI_MULTI_RECV), -FI_EBADFLAGS);
	ck_assert_int_eq(fi_writemsg(c.ep_a, NULL, 0), -FI_EINVAL);
	expect_quiet(c.cq_a, c.cq_b);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

/* fi_inject_write / fi_inject_writedata: the buffer is free on return and
 * nothing completes; FI_INJECT on writemsg still completes */
START_TEST(test_inject_write)
{
	uint8_t buf[300], want[300];
	struct iovec iov = {buf, 200};
	struct fi_rma_iov rma;
	struct fi_msg_rma msg;
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, 1024, FI_REMOTE_WRITE, 0);
	fill(buf, 256, 9);
	memcpy(want, buf, 256);
	ck_assert_int_eq(fi_inject_write(c.ep_a, buf, 256, 0, r.addr, r.key), 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(fi_inject_write(c.ep_a, buf, 257, 0, r.addr, r.key), -FI_EMSGSIZE);
	ck_assert_int_eq(fi_inject_writedata(c.ep_a, "imm", 4, 99, 0, r.addr + 512, r.key), 0);
	ck_assert_int_eq(fi_inject_writedata(c.ep_a, buf, 257, 99, 0, r.addr, r.key), -FI_EMSGSIZE);
	expect_imm(c.cq_b, c.cq_a, NULL, 99, 4);
	ck_assert(!memcmp(r.buf, want, 256));
	ck_assert_str_eq((char *)r.buf + 512, "imm");
	expect_quiet(c.cq_a, c.cq_b);

	fill(buf, 200, 10);
	memcpy(want, buf, 200);
	rma = (struct fi_rma_iov){.addr = r.addr + 600, .len = 200, .key = r.key};
	msg = (struct fi_msg_rma){
	    .msg_iov = &iov, .iov_count = 1, .rma_iov = &rma, .rma_iov_count = 1, .context = &ctx};
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, FI_INJECT | FI_INJECT_COMPLETE), 0);
	memset(buf, 0, sizeof(buf));
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_RMA | FI_WRITE);
	ck_assert(!memcmp(r.buf + 600, want, 200));
	iov.iov_len = 257;
	rma.len = 257;
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, FI_INJECT), -FI_EMSGSIZE);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

/* ---- RMA errors ------------------------------------------------------------------------ */

enum rma_fault {
	F_BAD_KEY_WRITE,
	F_BAD_KEY_READ,
	F_PAST_END_WRITE,
	F_BEFORE_START_WRITE,
	F_LONG_WRITE, /* multi-packet, runs off the end */
	F_PAST_END_READ,
	F_NO_WRITE_RIGHT,  /* region registered FI_REMOTE_READ only */
	F_NO_READ_RIGHT,   /* region registered FI_REMOTE_WRITE only */
	F_CLOSED_MR_WRITE, /* key of a closed region */
	F_WRITEDATA_BAD_KEY,
	F_NUM
};

/* Every refusal: the initiator gets FI_EIO with IB status 10 (remote access
 * error), no byte outside (or inside) the region changes, the QP is then in
 * error and the next operation is flushed */
START_TEST(test_rma_access_errors)
{
	enum rma_fault f = (enum rma_fault)_i;
	uint64_t access = FI_REMOTE_READ | FI_REMOTE_WRITE;
	uint8_t *tx = malloc(8192), *rx = malloc(8192);
	uint64_t addr, key;
	size_t len = 100;
	struct fx_region r;
	struct fx_conn c;
	bool write = true;
	int ctx, ctx2;

	if (f == F_NO_WRITE_RIGHT)
		access = FI_REMOTE_READ;
	if (f == F_NO_READ_RIGHT)
		access = FI_REMOTE_WRITE;
	fill(tx, 8192, 3);
	memset(rx, 0xee, 8192);
	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, 4096, access, 0x11);
	addr = r.addr;
	key = r.key;
	switch (f) {
	case F_BAD_KEY_WRITE:
	case F_WRITEDATA_BAD_KEY:
		key ^= 0x80000000u;
		break;
	case F_BAD_KEY_READ:
		key ^= 0x00010000u;
		write = false;
		break;
	case F_PAST_END_WRITE:
		addr += 4096 - 50;
		break;
	case F_BEFORE_START_WRITE:
		addr -= 1;
		break;
	case F_LONG_WRITE:
		len = 8192;
		break;
	case F_PAST_END_READ:
		addr += 4000;
		write = false;
		break;
	case F_NO_WRITE_RIGHT:
		break;
	case F_NO_READ_RIGHT:
		write = false;
		break;
	case F_CLOSED_MR_WRITE: {
		struct fx_region old;

		fx_region_open(&old, F.dom_b, 4096, access, 0);
		key = old.key;
		addr = old.addr;
		fx_region_close(&old);
		break;
	}
	case F_NUM:
		break;
	}
	if (f == F_WRITEDATA_BAD_KEY)
		ck_assert_int_eq(fi_writedata(c.ep_a, tx, len, NULL, 5, 0, addr, key, &ctx), 0);
	else if (write)
		ck_assert_int_eq(fi_write(c.ep_a, tx, len, NULL, 0, addr, key, &ctx), 0);
	else
		ck_assert_int_eq(fi_read(c.ep_a, rx, len, NULL, 0, addr, key, &ctx), 0);
	expect_err(c.cq_a, c.cq_b, &ctx, FI_EIO, 10);
	region_check_fill(&r, 0, 0x11);
	fx_region_check_guards(&r);
	for (size_t i = 0; i < 8192; i++)
		ck_assert_uint_eq(rx[i], 0xee);
	/* the connection is in error now: what follows is flushed */
	ck_assert_int_eq(fi_write(c.ep_a, tx, 8, NULL, 0, r.addr, r.key, &ctx2), 0);
	expect_err(c.cq_a, c.cq_b, &ctx2, FI_ECANCELED, 5);
	region_check_fill(&r, 0, 0x11);
	/* and nothing reached the target's CQ */
	expect_quiet(c.cq_b, c.cq_a);
	fx_region_close(&r);
	fx_conn_close(&c);
	free(tx);
	free(rx);
}
END_TEST

/* A connected pair and a zeroed 64-byte region on B that A may read and
 * write: what the refusal and atomic tests start from. */
static void connect_rw64(struct fx_conn *c, struct fx_region *r)
{
	fx_connect(&F, c);
	fx_region_open(r, F.dom_b, 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
}

/* keys wider than mr_key_size, and calls without a connection */
START_TEST(test_rma_refused_at_post)
{
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_eq *eq;
	uint64_t v = 1, res;
	uint8_t buf[8];
	struct fx_region r;
	struct fx_conn c;

	connect_rw64(&c, &r);
	ck_assert_int_eq(fi_write(c.ep_a, buf, 8, NULL, 0, r.addr, r.key | (1ull << 40), NULL),
			 -FI_EINVAL);
	ck_assert_int_eq(fi_read(c.ep_a, buf, 8, NULL, 0, r.addr, 1ull << 32, NULL), -FI_EINVAL);
	ck_assert_int_eq(fi_atomic(c.ep_a, &v, 1, NULL, 0, r.addr, r.key | (1ull << 33), FI_UINT64,
				   FI_SUM, NULL),
			 -FI_EINVAL);
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, &v, 1, NULL, &res, NULL, 0, r.addr, 1ull << 63,
					 FI_UINT64, FI_SUM, NULL),
			 -FI_EINVAL);
	expect_quiet(c.cq_a, c.cq_b);
	fx_region_close(&r);
	fx_conn_close(&c);

	/* enabled, never connected */
	fx_open_eq_cq(&F, F.dom_a, &eq, &cq);
	ck_assert_int_eq(fi_endpoint(F.dom_a, F.info_a, &ep, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &eq->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	ck_assert_int_eq(fi_enable(ep), 0);
	ck_assert_int_eq(fi_write(ep, buf, 8, NULL, 0, 0x1000, 1, NULL), -FI_EOPBADSTATE);
	ck_assert_int_eq(fi_read(ep, buf, 8, NULL, 0, 0x1000, 1, NULL), -FI_EOPBADSTATE);
	ck_assert_int_eq(fi_atomic(ep, &v, 1, NULL, 0, 0x1000, 1, FI_UINT64, FI_SUM, NULL),
			 -FI_EOPBADSTATE);
	ck_assert_int_eq(fi_close(&ep->fid), 0);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

/* an endpoint opened without FI_RMA / FI_ATOMIC has neither */
START_TEST(test_rma_without_caps)
{
	struct fid_ep *ep;
	uint64_t v = 1;
	size_t count;

	ck_assert_int_eq(fi_endpoint(F.dom_a, info_a_msg, &ep, NULL), 0);
	ck_assert_int_eq(fi_write(ep, &v, 8, NULL, 0, 0x1000, 1, NULL), -FI_ENOSYS);
	ck_assert_int_eq(fi_read(ep, &v, 8, NULL, 0, 0x1000, 1, NULL), -FI_ENOSYS);
	ck_assert_int_eq(fi_atomic(ep, &v, 1, NULL, 0, 0x1000, 1, FI_UINT64, FI_SUM, NULL),
			 -FI_ENOSYS);
	ck_assert_int_eq(fi_atomicvalid(ep, FI_UINT64, FI_SUM, &count), -FI_ENOSYS);
	ck_assert_int_eq(fi_close(&ep->fid), 0);
	/* FI_RMA without FI_ATOMIC */
	ck_assert_int_eq(fi_endpoint(F.dom_a, info_a_noev, &ep, NULL), 0);
	ck_assert_int_eq(fi_atomicvalid(ep, FI_UINT64, FI_SUM, &count), -FI_ENOSYS);
	ck_assert_int_eq(fi_close(&ep->fid), 0);
}
END_TEST

/* B initiates into A: the passive side does RMA and atomics too */
START_TEST(test_rma_from_passive_side)
{
	uint8_t tx[5000], rx[5000];
	uint64_t one = 1, res = 0;
	struct fx_region r;
	struct fx_conn c;

	fill(tx, sizeof(tx), 21);
	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_a, sizeof(tx), FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	ck_assert_int_eq(fi_write(c.ep_b, tx, sizeof(tx), NULL, 0, r.addr, r.key, tx), 0);
	expect_comp(c.cq_b, c.cq_a, tx, FI_RMA | FI_WRITE);
	ck_assert_int_eq(fi_read(c.ep_b, rx, sizeof(rx), NULL, 0, r.addr, r.key, rx), 0);
	expect_comp(c.cq_b, c.cq_a, rx, FI_RMA | FI_READ);
	ck_assert(!memcmp(rx, tx, sizeof(tx)));
	memset(r.buf, 0, 8);
	ck_assert_int_eq(fi_fetch_atomic(c.ep_b, &one, 1, NULL, &res, NULL, 0, r.addr, r.key,
					 FI_UINT64, FI_SUM, &res),
			 0);
	expect_comp(c.cq_b, c.cq_a, &res, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 0);
	ck_assert_uint_eq(*(uint64_t *)r.buf, 1);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

/* ---- atomics --------------------------------------------------------------------------- */

static uint64_t *at64(struct fx_region *r, size_t i)
{
	return (uint64_t *)(void *)(r->buf + 8 * i);
}

static const enum fi_datatype at_types[] = {FI_UINT64, FI_INT64};

START_TEST(test_atomic_ops)
{
	enum fi_datatype dt = at_types[_i];
	uint64_t v, cmp, res, res2;
	int64_t neg = -7;
	struct fi_ioc ioc, cioc, rioc;
	struct fi_rma_ioc rioc_remote;
	struct fi_msg_atomic msg;
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	connect_rw64(&c, &r);
	*at64(&r, 0) = 100;

	/* fi_atomic FI_SUM: FETCH_ADD, the result dropped */
	v = 5;
	ck_assert_int_eq(fi_atomic(c.ep_a, &v, 1, NULL, 0, r.addr, r.key, dt, FI_SUM, &ctx), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_WRITE);
	ck_assert_uint_eq(*at64(&r, 0), 105);

	/* fi_fetch_atomic FI_SUM returns the original (a negative addend) */
	memcpy(&v, &neg, 8);
	res = 0;
	ck_assert_int_eq(
	    fi_fetch_atomic(c.ep_a, &v, 1, NULL, &res, NULL, 0, r.addr, r.key, dt, FI_SUM, &ctx),
	    0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 105);
	ck_assert_uint_eq(*at64(&r, 0), 98);

	/* FI_ATOMIC_READ: FETCH_ADD of 0, the operand is not read */
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, NULL, 1, NULL, &res, NULL, 0, r.addr, r.key, dt,
					 FI_ATOMIC_READ, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 98);
	ck_assert_uint_eq(*at64(&r, 0), 98);

	/* FI_CSWAP that matches, then one that does not */
	v = 0x1122334455667788ull;
	cmp = 98;
	ck_assert_int_eq(fi_compare_atomic(c.ep_a, &v, 1, NULL, &cmp, NULL, &res, NULL, 0, r.addr,
					   r.key, dt, FI_CSWAP, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 98);
	ck_assert_uint_eq(*at64(&r, 0), 0x1122334455667788ull);
	cmp = 98;
	v = 1;
	ck_assert_int_eq(fi_compare_atomic(c.ep_a, &v, 1, NULL, &cmp, NULL, &res, NULL, 0, r.addr,
					   r.key, dt, FI_CSWAP, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 0x1122334455667788ull);
	ck_assert_uint_eq(*at64(&r, 0), 0x1122334455667788ull);

	/* the vector calls, on the second word */
	*at64(&r, 1) = 0;
	v = 3;
	ioc = (struct fi_ioc){&v, 1};
	ck_assert_int_eq(fi_atomicv(c.ep_a, &ioc, NULL, 1, 0, r.addr + 8, r.key, dt, FI_SUM, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_WRITE);
	rioc = (struct fi_ioc){&res, 1};
	ck_assert_int_eq(fi_fetch_atomicv(c.ep_a, &ioc, NULL, 1, &rioc, NULL, 1, 0, r.addr + 8,
					  r.key, dt, FI_SUM, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 3);
	cmp = 6;
	v = 60;
	cioc = (struct fi_ioc){&cmp, 1};
	ck_assert_int_eq(fi_compare_atomicv(c.ep_a, &ioc, NULL, 1, &cioc, NULL, 1, &rioc, NULL, 1,
					    0, r.addr + 8, r.key, dt, FI_CSWAP, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 6);
	ck_assert_uint_eq(*at64(&r, 1), 60);

	/* the msg calls, on the third word */
	*at64(&r, 2) = 10;
	v = 1;
	rioc_remote = (struct fi_rma_ioc){.addr = r.addr + 16, .count = 1, .key = r.key};
	msg = (struct fi_msg_atomic){.msg_iov = &ioc,
				     .iov_count = 1,
				     .rma_iov = &rioc_remote,
				     .rma_iov_count = 1,
				     .datatype = dt,
				     .op = FI_SUM,
				     .context = &ctx};
	ck_assert_int_eq(fi_atomicmsg(c.ep_a, &msg, FI_COMPLETION | FI_FENCE | FI_INJECT), 0);
	v = 1000; /* FI_INJECT: the operand was copied */
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_WRITE);
	ck_assert_uint_eq(*at64(&r, 2), 11);
	v = 2;
	ck_assert_int_eq(fi_fetch_atomicmsg(c.ep_a, &msg, &rioc, NULL, 1, FI_DELIVERY_COMPLETE), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 11);
	ck_assert_uint_eq(*at64(&r, 2), 13);
	msg.op = FI_CSWAP;
	cmp = 13;
	v = 130;
	ck_assert_int_eq(fi_compare_atomicmsg(c.ep_a, &msg, &cioc, NULL, 1, &rioc, NULL, 1, 0), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res, 13);
	ck_assert_uint_eq(*at64(&r, 2), 130);

	/* fi_inject_atomic: no completion, the buffer free on return */
	v = 7;
	ck_assert_int_eq(fi_inject_atomic(c.ep_a, &v, 1, 0, r.addr + 24, r.key, dt, FI_SUM), 0);
	v = 0;
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, NULL, 1, NULL, &res2, NULL, 0, r.addr + 24, r.key,
					 dt, FI_ATOMIC_READ, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(res2, 7);

	/* signed wrap-around is two's complement, as FETCH_ADD does it */
	*at64(&r, 4) = 0;
	memcpy(&v, &(int64_t){-1}, 8);
	ck_assert_int_eq(fi_atomic(c.ep_a, &v, 1, NULL, 0, r.addr + 32, r.key, dt, FI_SUM, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_WRITE);
	ck_assert_uint_eq(*at64(&r, 4), UINT64_MAX);
	expect_quiet(c.cq_a, c.cq_b);
	expect_quiet(c.cq_b, c.cq_a);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

/* The valid calls and fi_query_atomic agree, for every pair, with the
 * table in atomic.c: 64-bit FI_SUM (base, fetch), FI_ATOMIC_READ (fetch),
 * FI_CSWAP (compare); everything else -FI_EOPNOTSUPP */
static bool at_expected(int kind, int dt, int op)
{
	if (dt != FI_INT64 && dt != FI_UINT64)
		return false;
	if (kind == 0)
		return op == FI_SUM;
	if (kind == 1)
		return op == FI_SUM || op == FI_ATOMIC_READ;
	return op == FI_CSWAP;
}

START_TEST(test_atomic_valid)
{
	static const uint64_t qflags[3] = {0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC};
	struct fi_atomic_attr attr;
	struct fid_ep *ep;
	int supported = 0;

	ck_assert_int_eq(fi_endpoint(F.dom_a, F.info_a, &ep, NULL), 0);
	for (int kind = 0; kind < 3; kind++) {
		for (int op = 0; op < FI_ATOMIC_OP_LAST; op++) {
			for (int dt = 0; dt <= FI_UINT128; dt++) {
				bool want = at_expected(kind, dt, op);
				size_t count = 99;
				int ret;

				if (kind == 0)
					ret = fi_atomicvalid(ep, dt, op, &count);
				else if (kind == 1)
					ret = fi_fetch_atomicvalid(ep, dt, op, &count);
				else
					ret = fi_compare_atomicvalid(ep, dt, op, &count);
				ck_assert_msg(ret == (want ? 0 : -FI_EOPNOTSUPP),
					      "kind %d op %d dt %d: %d", kind, op, dt, ret);
				if (want)
					ck_assert_uint_eq(count, 1);
				memset(&attr, 0, sizeof(attr));
				ret = fi_query_atomic(F.dom_a, dt, op, &attr, qflags[kind]);
				ck_assert_msg(ret == (want ? 0 : -FI_EOPNOTSUPP),
					      "query kind %d op %d dt %d: %d", kind, op, dt, ret);
				if (want) {
					ck_assert_uint_eq(attr.count, 1);
					ck_assert_uint_eq(attr.size, 8);
					supported++;
				}
			}
		}
	}
	ck_assert_int_eq(supported, 2 * 4);
	ck_assert_int_eq(
	    fi_query_atomic(F.dom_a, FI_UINT64, FI_SUM, &attr, FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC),
	    -FI_EINVAL);
	ck_assert_int_eq(fi_query_atomic(F.dom_a, FI_UINT64, FI_SUM, &attr, FI_TAGGED),
			 -FI_EOPNOTSUPP);
	ck_assert_int_eq(fi_query_atomic(F.dom_b, FI_INT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC), 0);
	ck_assert_int_eq(fi_close(&ep->fid), 0);
}
END_TEST

/* unsupported pairs and counts are refused at post time, nothing is sent,
 * and the connection still works */
START_TEST(test_atomic_refused)
{
	uint64_t v = 1, v2[2] = {1, 1}, cmp = 0, res = 0;
	struct fi_ioc ioc2[2] = {{&v, 1}, {&v, 1}}, ioc = {v2, 2}, rioc = {&res, 1};
	struct fi_rma_ioc rma2[2];
	struct fi_msg_atomic msg;
	struct fx_region r;
	struct fx_conn c;
	int ctx;

	connect_rw64(&c, &r);
#define BASE(dt, op) fi_atomic(c.ep_a, &v, 1, NULL, 0, r.addr, r.key, dt, op, NULL)
#define FETCH(dt, op)                                                                              \
	fi_fetch_atomic(c.ep_a, &v, 1, NULL, &res, NULL, 0, r.addr, r.key, dt, op, NULL)
#define CMP(dt, op)                                                                                \
	fi_compare_atomic(c.ep_a, &v, 1, NULL, &cmp, NULL, &res, NULL, 0, r.addr, r.key, dt, op,   \
			  NULL)
	ck_assert_int_eq(BASE(FI_UINT64, FI_MIN), -FI_EOPNOTSUPP);
	ck_assert_int_eq(BASE(FI_UINT64, FI_BOR), -FI_EOPNOTSUPP);
	ck_assert_int_eq(BASE(FI_UINT64, FI_ATOMIC_WRITE), -FI_EOPNOTSUPP);
	ck_assert_int_eq(BASE(FI_UINT64, FI_ATOMIC_READ), -FI_EOPNOTSUPP);
	ck_assert_int_eq(BASE(FI_UINT32, FI_SUM), -FI_EOPNOTSUPP);
	ck_assert_int_eq(BASE(FI_DOUBLE, FI_SUM), -FI_EOPNOTSUPP);
	ck_assert_int_eq(BASE(FI_UINT128, FI_SUM), -FI_EOPNOTSUPP);
	ck_assert_int_eq(FETCH(FI_UINT64, FI_CSWAP), -FI_EOPNOTSUPP);
	ck_assert_int_eq(FETCH(FI_INT32, FI_SUM), -FI_EOPNOTSUPP);
	ck_assert_int_eq(FETCH(FI_UINT64, FI_MAX), -FI_EOPNOTSUPP);
	ck_assert_int_eq(CMP(FI_UINT64, FI_SUM), -FI_EOPNOTSUPP);
	ck_assert_int_eq(CMP(FI_UINT64, FI_CSWAP_NE), -FI_EOPNOTSUPP);
	ck_assert_int_eq(CMP(FI_UINT64, FI_MSWAP), -FI_EOPNOTSUPP);
	ck_assert_int_eq(CMP(FI_FLOAT, FI_CSWAP), -FI_EOPNOTSUPP);
#undef BASE
#undef FETCH
#undef CMP
	/* count 0 and 2 */
	ck_assert_int_eq(fi_atomic(c.ep_a, &v, 0, NULL, 0, r.addr, r.key, FI_UINT64, FI_SUM, NULL),
			 -FI_EINVAL);
	ck_assert_int_eq(fi_atomic(c.ep_a, v2, 2, NULL, 0, r.addr, r.key, FI_UINT64, FI_SUM, NULL),
			 -FI_EINVAL);
	ck_assert_int_eq(fi_inject_atomic(c.ep_a, v2, 2, 0, r.addr, r.key, FI_UINT64, FI_SUM),
			 -FI_EINVAL);
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, v2, 2, NULL, &res, NULL, 0, r.addr, r.key,
					 FI_UINT64, FI_SUM, NULL),
			 -FI_EINVAL);
	ck_assert_int_eq(fi_compare_atomic(c.ep_a, &v, 0, NULL, &cmp, NULL, &res, NULL, 0, r.addr,
					   r.key, FI_UINT64, FI_CSWAP, NULL),
			 -FI_EINVAL);
	ck_assert_int_eq(
	    fi_atomicv(c.ep_a, ioc2, NULL, 2, 0, r.addr, r.key, FI_UINT64, FI_SUM, NULL),
	    -FI_EINVAL);
	ck_assert_int_eq(
	    fi_atomicv(c.ep_a, &ioc, NULL, 1, 0, r.addr, r.key, FI_UINT64, FI_SUM, NULL),
	    -FI_EINVAL);
	ck_assert_int_eq(fi_fetch_atomicv(c.ep_a, ioc2, NULL, 1, &rioc, NULL, 0, 0, r.addr, r.key,
					  FI_UINT64, FI_SUM, NULL),
			 -FI_EINVAL);
	/* a result buffer is needed */
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, &v, 1, NULL, NULL, NULL, 0, r.addr, r.key,
					 FI_UINT64, FI_SUM, NULL),
			 -FI_EINVAL);
	/* msg forms: one remote element, no CQ data */
	rma2[0] = (struct fi_rma_ioc){.addr = r.addr, .count = 1, .key = r.key};
	rma2[1] = rma2[0];
	msg = (struct fi_msg_atomic){.msg_iov = ioc2,
				     .iov_count = 1,
				     .rma_iov = rma2,
				     .rma_iov_count = 2,
				     .datatype = FI_UINT64,
				     .op = FI_SUM};
	ck_assert_int_eq(fi_atomicmsg(c.ep_a, &msg, 0), -FI_EINVAL);
	msg.rma_iov_count = 1;
	rma2[0].count = 2;
	ck_assert_int_eq(fi_atomicmsg(c.ep_a, &msg, 0), -FI_EINVAL);
	rma2[0].count = 1;
	ck_assert_int_eq(fi_atomicmsg(c.ep_a, &msg, FI_REMOTE_CQ_DATA), -FI_EBADFLAGS);
	ck_assert_int_eq(fi_fetch_atomicmsg(c.ep_a, &msg, &rioc, NULL, 1, FI_MULTI_RECV),
			 -FI_EBADFLAGS);
	msg.op = FI_MIN;
	ck_assert_int_eq(fi_atomicmsg(c.ep_a, &msg, 0), -FI_EOPNOTSUPP);
	ck_assert_uint_eq(*at64(&r, 0), 0);
	expect_quiet(c.cq_a, c.cq_b);

	/* still connected and working */
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, &v, 1, NULL, &res, NULL, 0, r.addr, r.key,
					 FI_UINT64, FI_SUM, &ctx),
			 0);
	expect_comp(c.cq_a, c.cq_b, &ctx, FI_ATOMIC | FI_READ);
	ck_assert_uint_eq(*at64(&r, 0), 1);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

/* Atomics the target refuses, FI_EIO at the initiator and nothing written:
 * a misaligned remote address (NAK invalid request, IB status 9); a
 * region without both FI_REMOTE_READ and FI_REMOTE_WRITE, which atomics
 * need (remote access error, IB status 10). */
enum { AT_FETCH_SUM_U64, AT_SUM_I64, AT_READ_I64 };

static const struct {
	uint64_t access;
	size_t off; /* into the region */
	int call;
	uint8_t fill;
	int ib;
} at_refused[] = {
    {FI_REMOTE_READ | FI_REMOTE_WRITE, 4, AT_FETCH_SUM_U64, 0x33, 9},
    {FI_REMOTE_WRITE, 0, AT_SUM_I64, 0x44, 10},
    {FI_REMOTE_READ, 0, AT_READ_I64, 0x44, 10},
};

START_TEST(test_atomic_target_refuses)
{
	uint64_t v = 1, res = 0;
	struct fx_region r;
	struct fx_conn c;
	uint64_t addr;
	int ctx;

	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, 64, at_refused[_i].access, at_refused[_i].fill);
	addr = r.addr + at_refused[_i].off;
	switch (at_refused[_i].call) {
	case AT_FETCH_SUM_U64:
		ck_assert_int_eq(fi_fetch_atomic(c.ep_a, &v, 1, NULL, &res, NULL, 0, addr, r.key,
						 FI_UINT64, FI_SUM, &ctx),
				 0);
		break;
	case AT_SUM_I64:
		ck_assert_int_eq(
		    fi_atomic(c.ep_a, &v, 1, NULL, 0, addr, r.key, FI_INT64, FI_SUM, &ctx), 0);
		break;
	case AT_READ_I64:
		ck_assert_int_eq(fi_fetch_atomic(c.ep_a, NULL, 1, NULL, &res, NULL, 0, addr, r.key,
						 FI_INT64, FI_ATOMIC_READ, &ctx),
				 0);
		break;
	}
	expect_err(c.cq_a, c.cq_b, &ctx, FI_EIO, at_refused[_i].ib);
	ck_assert_uint_eq(res, 0);
	region_check_fill(&r, 0, at_refused[_i].fill);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

/* ---- completion semantics ---------------------------------------------------------------- */

/* FI_SELECTIVE_COMPLETION on the initiator: only FI_COMPLETION operations
 * complete, the counter sees all, errors always complete */
START_TEST(test_selective_tx)
{
	struct fid_cntr *cw = cntr_open(F.dom_a, FI_WAIT_NONE),
			*cr = cntr_open(F.dom_a, FI_WAIT_NONE);
	struct fid_cntr *cs = cntr_open(F.dom_a, FI_WAIT_NONE);
	struct fx_side sa = {.cq_flags = FI_SELECTIVE_COMPLETION,
			     .cntr = {cw, cr, cs},
			     .cntr_flags = {FI_WRITE, FI_READ, FI_SEND}};
	uint8_t tx[64], rx[64], rbuf[2][16];
	struct iovec iov = {tx, 64}, riov = {rx, 64};
	struct fi_rma_iov rma;
	struct fi_msg_rma msg;
	struct fi_msg smsg;
	struct iovec siov = {"sel", 4};
	uint64_t v = 1, flags;
	struct fx_region r;
	struct fx_conn c;
	int ctx[4];

	fill(tx, 64, 4);
	fx_connect_cfg(&F, &c, &sa, NULL);
	fx_region_open(&r, F.dom_b, 256, FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[0], 16, NULL, 0, rbuf[0]), 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[1], 16, NULL, 0, rbuf[1]), 0);

	/* without FI_COMPLETION: nothing on the CQ */
	ck_assert_int_eq(fi_write(c.ep_a, tx, 64, NULL, 0, r.addr, r.key, &ctx[0]), 0);
	ck_assert_int_eq(fi_read(c.ep_a, rx, 64, NULL, 0, r.addr, r.key, &ctx[0]), 0);
	ck_assert_int_eq(fi_send(c.ep_a, "x", 2, NULL, 0, &ctx[0]), 0);
	ck_assert_int_eq(
	    fi_atomic(c.ep_a, &v, 1, NULL, 0, r.addr + 128, r.key, FI_UINT64, FI_SUM, &ctx[0]), 0);
	cntr_expect(cw, c.cq_b, 2, 0);
	cntr_expect(cr, c.cq_b, 1, 0);
	cntr_expect(cs, c.cq_b, 1, 0);
	expect_quiet(c.cq_a, c.cq_b);
	ck_assert(!memcmp(rx, tx, 64));

	/* with FI_COMPLETION: one entry each */
	rma = (struct fi_rma_iov){.addr = r.addr, .len = 64, .key = r.key};
	msg = (struct fi_msg_rma){.msg_iov = &iov,
				  .iov_count = 1,
				  .rma_iov = &rma,
				  .rma_iov_count = 1,
				  .context = &ctx[1]};
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, FI_COMPLETION), 0);
	msg.msg_iov = &riov;
	msg.context = &ctx[2];
	ck_assert_int_eq(fi_readmsg(c.ep_a, &msg, FI_COMPLETION), 0);
	memset(&smsg, 0, sizeof(smsg));
	smsg.msg_iov = &siov;
	smsg.iov_count = 1;
	smsg.context = &ctx[3];
	ck_assert_int_eq(fi_sendmsg(c.ep_a, &smsg, FI_COMPLETION), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx[1], FI_RMA | FI_WRITE);
	expect_comp(c.cq_a, c.cq_b, &ctx[2], FI_RMA | FI_READ);
	expect_comp(c.cq_a, c.cq_b, &ctx[3], FI_SEND | FI_MSG);
	cntr_expect(cw, c.cq_b, 3, 0);

	/* FI_COMPLETION as the default op flag */
	flags = FI_TRANSMIT | FI_COMPLETION;
	ck_assert_int_eq(fi_control(&c.ep_a->fid, FI_SETOPSFLAG, &flags), 0);
	flags = FI_TRANSMIT;
	ck_assert_int_eq(fi_control(&c.ep_a->fid, FI_GETOPSFLAG, &flags), 0);
	ck_assert_uint_eq(flags, FI_COMPLETION);
	ck_assert_int_eq(fi_write(c.ep_a, tx, 8, NULL, 0, r.addr, r.key, &ctx[0]), 0);
	expect_comp(c.cq_a, c.cq_b, &ctx[0], FI_RMA | FI_WRITE);
	flags = FI_TRANSMIT | FI_MULTI_RECV;
	ck_assert_int_eq(fi_control(&c.ep_a->fid, FI_SETOPSFLAG, &flags), -FI_EINVAL);
	flags = FI_TRANSMIT;
	ck_assert_int_eq(fi_control(&c.ep_a->fid, FI_SETOPSFLAG, &flags), 0);

	/* an error completes anyway, and counts as an error */
	ck_assert_int_eq(fi_write(c.ep_a, tx, 8, NULL, 0, r.addr, r.key ^ 0x10000, &ctx[0]), 0);
	expect_err(c.cq_a, c.cq_b, &ctx[0], FI_EIO, 10);
	cntr_expect(cw, c.cq_b, 4, 1);
	fx_region_close(&r);
	fx_conn_close(&c);
	ck_assert_int_eq(fi_close(&cw->fid), 0);
	ck_assert_int_eq(fi_close(&cr->fid), 0);
	ck_assert_int_eq(fi_close(&cs->fid), 0);
}
END_TEST

/* FI_SELECTIVE_COMPLETION on the target's receives */
START_TEST(test_selective_rx)
{
	struct fid_cntr *crecv = cntr_open(F.dom_b, FI_WAIT_UNSPEC);
	struct fx_side sb = {
	    .cq_flags = FI_SELECTIVE_COMPLETION, .cntr = {crecv}, .cntr_flags = {FI_RECV}};
	char rbuf[5][16], small[2];
	struct iovec iov[5], siov = {small, sizeof(small)};
	struct fi_msg msg[5];
	struct fi_cq_data_entry e;
	struct fx_region r;
	struct fx_conn c;
	uint64_t flags;

	fx_connect_cfg(&F, &c, NULL, &sb);
	fx_region_open(&r, F.dom_b, 64, FI_REMOTE_WRITE, 0);
	memset(rbuf, 0, sizeof(rbuf));
	for (int i = 0; i < 5; i++) {
		iov[i] = (struct iovec){rbuf[i], 16};
		memset(&msg[i], 0, sizeof(msg[i]));
		msg[i].msg_iov = &iov[i];
		msg[i].iov_count = 1;
		msg[i].context = rbuf[i];
	}
	ck_assert_int_eq(fi_recvmsg(c.ep_b, &msg[0], 0), 0);
	ck_assert_int_eq(fi_recvmsg(c.ep_b, &msg[1], FI_COMPLETION), 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[2], 16, NULL, 0, rbuf[2]), 0); /* op_flags 0 */
	flags = FI_RECV | FI_COMPLETION;
	ck_assert_int_eq(fi_control(&c.ep_b->fid, FI_SETOPSFLAG, &flags), 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[3], 16, NULL, 0, rbuf[3]), 0);
	ck_assert_int_eq(fi_recvmsg(c.ep_b, &msg[4], FI_MULTI_RECV), -FI_EBADFLAGS);
	for (int i = 0; i < 4; i++) {
		char m[8];

		snprintf(m, sizeof(m), "m%d", i);
		ck_assert_int_eq(fi_send(c.ep_a, m, 3, NULL, 0, NULL), 0);
	}
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, rbuf[1]);
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, rbuf[3]);
	ck_assert_int_eq(fi_cntr_wait(crecv, 4, 5000), 0);
	for (int i = 0; i < 4; i++) {
		char m[8];

		snprintf(m, sizeof(m), "m%d", i);
		ck_assert_str_eq(rbuf[i], m);
	}
	/* a write with CQ data is always reported */
	ck_assert_int_eq(fi_writedata(c.ep_a, "d", 2, NULL, 42, 0, r.addr, r.key, NULL), 0);
	expect_imm(c.cq_b, c.cq_a, NULL, 42, 2);
	expect_quiet(c.cq_b, c.cq_a);
	/* and so is an error, on a receive without FI_COMPLETION */
	memset(&msg[0], 0, sizeof(msg[0]));
	msg[0].msg_iov = &siov;
	msg[0].iov_count = 1;
	msg[0].context = small;
	ck_assert_int_eq(fi_recvmsg(c.ep_b, &msg[0], 0), 0);
	ck_assert_int_eq(fi_send(c.ep_a, "too long", 9, NULL, 0, NULL), 0);
	expect_err(c.cq_b, c.cq_a, small, FI_ETRUNC, 1);
	cntr_expect(crecv, c.cq_a, 4, 1);
	fx_region_close(&r);
	fx_conn_close(&c);
	ck_assert_int_eq(fi_close(&crecv->fid), 0);
}
END_TEST

/* counters of every kind, on both sides */
START_TEST(test_counters)
{
	struct fid_cntr *cs = cntr_open(F.dom_a, FI_WAIT_UNSPEC),
			*crd = cntr_open(F.dom_a, FI_WAIT_NONE);
	struct fid_cntr *cwr = cntr_open(F.dom_a, FI_WAIT_NONE),
			*crecv = cntr_open(F.dom_b, FI_WAIT_NONE);
	struct fid_cntr *crr = cntr_open(F.dom_b, FI_WAIT_UNSPEC),
			*crw = cntr_open(F.dom_b, FI_WAIT_NONE);
	struct fx_side sa = {.cntr = {cs, crd, cwr}, .cntr_flags = {FI_SEND, FI_READ, FI_WRITE}};
	struct fx_side sb = {.cntr = {crecv, crr, crw},
			     .cntr_flags = {FI_RECV, FI_REMOTE_READ, FI_REMOTE_WRITE}};
	uint8_t *big = malloc(64 * KiB), rbuf[2][8], rx[64];
	uint64_t v = 3, cmp = 0, res;
	struct fx_region r;
	struct fx_conn c;

	fill(big, 64 * KiB, 1);
	fx_connect_cfg(&F, &c, &sa, &sb);
	fx_region_open(&r, F.dom_b, 64 * KiB, FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[0], 8, NULL, 0, NULL), 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rbuf[1], 8, NULL, 0, NULL), 0);
	ck_assert_int_eq(fi_send(c.ep_a, "a", 2, NULL, 0, NULL), 0);
	ck_assert_int_eq(fi_inject(c.ep_a, "b", 2, 0), 0);
	cntr_expect(cs, c.cq_b, 2, 0);
	cntr_expect(crecv, c.cq_a, 2, 0);

	/* writes: plain, with data, injected, multi-packet -- each once */
	ck_assert_int_eq(fi_write(c.ep_a, big, 100, NULL, 0, r.addr, r.key, NULL), 0);
	ck_assert_int_eq(fi_writedata(c.ep_a, big, 100, NULL, 1, 0, r.addr, r.key, NULL), 0);
	ck_assert_int_eq(fi_inject_write(c.ep_a, big, 100, 0, r.addr, r.key), 0);
	ck_assert_int_eq(fi_write(c.ep_a, big, 64 * KiB, NULL, 0, r.addr, r.key, NULL), 0);
	cntr_expect(cwr, c.cq_b, 4, 0);
	cntr_expect(crw, c.cq_a, 4, 0);
	ck_assert(!memcmp(r.buf, big, 64 * KiB));
	/* reads */
	ck_assert_int_eq(fi_read(c.ep_a, rx, 64, NULL, 0, r.addr, r.key, NULL), 0);
	ck_assert_int_eq(fi_read(c.ep_a, big, 64 * KiB, NULL, 0, r.addr, r.key, NULL), 0);
	cntr_expect(crd, c.cq_b, 2, 0);
	ck_assert_int_eq(fi_cntr_wait(crr, 2, 5000), 0);
	/* atomics: base SUM is a write; fetching SUM a remote write too (on
	 * the wire it is the same FETCH_ADD); ATOMIC_READ and CSWAP reads */
	ck_assert_int_eq(fi_atomic(c.ep_a, &v, 1, NULL, 0, r.addr, r.key, FI_UINT64, FI_SUM, NULL),
			 0);
	ck_assert_int_eq(fi_inject_atomic(c.ep_a, &v, 1, 0, r.addr, r.key, FI_UINT64, FI_SUM), 0);
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, &v, 1, NULL, &res, NULL, 0, r.addr, r.key,
					 FI_UINT64, FI_SUM, NULL),
			 0);
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, NULL, 1, NULL, &res, NULL, 0, r.addr, r.key,
					 FI_UINT64, FI_ATOMIC_READ, NULL),
			 0);
	ck_assert_int_eq(fi_compare_atomic(c.ep_a, &v, 1, NULL, &cmp, NULL, &res, NULL, 0, r.addr,
					   r.key, FI_UINT64, FI_CSWAP, NULL),
			 0);
	cntr_expect(cwr, c.cq_b, 6, 0);
	cntr_expect(crd, c.cq_b, 5, 0);
	cntr_expect(crw, c.cq_a, 7, 0);
	cntr_expect(crr, c.cq_a, 4, 0);
	/* the CQ has what completed, injections aside: 1 send, 3 writes,
	 * 2 reads, 4 atomics; the target 2 receives and the CQ data */
	ck_assert_int_eq(cq_drain(c.cq_a), 10);
	ck_assert_int_eq(cq_drain(c.cq_b), 3);
	/* and a failure: counted as an error on both sides */
	ck_assert_int_eq(fi_write(c.ep_a, big, 100, NULL, 0, r.addr + 64 * KiB - 10, r.key, NULL),
			 0);
	expect_err(c.cq_a, c.cq_b, NULL, FI_EIO, 10);
	cntr_expect(cwr, c.cq_b, 6, 1);
	cntr_expect(crw, c.cq_a, 7, 1);
	/* flushed operations count as errors of their kind */
	ck_assert_int_eq(fi_read(c.ep_a, rx, 8, NULL, 0, r.addr, r.key, NULL), 0);
	ck_assert_int_eq(fi_send(c.ep_a, "c", 2, NULL, 0, NULL), 0);
	expect_err(c.cq_a, c.cq_b, NULL, FI_ECANCELED, 5);
	expect_err(c.cq_a, c.cq_b, NULL, FI_ECANCELED, 5);
	cntr_expect(crd, c.cq_b, 5, 1);
	cntr_expect(cs, c.cq_b, 2, 1);
	ck_assert_int_eq(fi_cntr_wait(cs, 3, 100), -FI_ETIMEDOUT);

	/* a counter cannot close while bound */
	ck_assert_int_eq(fi_close(&cs->fid), -FI_EBUSY);
	fx_region_close(&r);
	fx_conn_close(&c);
	ck_assert_int_eq(fi_close(&cs->fid), 0);
	ck_assert_int_eq(fi_close(&crd->fid), 0);
	ck_assert_int_eq(fi_close(&cwr->fid), 0);
	ck_assert_int_eq(fi_close(&crecv->fid), 0);
	ck_assert_int_eq(fi_close(&crr->fid), 0);
	ck_assert_int_eq(fi_close(&crw->fid), 0);
	free(big);
}
END_TEST

START_TEST(test_cntr_bind_errors)
{
	struct fid_cntr *c1 = cntr_open(F.dom_a, FI_WAIT_NONE),
			*c2 = cntr_open(F.dom_a, FI_WAIT_NONE);
	struct fid_cntr *cb = cntr_open(F.dom_b, FI_WAIT_NONE);
	struct fid_ep *ep;

	/* remote counters need FI_RMA_EVENT */
	ck_assert_int_eq(fi_endpoint(F.dom_a, info_a_noev, &ep, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &c1->fid, FI_REMOTE_WRITE), -FI_EINVAL);
	ck_assert_int_eq(fi_ep_bind(ep, &c1->fid, FI_REMOTE_READ), -FI_EINVAL);
	ck_assert_int_eq(fi_ep_bind(ep, &c1->fid, FI_WRITE | FI_READ), 0);
	ck_assert_int_eq(fi_close(&ep->fid), 0);

	ck_assert_int_eq(fi_endpoint(F.dom_a, F.info_a, &ep, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &c1->fid, 0), -FI_EBADFLAGS);
	ck_assert_int_eq(fi_ep_bind(ep, &c1->fid, FI_SEND | FI_TAGGED), -FI_EBADFLAGS);
	ck_assert_int_eq(fi_ep_bind(ep, &cb->fid, FI_SEND), -FI_EINVAL); /* other domain */
	ck_assert_int_eq(fi_ep_bind(ep, &c1->fid, FI_SEND | FI_REMOTE_WRITE | FI_REMOTE_READ), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &c2->fid, FI_SEND), -FI_EINVAL); /* taken */
	ck_assert_int_eq(fi_ep_bind(ep, &c2->fid, FI_RECV | FI_READ | FI_WRITE), 0);
	ck_assert_int_eq(fi_close(&c1->fid), -FI_EBUSY);
	ck_assert_int_eq(fi_close(&ep->fid), 0);
	ck_assert_int_eq(fi_close(&c1->fid), 0);
	ck_assert_int_eq(fi_close(&c2->fid), 0);
	ck_assert_int_eq(fi_close(&cb->fid), 0);
}
END_TEST

/* FI_FENCE, the completion levels, FI_MORE */
START_TEST(test_fence_levels_more)
{
	static const uint64_t levels[] = {FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE,
					  FI_DELIVERY_COMPLETE};
	uint8_t tx[9][512], back[512];
	struct iovec iov, riov = {back, 512};
	struct fi_rma_iov rma;
	struct fi_msg_rma msg;
	uint64_t v = 5, res;
	struct fx_region r;
	struct fx_conn c;
	int ctx[9];

	fx_connect(&F, &c);
	fx_region_open(&r, F.dom_b, 9 * 512, FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	msg = (struct fi_msg_rma){.iov_count = 1, .rma_iov = &rma, .rma_iov_count = 1};

	/* a fenced read sees the write before it; a fenced write follows the
	 * atomic before it */
	fill(tx[0], 512, 50);
	ck_assert_int_eq(fi_write(c.ep_a, tx[0], 512, NULL, 0, r.addr, r.key, NULL), 0);
	rma = (struct fi_rma_iov){.addr = r.addr, .len = 512, .key = r.key};
	msg.msg_iov = &riov;
	msg.context = &ctx[0];
	ck_assert_int_eq(fi_readmsg(c.ep_a, &msg, FI_FENCE), 0);
	expect_comp(c.cq_a, c.cq_b, NULL, FI_RMA | FI_WRITE);
	expect_comp(c.cq_a, c.cq_b, &ctx[0], FI_RMA | FI_READ);
	ck_assert(!memcmp(back, tx[0], 512));
	memset(r.buf + 512, 0, 8);
	ck_assert_int_eq(fi_fetch_atomic(c.ep_a, &v, 1, NULL, &res, NULL, 0, r.addr + 512, r.key,
					 FI_UINT64, FI_SUM, NULL),
			 0);
	memset(tx[1], 0x77, 8);
	iov = (struct iovec){tx[1], 8};
	rma = (struct fi_rma_iov){.addr = r.addr + 512, .len = 8, .key = r.key};
	msg.msg_iov = &iov;
	msg.context = &ctx[1];
	ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, FI_FENCE | FI_COMPLETION), 0);
	expect_comp(c.cq_a, c.cq_b, NULL, FI_ATOMIC | FI_READ);
	expect_comp(c.cq_a, c.cq_b, &ctx[1], FI_RMA | FI_WRITE);
	ck_assert_uint_eq(res, 0);
	ck_assert_uint_eq(*at64(&r, 64), 0x7777777777777777ull);

	/* every completion level completes at the ACK: the data is at the
	 * target when the initiator sees the completion */
	for (int i = 0; i < 3; i++) {
		fill(tx[i], 512, 60 + i);
		iov = (struct iovec){tx[i], 512};
		rma =
		    (struct fi_rma_iov){.addr = r.addr + 1024 + 512 * i, .len = 512, .key = r.key};
		msg.context = &ctx[i];
		ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, levels[i]), 0);
		expect_comp(c.cq_a, c.cq_b, &ctx[i], FI_RMA | FI_WRITE);
		ck_assert(!memcmp(r.buf + 1024 + 512 * i, tx[i], 512));
	}

	/* FI_MORE: a batch, the last one without it; all complete in order */
	for (int i = 0; i < 9; i++) {
		fill(tx[i], 512, 70 + i);
		iov = (struct iovec){tx[i], 512};
		rma = (struct fi_rma_iov){.addr = r.addr + 512 * i, .len = 512, .key = r.key};
		msg.context = &ctx[i];
		ck_assert_int_eq(fi_writemsg(c.ep_a, &msg, i < 8 ? FI_MORE : 0), 0);
	}
	for (int i = 0; i < 9; i++)
		expect_comp(c.cq_a, c.cq_b, &ctx[i], FI_RMA | FI_WRITE);
	for (int i = 0; i < 9; i++)
		ck_assert(!memcmp(r.buf + 512 * i, tx[i], 512));
	expect_quiet(c.cq_a, c.cq_b);
	fx_region_close(&r);
	fx_conn_close(&c);
}
END_TEST

static void setup(void)
{
	struct {
		uint64_t caps, mode;
		struct fi_info **a, **b;
	} want[] = {
	    {RMA_CAPS, FI_RX_CQ_DATA, &info_a_rx, &info_b_rx},
	    {FI_MSG, 0, &info_a_msg, NULL},
	    {FI_MSG | FI_RMA, 0, &info_a_noev, &info_b_noev},
	};

	fx_open(&F, PAIR, RMA_CAPS, 0);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		fx_getinfo(PAIR, want[k].caps, want[k].mode, want[k].a, want[k].b);
}

static void teardown(void)
{
	fx_close(&F);
	fi_freeinfo(info_a_rx);
	fi_freeinfo(info_b_rx);
	fi_freeinfo(info_a_msg);
	fi_freeinfo(info_a_noev);
	fi_freeinfo(info_b_noev);
}

int main(void)
{
	Suite *s = suite_create("fi_rma");
	TCase *tc = tcase_create("rma");

	fx_env(PAIR);
	tcase_set_timeout(tc, 120);
	/* in each test's child (fi_fixture.h: fx_run) */
	fx_add_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_getinfo);
	tcase_add_loop_test(tc, test_write_sizes, 0, N_RMA_SIZES);
	tcase_add_loop_test(tc, test_read_sizes, 0, N_RMA_SIZES);
	tcase_add_loop_test(tc, test_writedata_sizes, 0, N_RMA_SIZES);
	tcase_add_loop_test(tc, test_writedata_rx_cq_data, 0,
			    sizeof(rxcq_sizes) / sizeof(rxcq_sizes[0]));
	tcase_add_test(tc, test_writedata_rx_cq_data_rnr);
	tcase_add_test(tc, test_writedata_mixed_with_recv);
	tcase_add_test(tc, test_writev_readv);
	tcase_add_test(tc, test_writemsg_readmsg);
	tcase_add_test(tc, test_inject_write);
	tcase_add_loop_test(tc, test_rma_access_errors, 0, F_NUM);
	tcase_add_test(tc, test_rma_refused_at_post);
	tcase_add_test(tc, test_rma_without_caps);
	tcase_add_test(tc, test_rma_from_passive_side);
	tcase_add_loop_test(tc, test_atomic_ops, 0, 2);
	tcase_add_test(tc, test_atomic_valid);
	tcase_add_test(tc, test_atomic_refused);
	tcase_add_loop_test(tc, test_atomic_target_refuses, 0,
			    sizeof(at_refused) / sizeof(at_refused[0]));
	tcase_add_test(tc, test_selective_tx);
	tcase_add_test(tc, test_selective_rx);
	tcase_add_test(tc, test_counters);
	tcase_add_test(tc, test_cntr_bind_errors);
	tcase_add_test(tc, test_fence_levels_more);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
