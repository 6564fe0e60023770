// SPDX-License-Identifier: BSD-2-Clause
/*
 * A device: the DPDK port behind a domain, with the CM on its QP1 and the
 * table of its QPs.  Frames come in through dr_port_poll() (driven by
 * dr_dev_progress), are dispatched by destination QP: QP1 MADs to the CM,
 * the rest to the endpoint that owns the QPN.
 *
 * Many processes on one kernel interface (net_af_packet): each has its own
 * device and sees every frame on the interface.  The device's registry
 * (registry.c: byte-range locks on one file per interface, dropped by the
 * kernel when a process dies) makes what frames are routed by unique on
 * the host -- QPNs (dr_dev_qp_create), rdma_cm ports (dr_dev_port_alloc,
 * dr_dev_listen) and CM comm IDs (the CM's comm_id_claim) -- and tells
 * whose a frame is: a frame for another process's QPN is left alone
 * without a word (counted in rx_foreign, not as a drop: nothing is wrong
 * with it), one for a QPN nobody holds is an unknown QPN as before; a MAD
 * for another process's listener or connection is left to it, and one for
 * nobody's is answered by the one process holding the CM responder role
 * (cm_whose).  ARP: every process answers for the host's address with the
 * interface's MAC, as the kernel does too; the answers are identical, and
 * a peer takes the first and counts the others as unsolicited (a Linux
 * peer just refreshes its entry).
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "dr_fi.h"

static const char *const param_names[] = {
	[DR_PORT_PARAM_NONE] = NULL,
	[DR_PORT_PARAM_EAL_ARGS] = "FI_DROCE_EAL_ARGS",
	[DR_PORT_PARAM_DEVICE] = "FI_DROCE_DEVICE",
	[DR_PORT_PARAM_ADDR] = "FI_DROCE_ADDR",
	[DR_PORT_PARAM_MTU] = "FI_DROCE_MTU",
	[DR_PORT_PARAM_PCAP] = "FI_DROCE_PCAP",
};

static void port_log(void *ctx, enum dr_port_log_level level, const char *msg)
{
	switch (level) {
	case DR_PORT_LOG_WARN:
		DR_WARN(FI_LOG_DOMAIN, "%s\n", msg);
		break;
	case DR_PORT_LOG_INFO:
		DR_INFO(FI_LOG_DOMAIN, "%s\n", msg);
		break;
	default:
		DR_DBG(FI_LOG_DOMAIN, "%s\n", msg);
		break;
	}
}

static void set_port_log(void)
{
	dr_port_set_log(port_log, NULL);
}

/* ---- QP1: the CM's MADs as UD SEND_ONLY frames (docs/protocol.md C.1) -- */

/* The CM's notes on the MAD it sends next go on that MAD's frame. */
static void cm_tx_noted(struct dr_dev *dev, const uint8_t *frame, int len)
{
	if (!dev->cm_tx_note[0])
		return;
	if (len > 0) /* else not sent: the notes go with it */
		dr_port_capture_note(dev->port, frame, (size_t)len, "%s", dev->cm_tx_note);
	dev->cm_tx_note[0] = '\0';
}

static int cm_send_mad(void *ctx, uint32_t dst_ip4, const uint8_t *mad)
{
	struct dr_dev *dev = ctx;
	uint8_t frame[DR_CM_FRAME_MAX];
	int len, ret;

	len = dr_cm_mad_frame(&dev->cm, dst_ip4, mad, frame, sizeof(frame));
	cm_tx_noted(dev, frame, len);
	if (len < 0)
		return len;
	ret = dr_port_send(dev->port, frame, (size_t)len);
	if (ret && ret != -EAGAIN)
		DR_DBG(FI_LOG_EP_CTRL, "CM MAD to %08x not sent: %d\n", dst_ip4, ret);
	return ret;
}

static int cm_send_mad6(void *ctx, const uint8_t dst_ip6[16], const uint8_t *mad)
{
	struct dr_dev *dev = ctx;
	uint8_t frame[DR_CM_FRAME_MAX];
	char a[INET6_ADDRSTRLEN] __attribute__((unused)); /* DR_DBG may compile out */
	int len, ret;

	len = dr_cm_mad_frame6(&dev->cm, dst_ip6, mad, frame, sizeof(frame));
	cm_tx_noted(dev, frame, len);
	if (len < 0)
		return len;
	ret = dr_port_send(dev->port, frame, (size_t)len);
	if (ret && ret != -EAGAIN)
		DR_DBG(FI_LOG_EP_CTRL, "CM MAD to %s not sent: %d\n",
		       inet_ntop(AF_INET6, dst_ip6, a, sizeof(a)), ret);
	return ret;
}

static uint64_t cm_now_ns(void *ctx)
{
	return dr_port_now_ns();
}

static void cm_timer_set(void *ctx, uint64_t deadline_ns)
{
	struct dr_dev *dev = ctx;
	uint64_t now = dr_port_now_ns();

	if (deadline_ns == UINT64_MAX)
		dr_port_timer_cancel(dev->cm_timer);
	else
		dr_port_timer_arm(dev->cm_timer, deadline_ns > now ? deadline_ns - now : 0);
}

static void cm_timer_fire(void *arg)
{
	struct dr_dev *dev = arg;

	dr_cm_tick(&dev->cm);
}

static void cm_event(void *ctx, const struct dr_cm_event *ev)
{
	struct dr_ep *ep;

	if (ev->type == DR_CM_EV_CONNREQ) {
		dr_pep_cm_connreq(ev->listen_ctx, ev);
		return;
	}
	if (ev->type == DR_CM_EV_CONNREQ_GONE) { /* the id's ctx is its connreq */
		dr_pep_cm_gone(ev);
		return;
	}
	ep = ev->id->ctx;
	if (ep)
		dr_ep_cm_event(ep, ev);
}

static void cm_log(void *ctx, const char *msg)
{
	DR_DBG(FI_LOG_EP_CTRL, "%s\n", msg);
}

static bool cm_noting(void *ctx)
{
	struct dr_dev *dev = ctx;

	return dr_port_capturing(dev->port);
}

/* On the frame of the MAD being received, or kept for the frame of the
 * one about to be sent (cm_tx_noted). */
static void cm_note(void *ctx, const uint8_t *mad, const char *text)
{
	struct dr_dev *dev = ctx;
	size_t n = strlen(dev->cm_tx_note);

	if (dev->cm_rx && mad == dev->cm_rx->payload) {
		dr_port_capture_note(dev->port, dev->cm_rx->frame, dev->cm_rx->frame_len, "%s",
				     text);
		return;
	}
	snprintf(dev->cm_tx_note + n, sizeof(dev->cm_tx_note) - n, "%s%s", n ? "; " : "", text);
}

/* ---- the other processes on the interface (registry.c) ------------------- */

static bool port_mine(const struct dr_dev *dev, uint16_t port)
{
	return dev->port_mine[port >> 3] & (1u << (port & 7));
}

static int cm_comm_id_claim(void *ctx, uint32_t comm_id)
{
	struct dr_dev *dev = ctx;
	int ret = dr_reg_claim(dev->reg, DR_REG_COMM_ID, comm_id);

	if (ret && ret != -EBUSY)
		DR_DBG(FI_LOG_EP_CTRL, "comm ID %08x not registered: %s\n", comm_id,
		       strerror(-ret));
	return ret == -EBUSY ? -EBUSY : 0;
}

static void cm_comm_id_release(void *ctx, uint32_t comm_id)
{
	struct dr_dev *dev = ctx;

	dr_reg_release(dev->reg, DR_REG_COMM_ID, comm_id);
}

/* Several processes on one interface (FI_DROCE_RX_FILTER, on by default):
 * the kernel drops, before copying them, the RoCEv2 frames for QPNs that
 * are not this process's (port_pk.c), unless this process holds the CM
 * responder role, which sees every frame so that frames for QPNs nobody
 * holds are still counted.  Alone on the interface, a process holds that
 * role: it sees every frame. */
static void dev_rx_filter(struct dr_dev *dev)
{
	dr_port_rx_filter(dev->port, dr_settings_get()->rx_filter && dev->reg &&
					 !dev->rx_filter_off && !dr_reg_is_responder(dev->reg));
}

static void dev_rx_qpn(struct dr_dev *dev, uint32_t qpn, bool on)
{
	if (dr_port_rx_qpn(dev->port, qpn, on) == -ENOMEM && on) {
		/* better every frame than none of this QP's */
		dev->rx_filter_off = true;
		dev_rx_filter(dev);
	}
}

/* What a MAD names that our CM has nothing for: ours to answer only if no
 * other process holds it and we answer for nobody.  A REQ for a port we
 * hold without listening on it (a connect's source port) is ours: REJ. */
static enum dr_cm_whose cm_whose(void *ctx, enum dr_cm_key key, uint32_t v)
{
	struct dr_dev *dev = ctx;

	if (!dev->reg)
		return DR_CM_WHOSE_MINE;
	if (key == DR_CM_KEY_PORT && port_mine(dev, (uint16_t)v))
		return DR_CM_WHOSE_MINE;
	if (key != DR_CM_KEY_NONE &&
	    dr_reg_foreign(dev->reg, key == DR_CM_KEY_PORT ? DR_REG_PORT : DR_REG_COMM_ID, v))
		return DR_CM_WHOSE_OTHER;
	/* A MAD that waited in our ring longer than a release's grace may
	 * have had an owner that answered it and has died since (kill -9
	 * lets go of everything at once): too old to answer for nobody.  If
	 * nobody did, its sender's CM resends it, and the copy is young. */
	if (dev->cm_rx && dr_port_rx_age_ns(dev->port) > DR_REG_GRACE_NS) {
		dev->cm_stale++;
		return DR_CM_WHOSE_NOBODY;
	}
	if (!dr_reg_responder(dev->reg))
		return DR_CM_WHOSE_NOBODY;
	dev_rx_filter(dev); /* the role may be new: every frame from now on */
	return DR_CM_WHOSE_MINE;
}

static const struct dr_cm_ops dev_cm_ops = {
    .send_mad = cm_send_mad,
    .send_mad6 = cm_send_mad6,
    .now_ns = cm_now_ns,
    .timer_set = cm_timer_set,
    .event = cm_event,
    .log = cm_log,
    .comm_id_claim = cm_comm_id_claim,
    .comm_id_release = cm_comm_id_release,
    .whose = cm_whose,
    .noting = cm_noting,
    .note = cm_note,
};

/* ---- receive dispatch ----------------------------------------------------- */

/*
 * The device's receive checks, before any QP (rxe_recv.c hdr_check): the
 * port has checked MAC, IP, UDP port, ICRC and TVer.  QP1 takes UD
 * SEND_ONLY MADs with a valid P_Key and the GSI Q_Key; every other frame
 * goes to the QP its DestQP names, which checks the rest (dr_qp_input).
 * Every drop is counted by reason in dev->rx_drops (the QPs add theirs).
 */
static void dev_drop(struct dr_dev *dev, enum dr_rx_drop why, const struct dr_pkt *pkt)
{
	dev->rx_drops[why]++;
	/* the capture's record of the frame says so (dr_rx_drop_names) */
	if (!dr_port_capturing(dev->port))
		return;
	if (why == DR_RX_DROP_PKEY)
		dr_port_capture_drop(dev->port, "%s, P_Key 0x%04x", dr_rx_drop_names[why],
				     dr_bth_pkey(pkt->bth));
	else
		dr_port_capture_drop(dev->port, "%s, QPN 0x%06x", dr_rx_drop_names[why], pkt->dqpn);
}

/* A frame for a QPN we do not have: does another process on the
 * interface hold it?  Its frames keep coming (every process sees them),
 * so a yes is remembered for a moment instead of asking the kernel for
 * each; a QPN whose process closed it meanwhile is counted as unknown
 * again once that moment is over. */
#define DR_DEV_FOREIGN_TTL_NS 100000000ull

static bool dev_qpn_foreign(struct dr_dev *dev, uint32_t qpn)
{
	struct dr_foreign_qpn *f;
	uint64_t now;

	if (!dev->reg)
		return false;
	/* QPNs are random: their low bits index well */
	f = &dev->foreign_qpn[qpn % (sizeof(dev->foreign_qpn) / sizeof(dev->foreign_qpn[0]))];
	now = dr_port_now_ns();
	if (f->qpn == qpn && now < f->until_ns)
		return true;
	if (!dr_reg_foreign(dev->reg, DR_REG_QPN, qpn))
		return false;
	f->qpn = qpn;
	f->until_ns = now + DR_DEV_FOREIGN_TTL_NS;
	return true;
}

static void dev_rx(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	struct dr_dev *dev = ctx;
	struct dr_ep *ep;

	if (dev->cfg.ipv6 ? !pkt->ip6 : !pkt->ip4) {
		/* the other family than the device's (the port keeps only
		 * frames to its own address, so none come) */
		dev_drop(dev, DR_RX_DROP_NOT_IPV4, pkt);
		return;
	}
	if (pkt->dqpn == DR_GSI_QPN) {
		/* rxe_recv.c check_keys: a valid P_Key, and QP1 wants exactly
		 * the GSI Q_Key */
		if (!dr_pkey_match(dr_bth_pkey(pkt->bth), DR_DEF_PKEY))
			dev_drop(dev, DR_RX_DROP_PKEY, pkt);
		else if (pkt->opcode != DR_OP_UD_SEND_ONLY ||
			 dr_deth_qkey(dr_pkt_deth(pkt)) != DR_GSI_QKEY)
			dev_drop(dev, DR_RX_DROP_GSI, pkt);
		else {
			dev->cm_rx = pkt;
			if (pkt->ip6)
				dr_cm_recv6(&dev->cm, pkt->ip6->saddr, pkt->payload,
					    pkt->payload_len);
			else
				dr_cm_recv(&dev->cm, ntohl(pkt->ip4->saddr), pkt->payload,
					   pkt->payload_len);
			dev->cm_rx = NULL;
		}
		return;
	}
	/* QPN 0 (the SMI's) is never in the table.  A placed frame's
	 * endpoint is the one dev_place just found: the port calls it for this
	 * frame and then this, with nothing in between that could close it */
	ep = pkt->payload_placed ? dev->placed_ep : dr_idmap_find(&dev->qps, pkt->dqpn);
	if (!ep && dev_qpn_foreign(dev, pkt->dqpn)) {
		dev->rx_foreign++; /* another process's: not ours to judge */
		return;
	}
	if (!ep || !ep->qp) {
		dev_drop(dev, DR_RX_DROP_UNKNOWN_QPN, pkt);
		return;
	}
	dr_ep_input(ep, pkt);
}

/* Where a placeable frame's payload goes before its ICRC is checked
 * (dr_port_set_place): the QP it is for names the unfilled part of its
 * READ, or the next bytes of the WRITE it is receiving, if it is the packet
 * it waits for. */
static unsigned dev_place(void *ctx, const struct dr_pkt *pkt, struct iovec *dst, unsigned max)
{
	struct dr_dev *dev = ctx;
	struct dr_ep *ep = dr_idmap_find(&dev->qps, pkt->dqpn);

	dev->placed_ep = ep; /* for dev_rx, if the frame is placed */
	return ep && ep->qp ? dr_qp_place(ep->qp, pkt, dst, max) : 0;
}

/* ---- QPNs ----------------------------------------------------------------- */

static int dev_qpn_alloc(struct dr_dev *dev, struct dr_ep *ep, uint32_t *qpn)
{
	unsigned tries = 0;
	int ret;

	/* random over [2, 2^24): QPN 0 and 1 are the SMI and GSI QPs.  A
	 * late frame for a closed QP meets its successor only if the draw
	 * repeats its QPN (2^-24).  Claimed on the host, so that no other
	 * process on the interface has it: a draw another holds is drawn
	 * again (the processes' QPs are a tiny part of the space, so that
	 * is rare; the bound stops a squatter from making us spin). */
	for (;;) {
		ret = dr_idmap_alloc(&dev->qps, DR_QPN_MASK, DR_GSI_QPN + 1, ep, qpn);
		if (ret)
			break;
		ret = dr_reg_claim(dev->reg, DR_REG_QPN, *qpn);
		if (!ret) {
			/* before any peer can learn it */
			dr_local_qpn_add(dev->local, *qpn);
			dev_rx_qpn(dev, *qpn, true);
			return 0;
		}
		dr_idmap_remove(&dev->qps, *qpn);
		if (ret != -EBUSY) {
			DR_WARN(FI_LOG_EP_CTRL, "fi_endpoint: cannot claim a QPN in %s: %s\n",
				dr_reg_path(dev->reg), strerror(-ret));
			return -FI_EIO;
		}
		if (++tries == 64) {
			DR_WARN(FI_LOG_EP_CTRL,
				"fi_endpoint: 64 random QPNs in a row are held "
				"by other processes on %s (%s)\n",
				dev->cfg.name, dr_reg_path(dev->reg));
			return -FI_ENOSPC;
		}
	}
	if (ret == -ENOSPC || ret == -EAGAIN) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_endpoint: all %d QPs of %s are in use\n", DR_MAX_EP,
			dev->cfg.name);
		return -FI_ENOSPC;
	}
	if (ret) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_endpoint: no random QPN: getrandom: %s\n",
			strerror(-ret));
		return -FI_EIO;
	}
	return 0;
}

static void dev_qpn_free(struct dr_dev *dev, uint32_t qpn)
{
	dr_idmap_remove(&dev->qps, qpn);
	dr_local_qpn_del(dev->local, qpn);
	dev_rx_qpn(dev, qpn, false);
	dr_reg_release(dev->reg, DR_REG_QPN, qpn);
}

int dr_dev_qp_create(struct dr_dev *dev, struct dr_ep *ep, struct dr_qp_init_attr *ia,
		     struct dr_qp **out)
{
	int ret = dev_qpn_alloc(dev, ep, &ia->qpn);

	if (ret)
		return ret;
	ia->mrt = &dev->mrt;
	ia->port_drops = dev->rx_drops;
	*out = dr_qp_create(ia);
	if (!*out) {
		dev_qpn_free(dev, ia->qpn);
		return -FI_ENOMEM;
	}
	return 0;
}

void dr_dev_qp_destroy(struct dr_dev *dev, struct dr_qp *qp, struct dr_ep *ep)
{
	if (dr_idmap_find(&dev->qps, dr_qp_num(qp)) == ep)
		dev_qpn_free(dev, dr_qp_num(qp));
	dr_tel_qp_gone(dev, ep, qp);
	dr_qp_destroy(qp);
}

/* ---- rdma_cm ports ------------------------------------------------------------ */

/* port for this device: not one it has, nor one another process on the
 * interface has (a listener there, or a connection's source port) */
static int port_claim(struct dr_dev *dev, uint16_t port)
{
	int ret;

	if (port_mine(dev, port))
		return -FI_EADDRINUSE;
	ret = dr_reg_claim(dev->reg, DR_REG_PORT, port);
	if (ret == -EBUSY)
		return -FI_EADDRINUSE;
	if (ret) /* the registry failed us: carry on as if alone */
		DR_DBG(FI_LOG_EP_CTRL, "port %u not registered: %s\n", port, strerror(-ret));
	dev->port_mine[port >> 3] |= (uint8_t)(1u << (port & 7));
	return 0;
}

void dr_dev_port_free(struct dr_dev *dev, uint16_t port)
{
	if (!port_mine(dev, port))
		return;
	dev->port_mine[port >> 3] &= (uint8_t) ~(1u << (port & 7));
	dr_reg_release(dev->reg, DR_REG_PORT, port);
}

int dr_dev_port_alloc(struct dr_dev *dev, uint16_t *port)
{
	unsigned tries;

	/* rdma_cm's ephemeral range, in turn from where the last one was */
	for (tries = 0; tries < 0x4000; tries++) {
		uint16_t p = dev->port_next = (uint16_t)(0xc000 | ((dev->port_next + 1) & 0x3fff));

		if (!port_claim(dev, p)) {
			*port = p;
			return 0;
		}
	}
	DR_WARN(FI_LOG_EP_CTRL, "%s: every rdma_cm port 49152..65535 is in use\n", dev->cfg.name);
	return -FI_EADDRINUSE;
}

int dr_dev_listen(struct dr_dev *dev, uint16_t *port, unsigned backlog, void *ctx,
		  struct dr_cm_listener **lsn)
{
	uint16_t p = *port;
	int ret;

	ret = p ? port_claim(dev, p) : dr_dev_port_alloc(dev, &p);
	if (ret)
		return ret;
	ret = dr_cm_listen(&dev->cm, p, backlog, ctx, lsn);
	if (ret) {
		dr_dev_port_free(dev, p);
		return ret == -EADDRINUSE ? -FI_EADDRINUSE : -FI_ENOMEM;
	}
	*port = p;
	return 0;
}

void dr_dev_unlisten(struct dr_dev *dev, struct dr_cm_listener *lsn, uint16_t port)
{
	dr_cm_unlisten(lsn);
	dr_dev_port_free(dev, port);
}

/* ---- drop counters ---------------------------------------------------------- */

void dr_rx_drops_log(const char *who, const uint64_t drops[DR_RX_DROP_NUM])
{
	char buf[512];
	size_t off = 0;
	bool hostile = false, any = false;
	int i;

	buf[0] = 0;
	for (i = DR_RX_OK + 1; i < DR_RX_DROP_NUM; i++) {
		if (!drops[i])
			continue;
		any = true;
		hostile |= dr_rx_drop_hostile(i);
		if (off < sizeof(buf))
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s %llu",
						off ? ", " : "", dr_rx_drop_names[i],
						(unsigned long long)drops[i]);
	}
	if (!any)
		return;
	if (hostile)
		DR_WARN(FI_LOG_DOMAIN, "%s dropped frames a correct peer does not send: %s\n", who,
			buf);
	else
		DR_INFO(FI_LOG_DOMAIN, "%s dropped frames: %s\n", who, buf);
}

/* At close: what the port refused before the device saw it (not ours, by
 * parse verdict: a bad ICRC is corruption or forgery), then the device's
 * and its QPs' drops by reason. */
static void dev_log_drops(struct dr_dev *dev)
{
	struct dr_port_stats ps;
	char who[96], buf[512];
	size_t off = 0;
	int v;

	snprintf(who, sizeof(who), "port %s", dev->cfg.name);
	if (dev->port) {
		dr_port_get_stats(dev->port, &ps);
		buf[0] = 0;
		if (ps.rx_not_ours)
			off += (size_t)snprintf(buf, sizeof(buf), "not ours %llu",
						(unsigned long long)ps.rx_not_ours);
		for (v = DR_PKT_OK + 1; v < DR_PKT_VERDICT_NUM && off < sizeof(buf); v++)
			if (ps.rx_verdict[v])
				off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s %llu",
							off ? ", " : "", dr_pkt_verdict_str(v),
							(unsigned long long)ps.rx_verdict[v]);
		if (off)
			DR_INFO(FI_LOG_DOMAIN, "%s refused frames: %s\n", who, buf);
	}
	dr_rx_drops_log(who, dev->rx_drops);
	if (dev->rx_foreign)
		DR_INFO(FI_LOG_DOMAIN, "%s left %llu frames to the other processes' QPs\n", who,
			(unsigned long long)dev->rx_foreign);
	if (dev->cm_stale)
		DR_INFO(FI_LOG_DOMAIN,
			"%s left %llu CM MADs for nobody unanswered: they waited in the "
			"receive ring longer than %llu ms (their owner may have answered "
			"them and died since)\n",
			who, (unsigned long long)dev->cm_stale,
			(unsigned long long)(DR_REG_GRACE_NS / 1000000));
	if (dev->local) {
		struct dr_local_stats ls;

		dr_local_get_stats(dev->local, &ls);
		if (ls.tx_frames || ls.rx_frames || ls.rx_lost)
			DR_INFO(FI_LOG_DOMAIN,
				"%s local wire (slot %u): sent %llu (%llu copies, %llu held "
				"back by full rings, %llu lost, %llu lost for want of memory, "
				"%llu skipped dead, %llu for nobody), received %llu (%llu lost "
				"to our full ring, %llu corrupt)\n",
				who, dr_local_slot(dev->local), (unsigned long long)ls.tx_frames,
				(unsigned long long)ls.tx_copies, (unsigned long long)ls.tx_queued,
				(unsigned long long)ls.tx_full, (unsigned long long)ls.tx_nomem,
				(unsigned long long)ls.tx_dead, (unsigned long long)ls.tx_nobody,
				(unsigned long long)ls.rx_frames, (unsigned long long)ls.rx_lost,
				(unsigned long long)ls.rx_corrupt);
	}
	if (dr_cm_stats_str(&dev->cm, buf, sizeof(buf)))
		DR_INFO(FI_LOG_EP_CTRL, "%s CM: %s\n", who, buf);
}

/* ARP gave up on a peer: connections being set up with it fail now, with
 * EHOSTUNREACH, rather than after every CM retry. */
static void dev_neigh(void *ctx, uint32_t ip, int status)
{
	struct dr_dev *dev = ctx;

	if (status == -EHOSTUNREACH) {
		DR_WARN(FI_LOG_EP_CTRL, "%u.%u.%u.%u does not answer ARP on %s\n", ip >> 24,
			(ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff, dev->cfg.name);
		dr_cm_peer_unreachable(&dev->cm, ip);
	}
}

static void dev_neigh6(void *ctx, const uint8_t ip6[16], int status)
{
	struct dr_dev *dev = ctx;
	char a[INET6_ADDRSTRLEN];

	if (status == -EHOSTUNREACH) {
		DR_WARN(FI_LOG_EP_CTRL, "%s does not answer neighbour solicitations on %s\n",
			inet_ntop(AF_INET6, ip6, a, sizeof(a)), dev->cfg.name);
		dr_cm_peer_unreachable6(&dev->cm, ip6);
	}
}

/* ---- lifetime ------------------------------------------------------------- */

static void dev_linger(struct dr_dev *dev);
static void dev_thread_start(struct dr_dev *dev);
static bool join_until(pthread_t t, uint64_t deadline_ns);

static void dev_free(struct dr_dev *dev)
{
	dr_tel_dev_del(dev);
	if (dev->thread_on && __atomic_load_n(&dev->gone, __ATOMIC_ACQUIRE) &&
	    !join_until(dev->thread, dr_port_now_ns() + 1000000000ull)) {
		/* closed after a cleanup that could not stop the thread
		 * (dr_dev_quiesce), which still cannot: it may use the
		 * device, so the device stays */
		DR_WARN(FI_LOG_DOMAIN, "%s: progress thread still running: device kept\n",
			dev->cfg.name);
		return;
	}
	if (__atomic_load_n(&dev->gone, __ATOMIC_ACQUIRE))
		dev->thread_on = false; /* joined, here or by the cleanup */
	if (dev->port)
		dev_linger(dev);
	if (dev->thread_on) {
		__atomic_store_n(&dev->thread_stop, true, __ATOMIC_RELEASE);
		pthread_join(dev->thread, NULL);
	}
	dev_log_drops(dev);
	dr_cm_fini(&dev->cm); /* its comm IDs leave the registry */
	if (dev->cm_timer)
		dr_port_timer_free(dev->cm_timer);
	dr_port_close(dev->port);
	dr_local_close(dev->local); /* before its slot goes with the registry */
	dr_mr_table_fini(&dev->mrt);
	dr_idmap_fini(&dev->qps);
	/* with it the QPNs and ports still held: the endpoints are gone */
	dr_reg_close(dev->reg);
	free(dev);
}

unsigned dr_dev_pmtu(struct dr_dev *dev)
{
	unsigned pmtu = dr_port_pmtu_of(dr_port_link_mtu(dev->port));

	return pmtu < dev->pmtu ? pmtu : dev->pmtu;
}

static int dev_open(struct dr_fabric *fab, const struct dr_devcfg *cfg, struct dr_dev **out)
{
	const struct dr_settings *s = dr_settings_get();
	struct dr_port_config pc = {
	    .device = cfg->spec,
	    .ip4 = cfg->ip4,
	    .ipv6 = cfg->ipv6,
	    .prefix_len = cfg->prefix,
	    .mtu = (unsigned)cfg->mtu,
	    .pcap_path = s->pcap,
	    .eal_args = s->eal_args,
	    .qdisc_bypass = s->qdisc_bypass != 0,
	    .kernel_filter = s->kernel_filter != 0,
	    .gso = s->gso != 0,
	    /* FI_DROCE_RX_FILTER: until dev_rx_filter knows whether this
	     * process is the interface's CM responder, no other's frame */
	    .rx_filter = s->rx_filter != 0,
	};
	struct dr_cm_config cc = { 0 };
	struct dr_port_err err = { 0 };
	static pthread_once_t log_once = PTHREAD_ONCE_INIT;
	struct dr_dev *dev;
	int ret;

	pthread_once(&log_once, set_port_log);

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -FI_ENOMEM;
	dev->fab = fab;
	dev->cfg = *cfg;
	dev->ref = 1;
	if (dr_idmap_init(&dev->qps, DR_MAX_EP) || dr_mr_table_init(&dev->mrt, DR_MAX_MR)) {
		ret = -FI_ENOMEM;
		goto out_free;
	}
	memcpy(pc.ip6, cfg->ip6, 16);

	ret = dr_port_open(&pc, &dev->port, &err);
	if (ret) {
		const char *param = (unsigned)err.param < sizeof(param_names) / sizeof(param_names[0]) ?
					    param_names[err.param] : NULL;

		if (param)
			DR_WARN(FI_LOG_DOMAIN, "cannot open port %s: %s (check %s)\n", cfg->spec,
				err.msg, param);
		else
			DR_WARN(FI_LOG_DOMAIN, "cannot open port %s: %s\n", cfg->spec, err.msg);
		ret = -FI_ENODATA;
		goto out_free;
	}
	dr_port_mac(dev->port, dev->mac);
	dev->pmtu = dr_port_pmtu_of(dr_port_mtu(dev->port));
	if (!dev->pmtu) {
		DR_WARN(FI_LOG_DOMAIN, "MTU %u of %s is below 336: set FI_DROCE_MTU\n",
			dr_port_mtu(dev->port), cfg->name);
		ret = -FI_ENODATA;
		goto out_free;
	}
	dev->cm_timer = dr_port_timer_new(dev->port, cm_timer_fire, dev);
	if (!dev->cm_timer) {
		ret = -FI_ENOMEM;
		goto out_free;
	}

	/* a kernel interface is shared with every droce process on it */
	ret = dr_reg_open(cfg->ifname, &dev->reg);
	if (ret)
		DR_WARN(FI_LOG_DOMAIN,
			"%s: no registry (%s): other droce processes on this "
			"interface would collide with this one\n",
			cfg->name, strerror(-ret));
	ret = dev->reg ? dr_local_open(dev->reg, &dev->local) : 0;
	if (ret)
		DR_WARN(FI_LOG_DOMAIN,
			"%s: no host-local wire %s (%s): the other droce processes on "
			"this interface cannot reach this one\n",
			cfg->name, dr_reg_wire_path(dev->reg), strerror(-ret));
	else if (dev->local) {
		dr_port_set_local(dev->port, dr_local_send, dev->local);
		DR_INFO(FI_LOG_DOMAIN, "%s: host-local wire %s, slot %u\n", cfg->name,
			dr_reg_wire_path(dev->reg), dr_local_slot(dev->local));
	}

	dev_rx_filter(dev);

	cc.local_ip4 = cfg->ip4;
	cc.ipv6 = cfg->ipv6;
	memcpy(cc.local_ip6, cfg->ip6, 16);
	/* a node GUID from the MAC (EUI-64), as rxe derives its own */
	cc.ca_guid = (uint64_t)(dev->mac[0] ^ 2) << 56 | (uint64_t)dev->mac[1] << 48 |
		     (uint64_t)dev->mac[2] << 40 | 0xfffe000000ull |
		     (uint64_t)dev->mac[3] << 16 | (uint64_t)dev->mac[4] << 8 | dev->mac[5];
	cc.cm_resp_timeout = (uint8_t)s->cm_timeout;
	cc.max_cm_retries = (uint8_t)s->cm_retries;
	ret = dr_cm_init(&dev->cm, &cc, &dev_cm_ops, dev);
	if (ret) {
		DR_WARN(FI_LOG_DOMAIN, "device %s: cannot start the CM: %s\n", cfg->name,
			strerror(-ret));
		ret = -FI_EINVAL;
		goto out_free;
	}
	dev->port_next = (uint16_t)(0xc000 | (dr_port_now_ns() & 0x3fff));
	dr_port_set_rx(dev->port, dev_rx, dev);
	dr_port_set_place(dev->port, dev_place);
	dr_port_set_neigh_cb(dev->port, dev_neigh, dev);
	dr_port_set_neigh6_cb(dev->port, dev_neigh6, dev);
	{
		union dr_sockaddr sa;
		char a[INET6_ADDRSTRLEN];

		dr_sa_local(&sa, cfg, 0);
		DR_INFO(FI_LOG_DOMAIN, "device %s: %s, %s/%u, MTU %u, path MTU %u\n", cfg->name,
			dr_port_name(dev->port), dr_sa_str(&sa, a, sizeof(a)), cfg->prefix,
			dr_port_mtu(dev->port), dev->pmtu);
	}
	dr_tel_dev_add(dev);
	*out = dev;
	return 0;

out_free:
	dev_free(dev);
	return ret;
}

int dr_dev_get(struct dr_fabric *fab, const struct fi_info *info, struct dr_dev **out)
{
	const struct dr_settings *s = dr_settings_get();
	const char *src = NULL;
	char buf[INET6_ADDRSTRLEN];
	struct dr_devcfg cfgs[DR_MAX_DEVS], cfg;
	struct dr_dev *dev;
	int ret = 0, n, i;

	if (!s)
		return -FI_ENODATA;
	if (info && info->src_addr && info->src_addrlen >= sizeof(struct sockaddr_in) &&
	    ((struct sockaddr *)info->src_addr)->sa_family == AF_INET) {
		const struct sockaddr_in *sin = info->src_addr;

		if (sin->sin_addr.s_addr && inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)))
			src = buf;
	} else if (info && info->src_addr && info->src_addrlen >= sizeof(struct sockaddr_in6) &&
		   ((struct sockaddr *)info->src_addr)->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = info->src_addr;

		if (!IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr) &&
		    inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf)))
			src = buf;
	}
	{
		/* the family getinfo answered with (an IPv6 wildcard source
		 * names no address) */
		struct dr_settings one = *s;

		if (info && info->addr_format == FI_SOCKADDR_IN6 && !s->ip_version)
			one.ip_version = 6;
		else if (info && info->addr_format == FI_SOCKADDR_IN && !s->ip_version)
			one.ip_version = 4;
		n = dr_devcfg_list(&one, src, NULL, cfgs, DR_MAX_DEVS);
	}
	if (n < 0)
		return n;
	for (i = 0; i < n; i++)
		if (!info || !info->domain_attr || !info->domain_attr->name ||
		    !strcmp(info->domain_attr->name, cfgs[i].name))
			break;
	if (i == n) {
		DR_WARN(FI_LOG_DOMAIN, "domain %s is not one of droce's devices\n",
			info->domain_attr->name);
		return -FI_ENODATA;
	}
	cfg = cfgs[i];

	pthread_mutex_lock(&fab->lock);
	for (dev = fab->devs; dev; dev = dev->next)
		if (!strcmp(dev->cfg.name, cfg.name) && dev->cfg.ipv6 == cfg.ipv6)
			break;
	if (dr_fabric_unloading()) {
		/* checked under fabric->lock, which the cleanup takes after
		 * setting the flag: it sees every device opened before */
		DR_WARN(FI_LOG_DOMAIN, "%s: the provider has been cleaned up (process exit)\n",
			cfg.name);
		ret = -FI_ESHUTDOWN;
	} else if (dev) {
		dev->ref++;
	} else {
		/* opening holds fabric->lock: two threads opening the same
		 * device must not both plug it */
		ret = dev_open(fab, &cfg, &dev);
		if (!ret) {
			dev->next = fab->devs;
			fab->devs = dev;
			dev->fast = fab->background;
			dev_thread_start(dev);
		}
	}
	pthread_mutex_unlock(&fab->lock);
	if (ret)
		return ret;
	*out = dev;
	return 0;
}

void dr_dev_put(struct dr_dev *dev)
{
	struct dr_fabric *fab = dev->fab;
	struct dr_dev **pp;

	pthread_mutex_lock(&fab->lock);
	if (--dev->ref) {
		pthread_mutex_unlock(&fab->lock);
		return;
	}
	for (pp = &fab->devs; *pp; pp = &(*pp)->next)
		if (*pp == dev) {
			*pp = dev->next;
			break;
		}
	pthread_mutex_unlock(&fab->lock);
	dev_free(dev);
}

/* Send the ACKs the device's QPs hold (DR_QP_DEFER_ACK); dev->lock held. */
static void dr_dev_flush_acks(struct dr_dev *dev)
{
	while (dev->acks) {
		struct dr_ep *ep = dev->acks;

		dev->acks = ep->ack_next;
		ep->ack_listed = false;
		dr_qp_flush(ep->qp);
	}
}

/* Frames from the host-local wire (local.c), received as the wire's are,
 * as many per poll as one rx burst of the device: the ACKs of one poll
 * leave at its end, and a longer poll would hold back the ACK a sender's
 * window waits for. */
#define DR_DEV_LOCAL_BURST 32

static void dev_local_rx(void *ctx, const void *frame, size_t len)
{
	struct dr_dev *dev = ctx;

	dr_port_input(dev->port, frame, len);
}

/*
 * One poll, its frames sent in one burst.  What posts queued (ep.c) leaves
 * first, before this poll's input.  Where a burst is a system call
 * (dr_port_tx_syscall) the ACKs held since the last poll go behind it in
 * the same burst: one call, not two (an 8 B ping-pong over a veth 1.91 ->
 * 1.80 us a half round trip); elsewhere it leaves alone, ahead of building
 * them (over memif building them first cost the answer 1.70 -> 2.17 us a
 * half round trip; bench/PROFILE.md section 7).  Acknowledgements are
 * coalesced (DR_QP_DEFER_ACK): one per QP per poll at most.  When the poll
 * delivered completions to an application that polls (app), or placed an
 * RDMA WRITE in its memory (which it may be polling, to answer: a 4 KiB
 * RDMA write ping-pong's ACK otherwise left in a system call of its own,
 * before the answer, 8.5-12.9 against 6.2-7.4 us a half round trip over a
 * veth, bench/PROFILE.md section 7), the ACKs wait for its next poll, so that neither
 * this burst nor its answer to what just arrived queues behind them;
 * otherwise, and always for the progress thread, they leave with this
 * poll.  The progress thread polls when ACKs
 * have waited one of its naps (DR_DEV_CTRL_NAP_US), within the ACK delay
 * droce announces in the CM (DR_ACK_DELAY).
 */
static int dev_poll(struct dr_dev *dev, bool app)
{
	uint64_t done;
	bool posted, together;
	int ret;

	/* the progress thread (!app) only try-locks: a holder is an
	 * application thread posting or polling, which is progress enough */
	if (app)
		dr_dev_lock(dev);
	else if (!dr_spin_trylock(&dev->lock))
		return 0;
	if (__atomic_load_n(&dev->gone, __ATOMIC_ACQUIRE)) {
		/* quiesced at process exit (dr_dev_quiesce) */
		dr_dev_unlock(dev);
		return 0;
	}
	posted = dr_port_tx_pending(dev->port);
	/* what posts queued (ep.c) leaves first: alone where a burst is cheap,
	 * with the ACKs behind it where it is a system call */
	together = posted && dr_port_tx_syscall(dev->port);
	if (posted && !together)
		dr_port_flush(dev->port);
	dr_port_batch_begin(dev->port);
	dr_dev_flush_acks(dev);
	if (together)
		dr_port_flush(dev->port);
	done = dev->app_events;
	ret = dr_port_poll(dev->port);
	if (dev->local && ret >= 0)
		ret += (int)dr_local_poll(dev->local, DR_DEV_LOCAL_BURST, dev_local_rx, dev);
	if (!app || dev->app_events == done)
		dr_dev_flush_acks(dev);
	dr_port_batch_end(dev->port);
	dev->polls++;
	dr_dev_unlock(dev);
	if (ret < 0)
		DR_WARN(FI_LOG_DOMAIN, "polling %s failed: %d\n", dev->cfg.name, ret);
	return ret;
}

void dr_dev_progress(struct dr_dev *dev)
{
	dev_poll(dev, true);
}

/*
 * The device's progress thread.  Progress is manual: the application's
 * reads and posts drive the port.  But the IB CM must answer duplicates
 * and resend its MADs even while an application waits elsewhere (on a
 * socket, say) -- a lost RTU would otherwise leave the passive side
 * resending REPs forever -- and ARP must answer.  So a thread polls the
 * port whenever nobody else has for one nap of DR_DEV_CTRL_NAP_US.  Once an application sleeps on a wait fd (FI_GETWAIT,
 * dr_dev_background) nothing else polls, so the thread polls continuously,
 * spinning while frames flow and napping DR_DEV_FAST_NAP_US when idle:
 * that bounds both the latency it adds and the CPU it burns.
 */
#define DR_DEV_CTRL_NAP_US 5000
#define DR_DEV_IDLE_SPINS 2000
#define DR_DEV_FAST_NAP_US 50
#define DR_DEV_DRAIN_POLLS 256 /* of up to a burst each, then a nap */

static void *dev_thread(void *arg)
{
	struct dr_dev *dev = arg;
	uint64_t seen = 0;
	unsigned idle = 0;

	for (;;) {
		struct timespec nap = { 0, DR_DEV_CTRL_NAP_US * 1000 };
		bool stop, fast, due;

		stop = __atomic_load_n(&dev->thread_stop, __ATOMIC_ACQUIRE);
		if (stop)
			break;
		/* An application thread holds the lock while it posts or
		 * polls: it makes progress itself, so the thread naps again
		 * rather than spin and yield behind it (perf trace showed it
		 * in sched_yield every 0.1-0.2 ms of an application's
		 * polling) */
		if (!dr_spin_trylock(&dev->lock)) {
			if (__atomic_load_n(&dev->fast, __ATOMIC_RELAXED))
				nap.tv_nsec = DR_DEV_FAST_NAP_US * 1000;
			nanosleep(&nap, NULL);
			continue;
		}
		fast = dev->fast;
		/* nobody polled since the last look, a nap ago, or an ACK
		 * has been held that long */
		due = dev->polls == seen || dev->acks || dr_port_tx_pending(dev->port) ||
		      dr_local_pending(dev->local);
		seen = dev->polls;
		if (dev->draining)
			dr_ep_drain(dev, false);
		dr_reg_tick(dev->reg); /* releases come due */
		dr_dev_unlock(dev);
		if (fast || due) {
			/* drain what piled up while nobody polled: on an
			 * interface shared with other processes the socket's
			 * ring fills with their traffic too, and a full ring
			 * drops our frames and leaves us reading old ones */
			unsigned rounds = 0;

			if (dev_poll(dev, false) > 0) {
				idle = 0;
				while (!fast && ++rounds < DR_DEV_DRAIN_POLLS &&
				       dev_poll(dev, false) > 0)
					;
			} else {
				idle++;
			}
		}
		if (fast) {
			if (idle <= DR_DEV_IDLE_SPINS)
				continue;
			nap.tv_nsec = DR_DEV_FAST_NAP_US * 1000;
		}
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static void dev_thread_start(struct dr_dev *dev)
{
	dev->thread_stop = false;
	if (!pthread_create(&dev->thread, NULL, dev_thread, dev))
		dev->thread_on = true;
	else
		DR_WARN(FI_LOG_DOMAIN, "no progress thread for %s: connection setup and fd "
			"waiters depend on the application's reads\n", dev->cfg.name);
}

void dr_dev_background(void *arg)
{
	struct dr_dev *dev = arg;

	dr_dev_lock(dev);
	dev->fast = true;
	dr_dev_unlock(dev);
}

/* ---- process exit ---------------------------------------------------------- */

/* dr_dev_lock, giving up at deadline_ns */
static bool dev_lock_until(struct dr_dev *dev, uint64_t deadline_ns)
{
	while (__atomic_exchange_n(&dev->lock, 1, __ATOMIC_ACQUIRE)) {
		if (dr_port_now_ns() >= deadline_ns)
			return false;
		sched_yield();
	}
	return true;
}

static bool join_until(pthread_t t, uint64_t deadline_ns)
{
	uint64_t now = dr_port_now_ns(), left = deadline_ns > now ? deadline_ns - now : 0;
	struct timespec abs;

	/* pthread_timedjoin_np's deadline is on CLOCK_REALTIME */
	clock_gettime(CLOCK_REALTIME, &abs);
	abs.tv_sec += (time_t)(left / 1000000000u);
	abs.tv_nsec += (long)(left % 1000000000u);
	if (abs.tv_nsec >= 1000000000) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000;
	}
	return pthread_timedjoin_np(t, NULL, &abs) == 0;
}

/*
 * The process exits (the provider's cleanup, init.c, with a reference).
 * The device is marked gone first: nothing polls the port from then on
 * (dev_poll), so nothing is received, no timer fires and nothing is
 * resent, a close lingers no more (dev_linger), and an application thread
 * that keeps calling fi_cq_read holds dev->lock only for moments (a poll
 * of a busy port holds it for most of the time, and the lock is not
 * fair).  The progress thread is stopped and joined: libfabric dlclose()s
 * the provider next.  Then, under dev->lock -- so that no application
 * thread is half-way through a post or a poll -- the port sends what it
 * has queued and closes its capture file (dr_port_quiesce).
 *
 * The port and every object stay allocated and valid.  exit() runs the
 * cleanup on its own thread while the application's other threads go on,
 * possibly inside droce (a fi_cq_read, a post), and an application may
 * close its objects after the cleanup (a handler that runs after
 * libfabric's destructor): they must find memory that is still theirs.
 * So posts still hand frames to the port, and closing the objects later
 * still closes the port properly (dev_free).
 *
 * Every wait ends at deadline_ns: exit() from a signal handler that
 * interrupted a thread holding dev->lock must not hang the process.  The
 * port of a device whose lock cannot be had is left as it is; a thread
 * that cannot be joined keeps running until the process ends (the DSO is
 * never unmapped: -z nodelete, Makefile.am).
 */
void dr_dev_quiesce(struct dr_dev *dev, uint64_t deadline_ns)
{
	__atomic_store_n(&dev->gone, true, __ATOMIC_RELEASE);
	if (dev->thread_on) {
		__atomic_store_n(&dev->thread_stop, true, __ATOMIC_RELEASE);
		if (join_until(dev->thread, deadline_ns))
			dev->thread_on = false;
		else
			DR_WARN(FI_LOG_DOMAIN, "%s: progress thread did not stop at exit\n",
				dev->cfg.name);
	}
	if (!dev_lock_until(dev, deadline_ns)) {
		DR_WARN(FI_LOG_DOMAIN, "%s: device busy at exit; port left as it is\n",
			dev->cfg.name);
		return;
	}
	dr_port_quiesce(dev->port);
	dr_dev_unlock(dev);
	DR_INFO(FI_LOG_DOMAIN, "%s: quiesced at exit\n", dev->cfg.name);
}

/* Before the port closes: let graceful disconnects (ep.c) and disconnects
 * in flight finish, so that the peer's last retransmissions are answered
 * and its DREP (or its simultaneous DREQ) reaches a port that is still
 * open rather than the kernel, which would answer ICMP port-unreachable.
 * Bounded: a peer that is gone does not hold the close up for long. */
#define DR_DEV_LINGER_NS 2000000000ull

static void dev_linger(struct dr_dev *dev)
{
	uint64_t end = dr_port_now_ns() + DR_DEV_LINGER_NS;
	struct timespec nap = { 0, 200000 };

	for (;;) {
		bool busy, late;

		dr_dev_lock(dev);
		/* after the cleanup nothing polls: finish them at once */
		late = __atomic_load_n(&dev->gone, __ATOMIC_ACQUIRE) || dr_port_now_ns() >= end;
		/* endpoints still draining finish now if time is up */
		busy = dr_ep_drain(dev, late) || dr_cm_disconnecting(&dev->cm);
		dr_dev_unlock(dev);
		if (!busy || late)
			break;
		dev_poll(dev, false);
		nanosleep(&nap, NULL);
	}
}

void dr_dev_progress_fn(void *dev)
{
	dr_dev_progress(dev);
}
