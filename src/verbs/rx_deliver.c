/* SPDX-License-Identifier: MIT */
/*
 * rx_deliver.c - delivery into receive WQEs: the packets of a burst to
 * their QPs, each completed or refused.
 *
 * The engine (progress.c) hands each burst the link returned to
 * umc_rx_deliver_burst, which hands every packet to every QP attached to
 * its group, as rxe's rxe_rcv_mcast_pkt() does (drivers/infiniband/sw/rxe/
 * rxe_recv.c):
 *
 *   - a packet to DestQP 0xFFFFFF gives each attached QP in RTR or RTS its
 *     own copy; another DestQP goes to that QP of this device, if any;
 *   - the BTH P_Key must match the QP's (IBA 10.9.3: the same base, one of
 *     them a full member, so 0xFFFF and 0x7FFF pass the default one);
 *   - the DETH Q_Key must equal the QP's Q_Key;
 *   - the QP must have a receive posted whose buffer holds the 40-byte GRH
 *     and the payload; a smaller buffer completes with IBV_WC_LOC_LEN_ERR,
 *     the QP goes to the error state and its other receives are flushed,
 *     which is what rxe did when measured (kernel 6.1; docs/design.md,
 *     "RoCEv2 fidelity"; rxe_resp.c's length checks have changed since);
 *   - every SGE of that receive must still lie in a live local-write MR of
 *     the QP's PD; otherwise it completes with IBV_WC_LOC_PROT_ERR, nothing
 *     is written, and the QP goes to the error state (umc_qp_recv);
 *   - there is no sender exclusion, except for packets sent by a QP of this
 *     device that was created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB.
 *
 * Every packet refused for one of these reasons is counted in dev->cnt,
 * and every completion, before it is pushed: whoever polls a completion
 * reads counters that already include it.
 *
 * A datagram may have landed in a receive lent to the link (rx_lend.c):
 * it completes in place when that receive is the WQE it takes, and every
 * other QP gets a copy from there, the landing QP last (umc_deliver).
 */
#include <string.h>

#include "fault/stage.h"
#include "verbs/rx_int.h"

/*
 * Copy @len bytes from @src into the scatter list at byte offset @off.  A
 * memmove: the source may be a lent receive that the application also
 * posted, in part, to the destination QP (a receive posted there after
 * the lend, which umc_rx_lend_shared could not see).
 */
static void umc_scatter(const struct ibv_sge *sge, int n, size_t off, const void *src, size_t len)
{
	const uint8_t *s = src;

	for (int i = 0; i < n && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		size_t room = sge[i].length - off, c = len < room ? len : room;

		memmove((uint8_t *)(uintptr_t)sge[i].addr + off, s, c);
		s += c;
		len -= c;
		off = 0;
	}
}

/* Copy @len bytes of iovecs @iov (@n of them) from byte @soff into the scatter list at @doff. */
static void umc_scatter_iov(const struct ibv_sge *sge, int nsge, size_t doff,
			    const struct iovec *iov, int n, size_t soff, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		if (soff >= iov[i].iov_len) {
			soff -= iov[i].iov_len;
			continue;
		}
		size_t c = iov[i].iov_len - soff < len ? iov[i].iov_len - soff : len;

		umc_scatter(sge, nsge, doff, (const uint8_t *)iov[i].iov_base + soff, c);
		doff += c;
		len -= c;
		soff = 0;
	}
}

/* The address of byte @off of a scatter list and the bytes of its SGE from there. */
static uint8_t *umc_sge_at(const struct ibv_sge *sge, int n, size_t off, size_t *room)
{
	for (int i = 0; i < n; i++) {
		if (off < sge[i].length) {
			*room = sge[i].length - off;
			return (uint8_t *)(uintptr_t)sge[i].addr + off;
		}
		off -= sge[i].length;
	}
	*room = 0;
	return NULL;
}

/*
 * Move @len bytes of a scatter list from byte @src down to byte @dst (<
 * @src), in place: the payload of a datagram that landed behind an ImmDt.
 * Front to back, so a byte is read before anything overwrites it.
 */
static void umc_sge_move_down(const struct ibv_sge *sge, int n, size_t dst, size_t src,
			      size_t len)
{
	while (len) {
		size_t dr, sr, c;
		uint8_t *d = umc_sge_at(sge, n, dst, &dr), *s = umc_sge_at(sge, n, src, &sr);

		if (!d || !s)
			return;
		c = len < dr ? len : dr;
		c = c < sr ? c : sr;
		memmove(d, s, c);
		dst += c;
		src += c;
		len -= c;
	}
}

/*
 * A receive WQE taken by a datagram it cannot accept: complete it with
 * @status and move the QP to the error state, flushing its other receives.
 * Caller holds rq_lock.
 */
static void __umc_rwqe_fail(struct umc_qp *qp, struct ibv_wc *wc, enum ibv_wc_status status)
{
	wc->status = status;
	umc_cq_push(to_ucq(qp->ibqp.recv_cq), wc, false, &qp->rq_held, 1);
	__umc_qp_to_err(qp);
}

/*
 * Deliver one packet to one attached QP (rxe: check_type_state, check_keys,
 * check_resource, send_data_in).  The WQE is taken, filled and completed
 * under rq_lock, so its completion keeps the order of the queue even when
 * ibv_modify_qp flushes the queue meanwhile, and a reset cannot come
 * between taking the WQE and accounting its completion.
 */
UMC_HOT
static void umc_qp_recv(struct umc_qp *qp, const struct umc_rx_pkt *pkt)
{
	struct umc_device *dev = qp->dev;
	const struct umc_rx_lender *l = dev->rx_lender;
	struct umc_rwqe *w;
	uint64_t room = 0;
	bool in_place;
	uint32_t idx;

	if (umc_unlikely(!umc_qp_receiving(qp))) {
		CNT(dev, rx_bad_state);
		goto dropped;
	}
	if (umc_unlikely(!umc_pkey_match(pkt->hdr.bth.pkey, dev->pkeys[qp->pkey_index]))) {
		CNT(dev, rx_pkey_viol);
		goto dropped;
	}
	/* Read after the state (acquire): a Q_Key set with the state is seen. */
	if (umc_unlikely(pkt->hdr.deth.qkey !=
			 atomic_load_explicit(&qp->qkey, memory_order_relaxed))) {
		CNT(dev, rx_qkey_viol);
		goto dropped;
	}

	umc_spin_lock(&qp->rq_lock, UMC_LOCK_QP_RQ);
	if (umc_unlikely(qp->rq_head == qp->rq_tail)) {
		umc_spin_unlock(&qp->rq_lock);
		CNT(dev, rx_no_recv);
		goto dropped;
	}
	idx = qp->rq_head++;
	w = umc_rwqe_at(qp, idx);
	struct ibv_wc wc = {
		.wr_id = w->wr_id,
		.opcode = IBV_WC_RECV,
		.qp_num = qp->ibqp.qp_num,
	};

	for (int i = 0; i < w->num_sge; i++)
		room += w->sge[i].length;
	if (umc_unlikely(room < UMC_GRH_LEN + (uint64_t)pkt->len)) {
		CNT(dev, rx_too_long);
		__umc_rwqe_fail(qp, &wc, IBV_WC_LOC_LEN_ERR);
		umc_spin_unlock(&qp->rq_lock);
		goto dropped;
	}
	/*
	 * A receive buffer that is not in a valid MR is IBA's "local protection
	 * error" completion; as after any completion error, the QP goes to the
	 * error state.  rxe reports this case as IBV_WC_LOC_QP_OP_ERR (its
	 * copy_data's failed L_Key lookup is a "malformed WQE", a class A error
	 * that also moves the QP to the error state); umcast reports
	 * IBV_WC_LOC_PROT_ERR, the status IBA names for it.
	 */
	/*
	 * The datagram landed in this very WQE: its MRs are held since it was
	 * lent, and only the GRH area (and, behind an ImmDt, the payload's
	 * place) is left to write.  Otherwise the WQE is checked and held now,
	 * and the payload copied in, from where it landed or from the link.
	 */
	in_place = pkt->land && l && l->qp == qp &&
		   idx == l->head + (uint32_t)(pkt->land - l->lend.land);
	if (umc_unlikely(!in_place && !umc_sges_hold(qp->ibqp.pd, w->sge, w->num_sge))) {
		CNT(dev, rx_prot_err);
		__umc_rwqe_fail(qp, &wc, IBV_WC_LOC_PROT_ERR);
		umc_spin_unlock(&qp->rq_lock);
		goto dropped;
	}
	umc_scatter(w->sge, w->num_sge, 0, pkt->grh, sizeof(pkt->grh));
	if (in_place) {
		if (umc_unlikely(pkt->land_off))
			umc_sge_move_down(w->sge, w->num_sge, UMC_GRH_LEN,
					  UMC_GRH_LEN + pkt->land_off, pkt->len);
	} else {
		if (pkt->land)
			umc_scatter_iov(w->sge, w->num_sge, UMC_GRH_LEN, pkt->land->iov,
					pkt->land->niov, pkt->land_off, pkt->len);
		else
			umc_scatter(w->sge, w->num_sge, UMC_GRH_LEN, pkt->payload, pkt->len);
		umc_sges_release(w->sge, w->num_sge);
	}

	wc.status = IBV_WC_SUCCESS;
	wc.byte_len = UMC_GRH_LEN + pkt->len;
	wc.src_qp = pkt->hdr.deth.src_qpn;
	wc.slid = pkt->slid;
	wc.sl = pkt->sl;
	wc.pkey_index = qp->pkey_index;
	wc.wc_flags = pkt->has_grh ? IBV_WC_GRH : 0;
	if (pkt->hdr.bth.opcode == UMC_OP_UD_SEND_ONLY_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = pkt->hdr.imm_be;
	}
	CNT_RX(dev, rx_delivered);
	if (in_place)
		CNT_RX(dev, rx_in_place);
	umc_cq_push(to_ucq(qp->ibqp.recv_cq), &wc, pkt->hdr.bth.se, &qp->rq_held, 1);
	umc_spin_unlock(&qp->rq_lock);
	return;
dropped:
	if (pkt->mcg) /* the group's count of copies refused (umc-stat) */
		GCNT(pkt->mcg->gcnt, rx_dropped);
}

/* Does @filter (__umc_deliver) take @qp: +N only QPN N, -N every QP but N? */
static bool umc_filter_takes(int32_t filter, const struct umc_qp *qp)
{
	uint32_t n = (uint32_t)(filter > 0 ? filter : -filter);

	return (qp->ibqp.qp_num == n) == (filter > 0);
}

/*
 * Hand @pkt to its QPs: DestQP 0xFFFFFF to every QP attached to its group
 * (none: counted), another DestQP to that QP of this device (rxe
 * hdr_check).  A group packet sent by a local QP created with
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB goes to no QP of this device.
 * @filter, from the fault stage only (umc_rx_deliver_filtered): 0 every
 * such QP, +N only QPN N, -N every one but N.  Inlined into both callers,
 * so the engine's own (umc_deliver) has no filter to test.
 */
static inline __attribute__((always_inline)) void
__umc_deliver(struct umc_device *dev, const struct umc_rx_pkt *pkt, int32_t filter)
{
	struct umc_mcg *mcg = pkt->mcg;

	/*
	 * No port receives a message above its MTU: a NIC's link drops the
	 * frame (qp.c sends none).  A UDP socket takes up to UMC_RX_SLOT, so
	 * without this check anyone who can send to the port could fill a
	 * receive of 40 + MTU bytes with too much, which fails it with
	 * IBV_WC_LOC_LEN_ERR and puts its QP in the error state.
	 */
	if (umc_unlikely(pkt->len > (128u << dev->active_mtu))) {
		CNT(dev, rx_too_long);
		return;
	}
	if (umc_unlikely(pkt->hdr.bth.dest_qpn != UMC_MCAST_QPN)) {
		struct umc_qp *qp = __umc_qp_by_num(dev, pkt->hdr.bth.dest_qpn);

		if (qp)
			umc_qp_recv(qp, pkt);
		else
			CNT(dev, rx_no_qp);
		return;
	}
	if (umc_unlikely(!mcg || mcg->nqp == 0)) {
		CNT(dev, rx_no_group);
		return;
	}
	if (umc_unlikely(pkt->sender &&
			 (pkt->sender->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB))) {
		CNT(dev, rx_self_blocked);
		return;
	}
	/*
	 * The landing QP last: the others copy from its buffer, which goes
	 * back to the application with that QP's completion.
	 */
	struct umc_qp *last = pkt->land ? dev->rx_lender->qp : NULL;
	bool attached = false;

	for (int i = 0; i < mcg->nqp; i++) {
		if (mcg->qps[i] == last)
			attached = true;
		else if (umc_likely(!filter) || umc_filter_takes(filter, mcg->qps[i]))
			umc_qp_recv(mcg->qps[i], pkt);
	}
	if (attached && (umc_likely(!filter) || umc_filter_takes(filter, last)))
		umc_qp_recv(last, pkt);
}

static void umc_deliver(struct umc_device *dev, const struct umc_rx_pkt *pkt)
{
	__umc_deliver(dev, pkt, 0);
}

/* The fault stage's delivery (umc_fault_deliver_fn). */
static void umc_rx_deliver_filtered(struct umc_device *dev, const struct umc_rx_pkt *pkt,
				    int32_t filter)
{
	__umc_deliver(dev, pkt, filter);
}

/*
 * What a burst of @n packets from @ep counts (umc-stat): its bytes on the
 * device, and on each packet's group.  Nearly always every packet is for
 * the endpoint's own group (on InfiniBand one socket of a shared MLID
 * takes the others' too): those are counted with one add each per burst.
 */
struct umc_rx_tally {
	uint64_t bytes, other_bytes;
	int others; /* packets not for the endpoint's group, counted one by one */
};

static inline void umc_rx_count(struct umc_rx_tally *t, const struct umc_rx_pkt *pkt,
				const struct umc_mcg *mine)
{
	t->bytes += pkt->len;
	if (umc_unlikely(pkt->mcg != mine)) {
		t->others++;
		t->other_bytes += pkt->len;
		if (pkt->mcg) {
			CNTN_RX_AT(pkt->mcg->gcnt, rx_packets, 1);
			CNTN_RX_AT(pkt->mcg->gcnt, rx_bytes, pkt->len);
		}
	}
}

UMC_HOT
void umc_rx_deliver_burst(struct umc_device *dev, const struct umc_rx_ep *ep,
			  const struct umc_rx_pkt *pkts, int n)
{
	struct umc_mcg *mine = ep->mcg;
	struct umc_rx_tally t = {0};

	if (umc_likely(!umc_fault_on(dev, UMC_FAULT_ON_RX))) {
		for (int i = 0; i < n; i++) {
			umc_rx_count(&t, &pkts[i], mine);
			umc_deliver(dev, &pkts[i]);
		}
	} else {
		for (int i = 0; i < n; i++)
			umc_rx_count(&t, &pkts[i], mine);
		umc_fault_rx(dev, pkts, n, umc_rx_deliver_filtered);
	}
	CNTN_RX(dev, rx_bytes, t.bytes);
	if (mine && n > t.others) {
		CNTN_RX_AT(mine->gcnt, rx_packets, (uint64_t)(n - t.others));
		CNTN_RX_AT(mine->gcnt, rx_bytes, t.bytes - t.other_bytes);
	}
}

void umc_rx_deliver_due(struct umc_device *dev)
{
	umc_fault_rx_due(dev, umc_rx_deliver_filtered);
}
