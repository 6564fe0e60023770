// SPDX-License-Identifier: BSD-2-Clause
/*
 * replay-edit - inject faults into a capture for tests/replay.sh.
 *
 *   replay-edit IN OUT EDIT...
 *
 * Copies IN (pcap or pcapng) to OUT (pcapng, microsecond timestamps),
 * applying each EDIT to the frame it names by its number in IN:
 *   drop:N          leave frame N out
 *   dup:N           write frame N twice
 *   icrc:N          flip a bit of frame N's ICRC (nothing else changes)
 *   pkey:N:HEX      set frame N's BTH P_Key, with a correct ICRC
 *   qpn:N:HEX       set frame N's BTH DestQP, with a correct ICRC
 *   srcip:N:A.B.C.D set frame N's IPv4 source, with a correct ICRC
 * Frames edited with a correct ICRC are rebuilt with dr_pkt_build from
 * their parsed description, so only the named field differs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "dr_roce.h"
#include "../tools/pcapng.h"

struct edit {
	char op[8];
	uint64_t frame;
	char arg[32];
};

static int rebuild(const struct edit *e, uint8_t *buf, uint32_t *len)
{
	struct dr_pkt_desc d;
	struct dr_pkt p;
	uint8_t out[16384];
	struct in_addr a;
	int n;

	if (dr_pkt_parse(buf, *len, 0, &p) != DR_PKT_OK) {
		fprintf(stderr, "replay-edit: frame %llu is not a valid RoCEv2 frame\n",
			(unsigned long long)e->frame);
		return -EINVAL;
	}
	dr_pkt_to_desc(&p, &d);
	if (!strcmp(e->op, "pkey")) {
		d.pkey = (uint16_t)strtoul(e->arg, NULL, 16);
	} else if (!strcmp(e->op, "qpn")) {
		d.dqpn = (uint32_t)strtoul(e->arg, NULL, 16) & DR_QPN_MASK;
	} else if (!strcmp(e->op, "srcip")) {
		if (inet_pton(AF_INET, e->arg, &a) != 1 || d.ip_version != 4) {
			fprintf(stderr, "replay-edit: srcip:%s: not an IPv4 frame or address\n",
				e->arg);
			return -EINVAL;
		}
		d.src_ip4 = ntohl(a.s_addr);
	}
	n = dr_pkt_build(&d, out, sizeof(out));
	if (n < 0) {
		fprintf(stderr, "replay-edit: frame %llu: rebuild failed: %s\n",
			(unsigned long long)e->frame, strerror(-n));
		return n;
	}
	memcpy(buf, out, (size_t)n);
	*len = (uint32_t)n;
	return 0;
}

int main(int argc, char **argv)
{
	struct edit ed[32];
	unsigned ned = 0, i;
	char err[256];
	struct dr_pcapng *r;
	struct dr_pcapng_writer *w;
	struct dr_pcapng_pkt pk;
	int ret, status = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: replay-edit IN OUT EDIT...\n");
		return 2;
	}
	for (i = 3; i < (unsigned)argc && ned < 32; i++) {
		struct edit *e = &ed[ned++];
		unsigned long long n;
		int k = 0;

		memset(e, 0, sizeof(*e));
		if (sscanf(argv[i], "%7[a-z]:%llu%n", e->op, &n, &k) < 2) {
			fprintf(stderr, "replay-edit: bad edit '%s'\n", argv[i]);
			return 2;
		}
		if (strcmp(e->op, "drop") && strcmp(e->op, "dup") && strcmp(e->op, "icrc") &&
		    strcmp(e->op, "pkey") && strcmp(e->op, "qpn") && strcmp(e->op, "srcip")) {
			fprintf(stderr, "replay-edit: unknown edit '%s'\n", e->op);
			return 2;
		}
		e->frame = n;
		if (argv[i][k] == ':')
			snprintf(e->arg, sizeof(e->arg), "%s", argv[i] + k + 1);
	}
	r = dr_pcapng_open(argv[1], err, sizeof(err));
	if (!r) {
		fprintf(stderr, "replay-edit: %s\n", err);
		return 1;
	}
	w = dr_pcapng_writer_open(argv[2], 65535, "replay-edit");
	if (!w) {
		fprintf(stderr, "replay-edit: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	while ((ret = dr_pcapng_next(r, &pk)) == 1) {
		uint8_t buf[16384];
		uint32_t len = pk.caplen < sizeof(buf) ? pk.caplen : sizeof(buf);
		uint64_t ts_us = pk.ts_sec * 1000000ull + pk.ts_nsec / 1000;
		unsigned copies = 1;

		memcpy(buf, pk.data, len);
		for (i = 0; i < ned; i++) {
			if (ed[i].frame != pk.number)
				continue;
			if (!strcmp(ed[i].op, "drop")) {
				copies = 0;
			} else if (!strcmp(ed[i].op, "dup")) {
				copies = 2;
			} else if (!strcmp(ed[i].op, "icrc")) {
				struct dr_pkt p;

				if (dr_pkt_parse(buf, len, 0, &p) != DR_PKT_OK) {
					fprintf(stderr, "replay-edit: frame %llu is not RoCEv2\n",
						(unsigned long long)pk.number);
					status = 1;
					break;
				}
				buf[(p.payload - buf) + p.payload_len + p.padcnt] ^= 1;
			} else if (rebuild(&ed[i], buf, &len)) {
				status = 1;
			}
		}
		while (copies--)
			if (dr_pcapng_write(w, ts_us, buf, len))
				status = 1;
	}
	if (ret < 0) {
		fprintf(stderr, "replay-edit: %s\n", dr_pcapng_strerror(r));
		status = 1;
	}
	dr_pcapng_close(r);
	if (dr_pcapng_writer_close(w))
		status = 1;
	return status;
}
