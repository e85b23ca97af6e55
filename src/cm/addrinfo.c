/* SPDX-License-Identifier: MIT */
/*
 * addrinfo.c - rdma_getaddrinfo / rdma_freeaddrinfo over getaddrinfo(3)
 * (rdma-core librdmacm/addrinfo.c).
 *
 * As librdmacm: only the first libc result is converted (no ai_next chain),
 * a passive lookup fills ai_src_*, an active one ai_dst_*, and a libc
 * failure returns its EAI_* code as is.  There is no SA (RAI_SA gives
 * EOPNOTSUPP) and no ibacm route lookup.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_int.h"

/* rdma_addrinfo hints -> libc hints (librdmacm ucma_convert_to_ai). */
static void cm_hints_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;

	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

/* A malloc'ed copy of @src.  Returns 0 or -1 with errno ENOMEM. */
static int cm_copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
			socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return umc_minus1_errno(-ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/* The first libc result -> @rai (librdmacm ucma_convert_to_rai, without AF_IB). */
static int cm_ai_to_rai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
			const struct addrinfo *ai)
{
	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;

	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	rai->ai_family = ai->ai_family;
	if (ai->ai_flags & AI_PASSIVE) {
		rai->ai_flags = RAI_PASSIVE;
		if (ai->ai_canonname && !(rai->ai_src_canonname = strdup(ai->ai_canonname)))
			goto enomem;
		return cm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, ai->ai_addr,
				    ai->ai_addrlen);
	}
	if (ai->ai_canonname && !(rai->ai_dst_canonname = strdup(ai->ai_canonname)))
		goto enomem;
	return cm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, ai->ai_addr, ai->ai_addrlen);
enomem:
	return umc_minus1_errno(-ENOMEM);
}

/**
 * rdma_getaddrinfo - resolve @node and/or @service for the RDMA CM.
 * @hints: ai_flags (RAI_PASSIVE, RAI_NUMERICHOST...), ai_family,
 *         ai_qp_type, ai_port_space; with both @node and @service NULL its
 *         family, QP type, port space and ai_dst_addr are copied; its
 *         ai_src_addr is copied when the lookup found no source.
 *
 * Return: 0 and *@res (free with rdma_freeaddrinfo()); -1 with errno:
 * EINVAL (@node, @service and @hints all NULL, NULL @res), EOPNOTSUPP
 * (RAI_SA: there is no SA path service), ENOMEM; or the non-zero EAI_*
 * code of getaddrinfo(3), returned as is (librdmacm's rdma_getaddrinfo()).
 * rdma_getaddrinfo(3).
 */
UMC_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	int ret = 0;

	if ((!node && !service && !hints) || !res)
		return umc_minus1_errno(-EINVAL);
	if (hints && (hints->ai_flags & RAI_SA))
		return umc_minus1_errno(-EOPNOTSUPP);
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return umc_minus1_errno(-ENOMEM);
	if (node || service) {
		struct addrinfo ai_hints, *ai;

		if (hints)
			cm_hints_to_ai(&ai_hints, hints);
		/* A cancellation point (a name lookup may wait): a cancel frees @rai. */
		pthread_cleanup_push(free, rai);
		ret = getaddrinfo(node, service, hints ? &ai_hints : NULL, &ai);
		pthread_cleanup_pop(0);
		if (ret)
			goto err;
		ret = cm_ai_to_rai(rai, hints ? hints : &nohints, ai);
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			ret = cm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					   hints->ai_dst_len);
	}
	if (ret)
		goto err;
	if (hints && !rai->ai_src_len && hints->ai_src_len) {
		ret = cm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				   hints->ai_src_len);
		if (ret)
			goto err;
	}
	*res = rai;
	return 0;
err:
	rdma_freeaddrinfo(rai);
	return ret;
}

/**
 * rdma_freeaddrinfo - free a result list of rdma_getaddrinfo(), following
 * ai_next.  rdma_getaddrinfo(3).
 */
UMC_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
		res = next;
	}
}
