// SPDX-License-Identifier: BSD-2-Clause
/*
 * Capture of every frame a port sends and receives to a pcapng file, with
 * DPDK's librte_pcapng (experimental in 22.11, hence the define below,
 * kept to this file).
 *
 * What 22.11's rte_pcapng does, and how we use it (lib/pcapng/rte_pcapng.c):
 *  - rte_pcapng_fdopen() writes the section header and one interface block
 *    per ethdev existing at that moment; a packet names its interface by
 *    port id, so the file is opened after our port exists;
 *  - rte_pcapng_copy() makes the Enhanced Packet Block in a copy of the
 *    mbuf, but computes the block length from the first segment only: the
 *    copy must fit in one mbuf, so the capture pool's data room is
 *    rte_pcapng_mbuf_size() of our largest frame (chained frames, such as
 *    zero-copy sends, are then flattened by the copy);
 *  - rte_pcapng_write_packets() does not free the mbufs it writes (its
 *    documentation says otherwise): we free them.
 * Each frame is written when it passes (one writev); capture is for
 * debugging, not for speed.
 */
#define ALLOW_EXPERIMENTAL_API 1
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_pcapng.h>
#include <rte_version.h>

#include "port_priv.h"

#define DR_CAPTURE_MBUFS 63

int dr_capture_open(struct dr_port *p, const char *path, struct dr_port_err *err)
{
	char name[RTE_MEMPOOL_NAMESIZE], os[200], app[64], comment[128];
	struct utsname u;
	int fd, e;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return dr_port_fail(err, -errno, DR_PORT_PARAM_PCAP,
				    "cannot create capture file '%s': %s", path, strerror(errno));
	snprintf(name, sizeof(name), "drp%u_cap", p->serial);
	p->cap_pool = rte_pktmbuf_pool_create(name, DR_CAPTURE_MBUFS, 0, 0,
					      rte_pcapng_mbuf_size(p->buf_size), p->socket_id);
	if (!p->cap_pool) {
		e = rte_errno;
		close(fd);
		return dr_port_fail(err, -e, DR_PORT_PARAM_NONE,
				    "cannot create the capture mempool: %s (EAL memory: -m)",
				    rte_strerror(e));
	}
	if (uname(&u) == 0)
		snprintf(os, sizeof(os), "%s %s", u.sysname, u.release);
	else
		snprintf(os, sizeof(os), "Linux");
	snprintf(comment, sizeof(comment), "droce port %s, IPv4 %u.%u.%u.%u/%u", p->name,
		 p->ip >> 24, (p->ip >> 16) & 255, (p->ip >> 8) & 255, p->ip & 255, p->prefix_len);
	snprintf(app, sizeof(app), "droce (%s)", rte_version());
	p->pcapng = rte_pcapng_fdopen(fd, os, NULL, app, comment);
	if (!p->pcapng) {
		e = rte_errno ? rte_errno : EIO;
		close(fd);
		rte_mempool_free(p->cap_pool);
		p->cap_pool = NULL;
		return dr_port_fail(err, -e, DR_PORT_PARAM_PCAP,
				    "cannot write capture file '%s': %s", path, rte_strerror(e));
	}
	dr_port_log(DR_PORT_LOG_INFO, "%s: capturing to %s", p->name, path);
	return 0;
}

void dr_capture_close(struct dr_port *p)
{
	rte_pcapng_write_stats(p->pcapng, p->port_id, NULL, 0, 0, p->stats.rx_frames,
			       p->stats.capture_errors);
	rte_pcapng_close(p->pcapng); /* closes the file */
	p->pcapng = NULL;
	rte_mempool_free(p->cap_pool);
	p->cap_pool = NULL;
}

struct rte_mbuf *dr_capture_prepare(struct dr_port *p, const struct rte_mbuf *m,
				    enum dr_port_dir dir)
{
	return dr_capture_prepare_at(p, m, dir, rte_get_tsc_cycles());
}

struct rte_mbuf *dr_capture_prepare_at(struct dr_port *p, const struct rte_mbuf *m,
				       enum dr_port_dir dir, uint64_t tsc)
{
	struct rte_mbuf *c;

	/* a longer one would be copied into a chain: a corrupt block */
	if (m->pkt_len > p->buf_size) {
		p->stats.capture_errors++;
		return NULL;
	}
	c = rte_pcapng_copy(p->port_id, 0, m, p->cap_pool, UINT32_MAX, tsc,
			    dir == DR_PORT_DIR_RX ? RTE_PCAPNG_DIRECTION_IN
						  : RTE_PCAPNG_DIRECTION_OUT);
	if (!c)
		p->stats.capture_errors++;
	return c;
}

void dr_capture_commit(struct dr_port *p, struct rte_mbuf *copy)
{
	if (rte_pcapng_write_packets(p->pcapng, &copy, 1) < 0)
		p->stats.capture_errors++;
	rte_pktmbuf_free(copy);
}

void dr_capture_discard(struct rte_mbuf *copy)
{
	rte_pktmbuf_free(copy);
}
