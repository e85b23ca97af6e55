// SPDX-License-Identifier: MIT
/*
 * transport.c - the transport headers of a UD SEND: BTH, DETH and ImmDt.
 *
 * Layouts (all fields big-endian; IBA Vol 1 9.2 BTH, 9.3.3 DETH, 9.3.4
 * ImmDt; the kernel's drivers/infiniband/sw/rxe/rxe_hdr.h):
 *
 *   BTH   0 opcode | 1 SE M PadCnt(2) TVer(4) | 2-3 P_Key |
 *         4 FECN BECN resv6 | 5-7 DestQP | 8 AckReq resv7 | 9-11 PSN
 *   DETH  0-3 Q_Key | 4 reserved | 5-7 SrcQP
 *   ImmDt 0-3 immediate data, only after opcode SEND_ONLY_WITH_IMMEDIATE
 *
 * Reserved fields are written as zero and ignored on receive, as IBA asks.
 */
#include <errno.h>
#include <string.h>

#include "umc_cc.h"
#include "wire/be.h"
#include "wire/transport.h"

enum {
	BTH_SE = 0x80,
	BTH_MIG = 0x40,
	BTH_PAD_SHIFT = 4,
	BTH_PAD_MASK = 0x30,
	BTH_TVER_MASK = 0x0f,
	BTH_FECN = 0x80,
	BTH_BECN = 0x40,
	BTH_ACKREQ = 0x80,
};

static inline bool op_has_imm(uint8_t opcode)
{
	return opcode == UMC_OP_UD_SEND_ONLY_IMM;
}

/**
 * umc_ud_hdr_encode - write BTH, DETH and, for SEND_ONLY_WITH_IMMEDIATE, ImmDt.
 * @out: at least UMC_UD_HDR_MAX bytes
 * @h:   header values; fields wider than their wire field are truncated
 *
 * BTH byte 4 carries FECN and BECN with resv6 zero; byte 8 carries AckReq with
 * resv7 zero; the DETH reserved byte is zero (IBA 9.2, 9.3.3).  ImmDt is
 * copied from @h->imm_be unchanged, since it is already in network order
 * (IBA 9.3.4).
 *
 * Context: pure, any context.
 * Returns: bytes written, 20 (UMC_BTH_LEN + UMC_DETH_LEN) or 24 with ImmDt.
 */
UMC_HOT
size_t umc_ud_hdr_encode(uint8_t *out, const struct umc_ud_hdr *h)
{
	const struct umc_bth *b = &h->bth;
	uint8_t *d = out + UMC_BTH_LEN;

	out[0] = b->opcode;
	out[1] = (uint8_t)((b->se ? BTH_SE : 0) | (b->mig ? BTH_MIG : 0) |
			   ((b->pad_cnt << BTH_PAD_SHIFT) & BTH_PAD_MASK) |
			   (b->tver & BTH_TVER_MASK));
	put_be16(out + 2, b->pkey);
	out[4] = (uint8_t)((b->fecn ? BTH_FECN : 0) | (b->becn ? BTH_BECN : 0));
	put_be24(out + 5, b->dest_qpn);
	out[8] = b->ack_req ? BTH_ACKREQ : 0;
	put_be24(out + 9, b->psn);

	put_be32(d, h->deth.qkey);
	d[4] = 0;
	put_be24(d + 5, h->deth.src_qpn);

	if (!op_has_imm(b->opcode))
		return UMC_BTH_LEN + UMC_DETH_LEN;
	memcpy(d + UMC_DETH_LEN, &h->imm_be, UMC_IMMDT_LEN);
	return UMC_UD_HDR_MAX;
}

static void bth_decode(const uint8_t *p, struct umc_bth *b)
{
	b->opcode = p[0];
	b->se = p[1] & BTH_SE;
	b->mig = p[1] & BTH_MIG;
	b->pad_cnt = (p[1] & BTH_PAD_MASK) >> BTH_PAD_SHIFT;
	b->tver = p[1] & BTH_TVER_MASK;
	b->pkey = (uint16_t)get_be16(p + 2);
	b->fecn = p[4] & BTH_FECN;
	b->becn = p[4] & BTH_BECN;
	b->dest_qpn = get_be24(p + 5);
	b->ack_req = p[8] & BTH_ACKREQ;
	b->psn = get_be24(p + 9);
}

/**
 * umc_ud_decode - parse and length-check a RoCEv2 UD SEND.
 * @p, @len:     the UDP payload, BTH through ICRC
 * @h:           decoded headers; written only on success
 * @payload_off: offset of the first payload byte in @p
 * @payload_len: payload bytes, pad excluded
 *
 * All length checks happen here, once, so that callers can read the
 * headers and the payload without further checks (style guide item 6):
 * @len must cover the BTH, the DETH, the ImmDt when the opcode has one, the
 * PadCnt pad bytes and the ICRC, and must be a whole number of 4-byte words,
 * since PadCnt pads every IBA packet to a 4-byte boundary (IBA 9.2 PadCnt).
 * The opcode must be UD SEND_ONLY or SEND_ONLY_WITH_IMMEDIATE and TVer 0
 * (IBA 9.2, rxe_recv.c hdr_check()).  Reserved
 * bits, MigReq and DestQP are not judged here.  The ICRC is not checked
 * (see umc_icrc_compute()).
 *
 * Context: pure, any context; reads at most @len bytes of @p.
 * Returns: 0; -EBADMSG for a truncated or misaligned packet or one whose
 * PadCnt exceeds what it carries; -EPROTONOSUPPORT for another opcode or a
 * non-zero TVer.
 */
UMC_HOT
int umc_ud_decode(const uint8_t *p, size_t len, struct umc_ud_hdr *h, size_t *payload_off,
		  size_t *payload_len)
{
	uint8_t opcode, pad_cnt;
	size_t hdr_len, room;

	if (len < UMC_BTH_LEN)
		return -EBADMSG;
	opcode = p[0];
	if (opcode != UMC_OP_UD_SEND_ONLY && opcode != UMC_OP_UD_SEND_ONLY_IMM)
		return -EPROTONOSUPPORT;
	if (p[1] & BTH_TVER_MASK)
		return -EPROTONOSUPPORT;

	hdr_len = umc_ud_hdr_len(opcode);
	if (len < hdr_len + UMC_ICRC_LEN || len % 4 != 0)
		return -EBADMSG;
	room = len - hdr_len - UMC_ICRC_LEN;
	pad_cnt = (p[1] & BTH_PAD_MASK) >> BTH_PAD_SHIFT;
	if (room < pad_cnt)
		return -EBADMSG;

	/* Field by field into @h: a struct copy would carry a local's padding. */
	bth_decode(p, &h->bth);
	h->deth.qkey = get_be32(p + UMC_BTH_LEN);
	h->deth.src_qpn = get_be24(p + UMC_BTH_LEN + 5);
	h->imm_be = 0;
	if (op_has_imm(opcode))
		memcpy(&h->imm_be, p + UMC_BTH_LEN + UMC_DETH_LEN, UMC_IMMDT_LEN);
	*payload_off = hdr_len;
	*payload_len = room - pad_cnt;
	return 0;
}
