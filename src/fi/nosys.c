// SPDX-License-Identifier: BSD-2-Clause
/*
 * Operation tables for what droce's MSG endpoints do not offer (tagged
 * messages, collectives) and for RMA and atomics on an endpoint opened
 * without FI_RMA / FI_ATOMIC: every slot set, every call answered
 * -FI_ENOSYS, so an application that calls one without the capability
 * gets an error, not a crash.
 */
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "dr_fi.h"

#define NOSYS(name, ...)                         \
	static ssize_t name(__VA_ARGS__)         \
	{                                        \
		return -FI_ENOSYS;               \
	}

/* RMA */
NOSYS(rma_read, struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
      uint64_t addr, uint64_t key, void *context)
NOSYS(rma_readv, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
NOSYS(rma_readmsg, struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
NOSYS(rma_write, struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, void *context)
NOSYS(rma_writev, struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
NOSYS(rma_writemsg, struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
NOSYS(rma_inject, struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key)
NOSYS(rma_writedata, struct fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context)
NOSYS(rma_injectdata, struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key)

struct fi_ops_rma dr_no_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};

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

struct fi_ops_tagged dr_no_tagged_ops = {
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
NOSYS(at_write, struct fid_ep *ep, const void *buf, size_t count, void *desc, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
NOSYS(at_writev, struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype,
      enum fi_op op, void *context)
NOSYS(at_writemsg, struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
NOSYS(at_inject, struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op)
NOSYS(at_readwrite, struct fid_ep *ep, const void *buf, size_t count, void *desc, void *result,
      void *result_desc, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
      enum fi_datatype datatype, enum fi_op op, void *context)
NOSYS(at_readwritev, struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
      struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
NOSYS(at_readwritemsg, struct fid_ep *ep, const struct fi_msg_atomic *msg,
      struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags)
NOSYS(at_compwrite, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      const void *compare, void *compare_desc, void *result, void *result_desc,
      fi_addr_t dest_addr, uint64_t addr, uint64_t key, enum fi_datatype datatype,
      enum fi_op op, void *context)
NOSYS(at_compwritev, struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
      const struct fi_ioc *comparev, void **compare_desc, size_t compare_count,
      struct fi_ioc *resultv, void **result_desc, size_t result_count, fi_addr_t dest_addr,
      uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context)
NOSYS(at_compwritemsg, struct fid_ep *ep, const struct fi_msg_atomic *msg,
      const struct fi_ioc *comparev, void **compare_desc, size_t compare_count,
      struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags)

static int at_valid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	return -FI_ENOSYS;
}

struct fi_ops_atomic dr_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = at_write,
	.writev = at_writev,
	.writemsg = at_writemsg,
	.inject = at_inject,
	.readwrite = at_readwrite,
	.readwritev = at_readwritev,
	.readwritemsg = at_readwritemsg,
	.compwrite = at_compwrite,
	.compwritev = at_compwritev,
	.compwritemsg = at_compwritemsg,
	.writevalid = at_valid,
	.readwritevalid = at_valid,
	.compwritevalid = at_valid,
};

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
NOSYS(co_reduce_scatter, struct fid_ep *ep, const void *buf, size_t count, void *desc,
      void *result, void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype,
      enum fi_op op, uint64_t flags, void *context)
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

struct fi_ops_collective dr_no_collective_ops = {
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
