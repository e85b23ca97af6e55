/* SPDX-License-Identifier: MIT */
/*
 * channel.c - RDMA CM event channels and events.
 *
 * A channel is a FIFO of struct umc_cm_event plus a Unix stream
 * socketpair.  The end the user sees (channel->fd) holds exactly one byte
 * per queued event, so poll(2)/epoll report it readable exactly while an
 * event is waiting, and each new event is a new edge for EPOLLET, as the
 * kernel's ucma file wakes its readers per event.
 *
 * rdma_get_cm_event() waits with a blocking recv(MSG_PEEK) on the user's
 * fd, so an fd the user made O_NONBLOCK gives EAGAIN, then dequeues the
 * head under the channel lock and consumes one byte with
 * recv(MSG_DONTWAIT).  Every byte is consumed under the lock together with
 * its event (dequeued or discarded), which keeps "bytes in the socket ==
 * events queued" whenever the lock is free.  Should the socket buffer ever
 * be full, the missing bytes are counted in ->owed and paid back before any
 * byte is read, so the fd stays readable while events wait.
 *
 * Events are processed when they are retrieved, as librdmacm does: the
 * ADDR_RESOLVED event publishes the device binding into the id, the
 * MULTICAST_JOIN event attaches the QP (mcast.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cm_int.h"
#include "stat/stat.h"

/* ------------------------------------------------------------------------- */
/* Channels                                                                  */

/*
 * umc_cm_chan_create - a new channel with one reference (the creator's).
 * Returns the channel, or NULL with errno set (ENOMEM, EMFILE...).
 */
struct umc_cm_channel *umc_cm_chan_create(void)
{
	struct umc_cm_channel *chan = calloc(1, sizeof(*chan));
	int sv[2], ret;

	if (!chan)
		return umc_null_errno(-ENOMEM);
	ret = umc_fd_socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, sv, true);
	if (ret) {
		free(chan);
		return umc_null_errno(ret);
	}
	/* Only our end is non-blocking: the user decides for channel->fd. */
	if (fcntl(sv[1], F_SETFL, O_NONBLOCK) < 0) {
		int err = errno;

		umc_fd_close(sv[0]);
		umc_fd_close(sv[1]);
		free(chan);
		return umc_null_errno(-err);
	}
	chan->ch.fd = sv[0];
	chan->wfd = sv[1];
	chan->gen = umc_fork_gen;
	pthread_mutex_init(&chan->lock, NULL);
	chan->tail = &chan->head;
	atomic_init(&chan->refcnt, 1);
	return chan;
}

/* umc_cm_chan_get - take a reference on @chan (an id, a waiting getter). */
void umc_cm_chan_get(struct umc_cm_channel *chan)
{
	atomic_fetch_add(&chan->refcnt, 1);
}

/* umc_cm_chan_put - drop a reference; the last one closes the fds. */
void umc_cm_chan_put(struct umc_cm_channel *chan)
{
	if (atomic_fetch_sub(&chan->refcnt, 1) != 1)
		return;
	umc_fd_close(chan->ch.fd);
	umc_fd_close(chan->wfd);
	pthread_mutex_destroy(&chan->lock);
	free(chan);
}

/* One byte for a newly queued event.  Caller holds chan->lock. */
static void __chan_signal(struct umc_cm_channel *chan)
{
	static const char b = 'e';

	if (chan->owed || umc_sys_send(chan->wfd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1)
		chan->owed++;
}

/* Take back the byte of an event leaving the queue.  Caller holds chan->lock. */
static void __chan_consume(struct umc_cm_channel *chan)
{
	char b;

	if (chan->owed) {
		chan->owed--;
		return;
	}
	while (umc_sys_recv(chan->ch.fd, &b, 1, MSG_DONTWAIT) < 0 && errno == EINTR)
		;
}

/**
 * rdma_create_event_channel - open a channel to report CM events on.
 *
 * Its fd can be polled (readable while an event is queued) and made
 * O_NONBLOCK, after which rdma_get_cm_event() fails with EAGAIN instead of
 * blocking.
 *
 * Return: the channel, or NULL with errno set: ENODEV when the process has
 * no device (librdmacm/cma.c ucma_init()), ENOMEM, EMFILE.
 * rdma_create_event_channel(3).
 */
UMC_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct umc_device **devs;
	struct umc_cm_channel *chan;

	if (umc_devices(&devs) <= 0)
		return umc_null_errno(-ENODEV);
	chan = umc_cm_chan_create();
	return chan ? &chan->ch : NULL;
}

/**
 * rdma_destroy_event_channel - close @channel.
 *
 * Events still queued are discarded.  The ids on the channel should have
 * been destroyed first (rdma_destroy_event_channel(3)); if they were not,
 * their later events are dropped, and the memory lives on until the last
 * id is destroyed.  A thread still blocked in rdma_get_cm_event() on the
 * channel stays blocked, as with librdmacm.  In a child of fork, the
 * parent's channel is left alone.
 */
UMC_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct umc_cm_channel *chan;
	struct umc_cm_event *list;

	if (!channel || umc_forked(to_chan(channel)->gen))
		return;
	chan = to_chan(channel);
	umc_mutex_lock(&chan->lock, UMC_LOCK_CM_CHANNEL);
	chan->closed = true;
	list = chan->head;
	chan->head = NULL;
	chan->tail = &chan->head;
	umc_mutex_unlock(&chan->lock);
	umc_cm_event_free_list(list);
	umc_cm_chan_put(chan);
}

/* ------------------------------------------------------------------------- */
/* Events                                                                    */

/**
 * umc_cm_event_new - allocate an event of @type on @idp (and @mc).
 * @idp:    the id the event is for; a reference is taken.
 * @mc:     the join it reports, or NULL; a reference is taken.  For a
 *          multicast event param.ud.private_data is set to the join
 *          context (the kernel's cma_make_mc_event()).
 * @type:   RDMA_CM_EVENT_*.
 * @status: 0 or a negative errno.
 *
 * Return: the event, not yet queued, or NULL (ENOMEM).
 */
struct umc_cm_event *umc_cm_event_new(struct umc_cm_id *idp, struct umc_cm_mc *mc,
				      enum rdma_cm_event_type type, int status)
{
	struct umc_cm_event *evt = calloc(1, sizeof(*evt));

	if (!evt)
		return NULL;
	umc_cm_id_get(idp);
	evt->idp = idp;
	evt->ev.id = &idp->id;
	evt->ev.event = type;
	evt->ev.status = status;
	if (mc) {
		atomic_fetch_add(&mc->refcnt, 1);
		evt->mc = mc;
		evt->ev.param.ud.private_data = mc->context;
	}
	return evt;
}

/**
 * umc_cm_event_queue - append @evt to its id's channel and make the fd
 * readable.  A closed channel drops the event.
 * Context: may be called with the id's lock held (lock order id, channel).
 */
void umc_cm_event_queue(struct umc_cm_event *evt)
{
	struct umc_cm_channel *chan = evt->idp->chan;

	umc_mutex_lock(&chan->lock, UMC_LOCK_CM_CHANNEL);
	if (chan->closed) {
		umc_mutex_unlock(&chan->lock);
		umc_cm_event_free(evt);
		return;
	}
	evt->next = NULL;
	*chan->tail = evt;
	chan->tail = &evt->next;
	__chan_signal(chan);
	umc_mutex_unlock(&chan->lock);
}

/*
 * umc_cm_event_free - release @evt and the references it holds.  The id
 * or mc may be freed here, so never call it with their lock held unless
 * another reference keeps them alive.
 */
void umc_cm_event_free(struct umc_cm_event *evt)
{
	struct umc_cm_id *idp = evt->idp;

	if (evt->mc)
		umc_cm_mc_put(evt->mc);
	free(evt);
	umc_cm_id_put(idp);
}

/* Free a list of events linked by ->next. */
void umc_cm_event_free_list(struct umc_cm_event *list)
{
	while (list) {
		struct umc_cm_event *next = list->next;

		umc_cm_event_free(list);
		list = next;
	}
}

/**
 * umc_cm_chan_discard - remove the queued, undelivered events of @idp (all
 * of them) or of @mc from @chan; kernel ucma_cleanup_mc_events and the
 * event purge of ucma_destroy_id (drivers/infiniband/core/ucma.c).
 * @list: the removed events are pushed here, for umc_cm_event_free_list()
 *        once the caller has dropped its locks.
 *
 * Return: the number of events removed.
 */
int umc_cm_chan_discard(struct umc_cm_channel *chan, struct umc_cm_id *idp,
			struct umc_cm_mc *mc, struct umc_cm_event **list)
{
	struct umc_cm_event **pp, *evt;
	int n = 0;

	umc_mutex_lock(&chan->lock, UMC_LOCK_CM_CHANNEL);
	pp = &chan->head;
	while ((evt = *pp)) {
		if ((idp && evt->idp == idp) || (mc && evt->mc == mc)) {
			*pp = evt->next;
			evt->next = *list;
			*list = evt;
			__chan_consume(chan);
			n++;
		} else {
			pp = &evt->next;
		}
	}
	chan->tail = pp;
	umc_mutex_unlock(&chan->lock);
	return n;
}

/* True (and the event should be dropped) once the id is being destroyed. */
static bool cm_event_id_dead(struct umc_cm_event *evt)
{
	struct umc_cm_id *idp = evt->idp;
	bool dead;

	__umc_cm_id_lock(idp);
	dead = idp->state == UMC_CM_DESTROYING;
	umc_cm_id_unlock(idp);
	return dead;
}

/*
 * The librdmacm part of delivering an event.  Returns 1 when the event must
 * be dropped (its id is being destroyed: the kernel's
 * cma_iboe_join_work_handler() and cma_ib_mc_handler() drop it), else 0.
 * *@err is set to an errno the caller leaves in errno (a failed attach).
 */
static int cm_event_process(struct umc_cm_event *evt, int *err)
{
	*err = 0;
	switch (evt->ev.event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ADDR_ERROR:
		return umc_cm_process_addr(evt);
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		return umc_cm_process_join(evt, err);
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		if (evt->mc && !evt->mc->left)
			umc_cm_mc_stat(evt->mc, UMC_STAT_ERROR);
		return cm_event_id_dead(evt);
	default:
		return cm_event_id_dead(evt);
	}
}

/* umc_cm_get_event()'s loop, with a reference on @chan held. */
static int cm_get_event_held(struct umc_cm_channel *chan, struct umc_cm_event **out, int *err)
{
	struct umc_cm_event *evt;
	int ret = 0, cs;
	char b;

	for (;;) {
		ssize_t n = recv(chan->ch.fd, &b, 1, MSG_PEEK);

		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0) { /* cannot happen while we hold a reference */
			ret = -EBADF;
			break;
		}
		umc_mutex_lock(&chan->lock, UMC_LOCK_CM_CHANNEL);
		if (chan->closed) {
			umc_mutex_unlock(&chan->lock);
			ret = -EBADF;
			break;
		}
		evt = chan->head;
		if (!evt) { /* another thread took it */
			umc_mutex_unlock(&chan->lock);
			continue;
		}
		chan->head = evt->next;
		if (!chan->head)
			chan->tail = &chan->head;
		evt->next = NULL;
		__chan_consume(chan);
		umc_mutex_unlock(&chan->lock);

		/* Not cancelled with the event in hand: only the wait is a cancellation point. */
		cs = umc_cancel_off();
		if (cm_event_process(evt, err)) {
			umc_cm_event_free(evt);
			umc_cancel_restore(cs);
			continue;
		}
		umc_cancel_restore(cs);
		*out = evt;
		break;
	}
	return ret;
}

static void chan_put_cleanup(void *chan)
{
	umc_cm_chan_put(chan);
}

/**
 * umc_cm_get_event - wait for, dequeue and process the next event of @chan.
 * @out: the event (to be freed by rdma_ack_cm_event()).
 * @err: set to an errno to leave in errno although the call succeeds (the
 *       attach error of a JOIN rewritten to MULTICAST_ERROR), else 0.
 *
 * Return: 0, or -EAGAIN (O_NONBLOCK fd, nothing queued), -EINTR, -EBADF
 * (channel destroyed meanwhile).
 */
int umc_cm_get_event(struct umc_cm_channel *chan, struct umc_cm_event **out, int *err)
{
	int ret;

	umc_cm_chan_get(chan);
	/*
	 * The wait in the loop is a cancellation point, as librdmacm's read(2)
	 * of the channel is, and holds no lock; a getter cancelled there drops
	 * its reference on the way out.
	 */
	pthread_cleanup_push(chan_put_cleanup, chan);
	ret = cm_get_event_held(chan, out, err);
	pthread_cleanup_pop(1);
	return ret;
}

/**
 * rdma_get_cm_event - retrieve the next event of @channel.
 *
 * Blocks until an event is queued unless channel->fd is O_NONBLOCK.  A
 * MULTICAST_JOIN event attaches the id's QP to the group now (unless the
 * join was send-only); if that fails the event is returned as
 * MULTICAST_ERROR with status -1 and errno set to the attach error
 * (librdmacm/cma.c ucma_process_join()).  Every event must be acked.
 *
 * Return: 0, or -1 with errno: EINVAL (NULL @event or @channel), EAGAIN
 * (non-blocking fd, no event), EINTR, ENODEV (no device at all), EIO (the
 * parent's channel in a child of fork).  rdma_get_cm_event(3).
 */
UMC_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct umc_cm_event *evt;
	struct umc_device **devs;
	int ret, err;

	if (umc_devices(&devs) <= 0)
		return umc_minus1_errno(-ENODEV);
	if (!event || !channel)
		return umc_minus1_errno(-EINVAL);
	if (umc_forked(to_chan(channel)->gen))
		return umc_minus1_errno(-EIO);
	ret = umc_cm_get_event(to_chan(channel), &evt, &err);
	if (ret)
		return umc_minus1_errno(ret);
	*event = &evt->ev;
	if (err)
		errno = err;
	return 0;
}

/**
 * rdma_ack_cm_event - release @event.
 *
 * The id and join it refers to stay valid until their last event is acked,
 * even after rdma_leave_multicast() or rdma_destroy_id() (docs/design.md,
 * "Departures from Linux").
 * Acking the event a synchronous id stored in id->event also clears
 * id->event, so the id never acks it a second time (librdmacm's
 * rdma_destroy_id() acks id->event when set, which frees an event the
 * application acked already).
 *
 * Return: 0, or -1 with errno EINVAL for a NULL event, EIO for an event of
 * the parent's in a child of fork.  rdma_ack_cm_event(3).
 */
UMC_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct umc_cm_event *evt;
	struct umc_cm_id *idp;

	if (!event)
		return umc_minus1_errno(-EINVAL);
	if (umc_cm_id_forked(event->id))
		return umc_minus1_errno(-EIO);
	evt = container_of(event, struct umc_cm_event, ev);
	idp = evt->idp;
	__umc_cm_id_lock(idp);
	if (idp->sync_event == evt) {
		idp->sync_event = NULL;
		if (idp->id.event == event)
			idp->id.event = NULL;
	}
	umc_cm_id_unlock(idp);
	umc_cm_event_free(evt);
	return 0;
}

static const char *const cm_event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	[RDMA_CM_EVENT_ADDRINFO_RESOLVED] = "RDMA_CM_EVENT_ADDRINFO_RESOLVED",
	[RDMA_CM_EVENT_ADDRINFO_ERROR] = "RDMA_CM_EVENT_ADDRINFO_ERROR",
};

/**
 * rdma_event_str - the enum name of @event for 0..17 (ADDR_RESOLVED ..
 * ADDRINFO_ERROR), "UNKNOWN EVENT" for USER, INTERNAL and anything else
 * (librdmacm/cma.c rdma_event_str()).  rdma_event_str(3).
 */
UMC_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	unsigned e = (unsigned)event;

	if (e < sizeof(cm_event_names) / sizeof(cm_event_names[0]) && cm_event_names[e])
		return cm_event_names[e];
	return "UNKNOWN EVENT";
}
