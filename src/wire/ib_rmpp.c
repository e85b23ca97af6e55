// SPDX-License-Identifier: MIT
/*
 * ib_rmpp.c - RMPP segments, control MADs and reassembly (ib_rmpp.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire/be.h"
#include "wire/ib_rmpp.h"

static uint32_t seg_pad(size_t data_len)
{
	return (uint32_t)((size_t)umc_rmpp_seg_count(data_len) * UMC_SA_DATA_LEN - data_len);
}

uint32_t umc_rmpp_paylen(uint32_t seg, size_t data_len)
{
	uint32_t nseg = umc_rmpp_seg_count(data_len), pad = seg_pad(data_len);

	if (seg == nseg)
		return UMC_RMPP_SEG_PAYLOAD - pad;
	if (seg == 1)
		return nseg * UMC_RMPP_SEG_PAYLOAD - pad;
	return 0;
}

void umc_rmpp_seg_encode(uint8_t *out, const struct umc_sa_hdr *hdr, const uint8_t *data,
			 size_t data_len, uint32_t seg)
{
	struct umc_sa_hdr h = *hdr;
	uint32_t nseg = umc_rmpp_seg_count(data_len);
	size_t off = (size_t)(seg - 1) * UMC_SA_DATA_LEN, n = 0;

	h.rmpp.version = UMC_RMPP_VERSION;
	h.rmpp.type = UMC_RMPP_TYPE_DATA;
	h.rmpp.resp_time = UMC_RMPP_NO_RESP_TIME;
	h.rmpp.flags = UMC_RMPP_FLAG_ACTIVE | (seg == 1 ? UMC_RMPP_FLAG_FIRST : 0) |
		       (seg == nseg ? UMC_RMPP_FLAG_LAST : 0);
	h.rmpp.status = 0;
	h.rmpp.seg_num = seg;
	h.rmpp.paylen_newwin = umc_rmpp_paylen(seg, data_len);
	umc_sa_hdr_encode(out, &h);
	if (off < data_len)
		n = data_len - off < UMC_SA_DATA_LEN ? data_len - off : UMC_SA_DATA_LEN;
	if (n)
		memcpy(out + UMC_SA_HDR_LEN, data + off, n);
	memset(out + UMC_SA_HDR_LEN + n, 0, UMC_SA_DATA_LEN - n);
}

void umc_rmpp_ctl_encode(uint8_t *out, const struct umc_sa_hdr *hdr, uint8_t type,
			 uint8_t status, uint32_t seg_num, uint32_t newwin)
{
	struct umc_sa_hdr h = *hdr;

	h.rmpp.version = UMC_RMPP_VERSION;
	h.rmpp.type = type;
	h.rmpp.resp_time = UMC_RMPP_NO_RESP_TIME;
	h.rmpp.flags = UMC_RMPP_FLAG_ACTIVE;
	h.rmpp.status = status;
	h.rmpp.seg_num = seg_num;
	h.rmpp.paylen_newwin = newwin;
	umc_sa_hdr_encode(out, &h);
	memset(out + UMC_SA_HDR_LEN, 0, UMC_SA_DATA_LEN);
}

void umc_rmpp_rx_free(struct umc_rmpp_rx *rx)
{
	free(rx->data);
	memset(rx, 0, sizeof(*rx));
}

static int rx_fail(struct umc_rmpp_rx_out *out, int action, uint8_t status)
{
	out->status = status;
	out->seg_num = out->newwin = 0;
	return action;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Segment 1: the size of the whole transfer. */
static int rx_first(struct umc_rmpp_rx *rx, const uint8_t *mad, const struct umc_sa_hdr *h,
		    uint32_t window, size_t max_bytes, struct umc_rmpp_rx_out *out)
{
	uint64_t paylen = h->rmpp.paylen_newwin, nseg, pad, total;

	if (!(h->rmpp.flags & UMC_RMPP_FLAG_FIRST))
		return rx_fail(out, UMC_RMPP_RX_ABORT, UMC_RMPP_STATUS_BAD_SEG);
	if (paylen < UMC_SA_CLASS_HDR_LEN)
		return rx_fail(out, UMC_RMPP_RX_ABORT, UMC_RMPP_STATUS_BAD_LEN);
	nseg = (paylen + UMC_RMPP_SEG_PAYLOAD - 1) / UMC_RMPP_SEG_PAYLOAD;
	pad = nseg * UMC_RMPP_SEG_PAYLOAD - paylen;
	/* A segment carries at least one data byte, except a lone empty one. */
	if (pad >= UMC_SA_DATA_LEN && !(nseg == 1 && pad == UMC_SA_DATA_LEN))
		return rx_fail(out, UMC_RMPP_RX_ABORT, UMC_RMPP_STATUS_BAD_LEN);
	if (!!(h->rmpp.flags & UMC_RMPP_FLAG_LAST) != (nseg == 1))
		return rx_fail(out, UMC_RMPP_RX_ABORT, UMC_RMPP_STATUS_BAD_LEN);
	total = nseg * UMC_SA_DATA_LEN - pad;
	if (total > max_bytes)
		return rx_fail(out, UMC_RMPP_RX_STOP, UMC_RMPP_STATUS_RESX);
	rx->data = malloc(total ? total : 1);
	if (!rx->data)
		return rx_fail(out, UMC_RMPP_RX_STOP, UMC_RMPP_STATUS_RESX);
	memcpy(rx->hdr, mad, UMC_SA_HDR_LEN);
	memcpy(rx->data, mad + UMC_SA_HDR_LEN, min_u32((uint32_t)total, UMC_SA_DATA_LEN));
	rx->total = (size_t)total;
	rx->nseg = (uint32_t)nseg;
	rx->last = 1;
	rx->window_last = min_u32(rx->nseg, 1 + window);
	out->seg_num = 1;
	out->newwin = rx->window_last;
	return nseg == 1 ? UMC_RMPP_RX_DONE : UMC_RMPP_RX_ACK;
}

int umc_rmpp_rx_feed(struct umc_rmpp_rx *rx, const uint8_t *mad, const struct umc_sa_hdr *h,
		     uint32_t window, size_t max_bytes, struct umc_rmpp_rx_out *out)
{
	uint32_t seg = h->rmpp.seg_num;
	size_t off;

	if (window < 1)
		window = 1;
	if (h->rmpp.type != UMC_RMPP_TYPE_DATA || !(h->rmpp.flags & UMC_RMPP_FLAG_ACTIVE))
		return rx_fail(out, UMC_RMPP_RX_ABORT, UMC_RMPP_STATUS_BADT);
	if (!rx->data) {
		if (seg != 1) /* segment 1 was lost: wait for the sender to resend it */
			return rx_fail(out, UMC_RMPP_RX_NONE, 0);
		return rx_first(rx, mad, h, window, max_bytes, out);
	}
	out->seg_num = rx->last;
	out->newwin = rx->window_last;
	if (seg > rx->nseg)
		return rx_fail(out, UMC_RMPP_RX_ABORT, UMC_RMPP_STATUS_S2B);
	if (seg <= rx->last) /* a resend: repeat the ACK once, for the last one we have */
		return seg == rx->last ? UMC_RMPP_RX_ACK : UMC_RMPP_RX_NONE;
	if (seg > rx->last + 1) { /* a gap: say once where we are */
		if (rx->gap_acked == rx->last)
			return UMC_RMPP_RX_NONE;
		rx->gap_acked = rx->last;
		return UMC_RMPP_RX_ACK;
	}
	if (!!(h->rmpp.flags & UMC_RMPP_FLAG_LAST) != (seg == rx->nseg))
		return rx_fail(out, UMC_RMPP_RX_ABORT, UMC_RMPP_STATUS_BAD_LEN);
	off = (size_t)(seg - 1) * UMC_SA_DATA_LEN;
	if (seg == rx->nseg && h->rmpp.paylen_newwin != UMC_RMPP_SEG_PAYLOAD -
						 ((size_t)rx->nseg * UMC_SA_DATA_LEN - rx->total))
		return rx_fail(out, UMC_RMPP_RX_ABORT, UMC_RMPP_STATUS_BAD_LEN);
	memcpy(rx->data + off, mad + UMC_SA_HDR_LEN,
	       rx->total - off < UMC_SA_DATA_LEN ? rx->total - off : UMC_SA_DATA_LEN);
	rx->last = seg;
	out->seg_num = seg;
	if (seg == rx->nseg) {
		rx->window_last = seg;
		out->newwin = seg;
		return UMC_RMPP_RX_DONE;
	}
	if (seg < rx->window_last)
		return UMC_RMPP_RX_NONE;
	rx->window_last = min_u32(rx->nseg, seg + window);
	out->newwin = rx->window_last;
	return UMC_RMPP_RX_ACK;
}
