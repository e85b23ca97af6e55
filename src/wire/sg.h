/* SPDX-License-Identifier: MIT */
/*
 * sg.h - a received datagram that the kernel scattered over several
 * buffers (recvmmsg() into scratch headers and straight into a posted
 * receive): the byte ranges of the logical datagram, read and CRCed
 * wherever they landed.  Pure: no I/O, no global state.
 */
#ifndef UMC_WIRE_SG_H
#define UMC_WIRE_SG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * A datagram in pieces: @n iovecs whose bytes, in order, are the datagram
 * (later pieces may be longer than what arrived: only the first @len bytes
 * count).
 */
struct umc_sg {
	const struct iovec *iov;
	int n;
	size_t len;
};

/**
 * umc_sg_read - copy bytes [@off, @off + @cnt) of datagram @sg to @dst.
 *
 * Context: pure.  Reads no byte at or past @sg->len.
 * Returns: the bytes copied (fewer than @cnt where @sg ends).
 */
size_t umc_sg_read(const struct umc_sg *sg, size_t off, void *dst, size_t cnt);

/**
 * umc_sg_icrc - continue a CRC-32 (crc.h) over bytes [@off, @off + @cnt)
 * of @sg.
 *
 * Context: pure.  Reads no byte at or past @sg->len.
 * Returns: the register.
 */
uint32_t umc_sg_icrc(uint32_t reg, const struct umc_sg *sg, size_t off, size_t cnt);

/**
 * umc_sg_vcrc - continue a VCRC (ib.h) over bytes [@off, @off + @cnt) of @sg.
 *
 * Context: pure.  Reads no byte at or past @sg->len.
 * Returns: the register.
 */
uint16_t umc_sg_vcrc(uint16_t reg, const struct umc_sg *sg, size_t off, size_t cnt);

#endif /* UMC_WIRE_SG_H */
