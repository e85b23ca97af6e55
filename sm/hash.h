/* SPDX-License-Identifier: MIT */
/*
 * hash.h - an intrusive chained hash table for umc-sm's indexes (ports by
 * control endpoint and by GUID, groups by MGID, members by group and port).
 *
 * Each object embeds a struct umc_hnode; the table keeps only pointers to
 * those nodes, each with its full hash, so growing never asks the owner to
 * hash again.  The owner compares keys itself while walking a bucket:
 *
 *	for (n = umc_hash_bucket(h, hv); n; n = n->next)
 *		if (n->hash == hv && key_of(n) == key) ...
 *
 * The table doubles when it holds more objects than buckets, so a lookup
 * stays O(1).  Not thread-safe (umc-sm is single-threaded).
 */
#ifndef UMC_SM_HASH_H
#define UMC_SM_HASH_H

#include <stddef.h>
#include <stdint.h>

struct umc_hnode {
	struct umc_hnode *next;
	uint32_t hash;
};

struct umc_hash {
	struct umc_hnode **buckets;
	uint32_t mask;	/* buckets - 1 */
	uint32_t count; /* objects */
};

/**
 * umc_hash_init - an empty table with @nbuckets (a power of two) buckets.
 * Returns: 0 or -ENOMEM.
 */
int umc_hash_init(struct umc_hash *h, uint32_t nbuckets);

/** umc_hash_fini - free the buckets; the objects are the owner's. */
void umc_hash_fini(struct umc_hash *h);

/**
 * umc_hash_insert - add @n with hash @hv (duplicates are the owner's business).
 * Grows the table when it is full; a failed growth keeps the old size.
 */
void umc_hash_insert(struct umc_hash *h, struct umc_hnode *n, uint32_t hv);

/** umc_hash_remove - unlink @n, which must be in @h. */
void umc_hash_remove(struct umc_hash *h, struct umc_hnode *n);

/** umc_hash_bucket - first node of the bucket of @hv. */
static inline struct umc_hnode *umc_hash_bucket(const struct umc_hash *h, uint32_t hv)
{
	return h->buckets[hv & h->mask];
}

/** umc_hash_mix64 - a 32-bit hash of a 64-bit key (a multiply-xorshift finaliser). */
static inline uint32_t umc_hash_mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (uint32_t)k;
}

/** umc_hash_bytes16 - a 32-bit hash of 16 bytes (an MGID). */
uint32_t umc_hash_bytes16(const uint8_t *p);

#endif /* UMC_SM_HASH_H */
