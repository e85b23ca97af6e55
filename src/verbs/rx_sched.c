/* SPDX-License-Identifier: MIT */
/*
 * rx_sched.c - what the background receive thread (rx_thread.c) asks of
 * the scheduler: whether the application receives by itself, whether its
 * thread only waits for a CPU, and the thread's own scheduling policy.
 *
 * The thread stands in for an application that has not run the engine for
 * a whole idle period, but not for one whose thread is only waiting for
 * its turn on a CPU (umc_app_waiting).  While it only looks (until it
 * decides to stand in) the thread runs at SCHED_BATCH, so its wake-ups
 * never preempt a busy receiver on its CPU (umc_rx_policy).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "verbs/rx_int.h"

/*
 * Is the application receiving by itself?  Yes if one of its threads runs
 * the engine during the next @us microseconds, which the thread sleeps.
 */
bool umc_app_receiving(struct umc_device *dev, long us)
{
	unsigned long gen = atomic_load_explicit(&dev->rx_app_gen, memory_order_relaxed);
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return atomic_load_explicit(&dev->rx_app_gen, memory_order_relaxed) != gen;
}

/*
 * The scheduler's state letter of this process's thread @tid (proc(5),
 * /proc/self/task/TID/stat: R running or runnable, S asleep, ...); 0 if it
 * cannot be read (no /proc, the thread is gone).
 */
static char umc_task_state(int tid)
{
	char path[64], buf[512];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	p = strrchr(buf, ')'); /* the name before it may hold anything */
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * The CPU time of this process's thread @tid so far (ns), counted up to
 * now even while it runs; false if the thread is gone.  The clock is the
 * one pthread_getcpuclockid(3) gives for it, made from the thread ID as
 * glibc makes it (Linux: ~tid << 3, per-thread, scheduler clock), so a
 * thread that has exited is an error, not a dangling pthread_t.
 */
static bool umc_task_cputime(int tid, uint64_t *ns)
{
	enum { CPUCLOCK_PERTHREAD = 4, CPUCLOCK_SCHED = 2 };
	clockid_t clk = (clockid_t)(~(unsigned)tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED);
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return false;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return true;
}

/*
 * Is the application thread that last ran the engine only waiting for its
 * turn on a CPU?  Called when it has not run the engine for a whole idle
 * period: a busy poller that got a CPU at all would have.  It is if it is
 * runnable and, during UMC_RX_PROBE_US more, either runs the engine (its
 * turn came) or gets less than a tenth of that on a CPU.  Busy receivers
 * that share a CPU wait so for their turns; a stand-in that ran meanwhile
 * would join the CPU's rotation and make every other receiver's turn come
 * later, past what its socket buffer holds (bench/README.md, "Fan-out and
 * the background receive thread").  An application asleep, or computing
 * (CPU time without the engine), is away, and so is one whose thread
 * cannot be seen.
 */
bool umc_app_waiting(struct umc_device *dev)
{
	int tid = atomic_load_explicit(&dev->rx_app_tid, memory_order_relaxed);
	uint64_t t0, t1;

	if (!tid || umc_task_state(tid) != 'R' || !umc_task_cputime(tid, &t0))
		return false;
	if (umc_app_receiving(dev, UMC_RX_PROBE_US))
		return true;
	return umc_task_cputime(tid, &t1) && t1 - t0 < UMC_RX_PROBE_US * 100u &&
	       umc_task_state(tid) == 'R';
}

/*
 * The receive thread's scheduling policy: SCHED_BATCH while it only looks
 * at the application, SCHED_OTHER while it stands in; *@batch says which
 * it has, @want which it should.  A sleeper that wakes at SCHED_OTHER
 * preempts the thread running on its CPU (the kernel favours wake-ups), so
 * every look cut a busy receiver's turn short on a CPU that receivers
 * share, and the scheduler, evening the turns out, then ran another
 * receiver twice while one waited longer than its socket buffer holds
 * (the figures: bench/README.md, "Fan-out and the background receive
 * thread").  At SCHED_BATCH a look waits for the running turn to
 * end.  Standing in, the thread competes as before, so a program that
 * computes on its CPU is stood in for as soon as before.
 *
 * The thread moves only between these two, and only while the policy is
 * its own: it starts moving only at SCHED_OTHER (a policy inherited from
 * the application is kept), and returns false, for good, when its policy
 * is no longer the one it set (chrt -p on its ID, or -a on the process,
 * gave it another) or when the kernel refuses SCHED_BATCH (a seccomp
 * filter).  Any thread may move between the two (sched(7)).
 */
bool umc_rx_policy(bool *batch, bool want)
{
	struct sched_param sp = {0};

	if (*batch == want)
		return true;
	if (sched_getscheduler(0) != (*batch ? SCHED_BATCH : SCHED_OTHER))
		return false;
	if (pthread_setschedparam(pthread_self(), want ? SCHED_BATCH : SCHED_OTHER, &sp))
		return !want;
	*batch = want;
	return true;
}
