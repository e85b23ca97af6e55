/* SPDX-License-Identifier: MIT */
/*
 * sa_mad_util.h - SA MAD builders for the tests of umc-sm and of the SA
 * client, unit and integration (sa_mad_util.c).
 */
#ifndef TESTS_LIB_SA_MAD_UTIL_H
#define TESTS_LIB_SA_MAD_UTIL_H

#include <stdint.h>

#include "wire/ib_mad.h"

/* An SA MAD: header fields, and @rec (if any) at byte 56. */
void sa_mad_build(uint8_t mad[UMC_MAD_SIZE], uint8_t method, uint16_t attr, uint64_t comp,
		  uint64_t sm_key, const struct umc_mcmember *rec);

/* @s as a GID; returns 1 on success (inet_pton). */
int sa_gid_parse(const char *s, uint8_t gid[16]);

/* A join record as the kernel sends it for RDMA_PS_UDP (Q_Key 0x01234567, P_Key 0xFFFF). */
void sa_rec_init(struct umc_mcmember *r, const uint8_t mgid[16], const uint8_t port_gid[16],
		 uint8_t join_state);

#endif /* TESTS_LIB_SA_MAD_UTIL_H */
