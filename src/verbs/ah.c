/* SPDX-License-Identifier: MIT */
/*
 * ah.c - address handles.
 *
 * The core checks what is common and keeps the ah_attr; the link layer
 * turns it into a destination (link ah_init: on RoCE the group's socket
 * address and the ICRC's IP context), so the send path only fills in
 * lengths and ports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stat/objects.h"
#include "verbs/verbs_int.h"

/*
 * ibv_create_ah(3): NULL and errno EINVAL for a wrong port or an ah_attr
 * the link refuses, EIO for the parent's PD in a child of fork.
 */
/* Does @attr address a multicast group (a GRH with a multicast DGID, ::ffff:224/4 on RoCE)? */
static bool umc_ah_mcast(const struct ibv_ah_attr *attr)
{
	return attr->is_global && umc_gid_is_multicast(&attr->grh.dgid);
}

UMC_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct umc_device *dev = ctx_dev(pd->context);
	struct umc_ah *ah;
	int ret;

	if (umc_dev_forked(dev))
		return umc_null_errno(-EIO);
	if (attr->port_num != UMC_PORT_NUM)
		return umc_null_errno(-EINVAL);
	ah = calloc(1, dev->link->ah_size);
	if (!ah)
		return umc_null_errno(-ENOMEM);
	ret = dev->link->ah_init(dev, attr, ah);
	if (ret) {
		free(ah);
		return umc_null_errno(ret);
	}
	ah->attr = *attr;
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	/* To a group: what is sent counts in the group's counters too (umc-stat). */
	if (umc_ah_mcast(attr))
		ah->gcnt = umc_stat_grp_get(dev, &attr->grh.dgid);
	umc_pd_get(pd);
	return &ah->ibah;
}

UMC_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	struct umc_ah *uah = to_uah(ah);
	struct umc_device *dev = ctx_dev(ah->context);

	if (umc_ctx_forked(ah->context))
		return umc_pos_errno(-EIO);
	if (umc_ah_mcast(&uah->attr))
		umc_stat_grp_put(dev, &uah->attr.grh.dgid);
	dev->link->ah_fini(dev, uah);
	umc_pd_put(ah->pd);
	free(uah);
	return 0;
}

/*
 * ibv_init_ah_from_wc(3): an ah_attr that answers the sender of a received
 * UD message: DLID, SL and path bits from the completion, the GRH part
 * from the 40 bytes in front of its buffer, as the link layer reads them
 * (on RoCE an IPv4 or IPv6 header).  Returns 0, or -1 when the link cannot
 * answer it (on RoCE: no GRH, or no local GID fits), and with errno EIO
 * for the parent's context in a child of fork.
 */
UMC_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				   struct ibv_wc *wc, struct ibv_grh *grh,
				   struct ibv_ah_attr *ah_attr)
{
	struct umc_device *dev = ctx_dev(context);

	if (umc_dev_forked(dev))
		return umc_minus1_errno(-EIO);
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	ah_attr->is_global = !!(wc->wc_flags & IBV_WC_GRH);
	return dev->link->init_ah_from_wc(dev, wc, (const uint8_t *)grh, ah_attr) ? -1 : 0;
}

UMC_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return umc_null_errno(-(umc_ctx_forked(pd->context) ? EIO : EINVAL));
	return ibv_create_ah(pd, &attr);
}
