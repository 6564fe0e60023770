// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_fi_ipv6 - FI_SOCKADDR_IN6 through the public libfabric API: the two
 * ends of an in-process link as IPv6 domains (FI_DROCE_ADDR fd00::1/64 and
 * fd00::2/64), getinfo's addresses, a connection (the CM over IPv6, ND
 * between the ports), fi_getname/fi_getpeer/fi_setname/fi_connect with
 * IPv6 addresses and the IPv4 ones refused, and data over it: a
 * multi-packet send and an RDMA write and read, verified with guard bytes.
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_rma.h>

#include "fi_ext_droce.h"
#include "fi_fixture.h"

#define PAIR "ipv6t"

static const char *const addr_a = "fd00::1", *const addr_b = "fd00::2";

static struct fx f;

static void hints_fill(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | FI_RMA;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("droce");
}

static void assert_sin6(const void *addr, size_t len, const char *ip, int port)
{
	const struct sockaddr_in6 *s = addr;
	struct in6_addr want;

	ck_assert_ptr_nonnull(addr);
	ck_assert_uint_eq(len, sizeof(struct sockaddr_in6));
	ck_assert_int_eq(s->sin6_family, AF_INET6);
	ck_assert_int_eq(inet_pton(AF_INET6, ip, &want), 1);
	ck_assert_mem_eq(&s->sin6_addr, &want, 16);
	if (port >= 0)
		ck_assert_uint_eq(ntohs(s->sin6_port), (unsigned)port);
}

START_TEST(test_getinfo)
{
	struct fi_info *hints = fi_allocinfo(), *info, *i;
	int n = 0;

	hints_fill(hints);
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), 0);
	for (i = info; i; i = i->next) {
		ck_assert_uint_eq(i->addr_format, FI_SOCKADDR_IN6);
		if (!strcmp(i->domain_attr->name, "pair:" PAIR ":0"))
			assert_sin6(i->src_addr, i->src_addrlen, addr_a, 0);
		else
			assert_sin6(i->src_addr, i->src_addrlen, addr_b, 0);
		n++;
	}
	ck_assert_int_eq(n, 2);
	fi_freeinfo(info);

	/* a destination node: its sockaddr_in6 with the service's port */
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), addr_b, "7471", 0, hints, &info), 0);
	assert_sin6(info->dest_addr, info->dest_addrlen, addr_b, 7471);
	fi_freeinfo(info);

	/* FI_SOCKADDR_IN asked of IPv6 devices: none */
	hints->addr_format = FI_SOCKADDR_IN;
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), -FI_ENODATA);
	hints->addr_format = FI_SOCKADDR_IN6;
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), 0);
	fi_freeinfo(info);
	/* an IPv4 node: no IPv4 device */
	hints->addr_format = FI_FORMAT_UNSPEC;
	ck_assert_int_eq(fi_getinfo(FI_VERSION(1, 17), "192.0.2.2", "7471", 0, hints, &info),
			 -FI_ENODATA);
	fi_freeinfo(hints);
}
END_TEST

START_TEST(test_connect_and_data)
{
	struct fi_eq_attr ea = {.wait_obj = FI_WAIT_NONE};
	struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_NONE};
	struct fid_eq *eq_a, *eq_b;
	struct fid_cq *cq_a, *cq_b;
	struct fid_pep *pep;
	struct fid_ep *ep_a, *ep_b;
	struct sockaddr_in6 server, peer;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(7471)};
	struct fi_eq_cm_entry e;
	struct fi_cq_data_entry ce;
	struct fx_region sa, rb, wa, wb;
	size_t len;
	uint32_t event;
	uint16_t port;

	ck_assert_int_eq(fi_eq_open(f.fabric, &ea, &eq_a, NULL), 0);
	ck_assert_int_eq(fi_eq_open(f.fabric, &ea, &eq_b, NULL), 0);
	ck_assert_int_eq(fi_cq_open(f.dom_a, &ca, &cq_a, NULL), 0);
	ck_assert_int_eq(fi_cq_open(f.dom_b, &ca, &cq_b, NULL), 0);

	ck_assert_int_eq(fi_passive_ep(f.fabric, f.info_b, &pep, NULL), 0);
	ck_assert_int_eq(fi_pep_bind(pep, &eq_b->fid, 0), 0);
	/* an IPv4 name for an IPv6 listener: refused */
	ck_assert_int_eq(fi_setname(&pep->fid, &sin, sizeof(sin)), -FI_EINVAL);
	ck_assert_int_eq(fi_listen(pep), 0);
	len = sizeof(struct sockaddr_in);
	ck_assert_int_eq(fi_getname(&pep->fid, &server, &len), -FI_ETOOSMALL);
	ck_assert_uint_eq(len, sizeof(server));
	ck_assert_int_eq(fi_getname(&pep->fid, &server, &len), 0);
	assert_sin6(&server, len, addr_b, -1);
	port = ntohs(server.sin6_port);
	ck_assert_uint_ne(port, 0);

	ck_assert_int_eq(fi_endpoint(f.dom_a, f.info_a, &ep_a, NULL), 0);
	ck_assert_int_eq(fi_ep_bind(ep_a, &eq_a->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(ep_a, &cq_a->fid, FI_TRANSMIT | FI_RECV), 0);
	ck_assert_int_eq(fi_enable(ep_a), 0);
	len = sizeof(peer);
	ck_assert_int_eq(fi_getpeer(ep_a, &peer, &len), -FI_ENOTCONN);
	/* an IPv4 address to an IPv6 endpoint: refused */
	inet_pton(AF_INET, "192.0.2.2", &sin.sin_addr);
	ck_assert_int_eq(fi_connect(ep_a, &sin, NULL, 0), -FI_EINVAL);
	ck_assert_int_eq(fi_connect(ep_a, &server, "v6", 2), 0);

	{
		struct {
			struct fi_eq_cm_entry e;
			uint8_t data[64];
		} req;

		ck_assert_int_gt(fx_eq_wait(eq_b, &event, &req, sizeof(req)), 0);
		ck_assert_uint_eq(event, FI_CONNREQ);
		ck_assert_mem_eq(req.e.data, "v6", 2);
		/* the request's addresses: ours with the listening port, the
		 * peer's IPv6 address */
		assert_sin6(req.e.info->src_addr, req.e.info->src_addrlen, addr_b, port);
		assert_sin6(req.e.info->dest_addr, req.e.info->dest_addrlen, addr_a, -1);
		ck_assert_uint_eq(req.e.info->addr_format, FI_SOCKADDR_IN6);
		ck_assert_int_eq(fi_endpoint(f.dom_b, req.e.info, &ep_b, NULL), 0);
		fi_freeinfo(req.e.info);
	}
	ck_assert_int_eq(fi_ep_bind(ep_b, &eq_b->fid, 0), 0);
	ck_assert_int_eq(fi_ep_bind(ep_b, &cq_b->fid, FI_TRANSMIT | FI_RECV), 0);
	ck_assert_int_eq(fi_accept(ep_b, NULL, 0), 0);
	ck_assert_int_eq(fx_eq_wait(eq_a, &event, &e, sizeof(e)), (ssize_t)sizeof(e));
	ck_assert_uint_eq(event, FI_CONNECTED);
	ck_assert_int_eq(fx_eq_wait(eq_b, &event, &e, sizeof(e)), (ssize_t)sizeof(e));
	ck_assert_uint_eq(event, FI_CONNECTED);

	len = sizeof(peer);
	ck_assert_int_eq(fi_getpeer(ep_a, &peer, &len), 0);
	assert_sin6(&peer, len, addr_b, port);
	len = sizeof(peer);
	ck_assert_int_eq(fi_getpeer(ep_b, &peer, &len), 0);
	assert_sin6(&peer, len, addr_a, -1);
	len = sizeof(peer);
	ck_assert_int_eq(fi_getname(&ep_a->fid, &peer, &len), 0);
	assert_sin6(&peer, len, addr_a, -1);
	ck_assert_uint_ne(ntohs(peer.sin6_port), 0);

	/* a 3000-byte send: three packets at path MTU 1024 */
	fx_region_open(&sa, f.dom_a, 3000, FI_SEND | FI_RECV, 0);
	fx_region_open(&rb, f.dom_b, 3000, FI_SEND | FI_RECV, 0);
	for (size_t i = 0; i < 3000; i++)
		sa.buf[i] = (uint8_t)(i * 7 + 3);
	ck_assert_int_eq(fi_recv(ep_b, rb.buf, 3000, fi_mr_desc(rb.mr), 0, &rb), 0);
	ck_assert_int_eq(fi_send(ep_a, sa.buf, 3000, fi_mr_desc(sa.mr), 0, &sa), 0);
	ck_assert_int_eq(fx_cq_wait(cq_a, cq_b, &ce), 1);
	ck_assert_ptr_eq(ce.op_context, &sa);
	ck_assert_int_eq(fx_cq_wait(cq_b, cq_a, &ce), 1);
	ck_assert_ptr_eq(ce.op_context, &rb);
	ck_assert_uint_eq(ce.len, 3000);
	ck_assert_mem_eq(rb.buf, sa.buf, 3000);
	fx_region_check_guards(&rb);

	/* RDMA write 64 KiB into b, read it back into a's second half */
	fx_region_open(&wa, f.dom_a, 131072, FI_WRITE | FI_READ, 0);
	fx_region_open(&wb, f.dom_b, 65536, FI_REMOTE_WRITE | FI_REMOTE_READ, 0);
	for (size_t i = 0; i < 65536; i++)
		wa.buf[i] = (uint8_t)(i ^ (i >> 8));
	ck_assert_int_eq(fi_write(ep_a, wa.buf, 65536, fi_mr_desc(wa.mr), 0,
				  (uint64_t)(uintptr_t)wb.buf, wb.key, &wa),
			 0);
	ck_assert_int_eq(fx_cq_wait(cq_a, cq_b, &ce), 1);
	ck_assert_ptr_eq(ce.op_context, &wa);
	ck_assert_mem_eq(wb.buf, wa.buf, 65536);
	ck_assert_int_eq(fi_read(ep_a, wa.buf + 65536, 65536, fi_mr_desc(wa.mr), 0,
				 (uint64_t)(uintptr_t)wb.buf, wb.key, &wb),
			 0);
	ck_assert_int_eq(fx_cq_wait(cq_a, cq_b, &ce), 1);
	ck_assert_ptr_eq(ce.op_context, &wb);
	ck_assert_mem_eq(wa.buf + 65536, wa.buf, 65536);
	fx_region_check_guards(&wa);
	fx_region_check_guards(&wb);

	/* the ports found each other by ND: solicitations and advertisements
	 * both ways, none refused, not one ARP frame */
	ck_assert_uint_ge(fx_counter(&f.dom_a->fid, "tx_nd"), 2);
	ck_assert_uint_ge(fx_counter(&f.dom_a->fid, "rx_nd"), 1);
	ck_assert_uint_ge(fx_counter(&f.dom_b->fid, "tx_nd"), 2);
	ck_assert_uint_ge(fx_counter(&f.dom_b->fid, "rx_nd"), 1);
	ck_assert_uint_eq(
	    fx_counter(&f.dom_a->fid, "rx_nd_bad") + fx_counter(&f.dom_b->fid, "rx_nd_bad"), 0);
	ck_assert_uint_eq(fx_counter(&f.dom_a->fid, "tx_arp") + fx_counter(&f.dom_b->fid, "tx_arp"),
			  0);
	ck_assert_uint_eq(fx_counter(&f.dom_a->fid, "rx_arp") + fx_counter(&f.dom_b->fid, "rx_arp"),
			  0);
	ck_assert_uint_eq(fx_counter(&f.dom_a->fid, "arp_resolved"), 1);

	ck_assert_int_eq(fi_shutdown(ep_a, 0), 0);
	ck_assert_int_eq(fx_eq_wait(eq_b, &event, &e, sizeof(e)), (ssize_t)sizeof(e));
	ck_assert_uint_eq(event, FI_SHUTDOWN);
	fx_region_close(&sa);
	fx_region_close(&rb);
	fx_region_close(&wa);
	fx_region_close(&wb);
	ck_assert_int_eq(fi_close(&ep_a->fid), 0);
	ck_assert_int_eq(fi_close(&ep_b->fid), 0);
	ck_assert_int_eq(fi_close(&pep->fid), 0);
	ck_assert_int_eq(fi_close(&cq_a->fid), 0);
	ck_assert_int_eq(fi_close(&cq_b->fid), 0);
	ck_assert_int_eq(fi_close(&eq_a->fid), 0);
	ck_assert_int_eq(fi_close(&eq_b->fid), 0);
}
END_TEST

static void setup(void)
{
	fx_open(&f, PAIR, FI_MSG | FI_RMA, 0);
	ck_assert_uint_eq(f.info_a->addr_format, FI_SOCKADDR_IN6);
}

static void teardown(void)
{
	fx_close(&f);
}

int main(void)
{
	Suite *s = suite_create("fi_ipv6");
	TCase *tc = tcase_create("ipv6");

	fx_env(PAIR);
	setenv("FI_DROCE_ADDR", "fd00::1/64;fd00::2/64", 1);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_getinfo);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_connect_and_data);
	suite_add_tcase(s, tc);
	return fx_run(s);
}
