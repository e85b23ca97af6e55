// SPDX-License-Identifier: MIT
/*
 * uc_agent.c - a uc_procs agent: one simulated application process, two
 * UD QPs on the device that has its address, driven by one-line commands
 * (agent.h).  Messages: struct msg then a pattern; every receiver checks
 * the tag (which agent and QP it is for), seq, length, pattern, src_qp,
 * IBV_WC_GRH and the GRH's addresses.  A serving QP answers each request
 * with an AH made from its completion and GRH.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "link/roce/uc/uc.h" /* umc_roce_uc_sync */
#include "uc_procs.h"
#include "verbs/verbs_int.h" /* counters */

enum {
	NRECV = 256,
	SLOT = 2048,
	MSG_MAGIC = 0x75637072,
	MAX_AH = 32,
	MAX_GRH = 16,
};

enum msg_type { M_REQ = 1, M_REP, M_DATA };

/* The head of every message. */
struct msg {
	uint32_t magic;
	uint8_t type;
	uint8_t src_agent, src_q;
	uint8_t dst_agent, dst_q;
	uint8_t pad[3];
	uint32_t seq;
	uint32_t len; /* whole message */
};

static uint32_t msg_len(uint32_t seq) { return (uint32_t)sizeof(struct msg) + (seq * 37u) % 900u; }

static uint8_t msg_byte(uint32_t seq, size_t j) { return (uint8_t)(seq * 31u + j * 7u + 3u); }

struct uqp {
	struct ibv_qp *qp;
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	uint8_t *buf;
	bool serving, raw; /* answer requests (raw: echo any message back) */
	unsigned served;
	uint32_t next_seq; /* next DATA seq expected */
	/* raw mode: what the receptions looked like */
	unsigned ngrh;
	struct {
		uint8_t grh[40];
		uint32_t byte_len, src_qp, imm, sum;
		int flags;
	} rx[MAX_GRH];
};

static struct {
	struct agent_arg a;
	union ibv_gid me; /* its address as a GID (IPv4: ::ffff:a.b.c.d) */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct umc_device *dev;
	int port_gid;
	struct uqp q[NQP];
	struct {
		union ibv_gid gid;
		struct ibv_ah *ah;
	} ahs[MAX_AH];
	int nah;
	unsigned bad;
	char why[256]; /* the first serving check that failed */
} ua;

uint32_t fnv(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int post_recv(struct uqp *u, uint64_t slot)
{
	struct ibv_sge sge = {(uintptr_t)u->buf + slot * SLOT, SLOT, u->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(u->qp, &wr, &bad);
}

static const char *qp_setup(struct uqp *u)
{
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 64, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_UD,
	    .sq_sig_all = 1,
	};
	struct ibv_qp_attr at = {
	    .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = ua.a.qkey};

	u->scq = ibv_create_cq(ua.ctx, 256, NULL, NULL, 0);
	u->rcq = ibv_create_cq(ua.ctx, NRECV, NULL, NULL, 0);
	if (!u->scq || !u->rcq)
		return "ibv_create_cq";
	qa.send_cq = u->scq;
	qa.recv_cq = u->rcq;
	u->qp = ibv_create_qp(ua.pd, &qa);
	if (!u->qp)
		return "ibv_create_qp";
	if (ibv_modify_qp(u->qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return "modify INIT";
	at.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(u->qp, &at, IBV_QP_STATE))
		return "modify RTR";
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0;
	if (ibv_modify_qp(u->qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return "modify RTS";
	u->buf = calloc(NRECV, SLOT);
	if (!u->buf)
		return "calloc";
	u->mr = ibv_reg_mr(ua.pd, u->buf, (size_t)NRECV * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!u->mr)
		return "ibv_reg_mr";
	for (int k = 0; k < NRECV - 1; k++)
		if (post_recv(u, (uint64_t)k))
			return "ibv_post_recv";
	return NULL;
}

/* The GID of an IPv4 (::ffff:a.b.c.d) or IPv6 address; false if it is neither. */
static bool gid_of(const char *text, union ibv_gid *g)
{
	struct in_addr a4;

	memset(g, 0, sizeof(*g));
	if (inet_pton(AF_INET, text, &a4) == 1) {
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(g->raw + 12, &a4, 4);
		return true;
	}
	return inet_pton(AF_INET6, text, g->raw) == 1;
}

static bool gid_v4(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(g->raw, pfx, 12) == 0;
}

/*
 * The source and destination GIDs of a receive's GRH area: for IPv4 (rxe's
 * layout) the IPv4 header in bytes 20-39, else the IPv6 header.  False if
 * the area is neither.
 */
static bool grh_gids(const uint8_t *b, union ibv_gid *src, union ibv_gid *dst)
{
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if (b[20] == 0x45) {
		src->raw[10] = src->raw[11] = dst->raw[10] = dst->raw[11] = 0xff;
		memcpy(src->raw + 12, b + 32, 4);
		memcpy(dst->raw + 12, b + 36, 4);
		return true;
	}
	if (b[0] >> 4 != 6 || b[6] != 17) /* version 6, next header UDP */
		return false;
	memcpy(src->raw, b + 8, 16);
	memcpy(dst->raw, b + 24, 16);
	return true;
}

/* The device with the agent's address in its GID table (the agent's "HCA port"). */
static const char *agent_setup(void)
{
	struct ibv_device **list;
	union ibv_gid want = {0};
	int n;

	if (ua.a.netns) {
		char path[256];
		int fd;

		snprintf(path, sizeof(path), "/var/run/netns/%s", ua.a.netns);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			return "setns";
		close(fd);
	}
	/* UC_PROCS_UID: agents run as that user; UC_PROCS_ODD_UID: odd agents only. */
	const char *uid_env = getenv("UC_PROCS_UID");

	if (!uid_env && (ua.a.id & 1))
		uid_env = getenv("UC_PROCS_ODD_UID");
	if (uid_env) {
		uid_t uid = (uid_t)strtoul(uid_env, NULL, 0);

		if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
			return "setuid";
	}
	if (ua.a.qpnbase)
		setenv("UMC_QPN_BASE", ua.a.qpnbase, 1);
	else
		unsetenv("UMC_QPN_BASE");
	if (!gid_of(ua.a.addr, &ua.me))
		return "bad address";
	want = ua.me;
	list = ibv_get_device_list(&n);
	for (int d = 0; list && d < n && !ua.ctx; d++) {
		struct ibv_context *c = ibv_open_device(list[d]);
		union ibv_gid g;

		for (int i = 0; c && i < UMC_MAX_GIDS && !ibv_query_gid(c, 1, i, &g); i++) {
			if (memcmp(&g, &want, sizeof(g)) == 0) {
				ua.ctx = c;
				ua.port_gid = i;
				break;
			}
		}
		if (c && !ua.ctx)
			ibv_close_device(c);
	}
	if (list)
		ibv_free_device_list(list);
	if (!ua.ctx)
		return "no device has the address";
	ua.dev = ctx_dev(ua.ctx);
	ua.pd = ibv_alloc_pd(ua.ctx);
	if (!ua.pd)
		return "ibv_alloc_pd";
	for (int i = 0; i < NQP; i++) {
		const char *e = qp_setup(&ua.q[i]);

		if (e)
			return e;
	}
	return NULL;
}

/* A cached AH to address @text, made with ibv_create_ah; NULL if it is none. */
static struct ibv_ah *ah_to(const char *text)
{
	struct ibv_ah_attr at = {.is_global = 1, .port_num = 1};
	union ibv_gid g;

	if (!gid_of(text, &g))
		return NULL;
	for (int i = 0; i < ua.nah; i++)
		if (!memcmp(&ua.ahs[i].gid, &g, sizeof(g)))
			return ua.ahs[i].ah;
	if (ua.nah == MAX_AH)
		return NULL;
	at.grh.dgid = g;
	at.grh.sgid_index = (uint8_t)ua.port_gid;
	at.grh.hop_limit = 64;
	ua.ahs[ua.nah].gid = g;
	ua.ahs[ua.nah].ah = ibv_create_ah(ua.pd, &at);
	return ua.ahs[ua.nah++].ah;
}

/* Post one SEND from q[@q] of the last (never posted) slot; @ah_owned is destroyed at completion.
 */
static int send_raw(int q, struct ibv_ah *ah, bool ah_owned, uint32_t dqpn, uint32_t qkey,
		    const void *data, uint32_t len, bool imm, uint32_t imm_be)
{
	struct uqp *u = &ua.q[q];
	uint8_t *p = u->buf + (size_t)(NRECV - 1) * SLOT;
	struct ibv_sge sge = {(uintptr_t)p, len, u->mr->lkey};
	struct ibv_send_wr wr =
			       {
				   .wr_id = ah_owned ? (uintptr_t)ah : 0,
				   .sg_list = &sge,
				   .num_sge = 1,
				   .opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				   .imm_data = imm_be,
				   .wr.ud = {.ah = ah, .remote_qpn = dqpn, .remote_qkey = qkey},
			       },
			   *bad;

	memmove(p, data, len);
	return ibv_post_send(u->qp, &wr, &bad);
}

static int send_msg(int q, struct ibv_ah *ah, bool ah_owned, uint32_t dqpn, uint32_t qkey,
		    enum msg_type type, int dst_agent, int dst_q, uint32_t seq)
{
	uint8_t b[SLOT];
	struct msg m = {MSG_MAGIC,
			(uint8_t)type,
			(uint8_t)ua.a.id,
			(uint8_t)q,
			(uint8_t)dst_agent,
			(uint8_t)dst_q,
			{0},
			seq,
			msg_len(seq)};

	memcpy(b, &m, sizeof(m));
	for (size_t j = sizeof(m); j < m.len; j++)
		b[j] = msg_byte(seq, j);
	return send_raw(q, ah, ah_owned, dqpn, qkey, b, m.len, seq & 1, htonl(seq ^ 0x5a5a5a5au));
}

static void note_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_bad(const char *fmt, ...)
{
	va_list ap;

	if (!ua.bad++) {
		va_start(ap, fmt);
		vsnprintf(ua.why, sizeof(ua.why), fmt, ap);
		va_end(ap);
	}
}

/*
 * Check a received message on q[@q]: from @src_ip/@src_qpn (0: any), of
 * @type, addressed to this agent and QP.  Returns the message or NULL
 * (with @why).
 */
static const struct msg *check_msg(int q, const struct ibv_wc *wc, const union ibv_gid *src_gid,
				   uint32_t src_qpn, enum msg_type type, char *why, size_t cap)
{
	const uint8_t *b = ua.q[q].buf + wc->wr_id * SLOT;
	union ibv_gid gs, gd;
	static struct msg m;

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV) {
		snprintf(why, cap, "completion %s opcode %d", ibv_wc_status_str(wc->status),
			 wc->opcode);
		return NULL;
	}
	memcpy(&m, b + 40, sizeof(m));
	if (wc->byte_len < 40 + sizeof(m) || m.magic != MSG_MAGIC || m.type != type) {
		snprintf(why, cap, "not a type-%d message (byte_len %u)", type, wc->byte_len);
		return NULL;
	}
	if (m.dst_agent != ua.a.id || m.dst_q != q) {
		snprintf(why, cap, "message for agent %d QP %d arrived at agent %d QP %d",
			 m.dst_agent, m.dst_q, ua.a.id, q);
		return NULL;
	}
	if (m.len != msg_len(m.seq) || wc->byte_len != 40 + m.len) {
		snprintf(why, cap, "seq %u: byte_len %u, length %u", m.seq, wc->byte_len, m.len);
		return NULL;
	}
	for (size_t j = sizeof(m); j < m.len; j++) {
		if (b[40 + j] != msg_byte(m.seq, j)) {
			snprintf(why, cap, "seq %u: payload byte %zu differs", m.seq, j);
			return NULL;
		}
	}
	if (!(wc->wc_flags & IBV_WC_GRH) || (src_qpn && wc->src_qp != src_qpn) ||
	    (m.seq & 1) != !!(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    ((m.seq & 1) && wc->imm_data != htonl(m.seq ^ 0x5a5a5a5au))) {
		snprintf(why, cap, "seq %u: wc_flags 0x%x src_qp 0x%x (want 0x%x)", m.seq,
			 wc->wc_flags, wc->src_qp, src_qpn);
		return NULL;
	}
	if (!grh_gids(b, &gs, &gd) || gid_v4(&gd) != gid_v4(&ua.me) ||
	    (src_gid && memcmp(&gs, src_gid, sizeof(gs))) || memcmp(&gd, &ua.me, sizeof(gd))) {
		snprintf(why, cap, "seq %u: GRH %s header wrong", m.seq,
			 gid_v4(&ua.me) ? "IPv4" : "IPv6");
		return NULL;
	}
	return &m;
}

/* Answer a request (or, raw, any message) on serving QP @q, with an AH from its completion. */
static void serve_one(int q, const struct ibv_wc *wc)
{
	struct uqp *u = &ua.q[q];
	struct ibv_grh *grh = (struct ibv_grh *)(u->buf + wc->wr_id * SLOT);
	const uint8_t *b = (const uint8_t *)grh;
	struct ibv_ah *ah = NULL;
	struct ibv_ah_attr at;
	union ibv_gid gs, gd;
	const struct msg *m = NULL;
	char why[256];

	if (u->raw) {
		if (u->ngrh < MAX_GRH && wc->status == IBV_WC_SUCCESS) {
			__typeof__(u->rx[0]) *r = &u->rx[u->ngrh++];

			memcpy(r->grh, b, 40);
			r->byte_len = wc->byte_len;
			r->src_qp = wc->src_qp;
			r->imm = ntohl(wc->imm_data);
			r->flags = wc->wc_flags;
			r->sum = fnv(b + 40, wc->byte_len - 40);
		}
	} else if (!(m = check_msg(q, wc, NULL, 0, M_REQ, why, sizeof(why)))) {
		note_bad("agent %d QP %d: %s", ua.a.id, q, why);
		return;
	}
	/* Both ways libibverbs offers: even seqs one call, odd seqs the two steps. */
	if (!m || !(m->seq & 1)) {
		ah = ibv_create_ah_from_wc(ua.pd, (struct ibv_wc *)wc, grh, 1);
	} else if (ibv_init_ah_from_wc(ua.ctx, 1, (struct ibv_wc *)wc, grh, &at) == 0) {
		grh_gids(b, &gs, &gd);
		if (!at.is_global || memcmp(&at.grh.dgid, &gs, sizeof(gs)) ||
		    at.grh.sgid_index != ua.port_gid)
			note_bad("ibv_init_ah_from_wc: is_global %d sgid_index %d", at.is_global,
				 at.grh.sgid_index);
		ah = ibv_create_ah(ua.pd, &at);
	}
	if (!ah) {
		note_bad("agent %d QP %d: no AH from the completion (errno %d)", ua.a.id, q, errno);
		return;
	}
	/* Q_Key 0x80000000: the high bit says "the QP's own" (IBA 10.2.4). */
	if (u->raw ? send_raw(q, ah, true, wc->src_qp, 0x80000000u, b + 40, wc->byte_len - 40,
			      false, 0)
		   : send_msg(q, ah, true, wc->src_qp, 0x80000000u, M_REP, m->src_agent, m->src_q,
			      m->seq)) {
		note_bad("agent %d QP %d: reply not posted", ua.a.id, q);
		ibv_destroy_ah(ah);
		return;
	}
	u->served++;
}

/* Send completions of every QP (they release their AH); requests of serving QPs but @skip. */
static void service(int skip)
{
	for (int q = 0; q < NQP; q++) {
		struct uqp *u = &ua.q[q];
		struct ibv_wc wc;

		while (ibv_poll_cq(u->scq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_SEND)
				note_bad("agent %d QP %d: send %s", ua.a.id, q,
					 ibv_wc_status_str(wc.status));
			if (wc.wr_id)
				ibv_destroy_ah((struct ibv_ah *)(uintptr_t)wc.wr_id);
		}
		while (u->serving && q != skip && ibv_poll_cq(u->rcq, 1, &wc) == 1) {
			serve_one(q, &wc);
			post_recv(u, wc.wr_id);
		}
	}
}

/* A receive completion of q[@q] into @wc, if there is one (1), else 0 (-1: error). */
static int poll_q(int q, struct ibv_wc *wc)
{
	service(q);
	return ibv_poll_cq(ua.q[q].rcq, 1, wc);
}

/* Wait up to @ms for a receive on q[@q], serving the others meanwhile. */
static bool wait_recv(int q, struct ibv_wc *wc, int ms)
{
	uint64_t deadline = t_now_ms() + (uint64_t)ms;

	do {
		if (poll_q(q, wc) == 1)
			return true;
		poll(NULL, 0, 1);
	} while (t_now_ms() < deadline);
	return false;
}

/* ping Q PEERID ADDR DQPN DQ N RETRY_MS: N request/reply rounds. */
static void cmd_ping(int q, int peer, const char *addr, uint32_t dqpn, int dq, unsigned n,
		     int retry_ms)
{
	union ibv_gid ip;
	struct ibv_ah *ah;
	unsigned retrans = 0, dups = 0;
	char why[256];

	if (!gid_of(addr, &ip) || !(ah = ah_to(addr))) {
		agent_reply("fail ping: no AH to %s", addr);
		return;
	}
	for (uint32_t seq = 0; seq < n; seq++) {
		uint64_t deadline = t_now_ms() + WAIT_MS;
		bool done = false;

		while (!done) {
			struct ibv_wc wc;
			int wait = retry_ms ? retry_ms : WAIT_MS;
			const struct msg *m;

			if (send_msg(q, ah, false, dqpn, QKEY, M_REQ, peer, dq, seq)) {
				agent_reply("fail ping seq %u: ibv_post_send", seq);
				return;
			}
			while (!done && wait_recv(q, &wc, wait)) {
				m = check_msg(q, &wc, &ip, dqpn, M_REP, why, sizeof(why));
				post_recv(&ua.q[q], wc.wr_id);
				if (!m) {
					agent_reply("fail ping seq %u: %s", seq, why);
					return;
				}
				if (m->seq == seq)
					done = true;
				else if (m->seq < seq)
					dups++;
				else {
					agent_reply("fail ping: reply seq %u to request %u", m->seq,
						    seq);
					return;
				}
			}
			if (!done && (!retry_ms || t_now_ms() > deadline)) {
				agent_reply("fail ping: no reply to seq %u within %d ms", seq,
					    WAIT_MS);
				return;
			}
			retrans += !done;
		}
	}
	agent_reply("ok pinged=%u retrans=%u dups=%u", n, retrans, dups);
}

/* send Q ADDR DQPN DAGENT DQ QKEY FIRST N: one-way DATA messages FIRST..FIRST+N-1. */
static void cmd_send(int q, const char *addr, uint32_t dqpn, int dagent, int dq, uint32_t qkey,
		     uint32_t first, unsigned n)
{
	struct ibv_ah *ah;

	if (!(ah = ah_to(addr))) {
		agent_reply("fail send: no AH to %s", addr);
		return;
	}
	for (uint32_t k = 0; k < n; k++) {
		if (send_msg(q, ah, false, dqpn, qkey, M_DATA, dagent, dq, first + k)) {
			agent_reply("fail send seq %u", first + k);
			return;
		}
		service(-1);
	}
	agent_reply("ok sent=%u", n);
}

/* recv Q N SRCADDR SRCQPN: the next N DATA messages, in order. */
static void cmd_recv(int q, unsigned n, const char *src, uint32_t srcqpn)
{
	union ibv_gid ip;
	char why[256];

	if (!gid_of(src, &ip)) {
		agent_reply("fail recv: bad address");
		return;
	}
	for (unsigned k = 0; k < n; k++) {
		struct ibv_wc wc;
		const struct msg *m;

		if (!wait_recv(q, &wc, WAIT_MS)) {
			agent_reply("fail recv: %u of %u within %d ms", k, n, WAIT_MS);
			return;
		}
		m = check_msg(q, &wc, &ip, srcqpn, M_DATA, why, sizeof(why));
		post_recv(&ua.q[q], wc.wr_id);
		if (!m) {
			agent_reply("fail recv %u: %s", k, why);
			return;
		}
		if (m->seq != ua.q[q].next_seq) {
			agent_reply("fail recv %u: seq %u, expected %u (order, loss, duplicate)", k,
				    m->seq, ua.q[q].next_seq);
			return;
		}
		ua.q[q].next_seq++;
	}
	agent_reply("ok received=%u", n);
}

/* quiet Q MS: nothing arrives on q[Q] for MS milliseconds (0: none already there). */
static void cmd_quiet(int q, int ms)
{
	struct ibv_wc wc;

	if (ms ? wait_recv(q, &wc, ms) : poll_q(q, &wc) == 1) {
		agent_reply("fail QP %d received a message (byte_len %u, src_qp 0x%x) but must not",
			    q, wc.byte_len, wc.src_qp);
		return;
	}
	agent_reply("ok quiet");
}

/* The device's counters by name. */
static const struct {
	const char *name;
	size_t off;
} cnt_names[] = {
#define CNT_NAME(n) {#n, offsetof(struct umc_counters, n)},
    UMC_COUNTERS(CNT_NAME)
#undef CNT_NAME
};

static unsigned long cnt_get(const char *name)
{
	for (size_t i = 0; i < sizeof(cnt_names) / sizeof(cnt_names[0]); i++)
		if (!strcmp(cnt_names[i].name, name))
			return atomic_load(
			    (_Atomic uint64_t *)((char *)ua.dev->cnt + cnt_names[i].off));
	return (unsigned long)-1;
}

static void cmd_counters(void)
{
	const struct umc_counters *c = ua.dev->cnt;

	umc_progress(ua.dev, true);
	service(-1);
	agent_reply("ok rx_packets=%lu rx_delivered=%lu rx_no_qp=%lu rx_no_group=%lu "
		    "rx_qkey_viol=%lu rx_icrc_id_solved=%lu rx_bad_icrc=%lu rx_malformed=%lu "
		    "uc_forwarded=%lu uc_fwd_dropped=%lu uc_qpn_taken=%lu uc_conn_refused=%lu "
		    "uc_claim_refused=%lu uc_demux_untrusted=%lu served0=%u served1=%u bad=%u why=%s",
		    atomic_load(&c->rx_packets), atomic_load(&c->rx_delivered),
		    atomic_load(&c->rx_no_qp), atomic_load(&c->rx_no_group),
		    atomic_load(&c->rx_qkey_viol), atomic_load(&c->rx_icrc_id_solved),
		    atomic_load(&c->rx_bad_icrc), atomic_load(&c->rx_malformed),
		    atomic_load(&c->uc_forwarded), atomic_load(&c->uc_fwd_dropped),
		    atomic_load(&c->uc_qpn_taken), atomic_load(&c->uc_conn_refused),
		    atomic_load(&c->uc_claim_refused), atomic_load(&c->uc_demux_untrusted),
		    ua.q[0].served,
		    ua.q[1].served, ua.bad, ua.bad ? ua.why : "-");
}

/* waitcnt NAME MIN: until counter NAME is at least MIN (a bound of WAIT_MS); then as counters. */
static void cmd_waitcnt(const char *name, unsigned long min)
{
	uint64_t deadline = t_now_ms() + WAIT_MS;

	while (cnt_get(name) < min || cnt_get(name) == (unsigned long)-1) {
		if (t_now_ms() > deadline) {
			agent_reply("fail %s is %lu, not %lu, after %d ms", name, cnt_get(name),
				    min, WAIT_MS);
			return;
		}
		umc_progress(ua.dev, true);
		service(-1);
		poll(NULL, 0, 2);
	}
	cmd_counters();
}

/* clients N: until this process's demultiplexer (of GID 0) has N processes registered. */
static void cmd_clients(int n)
{
	uint64_t deadline = t_now_ms() + WAIT_MS;
	struct umc_roce_uc_info in;

	do {
		umc_roce_uc_sync(ua.dev, &in, 2000);
		if (in.leading && in.clients == n) {
			agent_reply("ok clients=%d steering=%d", in.clients, in.steering);
			return;
		}
		service(-1);
		poll(NULL, 0, 2);
	} while (t_now_ms() < deadline);
	agent_reply("fail %d processes registered, not %d (leading %d)", in.clients, n, in.leading);
}

/*
 * ucsync DEADPID: wait until every address of the port has a live
 * demultiplexer other than DEADPID that holds the port of GID 0, and has
 * seen every claim of this process.
 */
static void cmd_ucsync(pid_t dead)
{
	uint64_t deadline = t_now_ms() + WAIT_MS;
	struct umc_roce_uc_info in;
	int ret;

	do {
		ret = umc_roce_uc_sync(ua.dev, &in, 2000);
		if (!ret && in.leader_pid != dead && in.leader_pid && in.port_held)
			break;
		service(-1);
		poll(NULL, 0, 5);
	} while (t_now_ms() < deadline);
	if (ret || in.leader_pid == dead || !in.port_held)
		agent_reply("fail ucsync: ret %d leader %d port_held %d connected %d of %d", ret,
			    (int)in.leader_pid, in.port_held, in.connected, in.addrs);
	else
		agent_reply("ok leader=%d leading=%d addrs=%d", (int)in.leader_pid, in.leading,
			    in.addrs);
}

/* grh Q K: reception K of raw serving QP Q. */
static void cmd_grh(int q, unsigned k)
{
	char hex[81];

	if (k >= ua.q[q].ngrh) {
		agent_reply("fail only %u receptions", ua.q[q].ngrh);
		return;
	}
	for (int i = 0; i < 40; i++)
		snprintf(hex + 2 * i, 3, "%02x", ua.q[q].rx[k].grh[i]);
	agent_reply("ok len=%u src_qp=0x%x imm=0x%x flags=0x%x sum=0x%x grh=%s",
		    ua.q[q].rx[k].byte_len, ua.q[q].rx[k].src_qp, ua.q[q].rx[k].imm,
		    ua.q[q].rx[k].flags, ua.q[q].rx[k].sum, hex);
}

int uc_agent_main(void *arg, int cmd)
{
	char line[256];
	const char *err;

	ua.a = *(const struct agent_arg *)arg;
	err = agent_setup();
	if (err) {
		agent_reply("fail setup: %s (errno %d)", err, errno);
		return 1;
	}
	agent_reply("ok ready q0=0x%x q1=0x%x pid=%d", ua.q[0].qp->qp_num, ua.q[1].qp->qp_num,
		    (int)getpid());
	for (;;) {
		struct pollfd p = {.fd = cmd, .events = POLLIN};
		unsigned a, b, c, d, e, f, g;
		char s[64];

		service(-1);
		if (poll(&p, 1, 2) == 0)
			continue;
		if (!t_read_line(cmd, line, sizeof(line), AGENT_CMD_MS))
			return 2;
		if (sscanf(line, "unserve %u", &a) == 1 && a < NQP) {
			ua.q[a].serving = false;
			agent_reply("ok not serving");
		} else if (sscanf(line, "serve %u", &a) == 1 && a < NQP) {
			ua.q[a].serving = true;
			ua.q[a].raw = strstr(line, "raw") != NULL;
			agent_reply("ok serving");
		} else if (sscanf(line, "ping %u %u %63s %x %u %u %u", &a, &b, s, &c, &d, &e, &f) ==
			       7 &&
			   a < NQP) {
			cmd_ping((int)a, (int)b, s, c, (int)d, e, (int)f);
		} else if (sscanf(line, "send %u %63s %x %u %u %x %u %u", &a, s, &b, &c, &d, &e, &f,
				  &g) == 8 &&
			   a < NQP) {
			cmd_send((int)a, s, b, (int)c, (int)d, e, f, g);
		} else if (sscanf(line, "recv %u %u %63s %x", &a, &b, s, &c) == 4 && a < NQP) {
			cmd_recv((int)a, b, s, c);
		} else if (sscanf(line, "quiet %u %u", &a, &b) == 2 && a < NQP) {
			cmd_quiet((int)a, (int)b);
		} else if (sscanf(line, "waitcnt %63s %u", s, &a) == 2) {
			cmd_waitcnt(s, a);
		} else if (sscanf(line, "clients %u", &a) == 1) {
			cmd_clients((int)a);
		} else if (sscanf(line, "ucsync %u", &a) == 1) {
			cmd_ucsync((pid_t)a);
		} else if (sscanf(line, "grh %u %u", &a, &b) == 2 && a < NQP) {
			cmd_grh((int)a, b);
		} else if (strcmp(line, "counters") == 0) {
			cmd_counters();
		} else if (strcmp(line, "quit") == 0) {
			for (int i = 0; i < NQP; i++) {
				ibv_destroy_qp(ua.q[i].qp);
				ibv_destroy_cq(ua.q[i].scq);
				ibv_destroy_cq(ua.q[i].rcq);
				ibv_dereg_mr(ua.q[i].mr);
				free(ua.q[i].buf);
			}
			for (int i = 0; i < ua.nah; i++)
				ibv_destroy_ah(ua.ahs[i].ah);
			ibv_dealloc_pd(ua.pd);
			ibv_close_device(ua.ctx);
			agent_reply("ok bye");
			return 0;
		} else {
			agent_reply("fail unknown command '%s'", line);
		}
	}
}
