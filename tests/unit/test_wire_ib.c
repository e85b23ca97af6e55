// SPDX-License-Identifier: MIT
/*
 * test_wire_ib.c - the InfiniBand link codec (src/wire/ib.c) against known
 * answers.
 *
 * Sources of truth:
 *  - tests/data/ib_vectors.txt, made by tests/data/ib_vectors.py, an
 *    independent implementation (bit-packed fields, zlib's CRC-32 and a
 *    bit-serial CRC-16): I1..I6 are rebuilt from their described field
 *    values with our encoders and must match byte for byte, and decode
 *    back to those values;
 *  - tests/data/rocev2_vectors.txt X2 and X3: RoCEv1 packets a Mellanox NIC
 *    sent (GRH + BTH over Ethernet), whose ICRC is the InfiniBand ICRC of
 *    a global packet (an LRH of ones in front): our IB masking must
 *    reproduce the NIC's ICRC;
 *  - the VCRC's polynomial itself, for every entry of the slicing tables.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_vectors.h"
#include "wire/ib.h"
#include "wire/sg.h"
#include "wire/vcrc_table.h"

static struct vec ibv[T_VEC_MAX], rocev[T_VEC_MAX];
static int nibv, nrocev;

static int load(void **state)
{
	nibv = t_vec_load("ib_vectors.txt", ibv);
	nrocev = t_vec_load("rocev2_vectors.txt", rocev);
	return nibv == 6 && nrocev >= 14 ? 0 : -1;
}

static const struct vec *ib_vec(const char *name)
{
	const struct vec *v = t_vec_find(ibv, nibv, name);

	if (!v)
		fail_msg("vector %s not in ib_vectors.txt", name);
	return v;
}

/* The field values of I1..I6, transcribed from their descriptions. */
struct ib_case {
	const char *name;
	struct umc_ib_hdr ib;
	struct umc_ud_hdr ud;
	uint8_t payload[4096];
	size_t len;
	uint8_t resv8a;
};

static void gid_parse(uint8_t *out, const char *text)
{
	assert_int_equal(inet_pton(AF_INET6, text, out), 1);
}

static void ib_case(const char *name, struct ib_case *c)
{
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->ib.lrh.lnh = UMC_LNH_IBA_GLOBAL;
	c->ib.grh.ipver = UMC_GRH_IPVER;
	c->ib.grh.next_hdr = UMC_GRH_NXTHDR_IBA;
	c->ud.bth.opcode = UMC_OP_UD_SEND_ONLY;
	c->ud.bth.pkey = 0xffff;
	c->ud.bth.dest_qpn = 0xffffff;
	c->ud.deth.qkey = 0x01234567;
	if (!strcmp(name, "I1") || !strcmp(name, "I5")) {
		c->ib.lrh.dlid = 0xc001;
		c->ib.lrh.slid = 2;
		c->ud.deth.src_qpn = 0x11;
		for (int i = 0; i < 16; i++)
			c->payload[i] = (uint8_t)i;
		c->len = 16;
		gid_parse(c->ib.grh.sgid, "fe80::2:c903:0:2");
		gid_parse(c->ib.grh.dgid, "ff12:4001:ffff::e001:101");
		if (name[1] == '5') {
			c->ib.lrh.vl = 7;
			c->ib.lrh.sl = 9;
			c->ib.grh.tclass = 0xff;
			c->ib.grh.flow_label = 0xabcde;
			c->ib.grh.hop_limit = 1;
			c->resv8a = 0xc0;
		}
	} else if (!strcmp(name, "I2")) {
		c->ib.lrh.sl = 3;
		c->ib.lrh.dlid = 0xc0ff;
		c->ib.lrh.slid = 0x1234;
		c->ib.grh.tclass = 0x68;
		c->ib.grh.flow_label = 0x12345;
		c->ib.grh.hop_limit = 255;
		gid_parse(c->ib.grh.sgid, "fe80::11:2233:4455:6677");
		gid_parse(c->ib.grh.dgid, "ff15:4001:ffff::1:2:3");
		c->ud.bth.opcode = UMC_OP_UD_SEND_ONLY_IMM;
		c->ud.bth.se = true;
		c->ud.bth.psn = 0x123456;
		c->ud.deth.qkey = 0x11111111;
		c->ud.deth.src_qpn = 0x2a;
		c->ud.imm_be = htonl(0xdeadbeef);
		memcpy(c->payload, "Hello, RoCE!\n", 13);
		c->len = 13;
	} else if (!strcmp(name, "I3")) {
		c->ib.lrh.lnh = UMC_LNH_IBA_LOCAL;
		c->ib.lrh.sl = 1;
		c->ib.lrh.dlid = 5;
		c->ib.lrh.slid = 3;
		c->ud.bth.pkey = 0x7fff;
		c->ud.bth.dest_qpn = 0x1234;
		c->ud.bth.psn = 7;
		c->ud.deth.src_qpn = 0x13;
		c->payload[0] = 'Z';
		c->len = 1;
	} else if (!strcmp(name, "I4")) {
		c->ib.lrh.dlid = 0x20;
		c->ib.lrh.slid = 0x21;
		c->ud.bth.dest_qpn = 0xabcde;
		c->ud.bth.psn = 1;
		c->ud.deth.qkey = 0x80010000;
		c->ud.deth.src_qpn = 1;
		gid_parse(c->ib.grh.sgid, "fe80::21");
		gid_parse(c->ib.grh.dgid, "fe80::20");
	} else if (!strcmp(name, "I6")) {
		c->ib.lrh.dlid = 0xfffe;
		c->ib.lrh.slid = 0xbfff;
		c->ud.bth.psn = 0xffffff;
		c->ud.deth.src_qpn = 0xfffffe;
		for (int i = 0; i < 4096; i++)
			c->payload[i] = (uint8_t)(i * 7 + 3);
		c->len = 4096;
		gid_parse(c->ib.grh.sgid, "fe80::bfff");
		gid_parse(c->ib.grh.dgid, "ff12:4001:ffff::ffff:fffe");
	} else {
		fail_msg("no case %s", name);
	}
}

/* Encode a case the way the IB link sends: headers, payload, pad, ICRC, VCRC. */
static size_t ib_build(struct ib_case *c, uint8_t *out)
{
	size_t hl = umc_ib_hdr_encode(out, &c->ib, &c->ud, c->len);
	size_t bth = c->ib.lrh.lnh == UMC_LNH_IBA_GLOBAL ? UMC_LRH_LEN + UMC_GRH_HDR_LEN
							 : UMC_LRH_LEN;
	size_t n = hl;
	uint32_t icrc;

	out[bth + 4] = c->resv8a; /* the encoder writes Resv8a as 0 */
	icrc = umc_ib_icrc_start(out, hl);
	memcpy(out + n, c->payload, c->len);
	n += c->len;
	memset(out + n, 0, c->ud.bth.pad_cnt);
	n += c->ud.bth.pad_cnt;
	icrc = umc_icrc_update(icrc, out + hl, n - hl);
	umc_icrc_put(out + n, umc_icrc_final(icrc));
	n += UMC_ICRC_LEN;
	umc_vcrc_put(out + n, umc_vcrc_final(umc_vcrc_update(0xffff, out, n)));
	return n + UMC_VCRC_LEN;
}

static const char *const names[] = {"I1", "I2", "I3", "I4", "I5", "I6"};

static void test_vectors_encode(void **state)
{
	static struct ib_case c;
	static uint8_t pkt[8192];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct vec *v = ib_vec(names[i]);
		uint8_t icrc[4], vcrc[2];
		size_t n;

		ib_case(names[i], &c);
		n = ib_build(&c, pkt);
		assert_int_equal(n, v->len);
		assert_memory_equal(pkt, v->bytes, n);
		assert_int_equal(t_unhex(v->field[2], icrc, 4), 4);
		assert_int_equal(t_unhex(v->field[3], vcrc, 2), 2);
		assert_memory_equal(pkt + n - 6, icrc, 4);
		assert_memory_equal(pkt + n - 2, vcrc, 2);
	}
	/* I5 changes only variant fields: same ICRC as I1, another VCRC. */
	assert_string_equal(ib_vec("I1")->field[2], ib_vec("I5")->field[2]);
	assert_string_not_equal(ib_vec("I1")->field[3], ib_vec("I5")->field[3]);
}

static void test_vectors_decode(void **state)
{
	static struct ib_case c;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct vec *v = ib_vec(names[i]);
		struct umc_ib_hdr ib;
		struct umc_ud_hdr ud;
		size_t off, plen;

		ib_case(names[i], &c);
		assert_int_equal(umc_ib_decode(v->bytes, v->len, &ib, &ud, &off, &plen), 0);
		assert_int_equal(plen, c.len);
		assert_memory_equal(v->bytes + off, c.payload, c.len);
		assert_int_equal(ib.lrh.lnh, c.ib.lrh.lnh);
		assert_int_equal(ib.lrh.vl, c.ib.lrh.vl);
		assert_int_equal(ib.lrh.sl, c.ib.lrh.sl);
		assert_int_equal(ib.lrh.dlid, c.ib.lrh.dlid);
		assert_int_equal(ib.lrh.slid, c.ib.lrh.slid);
		assert_int_equal(ib.lrh.pkt_len * 4 + 2, v->len);
		if (ib.lrh.lnh == UMC_LNH_IBA_GLOBAL) {
			assert_int_equal(ib.grh.tclass, c.ib.grh.tclass);
			assert_int_equal(ib.grh.flow_label, c.ib.grh.flow_label);
			assert_int_equal(ib.grh.hop_limit, c.ib.grh.hop_limit);
			assert_int_equal(ib.grh.pay_len, v->len - 8 - 40 - 2);
			assert_memory_equal(ib.grh.sgid, c.ib.grh.sgid, 16);
			assert_memory_equal(ib.grh.dgid, c.ib.grh.dgid, 16);
		}
		assert_int_equal(ud.bth.opcode, c.ud.bth.opcode);
		assert_int_equal(ud.bth.se, c.ud.bth.se);
		assert_int_equal(ud.bth.pkey, c.ud.bth.pkey);
		assert_int_equal(ud.bth.dest_qpn, c.ud.bth.dest_qpn);
		assert_int_equal(ud.bth.psn, c.ud.bth.psn);
		assert_int_equal(ud.deth.qkey, c.ud.deth.qkey);
		assert_int_equal(ud.deth.src_qpn, c.ud.deth.src_qpn);
		if (ud.bth.opcode == UMC_OP_UD_SEND_ONLY_IMM)
			assert_int_equal(ntohl(ud.imm_be), 0xdeadbeef);
	}
}

/*
 * Every single-bit error is caught: by the VCRC as it stands, and, once
 * the VCRC is recomputed (a switch rewriting the packet), by the ICRC
 * unless the bit is one of the variant fields IBA 7.8.1 lets a switch or
 * router change, or a length or header field the decoder checks itself.
 */
static void test_bit_errors(void **state)
{
	const struct vec *v = ib_vec("I2");
	static uint8_t p[8192];
	int vcrc_caught = 0, icrc_caught = 0, variant = 0, checked = 0;

	for (size_t byte = 0; byte < v->len - 2; byte++) {
		for (int bit = 0; bit < 8; bit++) {
			struct umc_ib_hdr ib;
			struct umc_ud_hdr ud;
			size_t off, plen;
			int ret;

			memcpy(p, v->bytes, v->len);
			p[byte] ^= (uint8_t)(1u << bit);
			ret = umc_ib_decode(p, v->len, &ib, &ud, &off, &plen);
			assert_int_not_equal(ret, 0);
			vcrc_caught += ret == -EIO;
			umc_vcrc_put(p + v->len - 2,
				     umc_vcrc_final(umc_vcrc_update(0xffff, p, v->len - 2)));
			ret = umc_ib_decode(p, v->len, &ib, &ud, &off, &plen);
			if (ret == 0)
				variant++;
			else if (ret == -EILSEQ)
				icrc_caught++;
			else
				checked++;
		}
	}
	/*
	 * Variant bits of a global packet: the LRH less what the decoder
	 * checks (LVer 4, LNH 2, PktLen 11 bits), TClass 8, FlowLabel 20,
	 * HopLmt 8, Resv8a 8.  Every other bit is a decode error, most of
	 * them the ICRC's; the VCRC catches all but the header checks'.
	 */
	assert_int_equal(variant, 64 - 17 + 8 + 20 + 8 + 8);
	assert_int_equal(variant + icrc_caught + checked, (int)(v->len - 2) * 8);
	assert_true(icrc_caught > (int)(v->len - 2) * 8 - 2 * variant - 64);
	assert_true(vcrc_caught > (int)(v->len - 2) * 8 - 64);
}

/* The ICRC a Mellanox NIC put on RoCEv1 packets (GRH + BTH): IB global masking. */
static void test_icrc_rocev1_hardware(void **state)
{
	static const char *const caps[] = {"X2", "X3"};

	for (int i = 0; i < 2; i++) {
		const struct vec *x = t_vec_find(rocev, nrocev, caps[i]);
		static uint8_t pkt[2048];
		size_t ib_len;
		uint32_t icrc;

		assert_non_null(x);
		/* Drop the Ethernet header, put an LRH (global) in front. */
		ib_len = UMC_LRH_LEN + x->len - 14;
		memset(pkt, 0, UMC_LRH_LEN);
		pkt[1] = UMC_LNH_IBA_GLOBAL;
		memcpy(pkt + UMC_LRH_LEN, x->bytes + 14, x->len - 14);
		icrc = umc_ib_icrc_start(pkt, UMC_LRH_LEN + UMC_GRH_HDR_LEN + UMC_BTH_LEN);
		icrc = umc_icrc_update(icrc, pkt + UMC_LRH_LEN + UMC_GRH_HDR_LEN + UMC_BTH_LEN,
				       ib_len - UMC_LRH_LEN - UMC_GRH_HDR_LEN - UMC_BTH_LEN - 4);
		assert_int_equal(umc_icrc_final(icrc), umc_icrc_get(pkt + ib_len - 4));
	}
}

/* Every table entry is what the reflected polynomial 0xD008 (0x100B) makes of it. */
static void test_vcrc_table(void **state)
{
	uint8_t data[301];
	uint16_t want = 0xffff;

	for (int k = 0; k < 8; k++) {
		for (int i = 0; i < 256; i++) {
			/* Byte i followed by k zero bytes, from a zero register. */
			uint16_t c = (uint16_t)i;

			for (int n = 0; n < 8 * (k + 1); n++)
				c = (uint16_t)(c & 1 ? (c >> 1) ^ 0xD008 : c >> 1);
			assert_int_equal(umc_vcrc_table[k][i], c);
		}
	}
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 37 + 11);
	for (size_t i = 0; i < sizeof(data); i++) {
		want ^= data[i];
		for (int k = 0; k < 8; k++)
			want = (uint16_t)(want & 1 ? (want >> 1) ^ 0xD008 : want >> 1);
	}
	assert_int_equal(umc_vcrc_update(0xffff, data, sizeof(data)), want);
	/* Chaining at every split, odd ones included: the same register. */
	for (size_t cut = 0; cut <= sizeof(data); cut++)
		assert_int_equal(umc_vcrc_update(umc_vcrc_update(0xffff, data, cut), data + cut,
						 sizeof(data) - cut),
				 want);
}

/*
 * The cut after @x in a packet of @len bytes: @step bytes on through the
 * headers (the first 128 bytes) and the last 16 (ICRC, VCRC), 16 times
 * that through the rest of a long payload.  I6's 4 KiB cut 3 by 7 bytes
 * apart everywhere would be 400 000 decodes, a minute under the sanitizers.
 */
static size_t cut_next(size_t x, size_t len, size_t step)
{
	return x < 128 || x + 16 * step + 16 > len ? x + step : x + 16 * step;
}

/*
 * A packet in pieces decodes exactly as in one: every vector, cut into
 * three pieces at pairs of points (cut_next; the last piece longer than
 * what arrived), good and with a bad VCRC or ICRC.
 */
static void test_decode_sg(void **state)
{
	static uint8_t p[8192];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct vec *v = ib_vec(names[i]);

		memcpy(p, v->bytes, v->len);
		for (int bad = 0; bad < 3; bad++) {
			struct umc_ib_hdr ib1, ib2;
			struct umc_ud_hdr ud1, ud2;
			size_t off1, plen1, off2, plen2;
			int want;

			if (bad == 1)
				p[v->len / 2] ^= 0x10; /* VCRC catches it */
			if (bad == 2) /* and with the VCRC redone, the ICRC */
				umc_vcrc_put(p + v->len - 2,
					     umc_vcrc_final(umc_vcrc_update(0xffff, p, v->len - 2)));
			memset(&ib1, 0, sizeof(ib1)); /* padding too: compared whole */
			memset(&ud1, 0, sizeof(ud1));
			want = umc_ib_decode(p, v->len, &ib1, &ud1, &off1, &plen1);
			assert_int_equal(want, bad == 0 ? 0 : bad == 1 ? -EIO : -EILSEQ);
			for (size_t a = 0; a <= v->len; a = cut_next(a, v->len, 3)) {
				for (size_t b = a; b <= v->len; b = cut_next(b, v->len, 7)) {
					struct iovec iov[3] = {
						{p, a}, {p + a, b - a}, {p + b, v->len - b + 16}};
					struct umc_sg sg = {iov, 3, v->len};

					memset(&ib2, 0, sizeof(ib2));
					memset(&ud2, 0, sizeof(ud2));
					assert_int_equal(umc_ib_decode_sg(&sg, &ib2, &ud2, &off2, &plen2),
							 want);
					if (want)
						continue;
					assert_memory_equal(&ib1.lrh, &ib2.lrh, sizeof(ib1.lrh));
					if (ib1.lrh.lnh == UMC_LNH_IBA_GLOBAL)
						assert_memory_equal(&ib1.grh, &ib2.grh, sizeof(ib1.grh));
					assert_memory_equal(&ud1, &ud2, sizeof(ud1));
					assert_int_equal(off1, off2);
					assert_int_equal(plen1, plen2);
				}
			}
		}
	}
}

/* Malformed packets: the status each check gives. */
static void test_decode_refuses(void **state)
{
	const struct vec *g = ib_vec("I1"), *l = ib_vec("I3");
	static uint8_t p[8192];
	struct umc_ib_hdr ib;
	struct umc_ud_hdr ud;
	size_t off, plen;

#define REDO_VCRC(n) umc_vcrc_put(p + (n) - 2, umc_vcrc_final(umc_vcrc_update(0xffff, p, (n) - 2)))
	for (size_t n = 0; n < g->len; n++) /* every truncation */
		assert_int_not_equal(umc_ib_decode(g->bytes, n, &ib, &ud, &off, &plen), 0);
	memcpy(p, g->bytes, g->len);
	p[0] |= 1; /* LVer 1 */
	REDO_VCRC(g->len);
	assert_int_equal(umc_ib_decode(p, g->len, &ib, &ud, &off, &plen), -EPROTONOSUPPORT);
	memcpy(p, g->bytes, g->len);
	p[1] = (uint8_t)((p[1] & ~3) | UMC_LNH_RAW);
	REDO_VCRC(g->len);
	assert_int_equal(umc_ib_decode(p, g->len, &ib, &ud, &off, &plen), -EPROTONOSUPPORT);
	memcpy(p, g->bytes, g->len);
	p[UMC_LRH_LEN + 6] = 0x1c; /* NxtHdr */
	REDO_VCRC(g->len);
	assert_int_equal(umc_ib_decode(p, g->len, &ib, &ud, &off, &plen), -EPROTONOSUPPORT);
	memcpy(p, g->bytes, g->len);
	p[UMC_LRH_LEN + 5]++; /* PayLen */
	REDO_VCRC(g->len);
	assert_int_equal(umc_ib_decode(p, g->len, &ib, &ud, &off, &plen), -EBADMSG);
	memcpy(p, l->bytes, l->len);
	p[5]++; /* PktLen */
	REDO_VCRC(l->len);
	assert_int_equal(umc_ib_decode(p, l->len, &ib, &ud, &off, &plen), -EBADMSG);
	memcpy(p, l->bytes, l->len);
	p[UMC_LRH_LEN] = 0x04; /* an RC opcode */
	REDO_VCRC(l->len);
	assert_int_equal(umc_ib_decode(p, l->len, &ib, &ud, &off, &plen), -EPROTONOSUPPORT);
	memcpy(p, l->bytes, l->len);
	p[l->len - 3] ^= 0x10; /* the ICRC itself */
	REDO_VCRC(l->len);
	assert_int_equal(umc_ib_decode(p, l->len, &ib, &ud, &off, &plen), -EILSEQ);
	memcpy(p, l->bytes, l->len);
	p[l->len - 1] ^= 0x80; /* the VCRC itself */
	assert_int_equal(umc_ib_decode(p, l->len, &ib, &ud, &off, &plen), -EIO);
#undef REDO_VCRC
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_encode),	 cmocka_unit_test(test_vectors_decode),
		cmocka_unit_test(test_bit_errors),	 cmocka_unit_test(test_icrc_rocev1_hardware),
		cmocka_unit_test(test_vcrc_table),
		cmocka_unit_test(test_decode_sg),	 cmocka_unit_test(test_decode_refuses),
	};

	return cmocka_run_group_tests(tests, load, NULL);
}
