// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_nd - the neighbour discovery codec (src/roce/nd.c) against frames
 * the Linux kernel sent: a solicitation from fd00::a (02:00:00:00:00:0a)
 * for fd00::b and the advertisement fd00::b (02:00:00:00:00:0b) answered
 * with, captured by tshark on a veth between two namespaces (the kernel
 * resolving fd00::b for a UDP datagram).  Then every refusal of RFC 4861
 * 7.1.1/7.1.2 at its edge, and the multicast address mappings.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dr_port.h"
#include "ck_run.h"

static const uint8_t mac_a[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0a};
static const uint8_t mac_b[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x0b};
static const uint8_t ip_a[16] = {0xfd, 0x00, [15] = 0x0a};
static const uint8_t ip_b[16] = {0xfd, 0x00, [15] = 0x0b};

/* Linux 6.x: NS fd00::a -> ff02::1:ff00:b, target fd00::b, SLLA */
static const uint8_t linux_ns[86] = {
    0x33, 0x33, 0xff, 0x00, 0x00, 0x0b, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x86, 0xdd, 0x60,
    0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x0b, 0x87, 0x00, 0x7d, 0x73, 0x00, 0x00,
    0x00, 0x00, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x0b, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a,
};

/* Linux 6.x: its answer, NA fd00::b -> fd00::a, Solicited|Override, TLLA */
static const uint8_t linux_na[86] = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x86, 0xdd, 0x60,
    0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x88, 0x00, 0x1c, 0x76, 0x60, 0x00,
    0x00, 0x00, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x0b, 0x02, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b,
};

START_TEST(test_nd_linux_vectors)
{
	struct dr_nd_msg m, ns, na;
	uint8_t buf[128];

	/* our solicitation is the kernel's, byte for byte */
	dr_nd_solicit(&m, mac_a, ip_a, ip_b, NULL);
	ck_assert_int_eq(dr_nd_build(&m, buf, sizeof(buf)), DR_ND_LEN);
	ck_assert_mem_eq(buf, linux_ns, sizeof(linux_ns));
	ck_assert_int_eq(dr_nd_build(&m, buf, DR_ND_LEN - 1), -ENOSPC);

	/* the kernel's solicitation parses to what we asked */
	ck_assert_int_eq(dr_nd_parse(linux_ns, sizeof(linux_ns), &ns), DR_ND_OK);
	ck_assert_uint_eq(ns.type, DR_ICMP6_NS);
	ck_assert_mem_eq(ns.ip_src, ip_a, 16);
	ck_assert_mem_eq(ns.target, ip_b, 16);
	ck_assert(ns.has_lla);
	ck_assert_mem_eq(ns.lla, mac_a, 6);
	ck_assert_uint_eq(ns.na_flags, 0);

	/* our answer to it is the kernel's answer, byte for byte */
	dr_nd_advert(&na, &ns, mac_b);
	ck_assert_int_eq(dr_nd_build(&na, buf, sizeof(buf)), DR_ND_LEN);
	ck_assert_mem_eq(buf, linux_na, sizeof(linux_na));
	/* in place (ns aliases the result) */
	dr_nd_advert(&ns, &ns, mac_b);
	ck_assert_mem_eq(&ns, &na, sizeof(ns));

	ck_assert_int_eq(dr_nd_parse(linux_na, sizeof(linux_na), &m), DR_ND_OK);
	ck_assert_uint_eq(m.type, DR_ICMP6_NA);
	ck_assert_uint_eq(m.na_flags, DR_ND_NA_SOLICITED | DR_ND_NA_OVERRIDE);
	ck_assert_mem_eq(m.ip_src, ip_b, 16);
	ck_assert_mem_eq(m.ip_dst, ip_a, 16);
	ck_assert_mem_eq(m.target, ip_b, 16);
	ck_assert(m.has_lla);
	ck_assert_mem_eq(m.lla, mac_b, 6);
	ck_assert_mem_eq(m.eth_dst, mac_a, 6);
	ck_assert_mem_eq(m.eth_src, mac_b, 6);

	m.type = 1;
	ck_assert_int_eq(dr_nd_build(&m, buf, sizeof(buf)), -EINVAL);
}
END_TEST

/* a unicast re-probe: to the address itself at the MAC we have */
START_TEST(test_nd_unicast_probe)
{
	struct dr_nd_msg m, p;
	uint8_t buf[128];

	dr_nd_solicit(&m, mac_a, ip_a, ip_b, mac_b);
	ck_assert_int_eq(dr_nd_build(&m, buf, sizeof(buf)), DR_ND_LEN);
	ck_assert_int_eq(dr_nd_parse(buf, DR_ND_LEN, &p), DR_ND_OK);
	ck_assert_mem_eq(p.eth_dst, mac_b, 6);
	ck_assert_mem_eq(p.ip_dst, ip_b, 16);
	ck_assert_mem_eq(p.target, ip_b, 16);
	/* the same ICMPv6 body as the multicast one but for the checksum,
	 * which covers the destination */
	ck_assert_mem_eq(buf + 54 + 4, linux_ns + 54 + 4, 28);
	ck_assert(memcmp(buf + 56, linux_ns + 56, 2));
}
END_TEST

/* a DAD probe (from ::) is answered to all-nodes, not Solicited */
START_TEST(test_nd_dad)
{
	static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
	static const uint8_t all_nodes_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
	struct dr_nd_msg m, na, q;
	uint8_t buf[128];
	int n;

	dr_nd_solicit(&m, mac_a, ip_a, ip_b, NULL);
	memset(m.ip_src, 0, 16);
	m.has_lla = false; /* RFC 4861 7.1.1: none from :: */
	n = dr_nd_build(&m, buf, sizeof(buf));
	ck_assert_int_eq(n, DR_ND_LEN - 8);
	ck_assert_int_eq(dr_nd_parse(buf, (size_t)n, &q), DR_ND_OK);
	ck_assert(!q.has_lla);
	dr_nd_advert(&na, &q, mac_b);
	ck_assert_mem_eq(na.ip_dst, all_nodes, 16);
	ck_assert_mem_eq(na.eth_dst, all_nodes_mac, 6);
	ck_assert_uint_eq(na.na_flags, DR_ND_NA_OVERRIDE);
	n = dr_nd_build(&na, buf, sizeof(buf));
	ck_assert_int_eq(dr_nd_parse(buf, (size_t)n, &q), DR_ND_OK);

	/* from :: with a link-layer option, or not to the solicited-node
	 * group: refused */
	dr_nd_solicit(&m, mac_a, ip_a, ip_b, NULL);
	memset(m.ip_src, 0, 16);
	n = dr_nd_build(&m, buf, sizeof(buf));
	ck_assert_int_eq(dr_nd_parse(buf, (size_t)n, &q), DR_ND_BAD_SRC);
	m.has_lla = false;
	memcpy(m.ip_dst, ip_b, 16);
	n = dr_nd_build(&m, buf, sizeof(buf));
	ck_assert_int_eq(dr_nd_parse(buf, (size_t)n, &q), DR_ND_BAD_SRC);
}
END_TEST

/* rebuild the checksum after a mutation (so the check under test is the
 * one that trips, not the checksum) */
static void fix_csum(uint8_t *f, size_t icmp_len)
{
	uint16_t c = dr_icmp6_csum((const struct dr_ipv6_hdr *)(f + 14), f + 54, icmp_len);

	memcpy(f + 56, &c, 2);
}

/* One byte (or two) of linux_ns changed, the checksum rebuilt where asked,
 * and the verdict that change gets. */
struct nd_mutation {
	uint8_t off, val;
	uint8_t off2, val2; /* off2 0: one byte only */
	bool fix;
	enum dr_nd_verdict want;
};

static const struct nd_mutation ns_refusals[] = {
    /* not ND: ARP ethertype, IPv4 version nibble, UDP, an echo request,
     * a router solicitation */
    {12, 0x08, 13, 0x06, false, DR_ND_NOT_ND},
    {14, 0x40, 0, 0, false, DR_ND_NOT_ND},
    {20, 17, 0, 0, false, DR_ND_NOT_ND},
    {54, 128, 0, 0, false, DR_ND_NOT_ND},
    {54, 133, 0, 0, false, DR_ND_NOT_ND},
    /* an ICMPv6 message shorter than 24 bytes */
    {19, 23, 0, 0, false, DR_ND_SHORT},
    /* hop limit 254: a router forwarded it */
    {21, 254, 0, 0, false, DR_ND_BAD_HOPLIMIT},
    /* code 1 */
    {55, 1, 0, 0, true, DR_ND_BAD_CODE},
    /* a multicast target */
    {62, 0xff, 0, 0, true, DR_ND_BAD_TARGET},
    /* options: length 0, past the message; an unknown one is skipped */
    {79, 0, 0, 0, true, DR_ND_BAD_OPTION},
    {79, 2, 0, 0, true, DR_ND_BAD_OPTION},
    {78, 14, 0, 0, true, DR_ND_OK}, /* a nonce (RFC 7527) instead of the SLLA */
    /* a TLLA option in a solicitation is not its link-layer address */
    {78, DR_ND_OPT_TLLA, 0, 0, true, DR_ND_OK},
    /* a multicast source */
    {22, 0xff, 0, 0, true, DR_ND_BAD_SRC},
};

START_TEST(test_nd_parse_refusals)
{
	struct dr_nd_msg m;
	uint8_t f[128];

	/* lengths */
	ck_assert_int_eq(dr_nd_parse(linux_ns, 13, &m), DR_ND_NOT_ND);
	ck_assert_int_eq(dr_nd_parse(linux_ns, 53, &m), DR_ND_SHORT);
	ck_assert_int_eq(dr_nd_parse(linux_ns, 85, &m), DR_ND_BAD_IP_LEN);
	/* Ethernet padding after the datagram is ignored */
	memset(f, 0xee, sizeof(f));
	memcpy(f, linux_ns, 86);
	ck_assert_int_eq(dr_nd_parse(f, 100, &m), DR_ND_OK);

	for (size_t i = 0; i < sizeof(ns_refusals) / sizeof(ns_refusals[0]); i++) {
		const struct nd_mutation *r = &ns_refusals[i];

		memcpy(f, linux_ns, 86);
		f[r->off] = r->val;
		if (r->off2)
			f[r->off2] = r->val2;
		if (r->fix)
			fix_csum(f, 32);
		ck_assert_msg(dr_nd_parse(f, 86, &m) == r->want, "case %zu: %s", i,
			      dr_nd_verdict_str(dr_nd_parse(f, 86, &m)));
		/* the two accepted ones carry no source link-layer address */
		if (r->want == DR_ND_OK)
			ck_assert(!m.has_lla);
	}

	/* checksum: any flipped bit of the pseudo-header or the message
	 * (but the type, which makes it no ND message) */
	for (unsigned off = 22; off < 86; off += off == 53 ? 2 : 1) {
		memcpy(f, linux_ns, 86);
		f[off] ^= 0x10;
		ck_assert_msg(dr_nd_parse(f, 86, &m) == DR_ND_BAD_CSUM, "byte %u: %s", off,
			      dr_nd_verdict_str(dr_nd_parse(f, 86, &m)));
	}

	/* a Solicited advertisement to a multicast address */
	memcpy(f, linux_na, 86);
	f[38] = 0xff, f[39] = 0x02;
	fix_csum(f, 32);
	ck_assert_int_eq(dr_nd_parse(f, 86, &m), DR_ND_BAD_FLAGS);
	f[58] = 0x20; /* Override only: an unsolicited announcement */
	fix_csum(f, 32);
	ck_assert_int_eq(dr_nd_parse(f, 86, &m), DR_ND_OK);
	ck_assert_uint_eq(m.na_flags, DR_ND_NA_OVERRIDE);

	/* a multicast or null link-layer address */
	memcpy(f, linux_na, 86);
	f[80] = 0x01;
	fix_csum(f, 32);
	ck_assert_int_eq(dr_nd_parse(f, 86, &m), DR_ND_BAD_LLA);
	memset(f + 80, 0, 6);
	fix_csum(f, 32);
	ck_assert_int_eq(dr_nd_parse(f, 86, &m), DR_ND_BAD_LLA);

	for (int v = 0; v <= DR_ND_VERDICT_NUM; v++)
		ck_assert_ptr_nonnull(dr_nd_verdict_str(v));
	ck_assert_str_eq(dr_nd_verdict_str(DR_ND_VERDICT_NUM), "invalid verdict");
}
END_TEST

START_TEST(test_nd_mcast)
{
	static const uint8_t addr[16] = {0x20, 0x01, 0x0d, 0xb8, [12] = 0x12, 0x34, 0x56, 0x78};
	static const uint8_t want[16] = {0xff, 0x02, [11] = 0x01, 0xff, 0x34, 0x56, 0x78};
	static const uint8_t want_mac[6] = {0x33, 0x33, 0xff, 0x34, 0x56, 0x78};
	uint8_t g[16], mac[6];

	dr_ipv6_solicited_node(g, addr);
	ck_assert_mem_eq(g, want, 16);
	dr_ipv6_mcast_mac(mac, g);
	ck_assert_mem_eq(mac, want_mac, 6);
	ck_assert(dr_ipv6_is_multicast(g));
	ck_assert(!dr_ipv6_is_multicast(addr));
	ck_assert(dr_ipv6_is_link_local((const uint8_t[16]){0xfe, 0x80, [15] = 1}));
	ck_assert(dr_ipv6_is_link_local((const uint8_t[16]){0xfe, 0xbf, [15] = 1}));
	ck_assert(!dr_ipv6_is_link_local((const uint8_t[16]){0xfe, 0xc0, [15] = 1}));
	ck_assert(!dr_ipv6_is_link_local(addr));
	ck_assert(dr_ipv6_is_unspecified((const uint8_t[16]){0}));
	ck_assert(!dr_ipv6_is_unspecified(addr));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nd");
	TCase *tc = tcase_create("codec");

	tcase_add_test(tc, test_nd_linux_vectors);
	tcase_add_test(tc, test_nd_unicast_probe);
	tcase_add_test(tc, test_nd_dad);
	tcase_add_test(tc, test_nd_parse_refusals);
	tcase_add_test(tc, test_nd_mcast);
	suite_add_tcase(s, tc);
	return ck_run(s, false);
}
