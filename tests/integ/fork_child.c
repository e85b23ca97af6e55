// SPDX-License-Identifier: MIT
/*
 * fork_child - a child of fork(2) is a new HCA (umcast(7), section FORK).
 *
 *   fork_child create [N]  while the parent's background receive thread is
 *                          busy with a stream, N children (default 40) each
 *                          create an event channel, an id, a QP through
 *                          rdma_create_qp, join a group of their own, send
 *                          20 messages to it and receive every one of them.
 *                          No child hangs (a watchdog kills it after
 *                          CHILD_MS); each sees a device of its own (another
 *                          ibv_device, another GUID, QPNs from its own pid).
 *   fork_child drain [R]   R rounds (default 4): a child polls while a sender
 *                          sends 200 messages to the parent's group; the
 *                          parent receives 200 of 200.  In odd rounds the
 *                          child joined that group too and receives its own
 *                          200.  After each child has gone, the parent is
 *                          still a member (/proc/net/igmp) and receives.
 *   fork_child epoll       the parent has six groups (so its receive engine
 *                          asks epoll which sockets are ready); a child's
 *                          new group never enters the parent's epoll set
 *                          (/proc/self/fdinfo) while the child sends to it
 *                          and the parent polls.
 *   fork_child inherited   in the child, every verb and rdma_* call on the
 *                          parent's objects fails with EIO at once (void
 *                          ones return), the child holds none of the
 *                          library's sockets, epoll or eventfd descriptors
 *                          (the user-visible channel fds read as /dev/null),
 *                          a device of the parent's list opens the child's
 *                          own device, and the parent is not disturbed.
 *
 * Processes: the sender S is forked before any umcast state exists and
 * obeys one-line commands on a pipe; the test's main process is the parent
 * P.  Every wait is bounded; readiness is a byte on a pipe, never a sleep.
 * Groups are 239.P1.P2.N with P1.P2 from the pid of the process that owns
 * the group, so concurrent runs never share one.
 *
 * Messages are 64 bytes: the seq (big-endian) and a pattern of it.  A
 * receiver checks status, byte_len and that seqs arrive in order with no
 * gap or duplicate.  Exit status 0 when every check passed.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <net/if.h>
#include <errno.h>
#include <fcntl.h>
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

#include "verbs/verbs_int.h" /* the parent's device: epoll fd, group sockets */
#include "wait.h"

enum {
	NRECV = 256,
	SLOT = 40 + 64,
	MSG = 64,
	BURST = 20,
	WAIT_MS = 10000,  /* bound on any wait for datagrams or a reply */
	CHILD_MS = 15000, /* a child that takes longer is hung */
	G_DECOY = 1,	  /* 239.P1.P2.1: an IP membership only (igmp_decoy) */
	G_PARENT = 200,	  /* 239.P1.P2.200: the parent's group; 201..205 its others */
	G_CHILD = 210,	  /* 239.C1.C2.210: a child's own group */
};

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures++;
}

/* 239.P1.P2.@n for the process @pid. */
static struct sockaddr_in group_of(pid_t pid, unsigned n)
{
	struct sockaddr_in g = {.sin_family = AF_INET};
	unsigned p = (unsigned)pid;

	g.sin_addr.s_addr = htonl(239u << 24 | ((p >> 8) & 0xff) << 16 | (p & 0xff) << 8 | n);
	return g;
}

static struct sockaddr_in loopback(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* Wait up to @ms for @fd to be readable; then read one byte into *@b. */
static bool wait_byte(int fd, int ms, char *b)
{
	return t_read_full(fd, b, 1, ms);
}

static bool put_byte(int fd, char b)
{
	return write(fd, &b, 1) == 1;
}

/* ------------------------------------------------------------------------- */
/* An endpoint: what an mckey-like program builds through the CM.            */

struct ep {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint32_t rqpn, rqkey;
	struct sockaddr_in grp[6];
	int ngrp;
	uint32_t next_seq; /* next seq this endpoint must receive */
	bool bad_order;
};

static struct rdma_cm_event *cm_event(struct ep *e, int ms)
{
	struct pollfd p = {.fd = e->ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(e->ch, &ev))
		return NULL;
	return ev;
}

static int post_slot(struct ep *e, uint64_t k)
{
	struct ibv_sge sge = {(uintptr_t)e->buf + k * SLOT, SLOT, e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = k, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(e->id->qp, &wr, &bad);
}

/* Join @g on the endpoint's id; the first join also makes the AH. */
static const char *ep_join(struct ep *e, struct sockaddr_in g, bool full)
{
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = full ? RDMA_MC_JOIN_FLAG_FULLMEMBER
				   : RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
	};
	struct rdma_cm_event *ev;

	e->grp[e->ngrp] = g;
	ja.addr = (struct sockaddr *)&e->grp[e->ngrp];
	if (rdma_join_multicast_ex(e->id, &ja, e))
		return "rdma_join_multicast_ex";
	ev = cm_event(e, WAIT_MS);
	if (!ev)
		return "no MULTICAST_JOIN event";
	if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN || ev->status) {
		rdma_ack_cm_event(ev);
		return "MULTICAST_JOIN failed";
	}
	if (e->ngrp++ == 0) {
		e->ah = ibv_create_ah(e->id->pd, &ev->param.ud.ah_attr);
		e->rqpn = ev->param.ud.qp_num;
		e->rqkey = ev->param.ud.qkey;
	}
	rdma_ack_cm_event(ev);
	return e->ah ? NULL : "ibv_create_ah";
}

/* Channel, id on 127.0.0.1, QP, receives posted, join @g; NULL or the failed step. */
static const char *ep_open(struct ep *e, struct sockaddr_in g, bool full)
{
	struct sockaddr_in src = loopback();
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 16, .max_recv_wr = NRECV, .max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
	};
	struct rdma_cm_event *ev;

	memset(e, 0, sizeof(*e));
	e->ch = rdma_create_event_channel();
	if (!e->ch)
		return "rdma_create_event_channel";
	if (rdma_create_id(e->ch, &e->id, e, RDMA_PS_UDP))
		return "rdma_create_id";
	if (rdma_resolve_addr(e->id, (struct sockaddr *)&src, (struct sockaddr *)&g, 2000))
		return "rdma_resolve_addr";
	ev = cm_event(e, WAIT_MS);
	if (!ev)
		return "no ADDR_RESOLVED event";
	rdma_ack_cm_event(ev);
	if (rdma_create_qp(e->id, NULL, &qa))
		return "rdma_create_qp";
	e->buf = calloc(NRECV + 1, SLOT);
	if (!e->buf)
		return "calloc";
	e->mr = ibv_reg_mr(e->id->pd, e->buf, (size_t)(NRECV + 1) * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		return "ibv_reg_mr";
	for (int k = 0; k < NRECV; k++)
		if (post_slot(e, (uint64_t)k))
			return "ibv_post_recv";
	return ep_join(e, g, full);
}

static void ep_close(struct ep *e)
{
	for (int i = 0; i < e->ngrp; i++)
		rdma_leave_multicast(e->id, (struct sockaddr *)&e->grp[i]);
	if (e->ah)
		ibv_destroy_ah(e->ah);
	if (e->id)
		rdma_destroy_qp(e->id);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->id)
		rdma_destroy_id(e->id);
	if (e->ch)
		rdma_destroy_event_channel(e->ch);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

/* Send message @seq to the first group and wait for its send completion. */
static bool ep_send(struct ep *e, uint32_t seq)
{
	uint8_t *p = e->buf + (size_t)NRECV * SLOT; /* the slot never posted */
	struct ibv_sge sge = {(uintptr_t)p, MSG, e->mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = seq, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.wr.ud = {.ah = e->ah, .remote_qpn = e->rqpn, .remote_qkey = e->rqkey},
	}, *bad;
	uint32_t be = htonl(seq);
	uint64_t deadline = t_now_ms() + WAIT_MS;
	struct ibv_wc wc;

	memcpy(p, &be, 4);
	memset(p + 4, (int)(seq & 0xff), MSG - 4);
	if (ibv_post_send(e->id->qp, &wr, &bad))
		return false;
	while (t_now_ms() < deadline) {
		int n = ibv_poll_cq(e->id->send_cq, 1, &wc);

		if (n == 1)
			return wc.status == IBV_WC_SUCCESS && wc.wr_id == seq;
		if (n < 0)
			return false;
	}
	return false;
}

/* One receive completion: in order, the right bytes; the slot is posted again. */
static bool ep_take(struct ep *e, const struct ibv_wc *wc)
{
	const uint8_t *b = e->buf + wc->wr_id * SLOT + 40;
	uint32_t seq;

	if (wc->status != IBV_WC_SUCCESS || wc->byte_len != 40 + MSG || wc->wr_id >= NRECV)
		return false;
	memcpy(&seq, b, 4);
	seq = ntohl(seq);
	if (seq != e->next_seq || b[MSG - 1] != (uint8_t)seq)
		e->bad_order = true;
	e->next_seq = seq + 1;
	return post_slot(e, wc->wr_id) == 0;
}

/*
 * Receive until @n more messages arrived, or @ms passed, or (@stop >= 0)
 * a byte arrives on @stop and nothing more is waiting.  Returns how many.
 */
static unsigned ep_recv(struct ep *e, unsigned n, int ms, int stop)
{
	uint64_t deadline = t_now_ms() + (uint64_t)ms;
	unsigned got = 0;
	struct ibv_wc wc[16];
	bool stopping = false;

	while (got < n && t_now_ms() < deadline) {
		int k = ibv_poll_cq(e->id->recv_cq, n - got < 16 ? (int)(n - got) : 16, wc);

		if (k < 0)
			break;
		for (int i = 0; i < k; i++)
			if (ep_take(e, &wc[i]))
				got++;
		if (k)
			continue;
		if (stopping)
			break;
		if (stop >= 0) {
			struct pollfd p = {.fd = stop, .events = POLLIN};

			stopping = poll(&p, 1, 0) == 1;
		}
	}
	return got;
}

/* ------------------------------------------------------------------------- */
/* The sender: forked before any umcast state, sends to the parent's group.  */

static int sender_main(int cmd, int rep, struct sockaddr_in g)
{
	struct ep e;
	char line[64];
	uint32_t seq = 0;

	if (ep_open(&e, g, false)) {
		put_byte(rep, 'E');
		return 1;
	}
	put_byte(rep, 'r');
	for (;;) {
		char c;
		unsigned n;

		if (!wait_byte(cmd, 4 * CHILD_MS * 10, &c))
			break;
		if (c == 'q')
			break;
		if (c == 'b') { /* a burst of BURST messages */
			for (n = 0; n < BURST; n++)
				if (!ep_send(&e, seq++))
					break;
			put_byte(rep, n == BURST ? 'k' : 'E');
		} else if (c == 's') { /* stream until the next byte */
			struct pollfd p = {.fd = cmd, .events = POLLIN};

			put_byte(rep, 'k');
			do {
				for (n = 0; n < 32; n++)
					ep_send(&e, seq++);
			} while (poll(&p, 1, 0) == 0);
			(void)!read(cmd, line, 1);
			put_byte(rep, 'k');
		}
	}
	ep_close(&e);
	return 0;
}

static struct {
	pid_t pid;
	int cmd, rep;
} snd;

static void sender_start(struct sockaddr_in g)
{
	int down[2], up[2];
	char c;

	if (pipe(down) || pipe(up)) {
		perror("pipe");
		exit(1);
	}
	snd.pid = fork();
	if (snd.pid < 0) {
		perror("fork");
		exit(1);
	}
	if (snd.pid == 0) {
		close(down[1]);
		close(up[0]);
		_exit(sender_main(down[0], up[1], g));
	}
	close(down[0]);
	close(up[1]);
	snd.cmd = down[1];
	snd.rep = up[0];
	if (!wait_byte(snd.rep, WAIT_MS, &c) || c != 'r') {
		fail("the sender did not start");
		exit(1);
	}
}

/* Send @c to the sender and wait for its 'k'. */
static bool sender_do(char c)
{
	char r;

	return put_byte(snd.cmd, c) && wait_byte(snd.rep, WAIT_MS, &r) && r == 'k';
}

static void sender_stop(void)
{
	put_byte(snd.cmd, 'q');
	if (t_reap(snd.pid, WAIT_MS) != 0)
		fail("the sender did not exit cleanly");
}

/* Fork a child running @fn(@arg); returns its pid. */
static pid_t child(int (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0)
		exit(fn(arg)); /* exit(): sanitizers and valgrind report at exit */
	return pid;
}

/* Two pipes between the parent and one child: the child writes up[1], reads down[0]. */
struct chat {
	int up[2], down[2];
	bool join_parents; /* drain: the child joins the parent's group */
};

static pid_t chat_start(struct chat *c, int (*fn)(void *))
{
	if (pipe(c->up) || pipe(c->down)) {
		perror("pipe");
		exit(1);
	}
	return child(fn, c);
}

static void chat_close(struct chat *c)
{
	close(c->up[0]);
	close(c->up[1]);
	close(c->down[0]);
	close(c->down[1]);
}

/* The child's exit status must be 0, within CHILD_MS. */
static bool child_ok(pid_t pid, const char *what)
{
	int st = t_reap(pid, CHILD_MS);

	if (st == -1) {
		fail("%s: child %d hung (killed after %d ms)", what, (int)pid, CHILD_MS);
		return false;
	}
	if (st) {
		fail("%s: child %d exited with status %d (128 + a signal)", what, (int)pid, st);
		return false;
	}
	return true;
}

/* Is IPv4 group @g listed for interface lo in /proc/net/igmp? */
static bool igmp_member(struct sockaddr_in g)
{
	FILE *f = fopen("/proc/net/igmp", "r");
	char line[256], want[16], ifname[32];
	bool lo = false, found = false;
	int idx;

	if (!f)
		return false;
	/*
	 * The kernel prints the address as the __be32 read as a host integer.
	 * An interface line ("Idx Device : ...") starts in column 0; a group
	 * line starts with a tab, and its address may start with digits
	 * ("01C0FFEF" is 239.255.192.1), which must not pass for an Idx.
	 */
	snprintf(want, sizeof(want), "%08X", g.sin_addr.s_addr);
	while (!found && fgets(line, sizeof(line), f)) {
		if (line[0] != '\t' && line[0] != ' ' && sscanf(line, "%d %31s", &idx, ifname) == 2)
			lo = strcmp(ifname, "lo") == 0;
		else if (lo && strstr(line, want))
			found = true;
	}
	fclose(f);
	return found;
}

/*
 * A plain IP membership of 239.P1.P2.1 on lo, made after the parent's
 * group (drain only: the inherited scenario checks that a child holds no
 * socket of its parent's): /proc/net/igmp lists it first, on a line that starts with digits
 * ("01..."), as groups other tests join on lo at the same time can (an MLID
 * group 239.255.192.1 is "01C0FFEF").  igmp_member() must see past it.
 * Returns the socket (kept for the process's life) or -1.
 */
static int igmp_decoy(void)
{
	struct sockaddr_in g = group_of(getpid(), G_DECOY);
	struct ip_mreqn mr = {.imr_multiaddr = g.sin_addr, .imr_ifindex = (int)if_nametoindex("lo")};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* ------------------------------------------------------------------------- */
/* What every child checks about its own device, then its own traffic.       */

static struct ep par;	  /* the parent's endpoint (the child's copy in a child) */
static __be64 par_guid; /* the GUID of the parent's device, read before any fork */

/* The child's endpoint must live on a device of its own. */
static const char *own_device(struct ep *e)
{
	struct ibv_device *mine = e->id->verbs->device, *parents = par.id->verbs->device;
	const char *env = getenv("UMC_QPN_BASE");
	uint32_t base = UMC_QPN_FIRST + ((uint32_t)getpid() % 0x3fff) * UMC_QPN_STRIDE;

	if (mine == parents)
		return "the child's id is on the parent's ibv_device";
	if (ibv_get_device_guid(mine) == par_guid)
		return "the child's device has the parent's GUID";
	if (strcmp(ibv_get_device_name(mine), ibv_get_device_name(parents)))
		return "the child's device is not the same interface's";
	if (!(env && *env) && e->id->qp->qp_num != base)
		return "the child's first QPN is not from its own pid";
	return NULL;
}

/* Join the child's own group, send 20 messages to it, receive all 20. */
static int child_own_group(void *arg)
{
	struct ep e;
	const char *why = ep_open(&e, group_of(getpid(), G_CHILD), true);

	(void)arg;
	if (!why)
		why = own_device(&e);
	for (uint32_t s = 0; !why && s < BURST; s++)
		if (!ep_send(&e, s))
			why = "ibv_post_send to its own group";
	if (!why && ep_recv(&e, BURST, WAIT_MS, -1) != BURST)
		why = "did not receive its own 20 messages";
	if (!why && e.bad_order)
		why = "its own messages out of order";
	ep_close(&e);
	if (why) {
		fail("child: %s (errno %d)", why, errno);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* create: no child hangs while the parent's receive thread is busy.         */

static void scenario_create(int n)
{
	int hung = 0, bad = 0;

	if (!sender_do('s')) {
		fail("the sender did not start streaming");
		return;
	}
	for (int i = 0; i < n; i++) {
		pid_t pid = child(child_own_group, NULL);
		int st = t_reap(pid, CHILD_MS);

		if (st == -1)
			hung++;
		else if (st)
			bad++;
	}
	if (!sender_do('x'))
		fail("the sender did not stop streaming");
	printf("create: %d children, %d hung, %d failed\n", n, hung, bad);
	if (hung || bad)
		fail("%d of %d children hung, %d failed", hung, n, bad);
	/* The parent's thread was receiving all along: its receives are full. */
	if (ep_recv(&par, 1, WAIT_MS, -1) != 1)
		fail("the parent received nothing of the stream");
}

/* ------------------------------------------------------------------------- */
/* drain: a polling child never takes the parent's datagrams.                */

/* Joins a group, says so, and polls until told to stop (or has its 200). */
static int child_poller(void *arg)
{
	struct chat *p = arg;
	struct sockaddr_in g = p->join_parents ? par.grp[0] : group_of(getpid(), G_CHILD);
	unsigned want = p->join_parents ? 200 : 0, got;
	struct ep e;
	const char *why = ep_open(&e, g, true);

	if (!why)
		why = own_device(&e);
	e.next_seq = par.next_seq; /* the sender's next message, as for the parent */
	if (why) {
		fail("poller: %s (errno %d)", why, errno);
		return 1;
	}
	put_byte(p->up[1], 'r');
	/* Poll until told to stop; a member of the parent's group waits for its 200. */
	got = ep_recv(&e, want ? want : 1, 3 * WAIT_MS, want ? -1 : p->down[0]);
	ep_close(&e);
	if (got != want || e.bad_order) {
		fail("poller (member of the parent's group: %d): received %u, expected %u%s",
		     p->join_parents, got, want, e.bad_order ? ", out of order" : "");
		return 1;
	}
	return 0;
}

static void scenario_drain(int rounds)
{
	int decoy = igmp_decoy();

	if (decoy < 0)
		fail("drain: the decoy IP membership failed (errno %d)", errno);
	for (int r = 0; r < rounds; r++) {
		struct chat p = {.join_parents = r & 1};
		pid_t pid = chat_start(&p, child_poller);
		unsigned got = 0;
		char c;

		if (!wait_byte(p.up[0], WAIT_MS, &c)) {
			fail("drain round %d: the child did not start", r);
		} else {
			for (int b = 0; b < 200 / BURST; b++) {
				if (!sender_do('b')) {
					fail("drain round %d: the sender failed", r);
					break;
				}
				got += ep_recv(&par, BURST, WAIT_MS, -1);
			}
		}
		put_byte(p.down[1], 's');
		child_ok(pid, "drain");
		printf("drain round %d (child %s): the parent received %u of 200\n", r,
		       p.join_parents ? "joined the same group" : "on its own group", got);
		if (got != 200 || par.bad_order)
			fail("drain round %d: the parent received %u of 200%s", r, got,
			     par.bad_order ? ", out of order" : "");
		/* The child closed its copies: the parent is still a member and receives. */
		if (!igmp_member(par.grp[0]))
			fail("drain round %d: the parent's group left /proc/net/igmp", r);
		if (!sender_do('b') || ep_recv(&par, BURST, WAIT_MS, -1) != BURST)
			fail("drain round %d: the parent stopped receiving after the child exited",
			     r);
		chat_close(&p);
	}
	if (decoy >= 0)
		close(decoy);
}

/* ------------------------------------------------------------------------- */
/* epoll: a child's group never enters the parent's epoll set.               */

/* The fds in @epfd's interest list (/proc/self/fdinfo), up to @max; returns the count. */
static int epoll_fds(int epfd, int *fds, int max)
{
	char path[64], line[256];
	int n = 0, tfd;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "tfd: %d", &tfd) == 1 && n < max)
			fds[n++] = tfd;
	fclose(f);
	return n;
}

/*
 * The parent's epoll set holds exactly its own receive endpoints (group
 * sockets), or none of them while it is receiving, and the background
 * thread's kick (progress.c __umc_rx_epoll): read under watch_lock, which
 * the thread takes to fill or empty it.
 */
static void check_parent_epoll(const char *when)
{
	struct umc_device *dev = ctx_dev(par.id->verbs);
	int fds[16], n, want;

	pthread_mutex_lock(&dev->watch_lock);
	n = epoll_fds(dev->rx_epfd, fds, 16);
	want = dev->rx_epolled ? dev->rx_nep : 0;
	pthread_mutex_unlock(&dev->watch_lock);
	for (int i = 0; i < n; i++) /* the background thread's kick is no endpoint */
		if (fds[i] == dev->rx_kick)
			fds[i--] = fds[--n];
	if (n != want) {
		fail("epoll %s: the parent's epoll set has %d fds, it should have %d (%d group sockets)",
		     when, n, want, dev->rx_nep);
		return;
	}
	for (int i = 0; i < n; i++) {
		bool mine = false;

		for (int k = 0; k < dev->rx_nep; k++)
			mine |= dev->rx_eps[k]->fd == fds[i];
		if (!mine)
			fail("epoll %s: fd %d in the parent's epoll set is no group socket of it",
			     when, fds[i]);
	}
}

/* Joins its own group, then sends to it on the parent's word. */
static int child_talker(void *arg)
{
	struct chat *t = arg;
	struct ep e;
	const char *why = ep_open(&e, group_of(getpid(), G_CHILD), true);
	char c;

	if (!why && !put_byte(t->up[1], 'j'))
		why = "pipe";
	if (!why && !wait_byte(t->down[0], WAIT_MS, &c))
		why = "no go from the parent";
	for (uint32_t s = 0; !why && s < 5 * BURST; s++)
		if (!ep_send(&e, s))
			why = "ibv_post_send";
	if (!why && ep_recv(&e, 5 * BURST, WAIT_MS, -1) != 5 * BURST)
		why = "did not receive its own messages";
	if (!why && !put_byte(t->up[1], 'd'))
		why = "pipe";
	if (!why && !wait_byte(t->down[0], WAIT_MS, &c))
		why = "no exit from the parent";
	ep_close(&e);
	if (why) {
		fail("talker: %s", why);
		return 1;
	}
	return 0;
}

static void scenario_epoll(void)
{
	struct chat t = {0};
	struct ibv_wc wc;
	char c = 0;
	pid_t pid;

	for (unsigned k = 1; k <= 5; k++) {
		const char *why = ep_join(&par, group_of(getpid(), G_PARENT + k), true);

		if (why) {
			fail("epoll: parent: %s", why);
			return;
		}
	}
	pid = chat_start(&t, child_talker);
	if (!wait_byte(t.up[0], WAIT_MS, &c) || c != 'j') {
		fail("epoll: the child did not join");
	} else {
		check_parent_epoll("after the child's join");
		put_byte(t.down[1], 'g');
		/* Poll (the epoll path: six groups) while the child's group has traffic. */
		uint64_t deadline = t_now_ms() + WAIT_MS;
		struct pollfd p = {.fd = t.up[0], .events = POLLIN};

		while (t_now_ms() < deadline && poll(&p, 1, 0) == 0)
			if (ibv_poll_cq(par.id->recv_cq, 1, &wc) == 1)
				fail("epoll: the parent received a completion, nothing was sent to it");
		check_parent_epoll("while the child sent");
	}
	put_byte(t.down[1], 'x');
	child_ok(pid, "epoll");
	if (!sender_do('b') || ep_recv(&par, BURST, WAIT_MS, -1) != BURST || par.bad_order)
		fail("epoll: the parent stopped receiving its own group");
	chat_close(&t);
}

/* ------------------------------------------------------------------------- */
/* inherited: the parent's objects in the child.                             */

/* Raw verbs objects of the parent, besides its CM endpoint. */
static struct {
	struct ibv_device **list;
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct rdma_cm_id *id2;	  /* resolved, its event held unacked */
	struct rdma_cm_event *ev; /* that event */
	uint8_t buf[4096];
	union ibv_gid mgid;
} pv;

static const char *parent_verbs(void)
{
	struct sockaddr_in src = loopback();
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x01234567};
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1};
	int n;

	pv.list = ibv_get_device_list(&n);
	for (int i = 0; pv.list && i < n; i++)
		if (!strcmp(ibv_get_device_name(pv.list[i]), "umc_lo"))
			pv.dev = pv.list[i];
	if (!pv.dev)
		return "no umc_lo";
	pv.ctx = ibv_open_device(pv.dev);
	pv.pd = pv.ctx ? ibv_alloc_pd(pv.ctx) : NULL;
	if (!pv.pd)
		return "ibv_open_device/ibv_alloc_pd";
	pv.mr = ibv_reg_mr(pv.pd, pv.buf, sizeof(pv.buf), IBV_ACCESS_LOCAL_WRITE);
	pv.cc = ibv_create_comp_channel(pv.ctx);
	pv.cq = pv.cc ? ibv_create_cq(pv.ctx, 8, NULL, pv.cc, 0) : NULL;
	if (!pv.mr || !pv.cq)
		return "ibv_reg_mr/ibv_create_comp_channel/ibv_create_cq";
	qa.send_cq = qa.recv_cq = pv.cq;
	pv.qp = ibv_create_qp(pv.pd, &qa);
	if (!pv.qp || ibv_modify_qp(pv.qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							IBV_QP_QKEY))
		return "ibv_create_qp/ibv_modify_qp(INIT)";
	at.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(pv.qp, &at, IBV_QP_STATE))
		return "ibv_modify_qp(RTR)";
	umc_gid_from_sockaddr(&pv.mgid, (struct sockaddr *)&par.grp[0]);
	if (ibv_attach_mcast(pv.qp, &pv.mgid, 0))
		return "ibv_attach_mcast";
	aa.grh.dgid = pv.mgid;
	pv.ah = ibv_create_ah(pv.pd, &aa);
	if (!pv.ah)
		return "ibv_create_ah";
	for (int k = 0; k < 4; k++) {
		struct ibv_sge sge = {(uintptr_t)pv.buf + (size_t)k * 1024, 1024, pv.mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)k, .sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_recv(pv.qp, &wr, &bad))
			return "ibv_post_recv";
	}
	if (ibv_req_notify_cq(pv.cq, 0))
		return "ibv_req_notify_cq";
	if (rdma_create_id(par.ch, &pv.id2, NULL, RDMA_PS_UDP) ||
	    rdma_resolve_addr(pv.id2, (struct sockaddr *)&src, (struct sockaddr *)&par.grp[0],
			      2000))
		return "rdma_create_id/rdma_resolve_addr";
	pv.ev = cm_event(&par, WAIT_MS);
	return pv.ev ? NULL : "no ADDR_RESOLVED event";
}

static unsigned checks;

/* An int verb that returns the errno: EIO. */
#define EXPECT_RET(call)                                                                           \
	do {                                                                                       \
		int r_ = (call);                                                                   \
		checks++;                                                                          \
		if (r_ != EIO)                                                                     \
			fail("%s returned %d, expected EIO", #call, r_);                          \
	} while (0)
/* A call that returns -1 (or NULL) and sets errno: EIO. */
#define EXPECT_ERRNO(call, failed)                                                                 \
	do {                                                                                       \
		errno = 0;                                                                         \
		checks++;                                                                          \
		if (!((call)failed) || errno != EIO)                                               \
			fail("%s did not fail with EIO (errno %d)", #call, errno);                \
	} while (0)
#define EXPECT_NULL(call) EXPECT_ERRNO(call, == NULL)
#define EXPECT_M1(call) EXPECT_ERRNO(call, == -1)

/* No socket, epoll or eventfd of the parent's is open in the child. */
static void check_child_fds(const int *user_fds, int nuser)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d) {
		fail("cannot list /proc/self/fd");
		return;
	}
	while ((de = readdir(d))) {
		char path[300], target[256];
		int fd = atoi(de->d_name);
		bool user = false;
		ssize_t n;

		if (de->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		for (int i = 0; i < nuser; i++)
			user |= user_fds[i] == fd;
		if (user && strcmp(target, "/dev/null"))
			fail("channel fd %d is %s in the child, not /dev/null", fd, target);
		if (!user && (!strncmp(target, "socket:", 7) || !strncmp(target, "anon_inode:", 11)))
			fail("the child still holds the parent's descriptor %d (%s)", fd, target);
	}
	closedir(d);
}

static void check_inherited_verbs(void)
{
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_RTS};
	struct ibv_qp_init_attr qia = {.send_cq = pv.cq, .recv_cq = pv.cq, .qp_type = IBV_QPT_UD,
				       .cap = {.max_send_wr = 1, .max_recv_wr = 1}};
	struct ibv_sge sge = {(uintptr_t)pv.buf, 64, pv.mr->lkey};
	struct ibv_send_wr swr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .wr.ud = {.ah = pv.ah, .remote_qpn = 0xffffff,
					    .remote_qkey = 0x01234567}},
			   *sbad = NULL;
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *rbad = NULL;
	struct ibv_ah_attr aa = {.is_global = 1, .port_num = 1, .grh.dgid = pv.mgid};
	struct ibv_wc wc = {.wc_flags = IBV_WC_GRH};
	struct ibv_grh grh;
	struct ibv_cq *evcq;
	void *evctx;
	union ibv_gid gid;
	__be16 pkey;

	memset(&grh, 0, sizeof(grh));
	EXPECT_RET(ibv_query_device(pv.ctx, &da));
	EXPECT_RET(ibv_query_port(pv.ctx, 1, &pa));
	EXPECT_M1(ibv_query_gid(pv.ctx, 1, 0, &gid));
	EXPECT_M1(ibv_query_pkey(pv.ctx, 1, 0, &pkey));
	EXPECT_M1(ibv_get_pkey_index(pv.ctx, 1, htobe16(0xffff)));
	EXPECT_NULL(ibv_alloc_pd(pv.ctx));
	EXPECT_NULL(ibv_reg_mr(pv.pd, pv.buf, 64, IBV_ACCESS_LOCAL_WRITE));
	EXPECT_NULL(ibv_create_comp_channel(pv.ctx));
	EXPECT_NULL(ibv_create_cq(pv.ctx, 4, NULL, NULL, 0));
	EXPECT_NULL(ibv_create_qp(pv.pd, &qia));
	EXPECT_NULL(ibv_create_ah(pv.pd, &aa));
	EXPECT_M1(ibv_init_ah_from_wc(pv.ctx, 1, &wc, &grh, &aa));
	EXPECT_NULL(ibv_create_ah_from_wc(pv.pd, &wc, &grh, 1));
	EXPECT_RET(ibv_modify_qp(pv.qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN));
	EXPECT_RET(ibv_query_qp(pv.qp, &qa, IBV_QP_STATE, &qia));
	EXPECT_RET(ibv_attach_mcast(pv.qp, &pv.mgid, 0));
	EXPECT_RET(ibv_detach_mcast(pv.qp, &pv.mgid, 0));
	/* The data path: no lock taken, nothing sent, nothing received. */
	EXPECT_RET(ibv_post_send(pv.qp, &swr, &sbad));
	if (sbad != &swr)
		fail("ibv_post_send: bad_wr is not the first WR");
	EXPECT_RET(ibv_post_recv(pv.qp, &rwr, &rbad));
	if (rbad != &rwr)
		fail("ibv_post_recv: bad_wr is not the first WR");
	checks++;
	if (ibv_poll_cq(pv.cq, 1, &wc) != -EIO)
		fail("ibv_poll_cq did not return -EIO");
	EXPECT_RET(ibv_req_notify_cq(pv.cq, 0));
	EXPECT_M1(ibv_get_cq_event(pv.cc, &evcq, &evctx));
	ibv_ack_cq_events(pv.cq, 0); /* void: returns */
	/* Nothing of the parent's can be released in the child either. */
	EXPECT_RET(ibv_destroy_ah(pv.ah));
	EXPECT_RET(ibv_destroy_qp(pv.qp));
	EXPECT_RET(ibv_destroy_cq(pv.cq));
	EXPECT_RET(ibv_destroy_comp_channel(pv.cc));
	EXPECT_RET(ibv_dereg_mr(pv.mr));
	EXPECT_RET(ibv_dealloc_pd(pv.pd));
	EXPECT_M1(ibv_close_device(pv.ctx));
}

static void check_inherited_cm(void)
{
	struct sockaddr_in src = loopback(), g = par.grp[0];
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)&g,
	};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_UD, .cap = {.max_send_wr = 1}};
	struct ibv_qp_init_attr_ex qx = {.qp_type = IBV_QPT_UD};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	EXPECT_M1(rdma_create_id(par.ch, &id, NULL, RDMA_PS_UDP));
	EXPECT_M1(rdma_bind_addr(pv.id2, (struct sockaddr *)&src));
	EXPECT_M1(rdma_resolve_addr(pv.id2, (struct sockaddr *)&src, (struct sockaddr *)&g, 100));
	EXPECT_M1(rdma_create_qp(pv.id2, NULL, &qa));
	EXPECT_M1(rdma_create_qp_ex(pv.id2, &qx));
	EXPECT_M1(rdma_join_multicast(par.id, (struct sockaddr *)&g, NULL));
	EXPECT_M1(rdma_join_multicast_ex(par.id, &ja, NULL));
	EXPECT_M1(rdma_leave_multicast(par.id, (struct sockaddr *)&g));
	EXPECT_M1(rdma_get_cm_event(par.ch, &ev));
	EXPECT_M1(rdma_ack_cm_event(pv.ev));
	rdma_destroy_qp(par.id); /* void: returns, destroys nothing */
	EXPECT_M1(rdma_destroy_id(pv.id2));
	rdma_destroy_event_channel(par.ch); /* void: returns */
}

/* A device of the parent's list opens the child's own device of that interface. */
static void check_device_list(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fail("ibv_get_device_list in the child: %d devices", list ? n : -1);
	} else {
		for (int i = 0; i < n; i++)
			for (int k = 0; pv.list[k]; k++)
				if (list[i] == pv.list[k])
					fail("the child's device list holds the parent's %s",
					     ibv_get_device_name(list[i]));
	}
	ibv_free_device_list(list);
	ctx = ibv_open_device(pv.dev);
	if (!ctx) {
		fail("ibv_open_device(the parent's umc_lo) in the child: errno %d", errno);
		return;
	}
	if (ctx->device == pv.dev || strcmp(ibv_get_device_name(ctx->device), "umc_lo") ||
	    ibv_get_device_guid(ctx->device) == par_guid)
		fail("ibv_open_device(the parent's umc_lo) did not open the child's umc_lo");
	if (ibv_close_device(ctx))
		fail("ibv_close_device of the child's context");
}

static int child_inherited(void *arg)
{
	int user_fds[] = {pv.cc->fd, par.ch->fd, par.id->recv_cq_channel->fd,
			  par.id->send_cq_channel->fd};
	char b;

	(void)arg;
	/* First, before the child opens anything that could reuse a number. */
	check_child_fds(user_fds, 4);
	if (read(par.ch->fd, &b, 1) != 0)
		fail("the event channel fd does not read as end of file");
	check_inherited_verbs();
	check_inherited_cm();
	check_device_list();
	checks += 2;
	if (ibv_fork_init() != 0 || ibv_is_fork_initialized() != IBV_FORK_UNNEEDED)
		fail("ibv_fork_init %d, ibv_is_fork_initialized %d", ibv_fork_init(),
		     (int)ibv_is_fork_initialized());
	printf("inherited: %u calls on the parent's objects checked\n", checks);
	/* After all that, the child works as a new HCA. */
	return child_own_group(NULL) || failures;
}

static void scenario_inherited(void)
{
	const char *why = parent_verbs();
	struct ibv_cq *evcq;
	void *evctx;
	pid_t pid;

	if (why) {
		fail("inherited: parent: %s (errno %d)", why, errno);
		return;
	}
	pid = child(child_inherited, NULL);
	child_ok(pid, "inherited");

	/* The parent is undisturbed: its group, its CQ event, its CM channel. */
	if (!igmp_member(par.grp[0]))
		fail("inherited: the parent's group left /proc/net/igmp");
	if (!sender_do('b') || ep_recv(&par, BURST, WAIT_MS, -1) != BURST || par.bad_order)
		fail("inherited: the parent's endpoint stopped receiving");
	struct pollfd p = {.fd = pv.cc->fd, .events = POLLIN};

	if (poll(&p, 1, WAIT_MS) != 1 || ibv_get_cq_event(pv.cc, &evcq, &evctx) || evcq != pv.cq)
		fail("inherited: the parent's armed CQ gave no event");
	else
		ibv_ack_cq_events(pv.cq, 1);
	if (rdma_ack_cm_event(pv.ev) || rdma_destroy_id(pv.id2))
		fail("inherited: the parent's CM id");
	if (ibv_detach_mcast(pv.qp, &pv.mgid, 0) || ibv_destroy_qp(pv.qp) ||
	    ibv_destroy_ah(pv.ah) || ibv_destroy_cq(pv.cq) || ibv_destroy_comp_channel(pv.cc) ||
	    ibv_dereg_mr(pv.mr) || ibv_dealloc_pd(pv.pd) || ibv_close_device(pv.ctx))
		fail("inherited: destroying the parent's verbs objects");
	ibv_free_device_list(pv.list);
}

/*
 * The parent's receive thread delivers a burst while the parent does not
 * poll.  Besides checking the thread, this makes sure it has left its
 * start-up before any fork: a sanitizer runtime without fork handlers
 * (gcc 12's libasan) allocates there, and a child forked while that
 * allocator lock is held would hang in its first malloc of that size.
 */
static bool parent_thread_warm(void)
{
	struct umc_device *dev = ctx_dev(par.id->verbs);
	unsigned long base = atomic_load(&dev->cnt->rx_delivered);
	uint64_t deadline = t_now_ms() + WAIT_MS;

	if (!sender_do('b'))
		return false;
	while (atomic_load(&dev->cnt->rx_delivered) - base < BURST && t_now_ms() < deadline)
		poll(NULL, 0, 5); /* not receiving: only the thread may deliver */
	return atomic_load(&dev->cnt->rx_delivered) - base == BURST &&
	       ep_recv(&par, BURST, WAIT_MS, -1) == BURST;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;
	const char *why;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(s, "create") && strcmp(s, "drain") && strcmp(s, "epoll") &&
	    strcmp(s, "inherited")) {
		fprintf(stderr, "usage: %s create [N] | drain [R] | epoll | inherited\n", argv[0]);
		return 2;
	}
	sender_start(group_of(getpid(), G_PARENT));
	why = ep_open(&par, group_of(getpid(), G_PARENT), true);
	if (!why)
		par_guid = ibv_get_device_guid(par.id->verbs->device);
	if (!why && !parent_thread_warm())
		why = "the receive thread did not deliver a burst";

	if (why) {
		fail("parent: %s (errno %d)", why, errno);
	} else if (!strcmp(s, "create")) {
		scenario_create(n > 0 ? n : 40);
	} else if (!strcmp(s, "drain")) {
		scenario_drain(n > 0 ? n : 4);
	} else if (!strcmp(s, "epoll")) {
		scenario_epoll();
	} else {
		scenario_inherited();
	}
	sender_stop();
	ep_close(&par);
	printf("%s: %s\n", s, failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
