// SPDX-License-Identifier: BSD-2-Clause
/*
 * notes-inject - a third party on a link to a droce provider (tests/
 * notes-memif.sh): opens DEVICE as a bare port at 192.0.2.2/24, resolves
 * 192.0.2.1 and sends it forged frames its device must refuse, then polls
 * for a moment and exits:
 *   PSN 0x700: RC SEND_ONLY to QPN 0x00abcd, which nobody has (unknown_qpn);
 *   PSN 0x701: a MAD to QP1 with P_Key 0x1234 (pkey);
 *   PSN 0x702: RC SEND_ONLY to QP1, not a UD MAD (bad_gsi).
 * Exit 0 when all were sent, 1 otherwise.
 *
 *   notes-inject DEVICE
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dr_port.h"
#include "dr_roce.h"

#define IP_SERVER 0xc0000201u /* 192.0.2.1 */
#define IP_SELF	  0xc0000202u /* 192.0.2.2 */

static int forge(struct dr_port *p, uint8_t opcode, uint32_t dqpn, uint32_t psn, uint16_t pkey)
{
	static const uint8_t payload[256] = "forged";
	struct dr_pkt_desc d;
	uint8_t f[512];
	int len;

	dr_pkt_desc_init(&d);
	d.src_ip4 = IP_SELF;
	d.dst_ip4 = IP_SERVER;
	d.sport = 0xc321;
	d.opcode = opcode;
	d.dqpn = dqpn;
	d.psn = psn;
	if (pkey)
		d.pkey = pkey;
	if (opcode == DR_OP_UD_SEND_ONLY) {
		d.deth.qkey = DR_GSI_QKEY;
		d.deth.sqpn = DR_GSI_QPN;
	}
	d.payload = payload;
	d.payload_len = sizeof(payload);
	len = dr_pkt_build(&d, f, sizeof(f));
	if (len < 0)
		return len;
	return dr_port_send(p, f, (size_t)len);
}

int main(int argc, char **argv)
{
	struct dr_port_config c = {0};
	struct dr_port_err err = {0};
	struct dr_port *p;
	uint8_t mac[6];
	uint64_t end;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: notes-inject DEVICE\n");
		return 2;
	}
	c.device = argv[1];
	c.ip4 = IP_SELF;
	c.prefix_len = 24;
	c.eal_args = "--no-huge --no-shconf -m 256";
	if (dr_port_open(&c, &p, &err)) {
		fprintf(stderr, "notes-inject: %s\n", err.msg);
		return 1;
	}
	end = dr_port_now_ns() + 10000000000ull;
	while ((ret = dr_port_resolve(p, IP_SERVER, mac)) == -EAGAIN && dr_port_now_ns() < end)
		dr_port_poll(p);
	if (!ret)
		ret = forge(p, DR_OP_SEND_ONLY, 0xabcd, 0x700, 0);
	if (!ret)
		ret = forge(p, DR_OP_UD_SEND_ONLY, DR_GSI_QPN, 0x701, 0x1234);
	if (!ret)
		ret = forge(p, DR_OP_SEND_ONLY, DR_GSI_QPN, 0x702, 0);
	end = dr_port_now_ns() + 200000000ull;
	while (dr_port_now_ns() < end)
		dr_port_poll(p);
	dr_port_close(p);
	if (ret)
		fprintf(stderr, "notes-inject: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}
