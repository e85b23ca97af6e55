/* SPDX-License-Identifier: MIT */
/*
 * umc_lock.h - every lock of the library has a rank, and the wrappers that
 * take them.
 *
 * The ranks are one order, outermost first (docs/design.md, "Locking",
 * has the table with what each lock guards): a thread that holds a lock
 * takes only locks of a later rank.  Two locks of one rank nest only
 * where the code says so with a _nested wrapper, in an order of its own
 * (the ctl_locks of a port's addresses, in address order).  fork(2) takes
 * the process-wide mutexes (UMC_ATFORK_MUTEX) in this order too.
 *
 * Built with UMC_LOCKDEP (cmake -DUMC_LOCKDEP=ON; scripts/test.sh
 * --sanitize does), every wrapper checks the order on the calling thread
 * before it takes the lock and aborts with both locks named: a wrong
 * order fails the test that took it, on the first run, whether or not the
 * deadlock it allows ever happens (as the kernel's lockdep, with the
 * order written down instead of learnt).  Without it the wrappers are the
 * plain pthread calls, so the data path pays nothing.
 *
 * A trylock is not checked (it cannot deadlock) but counts as held.
 * pthread_cond_wait() on a wrapped mutex needs nothing: the mutex is held
 * again when it returns.
 */
#ifndef UMC_LOCK_H
#define UMC_LOCK_H

#include <pthread.h>
#include <stdbool.h>

enum umc_lock_rank {
	UMC_LOCK_CM_ID,		/* idp->lock: an rdma_* call on an id (cm_int.h) */
	UMC_LOCK_CM_IB_INIT,	/* cm_ib_init_lock: making a port's IB join state (cm/join_ib.c) */
	UMC_LOCK_CM_IB_PORT,	/* port->lock: a port's IB groups, broadcast record (cm/join_ib.c) */
	UMC_LOCK_SA_CALL,	/* a waited SA transaction's waiter (sa/sa_txn.c umc_sa_call) */
	UMC_LOCK_CM_CHANNEL,	/* chan->lock: a CM event channel's queue (cm/channel.c) */
	UMC_LOCK_DEVS,		/* the device list, its probes, the open contexts (verbs/device.c) */
	UMC_LOCK_FAULT_SET,	/* umc_fault_set_lock: the fault rules in force (fault/stage.c) */
	UMC_LOCK_IB_FWD_REF,	/* port->fwd_ref_lock: the MLIDs an IB port sends to (link/ib/fwd.c) */
	UMC_LOCK_SA_CLIENT,	/* c->lock: an SA client's state (sa/sa_int.h) */
	UMC_LOCK_DEV_RX,	/* dev->rx_lock: the receive engine (verbs/progress.c) */
	UMC_LOCK_DEV,		/* dev->lock: groups, QP list, attachments (link/driver.h) */
	UMC_LOCK_QPN,		/* the next QPN (verbs/qp.c) */
	UMC_LOCK_UC_CTL,	/* d->ctl_lock: a connection to a unicast demultiplexer */
	UMC_LOCK_UC_STEER,	/* d->steer_lock: the port's sockets of addr:4791's group */
	UMC_LOCK_UC_QSET,	/* uc->qset_lock: a port's claimed QPNs (link/roce/) */
	UMC_LOCK_UC_AGENT,	/* uc_ag_lock: the unicast agent and its addresses (link/roce/) */
	UMC_LOCK_QP_SQ,		/* qp->sq_lock: a QP's send queue (link/driver.h) */
	UMC_LOCK_IB_FWD,	/* port->fwd_lock (rw): where an IB port's MLIDs go (link/ib/fwd.c) */
	UMC_LOCK_QP_RQ,		/* qp->rq_lock (spin): a QP's receive ring */
	UMC_LOCK_CQ,		/* cq->lock (spin): a CQ's ring (verbs/verbs_int.h) */
	UMC_LOCK_COMP_CHANNEL,	/* ch->lock: a completion channel's events (verbs/cq.c) */
	UMC_LOCK_CQ_EVENTS,	/* ibv_cq.mutex: a CQ's event counts (verbs/cq.c) */
	UMC_LOCK_WATCH,		/* dev->watch_lock: the channels watching the endpoints */
	UMC_LOCK_FAULT,		/* fd->lock: a device's fault streams, sent datagrams held (fault/) */
	UMC_LOCK_STAT,		/* umc_stat_lock: the counters file's records (stat/objects.c) */
	UMC_LOCK_MR,		/* the MR table (verbs/pd_mr.c) */
	UMC_LOCK_FD,		/* the descriptor registry (verbs/fork.c) */
	UMC_LOCK_RANKS
};

#ifdef UMC_LOCKDEP

/*
 * umc_lockdep_acquire - the calling thread is about to take @lock of
 * @rank (@nested: after one of the same rank); aborts, naming @file:@line
 * and the lock held, if it holds a lock of a later rank.
 * umc_lockdep_taken - it holds @lock now (also after a trylock).
 * umc_lockdep_release - it gives @lock back.
 */
void umc_lockdep_acquire(const void *lock, enum umc_lock_rank rank, bool nested, const char *file,
			 int line);
void umc_lockdep_taken(const void *lock, enum umc_lock_rank rank, const char *file, int line);
void umc_lockdep_release(const void *lock);

static inline int umc_lockdep_mutex_lock(pthread_mutex_t *m, enum umc_lock_rank rank, bool nested,
					 const char *file, int line)
{
	int ret;

	umc_lockdep_acquire(m, rank, nested, file, line);
	ret = pthread_mutex_lock(m);
	if (!ret)
		umc_lockdep_taken(m, rank, file, line);
	return ret;
}

static inline int umc_lockdep_mutex_trylock(pthread_mutex_t *m, enum umc_lock_rank rank,
					    const char *file, int line)
{
	int ret = pthread_mutex_trylock(m);

	if (!ret)
		umc_lockdep_taken(m, rank, file, line);
	return ret;
}

static inline int umc_lockdep_spin_lock(pthread_spinlock_t *s, enum umc_lock_rank rank,
					const char *file, int line)
{
	int ret;

	umc_lockdep_acquire((const void *)s, rank, false, file, line);
	ret = pthread_spin_lock(s);
	if (!ret)
		umc_lockdep_taken((const void *)s, rank, file, line);
	return ret;
}

static inline int umc_lockdep_rwlock(pthread_rwlock_t *l, bool write, enum umc_lock_rank rank,
				     const char *file, int line)
{
	int ret;

	umc_lockdep_acquire(l, rank, false, file, line);
	ret = write ? pthread_rwlock_wrlock(l) : pthread_rwlock_rdlock(l);
	if (!ret)
		umc_lockdep_taken(l, rank, file, line);
	return ret;
}

#define umc_mutex_lock(m, rank) umc_lockdep_mutex_lock((m), (rank), false, __FILE__, __LINE__)
#define umc_mutex_lock_nested(m, rank) umc_lockdep_mutex_lock((m), (rank), true, __FILE__, __LINE__)
#define umc_mutex_trylock(m, rank) umc_lockdep_mutex_trylock((m), (rank), __FILE__, __LINE__)
#define umc_mutex_unlock(m) (umc_lockdep_release(m), pthread_mutex_unlock(m))
#define umc_spin_lock(s, rank) umc_lockdep_spin_lock((s), (rank), __FILE__, __LINE__)
#define umc_spin_unlock(s) (umc_lockdep_release((const void *)(s)), pthread_spin_unlock(s))
#define umc_rwlock_rdlock(l, rank) umc_lockdep_rwlock((l), false, (rank), __FILE__, __LINE__)
#define umc_rwlock_wrlock(l, rank) umc_lockdep_rwlock((l), true, (rank), __FILE__, __LINE__)
#define umc_rwlock_unlock(l) (umc_lockdep_release(l), pthread_rwlock_unlock(l))

#else /* !UMC_LOCKDEP: the plain calls */

#define umc_mutex_lock(m, rank) pthread_mutex_lock(m)
#define umc_mutex_lock_nested(m, rank) pthread_mutex_lock(m)
#define umc_mutex_trylock(m, rank) pthread_mutex_trylock(m)
#define umc_mutex_unlock(m) pthread_mutex_unlock(m)
#define umc_spin_lock(s, rank) pthread_spin_lock(s)
#define umc_spin_unlock(s) pthread_spin_unlock(s)
#define umc_rwlock_rdlock(l, rank) pthread_rwlock_rdlock(l)
#define umc_rwlock_wrlock(l, rank) pthread_rwlock_wrlock(l)
#define umc_rwlock_unlock(l) pthread_rwlock_unlock(l)

#endif /* UMC_LOCKDEP */

#endif /* UMC_LOCK_H */
