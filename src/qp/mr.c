/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mr.c - the memory-region key table of a protection domain.
 *
 * A key is 32 bits from the kernel's CSPRNG (ids.c), never 0 and unique
 * among the live keys; a dr_idmap finds its slot in O(1).  An off-path
 * peer that wants to write into memory must guess a live key: with n
 * regions registered one guess in 2^32 / n succeeds, and knowing other
 * keys (its own connection's, a deregistered one) does not help -- the
 * "not guessable" rule of docs/design.md.  (The key used to be a 15-bit tag
 * beside a 17-bit slot index: 2^15 guesses for a known slot.)  The slots
 * themselves are storage only; freed ones go to the tail of a FIFO.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dr_qp.h"

/* Keys are 32 random bits (never 0, unique among live keys), found through
 * a dr_idmap: nothing in one key says anything about another, and a
 * deregistered key is dead (a new draw repeats it with probability
 * 2^-32).  Slot 0 of the array is unused; key 0 (DR_LKEY_NONE) never
 * names a region.  The provider always chooses the key (FI_MR_PROV_KEY). */
struct dr_mr_slot {
	struct dr_mr mr;
	uint32_t next_free;
	bool used;
};

int dr_mr_table_init(struct dr_mr_table *t, uint32_t max_mr)
{
	uint32_t size, i;
	int ret;

	memset(t, 0, sizeof(*t));
	if (max_mr == 0 || max_mr > (1u << 20))
		return -EINVAL;
	size = max_mr + 1; /* slot 0 is never used */
	t->slot = calloc(size, sizeof(*t->slot));
	if (!t->slot)
		return -ENOMEM;
	ret = dr_idmap_init(&t->keys, max_mr);
	if (ret) {
		free(t->slot);
		t->slot = NULL;
		return ret;
	}
	t->size = size;
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
	dr_idmap_fini(&t->keys);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

int dr_mr_reg(struct dr_mr_table *t, void *addr, uint64_t length, uint64_t iova, unsigned access,
	      struct dr_mr **mrp)
{
	struct dr_mr_slot *s;
	uint32_t idx, key;
	int ret;

	if (!t->nfree)
		return -ENOSPC;
	if (length && !addr)
		return -EINVAL;
	if (iova + length < iova)
		return -EINVAL;
	idx = t->free_head;
	s = &t->slot[idx];
	/* the key first: if the random source fails, nothing has changed */
	ret = dr_idmap_alloc(&t->keys, UINT32_MAX, 1, s, &key);
	if (ret)
		return ret == -EAGAIN ? -ENOSPC : ret;
	t->free_head = s->next_free;
	if (--t->nfree == 0)
		t->free_tail = 0;

	s->mr.addr = addr;
	s->mr.length = length;
	s->mr.iova = iova;
	s->mr.access = access;
	s->mr.key = key;
	s->used = true;
	*mrp = &s->mr;
	return 0;
}

static struct dr_mr_slot *dr_mr_slot_of(const struct dr_mr_table *t, uint32_t key)
{
	return t->slot ? dr_idmap_find(&t->keys, key) : NULL;
}

int dr_mr_dereg(struct dr_mr_table *t, uint32_t key)
{
	struct dr_mr_slot *s = dr_mr_slot_of(t, key);
	uint32_t idx;

	if (!s)
		return -ENOENT;
	dr_idmap_remove(&t->keys, key);
	idx = (uint32_t)(s - t->slot);
	s->used = false;
	s->mr.key = 0;
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
