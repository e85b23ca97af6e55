/* SPDX-License-Identifier: MIT */
/*
 * wire.h - pure codecs for RoCEv2 UD packets: BTH, DETH, ImmDt, the IP/UDP
 * pseudo-header, the ICRC and the 40-byte receive GRH.
 *
 * Nothing here does I/O or keeps global state, so every function can be
 * unit-tested against shared/vectors/rocev2_vectors.txt and fuzzed.
 *
 * Packet (IBA Vol 1 9.2 BTH, 9.3.3 DETH, 9.3.4 ImmDt; Annex A17 RoCEv2):
 *
 *   IPv4 (20) | UDP (8, dport 4791) | BTH (12) | DETH (8) | [ImmDt (4)] |
 *   payload | pad (0-3, zero) | ICRC (4, least significant byte first)
 *
 * "UDP payload" below always means BTH through ICRC inclusive, and every
 * @udp_len parameter is that length (the UDP header's 8 bytes excluded).
 * Multi-byte header fields are big-endian; only the ICRC is little-endian.
 */
#ifndef UMC_WIRE_H
#define UMC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	UMC_BTH_LEN = 12,
	UMC_DETH_LEN = 8,
	UMC_IMMDT_LEN = 4,
	UMC_ICRC_LEN = 4,
	UMC_IPV4_HLEN = 20,
	UMC_IPV6_HLEN = 40,
	UMC_UDP_HLEN = 8,
	/* BTH + DETH + ImmDt: the longest UD transport header. */
	UMC_UD_HDR_MAX = UMC_BTH_LEN + UMC_DETH_LEN + UMC_IMMDT_LEN,
	/* Shortest valid UD SEND: BTH + DETH + ICRC, no payload. */
	UMC_UD_MIN_LEN = UMC_BTH_LEN + UMC_DETH_LEN + UMC_ICRC_LEN,
};

/* BTH opcodes umcast sends and accepts (IBA Table 38: UD = 0b011 << 5). */
enum umc_ud_opcode {
	UMC_OP_UD_SEND_ONLY = 0x64,
	UMC_OP_UD_SEND_ONLY_IMM = 0x65,
};

/* Base Transport Header, decoded (IBA 9.2). */
struct umc_bth {
	uint8_t opcode;
	bool se;	  /* solicited event */
	bool mig;	  /* MigReq */
	uint8_t pad_cnt;  /* 0..3 */
	uint8_t tver;	  /* transport header version, 0 */
	uint16_t pkey;
	bool fecn, becn;
	uint32_t dest_qpn; /* 24 bits */
	bool ack_req;
	uint32_t psn; /* 24 bits */
};

/* Datagram Extended Transport Header (IBA 9.3.3). */
struct umc_deth {
	uint32_t qkey;
	uint32_t src_qpn; /* 24 bits */
};

/* The transport headers of one UD SEND. */
struct umc_ud_hdr {
	struct umc_bth bth;
	struct umc_deth deth;
	uint32_t imm_be; /* ImmDt in network order; only for UMC_OP_UD_SEND_ONLY_IMM */
};

/*
 * The IP and UDP context of a packet: what the ICRC pseudo-header covers
 * and what the receive GRH shows.  Addresses are in network order; an IPv4
 * address sits in the first 4 bytes of src/dst.
 */
struct umc_ip_ctx {
	uint8_t family; /* 4 or 6 */
	uint8_t src[16];
	uint8_t dst[16];
	uint16_t sport, dport;
	uint16_t ip_id;	    /* IPv4 identification (0 from umcast senders) */
	bool df;	    /* IPv4 don't-fragment */
	uint8_t tclass;	    /* IPv4 TOS / IPv6 traffic class */
	uint8_t hop_limit;  /* IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label; /* IPv6, 20 bits */
};

/**
 * umc_ud_hdr_encode - write BTH, DETH and (for opcode 0x65) ImmDt.
 * @out: at least UMC_UD_HDR_MAX bytes
 * @h:   header values; fields wider than the wire field are truncated
 *
 * Returns: bytes written, 20 or 24.
 */
size_t umc_ud_hdr_encode(uint8_t *out, const struct umc_ud_hdr *h);

/**
 * umc_ud_decode - parse and length-check a RoCEv2 UD SEND.
 * @p, @len:        the UDP payload (BTH through ICRC)
 * @h:              decoded headers
 * @payload_off:    offset of the first payload byte in @p
 * @payload_len:    payload bytes, pad excluded
 *
 * Checks, once: @len covers BTH, DETH, ImmDt if the opcode has one, the pad
 * and the ICRC, and is a multiple of 4 (PadCnt aligns every packet); the
 * opcode is UD SEND_ONLY or SEND_ONLY_WITH_IMMEDIATE; TVer is 0.  The ICRC
 * is not checked here (see umc_icrc_*), so a packet cut at a 4-byte
 * boundary still decodes and is caught by its ICRC.
 *
 * Returns: 0, or -EBADMSG for a truncated or inconsistent packet, or
 * -EPROTONOSUPPORT for another opcode or a non-zero TVer.
 */
int umc_ud_decode(const uint8_t *p, size_t len, struct umc_ud_hdr *h, size_t *payload_off,
		  size_t *payload_len);

/**
 * umc_ud_pad - pad count for a payload length: (-len) & 3 (IBA 9.2 PadCnt).
 */
static inline unsigned umc_ud_pad(size_t payload_len)
{
	return (unsigned)(-payload_len) & 3;
}

/**
 * umc_roce_sport - UDP source port of a QP, as rxe chooses it:
 * 0xC000 + (hash_32(qpn, 14) & 0x3fff), hash_32(v, 14) = (v * 0x61C88647) >> 18.
 */
static inline uint16_t umc_roce_sport(uint32_t qpn)
{
	return (uint16_t)(0xC000u + ((((uint32_t)(qpn * 0x61C88647u)) >> 18) & 0x3fffu));
}

/**
 * umc_ip_hdr_encode - write the IPv4 (20 bytes, valid checksum, protocol
 * UDP) or IPv6 (40 bytes, next header UDP) header of a datagram whose UDP
 * payload is @udp_len bytes (total length = header + 8 + @udp_len).
 *
 * Returns: bytes written, 20 or 40.
 */
size_t umc_ip_hdr_encode(uint8_t *out, const struct umc_ip_ctx *c, size_t udp_len);

/** umc_udp_hdr_encode - write the 8-byte UDP header (length 8 + @udp_len) with checksum @csum. */
void umc_udp_hdr_encode(uint8_t out[UMC_UDP_HLEN], const struct umc_ip_ctx *c, size_t udp_len,
			uint16_t csum);

/**
 * umc_icrc_start - CRC register after the ICRC's fixed prefix and the
 * transport headers: 8 bytes of 0xFF (the absent LRH), the masked IP
 * header, the masked UDP header, then @hdr_len bytes of transport headers
 * from the BTH on, BTH byte 4 masked (IBA A17.3.3; rocev2-wire.md
 * section 2), fed in one CRC call.
 * @c:       the datagram's IP/UDP context
 * @udp_len: UDP payload length, BTH through ICRC
 * @hdr:     the transport headers as sent (BTH, DETH, ImmDt)
 * @hdr_len: UMC_BTH_LEN to UMC_UD_HDR_MAX bytes of them (more are ignored)
 *
 * Continue with umc_icrc_update() over what follows (payload and pad),
 * then umc_icrc_final().
 */
uint32_t umc_icrc_start(const struct umc_ip_ctx *c, size_t udp_len, const uint8_t *hdr,
			size_t hdr_len);

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

/**
 * umc_icrc_compute - the ICRC of a whole UDP payload @p of @len bytes (BTH
 * through ICRC; the last 4 bytes are not read).
 *
 * Returns: the ICRC value; umc_icrc_put() writes it in wire order.  A @len
 * below UMC_BTH_LEN + UMC_ICRC_LEN reads nothing and returns 0.
 */
uint32_t umc_icrc_compute(const struct umc_ip_ctx *c, const uint8_t *p, size_t len);

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

/**
 * umc_icrc_solve_ipv4_id - find the IPv4 identification a sender used.
 * @c:        context of the received datagram, with ip_id as assumed when
 *            @computed was calculated
 * @udp_len:  UDP payload length (BTH through ICRC)
 * @computed: ICRC computed with c->ip_id
 * @received: ICRC found in the packet
 * @id:       the identification that makes both agree
 *
 * A UDP socket never sees the IPv4 ID, which the ICRC covers.  The ICRC is
 * affine in the 16 ID bits, so the ID is found by solving a 32x16 linear
 * system over GF(2); the 16 remaining equations are the integrity check.
 *
 * Returns: 0 and *@id, or -EBADMSG if no ID explains the difference.
 */
int umc_icrc_solve_ipv4_id(const struct umc_ip_ctx *c, size_t udp_len, uint32_t computed,
			   uint32_t received, uint16_t *id);

/**
 * umc_rocev2_rx_check - decode a received UD datagram and check its ICRC
 * under @ip, solving the IPv4 ID when the assumed one does not fit (rx.c).
 *
 * Returns: 0 (*@id_solved says whether ip->ip_id was replaced); -EBADMSG or
 * -EPROTONOSUPPORT for a malformed datagram (umc_ud_decode()); -EILSEQ for
 * a wrong ICRC.
 */
int umc_rocev2_rx_check(struct umc_ip_ctx *ip, const uint8_t *p, size_t len,
			struct umc_ud_hdr *h, size_t *payload_off, size_t *payload_len,
			bool *id_solved);

/**
 * umc_grh_synth - the 40 bytes rxe writes in front of a UD receive buffer:
 * for IPv4, 20 zero bytes then the IPv4 header (valid checksum); for IPv6,
 * the IPv6 header (rocev2-wire.md section 1.10).
 * @udp_len: UDP payload length as received (BTH through ICRC)
 */
void umc_grh_synth(uint8_t out[40], const struct umc_ip_ctx *c, size_t udp_len);

#endif /* UMC_WIRE_H */
