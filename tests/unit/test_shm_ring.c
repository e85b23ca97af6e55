// SPDX-License-Identifier: MIT
/*
 * test_shm_ring.c - one sender's ring of the same-host path
 * (src/link/shm/ring.c): datagrams come out as they went in, in order;
 * a reader that falls more than a ring behind loses the overwritten ones
 * and counts exactly those; records of an older generation are skipped
 * uncounted; a ring someone scribbled on costs its datagrams, counted,
 * and never makes the reader write past the room it gave or loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "link/shm/shm.h"

enum { RING = 64 << 10, DLEN = 1000 };

struct fixture {
	struct umc_shm_ring_ctl ctl;
	uint8_t *buf;
	struct umc_shm_ring r;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->buf = aligned_alloc(64, RING);
	memset(f->buf, 0, RING);
	f->r = (struct umc_shm_ring){&f->ctl, f->buf, RING};
	umc_shm_ring_reset(&f->r);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	free(f->buf);
	free(f);
	return 0;
}

static void put(struct fixture *f, uint32_t n, uint64_t gen)
{
	uint8_t d[DLEN];
	struct iovec iov[2] = {{d, 10}, {d + 10, DLEN - 10}};
	struct umc_shm_rec h = {.gen = gen, .family = 4, .sport = 0xc001};

	memset(d, (int)(n & 0xff), sizeof(d));
	memcpy(d, &n, sizeof(n));
	assert_int_equal(umc_shm_ring_put(&f->r, &h, iov, 2, DLEN), 0);
}

/* The next datagram's number, or -1 (empty); *lost as the call says. */
static long get(struct fixture *f, struct umc_shm_cursor *c, uint64_t *lost)
{
	uint8_t d[DLEN + 64];
	struct iovec iov = {d, sizeof(d)};
	struct umc_shm_rec h;
	uint32_t n;

	switch (umc_shm_ring_get(&f->r, c, &h, &iov, 1, DLEN, lost)) {
	case UMC_SHM_EMPTY:
		return -1;
	case UMC_SHM_DATA:
		assert_int_equal(h.dlen, DLEN);
		assert_int_equal(h.sport, 0xc001);
		memcpy(&n, d, sizeof(n));
		for (int i = 4; i < DLEN; i++)
			assert_int_equal(d[i], n & 0xff);
		return n;
	default:
		return -2;
	}
}

/* In order, across the wrap (a padding record), with nothing lost. */
static void test_in_order_across_wrap(void **state)
{
	struct fixture *f = *state;
	struct umc_shm_cursor c = {.based = true};
	uint64_t lost;

	for (uint32_t n = 0; n < 1000; n++) {
		put(f, n, 1);
		assert_int_equal(get(f, &c, &lost), n);
		assert_int_equal(lost, 0);
	}
	assert_int_equal(get(f, &c, &lost), -1);
}

/* Lapped: the overwritten are lost, counted exactly; reading goes on. */
static void test_lapped_reader_counts_loss(void **state)
{
	struct fixture *f = *state;
	struct umc_shm_cursor c = {.based = true};
	uint64_t lost, total = 0, got = 0;
	long n, last = -1;

	for (uint32_t i = 0; i < 500; i++) /* ~8 rings' worth */
		put(f, i, 1);
	while ((n = get(f, &c, &lost)) != -1) {
		total += lost;
		assert_true(n > last);
		last = n;
		got++;
	}
	assert_int_equal(last, 499);
	assert_int_equal(got + total, 500);
	assert_true(total > 400);
}

/* Older generations are skipped, not counted as lost. */
static void test_old_generation_skipped(void **state)
{
	struct fixture *f = *state;
	struct umc_shm_cursor c = {.based = true, .min_gen = 5};
	uint64_t lost;

	put(f, 0, 4);
	put(f, 1, 4);
	put(f, 2, 5);
	assert_int_equal(get(f, &c, &lost), 2);
	assert_int_equal(lost, 0);
}

/* A datagram longer than the room: consumed, not copied. */
static void test_too_long(void **state)
{
	struct fixture *f = *state;
	struct umc_shm_cursor c = {.based = true};
	uint8_t d[100];
	struct iovec iov = {d, sizeof(d)};
	struct umc_shm_rec h;
	uint64_t lost;

	memset(d, 0x5a, sizeof(d));
	put(f, 7, 1);
	assert_int_equal(umc_shm_ring_get(&f->r, &c, &h, &iov, 1, sizeof(d), &lost),
			 UMC_SHM_TOO_LONG);
	for (size_t i = 0; i < sizeof(d); i++)
		assert_int_equal(d[i], 0x5a);
	assert_int_equal(umc_shm_ring_get(&f->r, &c, &h, &iov, 1, sizeof(d), &lost), UMC_SHM_EMPTY);
}

/*
 * Scribbles on the ring: a record's length, type and data length, the
 * tail, @latest and the intent.  Each call returns within its bound; a
 * corrupt record skips to the tail (counted by the caller), and a later
 * datagram is read again; nothing is copied beyond the room given.
 */
static void test_corrupt_ring(void **state)
{
	struct fixture *f = *state;
	struct umc_shm_cursor c = {.based = true};
	struct umc_shm_rec *rec = (struct umc_shm_rec *)f->buf;
	uint8_t d[DLEN + 64];
	struct iovec iov = {d, DLEN};
	struct umc_shm_rec h;
	uint64_t lost;
	const uint32_t bad_len[] = {0, 1, 63, 64 * 3000, RING, 0xffffffc0};

	for (size_t k = 0; k < sizeof(bad_len) / sizeof(bad_len[0]); k++) {
		umc_shm_ring_reset(&f->r);
		c = (struct umc_shm_cursor){.based = true};
		put(f, 1, 1);
		rec->len = bad_len[k];
		memset(d, 0x77, sizeof(d));
		assert_int_equal(umc_shm_ring_get(&f->r, &c, &h, &iov, 1, DLEN, &lost),
				 UMC_SHM_CORRUPT);
		assert_int_equal(d[DLEN], 0x77);
		put(f, 2, 1);
		assert_int_equal(get(f, &c, &lost), 2);
	}
	/* A data length beyond its record, a type that is neither. */
	umc_shm_ring_reset(&f->r);
	c = (struct umc_shm_cursor){.based = true};
	put(f, 1, 1);
	rec->dlen = rec->len;
	assert_int_equal(umc_shm_ring_get(&f->r, &c, &h, &iov, 1, DLEN, &lost), UMC_SHM_CORRUPT);
	put(f, 2, 1);
	rec = (struct umc_shm_rec *)(f->buf + (c.pos & (RING - 1)));
	rec->type = 9;
	assert_int_equal(umc_shm_ring_get(&f->r, &c, &h, &iov, 1, DLEN, &lost), UMC_SHM_CORRUPT);
	/* Positions that make no sense: a tail behind, far ahead, unaligned; @latest too. */
	const uint64_t bad_tail[] = {1, 7, (uint64_t)RING * 1000 + 5, UINT64_MAX};

	for (size_t k = 0; k < sizeof(bad_tail) / sizeof(bad_tail[0]); k++) {
		umc_shm_ring_reset(&f->r);
		c = (struct umc_shm_cursor){.based = true};
		put(f, 1, 1);
		atomic_store(&f->ctl.tail, bad_tail[k]);
		atomic_store(&f->ctl.latest, bad_tail[k] * 3);
		for (int calls = 0; calls < 4; calls++)
			(void)umc_shm_ring_get(&f->r, &c, &h, &iov, 1, DLEN, &lost);
		assert_true(lost <= RING / 64);
	}
	/*
	 * A tail off a cache line at the end of the area, then one a record
	 * further: a header is never read across the end (ASan sees it).
	 */
	umc_shm_ring_reset(&f->r);
	c = (struct umc_shm_cursor){.based = true};
	put(f, 1, 1);
	atomic_store(&f->ctl.tail, 2 * (uint64_t)RING - 1);
	atomic_store(&f->ctl.latest, 2 * (uint64_t)RING - 1);
	assert_int_equal(umc_shm_ring_get(&f->r, &c, &h, &iov, 1, DLEN, &lost), UMC_SHM_EMPTY);
	atomic_store(&f->ctl.tail, 2 * (uint64_t)RING - 1 + 64);
	for (int calls = 0; calls < 4; calls++)
		assert_int_not_equal(umc_shm_ring_get(&f->r, &c, &h, &iov, 1, DLEN, &lost),
				     UMC_SHM_DATA);
	/* An intent that says every record is being overwritten: nothing is taken. */
	umc_shm_ring_reset(&f->r);
	c = (struct umc_shm_cursor){.based = true};
	put(f, 1, 1);
	atomic_store(&f->ctl.tail_intent, UINT64_MAX);
	assert_int_equal(umc_shm_ring_get(&f->r, &c, &h, &iov, 1, DLEN, &lost), UMC_SHM_EMPTY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_in_order_across_wrap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lapped_reader_counts_loss, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_generation_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_ring, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
