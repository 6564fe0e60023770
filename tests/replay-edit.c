// SPDX-License-Identifier: BSD-2-Clause
/*
 * replay-edit - inject faults into a capture for tests/replay.sh.
 *
 *   replay-edit IN OUT [EDIT...]
 *
 * Copies IN (pcapng) to OUT (pcapng, microsecond timestamps; classic pcap,
 * little-endian, microseconds, when OUT ends in ".pcap"),
 * applying each EDIT to the frame it names by its number in IN:
 *   drop:N          leave frame N out
 *   dup:N           write frame N twice
 *   icrc:N          flip a bit of frame N's ICRC (nothing else changes)
 *   pkey:N:HEX      set frame N's BTH P_Key, with a correct ICRC
 *   qpn:N:HEX       set frame N's BTH DestQP, with a correct ICRC
 *   srcip:N:A.B.C.D set frame N's IPv4 source, with a correct ICRC
 *   dstip:N:A.B.C.D set frame N's IPv4 destination, with a correct ICRC
 * N 0 names every RoCEv2 frame (for the edits that rebuild a frame).
 *   rkey:N:HEX      set frame N's RETH R_Key, with a correct ICRC
 *   aeth:N:HEX      set frame N's AETH syndrome, with a correct ICRC
 *   delay:N:US      frame N and every later one US microseconds later
 *   snaplen:0:LEN   write every frame cut to LEN bytes (pcapng: the
 *                   original length kept, as a capture with -s LEN has it)
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
	} else if (!strcmp(e->op, "rkey")) {
		d.reth.rkey = (uint32_t)strtoul(e->arg, NULL, 16);
	} else if (!strcmp(e->op, "aeth")) {
		d.aeth.syndrome = (uint8_t)strtoul(e->arg, NULL, 16);
	} else if (!strcmp(e->op, "srcip") || !strcmp(e->op, "dstip")) {
		if (inet_pton(AF_INET, e->arg, &a) != 1 || d.ip_version != 4) {
			fprintf(stderr, "replay-edit: %s:%s: not an IPv4 frame or address\n", e->op,
				e->arg);
			return -EINVAL;
		}
		if (e->op[0] == 's')
			d.src_ip4 = ntohl(a.s_addr);
		else
			d.dst_ip4 = ntohl(a.s_addr);
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

/* Classic pcap: magic a1b2c3d4 (microseconds), version 2.4, snaplen
 * 65535, Ethernet; little-endian */
/* clang-format off */
static const uint8_t pcap_hdr[24] = {
	0xd4, 0xc3, 0xb2, 0xa1,	/* magic */
	2, 0, 4, 0,		/* version 2.4 */
	0, 0, 0, 0, 0, 0, 0, 0,	/* thiszone, sigfigs */
	0xff, 0xff, 0, 0,	/* snaplen */
	1, 0, 0, 0,		/* Ethernet */
};
/* clang-format on */

static int pcap_put(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -EIO;
}

static void le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static int pcap_rec(FILE *f, uint64_t ts_us, const void *data, uint32_t len)
{
	uint8_t rec[16];

	le32(rec, (uint32_t)(ts_us / 1000000));
	le32(rec + 4, (uint32_t)(ts_us % 1000000));
	le32(rec + 8, len);
	le32(rec + 12, len);
	return pcap_put(f, rec, sizeof(rec)) || pcap_put(f, data, len) ? -EIO : 0;
}

/* A QP1 MAD (dr_frame_dqpn says -1 for those too) */
static bool is_mad(const uint8_t *buf, uint32_t len)
{
	struct dr_pkt p;

	return dr_pkt_parse(buf, len, 0, &p) == DR_PKT_OK && p.dqpn == DR_GSI_QPN;
}

int main(int argc, char **argv)
{
	struct edit ed[32];
	unsigned ned = 0, i;
	char err[256];
	struct dr_pcapng *r;
	struct dr_pcapng_writer *w = NULL;
	struct dr_pcapng_pkt pk;
	FILE *classic = NULL;
	uint64_t delay_us = 0;
	uint32_t snaplen = 65535;
	size_t olen;
	int ret, status = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: replay-edit IN OUT [EDIT...]\n");
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
		    strcmp(e->op, "pkey") && strcmp(e->op, "qpn") && strcmp(e->op, "srcip") &&
		    strcmp(e->op, "dstip") && strcmp(e->op, "delay") && strcmp(e->op, "snaplen") &&
		    strcmp(e->op, "rkey") && strcmp(e->op, "aeth")) {
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
	olen = strlen(argv[2]);
	if (olen > 5 && !strcmp(argv[2] + olen - 5, ".pcap")) {
		classic = fopen(argv[2], "wb");
		if (classic && pcap_put(classic, pcap_hdr, sizeof(pcap_hdr)))
			classic = NULL;
	} else {
		for (i = 0; i < ned; i++)
			if (!strcmp(ed[i].op, "snaplen"))
				snaplen = (uint32_t)strtoul(ed[i].arg, NULL, 10);
		w = dr_pcapng_writer_open(argv[2], snaplen, "replay-edit");
	}
	if (!w && !classic) {
		fprintf(stderr, "replay-edit: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	while ((ret = dr_pcapng_next(r, &pk)) == 1) {
		uint8_t buf[16384];
		uint32_t len = pk.caplen < sizeof(buf) ? pk.caplen : sizeof(buf);
		uint64_t ts_us = pk.ts_sec * 1000000ull + pk.ts_nsec / 1000 + delay_us;
		unsigned copies = 1;

		memcpy(buf, pk.data, len);
		for (i = 0; i < ned; i++) {
			/* frame 0: every RoCEv2 frame, for the edits that rebuild one */
			if (ed[i].frame == 0 && dr_frame_dqpn(buf, len) == -1 && !is_mad(buf, len))
				continue;
			if (ed[i].frame != pk.number && ed[i].frame != 0)
				continue;
			if (!strcmp(ed[i].op, "delay")) {
				delay_us += strtoull(ed[i].arg, NULL, 10);
				ts_us += strtoull(ed[i].arg, NULL, 10);
			} else if (!strcmp(ed[i].op, "drop")) {
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
			if (classic ? pcap_rec(classic, ts_us, buf, len)
				    : dr_pcapng_write(w, ts_us, buf, len))
				status = 1;
	}
	if (ret < 0) {
		fprintf(stderr, "replay-edit: %s\n", dr_pcapng_strerror(r));
		status = 1;
	}
	dr_pcapng_close(r);
	if (classic ? fclose(classic) != 0 : dr_pcapng_writer_close(w) != 0)
		status = 1;
	return status;
}
