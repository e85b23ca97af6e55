// SPDX-License-Identifier: MIT
/*
 * test_sa_mad.c - the SA MAD codecs (src/wire/ib_mad.c, ib_rmpp.c) against
 * byte layouts written out by hand from IBA Vol 1 13.4.3 (MAD header),
 * 13.6.2 (RMPP header and PayloadLength), 15.2.1.1 (SA header), 15.2.5.17
 * (MCMemberRecord) and 13.4.8.1 (ClassPortInfo), and the values OpenSM
 * 3.3.23 gave on ibsim (tests/integ/sa_diff/matrix.seq, steps B and X).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sa_mad_util.h"
#include "wire/ib_mad.h"
#include "wire/ib_rmpp.h"

/* An MCMemberRecord with every field distinct, and its 56 bytes. */
static void sample_record(struct umc_mcmember *r)
{
	memset(r, 0, sizeof(*r));
	assert_int_equal(sa_gid_parse("ff12:401b:ffff::ffff:ffff", r->mgid), 1);
	assert_int_equal(sa_gid_parse("fe80::2:c903:f:a4e1", r->port_gid), 1);
	r->qkey = 0x00000b1b;
	r->mlid = 0xc000;
	r->mtu_sel = 2, r->mtu = 4;
	r->tclass = 0x12;
	r->pkey = 0xffff;
	r->rate_sel = 2, r->rate = 3;
	r->pkt_life_sel = 2, r->pkt_life = 0x12;
	r->sl = 5;
	r->flow_label = 0xabcde;
	r->hop_limit = 0x40;
	r->scope = 2;
	r->join_state = 0x9;
	r->proxy_join = true;
}

static const uint8_t sample_bytes[56] = {
	0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, /* MGID */
	0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x02, 0xc9, 0x03, 0, 0x0f, 0xa4, 0xe1,       /* PortGID */
	0, 0, 0x0b, 0x1b, /* Q_Key */
	0xc0, 0x00,	  /* MLID */
	0x84,		  /* MTUSelector 2, MTU 4 */
	0x12,		  /* TClass */
	0xff, 0xff,	  /* P_Key */
	0x83,		  /* RateSelector 2, Rate 3 */
	0x92,		  /* PacketLifeTimeSelector 2, 0x12 */
	0x5a, 0xbc, 0xde, 0x40, /* SL 5, FlowLabel 0xabcde, HopLimit 0x40 */
	0x29,		  /* Scope 2, JoinState 0x9 */
	0x80,		  /* ProxyJoin, bit 7 */
	0, 0,		  /* reserved */
	0, 0, 0, 0,	  /* table padding */
};

static void test_mcmember_layout(void **state)
{
	struct umc_mcmember r, d;
	uint8_t out[UMC_MCMEMBER_STRIDE], in[UMC_MCMEMBER_STRIDE];

	(void)state;
	sample_record(&r);
	memset(out, 0xee, sizeof(out));
	umc_mcmember_encode(out, &r);
	assert_memory_equal(out, sample_bytes, sizeof(sample_bytes));
	memset(&d, 0, sizeof(d)); /* so that padding compares equal */
	umc_mcmember_decode(sample_bytes, &d);
	assert_memory_equal(&d, &r, sizeof(r));
	/* OpenSM 3.3.23 writes ProxyJoin as 0x01: not ProxyJoin; reserved bits are ignored */
	memcpy(in, sample_bytes, sizeof(in));
	in[49] = 0x01;
	umc_mcmember_decode(in, &d);
	assert_false(d.proxy_join);
	in[49] = 0xff, in[50] = 0xff, in[51] = 0xff;
	umc_mcmember_decode(in, &d);
	assert_true(d.proxy_join);
	umc_mcmember_encode(out, &d);
	assert_memory_equal(out, sample_bytes, sizeof(sample_bytes));
	/* fields wider than the wire field are cut */
	r.sl = 0x1f, r.flow_label = 0x1fffff, r.scope = 0x12, r.join_state = 0x1f, r.mtu = 0x7f;
	umc_mcmember_encode(out, &r);
	assert_int_equal(out[44], 0xff);
	assert_int_equal(out[45], 0xff);
	assert_int_equal(out[46], 0xff);
	assert_int_equal(out[48], 0x2f);
	assert_int_equal(out[38], 0xbf);
}

static void test_sa_header_layout(void **state)
{
	static const struct umc_sa_hdr h = {
		.mad = { .base_version = 1, .mgmt_class = 3, .class_version = 2, .method = 0x92,
			 .status = 0x0200, .class_specific = 0xabcd, .tid = 0x0102030405060708ULL,
			 .attr_id = 0x0038, .attr_mod = 0x11223344 },
		.rmpp = { .version = 1, .type = 1, .resp_time = 0x1f, .flags = 7, .status = 0x76,
			  .seg_num = 0x00010002, .paylen_newwin = 0x000003e8 },
		.sm_key = 0x8899aabbccddeeffULL,
		.attr_offset = 7,
		.comp_mask = 0x130c7,
	};
	static const uint8_t want[56] = {
		1, 3, 2, 0x92, 0x02, 0x00, 0xab, 0xcd, 1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0x38, 0, 0,
		0x11, 0x22, 0x33, 0x44, 1, 1, 0xff, 0x76, 0, 1, 0, 2, 0, 0, 0x03, 0xe8,
		0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0, 7, 0, 0,
		0, 0, 0, 0, 0, 0x01, 0x30, 0xc7,
	};
	uint8_t mad[UMC_MAD_SIZE];
	struct umc_sa_hdr d;

	(void)state;
	memset(mad, 0xee, sizeof(mad));
	umc_sa_hdr_encode(mad, &h);
	assert_memory_equal(mad, want, sizeof(want));
	assert_int_equal(mad[56], 0xee); /* the data is not touched */
	memset(&d, 0, sizeof(d));
	assert_int_equal(umc_sa_hdr_decode(mad, sizeof(mad), &d), 0);
	assert_memory_equal(&d, &h, sizeof(h)); /* static: its padding is zero */
	assert_int_equal(umc_sa_hdr_decode(mad, UMC_MAD_SIZE - 1, &d), -EBADMSG);
	assert_int_equal(umc_sa_hdr_decode(mad, UMC_MAD_SIZE + 1, &d), -EBADMSG);
	assert_true(umc_mad_is_response(0x95));
	assert_false(umc_mad_is_response(0x15));
}

static void test_class_port_info(void **state)
{
	static const struct umc_class_port_info c = {
		.base_version = 1, .class_version = 2, .cap_mask = 0x0200,
		.cap_mask2 = UMC_SA_CAP2_SENDONLY_FULL, .resp_time = 16,
		.redir_qp = 1, .redir_qkey = UMC_GSI_QKEY, .trap_qkey = UMC_GSI_QKEY,
		.trap_hop_limit = 0x40, .trap_sl = 3, .trap_tclass = 0x20, .trap_flow_label = 0x12345,
	};
	uint8_t out[UMC_CPI_LEN];
	struct umc_class_port_info d;

	(void)state;
	umc_cpi_encode(out, &c);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 2);
	assert_int_equal(out[2], 0x02);
	assert_int_equal(out[3], 0x00);
	/* CapabilityMask2 bit 12 is bit 17 of the word: 0x00020000 | RespTimeValue 16 */
	assert_int_equal(out[4], 0x00);
	assert_int_equal(out[5], 0x02);
	assert_int_equal(out[6], 0x00);
	assert_int_equal(out[7], 0x10);
	assert_int_equal(out[35], 1); /* RedirectQP */
	assert_int_equal(out[36], 0x80);
	assert_int_equal(out[68], 0x80);
	assert_int_equal(out[56], 0x20); /* TrapTC */
	assert_int_equal(out[57], 0x31); /* TrapSL 3 | FlowLabel 0x12345 */
	assert_int_equal(out[64], 0x40); /* TrapHL */
	memset(&d, 0, sizeof(d));
	umc_cpi_decode(out, &d);
	assert_memory_equal(&d, &c, sizeof(c));
	/* OpenSM 3.3.23 live: CapabilityMask 0x2602, CapabilityMask2 0xB5E8, RespTimeValue 16 */
	memset(out, 0, sizeof(out));
	out[2] = 0x26, out[3] = 0x02;
	out[5] = 0x16, out[6] = 0xbd, out[7] = 0x10;
	umc_cpi_decode(out, &d);
	assert_int_equal(d.cap_mask, 0x2602);
	assert_int_equal(d.cap_mask2, 0xB5E8);
	assert_int_equal(d.resp_time, 16);
	assert_true(d.cap_mask2 & UMC_SA_CAP2_SENDONLY_FULL);
}

static void test_status_names(void **state)
{
	(void)state;
	assert_string_equal(umc_sa_status_str(0), "SUCCESS");
	assert_string_equal(umc_sa_status_str(0x0001), "BUSY");
	assert_string_equal(umc_sa_status_str(0x0004), "BAD_VERSION");
	assert_string_equal(umc_sa_status_str(0x000C), "METHOD_ATTR_NOT_SUPPORTED");
	assert_string_equal(umc_sa_status_str(0x0200), "ERR_REQ_INVALID");
	assert_string_equal(umc_sa_status_str(0x0600), "ERR_REQ_INSUFFICIENT_COMPONENTS");
	assert_string_equal(umc_sa_status_str(0x0900), "UNKNOWN");
	assert_string_equal(umc_sa_status_str(0x0010), "UNKNOWN");
	assert_string_equal(umc_sa_status_str(0x0201), "UNKNOWN");
}

static void test_rates(void **state)
{
	(void)state;
	/*
	 * 2.5 < 5 < 10 < 14 < 20 < 30 < 25 < 28 Gb/s: the 64b/66b rates count at
	 * their 8b/10b equivalent (25 as 31.25, 28 as 35)
	 */
	assert_true(umc_sa_rate_order(2) < umc_sa_rate_order(5));
	assert_true(umc_sa_rate_order(5) < umc_sa_rate_order(3));
	assert_true(umc_sa_rate_order(3) < umc_sa_rate_order(11));
	assert_true(umc_sa_rate_order(11) < umc_sa_rate_order(6));
	assert_true(umc_sa_rate_order(6) < umc_sa_rate_order(4));
	assert_true(umc_sa_rate_order(4) < umc_sa_rate_order(15));
	assert_true(umc_sa_rate_order(15) < umc_sa_rate_order(19));
	assert_true(umc_sa_rate_order(21) < umc_sa_rate_order(22));
	assert_int_equal(umc_sa_rate_order(0), 0);
	assert_int_equal(umc_sa_rate_order(63), 0);
	assert_int_equal(umc_sa_rate_step(3, -1), 5);
	assert_int_equal(umc_sa_rate_step(3, 1), 11);
	assert_int_equal(umc_sa_rate_step(2, -1), 0);
	assert_int_equal(umc_sa_rate_step(22, 1), 0);
	assert_int_equal(umc_sa_rate_step(1, 1), 0);
	assert_true(umc_sa_mtu_valid(1) && umc_sa_mtu_valid(5));
	assert_false(umc_sa_mtu_valid(0) || umc_sa_mtu_valid(6));
}

/* Which SA methods travel with RMPP (IBA 15.2.2 Table 182), request or response. */
static void test_rmpp_methods(void **state)
{
	static const uint8_t rmpp[] = { 0x12, 0x92, 0x13, 0x93, 0x14, 0x94 };
	static const uint8_t single[] = { 0x01, 0x81, 0x02, 0x06, 0x86, 0x15, 0x95, 0x00 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rmpp); i++)
		assert_true(umc_sa_method_uses_rmpp(rmpp[i]));
	for (i = 0; i < sizeof(single); i++)
		assert_false(umc_sa_method_uses_rmpp(single[i]));
}

/* PayloadLength counts the 20-byte SA header of every segment (IBA 13.6.2.3). */
static void test_rmpp_paylen(void **state)
{
	(void)state;
	assert_int_equal(umc_rmpp_seg_count(0), 1);
	assert_int_equal(umc_rmpp_paylen(1, 0), 20);
	assert_int_equal(umc_rmpp_paylen(1, 56), 76);
	assert_int_equal(umc_rmpp_seg_count(200), 1);
	assert_int_equal(umc_rmpp_paylen(1, 200), 220);
	assert_int_equal(umc_rmpp_seg_count(201), 2);
	assert_int_equal(umc_rmpp_paylen(1, 201), 2 * 220 - 199);
	assert_int_equal(umc_rmpp_paylen(2, 201), 21);
	/* 10 001 records of 56 bytes */
	assert_int_equal(umc_rmpp_seg_count(560056), 2801);
	assert_int_equal(umc_rmpp_paylen(1, 560056), 2801 * 220 - 144);
	assert_int_equal(umc_rmpp_paylen(2, 560056), 0);
	assert_int_equal(umc_rmpp_paylen(2801, 560056), 76);
}

static void make_payload(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 7 + i / 256);
}

static void encode_seg(uint8_t *mad, struct umc_sa_hdr *seg, const uint8_t *data, size_t len,
		       uint32_t i)
{
	struct umc_sa_hdr h = {
		.mad = { .base_version = 1, .mgmt_class = 3, .class_version = 2, .method = 0x92,
			 .tid = 77, .attr_id = 0x38 },
		.attr_offset = 7,
	};

	umc_rmpp_seg_encode(mad, &h, data, len, i);
	assert_int_equal(umc_sa_hdr_decode(mad, UMC_MAD_SIZE, seg), 0);
}

/* Segments in order: ACK at 1 and at each window end, DONE with the payload. */
static void test_rmpp_round_trip(void **state)
{
	enum { LEN = 2345, WIN = 4 };
	uint8_t data[LEN], mad[UMC_MAD_SIZE];
	struct umc_rmpp_rx rx = { 0 };
	struct umc_rmpp_rx_out o;
	struct umc_sa_hdr h;
	uint32_t i, n = umc_rmpp_seg_count(LEN);
	int act;

	(void)state;
	make_payload(data, LEN);
	assert_int_equal(n, 12);
	for (i = 1; i <= n; i++) {
		encode_seg(mad, &h, data, LEN, i);
		assert_int_equal(h.rmpp.version, 1);
		assert_int_equal(h.rmpp.type, UMC_RMPP_TYPE_DATA);
		assert_int_equal(h.rmpp.flags, UMC_RMPP_FLAG_ACTIVE | (i == 1 ? UMC_RMPP_FLAG_FIRST : 0) |
							  (i == n ? UMC_RMPP_FLAG_LAST : 0));
		assert_int_equal(h.rmpp.seg_num, i);
		assert_int_equal(h.rmpp.resp_time, UMC_RMPP_NO_RESP_TIME);
		assert_int_equal(h.attr_offset, 7);
		act = umc_rmpp_rx_feed(&rx, mad, &h, WIN, 1 << 20, &o);
		if (i == n) {
			assert_int_equal(act, UMC_RMPP_RX_DONE);
			assert_int_equal(o.seg_num, n);
			assert_int_equal(o.newwin, n);
		} else if (i == 1 || (i - 1) % WIN == 0) {
			assert_int_equal(act, UMC_RMPP_RX_ACK);
			assert_int_equal(o.seg_num, i);
			assert_int_equal(o.newwin, i + WIN > n ? n : i + WIN);
		} else {
			assert_int_equal(act, UMC_RMPP_RX_NONE);
		}
	}
	assert_int_equal(rx.total, LEN);
	assert_memory_equal(rx.data, data, LEN);
	/* the last segment is zero-padded */
	encode_seg(mad, &h, data, LEN, n);
	assert_int_equal(mad[UMC_SA_HDR_LEN + LEN % 200], 0);
	umc_rmpp_rx_free(&rx);
}

/* A lost segment: the receiver says once where it is; resends fill the gap. */
static void test_rmpp_loss(void **state)
{
	enum { LEN = 1000, WIN = 8 };
	uint8_t data[LEN], mad[UMC_MAD_SIZE];
	struct umc_rmpp_rx rx = { 0 };
	struct umc_rmpp_rx_out o;
	struct umc_sa_hdr h;
	uint32_t i;

	(void)state;
	make_payload(data, LEN);
	encode_seg(mad, &h, data, LEN, 2); /* before segment 1: nothing to do */
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, WIN, 1 << 20, &o), UMC_RMPP_RX_NONE);
	encode_seg(mad, &h, data, LEN, 1);
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, WIN, 1 << 20, &o), UMC_RMPP_RX_ACK);
	encode_seg(mad, &h, data, LEN, 3); /* 2 lost */
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, WIN, 1 << 20, &o), UMC_RMPP_RX_ACK);
	assert_int_equal(o.seg_num, 1);
	encode_seg(mad, &h, data, LEN, 4);
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, WIN, 1 << 20, &o), UMC_RMPP_RX_NONE);
	encode_seg(mad, &h, data, LEN, 1); /* a resend of what we have: ACK again */
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, WIN, 1 << 20, &o), UMC_RMPP_RX_ACK);
	assert_int_equal(o.seg_num, 1);
	for (i = 2; i <= 4; i++) {
		encode_seg(mad, &h, data, LEN, i);
		assert_int_not_equal(umc_rmpp_rx_feed(&rx, mad, &h, WIN, 1 << 20, &o),
				     UMC_RMPP_RX_ABORT);
	}
	encode_seg(mad, &h, data, LEN, 5);
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, WIN, 1 << 20, &o), UMC_RMPP_RX_DONE);
	assert_memory_equal(rx.data, data, LEN);
	umc_rmpp_rx_free(&rx);
}

/* Inconsistent transfers are aborted with the IBA status; too large is a STOP. */
static void test_rmpp_bad(void **state)
{
	enum { LEN = 1000 };
	uint8_t data[LEN], mad[UMC_MAD_SIZE];
	struct umc_rmpp_rx rx = { 0 };
	struct umc_rmpp_rx_out o;
	struct umc_sa_hdr h;

	(void)state;
	make_payload(data, LEN);
	encode_seg(mad, &h, data, LEN, 1);
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, LEN - 1, &o), UMC_RMPP_RX_STOP);
	assert_int_equal(o.status, UMC_RMPP_STATUS_RESX);
	h.rmpp.flags &= (uint8_t)~UMC_RMPP_FLAG_FIRST;
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_ABORT);
	assert_int_equal(o.status, UMC_RMPP_STATUS_BAD_SEG);
	h.rmpp.flags |= UMC_RMPP_FLAG_FIRST;
	h.rmpp.paylen_newwin = 5 * 220 - 200; /* a pad of 200: an empty last segment */
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_ABORT);
	assert_int_equal(o.status, UMC_RMPP_STATUS_BAD_LEN);
	h.rmpp.paylen_newwin = 0xffffffff;
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_STOP);
	h.rmpp.type = UMC_RMPP_TYPE_ACK;
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_ABORT);
	assert_int_equal(o.status, UMC_RMPP_STATUS_BADT);
	encode_seg(mad, &h, data, LEN, 1);
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_ACK);
	encode_seg(mad, &h, data, LEN, 9);
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_ABORT);
	assert_int_equal(o.status, UMC_RMPP_STATUS_S2B);
	encode_seg(mad, &h, data, LEN, 2);
	h.rmpp.flags |= UMC_RMPP_FLAG_LAST; /* Last on segment 2 of 5 */
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_ABORT);
	assert_int_equal(o.status, UMC_RMPP_STATUS_BAD_LEN);
	umc_rmpp_rx_free(&rx);
	/* the Last segment must say 220 - pad */
	encode_seg(mad, &h, data, 300, 1);
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_ACK);
	encode_seg(mad, &h, data, 300, 2);
	h.rmpp.paylen_newwin++;
	assert_int_equal(umc_rmpp_rx_feed(&rx, mad, &h, 4, 1 << 20, &o), UMC_RMPP_RX_ABORT);
	umc_rmpp_rx_free(&rx);
}

/* An ACK repeats the header with the R bit as given, RMPP fields of the ACK. */
static void test_rmpp_ack(void **state)
{
	struct umc_sa_hdr h = {
		.mad = { .base_version = 1, .mgmt_class = 3, .class_version = 2, .method = 0x12,
			 .tid = 5, .attr_id = 0x38 },
	};
	uint8_t mad[UMC_MAD_SIZE];
	struct umc_sa_hdr d;

	(void)state;
	memset(mad, 0xee, sizeof(mad));
	umc_rmpp_ctl_encode(mad, &h, UMC_RMPP_TYPE_ACK, 0, 3, 35);
	assert_int_equal(mad[3], 0x12);
	assert_int_equal(mad[24], 1);
	assert_int_equal(mad[25], UMC_RMPP_TYPE_ACK);
	assert_int_equal(mad[26], 0xf9); /* no response time, Active */
	assert_int_equal(umc_sa_hdr_decode(mad, UMC_MAD_SIZE, &d), 0);
	assert_int_equal(d.rmpp.seg_num, 3);
	assert_int_equal(d.rmpp.paylen_newwin, 35);
	assert_int_equal(mad[UMC_MAD_SIZE - 1], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcmember_layout), cmocka_unit_test(test_sa_header_layout),
		cmocka_unit_test(test_class_port_info), cmocka_unit_test(test_status_names),
		cmocka_unit_test(test_rates),		cmocka_unit_test(test_rmpp_paylen),
		cmocka_unit_test(test_rmpp_round_trip), cmocka_unit_test(test_rmpp_loss),
		cmocka_unit_test(test_rmpp_bad),	cmocka_unit_test(test_rmpp_ack),
		cmocka_unit_test(test_rmpp_methods),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
