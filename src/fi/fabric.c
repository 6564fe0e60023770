// SPDX-License-Identifier: BSD-2-Clause
/*
 * The fabric: the list of open devices, and progress for EQs, which see
 * every device of the fabric (connection events come from any of them).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dr_fi.h"

/* Every open fabric, for the provider's cleanup at process exit.  Lock
 * order: fabrics_lock, then a fabric's lock. */
static pthread_mutex_t fabrics_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dr_fabric *fabrics; /* under fabrics_lock */
static bool unloading;		  /* set once, under fabrics_lock */

bool dr_fabric_unloading(void)
{
	return __atomic_load_n(&unloading, __ATOMIC_ACQUIRE);
}

static void dr_fabric_progress(struct dr_fabric *fab)
{
	struct dr_dev *devs[64];
	int n = 0;

	/* take references so a device cannot go while it is driven, and
	 * drive it outside fabric->lock (lock order: dev->lock alone) */
	pthread_mutex_lock(&fab->lock);
	for (struct dr_dev *d = fab->devs; d && n < 64; d = d->next) {
		d->ref++;
		devs[n++] = d;
	}
	pthread_mutex_unlock(&fab->lock);
	for (int i = 0; i < n; i++) {
		dr_dev_progress(devs[i]);
		dr_dev_put(devs[i]);
	}
}

static void fabric_progress_fn(void *arg)
{
	dr_fabric_progress(arg);
}

/* An EQ waiter will sleep on its fd: every device, now and later, runs a
 * progress thread so that connection events arrive without reads. */
static void fabric_background(void *arg)
{
	struct dr_fabric *fab = arg;

	pthread_mutex_lock(&fab->lock);
	fab->background = true;
	for (struct dr_dev *d = fab->devs; d; d = d->next)
		dr_dev_background(d);
	pthread_mutex_unlock(&fab->lock);
}

struct dr_progress dr_fabric_progress_hook(struct fid_fabric *fabric)
{
	return (struct dr_progress){ .fn = fabric_progress_fn,
				     .arg = dr_fabric_of(fabric),
				     .background = fabric_background };
}

static int fabric_close(struct fid *fid)
{
	struct dr_fabric *fab = dr_fabric_of_fid(fid);
	struct dr_fabric **pp;

	pthread_mutex_lock(&fabrics_lock);
	pthread_mutex_lock(&fab->lock);
	if (dr_ref_held(&fab->ref) || fab->devs) {
		pthread_mutex_unlock(&fab->lock);
		pthread_mutex_unlock(&fabrics_lock);
		return -FI_EBUSY;
	}
	pthread_mutex_unlock(&fab->lock);
	for (pp = &fabrics; *pp; pp = &(*pp)->next)
		if (*pp == fab) {
			*pp = fab->next;
			break;
		}
	pthread_mutex_unlock(&fabrics_lock);
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	return 0;
}

/* fi_trywait: 0 if every object is empty after a round of progress, so
 * the caller may block on their wait fds; -FI_EAGAIN otherwise. */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	dr_fabric_progress(dr_fabric_of(fabric));
	for (int i = 0; i < count; i++) {
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ: {
			struct dr_cq *cq = dr_cq_of_fid(fids[i]);
			size_t n;

			dr_spin_lock(&cq->lock);
			n = cq->count;
			dr_spin_unlock(&cq->lock);
			if (n)
				return -FI_EAGAIN;
			break;
		}
		case FI_CLASS_EQ: {
			struct dr_eq *eq = dr_eq_of_fid(fids[i]);
			size_t n;

			pthread_mutex_lock(&eq->lock);
			n = eq->count;
			pthread_mutex_unlock(&eq->lock);
			if (n)
				return -FI_EAGAIN;
			break;
		}
		case FI_CLASS_CNTR:
			break; /* counters have no "pending" state to report */
		default:
			return -FI_EINVAL;
		}
	}
	return 0;
}

static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
			  struct fid_domain **dom, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return dr_domain_open(fabric, info, dom, context);
}

static const struct fi_ops fabric_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fabric_close,
    .bind = dr_no_bind,
    .control = dr_no_control,
    .ops_open = dr_no_ops_open,
    .tostr = dr_no_tostr,
    .ops_set = dr_no_ops_set,
};

static const struct fi_ops_fabric fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = dr_domain_open,
    .passive_ep = dr_pep_open,
    .eq_open = dr_eq_open,
    .wait_open = dr_no_wait_open,
    .trywait = fabric_trywait,
    .domain2 = fabric_domain2,
};

int dr_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct dr_fabric *fab;

	if (attr && attr->name && strcmp(attr->name, DR_FABRIC_NAME)) {
		DR_WARN(FI_LOG_FABRIC, "fabric %s is not droce's\n", attr->name);
		return -FI_ENODATA;
	}
	if (!dr_settings_get())
		return -FI_ENODATA; /* the settings said which parameter */
	if (dr_fabric_unloading())
		return -FI_ESHUTDOWN;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	pthread_mutex_init(&fab->lock, NULL);
	fab->fab.fid.fclass = FI_CLASS_FABRIC;
	fab->fab.fid.context = context;
	fab->fab.fid.ops = DR_OPS(&fabric_fi_ops);
	fab->fab.ops = DR_OPS(&fabric_ops);
	fab->fab.api_version = attr ? attr->api_version : DR_FI_VERSION;
	fab->api_version = fab->fab.api_version;
	pthread_mutex_lock(&fabrics_lock);
	fab->next = fabrics;
	fabrics = fab;
	pthread_mutex_unlock(&fabrics_lock);
	*fabric = &fab->fab;
	return 0;
}

/* How long the cleanup waits for one lock or one device: only a lock held
 * by a thread that exit() interrupted (a signal handler that calls exit)
 * makes it wait that long; the process then exits that much later. */
#define DR_CLEANUP_NS 1000000000ull

static bool lock_until(pthread_mutex_t *m, uint64_t deadline_ns)
{
	while (pthread_mutex_trylock(m)) {
		struct timespec nap = { 0, 100000 };

		if (dr_port_now_ns() >= deadline_ns)
			return false;
		nanosleep(&nap, NULL);
	}
	return true;
}

/*
 * Process exit: every device of every open fabric quiesced (dr_dev_quiesce
 * says what that does, and why nothing is freed), and no fabric or device
 * opened from then on.  References keep the devices while they are
 * quiesced outside fabric->lock, which the cleanup does not hold while it
 * joins a thread.
 */
void dr_fabric_cleanup(void)
{
	bool locked = lock_until(&fabrics_lock, dr_port_now_ns() + DR_CLEANUP_NS);

	__atomic_store_n(&unloading, true, __ATOMIC_RELEASE);
	if (!locked) {
		DR_WARN(FI_LOG_FABRIC, "fabric list busy at exit: devices left running\n");
		return;
	}
	for (struct dr_fabric *fab = fabrics; fab; fab = fab->next) {
		struct dr_dev *devs[64];
		int n = 0;

		if (!lock_until(&fab->lock, dr_port_now_ns() + DR_CLEANUP_NS)) {
			DR_WARN(FI_LOG_FABRIC, "fabric busy at exit: its devices left running\n");
			continue;
		}
		for (struct dr_dev *d = fab->devs; d && n < 64; d = d->next) {
			d->ref++;
			devs[n++] = d;
		}
		pthread_mutex_unlock(&fab->lock);
		for (int i = 0; i < n; i++) {
			dr_dev_quiesce(devs[i], dr_port_now_ns() + DR_CLEANUP_NS);
			dr_dev_put(devs[i]);
		}
	}
	pthread_mutex_unlock(&fabrics_lock);
}
