// SPDX-License-Identifier: BSD-2-Clause
/*
 * ix-pcapcheck - the interop suite's wire check of a bridge capture, with
 * droce's own parser (Wireshark does not check the ICRC).
 *
 *   ix-pcapcheck [-v] FILE.pcapng...
 *
 * For every IPv4/UDP frame to port 4791: dr_pkt_parse() with every check,
 * the ICRC included; a refused frame is printed with its number, sender,
 * opcode, verdict and (when the headers parse) the ICRC it carries against
 * the one computed.  A RoCEv2 frame cut short by the capture is an error too.
 * Also counted: ICMP destination-unreachable messages quoting a UDP 4791
 * datagram (a kernel answering RoCEv2 traffic that belongs to someone else).
 * Per sender (IPv4 source) the BTH opcodes seen are listed with -v.
 *
 * Last line per file, for scripts:
 *   FILE: roce=N ok=N bad=N truncated=N icmp4791=N
 * Exit status: 0 all good, 1 a bad or truncated RoCEv2 frame (or an
 * unreadable file), 2 only ICMP unreachable for 4791 seen.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_roce.h"
#include "pcapng.h"

#define MAX_SENDERS 8

struct sender {
	uint32_t ip4;
	unsigned long ops[256];
};

struct stats {
	unsigned long frames, roce, ok, bad, trunc, icmp;
	struct sender snd[MAX_SENDERS];
	int nsnd;
};

static void ip_str(uint32_t ip4, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u.%u", ip4 >> 24, (ip4 >> 16) & 0xff, (ip4 >> 8) & 0xff, ip4 & 0xff);
}

static struct sender *sender_of(struct stats *st, uint32_t ip4)
{
	for (int i = 0; i < st->nsnd; i++)
		if (st->snd[i].ip4 == ip4)
			return &st->snd[i];
	if (st->nsnd == MAX_SENDERS)
		return NULL;
	st->snd[st->nsnd].ip4 = ip4;
	return &st->snd[st->nsnd++];
}

/* Ethernet (optionally one VLAN tag) -> the IPv4 header, or NULL. */
static const struct dr_ipv4_hdr *ipv4_of(const uint8_t *f, size_t len, size_t *l3off)
{
	size_t off = sizeof(struct dr_eth_hdr);
	uint16_t type;

	if (len < off + sizeof(struct dr_ipv4_hdr))
		return NULL;
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type == DR_ETH_P_VLAN) {
		if (len < off + 4 + sizeof(struct dr_ipv4_hdr))
			return NULL;
		type = (uint16_t)(f[16] << 8 | f[17]);
		off += 4;
	}
	if (type != DR_ETH_P_IPV4 || (f[off] >> 4) != 4)
		return NULL;
	*l3off = off;
	return (const struct dr_ipv4_hdr *)(f + off);
}

static void frame(struct stats *st, const struct dr_pcapng_pkt *p, const char *path, int verbose)
{
	const uint8_t *f = p->data;
	size_t l3off, ihl;
	const struct dr_ipv4_hdr *ip = ipv4_of(f, p->caplen, &l3off);
	const uint8_t *l4;
	char src[16], dst[16];

	st->frames++;
	if (!ip)
		return;
	ihl = (size_t)dr_ipv4_ihl(ip) * 4;
	if (ihl < 20 || l3off + ihl + 8 > p->caplen)
		return;
	l4 = f + l3off + ihl;
	ip_str(ntohl(ip->saddr), src, sizeof(src));
	ip_str(ntohl(ip->daddr), dst, sizeof(dst));

	if (ip->proto == 1) { /* ICMP: type 3 quoting IPv4 + UDP to 4791? */
		const uint8_t *q = l4 + 8;

		if (l4[0] == 3 && l3off + ihl + 8 + 28 <= p->caplen && (q[0] >> 4) == 4 && q[9] == 17) {
			const uint8_t *qu = q + (q[0] & 0xf) * 4;

			if (qu + 4 <= f + p->caplen && (qu[2] << 8 | qu[3]) == DR_ROCE_UDP_PORT) {
				st->icmp++;
				printf("%s: frame %llu: ICMP unreachable code %u from %s to %s quoting UDP %u -> 4791\n",
				       path, (unsigned long long)p->number, l4[1], src, dst,
				       (unsigned)(qu[0] << 8 | qu[1]));
			}
		}
		return;
	}
	if (ip->proto != DR_IPPROTO_UDP || (l4[2] << 8 | l4[3]) != DR_ROCE_UDP_PORT)
		return;

	st->roce++;
	if (p->caplen < p->origlen) {
		st->trunc++;
		printf("%s: frame %llu: %s -> %s: truncated by the capture (%u of %u bytes)\n", path,
		       (unsigned long long)p->number, src, dst, p->caplen, p->origlen);
		return;
	}

	struct dr_pkt pkt;
	enum dr_pkt_verdict v = dr_pkt_parse(f, p->caplen, 0, &pkt);

	if (v == DR_PKT_OK) {
		struct sender *s = sender_of(st, ntohl(ip->saddr));

		st->ok++;
		if (s)
			s->ops[pkt.opcode]++;
		return;
	}
	st->bad++;
	printf("%s: frame %llu: %s -> %s: %s", path, (unsigned long long)p->number, src, dst,
	       dr_pkt_verdict_str(v));
	if (v == DR_PKT_BAD_ICRC ||
	    dr_pkt_parse(f, p->caplen, DR_PARSE_NO_ICRC, &pkt) == DR_PKT_OK)
		printf(" (opcode 0x%02x %s, DQPN 0x%06x, PSN %u, ICRC carried 0x%08x computed 0x%08x)",
		       pkt.opcode, dr_opcode_name(pkt.opcode), pkt.dqpn, pkt.psn, pkt.icrc,
		       dr_pkt_icrc(&pkt));
	else if (pkt.bth)
		printf(" (opcode 0x%02x)", pkt.bth->opcode);
	printf("\n");
	(void)verbose;
}

static int check_file(const char *path, int verbose)
{
	char err[256];
	struct dr_pcapng *r = dr_pcapng_open(path, err, sizeof(err));
	struct dr_pcapng_pkt p;
	struct stats *st;
	int n, rc;

	if (!r) {
		printf("%s: %s\n", path, err);
		return 1;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		dr_pcapng_close(r);
		return 1;
	}
	while ((n = dr_pcapng_next(r, &p)) == 1)
		if (p.linktype == DR_LINKTYPE_ETHERNET)
			frame(st, &p, path, verbose);
	if (n < 0)
		printf("%s: %s\n", path, dr_pcapng_strerror(r));
	dr_pcapng_close(r);

	if (verbose) {
		for (int i = 0; i < st->nsnd; i++) {
			char ip[16];

			ip_str(st->snd[i].ip4, ip, sizeof(ip));
			printf("%s: from %s:", path, ip);
			for (int op = 0; op < 256; op++)
				if (st->snd[i].ops[op])
					printf(" %s=%lu", dr_opcode_name((uint8_t)op), st->snd[i].ops[op]);
			printf("\n");
		}
	}
	printf("%s: roce=%lu ok=%lu bad=%lu truncated=%lu icmp4791=%lu\n", path, st->roce, st->ok,
	       st->bad, st->trunc, st->icmp);
	rc = (n < 0 || st->bad || st->trunc) ? 1 : st->icmp ? 2 : 0;
	free(st);
	return rc;
}

int main(int argc, char **argv)
{
	int verbose = 0, rc = 0, i = 1;

	if (argc > 1 && !strcmp(argv[1], "-v")) {
		verbose = 1;
		i++;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: ix-pcapcheck [-v] FILE.pcapng...\n");
		return 1;
	}
	for (; i < argc; i++) {
		int r = check_file(argv[i], verbose);

		if (r == 1 || (r == 2 && rc == 0))
			rc = r;
	}
	return rc;
}
