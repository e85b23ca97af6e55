// SPDX-License-Identifier: MIT
/*
 * wait.c - the bounded waits of the C tests (wait.h).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wait.h"

enum { REAP_POLL_MS = 5 };

uint64_t t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t t_deadline(int ms)
{
	return t_now_ms() + (uint64_t)(ms > 0 ? ms : 0);
}

int t_left_ms(uint64_t end)
{
	uint64_t now = t_now_ms();

	return now >= end ? 0 : end - now > INT32_MAX ? INT32_MAX : (int)(end - now);
}

bool t_wait_fd(int fd, int ms)
{
	uint64_t end = t_deadline(ms);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n;

	do
		n = poll(&p, 1, ms < 0 ? -1 : t_left_ms(end));
	while (n < 0 && errno == EINTR);
	return n == 1;
}

bool t_read_full(int fd, void *buf, size_t n, int ms)
{
	uint64_t end = t_deadline(ms);
	size_t got = 0;

	while (got < n) {
		ssize_t r;

		if (!t_wait_fd(fd, t_left_ms(end)))
			return false;
		r = read(fd, (char *)buf + got, n - got);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

bool t_read_line(int fd, char *line, size_t cap, int ms)
{
	uint64_t end = t_deadline(ms);
	size_t n = 0;

	while (n + 1 < cap) {
		if (!t_wait_fd(fd, ms < 0 ? -1 : t_left_ms(end)) || read(fd, line + n, 1) != 1)
			return false;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	return true;
}

int t_reap(pid_t pid, int ms)
{
	uint64_t end = t_deadline(ms);
	pid_t r;
	int st;

	while ((r = waitpid(pid, &st, WNOHANG)) == 0 || (r < 0 && errno == EINTR)) {
		if (t_now_ms() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		poll(NULL, 0, REAP_POLL_MS);
	}
	if (r != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int t_stop(pid_t pid, int ms)
{
	kill(pid, SIGTERM);
	return t_reap(pid, ms);
}
