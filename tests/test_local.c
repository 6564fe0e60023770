// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_local - the host-local wire (src/fi/local.c) and its slots in the
 * registry (src/fi/registry.c), without DPDK or libfabric objects.
 *
 * Each dr_reg_open() here opens the registry file anew: its own open file
 * description, so its byte locks conflict with the others' exactly as
 * another process's would.  "A", "B", "C" are such participants on a fake
 * interface named after the test's pid (the files live under /run/droce or
 * /dev/shm/droce like droce's own and go when the last one closes).  A
 * killed process is a forked child that joins and raises SIGKILL.
 *
 * Frames: Ethernet + IPv4 + UDP 4791 + BTH with a DestQP and a payload
 * derived from a sequence number, so that each received frame is checked
 * byte for byte against the one sent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <check.h>

#include "dr_fi.h"
#include "ck_run.h"

struct fi_provider dr_prov = {
    .version = DR_PROV_VERSION,
    .fi_version = DR_FI_VERSION,
    .name = DR_PROV_NAME,
};

/* registry.c and local.c take their clock from the port */
uint64_t dr_port_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define HDR	  (14 + 20 + 8 + 12)
#define FRAME_MAX 1600
#define QP1	  1u
#define REC(len)  ((8 + (len) + 7) & ~7u)

static char ifname[32];

struct party {
	struct dr_reg *reg;
	struct dr_local *l;
};

static void join(struct party *p)
{
	ck_assert_int_eq(dr_reg_open(ifname, &p->reg), 0);
	ck_assert_ptr_nonnull(p->reg);
	ck_assert_int_eq(dr_local_open(p->reg, &p->l), 0);
	ck_assert_ptr_nonnull(p->l);
}

static void leave(struct party *p)
{
	dr_local_close(p->l);
	dr_reg_close(p->reg);
}

/* frame number seq, len bytes, to dqpn */
static size_t frame(uint8_t *f, size_t len, uint32_t dqpn, uint32_t seq)
{
	memset(f, 0, HDR);
	memset(f, 0x02, 12);   /* both MACs */
	f[12] = 0x08;	       /* IPv4 */
	f[14] = 0x45;	       /* version 4, 5 words */
	f[14 + 9] = 17;	       /* UDP */
	f[34 + 2] = 4791 >> 8; /* destination port */
	f[34 + 3] = 4791 & 0xff;
	f[42] = 0x64; /* UD SEND ONLY: any opcode will do */
	f[42 + 5] = (uint8_t)(dqpn >> 16);
	f[42 + 6] = (uint8_t)(dqpn >> 8);
	f[42 + 7] = (uint8_t)dqpn;
	for (size_t i = HDR; i < len; i++)
		f[i] = (uint8_t)(seq * 7 + i);
	memcpy(f + HDR, &seq, sizeof(seq));
	return len;
}

static size_t len_of(uint32_t seq)
{
	return 60 + (seq * 37) % (FRAME_MAX - 60);
}

/* what a poll hands over: every frame checked against frame() */
struct rx {
	unsigned n;
	uint32_t next_seq; /* the sequence number expected next */
	uint32_t dqpn;
	bool varying; /* lengths from len_of(), else fixed_len */
	size_t fixed_len;
};

static void rx_fn(void *ctx, const void *data, size_t len)
{
	struct rx *r = ctx;
	uint8_t want[FRAME_MAX];
	uint32_t seq;

	ck_assert_uint_ge(len, HDR + sizeof(seq));
	memcpy(&seq, (const uint8_t *)data + HDR, sizeof(seq));
	ck_assert_uint_eq(seq, r->next_seq);
	ck_assert_uint_eq(len, r->varying ? len_of(seq) : r->fixed_len);
	frame(want, len, r->dqpn, seq);
	ck_assert_mem_eq(data, want, len);
	r->next_seq++;
	r->n++;
}

static unsigned poll_all(struct party *p, struct rx *r)
{
	unsigned n = 0, got;

	while ((got = dr_local_poll(p->l, 64, rx_fn, r)) > 0)
		n += got;
	return n;
}

static void send_n(struct party *p, unsigned n, uint32_t dqpn, uint32_t seq0, size_t len)
{
	uint8_t f[FRAME_MAX];

	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(dr_local_send(p->l, f, frame(f, len, dqpn, seq0 + i)), 0);
}

static struct dr_local_stats stats(struct party *p)
{
	struct dr_local_stats s;

	dr_local_get_stats(p->l, &s);
	return s;
}

static void setup(void)
{
	snprintf(ifname, sizeof(ifname), "tlocal%d", (int)getpid());
}

/* A MAD goes to everyone, the sender included; a data frame only to the
 * process whose filter counts its DestQP; to nobody's, to no one. */
START_TEST(test_mad_to_all_data_to_owner)
{
	struct party a, b;
	struct rx ra = {.dqpn = QP1, .fixed_len = 256}, rb = ra;
	uint32_t q = 0x123456;

	join(&a);
	join(&b);
	ck_assert_uint_ne(dr_local_slot(a.l), dr_local_slot(b.l));
	send_n(&a, 3, QP1, 0, 256);
	ck_assert_uint_eq(poll_all(&a, &ra), 3);
	ck_assert_uint_eq(poll_all(&b, &rb), 3);

	ra = (struct rx){.dqpn = q, .fixed_len = 100};
	rb = ra;
	send_n(&a, 1, q, 0, 100);
	ck_assert_uint_eq(stats(&a).tx_nobody, 1);
	ck_assert_uint_eq(poll_all(&b, &rb), 0);

	dr_local_qpn_add(b.l, q);
	send_n(&a, 2, q, 0, 100);
	ck_assert_uint_eq(poll_all(&a, &ra), 0);
	ck_assert_uint_eq(poll_all(&b, &rb), 2);
	dr_local_qpn_add(b.l, q ^ 0x10000); /* another QP, same low 16 bits */
	dr_local_qpn_del(b.l, q);
	send_n(&b, 1, q, 2, 100); /* counted once more: still B's */
	ck_assert_uint_eq(poll_all(&b, &rb), 1);
	dr_local_qpn_del(b.l, q);
	send_n(&a, 1, q, 3, 100);
	ck_assert_uint_eq(stats(&a).tx_nobody, 2);
	ck_assert_uint_eq(poll_all(&b, &rb), 0);
	ck_assert_uint_eq(stats(&a).tx_copies, 3 * 2 + 2);
	leave(&b);
	leave(&a);
}
END_TEST

/* Many times round the ring, frames of every length, polled now and then:
 * every frame arrives once, whole, in order. */
START_TEST(test_wrap)
{
	struct party a, b;
	struct rx rb = {.dqpn = 0x777, .varying = true};
	uint8_t f[FRAME_MAX];
	uint64_t bytes = 0;
	uint32_t seq;

	join(&a);
	join(&b);
	dr_local_qpn_add(b.l, 0x777);
	for (seq = 0; bytes < 5ull * DR_LOCAL_RING_BYTES; seq++) {
		size_t len = len_of(seq);

		ck_assert_int_eq(dr_local_send(a.l, f, frame(f, len, 0x777, seq)), 0);
		bytes += REC(len);
		if (seq % 97 == 96)
			poll_all(&b, &rb);
	}
	poll_all(&b, &rb);
	ck_assert_uint_eq(rb.n, seq);
	ck_assert_uint_eq(stats(&a).tx_queued, 0);
	ck_assert_uint_eq(stats(&b).rx_frames, seq);
	leave(&b);
	leave(&a);
}
END_TEST

/* A receiver that does not poll: its ring takes what fits, the rest waits
 * in the sender's backlog and follows in order; beyond the backlog's bound
 * frames are lost, counted by both. */
START_TEST(test_full_ring)
{
	struct party a, b;
	struct rx rb = {.dqpn = 0x42, .fixed_len = 1000};
	const unsigned fit = DR_LOCAL_RING_BYTES / REC(1000);
	const unsigned held = DR_LOCAL_BACKLOG_BYTES / 1000;
	struct dr_local_stats s;

	join(&a);
	join(&b);
	dr_local_qpn_add(b.l, 0x42);
	send_n(&a, fit + 100, 0x42, 0, 1000);
	s = stats(&a);
	ck_assert_uint_eq(s.tx_copies, fit);
	ck_assert_uint_eq(s.tx_queued, 100);
	ck_assert(dr_local_pending(a.l));
	ck_assert_uint_eq(poll_all(&b, &rb), fit);
	/* the sender's poll moves its backlog on */
	ck_assert_uint_eq(dr_local_poll(a.l, 64, rx_fn, NULL), 0);
	ck_assert(!dr_local_pending(a.l));
	ck_assert_uint_eq(poll_all(&b, &rb), 100);
	ck_assert_uint_eq(stats(&a).tx_copies, fit + 100);

	/* a ring and a backlog full, then 10 more: lost */
	send_n(&a, fit + held + 10, 0x42, fit + 100, 1000);
	s = stats(&a);
	ck_assert_uint_eq(s.tx_queued, 100 + held);
	ck_assert_uint_eq(s.tx_full, 10);
	ck_assert_uint_eq(stats(&b).rx_lost, 10);
	ck_assert_uint_eq(poll_all(&b, &rb), fit);
	while (dr_local_pending(a.l)) {
		dr_local_poll(a.l, 64, rx_fn, NULL);
		poll_all(&b, &rb);
	}
	ck_assert_uint_eq(rb.n, 2 * fit + 100 + held);
	leave(&b);
	leave(&a);
}
END_TEST

/* A child joins, owns QPNs q and q2, and is killed; returns its slot. */
static unsigned killed_child(uint32_t q, uint32_t q2)
{
	int fds[2], status;
	unsigned slot = ~0u;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct party c;

		if (dr_reg_open(ifname, &c.reg) || dr_local_open(c.reg, &c.l))
			_exit(1);
		dr_local_qpn_add(c.l, q);
		dr_local_qpn_add(c.l, q2);
		slot = dr_local_slot(c.l);
		if (write(fds[1], &slot, sizeof(slot)) != sizeof(slot))
			_exit(1);
		raise(SIGKILL);
		_exit(1);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &slot, sizeof(slot)), (ssize_t)sizeof(slot));
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	return slot;
}

/* A killed receiver: its ring fills, then it is found dead and skipped --
 * nothing waits for it, nothing is held back for it.  A process that
 * takes its slot starts with an empty ring and a clean filter, and frames
 * for its own QPNs reach it. */
START_TEST(test_dead_slot_and_reuse)
{
	struct party a, c;
	struct rx rc = {.dqpn = 0x99, .fixed_len = 1000};
	const unsigned fit = DR_LOCAL_RING_BYTES / REC(1000);
	unsigned dead;
	struct dr_local_stats s;

	join(&a);
	dead = killed_child(0x99, 0x5555);
	ck_assert_uint_ne(dead, dr_local_slot(a.l));
	send_n(&a, fit + 50, 0x99, 0, 1000);
	s = stats(&a);
	ck_assert_uint_eq(s.tx_copies, fit);
	ck_assert_uint_eq(s.tx_dead, 50);
	ck_assert_uint_eq(s.tx_queued, 0);
	ck_assert(!dr_local_pending(a.l));

	join(&c);
	ck_assert_uint_eq(dr_local_slot(c.l), dead);
	ck_assert_uint_eq(poll_all(&c, &rc), 0); /* the dead one's frames */
	send_n(&a, 1, 0x5555, 0, 1000);		 /* its QPN: not C's */
	ck_assert_uint_eq(stats(&a).tx_nobody, 1);
	dr_local_qpn_add(c.l, 0x99);
	send_n(&a, 3, 0x99, 0, 1000);
	ck_assert_uint_eq(poll_all(&c, &rc), 3);
	ck_assert_uint_eq(stats(&a).tx_dead, 50);
	leave(&c);

	/* closed: skipped at once, without a look at the registry */
	send_n(&a, 1, 0x99, 0, 1000);
	ck_assert_uint_eq(stats(&a).tx_nobody, 2);
	leave(&a);
}
END_TEST

/* The wire file goes with the registry's last user. */
START_TEST(test_files_go)
{
	struct party a, b;
	char wire[300];

	join(&a);
	join(&b);
	snprintf(wire, sizeof(wire), "%s", dr_reg_wire_path(a.reg));
	ck_assert_int_eq(access(wire, F_OK), 0);
	leave(&a);
	ck_assert_int_eq(access(wire, F_OK), 0);
	leave(&b);
	ck_assert_int_eq(access(wire, F_OK), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("local");
	TCase *tc = tcase_create("wire");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_mad_to_all_data_to_owner);
	tcase_add_test(tc, test_wrap);
	tcase_add_test(tc, test_full_ring);
	tcase_add_test(tc, test_dead_slot_and_reuse);
	tcase_add_test(tc, test_files_go);
	suite_add_tcase(s, tc);
	return ck_run(s, false);
}
