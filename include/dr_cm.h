/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dr_cm.h - the IB connection manager as rdma_cm speaks it on RoCEv2:
 * REQ/REP/RTU/REJ/DREQ/DREP MADs on QP1 (IBA 12; docs/protocol.md C).
 *
 * A pure state machine, part of the qp layer: it knows neither DPDK nor
 * libfabric.  MADs leave through ops->send_mad (the caller wraps them in a
 * UD SEND_ONLY to QP1), come in through dr_cm_recv(), time is read from
 * ops->now_ns and the next deadline is announced through ops->timer_set
 * (dr_cm_tick() runs it).  What happens is reported through ops->event,
 * synchronously, from inside the call that caused it.
 *
 * Concurrency: one struct dr_cm is single-threaded; the caller (the
 * domain lock in src/fi) serialises every call.  Event callbacks may call
 * dr_cm_accept/reject/disconnect/release but not dr_cm_fini.
 *
 * Hostile peers (issue 11): communication IDs and transaction IDs come from
 * getrandom(2), so nothing a peer sees predicts another connection's; every
 * MAD that names a connection acts only if its source address, both
 * communication IDs and (where it carries one) the QPN match, and is
 * otherwise dropped and counted by reason; ids are found through keyed
 * hash tables and timers through a heap, never by walking every id; the
 * requests a listener holds unanswered are bounded by its backlog and time
 * out as the REQ's own timeouts say.
 *
 * Several CMs on one interface (issue 12; src/fi/registry.c): optional ops
 * make comm IDs unique across them and tell whose a MAD is that names
 * nothing of this CM's; it is then left to its owner, or answered by the
 * one CM that answers for nobody (enum dr_cm_whose).
 */
#ifndef DR_CM_H
#define DR_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dr_roce.h"

#define DR_CM_MAX_USER_DATA DR_CMA_USER_DATA_LEN /* 56: the rdma_cm limit */

enum dr_cm_state {
	DR_CMS_IDLE,
	DR_CMS_REQ_SENT,    /* active: REQ out, waiting for REP/REJ */
	DR_CMS_REQ_RCVD,    /* passive: REQ reported, waiting for accept/reject */
	DR_CMS_REP_SENT,    /* passive: REP out, waiting for RTU */
	DR_CMS_ESTABLISHED,
	DR_CMS_DREQ_SENT,   /* DREQ out, waiting for DREP */
	DR_CMS_TIMEWAIT,    /* disconnected; answers duplicates for a while */
	DR_CMS_CLOSED,	    /* rejected, timed out or done */
	DR_CMS_NUM
};
extern const char *const dr_cm_state_names[DR_CMS_NUM];

enum dr_cm_event_type {
	DR_CM_EV_CONNREQ,      /* passive: a REQ for a listener; accept or reject */
	DR_CM_EV_ESTABLISHED,  /* active: REP in (RTU sent); passive: RTU in */
	DR_CM_EV_REJECTED,     /* the peer rejected (reason, private data) */
	DR_CM_EV_UNREACHABLE,  /* no answer after every retry */
	DR_CM_EV_DISCONNECTED, /* DREQ in (DREP sent), or our DREQ answered */
	/* passive: a CONNREQ'd request that was never answered is gone: it
	 * timed out (err -ETIMEDOUT) or the peer withdrew it with a REJ (err
	 * -ECONNABORTED).  The id is freed when the callback returns: forget
	 * it there. */
	DR_CM_EV_CONNREQ_GONE,
	DR_CM_EV_NUM
};
extern const char *const dr_cm_event_names[DR_CM_EV_NUM];

/* What one side offers: in a REQ (active) or a REP (passive). */
struct dr_cm_conn_param {
	uint32_t qpn;
	uint32_t start_psn;
	uint8_t responder_resources; /* IRD offered */
	uint8_t initiator_depth;     /* ORD wanted */
	uint8_t retry_count;	     /* 0..7 */
	uint8_t rnr_retry_count;     /* 0..7, 7 = infinite */
	uint8_t path_mtu;	     /* IB enum: 1 = 256 .. 5 = 4096 (REQ only) */
	uint8_t ack_timeout;	     /* REQ: local ACK timeout; REP: target ACK delay */
	/* Enhanced Connection Establishment (IBA 1.4, 12.6.5; the kernel's
	 * ib_cm since 5.8): a vendor ID in the REQ or REP, and options in the
	 * MAD's attribute modifier, which a peer that does not know the
	 * vendor ignores (rdma_rxe answers 0, 0).  0: none. */
	uint32_t ece_vendor;
	uint32_t ece_options;
	const void *private_data;
	size_t private_len; /* REQ <= 56, REP <= 196, REJ <= 148 */
};

/* What the peer said (in CONNREQ from its REQ, in ESTABLISHED from its REP). */
struct dr_cm_peer {
	uint32_t ip4;	    /* host order; 0 on an IPv6 CM */
	uint8_t gid[16];    /* its address as a GID: IPv6, or ::ffff:a.b.c.d */
	uint16_t port;	    /* its rdma_cm port (REQ cma header) */
	uint16_t dst_port;  /* the port it connected to (REQ service ID) */
	uint32_t qpn;
	uint32_t start_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	uint8_t path_mtu;   /* REQ only */
	uint8_t ack_timeout;
	uint32_t flow_label; /* REQ only */
	uint64_t ca_guid;
	uint32_t ece_vendor, ece_options; /* its ECE (0, 0: none) */
};

/* droce's ECE vendor ID: a locally administered IEEE company ID, which no
 * vendor is assigned ('d' 'r' behind the local bit, as droce's MACs), and
 * its options. */
#define DR_ECE_VENDOR 0x026472
/* the sender's port takes UDP GSO super-frames whole (a "packet:" port):
 * the peer may send it some (src/roce/port_pk.c) */
#define DR_ECE_GSO_RX 0x1u
/* the sender acknowledges request packets without AckReq within
 * DR_QP_LAZY_ACK_NS, and counts on the peer's doing the same where both
 * say so (dr_qp_set_lazy_ack) */
#define DR_ECE_LAZY_ACK 0x2u

struct dr_cm_id;
struct dr_cm_listener;

struct dr_cm_event {
	enum dr_cm_event_type type;
	struct dr_cm_id *id;
	void *listen_ctx;    /* CONNREQ, CONNREQ_GONE: the listener's context
			      * (NULL once the listener is gone) */
	uint16_t rej_reason; /* REJECTED: IBA REJ reason (8 = no listener, 28 = consumer) */
	int err;	     /* UNREACHABLE: -ETIMEDOUT (no answer) or -EHOSTUNREACH;
			      * CONNREQ_GONE: -ETIMEDOUT or -ECONNABORTED */
	const struct dr_cm_peer *peer;
	const uint8_t *private_data;
	size_t private_len;
};

/* Several CMs on one interface (src/fi/registry.c): each process has its
 * own and sees every MAD.  What a MAD names that no id or listener of this
 * CM has: */
enum dr_cm_key {
	DR_CM_KEY_NONE,	   /* a REQ's service ID outside rdma_cm's TCP port space */
	DR_CM_KEY_PORT,	   /* a REQ's rdma_cm port (service ID 0x01060000 + port) */
	DR_CM_KEY_COMM_ID, /* the comm ID a REP/RTU/REJ/DREQ/DREP/MRA names as ours */
};
/* ... and whose it is. */
enum dr_cm_whose {
	DR_CM_WHOSE_MINE,   /* this CM answers it as a lone CM would */
	DR_CM_WHOSE_OTHER,  /* another CM's: left alone, counted other_cm */
	DR_CM_WHOSE_NOBODY, /* nobody's, and another CM (the host's CM
			     * responder) answers those: counted responder */
};

struct dr_cm_ops {
	/* transmit a 256-byte MAD to QP1 at dst_ip4; 0 or -errno */
	int (*send_mad)(void *ctx, uint32_t dst_ip4, const uint8_t *mad);
	/* the same at an IPv6 address, for an IPv6 CM (cfg.ipv6), which
	 * calls only this one */
	int (*send_mad6)(void *ctx, const uint8_t dst_ip6[16], const uint8_t *mad);
	uint64_t (*now_ns)(void *ctx);
	void (*timer_set)(void *ctx, uint64_t deadline_ns); /* optional */
	void (*event)(void *ctx, const struct dr_cm_event *ev);
	void (*log)(void *ctx, const char *msg); /* optional */
	/* Optional, for CMs that share an interface (all three or none).
	 * comm_id_claim: 0, or -EBUSY when another CM holds that comm ID (a
	 * new one is drawn); an id's comm ID is claimed when it is made and
	 * released when it is freed.  whose: asked only about what this CM
	 * has no id or listener for; without it everything is this CM's. */
	int (*comm_id_claim)(void *ctx, uint32_t comm_id);
	void (*comm_id_release)(void *ctx, uint32_t comm_id);
	enum dr_cm_whose (*whose)(void *ctx, enum dr_cm_key key, uint32_t v);
	/* Optional: annotations for a capture that explains itself (issue
	 * 15; the vocabulary is in fi_droce(7), FI_DROCE_PCAP), as struct
	 * dr_qp_ops has them.  noting: whether anyone listens now (NULL with
	 * a note: always).  note: one note on the MAD being received (during
	 * dr_cm_recv, mad is what it was given) or the one about to be sent
	 * (just before send_mad with the same mad).  text is valid only
	 * during the call. */
	bool (*noting)(void *ctx);
	void (*note)(void *ctx, const uint8_t *mad, const char *text);
};

struct dr_cm_config {
	uint32_t local_ip4;	/* host order */
	/* An IPv6 CM instead (local_ip4 ignored): GIDs are IPv6 addresses,
	 * the rdma_cm header says IP version 6, REQs with version 4 are
	 * refused (and an IPv4 CM refuses version 6). */
	bool ipv6;
	uint8_t local_ip6[16];
	uint64_t ca_guid;
	uint8_t cm_resp_timeout; /* 4.096 us * 2^n per MAD attempt; rdma_cm: 20 */
	uint8_t max_cm_retries;	 /* resends before giving up; rdma_cm: 15 */
	uint64_t timewait_ns;	 /* how long a closed id answers duplicates */
};

/* Why a MAD was dropped (or a request not kept): one counter each. */
enum dr_cm_drop {
	DR_CM_DROP_NO_ID,     /* names no live id (REP: answered REJ stale) */
	DR_CM_DROP_ADDR,      /* from another address than the connection's peer */
	DR_CM_DROP_COMM_ID,   /* the sender's comm ID is not the connection's */
	DR_CM_DROP_QPN,	      /* the QPN is not the connection's */
	DR_CM_DROP_STATE,     /* all matches, but the id does not expect it now */
	DR_CM_DROP_BACKLOG,   /* REQ: the listener holds its backlog already */
	DR_CM_DROP_SRC_SHARE, /* REQ: this address holds its share of the backlog */
	DR_CM_DROP_NOMEM,     /* REQ: no memory for the id (the peer resends) */
	DR_CM_DROP_OTHER_CM,  /* another CM on the interface owns what it names */
	DR_CM_DROP_RESPONDER, /* nobody owns it; another CM answers for nobody */
	DR_CM_DROP_NUM
};
extern const char *const dr_cm_drop_names[DR_CM_DROP_NUM];

struct dr_cm_stats {
	uint64_t tx_mads, rx_mads, resent, dup_reqs, dup_reps, dup_dreqs;
	uint64_t rej_no_listener, rx_bad; /* malformed or unspoken MADs */
	uint64_t req_expired;		  /* requests never answered in time */
	uint64_t req_withdrawn;		  /* requests the peer gave up (REJ) */
	uint64_t drop[DR_CM_DROP_NUM];
};

/* A hash table of ids (or per-address counts) on a 64-bit key, chained
 * through a node inside the element; keyed with a secret so that a peer
 * choosing keys cannot pile them into one chain (cm.c). */
struct dr_cm_hnode {
	struct dr_cm_hnode *next;
	uint64_t key;
};
struct dr_cm_htab {
	struct dr_cm_hnode **b;
	size_t mask; /* buckets - 1 */
	size_t n;
};

struct dr_cm {
	struct dr_cm_config cfg;
	const struct dr_cm_ops *ops;
	void *ctx;
	struct dr_cm_id *ids;	     /* every live id, a doubly linked list */
	struct dr_cm_listener *lsn;  /* listeners, a list (the caller's few) */
	struct dr_cm_htab by_local;  /* every id, by our comm ID */
	struct dr_cm_htab by_remote; /* passive ids, by peer address and its comm ID */
	struct dr_cm_htab src_count; /* pending requests by listener port and address */
	struct dr_cm_id **heap;	     /* ids with a deadline, a min-heap */
	size_t heap_n, heap_cap;
	uint64_t hkey[2];	      /* the hash tables' secret */
	uint8_t local_gid[16];	      /* our address as a GID */
	uint64_t deadline_ns;	      /* last value given to timer_set */
	uint32_t gsi_psn;	      /* PSNs of our QP1 frames */
	struct dr_cm_stats stats;
	/* annotations: the MAD dr_cm_recv is handling, and state changes
	 * waiting for the MAD that carries them */
	const uint8_t *rx_mad;
	unsigned nchg;
	uint8_t chg[4][2]; /* enum dr_cm_state, from and to */
};

/* One connection's CM state.  The caller reads it, never writes it. */
struct dr_cm_id {
	struct dr_cm_id *next, *prev;
	struct dr_cm_hnode hn_local, hn_remote;
	size_t heap_idx;		/* in cm->heap while deadline_ns != UINT64_MAX */
	struct dr_cm_listener *lsn;	/* REQ_RCVD: the listener it counts against */
	struct dr_cm_id *pnext, *pprev; /* ... on that listener's pending list */
	struct dr_cm *cm;
	enum dr_cm_state state;
	void *ctx;	    /* the caller's, set by connect or dr_cm_set_ctx */
	bool active;
	bool released;	    /* the caller called dr_cm_release */
	uint32_t local_comm_id, remote_comm_id;
	uint64_t tid;	    /* of the REQ; REP/RTU/REJ echo it */
	uint32_t peer_ip4;  /* 0 on an IPv6 CM */
	uint8_t peer_gid[16]; /* IPv6, or ::ffff:a.b.c.d */
	uint16_t local_port; /* rdma_cm ports: ours and the peer's */
	uint16_t remote_port;
	struct dr_cm_peer peer;	   /* what the peer offered */
	struct dr_cm_conn_param local; /* what we offered (no private data) */
	uint8_t last_mad[DR_MAD_LEN]; /* for resends and duplicates */
	bool has_last;
	uint16_t last_attr;
	uint64_t deadline_ns;	/* UINT64_MAX: none */
	unsigned retries_left;
	int fail_err;		/* why it gave up: -ETIMEDOUT or -EHOSTUNREACH */
	bool drep_awaited;	/* our DREQ is unanswered, also after DREQs crossed */
	bool mra_seen;		/* the peer's MRA already extended this wait */
	bool in_by_remote;	/* hn_remote is in cm->by_remote */
};

/* -EINVAL for bad settings; -errno (logged) when getrandom(2) fails. */
int dr_cm_init(struct dr_cm *cm, const struct dr_cm_config *cfg, const struct dr_cm_ops *ops,
	       void *ctx);
/* Frees every id and listener; sends nothing. */
void dr_cm_fini(struct dr_cm *cm);

/* Listen on an rdma_cm TCP-space port: REQs for service ID
 * 0x0000000001060000 + port become CONNREQ events.  -EADDRINUSE if taken.
 *
 * backlog (at least 1) bounds the requests the listener holds unanswered
 * (CONNREQ reported, neither accepted nor rejected), as listen(2)'s does;
 * one source address may hold at most DR_CM_SRC_SHARE() of them, so that a
 * flood from one address leaves room for others.  A REQ beyond either is
 * dropped without a word, as the Linux CM drops one its consumer has no
 * room for (cm.c cm_destroy_id: "Do not reject to allow future retries"):
 * the peer's REQ resend then finds room once the application catches up,
 * where a REJ would end its attempt, and a forged source gets nothing
 * reflected at it.  An unanswered request times out when the peer has
 * given up by its REQ's own numbers, (Max CM Retries + 1) x Remote CM
 * Response Timeout, or by ours if sooner: CONNREQ_GONE. */
int dr_cm_listen(struct dr_cm *cm, uint16_t port, unsigned backlog, void *ctx,
		 struct dr_cm_listener **out);
#define DR_CM_SRC_SHARE(backlog) ((backlog) - (backlog) / 4)
/* A new backlog; requests held beyond it stay until answered or gone. */
void dr_cm_set_backlog(struct dr_cm_listener *l, unsigned backlog);
/* Requests it holds stay (their CONNREQ_GONE comes with listen_ctx NULL). */
void dr_cm_unlisten(struct dr_cm_listener *l);
/* Requests a listener holds unanswered now. */
unsigned dr_cm_pending(const struct dr_cm_listener *l);

/* Active side: send a REQ from src_port (ours) to dst_ip4:dst_port.
 * -EINVAL for private data over 56 bytes or a bad path MTU. */
int dr_cm_connect(struct dr_cm *cm, uint32_t dst_ip4, uint16_t dst_port, uint16_t src_port,
		  const struct dr_cm_conn_param *p, void *ctx, struct dr_cm_id **out);
/* The same to an IPv6 address from an IPv6 CM.  -EAFNOSUPPORT when the
 * CM's family is the other one (also for the IPv4 call on an IPv6 CM). */
int dr_cm_connect6(struct dr_cm *cm, const uint8_t dst_ip6[16], uint16_t dst_port,
		   uint16_t src_port, const struct dr_cm_conn_param *p, void *ctx,
		   struct dr_cm_id **out);
/* Passive side, after CONNREQ: answer with a REP, or a REJ (reason 28,
 * consumer defined, carrying the data).  -EINVAL in another state. */
int dr_cm_accept(struct dr_cm_id *id, const struct dr_cm_conn_param *p);
int dr_cm_reject(struct dr_cm_id *id, const void *private_data, size_t len);
/* The passive side saw data before the RTU (IBA 12.9.6: it counts as one). */
void dr_cm_established(struct dr_cm_id *id);
/* Send a DREQ (retried; DISCONNECTED when answered or given up).  -EINVAL
 * unless established. */
int dr_cm_disconnect(struct dr_cm_id *id);
void dr_cm_set_ctx(struct dr_cm_id *id, void *ctx);
/* The caller forgets id: it is freed once closed (after its time-wait);
 * no event names it after this. */
void dr_cm_release(struct dr_cm_id *id);

/* The network says ip4 cannot be reached (ARP failed): every exchange in
 * flight with it ends now (UNREACHABLE with -EHOSTUNREACH, or
 * DISCONNECTED for a DREQ) instead of after every retry. */
void dr_cm_peer_unreachable(struct dr_cm *cm, uint32_t ip4);
void dr_cm_peer_unreachable6(struct dr_cm *cm, const uint8_t ip6[16]);

/* The frame that carries a MAD to QP1 of dst_ip4 (C.1): a UD SEND_ONLY
 * from QP1 with the GSI Q_Key, from our address, AckReq set as rxe sends
 * it; MAC addresses left for the port.  Returns the frame length or
 * -errno (-ENOSPC: cap too small). */
int dr_cm_mad_frame(struct dr_cm *cm, uint32_t dst_ip4, const uint8_t *mad, void *buf,
		    size_t cap);
/* The same over IPv6, from an IPv6 CM. */
int dr_cm_mad_frame6(struct dr_cm *cm, const uint8_t dst_ip6[16], const uint8_t *mad, void *buf,
		     size_t cap);
#define DR_CM_FRAME_MAX (DR_MAD_LEN + 128)

/* True while a DREQ of ours waits for its DREP (also after the peer's DREQ
 * crossed it and the id is in time-wait). */
bool dr_cm_disconnecting(const struct dr_cm *cm);

/* A MAD that came to QP1 from src_ip4 (the UD payload). */
void dr_cm_recv(struct dr_cm *cm, uint32_t src_ip4, const void *mad, size_t len);
/* ... from src_ip6, on an IPv6 CM (a MAD of the other family is dropped
 * as malformed, rx_bad). */
void dr_cm_recv6(struct dr_cm *cm, const uint8_t src_ip6[16], const void *mad, size_t len);
/* Run expired timers against ops->now_ns. */
void dr_cm_tick(struct dr_cm *cm);
uint64_t dr_cm_deadline_ns(const struct dr_cm *cm);

/* The counters as one line ("rx_mads 12, ..., dropped: no_id 3 ..."),
 * for the log at close; false if nothing was ever dropped or refused. */
bool dr_cm_stats_str(const struct dr_cm *cm, char *buf, size_t len);

/* IB MTU enum <-> bytes (256..4096); 0 for anything else. */
uint32_t dr_ib_mtu_bytes(uint8_t ib_mtu);
uint8_t dr_ib_mtu_enum(uint32_t bytes);

#endif /* DR_CM_H */
