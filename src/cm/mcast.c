/* SPDX-License-Identifier: MIT */
/*
 * mcast.c - rdma_join_multicast(_ex), rdma_leave_multicast, and the JOIN
 * event processing done when the application retrieves the event.
 *
 * Each join is a struct umc_cm_mc on its id's list, newest first
 * (librdmacm and cma both push at the head), so a leave finds the most
 * recent join of an address.  The link-layer part of a join (MGID, IP
 * membership, when the event is produced) is the join code of the port's
 * link layer (struct umc_cm_join_ops: join_roce.c, join_ib.c); this file
 * never touches packets or sockets.
 *
 * The QP is attached when the MULTICAST_JOIN event is retrieved, never for
 * a send-only join (librdmacm ucma_process_join).  The attachments the CM
 * made are counted per group in idp->attach, so that two joins of the same
 * group on one id keep the QP attached until the last of them leaves
 * (docs/design.md, "Departures from Linux"; librdmacm detaches on the
 * first leave).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_int.h"
#include "stat/objects.h"
#include "stat/stat.h"
#include "wire/ib_mad.h"

/* umc_cm_mc_put - drop a reference to @mc; the last one frees it. */
void umc_cm_mc_put(struct umc_cm_mc *mc)
{
	if (atomic_fetch_sub(&mc->refcnt, 1) == 1)
		free(mc);
}

static struct umc_cm_attach *__cm_attach_find(struct umc_cm_id *idp, const union ibv_gid *mgid,
					      uint16_t mlid)
{
	for (struct umc_cm_attach *a = idp->attach; a; a = a->next)
		if (!memcmp(&a->mgid, mgid, sizeof(*mgid)) && a->mlid == mlid)
			return a;
	return NULL;
}

/* Attach the id's QP to (mgid, mlid), or count one more join using it.
 * Caller holds idp->lock.  Returns 0 or the positive errno of
 * ibv_attach_mcast (or ENOMEM). */
static int __cm_attach_get(struct umc_cm_id *idp, const union ibv_gid *mgid, uint16_t mlid)
{
	struct umc_cm_attach *a = __cm_attach_find(idp, mgid, mlid);
	int ret;

	if (a) {
		a->refs++;
		return 0;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return ENOMEM;
	ret = ibv_attach_mcast(idp->id.qp, mgid, mlid);
	if (ret) {
		free(a);
		return ret;
	}
	a->mgid = *mgid;
	a->mlid = mlid;
	a->refs = 1;
	a->next = idp->attach;
	idp->attach = a;
	return 0;
}

/* Undo one __cm_attach_get(); the last one detaches.  Caller holds idp->lock. */
static void __cm_attach_put(struct umc_cm_id *idp, const union ibv_gid *mgid, uint16_t mlid)
{
	struct umc_cm_attach **pp, *a;

	for (pp = &idp->attach; (a = *pp); pp = &a->next) {
		if (memcmp(&a->mgid, mgid, sizeof(*mgid)) || a->mlid != mlid)
			continue;
		if (--a->refs)
			return;
		*pp = a->next;
		if (idp->id.qp)
			(void)ibv_detach_mcast(idp->id.qp, &a->mgid, a->mlid);
		free(a);
		return;
	}
}

/**
 * __umc_cm_detach_all - detach the id's QP from every group the CM attached
 * it to (rdma_destroy_qp; docs/design.md, "Departures from Linux": a QP is
 * never left attached).  The
 * joins stay; their QP is simply gone.
 * Context: idp->lock held; id->qp still set.
 */
void __umc_cm_detach_all(struct umc_cm_id *idp)
{
	while (idp->attach) {
		struct umc_cm_attach *a = idp->attach;

		idp->attach = a->next;
		(void)ibv_detach_mcast(idp->id.qp, &a->mgid, a->mlid);
		free(a);
	}
	for (struct umc_cm_mc *mc = idp->mc_list; mc; mc = mc->next)
		mc->attached = false;
}

void umc_cm_mc_stat(struct umc_cm_mc *mc, int state)
{
	static const union ibv_gid none;

	if (memcmp(&mc->mgid, &none, sizeof(none)))
		umc_stat_grp_join(mc->idp->dev, &mc->mgid, mc->idp->num,
				  (const struct sockaddr *)&mc->addr,
				  mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
					  ? UMC_JOIN_SENDONLY_FULL
					  : UMC_JOIN_FULL,
				  state);
}

/**
 * __umc_cm_mc_leave - leave @mc, already unlinked from idp->mc_list.
 * @discarded: the mc's queued, undelivered events are moved here, to be
 *             freed by the caller after dropping idp->lock.
 *
 * Detaches the QP if this was the last CM attachment of the group on the id
 * (or, as librdmacm, if the application attached it itself and no CM
 * attachment of the group remains), undoes the link state (membership), and
 * drops the list's reference.  Never waits for acks (docs/design.md,
 * "Departures from Linux").
 * Context: idp->lock held.
 */
void __umc_cm_mc_leave(struct umc_cm_id *idp, struct umc_cm_mc *mc,
		       struct umc_cm_event **discarded)
{
	umc_cm_mc_stat(mc, 0);
	mc->left = true;
	if (mc->attached) {
		mc->attached = false;
		__cm_attach_put(idp, &mc->mgid, mc->mlid);
	} else if (idp->id.qp && mc->processed &&
		   mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER &&
		   !__cm_attach_find(idp, &mc->mgid, mc->mlid)) {
		/* librdmacm detaches on leave whoever attached; result ignored. */
		(void)ibv_detach_mcast(idp->id.qp, &mc->mgid, mc->mlid);
	}
	idp->jops->leave(idp, mc);
	umc_cm_chan_discard(idp->chan, NULL, mc, discarded);
	umc_cm_mc_put(mc);
}

/*
 * The shared worker (librdmacm rdma_join_multicast2 + kernel
 * ucma_process_join / rdma_join_multicast).  @addrlen is non-zero.
 */
static int cm_join(struct rdma_cm_id *id, const struct sockaddr *addr, socklen_t addrlen,
		   uint16_t join_flags, void *context)
{
	struct umc_cm_id *idp = to_cmid(id);
	struct umc_cm_mc *mc;
	int ret;

	if (umc_cm_id_forked(id))
		return umc_minus1_errno(-EIO);
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return umc_minus1_errno(-ENOMEM);
	mc->idp = idp;
	mc->context = context;
	mc->join_flags = join_flags;
	mc->addrlen = addrlen;
	memcpy(&mc->addr, addr, addrlen);
	atomic_init(&mc->refcnt, 1);

	__umc_cm_id_lock(idp);
	if (!idp->dev) /* ucma_get_ctx_dev: not bound or resolved to a device */
		ret = -EINVAL;
	else if (idp->state != UMC_CM_ADDR_BOUND && idp->state != UMC_CM_ADDR_RESOLVED)
		ret = -EINVAL;
	else if (idp->id.qp_type != IBV_QPT_UD) /* the kernel's rdma_join_multicast() */
		ret = -EINVAL;
	else {
		mc->next = idp->mc_list;
		idp->mc_list = mc;
		ret = idp->jops->join(idp, mc);
		if (ret)
			idp->mc_list = mc->next;
		else
			umc_cm_mc_stat(mc, UMC_STAT_JOINING);
	}
	umc_cm_id_unlock(idp);
	if (ret) {
		free(mc);
		return umc_minus1_errno(ret);
	}
	return umc_cm_complete(idp);
}

/**
 * rdma_join_multicast_ex - join a multicast group with a join flag.
 * @id:      a UD id bound to a device (rdma_bind_addr() to a local address,
 *           or rdma_resolve_addr()).
 * @mc_join_attr: comp_mask must hold RDMA_CM_JOIN_MC_ATTR_ADDRESS and
 *           RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS; join_flags is
 *           RDMA_MC_JOIN_FLAG_FULLMEMBER or _SENDONLY_FULLMEMBER.
 * @context: returned in the event's param.ud.private_data.
 *
 * Checks, in librdmacm's then the kernel's order (librdmacm/cma.c
 * rdma_join_multicast_ex(); the kernel's ucma.c ucma_process_join(), cma.c
 * rdma_join_multicast() and the link's join code).  On success
 * exactly one RDMA_CM_EVENT_MULTICAST_JOIN (or _ERROR) follows.  On RoCE
 * it is queued before the call returns: qp_num 0xFFFFFF, the id's Q_Key,
 * ah_attr with is_global 1, dgid the MGID (::ffff:a.b.c.d for IPv4, the
 * address itself for IPv6, an extension: Linux refuses IPv6 with 524),
 * hop_limit 64, sgid_index the id's source GID, port_num 1.  A full member
 * joins the IP group (IGMP/MLD); a send-only member does not, and its QP
 * is never attached.  The same address may be joined more than once; each
 * join has its own event and needs its own leave.
 *
 * Return: 0, or -1 with errno:
 *  EOPNOTSUPP  comp_mask has a bit >= RDMA_CM_JOIN_MC_ATTR_RESERVED;
 *  EINVAL      no ADDRESS or JOIN_FLAGS bit, join_flags >= 2, NULL or
 *              unknown-family address, id not bound to a device, not in
 *              ADDR_BOUND/ADDR_RESOLVED, not UD (RDMA_PS_TCP), zero address
 *              (0.0.0.0/8, ::), netdev MTU too small for RoCE;
 *  ENOTSUPP    (524) AF_IB group on RoCE;
 *  ENOSYS      the device is neither RoCE nor IB;
 *  ENODEV      the interface cannot join the IP group;
 *  EIO         the parent's id, in a child of fork;
 *  ENOMEM.
 * A synchronous id waits for the event: then the errno of its status
 * (EPERM when attaching the QP failed, as librdmacm).
 * rdma_join_multicast_ex(3).
 */
UMC_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				      struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
	socklen_t addrlen;

	if (!id || !mc_join_attr)
		return umc_minus1_errno(-EINVAL);
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return umc_minus1_errno(-EOPNOTSUPP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return umc_minus1_errno(-EINVAL);
	addrlen = umc_cm_addrlen(mc_join_attr->addr);
	if (!addrlen)
		return umc_minus1_errno(-EINVAL);
	return cm_join(id, mc_join_attr->addr, addrlen, (uint16_t)mc_join_attr->join_flags,
		       context);
}

/**
 * rdma_join_multicast - join group @addr as a full member; as
 * rdma_join_multicast_ex() with RDMA_MC_JOIN_FLAG_FULLMEMBER.
 *
 * Return: 0, or -1 with errno as rdma_join_multicast_ex() (EINVAL for a
 * NULL or unknown-family @addr).  rdma_join_multicast(3).
 */
UMC_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	socklen_t addrlen = umc_cm_addrlen(addr);

	if (!id || !addrlen)
		return umc_minus1_errno(-EINVAL);
	return cm_join(id, addr, addrlen, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

/**
 * rdma_leave_multicast - leave the most recent join of @addr on @id.
 *
 * The join is found by comparing the sockaddr byte for byte over its
 * family's length (port and padding included), newest first
 * (librdmacm's rdma_leave_multicast()).  Its queued, undelivered event is
 * discarded (leaving before the join completed cancels it), a full
 * member's IP membership is dropped, and the QP is detached once no other
 * join of the group on this id still uses the attachment (docs/design.md,
 * "Departures from Linux": librdmacm detaches on the first leave).  Never
 * blocks: an event of this join that the application still holds stays
 * valid until acked.
 *
 * Return: 0, or -1 with errno: EINVAL (NULL @id, NULL or unknown-family
 * @addr), EADDRNOTAVAIL (no join of @addr on @id), EIO (the parent's id in
 * a child of fork).  rdma_leave_multicast(3).
 */
UMC_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	socklen_t addrlen = umc_cm_addrlen(addr);
	struct umc_cm_event *discarded = NULL;
	struct umc_cm_mc **pp, *mc;
	struct umc_cm_id *idp;

	idp = umc_cm_id_lock(id, addrlen != 0);
	if (!idp)
		return -1;
	for (pp = &idp->mc_list; (mc = *pp); pp = &mc->next)
		if (!memcmp(&mc->addr, addr, addrlen))
			break;
	if (!mc) {
		umc_cm_id_unlock(idp);
		return umc_minus1_errno(-EADDRNOTAVAIL);
	}
	*pp = mc->next;
	__umc_cm_mc_leave(idp, mc, &discarded);
	umc_cm_id_unlock(idp);
	umc_cm_event_free_list(discarded);
	return 0;
}

/**
 * umc_cm_process_join - librdmacm's ucma_process_join at retrieval of a
 * MULTICAST_JOIN event: remember the MGID and MLID of the join, and attach
 * the id's QP unless the join is send-only, there is no QP, or the join was
 * left meanwhile.  A failed attach rewrites the event to MULTICAST_ERROR
 * with status -1 (the ud fields stay) and returns the errno in *@err
 * (librdmacm/cma.c ucma_process_join()).
 *
 * Return: 1 when the event must be dropped (id being destroyed), else 0.
 */
int umc_cm_process_join(struct umc_cm_event *evt, int *err)
{
	struct umc_cm_id *idp = evt->idp;
	struct umc_cm_mc *mc = evt->mc;
	const struct ibv_ah_attr *ah = &evt->ev.param.ud.ah_attr;
	int drop = 0, ret;

	__umc_cm_id_lock(idp);
	if (idp->state == UMC_CM_DESTROYING) {
		drop = 1;
		goto out;
	}
	if (!mc->left && memcmp(&mc->mgid, &ah->grh.dgid, sizeof(mc->mgid)))
		umc_cm_mc_stat(mc, 0); /* shown under another MGID until now (an SA-assigned one) */
	mc->mgid = ah->grh.dgid;
	mc->mlid = ah->dlid;
	mc->processed = true;
	if (!mc->left && !mc->attached && idp->id.qp &&
	    mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
		ret = __cm_attach_get(idp, &mc->mgid, mc->mlid);
		if (ret) {
			evt->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
			evt->ev.status = -1;
			*err = ret;
		} else {
			mc->attached = true;
		}
	}
	if (!mc->left)
		umc_cm_mc_stat(mc, evt->ev.event == RDMA_CM_EVENT_MULTICAST_JOIN ? UMC_STAT_JOINED
										: UMC_STAT_ERROR);
out:
	umc_cm_id_unlock(idp);
	return drop;
}
