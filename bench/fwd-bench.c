// SPDX-License-Identifier: MIT
/*
 * fwd-bench - the parts of bench/fwd-bench.sh that umc-perf has no role
 * for: an idle member, a timed stream, and the join window (how late, after
 * its join completed, a new member's first message was sent).  Written
 * against the public librdmacm/libibverbs API, on umc_ib0 (-b: its IPoIB
 * address).
 *
 *   fwd-bench member -m GROUP [-b ADDR] [-R FD]
 *       Join GROUP as a full member, its QP attached and receives posted,
 *       then read nothing (run it with UMC_RX_THREAD=0: the kernel drops
 *       what its socket cannot hold) until SIGTERM.  A port in the
 *       forwarding lists that costs the sender what a remote host would.
 *   fwd-bench stream -m GROUP [-b ADDR] [-r RATE] [-R FD]
 *       Join GROUP send-only and send RATE (default 20000) 64-byte messages
 *       a second until SIGTERM, each carrying its sequence number, the
 *       CLOCK_MONOTONIC time it was posted and the time the one before it
 *       was.
 *   fwd-bench window -m GROUP [-b ADDR] [-j JOINS] [-r RATE]
 *       JOINS (default 20) times: join GROUP as a full member and note the
 *       time T when the MULTICAST_JOIN event has been taken (the QP is
 *       attached then); receive for 200 ms; leave; 50 ms pause.  For each
 *       join, "late" is the send time of the earliest message received that
 *       was sent after T, minus T (a stream of RATE messages a second sends
 *       one every 1e6/RATE us, when the sender gets the CPU); the join
 *       missed messages when the one the stream sent just before that
 *       message (each carries the previous one's send time) was sent after
 *       T too.  Prints "result window joins=J period_us=P late_p50_us=..
 *       late_max_us=.. missed_joins=K" (K: joins that missed messages).
 *
 * Readiness by -R FD (one byte once joined), never by sleeping; every wait
 * is bounded.  Exit status 0, 1 on a failure (said on stderr), 2 on usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

enum { SLOT = 2048, NRECV = 512, MSG = 64, EV_MS = 10000, MAX_JOINS = 1000 };

static volatile sig_atomic_t stop;

static struct {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct sockaddr_in grp;
	struct ibv_ah *ah;
	uint32_t qpn, qkey;
} b;

static void die(const char *what)
{
	fprintf(stderr, "fwd-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The next CM event within EV_MS, of @type, or exit. */
static struct rdma_cm_event *event(enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	/* The channel blocks; a join or resolution that hangs ends at the script's timeout. */
	if (rdma_get_cm_event(b.ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != type) {
		fprintf(stderr, "fwd-bench: %s (status %d), expected %s\n", rdma_event_str(ev->event),
			ev->status, rdma_event_str(type));
		exit(1);
	}
	return ev;
}

static void post_recv(int slot)
{
	struct ibv_sge sge = {(uintptr_t)b.buf + (size_t)slot * SLOT, SLOT, b.mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(b.id->qp, &wr, &bad))
		die("ibv_post_recv");
}

/* An id on @bind's device (umc_ib0), its UD QP, receives posted. */
static void setup(const char *bind, const char *group)
{
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 256, .max_recv_wr = NRECV, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 0,
	};
	struct sockaddr_in src = {.sin_family = AF_INET};
	struct rdma_cm_event *ev;

	b.grp.sin_family = AF_INET;
	if (inet_pton(AF_INET, bind, &src.sin_addr) != 1 || inet_pton(AF_INET, group, &b.grp.sin_addr) != 1) {
		fprintf(stderr, "fwd-bench: -b and -m take IPv4 addresses\n");
		exit(2);
	}
	b.ch = rdma_create_event_channel();
	if (!b.ch || rdma_create_id(b.ch, &b.id, NULL, RDMA_PS_UDP))
		die("rdma_create_id");
	if (rdma_resolve_addr(b.id, (struct sockaddr *)&src, (struct sockaddr *)&b.grp, 2000))
		die("rdma_resolve_addr");
	ev = event(RDMA_CM_EVENT_ADDR_RESOLVED);
	rdma_ack_cm_event(ev);
	if (rdma_create_qp(b.id, NULL, &qa))
		die("rdma_create_qp");
	b.buf = calloc(NRECV + 1, SLOT);
	if (!b.buf || !(b.mr = ibv_reg_mr(b.id->pd, b.buf, (size_t)(NRECV + 1) * SLOT,
					  IBV_ACCESS_LOCAL_WRITE)))
		die("ibv_reg_mr");
	for (int i = 0; i < NRECV; i++)
		post_recv(i);
}

/* Join as a full or send-only member; the event's AH, QPN and Q_Key kept. */
static void join(bool sendonly)
{
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = sendonly ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
				       : RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)&b.grp,
	};
	struct rdma_cm_event *ev;

	if (rdma_join_multicast_ex(b.id, &ja, NULL))
		die("rdma_join_multicast_ex");
	ev = event(RDMA_CM_EVENT_MULTICAST_JOIN);
	if (!b.ah) {
		b.ah = ibv_create_ah(b.id->pd, &ev->param.ud.ah_attr);
		if (!b.ah)
			die("ibv_create_ah");
		b.qpn = ev->param.ud.qp_num;
		b.qkey = ev->param.ud.qkey;
	}
	rdma_ack_cm_event(ev); /* the QP is attached now (a full member's) */
}

static void ready(int fd)
{
	if (fd >= 0 && (write(fd, "r", 1) != 1 || close(fd)))
		die("-R");
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void run_member(int ready_fd)
{
	join(false);
	ready(ready_fd);
	while (!stop)
		pause();
}

/* Send one message: its sequence number, the time it is posted and the time the one before was. */
static void send_one(uint64_t seq)
{
	static int64_t prev = -1;
	uint8_t *p = b.buf + (size_t)NRECV * SLOT;
	int64_t t = now_ns();
	struct ibv_sge sge = {(uintptr_t)p, MSG, b.mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND}, *bad;
	struct ibv_wc wc[16];

	memcpy(p, &seq, 8);
	memcpy(p + 8, &t, 8);
	memcpy(p + 16, &prev, 8);
	prev = t;
	wr.wr.ud.ah = b.ah;
	wr.wr.ud.remote_qpn = b.qpn;
	wr.wr.ud.remote_qkey = b.qkey;
	wr.send_flags = seq % 64 == 0 ? IBV_SEND_SIGNALED : 0; /* the send queue drains */
	if (ibv_post_send(b.id->qp, &wr, &bad))
		die("ibv_post_send");
	while (ibv_poll_cq(b.id->send_cq, 16, wc) > 0)
		;
}

static void run_stream(double rate, int ready_fd)
{
	int64_t period = (int64_t)(1e9 / rate), next;
	uint64_t seq = 0;

	join(true);
	ready(ready_fd);
	next = now_ns();
	while (!stop) {
		send_one(seq++);
		next += period;
		while (!stop && now_ns() < next)
			; /* paced by spinning: a sleep's wake-up is coarser than the period */
	}
}

static int cmp_i64(const void *a, const void *c)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)c;

	return (x > y) - (x < y);
}

/*
 * One join: how late the first message sent after it was sent (ns), or -1:
 * none came; *@missed: the message the stream sent just before that one
 * was sent after the join too, and did not arrive.
 */
static int64_t one_window(bool *missed)
{
	int64_t t_join, first = -1, before = -1, end;
	struct ibv_wc wc[32];

	join(false);
	t_join = now_ns();
	end = t_join + 200 * 1000000ll;
	while (now_ns() < end) {
		int n = ibv_poll_cq(b.id->recv_cq, 32, wc);

		for (int i = 0; i < n; i++) {
			int64_t sent, prev;

			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "fwd-bench: receive %s\n", ibv_wc_status_str(wc[i].status));
				exit(1);
			}
			memcpy(&sent, b.buf + wc[i].wr_id * SLOT + 40 + 8, 8);
			memcpy(&prev, b.buf + wc[i].wr_id * SLOT + 40 + 16, 8);
			if (sent >= t_join && (first < 0 || sent < first)) {
				first = sent;
				before = prev;
			}
			post_recv((int)wc[i].wr_id);
		}
	}
	if (rdma_leave_multicast(b.id, (struct sockaddr *)&b.grp))
		die("rdma_leave_multicast");
	*missed = first >= 0 && before >= t_join;
	return first < 0 ? -1 : first - t_join;
}

static void run_window(int joins, double rate)
{
	int64_t period_ns = (int64_t)(1e9 / rate), late[MAX_JOINS];
	int missed = 0, none = 0;
	struct timespec pause_ts = {0, 50 * 1000000L};

	for (int j = 0; j < joins; j++) {
		bool m;

		late[j] = one_window(&m);
		if (late[j] < 0)
			none++;
		missed += m;
		nanosleep(&pause_ts, NULL); /* the leave reaches the SA */
	}
	if (none) {
		fprintf(stderr, "fwd-bench: %d joins received nothing\n", none);
		exit(1);
	}
	qsort(late, (size_t)joins, sizeof(late[0]), cmp_i64);
	printf("result window joins=%d period_us=%.1f late_p50_us=%.1f late_max_us=%.1f missed_joins=%d\n",
	       joins, period_ns / 1e3, late[joins / 2] / 1e3, late[joins - 1] / 1e3, missed);
}

static void usage(void)
{
	fprintf(stderr, "usage: fwd-bench member|stream|window -m GROUP [-b ADDR] [-r RATE] "
			"[-j JOINS] [-R FD]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *group = NULL, *bind = "127.0.0.2", *role;
	int opt, ready_fd = -1, joins = 20;
	double rate = 20000;
	struct sigaction sa = {.sa_handler = on_term};

	if (argc < 2)
		usage();
	role = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "m:b:r:j:R:")) != -1) {
		switch (opt) {
		case 'm':
			group = optarg;
			break;
		case 'b':
			bind = optarg;
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'j':
			joins = atoi(optarg);
			break;
		case 'R':
			ready_fd = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!group || rate < 1 || rate > 1e7 || joins < 1 || joins > MAX_JOINS)
		usage();
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	setup(bind, group);
	if (!strcmp(role, "member"))
		run_member(ready_fd);
	else if (!strcmp(role, "stream"))
		run_stream(rate, ready_fd);
	else if (!strcmp(role, "window"))
		run_window(joins, rate);
	else
		usage();
	return 0;
}
