// SPDX-License-Identifier: BSD-2-Clause
/*
 * Counters (fi_cntr(3)): a success count and an error count.
 *
 * The wait fd (FI_WAIT_UNSPEC, FI_WAIT_FD) becomes readable when either
 * value changes and stays so until the next fi_cntr_read, fi_cntr_readerr
 * or fi_cntr_wait.  fi_cntr_wait also works on an FI_WAIT_NONE counter (the
 * man page calls that use invalid but names no error): it then polls
 * progress, sleeping at most 1 ms between rounds.
 *
 * Concurrency: c->lock guards value, err and the wait fd's state.
 * dr_cntr_inc* are called with the device lock held (lock order: device,
 * then counter); readers drive progress first, without c->lock.
 */
#include <stdlib.h>

#include "dr_fi.h"

/* ---- updates ---------------------------------------------------------------- */

void dr_cntr_inc(struct dr_cntr *c)
{
	pthread_mutex_lock(&c->lock);
	c->value++;
	dr_wait_signal(&c->wait);
	pthread_mutex_unlock(&c->lock);
}

void dr_cntr_inc_err(struct dr_cntr *c)
{
	pthread_mutex_lock(&c->lock);
	c->err++;
	dr_wait_signal(&c->wait);
	pthread_mutex_unlock(&c->lock);
}

/* Change the value (which: &c->value or &c->err) and signal waiters. */
static int cntr_update(struct dr_cntr *c, uint64_t *which, uint64_t v, bool add)
{
	pthread_mutex_lock(&c->lock);
	*which = add ? *which + v : v;
	dr_wait_signal(&c->wait);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int cntr_add(struct fid_cntr *fid, uint64_t v)
{
	struct dr_cntr *c = dr_cntr_of(fid);

	return cntr_update(c, &c->value, v, true);
}

static int cntr_set(struct fid_cntr *fid, uint64_t v)
{
	struct dr_cntr *c = dr_cntr_of(fid);

	return cntr_update(c, &c->value, v, false);
}

static int cntr_adderr(struct fid_cntr *fid, uint64_t v)
{
	struct dr_cntr *c = dr_cntr_of(fid);

	return cntr_update(c, &c->err, v, true);
}

static int cntr_seterr(struct fid_cntr *fid, uint64_t v)
{
	struct dr_cntr *c = dr_cntr_of(fid);

	return cntr_update(c, &c->err, v, false);
}

/* ---- reads -------------------------------------------------------------------- */

/* Both values, after a round of progress; the fd is cleared under the
 * same lock, so any later change makes it readable again. */
static void cntr_sample(struct dr_cntr *c, uint64_t *value, uint64_t *err)
{
	dr_progress_run(&c->progress);
	pthread_mutex_lock(&c->lock);
	dr_wait_clear(&c->wait);
	*value = c->value;
	*err = c->err;
	pthread_mutex_unlock(&c->lock);
}

static uint64_t cntr_read(struct fid_cntr *fid)
{
	uint64_t v, e;

	cntr_sample(dr_cntr_of(fid), &v, &e);
	return v;
}

static uint64_t cntr_readerr(struct fid_cntr *fid)
{
	uint64_t v, e;

	cntr_sample(dr_cntr_of(fid), &v, &e);
	return e;
}

static int cntr_wait(struct fid_cntr *fid, uint64_t threshold, int timeout)
{
	struct dr_cntr *c = dr_cntr_of(fid);
	uint64_t start = dr_now_ns();
	uint64_t deadline = dr_deadline_ns(start, timeout);
	uint64_t v, e, err0;

	pthread_mutex_lock(&c->lock);
	err0 = c->err;
	pthread_mutex_unlock(&c->lock);
	for (;;) {
		cntr_sample(c, &v, &e);
		if (v >= threshold)
			return 0;
		/* fi_cntr(3): "any change in a counter's error value will
		 * unblock any thread inside fi_cntr_wait" */
		if (e != err0)
			return -FI_EAVAIL;
		if (!dr_wait_pause(&c->wait, start, deadline))
			return -FI_ETIMEDOUT;
	}
}

/* ---- the fid -------------------------------------------------------------------- */

static int cntr_close(struct fid *fid)
{
	struct dr_cntr *c = dr_cntr_of_fid(fid);
	struct dr_domain *dom = c->dom;

	if (dr_ref_held(&c->ref)) {
		DR_WARN(FI_LOG_CNTR, "counter still bound to %d object(s)\n", dr_ref_held(&c->ref));
		return -FI_EBUSY;
	}
	dr_wait_fini(&c->wait);
	pthread_mutex_destroy(&c->lock);
	free(c);
	dr_dev_lock(dom->dev);
	dr_ref_put(&dom->ref);
	dr_dev_unlock(dom->dev);
	return 0;
}

static const struct fi_ops cntr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cntr_close,
    .bind = dr_no_bind,
    .control = dr_wait_fid_control,
    .ops_open = dr_no_ops_open,
    .tostr = dr_no_tostr,
    .ops_set = dr_no_ops_set,
};

static const struct fi_ops_cntr cntr_ops = {
    .size = sizeof(struct fi_ops_cntr),
    .read = cntr_read,
    .readerr = cntr_readerr,
    .add = cntr_add,
    .set = cntr_set,
    .wait = cntr_wait,
    .adderr = cntr_adderr,
    .seterr = cntr_seterr,
};

static int cntr_check_attr(const struct fi_cntr_attr *attr)
{
	if (attr->events != FI_CNTR_EVENTS_COMP) {
		DR_WARN(FI_LOG_CNTR,
			"counter events %d not supported "
			"(FI_CNTR_EVENTS_COMP only)\n",
			(int)attr->events);
		return -FI_ENOSYS;
	}
	if (attr->flags) {
		DR_WARN(FI_LOG_CNTR, "counter flags 0x%llx: must be 0\n",
			(unsigned long long)attr->flags);
		return -FI_EINVAL;
	}
	return dr_wait_obj_check(attr->wait_obj, FI_LOG_CNTR);
}

int dr_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *uattr, struct fid_cntr **cntrp,
		 void *context)
{
	static const struct fi_cntr_attr defaults = {.events = FI_CNTR_EVENTS_COMP};
	const struct fi_cntr_attr *attr = uattr ? uattr : &defaults;
	struct dr_domain *dom = dr_domain_of(domain);
	struct dr_cntr *c;
	int ret;

	ret = cntr_check_attr(attr);
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	ret = dr_wait_init(&c->wait, attr->wait_obj);
	if (ret)
		goto out_free;
	pthread_mutex_init(&c->lock, NULL);
	c->cntr.fid.fclass = FI_CLASS_CNTR;
	c->cntr.fid.context = context;
	/* libfabric's fids hold non-const ops pointers, never written through */
	c->cntr.fid.ops = DR_OPS(&cntr_fi_ops);
	c->cntr.ops = DR_OPS(&cntr_ops);
	c->progress = dr_domain_progress_hook(domain);
	c->dom = dom;
	dr_dev_lock(dom->dev);
	dr_ref_get(&dom->ref);
	dr_dev_unlock(dom->dev);
	*cntrp = &c->cntr;
	return 0;

out_free:
	free(c);
	return ret;
}
