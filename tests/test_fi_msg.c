// SPDX-License-Identifier: BSD-2-Clause
/*
 * droce through the public libfabric API, each test in a process of its
 * own (fi_fixture.h: fx_run): two domains on the two ends of an
 * in-process DPDK link ("pair:" devices, net_ring),
 * driven by fi_getinfo -> fi_listen/fi_connect/fi_accept -> fi_send/fi_recv
 * -> fi_shutdown -> fi_close.  libfabric loads the provider from the build
 * tree (FI_PROVIDER_PATH); nothing here calls droce directly.  The CM
 * tests at the end play a hostile third party on the link: they build
 * frames with droce's codec and put them on the link's rings with DPDK.
 */
#include <arpa/inet.h>
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "fi_ext_droce.h"
#include "fi_fixture.h"
#include "forge.h"
#include "rss.h"

#include "dr_roce.h"

#define PAIR "fit"

static struct fx F; /* pair:fit:0 (client), pair:fit:1 (server) */

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_getinfo)
{
	ck_assert_ptr_nonnull(F.info_a);
	ck_assert_ptr_nonnull(F.info_b);
	ck_assert_str_eq(F.info_a->domain_attr->name, "pair:fit:0");
	ck_assert_str_eq(F.info_b->domain_attr->name, "pair:fit:1");
	ck_assert_int_eq(F.info_a->ep_attr->type, FI_EP_MSG);
	ck_assert_int_eq(F.info_a->addr_format, FI_SOCKADDR_IN);
	ck_assert_uint_eq(F.info_a->domain_attr->cq_data_size, 4);
	ck_assert_uint_eq(F.info_a->tx_attr->inject_size, 256);
	ck_assert_str_eq(F.info_a->fabric_attr->prov_name, "droce");
}
END_TEST

static const size_t cm_lens[] = { 0, 1, 55 };

START_TEST(test_connect_cm_data)
{
	uint8_t req[55], rep[55];
	struct fx_conn c;

	for (int i = 0; i < 55; i++) {
		req[i] = (uint8_t)(0x10 + i);
		rep[i] = (uint8_t)(0x80 + i);
	}
	memset(&c, 0, sizeof(c));
	fx_listen(&F, &c, NULL);
	fx_connect_a(&F, &c, NULL, req, cm_lens[_i]);
	fx_accept_b(&F, &c, NULL, req, cm_lens[_i], rep, cm_lens[_i]);
	fx_expect_connected(c.eq_a, c.ep_a, rep, cm_lens[_i]);
	fx_expect_connected(c.eq_b, c.ep_b, NULL, 0);
	fx_conn_close(&c);
}
END_TEST

START_TEST(test_cm_data_too_long)
{
	uint8_t data[56] = { 0 };
	struct fx_conn c;
	size_t sz = 0, len = sizeof(sz);

	memset(&c, 0, sizeof(c));
	fx_listen(&F, &c, NULL);
	fx_open_eq_cq(&F, F.dom_a, &c.eq_a, &c.cq_a);
	ck_assert_int_eq(fi_endpoint(F.dom_a, F.info_a, &c.ep_a, NULL), 0);
	ck_assert_int_eq(fi_getopt(&c.ep_a->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &len),
			 0);
	ck_assert_uint_eq(sz, 55);
	ck_assert_int_eq(fi_ep_bind(c.ep_a, &c.eq_a->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(c.ep_a, &c.cq_a->fid, FI_TRANSMIT | FI_RECV), 0);
	ck_assert_int_eq(fi_connect(c.ep_a, &c.server, data, sizeof(data)), -FI_EINVAL);
	fx_conn_close(&c);
}
END_TEST

START_TEST(test_reject_with_data)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[64];
	} ent;
	struct fi_eq_err_entry err;
	uint8_t why[55];
	uint32_t event;
	struct fx_conn c;

	memset(why, 0x5a, sizeof(why));
	memset(&c, 0, sizeof(c));
	fx_listen(&F, &c, NULL);
	fx_connect_a(&F, &c, NULL, "x", 1);
	ck_assert_int_eq(fx_eq_wait(c.eq_b, &event, &ent, sizeof(ent)), sizeof(ent.e) + 1);
	ck_assert_uint_eq(event, FI_CONNREQ);
	ck_assert_int_eq(fi_reject(c.pep, ent.e.info->handle, why, sizeof(why)), 0);
	fi_freeinfo(ent.e.info);
	ck_assert_int_eq(fx_eq_wait(c.eq_a, &event, &ent, sizeof(ent)), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_eq_readerr(c.eq_a, &err, 0), sizeof(err));
	ck_assert_int_eq(err.err, FI_ECONNREFUSED);
	ck_assert_int_eq(err.prov_errno, 28); /* IBA: consumer-defined reject */
	ck_assert_ptr_eq(err.fid, &c.ep_a->fid);
	ck_assert_uint_eq(err.err_data_size, sizeof(why));
	ck_assert(!memcmp(err.err_data, why, sizeof(why)));
	fx_conn_close(&c);
}
END_TEST

START_TEST(test_no_listener)
{
	struct fi_eq_err_entry err;
	uint8_t buf[64];
	uint32_t event;
	struct fx_conn c;

	memset(&c, 0, sizeof(c));
	fx_open_eq_cq(&F, F.dom_b, &c.eq_b, &c.cq_b);
	c.server.sin_family = AF_INET;
	c.server.sin_addr.s_addr = htonl(0xc0000202);
	c.server.sin_port = htons(4444); /* nobody listens there */
	fx_connect_a(&F, &c, NULL, NULL, 0);
	ck_assert_int_eq(fx_eq_wait(c.eq_a, &event, buf, sizeof(buf)), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_eq_readerr(c.eq_a, &err, 0), sizeof(err));
	ck_assert_int_eq(err.err, FI_ECONNREFUSED);
	ck_assert_int_eq(err.prov_errno, 8); /* IBA: invalid service ID */
	fx_conn_close(&c);
}
END_TEST

static const size_t msg_sizes[] = { 0, 1, 7, 255, 1023, 1024, 1025, 4096, 65536, 1 << 20 };

START_TEST(test_send_recv_sizes)
{
	size_t size = msg_sizes[_i];
	uint8_t *tx = malloc(size + 1), *rx = malloc(size + 16);
	struct fi_cq_data_entry e;
	struct fx_conn c;
	int ctx_tx, ctx_rx;

	for (size_t i = 0; i < size; i++)
		tx[i] = (uint8_t)(i * 7 + 3);
	memset(rx, 0xee, size + 16);
	fx_connect(&F, &c);
	ck_assert_int_eq(fi_recv(c.ep_b, rx, size + 16, NULL, 0, &ctx_rx), 0);
	ck_assert_int_eq(fi_send(c.ep_a, tx, size, NULL, 0, &ctx_tx), 0);

	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_rx);
	ck_assert_uint_eq(e.flags, FI_RECV | FI_MSG);
	ck_assert_uint_eq(e.len, size);
	ck_assert(!memcmp(rx, tx, size));
	for (size_t i = size; i < size + 16; i++)
		ck_assert_uint_eq(rx[i], 0xee);
	ck_assert_int_eq(fx_cq_wait(c.cq_a, c.cq_b, &e), 1);
	ck_assert_ptr_eq(e.op_context, &ctx_tx);
	ck_assert_uint_eq(e.flags, FI_SEND | FI_MSG);
	fx_conn_close(&c);
	free(tx);
	free(rx);
}
END_TEST

START_TEST(test_senddata_inject)
{
	struct fi_cq_data_entry e;
	uint8_t rx[2][64], msg[] = "injected";
	struct fx_conn c;

	fx_connect(&F, &c);
	ck_assert_int_eq(fi_recv(c.ep_b, rx[0], 64, NULL, 0, rx[0]), 0);
	ck_assert_int_eq(fi_recv(c.ep_b, rx[1], 64, NULL, 0, rx[1]), 0);
	ck_assert_int_eq(fi_senddata(c.ep_a, "data", 4, NULL, 0xdeadbeef, 0, NULL), 0);
	ck_assert_int_eq(fi_inject(c.ep_a, msg, sizeof(msg), 0), 0);
	memset(msg, 0, sizeof(msg)); /* inject: the buffer is free at once */
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, rx[0]);
	ck_assert_uint_eq(e.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	ck_assert_uint_eq(e.data, 0xdeadbeef);
	ck_assert_uint_eq(e.len, 4);
	ck_assert(!memcmp(rx[0], "data", 4));
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), 1);
	ck_assert_ptr_eq(e.op_context, rx[1]);
	ck_assert_uint_eq(e.len, 9);
	ck_assert_str_eq((char *)rx[1], "injected");
	/* the senddata completes; the inject never does */
	ck_assert_int_eq(fx_cq_wait(c.cq_a, c.cq_b, &e), 1);
	ck_assert_ptr_eq(e.op_context, NULL);
	ck_assert_int_eq(fi_cq_read(c.cq_a, &e, 1), -FI_EAGAIN);
	ck_assert_int_eq(fi_inject(c.ep_a, msg, 257, 0), -FI_EMSGSIZE);
	fx_conn_close(&c);
}
END_TEST

START_TEST(test_truncated_recv)
{
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;
	uint8_t tx[100] = { 1 }, rx[10];
	struct fx_conn c;

	fx_connect(&F, &c);
	ck_assert_int_eq(fi_recv(c.ep_b, rx, sizeof(rx), NULL, 0, rx), 0);
	ck_assert_int_eq(fi_send(c.ep_a, tx, sizeof(tx), NULL, 0, tx), 0);
	ck_assert_int_eq(fx_cq_wait(c.cq_b, c.cq_a, &e), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_cq_readerr(c.cq_b, &err, 0), 1);
	ck_assert_ptr_eq(err.op_context, rx);
	ck_assert_int_eq(err.err, FI_ETRUNC);
	fx_conn_close(&c);
}
END_TEST

START_TEST(test_shutdown)
{
	struct fi_eq_cm_entry ent;
	uint32_t event;
	struct fx_conn c;
	uint8_t rx[8];
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;

	fx_connect(&F, &c);
	ck_assert_int_eq(fi_recv(c.ep_b, rx, sizeof(rx), NULL, 0, rx), 0);
	ck_assert_int_eq(fi_shutdown(c.ep_a, 0), 0);
	ck_assert_int_eq(fx_eq_wait(c.eq_b, &event, &ent, sizeof(ent)), sizeof(ent));
	ck_assert_uint_eq(event, FI_SHUTDOWN);
	ck_assert_ptr_eq(ent.fid, &c.ep_b->fid);
	ck_assert_int_eq(fx_eq_wait(c.eq_a, &event, &ent, sizeof(ent)), sizeof(ent));
	ck_assert_uint_eq(event, FI_SHUTDOWN);
	ck_assert_ptr_eq(ent.fid, &c.ep_a->fid);
	/* the posted receive is flushed */
	ck_assert_int_eq(fx_cq_wait(c.cq_b, NULL, &e), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_cq_readerr(c.cq_b, &err, 0), 1);
	ck_assert_int_eq(err.err, FI_ECANCELED);
	ck_assert_ptr_eq(err.op_context, rx);
	ck_assert_int_eq(fi_send(c.ep_a, rx, 1, NULL, 0, NULL), -FI_EOPBADSTATE);
	fx_conn_close(&c);
}
END_TEST

/* fi_getinfo honours hints: what droce cannot do is -FI_ENODATA now, not a
 * failure later (issue 4).  droce itself: with "droce" alone libfabric also
 * offers what ofi_rxm and ofi_rxd build over it (test_getinfo_rdm). */
enum hint_case {
	H_RDM, H_DGRAM, H_TAGGED, H_AUTO_PROGRESS, H_CQ_DATA_8, H_IOV, H_TX_SIZE, H_DOMAIN,
	H_FABRIC, H_ADDR_STR, H_INJECT, H_SHARED_CTX, H_NUM
};

START_TEST(test_getinfo_refusals)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	ck_assert_ptr_nonnull(hints);
	hints->fabric_attr->prov_name = strdup("droce;^ofi_rxm;^ofi_rxd");
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	switch ((enum hint_case)_i) {
	case H_RDM:
		hints->ep_attr->type = FI_EP_RDM;
		break;
	case H_DGRAM:
		hints->ep_attr->type = FI_EP_DGRAM;
		break;
	case H_TAGGED:
		hints->caps = FI_TAGGED;
		break;
	case H_AUTO_PROGRESS:
		hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
		break;
	case H_CQ_DATA_8:
		hints->domain_attr->cq_data_size = 8;
		break;
	case H_IOV:
		hints->tx_attr->iov_limit = 9;
		break;
	case H_TX_SIZE:
		hints->tx_attr->size = 1 << 20;
		break;
	case H_DOMAIN:
		hints->domain_attr->name = strdup("no-such-port");
		break;
	case H_FABRIC:
		hints->fabric_attr->name = strdup("IB-0xfe80000000000000");
		break;
	case H_ADDR_STR:
		hints->addr_format = FI_ADDR_STR;
		break;
	case H_INJECT:
		hints->tx_attr->inject_size = 257;
		break;
	case H_SHARED_CTX:
		hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
		break;
	case H_NUM:
		break;
	}
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	ck_assert_ptr_null(info);
	fi_freeinfo(hints);
}
END_TEST

/* FI_EP_RDM with tags over droce: ofi_rxm layered on droce's FI_EP_MSG
 * (issue 12).  libfabric's util layer hands droce the hints as
 * "droce;^ofi_rxm", FI_RX_CQ_DATA | FI_CONTEXT modes, FI_MR_LOCAL and
 * queue sizes of its own: droce must take them, and only rxm answers. */
START_TEST(test_getinfo_rdm)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int n = 0;

	ck_assert_ptr_nonnull(hints);
	hints->fabric_attr->prov_name = strdup("droce");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_MULTI_RECV;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), 0);
	for (struct fi_info *i = info; i; i = i->next, n++) {
		ck_assert_str_eq(i->fabric_attr->prov_name, "droce;ofi_rxm");
		ck_assert_int_eq(i->ep_attr->type, FI_EP_RDM);
		ck_assert_int_eq(i->ep_attr->protocol, FI_PROTO_RXM);
		ck_assert_uint_eq(i->caps & hints->caps, hints->caps);
		ck_assert_uint_eq(i->domain_attr->cq_data_size, 4);
		/* rxm's eager header (64 B) comes out of droce's inline data */
		ck_assert_uint_eq(i->tx_attr->inject_size, 256 - 64);
	}
	/* per in-process port, rxm 1.17's two (with and without FI_COLLECTIVE) */
	ck_assert_int_eq(n, 4);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

/* node/service become the destination; with FI_SOURCE, the source */
START_TEST(test_getinfo_addresses)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct sockaddr_in *sin;

	hints->fabric_attr->prov_name = strdup("droce");
	hints->ep_attr->type = FI_EP_MSG;
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), "192.0.2.2", "7471", 0, hints, &info), 0);
	ck_assert_ptr_nonnull(info->dest_addr);
	sin = info->dest_addr;
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0xc0000202);
	ck_assert_uint_eq(ntohs(sin->sin_port), 7471);
	fi_freeinfo(info);

	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), "192.0.2.2", "7471", FI_SOURCE, hints, &info),
			 0);
	ck_assert_ptr_null(info->next); /* only the port holding that address */
	ck_assert_str_eq(info->domain_attr->name, "pair:fit:1");
	ck_assert_ptr_null(info->dest_addr);
	sin = info->src_addr;
	ck_assert_uint_eq(ntohl(sin->sin_addr.s_addr), 0xc0000202);
	ck_assert_uint_eq(ntohs(sin->sin_port), 7471);
	fi_freeinfo(info);

	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), "192.0.2.9", NULL, FI_SOURCE, hints, &info),
			 -FI_ENODATA);
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, "http", 0, hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);
}
END_TEST

/* A CQ with an fd: fi_trywait says "sleep", poll() on the fd wakes when the
 * message arrives with no reads meanwhile (background progress), and
 * fi_cq_sread honours its timeout. */
START_TEST(test_wait_fd)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD };
	struct fid_cq *cq_fd;
	struct fi_cq_data_entry e;
	struct fid *fids[1];
	struct pollfd pfd;
	struct fx_conn c;
	uint8_t rx[16];
	uint64_t t0;
	int fd, ret;

	memset(&c, 0, sizeof(c));
	fx_listen(&F, &c, NULL);
	fx_connect_a(&F, &c, NULL, NULL, 0);
	/* the server's endpoint reports to an fd-waitable CQ */
	ck_assert_int_eq(fi_cq_open(F.dom_b, &ca, &cq_fd, NULL), 0);
	{
		struct {
			struct fi_eq_cm_entry e;
			uint8_t data[64];
		} ent;
		uint32_t event;

		ck_assert_int_eq(fx_eq_wait(c.eq_b, &event, &ent, sizeof(ent)), sizeof(ent.e));
		ck_assert_int_eq(fi_endpoint(F.dom_b, ent.e.info, &c.ep_b, NULL), 0);
		fi_freeinfo(ent.e.info);
		ck_assert_int_eq(fi_ep_bind(c.ep_b, &c.eq_b->fid, 0), 0);
		ck_assert_int_eq(fi_ep_bind(c.ep_b, &cq_fd->fid, FI_TRANSMIT | FI_RECV), 0);
		ck_assert_int_eq(fi_accept(c.ep_b, NULL, 0), 0);
	}
	fx_expect_connected(c.eq_a, c.ep_a, NULL, 0);
	fx_expect_connected(c.eq_b, c.ep_b, NULL, 0);

	ck_assert_int_eq(fi_control(&cq_fd->fid, FI_GETWAIT, &fd), 0);
	ck_assert_int_ge(fd, 0);
	/* nothing yet: sread times out */
	t0 = fx_now_ns();
	ck_assert_int_eq(fi_cq_sread(cq_fd, &e, 1, NULL, 30), -FI_EAGAIN);
	ck_assert_uint_ge(fx_now_ns() - t0, 30000000ull);
	ck_assert_uint_lt(fx_now_ns() - t0, 1000000000ull);

	ck_assert_int_eq(fi_recv(c.ep_b, rx, sizeof(rx), NULL, 0, rx), 0);
	fids[0] = &cq_fd->fid;
	ck_assert_int_eq(fi_trywait(F.fabric, fids, 1), 0);
	ck_assert_int_eq(fi_send(c.ep_a, "wake", 4, NULL, 0, NULL), 0);
	/* the client side is progressed by its CQ read below only after the
	 * poll: its device runs no thread, so the send went out at post time */
	pfd.fd = fd;
	pfd.events = POLLIN;
	ret = poll(&pfd, 1, 5000);
	ck_assert_int_eq(ret, 1);
	ck_assert_int_eq(fi_trywait(F.fabric, fids, 1), -FI_EAGAIN);
	ck_assert_int_eq(fi_cq_read(cq_fd, &e, 1), 1);
	ck_assert_ptr_eq(e.op_context, rx);
	ck_assert_uint_eq(e.len, 4);
	ck_assert(!memcmp(rx, "wake", 4));
	ck_assert_int_eq(fx_cq_wait(c.cq_a, NULL, &e), 1);
	ck_assert_int_eq(fi_close(&c.ep_b->fid), 0);
	c.ep_b = NULL;
	ck_assert_int_eq(fi_close(&cq_fd->fid), 0);
	fx_conn_close(&c);
}
END_TEST

/* Two connections driven by two threads at once: FI_THREAD_SAFE. */
struct pump_arg {
	struct fx_conn *c;
	int n;
	int errors;
};

static void *pump(void *p)
{
	struct pump_arg *a = p;
	struct fi_cq_data_entry e;
	uint32_t tx[256], rx[256];

	for (int i = 0; i < a->n; i++) {
		for (int k = 0; k < 256; k++)
			tx[k] = (uint32_t)(i * 1000 + k) ^ (uint32_t)(uintptr_t)a;
		memset(rx, 0, sizeof(rx));
		if (fi_recv(a->c->ep_b, rx, sizeof(rx), NULL, 0, rx) ||
		    fi_send(a->c->ep_a, tx, sizeof(tx), NULL, 0, tx) ||
		    fx_cq_wait(a->c->cq_b, a->c->cq_a, &e) != 1 || e.op_context != rx ||
		    fx_cq_wait(a->c->cq_a, a->c->cq_b, &e) != 1 || e.op_context != tx ||
		    memcmp(tx, rx, sizeof(tx)))
			a->errors++;
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct fx_conn c1, c2;
	struct pump_arg a1 = { .c = &c1, .n = 300 }, a2 = { .c = &c2, .n = 300 };
	pthread_t t1, t2;

	fx_connect(&F, &c1);
	fx_connect(&F, &c2);
	ck_assert_int_eq(pthread_create(&t1, NULL, pump, &a1), 0);
	ck_assert_int_eq(pthread_create(&t2, NULL, pump, &a2), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	ck_assert_int_eq(a1.errors, 0);
	ck_assert_int_eq(a2.errors, 0);
	fx_conn_close(&c1);
	fx_conn_close(&c2);
}
END_TEST

/* A peer that does not answer ARP: the connect fails with FI_EHOSTUNREACH
 * once ARP gives up (3 tries, 1 s apart), not after every CM retry. */
START_TEST(test_unreachable_peer)
{
	struct fi_eq_err_entry err;
	uint8_t buf[64];
	uint32_t event;
	struct fx_conn c;
	uint64_t t0, end;
	ssize_t ret;

	memset(&c, 0, sizeof(c));
	fx_open_eq_cq(&F, F.dom_b, &c.eq_b, &c.cq_b);
	c.server.sin_family = AF_INET;
	c.server.sin_addr.s_addr = htonl(0xc0000209); /* 192.0.2.9: nobody */
	c.server.sin_port = htons(7471);
	t0 = fx_now_ns();
	fx_connect_a(&F, &c, NULL, NULL, 0);
	end = t0 + 15 * FX_NS_PER_S;
	do
		ret = fi_eq_read(c.eq_a, &event, buf, sizeof(buf), 0);
	while (ret == -FI_EAGAIN && fx_now_ns() < end);
	ck_assert_int_eq(ret, -FI_EAVAIL);
	ck_assert_uint_lt(fx_now_ns() - t0, 10 * FX_NS_PER_S);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(fi_eq_readerr(c.eq_a, &err, 0), sizeof(err));
	ck_assert_int_eq(err.err, FI_EHOSTUNREACH);
	ck_assert_ptr_eq(err.fid, &c.ep_a->fid);
	fx_conn_close(&c);
}
END_TEST

/* ---- a hostile third party on the link (issue 11) ------------------------- */

#define IP_X 0xc0000242u  /* 192.0.2.66: nobody's, the forger's */

/* ring[s] of the pair carries what side s sends (src/roce/port.c) */
static struct rte_ring *link_ring[2];
static struct rte_mempool *forge_pool;
static uint8_t link_mac[2][6];
static uint32_t forge_psn;

/* Find the pair's rings (multi-producer: port.c), so that the test can
 * enqueue beside the ports, and the ends' MACs (FI_DROCE_OPS_1). */
static void forge_setup(void)
{
	char name[RTE_RING_NAMESIZE];
	struct fi_droce_ops *ops;
	unsigned u;

	ck_assert_int_eq(fi_open_ops(&F.dom_a->fid, FI_DROCE_OPS_1, 0, (void **)&ops, NULL), 0);
	ck_assert_int_eq(ops->port_mac(F.dom_a, link_mac[0]), 0);
	ck_assert_int_eq(ops->port_mac(F.dom_b, link_mac[1]), 0);
	for (u = 0; u < 64; u++) {
		snprintf(name, sizeof(name), "drpair%u_0", u);
		if (rte_ring_lookup(name))
			break;
	}
	ck_assert_uint_lt(u, 64);
	for (unsigned s = 0; s < 2; s++) {
		snprintf(name, sizeof(name), "drpair%u_%u", u, s);
		link_ring[s] = rte_ring_lookup(name);
		ck_assert_ptr_nonnull(link_ring[s]);
	}
	forge_pool = rte_pktmbuf_pool_create("fit_forge", 511, 0, 0, 2048, SOCKET_ID_ANY);
	ck_assert_ptr_nonnull(forge_pool);
}

/* Put a MAD on the wire to QP1 of side to (0: client, 1: server) as if
 * src_ip sent it; when the link is full, let the receiver catch up. */
static void forge_mad(unsigned to, uint32_t src_ip, const uint8_t *mad, struct fid_cq *drive)
{
	uint8_t frame[DR_MAD_LEN + 128];
	struct rte_mbuf *m;
	int len;

	len = forge_qp1_frame(frame, sizeof(frame), link_mac[!to], link_mac[to], src_ip,
			      to ? FX_IP_B : FX_IP_A, forge_psn++, mad);
	ck_assert_int_gt(len, 0);
	while (!(m = rte_pktmbuf_alloc(forge_pool)))
		fi_cq_read(drive, NULL, 0);
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), frame, (size_t)len);
	/* the ring of the side that does not receive it */
	while (rte_ring_enqueue(link_ring[!to], m))
		fi_cq_read(drive, NULL, 0);
}

/* Until the receiver has taken every forged frame off the link. */
static void forge_drain(unsigned to, struct fid_cq *drive)
{
	while (rte_ring_count(link_ring[!to]))
		fi_cq_read(drive, NULL, 0);
	fi_cq_read(drive, NULL, 0);
}

static uint32_t addr_of(const void *sa)
{
	return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
}

/* One message each way with exact data: the connection works. */
static void ping_both(struct fx_conn *c)
{
	struct fi_cq_data_entry e;
	uint8_t tx[64], rx[64];

	for (int dir = 0; dir < 2; dir++) {
		struct fid_ep *from = dir ? c->ep_b : c->ep_a, *to = dir ? c->ep_a : c->ep_b;
		struct fid_cq *cq_from = dir ? c->cq_b : c->cq_a, *cq_to = dir ? c->cq_a : c->cq_b;

		for (int i = 0; i < 64; i++)
			tx[i] = (uint8_t)(i * 13 + dir);
		memset(rx, 0, sizeof(rx));
		ck_assert_int_eq(fi_recv(to, rx, sizeof(rx), NULL, 0, rx), 0);
		ck_assert_int_eq(fi_send(from, tx, sizeof(tx), NULL, 0, tx), 0);
		ck_assert_int_eq(fx_cq_wait(cq_to, cq_from, &e), 1);
		ck_assert_ptr_eq(e.op_context, rx);
		ck_assert_uint_eq(e.len, sizeof(tx));
		ck_assert(!memcmp(rx, tx, sizeof(tx)));
		ck_assert_int_eq(fx_cq_wait(cq_from, cq_to, &e), 1);
		ck_assert_ptr_eq(e.op_context, tx);
	}
}

/*
 * The flood of issue 11 through the provider: 60,000 REQs from one address
 * while the application does not read its EQ (at 4fe6195: 24,950
 * FI_CONNREQs queued, RSS +35 MB, a client locked out for 28 s).  Now the
 * EQ holds exactly the listener's share for one address (3/4 of the
 * default backlog of 1024), memory stays flat, and a client that connects
 * when the flood stops is connected as soon as the application reads.
 */
START_TEST(test_connreq_flood)
{
	enum { N = 60000, HELD = 1024 - 1024 / 4 };
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[64];
	} ent;
	uint8_t mad[DR_MAD_LEN];
	uint64_t t_stop, t_conn = 0;
	int flood = 0, legit = 0;
	struct fi_info *legit_info = NULL;
	long rss0, rss1;
	uint32_t event;
	struct fx_conn c;
	ssize_t n;

	memset(&c, 0, sizeof(c));
	fx_listen(&F, &c, NULL);
	rss0 = rss_kib();
	for (uint32_t i = 0; i < N; i++) {
		forge_req_mad(mad, 0x100000 + i, ntohs(c.server.sin_port), 20, 15,
			      0x7700000000000000ull | (0x100000 + i));
		forge_mad(1, IP_X, mad, c.cq_b);
	}
	forge_drain(1, c.cq_b);
	rss1 = rss_kib();
	printf("FI_CONNREQ flood: %d REQs, RSS +%ld KiB\n", N, rss1 - rss0);
	ck_assert_msg(rss1 - rss0 < 10 * 1024, "RSS grew by %ld KiB", rss1 - rss0);

	/* the flood stops; a client connects; the application reads its EQ,
	 * refusing the flood's requests and accepting the client's */
	t_stop = fx_now_ns();
	fx_connect_a(&F, &c, NULL, NULL, 0);
	while (!legit_info && fx_now_ns() < t_stop + 5 * FX_NS_PER_S) {
		n = fi_eq_read(c.eq_b, &event, &ent, sizeof(ent), 0);
		if (n == -FI_EAGAIN)
			continue;
		ck_assert_int_eq(n, sizeof(ent.e));
		ck_assert_uint_eq(event, FI_CONNREQ);
		if (addr_of(ent.e.info->dest_addr) == IP_X) {
			flood++;
			ck_assert_int_eq(fi_reject(c.pep, ent.e.info->handle, NULL, 0), 0);
			fi_freeinfo(ent.e.info);
			continue;
		}
		ck_assert_uint_eq(addr_of(ent.e.info->dest_addr), FX_IP_A);
		legit++;
		legit_info = ent.e.info;
	}
	ck_assert_int_eq(flood, HELD);
	ck_assert_int_eq(legit, 1);
	ck_assert_int_eq(fi_endpoint(F.dom_b, legit_info, &c.ep_b, NULL), 0);
	fi_freeinfo(legit_info);
	ck_assert_int_eq(fi_ep_bind(c.ep_b, &c.eq_b->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(c.ep_b, &c.cq_b->fid, FI_TRANSMIT | FI_RECV), 0);
	ck_assert_int_eq(fi_accept(c.ep_b, NULL, 0), 0);
	fx_expect_connected(c.eq_a, c.ep_a, NULL, 0);
	fx_expect_connected(c.eq_b, c.ep_b, NULL, 0);
	t_conn = fx_now_ns();
	printf("FI_CONNREQ flood: %d held, client connected %.3f s after the flood\n", flood,
	       (double)(t_conn - t_stop) / FX_NS_PER_S);
	ck_assert_uint_lt(t_conn - t_stop, 2 * FX_NS_PER_S);
	ping_both(&c);
	/* nothing else is queued */
	ck_assert_int_eq(fi_eq_read(c.eq_b, &event, &ent, sizeof(ent), 0), -FI_EAGAIN);
	fx_conn_close(&c);
}
END_TEST

/* Requests that time out: unread, the FI_CONNREQ is taken back; read,
 * fi_accept fails with FI_ETIMEDOUT and fi_reject still frees the handle;
 * a pep closed with a request unread refuses it. */
START_TEST(test_connreq_timeout)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[64];
	} ent;
	/* the REQ's own numbers: one try of 4.096 us * 2^14 = 67 ms */
	const uint64_t wait = 4096ull << 14;
	struct fi_info *info[2];
	uint8_t mad[DR_MAD_LEN];
	uint32_t event;
	struct fx_conn c;
	uint64_t t0;

	memset(&c, 0, sizeof(c));
	fx_listen(&F, &c, NULL);
	/* unread until it expires: the application never sees it */
	forge_req_mad(mad, 0x51, ntohs(c.server.sin_port), 14, 0,
		      0x7700000000000000ull | (0x51));
	t0 = fx_now_ns();
	forge_mad(1, IP_X, mad, c.cq_b);
	forge_drain(1, c.cq_b);
	ck_assert_int_eq(fi_eq_read(c.eq_b, &event, &ent, sizeof(ent), FI_PEEK), sizeof(ent.e));
	while (fx_now_ns() < t0 + 3 * wait)
		fi_cq_read(c.cq_b, NULL, 0);
	ck_assert_int_eq(fi_eq_read(c.eq_b, &event, &ent, sizeof(ent), 0), -FI_EAGAIN);

	/* read, then expired: accept fails, reject frees it */
	for (int i = 0; i < 2; i++) {
		forge_req_mad(mad, 0x52 + (uint32_t)i, ntohs(c.server.sin_port), 14, 0,
			      0x7700000000000000ull | (0x52 + (uint32_t)i));
		forge_mad(1, IP_X, mad, c.cq_b);
	}
	t0 = fx_now_ns();
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(fx_eq_wait(c.eq_b, &event, &ent, sizeof(ent)), sizeof(ent.e));
		ck_assert_uint_eq(event, FI_CONNREQ);
		info[i] = ent.e.info;
	}
	while (fx_now_ns() < t0 + 3 * wait)
		fi_cq_read(c.cq_b, NULL, 0);
	ck_assert_int_eq(fi_endpoint(F.dom_b, info[0], &c.ep_b, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(c.ep_b, &c.eq_b->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(c.ep_b, &c.cq_b->fid, FI_TRANSMIT | FI_RECV), 0);
	ck_assert_int_eq(fi_accept(c.ep_b, NULL, 0), -FI_ETIMEDOUT);
	ck_assert_int_eq(fi_close(&c.ep_b->fid), 0);
	c.ep_b = NULL;
	ck_assert_int_eq(fi_reject(c.pep, info[1]->handle, NULL, 0), 0);
	fi_freeinfo(info[0]);
	fi_freeinfo(info[1]);
	ck_assert_int_eq(fi_eq_read(c.eq_b, &event, &ent, sizeof(ent), 0), -FI_EAGAIN);

	/* a request still unread when the pep closes is refused with it */
	forge_req_mad(mad, 0x54, ntohs(c.server.sin_port), 20, 15,
		      0x7700000000000000ull | (0x54));
	forge_mad(1, IP_X, mad, c.cq_b);
	forge_drain(1, c.cq_b);
	ck_assert_int_eq(fi_eq_read(c.eq_b, &event, &ent, sizeof(ent), FI_PEEK), sizeof(ent.e));
	ck_assert_int_eq(fi_close(&c.pep->fid), 0);
	c.pep = NULL;
	ck_assert_int_eq(fi_eq_read(c.eq_b, &event, &ent, sizeof(ent), 0), -FI_EAGAIN);
	fx_open_eq_cq(&F, F.dom_a, &c.eq_a, &c.cq_a);
	fx_conn_close(&c);
}
END_TEST

/* fi_control FI_BACKLOG: the listener holds that many requests unread,
 * 3/4 of them (at least 1) from one address. */
START_TEST(test_pep_backlog)
{
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[64];
	} ent;
	uint8_t mad[DR_MAD_LEN];
	int n = 0, from_x = 0, bad = 0, four = 4;
	uint32_t event;
	struct fx_conn c;
	ssize_t ret;

	memset(&c, 0, sizeof(c));
	fx_listen(&F, &c, NULL);
	ck_assert_int_eq(fi_control(&c.pep->fid, FI_BACKLOG, &bad), -FI_EINVAL);
	ck_assert_int_eq(fi_control(&c.pep->fid, FI_BACKLOG, &four), 0);
	for (uint32_t i = 0; i < 20; i++) {
		forge_req_mad(mad, 0x200 + i, ntohs(c.server.sin_port), 20, 15,
			      0x7700000000000000ull | (0x200 + i));
		/* ten from one address, then ten from 192.0.2.77 */
		forge_mad(1, i < 10 ? IP_X : 0xc000024d, mad, c.cq_b);
	}
	forge_drain(1, c.cq_b);
	while ((ret = fi_eq_read(c.eq_b, &event, &ent, sizeof(ent), 0)) != -FI_EAGAIN) {
		ck_assert_int_eq(ret, sizeof(ent.e));
		ck_assert_uint_eq(event, FI_CONNREQ);
		n++;
		from_x += addr_of(ent.e.info->dest_addr) == IP_X;
		ck_assert_int_eq(fi_reject(c.pep, ent.e.info->handle, NULL, 0), 0);
		fi_freeinfo(ent.e.info);
	}
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(from_x, 3); /* its share; the fourth place for another */
	fx_open_eq_cq(&F, F.dom_a, &c.eq_a, &c.cq_a);
	fx_conn_close(&c);
}
END_TEST

/*
 * Forged CM MADs against a live connection, as an off-path attacker must
 * send them now that the IDs are random: from the peer's own address and
 * from another, DREQ, DREP, REJ, REP, RTU and MRA with guessed comm IDs
 * and QPNs, to both sides.  Nothing happens: no event on either EQ, and
 * data still flows both ways.  (test_cm_sm checks every field one at a
 * time with the others right.)
 */
START_TEST(test_forged_cm)
{
	static const uint16_t attrs[] = { DR_CM_ATTR_DREQ, DR_CM_ATTR_DREP, DR_CM_ATTR_REJ,
					  DR_CM_ATTR_REP,  DR_CM_ATTR_RTU,  DR_CM_ATTR_MRA };
	enum { PER = 500 };
	uint8_t mad[DR_MAD_LEN], buf[64];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint32_t event;
	struct fx_conn c;

	fx_connect(&F, &c);
	ping_both(&c);
	for (unsigned to = 0; to < 2; to++)
		for (size_t a = 0; a < sizeof(attrs) / sizeof(attrs[0]); a++)
			for (int i = 0; i < PER; i++) {
				struct dr_mad m;
				uint32_t local, remote;

				/* guesses: any 32-bit values (xorshift, fixed seed) */
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				local = (uint32_t)x;
				remote = (uint32_t)(x >> 32);
				dr_mad_init_cm(&m, attrs[a], x);
				memset(m.body, 0, sizeof(m.body));
				/* every one of these MADs starts with the two
				 * comm IDs; DREQ's QPN and MRA's fields after
				 * them are guessed as well */
				m.body[0] = (uint8_t)(local >> 24);
				m.body[1] = (uint8_t)(local >> 16);
				m.body[2] = (uint8_t)(local >> 8);
				m.body[3] = (uint8_t)local;
				m.body[4] = (uint8_t)(remote >> 24);
				m.body[5] = (uint8_t)(remote >> 16);
				m.body[6] = (uint8_t)(remote >> 8);
				m.body[7] = (uint8_t)remote;
				m.body[8] = (uint8_t)(x >> 16);
				m.body[9] = (uint8_t)(x >> 8);
				m.body[10] = (uint8_t)x;
				m.body[11] = (uint8_t)(x >> 40);
				dr_mad_build(&m, mad);
				forge_mad(to,
					  i & 1 ? IP_X
					  : to	? FX_IP_A
						: FX_IP_B,
					  mad, to ? c.cq_b : c.cq_a);
			}
	forge_drain(0, c.cq_a);
	forge_drain(1, c.cq_b);
	ck_assert_int_eq(fi_eq_read(c.eq_a, &event, buf, sizeof(buf), 0), -FI_EAGAIN);
	ck_assert_int_eq(fi_eq_read(c.eq_b, &event, buf, sizeof(buf), 0), -FI_EAGAIN);
	ping_both(&c);
	ck_assert_int_eq(fi_eq_read(c.eq_a, &event, buf, sizeof(buf), 0), -FI_EAGAIN);
	ck_assert_int_eq(fi_eq_read(c.eq_b, &event, buf, sizeof(buf), 0), -FI_EAGAIN);
	fx_conn_close(&c);
}
END_TEST

static void setup(void)
{
	fx_open(&F, PAIR, FI_MSG, 0);
	forge_setup();
}

static void teardown(void)
{
	fx_close(&F);
	rte_mempool_free(forge_pool);
}

int main(void)
{
	Suite *s = suite_create("fi_msg");
	TCase *tc = tcase_create("msg");

	fx_env(PAIR);
	tcase_set_timeout(tc, 120);
	/* in each test's child (fi_fixture.h: fx_run) */
	fx_add_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_getinfo);
	tcase_add_loop_test(tc, test_connect_cm_data, 0, 3);
	tcase_add_test(tc, test_cm_data_too_long);
	tcase_add_test(tc, test_reject_with_data);
	tcase_add_test(tc, test_no_listener);
	tcase_add_loop_test(tc, test_send_recv_sizes, 0, sizeof(msg_sizes) / sizeof(msg_sizes[0]));
	tcase_add_test(tc, test_senddata_inject);
	tcase_add_test(tc, test_truncated_recv);
	tcase_add_test(tc, test_shutdown);
	tcase_add_loop_test(tc, test_getinfo_refusals, 0, H_NUM);
	tcase_add_test(tc, test_getinfo_addresses);
	tcase_add_test(tc, test_getinfo_rdm);
	tcase_add_test(tc, test_wait_fd);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_unreachable_peer);
	tcase_add_test(tc, test_connreq_flood);
	tcase_add_test(tc, test_connreq_timeout);
	tcase_add_test(tc, test_pep_backlog);
	tcase_add_test(tc, test_forged_cm);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
