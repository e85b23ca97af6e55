/* SPDX-License-Identifier: MIT */
/*
 * critpath.c - where a ping-pong round trip (busy-polling or event-driven)
 * spends its time, split into the kernel's share and user space's,
 * measured in the process.
 *
 * An LD_PRELOAD library for one side of a ping-pong (umc-perf -L, or
 * udp-perf -L, the raw UDP baseline).  It wraps the calls both programs
 * receive and send with, recvmmsg(2), sendmmsg(2) and a non-blocking
 * epoll_wait(2) (also when made through syscall(2), as umcast makes
 * them), and poll(2), which both sleep in with -e; reads the time stamp
 * counter around each and, at exit, prints to stderr one line per
 * figure:
 *
 *   critpath NAME count=N mean_us=M
 *
 *   user_rx_to_tx   user time from a recvmmsg() that returned datagrams to
 *                   the next sendmmsg() call: decoding, checking,
 *                   completing, the program's own work and the send path
 *                   (on the round trip's critical path)
 *   send            sendmmsg(): on loopback the kernel also delivers the
 *                   datagram to the receiving socket in this call
 *   recv_data       recvmmsg() calls that returned datagrams
 *   recv_empty      recvmmsg() calls that returned none (busy polls)
 *   epoll0          epoll_wait() with timeout 0 (umcast reads its unicast
 *                   endpoints so, every UMC_RX_COLD_STRIDE-th poll)
 *   poll_user       user time before a recvmmsg() since the previous call
 *                   returned nothing: the rest of a busy poll's loop
 *   in_window       calls made inside user_rx_to_tx's window (their time
 *                   is in it; 0 means the window is user time only)
 *   wake_to_rx      time from a blocking poll(2) that returned ready to
 *                   the same thread's next recvmmsg() call (-e: what a
 *                   woken side does before it reads the datagram;
 *                   umcast's calls between, such as an epoll_wait(),
 *                   included)
 *
 * A datagram that arrives during a busy poll waits, on average, half a
 * loop iteration (recv_empty + poll_user + the epoll0 share) before it is
 * seen.  bench/run.sh runs both transports under it and prints the
 * split side by side (bench/README.md, "Where the round trip goes").
 *
 * Counting starts with the first send: the polls of a pong before its peer
 * starts are not in the figures.
 *
 * The time stamp counter is calibrated against CLOCK_MONOTONIC at load
 * (20 ms).  Reading it costs some 10 ns per wrapped call, the same for
 * both transports.  Counters are plain: the programs receive and send on
 * one thread (umcast's background receive thread stays away while the
 * application polls, progress.c).  x86-64 only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <x86intrin.h>

struct figure {
	const char *name;
	uint64_t n, ticks;
};

enum { USER_RX_TO_TX, SEND, RECV_DATA, RECV_EMPTY, EPOLL0, POLL_USER, IN_WINDOW, WAKE_TO_RX, NFIG };

static struct figure fig[NFIG] = {
	[USER_RX_TO_TX] = {"user_rx_to_tx"}, [SEND] = {"send"},
	[RECV_DATA] = {"recv_data"},	     [RECV_EMPTY] = {"recv_empty"},
	[EPOLL0] = {"epoll0"},		     [POLL_USER] = {"poll_user"},
	[IN_WINDOW] = {"in_window"},	     [WAKE_TO_RX] = {"wake_to_rx"},
};

static int (*real_recvmmsg)(int, struct mmsghdr *, unsigned, int, struct timespec *);
static int (*real_sendmmsg)(int, struct mmsghdr *, unsigned, int);
static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static long (*real_syscall)(long, ...);
static double ticks_per_us;
static uint64_t rx_data_end; /* when a recvmmsg() last returned datagrams; 0: sent since */
static uint64_t empty_end;   /* when the last empty poll's call returned; 0: not in a poll */
static bool started;	     /* a datagram has been sent */
/* When this thread's blocking poll(2) last returned; 0: it received since.
 * Per thread: umcast's other threads (the unicast agent, the SA client)
 * also sleep in poll(2). */
static __thread uint64_t woke;

static void add(int f, uint64_t ticks)
{
	if (!started)
		return;
	fig[f].n++;
	fig[f].ticks += ticks;
}

static double ns_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

__attribute__((constructor)) static void critpath_init(void)
{
	struct timespec a, b;
	uint64_t t0;

	real_recvmmsg = dlsym(RTLD_NEXT, "recvmmsg");
	real_sendmmsg = dlsym(RTLD_NEXT, "sendmmsg");
	real_epoll_wait = dlsym(RTLD_NEXT, "epoll_wait");
	real_poll = dlsym(RTLD_NEXT, "poll");
	real_syscall = dlsym(RTLD_NEXT, "syscall");
	clock_gettime(CLOCK_MONOTONIC, &a);
	t0 = __rdtsc();
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while (ns_between(&a, &b) < 20e6);
	ticks_per_us = (double)(__rdtsc() - t0) / ns_between(&a, &b) * 1e3;
}

__attribute__((destructor)) static void critpath_report(void)
{
	for (int f = 0; f < NFIG; f++)
		fprintf(stderr, "critpath %s count=%llu mean_us=%.3f\n", fig[f].name,
			(unsigned long long)fig[f].n,
			fig[f].n ? (double)fig[f].ticks / ticks_per_us / (double)fig[f].n : 0.0);
}

/* Around a recvmmsg() that started at @t0 and returned @n. */
static void recv_before(uint64_t t0)
{
	if (woke)
		add(WAKE_TO_RX, t0 - woke);
	woke = 0;
	if (empty_end)
		add(POLL_USER, t0 - empty_end);
}

static void recv_after(uint64_t t0, long n)
{
	uint64_t t1 = __rdtsc();

	if (rx_data_end)
		add(IN_WINDOW, t1 - t0);
	if (n > 0) {
		add(RECV_DATA, t1 - t0);
		rx_data_end = t1;
		empty_end = 0;
	} else {
		add(RECV_EMPTY, t1 - t0);
		empty_end = t1;
	}
}

/* After an epoll_wait() with timeout 0 that started at @t0. */
static void epoll0_after(uint64_t t0)
{
	uint64_t t1 = __rdtsc();

	add(EPOLL0, t1 - t0);
	if (rx_data_end)
		add(IN_WINDOW, t1 - t0);
	if (empty_end) /* poll_user stays user time */
		empty_end = t1;
}

/* Before a sendmmsg() that starts at @t0. */
static void send_before(uint64_t t0)
{
	started = true;
	if (rx_data_end)
		add(USER_RX_TO_TX, t0 - rx_data_end);
	rx_data_end = 0;
	empty_end = 0;
}

int recvmmsg(int fd, struct mmsghdr *msg, unsigned vlen, int flags, struct timespec *timeout)
{
	uint64_t t0 = __rdtsc();
	int n;

	recv_before(t0);
	n = real_recvmmsg(fd, msg, vlen, flags, timeout);
	recv_after(t0, n);
	return n;
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	int n = real_poll(fds, nfds, timeout);

	if (timeout != 0 && n > 0)
		woke = __rdtsc();
	return n;
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	uint64_t t0 = __rdtsc();
	int n = real_epoll_wait(epfd, ev, max, timeout);

	if (timeout == 0)
		epoll0_after(t0);
	return n;
}

int sendmmsg(int fd, struct mmsghdr *msg, unsigned vlen, int flags)
{
	uint64_t t0 = __rdtsc();
	int n;

	send_before(t0);
	n = real_sendmmsg(fd, msg, vlen, flags);
	add(SEND, __rdtsc() - t0);
	return n;
}

/*
 * umcast makes the same calls through syscall(2) where it holds a lock
 * (src/umc_sys.h: they are no cancellation points there): the same
 * figures.  Six arguments are passed on, as glibc's syscall() does.
 */
long syscall(long nr, ...)
{
	uint64_t t0 = __rdtsc();
	long a[6], r;
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall) /* a call before the constructor ran */
		real_syscall = dlsym(RTLD_NEXT, "syscall");
	if (nr == SYS_recvmmsg)
		recv_before(t0);
	else if (nr == SYS_sendmmsg)
		send_before(t0);
	r = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (nr == SYS_recvmmsg)
		recv_after(t0, r);
	else if (nr == SYS_sendmmsg)
		add(SEND, __rdtsc() - t0);
	else if (nr == SYS_epoll_pwait && (int)a[3] == 0)
		epoll0_after(t0);
	return r;
}
