/* SPDX-License-Identifier: MIT */
/*
 * qp.c - UD queue pairs: create, modify (the IBA state machine), query,
 * destroy, and the two post verbs.
 *
 * Only IBV_QPT_UD exists here: umcast is a multicast stack.  A send is
 * encoded and handed to the kernel inside ibv_post_send (batched with
 * sendmmsg by the link), so the send queue never holds work and a send
 * completion is generated as soon as the datagram is out.  Receive WQEs
 * wait in a ring until the progress engine (progress.c) fills them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "umc_int.h"

/* ------------------------------------------------------------------------- */
/* QP numbers.                                                               */

static pthread_mutex_t umc_qpn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t umc_qpn_once = PTHREAD_ONCE_INIT;
static uint32_t umc_qpn_next;

/* A forked child is another HCA: it numbers its QPs from its own pid. */
static void umc_qpn_forked(void)
{
	umc_qpn_next = 0;
}

static void umc_qpn_init(void)
{
	pthread_atfork(NULL, NULL, umc_qpn_forked);
}

/*
 * Each process is an HCA of its own, and QPNs travel in the DETH, so two
 * processes on one host should not pick the same ones: start at a
 * pid-derived base (or UMC_QPN_BASE from the environment, e.g. 0x11 to
 * number QPs as rxe does).
 */
static uint32_t umc_qpn_base(void)
{
	const char *env = getenv("UMC_QPN_BASE");

	if (env && *env)
		return (uint32_t)strtoul(env, NULL, 0) & 0xffffff;
	return UMC_QPN_FIRST + ((uint32_t)getpid() % 0x3fff) * UMC_QPN_STRIDE;
}

struct umc_qp *__umc_qp_by_num(struct umc_device *dev, uint32_t qpn)
{
	for (struct umc_qp *qp = dev->qp_list; qp; qp = qp->next)
		if (qp->ibqp.qp_num == qpn)
			return qp;
	return NULL;
}

/* QPNs are unique per device (HCA), as on hardware; caller holds dev->lock. */
static uint32_t __umc_qpn_alloc(struct umc_device *dev)
{
	uint32_t qpn;

	pthread_once(&umc_qpn_once, umc_qpn_init);
	pthread_mutex_lock(&umc_qpn_lock);
	if (!umc_qpn_next)
		umc_qpn_next = umc_qpn_base();
	do {
		qpn = umc_qpn_next;
		umc_qpn_next = (umc_qpn_next + 1) & 0xffffff;
		if (umc_qpn_next < UMC_QPN_FIRST || umc_qpn_next == UMC_MCAST_QPN)
			umc_qpn_next = UMC_QPN_FIRST;
	} while (qpn < UMC_QPN_FIRST || qpn == UMC_MCAST_QPN || __umc_qp_by_num(dev, qpn));
	pthread_mutex_unlock(&umc_qpn_lock);
	return qpn;
}

/* ------------------------------------------------------------------------- */
/* Create and destroy (ibv_create_qp(3), ibv_destroy_qp(3)).                  */

static int umc_qp_chk_init(struct ibv_context *ctx, const struct ibv_qp_init_attr_ex *a)
{
	const uint32_t known_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;

	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != ctx)
		return -EINVAL;
	if (a->comp_mask & ~known_mask)
		return -EOPNOTSUPP;
	if (a->qp_type != IBV_QPT_UD || a->srq)
		return -EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    (a->create_flags & ~(uint32_t)IBV_QP_CREATE_BLOCK_SELF_MCAST_LB))
		return -EOPNOTSUPP;
	if (!a->send_cq || !a->recv_cq || a->send_cq->context != ctx ||
	    a->recv_cq->context != ctx)
		return -EINVAL;
	if (a->cap.max_send_wr > UMC_MAX_QP_WR || a->cap.max_recv_wr > UMC_MAX_QP_WR ||
	    a->cap.max_send_sge > UMC_MAX_SGE || a->cap.max_recv_sge > UMC_MAX_SGE ||
	    a->cap.max_inline_data > UMC_MAX_INLINE_DATA)
		return -EINVAL;
	return 0;
}

static int umc_qp_rq_init(struct umc_qp *qp)
{
	uint32_t size = 1;

	while (size < qp->cap.max_recv_wr)
		size <<= 1;
	qp->rq_stride = sizeof(struct umc_rwqe) + qp->cap.max_recv_sge * sizeof(struct ibv_sge);
	qp->rq = calloc(size, qp->rq_stride);
	if (!qp->rq)
		return -ENOMEM;
	qp->rq_mask = size - 1;
	return 0;
}

/* Release a QP that is not (or no longer) on the device's list. */
static void umc_qp_free(struct umc_qp *qp)
{
	struct ibv_qp *ibqp = &qp->ibqp;

	qp->dev->link->qp_cleanup(qp);
	atomic_fetch_sub(&to_ucq(ibqp->send_cq)->usecnt, 1);
	atomic_fetch_sub(&to_ucq(ibqp->recv_cq)->usecnt, 1);
	umc_pd_put(ibqp->pd);
	pthread_spin_destroy(&qp->rq_lock);
	pthread_mutex_destroy(&qp->sq_lock);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	free(qp->rq);
	free(qp);
}

UMC_EXPORT struct ibv_qp *ibv_create_qp_ex(struct ibv_context *ctx,
					   struct ibv_qp_init_attr_ex *attr)
{
	struct umc_device *dev = ctx_dev(ctx);
	struct umc_qp *qp;
	int ret = umc_qp_chk_init(ctx, attr);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	qp = calloc(1, dev->link->qp_size);
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->dev = dev;
	qp->cap = attr->cap;
	if (!qp->cap.max_send_sge)
		qp->cap.max_send_sge = 1;
	if (!qp->cap.max_recv_sge)
		qp->cap.max_recv_sge = 1;
	qp->cap.max_inline_data = UMC_MAX_INLINE_DATA;
	qp->sq_sig_all = attr->sq_sig_all;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS)
		qp->create_flags = attr->create_flags;
	ret = umc_qp_rq_init(qp);
	if (ret) {
		free(qp);
		errno = -ret;
		return NULL;
	}
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&qp->sq_lock, NULL);

	struct ibv_qp *ib = &qp->ibqp;

	ib->context = ctx;
	ib->qp_context = attr->qp_context;
	ib->pd = attr->pd;
	ib->send_cq = attr->send_cq;
	ib->recv_cq = attr->recv_cq;
	ib->qp_type = IBV_QPT_UD;
	ib->state = IBV_QPS_RESET;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	atomic_fetch_add(&to_ucq(ib->send_cq)->usecnt, 1);
	atomic_fetch_add(&to_ucq(ib->recv_cq)->usecnt, 1);
	umc_pd_get(ib->pd);

	/* The receive engine walks qp_list: take its lock too. */
	pthread_mutex_lock(&dev->rx_lock);
	pthread_mutex_lock(&dev->lock);
	/* The link may find a number taken on the port: then try the next ones. */
	for (int tries = 0; tries < UMC_QPN_TRIES; tries++) {
		ib->qp_num = ib->handle = __umc_qpn_alloc(dev);
		ret = dev->link->qp_init(qp);
		if (ret != -EADDRINUSE)
			break;
	}
	if (!ret) {
		qp->next = dev->qp_list;
		dev->qp_list = qp;
		if (qp->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
			dev->block_self_qps++;
	}
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_unlock(&dev->rx_lock);
	if (ret) {
		umc_qp_free(qp);
		errno = -ret;
		return NULL;
	}
	attr->cap = qp->cap;
	return ib;
}

UMC_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	qp = ibv_create_qp_ex(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

/*
 * ibv_destroy_qp(3): EBUSY while the QP is attached to a multicast group
 * (as rxe; rdma_destroy_qp detaches first).
 */
UMC_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct umc_qp *qp = to_uqp(ibqp);
	struct umc_device *dev = qp->dev;

	pthread_mutex_lock(&dev->rx_lock);
	pthread_mutex_lock(&dev->lock);
	if (qp->attached) {
		pthread_mutex_unlock(&dev->lock);
		pthread_mutex_unlock(&dev->rx_lock);
		return EBUSY;
	}
	for (struct umc_qp **p = &dev->qp_list; *p; p = &(*p)->next) {
		if (*p == qp) {
			*p = qp->next;
			break;
		}
	}
	if (qp->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
		dev->block_self_qps--;
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_unlock(&dev->rx_lock);

	umc_qp_free(qp);
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The UD state machine (IBA 10.3.1, Table 91 "QP state transition          */
/* properties" for UD; ibv_modify_qp(3)).                                    */

enum {
	UD_INIT_ATTRS = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
};

struct umc_qp_transition {
	bool valid;
	int required; /* besides IBV_QP_STATE */
	int optional;
};

#define UMC_QPS_N (IBV_QPS_ERR + 1)

static const struct umc_qp_transition umc_ud_transitions[UMC_QPS_N][UMC_QPS_N] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = {true, 0, 0},
		[IBV_QPS_INIT] = {true, UD_INIT_ATTRS, 0},
		[IBV_QPS_ERR] = {true, 0, 0},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = {true, 0, 0},
		[IBV_QPS_INIT] = {true, 0, UD_INIT_ATTRS},
		[IBV_QPS_RTR] = {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
		[IBV_QPS_ERR] = {true, 0, 0},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = {true, 0, 0},
		[IBV_QPS_RTS] = {true, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
		[IBV_QPS_ERR] = {true, 0, 0},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = {true, 0, 0},
		[IBV_QPS_RTS] = {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
		[IBV_QPS_ERR] = {true, 0, 0},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = {true, 0, 0},
		[IBV_QPS_RTS] = {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
		[IBV_QPS_ERR] = {true, 0, 0},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = {true, 0, 0},
		[IBV_QPS_RTS] = {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
		[IBV_QPS_ERR] = {true, 0, 0},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = {true, 0, 0},
		[IBV_QPS_ERR] = {true, 0, 0},
	},
};

/* Complete every posted receive with IBV_WC_WR_FLUSH_ERR; caller holds rq_lock. */
static void __umc_qp_flush_rq(struct umc_qp *qp)
{
	struct umc_cq *cq = to_ucq(qp->ibqp.recv_cq);

	while (qp->rq_head != qp->rq_tail) {
		struct umc_rwqe *w =
			(struct umc_rwqe *)(qp->rq + (qp->rq_head++ & qp->rq_mask) * qp->rq_stride);
		struct ibv_wc wc = {
			.wr_id = w->wr_id,
			.status = IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
			.qp_num = qp->ibqp.qp_num,
		};

		umc_cq_push(cq, &wc, false);
	}
}

/* Move @qp to the error state and flush its receives; caller holds rq_lock. */
void __umc_qp_to_err(struct umc_qp *qp)
{
	qp->ibqp.state = IBV_QPS_ERR;
	__umc_qp_flush_rq(qp);
}

static int umc_qp_chk_attr(struct umc_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state cur = qp->ibqp.state, next = cur;
	const struct umc_qp_transition *t;

	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur)
		return -EINVAL;
	if (mask & IBV_QP_STATE) {
		if ((unsigned)attr->qp_state >= UMC_QPS_N)
			return -EINVAL;
		next = attr->qp_state;
	}
	t = &umc_ud_transitions[cur][next];
	mask &= ~IBV_QP_STATE;
	if (!t->valid || (mask & t->required) != t->required ||
	    (mask & ~(t->required | t->optional)))
		return -EINVAL;
	if ((mask & IBV_QP_PORT) && attr->port_num != UMC_PORT_NUM)
		return -EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index >= UMC_MAX_PKEYS)
		return -EINVAL;
	return 0;
}

/*
 * ibv_modify_qp(3): EINVAL for a transition UD does not have, a missing
 * required attribute or an attribute the transition does not take
 * (IBA 10.3.1), a bad port or P_Key index.
 */
UMC_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct umc_qp *qp = to_uqp(ibqp);
	int ret;

	pthread_mutex_lock(&qp->sq_lock);
	pthread_spin_lock(&qp->rq_lock);
	ret = umc_qp_chk_attr(qp, attr, attr_mask);
	if (ret)
		goto out;
	if (attr_mask & IBV_QP_QKEY)
		qp->qkey = attr->qkey;
	if (attr_mask & IBV_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if (attr_mask & IBV_QP_PORT)
		qp->port_num = attr->port_num;
	if (attr_mask & IBV_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn & 0xffffff;
	if (attr_mask & IBV_QP_STATE) {
		if (attr->qp_state == IBV_QPS_ERR) {
			__umc_qp_to_err(qp);
		} else {
			if (attr->qp_state == IBV_QPS_RESET)
				qp->rq_head = qp->rq_tail; /* discarded, no completions */
			ibqp->state = attr->qp_state;
		}
	}
out:
	pthread_spin_unlock(&qp->rq_lock);
	pthread_mutex_unlock(&qp->sq_lock);
	return -ret;
}

UMC_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
			    struct ibv_qp_init_attr *init_attr)
{
	struct umc_qp *qp = to_uqp(ibqp);

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = attr->cur_qp_state = ibqp->state;
	attr->qkey = qp->qkey;
	attr->pkey_index = qp->pkey_index;
	attr->port_num = qp->port_num;
	attr->sq_psn = qp->sq_psn;
	attr->path_mtu = qp->dev->active_mtu;
	attr->cap = qp->cap;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->cap = qp->cap;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Posting (ibv_post_recv(3), ibv_post_send(3)).                             */

static bool umc_sges_ok(struct ibv_pd *pd, const struct ibv_sge *sge, int n, int access,
			uint64_t *total)
{
	uint64_t len = 0;

	for (int i = 0; i < n; i++) {
		if (!umc_mr_check(pd, sge[i].lkey, sge[i].addr, sge[i].length, access))
			return false;
		len += sge[i].length;
	}
	*total = len;
	return true;
}

/*
 * ibv_post_recv: EINVAL for a QP in RESET, more SGEs than max_recv_sge, or
 * an SGE outside a local-write MR of the QP's PD; ENOMEM when the receive
 * queue is full.  *bad_wr is the first WR not posted.
 */
int umc_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct umc_qp *qp = to_uqp(ibqp);
	uint64_t total;
	int ret = 0;

	pthread_spin_lock(&qp->rq_lock);
	for (; wr; wr = wr->next) {
		if (umc_unlikely(ibqp->state == IBV_QPS_RESET || wr->num_sge < 0 ||
				 (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
				 !umc_sges_ok(ibqp->pd, wr->sg_list, wr->num_sge,
					      IBV_ACCESS_LOCAL_WRITE, &total))) {
			ret = EINVAL;
			break;
		}
		if (umc_unlikely(qp->rq_tail - qp->rq_head > qp->rq_mask ||
				 qp->rq_tail - qp->rq_head >= qp->cap.max_recv_wr)) {
			ret = ENOMEM;
			break;
		}
		struct umc_rwqe *w =
			(struct umc_rwqe *)(qp->rq + (qp->rq_tail++ & qp->rq_mask) * qp->rq_stride);

		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
	}
	if (umc_unlikely(ibqp->state == IBV_QPS_ERR))
		__umc_qp_flush_rq(qp);
	pthread_spin_unlock(&qp->rq_lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

static int umc_chk_send_wr(struct umc_qp *qp, const struct ibv_send_wr *wr, uint64_t *len)
{
	if (umc_unlikely(wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM))
		return EINVAL;
	if (umc_unlikely(!wr->wr.ud.ah || wr->wr.ud.ah->pd != qp->ibqp.pd || wr->num_sge < 0 ||
			 (uint32_t)wr->num_sge > qp->cap.max_send_sge))
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint64_t total = 0;

		for (int i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > qp->cap.max_inline_data)
			return EINVAL;
		*len = total;
		return 0;
	}
	if (!umc_sges_ok(qp->ibqp.pd, wr->sg_list, wr->num_sge, 0, len))
		return EINVAL;
	return 0;
}

static void umc_send_complete(struct umc_qp *qp, struct ibv_send_wr **wrs, int n)
{
	struct umc_cq *cq = to_ucq(qp->ibqp.send_cq);

	for (int i = 0; i < n; i++) {
		if (!qp->sq_sig_all && !(wrs[i]->send_flags & IBV_SEND_SIGNALED))
			continue;
		struct ibv_wc wc = {
			.wr_id = wrs[i]->wr_id,
			.status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_SEND,
			.qp_num = qp->ibqp.qp_num,
		};

		umc_cq_push(cq, &wc, false);
	}
}

/*
 * ibv_post_send: UD SEND and SEND_WITH_IMM.  EINVAL for a QP not in RTS,
 * another opcode, no AH or an AH of another PD, too many SGEs, inline data
 * above max_inline_data, or an SGE outside an MR of the QP's PD.  A message
 * longer than the path MTU is completed successfully and not sent, with its
 * PSN consumed (IBA C10-93.1.1; rxe does the same).  A Q_Key with the high
 * bit set is replaced by the QP's own (IBA 10.2.4.3).
 */
int umc_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct umc_qp *qp = to_uqp(ibqp);
	struct umc_device *dev = qp->dev;
	const uint64_t mtu = 128u << dev->active_mtu;
	struct umc_tx_pkt pkts[UMC_TX_BATCH];
	struct ibv_send_wr *done[UMC_TX_BATCH];
	int n = 0, ndone = 0, ret = 0;
	uint64_t len;

	pthread_mutex_lock(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		if (umc_unlikely(ibqp->state != IBV_QPS_RTS)) {
			ret = EINVAL;
			break;
		}
		ret = umc_chk_send_wr(qp, wr, &len);
		if (umc_unlikely(ret))
			break;
		uint32_t psn = qp->sq_psn;

		qp->sq_psn = (psn + 1) & 0xffffff;
		if (umc_unlikely(len > mtu)) {
			atomic_fetch_add_explicit(&dev->cnt.tx_too_long, 1, memory_order_relaxed);
		} else {
			struct umc_tx_pkt *p = &pkts[n++];
			uint32_t qkey = wr->wr.ud.remote_qkey;

			p->ah = to_uah(wr->wr.ud.ah);
			p->sge = wr->sg_list;
			p->num_sge = wr->num_sge;
			p->len = (uint32_t)len;
			p->hdr = (struct umc_ud_hdr){
				.bth = {
					.opcode = wr->opcode == IBV_WR_SEND_WITH_IMM
							  ? UMC_OP_UD_SEND_ONLY_IMM
							  : UMC_OP_UD_SEND_ONLY,
					.se = !!(wr->send_flags & IBV_SEND_SOLICITED),
					.pad_cnt = umc_ud_pad(len),
					.pkey = dev->pkeys[qp->pkey_index],
					.dest_qpn = wr->wr.ud.remote_qpn & 0xffffff,
					.psn = psn,
				},
				.deth = {
					.qkey = (qkey & 0x80000000u) ? qp->qkey : qkey,
					.src_qpn = ibqp->qp_num,
				},
				.imm_be = wr->imm_data,
			};
		}
		done[ndone++] = wr;
		if (ndone == UMC_TX_BATCH) {
			if (n)
				dev->link->xmit(qp, pkts, n);
			umc_send_complete(qp, done, ndone);
			n = ndone = 0;
		}
	}
	if (n)
		dev->link->xmit(qp, pkts, n);
	umc_send_complete(qp, done, ndone);
	pthread_mutex_unlock(&qp->sq_lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}
