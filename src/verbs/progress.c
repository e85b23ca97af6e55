/* SPDX-License-Identifier: MIT */
/*
 * progress.c - the receive engine: datagrams in, receive completions out.
 *
 * Whoever needs completions runs the engine: ibv_poll_cq on an empty CQ,
 * ibv_get_cq_event, attach and detach.  A program that polls therefore
 * receives on its own thread, with no hand-off.  A program that posted
 * receives and then does something else must still get them filled, as a
 * NIC would: a background thread per device, started with the device's
 * first receive endpoint, runs the engine when no application thread has
 * run it for a while (rx_thread.c).
 *
 * The engine reads the receive endpoints the link registered in batches
 * (link rx_burst: on RoCE recvmmsg, decode, ICRC), each into posted
 * receives lent to the link for it (rx_lend.c), and hands the batch to
 * delivery (rx_deliver.c), which completes the receive WQEs of the QPs
 * that take its packets.  umc_ep_drain is the one place where a burst
 * goes from the link to delivery.  rx_lock serializes the engine; it is
 * taken before dev->lock.
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
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "verbs/rx_int.h"

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
 * waits on the set or not: with the receiver's socket in its set, every
 * send to it takes longer, and a sender that fans out pays that once per
 * receiver (the figures: bench/README.md, "Where the round trip goes",
 * measured with bench/critpath.c).  So the sockets of a program that is receiving are in no set:
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

bool umc_rx_epoll(struct umc_device *dev, bool on)
{
	umc_mutex_lock(&dev->watch_lock, UMC_LOCK_WATCH);
	on = __umc_rx_epoll(dev, on);
	umc_mutex_unlock(&dev->watch_lock);
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

	umc_mutex_lock(&dev->watch_lock, UMC_LOCK_WATCH);
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
		dev->rx_narm += ep->arm != NULL;
		/* One too many for the passes' one syscall each: into the set, all. */
		if (dev->rx_nep == UMC_RX_FEW + 1 && !__umc_rx_epoll(dev, true)) {
			ret = errno ? -errno : -ENOMEM;
			dev->rx_nep--;
		}
	}
	if (!ret)
		umc_chan_watch_fd(dev, ep->fd, EPOLL_CTL_ADD);
	umc_mutex_unlock(&dev->watch_lock);
	if (ret)
		return ret;
	if (ep->arm && umc_rx_may_sleep(dev)) /* a waiter sleeps already: it must hear this one */
		ep->arm(dev, ep);
	if (!dev->rx_thread)
		umc_rx_thread_start(dev);
	return 0;
}

void umc_rx_del(struct umc_device *dev, struct umc_rx_ep *ep)
{
	umc_mutex_lock(&dev->watch_lock, UMC_LOCK_WATCH);
	if (atomic_load_explicit(&dev->rx_epolled, memory_order_relaxed))
		umc_rx_epoll_ctl(dev, ep, EPOLL_CTL_DEL);
	umc_chan_watch_fd(dev, ep->fd, EPOLL_CTL_DEL);
	for (int i = 0; i < dev->rx_nep; i++) {
		if (dev->rx_eps[i] == ep) {
			dev->rx_eps[i] = dev->rx_eps[--dev->rx_nep];
			dev->rx_narm -= ep->arm != NULL;
			break;
		}
	}
	if (!dev->rx_thread) /* nobody sleeps on the set: few again, it empties */
		__umc_rx_epoll(dev, false);
	umc_mutex_unlock(&dev->watch_lock);
}

void umc_rx_arm(struct umc_device *dev)
{
	if (!__atomic_load_n(&dev->rx_narm, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&dev->rx_lock);
	for (int i = 0; i < dev->rx_nep; i++)
		if (dev->rx_eps[i]->arm)
			dev->rx_eps[i]->arm(dev, dev->rx_eps[i]);
	pthread_mutex_unlock(&dev->rx_lock);
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

		/* The one hand-over from the link to delivery. */
		umc_rx_deliver_burst(dev, ep, pkts, n);
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

	/* Datagrams the fault stage held back come first, once due. */
	if (umc_unlikely(umc_fault_on(dev, UMC_FAULT_ON_RX)))
		umc_rx_deliver_due(dev);
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
		if (ev[i].data.ptr && !((struct umc_rx_ep *)ev[i].data.ptr)->arm)
			total += umc_ep_drain(dev, ev[i].data.ptr, false); /* not rx_kick */
	/* Endpoints whose fd is readable only for a sleeper (ep->arm): each pass, no syscall. */
	for (int i = 0; dev->rx_narm && i < dev->rx_nep; i++)
		if (dev->rx_eps[i]->arm)
			total += umc_ep_drain(dev, dev->rx_eps[i], false);
	return total;
}

/*
 * Tell the background thread that an application thread, this one, is
 * receiving (rx_sched.c: umc_app_receiving, umc_app_waiting).  The thread's ID is looked up once per thread and fork (a
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
		umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	else if (umc_mutex_trylock(&dev->rx_lock, UMC_LOCK_DEV_RX)) {
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
		umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	}
	if (umc_unlikely(atomic_load_explicit(&dev->rx_epolled, memory_order_relaxed)))
		umc_rx_kick(dev);
	n = umc_progress_pass(dev, wait ? UMC_PASS_ALL : UMC_PASS_BUSY, NULL);
	umc_mutex_unlock(&dev->rx_lock);
	return n;
}

UMC_HOT
int umc_progress_hot(struct umc_device *dev, bool *skipped)
{
	int n;

	*skipped = false;
	umc_app_mark(dev);
	umc_mutex_lock(&dev->rx_lock, UMC_LOCK_DEV_RX);
	n = umc_progress_pass(dev, UMC_PASS_HOT, skipped);
	umc_mutex_unlock(&dev->rx_lock);
	return n;
}
