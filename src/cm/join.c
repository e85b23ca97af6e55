// SPDX-License-Identifier: MIT
/*
 * join.c - which join code the CM uses for a port, and the join code of a
 * link layer that has no multicast of its own.
 *
 * The CM picks the join code by the port's link layer, as the kernel's
 * cma.c picks cma_iboe_join_multicast() for a RoCE port
 * (rdma_protocol_roce()) and cma_join_ib_multicast() for an InfiniBand
 * one (rdma_cap_ib_mcast()): links never name the CM.
 *
 * Without multicast, a join fails with ENOSYS, as the kernel's
 * rdma_join_multicast() (drivers/infiniband/core/cma.c) does on a port
 * that is neither RoCE nor IB-multicast capable, and so does choosing a
 * default Q_Key.
 */
#include <errno.h>

#include "cm/cm_int.h"

void umc_cm_port_add_none(struct umc_device *dev)
{
}

static int default_default_qkey(struct umc_cm_id *idp, uint32_t *qkey)
{
	return -ENOSYS;
}

static int default_join(struct umc_cm_id *idp, struct umc_cm_mc *mc)
{
	return -ENOSYS;
}

static void default_leave(struct umc_cm_id *idp, struct umc_cm_mc *mc)
{
}

static const struct umc_cm_join_ops umc_cm_join_none = {
	.name = "none",
	.port_add = umc_cm_port_add_none,
	.default_qkey = default_default_qkey,
	.join = default_join,
	.leave = default_leave,
};

const struct umc_cm_join_ops *umc_cm_join_ops_of(const struct umc_device *dev)
{
	switch (dev->link->link_layer) {
	case IBV_LINK_LAYER_ETHERNET:
		return &umc_cm_join_roce;
	case IBV_LINK_LAYER_INFINIBAND:
		return &umc_cm_join_ib;
	default:
		return &umc_cm_join_none;
	}
}
