// SPDX-License-Identifier: MIT
/*
 * link.c - the CM's operations for a link layer that has no multicast of
 * its own (the default behind dev->link->cm): a join fails with ENOSYS,
 * as the kernel's rdma_join_multicast does on a port that is neither RoCE
 * nor IB-multicast capable (kernel-behaviour 7.8), and so does choosing a
 * default Q_Key.  Also the port event handler of a link whose joins a
 * port event does not end (RoCE: kernel-behaviour 2.6).
 */
#include <errno.h>

#include "cm/cm_int.h"

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

void umc_cm_port_event_none(struct umc_device *dev)
{
}

void umc_cm_port_event(struct umc_device *dev)
{
	dev->link->cm->port_event(dev);
}

const struct umc_cm_link_ops umc_cm_default_ops = {
	.name = "none",
	.default_qkey = default_default_qkey,
	.join = default_join,
	.leave = default_leave,
	.port_event = umc_cm_port_event_none,
};
