// SPDX-License-Identifier: BSD-2-Clause
/*
 * The dr_no_* ops: what an ops-table slot holds when droce does not offer
 * the operation.  The system libfabric.so exports no fi_no_* stubs.
 */
#include "dr_fi.h"

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
