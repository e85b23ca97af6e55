// SPDX-License-Identifier: MIT
/*
 * fault_procs - injected faults, umc-ctl and umc-stat against real
 * processes (umc-faults(7), umc-ctl(1), umc-stat(1)), on loopback and on
 * the simulated InfiniBand subnet.
 *
 *   fault_procs rx     a receiver's rules set by umc-ctl: each action's exact
 *                      effect on which message numbers arrive, in which
 *                      order (drop_nth by hand; drop, burst, dup, reorder,
 *                      corrupt against the pure model of the rules,
 *                      fault.h, with the same seed), delay's lateness,
 *                      selection by device, group and QP, the fault counters
 *                      apart from the natural drops, a malformed SPEC
 *                      refused with the old rules kept
 *   fault_procs tx     a sender's rules: drop_nth, drop, dup, reorder against
 *                      the model, corrupt counted by the receiver as bad
 *                      ICRCs, delay
 *   fault_procs seed   two receivers started with the same UMC_FAULTS and
 *                      seed lose the same messages; another seed, others
 *   fault_procs start  a malformed UMC_FAULTS: one line on stderr, nothing
 *                      injected; a well-formed one is in force from start
 *   fault_procs stat   umc-stat -j while a receiver runs (-w: again and
 *                      again) and after SIGKILL, the listing, --clean
 *                      (the killed receiver's files, its same-host path's
 *                      too, not a running process's), and another user
 *                      refused by umc-stat and umc-ctl
 *   fault_procs ovfl   a receiver stopped while its group socket overflows
 *                      counts in rx_sock_ovfl what the kernel dropped
 *                      there, as /proc/net/udp's drops column shows it,
 *                      on loopback and on InfiniBand
 *   fault_procs ib     on InfiniBand (umc-sm): sa reject= (MULTICAST_ERROR
 *                      -EINVAL), sa timeout (-ETIMEDOUT after the
 *                      client's resends), reregister (one -ENETRESET per
 *                      joined id, joining again works), port-down (the
 *                      port DOWN, -ENETRESET, nothing in, then ACTIVE)
 *
 * As ib_procs.c, an orchestrator drives agents (this program executed
 * again) over pipes (agent.h); it runs umc-ctl and umc-stat from $UMC_BIN
 * as a user would.  Messages carry "UMCK" and their number (big-endian),
 * as umc-mckey numbers them.  Exit status 0 when every check passed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "agent.h"
#include "fault/fault.h"
#include "sm_proc.h"
#include "stat/rundir.h"
#include "wire/be.h"

enum {
	NRECV = 256,
	SLOT = 256,
	MSG = 16,	/* "UMCK", the number, padding */
	EV_MS = 10000,	/* bound on any CM event */
	N = 40,		/* messages per case */
	QUIET_MS = 400, /* a receiver stops this long after the last message */
	MAXNUMS = 4 * N,
};

/* ------------------------------------------------------------------------- */
/* Agent: one application process.                                           */

/* open ADDR: an id bound to ADDR (127.0.0.1: umc_lo, 127.0.0.2: umc_ib0), its QP, receives. */
static void cmd_open(const char *addr)
{
	struct agent_node *nd = agent_open(addr, RDMA_PS_UDP, NRECV, SLOT);

	if (nd)
		agent_reply("ok %d qpn=%u", agent_ids.nids - 1, nd->id->qp->qp_num);
}

/* send IDX N FIRST: N messages numbered FIRST.. to the group of IDX's last JOIN. */
static void cmd_send(int idx, int n, unsigned first)
{
	struct agent_node *nd = &agent_ids.n[idx];
	uint8_t *p = nd->buf + (size_t)(NRECV - 1) * SLOT;
	int done = 0;

	if (!nd->ah)
		return agent_reply("fail no AH");
	for (int i = 0; i < n; i++) {
		memcpy(p, "UMCK", 4);
		put_be32(p + 4, first + (unsigned)i);
		if (agent_post_send(nd, (uint64_t)i, MSG))
			return agent_reply("fail post_send");
		/* One at a time: the send is out (or held by a fault) before the next. */
		if (!agent_send_completed(nd, EV_MS))
			return agent_reply("fail send completion");
		done++;
	}
	agent_reply("ok sent=%d", done);
}

/*
 * recv IDX QUIET [WANT]: the message numbers IDX receives, in arrival
 * order, until it has WANT (default 0) and QUIET ms pass without one, 20 s
 * at most; "first" is the ms from the command to the first message.  WANT
 * keeps a loaded machine's late release of a held datagram from reading
 * as a loss; QUIET still catches one too many.
 */
static void cmd_recv(int idx, int quiet, int want)
{
	struct agent_node *nd = &agent_ids.n[idx];
	uint64_t start = t_now_ms(), last = start, first = 0;
	char list[MAXNUMS * 8] = "";
	size_t len = 0;
	int got = 0;

	while ((got < want || t_now_ms() - last < (uint64_t)quiet) && t_now_ms() - start < 20000) {
		struct ibv_wc wc;
		const uint8_t *p;

		if (ibv_poll_cq(nd->id->recv_cq, 1, &wc) != 1)
			continue;
		if (wc.status != IBV_WC_SUCCESS)
			return agent_reply("fail recv status %s", ibv_wc_status_str(wc.status));
		p = nd->buf + wc.wr_id * SLOT + 40;
		if (!got)
			first = t_now_ms() - start;
		last = t_now_ms();
		if (got++ < MAXNUMS && wc.byte_len == 40 + MSG && !memcmp(p, "UMCK", 4))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%u",
						len ? "," : "", get_be32(p + 4));
		if (!agent_post_recv(nd, wc.wr_id))
			return agent_reply("fail repost");
	}
	agent_reply("ok n=%d first=%llu nums=%s", got, (unsigned long long)first,
		    len ? list : "-");
}

/* port: the state of id 0's port (enum ibv_port_state). */
static void cmd_port(void)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(agent_ids.n[0].id->verbs, 1, &pa))
		return agent_reply("fail ibv_query_port");
	agent_reply("ok state=%d", pa.state);
}

static void agent_main(int cmd)
{
	char line[512];

	agent_reply("ok ready pid=%d", (int)getpid());
	while (t_read_line(cmd, line, sizeof(line), -1)) {
		char a[64], b[64];
		int i1, i2, i3 = 0;
		unsigned u;

		if (sscanf(line, "open %63s", a) == 1)
			cmd_open(a);
		else if (sscanf(line, "join %d %63s %63s", &i1, a, b) == 3)
			agent_do_join(i1, a, b, EV_MS, EV_MS);
		else if (sscanf(line, "leave %d %63s", &i1, a) == 2)
			agent_do_leave(i1, a);
		else if (sscanf(line, "send %d %d %u", &i1, &i2, &u) == 3)
			cmd_send(i1, i2, u);
		else if (sscanf(line, "recv %d %d %d", &i1, &i2, &i3) >= 2)
			cmd_recv(i1, i2, i3);
		else if (sscanf(line, "event %d", &i1) == 1)
			agent_do_event(i1);
		else if (!strcmp(line, "port"))
			cmd_port();
		else if (!strcmp(line, "quit")) {
			agent_reply("ok bye");
			exit(0);
		} else
			agent_reply("fail unknown command %s", line);
	}
	exit(0);
}

/* ------------------------------------------------------------------------- */
/* Orchestrator: tools.                                                      */

/* Run a shell command line; its stdout and stderr in @out; its exit status. */
static int run(char *out, size_t size, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	FILE *p;
	size_t n = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strcat(cmd, " 2>&1");
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (n + 1 < size && fgets(out + n, (int)(size - n), p))
		n += strlen(out + n);
	out[n] = 0;
	while (fgetc(p) != EOF)
		;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *bin(void)
{
	return getenv("UMC_BIN");
}

/* umc-ctl PID faults SPEC, which must succeed. */
static void faults(const struct agent *a, const char *spec)
{
	char out[4096];

	if (run(out, sizeof(out), "%s/umc-ctl %d faults '%s'", bin(), (int)a->pid, spec))
		agent_fail("umc-ctl %d faults '%s': %s", (int)a->pid, spec, out);
}

/*
 * Counter @name of process @pid as umc-stat -j shows it: of device @dev
 * (NULL: of its first group); -1 if not found.
 */
static long stat_counter(pid_t pid, const char *dev, const char *name)
{
	static char out[65536];
	char key[64], from_key[64], *from, *at;

	if (run(out, sizeof(out), "%s/umc-stat -j %d", bin(), (int)pid))
		return -1;
	snprintf(from_key, sizeof(from_key), dev ? "\"name\":\"%s\"" : "\"groups\":[", dev);
	from = strstr(out, from_key);
	snprintf(key, sizeof(key), "\"%s\":", name);
	at = from ? strstr(from, key) : NULL; /* the first after it: that object's counter */
	return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

/* ------------------------------------------------------------------------- */
/* Orchestrator: the model of what a rule does to a run of messages.        */

/*
 * The numbers that arrive, in order, when @n messages numbered from 0 meet
 * the one rule of @spec on device @dev: what umc_fault_decide() says for
 * each, held ones after the DEPTH-th later one (or at the end), duplicates
 * right after their original.
 */
static void model(const char *spec, const char *dev, int n, char *out, size_t size)
{
	struct umc_fault_spec s;
	struct umc_fault_stream st;
	struct umc_fault_verdict v;
	char err[UMC_FAULT_ERR_MAX];
	int held = -1, held_copies = 0;
	size_t len = 0;

	if (umc_fault_spec_parse(spec, &s, err) || s.nrules != 1) {
		agent_fail("model: %s: %s", spec, err);
		return;
	}
	umc_fault_stream_init(&st, s.seed, 0, dev);
	out[0] = 0;
#define PUT(x) (len += (size_t)snprintf(out + len, size - len, "%s%d", len ? "," : "", (x)))
	for (int i = 0; i < n; i++) {
		umc_fault_decide(&s.rule[0], &st, &v);
		if (v.fate != UMC_FAULT_PASS)
			continue;
		if (v.hold) {
			held = i;
			held_copies = 1 + v.dup;
		} else {
			for (int c = 0; c < 1 + v.dup; c++)
				PUT(i);
		}
		if (v.release && held >= 0) {
			for (int c = 0; c < held_copies; c++)
				PUT(held);
			held = -1;
		}
	}
	for (int c = 0; held >= 0 && c < held_copies; c++)
		PUT(held);
#undef PUT
	if (!len)
		snprintf(out, size, "-");
}

/* ------------------------------------------------------------------------- */
/* Orchestrator: scenarios.                                                  */

static void start(struct agent *a, const char *name)
{
	agent_spawn_exec(a, name, "fault_procs");
	agent_ready(a);
}

/* The reply's "nums=" list. */
static const char *nums(const struct agent *a)
{
	const char *p = strstr(a->last, "nums=");

	return p ? p + 5 : "";
}

/* Group of the scenario: 239.253.P1.P2 (P = pid), so parallel runs never share one. */
static void scenario_group(char *addr, int salt)
{
	unsigned p = (unsigned)getpid() + (unsigned)salt * 7919u;

	snprintf(addr, 32, "239.253.%u.%u", (p >> 8) & 0xff, p & 0xff);
}

/* @s sends @n messages; @r receives them until quiet, having at least @want. */
static void transfer_want(struct agent *s, int sidx, struct agent *r, int ridx, int n, int want)
{
	agent_send(r, "recv %d %d %d", ridx, QUIET_MS, want);
	agent_cmd(s, "send %d %d 0", sidx, n);
	if (!agent_get_reply(r))
		agent_fail("%s: recv: %s", r->name, r->last);
}

static void transfer(struct agent *s, int sidx, struct agent *r, int ridx, int n)
{
	transfer_want(s, sidx, r, ridx, n, 0);
}

/* A receiver R and a send-only sender S on umc_lo, on group @g. */
static void pair(struct agent *r, struct agent *s, const char *g)
{
	start(r, "R");
	start(s, "S");
	agent_cmd(r, "open 127.0.0.1");
	agent_cmd(r, "join 0 %s full", g);
	agent_cmd(s, "open 127.0.0.1");
	agent_cmd(s, "join 0 %s sendonly", g);
}

/* How many numbers "1,2,3" holds ("" or "-": none). */
static int count_nums(const char *list)
{
	int n = *list && strcmp(list, "-");

	for (; *list; list++)
		n += *list == ',';
	return n;
}

/* Under @spec on @who, N messages from S to R arrive as the model says. */
static void expect_model(struct agent *who, struct agent *r, struct agent *s, const char *spec)
{
	char want[MAXNUMS * 8], all[MAXNUMS * 8];

	faults(who, spec);
	model(spec, "umc_lo", N, want, sizeof(want));
	/* The seed makes the rule act within N messages: a stage that did nothing would fail. */
	model("rx drop=0", "umc_lo", N, all, sizeof(all));
	if (!strcmp(want, all))
		agent_fail("%s: the model changes nothing in %d messages", spec, N);
	transfer_want(s, 0, r, 0, N, count_nums(want));
	if (strcmp(nums(r), want))
		agent_fail("%s: arrived %s, the model says %s", spec, nums(r), want);
}

/*
 * "DIR drop_nth=NTH" on @who: every NTH-th of the messages @s sends @r
 * arrives no more (numbers NTH-1, 2*NTH-1, ...); @want: those that arrive.
 */
static void expect_drop_nth(struct agent *who, struct agent *r, struct agent *s, const char *dir,
			    int nth, char *want, size_t size)
{
	char spec[64];
	size_t len = 0;

	want[0] = 0;
	for (int i = 0; i < N; i++)
		if (i % nth != nth - 1)
			len += (size_t)snprintf(want + len, size - len, "%s%d", len ? "," : "", i);
	snprintf(spec, sizeof(spec), "%s drop_nth=%d", dir, nth);
	faults(who, spec);
	transfer(s, 0, r, 0, N);
	if (strcmp(nums(r), want))
		agent_fail("%s: arrived %s, not %s", spec, nums(r), want);
}

/* "DIR delay=200000" on @who: all of them arrive, in order, none before 190 ms. */
static void expect_delay(struct agent *who, struct agent *r, struct agent *s, const char *dir)
{
	char spec[64], want[MAXNUMS * 8];

	snprintf(spec, sizeof(spec), "%s delay=200000", dir);
	faults(who, spec);
	transfer(s, 0, r, 0, N);
	model("rx drop=0", "umc_lo", N, want, sizeof(want));
	if (strcmp(nums(r), want) || agent_field(r, "first") < 190)
		agent_fail("%s: arrived %s after %lu ms", spec, nums(r), agent_field(r, "first"));
}

static void scenario_rx(void)
{
	static const char *const specs[] = {
		"seed=5; rx drop=0.3",	  "seed=6; rx burst=0.1:4", "seed=7; rx dup=0.3",
		"seed=8; rx reorder=0.3:2", "seed=9; rx corrupt=0.5", "seed=10; rx dup=0.5 reorder=0.5:3",
		"rx drop=1",
	};
	struct agent r, s;
	char g[32], g2[32], want[MAXNUMS * 8], out[4096], spec[256];
	unsigned qpn1;

	scenario_group(g, 1);
	scenario_group(g2, 2);
	pair(&r, &s, g);
	expect_drop_nth(&r, &r, &s, "rx", 4, want, sizeof(want));
	/* Counted as injected, on the device and the group, never as a natural drop. */
	agent_expect_eq("fault_drop_nth", (unsigned long)stat_counter(r.pid, "umc_lo", "fault_drop_nth"),
			N / 4);
	agent_expect_eq("group fault_drop_nth",
			(unsigned long)stat_counter(r.pid, NULL, "fault_drop_nth"), N / 4);
	agent_expect_eq("rx_packets", (unsigned long)stat_counter(r.pid, "umc_lo", "rx_packets"), N);
	agent_expect_eq("rx_delivered", (unsigned long)stat_counter(r.pid, "umc_lo", "rx_delivered"),
			N - N / 4);
	agent_expect_eq("rx_no_recv", (unsigned long)stat_counter(r.pid, "umc_lo", "rx_no_recv"), 0);
	/* A malformed SPEC changes nothing: one line, exit 1, drop_nth=4 goes on. */
	faults(&r, "rx drop_nth=4");
	snprintf(spec, sizeof(spec), "umc-ctl: %d: faults: column 4 (\"drop=1.5\"): a probability",
		 (int)r.pid);
	if (run(out, sizeof(out), "%s/umc-ctl %d faults 'rx drop=1.5'", bin(), (int)r.pid) != 1 ||
	    strncmp(out, spec, strlen(spec)) ||
	    strcmp(out + strlen(spec), " is a decimal number from 0 to 1, at most 9 digits after "
				       "the point\n"))
		agent_fail("umc-ctl with a malformed SPEC: '%s'", out);
	transfer(&s, 0, &r, 0, N);
	if (strcmp(nums(&r), want))
		agent_fail("after the malformed SPEC: arrived %s, not %s", nums(&r), want);
	/* dev= selects the device: another device's rule loses nothing here, this one's all. */
	faults(&r, "rx dev=umc_ib0 drop=1");
	transfer(&s, 0, &r, 0, N);
	model("rx drop=0", "umc_lo", N, want, sizeof(want));
	if (strcmp(nums(&r), want))
		agent_fail("rx dev=umc_ib0 drop=1: arrived %s on umc_lo", nums(&r));
	faults(&r, "rx dev=umc_lo drop=1");
	transfer(&s, 0, &r, 0, N);
	agent_expect_eq("rx dev=umc_lo drop=1: delivered", agent_field(&r, "n"), 0);
	/* Every action, against the model with the same seed. */
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		expect_model(&r, &r, &s, specs[i]);
	expect_delay(&r, &r, &s, "rx");
	/* Selection: a second QP on the group, a second group; only QP 1's copy of g is lost. */
	agent_cmd(&r, "open 127.0.0.1");
	qpn1 = (unsigned)agent_field(&r, "qpn");
	agent_cmd(&r, "join 1 %s full", g);
	agent_cmd(&r, "open 127.0.0.1");
	agent_cmd(&r, "join 2 %s full", g2);
	agent_cmd(&s, "open 127.0.0.1");
	agent_cmd(&s, "join 1 %s sendonly", g2);
	snprintf(spec, sizeof(spec), "rx group=%s qpn=%u drop=1", g, qpn1);
	faults(&r, spec);
	transfer(&s, 0, &r, 0, N);
	model("rx drop=0", "umc_lo", N, want, sizeof(want));
	if (strcmp(nums(&r), want))
		agent_fail("%s: QP 0 got %s", spec, nums(&r));
	agent_cmd(&r, "recv 1 100");
	if (agent_field(&r, "n") != 0)
		agent_fail("%s: QP %u got %s", spec, qpn1, nums(&r));
	transfer(&s, 1, &r, 2, N);
	if (strcmp(nums(&r), want))
		agent_fail("%s: the other group got %s", spec, nums(&r));
	agent_finish(&r);
	agent_finish(&s);
}

static void scenario_tx(void)
{
	static const char *const specs[] = {
		"seed=2; tx drop=0.25", "seed=3; tx dup=0.5", "seed=4; tx reorder=0.5:1",
		"seed=12; tx burst=0.2:3",
	};
	struct agent r, s;
	char g[32], want[MAXNUMS * 8];

	scenario_group(g, 3);
	pair(&r, &s, g);
	expect_drop_nth(&s, &r, &s, "tx", 5, want, sizeof(want));
	agent_expect_eq("sender fault_drop_nth",
			(unsigned long)stat_counter(s.pid, "umc_lo", "fault_drop_nth"), N / 5);
	agent_expect_eq("sender tx_packets", (unsigned long)stat_counter(s.pid, "umc_lo", "tx_packets"),
			N - N / 5);
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		expect_model(&s, &r, &s, specs[i]);
	/* corrupt: sent with a bad ICRC; the receiver counts each as such, delivers none. */
	faults(&s, "tx corrupt=1");
	transfer(&s, 0, &r, 0, N);
	agent_expect_eq("corrupt: delivered", agent_field(&r, "n"), 0);
	agent_expect_eq("corrupt: rx_bad_icrc", (unsigned long)stat_counter(r.pid, "umc_lo", "rx_bad_icrc"),
			N);
	agent_expect_eq("corrupt: fault_corrupt",
			(unsigned long)stat_counter(s.pid, "umc_lo", "fault_corrupt"), N);
	/* delay: sent later by the control thread. */
	expect_delay(&s, &r, &s, "tx");
	agent_finish(&r);
	agent_finish(&s);
}

static void scenario_seed(void)
{
	const char *spec = "seed=11; rx drop=0.5 dup=0.2";
	struct agent r1, r2, r3, s;
	char g[32], a[MAXNUMS * 8], want[MAXNUMS * 8];

	scenario_group(g, 4);
	setenv("UMC_FAULTS", spec, 1);
	start(&r1, "R1");
	start(&r2, "R2");
	setenv("UMC_FAULTS", "seed=12; rx drop=0.5 dup=0.2", 1);
	start(&r3, "R3");
	unsetenv("UMC_FAULTS");
	start(&s, "S");
	agent_cmd(&s, "open 127.0.0.1");
	agent_cmd(&s, "join 0 %s sendonly", g);
	agent_cmd(&r1, "open 127.0.0.1");
	agent_cmd(&r1, "join 0 %s full", g);
	agent_cmd(&r2, "open 127.0.0.1");
	agent_cmd(&r2, "join 0 %s full", g);
	agent_cmd(&r3, "open 127.0.0.1");
	agent_cmd(&r3, "join 0 %s full", g);
	agent_send(&r1, "recv 0 %d", QUIET_MS);
	agent_send(&r2, "recv 0 %d", QUIET_MS);
	agent_send(&r3, "recv 0 %d", QUIET_MS);
	agent_cmd(&s, "send 0 %d 0", N);
	agent_get_reply(&r1);
	agent_get_reply(&r2);
	agent_get_reply(&r3);
	snprintf(a, sizeof(a), "%s", nums(&r1));
	model(spec, "umc_lo", N, want, sizeof(want));
	if (strcmp(a, want) || strcmp(nums(&r2), a))
		agent_fail("same seed: %s and %s, the model says %s", a, nums(&r2), want);
	if (!strcmp(nums(&r3), a))
		agent_fail("another seed gave the same: %s", a);
	agent_finish(&r1);
	agent_finish(&r2);
	agent_finish(&r3);
	agent_finish(&s);
}

/*
 * A receiver @r started with UMC_FAULTS=@env joins @g; @s's messages
 * arrive as @model_spec says, and umc-stat -j shows @shown.
 */
static void expect_from_start(struct agent *r, struct agent *s, const char *g, const char *env,
			      const char *model_spec, const char *shown)
{
	char out[4096], want[MAXNUMS * 8];

	setenv("UMC_FAULTS", env, 1);
	start(r, "R");
	unsetenv("UMC_FAULTS");
	agent_cmd(r, "open 127.0.0.1");
	agent_cmd(r, "join 0 %s full", g);
	transfer(s, 0, r, 0, N);
	model(model_spec, "umc_lo", N, want, sizeof(want));
	if (strcmp(nums(r), want))
		agent_fail("UMC_FAULTS='%s': arrived %s", env, nums(r));
	if (run(out, sizeof(out), "%s/umc-stat -j %d", bin(), (int)r->pid) || !strstr(out, shown))
		agent_fail("UMC_FAULTS='%s': umc-stat says %s", env, out);
	agent_finish(r);
}

static void scenario_start(void)
{
	struct agent r, s;
	char g[32], out[4096];

	scenario_group(g, 5);
	/* One line on stderr, the process runs on: umc-mckey joins and leaves. */
	if (run(out, sizeof(out),
		"{ UMC_FAULTS='rx drop=2' %s/umc-mckey -b 127.0.0.1 -m %s -C 0 -t 5000 >/dev/null; }",
		bin(), g) ||
	    strcmp(out, "umcast: UMC_FAULTS: column 4 (\"drop=2\"): a probability is a decimal "
			"number from 0 to 1, at most 9 digits after the point\n"))
		agent_fail("a malformed UMC_FAULTS: '%s'", out);
	start(&s, "S");
	agent_cmd(&s, "open 127.0.0.1");
	agent_cmd(&s, "join 0 %s sendonly", g);
	/* Nothing injected: every message arrives, no rules shown. */
	expect_from_start(&r, &s, g, "rx drop=2", "rx drop=0", "\"faults\":null");
	/* A well-formed one is in force from the start, its seed shown. */
	expect_from_start(&r, &s, g, "seed=1; rx drop_nth=2", "rx drop_nth=2",
			  "\"faults\":\"seed=1; rx drop_nth=2\"");
	agent_finish(&s);
}

/* Copy umc-stat and umc-ctl where another user may run them; the directory. */
static void tools_for_others(char *dir)
{
	char out[256];

	strcpy(dir, "/tmp/umc-fault-tools-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755) ||
	    run(out, sizeof(out), "cp %s/umc-stat %s/umc-ctl %s && chmod 755 %s/umc-*", bin(), bin(),
		dir, dir))
		agent_fail("copying the tools: %s", out);
}

/* RUNDIR/PID.ctl, the control socket of process @pid of this user. */
static void ctl_path(pid_t pid, char *path, size_t size)
{
	char dir[UMC_RUNDIR_MAX];

	if (umc_rundir_path(geteuid(), dir, sizeof(dir)) < 0)
		agent_fail("no run directory");
	snprintf(path, size, "%s/%d.ctl", dir, (int)pid);
}

/*
 * The same-host path's files of group @g in RUNDIR/shm (umcast(7)):
 * whether its file is there (shm-NETNS-IFINDEX-GROUP, GROUP the address in
 * hex), and in *@fifos how many of its readers' wake-up FIFOs (the file's
 * name, then .wSLOT-TOKEN).  With @age, each looks changed a minute ago:
 * past the time umc-stat --clean leaves a new file alone.
 */
static bool shm_files(const char *g, int *fifos, bool age)
{
	const struct timespec ago[2] = {{time(NULL) - 60, 0}, {time(NULL) - 60, 0}};
	char dir[UMC_RUNDIR_MAX + 8], suffix[16];
	uint8_t a[4] = {0};
	struct dirent *e;
	bool file = false;
	DIR *d;

	*fifos = 0;
	inet_pton(AF_INET, g, a);
	snprintf(suffix, sizeof(suffix), "-%02x%02x%02x%02x", a[0], a[1], a[2], a[3]);
	if (umc_rundir_path(geteuid(), dir, UMC_RUNDIR_MAX) < 0 || !(d = opendir(strcat(dir, "/shm"))))
		return false;
	while ((e = readdir(d))) {
		const char *at = strstr(e->d_name, suffix);
		const char *rest = at ? at + strlen(suffix) : NULL;

		if (strncmp(e->d_name, "shm-", 4) || !rest || (*rest && strncmp(rest, ".w", 2)))
			continue;
		if (*rest)
			++*fifos;
		else
			file = true;
		if (age)
			utimensat(dirfd(d), e->d_name, ago, AT_SYMLINK_NOFOLLOW);
	}
	closedir(d);
	return file;
}

/*
 * Leave a control socket as a killed umc-sm does (no counters file beside
 * it), under the PID of a process that is gone; its path in @path.
 */
static void orphan_ctl(char *path, size_t size)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	pid_t pid = fork();
	int fd;

	if (pid == 0)
		_exit(0);
	if (pid < 0 || waitpid(pid, NULL, 0) != pid)
		agent_fail("fork: %s", strerror(errno));
	ctl_path(pid, path, size);
	if (strlen(path) >= sizeof(a.sun_path))
		agent_fail("%s: too long for a socket", path);
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)))
		agent_fail("binding %s: %s", path, strerror(errno));
	close(fd);
}

static void scenario_stat(void)
{
	struct agent r, s;
	char g[32], g2[32], g3[32], out[65536], dir[64], want[64], orphan[UMC_RUNDIR_MAX + 32];
	const char *shm = getenv("UMC_SHM");
	bool shm_on = shm && *shm && strcmp(shm, "0");
	int fifos2 = 0, fifos3 = 0, n;

	scenario_group(g, 6);
	pair(&r, &s, g);
	/*
	 * The same-host path's files: @g2's only R's (with the path on, its
	 * FIFO too), @g3's S's as a receiver.
	 */
	scenario_group(g2, 16);
	scenario_group(g3, 17);
	agent_cmd(&r, "open 127.0.0.1");
	agent_cmd(&r, "join 1 %s full", g2);
	agent_cmd(&s, "open 127.0.0.1");
	agent_cmd(&s, "join 1 %s full", g3);
	if (!shm_files(g2, &fifos2, false) || !shm_files(g3, &fifos3, false) ||
	    fifos2 != shm_on || fifos3 != shm_on)
		agent_fail("RUNDIR/shm: the files of %s and %s, %d and %d FIFOs", g2, g3, fifos2,
			   fifos3);
	transfer(&s, 0, &r, 0, 25);
	agent_expect_eq("delivered", agent_field(&r, "n"), 25);
	/* While it runs. */
	if (run(out, sizeof(out), "%s/umc-stat -j %d", bin(), (int)r.pid))
		agent_fail("umc-stat -j: %s", out);
	if (!strstr(out, "\"state\":\"running\"") || !strstr(out, "\"name\":\"umc_lo\"") ||
	    !strstr(out, "\"joins\":[{\"id\":1,\"join_state\":1,\"state\":\"joined\"}]"))
		agent_fail("umc-stat -j while running: %s", out);
	snprintf(want, sizeof(want), "\"address\":\"%s\"", g);
	if (!strstr(out, want))
		agent_fail("umc-stat -j: no %s in %s", want, out);
	agent_expect_eq("rx_packets", (unsigned long)stat_counter(r.pid, "umc_lo", "rx_packets"), 25);
	agent_expect_eq("rx_delivered", (unsigned long)stat_counter(r.pid, "umc_lo", "rx_delivered"), 25);
	agent_expect_eq("rx_bytes", (unsigned long)stat_counter(r.pid, "umc_lo", "rx_bytes"), 25 * MSG);
	agent_expect_eq("group rx_packets", (unsigned long)stat_counter(r.pid, NULL, "rx_packets"), 25);
	agent_expect_eq("sender tx_packets", (unsigned long)stat_counter(s.pid, "umc_lo", "tx_packets"),
			25);
	agent_expect_eq("sender group tx_bytes",
			(unsigned long)stat_counter(s.pid, NULL, "tx_bytes"), 25 * MSG);
	/* -w repeats (every 0.4 s, until the interrupt after 2 s: at least twice). */
	run(out, sizeof(out),
	    "timeout -s INT 2 %s/umc-stat -j -w 0.4 %d | grep -o '\"rx_delivered\":25' | wc -l",
	    bin(), (int)r.pid);
	if (atoi(out) < 2)
		agent_fail("umc-stat -w 0.4 for 2 s: %d reports", atoi(out));
	/* Another user reaches neither its counters nor its control. */
	tools_for_others(dir);
	if (run(out, sizeof(out), "setpriv --reuid=65534 --regid=65534 --clear-groups %s/umc-stat -j %d",
		dir, (int)r.pid) != 1 ||
	    !strstr(out, "Permission denied"))
		agent_fail("umc-stat as uid 65534: '%s'", out);
	if (run(out, sizeof(out), "setpriv --reuid=65534 --regid=65534 --clear-groups %s/umc-ctl %d faults 'rx drop=1'",
		dir, (int)r.pid) != 1 ||
	    !strstr(out, "permission denied: the process belongs to another user"))
		agent_fail("umc-ctl as uid 65534: '%s'", out);
	run(out, sizeof(out), "rm -rf %s", dir);
	/* SIGKILL: the last values stay readable. */
	agent_kill(&r);
	if (run(out, sizeof(out), "%s/umc-stat -j %d", bin(), (int)r.pid) ||
	    !strstr(out, "\"state\":\"gone\""))
		agent_fail("umc-stat -j after SIGKILL: %s", out);
	agent_expect_eq("rx_delivered after SIGKILL",
			(unsigned long)stat_counter(r.pid, "umc_lo", "rx_delivered"), 25);
	agent_expect_eq("group rx_bytes after SIGKILL",
			(unsigned long)stat_counter(r.pid, NULL, "rx_bytes"), 25 * MSG);
	snprintf(want, sizeof(want), "%d gone", (int)r.pid);
	if (run(out, sizeof(out), "%s/umc-stat | tr -s ' '", bin()) || !strstr(out, want))
		agent_fail("umc-stat does not list %s: %s", want, out);
	/*
	 * --clean removes what it left, and the control socket a killed
	 * umc-sm leaves alone (no counters file beside it); the running
	 * sender's files stay.
	 */
	orphan_ctl(orphan, sizeof(orphan));
	shm_files(g, &n, true);
	shm_files(g2, &n, true);
	shm_files(g3, &n, true);
	if (run(out, sizeof(out), "%s/umc-stat --clean", bin()) ||
	    run(out, sizeof(out), "%s/umc-stat -j %d", bin(), (int)r.pid) != 1 ||
	    run(out, sizeof(out), "%s/umc-stat -j %d", bin(), (int)s.pid))
		agent_fail("umc-stat --clean: %s", out);
	if (!access(orphan, F_OK))
		agent_fail("umc-stat --clean left %s", orphan);
	ctl_path(s.pid, orphan, sizeof(orphan));
	if (access(orphan, F_OK))
		agent_fail("umc-stat --clean removed the running sender's %s", orphan);
	/*
	 * ... and the same-host path's files nobody has open or mapped: the
	 * killed R's of @g2, and its FIFOs; S's file of @g3 and its FIFO stay.
	 */
	if (shm_files(g2, &n, false) || n)
		agent_fail("umc-stat --clean left the killed process's file of %s (%d FIFOs)", g2, n);
	shm_files(g, &n, false);
	if (n)
		agent_fail("umc-stat --clean left %d FIFOs of the killed reader of %s", n, g);
	if (!shm_files(g3, &n, false) || n != fifos3)
		agent_fail("umc-stat --clean removed what the running S uses of %s (%d FIFOs of %d)",
			   g3, n, fifos3);
	agent_finish(&s);
}

/*
 * The kernel's drops (the "drops" column of /proc/net/udp and udp6) of the
 * UDP sockets process @pid holds, summed; -1 if unreadable.
 */
static long sock_drops(pid_t pid)
{
	static const char *const tables[] = {"/proc/net/udp", "/proc/net/udp6"};
	unsigned long inode[64];
	char path[320], link[64], line[512];
	int n = 0;
	long sum = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	while ((de = readdir(d)) && n < 64) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%d/fd/%s", (int)pid, de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		link[len > 0 ? len : 0] = 0;
		if (sscanf(link, "socket:[%lu]", &inode[n]) == 1)
			n++;
	}
	closedir(d);
	for (size_t t = 0; t < 2; t++) {
		FILE *f = fopen(tables[t], "r");

		while (f && fgets(line, sizeof(line), f)) {
			unsigned long ino, drops;

			if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu %*s %*s %lu", &ino,
				   &drops) != 2)
				continue;
			for (int k = 0; k < n; k++)
				sum += inode[k] == ino ? (long)drops : 0;
		}
		if (f)
			fclose(f);
	}
	return sum;
}

/*
 * On the device of @addr (@dev), a receiver stopped while its group
 * socket overflows counts the kernel's drops there in rx_sock_ovfl.
 */
static void ovfl_on(const char *addr, const char *dev, int salt)
{
	enum { M = 20000 }; /* more than the socket's 4 MiB (UMC_RX_SOCKBUF) hold */
	struct agent r, s;
	char g[32];
	long ovfl, drops, got;

	scenario_group(g, salt);
	start(&r, "R");
	start(&s, "S");
	agent_cmd(&r, "open %s", addr);
	agent_cmd(&r, "join 0 %s full", g);
	agent_cmd(&s, "open %s", addr);
	agent_cmd(&s, "join 0 %s sendonly", g);
	transfer(&s, 0, &r, 0, 1);
	/* Stopped, it reads nothing: the socket fills, the kernel drops the rest. */
	kill(r.pid, SIGSTOP);
	agent_cmd(&s, "send 0 %d 0", M);
	kill(r.pid, SIGCONT);
	agent_cmd(&r, "recv 0 %d", QUIET_MS);
	/* The drops after the last datagram queued are told by the next one. */
	transfer(&s, 0, &r, 0, 1);
	agent_expect_eq("delivered after", agent_field(&r, "n"), 1);
	ovfl = stat_counter(r.pid, dev, "rx_sock_ovfl");
	got = stat_counter(r.pid, dev, "rx_packets");
	drops = sock_drops(r.pid);
	printf("%s: rx_sock_ovfl %ld, the kernel's drops %ld, rx_packets %ld\n", dev, ovfl, drops,
	       got);
	if (ovfl <= 0 || ovfl != drops)
		agent_fail("%s: rx_sock_ovfl %ld, the kernel dropped %ld", dev, ovfl, drops);
	/* Every datagram sent is read or counted as dropped. */
	agent_expect_eq("rx_packets + rx_sock_ovfl", (unsigned long)(got + ovfl), M + 2);
	agent_finish(&r);
	agent_finish(&s);
}

/* umc-sm started, the agents started next on it (agent_start_sm), at umc_ib0's own address. */
static void sm_up(struct test_sm *sm)
{
	agent_start_sm(sm, NULL);
	unsetenv("UMC_IB_ADDR");
}

static void sm_down(struct test_sm *sm)
{
	if (test_sm_stop(sm))
		agent_fail("umc-sm exit status");
	test_sm_free(sm);
}

static void scenario_ovfl(void)
{
	struct test_sm sm;

	ovfl_on("127.0.0.1", "umc_lo", 7);
	sm_up(&sm);
	ovfl_on("127.0.0.2", "umc_ib0", 8);
	sm_down(&sm);
}

/* ------------------------------------------------------------------------- */
/* InfiniBand.                                                               */

/* Every one of @nids joined ids of @a gets one ERROR -ENETRESET, then leaves and joins again. */
static void expect_resets(struct agent *a, int nids, char g[][32])
{
	char want[32];

	agent_expect_resets(a, nids, t_deadline(EV_MS));
	for (int j = 0; j < nids; j++) {
		agent_cmd(a, "leave %d %s", j, g[j]);
		agent_cmd(a, "join %d %s full", j, g[j]);
		snprintf(want, sizeof(want), "ok JOIN 0 %d ", j);
		agent_expect_prefix(a->last, want, "join again");
	}
}

static void scenario_ib(void)
{
	struct test_sm sm;
	struct agent r, s;
	char g[4][32], out[4096];
	uint64_t t0, dt;

	sm_up(&sm);
	for (int j = 0; j < 4; j++)
		scenario_group(g[j], 10 + j);
	start(&r, "R");
	start(&s, "S");
	for (int j = 0; j < 3; j++)
		agent_cmd(&r, "open 127.0.0.2");
	agent_cmd(&s, "open 127.0.0.2");
	/* reject=: the join's SA response has that status: -EINVAL, as any SA status. */
	faults(&r, "sa reject=denied");
	agent_cmd(&r, "join 0 %s full", g[0]);
	agent_expect_prefix(r.last, "ok ERROR -22 0 ", "sa reject=denied");
	agent_expect_eq("fault_sa_reject",
			(unsigned long)stat_counter(r.pid, "umc_ib0", "fault_sa_reject"), 1);
	/* timeout on one group: -ETIMEDOUT after the resends; another group joins. */
	snprintf(out, sizeof(out), "sa group=%s timeout", g[0]);
	faults(&r, out);
	t0 = t_now_ms();
	agent_cmd(&r, "join 0 %s full", g[0]);
	dt = t_now_ms() - t0;
	agent_expect_prefix(r.last, "ok ERROR -110 0 ", "sa timeout");
	if (dt < 2500 || dt > 9000)
		agent_fail("sa timeout: %s after %llu ms", r.last, (unsigned long long)dt);
	agent_cmd(&r, "join 1 %s full", g[1]);
	agent_expect_prefix(r.last, "ok JOIN 0 1 ", "another group's join");
	faults(&r, "");
	agent_cmd(&r, "join 0 %s full", g[0]);
	agent_cmd(&r, "join 2 %s full", g[2]);
	/* reregister: each of the 3 joined ids gets one -ENETRESET; joining again works. */
	if (run(out, sizeof(out), "%s/umc-ctl %d reregister", bin(), (int)r.pid) ||
	    strcmp(out, "umc_ib0: reregistered\n"))
		agent_fail("umc-ctl reregister: %s", out);
	expect_resets(&r, 3, g);
	/* port-down: DOWN, -ENETRESET, nothing arrives; ACTIVE again after it. */
	agent_cmd(&s, "join 0 %s sendonly", g[0]);
	if (run(out, sizeof(out), "%s/umc-ctl %d port-down 2", bin(), (int)r.pid) ||
	    strcmp(out, "umc_ib0: down for 2 s\n"))
		agent_fail("umc-ctl port-down: %s", out);
	agent_cmd(&r, "port");
	agent_expect_eq("port state while down", agent_field(&r, "state"), IBV_PORT_DOWN);
	transfer(&s, 0, &r, 0, 10);
	agent_expect_eq("received while down", agent_field(&r, "n"), 0);
	expect_resets(&r, 3, g);
	agent_cmd(&r, "port");
	agent_expect_eq("port state after", agent_field(&r, "state"), IBV_PORT_ACTIVE);
	agent_cmd(&s, "join 0 %s sendonly", g[0]);
	transfer(&s, 0, &r, 0, 10);
	agent_expect_eq("received after", agent_field(&r, "n"), 10);
	agent_finish(&r);
	agent_finish(&s);
	sm_down(&sm);
}

static const struct agent_scenario scenarios[] = {
	{"rx", scenario_rx},	   {"tx", scenario_tx},	    {"seed", scenario_seed},
	{"start", scenario_start}, {"stat", scenario_stat}, {"ovfl", scenario_ovfl},
	{"ib", scenario_ib},
};

int main(int argc, char **argv)
{
	int cmd;

	signal(SIGPIPE, SIG_IGN);
	if (agent_exec_fds(argc, argv, &cmd))
		agent_main(cmd); /* never returns */
	return agent_run_scenario("fault_procs", argc > 1 ? argv[1] : "", scenarios,
				  sizeof(scenarios) / sizeof(scenarios[0]));
}
