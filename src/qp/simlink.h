/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * simlink.h - a simulated link for the QP engine's tests: two QPs joined
 * in memory, a virtual clock, and a fault schedule (drop, duplicate,
 * delay/reorder) given per frame by a callback or drawn at seeded rates.
 * Nothing sleeps: time jumps to the next frame arrival or QP deadline.
 * Every frame a QP emits is checked with dr_pkt_parse (ICRC included).
 * Optionally each end receives through a ring of bounded depth that it
 * drains at a fixed rate, and drops what arrives when the ring is full.
 */
#ifndef DR_SIMLINK_H
#define DR_SIMLINK_H

#include <stdbool.h>
#include <stdint.h>

#include "dr_qp.h"

enum dr_sim_action {
	DR_SIM_PASS,
	DR_SIM_DROP,
	DR_SIM_DUP,   /* deliver twice */
	DR_SIM_DELAY, /* deliver reorder_ns late: later frames overtake it */
	/* deliver a copy with every payload byte inverted (its ICRC then
	 * wrong) just before the frame itself */
	DR_SIM_CORRUPT,
};

/* dir 0: end 0 -> end 1; frame_no counts frames per direction from 0. */
typedef enum dr_sim_action (*dr_sim_fault_fn)(void *arg, unsigned dir, uint64_t frame_no,
					      const struct dr_pkt *pkt);

struct dr_sim_cfg {
	uint64_t rate_bps;	   /* serialisation rate per direction; 0 = none */
	uint64_t latency_ns;	   /* propagation delay */
	double drop, dup, reorder; /* per-frame probabilities (rate mode) */
	uint64_t reorder_ns;
	uint64_t seed;
	dr_sim_fault_fn fault; /* explicit schedule; replaces the rates */
	void *fault_arg;
	/* The receiver's ring (rx_ring > 0), for both ends: a frame that has
	 * crossed the link waits in a ring of rx_ring descriptors until its
	 * end takes it, one frame every rx_take_ns at most (a poll loop that
	 * drains its NIC, af_packet or AF_XDP ring slower than the link
	 * fills it); a frame that finds rx_ring frames waiting is dropped
	 * (tail drop, dr_sim_end.ring_drops).  0: taken as it arrives. */
	unsigned rx_ring;
	uint64_t rx_take_ns;
	/* optional: every frame as it is handed to the receiving QP, after
	 * the fault schedule and the ring; dir as for fault, arg fault_arg */
	void (*deliver)(void *arg, unsigned dir, const struct dr_pkt *pkt);
	/* Each end polls in bursts (DR_QP_DEFER_ACK): the frames that reach
	 * it at the same instant are one receive burst, after which it calls
	 * dr_qp_flush() if dr_qp_flush_due() (src/fi's dev_poll); so it does
	 * after its timers ran (a lazy ACK come due: dr_qp_tick). */
	bool flush_bursts;
	/* take READ responses and WRITE MIDDLE/LAST packets as a port with
	 * a place function does (dr_port_set_place): the payload copied
	 * where dr_qp_place says while its ICRC is checked
	 * (dr_sim_end.placed counts them) */
	bool place;
};

struct dr_sim;

struct dr_sim_end {
	struct dr_sim *sim;
	unsigned idx;
	struct dr_qp *qp;
	struct dr_wc *wc; /* completion log */
	size_t nwc, wc_cap;
	uint64_t link_free_ns;
	uint64_t tx_frames, tx_bytes, dropped, duplicated, delayed, corrupted;
	uint64_t placed; /* frames taken with cfg.place */
	/* frames whose payload cfg.place copied into place, then found the
	 * ICRC wrong (dropped, as every frame with a wrong ICRC is) */
	uint64_t placed_bad;
	/* dr_qp_ops.sent: the calls, and the unacknowledged PSNs the last said */
	uint64_t sent_calls;
	uint32_t sent_unacked;
	uint64_t frame_no;
	/* this end's receive ring (dr_sim_cfg.rx_ring): frames waiting in it,
	 * when it takes the next, the most ever waiting, and tail drops */
	unsigned rx_waiting, rx_max_waiting;
	uint64_t rx_next_ns;
	uint64_t ring_drops;
	/* the end is off its CPU until then (a host stall): frames reaching
	 * it wait and arrive together, one burst, and its timers wait */
	uint64_t stall_until_ns;
};

struct dr_sim_ev;

struct dr_sim {
	struct dr_sim_cfg cfg;
	uint64_t now_ns;
	uint64_t rng;
	uint64_t seq;
	struct dr_sim_end end[2];
	struct dr_sim_ev **heap;
	size_t nheap, heap_cap;
	uint64_t bad_frames; /* emitted frames dr_pkt_parse refused */
	enum dr_pkt_verdict last_bad;
	uint64_t events;
};

extern const struct dr_qp_ops dr_sim_qp_ops; /* ctx: &sim->end[i] */

void dr_sim_init(struct dr_sim *s, const struct dr_sim_cfg *cfg);
void dr_sim_fini(struct dr_sim *s);
void dr_sim_attach(struct dr_sim *s, unsigned idx, struct dr_qp *qp);
/* Run until nothing is in flight and no timer is armed (returns true), or
 * until virtual time limit_ns (returns false).  stop, if given, is polled
 * after every event and ends the run (returning true) when it says so. */
bool dr_sim_run(struct dr_sim *s, uint64_t limit_ns, bool (*stop)(void *arg), void *arg);

#endif /* DR_SIMLINK_H */
