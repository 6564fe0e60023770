// SPDX-License-Identifier: BSD-2-Clause
/* The shared libfabric-API fixture (fi_fixture.h). */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fi_errno.h>

#include "ck_run.h"
#include "fi_ext_droce.h"
#include "fi_fixture.h"

uint64_t fx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * FX_NS_PER_S + (uint64_t)ts.tv_nsec;
}

void fx_env(const char *pair_name)
{
	const char *top = getenv("top_builddir");
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s/.libs", top ? top : ".");
	setenv("FI_PROVIDER_PATH", buf, 1);
	setenv("FI_PROVIDER", "droce", 1);
	snprintf(buf, sizeof(buf), "pair:%s:0;pair:%s:1", pair_name, pair_name);
	setenv("FI_DROCE_DEVICE", buf, 1);
	setenv("FI_DROCE_ADDR", "192.0.2.1/24;192.0.2.2/24", 1);
}

void fx_getinfo(const char *pair_name, uint64_t caps, uint64_t mode, struct fi_info **a,
		struct fi_info **b)
{
	struct fi_info *hints = fi_allocinfo(), *all, *i;
	char name_a[64], name_b[64];

	snprintf(name_a, sizeof(name_a), "pair:%s:0", pair_name);
	snprintf(name_b, sizeof(name_b), "pair:%s:1", pair_name);
	ck_assert_ptr_nonnull(hints);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = caps;
	hints->mode = mode;
	hints->domain_attr->mr_mode =
	    FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("droce");
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &all), 0);
	*a = NULL;
	if (b)
		*b = NULL;
	for (i = all; i; i = i->next) {
		if (!strcmp(i->domain_attr->name, name_a))
			*a = fi_dupinfo(i);
		else if (b && !strcmp(i->domain_attr->name, name_b))
			*b = fi_dupinfo(i);
	}
	fi_freeinfo(all);
	fi_freeinfo(hints);
	ck_assert_ptr_nonnull(*a);
	if (b)
		ck_assert_ptr_nonnull(*b);
}

void fx_open(struct fx *f, const char *pair_name, uint64_t caps, size_t queue_size)
{
	memset(f, 0, sizeof(*f));
	fx_getinfo(pair_name, caps, 0, &f->info_a, &f->info_b);
	if (queue_size) {
		f->info_a->tx_attr->size = f->info_b->tx_attr->size = queue_size;
		f->info_a->rx_attr->size = f->info_b->rx_attr->size = queue_size;
	}
	ck_assert_int_eq(fi_fabric(f->info_a->fabric_attr, &f->fabric, NULL), 0);
	ck_assert_int_eq(fi_domain(f->fabric, f->info_a, &f->dom_a, NULL), 0);
	ck_assert_int_eq(fi_domain(f->fabric, f->info_b, &f->dom_b, NULL), 0);
}

void fx_close(struct fx *f)
{
	ck_assert_int_eq(fi_close(&f->dom_a->fid), 0);
	ck_assert_int_eq(fi_close(&f->dom_b->fid), 0);
	ck_assert_int_eq(fi_close(&f->fabric->fid), 0);
	fi_freeinfo(f->info_a);
	fi_freeinfo(f->info_b);
}

ssize_t fx_eq_wait(struct fid_eq *eq, uint32_t *event, void *buf, size_t len)
{
	uint64_t end = fx_now_ns() + 5 * FX_NS_PER_S;
	ssize_t ret;

	do
		ret = fi_eq_read(eq, event, buf, len, 0);
	while (ret == -FI_EAGAIN && fx_now_ns() < end);
	return ret;
}

ssize_t fx_cq_wait(struct fid_cq *cq, struct fid_cq *other, struct fi_cq_data_entry *e)
{
	uint64_t end = fx_now_ns() + 5 * FX_NS_PER_S;
	ssize_t ret;

	do {
		ret = fi_cq_read(cq, e, 1);
		if (ret == -FI_EAGAIN && other)
			fi_cq_read(other, NULL, 0);
	} while (ret == -FI_EAGAIN && fx_now_ns() < end);
	return ret;
}

int fx_cq_drive(struct fid_cq *cq, struct fid_cq *other, unsigned ms)
{
	uint64_t end = fx_now_ns() + (uint64_t)ms * 1000000u;
	struct fi_cq_data_entry e;
	int n = 0;

	while (fx_now_ns() < end) {
		if (fi_cq_read(cq, &e, 1) == 1)
			n++;
		if (other)
			fi_cq_read(other, NULL, 0);
	}
	return n;
}

void fx_open_eq_cq(struct fx *f, struct fid_domain *dom, struct fid_eq **eq, struct fid_cq **cq)
{
	struct fi_eq_attr ea = {.wait_obj = FI_WAIT_NONE};
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};

	ck_assert_int_eq(fi_eq_open(f->fabric, &ea, eq, NULL), 0);
	ck_assert_int_eq(fi_cq_open(dom, &ca, cq, NULL), 0);
}

static void bind_side(struct fid_ep *ep, struct fid_eq *eq, struct fid_cq *cq,
		      const struct fx_side *s)
{
	ck_assert_int_eq(fi_ep_bind(ep, &eq->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV | s->cq_flags), 0);
	for (int i = 0; i < FX_MAX_CNTR; i++)
		if (s->cntr[i])
			ck_assert_int_eq(fi_ep_bind(ep, &s->cntr[i]->fid, s->cntr_flags[i]), 0);
}

static const struct fx_side no_side;

void fx_listen(struct fx *f, struct fx_conn *c, const struct fx_side *sb)
{
	size_t len = sizeof(c->server);
	struct fi_info *pinfo;

	if (!sb)
		sb = &no_side;
	fx_open_eq_cq(f, f->dom_b, &c->eq_b, &c->cq_b);
	pinfo = fi_dupinfo(sb->info ? sb->info : f->info_b);
	ck_assert_int_eq(fi_passive_ep(f->fabric, pinfo, &c->pep, NULL), 0);
	fi_freeinfo(pinfo);
	ck_assert_int_eq(fi_pep_bind(c->pep, &c->eq_b->fid, 0), 0);
	ck_assert_int_eq(fi_listen(c->pep), 0);
	ck_assert_int_eq(fi_getname(&c->pep->fid, &c->server, &len), 0);
	ck_assert_uint_eq(len, sizeof(c->server));
	ck_assert_uint_ne(c->server.sin_port, 0);
	ck_assert_uint_eq(ntohl(c->server.sin_addr.s_addr), FX_IP_B);
}

void fx_connect_a(struct fx *f, struct fx_conn *c, const struct fx_side *sa, const void *data,
		  size_t len)
{
	if (!sa)
		sa = &no_side;
	fx_open_eq_cq(f, f->dom_a, &c->eq_a, &c->cq_a);
	ck_assert_int_eq(fi_endpoint(f->dom_a, (struct fi_info *)(sa->info ? sa->info : f->info_a),
				     &c->ep_a, NULL),
			 0);
	bind_side(c->ep_a, c->eq_a, c->cq_a, sa);
	ck_assert_int_eq(fi_enable(c->ep_a), 0);
	ck_assert_int_eq(fi_connect(c->ep_a, &c->server, data, len), 0);
}

void fx_accept_b(struct fx *f, struct fx_conn *c, const struct fx_side *sb, const void *want,
		 size_t want_len, const void *data, size_t len)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[64];
	} ent;
	uint32_t event;
	ssize_t n = fx_eq_wait(c->eq_b, &event, &ent, sizeof(ent));

	if (!sb)
		sb = &no_side;
	ck_assert_int_eq(n, (ssize_t)(sizeof(ent.e) + want_len));
	ck_assert_uint_eq(event, FI_CONNREQ);
	ck_assert_ptr_eq(ent.e.fid, &c->pep->fid);
	ck_assert_ptr_nonnull(ent.e.info->handle);
	if (want_len)
		ck_assert(!memcmp(ent.data, want, want_len));
	ck_assert_int_eq(fi_endpoint(f->dom_b, ent.e.info, &c->ep_b, NULL), 0);
	fi_freeinfo(ent.e.info);
	bind_side(c->ep_b, c->eq_b, c->cq_b, sb);
	ck_assert_int_eq(fi_accept(c->ep_b, data, len), 0);
}

void fx_expect_connected(struct fid_eq *eq, struct fid_ep *ep, const void *want, size_t want_len)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[64];
	} ent;
	uint32_t event;
	ssize_t n = fx_eq_wait(eq, &event, &ent, sizeof(ent));

	ck_assert_int_eq(n, (ssize_t)(sizeof(ent.e) + want_len));
	ck_assert_uint_eq(event, FI_CONNECTED);
	ck_assert_ptr_eq(ent.e.fid, &ep->fid);
	if (want_len)
		ck_assert(!memcmp(ent.data, want, want_len));
}

void fx_connect_cfg(struct fx *f, struct fx_conn *c, const struct fx_side *sa,
		    const struct fx_side *sb)
{
	memset(c, 0, sizeof(*c));
	fx_listen(f, c, sb);
	fx_connect_a(f, c, sa, NULL, 0);
	fx_accept_b(f, c, sb, NULL, 0, NULL, 0);
	fx_expect_connected(c->eq_a, c->ep_a, NULL, 0);
	fx_expect_connected(c->eq_b, c->ep_b, NULL, 0);
}

void fx_connect(struct fx *f, struct fx_conn *c)
{
	fx_connect_cfg(f, c, NULL, NULL);
}

void fx_conn_close(struct fx_conn *c)
{
	struct fid *fids[] = {c->ep_a ? &c->ep_a->fid : NULL,
			      c->ep_b ? &c->ep_b->fid : NULL,
			      c->pep ? &c->pep->fid : NULL,
			      &c->cq_a->fid,
			      &c->cq_b->fid,
			      &c->eq_a->fid,
			      &c->eq_b->fid};

	for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++)
		if (fids[i])
			ck_assert_int_eq(fi_close(fids[i]), 0);
}

void fx_region_open(struct fx_region *r, struct fid_domain *dom, size_t size, uint64_t access,
		    uint8_t init)
{
	r->size = size;
	r->base = malloc(size + 2 * FX_GUARD);
	ck_assert_ptr_nonnull(r->base);
	r->buf = r->base + FX_GUARD;
	memset(r->base, 0xa5, FX_GUARD);
	memset(r->buf, init, size);
	memset(r->buf + size, 0x5a, FX_GUARD);
	ck_assert_int_eq(fi_mr_reg(dom, r->buf, size, access, 0, 0, 0, &r->mr, NULL), 0);
	r->key = fi_mr_key(r->mr);
	ck_assert_uint_ne(r->key, FI_KEY_NOTAVAIL);
	r->addr = (uintptr_t)r->buf;
}

void fx_region_check_guards(const struct fx_region *r)
{
	for (size_t i = 0; i < FX_GUARD; i++) {
		ck_assert_uint_eq(r->base[i], 0xa5);
		ck_assert_uint_eq(r->buf[r->size + i], 0x5a);
	}
}

void fx_region_close(struct fx_region *r)
{
	fx_region_check_guards(r);
	ck_assert_int_eq(fi_close(&r->mr->fid), 0);
	free(r->base);
}

void fx_add_fixture(TCase *tc, void (*setup)(void), void (*teardown)(void))
{
	const char *fork = getenv("CK_FORK"); /* as Check reads it */

	if (fork && !strcmp(fork, "no"))
		tcase_add_unchecked_fixture(tc, setup, teardown);
	else
		tcase_add_checked_fixture(tc, setup, teardown);
}

int fx_run(Suite *s)
{
	/* fork per test unless CK_FORK=no (fi_fixture.h) */
	return ck_run(s, false);
}

uint64_t fx_counter(struct fid *fid, const char *name)
{
	struct fi_droce_counter c[256];
	struct fi_droce_ops *ops;
	size_t n = 256;

	ck_assert_int_eq(fi_open_ops(fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL), 0);
	ck_assert_int_eq(ops->counters(fid, c, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].value;
	ck_abort_msg("no counter %s", name);
	return 0;
}
