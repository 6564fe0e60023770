// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory registration: FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED.
 * A region is named by its virtual address and a key droce chooses (32
 * bits from getrandom(2), mr.c of the engine; requested_key is ignored);
 * local buffers need no registration (no FI_MR_LOCAL), so descriptors
 * are accepted and ignored.
 *
 * Remote rights, which the target's engine checks on every request:
 *   FI_REMOTE_READ                    RDMA READ
 *   FI_REMOTE_WRITE                   RDMA WRITE (with immediate)
 *   FI_REMOTE_READ | FI_REMOTE_WRITE  atomics as well
 * Atomics need both because every RoCE atomic is a read-modify-write that
 * sends the original value back (IBA 9.4.5): a write-only region would
 * leak its contents, a read-only one would be modified.  (libfabric's
 * verbs provider grants atomics with FI_REMOTE_WRITE alone; droce is
 * stricter.)  FI_SEND, FI_RECV, FI_READ and FI_WRITE are local uses, which
 * need no registration here.
 */
#include <stdlib.h>
#include <string.h>

#include "dr_fi.h"

static int mr_close(struct fid *fid)
{
	struct dr_mr_fid *m = dr_mr_of_fid(fid);
	struct dr_dev *dev = m->dom->dev;
	int ret;

	dr_dev_lock(dev);
	ret = dr_mr_dereg(&dev->mrt, m->mr_eng->key);
	dr_dev_unlock(dev);
	if (ret)
		return -FI_EINVAL;
	dr_ref_put(&m->dom->ref);
	free(m);
	return 0;
}

static const struct fi_ops mr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = mr_close,
    .bind = dr_no_bind,
    .control = dr_no_control,
    .ops_open = dr_no_ops_open,
    .tostr = dr_no_tostr,
    .ops_set = dr_no_ops_set,
};

#define DR_MR_ACCESS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static int dr_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
			 struct fid_mr **mr)
{
	struct dr_domain *dom;
	struct dr_mr_fid *m;
	unsigned access = DR_ACCESS_LOCAL_WRITE;
	int ret;

	if (fid->fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	dom = dr_domain_of_fid(fid);
	if (!attr || !mr || flags) {
		DR_WARN(FI_LOG_MR, "fi_mr_reg: bad arguments (flags 0x%llx)\n",
			(unsigned long long)flags);
		return -FI_EINVAL;
	}
	if (attr->iov_count != 1 || !attr->mr_iov) {
		DR_WARN(FI_LOG_MR, "fi_mr_reg: one iov per region (mr_iov_limit 1), got %zu\n",
			attr->iov_count);
		return -FI_EINVAL;
	}
	if (attr->access & ~DR_MR_ACCESS) {
		DR_WARN(FI_LOG_MR, "fi_mr_reg: access 0x%llx not supported\n",
			(unsigned long long)attr->access);
		return -FI_EINVAL;
	}
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_EOPNOTSUPP;
	if (attr->access & FI_REMOTE_READ)
		access |= DR_ACCESS_REMOTE_READ;
	if (attr->access & FI_REMOTE_WRITE)
		access |= DR_ACCESS_REMOTE_WRITE;
	if ((attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) ==
	    (FI_REMOTE_READ | FI_REMOTE_WRITE))
		access |= DR_ACCESS_REMOTE_ATOMIC;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	dr_dev_lock(dom->dev);
	ret = dr_mr_reg(&dom->dev->mrt, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len,
			(uintptr_t)attr->mr_iov[0].iov_base, access, &m->mr_eng);
	dr_dev_unlock(dom->dev);
	if (ret && ret != -ENOMEM && ret != -ENOSPC && ret != -EINVAL) {
		/* the key comes from getrandom(2) and nothing weaker */
		free(m);
		DR_WARN(FI_LOG_MR, "fi_mr_reg: no random key: getrandom: %s\n", strerror(-ret));
		return -FI_EIO;
	}
	if (ret) {
		free(m);
		DR_WARN(FI_LOG_MR, "fi_mr_reg: %s\n", ret == -ENOMEM ? "table full" : "refused");
		return ret == -ENOMEM ? -FI_ENOMEM : -FI_EINVAL;
	}
	m->dom = dom;
	m->mr.fid.fclass = FI_CLASS_MR;
	m->mr.fid.context = attr->context;
	m->mr.fid.ops = DR_OPS(&mr_fi_ops);
	m->mr.mem_desc = m;
	m->mr.key = m->mr_eng->key;
	dr_ref_get(&dom->ref);
	*mr = &m->mr;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		   uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		   void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key, /* FI_MR_PROV_KEY: ignored */
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return dr_mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags, struct fid_mr **mr,
		  void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

const struct fi_ops_mr dr_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = mr_reg,
    .regv = mr_regv,
    .regattr = dr_mr_regattr,
};
