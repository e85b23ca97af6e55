/* SPDX-License-Identifier: MIT */
/*
 * umc_sys.h - the system calls of the data path (polling, posting,
 * raising and taking events), which run with one of the library's locks
 * held, made raw (syscall(2)) so that none is a cancellation point.
 *
 * glibc's wrappers of recvmmsg, sendmmsg, epoll_wait, write, recv, send
 * and close are cancellation points (pthreads(7)).  A thread cancelled
 * inside one of them while the receive engine holds dev->rx_lock, a post
 * holds a QP's sq_lock, or an event is queued under a channel's lock
 * would leave that lock held for good: the device would stop receiving,
 * the QP sending.  libibverbs' ibv_poll_cq and ibv_post_send make no such
 * call at all, and programs cancel their completion threads at shutdown,
 * so ours must not either.  The calls that wait for the application (a
 * blocking ibv_get_cq_event or rdma_get_cm_event) hold no lock and stay
 * cancellation points, as libibverbs' read(2) of the channel is.
 *
 * Setting up and tearing down still uses the wrappers; a stretch of it
 * that waits with a lock held runs with cancellation disabled instead
 * (umc_cancel_off(); thread.c lists them).
 *
 * Same arguments, result and errno as the wrappers.  The raw calls also
 * skip the wrappers' two atomic updates of the thread's cancellation
 * state.  An LD_PRELOAD library that wraps the socket calls sees these
 * only through syscall(2) (bench/critpath.c wraps that too).
 */
#ifndef UMC_SYS_H
#define UMC_SYS_H

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int umc_sys_recvmmsg(int fd, struct mmsghdr *msg, unsigned n, int flags)
{
	return (int)syscall(SYS_recvmmsg, fd, msg, n, flags, NULL);
}

static inline int umc_sys_sendmmsg(int fd, struct mmsghdr *msg, unsigned n, int flags)
{
	return (int)syscall(SYS_sendmmsg, fd, msg, n, flags);
}

/* epoll_wait(2) with timeout 0: what is ready now. */
static inline int umc_sys_epoll_poll(int epfd, struct epoll_event *ev, int max)
{
	return (int)syscall(SYS_epoll_pwait, epfd, ev, max, 0, NULL, (size_t)(_NSIG / 8));
}

static inline ssize_t umc_sys_write(int fd, const void *buf, size_t len)
{
	return syscall(SYS_write, fd, buf, len);
}

static inline ssize_t umc_sys_read(int fd, void *buf, size_t len)
{
	return syscall(SYS_read, fd, buf, len);
}

static inline ssize_t umc_sys_recv(int fd, void *buf, size_t len, int flags)
{
	return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

static inline ssize_t umc_sys_send(int fd, const void *buf, size_t len, int flags)
{
	return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

/* The engine closes descriptors it is handed (unicast control) and fails to use. */
static inline int umc_sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

/* open(2), for a child of fork's handler (verbs/fork.c). */
static inline int umc_sys_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0);
}

#endif
