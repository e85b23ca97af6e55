/* SPDX-License-Identifier: MIT */
/*
 * context.c - the operations tables of an open context, and the exported
 * verbs that only call through them.
 */
#include "umc_int.h"

UMC_EXPORT struct ibv_qp *ibv_create_qp_ex(struct ibv_context *ctx,
					   struct ibv_qp_init_attr_ex *attr)
{
	return umc_create_qp_ex(ctx, attr);
}
