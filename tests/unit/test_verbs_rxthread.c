// SPDX-License-Identifier: MIT
/*
 * test_verbs_rxthread.c - posted receives fill while the program is not
 * receiving, as on a NIC: the background receive thread (rx_thread.c).
 *
 * The receiver posts 16000 receives, joins, and then sleeps - on purpose:
 * that is the scenario (rdma-core's mckey sleeps 3 s after joining).  A
 * sender in another process sends the 16000 datagrams in bursts of 256
 * as fast as it can, together far more than the group socket's buffer
 * holds; before each burst it waits until the receiver, which only reads
 * its device's counters and never calls a verb, has seen the last one
 * delivered.  So only the background thread can have delivered them, and
 * no datagram is lost to the socket buffer however slow the machine is
 * (how fast the thread keeps up is the benchmark's business).  Then the
 * CQ must hold all 16000, each sequence number once.
 *
 * Twice: once asleep, once computing (the receiver spins on the counter
 * instead of sleeping, so it is runnable and on a CPU all along).  The
 * thread stands in for both; it holds back only while the application
 * thread waits for a CPU without getting one, as busy receivers sharing a
 * CPU do (rx_sched.c umc_app_waiting).
 *
 * And a program asleep on a completion channel with a CQ armed and nothing
 * arriving is not woken for it: the thread, which then only drains what
 * the sleeper leaves, looks half as often after each drain that finds
 * nothing, from 50 us to 10 ms.  Counted as the thread's voluntary context
 * switches (proc(5); the thread is named umc-rx) while the program sleeps
 * 300 ms in poll(2) on the channel's fd; about 30 are expected, thousands
 * were made when it kept looking every 50 us, and none would mean the
 * thread was not looking at all.
 *
 * And while the program busy-polls, the thread looks at SCHED_BATCH, so
 * that its wake-ups do not preempt busy receivers sharing its CPU; it
 * stands in at SCHED_OTHER; a policy it inherited or was given from
 * outside it keeps.
 */
#include "verbs_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>

enum { N = 16000, SIZE = 64, SLOT = 40 + SIZE, BATCH = 64, BURST = 256 };

/* The sender, in a child process: its own HCA, started before the parent opens anything. */
static int sender(int ready_fd, uint32_t gip)
{
	struct t_env e;
	struct t_qp s;
	char c;

	t_env_open(&e, gip, true);
	t_qp_make(&s, e.pd, 0, T_QKEY);
	for (uint32_t i = 0; i < N; i += BATCH) {
		if (i % BURST == 0 && read(ready_fd, &c, 1) != 1)
			return 2; /* the receiver has all before i */
		struct ibv_sge sge[BATCH];
		struct ibv_send_wr wr[BATCH], *bad;

		for (int k = 0; k < BATCH; k++) {
			uint32_t *p = (uint32_t *)(s.buf + (size_t)k * SIZE);

			*p = i + (uint32_t)k;
			sge[k] = (struct ibv_sge){(uintptr_t)p, SIZE, s.mr->lkey};
			wr[k] = (struct ibv_send_wr){
				.wr_id = i + (uint32_t)k, .sg_list = &sge[k], .num_sge = 1,
				.opcode = IBV_WR_SEND, .next = k + 1 < BATCH ? &wr[k + 1] : NULL,
				.wr.ud = {.ah = e.ah, .remote_qpn = 0xffffff, .remote_qkey = T_QKEY},
			};
		}
		if (ibv_post_send(s.qp, wr, &bad))
			return 3;
		struct ibv_wc wc[BATCH];

		for (int got = 0; got < BATCH;) /* sq_sig_all: one completion per send */
			got += ibv_poll_cq(s.cq, BATCH, wc);
	}
	t_qp_free(&s);
	t_env_close(&e);
	return 0;
}

/* Wait about 1 ms: asleep, or computing (spinning on the clock). */
static void pause_1ms(bool spin)
{
	struct timespec ts = {0, 1000 * 1000};

	if (!spin) {
		nanosleep(&ts, NULL);
		return;
	}
	for (uint64_t end = t_now_ms() + 1; t_now_ms() < end;)
		;
}

static void receives_fill_while_away(bool spin, uint32_t gip)
{
	int pipefd[2];
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(pipefd[1]);
		_exit(sender(pipefd[0], gip));
	}
	close(pipefd[0]);

	struct t_env e;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf = calloc(N, SLOT);
	struct ibv_mr *mr;

	t_env_open(&e, gip, false);
	cq = ibv_create_cq(e.ctx, N, NULL, NULL, 0);
	assert_non_null(cq);
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 1, .max_recv_wr = N, .max_send_sge = 1, .max_recv_sge = 1},
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = e.pd,
	};
	qp = ibv_create_qp_ex(e.ctx, &a);
	assert_non_null(qp);
	assert_int_equal(t_qp_rts(qp, T_QKEY, 0), 0);
	assert_non_null(buf);
	mr = ibv_reg_mr(e.pd, buf, (size_t)N * SLOT, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	for (uint32_t i = 0; i < N; i++) {
		struct ibv_sge sge = {(uintptr_t)(buf + (size_t)i * SLOT), SLOT, mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
	}
	assert_int_equal(umc_dev_member(e.dev, &e.mgid, +1), 0);
	assert_int_equal(ibv_attach_mcast(qp, &e.mgid, 0), 0);
	/*
	 * One poll, as a program makes before it turns to other work: the
	 * thread now knows this thread as the one receiving, and watches it.
	 */
	struct ibv_wc wc0;

	assert_int_equal(ibv_poll_cq(cq, 1, &wc0), 0);
	/* Plain loads: T_CNT would run the engine, i.e. receive. */
	_Atomic uint64_t *delivered = &e.dev->cnt->rx_delivered;
	unsigned long delivered0 = atomic_load(delivered);

	/* Burst by burst: the sender blasts while this process does not touch the verbs. */
	for (unsigned long sent = 0; sent < N; sent += BURST) {
		for (int ms = 0; ms < 10000 && atomic_load(delivered) - delivered0 < sent;
		     ms += 1)
			pause_1ms(spin); /* not receiving: only the thread may deliver */
		if (atomic_load(delivered) - delivered0 < sent)
			break;
		assert_int_equal(write(pipefd[1], "g", 1), 1);
	}
	for (int ms = 0; ms < 10000 && atomic_load(delivered) - delivered0 < N; ms += 1)
		pause_1ms(spin);
	close(pipefd[1]);
	print_message("delivered by the background thread, the program %s: %lu of %d\n",
		      spin ? "computing" : "asleep", atomic_load(delivered) - delivered0, N);
	assert_int_equal(atomic_load(delivered) - delivered0, N);
	assert_int_equal(t_reap(pid, 30000), 0);

	/* Every message once, with its payload. */
	static uint8_t seen[N];

	memset(seen, 0, sizeof(seen));
	struct ibv_wc wc[64];
	int total = 0;

	for (int spins = 0; total < N && spins < 1000000; spins++) {
		int n = ibv_poll_cq(cq, 64, wc);

		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].byte_len, SLOT);
			uint32_t seq;

			memcpy(&seq, buf + wc[i].wr_id * SLOT + 40, sizeof(seq));
			assert_true(seq < N);
			assert_int_equal(seen[seq], 0);
			seen[seq] = 1;
		}
		total += n;
	}
	assert_int_equal(total, N);

	assert_int_equal(ibv_detach_mcast(qp, &e.mgid, 0), 0);
	umc_dev_member(e.dev, &e.mgid, -1);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	free(buf);
	t_env_close(&e);
}

/*
 * The background receive thread's ID ("umc-rx"; not, say, the unicast
 * agent, which other processes' QPs wake), or -1.
 */
static int rx_thread_tid(void)
{
	char path[300], line[32];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/task");
	int tid = -1;

	if (!dir)
		return -1;
	while (tid < 0 && (d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* gone meanwhile */
		if (fgets(line, sizeof(line), f) && strcmp(line, "umc-rx\n") == 0)
			tid = atoi(d->d_name);
		fclose(f);
	}
	closedir(dir);
	return tid;
}

/* Voluntary context switches of the background receive thread, or -1. */
static long rx_thread_switches(void)
{
	char path[64], line[128];
	int tid = rx_thread_tid();
	long n = -1, v;
	FILE *f;

	if (tid < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			n = v;
	if (f)
		fclose(f);
	return n;
}

/*
 * Sleep @ms in poll(2) on @ch's fd; 0, or -1 if an event came.  A wake-up
 * without one is not an event: another test's datagram to this host's
 * RoCE port may make the fd readable (umcast(7), "RECEIVING").
 */
static int sleep_on(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	uint64_t end = t_now_ms() + (uint64_t)ms;
	struct ibv_cq *cq;
	void *ctx;

	for (uint64_t now; (now = t_now_ms()) < end;)
		if (poll(&pfd, 1, (int)(end - now)) > 0 && ibv_get_cq_event(ch, &cq, &ctx) == 0)
			return -1;
	return 0;
}

/* In a child (its own device and thread): exit 0 if the thread kept quiet. */
static int armed_idle_child(uint32_t gip)
{
	struct t_env e;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	long before, woke;

	t_env_open(&e, gip, false);
	ch = ibv_create_comp_channel(e.ctx);
	cq = ch ? ibv_create_cq(e.ctx, 16, NULL, ch, 0) : NULL;
	qp = cq ? t_create_qp(e.pd, cq, 0) : NULL;
	struct ibv_wc wc;

	if (!qp || t_qp_rts(qp, T_QKEY, 0) || ibv_attach_mcast(qp, &e.mgid, 0) ||
	    ibv_req_notify_cq(cq, 0) || fcntl(ch->fd, F_SETFL, O_NONBLOCK))
		return 2;
	/*
	 * One poll after the arm: a thread that went to sleep on the sockets
	 * before it (nothing was armed then) is kicked, and from now on finds
	 * the CQ armed.
	 */
	if (ibv_poll_cq(cq, 1, &wc) != 0)
		return 2;
	if (sleep_on(ch, 100)) /* the thread settles */
		return 3;
	before = rx_thread_switches();
	if (before < 0 || sleep_on(ch, 300))
		return 3;
	woke = rx_thread_switches() - before;
	fprintf(stderr, "background thread: %ld wake-ups in 300 ms armed and idle\n", woke);
	/* At least a few: a thread asleep for good would pass without backing off. */
	return woke >= 5 && woke <= 60 ? 0 : 1;
}

/* Run @child(@gip) in a child process of its own (its own device and thread); it must exit 0. */
static void in_child(int (*child)(uint32_t), uint32_t gip)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(gip));
	assert_int_equal(t_reap(pid, 30000), 0);
}

static void test_armed_idle_channel_is_left_asleep(void **state)
{
	(void)state;
	in_child(armed_idle_child, t_group_ip(202));
}

/* In a child: a device with a QP attached (the thread starts); its CQ, or NULL. */
static struct ibv_cq *rx_thread_started(uint32_t gip)
{
	static struct t_env e;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	t_env_open(&e, gip, false);
	cq = ibv_create_cq(e.ctx, 16, NULL, NULL, 0);
	qp = cq ? t_create_qp(e.pd, cq, 0) : NULL;
	if (!qp || t_qp_rts(qp, T_QKEY, 0) || ibv_attach_mcast(qp, &e.mgid, 0))
		return NULL;
	return cq;
}

/*
 * 100 ms of busy polls on @cq and 100 ms asleep (the thread looks, then
 * stands in); *@busy and *@away: thread @tid's policy after each.
 */
static int busy_then_away(struct ibv_cq *cq, int tid, int *busy, int *away)
{
	struct ibv_wc wc;

	for (uint64_t end = t_now_ms() + 100; t_now_ms() < end;)
		if (ibv_poll_cq(cq, 1, &wc) < 0)
			return 2;
	*busy = sched_getscheduler(tid);
	usleep(100 * 1000);
	*away = sched_getscheduler(tid);
	return 0;
}

/* rx_thread_started, then busy_then_away; the thread's ID in *@tid.  0, or 2. */
static int look_then_away(uint32_t gip, int *tid, int *busy, int *away)
{
	struct ibv_cq *cq = rx_thread_started(gip);

	if (!cq || (*tid = rx_thread_tid()) < 0)
		return 2;
	return busy_then_away(cq, *tid, busy, away);
}

/*
 * In a child: exit 0 if the thread looks at SCHED_BATCH while the program
 * busy-polls (its wake-ups preempt no receiver on its CPU) and is back at
 * SCHED_OTHER once the program sleeps and it stands in (rx_sched.c
 * umc_rx_policy).
 */
static int policy_child(uint32_t gip)
{
	int tid, busy = -1, away = -1, ret = look_then_away(gip, &tid, &busy, &away);

	fprintf(stderr, "background thread: policy %d busy-polled, %d away (BATCH %d, OTHER %d)\n",
		busy, away, SCHED_BATCH, SCHED_OTHER);
	return ret ? ret : busy == SCHED_BATCH && away == SCHED_OTHER ? 0 : 1;
}

static void test_looks_at_batch_policy(void **state)
{
	(void)state;
	in_child(policy_child, t_group_ip(203));
}

/*
 * In a child: the program is at SCHED_BATCH when the thread starts, set
 * by sched_setscheduler(2) after a pthread_setschedparam(3) that chose
 * SCHED_OTHER (glibc then still reports SCHED_OTHER from its cache).  The
 * thread inherits SCHED_BATCH from the kernel and must keep it.
 */
static int inherited_child(uint32_t gip)
{
	struct sched_param sp = {0};
	int tid, busy = -1, away = -1, ret;

	if (pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp) ||
	    sched_setscheduler(0, SCHED_BATCH, &sp))
		return 2;
	ret = look_then_away(gip, &tid, &busy, &away);
	fprintf(stderr, "inherited SCHED_BATCH: policy %d busy-polled, %d away\n", busy, away);
	return ret ? ret : busy == SCHED_BATCH && away == SCHED_BATCH ? 0 : 1;
}

static void test_inherited_policy_is_kept(void **state)
{
	(void)state;
	in_child(inherited_child, t_group_ip(204));
}

/*
 * In a child: a policy given to the running thread from outside (chrt -p
 * on its ID, or chrt -a on the process) is kept: SCHED_BATCH, and
 * SCHED_FIFO where the test may set it.  The thread has looked and stood
 * in once before.
 */
static int given_child(uint32_t gip)
{
	static const int policies[] = {SCHED_BATCH, SCHED_FIFO};
	struct ibv_cq *cq = rx_thread_started(gip);
	int tid, busy, away;

	if (!cq || (tid = rx_thread_tid()) < 0 || busy_then_away(cq, tid, &busy, &away))
		return 2;
	for (unsigned i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		struct sched_param sp = {.sched_priority = policies[i] == SCHED_FIFO};

		if (sched_setscheduler(tid, policies[i], &sp)) {
			if (errno == EPERM)
				continue;
			return 2;
		}
		if (busy_then_away(cq, tid, &busy, &away))
			return 2;
		fprintf(stderr, "given policy %d: %d busy-polled, %d away\n", policies[i], busy,
			away);
		if (busy != policies[i] || away != policies[i])
			return 1;
		sp.sched_priority = 0;
		if (sched_setscheduler(tid, SCHED_OTHER, &sp))
			return 2;
	}
	return 0;
}

static void test_given_policy_is_kept(void **state)
{
	(void)state;
	in_child(given_child, t_group_ip(205));
}

static void test_receives_fill_while_sleeping(void **state)
{
	(void)state;
	receives_fill_while_away(false, t_group_ip(200));
}

static void test_receives_fill_while_computing(void **state)
{
	(void)state;
	receives_fill_while_away(true, t_group_ip(201));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_receives_fill_while_sleeping),
		cmocka_unit_test(test_receives_fill_while_computing),
		cmocka_unit_test(test_armed_idle_channel_is_left_asleep),
		cmocka_unit_test(test_looks_at_batch_policy),
		cmocka_unit_test(test_inherited_policy_is_kept),
		cmocka_unit_test(test_given_policy_is_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
