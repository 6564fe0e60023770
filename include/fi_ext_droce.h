/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * droce's provider-specific operations, reached the libfabric way:
 *
 *	struct fi_droce_ops *ops;
 *	fi_open_ops(&domain->fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL);
 *
 * on a domain or an endpoint of the droce provider.  They show what the
 * wire and the engine see: an endpoint's queue pair (QPNs, PSNs, state)
 * and the counters of a domain's port or an endpoint's QP, drops by
 * reason among them.  For debugging tools and tests; nothing here changes
 * state.  Installed as <rdma/fi_ext_droce.h>.
 */
#ifndef FI_EXT_DROCE_H
#define FI_EXT_DROCE_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#define FI_DROCE_OPS_1 "droce_ops_1"

/* An endpoint's RC queue pair as it stands. */
struct fi_droce_qp_info {
	uint32_t qpn;	    /* this side's QPN */
	uint32_t dest_qpn;  /* the peer's QPN (0 before the connection) */
	uint32_t start_psn; /* the first PSN this side announced (and expects) */
	uint32_t sq_psn;    /* next PSN this side's requester sends */
	uint32_t rq_psn;    /* next PSN this side's responder expects */
	uint32_t path_mtu;  /* bytes */
	uint8_t mac[6];	    /* this side's port */
	uint16_t udp_sport; /* its frames' UDP source port */
	const char *state;  /* "RESET", "INIT", "RTR", "RTS" or "ERROR" */
};

/* One counter: a name (lower_snake_case, stable) and its value. */
struct fi_droce_counter {
	const char *name;
	uint64_t value;
};

struct fi_droce_ops {
	size_t size; /* sizeof(struct fi_droce_ops) */
	/* -FI_EOPBADSTATE when the endpoint has no queue pair yet. */
	int (*qp_info)(struct fid_ep *ep, struct fi_droce_qp_info *info);
	/* The counters of fid - a domain (its port and device) or an
	 * endpoint (its QP): up to *count entries are written to c, and
	 * *count is set to how many there are.  0, or -FI_ETOOSMALL when
	 * some did not fit (c may be NULL to ask for the number). */
	int (*counters)(struct fid *fid, struct fi_droce_counter *c, size_t *count);
	/* Frames dropped on receive, by reason, of a domain's port or an
	 * endpoint's QP: the first n into counts; returns the number of
	 * reasons.  drop_name(i) names reason i (also in counters() as
	 * rx_drop_NAME). */
	int (*drops)(struct fid *fid, uint64_t *counts, size_t n);
	const char *(*drop_name)(unsigned reason);
	/* A domain's port: its MAC address, and one raw Ethernet frame sent
	 * out of it as it is (protocol tests, forged-frame tests, replay). */
	int (*port_mac)(struct fid_domain *domain, uint8_t mac[6]);
	int (*send_raw)(struct fid_domain *domain, const void *frame, size_t len);
};

#endif /* FI_EXT_DROCE_H */
