// SPDX-License-Identifier: BSD-2-Clause
/*
 * Which DPDK device and which IPv4 address a domain uses.
 *
 * With FI_DROCE_DEVICE set, that device, with FI_DROCE_ADDR (required unless
 * the device is net_af_packet on an interface that has an address).
 * Without it, net_af_packet on a kernel interface chosen as a user would
 * expect (issue 4): the one holding the local address (FI_DROCE_ADDR, or the
 * node given with FI_SOURCE), else the one whose subnet contains the
 * destination, else the first up, non-loopback interface with an IPv4
 * address.  That mirrors `rdma link add rxe0 type rxe netdev eth0`: droce
 * sits beside the kernel on the same interface and address.
 */
#include <arpa/inet.h>
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

/* "a.b.c.d" or "a.b.c.d/nn" -> host-order address and prefix (0 if none) */
int dr_parse_ip4_prefix(const char *s, uint32_t *ip4, uint8_t *prefix)
{
	char buf[32];
	const char *slash = strchr(s, '/');
	struct in_addr a;
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n >= sizeof(buf))
		return -FI_EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -FI_EINVAL;
	*ip4 = ntohl(a.s_addr);
	*prefix = 0;
	if (slash) {
		char *end;
		long p = strtol(slash + 1, &end, 10);

		if (end == slash + 1 || *end || p < 1 || p > 32)
			return -FI_EINVAL;
		*prefix = (uint8_t)p;
	}
	return 0;
}

/* A node name or dotted quad to a host-order IPv4 address. */
int dr_resolve_ip4(const char *node, uint32_t *ip4)
{
	struct addrinfo hints = { .ai_family = AF_INET }, *res;

	if (getaddrinfo(node, NULL, &hints, &res))
		return -FI_ENODATA;
	*ip4 = ntohl(((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr);
	freeaddrinfo(res);
	return 0;
}

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

/* The kernel interface named by an af_packet spec ("iface=X"), if any. */
static bool spec_af_packet_iface(const char *spec, char *ifname, size_t len)
{
	const char *p;
	size_t n;

	if (strncmp(spec, "net_af_packet", 13))
		return false;
	p = strstr(spec, "iface=");
	if (!p)
		return false;
	p += 6;
	n = strcspn(p, ",");
	if (!n || n >= len)
		return false;
	memcpy(ifname, p, n);
	ifname[n] = '\0';
	return true;
}

int dr_devcfg_resolve(const struct dr_settings *s, const char *src_node, const char *dst_node,
		      struct dr_devcfg *cfg)
{
	uint32_t local = 0, dst = 0;
	uint8_t prefix = 0;
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	if (s->addr) {
		ret = dr_parse_ip4_prefix(s->addr, &local, &prefix);
		if (ret) {
			DR_WARN(FI_LOG_CORE, "FI_DROCE_ADDR=%s is not an IPv4 address/prefix\n",
				s->addr);
			return -FI_ENODATA;
		}
	} else if (src_node && dr_resolve_ip4(src_node, &local)) {
		DR_INFO(FI_LOG_CORE, "source node %s is not an IPv4 address\n", src_node);
		return -FI_ENODATA;
	}
	if (dst_node && dr_resolve_ip4(dst_node, &dst)) {
		DR_INFO(FI_LOG_CORE, "node %s is not an IPv4 address\n", dst_node);
		return -FI_ENODATA;
	}

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
		/* af_packet on a named interface: its own address by default,
		 * and its netmask for an address it holds */
		if (spec_af_packet_iface(s->device, cfg->ifname, sizeof(cfg->ifname)) &&
		    !pick_iface(PICK_NAME, 0, cfg)) {
			if (!local)
				local = cfg->ip4;
			if (!prefix && local == cfg->ip4)
				prefix = cfg->prefix;
		}
		if (!local) {
			DR_WARN(FI_LOG_CORE,
				"FI_DROCE_DEVICE=%s needs an address: set FI_DROCE_ADDR (e.g. 192.0.2.1/24)\n",
				s->device);
			return -FI_ENODATA;
		}
		cfg->ip4 = local;
		cfg->prefix = prefix ? prefix : 32;
	} else {
		if (local)
			ret = pick_iface(PICK_LOCAL, local, cfg);
		else if (dst)
			ret = pick_iface(PICK_SUBNET, dst, cfg);
		else
			ret = -FI_ENODATA;
		if (ret && !local)
			ret = pick_iface(PICK_FIRST, 0, cfg);
		if (ret) {
			if (local)
				DR_WARN(FI_LOG_CORE,
					"no interface holds %u.%u.%u.%u: set FI_DROCE_DEVICE and FI_DROCE_ADDR\n",
					local >> 24, (local >> 16) & 0xff, (local >> 8) & 0xff, local & 0xff);
			else
				DR_INFO(FI_LOG_CORE, "no up IPv4 interface for net_af_packet; "
					"set FI_DROCE_DEVICE and FI_DROCE_ADDR\n");
			return -FI_ENODATA;
		}
		if (prefix) /* FI_DROCE_ADDR's prefix wins over the netmask */
			cfg->prefix = prefix;
		snprintf(cfg->spec, sizeof(cfg->spec), "net_af_packet_%s,iface=%s", cfg->ifname,
			 cfg->ifname);
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
	uint32_t want = 0;
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
	if (src_node && dr_resolve_ip4(src_node, &want))
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
		if (!want || out[n].ip4 == want)
			n++;
	}
	return n ? n : -FI_ENODATA;
}
