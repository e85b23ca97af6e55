// SPDX-License-Identifier: MIT
/*
 * test_verbs_device.c - the device list and the queries of the loopback
 * device: ibv_get_device_list, ibv_query_device (the rxe multicast limits),
 * ibv_query_port (active_mtu derived from lo's MTU as rxe does, Ethernet
 * link layer), ibv_query_gid (index 0 = ::ffff:127.0.0.1), ibv_query_pkey.
 *
 * References: the kernel's drivers/infiniband/sw/rxe/rxe_param.h (the
 * limits, and eth_mtu_int_to_enum(): rxe's active MTU = netdev MTU - 80
 * rounded down to an IB MTU); link/roce/port.c (devices and GIDs).
 */
#include "verbs_util.h"
#include "link/roce/roce.h"

/* rxe's rule, computed independently of the library from /sys. */
static enum ibv_mtu expected_lo_mtu(void)
{
	FILE *f = fopen("/sys/class/net/lo/mtu", "r");
	unsigned mtu = 0;

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &mtu), 1);
	fclose(f);
	return umc_mtu_from_netdev(mtu);
}

/* rxe's rule (rxe_param.h eth_mtu_int_to_enum()): netdev MTU - 80, rounded down. */
static void test_mtu_from_netdev(void **state)
{
	static const struct {
		unsigned netdev;
		enum ibv_mtu ib;
	} table[] = {
		{1500, IBV_MTU_1024}, {4175, IBV_MTU_2048}, {4176, IBV_MTU_4096},
		{9000, IBV_MTU_4096}, {65536, IBV_MTU_4096}, {2128, IBV_MTU_2048},
		{2127, IBV_MTU_1024}, {1104, IBV_MTU_1024}, {1103, IBV_MTU_512},
		{592, IBV_MTU_512}, {591, IBV_MTU_256}, {68, IBV_MTU_256},
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		assert_int_equal(umc_mtu_from_netdev(table[i].netdev), table[i].ib);
}

static void test_device_list(void **state)
{
	int n = -1, lo = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	assert_non_null(list);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++) {
		assert_non_null(list[i]);
		const char *name = ibv_get_device_name(list[i]);

		assert_non_null(name);
		assert_memory_equal(name, "umc_", 4);
		assert_int_equal(list[i]->node_type, IBV_NODE_CA);
		assert_int_equal(list[i]->transport_type, IBV_TRANSPORT_IB);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(name, ibv_get_device_name(list[j]));
		if (strcmp(name, "umc_lo") == 0)
			lo++;
	}
	assert_null(list[n]); /* NULL-terminated, n entries */
	assert_int_equal(lo, 1);
	ibv_free_device_list(list);

	/* NULL num_devices is allowed. */
	list = ibv_get_device_list(NULL);
	assert_non_null(list);
	ibv_free_device_list(list);
}

static void test_query_device_limits(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct ibv_device_attr a;

	memset(&a, 0xa5, sizeof(a));
	assert_int_equal(ibv_query_device(ctx, &a), 0);
	/* rxe_param.h: RXE_MAX_MCAST_GRP, _QP_ATTACH, _TOT_MCAST_QP_ATTACH */
	assert_int_equal(a.max_mcast_grp, 8192);
	assert_int_equal(a.max_mcast_qp_attach, 56);
	assert_int_equal(a.max_total_mcast_qp_attach, 458752);
	assert_int_equal(a.phys_port_cnt, 1);
	assert_int_equal(a.max_pkeys, 64);
	assert_true(a.max_qp > 0 && a.max_qp_wr > 0 && a.max_cq > 0 && a.max_cqe > 0);
	assert_true(a.max_sge >= 1);
	/* The node GUID is the device's GUID. */
	assert_true(a.node_guid == ibv_get_device_guid(ctx->device));
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_query_port(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct ibv_port_attr p;

	memset(&p, 0xa5, sizeof(p));
	assert_int_equal(ibv_query_port(ctx, 1, &p), 0);
	assert_int_equal(p.state, IBV_PORT_ACTIVE);
	assert_int_equal(p.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(p.active_mtu, expected_lo_mtu());
	assert_true(p.max_mtu >= p.active_mtu);
	assert_int_equal(p.pkey_tbl_len, 64);
	assert_true(p.gid_tbl_len >= 1);
	/* One port only: port 0 and port 2 do not exist. */
	assert_int_equal(ibv_query_port(ctx, 2, &p), EINVAL);
	assert_int_equal(ibv_query_port(ctx, 0, &p), EINVAL);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_query_gid(void **state)
{
	static const uint8_t lo_gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
	struct ibv_context *ctx = t_open_lo();
	struct ibv_port_attr p;
	union ibv_gid g;

	assert_int_equal(ibv_query_port(ctx, 1, &p), 0);
	memset(&g, 0xa5, sizeof(g));
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &g), 0);
	assert_memory_equal(g.raw, lo_gid, 16);
	/* The last entry of the table reads (zero when unused)... */
	assert_int_equal(ibv_query_gid(ctx, 1, p.gid_tbl_len - 1, &g), 0);
	/* ... past it, or on port 2: -1 and EINVAL. */
	errno = 0;
	assert_int_equal(ibv_query_gid(ctx, 1, p.gid_tbl_len, &g), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_query_gid(ctx, 1, -1, &g), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_query_gid(ctx, 2, 0, &g), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_query_pkey(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	__be16 pk = 0;

	assert_int_equal(ibv_query_pkey(ctx, 1, 0, &pk), 0);
	assert_int_equal(be16toh(pk), 0xffff);
	errno = 0;
	assert_int_equal(ibv_query_pkey(ctx, 1, 64, &pk), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_query_pkey(ctx, 2, 0, &pk), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mtu_from_netdev),
		cmocka_unit_test(test_device_list),
		cmocka_unit_test(test_query_device_limits),
		cmocka_unit_test(test_query_port),
		cmocka_unit_test(test_query_gid),
		cmocka_unit_test(test_query_pkey),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
