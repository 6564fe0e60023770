// SPDX-License-Identifier: BSD-2-Clause
/*
 * Attributes as data, and fi_getinfo.  The templates below say what droce
 * can do; getinfo copies them, narrows them to the hints, and refuses
 * (-FI_ENODATA) whatever it cannot honour, so an application never finds
 * out later by a hang.  Templates are never edited.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "dr_fi.h"

/* Capabilities by role (fi_getinfo(3)); see DR_CAPS in dr_fi.h. */
#define DR_TX_CAPS (DR_CAPS & (FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | FI_WRITE | \
			       FI_FENCE))
#define DR_RX_CAPS (DR_CAPS & (FI_MSG | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ | \
			       FI_REMOTE_WRITE | FI_RMA_EVENT))
#define DR_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)

/* RC executes requests in PSN order at the responder (IBA 9.5); a READ may
 * be passed by a later WRITE or SEND of the same requester (IBA 10.8.3.3),
 * hence no WAR/SAR: the set the verbs provider reports for RC. */
#define DR_MSG_ORDER (FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | FI_ORDER_WAW | \
		      FI_ORDER_WAS | FI_ORDER_SAW | FI_ORDER_SAS)

/* What memory registration asks of the application (fi_mr(3)). */
#define DR_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)

static const struct fi_tx_attr dr_tx_attr = {
	.caps = DR_TX_CAPS,
	.mode = 0,
	.op_flags = 0,
	.msg_order = DR_MSG_ORDER,
	.comp_order = FI_ORDER_STRICT,
	.inject_size = DR_MAX_INLINE,
	.size = DR_MAX_TX_SIZE,
	.iov_limit = DR_MAX_IOV,
	.rma_iov_limit = 1,
};

static const struct fi_rx_attr dr_rx_attr = {
	.caps = DR_RX_CAPS,
	.mode = 0,
	.op_flags = 0,
	.msg_order = DR_MSG_ORDER,
	.comp_order = FI_ORDER_STRICT,
	.total_buffered_recv = 0,
	.size = DR_MAX_RX_SIZE,
	.iov_limit = DR_MAX_IOV,
};

static const struct fi_ep_attr dr_ep_attr = {
	.type = FI_EP_MSG,
	.protocol = FI_PROTO_RDMA_CM_IB_RC, /* RoCEv2 RC set up by IB CM */
	.protocol_version = 1,
	.max_msg_size = DR_MAX_MSG_SIZE,
	.msg_prefix_size = 0,
	.max_order_raw_size = DR_MAX_MSG_SIZE,
	.max_order_war_size = 0,
	.max_order_waw_size = DR_MAX_MSG_SIZE,
	.mem_tag_format = 0,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static const struct fi_domain_attr dr_domain_attr = {
	.threading = FI_THREAD_SAFE, /* the device lock (dr_fi.h) */
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED, /* RNR retry, CQs that grow */
	.av_type = FI_AV_UNSPEC,
	.mr_mode = DR_MR_MODE,
	.mr_key_size = sizeof(uint32_t),
	.cq_data_size = sizeof(uint32_t), /* ImmDt */
	.cq_cnt = 1024,
	.ep_cnt = DR_MAX_EP,
	.tx_ctx_cnt = DR_MAX_EP,
	.rx_ctx_cnt = DR_MAX_EP,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = 0,
	.max_ep_srx_ctx = 0,
	.cntr_cnt = 1024,
	.mr_iov_limit = 1,
	.caps = DR_DOMAIN_CAPS,
	.mode = 0,
	.max_err_data = DR_MAX_ERR_DATA,
	.mr_cnt = DR_MAX_MR,
};

static const struct fi_fabric_attr dr_fabric_attr = {
	.prov_version = DR_PROV_VERSION,
};

/* ---- matching hints ------------------------------------------------------ */

/* Each refusal below is one FI_INFO line naming the hint, the value asked
 * for and what droce offers instead; check_hints goes through every hint
 * and names each one it cannot meet, once, before it answers -FI_ENODATA,
 * so that an application (or a layered provider such as ofi_rxm, whose
 * hints the user never sees) learns all it has to change from one run at
 * FI_LOG_LEVEL=info.  Modes and threading are never refused: droce needs
 * no mode bit and is FI_THREAD_SAFE (see dr_domain_attr). */
struct refusals {
	unsigned n;
};

static void refuse(struct refusals *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void refuse(struct refusals *r, const char *fmt, ...)
{
	char msg[320];
	va_list ap;

	r->n++;
	if (!fi_log_enabled(&dr_prov, FI_LOG_INFO, FI_LOG_CORE))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	DR_INFO(FI_LOG_CORE, "droce: getinfo refuses the hints: %s\n", msg);
}

/* A refusal that is the whole answer (nothing else to check). */
#define NODATA(...)                                             \
	do {                                                    \
		DR_INFO(FI_LOG_CORE, __VA_ARGS__);              \
		return -FI_ENODATA;                             \
	} while (0)

/* fi_tostr_r's names for a value (one buffer per use). */
#define NAMES(buf, val, type) fi_tostr_r((buf), sizeof(buf), &(val), (type))

/* " [FI_X, FI_Y]" for op flags, or "" where fi_tostr knows no name for
 * them (1.17 has none for FI_COMMIT_COMPLETE): the hex value says it. */
static const char *flag_names(char *buf, size_t len, uint64_t flags)
{
	char names[224];

	fi_tostr_r(names, sizeof(names), &flags, FI_TYPE_OP_FLAGS);
	if (names[0])
		snprintf(buf, len, " [%s]", names);
	else
		buf[0] = 0;
	return buf;
}

/* FI_MSG alone means both directions of it (fi_getinfo(3)). */
static uint64_t expand_caps(uint64_t caps)
{
	if ((caps & (FI_MSG | FI_RMA | FI_ATOMIC)) && !(caps & (FI_SEND | FI_RECV | FI_READ |
								FI_WRITE | FI_REMOTE_READ |
								FI_REMOTE_WRITE)))
		caps |= (caps & FI_MSG ? FI_SEND | FI_RECV : 0) |
			(caps & (FI_RMA | FI_ATOMIC) ?
				 FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE : 0);
	return caps;
}

/* libfabric's rule (ofi_check_mr_mode, api >= 1.5): the application must
 * support every mode bit the provider needs for the caps it asked for; the
 * legacy FI_MR_BASIC stands for our three bits. */
static void check_mr_mode(struct refusals *r, uint32_t version, const struct fi_info *hints,
			  uint64_t caps)
{
	int user = hints->domain_attr ? hints->domain_attr->mr_mode : 0;
	int need = DR_MR_MODE, missing;
	char buf[128], buf2[128];

	if (!(caps & (FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		need = 0; /* no RMA target: no keys to hand out */
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)) || (user & FI_MR_BASIC) ||
	    (user & FI_MR_SCALABLE)) {
		if ((user & FI_MR_SCALABLE) || (user & ~FI_MR_BASIC & ~FI_MR_UNSPEC))
			refuse(r, "domain_attr->mr_mode 0x%x: FI_MR_SCALABLE, or FI_MR_BASIC "
				  "mixed with other bits; droce offers FI_MR_BASIC alone or "
				  "FI_MR_VIRT_ADDR, FI_MR_PROV_KEY, FI_MR_ALLOCATED",
			       user);
		return;
	}
	missing = need & ~user;
	if (missing)
		refuse(r, "domain_attr->mr_mode [%s] lacks [%s], which droce needs for RMA and "
			  "atomics",
		       user ? NAMES(buf, user, FI_TYPE_MR_MODE) : "none",
		       NAMES(buf2, missing, FI_TYPE_MR_MODE));
}

static void check_order(struct refusals *r, uint64_t want, uint64_t have, enum fi_type type,
			const char *what)
{
	uint64_t extra = want & ~have;
	char buf[256], buf2[256];

	if (extra)
		refuse(r, "%s asks for [%s]; droce offers [%s]", what,
		       NAMES(buf, extra, type), NAMES(buf2, have, type));
}

static void check_size(struct refusals *r, const char *what, uint64_t want, uint64_t max)
{
	if (want > max)
		refuse(r, "%s %llu exceeds droce's %llu", what, (unsigned long long)want,
		       (unsigned long long)max);
}

static const char *ctx_cnt_str(char *buf, size_t len, size_t cnt)
{
	if (cnt == FI_SHARED_CONTEXT)
		return "FI_SHARED_CONTEXT";
	snprintf(buf, len, "%zu", cnt);
	return buf;
}

static void check_ep_attr(struct refusals *r, const struct fi_ep_attr *e)
{
	char buf[64];

	if (e->type != FI_EP_UNSPEC && e->type != FI_EP_MSG)
		refuse(r, "ep_attr->type %s; droce offers FI_EP_MSG (FI_EP_RDM through "
			  "\"droce;ofi_rxm\")",
		       NAMES(buf, e->type, FI_TYPE_EP_TYPE));
	if (e->protocol != FI_PROTO_UNSPEC && e->protocol != dr_ep_attr.protocol)
		refuse(r, "ep_attr->protocol %s; droce offers FI_PROTO_RDMA_CM_IB_RC",
		       NAMES(buf, e->protocol, FI_TYPE_PROTOCOL));
	check_size(r, "ep_attr->max_msg_size", e->max_msg_size, dr_ep_attr.max_msg_size);
	check_size(r, "ep_attr->max_order_raw_size", e->max_order_raw_size,
		   dr_ep_attr.max_order_raw_size);
	check_size(r, "ep_attr->max_order_war_size", e->max_order_war_size,
		   dr_ep_attr.max_order_war_size);
	check_size(r, "ep_attr->max_order_waw_size", e->max_order_waw_size,
		   dr_ep_attr.max_order_waw_size);
	if (e->tx_ctx_cnt > 1)
		refuse(r, "ep_attr->tx_ctx_cnt %s; droce offers one transmit context, not "
			  "shared or scalable",
		       ctx_cnt_str(buf, sizeof(buf), e->tx_ctx_cnt));
	if (e->rx_ctx_cnt > 1)
		refuse(r, "ep_attr->rx_ctx_cnt %s; droce offers one receive context, not "
			  "shared or scalable",
		       ctx_cnt_str(buf, sizeof(buf), e->rx_ctx_cnt));
	if (e->mem_tag_format)
		refuse(r, "ep_attr->mem_tag_format 0x%llx; droce has no tagged messages "
			  "(FI_TAGGED through \"droce;ofi_rxm\")",
		       (unsigned long long)e->mem_tag_format);
	if (e->msg_prefix_size)
		refuse(r, "ep_attr->msg_prefix_size %zu; droce needs no message prefix",
		       e->msg_prefix_size);
	if (e->auth_key_size)
		refuse(r, "ep_attr->auth_key_size %zu; droce has no auth keys", e->auth_key_size);
}

static void check_domain_attr(struct refusals *r, const struct fi_domain_attr *d)
{
	const struct fi_domain_attr *t = &dr_domain_attr;
	char buf[64];

	if (d->control_progress == FI_PROGRESS_AUTO)
		refuse(r, "domain_attr->control_progress %s; droce offers FI_PROGRESS_MANUAL",
		       NAMES(buf, d->control_progress, FI_TYPE_PROGRESS));
	if (d->data_progress == FI_PROGRESS_AUTO)
		refuse(r, "domain_attr->data_progress %s; droce offers FI_PROGRESS_MANUAL",
		       NAMES(buf, d->data_progress, FI_TYPE_PROGRESS));
	check_size(r, "domain_attr->cq_data_size", d->cq_data_size, t->cq_data_size);
	check_size(r, "domain_attr->mr_key_size", d->mr_key_size, t->mr_key_size);
	check_size(r, "domain_attr->cq_cnt", d->cq_cnt, t->cq_cnt);
	check_size(r, "domain_attr->ep_cnt", d->ep_cnt, t->ep_cnt);
	check_size(r, "domain_attr->tx_ctx_cnt", d->tx_ctx_cnt, t->tx_ctx_cnt);
	check_size(r, "domain_attr->rx_ctx_cnt", d->rx_ctx_cnt, t->rx_ctx_cnt);
	check_size(r, "domain_attr->max_ep_tx_ctx", d->max_ep_tx_ctx, t->max_ep_tx_ctx);
	check_size(r, "domain_attr->max_ep_rx_ctx", d->max_ep_rx_ctx, t->max_ep_rx_ctx);
	check_size(r, "domain_attr->max_ep_stx_ctx", d->max_ep_stx_ctx, t->max_ep_stx_ctx);
	check_size(r, "domain_attr->max_ep_srx_ctx", d->max_ep_srx_ctx, t->max_ep_srx_ctx);
	check_size(r, "domain_attr->cntr_cnt", d->cntr_cnt, t->cntr_cnt);
	check_size(r, "domain_attr->mr_iov_limit", d->mr_iov_limit, t->mr_iov_limit);
	check_size(r, "domain_attr->max_err_data", d->max_err_data, t->max_err_data);
	check_size(r, "domain_attr->mr_cnt", d->mr_cnt, t->mr_cnt);
	if (d->auth_key_size)
		refuse(r, "domain_attr->auth_key_size %zu; droce has no auth keys",
		       d->auth_key_size);
}

static void check_tx_attr(struct refusals *r, const struct fi_tx_attr *t)
{
	const struct fi_tx_attr *o = &dr_tx_attr;
	uint64_t flags;
	char buf[256];

	if (t->caps & ~(DR_CAPS | DR_DOMAIN_CAPS)) {
		uint64_t extra = t->caps & ~(DR_CAPS | DR_DOMAIN_CAPS);

		refuse(r, "tx_attr->caps [%s] not offered", NAMES(buf, extra, FI_TYPE_CAPS));
	}
	check_size(r, "tx_attr->size", t->size, o->size);
	check_size(r, "tx_attr->iov_limit", t->iov_limit, o->iov_limit);
	check_size(r, "tx_attr->inject_size", t->inject_size, o->inject_size);
	check_size(r, "tx_attr->rma_iov_limit", t->rma_iov_limit, o->rma_iov_limit);
	check_order(r, t->msg_order, DR_MSG_ORDER, FI_TYPE_MSG_ORDER, "tx_attr->msg_order");
	check_order(r, t->comp_order, FI_ORDER_STRICT, FI_TYPE_MSG_ORDER,
		    "tx_attr->comp_order");
	/* no FI_COMMIT_COMPLETE: no persistent memory (FI_RMA_PMEM) */
	flags = t->op_flags & ~DR_TX_OP_FLAGS;
	if (flags)
		refuse(r, "tx_attr->op_flags 0x%llx%s not offered", (unsigned long long)flags,
		       flag_names(buf, sizeof(buf), flags));
}

static void check_rx_attr(struct refusals *r, const struct fi_rx_attr *x)
{
	const struct fi_rx_attr *o = &dr_rx_attr;
	uint64_t flags;
	char buf[256];

	if (x->caps & ~(DR_CAPS | DR_DOMAIN_CAPS)) {
		uint64_t extra = x->caps & ~(DR_CAPS | DR_DOMAIN_CAPS);

		refuse(r, "rx_attr->caps [%s] not offered", NAMES(buf, extra, FI_TYPE_CAPS));
	}
	check_size(r, "rx_attr->size", x->size, o->size);
	check_size(r, "rx_attr->iov_limit", x->iov_limit, o->iov_limit);
	check_size(r, "rx_attr->total_buffered_recv", x->total_buffered_recv,
		   o->total_buffered_recv);
	check_order(r, x->msg_order, DR_MSG_ORDER, FI_TYPE_MSG_ORDER, "rx_attr->msg_order");
	check_order(r, x->comp_order, FI_ORDER_STRICT, FI_TYPE_MSG_ORDER,
		    "rx_attr->comp_order");
	flags = x->op_flags & ~FI_COMPLETION;
	if (flags)
		refuse(r, "rx_attr->op_flags 0x%llx%s not offered (FI_MULTI_RECV through "
			  "\"droce;ofi_rxm\")",
		       (unsigned long long)flags, flag_names(buf, sizeof(buf), flags));
}

static int check_hints(uint32_t version, const struct fi_info *h, uint64_t caps)
{
	struct refusals r = { 0 };
	char buf[256];

	if (caps & ~(DR_CAPS | DR_DOMAIN_CAPS)) {
		uint64_t extra = caps & ~(DR_CAPS | DR_DOMAIN_CAPS);

		refuse(&r, "caps [%s] not offered (FI_TAGGED, FI_MULTI_RECV, FI_DIRECTED_RECV "
			   "and FI_SOURCE through \"droce;ofi_rxm\")",
		       NAMES(buf, extra, FI_TYPE_CAPS));
	}
	if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR_IN &&
	    h->addr_format != FI_SOCKADDR_IN6 && h->addr_format != FI_SOCKADDR)
		refuse(&r, "addr_format %s; droce offers FI_SOCKADDR_IN and FI_SOCKADDR_IN6",
		       NAMES(buf, h->addr_format, FI_TYPE_ADDR_FORMAT));
	if (h->ep_attr)
		check_ep_attr(&r, h->ep_attr);
	if (h->domain_attr)
		check_domain_attr(&r, h->domain_attr);
	check_mr_mode(&r, version, h, caps);
	if (h->tx_attr)
		check_tx_attr(&r, h->tx_attr);
	if (h->rx_attr)
		check_rx_attr(&r, h->rx_attr);
	/* fabric_attr->prov_name is libfabric's business: it chose droce by
	 * it, and a layered provider passes its own list down ("droce;^ofi_rxm") */
	if (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, DR_FABRIC_NAME))
		refuse(&r, "fabric_attr->name \"%s\"; droce's fabric is \"" DR_FABRIC_NAME "\"",
		       h->fabric_attr->name);
	if (h->fabric_attr && h->fabric_attr->prov_version > DR_PROV_VERSION)
		refuse(&r, "fabric_attr->prov_version 0x%x exceeds droce's 0x%x",
		       h->fabric_attr->prov_version, DR_PROV_VERSION);
	return r.n ? -FI_ENODATA : 0;
}

/* ---- building the answer ------------------------------------------------- */

/* A sockaddr of the device's family: its own address (a NULL), or a */
static void *sa_new(const struct dr_devcfg *cfg, const struct dr_ipaddr *a, uint16_t port,
		    size_t *len)
{
	union dr_sockaddr *sa = malloc(sizeof(*sa));

	if (!sa)
		return NULL;
	dr_sa_local(sa, cfg, port);
	if (a && cfg->ipv6)
		memcpy(&sa->sin6.sin6_addr, a->ip6, 16);
	else if (a)
		sa->sin.sin_addr.s_addr = htonl(a->ip4);
	*len = dr_sa_len(sa);
	return sa;
}

static int parse_port(const char *service, uint16_t *port)
{
	char *end;
	long p;

	*port = 0;
	if (!service)
		return 0;
	p = strtol(service, &end, 10);
	if (end == service || *end || p < 0 || p > 65535)
		NODATA("droce: service %s is not a port number\n", service);
	*port = (uint16_t)p;
	return 0;
}

static struct fi_info *info_new(uint32_t version, const struct fi_info *h, uint64_t caps,
				const struct dr_devcfg *cfg)
{
	struct fi_info *fi = fi_allocinfo();

	if (!fi)
		return NULL;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = cfg->ipv6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	*fi->tx_attr = dr_tx_attr;
	fi->tx_attr->caps &= caps;
	*fi->rx_attr = dr_rx_attr;
	fi->rx_attr->caps &= caps;
	*fi->ep_attr = dr_ep_attr;
	*fi->domain_attr = dr_domain_attr;
	*fi->fabric_attr = dr_fabric_attr;
	fi->domain_attr->name = strdup(cfg->name);
	fi->fabric_attr->name = strdup(DR_FABRIC_NAME);
	/* prov_name is left to libfabric: it appends the provider's own */
	fi->fabric_attr->api_version = version;
	if (!fi->domain_attr->name || !fi->fabric_attr->name)
		goto out_free;

	/* FI_RX_CQ_DATA (fi_getinfo(3)): an application that accepts it
	 * posts receives for fi_writedata's CQ data, which consumes them as
	 * on IB; one that does not is served without (ep.c). */
	if (h && (caps & FI_RMA) &&
	    ((h->mode | (h->rx_attr ? h->rx_attr->mode : 0)) & FI_RX_CQ_DATA)) {
		fi->mode |= FI_RX_CQ_DATA;
		fi->rx_attr->mode |= FI_RX_CQ_DATA;
	}
	if (h) {
		/* narrow to what was asked for */
		if (h->domain_attr) {
			if (h->domain_attr->threading != FI_THREAD_UNSPEC)
				fi->domain_attr->threading = h->domain_attr->threading;
			if (h->domain_attr->resource_mgmt == FI_RM_DISABLED)
				fi->domain_attr->resource_mgmt = FI_RM_DISABLED;
			if (h->domain_attr->mr_mode & FI_MR_BASIC)
				fi->domain_attr->mr_mode = FI_MR_BASIC;
		}
		if (h->tx_attr) {
			if (h->tx_attr->size)
				fi->tx_attr->size = h->tx_attr->size;
			if (h->tx_attr->iov_limit)
				fi->tx_attr->iov_limit = h->tx_attr->iov_limit;
			if (h->tx_attr->msg_order)
				fi->tx_attr->msg_order = h->tx_attr->msg_order;
			fi->tx_attr->op_flags = h->tx_attr->op_flags;
		}
		if (h->rx_attr) {
			if (h->rx_attr->size)
				fi->rx_attr->size = h->rx_attr->size;
			if (h->rx_attr->iov_limit)
				fi->rx_attr->iov_limit = h->rx_attr->iov_limit;
			if (h->rx_attr->msg_order)
				fi->rx_attr->msg_order = h->rx_attr->msg_order;
			fi->rx_attr->op_flags = h->rx_attr->op_flags;
		}
	}
	return fi;

out_free:
	fi_freeinfo(fi);
	return NULL;
}

int dr_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
	       const struct fi_info *hints, struct fi_info **info)
{
	const struct dr_settings *s = dr_settings_get();
	const char *src_node = NULL, *dst_node = NULL;
	char srcbuf[INET6_ADDRSTRLEN];
	struct dr_devcfg cfgs[DR_MAX_DEVS];
	struct fi_info *fi, *head = NULL;
	struct dr_settings one;
	struct dr_ipaddr dst;
	int n, hint_ver = 0;
	uint16_t port;
	uint64_t caps;
	int ret;

	*info = NULL;
	if (!s)
		return -FI_ENODATA; /* dr_settings_get said which parameter */
	caps = DR_CAPS | DR_DOMAIN_CAPS;
	if (hints && hints->caps)
		caps = (expand_caps(hints->caps) & (DR_CAPS | DR_DOMAIN_CAPS)) | DR_DOMAIN_CAPS;
	if (hints) {
		ret = check_hints(version, hints, expand_caps(hints->caps) & ~DR_DOMAIN_CAPS);
		if (ret)
			return ret;
	}
	ret = parse_port(service, &port);
	if (ret)
		return ret;
	if (flags & FI_SOURCE)
		src_node = node;
	else
		dst_node = node;
	/* a source address in the hints names the local IP (and port) */
	if (!src_node && hints && hints->src_addr &&
	    hints->src_addrlen >= sizeof(struct sockaddr_in) &&
	    ((struct sockaddr *)hints->src_addr)->sa_family == AF_INET) {
		const struct sockaddr_in *sin = hints->src_addr;

		if (sin->sin_addr.s_addr != htonl(INADDR_ANY) &&
		    inet_ntop(AF_INET, &sin->sin_addr, srcbuf, sizeof(srcbuf)))
			src_node = srcbuf;
		if (!port)
			port = ntohs(sin->sin_port);
		hint_ver = 4;
	} else if (!src_node && hints && hints->src_addr &&
		   hints->src_addrlen >= sizeof(struct sockaddr_in6) &&
		   ((struct sockaddr *)hints->src_addr)->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = hints->src_addr;

		if (!IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr) &&
		    inet_ntop(AF_INET6, &sin6->sin6_addr, srcbuf, sizeof(srcbuf)))
			src_node = srcbuf;
		if (!port)
			port = ntohs(sin6->sin6_port);
		hint_ver = 6;
	}
	/* the family the hints ask for, as FI_DROCE_IP_VERSION would */
	if (hints && hints->addr_format == FI_SOCKADDR_IN)
		hint_ver = 4;
	else if (hints && hints->addr_format == FI_SOCKADDR_IN6)
		hint_ver = 6;
	else if (!hint_ver && hints && hints->dest_addr && hints->dest_addrlen)
		hint_ver = ((struct sockaddr *)hints->dest_addr)->sa_family == AF_INET6 ? 6 : 4;
	one = *s;
	if (hint_ver && s->ip_version && hint_ver != s->ip_version)
		NODATA("droce: getinfo refuses the hints: they ask for IPv%d, FI_DROCE_IP_VERSION "
		       "is %d\n",
		       hint_ver, s->ip_version);
	if (hint_ver)
		one.ip_version = hint_ver;
	n = dr_devcfg_list(&one, src_node, dst_node, cfgs, DR_MAX_DEVS);
	if (n < 0)
		return n;
	for (int i = n - 1; i >= 0; i--) {
		const struct dr_devcfg *cfg = &cfgs[i];

		if (hints && hints->domain_attr && hints->domain_attr->name &&
		    strcmp(hints->domain_attr->name, cfg->name))
			continue;
		if (dst_node && dr_resolve_ip(dst_node, cfg->ipv6 ? AF_INET6 : AF_INET, &dst)) {
			fi_freeinfo(head);
			NODATA("droce: getinfo: node %s does not resolve to an IPv%d address\n",
			       dst_node, cfg->ipv6 ? 6 : 4);
		}
		fi = info_new(version, hints, caps, cfg);
		if (!fi)
			goto out_nomem;
		fi->next = head;
		head = fi;
		fi->src_addr = sa_new(cfg, NULL, (flags & FI_SOURCE) || !dst_node ? port : 0,
				      &fi->src_addrlen);
		if (!fi->src_addr)
			goto out_nomem;
		if (dst_node) {
			fi->dest_addr = sa_new(cfg, &dst, port, &fi->dest_addrlen);
			if (!fi->dest_addr)
				goto out_nomem;
		} else if (hints && hints->dest_addr) {
			union dr_sockaddr d;

			if (dr_sa_take(hints->dest_addr, hints->dest_addrlen, cfg, &d)) {
				fi->dest_addrlen = dr_sa_len(&d);
				fi->dest_addr = malloc(fi->dest_addrlen);
				if (!fi->dest_addr)
					goto out_nomem;
				memcpy(fi->dest_addr, &d, fi->dest_addrlen);
			}
		}
	}
	if (!head)
		NODATA("droce: getinfo refuses the hints: domain_attr->name \"%s\" is none of "
		       "droce's devices (fi_info -p droce lists them)\n",
		       hints->domain_attr->name);
	*info = head;
	return 0;

out_nomem:
	fi_freeinfo(head);
	return -FI_ENOMEM;
}
