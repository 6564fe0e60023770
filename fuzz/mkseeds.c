// SPDX-License-Identifier: BSD-2-Clause
/*
 * mkseeds.c - write a seed corpus for fuzz/fuzz_parse.c into a directory.
 *
 *   mkseeds OUTDIR [CAPTURE.pcapng ...]
 *
 * Two sources, one file per seed:
 *   - the codec itself: one frame per opcode the codec knows, at a few
 *     payload sizes, over IPv4, IPv6 and IPv4 with an 802.1Q tag, plus a
 *     handful of near-misses (ARP, a bad ICRC, a reserved opcode);
 *   - Ethernet frames cut from the captures (tests/golden/rxe-*.pcapng: real
 *     rdma_rxe traffic), one seed per distinct (verdict, opcode, layout,
 *     payload size class), at most PER_KEY of each, so that thousands of
 *     near-identical ACKs do not drown the rest.
 * Prints how many seeds it wrote.  Exit status 1 on any error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_roce.h"
#include "pcapng.h"

#define PER_KEY 3
#define NKEYS (DR_PKT_VERDICT_NUM * 256 * 4 * 5)

static const char *outdir;
static unsigned nseeds;
static uint8_t key_count[NKEYS];

static int write_seed(const char *tag, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s-%04u", outdir, tag, nseeds);
	f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "mkseeds: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (len && fwrite(buf, 1, len, f) != len) {
		fprintf(stderr, "mkseeds: %s: write failed\n", path);
		fclose(f);
		return -1;
	}
	if (fclose(f)) {
		fprintf(stderr, "mkseeds: %s: %s\n", path, strerror(errno));
		return -1;
	}
	nseeds++;
	return 0;
}

static uint8_t payload[DR_MAX_PMTU];

static void desc_for(struct dr_pkt_desc *d, uint8_t op, int layout, uint32_t len)
{
	const struct dr_opcode_info *o = dr_opcode(op);
	static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 1 }, mac_b[6] = { 0x02, 0, 0, 0, 0, 2 };

	dr_pkt_desc_init(d);
	memcpy(d->src_mac, mac_a, 6);
	memcpy(d->dst_mac, mac_b, 6);
	d->vlan = layout == 2;
	d->vlan_tci = 3;
	if (layout == 1) {
		d->ip_version = 6;
		d->src_ip6[0] = d->dst_ip6[0] = 0xfe;
		d->src_ip6[1] = d->dst_ip6[1] = 0x80;
		d->src_ip6[15] = 1;
		d->dst_ip6[15] = 2;
	}
	d->src_ip4 = 0xc0a80101;
	d->dst_ip4 = 0xc0a80102;
	d->ip_id = 0x1234;
	d->sport = 0xc123;
	d->opcode = op;
	d->dqpn = (o->flags & DR_OPF_UD) ? 1 : 0x11;
	d->ackreq = true;
	d->psn = 0xfffffe;
	d->reth.va = 0x7f0000001000ull;
	d->reth.rkey = 0x1234;
	d->reth.len = len;
	d->aeth.syndrome = DR_AETH_ACK_UNLIMITED;
	d->aeth.msn = 7;
	d->atmeth.va = 0x7f0000002000ull;
	d->atmeth.rkey = 0x5678;
	d->atmeth.swap_add = 1;
	d->atmeth.cmp = 2;
	d->atmack_orig = 3;
	d->imm = 0xdeadbeef;
	d->ieth_rkey = 0x9abc;
	d->deth.qkey = DR_GSI_QKEY;
	d->deth.sqpn = 1;
	d->payload = payload;
	d->payload_len = (o->flags & DR_OPF_PAYLOAD) ? len : 0;
}

/*
 * A frame one fault away from valid, with the IP/UDP lengths, the IPv4
 * checksum and the ICRC made consistent again, so that the fault is the
 * only thing wrong: n bytes grown before the ICRC, and the BTH flags byte
 * XORed with flags_xor.  Seeds for the checks a fuzzer reaches last.
 */
static int near_seed(uint8_t op, uint32_t len, size_t grow, uint8_t flags_xor)
{
	static uint8_t buf[8192];
	const size_t l3 = sizeof(struct dr_eth_hdr);
	const size_t bth = l3 + sizeof(struct dr_ipv4_hdr) + sizeof(struct dr_udp_hdr);
	struct dr_ipv4_hdr *ip = (struct dr_ipv4_hdr *)(buf + l3);
	struct dr_udp_hdr *udp = (struct dr_udp_hdr *)(ip + 1);
	struct dr_pkt_desc d;
	uint32_t st;
	int n;

	desc_for(&d, op, 0, len);
	n = dr_pkt_build(&d, buf, sizeof(buf) - grow);
	if (n < 0) {
		fprintf(stderr, "mkseeds: build opcode %#x: %d\n", op, n);
		return -1;
	}
	memmove(buf + n - DR_ICRC_LEN + grow, buf + n - DR_ICRC_LEN, DR_ICRC_LEN);
	memset(buf + n - DR_ICRC_LEN, 0, grow);
	n += (int)grow;
	buf[bth + 1] ^= flags_xor;
	ip->tot_len = htons((uint16_t)(n - (int)l3));
	udp->len = htons((uint16_t)(n - (int)l3 - (int)sizeof(*ip)));
	ip->csum = dr_ipv4_csum(ip);
	if (dr_icrc_start(ip, bth - l3 + sizeof(struct dr_bth), &st))
		return -1;
	st = dr_icrc_update(st, buf + bth + sizeof(struct dr_bth),
			    (size_t)n - bth - sizeof(struct dr_bth) - DR_ICRC_LEN);
	dr_icrc_put(buf + n - DR_ICRC_LEN, st);
	return write_seed("near", buf, (size_t)n);
}

static int codec_seeds(void)
{
	static const uint32_t sizes[] = { 0, 5, 256 };
	static uint8_t buf[8192];
	struct dr_pkt_desc d;
	struct dr_arp_hdr *arp;
	int n;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	for (unsigned op = 0; op < 256; op++) {
		if (!dr_opcode_valid((uint8_t)op))
			continue;
		for (int layout = 0; layout < 3; layout++) {
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				if (s && !(dr_opcode(op)->flags & DR_OPF_PAYLOAD))
					break;
				desc_for(&d, (uint8_t)op, layout, sizes[s]);
				n = dr_pkt_build(&d, buf, sizeof(buf));
				if (n < 0) {
					fprintf(stderr, "mkseeds: build opcode %#x: %d\n", op, n);
					return -1;
				}
				if (write_seed("codec", buf, (size_t)n))
					return -1;
			}
		}
	}
	/* the largest payload, where TOO_LONG is one step away */
	desc_for(&d, DR_OP_WRITE_ONLY, 0, DR_MAX_PMTU);
	n = dr_pkt_build(&d, buf, sizeof(buf));
	if (n < 0 || write_seed("codec", buf, (size_t)n))
		return -1;

	/* one fault each: payload on an ACK, stray bytes, PadCnt past the body,
	 * a runt, 4097 bytes of payload, TVer 1 */
	if (near_seed(DR_OP_ACK, 0, 4, 0) || near_seed(DR_OP_SEND_ONLY, 8, 1, 0) ||
	    near_seed(DR_OP_SEND_ONLY, 0, 0, 0x30) || near_seed(DR_OP_SEND_FIRST, 0, 0, 0) ||
	    near_seed(DR_OP_SEND_ONLY, DR_MAX_PMTU - 3, 4, 0) ||
	    near_seed(DR_OP_SEND_ONLY, 4, 0, 0x01))
		return -1;

	/* near-misses: a bad ICRC, a reserved opcode, an ARP request */
	desc_for(&d, DR_OP_SEND_ONLY, 0, 5);
	n = dr_pkt_build(&d, buf, sizeof(buf));
	if (n < 0)
		return -1;
	buf[n - 1] ^= 0x80;
	if (write_seed("near", buf, (size_t)n))
		return -1;
	buf[n - 1] ^= 0x80;
	buf[sizeof(struct dr_eth_hdr) + sizeof(struct dr_ipv4_hdr) + sizeof(struct dr_udp_hdr)] =
		0x15;
	if (write_seed("near", buf, (size_t)n))
		return -1;
	memset(buf, 0, 60);
	memset(buf, 0xff, 6);
	buf[12] = DR_ETH_P_ARP >> 8;
	buf[13] = DR_ETH_P_ARP & 0xff;
	arp = (struct dr_arp_hdr *)(buf + sizeof(struct dr_eth_hdr));
	arp->htype = htons(1);
	arp->ptype = htons(DR_ETH_P_IPV4);
	arp->hlen = 6;
	arp->plen = 4;
	arp->oper = htons(1);
	return write_seed("near", buf, 60);
}

static unsigned size_class(uint32_t n)
{
	return n == 0 ? 0 : n <= 64 ? 1 : n <= 1024 ? 2 : n < DR_MAX_PMTU ? 3 : 4;
}

static int capture_seeds(const char *path)
{
	char err[512], tag[64];
	const char *base = strrchr(path, '/');
	struct dr_pcapng_pkt cp;
	struct dr_pcapng *r;
	unsigned kept = 0, seen = 0;
	int rc;

	base = base ? base + 1 : path;
	snprintf(tag, sizeof(tag), "cap-%.40s", base);
	for (char *t = tag; *t; t++)
		if (*t == '.' || *t == '/')
			*t = '_';
	r = dr_pcapng_open(path, err, sizeof(err));
	if (!r) {
		fprintf(stderr, "mkseeds: %s\n", err);
		return -1;
	}
	while ((rc = dr_pcapng_next(r, &cp)) == 1) {
		struct dr_pkt p;
		enum dr_pkt_verdict v;
		unsigned key, layout;

		if (cp.linktype != DR_LINKTYPE_ETHERNET)
			continue;
		seen++;
		v = dr_pkt_parse(cp.data, cp.caplen, 0, &p);
		layout = (p.ip6 ? 1 : 0) | (p.vlan ? 2 : 0);
		key = ((v * 256u + (p.op ? p.opcode : 0)) * 4 + layout) * 5 +
		      size_class(p.op ? p.payload_len : cp.caplen);
		if (key_count[key] >= PER_KEY)
			continue;
		key_count[key]++;
		if (write_seed(tag, cp.data, cp.caplen)) {
			dr_pcapng_close(r);
			return -1;
		}
		kept++;
	}
	if (rc < 0) {
		fprintf(stderr, "mkseeds: %s\n", dr_pcapng_strerror(r));
		dr_pcapng_close(r);
		return -1;
	}
	dr_pcapng_close(r);
	printf("mkseeds: %s: %u of %u frames kept\n", base, kept, seen);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mkseeds OUTDIR [CAPTURE.pcapng ...]\n");
		return 1;
	}
	outdir = argv[1];
	if (codec_seeds())
		return 1;
	for (int i = 2; i < argc; i++)
		if (capture_seeds(argv[i]))
			return 1;
	printf("mkseeds: %u seeds in %s\n", nseeds, outdir);
	return 0;
}
