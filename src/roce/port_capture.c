// SPDX-License-Identifier: BSD-2-Clause
/*
 * Capture of every frame a port sends and receives to a pcapng file
 * (FI_DROCE_PCAP), with the project's pcapng writer (tools/pcapng.c).
 * DPDK 22.11's rte_pcapng was used before; it stamps packets from a TSC
 * base (the files were dated 2251), names its interfaces by ethdev only and
 * writes no comment, flags or drop count on a packet, which is what a
 * capture that explains itself needs (issue 15).
 *
 * Records: a copy of each frame is taken before the device owns it
 * (af_packet frees the mbuf inside rte_eth_tx_burst), stamped then, and
 * written once the device took it, one write(2) per frame: the file is
 * current while the process runs, and a crash loses nothing written.  A
 * received frame is written when the port is done with it
 * (dr_capture_rx_end), or before any other record, so that what droce made
 * of it (a drop and its reason, an engine's note) is in its record.
 *
 * Timestamps: wall-clock time in nanoseconds (if_tsresol 9), read from
 * CLOCK_MONOTONIC plus the offset of CLOCK_REALTIME measured when the file
 * was opened: records stamped in order increase, whatever happens to the
 * system clock meanwhile.  A frame that waited for the link is stamped when
 * it was due (dr_capture_prepare_at), so it may be older than the record
 * before it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_version.h>

#include "port_priv.h"
#include "../../tools/pcapng.h"

/* a copy of each frame of a transmit burst (DR_PORT_TXQ) waits for the
 * burst to leave, and one received frame's; a power of two less one */
#define DR_CAPTURE_MBUFS (2 * DR_PORT_TXQ - 1)
#define DR_CAP_NOTE	 512 /* comment bytes of one record, NUL included */
#define DR_CAP_KEY	 64  /* bytes after the MAC addresses that name a frame to send */
#define DR_CAP_TX_NOTES	 16  /* notes waiting for their frame to leave */

/* In each copy's private area: what its record says besides the bytes. */
struct dr_cap_meta {
	uint64_t ts; /* ns since the epoch */
	uint32_t flags;
};

/* A note on a frame the port is about to send: matched, when a record is
 * written, by the frame's bytes from the Ethernet type on (the port fills
 * the MAC addresses in). */
struct dr_cap_txnote {
	uint16_t klen;
	uint8_t key[DR_CAP_KEY];
	char text[DR_CAP_NOTE];
};

struct dr_capture {
	int fd;
	struct dr_pcapng_writer *w;
	struct rte_mempool *pool;
	int64_t real_off; /* CLOCK_REALTIME - CLOCK_MONOTONIC at open, ns */
	uint64_t start;	  /* ns since the epoch, at open */
	/* the received frame being handled, written by dr_capture_rx_end */
	struct rte_mbuf *rx;
	bool rx_dropped;
	char rx_note[DR_CAP_NOTE];
	unsigned ntx;
	struct dr_cap_txnote tx[DR_CAP_TX_NOTES];
};

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t cap_now(const struct dr_capture *c)
{
	return mono_ns() + (uint64_t)c->real_off;
}

/* "iface=" of the device's arguments (net_af_packet, net_xdp), a
 * "packet:" port's interface, or NULL */
static const char *dev_iface(const struct dr_port *p, char *buf, size_t len)
{
	const struct rte_devargs *da = p->dev ? rte_dev_devargs(p->dev) : NULL;
	const char *s = da && da->args ? strstr(da->args, "iface=") : NULL;

	if (p->pk) {
		snprintf(buf, len, "%s", dr_pk_ifname(p));
		return buf;
	}
	if (!s || (s != da->args && s[-1] != ','))
		return NULL;
	s += strlen("iface=");
	snprintf(buf, len, "%.*s", (int)strcspn(s, ","), s);
	return buf;
}

/* if_name: the kernel interface if any, else the ethdev; if_description:
 * "droce port IF (ETHDEV, DRIVER) ADDRESS/PREFIX MAC", or without IF
 * "droce port ETHDEV (DRIVER) ..." */
static void describe(const struct dr_port *p, char *name, size_t nlen, char *desc, size_t dlen)
{
	char iface[64], dev[64 + sizeof(p->name) + 64], addr[INET6_ADDRSTRLEN];
	struct rte_eth_dev_info info;
	const char *drv = "?";

	if (rte_eth_dev_info_get(p->port_id, &info) == 0 && info.driver_name)
		drv = info.driver_name;
	if (dev_iface(p, iface, sizeof(iface))) {
		snprintf(name, nlen, "%s", iface);
		snprintf(dev, sizeof(dev), "%s (%s, %s)", iface, p->name, drv);
	} else {
		snprintf(name, nlen, "%s", p->name);
		snprintf(dev, sizeof(dev), "%s (%s)", p->name, drv);
	}
	if (p->ipv6) {
		inet_ntop(AF_INET6, p->ip6, addr, sizeof(addr));
	} else {
		uint32_t a = htonl(p->ip);

		inet_ntop(AF_INET, &a, addr, sizeof(addr));
	}
	snprintf(desc, dlen, "droce port %s %s/%u %02x:%02x:%02x:%02x:%02x:%02x", dev, addr,
		 p->prefix_len, p->mac[0], p->mac[1], p->mac[2], p->mac[3], p->mac[4], p->mac[5]);
}

int dr_capture_open(struct dr_port *p, const char *path, struct dr_port_err *err)
{
	char name[RTE_MEMPOOL_NAMESIZE], os[200], app[64], ifname[64], desc[384];
	struct dr_pcapng_wopts o = {0};
	struct dr_capture *c;
	struct timespec rt;
	struct utsname u;
	int fd, e;

	c = calloc(1, sizeof(*c));
	if (!c)
		return dr_port_fail(err, -ENOMEM, DR_PORT_PARAM_NONE, "%s: out of memory", p->name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		e = errno;
		free(c);
		return dr_port_fail(err, -e, DR_PORT_PARAM_PCAP,
				    "cannot create capture file '%s': %s", path, strerror(e));
	}
	c->fd = fd;
	snprintf(name, sizeof(name), "drp%u_cap", p->serial);
	c->pool = rte_pktmbuf_pool_create(name, DR_CAPTURE_MBUFS, 0, sizeof(struct dr_cap_meta),
					  p->buf_size + RTE_PKTMBUF_HEADROOM, p->socket_id);
	if (!c->pool) {
		e = rte_errno;
		close(c->fd);
		free(c);
		return dr_port_fail(err, -e, DR_PORT_PARAM_NONE,
				    "cannot create the capture mempool: %s (EAL memory: -m)",
				    rte_strerror(e));
	}
	if (uname(&u) == 0)
		snprintf(os, sizeof(os), "%s %s", u.sysname, u.release);
	else
		snprintf(os, sizeof(os), "Linux");
	snprintf(app, sizeof(app), "droce (%s)", rte_version());
	describe(p, ifname, sizeof(ifname), desc, sizeof(desc));
	o.snaplen = (uint32_t)p->buf_size;
	o.nanoseconds = true;
	o.os = os;
	o.appname = app;
	o.if_name = ifname;
	o.if_description = desc;
	/* the two clocks read back to back: the offset is right to the
	 * time between the reads */
	clock_gettime(CLOCK_REALTIME, &rt);
	c->real_off = (int64_t)((uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec) -
		      (int64_t)mono_ns();
	c->start = cap_now(c);
	c->w = dr_pcapng_writer_open_fd(c->fd, &o);
	if (!c->w) {
		e = errno ? errno : EIO;
		close(c->fd);
		rte_mempool_free(c->pool);
		free(c);
		return dr_port_fail(err, -e, DR_PORT_PARAM_PCAP,
				    "cannot write capture file '%s': %s", path, strerror(e));
	}
	p->pcapng = c;
	dr_port_log(DR_PORT_LOG_INFO, "%s: capturing to %s", p->name, path);
	return 0;
}

/* The note waiting for this frame, taken off the list, or NULL. */
static const char *tx_note_take(struct dr_capture *c, const uint8_t *data, uint32_t len, char *out)
{
	for (unsigned i = 0; i < c->ntx; i++) {
		struct dr_cap_txnote *n = &c->tx[i];

		if (len < 12u + n->klen || memcmp(data + 12, n->key, n->klen))
			continue;
		memcpy(out, n->text, DR_CAP_NOTE);
		memmove(n, n + 1, (c->ntx - i - 1) * sizeof(*n));
		c->ntx--;
		return out;
	}
	return NULL;
}

static void write_record(struct dr_port *p, struct rte_mbuf *copy, const char *comment,
			 uint32_t flags, bool dropped)
{
	struct dr_capture *c = p->pcapng;
	const struct dr_cap_meta *m = rte_mbuf_to_priv(copy);
	struct dr_pcapng_epb e = {
	    .ts = m->ts,
	    .flags = m->flags | flags,
	    .has_dropcount = dropped,
	    .dropcount = 1,
	    .comment = comment && *comment ? comment : NULL,
	};

	if (dr_pcapng_write_epb(c->w, &e, rte_pktmbuf_mtod(copy, const void *), copy->data_len) < 0)
		p->stats.capture_errors++;
}

/* The received frame being handled, if any, goes to the file. */
static void rx_write(struct dr_port *p)
{
	struct dr_capture *c = p->pcapng;
	struct rte_mbuf *copy = c->rx;

	if (!copy)
		return;
	c->rx = NULL;
	write_record(p, copy, c->rx_note, 0, c->rx_dropped);
	rte_pktmbuf_free(copy);
}

void dr_capture_close(struct dr_port *p)
{
	struct dr_capture *c = p->pcapng;
	uint64_t now;

	rx_write(p);
	now = cap_now(c);
	if (dr_pcapng_write_isb(c->w, now, c->start, now, p->stats.rx_frames,
				p->stats.capture_errors) < 0 ||
	    dr_pcapng_writer_close(c->w) < 0)
		dr_port_log(DR_PORT_LOG_WARN, "%s: the capture file could not be written whole",
			    p->name);
	if (close(c->fd) < 0)
		dr_port_log(DR_PORT_LOG_WARN, "%s: closing the capture file: %s", p->name,
			    strerror(errno));
	rte_mempool_free(c->pool);
	free(c);
	p->pcapng = NULL;
}

/* A stamped copy of m; before it, the received frame being handled is
 * written (a record stamped later must not precede it in the file). */
static struct rte_mbuf *copy_frame(struct dr_port *p, const struct rte_mbuf *m,
				   enum dr_port_dir dir, uint64_t ts)
{
	struct dr_capture *c = p->pcapng;
	struct dr_cap_meta *meta;
	struct rte_mbuf *copy;
	const void *src;
	void *dst;

	rx_write(p);
	/* the copy is one segment of buf_size */
	if (m->pkt_len > p->buf_size) {
		p->stats.capture_errors++;
		return NULL;
	}
	copy = rte_pktmbuf_alloc(c->pool);
	if (!copy) {
		p->stats.capture_errors++;
		return NULL;
	}
	dst = rte_pktmbuf_append(copy, (uint16_t)m->pkt_len);
	src = rte_pktmbuf_read(m, 0, m->pkt_len, dst);
	if (src != dst)
		memcpy(dst, src, m->pkt_len);
	meta = rte_mbuf_to_priv(copy);
	meta->ts = ts;
	meta->flags = dir == DR_PORT_DIR_RX ? DR_PCAPNG_FLAG_INBOUND : DR_PCAPNG_FLAG_OUTBOUND;
	return copy;
}

struct rte_mbuf *dr_capture_prepare(struct dr_port *p, const struct rte_mbuf *m,
				    enum dr_port_dir dir)
{
	return copy_frame(p, m, dir, cap_now(p->pcapng));
}

struct rte_mbuf *dr_capture_prepare_at(struct dr_port *p, const struct rte_mbuf *m,
				       enum dr_port_dir dir, uint64_t tsc)
{
	uint64_t now = cap_now(p->pcapng), d = rte_get_tsc_cycles(), hz = rte_get_tsc_hz(), ago;

	/* TSC ticks to ns without overflow: whole seconds, then the rest */
	d = d > tsc ? d - tsc : 0;
	ago = d / hz * 1000000000u + d % hz * 1000000000u / hz;
	return copy_frame(p, m, dir, ago < now ? now - ago : 0);
}

void dr_capture_commit(struct dr_port *p, struct rte_mbuf *copy)
{
	struct dr_capture *c = p->pcapng;
	char note[DR_CAP_NOTE];
	const char *comment = NULL;

	rx_write(p);
	if (c->ntx)
		comment =
		    tx_note_take(c, rte_pktmbuf_mtod(copy, const uint8_t *), copy->data_len, note);
	write_record(p, copy, comment, 0, false);
	rte_pktmbuf_free(copy);
}

void dr_capture_discard(struct rte_mbuf *copy)
{
	rte_pktmbuf_free(copy);
}

void dr_capture_rx_begin(struct dr_port *p, const struct rte_mbuf *m)
{
	struct dr_capture *c = p->pcapng;
	struct rte_mbuf *copy;

	if (!c)
		return;
	copy = dr_capture_prepare(p, m, DR_PORT_DIR_RX);
	c->rx = copy;
	c->rx_dropped = false;
	c->rx_note[0] = '\0';
}

void dr_capture_rx_end(struct dr_port *p)
{
	if (p->pcapng)
		rx_write(p);
}

/* Append "; "-separated text to a record's comment (cut to DR_CAP_NOTE). */
static void note_add(char *note, const char *fmt, va_list ap)
{
	dr_note_vadd(note, DR_CAP_NOTE, fmt, ap);
}

static void note_addf(char *note, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_addf(char *note, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	note_add(note, fmt, ap);
	va_end(ap);
}

static void rx_drop(struct dr_port *p, uint32_t flags, const char *fmt, va_list ap)
{
	struct dr_capture *c = p->pcapng;
	struct rte_mbuf *copy = c->rx;
	char rest[DR_CAP_NOTE];
	size_t n;

	if (!copy)
		return;
	c->rx_dropped = true;
	((struct dr_cap_meta *)rte_mbuf_to_priv(copy))->flags |= flags;
	/* first in the comment: it is what the record is about */
	memcpy(rest, c->rx_note, sizeof(rest));
	n = (size_t)snprintf(c->rx_note, sizeof(c->rx_note), "dropped: ");
	vsnprintf(c->rx_note + n, sizeof(c->rx_note) - n, fmt, ap);
	if (rest[0])
		note_addf(c->rx_note, "%s", rest);
}

static void rx_drop_f(struct dr_port *p, uint32_t flags, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void rx_drop_f(struct dr_port *p, uint32_t flags, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rx_drop(p, flags, fmt, ap);
	va_end(ap);
}

/* Whether a frame the parser refused before it reached the UDP port may be
 * RoCEv2: UDP to port 4791 as far as its bytes go (a frame too short to
 * tell is taken as one).  A kernel's GSO-sized TCP segment, seen by
 * af_packet with an IP length the frame does not match, is not. */
static bool maybe_roce(const uint8_t *f, size_t len)
{
	size_t off = 12, udp;
	uint16_t type;

	if (len < off + 2)
		return true;
	type = (uint16_t)(f[off] << 8 | f[off + 1]);
	if (type == 0x8100) {
		off += 4;
		if (len < off + 2)
			return true;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (type == 0x0800) {
		if (len < off + 10)
			return true;
		if (f[off + 9] != 17)
			return false;
		udp = off + ((f[off] & 0xf) * 4u < 20 ? 20 : (f[off] & 0xf) * 4u);
	} else if (type == 0x86dd) {
		if (len < off + 7)
			return true;
		if (f[off + 6] != 17)
			return false;
		udp = off + 40;
	} else {
		return false;
	}
	return len < udp + 4 || (f[udp + 2] << 8 | f[udp + 3]) == DR_ROCE_UDP_PORT;
}

void dr_capture_rx_verdict(struct dr_port *p, enum dr_pkt_verdict v)
{
	struct rte_mbuf *rx = p->pcapng ? p->pcapng->rx : NULL;
	uint32_t flags = 0;

	/* not RoCEv2: other traffic the interface carries, not droce's */
	if (!rx || v == DR_PKT_NOT_IP || v == DR_PKT_NOT_UDP || v == DR_PKT_NOT_ROCE)
		return;
	if (v < DR_PKT_NOT_ROCE &&
	    !maybe_roce(rte_pktmbuf_mtod(rx, const uint8_t *), rte_pktmbuf_data_len(rx)))
		return;
	/* the link-layer error bits that say the same about the frame */
	if (v == DR_PKT_BAD_ICRC)
		flags = DR_PCAPNG_FLAG_CRC_ERR;
	else if (v == DR_PKT_TOO_LONG)
		flags = DR_PCAPNG_FLAG_TOO_LONG;
	else if (v == DR_PKT_SHORT_ETH || v == DR_PKT_SHORT_IP || v == DR_PKT_SHORT_UDP ||
		 v == DR_PKT_SHORT_BTH || v == DR_PKT_SHORT_HDRS || v == DR_PKT_RUNT)
		flags = DR_PCAPNG_FLAG_TOO_SHORT;
	rx_drop_f(p, flags, "%s", dr_pkt_verdict_str(v));
}

/* ---- annotations (include/dr_port.h) ---- */

bool dr_port_capturing(const struct dr_port *p)
{
	return p->pcapng != NULL;
}

void dr_port_capture_note(struct dr_port *p, const void *frame, size_t len, const char *fmt, ...)
{
	struct dr_capture *c = p->pcapng;
	struct dr_cap_txnote *n;
	const uint8_t *f = frame;
	size_t klen;
	va_list ap;

	if (!c || len <= 12)
		return;
	klen = len - 12 < DR_CAP_KEY ? len - 12 : DR_CAP_KEY;
	va_start(ap, fmt);
	if (c->rx && c->rx->data_len >= 12 + klen &&
	    !memcmp(rte_pktmbuf_mtod_offset(c->rx, const uint8_t *, 12), f + 12, klen)) {
		note_add(c->rx_note, fmt, ap);
		va_end(ap);
		return;
	}
	/* a frame to send: one note per frame, joined if there are several */
	for (unsigned i = 0; i < c->ntx; i++) {
		n = &c->tx[i];
		if (n->klen == klen && !memcmp(n->key, f + 12, klen)) {
			note_add(n->text, fmt, ap);
			va_end(ap);
			return;
		}
	}
	if (c->ntx == DR_CAP_TX_NOTES) {
		/* the oldest never left (or left unmatched): lost */
		memmove(c->tx, c->tx + 1, (DR_CAP_TX_NOTES - 1) * sizeof(c->tx[0]));
		c->ntx--;
		p->stats.capture_errors++;
	}
	n = &c->tx[c->ntx++];
	n->klen = (uint16_t)klen;
	memcpy(n->key, f + 12, klen);
	n->text[0] = '\0';
	note_add(n->text, fmt, ap);
	va_end(ap);
}

void dr_port_capture_drop(struct dr_port *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->pcapng)
		return;
	va_start(ap, fmt);
	rx_drop(p, 0, fmt, ap);
	va_end(ap);
}
