// SPDX-License-Identifier: MIT
/*
 * roce_icrc.c - the RoCEv2 Invariant CRC, and recovering the IPv4 ID from it.
 *
 * The ICRC is the standard CRC-32 (IEEE 802.3, reflected 0xEDB88320, as
 * zlib) of: 8 bytes of 0xFF standing for the absent LRH, the IP header,
 * the UDP header and the BTH with their variant fields set to all ones,
 * then DETH, ImmDt, payload and pad as sent (IBA Vol 1 Annex A17.3.3;
 * the kernel's rxe_icrc.c rxe_icrc_hdr()).  The 32-bit result goes on
 * the wire least significant byte first (umc_icrc_put()).
 *
 * Register values follow zlib's crc32() convention throughout: a value is
 * the finished CRC of everything fed so far, and feeding more bytes
 * continues it.  ISA-L's crc32_gzip_refl() chains the same way and does the
 * byte work (folding with carry-less multiply where the CPU has it); this
 * file never loops over packet bytes itself.
 *
 * The receive side of a UDP socket cannot see the IPv4 ID, which the ICRC
 * covers.  CRC-32 is affine over GF(2), so the ICRC of a packet is the ICRC
 * computed with an assumed ID, plus a linear function of (real ID ^ assumed
 * ID): umc_icrc_solve_ipv4_id() inverts that function.  zlib's
 * crc32_combine_gen()/crc32_combine_op() move a bit pattern across the
 * packet's tail in O(log n) instead of feeding it zero bytes.
 */
#include <errno.h>
#include <string.h>

#include <zlib.h>

#include "umc_cc.h"
#include "wire/be.h"
#include "wire/icrc_psn_table.h"
#include "wire/roce.h"

enum {
	IPV4_ID_END = 6,     /* the ID is IPv4 header bytes 4 and 5 */
	IPV4_MAX_UDP_LEN = 0xffff - UMC_IPV4_HLEN - UMC_UDP_HLEN,
	ID_BITS = 16,
};

/*
 * The CRC-32 (zlib convention) of the 8 bytes of 0xFF that stand for the
 * absent LRH: the register every ICRC continues from.  The known-answer
 * vectors (test_wire) fail if it is wrong.
 */
#define LRH_STANDIN_CRC 0x2144df1cu

/* CRC-32 polynomial, bit-reflected: bit 31 is x^0, bit 0 is x^31. */
#define CRC32_POLY_REFL 0xedb88320u

/*
 * The IPv4 header with its variant fields (TOS, TTL, checksum) as ones
 * (A17.3.3), written directly: the real checksum would only be masked.
 */
static void ipv4_hdr_masked(uint8_t *ip, const struct umc_ip_ctx *c, size_t udp_len)
{
	size_t total = UMC_IPV4_HLEN + UMC_UDP_HLEN + udp_len;

	ip[0] = 0x45; /* version 4, IHL 5 */
	ip[1] = 0xff; /* TOS */
	ip[2] = (uint8_t)(total >> 8);
	ip[3] = (uint8_t)total;
	ip[4] = (uint8_t)(c->ip_id >> 8);
	ip[5] = (uint8_t)c->ip_id;
	ip[6] = c->df ? 0x40 : 0;
	ip[7] = 0;
	ip[8] = 0xff; /* TTL */
	ip[9] = 17;   /* UDP */
	ip[10] = 0xff; /* header checksum */
	ip[11] = 0xff;
	memcpy(ip + 12, c->src, 4);
	memcpy(ip + 16, c->dst, 4);
}

/* The IPv6 header with traffic class, flow label and hop limit as ones. */
static void ipv6_hdr_masked(uint8_t *ip, const struct umc_ip_ctx *c, size_t udp_len)
{
	umc_ip_hdr_encode(ip, c, udp_len);
	ip[0] |= 0x0f;		 /* traffic class, high nibble */
	memset(ip + 1, 0xff, 3); /* traffic class low nibble, flow label */
	ip[7] = 0xff;		 /* hop limit */
}

/**
 * umc_icrc_start - CRC value after the ICRC's masked prefix and the
 * transport headers.
 * @c:       the datagram's IP/UDP context (family 6 is IPv6, other IPv4)
 * @udp_len: UDP payload length, BTH through ICRC
 * @hdr:     the transport headers as sent, starting with the BTH
 * @hdr_len: how many of them to feed: from UMC_BTH_LEN to UMC_UD_HDR_MAX
 *
 * Builds on the stack the 8 bytes of 0xFF, the IP header, the UDP header and
 * @hdr, with TOS/TTL/IPv4 checksum or traffic class/flow label/hop limit,
 * the UDP checksum and BTH byte 4 (FECN, BECN, resv6) set to ones, and CRCs
 * them in one call (IBA Annex A17.3.3; rxe_icrc_hdr()).  Continue
 * with umc_icrc_update() over the rest (payload and pad), then
 * umc_icrc_final().
 *
 * Context: pure, any context.
 * Returns: the CRC-32 of the prefix, in zlib's chaining convention.
 */
uint32_t umc_icrc_start(const struct umc_ip_ctx *c, size_t udp_len, const uint8_t *hdr,
			size_t hdr_len)
{
	uint8_t pre[UMC_IPV6_HLEN + UMC_UDP_HLEN + UMC_UD_HDR_MAX];
	size_t n;

	if (hdr_len > UMC_UD_HDR_MAX)
		hdr_len = UMC_UD_HDR_MAX;
	if (c->family == 6) {
		ipv6_hdr_masked(pre, c, udp_len);
		n = UMC_IPV6_HLEN;
	} else {
		ipv4_hdr_masked(pre, c, udp_len);
		n = UMC_IPV4_HLEN;
	}
	umc_udp_hdr_encode(pre + n, c, udp_len, 0xffff);
	n += UMC_UDP_HLEN;
	memcpy(pre + n, hdr, hdr_len);
	pre[n + 4] = 0xff;
	n += hdr_len;
	/*
	 * The 8 bytes of 0xFF are the same in every ICRC: start from their
	 * CRC, so that an IPv4 prefix is 48 bytes, three 16-byte folds.
	 */
	return umc_icrc_update(LRH_STANDIN_CRC, pre, n);
}

enum { BTH_PSN = 9 }; /* the PSN: BTH bytes 9-11 */

/*
 * Unaligned loads in host order, for the memo's compares: equality needs
 * no byte order, and be.h's would add a byte swap per word on the data
 * path (bench/README.md, "The ICRC memo").
 */
static uint32_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * Does @m hold the prefix of these inputs, but for the PSN?  Every input
 * umc_icrc_start() reads but BTH byte 4 (masked): the family, the
 * addresses, ports and lengths, the IPv4 ID and DF, and the header bytes
 * around the PSN.  A zeroed memo's family (0) matches no packet's.
 */
static bool memo_holds(const struct umc_icrc_memo *m, const struct umc_ip_ctx *c, size_t udp_len,
		       const uint8_t *hdr, size_t hdr_len)
{
	if (m->hdr_len != hdr_len || m->udp_len != udp_len || m->sport != c->sport ||
	    m->dport != c->dport)
		return false;
	if (c->family == 6) {
		if (m->family != 6 || load64(m->src) != load64(c->src) ||
		    load64(m->src + 8) != load64(c->src + 8) ||
		    load64(m->dst) != load64(c->dst) ||
		    load64(m->dst + 8) != load64(c->dst + 8))
			return false;
	} else if (m->family != 4 || m->ip_id != c->ip_id || m->df != c->df ||
		   load32(m->src) != load32(c->src) || load32(m->dst) != load32(c->dst)) {
		return false;
	}
	/* BTH bytes 0-3 and 5-8 (byte 4 is masked, 9-11 the PSN), DETH, ImmDt */
	return load32(hdr) == load32(m->hdr) && load32(hdr + 5) == load32(m->hdr + 5) &&
	       load64(hdr + UMC_BTH_LEN) == load64(m->hdr + UMC_BTH_LEN) &&
	       (hdr_len < UMC_UD_HDR_MAX ||
		load32(hdr + UMC_UD_HDR_MAX - 4) == load32(m->hdr + UMC_UD_HDR_MAX - 4));
}

UMC_HOT
uint32_t umc_icrc_start_memo(struct umc_icrc_memo *m, const struct umc_ip_ctx *c, size_t udp_len,
			     const uint8_t *hdr, size_t hdr_len)
{
	bool imm = hdr_len == UMC_UD_HDR_MAX;
	uint32_t psn, r;

	if (hdr_len != UMC_BTH_LEN + UMC_DETH_LEN && !imm)
		return umc_icrc_start(c, udp_len, hdr, hdr_len);
	if (!memo_holds(m, c, udp_len, hdr, hdr_len)) {
		bool v6 = c->family == 6;

		memset(m, 0, sizeof(*m));
		m->family = v6 ? 6 : 4;
		m->hdr_len = (uint8_t)hdr_len;
		m->udp_len = (uint32_t)udp_len;
		m->sport = c->sport;
		m->dport = c->dport;
		if (!v6) {
			m->ip_id = c->ip_id;
			m->df = c->df;
		}
		memcpy(m->src, c->src, v6 ? 16 : 4);
		memcpy(m->dst, c->dst, v6 ? 16 : 4);
		memcpy(m->hdr, hdr, hdr_len);
		memset(m->hdr + BTH_PSN, 0, 3);
		m->reg = umc_icrc_start(c, udp_len, m->hdr, hdr_len);
	}
	/* What the PSN adds (icrc_psn_table.py), nibble by nibble. */
	psn = get_be24(hdr + BTH_PSN);
	r = m->reg;
	for (int k = 0; k < 6; k++)
		r ^= umc_icrc_psn_table[imm][k][psn >> (4 * k) & 15];
	return r;
}

/**
 * umc_icrc_compute - the ICRC of a whole RoCEv2 UDP payload.
 * @c:   the datagram's IP/UDP context
 * @p:   the UDP payload, BTH through ICRC
 * @len: its length; the last 4 bytes (the ICRC itself) are not read
 *
 * Works for any BTH-based packet (it does not look at the opcode), so it
 * also checks CNPs and other transports.  IBA Annex A17.3.3.
 *
 * Context: pure, any context.
 * Returns: the ICRC value (umc_icrc_put() writes it in wire order), or 0
 * without reading @p when @len < UMC_BTH_LEN + UMC_ICRC_LEN.
 */
uint32_t umc_icrc_compute(const struct umc_ip_ctx *c, const uint8_t *p, size_t len)
{
	size_t hdr = UMC_BTH_LEN;
	uint32_t reg;

	if (len < UMC_BTH_LEN + UMC_ICRC_LEN)
		return 0;
	/*
	 * Where the masked prefix ends does not change the value; it changes
	 * the speed.  ISA-L folds 256 bytes per step and then the rest 16
	 * bytes at a time, one carry-less multiply after another, so the rest
	 * of the bulk call should be short: end the prefix with the UD
	 * headers, and a power-of-two payload is the bulk on its own.
	 */
	if (p[0] == UMC_OP_UD_SEND_ONLY || p[0] == UMC_OP_UD_SEND_ONLY_IMM)
		hdr = umc_ud_hdr_len(p[0]);
	if (hdr > len - UMC_ICRC_LEN)
		hdr = len - UMC_ICRC_LEN;
	reg = umc_icrc_start(c, len, p, hdr);
	reg = umc_icrc_update(reg, p + hdr, len - hdr - UMC_ICRC_LEN);
	return umc_icrc_final(reg);
}

/* Multiply a reflected CRC residue by x modulo the CRC-32 polynomial. */
static inline uint32_t mul_x(uint32_t v)
{
	return (v >> 1) ^ (v & 1 ? CRC32_POLY_REFL : 0);
}

/*
 * The ICRC change caused by each IPv4 ID bit alone, for an ICRC input whose
 * last @tail bytes follow the ID.  The register is linear in the input once
 * the fixed init/final XOR cancel, so flipping ID bit j flips col[j].
 *
 * The last ID bit fed (bit 7 of the low byte: CRC-32 is fed LSB first)
 * leaves x^32 mod P = CRC32_POLY_REFL in the register; each bit fed one step
 * earlier is one more factor of x, and crossing @tail bytes is a factor of
 * x^(8 * @tail), which zlib computes by repeated squaring.
 */
static void id_columns(uint32_t col[ID_BITS], size_t tail)
{
	uint32_t v =
	    (uint32_t)crc32_combine_op(CRC32_POLY_REFL, 0, crc32_combine_gen((z_off_t)tail));
	int j;

	for (j = 7; j >= 0; j--) { /* low byte, fed last: bits 7..0 */
		col[j] = v;
		v = mul_x(v);
	}
	for (j = 15; j >= 8; j--) { /* high byte, fed first: bits 15..8 */
		col[j] = v;
		v = mul_x(v);
	}
}

/*
 * Solve sum(x_j * col[j]) = @delta over GF(2) by Gaussian elimination.
 * Each basis vector keeps the combination of ID bits it stands for and a
 * pivot bit that no later basis vector contains.
 */
static int gf2_solve(const uint32_t col[ID_BITS], uint32_t delta, uint16_t *x)
{
	uint32_t vec[ID_BITS], piv[ID_BITS];
	uint16_t comb[ID_BITS], sol = 0;
	int rank = 0, i, j;

	for (j = 0; j < ID_BITS; j++) {
		uint32_t v = col[j];
		uint16_t k = (uint16_t)(1u << j);

		for (i = 0; i < rank; i++) {
			if (v & piv[i]) {
				v ^= vec[i];
				k ^= comb[i];
			}
		}
		if (!v)
			continue;
		vec[rank] = v;
		comb[rank] = k;
		piv[rank] = v & -v;
		rank++;
	}
	for (i = 0; i < rank; i++) {
		if (delta & piv[i]) {
			delta ^= vec[i];
			sol ^= comb[i];
		}
	}
	if (delta)
		return -EBADMSG;
	*x = sol;
	return 0;
}

/**
 * umc_icrc_solve_ipv4_id - find the IPv4 identification a sender used.
 * @c:        received datagram's context (IPv4), with ip_id as assumed when
 *            @computed was calculated
 * @udp_len:  UDP payload length, BTH through ICRC
 * @computed: ICRC computed with @c->ip_id
 * @received: ICRC found in the packet
 * @id:       the identification that makes both agree
 *
 * With every other covered field fixed, ICRC(id) = ICRC(c->ip_id) ^
 * L(id ^ c->ip_id) for a linear map L from 16 to 32 bits that depends only
 * on the packet length.  L is injective (CRC-32 detects every burst of up
 * to 32 bits), so at most one ID fits, and a difference outside L's range
 * (probability 1 - 2^-16 for a random corruption) proves the packet
 * corrupt: a 16-bit integrity check remains (docs/design.md, "RoCEv2
 * fidelity").
 *
 * Context: pure, any context.  Costs O(log @udp_len), independent of the
 * payload bytes.
 * Returns: 0 and *@id; -EBADMSG if no ID explains the difference or
 * @udp_len cannot be an IPv4 datagram's.
 */
int umc_icrc_solve_ipv4_id(const struct umc_ip_ctx *c, size_t udp_len, uint32_t computed,
			   uint32_t received, uint16_t *id)
{
	uint32_t col[ID_BITS];
	size_t tail;
	uint16_t x;
	int ret;

	if (udp_len > IPV4_MAX_UDP_LEN)
		return -EBADMSG;
	if (computed == received) {
		*id = c->ip_id;
		return 0;
	}
	/* ICRC input after the ID (IPv4 bytes 4-5): IPv4 bytes 6-19, UDP, BTH..pad */
	tail = UMC_IPV4_HLEN - IPV4_ID_END + UMC_UDP_HLEN + udp_len - UMC_ICRC_LEN;
	id_columns(col, tail);
	ret = gf2_solve(col, computed ^ received, &x);
	if (ret)
		return ret;
	*id = c->ip_id ^ x;
	return 0;
}
