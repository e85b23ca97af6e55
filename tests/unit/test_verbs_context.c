// SPDX-License-Identifier: MIT
/*
 * test_verbs_context.c - the operations tables of an open context, as a
 * program built against rdma-core's headers reaches them: the struct
 * verbs_context in front of the context (abi_compat, sz, every slot set),
 * query_port with the caller's struct size, the 48-byte IBVERBS_1.1
 * ibv_query_port symbol, query_device_ex, the create_qp_ex slot behind the
 * ibv_create_qp_ex inline, and EOPNOTSUPP from every slot umcast does not
 * implement.
 *
 * References: rdma-core 44 <infiniband/verbs.h> (verbs_get_ctx_op, the
 * inline ___ibv_query_port, ibv_query_device_ex, ibv_create_qp_ex),
 * ibv_query_device_ex(3), ibv_query_port(3).
 */
#include "verbs_util.h"

/* The exported symbol, not the macro of the same name. */
#define t_compat_query_port (ibv_query_port)

/* Number of pointer-sized slots before _ABI_placeholder3. */
#define T_VCTX_SLOTS (offsetof(struct verbs_context, _ABI_placeholder3) / sizeof(void (*)(void)))

static void test_extended_context(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct verbs_context *vctx = verbs_get_ctx(ctx);
	void (*slot)(void);

	assert_ptr_equal(ctx->abi_compat, __VERBS_ABI_IS_EXTENDED);
	assert_non_null(vctx);
	assert_ptr_equal((char *)ctx - (char *)vctx, offsetof(struct verbs_context, context));
	assert_int_equal(vctx->sz, sizeof(struct verbs_context));
	assert_int_equal(ctx->cmd_fd, -1);
	assert_int_equal(ctx->async_fd, -1);
	assert_int_equal(ctx->num_comp_vectors, 1);
	assert_string_equal(ibv_get_device_name(ctx->device), "umc_lo");
	/* Every function slot is set; priv and the placeholder word are not. */
	for (size_t i = 0; i < T_VCTX_SLOTS; i++) {
		memcpy(&slot, (char *)vctx + i * sizeof(slot), sizeof(slot));
		if (i * sizeof(slot) == offsetof(struct verbs_context, priv))
			assert_null(slot);
		else
			assert_non_null(slot);
	}
	assert_int_equal(vctx->_ABI_placeholder3, 0);
	/* Programs built against libibverbs 1.1.8 find the flow slots here. */
	assert_ptr_equal(vctx->ABI_placeholder1, (void (*)(void))vctx->ibv_create_flow);
	assert_ptr_equal(vctx->ABI_placeholder2, (void (*)(void))vctx->ibv_destroy_flow);
	assert_non_null(verbs_get_ctx_op(ctx, query_port));
	assert_non_null(verbs_get_ctx_op(ctx, create_qp_ex));
	/* The data-path slots of the original table. */
	assert_ptr_equal(ctx->ops.poll_cq, umc_poll_cq);
	assert_ptr_equal(ctx->ops.req_notify_cq, umc_req_notify_cq);
	assert_ptr_equal(ctx->ops.post_send, umc_post_send);
	assert_ptr_equal(ctx->ops.post_recv, umc_post_recv);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* A library whose verbs_context is older (smaller) has no such slot. */
static void test_get_ctx_op_size(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct verbs_context *vctx = verbs_get_ctx(ctx);
	size_t sz = vctx->sz;

	vctx->sz = sizeof(*vctx) - offsetof(struct verbs_context, create_qp_ex);
	assert_non_null(verbs_get_ctx_op(ctx, create_qp_ex));
	vctx->sz--;
	assert_null(verbs_get_ctx_op(ctx, create_qp_ex));
	assert_non_null(verbs_get_ctx_op(ctx, close_xrcd));
	vctx->sz = sz;
	ctx->abi_compat = NULL;
	assert_null(verbs_get_ctx(ctx));
	assert_null(verbs_get_ctx_op(ctx, query_port));
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	assert_int_equal(ibv_close_device(ctx), 0);
}

#define T_NO_INT(call)                                                                             \
	do {                                                                                       \
		errno = 0;                                                                         \
		assert_int_equal(call, EOPNOTSUPP);                                                \
	} while (0)
#define T_NO_PTR(call)                                                                             \
	do {                                                                                       \
		errno = 0;                                                                         \
		assert_null(call);                                                                 \
		assert_int_equal(errno, EOPNOTSUPP);                                               \
	} while (0)

static void test_unsupported_slots(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ibv_recv_wr rwr = {0}, *bad_rwr = NULL;
	struct ibv_ops_wr *op = (struct ibv_ops_wr *)&rwr, *bad_op = NULL;
	uint32_t srqn;
	uint64_t value;

	T_NO_PTR(ctx->ops.alloc_mw(NULL, IBV_MW_TYPE_1));
	T_NO_INT(ctx->ops.bind_mw(NULL, NULL, NULL));
	T_NO_INT(ctx->ops.dealloc_mw(NULL));
	T_NO_INT(ctx->ops.post_srq_recv(NULL, &rwr, &bad_rwr));
	assert_ptr_equal(bad_rwr, &rwr);
	T_NO_INT(v->advise_mr(NULL, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, NULL, 0));
	T_NO_PTR(v->alloc_null_mr(NULL));
	T_NO_INT(v->read_counters(NULL, &value, 1, 0));
	T_NO_INT(v->attach_counters_point_flow(NULL, NULL, NULL));
	T_NO_PTR(v->create_counters(ctx, NULL));
	T_NO_INT(v->destroy_counters(NULL));
	T_NO_PTR(v->reg_dm_mr(NULL, NULL, 0, 0, 0));
	T_NO_PTR(v->alloc_dm(ctx, NULL));
	T_NO_INT(v->free_dm(NULL));
	T_NO_INT(v->modify_flow_action_esp(NULL, NULL));
	T_NO_INT(v->destroy_flow_action(NULL));
	T_NO_PTR(v->create_flow_action_esp(ctx, NULL));
	T_NO_INT(v->modify_qp_rate_limit(NULL, NULL));
	T_NO_PTR(v->alloc_parent_domain(ctx, NULL));
	T_NO_INT(v->dealloc_td(NULL));
	T_NO_PTR(v->alloc_td(ctx, NULL));
	T_NO_INT(v->modify_cq(NULL, NULL));
	T_NO_INT(v->post_srq_ops(NULL, op, &bad_op));
	assert_ptr_equal(bad_op, op);
	T_NO_INT(v->destroy_rwq_ind_table(NULL));
	T_NO_PTR(v->create_rwq_ind_table(ctx, NULL));
	T_NO_INT(v->destroy_wq(NULL));
	T_NO_INT(v->modify_wq(NULL, NULL));
	T_NO_PTR(v->create_wq(ctx, NULL));
	T_NO_INT(v->query_rt_values(ctx, NULL));
	T_NO_PTR(v->create_cq_ex(ctx, NULL));
	T_NO_INT(v->ibv_destroy_flow(NULL));
	T_NO_PTR(v->ibv_create_flow(NULL, NULL));
	T_NO_PTR(v->open_qp(ctx, NULL));
	T_NO_INT(v->get_srq_num(NULL, &srqn));
	T_NO_PTR(v->create_srq_ex(ctx, NULL));
	T_NO_PTR(v->open_xrcd(ctx, NULL));
	T_NO_INT(v->close_xrcd(NULL));
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* The query_port slot writes what the caller's struct size allows. */
static void test_query_port_sizes(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ibv_port_attr ref;
	uint8_t buf[sizeof(ref) + 8];

	assert_int_equal(ibv_query_port(ctx, 1, &ref), 0);
	assert_int_equal(ref.state, IBV_PORT_ACTIVE);

	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(v->query_port(ctx, 1, (struct ibv_port_attr *)buf, sizeof(ref)), 0);
	assert_memory_equal(buf, &ref, sizeof(ref));
	assert_int_equal(buf[sizeof(ref)], 0xa5);

	/* An older, shorter struct: nothing past its end. */
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(v->query_port(ctx, 1, (struct ibv_port_attr *)buf, 40), 0);
	assert_memory_equal(buf, &ref, 40);
	for (size_t i = 40; i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xa5);

	/* A newer, longer struct: the unknown tail is zero. */
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(v->query_port(ctx, 1, (struct ibv_port_attr *)buf, sizeof(buf)), 0);
	assert_memory_equal(buf, &ref, sizeof(ref));
	for (size_t i = sizeof(ref); i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0);

	assert_int_equal(v->query_port(ctx, 2, (struct ibv_port_attr *)buf, sizeof(ref)), EINVAL);
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* The IBVERBS_1.1 symbol and the legacy slot fill the 48-byte layout only. */
static void test_query_port_compat(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct ibv_port_attr ref, p;

	assert_int_equal(ibv_query_port(ctx, 1, &ref), 0);
	memset(&p, 0xa5, sizeof(p));
	assert_int_equal(t_compat_query_port(ctx, 1, (struct _compat_ibv_port_attr *)&p), 0);
	assert_memory_equal(&p, &ref, 48);
	assert_int_equal(p.port_cap_flags2, 0xa5a5);

	memset(&p, 0xa5, sizeof(p));
	assert_int_equal(ctx->ops._compat_query_port(ctx, 1, (struct _compat_ibv_port_attr *)&p), 0);
	assert_memory_equal(&p, &ref, 48);
	assert_int_equal(p.port_cap_flags2, 0xa5a5);

	assert_int_equal(t_compat_query_port(ctx, 0, (struct _compat_ibv_port_attr *)&p), EINVAL);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_query_device_ex(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct verbs_context *v = verbs_get_ctx(ctx);
	struct ibv_query_device_ex_input in = {.comp_mask = 0};
	struct ibv_device_attr ref, legacy;
	struct ibv_device_attr_ex ex, zero;
	uint8_t buf[sizeof(ex) + 8];

	assert_int_equal(ibv_query_device(ctx, &ref), 0);
	memset(&ex, 0xa5, sizeof(ex));
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ex), 0);
	assert_memory_equal(&ex.orig_attr, &ref, sizeof(ref));
	assert_int_equal(ex.phys_port_cnt_ex, 1);
	assert_int_equal(ex.device_cap_flags_ex, ref.device_cap_flags);
	/* No extended capability: everything between is zero. */
	memset(&zero, 0, sizeof(zero));
	assert_memory_equal((char *)&ex + offsetof(struct ibv_device_attr_ex, comp_mask),
			    (char *)&zero + offsetof(struct ibv_device_attr_ex, comp_mask),
			    offsetof(struct ibv_device_attr_ex, device_cap_flags_ex) -
				    offsetof(struct ibv_device_attr_ex, comp_mask));
	assert_memory_equal(&ex.tso_caps, &zero.tso_caps,
			    offsetof(struct ibv_device_attr_ex, phys_port_cnt_ex) -
				    offsetof(struct ibv_device_attr_ex, tso_caps));

	assert_int_equal(ibv_query_device_ex(ctx, &in, &ex), 0);
	in.comp_mask = 1;
	assert_int_equal(ibv_query_device_ex(ctx, &in, &ex), EINVAL);
	assert_int_equal(v->query_device_ex(ctx, &in, &ex, sizeof(ex)), EINVAL);
	assert_int_equal(v->query_device_ex(ctx, NULL, &ex, sizeof(ref) - 1), EINVAL);

	/* A longer caller struct: the unknown tail is zero. */
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(v->query_device_ex(ctx, NULL, (struct ibv_device_attr_ex *)buf, sizeof(buf)),
			 0);
	for (size_t i = sizeof(ex); i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0);

	/* The legacy slot is ibv_query_device. */
	assert_int_equal(ctx->ops._compat_query_device(ctx, &legacy), 0);
	assert_memory_equal(&legacy, &ref, sizeof(ref));
	assert_int_equal(ibv_close_device(ctx), 0);
}

/* ibv_create_qp_ex: a PD-only mask takes ibv_create_qp, the rest the slot. */
static void test_create_qp_ex(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = {.max_send_wr = 4, .max_recv_wr = 4},
		.qp_type = IBV_QPT_UD,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *q1, *q2;

	assert_non_null(pd);
	assert_non_null(cq);
	q1 = ibv_create_qp_ex(ctx, &a);
	assert_non_null(q1);
	assert_int_equal(a.cap.max_send_sge, 1); /* granted sizes written back */
	a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	a.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	q2 = ibv_create_qp_ex(ctx, &a);
	assert_non_null(q2);
	assert_int_equal(to_uqp(q2)->create_flags, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	assert_int_not_equal(q1->qp_num, q2->qp_num);
	a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	errno = 0;
	assert_null(ibv_create_qp_ex(ctx, &a));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_destroy_qp(q2), 0);
	assert_int_equal(ibv_destroy_qp(q1), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extended_context),  cmocka_unit_test(test_get_ctx_op_size),
		cmocka_unit_test(test_unsupported_slots), cmocka_unit_test(test_query_port_sizes),
		cmocka_unit_test(test_query_port_compat), cmocka_unit_test(test_query_device_ex),
		cmocka_unit_test(test_create_qp_ex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
