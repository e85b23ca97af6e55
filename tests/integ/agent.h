/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the orchestrator/agent harness of the multi-process
 * integration tests (mc_procs, uc_procs).
 *
 * The orchestrator never calls umcast itself: it forks one agent per
 * simulated application process before any umcast state exists and drives
 * it over a pair of pipes with one-line commands and one-line replies
 * ("ok ..." / "fail ...").  Readiness is a reply, never a sleep; every
 * wait has a deadline.
 */
#ifndef TEST_INTEG_AGENT_H
#define TEST_INTEG_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	AGENT_CMD_MS = 30000, /* bound on any agent reply */
};

/* The orchestrator's handle of one agent. */
struct agent {
	const char *name;
	pid_t pid;
	int cmd, rep;
	char last[512]; /* the last reply */
};

/* Checks that failed, in the orchestrator. */
extern int agent_failures;

uint64_t agent_now_ms(void);

/* Read one line (bounded, without the newline) within @ms; false on EOF/timeout. */
bool agent_read_line(int fd, char *line, size_t cap, int ms);

/* In an agent: write one reply line to the orchestrator. */
void agent_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Fork agent @name running @fn(@arg, command fd); @fn's return value is
 * the agent's exit status.  Replies go through agent_reply().
 */
void agent_spawn(struct agent *a, const char *name, int (*fn)(void *arg, int cmd), void *arg);

/* One reply within AGENT_CMD_MS into a->last; true if it starts with "ok". */
bool agent_get_reply(struct agent *a);

/* Send a command without waiting for its reply (then agent_get_reply). */
bool agent_send(struct agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Send a command and require an "ok" reply (a failure is counted). */
bool agent_cmd(struct agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first reply: "ok ..." or a counted failure. */
bool agent_ready(struct agent *a);

/* "key=value" of the last reply, or (unsigned long)-1. */
unsigned long agent_field(const struct agent *a, const char *key);

/* Count a failure unless @got == @want. */
void agent_expect_eq(const char *what, unsigned long got, unsigned long want);

/* "quit", then reap: a non-zero exit status is a failure. */
void agent_finish(struct agent *a);

/* SIGKILL and reap. */
void agent_kill(struct agent *a);

#endif /* TEST_INTEG_AGENT_H */
