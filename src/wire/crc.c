// SPDX-License-Identifier: MIT
/*
 * crc.c - the CRC-32 both ICRCs are made of.  ISA-L's crc32_gzip_refl()
 * does the byte work (folding with carry-less multiply where the CPU has
 * it) and chains as zlib's crc32() does, so this file never loops over
 * packet bytes itself.
 */
#include <isa-l/crc.h>

#include "umc_cc.h"
#include "wire/crc.h"

/**
 * umc_icrc_update - continue a CRC-32 over @len more bytes.
 * @reg: value from umc_icrc_start() or a previous update
 * @buf: bytes; not read when @len is 0
 * @len: byte count
 *
 * Context: pure, any context.
 * Returns: the CRC-32 of everything fed so far (zlib convention).
 */
UMC_HOT
uint32_t umc_icrc_update(uint32_t reg, const void *buf, size_t len)
{
	if (len == 0)
		return reg;
	return crc32_gzip_refl(reg, buf, len);
}
