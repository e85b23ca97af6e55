/* SPDX-License-Identifier: MIT */
/*
 * progress.c - the receive engine: datagrams in, receive completions out.
 *
 * Whoever needs completions runs the engine: ibv_poll_cq on an empty CQ,
 * ibv_get_cq_event, attach and detach.  A program that polls therefore
 * receives on its own thread, with no hand-off.  A program that posted
 * receives and then does something else must still get them filled, as a
 * NIC would: a background thread per device (started with the device's
 * first receive endpoint) runs the engine itself when no application thread
 * has run it for a while: UMC_RX_IDLE_US at first, growing to
 * UMC_RX_IDLE_MAX_US once the application has been seen receiving (a
 * receiver that shares its CPU with others looks idle for whole time
 * slices), and not at all while the application's thread is only waiting
 * for a CPU (umc_app_waiting).  While the application is receiving, the
 * thread does not wait on the sockets at all, so it never wakes up per
 * datagram on a busy-polling program's CPU, and the sockets are in no
 * epoll set, whose wake-up callback every datagram would run
 * (__umc_rx_epoll).  Nor does it while a CQ is armed: whoever waits for
 * that CQ's event, in ibv_get_cq_event or in poll(2) on the channel's fd,
 * sleeps on the sockets itself (cq.c) and is woken by the datagram; the
 * thread only drains, once per idle period, what nobody took, and doubles
 * the period while it finds nothing (back to UMC_RX_IDLE_US when it finds
 * something), so that a program asleep on an idle channel is not woken.
 * While it only looks (until it decides to stand in) the thread runs at
 * SCHED_BATCH, so its wake-ups never preempt a busy receiver on its CPU
 * (umc_rx_policy).  UMC_RX_THREAD=0 in the environment disables it.
 *
 * The engine reads the receive endpoints the link registered in batches
 * (link rx_burst: on RoCE recvmmsg, decode, ICRC) and hands every packet to
 * every QP attached to its group, as rxe's rxe_rcv_mcast_pkt does
 * (kernel-behaviour 5.2, 7.30):
 *
 *   - a packet to DestQP 0xFFFFFF gives each attached QP in RTR or RTS its
 *     own copy; another DestQP goes to that QP of this device, if any;
 *   - the BTH P_Key must match the QP's (IBA 10.9.3: the same base, one of
 *     them a full member, so 0xFFFF and 0x7FFF pass the default one);
 *   - the DETH Q_Key must equal the QP's Q_Key;
 *   - the QP must have a receive posted whose buffer holds the 40-byte GRH
 *     and the payload; a smaller buffer completes with IBV_WC_LOC_LEN_ERR,
 *     the QP goes to the error state and its other receives are flushed,
 *     which is what rxe did when measured (kernel 6.1, rocev2-wire.md
 *     section 8; a reading of newer rxe source, section 1.9, says the
 *     datagram is dropped instead);
 *   - every SGE of that receive must still lie in a live local-write MR of
 *     the QP's PD; otherwise it completes with IBV_WC_LOC_PROT_ERR, nothing
 *     is written, and the QP goes to the error state (umc_qp_recv);
 *   - there is no sender exclusion, except for packets sent by a QP of this
 *     device that was created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB.
 *
 * Every packet refused for one of these reasons is counted in dev->cnt,
 * and every completion, before it is pushed: whoever polls a completion
 * reads counters that already include it.
 * rx_lock serializes the engine; it is taken before dev->lock.
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
 *
 * Cold endpoints.  With a few endpoints the engine reads each in turn, one
 * syscall each, so an endpoint that never brings anything (the port's
 * unicast input in a program that only uses a group, or a group's socket
 * in one that only receives unicast) would lengthen every busy poll by a
 * syscall and, with it, the time until the datagram that is awaited is
 * seen.  So a busy poll (ibv_poll_cq on an empty CQ) reads an endpoint
 * that delivered nothing while the device's other endpoints delivered
 * UMC_RX_COLD_AFTER packets only every UMC_RX_COLD_STRIDE-th time; its
 * first packet makes it hot again.  A device where nothing arrives reads
 * every endpoint every time.  ibv_get_cq_event, woken by a datagram, reads
 * the hot endpoints first (umc_progress_hot) and all of them only when
 * that raised no event, so the cold one costs no syscall before the
 * awaited datagram is read.  Every other pass (the background thread,
 * detach) reads them all.  A packet on a cold endpoint waits at most
 * UMC_RX_COLD_STRIDE - 1 busy polls longer; none is lost.
 *
 * Woken drains.  A program that sleeps on a completion channel takes each
 * event as ibv_get_cq_event(3) shows: the event, an ack, a re-arm, then
 * ibv_poll_cq until it returns 0.  The thread woken in ibv_get_cq_event
 * read the endpoints until they were empty a moment ago, so that last poll
 * would pay a syscall per endpoint to find nothing: one more than raw UDP's
 * poll, recvmmsg, sendmmsg per event.  So the first busy poll of the
 * device after such a pass (by any thread) does not read the endpoints it
 * emptied (ep->fresh), and the next busy poll reads them again.  A
 * datagram that arrived in between waits for that poll, or wakes the next
 * ibv_get_cq_event at once (it sleeps on the sockets); none is lost, and a
 * program that busy-polls after a woken pass sees it one poll later.  The
 * skip is only taken where the poll would have read the endpoint (a cold
 * one keeps its turn), and only with few endpoints: with more, a pass
 * asks epoll which are ready, one syscall however many there are.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "verbs/verbs_int.h"

static void umc_rx_thread_start(struct umc_device *dev);

#define UMC_RX_THREAD_NAME "umc-rx" /* the background receive thread, as ps -L and gdb show it */

/* More endpoints than this: a pass asks rx_epfd which of them are ready. */
enum { UMC_RX_FEW = 4 };

static bool umc_rx_epoll_ctl(struct umc_device *dev, struct umc_rx_ep *ep, int op)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ep};

	return epoll_ctl(dev->rx_epfd, op, ep->fd, &ev) == 0;
}

/*
 * Put every endpoint in rx_epfd (@on) or take them all out; with more than
 * UMC_RX_FEW endpoints they stay in.  Returns whether they are all in it
 * now.  Context: watch_lock held.
 *
 * Only two readers need that set: a pass over many endpoints, and the
 * background thread about to sleep.  A socket in an epoll set makes every
 * datagram that reaches it run the set's wake-up callback, in the softirq
 * that queues it (on loopback, in the sender's sendmmsg), whether anyone
 * waits on the set or not: with the receiver's socket in its set, a
 * 64-byte ping-pong's sendmmsg took 0.13-0.15 us longer
 * (bench/critpath.c), and a sender that fans out to four receivers pays
 * it four times per datagram (bench/README.md, "Where the round trip
 * goes").  So the sockets of a program that is receiving are in no set:
 * the thread fills the set before it sleeps on it and empties it when it
 * sees the program receiving, and a program that polls while the thread
 * sleeps on the set wakes it through rx_kick (umc_rx_kick).
 */
static bool __umc_rx_epoll(struct umc_device *dev, bool on)
{
	on |= dev->rx_nep > UMC_RX_FEW;
	if (atomic_load_explicit(&dev->rx_epolled, memory_order_relaxed) == on)
		return on;
	for (int i = 0; i < dev->rx_nep; i++) {
		if (!umc_rx_epoll_ctl(dev, dev->rx_eps[i], on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL) &&
		    on) {
			while (i--)
				umc_rx_epoll_ctl(dev, dev->rx_eps[i], EPOLL_CTL_DEL);
			return false;
		}
	}
	atomic_store_explicit(&dev->rx_epolled, on, memory_order_relaxed);
	if (!on && dev->rx_kick >= 0) {
		uint64_t v;

		if (umc_sys_read(dev->rx_kick, &v, sizeof(v)) < 0) {
			/* EAGAIN: no kick was pending */
		}
	}
	return on;
}

static bool umc_rx_epoll(struct umc_device *dev, bool on)
{
	pthread_mutex_lock(&dev->watch_lock);
	on = __umc_rx_epoll(dev, on);
	pthread_mutex_unlock(&dev->watch_lock);
	return on;
}

/*
 * A poller found the set full, so the thread sleeps on it or is about to:
 * wake it once, so that it sees the program receiving and empties the set.
 * Context: rx_lock held (rx_nep).
 */
static void umc_rx_kick(struct umc_device *dev)
{
	uint64_t one = 1;

	if (dev->rx_nep > UMC_RX_FEW || dev->rx_kick < 0 ||
	    atomic_exchange_explicit(&dev->rx_kicked, true, memory_order_relaxed))
		return;
	if (umc_sys_write(dev->rx_kick, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, so the thread is woken anyway. */
	}
}

int umc_rx_add(struct umc_device *dev, struct umc_rx_ep *ep)
{
	int ret = 0;

	pthread_mutex_lock(&dev->watch_lock);
	if (dev->rx_nep == dev->rx_cap) {
		int cap = dev->rx_cap ? 2 * dev->rx_cap : 8;
		struct umc_rx_ep **grown = realloc(dev->rx_eps, cap * sizeof(*grown));

		if (grown) {
			dev->rx_eps = grown;
			dev->rx_cap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret && atomic_load_explicit(&dev->rx_epolled, memory_order_relaxed) &&
	    !umc_rx_epoll_ctl(dev, ep, EPOLL_CTL_ADD))
		ret = -errno;
	if (!ret) {
		ep->seen = dev->rx_got; /* hot until the others deliver without it */
		dev->rx_eps[dev->rx_nep++] = ep;
		/* One too many for the passes' one syscall each: into the set, all. */
		if (dev->rx_nep == UMC_RX_FEW + 1 && !__umc_rx_epoll(dev, true)) {
			ret = errno ? -errno : -ENOMEM;
			dev->rx_nep--;
		}
	}
	if (!ret)
		umc_chan_watch_fd(dev, ep->fd, EPOLL_CTL_ADD);
	pthread_mutex_unlock(&dev->watch_lock);
	if (ret)
		return ret;
	if (!dev->rx_thread)
		umc_rx_thread_start(dev);
	return 0;
}

void umc_rx_del(struct umc_device *dev, struct umc_rx_ep *ep)
{
	pthread_mutex_lock(&dev->watch_lock);
	if (atomic_load_explicit(&dev->rx_epolled, memory_order_relaxed))
		umc_rx_epoll_ctl(dev, ep, EPOLL_CTL_DEL);
	umc_chan_watch_fd(dev, ep->fd, EPOLL_CTL_DEL);
	for (int i = 0; i < dev->rx_nep; i++) {
		if (dev->rx_eps[i] == ep) {
			dev->rx_eps[i] = dev->rx_eps[--dev->rx_nep];
			break;
		}
	}
	if (!dev->rx_thread) /* nobody sleeps on the set: few again, it empties */
		__umc_rx_epoll(dev, false);
	pthread_mutex_unlock(&dev->watch_lock);
}

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

/* Drop the holds umc_sges_hold() took on the first @n SGEs. */
static void umc_sges_release(const struct ibv_sge *sge, int n)
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
static bool umc_sges_hold(struct ibv_pd *pd, const struct ibv_sge *sge, int n)
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
 * The receives lent for one burst (see the top of this file): the link's
 * view (lend), the landing QP and, per lent WQE, a copy of its SGEs (the
 * ring slot may be reused once its completion is reaped), whose MRs are
 * held until umc_rx_unlend().
 */
struct umc_rx_lender {
	struct umc_rx_lend lend;
	struct umc_qp *qp; /* NULL: nothing lent */
	uint32_t head;	   /* ring index of the WQE lent as land[0] */
	uint64_t lo, hi;   /* the span of the receives lent so far in this burst */
	int nsge[UMC_RX_BATCH];
	struct ibv_sge sge[UMC_RX_BATCH][UMC_MAX_SGE];
};

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
		pthread_spin_lock(&o->rq_lock);
		uint32_t n = o->rq_tail - o->rq_head < (uint32_t)k ? o->rq_tail - o->rq_head
								  : (uint32_t)k;

		for (uint32_t j = 0; j < n && !shared; j++) {
			const struct umc_rwqe *w = umc_rwqe_at(o, o->rq_head + j);

			shared = umc_rx_in_span(l, k, w->sge, w->num_sge);
		}
		pthread_spin_unlock(&o->rq_lock);
	}
	return shared;
}

/* Can @qp receive (IBA 10.3.1: RTR, RTS and SQD/SQE accept packets)? */
static bool umc_qp_receiving(struct umc_qp *qp)
{
	enum ibv_qp_state st = umc_qp_state(qp);

	return st == IBV_QPS_RTR || st == IBV_QPS_RTS || st == IBV_QPS_SQE;
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
static void umc_rx_unlend(struct umc_device *dev)
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
static const struct umc_rx_lend *umc_rx_lend(struct umc_device *dev, struct umc_rx_ep *ep,
					     int max)
{
	static const struct umc_rx_lend none;
	struct umc_rx_lender *l = dev->rx_lender;
	struct umc_qp *qp;
	int k = 0, want;

	if (!ep->mcg)
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
	pthread_spin_lock(&qp->rq_lock);
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
	pthread_spin_unlock(&qp->rq_lock);
	if (k && (dev->qp_list != qp || qp->next) && umc_rx_lend_shared(l, dev, k))
		umc_rx_unlend(dev);
	if (!l->lend.n)
		l->qp = NULL;
	return &l->lend;
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
		return;
	}
	if (umc_unlikely(!umc_pkey_match(pkt->hdr.bth.pkey, dev->pkeys[qp->pkey_index]))) {
		CNT(dev, rx_pkey_viol);
		return;
	}
	/* Read after the state (acquire): a Q_Key set with the state is seen. */
	if (umc_unlikely(pkt->hdr.deth.qkey !=
			 atomic_load_explicit(&qp->qkey, memory_order_relaxed))) {
		CNT(dev, rx_qkey_viol);
		return;
	}

	pthread_spin_lock(&qp->rq_lock);
	if (umc_unlikely(qp->rq_head == qp->rq_tail)) {
		pthread_spin_unlock(&qp->rq_lock);
		CNT(dev, rx_no_recv);
		return;
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
		pthread_spin_unlock(&qp->rq_lock);
		return;
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
		pthread_spin_unlock(&qp->rq_lock);
		return;
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
	pthread_spin_unlock(&qp->rq_lock);
}

/*
 * Hand @pkt to its QPs: DestQP 0xFFFFFF to every QP attached to its group
 * (none: counted), another DestQP to that QP of this device (rxe
 * hdr_check).  A group packet sent by a local QP created with
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB goes to no QP of this device.
 */
static void umc_deliver(struct umc_device *dev, const struct umc_rx_pkt *pkt)
{
	struct umc_mcg *mcg = pkt->mcg;

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
		else
			umc_qp_recv(mcg->qps[i], pkt);
	}
	if (attached)
		umc_qp_recv(last, pkt);
}

/* At most this many batches per endpoint per call, so no endpoint starves the rest. */
enum { UMC_RX_BURSTS = 4 };

/*
 * Read @ep until it is empty, or for UMC_RX_BURSTS batches.  @woken: the
 * pass of a thread that a datagram woke (umc_progress_hot); an endpoint it
 * empties is marked fresh ("Woken drains" at the top of this file).
 */
UMC_HOT
static int umc_ep_drain(struct umc_device *dev, struct umc_rx_ep *ep, bool woken)
{
	struct umc_rx_pkt pkts[UMC_RX_BATCH];
	bool more = true;
	int total = 0;

	for (int b = 0; b < UMC_RX_BURSTS && more; b++) {
		const struct umc_rx_lend *lend = umc_rx_lend(dev, ep, UMC_RX_BATCH);
		int n = dev->link->rx_burst(dev, ep, pkts, UMC_RX_BATCH, &more, lend);

		for (int i = 0; i < n; i++)
			umc_deliver(dev, &pkts[i]);
		umc_rx_unlend(dev);
		/* An empty poll halves the hint: a quiet endpoint ends up lending one. */
		ep->lend_hint = n ? n : ep->lend_hint / 2;
		if (n)
			ep->lend_spare = pkts[n - 1].len >= UMC_RX_SPARE_LEND_MIN;
		ep->reads++;
		total += n;
	}
	ep->fresh = woken && !more;
	if (total) {
		dev->rx_got += (unsigned long)total;
		ep->seen = dev->rx_got;
	}
	return total;
}

/* Is @ep cold: did the other endpoints deliver UMC_RX_COLD_AFTER packets since it did? */
static bool umc_ep_cold(const struct umc_device *dev, const struct umc_rx_ep *ep)
{
	return dev->rx_got - ep->seen >= UMC_RX_COLD_AFTER;
}

/* Which endpoints a pass reads: all, or cold ones only in their turn, or never. */
enum umc_pass { UMC_PASS_ALL, UMC_PASS_BUSY, UMC_PASS_HOT };

/* One pass over the endpoints; *@skipped (if given): it left a cold one out. */
UMC_HOT
static int umc_progress_pass(struct umc_device *dev, enum umc_pass mode, bool *skipped)
{
	struct epoll_event ev[UMC_RX_BATCH];
	int total = 0, n;

	/* Few endpoints: try each (one syscall each); many: ask epoll first. */
	if (dev->rx_nep <= UMC_RX_FEW) {
		bool cold_turn = mode == UMC_PASS_ALL ||
				 (mode == UMC_PASS_BUSY && dev->rx_pass++ % UMC_RX_COLD_STRIDE == 0);

		for (int i = 0; i < dev->rx_nep; i++) {
			struct umc_rx_ep *ep = dev->rx_eps[i];

			if (!cold_turn && umc_ep_cold(dev, ep)) {
				if (skipped)
					*skipped = true;
			} else if (mode == UMC_PASS_BUSY && ep->fresh) {
				ep->fresh = false; /* spared once */
			} else {
				total += umc_ep_drain(dev, ep, mode == UMC_PASS_HOT);
			}
		}
		return total;
	}
	n = umc_sys_epoll_poll(dev->rx_epfd, ev, UMC_RX_BATCH);
	for (int i = 0; i < n; i++)
		if (ev[i].data.ptr) /* not rx_kick: the thread reads that */
			total += umc_ep_drain(dev, ev[i].data.ptr, false);
	return total;
}

/*
 * Tell the background thread that an application thread, this one, is
 * receiving.  The thread's ID is looked up once per thread and fork (a
 * child's thread inherits its parent's copy).  Every poll comes here, so
 * the cache is one initial-exec TLS variable: one %fs-relative access,
 * where the shared library's default (global-dynamic) model costs two
 * calls to __tls_get_addr.
 */
static void umc_app_mark(struct umc_device *dev)
{
	static __thread __attribute__((tls_model("initial-exec"))) struct {
		int tid;
		unsigned gen; /* umc_fork_gen when tid was read */
	} self;

	if (umc_unlikely(!self.tid || umc_forked(self.gen))) {
		self.tid = (int)syscall(SYS_gettid);
		self.gen = umc_fork_gen;
	}
	atomic_fetch_add_explicit(&dev->rx_app_gen, 1, memory_order_relaxed);
	atomic_store_explicit(&dev->rx_app_tid, self.tid, memory_order_relaxed);
}

int __umc_progress(struct umc_device *dev)
{
	return umc_progress_pass(dev, UMC_PASS_ALL, NULL);
}

UMC_HOT
int umc_progress(struct umc_device *dev, bool wait)
{
	int n;

	umc_app_mark(dev);
	if (wait)
		pthread_mutex_lock(&dev->rx_lock);
	else if (pthread_mutex_trylock(&dev->rx_lock)) {
		/*
		 * Another thread runs the engine.  An application thread's pass
		 * serves us too: its completions are there to pop.  The
		 * background thread is not waited out by spinning: on a CPU
		 * that receivers share it may be preempted holding the lock,
		 * and a poller spinning here for its time slice keeps it from
		 * running while the sockets fill and drop.  It stops after its
		 * pass, seeing rx_app_gen moved, so sleep on the lock.
		 */
		if (!atomic_load_explicit(&dev->rx_thread_in, memory_order_relaxed))
			return 0;
		pthread_mutex_lock(&dev->rx_lock);
	}
	if (umc_unlikely(atomic_load_explicit(&dev->rx_epolled, memory_order_relaxed)))
		umc_rx_kick(dev);
	n = umc_progress_pass(dev, wait ? UMC_PASS_ALL : UMC_PASS_BUSY, NULL);
	pthread_mutex_unlock(&dev->rx_lock);
	return n;
}

UMC_HOT
int umc_progress_hot(struct umc_device *dev, bool *skipped)
{
	int n;

	*skipped = false;
	umc_app_mark(dev);
	pthread_mutex_lock(&dev->rx_lock);
	n = umc_progress_pass(dev, UMC_PASS_HOT, skipped);
	pthread_mutex_unlock(&dev->rx_lock);
	return n;
}

/*
 * Is the application receiving by itself?  Yes if one of its threads runs
 * the engine during the next @us microseconds, which the thread sleeps.
 */
static bool umc_app_receiving(struct umc_device *dev, long us)
{
	unsigned long gen = atomic_load_explicit(&dev->rx_app_gen, memory_order_relaxed);
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return atomic_load_explicit(&dev->rx_app_gen, memory_order_relaxed) != gen;
}

/*
 * The scheduler's state letter of this process's thread @tid (proc(5),
 * /proc/self/task/TID/stat: R running or runnable, S asleep, ...); 0 if it
 * cannot be read (no /proc, the thread is gone).
 */
static char umc_task_state(int tid)
{
	char path[64], buf[512];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	p = strrchr(buf, ')'); /* the name before it may hold anything */
	return p && p[1] == ' ' ? p[2] : 0;
}

/*
 * The CPU time of this process's thread @tid so far (ns), counted up to
 * now even while it runs; false if the thread is gone.  The clock is the
 * one pthread_getcpuclockid(3) gives for it, made from the thread ID as
 * glibc makes it (Linux: ~tid << 3, per-thread, scheduler clock), so a
 * thread that has exited is an error, not a dangling pthread_t.
 */
static bool umc_task_cputime(int tid, uint64_t *ns)
{
	enum { CPUCLOCK_PERTHREAD = 4, CPUCLOCK_SCHED = 2 };
	clockid_t clk = (clockid_t)(~(unsigned)tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED);
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return false;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return true;
}

/*
 * Is the application thread that last ran the engine only waiting for its
 * turn on a CPU?  Called when it has not run the engine for a whole idle
 * period: a busy poller that got a CPU at all would have.  It is if it is
 * runnable and, during UMC_RX_PROBE_US more, either runs the engine (its
 * turn came) or gets less than a tenth of that on a CPU.  Busy receivers
 * that share a CPU wait so for their turns; a stand-in that ran meanwhile
 * would join the CPU's rotation and make every other receiver's turn come
 * later, past what its socket buffer holds (bench/README.md, "Fan-out and
 * the background receive thread").  An application asleep, or computing
 * (CPU time without the engine), is away, and so is one whose thread
 * cannot be seen.
 */
static bool umc_app_waiting(struct umc_device *dev)
{
	int tid = atomic_load_explicit(&dev->rx_app_tid, memory_order_relaxed);
	uint64_t t0, t1;

	if (!tid || umc_task_state(tid) != 'R' || !umc_task_cputime(tid, &t0))
		return false;
	if (umc_app_receiving(dev, UMC_RX_PROBE_US))
		return true;
	return umc_task_cputime(tid, &t1) && t1 - t0 < UMC_RX_PROBE_US * 100u &&
	       umc_task_state(tid) == 'R';
}

/* Deliver for as long as data comes and the application stays away; returns how many. */
static int umc_rx_drain_away(struct umc_device *dev)
{
	int total = 0;

	for (;;) {
		unsigned long gen = atomic_load_explicit(&dev->rx_app_gen, memory_order_relaxed);
		int n;

		pthread_mutex_lock(&dev->rx_lock);
		atomic_store_explicit(&dev->rx_thread_in, true, memory_order_relaxed);
		n = __umc_progress(dev);
		atomic_store_explicit(&dev->rx_thread_in, false, memory_order_relaxed);
		pthread_mutex_unlock(&dev->rx_lock);
		total += n;
		if (!n || atomic_load_explicit(&dev->rx_app_gen, memory_order_relaxed) != gen)
			return total;
	}
}

/* The next idle period: twice @idle, at most UMC_RX_IDLE_MAX_US. */
static long umc_rx_idle_grow(long idle)
{
	return idle * 2 > UMC_RX_IDLE_MAX_US ? UMC_RX_IDLE_MAX_US : idle * 2;
}

/*
 * The receive thread's scheduling policy: SCHED_BATCH while it only looks
 * at the application, SCHED_OTHER while it stands in; *@batch says which
 * it has, @want which it should.  A sleeper that wakes at SCHED_OTHER
 * preempts the thread running on its CPU (the kernel favours wake-ups), so
 * every look cut a busy receiver's turn short on a CPU that receivers
 * share, and the scheduler, evening the turns out, then ran another
 * receiver twice while one waited 16-20 ms instead of 12, past what its
 * socket buffer holds (bench/README.md, "Fan-out and the background
 * receive thread").  At SCHED_BATCH a look waits for the running turn to
 * end.  Standing in, the thread competes as before, so a program that
 * computes on its CPU is stood in for as soon as before.
 *
 * The thread moves only between these two, and only while the policy is
 * its own: it starts moving only at SCHED_OTHER (a policy inherited from
 * the application is kept), and returns false, for good, when its policy
 * is no longer the one it set (chrt -p on its ID, or -a on the process,
 * gave it another) or when the kernel refuses SCHED_BATCH (a seccomp
 * filter).  Any thread may move between the two (sched(7)).
 */
static bool umc_rx_policy(bool *batch, bool want)
{
	struct sched_param sp = {0};

	if (*batch == want)
		return true;
	if (sched_getscheduler(0) != (*batch ? SCHED_BATCH : SCHED_OTHER))
		return false;
	if (pthread_setschedparam(pthread_self(), want ? SCHED_BATCH : SCHED_OTHER, &sp))
		return !want;
	*batch = want;
	return true;
}

/*
 * The background receiver.  While an application thread is receiving it
 * only looks every idle period (doubling up to UMC_RX_IDLE_MAX_US) and
 * never waits on the sockets, so it does not wake up (on the application's
 * CPU) for each datagram.  Once the application has been idle for a whole
 * period, it drains what waits if a CQ is armed (the waiter sleeps on the
 * sockets itself; a drain that finds nothing doubles the period too, so a
 * program asleep on an idle channel is not woken every 50 us, and one that
 * finds something starts again from UMC_RX_IDLE_US: nobody waits), and
 * otherwise waits for data and delivers it unless the application takes
 * it within another period; then it keeps draining for as long as data
 * comes and the application stays away.  Lives as long as the process.
 */
static void *umc_rx_thread(void *arg)
{
	struct umc_device *dev = arg;
	long idle = UMC_RX_IDLE_US;
	struct epoll_event ev;
	bool batch = false;
	/*
	 * The kernel's word, not pthread_getschedparam's: glibc answers from
	 * what its last pthread_setschedparam set, in this thread copied from
	 * the creator's, and a sched_setscheduler(2) since is not in it.
	 */
	bool may_batch = sched_getscheduler(0) == SCHED_OTHER;

	for (;;) {
		if (umc_app_receiving(dev, idle)) {
			if (dev->rx_kick >= 0) /* without it, nothing would wake a sleep on the set */
				umc_rx_epoll(dev, false);
			idle = umc_rx_idle_grow(idle);
			if (may_batch)
				may_batch = umc_rx_policy(&batch, true);
			continue;
		}
		/*
		 * idle stays where it is: an application that received before
		 * may only be descheduled (receivers sharing a CPU look idle
		 * for whole time slices), so keep giving it long windows, and
		 * none of its time while it waits for a CPU.
		 */
		if (umc_app_waiting(dev))
			continue;
		if (may_batch) /* stands in: at its own policy */
			may_batch = umc_rx_policy(&batch, false);
		if (atomic_load_explicit(&dev->cq_armed, memory_order_relaxed) > 0) {
			idle = umc_rx_drain_away(dev) ? UMC_RX_IDLE_US : umc_rx_idle_grow(idle);
			continue;
		}
		/* Cleared before the set fills: a poller that sees it full kicks. */
		atomic_store_explicit(&dev->rx_kicked, false, memory_order_relaxed);
		if (!umc_rx_epoll(dev, true)) { /* no memory for the set: drain every period */
			umc_rx_drain_away(dev);
			continue;
		}
		if (epoll_wait(dev->rx_epfd, &ev, 1, -1) <= 0)
			continue;
		if (!ev.data.ptr) { /* rx_kick: the program polls again (emptying reads it) */
			umc_rx_epoll(dev, false);
			continue;
		}
		if (umc_app_receiving(dev, idle))
			continue;
		umc_rx_drain_away(dev);
	}
	return NULL;
}

/* rx_kick, in rx_epfd with data.ptr NULL; stays -1 if either fails. */
static void umc_rx_kick_open(struct umc_device *dev)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	int fd = UMC_FD_NEW(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), false);

	if (fd < 0)
		return;
	if (epoll_ctl(dev->rx_epfd, EPOLL_CTL_ADD, fd, &ev)) {
		umc_fd_close(fd);
		return;
	}
	dev->rx_kick = fd;
}

/* Caller holds rx_lock. */
static void umc_rx_thread_start(struct umc_device *dev)
{
	const char *env = getenv("UMC_RX_THREAD");

	if (env && *env == '0')
		return;
	/*
	 * Without its kick, the set is only ever emptied with nobody asleep
	 * on it.  Made once: a failed pthread_create comes back here.
	 */
	if (dev->rx_kick < 0)
		umc_rx_kick_open(dev);
	dev->rx_thread = umc_thread_start(NULL, true, umc_rx_thread, dev, UMC_RX_THREAD_NAME) == 0;
}
