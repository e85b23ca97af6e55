// SPDX-License-Identifier: MIT
/*
 * ring.c - one sender's ring of datagrams in shared memory: one writer,
 * any number of readers, none of which the writer waits for.
 *
 * After Agrona's broadcast buffer, which Aeron's IPC uses beside its log
 * buffers: records of variable length, each starting on a cache line,
 * never split at the end of the area (a padding record fills the rest and
 * the next starts at 0).  The writer first moves @tail_intent past the
 * record it is about to write, then writes it, then moves @tail (release).
 * A reader that copied the record at position p checks afterwards that
 * @tail_intent has not passed p + size: otherwise the writer may have
 * written over it meanwhile, and the copy is thrown away.  A reader that
 * finds itself more than a ring behind (lapped) starts again at @latest,
 * the last record published, and counts what it missed by the records'
 * sequence numbers.
 *
 * Everything shared is read as untrusted (shm.h): positions are masked by
 * the reader's own size, a record's length must fit what remains of the
 * area, and no call reads more than a few records.
 */
#include <errno.h>
#include <string.h>

#include "link/shm/shm.h"
#include "umc_int.h"

static inline uint64_t rec_align(uint64_t n)
{
	return (n + UMC_SHM_ALIGN - 1) & ~(uint64_t)(UMC_SHM_ALIGN - 1);
}

void umc_shm_ring_reset(const struct umc_shm_ring *r)
{
	atomic_store_explicit(&r->ctl->tail_intent, 0, memory_order_relaxed);
	atomic_store_explicit(&r->ctl->latest, 0, memory_order_relaxed);
	atomic_store_explicit(&r->ctl->next_seq, 0, memory_order_relaxed);
	atomic_store_explicit(&r->ctl->tail, 0, memory_order_release);
}

uint64_t umc_shm_ring_end(const struct umc_shm_ring *r, size_t dlen)
{
	uint64_t len = rec_align(sizeof(struct umc_shm_rec) + dlen);
	uint64_t t = atomic_load_explicit(&r->ctl->tail, memory_order_relaxed);
	uint64_t off = t & (r->size - 1);

	return t + (off + len > r->size ? r->size - off : 0) + len;
}

UMC_HOT
int umc_shm_ring_put(const struct umc_shm_ring *r, struct umc_shm_rec *h, const struct iovec *iov,
		     int niov, size_t dlen)
{
	struct umc_shm_ring_ctl *ctl = r->ctl;
	uint64_t len = rec_align(sizeof(*h) + dlen), mask = r->size - 1;
	uint64_t t = atomic_load_explicit(&ctl->tail, memory_order_relaxed);
	uint64_t off = t & mask, pad = 0;
	uint8_t *p;

	if (umc_unlikely(len > r->size / 2))
		return -EMSGSIZE;
	if (off + len > r->size)
		pad = r->size - off;
	atomic_store_explicit(&ctl->tail_intent, t + pad + len, memory_order_relaxed);
	/* The intent is seen before any byte it announces (readers: acquire, then intent). */
	atomic_thread_fence(memory_order_release);
	if (pad) {
		struct umc_shm_rec ph = {.len = (uint32_t)pad, .type = UMC_SHM_REC_PAD};

		memcpy(r->buf + off, &ph, sizeof(ph));
		t += pad;
		off = 0;
	}
	h->len = (uint32_t)len;
	h->type = UMC_SHM_REC_DATA;
	h->seq = atomic_load_explicit(&ctl->next_seq, memory_order_relaxed);
	h->dlen = (uint32_t)dlen;
	p = r->buf + off;
	memcpy(p, h, sizeof(*h));
	p += sizeof(*h);
	for (int i = 0; i < niov && dlen; i++) {
		size_t c = iov[i].iov_len < dlen ? iov[i].iov_len : dlen;

		memcpy(p, iov[i].iov_base, c);
		p += c;
		dlen -= c;
	}
	atomic_store_explicit(&ctl->next_seq, h->seq + 1, memory_order_relaxed);
	atomic_store_explicit(&ctl->latest, t, memory_order_relaxed);
	atomic_store_explicit(&ctl->tail, t + len, memory_order_release);
	return 0;
}

/*
 * Was the record at @pos left alone while it was read?  (After the reads:
 * acquire.)  The writer has not begun to write at or past @pos + size,
 * where the record's bytes come again.
 */
static inline bool ring_intact(const struct umc_shm_ring *r, uint64_t pos)
{
	atomic_thread_fence(memory_order_acquire);
	return pos + r->size >= atomic_load_explicit(&r->ctl->tail_intent, memory_order_relaxed);
}

bool umc_shm_ring_pending(const struct umc_shm_ring *r, const struct umc_shm_cursor *c)
{
	return atomic_load_explicit(&r->ctl->tail, memory_order_acquire) != c->pos;
}

/* Copy @len bytes from @src into @iov (@niov entries). */
static void scatter(const struct iovec *iov, int niov, const uint8_t *src, size_t len)
{
	for (int i = 0; i < niov && len; i++) {
		size_t c = iov[i].iov_len < len ? iov[i].iov_len : len;

		memcpy(iov[i].iov_base, src, c);
		src += c;
		len -= c;
	}
}

/* The most datagrams a ring can have held between two reads: what "lost" may claim. */
static inline uint64_t ring_max_records(const struct umc_shm_ring *r)
{
	return r->size / UMC_SHM_ALIGN;
}

/* Lapped, or a tail that makes no sense: start again at the last record published. */
static void ring_resync(const struct umc_shm_ring *r, struct umc_shm_cursor *c, uint64_t tail)
{
	uint64_t latest = atomic_load_explicit(&r->ctl->latest, memory_order_acquire);

	/* @latest must be a record's start behind the tail, and cache-line aligned. */
	if (latest <= tail && tail - latest <= r->size / 2 && !(latest % UMC_SHM_ALIGN))
		c->pos = latest;
	else
		c->pos = tail;
}

UMC_HOT
enum umc_shm_got umc_shm_ring_get(const struct umc_shm_ring *r, struct umc_shm_cursor *c,
				  struct umc_shm_rec *h, const struct iovec *iov, int niov,
				  size_t room, uint64_t *lost)
{
	uint64_t mask = r->size - 1;

	*lost = 0;
	/* A padding record, a skipped generation, a lap: a few more tries, never unbounded. */
	for (int tries = 0; tries < 8; tries++) {
		uint64_t tail = atomic_load_explicit(&r->ctl->tail, memory_order_acquire);
		uint64_t off = c->pos & mask;

		if (tail == c->pos)
			return UMC_SHM_EMPTY;
		if (umc_unlikely(tail - c->pos > r->size || (tail - c->pos) % UMC_SHM_ALIGN ||
				 c->pos % UMC_SHM_ALIGN)) {
			/* Lapped (counted below, by seq), or nonsense: no header read off a line. */
			ring_resync(r, c, tail);
			continue;
		}
		memcpy(h, r->buf + off, sizeof(*h));
		if (umc_unlikely(!ring_intact(r, c->pos))) {
			ring_resync(r, c, tail);
			continue;
		}
		if (umc_unlikely(h->len < sizeof(*h) || h->len % UMC_SHM_ALIGN ||
				 h->len > r->size - off || h->len > tail - c->pos ||
				 (h->type != UMC_SHM_REC_DATA && h->type != UMC_SHM_REC_PAD) ||
				 (h->type == UMC_SHM_REC_PAD && off + h->len != r->size) ||
				 (h->type == UMC_SHM_REC_DATA && h->dlen > h->len - sizeof(*h)))) {
			c->pos = tail;
			c->based = false;
			return UMC_SHM_CORRUPT;
		}
		if (h->type == UMC_SHM_REC_PAD) {
			c->pos += h->len;
			continue;
		}
		bool fits = h->dlen <= room;

		if (fits)
			scatter(iov, niov, r->buf + off + sizeof(*h), h->dlen);
		if (umc_unlikely(!ring_intact(r, c->pos))) {
			ring_resync(r, c, tail);
			continue;
		}
		if (c->based && h->seq != c->seq) {
			/* Missed: overwritten before this reader came (or a writer that lies). */
			uint64_t gap = h->seq - c->seq;

			*lost += gap <= ring_max_records(r) ? gap : ring_max_records(r);
		}
		c->pos += h->len;
		c->seq = h->seq + 1;
		c->based = true;
		if (h->gen < c->min_gen)
			continue; /* sent before this reader registered: not for it */
		return fits ? UMC_SHM_DATA : UMC_SHM_TOO_LONG;
	}
	return UMC_SHM_EMPTY;
}
