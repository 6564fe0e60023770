// SPDX-License-Identifier: BSD-2-Clause
/*
 * Wait objects and the clock: the eventfd behind FI_WAIT_UNSPEC and
 * FI_WAIT_FD, and the pause of the blocking loops (fi_cq_sread,
 * fi_eq_sread, fi_cntr_wait).
 *
 * Progress is manual and the device has no interrupt (DPDK polls), so a
 * blocked reader cannot sleep until "data arrives": nothing would make it
 * arrive.  It drives progress itself, spinning for DR_WAIT_SPIN_NS (a
 * ping-pong answer comes back within that), then sleeping on its eventfd
 * in slices of at most DR_WAIT_SLICE_MS between rounds of progress.  A push
 * from another thread (which drove progress, or fi_cq_signal) makes the
 * eventfd readable and ends the slice at once.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "dr_fi.h"

#define DR_WAIT_SPIN_NS	 200000ull /* 200 us of busy progress first */
#define DR_WAIT_SLICE_MS 1	   /* then progress at least every 1 ms */

static const char *const dr_wait_obj_names[] = {
    [FI_WAIT_NONE] = "FI_WAIT_NONE",
    [FI_WAIT_UNSPEC] = "FI_WAIT_UNSPEC",
    [FI_WAIT_SET] = "FI_WAIT_SET",
    [FI_WAIT_FD] = "FI_WAIT_FD",
    [FI_WAIT_MUTEX_COND] = "FI_WAIT_MUTEX_COND",
    [FI_WAIT_YIELD] = "FI_WAIT_YIELD",
    [FI_WAIT_POLLFD] = "FI_WAIT_POLLFD",
};

int dr_wait_obj_check(enum fi_wait_obj obj, enum fi_log_subsys subsys)
{
	switch (obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		return 0;
	case FI_WAIT_SET:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_YIELD:
	case FI_WAIT_POLLFD:
		DR_WARN(subsys,
			"wait object %s is not supported: use FI_WAIT_NONE, "
			"FI_WAIT_UNSPEC or FI_WAIT_FD\n",
			dr_wait_obj_names[obj]);
		return -FI_ENOSYS;
	}
	DR_WARN(subsys, "unknown wait object %d\n", (int)obj);
	return -FI_EINVAL;
}

int dr_wait_init(struct dr_wait *w, enum fi_wait_obj obj)
{
	w->fd = -1;
	w->set = false;
	if (obj == FI_WAIT_NONE)
		return 0;
	if (obj != FI_WAIT_UNSPEC && obj != FI_WAIT_FD)
		return obj <= FI_WAIT_POLLFD ? -FI_ENOSYS : -FI_EINVAL;
	/* non-blocking: dr_wait_clear reads until empty, never blocks */
	w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->fd < 0) {
		int ret = -errno;

		DR_WARN(FI_LOG_CORE, "eventfd: %s\n", fi_strerror(-ret));
		return ret;
	}
	return 0;
}

void dr_wait_fini(struct dr_wait *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

void dr_wait_signal(struct dr_wait *w)
{
	uint64_t one = 1;

	if (w->fd < 0 || w->set)
		return;
	w->set = true;
	if (write(w->fd, &one, sizeof(one)) < 0)
		DR_WARN(FI_LOG_CORE, "eventfd write: %s\n", fi_strerror(errno));
}

void dr_wait_clear(struct dr_wait *w)
{
	uint64_t v;

	if (w->fd < 0 || !w->set)
		return;
	w->set = false;
	/* one read resets an eventfd (no EFD_SEMAPHORE) */
	if (read(w->fd, &v, sizeof(v)) < 0)
		DR_WARN(FI_LOG_CORE, "eventfd read: %s\n", fi_strerror(errno));
}

void dr_wait_block(struct dr_wait *w, int timeout_ms)
{
	struct pollfd pfd = {.fd = w->fd, .events = POLLIN};

	if (w->fd >= 0) {
		/* EINTR: the caller loops and re-checks anyway */
		(void)poll(&pfd, 1, timeout_ms);
		return;
	}
	/* FI_WAIT_NONE: nothing can signal us, so only sleep a bounded time */
	if (timeout_ms > 0)
		(void)poll(NULL, 0, timeout_ms);
	else
		sched_yield();
}

static int wait_control(struct dr_wait *w, int command, void *arg)
{
	switch (command) {
	case FI_GETWAIT:
		if (w->fd < 0)
			return -FI_ENODATA;
		if (!arg)
			return -FI_EINVAL;
		*(int *)arg = w->fd;
		return 0;
	case FI_GETWAITOBJ:
		if (w->fd < 0)
			return -FI_ENODATA;
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = FI_WAIT_FD;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

int dr_wait_fid_control(struct fid *fid, int command, void *arg)
{
	struct dr_progress *p;
	struct dr_wait *w;
	int ret;

	switch (fid->fclass) {
	case FI_CLASS_CQ:
		w = &dr_cq_of_fid(fid)->wait;
		p = &dr_cq_of_fid(fid)->progress;
		break;
	case FI_CLASS_EQ:
		w = &dr_eq_of_fid(fid)->wait;
		p = &dr_eq_of_fid(fid)->progress;
		break;
	case FI_CLASS_CNTR:
		w = &dr_cntr_of_fid(fid)->wait;
		p = &dr_cntr_of_fid(fid)->progress;
		break;
	default:
		return -FI_ENOSYS;
	}
	ret = wait_control(w, command, arg);
	/* blocking on the fd: nobody reads, so progress must run alone */
	if (!ret && command == FI_GETWAIT)
		dr_progress_background(p);
	return ret;
}

uint64_t dr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dr_deadline_ns(uint64_t start_ns, int timeout_ms)
{
	if (timeout_ms < 0)
		return UINT64_MAX;
	return start_ns + (uint64_t)timeout_ms * 1000000ull;
}

bool dr_wait_pause(struct dr_wait *w, uint64_t start_ns, uint64_t deadline_ns)
{
	uint64_t now = dr_now_ns();
	uint64_t left_ms;

	if (now >= deadline_ns)
		return false;
	if (now - start_ns < DR_WAIT_SPIN_NS)
		return true;
	/* round up so the last slice ends at or after the deadline */
	left_ms = (deadline_ns - now + 999999) / 1000000;
	dr_wait_block(w, left_ms < DR_WAIT_SLICE_MS ? (int)left_ms : DR_WAIT_SLICE_MS);
	return true;
}
