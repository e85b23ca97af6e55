/* SPDX-License-Identifier: MIT */
/*
 * context.c - the operations tables of an open context, and the exported
 * verbs that only call through them.
 */
#include "umc_int.h"

struct ibv_context *umc_context_init(struct umc_context *ctx, struct umc_device *dev)
{
	struct ibv_context *ibctx = &ctx->ibctx;

	ctx->dev = dev;
	ibctx->device = &dev->ibdev;
	ibctx->ops.poll_cq = umc_poll_cq;
	ibctx->ops.req_notify_cq = umc_req_notify_cq;
	ibctx->ops.post_send = umc_post_send;
	ibctx->ops.post_recv = umc_post_recv;
	ibctx->cmd_fd = -1;
	ibctx->async_fd = -1;
	ibctx->num_comp_vectors = 1;
	pthread_mutex_init(&ibctx->mutex, NULL);
	return ibctx;
}

UMC_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			      struct ibv_port_attr *attr)
{
	return umc_query_port(context, port_num, attr);
}

UMC_EXPORT struct ibv_qp *ibv_create_qp_ex(struct ibv_context *ctx,
					   struct ibv_qp_init_attr_ex *attr)
{
	return umc_create_qp_ex(ctx, attr);
}
