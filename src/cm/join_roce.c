/* SPDX-License-Identifier: MIT */
/*
 * join_roce.c - the CM's join code for RoCEv2 ports (the kernel's
 * cma_iboe_join_multicast(), drivers/infiniband/core/cma.c).
 *
 * There is no SA on Ethernet: the join is local.  A full member takes a
 * reference on the device's IP group membership (umc_dev_member: the first
 * one makes the kernel send IGMP/MLD), a send-only member takes none, and
 * the MULTICAST_JOIN event is built and queued before the join returns.
 */
#include <errno.h>

#include "cm/cm_int.h"

/*
 * The kernel's iboe_get_mtu(): the netdev MTU less the largest RoCE headers
 * (GRH 40, UDP 8, BTH 12, XRC ETH 4, AtomicETH 28, ICRC 4) must leave at
 * least IB_MTU_256, otherwise a join fails with EINVAL.
 */
enum {
	CM_ROCE_HDR_MAX = 40 + 8 + 12 + 4 + 28 + 4,
	CM_IB_MTU_MIN = 256,
};

/*
 * cma_set_default_qkey on RoCE: RDMA_UDP_QKEY for RDMA_PS_UDP and
 * RDMA_PS_IB.  RDMA_PS_IPOIB takes the Q_Key of the IPoIB broadcast group,
 * which does not exist on Ethernet: -ENODEV, as the kernel (its SA
 * multicast client has no RoCE ports).
 */
static int roce_default_qkey(struct umc_cm_id *idp, uint32_t *qkey)
{
	switch (idp->id.ps) {
	case RDMA_PS_UDP:
	case RDMA_PS_IB:
		*qkey = RDMA_UDP_QKEY;
		return 0;
	default:
		return -ENODEV;
	}
}

static int roce_join(struct umc_cm_id *idp, struct umc_cm_mc *mc)
{
	const struct sockaddr *sa = (const struct sockaddr *)&mc->addr;
	struct umc_device *dev = idp->dev;
	struct rdma_ud_param *ud;
	struct umc_cm_event *evt;
	union ibv_gid mgid;
	int ret;

	if (umc_cm_zero_addr(sa))
		return -EINVAL;
	if (sa->sa_family == AF_IB) /* RoCEv2 maps IP addresses only */
		return -ENOTSUPP;
	/* AF_INET6 is an extension: the kernel refuses it with ENOTSUPP. */
	if (dev->link->netdev_mtu(dev) < CM_ROCE_HDR_MAX + CM_IB_MTU_MIN)
		return -EINVAL;
	umc_gid_from_sockaddr(&mgid, sa); /* ::ffff:a.b.c.d or the IPv6 address */
	/*
	 * An interface that cannot send to the group cannot join it (ENODEV,
	 * as cma_igmp_send's): Linux routes no IPv6 multicast on loopback.
	 */
	if (umc_gid_is_multicast(&mgid) && dev->link->mcast_route(dev, &mgid))
		return -ENODEV;
	if (!idp->qkey)
		(void)roce_default_qkey(idp, &idp->qkey); /* failure ignored, as cma */

	evt = umc_cm_event_new(idp, mc, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (!evt)
		return -ENOMEM;
	/*
	 * A non-multicast address cannot be an IP membership from user space
	 * (the kernel's ip_mc_inc_group does not check, setsockopt does).  The
	 * join still succeeds; attaching a QP then fails at retrieval (EINVAL)
	 * and the event becomes MULTICAST_ERROR, as observed on rxe.
	 */
	if (mc->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER && umc_gid_is_multicast(&mgid)) {
		ret = umc_dev_member(dev, &mgid, +1);
		if (ret) {
			umc_cm_event_free(evt); /* id and mc hold other references */
			return ret;
		}
		mc->member = true;
	}
	mc->mgid = mgid;
	mc->mlid = 0;

	/*
	 * ib_init_ah_from_mcmember: a source address that left the interface
	 * has no GID to build the AH from, and the event becomes
	 * MULTICAST_ERROR with status 0 (cma.c cma_make_mc_event()).
	 */
	if (!dev->link->gid_live(dev, idp->gid_index)) {
		evt->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		umc_cm_event_queue(evt);
		return 0;
	}
	ud = &evt->ev.param.ud;
	ud->private_data_len = 0;
	ud->qp_num = UMC_MCAST_QPN;
	ud->qkey = idp->qkey;
	ud->ah_attr.grh.dgid = mgid;
	ud->ah_attr.grh.flow_label = 0;
	ud->ah_attr.grh.sgid_index = (uint8_t)idp->gid_index;
	ud->ah_attr.grh.hop_limit = UMC_ROCEV2_HOP_LIMIT;
	ud->ah_attr.grh.traffic_class = 0;
	ud->ah_attr.dlid = 0;
	ud->ah_attr.sl = 0;
	ud->ah_attr.src_path_bits = 0;
	ud->ah_attr.static_rate = 0;
	ud->ah_attr.is_global = 1;
	ud->ah_attr.port_num = UMC_PORT_NUM;
	umc_cm_event_queue(evt);
	return 0;
}

static void roce_leave(struct umc_cm_id *idp, struct umc_cm_mc *mc)
{
	if (mc->member) {
		(void)umc_dev_member(idp->dev, &mc->mgid, -1);
		mc->member = false;
	}
}

const struct umc_cm_join_ops umc_cm_join_roce = {
	.name = "roce",
	.port_add = umc_cm_port_add_none,
	.default_qkey = roce_default_qkey,
	.join = roce_join,
	.leave = roce_leave,
};
