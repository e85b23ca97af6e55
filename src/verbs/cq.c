/* SPDX-License-Identifier: MIT */
/*
 * cq.c - completion queues and completion channels.
 *
 * A CQ is a power-of-two ring of struct ibv_wc under a spinlock.  Producers
 * are post_send (send completions) and the progress engine (receive
 * completions); the consumer is ibv_poll_cq, which runs the progress engine
 * itself when the ring is empty, so a busy-polling program needs no other
 * thread.
 *
 * A completion channel's fd is an epoll set of two things.  One is one end
 * of a socketpair that holds one byte exactly while at least one CQ event
 * is queued on the channel and no ibv_get_cq_event call is about to take
 * it (the byte is written when the queue becomes non-empty and read when it
 * becomes empty), so poll(2) on the fd says what libibverbs' does, an event
 * is ready, for any number of events.  The other is the device's receive
 * endpoints (its sockets), while the channel watches them: from the first
 * ibv_req_notify_cq on one of its CQs until an ibv_get_cq_event finds no
 * event with none of them armed.  They are in the set themselves, not
 * behind the device's receive epoll: each level of nested epoll costs the
 * woken program another scan and lock in the kernel before poll(2)
 * returns; umc_rx_add/del keep every watching channel's set in step with
 * the endpoints.  A program asleep in poll(2) on the fd, or in
 * ibv_get_cq_event (which waits on the same set and runs the receive
 * engine when it wakes), is therefore woken by the arriving datagram
 * itself, in the kernel, with no other thread or timer in the path;
 * ibv_get_cq_event receives the datagram and returns the event it raised.
 * The price: a datagram that raises no event on the channel (its CQ armed
 * for solicited events only, a CQ of another channel, a drop) may wake the
 * fd spuriously; a non-blocking ibv_get_cq_event then says EAGAIN, a
 * blocking one waits for the next event, as after a spurious wake-up of
 * libibverbs (umcast(7)).
 *
 * Waking a sleeping program costs syscalls on its critical path, so the
 * path of an event is kept to what raw UDP needs: the socketpair's byte is
 * not written at all when the ibv_get_cq_event call that ran the engine
 * takes the event itself (@takers), and the watch is switched on and off
 * lazily, not per event.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "verbs/verbs_int.h"

/* ------------------------------------------------------------------------- */
/* Completion channels (ibv_create_comp_channel(3)).                          */

UMC_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct umc_comp_channel *ch;
	struct epoll_event ev = {.events = EPOLLIN};
	struct umc_device *dev = ctx_dev(context);
	int ret;

	if (umc_dev_forked(dev))
		return umc_null_errno(-EIO);
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return umc_null_errno(-ENOMEM);
	ch->notify[0] = ch->notify[1] = -1;
	/* The user's fd; it blocks unless the user sets O_NONBLOCK on it. */
	ch->epfd = UMC_FD_NEW(epoll_create1(EPOLL_CLOEXEC), true);
	ret = ch->epfd < 0 ? -errno : 0;
	if (!ret)
		ret = umc_fd_socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
					ch->notify, false);
	ev.data.fd = ch->notify[0];
	if (!ret && epoll_ctl(ch->epfd, EPOLL_CTL_ADD, ch->notify[0], &ev))
		ret = -errno;
	if (ret) {
		umc_fd_close(ch->epfd);
		umc_fd_close(ch->notify[0]);
		umc_fd_close(ch->notify[1]);
		free(ch);
		return umc_null_errno(ret);
	}
	ch->ch.fd = ch->epfd;
	ch->ch.context = context;
	ch->dev = dev;
	ch->pending_tail = &ch->pending;
	pthread_mutex_init(&ch->lock, NULL);
	umc_mutex_lock(&dev->watch_lock, UMC_LOCK_WATCH);
	ch->dev_next = dev->chans;
	dev->chans = ch;
	umc_mutex_unlock(&dev->watch_lock);
	return &ch->ch;
}

/* ibv_destroy_comp_channel(3): EBUSY while a CQ still uses the channel. */
UMC_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct umc_comp_channel *ch = to_uchan(channel);

	if (umc_dev_forked(ch->dev))
		return umc_pos_errno(-EIO);
	if (__atomic_load_n(&channel->refcnt, __ATOMIC_ACQUIRE))
		return umc_pos_errno(-EBUSY);
	umc_mutex_lock(&ch->dev->watch_lock, UMC_LOCK_WATCH);
	for (struct umc_comp_channel **p = &ch->dev->chans; *p; p = &(*p)->dev_next) {
		if (*p == ch) {
			*p = ch->dev_next;
			break;
		}
	}
	umc_mutex_unlock(&ch->dev->watch_lock);
	umc_fd_close(ch->epfd);
	umc_fd_close(ch->notify[0]);
	umc_fd_close(ch->notify[1]);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

/*
 * Keep the socketpair's byte in step with the queue: there while an event
 * is pending and no ibv_get_cq_event call that ran the engine is about to
 * take it (such a call takes the first event itself and calls this
 * again), gone otherwise.  A syscall only when that changes, so the
 * socketpair never holds more than one byte and never fills.  Caller holds
 * ch->lock.
 */
static void __umc_chan_sync(struct umc_comp_channel *ch)
{
	static const char one = 1;
	bool want = ch->pending && !ch->takers;
	char byte;

	if (want == ch->byte)
		return;
	if (want)
		(void)!umc_sys_write(ch->notify[1], &one, 1);
	else
		(void)!umc_sys_recv(ch->notify[0], &byte, 1, MSG_DONTWAIT);
	ch->byte = want;
}

/* Queue @cq's event on its channel. */
static void umc_chan_raise(struct umc_comp_channel *ch, struct umc_cq *cq)
{
	umc_mutex_lock(&ch->lock, UMC_LOCK_COMP_CHANNEL);
	if (!cq->notify_pending) {
		cq->notify_pending = true;
		cq->notify_next = NULL;
		*ch->pending_tail = cq;
		ch->pending_tail = &cq->notify_next;
		__umc_chan_sync(ch);
	}
	umc_mutex_unlock(&ch->lock);
}

/*
 * A failed add (ENOMEM) is left so, here and below: that endpoint's
 * datagrams then wake no waiter, but the background thread still delivers
 * them, raising the event, within its idle period.
 */
void umc_chan_watch_fd(struct umc_device *dev, int fd, int op)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	for (struct umc_comp_channel *ch = dev->chans; ch; ch = ch->dev_next)
		if (ch->watched)
			(void)epoll_ctl(ch->epfd, op, fd, &ev);
}

/* Put the device's receive endpoints in @ch's epoll set (@on) or take them out. */
static void __umc_chan_watch_set(struct umc_comp_channel *ch, bool on)
{
	struct umc_device *dev = ch->dev;
	struct epoll_event ev = {.events = EPOLLIN};

	umc_mutex_lock(&dev->watch_lock, UMC_LOCK_WATCH);
	if (ch->watched != on) {
		for (int i = 0; i < dev->rx_nep; i++) {
			ev.data.fd = dev->rx_eps[i]->fd;
			(void)epoll_ctl(ch->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL,
					dev->rx_eps[i]->fd, &ev);
		}
		ch->watched = on;
	}
	umc_mutex_unlock(&dev->watch_lock);
}

/*
 * A CQ of @ch was just armed (ch->armed already counts it): watch the
 * receive sockets from now on, unless the channel already does.  The
 * check and umc_chan_unwatch() form a Dekker pair on (armed, watching),
 * both sequentially consistent, so an arm is never left unwatched.
 */
static void umc_chan_watch(struct umc_comp_channel *ch)
{
	if (atomic_load(&ch->watching))
		return;
	umc_mutex_lock(&ch->lock, UMC_LOCK_COMP_CHANNEL);
	if (!atomic_load(&ch->watching)) {
		__umc_chan_watch_set(ch, true);
		atomic_store(&ch->watching, true);
	}
	umc_mutex_unlock(&ch->lock);
}

/* No event was found: stop watching if no CQ of @ch is armed. */
static void umc_chan_unwatch(struct umc_comp_channel *ch)
{
	if (!atomic_load(&ch->watching))
		return;
	umc_mutex_lock(&ch->lock, UMC_LOCK_COMP_CHANNEL);
	if (atomic_load(&ch->watching)) {
		atomic_store(&ch->watching, false);
		if (atomic_load(&ch->armed) == 0)
			__umc_chan_watch_set(ch, false);
		else
			atomic_store(&ch->watching, true);
	}
	umc_mutex_unlock(&ch->lock);
}

/* A CQ's arm ends (its event fired, or it is destroyed armed). */
static void umc_cq_disarmed(struct umc_cq *cq)
{
	atomic_fetch_sub(&to_uchan(cq->ibcq.channel)->armed, 1);
	atomic_fetch_sub_explicit(&cq->dev->cq_armed, 1, memory_order_relaxed);
}

/* Take @cq off its channel's list (destroy); caller holds ch->lock. */
static void __umc_chan_unlink(struct umc_comp_channel *ch, struct umc_cq *cq)
{
	for (struct umc_cq **p = &ch->pending; *p; p = &(*p)->notify_next) {
		if (*p != cq)
			continue;
		*p = cq->notify_next;
		if (ch->pending_tail == &cq->notify_next)
			ch->pending_tail = p;
		cq->notify_pending = false;
		__umc_chan_sync(ch);
		return;
	}
}

/*
 * Take the first event queued on @ch, if any, and count it as handed out
 * in the same step (umc_cq_release checks the count under this lock).
 * Caller holds ch->lock.
 */
static struct umc_cq *__umc_chan_take(struct umc_comp_channel *ch)
{
	struct umc_cq *ucq = ch->pending;

	if (!ucq)
		return NULL;
	ch->pending = ucq->notify_next;
	if (!ch->pending)
		ch->pending_tail = &ch->pending;
	ucq->notify_pending = false;
	atomic_fetch_add_explicit(&ucq->events, 1, memory_order_relaxed);
	__umc_chan_sync(ch);
	return ucq;
}

/*
 * libibverbs' blocking ibv_get_cq_event is a read(2) of the channel, whose
 * kernel wait returns -ERESTARTSYS: it sleeps through a stop and SIGCONT,
 * goes on after a handler installed with SA_RESTART, and fails with EINTR
 * after one without.  Ours sleeps in poll(2) on the channel's epoll set,
 * which also sleeps through a stop (the kernel restarts it when no handler
 * ran; epoll_wait(2) would fail), and fails with EINTR whenever a handler
 * ran, SA_RESTART or not.  Which handler ran is not known: the wait goes
 * on if every handler that a signal this thread takes can run has
 * SA_RESTART, and ends with EINTR if one has not, or if none is left (a
 * handler installed with SA_RESETHAND, as signal() makes under strict ISO
 * C, reset itself when it ran).  The fault signals are left out: they
 * come from the thread's own instructions, not while it sleeps.
 */
static bool umc_wait_restarts(void)
{
	sigset_t blocked;
	bool restarting = false;

	pthread_sigmask(SIG_BLOCK, NULL, &blocked);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
		    sig == SIGTRAP || sig == SIGSYS)
			continue;
		if (sigismember(&blocked, sig) == 1 || sigaction(sig, NULL, &sa))
			continue; /* blocked here, or glibc's own (EINVAL) */
		if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return false;
		restarting = true;
	}
	return restarting;
}

/*
 * ibv_get_cq_event(3): wait for the next CQ event on @channel.  Returns 0,
 * or -1 with errno EAGAIN when the channel fd is non-blocking and no event
 * is ready, EINTR when a signal handler without SA_RESTART interrupted the
 * wait (umc_wait_restarts), EIO for the parent's channel in a child of
 * fork.  Each round receives what waits on the device's sockets first: an
 * event it raises is taken at once, without the socketpair.
 */
UMC_HOT
UMC_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
				void **cq_context)
{
	struct umc_comp_channel *ch = to_uchan(channel);
	struct pollfd pfd = {.fd = ch->epfd, .events = POLLIN};
	bool interrupted = false;
	struct umc_cq *ucq;

	if (umc_dev_forked(ch->dev))
		return umc_minus1_errno(-EIO);
	for (;;) {
		umc_mutex_lock(&ch->lock, UMC_LOCK_COMP_CHANNEL);
		ucq = __umc_chan_take(ch);
		if (!ucq)
			ch->takers++;
		umc_mutex_unlock(&ch->lock);
		if (!ucq) {
			/*
			 * Datagrams may be waiting that would raise an event: on
			 * the endpoints that are not cold, or else on any.
			 */
			bool skipped;

			umc_progress_hot(ch->dev, &skipped);
			umc_mutex_lock(&ch->lock, UMC_LOCK_COMP_CHANNEL);
			if (skipped && !ch->pending) {
				umc_mutex_unlock(&ch->lock);
				umc_progress(ch->dev, true);
				umc_mutex_lock(&ch->lock, UMC_LOCK_COMP_CHANNEL);
			}
			ch->takers--;
			ucq = __umc_chan_take(ch);
			umc_mutex_unlock(&ch->lock);
		}
		if (ucq) {
			*cq = &ucq->ibcq;
			*cq_context = ucq->ibcq.cq_context;
			return 0;
		}
		umc_chan_unwatch(ch);
		if (fcntl(ch->ch.fd, F_GETFL) & O_NONBLOCK) /* the user's flag */
			return umc_minus1_errno(-EAGAIN);
		if (interrupted) /* as the kernel's wait, an event that came meanwhile first */
			return umc_minus1_errno(-EINTR);
		if (poll(&pfd, 1, -1) < 0) {
			if (errno != EINTR)
				return -1;
			interrupted = !umc_wait_restarts();
		}
	}
}

/* Destroy a released CQ (umc_cq_release), then its channel. */
static void umc_cq_release_now(struct ibv_cq *cq, struct ibv_comp_channel *ch)
{
	if (ibv_destroy_cq(cq) == 0 && ch)
		(void)ibv_destroy_comp_channel(ch);
}

/*
 * ibv_ack_cq_events(3).  Acking the last event of a CQ that
 * rdma_destroy_qp released destroys it (umc_cq_release).
 */
UMC_HOT
UMC_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	struct umc_cq *ucq = to_ucq(cq);
	struct ibv_comp_channel *ch = NULL;
	bool release = false;

	if (umc_ctx_forked(cq->context))
		return;
	umc_mutex_lock(&cq->mutex, UMC_LOCK_CQ_EVENTS);
	cq->comp_events_completed += nevents;
	if (ucq->release && cq->comp_events_completed == atomic_load(&ucq->events)) {
		ucq->release = false;
		release = true;
		ch = ucq->release_ch;
	}
	/* No signal of cq->cond: ibv_destroy_cq says EBUSY, it never waits on it. */
	umc_mutex_unlock(&cq->mutex);
	if (release)
		umc_cq_release_now(cq, ch);
}

/*
 * Under the lock of @ibcq's channel (then ibcq.mutex: the one place the
 * two nest), so that no ibv_get_cq_event takes an event of it meanwhile:
 * an event still queued is dropped, as the kernel drops the unread events
 * of a CQ it destroys, and every event taken before is counted.  @ibcq
 * has no QP left, so none is queued after.
 */
void umc_cq_release(struct ibv_cq *ibcq, struct ibv_comp_channel *ch)
{
	struct umc_cq *cq = to_ucq(ibcq);
	struct umc_comp_channel *own = ibcq->channel ? to_uchan(ibcq->channel) : NULL;
	bool now;

	if (own) {
		umc_mutex_lock(&own->lock, UMC_LOCK_COMP_CHANNEL);
		__umc_chan_unlink(own, cq);
	}
	umc_mutex_lock(&ibcq->mutex, UMC_LOCK_CQ_EVENTS);
	now = atomic_load(&cq->events) == ibcq->comp_events_completed;
	if (!now) {
		cq->release = true;
		cq->release_ch = ch;
	}
	umc_mutex_unlock(&ibcq->mutex);
	if (own)
		umc_mutex_unlock(&own->lock);
	if (now)
		umc_cq_release_now(ibcq, ch);
}

/* ------------------------------------------------------------------------- */
/* Completion queues (ibv_create_cq(3)).                                      */

/* ibv_create_cq(3): EINVAL for cqe < 1 or above the device limit. */
UMC_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					struct ibv_comp_channel *channel, int comp_vector)
{
	struct umc_cq *cq;
	uint32_t size = 1;

	if (umc_ctx_forked(context) || (channel && umc_dev_forked(to_uchan(channel)->dev)))
		return umc_null_errno(-EIO);
	if (cqe < 1 || cqe > UMC_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= context->num_comp_vectors)
		return umc_null_errno(-EINVAL);
	while (size < (uint32_t)cqe + 1)
		size <<= 1;
	cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->ring = calloc(size, sizeof(*cq->ring));
	if (!cq || !cq->ring) {
		free(cq);
		return umc_null_errno(-ENOMEM);
	}
	cq->mask = size - 1;
	cq->dev = ctx_dev(context);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->ibcq.context = context;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	cq->ibcq.cqe = (int)size - 1;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	if (channel)
		__atomic_fetch_add(&channel->refcnt, 1, __ATOMIC_RELAXED);
	return &cq->ibcq;
}

/*
 * ibv_destroy_cq(3): EBUSY while a QP still uses the CQ, or while a CQ
 * event ibv_get_cq_event returned is not acked yet (libibverbs waits for
 * the ack instead; umcast never blocks a destroy: see umcast(7)).
 */
UMC_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct umc_cq *cq = to_ucq(ibcq);
	bool unacked;

	if (umc_dev_forked(cq->dev))
		return umc_pos_errno(-EIO);
	umc_mutex_lock(&ibcq->mutex, UMC_LOCK_CQ_EVENTS);
	unacked = atomic_load(&cq->events) != ibcq->comp_events_completed;
	umc_mutex_unlock(&ibcq->mutex);
	if (atomic_load(&cq->usecnt) || unacked)
		return umc_pos_errno(-EBUSY);
	if (ibcq->channel) {
		struct umc_comp_channel *ch = to_uchan(ibcq->channel);

		umc_mutex_lock(&ch->lock, UMC_LOCK_COMP_CHANNEL);
		__umc_chan_unlink(ch, cq);
		umc_mutex_unlock(&ch->lock);
		__atomic_fetch_sub(&ibcq->channel->refcnt, 1, __ATOMIC_RELAXED);
	}
	if (cq->armed)
		umc_cq_disarmed(cq);
	pthread_spin_destroy(&cq->lock);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	free(cq->ring);
	free(cq);
	return 0;
}

/* Give @slots back to the work queue whose held count is *@wq_held. */
static inline void umc_wq_free(atomic_uint *wq_held, uint32_t slots)
{
	if (wq_held)
		atomic_fetch_sub_explicit(wq_held, slots, memory_order_relaxed);
}

UMC_HOT
bool umc_cq_push(struct umc_cq *cq, const struct ibv_wc *wc, bool solicited, atomic_uint *wq_held,
		 uint32_t slots)
{
	bool raise = false;
	struct umc_cqe *e;

	umc_spin_lock(&cq->lock, UMC_LOCK_CQ);
	if (umc_unlikely(cq->tail - cq->head > cq->mask)) {
		umc_wq_free(wq_held, slots);
		umc_spin_unlock(&cq->lock);
		CNT(cq->dev, cq_overflow);
		return false;
	}
	e = &cq->ring[cq->tail++ & cq->mask];
	e->wc = *wc;
	e->wq_held = wq_held;
	e->slots = slots;
	if (cq->armed == UMC_CQ_ARM_ANY || (cq->armed == UMC_CQ_ARM_SOLICITED && solicited)) {
		cq->armed = 0;
		umc_cq_disarmed(cq);
		raise = true;
	}
	umc_spin_unlock(&cq->lock);
	if (raise && cq->ibcq.channel)
		umc_chan_raise(to_uchan(cq->ibcq.channel), cq);
	return true;
}

void umc_cq_forget(struct umc_cq *cq, atomic_uint *wq_held)
{
	umc_spin_lock(&cq->lock, UMC_LOCK_CQ);
	for (uint32_t i = cq->head; i != cq->tail; i++)
		if (cq->ring[i & cq->mask].wq_held == wq_held)
			cq->ring[i & cq->mask].wq_held = NULL;
	atomic_store_explicit(wq_held, 0, memory_order_relaxed);
	umc_spin_unlock(&cq->lock);
}

/*
 * Reaping frees the slots (struct umc_cqe).  The slots are given back
 * under the CQ's lock, so umc_cq_forget() never races with a reaper that
 * still holds a pointer to the QP's count.
 */
static int umc_cq_pop(struct umc_cq *cq, int num, struct ibv_wc *wc)
{
	int n = 0;

	umc_spin_lock(&cq->lock, UMC_LOCK_CQ);
	while (n < num && cq->head != cq->tail) {
		const struct umc_cqe *e = &cq->ring[cq->head++ & cq->mask];

		wc[n++] = e->wc;
		umc_wq_free(e->wq_held, e->slots);
	}
	umc_spin_unlock(&cq->lock);
	return n;
}

/*
 * Busy pollers that share a CPU.  A thread that polls an empty CQ in a
 * loop keeps its CPU for the rest of its time slice; where several such
 * threads share one (16 receiver processes on a core), the one that has
 * work waits for the others' slices to run out.  So a thread whose
 * ibv_poll_cq found nothing UMC_POLL_YIELD_AFTER times in a row yields
 * its CPU (sched_yield(2)) at each further empty poll, until one finds a
 * completion: to a thread that has work if one is runnable there, and
 * back to itself at once if none is.  Aeron's BackoffIdleStrategy spins,
 * then yields, the same way.  A busy ping-pong polls a few dozen times
 * between two datagrams and never gets there.  $UMC_POLL_YIELD sets the
 * count; 0: never yield, as a NIC's CQ poll never does.  @found: this
 * poll returned a completion.
 */
static void umc_poll_idle(bool found)
{
	static _Atomic int after = -1;
	static __thread unsigned empty;
	int a;

	if (umc_likely(found)) {
		empty = 0;
		return;
	}
	a = atomic_load_explicit(&after, memory_order_relaxed);
	if (umc_unlikely(a < 0)) {
		const char *e = getenv("UMC_POLL_YIELD");

		a = e && *e ? atoi(e) : UMC_POLL_YIELD_AFTER;
		a = a < 0 ? 0 : a;
		atomic_store_explicit(&after, a, memory_order_relaxed);
	}
	if (a && ++empty >= (unsigned)a)
		sched_yield();
}

/* ibv_poll_cq(3): the number of completions (0..num_entries), never negative here. */
UMC_HOT
int umc_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct umc_cq *cq = to_ucq(ibcq);
	int n = umc_cq_pop(cq, num_entries, wc);

	if (num_entries <= 0)
		return 0;
	if (!n && umc_progress(cq->dev, false))
		n = umc_cq_pop(cq, num_entries, wc);
	umc_poll_idle(n > 0);
	return n;
}

/*
 * ibv_req_notify_cq(3): arm the CQ for one event: the next completion
 * (solicited_only 0), or the next solicited receive completion.
 * EINVAL when the CQ has no channel.
 */
UMC_HOT
int umc_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct umc_cq *cq = to_ucq(ibcq);
	bool first = false;

	if (!ibcq->channel)
		return umc_pos_errno(-EINVAL);
	umc_spin_lock(&cq->lock, UMC_LOCK_CQ);
	if (!cq->armed) {
		first = true;
		atomic_fetch_add(&to_uchan(ibcq->channel)->armed, 1);
		atomic_fetch_add_explicit(&cq->dev->cq_armed, 1, memory_order_relaxed);
	}
	/* "any" wins over "solicited only" until the event fires. */
	if (cq->armed != UMC_CQ_ARM_ANY)
		cq->armed = solicited_only ? UMC_CQ_ARM_SOLICITED : UMC_CQ_ARM_ANY;
	umc_spin_unlock(&cq->lock);
	/* Its waiter, in poll(2) on the fd perhaps, must be woken by the sockets. */
	if (first) {
		umc_chan_watch(to_uchan(ibcq->channel));
		umc_rx_arm(cq->dev); /* ... and by the endpoints that are not sockets */
	}
	return 0;
}
