// SPDX-License-Identifier: MIT
/*
 * thread.c - starting the library's own threads.
 *
 * libibverbs and librdmacm start no threads, so a program may block a
 * signal in its own threads and take it with signalfd(2) or sigwait(3),
 * or leave it unblocked in one thread only, and rely on that thread
 * getting it.  A process-directed signal goes to any thread that does not
 * block it (signal(7)), so each thread umcast starts blocks every signal
 * from its first instruction: the mask is set in the creating thread
 * around pthread_create(3), which the new thread inherits, and the
 * creator's own mask is put back.
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
