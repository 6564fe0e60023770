// SPDX-License-Identifier: BSD-2-Clause
/*
 * The completion queue (fi_cq(3)).
 *
 * One ring of engine completions (struct dr_cq_ent), successes and errors
 * in completion order; the format the application chose is applied when it
 * reads.  The ring starts at the size hint (a power of two) and doubles
 * when full: a completion is never dropped, so there is no FI_EOVERRUN.
 * fi_cq_read copies successes up to the first error and returns -FI_EAVAIL
 * while an error is at the head; fi_cq_readerr takes that error.
 *
 * The wait fd (FI_WAIT_UNSPEC, FI_WAIT_FD) is readable while completions
 * are queued, and while an fi_cq_signal is pending (not yet consumed by an
 * fi_cq_sread, which then returns -FI_EAGAIN).
 *
 * err_data of an error completion is a NUL-terminated string naming the IB
 * status, e.g. "remote access error (IB status 10)", the number being the
 * libibverbs enum ibv_wc_status value of the same failure; none (NULL, 0)
 * when the status is not a failure droce knows.
 *
 * Concurrency: cq->lock guards the ring, signaled, err_buf and the wait
 * fd's state.  dr_cq_push is called with the device lock held (lock
 * order: device, then CQ) and never drives progress; readers drive
 * progress first, without cq->lock, then take it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_fi.h"
#include "dr_qp.h"

#define DR_CQ_DEFAULT_SIZE 1024	      /* attr->size == 0 */
#define DR_CQ_MAX_INITIAL  (1u << 16) /* a larger hint is grown into */

/* ---- IB status names -------------------------------------------------------- */

/* enum dr_wc_status as libibverbs numbers the same failure (enum
 * ibv_wc_status, ABI-stable), which is what rdma_rxe reports. */
static const unsigned char dr_wc_ibv_status[DR_WC_STATUS_NUM] = {
    [DR_WC_SUCCESS] = 0,	    /* IBV_WC_SUCCESS */
    [DR_WC_LOC_LEN_ERR] = 1,	    /* IBV_WC_LOC_LEN_ERR */
    [DR_WC_LOC_PROT_ERR] = 4,	    /* IBV_WC_LOC_PROT_ERR */
    [DR_WC_WR_FLUSH_ERR] = 5,	    /* IBV_WC_WR_FLUSH_ERR */
    [DR_WC_REM_INV_REQ_ERR] = 9,    /* IBV_WC_REM_INV_REQ_ERR */
    [DR_WC_REM_ACCESS_ERR] = 10,    /* IBV_WC_REM_ACCESS_ERR */
    [DR_WC_REM_OP_ERR] = 11,	    /* IBV_WC_REM_OP_ERR */
    [DR_WC_RETRY_EXC_ERR] = 12,	    /* IBV_WC_RETRY_EXC_ERR */
    [DR_WC_RNR_RETRY_EXC_ERR] = 13, /* IBV_WC_RNR_RETRY_EXC_ERR */
};

const char *dr_prov_strerror(int prov_errno)
{
	if (prov_errno >= 0 && prov_errno < DR_WC_STATUS_NUM && dr_wc_status_names[prov_errno])
		return dr_wc_status_names[prov_errno];
	return "unknown provider error";
}

const char *dr_strerror(int prov_errno, char *buf, size_t len)
{
	const char *s = dr_prov_strerror(prov_errno);

	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

/* err_data of an error completion into buf: its length with the NUL, or 0
 * when there is none. */
static size_t cq_err_string(int prov_errno, char *buf, size_t len)
{
	int n;

	if (prov_errno <= DR_WC_SUCCESS || prov_errno >= DR_WC_STATUS_NUM ||
	    !dr_wc_status_names[prov_errno])
		return 0;
	n = snprintf(buf, len, "%s (IB status %u)", dr_wc_status_names[prov_errno],
		     dr_wc_ibv_status[prov_errno]);
	if (n < 0)
		return 0;
	return (size_t)n < len ? (size_t)n + 1 : len;
}

/* ---- formats ---------------------------------------------------------------- */

static void fill_context(void *dst, const struct dr_cq_ent *e)
{
	struct fi_cq_entry *c = dst;

	c->op_context = e->op_context;
}

static void fill_msg(void *dst, const struct dr_cq_ent *e)
{
	struct fi_cq_msg_entry *c = dst;

	c->op_context = e->op_context;
	c->flags = e->flags;
	c->len = e->len;
}

static void fill_data(void *dst, const struct dr_cq_ent *e)
{
	struct fi_cq_data_entry *c = dst;

	c->op_context = e->op_context;
	c->flags = e->flags;
	c->len = e->len;
	c->buf = e->buf;
	c->data = e->data;
}

/* The formats droce offers: FI_CQ_FORMAT_UNSPEC is CONTEXT; no TAGGED
 * (droce has no FI_TAGGED). */
static const struct dr_cq_fmt {
	size_t size;
	void (*fill)(void *dst, const struct dr_cq_ent *e);
} dr_cq_fmts[] = {
    [FI_CQ_FORMAT_CONTEXT] = {sizeof(struct fi_cq_entry), fill_context},
    [FI_CQ_FORMAT_MSG] = {sizeof(struct fi_cq_msg_entry), fill_msg},
    [FI_CQ_FORMAT_DATA] = {sizeof(struct fi_cq_data_entry), fill_data},
};

/* ---- the ring (cq->lock held) ------------------------------------------------ */

static struct dr_cq_ent *cq_at(struct dr_cq *cq, size_t i)
{
	return &cq->ring[(cq->head + i) & (cq->size - 1)];
}

static int cq_grow(struct dr_cq *cq)
{
	struct dr_cq_ent *ring;
	size_t i;

	ring = malloc(2 * cq->size * sizeof(*ring));
	if (!ring)
		return -FI_ENOMEM;
	for (i = 0; i < cq->count; i++)
		ring[i] = *cq_at(cq, i);
	free(cq->ring);
	cq->ring = ring;
	cq->size *= 2;
	cq->head = 0;
	DR_DBG(FI_LOG_CQ, "CQ ring grown to %zu entries\n", cq->size);
	return 0;
}

static void cq_pop(struct dr_cq *cq)
{
	cq->head = (cq->head + 1) & (cq->size - 1);
	if (--cq->count == 0 && !cq->signaled)
		dr_wait_clear(&cq->wait);
}

int dr_cq_push(struct dr_cq *cq, const struct dr_cq_ent *e)
{
	dr_spin_lock(&cq->lock);
	if (cq->count == cq->size && cq_grow(cq)) {
		dr_spin_unlock(&cq->lock);
		DR_WARN(FI_LOG_CQ, "out of memory: completion of context %p lost\n", e->op_context);
		return -FI_ENOMEM;
	}
	*cq_at(cq, cq->count) = *e;
	/* released: a lockless reader that sees the count sees the entry.  A
	 * store, not an atomic add: every writer of count holds cq->lock, and
	 * a locked add here waited for the store buffer to drain (the frame
	 * just built, this entry), most of the cost of a completion */
	__atomic_store_n(&cq->count, cq->count + 1, __ATOMIC_RELEASE);
	if (cq->count == 1)
		dr_wait_signal(&cq->wait);
	dr_spin_unlock(&cq->lock);
	return 0;
}

/* ---- consumers ---------------------------------------------------------------- */

/* One fi_cq_readfrom against the ring, cq->lock held. */
static ssize_t cq_read_locked(struct dr_cq *cq, void *buf, size_t count, fi_addr_t *src_addr)
{
	const struct dr_cq_fmt *fmt = &dr_cq_fmts[cq->format];
	size_t n;

	if (!cq->count)
		return -FI_EAGAIN;
	if (cq_at(cq, 0)->err)
		return -FI_EAVAIL;
	for (n = 0; n < count && cq->count && !cq_at(cq, 0)->err; n++) {
		fmt->fill((char *)buf + n * fmt->size, cq_at(cq, 0));
		/* MSG endpoints have no AV: a source is never an fi_addr_t */
		if (src_addr)
			src_addr[n] = FI_ADDR_NOTAVAIL;
		cq_pop(cq);
	}
	return (ssize_t)n;
}

static ssize_t cq_readfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src_addr)
{
	struct dr_cq *cq = dr_cq_of(fid);
	ssize_t ret;

	if (count && !buf)
		return -FI_EINVAL;
	/* count 0 just drives progress (fi_cq(3)), then says what is there */
	dr_progress_run(&cq->progress);
	/* the common empty poll takes no lock: a push racing with this load
	 * is seen by the next read */
	if (!__atomic_load_n(&cq->count, __ATOMIC_ACQUIRE))
		return -FI_EAGAIN;
	dr_spin_lock(&cq->lock);
	ret = cq_read_locked(cq, buf, count, src_addr);
	dr_spin_unlock(&cq->lock);
	return ret;
}

static ssize_t cq_read(struct fid_cq *fid, void *buf, size_t count)
{
	return cq_readfrom(fid, buf, count, NULL);
}

static ssize_t cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src_addr,
			    const void *cond, int timeout)
{
	struct dr_cq *cq = dr_cq_of(fid);
	uint64_t start, deadline;
	bool woken;
	ssize_t ret;

	if (cq->wait.fd < 0) {
		DR_WARN(FI_LOG_CQ, "fi_cq_sread on a CQ opened with FI_WAIT_NONE\n");
		return -FI_ENOSYS;
	}
	if (cond) {
		DR_WARN(FI_LOG_CQ, "fi_cq_sread: cond must be NULL (FI_CQ_COND_NONE)\n");
		return -FI_EINVAL;
	}
	if (count && !buf)
		return -FI_EINVAL;
	start = dr_now_ns();
	deadline = dr_deadline_ns(start, timeout);
	for (;;) {
		dr_progress_run(&cq->progress);
		dr_spin_lock(&cq->lock);
		ret = cq_read_locked(cq, buf, count, src_addr);
		woken = ret == -FI_EAGAIN && cq->signaled;
		if (woken) {
			/* fi_cq_signal: this sread is the one it wakes */
			cq->signaled = false;
			dr_wait_clear(&cq->wait);
		}
		dr_spin_unlock(&cq->lock);
		if (ret != -FI_EAGAIN || woken)
			return ret;
		if (!dr_wait_pause(&cq->wait, start, deadline))
			return -FI_EAGAIN;
	}
}

static ssize_t cq_sread(struct fid_cq *fid, void *buf, size_t count, const void *cond, int timeout)
{
	return cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

static ssize_t cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct dr_cq *cq = dr_cq_of(fid);
	const struct dr_cq_ent *e;
	char str[DR_MAX_ERR_DATA];
	void *user_data;
	size_t user_size, n;
	ssize_t ret;

	if (flags & ~FI_PEEK) {
		DR_WARN(FI_LOG_CQ, "fi_cq_readerr: unsupported flags 0x%llx (only FI_PEEK)\n",
			(unsigned long long)flags);
		return -FI_EINVAL;
	}
	if (!buf)
		return -FI_EINVAL;
	user_data = buf->err_data;
	user_size = buf->err_data_size;

	dr_spin_lock(&cq->lock);
	if (!cq->count || !cq_at(cq, 0)->err) {
		ret = -FI_EAGAIN;
		goto out_unlock;
	}
	e = cq_at(cq, 0);
	memset(buf, 0, sizeof(*buf));
	buf->op_context = e->op_context;
	buf->flags = e->flags;
	buf->len = e->len;
	buf->buf = e->buf;
	buf->data = e->data;
	buf->olen = e->olen;
	buf->err = e->err;
	buf->prov_errno = e->prov_errno;
	n = cq_err_string(e->prov_errno, str, sizeof(str));
	if (FI_VERSION_GE(cq->api_version, FI_VERSION(1, 5)) && user_size && user_data) {
		/* fi_cq(3): copy into the caller's buffer, say how much */
		if (n > user_size)
			n = user_size;
		memcpy(user_data, str, n);
		buf->err_data = user_data;
		buf->err_data_size = n;
	} else {
		/* ours, valid until the next fi_cq_readerr at least */
		memcpy(cq->err_buf, str, n);
		buf->err_data = n ? cq->err_buf : NULL;
		buf->err_data_size = n;
	}
	if (!(flags & FI_PEEK))
		cq_pop(cq);
	ret = 1;
out_unlock:
	dr_spin_unlock(&cq->lock);
	return ret;
}

static int cq_signal(struct fid_cq *fid)
{
	struct dr_cq *cq = dr_cq_of(fid);

	if (cq->wait.fd < 0) {
		DR_WARN(FI_LOG_CQ, "fi_cq_signal on a CQ opened with FI_WAIT_NONE\n");
		return -FI_ENOSYS;
	}
	dr_spin_lock(&cq->lock);
	cq->signaled = true;
	dr_wait_signal(&cq->wait);
	dr_spin_unlock(&cq->lock);
	return 0;
}

static const char *cq_strerror(struct fid_cq *fid, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	return dr_strerror(prov_errno, buf, len);
}

/* ---- the fid ------------------------------------------------------------------- */

static int cq_close(struct fid *fid)
{
	struct dr_cq *cq = dr_cq_of_fid(fid);
	struct dr_domain *dom = cq->dom;

	if (dr_ref_held(&cq->ref)) {
		DR_WARN(FI_LOG_CQ, "CQ still bound to %d endpoint(s)\n", dr_ref_held(&cq->ref));
		return -FI_EBUSY;
	}
	/* completions never read are lost (fi_cq(3)) */
	free(cq->ring);
	dr_wait_fini(&cq->wait);
	free(cq);
	dr_dev_lock(dom->dev);
	dr_ref_put(&dom->ref);
	dr_dev_unlock(dom->dev);
	return 0;
}

static const struct fi_ops cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = dr_no_bind,
    .control = dr_wait_fid_control,
    .ops_open = dr_no_ops_open,
    .tostr = dr_no_tostr,
    .ops_set = dr_no_ops_set,
};

static const struct fi_ops_cq cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

/* The format to use, or a negative error (and FI_WARN). */
static int cq_check_attr(const struct fi_cq_attr *attr)
{
	int ret;

	if (attr->flags & ~FI_AFFINITY) {
		DR_WARN(FI_LOG_CQ, "unsupported CQ flags 0x%llx (FI_AFFINITY only)\n",
			(unsigned long long)(attr->flags & ~FI_AFFINITY));
		return -FI_EINVAL;
	}
	if (attr->flags & FI_AFFINITY)
		DR_INFO(FI_LOG_CQ, "signaling_vector %d ignored: no interrupts\n",
			attr->signaling_vector);
	ret = dr_wait_obj_check(attr->wait_obj, FI_LOG_CQ);
	if (ret)
		return ret;
	/* fi_cq(3): wait_cond "is ignored if wait_obj is set to FI_WAIT_NONE" */
	if (attr->wait_obj != FI_WAIT_NONE) {
		switch (attr->wait_cond) {
		case FI_CQ_COND_NONE:
			break;
		case FI_CQ_COND_THRESHOLD:
			DR_WARN(FI_LOG_CQ, "FI_CQ_COND_THRESHOLD is not supported\n");
			return -FI_ENOSYS;
		default:
			DR_WARN(FI_LOG_CQ, "unknown wait_cond %d\n", (int)attr->wait_cond);
			return -FI_EINVAL;
		}
	}
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
		return FI_CQ_FORMAT_CONTEXT;
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
		return attr->format;
	case FI_CQ_FORMAT_TAGGED:
		DR_WARN(FI_LOG_CQ, "FI_CQ_FORMAT_TAGGED is not supported: droce has no "
				   "FI_TAGGED\n");
		return -FI_ENOSYS;
	}
	DR_WARN(FI_LOG_CQ, "unknown CQ format %d\n", (int)attr->format);
	return -FI_EINVAL;
}

int dr_cq_open(struct fid_domain *domain, struct fi_cq_attr *uattr, struct fid_cq **cqp,
	       void *context)
{
	static const struct fi_cq_attr defaults = {.format = FI_CQ_FORMAT_UNSPEC};
	const struct fi_cq_attr *attr = uattr ? uattr : &defaults;
	struct dr_domain *dom = dr_domain_of(domain);
	struct dr_cq *cq;
	size_t size;
	int ret;

	ret = cq_check_attr(attr);
	if (ret < 0)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->format = (enum fi_cq_format)ret;
	cq->entry_size = dr_cq_fmts[cq->format].size;
	size = attr->size ? attr->size : DR_CQ_DEFAULT_SIZE;
	if (size > DR_CQ_MAX_INITIAL)
		size = DR_CQ_MAX_INITIAL;
	for (cq->size = 1; cq->size < size; cq->size *= 2)
		;
	cq->ring = calloc(cq->size, sizeof(*cq->ring));
	if (!cq->ring) {
		ret = -FI_ENOMEM;
		goto out_free;
	}
	ret = dr_wait_init(&cq->wait, attr->wait_obj);
	if (ret)
		goto out_free_ring;
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	/* libfabric's fids hold non-const ops pointers, never written through */
	cq->cq.fid.ops = DR_OPS(&cq_fi_ops);
	cq->cq.ops = DR_OPS(&cq_ops);
	cq->progress = dr_domain_progress_hook(domain);
	cq->api_version = dom->fab->fab.api_version;
	cq->dom = dom;
	dr_dev_lock(dom->dev);
	dr_ref_get(&dom->ref);
	dr_dev_unlock(dom->dev);
	*cqp = &cq->cq;
	return 0;

out_free_ring:
	free(cq->ring);
out_free:
	free(cq);
	return ret;
}
