// SPDX-License-Identifier: BSD-2-Clause
/* Forged frames for the hostile-peer tests (forge.h). */
#include <string.h>

#include "forge.h"

void forge_req_mad(uint8_t mad[DR_MAD_LEN], uint32_t comm, uint16_t port, uint8_t resp_timeout,
		   uint8_t retries, uint64_t tid)
{
	struct dr_cma_hdr cma = {.cma_version = 0, .ip_version = 4, .src_port = 50000};
	struct dr_cm_req req;
	struct dr_mad m;

	memset(&req, 0, sizeof(req));
	req.local_comm_id = comm;
	req.service_id = DR_CM_SID_TCP_PS + port;
	req.local_qpn = 0x99;
	req.remote_cm_resp_timeout = resp_timeout;
	req.local_cm_resp_timeout = resp_timeout;
	req.max_cm_retries = retries;
	req.path_mtu = 3;
	req.pkey = 0xffff;
	req.starting_psn = 1;
	dr_cma_hdr_pack(&cma, req.private_data);
	/* libfabric CM data: one byte of length, none */
	req.private_data[DR_CMA_HDR_LEN] = 0;
	dr_mad_init_cm(&m, DR_CM_ATTR_REQ, tid);
	dr_cm_req_pack(&req, m.body);
	dr_mad_build(&m, mad);
}

int forge_qp1_frame(void *buf, size_t cap, const uint8_t src_mac[6], const uint8_t dst_mac[6],
		    uint32_t src_ip, uint32_t dst_ip, uint32_t psn, const uint8_t mad[DR_MAD_LEN])
{
	struct dr_pkt_desc d;

	dr_pkt_desc_init(&d);
	memcpy(d.src_mac, src_mac, 6);
	memcpy(d.dst_mac, dst_mac, 6);
	d.src_ip4 = src_ip;
	d.dst_ip4 = dst_ip;
	d.sport = 0xc001;
	d.opcode = DR_OP_UD_SEND_ONLY;
	d.dqpn = DR_GSI_QPN;
	d.ackreq = true;
	d.psn = psn & DR_PSN_MASK;
	d.deth.qkey = DR_GSI_QKEY;
	d.deth.sqpn = DR_GSI_QPN;
	d.payload = mad;
	d.payload_len = DR_MAD_LEN;
	return dr_pkt_build(&d, buf, cap);
}

int forge_frame(void *buf, size_t cap, uint32_t src_ip, uint32_t dst_ip, uint8_t opcode,
		uint32_t dqpn, uint32_t psn, uint16_t pkey, const void *payload, uint32_t len)
{
	struct dr_pkt_desc d;

	dr_pkt_desc_init(&d);
	d.src_ip4 = src_ip;
	d.dst_ip4 = dst_ip;
	d.sport = 0xc123;
	d.opcode = opcode;
	d.dqpn = dqpn;
	d.psn = psn & DR_PSN_MASK;
	d.ackreq = true;
	if (pkey)
		d.pkey = pkey;
	if (opcode == DR_OP_UD_SEND_ONLY) {
		d.deth.qkey = DR_GSI_QKEY;
		d.deth.sqpn = DR_GSI_QPN;
	}
	if (opcode == DR_OP_ACK)
		d.aeth.syndrome = DR_AETH_ACK_UNLIMITED;
	d.payload = payload;
	d.payload_len = len;
	return dr_pkt_build(&d, buf, cap);
}
