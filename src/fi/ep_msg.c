// SPDX-License-Identifier: BSD-2-Clause
/*
 * The posting path of an FI_EP_MSG endpoint: fi_send/fi_recv and friends,
 * and dr_ep_post_send, which rma.c and atomic.c post through too.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "dr_fi.h"

/* ---- data transfer ------------------------------------------------------- */

static ssize_t post_errno(int ret)
{
	switch (ret) {
	case 0:
		return 0;
	case -ENOMEM:
		return -FI_EAGAIN; /* queue full: read the CQ, then retry */
	default:
		return -FI_EINVAL;
	}
}

int dr_ep_sge_of_iov(const struct iovec *iov, size_t count, struct dr_sge *sge, uint64_t *len)
{
	uint64_t total = 0;

	if (count > DR_MAX_IOV || (count && !iov)) {
		DR_WARN(FI_LOG_EP_DATA, "%zu iov entries: iov_limit is %d\n", count, DR_MAX_IOV);
		return -FI_EINVAL;
	}
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len > UINT32_MAX) {
			DR_WARN(FI_LOG_EP_DATA, "iov entry of %zu bytes: at most 4 GiB - 1\n",
				iov[i].iov_len);
			return -FI_EMSGSIZE;
		}
		sge[i].addr = (uintptr_t)iov[i].iov_base;
		sge[i].length = (uint32_t)iov[i].iov_len;
		sge[i].lkey = DR_LKEY_NONE; /* no FI_MR_LOCAL: any local memory */
		total += iov[i].iov_len;
	}
	if (total > DR_MAX_MSG_SIZE) {
		DR_WARN(FI_LOG_EP_DATA, "%llu bytes: max_msg_size is %llu\n",
			(unsigned long long)total, (unsigned long long)DR_MAX_MSG_SIZE);
		return -FI_EMSGSIZE;
	}
	*len = total;
	return 0;
}

static bool wr_carries_data(enum dr_wr_opcode op)
{
	return op == DR_WR_SEND || op == DR_WR_SEND_IMM || op == DR_WR_WRITE ||
	       op == DR_WR_WRITE_IMM;
}

/*
 * Completion levels: the engine completes a SEND or WRITE when the peer's
 * ACK covers it, a READ or atomic when its response is in place.  An ACK
 * means the responder executed the request (IBA 9.7.5.1), so completion
 * then satisfies FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE and
 * FI_DELIVERY_COMPLETE alike; FI_INJECT copies the data at post time.
 * FI_FENCE is the IB fence (IBA 10.8.3.3): the WR waits for every earlier
 * READ and atomic to complete; RC already executes earlier SENDs and WRITEs
 * first, so later operations see the results of all earlier ones.
 */
ssize_t dr_ep_post_send(struct dr_ep *ep, struct dr_send_wr *wr, const struct dr_tx_op *op,
			uint64_t flags)
{
	ssize_t ret;

	wr->flags = DR_WR_SIGNALED; /* always: counters count every WR */
	/* no CQ entry and no counter: nothing waits for its ACK */
	if ((!op->comp || !ep->tx_cq) && !ep->cntr[op->cntr])
		wr->flags |= DR_WR_UNWAITED;
	if (flags & FI_FENCE)
		wr->flags |= DR_WR_FENCE;
	if ((flags & FI_INJECT) && wr_carries_data(wr->opcode)) {
		uint64_t len = 0;

		for (unsigned i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > DR_MAX_INLINE) {
			DR_WARN(FI_LOG_EP_DATA, "FI_INJECT of %llu bytes: inject_size is %d\n",
				(unsigned long long)len, DR_MAX_INLINE);
			return -FI_EMSGSIZE;
		}
		wr->flags |= DR_WR_INLINE;
	}

	dr_dev_lock(ep->dev);
	dr_port_batch_begin(ep->dev->port);
	if (ep->state != DR_EP_CONNECTED && ep->state != DR_EP_ACCEPTING) {
		DR_WARN(FI_LOG_EP_DATA, "%s: the endpoint is not connected\n",
			dr_wr_opcode_names[wr->opcode]);
		ret = -FI_EOPBADSTATE;
	} else if (!dr_qp_sq_free(ep->qp)) {
		ret = -FI_EAGAIN; /* before its txq slot is overwritten */
	} else {
		/* the slot is filled first: in ERROR the post completes at once */
		wr->wr_id = ep->tx_posted;
		ep->txq[ep->tx_posted & (ep->tx_depth - 1)] = *op;
		ret = post_errno(dr_qp_post_send(ep->qp, wr));
		if (!ret) {
			ep->tx_posted++;
			/* a lazy ACK held long enough leaves with it */
			if (dr_qp_ack_ripen(ep->qp))
				dr_ep_flush_list(ep);
		}
	}
	/* the request leaves with the next post's or first thing at the next
	 * poll (dev_poll), ahead of the ACKs held since the last poll: they
	 * stay off the path of an answer (or at once on memif when the
	 * receiver would otherwise run dry: dr_port_tx_early) */
	dr_port_batch_hold(ep->dev->port);
	dr_dev_unlock(ep->dev);
	if (ret == -FI_EAGAIN)
		dr_dev_progress(ep->dev);
	return ret;
}

static ssize_t ep_post_send(struct dr_ep *ep, const struct iovec *iov, size_t count, void *context,
			    uint64_t data, uint64_t flags, bool inject_call)
{
	struct dr_sge sge[DR_MAX_IOV];
	struct dr_send_wr wr;
	struct dr_tx_op op = {
	    .context = context,
	    .cq_flags = FI_SEND | FI_MSG,
	    .cntr = DR_CNTR_SEND,
	    .comp = !inject_call && dr_ep_tx_comp(ep, flags),
	    .inject = inject_call,
	};
	uint64_t len;
	int ret;

	ret = dr_ep_sge_of_iov(iov, count, sge, &len);
	if (ret)
		return ret;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = (flags & FI_REMOTE_CQ_DATA) ? DR_WR_SEND_IMM : DR_WR_SEND;
	wr.imm = (uint32_t)data; /* cq_data_size 4 */
	wr.sg_list = sge;
	wr.num_sge = (unsigned)count;
	return dr_ep_post_send(ep, &wr, &op, flags);
}

/* A receive completes on the CQ unless the CQ was bound with
 * FI_SELECTIVE_COMPLETION and the receive lacks FI_COMPLETION; errors
 * always complete. */
static ssize_t ep_post_recv(struct dr_ep *ep, const struct iovec *iov, size_t count, void *context,
			    uint64_t flags)
{
	struct dr_sge sge[DR_MAX_IOV];
	struct dr_recv_wr wr;
	uint64_t len;
	ssize_t ret;

	ret = dr_ep_sge_of_iov(iov, count, sge, &len);
	if (ret)
		return ret;
	wr.sg_list = sge;
	wr.num_sge = (unsigned)count;
	dr_dev_lock(ep->dev);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
	} else if (!dr_qp_rq_free(ep->qp)) {
		ret = -FI_EAGAIN;
	} else {
		wr.wr_id = ep->rx_posted;
		ep->rxq[ep->rx_posted & (ep->rx_depth - 1)] = (struct dr_rx_op){
		    .context = context,
		    .comp = !ep->rx_selective || (flags & FI_COMPLETION),
		};
		ret = post_errno(dr_qp_post_recv(ep->qp, &wr));
		if (!ret)
			ep->rx_posted++;
	}
	dr_dev_unlock(ep->dev);
	if (ret == -FI_EAGAIN)
		dr_dev_progress(ep->dev);
	return ret;
}

static ssize_t ep_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src,
		       void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = {.iov_base = buf, .iov_len = len};

	return ep_post_recv(ep, &iov, 1, context, ep->rx_op_flags);
}

static ssize_t ep_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t src, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);

	return ep_post_recv(ep, iov, count, context, ep->rx_op_flags);
}

static ssize_t ep_recvmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~(FI_COMPLETION | FI_MORE)) {
		/* no FI_MULTI_RECV, no FI_CLAIM/FI_PEEK */
		DR_WARN(FI_LOG_EP_DATA, "fi_recvmsg: flags 0x%llx not supported\n",
			(unsigned long long)(flags & ~(FI_COMPLETION | FI_MORE)));
		return -FI_EBADFLAGS;
	}
	return ep_post_recv(dr_ep_of(fep), msg->msg_iov, msg->iov_count, msg->context, flags);
}

static ssize_t ep_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest,
		       void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return ep_post_send(ep, &iov, 1, context, 0, ep->tx_op_flags, false);
}

static ssize_t ep_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dest, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);

	return ep_post_send(ep, iov, count, context, 0, ep->tx_op_flags, false);
}

static ssize_t ep_sendmsg(struct fid_ep *fep, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~DR_SENDMSG_FLAGS) {
		DR_WARN(FI_LOG_EP_DATA, "fi_sendmsg: flags 0x%llx not supported\n",
			(unsigned long long)(flags & ~DR_SENDMSG_FLAGS));
		return -FI_EBADFLAGS;
	}
	return ep_post_send(dr_ep_of(fep), msg->msg_iov, msg->iov_count, msg->context, msg->data,
			    flags, false);
}

/* fi_inject and fi_injectdata never complete on the CQ (errors aside). */
static ssize_t ep_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return ep_post_send(dr_ep_of(fep), &iov, 1, NULL, 0, FI_INJECT, true);
}

static ssize_t ep_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc,
			   uint64_t data, fi_addr_t dest, void *context)
{
	struct dr_ep *ep = dr_ep_of(fep);
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return ep_post_send(ep, &iov, 1, context, data, ep->tx_op_flags | FI_REMOTE_CQ_DATA, false);
}

static ssize_t ep_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data,
			     fi_addr_t dest)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return ep_post_send(dr_ep_of(fep), &iov, 1, NULL, data, FI_INJECT | FI_REMOTE_CQ_DATA,
			    true);
}

const struct fi_ops_msg dr_ep_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = ep_recv,
    .recvv = ep_recvv,
    .recvmsg = ep_recvmsg,
    .send = ep_send,
    .sendv = ep_sendv,
    .sendmsg = ep_sendmsg,
    .inject = ep_inject,
    .senddata = ep_senddata,
    .injectdata = ep_injectdata,
};
