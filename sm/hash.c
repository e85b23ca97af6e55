// SPDX-License-Identifier: MIT
/*
 * hash.c - the intrusive chained hash table of hash.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

int umc_hash_init(struct umc_hash *h, uint32_t nbuckets)
{
	h->buckets = calloc(nbuckets, sizeof(*h->buckets));
	if (!h->buckets)
		return -ENOMEM;
	h->mask = nbuckets - 1;
	h->count = 0;
	return 0;
}

void umc_hash_fini(struct umc_hash *h)
{
	free(h->buckets);
	memset(h, 0, sizeof(*h));
}

static void grow(struct umc_hash *h)
{
	uint32_t n = (h->mask + 1) * 2, i;
	struct umc_hnode **b, *e, *next;

	if (!n)
		return;
	b = calloc(n, sizeof(*b));
	if (!b)
		return; /* keep the old table: longer chains, still correct */
	for (i = 0; i <= h->mask; i++) {
		for (e = h->buckets[i]; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(h->buckets);
	h->buckets = b;
	h->mask = n - 1;
}

void umc_hash_insert(struct umc_hash *h, struct umc_hnode *n, uint32_t hv)
{
	struct umc_hnode **b;

	if (h->count > h->mask)
		grow(h);
	b = &h->buckets[hv & h->mask];
	n->hash = hv;
	n->next = *b;
	*b = n;
	h->count++;
}

void umc_hash_remove(struct umc_hash *h, struct umc_hnode *n)
{
	struct umc_hnode **pp = &h->buckets[n->hash & h->mask];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = n->next;
		h->count--;
	}
	n->next = NULL;
}

uint32_t umc_hash_bytes16(const uint8_t *p)
{
	uint64_t a = 0, b = 0;
	int i;

	for (i = 0; i < 8; i++) {
		a = a << 8 | p[i];
		b = b << 8 | p[8 + i];
	}
	return umc_hash_mix64(a ^ umc_hash_mix64(b) ^ (b << 32 | b >> 32));
}
