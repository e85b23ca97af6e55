/* SPDX-License-Identifier: MIT */
/*
 * ib_rmpp.h - Reliable Multi-Packet Transaction Protocol (IBA Vol 1 13.6)
 * for SA responses: segment and control MAD builders for the sender, and
 * a receive-side reassembly state machine.  Pure: no I/O, no clock.
 *
 * A response of N bytes of SA data travels as S = max(1, ceil(N / 200))
 * DATA segments, SegmentNumber 1..S, each a full 256-byte MAD that repeats
 * the 56-byte header and carries the next 200 data bytes (the last one
 * zero-padded).  RMPPFlags: Active on every segment, First on segment 1,
 * Last on segment S.  PayloadLength counts the 20-byte SA class header
 * (SM_Key..ComponentMask) of every segment (IBA 13.6.2.3; the kernel's
 * mad_rmpp.c does the same):
 *
 *   pad   = S * 200 - N                  (0..199)
 *   first = S * 220 - pad                (segment 1; when S = 1, = 20 + N)
 *   last  = 220 - pad                    (segment S)
 *   other = 0
 *
 * Flow control (IBA 13.6.3): the sender starts with a window of one
 * segment; each ACK carries the last segment received in order
 * (SegmentNumber) and the last segment the sender may send
 * (NewWindowLast).  The receiver here ACKs segment 1, every segment that
 * reaches its window's end, the last segment, and a repeat of the last
 * in-order segment (so that a sender whose ACK was lost resumes).  It
 * drops segments past a gap and ACKs once more what it has, which a
 * sender takes as a request to resend from there.
 */
#ifndef UMC_WIRE_IB_RMPP_H
#define UMC_WIRE_IB_RMPP_H

#include <stddef.h>
#include <stdint.h>

#include "wire/ib_mad.h"

/** umc_rmpp_seg_count - DATA segments for @data_len bytes: ceil(@data_len / 200), at least 1. */
static inline uint32_t umc_rmpp_seg_count(size_t data_len)
{
	return data_len ? (uint32_t)((data_len + UMC_SA_DATA_LEN - 1) / UMC_SA_DATA_LEN) : 1;
}

/**
 * umc_rmpp_paylen - PayloadLength of DATA segment @seg (1-based) for
 * @data_len bytes (see the top of this file).
 */
uint32_t umc_rmpp_paylen(uint32_t seg, size_t data_len);

/**
 * umc_rmpp_seg_encode - write DATA segment @seg of a response.
 * @out:      UMC_MAD_SIZE bytes
 * @hdr:      the response's header; its RMPP fields are replaced by those of
 *            segment @seg (version 1, DATA, no response time, flags, status 0,
 *            SegmentNumber, PayloadLength)
 * @data:     the whole response payload (@data_len bytes)
 * @seg:      1 .. umc_rmpp_seg_count(@data_len)
 *
 * Context: pure.
 */
void umc_rmpp_seg_encode(uint8_t *out, const struct umc_sa_hdr *hdr, const uint8_t *data,
			 size_t data_len, uint32_t seg);

/**
 * umc_rmpp_ctl_encode - write an ACK, STOP or ABORT for a transfer.
 * @out:     UMC_MAD_SIZE bytes; the SA data is zero
 * @hdr:     the header to repeat: the receiver repeats a DATA segment's
 *           header with the R bit of the method cleared (IBA 13.6.2.1, as
 *           the kernel's format_ack does: an ACK of a GetTableResp is a
 *           GetTable), the sender its own DATA header
 * @type:    UMC_RMPP_TYPE_ACK, _STOP or _ABORT
 * @status:  RMPPStatus (0 for an ACK)
 * @seg_num: ACK: last segment received in order; otherwise 0
 * @newwin:  ACK: NewWindowLast; otherwise 0
 *
 * Context: pure.
 */
void umc_rmpp_ctl_encode(uint8_t *out, const struct umc_sa_hdr *hdr, uint8_t type,
			 uint8_t status, uint32_t seg_num, uint32_t newwin);

/* Reassembly of one multi-segment response (receiver side). */
struct umc_rmpp_rx {
	uint8_t hdr[UMC_SA_HDR_LEN]; /* header of segment 1 as received */
	uint8_t *data;		     /* the payload, @total bytes (malloc'ed) */
	size_t total;		     /* payload bytes, from segment 1's PayloadLength */
	uint32_t nseg;		     /* segments of the transfer */
	uint32_t last;		     /* last segment received in order, 0 = none */
	uint32_t window_last;	     /* NewWindowLast of our last ACK */
	uint32_t gap_acked;	     /* last value ACKed because of a gap, 0 = none */
};

/* What the receiver must do after a segment (umc_rmpp_rx_feed). */
enum umc_rmpp_rx_action {
	UMC_RMPP_RX_NONE,  /* nothing to send, not complete */
	UMC_RMPP_RX_ACK,   /* send ACK(*seg_num, *newwin) */
	UMC_RMPP_RX_DONE,  /* complete: send the final ACK(*seg_num, *newwin), then use data/total */
	UMC_RMPP_RX_ABORT, /* inconsistent transfer: send ABORT(*status) and give up */
	UMC_RMPP_RX_STOP,  /* too large for @max_bytes: send STOP(*status) and give up */
};

struct umc_rmpp_rx_out {
	uint32_t seg_num, newwin; /* for the ACK */
	uint8_t status;		  /* for ABORT / STOP */
};

/**
 * umc_rmpp_rx_feed - take one DATA segment of a response.
 * @rx:        state, zeroed before the first segment
 * @mad:       the segment, UMC_MAD_SIZE bytes
 * @h:         its decoded header (the caller matched the transfer by TID)
 * @window:    segments the sender may send beyond each ACK (>= 1)
 * @max_bytes: largest payload to accept
 * @out:       what to put in the ACK, ABORT or STOP
 *
 * Checks, IBA 13.6.4: RMPPType DATA with Active set; segment 1 carries
 * First and a PayloadLength that gives a consistent segment count and pad;
 * the segment that carries Last is segment nseg and says 220 - pad;
 * SegmentNumber not above nseg.  Segments before segment 1 or past a gap
 * are dropped.
 *
 * Context: pure; allocates the payload buffer on segment 1.
 * Returns: the action (enum umc_rmpp_rx_action); on DONE, @rx->data holds
 * @rx->total bytes and belongs to the caller until umc_rmpp_rx_free().
 */
int umc_rmpp_rx_feed(struct umc_rmpp_rx *rx, const uint8_t *mad, const struct umc_sa_hdr *h,
		     uint32_t window, size_t max_bytes, struct umc_rmpp_rx_out *out);

/** umc_rmpp_rx_free - release the payload buffer; @rx may be fed again from scratch. */
void umc_rmpp_rx_free(struct umc_rmpp_rx *rx);

#endif /* UMC_WIRE_IB_RMPP_H */
