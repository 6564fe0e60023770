// SPDX-License-Identifier: BSD-2-Clause
/* Shared bits for the UDP-GSO RoCEv2 spike (sender and receiver). */
#ifndef SPIKE_COMMON_H
#define SPIKE_COMMON_H
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <time.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>
#include <linux/virtio_net.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <zlib.h>

#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
/* linux/virtio_net.h since 5.18; libc headers here are older */
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define ROCE_PORT 4791
#define BTH_LEN	  12
#define ICRC_LEN  4
#define ETH_LEN	  14
#define IP_LEN	  20
#define UDP_LEN	  8
#define HDRS	  (ETH_LEN + IP_LEN + UDP_LEN) /* 42 */

/* droce's CRC-32 (compiled from droce's src/roce/icrc.c); zlib-compatible */
uint32_t dr_crc32(uint32_t crc, const void *buf, size_t len);
const char *dr_crc32_impl(void);

static inline uint16_t ip_csum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (b[i] << 8) | b[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons(~s & 0xffff);
}

/* ICRC of one RoCEv2 packet whose IPv4 header (20 B), UDP header and BTH are
 * ip/udp/bth (as they will be on the wire), followed by payload of plen bytes.
 * fast: droce's dr_crc32; else zlib crc32 (independent cross-check). */
static inline uint32_t roce_icrc(const struct iphdr *ip, const struct udphdr *udp,
				 const uint8_t *bth, const uint8_t *payload, size_t plen, int fast)
{
	uint8_t m[8 + IP_LEN + UDP_LEN + BTH_LEN];
	memset(m, 0xff, 8);
	memcpy(m + 8, ip, IP_LEN);
	memcpy(m + 8 + IP_LEN, udp, UDP_LEN);
	memcpy(m + 8 + IP_LEN + UDP_LEN, bth, BTH_LEN);
	struct iphdr *mi = (struct iphdr *)(m + 8);
	mi->tos = 0xff;
	mi->ttl = 0xff;
	mi->check = 0xffff;
	((struct udphdr *)(m + 8 + IP_LEN))->check = 0xffff;
	m[8 + IP_LEN + UDP_LEN + 4] = 0xff; /* BTH resv8a/FECN/BECN byte */
	if (fast)
		return dr_crc32(dr_crc32(0, m, sizeof(m)), payload, plen);
	uint32_t c = crc32(0L, Z_NULL, 0);
	c = crc32(c, m, sizeof(m));
	return crc32(c, payload, plen);
}

static inline void put_le32(uint8_t *d, uint32_t v)
{
	d[0] = v;
	d[1] = v >> 8;
	d[2] = v >> 16;
	d[3] = v >> 24;
}
static inline uint32_t get_le32(const uint8_t *s)
{
	return s[0] | s[1] << 8 | s[2] << 16 | (uint32_t)s[3] << 24;
}

static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void rusage_s(double *u, double *s)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	*u = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
	*s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* one SIOCGIF* request on interface name, or exit */
static inline void if_req(int fd, const char *name, unsigned long req, const char *what,
			  struct ifreq *ifr)
{
	memset(ifr, 0, sizeof(*ifr));
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", name);
	if (ioctl(fd, req, ifr) < 0) {
		perror(what);
		exit(1);
	}
}

static inline int if_index(int fd, const char *name)
{
	struct ifreq ifr;

	if_req(fd, name, SIOCGIFINDEX, "SIOCGIFINDEX", &ifr);
	return ifr.ifr_ifindex;
}

static inline void if_mac(int fd, const char *name, uint8_t mac[6])
{
	struct ifreq ifr;

	if_req(fd, name, SIOCGIFHWADDR, "SIOCGIFHWADDR", &ifr);
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
}

/* an AF_PACKET raw socket for protocol proto (network order; 0: transmit
 * only), with PACKET_VNET_HDR when vnet; -1 with the cause printed */
static inline int packet_socket(int proto, int vnet)
{
	int one = 1, fd = socket(AF_PACKET, SOCK_RAW, proto);

	if (fd < 0) {
		perror("socket");
		return -1;
	}
	if (vnet && setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0) {
		perror("PACKET_VNET_HDR");
		close(fd);
		return -1;
	}
	return fd;
}

/* set up a TPACKET ring (PACKET_RX_RING or PACKET_TX_RING) and map it, or
 * NULL with the cause printed */
static inline uint8_t *ring_map(int fd, int which, struct tpacket_req *treq)
{
	void *m;

	if (setsockopt(fd, SOL_PACKET, which, treq, sizeof(*treq)) < 0) {
		perror(which == PACKET_RX_RING ? "PACKET_RX_RING" : "PACKET_TX_RING");
		return NULL;
	}
	m = mmap(NULL, (size_t)treq->tp_block_size * treq->tp_block_nr, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	return m;
}
#endif
