// SPDX-License-Identifier: MIT
/*
 * fuzz_ib_decode.c - libFuzzer target for the InfiniBand receive check.
 *
 * The input is one datagram as the IB link's sockets hand it over: an IB
 * packet, LRH through VCRC.  Whatever it holds, umc_ib_decode() must
 * neither crash nor read outside it.  When it accepts, the target checks
 * what must hold for every accepted packet:
 *  - the lengths add up: LRH PktLen * 4 + 2 is the input's length, the
 *    GRH's PayLen (global packets) what follows the GRH without the VCRC,
 *    and the payload ends where pad and ICRC begin;
 *  - re-encoding the decoded headers with the decoded payload gives back
 *    the input byte for byte, ICRC and VCRC included, but for the fields
 *    the codec ignores on input (LRH reserved bits, BTH Resv8a and resv7,
 *    DETH's reserved byte, which the ICRC masks or leaves out of the
 *    decoded form) - so the decoder accepts only what it can reproduce.
 * Random bytes rarely carry a right VCRC and ICRC, so every input is also
 * decoded with both made right (as a sender would compute them for those
 * headers): the checks behind the CRCs see arbitrary headers too.
 * A violated property aborts, which libFuzzer reports like a crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "wire/ib.h"

enum { IB_MAX_LEN = UMC_LRH_LEN + 4 * 2047 + UMC_VCRC_LEN };

/* What the decoder must accept of @data, and must rebuild exactly. */
static void check_packet(const uint8_t *data, size_t size)
{
	static uint8_t out[IB_MAX_LEN];
	struct umc_ib_hdr ib;
	struct umc_ud_hdr ud;
	size_t off, plen, hl, n;
	uint32_t icrc;

	if (umc_ib_decode(data, size, &ib, &ud, &off, &plen))
		return;
	CHECK((size_t)ib.lrh.pkt_len * 4 + UMC_VCRC_LEN == size);
	hl = ib.lrh.lnh == UMC_LNH_IBA_GLOBAL ? UMC_LRH_LEN + UMC_GRH_HDR_LEN : UMC_LRH_LEN;
	if (ib.lrh.lnh == UMC_LNH_IBA_GLOBAL)
		CHECK(ib.grh.pay_len == size - hl - UMC_VCRC_LEN);
	CHECK(off + plen + ud.bth.pad_cnt + UMC_ICRC_LEN + UMC_VCRC_LEN == size);

	/* The same packet built by the encoder, as the IB link sends it. */
	CHECK(umc_ib_hdr_encode(out, &ib, &ud, plen) == off);
	out[hl + 4] = data[hl + 4];	       /* BTH Resv8a: masked by the ICRC */
	out[hl + 8] |= data[hl + 8] & 0x7f;    /* BTH resv7 */
	out[hl + UMC_BTH_LEN + 4] = data[hl + UMC_BTH_LEN + 4]; /* DETH reserved */
	out[1] |= data[1] & 0x0c;	       /* LRH resv2 */
	out[4] |= data[4] & 0xf8;	       /* LRH resv5 */
	icrc = umc_ib_icrc_start(out, off);
	memcpy(out + off, data + off, plen + ud.bth.pad_cnt); /* payload and pad as sent */
	n = off + plen + ud.bth.pad_cnt;
	icrc = umc_icrc_update(icrc, out + off, n - off);
	umc_icrc_put(out + n, umc_icrc_final(icrc));
	n += UMC_ICRC_LEN;
	umc_vcrc_put(out + n, umc_vcrc_final(umc_vcrc_update(0xffff, out, n)));
	n += UMC_VCRC_LEN;
	CHECK(n == size);
	CHECK(memcmp(out, data, size) == 0);
}

/* @data with the ICRC and VCRC a sender of its headers would write. */
static size_t with_crcs(const uint8_t *data, size_t size, uint8_t *p)
{
	size_t hl;

	if (size < UMC_IB_MIN_LEN || size > IB_MAX_LEN)
		return 0;
	memcpy(p, data, size);
	hl = (p[1] & 3) == UMC_LNH_IBA_GLOBAL ? UMC_LRH_LEN + UMC_GRH_HDR_LEN : UMC_LRH_LEN;
	hl += UMC_BTH_LEN + UMC_DETH_LEN;
	if (hl < size && p[hl - UMC_BTH_LEN - UMC_DETH_LEN] == UMC_OP_UD_SEND_ONLY_IMM)
		hl += UMC_IMMDT_LEN;
	if (hl + UMC_ICRC_LEN + UMC_VCRC_LEN > size)
		return 0;
	uint32_t icrc = umc_ib_icrc_start(p, hl);

	icrc = umc_icrc_update(icrc, p + hl, size - hl - UMC_ICRC_LEN - UMC_VCRC_LEN);
	umc_icrc_put(p + size - UMC_ICRC_LEN - UMC_VCRC_LEN, umc_icrc_final(icrc));
	umc_vcrc_put(p + size - UMC_VCRC_LEN,
		     umc_vcrc_final(umc_vcrc_update(0xffff, p, size - UMC_VCRC_LEN)));
	return size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t fixed[IB_MAX_LEN];
	size_t n;

	check_packet(data, size);
	n = with_crcs(data, size, fixed);
	if (n) {
		uint8_t *copy = malloc(n); /* exact size: a read past it is caught */

		if (copy) {
			memcpy(copy, fixed, n);
			check_packet(copy, n);
			free(copy);
		}
	}
	return 0;
}
