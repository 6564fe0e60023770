// SPDX-License-Identifier: BSD-2-Clause
/*
 * A device: the DPDK port behind a domain, with the CM on its QP1 and the
 * table of its QPs.  Frames come in through dr_port_poll() (driven by
 * dr_dev_progress), are dispatched by destination QP: QP1 MADs to the CM,
 * the rest to the endpoint that owns the QPN.
 */
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

/* ---- QP1: the CM's MADs as UD SEND_ONLY frames (ROCE-REFERENCE C.1) ----- */

static int cm_send_mad(void *ctx, uint32_t dst_ip4, const uint8_t *mad)
{
	struct dr_dev *dev = ctx;
	uint8_t frame[DR_CM_FRAME_MAX];
	int len, ret;

	len = dr_cm_mad_frame(&dev->cm, dst_ip4, mad, frame, sizeof(frame));
	if (len < 0)
		return len;
	ret = dr_port_send(dev->port, frame, (size_t)len);
	if (ret && ret != -EAGAIN)
		DR_DBG(FI_LOG_EP_CTRL, "CM MAD to %08x not sent: %d\n", dst_ip4, ret);
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

static const struct dr_cm_ops dev_cm_ops = {
	.send_mad = cm_send_mad,
	.now_ns = cm_now_ns,
	.timer_set = cm_timer_set,
	.event = cm_event,
	.log = cm_log,
};

/* ---- receive dispatch ----------------------------------------------------- */

/*
 * The device's receive checks, before any QP (rxe_recv.c hdr_check): the
 * port has checked MAC, IP, UDP port, ICRC and TVer.  QP1 takes UD
 * SEND_ONLY MADs with a valid P_Key and the GSI Q_Key; every other frame
 * goes to the QP its DestQP names, which checks the rest (dr_qp_input).
 * Every drop is counted by reason in dev->rx_drops (the QPs add theirs).
 */
static void dev_drop(struct dr_dev *dev, enum dr_rx_drop why)
{
	dev->rx_drops[why]++;
}

static void dev_rx(void *ctx, const void *frame, size_t len, const struct dr_pkt *pkt)
{
	struct dr_dev *dev = ctx;
	struct dr_ep *ep;

	if (!pkt->ip4) {
		dev_drop(dev, DR_RX_DROP_NOT_IPV4); /* droce speaks RoCEv2 over IPv4 */
		return;
	}
	if (pkt->dqpn == DR_GSI_QPN) {
		/* rxe_recv.c check_keys: a valid P_Key, and QP1 wants exactly
		 * the GSI Q_Key */
		if (!dr_pkey_match(dr_bth_pkey(pkt->bth), DR_DEF_PKEY))
			dev_drop(dev, DR_RX_DROP_PKEY);
		else if (pkt->opcode != DR_OP_UD_SEND_ONLY ||
			 dr_deth_qkey(dr_pkt_deth(pkt)) != DR_GSI_QKEY)
			dev_drop(dev, DR_RX_DROP_GSI);
		else
			dr_cm_recv(&dev->cm, ntohl(pkt->ip4->saddr), pkt->payload,
				   pkt->payload_len);
		return;
	}
	/* QPN 0 (the SMI's) is never in the table */
	ep = dr_idmap_find(&dev->qps, pkt->dqpn);
	if (!ep || !ep->qp) {
		dev_drop(dev, DR_RX_DROP_UNKNOWN_QPN);
		return;
	}
	dr_ep_input(ep, pkt);
}

/* ---- QPNs ----------------------------------------------------------------- */

int dr_dev_qpn_alloc(struct dr_dev *dev, struct dr_ep *ep, uint32_t *qpn)
{
	int ret;

	/* random over [2, 2^24): QPN 0 and 1 are the SMI and GSI QPs.  A
	 * late frame for a closed QP meets its successor only if the draw
	 * repeats its QPN (2^-24). */
	ret = dr_idmap_alloc(&dev->qps, DR_QPN_MASK, DR_GSI_QPN + 1, ep, qpn);
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

void dr_dev_qpn_free(struct dr_dev *dev, uint32_t qpn)
{
	dr_idmap_remove(&dev->qps, qpn);
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

/* ---- lifetime ------------------------------------------------------------- */

static void dev_linger(struct dr_dev *dev);
static void dev_thread_start(struct dr_dev *dev);

static void dev_free(struct dr_dev *dev)
{
	if (dev->port)
		dev_linger(dev);
	if (dev->thread_on) {
		dr_dev_lock(dev);
		dev->thread_stop = true;
		dr_dev_unlock(dev);
		pthread_join(dev->thread, NULL);
	}
	dev_log_drops(dev);
	dr_cm_fini(&dev->cm);
	if (dev->cm_timer)
		dr_port_timer_free(dev->cm_timer);
	dr_port_close(dev->port);
	dr_mr_table_fini(&dev->mrt);
	dr_idmap_fini(&dev->qps);
		free(dev);
}

static int dev_open(struct dr_fabric *fab, const struct dr_devcfg *cfg, struct dr_dev **out)
{
	const struct dr_settings *s = dr_settings_get();
	struct dr_port_config pc = {
		.device = cfg->spec,
		.ip4 = cfg->ip4,
		.prefix_len = cfg->prefix,
		.mtu = (unsigned)cfg->mtu,
		.pcap_path = s->pcap,
		.eal_args = s->eal_args,
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

	cc.local_ip4 = cfg->ip4;
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
	dr_port_set_neigh_cb(dev->port, dev_neigh, dev);
	DR_INFO(FI_LOG_DOMAIN, "device %s: %s, %u.%u.%u.%u/%u, MTU %u, path MTU %u\n",
		cfg->name, dr_port_name(dev->port), cfg->ip4 >> 24, (cfg->ip4 >> 16) & 0xff,
		(cfg->ip4 >> 8) & 0xff, cfg->ip4 & 0xff, cfg->prefix, dr_port_mtu(dev->port),
		dev->pmtu);
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
	char buf[INET_ADDRSTRLEN];
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
	}
	n = dr_devcfg_list(s, src, NULL, cfgs, DR_MAX_DEVS);
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
		if (!strcmp(dev->cfg.name, cfg.name))
			break;
	if (dev) {
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

void dr_dev_flush_acks(struct dr_dev *dev)
{
	while (dev->acks) {
		struct dr_ep *ep = dev->acks;

		dev->acks = ep->ack_next;
		ep->ack_listed = false;
		dr_qp_flush(ep->qp);
	}
}

/*
 * One poll, its frames sent in one burst.  What posts queued (ep.c) leaves
 * first, on its own.  Acknowledgements are coalesced (DR_QP_DEFER_ACK): one
 * per QP per poll at most.  When the poll delivered completions to an
 * application that polls (app), the ACKs wait for its next poll, so that
 * neither this burst nor its answer to what just arrived queues behind
 * them; otherwise, and always for the progress thread, they leave with
 * this poll.  The progress thread polls when ACKs have waited one of its
 * naps (DR_DEV_CTRL_NAP_US), within the ACK delay droce announces in the
 * CM (DR_ACK_DELAY).
 */
static int dev_poll(struct dr_dev *dev, bool app)
{
	uint64_t done;
	int ret;

	dr_dev_lock(dev);
	dr_port_flush(dev->port); /* what posts queued (ep.c) goes first */
	dr_port_batch_begin(dev->port);
	dr_dev_flush_acks(dev);
	done = dev->completions;
	ret = dr_port_poll(dev->port);
	if (!app || dev->completions == done)
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

static void *dev_thread(void *arg)
{
	struct dr_dev *dev = arg;
	uint64_t seen = 0;
	unsigned idle = 0;

	for (;;) {
		struct timespec nap = { 0, DR_DEV_CTRL_NAP_US * 1000 };
		bool stop, fast, due;

		dr_dev_lock(dev);
		stop = dev->thread_stop;
		fast = dev->fast;
		/* nobody polled since the last look, a nap ago, or an ACK
		 * has been held that long */
		due = dev->polls == seen || dev->acks || dr_port_tx_pending(dev->port);
		seen = dev->polls;
		if (dev->draining)
			dr_ep_drain(dev, false);
		dr_dev_unlock(dev);
		if (stop)
			break;
		if (fast || due) {
			if (dev_poll(dev, false) > 0)
				idle = 0;
			else
				idle++;
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
		bool busy, late = dr_port_now_ns() >= end;

		dr_dev_lock(dev);
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
