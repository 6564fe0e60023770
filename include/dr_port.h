/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dr_port.h - the edge of the wire: the ARP codec and the DPDK port.
 *
 * Two parts with one header:
 *  - the ARP codec (src/roce/arp.c): pure functions on byte buffers, like
 *    the RoCE codec in dr_roce.h (no DPDK, no libfabric, no allocation);
 *  - the port (src/roce/port*.c): the only code in droce that calls DPDK.
 *    One port is one ethdev with one IPv4 address: EAL start-up, mempools,
 *    rx/tx bursts, the ARP neighbour table, timers and frame capture.
 *    Nothing here needs DPDK headers or flags: the types are opaque.
 *
 * Errors: functions return 0 (or a count) or a negative errno.  Set-up
 * functions also fill a struct dr_port_err naming the input to fix, so the
 * provider can turn it into an FI_WARN naming the FI_DROCE_* parameter.
 *
 * Concurrency: a struct dr_port is not thread-safe; its owner serialises
 * every call on it (the domain lock).  Opening and closing ports, and the
 * EAL start-up, are serialised internally and may be called from any thread.
 * Callbacks run inside the call that triggers them (dr_port_poll, or a send),
 * on the caller's thread, except the zero-copy "done" callback (see
 * dr_port_send_zc) and the log callback, which may run on any thread.
 */
#ifndef DR_PORT_H
#define DR_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dr_roce.h"

/* ---- ARP codec (RFC 826, Ethernet/IPv4 only) ---------------------------- */

#define DR_ARP_HTYPE_ETHER 1
#define DR_ARP_OP_REQUEST  1
#define DR_ARP_OP_REPLY	   2
#define DR_ETH_ZLEN	   60 /* shortest Ethernet frame, without the FCS */
/* An ARP frame's meaningful bytes: Ethernet header + ARP body (42). */
#define DR_ARP_LEN (sizeof(struct dr_eth_hdr) + sizeof(struct dr_arp_hdr))

/* One ARP message, addresses in host order.  The Ethernet addresses are
 * those of the frame that carries it. */
struct dr_arp_msg {
	uint8_t eth_dst[6];
	uint8_t eth_src[6];
	uint16_t op; /* DR_ARP_OP_REQUEST or DR_ARP_OP_REPLY */
	uint8_t sha[6];
	uint32_t spa;
	uint8_t tha[6];
	uint32_t tpa;
};

/* Fill m with a broadcast request from mac/ip for target (tha zero).  With
 * target == ip this is an announcement (gratuitous ARP, RFC 5227 2.3). */
void dr_arp_request(struct dr_arp_msg *m, const uint8_t mac[6], uint32_t ip, uint32_t target);

/* Fill m with the reply that the owner of mac gives to request req:
 * unicast to the requester, spa = req->tpa, tha/tpa = the requester. */
void dr_arp_reply(struct dr_arp_msg *m, const struct dr_arp_msg *req, const uint8_t mac[6]);

/* Write m as a frame: Ethernet header and ARP body, zero-padded to
 * DR_ETH_ZLEN.  Returns DR_ETH_ZLEN, or -ENOSPC if cap is smaller, or
 * -EINVAL if m->op is neither request nor reply. */
int dr_arp_build(const struct dr_arp_msg *m, void *buf, size_t cap);

/* Why an ARP frame was refused: the first fault found, in wire order. */
enum dr_arp_verdict {
	DR_ARP_OK,
	DR_ARP_SHORT,	  /* shorter than Ethernet header + 28-byte body */
	DR_ARP_NOT_ARP,	  /* ethertype is not 0x0806 (VLAN tags included) */
	DR_ARP_BAD_HTYPE, /* hardware type is not 1 (Ethernet) */
	DR_ARP_BAD_PTYPE, /* protocol type is not 0x0800 (IPv4) */
	DR_ARP_BAD_HLEN,  /* hardware address length is not 6 */
	DR_ARP_BAD_PLEN,  /* protocol address length is not 4 */
	DR_ARP_BAD_OPER,  /* operation is neither request (1) nor reply (2) */
	DR_ARP_BAD_SHA,	  /* sender MAC is zero, multicast or broadcast */
	DR_ARP_VERDICT_NUM
};

const char *dr_arp_verdict_str(enum dr_arp_verdict v);

/* Validate one frame and, on DR_ARP_OK, fill *m.  Bytes past the 42 that
 * matter (Ethernet padding) are ignored.  Never reads outside frame[0..len). */
enum dr_arp_verdict dr_arp_parse(const void *frame, size_t len, struct dr_arp_msg *m);

/* ---- Neighbour discovery codec (RFC 4861, Ethernet/IPv6 only) ----------- */

#define DR_IPPROTO_ICMPV6  58
#define DR_ICMP6_NS	   135 /* neighbour solicitation */
#define DR_ICMP6_NA	   136 /* neighbour advertisement */
#define DR_ND_OPT_SLLA	   1   /* source link-layer address option */
#define DR_ND_OPT_TLLA	   2   /* target link-layer address option */
#define DR_ND_NA_ROUTER	   0x80000000u
#define DR_ND_NA_SOLICITED 0x40000000u
#define DR_ND_NA_OVERRIDE  0x20000000u
#define DR_ND_HOP_LIMIT	   255 /* every ND message; anything less came from off-link */
/* An NS or NA with one link-layer address option: Ethernet 14 + IPv6 40 +
 * ICMPv6 24 + option 8; one without the option is 8 bytes shorter. */
#define DR_ND_LEN 86

/* One NS or NA, as carried by one frame. */
struct dr_nd_msg {
	uint8_t eth_dst[6];
	uint8_t eth_src[6];
	uint8_t ip_src[16]; /* :: for a duplicate address detection probe */
	uint8_t ip_dst[16];
	uint8_t type;	   /* DR_ICMP6_NS or DR_ICMP6_NA */
	uint32_t na_flags; /* NA: DR_ND_NA_* (host order); NS: 0 */
	uint8_t target[16];
	bool has_lla; /* source (NS) or target (NA) link-layer option */
	uint8_t lla[6];
};

/* ff02::1:ffXX:XXXX, the solicited-node group of addr (RFC 4291 2.7.1). */
void dr_ipv6_solicited_node(uint8_t group[16], const uint8_t addr[16]);
/* 33:33 and the group's last four bytes (RFC 2464 7). */
void dr_ipv6_mcast_mac(uint8_t mac[6], const uint8_t group[16]);
static inline bool dr_ipv6_is_multicast(const uint8_t a[16])
{
	return a[0] == 0xff;
}
static inline bool dr_ipv6_is_unspecified(const uint8_t a[16])
{
	static const uint8_t zero[16];

	return !memcmp(a, zero, 16);
}
static inline bool dr_ipv6_is_link_local(const uint8_t a[16])
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/* The ICMPv6 checksum (RFC 4443 2.3) of the len-byte message at icmp under
 * ip6's addresses, ready to store (the message's own checksum field is
 * left out of the sum). */
uint16_t dr_icmp6_csum(const struct dr_ipv6_hdr *ip6, const void *icmp, size_t len);

/* Fill m with a solicitation from mac/src for target: to target's
 * solicited-node group and its MAC, or, with ucast_mac, unicast to target
 * at that MAC (a re-probe, RFC 4861 7.3.3); with our source link-layer
 * address. */
void dr_nd_solicit(struct dr_nd_msg *m, const uint8_t mac[6], const uint8_t src[16],
		   const uint8_t target[16], const uint8_t *ucast_mac);

/* Fill m with the advertisement that the owner of mac gives to the
 * solicitation ns for its address (ns->target): Solicited and Override
 * set, our target link-layer address, unicast to the solicitor; to
 * all-nodes (ff02::1), not Solicited, when it came from :: (RFC 4861
 * 7.2.4). */
void dr_nd_advert(struct dr_nd_msg *m, const struct dr_nd_msg *ns, const uint8_t mac[6]);

/* Write m as a frame (hop limit 255, checksum filled).  Returns its length
 * (DR_ND_LEN, 8 less without the option), -ENOSPC if cap is smaller, or
 * -EINVAL if m->type is neither NS nor NA. */
int dr_nd_build(const struct dr_nd_msg *m, void *buf, size_t cap);

/* Why an ND frame was refused: the first fault found, in wire order (the
 * validity checks of RFC 4861 7.1.1 and 7.1.2). */
enum dr_nd_verdict {
	DR_ND_OK,
	DR_ND_NOT_ND,	    /* not Ethernet/IPv6/ICMPv6 NS or NA (VLAN tags included):
			     * no fault, just not ours to parse */
	DR_ND_SHORT,	    /* truncated IPv6 header or ICMPv6 message */
	DR_ND_BAD_IP_LEN,   /* IPv6 payload length past the frame */
	DR_ND_BAD_HOPLIMIT, /* hop limit is not 255: routed from elsewhere */
	DR_ND_BAD_CSUM,	    /* ICMPv6 checksum */
	DR_ND_BAD_CODE,	    /* ICMPv6 code is not 0 */
	DR_ND_BAD_TARGET,   /* target address is multicast */
	DR_ND_BAD_OPTION,   /* an option of length 0 or past the message */
	DR_ND_BAD_SRC,	    /* multicast source, or :: source with a link-layer option
			     * or not to a solicited-node group */
	DR_ND_BAD_FLAGS,    /* Solicited advertisement to a multicast address */
	DR_ND_BAD_LLA,	    /* link-layer address option zero or multicast */
	DR_ND_VERDICT_NUM
};

const char *dr_nd_verdict_str(enum dr_nd_verdict v);

/* Validate one frame and, on DR_ND_OK, fill *m.  Never reads outside
 * frame[0..len); bytes after the IPv6 payload (Ethernet padding) are
 * ignored. */
enum dr_nd_verdict dr_nd_parse(const void *frame, size_t len, struct dr_nd_msg *m);

/* ---- The port: errors and logging -------------------------------------- */

struct dr_port;

/* The input a failure is blamed on: one per FI_DROCE_* parameter. */
enum dr_port_param {
	DR_PORT_PARAM_NONE,	/* not the user's input: resources, internal */
	DR_PORT_PARAM_EAL_ARGS, /* the extra EAL arguments (FI_DROCE_EAL_ARGS) */
	DR_PORT_PARAM_DEVICE,	/* the device spec (FI_DROCE_DEVICE) */
	DR_PORT_PARAM_ADDR,	/* the IP address/prefix (FI_DROCE_ADDR) */
	DR_PORT_PARAM_MTU,	/* the MTU (FI_DROCE_MTU) */
	DR_PORT_PARAM_PCAP,	/* the capture file (FI_DROCE_PCAP) */
};

struct dr_port_err {
	int err;		  /* the negative errno that was returned */
	enum dr_port_param param; /* what to fix */
	char msg[512];		  /* one line, no trailing newline */
};

enum dr_port_log_level {
	DR_PORT_LOG_WARN,
	DR_PORT_LOG_INFO,
	DR_PORT_LOG_DEBUG,
};

/* Where the port's own messages and DPDK's log lines go (one line per call,
 * no newline; may be called from any thread, DPDK's interrupt thread
 * included).  Process-wide.  With no callback, warnings go to stderr and the
 * rest is dropped.  DPDK's log level is set by the EAL arguments: warnings
 * and above by default (--log-level in FI_DROCE_EAL_ARGS changes it). */
typedef void (*dr_port_log_fn)(void *ctx, enum dr_port_log_level level, const char *msg);
void dr_port_set_log(dr_port_log_fn fn, void *ctx);

/* ---- EAL start-up -------------------------------------------------------- */

/* Start DPDK's EAL if it is not running yet; dr_port_open() calls it, so
 * an explicit call is needed only to choose the moment.  extra_args: more EAL
 * arguments, split at blanks (single and double quotes group).  device: the
 * first device spec, used only to decide whether PCI is scanned.
 *
 * The arguments given to EAL are ours first, then extra_args (so a repeated
 * option such as --log-level is overridden by the user).  Ours, each left
 * out when extra_args already chooses that setting:
 *   --no-huge --no-shconf -m 256   unless extra_args choose hugepage memory
 *                                  (--huge-dir, --socket-mem, --in-memory,
 *                                  --legacy-mem, ...); no --in-memory:
 *                                  DPDK 22.11 refuses it with --no-huge
 *   --file-prefix=droce-<pid>      unique per process
 *   --no-pci                       unless the device is a PCI address
 *   -a <pci>                       when it is (only that device is probed)
 *   --no-telemetry
 *   --lcores=0@(<cpus>)            one lcore on the calling thread's current
 *                                  CPU set, so EAL does not re-pin it
 *   --log-level=warning
 * EAL can start only once per process: after a failure every later call
 * returns the same error.  Options that make EAL exit the process (-h,
 * --help, --log-level=help) are refused.  If the application started EAL
 * itself, it is used as it is and extra_args are ignored.  Never exits or
 * aborts; returns 0 or -errno with err filled (the message quotes the first
 * error DPDK logged).  On bad arguments EAL 22.11 still prints its usage on
 * stdout and "EAL: FATAL: ..." on stderr itself; nothing stops that.  The
 * runtime directory EAL leaves ($XDG_RUNTIME_DIR/dpdk/droce-<pid> or
 * /var/run/dpdk/droce-<pid>, empty) is removed. */
int dr_port_eal_init(const char *extra_args, const char *device, struct dr_port_err *err);
bool dr_port_eal_running(void);

/* ---- Opening a port -------------------------------------------------------- */

/* ARP tuning; a zero field takes the default below. */
struct dr_port_arp_params {
	unsigned tries;	       /* requests sent before a peer is unreachable */
	unsigned retry_ms;     /* interval between them */
	unsigned probe_ms;     /* wait for the answer to a unicast re-probe */
	unsigned reachable_ms; /* how long a reply is trusted without a new one */
	unsigned failed_ms;    /* how long "unreachable" is remembered */
	unsigned queue_len;    /* frames held per peer while resolving */
	unsigned entries;      /* size of the neighbour table */
};
#define DR_PORT_ARP_TRIES	 3
#define DR_PORT_ARP_RETRY_MS	 1000
/* An ARP answer on a LAN takes well under a millisecond; 100 ms leaves a
 * busy peer room and is shorter than the retransmit timeout that follows
 * a QP's second one at the default FI_DROCE_TIMEOUT (4 x 67 ms), so a
 * peer that moved is found before that timeout resends. */
#define DR_PORT_ARP_PROBE_MS	 100
#define DR_PORT_ARP_REACHABLE_MS 30000
#define DR_PORT_ARP_FAILED_MS	 3000
#define DR_PORT_ARP_QUEUE_LEN	 16
#define DR_PORT_ARP_ENTRIES	 256

#define DR_PORT_DEF_MTU 1500

struct dr_port_config {
	/* The DPDK device:
	 *  - a vdev: "net_af_packet0,iface=eth0", "net_memif0,role=server,
	 *    socket=/tmp/droce.sock", "net_tap0,iface=dtap0", "net_pcap0,...",
	 *    "net_ring0" - hot-plugged at open, removed at close (one EAL
	 *    created from --vdev in the EAL arguments is used, and removed
	 *    at close, the same way);
	 *  - a PCI address: "0000:03:00.0" (the device must be bound to
	 *    vfio-pci; EAL must have been started for PCI, see above);
	 *  - "pair:NAME:0" / "pair:NAME:1": the two ends of an in-process
	 *    back-to-back link (two rte_rings crossed, net_ring PMD), for
	 *    tests; NAME is [A-Za-z0-9_-]{1,16}.  See dr_port_open_pair();
	 *  - "packet:IF": the kernel interface IF through droce's own packet
	 *    socket (src/roce/port_pk.c) rather than net_af_packet's, which
	 *    can send and receive UDP GSO super-frames (gso below). */
	const char *device;
	uint32_t ip4;	       /* our IPv4 address, host order */
	unsigned prefix_len;   /* 1..32 (IPv6: 1..128) */
	uint32_t gateway4;     /* next hop for off-link peers; 0: none */
	/* An IPv6 port instead (ipv6 set; ip4 and gateway4 ignored): the
	 * port speaks RoCEv2 over IPv6 from ip6 and resolves neighbours
	 * with ND (RFC 4861) instead of ARP; one port has one family. */
	bool ipv6;
	uint8_t ip6[16];       /* a unicast address, not link-local */
	uint8_t gateway6[16];  /* next hop for off-link peers; ::: none */
	unsigned mtu;	       /* Ethernet (IP) MTU; 0: DR_PORT_DEF_MTU */
	const uint8_t *mac;    /* NULL: the device's; for a pair end
				* 02:64:72:hh:hh:0<side> (hh: a hash of NAME);
				* random, locally administered, for a vdev
				* that has none */
	const char *pcap_path; /* capture every frame to this pcapng file
				* (wall-clock ns stamps, annotations) */
	const char *eal_args;  /* for dr_port_eal_init() if EAL is not up */
	unsigned nb_mbufs;     /* frame pool size; 0: sized from the queues */
	bool qdisc_bypass;     /* net_af_packet (unless the spec names
				* qdisc_bypass): send past the kernel's qdisc
				* layer, and so past its packet taps (tcpdump
				* sees only what droce receives); false: through
				* it, both directions visible */
	bool gso;	       /* "packet:IF": one QP's runs of equal frames leave
				* as UDP GSO super-frames, which only a peer on a
				* "packet:" port takes whole (fi_droce(7),
				* FI_DROCE_GSO) */
	bool kernel_filter;    /* net_af_packet: the kernel drops droce's RoCE
				* frames at its ingress, after its packet taps,
				* before its IP stack (port_kfilter.c) */
	bool rx_filter;	       /* "packet:IF": the socket starts with the filter of
				* dr_port_rx_filter on, and no QPN: so that it
				* never reads other processes' frames */
	struct dr_port_arp_params arp;
};

/* Open, configure (1 rx + 1 tx queue) and start one port; promiscuous mode
 * off.  For net_af_packet sharing the kernel's address, see the comment on
 * kernel interplay in port.c.  Returns 0 with *out set, or -errno with err
 * filled (the port is then fully undone). */
int dr_port_open(const struct dr_port_config *cfg, struct dr_port **out, struct dr_port_err *err);

/* Open both ends of a fresh in-process link ("pair:<auto>:0" and ":1");
 * a->device and b->device are ignored. */
int dr_port_open_pair(const struct dr_port_config *a, const struct dr_port_config *b,
		      struct dr_port **pa, struct dr_port **pb, struct dr_port_err *err);

/* Stop and release everything: queued frames, timers, the neighbour table,
 * the capture (flushed), the ethdev and, if we plugged it, the device, so
 * the same spec can be opened again.  Every dr_port_timer of the port must
 * have been freed.  NULL is a no-op. */
void dr_port_close(struct dr_port *p);

/* At process exit (the provider's cleanup, with no thread polling the
 * port): what is queued leaves now, and the capture file is completed and
 * closed.  Everything else stays as it is, so that calls still made through
 * the port (an application thread that outlives the cleanup, objects closed
 * later, dr_port_close) find it valid; frames sent after this are not
 * captured.  NULL is a no-op. */
void dr_port_quiesce(struct dr_port *p);

/* ---- Identity ---------------------------------------------------------------- */

void dr_port_mac(const struct dr_port *p, uint8_t mac[6]);
uint32_t dr_port_ip4(const struct dr_port *p); /* 0 on an IPv6 port */
/* True for an IPv6 port, with its address in ip6. */
bool dr_port_ip6(const struct dr_port *p, uint8_t ip6[16]);
/* The MTU the port was opened with: what its buffers are sized for. */
unsigned dr_port_mtu(const struct dr_port *p);
/* The MTU its frames may have now: dr_port_mtu(), or less while the kernel
 * interface under it (link watch) has a lower MTU than that: new
 * connections take their path MTU from it.  Looks at the interface's MTU
 * (a system call; the data path's looks are the link watch's). */
unsigned dr_port_link_mtu(struct dr_port *p);
/* The ethdev's name, e.g. "net_af_packet0" or "net_ring_drpair3_0". */
const char *dr_port_name(const struct dr_port *p);
/* True if dr_port_send_zc() really attaches the payload (else it copies). */
bool dr_port_zero_copy(const struct dr_port *p);
/* True if, moreover, the device has copied an attached payload out by the
 * time the frame has left: when the outermost dr_port_batch_end() (or an
 * unbatched send) returns, done() has been called.  net_memif (copy mode),
 * net_af_packet, net_tap, net_pcap; not net_ring, which passes the mbuf on. */
bool dr_port_zero_copy_sync(const struct dr_port *p);
/* The most PSNs a QP on this port should leave unacknowledged
 * (struct dr_qp_init_attr.max_window): 64 on net_af_xdp, whose copy mode on
 * a veth holds or loses frames when a QP has hundreds in flight; 0 (no
 * limit beyond the engine's own window) on every other device. */
unsigned dr_port_max_window(const struct dr_port *p);
/* True if the device itself loses no frame the port gives it: net_memif
 * and net_ring, whose transmit stops while the receiver's ring is full.
 * The port can still drop (counted in tx_dropped): when its backlog of
 * frames the ring did not take is full, when the ring for frames to its
 * own address is, or when a neighbour's queue of frames awaiting ARP
 * overflows; and a memif peer may forward to a lossy link.  So QPs take it
 * as a presumption (DR_QP_LOSSLESS), dropped at the first loss.  Not the
 * kernel's PMDs, behind which a full socket ring or queue drops. */
bool dr_port_lossless(const struct dr_port *p);

/* UDP GSO super-frames ("packet:IF" ports, dr_port_config.gso).  takes:
 * the port receives them whole (a packet: port whose socket's queue could
 * be made large enough; its CM says so to peers, DR_ECE_GSO_RX).  gso_peer: whether frames to QP
 * qpn at ip4 (host order) may leave as super-frames -- its port said it takes them; set at each
 * connection, cleared when it ends.  Only IPv4 peers; 0, -ENOMEM, or
 * -ENOTSUP on a port that does not send them. */
bool dr_port_gso_takes(const struct dr_port *p);
int dr_port_gso_peer(struct dr_port *p, uint32_t ip4, uint32_t qpn, bool on);
/* Several processes on one interface ("packet:IF" ports): rx_filter(on)
 * has the kernel drop, before it copies them, the RoCEv2 frames that are
 * not MADs to QP1 nor for one of the QPNs given with rx_qpn(qpn, true)
 * (port_pk.c says why and how); off, the port takes every frame.  A QPN
 * must be given before any peer can learn it.  0, -ENOMEM, or -ENOTSUP on
 * other ports (they take every frame). */
int dr_port_rx_filter(struct dr_port *p, bool on);
int dr_port_rx_qpn(struct dr_port *p, uint32_t qpn, bool on);
/* The filter's classic BPF program for n QPNs, DR_PORT_RX_FILTER_LEN(n)
 * instructions into f; returns how many (for tests: any socket takes it). */
struct sock_filter;
#define DR_PORT_RX_FILTER_LEN(n) (22u + 2u * (n) + 1u)
unsigned dr_port_rx_filter_build(struct sock_filter *f, const uint32_t *qpns, unsigned n);
/* How many full packets of path MTU pmtu (the middle of a message: BTH,
 * payload, ICRC) one super-frame carries: bounded by the 64 KiB of an IP
 * packet (62 at 1024, 15 at 4096) and by 64.  0 on a port that sends none. */
unsigned dr_port_gso_run(const struct dr_port *p, uint32_t pmtu);

/* The largest MTU net_af_xdp carries here: its umem chunks are the port's
 * mbufs, which must fit a page without hugepages (3438 with 4 KiB pages:
 * path MTU 2048).  A port on net_af_xdp lowers a larger MTU to it. */
unsigned dr_port_af_xdp_mtu(void);

/* The IB path MTU rxe derives from an Ethernet MTU: the largest of
 * 256..4096 that fits in mtu - 80 (docs/protocol.md A.1); 0 if none does. */
static inline unsigned dr_port_pmtu_of(unsigned mtu)
{
	unsigned pmtu;

	for (pmtu = 4096; pmtu >= 256; pmtu /= 2)
		if (pmtu + 80 <= mtu)
			return pmtu;
	return 0;
}

/* ---- Receive: dr_port_poll drives everything ------------------------------ */

/* A RoCEv2 frame for us: dr_pkt_parse() accepted it (ICRC included), its
 * destination MAC and IPv4 address are ours (the payload of a READ
 * response or of a WRITE MIDDLE or LAST may already be in place:
 * dr_port_set_place).  frame/pkt are valid only during the call.  The
 * callback may send on the port; it must not poll or close it. */
typedef void (*dr_port_rx_fn)(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt);
void dr_port_set_rx(struct dr_port *p, dr_port_rx_fn fn, void *ctx);
/* During the rx callback: how long ago the kernel received the frame (a
 * "packet:IF" port reads the time its receive ring stamps), in ns; 0 when
 * the port does not know (other devices, frames from the host-local wire).
 * A frame can wait in the ring while the process does not poll. */
uint64_t dr_port_rx_age_ns(const struct dr_port *p);

/* Where the payload of a placeable frame goes (dr_icrc_placeable: a READ
 * response, a WRITE MIDDLE or LAST), asked before its ICRC is known
 * (dr_port_set_place): at most max segments into dst, their lengths
 * summing to pkt->payload_len; 0 to have it checked and handed over as any
 * other frame.  Called with the rx callback's ctx, the frame not yet
 * verified: it must change nothing, and name only memory whose contents do
 * not matter unless the rx callback then accepts the frame (the unfilled
 * part of an outstanding READ's buffer, the bytes of a WRITE in progress
 * still due). */
#define DR_PORT_PLACE_MAX 4
typedef unsigned (*dr_port_place_fn)(void *ctx, const struct dr_pkt *pkt, struct iovec *dst,
				     unsigned max);
/* With a place function, the port copies such a frame's payload where it
 * says and checks the ICRC in the same pass (dr_pkt_icrc_copy): the rx
 * callback gets the frame only if the ICRC is right, with
 * pkt->payload_placed set.  A frame whose ICRC is wrong is dropped and
 * counted as always (rx_verdict[DR_PKT_BAD_ICRC]); the bytes it left in the
 * named memory are overwritten by the packet that belongs there, sent
 * again. */
void dr_port_set_place(struct dr_port *p, dr_port_place_fn fn);

enum dr_port_dir {
	DR_PORT_DIR_RX,
	DR_PORT_DIR_TX,
};

/* Every frame the port receives (before any filtering) or hands to the
 * device (after the MAC addresses are filled in): the hook beside the pcapng
 * capture, for tests and tracing.  The frame is valid only during the call. */
typedef void (*dr_port_frame_fn)(void *ctx, enum dr_port_dir dir, const void *frame, size_t len);
void dr_port_set_frame_hook(struct dr_port *p, dr_port_frame_fn fn, void *ctx);

/* ---- capture annotations (FI_DROCE_PCAP) ----
 * What droce decided about a frame, in the frame's own record of the
 * capture, as a pcapng comment Wireshark shows in its packet list.  All are
 * no-ops when the port does not capture: test dr_port_capturing() before
 * formatting anything costly. */
bool dr_port_capturing(const struct dr_port *p);
/* A comment on frame (len bytes): either the received frame being handled
 * (as the rx callback got it, during that call, before anything is sent in
 * answer: the frame is written then), or a frame this port is about to send
 * (the frame or the header given to dr_port_send, _send_zc, _buf_send, before
 * that call).  A frame to send is found by its bytes after the MAC
 * addresses (the first 64), when it leaves; several notes on one frame are
 * joined with "; ".  At most 16 notes wait for their frames: a seventeenth
 * pushes the oldest out (counted in capture_errors). */
void dr_port_capture_note(struct dr_port *p, const void *frame, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The received frame being handled (during the rx callback) is dropped: its
 * record is marked so -- epb_flags inbound, epb_dropcount 1 -- and its
 * comment begins "dropped: <reason>". */
void dr_port_capture_drop(struct dr_port *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Told when resolution of ip ends: status 0 (resolved) or -EHOSTUNREACH
 * (no answer after the retries; frames queued for it were dropped). */
typedef void (*dr_port_neigh_fn)(void *ctx, uint32_t ip, int status);
void dr_port_set_neigh_cb(struct dr_port *p, dr_port_neigh_fn fn, void *ctx);
/* The same on an IPv6 port, for the IPv6 address ip6. */
typedef void (*dr_port_neigh6_fn)(void *ctx, const uint8_t ip6[16], int status);
void dr_port_set_neigh6_cb(struct dr_port *p, dr_port_neigh6_fn fn, void *ctx);

/* The host-local wire (src/fi/local.c): when set, a frame to our own
 * address goes to fn instead of the port's own loopback, and is recorded
 * as sent (capture, frame hook, tx counters) when fn returns 0; the other
 * processes on the interface -- and this one -- receive it through
 * dr_port_input.  frame is valid only during the call. */
typedef int (*dr_port_local_fn)(void *ctx, const void *frame, size_t len);
void dr_port_set_local(struct dr_port *p, dr_port_local_fn fn, void *ctx);
/* A frame from the host-local wire, received as a looped-back one: capture,
 * frame hook, every receive check, the rx callback.  Not from inside the
 * rx callback.  0, -EMSGSIZE or -ENOBUFS (counted as dropped). */
int dr_port_input(struct dr_port *p, const void *frame, size_t len);

/* One round of progress: deliver looped-back frames, one rx burst (ARP
 * answered and learnt, RoCE frames to the rx callback, the rest counted and
 * dropped), then expired timers (ARP retries and expiry, dr_port_timer).
 * Returns the number of frames received, or -errno (-EBUSY: this thread
 * could not be given a DPDK lcore id; DPDK has 128). */
int dr_port_poll(struct dr_port *p);

/* ---- Transmit -------------------------------------------------------------------- */

/* Frames given to dr_port_send* are Ethernet + IPv4 (an 802.1Q tag is
 * allowed), or Ethernet + IPv6 on an IPv6 port; the port writes our MAC as
 * source and the next hop's MAC as destination (it need not be known to
 * the caller), pads the frame to 60 bytes, and sends it:
 *   - to our own address: looped back, delivered by the next dr_port_poll
 *     (with dr_port_set_local: handed to the host-local wire instead);
 *   - next hop resolved: sent now (a stale entry is re-probed meanwhile);
 *   - resolving: the frame is queued (DR_PORT_ARP_QUEUE_LEN per peer; when
 *     full the oldest is dropped, as Linux does) and 0 is returned; queued
 *     frames go out when the reply arrives or are dropped when it does not
 *     come (then the neighbour callback gets -EHOSTUNREACH);
 *   - unresolvable (no reply after the tries, for failed_ms): -EHOSTUNREACH;
 *   - off-link with no gateway: -ENETUNREACH.
 * Other returns: -EMSGSIZE (longer than the MTU plus the Ethernet and
 * VLAN headers), -EINVAL (not IPv4), -ENOBUFS (no mbuf, or the neighbour table is full), -EAGAIN
 * (device queue full: the frame was dropped - RC retransmission recovers
 * it).  A frame is never kept past a failed return. */
int dr_port_send(struct dr_port *p, const void *frame, size_t len);

/* Transmit batching.  Between dr_port_batch_begin() and the matching
 * dr_port_batch_end() (they nest) frames that are ready to leave wait in a
 * queue of DR_PORT_BURST and go to the device together -- one
 * rte_eth_tx_burst, one sendto() on net_af_packet -- when it fills and at
 * the outermost end.  dr_port_poll() batches everything it triggers
 * (acknowledgements, resends, timers).  Order is kept.  With a frame hook
 * set, frames are not batched. */
void dr_port_batch_begin(struct dr_port *p);
void dr_port_batch_end(struct dr_port *p);
/* End a batch without sending what it queued: the frames wait for the next
 * dr_port_flush(), the end of a later batch, or a full queue.  The caller
 * guarantees one comes (src/fi: every poll flushes first). */
void dr_port_batch_hold(struct dr_port *p);
void dr_port_flush(struct dr_port *p);
/* A requester sent frames into the batch and has unacked PSNs sent and not
 * acknowledged: on a port where a burst is no system call, what the batch
 * holds leaves now if it is at least as much as the receiver still has
 * to work on (2 x held >= unacked), so that the receiver does not run dry
 * while an application posts the rest of a small window.  Held to the
 * next poll instead, a window of 16 4 KiB WRITEs over memif went as one
 * burst and each side waited for the other (4.4 GB/s; 7.2 GB/s so, and
 * a window of 8 3.7 -> 6.0 GB/s); the held share halves as the pipe
 * fills, so a full window still leaves in large bursts.  On the kernel
 * ports the frames wait for the poll: a burst there is a sendto(), and
 * sending from the post lengthened a veth's 8 B half round trip from
 * 1.31 to 1.39 us. */
void dr_port_tx_early(struct dr_port *p, uint32_t unacked);
bool dr_port_tx_pending(const struct dr_port *p);
/* Whether a transmit burst costs a system call (a kernel interface: the
 * packet socket, net_af_packet, net_af_xdp, net_tap, net_pcap), so that
 * frames are worth gathering into one burst even at the price of building
 * them all first; false on memif, ring and NICs, where a burst is a store
 * into shared memory or a doorbell. */
bool dr_port_tx_syscall(const struct dr_port *p);

/* The same for a frame in three pieces, as dr_pkt_build_split() makes them:
 * hdr (copied), payload (attached as an external mbuf buffer, not copied),
 * trailer (pad + ICRC, copied).  done(arg) is called exactly once when the
 * port no longer needs payload - in every outcome, possibly before this
 * returns, and possibly from another thread (e.g. from the peer's
 * dr_port_poll on an in-process pair, or when a NIC completes the send).
 * Falls back to copying (done called at once) when the device cannot take
 * chained mbufs or the memory cannot be given to it (a PCI device: the
 * payload memory is not DMA-mapped), see dr_port_zero_copy(). */
int dr_port_send_zc(struct dr_port *p, const void *hdr, size_t hdr_len, const void *payload,
		    size_t payload_len, const void *trailer, size_t trailer_len,
		    void (*done)(void *arg), void *arg);

/* Build in place: a device buffer of len bytes (at most the MTU plus the
 * Ethernet and VLAN headers) to write the frame into, then
 * dr_port_buf_send() (same rules as dr_port_send; consumes the buffer in
 * every case) or dr_port_buf_free(). */
struct dr_port_buf;
void *dr_port_buf_alloc(struct dr_port *p, size_t len, struct dr_port_buf **out);
int dr_port_buf_send(struct dr_port *p, struct dr_port_buf *b);
void dr_port_buf_free(struct dr_port_buf *b);

/* Send a frame exactly as given: no address filling, no padding, no ARP.
 * For tests and tools.  Returns 0, -EMSGSIZE, -ENOBUFS or -EAGAIN. */
int dr_port_send_raw(struct dr_port *p, const void *frame, size_t len);

/* ---- Neighbours -------------------------------------------------------------------- */

/* On an IPv6 port neighbour solicitations and advertisements (RFC 4861)
 * take the place of ARP requests and replies under the same rules: only a
 * Solicited advertisement unicast to us for an address we asked about sets
 * a MAC; a solicitation for our address is answered (Solicited, Override)
 * and creates a STALE entry for an unknown solicitor; the port receives
 * multicast (all-multicast mode) for the solicited-node group of its
 * address, 33:33:ff:xx:xx:xx.  The arp_* and rx_arp_* counters count
 * ND messages there.
 *
 * How the table treats ARP (port_neigh.c has the whole of it): only a reply
 * to a request of ours -- unicast to our MAC, naming our IP -- sets or
 * changes a MAC and makes an entry REACHABLE; a re-probe of a known peer
 * first asks its MAC by unicast and believes only that MAC, then, after
 * probe_ms of silence, asks by broadcast.  Any other ARP never changes a
 * valid entry's MAC: one naming another MAC makes a REACHABLE entry STALE,
 * so that it is re-probed on its next use.  A request for our address from
 * an unknown on-link host creates a STALE entry. */

/* The MAC of the next hop towards ip (host order): 0 with mac filled when
 * known; -EAGAIN while resolving (resolution is started if needed: keep
 * calling dr_port_poll); -EHOSTUNREACH when it failed (for failed_ms, then
 * a new call starts over); -ENETUNREACH off-link without a gateway;
 * -ENOBUFS table full. */
int dr_port_resolve(struct dr_port *p, uint32_t ip, uint8_t mac[6]);
/* The same for an IPv6 address on an IPv6 port (ND instead of ARP; -EINVAL
 * on an IPv4 port). */
int dr_port_resolve6(struct dr_port *p, const uint8_t ip6[16], uint8_t mac[6]);

/* The connection to ip (host order) stops making progress (src/fi: a QP's
 * retransmit timer expired twice in a row): if the next hop's entry is
 * valid and no question about it is out, re-probe it now (unicast to its
 * MAC, then broadcast after probe_ms), so that a peer whose MAC changed is
 * followed within probe_ms and a round trip.  Returns 1 if a probe
 * started, 0 if none was needed (ourselves, no entry, or already asking),
 * -ENETUNREACH off-link without a gateway. */
int dr_port_neigh_suspect(struct dr_port *p, uint32_t ip);
int dr_port_neigh_suspect6(struct dr_port *p, const uint8_t ip6[16]);

/* ---- Clock and timers (rte_timer, run by dr_port_poll) --------------------- */

/* Monotonic nanoseconds, the clock of the port timers: CLOCK_MONOTONIC
 * until DPDK's EAL is up, then the TSC anchored to it (no system call). */
uint64_t dr_port_now_ns(void);

struct dr_port_timer;
/* fn(arg) runs from dr_port_poll() of p, once per arming.  NULL: -ENOMEM. */
struct dr_port_timer *dr_port_timer_new(struct dr_port *p, void (*fn)(void *arg), void *arg);
/* (Re)arm to fire delay_ns from now; may be called from fn itself. */
int dr_port_timer_arm(struct dr_port_timer *t, uint64_t delay_ns);
void dr_port_timer_cancel(struct dr_port_timer *t);
bool dr_port_timer_pending(const struct dr_port_timer *t);
void dr_port_timer_free(struct dr_port_timer *t);

/* ---- Counters ------------------------------------------------------------------------ */

struct dr_port_stats {
	uint64_t rx_frames, rx_bytes;		 /* everything received */
	uint64_t tx_frames, tx_bytes;		 /* what the device took to send (not
						  * what a kernel refused: tx_refused) */
	uint64_t rx_roce;			 /* delivered to the rx callback */
	uint64_t rx_placed; /* of them, payloads placed as checked (dr_port_set_place) */
	uint64_t rx_arp, tx_arp;		 /* ARP frames in and out */
	uint64_t rx_dropped;			 /* every frame not delivered nor ARP (sum) */
	uint64_t rx_not_ours;			 /* destination MAC or IP not ours */
	uint64_t rx_looped;			 /* our own source MAC (af_packet echo) */
	uint64_t rx_no_handler;			 /* RoCE frame, no rx callback set */
	uint64_t rx_too_long;			 /* longer than the port's frame buffer */
	uint64_t rx_verdict[DR_PKT_VERDICT_NUM]; /* by dr_pkt_parse verdict */
	uint64_t rx_arp_bad;			 /* refused by dr_arp_parse */
	uint64_t rx_arp_ignored;		 /* valid ARP not for us */
	uint64_t rx_arp_unsolicited;		 /* about a known peer, answering no request */
	uint64_t tx_dropped;			 /* device queue and backlog full */
	uint64_t tx_backlogged;			 /* waited for room in the device queue */
	uint64_t tx_bursts;			 /* rte_eth_tx_burst calls that sent */
	uint64_t tx_nombuf;			 /* frame pool empty */
	uint64_t loopback;			 /* frames sent to our own address */
	uint64_t arp_queued;			 /* frames held while resolving */
	uint64_t arp_queue_dropped;		 /* dropped: queue full or peer unreachable */
	uint64_t arp_resolved;			 /* resolutions that succeeded */
	uint64_t arp_failed;			 /* resolutions that failed */
	uint64_t arp_conflicts;			 /* unasked ARP naming another MAC: not taken */
	uint64_t arp_moved;			 /* re-probes that found a new MAC */
	uint64_t arp_suspected;			 /* re-probes asked by dr_port_neigh_suspect */
	uint64_t capture_errors;		 /* frames the pcapng capture lost */
	uint64_t rx_nd, tx_nd;			 /* ND (NS/NA) frames in and out (IPv6) */
	uint64_t rx_nd_bad;			 /* refused by dr_nd_parse */
	/* "packet:IF" ports (UDP GSO): super-frames sent and the frames they
	 * carried; received and the frames cut from them, and GSO frames
	 * not droce's (dropped); frames too long
	 * for a ring slot with no room on the socket's queue (lost) */
	uint64_t tx_gso_frames, tx_gso_segs;
	uint64_t rx_gso_frames, rx_gso_segs;
	uint64_t rx_gso_bad; /* ... GSO frames droce does not send (TCP, IPv6) */
	/* ... super-frames copied out of one buffer for want of an idle
	 * staging buffer to hand their pieces out in place (port_pk.c) */
	uint64_t rx_gso_copied;
	uint64_t rx_truncated;
	/* "packet:IF" ports: frames, not super-frames, longer than a receive
	 * ring slot, which holds the longest RoCE frame at the port's path
	 * MTU (a jumbo frame of other traffic), each read from the socket's
	 * queue with a system call */
	uint64_t rx_long;
	/* "packet:IF" ports: frames the kernel dropped because the receive
	 * ring had no free slot (PACKET_STATISTICS tp_drops: the process did
	 * not read it fast enough), counted when the next frame arrives
	 * (TP_STATUS_LOSING) and when the socket closes */
	uint64_t rx_ring_drops;
	/* frames tagged with a VLAN ID (another network than the port's
	 * untagged one; VLAN ID 0 is a priority tag, the port's own), and on
	 * "packet:IF" ports frames lost for want of a pool buffer to receive
	 * them into */
	uint64_t rx_vlan, rx_nombuf;
	/* ports on a kernel interface (link watch): changes of its MTU seen,
	 * and frames dropped as longer than it (or, on "packet:IF" ports,
	 * refused by the kernel), counted in tx_dropped too */
	uint64_t link_mtu_changes, tx_refused;
};

void dr_port_get_stats(const struct dr_port *p, struct dr_port_stats *s);

/* ---- Live counters: DPDK telemetry (port_telemetry.c) ------------------------ */

/*
 * EAL serves DPDK telemetry on <runtime dir>/dpdk_telemetry.v2 (a
 * SOCK_SEQPACKET socket: one command per message, one JSON reply) from its
 * own threads; droce starts EAL with it unless FI_DROCE_EAL_ARGS says
 * --no-telemetry.  Commands registered here (before or after EAL starts)
 * are answered there: fn runs on the telemetry client's thread, never on a
 * thread of the caller, and must take whatever lock guards what it reads.
 * The reply is a flat dictionary filled with dr_tel_u64 / dr_tel_str; at
 * most DR_TEL_MAX_ENTRIES entries, names at most DR_TEL_MAX_NAME bytes.
 */
#define DR_TEL_MAX_CMDS	   8
#define DR_TEL_MAX_ENTRIES 256 /* RTE_TEL_MAX_DICT_ENTRIES */
#define DR_TEL_MAX_NAME	   63
struct dr_tel; /* a reply being built */
/* params: what followed "cmd," (NULL if nothing).  0, or a negative errno:
 * the client then reads {"cmd": null}. */
typedef int (*dr_tel_fn)(const char *params, struct dr_tel *t);
/* 0, -EINVAL (cmd not "/..." or too long), -ENOSPC (DR_TEL_MAX_CMDS), or
 * DPDK's error.  Registering the same cmd twice keeps the first. */
int dr_tel_register(const char *cmd, dr_tel_fn fn, const char *help);
/* 0, or -ENOSPC when the dictionary is full. */
int dr_tel_u64(struct dr_tel *t, const char *name, uint64_t value);
int dr_tel_str(struct dr_tel *t, const char *name, const char *value);
/* The socket EAL serves telemetry on, "" while none (EAL not started, or
 * --no-telemetry). */
const char *dr_tel_socket(void);

/* ---- Link faults ----------------------------------------------------------------------- */

/*
 * A port on a kernel interface (net_af_packet,iface=...) watches the
 * interface: up means IFF_UP and IFF_RUNNING (administratively up, carrier
 * present).  It looks at least every DR_PORT_LINK_CHECK_US while polled or
 * sending, and at once when a send fails as a link failure does.  While the
 * link is down frames are not handed to the device (net_af_packet would
 * leave them in its kernel ring, to leave all at once when the link comes
 * back, however old) but held, oldest first, for at most
 * DR_PORT_TX_STALE_NS; older ones are dropped and counted (the RC
 * requester's go-back-N resends what matters).  When the link comes back
 * the device is re-created if it may hold frames or a socket error (the
 * interface itself went down, or a send failed), which discards whatever
 * its ring still holds, and the held frames young enough leave.
 *
 * The bound is droce's default ACK timeout, 4.096 us * 2^14 (FI_DROCE_TIMEOUT
 * 14, 67 ms): between droce peers with the defaults the requester's
 * retransmit timer (adaptive, never longer than that) has fired by then and
 * go-back-N has resent the same packets, so an older copy is a duplicate;
 * an acknowledgement that old answers a request the peer has resent.  (A
 * queue pair with a longer timeout - rxe's CM asks for 2.1 s - waits for
 * its timer instead; the outage has cost more than that already.)  The
 * bound is far above what a frame waits on a healthy port (a batch leaves
 * at the next poll, at most the device thread's 5 ms round).
 */
#define DR_PORT_LINK_CHECK_US 1000
#define DR_PORT_TX_STALE_NS   (4096ull << 14)

/*
 * The watch's looks also read the interface's MTU.  When an administrator
 * lowers it below the port's, frames longer than it cannot leave (the
 * kernel refuses them, or a peer's interface would drop them):
 * dr_port_link_mtu() follows it, so new connections take a path MTU that
 * fits, and the port sends no super-frame whose pieces would not fit; a
 * connection made before with a larger path MTU cannot shrink it (its peer
 * checks every packet's length against it) and fails when its retries run
 * out.  Each change is logged as a warning naming those consequences.  An
 * MTU raised above the port's leaves the port at its own: its buffers were
 * sized for it.
 */

/* False while the link is known to be down (always true without a watch). */
bool dr_port_link_up(const struct dr_port *p);

#endif /* DR_PORT_H */
