/* SPDX-License-Identifier: MIT */
/*
 * umc_int.h - umcast's internal objects and the contracts between the
 * layers.  Never installed.
 *
 * Layers (docs/design.md):
 *   cm/     RDMA CM ids, event channels, join/leave; uses the verbs API and
 *           the device functions below, never packets.
 *   verbs/  devices, PD, MR, CQ, QP, AH, multicast attach; the receive
 *           progress engine (progress.c) that turns datagrams into
 *           completions.
 *   link/   one struct umc_link_ops per link layer (link/link.h): ports,
 *           address handles, group reception, packets; sockets only there.
 *   wire/   pure codecs (wire.h).
 *
 * Conventions:
 *   - internal functions return 0 or a negative errno;
 *   - the public wrappers convert: int verbs return the positive errno,
 *     pointer verbs return NULL and set errno, rdma_* return -1 and set
 *     errno (librdmacm-behaviour.md section 2.1);
 *   - public symbols are marked UMC_EXPORT, everything else is hidden.
 *
 * Progress model: the application's own calls receive.  ibv_poll_cq on an
 * empty CQ, ibv_get_cq_event and attach/detach read the group sockets with
 * recvmmsg() and deliver to the attached QPs, so a busy-polling program
 * needs no other thread.  A background receive thread per device stands in
 * for the NIC only while no application thread is receiving (progress.c).
 * A completion channel's fd is readable when a CQ event is queued on it, as
 * with libibverbs, and also while datagrams wait for a device whose CQ on
 * it is armed, so that a program asleep on it is woken by the datagram
 * itself (cq.c; umcast(7)).
 */
#ifndef UMC_INT_H
#define UMC_INT_H

#include <infiniband/verbs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "link/link.h"
#include "umc_cc.h"
#include "umc_param.h"
#include "umc_sys.h"
#include "wire/wire.h"

#define UMC_EXPORT __attribute__((visibility("default")))

#ifndef container_of
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#endif

/* Linux-internal errno that rdma_cm leaks to user space (kernel-behaviour 7.21). */
#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

struct umc_device;
struct umc_qp;
struct umc_mcg;
struct umc_rx_lender;
struct umc_event_handler;

/* ------------------------------------------------------------------------- */
/* fork(2) (fork.c).  A child of fork is a new HCA: a fresh device list,     */
/* its own descriptors and threads.  Everything made before the fork         */
/* belongs to the parent and gives EIO in the child (umcast(7), FORK).       */

/* Bumped in every child of fork: an object made in generation g is the parent's when g differs. */
extern unsigned umc_fork_gen;

static inline bool umc_forked(unsigned gen)
{
	return umc_unlikely(gen != umc_fork_gen);
}

/*
 * The library's descriptors are recorded as they are made, so that a child
 * of fork closes them (fork.c).  Making and recording are one step under
 * the registry's lock, which fork(2) takes too (UMC_GL_FD), so no fork in
 * another thread falls between them and leaves the child a copy unrecorded.
 *
 * UMC_FD_NEW(call, user_visible) - evaluate @call, one call that makes one
 * descriptor (socket(2), accept4(2), epoll_create1(2), eventfd(2),
 * fcntl(F_DUPFD_CLOEXEC), umc_link_socket), and record what it made.  Its
 * value is @call's; a failure (-1 with errno, or -errno) passes through,
 * errno kept.  @user_visible: the application can see the number (a
 * channel's fd), so the child gets /dev/null at that number instead, which
 * stays valid and never names another descriptor.  Cancellation is off
 * meanwhile.  @call must take none of the library's locks.  Best effort: a
 * descriptor that cannot be recorded (no memory) stays open, unused, in a
 * child.  Context: any thread, no process-wide lock but UMC_GL_DEVS held.
 *
 * umc_fd_begin(), umc_fd_end(@fd, @user_visible) - the same around a
 * stretch that makes its descriptor some other way (one received with
 * SCM_RIGHTS); umc_fd_end returns @fd.
 *
 * umc_fd_begin_raw(), umc_fd_end_raw() - the same for a stretch that makes
 * only raw system calls (umc_sys.h), so no cancellation point: the
 * registry's lock alone, without umc_fd_begin's two updates of the
 * cancellation state (the receive engine's read of the unicast input).
 *
 * umc_fd_record - in either stretch, record one more internal descriptor
 * (-1: none): those a batch of received datagrams carried (SCM_RIGHTS).
 *
 * umc_fd_socketpair - socketpair(2) so: 0 or -errno; sv[0] user-visible
 * when @user_visible0, sv[1] never.
 *
 * umc_fd_close - forget @fd and close it, both at once for fork.
 */
#define UMC_FD_NEW(call, user_visible) (umc_fd_begin(), umc_fd_end((call), (user_visible)))
void umc_fd_begin(void);
int umc_fd_end(int fd, bool user_visible);
void umc_fd_begin_raw(void);
void umc_fd_record(int fd);
void umc_fd_end_raw(void);
int umc_fd_socketpair(int domain, int type, int sv[2], bool user_visible0);
void umc_fd_close(int fd);

/*
 * umc_thread_start - start a thread of the library's own, running
 * @fn(@arg), named @name (at most 15 characters, as ps -L and gdb show it),
 * detached if @detached, its handle in *@tid if @tid is not NULL.  It
 * blocks every signal: the application's are for its own threads
 * (thread.c).  Returns 0 or -errno (pthread_create's: -EAGAIN).
 */
int umc_thread_start(pthread_t *tid, bool detached, void *(*fn)(void *), void *arg,
		     const char *name);

/*
 * umc_cancel_off - disable the calling thread's cancellation for a stretch
 * a cancel must not end: a wait or a read of the system with one of the
 * library's locks held, a waiter on the stack, an event being processed
 * (thread.c lists them).  Returns the state to give umc_cancel_restore()
 * afterwards; the pairs nest.
 */
int umc_cancel_off(void);
void umc_cancel_restore(int old);

/*
 * The library's process-wide mutexes, outermost first: a thread that holds
 * one may take only those after it.  fork(2) takes every one of them, in
 * this order, and releases them after it on both sides (the usual
 * pthread_atfork(3) discipline), so a child never finds one held by a
 * thread it does not have and a fork never waits against a thread that
 * holds one and wants another.
 */
enum umc_global_lock {
	UMC_GL_UC_AGENT, /* starting the unicast agent (link/roce/ucast.c); taken alone */
	UMC_GL_DEVS,	 /* the device list and its probes (verbs/device.c) */
	UMC_GL_QPN,	 /* the next QPN (verbs/qp.c); taken alone */
	UMC_GL_MR,	 /* memory registrations (verbs/pd_mr.c); taken alone */
	UMC_GL_FD,	 /* the descriptor registry (verbs/fork.c); also under DEVS (a probe)
			    and a device's rx_lock (the engine, reading the unicast input) */
	UMC_GL_COUNT
};

/*
 * UMC_ATFORK_MUTEX - put the process-wide mutex @m at place @rank (enum
 * umc_global_lock) of fork(2)'s order.  @child (a void (*)(void), or NULL)
 * runs in the child while every such mutex is still held, to reset what
 * @m protects.
 */
#define UMC_ATFORK_MUTEX(m, rank, child)                                                           \
	__attribute__((constructor)) static void m##_atfork_register(void)                         \
	{                                                                                          \
		umc_atfork_register(rank, &m, child);                                              \
	}
void umc_atfork_register(enum umc_global_lock rank, pthread_mutex_t *m, void (*child)(void));

/* ------------------------------------------------------------------------- */
/* Counters: every drop reason has its own (design: "dropped and counted").   */

#define UMC_COUNTERS(X)                                                                            \
	X(tx_packets)	     /* datagrams handed to the kernel */                                  \
	X(tx_too_long)	     /* UD send above the path MTU: completed, not sent */                 \
	X(tx_errors)	     /* datagrams the kernel refused */                                    \
	X(tx_no_route)	     /* InfiniBand unicast to a LID the SM does not know: dropped */       \
	X(rx_packets)	     /* datagrams read from the group sockets */                           \
	X(rx_delivered)	     /* receive completions made (and those a full CQ drops) */            \
	X(rx_in_place)	     /* ... whose payload the kernel wrote there: not copied */            \
	X(rx_malformed)	     /* umc_ud_decode() refused it */                                      \
	X(rx_bad_icrc)	     /* ICRC wrong (RoCE: and no IPv4 ID explains it) */                  \
	X(rx_bad_vcrc)	     /* InfiniBand VCRC wrong */                                           \
	X(rx_bad_dlid)	     /* InfiniBand DLID neither this port's LID nor the endpoint's MLID */ \
	X(rx_icrc_id_solved) /* accepted with an IPv4 ID found from the ICRC */                    \
	X(rx_too_long)	     /* larger than UMC_RX_SLOT, or than the posted buffer */              \
	X(rx_prot_err)	     /* receive buffer no longer in a live MR: LOC_PROT_ERR */            \
	X(rx_other_if)	     /* arrived on another interface (its device takes it) */              \
	X(rx_other_mcg)	     /* IB: a copy for another group, which another socket takes */       \
	X(rx_no_group)	     /* no QP attached to the destination group */                         \
	X(rx_no_qp)	     /* DestQP neither 0xFFFFFF nor a QP here (or, at the demux, on the host) */ \
	X(rx_qkey_viol)	     /* DETH Q_Key differs from the QP's */                                \
	X(rx_pkey_viol)	     /* BTH P_Key does not match */                                        \
	X(rx_no_recv)	     /* no receive WQE posted */                                           \
	X(rx_self_blocked)   /* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB */                               \
	X(rx_bad_state)	     /* QP not in RTR/RTS */                                               \
	X(uc_forwarded)	     /* RoCE unicast passed on by this process's demultiplexer */          \
	X(uc_fwd_dropped)    /* ... dropped: the owner process's queue was full */                 \
	X(uc_qpn_taken)	     /* a QPN another process of the host holds: skipped, or refused */    \
	X(cq_overflow)	     /* completion dropped: CQ full */

struct umc_counters {
#define UMC_COUNTER_FIELD(name) atomic_ulong name;
	UMC_COUNTERS(UMC_COUNTER_FIELD)
#undef UMC_COUNTER_FIELD
};

/*
 * Counting: CNT and CNTN from any thread (a relaxed atomic add).
 * CNT_RX only for a counter that nothing but the receive engine writes,
 * under dev->rx_lock (rx_packets, rx_delivered, rx_in_place): a plain load
 * and store, without the locked add, on every datagram.  Readers load
 * relaxed either way.
 */
#define CNT(dev, name) atomic_fetch_add_explicit(&(dev)->cnt.name, 1, memory_order_relaxed)
#define CNTN(dev, name, n) atomic_fetch_add_explicit(&(dev)->cnt.name, (n), memory_order_relaxed)
#define CNT_RX(dev, name)                                                                          \
	atomic_store_explicit(&(dev)->cnt.name,                                                    \
			      atomic_load_explicit(&(dev)->cnt.name, memory_order_relaxed) + 1,    \
			      memory_order_relaxed)

/* ------------------------------------------------------------------------- */
/* Devices: one per port a link layer found (link/link.h).                   */

/*
 * The core's part of a device.  A link layer embeds it first in its own
 * port struct, fills the identity, GID and P_Key tables, and registers it
 * (umc_dev_register); the core serves the queries from these tables.
 */
struct umc_device {
	struct ibv_device ibdev;
	unsigned gen; /* umc_fork_gen when made: another value means the parent's */
	struct umc_device *inherited_next; /* the parent's devices, in a child of fork */
	const struct umc_link_ops *link; /* completed: no NULL ops */
	enum ibv_mtu active_mtu;	  /* the port's: the longest UD message */
	uint64_t guid;			  /* node GUID, host order */
	int gid_tbl_len;		  /* the port's GID table size (<= UMC_MAX_GIDS) */
	int gid_count;			  /* GIDs only append: indices never move */
	union ibv_gid gids[UMC_MAX_GIDS];
	int pkey_count;
	uint16_t pkeys[UMC_MAX_PKEYS];

	pthread_mutex_t lock; /* groups, QP list, attachments */
	struct umc_mcg *mcg_hash[256];
	int mcg_attached;     /* groups with at least one QP attached */
	int total_attach;     /* QP attachments over all groups */
	struct umc_qp *qp_list;

	int block_self_qps; /* QPs created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB */
	atomic_int cq_armed; /* CQs armed: their waiters sleep on sockets themselves (cq.c) */
	/*
	 * The completion channels (cq.c), and which of them hold every
	 * receive endpoint's fd in their epoll set.  Innermost: taken under
	 * rx_lock (umc_rx_add/del) or a channel's lock, takes no other lock.
	 */
	pthread_mutex_t watch_lock;
	struct umc_comp_channel *chans; /* linked by ->dev_next */

	/* Receive progress (progress.c). */
	pthread_mutex_t rx_lock;
	int rx_epfd;		    /* epoll of the receive endpoints, while rx_epolled */
	atomic_bool rx_epolled;	    /* rx_epfd holds them all (written under watch_lock) */
	int rx_kick;		    /* eventfd in rx_epfd: a poller wakes the thread (-1: none) */
	atomic_bool rx_kicked;	    /* ... and has, since the thread last filled the set */
	int rx_nep;		    /* endpoints the link registered */
	struct umc_rx_ep **rx_eps; /* those endpoints: written under rx_lock and watch_lock */
	int rx_cap;
	atomic_ulong rx_app_gen;    /* bumped by every progress run of an application thread */
	atomic_int rx_app_tid;	    /* the thread (gettid) that last did so */
	unsigned long rx_got;	    /* packets the endpoints delivered, under rx_lock */
	unsigned rx_pass;	    /* busy-poll passes, under rx_lock: cold endpoints' turn */
	bool rx_thread;		    /* the background receive thread is running */
	atomic_bool rx_thread_in;   /* ... and holds rx_lock (progress.c umc_progress) */
	struct umc_rx_lender *rx_lender; /* receives lent for the burst (progress.c), on first use */

	/* Shared context and PD used by the CM (ucma's per-device context). */
	struct ibv_context *cm_ctx;
	struct ibv_pd *cm_pd;
	void *cm_priv; /* the CM's per-port join state (cm/join_ib.c) */

	struct umc_event_handler *events; /* registered handlers (umc_dev_event_register) */

	struct umc_counters cnt;
};

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
 * umc_dev_register - add a device a link layer made: initialise the core's
 * fields (locks, receive engine) and publish it.  @ops is the link's table
 * (completed here).  Context: the device list lock held (inside probe).
 * Returns 0, or -ENOSPC when UMC_MAX_DEVICES devices exist.
 */
int umc_dev_register(struct umc_device *dev, const struct umc_link_ops *ops);

/* The devices registered so far; for probe, with the device list lock held. */
int __umc_dev_list(struct umc_device ***list);

/* Append @gid to the device's GID table unless it is there or full. */
void umc_dev_add_gid(struct umc_device *dev, const union ibv_gid *gid);

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
 * Port events, as the kernel's ib_register_event_handler() and
 * ib_dispatch_event(): a link raises an event of its port (umc_dev_event),
 * and every handler registered for the device is called with it, on the
 * link's thread.  The CM's InfiniBand joins hear of a port that lost its
 * memberships this way (UMC_EVENT_PORT_ERR, which core/multicast.c's
 * mcast_event_handler takes as the end of every group), and of a port that
 * came up (UMC_EVENT_PORT_ACTIVE).
 *
 * The port events of the kernel's enum ib_event_type, with the values of
 * rdma-core's enum ibv_event_type (ibv_event_type_str(3) names them); the
 * public header has no async events.
 */
enum umc_event_type {
	UMC_EVENT_PORT_ACTIVE = 9,
	UMC_EVENT_PORT_ERR = 10,
	UMC_EVENT_LID_CHANGE = 11,
	UMC_EVENT_PKEY_CHANGE = 12,
	UMC_EVENT_SM_CHANGE = 13,
	UMC_EVENT_CLIENT_REREGISTER = 17,
	UMC_EVENT_GID_CHANGE = 18,
};

/*
 * struct umc_event_handler - filled by the registrant: @dev, @handler.
 * Handlers are added, never removed: a registrant lives as long as the
 * device.
 *
 * umc_dev_event_register - add @h to h->dev's handlers.  Context: any
 * thread, no lock needed.
 *
 * umc_dev_event - call every handler of @dev with @event, in the order they
 * were registered.  Context: no lock held (a handler may take the CM's
 * locks and send SA MADs).
 */
struct umc_event_handler {
	struct umc_device *dev;
	void (*handler)(struct umc_event_handler *h, enum umc_event_type event);
	struct umc_event_handler *next;
};

void umc_dev_event_register(struct umc_event_handler *h);
void umc_dev_event(struct umc_device *dev, enum umc_event_type event);

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

/* GID helpers. */
void umc_gid_from_sockaddr(union ibv_gid *gid, const struct sockaddr *sa);
/* From/to raw address bytes: 4 (IPv4, as ::ffff:a.b.c.d) when @v4, else 16. */
void umc_gid_from_ip(union ibv_gid *gid, bool v4, const void *addr);
/* Writes 4 bytes for an IPv4-mapped GID, else 16; returns 4 or 6 (the family). */
int umc_gid_to_ip(const union ibv_gid *gid, uint8_t *addr);
bool umc_gid_is_v4mapped(const union ibv_gid *gid);
bool umc_gid_is_multicast(const union ibv_gid *gid); /* ff.. or ::ffff:224/4 */
/* Returns the socklen written; @port in host order. */
socklen_t umc_gid_to_sockaddr(const union ibv_gid *gid, uint16_t port, struct sockaddr_storage *ss);

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

/*
 * A UD QP.  ibqp.state and qkey are written by ibv_modify_qp (under sq_lock
 * and rq_lock) and by the receive path when a receive fails (under rq_lock:
 * __umc_qp_to_err), and read without a lock by the receive path: they are
 * accessed atomically only (umc_qp_state, umc_qp_set_state).
 *
 * Queue depths (as mlx5): a WQE holds its slot from ibv_post_* until
 * ibv_poll_cq reaps its completion; an unsignaled send WQE until a later
 * signaled completion of the QP is reaped.  sq_held / rq_held count the
 * slots held; a WR that finds its queue's count at the depth (cap) gets
 * ENOMEM.
 */
struct umc_qp {
	struct ibv_qp ibqp;
	struct umc_device *dev;
	uint32_t create_flags;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	_Atomic uint32_t qkey;
	uint16_t pkey_index;
	uint8_t port_num;
	uint32_t sq_psn;	/* next PSN */

	/* Receive queue: ring of WQEs of fixed stride. */
	pthread_spinlock_t rq_lock;
	uint8_t *rq;
	size_t rq_stride;
	uint32_t rq_mask, rq_head, rq_tail;
	atomic_uint rq_held; /* posted receives whose completion is not reaped yet */
	/*
	 * The receive engine has lent posted receives of this QP to the link
	 * for a burst (datagrams may be landing in them): a flush waits until
	 * the burst ends (rq_flush_deferred), so that no buffer goes back to
	 * the application while the kernel may still write into it.  Both
	 * under rq_lock; see umc_qp_rx_unlend().
	 */
	bool rq_lent;
	bool rq_flush_deferred;

	/* Send side. */
	pthread_mutex_t sq_lock;
	atomic_uint sq_held; /* send WQEs not retired by a reaped completion yet */
	uint32_t sq_unsig;   /* unsignaled WQEs since the last signaled one (sq_lock) */

	struct umc_attach *attached; /* (gid, mlid) pairs, uverbs semantics */
	struct umc_qp *next;	     /* dev->qp_list */
};

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

/* The QP of @dev numbered @qpn, or NULL; caller holds dev->rx_lock or dev->lock. */
struct umc_qp *__umc_qp_by_num(struct umc_device *dev, uint32_t qpn);

/* The core's part of an AH; the link's part follows (link ah_size). */
struct umc_ah {
	struct ibv_ah ibah;
	struct ibv_ah_attr attr;
};

static inline struct umc_ah *to_uah(struct ibv_ah *a)
{
	return container_of(a, struct umc_ah, ibah);
}

/* ------------------------------------------------------------------------- */
/* Multicast groups of a device (mcast.c).                                  */

struct umc_mcg {
	union ibv_gid mgid;
	void *link_priv; /* the link's receive endpoint(s) (mcg_open) */
	int members;	/* full-member references (umc_dev_member) */
	int nqp;
	struct umc_qp *qps[UMC_MAX_MCAST_QP_ATTACH];
	struct umc_mcg *next;
};

/* Detach a QP from all its groups; returns how many (GID, MLID) pairs (mcast.c). */
int umc_qp_detach_all(struct umc_qp *qp);

/* Look a group up; caller holds dev->lock. */
struct umc_mcg *__umc_mcg_find(struct umc_device *dev, const union ibv_gid *mgid);

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
 * umc_rx_add / umc_rx_del - register / unregister a link's receive
 * endpoint with the engine (the first one starts the background receive
 * thread) and with every completion channel that watches the device.
 * Context: dev->rx_lock held; takes dev->watch_lock.  umc_rx_add returns 0
 * or -errno.
 */
int umc_rx_add(struct umc_device *dev, struct umc_rx_ep *ep);
void umc_rx_del(struct umc_device *dev, struct umc_rx_ep *ep);

/*
 * umc_chan_watch_fd - add (@op EPOLL_CTL_ADD) or remove (EPOLL_CTL_DEL)
 * receive endpoint @fd in the epoll set of every channel of @dev that
 * watches the endpoints (cq.c).  Context: dev->watch_lock held.
 */
void umc_chan_watch_fd(struct umc_device *dev, int fd, int op);

#endif /* UMC_INT_H */
