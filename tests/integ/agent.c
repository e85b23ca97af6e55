// SPDX-License-Identifier: MIT
/*
 * agent.c - the orchestrator/agent harness of the multi-process
 * integration tests (agent.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "agent.h"
#include "sm_proc.h"
#include "wait.h"

int agent_failures;
static int agent_rep_fd = -1; /* in an agent: its reply pipe */

struct rdma_cm_event *agent_cm_event(struct rdma_event_channel *ch, int ms)
{
	struct rdma_cm_event *ev;

	if (!t_wait_fd(ch->fd, ms) || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
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

/*
 * The two pipes of a new agent: @down carries commands, @up replies.
 * @flags: 0 or O_CLOEXEC.
 */
static void agent_pipes(int down[2], int up[2], int flags)
{
	if (pipe2(down, flags) || pipe2(up, flags)) {
		perror("pipe");
		exit(1);
	}
}

/* Fork agent @name; in the parent, keep the orchestrator's ends. */
static pid_t agent_fork(struct agent *a, const char *name, const int down[2], const int up[2])
{
	a->name = name;
	a->hung = false;
	fflush(stdout); /* nothing buffered twice */
	a->pid = fork();
	if (a->pid < 0) {
		perror("fork");
		exit(1);
	}
	if (a->pid > 0) {
		close(down[0]);
		close(up[1]);
		a->cmd = down[1];
		a->rep = up[0];
	}
	return a->pid;
}

void agent_spawn(struct agent *a, const char *name, int (*fn)(void *arg, int cmd), void *arg)
{
	int down[2], up[2];

	agent_pipes(down, up, 0);
	if (agent_fork(a, name, down, up) == 0) {
		close(down[1]);
		close(up[0]);
		agent_rep_fd = up[1];
		_exit(fn(arg, down[0]));
	}
}

void agent_spawn_exec(struct agent *a, const char *name, const char *prog_name)
{
	char cmd_fd[16], rep_fd[16];
	char *argv[] = {(char *)prog_name, "agent", cmd_fd, rep_fd, NULL};
	int down[2], up[2];

	/* Close-on-exec: other agents and programs started later do not hold them. */
	agent_pipes(down, up, O_CLOEXEC);
	snprintf(cmd_fd, sizeof(cmd_fd), "%d", down[0]);
	snprintf(rep_fd, sizeof(rep_fd), "%d", up[1]);
	if (agent_fork(a, name, down, up) == 0) {
		/* Async-signal-safe only: fcntl, execv, _exit. */
		if (fcntl(down[0], F_SETFD, 0) == 0 && fcntl(up[1], F_SETFD, 0) == 0)
			execv("/proc/self/exe", argv);
		_exit(127);
	}
}

/* A file descriptor named by @s, open in this process; -1 otherwise. */
static int agent_fd_arg(const char *s)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(s, &end, 10);
	if (errno || end == s || *end || fd < 0 || fd > INT_MAX || fcntl((int)fd, F_GETFD) < 0)
		return -1;
	return (int)fd;
}

bool agent_exec_fds(int argc, char **argv, int *cmd)
{
	int c, r;

	if (argc != 4 || strcmp(argv[1], "agent"))
		return false;
	c = agent_fd_arg(argv[2]);
	r = agent_fd_arg(argv[3]);
	if (c < 0 || r < 0)
		return false;
	agent_rep_fd = r;
	*cmd = c;
	return true;
}

void agent_fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	agent_failures++;
}

bool agent_get_reply(struct agent *a)
{
	if (a->hung)
		snprintf(a->last, sizeof(a->last), "fail hung earlier (killed)");
	else if (!t_read_line(a->rep, a->last, sizeof(a->last), AGENT_CMD_MS)) {
		snprintf(a->last, sizeof(a->last), "fail no reply within %d ms (died or hung)",
			 AGENT_CMD_MS);
		t_reap(a->pid, 0);
		a->hung = true;
	}
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
	if (a->hung) {
		agent_fail("%s hung earlier (killed)", a->name);
		return false;
	}
	line[n++] = '\n';
	if (write(a->cmd, line, (size_t)n) != n) {
		agent_fail("cannot write to %s", a->name);
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
		agent_fail("%s: %s", a->name, a->last);
		return false;
	}
	return true;
}

bool agent_ready(struct agent *a)
{
	if (agent_get_reply(a))
		return true;
	agent_fail("%s did not start: %s", a->name, a->last);
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
	agent_fail("%s = %lu, expected %lu", what, got, want);
}

bool agent_reap(struct agent *a)
{
	int st;

	close(a->cmd);
	close(a->rep);
	if (a->hung) {
		agent_fail("%s hung (killed)", a->name);
		return false;
	}
	st = t_reap(a->pid, AGENT_CMD_MS);
	if (st) {
		agent_fail("%s exited with status %d (128 + a signal; -1: killed, hung)", a->name, st);
		return false;
	}
	return true;
}

void agent_finish(struct agent *a)
{
	agent_cmd(a, "quit");
	agent_reap(a);
}

void agent_kill(struct agent *a)
{
	printf("%s <- SIGKILL\n", a->name);
	if (!a->hung) {
		kill(a->pid, SIGKILL);
		t_reap(a->pid, AGENT_CMD_MS);
	}
	close(a->cmd);
	close(a->rep);
}

void agent_expect_prefix(const char *r, const char *prefix, const char *what)
{
	if (strncmp(r, prefix, strlen(prefix)))
		agent_fail("%s: got \"%s\", expected \"%s...\"", what, r, prefix);
}

void agent_expect_resets(struct agent *a, int nids, uint64_t end)
{
	int resets[64] = {0}, other = 0;

	for (int k = 0; k < nids; k++) {
		int status, idx;
		char what[32];

		if (agent_send(a, "event %d", t_left_ms(end)))
			agent_get_reply(a);
		if (sscanf(a->last, "ok %31s %d %d", what, &status, &idx) == 3 &&
		    !strcmp(what, "ERROR") && status == -ENETRESET && idx >= 0 && idx < nids &&
		    idx < 64)
			resets[idx]++;
		else
			other++;
	}
	/* Exactly one each: nothing more arrives. */
	if (!agent_send(a, "event 500") || !agent_get_reply(a) || strcmp(a->last, "ok none"))
		other++;
	for (int j = 0; j < nids && j < 64; j++)
		if (resets[j] != 1)
			agent_fail("%s: id %d: %d -ENETRESET events", a->name, j, resets[j]);
	if (other)
		agent_fail("%s: %d other events", a->name, other);
}

int agent_run_scenario(const char *prog, const char *name, const struct agent_scenario *list,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n && strcmp(name, list[i].name); i++)
		;
	if (i == n) {
		fprintf(stderr, "usage: %s SCENARIO (see the comment at the top)\n", prog);
		return 2;
	}
	list[i].run();
	if (agent_failures)
		printf("FAIL: %s (%d failure(s))\n", name, agent_failures);
	else
		printf("%s: ok\n", name);
	return agent_failures ? 1 : 0;
}

void agent_start_sm(struct test_sm *sm, const char *const *args)
{
	char env[32];

	if (test_sm_start(sm, 0, args)) {
		fprintf(stderr, "umc-sm does not start\n");
		exit(2);
	}
	snprintf(env, sizeof(env), "127.0.0.1:%u", sm->port);
	setenv("UMC_SM", env, 1);
}

/* ------------------------------------------------------------------------- */
/* In an agent: its CM ids and their UD QPs.                                 */

struct agent_ids agent_ids;

void agent_addr_parse(const char *text, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, text, &sin->sin_addr);
}

struct agent_node *agent_open(const char *addr, enum rdma_port_space ps, int nrecv, size_t slot)
{
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 64, .max_recv_wr = (uint32_t)nrecv, .max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
	};
	struct agent_node *nd = &agent_ids.n[agent_ids.nids];
	struct sockaddr_in src;

	agent_addr_parse(addr, &src);
	if (agent_ids.nids == AGENT_MAX_IDS) {
		agent_reply("fail too many ids");
		return NULL;
	}
	if (!agent_ids.ch && !(agent_ids.ch = rdma_create_event_channel())) {
		agent_reply("fail rdma_create_event_channel");
		return NULL;
	}
	if (rdma_create_id(agent_ids.ch, &nd->id, nd, ps)) {
		agent_reply("fail rdma_create_id errno %d", errno);
		return NULL;
	}
	if (rdma_bind_addr(nd->id, (struct sockaddr *)&src)) {
		agent_reply("fail rdma_bind_addr errno %d", errno);
		return NULL;
	}
	if (rdma_create_qp(nd->id, NULL, &qa)) {
		agent_reply("fail rdma_create_qp errno %d", errno);
		return NULL;
	}
	nd->slot = slot;
	nd->nrecv = nrecv;
	nd->buf = calloc((size_t)nrecv, slot);
	nd->mr = nd->buf ? ibv_reg_mr(nd->id->pd, nd->buf, (size_t)nrecv * slot,
				      IBV_ACCESS_LOCAL_WRITE)
			 : NULL;
	if (!nd->mr) {
		agent_reply("fail ibv_reg_mr");
		return NULL;
	}
	for (int k = 0; k < nrecv - 1; k++) /* the last slot is the send buffer */
		if (!agent_post_recv(nd, (uint64_t)k)) {
			agent_reply("fail ibv_post_recv");
			return NULL;
		}
	agent_ids.nids++;
	return nd;
}

bool agent_post_recv(struct agent_node *nd, uint64_t k)
{
	struct ibv_sge sge = {(uintptr_t)nd->buf + k * nd->slot, (uint32_t)nd->slot, nd->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = k, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(nd->id->qp, &wr, &bad) == 0;
}

int agent_post_send(struct agent_node *nd, uint64_t wr_id, uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)nd->buf + (size_t)(nd->nrecv - 1) * nd->slot, len,
			      nd->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND}, *bad;

	wr.wr.ud.ah = nd->ah;
	wr.wr.ud.remote_qpn = nd->rqpn;
	wr.wr.ud.remote_qkey = nd->rqkey;
	return ibv_post_send(nd->id->qp, &wr, &bad);
}

bool agent_send_completed(struct agent_node *nd, int ms)
{
	uint64_t end = t_deadline(ms);
	struct ibv_wc wc;
	int got = 0;

	while (!got && t_left_ms(end))
		got = ibv_poll_cq(nd->id->send_cq, 1, &wc);
	return got == 1 && wc.status == IBV_WC_SUCCESS;
}

void agent_set_dest(struct agent_node *nd, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	if (nd->ah)
		ibv_destroy_ah(nd->ah);
	nd->ah = ah;
	nd->rqpn = qpn;
	nd->rqkey = qkey;
}

void agent_event_reply(const struct rdma_cm_event *ev)
{
	const struct rdma_ud_param *ud = &ev->param.ud;
	const struct ibv_ah_attr *ah = &ud->ah_attr;
	const struct agent_node *nd = ev->id->context;
	char g[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, ah->grh.dgid.raw, g, sizeof(g));
	agent_reply("ok %s %d %d %s dlid 0x%x sl %d rate %d fl 0x%x tc %d hop %d global %d qpn "
		    "0x%x qkey 0x%x",
		    ev->event == RDMA_CM_EVENT_MULTICAST_JOIN	 ? "JOIN"
		    : ev->event == RDMA_CM_EVENT_MULTICAST_ERROR ? "ERROR"
								 : rdma_event_str(ev->event),
		    ev->status, (int)(nd - agent_ids.n), g, ah->dlid, ah->sl, ah->static_rate,
		    ah->grh.flow_label, ah->grh.traffic_class, ah->grh.hop_limit, ah->is_global,
		    ud->qp_num, ud->qkey);
}

/* The node of index @idx, or NULL once a "fail ..." reply is given. */
static struct agent_node *agent_node_at(int idx)
{
	if (idx >= 0 && idx < agent_ids.nids)
		return &agent_ids.n[idx];
	agent_reply("fail no id %d", idx);
	return NULL;
}

void agent_do_join(int idx, const char *group, const char *how, int ev_ms, int retry_ms)
{
	struct sockaddr_in grp;
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = strcmp(how, "sendonly") ? RDMA_MC_JOIN_FLAG_FULLMEMBER
						      : RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
		.addr = (struct sockaddr *)&grp,
	};
	struct agent_node *nd = agent_node_at(idx);
	struct rdma_cm_event *ev;

	if (!nd)
		return;
	agent_addr_parse(group, &grp);
	for (uint64_t end = t_deadline(retry_ms); rdma_join_multicast_ex(nd->id, &ja, nd);) {
		if (errno != EADDRNOTAVAIL || !t_left_ms(end))
			return agent_reply("fail join errno %d", errno);
		usleep(20000); /* bounded by end */
	}
	ev = agent_cm_event(agent_ids.ch, ev_ms);
	if (!ev)
		return agent_reply("fail no event");
	if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN)
		agent_set_dest(nd, ibv_create_ah(nd->id->pd, &ev->param.ud.ah_attr),
			       ev->param.ud.qp_num, ev->param.ud.qkey);
	agent_event_reply(ev);
	rdma_ack_cm_event(ev);
}

void agent_do_leave(int idx, const char *group)
{
	struct agent_node *nd = agent_node_at(idx);
	struct sockaddr_in grp;

	if (!nd)
		return;
	agent_addr_parse(group, &grp);
	if (rdma_leave_multicast(nd->id, (struct sockaddr *)&grp))
		return agent_reply("fail leave errno %d", errno);
	agent_reply("ok");
}

void agent_do_event(int ms)
{
	struct rdma_cm_event *ev = agent_cm_event(agent_ids.ch, ms);

	if (!ev)
		return agent_reply("ok none");
	agent_event_reply(ev);
	rdma_ack_cm_event(ev);
}
