// SPDX-License-Identifier: BSD-2-Clause
/*
 * The kernel's ingress filter for net_af_packet ports (FI_DROCE_KERNEL_FILTER).
 *
 * A packet socket gets a copy of every frame of its interface, and the
 * kernel still runs its own IP stack on the original: each RoCE frame to
 * droce's address is routed, looked up in the UDP tables and discarded in
 * the socket port.c holds on 4791 (kernel_hold).  Measured on a veth
 * (bench/PROFILE.md section 7), that was a quarter of the CPU a frame
 * costs: 1 MiB RDMA WRITEs gained 25-36 % once it was gone.
 *
 * The kernel's netdev ingress hook runs after its packet taps (af_packet,
 * tcpdump) and before its IP stack.  So while the port is open an nftables
 * table of ours drops, there, the UDP datagrams to our address on port
 * 4791 -- only those.  The table is created with the owner flag: it
 * belongs to the netlink socket of the libnftables context the port holds,
 * and the kernel deletes it when that socket closes, at dr_port_close() or
 * when the process dies however it dies, so it never outlives droce.  Each
 * process has its own (droce_<pid>_<n>); several on one interface each drop
 * the same frames, which is harmless.
 *
 * libnftables is opened at run time (the nftables package ships it), so
 * the provider does not depend on it; without it, or without
 * CAP_NET_ADMIN, the port works as before and says why at info level.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "port_priv.h"

/* libnftables(3), soname libnftables.so.1 */
struct nft_ctx;
struct dr_nft_api {
	struct nft_ctx *(*ctx_new)(uint32_t flags);
	void (*ctx_free)(struct nft_ctx *ctx);
	int (*buffer_output)(struct nft_ctx *ctx);
	int (*buffer_error)(struct nft_ctx *ctx);
	const char *(*error_buffer)(struct nft_ctx *ctx);
	int (*run)(struct nft_ctx *ctx, const char *buf);
};

static int nft_api(struct dr_nft_api *a, const char **why)
{
	static void *lib;

	if (!lib)
		lib = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		*why = "libnftables.so.1 is not installed";
		return -ENOENT;
	}
	a->ctx_new = (struct nft_ctx * (*)(uint32_t)) dlsym(lib, "nft_ctx_new");
	a->ctx_free = (void (*)(struct nft_ctx *))dlsym(lib, "nft_ctx_free");
	a->buffer_output = (int (*)(struct nft_ctx *))dlsym(lib, "nft_ctx_buffer_output");
	a->buffer_error = (int (*)(struct nft_ctx *))dlsym(lib, "nft_ctx_buffer_error");
	a->error_buffer = (const char *(*)(struct nft_ctx *))dlsym(lib, "nft_ctx_get_error_buffer");
	a->run = (int (*)(struct nft_ctx *, const char *))dlsym(lib, "nft_run_cmd_from_buffer");
	if (!a->ctx_new || !a->ctx_free || !a->buffer_output || !a->buffer_error ||
	    !a->error_buffer || !a->run) {
		*why = "libnftables.so.1 lacks a function droce uses";
		return -ENOSYS;
	}
	return 0;
}

/* The first line of libnftables' error text, for a log line. */
static void first_line(char *dst, size_t n, const char *s)
{
	if (!s)
		s = "";
	snprintf(dst, n, "%.*s", (int)strcspn(s, "\n"), s);
}

void dr_port_kfilter_open(struct dr_port *p, const char *iface)
{
	static unsigned seq;
	struct dr_nft_api a;
	struct nft_ctx *ctx;
	char cmd[768], addr[INET6_ADDRSTRLEN], err[200] = "";
	const char *why = NULL;
	int n;

	if (!p->kfilter_on || p->kfilter)
		return;
	if (strlen(iface) >= 16 || strpbrk(iface, "\"\\ \t\n")) {
		dr_port_log(DR_PORT_LOG_INFO, "%s: no kernel ingress filter: interface name %s",
			    p->name, iface);
		return;
	}
	if (nft_api(&a, &why) < 0)
		goto fail;
	ctx = a.ctx_new(0);
	if (!ctx) {
		why = "nft_ctx_new failed";
		goto fail;
	}
	a.buffer_output(ctx);
	a.buffer_error(ctx);
	if (p->ipv6) {
		struct in6_addr a6;

		memcpy(&a6, p->ip6, 16);
		inet_ntop(AF_INET6, &a6, addr, sizeof(addr));
	} else {
		struct in_addr a4 = {.s_addr = htonl(p->ip)};

		inet_ntop(AF_INET, &a4, addr, sizeof(addr));
	}
	snprintf(p->kfilter_table, sizeof(p->kfilter_table), "droce_%d_%u", (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	n = snprintf(cmd, sizeof(cmd),
		     "add table netdev %s { flags owner; }\n"
		     "add chain netdev %s in { type filter hook ingress device \"%s\" "
		     "priority -500; }\n"
		     "add rule netdev %s in %s daddr %s udp dport %u drop\n",
		     p->kfilter_table, p->kfilter_table, iface, p->kfilter_table,
		     p->ipv6 ? "ip6" : "ip", addr, DR_ROCE_UDP_PORT);
	if (n < 0 || (size_t)n >= sizeof(cmd) || a.run(ctx, cmd)) {
		first_line(err, sizeof(err), a.error_buffer(ctx));
		why = err[0] ? err : "nftables refused the table";
		a.ctx_free(ctx);
		goto fail;
	}
	p->kfilter = ctx;
	p->kfilter_free = (void (*)(void *))a.ctx_free;
	dr_port_log(DR_PORT_LOG_INFO,
		    "%s: the kernel drops RoCE frames to %s at %s's ingress, after its packet taps "
		    "(nftables table netdev %s, gone with the process)",
		    p->name, addr, iface, p->kfilter_table);
	return;
fail:
	p->kfilter_table[0] = '\0';
	dr_port_log(DR_PORT_LOG_INFO,
		    "%s: no kernel ingress filter on %s (%s): the kernel's IP stack handles each "
		    "RoCE frame too",
		    p->name, iface, why);
}

void dr_port_kfilter_close(struct dr_port *p)
{
	if (!p->kfilter)
		return;
	/* closing the context's netlink socket deletes the owned table */
	p->kfilter_free(p->kfilter);
	p->kfilter = NULL;
}
