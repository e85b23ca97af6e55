/* SPDX-License-Identifier: MIT */
/*
 * fork.c - a child of fork(2) is a new HCA.
 *
 * Each process is its own HCA (docs/design.md), so a child of fork gets a
 * device of its own on first use, as a process that was started afresh
 * would: a fresh device list (another GUID, QPNs from its own pid), its own
 * sockets, epoll, eventfd and receive thread.  What the parent made before
 * the fork stays the parent's.  In the child:
 *
 *   - every process-wide lock is consistent: each is taken before the fork,
 *     all in their rank order (enum umc_lock_rank), and released after it
 *     on both sides (UMC_ATFORK_MUTEX), so the child never waits for a
 *     thread that it does not have, and the fork never waits against a
 *     thread that holds one of them and wants the next;
 *   - the descriptors the library opened (group and send sockets, the
 *     unicast demultiplexer's connections and sockets, the sockets that
 *     hold QPNs, epoll instances, eventfds, channel socketpairs) are
 *     closed, so the child never reads the parent's sockets, never
 *     changes the parent's epoll interest lists and never keeps the
 *     parent's sockets alive.  An IP
 *     membership belongs to the socket, which the parent still holds, so
 *     closing the child's copy leaves the parent a member.  The two numbers
 *     the application can see, a completion channel's fd and an event
 *     channel's fd, become /dev/null instead of going away, so that they
 *     stay valid and never come to name another descriptor of the child;
 *   - umc_fork_gen moves on: every object made before the fork carries the
 *     old value, and the verbs and rdma_* calls fail with EIO on it at once,
 *     taking no lock and touching no descriptor.  The data path of the
 *     parent's contexts is replaced (umc_ctx_forked_ops; device.c does it), so
 *     the hot path carries no test for this.
 *
 * None of this needs ibv_fork_init(): no memory is ever pinned for DMA, so
 * there is nothing to protect from copy-on-write, and RDMAV_FORK_SAFE /
 * IBV_FORK_SAFE change nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs/verbs_int.h"

unsigned umc_fork_gen;

/* ------------------------------------------------------------------------- */
/* The process-wide mutexes, taken by fork(2) in rank order (umc_lock.h).    */

static struct {
	pthread_mutex_t *m;
	void (*child)(void);
} umc_atfork_locks[UMC_LOCK_RANKS];

void umc_atfork_register(enum umc_lock_rank rank, pthread_mutex_t *m, void (*child)(void))
{
	umc_atfork_locks[rank].m = m;
	umc_atfork_locks[rank].child = child;
}

static void umc_atfork_prepare(void)
{
	for (int i = 0; i < UMC_LOCK_RANKS; i++)
		if (umc_atfork_locks[i].m)
			pthread_mutex_lock(umc_atfork_locks[i].m);
}

static void umc_atfork_parent(void)
{
	for (int i = UMC_LOCK_RANKS - 1; i >= 0; i--)
		if (umc_atfork_locks[i].m)
			pthread_mutex_unlock(umc_atfork_locks[i].m);
}

/* Every reset first, with every lock held, then the locks. */
static void umc_atfork_child(void)
{
	for (int i = UMC_LOCK_RANKS - 1; i >= 0; i--)
		if (umc_atfork_locks[i].child)
			umc_atfork_locks[i].child();
	umc_atfork_parent();
}

/*
 * One registration for them all.  The per-mutex constructors only fill
 * the table, so the order in which the constructors run does not matter.
 */
__attribute__((constructor)) static void umc_atfork_init(void)
{
	pthread_atfork(umc_atfork_prepare, umc_atfork_parent, umc_atfork_child);
}

/* ------------------------------------------------------------------------- */
/* The library's descriptors.                                                */

enum { UMC_FD_NONE, UMC_FD_INTERNAL, UMC_FD_USER };

static pthread_mutex_t umc_fd_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *umc_fd_kind; /* indexed by descriptor number */
static size_t umc_fd_cap;

static int umc_fd_cancel_old; /* the holder's cancel state (umc_fd_lock) */

/* Record @fd (umc_fd_lock held). */
static void __umc_fd_record(int fd, bool user_visible)
{
	if (fd < 0)
		return;
	if ((size_t)fd >= umc_fd_cap) {
		size_t cap = umc_fd_cap ? umc_fd_cap : 256;

		while (cap <= (size_t)fd)
			cap *= 2;
		uint8_t *grown = realloc(umc_fd_kind, cap);

		if (!grown)
			return;
		memset(grown + umc_fd_cap, 0, cap - umc_fd_cap);
		umc_fd_kind = grown;
		umc_fd_cap = cap;
	}
	umc_fd_kind[fd] = user_visible ? UMC_FD_USER : UMC_FD_INTERNAL;
}

void umc_fd_begin(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	umc_mutex_lock(&umc_fd_lock, UMC_LOCK_FD);
	umc_fd_cancel_old = old;
}

int umc_fd_end(int fd, bool user_visible)
{
	int err = errno, old = umc_fd_cancel_old;

	__umc_fd_record(fd, user_visible);
	umc_mutex_unlock(&umc_fd_lock);
	pthread_setcancelstate(old, NULL);
	errno = err;
	return fd;
}

void umc_fd_begin_raw(void)
{
	umc_mutex_lock(&umc_fd_lock, UMC_LOCK_FD);
}

void umc_fd_record(int fd)
{
	__umc_fd_record(fd, false);
}

void umc_fd_end_raw(void)
{
	umc_mutex_unlock(&umc_fd_lock);
}

int umc_fd_socketpair(int domain, int type, int sv[2], bool user_visible0)
{
	int ret;

	umc_fd_begin();
	ret = socketpair(domain, type, 0, sv) ? -errno : 0;
	if (!ret)
		__umc_fd_record(sv[1], false);
	umc_fd_end(ret ? -1 : sv[0], user_visible0);
	return ret;
}

void umc_fd_close(int fd)
{
	if (fd < 0)
		return;
	/* Under the lock: a fork never sees the number forgotten but still open. */
	umc_mutex_lock(&umc_fd_lock, UMC_LOCK_FD);
	if ((size_t)fd < umc_fd_cap)
		umc_fd_kind[fd] = UMC_FD_NONE;
	umc_sys_close(fd); /* also from the receive engine, under rx_lock */
	umc_mutex_unlock(&umc_fd_lock);
}

/*
 * In the child (one thread, umc_fd_lock held): close the parent's
 * descriptors; put /dev/null where the application holds a number.  Only
 * async-signal-safe calls, as a child of a multi-threaded process needs,
 * and raw ones: this runs inside every fork() of the program, and a
 * thread that forks with a cancel pending must not be ended here, before
 * fork() even returns in the child (glibc's open and close are
 * cancellation points).
 */
static void umc_fds_forked(void)
{
	int null_fd = umc_sys_open("/dev/null", O_RDONLY | O_CLOEXEC);

	for (size_t fd = 0; fd < umc_fd_cap; fd++) {
		if (umc_fd_kind[fd] == UMC_FD_USER && null_fd >= 0)
			dup3(null_fd, (int)fd, O_CLOEXEC);
		else if (umc_fd_kind[fd] != UMC_FD_NONE)
			umc_sys_close((int)fd);
		umc_fd_kind[fd] = UMC_FD_NONE;
	}
	if (null_fd >= 0)
		umc_sys_close(null_fd);
}

/* Everything a child does before fork() returns in it. */
static void umc_forked_child(void)
{
	umc_fork_gen++;
	umc_fds_forked();
}

UMC_ATFORK_MUTEX(umc_fd_lock, UMC_LOCK_FD, umc_forked_child)

/* ------------------------------------------------------------------------- */
/* The data path of the parent's objects in a child.                         */

static int umc_forked_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return -EIO;
}

static int umc_forked_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return umc_pos_errno(-EIO);
}

static int umc_forked_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
				struct ibv_send_wr **bad_wr)
{
	*bad_wr = wr;
	return umc_pos_errno(-EIO);
}

static int umc_forked_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
				struct ibv_recv_wr **bad_wr)
{
	*bad_wr = wr;
	return umc_pos_errno(-EIO);
}

void umc_ctx_forked_ops(struct ibv_context *ctx)
{
	ctx->ops.poll_cq = umc_forked_poll_cq;
	ctx->ops.req_notify_cq = umc_forked_req_notify_cq;
	ctx->ops.post_send = umc_forked_post_send;
	ctx->ops.post_recv = umc_forked_post_recv;
}

/* ------------------------------------------------------------------------- */
/* rdma-core's fork API (ibv_fork_init(3), ibv_is_fork_initialized(3)).      */

/**
 * ibv_fork_init - prepare for fork(2).  umcast is always ready: it pins no
 * memory for DMA (so it needs no MADV_DONTFORK) and a child of fork is a
 * new HCA of its own (umcast(7), FORK).
 *
 * Return: 0.  ibv_fork_init(3).
 */
UMC_EXPORT int ibv_fork_init(void)
{
	return 0;
}

/**
 * ibv_is_fork_initialized - IBV_FORK_UNNEEDED: what libibverbs answers when
 * the kernel copies DMA pages on fork; umcast has no DMA pages at all.
 * ibv_is_fork_initialized(3).
 */
UMC_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}
