// SPDX-License-Identifier: BSD-2-Clause
/*
 * The DPDK port: one ethdev, one rx and one tx queue, one IPv4 address.
 *
 * Open plugs the device (rte_dev_probe of a vdev or PCI spec, or
 * rte_eth_from_rings for an in-process pair), configures and starts it,
 * then sets up the neighbour table (port_neigh.c) and the capture
 * (port_capture.c).  dr_port_poll() is the whole receive side: one rx
 * burst, then the timers.  Sends copy the frame into an mbuf (or attach the
 * payload as an external buffer), fill in the MAC addresses from the
 * neighbour table and hand the mbuf to the device.
 *
 * Ownership of mbufs: every function that takes an mbuf consumes it, on
 * success and on failure alike.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <ifaddrs.h>
#include <arpa/inet.h>
#include <linux/filter.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_pci.h>
#include <rte_ring.h>

#include "port_priv.h"

#define DR_PORT_RXD	   512
#define DR_PORT_TXD	   512
/* Per-lcore mempool cache: half a TX ring.  A zero-copy frame takes three
 * mbufs and a burst returns them all at once; with 32, each burst
 * overflowed the cache into the pool's ring and the next one allocated
 * the ring's oldest, cold mbufs (the zero-config veth, 1 MiB writes:
 * 1,280 -> 1,470 MB/s, bench/PROFILE.md section 7). */
#define DR_PORT_MBUF_CACHE 256
#define DR_PORT_MIN_BUF	   4224 /* a 4096-PMTU RoCE frame with room to spare */
#define DR_PORT_LOOP_SIZE  512
#define DR_PORT_TX_TRIES   4 /* tx bursts tried before a frame waits in the backlog */
/* Resolution of the port's timers: rte_timer_alt_manage() runs at least
 * this often while polled, and at once when an earlier expiry is armed. */
#define DR_PORT_TIMER_RES_US 20
#define DR_PORT_TIMER_LATE_STEPS 50 /* of DR_PORT_TIMER_RES_US: timers wait for a full ring */
/* net_memif ring size (log2) unless the spec names one */
#define DR_MEMIF_RSIZE_LOG2 8
#define DR_PAIR_RING_SIZE  1024
#define DR_PAIR_NAME_MAX   16
#define DR_PORT_MIN_MTU	   576
#define DR_PORT_MAX_MTU	   9600
/* net_af_xdp: the kernel's XDP_PACKET_HEADROOM, left before each frame it
 * writes into a umem chunk, and the fill queue the PMD stocks with 2048 of
 * the pool's mbufs when it binds its socket (ETH_AF_XDP_DFLT_NUM_DESCS) */
#define DR_XDP_HEADROOM 256
#define DR_XDP_FILL	2048
/* net_af_xdp: the most PSNs a QP on the port leaves unacknowledged
 * (dr_port_max_window).  Set when frames built in mbufs outside the umem
 * were lost and held the frames behind them on the TX ring (fixed:
 * make_xdp_pool); since, the engine's 128 passed 16 droce-xfer sessions of
 * 16, and the stalls left under load hit 64 and 128 alike, unexplained:
 * kept until they are (issue 13, bench/PROFILE.md 7). */
#define DR_XDP_WINDOW 64

static unsigned port_serial;			     /* global lock */
static struct dr_port *port_by_id[RTE_MAX_ETHPORTS]; /* global lock */

/* Private area of an external-buffer mbuf (ext_pool): the shared info lives
 * in the mbuf itself, so it is valid when DPDK calls its free callback
 * (rte_pktmbuf_detach() runs it before the mbuf goes back to its pool). */
struct dr_extbuf {
	struct rte_mbuf_ext_shared_info shinfo;
	void (*done)(void *arg);
	void *arg;
};
#define DR_EXTBUF_PRIV RTE_ALIGN_CEIL(sizeof(struct dr_extbuf), RTE_MBUF_PRIV_ALIGN)
#define DR_EXT_ROOM    64 /* data room of ext_pool mbufs: trailers (pad + ICRC) */

static inline struct rte_mbuf *buf_mbuf(struct dr_port_buf *b)
{
	return (struct rte_mbuf *)b;
}

/* ---- in-process pairs ---------------------------------------------------------- */

/* Two ports joined back to back by two rings: ring[s] carries what side s
 * sends.  Rings are multi-producer, so that a test can put frames of a
 * third party on the link beside the port that sends into the ring
 * (tests/test_fi_msg.c), and multi-consumer, so that a closing end can
 * drain what the other has not read yet while that one may still be
 * polling.  A closed end's mempool
 * whose mbufs are not all back (the other end is using one right now) is
 * kept, and freed by a later open or close once they are. */
#define DR_PAIR_KEPT 8
struct dr_pair {
	struct dr_pair *next;
	char name[DR_PAIR_NAME_MAX + 1];
	unsigned serial;
	struct rte_ring *ring[2];
	struct dr_port *end[2];
	struct rte_mempool *kept[DR_PAIR_KEPT];
	unsigned nkept;
};

static struct dr_pair *pairs; /* global lock */

static void ring_drain(struct rte_ring *r)
{
	void *objs[DR_PORT_BURST];
	unsigned n;

	while ((n = rte_ring_dequeue_burst(r, objs, DR_PORT_BURST, NULL)) > 0)
		rte_pktmbuf_free_bulk((struct rte_mbuf **)objs, n);
}

static void pair_free(struct dr_pair *pr)
{
	struct dr_pair **pp;

	for (pp = &pairs; *pp; pp = &(*pp)->next)
		if (*pp == pr) {
			*pp = pr->next;
			break;
		}
	for (unsigned s = 0; s < 2; s++)
		if (pr->ring[s])
			ring_drain(pr->ring[s]);
	for (unsigned i = 0; i < pr->nkept; i++)
		rte_mempool_free(pr->kept[i]);
	for (unsigned s = 0; s < 2; s++)
		rte_ring_free(pr->ring[s]);
	free(pr);
}

/* Free the kept pools whose mbufs are all back: no one can hold one then
 * (the rings were drained and the end that fed them is closed). */
static void pair_sweep(struct dr_pair *pr)
{
	unsigned i = 0;

	while (i < pr->nkept) {
		if (rte_mempool_in_use_count(pr->kept[i])) {
			i++;
			continue;
		}
		rte_mempool_free(pr->kept[i]);
		pr->kept[i] = pr->kept[--pr->nkept];
	}
}

static void pair_keep(struct dr_pair *pr, struct rte_mempool *mp)
{
	if (!mp)
		return;
	if (pr->nkept == DR_PAIR_KEPT) {
		dr_port_log(DR_PORT_LOG_WARN, "pair %s: %u mbufs of %s still in use, pool leaked",
			    pr->name, rte_mempool_in_use_count(mp), mp->name);
		return;
	}
	pr->kept[pr->nkept++] = mp;
}

static int pair_get(const char *spec, struct dr_pair **out, unsigned *side, struct dr_port_err *err)
{
	const char *name = spec + strlen("pair:");
	const char *colon = strrchr(name, ':');
	size_t len = colon ? (size_t)(colon - name) : 0;
	struct dr_pair *pr;
	char rname[RTE_RING_NAMESIZE];

	if (!colon || len == 0 || len > DR_PAIR_NAME_MAX ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz"
			 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != len ||
	    (strcmp(colon, ":0") && strcmp(colon, ":1")))
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_DEVICE,
				    "bad pair device '%s': expected pair:NAME:0 or pair:NAME:1, "
				    "NAME of 1 to %d letters, digits, '_' or '-'",
				    spec, DR_PAIR_NAME_MAX);
	*side = colon[1] - '0';
	for (pr = pairs; pr; pr = pr->next)
		if (strlen(pr->name) == len && !strncmp(pr->name, name, len))
			break;
	if (!pr) {
		pr = calloc(1, sizeof(*pr));
		if (!pr)
			return dr_port_fail(err, -ENOMEM, DR_PORT_PARAM_NONE, "out of memory");
		memcpy(pr->name, name, len);
		pr->serial = port_serial++;
		for (unsigned s = 0; s < 2; s++) {
			snprintf(rname, sizeof(rname), "drpair%u_%u", pr->serial, s);
			pr->ring[s] =
			    rte_ring_create(rname, DR_PAIR_RING_SIZE, SOCKET_ID_ANY, 0);
			if (!pr->ring[s]) {
				int e = rte_errno;

				pair_free(pr);
				return dr_port_fail(err, -e, DR_PORT_PARAM_NONE,
						    "cannot create ring %s: %s (EAL memory: -m)",
						    rname, rte_strerror(e));
			}
		}
		pr->next = pairs;
		pairs = pr;
	}
	if (pr->end[*side])
		return dr_port_fail(err, -EBUSY, DR_PORT_PARAM_DEVICE,
				    "device '%s' is already open", spec);
	pair_sweep(pr);
	*out = pr;
	return 0;
}

/* Undo pair_get() for an end that never opened. */
static void pair_put_unused(struct dr_pair *pr)
{
	if (!pr->end[0] && !pr->end[1] && !pr->nkept)
		pair_free(pr);
}

/* An end closes (its ethdev is gone): drain both rings - frames for it
 * nobody will read, and its own the peer has not read - and free its
 * pools, or keep them while the peer still uses one of their mbufs. */
static void pair_release(struct dr_port *p)
{
	struct dr_pair *pr = p->pair;

	pr->end[p->pair_side] = NULL;
	ring_drain(pr->ring[0]);
	ring_drain(pr->ring[1]);
	pair_keep(pr, p->pool);
	pair_keep(pr, p->ext_pool);
	p->pool = p->ext_pool = NULL;
	if (!pr->end[0] && !pr->end[1])
		pair_free(pr);
	else
		pair_sweep(pr);
	p->pair = NULL;
}

/* ---- device plug / unplug ------------------------------------------------------- */

static int plug_pair(struct dr_port *p, const char *spec, struct dr_port_err *err)
{
	struct dr_pair *pr = NULL;
	char name[32], msg[256];
	unsigned s = 0;
	int ret;

	ret = pair_get(spec, &pr, &s, err);
	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "drpair%u_%u", pr->serial, s);
	dr_port_dpdk_err_clear();
	ret = rte_eth_from_rings(name, &pr->ring[!s], 1, &pr->ring[s], 1, SOCKET_ID_ANY);
	if (ret < 0) {
		pair_put_unused(pr);
		return dr_port_fail(
		    err, -ENODEV, DR_PORT_PARAM_DEVICE, "cannot create net_ring port for '%s': %s",
		    spec, *dr_port_dpdk_err(msg, sizeof(msg)) ? msg : rte_strerror(rte_errno));
	}
	p->port_id = ret;
	p->pair = pr;
	p->pair_side = s;
	pr->end[s] = p;
	return 0;
}

/* The ethdev of a spec, by name: a vdev's is the part before the first
 * comma, a PCI device's its address in full form (0000:03:00.0). */
static int find_port(const char *spec, bool pci, uint16_t *port_id)
{
	char name[RTE_ETH_NAME_MAX_LEN];
	struct rte_pci_addr addr;

	snprintf(name, sizeof(name), "%.*s", (int)strcspn(spec, ","), spec);
	if (pci && rte_pci_addr_parse(name, &addr) == 0)
		rte_pci_device_name(&addr, name, sizeof(name));
	return rte_eth_dev_get_port_by_name(name, port_id);
}

/*
 * net_af_packet's kernel ring takes frames of 2048 bytes unless told
 * otherwise (framesz); for a larger MTU the spec gets a frame and block
 * size that holds a whole frame with the TPACKET header, unless it names
 * its own.  net_memif's buffers are 2048 bytes unless told otherwise
 * (bsize); a longer frame is chained over several, which DPDK 22.11's
 * memif handles badly (small frames that follow bulk transfers of
 * chained ones are lost: an 8-byte message rate falls from 2.5 M/s to
 * 64 k/s in bench/), so the spec gets a buffer size that holds a whole
 * frame, and a ring of 2^DR_MEMIF_RSIZE_LOG2 descriptors.  An af_packet
 * spec that does not choose qdisc_bypass gets the port's setting.  Other
 * specs are used as given.
 */
static const char *spec_for_mtu(struct dr_port *p, const char *spec, char *buf, size_t len)
{
	size_t frame = p->mtu + sizeof(struct dr_eth_hdr) + sizeof(struct dr_vlan_hdr);
	char qd[32] = "", fs[64] = "";
	unsigned n = 4096;

	if (!strncmp(spec, "net_memif", 9)) {
		char bsize[32] = "", rsize[16] = "";

		if (!strstr(spec, "bsize=") && frame > 2048) {
			while (n < frame)
				n *= 2;
			snprintf(bsize, sizeof(bsize), ",bsize=%u", n);
		}
		/* 256 descriptors rather than 1024: twice a QP's window, and
		 * the rings stay in cache (1 MiB writes: 5.5 -> 6.5 GB/s) */
		if (!strstr(spec, "rsize="))
			snprintf(rsize, sizeof(rsize), ",rsize=%u", DR_MEMIF_RSIZE_LOG2);
		if ((size_t)snprintf(buf, len, "%s%s%s", spec, bsize, rsize) >= len)
			return spec;
		return buf;
	}
	/* net_af_xdp's default busy polling (busy_budget=64) sets
	 * SO_PREFER_BUSY_POLL: the kernel then leaves the interface's NAPI
	 * to our recvfrom() calls, one per empty poll, instead of running it
	 * as frames arrive; over a veth an 8-byte ping-pong took 278 us a
	 * round trip that way, 24 us without */
	if (!strncmp(spec, "net_af_xdp", 10)) {
		if (strstr(spec, "busy_budget=") ||
		    (size_t)snprintf(buf, len, "%s,busy_budget=0", spec) >= len)
			return spec;
		return buf;
	}
	if (strncmp(spec, "net_af_packet", 13))
		return spec;
	/* DPDK's af_packet sends past the qdisc layer by default
	 * (PACKET_QDISC_BYPASS), and so past the kernel's packet taps: a
	 * capture on the interface would hold only what droce receives.
	 * Through it, tcpdump sees both directions, as with rdma_rxe. */
	if (!strstr(spec, "qdisc_bypass="))
		snprintf(qd, sizeof(qd), ",qdisc_bypass=%d", p->qdisc_bypass);
	if (!strstr(spec, "framesz=") && frame + 128 > 2048) {
		while (n < frame + 128)
			n *= 2;
		snprintf(fs, sizeof(fs), ",framesz=%u,blocksz=%u", n, n);
	}
	if ((size_t)snprintf(buf, len, "%s%s%s", spec, qd, fs) >= len)
		return spec;
	/* the PMD wants a whole ring frame to fit in one mbuf */
	if (*fs)
		p->min_buf = n;
	return buf;
}

static int plug(struct dr_port *p, const char *spec, struct dr_port_err *err)
{
	char msg[256], sized[512];
	uint16_t id;
	bool pci;
	int ret;

	if (!spec || !*spec)
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_DEVICE, "no DPDK device given");
	if (!strncmp(spec, "pair:", 5))
		return plug_pair(p, spec, err);
	if (!strncmp(spec, "packet:", 7))
		return dr_pk_plug(p, spec, p->gso, p->pk_mac, err);
	pci = dr_port_spec_is_pci(spec);
	if (pci && !rte_eal_has_pci())
		return dr_port_fail(err, -ENODEV, DR_PORT_PARAM_DEVICE,
				    "PCI device '%s': DPDK was started without PCI (--no-pci) "
				    "for an earlier virtual device; open the PCI port first, or "
				    "give -a <address> in the EAL arguments",
				    spec);
	if (!pci && strncmp(spec, "net_", 4))
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_DEVICE,
				    "unknown device '%s': expected a DPDK vdev (net_af_packet0,"
				    "iface=eth0 / net_memif0,... / net_tap0 / net_pcap0,... / "
				    "net_ring0), a PCI address, packet:IFNAME, or pair:NAME:0|1",
				    spec);
	/* Look before probing: rte_dev_probe() of a device that is already
	 * plugged logs an error but returns 0 (22.11, for the sake of
	 * secondary processes), and we must not take over - and later
	 * remove - a device someone else plugged. */
	if (find_port(spec, pci, &id) == 0) {
		if (port_by_id[id])
			return dr_port_fail(err, -EBUSY, DR_PORT_PARAM_DEVICE,
					    "device '%s' is already open", spec);
		/* created by EAL at start-up (-a, or --vdev in the EAL
		 * arguments): used, and removed at close, like our own */
		dr_port_log(DR_PORT_LOG_INFO, "using DPDK device %.*s, created by EAL",
			    (int)strcspn(spec, ","), spec);
		p->port_id = id;
		return 0;
	}
	dr_port_dpdk_err_clear();
	ret = rte_dev_probe(spec_for_mtu(p, spec, sized, sizeof(sized)));
	if (ret < 0) {
		/* rte_dev_probe returns -errno, or -1 from some PMD probes */
		ret = ret < -1 ? ret : -ENODEV;
		dr_port_dpdk_err(msg, sizeof(msg));
		return dr_port_fail(err, ret, DR_PORT_PARAM_DEVICE,
				    "cannot create DPDK device '%s': %s%s", spec,
				    *msg ? msg : strerror(-ret),
				    !strncmp(spec, "net_memif", 9) && strstr(msg, "in use")
					? " (DPDK 22.11's memif keeps an abstract listening socket "
					  "bound after its device closes: a server cannot be "
					  "re-created in the same process unless both sides use "
					  "socket-abstract=no)"
					: "");
	}
	if (find_port(spec, pci, &id) != 0) {
		char name[RTE_DEV_NAME_MAX_LEN];

		snprintf(name, sizeof(name), "%.*s", (int)strcspn(spec, ","), spec);
		rte_eal_hotplug_remove(pci ? "pci" : "vdev", name);
		return dr_port_fail(err, -ENODEV, DR_PORT_PARAM_DEVICE,
				    "DPDK device '%s' has no Ethernet port", spec);
	}
	p->port_id = id;
	return 0;
}

/* ---- kernel interplay (net_af_packet) ----------------------------------------------
 *
 * net_af_packet reads and writes a kernel interface through a packet socket.
 * The kernel keeps running its own stack on that interface: every frame
 * droce receives, the kernel receives too.  When the interface also holds
 * our IPv4 address in the kernel (the default set-up: droce uses the
 * address the interface already has), the kernel's UDP layer finds no
 * socket on port 4791 for each RoCE datagram and answers it with an ICMP
 * port-unreachable - to the peer, which may count errors or, with rdma_rxe,
 * tear the connection down.  So while the port is open we hold a kernel UDP
 * socket bound to <our address>:4791 with a socket filter that drops
 * everything: the kernel delivers each datagram to it, the filter discards
 * it, and nothing is answered.  If 4791 is already bound on the host (the
 * rdma_rxe module binds it while an rxe device exists), we cannot, and we
 * say so: the kernel then processes droce's traffic itself.  Several droce
 * processes on one interface each hold such a socket, with SO_REUSEPORT
 * (which the processes of one user may share, and which a socket bound
 * without it, like rdma_rxe's, refuses): the port stays held, and the
 * kernel quiet, for as long as any of them lives.  The kernel also
 * answers ARP for the address, with the interface's MAC - the MAC the
 * af_packet port reports - so its answers and ours agree.  With an address
 * the kernel does not hold, none of this applies: the kernel drops frames
 * for foreign addresses silently.  (Not covered by the tests: af_packet
 * needs CAP_NET_RAW.)
 */
static void kernel_hold(struct dr_port *p, const char *spec)
{
	static struct sock_filter drop_all = BPF_STMT(BPF_RET | BPF_K, 0);
	struct sock_fprog prog = {.len = 1, .filter = &drop_all};
	struct sockaddr_in sin = {
	    .sin_family = AF_INET,
	    .sin_port = htons(DR_ROCE_UDP_PORT),
	    .sin_addr.s_addr = htonl(p->ip),
	};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(DR_ROCE_UDP_PORT)};
	struct ifaddrs *ifa, *i;
	char iface[64];
	bool held = false;
	int fd, one = 1;

	if (!dr_port_packet_iface(spec, iface, sizeof(iface)))
		return;
	if (getifaddrs(&ifa) < 0)
		return;
	memcpy(&sin6.sin6_addr, p->ip6, 16);
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == (p->ipv6 ? AF_INET6 : AF_INET) &&
		    !strcmp(i->ifa_name, iface) &&
		    (p->ipv6
			 ? !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, p->ip6, 16)
			 : ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == htonl(p->ip)))
			held = true;
	freeifaddrs(ifa);
	if (!held) {
		dr_port_kfilter_open(p, iface);
		return;
	}

	fd = socket(p->ipv6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    (p->ipv6 ? bind(fd, (struct sockaddr *)&sin6, sizeof(sin6))
		     : bind(fd, (struct sockaddr *)&sin, sizeof(sin))) < 0) {
		dr_port_log(DR_PORT_LOG_WARN,
			    "%s: cannot hold UDP port %u on %s in the kernel (%s%s): the kernel "
			    "will answer RoCE traffic to this address itself",
			    p->name, DR_ROCE_UDP_PORT, iface, strerror(errno),
			    errno == EADDRINUSE ? "; is rdma_rxe using it?" : "");
		if (fd >= 0)
			close(fd);
		return;
	}
	p->kernel_fd = fd;
	dr_port_log(DR_PORT_LOG_INFO,
		    "%s: holding UDP port %u on %s so the kernel does not answer with ICMP",
		    p->name, DR_ROCE_UDP_PORT, iface);
	/* not where the bind failed: a kernel user of 4791 (rdma_rxe) would
	 * lose its traffic */
	dr_port_kfilter_open(p, iface);
}

/* ---- open / close ------------------------------------------------------------------ */

static int check_config(const struct dr_port_config *cfg, struct dr_port_err *err)
{
	uint32_t mask, ip = cfg->ip4;
	unsigned mtu = cfg->mtu ? cfg->mtu : DR_PORT_DEF_MTU;
	int ret;

	if (cfg->ipv6) {
		ret = dr_port6_check_config(cfg, err);
		if (ret < 0)
			return ret;
		goto mtu;
	}
	if (cfg->prefix_len < 1 || cfg->prefix_len > 32)
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_ADDR,
				    "prefix length %u: must be 1 to 32", cfg->prefix_len);
	mask = cfg->prefix_len == 32 ? ~0u : ~(~0u >> cfg->prefix_len);
	if (ip == 0 || (ip >> 24) == 127 || (ip >> 28) >= 14 ||
	    (cfg->prefix_len < 31 && ((ip & ~mask) == 0 || (ip & ~mask) == ~mask)))
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_ADDR,
				    "%u.%u.%u.%u/%u is not a usable unicast host address", ip >> 24,
				    (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, cfg->prefix_len);
	if (cfg->gateway4 && (cfg->gateway4 & mask) != (ip & mask))
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_ADDR,
				    "gateway is not in the port's subnet");
mtu:
	if (mtu < DR_PORT_MIN_MTU || mtu > DR_PORT_MAX_MTU)
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_MTU, "MTU %u: must be %u to %u",
				    mtu, DR_PORT_MIN_MTU, DR_PORT_MAX_MTU);
	return 0;
}

/*
 * net_af_xdp makes the port's pool its umem: each mbuf object is one umem
 * chunk (header, mbuf, headroom, data room), and the kernel takes a chunk
 * larger than a page only from hugepages, which droce's EAL does not use
 * (--no-huge): setsockopt(XDP_UMEM_REG) fails with EINVAL.  So the data
 * room is the largest whose object fits a page, and the frame it can carry
 * is that, less the headroom the kernel keeps before what it writes: 3456
 * bytes with 4 KiB pages, an MTU of 3438, path MTU 2048.  A larger MTU
 * (the interface's, or FI_DROCE_MTU) is lowered to what fits, and said.
 */
static unsigned af_xdp_room(void)
{
	unsigned page = (unsigned)getpagesize(), room;

	for (room = page; room > DR_XDP_HEADROOM; room -= RTE_CACHE_LINE_SIZE)
		if (rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + RTE_PKTMBUF_HEADROOM + room,
					      0, NULL) <= page)
			return room;
	return 0;
}

unsigned dr_port_af_xdp_mtu(void)
{
	return af_xdp_room() - DR_XDP_HEADROOM - sizeof(struct dr_eth_hdr) -
	       sizeof(struct dr_vlan_hdr);
}

static void af_xdp_fit(struct dr_port *p)
{
	unsigned room = af_xdp_room(), mtu = dr_port_af_xdp_mtu();

	p->xdp_room = room;
	if (p->mtu <= mtu)
		return;
	dr_port_log(DR_PORT_LOG_WARN,
		    "%s: net_af_xdp carries frames of at most %u bytes here (an mbuf must fit "
		    "one %d-byte umem page without hugepages): MTU %u lowered to %u, path MTU "
		    "%u; use net_af_packet for a larger path MTU",
		    p->name, room - DR_XDP_HEADROOM, getpagesize(), p->mtu, mtu,
		    dr_port_pmtu_of(mtu));
	p->mtu = mtu;
	p->max_frame = p->mtu + sizeof(struct dr_eth_hdr) + sizeof(struct dr_vlan_hdr);
}

static struct rte_mempool *make_pool(struct dr_port *p, const char *what, unsigned n, unsigned priv,
				     unsigned room, struct dr_port_err *err)
{
	char name[RTE_MEMPOOL_NAMESIZE];
	struct rte_mempool *mp;

	snprintf(name, sizeof(name), "drp%u_%s", p->serial, what);
	mp = rte_pktmbuf_pool_create(name, n, DR_PORT_MBUF_CACHE, priv, room, p->socket_id);
	if (!mp)
		dr_port_fail(err, -rte_errno, DR_PORT_PARAM_NONE,
			     "cannot create mempool %s (%u mbufs of %u bytes): %s; give DPDK "
			     "more memory (-m in the EAL arguments)",
			     name, n, room, rte_strerror(rte_errno));
	return mp;
}

/* The highest address of any object of mp (rte_mempool_obj_iter callback). */
static void obj_end(struct rte_mempool *mp, void *arg, void *obj, unsigned idx)
{
	uintptr_t *end = arg, e = (uintptr_t)obj + mp->elt_size + mp->trailer_size;

	(void)idx;
	if (e > *end)
		*end = e;
}

/* A mempool's memory chunk in a memzone of its own goes with it. */
static void memzone_free(struct rte_mempool_memhdr *mh, void *mz)
{
	(void)mh;
	rte_memzone_free(mz);
}

/*
 * net_af_xdp (DPDK 22.11, xdp_umem_configure) registers as its umem
 * populated_size times rte_mempool_calc_obj_size() bytes from the page of
 * the pool's first memory chunk: it takes the objects to be packed from
 * there.  Without hugepages a mempool lets no object cross a page, so
 * rte_pktmbuf_pool_create()'s 4032-byte objects lie one per page, from the
 * first page boundary of a chunk that starts at a cache line, and the last
 * 128 of 8191 lie beyond the umem.  The kernel takes a frame in one of them
 * as an invalid TX descriptor: it drops it, skips one such descriptor per
 * sendto() (which returns 0, so the PMD stops kicking) and leaves the
 * frames queued behind it on the ring until droce's next transmit; it
 * discards such fill-queue entries too (bench/PROFILE.md 7).  So the frames
 * pool of an af_xdp port has objects of exactly one page (unspread, the
 * data room where af_xdp_room() put it, the rest of the page the mbuf's
 * private area, unused) in a page-aligned memzone of its own, and is
 * checked against what the PMD registers.
 */
static struct rte_mempool *make_xdp_pool(struct dr_port *p, unsigned n, unsigned room,
					 struct dr_port_err *err)
{
	struct rte_pktmbuf_pool_private priv = {0};
	unsigned page = (unsigned)getpagesize(), elt = sizeof(struct rte_mbuf) + room;
	uint32_t size = rte_mempool_calc_obj_size(elt, RTE_MEMPOOL_F_NO_SPREAD, NULL);
	char name[RTE_MEMPOOL_NAMESIZE], mzname[RTE_MEMZONE_NAMESIZE];
	const struct rte_memzone *mz;
	struct rte_mempool_memhdr *mh;
	uintptr_t base, end = 0;
	struct rte_mempool *mp;
	size_t umem;
	int ret;

	snprintf(name, sizeof(name), "drp%u_frames", p->serial);
	if (size > page || (page - size) % RTE_MBUF_PRIV_ALIGN) {
		dr_port_fail(err, -EINVAL, DR_PORT_PARAM_NONE,
			     "%s: net_af_xdp: %u-byte mbufs do not make one %u-byte umem page",
			     p->name, size, page);
		return NULL;
	}
	priv.mbuf_priv_size = page - size;
	priv.mbuf_data_room_size = room;
	mp = rte_mempool_create_empty(name, n, elt + priv.mbuf_priv_size, DR_PORT_MBUF_CACHE,
				      sizeof(priv), p->socket_id, RTE_MEMPOOL_F_NO_SPREAD);
	if (!mp) {
		ret = -rte_errno;
		goto out_no_pool;
	}
	ret = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (ret < 0)
		goto out_free_pool;
	rte_pktmbuf_pool_init(mp, &priv);
	/* from a page boundary: populate_default's memzone starts at a
	 * cache line, 1152 bytes into a page here */
	snprintf(mzname, sizeof(mzname), "drp%u_umem", p->serial);
	mz = rte_memzone_reserve_aligned(mzname, (size_t)n * page, p->socket_id, 0, page);
	if (!mz) {
		ret = -rte_errno;
		goto out_free_pool;
	}
	ret = rte_mempool_populate_virt(mp, mz->addr, mz->len, page, memzone_free, (void *)mz);
	if (ret < 0) {
		rte_memzone_free(mz);
		goto out_free_pool;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	rte_mempool_obj_iter(mp, obj_end, &end);
	/* what the PMD registers: from the first chunk's page, this many */
	mh = STAILQ_FIRST(&mp->mem_list);
	base = RTE_ALIGN_FLOOR((uintptr_t)mh->addr, (uintptr_t)page);
	umem =
	    (size_t)mp->populated_size * rte_mempool_calc_obj_size(mp->elt_size, mp->flags, NULL) +
	    ((uintptr_t)mh->addr - base);
	if (end - base > umem) {
		dr_port_fail(err, -EINVAL, DR_PORT_PARAM_NONE,
			     "%s: net_af_xdp: pool %s spans %zu bytes in %u chunks, more than "
			     "the %zu of its umem",
			     p->name, name, (size_t)(end - base), mp->nb_mem_chunks, umem);
		rte_mempool_free(mp);
		return NULL;
	}
	dr_port_log(DR_PORT_LOG_INFO,
		    "%s: net_af_xdp: its umem (%zu bytes) holds all %u mbufs of %s", p->name, umem,
		    mp->populated_size, name);
	return mp;
out_free_pool:
	rte_mempool_free(mp);
out_no_pool:
	dr_port_fail(err, ret, DR_PORT_PARAM_NONE,
		     "cannot create mempool %s (%u mbufs of %u bytes): %s; give DPDK more memory "
		     "(-m in the EAL arguments)",
		     name, n, room, rte_strerror(-ret));
	return NULL;
}

static int create_pools(struct dr_port *p, unsigned nb_mbufs, struct dr_port_err *err)
{
	size_t room = RTE_MAX(p->max_frame, (size_t)DR_PORT_MIN_BUF);

	if (room < p->min_buf)
		room = p->min_buf;
	if (p->xdp_room)
		room = p->xdp_room;

	p->buf_size = RTE_ALIGN_CEIL(room, RTE_CACHE_LINE_SIZE);
	p->pool = p->xdp_room ? make_xdp_pool(p, nb_mbufs, RTE_PKTMBUF_HEADROOM + p->buf_size, err)
			      : make_pool(p, "frames", nb_mbufs, 0,
					  RTE_PKTMBUF_HEADROOM + p->buf_size, err);
	if (!p->pool)
		return err ? err->err : -ENOMEM;
	p->ext_pool = make_pool(p, "ext", nb_mbufs, DR_EXTBUF_PRIV, DR_EXT_ROOM, err);
	if (!p->ext_pool)
		return err ? err->err : -ENOMEM;
	return 0;
}

static int configure_device(struct dr_port *p, const struct rte_eth_dev_info *info,
			    struct dr_port_err *err);

static int start_device(struct dr_port *p, unsigned nb_mbufs, struct dr_port_err *err)
{
	struct rte_eth_dev_info info;
	int ret;

	ret = rte_eth_dev_info_get(p->port_id, &info);
	if (ret < 0)
		return dr_port_fail(err, ret, DR_PORT_PARAM_DEVICE, "%s: no device info: %s",
				    p->name, strerror(-ret));
	p->socket_id = rte_eth_dev_socket_id(p->port_id);
	if (p->socket_id < 0)
		p->socket_id = SOCKET_ID_ANY;
	if (p->mtu > info.max_mtu || p->mtu < info.min_mtu)
		return dr_port_fail(err, -EINVAL, DR_PORT_PARAM_MTU,
				    "%s: MTU %u is outside what the device takes (%u to %u)",
				    p->name, p->mtu, info.min_mtu, info.max_mtu);
	p->tx_multiseg = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* a NIC would DMA the payload, and only DPDK memory is mapped for it:
	 * zero copy on virtual devices only */
	p->zero_copy = p->tx_multiseg && info.device &&
		       strcmp(rte_bus_name(rte_dev_bus(info.device)), "vdev") == 0;
	/* PMDs that copy every frame out before rte_eth_tx_burst returns;
	 * net_ring (and memif's own zero-copy mode) pass the mbuf on */
	if (p->zero_copy && info.driver_name) {
		const struct rte_devargs *da = rte_dev_devargs(info.device);
		bool memif = !strcmp(info.driver_name, "net_memif");

		p->zc_sync = memif || !strcmp(info.driver_name, "net_af_packet") ||
			     !strcmp(info.driver_name, "net_tap") ||
			     !strcmp(info.driver_name, "net_pcap");
		if (memif && da && da->args && strstr(da->args, "zero-copy=yes"))
			p->zc_sync = false;
	}
	/* by the driver, whatever the spec called the device */
	p->max_window =
	    info.driver_name && !strcmp(info.driver_name, "net_af_xdp") ? DR_XDP_WINDOW : 0;
	p->lossless =
	    !p->pk && info.driver_name &&
	    (!strcmp(info.driver_name, "net_memif") || !strcmp(info.driver_name, "net_ring"));
	/* dr_pk_tx: the kernel has copied what it took when it returns, but
	 * QPs build their frames whole in pool buffers (dr_pkt_build copies
	 * the payload in the pass that computes its ICRC) rather than attach
	 * payloads: the kernel copied a super-frame gathered from three
	 * pieces a packet (BTH, payload, ICRC) at a third of the speed of one
	 * contiguous run, and one piece a packet moved 1 MiB writes 10-20 %
	 * faster over a veth (bench/PROFILE.md section 7, "Stop 31") */
	if (p->pk)
		p->zc_sync = false;
	p->tx_syscall = p->pk || (info.driver_name && (!strcmp(info.driver_name, "net_af_packet") ||
						       !strcmp(info.driver_name, "net_af_xdp") ||
						       !strcmp(info.driver_name, "net_tap") ||
						       !strcmp(info.driver_name, "net_pcap")));
	if (p->max_window)
		dr_port_log(DR_PORT_LOG_INFO,
			    "%s: net_af_xdp: QPs on this port leave at most %u PSNs unacknowledged",
			    p->name, p->max_window);
	ret = create_pools(p, nb_mbufs, err);
	if (ret < 0)
		return ret;
	return configure_device(p, &info, err);
}

/* Configure the queues on the port's pools, start the device.  Also what
 * re-creates a device after a link fault (device_recreate). */
static int configure_device(struct dr_port *p, const struct rte_eth_dev_info *info,
			    struct dr_port_err *err)
{
	struct rte_eth_conf conf = {0};
	struct rte_eth_txconf txconf;
	uint16_t nb_rxd = DR_PORT_RXD, nb_txd = DR_PORT_TXD;
	char msg[256];
	int ret;

	/* net_af_xdp: a receive ring as deep as the fill queue, so that a
	 * window of frames arriving between two polls is not dropped */
	if (p->xdp_room)
		nb_rxd = DR_XDP_FILL;

	/*
	 * Virtual devices report the 1518-byte Ethernet maximum whatever
	 * they carry (af_packet's kernel ring takes framesz, memif chains
	 * buffers): configure them at that and keep our MTU in our own
	 * buffers, which hold p->max_frame.  A NIC gets our MTU.
	 */
	conf.rxmode.mtu = p->mtu;
	if (info->max_rx_pktlen && info->device &&
	    !strcmp(rte_bus_name(rte_dev_bus(info->device)), "vdev") &&
	    p->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN > info->max_rx_pktlen) {
		conf.rxmode.mtu = info->max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
		dr_port_log(DR_PORT_LOG_INFO,
			    "%s: device reports frames up to %u bytes; MTU %u is carried in "
			    "droce's own buffers",
			    p->name, info->max_rx_pktlen, p->mtu);
	}
	if (p->tx_multiseg)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (p->buf_size < p->max_frame && (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER))
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
	dr_port_dpdk_err_clear();
	ret = rte_eth_dev_configure(p->port_id, 1, 1, &conf);
	if (ret < 0)
		goto out_dev_err;
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &nb_rxd, &nb_txd);
	if (ret < 0)
		goto out_dev_err;
	ret = rte_eth_rx_queue_setup(p->port_id, 0, nb_rxd, p->socket_id, NULL, p->pool);
	if (ret < 0)
		goto out_dev_err;
	txconf = info->default_txconf;
	txconf.offloads = conf.txmode.offloads;
	ret = rte_eth_tx_queue_setup(p->port_id, 0, nb_txd, p->socket_id, &txconf);
	if (ret < 0)
		goto out_dev_err;
	ret = rte_eth_dev_start(p->port_id);
	if (ret < 0)
		goto out_dev_err;
	p->started = true;
	ret = rte_eth_promiscuous_disable(p->port_id);
	if (ret < 0 && ret != -ENOTSUP)
		dr_port_log(DR_PORT_LOG_INFO, "%s: cannot turn promiscuous mode off: %s", p->name,
			    strerror(-ret));
	/* IPv6: solicitations come to our solicited-node group.  Where the
	 * device cannot (net_af_packet in DPDK 22.11 has no such operation)
	 * they arrive if the interface has joined the group: the kernel
	 * does for the addresses it holds */
	ret = p->ipv6 ? rte_eth_allmulticast_enable(p->port_id) : 0;
	if (ret < 0)
		dr_port_log(DR_PORT_LOG_INFO,
			    "%s: cannot turn all-multicast mode on (%s): neighbour "
			    "solicitations reach this port only through a multicast group the "
			    "interface has joined",
			    p->name, strerror(-ret));
	return 0;
out_dev_err: /* teardown() undoes what was done */
	/* net_af_xdp says only that its socket failed; the usual causes */
	return dr_port_fail(err, ret, DR_PORT_PARAM_DEVICE, "%s: cannot set up the device: %s%s",
			    p->name, *dr_port_dpdk_err(msg, sizeof(msg)) ? msg : strerror(-ret),
			    p->xdp_room ? " (net_af_xdp serves one process per interface queue: "
					  "is another one using it? A veth also refuses XDP when "
					  "its peer's MTU is above about 3500; or no CAP_BPF)"
					: "");
}

/* An in-process pair end's MAC: locally administered, from the pair's name
 * and the side (02:64:72:hh:hh:0s), so that an end keeps its MAC when it
 * is re-opened, as a NIC would, and captures are reproducible. */
static void pair_mac(const struct dr_pair *pr, unsigned side, uint8_t mac[6])
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (const char *c = pr->name; *c; c++)
		h = (h ^ (uint8_t)*c) * 16777619u;
	mac[0] = 0x02;
	mac[1] = 0x64; /* 'd' */
	mac[2] = 0x72; /* 'r' */
	mac[3] = h >> 8;
	mac[4] = h;
	mac[5] = side;
}

static void set_mac(struct dr_port *p, const uint8_t *want)
{
	static const uint8_t zero[6];
	struct rte_ether_addr ea;
	int ret;

	if (rte_eth_macaddr_get(p->port_id, &ea) < 0)
		memset(&ea, 0, sizeof(ea));
	if (want)
		memcpy(ea.addr_bytes, want, 6);
	else if (p->pair)
		pair_mac(p->pair, p->pair_side, ea.addr_bytes);
	else if (!memcmp(ea.addr_bytes, zero, 6))
		/* a vdev without one (net_ring): random, locally administered */
		rte_eth_random_addr(ea.addr_bytes);
	else
		goto done;
	ret = rte_eth_dev_default_mac_addr_set(p->port_id, &ea);
	if (ret < 0)
		dr_port_log(DR_PORT_LOG_DEBUG, "%s: device keeps its MAC (%s); using ours anyway",
			    p->name, strerror(-ret));
done:
	memcpy(p->mac, ea.addr_bytes, 6);
}

static void tx_flush(struct dr_port *p);
static void link_watch_init(struct dr_port *p, const char *spec);
static void link_watch_fini(struct dr_port *p);
static void link_mtu_check(struct dr_port *p);
static void link_log_stats(const struct dr_port *p);

static void teardown(struct dr_port *p)
{
	bool removed = false;

	p->batch = 0;
	link_watch_fini(p); /* no device re-created from here on */
	if (p->started)
		tx_flush(p);
	while (p->txq_len)
		rte_pktmbuf_free(p->txq[--p->txq_len]);
	while (p->txb_len) {
		rte_pktmbuf_free(p->txb[p->txb_head]);
		p->txb_head = (p->txb_head + 1) % DR_PORT_TXB;
		p->txb_len--;
	}
	while (p->held_len) {
		rte_pktmbuf_free(p->held[p->held_head]);
		p->held_head = (p->held_head + 1) % DR_PORT_HELD_MAX;
		p->held_len--;
	}
	if (p->pcapng)
		dr_capture_close(p);
	dr_neigh_fini(p);
	if (p->timer_id_valid) {
		rte_timer_stop_all(p->timer_id, &p->timer_lcore, 1, NULL, NULL);
		rte_timer_data_dealloc(p->timer_id);
	}
	if (p->loop) {
		ring_drain(p->loop);
		rte_ring_free(p->loop);
	}
	dr_port_kfilter_close(p);
	if (p->kernel_fd >= 0)
		close(p->kernel_fd);
	if (p->group_fd >= 0)
		close(p->group_fd);
	if (p->port_id < RTE_MAX_ETHPORTS && port_by_id[p->port_id] == p) {
		dr_port_intr_barrier();
		if (p->started)
			rte_eth_dev_stop(p->port_id);
		rte_eth_dev_close(p->port_id);
		port_by_id[p->port_id] = NULL;
	}
	if (p->dev) {
		int ret = rte_dev_remove(p->dev);

		if (ret < 0)
			dr_port_log(DR_PORT_LOG_WARN, "%s: cannot remove the DPDK device: %s",
				    p->name, strerror(-ret));
		else
			removed = true;
	}
	dr_pk_free(p);
	if (p->pair) {
		pair_release(p);
	} else {
		/* mbufs still out (a device that did not give back its queues)
		 * would point into a freed pool: better leak the pool.  But
		 * net_af_xdp never takes back the mbufs it lent its fill
		 * queue: once it is removed, its socket and umem are gone and
		 * nothing writes into them */
		if (p->pool && rte_mempool_in_use_count(p->pool) && !(p->xdp_room && removed))
			dr_port_log(DR_PORT_LOG_WARN, "%s: %u mbufs not returned, pool kept",
				    p->name, rte_mempool_in_use_count(p->pool));
		else
			rte_mempool_free(p->pool);
		if (p->ext_pool && rte_mempool_in_use_count(p->ext_pool))
			dr_port_log(DR_PORT_LOG_WARN, "%s: %u external mbufs not returned", p->name,
				    rte_mempool_in_use_count(p->ext_pool));
		else
			rte_mempool_free(p->ext_pool);
	}
	free(p->rx_scratch);
	free(p->tx_scratch);
	free(p);
}

static int open_locked(const struct dr_port_config *cfg, struct dr_port **out,
		       struct dr_port_err *err)
{
	struct dr_port *p;
	struct rte_eth_link link;
	char name[RTE_RING_NAMESIZE], addr[INET6_ADDRSTRLEN];
	unsigned nb_mbufs;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p)
		return dr_port_fail(err, -ENOMEM, DR_PORT_PARAM_NONE, "out of memory");
	p->serial = port_serial++;
	p->port_id = RTE_MAX_ETHPORTS;
	p->kernel_fd = -1;
	p->group_fd = -1;
	p->link_fd = -1;
	if (cfg->ipv6) {
		p->ipv6 = true;
		memcpy(p->ip6, cfg->ip6, 16);
		memcpy(p->gateway6, cfg->gateway6, 16);
	} else {
		p->ip = cfg->ip4;
		p->netmask = cfg->prefix_len == 32 ? ~0u : ~(~0u >> cfg->prefix_len);
		p->gateway = cfg->gateway4;
	}
	p->prefix_len = cfg->prefix_len;
	p->mtu = cfg->mtu ? cfg->mtu : DR_PORT_DEF_MTU;
	p->qdisc_bypass = cfg->qdisc_bypass;
	p->rx_filter = cfg->rx_filter;
	p->kfilter_on = cfg->kernel_filter;
	p->gso = cfg->gso;
	p->max_frame = p->mtu + sizeof(struct dr_eth_hdr) + sizeof(struct dr_vlan_hdr);
	p->arp = cfg->arp;
	p->timer_lcore = rte_get_main_lcore();
	p->timer_res = rte_get_timer_hz() / (1000000 / DR_PORT_TIMER_RES_US);

	ret = plug(p, cfg->device, err);
	if (ret < 0)
		goto out_teardown;
	rte_eth_dev_get_name_by_port(p->port_id, p->name);
	if (p->pk) /* not its idle net_ring ethdev's name */
		snprintf(p->name, sizeof(p->name), "packet_%s", dr_pk_ifname(p));
	port_by_id[p->port_id] = p;
	{
		struct rte_eth_dev_info info;

		/* from now on teardown removes the device */
		if (rte_eth_dev_info_get(p->port_id, &info) == 0)
			p->dev = (struct rte_device *)info.device;
	}

	if (!strncmp(cfg->device, "net_af_xdp", strlen("net_af_xdp")))
		af_xdp_fit(p);
	nb_mbufs = cfg->nb_mbufs
		       ? cfg->nb_mbufs
		       : rte_align32pow2(DR_PORT_RXD + DR_PORT_TXD + DR_PORT_LOOP_SIZE +
					 DR_PORT_TXB + (p->xdp_room ? 2 * DR_XDP_FILL : 0)) -
			     1;
	ret = start_device(p, nb_mbufs, err);
	if (ret < 0)
		goto out_teardown;
	set_mac(p, cfg->mac ? cfg->mac : p->pk ? p->pk_mac : NULL);

	ret = -ENOMEM;
	snprintf(name, sizeof(name), "drp%u_loop", p->serial);
	p->loop =
	    rte_ring_create(name, DR_PORT_LOOP_SIZE, p->socket_id, RING_F_SP_ENQ | RING_F_SC_DEQ);
	p->rx_scratch = malloc(p->buf_size);
	p->tx_scratch = malloc(p->buf_size);
	if (!p->loop || !p->rx_scratch || !p->tx_scratch) {
		dr_port_fail(err, ret, DR_PORT_PARAM_NONE, "%s: out of memory", p->name);
		goto out_teardown;
	}
	ret = rte_timer_data_alloc(&p->timer_id);
	if (ret < 0) {
		dr_port_fail(err, ret, DR_PORT_PARAM_NONE, "%s: no DPDK timer instance left",
			     p->name);
		goto out_teardown;
	}
	p->timer_id_valid = true;
	ret = dr_neigh_init(p);
	if (ret < 0) {
		dr_port_fail(err, ret, DR_PORT_PARAM_NONE,
			     "%s: cannot create the neighbour table: %s", p->name, strerror(-ret));
		goto out_teardown;
	}
	if (cfg->pcap_path) {
		ret = dr_capture_open(p, cfg->pcap_path, err);
		if (ret < 0)
			goto out_teardown;
	}
	kernel_hold(p, cfg->device);
	if (p->ipv6)
		dr_neigh_join_group(p, cfg->device);
	dr_neigh_announce(p);
	/* after the last send under the global lock: a send that finds the
	 * link back up re-creates the device, which takes that lock */
	link_watch_init(p, cfg->device);

	if (rte_eth_link_get_nowait(p->port_id, &link) < 0)
		memset(&link, 0, sizeof(link));
	if (p->ipv6)
		inet_ntop(AF_INET6, p->ip6, addr, sizeof(addr));
	else
		snprintf(addr, sizeof(addr), "%u.%u.%u.%u", p->ip >> 24, (p->ip >> 16) & 255,
			 (p->ip >> 8) & 255, p->ip & 255);
	dr_port_log(DR_PORT_LOG_INFO,
		    "%s: port %u, MAC %02x:%02x:%02x:%02x:%02x:%02x, %s %s/%u, MTU %u, "
		    "link %s, %s",
		    p->name, p->port_id, p->mac[0], p->mac[1], p->mac[2], p->mac[3], p->mac[4],
		    p->mac[5], p->ipv6 ? "IPv6" : "IPv4", addr,
		    p->prefix_len, p->mtu, link.link_status ? "up" : "down",
		    p->zero_copy ? "zero-copy sends" : "copied sends");
	*out = p;
	return 0;
out_teardown:
	teardown(p);
	return ret;
}

int dr_port_open(const struct dr_port_config *cfg, struct dr_port **out, struct dr_port_err *err)
{
	int ret;

	*out = NULL;
	ret = check_config(cfg, err);
	if (ret < 0)
		return ret;
	ret = dr_port_eal_init(cfg->eal_args, cfg->device, err);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&dr_port_global_lock);
	ret = open_locked(cfg, out, err);
	pthread_mutex_unlock(&dr_port_global_lock);
	return ret;
}

int dr_port_open_pair(const struct dr_port_config *a, const struct dr_port_config *b,
		      struct dr_port **pa, struct dr_port **pb, struct dr_port_err *err)
{
	static unsigned auto_serial; /* global lock */
	struct dr_port_config ca = *a, cb = *b;
	char da[32], db[32];
	unsigned n;
	int ret;

	*pa = *pb = NULL;
	pthread_mutex_lock(&dr_port_global_lock);
	n = auto_serial++;
	pthread_mutex_unlock(&dr_port_global_lock);
	snprintf(da, sizeof(da), "pair:auto%u:0", n);
	snprintf(db, sizeof(db), "pair:auto%u:1", n);
	ca.device = da;
	cb.device = db;
	ret = dr_port_open(&ca, pa, err);
	if (ret < 0)
		return ret;
	ret = dr_port_open(&cb, pb, err);
	if (ret < 0) {
		dr_port_close(*pa);
		*pa = NULL;
	}
	return ret;
}

void dr_port_close(struct dr_port *p)
{
	if (!p)
		return;
	dr_port_log(DR_PORT_LOG_INFO, "%s: closing", p->name);
	link_log_stats(p);
	pthread_mutex_lock(&dr_port_global_lock);
	teardown(p);
	pthread_mutex_unlock(&dr_port_global_lock);
}

void dr_port_quiesce(struct dr_port *p)
{
	if (!p)
		return;
	p->batch = 0;
	if (p->started)
		tx_flush(p);
	if (p->pcapng) {
		dr_port_log(DR_PORT_LOG_INFO, "%s: process exit: capture closed", p->name);
		dr_capture_close(p);
	}
}

/* ---- identity, counters, hooks ------------------------------------------------------ */

void dr_port_mac(const struct dr_port *p, uint8_t mac[6])
{
	memcpy(mac, p->mac, 6);
}

uint32_t dr_port_ip4(const struct dr_port *p)
{
	return p->ip;
}

bool dr_port_ip6(const struct dr_port *p, uint8_t ip6[16])
{
	if (p->ipv6)
		memcpy(ip6, p->ip6, 16);
	return p->ipv6;
}

unsigned dr_port_mtu(const struct dr_port *p)
{
	return p->mtu;
}

unsigned dr_port_link_mtu(struct dr_port *p)
{
	if (p->link_fd >= 0)
		link_mtu_check(p); /* the link watch's last look may be older */
	return dr_port_mtu_now(p);
}

const char *dr_port_name(const struct dr_port *p)
{
	return p->name;
}

bool dr_port_zero_copy(const struct dr_port *p)
{
	return p->zero_copy;
}

bool dr_port_zero_copy_sync(const struct dr_port *p)
{
	return p->zc_sync;
}

unsigned dr_port_max_window(const struct dr_port *p)
{
	return p->max_window;
}

bool dr_port_lossless(const struct dr_port *p)
{
	return p->lossless;
}

uint64_t dr_port_rx_age_ns(const struct dr_port *p)
{
	struct timespec ts;
	uint64_t now;

	if (!p->rx_kernel_ns)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return now > p->rx_kernel_ns ? now - p->rx_kernel_ns : 0;
}

bool dr_port_gso_takes(const struct dr_port *p)
{
	return dr_pk_takes(p);
}

void dr_port_get_stats(const struct dr_port *p, struct dr_port_stats *s)
{
	*s = p->stats;
}

void dr_port_set_rx(struct dr_port *p, dr_port_rx_fn fn, void *ctx)
{
	p->rx_fn = fn;
	p->rx_ctx = ctx;
}

void dr_port_set_place(struct dr_port *p, dr_port_place_fn fn)
{
	p->place_fn = fn;
}

void dr_port_set_frame_hook(struct dr_port *p, dr_port_frame_fn fn, void *ctx)
{
	p->frame_fn = fn;
	p->frame_ctx = ctx;
}

void dr_port_set_neigh_cb(struct dr_port *p, dr_port_neigh_fn fn, void *ctx)
{
	p->neigh_fn = fn;
	p->neigh_ctx = ctx;
}

void dr_port_set_neigh6_cb(struct dr_port *p, dr_port_neigh6_fn fn, void *ctx)
{
	p->neigh6_fn = fn;
	p->neigh6_ctx = ctx;
}

/* ---- clock and timers --------------------------------------------------------------- */

/* The clock of every deadline: CLOCK_MONOTONIC until EAL is up, then the
 * TSC (an rdtsc, not a vDSO call: the engine reads the clock several times
 * per message) scaled to ns and anchored to CLOCK_MONOTONIC at that moment,
 * so the two agree where they meet. */
static struct {
	uint64_t tsc0, ns0, mult; /* ns = ns0 + ((tsc - tsc0) * mult) >> 32 */
	bool ready;
} dr_clock;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

void dr_port_clock_init(void)
{
	uint64_t hz = rte_get_tsc_hz();

	if (!hz || __atomic_load_n(&dr_clock.ready, __ATOMIC_ACQUIRE))
		return;
	dr_clock.mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / hz);
	dr_clock.ns0 = mono_ns();
	dr_clock.tsc0 = rte_get_tsc_cycles();
	__atomic_store_n(&dr_clock.ready, true, __ATOMIC_RELEASE);
}

uint64_t dr_port_now_ns(void)
{
	if (!__atomic_load_n(&dr_clock.ready, __ATOMIC_ACQUIRE))
		return mono_ns();
	return dr_clock.ns0 + (uint64_t)(((unsigned __int128)(rte_get_tsc_cycles() - dr_clock.tsc0) *
					  dr_clock.mult) >> 32);
}

/* rte_timer_alt_manage() calls this for every expired timer of the port */
static void timer_run(struct rte_timer *tim)
{
	struct dr_port_timer *t = container_of(tim, struct dr_port_timer, tim);

	t->fn(t->arg);
}

static void timer_cb(struct rte_timer *tim, void *arg)
{
	timer_run(tim);
}

void dr_port_timer_setup(struct dr_port_timer *t, struct dr_port *p, void (*fn)(void *), void *arg)
{
	rte_timer_init(&t->tim);
	t->port = p;
	t->fn = fn;
	t->arg = arg;
}

struct dr_port_timer *dr_port_timer_new(struct dr_port *p, void (*fn)(void *arg), void *arg)
{
	struct dr_port_timer *t = calloc(1, sizeof(*t));

	if (t)
		dr_port_timer_setup(t, p, fn, arg);
	return t;
}

/* Every timer of a port lives on one lcore's list of the port's own timer
 * instance, so that whichever thread polls the port runs it (rte_timer's
 * default puts a timer on the arming thread's lcore). */
int dr_port_timer_arm(struct dr_port_timer *t, uint64_t delay_ns)
{
	struct dr_port *p = t->port;
	uint64_t ticks = (unsigned __int128)delay_ns * rte_get_timer_hz() / 1000000000u;
	int ret;

	ret = rte_timer_alt_reset(p->timer_id, &t->tim, ticks, SINGLE, p->timer_lcore, timer_cb, t);
	if (ret == 0 && t->tim.expire < p->timer_next)
		p->timer_next = t->tim.expire;
	return ret == -1 ? -EBUSY : ret;
}

void dr_port_timer_cancel(struct dr_port_timer *t)
{
	rte_timer_alt_stop(t->port->timer_id, &t->tim);
}

bool dr_port_timer_pending(const struct dr_port_timer *t)
{
	return rte_timer_pending((struct rte_timer *)&t->tim);
}

void dr_port_timer_free(struct dr_port_timer *t)
{
	if (!t)
		return;
	dr_port_timer_cancel(t);
	free(t);
}

/* ---- transmit ------------------------------------------------------------------------ */

static void linearise(const struct rte_mbuf *m, uint8_t *dst)
{
	for (; m; m = m->next) {
		memcpy(dst, rte_pktmbuf_mtod(m, const void *), m->data_len);
		dst += m->data_len;
	}
}

void dr_port_fill_l2(struct rte_mbuf *m, const uint8_t dst[6], const uint8_t src[6])
{
	struct dr_eth_hdr *eth = rte_pktmbuf_mtod(m, struct dr_eth_hdr *);

	memcpy(eth->dst, dst, 6);
	memcpy(eth->src, src, 6);
}

/* Report a frame that is leaving: capture copy and frame hook.  The copy
 * is taken before the device owns the mbuf (af_packet frees it inside
 * rte_eth_tx_burst) and committed only if it was taken. */
static struct rte_mbuf *tx_trace(struct dr_port *p, struct rte_mbuf *m, bool *hook)
{
	*hook = p->frame_fn && m->pkt_len <= p->buf_size;
	if (*hook)
		linearise(m, p->tx_scratch);
	return p->pcapng ? dr_capture_prepare(p, m, DR_PORT_DIR_TX) : NULL;
}

static void tx_done(struct dr_port *p, struct rte_mbuf *copy, bool hook, uint32_t len)
{
	p->stats.tx_frames++;
	p->stats.tx_bytes += len;
	if (copy)
		dr_capture_commit(p, copy);
	if (hook)
		p->frame_fn(p->frame_ctx, DR_PORT_DIR_TX, p->tx_scratch, len);
}

/* ---- link faults ----------------------------------------------------------------------
 *
 * net_af_packet sends through a TPACKET ring: eth_af_packet_tx() copies
 * each frame into a ring slot, marks it SEND_REQUEST, and one sendto()
 * asks the kernel to send every marked slot (tpacket_snd()).  It reports
 * every frame it copied as sent, whatever sendto() returns, and keeps no
 * frame of its own.  When the interface is down the kernel leaves the
 * marked slots as they are: while it is administratively down sendto()
 * fails at once (ENETDOWN); while the carrier is off (the peer's end of a
 * veth went down, a cable was pulled) the first frame is dropped by
 * dev_direct_xmit(), its slot is marked SEND_REQUEST again, and sendto()
 * returns ENOBUFS, which the PMD takes for success.  Either way the slots
 * wait for the next successful sendto() after the link is back, and then
 * all leave at once, however old.  Worse, taking the interface down sets
 * the socket's error (packet_notifier(): sk_err = ENETDOWN), which nothing
 * in the PMD reads: the first sendto() after the link is back consumes it
 * (sock_alloc_send_skb() returns it) and sends nothing, so the ring drains
 * only at the sendto() after that - with RC's exponential back-off,
 * seconds later, or never before the retry budget runs out (issue 11:
 * resends at +1.9, +4 and +8.4 s never left; 143 stale frames burst out
 * when the port closed).
 *
 * So a port on a kernel interface watches it (SIOCGIFFLAGS: IFF_UP and
 * IFF_RUNNING, the latter following the carrier), at least every
 * DR_PORT_LINK_CHECK_US and at once after a burst whose sendto() failed as
 * a link failure does.  While it is down, frames are held here and not
 * handed to the device; those older than DR_PORT_TX_STALE_NS are dropped
 * (go-back-N resends what matters).  When it comes back, if the ring may
 * hold frames (a burst failed) or the socket an error (the interface was
 * down, not only its carrier; a send failed at once), the device is
 * re-created: a fresh packet socket, with an empty ring and no pending
 * error, so nothing handed over around the fault leaves late.  The ring is
 * the PMD's and cannot be emptied any other way.  Then the held frames
 * young enough leave.
 */

enum link_state { LINK_UP, LINK_NO_CARRIER, LINK_DOWN };

/* Look at the interface's flags. */
static enum link_state link_flags(struct dr_port *p)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", p->link_if);
	if (ioctl(p->link_fd, SIOCGIFFLAGS, &ifr) < 0 || !(ifr.ifr_flags & IFF_UP))
		return LINK_DOWN; /* ENODEV: the interface is gone */
	return ifr.ifr_flags & IFF_RUNNING ? LINK_UP : LINK_NO_CARRIER;
}

int dr_port_if_mtu(int fd, const char *ifname)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr) < 0)
		return -errno;
	return ifr.ifr_mtu > 0 ? ifr.ifr_mtu : -EINVAL;
}

/* Follow the interface's MTU (include/dr_port.h, "Link faults"). */
static void link_mtu_check(struct dr_port *p)
{
	int got = dr_port_if_mtu(p->link_fd, p->link_if);
	unsigned mtu = got > 0 ? (unsigned)got : 0, was = dr_port_mtu_now(p), now, pmtu, pmtu_was;

	if (!mtu || mtu == p->link_mtu) /* not readable: the interface is gone */
		return;
	if (!p->link_mtu) { /* the first look */
		p->link_mtu = mtu;
		return;
	}
	p->link_mtu = mtu;
	p->stats.link_mtu_changes++;
	now = dr_port_mtu_now(p);
	pmtu = dr_port_pmtu_of(now);
	pmtu_was = dr_port_pmtu_of(was);
	if (pmtu < pmtu_was && !pmtu)
		dr_port_log(DR_PORT_LOG_WARN,
			    "%s: the MTU of %s fell to %u (the port's is %u): no connection's "
			    "packets fit any more (the smallest path MTU, 256, needs 336): "
			    "connections fail when their retries run out, and no new one can "
			    "be made",
			    p->name, p->link_if, mtu, p->mtu);
	else if (pmtu < pmtu_was)
		dr_port_log(DR_PORT_LOG_WARN,
			    "%s: the MTU of %s fell to %u (the port's is %u): longer frames "
			    "cannot leave; connections whose path MTU is above %u fail when "
			    "their retries run out, new ones take path MTU %u",
			    p->name, p->link_if, mtu, p->mtu, pmtu, pmtu);
	else if (pmtu > pmtu_was)
		dr_port_log(DR_PORT_LOG_WARN,
			    "%s: the MTU of %s rose to %u: new connections take path MTU %u "
			    "again%s",
			    p->name, p->link_if, mtu, pmtu,
			    mtu > p->mtu ? " (the port keeps its own MTU, which its buffers were "
					   "sized for)"
					 : "");
	else if (now != was)
		dr_port_log(DR_PORT_LOG_INFO,
			    "%s: the MTU of %s is now %u: connections keep path MTU %u, which "
			    "fits",
			    p->name, p->link_if, mtu, pmtu);
	else
		dr_port_log(DR_PORT_LOG_INFO,
			    "%s: the MTU of %s is now %u; the port keeps its own, %u", p->name,
			    p->link_if, mtu, p->mtu);
}

static uint64_t tsc_of_ns(uint64_t ns)
{
	return (unsigned __int128)ns * rte_get_tsc_hz() / 1000000000u;
}

static void link_watch_init(struct dr_port *p, const char *spec)
{
	const struct rte_devargs *da = p->dev ? rte_dev_devargs(p->dev) : NULL;
	size_t len;

	if (!dr_port_packet_iface(spec, p->link_if, sizeof(p->link_if)) || (!da && !p->pk))
		return;
	p->link_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (p->link_fd >= 0)
		link_mtu_check(p);
	if (p->pk) { /* its socket is opened again, not a device */
		if (p->link_fd < 0)
			goto fail;
		p->link_next = 0;
		return;
	}
	/* what the device was created with (framesz included), to create
	 * it again */
	len = strlen(da->name) + (da->args ? strlen(da->args) : 0) + 2;
	p->link_spec = malloc(len);
	if (!p->link_spec || p->link_fd < 0) {
	fail:
		dr_port_log(DR_PORT_LOG_WARN,
			    "%s: cannot watch the link of %s (%s): frames sent while it is down "
			    "will leave when it comes back, however old",
			    p->name, p->link_if, strerror(p->link_fd < 0 ? errno : ENOMEM));
		link_watch_fini(p);
		return;
	}
	snprintf(p->link_spec, len, "%s%s%s", da->name, da->args && *da->args ? "," : "",
		 da->args ? da->args : "");
	p->link_next = 0; /* look at the first send */
}

static void link_watch_fini(struct dr_port *p)
{
	if (p->link_fd >= 0)
		close(p->link_fd);
	p->link_fd = -1;
	p->link_mtu = 0; /* no watch: the port's own MTU */
	free(p->link_spec);
	p->link_spec = NULL;
}

/* Remove the device and create it again from the same spec (global lock
 * taken: device plug/unplug).  On failure the port has no device until a
 * later attempt succeeds: nothing is sent or received meanwhile. */
static int device_recreate(struct dr_port *p)
{
	struct rte_eth_dev_info info;
	char msg[256];
	uint16_t id;
	int ret;

	if (p->pk)
		return dr_pk_reopen(p);
	pthread_mutex_lock(&dr_port_global_lock);
	if (p->port_id < RTE_MAX_ETHPORTS && port_by_id[p->port_id] == p) {
		/* net_af_packet handles nothing on EAL's interrupt thread:
		 * no dr_port_intr_barrier() needed */
		if (p->started)
			rte_eth_dev_stop(p->port_id);
		rte_eth_dev_close(p->port_id);
		port_by_id[p->port_id] = NULL;
	}
	p->started = false;
	p->port_id = RTE_MAX_ETHPORTS;
	if (p->dev) {
		ret = rte_dev_remove(p->dev);
		if (ret < 0)
			dr_port_log(DR_PORT_LOG_WARN, "%s: cannot remove the DPDK device: %s",
				    p->name, strerror(-ret));
		p->dev = NULL;
	}
	dr_port_dpdk_err_clear();
	ret = rte_dev_probe(p->link_spec);
	if (ret < 0 || find_port(p->link_spec, false, &id) != 0) {
		ret = ret < -1 ? ret : -ENODEV;
		dr_port_log(DR_PORT_LOG_WARN, "%s: cannot create the DPDK device again: %s",
			    p->name, *dr_port_dpdk_err(msg, sizeof(msg)) ? msg : strerror(-ret));
		goto out_unlock;
	}
	p->port_id = id;
	port_by_id[id] = p;
	ret = rte_eth_dev_info_get(id, &info);
	if (ret < 0)
		goto out_unlock;
	p->dev = (struct rte_device *)info.device; /* teardown removes it */
	ret = configure_device(p, &info, NULL);
out_unlock:
	pthread_mutex_unlock(&dr_port_global_lock);
	return ret;
}

static void held_drop_head(struct dr_port *p)
{
	struct rte_mbuf *m = p->held[p->held_head];

	if (rte_pktmbuf_mtod(m, struct dr_eth_hdr *)->type == htons(DR_ETH_P_ARP))
		p->link.dropped_arp++;
	rte_pktmbuf_free(m);
	p->held_head = (p->held_head + 1) % DR_PORT_HELD_MAX;
	p->held_len--;
}

/* Drop the held frames that have waited longer than DR_PORT_TX_STALE_NS. */
static void held_expire(struct dr_port *p, uint64_t now)
{
	uint64_t max = tsc_of_ns(DR_PORT_TX_STALE_NS);

	while (p->held_len && now - p->held_tsc[p->held_head] > max) {
		held_drop_head(p);
		p->link.stale++;
	}
}

/* The link is down: m waits (consumed). */
static void held_add(struct dr_port *p, struct rte_mbuf *m)
{
	uint64_t now = rte_get_tsc_cycles();
	unsigned i;

	held_expire(p, now);
	if (p->held_len == DR_PORT_HELD_MAX) {
		held_drop_head(p);
		p->link.held_overflow++;
	}
	i = (p->held_head + p->held_len++) % DR_PORT_HELD_MAX;
	p->held[i] = m;
	p->held_tsc[i] = now;
	p->link.held++;
}

static uint16_t tx_burst(struct dr_port *p, struct rte_mbuf **q, struct rte_mbuf **cap, uint16_t n,
			 bool hook);

/* The link is back: what is young enough leaves, in order, its capture
 * record stamped when it was due. */
static void held_release(struct dr_port *p)
{
	struct rte_mbuf *q[DR_PORT_BURST], *cap[DR_PORT_BURST];
	uint16_t n;

	held_expire(p, rte_get_tsc_cycles());
	while (p->held_len && !p->link_down) {
		bool hook = false;

		/* the frame hook sees one frame at a time, as it leaves */
		for (n = 0; p->held_len && n < (p->frame_fn ? 1 : DR_PORT_BURST); n++) {
			unsigned i = p->held_head;

			q[n] = p->held[i];
			cap[n] = p->pcapng ? dr_capture_prepare_at(p, q[n], DR_PORT_DIR_TX,
								   p->held_tsc[i])
					   : NULL;
			p->held_head = (i + 1) % DR_PORT_HELD_MAX;
			p->held_len--;
		}
		if (p->frame_fn && q[0]->pkt_len <= p->buf_size) {
			linearise(q[0], p->tx_scratch);
			hook = true;
		}
		p->link.held_sent += n;
		tx_burst(p, q, cap, n, hook);
	}
}

static void link_went_down(struct dr_port *p)
{
	p->link_down = true;
	p->link_down_ns = dr_port_now_ns();
	p->link_stranded += p->link_unconfirmed;
	p->link_unconfirmed = 0;
	p->link.downs++;
	dr_port_log(DR_PORT_LOG_WARN,
		    "%s: link of %s is down: frames wait for it at most %llu ms, then are "
		    "dropped",
		    p->name, p->link_if, DR_PORT_TX_STALE_NS / 1000000);
}

static void link_came_up(struct dr_port *p, uint64_t now)
{
	uint64_t up_ns = dr_port_now_ns(), took_ns;
	unsigned stranded = p->link_stranded;
	char how[128] = "device kept (only the carrier was lost, no send failed)";

	if (p->link_recreate || stranded) {
		if (device_recreate(p) < 0) {
			p->link.recreate_failed++;
			/* a probe takes milliseconds: not at every look */
			p->link_next = now + tsc_of_ns(100000000u);
			return;
		}
		took_ns = dr_port_now_ns() - up_ns;
		snprintf(how, sizeof(how),
			 "device re-created in %llu ms (%u frames handed over as the link "
			 "failed discarded with its ring)",
			 (unsigned long long)took_ns / 1000000, stranded);
		p->link.recreated++;
		p->link.ring_discarded += stranded;
	}
	p->link_recreate = false;
	p->link_stranded = 0;
	p->link_down = false;
	p->link.down_ns += up_ns - p->link_down_ns;
	held_expire(p, rte_get_tsc_cycles());
	dr_port_log(DR_PORT_LOG_WARN,
		    "%s: link of %s is up after %llu ms; %s; %u held frames leave", p->name,
		    p->link_if, (unsigned long long)(up_ns - p->link_down_ns) / 1000000, how,
		    p->held_len);
	held_release(p);
}

/* Look at the link now. */
static void link_check(struct dr_port *p, uint64_t now)
{
	enum link_state st = link_flags(p);

	p->link_next = now + tsc_of_ns(DR_PORT_LINK_CHECK_US * 1000ull);
	link_mtu_check(p);
	if (st == LINK_DOWN)
		p->link_recreate = true; /* packet_notifier() set the socket's error */
	if (!p->link_down) {
		if (st != LINK_UP)
			link_went_down(p);
		return;
	}
	held_expire(p, now);
	if (st == LINK_UP)
		link_came_up(p, now);
}

/* Look at the link if it is time to. */
static inline void link_poll(struct dr_port *p)
{
	uint64_t now;

	if (p->link_fd < 0)
		return;
	now = rte_get_tsc_cycles();
	if (now >= p->link_next)
		link_check(p, now);
}

/* After a burst: what the PMD's sendto() left in errno tells whether the
 * ring was emptied, and a link failure at once (the PMD reports neither).
 * ENOBUFS is also plain congestion (the frame stays in the ring and leaves
 * with the next burst): the flags decide.  The frames of failed bursts are
 * those the ring may still hold when the link is found down. */
static void link_after_burst(struct dr_port *p, uint16_t sent, int err)
{
	if (!err) {
		/* tpacket_snd() sent every marked slot: the ring is empty */
		p->link_unconfirmed = 0;
		return;
	}
	p->link_unconfirmed += sent;
	if (err == ENETDOWN || err == ENXIO || err == ENODEV) {
		/* refused at once: the socket needs replacing even if the
		 * interface is already up again (a blip between two looks
		 * leaves its error on the socket) */
		p->link_recreate = true;
		if (!p->link_down)
			link_went_down(p);
	}
	if (err == ENETDOWN || err == ENXIO || err == ENODEV || err == ENOBUFS)
		link_check(p, rte_get_tsc_cycles());
}

static void link_log_stats(const struct dr_port *p)
{
	const struct dr_port_link_stats *l = &p->link;

	if (p->link_fd < 0 && !l->downs)
		return;
	dr_port_log(
	    l->downs || p->stats.link_mtu_changes ? DR_PORT_LOG_WARN : DR_PORT_LOG_INFO,
	    "%s: link faults: downs=%llu down_ms=%llu held=%llu held_sent=%llu stale=%llu "
	    "held_overflow=%llu dropped_arp=%llu held_at_close=%u ring_discarded=%llu "
	    "recreated=%llu "
	    "recreate_failed=%llu mtu_changes=%llu; other tx drops: tx_dropped=%llu "
	    "(tx_refused=%llu) tx_nombuf=%llu "
	    "arp_queue_dropped=%llu (stale: waited more than %llu ms for the link)",
	    p->name, (unsigned long long)l->downs, (unsigned long long)l->down_ns / 1000000,
	    (unsigned long long)l->held, (unsigned long long)l->held_sent,
	    (unsigned long long)l->stale, (unsigned long long)l->held_overflow,
	    (unsigned long long)l->dropped_arp, p->held_len, (unsigned long long)l->ring_discarded,
	    (unsigned long long)l->recreated, (unsigned long long)l->recreate_failed,
	    (unsigned long long)p->stats.link_mtu_changes, (unsigned long long)p->stats.tx_dropped,
	    (unsigned long long)p->stats.tx_refused, (unsigned long long)p->stats.tx_nombuf,
	    (unsigned long long)p->stats.arp_queue_dropped, DR_PORT_TX_STALE_NS / 1000000);
}

bool dr_port_link_up(const struct dr_port *p)
{
	return !p->link_down;
}

static void tx_backlog_add(struct dr_port *p, struct rte_mbuf *m);

/* Hand q[0..n) to the device in one burst (a full ring is tried
 * DR_PORT_TX_TRIES times; what still does not fit waits in the backlog,
 * tx_backlog_add, and leaves first at the next flush: droce does not drop
 * a frame it built because a ring is full).  cap[i] is the frame's capture
 * copy or NULL; with hook (n == 1) p->tx_scratch holds the frame for the
 * frame hook.  Returns how many the device took; the first *refused of
 * them it took only to drop (a packet socket's kernel refused them:
 * counted tx_refused and tx_dropped there, never sent). */
static inline uint16_t dev_tx(struct dr_port *p, struct rte_mbuf **q, uint16_t n, uint16_t *refused)
{
	if (p->pk)
		return dr_pk_tx(p, q, n, refused);
	*refused = 0;
	return rte_eth_tx_burst(p->port_id, 0, q, n);
}

/* A frame of a burst the device took: sent (counted, captured, shown to
 * the hook), or refused by the kernel (dev_tx): its capture copy goes,
 * for no frame is on record as sent that never left. */
static void tx_taken(struct dr_port *p, struct rte_mbuf *copy, bool hook, uint32_t len,
		     bool refused)
{
	if (refused)
		dr_capture_discard(copy);
	else
		tx_done(p, copy, hook, len);
}

/* m is longer than the interface's MTU now (it fell since m was built):
 * dropped and counted (tx_refused), not handed to a device that would
 * refuse it, or one that would drop it unseen (net_af_packet sets
 * PACKET_LOSS), nor left to hold up the frames behind it.  True if so
 * (m consumed). */
static bool tx_too_long(struct dr_port *p, struct rte_mbuf *m)
{
	unsigned mtu = dr_port_mtu_now(p);
	uint32_t len = m->pkt_len;

	if (len <= mtu + sizeof(struct dr_eth_hdr))
		return false;
	rte_pktmbuf_free(m);
	p->stats.tx_dropped++;
	p->stats.tx_refused++;
	if (dr_port_pow2_passed(p->stats.tx_refused - 1, p->stats.tx_refused))
		dr_port_log(DR_PORT_LOG_WARN,
			    "%s: a frame of %" PRIu32 " bytes dropped: longer than the MTU %u of "
			    "%s (%" PRIu64 " dropped so far)",
			    p->name, len, mtu, p->link_if, p->stats.tx_refused);
	return true;
}

static uint16_t tx_burst(struct dr_port *p, struct rte_mbuf **q, struct rte_mbuf **cap, uint16_t n,
			 bool hook)
{
	uint32_t len[DR_PORT_TXQ];
	bool refused[DR_PORT_TXQ];
	uint16_t sent = 0, i;
	unsigned tries = 0;
	int err;

	if (unlikely(dr_port_mtu_now(p) < p->mtu)) {
		uint16_t k = 0;

		for (i = 0; i < n; i++) {
			if (tx_too_long(p, q[i])) {
				dr_capture_discard(cap[i]);
				continue;
			}
			q[k] = q[i];
			cap[k++] = cap[i];
		}
		n = k;
	}
	for (i = 0; i < n; i++)
		len[i] = q[i]->pkt_len;
	errno = 0;
	while (sent < n && tries++ < DR_PORT_TX_TRIES) {
		uint16_t took, r;

		took = dev_tx(p, q + sent, n - sent, &r);
		for (i = 0; i < took; i++)
			refused[sent + i] = i < r;
		sent += took;
	}
	err = errno;
	p->stats.tx_bursts++;
	for (i = 0; i < n; i++) {
		if (i < sent) {
			tx_taken(p, cap[i], hook, len[i], refused[i]);
			continue;
		}
		/* captured (and shown to the hook) when it really leaves */
		dr_capture_discard(cap[i]);
		tx_backlog_add(p, q[i]);
	}
	if (p->link_fd >= 0)
		link_after_burst(p, sent, err);
	return sent;
}

/* m waits for room in the device's ring (consumed).  A frame whose payload
 * is attached (dr_port_send_zc) is copied first: its buffer is promised
 * back when the batch ends.  Only a full backlog drops (counted). */
static void tx_backlog_add(struct dr_port *p, struct rte_mbuf *m)
{
	if (unlikely(dr_port_mtu_now(p) < p->mtu) && tx_too_long(p, m))
		return;
	if (m->nb_segs > 1) {
		struct rte_mbuf *c;
		const void *src;
		void *data;

		c = dr_port_frame_alloc(p, m->pkt_len, &data);
		src = c ? rte_pktmbuf_read(m, 0, m->pkt_len, data) : NULL;
		if (src && src != data)
			memcpy(data, src, m->pkt_len);
		rte_pktmbuf_free(m);
		if (!src) {
			rte_pktmbuf_free(c);
			p->stats.tx_dropped++;
			return;
		}
		m = c;
	}
	if (p->txb_len == DR_PORT_TXB) {
		rte_pktmbuf_free(m);
		p->stats.tx_dropped++;
		return;
	}
	p->txb[(p->txb_head + p->txb_len++) % DR_PORT_TXB] = m;
	p->stats.tx_backlogged++;
}

/* The backlog leaves, as much of it as the ring takes now.  Returns true
 * when it is empty. */
static bool tx_backlog_push(struct dr_port *p)
{
	while (p->txb_len) {
		struct rte_mbuf *q[DR_PORT_TXQ], *cap[DR_PORT_TXQ];
		uint32_t len[DR_PORT_TXQ];
		uint16_t n, sent, i, refused;
		bool hook = false;
		int err;

		/* the frame hook sees one frame at a time, as it leaves */
		for (n = 0; n < p->txb_len && n < (p->frame_fn ? 1 : DR_PORT_TXQ); n++)
			q[n] = p->txb[(p->txb_head + n) % DR_PORT_TXB];
		if (p->frame_fn)
			cap[0] = tx_trace(p, q[0], &hook);
		else
			for (i = 0; i < n; i++)
				cap[i] = p->pcapng ? dr_capture_prepare(p, q[i], DR_PORT_DIR_TX)
						   : NULL;
		for (i = 0; i < n; i++)
			len[i] = q[i]->pkt_len;
		errno = 0;
		sent = dev_tx(p, q, n, &refused);
		err = errno;
		p->stats.tx_bursts++;
		for (i = 0; i < n; i++) {
			if (i < sent)
				tx_taken(p, cap[i], hook, len[i], i < refused);
			else
				dr_capture_discard(cap[i]);
		}
		p->txb_head = (p->txb_head + sent) % DR_PORT_TXB;
		p->txb_len -= sent;
		if (p->link_fd >= 0)
			link_after_burst(p, sent, err);
		if (sent < n)
			return false;
	}
	return true;
}

/* The frames waiting in p->txq leave in one burst, behind those that
 * waited for the link; while it is down they wait too. */
static void tx_flush(struct dr_port *p)
{
	struct rte_mbuf *q[DR_PORT_TXQ], *cap[DR_PORT_TXQ];
	uint16_t n = p->txq_len, i;

	link_poll(p);
	if (p->held_len && !p->link_down)
		held_release(p);
	if (!n) {
		if (p->txb_len && !p->link_down)
			tx_backlog_push(p);
		return;
	}
	p->txq_len = 0;
	if (p->link_down) {
		for (i = 0; i < n; i++)
			held_add(p, p->txq[i]);
		return;
	}
	if (!tx_backlog_push(p)) {
		/* behind what waits already, in order */
		for (i = 0; i < n; i++)
			tx_backlog_add(p, p->txq[i]);
		return;
	}
	for (i = 0; i < n; i++) {
		q[i] = p->txq[i];
		cap[i] = p->pcapng ? dr_capture_prepare(p, q[i], DR_PORT_DIR_TX) : NULL;
	}
	tx_burst(p, q, cap, n, false);
}

int dr_port_xmit(struct dr_port *p, struct rte_mbuf *m)
{
	struct rte_mbuf *copy;
	bool hook;

	/* the frame hook sees every frame as it leaves: no batching then */
	if (p->batch && !p->frame_fn) {
		if (p->txq_len == DR_PORT_TXQ)
			tx_flush(p);
		p->txq[p->txq_len++] = m;
		return 0;
	}
	tx_flush(p); /* keep the order (and look at the link) */
	if (p->link_down) {
		held_add(p, m);
		return 0;
	}
	if (p->txb_len && !tx_backlog_push(p)) {
		tx_backlog_add(p, m);
		return 0;
	}
	copy = tx_trace(p, m, &hook);
	tx_burst(p, &m, &copy, 1, hook); /* what the ring does not take waits */
	return 0;
}

void dr_port_batch_begin(struct dr_port *p)
{
	p->batch++;
}

void dr_port_batch_end(struct dr_port *p)
{
	if (p->batch && !--p->batch)
		tx_flush(p);
}

void dr_port_batch_hold(struct dr_port *p)
{
	if (p->batch)
		p->batch--;
}

void dr_port_tx_early(struct dr_port *p, uint32_t unacked)
{
	if (!p->tx_syscall && p->txq_len && 2u * p->txq_len >= unacked)
		tx_flush(p);
}

void dr_port_flush(struct dr_port *p)
{
	tx_flush(p);
}

bool dr_port_tx_pending(const struct dr_port *p)
{
	return p->txq_len != 0 || p->txb_len != 0;
}

bool dr_port_tx_syscall(const struct dr_port *p)
{
	return p->tx_syscall;
}

static void rx_one(struct dr_port *p, struct rte_mbuf *m, bool looped);

/* A frame to our own address: "sent" now, "received" by the next poll. */
static int loop_xmit(struct dr_port *p, struct rte_mbuf *m)
{
	uint32_t len = m->pkt_len;
	struct rte_mbuf *copy;
	bool hook;

	copy = tx_trace(p, m, &hook);
	if (rte_ring_enqueue(p->loop, m) < 0) {
		rte_pktmbuf_free(m);
		dr_capture_discard(copy);
		p->stats.tx_dropped++;
		return -EAGAIN;
	}
	p->stats.loopback++;
	tx_done(p, copy, hook, len);
	return 0;
}

/* ---- the host-local wire: frames to our own address when other processes
 * share the interface (dr_port_set_local; src/fi/local.c carries them) */

void dr_port_set_local(struct dr_port *p, dr_port_local_fn fn, void *ctx)
{
	p->local_fn = fn;
	p->local_ctx = ctx;
}

/* Handed to the local wire as it is, and recorded as sent: the wire
 * counts what a receiver's full ring loses (local.c says why). */
static int local_xmit(struct dr_port *p, struct rte_mbuf *m)
{
	uint32_t len = m->pkt_len;
	const void *data = rte_pktmbuf_read(m, 0, len, p->tx_scratch);
	struct rte_mbuf *copy;
	bool hook;
	int ret;

	copy = tx_trace(p, m, &hook);
	ret = data ? p->local_fn(p->local_ctx, data, len) : -EMSGSIZE;
	rte_pktmbuf_free(m);
	if (ret) {
		dr_capture_discard(copy);
		p->stats.tx_dropped++;
		return ret;
	}
	p->stats.loopback++;
	tx_done(p, copy, hook, len);
	return 0;
}

int dr_port_input(struct dr_port *p, const void *frame, size_t len)
{
	struct rte_mbuf *m;

	if (len > p->buf_size) {
		p->stats.rx_too_long++;
		p->stats.rx_dropped++;
		return -EMSGSIZE;
	}
	m = rte_pktmbuf_alloc(p->pool);
	if (!m) {
		p->stats.rx_dropped++;
		return -ENOBUFS;
	}
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), frame, len); /* fits: buf_size */
	rx_one(p, m, true);
	return 0;
}

static bool on_link(const struct dr_port *p, uint32_t ip)
{
	return (ip & p->netmask) == (p->ip & p->netmask);
}

/* Ethernet + IPv4 in m: fill the addresses, pad, loop back, send or queue. */
static int send_mbuf(struct dr_port *p, struct rte_mbuf *m)
{
	struct dr_eth_hdr *eth = rte_pktmbuf_mtod(m, struct dr_eth_hdr *);
	size_t l3 = sizeof(*eth);
	uint16_t type = ntohs(eth->type);
	const struct dr_ipv4_hdr *ip;
	uint32_t daddr, nexthop;

	if (type == DR_ETH_P_VLAN && m->data_len >= l3 + sizeof(struct dr_vlan_hdr)) {
		type = ntohs(rte_pktmbuf_mtod_offset(m, struct dr_vlan_hdr *, l3)->type);
		l3 += sizeof(struct dr_vlan_hdr);
	}
	if (p->ipv6 && type == DR_ETH_P_IPV6 && m->data_len >= l3 + sizeof(struct dr_ipv6_hdr)) {
		const uint8_t *d6 = rte_pktmbuf_mtod_offset(m, struct dr_ipv6_hdr *, l3)->daddr;

		/* never under 60 bytes: 14 + 40 + UDP + BTH + ICRC */
		memcpy(eth->src, p->mac, 6);
		if (!memcmp(d6, p->ip6, 16)) {
			memcpy(eth->dst, p->mac, 6);
			return p->local_fn ? local_xmit(p, m) : loop_xmit(p, m);
		}
		return dr_neigh_output6(p, d6, m);
	}
	if (p->ipv6 || type != DR_ETH_P_IPV4 || m->data_len < l3 + sizeof(*ip)) {
		rte_pktmbuf_free(m);
		return -EINVAL;
	}
	ip = rte_pktmbuf_mtod_offset(m, const struct dr_ipv4_hdr *, l3);
	daddr = ntohl(ip->daddr);
	if (m->pkt_len < DR_ETH_ZLEN) {
		unsigned pad = DR_ETH_ZLEN - m->pkt_len;
		char *tail = rte_pktmbuf_append(m, pad);

		if (!tail) {
			rte_pktmbuf_free(m);
			return -ENOBUFS;
		}
		memset(tail, 0, pad);
	}
	memcpy(eth->src, p->mac, 6);
	if (daddr == p->ip) {
		memcpy(eth->dst, p->mac, 6);
		return p->local_fn ? local_xmit(p, m) : loop_xmit(p, m);
	}
	nexthop = on_link(p, daddr) ? daddr : p->gateway;
	if (!nexthop) {
		rte_pktmbuf_free(m);
		return -ENETUNREACH;
	}
	return dr_neigh_output(p, nexthop, m);
}

struct rte_mbuf *dr_port_frame_alloc(struct dr_port *p, size_t len, void **data)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);

	if (!m) {
		p->stats.tx_nombuf++;
		return NULL;
	}
	*data = rte_pktmbuf_append(m, len);
	if (!*data) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	return m;
}

int dr_port_send(struct dr_port *p, const void *frame, size_t len)
{
	struct rte_mbuf *m;
	void *data;

	if (len > p->max_frame)
		return -EMSGSIZE;
	if (len < sizeof(struct dr_eth_hdr))
		return -EINVAL;
	m = dr_port_frame_alloc(p, len, &data);
	if (!m)
		return -ENOBUFS;
	memcpy(data, frame, len);
	return send_mbuf(p, m);
}

int dr_port_send_raw(struct dr_port *p, const void *frame, size_t len)
{
	struct rte_mbuf *m;
	void *data;

	if (len > p->max_frame)
		return -EMSGSIZE;
	m = dr_port_frame_alloc(p, len, &data);
	if (!m)
		return -ENOBUFS;
	memcpy(data, frame, len);
	return dr_port_xmit(p, m);
}

void *dr_port_buf_alloc(struct dr_port *p, size_t len, struct dr_port_buf **out)
{
	struct rte_mbuf *m;
	void *data;

	*out = NULL;
	if (len > p->max_frame || len < sizeof(struct dr_eth_hdr))
		return NULL;
	m = dr_port_frame_alloc(p, len, &data);
	if (!m)
		return NULL;
	*out = (struct dr_port_buf *)m;
	return data;
}

int dr_port_buf_send(struct dr_port *p, struct dr_port_buf *b)
{
	return send_mbuf(p, buf_mbuf(b));
}

void dr_port_buf_free(struct dr_port_buf *b)
{
	rte_pktmbuf_free(buf_mbuf(b));
}

static void extbuf_free(void *addr, void *opaque)
{
	struct dr_extbuf *x = opaque;

	x->done(x->arg);
}

int dr_port_send_zc(struct dr_port *p, const void *hdr, size_t hdr_len, const void *payload,
		    size_t payload_len, const void *trailer, size_t trailer_len,
		    void (*done)(void *arg), void *arg)
{
	size_t len = hdr_len + payload_len + trailer_len;
	struct rte_mbuf *h, *x, *t;
	struct dr_extbuf *xb;
	uint8_t *data;

	if (len > p->max_frame || hdr_len < sizeof(struct dr_eth_hdr) ||
	    trailer_len > DR_EXT_ROOM) {
		done(arg);
		return len > p->max_frame ? -EMSGSIZE : -EINVAL;
	}
	if (!p->zero_copy || !payload_len) {
		h = dr_port_frame_alloc(p, len, (void **)&data);
		if (h) {
			memcpy(data, hdr, hdr_len);
			memcpy(data + hdr_len, payload, payload_len);
			memcpy(data + hdr_len + payload_len, trailer, trailer_len);
		}
		done(arg);
		return h ? send_mbuf(p, h) : -ENOBUFS;
	}

	h = dr_port_frame_alloc(p, hdr_len, (void **)&data);
	x = rte_pktmbuf_alloc(p->ext_pool);
	/* always a third segment: it also takes the padding to 60 bytes */
	t = rte_pktmbuf_alloc(p->ext_pool);
	if (!h || !x || !t) {
		rte_pktmbuf_free(h);
		rte_pktmbuf_free(x);
		rte_pktmbuf_free(t);
		p->stats.tx_nombuf++;
		done(arg);
		return -ENOBUFS;
	}
	memcpy(data, hdr, hdr_len);

	xb = rte_mbuf_to_priv(x);
	xb->done = done;
	xb->arg = arg;
	xb->shinfo.free_cb = extbuf_free;
	xb->shinfo.fcb_opaque = xb;
	rte_mbuf_ext_refcnt_set(&xb->shinfo, 1);
	/* virtual devices only (zero_copy): the IOVA is never used for DMA */
	rte_pktmbuf_attach_extbuf(x, (void *)(uintptr_t)payload, (rte_iova_t)(uintptr_t)payload,
				  payload_len, &xb->shinfo);
	x->data_len = payload_len;
	x->pkt_len = payload_len;
	rte_pktmbuf_chain(h, x);

	t->data_off = 0; /* a small buffer: no headroom needed */
	memcpy(rte_pktmbuf_append(t, trailer_len), trailer, trailer_len);
	rte_pktmbuf_chain(h, t);
	return send_mbuf(p, h);
}

int dr_port_resolve(struct dr_port *p, uint32_t ip, uint8_t mac[6])
{
	uint32_t nexthop;

	if (p->ipv6)
		return -EINVAL;
	if (ip == p->ip) {
		memcpy(mac, p->mac, 6);
		return 0;
	}
	nexthop = on_link(p, ip) ? ip : p->gateway;
	if (!nexthop)
		return -ENETUNREACH;
	return dr_neigh_resolve(p, nexthop, mac);
}

/* ---- receive ------------------------------------------------------------------------- */

static void rx_frame(struct dr_port *p, struct rte_mbuf *m, bool looped)
{
	uint32_t len = rte_pktmbuf_pkt_len(m);
	const struct dr_eth_hdr *eth;
	const uint8_t *data;
	struct dr_pkt pkt;
	enum dr_pkt_verdict v;

	p->stats.rx_frames++;
	p->stats.rx_bytes += len;
	if (len > p->buf_size) {
		p->stats.rx_too_long++;
		goto drop;
	}
	/* the frame itself if contiguous, else a copy in rx_scratch */
	data = rte_pktmbuf_read(m, 0, len, p->rx_scratch);
	if (p->frame_fn)
		p->frame_fn(p->frame_ctx, DR_PORT_DIR_RX, data, len);
	if (len < sizeof(*eth)) {
		p->stats.rx_verdict[DR_PKT_SHORT_ETH]++;
		goto drop;
	}
	eth = (const struct dr_eth_hdr *)data;
	if (!looped && !memcmp(eth->src, p->mac, 6)) {
		p->stats.rx_looped++;
		goto drop;
	}
	if (eth->type == htons(DR_ETH_P_ARP)) {
		p->stats.rx_arp++;
		dr_neigh_arp_input(p, data, len);
		rte_pktmbuf_free(m);
		return;
	}
	if (p->ipv6 && eth->type == htons(DR_ETH_P_IPV6) && dr_neigh_nd_input(p, data, len)) {
		rte_pktmbuf_free(m);
		return;
	}
	if (memcmp(eth->dst, p->mac, 6)) {
		p->stats.rx_not_ours++;
		goto drop;
	}
	/* a place function needs the rx callback that accepts the frame */
	v = dr_pkt_parse(data, len,
			 (p->place_fn && p->rx_fn ? DR_PARSE_DEFER_PLACE : 0) |
			     (p->pk && !looped && dr_pk_icrc_ok(p, m) ? DR_PARSE_NO_ICRC : 0),
			 &pkt);
	if (v != DR_PKT_OK)
		goto bad;
	/* tagged with a VLAN ID: a VLAN interface's network, not the port's
	 * (a priority tag, VLAN ID 0, is the port's own: RoCE networks mark
	 * traffic classes with it).  A packet: port sees the kernel take the
	 * tag off, and drops such frames before they get here (port_pk.c). */
	if (pkt.vlan && (ntohs(pkt.vlan->tci) & 0x0fff)) {
		p->stats.rx_vlan++;
		goto drop;
	}
	if (p->ipv6 ? !pkt.ip6 || memcmp(pkt.ip6->daddr, p->ip6, 16)
		    : !pkt.ip4 || ntohl(pkt.ip4->daddr) != p->ip) {
		/* counted as before deferring: a bad ICRC first */
		v = DR_PKT_BAD_ICRC;
		if (!dr_pkt_icrc_finish(&pkt))
			goto bad;
		p->stats.rx_not_ours++;
		goto drop;
	}
	if (!p->rx_fn) {
		p->stats.rx_no_handler++;
		goto drop;
	}
	if (pkt.icrc_deferred) {
		/* a READ response, a WRITE MIDDLE or LAST: checked while it is
		 * copied into place, one pass over the payload instead of two
		 * (the engine names the place, which nothing reads before the
		 * operation completes) */
		struct iovec dst[DR_PORT_PLACE_MAX];
		unsigned n = p->place_fn(p->rx_ctx, &pkt, dst, DR_PORT_PLACE_MAX);

		v = DR_PKT_BAD_ICRC;
		if (!dr_pkt_icrc_place(&pkt, dst, n))
			goto bad;
		p->stats.rx_placed += pkt.payload_placed;
	}
	p->stats.rx_roce++;
	p->rx_kernel_ns = looped ? 0 : dr_pk_rx_time(p, m);
	p->rx_fn(p->rx_ctx, data, len, &pkt);
	p->rx_kernel_ns = 0;
	rte_pktmbuf_free(m);
	return;
bad:
	p->stats.rx_verdict[v]++;
	dr_capture_rx_verdict(p, v);
drop:
	p->stats.rx_dropped++;
	rte_pktmbuf_free(m);
}

/* The capture records the frame as it arrives and writes it when the port
 * and the rx callback are done with it (port_capture.c). */
static void rx_one(struct dr_port *p, struct rte_mbuf *m, bool looped)
{
	dr_capture_rx_begin(p, m);
	rx_frame(p, m, looped);
	dr_capture_rx_end(p);
}

int dr_port_poll(struct dr_port *p)
{
	struct rte_mbuf *pkts[DR_PORT_BURST];
	unsigned n, i, total;
	uint64_t now;
	int ret;

	ret = dr_port_thread_ensure();
	if (ret < 0)
		return ret;
	p->batch++;
	n = rte_ring_dequeue_burst(p->loop, (void **)pkts, DR_PORT_BURST, NULL);
	for (i = 0; i < n; i++)
		rx_one(p, pkts[i], true);
	total = n;
	/* no device after a failed re-creation (link faults) */
	n = !p->started ? 0
	    : p->pk	? dr_pk_rx(p, pkts, DR_PORT_BURST)
			: rte_eth_rx_burst(p->port_id, 0, pkts, DR_PORT_BURST);
	for (i = 0; i < n; i++) {
		if (p->pk)
			dr_pk_rx_hdrs(pkts[i]); /* pkts[i - 1] is freed */
		rx_one(p, pkts[i], false);
	}
	total += n;
	now = rte_get_timer_cycles();
	/* Timers once the receive ring is drained: after a process was off
	 * its CPU, the ACKs that arrived meanwhile are read before a
	 * retransmit timer that expired meanwhile fires and resends what
	 * they acknowledge (each such timeout resent up to a window over a
	 * lossless veth).  A ring that stays full delays them at most
	 * DR_PORT_TIMER_LATE_STEPS resolution steps (1 ms). */
	if (now >= p->timer_next &&
	    (n < DR_PORT_BURST || now - p->timer_next >= p->timer_res * DR_PORT_TIMER_LATE_STEPS)) {
		/* arms from inside the callbacks may lower it again */
		p->timer_next = now + p->timer_res;
		rte_timer_alt_manage(p->timer_id, &p->timer_lcore, 1, timer_run);
	}
	link_poll(p); /* an idle port too notices the link coming back */
	dr_port_batch_end(p);
	return total;
}
