// SPDX-License-Identifier: MIT
/*
 * ib_procs - CM joins over the simulated InfiniBand link, several processes
 * against a umc-sm started by the test (the kernel's cma_join_ib_multicast()
 * and core/multicast.c; docs/design.md, "The SA client and the IB joins").
 *
 *   ib_procs sendonly     two full-member receivers and a send-only sender:
 *                         JOIN events carry the SA's record (dlid = MLID,
 *                         MGID ff12:4001:ffff::, SL, rate, ...); the SA
 *                         holds JoinState 0x1, 0x1 and 0x8 for the three
 *                         ports; every message reaches both receivers with
 *                         the packet's real GRH; the sender receives none
 *   ib_procs nosendonly   the same sender against `umc-sm --no-sendonly`:
 *                         MULTICAST_ERROR with status -EINVAL, nothing held
 *                         at the SA; ClassPortInfo bit 12 of
 *                         CapabilityMask2 clear
 *   ib_procs aggregate    one process, three ids on one group (full, full,
 *                         send-only): JoinStates OR-ed per port (0x9), a
 *                         second full join completes without an SA Set,
 *                         subset leaves Delete only bits no join needs,
 *                         the last leave deletes the group
 *   ib_procs mgid0        joins of 0.0.0.0 ask the SA for MGIDs: each its
 *                         own group (ff12:a01b:...) and MLID
 *   ib_procs ipoib        an RDMA_PS_IPOIB id takes the IPoIB broadcast
 *                         group's Q_Key (0x0B1B) and joins ff12:401b:
 *   ib_procs lease        a process killed with SIGKILL loses its
 *                         membership when its lease ends
 *   ib_procs exit         a process that exits without leaving loses it at
 *                         once: its port unregisters at exit
 *   ib_procs restart      umc-sm killed and restarted under 20 joined ids in
 *                         4 processes: each id gets exactly one
 *                         MULTICAST_ERROR -ENETRESET, nothing hangs, and
 *                         joining again works
 *   ib_procs timeout      an SM that stops answering: the join ends with
 *                         MULTICAST_ERROR -ETIMEDOUT (3 s with retries)
 *   ib_procs lapse        umc-sm silent for longer than the lease: one
 *                         -ENETRESET per joined id, then the port registers
 *                         again at the same SM and works there
 *   ib_procs smctl        umc-sm told by umc-ctl to reject a group's joins
 *                         (-EINVAL, until off), to be silent (-ETIMEDOUT),
 *                         and to fail over (one -ENETRESET per joined id,
 *                         joining again works)
 *   ib_procs nosm         no SM at UMC_SM: umc_ib0 exists, its port is INIT,
 *                         and a join fails with EADDRNOTAVAIL
 *   ib_procs unicast      UD unicast by LID, local and global, answered
 *                         with ibv_create_ah_from_wc; a bystander port gets
 *                         nothing; a QPN nobody has is dropped
 *   ib_procs storm        one process with RLIMIT_NOFILE 1024 joins 10 000
 *                         groups at once (issue 32, defect 6): each join
 *                         ends in JOIN or in MULTICAST_ERROR with errno
 *                         EMFILE (the attach found no descriptor), none
 *                         with -ETIMEDOUT, and the kernel dropped none of
 *                         umc-sm's responses at the port's SA socket
 *   ib_procs fwd          umc-sm --forwarding unicast: two full members and
 *                         a send-only sender; every message reaches both,
 *                         one datagram per member; once a member's leave is
 *                         done at the SA no copy reaches its port; a member
 *                         killed is dropped from the list when its lease
 *                         ends, and with none left nothing is sent
 *   ib_procs fwd_restart  the same SM restarted: the sender's list goes
 *                         with the port, comes back for its AH once it is
 *                         registered again, and reaches the member that
 *                         joined again
 *   ib_procs squat_any    a plain UDP socket of another process on
 *   ib_procs squat_group  0.0.0.0:DATAPORT, or on the MLID's group address
 *                         and DATAPORT: the join completes, the MLID goes
 *                         over to unicast forwarding and every message
 *                         arrives; another group stays multicast
 *
 * As tests/integ/mc_procs.c, the orchestrator starts "agents" and drives
 * them over pipes with one-line commands (agent.h); readiness is a reply,
 * every wait has a deadline.  An agent is this program executed again
 * ("ib_procs agent CMD_FD REP_FD", agent_spawn_exec()), not a bare fork:
 * the orchestrator may already have threads (its SA client's), and a
 * forked child of a threaded process may only call async-signal-safe
 * functions until it executes a program (POSIX fork(); a sanitizer's
 * allocator lock held by another thread at the fork stays held in the
 * child forever).  The orchestrator itself only talks to the SA, as a
 * port of its own, to see what the SA holds (trusted SubnAdmGet, SM_Key
 * 1).  Exit status 0 when every check passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "agent.h"
#include "sa/sa_client.h"
#include "sm_proc.h"
#include "verbs/verbs_int.h"
#include "wire/be.h"
#include "wire/ib.h"
#include "wire/ib_mad.h"

enum {
	NRECV = 64,
	SLOT = 2048,
	EV_MS = 10000,	/* bound on any CM event */
	NMSG = 50,
	LEASE_MS = 400, /* umc-sm --lease in the lease and restart scenarios */
	STORM_JOINS = 10000,
	STORM_NOFILE = 1024,
	STORM_MS = 12000, /* bound on the storm's events (under AGENT_CMD_MS) */
};

/* ------------------------------------------------------------------------- */
/* Agent: one application process on the IB port.                            */

/* open udp|ipoib: an id bound to the IPoIB address, its QP, receives posted. */
static void cmd_open(const char *ps)
{
	enum rdma_port_space sp = strcmp(ps, "ipoib") ? RDMA_PS_UDP : RDMA_PS_IPOIB;
	struct agent_node *nd = agent_open("127.0.0.2", sp, NRECV, SLOT);
	union ibv_gid gid;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr ia;
	char g[INET6_ADDRSTRLEN];

	if (!nd)
		return;
	if (strcmp(ibv_get_device_name(nd->id->verbs->device), "umc_ib0"))
		return agent_reply("fail bound to %s", ibv_get_device_name(nd->id->verbs->device));
	if (ibv_query_gid(nd->id->verbs, 1, 0, &gid) ||
	    ibv_query_qp(nd->id->qp, &attr, IBV_QP_QKEY, &ia))
		return agent_reply("fail query");
	inet_ntop(AF_INET6, gid.raw, g, sizeof(g));
	agent_reply("ok %d %s qkey 0x%x", agent_ids.nids - 1, g, attr.qkey);
}

/* send IDX N: N messages to the AH of IDX's last JOIN. */
static void cmd_send(int idx, int n)
{
	struct agent_node *nd = &agent_ids.n[idx];

	if (!nd->ah)
		return agent_reply("fail no AH");
	for (int i = 0; i < n; i++) {
		memset(nd->buf + (size_t)(NRECV - 1) * SLOT, i, 100);
		if (agent_post_send(nd, (uint64_t)i, 100))
			return agent_reply("fail post_send");
		if (!agent_send_completed(nd, EV_MS))
			return agent_reply("fail send completion");
	}
	agent_reply("ok");
}

/*
 * recv IDX N MS: wait up to MS ms for N messages; reply the count, and
 * whether every completion had a GRH whose DGID is the group's MGID.
 */
static void cmd_recv(int idx, int n, int ms, const char *mgid_text)
{
	struct agent_node *nd = &agent_ids.n[idx];
	uint64_t end = t_now_ms() + (uint64_t)ms;
	struct in6_addr mgid;
	int bad_grh = 0;

	inet_pton(AF_INET6, mgid_text, &mgid);
	while ((int)nd->received < n && t_now_ms() < end) {
		struct ibv_wc wc;

		if (ibv_poll_cq(nd->id->recv_cq, 1, &wc) != 1)
			continue;
		if (wc.status != IBV_WC_SUCCESS)
			return agent_reply("fail recv status %s", ibv_wc_status_str(wc.status));
		const uint8_t *grh = nd->buf + wc.wr_id * SLOT;

		/* The packet's real GRH: IPVer 6, NxtHdr 0x1B, DGID the MGID. */
		if (!(wc.wc_flags & IBV_WC_GRH) || (grh[0] >> 4) != 6 || grh[6] != 0x1b ||
		    memcmp(grh + 24, &mgid, 16) || wc.byte_len != 40 + 100 || !wc.slid)
			bad_grh++;
		nd->received++;
	}
	agent_reply("ok %u badgrh %d", nd->received, bad_grh);
}

/* info IDX: the port's LID, the QP number and GID 0, for a unicast peer. */
static void cmd_info(int idx)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	char g[INET6_ADDRSTRLEN];

	if (ibv_query_port(agent_ids.n[idx].id->verbs, 1, &pa) ||
	    ibv_query_gid(agent_ids.n[idx].id->verbs, 1, 0, &gid))
		return agent_reply("fail query");
	inet_ntop(AF_INET6, gid.raw, g, sizeof(g));
	agent_reply("ok lid %u qpn %u gid %s", pa.lid, agent_ids.n[idx].id->qp->qp_num, g);
}

/* usend IDX LID QPN GID|- N: N unicast SENDs to a QP by LID (with a GRH to GID). */
static void cmd_usend(int idx, unsigned lid, unsigned qpn, const char *gid, int n)
{
	struct agent_node *nd = &agent_ids.n[idx];
	struct ibv_ah_attr attr = {.dlid = (uint16_t)lid, .port_num = 1};

	if (strcmp(gid, "-")) {
		attr.is_global = 1;
		attr.grh.hop_limit = 1;
		inet_pton(AF_INET6, gid, attr.grh.dgid.raw);
	}
	agent_set_dest(nd, ibv_create_ah(nd->id->pd, &attr), qpn, RDMA_UDP_QKEY);
	if (!nd->ah)
		return agent_reply("fail ibv_create_ah errno %d", errno);
	cmd_send(idx, n);
}

/*
 * urecv IDX N reply|quiet: wait for N unicast messages; with "reply",
 * answer each with an AH made by ibv_create_ah_from_wc.  Replies the
 * count, the last SLID and source QPN, and whether a GRH came.
 */
static void cmd_urecv(int idx, int n, bool answer)
{
	struct agent_node *nd = &agent_ids.n[idx];
	uint64_t end = t_now_ms() + 5000;
	struct ibv_wc wc = {0};
	int got = 0, grh = 0;

	while (got < n && t_now_ms() < end) {
		if (ibv_poll_cq(nd->id->recv_cq, 1, &wc) != 1)
			continue;
		if (wc.status != IBV_WC_SUCCESS)
			return agent_reply("fail recv status %s", ibv_wc_status_str(wc.status));
		got++;
		grh += !!(wc.wc_flags & IBV_WC_GRH);
		if (answer) {
			struct ibv_ah *ah = ibv_create_ah_from_wc(
				nd->id->pd, &wc, (struct ibv_grh *)(nd->buf + wc.wr_id * SLOT), 1);

			if (!ah)
				return agent_reply("fail ibv_create_ah_from_wc errno %d", errno);
			agent_set_dest(nd, ah, wc.src_qp, RDMA_UDP_QKEY);
			if (agent_post_send(nd, 0, 100))
				return agent_reply("fail post_send");
			(void)agent_send_completed(nd,
						   EV_MS); /* the peer's urecv counts what came */
		}
	}
	agent_reply("ok %d slid %u srcqp %u grh %d", got, wc.slid, wc.src_qp, grh);
}

static void cmd_port(void)
{
	struct ibv_port_attr pa;

	union ibv_gid gid;

	if (!agent_ids.nids || ibv_query_port(agent_ids.n[0].id->verbs, 1, &pa))
		return agent_reply("fail query_port");
	errno = 0;
	int past = ibv_query_gid(agent_ids.n[0].id->verbs, 1, pa.gid_tbl_len, &gid);

	agent_reply("ok state %d lid %u sm_lid %u link %d gids %d past %d/%d", pa.state, pa.lid,
	      pa.sm_lid, pa.link_layer, pa.gid_tbl_len, past, errno);
}

/* cnt NAME: one of the port's counters (struct umc_counters). */
static void cmd_cnt(const char *name)
{
	const struct umc_counters *c;

	if (!agent_ids.nids)
		return agent_reply("fail no port");
	c = ctx_dev(agent_ids.n[0].id->verbs)->cnt;
#define CNT_BY_NAME(n)                                                                             \
	if (!strcmp(name, #n))                                                                     \
		return agent_reply("ok %lu", atomic_load(&c->n));
	UMC_COUNTERS(CNT_BY_NAME)
#undef CNT_BY_NAME
	agent_reply("fail no counter %s", name);
}

/*
 * storm N: RLIMIT_NOFILE STORM_NOFILE, soft and hard (so that the library
 * cannot raise it), then N joins of groups 224.1.x.y on id 0 at once, then
 * their N events within STORM_MS.  Replies how many were JOIN, how many
 * MULTICAST_ERROR with errno EMFILE, with -ETIMEDOUT, anything else, the
 * largest delay from the last join call to an event, and the SA client's
 * counters.
 */
static void cmd_storm(int n)
{
	struct rlimit rl = {STORM_NOFILE, STORM_NOFILE};
	struct rdma_cm_id *id = agent_ids.nids ? agent_ids.n[0].id : NULL;
	unsigned join = 0, emfile = 0, timedout = 0, other = 0;
	int other_ev = 0, other_status = 0, other_errno = 0;
	struct umc_sa_counters cnt;
	struct umc_device *dev;
	uint64_t t0, end;

	if (!id)
		return agent_reply("fail no id");
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return agent_reply("fail setrlimit errno %d", errno);
	for (int i = 0; i < n; i++) {
		struct sockaddr_in g = {.sin_family = AF_INET,
					.sin_addr.s_addr = htonl(0xe0010000u + (unsigned)i)};

		if (rdma_join_multicast(id, (struct sockaddr *)&g, NULL))
			return agent_reply("fail join %d errno %d", i, errno);
	}
	t0 = t_now_ms();
	end = t0 + STORM_MS;
	for (int i = 0; i < n; i++) {
		struct rdma_cm_event *ev;
		int64_t left = (int64_t)(end - t_now_ms());

		errno = 0;
		ev = left > 0 ? agent_cm_event(agent_ids.ch, (int)left) : NULL;
		if (!ev)
			return agent_reply("fail %d events of %d in %d ms", i, n, STORM_MS);
		if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN)
			join++;
		else if (ev->event == RDMA_CM_EVENT_MULTICAST_ERROR && ev->status == -1 &&
			 errno == EMFILE)
			emfile++;
		else if (ev->event == RDMA_CM_EVENT_MULTICAST_ERROR && ev->status == -ETIMEDOUT)
			timedout++;
		else if (!other++) {
			other_ev = ev->event;
			other_status = ev->status;
			other_errno = errno;
		}
		rdma_ack_cm_event(ev);
	}
	dev = ctx_dev(id->verbs);
	umc_sa_counters(dev->link->sa(dev), &cnt);
	agent_reply("ok join %u emfile %u timedout %u other %u ms %llu sent %llu resent %llu "
		    "waited %llu timeouts %llu overflow %llu (first other: event %d status %d "
		    "errno %d)",
		    join, emfile, timedout, other, (unsigned long long)(t_now_ms() - t0),
		    (unsigned long long)cnt.sent, (unsigned long long)cnt.resent,
		    (unsigned long long)cnt.waited, (unsigned long long)cnt.timeouts,
		    (unsigned long long)cnt.rx_overflow, other_ev, other_status, other_errno);
}

/* The agent's command loop, from its "ok ready" on; EOF ends it with _exit(0). */
static void agent_main(int cmd)
{
	char line[512];

	agent_reply("ok ready pid=%d", (int)getpid());
	while (t_read_line(cmd, line, sizeof(line), -1)) {
		char a[64], b[128];
		int i1, i2;
		unsigned u1, u2;

		if (sscanf(line, "open %63s", a) == 1)
			cmd_open(a);
		else if (sscanf(line, "join %d %63s %127s", &i1, a, b) == 3)
			agent_do_join(i1, a, b, EV_MS, 0);
		else if (sscanf(line, "leave %d %63s", &i1, a) == 2)
			agent_do_leave(i1, a);
		else if (sscanf(line, "send %d %d", &i1, &i2) == 2)
			cmd_send(i1, i2);
		else if (sscanf(line, "recv %d %d %127s", &i1, &i2, b) == 3)
			cmd_recv(i1, i2, 3000, b);
		else if (sscanf(line, "info %d", &i1) == 1)
			cmd_info(i1);
		else if (sscanf(line, "usend %d %u %u %127s %d", &i1, &u1, &u2, b, &i2) == 5)
			cmd_usend(i1, u1, u2, b, i2);
		else if (sscanf(line, "urecv %d %d %63s", &i1, &i2, a) == 3)
			cmd_urecv(i1, i2, !strcmp(a, "reply"));
		else if (sscanf(line, "event %d", &i1) == 1)
			agent_do_event(i1);
		else if (sscanf(line, "storm %d", &i1) == 1)
			cmd_storm(i1);
		else if (!strcmp(line, "port"))
			cmd_port();
		else if (sscanf(line, "cnt %63s", a) == 1)
			cmd_cnt(a);
		else if (!strcmp(line, "quit")) {
			agent_reply("ok bye");
			_exit(0); /* no atexit handlers: the port stays registered */
		} else if (!strcmp(line, "exit")) {
			agent_reply("ok bye");
			exit(0); /* with the atexit handlers: the port unregisters */
		} else
			agent_reply("fail unknown command %s", line);
	}
	_exit(0);
}

/* ------------------------------------------------------------------------- */
/* Orchestrator.                                                             */

/* Start agent @name, this program executed again, and wait for its "ok ready". */
static void start(struct agent *a, const char *name)
{
	agent_spawn_exec(a, name, "ib_procs");
	agent_ready(a);
}

/* Send a command and wait (bounded) for its reply; returns it, "ok ..." or "fail ...". */
static const char *ask(struct agent *a, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (agent_send(a, "%s", line))
		agent_get_reply(a);
	else
		snprintf(a->last, sizeof(a->last), "fail cannot send %s", line);
	return a->last;
}

/* Counter @name of agent @a's port. */
static unsigned long counter(struct agent *a, const char *name)
{
	const char *r = ask(a, "cnt %s", name);

	agent_expect_prefix(r, "ok ", name);
	return strtoul(r + 3, NULL, 10);
}

/* The SA observer: a port of the orchestrator's own. */
static struct umc_sa_client *observer;

static void observer_open(const struct test_sm *sm)
{
	struct umc_sa_open_args args = {.timeout_ms = 3000};

	test_sm_addr(sm, &args.sm);
	if (umc_sa_open(&args, &observer)) {
		fprintf(stderr, "observer cannot register\n");
		exit(2);
	}
}

/*
 * The JoinState the SA holds for (@mgid, @port_gid): trusted SubnAdmGet of
 * MCMemberRecord by MGID and PortGID.  Returns it, 0 for no record, -1 for
 * no answer.
 */
static int sa_join_state(const char *mgid, const char *port_gid)
{
	struct umc_mcmember rec = {0};
	struct umc_sa_result res;
	uint8_t mad[UMC_MAD_SIZE];
	int ret;

	inet_pton(AF_INET6, mgid, rec.mgid);
	if (port_gid)
		inet_pton(AF_INET6, port_gid, rec.port_gid);
	umc_sa_request_encode(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
			      UMC_MCM_COMP_MGID | (port_gid ? UMC_MCM_COMP_PORT_GID : 0),
			      UMC_SM_DEFAULT_SM_KEY, &rec);
	if (umc_sa_call(observer, mad, 3000, 2, &res))
		return -1;
	if (res.status == UMC_SA_STATUS_NO_RECORDS)
		ret = 0;
	else if (res.status)
		ret = -1;
	else {
		umc_mcmember_decode(res.mad + UMC_SA_HDR_LEN, &rec);
		ret = rec.join_state;
	}
	umc_sa_result_free(&res);
	return ret;
}

/*
 * The JoinState the SA holds once it is @want, or the last one seen after
 * @ms.  For a leave: rdma_leave_multicast() never waits for the SA (its
 * Delete may wait for the group's previous SA reply), so the SA's record
 * changes some time after the leave returned; a lease or a port's exit
 * changes it some time after the process went.
 */
static int sa_join_state_becomes(const char *mgid, const char *port_gid, int want, int ms)
{
	uint64_t end = t_now_ms() + (uint64_t)ms;
	int st;

	while ((st = sa_join_state(mgid, port_gid)) != want && t_now_ms() < end)
		usleep(10000); /* polling the SA, bounded by end */
	return st;
}

/* ClassPortInfo.CapabilityMask2 as the SA says it, or -1. */
static long sa_cap_mask2(void)
{
	struct umc_class_port_info cpi;
	struct umc_sa_result res;
	uint8_t mad[UMC_MAD_SIZE];
	long ret = -1;

	umc_sa_request_encode(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	if (umc_sa_call(observer, mad, 3000, 2, &res))
		return -1;
	if (!res.status) {
		umc_cpi_decode(res.mad + UMC_SA_HDR_LEN, &cpi);
		ret = cpi.cap_mask2;
	}
	umc_sa_result_free(&res);
	return ret;
}

/* The port GID an "open" reply names (its second word). */
static void reply_gid(const char *r, char *gid)
{
	if (sscanf(r, "ok %*d %63s", gid) != 1)
		strcpy(gid, "::");
}

/* The DGID a JOIN/ERROR reply names (its fifth word). */
static void reply_dgid(const char *r, char *dgid)
{
	if (sscanf(r, "ok %*s %*d %*d %63s", dgid) != 1)
		strcpy(dgid, "::");
}

static unsigned reply_hex(const char *r, const char *key)
{
	const char *p = strstr(r, key);

	return p ? (unsigned)strtoul(p + strlen(key), NULL, 16) : ~0u;
}

/* Stop umc-sm: an exit status other than 0 is a failure; its counters stay readable. */
static void stop_sm(struct test_sm *sm)
{
	if (test_sm_stop(sm))
		agent_fail("umc-sm exit status");
}

/* Group of the scenario: 239.252.P1.P2 (P = pid), so parallel runs never share one. */
static void scenario_group(char *addr, int salt)
{
	unsigned p = (unsigned)getpid() + (unsigned)salt * 7919u;

	snprintf(addr, 32, "239.252.%u.%u", (p >> 8) & 0xff, p & 0xff);
}

/* The RDMA_PS_UDP MGID of an IPv4 group on the default partition. */
static void udp_mgid(const char *addr, char *mgid)
{
	struct in_addr a;
	uint8_t m[16] = {0xff, 0x12, 0x40, 0x01, 0xff, 0xff};

	inet_pton(AF_INET, addr, &a);
	put_be32(m + 12, ntohl(a.s_addr) & 0x0fffffff);
	inet_ntop(AF_INET6, m, mgid, 64);
}

/*
 * Start agent "A" with one udp id joined, as a full member, to the
 * scenario's group @salt, and check the SA holds it; @mgid and @g get the
 * group's MGID and A's port GID.  The observer must be open.
 */
static void start_joined(struct agent *a, int salt, char *mgid, char *g)
{
	char grp[32];

	scenario_group(grp, salt);
	udp_mgid(grp, mgid);
	start(a, "A");
	reply_gid(ask(a, "open udp"), g);
	agent_expect_prefix(ask(a, "join 0 %s full", grp), "ok JOIN", "join");
	if (sa_join_state(mgid, g) != 1)
		agent_fail("the SA does not hold the join");
}

static void scenario_sendonly(bool support)
{
	static const char *const noso[] = {"--no-sendonly", NULL};
	struct test_sm sm;
	struct agent r1, r2, s;
	char grp[32], mgid[64], g1[64], g2[64], gs[64], dgid[64];
	const char *r;

	agent_start_sm(&sm, support ? NULL : noso);
	observer_open(&sm);
	long cap2 = sa_cap_mask2();

	if (cap2 < 0 || !!(cap2 & UMC_SA_CAP2_SENDONLY_FULL) != support)
		agent_fail("ClassPortInfo CapabilityMask2 0x%lx: bit 12 should be %s", cap2,
			   support ? "set" : "clear");
	scenario_group(grp, 1);
	udp_mgid(grp, mgid);
	start(&r1, "R1");
	start(&r2, "R2");
	start(&s, "S");
	reply_gid(ask(&r1, "open udp"), g1);
	reply_gid(ask(&r2, "open udp"), g2);
	reply_gid(ask(&s, "open udp"), gs);
	r = ask(&r1, "join 0 %s full", grp);
	agent_expect_prefix(r, "ok JOIN 0 0 ", "receiver 1 join");
	reply_dgid(r, dgid);
	if (strcmp(dgid, mgid))
		agent_fail("JOIN dgid %s, expected %s", dgid, mgid);
	unsigned mlid = reply_hex(r, "dlid 0x");

	if (mlid < 0xc001 || mlid > 0xfffe)
		agent_fail("JOIN dlid 0x%x is no MLID", mlid);
	if (reply_hex(r, "qpn 0x") != 0xffffff || reply_hex(r, "qkey 0x") != 0x01234567 ||
	    !strstr(r, "global 1"))
		agent_fail("JOIN ud fields: %s", r);
	/* The record the IPoIB broadcast group gave: SL 0, rate 3 (10 Gb/s). */
	if (!strstr(r, " sl 0 rate 3 "))
		agent_fail("JOIN SL/rate: %s", r);
	r = ask(&r2, "join 0 %s full", grp);
	agent_expect_prefix(r, "ok JOIN 0 0 ", "receiver 2 join");
	if (reply_hex(r, "dlid 0x") != mlid)
		agent_fail("second receiver's MLID 0x%x, first's 0x%x", reply_hex(r, "dlid 0x"), mlid);
	r = ask(&s, "join 0 %s sendonly", grp);
	if (support) {
		agent_expect_prefix(r, "ok JOIN 0 0 ", "send-only join");
		if (reply_hex(r, "dlid 0x") != mlid)
			agent_fail("send-only MLID: %s", r);
		int st1 = sa_join_state(mgid, g1), st2 = sa_join_state(mgid, g2),
		    sts = sa_join_state(mgid, gs);

		if (st1 != 1 || st2 != 1 || sts != 8)
			agent_fail("SA JoinStates %d %d %d, expected 1 1 8", st1, st2, sts);
		agent_expect_prefix(ask(&s, "send 0 %d", NMSG), "ok", "send");
		char want[64];

		snprintf(want, sizeof(want), "ok %d badgrh 0", NMSG);
		agent_expect_prefix(ask(&r1, "recv 0 %d %s", NMSG, mgid), want, "receiver 1");
		agent_expect_prefix(ask(&r2, "recv 0 %d %s", NMSG, mgid), want, "receiver 2");
		/* The send-only member's QP is not attached: it gets nothing. */
		agent_expect_prefix(ask(&s, "recv 0 1 %s", mgid), "ok 0 ", "send-only receives");
	} else {
		/* "requires SM support, otherwise joining will fail" */
		agent_expect_prefix(r, "ok ERROR -22 ", "send-only join without SM support");
		if (sa_join_state(mgid, gs) != 0)
			agent_fail("the SA holds the refused send-only member");
		if (sa_join_state(mgid, g1) != 1)
			agent_fail("the receivers' membership was disturbed");
	}
	agent_finish(&r1);
	agent_finish(&r2);
	agent_finish(&s);
	umc_sa_close(observer);
	stop_sm(&sm);
	test_sm_free(&sm);
}

static void scenario_aggregate(void)
{
	struct test_sm sm;
	struct agent a;
	char grp[32], mgid[64], g[64];
	int st;

	agent_start_sm(&sm, NULL);
	observer_open(&sm);
	scenario_group(grp, 2);
	udp_mgid(grp, mgid);
	start(&a, "A");
	reply_gid(ask(&a, "open udp"), g);
	agent_cmd(&a, "open udp");
	agent_cmd(&a, "open udp");
	agent_expect_prefix(ask(&a, "join 0 %s full", grp), "ok JOIN 0 0 ", "first full join");
	agent_expect_prefix(ask(&a, "join 1 %s full", grp), "ok JOIN 0 1 ", "second full join");
	if ((st = sa_join_state(mgid, g)) != 1)
		agent_fail("after two full joins the SA holds %d", st);
	agent_expect_prefix(ask(&a, "join 2 %s sendonly", grp), "ok JOIN 0 2 ", "send-only join");
	if ((st = sa_join_state(mgid, g)) != 9)
		agent_fail("full + send-only: the SA holds 0x%x, expected 0x9 (OR-ed)", st);
	agent_expect_prefix(ask(&a, "leave 2 %s", grp), "ok", "leave send-only");
	if ((st = sa_join_state_becomes(mgid, g, 1, 5000)) != 1)
		agent_fail("after the send-only leave the SA holds 0x%x", st);
	agent_expect_prefix(ask(&a, "leave 0 %s", grp), "ok", "leave one full");
	if ((st = sa_join_state(mgid, g)) != 1)
		agent_fail("one full join left: the SA holds 0x%x", st);
	agent_expect_prefix(ask(&a, "leave 1 %s", grp), "ok", "leave the last full");
	if (sa_join_state_becomes(mgid, g, 0, 5000) != 0)
		agent_fail("after the last leave the SA still has the group");
	agent_finish(&a);
	umc_sa_close(observer);
	stop_sm(&sm);
	/* One Set per bit (0x1, 0x8), one Delete per bit: nothing for the second full join. */
	if (test_sm_counter(&sm, "joins") != 2 || test_sm_counter(&sm, "leaves") != 2)
		agent_fail("SA Sets %ld, Deletes %ld; expected 2 and 2",
			   test_sm_counter(&sm, "joins"), test_sm_counter(&sm, "leaves"));
	test_sm_free(&sm);
}

static void scenario_mgid0(void)
{
	struct test_sm sm;
	struct agent a;
	char d1[64], d2[64];
	const char *r;
	unsigned m1;

	agent_start_sm(&sm, NULL);
	start(&a, "A");
	agent_cmd(&a, "open udp");
	agent_cmd(&a, "open udp");
	r = ask(&a, "join 0 0.0.0.0 full");
	agent_expect_prefix(r, "ok JOIN 0 0 ", "wildcard join 1");
	reply_dgid(r, d1);
	m1 = reply_hex(r, "dlid 0x");
	r = ask(&a, "join 1 0.0.0.0 full");
	agent_expect_prefix(r, "ok JOIN 0 1 ", "wildcard join 2");
	reply_dgid(r, d2);
	if (strncmp(d1, "ff12:a01b:", 10) || strncmp(d2, "ff12:a01b:", 10))
		agent_fail("SA-assigned MGIDs %s %s, expected ff12:a01b:...", d1, d2);
	if (!strcmp(d1, d2) || m1 == reply_hex(r, "dlid 0x"))
		agent_fail("two wildcard joins share MGID %s / MLID 0x%x", d1, m1);
	agent_finish(&a);
	stop_sm(&sm);
	test_sm_free(&sm);
}

static void scenario_ipoib(void)
{
	struct test_sm sm;
	struct agent a;
	char grp[32], d[64];
	const char *r;

	agent_start_sm(&sm, NULL);
	scenario_group(grp, 3);
	start(&a, "A");
	r = ask(&a, "open ipoib");
	if (!strstr(r, "qkey 0xb1b"))
		agent_fail("RDMA_PS_IPOIB QP Q_Key: %s, expected the broadcast group's 0xb1b", r);
	r = ask(&a, "join 0 %s full", grp);
	agent_expect_prefix(r, "ok JOIN 0 0 ", "IPoIB-space join");
	reply_dgid(r, d);
	if (strncmp(d, "ff12:401b:ffff::", 16) || reply_hex(r, "qkey 0x") != 0xb1b)
		agent_fail("IPoIB join: %s", r);
	agent_finish(&a);
	stop_sm(&sm);
	test_sm_free(&sm);
}

static void scenario_lease(void)
{
	char lease[16];
	const char *args[] = {"--lease", lease, NULL};
	struct test_sm sm;
	struct agent a;
	char mgid[64], g[64];

	snprintf(lease, sizeof(lease), "%d", LEASE_MS);
	agent_start_sm(&sm, args);
	observer_open(&sm);
	start_joined(&a, 4, mgid, g);
	agent_kill(&a); /* SIGKILL: no leave, no unregister */
	if (sa_join_state_becomes(mgid, g, 0, 10 * LEASE_MS) != 0)
		agent_fail("the killed process is still a member after %d ms", 10 * LEASE_MS);
	umc_sa_close(observer);
	stop_sm(&sm);
	if (test_sm_counter(&sm, "lease_expired") < 1)
		agent_fail("no lease expired");
	test_sm_free(&sm);
}

/* A process that exits without leaving: its memberships go with its port at once. */
static void scenario_exit(void)
{
	struct test_sm sm;
	struct agent a;
	char mgid[64], g[64];

	agent_start_sm(&sm, NULL); /* the default lease: 10 s */
	observer_open(&sm);
	start_joined(&a, 7, mgid, g);
	/* exit(0), not _exit(0): its atexit handlers run; reaped with status 0. */
	agent_cmd(&a, "exit");
	agent_reap(&a);
	if (sa_join_state_becomes(mgid, g, 0, 2000) != 0) /* far less than the lease */
		agent_fail("an exited process is still a member");
	umc_sa_close(observer);
	stop_sm(&sm);
	/* The agent's port at its exit, then the observer's. */
	if (test_sm_counter(&sm, "unregister") != 2)
		agent_fail("%ld UNREGISTERs, expected 2", test_sm_counter(&sm, "unregister"));
	test_sm_free(&sm);
}

/*
 * The SM the @nproc agents @a registered with started over (a restart, a
 * failover): every one of the @nids joined ids of each gets exactly one
 * MULTICAST_ERROR -ENETRESET and nothing else; then each agent's id 0
 * leaves and joins @grp0 again, which works (no @grp0: not).
 */
static void expect_one_reset_each(struct agent *a, int nproc, int nids, const char *grp0)
{
	/*
	 * Each client finds the new SM at its next lease renewal (a third of
	 * the lease): every event is due within one lease of the restart.
	 */
	uint64_t end = t_deadline(UMC_SM_LEASE_MS);

	for (int i = 0; i < nproc; i++)
		agent_expect_resets(&a[i], nids, end);
	/* Leave and join again: works at the new SM. */
	for (int i = 0; grp0 && i < nproc; i++) {
		agent_expect_prefix(ask(&a[i], "leave 0 %s", grp0), "ok", "leave after reset");
		agent_expect_prefix(ask(&a[i], "join 0 %s full", grp0), "ok JOIN 0 0 ",
				    "join again");
	}
}

static void scenario_restart(void)
{
	enum { NPROC = 4, NIDS = 5 };
	struct test_sm sm;
	static const char *const names[NPROC] = {"P0", "P1", "P2", "P3"};
	struct agent a[NPROC];
	char grp[NIDS][32];
	uint16_t port;

	agent_start_sm(&sm, NULL);
	port = sm.port;
	for (int j = 0; j < NIDS; j++)
		scenario_group(grp[j], 10 + j);
	for (int i = 0; i < NPROC; i++) {
		start(&a[i], names[i]);
		for (int j = 0; j < NIDS; j++) {
			agent_expect_prefix(ask(&a[i], "open udp"), "ok", "open");
			agent_expect_prefix(ask(&a[i], "join %d %s full", j, grp[j]), "ok JOIN",
				      "join before the restart");
		}
	}
	/* Killed, so it cannot say goodbye; the same address again. */
	kill(sm.pid, SIGKILL);
	test_sm_stop(&sm);
	test_sm_free(&sm);
	if (test_sm_start(&sm, port, NULL))
		exit(2);
	expect_one_reset_each(a, NPROC, NIDS, grp[0]);
	for (int i = 0; i < NPROC; i++)
		agent_finish(&a[i]);
	stop_sm(&sm);
	test_sm_free(&sm);
}

/*
 * Run $UMC_BIN/umc-ctl for umc-sm with @args (a shell word list): it must
 * succeed and its first output line be @want (start with it, when @prefix).
 */
static void umc_ctl(const struct test_sm *sm, const char *args, const char *want, bool prefix)
{
	char cmd[512], line[256] = "";
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/umc-ctl %d %s 2>&1", getenv("UMC_BIN"), (int)sm->pid, args);
	p = popen(cmd, "r");
	if (!p || !fgets(line, sizeof(line), p))
		agent_fail("umc-ctl %s: no output", args);
	while (p && fgetc(p) != EOF)
		;
	st = p ? pclose(p) : -1;
	line[strcspn(line, "\n")] = 0;
	if (st != 0 || (prefix ? strncmp(line, want, strlen(want)) : strcmp(line, want)))
		agent_fail("umc-ctl %s: status %d, '%s', not '%s'", args, st, line, want);
}

/*
 * umc-sm told by umc-ctl, while it runs: to reject one group's joins (the
 * join fails with -EINVAL, another group's works, until "off"), to be
 * silent (a join times out with -ETIMEDOUT after the client's resends),
 * and to fail over (every joined id gets one -ENETRESET, joining again
 * works), each counted at the SM.
 */
static void scenario_smctl(void)
{
	struct test_sm sm;
	struct agent a[2];
	char grp[3][32], args[64], want[128];
	uint64_t t0, dt;

	agent_start_sm(&sm, NULL);
	for (int j = 0; j < 3; j++)
		scenario_group(grp[j], 20 + j);
	start(&a[0], "A");
	start(&a[1], "B");
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			agent_expect_prefix(ask(&a[i], "open udp"), "ok", "open");
	snprintf(args, sizeof(args), "reject %s insufficient_components", grp[0]);
	snprintf(want, sizeof(want), "joins of %s are rejected with status 0x0600 "
		 "(ERR_REQ_INSUFFICIENT_COMPONENTS)", grp[0]);
	umc_ctl(&sm, args, want, false);
	agent_expect_prefix(ask(&a[0], "join 0 %s full", grp[0]), "ok ERROR -22 ",
			    "a rejected join");
	agent_expect_prefix(ask(&a[0], "join 1 %s full", grp[1]), "ok JOIN",
			    "another group's join");
	snprintf(args, sizeof(args), "reject %s off", grp[0]);
	snprintf(want, sizeof(want), "joins of %s are answered again", grp[0]);
	umc_ctl(&sm, args, want, false);
	agent_expect_prefix(ask(&a[0], "join 0 %s full", grp[0]), "ok JOIN", "a join after off");
	umc_ctl(&sm, "silent 30", "silent for 30 s", false);
	t0 = t_now_ms();
	agent_expect_prefix(ask(&a[0], "join 2 %s full", grp[2]), "ok ERROR -110 ",
			    "a join to a silent SM");
	dt = t_now_ms() - t0;
	if (dt < 2500 || dt > 9000)
		agent_fail("the join timed out after %llu ms, not about 3000", (unsigned long long)dt);
	umc_ctl(&sm, "silent 0", "answering again", false);
	agent_expect_prefix(ask(&a[0], "join 2 %s full", grp[2]), "ok JOIN",
			    "a join after silence");
	for (int j = 0; j < 3; j++)
		agent_expect_prefix(ask(&a[1], "join %d %s full", j, grp[j]), "ok JOIN",
				    "B's joins");
	umc_ctl(&sm, "failover", "failed over: epoch 0x", true);
	expect_one_reset_each(a, 2, 3, grp[0]);
	for (int i = 0; i < 2; i++)
		agent_finish(&a[i]);
	stop_sm(&sm);
	if (test_sm_counter(&sm, "sa_fault_rejected") != 1 || test_sm_counter(&sm, "failovers") != 1 ||
	    test_sm_counter(&sm, "silent_dropped") < 3)
		agent_fail("umc-sm's counters: sa_fault_rejected %ld failovers %ld silent_dropped %ld",
			   test_sm_counter(&sm, "sa_fault_rejected"), test_sm_counter(&sm, "failovers"),
			   test_sm_counter(&sm, "silent_dropped"));
	test_sm_free(&sm);
}

/*
 * umc-sm silent for longer than the lease: the port is lost (one
 * -ENETRESET per joined id) and, when the SM answers again, registered
 * again at the same SM (same epoch), where it works as before: a join is
 * answered, and the renewals keep the port (no further event).
 */
static void scenario_lapse(void)
{
	char lease[16];
	const char *args[] = {"--lease", lease, NULL};
	struct test_sm sm;
	struct agent a;
	char grp[2][32];
	uint64_t end;
	const char *r;

	snprintf(lease, sizeof(lease), "%d", LEASE_MS);
	agent_start_sm(&sm, args);
	for (int j = 0; j < 2; j++)
		scenario_group(grp[j], 30 + j);
	start(&a, "A");
	for (int j = 0; j < 2; j++) {
		agent_expect_prefix(ask(&a, "open udp"), "ok", "open");
		agent_expect_prefix(ask(&a, "join %d %s full", j, grp[j]), "ok JOIN", "join");
	}
	umc_ctl(&sm, "silent 30", "silent for 30 s", false);
	expect_one_reset_each(&a, 1, 2, NULL);
	umc_ctl(&sm, "silent 0", "answering again", false);
	end = t_deadline(5000);
	while (!strstr(r = ask(&a, "port"), "state 4 ") && t_left_ms(end) > 0)
		usleep(20000);
	if (!strstr(r, "state 4 "))
		agent_fail("the port after the SM answers again: %s (expected ACTIVE)", r);
	agent_expect_prefix(ask(&a, "leave 0 %s", grp[0]), "ok", "leave after the reset");
	agent_expect_prefix(ask(&a, "join 0 %s full", grp[0]), "ok JOIN 0 0 ",
			    "a join at the same SM");
	/* Three leases: the renewals are answered and heard. */
	agent_expect_prefix(ask(&a, "event %d", 3 * LEASE_MS), "ok none", "events after the join");
	agent_finish(&a);
	stop_sm(&sm);
	test_sm_free(&sm);
}

static void scenario_timeout(void)
{
	struct test_sm sm;
	struct agent a;
	char grp[32];
	uint64_t t0, dt;

	agent_start_sm(&sm, NULL);
	scenario_group(grp, 5);
	start(&a, "A");
	agent_expect_prefix(ask(&a, "open udp"), "ok", "open");
	kill(sm.pid, SIGSTOP);
	t0 = t_now_ms();
	agent_expect_prefix(ask(&a, "join 0 %s full", grp), "ok ERROR -110 ",
			    "join to a silent SM");
	dt = t_now_ms() - t0;
	if (dt < 2500 || dt > 9000)
		agent_fail("the join timed out after %llu ms, not about 3000", (unsigned long long)dt);
	kill(sm.pid, SIGCONT);
	agent_finish(&a);
	stop_sm(&sm);
	test_sm_free(&sm);
}

/*
 * Unicast by LID: a local packet (no GRH) and a global one from one port's
 * QP to another's, each answered with ibv_create_ah_from_wc; a third
 * process runs alongside and gets nothing; a QPN nobody has is counted.
 */
static void scenario_unicast(void)
{
	struct test_sm sm;
	struct agent a, b, c;
	unsigned alid, aqpn, blid, bqpn;
	char agid[64], bgid[64], want[96];
	const char *r;

	agent_start_sm(&sm, NULL);
	start(&a, "A");
	start(&b, "B");
	start(&c, "C");
	agent_cmd(&a, "open udp");
	agent_cmd(&b, "open udp");
	agent_cmd(&c, "open udp");
	if (sscanf(ask(&a, "info 0"), "ok lid %u qpn %u gid %63s", &alid, &aqpn, agid) != 3 ||
	    sscanf(ask(&b, "info 0"), "ok lid %u qpn %u gid %63s", &blid, &bqpn, bgid) != 3)
		agent_fail("info");
	if (alid == blid || alid < 2 || blid < 2)
		agent_fail("LIDs %u and %u", alid, blid);
	r = ask(&a, "port");
	if (!strstr(r, "state 4 ") || !strstr(r, "sm_lid 1 link 1 gids 1 past -1/22"))
		agent_fail("registered port: %s (expected ACTIVE, SM LID 1, InfiniBand, one GID)", r);
	/* Local (LRH only): no GRH at the receiver. */
	agent_expect_prefix(ask(&a, "usend 0 %u %u - 5", blid, bqpn), "ok", "local unicast send");
	snprintf(want, sizeof(want), "ok 5 slid %u srcqp %u grh 0", alid, aqpn);
	agent_expect_prefix(ask(&b, "urecv 0 5 reply"), want, "local unicast receive");
	snprintf(want, sizeof(want), "ok 5 slid %u srcqp %u grh 0", blid, bqpn);
	agent_expect_prefix(ask(&a, "urecv 0 5 quiet"), want, "the replies");
	/* Global (LRH + GRH): the GRH reaches the receiver and the reply uses it. */
	agent_expect_prefix(ask(&a, "usend 0 %u %u %s 3", blid, bqpn, bgid), "ok",
		      "global unicast send");
	snprintf(want, sizeof(want), "ok 3 slid %u srcqp %u grh 3", alid, aqpn);
	agent_expect_prefix(ask(&b, "urecv 0 3 reply"), want, "global unicast receive");
	snprintf(want, sizeof(want), "ok 3 slid %u srcqp %u grh 3", blid, bqpn);
	agent_expect_prefix(ask(&a, "urecv 0 3 quiet"), want, "the global replies");
	r = ask(&c, "urecv 0 1 quiet");
	agent_expect_prefix(r, "ok 0 ", "the bystander");
	/* A QPN nobody on that port has: sent, dropped and counted (rx_no_qp). */
	unsigned long no_qp = counter(&b, "rx_no_qp");

	agent_expect_prefix(ask(&a, "usend 0 %u %u - 1", blid, bqpn + 1000), "ok", "stray send");
	agent_expect_prefix(ask(&b, "urecv 0 1 quiet"), "ok 0 ", "stray receive");
	if (counter(&b, "rx_no_qp") != no_qp + 1)
		agent_fail("stray datagram: rx_no_qp did not go up by one from %lu", no_qp);
	agent_finish(&a);
	agent_finish(&b);
	agent_finish(&c);
	stop_sm(&sm);
	test_sm_free(&sm);
}

/*
 * One process joins STORM_JOINS groups at once with RLIMIT_NOFILE
 * STORM_NOFILE (issue 32, defect 6).  The SA answers every Set; what
 * fails, fails at the attach, with EMFILE as ibv_attach_mcast(3) says.
 * Before the SA client bounded the responses in flight (UMC_SA_WINDOW),
 * umc-sm's answers overflowed the port's socket buffer, the resends,
 * sent together, overflowed it again, and some joins ended with
 * -ETIMEDOUT against an idle SA.  umc-sm lets the port, and its user, be
 * a member of all of them (its default caps are 8192 groups per port and
 * per source host).
 */
static void scenario_storm(void)
{
	unsigned join, emfile, timedout, other, overflow;
	char cap[16];
	const char *const args[] = {"--max-groups-per-port", cap, "--max-groups-per-host", cap,
				    NULL};
	struct test_sm sm;
	struct agent a;
	const char *r;

	snprintf(cap, sizeof(cap), "%d", STORM_JOINS);
	agent_start_sm(&sm, args);
	start(&a, "A");
	agent_expect_prefix(ask(&a, "open udp"), "ok", "open");
	r = ask(&a, "storm %d", STORM_JOINS);
	printf("# storm: %s\n", r);
	if (sscanf(r, "ok join %u emfile %u timedout %u other %u ms %*u sent %*u resent %*u "
		      "waited %*u timeouts %*u overflow %u ",
		   &join, &emfile, &timedout, &other, &overflow) != 5)
		agent_fail("storm: %s", r);
	else if (timedout || other || join + emfile != STORM_JOINS)
		agent_fail("storm: %u JOIN, %u EMFILE, %u -ETIMEDOUT, %u other of %d joins", join,
			   emfile, timedout, other, STORM_JOINS);
	else if (join < STORM_NOFILE / 2 || join >= STORM_NOFILE)
		agent_fail("storm: %u JOINs with %d descriptors", join, STORM_NOFILE);
	else if (overflow)
		agent_fail("storm: the kernel dropped %u of umc-sm's responses", overflow);
	agent_finish(&a);
	stop_sm(&sm);
	test_sm_free(&sm);
}

/* "recv IDX N MGID" must say "ok N badgrh 0": @what got N messages, each with the group's GRH. */
static void expect_recv(struct agent *a, int n, const char *mgid, const char *what)
{
	char want[48];

	snprintf(want, sizeof(want), "ok %d badgrh 0", n);
	agent_expect_prefix(ask(a, "recv 0 %d %s", n, mgid), want, what);
}

/* Wait (up to 5 s) until agent @a's port is ACTIVE (registered again after a restart). */
static void wait_active(struct agent *a)
{
	uint64_t end = t_deadline(5000);

	while (!strstr(ask(a, "port"), "state 4 ") && t_now_ms() < end)
		usleep(10000); /* bounded by end */
	agent_expect_prefix(strstr(a->last, "state 4 ") ? "ok" : a->last, "ok",
			    "the port active again");
}

/*
 * Join @grp on agent @a's id 0 as a full member.  Once its port is ACTIVE
 * again a join still fails with EADDRNOTAVAIL until the CM has read the
 * IPoIB broadcast group's record again (umcast(7), The port), which it
 * asks the SA for on the port's ACTIVE event: try for up to 5 s.
 */
static const char *join_when_ready(struct agent *a, const char *grp)
{
	uint64_t end = t_deadline(5000);
	const char *r;

	while (!strncmp((r = ask(a, "join 0 %s full", grp)), "fail join errno 99", 18) &&
	       t_now_ms() < end)
		usleep(10000); /* bounded by end */
	return r;
}

/*
 * umc-sm --forwarding unicast; a lease of 3 s, so that a restart is heard of
 * within a second; joins wait up to 2 s for the senders (a loaded host).
 */
static const char *const fwd_args[] = {"--forwarding", "unicast", "--lease", "3000",
				       "--forwarding-wait", "2000", NULL};

static void start_sm_unicast(struct test_sm *sm)
{
	agent_start_sm(sm, fwd_args);
	observer_open(sm);
}

/*
 * The observer's own membership of @mgid: a waited SA Set (JoinState
 * FullMember) or Delete; returns its MAD status, or -1 for no answer.
 * Its port's data endpoint is where a sender's copies come.
 */
static int observer_member(const char *mgid, bool join)
{
	struct umc_sa_port_attr pa;
	struct umc_mcmember rec = {.join_state = UMC_JOIN_FULL};
	struct umc_sa_result res;
	uint8_t mad[UMC_MAD_SIZE];
	int ret;

	umc_sa_query_port(observer, &pa);
	inet_pton(AF_INET6, mgid, rec.mgid);
	memcpy(rec.port_gid, pa.gid, 16);
	umc_sa_request_encode(mad, join ? UMC_MAD_METHOD_SET : UMC_SA_METHOD_DELETE,
			      UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_JOIN_MASK, 0, &rec);
	if (umc_sa_call(observer, mad, 3000, 2, &res))
		return -1;
	ret = res.status;
	umc_sa_result_free(&res);
	return ret;
}

/*
 * The InfiniBand packets to MLID @mlid that arrive on @fd within @ms ms
 * (after the last one, once @want arrived: 300 ms more for one too many);
 * anything else counts in *@other.
 */
static int count_copies(int fd, uint16_t mlid, int want, int ms, int *other)
{
	uint64_t end = t_deadline(ms);
	uint8_t buf[4096];
	int got = 0;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		struct umc_ib_hdr ib;
		struct umc_ud_hdr ud;
		size_t off, plen;
		ssize_t n;

		if (got >= want && end > t_deadline(300))
			end = t_deadline(300);
		if (t_now_ms() >= end || poll(&p, 1, t_left_ms(end)) <= 0)
			return got;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0 && !umc_ib_decode(buf, (size_t)n, &ib, &ud, &off, &plen) && ib.lrh.dlid == mlid)
			got++;
		else if (n > 0)
			(*other)++;
	}
}

/*
 * umc-sm --forwarding unicast: a full member R, a send-only sender S, and
 * the orchestrator's own port, a receiving member with a data endpoint of
 * its own, whose joins and leaves are waited SA transactions: every copy S
 * sends after its join was answered reaches it, none after its leave was;
 * a member killed is dropped from S's list once its lease ends.
 */
static void scenario_fwd(void)
{
	enum { N = 20 }; /* R has NRECV - 1 receives posted, never posted again */
	struct umc_sa_open_args oa = {.timeout_ms = 3000};
	socklen_t len = sizeof(oa.data);
	struct test_sm sm;
	struct agent r, s;
	char grp[32], mgid[64], gr[64];
	int data, other = 0, got;
	unsigned mlid;
	uint64_t end;

	agent_start_sm(&sm, fwd_args);
	data = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	oa.data.sin_family = AF_INET;
	oa.data.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	test_sm_addr(&sm, &oa.sm);
	if (data < 0 || bind(data, (struct sockaddr *)&oa.data, sizeof(oa.data)) ||
	    getsockname(data, (struct sockaddr *)&oa.data, &len) || umc_sa_open(&oa, &observer)) {
		fprintf(stderr, "the observer's port cannot register\n");
		exit(2);
	}
	scenario_group(grp, 30);
	udp_mgid(grp, mgid);
	start(&r, "R");
	start(&s, "S");
	reply_gid(ask(&r, "open udp"), gr);
	agent_expect_prefix(ask(&s, "open udp"), "ok", "open");
	mlid = reply_hex(ask(&r, "join 0 %s full", grp), "dlid 0x");
	agent_expect_prefix(r.last, "ok JOIN 0 0 ", "the member's join");
	agent_expect_prefix(ask(&s, "join 0 %s sendonly", grp), "ok JOIN 0 0 ", "send-only join");
	agent_expect_prefix(ask(&s, "send 0 %d", N), "ok", "send");
	expect_recv(&r, N, mgid, "the member");
	agent_expect_prefix(ask(&s, "recv 0 1 %s", mgid), "ok 0 ", "the send-only sender receives");
	if (counter(&s, "tx_packets") != N) /* one copy per receiving port, none to itself */
		agent_fail("sender: %lu datagrams for %d messages to one member",
			   counter(&s, "tx_packets"), N);
	/* Joined: what S sends once the join was answered reaches the new member. */
	if (observer_member(mgid, true))
		agent_fail("the observer's join failed");
	agent_expect_prefix(ask(&s, "send 0 %d", N), "ok", "send after a join");
	if ((got = count_copies(data, (uint16_t)mlid, N, 3000, &other)) != N)
		agent_fail("the member that had just joined got %d of %d", got, N);
	expect_recv(&r, 2 * N, mgid, "the first member");
	/* Left: nothing S sends once the leave was answered reaches the port that left. */
	if (observer_member(mgid, false))
		agent_fail("the observer's leave failed");
	agent_expect_prefix(ask(&s, "send 0 %d", N), "ok", "send after a leave");
	expect_recv(&r, 3 * N, mgid, "the first member, after the leave");
	if ((got = count_copies(data, (uint16_t)mlid, 0, 300, &other)) != 0)
		agent_fail("%d copies reached the port whose leave was answered", got);
	if (other)
		agent_fail("%d other datagrams at the observer's data endpoint", other);
	if (counter(&s, "tx_packets") != 4 * N)
		agent_fail("sender: %lu datagrams, expected %d", counter(&s, "tx_packets"), 4 * N);
	/*
	 * Killed: once its lease ends the SA drops it, and S hears of it
	 * (nobody waits for that: a lease that ends is no request); then S has
	 * nobody left to send to.
	 */
	agent_kill(&r);
	if (sa_join_state_becomes(mgid, gr, 0, 15000) != 0)
		agent_fail("the killed member outlived its lease");
	end = t_deadline(3000);
	while (counter(&s, "tx_fwd_none") == 0 && t_now_ms() < end)
		agent_expect_prefix(ask(&s, "send 0 1"), "ok", "send while the list changes");
	unsigned long tx = counter(&s, "tx_packets"), none = counter(&s, "tx_fwd_none");

	agent_expect_prefix(ask(&s, "send 0 5"), "ok", "send to nobody");
	if (counter(&s, "tx_packets") != tx || counter(&s, "tx_fwd_none") != none + 5)
		agent_fail("to no member: tx_packets %lu (was %lu), tx_fwd_none %lu (was %lu)",
			   counter(&s, "tx_packets"), tx, counter(&s, "tx_fwd_none"), none);
	agent_finish(&s);
	umc_sa_close(observer);
	close(data);
	stop_sm(&sm);
	/* The join and the leave waited for S's acknowledgment, not for the time limit. */
	if (test_sm_counter(&sm, "fwd_held") < 2 || test_sm_counter(&sm, "fwd_hold_expired") != 0)
		agent_fail("umc-sm: fwd_held %ld fwd_hold_expired %ld", test_sm_counter(&sm, "fwd_held"),
			   test_sm_counter(&sm, "fwd_hold_expired"));
	test_sm_free(&sm);
}

static void scenario_fwd_restart(void)
{
	struct test_sm sm;
	struct agent r, s;
	char grp[32], mgid[64];
	uint16_t port;

	start_sm_unicast(&sm);
	port = sm.port;
	scenario_group(grp, 31);
	udp_mgid(grp, mgid);
	start(&r, "R");
	start(&s, "S");
	agent_expect_prefix(ask(&r, "open udp"), "ok", "open");
	agent_expect_prefix(ask(&s, "open udp"), "ok", "open");
	agent_expect_prefix(ask(&r, "join 0 %s full", grp), "ok JOIN 0 0 ", "receiver join");
	agent_expect_prefix(ask(&s, "join 0 %s sendonly", grp), "ok JOIN 0 0 ", "send-only join");
	agent_expect_prefix(ask(&s, "send 0 5"), "ok", "send");
	expect_recv(&r, 5, mgid, "before the restart");
	umc_sa_close(observer);
	kill(sm.pid, SIGKILL);
	test_sm_stop(&sm);
	test_sm_free(&sm);
	{
		if (test_sm_start(&sm, port, fwd_args))
			exit(2);
	}
	agent_expect_prefix(ask(&r, "event 5000"), "ok ERROR -102 ", "receiver reset");
	agent_expect_prefix(ask(&s, "event 5000"), "ok ERROR -102 ", "sender reset");
	/* The sender's AH is still there: its list is empty until someone joins again. */
	agent_expect_prefix(ask(&s, "send 0 5"), "ok", "send after the restart");
	if (counter(&s, "tx_fwd_none") != 5)
		agent_fail("after the restart: tx_fwd_none %lu", counter(&s, "tx_fwd_none"));
	/*
	 * Registered again, the sender's port has subscribed again (before it
	 * says ACTIVE): the member's join below waits for its acknowledgment.
	 */
	wait_active(&s);
	wait_active(&r);
	agent_expect_prefix(ask(&r, "leave 0 %s", grp), "ok", "leave");
	agent_expect_prefix(join_when_ready(&r, grp), "ok JOIN 0 0 ", "join again");
	/* The join is answered once the sender (subscribed again) has the new list. */
	agent_expect_prefix(ask(&s, "send 0 5"), "ok", "send to the member that joined again");
	expect_recv(&r, 10, mgid, "after joining again");
	agent_finish(&r);
	agent_finish(&s);
	stop_sm(&sm);
	test_sm_free(&sm);
}

/* A UDP port nothing uses now, for a umc-sm --data-port of this test's own. */
static uint16_t free_udp_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		exit(2);
	close(fd);
	return ntohs(a.sin_port);
}

/*
 * Another process holds the data port with a plain socket (no
 * SO_REUSEADDR), on every address (@any) or on the IP group of the first
 * application MLID, 0xC001: the join completes, umc-sm forwards that MLID
 * by unicast, every message arrives; a second group on another MLID is
 * not touched (with @any its own member says so too).
 */
static void scenario_squat(bool any)
{
	struct sockaddr_in sq = {.sin_family = AF_INET};
	char dport[8], grp[2][32], mgid[2][64];
	const char *args[] = {"--data-port", dport, NULL};
	struct agent r, s;
	struct test_sm sm;
	int fd;

	snprintf(dport, sizeof(dport), "%u", free_udp_port());
	sq.sin_port = htons((uint16_t)atoi(dport));
	sq.sin_addr.s_addr = htonl(any ? INADDR_ANY : UMC_SM_MCAST_BASE + 1);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sq, sizeof(sq))) {
		fprintf(stderr, "cannot hold the data port\n");
		exit(2);
	}
	agent_start_sm(&sm, args);
	for (int j = 0; j < 2; j++) {
		scenario_group(grp[j], 32 + j);
		udp_mgid(grp[j], mgid[j]);
	}
	start(&r, "R");
	start(&s, "S");
	for (int j = 0; j < 2; j++) {
		agent_expect_prefix(ask(&r, "open udp"), "ok", "open");
		agent_expect_prefix(ask(&s, "open udp"), "ok", "open");
	}
	const char *j0 = ask(&r, "join 0 %s full", grp[0]);

	agent_expect_prefix(j0, "ok JOIN 0 0 ", "a join with the data port held");
	if (reply_hex(j0, "dlid 0x") != 0xc001)
		agent_fail("the first group's MLID is 0x%x, not 0xc001", reply_hex(j0, "dlid 0x"));
	agent_expect_prefix(ask(&r, "join 1 %s full", grp[1]), "ok JOIN 0 1 ",
			    "a second group's join");
	agent_expect_prefix(ask(&s, "join 0 %s sendonly", grp[0]), "ok JOIN 0 0 ",
			    "send-only join");
	agent_expect_prefix(ask(&s, "join 1 %s sendonly", grp[1]), "ok JOIN 0 1 ",
			    "send-only join 2");
	agent_expect_prefix(ask(&s, "send 0 %d", NMSG), "ok", "send");
	agent_expect_prefix(ask(&s, "send 1 %d", NMSG), "ok", "send to the second group");
	expect_recv(&r, NMSG, mgid[0], "the receiver of the held MLID");
	{
		char want[48];

		snprintf(want, sizeof(want), "ok %d badgrh 0", NMSG);
		agent_expect_prefix(ask(&r, "recv 1 %d %s", NMSG, mgid[1]), want,
				    "the second group");
	}
	agent_finish(&r);
	agent_finish(&s);
	close(fd);
	stop_sm(&sm);
	if (test_sm_counter(&sm, "fwd_squatted") != (any ? 2 : 1))
		agent_fail("umc-sm: fwd_squatted %ld, expected %d", test_sm_counter(&sm, "fwd_squatted"),
			   any ? 2 : 1);
	test_sm_free(&sm);
}

static void scenario_squat_any(void)
{
	scenario_squat(true);
}

static void scenario_squat_group(void)
{
	scenario_squat(false);
}

static void scenario_nosm(void)
{
	struct agent a;
	const char *r;
	char grp[32];

	/* A port nothing listens on (umc-sm's own, on an address of lo not used). */
	setenv("UMC_SM", "127.0.0.3:9", 1);
	scenario_group(grp, 6);
	start(&a, "A");
	agent_expect_prefix(ask(&a, "open udp"), "ok", "open without an SM");
	r = ask(&a, "port");
	if (!strstr(r, "state 2 lid 0") || !strstr(r, "link 1") ||
	    !strstr(r, "gids 1 past -1/22"))
		agent_fail("port without an SM: %s (expected INIT, LID 0, InfiniBand, one GID)", r);
	agent_expect_prefix(ask(&a, "join 0 %s full", grp), "fail join errno 99",
		      "join without an SM (EADDRNOTAVAIL)");
	agent_finish(&a);
}

static void scenario_sendonly_supported(void)
{
	scenario_sendonly(true);
}

static void scenario_sendonly_refused(void)
{
	scenario_sendonly(false);
}

static const struct agent_scenario scenarios[] = {
	{"sendonly", scenario_sendonly_supported},
	{"nosendonly", scenario_sendonly_refused},
	{"aggregate", scenario_aggregate},
	{"mgid0", scenario_mgid0},
	{"ipoib", scenario_ipoib},
	{"lease", scenario_lease},
	{"exit", scenario_exit},
	{"restart", scenario_restart},
	{"timeout", scenario_timeout},
	{"lapse", scenario_lapse},
	{"smctl", scenario_smctl},
	{"nosm", scenario_nosm},
	{"unicast", scenario_unicast},
	{"storm", scenario_storm},
	{"fwd", scenario_fwd},
	{"fwd_restart", scenario_fwd_restart},
	{"squat_any", scenario_squat_any},
	{"squat_group", scenario_squat_group},
};

int main(int argc, char **argv)
{
	int cmd;

	signal(SIGPIPE, SIG_IGN);
	if (agent_exec_fds(argc, argv, &cmd))
		agent_main(cmd); /* never returns */
	unsetenv("UMC_IB_ADDR");
	return agent_run_scenario("ib_procs", argc > 1 ? argv[1] : "", scenarios,
				  sizeof(scenarios) / sizeof(scenarios[0]));
}
