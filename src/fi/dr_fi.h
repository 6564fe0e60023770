/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dr_fi.h - the libfabric layer of droce: provider, settings, objects.
 * Only src/fi includes libfabric headers; it turns fi_* calls into qp and
 * port calls (DESIGN.md).
 */
#ifndef DR_FI_H
#define DR_FI_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#define DR_PROV_NAME "droce"
#define DR_PROV_VERSION FI_VERSION(0, 1)
#define DR_FI_VERSION FI_VERSION(1, 17)

extern struct fi_provider dr_prov;

#define DR_WARN(subsys, ...) FI_WARN(&dr_prov, subsys, __VA_ARGS__)
#define DR_INFO(subsys, ...) FI_INFO(&dr_prov, subsys, __VA_ARGS__)
#define DR_DBG(subsys, ...) FI_DBG(&dr_prov, subsys, __VA_ARGS__)

/*
 * Every FI_DROCE_* parameter, read once (dr_settings_get) into one struct.
 * Each is defined with fi_param_define in init.c and documented in
 * man/fi_droce.7; a test checks that the two lists agree.
 */
struct dr_settings {
	char *device;	 /* FI_DROCE_DEVICE: DPDK device spec */
	char *addr;	 /* FI_DROCE_ADDR: IPv4 address/prefix of the port */
	char *eal_args;	 /* FI_DROCE_EAL_ARGS: extra EAL arguments */
	int mtu;	 /* FI_DROCE_MTU: Ethernet MTU, 0 = the interface's */
	char *pcap;	 /* FI_DROCE_PCAP: capture file */
	int retry_cnt;	 /* FI_DROCE_RETRY_CNT: transport retries, 0..7 */
	int rnr_retry;	 /* FI_DROCE_RNR_RETRY: 0..7, 7 = infinite */
	int timeout;	 /* FI_DROCE_TIMEOUT: ACK timeout exponent, 1..31 */
	int min_rnr_timer; /* FI_DROCE_MIN_RNR_TIMER: RNR NAK timer code, 0..31 */
	int cm_timeout;	 /* FI_DROCE_CM_TIMEOUT: CM response timeout exponent */
	int cm_retries;	 /* FI_DROCE_CM_RETRIES: CM MAD resends, 0..15 */
};

/* The settings, read and checked on first use; NULL (and an FI_WARN that
 * names the parameter) when one is out of range. */
const struct dr_settings *dr_settings_get(void);

#endif /* DR_FI_H */
