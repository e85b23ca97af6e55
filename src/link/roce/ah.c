// SPDX-License-Identifier: MIT
/*
 * ah.c - RoCEv2 address handles.
 *
 * A RoCEv2 AH must carry a GRH (is_global): its DGID is the destination IP
 * (IPv4-mapped for IPv4) and its SGID index picks the source address.  The
 * AH keeps the destination socket address and the IP context the ICRC
 * pseudo-header needs, so the send path only fills in lengths and ports.
 */
#include <errno.h>
#include <string.h>

#include "link/roce/roce.h"

/*
 * roce_ah_init - check an ah_attr and derive the destination and IP
 * context.  Returns 0 or -EINVAL (no GRH, SGID index outside the table, no
 * source address of the DGID's family).
 */
int roce_ah_init(struct umc_device *dev, const struct ibv_ah_attr *attr, struct umc_ah *uah)
{
	struct roce_ah *ah = to_roce_ah(uah);
	const struct ibv_global_route *grh = &attr->grh;
	bool v4 = umc_gid_is_v4mapped(&grh->dgid);
	int sgid = grh->sgid_index;

	if (!attr->is_global || sgid >= dev->gid_count)
		return -EINVAL;
	/* A source of the other family (an id bound to IPv6 joining an IPv4
	 * group, whose event's sgid_index names the IPv6 GID, as on rxe) sends
	 * from the device's first address of the group's family instead. */
	if (umc_gid_is_v4mapped(&dev->gids[sgid]) != v4)
		sgid = roce_gid_of_family(dev, v4);
	if (sgid < 0)
		return -EINVAL;

	struct umc_ip_ctx *ip = &ah->ip;

	memset(ip, 0, sizeof(*ip));
	ip->family = (uint8_t)umc_gid_to_ip(&grh->dgid, ip->dst);
	umc_gid_to_ip(&dev->gids[sgid], ip->src); /* same family, checked above */
	/* IPv4: DF, as rxe.  IPv6: flow label 0 whatever the AH says (rxe_net.c prepare6()). */
	ip->df = v4;
	ip->dport = UMC_ROCEV2_UDP_PORT;
	ip->tclass = grh->traffic_class;
	ip->hop_limit = grh->hop_limit; /* a multicast TTL: unicast takes the route's (tx.c) */
	ah->dst_len = umc_gid_to_sockaddr(&grh->dgid, UMC_ROCEV2_UDP_PORT, &ah->dst);
	if (!v4) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ah->dst;

		if (IN6_IS_ADDR_MC_LINKLOCAL(&s6->sin6_addr) ||
		    IN6_IS_ADDR_MC_NODELOCAL(&s6->sin6_addr) ||
		    IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
			s6->sin6_scope_id = to_roce_port(dev)->ifindex;
	}
	ah->sgid_index = sgid;
	return 0;
}

/*
 * roce_init_ah_from_wc - the AH that answers a received UD message, from
 * the GRH area of its buffer: IPv4 when bytes 20..39 hold an IPv4 header
 * (rxe's layout), IPv6 otherwise.  The SGID is the local GID the datagram
 * was sent to; for a multicast destination it is the port's first GID of
 * that family.  Returns 0, or -EINVAL when the completion has no GRH or no
 * local GID fits.
 */
int roce_init_ah_from_wc(struct umc_device *dev, const struct ibv_wc *wc, const uint8_t *raw,
			 struct ibv_ah_attr *attr)
{
	union ibv_gid local;
	bool v4 = (raw[0] >> 4) != 6 && (raw[20] >> 4) == 4;
	int idx = -1;

	if (!(wc->wc_flags & IBV_WC_GRH)) /* RoCE always routes by GRH */
		return -EINVAL;
	attr->grh.hop_limit = UMC_ROCEV2_HOP_LIMIT;
	if (v4) {
		const uint8_t *ip = raw + 20;

		umc_gid_from_ip(&attr->grh.dgid, true, ip + 12);
		attr->grh.traffic_class = ip[1];
		umc_gid_from_ip(&local, true, ip + 16);
	} else {
		umc_gid_from_ip(&attr->grh.dgid, false, raw + 8);
		attr->grh.traffic_class = (uint8_t)((raw[0] << 4) | (raw[1] >> 4));
		attr->grh.flow_label =
			((uint32_t)(raw[1] & 0x0f) << 16) | (uint32_t)raw[2] << 8 | raw[3];
		umc_gid_from_ip(&local, false, raw + 24);
	}
	for (int i = 0; i < dev->gid_count && idx < 0; i++)
		if (memcmp(&dev->gids[i], &local, sizeof(local)) == 0)
			idx = i;
	if (idx < 0 && umc_gid_is_multicast(&local))
		idx = roce_gid_of_family(dev, v4);
	if (idx < 0)
		return -EINVAL;
	attr->grh.sgid_index = (uint8_t)idx;
	return 0;
}
