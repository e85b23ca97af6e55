// SPDX-License-Identifier: MIT
/*
 * test_verbs_mcast.c - ibv_attach_mcast / ibv_detach_mcast: the errno table
 * and the limits.
 *
 * References: the kernel's ib_uverbs_attach_mcast(), ib_attach_mcast() and
 * rxe_mcast.c (uverbs'
 * per-QP (gid, mlid) list: duplicate attach is a 0 no-op, detaching an
 * unattached pair is EINVAL; the GID must be multicast; rxe's limits
 * 8192 groups / 56 QPs per group / 458752 in all, ENOMEM beyond), and
 * docs/design.md, "Observed on rxe" 7 (57th attach ENOMEM, ibv_destroy_qp of an
 * attached QP EBUSY, non-multicast GID EINVAL).
 *
 * Delivery consequences of duplicates (one copy only) are checked in
 * test_verbs_delivery.c.
 */
#include <sys/resource.h>

#include "verbs_util.h"

static int setup(void **state)
{
	return t_fx_setup(state, 0, false);
}

/* Groups of the device that exist (with a socket) for @gid. */
static bool group_exists(struct umc_device *dev, const union ibv_gid *gid)
{
	pthread_mutex_lock(&dev->lock);
	bool r = __umc_mcg_find(dev, gid) != NULL;

	pthread_mutex_unlock(&dev->lock);
	return r;
}

static void test_non_multicast_gid(void **state)
{
	struct t_fx *f = *state;
	union ibv_gid g[5];

	g[0] = t_gid_v4(0x0a000001);	 /* ::ffff:10.0.0.1, unicast */
	g[1] = t_gid_v4(0x7f000001);	 /* ::ffff:127.0.0.1 */
	g[2] = t_gid_v4(0xf0000001);	 /* ::ffff:240.0.0.1, class E */
	memset(&g[3], 0, sizeof(g[3])); /* :: */
	memset(&g[4], 0, sizeof(g[4]));
	g[4].raw[0] = 0xfe;		 /* fe80::1, link-local unicast */
	g[4].raw[1] = 0x80;
	g[4].raw[15] = 1;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(ibv_attach_mcast(f->qp, &g[i], 0), EINVAL);
		assert_int_equal(ibv_detach_mcast(f->qp, &g[i], 0), EINVAL);
		assert_false(group_exists(f->e.dev, &g[i]));
	}
	/* The boundaries of 224.0.0.0/4 are multicast. */
	union ibv_gid lo = t_gid_v4(0xe0000001), hi = t_gid_v4(0xefffffff);

	assert_int_equal(ibv_attach_mcast(f->qp, &lo, 0), 0);
	assert_int_equal(ibv_attach_mcast(f->qp, &hi, 0), 0);
	assert_int_equal(ibv_detach_mcast(f->qp, &lo, 0), 0);
	assert_int_equal(ibv_detach_mcast(f->qp, &hi, 0), 0);
	assert_int_equal(f->e.dev->total_attach, 0);
}

static void test_duplicate_attach(void **state)
{
	struct t_fx *f = *state;
	union ibv_gid g = t_group_gid(1);
	int total0 = f->e.dev->total_attach;

	assert_int_equal(ibv_attach_mcast(f->qp, &g, 0), 0);
	assert_int_equal(ibv_attach_mcast(f->qp, &g, 0), 0);
	assert_true(group_exists(f->e.dev, &g));
	/* One attachment, not two. */
	assert_int_equal(f->e.dev->total_attach, total0 + 1);
	pthread_mutex_lock(&f->e.dev->lock);
	assert_int_equal(__umc_mcg_find(f->e.dev, &g)->nqp, 1);
	pthread_mutex_unlock(&f->e.dev->lock);
	/* One detach undoes it; the second finds nothing: EINVAL. */
	assert_int_equal(ibv_detach_mcast(f->qp, &g, 0), 0);
	assert_int_equal(ibv_detach_mcast(f->qp, &g, 0), EINVAL);
	assert_int_equal(f->e.dev->total_attach, total0);
	assert_false(group_exists(f->e.dev, &g));
}

static void test_detach_unattached(void **state)
{
	struct t_fx *f = *state;
	struct ibv_qp *qp2 = t_create_qp(f->e.pd, f->cq, 0);
	union ibv_gid g = t_group_gid(2), h = t_group_gid(3);

	assert_non_null(qp2);
	/* Unknown group. */
	assert_int_equal(ibv_detach_mcast(f->qp, &g, 0), EINVAL);
	/* Known group, this QP not in it. */
	assert_int_equal(ibv_attach_mcast(qp2, &g, 0), 0);
	assert_int_equal(ibv_detach_mcast(f->qp, &g, 0), EINVAL);
	/* Attached, but to another group. */
	assert_int_equal(ibv_attach_mcast(f->qp, &h, 0), 0);
	assert_int_equal(ibv_detach_mcast(f->qp, &g, 0), EINVAL);
	/* Same GID, another MLID: uverbs matches (gid, mlid). */
	assert_int_equal(ibv_detach_mcast(f->qp, &h, 7), EINVAL);
	/* qp2's attachment survived the failed detaches. */
	pthread_mutex_lock(&f->e.dev->lock);
	struct umc_mcg *mg = __umc_mcg_find(f->e.dev, &g);

	assert_non_null(mg);
	assert_int_equal(mg->nqp, 1);
	assert_ptr_equal(mg->qps[0], to_uqp(qp2));
	pthread_mutex_unlock(&f->e.dev->lock);
	assert_int_equal(ibv_detach_mcast(qp2, &g, 0), 0);
	assert_int_equal(ibv_detach_mcast(f->qp, &h, 0), 0);
	assert_int_equal(ibv_destroy_qp(qp2), 0);
}

static void test_57th_qp_enomem(void **state)
{
	struct t_fx *f = *state;
	enum { N = 57 };
	struct ibv_qp *qps[N];
	union ibv_gid g = t_group_gid(4), other = t_group_gid(5);
	struct ibv_device_attr da;

	assert_int_equal(ibv_query_device(f->e.ctx, &da), 0);
	assert_int_equal(da.max_mcast_qp_attach, N - 1);
	for (int i = 0; i < N; i++) {
		qps[i] = t_create_qp(f->e.pd, f->cq, 0);
		assert_non_null(qps[i]);
	}
	for (int i = 0; i < N - 1; i++)
		assert_int_equal(ibv_attach_mcast(qps[i], &g, 0), 0);
	assert_int_equal(ibv_attach_mcast(qps[N - 1], &g, 0), ENOMEM);
	/* A re-attach of an attached QP is still the 0 no-op at the limit. */
	assert_int_equal(ibv_attach_mcast(qps[0], &g, 0), 0);
	/* The refused QP is not attached, and can join another group. */
	assert_int_equal(ibv_detach_mcast(qps[N - 1], &g, 0), EINVAL);
	assert_int_equal(ibv_attach_mcast(qps[N - 1], &other, 0), 0);
	/* A slot freed by a detach can be taken. */
	assert_int_equal(ibv_detach_mcast(qps[3], &g, 0), 0);
	assert_int_equal(ibv_attach_mcast(qps[N - 1], &g, 0), 0);
	assert_int_equal(ibv_attach_mcast(qps[3], &g, 0), ENOMEM);

	for (int i = 0; i < N; i++) {
		if (i != 3)
			assert_int_equal(ibv_detach_mcast(qps[i], &g, 0), 0);
		assert_int_equal(ibv_destroy_qp(qps[i]) == 0, i != N - 1);
	}
	assert_int_equal(ibv_detach_mcast(qps[N - 1], &other, 0), 0);
	assert_int_equal(ibv_destroy_qp(qps[N - 1]), 0);
	assert_false(group_exists(f->e.dev, &g));
	assert_false(group_exists(f->e.dev, &other));
}

static void test_destroy_attached_ebusy(void **state)
{
	struct t_fx *f = *state;
	struct ibv_qp *qp = t_create_qp(f->e.pd, f->cq, 0);
	union ibv_gid g = t_group_gid(6);

	assert_non_null(qp);
	assert_int_equal(ibv_attach_mcast(qp, &g, 0), 0);
	assert_int_equal(ibv_destroy_qp(qp), EBUSY);
	/* Still usable and still attached. */
	assert_true(group_exists(f->e.dev, &g));
	assert_int_equal(t_qp_rts(qp, T_QKEY, 0), 0);
	assert_int_equal(ibv_detach_mcast(qp, &g, 0), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_false(group_exists(f->e.dev, &g));
}

/*
 * The 8193rd group: each group is a socket, so this needs ~8200 file
 * descriptors; the library raises the soft limit itself, the test skips
 * when the hard limit is too low.
 */
static void test_group_limit(void **state)
{
	struct t_fx *f = *state;
	enum { G = 8192 };
	struct rlimit rl;
	union ibv_gid g;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < G + 256) {
		print_message("hard RLIMIT_NOFILE %lu too low\n", (unsigned long)rl.rlim_max);
		skip();
	}
	/* 239.254.0.0/16 + 239.253.0.0: groups nobody sends to. */
	for (unsigned i = 0; i < G; i++) {
		g = t_gid_v4(0xeffe0000u | i);
		assert_int_equal(ibv_attach_mcast(f->qp, &g, 0), 0);
	}
	assert_int_equal(f->e.dev->mcg_attached, G);
	g = t_gid_v4(0xeffd0000u);
	assert_int_equal(ibv_attach_mcast(f->qp, &g, 0), ENOMEM);
	assert_false(group_exists(f->e.dev, &g));
	/* Another QP cannot open a new group either, but may join an existing one. */
	struct ibv_qp *qp2 = t_create_qp(f->e.pd, f->cq, 0);
	union ibv_gid g0 = t_gid_v4(0xeffe0000u);

	assert_int_equal(ibv_attach_mcast(qp2, &g, 0), ENOMEM);
	assert_int_equal(ibv_attach_mcast(qp2, &g0, 0), 0);
	assert_int_equal(ibv_detach_mcast(qp2, &g0, 0), 0);
	assert_int_equal(ibv_destroy_qp(qp2), 0);
	/* Freeing one group makes room for one. */
	g0 = t_gid_v4(0xeffe0000u | 17);
	assert_int_equal(ibv_detach_mcast(f->qp, &g0, 0), 0);
	assert_int_equal(ibv_attach_mcast(f->qp, &g, 0), 0);
	assert_int_equal(ibv_detach_mcast(f->qp, &g, 0), 0);
	for (unsigned i = 0; i < G; i++) {
		if (i == 17)
			continue;
		g = t_gid_v4(0xeffe0000u | i);
		assert_int_equal(ibv_detach_mcast(f->qp, &g, 0), 0);
	}
	assert_int_equal(f->e.dev->mcg_attached, 0);
	assert_int_equal(f->e.dev->total_attach, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_non_multicast_gid, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_attach, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_detach_unattached, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_57th_qp_enomem, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_destroy_attached_ebusy, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_group_limit, setup, t_fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
