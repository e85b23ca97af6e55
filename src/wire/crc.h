/* SPDX-License-Identifier: MIT */
/*
 * crc.h - the CRCs of InfiniBand packets, shared by both link layers.
 *
 * The ICRC is the standard CRC-32 (IEEE 802.3, bit-reflected 0xEDB88320,
 * as zlib) over the packet's invariant fields (IBA Vol 1 7.8.1; RoCEv2:
 * Annex A17.3.3).  Each link layer builds its own masked prefix (roce.h,
 * ib.h) and continues with umc_icrc_update() over the rest.  The value
 * goes on the wire least significant byte first.
 */
#ifndef UMC_WIRE_CRC_H
#define UMC_WIRE_CRC_H

#include <stddef.h>
#include <stdint.h>

/** umc_icrc_update - feed @len bytes into a CRC-32 register (zlib convention). */
uint32_t umc_icrc_update(uint32_t reg, const void *buf, size_t len);

/**
 * umc_icrc_final - the ICRC value from a register after the last update.
 * In zlib's convention the register already is the finished CRC-32 (the
 * final inversion happens inside every call), so this is the identity; it
 * exists so that callers do not depend on that convention.
 */
static inline uint32_t umc_icrc_final(uint32_t reg)
{
	return reg;
}

/** umc_icrc_put - store an ICRC value in wire order (least significant byte first). */
static inline void umc_icrc_put(uint8_t *out, uint32_t icrc)
{
	out[0] = (uint8_t)icrc;
	out[1] = (uint8_t)(icrc >> 8);
	out[2] = (uint8_t)(icrc >> 16);
	out[3] = (uint8_t)(icrc >> 24);
}

/** umc_icrc_get - read an ICRC value stored in wire order. */
static inline uint32_t umc_icrc_get(const uint8_t *in)
{
	return (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 |
	       (uint32_t)in[3] << 24;
}

#endif /* UMC_WIRE_CRC_H */
