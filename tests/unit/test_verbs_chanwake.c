// SPDX-License-Identifier: MIT
/*
 * test_verbs_chanwake.c - a program asleep on a completion channel is woken
 * by the datagram itself, with no other thread: the background receive
 * thread is off (UMC_RX_THREAD=0, set before the first device opens), so
 * nothing but the sleeping thread's own wake-up can deliver.
 *
 *   - poll(2) on the channel's fd of an armed CQ returns when a datagram
 *     arrives; a non-blocking ibv_get_cq_event then receives it and returns
 *     the CQ's event, and the completion holds the datagram;
 *   - a thread blocked in ibv_get_cq_event returns with the event;
 *   - with no CQ of the channel armed, a waiting datagram does not make the
 *     fd readable (once an ibv_get_cq_event found no event: the watch ends
 *     lazily); arming then does (the datagram's completion is made after
 *     the arm, so it raises the event);
 *   - a group attached while the channel watches (its socket is new) wakes
 *     the fd too, and the channel keeps working once it is detached, with
 *     another channel of the device made and destroyed meanwhile;
 *   - the documented exception: a datagram that raises no event on the
 *     channel (its CQ armed for solicited events only) may wake the fd; a
 *     non-blocking ibv_get_cq_event then says EAGAIN, the completion is in
 *     the CQ, and the fd is quiet again;
 *   - signals, as libibverbs' read(2) of the channel takes them: a handler
 *     installed with SA_RESTART, or a stop and SIGCONT (while another
 *     signal has a handler without SA_RESTART), leave a blocked
 *     ibv_get_cq_event waiting (a datagram then ends it with the event);
 *     a handler without SA_RESTART ends it with -1 and EINTR, one with
 *     SA_RESETHAND too.
 *
 * References: ibv_get_cq_event(3), ibv_req_notify_cq(3); umcast(7),
 * "Completion channels".
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "verbs_util.h"

struct fx {
	struct t_env e;
	struct t_qp s; /* sender */
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp; /* receiver, its CQ on the channel */
	struct ibv_mr *mr;
	uint8_t buf[4 * 2048];
};

static unsigned group_seq;
static int cq_ctx_marker;

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	t_env_open(&f->e, t_group_ip(160 + ++group_seq), true);
	if (!f->e.pd || !f->e.ah)
		return -1;
	t_qp_make(&f->s, f->e.pd, 0, T_QKEY);
	f->ch = ibv_create_comp_channel(f->e.ctx);
	f->cq = f->ch ? ibv_create_cq(f->e.ctx, 64, &cq_ctx_marker, f->ch, 0) : NULL;
	f->qp = f->cq ? t_create_qp(f->e.pd, f->cq, 0) : NULL;
	f->mr = ibv_reg_mr(f->e.pd, f->buf, sizeof(f->buf), IBV_ACCESS_LOCAL_WRITE);
	if (!f->qp || !f->mr || t_qp_rts(f->qp, T_QKEY, 0) ||
	    umc_dev_member(f->e.dev, &f->e.mgid, +1) || ibv_attach_mcast(f->qp, &f->e.mgid, 0))
		return -1;
	for (int i = 0; i < 4; i++) {
		struct ibv_sge sge = {(uintptr_t)f->buf + (size_t)i * 2048, 2048, f->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_recv(f->qp, &wr, &bad))
			return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	assert_int_equal(ibv_detach_mcast(f->qp, &f->e.mgid, 0), 0);
	umc_dev_member(f->e.dev, &f->e.mgid, -1);
	assert_int_equal(ibv_destroy_qp(f->qp), 0);
	assert_int_equal(ibv_destroy_cq(f->cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(f->ch), 0);
	assert_int_equal(ibv_dereg_mr(f->mr), 0);
	t_qp_free(&f->s);
	t_env_close(&f->e);
	free(f);
	return 0;
}

/* Send @len bytes; the send completion is reaped, which receives nothing. */
static void send_one(struct fx *f, uint32_t len, unsigned seed, int flags)
{
	uint8_t data[256];

	t_fill(data, len, seed);
	assert_int_equal(t_send(&f->s, f->e.ah, data, len, T_QKEY, false, 0, flags, seed), 0);
	t_wait_send(f->s.cq, seed);
}

static int poll_in(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms);
}

static void set_nonblock(int fd)
{
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

/* The receive completion of @len bytes is on the CQ, and only it. */
static void expect_wc(struct fx *f, uint32_t len)
{
	struct ibv_wc wc;

	assert_int_equal(ibv_poll_cq(f->cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 40 + len);
	assert_int_equal(ibv_poll_cq(f->cq, 1, &wc), 0);
}

/* Arm the CQ, send @len bytes: the fd wakes, the CQ's event is there, then the completion. */
static void arm_send_expect_event(struct fx *f, uint32_t len, unsigned seed)
{
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx;

	assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0);
	send_one(f, len, seed, 0);
	assert_int_equal(poll_in(f->ch->fd, T_WAIT_MS), 1);
	assert_int_equal(ibv_get_cq_event(f->ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, f->cq);
	ibv_ack_cq_events(ev_cq, 1);
	expect_wc(f, len);
}

static void test_poll_on_fd_woken_by_datagram(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;

	set_nonblock(f->ch->fd);
	assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0);
	assert_int_equal(poll_in(f->ch->fd, 0), 0);
	send_one(f, 33, 1, 0);
	/* Nobody receives: only the arrival itself can end this poll. */
	assert_int_equal(poll_in(f->ch->fd, T_WAIT_MS), 1);
	assert_int_equal(ibv_get_cq_event(f->ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, f->cq);
	assert_ptr_equal(ev_ctx, &cq_ctx_marker);
	ibv_ack_cq_events(ev_cq, 1);
	expect_wc(f, 33);
	assert_int_equal(poll_in(f->ch->fd, 0), 0);

	/* Again, re-armed: every event of a loop of arm / poll / get. */
	for (unsigned i = 0; i < 3; i++) {
		arm_send_expect_event(f, 40 + i, 2 + i);
		/* Its buffer takes a receive again. */
		struct ibv_sge sge = {(uintptr_t)f->buf, 2048, f->mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = 9, .sg_list = &sge, .num_sge = 1}, *bad;

		assert_int_equal(ibv_post_recv(f->qp, &wr, &bad), 0);
	}
}

struct waiter {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	int ret;
	int err;
	int ready[2];
	pthread_t tid;
};

static void *wait_event(void *arg)
{
	struct waiter *w = arg;
	void *ctx;

	assert_int_equal(write(w->ready[1], "w", 1), 1);
	w->ret = ibv_get_cq_event(w->ch, &w->cq, &ctx);
	w->err = errno;
	return NULL;
}

/* Arm @f's CQ and start a thread blocked in ibv_get_cq_event (or about to be). */
static void waiter_start(struct fx *f, struct waiter *w)
{
	char c;

	w->ch = f->ch;
	w->ret = -2;
	assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0);
	assert_int_equal(pipe(w->ready), 0);
	assert_int_equal(pthread_create(&w->tid, NULL, wait_event, w), 0);
	assert_true(t_read_full(w->ready[0], &c, 1, T_WAIT_MS));
	close(w->ready[0]);
	close(w->ready[1]);
}

/* A datagram of @len bytes ends the waiter with the CQ's event; the completion holds it. */
static void waiter_send_expect_event(struct fx *f, struct waiter *w, uint32_t len, unsigned seed)
{
	send_one(f, len, seed, 0);
	alarm(10);
	assert_int_equal(pthread_join(w->tid, NULL), 0);
	alarm(0);
	assert_int_equal(w->ret, 0);
	assert_ptr_equal(w->cq, f->cq);
	ibv_ack_cq_events(w->cq, 1);
	expect_wc(f, len);
}

static void test_blocked_get_cq_event_woken_by_datagram(void **state)
{
	struct fx *f = *state;
	struct waiter w;

	waiter_start(f, &w);
	/* Whether it is already asleep or not, the datagram must reach it. */
	waiter_send_expect_event(f, &w, 50, 5);
}

static atomic_int sig_taken;

static void on_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&sig_taken, 1);
}

/* @sig's handler, with @flags (SA_RESTART, SA_RESETHAND, or none), or SIG_DFL. */
static void set_handler(int sig, int flags, bool on)
{
	struct sigaction sa = {.sa_handler = on ? on_signal : SIG_DFL, .sa_flags = flags};

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(sig, &sa, NULL), 0);
}

/*
 * Signal the waiter (SIGUSR1's handler made anew with @flags each time: an
 * SA_RESETHAND one is gone once it ran) every 20 ms, at most 50 times,
 * until it returns (it may not be asleep yet when the first comes); true
 * if it did.
 */
static bool signal_until_returned(struct waiter *w, int flags)
{
	for (int i = 0; i < 50; i++) {
		set_handler(SIGUSR1, flags, true);
		assert_int_equal(pthread_kill(w->tid, SIGUSR1), 0);
		poll(NULL, 0, 20);
		if (pthread_tryjoin_np(w->tid, NULL) == 0)
			return true;
	}
	return false;
}

/* A handler with @flags ends the waiter with -1/EINTR; the channel works on. */
static void expect_eintr(struct fx *f, int flags, uint32_t len)
{
	struct waiter w;

	waiter_start(f, &w);
	if (!signal_until_returned(&w, flags)) {
		send_one(f, len, len, 0); /* let it go before failing */
		pthread_join(w.tid, NULL);
		fail_msg("a handler with flags %#x did not end ibv_get_cq_event", flags);
	}
	assert_int_equal(w.ret, -1);
	assert_int_equal(w.err, EINTR);
	set_handler(SIGUSR1, 0, false);
	arm_send_expect_event(f, len + 1, len + 1);
}

static void test_blocked_get_cq_event_and_signals(void **state)
{
	struct fx *f = *state;
	struct waiter w;
	pid_t pid;

	/* SA_RESTART: ten signals taken, and still waiting; a datagram ends it. */
	set_handler(SIGUSR1, SA_RESTART, true);
	atomic_store(&sig_taken, 0);
	waiter_start(f, &w);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(pthread_kill(w.tid, SIGUSR1), 0);
		poll(NULL, 0, 20);
	}
	assert_true(atomic_load(&sig_taken) >= 1); /* (a standard signal may coalesce) */
	assert_int_equal(pthread_tryjoin_np(w.tid, NULL), EBUSY);
	waiter_send_expect_event(f, &w, 50, 6);
	set_handler(SIGUSR1, 0, false);

	/*
	 * A stop and SIGCONT (from a child) while SIGUSR2 has a handler without
	 * SA_RESTART that never runs: read(2) sleeps through them, so must we.
	 */
	set_handler(SIGUSR2, 0, true);
	waiter_start(f, &w);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		poll(NULL, 0, 50);
		kill(getppid(), SIGSTOP);
		poll(NULL, 0, 50);
		kill(getppid(), SIGCONT);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	poll(NULL, 0, 50);
	assert_int_equal(pthread_tryjoin_np(w.tid, NULL), EBUSY);
	waiter_send_expect_event(f, &w, 51, 7);
	set_handler(SIGUSR2, 0, false);

	/* No SA_RESTART, and SA_RESETHAND (signal() under strict ISO C): EINTR. */
	expect_eintr(f, 0, 60);
	expect_eintr(f, SA_RESETHAND, 70);
}

static void test_fd_quiet_until_armed(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	set_nonblock(f->ch->fd);
	/* Armed once and fired: the channel has been watching the sockets. */
	arm_send_expect_event(f, 20, 6);
	/*
	 * Not armed any more, but still watching (the watch ends lazily): a
	 * datagram may wake the fd once; the non-blocking get that finds no
	 * event ends the watch ...
	 */
	send_one(f, 21, 7, 0);
	assert_int_equal(poll_in(f->ch->fd, T_WAIT_MS), 1);
	errno = 0;
	assert_int_equal(ibv_get_cq_event(f->ch, &ev_cq, &ev_ctx), -1);
	assert_int_equal(errno, EAGAIN);
	expect_wc(f, 21);
	/* ... so a datagram that waits now leaves the fd quiet. */
	send_one(f, 22, 8, 0);
	assert_int_equal(poll_in(f->ch->fd, 100), 0);
	/* Armed now: it completes after the arm, so it raises the event. */
	assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0);
	assert_int_equal(poll_in(f->ch->fd, T_WAIT_MS), 1);
	assert_int_equal(ibv_get_cq_event(f->ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, f->cq);
	ibv_ack_cq_events(ev_cq, 1);
	expect_wc(f, 22);
}

static void test_spurious_wake_is_eagain(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	set_nonblock(f->ch->fd);
	assert_int_equal(ibv_req_notify_cq(f->cq, 1), 0); /* solicited only */
	send_one(f, 30, 9, 0);			       /* not solicited */
	assert_int_equal(poll_in(f->ch->fd, T_WAIT_MS), 1);
	errno = 0;
	assert_int_equal(ibv_get_cq_event(f->ch, &ev_cq, &ev_ctx), -1);
	assert_int_equal(errno, EAGAIN);
	expect_wc(f, 30);
	assert_int_equal(poll_in(f->ch->fd, 0), 0);
	/* Still armed: the solicited one raises the event. */
	send_one(f, 31, 10, IBV_SEND_SOLICITED);
	assert_int_equal(poll_in(f->ch->fd, T_WAIT_MS), 1);
	assert_int_equal(ibv_get_cq_event(f->ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, f->cq);
	ibv_ack_cq_events(ev_cq, 1);
	expect_wc(f, 31);
}

static void test_group_attached_while_armed(void **state)
{
	struct fx *f = *state;
	uint32_t gip2 = t_group_ip(200 + group_seq);
	union ibv_gid mgid2 = t_gid_v4(gip2);
	struct ibv_ah *ah2 = t_ipv4_ah(f->e.pd, gip2);
	struct ibv_comp_channel *other = ibv_create_comp_channel(f->e.ctx);
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	uint8_t data[64];

	assert_non_null(ah2);
	assert_non_null(other);
	set_nonblock(f->ch->fd);
	assert_int_equal(ibv_req_notify_cq(f->cq, 0), 0); /* the channel watches from here */
	assert_int_equal(umc_dev_member(f->e.dev, &mgid2, +1), 0);
	assert_int_equal(ibv_attach_mcast(f->qp, &mgid2, 0), 0);
	t_fill(data, 44, 11);
	assert_int_equal(t_send(&f->s, ah2, data, 44, T_QKEY, false, 0, 0, 11), 0);
	t_wait_send(f->s.cq, 11);
	/* Nobody receives: only the new group's socket in the set can end this poll. */
	assert_int_equal(poll_in(f->ch->fd, T_WAIT_MS), 1);
	assert_int_equal(ibv_get_cq_event(f->ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, f->cq);
	ibv_ack_cq_events(ev_cq, 1);
	expect_wc(f, 44);

	assert_int_equal(ibv_detach_mcast(f->qp, &mgid2, 0), 0);
	assert_int_equal(umc_dev_member(f->e.dev, &mgid2, -1), 0);
	assert_int_equal(ibv_destroy_comp_channel(other), 0);
	arm_send_expect_event(f, 45, 12);
	assert_int_equal(ibv_destroy_ah(ah2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_poll_on_fd_woken_by_datagram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_blocked_get_cq_event_woken_by_datagram, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_blocked_get_cq_event_and_signals, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fd_quiet_until_armed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spurious_wake_is_eagain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_attached_while_armed, setup, teardown),
	};

	/* Before any device opens: no background receive thread in this process. */
	setenv("UMC_RX_THREAD", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
