// SPDX-License-Identifier: MIT
/*
 * writer.c - make a process's counters file and write its records in place
 * (stat.h has the layout and the consistency rules).
 *
 * The layout is computed here once and kept in process memory (f->sect):
 * every address the writer computes comes from it, never from the file,
 * which someone else could have changed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stat/stat.h"

static uint32_t round_up(size_t n, size_t to)
{
	return (uint32_t)((n + to - 1) / to * to);
}

/* The size of the fixed part of each kind of record. */
static const size_t base_size[UMC_STAT_NKIND] = {
	[UMC_STAT_FAULTS] = sizeof(struct umc_stat_faults),
	[UMC_STAT_DEV] = sizeof(struct umc_stat_dev),
	[UMC_STAT_QP] = sizeof(struct umc_stat_qp),
	[UMC_STAT_GRP] = sizeof(struct umc_stat_group),
};

static const uint32_t slots[UMC_STAT_NKIND] = {
	[UMC_STAT_FAULTS] = 1,
	[UMC_STAT_DEV] = UMC_STAT_DEV_SLOTS,
	[UMC_STAT_QP] = UMC_STAT_QP_SLOTS,
	[UMC_STAT_GRP] = UMC_STAT_GRP_SLOTS,
};

/* Sections and names after the header; returns the file's size. */
static size_t layout(struct umc_stat_sect *sect, const struct umc_stat_layout *l)
{
	size_t at = UMC_STAT_HDR_SIZE;

	for (int k = 0; k < UMC_STAT_NKIND; k++) {
		struct umc_stat_sect *s = &sect[k];

		memset(s, 0, sizeof(*s));
		s->ncnt = l->ncnt[k];
		if (s->ncnt) {
			s->names_off = at;
			at += (size_t)s->ncnt * UMC_STAT_NAME_LEN;
		}
	}
	for (int k = 0; k < UMC_STAT_NKIND; k++) {
		struct umc_stat_sect *s = &sect[k];

		at = round_up(at, UMC_STAT_ALIGN);
		s->off = at;
		s->slots = slots[k];
		s->cnt_off = round_up(base_size[k], sizeof(uint64_t));
		s->size = round_up(s->cnt_off + (size_t)s->ncnt * sizeof(uint64_t), UMC_STAT_ALIGN);
		at += (size_t)s->slots * s->size;
	}
	return round_up(at, 4096);
}

/* The start of /proc/@pid/@name (0: self), NUL-terminated; returns its length. */
static ssize_t read_proc(pid_t pid, const char *name, char *buf, size_t size)
{
	char path[48];
	int fd;
	ssize_t n;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	else
		snprintf(path, sizeof(path), "/proc/self/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	buf[n] = 0;
	return n;
}

/* The start of /proc/self/cmdline, its NULs turned into spaces. */
static void read_cmdline(char *buf, size_t size)
{
	ssize_t n = read_proc(0, "cmdline", buf, size);

	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
}

static void read_comm(char *buf, size_t size)
{
	ssize_t n = read_proc(0, "comm", buf, size);

	if (n && buf[n - 1] == '\n')
		buf[n - 1] = 0;
}

uint64_t umc_stat_proc_start(pid_t pid)
{
	char buf[1024], *p;
	unsigned long long t = 0;

	if (read_proc(pid, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	/* The command name, in parentheses, may hold blanks and ')': the last ')' ends it. */
	p = strrchr(buf, ')');
	/* The blank before field 3 (state) follows it; find the one before field 22. */
	for (int field = 3; p && field <= 22; field++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p + 1, "%llu", &t) != 1)
		t = 0;
	return t;
}

static void write_header(struct umc_stat_file *f, const struct umc_stat_layout *l)
{
	struct umc_stat_hdr *h = (struct umc_stat_hdr *)f->base;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	h->version = UMC_STAT_VERSION;
	h->hdr_size = UMC_STAT_HDR_SIZE;
	h->file_size = f->size;
	h->pid = getpid();
	h->uid = geteuid();
	h->start_ticks = umc_stat_proc_start(h->pid);
	h->created_sec = now.tv_sec;
	atomic_store_explicit(&h->state, UMC_STAT_RUNNING, memory_order_relaxed);
	h->nsect = UMC_STAT_NKIND;
	read_comm(h->comm, sizeof(h->comm));
	read_cmdline(h->cmdline, sizeof(h->cmdline));
	for (int k = 0; k < UMC_STAT_NKIND; k++) {
		const struct umc_stat_sect *s = &f->sect[k];

		h->sect[k].off = s->off;
		h->sect[k].names_off = s->names_off;
		h->sect[k].slots = s->slots;
		h->sect[k].size = s->size;
		h->sect[k].cnt_off = s->cnt_off;
		h->sect[k].ncnt = s->ncnt;
		for (uint32_t c = 0; c < s->ncnt; c++)
			strncpy((char *)f->base + s->names_off + (size_t)c * UMC_STAT_NAME_LEN,
				l->names[k][c], UMC_STAT_NAME_LEN);
	}
	/* The magic last: a reader that sees it sees the rest. */
	atomic_thread_fence(memory_order_release);
	memcpy(h->magic, UMC_STAT_MAGIC, sizeof(UMC_STAT_MAGIC));
}

int umc_stat_create(struct umc_stat_file *f, const char *dir, const struct umc_stat_layout *l)
{
	int fd = -1, ret;
	void *p;

	memset(f, 0, sizeof(*f));
	f->size = layout(f->sect, l);
	if (dir) {
		if ((size_t)snprintf(f->path, sizeof(f->path), "%s/%d.stat", dir, (int)getpid()) >=
		    sizeof(f->path))
			return -ENAMETOOLONG;
		/* A file of a dead process with our PID goes; a fresh inode takes its name. */
		if (unlink(f->path) && errno != ENOENT)
			return -errno;
		fd = open(f->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		if (ftruncate(fd, (off_t)f->size)) {
			ret = -errno;
			goto err;
		}
		p = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		fd = -1;
	} else {
		p = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (p == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
	f->base = p;
	f->file = dir != NULL;
	write_header(f, l);
	return 0;
err:
	if (fd >= 0)
		close(fd);
	if (dir)
		unlink(f->path);
	return ret;
}

void umc_stat_close(struct umc_stat_file *f, bool unlink_file)
{
	if (f->file && unlink_file)
		unlink(f->path);
	if (f->base)
		munmap(f->base, f->size);
	f->base = NULL;
}

void *umc_stat_rec(const struct umc_stat_file *f, enum umc_stat_kind kind, int i)
{
	const struct umc_stat_sect *s = &f->sect[kind];

	return f->base + s->off + (size_t)i * s->size;
}

_Atomic uint64_t *umc_stat_counters(const struct umc_stat_file *f, enum umc_stat_kind kind, int i)
{
	return (_Atomic uint64_t *)((uint8_t *)umc_stat_rec(f, kind, i) + f->sect[kind].cnt_off);
}

void umc_stat_write_begin(struct umc_stat_rec *r)
{
	uint32_t s = atomic_load_explicit(&r->seq, memory_order_relaxed);

	atomic_store_explicit(&r->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

void umc_stat_write_end(struct umc_stat_rec *r)
{
	uint32_t s = atomic_load_explicit(&r->seq, memory_order_relaxed);

	atomic_store_explicit(&r->seq, s + 1, memory_order_release);
}

int umc_stat_slot_get(struct umc_stat_file *f, enum umc_stat_kind kind)
{
	const struct umc_stat_sect *s = &f->sect[kind];

	for (uint32_t i = 0; f->nbusy[kind] < s->slots && i < s->slots; i++) {
		struct umc_stat_rec *r;
		_Atomic uint64_t *cnt;

		if (f->busy[kind][i])
			continue;
		f->busy[kind][i] = true;
		f->nbusy[kind]++;
		r = umc_stat_rec(f, kind, (int)i);
		cnt = umc_stat_counters(f, kind, (int)i);
		umc_stat_write_begin(r);
		memset((uint8_t *)r + sizeof(*r), 0, s->cnt_off - sizeof(*r));
		for (uint32_t c = 0; c < s->ncnt; c++)
			atomic_store_explicit(&cnt[c], 0, memory_order_relaxed);
		r->used = 1;
		umc_stat_write_end(r);
		return (int)i;
	}
	atomic_fetch_add_explicit(&((struct umc_stat_hdr *)f->base)->sect[kind].overflow, 1,
				  memory_order_relaxed);
	return -ENOSPC;
}

void umc_stat_slot_put(struct umc_stat_file *f, enum umc_stat_kind kind, int i)
{
	struct umc_stat_rec *r = umc_stat_rec(f, kind, i);

	umc_stat_write_begin(r);
	r->used = 0;
	umc_stat_write_end(r);
	f->busy[kind][i] = false;
	f->nbusy[kind]--;
}

void umc_stat_set_state(struct umc_stat_file *f, enum umc_stat_state state)
{
	atomic_store_explicit(&((struct umc_stat_hdr *)f->base)->state, (uint32_t)state,
			      memory_order_release);
}

/* A gone process's file, for umc_stat_prune. */
struct gone {
	int64_t created;
	char name[64];
};

static int gone_cmp(const void *a, const void *b)
{
	const struct gone *x = a, *y = b;

	return x->created < y->created ? 1 : x->created > y->created ? -1 : 0; /* newest first */
}

/* Is the counters file @name of @dir a process that is gone?  Its creation time in *@created. */
static bool is_gone(int dfd, const char *name, int64_t *created)
{
	struct umc_stat_hdr h = {0};
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	bool gone;

	if (fd < 0)
		return false;
	gone = pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	       !memcmp(h.magic, UMC_STAT_MAGIC, sizeof(UMC_STAT_MAGIC)) &&
	       h.version >> 16 == UMC_STAT_VERSION_MAJOR &&
	       umc_stat_proc_start(h.pid) != h.start_ticks;
	close(fd);
	*created = h.created_sec;
	return gone;
}

void umc_stat_prune(const char *dir, int keep)
{
	struct gone *list = NULL, *grown;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int dfd;
	DIR *d = opendir(dir);

	if (!d)
		return;
	dfd = dirfd(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		int64_t created;

		if (len < 6 || len >= sizeof(list->name) || strcmp(e->d_name + len - 5, ".stat") ||
		    !is_gone(dfd, e->d_name, &created))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			grown = realloc(list, cap * sizeof(*list));
			if (!grown)
				break;
			list = grown;
		}
		list[n].created = created;
		strcpy(list[n++].name, e->d_name);
	}
	if (n > (size_t)keep) {
		qsort(list, n, sizeof(*list), gone_cmp);
		for (size_t i = (size_t)keep; i < n; i++) {
			char ctl[72];

			unlinkat(dfd, list[i].name, 0);
			snprintf(ctl, sizeof(ctl), "%.*s.ctl", (int)strlen(list[i].name) - 5,
				 list[i].name);
			unlinkat(dfd, ctl, 0);
		}
	}
	free(list);
	closedir(d);
}
