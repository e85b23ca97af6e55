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

#if defined(__x86_64__)
#include <immintrin.h>

/*
 * ISA-L's AVX-512 kernel (crc32_gzip_refl_by16_10) returns with the upper
 * halves of the vector registers dirty: it ends without VZEROUPPER and
 * leaves that to its caller (intel/isa-l issue 24).  Every legacy SSE
 * instruction after it (the baseline x86-64 code gcc makes of a memset or
 * a struct copy) then waits on those halves, until something clears them:
 * a receive's ICRC check made the GRH written after it cost as much as
 * copying the 1 KiB datagram (bench/fanout-floor.c: 16 readers' copy and
 * check went from 2.3 M to 4.1-4.6 M datagrams/s with the clear).  The
 * Intel 64 and IA-32 Architectures Optimization Reference Manual asks for
 * VZEROUPPER after wide vector code and before code that may use SSE.
 * Only a CPU with AVX has the instruction (and ISA-L uses no wide
 * registers on one without).
 */
__attribute__((target("avx"))) static void crc_clean_upper(void)
{
	_mm256_zeroupper();
}

static inline uint32_t crc_update(uint32_t reg, const void *buf, size_t len)
{
	reg = crc32_gzip_refl(reg, buf, len);
	if (__builtin_cpu_supports("avx"))
		crc_clean_upper();
	return reg;
}
#else
static inline uint32_t crc_update(uint32_t reg, const void *buf, size_t len)
{
	return crc32_gzip_refl(reg, buf, len);
}
#endif

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
	return crc_update(reg, buf, len);
}
