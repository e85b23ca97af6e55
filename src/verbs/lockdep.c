// SPDX-License-Identifier: MIT
/*
 * lockdep.c - the lock order check of a UMC_LOCKDEP build (umc_lock.h).
 *
 * Each thread keeps the locks it holds, in the order it took them.  Before
 * a lock is taken, every lock held must be of an earlier rank (or, for a
 * _nested take, of the same rank); otherwise the check prints the lock
 * wanted and the lock held, where each was taken, and aborts.
 */
#ifdef UMC_LOCKDEP

#include <stdio.h>
#include <stdlib.h>

#include "umc_lock.h"

enum { UMC_LOCKDEP_DEPTH = 32 };

struct umc_held_lock {
	const void *lock;
	enum umc_lock_rank rank;
	const char *file;
	int line;
};

static __thread struct umc_held_lock umc_held[UMC_LOCKDEP_DEPTH];
static __thread int umc_nheld;

static const char *const umc_rank_name[UMC_LOCK_RANKS] = {
	[UMC_LOCK_CM_ID] = "CM_ID",
	[UMC_LOCK_CM_IB_INIT] = "CM_IB_INIT",
	[UMC_LOCK_CM_IB_PORT] = "CM_IB_PORT",
	[UMC_LOCK_SA_CALL] = "SA_CALL",
	[UMC_LOCK_CM_CHANNEL] = "CM_CHANNEL",
	[UMC_LOCK_DEVS] = "DEVS",
	[UMC_LOCK_FAULT_SET] = "FAULT_SET",
	[UMC_LOCK_IB_FWD_REF] = "IB_FWD_REF",
	[UMC_LOCK_SA_CLIENT] = "SA_CLIENT",
	[UMC_LOCK_DEV_RX] = "DEV_RX",
	[UMC_LOCK_DEV] = "DEV",
	[UMC_LOCK_QPN] = "QPN",
	[UMC_LOCK_UC_CTL] = "UC_CTL",
	[UMC_LOCK_UC_STEER] = "UC_STEER",
	[UMC_LOCK_UC_QSET] = "UC_QSET",
	[UMC_LOCK_UC_AGENT] = "UC_AGENT",
	[UMC_LOCK_QP_SQ] = "QP_SQ",
	[UMC_LOCK_IB_FWD] = "IB_FWD",
	[UMC_LOCK_QP_RQ] = "QP_RQ",
	[UMC_LOCK_CQ] = "CQ",
	[UMC_LOCK_COMP_CHANNEL] = "COMP_CHANNEL",
	[UMC_LOCK_CQ_EVENTS] = "CQ_EVENTS",
	[UMC_LOCK_WATCH] = "WATCH",
	[UMC_LOCK_FAULT] = "FAULT",
	[UMC_LOCK_STAT] = "STAT",
	[UMC_LOCK_MR] = "MR",
	[UMC_LOCK_FD] = "FD",
};

static void umc_lockdep_fail(const char *what, const struct umc_held_lock *held,
			     enum umc_lock_rank rank, const char *file, int line)
{
	fprintf(stderr, "umcast lockdep: %s: UMC_LOCK_%s at %s:%d", what, umc_rank_name[rank], file,
		line);
	if (held)
		fprintf(stderr, " while holding UMC_LOCK_%s taken at %s:%d", umc_rank_name[held->rank],
			held->file, held->line);
	fputc('\n', stderr);
	abort();
}

void umc_lockdep_acquire(const void *lock, enum umc_lock_rank rank, bool nested, const char *file,
			 int line)
{
	for (int i = 0; i < umc_nheld; i++) {
		const struct umc_held_lock *h = &umc_held[i];

		if (h->lock == lock)
			umc_lockdep_fail("taken twice", h, rank, file, line);
		if (h->rank > rank || (h->rank == rank && !nested))
			umc_lockdep_fail("out of order", h, rank, file, line);
	}
}

void umc_lockdep_taken(const void *lock, enum umc_lock_rank rank, const char *file, int line)
{
	if (umc_nheld == UMC_LOCKDEP_DEPTH)
		umc_lockdep_fail("too many held", NULL, rank, file, line);
	umc_held[umc_nheld++] = (struct umc_held_lock){lock, rank, file, line};
}

void umc_lockdep_release(const void *lock)
{
	for (int i = umc_nheld - 1; i >= 0; i--) {
		if (umc_held[i].lock != lock)
			continue;
		for (; i + 1 < umc_nheld; i++)
			umc_held[i] = umc_held[i + 1];
		umc_nheld--;
		return;
	}
	/* Not taken through a wrapper (fork's handlers take the process-wide ones raw). */
}

#endif /* UMC_LOCKDEP */
