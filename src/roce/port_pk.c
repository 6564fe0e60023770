/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * port_pk.c - droce's own packet socket on a kernel interface ("packet:IF"):
 * the zero-config path without DPDK's net_af_packet, so that one QP's
 * packets can cross the kernel as UDP GSO super-frames.
 *
 * The kernel's cost on a veth is per skb, about 3 us each whatever the
 * skb's size (bench/PROFILE.md section 7): one RoCE packet per skb caps
 * af_packet far below tcp, which moves 64 KiB per skb.  UDP GSO
 * (VIRTIO_NET_HDR_GSO_UDP_L4 through PACKET_VNET_HDR) carries N packets
 * of one size in one skb; wherever it is cut (by a NIC, a bridge port to
 * a device without the offload, or the kernel in front of rdma_rxe's UDP
 * socket), each piece gets a copy of the Ethernet/IP/UDP headers with
 * that piece's IP and UDP lengths and the IP ID of the first plus its
 * index, DF kept.  So when N consecutive frames of one QP differ only in
 * those fields, with consecutive IP IDs, their ICRCs (computed for the
 * headers they had) hold for the pieces, and the super-frame is exactly
 * those N frames on any wire that cuts it.
 *
 * Transmit (dr_pk_tx): one sendmmsg() per burst.  Runs of such frames
 * become one message (a vnet header, the first frame's headers with the
 * whole run's lengths, then each frame's UDP payload, gathered from the
 * mbufs) when the port sends super-frames (dr_port_config.gso) and the
 * destination QP's port takes them whole: its CM said so (ECE,
 * DR_ECE_GSO_RX; dr_port_gso_peer); any other frame is one message of its
 * own.  Through the qdisc layer unless dr_port_config.qdisc_bypass: the
 * packet taps (tcpdump) see every frame, a super-frame as one frame (as
 * they see tcp's 64 KiB segments).
 *
 * Receive (dr_pk_rx): a TPACKET_V2 ring, as net_af_packet's, of slots a
 * little larger than the longest RoCE frame at the port's path MTU (not
 * the interface's MTU: pk_socket), polled without system calls.  A frame
 * too large for its slot (a super-frame crossing a veth whole) is kept whole
 * on the socket's queue as well (PACKET_COPY_THRESH) and its slot marked
 * TP_STATUS_COPY: in ring order it is read from there whole into a staging
 * buffer, one copy into one buffer, and its pieces (the vnet header's
 * gso_size each) are handed on where they lie, in mbufs attached to the
 * buffer (stage_alloc).  Each gets the headers the kernel would have
 * given it had it cut the super-frame; as they would overwrite the end of
 * the piece before, they are written just before the piece is processed,
 * when the one before is done (dr_pk_rx_hdrs), and its ICRC is checked
 * beforehand against them (cut_check).  The kernel's copy is the only one
 * before the payload's placement; were no staging buffer idle, the pieces
 * would be copied into pool buffers, their ICRCs checked on the way
 * (cut_fill).
 *
 * The device the rest of the port sees is a net_ring ethdev on two idle
 * rings (control only: MAC, MTU, statistics); port.c calls dr_pk_rx and
 * dr_pk_tx where it would call rte_eth_rx_burst and rte_eth_tx_burst.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sendmmsg */
#endif
#include <errno.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_eth_ring.h>
#include <rte_mbuf_dyn.h>
#include <rte_ethdev.h>
#include <rte_ring.h>

#include "port_priv.h"

/* Linux 6.2's uapi; Debian 12's headers are older */
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define PK_HDRS	     (sizeof(struct dr_eth_hdr) + sizeof(struct dr_ipv4_hdr) + sizeof(struct dr_udp_hdr))
#define PK_RX_FRAMES 512    /* ring slots, as net_af_packet's default */
#define PK_BLOCK     65536u /* ring block, at most (but 16 slots) */
/* A slot's room beyond its frame: the tpacket2 header and address, the
 * vnet header, alignment */
#define PK_SLOT_ROOM 128u
/* The longest RoCEv2 frame beyond its path MTU: Ethernet, a VLAN tag,
 * IPv6, UDP, BTH, RETH, ImmDt, ICRC */
#define PK_ROCE_OVER                                                                               \
	(sizeof(struct dr_eth_hdr) + sizeof(struct dr_vlan_hdr) + sizeof(struct dr_ipv6_hdr) +     \
	 sizeof(struct dr_udp_hdr) + sizeof(struct dr_bth) + sizeof(struct dr_reth) +              \
	 sizeof(struct dr_immdt) + DR_ICRC_LEN)
#define PK_RCVBUF    (8u << 20)
/* A port takes super-frames whole only with room for a few windows of them
 * on its socket's queue: else a burst would overflow it (rx_truncated) */
#define PK_RCVBUF_MIN (2u << 20)
#define PK_MAX_SEGS   64 /* packets in one super-frame (the kernel takes 128) */
#define PK_CUT_MAX    128 /* pieces of a received one: the kernel's UDP_MAX_SEGMENTS */
#define PK_IOV	      (DR_PORT_TXQ * 6 + 4)
#define PK_RSTAGE     65536u /* a super-frame's UDP payload (an IP packet's most) */
/* Staging buffers a super-frame is read into whole, its pieces handed out
 * in place (mbufs attached to the buffer): room for the headers and a
 * whole IP packet's payload */
#define PK_STAGES    8
#define PK_STAGE_LEN (PK_HDRS + PK_RSTAGE)

/* One of them: busy from the read until the last of its pieces is freed
 * (the mbufs' shared-info count; stage_free, which may run in any thread
 * that frees a piece).  Piece i's mbuf starts PK_HDRS bytes before its
 * packet, at buf + i * size: over the end of piece i - 1, so its headers
 * (hdr[i]) are written there only once piece i - 1 is done with
 * (dr_pk_rx_hdrs). */
struct pk_stage {
	uint8_t *buf;
	struct rte_mbuf_ext_shared_info sh;
	bool busy;
	uint8_t hdr[PK_CUT_MAX][PK_HDRS];
};

struct dr_pk {
	int fd;
	int ifindex;
	char ifname[IF_NAMESIZE];
	struct rte_ring *idle[2]; /* the net_ring ethdev's, never used */
	uint8_t *ring;		  /* the mapped receive ring */
	size_t ring_len;
	unsigned frame_size, nframes, rx_next;
	bool gso;   /* send super-frames */
	bool takes; /* receive them whole: the socket's queue holds enough */
	/* peers (IPv4 << 24 | QPN, + 1) whose ports take them: an array
	 * scanned once per run of frames, the last answer kept */
	uint64_t *peers;
	unsigned npeers, cap_peers;
	uint64_t last_key;
	bool last_ok;
	/* the pieces of a super-frame not handed out yet: cut[cut_next..cut_len) */
	struct rte_mbuf *cut[PK_CUT_MAX];
	unsigned cut_next, cut_len;
	/* each received frame carries its slot's kernel time (CLOCK_REALTIME
	 * ns) in DPDK's rx timestamp field, flagged ts_flag (dr_pk_rx_time) */
	int ts_off;
	uint64_t ts_flag;
	/* a piece whose ICRC was checked as it was cut (dr_pk_icrc_ok) */
	uint64_t icrc_flag;
	uint8_t *rstage; /* a super-frame read whole, PK_RSTAGE bytes */
	struct pk_stage stage[PK_STAGES];
	/* the socket filter (dr_port_rx_qpn): whether one is wanted, and the
	 * QPNs whose RoCE frames it lets in */
	bool filter;
	uint32_t *qpns;
	unsigned nqpns, cap_qpns;
};

static struct dr_pk *pk_of(const struct dr_port *p)
{
	return p->pk;
}

/* The last piece of a stage was freed. */
static void stage_free(void *addr, void *opaque)
{
	struct pk_stage *st = opaque;

	(void)addr;
	__atomic_store_n(&st->busy, false, __ATOMIC_RELEASE);
}

/* A stage not in use (the first, so the one read last stays in the
 * cache), or NULL if all are. */
static struct pk_stage *stage_idle(struct dr_pk *k)
{
	for (unsigned i = 0; i < PK_STAGES; i++) {
		struct pk_stage *st = &k->stage[i];

		if (st->buf && !__atomic_load_n(&st->busy, __ATOMIC_ACQUIRE))
			return st;
	}
	return NULL;
}

/* The ICMP-style sum of the 20-byte header, ready to store. */
static uint16_t ip_sum(const uint8_t *ip)
{
	uint32_t s = 0;

	for (unsigned i = 0; i < 20; i += 2)
		if (i != 10)
			s += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = v >> 8;
	b[1] = v;
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

/* An array of n elements of size bytes with room for one more: arr itself,
 * or grown (twice the capacity, *cap updated); NULL if out of memory (arr
 * still valid). */
static void *pk_grow(void *arr, unsigned *cap, unsigned n, size_t size)
{
	unsigned c = *cap ? 2 * *cap : 16;
	void *a;

	if (n < *cap)
		return arr;
	a = realloc(arr, c * size);
	if (a)
		*cap = c;
	return a;
}

/* ---- the socket filter: several processes on one interface ------------------------ */

/*
 * Every packet socket on an interface gets a copy of every frame: with N
 * droce processes on it, each frame to one of them is copied into N rings
 * (a super-frame also read whole from N queues), and N-1 processes cut it,
 * check its ICRC and parse it only to find a QPN that is not theirs; and
 * each reads its neighbours' outgoing frames too, which it drops as looped.
 * So a process that does not hold the CM responder role (fi/dev.c) lets
 * the kernel drop, before any copy, the RoCEv2 frames that are not for its
 * own QPNs: a classic BPF program (SO_ATTACH_FILTER) lets in whatever is
 * not RoCEv2 (ARP, IPv6 neighbour discovery, IP fragments), MADs to QP1
 * (the CM's rules need every process to see them), and RoCEv2 frames whose
 * BTH DestQP is one of the QPNs, in a list the program compares one by one
 * (a super-frame's first BTH names the QP of all of its packets).  The
 * responder keeps seeing every frame, so that frames for QPNs nobody holds
 * are still counted (unknown_qpn) by one process.  A QPN enters the list
 * before any peer can learn it, and leaves it when its QP is destroyed.
 */
#define PK_FILTER_ACCEPT 0x40000u			/* "take it whole": more than any frame */
#define PK_FILTER_HEAD	 (DR_PORT_RX_FILTER_LEN(0) - 1) /* before the QPNs */
#define PK_FILTER_QPNS	 ((BPF_MAXINSNS - PK_FILTER_HEAD - 1) / 2)

unsigned dr_port_rx_filter_build(struct sock_filter *f, const uint32_t *qpns, unsigned n)
{
	/* where the jumps go: jt and jf count from the next instruction */
	enum { V6 = 12, ACC = 18, QPN = 19 };
#define PK_LD(sz, mode, k) ((struct sock_filter)BPF_STMT(BPF_LD | (sz) | (mode), (k)))
#define PK_JEQ(at, k, t, f)                                                                        \
	((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t) - (at)-1, (f) - (at)-1))
#define PK_JA(at, to) ((struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, (to) - (at)-1))
#define PK_RET(k)     ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (k)))
	const struct sock_filter head[PK_FILTER_HEAD] = {
	    /* 0: Ethernet: IPv4 or IPv6, else accepted */
	    PK_LD(BPF_H, BPF_ABS, 12),
	    PK_JEQ(1, DR_ETH_P_IPV4, 3, 2),
	    PK_JEQ(2, DR_ETH_P_IPV6, V6, ACC),
	    /* 3: IPv4, UDP, not a fragment, to port 4791: A = BTH bytes 4-7 */
	    PK_LD(BPF_B, BPF_ABS, 14 + 9),
	    PK_JEQ(4, DR_IPPROTO_UDP, 5, ACC),
	    PK_LD(BPF_H, BPF_ABS, 14 + 6),
	    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, ACC - 6 - 1, 0),
	    (struct sock_filter)BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 14),
	    PK_LD(BPF_H, BPF_IND, 14 + 2),
	    PK_JEQ(9, DR_ROCE_UDP_PORT, 10, ACC),
	    PK_LD(BPF_W, BPF_IND, 14 + 8 + 4),
	    PK_JA(11, QPN),
	    /* 12: IPv6 (no extension headers), UDP to port 4791 */
	    PK_LD(BPF_B, BPF_ABS, 14 + 6),
	    PK_JEQ(13, DR_IPPROTO_UDP, 14, ACC),
	    PK_LD(BPF_H, BPF_ABS, 14 + 40 + 2),
	    PK_JEQ(15, DR_ROCE_UDP_PORT, 16, ACC),
	    PK_LD(BPF_W, BPF_ABS, 14 + 40 + 8 + 4),
	    PK_JA(17, QPN),
	    /* 18: accepted */
	    PK_RET(PK_FILTER_ACCEPT),
	    /* 19: A = DestQP: QP1, then each QPN (equal: accepted, else the
	     * next; forward jumps are 8 bits, hence a return after each) */
	    (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, DR_QPN_MASK),
	    PK_JEQ(20, DR_GSI_QPN, 21, 22),
	    PK_RET(PK_FILTER_ACCEPT),
	};
	unsigned i = PK_FILTER_HEAD;

	memcpy(f, head, sizeof(head));
	for (unsigned q = 0; q < n; q++, i += 2) {
		f[i] = PK_JEQ(i, qpns[q] & DR_QPN_MASK, i + 1, i + 2);
		f[i + 1] = PK_RET(PK_FILTER_ACCEPT);
	}
	f[i++] = PK_RET(0);
	return i;
#undef PK_LD
#undef PK_JEQ
#undef PK_JA
#undef PK_RET
}

/* The socket takes every frame again.  The kernel reads an int even here
 * (EINVAL without one); ENOENT: none was attached. */
static void pk_filter_detach(struct dr_pk *k)
{
	int zero = 0;

	if (setsockopt(k->fd, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof(zero)) < 0 &&
	    errno != ENOENT)
		dr_port_log(DR_PORT_LOG_WARN,
			    "packet:%s: cannot detach the socket filter: %s: frames for "
			    "QPs created from now on may not arrive",
			    k->ifname, strerror(errno));
}

/* Puts the socket's filter in line with k->filter and k->qpns: attached,
 * replaced (atomically) or detached.  Without it the port sees every
 * frame, as before: slower, never wrong. */
static void pk_filter_apply(struct dr_pk *k)
{
	static bool told;
	struct sock_filter *f;
	struct sock_fprog prog;

	if (k->fd < 0)
		return;
	if (!k->filter || k->nqpns > PK_FILTER_QPNS) {
		if (k->filter && !told) {
			told = true;
			dr_port_log(DR_PORT_LOG_INFO,
				    "packet:%s: more than %u QPs: the socket takes every "
				    "process's frames",
				    k->ifname, (unsigned)PK_FILTER_QPNS);
		}
		pk_filter_detach(k);
		return;
	}
	f = malloc(DR_PORT_RX_FILTER_LEN(k->nqpns) * sizeof(*f));
	if (f) {
		prog.len = (unsigned short)dr_port_rx_filter_build(f, k->qpns, k->nqpns);
		prog.filter = f;
	}
	if (!f || setsockopt(k->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0) {
		if (!told) {
			told = true;
			dr_port_log(DR_PORT_LOG_INFO,
				    "packet:%s: no socket filter (%s): the socket takes every "
				    "process's frames",
				    k->ifname, f ? strerror(errno) : "out of memory");
		}
		pk_filter_detach(k);
	}
	free(f);
}

int dr_port_rx_filter(struct dr_port *p, bool on)
{
	struct dr_pk *k = pk_of(p);

	if (!k)
		return -ENOTSUP;
	if (k->filter != on) {
		k->filter = on;
		pk_filter_apply(k);
	}
	return 0;
}

int dr_port_rx_qpn(struct dr_port *p, uint32_t qpn, bool on)
{
	struct dr_pk *k = pk_of(p);
	unsigned i;

	if (!k)
		return -ENOTSUP;
	for (i = 0; i < k->nqpns && k->qpns[i] != qpn; i++)
		;
	if (!on) {
		if (i == k->nqpns)
			return 0;
		k->qpns[i] = k->qpns[--k->nqpns];
	} else {
		if (i < k->nqpns)
			return 0;
		uint32_t *q = pk_grow(k->qpns, &k->cap_qpns, k->nqpns, sizeof(*q));

		if (!q)
			return -ENOMEM;
		k->qpns = q;
		k->qpns[k->nqpns++] = qpn;
	}
	if (k->filter)
		pk_filter_apply(k);
	return 0;
}

/* ---- open / close -------------------------------------------------------------- */

static int pk_socket(struct dr_port *p, struct dr_pk *k, struct dr_port_err *err)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	struct tpacket_req req;
	int one = 1, v2 = TPACKET_V2, rcvbuf = PK_RCVBUF;
	unsigned pmtu = dr_port_pmtu_of(p->mtu), frame, per_block, page = (unsigned)getpagesize();

	/*
	 * A slot holds the longest frame a QP sends or receives at the
	 * port's path MTU, not the interface's MTU: whatever is longer (a
	 * super-frame, a non-RoCE jumbo frame) is marked TP_STATUS_COPY and
	 * read from the socket's queue whole (take_copy), and the kernel
	 * copies a whole slot's worth of it into the ring first, on the
	 * sending CPU (tpacket_rcv): at MTU 9000, 16 KiB slots had each 64
	 * KiB super-frame copied a quarter more (bench/PROFILE.md section 7,
	 * "Stop 40").  Slots are multiples of 256 bytes, blocks a power of
	 * two of them, at least 16 (4 KiB pages; more where pages are larger:
	 * the kernel takes only whole pages), PK_RX_FRAMES in all, tiling the
	 * ring with no gap: slot i is at i * frame.
	 */
	frame = pmtu && pmtu + PK_ROCE_OVER < p->max_frame ? pmtu + (unsigned)PK_ROCE_OVER
							   : p->max_frame;
	frame = (frame + PK_SLOT_ROOM + 255u) & ~255u;
	for (per_block = 16; per_block < PK_RX_FRAMES &&
			     (per_block * 2 * frame <= PK_BLOCK || (per_block * frame) % page);
	     per_block *= 2)
		;
	k->ifindex = if_nametoindex(k->ifname);
	if (!k->ifindex)
		return dr_port_fail(err, -ENODEV, DR_PORT_PARAM_DEVICE,
				    "packet:%s: no such interface", k->ifname);
	k->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (k->fd < 0)
		return dr_port_fail(err, -errno, DR_PORT_PARAM_DEVICE,
				    "packet:%s: cannot open a packet socket: %s%s", k->ifname,
				    strerror(errno), errno == EPERM ? " (needs CAP_NET_RAW)" : "");
	/* the vnet header before the ring is set; TPACKET_V3 would not take it */
	if (setsockopt(k->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(k->fd, SOL_PACKET, PACKET_VERSION, &v2, sizeof(v2)) < 0 ||
	    setsockopt(k->fd, SOL_PACKET, PACKET_COPY_THRESH, &one, sizeof(one)) < 0)
		return dr_port_fail(err, -errno, DR_PORT_PARAM_DEVICE,
				    "packet:%s: the kernel refuses the socket's options: %s",
				    k->ifname, strerror(errno));
	/* FI_DROCE_QDISC_BYPASS: past the qdisc layer and the packet taps */
	if (p->qdisc_bypass &&
	    setsockopt(k->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0)
		return dr_port_fail(err, -errno, DR_PORT_PARAM_DEVICE,
				    "packet:%s: no PACKET_QDISC_BYPASS: %s", k->ifname,
				    strerror(errno));
	/* room for super-frames on the socket's queue; without CAP_NET_ADMIN
	 * the kernel's rmem_max caps it (and the kernel reports twice what it
	 * was given) */
	if (setsockopt(k->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		setsockopt(k->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (getsockopt(k->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &(socklen_t){sizeof(rcvbuf)}) < 0)
		rcvbuf = 0;
	k->takes = (unsigned)rcvbuf >= PK_RCVBUF_MIN;
	if (!k->takes)
		dr_port_log(DR_PORT_LOG_INFO,
			    "packet:%s: a receive buffer of %d bytes only (net.core.rmem_max; "
			    "SO_RCVBUFFORCE needs CAP_NET_ADMIN): peers are not told to send "
			    "UDP GSO super-frames",
			    k->ifname, rcvbuf);
	req.tp_frame_size = frame;
	req.tp_block_size = frame * per_block;
	req.tp_block_nr = PK_RX_FRAMES / per_block;
	req.tp_frame_nr = PK_RX_FRAMES;
	if (setsockopt(k->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) < 0)
		return dr_port_fail(err, -errno, DR_PORT_PARAM_DEVICE,
				    "packet:%s: no receive ring of %u frames of %u bytes: %s",
				    k->ifname, req.tp_frame_nr, frame, strerror(errno));
	k->ring_len = (size_t)req.tp_block_size * req.tp_block_nr;
	k->ring = mmap(NULL, k->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, 0);
	if (k->ring == MAP_FAILED) {
		k->ring = NULL;
		return dr_port_fail(err, -errno, DR_PORT_PARAM_DEVICE,
				    "packet:%s: cannot map the receive ring: %s", k->ifname,
				    strerror(errno));
	}
	k->frame_size = frame;
	k->nframes = PK_RX_FRAMES;
	k->rx_next = 0;
	pk_filter_apply(k);
	sll.sll_ifindex = k->ifindex;
	if (bind(k->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return dr_port_fail(err, -errno, DR_PORT_PARAM_DEVICE,
				    "packet:%s: cannot bind the packet socket: %s", k->ifname,
				    strerror(errno));
	return 0;
}

static void pk_socket_close(struct dr_pk *k)
{
	if (k->ring)
		munmap(k->ring, k->ring_len);
	k->ring = NULL;
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
}

/* n frames the port (or the kernel, for it) received and dropped before
 * they reached rx_frame (whose counters the others take): counted in *why
 * and, as rx_frame's drops are, in rx_frames and rx_dropped. */
static void pk_lost_n(struct dr_port *p, uint64_t *why, uint64_t n)
{
	*why += n;
	p->stats.rx_frames += n;
	p->stats.rx_dropped += n;
}

static void pk_lost(struct dr_port *p, uint64_t *why)
{
	pk_lost_n(p, why, 1);
}

/* Frames the kernel dropped since the last look because the ring had no
 * free slot (it marks the next frame it delivers TP_STATUS_LOSING):
 * counted as lost (rx_ring_drops).  Reading them resets the kernel's
 * count. */
static void pk_ring_drops(struct dr_port *p, struct dr_pk *k)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (k->fd < 0 || getsockopt(k->fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
		return;
	pk_lost_n(p, &p->stats.rx_ring_drops, st.tp_drops);
}

/* The interface's MAC and MTU. */
static int pk_if_info(struct dr_port *p, struct dr_pk *k, uint8_t mac[6], struct dr_port_err *err)
{
	struct ifreq ifr;
	int mtu;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", k->ifname);
	if (ioctl(k->fd, SIOCGIFHWADDR, &ifr) < 0)
		return dr_port_fail(err, -errno, DR_PORT_PARAM_DEVICE, "packet:%s: no MAC: %s",
				    k->ifname, strerror(errno));
	if (ifr.ifr_hwaddr.sa_family != 1 /* ARPHRD_ETHER */)
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_DEVICE,
				    "packet:%s: not an Ethernet interface", k->ifname);
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	mtu = dr_port_if_mtu(k->fd, k->ifname);
	if (mtu < 0)
		return dr_port_fail(err, mtu, DR_PORT_PARAM_DEVICE, "packet:%s: no MTU: %s",
				    k->ifname, strerror(-mtu));
	if ((unsigned)mtu < p->mtu)
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_MTU,
				    "packet:%s: MTU %u is larger than the interface's (%d)",
				    k->ifname, p->mtu, mtu);
	return 0;
}

int dr_pk_plug(struct dr_port *p, const char *spec, bool gso, uint8_t mac[6],
	       struct dr_port_err *err)
{
	const char *ifn = spec + strlen("packet:");
	char name[RTE_ETH_NAME_MAX_LEN], msg[256];
	struct dr_pk *k;
	int ret;

	if (!*ifn || strlen(ifn) >= IF_NAMESIZE || strchr(ifn, ','))
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_DEVICE,
				    "'%s': expected packet:IFNAME, a kernel interface", spec);
	k = calloc(1, sizeof(*k));
	if (!k)
		return dr_port_fail(err, -ENOMEM, DR_PORT_PARAM_NONE, "out of memory");
	k->fd = -1;
	k->gso = gso;
	k->filter = p->rx_filter;
	snprintf(k->ifname, sizeof(k->ifname), "%s", ifn);
	p->pk = k;
	/* without the field (DPDK refused it) frames carry no time */
	if (rte_mbuf_dyn_rx_timestamp_register(&k->ts_off, &k->ts_flag) < 0)
		k->ts_flag = 0;
	/* without them super-frames are read into their pieces and each
	 * piece's ICRC is checked by the parser */
	k->rstage = malloc(PK_RSTAGE);
	/* staging buffers for super-frames read whole (stage_idle skips one
	 * that could not be allocated; with none, rstage and cut_fill) */
	for (unsigned i = 0; i < PK_STAGES; i++) {
		k->stage[i].buf = aligned_alloc(64, PK_STAGE_LEN);
		k->stage[i].sh.free_cb = stage_free;
		k->stage[i].sh.fcb_opaque = &k->stage[i];
	}
	ret = rte_mbuf_dynflag_register(&(const struct rte_mbuf_dynflag){.name = "droce_icrc_ok"});
	k->icrc_flag = ret >= 0 ? 1ull << ret : 0;
	ret = pk_socket(p, k, err);
	if (ret < 0)
		return ret;
	ret = pk_if_info(p, k, mac, err);
	if (ret < 0)
		return ret;
	for (unsigned i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "drpk%u_%u", p->serial, i);
		k->idle[i] =
		    rte_ring_create(name, 32, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!k->idle[i])
			return dr_port_fail(err, -ENOMEM, DR_PORT_PARAM_NONE,
					    "packet:%s: no ring: %s", k->ifname,
					    rte_strerror(rte_errno));
	}
	snprintf(name, sizeof(name), "drpk%u", p->serial);
	dr_port_dpdk_err_clear();
	ret = rte_eth_from_rings(name, &k->idle[0], 1, &k->idle[1], 1, SOCKET_ID_ANY);
	if (ret < 0)
		return dr_port_fail(err, -ENODEV, DR_PORT_PARAM_DEVICE,
				    "packet:%s: cannot create its net_ring port: %s", k->ifname,
				    *dr_port_dpdk_err(msg, sizeof(msg)) ? msg
									: rte_strerror(rte_errno));
	p->port_id = ret;
	return 0;
}

void dr_pk_free(struct dr_port *p)
{
	struct dr_pk *k = pk_of(p);

	if (!k)
		return;
	pk_ring_drops(p, k);
	dr_port_log(
	    DR_PORT_LOG_INFO,
	    "packet:%s: UDP GSO: %" PRIu64 " super-frames sent carrying %" PRIu64
	    " packets, %" PRIu64 " received carrying %" PRIu64 " (%s); %" PRIu64
	    " refused (rx_gso_bad); %" PRIu64 " copied for want of an idle staging buffer; %" PRIu64
	    " frames lost for want of room on the socket's queue, %" PRIu64
	    " for want of a pool buffer, %" PRIu64
	    " dropped by the kernel for want of a free ring slot (rx_ring_drops); %" PRIu64
	    " tagged with a VLAN ID, dropped; %" PRIu64
	    " longer than a ring slot (%u bytes, the kernel's headers included), read "
	    "from the socket's queue (rx_long)",
	    k->ifname, p->stats.tx_gso_frames, p->stats.tx_gso_segs, p->stats.rx_gso_frames,
	    p->stats.rx_gso_segs, k->gso ? "sending them" : "not sending them", p->stats.rx_gso_bad,
	    p->stats.rx_gso_copied, p->stats.rx_truncated, p->stats.rx_nombuf,
	    p->stats.rx_ring_drops, p->stats.rx_vlan, p->stats.rx_long, k->frame_size);
	pk_socket_close(k);
	for (unsigned i = 0; i < 2; i++)
		rte_ring_free(k->idle[i]);
	while (k->cut_next < k->cut_len)
		rte_pktmbuf_free(k->cut[k->cut_next++]);
	free(k->peers);
	free(k->qpns);
	free(k->rstage);
	for (unsigned i = 0; i < PK_STAGES; i++)
		free(k->stage[i].buf);
	free(k);
	p->pk = NULL;
}

bool dr_pk_takes(const struct dr_port *p)
{
	return p->pk && p->pk->takes;
}

const char *dr_pk_ifname(const struct dr_port *p)
{
	return p->pk ? p->pk->ifname : NULL;
}

int dr_pk_reopen(struct dr_port *p)
{
	struct dr_pk *k = pk_of(p);
	int ret;

	pk_ring_drops(p, k);
	pk_socket_close(k);
	/* pieces of a super-frame from before the fault: not handed out */
	while (k->cut_next < k->cut_len)
		rte_pktmbuf_free(k->cut[k->cut_next++]);
	ret = pk_socket(p, k, NULL);
	if (ret < 0)
		pk_socket_close(k);
	return ret;
}

/* ---- peers that take super-frames ---------------------------------------------- */

static uint64_t peer_key(uint32_t ip4, uint32_t qpn)
{
	return ((uint64_t)ip4 << 24 | (qpn & 0xffffff)) + 1;
}

int dr_port_gso_peer(struct dr_port *p, uint32_t ip4, uint32_t qpn, bool on)
{
	struct dr_pk *k = pk_of(p);
	uint64_t key = peer_key(ip4, qpn);
	uint64_t *n;
	unsigned i;

	if (!k || !k->gso)
		return on ? -ENOTSUP : 0;
	k->last_key = 0;
	for (i = 0; i < k->npeers && k->peers[i] != key; i++)
		;
	if (!on) {
		if (i < k->npeers)
			k->peers[i] = k->peers[--k->npeers];
		return 0;
	}
	if (i < k->npeers)
		return 0;
	n = pk_grow(k->peers, &k->cap_peers, k->npeers, sizeof(*n));
	if (!n)
		return -ENOMEM;
	k->peers = n;
	k->peers[k->npeers++] = key;
	return 0;
}

unsigned dr_port_gso_run(const struct dr_port *p, uint32_t pmtu)
{
	const struct dr_pk *k = pk_of(p);
	unsigned run;

	if (!k || !k->gso || !pmtu)
		return 0;
	run = (65535u - 28u) / (pmtu + sizeof(struct dr_bth) + 4u);
	return run < PK_MAX_SEGS ? run : PK_MAX_SEGS;
}

static bool peer_takes(struct dr_pk *k, uint32_t ip4, uint32_t qpn)
{
	uint64_t key = peer_key(ip4, qpn);
	unsigned i;

	if (key == k->last_key)
		return k->last_ok;
	for (i = 0; i < k->npeers && k->peers[i] != key; i++)
		;
	k->last_key = key;
	k->last_ok = i < k->npeers;
	return k->last_ok;
}

/* ---- receive ------------------------------------------------------------------- */

static struct tpacket2_hdr *slot(struct dr_pk *k, unsigned i)
{
	return (struct tpacket2_hdr *)(k->ring + (size_t)i * k->frame_size);
}

/* m was received at ns (the kernel's time, its slot's). */
static void stamp(const struct dr_pk *k, struct rte_mbuf *m, uint64_t ns)
{
	if (!k->ts_flag)
		return;
	*RTE_MBUF_DYNFIELD(m, k->ts_off, rte_mbuf_timestamp_t *) = ns;
	m->ol_flags |= k->ts_flag;
}

uint64_t dr_pk_rx_time(const struct dr_port *p, const struct rte_mbuf *m)
{
	const struct dr_pk *k = pk_of(p);

	if (!k || !k->ts_flag || !(m->ol_flags & k->ts_flag))
		return 0;
	return *RTE_MBUF_DYNFIELD(m, k->ts_off, const rte_mbuf_timestamp_t *);
}

bool dr_pk_icrc_ok(const struct dr_port *p, const struct rte_mbuf *m)
{
	const struct dr_pk *k = pk_of(p);

	return k && (m->ol_flags & k->icrc_flag);
}

static void slot_release(struct dr_pk *k, struct tpacket2_hdr *h)
{
	__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	k->rx_next = (k->rx_next + 1) % k->nframes;
}

/* A pool buffer for len bytes of a received frame; NULL (counted: the
 * frame is lost) when the pool is empty. */
static struct rte_mbuf *rx_alloc(struct dr_port *p, size_t len, void **data)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);

	if (m && (*data = rte_pktmbuf_append(m, (uint16_t)len)) != NULL)
		return m;
	rte_pktmbuf_free(m);
	return NULL;
}

/* A frame of len bytes from a slot, copied into a pool buffer. */
static struct rte_mbuf *copy_in(struct dr_port *p, const uint8_t *frame, size_t len)
{
	struct rte_mbuf *m;
	void *d;

	if (len > p->buf_size) {
		pk_lost(p, &p->stats.rx_too_long);
		return NULL;
	}
	m = rx_alloc(p, len, &d);
	if (m)
		memcpy(d, frame, len);
	else
		pk_lost(p, &p->stats.rx_nombuf);
	return m;
}

/* Whether a super-frame of len bytes, vnet header vh, headers hdr (at
 * least PK_HDRS of them), is one droce cuts: UDP GSO over IPv4 without
 * options, a gso_size no smaller than a BTH and an ICRC (a hostile one
 * would cut thousands of pieces) and that fits a pool buffer, at most
 * PK_CUT_MAX pieces.  Else counted (a TCP segment, a VLAN: not one droce
 * sends) and false. */
static bool cut_ok(struct dr_port *p, const struct virtio_net_hdr *vh, const uint8_t *hdr,
		   size_t len)
{
	const uint8_t *ip = hdr + sizeof(struct dr_eth_hdr);

	if (vh->gso_type != VIRTIO_NET_HDR_GSO_UDP_L4 || vh->gso_size < sizeof(struct dr_bth) + 4 ||
	    PK_HDRS + vh->gso_size > p->buf_size || len <= PK_HDRS ||
	    (len - PK_HDRS + vh->gso_size - 1) / vh->gso_size > PK_CUT_MAX ||
	    get16(hdr + 12) != DR_ETH_P_IPV4 || ip[0] != 0x45 || ip[9] != DR_IPPROTO_UDP) {
		pk_lost(p, &p->stats.rx_gso_bad);
		return false;
	}
	return true;
}

/* Pool buffers for the pieces of a super-frame of len bytes cut at size
 * (cut_ok): each with room for the headers and its share of the payload,
 * in k->cut.  Returns how many, 0 if the pool ran out. */
static unsigned cut_alloc(struct dr_port *p, struct dr_pk *k, size_t len, unsigned size)
{
	size_t pay = len - PK_HDRS;
	unsigned n = (unsigned)((pay + size - 1) / size), i;
	void *d;

	for (i = 0; i < n; i++) {
		size_t seg = i + 1 < n ? size : pay - (size_t)i * size;

		k->cut[i] = rx_alloc(p, PK_HDRS + seg, &d);
		if (!k->cut[i]) {
			while (i--)
				rte_pktmbuf_free(k->cut[i]);
			pk_lost(p, &p->stats.rx_nombuf);
			return 0;
		}
	}
	return n;
}

/* The n pieces in k->cut hold their payloads after PK_HDRS: the
 * super-frame's headers hdr go in front of each, with that piece's IP and
 * UDP lengths and IP ID (the first's plus its index), as the kernel cuts
 * it; into the pieces themselves, or with st (stage_alloc) into st->hdr
 * for dr_pk_rx_hdrs to put there.  They are handed out from the next
 * dr_pk_rx on. */
static void cut_finish(struct dr_port *p, struct dr_pk *k, const uint8_t *hdr, unsigned n,
		       struct pk_stage *st)
{
	const uint8_t *hip = hdr + sizeof(struct dr_eth_hdr);
	uint16_t id = get16(hip + 4);
	uint32_t base = 0;

	/* the header's sum but for the words each piece changes (its length,
	 * ID and checksum), once: each piece's checksum is then two adds */
	for (unsigned i = 0; i < 20; i += 2)
		if (i != 2 && i != 4 && i != 10)
			base += get16(hip + i);
	for (unsigned i = 0; i < n; i++) {
		uint8_t *d = st ? st->hdr[i] : rte_pktmbuf_mtod(k->cut[i], uint8_t *);
		uint8_t *ip = d + sizeof(struct dr_eth_hdr);
		size_t seg = k->cut[i]->data_len - PK_HDRS;
		uint32_t sum = base + (uint16_t)(28 + seg) + (uint16_t)(id + i);

		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		memcpy(d, hdr, PK_HDRS);
		put16(ip + 2, (uint16_t)(28 + seg));
		put16(ip + 4, (uint16_t)(id + i));
		put16(ip + 10, (uint16_t)~sum);
		put16(ip + 24, (uint16_t)(8 + seg)); /* UDP length */
		put16(ip + 26, 0);		     /* no UDP checksum: the ICRC covers it */
	}
	k->cut_next = 0;
	k->cut_len = n;
	p->stats.rx_gso_frames++;
	p->stats.rx_gso_segs += n;
}

/* A super-frame small enough for its slot (READ requests): cut from there. */
static void cut_slot(struct dr_port *p, struct dr_pk *k, const struct virtio_net_hdr *vh,
		     const uint8_t *fr, size_t len)
{
	size_t off = PK_HDRS;
	unsigned n;

	if (!cut_ok(p, vh, fr, len))
		return;
	n = cut_alloc(p, k, len, vh->gso_size);
	for (unsigned i = 0; i < n; i++) {
		size_t seg = k->cut[i]->data_len - PK_HDRS;

		memcpy(rte_pktmbuf_mtod_offset(k->cut[i], uint8_t *, PK_HDRS), fr + off, seg);
		off += seg;
	}
	if (n)
		cut_finish(p, k, fr, n, NULL);
}

/* Whether the cut checks the ICRC of a piece of seg bytes from its BTH b:
 * not a packet the parser defers to the pass that places its payload
 * (dr_icrc_placeable, DR_PARSE_DEFER_PLACE), nor one too short for the
 * one-pass check; those are left to the parser. */
static bool cut_checks(const uint8_t *b, size_t seg)
{
	return seg >= sizeof(struct dr_bth) + DR_ICRC_LEN + DR_ICRC_DEFER_MIN &&
	       !dr_icrc_placeable(b[0]);
}

/* The pieces in k->cut (cut_finish) take their packets from src, the
 * super-frame's UDP payload read whole: one copy by the kernel into one
 * buffer, where it copied into each piece's buffer at a third of the
 * speed (bench/PROFILE.md section 7, "Stop 31").  Each packet's ICRC is
 * checked as it is copied, read once, and a piece whose ICRC holds is
 * flagged so that the parser does not check it again (dr_pk_icrc_ok); the
 * others (cut_checks) are copied alone. */
static void cut_fill(struct dr_pk *k, const uint8_t *src)
{
	const size_t bth = sizeof(struct dr_bth);

	for (unsigned i = 0; i < k->cut_len; i++) {
		struct rte_mbuf *m = k->cut[i];
		uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
		size_t seg = m->data_len - PK_HDRS;
		uint32_t icrc;

		if (k->icrc_flag && cut_checks(src, seg)) {
			memcpy(d + PK_HDRS, src, bth);
			if (dr_icrc_frame_copy(d + sizeof(struct dr_eth_hdr),
					       PK_HDRS - sizeof(struct dr_eth_hdr) + bth, src + bth,
					       seg - bth - DR_ICRC_LEN, NULL, 0, d + PK_HDRS + bth,
					       &icrc))
				/* headers it refuses (never after cut_ok): copied
				 * unchecked, for the parser to judge */
				memcpy(d + PK_HDRS + bth, src + bth, seg - bth - DR_ICRC_LEN);
			else if (icrc == dr_icrc_get(src + seg - DR_ICRC_LEN))
				m->ol_flags |= k->icrc_flag;
			memcpy(d + PK_HDRS + seg - DR_ICRC_LEN, src + seg - DR_ICRC_LEN,
			       DR_ICRC_LEN);
		} else {
			memcpy(d + PK_HDRS, src, seg);
		}
		src += seg;
	}
}

/* Pool mbufs for the pieces of a super-frame of len bytes cut at size
 * (cut_ok), read whole into stage st, in k->cut: piece i's packet is at
 * st->buf + PK_HDRS + i * size, its mbuf starts PK_HDRS bytes before it
 * (the super-frame's headers for the first, the end of piece i - 1 for
 * the others: dr_pk_rx_hdrs); st is busy until they are all freed.
 * Returns how many, 0 (st left idle) if the frame would not fit or the
 * pool ran out. */
static unsigned stage_alloc(struct dr_port *p, struct dr_pk *k, struct pk_stage *st, size_t len,
			    unsigned size)
{
	size_t pay = len - PK_HDRS;
	unsigned n = (unsigned)((pay + size - 1) / size);

	if (len > PK_STAGE_LEN || rte_pktmbuf_alloc_bulk(p->pool, k->cut, n))
		return 0;
	st->busy = true;
	rte_mbuf_ext_refcnt_set(&st->sh, (uint16_t)n);
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = k->cut[i];
		size_t seg = i + 1 < n ? size : pay - (size_t)i * size;

		rte_pktmbuf_attach_extbuf(m, st->buf + (size_t)i * size, RTE_BAD_IOVA,
					  (uint16_t)(PK_HDRS + seg), &st->sh);
		m->hash.usr = i; /* its headers' index (no RSS here) */
		m->data_len = (uint16_t)(PK_HDRS + seg);
		m->pkt_len = m->data_len;
	}
	return n;
}

void dr_pk_rx_hdrs(struct rte_mbuf *m)
{
	const struct pk_stage *st;

	if (!RTE_MBUF_HAS_EXTBUF(m) || m->shinfo->free_cb != stage_free)
		return;
	st = m->shinfo->fcb_opaque;
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), st->hdr[m->hash.usr], PK_HDRS);
}

/* The pieces in k->cut (cut_finish), read into stage st: each packet's
 * ICRC checked where it lies, against the headers it will get (st->hdr:
 * the bytes in front of it are the piece before's until then), as
 * cut_fill checks it while it copies, and flagged for the parser
 * (dr_pk_icrc_ok); the others (cut_checks) are left to the parser, as
 * there. */
static void cut_check(struct dr_pk *k, const struct pk_stage *st)
{
	const size_t bth = sizeof(struct dr_bth), eth = sizeof(struct dr_eth_hdr);
	uint8_t h[PK_HDRS - sizeof(struct dr_eth_hdr) + sizeof(struct dr_bth)];

	for (unsigned i = 0; k->icrc_flag && i < k->cut_len; i++) {
		struct rte_mbuf *m = k->cut[i];
		const uint8_t *b = rte_pktmbuf_mtod_offset(m, const uint8_t *, PK_HDRS);
		size_t seg = m->data_len - PK_HDRS;
		uint32_t icrc;

		if (!cut_checks(b, seg))
			continue;
		/* the IP and UDP headers, then the BTH: one block, as the
		 * ICRC's first pass wants them */
		memcpy(h, st->hdr[i] + eth, PK_HDRS - eth);
		memcpy(h + PK_HDRS - eth, b, bth);
		if (!dr_icrc_frame(h, sizeof(h), b + bth, seg - bth - DR_ICRC_LEN, NULL, 0,
				   &icrc) &&
		    icrc == dr_icrc_get(b + seg - DR_ICRC_LEN))
			m->ol_flags |= k->icrc_flag;
	}
}

/* The frame whose slot said TP_STATUS_COPY, read from the socket's queue
 * (in ring order): vh, hdr and len are the slot's vnet header, the first
 * PK_HDRS bytes it holds and the frame's length.  A super-frame is read
 * whole into an idle stage, its pieces handed out in place (stage_alloc,
 * cut_check, dr_pk_rx_hdrs); with no stage idle, into k->rstage and cut
 * from there into one pool buffer a piece (cut_fill; without k->rstage,
 * scattered straight into them by recvmsg); a frame merely too long for a
 * slot into one pool buffer.  What droce would not take is
 * read to nothing (counted).  Returns the frame, or NULL with the pieces
 * in k->cut. */
static struct rte_mbuf *take_copy(struct dr_port *p, struct dr_pk *k,
				  const struct virtio_net_hdr *vh, const uint8_t *hdr, size_t len)
{
	struct virtio_net_hdr got;
	uint8_t head[PK_HDRS];
	struct iovec iov[PK_CUT_MAX + 2] = {{&got, sizeof(got)}};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 1};
	struct rte_mbuf *m = NULL;
	struct pk_stage *st = NULL;
	unsigned n = 0, i;
	ssize_t r;
	void *d;

	if (vh->gso_type == VIRTIO_NET_HDR_GSO_NONE) {
		p->stats.rx_long++;
		if (len > p->buf_size)
			pk_lost(p, &p->stats.rx_too_long);
		else if ((m = rx_alloc(p, len, &d)) != NULL)
			iov[mh.msg_iovlen++] = (struct iovec){d, len};
		else
			pk_lost(p, &p->stats.rx_nombuf);
	} else if (cut_ok(p, vh, hdr, len)) {
		st = stage_idle(k);
		if (st && (n = stage_alloc(p, k, st, len, vh->gso_size)) == 0)
			st = NULL;
		if (!st && (n = cut_alloc(p, k, len, vh->gso_size)) != 0)
			p->stats.rx_gso_copied++;
	}
	if (n && st) {
		iov[mh.msg_iovlen++] = (struct iovec){st->buf, len};
	} else if (n) {
		iov[mh.msg_iovlen++] = (struct iovec){head, PK_HDRS};
		if (k->rstage && len - PK_HDRS <= PK_RSTAGE)
			iov[mh.msg_iovlen++] = (struct iovec){k->rstage, len - PK_HDRS};
		else
			for (i = 0; i < n; i++)
				iov[mh.msg_iovlen++] = (struct iovec){
				    rte_pktmbuf_mtod_offset(k->cut[i], uint8_t *, PK_HDRS),
				    k->cut[i]->data_len - PK_HDRS};
	}
	/* with nothing to read into, the frame leaves the queue all the same */
	r = recvmsg(k->fd, &mh, MSG_DONTWAIT);
	if (mh.msg_iovlen == 1)
		return NULL;
	if (r != (ssize_t)(sizeof(got) + len) || (mh.msg_flags & MSG_TRUNC) ||
	    got.gso_type != vh->gso_type || got.gso_size != vh->gso_size) {
		/* not the frame its slot announced: never seen, but nothing
		 * half-read goes on (the last piece freed frees the stage) */
		pk_lost(p, &p->stats.rx_truncated);
		rte_pktmbuf_free(m);
		for (i = 0; i < n; i++)
			rte_pktmbuf_free(k->cut[i]);
		return NULL;
	}
	if (n && st) {
		cut_finish(p, k, st->buf, n, st);
		cut_check(k, st);
	} else if (n) {
		cut_finish(p, k, head, n, NULL);
		if (iov[2].iov_base == k->rstage)
			cut_fill(k, k->rstage);
	}
	return m;
}

/* The frame a TP_STATUS_COPY slot announced, taken off the socket's queue
 * unread: with nothing to read into, recvmsg() drops it all the same. */
static void queue_skip(struct dr_pk *k)
{
	struct virtio_net_hdr got;
	struct iovec iov = {&got, sizeof(got)};

	recvmsg(k->fd, &(struct msghdr){.msg_iov = &iov, .msg_iovlen = 1}, MSG_DONTWAIT);
}

/* Whether a slot's frame came with an 802.1Q/802.1ad tag naming a VLAN:
 * the kernel takes the tag off before the packet taps, so the frame looks
 * untagged, but it belongs to another network than the interface's own
 * (a VLAN interface's).  Priority-tagged frames (VLAN ID 0, as RoCE
 * networks mark traffic classes for PFC) are the interface's. */
static bool slot_vlan(const struct tpacket2_hdr *h, uint32_t st)
{
	return (st & TP_STATUS_VLAN_VALID) && (h->tp_vlan_tci & 0x0fff);
}

uint16_t dr_pk_rx(struct dr_port *p, struct rte_mbuf **pkts, uint16_t n)
{
	struct dr_pk *k = pk_of(p);
	uint16_t out = 0;

	if (k->fd < 0)
		return 0;
	while (out < n) {
		struct tpacket2_hdr *h;
		struct rte_mbuf *m = NULL;
		struct virtio_net_hdr vh;
		const uint8_t *fr;
		uint32_t st;
		uint64_t ns;

		if (k->cut_next < k->cut_len) {
			pkts[out++] = k->cut[k->cut_next++];
			continue;
		}
		h = slot(k, k->rx_next);
		st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
		if (!(st & TP_STATUS_USER))
			break;
		if (st & TP_STATUS_LOSING)
			pk_ring_drops(p, k);
		ns = (uint64_t)h->tp_sec * 1000000000u + h->tp_nsec;
		fr = (uint8_t *)h + h->tp_mac;
		memcpy(&vh, fr - sizeof(vh), sizeof(vh));
		if (slot_vlan(h, st)) {
			pk_lost(p, &p->stats.rx_vlan);
			slot_release(k, h);
			if (st & TP_STATUS_COPY)
				queue_skip(k);
		} else if (st & TP_STATUS_COPY) {
			uint8_t hdr[PK_HDRS] = {0};
			size_t len = h->tp_len;

			/* every stage holds pieces of this burst: they are
			 * freed once it is processed, and the super-frame
			 * waits for the next one rather than be copied */
			if (out && vh.gso_type != VIRTIO_NET_HDR_GSO_NONE && !stage_idle(k))
				break;

			memcpy(hdr, fr, h->tp_snaplen < PK_HDRS ? h->tp_snaplen : PK_HDRS);
			slot_release(k, h);
			m = take_copy(p, k, &vh, hdr, len);
		} else if (h->tp_snaplen < h->tp_len) {
			/* too long, and no room on the socket's queue */
			pk_lost(p, &p->stats.rx_truncated);
			slot_release(k, h);
		} else {
			/* a super-frame small enough for a slot is cut all the same */
			if (vh.gso_type == VIRTIO_NET_HDR_GSO_NONE)
				m = copy_in(p, fr, h->tp_snaplen);
			else
				cut_slot(p, k, &vh, fr, h->tp_snaplen);
			slot_release(k, h);
		}
		if (m) {
			stamp(k, m, ns);
			pkts[out++] = m;
		}
		for (unsigned i = k->cut_next; i < k->cut_len; i++)
			stamp(k, k->cut[i], ns);
	}
	return out;
}

/* ---- transmit ------------------------------------------------------------------ */

/* Bytes of m's frame from off on, as iovecs (m's segments); -1 if more
 * than room. */
static int gather(const struct rte_mbuf *m, size_t off, struct iovec *iov, int room)
{
	int n = 0;

	for (; m; m = m->next) {
		if (off >= m->data_len) {
			off -= m->data_len;
			continue;
		}
		if (n == room)
			return -1;
		iov[n].iov_base = rte_pktmbuf_mtod_offset(m, uint8_t *, off);
		iov[n].iov_len = m->data_len - off;
		n++;
		off = 0;
	}
	return n;
}

/* m's UDP payload length if it may lead or join a super-frame (an IPv4
 * RoCE frame whose first segment holds its headers, no IP options, not a
 * fragment, no Ethernet padding; an RC request or READ response: not an
 * ACK, an atomic ACK or a CNP, which stay frames of their own in a
 * capture, nor a MAD), else 0. */
static size_t gso_len(const struct rte_mbuf *m)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *), *ip = d + 14;
	uint8_t op;

	if (m->data_len < PK_HDRS + sizeof(struct dr_bth) || get16(d + 12) != DR_ETH_P_IPV4 ||
	    ip[0] != 0x45 || ip[9] != DR_IPPROTO_UDP || (get16(ip + 6) & 0x3fff) ||
	    get16(ip + 22) != DR_ROCE_UDP_PORT || m->pkt_len != 14u + get16(ip + 2))
		return 0;
	op = d[PK_HDRS];
	if ((op & 0xe0) != 0 /* not RC */ || op == DR_OP_ACK || op == DR_OP_ATOMIC_ACK)
		return 0;
	return m->pkt_len - PK_HDRS;
}

/* Whether b may follow a (k frames after it) in a's super-frame: the same
 * headers but for the lengths, the checksums and the IP ID, which is a's
 * plus k. */
static bool gso_follows(const struct rte_mbuf *a, const struct rte_mbuf *b, unsigned k)
{
	const uint8_t *x = rte_pktmbuf_mtod(a, const uint8_t *);
	const uint8_t *y = rte_pktmbuf_mtod(b, const uint8_t *);

	return !memcmp(x, y, 16) && !memcmp(x + 20, y + 20, 4) && !memcmp(x + 26, y + 26, 12) &&
	       !memcmp(x + PK_HDRS + 5, y + PK_HDRS + 5, 3) && /* BTH: destination QP */
	       get16(y + 18) == (uint16_t)(get16(x + 18) + k);
}

struct pk_msg {
	struct virtio_net_hdr vh;
	uint8_t hdr[PK_HDRS];
};

uint16_t dr_pk_tx(struct dr_port *p, struct rte_mbuf **q, uint16_t n, uint16_t *refused)
{
	struct dr_pk *k = pk_of(p);
	struct mmsghdr mm[DR_PORT_TXQ];
	struct pk_msg msg[DR_PORT_TXQ];
	struct iovec iov[PK_IOV];
	uint16_t frames[DR_PORT_TXQ]; /* frames in each message */
	unsigned nm = 0, ni = 0, i = 0, done = 0, f;
	int r;

	*refused = 0;
	if (k->fd < 0) {
		errno = ENODEV;
		return 0;
	}
	while (i < n && nm < DR_PORT_TXQ) {
		struct mmsghdr *h = &mm[nm];
		struct pk_msg *g = &msg[nm];
		size_t len = k->gso && k->npeers ? gso_len(q[i]) : 0, total;

		unsigned cnt = 1, first = ni;
		int got;

		memset(&g->vh, 0, sizeof(g->vh));
		if (len) {
			const uint8_t *d = rte_pktmbuf_mtod(q[i], const uint8_t *);

			if (!peer_takes(k, (uint32_t)get16(d + 30) << 16 | get16(d + 32),
					(uint32_t)d[PK_HDRS + 5] << 16 | get16(d + PK_HDRS + 6)))
				len = 0;
		}
		total = len;
		/* how many frames join q[i]: equal UDP payloads, the last may
		 * be shorter, all of it one IP packet */
		if (len && len + 28 <= dr_port_mtu_now(p))
			while (i + cnt < n && cnt < PK_MAX_SEGS &&
			       gso_follows(q[i], q[i + cnt], cnt)) {
				size_t l = gso_len(q[i + cnt]);

				if (!l || l > len || 28 + total + l > 65535)
					break;
				total += l;
				cnt++;
				if (l < len)
					break;
			}
		if (ni + 2 > PK_IOV)
			break;
		iov[ni++] = (struct iovec){&g->vh, sizeof(g->vh)};
		if (cnt == 1) {
			got = gather(q[i], 0, iov + ni, PK_IOV - ni);
			if (got < 0) {
				ni = first;
				break;
			}
			ni += got;
		} else {
			uint8_t *ip = g->hdr + 14;
			uint32_t s;

			memcpy(g->hdr, rte_pktmbuf_mtod(q[i], void *), PK_HDRS);
			put16(ip + 2, (uint16_t)(28 + total));
			put16(ip + 10, ip_sum(ip));
			put16(ip + 24, (uint16_t)(8 + total));
			/* CHECKSUM_PARTIAL: the pseudo header's sum, not inverted;
			 * wherever the frame is cut each piece's is finished */
			s = get16(ip + 12) + get16(ip + 14) + get16(ip + 16) + get16(ip + 18) +
			    DR_IPPROTO_UDP + 8 + total;
			while (s >> 16)
				s = (s & 0xffff) + (s >> 16);
			put16(ip + 26, (uint16_t)s);
			g->vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
			g->vh.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
			g->vh.gso_size = (uint16_t)len;
			g->vh.hdr_len = PK_HDRS;
			g->vh.csum_start = 34;
			g->vh.csum_offset = 6;
			iov[ni++] = (struct iovec){g->hdr, PK_HDRS};
			for (f = 0; f < cnt; f++) {
				got = gather(q[i + f], PK_HDRS, iov + ni, PK_IOV - ni);
				if (got < 0)
					break;
				ni += got;
			}
			if (f < cnt) {
				ni = first;
				break;
			}
		}
		memset(h, 0, sizeof(*h));
		h->msg_hdr.msg_iov = iov + first;
		h->msg_hdr.msg_iovlen = ni - first;
		frames[nm++] = cnt;
		i += cnt;
	}
	r = sendmmsg(k->fd, mm, nm, MSG_DONTWAIT);
	if (r < 0) {
		int e = errno;

		/* a kernel before 6.2 takes no UDP GSO from a packet socket:
		 * one frame per packet from now on */
		if (e == EINVAL && frames[0] > 1) {
			k->gso = false;
			dr_port_log(DR_PORT_LOG_WARN,
				    "packet:%s: the kernel refuses UDP GSO super-frames (%s): "
				    "sending one frame per packet",
				    k->ifname, strerror(e));
			errno = 0;
			return 0;
		}
		/* a frame the kernel will never take (EMSGSIZE, EINVAL): dropped,
		 * or it would block every later one */
		if (e == EMSGSIZE || e == EINVAL) {
			uint32_t len = q[0]->pkt_len;

			for (f = 0; f < frames[0]; f++)
				rte_pktmbuf_free(q[f]);
			p->stats.tx_dropped += frames[0];
			p->stats.tx_refused += frames[0];
			/* the 1st, 2nd, 4th, 8th...: a connection whose path MTU
			 * no longer fits resends until its retries run out */
			if (dr_port_pow2_passed(p->stats.tx_refused - frames[0],
						p->stats.tx_refused))
				dr_port_log(DR_PORT_LOG_WARN,
					    "packet:%s: the kernel refused a frame of %" PRIu32
					    " bytes: %s (%" PRIu64 " refused so far; the "
					    "interface's MTU is %d)",
					    k->ifname, len, strerror(e), p->stats.tx_refused,
					    dr_port_if_mtu(k->fd, k->ifname));
			/* the MTU may have fallen since the link watch's last
			 * look: the next flush looks (and drops longer frames
			 * before they reach the kernel) */
			p->link_next = 0;
			errno = 0;
			*refused = frames[0];
			return frames[0];
		}
		/* a full socket buffer is no link fault: the rest waits */
		errno = e == EAGAIN || e == EWOULDBLOCK || e == EINTR ? 0 : e;
		return 0;
	}
	for (int j = 0; j < r; j++) {
		if (frames[j] > 1) {
			p->stats.tx_gso_frames++;
			p->stats.tx_gso_segs += frames[j];
		}
		done += frames[j];
	}
	for (f = 0; f < done; f++)
		rte_pktmbuf_free(q[f]);
	errno = 0; /* a message's error after the first is lost (sendmmsg) */
	return done;
}
