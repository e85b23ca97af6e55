/* SPDX-License-Identifier: MIT */
/*
 * ah.c - address handles.
 *
 * A RoCEv2 AH must carry a GRH (is_global): its DGID is the destination IP
 * (IPv4-mapped for IPv4) and its SGID index picks the source address.  The
 * AH keeps the destination socket address and the IP context the ICRC
 * pseudo-header needs, so the send path only fills in lengths and ports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "umc_int.h"

/* The first GID of the device whose family (IPv4-mapped or not) is @v4's. */
static int umc_gid_of_family(const struct umc_device *dev, bool v4)
{
	for (int i = 0; i < dev->gid_count; i++)
		if (umc_gid_is_v4mapped(&dev->gids[i].gid) == v4)
			return i;
	return -1;
}

/*
 * umc_ah_resolve - check an ah_attr and derive the IP context.  Returns 0
 * or -EINVAL (wrong port, no GRH, SGID index outside the table, no source
 * address of the DGID's family).
 */
static int umc_ah_resolve(struct umc_device *dev, const struct ibv_ah_attr *attr,
			  struct umc_ah *ah)
{
	const struct ibv_global_route *grh = &attr->grh;
	bool v4 = umc_gid_is_v4mapped(&grh->dgid);
	int sgid = grh->sgid_index;

	if (attr->port_num != UMC_PORT_NUM || !attr->is_global || sgid >= dev->gid_count)
		return -EINVAL;
	/* A source of the other family (an id bound to IPv6 joining an IPv4
	 * group, rxe-observed case 09) sends from the device's first address
	 * of the group's family instead. */
	if (umc_gid_is_v4mapped(&dev->gids[sgid].gid) != v4)
		sgid = umc_gid_of_family(dev, v4);
	if (sgid < 0)
		return -EINVAL;

	struct umc_ip_ctx *ip = &ah->ip;

	memset(ip, 0, sizeof(*ip));
	ip->family = (uint8_t)umc_gid_to_ip(&grh->dgid, ip->dst);
	umc_gid_to_ip(&dev->gids[sgid].gid, ip->src); /* same family, checked above */
	/* IPv4: DF, as rxe.  IPv6: flow label 0 whatever the AH says (rocev2-wire 1.3). */
	ip->df = v4;
	ip->dport = UMC_ROCEV2_UDP_PORT;
	ip->tclass = grh->traffic_class;
	ip->hop_limit = grh->hop_limit;
	ah->dst_len = umc_gid_to_sockaddr(&grh->dgid, UMC_ROCEV2_UDP_PORT, &ah->dst);
	if (!v4) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ah->dst;

		if (IN6_IS_ADDR_MC_LINKLOCAL(&s6->sin6_addr) ||
		    IN6_IS_ADDR_MC_NODELOCAL(&s6->sin6_addr) ||
		    IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
			s6->sin6_scope_id = dev->ifindex;
	}
	ah->sgid_index = sgid;
	ah->attr = *attr;
	return 0;
}

/* ibv_create_ah(3): NULL and errno EINVAL for an ah_attr umc_ah_resolve refuses. */
UMC_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct umc_ah *ah;
	int ret;

	if (umc_ctx_forked(pd->context)) {
		errno = EIO;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ret = umc_ah_resolve(ctx_dev(pd->context), attr, ah);
	if (ret) {
		free(ah);
		errno = -ret;
		return NULL;
	}
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	umc_pd_get(pd);
	return &ah->ibah;
}

UMC_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (umc_ctx_forked(ah->context))
		return EIO;
	umc_pd_put(ah->pd);
	free(to_uah(ah));
	return 0;
}

/*
 * ibv_init_ah_from_wc(3): an ah_attr that answers the sender of a received
 * UD message, from the GRH area of its receive buffer: IPv4 when bytes
 * 20..39 hold an IPv4 header (rxe's layout), IPv6 otherwise.  The SGID is
 * the local GID the datagram was sent to; for a multicast destination it is
 * the device's first GID of that family.  Returns 0, or -1 when the
 * completion has no GRH or no local GID fits (and with errno EIO for the
 * parent's context in a child of fork).
 */
UMC_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				   struct ibv_wc *wc, struct ibv_grh *grh,
				   struct ibv_ah_attr *ah_attr)
{
	struct umc_device *dev = ctx_dev(context);
	const uint8_t *raw = (const uint8_t *)grh;
	union ibv_gid local;
	bool v4;

	if (umc_dev_forked(dev)) {
		errno = EIO;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return -1;
	ah_attr->is_global = 1;
	ah_attr->grh.hop_limit = UMC_ROCEV2_HOP_LIMIT;
	v4 = (raw[0] >> 4) != 6 && (raw[20] >> 4) == 4;
	if (v4) {
		const uint8_t *ip = raw + 20;

		umc_gid_from_ip(&ah_attr->grh.dgid, true, ip + 12);
		ah_attr->grh.traffic_class = ip[1];
		umc_gid_from_ip(&local, true, ip + 16);
	} else {
		umc_gid_from_ip(&ah_attr->grh.dgid, false, raw + 8);
		ah_attr->grh.traffic_class = (uint8_t)((raw[0] << 4) | (raw[1] >> 4));
		ah_attr->grh.flow_label =
			((uint32_t)(raw[1] & 0x0f) << 16) | (uint32_t)raw[2] << 8 | raw[3];
		umc_gid_from_ip(&local, false, raw + 24);
	}
	int idx = -1;

	for (int i = 0; i < dev->gid_count && idx < 0; i++)
		if (memcmp(&dev->gids[i].gid, &local, sizeof(local)) == 0)
			idx = i;
	if (idx < 0 && umc_gid_is_multicast(&local))
		idx = umc_gid_of_family(dev, v4);
	if (idx < 0)
		return -1;
	ah_attr->grh.sgid_index = (uint8_t)idx;
	return 0;
}

UMC_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr)) {
		errno = umc_ctx_forked(pd->context) ? EIO : EINVAL;
		return NULL;
	}
	return ibv_create_ah(pd, &attr);
}
