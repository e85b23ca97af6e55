// SPDX-License-Identifier: MIT
/*
 * fuzz_ud_decode.c - libFuzzer target for the RoCEv2 UD receive path.
 *
 * The input is a UDP payload as a receive socket hands it over (BTH
 * through ICRC).  Whatever it holds, umc_ud_decode() must neither crash
 * nor read outside it.  When it decodes, the target also runs what the
 * receive path runs next, and checks what must hold for every packet:
 *  - the decoded lengths add up to the input and re-encoding the headers
 *    gives back the input's bytes, reserved bits aside;
 *  - the ICRC, computed under an IPv4 context taken from the first input
 *    bytes (so every input gets a different one), and the IPv4-ID solver:
 *    an ID it finds must reproduce the packet's ICRC, and the ID a
 *    re-computed ICRC was made with must be found exactly;
 *  - the same for IPv6 and the receive GRH.
 * A violated property aborts, which libFuzzer reports like a crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "umc_param.h"
#include "wire/wire.h"


static void check_reencode(const uint8_t *data, const struct umc_ud_hdr *h, size_t off)
{
	uint8_t hdr[UMC_UD_HDR_MAX], in[UMC_UD_HDR_MAX];

	CHECK(umc_ud_hdr_encode(hdr, h) == off);
	memcpy(in, data, off);
	in[4] &= 0xc0; /* BTH resv6 */
	in[8] &= 0x80; /* BTH resv7 */
	in[16] = 0;    /* DETH reserved byte */
	CHECK(memcmp(hdr, in, off) == 0);
}

/* Context derived from the input: the decoder has already read these bytes. */
static void ctx_from_input(struct umc_ip_ctx *c, const uint8_t *data, uint8_t family)
{
	memset(c, 0, sizeof(*c));
	c->family = family;
	if (family == 6) {
		memcpy(c->src, data, 16);
		memcpy(c->dst, data + 4, 16);
		c->flow_label = (uint32_t)data[5] << 16 | (uint32_t)data[6] << 8 | data[7];
	} else {
		memcpy(c->src, data + 12, 4);
		memcpy(c->dst, data + 16, 4);
		c->ip_id = (uint16_t)(data[9] << 8 | data[10]);
		c->df = data[1] & 0x80;
	}
	c->sport = (uint16_t)(data[2] << 8 | data[3]);
	c->dport = UMC_ROCEV2_UDP_PORT;
	c->tclass = data[5];
	c->hop_limit = data[11];
}

static void check_ipv4_id(const struct umc_ip_ctx *c0, const uint8_t *data, size_t size)
{
	struct umc_ip_ctx c = *c0;
	uint32_t computed = umc_icrc_compute(&c, data, size);
	uint32_t received = umc_icrc_get(data + size - UMC_ICRC_LEN);
	uint32_t other_icrc;
	uint16_t id = 0, other;
	int ret;

	ret = umc_icrc_solve_ipv4_id(&c, size, computed, received, &id);
	CHECK(ret == 0 || ret == -EBADMSG);
	if (ret == 0) {
		c.ip_id = id;
		CHECK(umc_icrc_compute(&c, data, size) == received);
	}

	/* the ID an ICRC was computed with is found, exactly */
	other = (uint16_t)(c0->ip_id ^ (received >> 16 ^ received) ^ 0x8001);
	c.ip_id = other;
	other_icrc = umc_icrc_compute(&c, data, size);
	c.ip_id = c0->ip_id;
	id = 0;
	CHECK(umc_icrc_solve_ipv4_id(&c, size, computed, other_icrc, &id) == 0);
	CHECK(id == other);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct umc_ud_hdr h;
	struct umc_ip_ctx c;
	size_t off = 0, plen = 0;
	uint8_t grh[UMC_IPV6_HLEN], ip[UMC_IPV6_HLEN];
	uint32_t reg;

	if (umc_ud_decode(data, size, &h, &off, &plen))
		return 0;
	CHECK(off == (h.bth.opcode == UMC_OP_UD_SEND_ONLY_IMM ? 24 : 20));
	CHECK(off + plen + h.bth.pad_cnt + UMC_ICRC_LEN == size);
	CHECK(size % 4 == 0 && h.bth.tver == 0);
	check_reencode(data, &h, off);

	ctx_from_input(&c, data, 4);
	check_ipv4_id(&c, data, size);
	reg = umc_icrc_start(&c, size, data, off);
	reg = umc_icrc_update(reg, data + off, size - off - UMC_ICRC_LEN);
	CHECK(umc_icrc_final(reg) == umc_icrc_compute(&c, data, size));
	umc_grh_synth(grh, &c, size);
	CHECK(umc_ip_hdr_encode(ip, &c, size) == UMC_IPV4_HLEN);
	CHECK(memcmp(grh + UMC_IPV6_HLEN - UMC_IPV4_HLEN, ip, UMC_IPV4_HLEN) == 0);

	ctx_from_input(&c, data, 6);
	(void)umc_icrc_compute(&c, data, size);
	umc_grh_synth(grh, &c, size);
	CHECK(umc_ip_hdr_encode(ip, &c, size) == UMC_IPV6_HLEN);
	CHECK(memcmp(grh, ip, UMC_IPV6_HLEN) == 0);
	return 0;
}
