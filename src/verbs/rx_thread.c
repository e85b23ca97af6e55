/* SPDX-License-Identifier: MIT */
/*
 * rx_thread.c - the background receive thread, which stands in for the
 * NIC.
 *
 * A program that posted receives and then does something else must still
 * get them filled, as a NIC would: a background thread per device (started
 * with the device's first receive endpoint) runs the engine itself when no
 * application thread has run it for a while: UMC_RX_IDLE_US at first,
 * growing to UMC_RX_IDLE_MAX_US once the application has been seen
 * receiving (a receiver that shares its CPU with others looks idle for
 * whole time slices), and not at all while the application's thread is
 * only waiting for a CPU (umc_app_waiting, rx_sched.c).  While the
 * application is receiving, the thread does not wait on the sockets at
 * all, so it never wakes up per datagram on a busy-polling program's CPU,
 * and the sockets are in no epoll set, whose wake-up callback every
 * datagram would run (__umc_rx_epoll, progress.c).  Nor does it while a CQ
 * is armed: whoever waits for that CQ's event, in ibv_get_cq_event or in
 * poll(2) on the channel's fd, sleeps on the sockets itself (cq.c) and is
 * woken by the datagram; the thread only drains, once per idle period,
 * what nobody took, and doubles the period while it finds nothing (back to
 * UMC_RX_IDLE_US when it finds something), so that a program asleep on an
 * idle channel is not woken.  UMC_RX_THREAD=0 in the environment disables
 * it.
 */
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "verbs/rx_int.h"

#define UMC_RX_THREAD_NAME "umc-rx" /* the background receive thread, as ps -L and gdb show it */

/* Deliver for as long as data comes and the application stays away; returns how many. */
static int umc_rx_drain_away(struct umc_device *dev)
{
	int total = 0;

	for (;;) {
		unsigned long gen = atomic_load_explicit(&dev->rx_app_gen, memory_order_relaxed);
		int n;

		umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
		atomic_store_explicit(&dev->rx_thread_in, true, memory_order_relaxed);
		n = __umc_progress(dev);
		atomic_store_explicit(&dev->rx_thread_in, false, memory_order_relaxed);
		umc_mutex_unlock(&dev->rx_lock);
		total += n;
		if (!n || atomic_load_explicit(&dev->rx_app_gen, memory_order_relaxed) != gen)
			return total;
	}
}

/* The next idle period: twice @idle, at most UMC_RX_IDLE_MAX_US. */
static long umc_rx_idle_grow(long idle)
{
	return idle * 2 > UMC_RX_IDLE_MAX_US ? UMC_RX_IDLE_MAX_US : idle * 2;
}

/*
 * The background receiver.  While an application thread is receiving it
 * only looks every idle period (doubling up to UMC_RX_IDLE_MAX_US) and
 * never waits on the sockets, so it does not wake up (on the application's
 * CPU) for each datagram.  Once the application has been idle for a whole
 * period, it drains what waits if a CQ is armed (the waiter sleeps on the
 * sockets itself; a drain that finds nothing doubles the period too, so a
 * program asleep on an idle channel is not woken every 50 us, and one that
 * finds something starts again from UMC_RX_IDLE_US: nobody waits), and
 * otherwise waits for data and delivers it unless the application takes
 * it within another period; then it keeps draining for as long as data
 * comes and the application stays away.  Lives as long as the process.
 */
static void *umc_rx_thread(void *arg)
{
	struct umc_device *dev = arg;
	long idle = UMC_RX_IDLE_US;
	struct epoll_event ev;
	bool batch = false;
	/*
	 * The kernel's word, not pthread_getschedparam's: glibc answers from
	 * what its last pthread_setschedparam set, in this thread copied from
	 * the creator's, and a sched_setscheduler(2) since is not in it.
	 */
	bool may_batch = sched_getscheduler(0) == SCHED_OTHER;

	for (;;) {
		if (umc_app_receiving(dev, idle)) {
			if (dev->rx_kick >= 0) /* without it, nothing would wake a sleep on the set */
				umc_rx_epoll(dev, false);
			idle = umc_rx_idle_grow(idle);
			if (may_batch)
				may_batch = umc_rx_policy(&batch, true);
			continue;
		}
		/*
		 * idle stays where it is: an application that received before
		 * may only be descheduled (receivers sharing a CPU look idle
		 * for whole time slices), so keep giving it long windows, and
		 * none of its time while it waits for a CPU.
		 */
		if (umc_app_waiting(dev))
			continue;
		if (may_batch) /* stands in: at its own policy */
			may_batch = umc_rx_policy(&batch, false);
		if (atomic_load_explicit(&dev->cq_armed, memory_order_relaxed) > 0) {
			idle = umc_rx_drain_away(dev) ? UMC_RX_IDLE_US : umc_rx_idle_grow(idle);
			continue;
		}
		/* Cleared before the set fills: a poller that sees it full kicks. */
		atomic_store_explicit(&dev->rx_kicked, false, memory_order_relaxed);
		if (!umc_rx_epoll(dev, true)) { /* no memory for the set: drain every period */
			umc_rx_drain_away(dev);
			continue;
		}
		atomic_store(&dev->rx_sleeping, true);
		umc_rx_arm(dev);
		int woke = epoll_wait(dev->rx_epfd, &ev, 1, -1);

		atomic_store(&dev->rx_sleeping, false);
		if (woke <= 0)
			continue;
		if (!ev.data.ptr) { /* rx_kick: the program polls again (emptying reads it) */
			umc_rx_epoll(dev, false);
			continue;
		}
		if (umc_app_receiving(dev, idle))
			continue;
		umc_rx_drain_away(dev);
	}
	return NULL;
}

/* rx_kick, in rx_epfd with data.ptr NULL; stays -1 if either fails. */
static void umc_rx_kick_open(struct umc_device *dev)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	int fd = UMC_FD_NEW(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), false);

	if (fd < 0)
		return;
	if (epoll_ctl(dev->rx_epfd, EPOLL_CTL_ADD, fd, &ev)) {
		umc_fd_close(fd);
		return;
	}
	dev->rx_kick = fd;
}

void umc_rx_thread_start(struct umc_device *dev)
{
	const char *env = getenv("UMC_RX_THREAD");

	if (env && *env == '0')
		return;
	/*
	 * Without its kick, the set is only ever emptied with nobody asleep
	 * on it.  Made once: a failed pthread_create comes back here.
	 */
	if (dev->rx_kick < 0)
		umc_rx_kick_open(dev);
	dev->rx_thread = umc_thread_start(NULL, true, umc_rx_thread, dev, UMC_RX_THREAD_NAME) == 0;
}
