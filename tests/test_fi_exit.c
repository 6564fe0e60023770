// SPDX-License-Identifier: BSD-2-Clause
/*
 * A process that exits with droce's objects still open exits cleanly.
 * At exit libfabric's fi_fini calls the provider's cleanup and then
 * dlcloses the DSO; each open device runs a progress thread, which must be
 * joined by then (dev.c, dr_dev_threads_stop) or it wakes in unmapped code:
 * before the fix about one such exit in five ended in SIGSEGV (found when
 * an ofi_rxm test program failed and exit()ed mid-run, issue 12).
 *
 * ROUNDS children each open a fabric, a domain, an EQ, a CQ and an
 * endpoint on an in-process pair port (and, when ofi_rxm is there, an RDM
 * endpoint over droce, enabled: listening, rxm's objects open too), then
 * exit(EXIT_CODE) without closing anything; each must end by that exit,
 * not by a signal.  With the bug, all ROUNDS passing has a chance of about
 * 0.8^24 < 0.5 %.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "ck_run.h"
#include "fi_fixture.h"

#define ROUNDS	  24
#define EXIT_CODE 7

static int open_and_exit(bool rdm)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fi_eq_attr eq_attr = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA};
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;

	if (!hints)
		return 10;
	hints->fabric_attr->prov_name = strdup(rdm ? "droce;ofi_rxm" : "droce");
	hints->ep_attr->type = rdm ? FI_EP_RDM : FI_EP_MSG;
	hints->caps = FI_MSG | (rdm ? FI_TAGGED : 0);
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info))
		return 11;
	if (fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL))
		return 12;
	if (fi_cq_open(domain, &cq_attr, &cq, NULL) || fi_endpoint(domain, info, &ep, NULL))
		return 13;
	if (rdm) {
		if (fi_av_open(domain, &av_attr, &av, NULL) || fi_ep_bind(ep, &av->fid, 0) ||
		    fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(ep))
			return 14;
	} else {
		if (fi_eq_open(fabric, &eq_attr, &eq, NULL) || fi_ep_bind(ep, &eq->fid, 0) ||
		    fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV))
			return 15;
	}
	exit(EXIT_CODE); /* everything still open */
}

static void rounds(bool rdm)
{
	for (int i = 0; i < ROUNDS; i++) {
		pid_t pid = fork();
		int status;

		ck_assert_int_ge(pid, 0);
		if (!pid)
			_exit(open_and_exit(rdm));
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status), "round %d (%s): killed by signal %d", i,
			      rdm ? "RDM" : "MSG", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		ck_assert_msg(WEXITSTATUS(status) == EXIT_CODE, "round %d (%s): exit %d", i,
			      rdm ? "RDM" : "MSG", WEXITSTATUS(status));
	}
}

START_TEST(test_exit_msg_open)
{
	rounds(false);
}
END_TEST

START_TEST(test_exit_rdm_open)
{
	rounds(true);
}
END_TEST

static Suite *exit_suite(void)
{
	Suite *s = suite_create("fi_exit");
	TCase *tc = tcase_create("exit");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_exit_msg_open);
	tcase_add_test(tc, test_exit_rdm_open);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	/* before libfabric initialises (only the children use it) */
	fx_env("fexit");
	unsetenv("FI_PROVIDER");
	return ck_run(exit_suite(), false);
}
