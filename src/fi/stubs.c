// SPDX-License-Identifier: BSD-2-Clause
/*
 * The dr_no_* ops, all in one place: what an ops-table slot holds when
 * droce does not offer the operation.  The system libfabric.so exports no
 * fi_no_* stubs.  Every call answers -FI_ENOSYS, so an application that
 * calls one gets an error, not a crash: the single slots of the fid,
 * fabric, domain, CM and endpoint tables, and whole tables for what droce's
 * MSG endpoints never offer (tagged messages, collectives) and for RMA and
 * atomics on an endpoint opened without FI_RMA / FI_ATOMIC.
 */
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "dr_fi.h"

/* struct fi_ops */
int dr_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int dr_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int dr_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	return -FI_ENOSYS;
}

int dr_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int dr_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context)
{
	return -FI_ENOSYS;
}

/* struct fi_ops_fabric: wait sets (each object has its own wait object) */
int dr_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

/* struct fi_ops_domain: FI_EP_MSG endpoints have no address vectors */
int dr_no_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		  void *context)
{
	return -FI_ENOSYS;
}

int dr_no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
		      void *context)
{
	return -FI_ENOSYS;
}

int dr_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

int dr_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
		  void *context)
{
	return -FI_ENOSYS;
}

int dr_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		  void *context)
{
	return -FI_ENOSYS;
}

int dr_no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			   struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

/* struct fi_ops_cm: what a passive endpoint does not do, and what an
 * active one does not */
int dr_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int dr_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int dr_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int dr_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int dr_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int dr_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int dr_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
	       void *context)
{
	return -FI_ENOSYS;
}

/* struct fi_ops_ep */
ssize_t dr_no_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;
}

int dr_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
		 void *context)
{
	return -FI_ENOSYS;
}

int dr_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		 void *context)
{
	return -FI_ENOSYS;
}

ssize_t dr_no_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

/* Whole tables: each slot a file-local stub */
#define NOSYS(name, ...)                                                                           \
	static ssize_t name(__VA_ARGS__)                                                           \
	{                                                                                          \
		return -FI_ENOSYS;                                                                 \
	}

/* RMA */
NOSYS(no_rma_read, struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
      uint64_t addr, uint64_t key, void *context)
NOSYS(no_rma_readv, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
NOSYS(no_rma_readmsg, struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
NOSYS(no_rma_write, struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, void *context)
NOSYS(no_rma_writev, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
NOSYS(no_rma_writemsg, struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
NOSYS(no_rma_inject, struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key)
NOSYS(no_rma_writedata, struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
NOSYS(no_rma_injectdata, struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key)

const struct fi_ops_rma dr_no_rma_ops = DR_RMA_OPS(no_rma_);

/* tagged */
NOSYS(tg_recv, struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
      uint64_t tag, uint64_t ignore, void *context)
NOSYS(tg_recvv, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
NOSYS(tg_recvmsg, struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
NOSYS(tg_send, struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
      uint64_t tag, void *context)
NOSYS(tg_sendv, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t dest_addr, uint64_t tag, void *context)
NOSYS(tg_sendmsg, struct fid_ep *ep, const struct fi_msg_tagged *msg, uint64_t flags)
NOSYS(tg_inject, struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr, uint64_t tag)
NOSYS(tg_senddata, struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
      fi_addr_t dest_addr, uint64_t tag, void *context)
NOSYS(tg_injectdata, struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
      fi_addr_t dest_addr, uint64_t tag)

const struct fi_ops_tagged dr_no_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = tg_recv,
    .recvv = tg_recvv,
    .recvmsg = tg_recvmsg,
    .send = tg_send,
    .sendv = tg_sendv,
    .sendmsg = tg_sendmsg,
    .inject = tg_inject,
    .senddata = tg_senddata,
    .injectdata = tg_injectdata,
};

/* atomics */
NOSYS(no_at_write, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
      void *context)
NOSYS(no_at_writev, struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
      void *context)
NOSYS(no_at_writemsg, struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
NOSYS(no_at_inject, struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
NOSYS(no_at_readwrite, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
      enum fi_datatype datatype, enum fi_op op, void *context)
NOSYS(no_at_readwritev, struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
      struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
NOSYS(no_at_readwritemsg, struct fid_ep *ep, const struct fi_msg_atomic *msg,
      struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags)
NOSYS(no_at_compwrite, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      const void *compare, void *compare_desc, void *result, void *result_desc, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
NOSYS(no_at_compwritev, struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
      const struct fi_ioc *comparev, void **compare_desc, size_t compare_count,
      struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
NOSYS(no_at_compwritemsg, struct fid_ep *ep, const struct fi_msg_atomic *msg,
      const struct fi_ioc *comparev, void **compare_desc, size_t compare_count,
      struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags)

static int no_at_writevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
			    size_t *count)
{
	return -FI_ENOSYS;
}

static int no_at_readwritevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
				size_t *count)
{
	return -FI_ENOSYS;
}

static int no_at_compwritevalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
				size_t *count)
{
	return -FI_ENOSYS;
}

const struct fi_ops_atomic dr_no_atomic_ops = DR_ATOMIC_OPS(no_at_);

/* collectives */
NOSYS(co_barrier, struct fid_ep *ep, fi_addr_t coll_addr, void *context)
NOSYS(co_broadcast, struct fid_ep *ep, void *buf, size_t count, void *desc, fi_addr_t coll_addr,
      fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags, void *context)
NOSYS(co_alltoall, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype, uint64_t flags,
      void *context)
NOSYS(co_allreduce, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype, enum fi_op op,
      uint64_t flags, void *context)
NOSYS(co_allgather, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype, uint64_t flags,
      void *context)
NOSYS(co_reduce_scatter, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype, enum fi_op op,
      uint64_t flags, void *context)
NOSYS(co_reduce, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype,
      enum fi_op op, uint64_t flags, void *context)
NOSYS(co_scatter, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype,
      uint64_t flags, void *context)
NOSYS(co_gather, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype,
      uint64_t flags, void *context)
NOSYS(co_msg, struct fid_ep *ep, const struct fi_msg_collective *msg, struct fi_ioc *resultv,
      void **result_desc, size_t result_count, uint64_t flags)
NOSYS(co_barrier2, struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags, void *context)

const struct fi_ops_collective dr_no_collective_ops = {
    .size = sizeof(struct fi_ops_collective),
    .barrier = co_barrier,
    .broadcast = co_broadcast,
    .alltoall = co_alltoall,
    .allreduce = co_allreduce,
    .allgather = co_allgather,
    .reduce_scatter = co_reduce_scatter,
    .reduce = co_reduce,
    .scatter = co_scatter,
    .gather = co_gather,
    .msg = co_msg,
    .barrier2 = co_barrier2,
};
