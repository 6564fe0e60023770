// SPDX-License-Identifier: BSD-2-Clause
/*
 * Live counters: the /droce/... commands of DPDK telemetry, read by
 * droce-stat (tools/droce-stat.c) or dpdk-telemetry.py while the program
 * runs.  fi_droce(7) "Live counters" lists every name; names are an
 * interface: add, never rename.
 *
 *	/droce/ports		{"ID": "domain name", ...}
 *	/droce/port,ID		the port's counters
 *	/droce/qps		{"QPN": port ID, ...}
 *	/droce/qp,QPN[,ID]	the QP's state and counters
 *
 * Where a counter means what one of rdma_rxe's does (the kernel's
 * drivers/infiniband/sw/rxe/rxe_hw_counters.c, shown by `rdma statistic`)
 * it carries rxe's name, so that a script written for one reads the
 * other; the port's are the sums over its QPs, closed ones included, as
 * rxe's are per device.  Every other counter has droce's own name, the
 * one fi_droce_ops.counters() gives (ext.c).
 *
 * Concurrency: commands run on a DPDK telemetry thread, never on the
 * application's.  A port and its QPs are read under dev->lock, the lock
 * the data path holds while it changes them, for the time of a copy (a QP
 * list walk for the port's sums: at most DR_MAX_EP QPs); the reply is
 * built from the copy after the lock is dropped (/droce/qps writes its
 * QPNs during the walk: one short entry each).  tel_lock keeps a device
 * from being freed while a command reads it (dr_tel_dev_del waits); the
 * QPs are found through dev->qps under dev->lock, the lock their
 * destruction holds, so a QP being destroyed is either whole or gone.
 * Lock order: tel_lock, then dev->lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_fi.h"

#define TEL_MAX_DEVS 64

static pthread_mutex_t tel_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct dr_dev *dev; /* NULL: free slot */
	unsigned id;
} tel_devs[TEL_MAX_DEVS];	 /* under tel_lock */
static unsigned tel_next_id = 1; /* under tel_lock; ports number from 1, as rdma's do */

/* ---- the counters named as rdma_rxe names them ----------------------------- */

/* What rxe counts per device, from one QP (or a sum of QPs). */
struct rxe_view {
	uint64_t sent_pkts, rcvd_pkts;
	uint64_t duplicate_request, out_of_seq_request, rcvd_seq_err;
	uint64_t send_rnr_err, rcvd_rnr_err;
	uint64_t retry_exceeded_err, retry_rnr_exceeded_err, completer_retry_err;
};

/*
 * rxe -> droce (rxe_resp.c check_psn, rxe_comp.c, rxe_net.c):
 *  duplicate_request	every request behind the expected PSN: rx_dup_reqs
 *  out_of_seq_request	a request ahead of it, once per gap (when the NAK
 *			is sent): tx_seq_naks
 *  rcvd_seq_err	NAK sequence errors received: rx_seq_naks
 *  send_rnr_err	RNR NAKs sent: tx_rnr_naks;  rcvd_rnr_err: rx_rnr_naks
 *  completer_retry_err	retries counted against retry_cnt: retries
 *  retry_exceeded_err, retry_rnr_exceeded_err: work requests failed with
 *			the retry (RNR retry) counter exceeded
 * rxe's ack_deferred (completer runs deferred to its tasklet), link_downed,
 * rdma_sends and rdma_recvs have no droce counterpart and are not shown.
 */
static void rxe_add(struct rxe_view *v, const struct dr_qp_stats *qs, uint64_t retry_exc,
		    uint64_t rnr_retry_exc)
{
	v->duplicate_request += qs->rx_dup_reqs;
	v->out_of_seq_request += qs->tx_seq_naks;
	v->rcvd_seq_err += qs->rx_seq_naks;
	v->send_rnr_err += qs->tx_rnr_naks;
	v->rcvd_rnr_err += qs->rx_rnr_naks;
	v->completer_retry_err += qs->retries;
	v->retry_exceeded_err += retry_exc;
	v->retry_rnr_exceeded_err += rnr_retry_exc;
}

static void rxe_put(struct dr_tel *t, const struct rxe_view *v)
{
	dr_tel_u64(t, "sent_pkts", v->sent_pkts);
	dr_tel_u64(t, "rcvd_pkts", v->rcvd_pkts);
	dr_tel_u64(t, "duplicate_request", v->duplicate_request);
	dr_tel_u64(t, "out_of_seq_request", v->out_of_seq_request);
	dr_tel_u64(t, "rcvd_seq_err", v->rcvd_seq_err);
	dr_tel_u64(t, "send_rnr_err", v->send_rnr_err);
	dr_tel_u64(t, "rcvd_rnr_err", v->rcvd_rnr_err);
	dr_tel_u64(t, "retry_exceeded_err", v->retry_exceeded_err);
	dr_tel_u64(t, "retry_rnr_exceeded_err", v->retry_rnr_exceeded_err);
	dr_tel_u64(t, "completer_retry_err", v->completer_retry_err);
}

static void put_u64(void *ctx, const char *name, uint64_t value)
{
	dr_tel_u64(ctx, name, value);
}

/* ---- the device list --------------------------------------------------------- */

static int cmd_ports(const char *params, struct dr_tel *t);
static int cmd_port(const char *params, struct dr_tel *t);
static int cmd_qps(const char *params, struct dr_tel *t);
static int cmd_qp(const char *params, struct dr_tel *t);

static void tel_register(void)
{
	static const struct {
		const char *cmd;
		dr_tel_fn fn;
		const char *help;
	} c[] = {
	    {"/droce/ports", cmd_ports, "droce's ports: {id: domain name}. No parameters"},
	    {"/droce/port", cmd_port,
	     "A droce port's counters (fi_droce(7) Live counters). Parameter: port id"},
	    {"/droce/qps", cmd_qps, "droce's queue pairs: {QPN: port id}. No parameters"},
	    {"/droce/qp", cmd_qp,
	     "A droce queue pair's state and counters. Parameters: QPN[,port id]"},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int ret = dr_tel_register(c[i].cmd, c[i].fn, c[i].help);

		if (ret)
			DR_WARN(FI_LOG_DOMAIN, "telemetry command %s not registered: %s\n",
				c[i].cmd, strerror(-ret));
	}
}

void dr_tel_dev_add(struct dr_dev *dev)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	unsigned i;

	pthread_once(&once, tel_register);
	pthread_mutex_lock(&tel_lock);
	for (i = 0; i < TEL_MAX_DEVS && tel_devs[i].dev; i++)
		;
	if (i < TEL_MAX_DEVS) {
		tel_devs[i].dev = dev;
		tel_devs[i].id = tel_next_id++;
	}
	pthread_mutex_unlock(&tel_lock);
	if (i == TEL_MAX_DEVS)
		DR_WARN(FI_LOG_DOMAIN, "%s: not in telemetry: %d ports are listed already\n",
			dev->cfg.name, TEL_MAX_DEVS);
	else if (*dr_tel_socket())
		DR_INFO(FI_LOG_DOMAIN, "%s: live counters as port %u at %s\n", dev->cfg.name,
			tel_devs[i].id, dr_tel_socket());
}

void dr_tel_dev_del(struct dr_dev *dev)
{
	pthread_mutex_lock(&tel_lock);
	for (unsigned i = 0; i < TEL_MAX_DEVS; i++)
		if (tel_devs[i].dev == dev)
			tel_devs[i].dev = NULL;
	pthread_mutex_unlock(&tel_lock);
}

void dr_tel_qp_gone(struct dr_dev *dev, const struct dr_ep *ep, const struct dr_qp *qp)
{
	const uint64_t *from = (const uint64_t *)dr_qp_stats(qp);
	uint64_t *to = (uint64_t *)&dev->qp_gone.qs;

	/* struct dr_qp_stats is uint64_t counters only */
	for (size_t i = 0; i < sizeof(struct dr_qp_stats) / sizeof(uint64_t); i++)
		to[i] += from[i];
	dev->qp_gone.retry_exc += ep->retry_exc;
	dev->qp_gone.rnr_retry_exc += ep->rnr_retry_exc;
}

/* A decimal (or 0x hex) number that is all of s, at most max. */
static int parse_num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 0);
	if (errno || *end || *out > max || *s == '-')
		return -EINVAL;
	return 0;
}

/* tel_lock held */
static struct dr_dev *dev_by_id(unsigned long id)
{
	for (unsigned i = 0; i < TEL_MAX_DEVS; i++)
		if (tel_devs[i].dev && tel_devs[i].id == id)
			return tel_devs[i].dev;
	return NULL;
}

/* ---- commands ----------------------------------------------------------------- */

static int cmd_ports(const char *params, struct dr_tel *t)
{
	char id[16];

	if (params)
		return -EINVAL;
	pthread_mutex_lock(&tel_lock);
	for (unsigned i = 0; i < TEL_MAX_DEVS; i++)
		if (tel_devs[i].dev) {
			snprintf(id, sizeof(id), "%u", tel_devs[i].id);
			dr_tel_str(t, id, tel_devs[i].dev->cfg.name);
		}
	pthread_mutex_unlock(&tel_lock);
	return 0;
}

static int cmd_port(const char *params, struct dr_tel *t)
{
	struct dr_dev_qp_sum sum = {0};
	struct rxe_view v = {0};
	struct dr_dev_snap s;
	struct dr_dev *dev;
	unsigned long id;
	uint64_t nqps = 0;
	char name[64], device[128];

	if (parse_num(params, UINT32_MAX, &id))
		return -EINVAL;
	pthread_mutex_lock(&tel_lock);
	dev = dev_by_id(id);
	if (!dev) {
		pthread_mutex_unlock(&tel_lock);
		return -ENOENT;
	}
	snprintf(name, sizeof(name), "%s", dev->cfg.name);
	snprintf(device, sizeof(device), "%s", dr_port_name(dev->port));
	dr_dev_lock(dev);
	dr_ext_dev_snap(dev, &s);
	sum = dev->qp_gone;
	for (uint32_t i = 0; i <= dev->qps.mask; i++) {
		const struct dr_ep *ep = dev->qps.ent[i].val;

		if (!dev->qps.ent[i].id || !ep || !ep->qp)
			continue;
		nqps++;
		rxe_add(&v, dr_qp_stats(ep->qp), ep->retry_exc, ep->rnr_retry_exc);
	}
	dr_dev_unlock(dev);
	pthread_mutex_unlock(&tel_lock);

	rxe_add(&v, &sum.qs, sum.retry_exc, sum.rnr_retry_exc);
	/* rxe counts every RoCE packet it sends or accepts, QP1's MADs too */
	v.sent_pkts = s.ps.tx_frames - s.ps.tx_arp - s.ps.tx_nd;
	v.rcvd_pkts = s.ps.rx_roce;
	dr_tel_u64(t, "port", id);
	dr_tel_str(t, "name", name);
	dr_tel_str(t, "device", device);
	dr_tel_u64(t, "qps", nqps);
	rxe_put(t, &v);
	/* rxe's send_err: a packet the device would not take */
	dr_tel_u64(t, "send_err", s.ps.tx_dropped);
	dr_ext_dev_counters(&s, put_u64, t);
	return 0;
}

static int cmd_qps(const char *params, struct dr_tel *t)
{
	char qpn[16];

	if (params)
		return -EINVAL;
	pthread_mutex_lock(&tel_lock);
	for (unsigned d = 0; d < TEL_MAX_DEVS; d++) {
		struct dr_dev *dev = tel_devs[d].dev;

		if (!dev)
			continue;
		dr_dev_lock(dev);
		for (uint32_t i = 0; i <= dev->qps.mask; i++) {
			if (!dev->qps.ent[i].id)
				continue;
			snprintf(qpn, sizeof(qpn), "%" PRIu32, dev->qps.ent[i].id);
			dr_tel_u64(t, qpn, tel_devs[d].id);
		}
		dr_dev_unlock(dev);
	}
	pthread_mutex_unlock(&tel_lock);
	return 0;
}

static int cmd_qp(const char *params, struct dr_tel *t)
{
	unsigned long qpn, want = 0, id = 0;
	uint64_t retry_exc = 0, rnr_retry_exc = 0, rto_ns = 0;
	struct dr_qp_stats qs;
	struct dr_qp_attr a;
	struct rxe_view v = {0};
	enum dr_qp_state state = DR_QPS_RESET;
	uint32_t start_psn = 0;
	bool found = false;
	char buf[32];
	const char *comma = params ? strchr(params, ',') : NULL;

	if (!params || (size_t)(comma ? comma - params : (ptrdiff_t)strlen(params)) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%.*s",
		 (int)(comma ? comma - params : (ptrdiff_t)strlen(params)), params);
	if (parse_num(buf, DR_QPN_MASK, &qpn) || qpn == 0 ||
	    (comma && parse_num(comma + 1, UINT32_MAX, &want)))
		return -EINVAL;
	pthread_mutex_lock(&tel_lock);
	for (unsigned d = 0; d < TEL_MAX_DEVS && !found; d++) {
		struct dr_dev *dev = tel_devs[d].dev;
		const struct dr_ep *ep;

		if (!dev || (want && tel_devs[d].id != want))
			continue;
		dr_dev_lock(dev);
		ep = dr_idmap_find(&dev->qps, (uint32_t)qpn);
		if (ep && ep->qp) {
			found = true;
			id = tel_devs[d].id;
			qs = *dr_qp_stats(ep->qp);
			dr_qp_query(ep->qp, &a);
			state = dr_qp_state(ep->qp);
			rto_ns = dr_qp_rto_ns(ep->qp);
			start_psn = ep->start_psn;
			retry_exc = ep->retry_exc;
			rnr_retry_exc = ep->rnr_retry_exc;
		}
		dr_dev_unlock(dev);
	}
	pthread_mutex_unlock(&tel_lock);
	if (!found)
		return -ENOENT;

	dr_tel_u64(t, "qpn", qpn);
	dr_tel_u64(t, "port", id);
	dr_tel_str(t, "state", dr_qp_state_names[state]);
	dr_tel_u64(t, "dest_qpn", a.dest_qpn);
	dr_tel_u64(t, "start_psn", start_psn);
	dr_tel_u64(t, "sq_psn", a.sq_psn);
	dr_tel_u64(t, "rq_psn", a.rq_psn);
	dr_tel_u64(t, "path_mtu", a.path_mtu);
	dr_tel_u64(t, "rto_us", rto_ns / 1000);
	/*
	 * Congestion control (issue 13, ECN/CNP): when struct dr_qp_stats
	 * gains its CNP counters and the QP a current rate, they go here,
	 * under these names: "rate_mbps" (the current rate), "cnp_sent",
	 * "cnp_rcvd", "ecn_ce_rcvd"; the port's sums in cmd_port beside
	 * rxe's.  dr_ext_qp_counters below shows any new dr_qp_stats field
	 * listed in ext.c's qp_counters already.
	 */
	rxe_add(&v, &qs, retry_exc, rnr_retry_exc);
	v.sent_pkts = qs.tx_frames;
	v.rcvd_pkts = qs.rx_frames;
	rxe_put(t, &v);
	dr_ext_qp_counters(&qs, put_u64, t);
	return 0;
}
