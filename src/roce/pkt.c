// SPDX-License-Identifier: BSD-2-Clause
/*
 * RoCEv2 frame builder and parser.
 *
 * The parser validates once, up front, one reason per check, in wire order,
 * and never reads outside the buffer it is given: every length it uses is
 * checked against what is left before the bytes are touched.
 */
#include <errno.h>
#include <stdio.h>

#include <sys/uio.h>

#include "dr_roce.h"

static const char *const verdict_str[DR_PKT_VERDICT_NUM] = {
	[DR_PKT_OK] = "ok",
	[DR_PKT_SHORT_ETH] = "truncated Ethernet header",
	[DR_PKT_NOT_IP] = "ethertype is not IPv4 or IPv6",
	[DR_PKT_SHORT_IP] = "truncated IP header",
	[DR_PKT_BAD_IP_VERSION] = "IP version does not match the ethertype",
	[DR_PKT_BAD_IHL] = "IPv4 header length is not 20 bytes",
	[DR_PKT_BAD_IP_LEN] = "IP length inconsistent with the frame",
	[DR_PKT_BAD_IP_CSUM] = "bad IPv4 header checksum",
	[DR_PKT_IP_FRAGMENT] = "IP fragment",
	[DR_PKT_NOT_UDP] = "not UDP",
	[DR_PKT_SHORT_UDP] = "truncated UDP header",
	[DR_PKT_BAD_UDP_LEN] = "UDP length inconsistent with the IP length",
	[DR_PKT_NOT_ROCE] = "UDP destination port is not 4791",
	[DR_PKT_SHORT_BTH] = "no room for BTH and ICRC",
	[DR_PKT_BAD_TVER] = "BTH transport version is not 0",
	[DR_PKT_BAD_OPCODE] = "unknown BTH opcode",
	[DR_PKT_SHORT_HDRS] = "extension headers run past the packet",
	[DR_PKT_BAD_PADCNT] = "PadCnt inconsistent with the packet length",
	[DR_PKT_BAD_PAYLOAD] = "payload on an opcode that carries none",
	[DR_PKT_RUNT] = "FIRST/MIDDLE/LAST packet without payload",
	[DR_PKT_TOO_LONG] = "payload longer than 4096 bytes",
	[DR_PKT_BAD_ICRC] = "bad ICRC",
};

const char *dr_pkt_verdict_str(enum dr_pkt_verdict v)
{
	return (unsigned)v < DR_PKT_VERDICT_NUM ? verdict_str[v] : "invalid verdict";
}

void dr_pkt_desc_init(struct dr_pkt_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->ip_version = 4;
	d->ttl = 64;
	d->ip_frag = DR_IP_DF;
	d->sport = 0xc000;
	d->dport = DR_ROCE_UDP_PORT;
	d->pkey = DR_DEF_PKEY;
}

static size_t l2_len(const struct dr_pkt_desc *d)
{
	return sizeof(struct dr_eth_hdr) + (d->vlan ? sizeof(struct dr_vlan_hdr) : 0);
}

static size_t l3_len(const struct dr_pkt_desc *d)
{
	return d->ip_version == 6 ? sizeof(struct dr_ipv6_hdr) : sizeof(struct dr_ipv4_hdr);
}

/* checks shared by every builder; returns 0 or -EINVAL */
static int desc_check(const struct dr_pkt_desc *d)
{
	const struct dr_opcode_info *op = dr_opcode(d->opcode);

	if (!(op->flags & DR_OPF_VALID))
		return -EINVAL;
	if (d->ip_version != 4 && d->ip_version != 6)
		return -EINVAL;
	if (d->payload_len && !(op->flags & DR_OPF_PAYLOAD))
		return -EINVAL;
	if (d->payload_len > DR_MAX_PMTU || (d->payload_len && !d->payload))
		return -EINVAL;
	return 0;
}

int dr_pkt_hdr_len(const struct dr_pkt_desc *d)
{
	int ret = desc_check(d);

	if (ret)
		return ret;
	return (int)(l2_len(d) + l3_len(d) + sizeof(struct dr_udp_hdr) +
		     dr_opcode(d->opcode)->hdr_len);
}

static unsigned pad_of(uint32_t payload_len)
{
	return (0u - payload_len) & 3;
}

int dr_pkt_frame_len(const struct dr_pkt_desc *d)
{
	int hl = dr_pkt_hdr_len(d);

	if (hl < 0)
		return hl;
	return hl + (int)(d->payload_len + pad_of(d->payload_len) + DR_ICRC_LEN);
}

/* The IPv4 header checksum of write_hdrs' header, from the values it
 * writes: summing the header back from memory (dr_ipv4_csum) read words
 * just written by narrower stores, which the CPU cannot forward (a stall
 * on every frame built). */
static uint16_t ipv4_csum_of(const struct dr_pkt_desc *d, uint16_t tot_len)
{
	uint32_t sum = (0x45u << 8 | d->tos) + tot_len + d->ip_id + d->ip_frag +
		       ((uint32_t)d->ttl << 8 | DR_IPPROTO_UDP) + (d->src_ip4 >> 16) +
		       (d->src_ip4 & 0xffff) + (d->dst_ip4 >> 16) + (d->dst_ip4 & 0xffff);

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* Writes every header; returns a pointer to the IP header. */
static uint8_t *write_hdrs(const struct dr_pkt_desc *d, uint8_t *buf)
{
	const struct dr_opcode_info *op = dr_opcode(d->opcode);
	unsigned pad = pad_of(d->payload_len);
	size_t udp_len = sizeof(struct dr_udp_hdr) + op->hdr_len + d->payload_len + pad +
			 DR_ICRC_LEN;
	struct dr_eth_hdr *eth = (struct dr_eth_hdr *)buf;
	uint16_t l3type = d->ip_version == 6 ? DR_ETH_P_IPV6 : DR_ETH_P_IPV4;
	uint8_t *l3, *l4, *tp;
	struct dr_udp_hdr *udp;
	struct dr_bth *bth;

	memcpy(eth->dst, d->dst_mac, 6);
	memcpy(eth->src, d->src_mac, 6);
	if (d->vlan) {
		struct dr_vlan_hdr *vl = (struct dr_vlan_hdr *)(eth + 1);

		eth->type = htons(DR_ETH_P_VLAN);
		vl->tci = htons(d->vlan_tci);
		vl->type = htons(l3type);
	} else {
		eth->type = htons(l3type);
	}

	l3 = buf + l2_len(d);
	if (d->ip_version == 6) {
		struct dr_ipv6_hdr *ip6 = (struct dr_ipv6_hdr *)l3;

		ip6->ver_tc_flow = htonl(6u << 28 | (uint32_t)d->tos << 20 |
					 (d->flow_label & 0xfffff));
		ip6->payload_len = htons((uint16_t)udp_len);
		ip6->nexthdr = DR_IPPROTO_UDP;
		ip6->hop_limit = d->ttl;
		memcpy(ip6->saddr, d->src_ip6, 16);
		memcpy(ip6->daddr, d->dst_ip6, 16);
		l4 = l3 + sizeof(*ip6);
	} else {
		struct dr_ipv4_hdr *ip = (struct dr_ipv4_hdr *)l3;

		ip->ver_ihl = 0x45;
		ip->tos = d->tos;
		ip->tot_len = htons((uint16_t)(sizeof(*ip) + udp_len));
		ip->id = htons(d->ip_id);
		ip->frag_off = htons(d->ip_frag);
		ip->ttl = d->ttl;
		ip->proto = DR_IPPROTO_UDP;
		ip->saddr = htonl(d->src_ip4);
		ip->daddr = htonl(d->dst_ip4);
		ip->csum = ipv4_csum_of(d, (uint16_t)(sizeof(*ip) + udp_len));
		l4 = l3 + sizeof(*ip);
	}

	udp = (struct dr_udp_hdr *)l4;
	udp->sport = htons(d->sport);
	udp->dport = htons(d->dport);
	udp->len = htons((uint16_t)udp_len);
	/* RoCEv2: 0, the ICRC protects the payload (A17.3.3); a parsed
	 * frame's own value is carried so that it rebuilds byte for byte */
	udp->csum = htons(d->udp_csum);

	bth = (struct dr_bth *)(udp + 1);
	dr_bth_set_opcode(bth, d->opcode);
	dr_bth_set_flags(bth, d->se, d->mig, pad, 0);
	dr_bth_set_pkey(bth, d->pkey);
	dr_bth_set_qpn(bth, d->bth_rsvd8, d->dqpn);
	dr_bth_set_psn(bth, d->ackreq, d->bth_resv7, d->psn);

	tp = (uint8_t *)bth;
	if (op->flags & DR_OPF_DETH)
		dr_deth_set((struct dr_deth *)(tp + op->off[DR_HDR_DETH]), d->deth.qkey,
			    d->deth.resv8, d->deth.sqpn);
	if (op->flags & DR_OPF_RETH) {
		struct dr_reth *r = (struct dr_reth *)(tp + op->off[DR_HDR_RETH]);

		r->va = htobe64(d->reth.va);
		r->rkey = htonl(d->reth.rkey);
		r->len = htonl(d->reth.len);
	}
	if (op->flags & DR_OPF_ATMETH) {
		struct dr_atmeth *a = (struct dr_atmeth *)(tp + op->off[DR_HDR_ATMETH]);

		a->va = htobe64(d->atmeth.va);
		a->rkey = htonl(d->atmeth.rkey);
		a->swap_add = htobe64(d->atmeth.swap_add);
		a->cmp = htobe64(d->atmeth.cmp);
	}
	if (op->flags & DR_OPF_AETH)
		dr_aeth_set((struct dr_aeth *)(tp + op->off[DR_HDR_AETH]), d->aeth.syndrome,
			    d->aeth.msn);
	if (op->flags & DR_OPF_ATMACK)
		((struct dr_atmack *)(tp + op->off[DR_HDR_ATMACK]))->orig =
			htobe64(d->atmack_orig);
	if (op->flags & DR_OPF_IMMDT)
		((struct dr_immdt *)(tp + op->off[DR_HDR_IMMDT]))->imm = htonl(d->imm);
	if (op->flags & DR_OPF_IETH)
		((struct dr_ieth *)(tp + op->off[DR_HDR_IETH]))->rkey = htonl(d->ieth_rkey);
	if (op->flags & DR_OPF_CNP)
		memcpy(tp + sizeof(*bth), d->cnp_rsvd, DR_CNP_RSVD_LEN);
	return l3;
}

/* dr_pkt_build_split, the payload also copied to copy_to if not NULL (in
 * the same pass as its ICRC). */
static int build_split(const struct dr_pkt_desc *d, void *hdr, size_t cap, uint8_t trailer[7],
		       unsigned *trailer_len, void *copy_to)
{
	int hl = dr_pkt_hdr_len(d);
	unsigned pad = pad_of(d->payload_len);
	size_t l3_len;
	uint32_t icrc;
	uint8_t *l3;

	if (hl < 0)
		return hl;
	if ((size_t)hl > cap)
		return -ENOSPC;
	l3 = write_hdrs(d, hdr);
	l3_len = (size_t)hl - (size_t)(l3 - (uint8_t *)hdr);
	memcpy(trailer, d->pad, pad);
	/* cannot fail: write_hdrs wrote a whole IP/UDP/BTH */
	if (copy_to && d->payload_len)
		(void)dr_icrc_frame_copy(l3, l3_len, d->payload, d->payload_len, trailer, pad,
					 copy_to, &icrc);
	else
		(void)dr_icrc_frame(l3, l3_len, d->payload, d->payload_len, trailer, pad, &icrc);
	dr_icrc_put(trailer + pad, icrc);
	*trailer_len = pad + DR_ICRC_LEN;
	return hl;
}

int dr_pkt_build_split(const struct dr_pkt_desc *d, void *hdr, size_t cap, uint8_t trailer[7],
		       unsigned *trailer_len)
{
	return build_split(d, hdr, cap, trailer, trailer_len, NULL);
}

int dr_pkt_build(const struct dr_pkt_desc *d, void *buf, size_t cap)
{
	int fl = dr_pkt_frame_len(d);
	uint8_t hdr[DR_PKT_HDR_CAP], trailer[7];
	unsigned tl;
	int hl;

	if (fl < 0)
		return fl;
	if ((size_t)fl > cap)
		return -ENOSPC;
	/* headers on the stack, then copied in whole: the IP checksum and
	 * the ICRC read back what was written, and buf may be a device
	 * buffer whose lines are still on their way (a shared ring the peer
	 * has just read, in another core's cache) - reads of it would wait.
	 * The payload is written once, as its ICRC is computed; buf is not
	 * read. */
	hl = dr_pkt_hdr_len(d);
	if (hl < 0)
		return hl;
	hl = build_split(d, hdr, sizeof(hdr), trailer, &tl, (uint8_t *)buf + hl);
	if (hl < 0)
		return hl;
	memcpy(buf, hdr, (size_t)hl);
	memcpy((uint8_t *)buf + hl + d->payload_len, trailer, tl);
	return fl;
}

/* ---- parser ------------------------------------------------------------- */

static enum dr_pkt_verdict parse_l2(const uint8_t *f, size_t len, struct dr_pkt *pkt,
				    size_t *off)
{
	uint16_t type;

	if (len < sizeof(struct dr_eth_hdr))
		return DR_PKT_SHORT_ETH;
	pkt->eth = (const struct dr_eth_hdr *)f;
	type = ntohs(pkt->eth->type);
	*off = sizeof(struct dr_eth_hdr);
	if (type == DR_ETH_P_VLAN) {
		if (len < *off + sizeof(struct dr_vlan_hdr))
			return DR_PKT_SHORT_ETH;
		pkt->vlan = (const struct dr_vlan_hdr *)(f + *off);
		type = ntohs(pkt->vlan->type);
		*off += sizeof(struct dr_vlan_hdr);
	}
	pkt->ethertype = type;
	if (type != DR_ETH_P_IPV4 && type != DR_ETH_P_IPV6)
		return DR_PKT_NOT_IP;
	return DR_PKT_OK;
}

/* On success *l4_len is the length of the IP payload (the UDP datagram). */
static enum dr_pkt_verdict parse_l3(const uint8_t *f, size_t len, size_t off,
				    struct dr_pkt *pkt, size_t *l4_len)
{
	if (pkt->ethertype == DR_ETH_P_IPV4) {
		const struct dr_ipv4_hdr *ip = (const struct dr_ipv4_hdr *)(f + off);
		size_t tot;

		if (len - off < sizeof(*ip))
			return DR_PKT_SHORT_IP;
		pkt->ip4 = ip;
		if (dr_ipv4_version(ip) != 4)
			return DR_PKT_BAD_IP_VERSION;
		/* RoCEv2 never carries IP options; the ICRC assumes 20 bytes */
		if (dr_ipv4_ihl(ip) != 5)
			return DR_PKT_BAD_IHL;
		tot = ntohs(ip->tot_len);
		if (tot < sizeof(*ip) || tot > len - off)
			return DR_PKT_BAD_IP_LEN;
		if (dr_ipv4_csum(ip) != ip->csum)
			return DR_PKT_BAD_IP_CSUM;
		if (ntohs(ip->frag_off) & (DR_IP_MF | DR_IP_OFFMASK))
			return DR_PKT_IP_FRAGMENT;
		if (ip->proto != DR_IPPROTO_UDP)
			return DR_PKT_NOT_UDP;
		*l4_len = tot - sizeof(*ip);
		pkt->trailer_len = len - off - tot;
	} else {
		const struct dr_ipv6_hdr *ip6 = (const struct dr_ipv6_hdr *)(f + off);
		size_t plen;

		if (len - off < sizeof(*ip6))
			return DR_PKT_SHORT_IP;
		pkt->ip6 = ip6;
		if (dr_ipv6_version(ip6) != 6)
			return DR_PKT_BAD_IP_VERSION;
		plen = ntohs(ip6->payload_len);
		if (plen > len - off - sizeof(*ip6))
			return DR_PKT_BAD_IP_LEN;
		/* no extension headers: RoCEv2 puts UDP right after IPv6 */
		if (ip6->nexthdr != DR_IPPROTO_UDP)
			return DR_PKT_NOT_UDP;
		*l4_len = plen;
		pkt->trailer_len = len - off - sizeof(*ip6) - plen;
	}
	return DR_PKT_OK;
}

/* The DestQP of a RoCEv2 frame (Ethernet, 802.1Q, IPv4 or IPv6, UDP 4791),
 * or -1: not RoCEv2, or a MAD (QP1).  Only as much parsing as routing a
 * frame to its QP's owner needs: no ICRC, no checks beyond the lengths. */
int64_t dr_frame_dqpn(const void *frame, size_t len)
{
	const uint8_t *f = frame;
	size_t off = sizeof(struct dr_eth_hdr);
	const struct dr_udp_hdr *udp;
	const struct dr_bth *bth;
	uint16_t type;
	uint32_t qpn;

	if (len < off)
		return -1;
	type = ntohs(((const struct dr_eth_hdr *)f)->type);
	if (type == DR_ETH_P_VLAN) {
		if (len < off + sizeof(struct dr_vlan_hdr))
			return -1;
		type = ntohs(((const struct dr_vlan_hdr *)(f + off))->type);
		off += sizeof(struct dr_vlan_hdr);
	}
	if (type == DR_ETH_P_IPV4 && len >= off + sizeof(struct dr_ipv4_hdr)) {
		const struct dr_ipv4_hdr *ip = (const void *)(f + off);

		if (ip->proto != 17)
			return -1;
		off += (size_t)dr_ipv4_ihl(ip) * 4;
	} else if (type == DR_ETH_P_IPV6 && len >= off + sizeof(struct dr_ipv6_hdr)) {
		/* UDP right after the header: RoCEv2 sends no extension */
		if (((const struct dr_ipv6_hdr *)(f + off))->nexthdr != 17)
			return -1;
		off += sizeof(struct dr_ipv6_hdr);
	} else {
		return -1;
	}
	if (len < off + sizeof(*udp) + sizeof(*bth))
		return -1;
	udp = (const void *)(f + off);
	if (ntohs(udp->dport) != DR_ROCE_UDP_PORT)
		return -1;
	bth = (const void *)(f + off + sizeof(*udp));
	qpn = dr_bth_qpn(bth);
	return qpn == DR_GSI_QPN ? -1 : (int64_t)qpn;
}

static const struct dr_pkt dr_pkt_none;

enum dr_pkt_verdict dr_pkt_parse(const void *frame, size_t len, unsigned flags,
				 struct dr_pkt *pkt)
{
	const uint8_t *f = frame;
	const struct dr_opcode_info *op;
	enum dr_pkt_verdict v;
	size_t off, l4_len, tlen, body;
	const uint8_t *tp;

	/* Copied from a zeroed one, not memset: GCC 12 -O2 clears the 184
	 * bytes with rep stosq, whose start-up was half of this function's
	 * samples at every received frame (perf, the 4 KiB READ client over
	 * memif: 47 % of dr_pkt_parse's 3.1 %, about 6 ns a frame); the copy
	 * is twelve 16-byte moves. */
	*pkt = dr_pkt_none;
	pkt->frame = f;
	pkt->frame_len = len;

	v = parse_l2(f, len, pkt, &off);
	if (v != DR_PKT_OK)
		return v;
	v = parse_l3(f, len, off, pkt, &l4_len);
	if (v != DR_PKT_OK)
		return v;
	off += pkt->ip4 ? sizeof(struct dr_ipv4_hdr) : sizeof(struct dr_ipv6_hdr);

	/* UDP: l4_len bytes from off are inside the frame (parse_l3) */
	if (l4_len < sizeof(struct dr_udp_hdr))
		return DR_PKT_SHORT_UDP;
	pkt->udp = (const struct dr_udp_hdr *)(f + off);
	if (ntohs(pkt->udp->len) != l4_len)
		return DR_PKT_BAD_UDP_LEN;
	if (ntohs(pkt->udp->dport) != DR_ROCE_UDP_PORT)
		return DR_PKT_NOT_ROCE;
	off += sizeof(struct dr_udp_hdr);
	tlen = l4_len - sizeof(struct dr_udp_hdr); /* BTH .. ICRC */

	if (tlen < sizeof(struct dr_bth) + DR_ICRC_LEN)
		return DR_PKT_SHORT_BTH;
	pkt->bth = (const struct dr_bth *)(f + off);
	tp = f + off;
	if (dr_bth_tver(pkt->bth) != 0)
		return DR_PKT_BAD_TVER;
	pkt->opcode = dr_bth_opcode(pkt->bth);
	op = dr_opcode(pkt->opcode);
	if (!(op->flags & DR_OPF_VALID))
		return DR_PKT_BAD_OPCODE;
	pkt->op = op;
	pkt->dqpn = dr_bth_qpn(pkt->bth);
	pkt->psn = dr_bth_psn(pkt->bth);
	pkt->ackreq = dr_bth_ackreq(pkt->bth);
	pkt->padcnt = dr_bth_padcnt(pkt->bth);

	if (tlen < (size_t)op->hdr_len + DR_ICRC_LEN)
		return DR_PKT_SHORT_HDRS;
	for (int h = 0; h < DR_HDR_NUM; h++)
		if (op->flags & (1u << h))
			pkt->hdr[h] = tp + op->off[h];

	/* payload + pad: IBA packets are 4-byte multiples (IBA 9.2.1) */
	body = tlen - op->hdr_len - DR_ICRC_LEN;
	if ((body & 3) || pkt->padcnt > body)
		return DR_PKT_BAD_PADCNT;
	if (!(op->flags & DR_OPF_PAYLOAD) && (body || pkt->padcnt))
		return DR_PKT_BAD_PAYLOAD;
	pkt->payload = tp + op->hdr_len;
	pkt->payload_len = (uint32_t)(body - pkt->padcnt);
	if (!pkt->payload_len && (op->flags & (DR_OPF_FIRST | DR_OPF_MIDDLE | DR_OPF_LAST)))
		return DR_PKT_RUNT;
	if (pkt->payload_len > DR_MAX_PMTU)
		return DR_PKT_TOO_LONG;

	/* A deferred check reads the carried ICRC when it is finished, not
	 * here: it is the frame's last cache line, which the port's
	 * zero-copy memif client finds still in the writing core's cache.
	 * Read here, that miss was 68 % of dr_pkt_parse's samples, 4.4 % of
	 * the 4 KiB READ client's (perf, 2026-12-04, about 15 ns a
	 * message); read after the pass over the payload before it, the
	 * line is there. */
	if (!(flags & DR_PARSE_NO_ICRC) && (flags & DR_PARSE_DEFER_PLACE) &&
	    dr_icrc_placeable(pkt->opcode) && pkt->payload_len >= DR_ICRC_DEFER_MIN) {
		pkt->icrc_deferred = true;
		return DR_PKT_OK;
	}
	pkt->icrc = dr_icrc_get(tp + tlen - DR_ICRC_LEN);
	if (flags & DR_PARSE_NO_ICRC)
		return DR_PKT_OK;
	if (dr_pkt_icrc(pkt) != pkt->icrc)
		return DR_PKT_BAD_ICRC;
	return DR_PKT_OK;
}

uint32_t dr_pkt_icrc(const struct dr_pkt *pkt)
{
	const uint8_t *l3 = pkt->ip4 ? (const uint8_t *)pkt->ip4 : (const uint8_t *)pkt->ip6;
	const uint8_t *end = pkt->payload + pkt->payload_len + pkt->padcnt;
	uint32_t st;

	if (!l3 || !pkt->op ||
	    dr_icrc_frame(l3, (size_t)(pkt->payload - l3), pkt->payload,
			  (size_t)(end - pkt->payload), NULL, 0, &st))
		return 0;
	return st;
}

/* The ICRC a deferred frame carries (dr_pkt_parse did not read it):
 * after the payload and its pad. */
static uint32_t dr_pkt_icrc_carried(const struct dr_pkt *pkt)
{
	return dr_icrc_get(pkt->payload + pkt->payload_len + pkt->padcnt);
}

bool dr_pkt_icrc_finish(const struct dr_pkt *pkt)
{
	return !pkt->icrc_deferred || dr_pkt_icrc(pkt) == dr_pkt_icrc_carried(pkt);
}

bool dr_pkt_icrc_copy(const struct dr_pkt *pkt, const struct iovec *dst, unsigned n)
{
	const uint8_t *l3 = pkt->ip4 ? (const uint8_t *)pkt->ip4 : (const uint8_t *)pkt->ip6;
	const uint8_t *src = pkt->payload;
	size_t hl = (size_t)(pkt->payload - l3), left = pkt->payload_len;
	uint32_t st;

	if (!pkt->icrc_deferred)
		return false;
	/* one segment: headers and payload in one pass */
	if (n == 1 && dst[0].iov_len >= left)
		return !dr_icrc_frame_copy(l3, hl, src, left, src + left, pkt->padcnt,
					   dst[0].iov_base, &st) &&
		       st == dr_pkt_icrc_carried(pkt);
	if (dr_icrc_start(l3, hl, &st))
		return false;
	for (unsigned i = 0; i < n && left; i++) {
		size_t len = dst[i].iov_len < left ? dst[i].iov_len : left;

		st = dr_crc32_copy(st, dst[i].iov_base, src, len);
		src += len;
		left -= len;
	}
	/* what the segments did not hold, and the pad, only checked */
	st = dr_icrc_update(st, src, left + pkt->padcnt);
	return st == dr_pkt_icrc_carried(pkt);
}

void dr_pkt_to_desc(const struct dr_pkt *pkt, struct dr_pkt_desc *d)
{
	const struct dr_bth *bth = pkt->bth;

	dr_pkt_desc_init(d);
	memcpy(d->dst_mac, pkt->eth->dst, 6);
	memcpy(d->src_mac, pkt->eth->src, 6);
	if (pkt->vlan) {
		d->vlan = true;
		d->vlan_tci = ntohs(pkt->vlan->tci);
	}
	if (pkt->ip4) {
		d->ip_version = 4;
		d->src_ip4 = ntohl(pkt->ip4->saddr);
		d->dst_ip4 = ntohl(pkt->ip4->daddr);
		d->tos = pkt->ip4->tos;
		d->ttl = pkt->ip4->ttl;
		d->ip_id = ntohs(pkt->ip4->id);
		d->ip_frag = ntohs(pkt->ip4->frag_off);
	} else {
		d->ip_version = 6;
		memcpy(d->src_ip6, pkt->ip6->saddr, 16);
		memcpy(d->dst_ip6, pkt->ip6->daddr, 16);
		d->tos = dr_ipv6_tclass(pkt->ip6);
		d->ttl = pkt->ip6->hop_limit;
		d->flow_label = dr_ipv6_flow(pkt->ip6);
	}
	d->sport = ntohs(pkt->udp->sport);
	d->dport = ntohs(pkt->udp->dport);
	d->udp_csum = ntohs(pkt->udp->csum);

	d->opcode = pkt->opcode;
	d->se = dr_bth_se(bth);
	d->mig = dr_bth_mig(bth);
	d->pkey = dr_bth_pkey(bth);
	d->bth_rsvd8 = dr_bth_rsvd8(bth);
	d->dqpn = pkt->dqpn;
	d->ackreq = pkt->ackreq;
	d->bth_resv7 = dr_bth_resv7(bth);
	d->psn = pkt->psn;

	if (dr_pkt_reth(pkt)) {
		d->reth.va = be64toh(dr_pkt_reth(pkt)->va);
		d->reth.rkey = ntohl(dr_pkt_reth(pkt)->rkey);
		d->reth.len = ntohl(dr_pkt_reth(pkt)->len);
	}
	if (dr_pkt_aeth(pkt)) {
		d->aeth.syndrome = dr_aeth_syndrome(dr_pkt_aeth(pkt));
		d->aeth.msn = dr_aeth_msn(dr_pkt_aeth(pkt));
	}
	if (dr_pkt_atmeth(pkt)) {
		d->atmeth.va = be64toh(dr_pkt_atmeth(pkt)->va);
		d->atmeth.rkey = ntohl(dr_pkt_atmeth(pkt)->rkey);
		d->atmeth.swap_add = be64toh(dr_pkt_atmeth(pkt)->swap_add);
		d->atmeth.cmp = be64toh(dr_pkt_atmeth(pkt)->cmp);
	}
	if (dr_pkt_atmack(pkt))
		d->atmack_orig = be64toh(dr_pkt_atmack(pkt)->orig);
	if (dr_pkt_immdt(pkt))
		d->imm = ntohl(dr_pkt_immdt(pkt)->imm);
	if (dr_pkt_ieth(pkt))
		d->ieth_rkey = ntohl(dr_pkt_ieth(pkt)->rkey);
	if (dr_pkt_deth(pkt)) {
		d->deth.qkey = dr_deth_qkey(dr_pkt_deth(pkt));
		d->deth.resv8 = dr_deth_resv8(dr_pkt_deth(pkt));
		d->deth.sqpn = dr_deth_sqp(dr_pkt_deth(pkt));
	}
	d->payload = pkt->payload;
	d->payload_len = pkt->payload_len;
	memcpy(d->pad, pkt->payload + pkt->payload_len, pkt->padcnt);
	if (pkt->op->flags & DR_OPF_CNP)
		memcpy(d->cnp_rsvd, (const uint8_t *)bth + sizeof(*bth), DR_CNP_RSVD_LEN);
}

void dr_note_vadd(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t n = strlen(buf);

	if (n && n + 2 < size) {
		memcpy(buf + n, "; ", 3);
		n += 2;
	}
	if (n + 1 < size)
		vsnprintf(buf + n, size - n, fmt, ap);
}
