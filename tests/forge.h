/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Frames a third party forges, built with droce's own codec: what the
 * hostile-peer tests (test_cm_sm, test_fi_msg, test_hostile) share.
 */
#ifndef TESTS_FORGE_H
#define TESTS_FORGE_H

#include <stddef.h>
#include <stdint.h>

#include "dr_roce.h"

/* A REQ as rdma_cm sends it from comm ID comm to the rdma_cm port, asking
 * the passive side to answer within 4.096 us * 2^resp_timeout, retries
 * times more; no CM private data. */
void forge_req_mad(uint8_t mad[DR_MAD_LEN], uint32_t comm, uint16_t port, uint8_t resp_timeout,
		   uint8_t retries, uint64_t tid);

/* A MAD to QP1 as src_ip would send it (UD SEND_ONLY, GSI Q_Key): the
 * frame's length, or -errno. */
int forge_qp1_frame(void *buf, size_t cap, const uint8_t src_mac[6], const uint8_t dst_mac[6],
		    uint32_t src_ip, uint32_t dst_ip, uint32_t psn, const uint8_t mad[DR_MAD_LEN]);

/* A frame src_ip sends dst_ip (the port sending it fills the MACs in): BTH
 * opcode, destination QP, PSN, AckReq set, P_Key pkey (0: the default); a
 * UD SEND to QP1 carries the GSI Q_Key, an ACKNOWLEDGE an ACK; len bytes of
 * payload.  The frame's length, or -errno. */
int forge_frame(void *buf, size_t cap, uint32_t src_ip, uint32_t dst_ip, uint8_t opcode,
		uint32_t dqpn, uint32_t psn, uint16_t pkey, const void *payload, uint32_t len);

#endif /* TESTS_FORGE_H */
