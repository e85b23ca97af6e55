// SPDX-License-Identifier: MIT
/*
 * agent.c - the orchestrator/agent harness of the multi-process
 * integration tests (agent.h).
 */
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

int agent_failures;
static int agent_rep_fd = -1; /* in an agent: its reply pipe */

uint64_t agent_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool agent_read_line(int fd, char *line, size_t cap, int ms)
{
	uint64_t deadline = agent_now_ms() + (uint64_t)ms;
	size_t n = 0;

	while (n + 1 < cap) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = (int64_t)(deadline - agent_now_ms());

		if (left <= 0 || poll(&p, 1, (int)left) != 1 || read(fd, line + n, 1) != 1)
			return false;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	return true;
}

void agent_reply(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(agent_rep_fd, line, (size_t)n) != n)
		_exit(3);
}

void agent_spawn(struct agent *a, const char *name, int (*fn)(void *arg, int cmd), void *arg)
{
	int down[2], up[2];

	if (pipe(down) || pipe(up)) {
		perror("pipe");
		exit(1);
	}
	fflush(stdout);
	a->name = name;
	a->pid = fork();
	if (a->pid < 0) {
		perror("fork");
		exit(1);
	}
	if (a->pid == 0) {
		close(down[1]);
		close(up[0]);
		agent_rep_fd = up[1];
		_exit(fn(arg, down[0]));
	}
	close(down[0]);
	close(up[1]);
	a->cmd = down[1];
	a->rep = up[0];
}

bool agent_get_reply(struct agent *a)
{
	if (!agent_read_line(a->rep, a->last, sizeof(a->last), AGENT_CMD_MS))
		snprintf(a->last, sizeof(a->last), "fail no reply (agent died or hung)");
	printf("  %s: %s\n", a->name, a->last);
	fflush(stdout);
	return strncmp(a->last, "ok", 2) == 0;
}

static bool agent_vsend(struct agent *a, const char *fmt, va_list ap)
{
	char line[256];
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);

	if (n < 0 || n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n] = 0;
	printf("%s <- %s\n", a->name, line);
	line[n++] = '\n';
	if (write(a->cmd, line, (size_t)n) != n) {
		printf("FAIL: cannot write to %s\n", a->name);
		agent_failures++;
		return false;
	}
	return true;
}

bool agent_send(struct agent *a, const char *fmt, ...)
{
	va_list ap;
	bool ok;

	va_start(ap, fmt);
	ok = agent_vsend(a, fmt, ap);
	va_end(ap);
	return ok;
}

bool agent_cmd(struct agent *a, const char *fmt, ...)
{
	va_list ap;
	bool ok;

	va_start(ap, fmt);
	ok = agent_vsend(a, fmt, ap);
	va_end(ap);
	if (!ok)
		return false;
	if (!agent_get_reply(a)) {
		printf("FAIL: %s: %s\n", a->name, a->last);
		agent_failures++;
		return false;
	}
	return true;
}

bool agent_ready(struct agent *a)
{
	if (agent_get_reply(a))
		return true;
	printf("FAIL: %s did not start: %s\n", a->name, a->last);
	agent_failures++;
	return false;
}

unsigned long agent_field(const struct agent *a, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = strstr(a->last, key); p; p = strstr(p + 1, key))
		if ((p == a->last || p[-1] == ' ') && p[k] == '=')
			return strtoul(p + k + 1, NULL, 0);
	return (unsigned long)-1;
}

void agent_expect_eq(const char *what, unsigned long got, unsigned long want)
{
	if (got == want)
		return;
	printf("FAIL: %s = %lu, expected %lu\n", what, got, want);
	agent_failures++;
}

void agent_finish(struct agent *a)
{
	uint64_t deadline;
	int st = 0;

	agent_cmd(a, "quit");
	close(a->cmd);
	close(a->rep);
	deadline = agent_now_ms() + AGENT_CMD_MS;
	while (waitpid(a->pid, &st, WNOHANG) == 0) {
		if (agent_now_ms() > deadline) {
			kill(a->pid, SIGKILL);
			waitpid(a->pid, &st, 0);
			break;
		}
		poll(NULL, 0, 5);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL: %s exited with status 0x%x\n", a->name, st);
		agent_failures++;
	}
}

void agent_kill(struct agent *a)
{
	printf("%s <- SIGKILL\n", a->name);
	kill(a->pid, SIGKILL);
	waitpid(a->pid, NULL, 0);
	close(a->cmd);
	close(a->rep);
}
