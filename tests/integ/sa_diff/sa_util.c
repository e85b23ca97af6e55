// SPDX-License-Identifier: MIT
/*
 * sa_util.c - what the client's parts share: the clock, TransactionIDs,
 * whole reads and writes on pipes, and helper processes (umad agents,
 * bench workers), which are this program executed again.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sa_client.h"

/** sa_now_ms - CLOCK_MONOTONIC in milliseconds. */
int64_t sa_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/** sa_now_ns - CLOCK_MONOTONIC in nanoseconds (the bench's clock, one for all processes). */
int64_t sa_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/**
 * sa_next_tid - a TransactionID unique in this process: the pid in the
 * top 16 bits, a counter in the low 32 (umad2sim owns bits 32..47, and
 * replies through ibsim are matched on the low 32).
 */
uint64_t sa_next_tid(void)
{
	static uint32_t counter;

	if (!counter)
		counter = (uint32_t)time(NULL) << 8;
	return (uint64_t)(getpid() & 0xffff) << 48 | ++counter;
}

/**
 * sa_write_all - write all of @buf to @fd, retrying short writes and EINTR.
 * @fd:  a pipe or file
 * @buf: the bytes
 * @len: how many
 *
 * Returns: 0, or -EPIPE when the write fails.
 */
int sa_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EPIPE;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/**
 * sa_read_all - read exactly @len bytes from @fd within @timeout_ms.
 * @fd:         a pipe
 * @buf:        where they go
 * @len:        how many
 * @timeout_ms: the bound for all of them; -1: none
 *
 * Returns: 0; -ETIMEDOUT; -EPIPE at end of file or on a read error.
 */
int sa_read_all(int fd, void *buf, size_t len, int timeout_ms)
{
	int64_t deadline = sa_now_ms() + timeout_ms;
	uint8_t *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = timeout_ms < 0 ? -1 : (int)(deadline - sa_now_ms());
		ssize_t r;

		if (timeout_ms >= 0 && left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!pfd.revents)
			continue;
		r = read(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EPIPE;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/**
 * sa_spawn - run this program again as a helper, its stdin and stdout
 * on two pipes.
 * @x:        the transport (its self path)
 * @sim_host: NULL, or the ibsim node the helper attaches to: it then runs
 *            with SIM_HOST and the umad2sim library (SA_DIFF_UMAD2SIM)
 *            preloaded, and ASan told to accept a library before it
 * @args:     the arguments after argv[0], NULL-terminated
 * @to:       the parent's end of the helper's stdin
 * @from:     the parent's end of the helper's stdout
 *
 * The parent's pipe ends are close-on-exec, so a later helper does not
 * hold an earlier one's pipe open.
 *
 * Returns: the helper's pid, or -errno.
 */
pid_t sa_spawn(const struct sa_xport *x, const char *sim_host, char *const args[], int *to,
	       int *from)
{
	const char *lib = getenv("SA_DIFF_UMAD2SIM");
	char *argv[16];
	int p_to[2], p_from[2], i;
	pid_t pid;

	if (sim_host && (!lib || !*lib)) {
		fprintf(stderr, "sa_client: SA_DIFF_UMAD2SIM (the umad2sim library) is not set\n");
		return -ENOENT;
	}
	argv[0] = (char *)x->self;
	for (i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	if (pipe2(p_to, O_CLOEXEC))
		return -errno;
	if (pipe2(p_from, O_CLOEXEC)) {
		close(p_to[0]);
		close(p_to[1]);
		return -errno;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(p_to[0], 0); /* the copies are not close-on-exec */
		dup2(p_from[1], 1);
		if (sim_host) {
			const char *asan = getenv("ASAN_OPTIONS");
			char opts[512];

			snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0",
				 asan ? asan : "", asan && *asan ? ":" : "");
			setenv("ASAN_OPTIONS", opts, 1);
			setenv("LD_PRELOAD", lib, 1);
			setenv("SIM_HOST", sim_host, 1);
		}
		execv(x->self, argv);
		perror("sa_client: exec");
		_exit(127);
	}
	close(p_to[0]);
	close(p_from[1]);
	if (pid < 0) {
		close(p_to[1]);
		close(p_from[0]);
		return -EAGAIN;
	}
	*to = p_to[1];
	*from = p_from[0];
	return pid;
}

/**
 * sa_reap - wait for helper @pid at most @timeout_ms, then SIGKILL it.
 * @pid:        from sa_spawn
 * @timeout_ms: the bound
 *
 * Returns: its exit status, or -1 if it was killed or died of a signal.
 */
int sa_reap(pid_t pid, int timeout_ms)
{
	int64_t deadline = sa_now_ms() + timeout_ms;
	int status = 0;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (sa_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(1000);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
