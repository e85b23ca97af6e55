// SPDX-License-Identifier: MIT
/*
 * test_roce_ucast.c - the RoCE unicast demultiplexer (link/roce/uc/)
 * as another local process sees it: its control protocol (uc/uc_proto.h), what it
 * does with nonsense, and what it hands over.
 *
 * The test process takes a network namespace of its own (tests/lib/isolate.h);
 * its first QP makes it the demultiplexer of 127.0.0.1 (and ::1), and the
 * test's main thread then plays other processes through raw connections
 * to it.  Anyone on the host may connect, so a message that is not exactly
 * one of the protocol's must end that connection and nothing else, and a
 * descriptor it passes must be kept only when it is what HELLO asks for.
 * Without a namespace of its own the test is skipped.
 *
 * Run twice by ctest: steering by DestQP (the default) and UMC_UC_STEER=0
 * (every datagram passed on, behind a struct roce_uc_fwd).
 */
#include "verbs_util.h"

#include <dirent.h>
#include <linux/filter.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "isolate.h"
#include "link/roce/roce.h"
#include "link/roce/uc/uc_proto.h"

enum { OTHER_QPN = 0xabcde, T_MS = 5000 };

static bool isolated;

static bool steering(void)
{
	const char *e = getenv("UMC_UC_STEER");

	return !e || *e != '0';
}

/*
 * This process's descriptors, but for files under /proc: the background
 * receive thread opens /proc/self/task/TID/stat for a moment now and then
 * (rx_sched.c), and so does this count (its directory).
 */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[300], to[64];
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, to, sizeof(to) - 1);
		if (len < 0)
			continue; /* closed since readdir */
		to[len] = '\0';
		n += strncmp(to, "/proc/", 6) != 0;
	}
	closedir(d);
	return n;
}

/* A raw connection to the demultiplexer of 127.0.0.1. */
static int raw_connect(void)
{
	struct sockaddr_un sa;
	socklen_t len = roce_abstract_name(&sa, ROCE_UC_NAME_FMT, "127.0.0.1");
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

/* Send @len bytes of @m, with descriptors @fds (up to 2). */
static void raw_send(int fd, const void *m, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} cb;
	struct iovec iov = {(void *)m, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds) {
		memset(&cb, 0, sizeof(cb));
		mh.msg_control = cb.b;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
		CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
		CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), fds, (size_t)nfds * sizeof(int));
	}
	assert_int_equal(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)len);
}

/* The next message within T_MS into @r: its length, 0 at end of connection, -1 on timeout. */
static ssize_t raw_recv(int fd, struct roce_uc_msg *r)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	memset(r, 0, sizeof(*r));
	if (poll(&p, 1, T_MS) != 1)
		return -1;
	return recv(fd, r, sizeof(*r), 0);
}

/* A socket holding @qpn on the host, as qpn.c holds one: a claim's proof. */
static int raw_hold(uint32_t qpn)
{
	struct sockaddr_un sa;
	socklen_t len = roce_abstract_name(&sa, ROCE_QPN_NAME_FMT, qpn);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

/* A request and its answer (which must come): returns the answer's status. */
static int raw_call(int fd, uint16_t op, const uint32_t *qpn, int n, const int *fds, int nfds,
		    struct roce_uc_msg *r)
{
	static uint32_t seq = 100;
	struct roce_uc_msg m = {.magic = ROCE_UC_MAGIC,
				.version = ROCE_UC_VERSION,
				.op = op,
				.seq = ++seq,
				.count = (uint16_t)n};

	if (n)
		memcpy(m.qpn, qpn, (size_t)n * sizeof(*qpn));
	raw_send(fd, &m, ROCE_UC_MSG_LEN(n), fds, nfds);
	assert_true(raw_recv(fd, r) >= (ssize_t)ROCE_UC_MSG_LEN(0));
	assert_int_equal(r->magic, ROCE_UC_MAGIC);
	assert_int_equal(r->op, ROCE_UC_REPLY);
	assert_int_equal(r->seq, seq);
	assert_int_equal(r->pid, getpid());
	return r->status;
}

/* This process's device, QP and a unicast AH to 127.0.0.1. */
struct rig {
	struct t_env e;
	struct t_qp q;
	struct ibv_ah *ah;
};

static void rig_up(struct rig *r)
{
	if (!isolated)
		skip();
	t_env_open(&r->e, t_group_ip(1), false);
	t_qp_make(&r->q, r->e.pd, 0, T_QKEY);
	r->ah = t_ipv4_ah(r->e.pd, INADDR_LOOPBACK);
	assert_non_null(r->ah);
}

static void rig_down(struct rig *r)
{
	ibv_destroy_ah(r->ah);
	t_qp_free(&r->q);
	t_env_close(&r->e);
}

/* One SEND of @len bytes to DestQP @qpn at 127.0.0.1, and its completion. */
static void send_to(struct rig *r, uint32_t qpn, const char *data, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {(uintptr_t)(r->q.buf + T_BUF / 2), len, r->q.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .wr.ud = {.ah = r->ah, .remote_qpn = qpn, .remote_qkey = T_QKEY}},
			   *bad;

	memcpy(r->q.buf + T_BUF / 2, data, len);
	assert_int_equal(ibv_post_send(r->q.qp, &wr, &bad), 0);
	t_wait_send(r->q.cq, wr_id);
}

/* The next control message on a client's input @fd into @c; its descriptor (-1 if none). */
static int ctl_recv(int fd, struct roce_uc_ctl *c)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} cb;
	struct iovec iov = {c, sizeof(*c)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cb.b,
			    .msg_controllen = sizeof(cb.b)};
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int got = -1;

	assert_int_equal(poll(&p, 1, T_MS), 1);
	assert_int_equal(recvmsg(fd, &mh, MSG_CMSG_CLOEXEC), (ssize_t)sizeof(*c));
	assert_int_equal(c->family, ROCE_UC_FWD_CTL);
	assert_int_equal(c->addr_family, 4);
	assert_memory_equal(c->dst, "\x7f\0\0\x01", 4);
	if (CMSG_FIRSTHDR(&mh))
		memcpy(&got, CMSG_DATA(CMSG_FIRSTHDR(&mh)), sizeof(got));
	return got;
}

/* @fd is a datagram socket bound to 127.0.0.1:4791. */
static void assert_group_socket(int fd)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	assert_true(fd >= 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(ntohs(sa.sin_port), 4791);
	assert_int_equal(sa.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
}

/*
 * A unicast SEND over @ah to our own QP, received: returns the IPv4 TTL it
 * arrived with (the GRH area's IPv4 header, bytes 20..39).
 */
static uint8_t self_unicast(struct rig *r, struct ibv_ah *ah, uint64_t wr_id)
{
	struct ibv_sge sge = {(uintptr_t)(r->q.buf + T_BUF / 2), 4, r->q.mr->lkey};
	struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .wr.ud = {.ah = ah, .remote_qpn = r->q.qp->qp_num,
					   .remote_qkey = T_QKEY}},
			   *bad;
	bool sent = false, got = false;
	struct ibv_wc wc;

	assert_int_equal(t_post_recv(&r->q, 0, 2048, wr_id), 0);
	memcpy(r->q.buf + T_BUF / 2, "self", 4);
	assert_int_equal(ibv_post_send(r->q.qp, &wr, &bad), 0);
	/* One CQ: the receive may come first (the receive thread runs meanwhile). */
	while (!sent || !got) {
		assert_int_equal(t_wait_wc(r->q.cq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, wr_id);
		if (wc.opcode == IBV_WC_SEND) {
			sent = true;
			continue;
		}
		assert_int_equal(wc.opcode, IBV_WC_RECV);
		assert_int_equal(wc.src_qp, r->q.qp->qp_num);
		assert_int_equal(wc.byte_len, 44);
		assert_memory_equal(r->q.buf + 40, "self", 4);
		got = true;
	}
	assert_int_equal(r->q.buf[20] >> 4, 4);
	return r->q.buf[20 + 8];
}

/* Self-unicast still works: the demultiplexer is unharmed. */
static void assert_self_unicast(struct rig *r, uint64_t wr_id)
{
	self_unicast(r, r->ah, wr_id);
}

static void test_nonsense_ends_that_connection_only(void **state)
{
	struct roce_uc_msg m = {
	    .magic = ROCE_UC_MAGIC, .version = ROCE_UC_VERSION, .op = ROCE_UC_CLAIM, .count = 3};
	struct rig r;
	int fd, keep;

	rig_up(&r);
	keep = raw_connect();
	/* Too short, then too long for its count, then an unknown magic. */
	fd = raw_connect();
	raw_send(fd, "abc", 3, NULL, 0);
	assert_int_equal(raw_recv(fd, &m), 0);
	close(fd);
	fd = raw_connect();
	raw_send(fd, &m, ROCE_UC_MSG_LEN(2), NULL, 0);
	assert_int_equal(raw_recv(fd, &m), 0);
	close(fd);
	fd = raw_connect();
	m = (struct roce_uc_msg){.magic = 0x12345678, .version = ROCE_UC_VERSION};
	raw_send(fd, &m, ROCE_UC_MSG_LEN(0), NULL, 0);
	assert_int_equal(raw_recv(fd, &m), 0);
	close(fd);
	/* An unknown operation is answered -EINVAL, and the connection stays. */
	assert_int_equal(raw_call(keep, 77, NULL, 0, NULL, 0, &m), -EINVAL);
	assert_int_equal(raw_call(keep, ROCE_UC_CLAIM, NULL, 0, NULL, 0, &m), 0);
	close(keep);
	assert_self_unicast(&r, 7);
	rig_down(&r);
}

static void test_other_version_is_told(void **state)
{
	struct roce_uc_msg m = {
	    .magic = ROCE_UC_MAGIC, .version = 99, .op = ROCE_UC_HELLO, .seq = 5};
	struct rig r;
	int fd;

	rig_up(&r);
	fd = raw_connect();
	raw_send(fd, &m, ROCE_UC_MSG_LEN(0), NULL, 0);
	assert_true(raw_recv(fd, &m) >= (ssize_t)offsetof(struct roce_uc_msg, pid));
	assert_int_equal(m.op, ROCE_UC_REPLY);
	assert_int_equal(m.seq, 5);
	assert_int_equal(m.status, -EPROTONOSUPPORT);
	assert_int_equal(raw_recv(fd, &m), 0); /* and no more */
	close(fd);
	rig_down(&r);
}

static void test_hello_keeps_only_a_datagram_socket(void **state)
{
	struct roce_uc_msg m;
	struct rig r;
	int fd, pp[2], sv[2], before;

	rig_up(&r);
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	before = count_fds();
	fd = raw_connect();
	assert_int_equal(raw_call(fd, ROCE_UC_HELLO, NULL, 0, NULL, 0, &m), -EINVAL);
	assert_int_equal(raw_call(fd, ROCE_UC_HELLO, NULL, 0, pp, 1, &m), -EINVAL);
	/* Two descriptors: the first is taken, the other closed. */
	int two[2] = {sv[1], pp[0]};

	assert_int_equal(raw_call(fd, ROCE_UC_HELLO, NULL, 0, two, 2, &m), 0);
	/*
	 * Now: our end and the demultiplexer's of the connection, the socket it
	 * kept and (steering) the group socket it made for the newcomer.
	 */
	assert_int_equal(count_fds(), before + 3 + steering());
	close(fd);
	/* Gone with the connection, but the group socket stays with the group. */
	for (uint64_t end = t_now_ms() + T_MS; count_fds() != before + steering();)
		if (t_now_ms() > end)
			fail_msg("%d descriptors, %d expected", count_fds(), before + steering());
		else
			poll(NULL, 0, 2);
	close(pp[0]);
	close(pp[1]);
	close(sv[0]);
	close(sv[1]);
	rig_down(&r);
}

static void test_claims(void **state)
{
	struct roce_uc_msg m;
	struct rig r;
	uint32_t q, two[2];
	int a, b, h, h2, hs[2], refused;

	rig_up(&r);
	a = raw_connect();
	b = raw_connect();
	h = raw_hold(OTHER_QPN);
	h2 = raw_hold(OTHER_QPN + 1);
	refused = (int)T_CNT(r.e.dev, uc_claim_refused);
	/* Our QP's number is ours: without the socket that holds it, no claim. */
	q = r.q.qp->qp_num;
	assert_int_equal(raw_call(a, ROCE_UC_CLAIM, &q, 1, NULL, 0, &m), -EPERM);
	assert_int_equal(m.count, 1);
	assert_int_equal(m.qpn[0], q);
	/* ... nor with another QPN's socket, nor with a descriptor short. */
	assert_int_equal(raw_call(a, ROCE_UC_CLAIM, &q, 1, &h, 1, &m), -EPERM);
	two[0] = OTHER_QPN;
	two[1] = OTHER_QPN + 1;
	assert_int_equal(raw_call(a, ROCE_UC_CLAIM, two, 2, &h, 1, &m), -EPERM);
	assert_int_equal(m.count, 1);
	assert_int_equal(m.qpn[0], OTHER_QPN + 1);
	assert_int_equal(T_CNT(r.e.dev, uc_claim_refused), refused + 3);
	q = OTHER_QPN;
	assert_int_equal(raw_call(a, ROCE_UC_RELEASE, &q, 1, NULL, 0, &m), 0);
	/* The multicast QPN and numbers above 24 bits are no QP's. */
	q = 0xffffff;
	assert_int_equal(raw_call(a, ROCE_UC_CLAIM, &q, 1, NULL, 0, &m), -EINVAL);
	q = 0x1000000;
	assert_int_equal(raw_call(a, ROCE_UC_CLAIM, &q, 1, NULL, 0, &m), -EINVAL);
	/* Each QPN with its socket, in order: accepted. */
	hs[0] = h;
	hs[1] = h2;
	assert_int_equal(raw_call(a, ROCE_UC_CLAIM, two, 2, hs, 2, &m), 0);
	assert_int_equal(raw_call(a, ROCE_UC_RELEASE, two + 1, 1, NULL, 0, &m), 0);
	/* A free one: first come, first served; claiming it again is fine. */
	q = OTHER_QPN;
	assert_int_equal(raw_call(a, ROCE_UC_CLAIM, &q, 1, &h, 1, &m), 0);
	assert_int_equal(raw_call(a, ROCE_UC_CLAIM, &q, 1, &h, 1, &m), 0);
	/* Another connection with the proof too (its owner exited, its hang-up unread). */
	assert_int_equal(raw_call(b, ROCE_UC_CLAIM, &q, 1, &h, 1, &m), -EADDRINUSE);
	/* A release by another is no release. */
	assert_int_equal(raw_call(b, ROCE_UC_RELEASE, &q, 1, NULL, 0, &m), 0);
	assert_int_equal(raw_call(b, ROCE_UC_CLAIM, &q, 1, &h, 1, &m), -EADDRINUSE);
	/* Its owner gone, it is free again. */
	close(a);
	for (uint64_t end = t_now_ms() + T_MS; raw_call(b, ROCE_UC_CLAIM, &q, 1, &h, 1, &m);)
		if (t_now_ms() > end)
			fail_msg("QPN 0x%x still taken after its owner closed", q);
	assert_int_equal(T_CNT(r.e.dev, uc_claim_refused), refused + 3);
	close(b);
	close(h);
	close(h2);
	rig_down(&r);
}

/*
 * A registered "process" gets its datagrams: steered into the group socket
 * handed over to it, or passed on to its input behind a roce_uc_fwd.  After
 * a release they go nowhere and are counted.
 */
static void test_registered_receives(void **state)
{
	struct roce_uc_msg m;
	struct rig r;
	uint8_t b[2048];
	uint32_t q = OTHER_QPN;
	int fd, sv[2], rx, h;
	unsigned long noqp, fwd;
	ssize_t n;

	rig_up(&r);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	fd = raw_connect();
	h = raw_hold(q);
	assert_int_equal(raw_call(fd, ROCE_UC_HELLO, NULL, 0, &sv[1], 1, &m), 0);
	assert_int_equal(raw_call(fd, ROCE_UC_CLAIM, &q, 1, &h, 1, &m), 0);
	rx = sv[0];
	if (steering()) {
		/*
		 * The hand-over: our own socket of 127.0.0.1:4791's group, and
		 * every other socket of it to hold, each exactly once.
		 */
		struct roce_uc_ctl c;
		bool seen[16] = {false};
		uint32_t size = 0, held = 0;
		int own = -1;

		while (own < 0 || held + 1 < size) {
			int sfd = ctl_recv(sv[0], &c);

			assert_int_equal(c.op, ROCE_UC_CTL_SOCK);
			assert_true(c.index < 16 && !seen[c.index]);
			seen[c.index] = true;
			size = c.size;
			assert_group_socket(sfd);
			if (c.flags & ROCE_UC_CTL_OWN) {
				assert_true(c.index > 0); /* 0 is the demultiplexer's */
				own = (int)c.index;
				rx = sfd;
			} else {
				held++;
				close(sfd);
			}
		}
		/* Ours, the demultiplexer's (0) and its own process's. */
		assert_int_equal(size, 3);
	}
	fwd = T_CNT(r.e.dev, uc_forwarded);
	send_to(&r, OTHER_QPN, "to-other", 8, 1);
	struct pollfd p = {.fd = rx, .events = POLLIN};

	assert_int_equal(poll(&p, 1, T_MS), 1);
	n = recv(rx, b, sizeof(b), 0);
	if (!steering()) {
		struct roce_uc_fwd f;

		/* Passed on: the IP/UDP context first, the UDP payload after it. */
		assert_true(n > (ssize_t)sizeof(f));
		memcpy(&f, b, sizeof(f));
		assert_int_equal(f.family, 4);
		assert_int_equal(f.hop_limit, 64);
		assert_int_equal(f.sport, umc_roce_sport(r.q.qp->qp_num));
		assert_memory_equal(f.src, "\x7f\0\0\x01", 4);
		assert_memory_equal(f.dst, "\x7f\0\0\x01", 4);
		n -= (ssize_t)sizeof(f);
		memmove(b, b + sizeof(f), (size_t)n);
		/* Counted once sendmmsg returns, which may be after our recv. */
		assert_true(t_wait_counter(r.e.dev, &r.e.dev->cnt->uc_forwarded, fwd + 1, T_MS));
		assert_int_equal(T_CNT(r.e.dev, uc_forwarded), fwd + 1);
	} else {
		assert_int_equal(T_CNT(r.e.dev, uc_forwarded), fwd);
	}
	/* BTH DestQP, DETH source QPN, the payload and the ICRC's room. */
	assert_int_equal(n, 12 + 8 + 8 + 4);
	assert_int_equal(b[5] << 16 | b[6] << 8 | b[7], OTHER_QPN);
	assert_int_equal(b[17] << 16 | b[18] << 8 | b[19], r.q.qp->qp_num);
	assert_memory_equal(b + 20, "to-other", 8);

	/* Released, the QPN is nobody's: dropped and counted where it arrives. */
	noqp = T_CNT(r.e.dev, rx_no_qp);
	assert_int_equal(raw_call(fd, ROCE_UC_RELEASE, &q, 1, NULL, 0, &m), 0);
	send_to(&r, OTHER_QPN, "to-none", 7, 2);
	assert_true(t_wait_counter(r.e.dev, &r.e.dev->cnt->rx_no_qp, noqp + 1, T_MS));
	assert_int_equal(T_CNT(r.e.dev, rx_no_qp), noqp + 1);
	assert_int_equal(recv(rx, b, sizeof(b), MSG_DONTWAIT), -1);
	close(h);
	close(fd);
	if (rx != sv[0])
		close(rx);
	close(sv[0]);
	close(sv[1]);
	assert_self_unicast(&r, 9);
	rig_down(&r);
}

/*
 * A process that registers holding a socket of another group (after a
 * hand-over to a demultiplexer that could not take it over) is told to let
 * go of the old group first, then gets a socket of the new one.
 */
static void test_old_group_let_go(void **state)
{
	struct roce_uc_msg m;
	struct roce_uc_ctl c;
	struct rig r;
	uint32_t old_idx = 7;
	int fd, sv[2], sfd;

	if (!steering())
		skip();
	rig_up(&r);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
	fd = raw_connect();
	assert_int_equal(raw_call(fd, ROCE_UC_HELLO, &old_idx, 1, &sv[1], 1, &m), 0);
	assert_int_equal(ctl_recv(sv[0], &c), -1);
	assert_int_equal(c.op, ROCE_UC_CTL_FRESH);
	sfd = ctl_recv(sv[0], &c);
	assert_int_equal(c.op, ROCE_UC_CTL_SOCK);
	assert_true(c.flags & ROCE_UC_CTL_OWN);
	assert_int_not_equal(c.index, old_idx);
	assert_group_socket(sfd);
	close(sfd);
	close(fd);
	close(sv[0]);
	close(sv[1]);
	rig_down(&r);
}

/*
 * Does an epoll set of this process (the port's unicast set among them)
 * hold the socket @fd names?  Its items show in the set's fdinfo by inode.
 */
static bool in_an_epoll_set(int fd)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	struct stat st;
	char want[32];
	bool found = false;

	assert_int_equal(fstat(fd, &st), 0);
	snprintf(want, sizeof(want), " ino:%lx ", (unsigned long)st.st_ino);
	assert_non_null(d);
	while (!found && (de = readdir(d))) {
		char path[300], to[64], line[256];
		ssize_t len;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, to, sizeof(to) - 1);
		if (len < 0)
			continue;
		to[len] = '\0';
		if (strcmp(to, "anon_inode:[eventpoll]") != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* closed since readdir */
		while (!found && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = ' ';
			found = strncmp(line, "tfd:", 4) == 0 && strstr(line, want);
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

/* Poll @r's CQ (the engine reads its input meanwhile) until @cond, for T_MS at most. */
#define POLL_UNTIL(r, cond)                                                              \
	do {                                                                             \
		struct ibv_wc wc_;                                                       \
		for (int k_ = 0; k_ < T_MS && !(cond); k_++) {                           \
			assert_int_equal(ibv_poll_cq((r)->q.cq, 1, &wc_), 0);            \
			usleep(1000); /* bounded by T_MS */                              \
		}                                                                        \
	} while (0)

/*
 * As the demultiplexer of 127.0.0.1, on the port's @input: hand the port
 * its own socket A of a reuseport group, then another, B, in its place.
 * A leaves the port's unicast set although this process (the group's
 * other holders) keeps A open, so A's datagrams wake the set no more; and
 * the port's read of A ends with the hand-over: a datagram steered to A
 * stays there.  ROCE_UC_CTL_FRESH then lets go of B and of the group.
 */
static void check_replaced_socket_leaves_the_set(struct rig *r, int input,
						 const struct sockaddr_in *a4)
{
	/* classic BPF for the group: every datagram to its first socket, A */
	struct sock_filter code[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
	struct sock_fprog prog = {.len = 1, .filter = code};
	struct roce_uc_ctl c = {.family = ROCE_UC_FWD_CTL, .op = ROCE_UC_CTL_SOCK,
				.addr_family = 4, .flags = ROCE_UC_CTL_OWN, .size = 3};
	int one = 1, sock[2], tx;
	char b[16];

	memcpy(c.dst, &a4->sin_addr, 4);
	for (int i = 0; i < 2; i++) {
		sock[i] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		assert_int_equal(setsockopt(sock[i], SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)), 0);
		assert_int_equal(bind(sock[i], (const struct sockaddr *)a4, sizeof(*a4)), 0);
	}
	assert_int_equal(setsockopt(sock[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
				    sizeof(prog)),
			 0);
	c.index = 1;
	raw_send(input, &c, sizeof(c), &sock[0], 1);
	POLL_UNTIL(r, in_an_epoll_set(sock[0]));
	assert_true(in_an_epoll_set(sock[0]));
	c.index = 2;
	raw_send(input, &c, sizeof(c), &sock[1], 1);
	POLL_UNTIL(r, in_an_epoll_set(sock[1]));
	assert_true(in_an_epoll_set(sock[1]));
	assert_false(in_an_epoll_set(sock[0]));

	tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_int_equal(sendto(tx, "to-A", 4, 0, (const struct sockaddr *)a4, sizeof(*a4)), 4);
	for (int k = 0; k < 20; k++) /* the engine's passes, which must not touch A */
		assert_int_equal(ibv_poll_cq(r->q.cq, 1, &(struct ibv_wc){0}), 0);
	assert_int_equal(recv(sock[0], b, sizeof(b), MSG_DONTWAIT), 4);
	close(tx);

	c.op = ROCE_UC_CTL_FRESH;
	c.flags = 0;
	raw_send(input, &c, sizeof(c), NULL, 0);
	POLL_UNTIL(r, !in_an_epoll_set(sock[1]));
	assert_false(in_an_epoll_set(sock[1]));
	close(sock[0]);
	close(sock[1]);
}

/*
 * More of what the demultiplexer may send the port's input that is no
 * packet and no good control message, each dropped and counted once in
 * rx_malformed, and a descriptor along closed: a control message cut
 * short; a datagram of no bytes right after a control message (its slot
 * still holds that one's family byte: it is a packet with no header, not
 * that control message again); a descriptor with a forwarded packet's
 * header; a control message whose operation does not exist.
 */
static void check_malformed_input_counted(struct rig *r, int input,
					  const struct sockaddr_in *a4)
{
	struct roce_uc_ctl c = {.family = ROCE_UC_FWD_CTL, .op = ROCE_UC_CTL_SOCK,
				.addr_family = 4, .index = 5, .size = 2};
	struct roce_uc_fwd f = {.family = 4};
	const struct {
		const void *m;
		size_t len;
		bool fd;
	} bad[] = {
		{&c, 10, false},	  /* cut short */
		{&c, sizeof(c), true},	  /* index past the size: malformed too, sets the slot */
		{&c, 0, false},		  /* empty, after it */
		{&f, sizeof(f), true},	  /* a descriptor with a packet's header */
		{&c, sizeof(c), true},	  /* op 0x7f (below) */
	};
	unsigned long malformed = T_CNT(r->e.dev, rx_malformed),
		      packets = T_CNT(r->e.dev, rx_packets);

	memcpy(c.dst, &a4->sin_addr, 4);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int u = -1;

		if (i == 4) {
			c.op = 0x7f;
			c.index = 1;
		}
		if (bad[i].fd) {
			u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			assert_int_equal(bind(u, (const struct sockaddr *)a4, sizeof(*a4)), 0);
		}
		raw_send(input, bad[i].m, bad[i].len, &u, bad[i].fd);
		if (u >= 0)
			close(u);
		POLL_UNTIL(r, T_CNT(r->e.dev, rx_malformed) >= malformed + i + 1);
		assert_int_equal(T_CNT(r->e.dev, rx_malformed), malformed + i + 1);
		if (bad[i].fd) { /* closed by the port: nobody holds 127.0.0.1:4791 */
			u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			assert_int_equal(bind(u, (const struct sockaddr *)a4, sizeof(*a4)), 0);
			close(u);
		}
	}
	/* The empty one is a packet's datagram too short for a header; the rest control messages. */
	assert_int_equal(T_CNT(r->e.dev, rx_packets), packets + 1);
}

/*
 * The port's side, with the test as the demultiplexer of 127.0.0.1: a
 * control message naming a socket outside the group it describes (an
 * index past its size, a size past the kernel's limit, or index 0, the
 * demultiplexer's own, as the port's) is dropped and counted, and the
 * descriptor along is closed, not kept: the address can be bound again.
 * Then a socket the port was told to read and then to replace leaves its
 * set (check_replaced_socket_leaves_the_set).
 * First of the tests: later ones make this process the demultiplexer.
 */
static void test_ctl_outside_the_group_dropped(void **state)
{
	struct sockaddr_un sa;
	socklen_t sl = roce_abstract_name(&sa, ROCE_UC_NAME_FMT, "127.0.0.1");
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(4791),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const struct {
		uint8_t flags;
		uint32_t index, size;
	} bad[] = {{ROCE_UC_CTL_OWN, 0, 2}, {0, 5, 2}, {0, 1, UMC_UC_GROUP_MAX + 1}};
	uint64_t cmsg[4];
	struct roce_uc_msg m;
	struct iovec iov = {&m, sizeof(m)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cmsg,
			    .msg_controllen = sizeof(cmsg)};
	unsigned long malformed;
	struct rig r;
	int lfd, cfd, input, u;

	if (!isolated)
		skip();
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sl), 0);
	assert_int_equal(listen(lfd, 4), 0);
	rig_up(&r); /* its claim goes unanswered: QP creation waits UMC_UC_REPLY_MS */
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(cfd >= 0);
	assert_true(recvmsg(cfd, &mh, 0) >= (ssize_t)ROCE_UC_MSG_LEN(0));
	assert_int_equal(m.op, ROCE_UC_HELLO);
	input = roce_take_fd(&mh);
	assert_true(input >= 0);
	malformed = T_CNT(r.e.dev, rx_malformed);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct roce_uc_ctl c = {.family = ROCE_UC_FWD_CTL, .op = ROCE_UC_CTL_SOCK,
					.addr_family = 4, .flags = bad[i].flags,
					.index = bad[i].index, .size = bad[i].size};

		memcpy(c.dst, &a4.sin_addr, 4);
		u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		assert_int_equal(bind(u, (struct sockaddr *)&a4, sizeof(a4)), 0);
		raw_send(input, &c, sizeof(c), &u, 1);
		close(u);
		/* The engine reads its input while the CQ is polled. */
		POLL_UNTIL(&r, T_CNT(r.e.dev, rx_malformed) >= malformed + i + 1);
		assert_int_equal(T_CNT(r.e.dev, rx_malformed), malformed + i + 1);
		/* Closed by the port: nobody holds 127.0.0.1:4791. */
		u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		assert_int_equal(bind(u, (struct sockaddr *)&a4, sizeof(a4)), 0);
		close(u);
	}
	check_malformed_input_counted(&r, input, &a4);
	check_replaced_socket_leaves_the_set(&r, input, &a4);
	/* Let go by the port: nobody holds 127.0.0.1:4791. */
	u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(u, (struct sockaddr *)&a4, sizeof(a4)), 0);
	close(u);
	close(input);
	close(cfd);
	close(lfd);
	rig_down(&r);
}

/* Write @value to the file @path (a sysctl of this test's namespace). */
static void write_sysctl(const char *path, int value)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fprintf(f, "%d\n", value) > 0);
	assert_int_equal(fclose(f), 0);
}

/*
 * A unicast datagram leaves with the route's TTL whatever hop limit its AH
 * was given, as the kernel's AH creation sets a RoCE unicast AH's hop limit
 * from the route (ib_resolve_unicast_gid_dmac); ibv_ud_pingpong's AH says
 * 1.  Shown with the namespace's default TTL set to 77.
 */
static void test_unicast_ttl_is_the_routes(void **state)
{
	const char *ttl = "/proc/sys/net/ipv4/ip_default_ttl";
	struct ibv_ah *ah1;
	struct rig r;

	(void)state;
	rig_up(&r); /* skips unless in a namespace of our own: its sysctl is ours */
	ah1 = t_ipv4_ah_hops(r.e.pd, INADDR_LOOPBACK, 1);
	assert_non_null(ah1);
	write_sysctl(ttl, 77);
	assert_int_equal(self_unicast(&r, ah1, 21), 77);
	assert_int_equal(self_unicast(&r, r.ah, 22), 77); /* the AH said 64 */
	write_sysctl(ttl, 64);
	assert_int_equal(self_unicast(&r, ah1, 23), 64);
	ibv_destroy_ah(ah1);
	rig_down(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ctl_outside_the_group_dropped),
	    cmocka_unit_test(test_nonsense_ends_that_connection_only),
	    cmocka_unit_test(test_other_version_is_told),
	    cmocka_unit_test(test_hello_keeps_only_a_datagram_socket),
	    cmocka_unit_test(test_claims),
	    cmocka_unit_test(test_registered_receives),
	    cmocka_unit_test(test_old_group_let_go),
	    cmocka_unit_test(test_unicast_ttl_is_the_routes),
	};

	isolated = t_isolate_netns();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
