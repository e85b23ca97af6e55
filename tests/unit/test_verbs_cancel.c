// SPDX-License-Identifier: MIT
/*
 * test_verbs_cancel.c - pthread_cancel(3) of a thread inside the verbs.
 *
 * libibverbs' ibv_poll_cq and ibv_post_send make no system call that is a
 * cancellation point (pthreads(7)); ibv_get_cq_event blocks in read(2),
 * which is one, holding no lock.  Programs rely on this: they cancel their
 * completion thread at shutdown, and then destroy the QPs and CQs.  In
 * umcast, ibv_poll_cq and ibv_post_send make socket calls with the
 * device's receive lock or the QP's send lock held, so those calls must
 * not be cancellation points: a thread cancelled there would leave the
 * lock held, and the device would stop receiving, or the QP sending, for
 * good.  Creating and destroying a QP wait for the host's unicast
 * demultiplexer with the device's locks held: a cancel must not take
 * effect there either.  Each test runs a thread that busy-polls (or sends,
 * or takes events as they come, or waits for them, or creates and destroys
 * QPs), cancels it, and then requires the locks free and a datagram sent
 * and received through the same objects; a thread waiting for CM events
 * must leave no reference on its channel behind.  The background receive thread is off (UMC_RX_THREAD=0), so no
 * other thread holds the locks.  A lock left held ends the run at once:
 * every later case would hang on it.
 */
#include "verbs_util.h"
#include "cm/cm_int.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <time.h>

enum { CALLS = 200 }; /* library calls between two of the thread's own cancellation points */

struct rig {
	struct t_env e;
	struct t_qp s, r;
	struct ibv_comp_channel *ch; /* r's CQ's */
};

static void rig_up(struct rig *g, unsigned group)
{
	memset(g, 0, sizeof(*g));
	t_env_open(&g->e, t_group_ip(group), true);
	t_qp_make(&g->s, g->e.pd, 0, T_QKEY);
	g->ch = ibv_create_comp_channel(g->e.ctx);
	assert_non_null(g->ch);
	t_qp_make_ch(&g->r, g->e.pd, 0, T_QKEY, g->ch);
	assert_int_equal(ibv_attach_mcast(g->r.qp, &g->e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(g->e.dev, &g->e.mgid, +1), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(t_post_recv(&g->r, (size_t)i * 256, 256, (uint64_t)i), 0);
}

static void rig_down(struct rig *g)
{
	assert_int_equal(umc_dev_member(g->e.dev, &g->e.mgid, -1), 0);
	assert_int_equal(ibv_detach_mcast(g->r.qp, &g->e.mgid, 0), 0);
	t_qp_free(&g->r);
	assert_int_equal(ibv_destroy_comp_channel(g->ch), 0);
	t_qp_free(&g->s);
	t_env_close(&g->e);
}

/* Start @fn(@g), let it run for a while, cancel it: it ends cancelled. */
static void run_and_cancel(void *g, void *(*fn)(void *))
{
	struct timespec until;
	pthread_t t;
	void *ret = NULL;

	assert_int_equal(pthread_create(&t, NULL, fn, g), 0);
	poll(NULL, 0, 100);
	assert_int_equal(pthread_cancel(t), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	assert_int_equal(pthread_timedjoin_np(t, &ret, &until), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
}

/*
 * @m is free, or freed within 2 s by a thread that holds it for a moment;
 * else the run ends here (anything after would hang on it).
 */
static void assert_free(pthread_mutex_t *m, const char *what, const char *lock)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	if (pthread_mutex_timedlock(m, &until)) {
		fprintf(stderr, "FAIL: %s: %s was left held\n", what, lock);
		_exit(1);
	}
	pthread_mutex_unlock(m);
}

/* Nothing is left locked, and the objects still send and receive. */
static void assert_alive(struct rig *g, const char *what)
{
	struct ibv_wc wc;

	assert_free(&g->e.dev->rx_lock, what, "the device's receive lock");
	assert_free(&to_uqp(g->s.qp)->sq_lock, what, "the sender QP's send lock");
	assert_free(&to_uchan(g->ch)->lock, what, "the completion channel's lock");
	assert_int_equal(t_send(&g->s, g->e.ah, "alive", 5, T_QKEY, false, 0, IBV_SEND_SIGNALED, 77),
			 0);
	t_wait_send(g->s.cq, 77);
	assert_int_equal(t_wait_wc(g->r.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 40 + 5);
	assert_int_equal(wc.src_qp, g->s.qp->qp_num);
	assert_memory_equal(g->r.buf + wc.wr_id * 256 + 40, "alive", 5);
}

/* A busy poller: the device's receive engine runs in every empty poll. */
static void *busy_poller(void *arg)
{
	struct rig *g = arg;
	struct ibv_wc wc;

	for (;;) {
		for (int i = 0; i < CALLS; i++)
			(void)ibv_poll_cq(g->r.cq, 1, &wc);
		pthread_testcancel();
	}
	return NULL;
}

static void test_cancelled_poller(void **state)
{
	struct rig g;

	rig_up(&g, 21);
	run_and_cancel(&g, busy_poller);
	assert_alive(&g, "poller");
	rig_down(&g);
}

/* A sender: each post sends from the QP's socket with its send lock held. */
static void *busy_sender(void *arg)
{
	struct rig *g = arg;
	struct ibv_wc wc;

	for (;;) {
		for (int i = 0; i < CALLS; i++) {
			(void)t_send(&g->s, g->e.ah, "x", 1, T_QKEY + 1, false, 0, IBV_SEND_SIGNALED,
				     1);
			while (ibv_poll_cq(g->s.cq, 1, &wc) > 0)
				;
		}
		pthread_testcancel();
	}
	return NULL;
}

static void test_cancelled_sender(void **state)
{
	struct rig g;
	struct ibv_wc wc;

	rig_up(&g, 22);
	run_and_cancel(&g, busy_sender);
	/* Its datagrams carried another Q_Key: none was received. */
	while (ibv_poll_cq(g.s.cq, 1, &wc) > 0)
		;
	assert_alive(&g, "sender");
	rig_down(&g);
}

/*
 * A thread asleep in ibv_get_cq_event: a cancellation point there, as in
 * libibverbs (read(2)), and the channel still works after it.
 */
static void *event_waiter(void *arg)
{
	struct rig *g = arg;
	struct ibv_cq *cq;
	void *ctx;

	for (;;) {
		(void)ibv_req_notify_cq(g->r.cq, 0);
		if (ibv_get_cq_event(g->ch, &cq, &ctx) == 0)
			ibv_ack_cq_events(cq, 1);
	}
	return NULL;
}

/* A guard more than a regression test: this case passed before too. */
static void test_cancelled_event_waiter(void **state)
{
	struct pollfd p;
	struct rig g;
	struct ibv_cq *cq;
	void *ctx;

	rig_up(&g, 23);
	run_and_cancel(&g, event_waiter);
	assert_alive(&g, "event waiter");
	/* The channel: an arm, a datagram, its event. */
	assert_int_equal(ibv_req_notify_cq(g.r.cq, 0), 0);
	assert_int_equal(t_send(&g.s, g.e.ah, "event", 5, T_QKEY, false, 0, IBV_SEND_SIGNALED, 78),
			 0);
	t_wait_send(g.s.cq, 78);
	p = (struct pollfd){.fd = g.ch->fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, T_WAIT_MS), 1);
	assert_int_equal(ibv_get_cq_event(g.ch, &cq, &ctx), 0);
	assert_ptr_equal(cq, g.r.cq);
	ibv_ack_cq_events(cq, 1);
	rig_down(&g);
}

/*
 * Under AddressSanitizer: a cancelled thread's stack is unwound without
 * ASan unpoisoning it, and ASan's own thread exit, taking down its
 * alternate signal stack, then reports a stack-buffer-underflow
 * (google/sanitizers issue 1399, open).  Without that stack there is no
 * such write.  Only ASan calls this; ASAN_OPTIONS still overrides it.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "use_sigaltstack=0";
}

/*
 * A thread that takes events as the datagrams raise them: each raise, in
 * the engine, writes the channel's byte, and each take reads it, both
 * with the channel's lock held.  Another thread keeps the datagrams
 * coming.
 */
static atomic_bool feeding;

static void *feeder(void *arg)
{
	struct rig *g = arg;
	struct ibv_wc wc;

	while (atomic_load(&feeding)) {
		(void)t_send(&g->s, g->e.ah, "f", 1, T_QKEY, false, 0, IBV_SEND_SIGNALED, 2);
		while (ibv_poll_cq(g->s.cq, 1, &wc) > 0)
			;
	}
	return NULL;
}

static void *event_taker(void *arg)
{
	struct rig *g = arg;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	void *ctx;

	for (;;) {
		for (int i = 0; i < CALLS; i++) {
			(void)ibv_req_notify_cq(g->r.cq, 0);
			while (ibv_poll_cq(g->r.cq, 1, &wc) > 0)
				(void)t_post_recv(&g->r, (size_t)wc.wr_id * 256, 256, wc.wr_id);
			if (ibv_get_cq_event(g->ch, &cq, &ctx) == 0) /* non-blocking */
				ibv_ack_cq_events(cq, 1);
		}
		pthread_testcancel();
	}
	return NULL;
}

static void test_cancelled_event_taker(void **state)
{
	struct rig g;
	pthread_t f;
	struct ibv_wc wc;

	rig_up(&g, 24);
	assert_int_equal(fcntl(g.ch->fd, F_SETFL, fcntl(g.ch->fd, F_GETFL) | O_NONBLOCK), 0);
	atomic_store(&feeding, true);
	assert_int_equal(pthread_create(&f, NULL, feeder, &g), 0);
	run_and_cancel(&g, event_taker);
	/* Before the feeder stops: it would hang on a lock left held. */
	assert_free(&g.e.dev->rx_lock, "event taker", "the device's receive lock");
	assert_free(&to_uchan(g.ch)->lock, "event taker", "the completion channel's lock");
	atomic_store(&feeding, false);
	assert_int_equal(pthread_join(f, NULL), 0);
	/* What the feeder sent last, and what the taker left: the CQs start empty. */
	while (ibv_poll_cq(g.s.cq, 1, &wc) > 0)
		;
	for (uint64_t end = t_now_ms() + 200; t_now_ms() < end;)
		while (ibv_poll_cq(g.r.cq, 1, &wc) > 0)
			(void)t_post_recv(&g.r, (size_t)wc.wr_id * 256, 256, wc.wr_id);
	assert_alive(&g, "event taker");
	rig_down(&g);
}

/*
 * A thread that creates and destroys QPs.  Creating one claims its QPN
 * from the host's unicast demultiplexer and waits for the answer, and
 * destroying it releases the QPN, with the device's locks held; those
 * waits must not be where a cancel takes effect.
 */
static struct ibv_qp *create_ud_qp(struct rig *g)
{
	struct ibv_qp_init_attr a = {
	    .send_cq = g->s.cq,
	    .recv_cq = g->s.cq,
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	};

	return ibv_create_qp(g->e.pd, &a);
}

static void *qp_creator(void *arg)
{
	struct rig *g = arg;

	for (;;) {
		struct ibv_qp *qp = create_ud_qp(g);

		if (qp) /* a QP left over would fail rig_down's ibv_destroy_cq (EBUSY) */
			(void)ibv_destroy_qp(qp);
		pthread_testcancel();
	}
	return NULL;
}

/* Create and destroy one QP on another thread: it hangs if a lock was left held. */
static void *create_once(void *arg)
{
	struct ibv_qp *qp = create_ud_qp(arg);

	return (void *)(uintptr_t)(qp && ibv_destroy_qp(qp) == 0);
}

static void test_cancelled_qp_creator(void **state)
{
	struct timespec until;
	struct rig g;
	pthread_t t;
	void *ok = NULL;

	rig_up(&g, 25);
	run_and_cancel(&g, qp_creator);
	assert_free(&g.e.dev->lock, "QP creator", "the device's lock");
	assert_free(&g.e.dev->rx_lock, "QP creator", "the device's receive lock");
	assert_int_equal(pthread_create(&t, NULL, create_once, &g), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	if (pthread_timedjoin_np(t, &ok, &until)) {
		fprintf(stderr, "FAIL: QP creator: a new QP's creation hangs\n");
		_exit(1);
	}
	assert_true(ok);
	assert_alive(&g, "QP creator");
	rig_down(&g);
}

/*
 * A thread asleep in rdma_get_cm_event: a cancellation point there too,
 * as in librdmacm (read(2)).  The getter holds a reference on the channel
 * while it waits; cancelled, it must drop it, or the channel's fds stay
 * open after rdma_destroy_event_channel.
 */
static void *cm_getter(void *arg)
{
	struct rdma_cm_event *ev;

	for (;;)
		if (rdma_get_cm_event(arg, &ev) == 0)
			(void)rdma_ack_cm_event(ev);
	return NULL;
}

static void test_cancelled_cm_getter(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	int fd;

	assert_non_null(ch);
	fd = ch->fd;
	run_and_cancel(ch, cm_getter);
	/* Only the channel's own reference is left: the getter dropped its. */
	assert_int_equal(atomic_load(&to_chan(ch)->refcnt), 1);
	rdma_destroy_event_channel(ch);
	errno = 0;
	assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed by the last reference */
	assert_int_equal(errno, EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cancelled_poller),
	    cmocka_unit_test(test_cancelled_sender),
	    cmocka_unit_test(test_cancelled_event_taker),
	    cmocka_unit_test(test_cancelled_event_waiter),
	    cmocka_unit_test(test_cancelled_qp_creator),
	    cmocka_unit_test(test_cancelled_cm_getter),
	};

	setenv("UMC_RX_THREAD", "0", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
