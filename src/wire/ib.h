/* SPDX-License-Identifier: MIT */
/*
 * ib.h - the InfiniBand link part of a packet: LRH, GRH, the ICRC with the
 * InfiniBand masking and the VCRC (IBA Vol 1 chapter 7 and 8.3).  Pure
 * codecs: no I/O, no global state.
 *
 * A UD SEND on InfiniBand, as umcast's simulated fabric carries it (one
 * packet per UDP datagram, nothing before the LRH):
 *
 *   LRH (8) | [GRH (40), when LNH = 3] | BTH (12) | DETH (8) | [ImmDt (4)] |
 *   payload | pad (0-3) | ICRC (4) | VCRC (2)
 *
 *   LRH  0 VL(4) LVer(4) | 1 SL(4) resv(2) LNH(2) | 2-3 DLID |
 *        4-5 resv(5) PktLen(11) | 6-7 SLID                      (IBA 7.7)
 *   GRH  0-3 IPVer(4) TClass(8) FlowLabel(20) | 4-5 PayLen | 6 NxtHdr |
 *        7 HopLmt | 8-23 SGID | 24-39 DGID                      (IBA 8.3)
 *
 * PktLen counts 4-byte words from the first byte of the LRH to the last
 * byte of the ICRC; PayLen counts the bytes after the GRH up to and
 * including the ICRC; the VCRC is in neither (IBA 7.7.8, 8.3.2).
 *
 * ICRC (IBA 7.8.1): the CRC-32 of crc.h over the packet from the LRH to the
 * end of the pad, with the fields a switch or router may change replaced
 * by ones: in a global packet (GRH present) the whole LRH and the GRH's
 * TClass, FlowLabel and HopLmt; in a local packet the LRH's VL; in both
 * the BTH's Resv8a (byte 4).  Stored least significant byte first, as on
 * RoCEv2, which masks exactly the same fields.
 *
 * VCRC (IBA 7.8.2): CRC-16 with polynomial 0x100B (x^16 + x^12 + x^3 + x +
 * 1) over every byte from the LRH through the ICRC, computed as the ICRC
 * is (bit-reflected, so register polynomial 0xD008; initial value 0xFFFF;
 * the result complemented) and, like the ICRC, stored least significant
 * byte first so that its bits leave in the order they were computed.
 */
#ifndef UMC_WIRE_IB_H
#define UMC_WIRE_IB_H

#include "wire/crc.h"
#include "wire/transport.h"

enum {
	UMC_LRH_LEN = 8,
	UMC_GRH_HDR_LEN = 40,
	UMC_VCRC_LEN = 2,
	/* LRH Link Next Header (IBA 7.7.5). */
	UMC_LNH_RAW = 0,
	UMC_LNH_IP = 1,
	UMC_LNH_IBA_LOCAL = 2,
	UMC_LNH_IBA_GLOBAL = 3,
	/* GRH Next Header for an IBA transport header (IBA 8.3.3). */
	UMC_GRH_NXTHDR_IBA = 0x1B,
	UMC_GRH_IPVER = 6,
	/* The longest header in front of the payload: LRH, GRH, BTH, DETH, ImmDt. */
	UMC_IB_HDR_MAX = UMC_LRH_LEN + UMC_GRH_HDR_LEN + UMC_UD_HDR_MAX,
	/* Shortest local UD SEND: LRH, BTH, DETH, ICRC, VCRC. */
	UMC_IB_MIN_LEN = UMC_LRH_LEN + UMC_UD_MIN_LEN + UMC_VCRC_LEN,
	/* Multicast LIDs (IBA 4.1.2): 0xC000-0xFFFE; 0xFFFF is the permissive LID. */
	UMC_MLID_FIRST = 0xC000,
	UMC_LID_PERMISSIVE = 0xFFFF,
};

/* Local Route Header, decoded (IBA 7.7). */
struct umc_lrh {
	uint8_t vl;	  /* 4 bits */
	uint8_t lver;	  /* link version, 0 */
	uint8_t sl;	  /* 4 bits */
	uint8_t lnh;	  /* UMC_LNH_* */
	uint16_t dlid;
	uint16_t pkt_len; /* 11 bits, in 4-byte words, LRH through ICRC */
	uint16_t slid;
};

/* Global Route Header, decoded (IBA 8.3). */
struct umc_grh {
	uint8_t ipver;	     /* 6 */
	uint8_t tclass;
	uint32_t flow_label; /* 20 bits */
	uint16_t pay_len;    /* bytes after the GRH through the ICRC */
	uint8_t next_hdr;    /* 0x1B */
	uint8_t hop_limit;
	uint8_t sgid[16];
	uint8_t dgid[16];
};

/* The link headers of one InfiniBand packet. */
struct umc_ib_hdr {
	struct umc_lrh lrh;
	struct umc_grh grh; /* meaningful when lrh.lnh == UMC_LNH_IBA_GLOBAL */
};

/** umc_lrh_encode - write the 8-byte LRH; fields wider than the wire field are truncated. */
void umc_lrh_encode(uint8_t out[UMC_LRH_LEN], const struct umc_lrh *l);

/** umc_lrh_decode - read an 8-byte LRH (no checks: see umc_ib_decode). */
void umc_lrh_decode(const uint8_t in[UMC_LRH_LEN], struct umc_lrh *l);

/** umc_grh_encode - write the 40-byte GRH; fields wider than the wire field are truncated. */
void umc_grh_encode(uint8_t out[UMC_GRH_HDR_LEN], const struct umc_grh *g);

/** umc_grh_decode - read a 40-byte GRH (no checks: see umc_ib_decode). */
void umc_grh_decode(const uint8_t in[UMC_GRH_HDR_LEN], struct umc_grh *g);

/**
 * umc_ib_hdr_encode - write LRH, GRH (when lnh is global), BTH, DETH and
 * ImmDt of a UD SEND whose payload is @payload_len bytes, filling the
 * length fields (LRH PktLen, GRH PayLen) and BTH PadCnt from it; the
 * other fields come from @ib and @ud.
 * @out: at least UMC_IB_HDR_MAX bytes
 *
 * Returns: the bytes written (the ICRC starts over them, umc_ib_icrc_start).
 */
size_t umc_ib_hdr_encode(uint8_t *out, struct umc_ib_hdr *ib, struct umc_ud_hdr *ud,
			 size_t payload_len);

/**
 * umc_ib_icrc_start - CRC register after the masked headers (IBA 7.8.1).
 * @hdr:     the headers as sent, from the LRH through DETH/ImmDt
 * @hdr_len: their length (umc_ib_hdr_encode's result)
 *
 * Continue with umc_icrc_update() over the payload and pad, then
 * umc_icrc_final().
 */
uint32_t umc_ib_icrc_start(const uint8_t *hdr, size_t hdr_len);

/**
 * umc_vcrc_update - continue a VCRC over @len bytes.
 * @reg: 0xFFFF to start, or a previous update's value
 * Returns: the register; umc_vcrc_final() turns it into the VCRC.
 */
uint16_t umc_vcrc_update(uint16_t reg, const void *buf, size_t len);

/** umc_vcrc_final - the VCRC from a register after the last byte (the complement). */
static inline uint16_t umc_vcrc_final(uint16_t reg)
{
	return (uint16_t)~reg;
}

/** umc_vcrc_put - store a VCRC in wire order (least significant byte first). */
static inline void umc_vcrc_put(uint8_t *out, uint16_t vcrc)
{
	out[0] = (uint8_t)vcrc;
	out[1] = (uint8_t)(vcrc >> 8);
}

/** umc_vcrc_get - read a VCRC stored in wire order. */
static inline uint16_t umc_vcrc_get(const uint8_t *in)
{
	return (uint16_t)(in[0] | in[1] << 8);
}

/**
 * umc_ib_decode - parse and check an InfiniBand UD SEND packet.
 * @p, @len:      the whole packet, LRH through VCRC
 * @ib:           the decoded LRH and, for a global packet, GRH
 * @ud:           the decoded BTH, DETH and ImmDt
 * @payload_off:  offset of the first payload byte in @p
 * @payload_len:  payload bytes, pad excluded
 *
 * Checks, once: LVer 0; LNH IBA local or global; PktLen * 4 + 2 == @len;
 * for a global packet IPVer 6, NxtHdr 0x1B and PayLen consistent; the
 * transport headers as umc_ud_decode() does; the VCRC; the ICRC.
 *
 * Returns: 0; -EBADMSG for a truncated or inconsistent packet;
 * -EPROTONOSUPPORT for another LVer, LNH, NxtHdr, opcode or a non-zero
 * TVer; -EIO for a bad VCRC (the link-level check); -EILSEQ for a bad ICRC
 * (as RoCEv2's receive check), so that a receiver counts them apart.
 */
int umc_ib_decode(const uint8_t *p, size_t len, struct umc_ib_hdr *ib, struct umc_ud_hdr *ud,
		  size_t *payload_off, size_t *payload_len);

#endif /* UMC_WIRE_IB_H */
