/* SPDX-License-Identifier: MIT */
/*
 * driver.h - what a link layer may use of the verbs core, as rdma-core's
 * libibverbs/driver.h is what a provider may use: the device it extends
 * and registers, the core's part of the QP and AH it extends, multicast
 * groups, the counters, port events, and the receive engine's
 * registration.  The ops a link implements are link.h's.  Never installed;
 * the verbs core's own objects (PD, MR, CQ, channels, receive rings,
 * progress) are in verbs/verbs_int.h, which no link includes.
 */
#ifndef UMC_LINK_DRIVER_H
#define UMC_LINK_DRIVER_H

#include <infiniband/verbs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "link/link.h"
#include "umc_int.h"
#include "wire/wire.h"

struct umc_device;
struct umc_qp;
struct umc_mcg;
struct umc_rx_lender;
struct umc_event_handler;
struct umc_comp_channel;
struct umc_fault_dev;
struct umc_attach;

/* ------------------------------------------------------------------------- */
/* Counters: every drop reason has its own (design: "dropped and counted").   */

#define UMC_COUNTERS(X)                                                                            \
	X(tx_packets)	     /* datagrams handed to the kernel */                                  \
	X(tx_too_long)	     /* UD send above the path MTU: completed, not sent */                 \
	X(tx_errors)	     /* datagrams the kernel refused */                                    \
	X(tx_no_route)	     /* InfiniBand unicast to a LID the SM does not know: dropped */       \
	X(tx_fwd_none)	     /* InfiniBand: to an MLID forwarded by unicast to no port: dropped */ \
	X(rx_packets)	     /* datagrams read from the group sockets */                           \
	X(rx_sock_ovfl)	     /* dropped by the kernel at a full receive socket (SO_RXQ_OVFL) */    \
	X(rx_delivered)	     /* receive completions made (and those a full CQ drops) */            \
	X(rx_in_place)	     /* ... whose payload the kernel wrote there: not copied */            \
	X(rx_malformed)	     /* umc_ud_decode() refused it */                                      \
	X(rx_bad_icrc)	     /* ICRC wrong (RoCE: and no IPv4 ID explains it) */                  \
	X(rx_bad_vcrc)	     /* InfiniBand VCRC wrong */                                           \
	X(rx_bad_dlid)	     /* InfiniBand DLID neither this port's LID nor the endpoint's MLID */ \
	X(rx_icrc_id_solved) /* accepted with an IPv4 ID found from the ICRC */                    \
	X(rx_too_long)	     /* larger than UMC_RX_SLOT, the port's MTU, or the posted buffer */   \
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
	X(uc_conn_refused)   /* a connection to our demultiplexer beyond its user's cap: closed */ \
	X(uc_claim_refused)  /* a claim at our demultiplexer without its QPN's socket: refused */   \
	X(uc_demux_untrusted) /* a demultiplexer of an untrusted user: not registered with */     \
	X(tx_shm)	     /* datagrams written to the same-host path's shared memory (in tx_packets) */ \
	X(rx_shm)	     /* datagrams read from it (in rx_packets too) */                      \
	X(rx_overrun)	     /* datagrams overwritten there before this process read them */       \
	X(tx_shm_overrun)    /* times a sender here gave up on a slow reader there (umcast(7)) */  \
	X(cq_overflow)	     /* completion dropped: CQ full */                                     \
	X(tx_bytes)	     /* payload bytes of the datagrams handed to the link */               \
	X(rx_bytes)	     /* payload bytes of the datagrams read (rx_packets') */               \
	UMC_FAULT_COUNTERS(X)

/*
 * The injected faults (umc-faults(7)), apart from the natural drops: each
 * says what the rules did, never what the network did.
 */
#define UMC_FAULT_COUNTERS(X)                                                                      \
	X(fault_drop)	     /* lost by drop= */                                                   \
	X(fault_drop_nth)    /* lost by drop_nth= */                                               \
	X(fault_burst)	     /* lost in a burst= */                                                \
	X(fault_dup)	     /* extra copies made by dup= */                                       \
	X(fault_reorder)     /* held back by reorder= */                                           \
	X(fault_delay)	     /* delayed by delay= */                                               \
	X(fault_corrupt)     /* corrupt=: sent with a bad ICRC, or received and lost as one */     \
	X(fault_hold_full)   /* to be held back, but the device held UMC_FAULT_HOLD_MAX: lost */   \
	X(fault_port_down)   /* in or out while umc-ctl held the port down: lost */                \
	X(fault_sa_reject)   /* joins answered with reject='s status */                            \
	X(fault_sa_timeout)  /* joins never answered (timeout) */                                  \
	X(fault_sa_drop)     /* SA requests not sent (drop=, drop_nth=): the client resends */

/*
 * A multicast group's own counters (umc-stat(1)): what of the device's
 * counters concerns it.
 */
#define UMC_GROUP_COUNTERS(X)                                                                      \
	X(tx_packets)	     /* datagrams posted to the group (to an AH with its MGID) */          \
	X(tx_bytes)	     /* ... their payload bytes */                                         \
	X(rx_packets)	     /* datagrams read for the group */                                    \
	X(rx_bytes)	     /* ... their payload bytes */                                         \
	X(rx_dropped)	     /* copies an attached QP refused (the device's rx_* say why) */       \
	UMC_FAULT_COUNTERS(X)

/*
 * The counters are 64-bit words of the process's counters file
 * (stat/objects.h), where umc-stat reads them: dev->cnt and a group's
 * counters point there.
 */
struct umc_counters {
#define UMC_COUNTER_FIELD(name) _Atomic uint64_t name;
	UMC_COUNTERS(UMC_COUNTER_FIELD)
};

struct umc_grp_counters {
	UMC_GROUP_COUNTERS(UMC_COUNTER_FIELD)
#undef UMC_COUNTER_FIELD
};

/*
 * Counting: CNT and CNTN from any thread (a relaxed atomic add), on a
 * device (dev->cnt) or, GCNT and GCNTN, a group's counters.  CNT_RX and
 * CNTN_RX only for a counter that nothing but the receive engine writes,
 * under dev->rx_lock (rx_packets, rx_sock_ovfl, rx_bytes, rx_delivered,
 * rx_in_place, a group's rx_*): a plain load and store, without the locked
 * add, on every datagram.  Readers load relaxed either way.
 */
#define CNTN_AT(c, name, n) atomic_fetch_add_explicit(&(c)->name, (n), memory_order_relaxed)
#define CNTN_RX_AT(c, name, n)                                                                     \
	atomic_store_explicit(&(c)->name,                                                          \
			      atomic_load_explicit(&(c)->name, memory_order_relaxed) + (n),        \
			      memory_order_relaxed)
#define CNT(dev, name) CNTN_AT((dev)->cnt, name, 1)
#define CNTN(dev, name, n) CNTN_AT((dev)->cnt, name, n)
#define CNT_RX(dev, name) CNTN_RX_AT((dev)->cnt, name, 1)
#define CNTN_RX(dev, name, n) CNTN_RX_AT((dev)->cnt, name, n)
#define GCNT(g, name) CNTN_AT(g, name, 1)
#define GCNTN(g, name, n) CNTN_AT(g, name, n)

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
	atomic_bool rx_sleeping;    /* ... and sleeps on rx_epfd (or is about to) */
	int rx_narm;		    /* endpoints with an arm op, under rx_lock and watch_lock */
	struct umc_rx_lender *rx_lender; /* receives lent for the burst (rx_lend.c), on first use */

	/* Shared context and PD used by the CM (ucma's per-device context). */
	struct ibv_context *cm_ctx;
	struct ibv_pd *cm_pd;
	void *cm_priv; /* the CM's per-port join state (cm/join_ib.c) */

	struct umc_event_handler *events; /* registered handlers (umc_dev_event_register) */

	struct umc_counters *cnt; /* in the counters file (stat/objects.h): never NULL */
	int stat_slot;		  /* its record there */
	/*
	 * Injected faults (fault/stage.h): UMC_FAULT_ON_RX / _TX while a
	 * stage must look at this device's datagrams, and the state, made
	 * with the first rules.
	 */
	_Atomic unsigned char fault_on;
	struct umc_fault_dev *fault;
};

enum { UMC_FAULT_ON_RX = 1, UMC_FAULT_ON_TX = 2 };

/* Must the fault stage of direction @bit (UMC_FAULT_ON_*) look at @dev's datagrams? */
static inline bool umc_fault_on(const struct umc_device *dev, unsigned char bit)
{
	return atomic_load_explicit(&dev->fault_on, memory_order_relaxed) & bit;
}

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
/* QPs and AHs: the core's part, which a link's QP and AH embed first.       */

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
	int nattach;		     /* their number (umc-stat reads it without dev->lock) */
	struct umc_qp *next;	     /* dev->qp_list */
	int stat_slot;		     /* its record in the counters file, or -1 */
};

/* The QP of @dev numbered @qpn, or NULL; caller holds dev->rx_lock or dev->lock. */
struct umc_qp *__umc_qp_by_num(struct umc_device *dev, uint32_t qpn);

/* The core's part of an AH; the link's part follows (link ah_size). */
struct umc_ah {
	struct ibv_ah ibah;
	struct ibv_ah_attr attr;
	struct umc_grp_counters *gcnt; /* the group's, for a multicast DGID (stat/objects.h) */
};

/* ------------------------------------------------------------------------- */
/* Multicast groups of a device (mcast.c).                                  */

struct umc_mcg {
	union ibv_gid mgid;
	struct umc_grp_counters *gcnt; /* the group's counters (stat/objects.h) */
	void *link_priv; /* the link's receive endpoint(s) (mcg_open) */
	int members;	/* full-member references (umc_dev_member) */
	int nqp;
	struct umc_qp *qps[UMC_MAX_MCAST_QP_ATTACH];
	struct umc_mcg *next;
};

/* Look a group up; caller holds dev->lock. */
struct umc_mcg *__umc_mcg_find(struct umc_device *dev, const union ibv_gid *mgid);

/* ------------------------------------------------------------------------- */
/* The receive engine (verbs/progress.c).                                    */

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
 * umc_rx_sock_drops - count in rx_sock_ovfl the datagrams the kernel
 * dropped at @ep's socket since its datagrams last said: @drops is the
 * socket's total a datagram carried (SO_RXQ_OVFL, socket(7): sk_drops as
 * the datagram was queued, mostly a full receive buffer; 32 bits, wrapping).
 * Drops after the last datagram are counted when the next one arrives.
 * Context: the receive engine, dev->rx_lock held.
 */
static inline void umc_rx_sock_drops(struct umc_device *dev, struct umc_rx_ep *ep, uint32_t drops)
{
	if (umc_unlikely(drops != ep->sk_drops)) {
		CNTN_RX(dev, rx_sock_ovfl, (uint32_t)(drops - ep->sk_drops));
		ep->sk_drops = drops;
	}
}

/*
 * umc_rx_may_sleep - may a thread of the process sleep on the device's
 * endpoints now (a CQ is armed, or the background thread waits on them)?
 * An endpoint with an arm op must then make its fd readable on arrival.
 */
static inline bool umc_rx_may_sleep(struct umc_device *dev)
{
	return atomic_load(&dev->cq_armed) > 0 || atomic_load(&dev->rx_sleeping);
}

/*
 * umc_rx_arm - call the arm op of every endpoint of @dev that has one: a
 * thread is about to sleep on them.  Context: no device lock held; takes
 * rx_lock when there is such an endpoint.
 */
void umc_rx_arm(struct umc_device *dev);

#endif /* UMC_LINK_DRIVER_H */
