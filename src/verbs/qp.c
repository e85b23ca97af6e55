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
 *
 * Queue depths are still those of a NIC, as mlx5 keeps them: a WQE holds
 * its slot until ibv_poll_cq reaps its completion (an unsignaled send WQE
 * until a later signaled completion of the same QP is reaped), and a WR
 * that finds its queue full gets ENOMEM, as on mlx5 and rxe (struct
 * umc_qp).  So a CQ of max_send_wr + max_recv_wr entries never overflows
 * (rxe frees a send slot when it generates the completion instead, so a
 * CQ there can overflow).  The depth granted is exactly the
 * depth asked for, and is what ibv_create_qp and ibv_query_qp report: IBA
 * allows a CI to grant more (rxe rounds a depth up to 2^n - 1, mlx5 to a
 * power of two), but with no hardware ring to fill there is no reason to,
 * and a CQ the CM sizes from the request then always fits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault/stage.h"
#include "stat/objects.h"
#include "verbs/verbs_int.h"

/* ------------------------------------------------------------------------- */
/* QP numbers.                                                               */

static pthread_mutex_t umc_qpn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t umc_qpn_next;

/* A forked child is another HCA: it numbers its QPs from its own pid. */
static void umc_qpn_forked(void)
{
	umc_qpn_next = 0;
}

UMC_ATFORK_MUTEX(umc_qpn_lock, UMC_LOCK_QPN, umc_qpn_forked)

/*
 * Each process is an HCA of its own, and QPNs travel in the DETH, so two
 * processes on one host should not pick the same ones.  The link refuses a
 * number another process holds (RoCE: link/roce/uc/qpn.c) and the next one is
 * tried; starting at a pid-derived base makes that rare (UMC_QPN_BASE from
 * the environment, e.g. 0x11, numbers QPs as rxe does).
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

	umc_mutex_lock(&umc_qpn_lock, UMC_LOCK_QPN);
	if (!umc_qpn_next)
		umc_qpn_next = umc_qpn_base();
	do {
		qpn = umc_qpn_next;
		umc_qpn_next = (umc_qpn_next + 1) & 0xffffff;
		if (umc_qpn_next < UMC_QPN_FIRST || umc_qpn_next == UMC_MCAST_QPN)
			umc_qpn_next = UMC_QPN_FIRST;
	} while (qpn < UMC_QPN_FIRST || qpn == UMC_MCAST_QPN || __umc_qp_by_num(dev, qpn));
	umc_mutex_unlock(&umc_qpn_lock);
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
	int cs = umc_cancel_off(); /* the link may wait with its locks held */

	qp->dev->link->qp_cleanup(qp);
	umc_cancel_restore(cs);
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

struct ibv_qp *umc_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct umc_device *dev = ctx_dev(ctx);
	struct umc_qp *qp;
	int ret = umc_dev_forked(dev) ? -EIO : umc_qp_chk_init(ctx, attr), cs;

	if (ret)
		return umc_null_errno(ret);
	qp = calloc(1, dev->link->qp_size);
	if (!qp)
		return umc_null_errno(-ENOMEM);
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
		return umc_null_errno(ret);
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
	cs = umc_cancel_off(); /* the link may wait with these held (thread.c) */
	umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
	/* The link may find a number another process holds: then try the next ones. */
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
	umc_mutex_unlock(&dev->lock);
	umc_mutex_unlock(&dev->rx_lock);
	umc_cancel_restore(cs);
	if (ret) {
		umc_qp_free(qp);
		return umc_null_errno(ret);
	}
	attr->cap = qp->cap;
	umc_stat_qp_add(qp);
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

	if (!pd)
		return umc_null_errno(-EINVAL);
	qp = umc_create_qp_ex(pd->context, &ex);
	if (qp)
		attr->cap = ex.cap;
	return qp;
}

/*
 * ibv_destroy_qp(3): EBUSY while the QP is attached to a multicast group
 * (as rxe; rdma_destroy_qp detaches first).  Its completions still in a CQ
 * stay there (as rxe) and free nothing when reaped.
 */
UMC_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct umc_qp *qp = to_uqp(ibqp);
	struct umc_device *dev = qp->dev;

	if (umc_dev_forked(dev))
		return umc_pos_errno(-EIO);
	umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	umc_mutex_lock(&dev->lock, UMC_LOCK_DEV);
	if (qp->attached) {
		umc_mutex_unlock(&dev->lock);
		umc_mutex_unlock(&dev->rx_lock);
		return umc_pos_errno(-EBUSY);
	}
	for (struct umc_qp **p = &dev->qp_list; *p; p = &(*p)->next) {
		if (*p == qp) {
			*p = qp->next;
			break;
		}
	}
	if (qp->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
		dev->block_self_qps--;
	umc_fault_qp_gone(qp); /* what it held back goes with it */
	umc_mutex_unlock(&dev->lock);
	umc_mutex_unlock(&dev->rx_lock);
	umc_stat_qp_del(qp);

	/* Off the list: the receive engine cannot reach the QP any more. */
	umc_cq_forget(to_ucq(ibqp->send_cq), &qp->sq_held);
	umc_cq_forget(to_ucq(ibqp->recv_cq), &qp->rq_held);
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

/*
 * Complete every posted receive with IBV_WC_WR_FLUSH_ERR; caller holds
 * rq_lock.  While receives are lent for a burst (rq_lent) the flush waits
 * for its end (umc_qp_rx_unlend): the kernel may be writing into them.
 */
static void __umc_qp_flush_rq(struct umc_qp *qp)
{
	struct umc_cq *cq = to_ucq(qp->ibqp.recv_cq);

	if (umc_unlikely(qp->rq_lent)) {
		qp->rq_flush_deferred = true;
		return;
	}

	while (qp->rq_head != qp->rq_tail) {
		struct umc_rwqe *w = umc_rwqe_at(qp, qp->rq_head++);
		struct ibv_wc wc = {
			.wr_id = w->wr_id,
			.status = IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
			.qp_num = qp->ibqp.qp_num,
		};

		umc_cq_push(cq, &wc, false, &qp->rq_held, 1);
	}
}

/* Move @qp to the error state and flush its receives; caller holds rq_lock. */
void __umc_qp_to_err(struct umc_qp *qp)
{
	umc_qp_set_state(qp, IBV_QPS_ERR);
	__umc_qp_flush_rq(qp);
}

UMC_HOT
void umc_qp_rx_unlend(struct umc_qp *qp)
{
	umc_spin_lock(&qp->rq_lock, UMC_LOCK_QP_RQ);
	qp->rq_lent = false;
	if (umc_unlikely(qp->rq_flush_deferred)) {
		qp->rq_flush_deferred = false;
		/* Still in the error state: a RESET waits for the burst (rx_lock). */
		__umc_qp_flush_rq(qp);
	}
	umc_spin_unlock(&qp->rq_lock);
}

/*
 * RESET empties both work queues (IBA 10.3.1): posted receives are
 * discarded without completions, and completions already in the CQs no
 * longer hold slots.  Caller holds sq_lock and rq_lock.
 */
static void __umc_qp_reset_queues(struct umc_qp *qp)
{
	qp->rq_head = qp->rq_tail;
	qp->sq_unsig = 0;
	umc_cq_forget(to_ucq(qp->ibqp.send_cq), &qp->sq_held);
	umc_cq_forget(to_ucq(qp->ibqp.recv_cq), &qp->rq_held);
}

static int umc_qp_chk_attr(struct umc_qp *qp, const struct ibv_qp_attr *attr, int mask)
{
	enum ibv_qp_state cur = umc_qp_state(qp), next = cur;
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
 * (IBA 10.3.1), a bad port or P_Key index.  The Q_Key is stored before the
 * state is published (release), so the receive path, which reads both
 * without a lock, never sees the new state with the old Q_Key.
 */
UMC_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct umc_qp *qp = to_uqp(ibqp);
	/*
	 * RESET discards the posted receives without completions: not while
	 * the receive engine may have them lent (a flush waits by itself).
	 */
	bool reset = (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET;
	int ret;

	if (umc_dev_forked(qp->dev))
		return umc_pos_errno(-EIO);
	if (reset)
		umc_mutex_lock(&qp->dev->rx_lock, UMC_LOCK_DEV_RX);
	umc_mutex_lock(&qp->sq_lock, UMC_LOCK_QP_SQ);
	umc_spin_lock(&qp->rq_lock, UMC_LOCK_QP_RQ);
	ret = umc_qp_chk_attr(qp, attr, attr_mask);
	if (ret)
		goto out;
	if (attr_mask & IBV_QP_QKEY)
		atomic_store_explicit(&qp->qkey, attr->qkey, memory_order_relaxed);
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
				__umc_qp_reset_queues(qp);
			umc_qp_set_state(qp, attr->qp_state);
		}
	}
out:
	umc_spin_unlock(&qp->rq_lock);
	umc_mutex_unlock(&qp->sq_lock);
	if (reset)
		umc_mutex_unlock(&qp->dev->rx_lock);
	if (!ret)
		umc_stat_qp_set(qp);
	return umc_pos_errno(ret);
}

UMC_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
			    struct ibv_qp_init_attr *init_attr)
{
	struct umc_qp *qp = to_uqp(ibqp);

	if (umc_dev_forked(qp->dev))
		return umc_pos_errno(-EIO);
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = attr->cur_qp_state = umc_qp_state(qp);
	attr->qkey = atomic_load_explicit(&qp->qkey, memory_order_relaxed);
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
 * queue is full (max_recv_wr WQEs posted whose completions are not reaped
 * yet).  *bad_wr is the first WR not posted.  In the error state the WRs
 * are accepted and flushed at once.
 */
UMC_HOT
int umc_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct umc_qp *qp = to_uqp(ibqp);
	enum ibv_qp_state state;
	uint64_t total;
	int ret = 0;

	umc_spin_lock(&qp->rq_lock, UMC_LOCK_QP_RQ);
	state = umc_qp_state(qp);
	for (; wr; wr = wr->next) {
		if (umc_unlikely(state == IBV_QPS_RESET || wr->num_sge < 0 ||
				 (uint32_t)wr->num_sge > qp->cap.max_recv_sge ||
				 !umc_sges_ok(ibqp->pd, wr->sg_list, wr->num_sge,
					      IBV_ACCESS_LOCAL_WRITE, &total))) {
			ret = EINVAL;
			break;
		}
		/* The ring holds at least max_recv_wr WQEs: the held count decides. */
		if (umc_unlikely(atomic_load_explicit(&qp->rq_held, memory_order_relaxed) >=
				 qp->cap.max_recv_wr)) {
			ret = ENOMEM;
			break;
		}
		struct umc_rwqe *w = umc_rwqe_at(qp, qp->rq_tail++);

		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		memcpy(w->sge, wr->sg_list, wr->num_sge * sizeof(*w->sge));
		atomic_fetch_add_explicit(&qp->rq_held, 1, memory_order_relaxed);
	}
	if (umc_unlikely(state == IBV_QPS_ERR))
		__umc_qp_flush_rq(qp);
	umc_spin_unlock(&qp->rq_lock);
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

/*
 * Complete @n posted send WRs with @status.  A successful unsignaled WR
 * generates no completion and keeps its slot until the next completion of
 * the QP is reaped, which retires it with its own WQE; a WR completed in
 * error always generates a completion (IBA 10.7.3.1; rxe's do_complete).
 * Caller holds sq_lock.
 */
static void umc_send_complete(struct umc_qp *qp, struct ibv_send_wr **wrs, int n,
			      enum ibv_wc_status status)
{
	struct umc_cq *cq = to_ucq(qp->ibqp.send_cq);

	for (int i = 0; i < n; i++) {
		if (status == IBV_WC_SUCCESS && !qp->sq_sig_all &&
		    !(wrs[i]->send_flags & IBV_SEND_SIGNALED)) {
			qp->sq_unsig++;
			continue;
		}
		struct ibv_wc wc = {
			.wr_id = wrs[i]->wr_id,
			.status = status,
			.opcode = IBV_WC_SEND,
			.qp_num = qp->ibqp.qp_num,
		};

		umc_cq_push(cq, &wc, false, &qp->sq_held, qp->sq_unsig + 1);
		qp->sq_unsig = 0;
	}
}

/*
 * Take the next PSN for send WR @wr of @len bytes and build its packet in
 * *@p.  Returns 1, or 0 when the message is above the path MTU: then it is
 * not sent (the caller still completes it).  Caller holds sq_lock.
 */
static int umc_tx_prepare(struct umc_qp *qp, const struct ibv_send_wr *wr, uint64_t len,
			  struct umc_tx_pkt *p)
{
	uint32_t psn = qp->sq_psn, qkey = wr->wr.ud.remote_qkey;

	qp->sq_psn = (psn + 1) & 0xffffff;
	if (umc_unlikely(len > (128u << qp->dev->active_mtu))) {
		CNT(qp->dev, tx_too_long);
		return 0;
	}
	p->ah = to_uah(wr->wr.ud.ah);
	p->sge = wr->sg_list;
	p->num_sge = wr->num_sge;
	p->len = (uint32_t)len;
	p->corrupt = false;
	p->hdr = (struct umc_ud_hdr){
		.bth = {
			.opcode = wr->opcode == IBV_WR_SEND_WITH_IMM ? UMC_OP_UD_SEND_ONLY_IMM
								   : UMC_OP_UD_SEND_ONLY,
			.se = !!(wr->send_flags & IBV_SEND_SOLICITED),
			.pad_cnt = umc_ud_pad(len),
			.pkey = qp->dev->pkeys[qp->pkey_index],
			.dest_qpn = wr->wr.ud.remote_qpn & 0xffffff,
			.psn = psn,
		},
		.deth = {
			.qkey = (qkey & 0x80000000u)
					? atomic_load_explicit(&qp->qkey, memory_order_relaxed)
					: qkey,
			.src_qpn = qp->ibqp.qp_num,
		},
		.imm_be = wr->imm_data,
	};
	return 1;
}

/* Count a run of @n datagrams of @bytes to one group (@g, NULL: none). */
static void umc_tx_count_group(struct umc_grp_counters *g, uint64_t n, uint64_t bytes)
{
	if (g) {
		GCNTN(g, tx_packets, n);
		GCNTN(g, tx_bytes, bytes);
	}
}

/*
 * Hand @n packets of @qp to its link, through the fault stage when it must
 * look (fault/stage.h), and count their bytes, and per group (an AH's
 * group counters, one add per run of packets to the same group).  Caller
 * holds sq_lock.
 */
static void umc_xmit(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n)
{
	struct umc_device *dev = qp->dev;
	struct umc_grp_counters *g = NULL;
	uint64_t bytes = 0, run = 0, run_bytes = 0;

	for (int i = 0; i < n; i++) {
		if (pkts[i].ah->gcnt != g) {
			umc_tx_count_group(g, run, run_bytes);
			g = pkts[i].ah->gcnt;
			run = run_bytes = 0;
		}
		run++;
		run_bytes += pkts[i].len;
		bytes += pkts[i].len;
	}
	umc_tx_count_group(g, run, run_bytes);
	CNTN(dev, tx_bytes, bytes);
	if (umc_unlikely(umc_fault_on(dev, UMC_FAULT_ON_TX)))
		umc_fault_tx(qp, pkts, n);
	else
		dev->link->xmit(qp, pkts, n);
}

/*
 * ibv_post_send: UD SEND and SEND_WITH_IMM.  EINVAL for a QP in RESET,
 * INIT or RTR, another opcode, no AH or an AH of another PD, too many
 * SGEs, inline data above max_inline_data, or an SGE outside an MR of the
 * QP's PD; ENOMEM when the send queue is full (max_send_wr WQEs not
 * retired by a reaped completion).  *bad_wr is the first WR not posted.
 * In the error state (and SQE, whose send queue is in error) a WR is
 * accepted and completed with IBV_WC_WR_FLUSH_ERR, signaled or not, and
 * nothing is sent (IBA 10.3.1; rxe accepts sends from RTS on and flushes
 * them in ERR).  A message longer than the path MTU is completed
 * successfully and not sent, with its PSN consumed (IBA C10-93.1.1; rxe
 * does the same).  A Q_Key with the high bit set is replaced by the QP's
 * own (IBA 10.2.4.3).
 */
UMC_HOT
int umc_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct umc_qp *qp = to_uqp(ibqp);
	struct umc_tx_pkt pkts[UMC_TX_BATCH];
	struct ibv_send_wr *done[UMC_TX_BATCH];
	int n = 0, ndone = 0, ret = 0;
	enum ibv_wc_status status = IBV_WC_SUCCESS;
	enum ibv_qp_state state;
	uint64_t len;

	umc_mutex_lock(&qp->sq_lock, UMC_LOCK_QP_SQ);
	/* One state for the whole list, so its completions keep their order. */
	state = umc_qp_state(qp);
	if (umc_unlikely(state != IBV_QPS_RTS)) {
		if (state != IBV_QPS_ERR && state != IBV_QPS_SQE) {
			ret = wr ? EINVAL : 0;
			goto out;
		}
		status = IBV_WC_WR_FLUSH_ERR;
	}
	for (; wr; wr = wr->next) {
		ret = umc_chk_send_wr(qp, wr, &len);
		if (umc_unlikely(ret))
			break;
		if (umc_unlikely(atomic_load_explicit(&qp->sq_held, memory_order_relaxed) >=
				 qp->cap.max_send_wr)) {
			ret = ENOMEM;
			break;
		}
		atomic_fetch_add_explicit(&qp->sq_held, 1, memory_order_relaxed);
		done[ndone++] = wr;
		if (umc_likely(status == IBV_WC_SUCCESS))
			n += umc_tx_prepare(qp, wr, len, &pkts[n]);
		if (ndone == UMC_TX_BATCH) {
			if (n)
				umc_xmit(qp, pkts, n);
			umc_send_complete(qp, done, ndone, status);
			n = ndone = 0;
		}
	}
	if (n)
		umc_xmit(qp, pkts, n);
	umc_send_complete(qp, done, ndone, status);
out:
	umc_mutex_unlock(&qp->sq_lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}
