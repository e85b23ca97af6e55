// SPDX-License-Identifier: MIT
/*
 * uc_procs - UD unicast between umcast processes (IBA 10.2.4, 11.4.1.2;
 * link/roce/uc/), through the verbs API only: ibv_create_ah to a peer's
 * GID and QPN, replies built with ibv_create_ah_from_wc and
 * ibv_init_ah_from_wc from the request's GRH and completion.
 *
 *   uc_procs pingpong   four processes A B C D on 127.0.0.1, two QPs each;
 *                       B<->C and D<->A ping-pong at the same time (each
 *                       reply built from the request's completion): every
 *                       message reaches the QP it was sent to and no other;
 *                       A, started first, is the host's demultiplexer and
 *                       passes every datagram on; nothing is dropped.
 *   uc_procs pingpong6  the same between processes on ::1 (IPv6 GRH).
 *   uc_procs qkey       Q_Key violations are counted (rx_qkey_viol) and not
 *                       delivered; a Q_Key with the high bit set in the WR
 *                       sends the QP's own Q_Key (IBA 10.2.4), delivered.
 *   uc_procs noqp       a DestQP nobody on the host owns is counted rx_no_qp
 *                       by the demultiplexer and dropped; DestQP 0xFFFFFF to
 *                       a unicast address is counted rx_no_group.
 *   uc_procs kill       SIGKILL of a process: its QPNs stop receiving, the
 *                       others keep receiving; SIGKILL of the demultiplexer
 *                       in the middle of a ping-pong: the ping-pong
 *                       completes (steered: without a loss; passed on:
 *                       retransmitting what the hand-over lost), a survivor
 *                       takes over, a new process receives.
 *                       (UC_PROCS_ODD_UID=uid: B and D run as that user.)
 *   uc_procs conflict   two processes numbering QPs from UMC_QPN_BASE=0x11
 *                       get distinct QPNs (0x11 0x12, then 0x13 0x14), as
 *                       on one rxe device, and talk to each other.
 *   uc_procs stopped    A (UMC_QPN_BASE=0x11) is stopped (SIGSTOP) while
 *                       the demultiplexer D dies, so A cannot register
 *                       again; B, numbering from 0x11 too, becomes the new
 *                       demultiplexer, which has never heard of A's QPNs:
 *                       B still gets 0x13 0x14.  A, continued, registers
 *                       again without a refusal, and A and B talk.
 *   uc_procs adopt      the demultiplexer A dies and B takes its group over
 *                       while C, stopped, cannot come back for its socket;
 *                       meanwhile a local process (this one, through raw
 *                       connections) registers again and again saying it
 *                       holds A's socket and drops each time: it gets that
 *                       index back once, and after its first drop the index
 *                       is a spare like any other.  When the takeover ends
 *                       (C's socket drained: what was steered there counts
 *                       rx_no_qp), three newcomers get three distinct
 *                       sockets (the two spares, then a new one): no index
 *                       is ever spare twice or had by two owners.
 *   uc_procs netns NSA NSB ADDRA ADDRB
 *                       two processes in each of two network namespaces
 *                       (hosts) joined by a link: ping-pong across hosts,
 *                       each host's demultiplexer passing on its share.
 *   uc_procs rxe NSHOST NSRXE ADDRHOST ADDRRXE PCAP
 *                       real rxe packets (PCAP, rxe-mckey-ipv4.pcap: rxe's
 *                       QPN 0x11, Q_Key 0x01234567, rxe's non-zero IPv4 IDs)
 *                       replayed from the "rxe host" through a raw socket
 *                       to a unicast QP (DestQP and destination rewritten,
 *                       IP checksum and ICRC recomputed): delivered with the
 *                       replayed IPv4 header in GRH bytes 20-39 (ID solved
 *                       from the ICRC); the QP's replies, built from those
 *                       completions, are what rxe accepts (ICRC over ID 0,
 *                       DF; DestQP 0x11; rxe's source port convention).
 *
 * The one-host scenarios run in a network namespace of their own (the
 * demultiplexer is per namespace, and every umcast process there takes
 * part).  UC_PROCS_UID=uid runs every agent as that user.
 *
 * The agents run through agent.h.  Messages: struct msg then a pattern;
 * every receiver checks the tag (which agent and QP it is for), seq,
 * length, pattern, src_qp, IBV_WC_GRH and the GRH's IPv4 addresses.
 * Exit status 0 when every check passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "agent.h"
#include "isolate.h"
#include "link/roce/uc/uc.h" /* umc_roce_uc_sync, counters */
#include "verbs/verbs_int.h"
#include "wire/wire.h" /* the replay: ICRC */

enum {
	NQP = 2,
	NRECV = 256,
	SLOT = 2048,
	WAIT_MS = 10000, /* bound on any wait for datagrams */
	QKEY = 0x11111111,
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

/* ------------------------------------------------------------------------- */
/* Agent.                                                                    */

struct agent_arg {
	int id;
	const char *addr;    /* its IPv4 address: selects the device */
	const char *netns;   /* run in this named namespace, or NULL */
	const char *qpnbase; /* UMC_QPN_BASE, or NULL */
	uint32_t qkey;
};

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

static uint32_t fnv(const uint8_t *p, size_t n)
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
			    (atomic_ulong *)((char *)&ua.dev->cnt + cnt_names[i].off));
	return (unsigned long)-1;
}

static void cmd_counters(void)
{
	const struct umc_counters *c = &ua.dev->cnt;

	umc_progress(ua.dev, true);
	service(-1);
	agent_reply("ok rx_packets=%lu rx_delivered=%lu rx_no_qp=%lu rx_no_group=%lu "
		    "rx_qkey_viol=%lu rx_icrc_id_solved=%lu rx_bad_icrc=%lu rx_malformed=%lu "
		    "uc_forwarded=%lu uc_fwd_dropped=%lu uc_qpn_taken=%lu served0=%u served1=%u "
		    "bad=%u why=%s",
		    atomic_load(&c->rx_packets), atomic_load(&c->rx_delivered),
		    atomic_load(&c->rx_no_qp), atomic_load(&c->rx_no_group),
		    atomic_load(&c->rx_qkey_viol), atomic_load(&c->rx_icrc_id_solved),
		    atomic_load(&c->rx_bad_icrc), atomic_load(&c->rx_malformed),
		    atomic_load(&c->uc_forwarded), atomic_load(&c->uc_fwd_dropped),
		    atomic_load(&c->uc_qpn_taken), ua.q[0].served, ua.q[1].served, ua.bad,
		    ua.bad ? ua.why : "-");
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

static int agent_main(void *arg, int cmd)
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

/* ------------------------------------------------------------------------- */
/* Orchestrator.                                                             */

/*
 * By default the demultiplexer steers each datagram straight to its
 * owner's socket; UMC_UC_STEER=0 makes it pass every one on itself.
 */
static bool steering(void)
{
	const char *e = getenv("UMC_UC_STEER");

	return !e || *e != '0';
}

struct peer {
	struct agent ag;
	struct agent_arg arg;
	char name[8];
	uint32_t q[NQP];
	pid_t pid;
	uint32_t q0_seq; /* the next DATA seq its q0 expects from markers */
};

static bool start(struct peer *p, int id, const char *addr, const char *netns, const char *qpnbase,
		  uint32_t qkey)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%c", 'A' + id);
	p->arg = (struct agent_arg){id, addr, netns, qpnbase, qkey ? qkey : QKEY};
	agent_spawn(&p->ag, p->name, agent_main, &p->arg);
	if (!agent_ready(&p->ag))
		return false;
	p->q[0] = (uint32_t)agent_field(&p->ag, "q0");
	p->q[1] = (uint32_t)agent_field(&p->ag, "q1");
	p->pid = (pid_t)agent_field(&p->ag, "pid");
	return true;
}

/* Counter @key of @p now. */
static unsigned long counter(struct peer *p, const char *key)
{
	return agent_cmd(&p->ag, "counters") ? agent_field(&p->ag, key) : (unsigned long)-2;
}

/*
 * @p's counter @key is @want: exactly, once it stops moving.  A counter may
 * trail what it counts by a moment (uc_forwarded moves when the
 * forwarding thread's sendmmsg has returned, after the owner may have
 * read the datagram), so a lower value is read again, for a bounded time.
 */
static void expect_counter(struct peer *p, const char *key, unsigned long want)
{
	uint64_t end = t_now_ms() + 2000;
	unsigned long got;
	char what[64];

	while ((got = counter(p, key)) < want && t_now_ms() < end)
		poll(NULL, 0, 20);
	snprintf(what, sizeof(what), "%s %s", p->name, key);
	agent_expect_eq(what, got, want);
}

static void expect_clean(struct peer *p)
{
	if (!agent_cmd(&p->ag, "counters"))
		return;
	agent_expect_eq(p->name, agent_field(&p->ag, "bad"), 0);
	agent_expect_eq(p->name, agent_field(&p->ag, "uc_fwd_dropped"), 0);
	agent_expect_eq(p->name, agent_field(&p->ag, "rx_bad_icrc"), 0);
}

/* Start "ping" on @from's QP @fq to @to's QP @tq (served), without waiting. */
static bool ping_start(struct peer *from, int fq, struct peer *to, int tq, unsigned n, int retry_ms)
{
	return agent_send(&from->ag, "ping %d %d %s %x %d %u %d", fq, to->arg.id, to->arg.addr,
			  to->q[tq], tq, n, retry_ms);
}

static bool ping_done(struct peer *from, unsigned n, bool exact)
{
	if (!agent_get_reply(&from->ag)) {
		agent_fail("%s: %s", from->name, from->ag.last);
		return false;
	}
	agent_expect_eq("pinged", agent_field(&from->ag, "pinged"), n);
	if (exact) {
		agent_expect_eq("retransmissions", agent_field(&from->ag, "retrans"), 0);
		agent_expect_eq("duplicates", agent_field(&from->ag, "dups"), 0);
	}
	return true;
}

static void scenario_pingpong(void)
{
	enum { N = 300 };
	struct peer a, b, c, d;

	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&c, 2, "127.0.0.1", NULL, NULL, 0) || !start(&d, 3, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_expect_eq("demultiplexer is A", agent_field(&b.ag, "leader"), (unsigned long)a.pid);
	agent_cmd(&a.ag, "ucsync 0");
	agent_expect_eq("A leads every address", agent_field(&a.ag, "leading"),
			agent_field(&a.ag, "addrs"));
	agent_cmd(&c.ag, "serve 1");
	agent_cmd(&a.ag, "serve 0");
	/* Two ping-pongs at once, across all four processes and both QPs of each. */
	ping_start(&b, 0, &c, 1, N, 0);
	ping_start(&d, 1, &a, 0, N, 0);
	ping_done(&b, N, true);
	ping_done(&d, N, true);
	/* No message went to another QP of the same process, or anywhere else. */
	agent_cmd(&b.ag, "quiet 1 0");
	agent_cmd(&c.ag, "quiet 0 0");
	agent_cmd(&d.ag, "quiet 0 0");
	agent_cmd(&a.ag, "quiet 1 0");
	struct peer *all[] = {&a, &b, &c, &d};

	for (int i = 0; i < 4; i++) {
		expect_clean(all[i]);
		expect_counter(all[i], "rx_delivered", N);
		expect_counter(all[i], "rx_no_qp", 0);
		expect_counter(all[i], "uc_qpn_taken", 0);
		/* Steered, nobody passed any on; else the demultiplexer all of them. */
		expect_counter(all[i], "uc_forwarded", i == 0 && !steering() ? 4 * N : 0);
	}
	expect_counter(&c, "served1", N);
	expect_counter(&c, "served0", 0);
	expect_counter(&a, "served0", N);
	expect_counter(&a, "served1", 0);
	for (int i = 3; i >= 0; i--)
		agent_finish(&all[i]->ag);
}

/* IPv6: two processes on ::1 ping-pong (replies from the IPv6 GRH), a third one idle. */
static void scenario_pingpong6(void)
{
	enum { N = 200 };
	struct peer a, b, c;

	if (!start(&a, 0, "::1", NULL, NULL, 0) || !start(&b, 1, "::1", NULL, NULL, 0) ||
	    !start(&c, 2, "::1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_cmd(&c.ag, "ucsync 0");
	agent_cmd(&c.ag, "serve 1");
	ping_start(&b, 0, &c, 1, N, 0);
	ping_done(&b, N, true);
	agent_cmd(&a.ag, "quiet 0 0");
	agent_cmd(&a.ag, "quiet 1 0");
	expect_clean(&b);
	expect_clean(&c);
	expect_counter(&c, "served1", N);
	expect_counter(&a, "uc_forwarded", steering() ? 0 : 2 * N);
	agent_finish(&c.ag);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}

static void scenario_qkey(void)
{
	enum { K = 5 };
	struct peer a, b, c;

	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, NULL, 0) || !start(&c, 2, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_cmd(&c.ag, "ucsync 0");
	/* Wrong Q_Key: counted at the receiving QP, never delivered. */
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 %d", c.arg.addr, c.q[0], 0x22222222, K);
	/* The same seqs with the high bit set: B's QP's own Q_Key (QKEY) goes out. */
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 %d", c.arg.addr, c.q[0], 0x80000000, K);
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x %d %d", c.arg.addr, c.q[0], 0xdeadbeef | 0x80000000,
		  K, K);
	agent_cmd(&c.ag, "recv 0 %d %s %x", 2 * K, b.arg.addr, b.q[0]);
	agent_cmd(&c.ag, "quiet 0 0");
	expect_counter(&c, "rx_qkey_viol", K);
	expect_counter(&c, "rx_delivered", 2 * K);
	expect_clean(&c);
	agent_finish(&c.ag);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}

static void scenario_noqp(void)
{
	enum { K = 7, G = 3, NOBODY = 0xfffff0 };
	struct peer a, b, c;

	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, NULL, 0) || !start(&c, 2, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 %d", c.arg.addr, NOBODY, QKEY, K);
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 %d", c.arg.addr, 0xffffff, QKEY, G);
	/* All of them end at the demultiplexer, counted there, delivered nowhere. */
	agent_cmd(&a.ag, "waitcnt rx_no_qp %d", K);
	agent_cmd(&a.ag, "waitcnt rx_no_group %d", G);
	expect_counter(&a, "rx_no_qp", K);
	expect_counter(&a, "rx_no_group", G);
	expect_counter(&a, "uc_forwarded", 0);
	expect_counter(&a, "rx_packets", 0);
	expect_counter(&b, "rx_packets", 0);
	expect_counter(&c, "rx_packets", 0);
	expect_counter(&c, "rx_no_qp", 0);
	agent_finish(&c.ag);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}

/* B sends C a marker on B.q1 -> C.q0, which C receives (in order). */
static void marker(struct peer *b, struct peer *c)
{
	agent_cmd(&b->ag, "send 1 %s %x %d 0 %x %u 1", c->arg.addr, c->q[0], c->arg.id, QKEY,
		  c->q0_seq++);
	agent_cmd(&c->ag, "recv 0 1 %s %x", b->arg.addr, b->q[1]);
}

static void scenario_kill(void)
{
	enum { N = 50, NMID = 200, K = 4 };
	struct peer a, b, c, d, e, f;
	unsigned long noqp;
	char dead[16];

	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&c, 2, "127.0.0.1", NULL, NULL, 0) || !start(&d, 3, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&d.ag, "ucsync 0");
	agent_cmd(&c.ag, "serve 1");
	ping_start(&b, 0, &c, 1, N, 0);
	ping_done(&b, N, true);

	/* D dies in the middle of its own ping-pong with C (C stops answering first). */
	ping_start(&d, 0, &c, 1, 1000000, 0);
	agent_cmd(&c.ag, "counters"); /* C is serving D meanwhile */
	agent_cmd(&c.ag, "unserve 1");
	agent_kill(&d.ag);
	agent_cmd(&a.ag, "clients 3"); /* A dropped D: what D had not read is counted */
	noqp = counter(&a, "rx_no_qp");
	/* D's QPNs no longer receive: the demultiplexer counts what comes for them. */
	agent_cmd(&b.ag, "send 1 %s %x 3 0 %x 0 %d", d.arg.addr, d.q[0], QKEY, K);
	agent_cmd(&b.ag, "send 1 %s %x 3 1 %x 0 %d", d.arg.addr, d.q[1], QKEY, K);
	agent_cmd(&a.ag, "waitcnt rx_no_qp %lu", noqp + 2 * K);
	agent_expect_eq("A rx_no_qp for dead D", agent_field(&a.ag, "rx_no_qp") - noqp, 2 * K);
	/* The others keep going; a newcomer (on D's socket, if steering) receives. */
	agent_cmd(&c.ag, "serve 1");
	ping_start(&b, 0, &c, 1, N, 0);
	ping_done(&b, N, true);
	if (!start(&f, 5, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&f.ag, "ucsync 0");
	ping_start(&f, 1, &c, 1, N, 0);
	ping_done(&f, N, true);
	marker(&f, &c);
	expect_clean(&f);

	/*
	 * Now the demultiplexer dies while B and C ping-pong: the ping-pong
	 * completes.  Steered, not one datagram is lost: no socket of the group
	 * left it, so it goes on steering until a survivor takes it over; the
	 * ping never retransmits, so a loss fails it (a retransmission timer
	 * would also fire on a round trip slowed by a loaded machine).  Passed
	 * on, those in flight at the hand-over are lost (200 ms retransmits).
	 */
	ping_start(&b, 0, &c, 1, NMID, steering() ? 0 : 200);
	agent_kill(&a.ag);
	ping_done(&b, NMID, steering());
	snprintf(dead, sizeof(dead), "%d", (int)a.pid);
	agent_cmd(&b.ag, "ucsync %s", dead);
	agent_cmd(&c.ag, "ucsync %s", dead);
	unsigned long lb = agent_field(&b.ag, "leader"), lc = agent_field(&c.ag, "leader");

	agent_expect_eq("B and C see one demultiplexer", lb, lc);
	if (lb != (unsigned long)b.pid && lb != (unsigned long)c.pid &&
	    lb != (unsigned long)f.pid) {
		agent_fail("the new demultiplexer %lu is none of the survivors B, C, F", lb);
	}
	/* Everything works again, for the survivors and for a newcomer. */
	ping_start(&b, 0, &c, 1, N, 0);
	ping_done(&b, N, true);
	if (!start(&e, 4, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&e.ag, "ucsync %s", dead);
	agent_expect_eq("E's demultiplexer", agent_field(&e.ag, "leader"), lb);
	ping_start(&e, 0, &c, 1, N, 0);
	ping_done(&e, N, true);
	agent_cmd(&c.ag, "send 0 %s %x 4 1 %x 0 %d", e.arg.addr, e.q[1], QKEY, N);
	agent_cmd(&e.ag, "recv 1 %d %s %x", N, c.arg.addr, c.q[0]);
	expect_clean(&e);
	expect_counter(&e, "rx_no_qp", 0);
	expect_counter(&e, "uc_qpn_taken", 0);
	expect_clean(&b);
	expect_clean(&c);
	agent_finish(&e.ag);
	agent_finish(&f.ag);
	agent_finish(&c.ag);
	agent_finish(&b.ag);
}

static void scenario_conflict(void)
{
	enum { N = 20 };
	struct peer a, b;

	if (!start(&a, 0, "127.0.0.1", NULL, "0x11", 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, "0x11", 0))
		return;
	agent_expect_eq("A q0", a.q[0], 0x11);
	agent_expect_eq("A q1", a.q[1], 0x12);
	agent_expect_eq("B q0", b.q[0], 0x13);
	agent_expect_eq("B q1", b.q[1], 0x14);
	expect_counter(&b, "uc_qpn_taken", 2);
	expect_counter(&a, "uc_qpn_taken", 0);
	agent_cmd(&a.ag, "serve 0");
	ping_start(&b, 1, &a, 0, N, 0);
	ping_done(&b, N, true);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}

static void scenario_stopped(void)
{
	enum { N = 20 };
	struct peer a, b, d;
	char dead[16];

	if (!start(&d, 3, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&d.ag, "ucsync 0");
	if (!start(&a, 0, "127.0.0.1", NULL, "0x11", 0))
		return;
	agent_expect_eq("A q0", a.q[0], 0x11);
	agent_expect_eq("A q1", a.q[1], 0x12);
	agent_cmd(&a.ag, "ucsync 0");
	agent_expect_eq("A's demultiplexer is D", agent_field(&a.ag, "leader"), (unsigned long)d.pid);
	/* A cannot answer its hang-up: D's successor learns nothing from it. */
	kill(a.pid, SIGSTOP);
	agent_kill(&d.ag);
	if (!start(&b, 1, "127.0.0.1", NULL, "0x11", 0)) {
		kill(a.pid, SIGCONT);
		return;
	}
	agent_expect_eq("B q0", b.q[0], 0x13);
	agent_expect_eq("B q1", b.q[1], 0x14);
	expect_counter(&b, "uc_qpn_taken", 2);
	kill(a.pid, SIGCONT);
	snprintf(dead, sizeof(dead), "%d", (int)d.pid);
	agent_cmd(&a.ag, "ucsync %s", dead);
	agent_cmd(&b.ag, "ucsync %s", dead);
	agent_expect_eq("A and B see one demultiplexer", agent_field(&a.ag, "leader"),
			agent_field(&b.ag, "leader"));
	expect_counter(&a, "uc_qpn_taken", 0);
	agent_cmd(&a.ag, "serve 0");
	ping_start(&b, 1, &a, 0, N, 0);
	ping_done(&b, N, true);
	agent_cmd(&a.ag, "unserve 0");
	agent_cmd(&b.ag, "serve 0");
	ping_start(&a, 1, &b, 0, N, 0);
	ping_done(&a, N, true);
	expect_clean(&a);
	expect_clean(&b);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}

/* ------------------------------------------------------------------------- */
/* A local process speaking to the demultiplexer itself (scenario adopt).    */

/* A client of the demultiplexer of 127.0.0.1 through a raw connection. */
struct raw_client {
	int ctl;   /* the connection */
	int in[2]; /* its input: [0] read here, [1] handed over in HELLO */
};

/* Connect and send HELLO (@idx: the index it says it holds, or none); false on failure. */
static bool raw_hello(struct raw_client *rc, const uint32_t *idx)
{
	static uint32_t seq;
	struct roce_uc_msg m = {.magic = ROCE_UC_MAGIC,
				.version = ROCE_UC_VERSION,
				.op = ROCE_UC_HELLO,
				.seq = ++seq,
				.count = idx ? 1 : 0};
	struct pollfd p = {.events = POLLIN};
	struct sockaddr_un sa;
	socklen_t len = roce_abstract_name(&sa, ROCE_UC_NAME_FMT, "127.0.0.1");
	struct roce_uc_msg r;

	if (idx)
		m.qpn[0] = *idx;
	rc->ctl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, rc->in) ||
	    connect(rc->ctl, (struct sockaddr *)&sa, len)) {
		agent_fail("raw client: no demultiplexer to connect to (errno %d)", errno);
		return false;
	}
	p.fd = rc->ctl;
	/* The answer comes after every control message HELLO made. */
	if (!roce_send_fd(rc->ctl, &m, ROCE_UC_MSG_LEN(m.count), rc->in[1]) ||
	    poll(&p, 1, WAIT_MS) != 1 ||
	    recv(rc->ctl, &r, sizeof(r), 0) < (ssize_t)ROCE_UC_MSG_LEN(0) ||
	    r.op != ROCE_UC_REPLY || r.seq != m.seq || r.status) {
		agent_fail("raw client: HELLO not answered 0 (errno %d)", errno);
		return false;
	}
	return true;
}

/*
 * What HELLO told @rc on its input: whether to let go of its old group
 * (FRESH), the index of the socket given to it (-1: none) and the group's
 * size.  The sockets are closed: only their indices matter here.
 */
static int raw_given(struct raw_client *rc, bool *fresh, uint32_t *size)
{
	int own = -1;

	*fresh = false;
	for (;;) {
		uint64_t cb[4];
		struct roce_uc_ctl c;
		struct iovec iov = {&c, sizeof(c)};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cb,
				    .msg_controllen = sizeof(cb)};
		int fd;

		if (recvmsg(rc->in[0], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(c))
			return own;
		fd = roce_take_fd(&mh);
		if (fd >= 0)
			close(fd);
		*fresh |= c.op == ROCE_UC_CTL_FRESH;
		if (c.op == ROCE_UC_CTL_SOCK && (c.flags & ROCE_UC_CTL_OWN)) {
			own = (int)c.index;
			*size = c.size;
		}
	}
}

/* A message the demultiplexer cannot parse: it drops @rc (seen as the end of the connection). */
static bool raw_drop(struct raw_client *rc)
{
	struct pollfd p = {.fd = rc->ctl, .events = POLLIN};
	char b;
	bool gone = send(rc->ctl, "x", 1, MSG_NOSIGNAL) == 1 && poll(&p, 1, WAIT_MS) == 1 &&
		    recv(rc->ctl, &b, 1, 0) == 0;

	close(rc->ctl);
	close(rc->in[0]);
	close(rc->in[1]);
	if (!gone)
		agent_fail("raw client: not dropped after a malformed message");
	return gone;
}

static void scenario_adopt(void)
{
	enum { CYCLES = 12 };	  /* more than the 8 indices a group starts with room for */
	const uint32_t a_idx = 1; /* A's own socket: A made it first, after its index 0 */
	struct raw_client rc, nc[3];
	struct peer a, b, c;
	uint32_t size = 0;
	bool fresh;
	char dead[16];
	int idx[3], st;

	if (!steering()) {
		printf("# no group to take over when every datagram is passed on\n");
		return;
	}
	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) ||
	    !start(&b, 1, "127.0.0.1", NULL, NULL, 0) || !start(&c, 2, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	agent_cmd(&c.ag, "ucsync 0");
	agent_expect_eq("B's demultiplexer is A", agent_field(&b.ag, "leader"),
			(unsigned long)a.pid);
	agent_cmd(&b.ag, "counters"); /* B's engine has read every socket it was given to hold */
	/*
	 * C cannot come back for its socket (stopped, every thread: one still
	 * running could see A go and register again); B alone holds the group
	 * and takes it over.
	 */
	kill(c.pid, SIGSTOP);
	if (waitpid(c.pid, &st, WUNTRACED) != c.pid || !WIFSTOPPED(st)) {
		agent_fail("C did not stop");
		agent_kill(&c.ag);
		return;
	}
	agent_kill(&a.ag);
	snprintf(dead, sizeof(dead), "%d", (int)a.pid);
	agent_cmd(&b.ag, "ucsync %s", dead);
	agent_expect_eq("B is the demultiplexer", agent_field(&b.ag, "leader"),
			(unsigned long)b.pid);
	agent_kill(&c.ag);

	/* Saying it holds A's socket, a process keeps it: B took the group over. */
	if (!raw_hello(&rc, &a_idx))
		return;
	agent_expect_eq("A's index returned to whoever holds it", raw_given(&rc, &fresh, &size),
			(unsigned long)-1);
	agent_expect_eq("no new group", fresh, false);
	if (!raw_drop(&rc))
		return;
	/* Steered to C's socket, which is kept for C until the takeover ends. */
	agent_cmd(&b.ag, "send 0 %s %x 2 0 %x 0 1", c.arg.addr, c.q[0], QKEY);

	/*
	 * Dropped, the index is a spare: saying so again does not get it back
	 * (the process is told to let go and given a socket like a newcomer),
	 * and no drop spares an index twice.
	 */
	for (int k = 1; k < CYCLES; k++) {
		int got;

		if (!raw_hello(&rc, &a_idx))
			return;
		got = raw_given(&rc, &fresh, &size);
		if (!fresh || got < 0) {
			agent_fail(
			    "cycle %d: a spare index was had by saying so (fresh %d, given %d)", k,
			    fresh, got);
		}
		if (!raw_drop(&rc))
			return;
	}

	/* The takeover ends: C's socket, nobody's, is drained and what waited there counted. */
	agent_cmd(&b.ag, "waitcnt rx_no_qp 1");
	expect_counter(&b, "rx_no_qp", 1);
	/* Three newcomers: the two spares (A's and C's sockets), then a new one; one each. */
	for (int k = 0; k < 3; k++) {
		if (!raw_hello(&nc[k], NULL))
			return;
		idx[k] = raw_given(&nc[k], &fresh, &size);
		printf("newcomer %d: index %d of %u\n", k, idx[k], size);
		for (int j = 0; j < k; j++)
			if (idx[k] == idx[j])
				agent_fail("newcomers %d and %d given one socket, %d", j, k,
					   idx[k]);
		if (idx[k] <= 0)
			agent_fail("newcomer %d given no socket", k);
	}
	agent_expect_eq("group size: the spares were given first", size, 5);
	for (int k = 2; k >= 0; k--)
		raw_drop(&nc[k]);
	/* The demultiplexer is unharmed. */
	agent_cmd(&b.ag, "ucsync 0");
	expect_clean(&b);
	agent_finish(&b.ag);
}

static void scenario_netns(char **argv)
{
	enum { N = 200 };
	struct peer a1, a2, b1, b2;

	if (!start(&a1, 0, argv[4], argv[2], NULL, 0) ||
	    !start(&b1, 1, argv[5], argv[3], NULL, 0) ||
	    !start(&a2, 2, argv[4], argv[2], NULL, 0) || !start(&b2, 3, argv[5], argv[3], NULL, 0))
		return;
	agent_cmd(&a2.ag, "ucsync 0");
	agent_expect_eq("A2's demultiplexer is A1", agent_field(&a2.ag, "leader"),
			(unsigned long)a1.pid);
	agent_cmd(&b2.ag, "ucsync 0");
	agent_expect_eq("B2's demultiplexer is B1", agent_field(&b2.ag, "leader"),
			(unsigned long)b1.pid);
	agent_cmd(&b2.ag, "serve 1");
	agent_cmd(&a1.ag, "serve 1");
	ping_start(&a2, 0, &b2, 1, N, 0);
	ping_start(&b1, 0, &a1, 1, N, 0);
	ping_done(&a2, N, true);
	ping_done(&b1, N, true);
	struct peer *all[] = {&a1, &b1, &a2, &b2};

	for (int i = 0; i < 4; i++) {
		expect_clean(all[i]);
		expect_counter(all[i], "rx_delivered", N);
		expect_counter(all[i], "rx_no_qp", 0);
		/* Each host's demultiplexer steers (or passes on) what arrives there: 2N. */
		expect_counter(all[i], "uc_forwarded", i < 2 && !steering() ? 2 * N : 0);
	}
	for (int i = 3; i >= 0; i--)
		agent_finish(&all[i]->ag);
}

/* ------------------------------------------------------------------------- */
/* rxe's packets, replayed.                                                  */

enum { REPLAY_MAX = 8, FRAME_MAX = 2048 };

struct frame {
	uint8_t ip[FRAME_MAX]; /* from the IPv4 header on */
	size_t len;
};

/* The first @max RoCEv2 IPv4 frames of a pcap (Ethernet). */
static int pcap_roce(const char *path, struct frame *f, int max)
{
	static uint8_t buf[1 << 20];
	FILE *fp = fopen(path, "rb");
	size_t n, pos = 24;
	int k = 0;

	if (!fp)
		return -1;
	n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	if (n < 24 || (buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24) != 0xa1b2c3d4)
		return -1;
	while (pos + 16 <= n && k < max) {
		size_t cap = buf[pos + 8] | buf[pos + 9] << 8 | buf[pos + 10] << 16;
		const uint8_t *fr = buf + pos + 16, *ip = fr + 14;

		if (pos + 16 + cap > n)
			break;
		pos += 16 + cap;
		if (cap < 14 + 20 + 8 + 20 || cap - 14 > FRAME_MAX || fr[12] != 0x08 ||
		    fr[13] != 0 || ip[0] != 0x45 || ip[9] != 17 || (ip[22] << 8 | ip[23]) != 4791)
			continue;
		f[k].len = (size_t)(ip[2] << 8 | ip[3]);
		if (f[k].len > cap - 14)
			continue;
		memcpy(f[k].ip, ip, f[k].len);
		k++;
	}
	return k;
}

/* The IPv4 header checksum, computed here independently of src/wire. */
static void ip_csum(uint8_t *ip)
{
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* Readdress a captured rxe packet: destination @dst, DestQP @dqpn, checksum, ICRC. */
static void readdress(struct frame *f, struct in_addr dst, uint32_t dqpn)
{
	uint8_t *ip = f->ip, *udp = ip + 20, *bth = udp + 8;
	size_t udp_len = f->len - 28;
	struct umc_ip_ctx c = {
	    .family = 4,
	    .sport = (uint16_t)(udp[0] << 8 | udp[1]),
	    .dport = 4791,
	    .ip_id = (uint16_t)(ip[4] << 8 | ip[5]),
	    .df = (ip[6] & 0x40) != 0,
	    .tclass = ip[1],
	    .hop_limit = ip[8],
	};

	memcpy(ip + 16, &dst, 4);
	ip_csum(ip);
	bth[5] = (uint8_t)(dqpn >> 16);
	bth[6] = (uint8_t)(dqpn >> 8);
	bth[7] = (uint8_t)dqpn;
	memcpy(c.src, ip + 12, 4);
	memcpy(c.dst, ip + 16, 4);
	umc_icrc_put(bth + udp_len - 4, umc_icrc_compute(&c, bth, udp_len));
}

struct rxe_arg {
	const char *netns, *host, *me, *pcap;
};

/*
 * The "rxe host": replay Q K (send K readdressed rxe packets to DestQP Q),
 * expect K (what packet K must look like at the receiver), replies K QPN
 * (check the K replies rxe would receive).
 */
static int rxe_main(void *arg, int cmd)
{
	const struct rxe_arg *ra = arg;
	static struct frame fr[REPLAY_MAX];
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(4791)};
	struct sockaddr_in host = {.sin_family = AF_INET};
	char path[256], line[256];
	int nfr, raw, udp, nsfd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ra->netns);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET)) {
		agent_reply("fail setns %s", ra->netns);
		return 1;
	}
	nfr = pcap_roce(ra->pcap, fr, REPLAY_MAX);
	inet_pton(AF_INET, ra->me, &me.sin_addr);
	inet_pton(AF_INET, ra->host, &host.sin_addr);
	raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (nfr != REPLAY_MAX || raw < 0 || udp < 0 ||
	    bind(udp, (struct sockaddr *)&me, sizeof(me))) {
		agent_reply("fail setup: %d frames, raw %d, udp %d (errno %d)", nfr, raw, udp,
			    errno);
		return 1;
	}
	agent_reply("ok ready frames=%d", nfr);
	while (t_read_line(cmd, line, sizeof(line), 2 * AGENT_CMD_MS)) {
		unsigned q, k;

		if (sscanf(line, "replay %x %u", &q, &k) == 2 && k <= (unsigned)nfr) {
			unsigned sent = 0;

			for (unsigned i = 0; i < k; i++) {
				readdress(&fr[i], host.sin_addr, q);
				sent +=
				    sendto(raw, fr[i].ip, fr[i].len, 0, (struct sockaddr *)&host,
					   sizeof(host)) == (ssize_t)fr[i].len;
			}
			agent_reply(sent == k ? "ok replayed=%u" : "fail replayed=%u", sent);
		} else if (sscanf(line, "expect %u", &k) == 1 && k < (unsigned)nfr) {
			const uint8_t *ip = fr[k].ip, *bth = ip + 28;
			size_t udp_len = fr[k].len - 28, off = 12 + 8 + (bth[0] == 0x65 ? 4 : 0);
			size_t plen = udp_len - off - ((bth[1] >> 4) & 3) - 4;
			char hex[81] = "";

			/* 20 zero bytes, then the IPv4 header exactly as sent (rocev2-wire 1.10).
			 */
			for (int i = 0; i < 40; i++)
				snprintf(hex + 2 * i, 3, "%02x", i < 20 ? 0 : ip[i - 20]);
			agent_reply("ok len=%zu src_qp=0x%x imm=0x%x sum=0x%x grh=%s", 40 + plen,
				    bth[17] << 16 | bth[18] << 8 | bth[19],
				    bth[0] == 0x65 ? (uint32_t)bth[20] << 24 | bth[21] << 16 |
							 bth[22] << 8 | bth[23]
						   : 0,
				    fnv(bth + off, plen), hex);
		} else if (sscanf(line, "replies %u %x", &k, &q) == 2 && k <= (unsigned)nfr) {
			unsigned good = 0;
			char why[160] = "";

			for (unsigned i = 0; i < k; i++) {
				uint8_t b[FRAME_MAX];
				struct sockaddr_in from;
				socklen_t fl = sizeof(from);
				struct pollfd p = {.fd = udp, .events = POLLIN};
				ssize_t n = poll(&p, 1, WAIT_MS) == 1
						? recvfrom(udp, b, sizeof(b), 0,
							   (struct sockaddr *)&from, &fl)
						: -1;
				const uint8_t *req = fr[i].ip + 28;
				size_t roff = 12 + 8 + (req[0] == 0x65 ? 4 : 0);
				size_t rplen = fr[i].len - 28 - roff - ((req[1] >> 4) & 3) - 4;
				struct umc_ip_ctx c = {.family = 4, .dport = 4791, .df = true};
				struct umc_ud_hdr h;
				size_t off, plen;

				if (n < 0) {
					snprintf(why, sizeof(why), "reply %u not received", i);
					break;
				}
				/* What rxe checks: ICRC over ID 0 + DF, the addresses, the ports.
				 */
				memcpy(c.src, &from.sin_addr, 4);
				memcpy(c.dst, &me.sin_addr, 4);
				c.sport = ntohs(from.sin_port);
				if (umc_ud_decode(b, (size_t)n, &h, &off, &plen) ||
				    umc_icrc_compute(&c, b, (size_t)n) != umc_icrc_get(b + n - 4) ||
				    h.bth.opcode != UMC_OP_UD_SEND_ONLY || h.bth.dest_qpn != 0x11 ||
				    h.bth.pkey != 0xffff || h.deth.src_qpn != q ||
				    h.deth.qkey != 0x01234567 || c.sport != umc_roce_sport(q) ||
				    from.sin_addr.s_addr != host.sin_addr.s_addr || plen != rplen ||
				    memcmp(b + off, req + roff, plen)) {
					snprintf(why, sizeof(why),
						 "reply %u: opcode 0x%x destqp 0x%x srcqp 0x%x "
						 "qkey 0x%x "
						 "sport %u len %zu",
						 i, h.bth.opcode, h.bth.dest_qpn, h.deth.src_qpn,
						 h.deth.qkey, c.sport, plen);
					break;
				}
				good++;
			}
			agent_reply(good == k ? "ok replies=%u" : "fail replies=%u %s", good, why);
		} else if (strcmp(line, "quit") == 0) {
			agent_reply("ok bye");
			return 0;
		} else {
			agent_reply("fail unknown command '%s'", line);
		}
	}
	return 2;
}

/* Drop @key=... from a reply line: what remains must match between two agents. */
static const char *after_ok(const struct agent *a)
{
	return strncmp(a->last, "ok ", 3) == 0 ? a->last + 3 : a->last;
}

static void strip_flags(char *s)
{
	char *p = strstr(s, " flags=");

	if (p) {
		char *e = strchr(p + 1, ' ');

		memmove(p, e ? e : p + strlen(p), strlen(e ? e : p + strlen(p)) + 1);
	}
}

static void scenario_rxe(char **argv)
{
	struct rxe_arg ra = {argv[3], argv[4], argv[5], argv[6]};
	struct agent rxe;
	struct peer h;

	if (!start(&h, 0, argv[4], argv[2], NULL, 0x01234567))
		return;
	agent_spawn(&rxe, "rxe", rxe_main, &ra);
	if (!agent_ready(&rxe))
		return;
	agent_cmd(&h.ag, "ucsync 0");
	agent_cmd(&h.ag, "serve 0 raw");
	agent_cmd(&rxe, "replay %x %d", h.q[0], REPLAY_MAX);
	/* H answers each with an AH from its completion: rxe gets REPLAY_MAX replies. */
	agent_cmd(&rxe, "replies %d %x", REPLAY_MAX, h.q[0]);
	for (int k = 0; k < REPLAY_MAX; k++) {
		char want[512];

		if (!agent_cmd(&rxe, "expect %d", k))
			break;
		snprintf(want, sizeof(want), "%s", after_ok(&rxe));
		if (!agent_cmd(&h.ag, "grh 0 %d", k))
			break;
		agent_expect_eq("IBV_WC_GRH|IBV_WC_WITH_IMM", agent_field(&h.ag, "flags"),
				IBV_WC_GRH | IBV_WC_WITH_IMM);
		strip_flags(h.ag.last);
		if (strcmp(after_ok(&h.ag), want)) {
			agent_fail("reception %d differs from rxe's packet:\n  got  %s\n  want %s", k,
				   after_ok(&h.ag), want);
		}
	}
	/* rxe's IDs are not 0: every one was solved from the ICRC, none was refused. */
	expect_counter(&h, "rx_icrc_id_solved", REPLAY_MAX);
	expect_counter(&h, "rx_delivered", REPLAY_MAX);
	expect_counter(&h, "uc_forwarded", steering() ? 0 : REPLAY_MAX);
	expect_clean(&h);
	agent_finish(&rxe);
	agent_finish(&h.ag);
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The demultiplexer is per namespace: the one-host scenarios get their own. */
	if (argc == 2 && !t_isolate_netns())
		printf("# no namespace of our own: other umcast processes may take part\n");
	if (argc == 2 && strcmp(argv[1], "pingpong") == 0)
		scenario_pingpong();
	else if (argc == 2 && strcmp(argv[1], "pingpong6") == 0)
		scenario_pingpong6();
	else if (argc == 2 && strcmp(argv[1], "qkey") == 0)
		scenario_qkey();
	else if (argc == 2 && strcmp(argv[1], "noqp") == 0)
		scenario_noqp();
	else if (argc == 2 && strcmp(argv[1], "kill") == 0)
		scenario_kill();
	else if (argc == 2 && strcmp(argv[1], "conflict") == 0)
		scenario_conflict();
	else if (argc == 2 && strcmp(argv[1], "stopped") == 0)
		scenario_stopped();
	else if (argc == 2 && strcmp(argv[1], "adopt") == 0)
		scenario_adopt();
	else if (argc == 6 && strcmp(argv[1], "netns") == 0)
		scenario_netns(argv);
	else if (argc == 7 && strcmp(argv[1], "rxe") == 0)
		scenario_rxe(argv);
	else {
		fprintf(stderr,
			"usage: uc_procs pingpong|pingpong6|qkey|noqp|kill|conflict|stopped|adopt\n"
			"       uc_procs netns NSA NSB ADDRA ADDRB\n"
			"       uc_procs rxe NSHOST NSRXE ADDRHOST ADDRRXE PCAP\n");
		return 2;
	}
	printf("%s: %s (%d failure(s))\n", agent_failures ? "FAIL" : "PASS", argv[1],
	       agent_failures);
	return agent_failures ? 1 : 0;
}
