/* SPDX-License-Identifier: MIT */
/*
 * qp.c - rdma_create_qp(_ex) and rdma_destroy_qp (librdmacm/cma.c
 * rdma_create_qp_ex(), ucma_init_ud_qp(), rdma_destroy_qp()).
 *
 * The CM creates the QP on the id's device, with the device's default PD
 * unless given one, and completion channels plus CQs when the caller gives
 * none (cq_context = the id).  A UD QP is brought RESET -> INIT (the id's
 * Q_Key, P_Key index 0, port 1) -> RTR -> RTS (SQ PSN 0), so it can post
 * receives and sends at once.
 */
#include <errno.h>
#include <string.h>

#include "cm/cm_int.h"

/*
 * Destroy a CQ and/or channel the CM made.  A CQ whose events the
 * application has not all acked goes (with its channel) when the last one
 * is acked: ibv_destroy_cq would be EBUSY now (umc_cq_release).
 */
static void cm_destroy_cq(struct ibv_cq *cq, bool own_cq, struct ibv_comp_channel *ch, bool own_ch)
{
	if (own_cq)
		umc_cq_release(cq, own_ch ? ch : NULL);
	else if (own_ch)
		(void)ibv_destroy_comp_channel(ch);
}

/* Destroy the CQs and channels the CM made for @id (ucma_destroy_cqs). */
static void cm_destroy_cqs(struct umc_cm_id *idp)
{
	struct rdma_cm_id *id = &idp->id;

	cm_destroy_cq(id->recv_cq, idp->own_recv_cq, id->recv_cq_channel, idp->own_recv_ch);
	if (idp->own_recv_cq)
		id->recv_cq = NULL;
	if (idp->own_recv_ch)
		id->recv_cq_channel = NULL;
	idp->own_recv_cq = idp->own_recv_ch = false;
	cm_destroy_cq(id->send_cq, idp->own_send_cq, id->send_cq_channel, idp->own_send_ch);
	if (idp->own_send_cq)
		id->send_cq = NULL;
	if (idp->own_send_ch)
		id->send_cq_channel = NULL;
	idp->own_send_cq = idp->own_send_ch = false;
}

/* A completion channel and a CQ of @size entries (ucma_create_cqs).
 * Returns 0 or a positive errno. */
static int cm_create_cq(struct umc_cm_id *idp, uint32_t size, bool recv)
{
	struct rdma_cm_id *id = &idp->id;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;

	ch = ibv_create_comp_channel(id->verbs);
	if (!ch)
		return errno ? errno : ENOMEM;
	cq = ibv_create_cq(id->verbs, (int)size, id, ch, 0);
	if (!cq) {
		int err = errno ? errno : ENOMEM;

		(void)ibv_destroy_comp_channel(ch);
		return err;
	}
	if (recv) {
		id->recv_cq_channel = ch;
		id->recv_cq = cq;
		idp->own_recv_ch = idp->own_recv_cq = true;
	} else {
		id->send_cq_channel = ch;
		id->send_cq = cq;
		idp->own_send_ch = idp->own_send_cq = true;
	}
	return 0;
}

/*
 * ucma_init_ud_qp (ABI 4: the attributes rdma_init_qp_attr would return).
 * Caller holds idp->lock.  Returns 0 or a positive errno.
 */
static int __cm_init_ud_qp(struct umc_cm_id *idp, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int ret;

	if (!idp->qkey) {
		ret = idp->jops->default_qkey(idp, &idp->qkey);
		if (ret)
			return -ret;
	}
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.qkey = idp->qkey;
	attr.pkey_index = 0;
	attr.port_num = idp->id.port_num;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* ucma_init_conn_qp: a connected QP only reaches INIT until it connects. */
static int cm_init_conn_qp(struct umc_cm_id *idp, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = idp->id.port_num;
	attr.qp_access_flags = 0;
	return ibv_modify_qp(qp, &attr,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/**
 * rdma_create_qp_ex - create the id's QP.
 * @id:   an id bound to a device.
 * @attr: as ibv_create_qp_ex(3).  Without IBV_QP_INIT_ATTR_PD or with a
 *        NULL pd, the device's default PD (id->pd) is used and written
 *        back.  A NULL send_cq / recv_cq makes the CM create a completion
 *        channel and a CQ of cap.max_send_wr / cap.max_recv_wr entries
 *        with cq_context = @id, kept in id->send_cq(_channel) /
 *        id->recv_cq(_channel) and destroyed by rdma_destroy_qp().  The
 *        caps actually granted are written back.
 *
 * A UD QP is returned in RTS with the id's Q_Key (RDMA_UDP_QKEY for
 * RDMA_PS_UDP); an RC QP in INIT.
 *
 * Return: 0 and id->qp set, or -1 with errno: EINVAL (NULL argument, the id
 * already has a QP, the id has no device, the PD belongs to another
 * device, CQs that differ from the id's own), ENODEV (RDMA_PS_IPOIB on
 * RoCE: no IPoIB broadcast group gives the Q_Key, as the kernel), or the
 * error of ibv_create_comp_channel, ibv_create_cq, ibv_create_qp_ex or
 * ibv_modify_qp; EIO for the parent's id in a child of fork.
 * rdma_create_qp(3).
 */
UMC_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct umc_cm_id *idp;
	struct ibv_qp *qp;
	int ret = 0;

	idp = umc_cm_id_lock(id, attr != NULL);
	if (!idp)
		return -1;
	if (id->qp || !id->verbs) {
		ret = EINVAL;
		goto out;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		ret = EINVAL;
		goto out;
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq)) {
		ret = EINVAL;
		goto out;
	}
	if (!attr->recv_cq && !id->recv_cq && attr->cap.max_recv_wr)
		ret = cm_create_cq(idp, attr->cap.max_recv_wr, true);
	if (!ret && !attr->send_cq && !id->send_cq && attr->cap.max_send_wr)
		ret = cm_create_cq(idp, attr->cap.max_send_wr, false);
	if (ret)
		goto err;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;

	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = errno ? errno : ENOMEM;
		goto err;
	}
	if (id->qp_type == IBV_QPT_UD)
		ret = __cm_init_ud_qp(idp, qp);
	else
		ret = cm_init_conn_qp(idp, qp);
	if (ret) {
		(void)ibv_destroy_qp(qp);
		goto err;
	}
	id->pd = qp->pd;
	id->qp = qp;
	goto out;
err:
	cm_destroy_cqs(idp);
out:
	umc_cm_id_unlock(idp);
	if (ret)
		return umc_minus1_errno(-ret);
	return 0;
}

/**
 * rdma_create_qp - create the id's QP from an ibv_qp_init_attr: as
 * rdma_create_qp_ex() with @pd (NULL: the device's default PD).  The
 * attributes actually used (caps, CQs) are copied back into @qp_init_attr.
 *
 * Return: 0, or -1 with errno as rdma_create_qp_ex().  rdma_create_qp(3).
 */
UMC_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr_ex;
	int ret;

	if (!id || !qp_init_attr)
		return umc_minus1_errno(-EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, qp_init_attr, sizeof(*qp_init_attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &attr_ex);
	memcpy(qp_init_attr, &attr_ex, sizeof(*qp_init_attr));
	return ret;
}

/**
 * rdma_destroy_qp - destroy the id's QP and the CQs and completion
 * channels rdma_create_qp() made for it.  A CM-made CQ with a CQ event the
 * application has not acked yet is destroyed, with its channel, by the
 * ibv_ack_cq_events() that acks the last one (librdmacm's ibv_destroy_cq
 * would wait for it).
 *
 * Unlike librdmacm, the QP is first detached from every group it is
 * attached to, by the CM or by the application (docs/design.md, "Departures
 * from Linux": librdmacm's rdma_destroy_qp() ignores the EBUSY that
 * ibv_destroy_qp() gives for a QP still attached, and the QP leaks); the
 * joins themselves stay
 * until left.  In a child of fork, the parent's id is left alone.
 * rdma_destroy_qp(3).
 */
UMC_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct umc_cm_id *idp;

	if (!id || umc_forked(to_cmid(id)->gen))
		return;
	idp = to_cmid(id);
	__umc_cm_id_lock(idp);
	if (id->qp) {
		__umc_cm_detach_all(idp);
		umc_qp_detach_all(to_uqp(id->qp));
		(void)ibv_destroy_qp(id->qp);
		id->qp = NULL;
	}
	cm_destroy_cqs(idp);
	umc_cm_id_unlock(idp);
}
