// SPDX-License-Identifier: BSD-2-Clause
/*
 * gso-inject - hostile UDP GSO super-frames for tests/netns-gso.sh: sends,
 * from a packet socket with the virtio-net header on IFACE, to UDP port
 * 4791 of DST-IP at DST-MAC (from IFACE's own MAC and SRC-IP):
 *
 *   tiny   one super-frame of 800 bytes of UDP payload cut at gso_size 8,
 *          below a BTH and an ICRC: a packet: port must refuse it whole
 *          (rx_gso_bad), not cut it into 100 pieces;
 *   junk   one super-frame of 10 pieces of 1,000 bytes of noise from UDP
 *          port 49154 (no RoCE packet: bad BTHs, no valid ICRC): cut into
 *          10 frames of 1,042 bytes, each dropped by the parser.
 *   roce   one super-frame of 4 RDMA WRITE MIDDLE packets of 1,024 bytes
 *          from UDP port 49155 to QPN 0xabcde (which nobody holds), built
 *          with their ICRCs as droce builds them, one payload byte of the
 *          third flipped afterwards: the port checks each ICRC as it cuts
 *          the super-frame (port_pk.c cut_fill), so the third must be
 *          dropped as a bad ICRC and the other three reach the device,
 *          which drops them for their unknown QPN.  Cut, each is a frame
 *          of 1,082 bytes.
 *   vlan   the same 4 packets, intact, from UDP port 49156 (IP IDs from
 *          0x3100), as a super-frame tagged with 802.1Q VLAN ID 7 (too
 *          large for a ring slot: read from the socket's queue), and one
 *          such packet alone from port 49157 (IP ID 0x3200), tagged
 *          likewise: frames of another network than the interface's, which
 *          the kernel shows untagged with the tag aside: a packet: port
 *          must drop both whole (rx_vlan), before its capture.
 *   prio   one such packet from port 49158, priority-tagged (VLAN ID 0,
 *          priority 3, as RoCE networks mark traffic classes): the
 *          interface's own traffic, which must reach the device (dropped
 *          there for its unknown QPN).
 *   short  3 such packets from port 49159 (IP IDs from 0x3400) and a last
 *          piece of 10 bytes, too short for a BTH and an ICRC: the 3 reach
 *          the device, the fourth (a frame of 52 bytes) the parser drops.
 *   ipv6   one super-frame of 4 pieces of 1,000 bytes of noise over IPv6
 *          (UDP GSO to port 4791 of ::ffff:DST-IP): a packet: port on
 *          IPv4 must refuse it whole (rx_gso_bad);
 *   tcp    one TCP segmentation super-frame (TSO) of 4 x 1,000 bytes to
 *          TCP port 4791: refused whole (rx_gso_bad).
 *
 * With "flood N" it sends only N such RDMA WRITE MIDDLE packets, each a
 * frame of its own, from UDP port 49160 (IP IDs from 0x4000): more than a
 * stopped receiver's ring holds, so that the kernel drops the rest.
 *
 * With "jumbo N" it sends only N frames of 8,042 bytes (8,000 bytes of
 * noise to UDP port 4791, not super-frames) from UDP ports 49184 on, IP
 * IDs from 0x20: longer than a packet: port's ring slot on an interface of
 * MTU 9000 (which holds the longest RoCE frame at path MTU 4096), so
 * each is read from the socket's queue (rx_long) and dropped by the
 * parser.
 *
 * usage: gso-inject IFACE SRC-IP DST-IP DST-MAC [flood N | jumbo N]
 * Exit 0 when the kernel took every frame, 1 otherwise (with why), 77 when
 * it takes no UDP GSO from a packet socket (before Linux 6.2).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dr_roce.h"

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define HDRS 42 /* Ethernet, IPv4, UDP */

static int ifindex; /* IFACE's */

/* iov[0..n) as one frame of protocol proto (its outermost ethertype: the
 * kernel takes the socket's bound IPv4 for a frame sent without one, and
 * refuses a super-frame of another).  0 or -errno. */
static int send_proto(int fd, struct iovec *iov, int n, unsigned proto)
{
	struct sockaddr_ll to = {.sll_family = AF_PACKET,
				 .sll_protocol = htons((uint16_t)proto),
				 .sll_ifindex = ifindex,
				 .sll_halen = 6};
	struct msghdr mh = {
	    .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = iov, .msg_iovlen = (size_t)n};

	memcpy(to.sll_addr, (const uint8_t *)iov[1].iov_base, 6);
	if (sendmsg(fd, &mh, 0) < 0)
		return -errno;
	return 0;
}

static void put16(uint8_t *b, unsigned v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

/* s plus the 16-bit words of p from byte from to byte to, folded to 16
 * bits (one's complement, not inverted: a pseudo header's sum) */
static unsigned sum16(uint32_t s, const uint8_t *p, unsigned from, unsigned to)
{
	for (unsigned i = from; i < to; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

static unsigned ip_sum(const uint8_t *ip)
{
	return ~sum16(0, ip, 0, 20) & 0xffff;
}

/* An Ethernet header from src to dst of the given type */
static void eth_hdr(uint8_t *h, const uint8_t src_mac[6], const uint8_t dst_mac[6], unsigned type)
{
	memcpy(h, dst_mac, 6);
	memcpy(h + 6, src_mac, 6);
	put16(h + 12, type);
}

/* Headers h of hl bytes, then body of len bytes, as one frame whose
 * virtio-net header asks for the checksum at csum_start + csum_offset
 * (CHECKSUM_PARTIAL) and cut as gso_type at gso_size.  0 or -errno. */
static int send_vh(int fd, uint8_t *h, size_t hl, const uint8_t *body, size_t len,
		   unsigned gso_type, unsigned gso_size, unsigned csum_start, unsigned csum_offset)
{
	struct virtio_net_hdr vh = {0};
	struct iovec iov[3] = {{&vh, sizeof(vh)}, {h, hl}, {(void *)body, len}};

	vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh.gso_type = (uint8_t)gso_type;
	vh.gso_size = (uint16_t)gso_size;
	vh.hdr_len = (uint16_t)hl;
	vh.csum_start = (uint16_t)csum_start;
	vh.csum_offset = (uint16_t)csum_offset;
	return send_proto(fd, iov, 3, (unsigned)h[12] << 8 | h[13]);
}

/* Headers h (Ethernet, IPv4, UDP; hl bytes: HDRS, or HDRS + 4 with an
 * 802.1Q tag) given the lengths of a payload of len bytes, then sent with
 * body as one super-frame cut at gso_size (CHECKSUM_PARTIAL: the UDP
 * checksum field holds the pseudo header's sum), or as one frame with
 * gso_size 0.  0 or -errno. */
static int send_gso_hl(int fd, uint8_t *h, size_t hl, const uint8_t *body, size_t len,
		       unsigned gso_size)
{
	uint8_t *ip = h + hl - 28, *udp = h + hl - 8;

	put16(ip + 2, 28 + (unsigned)len);
	put16(ip + 10, 0);
	put16(ip + 10, ip_sum(ip));
	put16(udp + 4, 8 + (unsigned)len);
	put16(udp + 6, sum16(17 + 8 + (uint32_t)len, ip, 12, 20));
	return send_vh(fd, h, hl, body, len,
		       gso_size ? VIRTIO_NET_HDR_GSO_UDP_L4 : VIRTIO_NET_HDR_GSO_NONE, gso_size,
		       (unsigned)hl - 8, 6);
}

static int send_gso(int fd, uint8_t h[HDRS], const uint8_t *body, size_t len, unsigned gso_size)
{
	return send_gso_hl(fd, h, HDRS, body, len, gso_size);
}

/* One super-frame: payload bytes of noise cut at gso_size.  0 or -errno. */
static int send_super(int fd, const uint8_t src_mac[6], const uint8_t dst_mac[6], uint32_t sip,
		      uint32_t dip, unsigned gso_size, unsigned payload, unsigned seed)
{
	static uint8_t body[65536];
	uint8_t h[HDRS] = {0};
	uint8_t *ip = h + 14, *udp = h + 34;

	eth_hdr(h, src_mac, dst_mac, 0x0800);
	ip[0] = 0x45;
	put16(ip + 4, seed);
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, &sip, 4);
	memcpy(ip + 16, &dip, 4);
	put16(udp, 0xc000 + seed);
	put16(udp + 2, 4791);
	srand(seed);
	for (unsigned i = 0; i < payload; i++)
		body[i] = (uint8_t)rand();
	return send_gso(fd, h, body, payload, gso_size);
}

/* n RDMA WRITE MIDDLE packets as the "roce" super-frame (above) is made,
 * from UDP port sport, IP IDs from id, the third's payload changed if
 * flip, and a last piece of tail bytes of 0xee if tail; n == 1 and no
 * tail: one frame.  With tci >= 0 the frames carry an 802.1Q tag of that
 * TCI.  0 or -errno. */
static int send_roce(int fd, const uint8_t src_mac[6], const uint8_t dst_mac[6], uint32_t sip,
		     uint32_t dip, unsigned sport, unsigned id, unsigned n, int flip, int tci,
		     unsigned tail)
{
	enum { N = 4, PAY = 1024, TAIL = 16 };
	static uint8_t payload[PAY], frame[N][HDRS + 12 + PAY + 4], body[N * (12 + PAY + 4) + TAIL];
	size_t seg = 12 + PAY + 4, hl = tci >= 0 ? HDRS + 4 : HDRS;
	uint8_t h[HDRS + 4];
	struct dr_pkt_desc d;

	for (unsigned i = 0; i < PAY; i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	if (n < 1 || n > N || tail > TAIL)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		dr_pkt_desc_init(&d);
		memcpy(d.dst_mac, dst_mac, 6);
		memcpy(d.src_mac, src_mac, 6);
		d.src_ip4 = ntohl(sip);
		d.dst_ip4 = ntohl(dip);
		d.ip_id = (uint16_t)(id + i); /* as the kernel numbers the pieces */
		d.sport = (uint16_t)sport;
		d.opcode = DR_OP_WRITE_MIDDLE;
		d.dqpn = 0xabcde;
		d.psn = 100 + i;
		d.payload = payload;
		d.payload_len = PAY;
		if (dr_pkt_build(&d, frame[i], sizeof(frame[i])) != (int)sizeof(frame[i]))
			return -EINVAL;
		memcpy(body + i * seg, frame[i] + HDRS, seg);
	}
	if (flip && n >= 3)
		body[2 * seg + 12 + 100] ^= 0x01; /* the third's payload, after its ICRC */
	/* the first frame's headers with the whole run's lengths (the ICRC
	 * does not cover the Ethernet header, so a tag leaves it valid) */
	memcpy(h, frame[0], 12);
	if (tci >= 0) {
		put16(h + 12, 0x8100);
		put16(h + 14, (unsigned)tci);
	}
	memcpy(h + hl - 30, frame[0] + 12, 30);
	memset(body + n * seg, 0xee, tail);
	return send_gso_hl(fd, h, hl, body, n * seg + tail, n > 1 || tail ? (unsigned)seg : 0);
}

/* The "ipv6" super-frame (above): 0 or -errno. */
static int send_ipv6(int fd, const uint8_t src_mac[6], const uint8_t dst_mac[6], uint32_t sip,
		     uint32_t dip)
{
	enum { HL = 14 + 40 + 8, PIECE = 1000, N = 4 };
	static uint8_t body[N * PIECE];
	uint8_t h[HL] = {0}, *ip6 = h + 14, *udp = h + 54;

	eth_hdr(h, src_mac, dst_mac, 0x86dd);
	ip6[0] = 0x60;
	put16(ip6 + 4, 8 + (unsigned)sizeof(body));
	ip6[6] = 17;
	ip6[7] = 64;
	/* IPv4-mapped addresses: ::ffff:a.b.c.d */
	put16(ip6 + 18, 0xffff);
	memcpy(ip6 + 20, &sip, 4);
	put16(ip6 + 34, 0xffff);
	memcpy(ip6 + 36, &dip, 4);
	put16(udp, 0xc006);
	put16(udp + 2, 4791);
	put16(udp + 4, 8 + (unsigned)sizeof(body));
	put16(udp + 6, sum16(17 + 8 + (uint32_t)sizeof(body), ip6, 8, 40));
	for (unsigned i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 13 + 5);
	return send_vh(fd, h, HL, body, sizeof(body), VIRTIO_NET_HDR_GSO_UDP_L4, PIECE, 54, 6);
}

/* The "tcp" super-frame (above): 0 or -errno. */
static int send_tcp(int fd, const uint8_t src_mac[6], const uint8_t dst_mac[6], uint32_t sip,
		    uint32_t dip)
{
	enum { HL = 14 + 20 + 20, PIECE = 1000, N = 4 };
	static uint8_t body[N * PIECE];
	uint8_t h[HL] = {0}, *ip = h + 14, *tcp = h + 34;

	eth_hdr(h, src_mac, dst_mac, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, 40 + (unsigned)sizeof(body));
	put16(ip + 4, 0x3500);
	put16(ip + 6, 0x4000); /* DF */
	ip[8] = 64;
	ip[9] = 6;
	memcpy(ip + 12, &sip, 4);
	memcpy(ip + 16, &dip, 4);
	put16(ip + 10, ip_sum(ip));
	put16(tcp, 0xc007);
	put16(tcp + 2, 4791);
	tcp[12] = 5 << 4; /* 20 bytes, no options */
	tcp[13] = 0x18;	  /* PSH, ACK */
	put16(tcp + 14, 65535);
	put16(tcp + 16, sum16(6 + 20 + (uint32_t)sizeof(body), ip, 12, 20));
	for (unsigned i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 11 + 1);
	return send_vh(fd, h, HL, body, sizeof(body), VIRTIO_NET_HDR_GSO_TCPV4, PIECE, 34, 16);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(0x0800)};
	uint8_t src_mac[6], dst_mac[6];
	struct in_addr sip, dip;
	struct ifreq ifr;
	int fd, one = 1, r, flood = -1, jumbo = -1;

	if (argc == 7 && !strcmp(argv[5], "flood"))
		flood = atoi(argv[6]);
	if (argc == 7 && !strcmp(argv[5], "jumbo"))
		jumbo = atoi(argv[6]);
	if ((argc != 5 && flood < 1 && jumbo < 1) || inet_pton(AF_INET, argv[2], &sip) != 1 ||
	    inet_pton(AF_INET, argv[3], &dip) != 1 || parse_mac(argv[4], dst_mac)) {
		fprintf(stderr,
			"usage: gso-inject IFACE SRC-IP DST-IP DST-MAC [flood N | jumbo N]\n");
		return 1;
	}
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0) {
		perror("gso-inject: socket(AF_PACKET)");
		return 1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[1]);
	sll.sll_ifindex = ifindex = (int)if_nametoindex(argv[1]);
	if (!sll.sll_ifindex || ioctl(fd, SIOCGIFHWADDR, &ifr) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("gso-inject: interface");
		return 1;
	}
	memcpy(src_mac, ifr.ifr_hwaddr.sa_data, 6);
	if (flood > 0) {
		for (int i = 0; i < flood; i++) {
			r = send_roce(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 49160,
				      0x4000 + (unsigned)i, 1, 0, -1, 0);
			if (r) {
				fprintf(stderr, "gso-inject: frame %d: %s\n", i, strerror(-r));
				return 1;
			}
		}
		close(fd);
		printf("gso-inject: %d frames sent on %s\n", flood, argv[1]);
		return 0;
	}
	if (jumbo > 0) {
		for (int i = 0; i < jumbo; i++) {
			/* gso_size 0: one frame */
			r = send_super(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 0, 8000,
				       0x20 + (unsigned)i);
			if (r) {
				fprintf(stderr, "gso-inject: jumbo frame %d: %s\n", i,
					strerror(-r));
				return 1;
			}
		}
		close(fd);
		printf("gso-inject: %d jumbo frames sent on %s\n", jumbo, argv[1]);
		return 0;
	}
	r = send_super(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 8, 800, 1);
	if (r == -EINVAL) {
		fprintf(stderr, "gso-inject: the kernel takes no UDP GSO from a packet socket\n");
		return 77;
	}
	if (!r)
		r = send_super(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 1000, 10 * 1000, 2);
	if (!r)
		r = send_roce(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 49155, 0x3000, 4, 1,
			      -1, 0);
	if (!r) /* VLAN 7, priority 0: a super-frame, then a frame */
		r = send_roce(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 49156, 0x3100, 4, 0, 7,
			      0);
	if (!r)
		r = send_roce(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 49157, 0x3200, 1, 0, 7, 0);
	if (!r) /* priority 3, VLAN 0 */
		r = send_roce(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 49158, 0x3300, 1, 0,
			      3 << 13, 0);
	if (!r)
		r = send_roce(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr, 49159, 0x3400, 3, 0, -1,
			      10);
	if (!r)
		r = send_ipv6(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr);
	if (!r)
		r = send_tcp(fd, src_mac, dst_mac, sip.s_addr, dip.s_addr);
	if (r) {
		fprintf(stderr, "gso-inject: %s\n", strerror(-r));
		return 1;
	}
	close(fd);
	printf("gso-inject: 7 super-frames and 2 frames sent on %s\n", argv[1]);
	return 0;
}
