/* SPDX-License-Identifier: MIT */
/*
 * rx_lend.c - the posted receives the engine lends the link for a burst.
 *
 * A payload is copied at most once.  Before reading an endpoint that
 * receives a group, the engine lends the link the posted receives of one
 * QP attached to it (the landing QP: the first in RTR or RTS with receives
 * posted), up to one per datagram of the burst, with their MRs held; the
 * link has the kernel write each datagram's payload straight into its
 * receive (rx_burst).  When that datagram is delivered and its WQE is
 * the head of the landing QP's queue, it is completed in place (only the
 * GRH area is written); every other QP of the group gets a copy from that
 * buffer, before the landing QP's completion is pushed, and so does the
 * landing QP when an earlier datagram of the burst did not consume its WQE.
 * A datagram that fails a check, or that the landing QP does not accept
 * (Q_Key, P_Key, state), leaves its bytes in the lent receive, which stays
 * posted and takes a later datagram: a posted buffer's contents are
 * undefined until its completion (umcast(7)).  While receives are lent, a
 * flush of the landing QP waits for the end of the burst (rq_lent) and a
 * RESET or destroy for rx_lock, so no buffer goes back to the application
 * while the kernel may write into it, and ibv_dereg_mr of their MRs waits
 * for the holds.
 */
#include <stdlib.h>

#include "verbs/rx_int.h"

/* Do the @an bytes at @a and the @bn bytes at @b share one? */
static bool umc_bytes_overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return an && bn && a < b + bn && b < a + an;
}

/* Do SGE lists @x (@nx) and @y (@ny) share a byte? */
static bool umc_sges_overlap(const struct ibv_sge *x, int nx, const struct ibv_sge *y, int ny)
{
	for (int i = 0; i < nx; i++)
		for (int j = 0; j < ny; j++)
			if (umc_bytes_overlap(x[i].addr, x[i].length, y[j].addr, y[j].length))
				return true;
	return false;
}

/* Does SGE list @sge (@n) reach into the span of the @k receives lent so far? */
static bool umc_rx_in_span(const struct umc_rx_lender *l, int k, const struct ibv_sge *sge, int n)
{
	for (int i = 0; k && i < n; i++)
		if (umc_bytes_overlap(sge[i].addr, sge[i].length, l->lo, l->hi - l->lo))
			return true;
	return false;
}

/*
 * May receive @w be lent as land @k?  Not if it shares a byte with a
 * receive lent before it in the burst: the kernel writes the whole burst
 * before any datagram of it is checked, so a later datagram would be
 * written over one not yet checked (a program may post one buffer to every
 * receive, as rdma-core's mckey does).  Receives posted in address order
 * cost one comparison with the span of those before.  If it may, the span
 * grows by it.
 */
static bool umc_rx_lendable(struct umc_rx_lender *l, int k, const struct umc_rwqe *w)
{
	if (umc_rx_in_span(l, k, w->sge, w->num_sge))
		for (int j = 0; j < k; j++)
			if (umc_sges_overlap(l->sge[j], l->nsge[j], w->sge, w->num_sge))
				return false;
	for (int i = 0; i < w->num_sge; i++) {
		uint64_t a = w->sge[i].addr, b = a + w->sge[i].length;

		if (a == b)
			continue;
		l->lo = k && l->lo < a ? l->lo : a;
		l->hi = k && l->hi > b ? l->hi : b;
		k = 1; /* the span holds a byte from here on */
	}
	return true;
}

/*
 * Does a receive of another QP of @dev that this burst may fill (one of
 * its first @k posted) reach into the span of the @k receives lent?  A copy
 * into it would overwrite a lent datagram not yet delivered (two QPs may
 * post one buffer), so then nothing is lent.  Every QP of the device, not
 * only the group's: a datagram to a QP's number (DestQP not 0xFFFFFF)
 * reaches it through the group's socket whether it is attached or not,
 * and on InfiniBand a DGID may name another group.  Either way a QP takes
 * at most one receive per datagram.  Context: rx_lock held (qp_list), no
 * rq_lock held.
 */
static bool umc_rx_lend_shared(const struct umc_rx_lender *l, struct umc_device *dev, int k)
{
	bool shared = false;

	for (struct umc_qp *o = dev->qp_list; o && !shared; o = o->next) {
		if (o == l->qp)
			continue;
		umc_spin_lock(&o->rq_lock, UMC_LOCK_QP_RQ);
		uint32_t n = o->rq_tail - o->rq_head < (uint32_t)k ? o->rq_tail - o->rq_head
								  : (uint32_t)k;

		for (uint32_t j = 0; j < n && !shared; j++) {
			const struct umc_rwqe *w = umc_rwqe_at(o, o->rq_head + j);

			shared = umc_rx_in_span(l, k, w->sge, w->num_sge);
		}
		umc_spin_unlock(&o->rq_lock);
	}
	return shared;
}

/* The QP of @mcg whose receives datagrams land in: the first that can receive. */
static struct umc_qp *umc_rx_landing_qp(const struct umc_mcg *mcg)
{
	for (int i = 0; i < mcg->nqp; i++)
		if (umc_qp_receiving(mcg->qps[i]))
			return mcg->qps[i];
	return NULL;
}

/* The burst is over: drop the holds, run a flush that waited.  Context: rx_lock held. */
UMC_HOT
void umc_rx_unlend(struct umc_device *dev)
{
	struct umc_rx_lender *l = dev->rx_lender;

	if (!l || !l->qp)
		return;
	for (int k = 0; k < l->lend.n; k++)
		umc_sges_release(l->sge[k], l->nsge[k]);
	umc_qp_rx_unlend(l->qp);
	l->qp = NULL;
	l->lend.n = 0;
}

/*
 * Lend up to @max posted receives of @ep's landing QP, in queue order, each
 * whose every SGE is still in a live local-write MR (held from now on),
 * that has room beyond its GRH area and that shares no byte with one lent
 * before it (umc_rx_lendable); none at all when a receive of another QP of
 * the device may share bytes with them (umc_rx_lend_shared).  Lending costs
 * two atomic operations per SGE even when nothing arrives, so a burst lends
 * what the endpoint's last one brought (at least one), plus one when its
 * datagrams are large (UMC_RX_SPARE_LEND_MIN); a datagram beyond the lend
 * is copied, and a busy-polling program's empty polls soon lend one.
 * Returns the lend for the link (n may be 0).  Context: dev->rx_lock held.
 */
UMC_HOT
const struct umc_rx_lend *umc_rx_lend(struct umc_device *dev, struct umc_rx_ep *ep, int max)
{
	static const struct umc_rx_lend none;
	struct umc_rx_lender *l = dev->rx_lender;
	struct umc_qp *qp;
	int k = 0, want;

	/*
	 * Nothing is lent while the fault stage looks at the device: the
	 * datagrams it adds (a duplicate, one released late) take posted
	 * receives out of turn, among them ones lent to later datagrams of
	 * the burst.
	 */
	if (!ep->mcg || umc_unlikely(umc_fault_on(dev, UMC_FAULT_ON_RX)))
		return &none;
	if (umc_unlikely(!l)) {
		l = dev->rx_lender = calloc(1, sizeof(*l));
		if (!l)
			return &none;
	}
	l->lend.n = 0;
	l->qp = qp = umc_rx_landing_qp(ep->mcg);
	if (!qp)
		return &l->lend;
	want = ep->lend_hint + (ep->lend_spare || !ep->lend_hint);
	if (max > want)
		max = want;
	umc_spin_lock(&qp->rq_lock, UMC_LOCK_QP_RQ);
	l->head = qp->rq_head;
	for (uint32_t posted = qp->rq_tail - qp->rq_head; k < max && (uint32_t)k < posted; k++) {
		const struct umc_rwqe *w = umc_rwqe_at(qp, l->head + (uint32_t)k);
		struct umc_rx_land *land = &l->lend.land[k];
		size_t skip = UMC_GRH_LEN;

		land->niov = 0;
		land->room = 0;
		for (int i = 0; i < w->num_sge; i++) {
			if (w->sge[i].length <= skip) {
				skip -= w->sge[i].length;
				continue;
			}
			land->iov[land->niov++] = (struct iovec){
				(uint8_t *)(uintptr_t)w->sge[i].addr + skip, w->sge[i].length - skip};
			land->room += w->sge[i].length - skip;
			skip = 0;
		}
		if (!land->niov || !umc_rx_lendable(l, k, w))
			break;
		if (!umc_sges_hold(qp->ibqp.pd, w->sge, w->num_sge))
			break; /* delivery will find what is wrong with it */
		l->nsge[k] = w->num_sge;
		for (int i = 0; i < w->num_sge; i++) /* mostly one: no call to memcpy */
			l->sge[k][i] = w->sge[i];
	}
	l->lend.n = k;
	qp->rq_lent = k > 0;
	umc_spin_unlock(&qp->rq_lock);
	if (k && (dev->qp_list != qp || qp->next) && umc_rx_lend_shared(l, dev, k))
		umc_rx_unlend(dev);
	if (!l->lend.n)
		l->qp = NULL;
	return &l->lend;
}
