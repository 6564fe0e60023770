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
};

uint64_t fx_now_ns(void);

/* Before libfabric initialises: the provider of this build and the two
 * ends of pair NAME as droce's devices. */
void fx_env(const char *pair_name);
/* Fabric and both domains for endpoints with these caps; queue_size, if
 * not 0, is the endpoints' tx and rx queue depth. */
void fx_open(struct fx *f, const char *pair_name, uint64_t caps, size_t queue_size);
void fx_close(struct fx *f);

/* Listen on B, connect from A, accept: both sides see FI_CONNECTED. */
void fx_connect(struct fx *f, struct fx_conn *c);
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

/* Run a suite in this process (DPDK's EAL starts once per process: no
 * forking per test); EXIT_SUCCESS or EXIT_FAILURE. */
int fx_run(Suite *s);

#endif /* FI_FIXTURE_H */
