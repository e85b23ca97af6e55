/* SPDX-License-Identifier: MIT */
/*
 * pd_mr.c - protection domains and memory regions.
 *
 * There is no hardware to program, so an MR is a record of (PD, address
 * range, access).  Every MR of the process sits in one table of slots; its
 * lkey is (slot << 8 | key byte), so the data path finds and checks an MR
 * without a lock.  A WR whose SGE is not inside a live MR of the QP's PD
 * with the needed access is refused when it is posted (umc_mr_check), and
 * a receive WQE is checked again when a datagram arrives for it, under a
 * hold that ibv_dereg_mr waits for (umc_mr_get / umc_mr_put): once
 * ibv_dereg_mr has returned, nothing writes into that range any more.
 *
 * The holds, without a lock per packet.  A slot is never freed; it has a
 * tag (UMC_MR_LIVE | lkey while registered, 0 otherwise) and a count of
 * holds in flight.  The receive path increments the count, then reads the
 * tag; ibv_dereg_mr clears the tag, then waits for the count to reach 0.
 * All four accesses are sequentially consistent, so of "increment, read
 * tag" and "clear tag, read count" one comes first in their single total
 * order: either the reader sees the tag cleared and writes nothing, or
 * ibv_dereg_mr sees the hold and waits for it.  The reader's release
 * decrement after its copy synchronises with the acquire load that sees 0,
 * so the copy happens before ibv_dereg_mr returns.  The slot's other fields
 * are written under umc_mr_lock before the tag is set (a release, paired
 * with the reader's load of the tag) and not changed until ibv_dereg_mr
 * has seen no hold, so a reader that saw its tag reads them stable.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "verbs/verbs_int.h"

#define UMC_MR_LIVE (1ull << 32)

struct umc_mr_slot {
	_Atomic uint64_t tag; /* UMC_MR_LIVE | lkey, or 0 */
	atomic_uint holds;    /* umc_mr_get() holds in flight */
	struct umc_mr *mr;    /* the registration (umc_mr_lock) */
	struct ibv_pd *pd;
	uint64_t start, end;
	int access;
};

static struct umc_mr_slot umc_mr_slots[UMC_MAX_MR];
static pthread_mutex_t umc_mr_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned umc_mr_next; /* next slot to try */
static uint8_t umc_mr_key;    /* rolls so a stale lkey does not match a new MR */

/*
 * The parent's MRs stay in a child's table (unusable there: their PDs give
 * EIO, so their slots are never deregistered).  A delivery of the parent's
 * in flight at the fork left holds nobody will drop: forget them.
 */
static void umc_mr_forked(void)
{
	for (unsigned i = 0; i < UMC_MAX_MR; i++)
		atomic_store_explicit(&umc_mr_slots[i].holds, 0, memory_order_relaxed);
}

UMC_ATFORK_MUTEX(umc_mr_lock, UMC_LOCK_MR, umc_mr_forked)

UMC_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct umc_pd *pd;

	if (umc_ctx_forked(context))
		return umc_null_errno(-EIO);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return umc_null_errno(-ENOMEM);
	pd->ibpd.context = context;
	return &pd->ibpd;
}

/* ibv_dealloc_pd(3): EBUSY while a QP, MR or AH still uses the PD. */
UMC_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (umc_ctx_forked(pd->context))
		return umc_pos_errno(-EIO);
	if (atomic_load_explicit(&to_upd(pd)->usecnt, memory_order_acquire))
		return umc_pos_errno(-EBUSY);
	free(to_upd(pd));
	return 0;
}

static const int umc_mr_access_known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				       IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
				       IBV_ACCESS_ON_DEMAND | IBV_ACCESS_RELAXED_ORDERING;

/*
 * Does every page of [lo, hi) lie in a mapping with permission @perm ('r'
 * or 'w')?  Reads /proc/self/maps, which lists the mappings in address
 * order, so nothing is touched and nothing can fault.  Without /proc, only
 * mapped-ness can be asked (mincore).  Returns 0 or -EFAULT.
 */
static int umc_maps_cover(uintptr_t lo, uintptr_t hi, char perm)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	char buf[4096], line[128];
	size_t ll = 0;
	uintptr_t cur = lo;
	ssize_t n;

	if (fd < 0) {
		long pg = sysconf(_SC_PAGESIZE);
		unsigned char vec[256];

		for (; cur < hi; cur += sizeof(vec) * (uintptr_t)pg) {
			size_t len = hi - cur < sizeof(vec) * (uintptr_t)pg ? hi - cur
									 : sizeof(vec) * (size_t)pg;

			if (mincore((void *)cur, len, vec))
				return -EFAULT;
		}
		return 0;
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t i = 0; i < n; i++) {
			unsigned long start, end;
			char perms[5];

			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1) /* only the start of a line matters */
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) != 3 || end <= cur)
				continue;
			if (start > cur || perms[perm == 'w' ? 1 : 0] != perm)
				goto out; /* a hole, or the wrong permission */
			cur = end;
			if (cur >= hi)
				goto out;
		}
	}
out:
	close(fd);
	return cur >= hi ? 0 : -EFAULT;
}

/*
 * The checks Linux's ib_umem_get makes when it pins [addr, addr+length):
 * EINVAL if the end, or the end rounded up to a page, wraps, or if the
 * range covers no page (length 0 at a page boundary; inside a page it
 * names that page); EFAULT unless every page is mapped and readable, and
 * writable when @access asks for a write (pinning with FOLL_WRITE).
 */
static int umc_mr_mem_check(const void *addr, size_t length, int access)
{
	const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr, end = start + length;
	bool write = access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_ATOMIC);
	int cancel, ret;

	if (end < start || end + pg - 1 < end)
		return -EINVAL;
	if ((start & ~(pg - 1)) == ((end + pg - 1) & ~(pg - 1)))
		return -EINVAL;
	/* open(2) and read(2) are cancellation points: a cancel would leak the fd. */
	cancel = umc_cancel_off();
	ret = umc_maps_cover(start & ~(pg - 1), (end + pg - 1) & ~(pg - 1), write ? 'w' : 'r');
	umc_cancel_restore(cancel);
	return ret;
}

/*
 * ibv_reg_mr(3): EINVAL for a NULL PD, an unknown access flag, remote
 * write/atomic without local write (IBA 10.6.3.1), or a range that wraps
 * or covers no page; EFAULT for memory that is not mapped, not readable,
 * or not writable with a write access (as Linux's ib_umem_get); ENOMEM
 * when the table is full.
 */
UMC_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct umc_mr *mr;
	int ret;

	if (pd && umc_ctx_forked(pd->context))
		return umc_null_errno(-EIO);
	if (!pd || (access & ~umc_mr_access_known) ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE)))
		return umc_null_errno(-EINVAL);
	ret = umc_mr_mem_check(addr, length, access);
	if (ret)
		return umc_null_errno(ret);
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return umc_null_errno(-ENOMEM);
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->access = access;

	umc_mutex_lock(&umc_mr_lock, UMC_LOCK_MR);
	for (unsigned n = 0; n < UMC_MAX_MR; n++) {
		unsigned slot = (umc_mr_next + n) % UMC_MAX_MR;
		struct umc_mr_slot *s = &umc_mr_slots[slot];

		/*
		 * A hold on a free slot is a reader that is about to see the tag
		 * and let go; one that never lets go is a thread that did not
		 * survive fork().  Either way, take another slot.
		 */
		if (s->mr || atomic_load_explicit(&s->holds, memory_order_relaxed))
			continue;
		umc_mr_next = slot + 1;
		mr->ibmr.lkey = mr->ibmr.rkey = slot << 8 | umc_mr_key++;
		mr->ibmr.handle = slot;
		s->mr = mr;
		s->pd = pd;
		s->start = (uintptr_t)addr;
		s->end = s->start + length;
		s->access = access;
		atomic_store_explicit(&s->tag, UMC_MR_LIVE | mr->ibmr.lkey, memory_order_release);
		umc_mutex_unlock(&umc_mr_lock);
		umc_pd_get(pd);
		return &mr->ibmr;
	}
	umc_mutex_unlock(&umc_mr_lock);
	free(mr);
	return umc_null_errno(-ENOMEM);
}

/*
 * ibv_dereg_mr(3): EINVAL for an MR that is not registered.  Waits for the
 * receive path's holds on it (a copy of one datagram at most), so that
 * after it returns nothing writes into the range.
 */
UMC_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct umc_mr *mr = container_of(ibmr, struct umc_mr, ibmr);
	unsigned slot = ibmr->lkey >> 8;
	struct umc_mr_slot *s;

	if (umc_ctx_forked(ibmr->context))
		return umc_pos_errno(-EIO);
	if (slot >= UMC_MAX_MR)
		return umc_pos_errno(-EINVAL);
	s = &umc_mr_slots[slot];
	umc_mutex_lock(&umc_mr_lock, UMC_LOCK_MR);
	if (s->mr != mr) {
		umc_mutex_unlock(&umc_mr_lock);
		return umc_pos_errno(-EINVAL);
	}
	atomic_store_explicit(&s->tag, 0, memory_order_seq_cst);
	while (atomic_load_explicit(&s->holds, memory_order_acquire))
		sched_yield();
	s->mr = NULL;
	umc_mutex_unlock(&umc_mr_lock);
	umc_pd_put(ibmr->pd);
	free(mr);
	return 0;
}

UMC_HOT
bool umc_mr_get(struct ibv_pd *pd, uint32_t lkey, uint64_t addr, uint64_t len, int access)
{
	unsigned slot = lkey >> 8;
	struct umc_mr_slot *s;

	if (umc_unlikely(slot >= UMC_MAX_MR))
		return false;
	s = &umc_mr_slots[slot];
	atomic_fetch_add_explicit(&s->holds, 1, memory_order_seq_cst);
	if (umc_likely(atomic_load_explicit(&s->tag, memory_order_seq_cst) ==
		       (UMC_MR_LIVE | lkey)) &&
	    umc_likely(s->pd == pd && (s->access & access) == access) &&
	    umc_likely(addr >= s->start && addr <= s->end && len <= s->end - addr))
		return true;
	atomic_fetch_sub_explicit(&s->holds, 1, memory_order_release);
	return false;
}

UMC_HOT
void umc_mr_put(uint32_t lkey)
{
	atomic_fetch_sub_explicit(&umc_mr_slots[lkey >> 8].holds, 1, memory_order_release);
}

UMC_HOT
bool umc_mr_check(struct ibv_pd *pd, uint32_t lkey, uint64_t addr, uint32_t len, int access)
{
	if (!umc_mr_get(pd, lkey, addr, len, access))
		return false;
	umc_mr_put(lkey);
	return true;
}
