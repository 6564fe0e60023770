// SPDX-License-Identifier: BSD-2-Clause
/*
 * The neighbour table: ARP resolution, answers and the cache (RFC 826),
 * modelled on the Linux neighbour states, reduced to what a RoCE port needs.
 *
 *  INCOMPLETE  asked by broadcast, no answer yet; frames wait in a bounded
 *              queue.  A request goes out every retry_ms, tries in all;
 *              then FAILED.
 *  REACHABLE   answered; used for reachable_ms, then STALE.
 *  STALE       still used, but the next send re-probes it (PROBE).
 *  PROBE       used while asking again: first one request unicast to the
 *              MAC the entry has (Linux's ucast_probes), and if that MAC
 *              is silent for probe_ms, tries broadcast ones every retry_ms
 *              (the peer may have moved); an answer makes it REACHABLE,
 *              none makes it FAILED.
 *  FAILED      sends fail with -EHOSTUNREACH for failed_ms, then the entry
 *              goes and the next send starts over.
 *
 * What ARP may change, the discipline of Linux's neigh_update() (an update
 * without NEIGH_UPDATE_F_OVERRIDE never replaces a valid entry's address;
 * with NEIGH_UPDATE_F_WEAK_OVERRIDE a different one only makes a
 * REACHABLE entry STALE) made strict for replies, which arp_process()
 * takes from anyone: ARP has no authentication, so only an answer to a
 * question this port has outstanding is believed.
 *  - A reply to our request -- the entry is INCOMPLETE or PROBE, the reply
 *    is unicast to our MAC and names our IP as target -- makes the entry
 *    REACHABLE with the sender's MAC; while the question in flight is the
 *    unicast probe, only the MAC asked may answer it.
 *  - Anything else (a reply nobody asked for, a broadcast reply, a
 *    request, a gratuitous announcement) never changes a valid entry's
 *    MAC nor confirms it: one that names another MAC makes a REACHABLE
 *    entry STALE, so that its next use probes the MAC it has.
 *  - A request for our address from an on-link host we have no valid
 *    entry for creates it STALE with the requester's MAC (Linux's
 *    neigh_event_ns(): the requester is about to talk to us); its first
 *    use probes that MAC.
 * So a forged frame can at most cost one unicast probe; taking over a
 * valid entry needs its real owner silent for probe_ms and then winning
 * the race to answer a broadcast, which is what ARP cannot prevent.
 *
 * A connection that stops making progress says so (dr_port_neigh_suspect,
 * from the QP's retransmit path): a valid entry is probed at once, so a
 * peer whose MAC changed is found within probe_ms plus a round trip.
 *
 * On an IPv6 port neighbour discovery (RFC 4861) stands in for ARP under
 * the same rules (dr_neigh_nd_input): a solicitation takes the place of a
 * request, a Solicited advertisement unicast to us that of a reply, and
 * only such an advertisement for an address we asked about sets a MAC.
 * Linux's ndisc_recv_na() would take an unsolicited advertisement with
 * the Override flag; here, as for ARP, it can only make a REACHABLE entry
 * STALE.
 *
 * Entries live in an array indexed by the position rte_hash gives the key
 * (the IPv6 address, IPv4 ones mapped, ::ffff:a.b.c.d); each has one
 * rte_timer (a dr_port_timer)
 * for retries and expiry.  Everything runs in the port owner's context
 * (dr_port_poll, sends): no locking.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>

#include "port_priv.h"

enum dr_neigh_state {
	DR_NEIGH_FREE,
	DR_NEIGH_INCOMPLETE,
	DR_NEIGH_REACHABLE,
	DR_NEIGH_STALE,
	DR_NEIGH_PROBE,
	DR_NEIGH_FAILED,
	DR_NEIGH_STATE_NUM
};

/* clang-format off */
static const char *const state_name[DR_NEIGH_STATE_NUM] = {
	[DR_NEIGH_FREE] = "FREE",
	[DR_NEIGH_INCOMPLETE] = "INCOMPLETE",
	[DR_NEIGH_REACHABLE] = "REACHABLE",
	[DR_NEIGH_STALE] = "STALE",
	[DR_NEIGH_PROBE] = "PROBE",
	[DR_NEIGH_FAILED] = "FAILED",
};
/* clang-format on */

struct dr_neigh {
	struct dr_port_timer timer;
	uint8_t ip[16]; /* the hash key: IPv6, or IPv4-mapped */
	uint8_t mac[6];
	uint8_t state; /* enum dr_neigh_state */
	uint8_t tries; /* requests sent in this round */
	bool ucast;    /* the request in flight is PROBE's unicast one */
	uint64_t changed_ns;
	struct rte_mbuf **q; /* arp.queue_len slots */
	unsigned qhead, qlen;
};

#define IP4_FMT	     "%u.%u.%u.%u"
#define IP4_ARGS(ip) (ip) >> 24, ((ip) >> 16) & 255, ((ip) >> 8) & 255, (ip)&255

static const uint8_t mac_bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static const uint8_t v4_mapped[12] = {[10] = 0xff, [11] = 0xff};

static void key4(uint8_t k[16], uint32_t ip)
{
	memcpy(k, v4_mapped, 12);
	k[12] = ip >> 24;
	k[13] = ip >> 16;
	k[14] = ip >> 8;
	k[15] = ip;
}

static bool key_is4(const uint8_t k[16])
{
	return !memcmp(k, v4_mapped, 12);
}

static uint32_t key_ip4(const uint8_t k[16])
{
	return (uint32_t)k[12] << 24 | (uint32_t)k[13] << 16 | (uint32_t)k[14] << 8 | k[15];
}

/* an address for the log: dotted for IPv4, as the IPv4 port always said */
struct ipstr {
	char s[INET6_ADDRSTRLEN];
};
static struct ipstr ipstr(const uint8_t k[16])
{
	struct ipstr r;

	if (key_is4(k))
		snprintf(r.s, sizeof(r.s), IP4_FMT, IP4_ARGS(key_ip4(k)));
	else
		inet_ntop(AF_INET6, k, r.s, sizeof(r.s));
	return r;
}

static void set_state(struct dr_port *p, struct dr_neigh *n, enum dr_neigh_state s)
{
	dr_port_log(DR_PORT_LOG_DEBUG, "%s: neighbour %s %s -> %s", p->name, ipstr(n->ip).s,
		    state_name[n->state], state_name[s]);
	n->state = s;
	n->changed_ns = dr_port_now_ns();
}

static void arm_ms(struct dr_neigh *n, unsigned ms)
{
	dr_port_timer_arm(&n->timer, (uint64_t)ms * 1000000u);
}

/* An mbuf of len bytes for an ARP or ND message, or NULL (counted). */
static struct rte_mbuf *neigh_frame(struct dr_port *p, uint16_t len, void **data)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);

	if (!m) {
		p->stats.tx_nombuf++;
		return NULL;
	}
	*data = rte_pktmbuf_append(m, len);
	return m;
}

static int arp_send(struct dr_port *p, const struct dr_arp_msg *a)
{
	void *data;
	struct rte_mbuf *m = neigh_frame(p, DR_ETH_ZLEN, &data);
	int ret;

	if (!m)
		return -ENOBUFS;
	dr_arp_build(a, data, DR_ETH_ZLEN);
	ret = dr_port_xmit(p, m);
	if (ret == 0)
		p->stats.tx_arp++;
	return ret;
}

static int nd_send(struct dr_port *p, const struct dr_nd_msg *nd)
{
	void *data;
	struct rte_mbuf *m = neigh_frame(p, DR_ND_LEN, &data);
	int ret;

	if (!m)
		return -ENOBUFS;
	ret = dr_nd_build(nd, data, DR_ND_LEN);
	if (ret < 0) {
		rte_pktmbuf_free(m);
		return ret;
	}
	rte_pktmbuf_trim(m, (uint16_t)(DR_ND_LEN - ret));
	ret = dr_port_xmit(p, m);
	if (ret == 0)
		p->stats.tx_nd++;
	return ret;
}

/* One request for n, and the timer for the next step.  PROBE asks the MAC
 * it has first, by unicast (target hardware address set, as Linux's
 * arp_solicit() does; on IPv6 a solicitation to the address itself at
 * that MAC, RFC 4861 7.3.3), then everyone. */
static void solicit(struct dr_port *p, struct dr_neigh *n)
{
	n->ucast = n->state == DR_NEIGH_PROBE && n->tries == 0;
	if (p->ipv6) {
		struct dr_nd_msg ns;

		dr_nd_solicit(&ns, p->mac, p->ip6, n->ip, n->ucast ? n->mac : NULL);
		nd_send(p, &ns);
	} else {
		struct dr_arp_msg a;

		dr_arp_request(&a, p->mac, p->ip, key_ip4(n->ip));
		if (n->ucast) {
			memcpy(a.eth_dst, n->mac, 6);
			memcpy(a.tha, n->mac, 6);
		}
		arp_send(p, &a);
	}
	n->tries++;
	arm_ms(n, n->ucast ? p->arp.probe_ms : p->arp.retry_ms);
}

/* Ask again about a valid entry (STALE, or REACHABLE under suspicion). */
static void probe(struct dr_port *p, struct dr_neigh *n)
{
	n->tries = 0;
	set_state(p, n, DR_NEIGH_PROBE);
	solicit(p, n);
}

static void queue_drop_all(struct dr_port *p, struct dr_neigh *n)
{
	while (n->qlen) {
		rte_pktmbuf_free(n->q[n->qhead]);
		n->qhead = (n->qhead + 1) % p->arp.queue_len;
		n->qlen--;
		p->stats.arp_queue_dropped++;
	}
	n->qhead = 0;
}

static void queue_add(struct dr_port *p, struct dr_neigh *n, struct rte_mbuf *m)
{
	if (m->nb_segs > 1) {
		/* an attached payload is only lent for the send (zero copy):
		 * a frame that waits for ARP keeps a copy of its own */
		struct rte_mbuf *c = rte_pktmbuf_alloc(p->pool);
		char *d = c ? rte_pktmbuf_append(c, m->pkt_len) : NULL;

		if (d) {
			const void *src = rte_pktmbuf_read(m, 0, m->pkt_len, d);

			if (src != d)
				memcpy(d, src, m->pkt_len);
		}
		rte_pktmbuf_free(m);
		if (!d) {
			rte_pktmbuf_free(c);
			p->stats.arp_queue_dropped++;
			return;
		}
		m = c;
	}
	if (n->qlen == p->arp.queue_len) {
		/* full: the oldest goes, as Linux's unres_qlen does */
		rte_pktmbuf_free(n->q[n->qhead]);
		n->qhead = (n->qhead + 1) % p->arp.queue_len;
		n->qlen--;
		p->stats.arp_queue_dropped++;
	}
	n->q[(n->qhead + n->qlen) % p->arp.queue_len] = m;
	n->qlen++;
	p->stats.arp_queued++;
}

static void notify(struct dr_port *p, const uint8_t ip[16], int status)
{
	if (key_is4(ip)) {
		if (p->neigh_fn)
			p->neigh_fn(p->neigh_ctx, key_ip4(ip), status);
	} else if (p->neigh6_fn) {
		p->neigh6_fn(p->neigh6_ctx, ip, status);
	}
}

static void neigh_delete(struct dr_port *p, struct dr_neigh *n)
{
	uint8_t key[16];

	memcpy(key, n->ip, 16);
	dr_port_timer_cancel(&n->timer);
	queue_drop_all(p, n);
	set_state(p, n, DR_NEIGH_FREE);
	rte_hash_del_key(p->neigh_hash, key);
}

/* The last entry found is tried first: a port mostly sends to one peer
 * (a freed slot is FREE, a reused one has another address). */
static struct dr_neigh *neigh_lookup(struct dr_port *p, const uint8_t ip[16])
{
	struct dr_neigh *n = p->neigh_last;
	int32_t i;

	if (n && !memcmp(n->ip, ip, 16) && n->state != DR_NEIGH_FREE)
		return n;
	i = rte_hash_lookup(p->neigh_hash, ip);
	n = i >= 0 && (unsigned)i < p->arp.entries ? &p->neigh[i] : NULL;
	if (n)
		p->neigh_last = n;
	return n;
}

/* Make room by dropping a FAILED entry, else the stalest STALE one. */
static bool evict(struct dr_port *p)
{
	struct dr_neigh *victim = NULL;

	for (unsigned i = 0; i < p->arp.entries; i++) {
		struct dr_neigh *n = &p->neigh[i];

		if (n->state == DR_NEIGH_FAILED) {
			victim = n;
			break;
		}
		if (n->state == DR_NEIGH_STALE && (!victim || n->changed_ns < victim->changed_ns))
			victim = n;
	}
	if (victim)
		neigh_delete(p, victim);
	return victim;
}

static struct dr_neigh *neigh_create(struct dr_port *p, const uint8_t ip[16])
{
	struct dr_neigh *n;
	int32_t i;

	i = rte_hash_add_key(p->neigh_hash, ip);
	if (i == -ENOSPC && evict(p))
		i = rte_hash_add_key(p->neigh_hash, ip);
	if (i < 0 || (unsigned)i >= p->arp.entries) {
		if (i >= 0)
			rte_hash_del_key(p->neigh_hash, ip);
		return NULL;
	}
	n = &p->neigh[i];
	memcpy(n->ip, ip, 16);
	n->tries = 0;
	n->qhead = n->qlen = 0;
	set_state(p, n, DR_NEIGH_INCOMPLETE);
	return n;
}

/* The peer answered our request: n now maps to mac. */
static void confirm(struct dr_port *p, struct dr_neigh *n, const uint8_t mac[6])
{
	bool resolving = n->state == DR_NEIGH_INCOMPLETE;

	if (n->state == DR_NEIGH_PROBE && memcmp(n->mac, mac, 6)) {
		dr_port_log(DR_PORT_LOG_INFO,
			    "%s: neighbour %s moved to %02x:%02x:%02x:%02x:%02x:%02x", p->name,
			    ipstr(n->ip).s, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
		p->stats.arp_moved++;
	}
	memcpy(n->mac, mac, 6);
	n->tries = 0;
	n->ucast = false;
	if (n->state != DR_NEIGH_REACHABLE)
		set_state(p, n, DR_NEIGH_REACHABLE);
	arm_ms(n, p->arp.reachable_ms);
	while (n->qlen) {
		struct rte_mbuf *m = n->q[n->qhead];

		n->qhead = (n->qhead + 1) % p->arp.queue_len;
		n->qlen--;
		dr_port_fill_l2(m, n->mac, p->mac);
		dr_port_xmit(p, m);
	}
	n->qhead = 0;
	if (resolving) {
		p->stats.arp_resolved++;
		notify(p, n->ip, 0);
	}
}

/* A MAC learnt without asking (a request for us from a host with no valid
 * entry): used at once, probed on first use. */
static void learn_stale(struct dr_port *p, struct dr_neigh *n, const uint8_t mac[6])
{
	dr_port_timer_cancel(&n->timer);
	memcpy(n->mac, mac, 6);
	n->tries = 0;
	n->ucast = false;
	set_state(p, n, DR_NEIGH_STALE);
}

static void fail(struct dr_port *p, struct dr_neigh *n)
{
	dr_port_log(DR_PORT_LOG_INFO, "%s: no %s from %s after %u requests", p->name,
		    p->ipv6 ? "ND advertisement" : "ARP reply", ipstr(n->ip).s, n->tries);
	queue_drop_all(p, n);
	set_state(p, n, DR_NEIGH_FAILED);
	p->stats.arp_failed++;
	arm_ms(n, p->arp.failed_ms);
	notify(p, n->ip, -EHOSTUNREACH);
}

static void neigh_timer(void *arg)
{
	struct dr_neigh *n = arg;
	struct dr_port *p = n->timer.port;

	switch (n->state) {
	case DR_NEIGH_INCOMPLETE:
	case DR_NEIGH_PROBE:
		/* our own link is down (port.c, link faults): a request
		 * unanswered now says nothing of the peer, so it does not
		 * count; the round goes on once the link is back, rather than
		 * failing the peer and refusing every resend for failed_ms */
		if (!dr_port_link_up(p)) {
			arm_ms(n, p->arp.retry_ms);
			break;
		}
		/* PROBE's unicast request comes on top of the round */
		if (n->tries < p->arp.tries + (n->state == DR_NEIGH_PROBE))
			solicit(p, n);
		else
			fail(p, n);
		break;
	case DR_NEIGH_REACHABLE:
		set_state(p, n, DR_NEIGH_STALE);
		break;
	case DR_NEIGH_FAILED:
		neigh_delete(p, n);
		break;
	default:
		break;
	}
}

/* Look ip up, starting resolution if it is unknown or stale.  NULL: the
 * table is full. */
static struct dr_neigh *neigh_use(struct dr_port *p, const uint8_t ip[16])
{
	struct dr_neigh *n = neigh_lookup(p, ip);

	if (!n) {
		n = neigh_create(p, ip);
		if (n)
			solicit(p, n);
	} else if (n->state == DR_NEIGH_STALE) {
		probe(p, n);
	}
	return n;
}

static int neigh_output(struct dr_port *p, const uint8_t nexthop[16], struct rte_mbuf *m)
{
	struct dr_neigh *n = neigh_use(p, nexthop);

	if (!n) {
		rte_pktmbuf_free(m);
		return -ENOBUFS;
	}
	switch (n->state) {
	case DR_NEIGH_REACHABLE:
	case DR_NEIGH_STALE:
	case DR_NEIGH_PROBE:
		dr_port_fill_l2(m, n->mac, p->mac);
		return dr_port_xmit(p, m);
	case DR_NEIGH_INCOMPLETE:
		queue_add(p, n, m);
		return 0;
	default:
		rte_pktmbuf_free(m);
		return -EHOSTUNREACH;
	}
}

int dr_neigh_output(struct dr_port *p, uint32_t nexthop, struct rte_mbuf *m)
{
	uint8_t k[16];

	key4(k, nexthop);
	return neigh_output(p, k, m);
}

static int neigh_resolve(struct dr_port *p, const uint8_t ip[16], uint8_t mac[6])
{
	struct dr_neigh *n = neigh_use(p, ip);

	if (!n)
		return -ENOBUFS;
	switch (n->state) {
	case DR_NEIGH_REACHABLE:
	case DR_NEIGH_STALE:
	case DR_NEIGH_PROBE:
		memcpy(mac, n->mac, 6);
		return 0;
	case DR_NEIGH_INCOMPLETE:
		return -EAGAIN;
	default:
		return -EHOSTUNREACH;
	}
}

int dr_neigh_resolve(struct dr_port *p, uint32_t ip, uint8_t mac[6])
{
	uint8_t k[16];

	key4(k, ip);
	return neigh_resolve(p, k, mac);
}

static int neigh_suspect(struct dr_port *p, const uint8_t nexthop[16])
{
	struct dr_neigh *n = neigh_lookup(p, nexthop);

	/* nothing known, or a question already out: nothing to add */
	if (!n || (n->state != DR_NEIGH_REACHABLE && n->state != DR_NEIGH_STALE))
		return 0;
	dr_port_log(DR_PORT_LOG_DEBUG, "%s: neighbour %s suspected: probing", p->name,
		    ipstr(nexthop).s);
	p->stats.arp_suspected++;
	probe(p, n);
	return 1;
}

int dr_port_neigh_suspect(struct dr_port *p, uint32_t ip)
{
	/* the next hop, as send_mbuf() in port.c chooses it */
	uint32_t nexthop = (ip & p->netmask) == (p->ip & p->netmask) ? ip : p->gateway;
	uint8_t k[16];

	if (p->ipv6)
		return -EINVAL;
	if (ip == p->ip)
		return 0;
	if (!nexthop)
		return -ENETUNREACH;
	key4(k, nexthop);
	return neigh_suspect(p, k);
}

/* ---- IPv6 ----------------------------------------------------------------------------- */

static bool on_link6(const struct dr_port *p, const uint8_t a[16])
{
	unsigned bytes = p->prefix_len / 8, bits = p->prefix_len % 8;

	/* link-local peers are always on the link */
	if (dr_ipv6_is_link_local(a))
		return true;
	if (memcmp(a, p->ip6, bytes))
		return false;
	return !bits || !((a[bytes] ^ p->ip6[bytes]) & (0xff00 >> bits));
}

/* The next hop towards dst: dst on the link, else the gateway; NULL if
 * there is none. */
static const uint8_t *nexthop6(const struct dr_port *p, const uint8_t dst[16])
{
	if (on_link6(p, dst))
		return dst;
	return dr_ipv6_is_unspecified(p->gateway6) ? NULL : p->gateway6;
}

int dr_neigh_output6(struct dr_port *p, const uint8_t dst[16], struct rte_mbuf *m)
{
	const uint8_t *nh = nexthop6(p, dst);

	if (!nh) {
		rte_pktmbuf_free(m);
		return -ENETUNREACH;
	}
	return neigh_output(p, nh, m);
}

int dr_port_resolve6(struct dr_port *p, const uint8_t ip6[16], uint8_t mac[6])
{
	const uint8_t *nh;

	if (!p->ipv6)
		return -EINVAL;
	if (!memcmp(ip6, p->ip6, 16)) {
		memcpy(mac, p->mac, 6);
		return 0;
	}
	nh = nexthop6(p, ip6);
	if (!nh)
		return -ENETUNREACH;
	return neigh_resolve(p, nh, mac);
}

int dr_port_neigh_suspect6(struct dr_port *p, const uint8_t ip6[16])
{
	const uint8_t *nh;

	if (!p->ipv6)
		return -EINVAL;
	if (!memcmp(ip6, p->ip6, 16))
		return 0;
	nh = nexthop6(p, ip6);
	if (!nh)
		return -ENETUNREACH;
	return neigh_suspect(p, nh);
}

int dr_port6_check_config(const struct dr_port_config *cfg, struct dr_port_err *err)
{
	char s[INET6_ADDRSTRLEN];
	const uint8_t *a = cfg->ip6;

	inet_ntop(AF_INET6, a, s, sizeof(s));
	if (cfg->prefix_len < 1 || cfg->prefix_len > 128)
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_ADDR,
				    "prefix length %u: must be 1 to 128", cfg->prefix_len);
	/* ::, ::1, multicast, IPv4-mapped (a GID droce reads as IPv4) and
	 * link-local (a GID needs a scope nobody carries in a CM REQ) */
	if (dr_ipv6_is_unspecified(a) || dr_ipv6_is_multicast(a) || dr_ipv6_is_link_local(a) ||
	    key_is4(a) || (!memcmp(a, (const uint8_t[16]){0}, 15) && a[15] == 1))
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_ADDR,
				    "%s/%u is not a usable unicast (global or unique-local) IPv6 "
				    "address",
				    s, cfg->prefix_len);
	if (dr_ipv6_is_multicast(cfg->gateway6) || key_is4(cfg->gateway6))
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_ADDR,
				    "the IPv6 gateway is not a unicast address");
	return 0;
}

void dr_neigh_join_group(struct dr_port *p, const char *spec)
{
	struct ipv6_mreq mr;
	char iface[IF_NAMESIZE];
	int fd;

	if (!dr_port_packet_iface(spec, iface, sizeof(iface)))
		return;
	memset(&mr, 0, sizeof(mr));
	dr_ipv6_solicited_node(mr.ipv6mr_multiaddr.s6_addr, p->ip6);
	mr.ipv6mr_interface = if_nametoindex(iface);
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* the kernel programs the NIC's filter for the group (33:33:ff:..)
	 * and drops the membership when the socket closes (at exit too);
	 * net_af_packet has no all-multicast mode to do it instead */
	if (!mr.ipv6mr_interface || fd < 0 ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr)) < 0) {
		dr_port_log(DR_PORT_LOG_INFO,
			    "%s: cannot join the solicited-node group on %s (%s): solicitations "
			    "arrive only if the interface has joined it",
			    p->name, iface, strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	p->group_fd = fd;
}

/* A message that answers no question of ours, about n (NULL: no entry),
 * from ip at sha; request_for_us: an ARP request or ND solicitation for
 * our address, on_link: from a host on our link.  It may create an entry
 * or demote one, never move one. */
static void learn_unsolicited(struct dr_port *p, struct dr_neigh *n, const uint8_t ip[16],
			      const uint8_t sha[6], bool request_for_us, bool on_link,
			      const char *what)
{
	if (!n || n->state == DR_NEIGH_FAILED) {
		if (request_for_us && on_link) {
			if (!n)
				n = neigh_create(p, ip);
			if (n)
				learn_stale(p, n, sha);
		} else if (n) {
			p->stats.rx_arp_unsolicited++;
		} else if (!request_for_us) {
			p->stats.rx_arp_ignored++;
		}
		return;
	}
	if (n->state == DR_NEIGH_INCOMPLETE || !memcmp(sha, n->mac, 6)) {
		/* the reply to our request will come; the same MAC again,
		 * unasked, proves nothing (a copy of an old frame would do) */
		p->stats.rx_arp_unsolicited++;
		return;
	}
	dr_port_log(DR_PORT_LOG_DEBUG,
		    "%s: %s names %02x:%02x:%02x:%02x:%02x:%02x for %s"
		    " (%s at %02x:%02x:%02x:%02x:%02x:%02x): not taken",
		    p->name, what, sha[0], sha[1], sha[2], sha[3], sha[4], sha[5], ipstr(n->ip).s,
		    state_name[n->state], n->mac[0], n->mac[1], n->mac[2], n->mac[3], n->mac[4],
		    n->mac[5]);
	p->stats.arp_conflicts++;
	if (n->state == DR_NEIGH_REACHABLE) {
		/* NEIGH_UPDATE_F_WEAK_OVERRIDE: the old MAC stays, unconfirmed */
		dr_port_timer_cancel(&n->timer);
		set_state(p, n, DR_NEIGH_STALE);
	}
}

void dr_neigh_arp_input(struct dr_port *p, const void *frame, size_t len)
{
	struct dr_arp_msg a, r;
	enum dr_arp_verdict v;
	struct dr_neigh *n;
	const char *what;
	uint8_t k[16];
	bool for_us;

	if (p->ipv6) {
		/* an IPv6 port has no IPv4 address to resolve or answer for */
		p->stats.rx_arp_ignored++;
		return;
	}
	v = dr_arp_parse(frame, len, &a);
	if (v != DR_ARP_OK) {
		p->stats.rx_arp_bad++;
		dr_port_log(DR_PORT_LOG_DEBUG, "%s: ARP frame dropped: %s", p->name,
			    dr_arp_verdict_str(v));
		return;
	}
	if (memcmp(a.eth_dst, p->mac, 6) && memcmp(a.eth_dst, mac_bcast, 6)) {
		p->stats.rx_arp_ignored++;
		return;
	}
	if (a.spa == p->ip) {
		/* someone else claims our address: say so, learn nothing */
		dr_port_log(DR_PORT_LOG_WARN,
			    "%s: address conflict: " IP4_FMT
			    " is also claimed by %02x:%02x:%02x:%02x:%02x:%02x",
			    p->name, IP4_ARGS(a.spa), a.sha[0], a.sha[1], a.sha[2], a.sha[3],
			    a.sha[4], a.sha[5]);
		p->stats.rx_arp_ignored++;
		return;
	}
	for_us = a.tpa == p->ip;
	what = a.op == DR_ARP_OP_REQUEST ? "ARP request" : "ARP reply";
	key4(k, a.spa);
	if (!a.spa) {
		/* 0.0.0.0: an RFC 5227 probe, nothing to learn */
		if (!for_us)
			p->stats.rx_arp_ignored++;
	} else if ((n = neigh_lookup(p, k)) && a.op == DR_ARP_OP_REPLY && for_us &&
		   !memcmp(a.eth_dst, p->mac, 6) &&
		   (n->state == DR_NEIGH_INCOMPLETE || n->state == DR_NEIGH_PROBE)) {
		/* an answer to our question -- unless we asked one MAC and
		 * another answers */
		if (n->state == DR_NEIGH_PROBE && n->ucast && memcmp(a.sha, n->mac, 6))
			learn_unsolicited(p, n, k, a.sha, false, false, what);
		else
			confirm(p, n, a.sha);
	} else {
		learn_unsolicited(p, n, k, a.sha, for_us && a.op == DR_ARP_OP_REQUEST,
				  (a.spa & p->netmask) == (p->ip & p->netmask), what);
	}
	if (for_us && a.op == DR_ARP_OP_REQUEST) {
		dr_arp_reply(&r, &a, p->mac);
		arp_send(p, &r);
	}
}

bool dr_neigh_nd_input(struct dr_port *p, const void *frame, size_t len)
{
	const struct dr_eth_hdr *eth = frame;
	struct dr_nd_msg m, r;
	enum dr_nd_verdict v;
	struct dr_neigh *n;
	bool for_us;

	v = dr_nd_parse(frame, len, &m);
	if (v == DR_ND_NOT_ND)
		return false;
	p->stats.rx_nd++;
	if (v != DR_ND_OK) {
		p->stats.rx_nd_bad++;
		dr_port_log(DR_PORT_LOG_DEBUG, "%s: ND frame dropped: %s", p->name,
			    dr_nd_verdict_str(v));
		return true;
	}
	/* to our MAC or a group; a solicitation for us comes to our
	 * solicited-node group (multicast) or our address (a re-probe) */
	if (memcmp(eth->dst, p->mac, 6) && !(eth->dst[0] & 1)) {
		p->stats.rx_arp_ignored++;
		return true;
	}
	if (!memcmp(m.ip_src, p->ip6, 16)) {
		dr_port_log(DR_PORT_LOG_WARN,
			    "%s: address conflict: %s is also claimed by "
			    "%02x:%02x:%02x:%02x:%02x:%02x",
			    p->name, ipstr(m.ip_src).s, m.eth_src[0], m.eth_src[1], m.eth_src[2],
			    m.eth_src[3], m.eth_src[4], m.eth_src[5]);
		p->stats.rx_arp_ignored++;
		return true;
	}
	for_us = !memcmp(m.target, p->ip6, 16);
	if (m.type == DR_ICMP6_NS) {
		if (!for_us) {
			p->stats.rx_arp_ignored++;
			return true;
		}
		/* 7.2.3: a solicitor that gave its MAC is about to talk to
		 * us; :: (DAD) has nothing to learn */
		if (m.has_lla && !dr_ipv6_is_unspecified(m.ip_src))
			learn_unsolicited(p, neigh_lookup(p, m.ip_src), m.ip_src, m.lla, true,
					  on_link6(p, m.ip_src), "ND solicitation");
		dr_nd_advert(&r, &m, p->mac);
		nd_send(p, &r);
		return true;
	}
	/* an advertisement: about its target */
	n = neigh_lookup(p, m.target);
	if (n && (m.na_flags & DR_ND_NA_SOLICITED) && m.has_lla && !memcmp(eth->dst, p->mac, 6) &&
	    !memcmp(m.ip_dst, p->ip6, 16) &&
	    (n->state == DR_NEIGH_INCOMPLETE || n->state == DR_NEIGH_PROBE)) {
		if (n->state == DR_NEIGH_PROBE && n->ucast && memcmp(m.lla, n->mac, 6))
			learn_unsolicited(p, n, m.target, m.lla, false, false, "ND advertisement");
		else
			confirm(p, n, m.lla);
	} else if (m.has_lla) {
		learn_unsolicited(p, n, m.target, m.lla, false, false, "ND advertisement");
	} else {
		p->stats.rx_arp_ignored++;
	}
	return true;
}

int dr_neigh_announce(struct dr_port *p)
{
	struct dr_arp_msg a;

	if (p->ipv6) {
		/* RFC 4861 7.2.6: an unsolicited advertisement to all-nodes
		 * with Override, for peers holding an old MAC for us */
		static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
		struct dr_nd_msg na = {
		    .type = DR_ICMP6_NA, .na_flags = DR_ND_NA_OVERRIDE, .has_lla = true};

		memcpy(na.eth_src, p->mac, 6);
		dr_ipv6_mcast_mac(na.eth_dst, all_nodes);
		memcpy(na.ip_src, p->ip6, 16);
		memcpy(na.ip_dst, all_nodes, 16);
		memcpy(na.target, p->ip6, 16);
		memcpy(na.lla, p->mac, 6);
		return nd_send(p, &na);
	}

	/* RFC 5227 2.3: peers holding an old MAC for us update it now */
	dr_arp_request(&a, p->mac, p->ip, p->ip);
	return arp_send(p, &a);
}

int dr_neigh_init(struct dr_port *p)
{
	struct dr_port_arp_params *arp = &p->arp;
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters hp = {
	    .name = name,
	    .key_len = 16,
	    .hash_func = rte_jhash,
	    .socket_id = p->socket_id,
	};

	arp->tries = arp->tries ? arp->tries : DR_PORT_ARP_TRIES;
	arp->retry_ms = arp->retry_ms ? arp->retry_ms : DR_PORT_ARP_RETRY_MS;
	arp->probe_ms = arp->probe_ms ? arp->probe_ms : DR_PORT_ARP_PROBE_MS;
	arp->reachable_ms = arp->reachable_ms ? arp->reachable_ms : DR_PORT_ARP_REACHABLE_MS;
	arp->failed_ms = arp->failed_ms ? arp->failed_ms : DR_PORT_ARP_FAILED_MS;
	arp->queue_len = arp->queue_len ? arp->queue_len : DR_PORT_ARP_QUEUE_LEN;
	/* rte_hash wants at least one bucket (8 entries) */
	arp->entries = RTE_MAX(arp->entries ? arp->entries : DR_PORT_ARP_ENTRIES, 8u);
	if (arp->tries > 254) /* n->tries counts PROBE's unicast request too */
		arp->tries = 254;

	snprintf(name, sizeof(name), "drp%u_neigh", p->serial);
	hp.entries = arp->entries;
	p->neigh_hash = rte_hash_create(&hp);
	if (!p->neigh_hash)
		return -rte_errno;
	p->neigh = calloc(arp->entries, sizeof(*p->neigh));
	p->neigh_q = calloc((size_t)arp->entries * arp->queue_len, sizeof(*p->neigh_q));
	if (!p->neigh || !p->neigh_q)
		return -ENOMEM;
	for (unsigned i = 0; i < arp->entries; i++) {
		dr_port_timer_setup(&p->neigh[i].timer, p, neigh_timer, &p->neigh[i]);
		p->neigh[i].q = p->neigh_q + (size_t)i * arp->queue_len;
	}
	return 0;
}

void dr_neigh_fini(struct dr_port *p)
{
	if (p->neigh) {
		for (unsigned i = 0; i < p->arp.entries; i++)
			if (p->neigh[i].state != DR_NEIGH_FREE)
				neigh_delete(p, &p->neigh[i]);
	}
	rte_hash_free(p->neigh_hash);
	free(p->neigh);
	free(p->neigh_q);
	p->neigh_hash = NULL;
	p->neigh = NULL;
	p->neigh_last = NULL;
	p->neigh_q = NULL;
}
