// SPDX-License-Identifier: BSD-2-Clause
/*
 * mp-connect ADDR PORT [SECONDS [MARK]]: one fi_connect over droce to
 * ADDR:PORT, for tests/netns-multiproc.sh, which points it at a port nobody
 * listens on.  With MARK, creates that file once fi_connect has returned
 * (the REQ is on its way).  Prints what the EQ said and exits with
 *   0  the connection was refused (FI_ECONNREFUSED: the peer's CM sent a
 *      REJ), the REJ reason printed when the provider gives it;
 *   1  anything else: connected, another error, or nothing within
 *      SECONDS (default 10);
 *   2  bad usage or no droce.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct fi_info *hints, *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_eq *eq = NULL;
	struct fid_cq *cq = NULL;
	struct fid_ep *ep = NULL;
	struct fi_eq_attr eq_attr = {.size = 16, .wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.size = 16, .format = FI_CQ_FORMAT_CONTEXT};
	struct fi_eq_cm_entry entry;
	struct fi_eq_err_entry err;
	double secs = argc > 3 ? atof(argv[3]) : 10.0, end;
	uint32_t event;
	ssize_t n;
	int ret, rc = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: mp-connect ADDR PORT [SECONDS [MARK]]\n");
		return 2;
	}
	hints = fi_allocinfo();
	if (!hints)
		return 2;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("droce");
	ret = fi_getinfo(FI_VERSION(1, 17), argv[1], argv[2], 0, hints, &info);
	fi_freeinfo(hints);
	if (ret) {
		fprintf(stderr, "mp-connect: fi_getinfo: %s\n", fi_strerror(-ret));
		return 2;
	}
	if ((ret = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (ret = fi_domain(fabric, info, &domain, NULL)) ||
	    (ret = fi_eq_open(fabric, &eq_attr, &eq, NULL)) ||
	    (ret = fi_cq_open(domain, &cq_attr, &cq, NULL)) ||
	    (ret = fi_endpoint(domain, info, &ep, NULL)) || (ret = fi_ep_bind(ep, &eq->fid, 0)) ||
	    (ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) || (ret = fi_enable(ep)) ||
	    (ret = fi_connect(ep, info->dest_addr, NULL, 0))) {
		fprintf(stderr, "mp-connect: setup: %s\n", fi_strerror(-ret));
		rc = 2;
		goto out;
	}
	if (argc > 4) {
		FILE *f = fopen(argv[4], "w");

		if (f)
			fclose(f);
	}
	end = now_s() + secs;
	for (;;) {
		n = fi_eq_sread(eq, &event, &entry, sizeof(entry), 100, 0);
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_eq_readerr(eq, &err, 0) < 0) {
				printf("mp-connect: fi_eq_readerr failed\n");
				break;
			}
			printf("mp-connect: %s (prov_errno %d)\n", fi_strerror(err.err),
			       err.prov_errno);
			rc = err.err == FI_ECONNREFUSED ? 0 : 1;
			break;
		}
		if (n >= 0) {
			printf("mp-connect: event %u: %s\n", event,
			       event == FI_CONNECTED ? "connected" : "unexpected");
			break;
		}
		if (n != -FI_EAGAIN && n != -FI_ETIMEDOUT) {
			printf("mp-connect: fi_eq_sread: %s\n", fi_strerror((int)-n));
			break;
		}
		if (now_s() > end) {
			printf("mp-connect: no answer within %.0f s\n", secs);
			break;
		}
	}
out:
	if (ep)
		fi_close(&ep->fid);
	if (cq)
		fi_close(&cq->fid);
	if (eq)
		fi_close(&eq->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	fi_freeinfo(info);
	return rc;
}
