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
 *
 * The agents of ib_procs and fault_procs share their CM ids, UD QPs and
 * the commands on them that read alike (agent_open(), agent_do_join(), ...).
 */
#ifndef TEST_INTEG_AGENT_H
#define TEST_INTEG_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wait.h" /* the harness's waits; the agents' too */

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

enum {
	AGENT_CMD_MS = 15000, /* bound on any agent reply: above every command's own */
	AGENT_MAX_IDS = 8,    /* CM ids of one agent (agent_open()) */
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

/* Count a failure unless agent reply @r starts with @prefix; @what names the step. */
void agent_expect_prefix(const char *r, const char *prefix, const char *what);

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

/* ------------------------------------------------------------------------- */
/* In an agent: its CM ids and their UD QPs (ib_procs, fault_procs).         */

/*
 * One CM id of an agent: its UD QP, a registered buffer of @nrecv slots of
 * @slot bytes (a receive posted in each but the last, which sends draw
 * from), and where its sends go.
 */
struct agent_node {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t slot;
	int nrecv;
	struct ibv_ah *ah; /* NULL until a join or the program sets one */
	uint32_t rqpn, rqkey;
	unsigned received; /* for the program's own receive commands */
};

/* The agent's ids (agent_ids.n[0 .. nids - 1]) and their one event channel. */
struct agent_ids {
	struct rdma_event_channel *ch;
	struct agent_node n[AGENT_MAX_IDS];
	int nids;
};

extern struct agent_ids agent_ids;

/* An IPv4 address in dotted-quad @text as a struct sockaddr_in (port 0). */
void agent_addr_parse(const char *text, struct sockaddr_in *sin);

/*
 * A new id of port space @ps, bound to @addr, with a UD QP (CQs of the
 * id's PD, every send signalled) and @nrecv slots of @slot bytes; the
 * event channel is made with the first.
 * Returns: the node (agent_ids.nids counts it), or NULL once a "fail ..."
 * reply is given.
 */
struct agent_node *agent_open(const char *addr, enum rdma_port_space ps, int nrecv, size_t slot);

/* Post a receive in slot @k of @nd; true if ibv_post_recv() took it. */
bool agent_post_recv(struct agent_node *nd, uint64_t k);

/*
 * Post one SEND of the first @len bytes of @nd's last slot to its
 * destination (agent_set_dest()).  Returns: ibv_post_send()'s value.
 */
int agent_post_send(struct agent_node *nd, uint64_t wr_id, uint32_t len);

/* Wait up to @ms for one send completion of @nd; true if it came and succeeded. */
bool agent_send_completed(struct agent_node *nd, int ms);

/* Make @ah (NULL allowed) @nd's destination, with QPN @qpn and Q_Key @qkey; the old AH goes. */
void agent_set_dest(struct agent_node *nd, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey);

/*
 * The reply for CM event @ev of one of the agent's ids: "ok EVENT STATUS
 * IDX DGID dlid 0x.. sl .. rate .. fl 0x.. tc .. hop .. global .. qpn 0x..
 * qkey 0x..", EVENT being JOIN, ERROR (MULTICAST_JOIN, MULTICAST_ERROR) or
 * rdma_event_str()'s name, IDX the id's index, then the event's ah_attr and
 * UD parameters.
 */
void agent_event_reply(const struct rdma_cm_event *ev);

/*
 * "join IDX GROUP full|sendonly": rdma_join_multicast_ex() with
 * FULLMEMBER or SENDONLY_FULLMEMBER, then its event within @ev_ms, as
 * agent_event_reply() gives it; a JOIN makes its AH, QPN and Q_Key the
 * id's destination.  A join refused with EADDRNOTAVAIL is tried again for
 * up to @retry_ms (a port registered again reads the IPoIB broadcast
 * group's record first; 0: not tried again).  Otherwise "fail ...".
 */
void agent_do_join(int idx, const char *group, const char *how, int ev_ms, int retry_ms);

/* "leave IDX GROUP": rdma_leave_multicast(); "ok", or "fail leave errno N". */
void agent_do_leave(int idx, const char *group);

/* "event MS": the next CM event within MS ms (agent_event_reply()), or "ok none". */
void agent_do_event(int ms);

/* ------------------------------------------------------------------------- */

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
