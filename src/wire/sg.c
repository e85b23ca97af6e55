// SPDX-License-Identifier: MIT
/*
 * sg.c - byte ranges of a datagram in pieces (sg.h).
 */
#include <stdbool.h>
#include <string.h>

#include "umc_cc.h"
#include "wire/crc.h"
#include "wire/ib.h"
#include "wire/sg.h"

/* A walk over the contiguous pieces of one byte range of a datagram. */
struct sg_walk {
	const struct umc_sg *sg;
	int i;	     /* the iovec the next piece is in */
	size_t skip; /* bytes of it before the range */
	size_t left; /* bytes of the range still to visit */
};

/* Start a walk over [@off, @off + @cnt), clipped at the datagram's end. */
static void sg_walk_init(struct sg_walk *w, const struct umc_sg *sg, size_t off, size_t cnt)
{
	w->sg = sg;
	w->i = 0;
	w->skip = off;
	w->left = off >= sg->len ? 0 : cnt < sg->len - off ? cnt : sg->len - off;
}

/* The next piece: true with *@p and *@n, false at the range's end. */
static bool sg_walk_next(struct sg_walk *w, const uint8_t **p, size_t *n)
{
	for (; w->left && w->i < w->sg->n; w->i++) {
		size_t l = w->sg->iov[w->i].iov_len;

		if (w->skip >= l) {
			w->skip -= l;
			continue;
		}
		*p = (const uint8_t *)w->sg->iov[w->i].iov_base + w->skip;
		*n = l - w->skip < w->left ? l - w->skip : w->left;
		w->left -= *n;
		w->skip = 0;
		w->i++;
		return true;
	}
	return false;
}

UMC_HOT
size_t umc_sg_read(const struct umc_sg *sg, size_t off, void *dst, size_t cnt)
{
	struct sg_walk w;
	const uint8_t *p;
	uint8_t *d = dst;
	size_t n;

	sg_walk_init(&w, sg, off, cnt);
	while (sg_walk_next(&w, &p, &n)) {
		memcpy(d, p, n);
		d += n;
	}
	return (size_t)(d - (uint8_t *)dst);
}

UMC_HOT
uint32_t umc_sg_icrc(uint32_t reg, const struct umc_sg *sg, size_t off, size_t cnt)
{
	struct sg_walk w;
	const uint8_t *p;
	size_t n;

	sg_walk_init(&w, sg, off, cnt);
	while (sg_walk_next(&w, &p, &n))
		reg = umc_icrc_update(reg, p, n);
	return reg;
}

UMC_HOT
uint16_t umc_sg_vcrc(uint16_t reg, const struct umc_sg *sg, size_t off, size_t cnt)
{
	struct sg_walk w;
	const uint8_t *p;
	size_t n;

	sg_walk_init(&w, sg, off, cnt);
	while (sg_walk_next(&w, &p, &n))
		reg = umc_vcrc_update(reg, p, n);
	return reg;
}
