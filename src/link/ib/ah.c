// SPDX-License-Identifier: MIT
/*
 * ah.c - InfiniBand address handles.
 *
 * An AH names a DLID (unicast, or an MLID 0xC000-0xFFFE), an SL and source
 * path bits, and, when is_global, a GRH (SGID index, DGID, traffic class,
 * flow label, hop limit), as on an HCA (IBA 10.2.2).  The AH keeps the LRH
 * and GRH to send and what plays the fabric: for an MLID, its forwarding
 * (fwd.c: the IP group, or the receiving ports' endpoints, as umc-sm says,
 * waited for here), or the data endpoint the SM has for a unicast LID
 * (resolved once, here), so that a send never waits for the SM.  An AH to
 * a LID the SM does not know is made, as on a real fabric, and its packets
 * are dropped and counted (tx_no_route).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "link/ib/ib.h"
#include "sa/sa_client.h"

int ib_ah_init(struct umc_device *dev, const struct ibv_ah_attr *attr, struct umc_ah *uah)
{
	struct ib_port *port = to_ib_port(dev);
	struct ib_ah *ah = to_ib_ah(uah);
	struct umc_lrh *lrh = &ah->hdr.lrh;
	struct umc_grh *grh = &ah->hdr.grh;
	uint16_t dlid = attr->dlid;
	struct umc_sa_client *sa;

	if (dlid == 0 || dlid == UMC_LID_PERMISSIVE)
		return -EINVAL;
	if (attr->is_global && attr->grh.sgid_index >= dev->gid_count)
		return -EINVAL;
	umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
	struct umc_sm_port_info pi = port->pi;

	umc_mutex_unlock(&dev->lock);

	lrh->vl = 0;
	lrh->sl = attr->sl & 0x0f;
	lrh->lnh = attr->is_global ? UMC_LNH_IBA_GLOBAL : UMC_LNH_IBA_LOCAL;
	lrh->dlid = dlid;
	lrh->slid = attr->src_path_bits; /* the port's LID is added when sent (it may change) */
	if (attr->is_global) {
		grh->ipver = UMC_GRH_IPVER;
		grh->tclass = attr->grh.traffic_class;
		grh->flow_label = attr->grh.flow_label & 0xfffff;
		grh->next_hdr = UMC_GRH_NXTHDR_IBA;
		grh->hop_limit = attr->grh.hop_limit;
		memcpy(grh->sgid, dev->gids[attr->grh.sgid_index].raw, 16);
		memcpy(grh->dgid, attr->grh.dgid.raw, 16);
	}
	memset(&ah->dst, 0, sizeof(ah->dst));
	ah->dst.sin_family = AF_INET;
	ah->fwd = NULL;
	if (dlid >= UMC_MLID_FIRST) {
		if (!umc_sm_mlid_to_ip(&pi, dlid))
			return -EINVAL; /* an MLID the subnet's map does not carry */
		ah->routed = true;
		return ib_fwd_get(port, dlid, &ah->fwd);
	}
	sa = ib_port_sa(port);
	ah->routed = sa && umc_sa_resolve_lid(sa, dlid, &ah->dst) == 0;
	return 0;
}

void ib_ah_fini(struct umc_device *dev, struct umc_ah *uah)
{
	struct ib_ah *ah = to_ib_ah(uah);

	if (ah->fwd)
		ib_fwd_put(to_ib_port(dev), ah->fwd);
}

/*
 * ib_init_ah_from_wc - answer the sender of a received message: DLID =
 * its SLID (set by the core), and, when the packet had a GRH, a GRH back
 * to its SGID from the local GID it was sent to (the port's GID for a
 * multicast destination), with its traffic class and flow label (IBA
 * 10.2.2.4, rdma-core ibv_init_ah_from_wc).  Returns 0 or -EINVAL.
 */
int ib_init_ah_from_wc(struct umc_device *dev, const struct ibv_wc *wc, const uint8_t *raw,
		       struct ibv_ah_attr *attr)
{
	struct umc_grh g;
	int idx = -1;

	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0; /* a local packet: the LID route is the whole answer */
	umc_grh_decode(raw, &g);
	for (int i = 0; i < dev->gid_count && idx < 0; i++)
		if (memcmp(dev->gids[i].raw, g.dgid, 16) == 0)
			idx = i;
	if (idx < 0 && g.dgid[0] == 0xff)
		idx = 0;
	if (idx < 0)
		return -EINVAL;
	memcpy(attr->grh.dgid.raw, g.sgid, 16);
	attr->grh.sgid_index = (uint8_t)idx;
	attr->grh.flow_label = g.flow_label;
	attr->grh.traffic_class = g.tclass;
	attr->grh.hop_limit = 0xff;
	return 0;
}
