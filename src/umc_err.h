/* SPDX-License-Identifier: MIT */
/*
 * umc_err.h - the library's error conventions, and the one place they are
 * converted.
 *
 * Inside, a function returns 0 (or a count) or a negative errno.  The
 * public calls follow their man pages, three conventions in all, and
 * every exported entry returns through one of these converters, named by
 * what the caller gets:
 *
 *   umc_minus1_errno(ret)  rdma_* calls and the verbs documented so
 *                          (ibv_get_cq_event(3), ibv_query_gid(3), ...):
 *                          @ret when it is >= 0, else -1 with errno -@ret
 *                          (librdmacm's ERR() in librdmacm/cma.h);
 *   umc_pos_errno(ret)     the other int verbs (ibv_modify_qp(3),
 *                          ibv_destroy_cq(3), ...): 0 or the positive
 *                          errno -@ret;
 *   umc_null_errno(ret)    calls that return a pointer (ibv_create_cq(3),
 *                          rdma_create_event_channel(3), ...): NULL with
 *                          errno -@ret.
 *
 * Each takes the internal form, so that an error passes through unchanged
 * from where it was found: return umc_minus1_errno(-EINVAL), or
 * return umc_null_errno(ret).
 */
#ifndef UMC_ERR_H
#define UMC_ERR_H

#include <errno.h>
#include <stddef.h>

#include "umc_cc.h"

/* Linux-internal errno that rdma_cm leaks to user space (cma_iboe_join_multicast()). */
#ifndef ENOTSUPP
#define ENOTSUPP 524
#endif

static inline int umc_minus1_errno(int ret)
{
	if (umc_likely(ret >= 0))
		return ret;
	errno = -ret;
	return -1;
}

static inline int umc_pos_errno(int ret)
{
	return -ret;
}

static inline void *umc_null_errno(int ret)
{
	errno = -ret;
	return NULL;
}

#endif /* UMC_ERR_H */
