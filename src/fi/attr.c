// SPDX-License-Identifier: BSD-2-Clause
/*
 * Attributes as data, and fi_getinfo.  The templates below say what droce
 * can do; getinfo copies them, narrows them to the hints, and refuses
 * (-FI_ENODATA) whatever it cannot honour, so an application never finds
 * out later by a hang.  Templates are never edited.
 */
#include <arpa/inet.h>
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

#define NODATA(...)                                             \
	do {                                                    \
		DR_INFO(FI_LOG_CORE, __VA_ARGS__);              \
		return -FI_ENODATA;                             \
	} while (0)

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
static int check_mr_mode(uint32_t version, const struct fi_info *hints, uint64_t caps)
{
	int user = hints->domain_attr ? hints->domain_attr->mr_mode : 0;
	int need = DR_MR_MODE;

	if (!(caps & (FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		need = 0; /* no RMA target: no keys to hand out */
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)) || (user & FI_MR_BASIC) ||
	    (user & FI_MR_SCALABLE)) {
		if ((user & FI_MR_SCALABLE) || (user & ~FI_MR_BASIC & ~FI_MR_UNSPEC))
			NODATA("droce: FI_MR_SCALABLE is not supported\n");
		return 0;
	}
	if ((user & need) != need)
		NODATA("droce: mr_mode 0x%x lacks FI_MR_VIRT_ADDR|FI_MR_PROV_KEY|FI_MR_ALLOCATED\n",
		       user);
	return 0;
}

static int check_order(uint64_t want, uint64_t have, const char *what)
{
	if (want & ~have)
		NODATA("droce: %s 0x%llx not supported\n", what, (unsigned long long)want);
	return 0;
}

static int check_hints(uint32_t version, const struct fi_info *h, uint64_t caps)
{
	int ret;

	if (caps & ~(DR_CAPS | DR_DOMAIN_CAPS))
		NODATA("droce: caps 0x%llx not supported\n",
		       (unsigned long long)(caps & ~(DR_CAPS | DR_DOMAIN_CAPS)));
	if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR_IN &&
	    h->addr_format != FI_SOCKADDR)
		NODATA("droce: address format %u not supported\n", h->addr_format);
	if (h->ep_attr) {
		const struct fi_ep_attr *e = h->ep_attr;

		if (e->type != FI_EP_UNSPEC && e->type != FI_EP_MSG)
			NODATA("droce: only FI_EP_MSG\n");
		if (e->protocol != FI_PROTO_UNSPEC && e->protocol != dr_ep_attr.protocol)
			NODATA("droce: protocol %u not supported\n", e->protocol);
		if (e->max_msg_size > dr_ep_attr.max_msg_size)
			NODATA("droce: max_msg_size too large\n");
		if (e->tx_ctx_cnt > 1 || e->rx_ctx_cnt > 1)
			NODATA("droce: no scalable or shared contexts\n");
		if (e->mem_tag_format || e->auth_key_size || e->msg_prefix_size)
			NODATA("droce: no tags, auth keys or message prefixes\n");
	}
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;

		if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO)
			NODATA("droce: progress is manual\n");
		if (d->cq_data_size > dr_domain_attr.cq_data_size)
			NODATA("droce: cq_data_size is 4\n");
		if (d->mr_key_size > dr_domain_attr.mr_key_size)
			NODATA("droce: mr_key_size is 4\n");
		if (d->max_ep_stx_ctx || d->max_ep_srx_ctx || d->max_ep_tx_ctx > 1 ||
		    d->max_ep_rx_ctx > 1)
			NODATA("droce: no shared or multiple contexts\n");
		if (d->auth_key_size)
			NODATA("droce: no auth keys\n");
		if (d->mr_iov_limit > dr_domain_attr.mr_iov_limit)
			NODATA("droce: mr_iov_limit is 1\n");
	}
	ret = check_mr_mode(version, h, caps);
	if (ret)
		return ret;
	if (h->tx_attr) {
		const struct fi_tx_attr *t = h->tx_attr;

		if (t->size > dr_tx_attr.size || t->iov_limit > dr_tx_attr.iov_limit ||
		    t->inject_size > dr_tx_attr.inject_size ||
		    t->rma_iov_limit > dr_tx_attr.rma_iov_limit)
			NODATA("droce: tx_attr limits exceeded\n");
		if ((ret = check_order(t->msg_order, DR_MSG_ORDER, "tx msg_order")) ||
		    (ret = check_order(t->comp_order, FI_ORDER_STRICT, "tx comp_order")))
			return ret;
		/* no FI_COMMIT_COMPLETE: no persistent memory (FI_RMA_PMEM) */
		if (t->op_flags & ~DR_TX_OP_FLAGS)
			NODATA("droce: tx op_flags 0x%llx not supported\n",
			       (unsigned long long)(t->op_flags & ~DR_TX_OP_FLAGS));
	}
	if (h->rx_attr) {
		const struct fi_rx_attr *r = h->rx_attr;

		if (r->size > dr_rx_attr.size || r->iov_limit > dr_rx_attr.iov_limit ||
		    r->total_buffered_recv)
			NODATA("droce: rx_attr limits exceeded\n");
		if ((ret = check_order(r->msg_order, DR_MSG_ORDER, "rx msg_order")) ||
		    (ret = check_order(r->comp_order, FI_ORDER_STRICT, "rx comp_order")))
			return ret;
		if (r->op_flags & ~FI_COMPLETION)
			NODATA("droce: rx op_flags not supported\n");
	}
	if (h->fabric_attr) {
		if (h->fabric_attr->name && strcmp(h->fabric_attr->name, DR_FABRIC_NAME))
			NODATA("droce: fabric %s is not ours\n", h->fabric_attr->name);
		if (h->fabric_attr->prov_name && strcmp(h->fabric_attr->prov_name, DR_PROV_NAME))
			return -FI_ENODATA;
	}
	return 0;
}

/* ---- building the answer ------------------------------------------------- */

static struct sockaddr_in *sin_new(uint32_t ip4, uint16_t port)
{
	struct sockaddr_in *sin = calloc(1, sizeof(*sin));

	if (sin) {
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(ip4);
		sin->sin_port = htons(port);
	}
	return sin;
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
	fi->addr_format = FI_SOCKADDR_IN;
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
	char srcbuf[INET_ADDRSTRLEN];
	struct dr_devcfg cfgs[DR_MAX_DEVS];
	struct fi_info *fi, *head = NULL;
	uint32_t dst = 0;
	int n;
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
	}
	n = dr_devcfg_list(s, src_node, dst_node, cfgs, DR_MAX_DEVS);
	if (n < 0)
		return n;
	if (dst_node && dr_resolve_ip4(dst_node, &dst))
		return -FI_ENODATA;
	for (int i = n - 1; i >= 0; i--) {
		const struct dr_devcfg *cfg = &cfgs[i];

		if (hints && hints->domain_attr && hints->domain_attr->name &&
		    strcmp(hints->domain_attr->name, cfg->name))
			continue;
		fi = info_new(version, hints, caps, cfg);
		if (!fi)
			goto out_nomem;
		fi->next = head;
		head = fi;
		fi->src_addr = sin_new(cfg->ip4, (flags & FI_SOURCE) || !dst_node ? port : 0);
		fi->src_addrlen = sizeof(struct sockaddr_in);
		if (!fi->src_addr)
			goto out_nomem;
		if (dst_node) {
			fi->dest_addr = sin_new(dst, port);
			if (!fi->dest_addr)
				goto out_nomem;
			fi->dest_addrlen = sizeof(struct sockaddr_in);
		} else if (hints && hints->dest_addr &&
			   hints->dest_addrlen >= sizeof(struct sockaddr_in) &&
			   ((struct sockaddr *)hints->dest_addr)->sa_family == AF_INET) {
			fi->dest_addr = malloc(sizeof(struct sockaddr_in));
			if (!fi->dest_addr)
				goto out_nomem;
			memcpy(fi->dest_addr, hints->dest_addr, sizeof(struct sockaddr_in));
			fi->dest_addrlen = sizeof(struct sockaddr_in);
		}
	}
	if (!head)
		NODATA("droce: no device matches the domain name in the hints\n");
	*info = head;
	return 0;

out_nomem:
	fi_freeinfo(head);
	return -FI_ENOMEM;
}
