/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the orchestrator/agent harness of the multi-process
 * integration tests (mc_procs, uc_procs, ib_procs, fault_procs).
 *
 * The orchestrator drives one agent per simulated application process over
 * a pair of pipes with one-line commands and one-line replies ("ok ..." /
 * "fail ...").  Readiness is a reply, never a sleep; every wait has a
 * deadline.
 *
 * An agent is either a fork of the orchestrator running a function
 * (agent_spawn(): the orchestrator never calls umcast itself and forks
 * before any umcast state exists), or the test program executed again
 * (agent_spawn_exec(), agent_exec_fds()): for an orchestrator that may
 * have threads when it starts an agent, since a forked child of a
 * threaded process may only call async-signal-safe functions until it
 * executes a program (POSIX fork()).
 */
#ifndef TEST_INTEG_AGENT_H
#define TEST_INTEG_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wait.h" /* the harness's waits; the agents' too */

struct rdma_cm_event;
struct rdma_event_channel;

enum {
	AGENT_CMD_MS = 15000, /* bound on any agent reply: above every command's own */
};

/* The orchestrator's handle of one agent. */
struct agent {
	const char *name;
	pid_t pid;
	int cmd, rep;
	bool hung;	/* gave no reply in time: killed, later commands fail at once */
	char last[512]; /* the last reply */
};

/* Checks that failed, in the orchestrator. */
extern int agent_failures;

/*
 * In an agent: the next CM event of @ch within @ms ms (poll(2) on its fd,
 * then rdma_get_cm_event()), or NULL.
 */
struct rdma_cm_event *agent_cm_event(struct rdma_event_channel *ch, int ms);

/* In an agent: write one reply line to the orchestrator. */
void agent_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Fork agent @name running @fn(@arg, command fd); @fn's return value is
 * the agent's exit status.  Replies go through agent_reply().
 */
void agent_spawn(struct agent *a, const char *name, int (*fn)(void *arg, int cmd), void *arg);

/*
 * Start agent @name as this program executed again, with argv {@prog_name,
 * "agent", CMD_FD, REP_FD}; its main() hands argv to agent_exec_fds().
 * Between fork and exec the child only makes async-signal-safe calls, and
 * the agent inherits no pipe but its own two.
 */
void agent_spawn_exec(struct agent *a, const char *name, const char *prog_name);

/*
 * In main() of a program started by agent_spawn_exec(): if @argv is
 * {prog, "agent", CMD_FD, REP_FD}, replies go to REP_FD through
 * agent_reply() and *@cmd is CMD_FD, the fd to read commands from with
 * agent_read_line().  False (nothing set) for any other @argv.
 */
bool agent_exec_fds(int argc, char **argv, int *cmd);

/*
 * One reply within AGENT_CMD_MS into a->last; true if it starts with "ok".
 * An agent that gives none is killed (a->hung), since its next reply could
 * only answer the wrong command.
 */
bool agent_get_reply(struct agent *a);

/* Send a command without waiting for its reply (then agent_get_reply). */
bool agent_send(struct agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Send a command and require an "ok" reply (a failure is counted). */
bool agent_cmd(struct agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The first reply: "ok ..." or a counted failure. */
bool agent_ready(struct agent *a);

/* "key=value" of the last reply, or (unsigned long)-1. */
unsigned long agent_field(const struct agent *a, const char *key);

/* Count a failure and print it as "FAIL: <message>". */
void agent_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Count a failure unless @got == @want. */
void agent_expect_eq(const char *what, unsigned long got, unsigned long want);

/*
 * Close the pipes and reap within AGENT_CMD_MS (then SIGKILL); true if it
 * exited with status 0, otherwise a counted failure (a hung agent too).
 */
bool agent_reap(struct agent *a);

/* "quit" (an "ok" reply), then agent_reap(). */
void agent_finish(struct agent *a);

/* SIGKILL and reap. */
void agent_kill(struct agent *a);

/*
 * Require that each of the @nids joined CM ids of agent @a gets exactly
 * one RDMA_CM_EVENT_MULTICAST_ERROR with -ENETRESET before @end
 * (t_deadline()), and no other event then or in the next 500 ms;
 * failures are counted.  For agents whose "event MS" command answers "ok
 * EVENT STATUS IDX" (the event, its status, the id's index) or "ok none".
 */
void agent_expect_resets(struct agent *a, int nids, uint64_t end);

struct test_sm;

/*
 * In the orchestrator: start umc-sm (@args: NULL-terminated, or NULL) and
 * make it the UMC_SM of the agents started next; exit 2 if it cannot start.
 */
void agent_start_sm(struct test_sm *sm, const char *const *args);

/* A scenario of a multi-process test program: its name, its body. */
struct agent_scenario {
	const char *name;
	void (*run)(void);
};

/*
 * The orchestrator's main(): run the scenario of @list (@n of them) named
 * @name and print "NAME: ok" or "FAIL: NAME (N failure(s))"; for a name
 * not in @list, a usage line naming @prog on stderr.
 * Returns: the exit status: 0 (every check passed), 1 or 2 (usage).
 */
int agent_run_scenario(const char *prog, const char *name, const struct agent_scenario *list,
		       size_t n);

#endif /* TEST_INTEG_AGENT_H */
