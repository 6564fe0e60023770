// SPDX-License-Identifier: BSD-2-Clause
/*
 * notes-inject - a third party on a link to a droce provider (tests/
 * notes-memif.sh, tests/netns-notes.sh): opens DEVICE as a bare port at
 * SELF/24, resolves SERVER and sends it forged frames, then polls for a
 * moment and exits.  Without QPN, frames its device must refuse:
 *   PSN 0x700: RC SEND_ONLY to QPN 0x00abcd, which nobody has (unknown_qpn);
 *   PSN 0x701: a MAD to QP1 with P_Key 0x1234 (pkey);
 *   PSN 0x702: RC SEND_ONLY to QP1, not a UD MAD (bad_gsi).
 * With QPN (a connected queue pair of SERVER's), frames that QP must refuse:
 *   PSN 0x703: RC SEND_ONLY from SELF with P_Key 0x1234 (pkey);
 *   PSN 0x704: RC SEND_ONLY from SELF + 7, a forged source (src_addr).
 * Exit 0 when all were sent, 1 otherwise.
 *
 *   notes-inject DEVICE [SELF SERVER [QPN]]   (default 192.0.2.2 192.0.2.1)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_port.h"
#include "dr_roce.h"
#include "forge.h"

static uint32_t ip_self = 0xc0000202u, ip_server = 0xc0000201u;

static int forge(struct dr_port *p, uint32_t src, uint8_t opcode, uint32_t dqpn, uint32_t psn,
		 uint16_t pkey)
{
	static const uint8_t payload[256] = "forged";
	uint8_t f[512];
	int len = forge_frame(f, sizeof(f), src, ip_server, opcode, dqpn, psn, pkey, payload,
			      sizeof(payload));

	return len < 0 ? len : dr_port_send(p, f, (size_t)len);
}

int main(int argc, char **argv)
{
	struct dr_port_config c = {0};
	struct dr_port_err err = {0};
	struct dr_port *p;
	struct in_addr a;
	unsigned long qpn = 0;
	uint8_t mac[6];
	uint64_t end;
	int ret;

	if (argc != 2 && argc != 4 && argc != 5) {
		fprintf(stderr, "usage: notes-inject DEVICE [SELF SERVER [QPN]]\n");
		return 2;
	}
	if (argc >= 4) {
		if (!inet_aton(argv[2], &a))
			return 2;
		ip_self = ntohl(a.s_addr);
		if (!inet_aton(argv[3], &a))
			return 2;
		ip_server = ntohl(a.s_addr);
	}
	if (argc == 5)
		qpn = strtoul(argv[4], NULL, 0);
	c.device = argv[1];
	c.ip4 = ip_self;
	c.prefix_len = 24;
	c.eal_args = "--no-huge --no-shconf -m 256";
	if (dr_port_open(&c, &p, &err)) {
		fprintf(stderr, "notes-inject: %s\n", err.msg);
		return 1;
	}
	end = dr_port_now_ns() + 10000000000ull;
	while ((ret = dr_port_resolve(p, ip_server, mac)) == -EAGAIN && dr_port_now_ns() < end)
		dr_port_poll(p);
	if (!ret && qpn) {
		ret = forge(p, ip_self, DR_OP_SEND_ONLY, (uint32_t)qpn, 0x703, 0x1234);
		if (!ret)
			ret = forge(p, ip_self + 7, DR_OP_SEND_ONLY, (uint32_t)qpn, 0x704, 0);
	} else if (!ret) {
		ret = forge(p, ip_self, DR_OP_SEND_ONLY, 0xabcd, 0x700, 0);
		if (!ret)
			ret = forge(p, ip_self, DR_OP_UD_SEND_ONLY, DR_GSI_QPN, 0x701, 0x1234);
		if (!ret)
			ret = forge(p, ip_self, DR_OP_SEND_ONLY, DR_GSI_QPN, 0x702, 0);
	}
	end = dr_port_now_ns() + 200000000ull;
	while (dr_port_now_ns() < end)
		dr_port_poll(p);
	dr_port_close(p);
	if (ret)
		fprintf(stderr, "notes-inject: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}
