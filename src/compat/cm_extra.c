/* SPDX-License-Identifier: MIT */
/*
 * cm_extra.c - librdmacm functions that umcast's headers do not declare
 * but prebuilt programs may import, for the drop-in librdmacm.so.1
 * (umc-run(1)).  Weak, like the stubs.
 */
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>

#include "verbs/verbs_int.h"

#define UMC_COMPAT __attribute__((weak, visibility("default")))

/* The port of @sa in network order: the low 16 bits of an AF_IB service ID. */
static __be16 umc_sockaddr_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)sa)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	case AF_IB:
		return htobe16((uint16_t)be64toh(((const struct sockaddr_ib *)sa)->sib_sid));
	default:
		return 0;
	}
}

/* rdma_get_src_port - the id's local port, network order (rdma_get_src_port(3)). */
UMC_COMPAT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return umc_sockaddr_port(&id->route.addr.src_addr);
}

/* rdma_get_dst_port - the id's remote port, network order (rdma_get_dst_port(3)). */
UMC_COMPAT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return umc_sockaddr_port(&id->route.addr.dst_addr);
}
