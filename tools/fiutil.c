// SPDX-License-Identifier: BSD-2-Clause
/* Shared libfabric and control-channel helpers (fiutil.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "fiutil.h"

uint64_t fiu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *fiu_strerror(long ret)
{
	return fi_strerror((int)(ret < 0 ? -ret : ret));
}

struct fi_info *fiu_msg_hints(const char *prov, uint64_t caps, uint64_t mode)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_MSG;
	h->caps = caps;
	h->mode = mode;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (prov) {
		h->fabric_attr->prov_name = strdup(prov);
		if (!h->fabric_attr->prov_name) {
			fi_freeinfo(h);
			return NULL;
		}
	}
	return h;
}

int fiu_eq_error(struct fid_eq *eq, char *buf, size_t len)
{
	struct fi_eq_err_entry err;
	char pbuf[128] = "";

	memset(&err, 0, sizeof(err));
	if (fi_eq_readerr(eq, &err, 0) < 0) {
		snprintf(buf, len, "no error entry to read");
		return 0;
	}
	snprintf(buf, len, "%s, prov_errno %d (%s)", fi_strerror(err.err), err.prov_errno,
		 fi_eq_strerror(eq, err.prov_errno, err.err_data, pbuf, sizeof(pbuf)));
	return err.err ? -err.err : -FI_EIO;
}

int fiu_send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int fiu_tcp_connect(const char *host, const char *port, int family, unsigned int retry_ms,
		    uint64_t end_ns, int *gai_err)
{
	struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_STREAM}, *res, *ai;
	int err = 0;

	*gai_err = getaddrinfo(host, port, &hints, &res);
	if (*gai_err)
		return -1;
	do {
		for (ai = res; ai; ai = ai->ai_next) {
			int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);

			if (fd < 0)
				continue;
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
				nodelay(fd);
				freeaddrinfo(res);
				return fd;
			}
			err = errno;
			close(fd);
		}
		usleep(retry_ms * 1000u);
	} while (fiu_now_ns() < end_ns);
	freeaddrinfo(res);
	errno = err;
	return -1;
}

int fiu_tcp_accept(int lfd, int timeout_ms)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	int fd;

	if (poll(&p, 1, timeout_ms) <= 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		nodelay(fd);
	return fd;
}
