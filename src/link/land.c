// SPDX-License-Identifier: MIT
/*
 * land.c - receiving a datagram straight into a posted receive the engine
 * lent (verbs/rx_lend.c), for every link.
 *
 * The kernel scatters one datagram over a recvmmsg() slot's iovecs: its
 * transport headers into the link's scratch slot, the rest (an ImmDt, the
 * payload, pad and trailers) into the lent WQE's bytes behind its GRH
 * area, and whatever does not fit there into the scratch slot's tail.  The
 * link checks the datagram over those pieces (wire/sg.h); then the payload
 * either lies whole in the WQE, where it is completed in place, or the
 * pieces are put back together in the scratch slot.
 */
#include <string.h>

#include "link/driver.h"
#include "wire/sg.h"

UMC_HOT
size_t umc_rx_aim(struct iovec *iov, uint8_t *slot, size_t hdr, const struct umc_rx_land *land)
{
	size_t n = 0, left = UMC_RX_SLOT - hdr;

	if (!land) {
		iov[n++] = (struct iovec){slot, UMC_RX_SLOT};
		return n;
	}
	iov[n++] = (struct iovec){slot, hdr};
	/* A longer datagram is truncated (MSG_TRUNC) wherever it would land. */
	for (int i = 0; i < land->niov && left; i++) {
		size_t c = land->iov[i].iov_len < left ? land->iov[i].iov_len : left;

		iov[n++] = (struct iovec){land->iov[i].iov_base, c};
		left -= c;
	}
	if (left)
		iov[n++] = (struct iovec){slot + UMC_RX_SLOT - left, left};
	return n;
}

UMC_HOT
void umc_rx_settle(struct umc_rx_pkt *pkt, uint8_t *slot, size_t hdr,
		   const struct umc_rx_land *land, size_t len, size_t off)
{
	pkt->land = NULL;
	pkt->land_off = 0;
	if (land && len > hdr) {
		if (umc_likely(off >= hdr && off + pkt->len <= hdr + land->room)) {
			pkt->land = land;
			pkt->land_off = (uint32_t)(off - hdr); /* an ImmDt in front */
			pkt->payload = NULL;
			return;
		}
		/* The land's share goes back between the headers and the tail. */
		size_t got = len - hdr < land->room ? len - hdr : land->room;
		struct umc_sg sg = {land->iov, land->niov, got};

		umc_sg_read(&sg, 0, slot + hdr, got);
	}
	pkt->payload = slot + off;
}
