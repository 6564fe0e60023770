// SPDX-License-Identifier: BSD-2-Clause
/*
 * droce's provider-specific operations (include/fi_ext_droce.h), opened
 * with fi_open_ops() on a domain or an endpoint: a queue pair's state and
 * the counters of a port or a QP, as name/value pairs.  Counter names are
 * an interface (tools and tests match them): add, never rename.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dr_fi.h"
#include "fi_ext_droce.h"

struct counter_def {
	const char *name;
	size_t off; /* in the stats struct, a uint64_t */
};

#define PORT_C(f)                                                                                  \
	{                                                                                          \
#f, offsetof(struct dr_port_stats, f)                                              \
	}
#define QP_C(f)                                                                                    \
	{                                                                                          \
#f, offsetof(struct dr_qp_stats, f)                                                \
	}
#define CM_C(f)                                                                                    \
	{                                                                                          \
		"cm_" #f, offsetof(struct dr_cm_stats, f)                                          \
	}

/* clang-format off */
static const struct counter_def port_counters[] = {
	PORT_C(rx_frames), PORT_C(rx_bytes), PORT_C(tx_frames), PORT_C(tx_bytes),
	PORT_C(rx_roce), PORT_C(rx_placed), PORT_C(rx_arp), PORT_C(tx_arp), PORT_C(rx_dropped),
	PORT_C(rx_not_ours), PORT_C(rx_looped), PORT_C(rx_no_handler),
	PORT_C(rx_too_long), PORT_C(rx_arp_bad), PORT_C(rx_arp_ignored),
	PORT_C(tx_dropped), PORT_C(tx_bursts), PORT_C(tx_nombuf), PORT_C(loopback),
	PORT_C(arp_queued), PORT_C(arp_queue_dropped), PORT_C(arp_resolved),
	PORT_C(arp_failed), PORT_C(rx_arp_unsolicited), PORT_C(arp_conflicts),
	PORT_C(arp_moved), PORT_C(arp_suspected), PORT_C(capture_errors),
	PORT_C(tx_backlogged),
	PORT_C(rx_nd), PORT_C(tx_nd), PORT_C(rx_nd_bad),
	PORT_C(tx_gso_frames), PORT_C(tx_gso_segs), PORT_C(rx_gso_frames),
	PORT_C(rx_gso_segs), PORT_C(rx_gso_bad), PORT_C(rx_truncated),
	PORT_C(rx_ring_drops), PORT_C(rx_vlan), PORT_C(rx_nombuf), PORT_C(rx_gso_copied),
	PORT_C(link_mtu_changes), PORT_C(tx_refused), PORT_C(rx_long),
};

/* the parser's verdicts, by their counter names */
static const char *const verdict_counter[DR_PKT_VERDICT_NUM] = {
	[DR_PKT_OK] = NULL, /* not a drop */
	[DR_PKT_SHORT_ETH] = "rx_short_eth",
	[DR_PKT_NOT_IP] = "rx_not_ip",
	[DR_PKT_SHORT_IP] = "rx_short_ip",
	[DR_PKT_BAD_IP_VERSION] = "rx_bad_ip_version",
	[DR_PKT_BAD_IHL] = "rx_bad_ihl",
	[DR_PKT_BAD_IP_LEN] = "rx_bad_ip_len",
	[DR_PKT_BAD_IP_CSUM] = "rx_bad_ip_csum",
	[DR_PKT_IP_FRAGMENT] = "rx_ip_fragment",
	[DR_PKT_NOT_UDP] = "rx_not_udp",
	[DR_PKT_SHORT_UDP] = "rx_short_udp",
	[DR_PKT_BAD_UDP_LEN] = "rx_bad_udp_len",
	[DR_PKT_NOT_ROCE] = "rx_not_roce",
	[DR_PKT_SHORT_BTH] = "rx_short_bth",
	[DR_PKT_BAD_TVER] = "rx_bad_tver",
	[DR_PKT_BAD_OPCODE] = "rx_bad_opcode",
	[DR_PKT_SHORT_HDRS] = "rx_short_hdrs",
	[DR_PKT_BAD_PADCNT] = "rx_bad_padcnt",
	[DR_PKT_BAD_PAYLOAD] = "rx_bad_payload",
	[DR_PKT_RUNT] = "rx_runt",
	[DR_PKT_TOO_LONG] = "rx_pkt_too_long",
	[DR_PKT_BAD_ICRC] = "rx_bad_icrc",
};

static const struct counter_def cm_counters[] = {
	CM_C(tx_mads), CM_C(rx_mads), CM_C(resent), CM_C(dup_reqs), CM_C(dup_reps),
	CM_C(dup_dreqs), CM_C(rej_no_listener), CM_C(rx_bad), CM_C(req_expired),
	CM_C(req_withdrawn),
};

static const struct counter_def qp_counters[] = {
	QP_C(tx_frames), QP_C(rx_frames), QP_C(tx_req_pkts), QP_C(tx_resent_pkts),
	QP_C(tx_acks), QP_C(tx_read_rsps), QP_C(tx_atomic_acks), QP_C(acks_coalesced),
	QP_C(unasked_ends), QP_C(tx_unasked_acks),
	QP_C(rtt_samples), QP_C(early_timeouts), QP_C(cwnd_cuts),
	QP_C(tx_seq_naks), QP_C(tx_rnr_naks), QP_C(tx_err_naks),
	QP_C(rx_seq_naks), QP_C(rx_rnr_naks), QP_C(rx_err_naks),
	QP_C(rx_dup_reqs), QP_C(rx_dropped), QP_C(timeouts), QP_C(retries),
	QP_C(rnr_waits), QP_C(atomics_executed), QP_C(spurious_timeouts), QP_C(timeout_losses),
	QP_C(rx_rsp_ahead),
	QP_C(ce_seen), QP_C(cnp_sent), QP_C(cnp_received), QP_C(rate_cuts), QP_C(cc_rate_mbps),
	QP_C(rate_holds), QP_C(probe_undos),
};
/* clang-format on */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct counter_out {
	struct fi_droce_counter *c;
	size_t cap, n;
};

static void put(void *ctx, const char *name, uint64_t value)
{
	struct counter_out *o = ctx;

	if (o->c && o->n < o->cap)
		o->c[o->n] = (struct fi_droce_counter){.name = name, .value = value};
	o->n++;
}

static void put_table(dr_counter_fn fn, void *ctx, const struct counter_def *t, size_t n,
		      const void *stats)
{
	for (size_t i = 0; i < n; i++)
		fn(ctx, t[i].name, *(const uint64_t *)((const char *)stats + t[i].off));
}

/* "rx_drop_" + dr_rx_drop_names[reason], "cm_drop_" + dr_cm_drop_names[],
 * made once */
static char drop_counter_names[DR_RX_DROP_NUM][48];
static char cm_drop_counter_names[DR_CM_DROP_NUM][48];

static void drop_names_init(void)
{
	for (unsigned r = 0; r < DR_RX_DROP_NUM; r++)
		snprintf(drop_counter_names[r], sizeof(drop_counter_names[r]), "rx_drop_%s",
			 dr_rx_drop_names[r]);
	for (unsigned r = 0; r < DR_CM_DROP_NUM; r++)
		snprintf(cm_drop_counter_names[r], sizeof(cm_drop_counter_names[r]), "cm_drop_%s",
			 dr_cm_drop_names[r]);
}

static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void put_drops(dr_counter_fn fn, void *ctx, const uint64_t drops[DR_RX_DROP_NUM])
{
	pthread_once(&names_once, drop_names_init);
	for (unsigned r = DR_RX_OK + 1; r < DR_RX_DROP_NUM; r++)
		fn(ctx, drop_counter_names[r], drops[r]);
}

void dr_ext_dev_snap(struct dr_dev *dev, struct dr_dev_snap *s)
{
	dr_port_get_stats(dev->port, &s->ps);
	memcpy(s->drops, dev->rx_drops, sizeof(s->drops));
	s->rx_foreign = dev->rx_foreign;
	s->cs = dev->cm.stats;
}

void dr_ext_dev_counters(const struct dr_dev_snap *s, dr_counter_fn fn, void *ctx)
{
	fn(ctx, "rx_foreign", s->rx_foreign); /* other processes' QPs: not drops */
	put_drops(fn, ctx, s->drops);
	put_table(fn, ctx, port_counters, ARRAY_LEN(port_counters), &s->ps);
	put_table(fn, ctx, cm_counters, ARRAY_LEN(cm_counters), &s->cs);
	pthread_once(&names_once, drop_names_init);
	for (unsigned r = 0; r < DR_CM_DROP_NUM; r++)
		fn(ctx, cm_drop_counter_names[r], s->cs.drop[r]);
	for (unsigned v = 0; v < DR_PKT_VERDICT_NUM; v++)
		if (verdict_counter[v])
			fn(ctx, verdict_counter[v], s->ps.rx_verdict[v]);
}

void dr_ext_qp_counters(const struct dr_qp_stats *qs, dr_counter_fn fn, void *ctx)
{
	put_table(fn, ctx, qp_counters, ARRAY_LEN(qp_counters), qs);
	put_drops(fn, ctx, qs->rx_drop);
}

static void dev_counters(struct dr_dev *dev, struct counter_out *o)
{
	struct dr_dev_snap s;

	dr_dev_lock(dev);
	dr_ext_dev_snap(dev, &s);
	dr_dev_unlock(dev);
	dr_ext_dev_counters(&s, put, o);
}

static int ep_counters(struct dr_ep *ep, struct counter_out *o)
{
	struct dr_qp_stats qs;

	dr_dev_lock(ep->dev);
	if (!ep->qp) {
		dr_dev_unlock(ep->dev);
		return -FI_EOPBADSTATE;
	}
	qs = *dr_qp_stats(ep->qp);
	dr_dev_unlock(ep->dev);
	dr_ext_qp_counters(&qs, put, o);
	return 0;
}

static int ext_counters(struct fid *fid, struct fi_droce_counter *c, size_t *count)
{
	struct counter_out o = {.c = c, .cap = c ? *count : 0};
	int ret = 0;

	if (!fid || !count)
		return -FI_EINVAL;
	switch (fid->fclass) {
	case FI_CLASS_DOMAIN:
		dev_counters(dr_domain_of_fid(fid)->dev, &o);
		break;
	case FI_CLASS_EP:
		ret = ep_counters(dr_ep_of_fid(fid), &o);
		break;
	default:
		return -FI_EINVAL;
	}
	if (ret)
		return ret;
	*count = o.n;
	return c && o.n > o.cap ? -FI_ETOOSMALL : 0;
}

static int ext_qp_info(struct fid_ep *fep, struct fi_droce_qp_info *info)
{
	struct dr_ep *ep;
	struct dr_qp_attr a;

	if (!fep || !info || fep->fid.fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	ep = dr_ep_of(fep);
	dr_dev_lock(ep->dev);
	if (!ep->qp) {
		dr_dev_unlock(ep->dev);
		return -FI_EOPBADSTATE;
	}
	dr_qp_query(ep->qp, &a);
	info->qpn = dr_qp_num(ep->qp);
	dr_dev_unlock(ep->dev);
	info->start_psn = ep->start_psn;
	info->dest_qpn = a.dest_qpn;
	info->sq_psn = a.sq_psn;
	info->rq_psn = a.rq_psn;
	info->path_mtu = a.path_mtu;
	memcpy(info->mac, a.path.src_mac, sizeof(info->mac));
	info->udp_sport = a.path.sport;
	info->state = dr_qp_state_names[a.state];
	return 0;
}

static int ext_drops(struct fid *fid, uint64_t *counts, size_t n)
{
	struct dr_ep *ep = NULL;
	struct dr_dev *dev;
	const uint64_t *src;
	size_t i;

	if (!fid || (n && !counts))
		return -FI_EINVAL;
	if (fid->fclass == FI_CLASS_DOMAIN) {
		dev = dr_domain_of_fid(fid)->dev;
	} else if (fid->fclass == FI_CLASS_EP) {
		ep = dr_ep_of_fid(fid);
		dev = ep->dev;
	} else {
		return -FI_EINVAL;
	}
	dr_dev_lock(dev);
	if (ep && !ep->qp) {
		dr_dev_unlock(dev);
		return -FI_EOPBADSTATE;
	}
	src = ep ? dr_qp_stats(ep->qp)->rx_drop : dev->rx_drops;
	for (i = 0; i < n && i < DR_RX_DROP_NUM; i++)
		counts[i] = src[i];
	dr_dev_unlock(dev);
	for (; i < n; i++)
		counts[i] = 0;
	return DR_RX_DROP_NUM;
}

static const char *ext_drop_name(unsigned reason)
{
	return reason < DR_RX_DROP_NUM ? dr_rx_drop_names[reason] : NULL;
}

static int ext_port_mac(struct fid_domain *domain, uint8_t mac[6])
{
	if (!domain || !mac || domain->fid.fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	memcpy(mac, dr_domain_of(domain)->dev->mac, 6);
	return 0;
}

static int ext_send_raw(struct fid_domain *domain, const void *frame, size_t len)
{
	struct dr_dev *dev;
	int ret;

	if (!domain || !frame || domain->fid.fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	dev = dr_domain_of(domain)->dev;
	dr_dev_lock(dev);
	ret = dr_port_send_raw(dev->port, frame, len);
	dr_dev_unlock(dev);
	return ret;
}

static const struct fi_droce_ops ext_ops = {
    .size = sizeof(struct fi_droce_ops),
    .qp_info = ext_qp_info,
    .counters = ext_counters,
    .drops = ext_drops,
    .drop_name = ext_drop_name,
    .port_mac = ext_port_mac,
    .send_raw = ext_send_raw,
};

int dr_ext_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	if (!name || !ops || flags)
		return -FI_EINVAL;
	if (strcmp(name, FI_DROCE_OPS_1))
		return -FI_ENOSYS;
	*ops = DR_OPS(&ext_ops);
	return 0;
}
