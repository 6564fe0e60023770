// SPDX-License-Identifier: BSD-2-Clause
/*
 * Which DPDK device and which IP address a domain uses.
 *
 * With FI_DROCE_DEVICE set, that device, with FI_DROCE_ADDR (required unless
 * the device is net_af_packet on an interface that has an address).
 * Without it, net_af_packet on a kernel interface chosen as a user would
 * expect (issue 4): the one holding the local address (FI_DROCE_ADDR, or the
 * node given with FI_SOURCE), else the one whose subnet contains the
 * destination, else the first up, non-loopback interface with an IPv4
 * address.  That mirrors `rdma link add rxe0 type rxe netdev eth0`: droce
 * sits beside the kernel on the same interface and address.
 *
 * IPv6 (issue 12): a domain has one address, of one family.  The family is
 * FI_DROCE_IP_VERSION's, else that of FI_DROCE_ADDR, the source or the
 * destination node (getinfo also turns the hints' addr_format and
 * addresses into one of those), else IPv4 where the interface has an IPv4
 * address and IPv6 where it has only IPv6.  IPv6 addresses are taken from
 * /proc/net/if_inet6: global scope only (global and unique-local, not
 * link-local: a GID carries no scope), not tentative, not failed DAD, not
 * deprecated -- unless FI_DROCE_ADDR names one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dr_fi.h"

/* "a.b.c.d[/nn]" or "x::y[/nnn]"; prefix 0 if none.  0 or -FI_EINVAL. */
static int dr_parse_ip_prefix(const char *s, struct dr_ipaddr *a, uint8_t *prefix)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	struct in_addr a4;
	long max;

	memset(a, 0, sizeof(*a));
	if (n >= sizeof(buf))
		return -FI_EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &a4) == 1) {
		a->family = AF_INET;
		a->ip4 = ntohl(a4.s_addr);
		max = 32;
	} else if (inet_pton(AF_INET6, buf, a->ip6) == 1) {
		a->family = AF_INET6;
		max = 128;
	} else {
		return -FI_EINVAL;
	}
	*prefix = 0;
	if (slash) {
		char *end;
		long p = strtol(slash + 1, &end, 10);

		if (end == slash + 1 || *end || p < 1 || p > max)
			return -FI_EINVAL;
		*prefix = (uint8_t)p;
	}
	return 0;
}

int dr_resolve_ip(const char *node, int family, struct dr_ipaddr *a)
{
	struct addrinfo hints = {.ai_family = family ? family : AF_UNSPEC}, *res, *r;
	const struct addrinfo *pick = NULL;

	memset(a, 0, sizeof(*a));
	if (getaddrinfo(node, NULL, &hints, &res))
		return -FI_ENODATA;
	/* either family: IPv4 first, as droce always chose */
	for (r = res; r; r = r->ai_next)
		if (r->ai_family == AF_INET || (r->ai_family == AF_INET6 && !pick))
			if (!pick || pick->ai_family != AF_INET)
				pick = r;
	if (pick && pick->ai_family == AF_INET) {
		a->family = AF_INET;
		a->ip4 = ntohl(((struct sockaddr_in *)pick->ai_addr)->sin_addr.s_addr);
	} else if (pick) {
		a->family = AF_INET6;
		memcpy(a->ip6, &((struct sockaddr_in6 *)pick->ai_addr)->sin6_addr, 16);
	}
	freeaddrinfo(res);
	return pick ? 0 : -FI_ENODATA;
}

/* ---- endpoint addresses -------------------------------------------------- */

void dr_sa_local(union dr_sockaddr *a, const struct dr_devcfg *cfg, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	if (cfg->ipv6) {
		a->sin6.sin6_family = AF_INET6;
		memcpy(&a->sin6.sin6_addr, cfg->ip6, 16);
		a->sin6.sin6_port = htons(port);
	} else {
		a->sin.sin_family = AF_INET;
		a->sin.sin_addr.s_addr = htonl(cfg->ip4);
		a->sin.sin_port = htons(port);
	}
}

void dr_sa_from_gid(union dr_sockaddr *a, const struct dr_devcfg *cfg, const uint8_t gid[16],
		    uint16_t port)
{
	memset(a, 0, sizeof(*a));
	if (cfg->ipv6) {
		a->sin6.sin6_family = AF_INET6;
		memcpy(&a->sin6.sin6_addr, gid, 16);
		a->sin6.sin6_port = htons(port);
	} else {
		a->sin.sin_family = AF_INET;
		memcpy(&a->sin.sin_addr, gid + 12, 4); /* ::ffff:a.b.c.d */
		a->sin.sin_port = htons(port);
	}
}

bool dr_sa_take(const void *addr, size_t addrlen, const struct dr_devcfg *cfg,
		union dr_sockaddr *out)
{
	const struct sockaddr *sa = addr;
	size_t want = cfg->ipv6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);

	if (!addr || addrlen < want || sa->sa_family != (cfg->ipv6 ? AF_INET6 : AF_INET))
		return false;
	memset(out, 0, sizeof(*out));
	memcpy(out, addr, want);
	return true;
}

bool dr_sa_is_local(const union dr_sockaddr *a, const struct dr_devcfg *cfg)
{
	if (cfg->ipv6)
		return IN6_IS_ADDR_UNSPECIFIED(&a->sin6.sin6_addr) ||
		       !memcmp(&a->sin6.sin6_addr, cfg->ip6, 16);
	return a->sin.sin_addr.s_addr == htonl(INADDR_ANY) ||
	       ntohl(a->sin.sin_addr.s_addr) == cfg->ip4;
}

const char *dr_sa_str(const union dr_sockaddr *a, char *buf, size_t len)
{
	if (!inet_ntop(a->sa.sa_family,
		       a->sa.sa_family == AF_INET6 ? (const void *)&a->sin6.sin6_addr
						   : (const void *)&a->sin.sin_addr,
		       buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* ---- choosing the interface --------------------------------------------- */

static uint8_t mask_to_prefix(uint32_t mask)
{
	uint8_t p = 0;

	while (mask & 0x80000000u) {
		p++;
		mask <<= 1;
	}
	return p;
}

static int if_mtu(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), mtu = 0;

	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = ifr.ifr_mtu;
	close(fd);
	return mtu;
}

/* PICK_NAME: the interface already in cfg->ifname */
enum pick { PICK_LOCAL, PICK_SUBNET, PICK_FIRST, PICK_NAME };

/* Find an up IPv4 interface by rule; fills ifname, ip and prefix. */
static int pick_iface(enum pick rule, uint32_t want, struct dr_devcfg *cfg)
{
	struct ifaddrs *ifa, *i;
	int ret = -FI_ENODATA;

	if (getifaddrs(&ifa))
		return -FI_ENODATA;
	for (i = ifa; i; i = i->ifa_next) {
		uint32_t ip, mask;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask)
			continue;
		if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		ip = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		mask = ntohl(((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr);
		if ((rule == PICK_LOCAL && ip != want) ||
		    (rule == PICK_SUBNET && (ip & mask) != (want & mask)) ||
		    (rule == PICK_NAME && strcmp(i->ifa_name, cfg->ifname)))
			continue;
		snprintf(cfg->ifname, sizeof(cfg->ifname), "%s", i->ifa_name);
		cfg->ip4 = ip;
		cfg->prefix = mask_to_prefix(mask);
		ret = 0;
		break;
	}
	freeifaddrs(ifa);
	return ret;
}

/* The kernel interface named by an af_packet or af_xdp spec ("iface=X")
 * or a packet: spec, if any. */
static bool spec_kernel_iface(const char *spec, char *ifname, size_t len)
{
	const char *p;
	size_t n;

	if (!strncmp(spec, "packet:", 7)) {
		p = spec + 7;
	} else {
		if (strncmp(spec, "net_af_packet", 13) && strncmp(spec, "net_af_xdp", 10))
			return false;
		p = strstr(spec, "iface=");
		if (!p)
			return false;
		p += 6;
	}
	n = strcspn(p, ",");
	if (!n || n >= len)
		return false;
	memcpy(ifname, p, n);
	ifname[n] = '\0';
	return true;
}

/* up and not loopback */
static bool if_usable(const char *ifname)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	bool ok = false;

	if (fd < 0)
		return false;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr))
		ok = (ifr.ifr_flags & IFF_UP) && !(ifr.ifr_flags & IFF_LOOPBACK);
	close(fd);
	return ok;
}

static bool prefix_match6(const uint8_t *a, const uint8_t *b, unsigned plen)
{
	unsigned bytes = plen / 8, bits = plen % 8;

	if (memcmp(a, b, bytes))
		return false;
	return !bits || !((a[bytes] ^ b[bytes]) & (0xff00 >> bits));
}

/* The IPv6 counterpart of pick_iface, from /proc/net/if_inet6 (which has
 * the scope and the DAD flags getifaddrs does not give): global scope,
 * not tentative, DAD not failed, not deprecated.  want: the address
 * (PICK_LOCAL) or the destination (PICK_SUBNET). */
static int pick_iface6(enum pick rule, const uint8_t *want, struct dr_devcfg *cfg)
{
	FILE *f = fopen("/proc/net/if_inet6", "r");
	char hex[33], name[IF_NAMESIZE];
	unsigned idx, plen, scope, flags;
	int ret = -FI_ENODATA;

	if (!f)
		return -FI_ENODATA;
	while (fscanf(f, "%32s %x %x %x %x %15s", hex, &idx, &plen, &scope, &flags, name) == 6) {
		uint8_t a[16];

		for (int k = 0; k < 16; k++) {
			unsigned b;

			if (sscanf(hex + 2 * k, "%2x", &b) != 1)
				goto next;
			a[k] = (uint8_t)b;
		}
		/* IFA_F_TENTATIVE 0x40, IFA_F_DEPRECATED 0x20, IFA_F_DADFAILED 0x08;
		 * scope 0: global (unique-local included) */
		if (rule != PICK_LOCAL && (scope != 0 || (flags & (0x40 | 0x20 | 0x08))))
			continue;
		if ((rule == PICK_LOCAL && memcmp(a, want, 16)) ||
		    (rule == PICK_SUBNET && !prefix_match6(a, want, plen)) ||
		    (rule == PICK_NAME && strcmp(name, cfg->ifname)) || !if_usable(name))
			continue;
		snprintf(cfg->ifname, sizeof(cfg->ifname), "%s", name);
		cfg->ipv6 = true;
		cfg->ip4 = 0;
		memcpy(cfg->ip6, a, 16);
		cfg->prefix = (uint8_t)plen;
		ret = 0;
		break;
	next:;
	}
	fclose(f);
	return ret;
}

/* By rule, in family fam (0: IPv4, else IPv6) */
static int pick(enum pick rule, int fam, const struct dr_ipaddr *want, struct dr_devcfg *cfg)
{
	if (fam != AF_INET6 && !pick_iface(rule, want ? want->ip4 : 0, cfg))
		return 0;
	if (fam == AF_INET)
		return -FI_ENODATA;
	return pick_iface6(rule, want ? want->ip6 : NULL, cfg);
}

static const char *ip_str(const struct dr_ipaddr *a, char *buf, size_t len)
{
	if (a->family == AF_INET6)
		inet_ntop(AF_INET6, a->ip6, buf, (socklen_t)len);
	else
		snprintf(buf, len, "%u.%u.%u.%u", a->ip4 >> 24, (a->ip4 >> 16) & 0xff,
			 (a->ip4 >> 8) & 0xff, a->ip4 & 0xff);
	return buf;
}

static void set_addr(struct dr_devcfg *cfg, const struct dr_ipaddr *a)
{
	cfg->ipv6 = a->family == AF_INET6;
	cfg->ip4 = cfg->ipv6 ? 0 : a->ip4;
	memset(cfg->ip6, 0, 16);
	if (cfg->ipv6)
		memcpy(cfg->ip6, a->ip6, 16);
}

/* "v4", "v6" or "" (either) for a log line's "IP%s". */
static const char *ip_version_str(int family)
{
	return family == AF_INET ? "v4" : family == AF_INET6 ? "v6" : "";
}

static bool same_addr(const struct dr_devcfg *cfg, const struct dr_ipaddr *a)
{
	return a->family == AF_INET6 ? cfg->ipv6 && !memcmp(cfg->ip6, a->ip6, 16)
				     : !cfg->ipv6 && cfg->ip4 == a->ip4;
}

/*
 * The device on a kernel interface when FI_DROCE_DEVICE is not set
 * (FI_DROCE_KERNEL_PMD).  A packet socket by default, droce's own
 * (packet:IF, src/roce/port_pk.c), as DPDK's net_af_packet ("af_packet")
 * but able to send and receive UDP GSO super-frames: the kernel keeps the
 * interface (its ARP, its TCP), tcpdump sees both directions, and any
 * number of droce processes share it.  net_af_xdp is faster per frame but
 * its XDP program hands every frame of the queue it binds to droce alone:
 * the host's own traffic on that queue, packet taps and other processes
 * see none of it.  "auto" takes it where an XDP socket can be created
 * (the kernel has them, and CAP_NET_RAW); "af_xdp" insists.
 */
static int kernel_spec(const char *pmd, int mtu, struct dr_devcfg *cfg)
{
	bool xdp = false;
	int fd;

	if (pmd && strcmp(pmd, "af_packet") && strcmp(pmd, "af_xdp") && strcmp(pmd, "auto") &&
	    strcmp(pmd, "packet")) {
		DR_WARN(FI_LOG_CORE,
			"FI_DROCE_KERNEL_PMD=%s: must be af_packet, af_xdp, auto or packet\n", pmd);
		return -FI_ENODATA;
	}
	if (!pmd || !strcmp(pmd, "packet")) {
		snprintf(cfg->spec, sizeof(cfg->spec), "packet:%s", cfg->ifname);
		return 0;
	}
	/* a frame larger than a page does not fit an af_xdp umem chunk, and
	 * a veth refuses native XDP with such an MTU on its peer */
	if (pmd && !strcmp(pmd, "auto") && mtu > (int)dr_port_af_xdp_mtu()) {
		DR_INFO(FI_LOG_CORE,
			"FI_DROCE_KERNEL_PMD=auto: net_af_packet on %s: its MTU %d is larger than "
			"net_af_xdp carries (%u, path MTU %u); af_packet keeps path MTU %u\n",
			cfg->ifname, mtu, dr_port_af_xdp_mtu(),
			dr_port_pmtu_of(dr_port_af_xdp_mtu()), dr_port_pmtu_of((unsigned)mtu));
		pmd = "af_packet";
	}
	if (pmd && strcmp(pmd, "af_packet")) {
		fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
		xdp = fd >= 0;
		if (xdp)
			close(fd);
		else if (!strcmp(pmd, "af_xdp")) {
			DR_WARN(FI_LOG_CORE,
				"FI_DROCE_KERNEL_PMD=af_xdp: no XDP socket on %s (%s%s)\n",
				cfg->ifname, strerror(errno),
				errno == EPERM ? ": needs CAP_NET_RAW" : "");
			return -FI_ENODATA;
		} else
			DR_INFO(FI_LOG_CORE,
				"FI_DROCE_KERNEL_PMD=auto: net_af_packet on %s: no XDP socket "
				"(%s)\n",
				cfg->ifname, strerror(errno));
	}
	if (xdp && !strcmp(pmd, "auto"))
		DR_INFO(FI_LOG_CORE, "FI_DROCE_KERNEL_PMD=auto: net_af_xdp on %s\n", cfg->ifname);
	snprintf(cfg->spec, sizeof(cfg->spec), "%s_%s,iface=%s",
		 xdp ? "net_af_xdp" : "net_af_packet", cfg->ifname, cfg->ifname);
	return 0;
}

/* Resolve the settings and the getinfo nodes (either may be NULL) to one
 * device.  -FI_ENODATA, with FI_WARN naming the parameter, when none fits. */
static int dr_devcfg_resolve(const struct dr_settings *s, const char *src_node,
			     const char *dst_node, struct dr_devcfg *cfg)
{
	struct dr_ipaddr local = {0}, dst = {0};
	char buf[INET6_ADDRSTRLEN];
	uint8_t prefix = 0;
	int fam = 0, ret;

	memset(cfg, 0, sizeof(*cfg));
	if (s->ip_version == 4)
		fam = AF_INET;
	else if (s->ip_version == 6)
		fam = AF_INET6;
	else if (s->ip_version) {
		DR_WARN(FI_LOG_CORE, "FI_DROCE_IP_VERSION=%d: must be 4 or 6 (or 0: chosen)\n",
			s->ip_version);
		return -FI_ENODATA;
	}
	if (s->addr) {
		ret = dr_parse_ip_prefix(s->addr, &local, &prefix);
		if (ret) {
			DR_WARN(FI_LOG_CORE,
				"FI_DROCE_ADDR=%s is not an IPv4 or IPv6 address/prefix\n",
				s->addr);
			return -FI_ENODATA;
		}
		if (fam && local.family != fam) {
			DR_WARN(FI_LOG_CORE, "FI_DROCE_ADDR=%s is not of FI_DROCE_IP_VERSION %d\n",
				s->addr, s->ip_version);
			return -FI_ENODATA;
		}
	} else if (src_node && dr_resolve_ip(src_node, fam, &local)) {
		DR_INFO(FI_LOG_CORE, "source node %s is not an IP%s address\n", src_node,
			ip_version_str(fam));
		return -FI_ENODATA;
	}
	if (local.family)
		fam = local.family;
	if (dst_node && dr_resolve_ip(dst_node, fam, &dst)) {
		DR_INFO(FI_LOG_CORE, "node %s is not an IP%s address\n", dst_node,
			ip_version_str(fam));
		return -FI_ENODATA;
	}
	if (dst.family)
		fam = dst.family;

	if (s->device) {
		const char *comma = strchr(s->device, ',');
		size_t n = comma ? (size_t)(comma - s->device) : strlen(s->device);

		if (strlen(s->device) >= sizeof(cfg->spec) || n >= sizeof(cfg->name)) {
			DR_WARN(FI_LOG_CORE, "FI_DROCE_DEVICE is too long\n");
			return -FI_ENODATA;
		}
		strcpy(cfg->spec, s->device);
		memcpy(cfg->name, s->device, n);
		cfg->name[n] = '\0';
		/* af_packet or af_xdp on a named interface: its own address by default,
		 * and its netmask for an address it holds */
		if (spec_kernel_iface(s->device, cfg->ifname, sizeof(cfg->ifname)) &&
		    !pick(PICK_NAME, local.family ? local.family : fam, NULL, cfg)) {
			struct dr_ipaddr own = {.family = cfg->ipv6 ? AF_INET6 : AF_INET,
						.ip4 = cfg->ip4};

			memcpy(own.ip6, cfg->ip6, 16);
			if (!local.family)
				local = own;
			if (!prefix && same_addr(cfg, &local))
				prefix = cfg->prefix;
		}
		if (!local.family) {
			DR_WARN(FI_LOG_CORE,
				"FI_DROCE_DEVICE=%s needs an address: set FI_DROCE_ADDR (e.g. "
				"192.0.2.1/24 or 2001:db8::1/64)\n",
				s->device);
			return -FI_ENODATA;
		}
		set_addr(cfg, &local);
		cfg->prefix = prefix ? prefix : (cfg->ipv6 ? 128 : 32);
	} else {
		if (local.family)
			ret = pick(PICK_LOCAL, local.family, &local, cfg);
		else if (dst.family)
			ret = pick(PICK_SUBNET, dst.family, &dst, cfg);
		else
			ret = -FI_ENODATA;
		if (ret && !local.family)
			ret = pick(PICK_FIRST, fam, NULL, cfg);
		if (ret) {
			if (local.family)
				DR_WARN(FI_LOG_CORE,
					"no interface holds %s: set FI_DROCE_DEVICE and "
					"FI_DROCE_ADDR\n",
					ip_str(&local, buf, sizeof(buf)));
			else
				DR_INFO(FI_LOG_CORE,
					"no up IP%s interface for net_af_packet; "
					"set FI_DROCE_DEVICE and FI_DROCE_ADDR\n",
					fam == AF_INET	  ? "v4"
					: fam == AF_INET6 ? "v6"
							  : "v4 or IPv6");
			return -FI_ENODATA;
		}
		if (prefix) /* FI_DROCE_ADDR's prefix wins over the netmask */
			cfg->prefix = prefix;
		ret = kernel_spec(s->kernel_pmd, s->mtu ? s->mtu : if_mtu(cfg->ifname), cfg);
		if (ret)
			return ret;
		snprintf(cfg->name, sizeof(cfg->name), "%s", cfg->ifname);
	}
	cfg->mtu = s->mtu ? s->mtu : (cfg->ifname[0] ? if_mtu(cfg->ifname) : 0);
	/* shared memory has no wire MTU: frames of path MTU 4096 */
	if (!cfg->mtu && !strncmp(cfg->spec, "net_memif", 9))
		cfg->mtu = DR_MEMIF_MTU;
	if (!cfg->mtu)
		cfg->mtu = 1500;
	return 0;
}

/*
 * FI_DROCE_DEVICE may name several devices separated by ';', with their
 * addresses in FI_DROCE_ADDR in the same order: one domain each (how the
 * in-process tests get two ports joined back to back).  A source node keeps
 * only the device holding that address.  Returns how many, or -FI_ENODATA.
 */
int dr_devcfg_list(const struct dr_settings *s, const char *src_node, const char *dst_node,
		   struct dr_devcfg *out, int max)
{
	struct dr_settings one = *s;
	char devs[1024], addrs[1024], *dsave, *asave, *d, *a;
	struct dr_ipaddr want = {0};
	int n = 0, ret;

	if (!s->device || !strchr(s->device, ';')) {
		ret = dr_devcfg_resolve(s, src_node, dst_node, &out[0]);
		return ret ? ret : 1;
	}
	if (!s->addr || strlen(s->device) >= sizeof(devs) || strlen(s->addr) >= sizeof(addrs)) {
		DR_WARN(FI_LOG_CORE, "FI_DROCE_DEVICE lists devices: FI_DROCE_ADDR must list "
			"their addresses, ';' between them\n");
		return -FI_ENODATA;
	}
	if (src_node && dr_resolve_ip(src_node, 0, &want))
		return -FI_ENODATA;
	strcpy(devs, s->device);
	strcpy(addrs, s->addr);
	for (d = strtok_r(devs, ";", &dsave), a = strtok_r(addrs, ";", &asave); d && n < max;
	     d = strtok_r(NULL, ";", &dsave), a = strtok_r(NULL, ";", &asave)) {
		if (!a) {
			DR_WARN(FI_LOG_CORE, "FI_DROCE_ADDR has no address for device %s\n", d);
			return -FI_ENODATA;
		}
		one.device = d;
		one.addr = a;
		ret = dr_devcfg_resolve(&one, NULL, NULL, &out[n]);
		if (ret)
			return ret;
		if (!want.family || same_addr(&out[n], &want))
			n++;
	}
	return n ? n : -FI_ENODATA;
}
