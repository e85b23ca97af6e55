/* SPDX-License-Identifier: MIT */
/*
 * context.c - the operations tables of an open context.
 *
 * A program reaches umcast's verbs in two ways: through the exported
 * functions, and through function pointers that rdma-core's (and umcast's)
 * inline functions read from the context: the data-path slots of struct
 * ibv_context_ops and the slots of the struct verbs_context that precedes
 * every struct ibv_context.  A program built against rdma-core's headers
 * may call any of those slots, so every one of them is filled: the verbs
 * umcast has, and for the others a default that fails the way libibverbs'
 * own defaults do (EOPNOTSUPP, or NULL with errno EOPNOTSUPP).
 */
#include <errno.h>
#include <string.h>

#include "verbs/verbs_int.h"

/* ------------------------------------------------------------------------- */
/* Slots umcast does not implement.                                          */

#define UMC_NO_INT(name, ...)                                                                      \
	static int name(__VA_ARGS__)                                                               \
	{                                                                                          \
		return umc_pos_errno(-EOPNOTSUPP);                                                 \
	}
#define UMC_NO_PTR(type, name, ...)                                                                \
	static type *name(__VA_ARGS__)                                                             \
	{                                                                                          \
		return umc_null_errno(-EOPNOTSUPP);                                                \
	}

UMC_NO_PTR(struct ibv_mw, umc_no_alloc_mw, struct ibv_pd *pd, enum ibv_mw_type type)
UMC_NO_INT(umc_no_bind_mw, struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
UMC_NO_INT(umc_no_dealloc_mw, struct ibv_mw *mw)
UMC_NO_INT(umc_no_advise_mr, struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
	   struct ibv_sge *sg_list, uint32_t num_sges)
UMC_NO_PTR(struct ibv_mr, umc_no_alloc_null_mr, struct ibv_pd *pd)
UMC_NO_INT(umc_no_read_counters, struct ibv_counters *counters, uint64_t *values, uint32_t n,
	   uint32_t flags)
UMC_NO_INT(umc_no_attach_counters_point_flow, struct ibv_counters *counters,
	   struct ibv_counter_attach_attr *attr, struct ibv_flow *flow)
UMC_NO_PTR(struct ibv_counters, umc_no_create_counters, struct ibv_context *context,
	   struct ibv_counters_init_attr *attr)
UMC_NO_INT(umc_no_destroy_counters, struct ibv_counters *counters)
UMC_NO_PTR(struct ibv_mr, umc_no_reg_dm_mr, struct ibv_pd *pd, struct ibv_dm *dm,
	   uint64_t dm_offset, size_t length, unsigned int access)
UMC_NO_PTR(struct ibv_dm, umc_no_alloc_dm, struct ibv_context *context,
	   struct ibv_alloc_dm_attr *attr)
UMC_NO_INT(umc_no_free_dm, struct ibv_dm *dm)
UMC_NO_INT(umc_no_modify_flow_action_esp, struct ibv_flow_action *action,
	   struct ibv_flow_action_esp_attr *attr)
UMC_NO_INT(umc_no_destroy_flow_action, struct ibv_flow_action *action)
UMC_NO_PTR(struct ibv_flow_action, umc_no_create_flow_action_esp, struct ibv_context *context,
	   struct ibv_flow_action_esp_attr *attr)
UMC_NO_INT(umc_no_modify_qp_rate_limit, struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr)
UMC_NO_PTR(struct ibv_pd, umc_no_alloc_parent_domain, struct ibv_context *context,
	   struct ibv_parent_domain_init_attr *attr)
UMC_NO_INT(umc_no_dealloc_td, struct ibv_td *td)
UMC_NO_PTR(struct ibv_td, umc_no_alloc_td, struct ibv_context *context,
	   struct ibv_td_init_attr *attr)
UMC_NO_INT(umc_no_modify_cq, struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
UMC_NO_INT(umc_no_destroy_rwq_ind_table, struct ibv_rwq_ind_table *table)
UMC_NO_PTR(struct ibv_rwq_ind_table, umc_no_create_rwq_ind_table, struct ibv_context *context,
	   struct ibv_rwq_ind_table_init_attr *attr)
UMC_NO_INT(umc_no_destroy_wq, struct ibv_wq *wq)
UMC_NO_INT(umc_no_modify_wq, struct ibv_wq *wq, struct ibv_wq_attr *attr)
UMC_NO_PTR(struct ibv_wq, umc_no_create_wq, struct ibv_context *context,
	   struct ibv_wq_init_attr *attr)
UMC_NO_INT(umc_no_query_rt_values, struct ibv_context *context, struct ibv_values_ex *values)
UMC_NO_PTR(struct ibv_cq_ex, umc_no_create_cq_ex, struct ibv_context *context,
	   struct ibv_cq_init_attr_ex *attr)
UMC_NO_INT(umc_no_destroy_flow, struct ibv_flow *flow)
UMC_NO_PTR(struct ibv_flow, umc_no_create_flow, struct ibv_qp *qp, struct ibv_flow_attr *attr)
UMC_NO_PTR(struct ibv_qp, umc_no_open_qp, struct ibv_context *context,
	   struct ibv_qp_open_attr *attr)
UMC_NO_INT(umc_no_get_srq_num, struct ibv_srq *srq, uint32_t *srq_num)
UMC_NO_PTR(struct ibv_srq, umc_no_create_srq_ex, struct ibv_context *context,
	   struct ibv_srq_init_attr_ex *attr)
UMC_NO_PTR(struct ibv_xrcd, umc_no_open_xrcd, struct ibv_context *context,
	   struct ibv_xrcd_init_attr *attr)
UMC_NO_INT(umc_no_close_xrcd, struct ibv_xrcd *xrcd)

/* The two work-request slots also say which request was not taken. */
static int umc_no_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
				struct ibv_recv_wr **bad_wr)
{
	*bad_wr = wr;
	return umc_pos_errno(-EOPNOTSUPP);
}

static int umc_no_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op,
			       struct ibv_ops_wr **bad_op)
{
	*bad_op = op;
	return umc_pos_errno(-EOPNOTSUPP);
}

/* ------------------------------------------------------------------------- */
/* Queries through the extended context.                                     */

/*
 * The 48 bytes that the IBVERBS_1.1 ibv_query_port() symbol fills: a
 * struct ibv_port_attr without port_cap_flags2 and what follows.
 */
#define UMC_COMPAT_PORT_ATTR_LEN offsetof(struct ibv_port_attr, port_cap_flags2)

/*
 * umc_vctx_query_port - the query_port slot: ibv_query_port() for a caller
 * whose struct ibv_port_attr is @len bytes.  The first min(@len,
 * sizeof(struct ibv_port_attr)) bytes get the attributes, the rest of a
 * longer (newer) struct is zeroed.  Returns 0 or EINVAL (bad port).
 */
static int umc_vctx_query_port(struct ibv_context *context, uint8_t port_num,
			       struct ibv_port_attr *port_attr, size_t len)
{
	struct ibv_port_attr attr;
	int ret = umc_query_port(context, port_num, &attr);

	if (ret)
		return ret;
	if (len > sizeof(attr)) {
		memset((uint8_t *)port_attr + sizeof(attr), 0, len - sizeof(attr));
		len = sizeof(attr);
	}
	memcpy(port_attr, &attr, len);
	return 0;
}

/*
 * ibv_query_port - the exported symbol (IBVERBS_1.1) behind the
 * ibv_query_port() macro, for programs built against libibverbs 1.1 and
 * for a NULL query_port slot: fills the 48-byte struct of that ABI.
 * ibv_query_port(3).  Returns 0 or EINVAL.
 */
#undef ibv_query_port
UMC_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			      struct _compat_ibv_port_attr *port_attr)
{
	return umc_vctx_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
				   UMC_COMPAT_PORT_ATTR_LEN);
}

/*
 * umc_vctx_query_device_ex - the query_device_ex slot: the classic
 * attributes of ibv_query_device(), no extended capabilities, one port.
 * Writes the first @attr_size bytes of a struct ibv_device_attr_ex (at most
 * its size; a longer caller struct gets zeroes after it).
 * Returns 0, EINVAL (input comp_mask, or @attr_size shorter than the
 * classic attributes) or the error of ibv_query_device().
 * ibv_query_device_ex(3)
 */
static int umc_vctx_query_device_ex(struct ibv_context *context,
				    const struct ibv_query_device_ex_input *input,
				    struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;
	int ret;

	if ((input && input->comp_mask) || attr_size < sizeof(ex.orig_attr))
		return umc_pos_errno(-EINVAL);
	memset(&ex, 0, sizeof(ex));
	ret = ibv_query_device(context, &ex.orig_attr);
	if (ret)
		return ret;
	ex.device_cap_flags_ex = ex.orig_attr.device_cap_flags;
	ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
	if (attr_size > sizeof(ex)) {
		memset((uint8_t *)attr + sizeof(ex), 0, attr_size - sizeof(ex));
		attr_size = sizeof(ex);
	}
	memcpy(attr, &ex, attr_size);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The context.                                                              */

static const struct verbs_context umc_vctx_template = {
	.query_port = umc_vctx_query_port,
	.advise_mr = umc_no_advise_mr,
	.alloc_null_mr = umc_no_alloc_null_mr,
	.read_counters = umc_no_read_counters,
	.attach_counters_point_flow = umc_no_attach_counters_point_flow,
	.create_counters = umc_no_create_counters,
	.destroy_counters = umc_no_destroy_counters,
	.reg_dm_mr = umc_no_reg_dm_mr,
	.alloc_dm = umc_no_alloc_dm,
	.free_dm = umc_no_free_dm,
	.modify_flow_action_esp = umc_no_modify_flow_action_esp,
	.destroy_flow_action = umc_no_destroy_flow_action,
	.create_flow_action_esp = umc_no_create_flow_action_esp,
	.modify_qp_rate_limit = umc_no_modify_qp_rate_limit,
	.alloc_parent_domain = umc_no_alloc_parent_domain,
	.dealloc_td = umc_no_dealloc_td,
	.alloc_td = umc_no_alloc_td,
	.modify_cq = umc_no_modify_cq,
	.post_srq_ops = umc_no_post_srq_ops,
	.destroy_rwq_ind_table = umc_no_destroy_rwq_ind_table,
	.create_rwq_ind_table = umc_no_create_rwq_ind_table,
	.destroy_wq = umc_no_destroy_wq,
	.modify_wq = umc_no_modify_wq,
	.create_wq = umc_no_create_wq,
	.query_rt_values = umc_no_query_rt_values,
	.create_cq_ex = umc_no_create_cq_ex,
	.query_device_ex = umc_vctx_query_device_ex,
	.ibv_destroy_flow = umc_no_destroy_flow,
	.ABI_placeholder2 = (void (*)(void))umc_no_destroy_flow,
	.ibv_create_flow = umc_no_create_flow,
	.ABI_placeholder1 = (void (*)(void))umc_no_create_flow,
	.open_qp = umc_no_open_qp,
	.create_qp_ex = umc_create_qp_ex,
	.get_srq_num = umc_no_get_srq_num,
	.create_srq_ex = umc_no_create_srq_ex,
	.open_xrcd = umc_no_open_xrcd,
	.close_xrcd = umc_no_close_xrcd,
	.sz = sizeof(struct verbs_context),
	.context = {
		.ops = {
			._compat_query_device = ibv_query_device,
			._compat_query_port = ibv_query_port,
			.alloc_mw = umc_no_alloc_mw,
			.bind_mw = umc_no_bind_mw,
			.dealloc_mw = umc_no_dealloc_mw,
			.poll_cq = umc_poll_cq,
			.req_notify_cq = umc_req_notify_cq,
			.post_srq_recv = umc_no_post_srq_recv,
			.post_send = umc_post_send,
			.post_recv = umc_post_recv,
		},
		.cmd_fd = -1,
		.async_fd = -1,
		.num_comp_vectors = 1,
		.abi_compat = __VERBS_ABI_IS_EXTENDED,
	},
};

struct ibv_context *umc_context_init(struct umc_context *ctx, struct umc_device *dev)
{
	ctx->vctx = umc_vctx_template;
	ctx->vctx.context.device = &dev->ibdev;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->dev = dev;
	return &ctx->vctx.context;
}
