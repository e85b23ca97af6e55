// SPDX-License-Identifier: MIT
/*
 * reader.c - read another process's counters file without its help
 * (stat.h has the layout and the consistency rules).
 *
 * The file is mapped read-only and its header checked once: every section
 * must lie inside the file and every record hold at least the fields this
 * version reads.  After that, no value read from the file is used as an
 * address or a size.  (The file's size cannot change under us unless its
 * owner truncates it; umc-stat catches the SIGBUS that would give.)
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stat/stat.h"

enum { MAX_FILE = 64 << 20, MAX_SLOTS = 1 << 20, MAX_CNT = 4096 };

static_assert(sizeof(struct umc_stat_dev) <= sizeof(struct umc_stat_faults) &&
		      sizeof(struct umc_stat_qp) <= sizeof(struct umc_stat_faults) &&
		      sizeof(struct umc_stat_group) <= sizeof(struct umc_stat_faults),
	      "umc_stat_read's buffer holds every record");

static const size_t base_size[UMC_STAT_NKIND] = {
	[UMC_STAT_FAULTS] = sizeof(struct umc_stat_faults),
	[UMC_STAT_DEV] = sizeof(struct umc_stat_dev),
	[UMC_STAT_QP] = sizeof(struct umc_stat_qp),
	[UMC_STAT_GRP] = sizeof(struct umc_stat_group),
};

/* Does [off, off + n * each) lie inside a file of @size bytes? */
static bool inside(uint64_t off, uint64_t n, uint64_t each, uint64_t size)
{
	return off <= size && (each == 0 || n <= (size - off) / each);
}

static int check_sect(const struct umc_stat_sect *s, enum umc_stat_kind k, uint64_t size)
{
	if (s->slots > MAX_SLOTS || s->ncnt > MAX_CNT || s->off % 8 || s->size % 8 ||
	    s->cnt_off % 8)
		return -EBADMSG;
	if (!s->slots)
		return 0;
	if (s->size < base_size[k] || s->cnt_off < base_size[k] ||
	    s->cnt_off > s->size || s->ncnt > (s->size - s->cnt_off) / 8 ||
	    !inside(s->off, s->slots, s->size, size))
		return -EBADMSG;
	if (s->ncnt && !inside(s->names_off, s->ncnt, UMC_STAT_NAME_LEN, size))
		return -EBADMSG;
	return 0;
}

static int check_header(struct umc_stat_view *v, char *err)
{
	struct umc_stat_hdr *h = &v->hdr;

	if (memcmp(h->magic, UMC_STAT_MAGIC, sizeof(UMC_STAT_MAGIC))) {
		snprintf(err, 128, "not an umcast counters file (or not written yet)");
		return -EBADMSG;
	}
	if (h->version >> 16 != UMC_STAT_VERSION_MAJOR) {
		snprintf(err, 128, "counters file version %u.%u, this reader knows %u.x",
			 h->version >> 16, h->version & 0xffff, UMC_STAT_VERSION_MAJOR);
		return -EPROTONOSUPPORT;
	}
	if (h->hdr_size < sizeof(*h) || h->hdr_size > v->size || h->file_size != v->size) {
		snprintf(err, 128, "the header does not fit the file");
		return -EBADMSG;
	}
	/* Sections this reader does not know are skipped; those missing are empty. */
	if (h->nsect < UMC_STAT_NKIND)
		for (uint32_t k = h->nsect; k < UMC_STAT_NKIND; k++)
			memset(&h->sect[k], 0, sizeof(h->sect[k]));
	for (int k = 0; k < UMC_STAT_NKIND; k++) {
		if (check_sect(&h->sect[k], (enum umc_stat_kind)k, v->size)) {
			snprintf(err, 128, "section %d does not fit the file", k);
			return -EBADMSG;
		}
	}
	h->comm[sizeof(h->comm) - 1] = 0;
	h->cmdline[sizeof(h->cmdline) - 1] = 0;
	return 0;
}

int umc_stat_open(const char *path, struct umc_stat_view *v, char err[128])
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ret;
	struct stat st;
	void *p;

	memset(v, 0, sizeof(*v));
	err[0] = 0;
	if (fd < 0) {
		ret = -errno;
		snprintf(err, 128, "%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < UMC_STAT_HDR_SIZE || st.st_size > MAX_FILE) {
		ret = -EBADMSG;
		goto fail;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	close(fd);
	v->base = p;
	v->size = (size_t)st.st_size;
	/* The magic is written last (writer.c): read it first. */
	memcpy(v->hdr.magic, p, sizeof(v->hdr.magic));
	atomic_thread_fence(memory_order_acquire);
	memcpy(&v->hdr, p, sizeof(v->hdr));
	ret = check_header(v, err);
	if (ret)
		umc_stat_view_close(v);
	return ret;
fail:
	close(fd);
	snprintf(err, 128, "%s: %s", path,
		 ret == -EBADMSG ? "not an umcast counters file" : strerror(-ret));
	return ret;
}

void umc_stat_view_close(struct umc_stat_view *v)
{
	if (v->base)
		munmap((void *)v->base, v->size);
	v->base = NULL;
}

int umc_stat_slots(const struct umc_stat_view *v, enum umc_stat_kind kind)
{
	return (int)v->hdr.sect[kind].slots;
}

uint32_t umc_stat_ncounters(const struct umc_stat_view *v, enum umc_stat_kind kind)
{
	return v->hdr.sect[kind].ncnt;
}

uint32_t umc_stat_state(const struct umc_stat_view *v)
{
	const struct umc_stat_hdr *h = (const struct umc_stat_hdr *)v->base;

	return atomic_load_explicit(&h->state, memory_order_acquire);
}

static const uint8_t *rec_at(const struct umc_stat_view *v, enum umc_stat_kind kind, int i)
{
	const struct umc_stat_sect *s = &v->hdr.sect[kind];

	return v->base + s->off + (size_t)i * s->size;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Copy @n bytes (a multiple of 8, aligned) with 64-bit atomic loads: no torn words. */
static void copy_words(void *dst, const uint8_t *src, size_t n)
{
	uint64_t *d = dst;

	for (size_t i = 0; i < n / 8; i++)
		d[i] = __atomic_load_n((const uint64_t *)(src + 8 * i), __ATOMIC_RELAXED);
}

int umc_stat_read(const struct umc_stat_view *v, enum umc_stat_kind kind, int i, void *out,
		  size_t size)
{
	const struct umc_stat_sect *s = &v->hdr.sect[kind];
	uint64_t buf[(sizeof(struct umc_stat_faults) + 7) / 8]; /* the largest record's fields */
	size_t n = (base_size[kind] + 7) / 8 * 8; /* <= cnt_off <= size (check_sect) */
	uint64_t deadline = 0;
	bool torn = false;
	uint32_t used;

	if (i < 0 || (uint32_t)i >= s->slots)
		return -ERANGE;
	const struct umc_stat_rec *r = (const struct umc_stat_rec *)rec_at(v, kind, i);

	for (;;) {
		uint32_t s1 = atomic_load_explicit(&r->seq, memory_order_acquire), s2;

		copy_words(buf, (const uint8_t *)r, n);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&r->seq, memory_order_relaxed);
		if (s1 == s2 && !(s1 & 1))
			break;
		if (!deadline) {
			deadline = now_ms() + UMC_STAT_READ_MS;
		} else if (now_ms() > deadline) {
			torn = true;
			break;
		}
		sched_yield();
	}
	memset(out, 0, size);
	memcpy(out, buf, size < n ? size : n);
	if (torn)
		return -EAGAIN;
	memcpy(&used, (const uint8_t *)buf + offsetof(struct umc_stat_rec, used), sizeof(used));
	return used ? 0 : -ENOENT;
}

uint64_t umc_stat_counter(const struct umc_stat_view *v, enum umc_stat_kind kind, int i,
			  uint32_t c)
{
	const struct umc_stat_sect *s = &v->hdr.sect[kind];

	if (i < 0 || (uint32_t)i >= s->slots || c >= s->ncnt)
		return 0;
	return __atomic_load_n((const uint64_t *)(rec_at(v, kind, i) + s->cnt_off + 8 * c),
			       __ATOMIC_RELAXED);
}

const char *umc_stat_counter_name(const struct umc_stat_view *v, enum umc_stat_kind kind,
				  uint32_t c, char buf[UMC_STAT_NAME_LEN + 1])
{
	const struct umc_stat_sect *s = &v->hdr.sect[kind];

	buf[0] = 0;
	if (c < s->ncnt) {
		memcpy(buf, v->base + s->names_off + (size_t)c * UMC_STAT_NAME_LEN,
		       UMC_STAT_NAME_LEN);
		buf[UMC_STAT_NAME_LEN] = 0;
	}
	return buf;
}
