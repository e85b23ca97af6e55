// SPDX-License-Identifier: MIT
/*
 * test_compat_calls.c - a program written and compiled against rdma-core's
 * installed headers (libibverbs-dev, librdmacm-dev), linked with umcast's
 * drop-in libibverbs.so.1, as a prebuilt program runs under umc-run(1).
 * It goes through rdma-core's own inline functions (verbs_get_ctx_op,
 * ibv_query_port, ibv_query_device_ex, ibv_query_gid_ex, ibv_reg_mr with
 * run-time flags, ibv_alloc_mw, ibv_create_cq_ex, ...) and calls the
 * functions the drop-in library adds to umcast: those it implements must
 * give their documented results, those it does not must fail with the
 * documented errno (EOPNOTSUPP; ENOSYS for rsockets) and nothing else.
 *
 * Never compiled with umcast's include/: the declarations are rdma-core's.
 * References: the man pages named in src/compat/verbs_extra.c and stubs.c.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

/*
 * Exported by libibverbs but declared in no installed header (rdma-core's
 * driver.h, or nowhere since the fork rework): ibv_devinfo imports the
 * first two.
 */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

static struct ibv_context *open_lo(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		if (strcmp(ibv_get_device_name(list[i]), "umc_lo") == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	return ctx;
}

/* rdma-core's inlines find every slot they look for. */
static void test_inlines(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_device_attr_ex ex;
	struct ibv_device_attr attr;
	struct ibv_port_attr pa;

	assert_non_null(verbs_get_ctx_op(ctx, query_port));
	assert_non_null(verbs_get_ctx_op(ctx, query_device_ex));
	assert_non_null(verbs_get_ctx_op(ctx, create_qp_ex));
	memset(&pa, 0xa5, sizeof(pa));
	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.port_cap_flags2, 0);
	assert_int_equal(ibv_query_port(ctx, 2, &pa), EINVAL);
	assert_int_equal(ibv_query_device(ctx, &attr), 0);
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ex), 0);
	assert_memory_equal(&ex.orig_attr, &attr, sizeof(attr));
	assert_int_equal(ex.phys_port_cnt_ex, 1);
	assert_int_equal(attr.max_mcast_grp, 8192);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_gid_entries(void **state)
{
	static const uint8_t lo_gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
	struct ibv_context *ctx = open_lo();
	struct ibv_gid_entry e, table[32];
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int type = -1, nonzero = 0;
	ssize_t n;

	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	assert_int_equal(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
	assert_memory_equal(e.gid.raw, lo_gid, 16);
	assert_int_equal(e.gid_index, 0);
	assert_int_equal(e.port_num, 1);
	assert_int_equal(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_int_equal(e.ndev_ifindex, if_nametoindex("lo"));
	assert_int_equal(ibv_query_gid_ex(ctx, 1, 0, &e, 1), EINVAL);
	assert_int_equal(ibv_query_gid_ex(ctx, 1, pa.gid_tbl_len, &e, 0), EINVAL);
	assert_int_equal(ibv_query_gid_ex(ctx, 2, 0, &e, 0), EINVAL);
	/* The last entry of the table is empty. */
	assert_int_equal(ibv_query_gid_ex(ctx, 1, pa.gid_tbl_len - 1, &e, 0), ENODATA);

	for (int i = 0; i < pa.gid_tbl_len; i++) {
		static const union ibv_gid zero;

		assert_int_equal(ibv_query_gid(ctx, 1, i, &gid), 0);
		nonzero += memcmp(&gid, &zero, sizeof(gid)) != 0;
	}
	n = ibv_query_gid_table(ctx, table, 32, 0);
	assert_int_equal(n, nonzero);
	assert_memory_equal(table[0].gid.raw, lo_gid, 16);
	assert_int_equal(ibv_query_gid_table(ctx, table, 0, 0), -ENOMEM);

	assert_int_equal(ibv_query_gid_type(ctx, 1, 0, &type), 0);
	assert_int_equal(type, 1); /* IBV_GID_TYPE_SYSFS_ROCE_V2 */
	type = -1;
	assert_int_equal(ibv_query_gid_type(ctx, 1, pa.gid_tbl_len - 1, &type), 0);
	assert_int_equal(type, 0); /* empty: IB/RoCE v1, as libibverbs says */
	assert_int_equal(ibv_query_gid_type(ctx, 1, pa.gid_tbl_len, &type), -1);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_helpers(void **state)
{
	char buf[64];
	struct ibv_device **list = ibv_get_device_list(NULL);

	assert_int_equal(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
	assert_int_equal(ibv_rate_to_mult(IBV_RATE_25_GBPS), -1);
	assert_int_equal(mult_to_ibv_rate(48), IBV_RATE_120_GBPS);
	assert_int_equal(mult_to_ibv_rate(3), IBV_RATE_MAX);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_25_GBPS), 25781);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_MAX), -1);
	assert_int_equal(mbps_to_ibv_rate(103125), IBV_RATE_100_GBPS);
	assert_int_equal(mbps_to_ibv_rate(100000), IBV_RATE_MAX);
	assert_string_equal(ibv_event_type_str(IBV_EVENT_GID_CHANGE), "GID table change");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_CQ_ERR), "CQ error");
	assert_string_equal(ibv_event_type_str((enum ibv_event_type)99), "unknown");

	assert_int_equal(ibv_read_sysfs_file("/proc/sys/kernel", "ostype", buf, sizeof(buf)), 5);
	assert_string_equal(buf, "Linux");
	assert_int_equal(ibv_read_sysfs_file("/proc/sys/kernel", "ostype", buf, 5), -1);
	assert_int_equal(errno, EOVERFLOW);
	assert_int_equal(ibv_read_sysfs_file("/proc/sys/kernel", "no-such-file", buf, 64), -1);
	assert_int_equal(errno, ENOENT);
	assert_string_equal(ibv_get_sysfs_path(), getenv("SYSFS_PATH") ? getenv("SYSFS_PATH")
								       : "/sys");

	assert_int_equal(ibv_fork_init(), 0);
	assert_int_equal(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	assert_int_equal(ibv_dontfork_range(buf, sizeof(buf)), 0);
	assert_int_equal(ibv_dofork_range(buf, sizeof(buf)), 0);

	assert_non_null(list);
	for (int i = 0; list[i]; i++)
		assert_int_equal(ibv_get_device_index(list[i]), i);
	ibv_free_device_list(list);
}

/* ibv_reg_mr with flags known only at run time goes to ibv_reg_mr_iova2. */
static void test_reg_mr_iova(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	volatile unsigned int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING;
	static char buf[4096];
	struct ibv_mr *mr;

	assert_non_null(pd);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), access);
	assert_non_null(mr);
	assert_ptr_equal(mr->addr, buf);
	assert_int_equal(mr->length, sizeof(buf));
	assert_int_equal(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr_iova(pd, buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	errno = 0;
	assert_null(ibv_reg_mr_iova2(pd, buf, sizeof(buf), 0x1000, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

#define T_ERRNO(call, err)                                                                         \
	do {                                                                                       \
		errno = 0;                                                                         \
		call;                                                                              \
		assert_int_equal(errno, err);                                                      \
	} while (0)

/* Verbs umcast does not have: the documented EOPNOTSUPP, nothing touched. */
static void test_unsupported_verbs(void **state)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_srq_init_attr srq_attr = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_cq_init_attr_ex cq_attr = {.cqe = 4};
	struct ibv_xrcd_init_attr xrcd_attr = {0};
	struct ibv_async_event ev;
	struct ibv_qp_init_attr_ex qp_attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1},
		.qp_type = IBV_QPT_UD,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp *qp;

	assert_non_null(pd);
	assert_non_null(cq);
	T_ERRNO(assert_null(ibv_create_srq(pd, &srq_attr)), EOPNOTSUPP);
	T_ERRNO(assert_null(ibv_alloc_mw(pd, IBV_MW_TYPE_1)), EOPNOTSUPP);
	T_ERRNO(assert_null(ibv_create_cq_ex(ctx, &cq_attr)), EOPNOTSUPP);
	T_ERRNO(assert_null(ibv_open_xrcd(ctx, &xrcd_attr)), EOPNOTSUPP);
	T_ERRNO(assert_null(ibv_alloc_td(ctx, &(struct ibv_td_init_attr){0})), EOPNOTSUPP);
	T_ERRNO(assert_null(ibv_import_device(3)), EOPNOTSUPP);
	T_ERRNO(assert_null(ibv_create_qp_ex(ctx, &qp_attr)), EOPNOTSUPP);
	assert_int_equal(ibv_resize_cq(cq, 8), EOPNOTSUPP);
	assert_int_equal(cq->cqe >= 4, 1);
	T_ERRNO(assert_int_equal(ibv_get_async_event(ctx, &ev), -1), EOPNOTSUPP);
	assert_int_equal(ibv_query_rt_values_ex(ctx, &(struct ibv_values_ex){0}), EOPNOTSUPP);

	/* A UD QP is an ordinary QP: no extended QP behind it. */
	qp_attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	qp = ibv_create_qp_ex(ctx, &qp_attr);
	assert_non_null(qp);
	assert_null(ibv_qp_to_qp_ex(qp));
	assert_int_equal(ibv_query_qp_data_in_order(qp, IBV_WR_SEND, 0), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* librdmacm: connections are not umcast's; ports come from the addresses. */
static void test_cm(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(7471)};
	struct rdma_conn_param conn = {0};
	struct rdma_cm_id *id;

	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_get_src_port(id), htons(7471));
	assert_int_equal(rdma_get_dst_port(id), 0);
	T_ERRNO(assert_int_equal(rdma_listen(id, 1), -1), EOPNOTSUPP);
	T_ERRNO(assert_int_equal(rdma_connect(id, &conn), -1), EOPNOTSUPP);
	T_ERRNO(assert_int_equal(rdma_resolve_route(id, 100), -1), EOPNOTSUPP);
	T_ERRNO(assert_int_equal(rdma_disconnect(id), -1), EOPNOTSUPP);
	T_ERRNO(assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
						 &(uint8_t){0}, 1),
				 -1),
		EOPNOTSUPP);
	T_ERRNO(assert_int_equal(rsocket(AF_INET, SOCK_STREAM, 0), -1), ENOSYS);
	T_ERRNO(assert_int_equal(rpoll(NULL, 0, 0), -1), ENOSYS);
	T_ERRNO(assert_int_equal(rsend(3, "x", 1, 0), -1), ENOSYS);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* A provider library's constructor registers it: a harmless no-op. */
static void test_provider_registration(void **state)
{
	void (*reg)(const void *) = (void (*)(const void *))dlsym(RTLD_DEFAULT,
								  "verbs_register_driver_34");
	int n = -1;

	assert_non_null(reg);
	reg(NULL);
	ibv_free_device_list(ibv_get_device_list(&n));
	assert_true(n >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inlines),	    cmocka_unit_test(test_gid_entries),
		cmocka_unit_test(test_helpers),	    cmocka_unit_test(test_reg_mr_iova),
		cmocka_unit_test(test_unsupported_verbs), cmocka_unit_test(test_cm),
		cmocka_unit_test(test_provider_registration),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
