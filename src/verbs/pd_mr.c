/* SPDX-License-Identifier: MIT */
/*
 * pd_mr.c - protection domains and memory regions.
 *
 * There is no hardware to program, so an MR is a record of (PD, address
 * range, access).  Every MR of the process sits in one table; its lkey is
 * (slot << 8 | key byte), so the data path finds and checks an MR without a
 * lock (umc_mr_check): a WR whose SGE is not inside a live MR of the QP's
 * PD with the needed access is refused when it is posted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "umc_int.h"

static struct umc_mr *_Atomic umc_mr_table[UMC_MAX_MR];
static pthread_mutex_t umc_mr_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned umc_mr_next; /* next slot to try */
static uint8_t umc_mr_key;    /* rolls so a stale lkey does not match a new MR */

/* The parent's MRs stay in a child's table (unusable there: their PDs give EIO). */
UMC_ATFORK_MUTEX(umc_mr_lock, NULL)

UMC_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct umc_pd *pd;

	if (umc_ctx_forked(context)) {
		errno = EIO;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	return &pd->ibpd;
}

/* ibv_dealloc_pd(3): EBUSY while a QP, MR or AH still uses the PD. */
UMC_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (umc_ctx_forked(pd->context))
		return EIO;
	if (atomic_load_explicit(&to_upd(pd)->usecnt, memory_order_acquire))
		return EBUSY;
	free(to_upd(pd));
	return 0;
}

static const int umc_mr_access_known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				       IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
				       IBV_ACCESS_ON_DEMAND | IBV_ACCESS_RELAXED_ORDERING;

/*
 * ibv_reg_mr(3): EINVAL for a NULL PD, an unknown access flag, or remote
 * write/atomic without local write (IBA 10.6.3.1); ENOMEM when the table is
 * full.
 */
UMC_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct umc_mr *mr;

	if (pd && umc_ctx_forked(pd->context)) {
		errno = EIO;
		return NULL;
	}
	if (!pd || (access & ~umc_mr_access_known) ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->access = access;

	pthread_mutex_lock(&umc_mr_lock);
	for (unsigned n = 0; n < UMC_MAX_MR; n++) {
		unsigned slot = (umc_mr_next + n) % UMC_MAX_MR;

		if (atomic_load_explicit(&umc_mr_table[slot], memory_order_relaxed))
			continue;
		umc_mr_next = slot + 1;
		mr->ibmr.lkey = mr->ibmr.rkey = slot << 8 | umc_mr_key++;
		mr->ibmr.handle = slot;
		atomic_store_explicit(&umc_mr_table[slot], mr, memory_order_release);
		pthread_mutex_unlock(&umc_mr_lock);
		umc_pd_get(pd);
		return &mr->ibmr;
	}
	pthread_mutex_unlock(&umc_mr_lock);
	free(mr);
	errno = ENOMEM;
	return NULL;
}

UMC_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct umc_mr *mr = container_of(ibmr, struct umc_mr, ibmr);
	unsigned slot = ibmr->lkey >> 8;

	if (umc_ctx_forked(ibmr->context))
		return EIO;
	if (slot >= UMC_MAX_MR || atomic_load(&umc_mr_table[slot]) != mr)
		return EINVAL;
	atomic_store_explicit(&umc_mr_table[slot], NULL, memory_order_release);
	umc_pd_put(ibmr->pd);
	free(mr);
	return 0;
}

bool umc_mr_check(struct ibv_pd *pd, uint32_t lkey, uint64_t addr, uint32_t len, int access)
{
	unsigned slot = lkey >> 8;
	struct umc_mr *mr;
	uint64_t start, end;

	if (umc_unlikely(slot >= UMC_MAX_MR))
		return false;
	mr = atomic_load_explicit(&umc_mr_table[slot], memory_order_acquire);
	if (umc_unlikely(!mr || mr->ibmr.lkey != lkey || mr->ibmr.pd != pd))
		return false;
	if (umc_unlikely((mr->access & access) != access))
		return false;
	start = (uintptr_t)mr->ibmr.addr;
	end = start + mr->ibmr.length;
	return addr >= start && addr <= end && len <= end - addr;
}
