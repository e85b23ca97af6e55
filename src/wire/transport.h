/* SPDX-License-Identifier: MIT */
/*
 * transport.h - the InfiniBand transport headers of a UD SEND, shared by
 * both link layers: BTH, DETH and ImmDt (IBA Vol 1 9.2 BTH, 9.3.3 DETH,
 * 9.3.4 ImmDt).  RoCEv2 puts them in a UDP datagram (roce.h); InfiniBand
 * behind an LRH and a GRH (ib.h).  Pure codecs: no I/O, no global state.
 *
 * A "transport payload" below is BTH through ICRC inclusive: what follows
 * the UDP header on RoCEv2, and the GRH on InfiniBand.  Multi-byte fields
 * are big-endian.
 */
#ifndef UMC_WIRE_TRANSPORT_H
#define UMC_WIRE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	UMC_BTH_LEN = 12,
	UMC_DETH_LEN = 8,
	UMC_IMMDT_LEN = 4,
	UMC_ICRC_LEN = 4,
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

/* The transport headers of UD SEND @opcode: BTH, DETH, and ImmDt for 0x65 (20 or 24 bytes). */
static inline size_t umc_ud_hdr_len(uint8_t opcode)
{
	return UMC_BTH_LEN + UMC_DETH_LEN + (opcode == UMC_OP_UD_SEND_ONLY_IMM ? UMC_IMMDT_LEN : 0);
}

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
 * @p, @len:        the transport payload (BTH through ICRC)
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

#endif /* UMC_WIRE_TRANSPORT_H */
