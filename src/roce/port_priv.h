/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * port_priv.h - what the port files (port.c, port_eal.c, port_neigh.c,
 * port_capture.c, port_kfilter.c, port_telemetry.c, port_pk.c) share.
 * Only these files include DPDK headers.
 */
#ifndef DR_PORT_PRIV_H
#define DR_PORT_PRIV_H

#include <pthread.h>
#include <stdarg.h>

#include <rte_mbuf.h>
#include <rte_timer.h>

#include "dr_port.h"

#define DR_PORT_BURST 32 /* frames a receive poll takes */
/* Frames a batch collects before they leave in one burst: a whole run of
 * a QP's 64 packets between two AckReqs, which a packet: port sends as one
 * UDP GSO super-frame (at 32, every run was cut in two) */
#define DR_PORT_TXQ   64
#define DR_PORT_TXB   256 /* transmit backlog: frames a full ring did not take */
/* Frames held while the link is down; the oldest is dropped beyond this. */
#define DR_PORT_HELD_MAX 256

/* ---- port_eal.c: EAL, logging, threads, the global lock ---------------- */

/* Serialises EAL start-up, device plug/unplug and the pair registry. */
extern pthread_mutex_t dr_port_global_lock;

void dr_port_log(enum dr_port_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Fill err (if any) and return ret (a negative errno).  With err NULL the
 * message is logged as a warning instead. */
int dr_port_fail(struct dr_port_err *err, int ret, enum dr_port_param param, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* DPDK's first error-level log line since the last clear, to explain a
 * failed DPDK call: clear it before the call, read it after ("" if none). */
void dr_port_dpdk_err_clear(void);
const char *dr_port_dpdk_err(char *buf, size_t len);

/* Give the calling thread an lcore id if it has none (rte_thread_register;
 * released when the thread exits).  rte_timer's manage functions index
 * per-lcore state with rte_lcore_id() and would write out of bounds from
 * an unregistered thread.  Returns 0 or -EBUSY. */
int dr_port_thread_ensure(void);

/* Wait until EAL's interrupt thread has finished the work that was ready
 * when called.  PMDs with a control channel handle it there (net_memif:
 * a peer's DISCONNECT); closing the port while its handler runs frees the
 * device under it (DPDK 22.11 memif crashes in memif_disconnect()).  An
 * EAL alarm runs on that thread after the handler in progress and the
 * other events of its round: two in a row cover that round too.  Global
 * lock held. */
void dr_port_intr_barrier(void);

/* True for "[DDDD:]BB:DD.F" (optionally followed by ",args"). */
bool dr_port_spec_is_pci(const char *spec);

/* The kernel interface a packet-socket spec names: "net_af_packet...,
 * iface=IF" or "packet:IF"; NULL (buf untouched) for any other spec. */
const char *dr_port_packet_iface(const char *spec, char *buf, size_t len);

/* ---- timers (port.c) ------------------------------------------------------- */

/* Switch dr_port_now_ns to the TSC (once EAL is up; global lock held). */
void dr_port_clock_init(void);

struct dr_port_timer {
	struct rte_timer tim; /* armed on p->timer_id, lcore p->timer_lcore */
	struct dr_port *port;
	void (*fn)(void *arg);
	void *arg;
};

void dr_port_timer_setup(struct dr_port_timer *t, struct dr_port *p, void (*fn)(void *), void *arg);

/* ---- the port ------------------------------------------------------------------ */

struct dr_neigh;
struct dr_pair;
struct rte_hash;
struct rte_ring;
struct dr_capture;
struct dr_pk;

/* Link-fault counters, logged when the port closes (port.c link_log_stats) */
struct dr_port_link_stats {
	uint64_t downs;		  /* times the link was found down */
	uint64_t down_ns;	  /* time it was down (outages that ended) */
	uint64_t held;		  /* frames that waited for the link */
	uint64_t held_sent;	  /* ... and left when it came back */
	uint64_t stale;		  /* ... dropped: older than DR_PORT_TX_STALE_NS */
	uint64_t held_overflow;	  /* ... dropped: DR_PORT_HELD_MAX were waiting */
	uint64_t dropped_arp;	  /* of stale and held_overflow: ARP frames */
	uint64_t ring_discarded;  /* handed to the device in bursts whose send
				   * failed as the link went down, discarded with
				   * its ring when it was re-created (none left if
				   * the send failed at once, ENETDOWN; a burst
				   * that lost the carrier midway, ENOBUFS, may
				   * have sent its first frames) */
	uint64_t recreated;	  /* times the device was re-created */
	uint64_t recreate_failed; /* ... and could not be (retried) */
};

struct dr_port {
	uint16_t port_id;
	int socket_id;
	unsigned serial;	/* makes DPDK object names unique */
	char name[64];		/* ethdev name */
	struct rte_device *dev; /* the device we plugged, removed at close */
	bool started;
	struct dr_pair *pair;
	unsigned pair_side;
	struct dr_pk *pk;  /* "packet:IF": droce's own packet socket (port_pk.c) */
	/* the frame in the rx callback: when the kernel received it
	 * (CLOCK_REALTIME ns; dr_port_rx_age_ns), 0 if unknown */
	uint64_t rx_kernel_ns;
	bool gso;	   /* ... sends super-frames (dr_port_config.gso) */
	uint8_t pk_mac[6]; /* ... its interface's MAC */

	uint8_t mac[6];
	uint32_t ip;	  /* host order */
	uint32_t netmask; /* host order */
	uint32_t gateway; /* host order, 0: none */
	bool ipv6;	  /* an IPv6 port: ip, netmask and gateway are 0 */
	uint8_t ip6[16];
	uint8_t gateway6[16]; /* ::: none */
	unsigned prefix_len;
	unsigned mtu;
	size_t max_frame; /* mtu + Ethernet + 802.1Q */
	bool tx_multiseg; /* device takes chained mbufs */
	bool zero_copy;	  /* dr_port_send_zc may attach external buffers */
	bool zc_sync;	  /* ... and the device is done with them when the burst returns */
	bool qdisc_bypass; /* net_af_packet: past the qdisc layer (dr_port_config) */
	bool rx_filter;	   /* packet: the socket filter on from the start (dr_port_config) */

	struct rte_mempool *pool;     /* frames */
	struct rte_mempool *ext_pool; /* external-buffer and trailer mbufs */
	struct rte_ring *loop;	      /* frames to our own address */
	size_t buf_size;	      /* data room of a pool mbuf, headroom excluded */
	unsigned min_buf;	      /* data room the PMD needs (af_packet framesz), 0: none */
	unsigned xdp_room;	      /* net_af_xdp: the data room that fits a umem page */
	unsigned max_window;	      /* dr_port_max_window: PSNs, 0: no limit */
	bool lossless;		      /* dr_port_lossless */
	bool tx_syscall;	      /* dr_port_tx_syscall */
	uint8_t *rx_scratch;	      /* buf_size bytes: linearised received frames */
	uint8_t *tx_scratch;	      /* the same for the frame hook on sends */

	uint32_t timer_id; /* rte_timer data instance of this port */
	bool timer_id_valid;
	unsigned timer_lcore; /* every timer of the port is on this list */

	struct dr_port_arp_params arp;
	struct rte_hash *neigh_hash; /* IPv4 (host order) -> index */
	struct dr_neigh *neigh;	     /* arp.entries slots */
	struct dr_neigh *neigh_last; /* the last one looked up (port_neigh.c) */
	struct rte_mbuf **neigh_q;   /* arp.entries * arp.queue_len */

	struct dr_capture *pcapng; /* FI_DROCE_PCAP (port_capture.c), NULL: none */

	int kernel_fd; /* UDP socket held on ip:4791 (af_packet), or -1 */
	/* af_packet: the kernel drops our RoCE frames at its ingress
	 * (port_kfilter.c): asked for, the libnftables context owning the
	 * table (NULL: none), its nft_ctx_free, the table's name */
	bool kfilter_on;
	void *kfilter;
	void (*kfilter_free)(void *ctx);
	char kfilter_table[40];
	int group_fd;  /* IPv6 af_packet: socket holding our solicited-node group, or -1 */

	dr_port_rx_fn rx_fn;
	void *rx_ctx;
	dr_port_place_fn place_fn; /* payloads placed while checked */
	dr_port_frame_fn frame_fn;
	void *frame_ctx;
	dr_port_neigh_fn neigh_fn;
	dr_port_neigh6_fn neigh6_fn;
	void *neigh6_ctx;
	void *neigh_ctx;
	dr_port_local_fn local_fn; /* frames to our own address, or NULL: p->loop */
	void *local_ctx;

	/* transmit batching (dr_port_batch_begin/end): frames wait here and
	 * leave in one rte_eth_tx_burst (one sendto() on af_packet) */
	unsigned batch;
	uint16_t txq_len;
	struct rte_mbuf *txq[DR_PORT_TXQ];
	/* frames the device's ring did not take, oldest first: they leave
	 * before any later frame, at the next flush (tx_backlog_push) */
	uint16_t txb_head, txb_len;
	struct rte_mbuf *txb[DR_PORT_TXB];

	/* rte_timer_alt_manage() only once the TSC reaches this: the earliest
	 * expiry armed since the last run, else one resolution step later */
	uint64_t timer_next;
	uint64_t timer_res; /* TSC ticks: DR_PORT_TIMER_RES_US */

	struct dr_port_stats stats;

	/* link faults (port.c, "link watch"): a port on a kernel interface
	 * (net_af_packet,iface=) reads the interface's flags; while it is
	 * down frames wait in held[] (oldest first, at most
	 * DR_PORT_TX_STALE_NS) instead of going into a device ring that
	 * cannot drain, and the device is re-created, if it needs to be, when
	 * the link comes back */
	int link_fd;		   /* socket for SIOCGIFFLAGS, -1: no link watch */
	char link_if[16];	   /* IFNAMSIZ */
	char *link_spec;	   /* the device's spec, to re-create it */
	unsigned link_stranded;	   /* link_unconfirmed when it was found down */
	bool link_recreate;	   /* the device needs re-creating when it is up */
	bool link_down;		   /* sends are held */
	uint64_t link_next;	   /* TSC: the next look at the flags */
	uint64_t link_down_ns;	   /* dr_port_now_ns() when found down */
	unsigned link_mtu;	   /* the interface's MTU at the last look, 0: unknown */
	unsigned link_unconfirmed; /* frames of failed bursts since the last good one */
	unsigned held_head, held_len;
	struct rte_mbuf *held[DR_PORT_HELD_MAX];
	uint64_t held_tsc[DR_PORT_HELD_MAX]; /* when each was due (TSC) */
	struct dr_port_link_stats link;
};

/* The MTU frames may have now: the port's, or the interface's while that
 * is lower (link watch; dr_port_link_mtu). */
static inline unsigned dr_port_mtu_now(const struct dr_port *p)
{
	return p->link_mtu && p->link_mtu < p->mtu ? p->link_mtu : p->mtu;
}

/* Whether a count that went from before to after passed a power of two
 * (1, 2, 4, 8...): when a repeated warning is logged again. */
static inline bool dr_port_pow2_passed(uint64_t before, uint64_t after)
{
	return after && (!before || 63 - __builtin_clzll(after) > 63 - __builtin_clzll(before));
}

/* port.c */
/* The MTU of interface ifname (SIOCGIFMTU through socket fd), or -errno. */
int dr_port_if_mtu(int fd, const char *ifname);
int dr_port_xmit(struct dr_port *p, struct rte_mbuf *m); /* consumes m */
void dr_port_fill_l2(struct rte_mbuf *m, const uint8_t dst[6], const uint8_t src[6]);

/* port_neigh.c */
int dr_neigh_init(struct dr_port *p);
void dr_neigh_fini(struct dr_port *p);
int dr_neigh_output(struct dr_port *p, uint32_t nexthop, struct rte_mbuf *m); /* consumes m */
int dr_neigh_resolve(struct dr_port *p, uint32_t ip, uint8_t mac[6]);
void dr_neigh_arp_input(struct dr_port *p, const void *frame, size_t len);
int dr_neigh_announce(struct dr_port *p);
/* IPv6 ports (port_neigh.c) */
int dr_neigh_output6(struct dr_port *p, const uint8_t dst[16], struct rte_mbuf *m);
/* An ND frame (Ethernet/IPv6/ICMPv6): true if it was one and was taken
 * (answered, learnt or counted). */
bool dr_neigh_nd_input(struct dr_port *p, const void *frame, size_t len);
int dr_port6_check_config(const struct dr_port_config *cfg, struct dr_port_err *err);
/* IPv6 on a kernel interface (net_af_packet,iface=): join our
 * solicited-node group there (p->group_fd), so that the interface passes
 * solicitations for an address the kernel does not hold. */
void dr_neigh_join_group(struct dr_port *p, const char *spec);

/* port_capture.c */
int dr_capture_open(struct dr_port *p, const char *path, struct dr_port_err *err);
void dr_capture_close(struct dr_port *p);

/* port_kfilter.c: FI_DROCE_KERNEL_FILTER on an af_packet port (iface) */
void dr_port_kfilter_open(struct dr_port *p, const char *iface);
void dr_port_kfilter_close(struct dr_port *p);
/* Copy m for the capture before it is handed over; commit after the
 * device took it, else discard.  NULL when not capturing. */
struct rte_mbuf *dr_capture_prepare(struct dr_port *p, const struct rte_mbuf *m,
				    enum dr_port_dir dir);
/* The same, stamped at tsc (a frame that waited: the time it was due). */
struct rte_mbuf *dr_capture_prepare_at(struct dr_port *p, const struct rte_mbuf *m,
				       enum dr_port_dir dir, uint64_t tsc);
void dr_capture_commit(struct dr_port *p, struct rte_mbuf *copy);
void dr_capture_discard(struct rte_mbuf *copy);
/* A received frame: recorded at begin, written at end (or before any
 * later record), so that what the port and the engines decided about it
 * in between is in its record (dr_port_capture_note, _drop).  No-ops when
 * not capturing. */
void dr_capture_rx_begin(struct dr_port *p, const struct rte_mbuf *m);
void dr_capture_rx_end(struct dr_port *p);
/* dr_pkt_parse() rejected the received frame: it is recorded as dropped,
 * with the verdict, unless it is not RoCEv2 at all (not IP, not UDP, not
 * port 4791: the interface's other traffic). */
void dr_capture_rx_verdict(struct dr_port *p, enum dr_pkt_verdict v);

/* A pool mbuf holding len bytes at *data (port.c): NULL if the pool is
 * empty (counted in tx_nombuf) or len is more than a buffer holds. */
struct rte_mbuf *dr_port_frame_alloc(struct dr_port *p, size_t len, void **data);

/* ---- port_pk.c: droce's own packet socket ("packet:IF") -------------------- */

/* Open the socket on IF (spec "packet:IF") and the idle net_ring ethdev the
 * rest of the port configures (p->port_id); mac: the interface's.  With
 * gso, runs of one QP's frames leave as UDP GSO super-frames.  On failure
 * p->pk may be set: dr_pk_free undoes it. */
int dr_pk_plug(struct dr_port *p, const char *spec, bool gso, uint8_t mac[6],
	       struct dr_port_err *err);
/* After the ethdev is closed. */
void dr_pk_free(struct dr_port *p);
const char *dr_pk_ifname(const struct dr_port *p);
/* Its socket's queue holds enough super-frames to say it takes them. */
bool dr_pk_takes(const struct dr_port *p);
/* A new socket on the interface, found again by name (link faults). */
int dr_pk_reopen(struct dr_port *p);
/* rte_eth_rx_burst and rte_eth_tx_burst for such a port.  dr_pk_tx frees
 * what it sent (the kernel has copied it) and leaves the rest to the
 * caller; errno: 0, or why the kernel took nothing (ENETDOWN...).  Of the
 * frames it returns as taken, the first *refused the kernel refused for
 * good (EMSGSIZE: the MTU fell since the port's last look): dropped and
 * counted (tx_refused, tx_dropped), never sent. */
uint16_t dr_pk_rx(struct dr_port *p, struct rte_mbuf **pkts, uint16_t n);
/* Before a frame dr_pk_rx returned is read, in the order it returned them,
 * each once the one before is done with: a piece of a super-frame gets its
 * headers (written over the end of the piece before it: port_pk.c
 * stage_alloc).  Nothing for any other frame. */
void dr_pk_rx_hdrs(struct rte_mbuf *m);
/* When the kernel received m, a frame dr_pk_rx returned (CLOCK_REALTIME
 * ns); 0 for any other frame. */
uint64_t dr_pk_rx_time(const struct dr_port *p, const struct rte_mbuf *m);
/* Whether m's ICRC was checked when its super-frame was cut (the parser
 * need not check it again). */
bool dr_pk_icrc_ok(const struct dr_port *p, const struct rte_mbuf *m);
uint16_t dr_pk_tx(struct dr_port *p, struct rte_mbuf **pkts, uint16_t n, uint16_t *refused);

#endif /* DR_PORT_PRIV_H */
