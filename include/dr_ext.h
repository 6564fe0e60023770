/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dr_ext.h - droce's extension reached with fi_open_ops(): what the
 * receive checks dropped, and what tests need to forge frames.  Internal:
 * for droce's own tests and tools, not a stable API (the name carries a
 * version).
 *
 *	struct fi_droce_rx_ops *ops;
 *	fi_open_ops(&domain->fid, FI_DROCE_OPS_RX, 0, (void **)&ops, NULL);
 *	ops->drops(&domain->fid, counts, DR_RX_DROP_NUM);   (per port)
 *	ops->drops(&ep->fid, counts, DR_RX_DROP_NUM);       (per QP)
 *
 * Counts are indexed by enum dr_rx_drop (dr_qp.h); drop_name() names them.
 */
#ifndef DR_EXT_H
#define DR_EXT_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

#define FI_DROCE_OPS_RX "droce_rx_v1"

struct fi_droce_qp_ids {
	uint32_t qpn;	    /* this endpoint's QP */
	uint32_t dest_qpn;  /* the peer's (0 before the connection) */
	uint32_t start_psn; /* the PSN this side announced: the first it expects */
	uint32_t rq_psn;    /* connected: the next PSN the responder expects */
	uint32_t sq_psn;    /* connected: the next PSN the requester sends */
};

struct fi_droce_rx_ops {
	size_t size; /* sizeof(struct fi_droce_rx_ops) */
	/* Drops by reason of a domain's port or an endpoint's QP: the first
	 * n counters (enum dr_rx_drop); returns how many reasons there are. */
	int (*drops)(struct fid *fid, uint64_t *counts, size_t n);
	const char *(*drop_name)(unsigned reason);
	/* An endpoint's identifiers. */
	int (*qp_ids)(struct fid *ep, struct fi_droce_qp_ids *ids);
	/* A domain's port: its MAC address, and one raw Ethernet frame sent
	 * out of it as is (forged-frame tests). */
	int (*port_mac)(struct fid *domain, uint8_t mac[6]);
	int (*send_raw)(struct fid *domain, const void *frame, size_t len);
};

#endif /* DR_EXT_H */
