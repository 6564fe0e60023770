// SPDX-License-Identifier: BSD-2-Clause
/*
 * ARP codec (RFC 826) for Ethernet/IPv4: build a request or reply frame,
 * validate and parse one.  Pure: no DPDK, no allocation.
 *
 * Validation is done once, up front, one reason per check, in wire order;
 * only the 42 meaningful bytes are read (the rest is Ethernet padding).
 */
#include <errno.h>

#include "dr_port.h"

_Static_assert(DR_ARP_LEN == 42, "Ethernet + ARP body");

static const char *const verdict_str[DR_ARP_VERDICT_NUM] = {
	[DR_ARP_OK] = "ok",
	[DR_ARP_SHORT] = "truncated ARP frame",
	[DR_ARP_NOT_ARP] = "ethertype is not ARP",
	[DR_ARP_BAD_HTYPE] = "ARP hardware type is not Ethernet",
	[DR_ARP_BAD_PTYPE] = "ARP protocol type is not IPv4",
	[DR_ARP_BAD_HLEN] = "ARP hardware address length is not 6",
	[DR_ARP_BAD_PLEN] = "ARP protocol address length is not 4",
	[DR_ARP_BAD_OPER] = "ARP operation is neither request nor reply",
	[DR_ARP_BAD_SHA] = "ARP sender MAC is zero or multicast",
};

const char *dr_arp_verdict_str(enum dr_arp_verdict v)
{
	return (unsigned)v < DR_ARP_VERDICT_NUM ? verdict_str[v] : "invalid verdict";
}

static const uint8_t mac_bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

void dr_arp_request(struct dr_arp_msg *m, const uint8_t mac[6], uint32_t ip, uint32_t target)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->eth_dst, mac_bcast, 6);
	memcpy(m->eth_src, mac, 6);
	m->op = DR_ARP_OP_REQUEST;
	memcpy(m->sha, mac, 6);
	m->spa = ip;
	m->tpa = target;
}

void dr_arp_reply(struct dr_arp_msg *m, const struct dr_arp_msg *req, const uint8_t mac[6])
{
	struct dr_arp_msg r = {.op = DR_ARP_OP_REPLY};

	/* req may alias m: build aside, then copy */
	memcpy(r.eth_dst, req->sha, 6);
	memcpy(r.eth_src, mac, 6);
	memcpy(r.sha, mac, 6);
	r.spa = req->tpa;
	memcpy(r.tha, req->sha, 6);
	r.tpa = req->spa;
	*m = r;
}

int dr_arp_build(const struct dr_arp_msg *m, void *buf, size_t cap)
{
	struct dr_eth_hdr *eth = buf;
	struct dr_arp_hdr *arp = (struct dr_arp_hdr *)(eth + 1);

	if (m->op != DR_ARP_OP_REQUEST && m->op != DR_ARP_OP_REPLY)
		return -EINVAL;
	if (cap < DR_ETH_ZLEN)
		return -ENOSPC;
	memset(buf, 0, DR_ETH_ZLEN);
	memcpy(eth->dst, m->eth_dst, 6);
	memcpy(eth->src, m->eth_src, 6);
	eth->type = htons(DR_ETH_P_ARP);
	arp->htype = htons(DR_ARP_HTYPE_ETHER);
	arp->ptype = htons(DR_ETH_P_IPV4);
	arp->hlen = 6;
	arp->plen = 4;
	arp->oper = htons(m->op);
	memcpy(arp->sha, m->sha, 6);
	arp->spa = htonl(m->spa);
	memcpy(arp->tha, m->tha, 6);
	arp->tpa = htonl(m->tpa);
	return DR_ETH_ZLEN;
}

enum dr_arp_verdict dr_arp_parse(const void *frame, size_t len, struct dr_arp_msg *m)
{
	const struct dr_eth_hdr *eth = frame;
	const struct dr_arp_hdr *arp;
	static const uint8_t zero[6];
	uint16_t op;

	if (len < sizeof(*eth))
		return DR_ARP_SHORT;
	if (ntohs(eth->type) != DR_ETH_P_ARP)
		return DR_ARP_NOT_ARP;
	if (len < DR_ARP_LEN)
		return DR_ARP_SHORT;
	arp = (const struct dr_arp_hdr *)(eth + 1);
	if (ntohs(arp->htype) != DR_ARP_HTYPE_ETHER)
		return DR_ARP_BAD_HTYPE;
	if (ntohs(arp->ptype) != DR_ETH_P_IPV4)
		return DR_ARP_BAD_PTYPE;
	if (arp->hlen != 6)
		return DR_ARP_BAD_HLEN;
	if (arp->plen != 4)
		return DR_ARP_BAD_PLEN;
	op = ntohs(arp->oper);
	if (op != DR_ARP_OP_REQUEST && op != DR_ARP_OP_REPLY)
		return DR_ARP_BAD_OPER;
	/* a group or null sender address cannot own an IP (RFC 1812 3.3.2) */
	if ((arp->sha[0] & 1) || !memcmp(arp->sha, zero, 6))
		return DR_ARP_BAD_SHA;

	memcpy(m->eth_dst, eth->dst, 6);
	memcpy(m->eth_src, eth->src, 6);
	m->op = op;
	memcpy(m->sha, arp->sha, 6);
	m->spa = ntohl(arp->spa);
	memcpy(m->tha, arp->tha, 6);
	m->tpa = ntohl(arp->tpa);
	return DR_ARP_OK;
}
