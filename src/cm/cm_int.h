/* SPDX-License-Identifier: MIT */
/*
 * cm_int.h - the RDMA CM layer's private objects (src/cm only).
 *
 * The CM plays both halves of Linux's stack: librdmacm (argument checks,
 * the mc list, attach at event retrieval) and the kernel's rdma_cm/ucma
 * (id state, device binding, link-layer joins, the event queue).
 *
 * Objects and lifetimes:
 *   umc_cm_channel  an event channel: a FIFO of events plus a socketpair;
 *                   ch.fd (what the user polls) holds one byte per queued
 *                   event.  Refcounted: the user, every id on it and every
 *                   thread inside rdma_get_cm_event.
 *   umc_cm_id       an rdma_cm_id.  Refcounted: the user (until
 *                   rdma_destroy_id) and every event that refers to it,
 *                   queued or held by the application.
 *   umc_cm_mc       one join.  Refcounted: the id's mc list (until leave or
 *                   destroy) and every event that refers to it.
 *   umc_cm_event    one event, allocated when it is generated, freed by
 *                   rdma_ack_cm_event (or when discarded).
 *
 * Because an event holds what it refers to, leave and destroy never wait
 * for acks and never free memory the application can still reach
 * (docs/design.md, "Departures from Linux").
 *
 * Locks, in the ranked order of umc_lock.h (docs/design.md, "Locking"):
 * id->lock, then the InfiniBand join code's (join_ib.c), then a channel's
 * lock, and the device's locks (taken inside verbs and umc_dev_* calls)
 * after all of them.  The channel lock is never held while calling out of
 * channel.c.
 */
#ifndef UMC_CM_INT_H
#define UMC_CM_INT_H

#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>

#include "verbs/verbs_int.h"

struct umc_cm_id;
struct umc_cm_mc;

/* ------------------------------------------------------------------------- */
/* Events and channels (channel.c).                                          */

struct umc_cm_event {
	struct rdma_cm_event ev; /* what the application sees */
	struct umc_cm_id *idp;	 /* holds a reference */
	struct umc_cm_mc *mc;	 /* holds a reference, or NULL */
	struct umc_cm_event *next;
	uint8_t private_data[UMC_CM_MAX_PRIVATE_DATA];
};

struct umc_cm_channel {
	struct rdma_event_channel ch; /* ch.fd: the socketpair end the user polls */
	int wfd;		      /* the other end: one byte written per event */
	pthread_mutex_t lock;
	struct umc_cm_event *head, **tail;
	unsigned owed; /* events queued whose byte did not fit in the socket */
	bool closed;   /* rdma_destroy_event_channel was called */
	atomic_int refcnt;
	unsigned gen; /* umc_fork_gen when made: another value means the parent's */
};

static inline struct umc_cm_channel *to_chan(struct rdma_event_channel *c)
{
	return container_of(c, struct umc_cm_channel, ch);
}

struct umc_cm_channel *umc_cm_chan_create(void);
void umc_cm_chan_get(struct umc_cm_channel *chan);
void umc_cm_chan_put(struct umc_cm_channel *chan);

struct umc_cm_event *umc_cm_event_new(struct umc_cm_id *idp, struct umc_cm_mc *mc,
				      enum rdma_cm_event_type type, int status);
void umc_cm_event_queue(struct umc_cm_event *evt);
void umc_cm_event_free(struct umc_cm_event *evt);
int umc_cm_chan_discard(struct umc_cm_channel *chan, struct umc_cm_id *idp,
			struct umc_cm_mc *mc, struct umc_cm_event **list);
void umc_cm_event_free_list(struct umc_cm_event *list);
int umc_cm_get_event(struct umc_cm_channel *chan, struct umc_cm_event **out, int *err);

/* ------------------------------------------------------------------------- */
/* The CM's join code per link layer (join_roce.c, join_ib.c; join.c's for  */
/* a link without CM multicast), picked for a port by umc_cm_join_ops_of().  */

struct umc_cm_join_ops {
	const char *name;

	/*
	 * port_add - the CM meets port @dev: an id is being bound to it
	 * (rdma_bind_addr, rdma_resolve_addr).  Called at every bind, with
	 * idp->lock held; the first call for a port makes the port's join
	 * state (kernel: the ib_client add callback, multicast.c's
	 * mcast_add_one), and may wait for the SA (bounded); the others
	 * return at once.  A failure is left to the join to report.
	 */
	void (*port_add)(struct umc_device *dev);

	/*
	 * default_qkey - the Q_Key a UD id of this port space uses when none
	 * was set (kernel cma_set_default_qkey).  Called with idp->lock held.
	 * Returns 0 and *@qkey, or -errno.
	 */
	int (*default_qkey)(struct umc_cm_id *idp, uint32_t *qkey);

	/*
	 * join - the link part of a join of @mc, which is already on
	 * idp->mc_list: validate the address, compute mc->mgid, take any
	 * membership, and arrange for exactly one MULTICAST_JOIN or
	 * MULTICAST_ERROR event on the id (now or later, umc_cm_event_new +
	 * umc_cm_event_queue).  Called with idp->lock held; must not block
	 * on the network.  Returns 0, or -errno and then no event is ever
	 * generated and no state is left behind.
	 */
	int (*join)(struct umc_cm_id *idp, struct umc_cm_mc *mc);

	/*
	 * leave - undo join's link state of @mc (drop the membership, cancel
	 * a join in flight).  Never blocks on the network.  Called with
	 * idp->lock held, once per successful join.
	 */
	void (*leave)(struct umc_cm_id *idp, struct umc_cm_mc *mc);
};

/* A port_add with nothing to make (join.c). */
void umc_cm_port_add_none(struct umc_device *dev);

extern const struct umc_cm_join_ops umc_cm_join_roce;
extern const struct umc_cm_join_ops umc_cm_join_ib;

/*
 * umc_cm_join_ops_of - the join code for port @dev, by its link layer
 * (cma.c's rdma_protocol_roce() / rdma_cap_ib_mcast() tests).
 */
const struct umc_cm_join_ops *umc_cm_join_ops_of(const struct umc_device *dev);

/* ------------------------------------------------------------------------- */
/* Ids (id.c).                                                               */

/* The kernel rdma_cm states an id goes through here (cma.c RDMA_CM_*). */
enum umc_cm_state {
	UMC_CM_IDLE,
	UMC_CM_ADDR_BOUND,
	UMC_CM_ADDR_RESOLVED,
	UMC_CM_DESTROYING,
};

/* The CM's own attachments of the id's QP: one per group, with a count. */
struct umc_cm_attach {
	union ibv_gid mgid;
	uint16_t mlid;
	int refs; /* joins of this group whose JOIN event attached the QP */
	struct umc_cm_attach *next;
};

struct umc_cm_id {
	struct rdma_cm_id id;
	uint32_t num; /* its number in this process, from 1 (umc-stat's "id") */
	pthread_mutex_t lock;
	int lock_cancel; /* the holder's cancel state before __umc_cm_id_lock */
	atomic_int refcnt;
	unsigned gen; /* umc_fork_gen when made: another value means the parent's */
	struct umc_cm_channel *chan; /* holds a reference */
	bool sync;		     /* created without a channel: private one */
	enum umc_cm_state state;

	/* Device binding, the "kernel" view; published into id->verbs, id->pd,
	 * id->port_num and id->route.addr by bind (at once) or by the
	 * ADDR_RESOLVED event (when it is retrieved). */
	struct umc_device *dev;
	const struct umc_cm_join_ops *jops; /* umc_cm_join_ops_of(dev) */
	int gid_index;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct sockaddr_storage src;
	uint32_t qkey; /* 0 until set (cma_set_default_qkey) */

	struct umc_cm_mc *mc_list; /* LIFO, as librdmacm and cma */
	struct umc_cm_attach *attach;

	/* CQs and completion channels rdma_create_qp made (rdma_destroy_qp
	 * destroys exactly these). */
	bool own_send_cq, own_recv_cq, own_send_ch, own_recv_ch;

	/* Synchronous id: the event stored in id->event that the application
	 * has not acked yet (acked by the next operation or by destroy). */
	struct umc_cm_event *sync_event;
};

static inline struct umc_cm_id *to_cmid(struct rdma_cm_id *id)
{
	return container_of(id, struct umc_cm_id, id);
}

/*
 * umc_cm_id_forked - is @id the parent's, in a child of fork?  Then the
 * rdma_* call fails at once with EIO, taking no lock (umcast(7), FORK).
 */
static inline bool umc_cm_id_forked(struct rdma_cm_id *id)
{
	return umc_forked(to_cmid(id)->gen);
}

/*
 * __umc_cm_id_lock - take @idp's lock, with the calling thread's
 * cancellation off until umc_cm_id_unlock().  A call on an id may wait
 * with the lock held: a route lookup's connect(2), a probe of the
 * interfaces, the SA's answer on InfiniBand.  Those are cancellation
 * points, and a cancel there would leave the id locked for good; it stays
 * pending instead and takes effect at the thread's next cancellation
 * point after the call (umc_cancel_off()).
 */
static inline void __umc_cm_id_lock(struct umc_cm_id *idp)
{
	int cancel = umc_cancel_off();

	umc_mutex_lock(&idp->lock, UMC_LOCK_CM_ID);
	idp->lock_cancel = cancel;
}

static inline void umc_cm_id_unlock(struct umc_cm_id *idp)
{
	int cancel = idp->lock_cancel;

	umc_mutex_unlock(&idp->lock);
	umc_cancel_restore(cancel);
}

/*
 * umc_cm_id_lock - the entry of an rdma_* call on @id: its umc_cm_id, with
 * its lock taken (__umc_cm_id_lock); or NULL with errno EINVAL (@id NULL
 * or @args_ok false) or EIO (umc_cm_id_forked).
 */
static inline struct umc_cm_id *umc_cm_id_lock(struct rdma_cm_id *id, bool args_ok)
{
	if (!id || !args_ok)
		return umc_null_errno(-EINVAL);
	if (umc_cm_id_forked(id))
		return umc_null_errno(-EIO);
	__umc_cm_id_lock(to_cmid(id));
	return to_cmid(id);
}

void umc_cm_id_get(struct umc_cm_id *idp);
void umc_cm_id_put(struct umc_cm_id *idp);
int umc_cm_complete(struct umc_cm_id *idp);
int umc_cm_process_addr(struct umc_cm_event *evt);

/* ------------------------------------------------------------------------- */
/* Joins (mcast.c).                                                          */

struct umc_cm_mc {
	struct umc_cm_mc *next; /* idp->mc_list */
	struct umc_cm_id *idp;
	void *context;
	uint16_t join_flags;
	socklen_t addrlen;
	struct sockaddr_storage addr;
	union ibv_gid mgid; /* the link's; then the JOIN event's dgid */
	uint16_t mlid;
	bool member;	/* RoCE: holds a full-member IP membership (cm/join_roce.c) */
	bool processed; /* JOIN event retrieved: mgid/mlid known to "librdmacm" */
	bool attached;	/* holds one count of an umc_cm_attach */
	bool left;	/* off the list: left, or the id destroyed */
	atomic_int refcnt;
	void *link_priv;
};

void umc_cm_mc_put(struct umc_cm_mc *mc);
/*
 * umc_cm_mc_stat - what the counters file shows of join @mc (umc-stat):
 * @state an enum umc_stat_join_state, or 0 when it is gone.  A join whose
 * MGID is not known yet (an InfiniBand join before its event) is not shown.
 */
void umc_cm_mc_stat(struct umc_cm_mc *mc, int state);
int umc_cm_process_join(struct umc_cm_event *evt, int *err);
void __umc_cm_mc_leave(struct umc_cm_id *idp, struct umc_cm_mc *mc,
		       struct umc_cm_event **discarded);
void __umc_cm_detach_all(struct umc_cm_id *idp);

/* ------------------------------------------------------------------------- */
/* Addresses (shared helpers).                                               */

/*
 * umc_cm_addrlen - librdmacm's ucma_addrlen(): the size of the sockaddr
 * for its family, 0 for NULL or an unknown family.  AF_IB is accepted (48),
 * as on a kernel with AF_IB support, so that an AF_IB join reaches the
 * link's check (ENOTSUPP on RoCE: the kernel's cma_iboe_join_multicast()).
 */
static inline socklen_t umc_cm_addrlen(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

/* cma_any_addr(): 0.0.0.0, :: or an all-zero AF_IB address. */
static inline bool umc_cm_any_addr(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	case AF_INET6:
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	case AF_IB:
		return ib_addr_any(&((const struct sockaddr_ib *)sa)->sib_addr);
	default:
		return false;
	}
}

/* cma_zero_addr(): 0.0.0.0/8, :: or an all-zero AF_IB address. */
static inline bool umc_cm_zero_addr(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 0;
	return umc_cm_any_addr(sa);
}

#endif /* UMC_CM_INT_H */
