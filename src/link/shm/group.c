// SPDX-License-Identifier: MIT
/*
 * group.c - a group's file of the same-host path (shm.h): making and
 * mapping it, reader and sender slots, the senders' decision, and waking
 * readers that sleep.
 *
 * Slots.  A slot is taken by a compare-and-swap of its @owner from 0 to a
 * token no other tenancy had (a fresh value of @gen), and filled; its
 * @reg_gen, set last, says it is filled.  A slot whose owner is gone (its
 * PID no longer runs with the start time recorded, proc(5)) is taken
 * over the same way; nothing else is ever freed by another process.
 *
 * Waking.  A reader that may sleep on its wake-up FIFO sets its bit in
 * @wake_mask, then looks at the rings once more; a sender publishes its
 * records, then reads @wake_mask: one of the two sees the other
 * (sequentially consistent on both sides), so a datagram never waits for
 * a reader that sleeps.  The first sender to set the reader's bit in
 * @woken_mask writes one byte to its FIFO; the reader clears the bit and
 * empties the FIFO when it runs.  A busy reader has no bit set, and
 * costs its senders no system call.  The FIFOs are in the same directory,
 * named after the reader's slot and registration, so that a sender never
 * writes to a FIFO of a tenant before.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "link/shm/shm.h"
#include "stat/rundir.h"
#include "stat/stat.h"
#include "umc_int.h"
#include "umc_sys.h"

#define SHM_MAGIC "umcshm1"
/* A ring's control block has a page of its own, so that each ring maps apart. */
enum { SHM_VERSION = 3, SHM_CTL_SIZE = 4096 };

/*
 * What reader and sender slots share.  @left: a sender that left keeps
 * its tenancy (and its ring, for the readers still behind it) until a new
 * sender takes the slot.
 */
struct shm_slot {
	_Alignas(64) _Atomic uint64_t owner; /* 0: free; the tenancy's token */
	_Atomic uint64_t reg_gen;	     /* the generation it registered at (0: filling) */
	_Atomic uint64_t start;		     /* its process's start time (proc(5)) */
	_Atomic int32_t pid;
	_Atomic uint32_t left; /* a sender that left (its ring stays readable) */
};

struct shm_reader {
	struct shm_slot s;
	_Atomic uint64_t sock_ino; /* its group socket's inode */
	_Atomic uint32_t member;   /* it holds the group's IP membership */
	/* How far it has read in each sender's ring (SHM_NOWHERE: it reads none there). */
	_Alignas(64) _Atomic uint64_t pos[UMC_SHM_SENDERS];
};

#define SHM_NOWHERE UINT64_MAX

struct shm_sender {
	struct shm_slot s;
};

struct shm_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_size; /* bytes before the first ring */
	uint64_t ring_size;
	uint64_t file_size;
	uint32_t nreaders, nsenders;
	_Alignas(64) _Atomic uint64_t gen;
	_Alignas(64) _Atomic uint64_t wake_mask;
	_Atomic uint64_t woken_mask;
	struct shm_reader readers[UMC_SHM_READERS];
	struct shm_sender senders[UMC_SHM_SENDERS];
};
_Static_assert(UMC_SHM_READERS <= 64, "one wake bit per reader");
_Static_assert(sizeof(struct umc_shm_ring_ctl) <= SHM_CTL_SIZE, "a ring's control block fits");

/* A sender's ring as this reader follows it. */
struct shm_follow {
	uint64_t owner; /* the tenancy followed (0: none) */
	uint64_t told;	/* the position last published (shm_reader.pos) */
	struct umc_shm_ring ring;
	struct umc_shm_cursor cur;
};

struct umc_shm_grp {
	struct umc_shm_key key;
	char path[UMC_RUNDIR_MAX + 64];
	struct shm_hdr *hdr; /* the header, mapped at open; each ring when first needed */
	uint8_t *rmap[UMC_SHM_SENDERS];
	uint64_t ring_size, hdr_size; /* this process's copies, checked once */

	/* Reading (the device's rx_lock). */
	int rslot; /* -1: not a reader */
	uint64_t rtoken, rgen;
	int wake_fd; /* the FIFO's read end (opened read-write: no EOF, no blocking open) */
	char wake_path[UMC_RUNDIR_MAX + 96];
	uint64_t rseen; /* the generation the followed rings were looked up at */
	int rnext;	/* the ring to read first */
	struct shm_follow follow[UMC_SHM_SENDERS];

	/* Sending (send_lock). */
	pthread_mutex_t send_lock;
	int sslot; /* -1: no ring yet */
	uint64_t stoken;
	struct umc_shm_ring sring;
	bool smode;
	uint64_t sseen, snext_ms;
	uint64_t stake_ms; /* no ring before then: the last try found no slot or no room */
	/*
	 * Flow control (shm_flow): no reader this sender waits for has read
	 * less than @smin.  Each reader slot's last mark of progress (where
	 * it had read, and when: since it last read a 1/UMC_SHM_PROGRESS_DIV
	 * of the ring while the sender waited for it, or since the sender
	 * began to wait for it), when the sender last gave up on it, and the
	 * give-ups not yet counted (umc_shm_send_done).
	 */
	uint64_t smin;
	uint64_t mark_pos[UMC_SHM_READERS], mark_ms[UMC_SHM_READERS];
	bool waiting[UMC_SHM_READERS];
	uint64_t gave_up_ms[UMC_SHM_READERS];
	unsigned sgave_up;
	uint64_t sreg; /* the sender slot's reg_gen */
	int wfd[UMC_SHM_READERS]; /* a reader's FIFO, opened for writing (-1: not yet) */
	uint64_t wfd_gen[UMC_SHM_READERS];
	struct umc_shm_grp *next; /* shm_open_list */
	pid_t pid;		  /* the process that mapped it (a child of fork has no mapping) */
};

/* Every handle of the process, for its exit (shm_exit). */
static pthread_mutex_t shm_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct umc_shm_grp *shm_open_list;

bool umc_shm_enabled(void)
{
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("UMC_SHM");

		on = !e || strcmp(e, "0") != 0;
	}
	return on;
}

static uint64_t ring_size_wanted(void)
{
	const char *e = getenv("UMC_SHM_RING");
	unsigned long long v = e ? strtoull(e, NULL, 0) : 0;

	if (v >= (64u << 10) && v <= (256u << 20) && !(v & (v - 1)))
		return v;
	return UMC_SHM_RING_DEFAULT;
}

static uint64_t ring_off(const struct umc_shm_grp *g, int i)
{
	return g->hdr_size + (uint64_t)i * (SHM_CTL_SIZE + g->ring_size);
}

/*
 * Give the file memory (or disk) for @len bytes at @off now.  A store or
 * load through a mapping of a hole that a full tmpfs cannot fill raises
 * SIGBUS (mmap(2)); an allocated range never does.  Returns false when
 * the file system has no room; one that cannot preallocate
 * (EOPNOTSUPP) is used as it is.
 */
static bool shm_back(int fd, uint64_t off, uint64_t len)
{
	return !fallocate(fd, 0, (off_t)off, (off_t)len) || errno == EOPNOTSUPP;
}

/*
 * Map @len bytes of the file at @off (page-aligned), not into a child of
 * fork; @back: allocated first (shm_back), or not mapped.
 */
static void *shm_mmap(const char *path, uint64_t off, uint64_t len, bool back)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	void *m = MAP_FAILED;

	if (fd < 0)
		return NULL;
	if (!back || shm_back(fd, off, len))
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	madvise(m, len, MADV_DONTFORK); /* a child of fork is another HCA */
	return m;
}

/*
 * Ring @i, mapped now if it is not yet, its memory allocated first: on a
 * full file system a sender then sends through the kernel (and tries
 * again UMC_SHM_GRACE_MS later), and a reader does not follow a ring that
 * its writer (not of this library) left unallocated, rather than either
 * dying of SIGBUS.  False when it cannot be had.
 */
static bool ring_at(struct umc_shm_grp *g, int i, struct umc_shm_ring *r)
{
	if (!g->rmap[i])
		g->rmap[i] = shm_mmap(g->path, ring_off(g, i), SHM_CTL_SIZE + g->ring_size, true);
	if (!g->rmap[i])
		return false;
	*r = (struct umc_shm_ring){(struct umc_shm_ring_ctl *)g->rmap[i], g->rmap[i] + SHM_CTL_SIZE,
				   g->ring_size};
	return true;
}

/* The directory: $UMC_SHM_DIR (shared by choice), else the user's private RUNDIR/shm. */
static int shm_dir(char *buf, size_t size, mode_t *mode)
{
	const char *e = getenv("UMC_SHM_DIR");
	char why[256];
	struct stat st;

	if (e && *e) {
		if ((size_t)snprintf(buf, size, "%s", e) >= size)
			return -ENAMETOOLONG;
		if (lstat(buf, &st))
			return -errno;
		*mode = 0660;
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	}
	*mode = 0600;
	return umc_rundir_make_shm(buf, size, why, sizeof(why));
}

static void shm_name(struct umc_shm_grp *g, const char *dir)
{
	struct stat ns;
	char addr[33];

	if (stat("/proc/self/ns/net", &ns))
		ns.st_ino = 0;
	for (int i = 0; i < (g->key.family == 4 ? 4 : 16); i++)
		snprintf(addr + 2 * i, 3, "%02x", g->key.addr[i]);
	snprintf(g->path, sizeof(g->path), "%s/shm-%llu-%u-%s", dir, (unsigned long long)ns.st_ino,
		 g->key.ifindex, addr);
}

/* A new file under a temporary name, its header written, linked into place. */
static int shm_create(struct umc_shm_grp *g, mode_t mode)
{
	char tmp[sizeof(g->path) + 32];
	uint64_t rs = ring_size_wanted();
	uint64_t hs = (sizeof(struct shm_hdr) + 4095) & ~(uint64_t)4095;
	uint64_t size = hs + UMC_SHM_SENDERS * (SHM_CTL_SIZE + rs);
	struct shm_hdr h = {.version = SHM_VERSION, .hdr_size = (uint32_t)hs, .ring_size = rs,
			    .file_size = size, .nreaders = UMC_SHM_READERS,
			    .nsenders = UMC_SHM_SENDERS};
	int fd, ret = 0;

	memcpy(h.magic, SHM_MAGIC, sizeof(h.magic));
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", g->path, (int)getpid());
	unlink(tmp);
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	fchmod(fd, mode); /* past the umask: a shared directory's members read and write it */
	if (ftruncate(fd, (off_t)size) || !shm_back(fd, 0, hs) ||
	    pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		ret = -errno;
	close(fd);
	if (!ret && link(tmp, g->path) && errno != EEXIST)
		ret = -errno;
	unlink(tmp);
	return ret;
}

/* Open and map the file, checking its header against its size. */
static int shm_map(struct umc_shm_grp *g)
{
	struct shm_hdr h;
	struct stat st;
	void *m;
	int fd = open(g->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		close(fd);
		return -EBADMSG;
	}
	g->ring_size = h.ring_size;
	g->hdr_size = h.hdr_size;
	if (memcmp(h.magic, SHM_MAGIC, sizeof(h.magic)) || h.version != SHM_VERSION ||
	    h.nreaders != UMC_SHM_READERS || h.nsenders != UMC_SHM_SENDERS ||
	    h.ring_size < (64u << 10) || h.ring_size > (256u << 20) ||
	    (h.ring_size & (h.ring_size - 1)) || h.hdr_size < sizeof(h) || h.hdr_size % 4096 ||
	    h.file_size != ring_off(g, UMC_SHM_SENDERS) || (uint64_t)st.st_size != h.file_size)
		ret = -EBADMSG;
	close(fd);
	if (!ret && !(m = shm_mmap(g->path, 0, g->hdr_size, false)))
		ret = -ENOMEM;
	if (!ret)
		g->hdr = m;
	return ret;
}

/* Is the tenant recorded as @pid, started at @start, gone? */
static bool shm_gone(int32_t pid, uint64_t start)
{
	return pid <= 0 || umc_stat_proc_start(pid) != start;
}

static void shm_tidy(struct umc_shm_grp *g, bool leaving);

struct umc_shm_grp *umc_shm_open(const struct umc_shm_key *key)
{
	struct umc_shm_grp *g = calloc(1, sizeof(*g));
	char dir[UMC_RUNDIR_MAX];
	mode_t mode;
	int ret;

	if (!g)
		return NULL;
	g->key = *key;
	g->rslot = g->sslot = -1;
	g->wake_fd = -1;
	for (int i = 0; i < UMC_SHM_READERS; i++)
		g->wfd[i] = -1;
	pthread_mutex_init(&g->send_lock, NULL);
	ret = shm_dir(dir, sizeof(dir), &mode);
	if (!ret) {
		shm_name(g, dir);
		ret = shm_map(g);
		if (ret == -ENOENT) {
			ret = shm_create(g, mode);
			ret = ret ?: shm_map(g);
		}
	}
	if (ret) {
		pthread_mutex_destroy(&g->send_lock);
		free(g);
		return NULL;
	}
	shm_tidy(g, false);
	g->pid = getpid();
	pthread_mutex_lock(&shm_list_lock);
	g->next = shm_open_list;
	shm_open_list = g;
	pthread_mutex_unlock(&shm_list_lock);
	return g;
}

/*
 * A file nobody holds a slot of any more (a sender that left or is gone,
 * or a reader that is gone, holds none) is removed when this process is
 * @leaving it.  One that another process opens meanwhile is only left
 * alone by its senders: the kernel's view of the receivers, not the file,
 * decides (shm_decide).
 */
static void shm_tidy(struct umc_shm_grp *g, bool leaving)
{
	bool held = false;

	for (int i = 0; i < UMC_SHM_SENDERS + UMC_SHM_READERS && !held; i++) {
		struct shm_slot *t = i < UMC_SHM_SENDERS ? &g->hdr->senders[i].s
							 : &g->hdr->readers[i - UMC_SHM_SENDERS].s;

		held = atomic_load(&t->owner) && !atomic_load(&t->left) &&
		       !shm_gone(atomic_load(&t->pid), atomic_load(&t->start));
	}
	if (leaving && !held)
		unlink(g->path);
}

/*
 * Leave the sender slot.  Its tenancy and ring stay, so that readers
 * behind it still read what it sent (a socket's queue, too, outlives its
 * sender), until another sender takes the slot (shm_claim).
 */
static void shm_sender_leave(struct umc_shm_grp *g)
{
	if (g->sslot < 0)
		return;
	atomic_store(&g->hdr->senders[g->sslot].s.left, 1);
	umc_shm_announce(g);
	g->sslot = -1;
}

/* At exit: this process's rings are given back, and files nobody uses removed. */
__attribute__((destructor)) static void shm_exit(void)
{
	pthread_mutex_lock(&shm_list_lock);
	for (struct umc_shm_grp *g = shm_open_list; g; g = g->next) {
		if (g->pid != getpid())
			continue; /* the parent's, in a child of fork: not mapped here */
		shm_sender_leave(g);
		shm_tidy(g, true);
	}
	pthread_mutex_unlock(&shm_list_lock);
}

void umc_shm_close(struct umc_shm_grp *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&shm_list_lock);
	for (struct umc_shm_grp **p = &shm_open_list; *p; p = &(*p)->next) {
		if (*p == g) {
			*p = g->next;
			break;
		}
	}
	pthread_mutex_unlock(&shm_list_lock);
	shm_sender_leave(g);
	shm_tidy(g, true);
	for (int i = 0; i < UMC_SHM_READERS; i++)
		if (g->wfd[i] >= 0)
			umc_fd_close(g->wfd[i]);
	for (int i = 0; i < UMC_SHM_SENDERS; i++)
		if (g->rmap[i])
			munmap(g->rmap[i], SHM_CTL_SIZE + g->ring_size);
	munmap(g->hdr, g->hdr_size);
	pthread_mutex_destroy(&g->send_lock);
	free(g);
}

void umc_shm_announce(struct umc_shm_grp *g)
{
	atomic_fetch_add(&g->hdr->gen, 1);
}

/* A fresh token: a value of @gen nobody had (0 never is one). */
static uint64_t shm_token(struct umc_shm_grp *g)
{
	return atomic_fetch_add(&g->hdr->gen, 1) + 1;
}

/*
 * Take a slot among @n of @stride bytes at @base (each a struct shm_slot
 * first): a free one, else one whose tenant left or is gone.
 */
static int shm_claim(struct umc_shm_grp *g, void *base, size_t stride, int n, uint64_t token)
{
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			struct shm_slot *t = (struct shm_slot *)((uint8_t *)base + i * stride);
			uint64_t o = atomic_load(&t->owner);

			if (pass == 0 ? o != 0
				      : (o == 0 || !atomic_load(&t->reg_gen) ||
					 (!atomic_load(&t->left) &&
					  !shm_gone(atomic_load(&t->pid), atomic_load(&t->start)))))
				continue;
			if (atomic_compare_exchange_strong(&t->owner, &o, token)) {
				atomic_store(&t->reg_gen, 0);
				atomic_store(&t->left, 0);
				atomic_store(&t->pid, (int32_t)getpid());
				atomic_store(&t->start, umc_stat_proc_start(getpid()));
				return i;
			}
		}
	}
	return -ENOSPC;
}

/* ------------------------------------------------------------------------- */
/* Reading.                                                                  */

/* futex(2) on a word of the shared file (not FUTEX_PRIVATE: other processes map it too). */
static void shm_futex_wait(_Atomic uint32_t *w, uint32_t val, uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};

	syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void shm_futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/*
 * Tell ring @i's sender how far this reader has read there (SHM_NOWHERE:
 * not at all), and wake it if it sleeps until readers get that far.  The
 * position is stored before @flow_wait is read, and the sender stores
 * that before it reads the positions (both sequentially consistent): a
 * sender never sleeps through the position that would have woken it.
 */
static void shm_tell(struct umc_shm_grp *g, int i, uint64_t pos)
{
	struct umc_shm_ring_ctl *ctl = g->follow[i].ring.ctl;
	uint64_t was = g->follow[i].told, want;

	if (g->rslot < 0 || was == pos)
		return;
	g->follow[i].told = pos;
	atomic_store(&g->hdr->readers[g->rslot].pos[i], pos);
	if (!ctl || umc_likely(!atomic_load(&ctl->flow_wait)))
		return;
	want = atomic_load_explicit(&ctl->flow_want, memory_order_relaxed);
	/* Crossed it now (or stopped being read: SHM_NOWHERE is past everything). */
	if (pos >= want && (was < want || was == SHM_NOWHERE)) {
		atomic_fetch_add(&ctl->flow_seq, 1);
		shm_futex_wake(&ctl->flow_seq);
	}
}

/*
 * Follow the senders' rings: a tenancy not followed yet is read from its
 * start (@from_tail false: it began after this reader registered, so all
 * of it may be for it) or from its tail (at registration, for those that
 * were there before).
 */
static void shm_follow_scan(struct umc_shm_grp *g, bool from_tail)
{
	for (int i = 0; i < UMC_SHM_SENDERS; i++) {
		struct shm_sender *s = &g->hdr->senders[i];
		struct shm_follow *f = &g->follow[i];
		uint64_t o = atomic_load(&s->s.owner);

		if (!o || !atomic_load(&s->s.reg_gen)) {
			if (!o && f->owner) {
				f->owner = 0;
				shm_tell(g, i, SHM_NOWHERE);
			}
			continue;
		}
		if (o == f->owner || !ring_at(g, i, &f->ring))
			continue;
		f->owner = o;
		memset(&f->cur, 0, sizeof(f->cur));
		f->cur.min_gen = g->rgen;
		if (from_tail) {
			f->cur.pos = atomic_load_explicit(&f->ring.ctl->tail, memory_order_acquire);
			f->cur.pos -= f->cur.pos % UMC_SHM_ALIGN; /* nonsense is skipped on reading */
		} else {
			f->cur.based = true; /* from seq 0 */
		}
		shm_tell(g, i, f->cur.pos);
	}
}

void umc_shm_reader_publish(struct umc_shm_grp *g)
{
	for (int i = 0; i < UMC_SHM_SENDERS; i++)
		if (g->follow[i].owner)
			shm_tell(g, i, g->follow[i].cur.pos);
}

int umc_shm_reader_join(struct umc_shm_grp *g, int sock_fd, int *wake_fd)
{
	struct shm_reader *r;
	struct stat st;
	uint64_t token;
	int slot, fd;

	if (fstat(sock_fd, &st))
		return -errno;
	/* The rings as they are now: what is written from here on is read. */
	shm_follow_scan(g, true);
	token = shm_token(g);
	slot = shm_claim(g, g->hdr->readers, sizeof(*r), UMC_SHM_READERS, token);
	if (slot < 0)
		return slot;
	r = &g->hdr->readers[slot];
	snprintf(g->wake_path, sizeof(g->wake_path), "%s.w%d-%llu", g->path, slot,
		 (unsigned long long)token);
	unlink(g->wake_path);
	if (mkfifo(g->wake_path, 0600) ||
	    (fd = UMC_FD_NEW(open(g->wake_path, O_RDWR | O_NONBLOCK | O_CLOEXEC), false)) < 0) {
		int ret = -errno;

		unlink(g->wake_path);
		atomic_store(&r->s.owner, 0);
		return ret;
	}
	atomic_fetch_and(&g->hdr->wake_mask, ~(1ull << slot));
	atomic_fetch_and(&g->hdr->woken_mask, ~(1ull << slot));
	atomic_store(&r->sock_ino, (uint64_t)st.st_ino);
	atomic_store(&r->member, 0);
	g->rslot = slot;
	/* Where it reads from, before the senders count it. */
	for (int i = 0; i < UMC_SHM_SENDERS; i++) {
		atomic_store(&r->pos[i], SHM_NOWHERE);
		g->follow[i].told = SHM_NOWHERE;
	}
	umc_shm_reader_publish(g);
	g->rtoken = token;
	g->wake_fd = fd;
	/* Registered: senders that see this generation count this reader. */
	g->rgen = shm_token(g);
	atomic_store(&r->s.reg_gen, token);
	umc_shm_announce(g);
	for (int i = 0; i < UMC_SHM_SENDERS; i++)
		g->follow[i].cur.min_gen = g->rgen;
	/* Rings begun meanwhile: from their start. */
	g->rseen = atomic_load(&g->hdr->gen);
	shm_follow_scan(g, false);
	*wake_fd = fd;
	return 0;
}

void umc_shm_reader_leave(struct umc_shm_grp *g)
{
	struct shm_reader *r;
	uint64_t o;

	if (g->rslot < 0)
		return;
	r = &g->hdr->readers[g->rslot];
	o = g->rtoken;
	atomic_fetch_and(&g->hdr->wake_mask, ~(1ull << g->rslot));
	atomic_store(&r->sock_ino, 0);
	/* No longer to be waited for: senders asleep for it look again. */
	for (int i = 0; i < UMC_SHM_SENDERS; i++)
		if (g->follow[i].owner)
			shm_tell(g, i, SHM_NOWHERE);
	atomic_compare_exchange_strong(&r->s.owner, &o, 0);
	umc_shm_announce(g);
	umc_fd_close(g->wake_fd);
	unlink(g->wake_path);
	g->wake_fd = -1;
	g->rslot = -1;
	memset(g->follow, 0, sizeof(g->follow));
}

void umc_shm_reader_member(struct umc_shm_grp *g, bool member)
{
	if (g->rslot < 0)
		return;
	atomic_store(&g->hdr->readers[g->rslot].member, member);
	umc_shm_announce(g);
}

UMC_HOT
bool umc_shm_read(struct umc_shm_grp *g, struct umc_shm_dgram *d, const struct iovec *iov,
		  int niov, size_t room, uint64_t *lost, uint64_t *corrupt)
{
	uint64_t gen = atomic_load_explicit(&g->hdr->gen, memory_order_acquire);

	if (umc_unlikely(gen != g->rseen)) {
		g->rseen = gen;
		shm_follow_scan(g, false);
	}
	for (int k = 0; k < UMC_SHM_SENDERS; k++) {
		int i = (g->rnext + k) % UMC_SHM_SENDERS;
		struct shm_follow *f = &g->follow[i];
		uint64_t l;

		if (!f->owner)
			continue;
		d->got = umc_shm_ring_get(&f->ring, &f->cur, &d->h, iov, niov, room, &l);
		*lost += l;
		if (d->got == UMC_SHM_CORRUPT) {
			++*corrupt;
			continue;
		}
		if (d->got == UMC_SHM_EMPTY)
			continue;
		/*
		 * A new tenant's record read through the old tenant's cursor
		 * (it took the slot meanwhile) would come again from its start:
		 * dropped here, read once from there.  Its owner is written
		 * before its ring, so a record of it means the owner is seen.
		 */
		if (umc_unlikely(atomic_load(&g->hdr->senders[i].s.owner) != f->owner)) {
			f->owner = 0;
			shm_tell(g, i, SHM_NOWHERE);
			g->rseen = 0;
			continue;
		}
		g->rnext = i; /* this ring to its end first: its datagrams stay in order */
		return true;
	}
	return false;
}

/*
 * Is a datagram waiting in any ring this reader follows, or may one be in
 * a ring it does not follow yet (the slots changed since it looked)?
 */
static bool shm_pending(struct umc_shm_grp *g)
{
	if (atomic_load(&g->hdr->gen) != g->rseen)
		return true;
	for (int i = 0; i < UMC_SHM_SENDERS; i++)
		if (g->follow[i].owner && umc_shm_ring_pending(&g->follow[i].ring, &g->follow[i].cur))
			return true;
	return false;
}

/* Write the byte that wakes reader @slot, once until it runs (its bit in woken_mask). */
static void shm_wake(struct umc_shm_grp *g, int slot, int fd)
{
	static const char one = 1;
	uint64_t bit = 1ull << slot;

	if (atomic_fetch_or(&g->hdr->woken_mask, bit) & bit)
		return;
	if (umc_sys_write(fd, &one, 1) < 0) {
		/* EAGAIN: the FIFO is full, so the reader is woken anyway. */
	}
}

void umc_shm_reader_arm(struct umc_shm_grp *g, bool on)
{
	uint64_t bit;

	if (g->rslot < 0)
		return;
	bit = 1ull << g->rslot;
	if (!on) {
		if (atomic_load_explicit(&g->hdr->wake_mask, memory_order_relaxed) & bit)
			atomic_fetch_and(&g->hdr->wake_mask, ~bit);
		return;
	}
	if (!(atomic_load_explicit(&g->hdr->wake_mask, memory_order_relaxed) & bit))
		atomic_fetch_or(&g->hdr->wake_mask, bit);
	atomic_thread_fence(memory_order_seq_cst);
	if (shm_pending(g))
		shm_wake(g, g->rslot, g->wake_fd);
}

void umc_shm_reader_woken(struct umc_shm_grp *g)
{
	uint64_t bit;
	char buf[64];

	if (g->rslot < 0)
		return;
	bit = 1ull << g->rslot;
	if (!(atomic_load_explicit(&g->hdr->woken_mask, memory_order_relaxed) & bit))
		return;
	/*
	 * Emptied first, cleared after: a byte written meanwhile may be read
	 * here with its bit, never its bit left set without its byte (no
	 * sender would write again).
	 */
	while (umc_sys_read(g->wake_fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
	atomic_fetch_and(&g->hdr->woken_mask, ~bit);
}

/* ------------------------------------------------------------------------- */
/* Sending.                                                                  */

void umc_shm_send_lock(struct umc_shm_grp *g)
{
	pthread_mutex_lock(&g->send_lock);
}

void umc_shm_send_unlock(struct umc_shm_grp *g)
{
	pthread_mutex_unlock(&g->send_lock);
}

static uint64_t shm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Take a sender slot and start its ring empty.  Returns false when none is free. */
static bool shm_sender_take(struct umc_shm_grp *g)
{
	uint64_t token = shm_token(g);
	int slot = shm_claim(g, g->hdr->senders, sizeof(struct shm_sender), UMC_SHM_SENDERS, token);

	if (slot < 0)
		return false;
	if (!ring_at(g, slot, &g->sring)) {
		atomic_store(&g->hdr->senders[slot].s.owner, 0);
		return false;
	}
	g->sslot = slot;
	g->stoken = token;
	g->smin = 0;
	memset(g->waiting, 0, sizeof(g->waiting));
	memset(g->gave_up_ms, 0, sizeof(g->gave_up_ms));
	umc_shm_ring_reset(&g->sring);
	atomic_store(&g->sring.ctl->flow_wait, 0);
	/* Nobody reads this tenancy yet: no position left from the one before. */
	for (int j = 0; j < UMC_SHM_READERS; j++)
		atomic_store(&g->hdr->readers[j].pos[slot], SHM_NOWHERE);
	g->sreg = shm_token(g);
	atomic_store(&g->hdr->senders[slot].s.reg_gen, g->sreg);
	umc_shm_announce(g); /* after reg_gen: a reader that sees this generation sees the ring */
	return true;
}

/*
 * Ask the kernel: ring mode while every socket that receives the group is
 * a registered reader's, and a registered reader holds the membership.
 */
static bool shm_decide(struct umc_shm_grp *g)
{
	uint64_t inodes[UMC_SHM_READERS];
	bool member = false;
	int n = 0;

	for (int i = 0; i < UMC_SHM_READERS; i++) {
		struct shm_reader *r = &g->hdr->readers[i];

		if (!atomic_load(&r->s.owner) || !atomic_load(&r->s.reg_gen))
			continue;
		inodes[n] = atomic_load(&r->sock_ino);
		if (!inodes[n])
			continue;
		member |= atomic_load(&r->member) != 0;
		n++;
	}
	return member && umc_shm_peers_ok(&g->key, inodes, n) == 1;
}

UMC_HOT
bool umc_shm_ring_mode(struct umc_shm_grp *g, uint64_t *gen)
{
	uint64_t cur = atomic_load(&g->hdr->gen), now = shm_now_ms();

	*gen = cur;
	if (umc_likely(cur == g->sseen) && now < g->snext_ms)
		return g->smode;
	/* Reads the system under the send lock: not a cancellation point (umc_sys.h). */
	int cs = umc_cancel_off();
	bool ring = shm_decide(g);

	g->sseen = cur;
	g->snext_ms = now + UMC_SHM_RECHECK_MS;
	if (ring && g->sslot < 0 && now >= g->stake_ms && !shm_sender_take(g))
		g->stake_ms = now + UMC_SHM_GRACE_MS; /* no slot free, or no room */
	g->smode = ring && g->sslot >= 0;
	umc_cancel_restore(cs);
	return g->smode;
}

/* Reader @slot's FIFO for writing, opened once per registration (-1: none). */
static int shm_wake_fd(struct umc_shm_grp *g, int slot)
{
	struct shm_reader *r = &g->hdr->readers[slot];
	uint64_t token = atomic_load(&r->s.owner);
	char path[sizeof(g->path) + 32];

	if (g->wfd[slot] >= 0 && g->wfd_gen[slot] == token)
		return g->wfd[slot];
	if (g->wfd[slot] >= 0)
		umc_fd_close(g->wfd[slot]);
	snprintf(path, sizeof(path), "%s.w%d-%llu", g->path, slot, (unsigned long long)token);
	/* O_NONBLOCK: ENXIO rather than a wait when nobody reads it. */
	g->wfd[slot] = UMC_FD_NEW(umc_sys_open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC), false);
	g->wfd_gen[slot] = token;
	return g->wfd[slot];
}

/* Wake the readers that sleep and have not been woken yet. */
static void shm_wake_sleepers(struct umc_shm_grp *g)
{
	uint64_t m;

	atomic_thread_fence(memory_order_seq_cst);
	m = atomic_load_explicit(&g->hdr->wake_mask, memory_order_relaxed) &
	    ~atomic_load_explicit(&g->hdr->woken_mask, memory_order_relaxed);
	while (umc_unlikely(m)) {
		int slot = __builtin_ctzll(m);
		int fd = shm_wake_fd(g, slot);

		m &= m - 1;
		if (fd >= 0)
			shm_wake(g, slot, fd);
	}
}

/*
 * The sender must wait for reader @j, at @p: is it slow (shm.h)?  Its
 * mark moves to now when the wait begins, and whenever it has read a
 * 1/UMC_SHM_PROGRESS_DIV of the ring more since the mark; it is slow
 * when the mark is UMC_SHM_WAIT_MS old.  A position that went back (only
 * a corrupt file does that) is no progress.
 */
static bool shm_slow(struct umc_shm_grp *g, int j, uint64_t p, uint64_t now)
{
	uint64_t q = g->ring_size / UMC_SHM_PROGRESS_DIV;

	if (!g->waiting[j] || (p > g->mark_pos[j] && p - g->mark_pos[j] >= q)) {
		g->waiting[j] = true;
		g->mark_pos[j] = p;
		g->mark_ms[j] = now;
	}
	return now - g->mark_ms[j] >= UMC_SHM_WAIT_MS;
}

/*
 * Flow control (shm.h): the record about to be put ends at @end and
 * overwrites what lies before @end - ring size.  Readers that follow this
 * ring, are less than a ring behind and have not read that far are woken
 * and waited for, asleep, until each has read to a 1/UMC_SHM_PROGRESS_DIV
 * of the ring further (or to the tail), so that the sender then writes
 * that much before it looks again.  One that makes no such progress in
 * UMC_SHM_WAIT_MS while it is waited for is given up on: overwritten, and
 * not waited for during UMC_SHM_GRACE_MS unless it catches up (less than
 * half a ring behind: it was held up, not stopped).  Positions read from
 * the file only make the sender wait or not, never past those bounds.
 */
static void shm_flow(struct umc_shm_grp *g, uint64_t end)
{
	struct umc_shm_ring_ctl *ctl = g->sring.ctl;
	uint64_t lim = end - g->ring_size, target = lim;
	bool woke = false, armed = false;
	uint32_t seq = 0;

	for (;;) {
		uint64_t t = atomic_load_explicit(&ctl->tail, memory_order_relaxed);
		uint64_t low = t, now = shm_now_ms(), until = UINT64_MAX;

		for (int j = 0; j < UMC_SHM_READERS; j++) {
			struct shm_reader *r = &g->hdr->readers[j];
			uint64_t p;

			if (!atomic_load_explicit(&r->s.owner, memory_order_relaxed))
				continue;
			p = atomic_load(&r->pos[g->sslot]);
			/* Registered before this ring began, and yet to find it: it reads it from 0. */
			if (p == SHM_NOWHERE && atomic_load_explicit(&r->s.reg_gen, memory_order_relaxed) &&
			    atomic_load_explicit(&r->s.reg_gen, memory_order_relaxed) < g->sreg)
				p = 0;
			if (p > t || t - p > g->ring_size)
				continue; /* not reading this ring, or already lapped */
			if (g->gave_up_ms[j] && now - g->gave_up_ms[j] < UMC_SHM_GRACE_MS) {
				if (t - p >= g->ring_size / 2)
					continue;
				g->gave_up_ms[j] = 0; /* it caught up: waited for again */
			}
			if (p < target && shm_slow(g, j, p, now)) {
				g->gave_up_ms[j] = now; /* it loses what is overwritten */
				g->waiting[j] = false;
				g->sgave_up++;
				continue;
			}
			low = p < low ? p : low;
			if (p >= target)
				g->waiting[j] = false;
			else if (g->mark_ms[j] + UMC_SHM_WAIT_MS < until)
				until = g->mark_ms[j] + UMC_SHM_WAIT_MS;
		}
		if (until == UINT64_MAX) {
			g->smin = low;
			break;
		}
		if (!woke) {
			shm_wake_sleepers(g); /* what they have not read yet wakes them */
			woke = true;
		}
		if (!armed) {
			/* Some room past what the record needs, so as not to wait at every record. */
			target = lim + g->ring_size / UMC_SHM_PROGRESS_DIV;
			target = target < t ? target : t;
			atomic_store_explicit(&ctl->flow_want, target, memory_order_relaxed);
			atomic_store(&ctl->flow_wait, 1);
			armed = true;
		} else {
			shm_futex_wait(&ctl->flow_seq, seq, until > now ? until - now : 1);
		}
		/* The positions once more, after @flow_seq: a crossing from here on wakes us. */
		seq = atomic_load(&ctl->flow_seq);
	}
	if (armed)
		atomic_store_explicit(&ctl->flow_wait, 0, memory_order_relaxed);
}

UMC_HOT
int umc_shm_send(struct umc_shm_grp *g, struct umc_shm_rec *h, const struct iovec *iov, int niov,
		 size_t dlen)
{
	uint64_t end = umc_shm_ring_end(&g->sring, dlen);

	if (umc_unlikely(end > g->ring_size && end - g->ring_size > g->smin))
		shm_flow(g, end);
	return umc_shm_ring_put(&g->sring, h, iov, niov, dlen);
}

UMC_HOT
unsigned umc_shm_send_done(struct umc_shm_grp *g)
{
	unsigned gave_up = g->sgave_up;

	shm_wake_sleepers(g);
	g->sgave_up = 0;
	return gave_up;
}
