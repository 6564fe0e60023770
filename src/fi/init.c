// SPDX-License-Identifier: BSD-2-Clause
/*
 * The provider's entry point.  fi_prov_ini only hands libfabric the provider
 * description: no DPDK start-up here (DESIGN.md), that happens on first use.
 */
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_prov.h>

#define DR_PROV_NAME "droce"
#define DR_PROV_VERSION FI_VERSION(0, 1)
#define DR_FI_VERSION FI_VERSION(1, 17)

static int dr_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		      const struct fi_info *hints, struct fi_info **info)
{
	return -FI_ENODATA;
}

static int dr_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	return -FI_ENOSYS;
}

static void dr_cleanup(void)
{
}

static struct fi_provider dr_prov = {
	.version = DR_PROV_VERSION,
	.fi_version = DR_FI_VERSION,
	.name = DR_PROV_NAME,
	.getinfo = dr_getinfo,
	.fabric = dr_fabric,
	.cleanup = dr_cleanup,
};

/* the DSO exports this symbol and nothing else (-fvisibility=hidden) */
FI_EXT_INI;
FI_EXT_INI
{
	return &dr_prov;
}
