/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the libfabric programs droce-xfer (tools/), droce-bench (bench/)
 * and droce-rping (tests/interop/) share: the clock, an FI_EP_MSG hints
 * template, an EQ error entry read out as text, and the TCP control
 * channel's connect/accept/send.  Each program keeps its own logic and
 * messages; these depend on libfabric and libc only (droce-xfer and
 * droce-rping are shipped into rdma_rxe guests), and are linked into each
 * program as a source file.
 */
#ifndef FIUTIL_H
#define FIUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#define FIU_NS_PER_MS 1000000ull

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t fiu_now_ns(void);

/* fi_strerror of a libfabric return code of either sign. */
const char *fiu_strerror(long ret);

/* Hints for an FI_EP_MSG endpoint with caps and mode, the four mr_mode
 * bits these programs handle (local, virtual address, allocated, provider
 * key) and, when prov is not NULL, that provider; NULL when out of memory. */
struct fi_info *fiu_msg_hints(const char *prov, uint64_t caps, uint64_t mode);

/* After fi_eq_read/sread returned -FI_EAVAIL: read the error entry and
 * describe it in buf ("<fi_strerror>, prov_errno N (<provider's text>)");
 * the entry's error as a negative code (-FI_EIO when it has none), or 0
 * when there was no entry to read after all. */
int fiu_eq_error(struct fid_eq *eq, char *buf, size_t len);

/* All n bytes on a stream socket (no SIGPIPE): 0, or -1 with errno. */
int fiu_send_all(int fd, const void *p, size_t n);

/* A TCP connection to host:port (family AF_UNSPEC, AF_INET...), trying
 * every address getaddrinfo gives, again every retry_ms until end_ns (the
 * server may start later).  The socket (close-on-exec, TCP_NODELAY), or
 * -1: *gai_err is getaddrinfo's error when the name did not resolve (else
 * 0), errno the last connect's. */
int fiu_tcp_connect(const char *host, const char *port, int family, unsigned int retry_ms,
		    uint64_t end_ns, int *gai_err);

/* The next connection on listening socket lfd within timeout_ms (< 0:
 * no limit), close-on-exec and TCP_NODELAY; -1 with errno (ETIMEDOUT when
 * none came). */
int fiu_tcp_accept(int lfd, int timeout_ms);

#endif /* FIUTIL_H */
