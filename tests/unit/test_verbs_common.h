/* SPDX-License-Identifier: MIT */
/*
 * test_verbs_common.h - helpers shared by the tests/unit/test_verbs_*.c
 * executables (static functions; each test file is its own program).
 *
 * Rules these helpers keep:
 *   - on RoCEv2 only the loopback device "umc_lo" is used, and only
 *     groups in 239.0.0.0/8; a test of the InfiniBand link ("umc_ib0")
 *     starts a umc-sm of its own (t_sm_start), so its subnet is private;
 *   - groups are 239.P1.P2.N with P1.P2 = this process's pid, so that two
 *     runs of the suite (plain and sanitizer builds) or two test programs
 *     running in parallel never share a group; N is chosen per test;
 *   - every wait is bounded: poll(2) with a timeout inside a loop with a
 *     deadline, never sleep().
 *
 * Datagrams wait in the group sockets until a progress point (ibv_poll_cq
 * on an empty CQ, ibv_get_cq_event, attach/detach) or the library's
 * background receive thread reads them.  t_wait_wc()/t_wait_counter() drive
 * progress themselves and block in poll(2) on the device's receive epoll
 * fd in between, so the tests hold with or without that thread
 * (UMC_RX_THREAD=0).
 *
 * "Nothing arrived" is never concluded from a timeout alone: a test sends a
 * marker datagram after the one that must be dropped and waits for the
 * marker; datagrams of one group reach a process through one socket, in
 * order, so once the marker is delivered the earlier datagram has been
 * processed too.
 */
#ifndef TEST_VERBS_COMMON_H
#define TEST_VERBS_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sm_proc.h"
#include "verbs/verbs_int.h"

enum {
	T_QKEY = 0x01234567, /* RDMA_UDP_QKEY */
	T_WAIT_MS = 3000,    /* upper bound of every positive wait */
	T_BUF = 16384,	     /* bytes per registered buffer */
	T_PORT = 4791,
};

static inline uint64_t t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The IPv4 group 239.P1.P2.@n of this process, host order. */
static inline uint32_t t_group_ip(unsigned n)
{
	unsigned pid = (unsigned)getpid();

	return 239u << 24 | ((pid >> 8) & 0xff) << 16 | (pid & 0xff) << 8 | (n & 0xff);
}

static inline union ibv_gid t_gid_v4(uint32_t ip_host)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = (uint8_t)(ip_host >> 24);
	g.raw[13] = (uint8_t)(ip_host >> 16);
	g.raw[14] = (uint8_t)(ip_host >> 8);
	g.raw[15] = (uint8_t)ip_host;
	return g;
}

static inline union ibv_gid t_group_gid(unsigned n)
{
	return t_gid_v4(t_group_ip(n));
}

/* ------------------------------------------------------------------------- */
/* Device, PD, buffers.                                                      */

/* The device named @name, opened; NULL when there is none. */
static inline struct ibv_context *t_open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), name) == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

static inline struct ibv_context *t_open_lo(void)
{
	struct ibv_context *ctx = t_open_dev("umc_lo");

	assert_non_null(ctx);
	return ctx;
}

/* One CQ + one UD QP + one registered buffer. */
struct t_qp {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static inline struct ibv_qp *t_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t flags)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4},
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
		.comp_mask = IBV_QP_INIT_ATTR_PD | (flags ? IBV_QP_INIT_ATTR_CREATE_FLAGS : 0),
		.pd = pd,
		.create_flags = flags,
	};

	return ibv_create_qp_ex(pd->context, &a);
}

/* RESET -> INIT -> RTR -> RTS with the minimal UD masks (IBA 10.3.1), on P_Key slot @pkey_index. */
static inline int t_qp_rts_pkey(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn,
				uint16_t pkey_index)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = pkey_index,
		.port_num = 1,
		.qkey = qkey,
	};
	int ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);

	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* t_qp_rts_pkey() on slot 0, the default P_Key's. */
static inline int t_qp_rts(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn)
{
	return t_qp_rts_pkey(qp, qkey, sq_psn, 0);
}

/* A QP in RTS with Q_Key @qkey on a CQ of its own, on completion channel @ch if not NULL. */
static inline void t_qp_make_ch(struct t_qp *t, struct ibv_pd *pd, uint32_t flags, uint32_t qkey,
				struct ibv_comp_channel *ch)
{
	memset(t, 0, sizeof(*t));
	t->cq = ibv_create_cq(pd->context, 256, NULL, ch, 0);
	assert_non_null(t->cq);
	t->qp = t_create_qp(pd, t->cq, flags);
	assert_non_null(t->qp);
	assert_int_equal(t_qp_rts(t->qp, qkey, 0), 0);
	t->buf = calloc(1, T_BUF);
	assert_non_null(t->buf);
	t->mr = ibv_reg_mr(pd, t->buf, T_BUF, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(t->mr);
}

static inline void t_qp_make(struct t_qp *t, struct ibv_pd *pd, uint32_t flags, uint32_t qkey)
{
	t_qp_make_ch(t, pd, flags, qkey, NULL);
}

static inline void t_qp_free(struct t_qp *t)
{
	if (t->qp)
		assert_int_equal(ibv_destroy_qp(t->qp), 0);
	if (t->cq)
		assert_int_equal(ibv_destroy_cq(t->cq), 0);
	if (t->mr)
		assert_int_equal(ibv_dereg_mr(t->mr), 0);
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

/* An AH to IPv4 address @ip (host order; a group or a host) from GID 0, hop limit @hops. */
static inline struct ibv_ah *t_ipv4_ah_hops(struct ibv_pd *pd, uint32_t ip, uint8_t hops)
{
	struct ibv_ah_attr a = {
		.grh = {.dgid = t_gid_v4(ip), .sgid_index = 0, .hop_limit = hops},
		.is_global = 1,
		.port_num = 1,
	};

	return ibv_create_ah(pd, &a);
}

/* t_ipv4_ah_hops with hop limit 64, as the CM builds a group's AH. */
static inline struct ibv_ah *t_ipv4_ah(struct ibv_pd *pd, uint32_t ip)
{
	return t_ipv4_ah_hops(pd, ip, 64);
}

/*
 * A test's environment: the loopback device, a PD and, when @gip is not 0,
 * that IPv4 group (host order) and, with @with_ah, an AH to it.
 */
struct t_env {
	struct ibv_context *ctx;
	struct umc_device *dev;
	struct ibv_pd *pd;
	uint32_t gip;	    /* group, host order (0: none) */
	union ibv_gid mgid; /* its GID */
	struct ibv_ah *ah;  /* to it, or NULL */
};

static inline void t_env_open(struct t_env *e, uint32_t gip, bool with_ah)
{
	memset(e, 0, sizeof(*e));
	e->ctx = t_open_lo();
	e->dev = ctx_dev(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	if (!gip)
		return;
	e->gip = gip;
	e->mgid = t_gid_v4(gip);
	if (with_ah)
		e->ah = t_ipv4_ah(e->pd, gip);
}

static inline void t_env_close(struct t_env *e)
{
	if (e->ah)
		assert_int_equal(ibv_destroy_ah(e->ah), 0);
	assert_int_equal(ibv_dealloc_pd(e->pd), 0); /* EBUSY: an object of the PD left over */
	assert_int_equal(ibv_close_device(e->ctx), 0);
}

/* Post one receive of @len bytes at offset @off of the QP's buffer. */
static inline int t_post_recv(struct t_qp *t, size_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(t->buf + off), .length = len, .lkey = t->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad = NULL;

	return ibv_post_recv(t->qp, &wr, &bad);
}

/*
 * Send @len bytes of @data (copied to the end half of the QP's buffer) to
 * @ah with Q_Key @qkey.  @imm_be: with_imm selects SEND_WITH_IMM.
 */
static inline int t_send(struct t_qp *t, struct ibv_ah *ah, const void *data, uint32_t len,
			 uint32_t qkey, bool with_imm, uint32_t imm_be, int flags, uint64_t wr_id)
{
	uint8_t *src = t->buf + T_BUF / 2;
	struct ibv_sge sge = {.addr = (uintptr_t)src, .length = len, .lkey = t->mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = (unsigned)flags,
		.imm_data = imm_be,
		.wr.ud = {.ah = ah, .remote_qpn = 0xffffff, .remote_qkey = qkey},
	};
	struct ibv_send_wr *bad = NULL;

	assert_true(len <= T_BUF / 2);
	if (len)
		memcpy(src, data, len);
	return ibv_post_send(t->qp, &wr, &bad);
}

/*
 * A cmocka fixture (*state): the environment (group @gip, AH to it if not
 * 0), a CQ of 64 and a UD QP in RESET on it and, @with_buf, a registered
 * 4096-byte buffer.  t_fx_setup() fails (-1) if any of them is missing.
 */
struct t_fx {
	struct t_env e;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr; /* with_buf */
	uint8_t *buf;
};

static inline int t_fx_setup(void **state, uint32_t gip, bool with_buf)
{
	struct t_fx *f = calloc(1, sizeof(*f));

	t_env_open(&f->e, gip, gip != 0);
	f->cq = ibv_create_cq(f->e.ctx, 64, NULL, NULL, 0);
	f->qp = t_create_qp(f->e.pd, f->cq, 0);
	if (with_buf) {
		f->buf = calloc(1, 4096);
		f->mr = ibv_reg_mr(f->e.pd, f->buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	}
	if (!f->e.pd || !f->cq || !f->qp || (gip && !f->e.ah) || (with_buf && (!f->buf || !f->mr)))
		return -1;
	*state = f;
	return 0;
}

static inline int t_fx_teardown(void **state)
{
	struct t_fx *f = *state;

	ibv_destroy_qp(f->qp);
	ibv_destroy_cq(f->cq);
	if (f->mr)
		ibv_dereg_mr(f->mr);
	t_env_close(&f->e);
	free(f->buf);
	free(f);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Bounded waits.                                                            */

/*
 * Sleep up to @ms until a receive endpoint of @dev is readable.  Their own
 * fds: rx_epfd holds them only while the background thread sleeps on it.
 */
static inline void t_poll_rx(struct umc_device *dev, int ms)
{
	struct pollfd p[16];
	int n = 0;

	pthread_mutex_lock(&dev->watch_lock);
	for (int i = 0; i < dev->rx_nep && n < 16; i++)
		p[n++] = (struct pollfd){.fd = dev->rx_eps[i]->fd, .events = POLLIN};
	pthread_mutex_unlock(&dev->watch_lock);
	(void)poll(p, (nfds_t)n, ms);
}

/* Wait up to @ms for one completion on @cq.  Returns 1 or 0 (timeout). */
static inline int t_wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	struct umc_device *dev = to_ucq(cq)->dev;
	uint64_t deadline = t_now_ms() + (uint64_t)ms;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		assert_true(n >= 0);
		if (n)
			return n;
		if (t_now_ms() > deadline)
			return 0;
		t_poll_rx(dev, 10);
	}
}

/* Wait until the send completion of @wr_id is on @cq (sq_sig_all QPs). */
static inline void t_wait_send(struct ibv_cq *cq, uint64_t wr_id)
{
	struct ibv_wc wc;

	assert_int_equal(t_wait_wc(cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(wc.wr_id, wr_id);
}

/* Drive progress until *@c >= @target; returns true if it got there in @ms. */
static inline bool t_wait_counter(struct umc_device *dev, atomic_ulong *c, unsigned long target,
				  int ms)
{
	uint64_t deadline = t_now_ms() + (uint64_t)ms;

	for (;;) {
		umc_progress(dev, true);
		if (atomic_load(c) >= target)
			return true;
		if (t_now_ms() > deadline)
			return false;
		t_poll_rx(dev, 10);
	}
}

/* No completion is waiting on @cq (after progress). */
static inline void t_assert_cq_empty(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	umc_progress(to_ucq(cq)->dev, true);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
}

/*
 * A counter, read once no receive pass is running: the library's
 * background receive thread may be between delivering a completion and
 * counting it; umc_progress(dev, true) takes the engine's lock, so any such
 * pass has finished when it returns.
 */
static inline unsigned long t_cnt(struct umc_device *dev, atomic_ulong *c)
{
	umc_progress(dev, true);
	return atomic_load(c);
}

#define T_CNT(dev, name) t_cnt((dev), &(dev)->cnt.name)

/* Read exactly @n bytes from @fd within @ms. */
static inline bool t_read_full(int fd, void *buf, size_t n, int ms)
{
	uint64_t deadline = t_now_ms() + (uint64_t)ms;
	size_t got = 0;

	while (got < n) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int left = (int)(deadline - t_now_ms());

		if (left <= 0 || poll(&p, 1, left) != 1)
			return false;
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/*
 * Wait up to @ms for child @pid (SIGKILL after that): its exit status, 128
 * + the signal that ended it, or -1 if it had to be killed.
 */
static inline int t_reap(pid_t pid, int ms)
{
	uint64_t deadline = t_now_ms() + (uint64_t)ms;
	int st;

	while (waitpid(pid, &st, WNOHANG) != pid) {
		if (t_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		poll(NULL, 0, 5);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ------------------------------------------------------------------------- */
/* A plain UDP socket that sees the group's datagrams as they are on the     */
/* wire (the host must be a member: umc_dev_member).                          */

static inline int t_sniff_open(uint32_t group_ip)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(T_PORT)};
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	sin.sin_addr.s_addr = htonl(group_ip);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

/* Next datagram on @fd within @ms: its length, or -1. */
static inline ssize_t t_sniff_recv(int fd, uint8_t *buf, size_t cap, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (poll(&p, 1, ms) != 1)
		return -1;
	return recv(fd, buf, cap, MSG_DONTWAIT);
}

/*
 * A test program's own umc-sm, as cmocka group fixtures: t_sm_required or
 * t_sm_optional as the group setup starts it before the first case (so
 * before any device opens), t_sm_stop as the group teardown stops it.
 * Where it does not start, t_sm_required fails the group; t_sm_optional
 * says so and runs it, and the cases that need it skip (t_sm_running).
 */
struct t_sm {
	struct test_sm sm; /* sm.pid: 0 when not running */
	pid_t owner;	   /* the process that started it: a forked case's child never stops it */
};

static inline struct t_sm *t_sm(void)
{
	static struct t_sm sm;

	return &sm;
}

static inline bool t_sm_running(void)
{
	return t_sm()->sm.pid != 0;
}

/* umc-sm on an ephemeral port, which the library is pointed at (UMC_SM). */
static inline int t_sm_start(bool required)
{
	char addr[32];

	t_sm()->owner = getpid();
	if (!test_sm_start(&t_sm()->sm, 0, NULL)) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", t_sm()->sm.port);
		setenv("UMC_SM", addr, 1);
		return 0;
	}
	t_sm()->sm.pid = 0;
	fprintf(stderr, "%s: umc-sm did not start ($UMC_BIN)%s\n", program_invocation_short_name,
		required ? "" : ": its InfiniBand cases skipped");
	return required ? -1 : 0;
}

static inline int t_sm_required(void **state)
{
	return t_sm_start(true);
}

static inline int t_sm_optional(void **state)
{
	return t_sm_start(false);
}

static inline int t_sm_stop(void **state)
{
	if (getpid() != t_sm()->owner)
		return 0;
	if (t_sm_running()) {
		test_sm_stop(&t_sm()->sm);
		test_sm_free(&t_sm()->sm);
	}
	return 0;
}

/*
 * A case whose body runs in a child of fork, so that it probes the
 * devices afresh, bounded by T_CHILD_ALARM_S of alarm(2); the body
 * _exit()s non-zero to fail.  A cmocka assertion in the child fails the
 * case too, if less tidily: the child's copy of the runner goes on with
 * the later cases and exits non-zero (or meets its alarm), and its group
 * teardown leaves umc-sm alone (t_sm()->owner).  @needs: NULL, or what
 * the case needs (t_sm_running: umc-sm), without which it skips.
 * T_CHILD_CASE(name, needs) runs body_<name>.
 */
#define T_CHILD_ALARM_S 20

struct t_child_case {
	void (*body)(void);
	bool (*needs)(void);
};

static inline void t_child_case_run(void **state)
{
	const struct t_child_case *c = *state;
	pid_t pid;
	int status;

	if (c->needs && !c->needs())
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(T_CHILD_ALARM_S);
		c->body();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		fail_msg("the case's child hung (%d s): it waited for what never came, such as a "
			 "lock never released", T_CHILD_ALARM_S);
	if (WIFSIGNALED(status))
		fail_msg("the case's child died (signal %d)", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

#define T_CHILD_CASE(name, needs)                                                                  \
	{#name, t_child_case_run, NULL, NULL, &(struct t_child_case){body_##name, needs}}

/* Wait (bounded) until umc_ib0's port @ctx is ACTIVE: umc-sm registered it. */
static inline bool t_ib_port_active(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	for (uint64_t end = t_now_ms() + T_WAIT_MS; t_now_ms() < end; poll(NULL, 0, 10))
		if (!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE)
			return true;
	return false;
}

/* A test group's MGID on umc_ib0: ff12:401b::@hi:@lo (IPv4-style, link-local scope). */
static inline union ibv_gid t_ib_mgid(uint8_t hi, uint8_t lo)
{
	union ibv_gid g = {.raw = {0xff, 0x12, 0x40, 0x1b}};

	g.raw[13] = hi;
	g.raw[15] = lo;
	return g;
}

/* RFC 1071 over an IPv4 header including its checksum: 0 when valid. */
static inline uint16_t t_ipv4_csum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static inline void t_fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

#endif /* TEST_VERBS_COMMON_H */
