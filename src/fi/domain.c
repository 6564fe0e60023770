// SPDX-License-Identifier: BSD-2-Clause
/*
 * The domain: one device (a DPDK port), the factory of endpoints, CQs,
 * counters and memory regions.  Domains opened on the same fabric for the
 * same port share the device, as do passive endpoints listening on it.
 */
#include <stdlib.h>

#include "dr_fi.h"

struct dr_progress dr_domain_progress_hook(struct fid_domain *domain)
{
	return (struct dr_progress){ .fn = dr_dev_progress_fn,
				     .arg = dr_domain_of(domain)->dev,
				     .background = dr_dev_background };
}

static int domain_close(struct fid *fid)
{
	struct dr_domain *dom = dr_domain_of_fid(fid);
	struct dr_fabric *fab = dom->fab;

	if (dr_ref_held(&dom->ref)) {
		DR_WARN(FI_LOG_DOMAIN, "fi_close(domain): endpoints, CQs, counters or MRs are open\n");
		return -FI_EBUSY;
	}
	dr_dev_put(dom->dev);
	fi_freeinfo(dom->info);
	free(dom);
	dr_ref_put(&fab->ref);
	return 0;
}

static int domain_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			       enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	return dr_atomic_query(datatype, op, attr, flags); /* atomic.c */
}

static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return dr_ep_open(domain, info, ep, context);
}

static const struct fi_ops domain_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = domain_close,
    .bind = dr_no_bind,
    .control = dr_no_control,
    .ops_open = dr_ext_ops_open,
    .tostr = dr_no_tostr,
    .ops_set = dr_no_ops_set,
};

static const struct fi_ops_domain domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = dr_no_av_open,
    .cq_open = dr_cq_open,
    .endpoint = dr_ep_open,
    .scalable_ep = dr_no_scalable_ep,
    .cntr_open = dr_cntr_open,
    .poll_open = dr_no_poll_open,
    .stx_ctx = dr_no_stx_ctx,
    .srx_ctx = dr_no_srx_ctx,
    .query_atomic = domain_query_atomic,
    .query_collective = dr_no_query_collective,
    .endpoint2 = domain_endpoint2,
};

int dr_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain,
		   void *context)
{
	struct dr_fabric *fab = dr_fabric_of(fabric);
	struct dr_domain *dom;
	int ret;

	if (!info || !info->domain_attr) {
		DR_WARN(FI_LOG_DOMAIN, "fi_domain needs the fi_info from fi_getinfo\n");
		return -FI_EINVAL;
	}
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	dom->info = fi_dupinfo(info);
	if (!dom->info) {
		ret = -FI_ENOMEM;
		goto out_free;
	}
	ret = dr_dev_get(fab, info, &dom->dev);
	if (ret)
		goto out_free;
	dom->fab = fab;
	dom->dom.fid.fclass = FI_CLASS_DOMAIN;
	dom->dom.fid.context = context;
	dom->dom.fid.ops = DR_OPS(&domain_fi_ops);
	dom->dom.ops = DR_OPS(&domain_ops);
	dom->dom.mr = DR_OPS(&dr_mr_ops);
	dr_ref_get(&fab->ref);
	*domain = &dom->dom;
	return 0;

out_free:
	fi_freeinfo(dom->info);
	free(dom);
	return ret;
}
