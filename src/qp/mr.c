/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mr.c - the memory-region key table of a protection domain.
 *
 * A key is (random tag << idx_bits) | slot index: lookup is one array
 * access plus a compare, and a key cannot be guessed from its neighbours
 * (the "not guessable" rule of DESIGN.md; rxe uses a similar 8-bit key
 * beside a pool index).  Every registration draws a fresh tag that differs
 * from the slot's previous one, and freed slots go to the tail of a FIFO,
 * so a deregistered key is not handed out by the next registration.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "dr_qp.h"

static uint64_t dr_mr_rand(struct dr_mr_table *t)
{
	/* splitmix64: good enough to scatter tags; the seed is from the OS */
	uint64_t z = (t->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int dr_mr_table_init(struct dr_mr_table *t, uint32_t max_mr)
{
	uint32_t size = 2, i;

	memset(t, 0, sizeof(*t));
	if (max_mr == 0 || max_mr > (1u << 20))
		return -EINVAL;
	while (size < max_mr + 1) /* slot 0 is never used */
		size <<= 1;
	t->slot = calloc(size, sizeof(*t->slot));
	if (!t->slot)
		return -ENOMEM;
	t->size = size;
	while ((1u << t->idx_bits) < size)
		t->idx_bits++;
	if (getrandom(&t->rng, sizeof(t->rng), GRND_NONBLOCK) != sizeof(t->rng))
		t->rng = (uint64_t)time(NULL) ^ (uintptr_t)t;
	/* free FIFO: 1 .. size-1 */
	t->free_head = 1;
	t->free_tail = size - 1;
	for (i = 1; i < size; i++)
		t->slot[i].next_free = i + 1 < size ? i + 1 : 0;
	t->nfree = size - 1;
	return 0;
}

void dr_mr_table_fini(struct dr_mr_table *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

int dr_mr_reg(struct dr_mr_table *t, void *addr, uint64_t length, uint64_t iova, unsigned access,
	      struct dr_mr **mrp)
{
	struct dr_mr_slot *s;
	uint32_t idx, tag, old_tag, tag_mask;

	if (!t->nfree)
		return -ENOSPC;
	if (length && !addr)
		return -EINVAL;
	if (iova + length < iova)
		return -EINVAL;
	idx = t->free_head;
	s = &t->slot[idx];
	t->free_head = s->next_free;
	if (--t->nfree == 0)
		t->free_tail = 0;

	tag_mask = (uint32_t)((1ull << (32 - t->idx_bits)) - 1);
	old_tag = s->mr.key >> t->idx_bits;
	do
		tag = (uint32_t)dr_mr_rand(t) & tag_mask;
	while (tag == old_tag);

	s->mr.addr = addr;
	s->mr.length = length;
	s->mr.iova = iova;
	s->mr.access = access;
	s->mr.key = (uint32_t)((uint64_t)tag << t->idx_bits) | idx;
	s->used = true;
	*mrp = &s->mr;
	return 0;
}

static struct dr_mr_slot *dr_mr_slot_of(const struct dr_mr_table *t, uint32_t key)
{
	struct dr_mr_slot *s;
	uint32_t idx = key & (t->size - 1);

	if (!t->slot || idx == 0)
		return NULL;
	s = &t->slot[idx];
	return s->used && s->mr.key == key ? s : NULL;
}

int dr_mr_dereg(struct dr_mr_table *t, uint32_t key)
{
	struct dr_mr_slot *s = dr_mr_slot_of(t, key);
	uint32_t idx = key & (t->size - 1);

	if (!s)
		return -ENOENT;
	s->used = false; /* keep mr.key: the next tag must differ from it */
	s->next_free = 0;
	if (t->nfree)
		t->slot[t->free_tail].next_free = idx;
	else
		t->free_head = idx;
	t->free_tail = idx;
	t->nfree++;
	return 0;
}

struct dr_mr *dr_mr_lookup(const struct dr_mr_table *t, uint32_t key)
{
	struct dr_mr_slot *s = dr_mr_slot_of(t, key);

	return s ? &s->mr : NULL;
}

enum dr_mr_verdict dr_mr_check(const struct dr_mr_table *t, uint32_t key, uint64_t iova,
			       uint64_t len, unsigned access, uint8_t **ptr)
{
	const struct dr_mr *mr;

	*ptr = NULL;
	if (len == 0)
		return DR_MR_OK;
	mr = dr_mr_lookup(t, key);
	if (!mr)
		return DR_MR_BAD_KEY;
	if (iova < mr->iova || iova + len < iova || iova + len > mr->iova + mr->length)
		return DR_MR_BAD_BOUNDS;
	if ((mr->access & access) != access)
		return DR_MR_NO_ACCESS;
	*ptr = mr->addr + (iova - mr->iova);
	return DR_MR_OK;
}

const char *dr_mr_verdict_str(enum dr_mr_verdict v)
{
	static const char *const names[] = {
	    [DR_MR_OK] = "ok",
	    [DR_MR_BAD_KEY] = "bad key",
	    [DR_MR_BAD_BOUNDS] = "out of bounds",
	    [DR_MR_NO_ACCESS] = "missing permission",
	};

	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : "?";
}
