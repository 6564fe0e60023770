// SPDX-License-Identifier: BSD-2-Clause
/* gso_recv: count (and optionally verify) RoCEv2 records arriving on an
 * AF_PACKET socket.
 *
 * usage: gso_recv -i IF [-V] [-b bufsize] [-v] [-s reclen] [-e expected] [-t idle_ms] [-P nprint]
 * [-R] -V       PACKET_VNET_HDR + recvmsg: frames come with a virtio_net_hdr -b N     receive
 * buffer per recv (default 65600); e.g. 2048 to mimic an mbuf -R       TPACKET_V2 RX ring with
 * 2048-byte frames, no vnet hdr (what DPDK net_af_packet does); -b is then the ring frame size -v
 * verify every record's ICRC (zlib crc32, independent of the sender) -s N     record size
 * (BTH+payload+ICRC) used to slice frames without a gso_size (default 1040) -e N     stop after N
 * records;  -t ms stop after this long idle (default 1500) -P N     print a line for the first N
 * frames
 */
#include "common.h"
#include <sys/mman.h>
#include <poll.h>

static long rec_ok, rec_bad, frames, trunc_frames, gso_frames, roce_bytes;
static int verify, rec_len = 1040, nprint;

/* one Ethernet frame (caplen bytes captured of wire len); vh may be NULL */
static void handle(const uint8_t *f, size_t caplen, size_t len, const struct virtio_net_hdr *vh)
{
	if (caplen < HDRS || f[12] != 0x08 || f[13] != 0x00)
		return;
	const struct iphdr *ip = (const struct iphdr *)(f + ETH_LEN);
	const struct udphdr *udp = (const struct udphdr *)(f + ETH_LEN + IP_LEN);
	if (ip->protocol != IPPROTO_UDP || ntohs(udp->dest) != ROCE_PORT)
		return;
	frames++;
	if (caplen < len)
		trunc_frames++;
	size_t udp_pl = ntohs(udp->len) - UDP_LEN;
	int gsz = (vh && vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) ? vh->gso_size : 0;
	if (gsz)
		gso_frames++;
	int slice = gsz ? gsz : rec_len;
	long nrec = (udp_pl + slice - 1) / slice;
	if (frames <= nprint) {
		printf("frame %ld: len=%zu caplen=%zu ip.tot_len=%u ip.id=0x%04x udp.len=%u "
		       "udp.csum=0x%04x "
		       "first_psn=%u",
		       frames, len, caplen, ntohs(ip->tot_len), ntohs(ip->id), ntohs(udp->len),
		       ntohs(udp->check),
		       caplen >= HDRS + 12 ? (f[HDRS + 9] << 16 | f[HDRS + 10] << 8 | f[HDRS + 11])
					   : 0);
		if (vh)
			printf(" vnet{flags=%u gso_type=%u gso_size=%u hdr_len=%u csum_start=%u "
			       "csum_off=%u}",
			       vh->flags, vh->gso_type, vh->gso_size, vh->hdr_len, vh->csum_start,
			       vh->csum_offset);
		printf(" -> %ld record(s)\n", nrec);
	}
	roce_bytes += udp_pl;
	if (!verify) {
		rec_ok += nrec;
		return;
	}
	/* rebuild each segment's headers as Linux's UDP GSO would emit them */
	struct iphdr sip = *ip;
	struct udphdr sudp = *udp;
	for (long i = 0; i < nrec; i++) {
		size_t off = HDRS + (size_t)i * slice;
		size_t rl = udp_pl - (size_t)i * slice < (size_t)slice ? udp_pl - (size_t)i * slice
								       : (size_t)slice;
		if (off + rl > caplen) { /* truncated: cannot check */
			rec_bad++;
			continue;
		}
		sip.tot_len = htons(IP_LEN + UDP_LEN + rl);
		sip.id = htons((uint16_t)(ntohs(ip->id) + i));
		sudp.len = htons(UDP_LEN + rl);
		const uint8_t *r = f + off;
		uint32_t want = roce_icrc(&sip, &sudp, r, r + BTH_LEN, rl - BTH_LEN - ICRC_LEN, 0);
		if (want == get_le32(r + rl - ICRC_LEN))
			rec_ok++;
		else {
			rec_bad++;
			if (rec_bad <= 5)
				fprintf(stderr, "bad ICRC frame %ld rec %ld: have %08x want %08x\n",
					frames, i, get_le32(r + rl - ICRC_LEN), want);
		}
	}
}

/* wait for the next frame: 60 s for the first, idle_ms after; false once
 * that passes with nothing */
static int idle_wait(struct pollfd *pfd, double t_first, int idle_ms)
{
	return poll(pfd, 1, t_first ? idle_ms : 60000) != 0;
}

/* a frame came: the first one's time and the last one's */
static void stamp(double *t_first, double *t_last)
{
	*t_last = now_s();
	if (!*t_first)
		*t_first = *t_last;
}

int main(int argc, char **argv)
{
	const char *ifn = NULL;
	int vnet = 0, ringmode = 0, opt, idle_ms = 1500;
	size_t bufsz = 65600;
	long expect = 0;

	while ((opt = getopt(argc, argv, "i:Vb:vs:e:t:P:R")) != -1) {
		switch (opt) {
		case 'i':
			ifn = optarg;
			break;
		case 'V':
			vnet = 1;
			break;
		case 'b':
			bufsz = atol(optarg);
			break;
		case 'v':
			verify = 1;
			break;
		case 's':
			rec_len = atoi(optarg);
			break;
		case 'e':
			expect = atol(optarg);
			break;
		case 't':
			idle_ms = atoi(optarg);
			break;
		case 'P':
			nprint = atoi(optarg);
			break;
		case 'R':
			ringmode = 1;
			break;
		default:
			return 2;
		}
	}
	if (!ifn)
		return 2;
	int fd = packet_socket(htons(ETH_P_ALL), vnet);
	if (fd < 0)
		return 1;
	int rb = 64 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rb, sizeof(rb));
	struct sockaddr_ll sll = {.sll_family = AF_PACKET,
				  .sll_ifindex = if_index(fd, ifn),
				  .sll_protocol = htons(ETH_P_ALL)};
	uint8_t *ring = NULL;
	struct tpacket_req treq = {0};
	if (ringmode) {
		int v = TPACKET_V2;
		setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v));
		treq.tp_frame_size = bufsz < 65600 ? bufsz : 2048;
		treq.tp_block_size = 1 << 20;
		treq.tp_block_nr = 32;
		treq.tp_frame_nr = treq.tp_block_nr * (treq.tp_block_size / treq.tp_frame_size);
		ring = ring_map(fd, PACKET_RX_RING, &treq);
		if (!ring)
			return 1;
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("bind");
		return 1;
	}
	uint8_t *buf = malloc(bufsz + 64);
	double t_first = 0, t_last = 0, u0, s0, u1, s1;
	rusage_s(&u0, &s0);
	unsigned rf = 0;
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		if (expect && rec_ok + rec_bad >= expect)
			break;
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (ringmode) {
			struct tpacket2_hdr *h =
			    (struct tpacket2_hdr *)(ring + (size_t)rf * treq.tp_frame_size);
			if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) {
				if (!idle_wait(&pfd, t_first, idle_ms))
					break;
				continue;
			}
			stamp(&t_first, &t_last);
			handle((uint8_t *)h + h->tp_mac, h->tp_snaplen, h->tp_len, NULL);
			__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
			rf = (rf + 1) % treq.tp_frame_nr;
			continue;
		}
		struct virtio_net_hdr vh;
		struct iovec iov[2];
		int ni = 0;
		if (vnet)
			iov[ni++] = (struct iovec){&vh, sizeof(vh)};
		iov[ni++] = (struct iovec){buf, bufsz};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = ni};
		ssize_t k = recvmsg(fd, &mh, MSG_TRUNC | MSG_DONTWAIT);
		if (k < 0) {
			if (errno != EAGAIN) {
				perror("recvmsg");
				return 1;
			}
			if (!idle_wait(&pfd, t_first, idle_ms))
				break;
			continue;
		}
		stamp(&t_first, &t_last);
		size_t len = k - (vnet ? sizeof(vh) : 0);
		handle(buf, len < bufsz ? len : bufsz, len, vnet ? &vh : NULL);
	}
	rusage_s(&u1, &s1);
	struct tpacket_stats st = {0};
	socklen_t sl = sizeof(st);
	getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl);
	double dt = t_last - t_first;
	printf("RECV vnet=%d ring=%d frames=%ld gso_frames=%ld truncated=%ld records_ok=%ld "
	       "records_bad=%ld "
	       "roce_bytes=%ld time=%.3fs rate=%.1fMB/s user=%.3fs sys=%.3fs pkt_stats{packets=%u "
	       "drops=%u}\n",
	       vnet, ringmode, frames, gso_frames, trunc_frames, rec_ok, rec_bad, roce_bytes, dt,
	       dt > 0 ? roce_bytes / dt / 1e6 : 0, u1 - u0, s1 - s0, st.tp_packets, st.tp_drops);
	return 0;
}
