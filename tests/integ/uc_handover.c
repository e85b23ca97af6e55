// SPDX-License-Identifier: MIT
/*
 * uc_handover.c - uc_procs scenarios of the host's demultiplexer dying:
 * a process killed (kill), the demultiplexer killed while a process that
 * must register again is stopped (stopped), and its group taken over while
 * a local process plays the protocol through raw connections (adopt); and
 * a process of another user playing it so (foreign).
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "link/roce/uc/uc.h" /* the demultiplexer's protocol */
#include "uc_procs.h"
#include "wait.h"

/* B sends C a marker on B.q1 -> C.q0, which C receives (in order). */
static void marker(struct peer *b, struct peer *c)
{
	agent_cmd(&b->ag, "send 1 %s %x %d 0 %x %u 1", c->arg.addr, c->q[0], c->arg.id, QKEY,
		  c->q0_seq++);
	agent_cmd(&c->ag, "recv 0 1 %s %x", b->arg.addr, b->q[1]);
}

void scenario_kill(void)
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

void scenario_stopped(void)
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
 * (FRESH), the index of the socket given to it (-1: none), the group's
 * size and, if @socks, how many sockets came.  The sockets are closed:
 * only their indices matter here.
 */
static int raw_given(struct raw_client *rc, bool *fresh, uint32_t *size, int *socks)
{
	int own = -1;

	*fresh = false;
	if (socks)
		*socks = 0;
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
		if (fd >= 0) {
			close(fd);
			if (socks)
				(*socks)++;
		}
		*fresh |= c.op == ROCE_UC_CTL_FRESH;
		if (c.op == ROCE_UC_CTL_SOCK && (c.flags & ROCE_UC_CTL_OWN)) {
			own = (int)c.index;
			*size = c.size;
		}
	}
}

/*
 * CLAIM @qpn on @rc with descriptor @fd along (-1: none).  Returns the
 * answer's status, or 1 when none came.
 */
static int raw_claim(struct raw_client *rc, uint32_t qpn, int fd)
{
	static uint32_t seq = 1000;
	struct roce_uc_msg m = {.magic = ROCE_UC_MAGIC,
				.version = ROCE_UC_VERSION,
				.op = ROCE_UC_CLAIM,
				.seq = ++seq,
				.count = 1,
				.qpn = {qpn}};
	struct pollfd p = {.fd = rc->ctl, .events = POLLIN};
	struct roce_uc_msg r;

	if (!roce_send_fd(rc->ctl, &m, ROCE_UC_MSG_LEN(1), fd) || poll(&p, 1, WAIT_MS) != 1 ||
	    recv(rc->ctl, &r, sizeof(r), 0) < (ssize_t)ROCE_UC_MSG_LEN(0) ||
	    r.op != ROCE_UC_REPLY || r.seq != m.seq)
		return 1;
	return r.status;
}

/* A socket holding @qpn in this network namespace, as qpn.c holds one; -1 on failure. */
static int raw_qpn_hold(uint32_t qpn)
{
	struct sockaddr_un sa;
	socklen_t len = roce_abstract_name(&sa, ROCE_QPN_NAME_FMT, qpn);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, len)) {
		close(fd);
		fd = -1;
	}
	return fd;
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

void scenario_adopt(void)
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
	agent_expect_eq("A's index returned to whoever holds it",
			raw_given(&rc, &fresh, &size, NULL), (unsigned long)-1);
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
		got = raw_given(&rc, &fresh, &size, NULL);
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
		idx[k] = raw_given(&nc[k], &fresh, &size, NULL);
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

/* ------------------------------------------------------------------------- */
/* A claim of another process's QPN (scenario claim).                        */

/*
 * A socket bound to @qpn's name in a network namespace of its own, made by
 * a child (unshare(2), with a user namespace where unprivileged) and
 * passed here; -1 where no namespace can be made.
 */
static int raw_qpn_hold_elsewhere(uint32_t qpn)
{
	int sv[2], fd = -1, st;
	uint64_t cb[4];
	char byte;
	struct iovec iov = {&byte, 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof(cb)};
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	pid = fork();
	if (pid == 0) {
		int h;

		if (unshare(CLONE_NEWNET) && unshare(CLONE_NEWUSER | CLONE_NEWNET))
			_exit(1);
		h = raw_qpn_hold(qpn);
		_exit(h >= 0 && roce_send_fd(sv[1], "q", 1, h) ? 0 : 1);
	}
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
	    recvmsg(sv[0], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) == 1)
		fd = roce_take_fd(&mh);
	close(sv[0]);
	close(sv[1]);
	return fd;
}

/* The datagrams (not control messages) waiting on @rc's input. */
static int raw_datagrams(struct raw_client *rc)
{
	uint8_t b[sizeof(struct roce_uc_fwd) + 2048];
	ssize_t n;
	int k = 0;

	while ((n = recv(rc->in[0], b, sizeof(b), MSG_DONTWAIT)) > 0)
		k += n > (ssize_t)sizeof(struct roce_uc_fwd) && b[0] != ROCE_UC_FWD_CTL;
	return k;
}

void scenario_claim(void)
{
	enum { N = 20, MINE = 0x777776 };
	struct raw_client rc;
	struct peer a, b, d;
	int st, mine, other[2], elsewhere;
	char dead[16];

	if (!start(&d, 3, "127.0.0.1", NULL, NULL, 0) || !start(&a, 0, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&a.ag, "ucsync 0");
	agent_expect_eq("A's demultiplexer is D", agent_field(&a.ag, "leader"),
			(unsigned long)d.pid);
	/* A cannot register again: D's successor has never heard of A's QPNs. */
	kill(a.pid, SIGSTOP);
	if (waitpid(a.pid, &st, WUNTRACED) != a.pid || !WIFSTOPPED(st)) {
		agent_fail("A did not stop");
		return;
	}
	agent_kill(&d.ag);
	snprintf(dead, sizeof(dead), "%d", (int)d.pid);
	if (!start(&b, 1, "127.0.0.1", NULL, NULL, 0)) {
		kill(a.pid, SIGCONT);
		return;
	}
	/*
	 * B is the demultiplexer (its first QP made it so), but cannot have
	 * addr:4791 until A, which holds the group, lets go or comes back.
	 * A local process claims A's q0 without the socket that holds it: refused. */
	if (!raw_hello(&rc, NULL)) {
		kill(a.pid, SIGCONT);
		return;
	}
	mine = raw_qpn_hold(MINE);
	elsewhere = raw_qpn_hold_elsewhere(a.q[0]);
	if (mine < 0 || pipe(other))
		agent_fail("no socket for QPN 0x%x or no pipe (errno %d)", MINE, errno);
	agent_expect_eq("A's q0 claimed with no descriptor",
			(unsigned long)raw_claim(&rc, a.q[0], -1), (unsigned long)-EPERM);
	agent_expect_eq("A's q0 claimed with another QPN's socket",
			(unsigned long)raw_claim(&rc, a.q[0], mine), (unsigned long)-EPERM);
	agent_expect_eq("A's q0 claimed with a pipe",
			(unsigned long)raw_claim(&rc, a.q[0], other[0]), (unsigned long)-EPERM);
	if (elsewhere >= 0)
		agent_expect_eq("A's q0 claimed with its name held in another network namespace",
				(unsigned long)raw_claim(&rc, a.q[0], elsewhere),
				(unsigned long)-EPERM);
	else
		printf("# no network namespace can be made here: that claim is not tried\n");
	/* Its own QPN, with the socket that holds it, it may claim. */
	agent_expect_eq("its own QPN claimed with its socket",
			(unsigned long)raw_claim(&rc, MINE, mine), 0);
	expect_counter(&b, "uc_claim_refused", elsewhere >= 0 ? 4 : 3);

	/* A comes back: its QPNs are still its own, and its unicast reaches it alone. */
	kill(a.pid, SIGCONT);
	agent_cmd(&b.ag, "ucsync %s", dead);
	agent_expect_eq("B is the demultiplexer", agent_field(&b.ag, "leader"),
			(unsigned long)b.pid);
	agent_cmd(&a.ag, "ucsync %s", dead);
	expect_counter(&a, "uc_qpn_taken", 0);
	agent_cmd(&a.ag, "serve 0");
	ping_start(&b, 1, &a, 0, N, 0);
	ping_done(&b, N, true);
	agent_expect_eq("datagrams the claimant got", (unsigned long)raw_datagrams(&rc), 0);
	raw_drop(&rc);
	close(mine);
	close(other[0]);
	close(other[1]);
	if (elsewhere >= 0)
		close(elsewhere);
	expect_clean(&a);
	expect_clean(&b);
	agent_finish(&a.ag);
	agent_finish(&b.ag);
}

/* ------------------------------------------------------------------------- */
/* A process of another user holding the demultiplexer's name (squat).       */

enum { SQUAT_UID = 65534 };

/*
 * The squatter, as uid SQUAT_UID: bind and listen on the name of
 * 127.0.0.1's demultiplexer, say so on @ready, then accept every
 * connection and answer every message as a demultiplexer would (status
 * 0), counting them in *@msgs, until killed or WAIT_MS of silence.
 */
static void demux_squatter(int ready, _Atomic unsigned *msgs)
{
	struct sockaddr_un sa;
	socklen_t len = roce_abstract_name(&sa, ROCE_UC_NAME_FMT, "127.0.0.1");
	struct pollfd p[64];
	int n = 1;

	if (setgroups(0, NULL) || setgid(SQUAT_UID) || setuid(SQUAT_UID))
		_exit(3);
	p[0] = (struct pollfd){.fd = socket(AF_UNIX, SOCK_SEQPACKET, 0), .events = POLLIN};
	if (p[0].fd < 0 || bind(p[0].fd, (struct sockaddr *)&sa, len) || listen(p[0].fd, 16) ||
	    write(ready, "r", 1) != 1)
		_exit(3);
	while (poll(p, (nfds_t)n, WAIT_MS) > 0) {
		if ((p[0].revents & POLLIN) && n < 64)
			p[n++] = (struct pollfd){.fd = accept(p[0].fd, NULL, NULL), .events = POLLIN};
		for (int i = 1; i < n; i++) {
			struct roce_uc_msg m;

			if (!p[i].revents)
				continue;
			if (recv(p[i].fd, &m, sizeof(m), 0) <= 0) {
				close(p[i].fd);
				p[i].fd = -1; /* poll passes over it */
				continue;
			}
			(*msgs)++;
			m.op = ROCE_UC_REPLY;
			m.status = 0;
			m.count = 0;
			m.pid = (uint32_t)getpid();
			send(p[i].fd, &m, ROCE_UC_MSG_LEN(0), MSG_NOSIGNAL);
		}
	}
	_exit(0);
}

void scenario_squat(void)
{
	enum { N = 20 };
	bool trusted = getenv("UMC_TRUST_UIDS") != NULL;
	_Atomic unsigned *msgs;
	struct peer a, b;
	int ready[2], st;
	char byte;
	pid_t pid;

	if (geteuid() != 0) {
		printf("SKIP: another user needs root to set up\n");
		exit(77);
	}
	msgs = mmap(NULL, sizeof(*msgs), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (msgs == MAP_FAILED || pipe(ready) || (pid = fork()) < 0) {
		agent_fail("mmap, pipe or fork: errno %d", errno);
		return;
	}
	if (pid == 0) {
		close(ready[0]);
		demux_squatter(ready[1], msgs);
	}
	close(ready[1]);
	struct pollfd p = {.fd = ready[0], .events = POLLIN};

	if (poll(&p, 1, WAIT_MS) != 1 || read(ready[0], &byte, 1) != 1) {
		agent_fail("the squatter did not start");
		goto out;
	}
	/* A's QPs are made all the same; only their unicast waits. */
	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0))
		goto out;
	if (trusted) {
		/* Told to trust the squatter's user, A registers with it: HELLO, CLAIMs. */
		for (uint64_t end = t_now_ms() + WAIT_MS; *msgs < 2 && t_now_ms() < end;)
			poll(NULL, 0, 10);
		agent_expect_eq("A's messages to the trusted squatter >= 2", *msgs >= 2, 1);
	} else {
		agent_cmd(&a.ag, "waitcnt uc_demux_untrusted 1");
		agent_expect_eq("A refused the squatter",
				agent_field(&a.ag, "uc_demux_untrusted") >= 1, 1);
		agent_expect_eq("messages A sent the squatter", *msgs, 0);
	}
	/* The squatter goes: A stands for demultiplexer, and B's unicast reaches it. */
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	pid = -1;
	agent_cmd(&a.ag, "ucsync 0");
	agent_expect_eq("A is the demultiplexer", agent_field(&a.ag, "leader"),
			(unsigned long)a.pid);
	if (!start(&b, 1, "127.0.0.1", NULL, NULL, 0))
		goto out;
	agent_cmd(&b.ag, "ucsync 0");
	agent_cmd(&a.ag, "serve 0");
	ping_start(&b, 1, &a, 0, N, 0);
	ping_done(&b, N, true);
	if (!trusted)
		agent_expect_eq("messages A sent the squatter", *msgs, 0);
	expect_clean(&a);
	expect_clean(&b);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	close(ready[0]);
	munmap((void *)msgs, sizeof(*msgs));
}

/* ------------------------------------------------------------------------- */
/* A process of another user (scenario foreign).                             */

enum {
	FOREIGN_UID = 65534,
	FOREIGN_QPN = 0x777777,
	FOREIGN_EXTRA = UMC_UC_USER_CONNS + 10, /* connections beyond its first */
};

/* Open @n more connections to the demultiplexer of 127.0.0.1, kept until exit (WAIT_MS at most). */
static bool raw_connect_many(int n)
{
	struct sockaddr_un sa;
	socklen_t len = roce_abstract_name(&sa, ROCE_UC_NAME_FMT, "127.0.0.1");
	uint64_t deadline = t_now_ms() + WAIT_MS;

	for (int i = 0; i < n;) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, len) == 0) {
			i++;
			continue;
		}
		if (fd >= 0)
			close(fd);
		if (errno != EAGAIN || t_now_ms() > deadline)
			return false;
		usleep(1000); /* the backlog is full: the demultiplexer accepts meanwhile */
	}
	return true;
}

/*
 * The process of another user, as a raw client: HELLO, then CLAIM
 * FOREIGN_QPN, then FOREIGN_EXTRA more connections; says so on @ready,
 * then waits for one datagram on its input.  Exit status: 0 (no socket of
 * the group given, the datagram passed on), 1 (given sockets), 2 (no
 * datagram), 3 (no HELLO, CLAIM or connections).
 */
static int foreign_client(int ready)
{
	struct raw_client rc;
	struct roce_uc_fwd f;
	uint8_t dgram[sizeof(f) + 2048];
	uint32_t size = 0;
	int socks, own;
	bool fresh;
	ssize_t n;

	if (setgroups(0, NULL) || setgid(FOREIGN_UID) || setuid(FOREIGN_UID) ||
	    !raw_hello(&rc, NULL))
		return 3;
	own = raw_given(&rc, &fresh, &size, &socks);
	printf("# another user's process: given %d socket(s) of the group, own index %d\n", socks,
	       own);
	if (socks || own >= 0)
		return 1;
	struct pollfd p = {.fd = rc.ctl, .events = POLLIN};

	if (raw_claim(&rc, FOREIGN_QPN, raw_qpn_hold(FOREIGN_QPN)) ||
	    !raw_connect_many(FOREIGN_EXTRA))
		return 3;
	if (write(ready, "c", 1) != 1)
		return 3;
	p.fd = rc.in[0];
	n = poll(&p, 1, WAIT_MS) == 1 ? recv(rc.in[0], dgram, sizeof(dgram), 0) : -1;
	if (n <= (ssize_t)sizeof(f))
		return 2;
	memcpy(&f, dgram, sizeof(f));
	return f.family == 4 ? 0 : 2;
}

void scenario_foreign(void)
{
	struct peer a, b, c;
	int ready[2], st = -1;
	char byte;
	pid_t pid;

	if (!steering()) {
		printf("# nothing is handed over when every datagram is passed on\n");
		return;
	}
	if (geteuid() != 0) {
		printf("SKIP: another user needs root to set up\n");
		exit(77);
	}
	if (!start(&a, 0, "127.0.0.1", NULL, NULL, 0) || !start(&b, 1, "127.0.0.1", NULL, NULL, 0))
		return;
	agent_cmd(&b.ag, "ucsync 0");
	if (pipe(ready) || (pid = fork()) < 0) {
		agent_fail("pipe or fork: errno %d", errno);
		return;
	}
	if (pid == 0) {
		close(ready[0]);
		_exit(foreign_client(ready[1]));
	}
	close(ready[1]);
	struct pollfd p = {.fd = ready[0], .events = POLLIN};

	if (poll(&p, 1, WAIT_MS) == 1 && read(ready[0], &byte, 1) == 1) {
		/* Beyond its user's cap, its connections are closed at once and counted. */
		agent_cmd(&a.ag, "waitcnt uc_conn_refused %d",
			  1 + FOREIGN_EXTRA - UMC_UC_USER_CONNS);
		agent_expect_eq("A uc_conn_refused", agent_field(&a.ag, "uc_conn_refused"),
				1 + FOREIGN_EXTRA - UMC_UC_USER_CONNS);
		/* A newcomer still registers and receives, the other user's QPN too. */
		if (start(&c, 2, "127.0.0.1", NULL, NULL, 0)) {
			agent_cmd(&c.ag, "serve 1");
			ping_start(&b, 0, &c, 1, 20, 0);
			ping_done(&b, 20, true);
			agent_finish(&c.ag);
		}
		agent_cmd(&b.ag, "send 0 127.0.0.1 %x 9 0 %x 0 1", FOREIGN_QPN, QKEY);
	}
	close(ready[0]);
	/* The client's own waits are bounded (WAIT_MS each): so is this one. */
	for (int ms = 0; ms < 3 * WAIT_MS && waitpid(pid, &st, WNOHANG) == 0; ms += 10)
		usleep(10000);
	if (st == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		agent_fail("another user's client did not finish");
	} else {
		agent_expect_eq(
		    "another user's client: 0 = no socket given, its datagram passed on",
		    WIFEXITED(st) ? (unsigned long)WEXITSTATUS(st) : 99, 0);
	}
	/* Its datagram went through A, the demultiplexer; A and B are unharmed. */
	expect_counter(&a, "uc_forwarded", 1);
	agent_cmd(&b.ag, "ucsync 0");
	expect_clean(&a);
	expect_clean(&b);
	agent_finish(&b.ag);
	agent_finish(&a.ag);
}
