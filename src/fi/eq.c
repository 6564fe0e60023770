// SPDX-License-Identifier: BSD-2-Clause
/*
 * The event queue (fi_eq(3)): connection events and asynchronous errors.
 *
 * A FIFO of events, each one allocation; attr->size is only a hint, so
 * nothing is ever lost (no FI_EOVERRUN state).  It is bounded all the same
 * by what can put events in it: FI_CONNREQs by the backlog of each
 * listener bound to it (a request that is gone before it was read is
 * taken back out, dr_eq_withdraw), the rest by the application's own
 * endpoints, a few events each, and its own fi_eq_write.  Successes and
 * errors share the FIFO in the order they happened: fi_eq_read returns
 * -FI_EAVAIL while an error is at the head, fi_eq_readerr -FI_EAGAIN while
 * a success is.  The wait fd (FI_WAIT_UNSPEC, FI_WAIT_FD) is readable
 * exactly while events are queued.
 *
 * Concurrency: eq->lock guards the FIFO, count, err_data and the wait fd's
 * state.  dr_eq_push* are called with the device lock held (lock
 * order: device, then EQ) and never drive progress; readers drive progress
 * first, without eq->lock, then take it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dr_fi.h"

struct dr_eq_ev {
	struct dr_eq_ev *next, *prev;
	struct dr_connreq *cr; /* FI_CONNREQ: its request, while unread */
	uint32_t event;
	bool err;		       /* an error entry: errent, err_data in data[] */
	bool owns_info;		       /* FI_CONNREQ from dr_eq_push: free if never read */
	struct fi_eq_err_entry errent; /* err only; err_data unset */
	size_t len;		       /* bytes in data[]: the entry, or err_data */
	uint8_t data[];
};

/* ---- the FIFO (eq->lock held) ------------------------------------------- */

static void eq_append(struct dr_eq *eq, struct dr_eq_ev *ev)
{
	ev->next = NULL;
	ev->prev = eq->tail;
	if (eq->tail)
		eq->tail->next = ev;
	else
		eq->head = ev;
	eq->tail = ev;
	if (eq->count++ == 0)
		dr_wait_signal(&eq->wait);
}

/* Off the FIFO, wherever it is; a request's event is no longer its. */
static void eq_unlink(struct dr_eq *eq, struct dr_eq_ev *ev)
{
	if (ev->prev)
		ev->prev->next = ev->next;
	else
		eq->head = ev->next;
	if (ev->next)
		ev->next->prev = ev->prev;
	else
		eq->tail = ev->prev;
	if (ev->cr) {
		ev->cr->ev = NULL;
		ev->cr = NULL;
	}
	if (--eq->count == 0)
		dr_wait_clear(&eq->wait);
}

static struct dr_eq_ev *eq_pop(struct dr_eq *eq)
{
	struct dr_eq_ev *ev = eq->head;

	eq_unlink(eq, ev);
	return ev;
}

/* The err_data handed out by the last fi_eq_readerr is valid "until a
 * subsequent read call against the EQ" (fi_eq(3)): every read ends it. */
static void eq_end_err_data(struct dr_eq *eq)
{
	free(eq->err_data);
	eq->err_data = NULL;
}

static void eq_free_ev(struct dr_eq_ev *ev)
{
	struct fi_info *info;

	if (ev->owns_info) {
		memcpy(&info, ev->data + offsetof(struct fi_eq_cm_entry, info), sizeof(info));
		fi_freeinfo(info);
	}
	free(ev);
}

/* ---- producers ------------------------------------------------------------ */

static struct dr_eq_ev *eq_ev_alloc(uint32_t event, const void *data, size_t len)
{
	struct dr_eq_ev *ev = malloc(sizeof(*ev) + len);

	if (!ev)
		return NULL;
	memset(ev, 0, sizeof(*ev));
	ev->event = event;
	ev->len = len;
	if (len)
		memcpy(ev->data, data, len);
	return ev;
}

int dr_eq_push(struct dr_eq *eq, uint32_t event, const void *buf, size_t len)
{
	struct dr_eq_ev *ev = eq_ev_alloc(event, buf, len);

	if (!ev) {
		DR_WARN(FI_LOG_EQ, "out of memory: EQ event %u lost\n", event);
		return -FI_ENOMEM;
	}
	/* the reader owns the fi_info once it has read the event; until then
	 * the EQ does (and frees it if the EQ is closed first) */
	ev->owns_info = event == FI_CONNREQ && len >= sizeof(struct fi_eq_cm_entry);
	pthread_mutex_lock(&eq->lock);
	eq_append(eq, ev);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

int dr_eq_push_connreq(struct dr_eq *eq, const void *buf, size_t len, struct dr_connreq *cr)
{
	struct dr_eq_ev *ev = eq_ev_alloc(FI_CONNREQ, buf, len);

	if (!ev) {
		DR_WARN(FI_LOG_EQ, "out of memory: FI_CONNREQ lost\n");
		return -FI_ENOMEM;
	}
	ev->owns_info = len >= sizeof(struct fi_eq_cm_entry);
	pthread_mutex_lock(&eq->lock);
	ev->cr = cr;
	cr->ev = ev;
	eq_append(eq, ev);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

bool dr_eq_withdraw(struct dr_eq *eq, struct dr_connreq *cr)
{
	struct dr_eq_ev *ev;

	pthread_mutex_lock(&eq->lock);
	ev = cr->ev;
	if (ev)
		eq_unlink(eq, ev);
	pthread_mutex_unlock(&eq->lock);
	if (ev)
		eq_free_ev(ev);
	return ev != NULL;
}

int dr_eq_push_err(struct dr_eq *eq, fid_t fid, void *context, uint64_t data, int err,
		   int prov_errno, const void *err_data, size_t err_data_size)
{
	struct dr_eq_ev *ev = eq_ev_alloc(0, err_data, err_data ? err_data_size : 0);

	if (!ev) {
		DR_WARN(FI_LOG_EQ, "out of memory: EQ error %d (%s) lost\n", err, fi_strerror(err));
		return -FI_ENOMEM;
	}
	ev->err = true;
	ev->errent.fid = fid;
	ev->errent.context = context;
	ev->errent.data = data;
	ev->errent.err = err;
	ev->errent.prov_errno = prov_errno;
	pthread_mutex_lock(&eq->lock);
	eq_append(eq, ev);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

static ssize_t eq_write(struct fid_eq *fid, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	struct dr_eq *eq = dr_eq_of(fid);
	struct dr_eq_ev *ev;

	if (!eq->writable) {
		DR_WARN(FI_LOG_EQ, "fi_eq_write on an EQ opened without FI_WRITE\n");
		return -FI_ENOSYS;
	}
	if (flags) {
		DR_WARN(FI_LOG_EQ, "fi_eq_write: unsupported flags 0x%llx\n",
			(unsigned long long)flags);
		return -FI_EINVAL;
	}
	if (!buf || !len) {
		DR_WARN(FI_LOG_EQ, "fi_eq_write: no event data\n");
		return -FI_EINVAL;
	}
	ev = eq_ev_alloc(event, buf, len);
	if (!ev)
		return -FI_ENOMEM;
	pthread_mutex_lock(&eq->lock);
	eq_append(eq, ev);
	pthread_mutex_unlock(&eq->lock);
	return (ssize_t)len;
}

/* ---- consumers -------------------------------------------------------------- */

/* One fi_eq_read against the FIFO, eq->lock held. */
static ssize_t eq_read_locked(struct dr_eq *eq, uint32_t *event, void *buf, size_t len,
			      uint64_t flags)
{
	struct dr_eq_ev *ev = eq->head;
	ssize_t ret;

	eq_end_err_data(eq);
	if (!ev)
		return -FI_EAGAIN;
	if (ev->err)
		return -FI_EAVAIL;
	if (len < ev->len || (ev->len && !buf)) {
		/* the event stays: a bigger buffer gets it whole (an FI_CONNREQ's
		 * info and CM data are never cut) */
		DR_INFO(FI_LOG_EQ, "fi_eq_read: buffer of %zu bytes, event needs %zu\n",
			buf ? len : 0, ev->len);
		return -FI_ETOOSMALL;
	}
	memcpy(buf, ev->data, ev->len);
	if (event)
		*event = ev->event;
	ret = (ssize_t)ev->len;
	if (!(flags & FI_PEEK))
		free(eq_pop(eq)); /* an FI_CONNREQ's info is the reader's now */
	return ret;
}

static int eq_check_read_flags(uint64_t flags, const char *op)
{
	if (flags & ~FI_PEEK) {
		DR_WARN(FI_LOG_EQ, "%s: unsupported flags 0x%llx (only FI_PEEK)\n", op,
			(unsigned long long)flags);
		return -FI_EINVAL;
	}
	return 0;
}

static ssize_t eq_read(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct dr_eq *eq = dr_eq_of(fid);
	ssize_t ret;

	ret = eq_check_read_flags(flags, "fi_eq_read");
	if (ret)
		return ret;
	dr_progress_run(&eq->progress);
	pthread_mutex_lock(&eq->lock);
	ret = eq_read_locked(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t eq_sread(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, int timeout,
			uint64_t flags)
{
	struct dr_eq *eq = dr_eq_of(fid);
	uint64_t start, deadline;
	ssize_t ret;

	if (eq->wait.fd < 0) {
		DR_WARN(FI_LOG_EQ, "fi_eq_sread on an EQ opened with FI_WAIT_NONE\n");
		return -FI_ENOSYS;
	}
	ret = eq_check_read_flags(flags, "fi_eq_sread");
	if (ret)
		return ret;
	start = dr_now_ns();
	deadline = dr_deadline_ns(start, timeout);
	for (;;) {
		dr_progress_run(&eq->progress);
		pthread_mutex_lock(&eq->lock);
		ret = eq_read_locked(eq, event, buf, len, flags);
		pthread_mutex_unlock(&eq->lock);
		if (ret != -FI_EAGAIN)
			return ret;
		if (!dr_wait_pause(&eq->wait, start, deadline))
			return -FI_EAGAIN;
	}
}

static ssize_t eq_readerr(struct fid_eq *fid, struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct dr_eq *eq = dr_eq_of(fid);
	struct dr_eq_ev *ev;
	void *user_data;
	size_t user_size, n;
	ssize_t ret;

	ret = eq_check_read_flags(flags, "fi_eq_readerr");
	if (ret)
		return ret;
	if (!buf)
		return -FI_EINVAL;
	user_data = buf->err_data;
	user_size = buf->err_data_size;

	pthread_mutex_lock(&eq->lock);
	eq_end_err_data(eq);
	ev = eq->head;
	if (!ev || !ev->err) {
		ret = -FI_EAGAIN;
		goto out_unlock;
	}
	*buf = ev->errent;
	if (FI_VERSION_GE(eq->api_version, FI_VERSION(1, 5)) && user_size && user_data) {
		/* fi_eq(3): copy into the caller's buffer, say how much */
		n = ev->len < user_size ? ev->len : user_size;
		memcpy(user_data, ev->data, n);
		buf->err_data = user_data;
		buf->err_data_size = n;
	} else {
		/* ours, valid until the next read: the event itself is kept */
		buf->err_data = ev->len ? ev->data : NULL;
		buf->err_data_size = ev->len;
	}
	if (!(flags & FI_PEEK)) {
		eq_pop(eq);
		if (buf->err_data == ev->data)
			eq->err_data = ev;
		else
			free(ev);
	}
	ret = sizeof(*buf);
out_unlock:
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static const char *eq_strerror(struct fid_eq *fid, int prov_errno, const void *err_data, char *buf,
			       size_t len)
{
	return dr_strerror(prov_errno, buf, len);
}

/* ---- the fid ------------------------------------------------------------------ */

static int eq_close(struct fid *fid)
{
	struct dr_eq *eq = dr_eq_of_fid(fid);
	struct dr_eq_ev *ev, *next;

	pthread_mutex_lock(&eq->lock);
	if (dr_ref_held(&eq->ref)) {
		pthread_mutex_unlock(&eq->lock);
		DR_WARN(FI_LOG_EQ, "EQ still bound to %d object(s)\n", dr_ref_held(&eq->ref));
		return -FI_EBUSY;
	}
	ev = eq->head;
	for (struct dr_eq_ev *e = ev; e; e = e->next)
		if (e->cr) /* none expected (see below); never leave one dangling */
			e->cr->ev = NULL;
	eq->head = eq->tail = NULL;
	eq->count = 0;
	eq_end_err_data(eq);
	pthread_mutex_unlock(&eq->lock);

	/* events never read are lost (fi_eq(3)); their fi_info with them.
	 * No FI_CONNREQ of a request is among them: its pep, which holds a
	 * reference on the EQ, took them back when it closed. */
	for (; ev; ev = next) {
		next = ev->next;
		eq_free_ev(ev);
	}
	dr_wait_fini(&eq->wait);
	pthread_mutex_destroy(&eq->lock);
	pthread_mutex_lock(&eq->fab->lock);
	dr_ref_put(&eq->fab->ref);
	pthread_mutex_unlock(&eq->fab->lock);
	free(eq);
	return 0;
}

static const struct fi_ops eq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = eq_close,
    .bind = dr_no_bind,
    .control = dr_wait_fid_control,
    .ops_open = dr_no_ops_open,
    .tostr = dr_no_tostr,
    .ops_set = dr_no_ops_set,
};

static const struct fi_ops_eq eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

static int eq_check_attr(const struct fi_eq_attr *attr)
{
	if (attr->flags & ~(FI_WRITE | FI_AFFINITY)) {
		DR_WARN(FI_LOG_EQ, "unsupported EQ flags 0x%llx (FI_WRITE, FI_AFFINITY)\n",
			(unsigned long long)(attr->flags & ~(FI_WRITE | FI_AFFINITY)));
		return -FI_EINVAL;
	}
	if (attr->flags & FI_AFFINITY)
		DR_INFO(FI_LOG_EQ, "signaling_vector %d ignored: no interrupts\n",
			attr->signaling_vector);
	return dr_wait_obj_check(attr->wait_obj, FI_LOG_EQ);
}

int dr_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *uattr, struct fid_eq **eqp,
	       void *context)
{
	static const struct fi_eq_attr defaults = {.wait_obj = FI_WAIT_NONE};
	const struct fi_eq_attr *attr = uattr ? uattr : &defaults;
	struct dr_fabric *fab = dr_fabric_of(fabric);
	struct dr_eq *eq;
	int ret;

	ret = eq_check_attr(attr);
	if (ret)
		return ret;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = dr_wait_init(&eq->wait, attr->wait_obj);
	if (ret)
		goto out_free;
	pthread_mutex_init(&eq->lock, NULL);
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	/* libfabric's fids hold non-const ops pointers, never written through */
	eq->eq.fid.ops = DR_OPS(&eq_fi_ops);
	eq->eq.ops = DR_OPS(&eq_ops);
	eq->progress = dr_fabric_progress_hook(fabric);
	eq->api_version = fabric->api_version;
	eq->writable = attr->flags & FI_WRITE;
	eq->fab = fab;
	pthread_mutex_lock(&fab->lock);
	dr_ref_get(&fab->ref);
	pthread_mutex_unlock(&fab->lock);
	*eqp = &eq->eq;
	return 0;

out_free:
	free(eq);
	return ret;
}
