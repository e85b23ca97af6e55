/* SPDX-License-Identifier: MIT */
/*
 * umc_int.h - what every layer of libumcast needs: symbol visibility,
 * container_of, the fork(2) generation, the descriptor registry, the
 * library's threads, cancellation and the process-wide locks.  Never
 * installed.
 *
 * Layers, each above the next (docs/design.md):
 *   cm/     RDMA CM ids, event channels, join/leave; the join code per link
 *           layer; uses the verbs core, never packets.
 *   verbs/  devices, PD, MR, CQ, QP, AH, multicast attach; the receive
 *           progress engine (progress.c) that turns datagrams into
 *           completions.
 *   link/   one struct umc_link_ops per link layer (link/link.h): ports,
 *           address handles, group reception, packets; sockets only there.
 *   sa/     the SA client of an InfiniBand port (below link/ib and cm/).
 *   wire/   pure codecs (wire.h).
 *
 * Each layer has its own header on top of this one:
 *   link/driver.h      what a link layer may use of the verbs core: the
 *                      device, QP, AH and group it extends or reads, the
 *                      counters, port events, the receive engine's
 *                      registration (as rdma-core's libibverbs/driver.h
 *                      for providers)
 *   verbs/verbs_int.h  the verbs core's private objects (context, PD, MR,
 *                      CQ, completion channel, receive rings, progress);
 *                      the CM, above the core, includes it too
 *   cm/cm_int.h, sa/sa_int.h, the link's own headers
 *
 * Conventions: internal functions return 0 or a negative errno, and the
 * public calls convert it in one place (umc_err.h); public symbols are
 * marked UMC_EXPORT, everything else is hidden.
 */
#ifndef UMC_INT_H
#define UMC_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "umc_cc.h"
#include "umc_err.h"
#include "umc_lock.h"
#include "umc_param.h"
#include "umc_sys.h"

#define UMC_EXPORT __attribute__((visibility("default")))

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/* ------------------------------------------------------------------------- */
/* fork(2) (fork.c).  A child of fork is a new HCA: a fresh device list,     */
/* its own descriptors and threads.  Everything made before the fork         */
/* belongs to the parent and gives EIO in the child (umcast(7), FORK).       */

/* Bumped in every child of fork: an object made in generation g is the parent's when g differs. */
extern unsigned umc_fork_gen;

static inline bool umc_forked(unsigned gen)
{
	return umc_unlikely(gen != umc_fork_gen);
}

/*
 * The library's descriptors are recorded as they are made, so that a child
 * of fork closes them (fork.c).  Making and recording are one step under
 * the registry's lock, which fork(2) takes too (UMC_LOCK_FD), so no fork in
 * another thread falls between them and leaves the child a copy unrecorded.
 *
 * UMC_FD_NEW(call, user_visible) - evaluate @call, one call that makes one
 * descriptor (socket(2), accept4(2), epoll_create1(2), eventfd(2),
 * fcntl(F_DUPFD_CLOEXEC), umc_link_socket), and record what it made.  Its
 * value is @call's; a failure (-1 with errno, or -errno) passes through,
 * errno kept.  @user_visible: the application can see the number (a
 * channel's fd), so the child gets /dev/null at that number instead, which
 * stays valid and never names another descriptor.  Cancellation is off
 * meanwhile.  @call must take none of the library's locks.  Best effort: a
 * descriptor that cannot be recorded (no memory) stays open, unused, in a
 * child.  Context: any thread, no process-wide lock but UMC_LOCK_DEVS held.
 *
 * umc_fd_begin(), umc_fd_end(@fd, @user_visible) - the same around a
 * stretch that makes its descriptor some other way (one received with
 * SCM_RIGHTS); umc_fd_end returns @fd.
 *
 * umc_fd_begin_raw(), umc_fd_end_raw() - the same for a stretch that makes
 * only raw system calls (umc_sys.h), so no cancellation point: the
 * registry's lock alone, without umc_fd_begin's two updates of the
 * cancellation state (the receive engine's read of the unicast input).
 *
 * umc_fd_record - in either stretch, record one more internal descriptor
 * (-1: none): those a batch of received datagrams carried (SCM_RIGHTS).
 *
 * umc_fd_socketpair - socketpair(2) so: 0 or -errno; sv[0] user-visible
 * when @user_visible0, sv[1] never.
 *
 * umc_fd_close - forget @fd and close it, both at once for fork.
 */
#define UMC_FD_NEW(call, user_visible) (umc_fd_begin(), umc_fd_end((call), (user_visible)))
void umc_fd_begin(void);
int umc_fd_end(int fd, bool user_visible);
void umc_fd_begin_raw(void);
void umc_fd_record(int fd);
void umc_fd_end_raw(void);
int umc_fd_socketpair(int domain, int type, int sv[2], bool user_visible0);
void umc_fd_close(int fd);

/*
 * umc_thread_start - start a thread of the library's own, running
 * @fn(@arg), named @name (at most 15 characters, as ps -L and gdb show it),
 * detached if @detached, its handle in *@tid if @tid is not NULL.  It
 * blocks every signal: the application's are for its own threads
 * (thread.c).  Returns 0 or -errno (pthread_create's: -EAGAIN).
 */
int umc_thread_start(pthread_t *tid, bool detached, void *(*fn)(void *), void *arg,
		     const char *name);

/*
 * umc_cancel_off - disable the calling thread's cancellation for a stretch
 * a cancel must not end: a wait or a read of the system with one of the
 * library's locks held, a waiter on the stack, an event being processed
 * (thread.c lists them).  Returns the state to give umc_cancel_restore()
 * afterwards; the pairs nest.
 */
int umc_cancel_off(void);
void umc_cancel_restore(int old);

/*
 * UMC_ATFORK_MUTEX - the process-wide mutex @m, of rank @rank (enum
 * umc_lock_rank), is taken by fork(2): every such mutex, in rank order,
 * released after it on both sides (the usual pthread_atfork(3)
 * discipline), so a child never finds one held by a thread it does not
 * have, and a fork never waits against a thread that holds one and wants
 * another.  @child (a void (*)(void), or NULL) runs in the child while
 * every such mutex is still held, to reset what @m protects.
 */
#define UMC_ATFORK_MUTEX(m, rank, child)                                                           \
	__attribute__((constructor)) static void m##_atfork_register(void)                         \
	{                                                                                          \
		umc_atfork_register(rank, &m, child);                                              \
	}
void umc_atfork_register(enum umc_lock_rank rank, pthread_mutex_t *m, void (*child)(void));

#endif /* UMC_INT_H */
