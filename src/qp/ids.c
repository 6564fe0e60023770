/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ids.c - identifiers an off-path attacker must not guess: the random
 * source, and the table that finds live identifiers (QPNs, MR keys).
 *
 * RoCEv2 has no authentication: a forged frame is accepted when it names
 * the right destination QPN, PSN and R_Key and comes from the right IP.
 * The IPs are known; everything else must be drawn so that nothing seen
 * from outside (an earlier connection, a REJ, a neighbour's key) predicts
 * it.  So every draw comes from the kernel's CSPRNG, getrandom(2); when
 * it fails the caller fails with a clear error -- there is no fallback to
 * the clock or to a seeded generator.  One getrandom call fills a small
 * buffer (draws come in bursts of a few bytes: a connection, a
 * registration), which a fork discards, so parent and child never hand
 * out the same bytes.
 *
 * The table: open addressing with linear probing, at most half full, the
 * slot chosen by Fibonacci hashing of the identifier.  Stored identifiers
 * are random, so clusters stay short whatever a peer asks for; a lookup
 * on the receive path is a multiply and a few compares.  Removal shifts
 * the cluster back (no tombstones), so the table never degrades.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dr_qp.h"

/* ---- random source ------------------------------------------------------- */

#define DR_RAND_BUF 256

static struct {
	pthread_mutex_t lock;
	uint8_t buf[DR_RAND_BUF];
	size_t left; /* unused bytes at the end of buf */
	int fail;    /* tests: the next draws fail with -fail */
} dr_rand = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t dr_rand_once = PTHREAD_ONCE_INIT;

static void dr_rand_atfork_child(void)
{
	/* the child must not repeat what the parent hands out next */
	pthread_mutex_init(&dr_rand.lock, NULL);
	memset(dr_rand.buf, 0, sizeof(dr_rand.buf));
	dr_rand.left = 0;
}

static void dr_rand_atfork_prepare(void)
{
	pthread_mutex_lock(&dr_rand.lock);
}

static void dr_rand_atfork_parent(void)
{
	pthread_mutex_unlock(&dr_rand.lock);
}

static void dr_rand_setup(void)
{
	pthread_atfork(dr_rand_atfork_prepare, dr_rand_atfork_parent, dr_rand_atfork_child);
}

/* Fill the buffer; lock held.  Flags 0: block only until the kernel's
 * pool is initialised at boot, never return weaker bytes. */
static int dr_rand_refill(void)
{
	size_t got = 0;

	if (dr_rand.fail)
		return -dr_rand.fail;
	while (got < sizeof(dr_rand.buf)) {
		ssize_t n = getrandom(dr_rand.buf + got, sizeof(dr_rand.buf) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno ? -errno : -EIO;
		}
		got += (size_t)n;
	}
	dr_rand.left = sizeof(dr_rand.buf);
	return 0;
}

int dr_rand_bytes(void *out, size_t len)
{
	uint8_t *o = out;
	int ret = 0;

	pthread_once(&dr_rand_once, dr_rand_setup);
	pthread_mutex_lock(&dr_rand.lock);
	if (dr_rand.fail) {
		ret = -dr_rand.fail;
		goto out_unlock;
	}
	while (len) {
		size_t n;
		uint8_t *src;

		if (!dr_rand.left) {
			ret = dr_rand_refill();
			if (ret)
				goto out_unlock;
		}
		n = len < dr_rand.left ? len : dr_rand.left;
		src = dr_rand.buf + sizeof(dr_rand.buf) - dr_rand.left;
		memcpy(o, src, n);
		memset(src, 0, n); /* handed out once, not kept */
		dr_rand.left -= n;
		o += n;
		len -= n;
	}
out_unlock:
	pthread_mutex_unlock(&dr_rand.lock);
	return ret;
}

int dr_rand_u32(uint32_t *out)
{
	return dr_rand_bytes(out, sizeof(*out));
}

void dr_rand_fail(int err)
{
	pthread_mutex_lock(&dr_rand.lock);
	dr_rand.fail = err < 0 ? -err : err;
	dr_rand.left = 0;
	pthread_mutex_unlock(&dr_rand.lock);
}

/* ---- the table of live identifiers ---------------------------------------- */

static uint32_t dr_idmap_home(const struct dr_idmap *m, uint32_t id)
{
	/* Fibonacci hashing: the top bits of id * 2^32/phi */
	return (uint32_t)((id * 0x9e3779b1u) >> m->shift) & m->mask;
}

int dr_idmap_init(struct dr_idmap *m, uint32_t max)
{
	uint32_t cap = 2;
	unsigned bits = 1;

	memset(m, 0, sizeof(*m));
	if (max == 0 || max > (1u << 24))
		return -EINVAL;
	while (cap < 2 * max) { /* at most half full */
		cap <<= 1;
		bits++;
	}
	m->ent = calloc(cap, sizeof(*m->ent));
	if (!m->ent)
		return -ENOMEM;
	m->mask = cap - 1;
	m->shift = 32 - bits;
	m->max = max;
	return 0;
}

void dr_idmap_fini(struct dr_idmap *m)
{
	free(m->ent);
	memset(m, 0, sizeof(*m));
}

void *dr_idmap_find(const struct dr_idmap *m, uint32_t id)
{
	uint32_t i;

	if (!m->ent || id == 0)
		return NULL;
	for (i = dr_idmap_home(m, id);; i = (i + 1) & m->mask) {
		const struct dr_idmap_ent *e = &m->ent[i];

		if (e->id == id)
			return e->val;
		if (e->id == 0)
			return NULL;
	}
}

int dr_idmap_insert(struct dr_idmap *m, uint32_t id, void *val)
{
	uint32_t i;

	if (id == 0 || !val || !m->ent)
		return -EINVAL;
	for (i = dr_idmap_home(m, id);; i = (i + 1) & m->mask) {
		struct dr_idmap_ent *e = &m->ent[i];

		if (e->id == id)
			return -EEXIST;
		if (e->id == 0) {
			if (m->count >= m->max)
				return -ENOSPC;
			e->id = id;
			e->val = val;
			m->count++;
			return 0;
		}
	}
}

void *dr_idmap_remove(struct dr_idmap *m, uint32_t id)
{
	uint32_t i, j;
	void *val;

	if (!m->ent || id == 0)
		return NULL;
	for (i = dr_idmap_home(m, id);; i = (i + 1) & m->mask) {
		if (m->ent[i].id == id)
			break;
		if (m->ent[i].id == 0)
			return NULL;
	}
	val = m->ent[i].val;
	/* backward shift (Knuth 6.4, algorithm R): move up every later
	 * member of the cluster whose home is not between the hole and it */
	for (j = (i + 1) & m->mask; m->ent[j].id; j = (j + 1) & m->mask) {
		uint32_t h = dr_idmap_home(m, m->ent[j].id);

		if (((j - h) & m->mask) >= ((j - i) & m->mask)) {
			m->ent[i] = m->ent[j];
			i = j;
		}
	}
	m->ent[i].id = 0;
	m->ent[i].val = NULL;
	m->count--;
	return val;
}

int dr_idmap_alloc(struct dr_idmap *m, uint32_t mask, uint32_t lo, void *val, uint32_t *id)
{
	unsigned tries;

	if (m->count >= m->max)
		return -ENOSPC;
	/* the table is at most a small fraction of the space it draws from
	 * (QPNs: 2^24, keys: 2^32), so a repeat is rare and a few tries
	 * always suffice; the bound only stops a misuse from spinning */
	for (tries = 0; tries < 64; tries++) {
		uint32_t r;
		int ret = dr_rand_u32(&r);

		if (ret)
			return ret;
		r &= mask;
		if (r < lo)
			continue;
		ret = dr_idmap_insert(m, r, val);
		if (ret == -EEXIST)
			continue;
		if (ret)
			return ret;
		*id = r;
		return 0;
	}
	return -EAGAIN;
}
