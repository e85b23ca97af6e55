// SPDX-License-Identifier: MIT
/*
 * fuzz_sa_mad.c - libFuzzer target for the SA MAD codecs (wire/ib_mad.c,
 * wire/ib_rmpp.c).
 *
 * The input is cut into 256-byte MADs.  Each is decoded as an SA header,
 * an MCMemberRecord and a ClassPortInfo, and re-encoded: the bytes must
 * come back but for the reserved fields (which encode as zero), and a
 * second decode must give the same values.  The MADs are also fed, in
 * order, to an RMPP receiver (with a window and a size limit taken from
 * the input): it must never read or write outside its buffers, and a
 * completed transfer's length must agree with its segment count.
 * A violated property aborts, which libFuzzer reports like a crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/ib_mad.h"
#include "wire/ib_rmpp.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_header(const uint8_t *mad)
{
	struct umc_sa_hdr h, h2;
	uint8_t out[UMC_SA_HDR_LEN], in[UMC_SA_HDR_LEN];

	CHECK(umc_sa_hdr_decode(mad, UMC_MAD_SIZE, &h) == 0);
	umc_sa_hdr_encode(out, &h);
	memcpy(in, mad, sizeof(in));
	in[18] = in[19] = in[46] = in[47] = 0; /* reserved */
	CHECK(!memcmp(in, out, sizeof(out)));
	CHECK(umc_sa_hdr_decode(mad, UMC_MAD_SIZE - 1, &h2) != 0);
	(void)umc_sa_status_str(h.mad.status);
	(void)umc_mad_is_response(h.mad.method);
}

static void check_mcmember(const uint8_t *rec)
{
	struct umc_mcmember r, r2;
	uint8_t out[UMC_MCMEMBER_STRIDE], in[UMC_MCMEMBER_LEN];

	umc_mcmember_decode(rec, &r);
	umc_mcmember_encode(out, &r);
	memcpy(in, rec, sizeof(in));
	in[49] &= 0x80; /* ProxyJoin only */
	in[50] = in[51] = 0;
	CHECK(!memcmp(in, out, sizeof(in)));
	CHECK(!out[52] && !out[53] && !out[54] && !out[55]);
	umc_mcmember_decode(out, &r2);
	CHECK(r2.qkey == r.qkey && r2.flow_label == r.flow_label && r2.sl == r.sl &&
	      r2.join_state == r.join_state && r2.proxy_join == r.proxy_join);
	(void)umc_sa_rate_step(r.rate, r.rate_sel & 1 ? 1 : -1);
	CHECK(umc_sa_rate_order(r.rate) <= 21);
}

static void check_cpi(const uint8_t *p)
{
	struct umc_class_port_info c;
	uint8_t out[UMC_CPI_LEN], in[UMC_CPI_LEN];

	umc_cpi_decode(p, &c);
	umc_cpi_encode(out, &c);
	memcpy(in, p, sizeof(in));
	in[32] = 0; /* reserved byte before RedirectQP */
	CHECK(!memcmp(in, out, sizeof(in)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct umc_rmpp_rx rx = { 0 };
	struct umc_rmpp_rx_out o;
	uint32_t window = size ? data[0] % 70 : 1;
	size_t max = size > 1 ? (size_t)data[1] << 12 : 4096, off;
	bool over = false;

	for (off = 0; off + UMC_MAD_SIZE <= size; off += UMC_MAD_SIZE) {
		const uint8_t *mad = data + off;
		struct umc_sa_hdr h;
		int act;

		check_header(mad);
		check_mcmember(mad + UMC_SA_HDR_LEN);
		check_cpi(mad + UMC_SA_HDR_LEN);
		if (over)
			continue;
		umc_sa_hdr_decode(mad, UMC_MAD_SIZE, &h);
		act = umc_rmpp_rx_feed(&rx, mad, &h, window, max, &o);
		CHECK(act >= UMC_RMPP_RX_NONE && act <= UMC_RMPP_RX_STOP);
		if (rx.data) {
			CHECK(rx.total <= max && rx.last <= rx.nseg && rx.window_last <= rx.nseg);
			CHECK(rx.total <= (size_t)rx.nseg * UMC_SA_DATA_LEN);
			CHECK(rx.nseg == 1 || rx.total > ((size_t)rx.nseg - 1) * UMC_SA_DATA_LEN);
		}
		if (act == UMC_RMPP_RX_DONE) {
			volatile uint8_t sum = 0;
			size_t i;

			CHECK(rx.last == rx.nseg && o.seg_num == rx.nseg);
			for (i = 0; i < rx.total; i++) /* all of it was written: ASan/MSan see it */
				sum = (uint8_t)(sum + rx.data[i]);
			over = true;
		} else if (act == UMC_RMPP_RX_ABORT || act == UMC_RMPP_RX_STOP) {
			over = true;
		}
	}
	umc_rmpp_rx_free(&rx);
	return 0;
}
