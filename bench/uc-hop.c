// SPDX-License-Identifier: MIT
/*
 * uc-hop - what the RoCE unicast demultiplexer (link/roce/uc/) costs: the
 * round-trip time of a busy-polling UD ping-pong between two processes on
 * loopback, over
 *
 *   mc     two multicast groups (no demultiplexer: the baseline);
 *   self   unicast, the pinging process being the demultiplexer (as with
 *          ibv_ud_pingpong, whose server starts first);
 *   third  unicast, a third, idle process being the demultiplexer: both
 *          directions take the extra hop through it.
 *
 * uc-hop [-n round_trips] [-S size] [mode...]   (default: all three)
 *
 * Runs in a network namespace of its own when it can (tests/lib/isolate.h), so
 * no other umcast process takes part.  A measurement, not a test: numbers
 * depend on the machine and its load.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "isolate.h"
#include "verbs/verbs_int.h"

enum { NRECV = 64, SLOT = 4096, QKEY = 0x11111111 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void end_up(struct end *e)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 16, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_UD};
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY};

	for (int i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), "umc_lo"))
			e->ctx = ibv_open_device(l[i]);
	if (!e->ctx)
		die("umc_lo");
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 2 * NRECV, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &qa);
	if (!e->qp ||
	    ibv_modify_qp(e->qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("qp");
	at.qp_state = IBV_QPS_RTR;
	ibv_modify_qp(e->qp, &at, IBV_QP_STATE);
	at.qp_state = IBV_QPS_RTS;
	ibv_modify_qp(e->qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN);
	e->buf = aligned_alloc(64, (NRECV + 1) * SLOT);
	e->mr = ibv_reg_mr(e->pd, e->buf, (NRECV + 1) * SLOT, IBV_ACCESS_LOCAL_WRITE);
	for (uint64_t k = 0; k < NRECV; k++) {
		struct ibv_sge sge = {(uintptr_t)e->buf + k * SLOT, SLOT, e->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = k, .sg_list = &sge, .num_sge = 1}, *bad;

		ibv_post_recv(e->qp, &wr, &bad);
	}
	ibv_free_device_list(l);
}

static struct ibv_ah *ah_for(struct end *e, const char *ip)
{
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1, .grh = {.hop_limit = 64}};

	aa.grh.dgid.raw[10] = aa.grh.dgid.raw[11] = 0xff;
	inet_pton(AF_INET, ip, aa.grh.dgid.raw + 12);
	return ibv_create_ah(e->pd, &aa);
}

/* Receive into the group @ip (attach and join). */
static void join(struct end *e, const char *ip)
{
	union ibv_gid g = {0};

	g.raw[10] = g.raw[11] = 0xff;
	inet_pton(AF_INET, ip, g.raw + 12);
	if (ibv_attach_mcast(e->qp, &g, 0) || umc_dev_member(ctx_dev(e->ctx), &g, +1))
		die("join");
}

/* Send @size bytes if @send, then busy-poll for that send's completion and, if @recv, one receive.
 */
static void xfer(struct end *e, struct ibv_ah *ah, uint32_t dqpn, uint32_t size, bool send,
		 bool recv)
{
	struct ibv_sge sge = {(uintptr_t)e->buf + NRECV * SLOT, size, e->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED,
				 .wr.ud = {.ah = ah, .remote_qpn = dqpn, .remote_qkey = QKEY}},
			   *bad;
	bool got_recv = !recv, got_send = !send;

	if (send && ibv_post_send(e->qp, &wr, &bad))
		die("post_send");
	while (!got_recv || !got_send) {
		struct ibv_wc wc;

		if (ibv_poll_cq(e->cq, 1, &wc) != 1)
			continue;
		if (wc.status != IBV_WC_SUCCESS)
			die("completion");
		if (wc.opcode == IBV_WC_SEND) {
			got_send = true;
			continue;
		}
		struct ibv_sge rs = {(uintptr_t)e->buf + wc.wr_id * SLOT, SLOT, e->mr->lkey};
		struct ibv_recv_wr rw = {.wr_id = wc.wr_id, .sg_list = &rs, .num_sge = 1}, *rb;

		ibv_post_recv(e->qp, &rw, &rb);
		got_recv = true;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One mode, in a process of its own: prints its line and exits. */
static void run(const char *mode, int n, uint32_t size)
{
	bool mc = !strcmp(mode, "mc"), third = !strcmp(mode, "third");
	int p2c[2], c2p[2], idle[2] = {-1, -1}, warm = n / 10;
	uint32_t qpn, mine;
	pid_t pong, mux = 0;
	struct end e = {0};
	char c;

	if (pipe(p2c) || pipe(c2p) || (third && pipe(idle)))
		die("pipe");
	/* The first QP of a namespace makes its process the demultiplexer. */
	if (third && (mux = fork()) == 0) {
		close(idle[1]);
		end_up(&e);
		if (write(c2p[1], "m", 1) != 1 || read(idle[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	if (third && read(c2p[0], &c, 1) != 1)
		die("demultiplexer");
	end_up(&e); /* self: the pinging process is the demultiplexer */
	if (mc)
		join(&e, "239.88.0.1");
	mine = e.qp->qp_num;
	if ((pong = fork()) == 0) { /* the echo side: a new HCA (a child of fork) */
		struct end f = {0};
		struct ibv_ah *ah;

		end_up(&f);
		if (mc)
			join(&f, "239.88.0.2");
		qpn = f.qp->qp_num;
		if (write(c2p[1], &qpn, 4) != 4)
			_exit(1);
		ah = ah_for(&f, mc ? "239.88.0.1" : "127.0.0.1");
		for (int i = 0; i < n + warm; i++) {
			xfer(&f, ah, 0, 0, false, true);
			xfer(&f, ah, mc ? 0xffffff : mine, size, true, false);
		}
		_exit(0);
	}
	if (read(c2p[0], &qpn, 4) != 4)
		die("handshake");
	struct ibv_ah *ah = ah_for(&e, mc ? "239.88.0.2" : "127.0.0.1");
	uint64_t *rtt = calloc((size_t)n, sizeof(*rtt));

	for (int i = 0; i < n + warm; i++) {
		uint64_t t0 = now_ns();

		xfer(&e, ah, mc ? 0xffffff : qpn, size, true, true);
		if (i >= warm)
			rtt[i - warm] = now_ns() - t0;
	}
	waitpid(pong, NULL, 0);
	if (third) {
		close(idle[1]);
		waitpid(mux, NULL, 0);
	}
	qsort(rtt, (size_t)n, sizeof(*rtt), cmp_u64);
	printf("%-6s %5u B  round trip us: p50 %7.1f  p90 %7.1f  p99 %7.1f  (%d round trips)\n",
	       mode, size, rtt[n / 2] / 1e3, rtt[n * 9 / 10] / 1e3, rtt[n * 99 / 100] / 1e3, n);
	fflush(stdout);
	free(rtt);
	exit(0);
}

int main(int argc, char **argv)
{
	const char *modes[] = {"mc", "self", "third"};
	uint32_t size = 64;
	int n = 20000, opt, first;

	while ((opt = getopt(argc, argv, "n:S:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'S')
			size = (uint32_t)atoi(optarg);
		else
			return 2;
	}
	if (n < 10 || size > SLOT - 40)
		return 2;
	if (!t_isolate_netns())
		printf("# no namespace of our own: other umcast processes may take part\n");
	first = optind;
	for (int i = 0; i < (first < argc ? argc - first : 3); i++) {
		const char *m = first < argc ? argv[first + i] : modes[i];
		pid_t p = fork();

		if (p == 0)
			run(m, n,
			    size); /* each mode in a fresh process tree: its own demultiplexer */
		waitpid(p, NULL, 0);
	}
	return 0;
}
