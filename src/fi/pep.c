// SPDX-License-Identifier: BSD-2-Clause
/*
 * Passive endpoints: an rdma_cm listener on the device's CM (service ID
 * 0x0000000001060000 + port).  A REQ for it becomes an FI_CONNREQ event
 * whose fi_info carries the request (handle) and the peer's CM data.
 *
 * The listener holds at most its backlog of requests unanswered
 * (FI_BACKLOG, default FI_DROCE_CM_BACKLOG; the CM drops more, see
 * dr_cm_listen); a request that times out or that its peer withdraws
 * before the application read its FI_CONNREQ is taken back off the EQ, so
 * neither the CM nor the EQ grows with a flood of REQs.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "dr_fi.h"

static int pep_close(struct fid *fid)
{
	struct dr_pep *pep = dr_pep_of_fid(fid);
	struct dr_dev *dev = pep->dev;

	dr_dev_lock(dev);
	if (pep->lsn)
		dr_dev_unlisten(dev, pep->lsn, dr_sa_port(&pep->addr));
	/* requests the application never saw are refused; those it holds the
	 * handle of stay its own, to accept or reject */
	while (pep->crs) {
		struct dr_connreq *cr = pep->crs;

		pep->crs = cr->next;
		if (dr_eq_withdraw(cr->eq, cr)) {
			if (cr->id) {
				dr_cm_set_ctx(cr->id, NULL);
				dr_cm_reject(cr->id, NULL, 0);
				dr_cm_release(cr->id);
			}
			free(cr);
			continue;
		}
		cr->pep = NULL;
		cr->eq = NULL;
		cr->next = cr->prev = NULL;
	}
	for (struct dr_pep **pp = &dev->peps; *pp; pp = &(*pp)->next)
		if (*pp == pep) {
			*pp = pep->next;
			break;
		}
	dr_dev_unlock(dev);
	if (pep->eq)
		dr_ref_put(&pep->eq->ref);
	dr_dev_put(dev);
	fi_freeinfo(pep->info);
	dr_ref_put(&pep->fab->ref);
	free(pep);
	return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct dr_pep *pep = dr_pep_of_fid(fid);

	if (bfid->fclass != FI_CLASS_EQ) {
		DR_WARN(FI_LOG_EP_CTRL, "a passive endpoint binds only an EQ\n");
		return -FI_EINVAL;
	}
	if (pep->eq)
		return -FI_EINVAL;
	pep->eq = dr_eq_of_fid(bfid);
	dr_ref_get(&pep->eq->ref);
	return 0;
}

static int pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct dr_pep *pep = dr_pep_of_fid(fid);
	union dr_sockaddr sa;

	if (!dr_sa_take(addr, addrlen, &pep->dev->cfg, &sa))
		return -FI_EINVAL;
	if (pep->listening)
		return -FI_EOPBADSTATE;
	if (!dr_sa_is_local(&sa, &pep->dev->cfg)) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_setname: address is not the device's\n");
		return -FI_EADDRNOTAVAIL;
	}
	dr_sa_set_port(&pep->addr, dr_sa_port(&sa));
	return 0;
}

static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return dr_copy_addr(&dr_pep_of_fid(fid)->addr, addr, addrlen);
}

static int pep_listen(struct fid_pep *fpep)
{
	struct dr_pep *pep = dr_pep_of(fpep);
	struct dr_dev *dev = pep->dev;
	uint16_t port = dr_sa_port(&pep->addr), p = port;
	int ret;

	if (!pep->eq) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_listen: bind an EQ first\n");
		return -FI_ENOEQ;
	}
	if (pep->listening)
		return 0;
	dr_dev_lock(dev);
	/* port 0: an ephemeral one, as rdma_cm picks one */
	ret = dr_dev_listen(dev, &p, (unsigned)pep->backlog, pep, &pep->lsn);
	if (!ret) {
		dr_sa_set_port(&pep->addr, p);
		pep->listening = true;
		pep->next = dev->peps;
		dev->peps = pep;
	}
	dr_dev_unlock(dev);
	if (ret == -FI_EADDRINUSE)
		DR_WARN(FI_LOG_EP_CTRL, "fi_listen: port %u is in use\n", port);
	return ret;
}

static int pep_reject(struct fid_pep *fpep, fid_t handle, const void *param, size_t paramlen)
{
	struct dr_pep *pep = dr_pep_of(fpep);
	struct dr_connreq *cr;
	uint8_t priv[1 + DR_CM_DATA_SIZE];
	int ret;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ)
		return -FI_EINVAL;
	if (paramlen > DR_CM_DATA_SIZE || (paramlen && !param)) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_reject: at most %d bytes of CM data\n",
			DR_CM_DATA_SIZE);
		return -FI_EINVAL;
	}
	cr = dr_connreq_of_fid(handle);
	priv[0] = (uint8_t)paramlen;
	if (paramlen)
		memcpy(priv + 1, param, paramlen);
	dr_dev_lock(pep->dev);
	if (!cr->id) {
		/* gone already (timed out, or the peer gave up): refused all
		 * the same, nothing left to say */
		dr_connreq_free(cr);
		dr_dev_unlock(pep->dev);
		return 0;
	}
	ret = dr_cm_reject(cr->id, priv, 1 + paramlen);
	if (!ret) {
		dr_cm_set_ctx(cr->id, NULL);
		dr_cm_release(cr->id);
		dr_connreq_free(cr);
	}
	dr_dev_unlock(pep->dev);
	return ret ? -FI_EINVAL : 0; /* already accepted or rejected */
}

/* fi_control FI_BACKLOG (fi_endpoint(3)): the listener's backlog, before
 * or while it listens; requests held beyond a smaller one stay. */
static int pep_control(struct fid *fid, int command, void *arg)
{
	struct dr_pep *pep = dr_pep_of_fid(fid);
	int backlog;

	if (command != FI_BACKLOG)
		return -FI_ENOSYS;
	if (!arg)
		return -FI_EINVAL;
	backlog = *(int *)arg;
	if (backlog <= 0) {
		DR_WARN(FI_LOG_EP_CTRL, "FI_BACKLOG %d: at least 1\n", backlog);
		return -FI_EINVAL;
	}
	dr_dev_lock(pep->dev);
	pep->backlog = backlog;
	if (pep->lsn)
		dr_cm_set_backlog(pep->lsn, (unsigned)backlog);
	dr_dev_unlock(pep->dev);
	return 0;
}

void dr_connreq_free(struct dr_connreq *cr)
{
	if (cr->pep) {
		/* its event, if still unread (an FI_PEEKed handle), goes too */
		dr_eq_withdraw(cr->eq, cr);
		if (cr->prev)
			cr->prev->next = cr->next;
		else
			cr->pep->crs = cr->next;
		if (cr->next)
			cr->next->prev = cr->prev;
	}
	free(cr);
}

void dr_pep_cm_gone(const struct dr_cm_event *ev)
{
	struct dr_connreq *cr = ev->id->ctx;

	if (!cr)
		return;
	cr->id = NULL; /* the CM frees it when this returns */
	cr->err = ev->err == -ETIMEDOUT ? -FI_ETIMEDOUT : -FI_ECONNABORTED;
	DR_DBG(FI_LOG_EP_CTRL, "connection request from %02x%02x..%02x%02x %s\n",
	       ev->peer->gid[0], ev->peer->gid[1], ev->peer->gid[14], ev->peer->gid[15],
	       ev->err == -ETIMEDOUT ? "timed out unanswered" : "withdrawn by the peer");
	/* unread: the application never learns of it; read: fi_accept fails */
	if (cr->pep && dr_eq_withdraw(cr->eq, cr))
		dr_connreq_free(cr);
}

static int pep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t)) {
		*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = DR_CM_DATA_SIZE;
	*optlen = sizeof(size_t);
	return 0;
}

static int pep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

/* A REQ for this listener (dev->lock held, from the CM). */
void dr_pep_cm_connreq(struct dr_pep *pep, const struct dr_cm_event *ev)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[DR_CM_DATA_SIZE];
	} ent;
	union dr_sockaddr *src = NULL, *dst = NULL;
	struct dr_connreq *cr = NULL;
	struct fi_info *info = NULL;
	size_t len = 0;

	if (!pep->eq)
		goto out_reject;
	info = fi_dupinfo(pep->info);
	cr = calloc(1, sizeof(*cr));
	src = calloc(1, sizeof(*src));
	dst = calloc(1, sizeof(*dst));
	if (!info || !cr || !src || !dst)
		goto out_reject;
	free(info->src_addr);
	free(info->dest_addr);
	dr_sa_local(src, &pep->dev->cfg, dr_sa_port(&pep->addr));
	dr_sa_from_gid(dst, &pep->dev->cfg, ev->peer->gid, ev->peer->port);
	info->src_addr = src;
	info->src_addrlen = dr_sa_len(src);
	info->dest_addr = dst;
	info->dest_addrlen = dr_sa_len(dst);
	src = dst = NULL;
	cr->fid.fclass = FI_CLASS_CONNREQ;
	cr->dev = pep->dev;
	cr->id = ev->id;
	cr->pep = pep;
	cr->eq = pep->eq;
	info->handle = &cr->fid;

	memset(&ent, 0, sizeof(ent));
	ent.e.fid = &pep->pep.fid;
	ent.e.info = info;
	/* the CM data behind its one-byte length (DR_CM_DATA_SIZE) */
	if (ev->private_len) {
		len = ev->private_data[0];
		if (len > DR_CM_DATA_SIZE || len > ev->private_len - 1)
			len = 0; /* not a libfabric peer (rping): no CM data */
		memcpy(ent.data, ev->private_data + 1, len);
	}
	cr->next = pep->crs;
	if (pep->crs)
		pep->crs->prev = cr;
	pep->crs = cr;
	if (dr_eq_push_connreq(pep->eq, &ent, sizeof(ent.e) + len, cr)) {
		dr_connreq_free(cr);
		cr = NULL;
		goto out_reject;
	}
	/* CONNREQ_GONE finds the request through the id */
	dr_cm_set_ctx(ev->id, cr);
	return;

out_reject:
	DR_WARN(FI_LOG_EP_CTRL, "connection request dropped: %s\n",
		pep->eq ? "out of memory" : "no EQ bound");
	fi_freeinfo(info);
	free(cr);
	free(src);
	free(dst);
	dr_cm_reject(ev->id, NULL, 0);
	dr_cm_release(ev->id);
}

static const struct fi_ops pep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = pep_close,
    .bind = pep_bind,
    .control = pep_control,
    .ops_open = dr_no_ops_open,
    .tostr = dr_no_tostr,
    .ops_set = dr_no_ops_set,
};

static const struct fi_ops_cm pep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = pep_setname,
    .getname = pep_getname,
    .getpeer = dr_no_getpeer,
    .connect = dr_no_connect,
    .listen = pep_listen,
    .accept = dr_no_accept,
    .reject = pep_reject,
    .shutdown = dr_no_shutdown,
    .join = dr_no_join,
};

static const struct fi_ops_ep pep_ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = dr_no_cancel,
    .getopt = pep_getopt,
    .setopt = pep_setopt,
    .tx_ctx = dr_no_tx_ctx,
    .rx_ctx = dr_no_rx_ctx,
    .rx_size_left = dr_no_size_left,
    .tx_size_left = dr_no_size_left,
};

int dr_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **out,
		void *context)
{
	struct dr_fabric *fab = dr_fabric_of(fabric);
	struct dr_pep *pep;
	int ret;

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_MSG)) {
		DR_WARN(FI_LOG_EP_CTRL, "fi_passive_ep needs an FI_EP_MSG fi_info\n");
		return -FI_EINVAL;
	}
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->info = fi_dupinfo(info);
	if (!pep->info) {
		ret = -FI_ENOMEM;
		goto out_free;
	}
	ret = dr_dev_get(fab, info, &pep->dev);
	if (ret)
		goto out_free;
	pep->fab = fab;
	pep->backlog = dr_settings_get()->cm_backlog;
	dr_sa_local(&pep->addr, &pep->dev->cfg, 0);
	if (info->src_addr) {
		union dr_sockaddr sa;

		if (dr_sa_take(info->src_addr, info->src_addrlen, &pep->dev->cfg, &sa))
			dr_sa_set_port(&pep->addr, dr_sa_port(&sa));
	}
	pep->pep.fid.fclass = FI_CLASS_PEP;
	pep->pep.fid.context = context;
	pep->pep.fid.ops = DR_OPS(&pep_fi_ops);
	pep->pep.ops = DR_OPS(&pep_ep_ops);
	pep->pep.cm = DR_OPS(&pep_cm_ops);
	dr_ref_get(&fab->ref);
	*out = &pep->pep;
	return 0;

out_free:
	fi_freeinfo(pep->info);
	free(pep);
	return ret;
}
