// SPDX-License-Identifier: MIT
/*
 * sa_mad_util.c - SA MAD builders for the tests (sa_mad_util.h).
 */
#include <arpa/inet.h>
#include <string.h>

#include "sa_mad_util.h"

void sa_mad_build(uint8_t mad[UMC_MAD_SIZE], uint8_t method, uint16_t attr, uint64_t comp,
		  uint64_t sm_key, const struct umc_mcmember *rec)
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

int sa_gid_parse(const char *s, uint8_t gid[16])
{
	return inet_pton(AF_INET6, s, gid);
}

void sa_rec_init(struct umc_mcmember *r, const uint8_t mgid[16], const uint8_t port_gid[16],
		 uint8_t join_state)
{
	memset(r, 0, sizeof(*r));
	if (mgid)
		memcpy(r->mgid, mgid, 16);
	memcpy(r->port_gid, port_gid, 16);
	r->qkey = 0x01234567;
	r->pkey = 0xffff;
	r->join_state = join_state;
}
