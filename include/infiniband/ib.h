/* SPDX-License-Identifier: MIT */
/*
 * <infiniband/ib.h> - the AF_IB socket address family used by the RDMA CM to
 * name InfiniBand endpoints and multicast groups directly by GID, source-
 * compatible with rdma-core's librdmacm header of the same name.
 *
 * AF_IB is not a kernel socket family: a struct sockaddr_ib is only ever
 * passed to rdma_* calls (rdma_bind_addr, rdma_join_multicast_ex, ...).
 */
#ifndef _RDMA_IB_H
#define _RDMA_IB_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/umc_be_types.h>

#ifndef AF_IB
#define AF_IB 27
#endif
#ifndef PF_IB
#define PF_IB AF_IB
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A 128-bit IB address (a GID), viewed as bytes or big-endian words. */
struct ib_addr {
	union {
		__u8 uib_addr8[16];
		__be16 uib_addr16[8];
		__be32 uib_addr32[4];
		__be64 uib_addr64[2];
	} ib_u;
#define sib_addr8 ib_u.uib_addr8
#define sib_addr16 ib_u.uib_addr16
#define sib_addr32 ib_u.uib_addr32
#define sib_addr64 ib_u.uib_addr64
#define sib_raw ib_u.uib_addr8
#define sib_subnet_prefix ib_u.uib_addr64[0]
#define sib_interface_id ib_u.uib_addr64[1]
};

/* ib_addr_any - non-zero when @a is the all-zero (wildcard) address. */
static inline int ib_addr_any(const struct ib_addr *a)
{
	for (int i = 0; i < 16; i++)
		if (a->sib_addr8[i])
			return 0;
	return 1;
}

/* ib_addr_loopback - non-zero when @a is ::1 (the loopback address). */
static inline int ib_addr_loopback(const struct ib_addr *a)
{
	for (int i = 0; i < 15; i++)
		if (a->sib_addr8[i])
			return 0;
	return a->sib_addr8[15] == 1;
}

/* ib_addr_set - store four 32-bit words, already in network order, in @addr. */
static inline void ib_addr_set(struct ib_addr *addr, __be32 w1, __be32 w2, __be32 w3, __be32 w4)
{
	addr->sib_addr32[0] = w1;
	addr->sib_addr32[1] = w2;
	addr->sib_addr32[2] = w3;
	addr->sib_addr32[3] = w4;
}

/* ib_addr_cmp - memcmp() order of two addresses; 0 when equal. */
static inline int ib_addr_cmp(const struct ib_addr *a1, const struct ib_addr *a2)
{
	return memcmp(a1, a2, sizeof(*a1));
}

/*
 * An AF_IB socket address (48 bytes).  For a multicast join, sib_addr is the
 * MGID itself (an all-zero MGID asks the SA to assign one).
 */
struct sockaddr_ib {
	unsigned short int sib_family; /* AF_IB */
	__be16 sib_pkey;
	__be32 sib_flowinfo;
	struct ib_addr sib_addr;
	__be64 sib_sid;	     /* service ID */
	__be64 sib_sid_mask;
	__u64 sib_scope_id;
};

#ifdef __cplusplus
}
#endif

#endif /* _RDMA_IB_H */
