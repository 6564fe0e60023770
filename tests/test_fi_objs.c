// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_fi_objs.c - the EQ, CQ and counter objects (src/fi/eq.c, cq.c,
 * cntr.c, wait.c, stubs.c) against the libfabric 1.17 man pages fi_eq(3),
 * fi_cq(3) and fi_cntr(3): return codes, byte layouts, ordering of
 * successes and errors, err_data both ways, growth without loss, the wait
 * fd's readability, blocking reads and waits.
 *
 * No device: the fabric and domain are local structs, and the progress
 * hooks (defined here) run a fake that does what a test schedules -- push
 * a completion or event, or bump a counter, on its Nth call -- so blocking
 * calls are driven deterministically.  Only the timeout tests wait for
 * real, 20 ms each, and check the time taken is at least that and bounded.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "dr_fi.h"
#include "ck_run.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define TIMEOUT_MS    20
#define SLACK_MS      400 /* how late a timed-out call may return (valgrind) */

struct fi_provider dr_prov = {
    .version = DR_PROV_VERSION,
    .fi_version = DR_FI_VERSION,
    .name = DR_PROV_NAME,
};

/* ---- the fake parents and their progress --------------------------------- */

enum fake_act { FAKE_NONE, FAKE_CQ_PUSH, FAKE_EQ_PUSH, FAKE_EQ_ERR, FAKE_CNTR_INC, FAKE_CNTR_ERR };

static struct fake {
	int calls;  /* progress rounds so far (atomic: other threads read) */
	int at;	    /* act on this call (0: never) */
	bool every; /* act on every call from `at` on */
	enum fake_act act;
	struct dr_cq *cq;
	struct dr_eq *eq;
	struct dr_cntr *cntr;
	struct dr_cq_ent ent;
} fake;

static void fake_progress(void *arg)
{
	struct fake *f = arg;
	int n = __atomic_add_fetch(&f->calls, 1, __ATOMIC_SEQ_CST);

	if (!f->at || n < f->at || (n > f->at && !f->every))
		return;
	switch (f->act) {
	case FAKE_NONE:
		break;
	case FAKE_CQ_PUSH:
		ck_assert_int_eq(dr_cq_push(f->cq, &f->ent), 0);
		break;
	case FAKE_EQ_PUSH: {
		struct fi_eq_cm_entry cm = {.fid = (fid_t)0x1234};

		ck_assert_int_eq(dr_eq_push(f->eq, FI_CONNECTED, &cm, sizeof(cm)), 0);
		break;
	}
	case FAKE_EQ_ERR:
		ck_assert_int_eq(dr_eq_push_err(f->eq, NULL, NULL, 0, FI_ECONNREFUSED, 0, NULL, 0),
				 0);
		break;
	case FAKE_CNTR_INC:
		dr_cntr_inc(f->cntr);
		break;
	case FAKE_CNTR_ERR:
		dr_cntr_inc_err(f->cntr);
		break;
	}
}

static int fake_calls(void)
{
	return __atomic_load_n(&fake.calls, __ATOMIC_SEQ_CST);
}

struct dr_progress dr_fabric_progress_hook(struct fid_fabric *fabric)
{
	return (struct dr_progress){.fn = fake_progress, .arg = &fake};
}

struct dr_progress dr_domain_progress_hook(struct fid_domain *domain)
{
	return (struct dr_progress){.fn = fake_progress, .arg = &fake};
}

static struct dr_fabric tfab;
static struct dr_dev tdev;
static struct dr_domain tdom;

static void set_api(uint32_t v)
{
	tfab.fab.api_version = v;
	tfab.api_version = v;
}

static void setup(void)
{
	memset(&fake, 0, sizeof(fake));
	memset(&tfab, 0, sizeof(tfab));
	memset(&tdev, 0, sizeof(tdev));
	memset(&tdom, 0, sizeof(tdom));
	pthread_mutex_init(&tfab.lock, NULL);
	set_api(FI_VERSION(1, 17));
	tdom.fab = &tfab;
	tdom.dev = &tdev;
}

static void teardown(void)
{
	/* every object closed gave its parent's reference back */
	ck_assert_int_eq(tfab.ref, 0);
	ck_assert_int_eq(tdom.ref, 0);
	pthread_mutex_destroy(&tfab.lock);
}

/* ---- helpers ---------------------------------------------------------------- */

/* A freshly opened object: one reference on its parent, its class and the
 * caller's context; closing it gives the parent's reference back. */
static void check_open_close(struct fid *fid, const int *parent_ref, size_t fclass, void *ctx)
{
	ck_assert_int_eq(*parent_ref, 1);
	ck_assert_int_eq(fid->fclass, fclass);
	ck_assert_ptr_eq(fid->context, ctx);
	ck_assert_int_eq(fi_close(fid), 0);
	ck_assert_int_eq(*parent_ref, 0);
}

static struct fid_eq *eq_open(enum fi_wait_obj wait, uint64_t flags)
{
	struct fi_eq_attr attr = {.wait_obj = wait, .flags = flags};
	struct fid_eq *eq = NULL;

	ck_assert_int_eq(dr_eq_open(&tfab.fab, &attr, &eq, NULL), 0);
	ck_assert_ptr_nonnull(eq);
	fake.eq = dr_eq_of(eq);
	return eq;
}

static struct fid_cq *cq_open(enum fi_cq_format fmt, enum fi_wait_obj wait, size_t size)
{
	struct fi_cq_attr attr = {.format = fmt, .wait_obj = wait, .size = size};
	struct fid_cq *cq = NULL;

	ck_assert_int_eq(dr_cq_open(&tdom.dom, &attr, &cq, NULL), 0);
	ck_assert_ptr_nonnull(cq);
	fake.cq = dr_cq_of(cq);
	return cq;
}

static struct fid_cntr *cntr_open(enum fi_wait_obj wait)
{
	struct fi_cntr_attr attr = {.events = FI_CNTR_EVENTS_COMP, .wait_obj = wait};
	struct fid_cntr *c = NULL;

	ck_assert_int_eq(dr_cntr_open(&tdom.dom, &attr, &c, NULL), 0);
	ck_assert_ptr_nonnull(c);
	fake.cntr = dr_cntr_of(c);
	return c;
}

static int get_fd(struct fid *fid)
{
	int fd = -1;

	ck_assert_int_eq(fi_control(fid, FI_GETWAIT, &fd), 0);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	ck_assert_int_ge(poll(&p, 1, 0), 0);
	return p.revents & POLLIN;
}

static uint64_t ms_since(uint64_t start_ns)
{
	return (dr_now_ns() - start_ns) / 1000000;
}

/* A success completion numbered i, every field distinct. */
static struct dr_cq_ent ok_ent(unsigned i)
{
	return (struct dr_cq_ent){
	    .op_context = (void *)(uintptr_t)(0x1000 + i),
	    .flags = FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA,
	    .len = 100 + i,
	    .buf = (void *)(uintptr_t)(0x2000 + i),
	    .data = 0xabcd0000ull + i,
	};
}

static struct dr_cq_ent err_ent(unsigned i, int err, int prov_errno)
{
	struct dr_cq_ent e = ok_ent(i);

	e.flags = FI_SEND | FI_MSG;
	e.err = err;
	e.prov_errno = prov_errno;
	e.olen = 7 + i;
	return e;
}

static void push_ok(struct fid_cq *cq, unsigned i)
{
	struct dr_cq_ent e = ok_ent(i);

	ck_assert_int_eq(dr_cq_push(dr_cq_of(cq), &e), 0);
}

static void push_err(struct fid_cq *cq, unsigned i, int prov_errno)
{
	struct dr_cq_ent e = err_ent(i, FI_EIO, prov_errno);

	ck_assert_int_eq(dr_cq_push(dr_cq_of(cq), &e), 0);
}

/* ============================ EQ ============================================ */

/* fi_eq_open arguments: one line per case (fi_eq(3) "fi_eq_open"). */
static const struct {
	enum fi_wait_obj wait;
	uint64_t flags;
	int ret;
} eq_open_cases[] = {
    {FI_WAIT_NONE, 0, 0},
    {FI_WAIT_UNSPEC, 0, 0},
    {FI_WAIT_FD, 0, 0},
    {FI_WAIT_FD, FI_WRITE, 0},
    {FI_WAIT_NONE, FI_AFFINITY, 0}, /* signaling_vector: a hint */
    {FI_WAIT_SET, 0, -FI_ENOSYS},
    {FI_WAIT_MUTEX_COND, 0, -FI_ENOSYS},
    {FI_WAIT_YIELD, 0, -FI_ENOSYS},
    {FI_WAIT_POLLFD, 0, -FI_ENOSYS},
    {(enum fi_wait_obj)99, 0, -FI_EINVAL},
    {FI_WAIT_NONE, FI_READ, -FI_EINVAL},
    {FI_WAIT_NONE, FI_WRITE | (1ull << 62), -FI_EINVAL},
};

START_TEST(eq_open_args)
{
	struct fid_eq *eq = NULL;
	struct fi_eq_attr attr = {
	    .size = 1,
	    .wait_obj = eq_open_cases[_i].wait,
	    .flags = eq_open_cases[_i].flags,
	};
	int ret = dr_eq_open(&tfab.fab, &attr, &eq, (void *)0x77);

	ck_assert_int_eq(ret, eq_open_cases[_i].ret);
	if (!ret)
		check_open_close(&eq->fid, &tfab.ref, FI_CLASS_EQ, (void *)0x77);
}
END_TEST

START_TEST(eq_open_null_attr)
{
	struct fid_eq *eq = NULL;
	uint32_t ev;
	char buf[64];

	ck_assert_int_eq(dr_eq_open(&tfab.fab, NULL, &eq, NULL), 0);
	/* the default is FI_WAIT_NONE: no sread, no wait object */
	ck_assert_int_eq(fi_eq_sread(eq, &ev, buf, sizeof(buf), 0, 0), -FI_ENOSYS);
	ck_assert_int_eq(fi_control(&eq->fid, FI_GETWAIT, &ev), -FI_ENODATA);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

START_TEST(eq_read_basic)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE, 0);
	struct fi_eq_cm_entry in = {.fid = (fid_t)0x5555}, out;
	uint32_t ev = 0;

	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), -FI_EAGAIN);
	ck_assert_int_eq(fake.calls, 1); /* every read drives progress */
	ck_assert_int_eq(dr_eq_push(dr_eq_of(eq), FI_CONNECTED, &in, sizeof(in)), 0);
	memset(&out, 0xa5, sizeof(out));
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), sizeof(in));
	ck_assert_int_eq(ev, FI_CONNECTED);
	ck_assert_mem_eq(&out, &in, sizeof(in));
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), -FI_EAGAIN);
	ck_assert_int_eq(fake.calls, 3);
	/* event may be NULL; unknown flags are refused */
	ck_assert_int_eq(dr_eq_push(dr_eq_of(eq), FI_SHUTDOWN, &in, sizeof(in)), 0);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), FI_SEND), -FI_EINVAL);
	ck_assert_int_eq(fi_eq_read(eq, NULL, &out, sizeof(out), 0), sizeof(in));
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

START_TEST(eq_order_and_errors)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE, 0);
	struct dr_eq *deq = dr_eq_of(eq);
	struct fi_eq_cm_entry a = {.fid = (fid_t)0xa}, b = {.fid = (fid_t)0xb}, out;
	struct fi_eq_err_entry err;
	const char ed[] = "peer rejected";
	uint32_t ev;

	ck_assert_int_eq(dr_eq_push(deq, FI_CONNECTED, &a, sizeof(a)), 0);
	ck_assert_int_eq(
	    dr_eq_push_err(deq, (fid_t)0xe, (void *)0xc0, 42, FI_ECONNREFUSED, 28, ed, sizeof(ed)),
	    0);
	ck_assert_int_eq(dr_eq_push(deq, FI_SHUTDOWN, &b, sizeof(b)), 0);

	/* the success queued first comes first; readerr waits its turn */
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), sizeof(out));
	ck_assert_ptr_eq(out.fid, (fid_t)0xa);
	/* then the error blocks reads until taken */
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), -FI_EAVAIL);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), sizeof(struct fi_eq_err_entry));
	ck_assert_ptr_eq(err.fid, (fid_t)0xe);
	ck_assert_ptr_eq(err.context, (void *)0xc0);
	ck_assert_int_eq(err.data, 42);
	ck_assert_int_eq(err.err, FI_ECONNREFUSED);
	ck_assert_int_eq(err.prov_errno, 28);
	/* err_data_size 0 on input: the provider's buffer, valid until the
	 * next read */
	ck_assert_int_eq(err.err_data_size, sizeof(ed));
	ck_assert_ptr_nonnull(err.err_data);
	ck_assert_mem_eq(err.err_data, ed, sizeof(ed));
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), sizeof(out));
	ck_assert_int_eq(ev, FI_SHUTDOWN);
	ck_assert_ptr_eq(out.fid, (fid_t)0xb);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), -FI_EAGAIN);
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
	/* an error without err_data */
	ck_assert_int_eq(dr_eq_push_err(deq, NULL, NULL, 0, FI_ETIMEDOUT, 0, NULL, 0), 0);
	memset(&err, 0x5a, sizeof(err));
	err.err_data_size = 0;
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), sizeof(err));
	ck_assert_int_eq(err.err, FI_ETIMEDOUT);
	ck_assert_ptr_null(err.err_data);
	ck_assert_int_eq(err.err_data_size, 0);
	ck_assert_int_eq(fi_eq_readerr(eq, NULL, 0), -FI_EINVAL);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

START_TEST(eq_peek)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE, 0);
	struct fi_eq_cm_entry a = {.fid = (fid_t)0xa}, out;
	struct fi_eq_err_entry err = {0};
	uint32_t ev = 0;

	ck_assert_int_eq(dr_eq_push(dr_eq_of(eq), FI_CONNECTED, &a, sizeof(a)), 0);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), FI_PEEK), sizeof(out));
	ck_assert_int_eq(ev, FI_CONNECTED);
	ev = 0;
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), FI_PEEK), sizeof(out));
	ck_assert_int_eq(ev, FI_CONNECTED);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), sizeof(out));
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), FI_PEEK), -FI_EAGAIN);

	ck_assert_int_eq(dr_eq_push_err(dr_eq_of(eq), NULL, NULL, 1, FI_EIO, 3, "xy", 3), 0);
	ck_assert_int_eq(fi_eq_readerr(eq, &err, FI_PEEK), sizeof(err));
	ck_assert_int_eq(err.data, 1);
	ck_assert_str_eq(err.err_data, "xy");
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), sizeof(err));
	ck_assert_int_eq(err.data, 1);
	ck_assert_str_eq(err.err_data, "xy");
	ck_assert_int_eq(fi_eq_readerr(eq, &err, FI_PEEK), -FI_EAGAIN);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

/* FI_CONNREQ: a struct fi_eq_cm_entry plus CM data; a buffer one byte too
 * small gets -FI_ETOOSMALL and the event stays for a bigger one. */
START_TEST(eq_connreq_toosmall)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE, 0);
	struct fi_info *info = fi_allocinfo();
	uint8_t in[sizeof(struct fi_eq_cm_entry) + 20], out[sizeof(in) + 8];
	struct fi_eq_cm_entry cm = {.fid = (fid_t)0x9e9, .info = info}, got;
	uint32_t ev = 0;
	unsigned i;

	ck_assert_ptr_nonnull(info);
	memcpy(in, &cm, sizeof(cm));
	for (i = 0; i < 20; i++)
		in[sizeof(cm) + i] = (uint8_t)(0x40 + i);
	ck_assert_int_eq(dr_eq_push(dr_eq_of(eq), FI_CONNREQ, in, sizeof(in)), 0);
	ck_assert_int_eq(fi_eq_read(eq, &ev, out, sizeof(in) - 1, 0), -FI_ETOOSMALL);
	ck_assert_int_eq(fi_eq_read(eq, &ev, out, sizeof(struct fi_eq_cm_entry), 0), -FI_ETOOSMALL);
	ck_assert_int_eq(fi_eq_read(eq, &ev, NULL, 0, 0), -FI_ETOOSMALL);
	ck_assert_int_eq(fi_eq_read(eq, &ev, out, sizeof(out), 0), sizeof(in));
	ck_assert_int_eq(ev, FI_CONNREQ);
	ck_assert_mem_eq(out, in, sizeof(in));
	memcpy(&got, out, sizeof(got));
	ck_assert_ptr_eq(got.info, info);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
	fi_freeinfo(got.info); /* the reader's now (valgrind: not freed twice) */
}
END_TEST

/* Closing an EQ frees the fi_info of FI_CONNREQ events nobody read (also
 * one only peeked at); valgrind says whether anything leaks. */
START_TEST(eq_close_frees_connreq)
{
	struct fid_eq *eq = eq_open(FI_WAIT_FD, 0);
	struct fi_eq_cm_entry cm = {.fid = (fid_t)0x1}, out;
	uint32_t ev;

	cm.info = fi_allocinfo();
	ck_assert_int_eq(dr_eq_push(dr_eq_of(eq), FI_CONNREQ, &cm, sizeof(cm)), 0);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), FI_PEEK), sizeof(cm));
	cm.info = fi_allocinfo();
	ck_assert_int_eq(dr_eq_push(dr_eq_of(eq), FI_CONNREQ, &cm, sizeof(cm)), 0);
	ck_assert_int_eq(dr_eq_push_err(dr_eq_of(eq), NULL, NULL, 0, FI_EIO, 0, "e", 2), 0);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

START_TEST(eq_close_busy)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE, 0);
	struct fi_eq_err_entry err = {0};

	/* provider err_data handed out, then the EQ closed: freed with it */
	ck_assert_int_eq(dr_eq_push_err(dr_eq_of(eq), NULL, NULL, 0, FI_EIO, 0, "e", 2), 0);
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), sizeof(err));
	dr_eq_of(eq)->ref = 1; /* as a bound pep or ep holds it */
	ck_assert_int_eq(fi_close(&eq->fid), -FI_EBUSY);
	ck_assert_int_eq(tfab.ref, 1);
	dr_eq_of(eq)->ref = 0;
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

/* err_data: copied when the application (API >= 1.5) gives a buffer,
 * provider-owned otherwise (fi_eq(3) "fi_eq_readerr"). */
/* the API version, the application's err_data_size, whether the provider
 * copies into the buffer, and the err_data_size it reports */
struct err_data_case {
	uint32_t api;
	size_t user_size;
	bool copied;
	size_t out_size;
};

static const struct err_data_case eq_err_data_cases[] = {
    {FI_VERSION(1, 17), 0, false, 11},
    {FI_VERSION(1, 17), 4, true, 4}, /* cut to the buffer */
    {FI_VERSION(1, 17), 11, true, 11},
    {FI_VERSION(1, 17), 64, true, 11}, /* what was copied */
    {FI_VERSION(1, 5), 64, true, 11},
    {FI_VERSION(1, 4), 64, false, 11}, /* before 1.5: ignored on input */
    {FI_VERSION(1, 4), 0, false, 11},
};

START_TEST(eq_err_data)
{
	const char ed[11] = "0123456789";
	char user[64];
	struct fid_eq *eq;
	struct fi_eq_err_entry err;

	set_api(eq_err_data_cases[_i].api);
	eq = eq_open(FI_WAIT_NONE, 0);
	ck_assert_int_eq(dr_eq_push_err(dr_eq_of(eq), NULL, NULL, 0, FI_EIO, 5, ed, sizeof(ed)), 0);
	memset(user, '#', sizeof(user));
	memset(&err, 0, sizeof(err));
	err.err_data = user;
	err.err_data_size = eq_err_data_cases[_i].user_size;
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), sizeof(err));
	ck_assert_int_eq(err.err_data_size, eq_err_data_cases[_i].out_size);
	ck_assert_mem_eq(err.err_data, ed, err.err_data_size);
	if (eq_err_data_cases[_i].copied) {
		ck_assert_ptr_eq(err.err_data, user);
		ck_assert_int_eq(user[err.err_data_size], '#'); /* not one byte more */
	} else {
		ck_assert_ptr_ne(err.err_data, user);
		ck_assert_int_eq(user[0], '#');
	}
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

START_TEST(eq_write)
{
	struct fid_eq *ro = eq_open(FI_WAIT_NONE, 0);
	struct fid_eq *eq = eq_open(FI_WAIT_NONE, FI_WRITE);
	struct fi_eq_entry in = {.fid = (fid_t)0x3, .context = (void *)0x4, .data = 5}, out;
	uint32_t ev = 0;

	ck_assert_int_eq(fi_eq_write(ro, FI_NOTIFY, &in, sizeof(in), 0), -FI_ENOSYS);
	ck_assert_int_eq(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), FI_PEEK), -FI_EINVAL);
	ck_assert_int_eq(fi_eq_write(eq, FI_NOTIFY, NULL, sizeof(in), 0), -FI_EINVAL);
	ck_assert_int_eq(fi_eq_write(eq, FI_NOTIFY, &in, 0, 0), -FI_EINVAL);
	ck_assert_int_eq(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0), sizeof(in));
	ck_assert_int_eq(fi_eq_write(eq, FI_MR_COMPLETE, &in, 8, 0), 8);
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), sizeof(in));
	ck_assert_int_eq(ev, FI_NOTIFY);
	ck_assert_mem_eq(&out, &in, sizeof(in));
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), 8);
	ck_assert_int_eq(ev, FI_MR_COMPLETE);
	ck_assert_int_eq(fi_close(&ro->fid), 0);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

/* The wait fd is readable exactly while events are queued. */
START_TEST(eq_fd)
{
	struct fid_eq *eq = eq_open(FI_WAIT_FD, 0);
	struct fid_eq *none = eq_open(FI_WAIT_NONE, 0);
	struct fi_eq_cm_entry a = {0}, out;
	struct fi_eq_err_entry err = {0};
	enum fi_wait_obj wo = FI_WAIT_NONE;
	int fd = get_fd(&eq->fid), dummy;
	uint32_t ev;

	ck_assert_int_eq(fi_control(&eq->fid, FI_GETWAITOBJ, &wo), 0);
	ck_assert_int_eq(wo, FI_WAIT_FD);
	ck_assert_int_eq(fi_control(&eq->fid, FI_GETOPSFLAG, &dummy), -FI_ENOSYS);
	ck_assert_int_eq(fi_control(&none->fid, FI_GETWAIT, &dummy), -FI_ENODATA);
	ck_assert_int_eq(fi_control(&none->fid, FI_GETWAITOBJ, &wo), -FI_ENODATA);

	ck_assert(!readable(fd));
	ck_assert_int_eq(dr_eq_push(dr_eq_of(eq), FI_CONNECTED, &a, sizeof(a)), 0);
	ck_assert(readable(fd));
	ck_assert_int_eq(dr_eq_push_err(dr_eq_of(eq), NULL, NULL, 0, FI_EIO, 0, NULL, 0), 0);
	ck_assert(readable(fd));
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), FI_PEEK), sizeof(out));
	ck_assert(readable(fd));
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), sizeof(out));
	ck_assert(readable(fd)); /* the error is still queued */
	ck_assert_int_eq(fi_eq_readerr(eq, &err, 0), sizeof(err));
	ck_assert(!readable(fd));
	ck_assert_int_eq(fi_eq_read(eq, &ev, &out, sizeof(out), 0), -FI_EAGAIN);
	ck_assert(!readable(fd));
	ck_assert_int_eq(dr_eq_push(dr_eq_of(eq), FI_SHUTDOWN, &a, sizeof(a)), 0);
	ck_assert(readable(fd));
	ck_assert_int_eq(fi_close(&eq->fid), 0);
	ck_assert_int_eq(fi_close(&none->fid), 0);
}
END_TEST

START_TEST(eq_sread_progress)
{
	struct fid_eq *eq = eq_open(FI_WAIT_UNSPEC, 0);
	struct fi_eq_cm_entry out;
	uint32_t ev = 0;

	fake.act = FAKE_EQ_PUSH;
	fake.at = 5;
	ck_assert_int_eq(fi_eq_sread(eq, &ev, &out, sizeof(out), -1, 0), sizeof(out));
	ck_assert_int_eq(ev, FI_CONNECTED);
	ck_assert_ptr_eq(out.fid, (fid_t)0x1234);
	ck_assert_int_eq(fake.calls, 5);
	/* an error at the head ends an sread too */
	fake.calls = 0;
	fake.act = FAKE_EQ_ERR;
	fake.at = 3;
	ck_assert_int_eq(fi_eq_sread(eq, &ev, &out, sizeof(out), 1000, 0), -FI_EAVAIL);
	ck_assert_int_eq(fake.calls, 3);
	ck_assert_int_eq(fi_eq_sread(eq, &ev, &out, sizeof(out), 1000, FI_SEND), -FI_EINVAL);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

START_TEST(eq_sread_timeout)
{
	struct fid_eq *eq = eq_open(FI_WAIT_FD, 0);
	struct fid_eq *none = eq_open(FI_WAIT_NONE, 0);
	struct fi_eq_cm_entry out;
	uint64_t t0, ms;
	uint32_t ev;

	ck_assert_int_eq(fi_eq_sread(none, &ev, &out, sizeof(out), 10, 0), -FI_ENOSYS);
	ck_assert_int_eq(fake.calls, 0);
	t0 = dr_now_ns();
	ck_assert_int_eq(fi_eq_sread(eq, &ev, &out, sizeof(out), 0, 0), -FI_EAGAIN);
	ck_assert_int_eq(fake.calls, 1);
	t0 = dr_now_ns();
	ck_assert_int_eq(fi_eq_sread(eq, &ev, &out, sizeof(out), TIMEOUT_MS, 0), -FI_EAGAIN);
	ms = ms_since(t0);
	ck_assert_uint_ge(ms, TIMEOUT_MS);
	ck_assert_uint_lt(ms, TIMEOUT_MS + SLACK_MS);
	ck_assert_int_gt(fake.calls, 2); /* progress kept being driven */
	ck_assert_int_eq(fi_close(&eq->fid), 0);
	ck_assert_int_eq(fi_close(&none->fid), 0);
}
END_TEST

struct thread_arg {
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	int after; /* act once progress has run this often */
};

static void wait_calls(int n)
{
	while (fake_calls() < n)
		sched_yield();
}

static void *eq_pusher(void *p)
{
	struct thread_arg *a = p;
	struct fi_eq_cm_entry cm = {.fid = (fid_t)0x77};

	wait_calls(a->after);
	ck_assert_int_eq(dr_eq_push(dr_eq_of(a->eq), FI_SHUTDOWN, &cm, sizeof(cm)), 0);
	return NULL;
}

START_TEST(eq_sread_thread)
{
	struct thread_arg a = {.eq = eq_open(FI_WAIT_FD, 0), .after = 3};
	struct fi_eq_cm_entry out;
	pthread_t t;
	uint32_t ev = 0;

	ck_assert_int_eq(pthread_create(&t, NULL, eq_pusher, &a), 0);
	ck_assert_int_eq(fi_eq_sread(a.eq, &ev, &out, sizeof(out), -1, 0), sizeof(out));
	ck_assert_int_eq(ev, FI_SHUTDOWN);
	ck_assert_ptr_eq(out.fid, (fid_t)0x77);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(fi_close(&a.eq->fid), 0);
}
END_TEST

START_TEST(eq_strerror)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE, 0);
	char buf[8];

	ck_assert_str_eq(fi_eq_strerror(eq, DR_WC_REM_ACCESS_ERR, NULL, NULL, 0),
			 "remote access error");
	ck_assert_ptr_eq(fi_eq_strerror(eq, DR_WC_REM_ACCESS_ERR, NULL, buf, sizeof(buf)), buf);
	ck_assert_str_eq(buf, "remote ");
	ck_assert_str_eq(fi_eq_strerror(eq, 1000, NULL, NULL, 0), "unknown provider error");
	ck_assert_str_eq(fi_eq_strerror(eq, -1, NULL, NULL, 0), "unknown provider error");
	ck_assert_int_eq(fi_close(&eq->fid), 0);
}
END_TEST

/* ============================ CQ ============================================ */

static const struct {
	enum fi_cq_format fmt;
	enum fi_wait_obj wait;
	enum fi_cq_wait_cond cond;
	uint64_t flags;
	int ret;
	size_t entry_size;
} cq_open_cases[] = {
    {FI_CQ_FORMAT_UNSPEC, FI_WAIT_NONE, 0, 0, 0, sizeof(struct fi_cq_entry)},
    {FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0, 0, sizeof(struct fi_cq_entry)},
    {FI_CQ_FORMAT_MSG, FI_WAIT_UNSPEC, 0, 0, 0, sizeof(struct fi_cq_msg_entry)},
    {FI_CQ_FORMAT_DATA, FI_WAIT_FD, 0, 0, 0, sizeof(struct fi_cq_data_entry)},
    {FI_CQ_FORMAT_DATA, FI_WAIT_FD, 0, FI_AFFINITY, 0, sizeof(struct fi_cq_data_entry)},
    {FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, 0, -FI_ENOSYS, 0},
    {(enum fi_cq_format)42, FI_WAIT_NONE, 0, 0, -FI_EINVAL, 0},
    {FI_CQ_FORMAT_MSG, FI_WAIT_SET, 0, 0, -FI_ENOSYS, 0},
    {FI_CQ_FORMAT_MSG, FI_WAIT_MUTEX_COND, 0, 0, -FI_ENOSYS, 0},
    {FI_CQ_FORMAT_MSG, FI_WAIT_YIELD, 0, 0, -FI_ENOSYS, 0},
    {FI_CQ_FORMAT_MSG, (enum fi_wait_obj)77, 0, 0, -FI_EINVAL, 0},
    {FI_CQ_FORMAT_MSG, FI_WAIT_FD, FI_CQ_COND_THRESHOLD, 0, -FI_ENOSYS, 0},
    {FI_CQ_FORMAT_MSG, FI_WAIT_FD, (enum fi_cq_wait_cond)9, 0, -FI_EINVAL, 0},
    /* "This field is ignored if wait_obj is set to FI_WAIT_NONE" */
    {FI_CQ_FORMAT_MSG, FI_WAIT_NONE, FI_CQ_COND_THRESHOLD, 0, 0, sizeof(struct fi_cq_msg_entry)},
    {FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0, FI_SEND, -FI_EINVAL, 0},
};

START_TEST(cq_open_args)
{
	struct fi_cq_attr attr = {
	    .format = cq_open_cases[_i].fmt,
	    .wait_obj = cq_open_cases[_i].wait,
	    .wait_cond = cq_open_cases[_i].cond,
	    .flags = cq_open_cases[_i].flags,
	};
	struct fid_cq *cq = NULL;
	int ret = dr_cq_open(&tdom.dom, &attr, &cq, (void *)0x66);

	ck_assert_int_eq(ret, cq_open_cases[_i].ret);
	if (ret)
		return;
	ck_assert_uint_eq(dr_cq_of(cq)->entry_size, cq_open_cases[_i].entry_size);
	check_open_close(&cq->fid, &tdom.ref, FI_CLASS_CQ, (void *)0x66);
}
END_TEST

START_TEST(cq_open_null_attr)
{
	struct fid_cq *cq = NULL;
	struct fi_cq_entry e;

	ck_assert_int_eq(dr_cq_open(&tdom.dom, NULL, &cq, NULL), 0);
	ck_assert_int_eq(dr_cq_of(cq)->format, FI_CQ_FORMAT_CONTEXT);
	push_ok(cq, 1);
	ck_assert_int_eq(fi_cq_read(cq, &e, 1), 1);
	ck_assert_ptr_eq(e.op_context, (void *)0x1001);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

/* Each format's bytes, written out field by field (fi_cq(3) "format"), and
 * not one byte past count entries. */
START_TEST(cq_format_bytes)
{
	static const enum fi_cq_format fmts[] = {FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT,
						 FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA};
	enum fi_cq_format fmt = fmts[_i];
	struct fid_cq *cq = cq_open(fmt, FI_WAIT_NONE, 4);
	uint8_t got[3 * sizeof(struct fi_cq_data_entry)], want[sizeof(got)];
	struct fi_cq_entry ctx[2] = {{(void *)0x1001}, {(void *)0x1002}};
	struct fi_cq_msg_entry msg[2] = {
	    {(void *)0x1001, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, 101},
	    {(void *)0x1002, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, 102},
	};
	struct fi_cq_data_entry data[2] = {
	    {(void *)0x1001, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, 101, (void *)0x2001, 0xabcd0001},
	    {(void *)0x1002, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, 102, (void *)0x2002, 0xabcd0002},
	};
	size_t size;

	ck_assert_uint_eq(sizeof(struct fi_cq_entry), 8);
	ck_assert_uint_eq(sizeof(struct fi_cq_msg_entry), 24);
	ck_assert_uint_eq(sizeof(struct fi_cq_data_entry), 40);
	memset(want, 0xee, sizeof(want));
	switch (fmt) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
		size = sizeof(ctx[0]);
		memcpy(want, ctx, sizeof(ctx));
		break;
	case FI_CQ_FORMAT_MSG:
		size = sizeof(msg[0]);
		memcpy(want, msg, sizeof(msg));
		break;
	default:
		size = sizeof(data[0]);
		memcpy(want, data, sizeof(data));
		break;
	}
	push_ok(cq, 1);
	push_ok(cq, 2);
	push_ok(cq, 3);
	memset(got, 0xee, sizeof(got));
	ck_assert_int_eq(fi_cq_read(cq, got, 2), 2);
	ck_assert_mem_eq(got, want, sizeof(got));
	ck_assert_uint_eq(dr_cq_of(cq)->entry_size, size);
	ck_assert_int_eq(fi_cq_read(cq, got, 2), 1);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

START_TEST(cq_order_and_errors)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0);
	struct fi_cq_data_entry e[8];
	struct fi_cq_err_entry err;

	ck_assert_int_eq(fi_cq_read(cq, e, 8), -FI_EAGAIN);
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	push_ok(cq, 0);
	push_ok(cq, 1);
	push_err(cq, 2, DR_WC_REM_ACCESS_ERR);
	push_ok(cq, 3);
	push_err(cq, 4, DR_WC_WR_FLUSH_ERR);
	push_err(cq, 5, DR_WC_WR_FLUSH_ERR);

	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN); /* a success first */
	ck_assert_int_eq(fi_cq_read(cq, e, 8), 2);		  /* stops before the error */
	ck_assert_ptr_eq(e[0].op_context, (void *)0x1000);
	ck_assert_ptr_eq(e[1].op_context, (void *)0x1001);
	ck_assert_int_eq(fi_cq_read(cq, e, 8), -FI_EAVAIL);
	memset(&err, 0x5a, sizeof(err));
	err.err_data_size = 0;
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, (void *)0x1002);
	ck_assert_uint_eq(err.flags, FI_SEND | FI_MSG);
	ck_assert_uint_eq(err.len, 102);
	ck_assert_ptr_eq(err.buf, (void *)0x2002);
	ck_assert_uint_eq(err.data, 0xabcd0002);
	ck_assert_uint_eq(err.tag, 0);
	ck_assert_uint_eq(err.olen, 9);
	ck_assert_int_eq(err.err, FI_EIO);
	ck_assert_int_eq(err.prov_errno, DR_WC_REM_ACCESS_ERR);
	ck_assert_str_eq(err.err_data, "remote access error (IB status 10)");
	ck_assert_uint_eq(err.err_data_size, strlen("remote access error (IB status 10)") + 1);
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	ck_assert_int_eq(fi_cq_read(cq, e, 8), 1);
	ck_assert_ptr_eq(e[0].op_context, (void *)0x1003);
	ck_assert_int_eq(fi_cq_read(cq, e, 8), -FI_EAVAIL);
	err.err_data_size = 0;
	ck_assert_int_eq(fi_cq_readerr(cq, &err, FI_PEEK), 1);
	ck_assert_ptr_eq(err.op_context, (void *)0x1004);
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, (void *)0x1004);
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, (void *)0x1005);
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	ck_assert_int_eq(fi_cq_read(cq, e, 8), -FI_EAGAIN);
	ck_assert_int_eq(fi_cq_readerr(cq, &err, FI_SEND), -FI_EINVAL);
	ck_assert_int_eq(fi_cq_readerr(cq, NULL, 0), -FI_EINVAL);
	ck_assert_int_eq(fi_cq_read(cq, NULL, 1), -FI_EINVAL);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

START_TEST(cq_count0_and_readfrom)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0);
	struct fi_cq_msg_entry e[4];
	fi_addr_t src[4] = {1, 2, 3, 4};

	/* count 0 drives progress and says what is there */
	ck_assert_int_eq(fi_cq_read(cq, NULL, 0), -FI_EAGAIN);
	ck_assert_int_eq(fake.calls, 1);
	push_ok(cq, 0);
	ck_assert_int_eq(fi_cq_read(cq, NULL, 0), 0);
	ck_assert_int_eq(fake.calls, 2);
	push_ok(cq, 1);
	push_err(cq, 2, DR_WC_RETRY_EXC_ERR);
	ck_assert_int_eq(fi_cq_readfrom(cq, e, 4, src), 2);
	ck_assert_uint_eq(src[0], FI_ADDR_NOTAVAIL);
	ck_assert_uint_eq(src[1], FI_ADDR_NOTAVAIL);
	ck_assert_uint_eq(src[2], 3); /* only the entries returned */
	ck_assert_int_eq(fi_cq_read(cq, NULL, 0), -FI_EAVAIL);
	ck_assert_int_eq(fi_cq_readfrom(cq, e, 4, src), -FI_EAVAIL);
	ck_assert_int_eq(fake.calls, 5);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

/* err_data for every IB status: a string naming it, with the number
 * libibverbs gives the same failure (enum ibv_wc_status). */
static const struct {
	int prov_errno;
	const char *str; /* NULL: no err_data */
} cq_status_cases[] = {
    {DR_WC_SUCCESS, NULL}, /* e.g. a cancel: no IB failure */
    {DR_WC_LOC_LEN_ERR, "local length error (IB status 1)"},
    {DR_WC_LOC_PROT_ERR, "local protection error (IB status 4)"},
    {DR_WC_WR_FLUSH_ERR, "flushed (IB status 5)"},
    {DR_WC_REM_INV_REQ_ERR, "remote invalid request (IB status 9)"},
    {DR_WC_REM_ACCESS_ERR, "remote access error (IB status 10)"},
    {DR_WC_REM_OP_ERR, "remote operational error (IB status 11)"},
    {DR_WC_RETRY_EXC_ERR, "transport retry counter exceeded (IB status 12)"},
    {DR_WC_RNR_RETRY_EXC_ERR, "RNR retry counter exceeded (IB status 13)"},
    {DR_WC_STATUS_NUM, NULL},
    {-3, NULL},
};

START_TEST(cq_err_data_status)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	const char *want = cq_status_cases[_i].str;
	struct fi_cq_err_entry err;
	char user[64];

	ck_assert_int_eq(DR_WC_STATUS_NUM, 9); /* a new status needs a line above */
	push_err(cq, 0, cq_status_cases[_i].prov_errno);
	push_err(cq, 1, cq_status_cases[_i].prov_errno);
	/* provider-owned */
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), 1);
	if (want) {
		ck_assert_str_eq(err.err_data, want);
		ck_assert_uint_eq(err.err_data_size, strlen(want) + 1);
	} else {
		ck_assert_ptr_null(err.err_data);
		ck_assert_uint_eq(err.err_data_size, 0);
	}
	/* copied */
	memset(user, '#', sizeof(user));
	err.err_data = user;
	err.err_data_size = sizeof(user);
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), 1);
	ck_assert_ptr_eq(err.err_data, user);
	if (want) {
		ck_assert_str_eq(user, want);
		ck_assert_uint_eq(err.err_data_size, strlen(want) + 1);
	} else {
		ck_assert_uint_eq(err.err_data_size, 0);
		ck_assert_int_eq(user[0], '#');
	}
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

static const struct err_data_case cq_err_data_cases[] = {
    {FI_VERSION(1, 17), 0, false, 35},
    {FI_VERSION(1, 17), 8, true, 8}, /* cut, and then without its NUL */
    {FI_VERSION(1, 17), 35, true, 35},
    {FI_VERSION(1, 17), 200, true, 35},
    {FI_VERSION(1, 5), 200, true, 35},
    {FI_VERSION(1, 4), 200, false, 35}, /* before 1.5: ignored on input */
};

START_TEST(cq_err_data)
{
	static const char want[] = "remote access error (IB status 10)";
	struct fi_cq_err_entry err;
	char user[256];
	struct fid_cq *cq;

	ck_assert_uint_eq(sizeof(want), 35);
	set_api(cq_err_data_cases[_i].api);
	cq = cq_open(FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0);
	push_err(cq, 0, DR_WC_REM_ACCESS_ERR);
	memset(user, '#', sizeof(user));
	memset(&err, 0, sizeof(err));
	err.err_data = user;
	err.err_data_size = cq_err_data_cases[_i].user_size;
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), 1);
	ck_assert_uint_eq(err.err_data_size, cq_err_data_cases[_i].out_size);
	ck_assert_mem_eq(err.err_data, want, err.err_data_size);
	if (cq_err_data_cases[_i].copied) {
		ck_assert_ptr_eq(err.err_data, user);
		ck_assert_int_eq(user[err.err_data_size], '#');
	} else {
		ck_assert_ptr_ne(err.err_data, user);
		ck_assert_int_eq(user[0], '#');
	}
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

/* Ten times the size hint, with the ring wrapped when it has to grow:
 * everything comes out, in order. */
START_TEST(cq_grow)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 16);
	struct fi_cq_entry e[7];
	unsigned pushed = 0, next = 0;
	ssize_t n;
	int i;

	ck_assert_uint_eq(dr_cq_of(cq)->size, 16);
	for (; pushed < 10; pushed++)
		push_ok(cq, pushed);
	ck_assert_int_eq(fi_cq_read(cq, e, 5), 5);
	for (i = 0; i < 5; i++)
		ck_assert_ptr_eq(e[i].op_context, (void *)(uintptr_t)(0x1000 + next++));
	for (; pushed < 165; pushed++) {
		if (pushed == 100)
			push_err(cq, pushed, DR_WC_REM_OP_ERR);
		else
			push_ok(cq, pushed);
	}
	ck_assert_uint_ge(dr_cq_of(cq)->size, 160);
	ck_assert_uint_eq(dr_cq_of(cq)->count, 160);
	while ((n = fi_cq_read(cq, e, 7)) != -FI_EAGAIN) {
		struct fi_cq_err_entry err = {0};

		if (n == -FI_EAVAIL) {
			ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), 1);
			ck_assert_ptr_eq(err.op_context, (void *)(uintptr_t)(0x1000 + next++));
			ck_assert_uint_eq(next, 101);
			continue;
		}
		ck_assert_int_gt(n, 0);
		for (i = 0; i < n; i++)
			ck_assert_ptr_eq(e[i].op_context, (void *)(uintptr_t)(0x1000 + next++));
	}
	ck_assert_uint_eq(next, pushed);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

/* The fd is readable while completions are queued, and while an
 * fi_cq_signal waits for the sread it wakes. */
START_TEST(cq_fd)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_MSG, FI_WAIT_FD, 0);
	struct fid_cq *none = cq_open(FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0);
	struct fi_cq_msg_entry e[4];
	struct fi_cq_err_entry err = {0};
	int fd = get_fd(&cq->fid), dummy;
	uint64_t t0;

	ck_assert_int_eq(fi_control(&none->fid, FI_GETWAIT, &dummy), -FI_ENODATA);
	ck_assert_int_eq(fi_control(&cq->fid, FI_ENABLE, NULL), -FI_ENOSYS);
	ck_assert(!readable(fd));
	push_ok(cq, 0);
	ck_assert(readable(fd));
	push_err(cq, 1, DR_WC_LOC_LEN_ERR);
	ck_assert_int_eq(fi_cq_read(cq, e, 4), 1);
	ck_assert(readable(fd));
	ck_assert_int_eq(fi_cq_readerr(cq, &err, 0), 1);
	ck_assert(!readable(fd));
	ck_assert_int_eq(fi_cq_read(cq, e, 4), -FI_EAGAIN);
	ck_assert(!readable(fd));

	/* a signal with nobody waiting is kept for the next sread */
	ck_assert_int_eq(fi_cq_signal(cq), 0);
	ck_assert(readable(fd));
	ck_assert_int_eq(fi_cq_read(cq, e, 4), -FI_EAGAIN); /* not a read's */
	ck_assert(readable(fd));
	t0 = dr_now_ns();
	ck_assert_int_eq(fi_cq_sread(cq, e, 4, NULL, -1), -FI_EAGAIN);
	ck_assert_uint_lt(ms_since(t0), SLACK_MS);
	ck_assert(!readable(fd));
	/* a signal pending while completions are there: those are returned */
	ck_assert_int_eq(fi_cq_signal(cq), 0);
	push_ok(cq, 2);
	ck_assert_int_eq(fi_cq_sread(cq, e, 4, NULL, -1), 1);
	ck_assert(readable(fd)); /* the signal is still pending */
	ck_assert_int_eq(fi_cq_sread(cq, e, 4, NULL, -1), -FI_EAGAIN);
	ck_assert(!readable(fd));
	ck_assert_int_eq(fi_close(&cq->fid), 0);
	ck_assert_int_eq(fi_close(&none->fid), 0);
}
END_TEST

START_TEST(cq_sread_args)
{
	struct fid_cq *none = cq_open(FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0);
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_MSG, FI_WAIT_UNSPEC, 0);
	struct fi_cq_msg_entry e[2];
	fi_addr_t src[2];
	size_t threshold = 1;

	ck_assert_int_eq(fi_cq_sread(none, e, 2, NULL, 10), -FI_ENOSYS);
	ck_assert_int_eq(fi_cq_sreadfrom(none, e, 2, src, NULL, 10), -FI_ENOSYS);
	ck_assert_int_eq(fi_cq_signal(none), -FI_ENOSYS);
	ck_assert_int_eq(fi_cq_sread(cq, e, 2, &threshold, 10), -FI_EINVAL);
	ck_assert_int_eq(fi_cq_sread(cq, NULL, 2, NULL, 10), -FI_EINVAL);
	ck_assert_int_eq(fake.calls, 0);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
	ck_assert_int_eq(fi_close(&none->fid), 0);
}
END_TEST

START_TEST(cq_sread_progress)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_DATA, FI_WAIT_FD, 0);
	struct fi_cq_data_entry e[4];
	fi_addr_t src[4];

	fake.act = FAKE_CQ_PUSH;
	fake.ent = ok_ent(9);
	fake.at = 6;
	ck_assert_int_eq(fi_cq_sreadfrom(cq, e, 4, src, NULL, -1), 1);
	ck_assert_int_eq(fake.calls, 6);
	ck_assert_ptr_eq(e[0].op_context, (void *)0x1009);
	ck_assert_uint_eq(src[0], FI_ADDR_NOTAVAIL);
	/* an error completion ends an sread with -FI_EAVAIL */
	fake.calls = 0;
	fake.ent = err_ent(3, FI_ECANCELED, DR_WC_WR_FLUSH_ERR);
	fake.at = 2;
	ck_assert_int_eq(fi_cq_sread(cq, e, 4, NULL, 1000), -FI_EAVAIL);
	ck_assert_int_eq(fake.calls, 2);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

START_TEST(cq_sread_timeout)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_DATA, FI_WAIT_FD, 0);
	struct fi_cq_data_entry e[4];
	uint64_t t0, ms;

	ck_assert_int_eq(fi_cq_sread(cq, e, 4, NULL, 0), -FI_EAGAIN);
	ck_assert_int_eq(fake.calls, 1);
	t0 = dr_now_ns();
	ck_assert_int_eq(fi_cq_sread(cq, e, 4, NULL, TIMEOUT_MS), -FI_EAGAIN);
	ms = ms_since(t0);
	ck_assert_uint_ge(ms, TIMEOUT_MS);
	ck_assert_uint_lt(ms, TIMEOUT_MS + SLACK_MS);
	ck_assert_int_gt(fake.calls, 2);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

static void *cq_signaller(void *p)
{
	struct thread_arg *a = p;

	wait_calls(a->after);
	ck_assert_int_eq(fi_cq_signal(a->cq), 0);
	return NULL;
}

static void *cq_pusher(void *p)
{
	struct thread_arg *a = p;

	wait_calls(a->after);
	push_ok(a->cq, 42);
	return NULL;
}

START_TEST(cq_sread_woken)
{
	struct thread_arg a = {.cq = cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 0), .after = 3};
	struct fi_cq_entry e;
	pthread_t t;

	/* by fi_cq_signal: -FI_EAGAIN, fi_cq(3) "RETURN VALUES" */
	ck_assert_int_eq(pthread_create(&t, NULL, cq_signaller, &a), 0);
	ck_assert_int_eq(fi_cq_sread(a.cq, &e, 1, NULL, -1), -FI_EAGAIN);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* by a completion pushed from another thread */
	a.after = fake_calls() + 3;
	ck_assert_int_eq(pthread_create(&t, NULL, cq_pusher, &a), 0);
	ck_assert_int_eq(fi_cq_sread(a.cq, &e, 1, NULL, -1), 1);
	ck_assert_ptr_eq(e.op_context, (void *)(0x1000 + 42));
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(fi_close(&a.cq->fid), 0);
}
END_TEST

/* FI_THREAD_SAFE: producers and a consumer at once; nothing lost, each
 * producer's completions in its order. */
#define STRESS_N 20000

static void *stress_producer(void *p)
{
	struct thread_arg *a = p;
	unsigned i;

	for (i = 0; i < STRESS_N; i++) {
		struct dr_cq_ent e = {.op_context = (void *)(uintptr_t)((a->after << 24) | i)};

		ck_assert_int_eq(dr_cq_push(dr_cq_of(a->cq), &e), 0);
	}
	return NULL;
}

START_TEST(cq_threads)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 8);
	struct thread_arg a[2] = {{.cq = cq, .after = 1}, {.cq = cq, .after = 2}};
	unsigned next[3] = {0}, got = 0;
	struct fi_cq_entry e[16];
	pthread_t t[2];
	ssize_t n, i;

	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, stress_producer, &a[i]), 0);
	while (got < 2 * STRESS_N) {
		n = fi_cq_sread(cq, e, 16, NULL, 2000);
		ck_assert_int_gt(n, 0);
		for (i = 0; i < n; i++) {
			uintptr_t v = (uintptr_t)e[i].op_context;

			ck_assert_uint_eq(v & 0xffffff, next[v >> 24]++);
		}
		got += n;
	}
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_int_eq(fi_cq_read(cq, e, 16), -FI_EAGAIN);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

START_TEST(cq_close_busy)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, 0);

	push_ok(cq, 1); /* completions never read are freed with the CQ */
	dr_cq_of(cq)->ref = 2;
	ck_assert_int_eq(fi_close(&cq->fid), -FI_EBUSY);
	ck_assert_int_eq(tdom.ref, 1);
	dr_cq_of(cq)->ref = 0;
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

START_TEST(cq_strerror)
{
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	char buf[12];

	ck_assert_str_eq(fi_cq_strerror(cq, DR_WC_RNR_RETRY_EXC_ERR, NULL, NULL, 0),
			 "RNR retry counter exceeded");
	ck_assert_ptr_eq(fi_cq_strerror(cq, DR_WC_WR_FLUSH_ERR, "x", buf, sizeof(buf)), buf);
	ck_assert_str_eq(buf, "flushed");
	ck_assert_ptr_eq(fi_cq_strerror(cq, DR_WC_REM_OP_ERR, NULL, buf, sizeof(buf)), buf);
	ck_assert_str_eq(buf, "remote oper");
	ck_assert_str_eq(fi_cq_strerror(cq, 99, NULL, NULL, 0), "unknown provider error");
	ck_assert_str_eq(dr_prov_strerror(DR_WC_SUCCESS), "success");
	ck_assert_int_eq(fi_close(&cq->fid), 0);
}
END_TEST

/* ============================ counters ====================================== */

static const struct {
	enum fi_cntr_events events;
	enum fi_wait_obj wait;
	uint64_t flags;
	int ret;
} cntr_open_cases[] = {
    {FI_CNTR_EVENTS_COMP, FI_WAIT_NONE, 0, 0},
    {FI_CNTR_EVENTS_COMP, FI_WAIT_UNSPEC, 0, 0},
    {FI_CNTR_EVENTS_COMP, FI_WAIT_FD, 0, 0},
    {(enum fi_cntr_events)1, FI_WAIT_NONE, 0, -FI_ENOSYS},
    {FI_CNTR_EVENTS_COMP, FI_WAIT_SET, 0, -FI_ENOSYS},
    {FI_CNTR_EVENTS_COMP, FI_WAIT_MUTEX_COND, 0, -FI_ENOSYS},
    {FI_CNTR_EVENTS_COMP, FI_WAIT_YIELD, 0, -FI_ENOSYS},
    {FI_CNTR_EVENTS_COMP, (enum fi_wait_obj) - 1, 0, -FI_EINVAL},
    {FI_CNTR_EVENTS_COMP, FI_WAIT_NONE, 1, -FI_EINVAL}, /* "must be set to 0" */
};

START_TEST(cntr_open_args)
{
	struct fi_cntr_attr attr = {
	    .events = cntr_open_cases[_i].events,
	    .wait_obj = cntr_open_cases[_i].wait,
	    .flags = cntr_open_cases[_i].flags,
	};
	struct fid_cntr *c = NULL;
	int ret = dr_cntr_open(&tdom.dom, &attr, &c, (void *)0x55);

	ck_assert_int_eq(ret, cntr_open_cases[_i].ret);
	if (ret)
		return;
	check_open_close(&c->fid, &tdom.ref, FI_CLASS_CNTR, (void *)0x55);
}
END_TEST

START_TEST(cntr_values)
{
	struct fid_cntr *c = cntr_open(FI_WAIT_NONE);
	struct fid_cntr *d = NULL;

	ck_assert_uint_eq(fi_cntr_read(c), 0);
	ck_assert_uint_eq(fi_cntr_readerr(c), 0);
	ck_assert_int_eq(fake.calls, 2); /* reads drive progress */
	ck_assert_int_eq(fi_cntr_add(c, 5), 0);
	ck_assert_int_eq(fi_cntr_add(c, 7), 0);
	ck_assert_uint_eq(fi_cntr_read(c), 12);
	ck_assert_int_eq(fi_cntr_set(c, 3), 0);
	ck_assert_uint_eq(fi_cntr_read(c), 3);
	dr_cntr_inc(dr_cntr_of(c));
	ck_assert_uint_eq(fi_cntr_read(c), 4);
	ck_assert_int_eq(fi_cntr_adderr(c, 2), 0);
	dr_cntr_inc_err(dr_cntr_of(c));
	ck_assert_uint_eq(fi_cntr_readerr(c), 3);
	ck_assert_int_eq(fi_cntr_seterr(c, 0), 0);
	ck_assert_uint_eq(fi_cntr_readerr(c), 0);
	ck_assert_uint_eq(fi_cntr_read(c), 4);
	ck_assert_int_eq(fi_cntr_set(c, UINT64_MAX), 0);
	ck_assert_uint_eq(fi_cntr_read(c), UINT64_MAX);
	ck_assert_int_eq(dr_cntr_open(&tdom.dom, NULL, &d, NULL), 0); /* defaults */
	ck_assert_int_eq(fi_close(&d->fid), 0);
	ck_assert_int_eq(fi_close(&c->fid), 0);
}
END_TEST

START_TEST(cntr_wait_progress)
{
	struct fid_cntr *c = cntr_open(FI_WAIT_UNSPEC);

	ck_assert_int_eq(fi_cntr_wait(c, 0, 0), 0); /* already there */
	fake.act = FAKE_CNTR_INC;
	fake.at = 1;
	fake.every = true;
	ck_assert_int_eq(fi_cntr_wait(c, 5, -1), 0);
	ck_assert_int_eq(fake.calls, 6); /* 1 + one progress per increment */
	ck_assert_uint_eq(dr_cntr_of(c)->value, 5);
	ck_assert_int_eq(fi_close(&c->fid), 0);
}
END_TEST

/* FI_WAIT_NONE: fi_cntr_wait polls progress instead of refusing. */
START_TEST(cntr_wait_none)
{
	struct fid_cntr *c = cntr_open(FI_WAIT_NONE);
	uint64_t t0, ms;

	fake.act = FAKE_CNTR_INC;
	fake.at = 4;
	ck_assert_int_eq(fi_cntr_wait(c, 1, -1), 0);
	ck_assert_int_eq(fake.calls, 4);
	t0 = dr_now_ns();
	ck_assert_int_eq(fi_cntr_wait(c, 2, TIMEOUT_MS), -FI_ETIMEDOUT);
	ms = ms_since(t0);
	ck_assert_uint_ge(ms, TIMEOUT_MS);
	ck_assert_uint_lt(ms, TIMEOUT_MS + SLACK_MS);
	ck_assert_int_eq(fi_close(&c->fid), 0);
}
END_TEST

START_TEST(cntr_wait_err)
{
	struct fid_cntr *c = cntr_open(FI_WAIT_FD);

	ck_assert_int_eq(fi_cntr_adderr(c, 4), 0); /* before the wait: no matter */
	fake.act = FAKE_CNTR_ERR;
	fake.at = 3;
	ck_assert_int_eq(fi_cntr_wait(c, 1, -1), -FI_EAVAIL);
	ck_assert_int_eq(fake.calls, 3);
	ck_assert_uint_eq(fi_cntr_readerr(c), 5);
	ck_assert_int_eq(fi_close(&c->fid), 0);
}
END_TEST

START_TEST(cntr_wait_timeout)
{
	struct fid_cntr *c = cntr_open(FI_WAIT_FD);
	uint64_t t0, ms;

	ck_assert_int_eq(fi_cntr_add(c, 1), 0);
	ck_assert_int_eq(fi_cntr_wait(c, 2, 0), -FI_ETIMEDOUT);
	t0 = dr_now_ns();
	ck_assert_int_eq(fi_cntr_wait(c, 2, TIMEOUT_MS), -FI_ETIMEDOUT);
	ms = ms_since(t0);
	ck_assert_uint_ge(ms, TIMEOUT_MS);
	ck_assert_uint_lt(ms, TIMEOUT_MS + SLACK_MS);
	ck_assert_uint_eq(fi_cntr_readerr(c), 0); /* "remains unchanged" */
	ck_assert_uint_eq(fi_cntr_read(c), 1);
	ck_assert_int_eq(fi_close(&c->fid), 0);
}
END_TEST

static void *cntr_adder(void *p)
{
	struct thread_arg *a = p;

	wait_calls(a->after);
	ck_assert_int_eq(fi_cntr_add(a->cntr, 10), 0);
	return NULL;
}

START_TEST(cntr_wait_thread)
{
	struct thread_arg a = {.cntr = cntr_open(FI_WAIT_FD), .after = 3};
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, cntr_adder, &a), 0);
	ck_assert_int_eq(fi_cntr_wait(a.cntr, 10, -1), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(fi_close(&a.cntr->fid), 0);
}
END_TEST

/* The fd becomes readable on a change, until the next read or wait. */
START_TEST(cntr_fd)
{
	struct fid_cntr *c = cntr_open(FI_WAIT_FD);
	struct fid_cntr *none = cntr_open(FI_WAIT_NONE);
	int fd = get_fd(&c->fid), dummy;

	ck_assert_int_eq(fi_control(&none->fid, FI_GETWAIT, &dummy), -FI_ENODATA);
	ck_assert(!readable(fd));
	ck_assert_int_eq(fi_cntr_add(c, 1), 0);
	ck_assert(readable(fd));
	ck_assert_uint_eq(fi_cntr_read(c), 1);
	ck_assert(!readable(fd));
	dr_cntr_inc_err(dr_cntr_of(c));
	ck_assert(readable(fd));
	ck_assert_uint_eq(fi_cntr_readerr(c), 1);
	ck_assert(!readable(fd));
	ck_assert_int_eq(fi_cntr_set(c, 9), 0);
	ck_assert(readable(fd));
	ck_assert_int_eq(fi_cntr_wait(c, 9, 0), 0);
	ck_assert(!readable(fd));
	ck_assert_int_eq(fi_close(&c->fid), 0);
	ck_assert_int_eq(fi_close(&none->fid), 0);
}
END_TEST

START_TEST(cntr_close_busy)
{
	struct fid_cntr *c = cntr_open(FI_WAIT_NONE);

	dr_cntr_of(c)->ref = 1;
	ck_assert_int_eq(fi_close(&c->fid), -FI_EBUSY);
	ck_assert_int_eq(tdom.ref, 1);
	dr_cntr_of(c)->ref = 0;
	ck_assert_int_eq(fi_close(&c->fid), 0);
}
END_TEST

/* ============================ wait and stubs ================================ */

START_TEST(wait_block)
{
	struct dr_wait w;
	uint64_t t0, ms;

	ck_assert_int_eq(dr_wait_init(&w, FI_WAIT_FD), 0);
	t0 = dr_now_ns();
	dr_wait_block(&w, TIMEOUT_MS);
	ms = ms_since(t0);
	ck_assert_uint_ge(ms, TIMEOUT_MS);
	ck_assert_uint_lt(ms, TIMEOUT_MS + SLACK_MS);
	dr_wait_signal(&w);
	dr_wait_signal(&w);
	t0 = dr_now_ns();
	dr_wait_block(&w, -1); /* readable: returns at once */
	ck_assert_uint_lt(ms_since(t0), SLACK_MS);
	ck_assert(readable(w.fd));
	dr_wait_clear(&w);
	ck_assert(!readable(w.fd));
	dr_wait_clear(&w);
	ck_assert(!readable(w.fd));
	dr_wait_fini(&w);
	ck_assert_int_eq(w.fd, -1);

	ck_assert_int_eq(dr_wait_init(&w, FI_WAIT_NONE), 0);
	ck_assert_int_eq(w.fd, -1);
	dr_wait_signal(&w); /* no-ops */
	dr_wait_clear(&w);
	t0 = dr_now_ns();
	dr_wait_block(&w, TIMEOUT_MS);
	ck_assert_uint_ge(ms_since(t0), TIMEOUT_MS);
	dr_wait_fini(&w);
	ck_assert_int_eq(dr_wait_init(&w, FI_WAIT_SET), -FI_ENOSYS);
	ck_assert_int_eq(dr_wait_init(&w, (enum fi_wait_obj)50), -FI_EINVAL);
	ck_assert_uint_eq(dr_deadline_ns(5, -1), UINT64_MAX);
	ck_assert_uint_eq(dr_deadline_ns(5, 2), 2000005);
	ck_assert(!dr_wait_pause(&w, 0, dr_now_ns()));
}
END_TEST

START_TEST(stubs_and_ops)
{
	struct fid_eq *eq = eq_open(FI_WAIT_NONE, 0);
	struct fid_cq *cq = cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0);
	struct fid_cntr *c = cntr_open(FI_WAIT_NONE);
	struct fid *fids[] = {&eq->fid, &cq->fid, &c->fid};
	void *ops;
	char buf[8];
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(fids); i++) {
		struct fi_ops *o = fids[i]->ops;

		ck_assert_uint_eq(o->size, sizeof(struct fi_ops));
		ck_assert(o->close && o->bind && o->control && o->ops_open && o->tostr &&
			  o->ops_set);
		ck_assert_int_eq(fi_open_ops(fids[i], "x", 0, &ops, NULL), -FI_ENOSYS);
		ck_assert_int_eq(o->bind(fids[i], fids[0], 0), -FI_ENOSYS);
		ck_assert_int_eq(o->tostr(fids[i], buf, sizeof(buf)), -FI_ENOSYS);
		ck_assert_int_eq(o->ops_set(fids[i], "x", 0, NULL, NULL), -FI_ENOSYS);
	}
	ck_assert_uint_eq(eq->ops->size, sizeof(struct fi_ops_eq));
	ck_assert(eq->ops->read && eq->ops->readerr && eq->ops->write && eq->ops->sread &&
		  eq->ops->strerror);
	ck_assert_uint_eq(cq->ops->size, sizeof(struct fi_ops_cq));
	ck_assert(cq->ops->read && cq->ops->readfrom && cq->ops->readerr && cq->ops->sread &&
		  cq->ops->sreadfrom && cq->ops->signal && cq->ops->strerror);
	ck_assert_uint_eq(c->ops->size, sizeof(struct fi_ops_cntr));
	ck_assert(c->ops->read && c->ops->readerr && c->ops->add && c->ops->set && c->ops->wait &&
		  c->ops->adderr && c->ops->seterr);
	ck_assert_int_eq(dr_no_control(&eq->fid, FI_GETWAIT, NULL), -FI_ENOSYS);
	ck_assert_int_eq(fi_close(&eq->fid), 0);
	ck_assert_int_eq(fi_close(&cq->fid), 0);
	ck_assert_int_eq(fi_close(&c->fid), 0);
}
END_TEST

/* ---- the suite ---------------------------------------------------------------- */

static TCase *tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *fi_objs_suite(void)
{
	Suite *s = suite_create("fi_objs");
	TCase *tc;

	tc = tcase(s, "eq");
	tcase_add_loop_test(tc, eq_open_args, 0, ARRAY_SIZE(eq_open_cases));
	tcase_add_test(tc, eq_open_null_attr);
	tcase_add_test(tc, eq_read_basic);
	tcase_add_test(tc, eq_order_and_errors);
	tcase_add_test(tc, eq_peek);
	tcase_add_test(tc, eq_connreq_toosmall);
	tcase_add_test(tc, eq_close_frees_connreq);
	tcase_add_test(tc, eq_close_busy);
	tcase_add_loop_test(tc, eq_err_data, 0, ARRAY_SIZE(eq_err_data_cases));
	tcase_add_test(tc, eq_write);
	tcase_add_test(tc, eq_fd);
	tcase_add_test(tc, eq_sread_progress);
	tcase_add_test(tc, eq_sread_timeout);
	tcase_add_test(tc, eq_sread_thread);
	tcase_add_test(tc, eq_strerror);

	tc = tcase(s, "cq");
	tcase_add_loop_test(tc, cq_open_args, 0, ARRAY_SIZE(cq_open_cases));
	tcase_add_test(tc, cq_open_null_attr);
	tcase_add_loop_test(tc, cq_format_bytes, 0, 4);
	tcase_add_test(tc, cq_order_and_errors);
	tcase_add_test(tc, cq_count0_and_readfrom);
	tcase_add_loop_test(tc, cq_err_data_status, 0, ARRAY_SIZE(cq_status_cases));
	tcase_add_loop_test(tc, cq_err_data, 0, ARRAY_SIZE(cq_err_data_cases));
	tcase_add_test(tc, cq_grow);
	tcase_add_test(tc, cq_fd);
	tcase_add_test(tc, cq_sread_args);
	tcase_add_test(tc, cq_sread_progress);
	tcase_add_test(tc, cq_sread_timeout);
	tcase_add_test(tc, cq_sread_woken);
	tcase_add_test(tc, cq_threads);
	tcase_add_test(tc, cq_close_busy);
	tcase_add_test(tc, cq_strerror);

	tc = tcase(s, "cntr");
	tcase_add_loop_test(tc, cntr_open_args, 0, ARRAY_SIZE(cntr_open_cases));
	tcase_add_test(tc, cntr_values);
	tcase_add_test(tc, cntr_wait_progress);
	tcase_add_test(tc, cntr_wait_none);
	tcase_add_test(tc, cntr_wait_err);
	tcase_add_test(tc, cntr_wait_timeout);
	tcase_add_test(tc, cntr_wait_thread);
	tcase_add_test(tc, cntr_fd);
	tcase_add_test(tc, cntr_close_busy);

	tc = tcase(s, "wait");
	tcase_add_test(tc, wait_block);
	tcase_add_test(tc, stubs_and_ops);
	return s;
}

int main(void)
{
	return ck_run(fi_objs_suite(), false);
}
