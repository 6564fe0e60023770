/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the suites that drive droce through the public libfabric API share:
 * a fabric with two domains on the two ends of an in-process DPDK link
 * ("pair:" devices), a connected endpoint pair, bounded waits on EQs and
 * CQs, and registered regions framed by guard bytes.  Failures are Check
 * assertions.  Side A (pair:NAME:0, 192.0.2.1) connects; side B
 * (pair:NAME:1, 192.0.2.2) listens.
 */
#ifndef FI_FIXTURE_H
#define FI_FIXTURE_H

#include <check.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#define FX_NS_PER_S 1000000000ull
#define FX_GUARD    64
#define FX_IP_A	    0xc0000201u /* 192.0.2.1 */
#define FX_IP_B	    0xc0000202u /* 192.0.2.2 */

struct fx {
	struct fi_info *info_a, *info_b;
	struct fid_fabric *fabric;
	struct fid_domain *dom_a, *dom_b;
};

struct fx_conn {
	struct fid_eq *eq_a, *eq_b;
	struct fid_pep *pep;
	struct fid_ep *ep_a, *ep_b;
	struct fid_cq *cq_a, *cq_b;
	struct sockaddr_in server;
};

struct fx_region {
	uint8_t *base; /* FX_GUARD bytes of 0xa5, size bytes, FX_GUARD of 0x5a */
	uint8_t *buf;
	size_t size;
	struct fid_mr *mr;
	uint64_t key;
	uint64_t addr; /* of buf: the target address under FI_MR_VIRT_ADDR */
};

/* What one side of fx_connect_cfg binds: its info (NULL: the fixture's),
 * extra CQ bind flags (FI_SELECTIVE_COMPLETION) and counters. */
#define FX_MAX_CNTR 6
struct fx_side {
	const struct fi_info *info;
	uint64_t cq_flags; /* added to FI_TRANSMIT | FI_RECV */
	struct fid_cntr *cntr[FX_MAX_CNTR];
	uint64_t cntr_flags[FX_MAX_CNTR];
};

uint64_t fx_now_ns(void);

/* Before libfabric initialises: the provider of this build and the two
 * ends of pair NAME as droce's devices. */
void fx_env(const char *pair_name);
/* The infos of pair NAME's two ends for FI_EP_MSG with caps and mode;
 * b may be NULL (A only). */
void fx_getinfo(const char *pair_name, uint64_t caps, uint64_t mode, struct fi_info **a,
		struct fi_info **b);
/* Fabric and both domains for endpoints with these caps; queue_size, if
 * not 0, is the endpoints' tx and rx queue depth. */
void fx_open(struct fx *f, const char *pair_name, uint64_t caps, size_t queue_size);
void fx_close(struct fx *f);

/* Listen on B, connect from A, accept: both sides see FI_CONNECTED. */
void fx_connect(struct fx *f, struct fx_conn *c);
/* The same with what each side binds (NULL: fixture's info, no more). */
void fx_connect_cfg(struct fx *f, struct fx_conn *c, const struct fx_side *sa,
		    const struct fx_side *sb);
/* The steps of fx_connect, for tests that put CM data in them or stop
 * half-way: B's EQ, CQ and listening pep (at FX_IP_B, a port assigned);
 * A's EQ, CQ and endpoint, fi_connect with data; B's FI_CONNREQ carrying
 * want (want_len bytes), its endpoint, fi_accept with data; an
 * FI_CONNECTED event for ep carrying want. */
/* An EQ on the fabric and a CQ (FI_CQ_FORMAT_DATA) on dom, no wait objects. */
void fx_open_eq_cq(struct fx *f, struct fid_domain *dom, struct fid_eq **eq, struct fid_cq **cq);
void fx_listen(struct fx *f, struct fx_conn *c, const struct fx_side *sb);
void fx_connect_a(struct fx *f, struct fx_conn *c, const struct fx_side *sa, const void *data,
		  size_t len);
void fx_accept_b(struct fx *f, struct fx_conn *c, const struct fx_side *sb, const void *want,
		 size_t want_len, const void *data, size_t len);
void fx_expect_connected(struct fid_eq *eq, struct fid_ep *ep, const void *want, size_t want_len);
void fx_conn_close(struct fx_conn *c);

/* One event / completion within 5 s; each read drives the devices (and
 * `other` is read meanwhile, one thread driving both sides). */
ssize_t fx_eq_wait(struct fid_eq *eq, uint32_t *event, void *buf, size_t len);
ssize_t fx_cq_wait(struct fid_cq *cq, struct fid_cq *other, struct fi_cq_data_entry *e);
/* Drive both CQs for ms milliseconds; returns completions seen on cq. */
int fx_cq_drive(struct fid_cq *cq, struct fid_cq *other, unsigned ms);

void fx_region_open(struct fx_region *r, struct fid_domain *dom, size_t size, uint64_t access,
		    uint8_t init);
void fx_region_check_guards(const struct fx_region *r);
void fx_region_close(struct fx_region *r);

/* One of droce's counters of fid (a domain or an endpoint:
 * fi_droce_ops.counters) by name; the test fails if there is none. */
uint64_t fx_counter(struct fid *fid, const char *name);

/* Run a suite, each test in a forked child (unless CK_FORK=no, for a
 * debugger): EXIT_SUCCESS or EXIT_FAILURE.  DPDK's EAL starts once per
 * process and its threads do not survive fork(), so a suite run this way
 * must not touch libfabric in the parent: its fixture opening the fabric
 * is a checked one (tcase_add_checked_fixture), run in each child, which
 * starts its own EAL (--no-huge, --no-shconf, --file-prefix=droce-PID).
 * A crash then fails that one test and the next ones still run. */
int fx_run(Suite *s);
/* Add the fixture opening the fabric to tc: checked (in each test's
 * child) when Check forks, unchecked (once for the suite) under
 * CK_FORK=no, where a process opening the pair's devices anew for each of
 * dozens of tests runs out of them. */
void fx_add_fixture(TCase *tc, void (*setup)(void), void (*teardown)(void));

#endif /* FI_FIXTURE_H */
