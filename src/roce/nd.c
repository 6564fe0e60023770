// SPDX-License-Identifier: BSD-2-Clause
/*
 * Neighbour discovery codec (RFC 4861) for Ethernet/IPv6: the two messages
 * address resolution needs, neighbour solicitation and advertisement, built
 * and validated.  The IPv6 counterpart of arp.c, pure as it is: no DPDK, no
 * allocation.
 *
 * Validation is the receiver's list of RFC 4861 7.1.1 (NS) and 7.1.2 (NA),
 * one reason per check, in wire order.  Options other than the link-layer
 * address are skipped (a DAD probe from Linux carries a nonce, RFC 7527).
 */
#include <errno.h>

#include "dr_port.h"

_Static_assert(DR_ND_LEN == 14 + 40 + 24 + 8, "Ethernet + IPv6 + NS/NA + one option");

#define ICMP6_ND_LEN 24 /* type, code, checksum, reserved/flags, target */

static const char *const verdict_str[DR_ND_VERDICT_NUM] = {
    [DR_ND_OK] = "ok",
    [DR_ND_NOT_ND] = "not an ICMPv6 neighbour solicitation or advertisement",
    [DR_ND_SHORT] = "truncated ND frame",
    [DR_ND_BAD_IP_LEN] = "IPv6 payload length past the frame",
    [DR_ND_BAD_HOPLIMIT] = "ND hop limit is not 255",
    [DR_ND_BAD_CSUM] = "bad ICMPv6 checksum",
    [DR_ND_BAD_CODE] = "ICMPv6 code is not 0",
    [DR_ND_BAD_TARGET] = "ND target is a multicast address",
    [DR_ND_BAD_OPTION] = "ND option of length 0 or past the message",
    [DR_ND_BAD_SRC] = "ND source address invalid for the message",
    [DR_ND_BAD_FLAGS] = "solicited advertisement to a multicast address",
    [DR_ND_BAD_LLA] = "ND link-layer address is zero or multicast",
};

const char *dr_nd_verdict_str(enum dr_nd_verdict v)
{
	return (unsigned)v < DR_ND_VERDICT_NUM ? verdict_str[v] : "invalid verdict";
}

static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};

void dr_ipv6_solicited_node(uint8_t group[16], const uint8_t addr[16])
{
	static const uint8_t prefix[13] = {0xff, 0x02, [11] = 0x01, [12] = 0xff};

	memcpy(group, prefix, 13);
	memcpy(group + 13, addr + 13, 3);
}

void dr_ipv6_mcast_mac(uint8_t mac[6], const uint8_t group[16])
{
	mac[0] = 0x33;
	mac[1] = 0x33;
	memcpy(mac + 2, group + 12, 4);
}

uint16_t dr_icmp6_csum(const struct dr_ipv6_hdr *ip6, const void *icmp, size_t len)
{
	const uint8_t *p = icmp;
	uint64_t sum = 0;

	/* pseudo-header: addresses, upper-layer length, next header */
	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)ip6->saddr[i] << 8 | ip6->saddr[i + 1];
	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)ip6->daddr[i] << 8 | ip6->daddr[i + 1];
	sum += (uint32_t)(len >> 16) + (uint32_t)(len & 0xffff);
	sum += DR_IPPROTO_ICMPV6;
	for (size_t i = 0; i + 1 < len; i += 2)
		if (i != 2) /* the checksum field itself */
			sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

void dr_nd_solicit(struct dr_nd_msg *m, const uint8_t mac[6], const uint8_t src[16],
		   const uint8_t target[16], const uint8_t *ucast_mac)
{
	memset(m, 0, sizeof(*m));
	m->type = DR_ICMP6_NS;
	memcpy(m->eth_src, mac, 6);
	memcpy(m->ip_src, src, 16);
	memcpy(m->target, target, 16);
	if (ucast_mac) {
		memcpy(m->eth_dst, ucast_mac, 6);
		memcpy(m->ip_dst, target, 16);
	} else {
		dr_ipv6_solicited_node(m->ip_dst, target);
		dr_ipv6_mcast_mac(m->eth_dst, m->ip_dst);
	}
	m->has_lla = true;
	memcpy(m->lla, mac, 6);
}

void dr_nd_advert(struct dr_nd_msg *m, const struct dr_nd_msg *ns, const uint8_t mac[6])
{
	struct dr_nd_msg r = {.type = DR_ICMP6_NA, .has_lla = true};

	/* ns may alias m: build aside, then copy */
	memcpy(r.eth_src, mac, 6);
	memcpy(r.ip_src, ns->target, 16);
	memcpy(r.target, ns->target, 16);
	memcpy(r.lla, mac, 6);
	if (dr_ipv6_is_unspecified(ns->ip_src)) {
		/* a DAD probe: the answer goes to everyone, unsolicited */
		memcpy(r.ip_dst, all_nodes, 16);
		dr_ipv6_mcast_mac(r.eth_dst, all_nodes);
		r.na_flags = DR_ND_NA_OVERRIDE;
	} else {
		memcpy(r.ip_dst, ns->ip_src, 16);
		/* the solicitor's link-layer option if it gave one (7.2.4),
		 * else the frame's source */
		memcpy(r.eth_dst, ns->has_lla ? ns->lla : ns->eth_src, 6);
		r.na_flags = DR_ND_NA_SOLICITED | DR_ND_NA_OVERRIDE;
	}
	*m = r;
}

int dr_nd_build(const struct dr_nd_msg *m, void *buf, size_t cap)
{
	size_t icmp_len = ICMP6_ND_LEN + (m->has_lla ? 8 : 0);
	size_t len = sizeof(struct dr_eth_hdr) + sizeof(struct dr_ipv6_hdr) + icmp_len;
	struct dr_eth_hdr *eth = buf;
	struct dr_ipv6_hdr *ip6 = (struct dr_ipv6_hdr *)(eth + 1);
	uint8_t *icmp = (uint8_t *)(ip6 + 1);
	uint16_t csum;

	if (m->type != DR_ICMP6_NS && m->type != DR_ICMP6_NA)
		return -EINVAL;
	if (cap < len)
		return -ENOSPC;
	memset(buf, 0, len);
	memcpy(eth->dst, m->eth_dst, 6);
	memcpy(eth->src, m->eth_src, 6);
	eth->type = htons(DR_ETH_P_IPV6);
	ip6->ver_tc_flow = htonl(6u << 28);
	ip6->payload_len = htons((uint16_t)icmp_len);
	ip6->nexthdr = DR_IPPROTO_ICMPV6;
	ip6->hop_limit = DR_ND_HOP_LIMIT;
	memcpy(ip6->saddr, m->ip_src, 16);
	memcpy(ip6->daddr, m->ip_dst, 16);
	icmp[0] = m->type;
	if (m->type == DR_ICMP6_NA) {
		uint32_t f = htonl(m->na_flags & 0xe0000000u);

		memcpy(icmp + 4, &f, 4);
	}
	memcpy(icmp + 8, m->target, 16);
	if (m->has_lla) {
		icmp[24] = m->type == DR_ICMP6_NS ? DR_ND_OPT_SLLA : DR_ND_OPT_TLLA;
		icmp[25] = 1; /* in units of 8 bytes */
		memcpy(icmp + 26, m->lla, 6);
	}
	csum = dr_icmp6_csum(ip6, icmp, icmp_len);
	memcpy(icmp + 2, &csum, 2);
	return (int)len;
}

enum dr_nd_verdict dr_nd_parse(const void *frame, size_t len, struct dr_nd_msg *m)
{
	static const uint8_t zero[6];
	const struct dr_eth_hdr *eth = frame;
	const struct dr_ipv6_hdr *ip6;
	const uint8_t *icmp;
	size_t plen, off;
	uint8_t sn[16];
	uint16_t csum;
	uint32_t f;

	if (len < sizeof(*eth) || ntohs(eth->type) != DR_ETH_P_IPV6)
		return DR_ND_NOT_ND;
	if (len < sizeof(*eth) + sizeof(*ip6))
		return DR_ND_SHORT;
	ip6 = (const struct dr_ipv6_hdr *)(eth + 1);
	if (dr_ipv6_version(ip6) != 6 || ip6->nexthdr != DR_IPPROTO_ICMPV6)
		return DR_ND_NOT_ND;
	plen = ntohs(ip6->payload_len);
	if (plen > len - sizeof(*eth) - sizeof(*ip6))
		return DR_ND_BAD_IP_LEN;
	icmp = (const uint8_t *)(ip6 + 1);
	if (plen < 1 || (icmp[0] != DR_ICMP6_NS && icmp[0] != DR_ICMP6_NA))
		return DR_ND_NOT_ND;
	if (plen < ICMP6_ND_LEN)
		return DR_ND_SHORT;
	if (ip6->hop_limit != DR_ND_HOP_LIMIT)
		return DR_ND_BAD_HOPLIMIT;
	memcpy(&csum, icmp + 2, 2);
	if (dr_icmp6_csum(ip6, icmp, plen) != csum)
		return DR_ND_BAD_CSUM;
	if (icmp[1] != 0)
		return DR_ND_BAD_CODE;
	if (dr_ipv6_is_multicast(icmp + 8))
		return DR_ND_BAD_TARGET;

	memset(m, 0, sizeof(*m));
	memcpy(m->eth_dst, eth->dst, 6);
	memcpy(m->eth_src, eth->src, 6);
	memcpy(m->ip_src, ip6->saddr, 16);
	memcpy(m->ip_dst, ip6->daddr, 16);
	m->type = icmp[0];
	memcpy(&f, icmp + 4, 4);
	m->na_flags = m->type == DR_ICMP6_NA ? ntohl(f) & 0xe0000000u : 0;
	memcpy(m->target, icmp + 8, 16);
	for (off = ICMP6_ND_LEN; off < plen;) {
		size_t olen;

		if (plen - off < 2 || !icmp[off + 1])
			return DR_ND_BAD_OPTION;
		olen = (size_t)icmp[off + 1] * 8;
		if (olen > plen - off)
			return DR_ND_BAD_OPTION;
		if (icmp[off] == (m->type == DR_ICMP6_NS ? DR_ND_OPT_SLLA : DR_ND_OPT_TLLA)) {
			m->has_lla = true;
			memcpy(m->lla, icmp + off + 2, 6);
		}
		off += olen;
	}
	if (dr_ipv6_is_multicast(m->ip_src))
		return DR_ND_BAD_SRC;
	if (m->type == DR_ICMP6_NS && dr_ipv6_is_unspecified(m->ip_src)) {
		dr_ipv6_solicited_node(sn, m->target);
		if (m->has_lla || memcmp(m->ip_dst, sn, 16))
			return DR_ND_BAD_SRC;
	}
	if (m->type == DR_ICMP6_NA && dr_ipv6_is_multicast(m->ip_dst) &&
	    (m->na_flags & DR_ND_NA_SOLICITED))
		return DR_ND_BAD_FLAGS;
	/* a group or null address cannot own an IP (as for ARP) */
	if (m->has_lla && ((m->lla[0] & 1) || !memcmp(m->lla, zero, 6)))
		return DR_ND_BAD_LLA;
	return DR_ND_OK;
}
