/* SPDX-License-Identifier: MIT */
/*
 * test_cm_addrinfo.c - rdma_getaddrinfo / rdma_freeaddrinfo basics
 * (librdmacm/addrinfo.c).  Numeric hosts only: no DNS.
 */
#include <netdb.h>

#include "test_cm_util.h"

static void test_nothing_to_resolve(void **state)
{
	struct rdma_addrinfo *res = NULL;

	errno = 0;
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(res);
}

static void test_passive(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST,
				      .ai_port_space = RDMA_PS_UDP};
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_in *sin;

	assert_int_equal(rdma_getaddrinfo(LOOPBACK, "7471", &hints, &res), 0);
	assert_non_null(res);
	assert_int_equal(res->ai_flags, RAI_PASSIVE);
	assert_int_equal(res->ai_family, AF_INET);
	assert_int_equal(res->ai_qp_type, IBV_QPT_UD); /* from SOCK_DGRAM (PS_UDP -> UDP) */
	assert_int_equal(res->ai_port_space, RDMA_PS_UDP);
	assert_int_equal(res->ai_src_len, sizeof(struct sockaddr_in));
	assert_null(res->ai_dst_addr);
	assert_int_equal(res->ai_dst_len, 0);
	sin = (struct sockaddr_in *)res->ai_src_addr;
	assert_int_equal(sin->sin_family, AF_INET);
	assert_int_equal(ntohs(sin->sin_port), 7471);
	assert_int_equal(sin->sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	assert_null(res->ai_next); /* only the first libc result */
	rdma_freeaddrinfo(res);
}

static void test_active(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_NUMERICHOST, .ai_qp_type = IBV_QPT_UD};
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_in *sin;

	assert_int_equal(rdma_getaddrinfo("239.5.0.1", "4791", &hints, &res), 0);
	assert_int_equal(res->ai_flags, 0);
	assert_int_equal(res->ai_qp_type, IBV_QPT_UD);
	assert_int_equal(res->ai_port_space, RDMA_PS_UDP); /* from IPPROTO_UDP */
	assert_null(res->ai_src_addr);
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	assert_non_null(sin);
	assert_int_equal(res->ai_dst_len, sizeof(*sin));
	assert_int_equal(ntohs(sin->sin_port), 4791);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xef050001);
	rdma_freeaddrinfo(res);

	/* No hints at all. */
	res = NULL;
	assert_int_equal(rdma_getaddrinfo("::1", NULL, NULL, &res), 0);
	assert_int_equal(res->ai_family, AF_INET6);
	assert_int_equal(res->ai_dst_len, sizeof(struct sockaddr_in6));
	rdma_freeaddrinfo(res);
}

/* A libc failure is returned as its raw EAI_* code. */
static void test_libc_error(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_NUMERICHOST};
	struct rdma_addrinfo *res = NULL;
	int ret = rdma_getaddrinfo("not-a-number", NULL, &hints, &res);

	assert_int_equal(ret, EAI_NONAME);
	assert_null(res);
}

static void test_sa_unsupported(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_SA};
	struct rdma_addrinfo *res = NULL;

	errno = 0;
	assert_int_equal(rdma_getaddrinfo(NULL, "1", &hints, &res), -1);
	assert_int_equal(errno, EOPNOTSUPP);
}

/* pyverbs' AddrInfo(src=mc_ip): a passive lookup, then (NULL, NULL, hints
 * carrying that source), whose ai_src_addr is the group with port 0. */
static void test_hints_only(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE}, *first = NULL, *res = NULL;
	struct sockaddr_in dst = tcm_sin("239.5.0.2", 0);
	struct sockaddr_in *sin;

	assert_int_equal(rdma_getaddrinfo("239.5.0.2", NULL, &hints, &first), 0);
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_qp_type = IBV_QPT_UD;
	hints.ai_family = AF_INET;
	hints.ai_src_addr = first->ai_src_addr;
	hints.ai_src_len = first->ai_src_len;
	hints.ai_dst_addr = SA(&dst);
	hints.ai_dst_len = sizeof(dst);
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	assert_int_equal(res->ai_family, AF_INET);
	assert_int_equal(res->ai_port_space, RDMA_PS_UDP);
	assert_int_equal(res->ai_qp_type, IBV_QPT_UD);
	assert_int_equal(res->ai_src_len, sizeof(struct sockaddr_in));
	sin = (struct sockaddr_in *)res->ai_src_addr;
	assert_ptr_not_equal(sin, first->ai_src_addr); /* a copy */
	assert_int_equal(sin->sin_port, 0);
	assert_int_equal(ntohl(sin->sin_addr.s_addr), 0xef050002);
	assert_memory_equal(res->ai_dst_addr, &dst, sizeof(dst));
	/* The same bytes twice: what leave's memcmp needs. */
	assert_memory_equal(res->ai_src_addr, first->ai_src_addr, sizeof(struct sockaddr_in));
	rdma_freeaddrinfo(res);
	rdma_freeaddrinfo(first);
	rdma_freeaddrinfo(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_to_resolve), cmocka_unit_test(test_passive),
		cmocka_unit_test(test_active),		   cmocka_unit_test(test_libc_error),
		cmocka_unit_test(test_sa_unsupported),	   cmocka_unit_test(test_hints_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
