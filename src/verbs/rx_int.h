/* SPDX-License-Identifier: MIT */
/*
 * rx_int.h - the calls between the files of the receive path (verbs/
 * only): the engine (progress.c), delivery into receive WQEs
 * (rx_deliver.c), the receives lent to the link (rx_lend.c), the
 * background receive thread (rx_thread.c) and what that thread asks of
 * the scheduler (rx_sched.c).
 *
 * Nothing crosses a file per datagram: the engine calls lending and
 * delivery once per burst, and what both do per receive WQE (test the
 * QP's state, hold and release its MRs) is inline here.
 */
#ifndef UMC_VERBS_RX_INT_H
#define UMC_VERBS_RX_INT_H

#include "verbs/verbs_int.h"

/* Can @qp receive (IBA 10.3.1: RTR, RTS and SQD/SQE accept packets)? */
static inline bool umc_qp_receiving(struct umc_qp *qp)
{
	enum ibv_qp_state st = umc_qp_state(qp);

	return st == IBV_QPS_RTR || st == IBV_QPS_RTS || st == IBV_QPS_SQE;
}

/* Drop the holds umc_sges_hold() took on the first @n SGEs. */
static inline void umc_sges_release(const struct ibv_sge *sge, int n)
{
	for (int i = 0; i < n; i++)
		if (sge[i].length)
			umc_mr_put(sge[i].lkey);
}

/*
 * Check a receive WQE's SGEs again now that a datagram is to be written
 * into them: each must still lie in a live local-write MR of @pd (the MR
 * may have been deregistered, and its memory freed, since the receive was
 * posted).  Every SGE is checked, not only those this datagram reaches, so
 * that a WQE is either wholly valid or refused before anything is written
 * (rxe's copy_data looks each SGE up as the copy reaches it and may have
 * written the first ones when a later one fails).  A zero-length SGE takes
 * no byte and is not looked up, as in rxe.  On success the MRs are held
 * until umc_sges_release(), so ibv_dereg_mr cannot return during the copy.
 */
static inline bool umc_sges_hold(struct ibv_pd *pd, const struct ibv_sge *sge, int n)
{
	for (int i = 0; i < n; i++) {
		if (sge[i].length &&
		    umc_unlikely(!umc_mr_get(pd, sge[i].lkey, sge[i].addr, sge[i].length,
					     IBV_ACCESS_LOCAL_WRITE))) {
			umc_sges_release(sge, i);
			return false;
		}
	}
	return true;
}

/* ------------------------------------------------------------------------- */
/* Lending (rx_lend.c).                                                      */

/*
 * The receives lent for one burst (rx_lend.c): the link's view (lend),
 * the landing QP and, per lent WQE, a copy of its SGEs (the ring slot may
 * be reused once its completion is reaped), whose MRs are held until
 * umc_rx_unlend().  Delivery reads it to find a datagram that landed in
 * the WQE it takes (umc_qp_recv).
 */
struct umc_rx_lender {
	struct umc_rx_lend lend;
	struct umc_qp *qp; /* NULL: nothing lent */
	uint32_t head;	   /* ring index of the WQE lent as land[0] */
	uint64_t lo, hi;   /* the span of the receives lent so far in this burst */
	int nsge[UMC_RX_BATCH];
	struct ibv_sge sge[UMC_RX_BATCH][UMC_MAX_SGE];
};

/*
 * umc_rx_lend - lend the link posted receives of @ep's landing QP for one
 * burst of at most @max datagrams, with their MRs held.  Returns the lend
 * for the link's rx_burst (n may be 0).  Context: dev->rx_lock held.
 */
UMC_HOT
const struct umc_rx_lend *umc_rx_lend(struct umc_device *dev, struct umc_rx_ep *ep, int max);
/*
 * umc_rx_unlend - the burst is over: drop the holds, run a flush of the
 * landing QP that waited.  Context: dev->rx_lock held.
 */
UMC_HOT
void umc_rx_unlend(struct umc_device *dev);

/* ------------------------------------------------------------------------- */
/* Delivery (rx_deliver.c).                                                  */

/*
 * umc_rx_deliver_burst - hand the @n packets @pkts that one rx_burst of
 * endpoint @ep returned to their QPs, in order (rx_deliver.c, from the
 * top), through the fault stage while it looks at @dev (fault/stage.h);
 * count their bytes, and per group.  Lent receives they landed in stay
 * lent until umc_rx_unlend().  Context: dev->rx_lock held.
 */
UMC_HOT
void umc_rx_deliver_burst(struct umc_device *dev, const struct umc_rx_ep *ep,
			  const struct umc_rx_pkt *pkts, int n);

/*
 * umc_rx_deliver_due - deliver what the fault stage held back and is due
 * (fault/stage.h), at the start of every pass while it looks at @dev.
 * Context: dev->rx_lock held.
 */
void umc_rx_deliver_due(struct umc_device *dev);

/* ------------------------------------------------------------------------- */
/* The engine (progress.c) and the background receive thread (rx_thread.c). */

/*
 * umc_rx_epoll - put every receive endpoint of @dev in rx_epfd (@on) or
 * take them all out (__umc_rx_epoll, progress.c); with more than a few
 * endpoints they stay in.  Returns whether they are all in it now.
 * Context: takes dev->watch_lock.
 */
bool umc_rx_epoll(struct umc_device *dev, bool on);

/*
 * umc_rx_thread_start - start @dev's background receive thread, unless
 * UMC_RX_THREAD=0 in the environment; dev->rx_thread says whether it
 * runs (after a failed start, the next endpoint tries again).
 * Context: dev->rx_lock held (umc_rx_add).
 */
void umc_rx_thread_start(struct umc_device *dev);

/* ------------------------------------------------------------------------- */
/* The application and the scheduler, as the thread sees them (rx_sched.c). */

/*
 * umc_app_receiving - sleep @us microseconds; returns whether a thread of
 * the application ran the engine of @dev meanwhile.
 */
bool umc_app_receiving(struct umc_device *dev, long us);
/*
 * umc_app_waiting - is the application thread that last ran @dev's engine
 * only waiting for its turn on a CPU?  Takes up to UMC_RX_PROBE_US.
 */
bool umc_app_waiting(struct umc_device *dev);
/*
 * umc_rx_policy - move the calling thread to SCHED_BATCH (@want) or back
 * to SCHED_OTHER; *@batch: which it has.  Returns false, for good, once
 * its policy is not its own.
 */
bool umc_rx_policy(bool *batch, bool want);

#endif /* UMC_VERBS_RX_INT_H */
