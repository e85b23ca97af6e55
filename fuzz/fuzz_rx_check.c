// SPDX-License-Identifier: MIT
/*
 * fuzz_rx_check.c - libFuzzer target for the whole receive check of a
 * RoCEv2 UD datagram: umc_rocev2_rx_check() (decode, ICRC, IPv4-ID solver)
 * and the 40-byte GRH the receiver is then given (umc_grh_synth()).
 *
 * Input: a context header of CTX_LEN bytes, then the UDP payload (BTH
 * through ICRC) as a receive socket hands it over.  The context stands for
 * what the socket reports, every field of which a remote sender chooses
 * (addresses, source port, TTL, TOS, flow label) or the receiver assumes
 * (IPv4 ID 0):
 *
 *   0      flags: bit 0 IPv6, bit 1 DF; bits 2-7: where the payload is cut
 *          into pieces (below)
 *   1-16   source address (IPv4: the first 4 bytes)
 *   17-32  destination address
 *   33-34  UDP source port
 *   35-36  IPv4 ID assumed
 *   37     TOS / traffic class
 *   38     TTL / hop limit
 *   39-41  flow label (20 bits)
 *
 * What must hold for every input, or the target aborts:
 *  - the check returns 0, -EBADMSG, -EPROTONOSUPPORT or -EILSEQ, and a
 *    decoder refusal is exactly what umc_ud_decode() says;
 *  - accepted: the lengths add up, the ICRC recomputed under the final
 *    context (the solved ID, for IPv4) equals the packet's, and only IPv4
 *    ever has its ID solved;
 *  - refused for its ICRC: the ICRC under the given context differs;
 *  - the GRH is 20 zero bytes and an IPv4 header with a valid checksum, or
 *    an IPv6 header, carrying the context and the datagram's length;
 *  - the same datagram in three pieces, cut after byte (flags >> 2) and
 *    half-way through the rest, as the kernel scatters one over scratch
 *    headers and a posted receive, gets the same answer from
 *    umc_rocev2_rx_check_sg() (the headers read in place or copied
 *    together, depending on the first cut).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "umc_param.h"
#include "wire/wire.h"


enum { CTX_LEN = 42 };

static void ctx_parse(struct umc_ip_ctx *c, const uint8_t *d)
{
	memset(c, 0, sizeof(*c));
	c->family = d[0] & 1 ? 6 : 4;
	c->df = d[0] & 2;
	memcpy(c->src, d + 1, 16);
	memcpy(c->dst, d + 17, 16);
	if (c->family == 4) { /* an IPv4 address is the first 4 bytes, the rest zero */
		memset(c->src + 4, 0, 12);
		memset(c->dst + 4, 0, 12);
	}
	c->sport = (uint16_t)(d[33] << 8 | d[34]);
	c->dport = UMC_ROCEV2_UDP_PORT;
	c->ip_id = (uint16_t)(d[35] << 8 | d[36]);
	c->tclass = d[37];
	c->hop_limit = d[38];
	c->flow_label = ((uint32_t)d[39] << 16 | (uint32_t)d[40] << 8 | d[41]) & 0xfffff;
}

/* RFC 791 header checksum: the one's-complement sum over a valid header is 0xffff. */
static bool ipv4_csum_ok(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < UMC_IPV4_HLEN; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static void check_grh(const struct umc_ip_ctx *c, size_t len)
{
	static const uint8_t zeros[UMC_IPV6_HLEN - UMC_IPV4_HLEN];
	uint8_t grh[UMC_GRH_LEN];
	const uint8_t *h;

	umc_grh_synth(grh, c, len);
	if (c->family == 4) {
		size_t total = UMC_IPV4_HLEN + UMC_UDP_HLEN + len;

		CHECK(memcmp(grh, zeros, sizeof(zeros)) == 0);
		h = grh + sizeof(zeros);
		CHECK(h[0] == 0x45 && h[1] == c->tclass);
		CHECK((size_t)(h[2] << 8 | h[3]) == (total & 0xffff));
		CHECK((uint16_t)(h[4] << 8 | h[5]) == c->ip_id);
		CHECK(!!(h[6] & 0x40) == c->df && h[8] == c->hop_limit && h[9] == 17);
		CHECK(memcmp(h + 12, c->src, 4) == 0 && memcmp(h + 16, c->dst, 4) == 0);
		CHECK(ipv4_csum_ok(h));
	} else {
		h = grh;
		CHECK(h[0] >> 4 == 6);
		CHECK((uint8_t)(h[0] << 4 | h[1] >> 4) == c->tclass);
		CHECK(((uint32_t)(h[1] & 15) << 16 | (uint32_t)h[2] << 8 | h[3]) == c->flow_label);
		CHECK((size_t)(h[4] << 8 | h[5]) == ((UMC_UDP_HLEN + len) & 0xffff));
		CHECK(h[6] == 17 && h[7] == c->hop_limit);
		CHECK(memcmp(h + 8, c->src, 16) == 0 && memcmp(h + 24, c->dst, 16) == 0);
	}
}

/* Field by field: struct assignment need not copy padding. */
static bool ctx_equal(const struct umc_ip_ctx *a, const struct umc_ip_ctx *b)
{
	return a->family == b->family && !memcmp(a->src, b->src, 16) &&
	       !memcmp(a->dst, b->dst, 16) && a->sport == b->sport && a->dport == b->dport &&
	       a->ip_id == b->ip_id && a->df == b->df && a->tclass == b->tclass &&
	       a->hop_limit == b->hop_limit && a->flow_label == b->flow_label;
}

static bool hdr_equal(const struct umc_ud_hdr *a, const struct umc_ud_hdr *b)
{
	return a->bth.opcode == b->bth.opcode && a->bth.se == b->bth.se &&
	       a->bth.mig == b->bth.mig && a->bth.pad_cnt == b->bth.pad_cnt &&
	       a->bth.tver == b->bth.tver && a->bth.pkey == b->bth.pkey &&
	       a->bth.fecn == b->bth.fecn && a->bth.becn == b->bth.becn &&
	       a->bth.dest_qpn == b->bth.dest_qpn && a->bth.ack_req == b->bth.ack_req &&
	       a->bth.psn == b->bth.psn && a->deth.qkey == b->deth.qkey &&
	       a->deth.src_qpn == b->deth.src_qpn && a->imm_be == b->imm_be;
}

/* The check of @p in three pieces agrees with @ret, @h, @off, @plen, @solved and @c. */
static void check_pieces(const struct umc_ip_ctx *given, const uint8_t *p, size_t len,
			 size_t cut, int ret, const struct umc_ud_hdr *h, size_t off,
			 size_t plen, bool solved, const struct umc_ip_ctx *c)
{
	size_t cut2 = cut + (len - cut) / 2;
	struct iovec iov[3] = {
		{(void *)(uintptr_t)p, cut},
		{(void *)(uintptr_t)(p + cut), cut2 - cut},
		{(void *)(uintptr_t)(p + cut2), len - cut2},
	};
	struct umc_sg sg = {iov, 3, len};
	struct umc_ip_ctx cs = *given, cm = *given;
	struct umc_icrc_memo memo = {0};
	struct umc_ud_hdr hs;
	size_t offs, plens;
	bool solveds;

	/*
	 * Through an ICRC memo, twice: the first call fills it, the second
	 * is answered from it (one input, so that a finding reproduces).
	 */
	CHECK(umc_rocev2_rx_check_sg(&cm, &sg, &hs, &offs, &plens, &solveds, &memo) == ret);
	CHECK(umc_rocev2_rx_check_sg(&cs, &sg, &hs, &offs, &plens, &solveds, &memo) == ret);
	CHECK(ctx_equal(&cs, c));
	if (ret == 0)
		CHECK(hdr_equal(&hs, h) && offs == off && plens == plen && solveds == solved);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct umc_ip_ctx c, given, rest;
	struct umc_ud_hdr h, hd;
	size_t off, plen, doff, dplen, len;
	const uint8_t *p;
	bool solved;
	int ret, dec;

	if (size < CTX_LEN)
		return 0;
	ctx_parse(&c, data);
	given = c;
	p = data + CTX_LEN;
	len = size - CTX_LEN;

	ret = umc_rocev2_rx_check(&c, p, len, &h, &off, &plen, &solved);
	check_pieces(&given, p, len, (size_t)(data[0] >> 2) < len ? (size_t)(data[0] >> 2) : len,
		     ret, &h, off, plen, solved, &c);
	dec = umc_ud_decode(p, len, &hd, &doff, &dplen);
	CHECK(ret == 0 || ret == -EBADMSG || ret == -EPROTONOSUPPORT || ret == -EILSEQ);
	if (dec) {
		CHECK(ret == dec && !solved && ctx_equal(&c, &given));
		return 0;
	}
	CHECK(doff == off && dplen == plen);
	if (ret == -EILSEQ) {
		CHECK(!solved && ctx_equal(&c, &given));
		CHECK(umc_icrc_compute(&c, p, len) != umc_icrc_get(p + len - UMC_ICRC_LEN));
	} else {
		CHECK(ret == 0);
		CHECK(off + plen + h.bth.pad_cnt + UMC_ICRC_LEN == len);
		CHECK(umc_icrc_compute(&c, p, len) == umc_icrc_get(p + len - UMC_ICRC_LEN));
		CHECK(solved ? c.family == 4 && c.ip_id != given.ip_id : c.ip_id == given.ip_id);
		rest = c;
		rest.ip_id = given.ip_id;
		CHECK(ctx_equal(&rest, &given)); /* only the ID may change */
	}
	check_grh(&c, len);
	return 0;
}
