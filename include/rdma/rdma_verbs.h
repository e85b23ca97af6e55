/* SPDX-License-Identifier: MIT */
/*
 * <rdma/rdma_verbs.h> - convenience wrappers that post and complete work on
 * the QP and CQs of an rdma_cm_id, source-compatible with rdma-core's
 * librdmacm header of the same name (the subset that makes sense for UD:
 * no RDMA read/write, no SRQ).
 *
 * Everything here is static inline on top of <infiniband/verbs.h>.  Error
 * convention: 0 (or a count) on success, -1 with errno set on failure.
 */
#ifndef RDMA_VERBS_H
#define RDMA_VERBS_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * rdma_seterrno - turn a verbs result (0 or a positive errno value) into the
 * rdma_* convention: 0, or -1 with errno set to that value.
 */
static inline int rdma_seterrno(int ret)
{
	if (ret == 0)
		return 0;
	errno = ret;
	return -1;
}

/*
 * rdma_reg_msgs - register [@addr, @addr + @length) for sends and receives
 * (IBV_ACCESS_LOCAL_WRITE) on the id's PD.
 * Returns the MR, or NULL with errno set, as ibv_reg_mr().  rdma_reg_msgs(3)
 */
static inline struct ibv_mr *rdma_reg_msgs(struct rdma_cm_id *id, void *addr, size_t length)
{
	return ibv_reg_mr(id->pd, addr, length, IBV_ACCESS_LOCAL_WRITE);
}

/*
 * rdma_dereg_mr - release an MR from rdma_reg_msgs().
 * Returns 0, or -1 with errno set.  rdma_dereg_mr(3)
 */
static inline int rdma_dereg_mr(struct ibv_mr *mr)
{
	return rdma_seterrno(ibv_dereg_mr(mr));
}

/*
 * rdma_post_recvv - post one receive of @nsge scatter elements @sgl on the
 * id's QP; @context comes back as the completion's wr_id.  UD buffers need
 * 40 leading bytes for the GRH.
 * Returns 0, or -1 with errno set (EOPNOTSUPP: the id has an SRQ; otherwise
 * as ibv_post_recv()).  rdma_post_recvv(3)
 */
static inline int rdma_post_recvv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
				  int nsge)
{
	struct ibv_recv_wr wr, *bad;

	if (id->srq) {
		errno = EOPNOTSUPP;
		return -1;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)(uintptr_t)context;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	return rdma_seterrno(ibv_post_recv(id->qp, &wr, &bad));
}

/*
 * rdma_post_recv - post a receive of the @length bytes at @addr, which lie
 * inside @mr; @context comes back as wr_id.
 * Returns 0, or -1 with errno set (EINVAL: buffer outside @mr; otherwise as
 * rdma_post_recvv()).  rdma_post_recv(3)
 */
static inline int rdma_post_recv(struct rdma_cm_id *id, void *context, void *addr, size_t length,
				 struct ibv_mr *mr)
{
	struct ibv_sge sge;
	uintptr_t start = (uintptr_t)addr, mr_start = (uintptr_t)mr->addr;

	if (start < mr_start || length > mr->length || start - mr_start > mr->length - length) {
		errno = EINVAL;
		return -1;
	}
	sge.addr = (uint64_t)start;
	sge.length = (uint32_t)length;
	sge.lkey = mr->lkey;
	return rdma_post_recvv(id, context, &sge, 1);
}

/*
 * rdma_post_sendv - post one IBV_WR_SEND of @nsge gather elements @sgl with
 * send flags @flags (enum ibv_send_flags) on the id's QP; @context comes
 * back as wr_id.  Not usable on UD QPs, which need an address handle (use
 * rdma_post_ud_send()).
 * Returns 0, or -1 with errno set, as ibv_post_send().  rdma_post_sendv(3)
 */
static inline int rdma_post_sendv(struct rdma_cm_id *id, void *context, struct ibv_sge *sgl,
				  int nsge, int flags)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)(uintptr_t)context;
	wr.sg_list = sgl;
	wr.num_sge = nsge;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = (unsigned int)flags;
	return rdma_seterrno(ibv_post_send(id->qp, &wr, &bad));
}

/*
 * rdma_post_ud_send - send the @length bytes at @addr (registered in @mr,
 * which may be NULL with IBV_SEND_INLINE) as one datagram to @ah and QP
 * @remote_qpn (0xFFFFFF for a multicast group), Q_Key RDMA_UDP_QKEY, with
 * send flags @flags; @context comes back as wr_id.
 * Returns 0, or -1 with errno set, as ibv_post_send().  rdma_post_ud_send(3)
 */
static inline int rdma_post_ud_send(struct rdma_cm_id *id, void *context, void *addr,
				    size_t length, struct ibv_mr *mr, int flags, struct ibv_ah *ah,
				    uint32_t remote_qpn)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;

	sge.addr = (uint64_t)(uintptr_t)addr;
	sge.length = (uint32_t)length;
	sge.lkey = mr ? mr->lkey : 0;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)(uintptr_t)context;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = (unsigned int)flags;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = remote_qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	return rdma_seterrno(ibv_post_send(id->qp, &wr, &bad));
}

/*
 * Shared body of rdma_get_send_comp() / rdma_get_recv_comp(): poll @cq for
 * one completion; if there is none, arm it, poll again (a completion may
 * have raced the arming), then sleep on @channel for the event, ack it and
 * start over.  Returns 1, or -1 with errno set.
 */
static inline int umc_rdma_get_comp(struct ibv_cq *cq, struct ibv_comp_channel *channel,
				    struct ibv_wc *wc)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int ret;

	if (!cq || !channel) {
		errno = EINVAL; /* only for CQs the CM created (rdma_create_qp) */
		return -1;
	}
	for (;;) {
		ret = ibv_poll_cq(cq, 1, wc);
		if (ret)
			break;
		ret = ibv_req_notify_cq(cq, 0);
		if (ret)
			return rdma_seterrno(ret);
		ret = ibv_poll_cq(cq, 1, wc);
		if (ret)
			break;
		if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
			return -1; /* errno set by ibv_get_cq_event() */
		ibv_ack_cq_events(ev_cq, 1);
	}
	if (ret < 0) {
		errno = -ret;
		return -1;
	}
	return ret;
}

/*
 * rdma_get_send_comp - wait for and return in @wc the next completion of the
 * id's send CQ (the CQ the CM created; it must not be shared).  A failed
 * work request is still a completion: check wc->status.
 * Returns the number of completions (1), or -1 with errno set (EINVAL: the
 * id has no CM-created send CQ; EINTR; others from the CQ).
 * rdma_get_send_comp(3)
 */
static inline int rdma_get_send_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	return umc_rdma_get_comp(id->send_cq, id->send_cq_channel, wc);
}

/*
 * rdma_get_recv_comp - wait for and return in @wc the next completion of the
 * id's receive CQ, as rdma_get_send_comp().  rdma_get_recv_comp(3)
 */
static inline int rdma_get_recv_comp(struct rdma_cm_id *id, struct ibv_wc *wc)
{
	return umc_rdma_get_comp(id->recv_cq, id->recv_cq_channel, wc);
}

#ifdef __cplusplus
}
#endif

#endif /* RDMA_VERBS_H */
