// SPDX-License-Identifier: BSD-2-Clause
/*
 * Why fi_getinfo says no (issue 12): at FI_LOG_LEVEL=info droce names every
 * hint it cannot meet, each exactly once, in one line of its own.  Each
 * case below asks droce (and droce alone: "droce;^ofi_rxm;^ofi_rxd", no
 * utility provider on top) with hints that break some rules, captures
 * libfabric's log (stderr, redirected to a file for the call) and compares
 * the refusal lines with the expected ones, exactly and in number.  Cases
 * with no refusal assert success and no refusal line: droce needs no mode
 * bit and is FI_THREAD_SAFE, so mode and threading hints are always met.
 *
 * The expected texts are fi_tostr's names (libfabric 1.17), droce's limits
 * (dr_fi.h: inject 256, queues 4096, 8 iov, cq_data 4, messages 1 GiB) and
 * the device names of the two in-process ports (pair:glog:0, pair:glog:1).
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "ck_run.h"
#include "fi_fixture.h"

#define PREFIX	  "droce: getinfo refuses the hints: "
#define MAX_LINES 24

struct log_case {
	const char *name;
	void (*hints)(struct fi_info *h);
	const char *node;	      /* destination node, or NULL */
	int ret;		      /* what fi_getinfo answers */
	const char *lines[MAX_LINES]; /* every refusal, after PREFIX */
};

/* ---- the hints of each case ---------------------------------------------- */

static void h_caps(struct fi_info *h)
{
	h->caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV;
}

static void h_ep_rdm(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_RDM;
}

static void h_mr_mode(struct fi_info *h)
{
	h->caps = FI_MSG | FI_RMA;
	h->domain_attr->mr_mode = FI_MR_LOCAL;
}

static void h_mr_scalable(struct fi_info *h)
{
	h->caps = FI_RMA;
	h->domain_attr->mr_mode = FI_MR_SCALABLE;
}

static void h_progress(struct fi_info *h)
{
	h->domain_attr->control_progress = FI_PROGRESS_AUTO;
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
}

static void h_addr_format(struct fi_info *h)
{
	h->addr_format = FI_SOCKADDR_IB;
}

static void h_sizes(struct fi_info *h)
{
	h->ep_attr->max_msg_size = (size_t)1 << 31;
	h->tx_attr->size = 1 << 20;
	h->tx_attr->inject_size = 257;
	h->tx_attr->iov_limit = 9;
	h->rx_attr->size = 4097;
	h->domain_attr->cq_data_size = 8;
	h->domain_attr->ep_cnt = 1025;
}

static void h_contexts(struct fi_info *h)
{
	h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	h->domain_attr->max_ep_srx_ctx = 1;
}

static void h_order_flags(struct fi_info *h)
{
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_WAR;
	h->rx_attr->op_flags = FI_MULTI_RECV;
	h->tx_attr->op_flags = FI_COMMIT_COMPLETE;
}

static void h_domain_name(struct fi_info *h)
{
	h->domain_attr->name = strdup("eth9");
}

/* every rule of the cases above at once: each named once, none dropped */
static void h_all(struct fi_info *h)
{
	h_caps(h);
	h_ep_rdm(h);
	h->caps |= FI_RMA;
	h->domain_attr->mr_mode = FI_MR_LOCAL;
	h_progress(h);
	h_addr_format(h);
	h_sizes(h);
	h_contexts(h);
	h_order_flags(h);
	h->fabric_attr->name = strdup("tcp");
}

/* met: any threading level, no mode bit, FI_MR_BASIC, everything at
 * droce's limits */
static void h_met(struct fi_info *h)
{
	h->mode = 0;
	h->caps = FI_MSG | FI_RMA | FI_ATOMIC;
	h->domain_attr->threading = FI_THREAD_COMPLETION;
	h->domain_attr->mr_mode = FI_MR_BASIC;
	h->tx_attr->size = 4096;
	h->tx_attr->inject_size = 256;
	h->tx_attr->iov_limit = 8;
	h->ep_attr->max_msg_size = (size_t)1 << 30;
	h->domain_attr->cq_data_size = 4;
}

#define L_CAPS                                                                                     \
	"caps [FI_TAGGED, FI_MULTI_RECV] not offered (FI_TAGGED, FI_MULTI_RECV, "                  \
	"FI_DIRECTED_RECV and FI_SOURCE through \"droce;ofi_rxm\")"
#define L_RDM                                                                                      \
	"ep_attr->type FI_EP_RDM; droce offers FI_EP_MSG (FI_EP_RDM through \"droce;ofi_rxm\")"
#define L_MR_LOCAL                                                                                 \
	"domain_attr->mr_mode [FI_MR_LOCAL] lacks [FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, "             \
	"FI_MR_PROV_KEY], which droce needs for RMA and atomics"
#define L_CTRL_PROGRESS                                                                            \
	"domain_attr->control_progress FI_PROGRESS_AUTO; droce offers FI_PROGRESS_MANUAL"
#define L_DATA_PROGRESS                                                                            \
	"domain_attr->data_progress FI_PROGRESS_AUTO; droce offers FI_PROGRESS_MANUAL"
#define L_ADDR	  "addr_format FI_SOCKADDR_IB; droce offers FI_SOCKADDR_IN and FI_SOCKADDR_IN6"
#define L_MAX_MSG "ep_attr->max_msg_size 2147483648 exceeds droce's 1073741824"
#define L_TX_SIZE "tx_attr->size 1048576 exceeds droce's 4096"
#define L_INJECT  "tx_attr->inject_size 257 exceeds droce's 256"
#define L_TX_IOV  "tx_attr->iov_limit 9 exceeds droce's 8"
#define L_RX_SIZE "rx_attr->size 4097 exceeds droce's 4096"
#define L_CQ_DATA "domain_attr->cq_data_size 8 exceeds droce's 4"
#define L_EP_CNT  "domain_attr->ep_cnt 1025 exceeds droce's 1024"
#define L_SRX                                                                                      \
	"ep_attr->rx_ctx_cnt FI_SHARED_CONTEXT; droce offers one receive context, not shared or "  \
	"scalable"
#define L_MAX_SRX "domain_attr->max_ep_srx_ctx 1 exceeds droce's 0"
#define L_ORDER                                                                                    \
	"tx_attr->msg_order asks for [FI_ORDER_WAR]; droce offers [FI_ORDER_RAR, "                 \
	"FI_ORDER_RAW, FI_ORDER_RAS, FI_ORDER_WAW, FI_ORDER_WAS, FI_ORDER_SAW, "                   \
	"FI_ORDER_SAS]"
#define L_TX_FLAGS "tx_attr->op_flags 0x40000000 not offered" /* FI_COMMIT_COMPLETE */
#define L_RX_FLAGS                                                                                 \
	"rx_attr->op_flags 0x10000 [FI_MULTI_RECV] not offered (FI_MULTI_RECV through "            \
	"\"droce;ofi_rxm\")"
#define L_FABRIC "fabric_attr->name \"tcp\"; droce's fabric is \"droce\""

static const struct log_case cases[] = {
    {"caps", h_caps, NULL, -FI_ENODATA, {L_CAPS}},
    {"ep type", h_ep_rdm, NULL, -FI_ENODATA, {L_RDM}},
    {"mr_mode", h_mr_mode, NULL, -FI_ENODATA, {L_MR_LOCAL}},
    {"mr_mode scalable",
     h_mr_scalable,
     NULL,
     -FI_ENODATA,
     {"domain_attr->mr_mode 0x2: FI_MR_SCALABLE, or FI_MR_BASIC mixed with other bits; "
      "droce offers FI_MR_BASIC alone or FI_MR_VIRT_ADDR, FI_MR_PROV_KEY, "
      "FI_MR_ALLOCATED"}},
    {"progress", h_progress, NULL, -FI_ENODATA, {L_CTRL_PROGRESS, L_DATA_PROGRESS}},
    {"addr format", h_addr_format, NULL, -FI_ENODATA, {L_ADDR}},
    {"sizes",
     h_sizes,
     NULL,
     -FI_ENODATA,
     {L_MAX_MSG, L_TX_SIZE, L_INJECT, L_TX_IOV, L_RX_SIZE, L_CQ_DATA, L_EP_CNT}},
    {"contexts", h_contexts, NULL, -FI_ENODATA, {L_SRX, L_MAX_SRX}},
    {"order and flags", h_order_flags, NULL, -FI_ENODATA, {L_ORDER, L_TX_FLAGS, L_RX_FLAGS}},
    {"domain name",
     h_domain_name,
     NULL,
     -FI_ENODATA,
     {"domain_attr->name \"eth9\" is none of droce's devices (fi_info -p droce lists "
      "them)"}},
    {"all at once",
     h_all,
     NULL,
     -FI_ENODATA,
     {L_CAPS, L_ADDR, L_RDM, L_MAX_MSG, L_SRX, L_CTRL_PROGRESS, L_DATA_PROGRESS, L_CQ_DATA,
      L_EP_CNT, L_MAX_SRX, L_MR_LOCAL, L_TX_SIZE, L_TX_IOV, L_INJECT, L_ORDER, L_TX_FLAGS,
      L_RX_SIZE, L_RX_FLAGS, L_FABRIC}},
    {"met", h_met, NULL, 0, {NULL}},
};

/* ---- the test ------------------------------------------------------------ */

static char *slurp(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	s = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(s);
	rewind(f);
	ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	return s;
}

/* How many log lines carry exactly PREFIX + text at their end. */
static int count_line(const char *log, const char *text)
{
	size_t plen = strlen(PREFIX), tlen = strlen(text);
	const char *p = log;
	int n = 0;

	while ((p = strstr(p, PREFIX))) {
		const char *eol = strchr(p, '\n');

		if (eol && (size_t)(eol - p) == plen + tlen && !memcmp(p + plen, text, tlen))
			n++;
		p += plen;
	}
	return n;
}

static int count_prefix(const char *log)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, PREFIX)); p += strlen(PREFIX))
		n++;
	return n;
}

static int expected_lines(const struct log_case *c)
{
	int n = 0;

	while (n < MAX_LINES && c->lines[n])
		n++;
	return n;
}

START_TEST(test_refusal_log)
{
	const struct log_case *c = &cases[_i];
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	FILE *f = tmpfile();
	int saved, ret;
	char *log;

	ck_assert_ptr_nonnull(hints);
	ck_assert_ptr_nonnull(f);
	hints->fabric_attr->prov_name = strdup("droce;^ofi_rxm;^ofi_rxd");
	c->hints(hints);

	fflush(stderr);
	saved = dup(2);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_eq(dup2(fileno(f), 2), 2);
	ret = fi_getinfo(FI_VERSION(1, 17), c->node, NULL, 0, hints, &info);
	fflush(stderr);
	ck_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	log = slurp(f);

	/* on a failure the whole log goes to stderr (a Check message is short) */
	if (ret != c->ret || count_prefix(log) != expected_lines(c))
		fprintf(stderr, "case %s, log:\n%s\n", c->name, log);
	ck_assert_msg(ret == c->ret, "%s: fi_getinfo %d, expected %d", c->name, ret, c->ret);
	for (int i = 0; i < MAX_LINES && c->lines[i]; i++) {
		if (count_line(log, c->lines[i]) != 1)
			fprintf(stderr, "case %s, log:\n%s\n", c->name, log);
		ck_assert_msg(count_line(log, c->lines[i]) == 1, "%s: \"%s\" logged %d times",
			      c->name, c->lines[i], count_line(log, c->lines[i]));
	}
	ck_assert_msg(count_prefix(log) == expected_lines(c), "%s: %d refusal lines, expected %d",
		      c->name, count_prefix(log), expected_lines(c));
	free(log);
	fclose(f);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("getinfo_log");
	TCase *tc = tcase_create("refusals");

	/* before libfabric initialises (in each forked test) */
	fx_env("glog");
	setenv("FI_LOG_LEVEL", "info", 1);
	setenv("FI_LOG_PROV", "droce", 1);
	unsetenv("FI_PROVIDER");

	tcase_add_loop_test(tc, test_refusal_log, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	suite_add_tcase(s, tc);
	return ck_run(s, false);
}
