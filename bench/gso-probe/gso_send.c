// SPDX-License-Identifier: BSD-2-Clause
/* gso_send: push fixed-size RoCEv2 records (BTH + payload + ICRC) out of an
 * AF_PACKET socket, either as UDP GSO super-frames (PACKET_VNET_HDR,
 * VIRTIO_NET_HDR_GSO_UDP_L4, gso_size = record size) or one frame per record.
 *
 * usage: gso_send -i IF -D dstmac [-m gso|single|mmsg|ring|ringgso|udp] [-n N]
 *        [-r records] [-p payload] [-C] [-q] [-V0] [-S srcip] [-d dstip]
 *   -n N     records per super-frame (gso/ringgso/udp) or per batch (mmsg/ring)
 *   udp      the same super-frames through a kernel UDP socket (UDP_SEGMENT,
 *            bound to the records' source port, unconnected, DF): the kernel
 *            builds the Ethernet/IP/UDP headers and gives each super-frame
 *            IP ID 0 (its pieces 0..N-1), which the ICRCs are computed for
 *            (-I has no effect); a comparison of the kernel's costs, not a
 *            droce transmit path
 *   -r R     total records to send (default 16)
 *   -C       do not recompute ICRCs in the loop (kernel cost only; ICRCs stale)
 *   -q       PACKET_QDISC_BYPASS
 *   -V0      single mode without PACKET_VNET_HDR
 *   -I id0   first IP ID (default 0xfff0, to exercise wrap)
 *   -L pl    payload of the last record of every frame (short tail segment)
 *   -G type  override vnet gso_type (debug), -F flags override, -H hdr_len override
 */
#include "common.h"
#include <sys/mman.h>
#include <poll.h>

static int rec_payload = 1024, rec_len; /* BTH + payload + ICRC */
static uint32_t saddr, daddr;
static uint8_t smac[6], dmac[6];
static int use_vnet = 1, no_icrc, gso_type_ovr = -1, flags_ovr = -1, hdrlen_ovr = -1;
static uint32_t qpn = 0x000123;
static int last_pl = -1; /* -L: payload of the last record of each frame */

/* the records' UDP source port, from the QPN */
static uint16_t src_port(void)
{
	return (uint16_t)(0xc000 | (qpn & 0x3fff));
}

/* Build at buf (vnet hdr if use_vnet, then Ethernet frame) a frame carrying
 * nrec records; returns its length.  psn/id are those of the first record /
 * first segment.  gso: mark it as a UDP_L4 GSO packet. */
static size_t build(uint8_t *buf, int nrec, uint16_t id0, uint32_t psn0, int gso, int fill_payload)
{
	uint8_t *p = buf;
	int lpl = last_pl >= 0 ? last_pl : rec_payload;
	size_t udp_payload = (size_t)(nrec - 1) * rec_len + BTH_LEN + lpl + ICRC_LEN;

	if (use_vnet) {
		struct virtio_net_hdr *vh = (struct virtio_net_hdr *)p;
		memset(vh, 0, sizeof(*vh));
		if (gso) {
			vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
			vh->gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
			vh->gso_size = rec_len;
			vh->hdr_len = HDRS;
			vh->csum_start = ETH_LEN + IP_LEN;
			vh->csum_offset = offsetof(struct udphdr, check);
		}
		if (gso_type_ovr >= 0)
			vh->gso_type = gso_type_ovr;
		if (flags_ovr >= 0)
			vh->flags = flags_ovr;
		if (hdrlen_ovr >= 0)
			vh->hdr_len = hdrlen_ovr;
		p += sizeof(*vh);
	}
	memcpy(p, dmac, 6);
	memcpy(p + 6, smac, 6);
	p[12] = 0x08;
	p[13] = 0x00;
	struct iphdr *ip = (struct iphdr *)(p + ETH_LEN);
	struct udphdr *udp = (struct udphdr *)(p + ETH_LEN + IP_LEN);
	memset(ip, 0, IP_LEN);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons(IP_LEN + UDP_LEN + udp_payload);
	ip->id = htons(id0);
	ip->frag_off = htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = saddr;
	ip->daddr = daddr;
	ip->check = ip_csum(ip, IP_LEN);
	udp->source = htons(src_port());
	udp->dest = htons(ROCE_PORT);
	udp->len = htons(UDP_LEN + udp_payload);
	udp->check = 0;
	if (gso) { /* CHECKSUM_PARTIAL: pseudo-header sum, not inverted */
		uint32_t s = (ntohl(saddr) >> 16) + (ntohl(saddr) & 0xffff) + (ntohl(daddr) >> 16) +
			     (ntohl(daddr) & 0xffff) + IPPROTO_UDP + UDP_LEN + udp_payload;
		while (s >> 16)
			s = (s & 0xffff) + (s >> 16);
		udp->check = htons(s);
	}

	/* per-segment header images for the ICRC */
	struct iphdr sip = *ip;
	struct udphdr sudp = *udp;
	sip.tot_len = htons(IP_LEN + UDP_LEN + rec_len);
	sudp.len = htons(UDP_LEN + rec_len);

	uint8_t *r = p + HDRS;
	for (int i = 0; i < nrec; i++, r += rec_len) {
		uint32_t psn = (psn0 + i) & 0xffffff;
		int pl = i == nrec - 1 ? lpl : rec_payload;
		if (i == nrec - 1 && lpl != rec_payload) {
			sip.tot_len = htons(IP_LEN + UDP_LEN + BTH_LEN + pl + ICRC_LEN);
			sudp.len = htons(UDP_LEN + BTH_LEN + pl + ICRC_LEN);
		}
		r[0] = 0x07; /* RC RDMA WRITE Middle */
		r[1] = 0x00; /* SE M Pad TVer */
		r[2] = 0xff;
		r[3] = 0xff; /* P_Key */
		r[4] = 0x00; /* FECN/BECN/resv */
		r[5] = qpn >> 16;
		r[6] = qpn >> 8;
		r[7] = qpn;
		r[8] = 0x00;
		r[9] = psn >> 16;
		r[10] = psn >> 8;
		r[11] = psn;
		if (fill_payload)
			for (int k = 0; k < pl; k++)
				r[BTH_LEN + k] = (uint8_t)(k * 7 + i);
		if (!no_icrc || fill_payload) {
			sip.id = htons((uint16_t)(id0 + i));
			put_le32(r + BTH_LEN + pl, roce_icrc(&sip, &sudp, r, r + BTH_LEN, pl, 1));
		}
	}
	return (p - buf) + HDRS + udp_payload;
}

static void parse_mac(const char *s, uint8_t m[6])
{
	if (sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) !=
	    6) {
		fprintf(stderr, "bad mac %s\n", s);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	const char *ifn = NULL, *mode = "gso";
	int n = 16, qbypass = 0, opt;
	long total = 16;
	uint16_t id = 0xfff0;
	saddr = inet_addr("10.91.0.1");
	daddr = inet_addr("10.91.0.2");
	memset(dmac, 0xff, 6);

	while ((opt = getopt(argc, argv, "i:D:m:n:r:p:CqV:S:d:I:G:F:H:L:")) != -1) {
		switch (opt) {
		case 'i':
			ifn = optarg;
			break;
		case 'D':
			parse_mac(optarg, dmac);
			break;
		case 'm':
			mode = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'r':
			total = atol(optarg);
			break;
		case 'p':
			rec_payload = atoi(optarg);
			break;
		case 'C':
			no_icrc = 1;
			break;
		case 'q':
			qbypass = 1;
			break;
		case 'V':
			use_vnet = atoi(optarg);
			break;
		case 'S':
			saddr = inet_addr(optarg);
			break;
		case 'd':
			daddr = inet_addr(optarg);
			break;
		case 'I':
			id = strtoul(optarg, NULL, 0);
			break;
		case 'G':
			gso_type_ovr = atoi(optarg);
			break;
		case 'F':
			flags_ovr = atoi(optarg);
			break;
		case 'H':
			hdrlen_ovr = atoi(optarg);
			break;
		case 'L':
			last_pl = atoi(optarg);
			break;
		default:
			fprintf(stderr, "see source for usage\n");
			return 2;
		}
	}
	if (!ifn) {
		fprintf(stderr, "need -i IF\n");
		return 2;
	}
	rec_len = BTH_LEN + rec_payload + ICRC_LEN;
	int udp = !strcmp(mode, "udp");
	int gso = !strcmp(mode, "gso") || !strcmp(mode, "ringgso") || udp;
	int ring = !strncmp(mode, "ring", 4);
	if (gso && !use_vnet) {
		fprintf(stderr, "gso needs vnet hdr\n");
		return 2;
	}

	int fd = packet_socket(0, use_vnet); /* protocol 0: TX only, no RX queueing */
	if (fd < 0)
		return 1;
	int one = 1;
	int ufd = -1;
	struct sockaddr_in udst = {.sin_family = AF_INET, .sin_port = htons(ROCE_PORT)};
	if (udp) {
		struct sockaddr_in usrc = {
		    .sin_family = AF_INET, .sin_port = htons(src_port()), .sin_addr.s_addr = saddr};
		int pmtud = IP_PMTUDISC_DO, seg = rec_len;
		udst.sin_addr.s_addr = daddr;
		ufd = socket(AF_INET, SOCK_DGRAM, 0);
		if (ufd < 0 ||
		    setsockopt(ufd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtud, sizeof(pmtud)) < 0 ||
		    setsockopt(ufd, SOL_SOCKET, SO_BINDTODEVICE, ifn, strlen(ifn)) < 0 ||
		    bind(ufd, (struct sockaddr *)&usrc, sizeof(usrc)) < 0) {
			perror("udp socket");
			return 1;
		}
		if (setsockopt(ufd, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)) < 0) {
			perror("UDP_SEGMENT");
			return 1;
		}
	}
	if (qbypass && setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0)
		perror("PACKET_QDISC_BYPASS");
	int sb = 16 << 20;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sb, sizeof(sb));
	if_mac(fd, ifn, smac);
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
				  .sll_ifindex = if_index(fd, ifn),
				  .sll_protocol = htons(ETH_P_IP)};
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("bind");
		return 1;
	}

	int per = gso ? n : 1; /* records per frame */
	size_t fmax = sizeof(struct virtio_net_hdr) + HDRS + (size_t)per * rec_len;
	int batch = gso && !ring ? 1 : n; /* frames per syscall */
	long frames_total = (total + per - 1) / per;
	uint32_t psn = 0;
	long sent_rec = 0, sent_frames = 0, syscalls = 0, retries = 0;
	size_t bytes = 0;
	double u0, s0, u1, s1, t0, t1;

	/* frame buffers: one per frame of a batch */
	uint8_t **fb = calloc(batch, sizeof(*fb));
	size_t *fl = calloc(batch, sizeof(*fl));
	for (int b = 0; b < batch; b++) {
		fb[b] = aligned_alloc(64, (fmax + 63) & ~63ul);
		fl[b] = build(fb[b], per, 0, 0, gso, 1);
	}

	/* TX ring */
	uint8_t *ringmem = NULL;
	struct tpacket_req treq = {0};
	unsigned rframe = 0;
	if (ring) {
		int v = TPACKET_V2;
		if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0) {
			perror("PACKET_VERSION");
			return 1;
		}
		size_t fs = 4096;
		while (fs < fmax + TPACKET2_HDRLEN)
			fs <<= 1;
		treq.tp_frame_size = fs;
		treq.tp_block_size = fs < 65536 ? 65536 : fs;
		treq.tp_frame_nr =
		    (treq.tp_block_size / fs) *
		    (unsigned)((2 * batch * fs + treq.tp_block_size - 1) / treq.tp_block_size);
		treq.tp_block_nr = treq.tp_frame_nr / (treq.tp_block_size / fs);
		ringmem = ring_map(fd, PACKET_TX_RING, &treq);
		if (!ringmem)
			return 1;
	}

	struct mmsghdr *mm = calloc(batch, sizeof(*mm));
	struct iovec *iov = calloc(batch, sizeof(*iov));

	rusage_s(&u0, &s0);
	t0 = now_s();
	while (sent_frames < frames_total) {
		int nb = batch;
		if (frames_total - sent_frames < nb)
			nb = frames_total - sent_frames;
		long nrec_batch = 0;
		for (int b = 0; b < nb; b++) {
			int nr = per;
			if (total - sent_rec - nrec_batch < nr)
				nr = total - sent_rec - nrec_batch;
			if (udp) /* the kernel's IP ID of an unconnected DF datagram */
				id = 0;
			fl[b] = build(fb[b], nr, id, psn, gso, 0);
			id += nr;
			psn += nr;
			nrec_batch += nr;
		}
		if (ring) {
			for (int b = 0; b < nb; b++) {
				struct tpacket2_hdr *h;
				for (;;) {
					h = (struct tpacket2_hdr *)(ringmem +
								    (size_t)rframe *
									treq.tp_frame_size);
					if (h->tp_status == TP_STATUS_AVAILABLE)
						break;
					if (h->tp_status == TP_STATUS_WRONG_FORMAT) {
						fprintf(stderr, "ring frame wrong format\n");
						return 1;
					}
					if (send(fd, NULL, 0, 0) < 0 && errno != ENOBUFS) {
						perror("send(ring)");
						return 1;
					}
					syscalls++;
				}
				uint8_t *d =
				    (uint8_t *)h + TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);
				memcpy(d, fb[b], fl[b]);
				h->tp_len = fl[b];
				__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST,
						 __ATOMIC_RELEASE);
				rframe = (rframe + 1) % treq.tp_frame_nr;
			}
			if (send(fd, NULL, 0, 0) < 0) {
				perror("send(ring)");
				return 1;
			}
			syscalls++;
		} else if (udp) {
			/* the records only: the kernel writes the headers */
			for (int b = 0; b < nb; b++) {
				size_t off = sizeof(struct virtio_net_hdr) + HDRS;
				for (;;) {
					ssize_t k = sendto(ufd, fb[b] + off, fl[b] - off, 0,
							   (struct sockaddr *)&udst, sizeof(udst));
					syscalls++;
					if (k >= 0)
						break;
					if (errno == ENOBUFS || errno == EAGAIN) {
						retries++;
						continue;
					}
					perror("sendto(udp)");
					return 1;
				}
			}
		} else if (!strcmp(mode, "mmsg")) {
			for (int b = 0; b < nb; b++) {
				iov[b].iov_base = fb[b];
				iov[b].iov_len = fl[b];
				memset(&mm[b], 0, sizeof(mm[b]));
				mm[b].msg_hdr.msg_iov = &iov[b];
				mm[b].msg_hdr.msg_iovlen = 1;
			}
			int done = 0;
			while (done < nb) {
				int k = sendmmsg(fd, mm + done, nb - done, 0);
				syscalls++;
				if (k < 0) {
					if (errno == ENOBUFS) {
						retries++;
						continue;
					}
					perror("sendmmsg");
					return 1;
				}
				done += k;
			}
		} else {
			for (int b = 0; b < nb; b++) {
				for (;;) {
					ssize_t k = send(fd, fb[b], fl[b], 0);
					syscalls++;
					if (k >= 0)
						break;
					if (errno == ENOBUFS) {
						retries++;
						continue;
					}
					fprintf(stderr, "send(len %zu) failed: %s (errno %d)\n",
						fl[b], strerror(errno), errno);
					return 1;
				}
			}
		}
		for (int b = 0; b < nb; b++)
			bytes += fl[b] - (use_vnet ? sizeof(struct virtio_net_hdr) : 0);
		sent_frames += nb;
		sent_rec += nrec_batch;
	}
	if (ring) { /* wait for the ring to drain */
		for (unsigned f = 0; f < treq.tp_frame_nr; f++) {
			struct tpacket2_hdr *h =
			    (struct tpacket2_hdr *)(ringmem + (size_t)f * treq.tp_frame_size);
			while (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) !=
			       TP_STATUS_AVAILABLE) {
				send(fd, NULL, 0, 0);
				syscalls++;
			}
		}
	}
	t1 = now_s();
	rusage_s(&u1, &s1);
	double dt = t1 - t0;
	printf("SEND mode=%s n=%d vnet=%d icrc=%s crc=%s records=%ld frames=%ld syscalls=%ld "
	       "enobufs=%ld "
	       "wire_bytes=%zu rec_bytes=%ld time=%.3fs rate=%.1fMB/s(records) user=%.3fs "
	       "sys=%.3fs cpu/GB=%.3fs\n",
	       mode, n, use_vnet, no_icrc ? "stale" : "live", dr_crc32_impl(), sent_rec,
	       sent_frames, syscalls, retries, bytes, sent_rec * rec_len, dt,
	       sent_rec * rec_len / dt / 1e6, u1 - u0, s1 - s0,
	       (u1 - u0 + s1 - s0) / (sent_rec * rec_len / 1e9));
	return 0;
}
