/* SPDX-License-Identifier: MIT */
/*
 * verbs_int.h - the verbs core's private objects: contexts, PD, MR, CQ,
 * completion channels, the QP's receive ring and state, and the receive
 * progress engine; and the device list's calls for the CM.  Never
 * installed.  Links do not include it (they have link/driver.h, which this
 * header includes); the CM, above the verbs core, does (cm/cm_int.h).
 *
 * Progress model: the application's own calls receive.  ibv_poll_cq on an
 * empty CQ, ibv_get_cq_event and attach/detach read the group sockets with
 * recvmmsg() and deliver to the attached QPs, so a busy-polling program
 * needs no other thread.  A background receive thread per device stands in
 * for the NIC only while no application thread is receiving (rx_thread.c).
 * A completion channel's fd is readable when a CQ event is queued on it, as
 * with libibverbs, and also while datagrams wait for a device whose CQ on
 * it is armed, so that a program asleep on it is woken by the datagram
 * itself (cq.c; umcast(7)).
 */
#ifndef UMC_VERBS_INT_H
#define UMC_VERBS_INT_H

#include "link/driver.h"

/* ------------------------------------------------------------------------- */
/* The device list (device.c).                                               */

static inline struct umc_device *to_udev(struct ibv_device *d)
{
	return container_of(d, struct umc_device, ibdev);
}

/* Is @dev (and so every object on it) the parent's, in a child of fork? */
static inline bool umc_dev_forked(const struct umc_device *dev)
{
	return umc_forked(dev->gen);
}

/*
 * umc_devices_forked - in a child of fork (its atfork handler, one thread):
 * the device list starts again empty, so the child's first use finds its
 * own devices; the parent's are kept aside and their contexts get data-path
 * ops that fail with EIO.
 */
void umc_devices_forked(void);

/*
 * umc_devices - the process-wide device list, built once on first use by
 * every link layer's probe.  Returns the number of devices; *@list points
 * at a static array.
 */
int umc_devices(struct umc_device ***list);

/*
 * umc_dev_by_addr - the device and GID index a local address selects
 * (AF_INET, AF_INET6; IPv4-mapped IPv6 counts as IPv4): the first device
 * whose link's addr_gid accepts it.  An unknown address makes every link
 * probe again.  Returns 0, -EADDRNOTAVAIL (no device has it) or
 * -EAFNOSUPPORT.
 */
int umc_dev_by_addr(const struct sockaddr *sa, struct umc_device **dev, int *gid_index);

/*
 * umc_dev_route - the local source address the kernel would use to reach
 * @dst (a UDP connect() + getsockname()), as rdma_resolve_addr does without
 * a source.  Returns 0 or -errno (-ENETUNREACH, ...).
 */
int umc_dev_route(const struct sockaddr *dst, struct sockaddr_storage *src);

/*
 * umc_dev_cm_context - the device's shared context and default PD, opened
 * on first use and kept for the life of the process (ucma_get_device).
 */
int umc_dev_cm_context(struct umc_device *dev, struct ibv_context **ctx, struct ibv_pd **pd);

/*
 * umc_dev_member - add (+1) or drop (-1) one full-member reference to group
 * @mgid on @dev.  The first reference makes the port a member (link
 * membership: IGMP/MLD on RoCE), the last drop leaves.  Returns 0 or -errno
 * (-ENODEV: the port cannot join).
 */
int umc_dev_member(struct umc_device *dev, const union ibv_gid *mgid, int delta);

/*
 * umc_pkey_match - does a packet's P_Key @a pass a QP's @b (IBA 10.9.3):
 * the same 15-bit base, not 0, and at least one of them a full member
 * (bit 15).  Base 0 (0x0000, 0x8000) is the invalid P_Key, which an empty
 * slot of the P_Key table also reads as: it matches nothing, as rxe's
 * pkey_match refuses it.
 */
static inline bool umc_pkey_match(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) != 0 && ((a ^ b) & 0x7fff) == 0 && ((a | b) & 0x8000);
}

/* ------------------------------------------------------------------------- */
/* Verbs objects.                                                           */

/*
 * An open device: the struct verbs_context (which ends with the struct
 * ibv_context handed to the application), then umcast's own fields.
 */
struct umc_context {
	struct verbs_context vctx;
	struct umc_device *dev;
	struct umc_context *next, **pprev; /* every open context (device.c) */
};

static inline struct umc_context *to_uctx(struct ibv_context *c)
{
	return container_of(c, struct umc_context, vctx.context);
}

/*
 * umc_context_init - fill a new context of @dev: every slot of its
 * ibv_context_ops and verbs_context (context.c), fds, comp vectors, mutex.
 * Returns the struct ibv_context to hand to the application.
 */
struct ibv_context *umc_context_init(struct umc_context *ctx, struct umc_device *dev);

/*
 * umc_query_port - the whole struct ibv_port_attr of port @port_num, as
 * ibv_query_port(3) describes it.  Returns 0 or EINVAL (bad port).
 */
int umc_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr);

/*
 * umc_create_qp_ex - the create_qp_ex slot of the extended context: what
 * ibv_create_qp_ex(3) and ibv_create_qp(3) do (qp.c).  Returns the QP or
 * NULL with errno set.
 */
struct ibv_qp *umc_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);

static inline struct umc_device *ctx_dev(struct ibv_context *c)
{
	return to_uctx(c)->dev;
}

/* Is the context @c the parent's, in a child of fork? */
static inline bool umc_ctx_forked(struct ibv_context *c)
{
	return umc_dev_forked(ctx_dev(c));
}

/*
 * Point a parent's context, in a child of fork, at a data path that gives
 * EIO and touches nothing (fork.c).
 */
void umc_ctx_forked_ops(struct ibv_context *ctx);

/* A PD counts the QPs, MRs and AHs made on it: ibv_dealloc_pd is EBUSY until they go. */
struct umc_pd {
	struct ibv_pd ibpd;
	atomic_int usecnt;
};

static inline struct umc_pd *to_upd(struct ibv_pd *p)
{
	return container_of(p, struct umc_pd, ibpd);
}

static inline void umc_pd_get(struct ibv_pd *pd)
{
	atomic_fetch_add_explicit(&to_upd(pd)->usecnt, 1, memory_order_relaxed);
}

static inline void umc_pd_put(struct ibv_pd *pd)
{
	atomic_fetch_sub_explicit(&to_upd(pd)->usecnt, 1, memory_order_release);
}

/* An MR as the application sees it; its L_Key names a slot of pd_mr.c's table. */
struct umc_mr {
	struct ibv_mr ibmr;
	int access;
};

/*
 * umc_mr_check - is [addr, addr+len) inside a live MR @lkey of @pd with
 * @access (IBV_ACCESS_LOCAL_WRITE for receives)?  The check made when a
 * work request is posted.  Hot path: no lock.
 */
bool umc_mr_check(struct ibv_pd *pd, uint32_t lkey, uint64_t addr, uint32_t len, int access);

/*
 * umc_mr_get - take a hold on MR @lkey if [addr, addr+len) is inside it
 * and it is live, of @pd, with @access.  While the hold is kept the range
 * stays registered: ibv_dereg_mr of that MR waits for umc_mr_put().  For
 * the receive path, which writes into the range under the hold.
 * Context: any; no lock, never blocks.  Returns true with the hold taken.
 */
bool umc_mr_get(struct ibv_pd *pd, uint32_t lkey, uint64_t addr, uint64_t len, int access);

/* umc_mr_put - drop a hold umc_mr_get() took on MR @lkey. */
void umc_mr_put(uint32_t lkey);

enum umc_cq_arm {
	UMC_CQ_ARM_ANY = 1,
	UMC_CQ_ARM_SOLICITED = 2,
};

/*
 * A completion in a CQ ring, with the work queue slots its reaping frees:
 * @slots of the queue whose held count is *@wq_held (a QP's sq_held or
 * rq_held), or nothing when @wq_held is NULL (the QP was reset or
 * destroyed since: umc_cq_forget).
 */
struct umc_cqe {
	struct ibv_wc wc;
	atomic_uint *wq_held;
	uint32_t slots;
};

struct umc_cq {
	struct ibv_cq ibcq;
	pthread_spinlock_t lock;
	struct umc_cqe *ring; /* power of two */
	uint32_t mask;
	uint32_t head, tail; /* consumer, producer */
	int armed;	     /* 0 or enum umc_cq_arm */
	atomic_int usecnt;   /* QPs using this CQ */
	atomic_uint events;  /* CQ events handed out: counted as taken, under the channel's lock */
	bool release;	     /* destroy when the last event is acked (umc_cq_release) */
	struct ibv_comp_channel *release_ch; /* and then this channel, if not NULL */
	bool notify_pending; /* queued on the channel */
	struct umc_cq *notify_next;
	struct umc_device *dev;
};

static inline struct umc_cq *to_ucq(struct ibv_cq *c)
{
	return container_of(c, struct umc_cq, ibcq);
}

/* The hot-path ops behind struct ibv_context_ops (cq.c, qp.c). */
int umc_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int umc_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int umc_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int umc_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/*
 * umc_cq_push - append a completion; raise the channel event if armed.
 * @solicited: the packet had BTH.SE (for ibv_req_notify_cq(solicited_only)).
 * @wq_held, @slots: the work queue slots reaping it gives back (struct
 * umc_cqe); @wq_held may be NULL.  When the CQ is full the completion is
 * dropped (counted in cq_overflow) and its slots are given back at once.
 * Context: takes the CQ's spinlock, then the channel's mutex.
 * Returns false when the CQ was full.
 */
bool umc_cq_push(struct umc_cq *cq, const struct ibv_wc *wc, bool solicited, atomic_uint *wq_held,
		 uint32_t slots);

/*
 * umc_cq_forget - make every completion of @cq that would give slots back
 * to *@wq_held give back nothing, and set *@wq_held to 0: its QP is being
 * reset (both work queues empty) or destroyed.  The completions stay in
 * the CQ.  Context: the QP's posting is quiesced by the caller (sq_lock
 * and rq_lock held, or the QP is off the device's list).
 */
void umc_cq_forget(struct umc_cq *cq, atomic_uint *wq_held);

/*
 * umc_cq_release - destroy @cq, and then @ch if not NULL, for the CM's
 * rdma_destroy_qp: at once if no CQ event ibv_get_cq_event handed out is
 * unacked, otherwise when ibv_ack_cq_events acks the last of them.  An
 * event of @cq still queued on its channel is dropped, as the kernel drops
 * a destroyed CQ's unread events.  @cq must have no QP left.
 */
void umc_cq_release(struct ibv_cq *cq, struct ibv_comp_channel *ch);

/*
 * A completion channel.  Its fd (ch.fd) is an epoll set of @notify[0],
 * which holds one byte while an event is queued, and of the device's
 * receive endpoints' fds while the channel is watching: from the
 * first ibv_req_notify_cq on one of its CQs until an ibv_get_cq_event
 * finds no event with none of them armed.  So poll(2) on the fd, and
 * ibv_get_cq_event, are woken by an arriving datagram itself (cq.c).
 */
struct umc_comp_channel {
	struct ibv_comp_channel ch; /* ch.fd = epfd */
	int notify[2];		   /* socketpair: notify[0] readable iff @byte */
	int epfd;		   /* epoll(notify[0], every receive endpoint while @watched) */
	pthread_mutex_t lock;	   /* @pending, @takers, @byte, changes of @watching */
	struct umc_cq *pending, **pending_tail;
	int takers;	     /* ibv_get_cq_event calls running the engine: they take what it raises */
	bool byte;	     /* notify[0] holds its byte: pending and no taker */
	atomic_int armed;    /* CQs of this channel armed */
	atomic_bool watching; /* the channel watches the endpoints (lazily switched off) */
	bool watched;	      /* epfd holds the endpoints' fds (dev->watch_lock) */
	struct umc_device *dev;
	struct umc_comp_channel *dev_next; /* dev->chans (dev->watch_lock) */
};

static inline struct umc_comp_channel *to_uchan(struct ibv_comp_channel *c)
{
	return container_of(c, struct umc_comp_channel, ch);
}

struct umc_rwqe {
	uint64_t wr_id;
	int num_sge;
	struct ibv_sge sge[]; /* max_recv_sge entries */
};

struct umc_attach {
	union ibv_gid gid;
	uint16_t mlid;
	struct umc_attach *next;
};

/* ------------------------------------------------------------------------- */
/* QPs (qp.c) and AHs (ah.c).                                                */

/*
 * The QP state, read without a lock.  Acquire: attributes ibv_modify_qp
 * set before the state (the Q_Key) are seen with it.
 */
static inline enum ibv_qp_state umc_qp_state(struct umc_qp *qp)
{
	return __atomic_load_n(&qp->ibqp.state, __ATOMIC_ACQUIRE);
}

/* Publish a new state; release pairs with umc_qp_state().  Caller holds rq_lock. */
static inline void umc_qp_set_state(struct umc_qp *qp, enum ibv_qp_state state)
{
	__atomic_store_n(&qp->ibqp.state, state, __ATOMIC_RELEASE);
}

static inline struct umc_qp *to_uqp(struct ibv_qp *q)
{
	return container_of(q, struct umc_qp, ibqp);
}

/* The receive WQE in slot @idx (a free-running ring index) of @qp's queue.  rq_lock held. */
static inline struct umc_rwqe *umc_rwqe_at(const struct umc_qp *qp, uint32_t idx)
{
	return (struct umc_rwqe *)(qp->rq + (idx & qp->rq_mask) * qp->rq_stride);
}

/*
 * Move a QP to the error state, flushing its receives (at once, or when
 * the burst that has them lent ends: rq_lent); caller holds rq_lock.
 */
void __umc_qp_to_err(struct umc_qp *qp);

/*
 * umc_qp_rx_unlend - the burst that had receives of @qp lent is over: run
 * the flush that waited for it, if any.  Context: dev->rx_lock held, not
 * rq_lock.
 */
void umc_qp_rx_unlend(struct umc_qp *qp);

static inline struct umc_ah *to_uah(struct ibv_ah *a)
{
	return container_of(a, struct umc_ah, ibah);
}

/* Detach a QP from all its groups; returns how many (GID, MLID) pairs (mcast.c). */
int umc_qp_detach_all(struct umc_qp *qp);

/* ------------------------------------------------------------------------- */
/* Progress (progress.c).                                                   */

/*
 * umc_progress - read every datagram waiting on @dev's group sockets and
 * deliver it.  @wait: block on rx_lock (true) or skip if another thread is
 * progressing (false: a busy poll, which reads cold endpoints only in their
 * turn, progress.c "Cold endpoints", and skips once those a woken pass has
 * just emptied, "Woken drains").  Returns the number of datagrams read.
 */
int umc_progress(struct umc_device *dev, bool wait);
/* The same with dev->rx_lock already held, reading every endpoint. */
int __umc_progress(struct umc_device *dev);
/*
 * umc_progress_hot - umc_progress(@dev, true) reading only the endpoints
 * that are not cold (progress.c "Cold endpoints"), for a thread woken by a
 * datagram, which reads them all when this raised nothing for it; the
 * endpoints it empties are spared by the next busy poll ("Woken drains").
 * *@skipped: a cold endpoint was left out.  Context: takes rx_lock.
 * Returns the number of datagrams read.
 */
int umc_progress_hot(struct umc_device *dev, bool *skipped);

/*
 * umc_chan_watch_fd - add (@op EPOLL_CTL_ADD) or remove (EPOLL_CTL_DEL)
 * receive endpoint @fd in the epoll set of every channel of @dev that
 * watches the endpoints (cq.c).  Context: dev->watch_lock held.
 */
void umc_chan_watch_fd(struct umc_device *dev, int fd, int op);

#endif /* UMC_VERBS_INT_H */
