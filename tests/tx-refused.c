// SPDX-License-Identifier: BSD-2-Clause
/*
 * tx-refused - frames the kernel refuses are not on record as sent, for
 * tests/netns-mtu.sh: a "packet:IFACE" port (droce's own packet socket) at
 * MTU 9000 sends a frame of 4,000 bytes right after IFACE's MTU was set to
 * 1500.  The port looks at the interface's MTU at most once a millisecond,
 * so the frame usually reaches the kernel before the port knows, and the
 * kernel refuses it (EMSGSIZE); otherwise the port's own check drops it.
 * Either way the frame must be counted in tx_refused and tx_dropped and in
 * neither tx_frames nor the port's capture (FI_DROCE_PCAP's file): it never
 * left.  A frame of 100 bytes sent after it must leave, counted and
 * captured.  Twenty such rounds, the MTU set back to 9000 and seen by the
 * port before each; at least one must have been refused by the kernel
 * (the port had not seen the fall when it sent: link_mtu_changes did not
 * move), or the test did not test what it is for and fails.  Then the
 * capture is read back: no frame of 4,000 bytes in it, one outbound frame
 * of 100 bytes per round.
 *
 * usage: tx-refused IFACE IP DST-IP DST-MAC PCAP
 * Exit 0 pass, 1 fail (with why), 99 hard error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dr_port.h"
#include "dr_roce.h"
#include "../tools/pcapng.h"

#define ROUNDS	  20
#define BIG_LEN	  4000u
#define SMALL_LEN 100u

static const char *ifname;
static int fails;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "tx-refused: FAIL: " __VA_ARGS__);                                 \
		fputc('\n', stderr);                                                               \
		fails++;                                                                           \
	} while (0)

static int ifreq_do(unsigned long req, struct ifreq *ifr)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -errno;
	snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", ifname);
	r = ioctl(fd, req, ifr) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static void set_mtu(int mtu)
{
	struct ifreq ifr = {.ifr_mtu = mtu};
	int r = ifreq_do(SIOCSIFMTU, &ifr);

	if (r < 0) {
		fprintf(stderr, "tx-refused: cannot set the MTU of %s to %d: %s\n", ifname, mtu,
			strerror(-r));
		exit(99);
	}
}

/* Poll the port for ms milliseconds: its link watch looks meanwhile. */
static void poll_for(struct dr_port *p, unsigned ms)
{
	uint64_t end = dr_port_now_ns() + ms * 1000000ull;

	while (dr_port_now_ns() < end)
		if (dr_port_poll(p) < 0) {
			fprintf(stderr, "tx-refused: dr_port_poll failed\n");
			exit(99);
		}
}

/* A UDP datagram of len bytes of frame, from src to dst (network order) at
 * dmac, to UDP port 9 (discard). */
static void frame_make(uint8_t *f, unsigned len, const uint8_t smac[6], const uint8_t dmac[6],
		       uint32_t src, uint32_t dst, uint16_t id)
{
	uint8_t *ip = f + 14, *udp = ip + 20;
	struct dr_ipv4_hdr h;

	memset(f, 0x5a, len);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 28);
	ip[0] = 0x45;
	ip[2] = (uint8_t)((len - 14) >> 8);
	ip[3] = (uint8_t)(len - 14);
	ip[4] = (uint8_t)(id >> 8);
	ip[5] = (uint8_t)id;
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	memcpy(&h, ip, sizeof(h));
	h.csum = dr_ipv4_csum(&h);
	memcpy(ip, &h, sizeof(h));
	udp[0] = 0xc0;
	udp[1] = 0x01;
	udp[3] = 9;
	udp[4] = (uint8_t)((len - 34) >> 8);
	udp[5] = (uint8_t)(len - 34);
}

int main(int argc, char **argv)
{
	struct dr_port_config cfg;
	struct dr_port_err err = {0};
	struct dr_port_stats s0, s1;
	struct dr_port *p;
	struct in_addr ip, dst;
	struct ifreq ifr = {0};
	uint8_t dmac[6], smac[6], big[BIG_LEN], small[SMALL_LEN];
	unsigned by_kernel = 0, by_port = 0, big_seen = 0, small_out = 0;
	char device[64], rerr[256];
	struct dr_pcapng *r;
	struct dr_pcapng_pkt pk;
	int ret;

	if (argc != 6 || inet_pton(AF_INET, argv[2], &ip) != 1 ||
	    inet_pton(AF_INET, argv[3], &dst) != 1 ||
	    sscanf(argv[4], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dmac[0], &dmac[1], &dmac[2], &dmac[3],
		   &dmac[4], &dmac[5]) != 6) {
		fprintf(stderr, "usage: tx-refused IFACE IP DST-IP DST-MAC PCAP\n");
		return 99;
	}
	ifname = argv[1];
	if ((ret = ifreq_do(SIOCGIFHWADDR, &ifr)) < 0) {
		fprintf(stderr, "tx-refused: no MAC for %s: %s\n", ifname, strerror(-ret));
		return 99;
	}
	memcpy(smac, ifr.ifr_hwaddr.sa_data, 6);
	set_mtu(9000);
	snprintf(device, sizeof(device), "packet:%s", ifname);
	memset(&cfg, 0, sizeof(cfg));
	cfg.device = device;
	cfg.ip4 = ntohl(ip.s_addr);
	cfg.prefix_len = 24;
	cfg.mtu = 9000;
	cfg.pcap_path = argv[5];
	ret = dr_port_open(&cfg, &p, &err);
	if (ret < 0) {
		fprintf(stderr, "tx-refused: cannot open %s: %s\n", device, err.msg);
		return 99;
	}
	for (unsigned i = 0; i < ROUNDS; i++) {
		/* the port sees 9000 again (it looks at most once a ms) */
		set_mtu(9000);
		poll_for(p, 3);
		frame_make(big, BIG_LEN, smac, dmac, ip.s_addr, dst.s_addr, (uint16_t)(2 * i));
		frame_make(small, SMALL_LEN, smac, dmac, ip.s_addr, dst.s_addr,
			   (uint16_t)(2 * i + 1));
		dr_port_get_stats(p, &s0);
		set_mtu(1500);
		if ((ret = dr_port_send_raw(p, big, BIG_LEN)) != 0) {
			fprintf(stderr, "tx-refused: dr_port_send_raw: %s\n", strerror(-ret));
			return 99;
		}
		/* sent at once (no batch): the counters say what became of it
		 * before a flush would look at the link again */
		dr_port_get_stats(p, &s1);
		if (s1.link_mtu_changes == s0.link_mtu_changes)
			by_kernel++;
		else
			by_port++;
		if (s1.tx_refused != s0.tx_refused + 1)
			FAIL("the long frame: tx_refused %" PRIu64 " -> %" PRIu64 ", not one more",
			     s0.tx_refused, s1.tx_refused);
		if (s1.tx_dropped != s0.tx_dropped + 1)
			FAIL("the long frame: tx_dropped %" PRIu64 " -> %" PRIu64 ", not one more",
			     s0.tx_dropped, s1.tx_dropped);
		if (s1.tx_frames != s0.tx_frames)
			FAIL("the long frame: tx_frames %" PRIu64 " -> %" PRIu64
			     ": counted as sent",
			     s0.tx_frames, s1.tx_frames);
		s0 = s1;
		if ((ret = dr_port_send_raw(p, small, SMALL_LEN)) != 0) {
			fprintf(stderr, "tx-refused: dr_port_send_raw: %s\n", strerror(-ret));
			return 99;
		}
		dr_port_flush(p);
		dr_port_get_stats(p, &s1);
		if (s1.tx_frames != s0.tx_frames + 1)
			FAIL("the short frame after it: tx_frames %" PRIu64 " -> %" PRIu64
			     ", not one more",
			     s0.tx_frames, s1.tx_frames);
		if (s1.tx_dropped != s0.tx_dropped)
			FAIL("the short frame after it: tx_dropped %" PRIu64 " -> %" PRIu64,
			     s0.tx_dropped, s1.tx_dropped);
	}
	set_mtu(9000);
	dr_port_get_stats(p, &s1);
	dr_port_close(p);
	printf("tx-refused: %u rounds: the long frame refused by the kernel %u times, by the "
	       "port's check %u times; tx_refused=%" PRIu64 " tx_dropped=%" PRIu64
	       " tx_frames=%" PRIu64 "\n",
	       (unsigned)ROUNDS, by_kernel, by_port, s1.tx_refused, s1.tx_dropped, s1.tx_frames);
	if (!by_kernel)
		FAIL("no kernel refusal: in all %u rounds the port saw the MTU fall first",
		     (unsigned)ROUNDS);

	r = dr_pcapng_open(argv[5], rerr, sizeof(rerr));
	if (!r) {
		fprintf(stderr, "tx-refused: %s\n", rerr);
		return 99;
	}
	while ((ret = dr_pcapng_next(r, &pk)) == 1) {
		if (pk.origlen == BIG_LEN)
			big_seen++;
		if (pk.origlen == SMALL_LEN && (pk.flags & DR_PCAPNG_FLAG_OUTBOUND))
			small_out++;
	}
	if (ret < 0) {
		fprintf(stderr, "tx-refused: %s: %s\n", argv[5], dr_pcapng_strerror(r));
		return 99;
	}
	dr_pcapng_close(r);
	printf("tx-refused: capture: %u frames of %u bytes, %u outbound of %u bytes\n", big_seen,
	       BIG_LEN, small_out, SMALL_LEN);
	if (big_seen)
		FAIL("the capture holds %u frames of %u bytes", big_seen, BIG_LEN);
	if (small_out != ROUNDS)
		FAIL("the capture holds %u outbound frames of %u bytes, not %u", small_out,
		     SMALL_LEN, (unsigned)ROUNDS);
	if (fails)
		return 1;
	printf("tx-refused: ok\n");
	return 0;
}
