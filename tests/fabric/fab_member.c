// SPDX-License-Identifier: MIT
/*
 * fab_member - one application process on a host of the test fabric,
 * written against librdmacm's and libibverbs' API only (linked with the
 * shared libumcast), driven by one-line commands on stdin with one reply
 * line each on stdout, so that a test orders joins, leaves and sends of
 * several processes on several hosts exactly.
 *
 *   fab_member BIND GROUP [IDS]
 *
 * BIND selects the device (rdma_bind_addr), GROUP is an IPv4 or IPv6
 * group, IDS (default 1) the number of rdma_cm_ids, each with a UD QP of
 * its own on one CQ, all bound to BIND.  Every QP has DEPTH receives
 * posted from the start, reposted as they complete.  Commands (I: the id,
 * default 0):
 *
 *   join full|sendonly [I]   rdma_join_multicast_ex; waits for the event:
 *                            "joined DGID mlid 0xM" or "error EVENT STATUS"
 *   leave [I]                rdma_leave_multicast: "left" or "error ..."
 *   send FIRST N SIZE HOP RATE [I]
 *                            N messages numbered FIRST.. of SIZE bytes to
 *                            the group through the join event's AH (its
 *                            hop limit replaced by HOP unless HOP is 0),
 *                            RATE messages per second (0: as fast as the
 *                            send queue goes), each completion checked:
 *                            "sent N" or "error ..."
 *   expect N MS [I]          wait until id I has received N distinct
 *                            messages, or MS ms passed without a new one:
 *                            "got G dup D bad B src ADDR ttl T" (the
 *                            counts since the start; ADDR and T, the IP
 *                            source and TTL/hop limit from the GRH area
 *                            of the last message, "-" before any)
 *   event MS                 the next CM event not yet reported (after the
 *                            joins): "event NAME ID STATUS" or "event none"
 *   quit                     destroy everything: "bye", exit status 0 when
 *                            no command failed and no message was bad
 *
 * Once set up it says "ready qpn 0xQPN gid GID" (GID index 0 of its port).
 *
 * A message is "FABM", its number, its length and the sender's QPN (each
 * 32 bits, big-endian), then byte i = (number * 7 + i) mod 256; it is a
 * SEND with immediate data, the sender's QPN.  A receiver checks the
 * completion (status, opcode, IBV_WC_GRH, immediate data = src_qp), the
 * length, every byte, and counts each message number once (a second copy
 * is a duplicate).  Every wait is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

enum {
	GRH_LEN = 40,
	HDR_LEN = 16,	       /* magic, number, length, QPN */
	MAX_SIZE = 4096,
	DEPTH = 2048,	       /* receives posted per QP */
	SQ_DEPTH = 256,
	MAX_IDS = 4,
	MAX_SEQ = 1u << 20,    /* message numbers a receiver tracks */
	JOIN_MS = 15000,       /* an SA join: 3 tries of 3 s, and margin */
	SEND_STALL_MS = 5000,  /* a send completion must come within this */
	MAX_EVENTS = 64,
};

struct member {
	struct rdma_cm_id *id;
	struct ibv_mr *rmr;
	uint8_t *rbuf;	       /* DEPTH slots of GRH_LEN + MAX_SIZE */
	struct ibv_ah *ah;
	struct ibv_ah_attr ah_attr;
	uint32_t rqpn, rqkey;
	bool joined;
	uint8_t *seen;	       /* MAX_SEQ bits */
	unsigned long got, dup, bad;
	char src[INET6_ADDRSTRLEN];
	int ttl;
};

struct cm_ev {
	enum rdma_cm_event_type type;
	int status, idx;
};

static struct {
	struct rdma_event_channel *ch;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *smr;
	uint8_t *sbuf;	       /* SQ_DEPTH slots of MAX_SIZE */
	struct member m[MAX_IDS];
	int nids;
	struct sockaddr_storage group;
	struct cm_ev ev[MAX_EVENTS]; /* events not yet reported */
	int nev;
	int sends_out;	       /* send completions outstanding */
	int failures;
} g;

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void reply(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void die(const char *what)
{
	reply("error %s: %s", what, strerror(errno));
	exit(1);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint8_t pattern(uint32_t seq, unsigned i)
{
	return (uint8_t)(seq * 7u + i);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static int post_recv(struct member *m, unsigned slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(m->rbuf + (size_t)slot * (GRH_LEN + MAX_SIZE)),
		.length = GRH_LEN + MAX_SIZE,
		.lkey = m->rmr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(m->id->qp, &wr, &bad);
}

/* The IP source and TTL/hop limit of a GRH area: IPv4 header at 20, else IPv6. */
static void grh_source(struct member *m, const uint8_t *grh)
{
	if ((grh[20] >> 4) == 4 && (grh[0] >> 4) != 6) {
		inet_ntop(AF_INET, grh + 32, m->src, sizeof(m->src));
		m->ttl = grh[28];
	} else {
		inet_ntop(AF_INET6, grh + 8, m->src, sizeof(m->src));
		m->ttl = grh[7];
	}
}

static void check_recv(struct member *m, const struct ibv_wc *wc)
{
	const uint8_t *grh = m->rbuf + wc->wr_id * (GRH_LEN + MAX_SIZE), *p = grh + GRH_LEN;
	uint32_t len = wc->byte_len - GRH_LEN, seq;

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV ||
	    !(wc->wc_flags & IBV_WC_GRH) || !(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    ntohl(wc->imm_data) != wc->src_qp || wc->byte_len < GRH_LEN + HDR_LEN ||
	    memcmp(p, "FABM", 4) || get32(p + 8) != len || get32(p + 12) != wc->src_qp) {
		m->bad++;
		return;
	}
	seq = get32(p + 4);
	for (uint32_t i = HDR_LEN; i < len; i++)
		if (p[i] != pattern(seq, i)) {
			m->bad++;
			return;
		}
	grh_source(m, grh);
	if (seq >= MAX_SEQ) {
		m->bad++;
	} else if (m->seen[seq / 8] & (1u << (seq % 8))) {
		m->dup++;
	} else {
		m->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
		m->got++;
	}
}

static struct member *member_of_qpn(uint32_t qpn)
{
	for (int i = 0; i < g.nids; i++)
		if (g.m[i].id->qp->qp_num == qpn)
			return &g.m[i];
	return NULL;
}

/* Take every completion: check receives and post them again, count sends. */
static int drain_cq(void)
{
	struct ibv_wc wc[64];
	int n, total = 0;

	while ((n = ibv_poll_cq(g.cq, 64, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct member *m = member_of_qpn(wc[i].qp_num);

			if (wc[i].opcode == IBV_WC_SEND || !m) {
				g.sends_out--;
				if (wc[i].status != IBV_WC_SUCCESS)
					g.failures++;
				continue;
			}
			check_recv(m, &wc[i]);
			if (post_recv(m, (unsigned)wc[i].wr_id))
				g.failures++;
		}
		total += n;
	}
	if (n < 0)
		g.failures++;
	return total;
}

static void take_cm_event(void)
{
	struct rdma_cm_event *e;

	if (rdma_get_cm_event(g.ch, &e))
		die("rdma_get_cm_event");
	if (g.nev < MAX_EVENTS) {
		struct member *m = e->id->context;

		g.ev[g.nev++] = (struct cm_ev){e->event, e->status, (int)(m - g.m)};
		if (e->event == RDMA_CM_EVENT_MULTICAST_JOIN && !e->status) {
			m->ah_attr = e->param.ud.ah_attr;
			m->rqpn = e->param.ud.qp_num;
			m->rqkey = e->param.ud.qkey;
		}
	}
	rdma_ack_cm_event(e);
}

/*
 * Wait up to @ms (-1: no limit) for a completion or a CM event, take them,
 * and arm the CQ again.  Returns the number of completions taken; with
 * @cmd, also wakes for a command line on stdin and then returns whether
 * one is waiting.
 */
static int pump(int ms, bool cmd)
{
	struct pollfd pfd[3] = {{.fd = g.cc->fd, .events = POLLIN},
				{.fd = g.ch->fd, .events = POLLIN},
				{.fd = 0, .events = POLLIN}};
	int n = drain_cq();
	struct ibv_cq *cq;
	void *ctx;

	if (n && !cmd)
		return n;
	if (ibv_req_notify_cq(g.cq, 0))
		die("ibv_req_notify_cq");
	n = drain_cq();
	if (n && !cmd)
		return n;
	if (poll(pfd, cmd ? 3 : 2, n ? 0 : ms) < 0 && errno != EINTR)
		die("poll");
	if (pfd[0].revents & POLLIN)
		while (ibv_get_cq_event(g.cc, &cq, &ctx) == 0)
			ibv_ack_cq_events(cq, 1);
	if (pfd[1].revents & POLLIN)
		take_cm_event();
	n += drain_cq();
	return cmd ? (pfd[2].revents & (POLLIN | POLLHUP)) != 0 : n;
}

/* The first unreported event of id @idx (any id if -1), removed; or NULL. */
static bool pop_event(int idx, struct cm_ev *out)
{
	for (int i = 0; i < g.nev; i++) {
		if (idx >= 0 && g.ev[i].idx != idx)
			continue;
		*out = g.ev[i];
		memmove(&g.ev[i], &g.ev[i + 1], (size_t)(g.nev - i - 1) * sizeof(g.ev[0]));
		g.nev--;
		return true;
	}
	return false;
}

static bool wait_event(int idx, int ms, struct cm_ev *out)
{
	long long end = now_ms() + ms;

	while (!pop_event(idx, out)) {
		long long left = end - now_ms();

		if (left <= 0)
			return false;
		pump((int)left, false);
	}
	return true;
}

static void cmd_join(struct member *m, const char *how)
{
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = strcmp(how, "sendonly") ? RDMA_MC_JOIN_FLAG_FULLMEMBER
						      : RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
		.addr = (struct sockaddr *)&g.group,
	};
	char dgid[INET6_ADDRSTRLEN];
	struct cm_ev e;

	if (rdma_join_multicast_ex(m->id, &ja, NULL)) {
		g.failures++;
		reply("error rdma_join_multicast_ex %s", strerror(errno));
		return;
	}
	if (!wait_event((int)(m - g.m), JOIN_MS, &e)) {
		g.failures++;
		reply("error no join event within %d ms", JOIN_MS);
		return;
	}
	if (e.type != RDMA_CM_EVENT_MULTICAST_JOIN || e.status) {
		g.failures++;
		reply("error %s %d", rdma_event_str(e.type), e.status);
		return;
	}
	m->joined = true;
	inet_ntop(AF_INET6, m->ah_attr.grh.dgid.raw, dgid, sizeof(dgid));
	reply("joined %s mlid 0x%x", dgid, m->ah_attr.dlid);
}

static void cmd_leave(struct member *m)
{
	if (rdma_leave_multicast(m->id, (struct sockaddr *)&g.group)) {
		g.failures++;
		reply("error rdma_leave_multicast %s", strerror(errno));
		return;
	}
	m->joined = false;
	reply("left");
}

static int post_send(struct member *m, uint32_t seq, unsigned size, unsigned slot)
{
	uint8_t *p = g.sbuf + (size_t)slot * MAX_SIZE;
	uint32_t qpn = m->id->qp->qp_num;
	struct ibv_sge sge = {.addr = (uintptr_t)p, .length = size, .lkey = g.smr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = slot,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(qpn),
		.wr.ud = {.ah = m->ah, .remote_qpn = m->rqpn, .remote_qkey = m->rqkey},
	}, *bad;

	memcpy(p, "FABM", 4);
	put32(p + 4, seq);
	put32(p + 8, size);
	put32(p + 12, qpn);
	for (unsigned i = HDR_LEN; i < size; i++)
		p[i] = pattern(seq, i);
	return ibv_post_send(m->id->qp, &wr, &bad);
}

static void cmd_send(struct member *m, unsigned first, unsigned n, unsigned size, unsigned hop,
		     unsigned rate)
{
	struct ibv_ah_attr attr = m->ah_attr;
	long long start = now_ms(), last = start;
	unsigned sent = 0, slot = 0;

	if (!m->joined || size < HDR_LEN || size > MAX_SIZE) {
		g.failures++;
		reply("error not joined, or size not in %d..%d", HDR_LEN, MAX_SIZE);
		return;
	}
	if (hop)
		attr.grh.hop_limit = (uint8_t)hop;
	if (m->ah)
		ibv_destroy_ah(m->ah);
	m->ah = ibv_create_ah(g.pd, &attr);
	if (!m->ah) {
		g.failures++;
		reply("error ibv_create_ah %s", strerror(errno));
		return;
	}
	while (sent < n || g.sends_out > 0) {
		/* Messages due by now at @rate (all of them when unpaced). */
		unsigned due = rate ? (unsigned)((now_ms() - start) * rate / 1000 + 1) : n;

		while (sent < n && sent < due && g.sends_out < SQ_DEPTH) {
			if (post_send(m, first + sent, size, slot)) {
				g.failures++;
				reply("error ibv_post_send %u", sent);
				return;
			}
			slot = (slot + 1) % SQ_DEPTH;
			sent++;
			g.sends_out++;
		}
		if (pump(sent < n && g.sends_out < SQ_DEPTH ? 1 : 100, false) > 0)
			last = now_ms();
		else if (now_ms() - last > SEND_STALL_MS) {
			g.failures++;
			reply("error %d sends not completed within %d ms", g.sends_out,
			      SEND_STALL_MS);
			return;
		}
	}
	reply("sent %u", sent);
}

static void cmd_expect(struct member *m, unsigned long n, int ms)
{
	long long last = now_ms();

	while (m->got < n && now_ms() - last < ms) {
		unsigned long got = m->got;

		pump((int)(ms - (now_ms() - last)), false);
		if (m->got != got)
			last = now_ms();
	}
	reply("got %lu dup %lu bad %lu src %s ttl %d", m->got, m->dup, m->bad,
	      m->src[0] ? m->src : "-", m->ttl);
}

static void cmd_event(int ms)
{
	struct cm_ev e;

	if (wait_event(-1, ms, &e))
		reply("event %s %d %d", rdma_event_str(e.type), e.idx, e.status);
	else
		reply("event none");
}

static void setup(const char *bind_s, const char *group_s)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *src, *grp;
	size_t rlen = (size_t)DEPTH * (GRH_LEN + MAX_SIZE);

	if (getaddrinfo(bind_s, NULL, &hints, &src) || getaddrinfo(group_s, NULL, &hints, &grp)) {
		reply("error bad address");
		exit(2);
	}
	memcpy(&g.group, grp->ai_addr, grp->ai_addrlen);
	g.ch = rdma_create_event_channel();
	if (!g.ch)
		die("rdma_create_event_channel");
	for (int i = 0; i < g.nids; i++) {
		struct member *m = &g.m[i];

		if (rdma_create_id(g.ch, &m->id, m, RDMA_PS_UDP))
			die("rdma_create_id");
		if (rdma_bind_addr(m->id, src->ai_addr))
			die("rdma_bind_addr");
		if (!g.verbs) {
			g.verbs = m->id->verbs;
			g.pd = ibv_alloc_pd(g.verbs);
			g.cc = ibv_create_comp_channel(g.verbs);
			if (!g.pd || !g.cc)
				die("ibv_alloc_pd/ibv_create_comp_channel");
			/* Non-blocking: take every queued CQ event, then EAGAIN. */
			if (fcntl(g.cc->fd, F_SETFL, fcntl(g.cc->fd, F_GETFL) | O_NONBLOCK))
				die("fcntl");
			g.cq = ibv_create_cq(g.verbs, MAX_IDS * DEPTH + SQ_DEPTH, NULL, g.cc, 0);
			g.sbuf = calloc(SQ_DEPTH, MAX_SIZE);
			if (!g.cq || !g.sbuf)
				die("ibv_create_cq");
			g.smr = ibv_reg_mr(g.pd, g.sbuf, (size_t)SQ_DEPTH * MAX_SIZE, 0);
			if (!g.smr)
				die("ibv_reg_mr");
		}
		struct ibv_qp_init_attr qa = {
			.send_cq = g.cq,
			.recv_cq = g.cq,
			.cap = {.max_send_wr = SQ_DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1,
				.max_recv_sge = 1},
			.qp_type = IBV_QPT_UD,
		};

		if (rdma_create_qp(m->id, g.pd, &qa))
			die("rdma_create_qp");
		m->rbuf = malloc(rlen);
		m->seen = calloc(MAX_SEQ / 8, 1);
		if (!m->rbuf || !m->seen)
			die("malloc");
		m->rmr = ibv_reg_mr(g.pd, m->rbuf, rlen, IBV_ACCESS_LOCAL_WRITE);
		if (!m->rmr)
			die("ibv_reg_mr");
		for (unsigned s = 0; s < DEPTH; s++)
			if (post_recv(m, s))
				die("ibv_post_recv");
	}
	freeaddrinfo(src);
	freeaddrinfo(grp);
}

static void teardown(void)
{
	for (int i = 0; i < g.nids; i++) {
		struct member *m = &g.m[i];

		if (m->joined && rdma_leave_multicast(m->id, (struct sockaddr *)&g.group))
			g.failures++;
		if (m->ah)
			ibv_destroy_ah(m->ah);
		rdma_destroy_qp(m->id);
		ibv_dereg_mr(m->rmr);
		rdma_destroy_id(m->id);
		free(m->rbuf);
		free(m->seen);
	}
	ibv_dereg_mr(g.smr);
	ibv_destroy_cq(g.cq);
	ibv_destroy_comp_channel(g.cc);
	ibv_dealloc_pd(g.pd);
	free(g.sbuf);
	rdma_destroy_event_channel(g.ch);
}

/* The id named by word @w (none: id 0), or NULL. */
static struct member *member_arg(const char *w)
{
	int i = w ? atoi(w) : 0;

	return i >= 0 && i < g.nids ? &g.m[i] : NULL;
}

/* One command line; false on "quit". */
static bool command(char *line)
{
	char *w[8] = {0}, *save = NULL;
	struct member *m;
	int nw = 0;

	for (char *t = strtok_r(line, " \t\n", &save); t && nw < 8; t = strtok_r(NULL, " \t\n", &save))
		w[nw++] = t;
	if (nw == 0)
		return true;
	if (!strcmp(w[0], "join") && nw >= 2 && nw <= 3 && (m = member_arg(w[2])))
		cmd_join(m, w[1]);
	else if (!strcmp(w[0], "leave") && nw <= 2 && (m = member_arg(w[1])))
		cmd_leave(m);
	else if (!strcmp(w[0], "send") && nw >= 6 && nw <= 7 && (m = member_arg(w[6])))
		cmd_send(m, (unsigned)atoi(w[1]), (unsigned)atoi(w[2]), (unsigned)atoi(w[3]),
			 (unsigned)atoi(w[4]), (unsigned)atoi(w[5]));
	else if (!strcmp(w[0], "expect") && nw >= 3 && nw <= 4 && (m = member_arg(w[3])))
		cmd_expect(m, strtoul(w[1], NULL, 10), atoi(w[2]));
	else if (!strcmp(w[0], "event") && nw == 2)
		cmd_event(atoi(w[1]));
	else if (!strcmp(w[0], "quit") && nw == 1)
		return false;
	else {
		g.failures++;
		reply("error unknown command: %s", w[0]);
	}
	return true;
}

int main(int argc, char **argv)
{
	char line[256];

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: fab_member BIND GROUP [IDS]\n");
		return 2;
	}
	g.nids = argc > 3 ? atoi(argv[3]) : 1;
	if (g.nids < 1 || g.nids > MAX_IDS) {
		fprintf(stderr, "fab_member: IDS must be 1..%d\n", MAX_IDS);
		return 2;
	}
	setvbuf(stdin, NULL, _IONBF, 0); /* poll(2) on fd 0 sees every line */
	setup(argv[1], argv[2]);
	union ibv_gid gid;
	char gs[INET6_ADDRSTRLEN] = "-";

	if (!ibv_query_gid(g.verbs, g.m[0].id->port_num, 0, &gid))
		inet_ntop(AF_INET6, gid.raw, gs, sizeof(gs));
	reply("ready qpn 0x%x gid %s", g.m[0].id->qp->qp_num, gs);
	for (;;) {
		/* Receive while no command is waiting. */
		if (!pump(-1, true))
			continue;
		if (!fgets(line, sizeof(line), stdin) || !command(line))
			break;
	}
	teardown();
	for (int i = 0; i < g.nids; i++)
		g.failures += g.m[i].bad != 0;
	reply("bye");
	return g.failures ? 1 : 0;
}
