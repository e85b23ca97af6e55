/* SPDX-License-Identifier: MIT */
/*
 * mcast.c - a device's multicast groups: QP attachments and IP membership.
 *
 * A group ("mcg", as in rxe) is keyed by its MGID and exists while a QP is
 * attached to it or a CM full-member join holds it.  While it exists the
 * link keeps it receivable (mcg_open: on RoCE a socket that gets the
 * group's traffic exactly when the host is an IP member of the group on the
 * interface, as an rxe device does).  Two counts live on it:
 *
 *   nqp/qps[]  QPs attached (ibv_attach_mcast); the progress engine
 *              delivers a copy to each.  Limits as rxe: 8192 groups with a
 *              QP, 56 QPs per group, 458752 attachments in all (ENOMEM).
 *   members    CM full-member joins (umc_dev_member); the first makes the
 *              port a member (link membership: IGMP/MLD on RoCE), the last
 *              leaves.
 *
 * Each QP also keeps the (GID, MLID) pairs it was attached with, as the
 * kernel's uverbs layer does: a duplicate attach is a no-op returning 0,
 * a detach of a pair never attached is EINVAL.
 *
 * Locking: dev->rx_lock, then dev->lock.  Attach and detach first drain
 * the receive sockets, so a datagram that arrived before the call is
 * delivered to the QPs attached at that time and no other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stat/objects.h"
#include "verbs/verbs_int.h"

static unsigned umc_mcg_hash(const union ibv_gid *gid)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (int i = 0; i < 16; i++)
		h = (h ^ gid->raw[i]) * 16777619u;
	return h & 255;
}

struct umc_mcg *__umc_mcg_find(struct umc_device *dev, const union ibv_gid *mgid)
{
	for (struct umc_mcg *g = dev->mcg_hash[umc_mcg_hash(mgid)]; g; g = g->next)
		if (memcmp(&g->mgid, mgid, sizeof(*mgid)) == 0)
			return g;
	return NULL;
}

/*
 * Find or create a group, receivable on the port (link mcg_open, with the
 * MLID of the first attach); caller holds rx_lock and dev->lock.
 */
static int __umc_mcg_get(struct umc_device *dev, const union ibv_gid *mgid, uint16_t mlid,
			 struct umc_mcg **out)
{
	struct umc_mcg *g = __umc_mcg_find(dev, mgid);
	int ret;

	if (g) {
		*out = g;
		return 0;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->mgid = *mgid;
	ret = dev->link->mcg_open(dev, g, mlid);
	if (ret) {
		free(g);
		return ret;
	}
	g->gcnt = umc_stat_grp_get(dev, mgid); /* the group's counters (umc-stat) */
	/* Visible only once complete. */
	unsigned h = umc_mcg_hash(mgid);

	g->next = dev->mcg_hash[h];
	dev->mcg_hash[h] = g;
	*out = g;
	return 0;
}

/* Free a group nobody holds any more; caller holds rx_lock and dev->lock. */
static void __umc_mcg_put(struct umc_device *dev, struct umc_mcg *g)
{
	if (g->nqp || g->members)
		return;
	for (struct umc_mcg **p = &dev->mcg_hash[umc_mcg_hash(&g->mgid)]; *p; p = &(*p)->next) {
		if (*p == g) {
			*p = g->next;
			break;
		}
	}
	dev->link->mcg_close(dev, g);
	umc_stat_grp_put(dev, &g->mgid);
	free(g);
}

static void umc_dev_lock(struct umc_device *dev)
{
	umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	/* Datagrams already received belong to the attachments of before. */
	__umc_progress(dev);
	umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
}

static void umc_dev_unlock(struct umc_device *dev)
{
	umc_mutex_unlock(&dev->lock);
	umc_mutex_unlock(&dev->rx_lock);
}

int umc_dev_member(struct umc_device *dev, const union ibv_gid *mgid, int delta)
{
	struct umc_mcg *g;
	int ret = 0;

	/*
	 * A unicast "group" cannot be joined at the IP level; the join still
	 * completes and the attach at event time fails with EINVAL, which is
	 * what a program sees on rxe (librdmacm's ucma_process_join() turns the
	 * attach's EINVAL into MULTICAST_ERROR).
	 */
	if (!umc_gid_is_multicast(mgid))
		return 0;
	umc_dev_lock(dev);
	if (delta > 0) {
		ret = __umc_mcg_get(dev, mgid, 0, &g);
		if (ret)
			goto out;
		if (g->members == 0)
			ret = dev->link->membership(dev, g, true);
		if (ret)
			__umc_mcg_put(dev, g);
		else
			g->members++;
	} else {
		g = __umc_mcg_find(dev, mgid);
		if (g && g->members > 0 && --g->members == 0) {
			dev->link->membership(dev, g, false);
			__umc_mcg_put(dev, g);
		}
	}
out:
	umc_dev_unlock(dev);
	return ret;
}

static struct umc_attach **umc_qp_find_attach(struct umc_qp *qp, const union ibv_gid *gid,
					      uint16_t lid)
{
	struct umc_attach **p;

	for (p = &qp->attached; *p; p = &(*p)->next)
		if ((*p)->mlid == lid && memcmp(&(*p)->gid, gid, sizeof(*gid)) == 0)
			return p;
	return NULL;
}

static bool umc_qp_has_gid(struct umc_qp *qp, const union ibv_gid *gid)
{
	for (struct umc_attach *a = qp->attached; a; a = a->next)
		if (memcmp(&a->gid, gid, sizeof(*gid)) == 0)
			return true;
	return false;
}

/*
 * ib_attach_mcast's checks: a multicast GID, a UD QP, a valid MLID on IB;
 * and not the parent's QP in a child of fork (EIO).
 */
static int umc_mcast_chk(struct umc_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (umc_dev_forked(qp->dev))
		return -EIO;
	if (!umc_gid_is_multicast(gid) || qp->ibqp.qp_type != IBV_QPT_UD)
		return -EINVAL;
	if (qp->dev->link->link_layer == IBV_LINK_LAYER_INFINIBAND &&
	    (lid < 0xC000 || lid == 0xFFFF))
		return -EINVAL;
	return 0;
}

static int __umc_attach(struct umc_device *dev, struct umc_qp *qp, const union ibv_gid *gid,
			uint16_t lid)
{
	struct umc_attach *a;
	struct umc_mcg *g;
	int ret;

	if (umc_qp_find_attach(qp, gid, lid))
		return 0;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->gid = *gid;
	a->mlid = lid;
	if (umc_qp_has_gid(qp, gid)) /* same group, another MLID: one copy only */
		goto link;

	g = __umc_mcg_find(dev, gid);
	if ((!g || g->nqp == 0) && dev->mcg_attached >= UMC_MAX_MCAST_GRP)
		goto enomem;
	if ((g && g->nqp >= UMC_MAX_MCAST_QP_ATTACH) ||
	    dev->total_attach >= UMC_MAX_TOT_MCAST_QP_ATTACH)
		goto enomem;
	ret = __umc_mcg_get(dev, gid, lid, &g);
	if (ret) {
		free(a);
		return ret;
	}
	if (g->nqp++ == 0)
		dev->mcg_attached++;
	g->qps[g->nqp - 1] = qp;
	dev->total_attach++;
	umc_stat_grp_qps(dev, g, lid);
link:
	a->next = qp->attached;
	qp->attached = a;
	__atomic_store_n(&qp->nattach, qp->nattach + 1, __ATOMIC_RELAXED);
	umc_stat_qp_set(qp);
	return 0;
enomem:
	free(a);
	return -ENOMEM;
}

static int __umc_detach(struct umc_device *dev, struct umc_qp *qp, const union ibv_gid *gid,
			uint16_t lid)
{
	struct umc_attach **p = umc_qp_find_attach(qp, gid, lid), *a;
	struct umc_mcg *g;

	if (!p)
		return -EINVAL;
	a = *p;
	*p = a->next;
	free(a);
	__atomic_store_n(&qp->nattach, qp->nattach - 1, __ATOMIC_RELAXED);
	umc_stat_qp_set(qp);
	if (umc_qp_has_gid(qp, gid))
		return 0;
	g = __umc_mcg_find(dev, gid);
	for (int i = 0; g && i < g->nqp; i++) {
		if (g->qps[i] != qp)
			continue;
		g->qps[i] = g->qps[--g->nqp];
		dev->total_attach--;
		umc_stat_grp_qps(dev, g, 0);
		if (g->nqp == 0) {
			dev->mcg_attached--;
			__umc_mcg_put(dev, g);
		}
		break;
	}
	return 0;
}

/*
 * ibv_attach_mcast(3): attach @ibqp to the group @gid.  Returns 0, or
 * EINVAL (GID not multicast, QP not UD, on IB an MLID below 0xC000 or
 * 0xFFFF), ENOMEM (a group, per-group or total attachment limit), the
 * socket error of opening the group (the kernel's ib_attach_mcast() in
 * core/verbs.c, rxe_attach_mcast() in sw/rxe/rxe_mcast.c), or
 * EIO for the parent's QP in a child of fork.
 */
UMC_EXPORT int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct umc_qp *qp = to_uqp(ibqp);
	int ret = umc_mcast_chk(qp, gid, lid);

	if (ret)
		return umc_pos_errno(ret);
	umc_dev_lock(qp->dev);
	ret = __umc_attach(qp->dev, qp, gid, lid);
	umc_dev_unlock(qp->dev);
	return umc_pos_errno(ret);
}

/*
 * ibv_detach_mcast(3): EINVAL when (@gid, @lid) is not attached to @ibqp.
 * Datagrams that arrived while attached are still delivered.
 */
UMC_EXPORT int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct umc_qp *qp = to_uqp(ibqp);
	int ret = umc_mcast_chk(qp, gid, lid);

	if (ret)
		return umc_pos_errno(ret);
	umc_dev_lock(qp->dev);
	ret = __umc_detach(qp->dev, qp, gid, lid);
	umc_dev_unlock(qp->dev);
	return umc_pos_errno(ret);
}

/*
 * umc_qp_detach_all - detach @qp from every group it is attached to, with
 * whatever MLIDs (rdma_destroy_qp; docs/design.md, "Departures from
 * Linux": a QP is never left attached).
 * Returns the number of (GID, MLID) pairs detached.
 */
int umc_qp_detach_all(struct umc_qp *qp)
{
	int n = 0;

	umc_dev_lock(qp->dev);
	while (qp->attached) {
		__umc_detach(qp->dev, qp, &qp->attached->gid, qp->attached->mlid);
		n++;
	}
	umc_dev_unlock(qp->dev);
	return n;
}
