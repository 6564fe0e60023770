// SPDX-License-Identifier: BSD-2-Clause
/*
 * The provider's entry point and its parameters.  fi_prov_ini only defines
 * the parameters and hands libfabric the provider: no DPDK start-up here
 * (docs/design.md); the EAL starts when a domain first needs a port.
 */
#include <pthread.h>
#include <stdlib.h>

#include "dr_fi.h"

/*
 * libfabric's destructor (fi_fini) calls this, then dlclose()s the DSO.  It
 * runs when the process exits -- main returned, exit() on any thread -- and
 * the application may have left everything open: fabric, domains,
 * connected endpoints with traffic in flight, CQs, EQs, counters, MRs.
 *
 * Each device's progress thread is stopped and joined, since it runs
 * droce's code, and each port sends what it has queued and completes its
 * capture file; the devices are then inert (dr_dev_quiesce in dev.c), and
 * no fabric or device opens after this.  Objects are not freed, and the
 * ethdevs are not stopped: the application's other threads go on running
 * while exit() does this and may be inside droce (a post still hands its
 * frames to the port), and objects may still be closed afterwards (which
 * closes the port as usual); both find valid memory.  What the ethdevs
 * hold (sockets, memif connections, vfio) the kernel releases when the
 * process ends, as for any process that ends with a port open.
 *
 * That also needs the code to stay: the DSO is linked -z nodelete
 * (Makefile.am), so libfabric's dlclose() unmaps neither droce nor the
 * DPDK libraries it loaded, whose threads (EAL's interrupt thread) keep
 * running until the process ends -- DPDK 22.11 cannot stop them, and
 * rte_eal_cleanup() is not ours to call (port_eal.c).  Without it, a
 * thread inside fi_cq_read, or an fi_close after this, jumps into unmapped
 * code (tests/exit-open.sh: 31 of 120 runs killed by SIGSEGV); without
 * the rest, captures are left unclosed or cut inside a frame.
 *
 * The work is dr_fabric_cleanup's (fabric.c), which owns the list of open
 * fabrics and through them the devices; this is only libfabric's hook.
 */
static void dr_cleanup(void)
{
	dr_fabric_cleanup();
}

struct fi_provider dr_prov = {
	.version = DR_PROV_VERSION,
	.fi_version = DR_FI_VERSION,
	.name = DR_PROV_NAME,
	.getinfo = dr_getinfo,
	.fabric = dr_fabric_open,
	.cleanup = dr_cleanup,
};

/* One table: name (after FI_DROCE_), type, default, limits, help.  Each
 * parameter is named as its field of struct dr_settings. */
enum dr_param_kind { DR_PARAM_STR, DR_PARAM_INT };
static const struct dr_param {
	const char *name;
	enum dr_param_kind kind;
	size_t off; /* in struct dr_settings */
	int def, min, max;
	const char *help;
} dr_params[] = {
#define PARAM_STR(f, help)                                                                         \
	{                                                                                          \
#f, DR_PARAM_STR, offsetof(struct dr_settings, f), 0, 0, 0, help                   \
	}
#define PARAM_INT(f, def, min, max, help)                                                          \
	{                                                                                          \
#f, DR_PARAM_INT, offsetof(struct dr_settings, f), def, min, max, help             \
	}
    PARAM_STR(device, "DPDK device spec: a vdev such as net_memif0,role=server,socket=/tmp/s "
		      "or net_af_packet0,iface=eth0, a PCI address, or packet:IF (default: "
		      "FI_DROCE_KERNEL_PMD on the interface holding the local address)"),
    PARAM_STR(addr, "IPv4 or IPv6 address/prefix of the port, e.g. 192.0.2.1/24 or "
		    "2001:db8::1/64 (default: the interface's own address with "
		    "net_af_packet; required otherwise)"),
    PARAM_INT(ip_version, 0, 0, 6,
	      "4 or 6: the IP version of the port where an interface has both (default: 0, "
	      "from FI_DROCE_ADDR, the nodes or the hints' addr_format, else IPv4 when the "
	      "interface has an IPv4 address)"),
    PARAM_STR(eal_args, "extra DPDK EAL arguments, space separated (default: none)"),
    PARAM_INT(mtu, 0, 0, 9216,
	      "Ethernet MTU of the port; the path MTU is derived as rdma_rxe does "
	      "(1500 -> 1024, 4200 or more -> 4096) (default: 0, the interface's MTU, "
	      "1500 for devices without one)"),
    PARAM_INT(qdisc_bypass, 0, 0, 1,
	      "net_af_packet: 1 sends past the kernel's qdisc layer and its packet taps, so "
	      "tcpdump on the interface does not see droce's own frames (DPDK's default); "
	      "0 sends through it (default: 0, both directions visible)"),
    PARAM_INT(kernel_filter, 1, 0, 1,
	      "net_af_packet: 1 has the kernel drop droce's RoCE frames (UDP 4791 to its "
	      "address) at the interface's ingress, after its packet taps (tcpdump still sees "
	      "them) and before its IP stack, through an nftables table the process owns and "
	      "the kernel deletes when it exits (needs CAP_NET_ADMIN and libnftables.so.1); 0 "
	      "lets the kernel's IP stack process and discard each of them (default: 1)"),
    PARAM_STR(kernel_pmd,
	      "DPDK driver on a kernel interface when FI_DROCE_DEVICE is not set: af_packet, "
	      "af_xdp (net_af_xdp: faster, but it takes every frame of the interface's queue 0 "
	      "from the kernel and from tcpdump, serves one process, and carries path MTU 2048 "
	      "at most) or auto (af_xdp where the kernel and privileges allow it, af_packet "
	      "otherwise), or packet (droce's own packet socket, packet:IF, as af_packet but "
	      "carrying UDP GSO super-frames: FI_DROCE_GSO) (default: packet)"),
    PARAM_INT(gso, 1, 0, 1,
	      "packet:IF ports: 1 sends each QP's runs of equal-size packets as UDP GSO "
	      "super-frames (up to 64 packets in one skb, cut into the same RoCEv2 frames by "
	      "whatever cuts them) to peers whose port takes them whole, as their CM says "
	      "(ECE); 0 sends one frame per packet (default: 1)"),
    PARAM_INT(rx_filter, 1, 0, 1,
	      "packet:IF ports shared by several droce processes: 1 has the kernel drop, "
	      "before it copies them, the RoCEv2 frames for other processes' QPs (a socket "
	      "filter in every process but the CM responder); 0 lets every process read every "
	      "frame (default: 1)"),
    PARAM_STR(pcap, "write every frame sent and received to this pcapng file (default: off)"),
    PARAM_INT(retry_cnt, 7, 0, 7, "transport retries before a work request fails (default: 7)"),
    PARAM_INT(rnr_retry, 7, 0, 7,
	      "RNR retries before a work request fails; 7 = infinite (default: 7)"),
    PARAM_INT(timeout, 14, 1, 31,
	      "ACK timeout exponent: 4.096 us * 2^timeout (default: 14, 67 ms)"),
    PARAM_INT(min_rnr_timer, 12, 0, 31,
	      "RNR NAK timer code sent to peers (IBA table 45) (default: 12, 0.64 ms)"),
    PARAM_INT(cm_timeout, 20, 8, 31,
	      "CM response timeout exponent: 4.096 us * 2^n per MAD (default: 20, "
	      "4.3 s, as rdma_cm)"),
    PARAM_INT(cm_retries, 15, 0, 15,
	      "CM MAD resends before a connect fails (default: 15, as rdma_cm)"),
    PARAM_INT(cc, 1, 0, 1,
	      "congestion control: data frames ECN-capable (ECT(0)), CNPs answer CE, and each "
	      "QP's rate is cut by CNPs and go-back-N and recovers over time (DCQCN); 0 turns "
	      "all of it off (default: 1)"),
    PARAM_INT(lazy_ack, 1, 0, 1,
	      "between two droce endpoints that both have it (their CM says so: ECE): 1 "
	      "acknowledges request packets unasked within 32 us, so that a send or write "
	      "nothing waits for (fi_inject without a counter) need not ask for an ACK "
	      "(BTH AckReq) and a ping-pong carries an ACK every few round trips instead of "
	      "behind every message; 0 asks at every message's end, as rdma_rxe "
	      "(default: 1)"),
    PARAM_INT(cm_backlog, 1024, 1, 65536,
	      "connection requests a listener holds unanswered; more are dropped (default: 1024, "
	      "rdma_ucm's max_backlog; fi_control FI_BACKLOG sets it per listener)"),
#undef PARAM_STR
#undef PARAM_INT
};

static struct dr_settings settings;
static bool settings_ok;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static void settings_read(void)
{
	settings_ok = true;
	for (size_t i = 0; i < sizeof(dr_params) / sizeof(dr_params[0]); i++) {
		const struct dr_param *p = &dr_params[i];
		void *field = (char *)&settings + p->off;

		if (p->kind == DR_PARAM_STR) {
			char *v = NULL;

			if (fi_param_get_str(&dr_prov, p->name, &v) == FI_SUCCESS && v && *v)
				*(char **)field = v;
			continue;
		}
		int v = p->def;

		fi_param_get_int(&dr_prov, p->name, &v);
		if (v < p->min || v > p->max) {
			DR_WARN(FI_LOG_CORE, "FI_DROCE_%s=%d is out of range %d..%d\n", p->name, v,
				p->min, p->max);
			settings_ok = false;
		}
		*(int *)field = v;
	}
}

const struct dr_settings *dr_settings_get(void)
{
	pthread_once(&settings_once, settings_read);
	return settings_ok ? &settings : NULL;
}

/* the DSO exports this symbol and nothing else (-fvisibility=hidden) */
FI_EXT_INI;
FI_EXT_INI
{
	for (size_t i = 0; i < sizeof(dr_params) / sizeof(dr_params[0]); i++)
		fi_param_define(&dr_prov, dr_params[i].name,
				dr_params[i].kind == DR_PARAM_STR ? FI_PARAM_STRING : FI_PARAM_INT,
				"%s", dr_params[i].help);
	return &dr_prov;
}
