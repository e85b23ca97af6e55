// SPDX-License-Identifier: MIT
/*
 * thread.c - starting the library's own threads, and the application's
 * threads' cancellation while the library holds its locks.
 *
 * libibverbs and librdmacm start no threads, so a program may block a
 * signal in its own threads and take it with signalfd(2) or sigwait(3),
 * or leave it unblocked in one thread only, and rely on that thread
 * getting it.  A process-directed signal goes to any thread that does not
 * block it (signal(7)), so each thread umcast starts blocks every signal
 * from its first instruction: the mask is set in the creating thread
 * around pthread_create(3), which the new thread inherits, and the
 * creator's own mask is put back.
 *
 * A program may pthread_cancel(3) a thread that is inside one of the
 * library's calls.  libibverbs and librdmacm wait only in the kernel and
 * hold no lock of theirs there; a call of ours must likewise never end in
 * a cancellation point (pthreads(7)) with one of our locks held, or with
 * a waiter on its stack that another thread will still write.  So:
 *  - the data path's system calls under a lock are raw (umc_sys.h), and
 *    so are the fork handler's (verbs/fork.c), which run inside every
 *    fork() of the program;
 *  - a stretch that waits or reads the system with a lock held, or leaves
 *    a waiter on its stack, runs with cancellation disabled, as glibc's own
 *    functions do around their internal locks: creating and destroying a
 *    QP (the host's unicast demultiplexer, with the device's locks or the
 *    address's ctl_lock held), a probe of the devices (getifaddrs(3), /sys,
 *    an InfiniBand port's registration with the SA), an rdma_* call while
 *    it holds its id's lock (route lookups by connect(2), joins and leaves
 *    through the SA), the SA client's waits, and ibv_reg_mr's read of
 *    /proc/self/maps.  A cancel that comes meanwhile stays pending and
 *    takes effect at the thread's next cancellation point after the call;
 *  - the calls that wait for the application or the network stay
 *    cancellation points, as libibverbs' and librdmacm's read(2) of the
 *    channel is, holding no lock there: a blocking ibv_get_cq_event,
 *    rdma_get_cm_event (and an rdma_* call on a synchronous id, which
 *    waits for its event the same way), and rdma_getaddrinfo's name lookup.
 *    Cleanup handlers drop what they hold: rdma_get_cm_event its channel
 *    reference, rdma_getaddrinfo its result so far (the library is built
 *    with -fexceptions, so that the handlers run when a cancel unwinds).
 */
#include <signal.h>

#include "verbs/verbs_int.h"

int umc_thread_start(pthread_t *tid, bool detached, void *(*fn)(void *), void *arg,
		     const char *name)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int ret;

	pthread_attr_init(&attr);
	if (detached)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&t, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (ret)
		return -ret;
	pthread_setname_np(t, name);
	if (tid)
		*tid = t;
	return 0;
}

int umc_cancel_off(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

void umc_cancel_restore(int old)
{
	pthread_setcancelstate(old, NULL);
}
