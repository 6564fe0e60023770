// SPDX-License-Identifier: BSD-2-Clause
/*
 * The host-local wire: how droce processes on one interface reach each
 * other.  They share the interface's MAC and IPv4 address, and a frame a
 * process sends on its packet socket to that address never comes back
 * from the wire; so a frame to the own address is not handed to the
 * device but copied, here, into the inbound rings of the processes on the
 * interface, and each receiver runs it through its normal receive path
 * (dr_port_input: capture, ICRC and receive checks, the registry's rules
 * for foreign QPNs and CM MADs).  The frames are the RoCEv2 frames the
 * wire would carry.
 *
 * The wire is one file, /dev/shm/droce/<ifname>@net<netns inode>.<n>.wire
 * (registry.c: its life follows the registry file's), mapped shared by
 * every process of the interface, sparse (memory is allocated as it is
 * first written, with fallocate so that a full tmpfs is an error and not
 * a SIGBUS: see dr_local_open and ring_alloc):
 *
 *	header		magic, layout, the high-water mark of slots used
 *	slots[64]	per process: a generation (odd: in use) and its pid
 *	ctl[64][64]	per (sender, receiver): tail, head, frames lost
 *	filter[64]	per process: 65536 counters, its QPNs by low 16 bits
 *	ring[64][64]	per (sender, receiver): LW_RING bytes of records
 *
 * A process joins by claiming a slot in the registry (a byte lock, so the
 * slot is free again the moment its holder dies, kill -9 included).  One
 * ring per sender and receiver: each has one producer and one consumer,
 * so a ring needs no lock and a process killed half-way through a copy
 * leaves nothing behind (a record counts once the tail passes it).
 *
 * Who gets a frame: a CM MAD (QP1) and anything not a RoCEv2 frame go to
 * every process on the wire, the sender included, as every packet socket
 * sees every frame -- the CM's rules (the listener's process answers, the
 * responder answers for nobody) need that.  Other frames go only to the
 * processes whose filter counts their DestQP (a process counts a QPN
 * before any peer can learn it, in dr_dev_qp_create): one copy for the
 * one owner instead of one per process; a QPN sharing its low 16 bits
 * with another's costs a copy that the receiver counts as rx_foreign.
 *
 * A full ring: back-pressure, per receiver.  The sender keeps a copy of
 * the frame in its backlog for that receiver (process memory) and copies
 * it in, oldest first and before anything newer for that receiver, at its
 * next send or poll (the progress thread polls while a backlog waits:
 * dr_local_pending).  Not for the whole wire: a frame goes to many
 * receivers at once, and one process that does not poll for a while (its
 * progress thread naps) must not hold up the traffic to all the others.
 * Bounded: beyond LW_BACKLOG bytes for one receiver a frame is lost,
 * counted in the ring's control block (the receiver reports it as rx_lost
 * at close) and the sender's tx_full, and RC's go-back-N resends it.  (The
 * QPs do not know their frames wait: a receiver that does not poll for
 * long makes its peers time out and resend into the backlog, which is how
 * it can fill despite the 128-PSN window.)
 *
 * A dead receiver: a process that closes marks its slot free (even
 * generation) and is skipped at once.  One killed leaves its slot marked
 * in use; its rings fill, and when a sender finds a ring full it asks the
 * registry whether the slot is still held (at most every LW_LIVE_CHECK_NS):
 * if not, the slot is skipped from then on, until its generation changes,
 * and what waited for it is dropped.  Nothing waits for a dead peer.
 *
 * A slot reused: the new holder zeroes its filter, skips what its inbound
 * rings still hold (head := tail; a frame a sender copies for the old
 * holder at that moment may still arrive, and is then just a frame for a
 * QPN the new holder does not have), takes over its outbound rings where
 * the old holder left their tails, and only then publishes a new odd
 * generation, which senders that had skipped the dead slot notice.
 */
#define _GNU_SOURCE /* fallocate */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "dr_fi.h"

#define LW_MAGIC   0x647265776972653full /* "drewire?" */
#define LW_VERSION 1
#define LW_SLOTS   64
#define LW_RING	   DR_LOCAL_RING_BYTES /* a power of two */
#define LW_FILTER  65536
#define LW_WRAP	   0xffffffffu /* record length: the rest of the ring is empty */
#define LW_REC_HDR 8
/* Frames waiting for room in one receiver's ring, at most (bytes) */
#define LW_BACKLOG DR_LOCAL_BACKLOG_BYTES
/* A full ring's receiver is asked after at most this often (ns) */
#define LW_LIVE_CHECK_NS 10000000ull

struct lw_hdr {
	uint64_t magic;
	uint32_t version, slots, ring_bytes, filter;
	uint32_t hwm; /* slots [0, hwm) have been used */
};

struct lw_slot {
	uint32_t gen; /* odd: in use */
	uint32_t pid;
	uint8_t pad[56];
};

struct lw_ctl {
	uint64_t tail;	  /* producer: bytes ever written */
	uint64_t dropped; /* producer: frames lost to a full ring */
	uint8_t pad0[48];
	uint64_t head; /* consumer: bytes ever consumed */
	uint8_t pad1[56];
};

_Static_assert(sizeof(struct lw_slot) == 64, "slot: a cache line");
_Static_assert(sizeof(struct lw_ctl) == 128, "ctl: two cache lines");

#define LW_OFF_SLOTS  4096ull
#define LW_OFF_CTL    (LW_OFF_SLOTS + LW_SLOTS * sizeof(struct lw_slot))
#define LW_OFF_FILTER (LW_OFF_CTL + (uint64_t)LW_SLOTS * LW_SLOTS * sizeof(struct lw_ctl))
#define LW_OFF_RING   (LW_OFF_FILTER + (uint64_t)LW_SLOTS * LW_FILTER)
#define LW_SIZE	      (LW_OFF_RING + (uint64_t)LW_SLOTS * LW_SLOTS * LW_RING)

/* A frame waiting for room in a receiver's ring (process memory) */
struct lw_pend {
	struct lw_pend *next;
	uint32_t len;
	uint8_t data[];
};

struct lw_backlog {
	struct lw_pend *head, **tail;
	size_t bytes;
	uint64_t checked_ns; /* when the receiver was last found alive */
};

struct dr_local {
	struct dr_reg *reg;
	uint8_t *map;
	unsigned slot;
	uint32_t gen;
	unsigned rx_next;	     /* the sender to read first: turns rotate */
	bool dead[LW_SLOTS];	     /* a receiver found dead ... */
	uint32_t dead_gen[LW_SLOTS]; /* ... at this generation */
	struct lw_backlog backlog[LW_SLOTS];
	unsigned pending; /* backlogs not empty */
	int fd;		  /* the wire file, for fallocate */
	/* our ring to each receiver: bytes from its start known allocated;
	 * UINT32_MAX: the file system had none to give (ring_alloc) */
	uint32_t ring_mem[LW_SLOTS];
	struct dr_local_stats st;
};

static struct lw_hdr *lw_hdr(struct dr_local *l)
{
	return (struct lw_hdr *)l->map;
}

static struct lw_slot *lw_slot(struct dr_local *l, unsigned s)
{
	return (struct lw_slot *)(l->map + LW_OFF_SLOTS) + s;
}

static struct lw_ctl *lw_ctl(struct dr_local *l, unsigned from, unsigned to)
{
	return (struct lw_ctl *)(l->map + LW_OFF_CTL) + from * LW_SLOTS + to;
}

static uint8_t *lw_filter(struct dr_local *l, unsigned s)
{
	return l->map + LW_OFF_FILTER + (uint64_t)s * LW_FILTER;
}

static uint8_t *lw_ring(struct dr_local *l, unsigned from, unsigned to)
{
	return l->map + LW_OFF_RING + ((uint64_t)from * LW_SLOTS + to) * LW_RING;
}

static uint32_t rec_size(size_t len)
{
	return (uint32_t)((LW_REC_HDR + len + 7) & ~(size_t)7);
}

/* The file's layout, written by whoever finds it new (all zero); a file of
 * another layout (another droce version) is not used. */
static int lw_check(struct dr_local *l)
{
	struct lw_hdr *h = lw_hdr(l);
	uint64_t zero = 0;

	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == 0) {
		h->version = LW_VERSION;
		h->slots = LW_SLOTS;
		h->ring_bytes = LW_RING;
		h->filter = LW_FILTER;
		__atomic_compare_exchange_n(&h->magic, &zero, LW_MAGIC, false, __ATOMIC_RELEASE,
					    __ATOMIC_ACQUIRE);
	}
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != LW_MAGIC || h->version != LW_VERSION ||
	    h->slots != LW_SLOTS || h->ring_bytes != LW_RING || h->filter != LW_FILTER)
		return -EPROTO;
	return 0;
}

/* Take over slot l->slot (the registry gave it to us): see the header. */
static void lw_join(struct dr_local *l)
{
	struct lw_slot *sl = lw_slot(l, l->slot);
	uint32_t gen = __atomic_load_n(&sl->gen, __ATOMIC_RELAXED), hwm;
	unsigned s;

	memset(lw_filter(l, l->slot), 0, LW_FILTER);
	for (s = 0; s < LW_SLOTS; s++) {
		struct lw_ctl *in = lw_ctl(l, s, l->slot);

		__atomic_store_n(&in->head, __atomic_load_n(&in->tail, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&in->dropped, 0, __ATOMIC_RELAXED);
	}
	/* a new odd generation: past the old holder's whether it closed
	 * (even) or died (odd) */
	l->gen = (gen | 1) + 2;
	sl->pid = (uint32_t)getpid();
	__atomic_store_n(&sl->gen, l->gen, __ATOMIC_RELEASE);
	hwm = __atomic_load_n(&lw_hdr(l)->hwm, __ATOMIC_RELAXED);
	while (hwm < l->slot + 1 &&
	       !__atomic_compare_exchange_n(&lw_hdr(l)->hwm, &hwm, l->slot + 1, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

int dr_local_open(struct dr_reg *r, struct dr_local **out)
{
	struct dr_local *l;
	struct stat st;
	int fd, ret;
	void *map;

	*out = NULL;
	if (!r)
		return -ENOENT;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->reg = r;
	fd = dr_reg_wire_open(r);
	if (fd < 0) {
		ret = fd;
		goto out_free;
	}
	l->fd = fd;
	/* a sparse file; what the mapping writes is allocated first, so
	 * that a full tmpfs (a container's small /dev/shm) is an error
	 * here and not a SIGBUS later: the header, slots and ring
	 * controls now, our filter once we have a slot, each of our
	 * rings before its first frame (ring_alloc) */
	if (fstat(fd, &st) || ((uint64_t)st.st_size < LW_SIZE && ftruncate(fd, (off_t)LW_SIZE)) ||
	    fallocate(fd, 0, 0, (off_t)LW_OFF_FILTER)) {
		ret = -errno;
		goto out_close;
	}
	map = mmap(NULL, LW_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out_close;
	}
	l->map = map;
	ret = lw_check(l);
	if (ret)
		goto out_unmap;
	ret = dr_reg_slot_claim(r, LW_SLOTS, &l->slot);
	if (ret)
		goto out_unmap;
	if (fallocate(fd, 0, (off_t)(lw_filter(l, l->slot) - l->map), LW_FILTER)) {
		ret = -errno;
		goto out_unmap; /* the slot goes with the registry */
	}
	lw_join(l);
	*out = l;
	return 0;

out_unmap:
	munmap(l->map, LW_SIZE);
out_close:
	close(fd);
out_free:
	free(l);
	return ret;
}

static void backlog_drop(struct dr_local *l, unsigned s);

void dr_local_close(struct dr_local *l)
{
	if (!l)
		return;
	/* free at once for the senders; the slot's lock goes with the
	 * registry (dr_reg_close), after this */
	__atomic_store_n(&lw_slot(l, l->slot)->gen, l->gen + 1, __ATOMIC_RELEASE);
	for (unsigned s = 0; s < LW_SLOTS; s++)
		backlog_drop(l, s);
	munmap(l->map, LW_SIZE);
	close(l->fd);
	free(l);
}

unsigned dr_local_slot(const struct dr_local *l)
{
	return l->slot;
}

/* Bytes [0, end) of our ring to receiver `to` have memory (see
 * dr_local_open), allocated LW_ALLOC_STEP at a time: a ring that only
 * ever carries MADs costs one step, not LW_RING.  False when the file
 * system has none to give, once and for all for this process. */
#define LW_ALLOC_STEP (64u * 1024)

static bool ring_alloc(struct dr_local *l, unsigned to, uint32_t end)
{
	uint32_t have = l->ring_mem[to], want;
	off_t off;

	if (end <= have)
		return true;
	if (have == UINT32_MAX)
		return false;
	want = (end + LW_ALLOC_STEP - 1) / LW_ALLOC_STEP * LW_ALLOC_STEP;
	off = (off_t)(lw_ring(l, l->slot, to) - l->map);
	if (fallocate(l->fd, 0, off + have, (off_t)(want - have))) {
		DR_WARN(FI_LOG_DOMAIN,
			"%s: no memory for the ring to slot %u (%s): frames to that process "
			"are lost\n",
			dr_reg_wire_path(l->reg), to, strerror(errno));
		l->ring_mem[to] = UINT32_MAX;
		return false;
	}
	l->ring_mem[to] = want;
	return true;
}

/* Copy one frame into our ring to receiver `to`: false when it is full
 * (true, and counted, when it is lost for want of memory). */
static bool ring_put(struct dr_local *l, unsigned to, const void *frame, size_t len)
{
	struct lw_ctl *c = lw_ctl(l, l->slot, to);
	uint8_t *ring = lw_ring(l, l->slot, to);
	uint64_t tail = c->tail, head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint32_t need = rec_size(len), pos = (uint32_t)(tail & (LW_RING - 1)), pad = 0;

	if (need > LW_RING - pos)
		pad = LW_RING - pos; /* the record does not wrap: skip the end */
	if (tail + pad + need - head > LW_RING)
		return false;
	if (!ring_alloc(l, to, pad ? LW_RING : pos + need)) {
		l->st.tx_nomem++;
		return true; /* lost, not for the backlog: there will be no room */
	}
	if (pad) {
		*(uint32_t *)(ring + pos) = LW_WRAP;
		tail += pad;
		pos = 0;
	}
	*(uint32_t *)(ring + pos) = (uint32_t)len;
	memcpy(ring + pos + LW_REC_HDR, frame, len);
	__atomic_store_n(&c->tail, tail + need, __ATOMIC_RELEASE);
	l->st.tx_copies++;
	return true;
}

static void backlog_drop(struct dr_local *l, unsigned s)
{
	struct lw_backlog *b = &l->backlog[s];

	while (b->head) {
		struct lw_pend *p = b->head;

		b->head = p->next;
		free(p);
	}
	b->tail = &b->head;
	if (b->bytes)
		l->pending--;
	b->bytes = 0;
}

/* Move what waits for receiver s into its ring, oldest first: false when
 * some still waits. */
static bool backlog_flush(struct dr_local *l, unsigned s)
{
	struct lw_backlog *b = &l->backlog[s];

	while (b->head && ring_put(l, s, b->head->data, b->head->len)) {
		struct lw_pend *p = b->head;

		b->head = p->next;
		b->bytes -= p->len;
		free(p);
	}
	if (b->head)
		return false;
	b->tail = &b->head;
	if (b->bytes) /* cannot be: sizes match */
		b->bytes = 0;
	l->pending--;
	return true;
}

/* Receiver s's ring is full: is it alive?  Asked of the registry (a
 * system call) at most every LW_LIVE_CHECK_NS per receiver. */
static bool receiver_alive(struct dr_local *l, unsigned s, uint32_t gen)
{
	struct lw_backlog *b = &l->backlog[s];
	uint64_t now = dr_port_now_ns();

	if (s == l->slot || now - b->checked_ns < LW_LIVE_CHECK_NS)
		return true;
	if (dr_reg_slot_live(l->reg, s)) {
		b->checked_ns = now;
		return true;
	}
	/* killed: skipped until another process takes the slot */
	l->dead[s] = true;
	l->dead_gen[s] = gen;
	if (b->bytes)
		backlog_drop(l, s);
	return false;
}

/* Keep a copy of the frame for receiver s until its ring has room. */
static void backlog_add(struct dr_local *l, unsigned s, const void *frame, size_t len)
{
	struct lw_backlog *b = &l->backlog[s];
	struct lw_pend *p;
	struct lw_ctl *c;

	p = b->bytes + len <= LW_BACKLOG ? malloc(sizeof(*p) + len) : NULL;
	if (!p) {
		c = lw_ctl(l, l->slot, s);
		__atomic_store_n(&c->dropped, c->dropped + 1, __ATOMIC_RELAXED);
		l->st.tx_full++;
		return;
	}
	p->next = NULL;
	p->len = (uint32_t)len;
	memcpy(p->data, frame, len);
	if (!b->head) {
		b->tail = &b->head;
		l->pending++;
	}
	*b->tail = p;
	b->tail = &p->next;
	b->bytes += len;
	l->st.tx_queued++;
}

int dr_local_send(void *arg, const void *frame, size_t len)
{
	struct dr_local *l = arg;
	int64_t qpn = dr_frame_dqpn(frame, len);
	unsigned hwm = __atomic_load_n(&lw_hdr(l)->hwm, __ATOMIC_ACQUIRE), s, wanted = 0;

	if (rec_size(len) > LW_RING / 4)
		return -EMSGSIZE;
	l->st.tx_frames++;
	for (s = 0; s < hwm && s < LW_SLOTS; s++) {
		uint32_t gen = __atomic_load_n(&lw_slot(l, s)->gen, __ATOMIC_ACQUIRE);

		if (!(gen & 1)) {
			if (l->backlog[s].bytes) /* closed */
				backlog_drop(l, s);
			continue;
		}
		if (qpn >= 0 &&
		    !__atomic_load_n(&lw_filter(l, s)[qpn & (LW_FILTER - 1)], __ATOMIC_RELAXED))
			continue; /* not a QPN of this one */
		wanted++;
		if (l->dead[s] && l->dead_gen[s] == gen) {
			l->st.tx_dead++;
			continue;
		}
		/* behind what already waits for this receiver */
		if ((!l->backlog[s].bytes || backlog_flush(l, s)) && ring_put(l, s, frame, len))
			continue;
		if (!receiver_alive(l, s, gen)) {
			l->st.tx_dead++;
			continue;
		}
		backlog_add(l, s, frame, len);
	}
	if (!wanted)
		l->st.tx_nobody++;
	return 0;
}

bool dr_local_pending(const struct dr_local *l)
{
	return l && l->pending;
}

/* Every receiver's backlog, as far as their rings take it. */
static void backlogs_flush(struct dr_local *l)
{
	unsigned s;

	for (s = 0; s < LW_SLOTS && l->pending; s++) {
		struct lw_backlog *b = &l->backlog[s];
		uint32_t gen;

		if (!b->bytes || backlog_flush(l, s))
			continue;
		gen = __atomic_load_n(&lw_slot(l, s)->gen, __ATOMIC_ACQUIRE);
		if (!(gen & 1) || !receiver_alive(l, s, gen))
			backlog_drop(l, s);
	}
}

unsigned dr_local_poll(struct dr_local *l, unsigned budget,
		       void (*fn)(void *ctx, const void *frame, size_t len), void *ctx)
{
	unsigned hwm = __atomic_load_n(&lw_hdr(l)->hwm, __ATOMIC_ACQUIRE), n = 0, i;

	if (l->pending)
		backlogs_flush(l);
	if (hwm > LW_SLOTS)
		hwm = LW_SLOTS;
	for (i = 0; i < hwm && n < budget; i++) {
		unsigned s = (l->rx_next + i) % hwm;
		struct lw_ctl *c = lw_ctl(l, s, l->slot);
		const uint8_t *ring = lw_ring(l, s, l->slot);
		uint64_t head = c->head, tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);

		if (head == tail)
			continue;
		while (head != tail && n < budget) {
			uint32_t pos = (uint32_t)(head & (LW_RING - 1));
			uint32_t len = *(const uint32_t *)(ring + pos);

			if (len == LW_WRAP) {
				head += LW_RING - pos;
				continue;
			}
			if (tail - head > LW_RING || len > LW_RING - pos - LW_REC_HDR) {
				/* not a record: a broken sender's */
				l->st.rx_corrupt++;
				head = tail;
				break;
			}
			fn(ctx, ring + pos + LW_REC_HDR, len);
			head += rec_size(len);
			n++;
		}
		__atomic_store_n(&c->head, head, __ATOMIC_RELEASE);
	}
	if (hwm)
		l->rx_next = (l->rx_next + 1) % hwm;
	l->st.rx_frames += n;
	return n;
}

void dr_local_qpn_add(struct dr_local *l, uint32_t qpn)
{
	uint8_t *f;

	if (!l)
		return;
	f = &lw_filter(l, l->slot)[qpn & (LW_FILTER - 1)];
	/* saturated: stays, costing at most some copies */
	if (*f != UINT8_MAX)
		__atomic_store_n(f, (uint8_t)(*f + 1), __ATOMIC_RELEASE);
}

void dr_local_qpn_del(struct dr_local *l, uint32_t qpn)
{
	uint8_t *f;

	if (!l)
		return;
	f = &lw_filter(l, l->slot)[qpn & (LW_FILTER - 1)];
	if (*f && *f != UINT8_MAX)
		__atomic_store_n(f, (uint8_t)(*f - 1), __ATOMIC_RELAXED);
}

void dr_local_get_stats(struct dr_local *l, struct dr_local_stats *s)
{
	unsigned i;

	*s = l->st;
	s->rx_lost = 0;
	for (i = 0; i < LW_SLOTS; i++)
		s->rx_lost += __atomic_load_n(&lw_ctl(l, i, l->slot)->dropped, __ATOMIC_RELAXED);
}
