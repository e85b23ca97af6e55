// SPDX-License-Identifier: MIT
/*
 * test_verbs_rxepoll.c - which epoll set a device's receive endpoints are
 * in (progress.c __umc_rx_epoll).
 *
 * A socket in an epoll set makes every datagram that reaches it run the
 * set's wake-up callback, whether anyone waits on the set or not.  So the
 * device's set (rx_epfd) holds its endpoints only while someone reads it:
 * the background receive thread about to sleep on it, or a pass over more
 * than four endpoints.  Checked here by what the kernel says the set holds
 * (/proc/self/fdinfo): none while the program busy-polls, all of them
 * once it sleeps (and the thread delivers a datagram that arrives
 * meanwhile), none again once it polls (its poll wakes the thread asleep
 * on the set, datagram or not), and all while more than four endpoints make
 * the passes ask the set, where a datagram to the last group is still
 * received.  Run again with UMC_RX_THREAD=0: with no thread to sleep on
 * it, the set empties as soon as four endpoints or fewer are left; and
 * with the same-host path off (UMC_SHM=0); with it, each group has a second
 * endpoint, its reader of the rings, whose fd is readable only for a
 * sleeper: the thread is woken through it, and a pass over many reads it
 * without asking the set.
 */
#include "link/shm/shm.h"
#include "verbs_util.h"

enum { NGROUPS = 6 };

/* A group's endpoints: its socket, and with the same-host path its reader. */
static int group_eps(void)
{
	return umc_shm_enabled() ? 2 : 1;
}

/* The endpoint fds @dev's rx_epfd holds (not rx_kick), and *@epolled, under watch_lock. */
static int set_size(struct umc_device *dev, bool *epolled)
{
	char path[64], line[256];
	int n = 0, tfd;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", dev->rx_epfd);
	pthread_mutex_lock(&dev->watch_lock);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		n += sscanf(line, "tfd: %d", &tfd) == 1 && tfd != dev->rx_kick;
	fclose(f);
	*epolled = dev->rx_epolled;
	pthread_mutex_unlock(&dev->watch_lock);
	return n;
}

/* Busy-poll @cq for @ms; the receive completions seen. */
static int busy_poll(struct ibv_cq *cq, int ms)
{
	uint64_t end = t_now_ms() + (uint64_t)ms;
	struct ibv_wc wc[8];
	int got = 0;

	while (t_now_ms() < end) {
		int n = ibv_poll_cq(cq, 8, wc);

		assert_true(n >= 0);
		for (int i = 0; i < n; i++)
			got += wc[i].opcode == IBV_WC_RECV;
	}
	return got;
}

/* Sleep @ms without a verb: the program is away. */
static void away_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts))
		;
}

/* Away (asleep, no verb) until the thread has filled the set; its size. */
static int away_until_full(struct umc_device *dev)
{
	bool on = false;
	int n = 0;

	for (int ms = 0; ms < T_WAIT_MS && !on; ms += 10) {
		away_ms(10);
		n = set_size(dev, &on);
	}
	return n;
}

/* Busy-poll until the set holds no endpoint (the thread empties it), at most T_WAIT_MS. */
static void poll_until_empty(struct t_qp *q, struct umc_device *dev)
{
	bool on = true;

	for (int ms = 0; ms < T_WAIT_MS && (set_size(dev, &on) || on); ms += 50)
		busy_poll(q->cq, 50);
	assert_int_equal(set_size(dev, &on), 0);
	assert_false(on);
}

struct rig {
	struct t_env e;
	struct t_qp q; /* sends to the group and receives from it */
};

static void rig_up(struct rig *g)
{
	t_env_open(&g->e, t_group_ip(1), true);
	t_qp_make(&g->q, g->e.pd, 0, T_QKEY);
	assert_int_equal(umc_dev_member(g->e.dev, &g->e.mgid, +1), 0);
	assert_int_equal(ibv_attach_mcast(g->q.qp, &g->e.mgid, 0), 0);
	for (int i = 0; i < 16; i++)
		assert_int_equal(t_post_recv(&g->q, (size_t)i * 128, 128, (uint64_t)i), 0);
	/* The group's endpoints and the port's unicast set: few, polled one by one. */
	assert_int_equal(g->e.dev->rx_nep, 1 + group_eps());
	/* UMC_RX_THREAD=0 (the _nothread run) leaves the thread off. */
	assert_int_equal(g->e.dev->rx_thread, !getenv("UMC_RX_THREAD"));
}

static void rig_down(struct rig *g)
{
	assert_int_equal(ibv_detach_mcast(g->q.qp, &g->e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(g->e.dev, &g->e.mgid, -1), 0);
	t_qp_free(&g->q);
	t_env_close(&g->e);
}

static void test_set_follows_the_program(void **state)
{
	struct umc_device *dev;
	struct rig g;

	(void)state;
	rig_up(&g);
	dev = g.e.dev;
	if (!dev->rx_thread) {
		rig_down(&g);
		skip(); /* the thread's part; without it the set stays empty (below) */
	}

	/*
	 * Set-up was away from the verbs, so the thread may be asleep on the
	 * set: polling kicks it awake, and it empties the set, with no
	 * datagram needed.
	 */
	poll_until_empty(&g.q, dev);

	/* Away: the thread waits on the set, with every endpoint in it. */
	assert_int_equal(away_until_full(dev), dev->rx_nep);

	/* A datagram meanwhile: the thread delivers it, nobody polls. */
	_Atomic uint64_t *delivered = &dev->cnt->rx_delivered;
	unsigned long d0 = atomic_load(delivered);

	assert_int_equal(t_send(&g.q, g.e.ah, "away", 4, T_QKEY, false, 0, 0, 100), 0);
	for (int ms = 0; ms < T_WAIT_MS && atomic_load(delivered) == d0; ms += 10)
		away_ms(10);
	assert_int_equal(atomic_load(delivered), d0 + 1);

	/* Back: its completion, and the set empties again. */
	assert_int_equal(busy_poll(g.q.cq, 100), 1);
	poll_until_empty(&g.q, dev);

	/* Away and back with nothing sent: the kick alone empties it. */
	assert_int_equal(away_until_full(dev), dev->rx_nep);
	poll_until_empty(&g.q, dev);

	/* And what arrives while it polls is received. */
	assert_int_equal(t_send(&g.q, g.e.ah, "here", 4, T_QKEY, false, 0, 0, 101), 0);
	assert_int_equal(busy_poll(g.q.cq, 100), 1);
	rig_down(&g);
}

static void test_many_endpoints_are_in_the_set(void **state)
{
	union ibv_gid mgid[NGROUPS];
	struct ibv_ah *ah = NULL;
	struct umc_device *dev;
	struct rig g;
	bool on;

	(void)state;
	rig_up(&g);
	dev = g.e.dev;
	busy_poll(g.q.cq, 20);
	for (int k = 0; k < NGROUPS; k++) {
		mgid[k] = t_group_gid(10 + (unsigned)k);
		assert_int_equal(umc_dev_member(dev, &mgid[k], +1), 0);
		assert_int_equal(ibv_attach_mcast(g.q.qp, &mgid[k], 0), 0);
	}
	assert_int_equal(dev->rx_nep, 1 + (1 + NGROUPS) * group_eps());
	/* Busy-polling does not empty it: the passes read it. */
	busy_poll(g.q.cq, 100);
	assert_int_equal(set_size(dev, &on), dev->rx_nep);
	assert_true(on);

	/* The last group's datagram is found through the set. */
	ah = t_ipv4_ah(g.e.pd, t_group_ip(10 + NGROUPS - 1));
	assert_non_null(ah);
	assert_int_equal(t_send(&g.q, ah, "last", 4, T_QKEY, false, 0, 0, 100), 0);
	assert_int_equal(busy_poll(g.q.cq, 100), 1);

	/* Few again: the set keeps only endpoints that exist, and delivery goes on. */
	for (int k = 0; k < NGROUPS; k++) {
		assert_int_equal(ibv_detach_mcast(g.q.qp, &mgid[k], 0), 0);
		assert_int_equal(umc_dev_member(dev, &mgid[k], -1), 0);
	}
	assert_int_equal(dev->rx_nep, 1 + group_eps());
	busy_poll(g.q.cq, 100);
	int n = set_size(dev, &on);

	assert_int_equal(n, on ? dev->rx_nep : 0);
	if (!dev->rx_thread) { /* nobody can sleep on it: emptied at once */
		assert_int_equal(n, 0);
		assert_false(on);
	}
	assert_int_equal(t_send(&g.q, g.e.ah, "few", 3, T_QKEY, false, 0, 0, 101), 0);
	assert_int_equal(busy_poll(g.q.cq, 100), 1);
	ibv_destroy_ah(ah);
	rig_down(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_follows_the_program),
		cmocka_unit_test(test_many_endpoints_are_in_the_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
