// SPDX-License-Identifier: BSD-2-Clause
/*
 * Atomics on FI_EP_MSG endpoints (fi_atomic(3)) as RoCE carries them: one
 * 64-bit FETCH_ADD or CMP_SWAP per operation (IBA 9.4.5), executed by the
 * target's responder under its device lock.
 *
 *   call               op              datatypes         wire
 *   fi_atomic          FI_SUM          FI_INT64/UINT64   FETCH_ADD, result dropped
 *   fi_fetch_atomic    FI_SUM          FI_INT64/UINT64   FETCH_ADD
 *   fi_fetch_atomic    FI_ATOMIC_READ  FI_INT64/UINT64   FETCH_ADD of 0
 *   fi_compare_atomic  FI_CSWAP        FI_INT64/UINT64   CMP_SWAP
 *
 * Every other (op, datatype) pair is refused with -FI_EOPNOTSUPP, by the
 * valid calls, fi_query_atomic and the operations alike: nothing is
 * emulated with a different operation or width.  count is 1: an IB atomic
 * is one 8-byte element, and splitting a vector into several would make
 * one libfabric operation several independent ones with several chances to
 * fail halfway; count 0 or > 1 is -FI_EINVAL.  The operands are copied into
 * the work request at post time, so FI_INJECT costs nothing and
 * fi_inject_atomic's buffer is free on return.
 *
 * The remote address must be 8-byte aligned; a misaligned one is NAKed by
 * the target (invalid request) and completes here in error: FI_EIO, IB
 * status "remote invalid request" (9).  The target region must have been
 * registered with FI_REMOTE_READ and FI_REMOTE_WRITE (mr.c): every RoCE
 * atomic is a read-modify-write that returns the original value.
 */
#include <stdio.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#include "dr_fi.h"

enum atomic_kind {
	ATOMIC_BASE,	/* fi_atomic*, fi_atomicvalid, query flags 0 */
	ATOMIC_FETCH,	/* fi_fetch_atomic*, FI_FETCH_ATOMIC */
	ATOMIC_COMPARE, /* fi_compare_atomic*, FI_COMPARE_ATOMIC */
};

static const char *const atomic_call[] = {
    [ATOMIC_BASE] = "fi_atomic",
    [ATOMIC_FETCH] = "fi_fetch_atomic",
    [ATOMIC_COMPARE] = "fi_compare_atomic",
};

static const char *const atomic_valid_call[] = {
    [ATOMIC_BASE] = "fi_atomicvalid",
    [ATOMIC_FETCH] = "fi_fetch_atomicvalid",
    [ATOMIC_COMPARE] = "fi_compare_atomicvalid",
};

/* The table above, as a predicate: the one place that says what droce
 * executes. */
static bool atomic_supported(enum atomic_kind kind, enum fi_datatype datatype, enum fi_op op)
{
	if (datatype != FI_INT64 && datatype != FI_UINT64)
		return false;
	switch (kind) {
	case ATOMIC_BASE:
		return op == FI_SUM;
	case ATOMIC_FETCH:
		return op == FI_SUM || op == FI_ATOMIC_READ;
	case ATOMIC_COMPARE:
		return op == FI_CSWAP;
	}
	return false;
}

int dr_atomic_query(enum fi_datatype datatype, enum fi_op op, struct fi_atomic_attr *attr,
		    uint64_t flags)
{
	enum atomic_kind kind = ATOMIC_BASE;

	if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC)) {
		DR_WARN(FI_LOG_DOMAIN, "fi_query_atomic: FI_FETCH_ATOMIC and FI_COMPARE_ATOMIC "
				       "together\n");
		return -FI_EINVAL;
	}
	if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED | FI_COLLECTIVE)) {
		DR_WARN(FI_LOG_DOMAIN, "fi_query_atomic: flags 0x%llx unknown\n",
			(unsigned long long)flags);
		return -FI_EINVAL;
	}
	if (!attr)
		return -FI_EINVAL;
	if (flags & FI_FETCH_ATOMIC)
		kind = ATOMIC_FETCH;
	else if (flags & FI_COMPARE_ATOMIC)
		kind = ATOMIC_COMPARE;
	/* no atomics into tagged buffers, no collectives */
	if ((flags & (FI_TAGGED | FI_COLLECTIVE)) || !atomic_supported(kind, datatype, op))
		return -FI_EOPNOTSUPP;
	attr->count = 1;
	attr->size = sizeof(uint64_t);
	return 0;
}

static int atomic_valid(enum atomic_kind kind, enum fi_datatype datatype, enum fi_op op,
			size_t *count)
{
	if (!atomic_supported(kind, datatype, op))
		return -FI_EOPNOTSUPP;
	if (count)
		*count = 1;
	return 0;
}

static int at_writevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	return atomic_valid(ATOMIC_BASE, datatype, op, count);
}

static int at_readwritevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
			     size_t *count)
{
	return atomic_valid(ATOMIC_FETCH, datatype, op, count);
}

static int at_compwritevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
			     size_t *count)
{
	return atomic_valid(ATOMIC_COMPARE, datatype, op, count);
}

/* ---- posting ------------------------------------------------------------------ */

/* One atomic operation, every call's arguments in vector form. */
struct atomic_req {
	enum atomic_kind kind;
	enum fi_datatype datatype;
	enum fi_op op;
	const struct fi_ioc *src; /* the operand (ignored for FI_ATOMIC_READ) */
	size_t src_count;
	const struct fi_ioc *cmp; /* FI_CSWAP's compare value */
	size_t cmp_count;
	const struct fi_ioc *res; /* where the original value goes */
	size_t res_count;
	const struct fi_rma_ioc *rma;
	size_t rma_count;
	void *context;
	uint64_t flags;
	bool inject_call; /* fi_inject_atomic: no CQ entry */
};

/* One element in one entry (the valid calls' count 1). */
static bool one_element(const struct fi_ioc *ioc, size_t n)
{
	return n == 1 && ioc && ioc->count == 1;
}

static int atomic_check(const struct atomic_req *r)
{
	const char *call = atomic_call[r->kind];

	if (!atomic_supported(r->kind, r->datatype, r->op)) {
		char op[32], dt[32];

		/* fi_tostr answers in one static buffer */
		snprintf(op, sizeof(op), "%s", fi_tostr(&r->op, FI_TYPE_ATOMIC_OP));
		snprintf(dt, sizeof(dt), "%s", fi_tostr(&r->datatype, FI_TYPE_ATOMIC_TYPE));
		DR_WARN(FI_LOG_EP_DATA, "%s: %s on %s not supported (see %s)\n", call, op, dt,
			atomic_valid_call[r->kind]);
		return -FI_EOPNOTSUPP;
	}
	if (!one_element(r->src, r->src_count) ||
	    (r->kind == ATOMIC_COMPARE && !one_element(r->cmp, r->cmp_count)) ||
	    (r->kind != ATOMIC_BASE && !one_element(r->res, r->res_count))) {
		DR_WARN(FI_LOG_EP_DATA,
			"%s: count must be 1, in one entry (a RoCE atomic is one "
			"64-bit element)\n",
			call);
		return -FI_EINVAL;
	}
	if (!r->rma || r->rma_count != 1 || r->rma->count != 1) {
		DR_WARN(FI_LOG_EP_DATA, "%s: one rma_iov entry of count 1\n", call);
		return -FI_EINVAL;
	}
	if ((r->op != FI_ATOMIC_READ && !r->src->addr) ||
	    (r->kind == ATOMIC_COMPARE && !r->cmp->addr) ||
	    (r->kind != ATOMIC_BASE && !r->res->addr)) {
		DR_WARN(FI_LOG_EP_DATA, "%s: a NULL operand or result buffer\n", call);
		return -FI_EINVAL;
	}
	if (r->rma->key > UINT32_MAX) {
		DR_WARN(FI_LOG_EP_DATA, "%s: key 0x%llx is not a droce key (mr_key_size 4)\n", call,
			(unsigned long long)r->rma->key);
		return -FI_EINVAL;
	}
	return 0;
}

static ssize_t atomic_post(struct dr_ep *ep, const struct atomic_req *r)
{
	struct dr_tx_op op = {
	    .context = r->context,
	    .cq_flags = FI_ATOMIC | (r->kind == ATOMIC_BASE ? FI_WRITE : FI_READ),
	    .cntr = r->kind == ATOMIC_BASE ? DR_CNTR_WRITE : DR_CNTR_READ,
	    .comp = !r->inject_call && dr_ep_tx_comp(ep, r->flags),
	    .inject = r->inject_call,
	};
	struct dr_send_wr wr = {0};
	struct dr_sge sge;
	uint64_t operand = 0;
	int ret;

	ret = atomic_check(r);
	if (ret)
		return ret;
	if (r->op != FI_ATOMIC_READ)
		memcpy(&operand, r->src->addr, sizeof(operand));
	/* the original value lands in the result buffer, or in the endpoint's
	 * sink for fi_atomic, which does not return it */
	sge.addr = r->kind == ATOMIC_BASE ? (uintptr_t)&ep->atomic_sink : (uintptr_t)r->res->addr;
	sge.length = sizeof(uint64_t);
	sge.lkey = DR_LKEY_NONE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.remote_addr = r->rma->addr;
	wr.rkey = (uint32_t)r->rma->key;
	if (r->op == FI_CSWAP) {
		wr.opcode = DR_WR_CMP_SWAP;
		memcpy(&wr.compare_add, r->cmp->addr, sizeof(wr.compare_add));
		wr.swap = operand;
	} else {
		wr.opcode = DR_WR_FETCH_ADD;
		wr.compare_add = operand; /* 0 for FI_ATOMIC_READ */
	}
	return dr_ep_post_send(ep, &wr, &op, r->flags);
}

/* The calls with one target (fi_atomic, fi_atomicv, ...): rma_elems
 * elements at addr, the endpoint's op_flags. */
static ssize_t atomic_one(struct fid_ep *fep, enum atomic_kind kind, const struct fi_ioc *src,
			  size_t src_count, const struct fi_ioc *cmp, size_t cmp_count,
			  const struct fi_ioc *res, size_t res_count, uint64_t addr,
			  size_t rma_elems, uint64_t key, enum fi_datatype datatype, enum fi_op op,
			  void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct fi_rma_ioc rma = {.addr = addr, .count = rma_elems, .key = key};
	struct atomic_req r = {
	    .kind = kind,
	    .datatype = datatype,
	    .op = op,
	    .src = src,
	    .src_count = src_count,
	    .cmp = cmp,
	    .cmp_count = cmp_count,
	    .res = res,
	    .res_count = res_count,
	    .rma = &rma,
	    .rma_count = 1,
	    .context = context,
	    .flags = ep->tx_op_flags,
	};

	return atomic_post(ep, &r);
}

/* The *msg calls (call names it in the log). */
static ssize_t atomic_msg(struct fid_ep *fep, enum atomic_kind kind,
			  const struct fi_msg_atomic *msg, const struct fi_ioc *cmp,
			  size_t cmp_count, const struct fi_ioc *res, size_t res_count,
			  uint64_t flags, const char *call)
{
	struct atomic_req r;

	if (!msg)
		return -FI_EINVAL;
	if (flags & ~DR_ATOMICMSG_FLAGS) {
		/* also FI_REMOTE_CQ_DATA: RoCE atomics carry no immediate */
		DR_WARN(FI_LOG_EP_DATA, "%s: flags 0x%llx not supported\n", call,
			(unsigned long long)(flags & ~DR_ATOMICMSG_FLAGS));
		return -FI_EBADFLAGS;
	}
	r = (struct atomic_req){
	    .kind = kind,
	    .datatype = msg->datatype,
	    .op = msg->op,
	    .src = msg->msg_iov,
	    .src_count = msg->iov_count,
	    .cmp = cmp,
	    .cmp_count = cmp_count,
	    .res = res,
	    .res_count = res_count,
	    .rma = msg->rma_iov,
	    .rma_count = msg->rma_iov_count,
	    .context = msg->context,
	    .flags = flags,
	};
	return atomic_post(dr_ep_of(fep), &r);
}

/* ---- base atomics --------------------------------------------------------------- */

static ssize_t at_write(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
			enum fi_op op, void *context)
{
	struct fi_ioc src = {.addr = (void *)buf, .count = count};

	return atomic_one(fep, ATOMIC_BASE, &src, 1, NULL, 0, NULL, 0, addr, count, key, datatype,
			  op, context);
}

static ssize_t at_writev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc, size_t count,
			 fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
			 enum fi_op op, void *context)
{
	return atomic_one(fep, ATOMIC_BASE, iov, count, NULL, 0, NULL, 0, addr, 1, key, datatype,
			  op, context);
}

static ssize_t at_writemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	return atomic_msg(fep, ATOMIC_BASE, msg, NULL, 0, NULL, 0, flags, "fi_atomicmsg");
}

static ssize_t at_inject(struct fid_ep *fep, const void *buf, size_t count, fi_addr_t dest,
			 uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
	struct fi_ioc src = {.addr = (void *)buf, .count = count};
	struct fi_rma_ioc rma = {.addr = addr, .count = count, .key = key};
	struct atomic_req r = {
	    .kind = ATOMIC_BASE,
	    .datatype = datatype,
	    .op = op,
	    .src = &src,
	    .src_count = 1,
	    .rma = &rma,
	    .rma_count = 1,
	    .flags = FI_INJECT,
	    .inject_call = true,
	};

	return atomic_post(dr_ep_of(fep), &r);
}

/* ---- fetching atomics ----------------------------------------------------------- */

static ssize_t at_readwrite(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			    void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			    uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct fi_ioc src = {.addr = (void *)buf, .count = count};
	struct fi_ioc res = {.addr = result, .count = count};

	return atomic_one(fep, ATOMIC_FETCH, &src, 1, NULL, 0, &res, 1, addr, count, key, datatype,
			  op, context);
}

static ssize_t at_readwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
			     size_t count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op, void *context)
{
	return atomic_one(fep, ATOMIC_FETCH, iov, count, NULL, 0, resultv, result_count, addr, 1,
			  key, datatype, op, context);
}

static ssize_t at_readwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
			       struct fi_ioc *resultv, void **result_desc, size_t result_count,
			       uint64_t flags)
{
	return atomic_msg(fep, ATOMIC_FETCH, msg, NULL, 0, resultv, result_count, flags,
			  "fi_fetch_atomicmsg");
}

/* ---- compare atomics ------------------------------------------------------------ */

static ssize_t at_compwrite(struct fid_ep *fep, const void *buf, size_t count, void *desc,
			    const void *compare, void *compare_desc, void *result,
			    void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype datatype, enum fi_op op, void *context)
{
	struct fi_ioc src = {.addr = (void *)buf, .count = count};
	struct fi_ioc cmp = {.addr = (void *)compare, .count = count};
	struct fi_ioc res = {.addr = result, .count = count};

	return atomic_one(fep, ATOMIC_COMPARE, &src, 1, &cmp, 1, &res, 1, addr, count, key,
			  datatype, op, context);
}

static ssize_t at_compwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
			     size_t count, const struct fi_ioc *comparev, void **compare_desc,
			     size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op, void *context)
{
	return atomic_one(fep, ATOMIC_COMPARE, iov, count, comparev, compare_count, resultv,
			  result_count, addr, 1, key, datatype, op, context);
}

static ssize_t at_compwritemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
			       const struct fi_ioc *comparev, void **compare_desc,
			       size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, uint64_t flags)
{
	return atomic_msg(fep, ATOMIC_COMPARE, msg, comparev, compare_count, resultv, result_count,
			  flags, "fi_compare_atomicmsg");
}

const struct fi_ops_atomic dr_atomic_ops = DR_ATOMIC_OPS(at_);
