/* SPDX-License-Identifier: MIT */
/*
 * sa_mad_util.h - SA MAD builders for the tests of umc-sm and of the SA
 * client (unit and integration).  Header-only.
 */
#ifndef TESTS_SA_MAD_UTIL_H
#define TESTS_SA_MAD_UTIL_H

#include <arpa/inet.h>
#include <string.h>

#include "wire/ib_mad.h"

/* An SA MAD: header fields, and @rec (if any) at byte 56. */
static inline void sa_mad_build(uint8_t mad[UMC_MAD_SIZE], uint8_t method, uint16_t attr,
				uint64_t comp, uint64_t sm_key, const struct umc_mcmember *rec)
{
	struct umc_sa_hdr h = {
		.mad = { .base_version = 1, .mgmt_class = UMC_MGMT_CLASS_SUBN_ADM, .class_version = 2,
			 .method = method, .tid = 0x1122334455667788ULL, .attr_id = attr },
		.sm_key = sm_key,
		.comp_mask = comp,
	};

	memset(mad, 0, UMC_MAD_SIZE);
	umc_sa_hdr_encode(mad, &h);
	if (rec)
		umc_mcmember_encode(mad + UMC_SA_HDR_LEN, rec);
}

/* @s as a GID; returns 1 on success (inet_pton). */
static inline int sa_gid_parse(const char *s, uint8_t gid[16])
{
	return inet_pton(AF_INET6, s, gid);
}

/* A join record as the kernel sends it for RDMA_PS_UDP (Q_Key 0x01234567, P_Key 0xFFFF). */
static inline void sa_rec_init(struct umc_mcmember *r, const uint8_t mgid[16],
			       const uint8_t port_gid[16], uint8_t join_state)
{
	memset(r, 0, sizeof(*r));
	if (mgid)
		memcpy(r->mgid, mgid, 16);
	memcpy(r->port_gid, port_gid, 16);
	r->qkey = 0x01234567;
	r->pkey = 0xffff;
	r->join_state = join_state;
}

#endif /* TESTS_SA_MAD_UTIL_H */
