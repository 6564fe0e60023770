// SPDX-License-Identifier: BSD-2-Clause
/*
 * ix-pcapcheck - the interop suite's wire check of a bridge capture, with
 * droce's own parser (Wireshark does not check the ICRC).
 *
 *   ix-pcapcheck [-v] FILE.pcapng...
 *
 * For every IPv4 or IPv6 UDP frame to port 4791: dr_pkt_parse() with every check,
 * the ICRC included; a refused frame is printed with its number, sender,
 * opcode, verdict and (when the headers parse) the ICRC it carries against
 * the one computed.  A RoCEv2 frame cut short by the capture is an error too.
 * Also counted: ICMP (ICMPv6) destination-unreachable messages quoting a UDP
 * 4791 datagram (a kernel answering RoCEv2 traffic that belongs to someone
 * else).  Per sender (IP source) the BTH opcodes seen are listed with -v.
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
	char ip[INET6_ADDRSTRLEN];
	unsigned long ops[256];
};

struct stats {
	unsigned long frames, roce, ok, bad, trunc, icmp;
	struct sender snd[MAX_SENDERS];
	int nsnd;
};

static struct sender *sender_of(struct stats *st, const char *ip)
{
	for (int i = 0; i < st->nsnd; i++)
		if (!strcmp(st->snd[i].ip, ip))
			return &st->snd[i];
	if (st->nsnd == MAX_SENDERS)
		return NULL;
	snprintf(st->snd[st->nsnd].ip, sizeof(st->snd[0].ip), "%s", ip);
	return &st->snd[st->nsnd++];
}

/* Ethernet (optionally one VLAN tag) -> the IP header's offset and
 * version (4 or 6), or 0. */
static int ip_of(const uint8_t *f, size_t len, size_t *l3off)
{
	size_t off = sizeof(struct dr_eth_hdr);
	uint16_t type;

	if (len < off + sizeof(struct dr_ipv4_hdr))
		return 0;
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type == DR_ETH_P_VLAN) {
		if (len < off + 4 + sizeof(struct dr_ipv4_hdr))
			return 0;
		type = (uint16_t)(f[16] << 8 | f[17]);
		off += 4;
	}
	*l3off = off;
	if (type == DR_ETH_P_IPV4 && (f[off] >> 4) == 4)
		return 4;
	if (type == DR_ETH_P_IPV6 && len >= off + sizeof(struct dr_ipv6_hdr) && (f[off] >> 4) == 6)
		return 6;
	return 0;
}

static void frame(struct stats *st, const struct dr_pcapng_pkt *p, const char *path, int verbose)
{
	const uint8_t *f = p->data;
	size_t l3off, ihl;
	int ver = ip_of(f, p->caplen, &l3off);
	const struct dr_ipv4_hdr *ip = (const struct dr_ipv4_hdr *)(f + l3off);
	const struct dr_ipv6_hdr *ip6 = (const struct dr_ipv6_hdr *)(f + l3off);
	const uint8_t *l4;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
	uint8_t proto;

	st->frames++;
	if (!ver)
		return;
	if (ver == 6) {
		ihl = sizeof(*ip6);
		proto = ip6->nexthdr;
		inet_ntop(AF_INET6, ip6->saddr, src, sizeof(src));
		inet_ntop(AF_INET6, ip6->daddr, dst, sizeof(dst));
	} else {
		ihl = (size_t)dr_ipv4_ihl(ip) * 4;
		proto = ip->proto;
		inet_ntop(AF_INET, &ip->saddr, src, sizeof(src));
		inet_ntop(AF_INET, &ip->daddr, dst, sizeof(dst));
	}
	if (ihl < 20 || l3off + ihl + 8 > p->caplen)
		return;
	l4 = f + l3off + ihl;

	if (ver == 6 && proto == 58) { /* ICMPv6 type 1 quoting IPv6 + UDP to 4791? */
		const uint8_t *q = l4 + 8;

		if (l4[0] == 1 && l3off + ihl + 8 + 48 <= p->caplen && (q[0] >> 4) == 6 &&
		    q[6] == 17 && ((q[40 + 2] << 8) | q[40 + 3]) == DR_ROCE_UDP_PORT) {
			st->icmp++;
			printf("%s: frame %llu: ICMPv6 unreachable code %u from %s to %s quoting UDP %u -> 4791\n",
			       path, (unsigned long long)p->number, l4[1], src, dst,
			       (unsigned)(q[40] << 8 | q[41]));
		}
		return;
	}
	if (ver == 4 && proto == 1) { /* ICMP: type 3 quoting IPv4 + UDP to 4791? */
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
	if (proto != DR_IPPROTO_UDP || (l4[2] << 8 | l4[3]) != DR_ROCE_UDP_PORT)
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
		struct sender *s = sender_of(st, src);

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
			printf("%s: from %s:", path, st->snd[i].ip);
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
