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
 * Creating or destroying a QP waits for the host's unicast demultiplexer
 * to answer with the device's locks held, in recv(2), poll(2), connect(2)
 * and sendmsg(2), which are cancellation points (pthreads(7)).  A thread
 * cancelled there would leave those locks held, and no QP of the device
 * could be created or destroyed again.  Those link calls run with
 * cancellation disabled, as glibc's own functions do around their
 * internal locks: a cancel that comes meanwhile stays pending and takes
 * effect at the thread's next cancellation point after the call.
 */
#include <signal.h>

#include "umc_int.h"

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
