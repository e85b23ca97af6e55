/* SPDX-License-Identifier: MIT */
/*
 * umc-perf - UD multicast message rate, bandwidth, loss and latency, in the
 * manner of perftest's ib_send_bw and ib_send_lat, written against the
 * public librdmacm/libibverbs API only (it builds unchanged against
 * rdma-core's headers and runs on a RoCE NIC or rxe as well).
 *
 * Roles (umc-perf.1.md):
 *   receiver (default)  joins the group with -q QPs (one rdma_cm_id each,
 *                       one shared CQ), keeps every receive queue full,
 *                       busy-polls the CQ, stops at the sender's end marker,
 *                       after -n messages per QP, or when idle for -I ms;
 *   sender (-s)         posts chains of -B WRs (one signaled per chain) for
 *                       -n messages or -D seconds, optionally paced (-r),
 *                       then repeats an end marker for 50 ms;
 *   ping (-L ping)      sends on group A (-m, send-only join) and waits for
 *                       the echo on group B (-g, full member);
 *   pong (-L pong)      receives on A, echoes every message on B.
 *
 * Every message carries its sequence number in its first 8 payload bytes
 * (perf_common.h), which the receiver uses for loss.  Every wait is bounded
 * (-T, -I).  -R fd: one byte is written to fd when joined and the receive
 * queues are posted, so that scripts wait for readiness without sleeping.
 *
 * The options, the roles' loops and the output are perf_common.c's, shared
 * with bench/'s udp-perf and fi-perf; this file is how umcast sends and
 * receives.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "perf_common.h"

#define GRH 40
#define POLL_MAX 64
#define SEND_BIT (1ull << 62)

static const char prog[] = "umc-perf";
static struct perf_opts o;

struct ep {
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct perf_rx rx;
	bool resolved;
	int joins_left;
	uint32_t *pending; /* receive slots to repost */
	int npending;
	uint8_t *rbuf;	   /* depth slots of GRH + size */
};

static struct {
	struct rdma_event_channel *ch;
	struct ep eps[PERF_MAX_QPS];
	int neps;
	struct sockaddr_storage src, dst, dst2;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;
	size_t mem_len;
	uint8_t *sbuf; /* sender: depth slots of size; ping: 1 slot */
	struct ibv_ah *ah;	/* where we send (sender: -m; ping: A; pong: B) */
	uint32_t remote_qpn, remote_qkey;
	struct ibv_recv_wr *rwr;
	struct ibv_sge *rsge;
	struct ibv_send_wr *swr;
	struct ibv_sge *ssge;
	uint64_t bad;
} g;

static void fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static void get_addr(const char *name, struct sockaddr_storage *ss)
{
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST}, *res;

	if (getaddrinfo(name, NULL, &hints, &res))
		fail("not a numeric address: %s", name);
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
}

/* The echo group by default: the -m address plus one. */
static void default_group2(char *buf, size_t len)
{
	struct in_addr a;

	if (inet_pton(AF_INET, o.group, &a) != 1)
		fail("-g is needed with a non-IPv4 group (%s)", o.group);
	a = perf_next_group(a);
	inet_ntop(AF_INET, &a, buf, (socklen_t)len);
}

/* ------------------------------------------------------------------------- */
/* Set-up: ids, resolve, PD/CQ/QPs/MR, joins.                                */

static struct rdma_cm_event *get_event(void)
{
	struct pollfd pfd = {.fd = g.ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	int n;

	do
		n = poll(&pfd, 1, o.timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		perf_die("poll");
	if (n == 0) {
		errno = ETIMEDOUT;
		perf_die("waiting for a CM event");
	}
	if (rdma_get_cm_event(g.ch, &ev))
		perf_die("rdma_get_cm_event");
	return ev;
}

static uint8_t *rslot(struct ep *e, uint32_t slot)
{
	return e->rbuf + (size_t)slot * (GRH + o.size);
}

static void setup_verbs(struct ibv_context *verbs)
{
	struct ibv_port_attr pa;
	size_t rlen = (size_t)(GRH + o.size) * o.depth;
	bool recv = o.mode != PERF_MODE_BW || !o.sender;
	bool send = o.mode != PERF_MODE_BW || o.sender;
	int cqe;

	if (ibv_query_port(verbs, 1, &pa))
		perf_die("ibv_query_port");
	if (o.size > (128u << pa.active_mtu)) {
		fprintf(stderr, "%s: -S %u is above the path MTU %u\n", prog, o.size,
			128u << pa.active_mtu);
		exit(2); /* a usage error, found once the port is known */
	}
	g.pd = ibv_alloc_pd(verbs);
	if (!g.pd)
		perf_die("ibv_alloc_pd");
	if (o.events) {
		g.cc = ibv_create_comp_channel(verbs);
		if (!g.cc)
			perf_die("ibv_create_comp_channel");
	}
	cqe = (recv ? g.neps * o.depth : 0) + (send ? o.depth : 0) + 16;
	if (cqe > 65535)
		cqe = 65535;
	g.cq = ibv_create_cq(verbs, cqe, NULL, g.cc, 0);
	if (!g.cq)
		perf_die("ibv_create_cq");
	g.mem_len = (recv ? rlen * g.neps : 0) + (send ? (size_t)o.size * o.depth : 0);
	g.mem = aligned_alloc(4096, (g.mem_len + 4095) & ~(size_t)4095);
	if (!g.mem)
		perf_die("aligned_alloc");
	memset(g.mem, 0, g.mem_len);
	g.mr = ibv_reg_mr(g.pd, g.mem, g.mem_len, IBV_ACCESS_LOCAL_WRITE);
	if (!g.mr)
		perf_die("ibv_reg_mr");
	for (int i = 0; recv && i < g.neps; i++) {
		g.eps[i].rbuf = g.mem + rlen * i;
		g.eps[i].pending = calloc(o.depth, sizeof(uint32_t));
		if (!g.eps[i].pending)
			perf_die("calloc");
	}
	if (send)
		g.sbuf = g.mem + (recv ? rlen * g.neps : 0);
	g.rwr = calloc(o.depth, sizeof(*g.rwr));
	g.rsge = calloc(o.depth, sizeof(*g.rsge));
	g.swr = calloc(o.batch + POLL_MAX, sizeof(*g.swr));
	g.ssge = calloc(o.batch + POLL_MAX, sizeof(*g.ssge));
	if (!g.rwr || !g.rsge || !g.swr || !g.ssge)
		perf_die("calloc");
}

static void create_qp(struct ep *e)
{
	struct ibv_qp_init_attr a = {
		.send_cq = g.cq,
		.recv_cq = g.cq,
		.cap = {
			.max_send_wr = (uint32_t)o.depth,
			.max_recv_wr = (uint32_t)o.depth,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 0,
	};

	if (rdma_create_qp(e->id, g.pd, &a))
		perf_die("rdma_create_qp");
	e->qp = e->id->qp;
}

/* Post the receive slots @slots[0..n) of @e as one chain. */
static void post_recvs(struct ep *e, const uint32_t *slots, int n)
{
	struct ibv_recv_wr *bad;
	int idx = (int)(e - g.eps);
	int ret;

	for (int i = 0; i < n; i++) {
		g.rsge[i] = (struct ibv_sge){
			.addr = (uintptr_t)rslot(e, slots[i]),
			.length = GRH + o.size,
			.lkey = g.mr->lkey,
		};
		g.rwr[i] = (struct ibv_recv_wr){
			.wr_id = (uint64_t)idx << 32 | slots[i],
			.next = i + 1 < n ? &g.rwr[i + 1] : NULL,
			.sg_list = &g.rsge[i],
			.num_sge = 1,
		};
	}
	ret = ibv_post_recv(e->qp, g.rwr, &bad);
	if (ret) {
		errno = ret;
		perf_die("ibv_post_recv");
	}
}

static void post_all_recvs(struct ep *e)
{
	for (int s = 0; s < o.depth; s += o.batch) {
		int n = o.depth - s < o.batch ? o.depth - s : o.batch;

		for (int i = 0; i < n; i++)
			e->pending[i] = (uint32_t)(s + i);
		post_recvs(e, e->pending, n);
	}
}

static void join(struct ep *e, struct sockaddr_storage *grp, bool send_only)
{
	struct rdma_cm_join_mc_attr_ex a = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
					: RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)grp,
	};

	/* The context tells the join events apart: the group we send to. */
	if (rdma_join_multicast_ex(e->id, &a, grp))
		perf_die("rdma_join_multicast_ex");
	e->joins_left++;
}

/* The group whose address handle we send to. */
static struct sockaddr_storage *send_group(void)
{
	return o.mode == PERF_MODE_PONG ? &g.dst2 : &g.dst;
}

static void setup(void)
{
	struct rdma_cm_event *ev;
	int left, want = o.mode == PERF_MODE_BW && !o.sender ? o.qps : 1;

	g.ch = rdma_create_event_channel();
	if (!g.ch)
		perf_die("rdma_create_event_channel");
	g.neps = want;
	for (int i = 0; i < want; i++) {
		if (rdma_create_id(g.ch, &g.eps[i].id, &g.eps[i], RDMA_PS_UDP))
			perf_die("rdma_create_id");
		if (rdma_resolve_addr(g.eps[i].id, (struct sockaddr *)&g.src,
				      (struct sockaddr *)&g.dst, 2000))
			perf_die("rdma_resolve_addr");
	}
	for (left = want; left > 0; left--) {
		ev = get_event();
		struct ep *e = ev->id->context;

		if (ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
			fprintf(stderr, "%s: %s (status %d) while resolving %s\n", prog,
				rdma_event_str(ev->event), ev->status, o.bind);
			exit(1);
		}
		e->resolved = true;
		rdma_ack_cm_event(ev);
	}
	setup_verbs(g.eps[0].id->verbs);
	for (int i = 0; i < g.neps; i++) {
		create_qp(&g.eps[i]);
		/* Receives first, so no datagram finds the queue empty once attached. */
		if (o.mode != PERF_MODE_BW || !o.sender)
			post_all_recvs(&g.eps[i]);
	}
	switch (o.mode) {
	case PERF_MODE_BW:
		for (int i = 0; i < g.neps; i++)
			join(&g.eps[i], &g.dst, o.sender && o.send_only);
		break;
	case PERF_MODE_PING:
		join(&g.eps[0], &g.dst, true);
		join(&g.eps[0], &g.dst2, false);
		break;
	case PERF_MODE_PONG:
		join(&g.eps[0], &g.dst, false);
		join(&g.eps[0], &g.dst2, true);
		break;
	}
	left = 0;
	for (int i = 0; i < g.neps; i++)
		left += g.eps[i].joins_left;
	for (; left > 0; left--) {
		ev = get_event();
		struct ep *e = ev->id->context;

		if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN) {
			fprintf(stderr, "%s: %s (status %d) while joining\n", prog,
				rdma_event_str(ev->event), ev->status);
			exit(1);
		}
		e->joins_left--;
		if (ev->param.ud.private_data == send_group() && !g.ah) {
			g.remote_qpn = ev->param.ud.qp_num;
			g.remote_qkey = ev->param.ud.qkey;
			g.ah = ibv_create_ah(g.pd, &ev->param.ud.ah_attr);
			if (!g.ah)
				perf_die("ibv_create_ah");
		}
		rdma_ack_cm_event(ev);
	}
	if ((o.mode != PERF_MODE_BW || o.sender) && !g.ah)
		fail("no join event for the group to send to (%s)", "");
}

static void teardown(void)
{
	for (int i = 0; i < g.neps; i++) {
		struct ep *e = &g.eps[i];

		rdma_leave_multicast(e->id, (struct sockaddr *)&g.dst);
		if (o.mode != PERF_MODE_BW)
			rdma_leave_multicast(e->id, (struct sockaddr *)&g.dst2);
	}
	if (g.ah)
		ibv_destroy_ah(g.ah);
	for (int i = 0; i < g.neps; i++) {
		rdma_destroy_qp(g.eps[i].id);
		free(g.eps[i].pending);
	}
	ibv_destroy_cq(g.cq);
	if (g.cc)
		ibv_destroy_comp_channel(g.cc);
	ibv_dereg_mr(g.mr);
	ibv_dealloc_pd(g.pd);
	for (int i = 0; i < g.neps; i++)
		rdma_destroy_id(g.eps[i].id);
	rdma_destroy_event_channel(g.ch);
	free(g.mem);
	free(g.rwr);
	free(g.rsge);
	free(g.swr);
	free(g.ssge);
}

/* ------------------------------------------------------------------------- */
/* Data path helpers.                                                       */

/* Fill send WR @i (not yet chained) for @len bytes at @buf. */
static void fill_send(int i, const void *buf, uint64_t wr_id, bool signaled)
{
	g.ssge[i] = (struct ibv_sge){.addr = (uintptr_t)buf, .length = o.size, .lkey = g.mr->lkey};
	g.swr[i] = (struct ibv_send_wr){
		.wr_id = wr_id,
		.sg_list = &g.ssge[i],
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
		.wr.ud = {.ah = g.ah, .remote_qpn = g.remote_qpn, .remote_qkey = g.remote_qkey},
	};
}

static void post_sends(struct ibv_qp *qp, int n)
{
	struct ibv_send_wr *bad;
	int ret;

	for (int i = 0; i + 1 < n; i++)
		g.swr[i].next = &g.swr[i + 1];
	g.swr[n - 1].next = NULL;
	ret = ibv_post_send(qp, g.swr, &bad);
	if (ret) {
		errno = ret;
		perf_die("ibv_post_send");
	}
}

static int poll_cq(struct ibv_wc *wc, int n)
{
	int got = ibv_poll_cq(g.cq, n, wc);

	if (got < 0) {
		errno = -got;
		perf_die("ibv_poll_cq");
	}
	return got;
}

/*
 * Sleep in poll(2) on the completion channel until a completion may be
 * there (-e), at most @ms.
 */
static void wait_event(int ms)
{
	struct pollfd pfd = {.fd = g.cc->fd, .events = POLLIN};
	struct ibv_cq *cq;
	void *ctx;
	int n;

	if (ibv_req_notify_cq(g.cq, 0))
		perf_die("ibv_req_notify_cq");
	do
		n = poll(&pfd, 1, ms);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return;
	/* Non-blocking: a datagram that made no event for us returns EAGAIN. */
	if (ibv_get_cq_event(g.cc, &cq, &ctx) == 0)
		ibv_ack_cq_events(cq, 1);
}

/* ------------------------------------------------------------------------- */
/* Bandwidth: sender.                                                        */

/* Messages whose send slots are free again: each chain's signaled WR has
 * the count sent up to its end as wr_id (end markers 0). */
static uint64_t freed;

/* Poll once for send completions; @count_bad: count the failed ones. */
static void reap_sends(bool count_bad)
{
	struct ibv_wc wc[POLL_MAX];
	int n = poll_cq(wc, POLL_MAX);

	for (int i = 0; i < n; i++) {
		if (count_bad && wc[i].status != IBV_WC_SUCCESS)
			g.bad++;
		if (wc[i].wr_id > freed)
			freed = wc[i].wr_id;
	}
}

/* Every slot of the chain must have been completed. */
static void umc_reserve(uint64_t seq, int n)
{
	while (seq + n - freed > (uint64_t)o.depth)
		reap_sends(true);
}

static void umc_send(uint64_t seq, int nb)
{
	for (int i = 0; i < nb; i++) {
		uint8_t *buf = g.sbuf + (size_t)((seq + i) % o.depth) * o.size;

		perf_put_seq(buf, o.size, seq + i);
		fill_send(i, buf, seq + i + 1, i == nb - 1);
	}
	post_sends(g.eps[0].qp, nb);
	reap_sends(true);
}

static void umc_send_fin(uint64_t sent)
{
	uint8_t *fin = g.sbuf + (size_t)(sent % o.depth) * o.size;

	while (sent + 1 - freed > (uint64_t)o.depth)
		reap_sends(false);
	perf_put_seq(fin, o.size, PERF_FIN | sent);
	fill_send(0, fin, 0, true);
	post_sends(g.eps[0].qp, 1);
}

/* The end markers' completions free nothing. */
static void umc_fin_gap(void)
{
	struct ibv_wc wc[POLL_MAX];

	poll_cq(wc, POLL_MAX);
}

/* ------------------------------------------------------------------------- */
/* Bandwidth: receiver.                                                      */

static struct perf_rx *umc_acct(int q)
{
	return &g.eps[q].rx;
}

/* Repost @e's consumed receives once there are @min of them. */
static void flush_pending(struct ep *e, int min)
{
	if (e->npending >= min && e->npending > 0 && !e->rx.done) {
		post_recvs(e, e->pending, e->npending);
		e->npending = 0;
	}
}

static int umc_recv(int64_t *now)
{
	struct ibv_wc wc[POLL_MAX];
	int n = poll_cq(wc, POLL_MAX);

	if (!n)
		return 0;
	*now = perf_now_ns();
	for (int i = 0; i < n; i++) {
		struct ep *e = &g.eps[wc[i].wr_id >> 32];
		uint32_t slot = (uint32_t)wc[i].wr_id;

		if (wc[i].status != IBV_WC_SUCCESS) {
			if (!g.bad++)
				fprintf(stderr, "%s: receive completion: %s%s\n", prog,
					ibv_wc_status_str(wc[i].status),
					wc[i].status == IBV_WC_LOC_LEN_ERR
						? " (messages longer than -S?)"
						: "");
			if (wc[i].status == IBV_WC_WR_FLUSH_ERR ||
			    wc[i].status == IBV_WC_LOC_LEN_ERR)
				e->rx.done = true;
			continue;
		}
		perf_rx_take(&e->rx, perf_get_seq(rslot(e, slot) + GRH, o.size), *now, o.count);
		e->pending[e->npending++] = slot;
	}
	for (int i = 0; i < g.neps; i++)
		flush_pending(&g.eps[i], o.batch);
	return n;
}

static void umc_recv_idle(void)
{
	for (int i = 0; i < g.neps; i++)
		flush_pending(&g.eps[i], 1);
}

static void umc_queue_name(int q, char *buf, size_t len)
{
	snprintf(buf, len, "qp 0x%x", g.eps[q].qp->qp_num);
}

static void umc_recv_end(void)
{
	if (g.bad)
		fprintf(stderr, "%s: %llu completions with an error status\n", prog,
			(unsigned long long)g.bad);
}

/* ------------------------------------------------------------------------- */
/* Latency.                                                                  */

static bool send_done = true; /* ping: the send buffer is ours */

/* The send buffer is ours again once its completion is seen. */
static void umc_ping_prepare(uint64_t seq)
{
	struct ep *e = &g.eps[0];
	struct ibv_wc wc[POLL_MAX];

	while (!send_done) {
		int n = poll_cq(wc, POLL_MAX);

		for (int k = 0; k < n; k++) {
			if (wc[k].wr_id & SEND_BIT)
				send_done = true;
			else
				e->pending[e->npending++] = (uint32_t)wc[k].wr_id;
		}
	}
	perf_put_seq(g.sbuf, o.size, seq);
	fill_send(0, g.sbuf, SEND_BIT, true);
	send_done = false;
}

static void umc_ping_send(void)
{
	post_sends(g.eps[0].qp, 1);
}

static int umc_ping_recv(uint64_t seq, bool *got)
{
	struct ep *e = &g.eps[0];
	struct ibv_wc wc[POLL_MAX];
	int n = poll_cq(wc, POLL_MAX);

	for (int k = 0; k < n; k++) {
		if (wc[k].wr_id & SEND_BIT) {
			send_done = true;
			continue;
		}
		uint32_t slot = (uint32_t)wc[k].wr_id;

		if (wc[k].status == IBV_WC_SUCCESS &&
		    perf_get_seq(rslot(e, slot) + GRH, o.size) == seq)
			*got = true;
		e->pending[e->npending++] = slot;
	}
	return n;
}

/* Repost at -B consumed receives, or at half the queue if that is fewer. */
static void umc_ping_after(void)
{
	flush_pending(&g.eps[0], o.batch < o.depth / 2 + 1 ? o.batch : o.depth / 2 + 1);
}

static int umc_pong(struct perf_echo *pe, bool *stop)
{
	struct ep *e = &g.eps[0];
	struct ibv_wc wc[POLL_MAX];
	int n = poll_cq(wc, POLL_MAX), ns = 0;

	for (int k = 0; k < n; k++) {
		uint32_t slot = (uint32_t)wc[k].wr_id;

		if (wc[k].wr_id & SEND_BIT) {
			/* The echo left: its buffer takes a receive again. */
			e->pending[e->npending++] = slot;
			continue;
		}
		if (wc[k].status != IBV_WC_SUCCESS) {
			g.bad++;
			continue;
		}
		uint8_t *p = rslot(e, slot) + GRH;

		if (perf_get_seq(p, o.size) & PERF_FIN) {
			*stop = true;
			e->pending[e->npending++] = slot;
			continue;
		}
		/* Echo straight from the receive buffer. */
		fill_send(ns++, p, SEND_BIT | slot, true);
	}
	if (ns) {
		post_sends(e->qp, ns);
		perf_echoed(pe, ns);
	}
	/* Repost at -B, or whatever there is once the CQ is empty. */
	flush_pending(e, n ? o.batch : 1);
	return n;
}

/* ------------------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s -m group [-s] [options]\n"
		"  -m addr    multicast group (required); -L: the ping->pong group A\n"
		"  -g addr    -L: the pong->ping echo group B (default: group + 1)\n"
		"  -b addr    local address to bind (default 127.0.0.1)\n"
		"  -s         sender (default: receiver)\n"
		"  -o         sender joins as a send-only full member\n"
		"  -L ping|pong  latency mode: ping sends and times the echo, pong echoes\n"
		"  -S bytes   message size (default 64, at least 8)\n"
		"  -n count   messages (sender), per QP (receiver), round trips (ping)\n"
		"  -D secs    sender: run for this long instead of -n\n"
		"  -r rate    sender: at most this many messages/s (k, M suffixes)\n"
		"  -B n       WRs per ibv_post_send / receive repost chain (default 32)\n"
		"  -d n       queue depth per QP (default 2048)\n"
		"  -q n       receiver: QPs (one rdma_cm_id each) joined to the group\n"
		"  -e         receiver/pong/ping: sleep on the completion channel, not busy-poll\n"
		"  -w n       ping: warm-up round trips not counted (default 1000)\n"
		"  -O file    ping: write every round-trip time (ns, in order) to file\n"
		"  -R fd      write one byte to fd when joined and receives are posted\n"
		"  -I ms      stop when idle this long after the first message (1000)\n"
		"  -t ms      give up when nothing happens this long (30000; -T is the same)\n"
		"  -h, --help this text;  --version  umcast's version\n",
		prog);
}

static const struct perf_transport umcast = {
	.prog = prog,
	.name = "umcast",
	.optstring = "m:g:b:soL:S:n:D:r:B:d:q:ew:R:I:t:T:O:h",
	.size_max = 1 << 20,
	.batch_max = 4096,
	.usage = usage,
	.o = &o,
	.reserve = umc_reserve,
	.send = umc_send,
	.send_fin = umc_send_fin,
	.fin_gap = umc_fin_gap,
	.acct = umc_acct,
	.recv = umc_recv,
	.recv_idle = umc_recv_idle,
	.queue_name = umc_queue_name,
	.recv_end = umc_recv_end,
	.ping_prepare = umc_ping_prepare,
	.ping_send = umc_ping_send,
	.ping_recv = umc_ping_recv,
	.ping_after = umc_ping_after,
	.pong = umc_pong,
	.wait = wait_event,
};

int main(int argc, char **argv)
{
	char group2[INET6_ADDRSTRLEN];

	perf_parse_args(&umcast, argc, argv);
	if (o.sender && o.mode != PERF_MODE_BW)
		fail("-s and -L %s do not mix", o.mode == PERF_MODE_PING ? "ping" : "pong");
	if (o.mode != PERF_MODE_BW && !o.group2) {
		default_group2(group2, sizeof(group2));
		o.group2 = group2;
	}
	get_addr(o.bind, &g.src);
	get_addr(o.group, &g.dst);
	if (o.group2)
		get_addr(o.group2, &g.dst2);
	setup();
	perf_run(&umcast);
	teardown();
	return g.bad ? 4 : 0;
}
