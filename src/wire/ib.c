// SPDX-License-Identifier: MIT
/*
 * ib.c - LRH, GRH, the InfiniBand-masked ICRC and the VCRC (ib.h).
 */
#include <errno.h>
#include <string.h>

#include "umc_cc.h"
#include "wire/be.h"
#include "wire/ib.h"
#include "wire/sg.h"
#include "wire/vcrc_table.h"

enum {
	LRH_LVER_MASK = 0x0f,
	LRH_LNH_MASK = 0x03,
	LRH_PKTLEN_MASK = 0x07ff,
	GRH_FLOW_MASK = 0xfffff,
	BTH_RESV8A = 4, /* BTH byte masked in the ICRC */
};

UMC_HOT
void umc_lrh_encode(uint8_t out[UMC_LRH_LEN], const struct umc_lrh *l)
{
	out[0] = (uint8_t)((l->vl & 0x0f) << 4 | (l->lver & LRH_LVER_MASK));
	out[1] = (uint8_t)((l->sl & 0x0f) << 4 | (l->lnh & LRH_LNH_MASK));
	put_be16(out + 2, l->dlid);
	put_be16(out + 4, l->pkt_len & LRH_PKTLEN_MASK);
	put_be16(out + 6, l->slid);
}

UMC_HOT
void umc_lrh_decode(const uint8_t in[UMC_LRH_LEN], struct umc_lrh *l)
{
	l->vl = in[0] >> 4;
	l->lver = in[0] & LRH_LVER_MASK;
	l->sl = in[1] >> 4;
	l->lnh = in[1] & LRH_LNH_MASK;
	l->dlid = (uint16_t)get_be16(in + 2);
	l->pkt_len = (uint16_t)(get_be16(in + 4) & LRH_PKTLEN_MASK);
	l->slid = (uint16_t)get_be16(in + 6);
}

UMC_HOT
void umc_grh_encode(uint8_t out[UMC_GRH_HDR_LEN], const struct umc_grh *g)
{
	put_be32(out, (uint32_t)(g->ipver & 0x0f) << 28 | (uint32_t)g->tclass << 20 |
			      (g->flow_label & GRH_FLOW_MASK));
	put_be16(out + 4, g->pay_len);
	out[6] = g->next_hdr;
	out[7] = g->hop_limit;
	memcpy(out + 8, g->sgid, 16);
	memcpy(out + 24, g->dgid, 16);
}

UMC_HOT
void umc_grh_decode(const uint8_t in[UMC_GRH_HDR_LEN], struct umc_grh *g)
{
	uint32_t w = get_be32(in);

	g->ipver = (uint8_t)(w >> 28);
	g->tclass = (uint8_t)(w >> 20);
	g->flow_label = w & GRH_FLOW_MASK;
	g->pay_len = (uint16_t)get_be16(in + 4);
	g->next_hdr = in[6];
	g->hop_limit = in[7];
	memcpy(g->sgid, in + 8, 16);
	memcpy(g->dgid, in + 24, 16);
}

UMC_HOT
size_t umc_ib_hdr_encode(uint8_t *out, struct umc_ib_hdr *ib, struct umc_ud_hdr *ud,
			 size_t payload_len)
{
	bool global = ib->lrh.lnh == UMC_LNH_IBA_GLOBAL;
	size_t grh = global ? UMC_GRH_HDR_LEN : 0;
	size_t tl, transport;

	ud->bth.pad_cnt = (uint8_t)umc_ud_pad(payload_len);
	tl = umc_ud_hdr_encode(out + UMC_LRH_LEN + grh, ud);
	transport = tl + payload_len + ud->bth.pad_cnt + UMC_ICRC_LEN;
	ib->lrh.pkt_len = (uint16_t)((UMC_LRH_LEN + grh + transport) / 4);
	umc_lrh_encode(out, &ib->lrh);
	if (global) {
		ib->grh.pay_len = (uint16_t)transport;
		umc_grh_encode(out + UMC_LRH_LEN, &ib->grh);
	}
	return UMC_LRH_LEN + grh + tl;
}

UMC_HOT
uint32_t umc_ib_icrc_start(const uint8_t *hdr, size_t hdr_len)
{
	uint8_t m[UMC_IB_HDR_MAX];
	size_t bth;

	if (hdr_len > sizeof(m))
		hdr_len = sizeof(m);
	memcpy(m, hdr, hdr_len);
	if ((m[1] & LRH_LNH_MASK) == UMC_LNH_IBA_GLOBAL) {
		memset(m, 0xff, UMC_LRH_LEN);		 /* the whole LRH */
		m[UMC_LRH_LEN] |= 0x0f;			 /* TClass, high nibble */
		memset(m + UMC_LRH_LEN + 1, 0xff, 3);	 /* TClass low nibble, FlowLabel */
		m[UMC_LRH_LEN + 7] = 0xff;		 /* HopLmt */
		bth = UMC_LRH_LEN + UMC_GRH_HDR_LEN;
	} else {
		m[0] |= 0xf0; /* VL */
		bth = UMC_LRH_LEN;
	}
	if (bth + BTH_RESV8A < hdr_len)
		m[bth + BTH_RESV8A] = 0xff;
	return umc_icrc_update(0, m, hdr_len);
}

/*
 * The VCRC eight bytes at a time ("slicing by 8"): the register takes two
 * bytes, and every table lookup says what one byte does to the register
 * over the bytes that follow it (vcrc_table.py).  Bytes left over go one
 * at a time through table 0.
 */
UMC_HOT
uint16_t umc_vcrc_update(uint16_t reg, const void *buf, size_t len)
{
	const uint16_t(*t)[256] = umc_vcrc_table;
	const uint8_t *p = buf;

	for (; len >= 8; len -= 8, p += 8) {
		reg ^= (uint16_t)(p[0] | p[1] << 8);
		reg = (uint16_t)(t[7][reg & 0xff] ^ t[6][reg >> 8] ^ t[5][p[2]] ^ t[4][p[3]] ^
				 t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]]);
	}
	while (len--)
		reg = (uint16_t)(t[0][(reg ^ *p++) & 0xff] ^ (reg >> 8));
	return reg;
}

UMC_HOT
int umc_ib_decode_sg(const struct umc_sg *sg, struct umc_ib_hdr *ib, struct umc_ud_hdr *ud,
		     size_t *payload_off, size_t *payload_len)
{
	uint8_t hdr[UMC_IB_HDR_MAX], tail[UMC_ICRC_LEN + UMC_VCRC_LEN];
	size_t len = sg->len, hl = UMC_LRH_LEN, tlen, off, plen;
	uint32_t icrc;
	int ret;

	if (len < UMC_IB_MIN_LEN || len > UMC_LRH_LEN + 4 * LRH_PKTLEN_MASK + UMC_VCRC_LEN)
		return -EBADMSG;
	/* The headers, contiguous: every check below reads only what len covers. */
	umc_sg_read(sg, 0, hdr, sizeof(hdr));
	umc_lrh_decode(hdr, &ib->lrh);
	if (ib->lrh.lver != 0)
		return -EPROTONOSUPPORT;
	if ((size_t)ib->lrh.pkt_len * 4 + UMC_VCRC_LEN != len)
		return -EBADMSG;
	if (ib->lrh.lnh == UMC_LNH_IBA_GLOBAL) {
		if (len < UMC_IB_MIN_LEN + UMC_GRH_HDR_LEN)
			return -EBADMSG;
		umc_grh_decode(hdr + UMC_LRH_LEN, &ib->grh);
		if (ib->grh.ipver != UMC_GRH_IPVER || ib->grh.next_hdr != UMC_GRH_NXTHDR_IBA)
			return -EPROTONOSUPPORT;
		hl += UMC_GRH_HDR_LEN;
		if (ib->grh.pay_len != len - hl - UMC_VCRC_LEN)
			return -EBADMSG;
	} else if (ib->lrh.lnh != UMC_LNH_IBA_LOCAL) {
		return -EPROTONOSUPPORT;
	}
	tlen = len - hl - UMC_VCRC_LEN; /* BTH through ICRC */
	ret = umc_ud_decode(hdr + hl, tlen, ud, &off, &plen);
	if (ret)
		return ret;
	umc_sg_read(sg, len - sizeof(tail), tail, sizeof(tail));
	if (umc_vcrc_final(umc_sg_vcrc(0xffff, sg, 0, len - UMC_VCRC_LEN)) !=
	    umc_vcrc_get(tail + UMC_ICRC_LEN))
		return -EIO;
	icrc = umc_ib_icrc_start(hdr, hl + off);
	icrc = umc_sg_icrc(icrc, sg, hl + off, tlen - off - UMC_ICRC_LEN);
	if (umc_icrc_final(icrc) != umc_icrc_get(tail))
		return -EILSEQ;
	*payload_off = hl + off;
	*payload_len = plen;
	return 0;
}

int umc_ib_decode(const uint8_t *p, size_t len, struct umc_ib_hdr *ib, struct umc_ud_hdr *ud,
		  size_t *payload_off, size_t *payload_len)
{
	struct iovec iov = {(void *)(uintptr_t)p, len};
	struct umc_sg sg = {&iov, 1, len};

	return umc_ib_decode_sg(&sg, ib, ud, payload_off, payload_len);
}
