// SPDX-License-Identifier: BSD-2-Clause
/*
 * RMA on FI_EP_MSG endpoints (fi_rma(3)): RDMA WRITE, RDMA WRITE with
 * immediate (fi_writedata) and RDMA READ, one engine work request each.
 *
 * Addressing is FI_MR_VIRT_ADDR | FI_MR_PROV_KEY: addr is the target's
 * virtual address, key its fi_mr_key() (32 bits, an R_Key on the wire).
 * The target's engine checks key, bounds and FI_REMOTE_READ/WRITE rights
 * before it touches memory (IBA 9.7.5.1; mr.c); a refusal is a NAK, and
 * the operation completes here in error: FI_EIO, the IB status in
 * prov_errno (remote access error, 10 in libibverbs' numbering).  The QP
 * is then in error (IBA 10.3.1), as on any RC transport.
 *
 * fi_writedata carries 4 bytes of CQ data as the immediate; how the target
 * reports it, with or without FI_RX_CQ_DATA, is in ep.c.  Local buffers
 * need no registration (no FI_MR_LOCAL): desc is ignored.  One remote
 * region per operation (rma_iov_limit 1) whose length must equal the local
 * total.
 */
#include <rdma/fi_rma.h>

#include "dr_fi.h"

static ssize_t rma_post(struct dr_ep *ep, enum dr_wr_opcode opcode, const struct iovec *iov,
			size_t count, const struct fi_rma_iov *rma, void *context, uint64_t data,
			uint64_t flags, bool inject_call)
{
	bool read = opcode == DR_WR_READ;
	struct dr_tx_op op = {
	    .context = context,
	    .cq_flags = FI_RMA | (read ? FI_READ : FI_WRITE),
	    .cntr = read ? DR_CNTR_READ : DR_CNTR_WRITE,
	    .comp = !inject_call && dr_ep_tx_comp(ep, flags),
	    .inject = inject_call,
	};
	struct dr_sge sge[DR_MAX_IOV];
	struct dr_send_wr wr = {0};
	uint64_t len;
	int ret;

	ret = dr_ep_sge_of_iov(iov, count, sge, &len);
	if (ret)
		return ret;
	if (rma->len != len) {
		DR_WARN(FI_LOG_EP_DATA, "RMA: local length %llu differs from the remote %zu\n",
			(unsigned long long)len, rma->len);
		return -FI_EINVAL;
	}
	if (rma->key > UINT32_MAX) {
		DR_WARN(FI_LOG_EP_DATA, "RMA: key 0x%llx is not a droce key (mr_key_size 4)\n",
			(unsigned long long)rma->key);
		return -FI_EINVAL;
	}
	wr.opcode = opcode;
	wr.sg_list = sge;
	wr.num_sge = (unsigned)count;
	wr.remote_addr = rma->addr;
	wr.rkey = (uint32_t)rma->key;
	wr.imm = (uint32_t)data; /* cq_data_size 4 */
	return dr_ep_post_send(ep, &wr, &op, flags);
}

/* The single remote region of an fi_msg_rma (rma_iov_limit 1). */
static const struct fi_rma_iov *msg_rma_iov(const struct fi_msg_rma *msg, const char *call)
{
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov) {
		DR_WARN(FI_LOG_EP_DATA, "%s: one rma_iov entry (rma_iov_limit 1), got %zu\n", call,
			msg ? msg->rma_iov_count : 0);
		return NULL;
	}
	return msg->rma_iov;
}

static uint64_t iov_total(const struct iovec *iov, size_t count)
{
	uint64_t len = 0;

	for (size_t i = 0; iov && i < count && i < DR_MAX_IOV; i++)
		len += iov[i].iov_len;
	return len;
}

/* ---- READ ------------------------------------------------------------------- */

static ssize_t rma_read(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
			uint64_t addr, uint64_t key, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct fi_rma_iov rma = {.addr = addr, .len = len, .key = key};

	return rma_post(ep, DR_WR_READ, &iov, 1, &rma, context, 0, ep->tx_op_flags, false);
}

static ssize_t rma_readv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			 fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct fi_rma_iov rma = {.addr = addr, .len = iov_total(iov, count), .key = key};

	return rma_post(ep, DR_WR_READ, iov, count, &rma, context, 0, ep->tx_op_flags, false);
}

static ssize_t rma_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags)
{
	const struct fi_rma_iov *rma = msg_rma_iov(msg, "fi_readmsg");

	if (!rma)
		return -FI_EINVAL;
	if (flags & ~DR_READMSG_FLAGS) {
		DR_WARN(FI_LOG_EP_DATA, "fi_readmsg: flags 0x%llx not supported\n",
			(unsigned long long)(flags & ~DR_READMSG_FLAGS));
		return -FI_EBADFLAGS;
	}
	return rma_post(dr_ep_of(fep), DR_WR_READ, msg->msg_iov, msg->iov_count, rma, msg->context,
			0, flags, false);
}

/* ---- WRITE ------------------------------------------------------------------- */

static ssize_t rma_write(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct fi_rma_iov rma = {.addr = addr, .len = len, .key = key};

	return rma_post(ep, DR_WR_WRITE, &iov, 1, &rma, context, 0, ep->tx_op_flags, false);
}

static ssize_t rma_writev(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			  fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct fi_rma_iov rma = {.addr = addr, .len = iov_total(iov, count), .key = key};

	return rma_post(ep, DR_WR_WRITE, iov, count, &rma, context, 0, ep->tx_op_flags, false);
}

static ssize_t rma_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags)
{
	const struct fi_rma_iov *rma = msg_rma_iov(msg, "fi_writemsg");

	if (!rma)
		return -FI_EINVAL;
	if (flags & ~DR_SENDMSG_FLAGS) {
		DR_WARN(FI_LOG_EP_DATA, "fi_writemsg: flags 0x%llx not supported\n",
			(unsigned long long)(flags & ~DR_SENDMSG_FLAGS));
		return -FI_EBADFLAGS;
	}
	return rma_post(dr_ep_of(fep), (flags & FI_REMOTE_CQ_DATA) ? DR_WR_WRITE_IMM : DR_WR_WRITE,
			msg->msg_iov, msg->iov_count, rma, msg->context, msg->data, flags, false);
}

/* fi_inject_write and fi_inject_writedata: copied now, never completed on
 * the CQ (errors aside); counters count them. */
static ssize_t rma_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest,
			  uint64_t addr, uint64_t key)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct fi_rma_iov rma = {.addr = addr, .len = len, .key = key};

	return rma_post(dr_ep_of(fep), DR_WR_WRITE, &iov, 1, &rma, NULL, 0, FI_INJECT, true);
}

static ssize_t rma_writedata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key,
			     void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct fi_rma_iov rma = {.addr = addr, .len = len, .key = key};

	return rma_post(ep, DR_WR_WRITE_IMM, &iov, 1, &rma, context, data, ep->tx_op_flags, false);
}

static ssize_t rma_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct fi_rma_iov rma = {.addr = addr, .len = len, .key = key};

	return rma_post(dr_ep_of(fep), DR_WR_WRITE_IMM, &iov, 1, &rma, NULL, data, FI_INJECT, true);
}

const struct fi_ops_rma dr_rma_ops = DR_RMA_OPS(rma_);
