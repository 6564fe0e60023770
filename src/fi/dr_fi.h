/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dr_fi.h - the libfabric layer of droce: provider, settings, objects.
 * Only src/fi includes libfabric headers; it turns fi_* calls into qp and
 * port calls (docs/design.md).  One file per object: fabric.c domain.c
 * pep.c ep*.c cq.c eq.c cntr.c mr.c attr.c init.c, stubs.c for the dr_no_* ops.
 *
 * Progress is manual: every read or wait on a CQ, EQ or counter, and every
 * posting call, drives the device behind it (rx burst, dispatch, timers,
 * tx) through a struct dr_progress hook.
 *
 * Locks, outermost first: fabric->lock (its device list), dev->lock (the
 * "domain lock": port, CM, QPs, MR table), then the ring lock of a CQ, EQ
 * or counter.  Completions and events are pushed with the device lock held;
 * readers take only the ring lock, after progress has returned.
 */
#ifndef DR_FI_H
#define DR_FI_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <netinet/in.h>

#include "dr_cm.h"
#include "dr_port.h"
#include "dr_qp.h"

#define DR_PROV_NAME "droce"
#define DR_PROV_VERSION FI_VERSION(0, 1)
#define DR_FI_VERSION FI_VERSION(1, 17)
#define DR_FABRIC_NAME "droce"

/* What droce offers (attr.c builds fi_info from these): messages, RMA
 * write/read, 64-bit atomics, FI_FENCE, and FI_RMA_EVENT (remote counters:
 * the target's responder sees every request, ep.c). */
#define DR_CAPS (FI_MSG | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
		 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT | FI_FENCE)
#define DR_MAX_INLINE 256    /* inject_size: copied at post time */
#define DR_MAX_TX_SIZE 4096  /* send queue depth */
#define DR_MAX_RX_SIZE 4096  /* receive queue depth */
#define DR_MAX_IOV 8	     /* gather/scatter entries */
/* Default MTU of net_memif devices (no wire MTU): path MTU 4096 (rxe's rule, MTU - 80) */
#define DR_MEMIF_MTU 4200
#define DR_MAX_MSG_SIZE ((uint64_t)DR_QP_MAX_MSG) /* the engine posts up to 1 GiB */
#define DR_MAX_EP 1024	     /* QPs per device */
#define DR_MAX_MR 65536
#define DR_MAX_ERR_DATA 64

extern struct fi_provider dr_prov;

#define DR_WARN(subsys, ...) FI_WARN(&dr_prov, subsys, __VA_ARGS__)
#define DR_INFO(subsys, ...) FI_INFO(&dr_prov, subsys, __VA_ARGS__)
#define DR_DBG(subsys, ...) FI_DBG(&dr_prov, subsys, __VA_ARGS__)

#ifndef container_of
#define container_of(ptr, type, field) ((type *)((char *)(ptr)-offsetof(type, field)))
#endif

/*
 * Every FI_DROCE_* parameter, read once (dr_settings_get) into one struct.
 * Each is defined with fi_param_define in init.c and documented in
 * man/fi_droce.7; a test checks that the two lists agree.
 */
struct dr_settings {
	char *device;	 /* FI_DROCE_DEVICE: DPDK device spec */
	char *addr;	 /* FI_DROCE_ADDR: IPv4 or IPv6 address/prefix of the port */
	int ip_version;	 /* FI_DROCE_IP_VERSION: 4 or 6, 0 = chosen (addr.c) */
	char *eal_args;	 /* FI_DROCE_EAL_ARGS: extra EAL arguments */
	int mtu;	 /* FI_DROCE_MTU: Ethernet MTU, 0 = the interface's */
	char *pcap;	 /* FI_DROCE_PCAP: capture file */
	int qdisc_bypass; /* FI_DROCE_QDISC_BYPASS: af_packet past the qdisc layer */
	int kernel_filter; /* FI_DROCE_KERNEL_FILTER: drop our frames at the kernel's ingress */
	char *kernel_pmd;  /* FI_DROCE_KERNEL_PMD: af_packet, af_xdp, auto or packet (addr.c) */
	int gso;	   /* FI_DROCE_GSO: packet: ports send UDP GSO super-frames */
	int rx_filter;	   /* FI_DROCE_RX_FILTER: keep other processes' frames out */
	int retry_cnt;	 /* FI_DROCE_RETRY_CNT: transport retries, 0..7 */
	int rnr_retry;	 /* FI_DROCE_RNR_RETRY: 0..7, 7 = infinite */
	int timeout;	 /* FI_DROCE_TIMEOUT: ACK timeout exponent, 1..31 */
	int min_rnr_timer; /* FI_DROCE_MIN_RNR_TIMER: RNR NAK timer code, 0..31 */
	int cm_timeout;	 /* FI_DROCE_CM_TIMEOUT: CM response timeout exponent */
	int cm_retries;	 /* FI_DROCE_CM_RETRIES: CM MAD resends, 0..15 */
	int cm_backlog;	 /* FI_DROCE_CM_BACKLOG: unanswered requests a listener holds */
	int cc;		 /* FI_DROCE_CC: congestion control (DR_QP_CC), 0 or 1 */
	int lazy_ack;	 /* FI_DROCE_LAZY_ACK: ACKs unasked between droce peers */
};

/* The settings, read and checked on first use; NULL (and an FI_WARN that
 * names the parameter) when one is out of range. */
const struct dr_settings *dr_settings_get(void);

/* attr.c */
int dr_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
	       const struct fi_info *hints, struct fi_info **info);

/* ---- which device and address (addr.c) --------------------------------- */

struct dr_devcfg {
	char spec[256]; /* DPDK device spec */
	char name[64];	/* domain name: the interface, or the vdev's name */
	char ifname[16]; /* kernel interface (net_af_packet), else "" */
	uint32_t ip4;	 /* host order; 0 on an IPv6 device */
	bool ipv6;	 /* an IPv6 device: ip6 is its address */
	uint8_t ip6[16];
	uint8_t prefix;
	int mtu;	/* Ethernet MTU */
};

/* Every device the settings name (FI_DROCE_DEVICE may list several). */
int dr_devcfg_list(const struct dr_settings *s, const char *src_node, const char *dst_node,
		   struct dr_devcfg *out, int max);
#define DR_MAX_DEVS 8

/* An IP address of either family (addr.c). */
struct dr_ipaddr {
	int family;   /* AF_INET, AF_INET6, or 0: none */
	uint32_t ip4; /* host order */
	uint8_t ip6[16];
};
/* A node name or numeric address; family 0: either (IPv4 first).  0 or
 * -FI_ENODATA. */
int dr_resolve_ip(const char *node, int family, struct dr_ipaddr *a);

/* An endpoint's address: its IP (the device's family) and rdma_cm port. */
union dr_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};
static inline size_t dr_sa_len(const union dr_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->sin6) : sizeof(a->sin);
}
static inline uint16_t dr_sa_port(const union dr_sockaddr *a)
{
	return ntohs(a->sa.sa_family == AF_INET6 ? a->sin6.sin6_port : a->sin.sin_port);
}
static inline void dr_sa_set_port(union dr_sockaddr *a, uint16_t port)
{
	if (a->sa.sa_family == AF_INET6)
		a->sin6.sin6_port = htons(port);
	else
		a->sin.sin_port = htons(port);
}
/* The device's own address, or a peer's as the CM names it (gid). */
void dr_sa_local(union dr_sockaddr *a, const struct dr_devcfg *cfg, uint16_t port);
void dr_sa_from_gid(union dr_sockaddr *a, const struct dr_devcfg *cfg, const uint8_t gid[16],
		    uint16_t port);
/* addr/addrlen as given to fi_connect, fi_setname, ...: of the device's
 * family (AF_INET or AF_INET6, whole)?  Copied into *out if so. */
bool dr_sa_take(const void *addr, size_t addrlen, const struct dr_devcfg *cfg,
		union dr_sockaddr *out);
/* The address is the device's own, or the wildcard. */
bool dr_sa_is_local(const union dr_sockaddr *a, const struct dr_devcfg *cfg);
/* "a.b.c.d" / "x::y" for the log */
const char *dr_sa_str(const union dr_sockaddr *a, char *buf, size_t len);
/* fi_getname/fi_getpeer: the address's own length (ep.c) */
int dr_copy_addr(const union dr_sockaddr *sa, void *addr, size_t *addrlen);

/* ---- progress and waiting ---------------------------------------------- */

/* What a CQ, EQ or counter calls to make things happen: the device of its
 * domain (CQ, counter) or every device of its fabric (EQ).  fn may be NULL
 * (nothing to drive, e.g. in unit tests). */
struct dr_progress {
	void (*fn)(void *arg);
	void *arg;
	/* a waiter is about to block on a wait fd instead of reading: keep
	 * progress going without it (a progress thread per device) */
	void (*background)(void *arg);
};

static inline void dr_progress_background(const struct dr_progress *p)
{
	if (p->background)
		p->background(p->arg);
}

static inline void dr_progress_run(const struct dr_progress *p)
{
	if (p->fn)
		p->fn(p->arg);
}

/* A wait object for FI_WAIT_UNSPEC / FI_WAIT_FD: an eventfd that is
 * readable while the owner has something to read.  fd < 0: FI_WAIT_NONE. */
struct dr_wait {
	int fd;
	bool set; /* fd is readable; under the owner's lock, as are the calls */
};

/* 0 for FI_WAIT_NONE, FI_WAIT_UNSPEC and FI_WAIT_FD; -FI_ENOSYS for the
 * wait objects droce does not offer, -FI_EINVAL for an unknown one (both
 * with an FI_WARN under subsys naming it). */
int dr_wait_obj_check(enum fi_wait_obj obj, enum fi_log_subsys subsys);
int dr_wait_init(struct dr_wait *w, enum fi_wait_obj obj);
void dr_wait_fini(struct dr_wait *w);
/* Make the fd readable / not readable; a no-op when it already is / is not
 * (so no syscall on the data path) and for FI_WAIT_NONE. */
void dr_wait_signal(struct dr_wait *w);
void dr_wait_clear(struct dr_wait *w);
/* Block up to timeout_ms (-1: forever, 0: not at all) or until signalled;
 * the caller loops, driving progress in between.  FI_WAIT_NONE: sleeps. */
void dr_wait_block(struct dr_wait *w, int timeout_ms);
/* The fi_control of a CQ, EQ or counter (their fi_ops.control):
 * FI_GETWAIT (int *fd; the object's progress then runs in the background,
 * as the waiter blocks on the fd instead of reading) and FI_GETWAITOBJ
 * (FI_WAIT_FD); -FI_ENODATA with FI_WAIT_NONE; -FI_ENOSYS for any other
 * command or object. */
int dr_wait_fid_control(struct fid *fid, int command, void *arg);

/* CLOCK_MONOTONIC in nanoseconds */
uint64_t dr_now_ns(void);
/* The end of a wait of timeout_ms from start_ns; UINT64_MAX if negative. */
uint64_t dr_deadline_ns(uint64_t start_ns, int timeout_ms);
/* The pause between rounds of a blocking loop (fi_cq_sread, fi_eq_sread,
 * fi_cntr_wait) that drives progress and re-checks: false once deadline_ns
 * has passed (time out now), else true after spinning (none for the first
 * 200 us from start_ns) or blocking on w for at most 1 ms (wait.c). */
bool dr_wait_pause(struct dr_wait *w, uint64_t start_ns, uint64_t deadline_ns);

/* The progress hook of an object's parent, for the CQ/EQ/counter opened on
 * it: fabric.c (every device of the fabric) and domain.c (its device). */
struct dr_progress dr_fabric_progress_hook(struct fid_fabric *fabric);
struct dr_progress dr_domain_progress_hook(struct fid_domain *domain);

/* ---- EQ (eq.c) ---------------------------------------------------------- */

struct dr_eq_ev; /* one queued event (eq.c) */

struct dr_eq {
	struct fid_eq eq;
	struct dr_progress progress;
	struct dr_wait wait;
	pthread_mutex_t lock;	      /* the ring, err_data, wait's state */
	struct dr_eq_ev *head, *tail; /* FIFO, doubly linked; no overrun (eq.c) */
	size_t count;
	void *err_data; /* of the last error read, until the next read */
	int ref;	/* endpoints and peps bound (dr_ref_*) */
	uint32_t api_version;
	bool writable;	/* FI_WRITE: fi_eq_write allowed */
	struct dr_fabric *fab; /* its fab->ref is held while open */
};

int dr_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
	       void *context);
/* Queue an event (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN, ...): buf/len is
 * the entry as fi_eq_read returns it (for FI_CONNREQ a struct
 * fi_eq_cm_entry whose info the reader owns afterwards).  0 or -FI_ENOMEM.
 * An FI_CONNREQ's info belongs to the EQ until read: closing the EQ first
 * fi_freeinfo()s it (info->handle is left alone: pep.c owns connreqs). */
int dr_eq_push(struct dr_eq *eq, uint32_t event, const void *buf, size_t len);
struct dr_connreq;
/* Queue an FI_CONNREQ for cr (whose fi_info is in the entry): as
 * dr_eq_push, and linked to cr so that dr_eq_withdraw can take it back
 * while it is unread. */
int dr_eq_push_connreq(struct dr_eq *eq, const void *buf, size_t len, struct dr_connreq *cr);
/* Take cr's FI_CONNREQ off the EQ, its fi_info freed, if it is still
 * unread: true if it was (the application never saw the request). */
bool dr_eq_withdraw(struct dr_eq *eq, struct dr_connreq *cr);
/* Queue an error entry; err_data (may be NULL) is copied.  0 or -FI_ENOMEM. */
int dr_eq_push_err(struct dr_eq *eq, fid_t fid, void *context, uint64_t data, int err,
		   int prov_errno, const void *err_data, size_t err_data_size);

static inline struct dr_eq *dr_eq_of(struct fid_eq *f)
{
	return container_of(f, struct dr_eq, eq);
}

static inline struct dr_eq *dr_eq_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_eq, eq.fid);
}

/* ---- CQ (cq.c) ---------------------------------------------------------- */

/* One completion as the engine reports it; the CQ formats it. */
struct dr_cq_ent {
	void *op_context;
	uint64_t flags; /* FI_SEND | FI_MSG, FI_RECV | FI_REMOTE_CQ_DATA, ... */
	size_t len;
	void *buf;
	uint64_t data;
	int err;	/* 0, or FI_EIO / FI_ECANCELED / FI_ETRUNC ... (positive) */
	int prov_errno; /* IB work-completion status (enum dr_wc_status) */
	size_t olen;	/* FI_ETRUNC: bytes that did not fit */
};

struct dr_cq {
	struct fid_cq cq;
	struct dr_progress progress;
	struct dr_wait wait;
	enum fi_cq_format format;
	size_t entry_size;
	int lock;		/* dr_spin_lock: the ring, signaled, err_buf, wait's state */
	struct dr_cq_ent *ring; /* successes and errors in completion order */
	size_t size, head, count; /* grows when full: nothing is lost */
	bool signaled;	/* fi_cq_signal: wake one sread */
	int ref;	/* endpoints bound (dr_ref_*) */
	uint32_t api_version;
	struct dr_domain *dom; /* its dom->ref is held while open */
	char err_buf[DR_MAX_ERR_DATA]; /* provider-owned err_data (cq.c) */
};

int dr_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
	       void *context);
/* 0 or -FI_ENOMEM (then the completion is lost and FI_WARN says so). */
int dr_cq_push(struct dr_cq *cq, const struct dr_cq_ent *e);
/* IB status names for fi_cq_strerror/fi_eq_strerror (prov_errno). */
const char *dr_prov_strerror(int prov_errno);
/* fi_cq_strerror and fi_eq_strerror: that name, copied into buf if given. */
const char *dr_strerror(int prov_errno, char *buf, size_t len);

static inline struct dr_cq *dr_cq_of(struct fid_cq *f)
{
	return container_of(f, struct dr_cq, cq);
}

static inline struct dr_cq *dr_cq_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_cq, cq.fid);
}

/* ---- counters (cntr.c) -------------------------------------------------- */

struct dr_cntr {
	struct fid_cntr cntr;
	struct dr_progress progress;
	struct dr_wait wait;
	pthread_mutex_t lock; /* value, err, wait's state */
	uint64_t value, err;
	int ref;	       /* endpoints bound (dr_ref_*) */
	struct dr_domain *dom; /* its dom->ref is held while open */
};

int dr_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		 void *context);
void dr_cntr_inc(struct dr_cntr *c);
void dr_cntr_inc_err(struct dr_cntr *c);

static inline struct dr_cntr *dr_cntr_of(struct fid_cntr *f)
{
	return container_of(f, struct dr_cntr, cntr);
}

static inline struct dr_cntr *dr_cntr_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_cntr, cntr.fid);
}

/*
 * The ref of a fabric, domain, EQ, CQ or counter: how many objects hold it
 * (opened on it, or bound to it).  Taken and dropped with atomic
 * operations, because opens, binds and closes come from any application
 * thread and the holder takes no lock of the held object; fi_close of the
 * held object refuses (-FI_EBUSY) while it is non-zero.  A count, not a
 * lifetime guard: a close racing an open on the same object is the
 * application's race (fi_close(3)).  (A device's ref is another thing,
 * under fabric->lock: struct dr_dev.)
 */
static inline void dr_ref_get(int *ref)
{
	__atomic_add_fetch(ref, 1, __ATOMIC_RELEASE);
}

static inline void dr_ref_put(int *ref)
{
	__atomic_sub_fetch(ref, 1, __ATOMIC_RELEASE);
}

static inline int dr_ref_held(int *ref)
{
	return __atomic_load_n(ref, __ATOMIC_ACQUIRE);
}

/* ---- ops tables and the dr_no_* stubs (stubs.c) -------------------------- */

/*
 * Every ops table of droce is a static const: nothing writes to one.  The
 * fid structures of libfabric's headers (fi.h, fi_endpoint.h, ...) point
 * to non-const tables, though no libfabric code writes through them; this
 * is the one place their const is cast away, when a table is installed.
 */
#define DR_OPS(table) ((void *)(uintptr_t)(table))

/* fi_open_ops on a domain or an endpoint: FI_DROCE_OPS_1 (ext.c). */
int dr_ext_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);

/* The counters by their stable names (ext.c), for fi_droce_ops.counters
 * and the telemetry commands: a device's from a snapshot taken under
 * dev->lock, a QP's from a copy of its stats. */
struct dr_dev;
struct dr_ep;
typedef void (*dr_counter_fn)(void *ctx, const char *name, uint64_t value);
struct dr_dev_snap {
	struct dr_port_stats ps;
	uint64_t drops[DR_RX_DROP_NUM];
	uint64_t rx_foreign;
	struct dr_cm_stats cs;
};
void dr_ext_dev_snap(struct dr_dev *dev, struct dr_dev_snap *s); /* dev->lock held */
void dr_ext_dev_counters(const struct dr_dev_snap *s, dr_counter_fn fn, void *ctx);
void dr_ext_qp_counters(const struct dr_qp_stats *qs, dr_counter_fn fn, void *ctx);

/* Live counters through DPDK telemetry (telemetry.c): /droce/ports,
 * /droce/port,ID, /droce/qps, /droce/qp,QPN.  A device is listed from
 * dr_tel_dev_add (opened) to dr_tel_dev_del (before it is freed; waits
 * for a command reading it).  dr_tel_qp_gone, under dev->lock before a QP
 * is destroyed, adds its counters to the device's totals of closed QPs. */
void dr_tel_dev_add(struct dr_dev *dev);
void dr_tel_dev_del(struct dr_dev *dev);
void dr_tel_qp_gone(struct dr_dev *dev, const struct dr_ep *ep, const struct dr_qp *qp);

/* What droce does not offer: each answers -FI_ENOSYS (the system libfabric
 * exports no fi_no_* stubs).  struct fi_ops: */
int dr_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int dr_no_control(struct fid *fid, int command, void *arg);
int dr_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		   void *context);
int dr_no_tostr(const struct fid *fid, char *buf, size_t len);
int dr_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context);
/* struct fi_ops_fabric, fi_ops_domain: */
int dr_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		    struct fid_wait **waitset);
int dr_no_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		  void *context);
int dr_no_scalable_ep(struct fid_domain *domain, struct fi_info *info, struct fid_ep **sep,
		      void *context);
int dr_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		    struct fid_poll **pollset);
int dr_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
		  void *context);
int dr_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		  void *context);
int dr_no_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
			   struct fi_collective_attr *attr, uint64_t flags);
/* struct fi_ops_cm, fi_ops_ep: */
int dr_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int dr_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
int dr_no_listen(struct fid_pep *pep);
int dr_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int dr_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen);
int dr_no_shutdown(struct fid_ep *ep, uint64_t flags);
int dr_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
	       void *context);
ssize_t dr_no_cancel(fid_t fid, void *context);
int dr_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
		 void *context);
int dr_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		 void *context);
ssize_t dr_no_size_left(struct fid_ep *ep);

/* ---- fabric, devices, domains (fabric.c, dev.c, domain.c) --------------- */

struct dr_dev;

struct dr_fabric {
	struct fid_fabric fab;
	pthread_mutex_t lock; /* devs */
	struct dr_dev *devs;  /* every open device, a list */
	int ref;	      /* domains, peps and EQs opened on it (dr_ref_*) */
	uint32_t api_version;
	bool background;      /* an EQ waiter blocks on its fd: devices run
			       * progress threads (under lock) */
	struct dr_fabric *next; /* every open fabric (fabric.c), for cleanup */
};

static inline struct dr_fabric *dr_fabric_of(struct fid_fabric *f)
{
	return container_of(f, struct dr_fabric, fab);
}

static inline struct dr_fabric *dr_fabric_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_fabric, fab.fid);
}

int dr_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
/* The provider's cleanup (init.c): every device of every open fabric
 * quiesced, no new one opened from then on. */
void dr_fabric_cleanup(void);
bool dr_fabric_unloading(void);

/* The CM data libfabric applications exchange: behind a one-byte length,
 * as libfabric's verbs provider puts it (struct vrb_cm_data_hdr), so droce
 * and verbs peers understand each other; 56 - 1 bytes. */
#define DR_CM_DATA_SIZE 55

struct dr_ep;
struct dr_pep;

/*
 * A device: one DPDK port with its IPv4 address, the CM on its QP1, the
 * MR key table and the QPs.  Shared by the domain and the passive
 * endpoints opened on the same fabric for the same port (rdma_cm listens
 * on a device, not a domain).  lock is the domain lock: it serialises
 * everything below; fields set at open are read-only after.
 */
struct dr_dev {
	struct dr_dev *next;	/* fabric->devs, under fabric->lock */
	struct dr_fabric *fab;
	int ref;		/* under fabric->lock */
	struct dr_devcfg cfg;
	int lock; /* dr_dev_lock: a spin lock that yields */
	struct dr_port *port;
	unsigned pmtu; /* path MTU from the port MTU (rxe's rule) at open */
	uint8_t mac[6];
	struct dr_cm cm;
	struct dr_port_timer *cm_timer;
	/* the CM's annotations (FI_DROCE_PCAP): the frame of the MAD it is
	 * handling, and the notes for the frame of the MAD it sends next */
	const struct dr_pkt *cm_rx;
	char cm_tx_note[256];
	struct dr_mr_table mrt;
	struct dr_idmap qps;	/* QPN -> endpoint (dr_dev_qp_create) */
	uint16_t port_next;	/* ephemeral rdma_cm ports (dr_dev_port_alloc) */
	/* the processes on one kernel interface (registry.c); NULL for
	 * other devices, or when no registry could be opened */
	struct dr_reg *reg;
	bool rx_filter_off; /* dev_rx_filter: the port could not list a QPN */
	/* the host-local wire to the other processes on it (local.c), or NULL */
	struct dr_local *local;
	uint8_t port_mine[65536 / 8]; /* rdma_cm ports this device claimed */
	uint64_t rx_foreign;	      /* frames for other processes' QPs (under lock) */
	uint64_t cm_stale;	      /* MADs for nobody left unanswered: too old (cm_whose) */
	struct dr_foreign_qpn {	      /* recent answers of dr_reg_foreign(QPN) */
		uint32_t qpn;
		uint64_t until_ns;
	} foreign_qpn[64];
	/* the endpoint dev_place found for the frame the port is receiving:
	 * dev_rx takes it for a placed frame instead of a second
	 * lookup (read only while pkt->payload_placed says it is that
	 * frame's) */
	struct dr_ep *placed_ep;
	struct dr_pep *peps;	/* listening passive endpoints */
	uint64_t rx_drops[DR_RX_DROP_NUM]; /* every frame dropped, by reason (under lock) */
	pthread_t thread;	/* control progress; fast for fd waiters */
	bool thread_on;
	bool thread_stop;	/* atomic: the thread reads it without the lock */
	bool fast;		/* an fd waiter: poll continuously (under lock) */
	bool gone;		/* quiesced at process exit: nothing polls the
				 * port any more (atomic) */
	uint64_t polls;		/* dr_port_poll calls, by anyone (under lock) */
	struct dr_ep *draining;	/* endpoints disconnecting gracefully (ep.c) */
	struct dr_ep *acks;	/* endpoints whose QP holds an ACK (under lock) */
	/* what an application may be polling for, under lock: work
	 * completions delivered and RDMA WRITEs placed in its memory (dev_poll
	 * holds the ACKs for its next poll when a poll made one) */
	uint64_t app_events;
	/* the counters of its closed QPs, summed (telemetry.c, under lock) */
	struct dr_dev_qp_sum {
		struct dr_qp_stats qs;
		uint64_t retry_exc, rnr_retry_exc;
	} qp_gone;
};

/* The locks of the data path (the domain's, a CQ's): held for short
 * stretches and never across a sleep, by the application's threads and
 * the device's progress thread.  A test-and-set lock: one atomic to take, a
 * plain store to release (a pthread mutex costs two atomics and was the
 * top entry of a polling loop's profile); it yields the CPU when it has
 * spun for a while (2 CPUs: the holder may be waiting for this one). */
static inline void dr_spin_lock(int *l)
{
	unsigned spins = 0;

	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			if (++spins >= 256)
				sched_yield();
#if defined(__x86_64__) || defined(__i386__)
			else
				__builtin_ia32_pause();
#endif
		}
}

/* One attempt: true when the lock was free and is now held. */
static inline bool dr_spin_trylock(int *l)
{
	return !__atomic_load_n(l, __ATOMIC_RELAXED) &&
	       !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE);
}

static inline void dr_spin_unlock(int *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static inline void dr_dev_lock(struct dr_dev *dev)
{
	dr_spin_lock(&dev->lock);
}

static inline void dr_dev_unlock(struct dr_dev *dev)
{
	dr_spin_unlock(&dev->lock);
}

/* Find or open the device an fi_info names (domain name and source
 * address); a reference for the caller.  -FI_ENODATA (FI_WARN says why). */
int dr_dev_get(struct dr_fabric *fab, const struct fi_info *info, struct dr_dev **out);
void dr_dev_put(struct dr_dev *dev);
/* One round of progress: rx burst, dispatch, timers.  Takes dev->lock. */
void dr_dev_progress(struct dr_dev *dev);
void dr_dev_progress_fn(void *dev);
/* ep's QP on this device: a QPN drawn from the kernel's CSPRNG over the
 * 24-bit space (never 0 or 1, never one in use on this port or, through
 * the registry, by another process on the interface), ep entered under it
 * in the receive dispatch, and the QP created with ia (the caller's queue
 * sizes, ops and flags; the QPN, MR table and drop counters are the
 * device's).  The one place QPNs come from.  dev->lock held.  0,
 * -FI_ENOSPC (DR_MAX_EP in use), -FI_EIO (no random bytes; FI_WARN) or
 * -FI_ENOMEM. */
int dr_dev_qp_create(struct dr_dev *dev, struct dr_ep *ep, struct dr_qp_init_attr *ia,
		     struct dr_qp **qp);
/* The QP destroyed and its QPN out of the dispatch (ep closed).  dev->lock
 * held. */
void dr_dev_qp_destroy(struct dr_dev *dev, struct dr_qp *qp, struct dr_ep *ep);
/* An ephemeral rdma_cm port (0xc000..0xffff) for a connect, claimed on the
 * host when the interface is shared (registry.c).  dev->lock held.  0 or
 * -FI_EADDRINUSE (every one taken). */
int dr_dev_port_alloc(struct dr_dev *dev, uint16_t *port);
/* The path MTU a connection made now takes: dev->pmtu, or less while the
 * kernel interface's MTU is below the port's (dr_port_link_mtu); 0 if it
 * is too small for any.  dev->lock held. */
unsigned dr_dev_pmtu(struct dr_dev *dev);
void dr_dev_port_free(struct dr_dev *dev, uint16_t port);
/* Listen on *port, or on an ephemeral one (*port 0, set on return): the
 * port claimed on the host, then dr_cm_listen.  dev->lock held.  0,
 * -FI_EADDRINUSE (here or in another process) or -FI_ENOMEM. */
int dr_dev_listen(struct dr_dev *dev, uint16_t *port, unsigned backlog, void *ctx,
		  struct dr_cm_listener **lsn);
void dr_dev_unlisten(struct dr_dev *dev, struct dr_cm_listener *lsn, uint16_t port);
/* Log drop counters (who: "port eth0", "qp 0x1234"): FI_WARN when any drop
 * is of a hostile kind (dr_rx_drop_hostile), FI_INFO otherwise, nothing
 * when there is none. */
void dr_rx_drops_log(const char *who, const uint64_t drops[DR_RX_DROP_NUM]);
/* Fd waiters on the device: its progress thread polls continuously. */
void dr_dev_background(void *dev);
/* Process exit: the progress thread stopped, the port quiesced, and the
 * device left inert (dev.c says what that means); waits end at deadline
 * (CLOCK_MONOTONIC ns).  The caller holds a reference. */
void dr_dev_quiesce(struct dr_dev *dev, uint64_t deadline_ns);

/* ---- registry.c: the droce processes sharing one kernel interface ------- */

/* What a process claims on the host: the identifiers frames and MADs are
 * routed by.  A claim is exclusive across processes and dies with its
 * process (registry.c says how). */
enum dr_reg_kind {
	DR_REG_QPN,	/* 24-bit QPN */
	DR_REG_PORT,	/* rdma_cm port: listening, or a connect's source */
	DR_REG_COMM_ID, /* CM communication ID */
};
struct dr_reg;
/* The registry of kernel interface ifname in this network namespace; *out
 * NULL (and 0) for "" (not a kernel interface).  -errno when no directory
 * holds one (the device then runs alone).  Closing waits up to 200 ms when
 * it held anything (registry.c says why). */
int dr_reg_open(const char *ifname, struct dr_reg **out);
void dr_reg_close(struct dr_reg *r);
/* 0, or -EBUSY: another process holds it.  Claiming what this registry
 * holds already succeeds: callers check their own tables first. */
int dr_reg_claim(struct dr_reg *r, enum dr_reg_kind kind, uint32_t v);
/* Released DR_REG_GRACE_NS later, in dr_reg_tick (registry.c says why);
 * claiming it again meanwhile keeps it. */
#define DR_REG_GRACE_NS 200000000ull
void dr_reg_release(struct dr_reg *r, enum dr_reg_kind kind, uint32_t v);
void dr_reg_tick(struct dr_reg *r);
/* Another process holds it. */
bool dr_reg_foreign(struct dr_reg *r, enum dr_reg_kind kind, uint32_t v);
/* This process answers the MADs nobody owns (it holds the CM responder
 * role, taking it now if its holder is gone); true with no registry. */
bool dr_reg_responder(struct dr_reg *r);
/* Whether this process holds the role now (dr_reg_responder takes it if it is free). */
bool dr_reg_is_responder(const struct dr_reg *r);
const char *dr_reg_path(const struct dr_reg *r);
/* A slot of the host-local wire (local.c): the first free of [0, nslots),
 * held until the process closes the registry or dies; -EBUSY: none. */
int dr_reg_slot_claim(struct dr_reg *r, unsigned nslots, unsigned *slot);
/* Another process holds the slot. */
bool dr_reg_slot_live(struct dr_reg *r, unsigned slot);
/* The wire's file, opened (created if need be): an fd or -errno. */
int dr_reg_wire_open(struct dr_reg *r);
const char *dr_reg_wire_path(const struct dr_reg *r);

/* ---- local.c: the host-local wire between the processes on an interface -- */

struct dr_local;
/* Each receiver's ring of each sender (bytes of records: 8 bytes of length
 * and the frame, 8-aligned), and what a sender holds back for a receiver
 * whose ring is full before it drops (bytes of frames). */
#define DR_LOCAL_RING_BYTES    (512u * 1024)
#define DR_LOCAL_BACKLOG_BYTES (16u << 20)
/* Join the wire of r's interface (a slot, the file mapped): 0 and *out,
 * or -errno (the device then reaches no other process on the host). */
int dr_local_open(struct dr_reg *r, struct dr_local **out);
void dr_local_close(struct dr_local *l);
/* Copy frame (Ethernet, to the interface's own address) into the inbound
 * ring of every process on the wire that may want it (dr_port_local_fn). */
int dr_local_send(void *l, const void *frame, size_t len);
/* Hand up to budget received frames to fn; returns how many. */
unsigned dr_local_poll(struct dr_local *l, unsigned budget,
		       void (*fn)(void *ctx, const void *frame, size_t len), void *ctx);
/* Frames for qpn reach this process (a count: one per QP holding it). */
void dr_local_qpn_add(struct dr_local *l, uint32_t qpn);
void dr_local_qpn_del(struct dr_local *l, uint32_t qpn);
struct dr_local_stats {
	uint64_t tx_frames;  /* frames sent on the wire */
	uint64_t tx_copies;  /* ... copied into a ring (one per receiver) */
	uint64_t tx_queued;  /* ... held back: a live receiver's ring was full */
	uint64_t tx_full;    /* ... lost: its backlog too (LW_BACKLOG) */
	uint64_t tx_nomem;   /* ... lost: no memory for the ring (ENOSPC) */
	uint64_t tx_dead;    /* ... not copied: the receiver had died */
	uint64_t tx_nobody;  /* ... for a QPN no process on the wire holds */
	uint64_t rx_frames;  /* frames received */
	uint64_t rx_lost;    /* senders found our ring full (counted by them) */
	uint64_t rx_corrupt; /* ring records out of bounds (skipped) */
};
void dr_local_get_stats(struct dr_local *l, struct dr_local_stats *s);
/* Frames wait for room in a receiver's ring: poll again soon. */
bool dr_local_pending(const struct dr_local *l);
unsigned dr_local_slot(const struct dr_local *l);

struct dr_domain {
	struct fid_domain dom;
	struct dr_fabric *fab;
	struct dr_dev *dev;
	struct fi_info *info;
	int ref; /* endpoints, CQs, counters, MRs opened on it (dr_ref_*) */
};

static inline struct dr_domain *dr_domain_of(struct fid_domain *f)
{
	return container_of(f, struct dr_domain, dom);
}

static inline struct dr_domain *dr_domain_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_domain, dom.fid);
}

int dr_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
		   void *context);

/* ---- memory regions (mr.c) ----------------------------------------------- */

struct dr_mr_fid {
	struct fid_mr mr;
	struct dr_domain *dom;
	struct dr_mr *mr_eng; /* the engine's entry (key, bounds, access) */
};

static inline struct dr_mr_fid *dr_mr_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_mr_fid, mr.fid);
}

extern const struct fi_ops_mr dr_mr_ops;

/* ---- passive and active endpoints (pep.c, ep*.c, rma.c, atomic.c, stubs.c) */

/* For endpoints opened without FI_RMA / FI_ATOMIC, and what droce never
 * offers (tagged, collectives): every call -FI_ENOSYS. */
extern const struct fi_ops_rma dr_no_rma_ops;
extern const struct fi_ops_tagged dr_no_tagged_ops;
extern const struct fi_ops_atomic dr_no_atomic_ops;
extern const struct fi_ops_collective dr_no_collective_ops;
/* The slots of an RMA and an atomic table, each function named prefix and
 * slot: listed once for the real tables (rma.c: rma_read, ...; atomic.c:
 * at_write, ...) and the -FI_ENOSYS ones (stubs.c: no_rma_read, ...). */
#define DR_RMA_OPS(p)                                                                              \
	{                                                                                          \
		.size = sizeof(struct fi_ops_rma), .read = p##read, .readv = p##readv,             \
		.readmsg = p##readmsg, .write = p##write, .writev = p##writev,                     \
		.writemsg = p##writemsg, .inject = p##inject, .writedata = p##writedata,           \
		.injectdata = p##injectdata,                                                       \
	}
#define DR_ATOMIC_OPS(p)                                                                           \
	{                                                                                          \
		.size = sizeof(struct fi_ops_atomic), .write = p##write, .writev = p##writev,      \
		.writemsg = p##writemsg, .inject = p##inject, .readwrite = p##readwrite,           \
		.readwritev = p##readwritev, .readwritemsg = p##readwritemsg,                      \
		.compwrite = p##compwrite, .compwritev = p##compwritev,                            \
		.compwritemsg = p##compwritemsg, .writevalid = p##writevalid,                      \
		.readwritevalid = p##readwritevalid, .compwritevalid = p##compwritevalid,          \
	}
/* RDMA WRITE (with immediate) and READ (rma.c); 64-bit FETCH_ADD and
 * CMP_SWAP behind the fi_atomic calls (atomic.c). */
extern const struct fi_ops_rma dr_rma_ops;
extern const struct fi_ops_atomic dr_atomic_ops;
/* fi_query_atomic: 0 with attr {count 1, size 8} for a pair droce executes,
 * -FI_EOPNOTSUPP for every other (op, datatype), -FI_EINVAL for bad flags. */
int dr_atomic_query(enum fi_datatype datatype, enum fi_op op, struct fi_atomic_attr *attr,
		    uint64_t flags);

struct dr_pep {
	struct fid_pep pep;
	struct dr_fabric *fab;
	struct dr_dev *dev;
	struct fi_info *info;
	struct dr_eq *eq;
	struct dr_pep *next;	/* dev->peps while listening, under dev->lock */
	struct dr_cm_listener *lsn;
	struct dr_connreq *crs; /* its requests not yet answered (dev->lock) */
	int backlog;		/* FI_BACKLOG, or FI_DROCE_CM_BACKLOG */
	union dr_sockaddr addr;
	bool listening;
};

static inline struct dr_pep *dr_pep_of(struct fid_pep *f)
{
	return container_of(f, struct dr_pep, pep);
}

static inline struct dr_pep *dr_pep_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_pep, pep.fid);
}

int dr_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
		void *context);

/*
 * A connection request handed to the application in fi_info->handle.
 * Lives until fi_accept, fi_reject or the close of the endpoint made from
 * it -- or, while its FI_CONNREQ is still unread, until the request times
 * out, the peer withdraws it or the pep closes: then the event is taken
 * back off the EQ (dr_eq_withdraw) and the application never sees it.  A
 * request gone after the event was read leaves id NULL and err set:
 * fi_accept fails with err.  All fields under dev->lock but ev, which is
 * the EQ's, under eq->lock.
 */
struct dr_connreq {
	struct fid fid; /* FI_CLASS_CONNREQ */
	struct dr_dev *dev;
	struct dr_cm_id *id;		/* NULL once the request is gone */
	int err;			/* ... and why: -FI_ETIMEDOUT, -FI_ECONNABORTED */
	struct dr_pep *pep;		/* NULL once the pep is closed */
	struct dr_eq *eq;		/* where its event went; valid while pep is */
	struct dr_connreq *next, *prev; /* on pep->crs */
	struct dr_eq_ev *ev;		/* its event while unread (eq->lock) */
};

static inline struct dr_connreq *dr_connreq_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_connreq, fid);
}

/* dev->lock held: the request is answered or abandoned; cr is freed. */
void dr_connreq_free(struct dr_connreq *cr);

enum dr_ep_state {
	DR_EP_IDLE,	  /* created or enabled, not connected */
	DR_EP_CONNECTING, /* REQ sent (active) */
	DR_EP_ACCEPTING,  /* REP sent (passive) */
	DR_EP_CONNECTED,
	DR_EP_SHUTDOWN,	  /* disconnected, by either side */
	DR_EP_ERROR,	  /* rejected or unreachable */
};

/* The counters an endpoint may be bound to (fi_ep_bind flags). */
enum dr_ep_cntr {
	DR_CNTR_SEND,	      /* FI_SEND: messages sent */
	DR_CNTR_RECV,	      /* FI_RECV: messages received */
	DR_CNTR_READ,	      /* FI_READ: RMA reads, fetching and compare atomics */
	DR_CNTR_WRITE,	      /* FI_WRITE: RMA writes, base atomics */
	DR_CNTR_REMOTE_READ,  /* FI_REMOTE_READ: needs FI_RMA_EVENT */
	DR_CNTR_REMOTE_WRITE, /* FI_REMOTE_WRITE: needs FI_RMA_EVENT */
	DR_CNTR_NUM
};

/* What a posted send-queue work request reports when the engine completes
 * it: every WR is posted signaled and its wr_id counts the endpoint's
 * posts, so this ring runs beside the SQ (ep->txq[wr_id & (tx_depth - 1)]);
 * a slot is reused only once the engine has a free SQ entry, that is once
 * the WR that held it has completed (completions come in posting order). */
struct dr_tx_op {
	void *context;
	uint64_t cq_flags; /* FI_SEND|FI_MSG, FI_RMA|FI_WRITE, FI_ATOMIC|FI_READ... */
	enum dr_ep_cntr cntr; /* DR_CNTR_SEND, _READ or _WRITE */
	bool comp;	   /* a CQ entry on success (errors always have one) */
	bool inject;	   /* an fi_inject* call: no context, never flushed to the CQ */
};

/* The same for a posted receive (ep->rxq[wr_id & (rx_depth - 1)]). */
struct dr_rx_op {
	void *context;
	bool comp;
};

struct dr_ep {
	struct fid_ep ep;
	struct dr_domain *dom;
	struct dr_dev *dev;
	struct fi_info *info;
	struct dr_eq *eq;
	struct dr_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective; /* FI_SELECTIVE_COMPLETION */
	struct dr_cntr *cntr[DR_CNTR_NUM]; /* bound counters, NULL if none */
	struct dr_qp *qp;
	struct dr_port_timer *qp_timer;
	struct dr_cm_id *cm_id;
	struct dr_connreq *connreq; /* passive: from fi_info->handle */
	enum dr_ep_state state;
	bool enabled;
	union dr_sockaddr src, dst; /* the device's family */
	bool src_port_claimed; /* src's port came from dr_dev_port_alloc */
	uint32_t start_psn;
	uint32_t pmtu; /* active side: the path MTU its REQ asked for */
	/* the peer's port takes UDP GSO super-frames and ours sends them:
	 * registered with the port (dr_port_gso_peer) until the ep goes */
	bool gso_peer;
	uint32_t gso_ip4, gso_qpn;
	uint64_t tx_op_flags, rx_op_flags;
	/* set at open from fi_info: */
	bool rx_cq_data;  /* FI_RX_CQ_DATA mode: WRITE_IMM consumes app receives */
	bool rma_event;	  /* FI_RMA_EVENT: remote counters may be bound */
	uint32_t tx_depth, rx_depth; /* the QP's queue depths (powers of two) */
	/* under dev->lock: */
	struct dr_tx_op *txq; /* beside the SQ, tx_depth entries */
	struct dr_rx_op *rxq; /* beside the RQ, rx_depth entries */
	uint32_t tx_posted, rx_posted; /* WRs posted, free-running: next wr_id */
	uint64_t atomic_sink; /* where fi_atomic's unwanted fetch lands */
	/* work requests failed for want of retries (telemetry), under dev->lock */
	uint64_t retry_exc, rnr_retry_exc;
	/* graceful disconnect (ep.c "draining"), under dev->lock: */
	struct dr_ep *drain_next; /* dev->draining */
	uint64_t drain_until_ns;  /* DREQ when the peer has been quiet this long */
	bool draining;
	bool orphan;		  /* closed by the application: freed after */
	/* its QP holds an ACK (DR_QP_DEFER_ACK): on dev->acks, under dev->lock */
	struct dr_ep *ack_next;
	bool ack_listed;
	uint64_t timer_at; /* deadline qp_timer is armed for, 0: none (ep.c) */
	struct dr_qp_ops qp_ops; /* the engine's view of this endpoint (ep.c) */
};

static inline struct dr_ep *dr_ep_of(struct fid_ep *f)
{
	return container_of(f, struct dr_ep, ep);
}

static inline struct dr_ep *dr_ep_of_fid(struct fid *fid)
{
	return container_of(fid, struct dr_ep, ep.fid);
}

/* Transmit flags each kind of call accepts (the *msg calls, and default
 * op_flags for the others).  FI_MORE is accepted and has no effect: the
 * engine transmits at post time. */
#define DR_TX_COMP_FLAGS (FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
#define DR_TX_OP_FLAGS (FI_COMPLETION | FI_INJECT | FI_FENCE | DR_TX_COMP_FLAGS)
#define DR_SENDMSG_FLAGS (DR_TX_OP_FLAGS | FI_REMOTE_CQ_DATA | FI_MORE)
#define DR_READMSG_FLAGS (FI_COMPLETION | FI_FENCE | FI_MORE | DR_TX_COMP_FLAGS)
#define DR_ATOMICMSG_FLAGS (DR_TX_OP_FLAGS | FI_MORE)

/* Does a transmit posted with these flags want a CQ entry on success? */
static inline bool dr_ep_tx_comp(const struct dr_ep *ep, uint64_t flags)
{
	return !ep->tx_selective || (flags & FI_COMPLETION);
}

/* An iovec list as engine SGEs (local memory needs no registration: no
 * FI_MR_LOCAL); *len is the total.  -FI_EINVAL (count), -FI_EMSGSIZE. */
int dr_ep_sge_of_iov(const struct iovec *iov, size_t count, struct dr_sge *sge, uint64_t *len);
/* Post one send-queue work request for ep (ep.c; rma.c and atomic.c use
 * it).  op says how it completes; flags are the operation's (FI_INJECT:
 * the gather list is copied now, FI_FENCE).  wr_id and the engine flags
 * are filled in here.  0, -FI_EAGAIN (queue full), -FI_EMSGSIZE (inject
 * too large), -FI_EOPBADSTATE (not connected) or -FI_EINVAL. */
ssize_t dr_ep_post_send(struct dr_ep *ep, struct dr_send_wr *wr, const struct dr_tx_op *op,
			uint64_t flags);

int dr_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
	       void *context);
/* CM events for an endpoint (from dev.c's CM callback, dev->lock held). */
void dr_ep_cm_event(struct dr_ep *ep, const struct dr_cm_event *ev);
/* A frame for the endpoint's QP (dev->lock held). */
void dr_ep_input(struct dr_ep *ep, const struct dr_pkt *pkt);
void dr_pep_cm_connreq(struct dr_pep *pep, const struct dr_cm_event *ev);
/* The CM's CONNREQ_GONE (dev->lock held). */
void dr_pep_cm_gone(const struct dr_cm_event *ev);
/* Finish the graceful disconnects that are due (dev->lock held); returns
 * how many are still draining. */
unsigned dr_ep_drain(struct dr_dev *dev, bool now);

/* Between the endpoint's files: ep.c (the fid, bind, open, close), ep_cm.c
 * (connect, accept, shutdown, drain, CM events), ep_msg.c (the posting
 * path) and ep_qp.c (the QP engine's callbacks, frames in).  dev->lock
 * held for each but the ops tables. */
extern const struct fi_ops_cm dr_ep_cm_ops;
extern const struct fi_ops_msg dr_ep_msg_ops;
/* ep->qp_ops: the engine's callbacks into ep (ep_qp.c), with zero-copy
 * transmit where the port allows it; the QP's retransmit timer. */
void dr_ep_qp_ops_init(struct dr_ep *ep);
struct dr_port_timer *dr_ep_qp_timer_new(struct dr_ep *ep);
/* FI_ENABLE: the QP to INIT once an EQ and both CQs are bound. */
int dr_ep_enable_locked(struct dr_ep *ep);
/* Everything but the QP's connection (the QP no longer reachable). */
void dr_ep_free(struct dr_ep *ep);
/* Its held ACK goes now; off the device's list. */
void dr_ep_flush_ack(struct dr_ep *ep);
/* On the device's list of QPs its poll flushes (dev.c dr_dev_flush_acks)
 * if its QP has something to flush (dr_qp_flush_due); dev->lock held. */
void dr_ep_flush_list(struct dr_ep *ep);
/* Start the graceful disconnect (ep_cm.c): the DREQ once the peer has been
 * quiet for a few retransmit timeouts. */
void dr_ep_drain_start(struct dr_ep *ep);
/* A frame that passed the QP's checks came from the peer (ep_cm.c): it
 * establishes an accepting connection, and a draining one waits on. */
void dr_ep_peer_heard(struct dr_ep *ep);

#endif /* DR_FI_H */
