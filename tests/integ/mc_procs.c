// SPDX-License-Identifier: MIT
/*
 * mc_procs - multi-process multicast through the CM on loopback.
 *
 *   mc_procs fanout     two full-member receiver processes (one with one
 *                       cm_id, one with two) and a send-only sender process
 *                       that also posts receives: every receiver QP gets
 *                       every message, in order, with the right bytes; the
 *                       sender receives nothing and has no group socket.
 *   mc_procs leave      after rdma_leave_multicast a receiver gets nothing
 *                       more (one leaving process; one id of a two-id
 *                       process) while the remaining member still gets
 *                       everything.
 *   mc_procs live       the same-host path's flow control: a reader that
 *                       reads slower than its sender but keeps reading
 *                       loses nothing.
 *   mc_procs stopped    ... and one stopped (SIGSTOP) loses what its
 *                       sender overwrites, counted, and holds it up once.
 *   mc_procs selfloop   full-member senders: the sender's own attached QP
 *                       receives its own messages (no sender exclusion,
 *                       rxe_recv.c rxe_rcv_mcast_pkt(); docs/design.md,
 *                       "Observed on rxe" 7) unless the
 *                       QP was created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB
 *                       through rdma_create_qp_ex; then it gets everybody
 *                       else's but none of its own.
 *
 * The orchestrator (this process) drives one agent per simulated host
 * process through the harness of agent.h (pipes, one-line commands and
 * replies, no sleeps, a deadline on every wait).  The group is 239.251.P1.P2 (P = the
 * orchestrator's pid), so scenarios and concurrent suite runs never share
 * a group.
 *
 * An agent does what mckey does: rdma_create_id(RDMA_PS_UDP),
 * rdma_resolve_addr(127.0.0.1 -> group), rdma_create_qp, post receives,
 * rdma_join_multicast_ex (FULLMEMBER or SENDONLY_FULLMEMBER), and checks
 * the MULTICAST_JOIN event's fields (the kernel's cma_make_mc_event();
 * docs/design.md, "Observed on rxe" 2).  The sender uses ibv_create_ah on the event's ah_attr
 * and the event's qp_num/qkey.
 *
 * Message seq (0, 1, ...): length 8 + seq*53 % 1017 bytes, bytes 0..3 the
 * seq, 4..7 the length (big-endian), then a pattern of seq; odd seqs are
 * SEND_WITH_IMM with imm = htonl(seq ^ 0xa5a5a5a5).  A receiver checks
 * status, byte_len = 40 + len, IBV_WC_GRH, the immediate, src_qp, the
 * GRH's IPv4 source and destination, every payload byte, and that seqs
 * arrive in order without gaps or duplicates.
 *
 * Exit status 0 when every check passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "agent.h"
#include "link/shm/shm.h"      /* UMC_SHM_GRACE_MS */
#include "verbs/verbs_int.h" /* counters and groups of the agent's device */

enum {
	MAX_IDS = 2,
	NRECV = 512,
	SLOT = 2048,
	MAX_LEN = 8 + 1016,
	WAIT_MS = 10000, /* bound on any wait for datagrams */
};

/* Payload lengths run over 8 .. 8 + len_mod - 1 (set before the agents fork). */
static uint32_t len_mod = 1017;

static uint32_t msg_len(uint32_t seq)
{
	return 8 + (seq * 53u) % len_mod;
}

static uint8_t msg_byte(uint32_t seq, size_t j)
{
	return (uint8_t)(seq * 29u + j * 13u + 5u);
}

static void msg_fill(uint8_t *p, uint32_t seq)
{
	uint32_t len = msg_len(seq), be;

	be = htonl(seq);
	memcpy(p, &be, 4);
	be = htonl(len);
	memcpy(p + 4, &be, 4);
	for (size_t j = 8; j < len; j++)
		p[j] = msg_byte(seq, j);
}

/* ------------------------------------------------------------------------- */
/* Agent: one simulated application process.                                 */

struct node {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_ah *ah;
	uint32_t rqpn, rqkey;
	uint32_t next_seq; /* next seq this QP must receive */
	unsigned received;
	bool joined;
};

static struct {
	struct rdma_event_channel *ch;
	struct node n[MAX_IDS];
	int nids;
	bool sendonly, block_self;
	struct sockaddr_in src, grp;
} ag;

/* The JOIN event's fields, as the kernel/librdmacm give them on RoCEv2. */
static const char *check_join_event(struct rdma_cm_event *ev, struct node *nd)
{
	static char why[256];
	const struct ibv_ah_attr *ah = &ev->param.ud.ah_attr;
	union ibv_gid mgid;

	memset(&mgid, 0, sizeof(mgid));
	mgid.raw[10] = mgid.raw[11] = 0xff;
	memcpy(mgid.raw + 12, &ag.grp.sin_addr, 4);
	if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN || ev->status)
		snprintf(why, sizeof(why), "event %s status %d", rdma_event_str(ev->event),
			 ev->status);
	else if (ev->id != nd->id)
		snprintf(why, sizeof(why), "event for another id");
	else if (ev->param.ud.private_data != nd)
		snprintf(why, sizeof(why), "private_data is not the join context");
	else if (ev->param.ud.qp_num != 0xffffff || ev->param.ud.qkey != 0x01234567)
		snprintf(why, sizeof(why), "qp_num 0x%x qkey 0x%x", ev->param.ud.qp_num,
			 ev->param.ud.qkey);
	else if (!ah->is_global || memcmp(&ah->grh.dgid, &mgid, 16) || ah->grh.hop_limit != 64 ||
		 ah->grh.sgid_index != 0 || ah->grh.traffic_class || ah->grh.flow_label ||
		 ah->port_num != 1 || ah->dlid || ah->sl || ah->static_rate)
		snprintf(why, sizeof(why),
			 "ah_attr: is_global %d hop %d sgid_index %d tc %d fl %u port %d dlid %d",
			 ah->is_global, ah->grh.hop_limit, ah->grh.sgid_index,
			 ah->grh.traffic_class, ah->grh.flow_label, ah->port_num, ah->dlid);
	else
		return NULL;
	return why;
}

static const char *agent_setup(void)
{
	static char why[300];
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = ag.sendonly ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
					  : RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)&ag.grp,
	};
	struct rdma_cm_event *ev;
	const char *bad;

	ag.ch = rdma_create_event_channel();
	if (!ag.ch)
		return "rdma_create_event_channel";
	for (int i = 0; i < ag.nids; i++) {
		struct node *nd = &ag.n[i];
		struct ibv_qp_init_attr qa = {
			.cap = {.max_send_wr = 64, .max_recv_wr = NRECV, .max_send_sge = 1,
				.max_recv_sge = 1},
			.qp_type = IBV_QPT_UD,
			.sq_sig_all = 1,
		};

		nd->next_seq = 0;
		if (rdma_create_id(ag.ch, &nd->id, nd, RDMA_PS_UDP))
			return "rdma_create_id";
		if (rdma_resolve_addr(nd->id, (struct sockaddr *)&ag.src,
				      (struct sockaddr *)&ag.grp, 2000))
			return "rdma_resolve_addr";
		ev = agent_cm_event(ag.ch, 5000);
		if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED || ev->id != nd->id)
			return "no ADDR_RESOLVED";
		rdma_ack_cm_event(ev);
		if (ag.block_self) {
			struct ibv_qp_init_attr_ex qx = {
				.cap = qa.cap,
				.qp_type = IBV_QPT_UD,
				.sq_sig_all = 1,
				.comp_mask = IBV_QP_INIT_ATTR_CREATE_FLAGS,
				.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB,
			};

			if (rdma_create_qp_ex(nd->id, &qx))
				return "rdma_create_qp_ex(BLOCK_SELF_MCAST_LB)";
		} else if (rdma_create_qp(nd->id, NULL, &qa)) {
			return "rdma_create_qp";
		}
		nd->buf = calloc(NRECV, SLOT);
		if (!nd->buf)
			return "calloc";
		nd->mr = ibv_reg_mr(nd->id->pd, nd->buf, (size_t)NRECV * SLOT,
				    IBV_ACCESS_LOCAL_WRITE);
		if (!nd->mr)
			return "ibv_reg_mr";
		/* Receives posted before the join, on every QP, the sender's too. */
		for (int k = 0; k < NRECV - 1; k++) {
			struct ibv_sge sge = {(uintptr_t)nd->buf + (size_t)k * SLOT, SLOT,
					      nd->mr->lkey};
			struct ibv_recv_wr wr = {.wr_id = (uint64_t)k, .sg_list = &sge, .num_sge = 1},
					   *badwr;

			if (ibv_post_recv(nd->id->qp, &wr, &badwr))
				return "ibv_post_recv";
		}
		if (rdma_join_multicast_ex(nd->id, &ja, nd))
			return "rdma_join_multicast_ex";
		ev = agent_cm_event(ag.ch, 5000);
		if (!ev)
			return "no MULTICAST_JOIN event";
		bad = check_join_event(ev, nd);
		if (bad) {
			snprintf(why, sizeof(why), "join event: %s", bad);
			rdma_ack_cm_event(ev);
			return why;
		}
		/* Every agent can send: the AH, QPN and Q_Key of the event. */
		nd->ah = ibv_create_ah(nd->id->pd, &ev->param.ud.ah_attr);
		nd->rqpn = ev->param.ud.qp_num;
		nd->rqkey = ev->param.ud.qkey;
		rdma_ack_cm_event(ev);
		if (!nd->ah)
			return "ibv_create_ah";
		nd->joined = true;
	}
	return NULL;
}

static bool send_one(struct node *nd, uint32_t seq, char *why, size_t cap)
{
	uint8_t *p = nd->buf + (size_t)(NRECV - 1) * SLOT; /* the slot never posted */
	struct ibv_sge sge = {(uintptr_t)p, msg_len(seq), nd->mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = seq,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = seq & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.imm_data = htonl(seq ^ 0xa5a5a5a5u),
		.wr.ud = {.ah = nd->ah, .remote_qpn = nd->rqpn, .remote_qkey = nd->rqkey},
	}, *bad;
	struct ibv_wc wc;
	uint64_t deadline = t_now_ms() + WAIT_MS;

	msg_fill(p, seq);
	if (ibv_post_send(nd->id->qp, &wr, &bad)) {
		snprintf(why, cap, "ibv_post_send seq %u", seq);
		return false;
	}
	while (t_now_ms() < deadline) {
		int n = ibv_poll_cq(nd->id->send_cq, 1, &wc);

		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.wr_id != seq || wc.opcode != IBV_WC_SEND) {
				snprintf(why, cap, "send seq %u: %s wr_id %llu", seq,
					 ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
				return false;
			}
			return true;
		}
		if (n < 0)
			break;
		poll(NULL, 0, 1);
	}
	snprintf(why, cap, "no send completion for seq %u", seq);
	return false;
}

/* Check one receive completion of @nd; false with @why on the first error. */
static bool check_recv(struct node *nd, const struct ibv_wc *wc, uint32_t srcqpn, char *why,
		       size_t cap)
{
	const uint8_t *b = nd->buf + (size_t)wc->wr_id * SLOT, *ip = b + 20;
	uint32_t seq, len, want_len;
	uint8_t want[MAX_LEN];

	if (wc->status != IBV_WC_SUCCESS || wc->opcode != IBV_WC_RECV) {
		snprintf(why, cap, "completion %s opcode %d", ibv_wc_status_str(wc->status),
			 wc->opcode);
		return false;
	}
	if (wc->wr_id >= NRECV - 1 || wc->byte_len < 48) {
		snprintf(why, cap, "wr_id %llu byte_len %u", (unsigned long long)wc->wr_id,
			 wc->byte_len);
		return false;
	}
	memcpy(&seq, b + 40, 4);
	seq = ntohl(seq);
	memcpy(&len, b + 44, 4);
	len = ntohl(len);
	want_len = msg_len(nd->next_seq);
	if (seq != nd->next_seq) {
		snprintf(why, cap, "seq %u arrived, expected %u (order/loss/duplicate)", seq,
			 nd->next_seq);
		return false;
	}
	if (len != want_len || wc->byte_len != 40 + want_len) {
		snprintf(why, cap, "seq %u: byte_len %u, payload says %u, expected 40+%u", seq,
			 wc->byte_len, len, want_len);
		return false;
	}
	msg_fill(want, seq);
	if (memcmp(b + 40, want, want_len)) {
		snprintf(why, cap, "seq %u: payload bytes differ", seq);
		return false;
	}
	if (!(wc->wc_flags & IBV_WC_GRH) || wc->src_qp != srcqpn ||
	    ((seq & 1) != !!(wc->wc_flags & IBV_WC_WITH_IMM)) ||
	    ((seq & 1) && wc->imm_data != htonl(seq ^ 0xa5a5a5a5u))) {
		snprintf(why, cap, "seq %u: wc_flags 0x%x src_qp 0x%x (want 0x%x) imm 0x%x", seq,
			 wc->wc_flags, wc->src_qp, srcqpn, ntohl(wc->imm_data));
		return false;
	}
	if (ip[0] != 0x45 || memcmp(ip + 12, &ag.src.sin_addr, 4) ||
	    memcmp(ip + 16, &ag.grp.sin_addr, 4)) {
		snprintf(why, cap, "seq %u: GRH IPv4 header wrong", seq);
		return false;
	}
	nd->next_seq++;
	nd->received++;
	return true;
}

/* Post receive slot @k of @nd again. */
static bool repost(struct node *nd, uint64_t k)
{
	struct ibv_sge sge = {(uintptr_t)nd->buf + (size_t)k * SLOT, SLOT, nd->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = k, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(nd->id->qp, &wr, &bad) == 0;
}

/*
 * Wait for @n more in-order messages on id @idx.  @pause_ms > 0: a slow
 * reader, which posts each receive again once checked and sleeps that
 * long after every 256 messages, whatever is waiting.
 */
static void cmd_recv(int idx, unsigned n, uint32_t first, uint32_t srcqpn, unsigned pause_ms)
{
	struct node *nd = &ag.n[idx];
	uint64_t deadline = t_now_ms() + WAIT_MS;
	unsigned got = 0;
	char why[256];
	struct ibv_wc wc[16];

	if (nd->next_seq != first) {
		agent_reply("fail id%d: next expected seq is %u, not %u", idx, nd->next_seq, first);
		return;
	}
	while (got < n) {
		int k = ibv_poll_cq(nd->id->recv_cq, 16, wc);

		if (k < 0) {
			agent_reply("fail id%d: ibv_poll_cq %d", idx, k);
			return;
		}
		for (int i = 0; i < k; i++) {
			if (!check_recv(nd, &wc[i], srcqpn, why, sizeof(why))) {
				agent_reply("fail id%d after %u of %u: %s", idx, got, n, why);
				return;
			}
			if (pause_ms && !repost(nd, wc[i].wr_id)) {
				agent_reply("fail id%d: ibv_post_recv again", idx);
				return;
			}
			got++;
			if (pause_ms && got % 256 == 0)
				poll(NULL, 0, (int)pause_ms);
		}
		if (k)
			continue;
		if (t_now_ms() > deadline) {
			agent_reply("fail id%d: %u of %u messages within %d ms", idx, got, n, WAIT_MS);
			return;
		}
		struct pollfd p = {.fd = nd->id->recv_cq_channel->fd, .events = POLLIN};

		poll(&p, 1, 20);
	}
	if (got > n) {
		agent_reply("fail id%d: %u messages, more than %u", idx, got, n);
		return;
	}
	agent_reply("ok id%d received %u (total %u)", idx, got, nd->received);
}

/* Poll id @idx for @ms: the completions, whatever they are. */
static void cmd_count(int idx, int ms)
{
	struct ibv_cq *cq = ag.n[idx].id->recv_cq;
	uint64_t deadline = t_now_ms() + (uint64_t)ms;
	struct ibv_wc wc[16];
	unsigned got = 0;
	int k;

	while (t_now_ms() < deadline)
		if ((k = ibv_poll_cq(cq, 16, wc)) > 0)
			got += (unsigned)k;
	agent_reply("ok got=%u", got);
}

/* Nothing arrives on id @idx during @ms (0: just what is already there). */
static void cmd_quiet(int idx, int ms)
{
	struct node *nd = &ag.n[idx];
	uint64_t deadline = t_now_ms() + (uint64_t)ms;
	struct ibv_wc wc;

	do {
		int k = ibv_poll_cq(nd->id->recv_cq, 1, &wc);

		if (k) {
			agent_reply("fail id%d: received a completion (status %s, byte_len %u) but must not",
			      idx, ibv_wc_status_str(wc.status), wc.byte_len);
			return;
		}
		struct pollfd p = {.fd = nd->id->recv_cq_channel->fd, .events = POLLIN};

		if (ms)
			poll(&p, 1, 20);
	} while (t_now_ms() < deadline);
	agent_reply("ok id%d quiet", idx);
}

static void cmd_leave(int idx)
{
	struct node *nd = &ag.n[idx];

	if (rdma_leave_multicast(nd->id, (struct sockaddr *)&ag.grp)) {
		agent_reply("fail id%d: rdma_leave_multicast errno %d", idx, errno);
		return;
	}
	nd->joined = false;
	/* librdmacm's rdma_leave_multicast(): a second leave finds no join. */
	errno = 0;
	if (rdma_leave_multicast(nd->id, (struct sockaddr *)&ag.grp) != -1 || errno != EADDRNOTAVAIL) {
		agent_reply("fail id%d: second leave did not fail with EADDRNOTAVAIL (errno %d)", idx, errno);
		return;
	}
	agent_reply("ok id%d left", idx);
}

/*
 * Do the datagrams take the same-host path: is it on (umcast(7): unless
 * UMC_SHM=0), and can a sender have a ring (MC_PROCS_NO_ROOM=1: the
 * test's UMC_SHM_DIR has no room for one, test_shm_full.sh)?  Read from
 * the environment each time, not by umc_shm_enabled(), which keeps its
 * first answer: agents forked after this call set UMC_SHM=0 for
 * themselves.
 */
static bool shm_on(void)
{
	const char *e = getenv("UMC_SHM");

	return (!e || strcmp(e, "0") != 0) && !getenv("MC_PROCS_NO_ROOM");
}

/* The agent's device counters and whether it holds a socket for the group. */
static void cmd_counters(void)
{
	struct umc_device *dev = ctx_dev(ag.n[0].id->verbs);
	union ibv_gid mgid;
	bool group;

	umc_progress(dev, true);
	memset(&mgid, 0, sizeof(mgid));
	mgid.raw[10] = mgid.raw[11] = 0xff;
	memcpy(mgid.raw + 12, &ag.grp.sin_addr, 4);
	pthread_mutex_lock(&dev->lock);
	group = __umc_mcg_find(dev, &mgid) != NULL;
	pthread_mutex_unlock(&dev->lock);
	agent_reply("ok rx_packets=%lu rx_delivered=%lu rx_self_blocked=%lu group_socket=%d "
	      "attached_groups=%d rx_shm=%lu tx_shm=%lu tx_packets=%lu rx_overrun=%lu "
	      "tx_shm_overrun=%lu",
	      (unsigned long)atomic_load(&dev->cnt->rx_packets),
	      (unsigned long)atomic_load(&dev->cnt->rx_delivered),
	      (unsigned long)atomic_load(&dev->cnt->rx_self_blocked), group, dev->mcg_attached,
	      (unsigned long)atomic_load(&dev->cnt->rx_shm),
	      (unsigned long)atomic_load(&dev->cnt->tx_shm),
	      (unsigned long)atomic_load(&dev->cnt->tx_packets),
	      (unsigned long)atomic_load(&dev->cnt->rx_overrun),
	      (unsigned long)atomic_load(&dev->cnt->tx_shm_overrun));
}

static void agent_quit(void)
{
	for (int i = 0; i < ag.nids; i++) {
		struct node *nd = &ag.n[i];

		if (nd->joined)
			rdma_leave_multicast(nd->id, (struct sockaddr *)&ag.grp);
		if (nd->ah)
			ibv_destroy_ah(nd->ah);
		rdma_destroy_qp(nd->id);
		if (nd->mr)
			ibv_dereg_mr(nd->mr);
		rdma_destroy_id(nd->id);
		free(nd->buf);
	}
	rdma_destroy_event_channel(ag.ch);
}

enum { AG_SENDONLY = 1, AG_BLOCK_SELF = 2, AG_NOSHM = 4, AG_NOTHREAD = 8 };

/* What an agent is: how many ids, and AG_* flags. */
struct agent_kind {
	int nids, flags;
};

static int agent_main(void *arg, int cmd)
{
	const struct agent_kind *k = arg;
	const char *err;
	char line[256];

	ag.nids = k->nids;
	ag.sendonly = k->flags & AG_SENDONLY;
	ag.block_self = k->flags & AG_BLOCK_SELF;
	if (k->flags & AG_NOSHM)
		setenv("UMC_SHM", "0", 1); /* read at the first group, after this */
	if (k->flags & AG_NOTHREAD)
		setenv("UMC_RX_THREAD", "0", 1); /* nothing reads but the agent's polls */
	err = agent_setup();
	if (err) {
		agent_reply("fail setup: %s (errno %d)", err, errno);
		return 1;
	}
	agent_reply("ok ready qpn=0x%x", ag.n[0].id->qp->qp_num);
	while (t_read_line(cmd, line, sizeof(line), 2 * AGENT_CMD_MS)) {
		unsigned a = 0, b = 0, c = 0, d = 0, e = 0;

		if (sscanf(line, "send %u %u", &a, &b) == 2) {
			uint64_t t0 = t_now_ms();
			char why[256];
			unsigned k;

			for (k = 0; k < a; k++)
				if (!send_one(&ag.n[0], b + k, why, sizeof(why)))
					break;
			if (k < a)
				agent_reply("fail %s", why);
			else
				agent_reply("ok sent %u qpn=0x%x ms=%llu", a, ag.n[0].id->qp->qp_num,
					    (unsigned long long)(t_now_ms() - t0));
		} else if (sscanf(line, "recv %u %u %u %x %u", &a, &b, &c, &d, &e) >= 4 &&
			   a < (unsigned)ag.nids) {
			cmd_recv((int)a, b, c, d, e);
		} else if (sscanf(line, "count %u %u", &a, &b) == 2 && a < (unsigned)ag.nids) {
			cmd_count((int)a, (int)b);
		} else if (sscanf(line, "quiet %u %u", &a, &b) == 2 && a < (unsigned)ag.nids) {
			cmd_quiet((int)a, (int)b);
		} else if (sscanf(line, "skip %u %u", &a, &b) == 2 && a < (unsigned)ag.nids) {
			/* Seqs this QP must never see: the next expected one moves on. */
			ag.n[a].next_seq += b;
			agent_reply("ok id%u now expects seq %u", a, ag.n[a].next_seq);
		} else if (sscanf(line, "leave %u", &a) == 1 && a < (unsigned)ag.nids) {
			cmd_leave((int)a);
		} else if (strcmp(line, "counters") == 0) {
			cmd_counters();
		} else if (strcmp(line, "quit") == 0) {
			agent_quit();
			agent_reply("ok bye");
			return 0;
		} else {
			agent_reply("fail unknown command '%s'", line);
		}
	}
	return 2;
}

/* ------------------------------------------------------------------------- */
/* Orchestrator.                                                             */

static struct sockaddr_in g_src, g_grp;

static void spawn(struct agent *a, const char *name, int nids, int flags)
{
	static struct agent_kind kinds[8];
	static int nkinds;
	struct agent_kind *k = &kinds[nkinds++ % 8];

	*k = (struct agent_kind){nids, flags};
	ag.src = g_src;
	ag.grp = g_grp;
	agent_spawn(a, name, agent_main, k);
}

/*
 * R1 (one id, flags @f1) and R2 (@n2 ids, flags @f2), full members, then,
 * once they are, S, send-only with receives posted: what fanout, leave,
 * mixed, slow and stopped begin with.  *@qpn: S's QPN.  False if an
 * agent did not start.
 */
static bool start_r1_r2_s(struct agent *r1, int f1, struct agent *r2, int n2, int f2,
			  struct agent *s, unsigned long *qpn)
{
	spawn(r1, "R1", 1, f1);
	spawn(r2, "R2", n2, f2);
	if (!agent_ready(r1) || !agent_ready(r2))
		return false;
	spawn(s, "S", 1, AG_SENDONLY);
	if (!agent_ready(s))
		return false;
	*qpn = agent_field(s, "qpn");
	return true;
}

/*
 * What fanout and leave begin with: R1 (one id) and R2 (two ids) full
 * members, S send-only with receives posted; S sends messages 0..@n-1 and
 * every receiver QP gets them all, in order.  *@qpn: S's QPN.  False if
 * an agent did not start or S could not send.
 */
static bool fan_out(struct agent *r1, struct agent *r2, struct agent *s, int n,
		    unsigned long *qpn)
{
	if (!start_r1_r2_s(r1, 0, r2, 2, 0, s, qpn) || !agent_cmd(s, "send %d 0", n))
		return false;
	agent_cmd(r1, "recv 0 %d 0 %lx", n, *qpn);
	agent_cmd(r2, "recv 0 %d 0 %lx", n, *qpn);
	agent_cmd(r2, "recv 1 %d 0 %lx", n, *qpn);
	return true;
}

/*
 * fanout: R1 (one id) and R2 (two ids) full members, S send-only with
 * receives posted.  N messages: every receiver QP gets all N, in order;
 * S gets none, has no group socket and has read no datagram at all.
 */
static void scenario_fanout(void)
{
	enum { N = 300 };
	struct agent r1, r2, s;
	unsigned long qpn;

	if (!fan_out(&r1, &r2, &s, N, &qpn))
		return;
	/* Every receiver has processed everything; the sender has had its chance. */
	agent_cmd(&s, "quiet 0 300");
	if (agent_cmd(&s, "counters")) {
		agent_expect_eq("S rx_packets", agent_field(&s, "rx_packets"), 0);
		agent_expect_eq("S group_socket", agent_field(&s, "group_socket"), 0);
		agent_expect_eq("S attached_groups", agent_field(&s, "attached_groups"), 0);
		/*
		 * With the same-host path on (UMC_SHM=1) every local
		 * receiver reads it: the datagrams go to the ring (and count
		 * as sent there), none to lo.
		 */
		agent_expect_eq("S tx_shm", agent_field(&s, "tx_shm"), shm_on() ? N : 0);
		agent_expect_eq("S tx_packets", agent_field(&s, "tx_packets"), N);
	}
	if (agent_cmd(&r2, "counters")) {
		/* One socket per group and process: each datagram read once, delivered twice. */
		agent_expect_eq("R2 rx_packets", agent_field(&r2, "rx_packets"), N);
		agent_expect_eq("R2 rx_delivered", agent_field(&r2, "rx_delivered"), 2 * N);
		agent_expect_eq("R2 group_socket", agent_field(&r2, "group_socket"), 1);
		agent_expect_eq("R2 rx_shm", agent_field(&r2, "rx_shm"), shm_on() ? N : 0);
	}
	agent_finish(&s);
	agent_finish(&r1);
	agent_finish(&r2);
}

/*
 * leave: R1 (one id) leaves; R2 leaves on its first id only.  Messages
 * sent afterwards reach R2's second id only: R2's first id shares its
 * process (and socket) with the second, so its silence is checked right
 * after the second id's messages were processed; R1 has no group socket
 * left and has read no further datagram.
 */
static void scenario_leave(void)
{
	enum { N1 = 20, N2 = 25 };
	struct agent r1, r2, s;
	unsigned long qpn, rx_before;

	if (!fan_out(&r1, &r2, &s, N1, &qpn))
		return;

	agent_cmd(&r1, "leave 0");
	agent_cmd(&r2, "leave 0");
	if (agent_cmd(&r1, "counters")) {
		agent_expect_eq("R1 group_socket after leave", agent_field(&r1, "group_socket"), 0);
		agent_expect_eq("R1 rx_packets", agent_field(&r1, "rx_packets"), N1);
	}
	rx_before = agent_field(&r1, "rx_packets");

	agent_cmd(&s, "send %d %d", N2, N1);
	agent_cmd(&r2, "recv 1 %d %d %lx", N2, N1, qpn);
	agent_cmd(&r2, "quiet 0 0");
	agent_cmd(&r1, "quiet 0 300");
	if (agent_cmd(&r1, "counters"))
		agent_expect_eq("R1 rx_packets after leave", agent_field(&r1, "rx_packets"), rx_before);
	if (agent_cmd(&r2, "counters")) {
		agent_expect_eq("R2 rx_packets", agent_field(&r2, "rx_packets"), N1 + N2);
		agent_expect_eq("R2 rx_delivered", agent_field(&r2, "rx_delivered"), 2 * N1 + N2);
	}
	agent_finish(&s);
	agent_finish(&r1);
	agent_finish(&r2);
}

/*
 * selfloop: R receives; F and B are full-member senders whose QPs are
 * attached; B's QP has IBV_QP_CREATE_BLOCK_SELF_MCAST_LB.  F's messages
 * reach R, F itself and B.  B's messages reach R and F, not B: B's next
 * message after F's first batch is F's second batch (order is checked).
 */
static void scenario_selfloop(void)
{
	enum { N = 10 };
	struct agent r, fs, bs;
	unsigned long fq, bq;

	spawn(&r, "R", 1, 0);
	spawn(&fs, "F", 1, 0);
	spawn(&bs, "B", 1, AG_BLOCK_SELF);
	if (!agent_ready(&r) || !agent_ready(&fs) || !agent_ready(&bs))
		return;
	fq = agent_field(&fs, "qpn");
	bq = agent_field(&bs, "qpn");
	agent_cmd(&fs, "send %d 0", N);
	agent_cmd(&r, "recv 0 %d 0 %lx", N, fq);
	agent_cmd(&fs, "recv 0 %d 0 %lx", N, fq); /* its own, no sender exclusion */
	agent_cmd(&bs, "recv 0 %d 0 %lx", N, fq);

	agent_cmd(&bs, "send %d %d", N, N);
	agent_cmd(&r, "recv 0 %d %d %lx", N, N, bq);
	agent_cmd(&fs, "recv 0 %d %d %lx", N, N, bq);
	agent_cmd(&bs, "skip 0 %d", N); /* B must never see seqs N..2N-1 */
	agent_cmd(&fs, "send %d %d", N, 2 * N);
	agent_cmd(&r, "recv 0 %d %d %lx", N, 2 * N, fq);
	agent_cmd(&bs, "recv 0 %d %d %lx", N, 2 * N, fq);
	agent_cmd(&bs, "quiet 0 0");
	if (agent_cmd(&bs, "counters")) {
		agent_expect_eq("B rx_self_blocked", agent_field(&bs, "rx_self_blocked"), N);
		agent_expect_eq("B rx_delivered", agent_field(&bs, "rx_delivered"), 2 * N);
	}
	if (agent_cmd(&fs, "counters"))
		agent_expect_eq("F rx_self_blocked", agent_field(&fs, "rx_self_blocked"), 0);
	agent_finish(&bs);
	agent_finish(&fs);
	agent_finish(&r);
}

/*
 * mixed: the same-host path with a local receiver that has it off
 * (umcast(7), SAME-HOST PATH).  R1 reads the path, R2 (UMC_SHM=0) only
 * its socket, S sends with the path on.  While R2 receives, the kernel
 * carries every datagram (S writes none to its ring); once R2 is gone
 * the ring does (S sends none to lo); when R3 (UMC_SHM=0) joins, the
 * kernel again.  Every receiver QP gets each message exactly once, in
 * order, through every switch.
 */
static void scenario_mixed(void)
{
	enum { N = 150 }; /* 3 N within R1's NRECV - 1 receives */
	struct agent r1, r2, r3, s;
	unsigned long qpn;

	if (!start_r1_r2_s(&r1, 0, &r2, 1, AG_NOSHM, &s, &qpn))
		return;
	agent_cmd(&s, "send %d 0", N);
	agent_cmd(&r1, "recv 0 %d 0 %lx", N, qpn);
	agent_cmd(&r2, "recv 0 %d 0 %lx", N, qpn);
	agent_cmd(&r2, "quiet 0 100");
	if (agent_cmd(&s, "counters")) {
		agent_expect_eq("S tx_shm, R2 there", agent_field(&s, "tx_shm"), 0);
	}
	agent_finish(&r2);

	agent_cmd(&s, "send %d %d", N, N);
	agent_cmd(&r1, "recv 0 %d %d %lx", N, N, qpn);
	if (agent_cmd(&s, "counters")) {
		agent_expect_eq("S tx_shm, R2 gone", agent_field(&s, "tx_shm"), shm_on() ? N : 0);
	}

	spawn(&r3, "R3", 1, AG_NOSHM);
	if (!agent_ready(&r3))
		return;
	agent_cmd(&s, "send %d %d", N, 2 * N);
	agent_cmd(&r1, "recv 0 %d %d %lx", N, 2 * N, qpn);
	agent_cmd(&r3, "skip 0 %d", 2 * N); /* joined after those */
	agent_cmd(&r3, "recv 0 %d %d %lx", N, 2 * N, qpn);
	agent_cmd(&r1, "quiet 0 100");
	agent_cmd(&r3, "quiet 0 0");
	if (agent_cmd(&r1, "counters")) {
		agent_expect_eq("R1 rx_packets", agent_field(&r1, "rx_packets"), 3 * N);
		agent_expect_eq("R1 rx_shm", agent_field(&r1, "rx_shm"), shm_on() ? N : 0);
	}
	if (agent_cmd(&s, "counters")) {
		agent_expect_eq("S tx_shm, R3 there", agent_field(&s, "tx_shm"), shm_on() ? N : 0);
		agent_expect_eq("S tx_packets", agent_field(&s, "tx_packets"), 3 * N);
	}
	agent_finish(&s);
	agent_finish(&r1);
	agent_finish(&r3);
}

/*
 * live: a reader slower than its sender that keeps reading paces it and
 * loses nothing (umcast(7), SAME-HOST PATH).  Rings of 1 MiB
 * (UMC_SHM_RING) hold 8192 of these short messages; R1 (no background
 * thread) sleeps 2 ms after every 256 it reads, far more than a
 * sixteenth of a ring per UMC_SHM_WAIT_MS, but slower than S, which
 * sends N, two rings' worth, as fast as it can: R1 stays about a ring
 * behind for longer than UMC_SHM_WAIT_MS.  It gets all N in order; S
 * never gave up on it.
 */
static void scenario_live(void)
{
	enum { N = 16384 };
	struct agent r1, s;
	unsigned long qpn;

	if (!shm_on()) {
		printf("# the same-host path is off: nothing to check\n");
		return;
	}
	len_mod = 29; /* 8 to 36 bytes: a record of 128 bytes */
	spawn(&r1, "R1", 1, AG_NOTHREAD);
	if (!agent_ready(&r1))
		return;
	spawn(&s, "S", 1, AG_SENDONLY);
	if (!agent_ready(&s))
		return;
	qpn = agent_field(&s, "qpn");
	agent_send(&r1, "recv 0 %d 0 %lx 2", N, qpn);
	agent_cmd(&s, "send %d 0", N);
	if (!agent_get_reply(&r1))
		agent_fail("R1: %s", r1.last);
	if (agent_cmd(&r1, "counters")) {
		agent_expect_eq("R1 rx_overrun", agent_field(&r1, "rx_overrun"), 0);
		agent_expect_eq("R1 rx_shm", agent_field(&r1, "rx_shm"), N);
	}
	if (agent_cmd(&s, "counters")) {
		agent_expect_eq("S tx_shm", agent_field(&s, "tx_shm"), N);
		agent_expect_eq("S tx_shm_overrun", agent_field(&s, "tx_shm_overrun"), 0);
	}
	agent_finish(&s);
	agent_finish(&r1);
}

/*
 * slow and stopped: flow control on the same-host path, with rings of
 * 64 KiB (UMC_SHM_RING, about 100 of these messages).  R1 reads nothing
 * while S sends N, several rings' worth: "slow", it has no background
 * thread and does not poll; "stopped", it is stopped (SIGSTOP).  R2
 * receives as usual.  S waits for R2, which is woken and so gets all N in
 * order, and for R1 once (UMC_SHM_WAIT_MS): it gives up on it
 * (tx_shm_overrun), not again within UMC_SHM_GRACE_MS, and its send ends.
 * R1, polled or continued, then finds what is left: every datagram read
 * or counted lost (rx_overrun), none silently.
 */
static void scenario_lagging(bool stop)
{
	enum { N = 450 }; /* within R2's NRECV - 1 receives */
	struct agent r1, r2, s;
	unsigned long qpn, shm, over, ms, gave_up;

	if (!shm_on()) {
		printf("# the same-host path is off: nothing to check\n");
		return;
	}
	if (!start_r1_r2_s(&r1, stop ? 0 : AG_NOTHREAD, &r2, 1, 0, &s, &qpn))
		return;
	if (stop)
		kill(r1.pid, SIGSTOP);
	if (agent_cmd(&s, "send %d 0", N)) {
		ms = agent_field(&s, "ms");
		if (agent_cmd(&s, "counters")) {
			agent_expect_eq("S tx_shm", agent_field(&s, "tx_shm"), N);
			gave_up = agent_field(&s, "tx_shm_overrun");
			if (gave_up < 1 || gave_up > 1 + ms / UMC_SHM_GRACE_MS)
				agent_fail("S gave up %lu times on R1 in %lu ms: once per %d ms", gave_up,
					   ms, UMC_SHM_GRACE_MS);
		}
	}
	agent_cmd(&r2, "recv 0 %d 0 %lx", N, qpn);
	if (agent_cmd(&r2, "counters"))
		agent_expect_eq("R2 rx_overrun", agent_field(&r2, "rx_overrun"), 0);
	if (stop)
		kill(r1.pid, SIGCONT);
	agent_cmd(&r1, "count 0 300");
	if (agent_cmd(&r1, "counters")) {
		shm = agent_field(&r1, "rx_shm");
		over = agent_field(&r1, "rx_overrun");
		agent_expect_eq("R1 rx_shm + rx_overrun", shm + over, N);
		if (over == 0 || shm == 0)
			agent_fail("R1 read %lu and lost %lu: it should have done both", shm, over);
	}
	agent_finish(&s);
	agent_finish(&r1);
	agent_finish(&r2);
}

int main(int argc, char **argv)
{
	unsigned pid = (unsigned)getpid();
	char gstr[INET_ADDRSTRLEN];

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	unsetenv("UMC_QPN_BASE"); /* each agent picks pid-derived QPNs */
	g_src.sin_family = g_grp.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &g_src.sin_addr);
	g_grp.sin_addr.s_addr = htonl(239u << 24 | 251u << 16 | ((pid >> 8) & 0xff) << 8 | (pid & 0xff));
	inet_ntop(AF_INET, &g_grp.sin_addr, gstr, sizeof(gstr));
	if (argc != 2) {
		fprintf(stderr, "usage: mc_procs fanout|leave|selfloop|mixed|slow|live|stopped\n");
		return 2;
	}
	printf("# group %s\n", gstr);
	if (strcmp(argv[1], "fanout") == 0)
		scenario_fanout();
	else if (strcmp(argv[1], "leave") == 0)
		scenario_leave();
	else if (strcmp(argv[1], "selfloop") == 0)
		scenario_selfloop();
	else if (strcmp(argv[1], "mixed") == 0)
		scenario_mixed();
	else if (strcmp(argv[1], "slow") == 0)
		scenario_lagging(false);
	else if (strcmp(argv[1], "live") == 0)
		scenario_live();
	else if (strcmp(argv[1], "stopped") == 0)
		scenario_lagging(true);
	else {
		fprintf(stderr, "unknown scenario %s\n", argv[1]);
		return 2;
	}
	printf("%s: %s (%d failure(s))\n", agent_failures ? "FAIL" : "PASS", argv[1],
	       agent_failures);
	return agent_failures ? 1 : 0;
}
