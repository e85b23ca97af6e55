// SPDX-License-Identifier: MIT
/*
 * ib_capture_check - compare the InfiniBand packets of an ERF file (type
 * 21, as scripts/ib2erf.py writes it from a capture) byte for byte with
 * what the wire encoders (src/wire) build from the expected header values,
 * and print the fields tshark must show for each (test_ib_capture.sh).
 *
 *   ib_capture_check ERF COUNT SIZE MLID SLID SGID MGID SRCQPN
 *
 * The sender is `umc-mckey -s -o -C COUNT -S SIZE` joined to MGID with
 * MLID, from the port with LID SLID and GID SGID, its QP number SRCQPN
 * (UMC_QPN_BASE).  Message i is rebuilt independently of the sender:
 *   LRH     VL 0, LVer 0, SL 0, LNH 3 (IBA global), DLID MLID, SLID SLID,
 *           PktLen from the length (umc_lrh_encode via umc_ib_hdr_encode)
 *   GRH     IPVer 6, TClass 0, FlowLabel 0, NxtHdr 0x1B, HopLmt 0 (the
 *           group's record), SGID, DGID MGID, PayLen from the length
 *   BTH     SEND Only with Immediate (0x65), SE 0, M 0, PadCnt, TVer 0,
 *           P_Key 0xFFFF, DestQP 0xFFFFFF, A 0, PSN i
 *   DETH    Q_Key 0x01234567, SrcQP SRCQPN; ImmDt SRCQPN (umc-mckey's)
 *   payload umc-mckey's: "UMCK", i big-endian, then (i + j) mod 256
 *   ICRC    umc_ib_icrc_start + umc_icrc_update (IBA 7.8.1 masking)
 *   VCRC    umc_vcrc_update over LRH..ICRC (IBA 7.8.2)
 * and must equal the captured packet.  The encoders are checked against
 * independent known-answer vectors by unit/test_wire_ib.
 *
 * Standard output: one line per rebuilt packet with the fields, '|'
 * separated, in tshark's -T fields notation, in the order of FIELDS in
 * test_ib_capture.sh.  Diagnostics on standard error.  Exit 0 when exactly
 * COUNT type-21 records are present and each equals its rebuilt packet.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"

enum {
	ERF_HDR = 16,
	ERF_TYPE_INFINIBAND = 21,
	MCKEY_HDR = 8, /* "UMCK" + the message number */
	QKEY = 0x01234567,
	MCAST_QPN = 0xffffff, /* DestQP of a multicast packet (IBA 9.8.1) */
	PKT_MAX = 8192,
};

static int fails;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "FAIL: " __VA_ARGS__);                                             \
		fprintf(stderr, "\n");                                                             \
		fails++;                                                                           \
	} while (0)

static void hexdump(const char *what, const uint8_t *p, size_t n)
{
	fprintf(stderr, "  %s (%zu bytes):", what, n);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%02x", i % 32 ? "" : "\n    ", p[i]);
	fprintf(stderr, "\n");
}

/* umc-mckey's payload of message @index (tools/umc-mckey, fill_payload). */
static void mckey_payload(uint8_t *buf, size_t len, uint32_t index)
{
	size_t i = 0;

	if (len >= MCKEY_HDR) {
		memcpy(buf, "UMCK", 4);
		buf[4] = (uint8_t)(index >> 24);
		buf[5] = (uint8_t)(index >> 16);
		buf[6] = (uint8_t)(index >> 8);
		buf[7] = (uint8_t)index;
		i = MCKEY_HDR;
	}
	for (; i < len; i++)
		buf[i] = (uint8_t)(index + i);
}

/* Message @i as the encoders build it; fills @ib and @ud with what they wrote. */
static size_t build(uint8_t *out, uint32_t i, size_t size, struct umc_ib_hdr *ib,
		    struct umc_ud_hdr *ud)
{
	size_t hl = umc_ib_hdr_encode(out, ib, ud, size), pad = ud->bth.pad_cnt;
	uint8_t *p = out + hl;
	uint32_t icrc;
	uint16_t vcrc;

	mckey_payload(p, size, i);
	memset(p + size, 0, pad);
	icrc = umc_ib_icrc_start(out, hl);
	icrc = umc_icrc_update(icrc, p, size + pad);
	umc_icrc_put(p + size + pad, umc_icrc_final(icrc));
	vcrc = umc_vcrc_update(0xffff, out, hl + size + pad + UMC_ICRC_LEN);
	umc_vcrc_put(p + size + pad + UMC_ICRC_LEN, umc_vcrc_final(vcrc));
	return hl + size + pad + UMC_ICRC_LEN + UMC_VCRC_LEN;
}

/* The fields of a rebuilt packet, as tshark -T fields prints them. */
static void print_fields(const uint8_t *pkt, size_t len, const struct umc_ib_hdr *ib,
			 const struct umc_ud_hdr *ud, size_t size)
{
	const struct umc_lrh *l = &ib->lrh;
	const struct umc_grh *g = &ib->grh;
	const struct umc_bth *b = &ud->bth;
	const uint8_t *crc = pkt + len - UMC_VCRC_LEN - UMC_ICRC_LEN;
	char sgid[INET6_ADDRSTRLEN], dgid[INET6_ADDRSTRLEN];
	uint32_t imm = ntohl(ud->imm_be);

	inet_ntop(AF_INET6, g->sgid, sgid, sizeof(sgid));
	inet_ntop(AF_INET6, g->dgid, dgid, sizeof(dgid));
	printf("%d|%zu|0x%02x|%u|%u|0x%02x|%u|%u|%u", ERF_TYPE_INFINIBAND, len, l->vl, l->lver,
	       l->sl, l->lnh, l->dlid, l->pkt_len, l->slid);
	printf("|%u|%u|%u|%u|%u|%u|%s|%s", g->ipver, g->tclass, g->flow_label, g->pay_len,
	       g->next_hdr, g->hop_limit, sgid, dgid);
	printf("|%u|%u|%u|%u|%u|%u|0x%06x|%u|%u", b->opcode, b->se, b->mig, b->pad_cnt, b->tver,
	       b->pkey, b->dest_qpn, b->ack_req, b->psn);
	printf("|0x%016llx|0x%08x|%08x", (unsigned long long)ud->deth.qkey, ud->deth.src_qpn, imm);
	printf("|0x%02x%02x%02x%02x|0x%02x%02x|%zu|erf:infiniband:data\n", crc[0], crc[1], crc[2],
	       crc[3], crc[4], crc[5], size + b->pad_cnt);
}

static int parse_gid(const char *s, uint8_t gid[16])
{
	return inet_pton(AF_INET6, s, gid) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct umc_ib_hdr ib0 = {0};
	struct umc_ud_hdr ud0 = {0};
	uint8_t rec[ERF_HDR], got[PKT_MAX], want[PKT_MAX];
	unsigned long count, size, mlid, slid, srcqpn;
	uint32_t n = 0;
	FILE *f;

	if (argc != 9 || parse_gid(argv[6], ib0.grh.sgid) || parse_gid(argv[7], ib0.grh.dgid)) {
		fprintf(stderr, "usage: ib_capture_check ERF COUNT SIZE MLID SLID SGID MGID SRCQPN\n");
		return 2;
	}
	count = strtoul(argv[2], NULL, 0);
	size = strtoul(argv[3], NULL, 0);
	mlid = strtoul(argv[4], NULL, 0);
	slid = strtoul(argv[5], NULL, 0);
	srcqpn = strtoul(argv[8], NULL, 0);
	if (size > PKT_MAX - UMC_IB_HDR_MAX - 16) {
		fprintf(stderr, "ib_capture_check: SIZE too large\n");
		return 2;
	}
	ib0.lrh = (struct umc_lrh){.lnh = UMC_LNH_IBA_GLOBAL, .dlid = (uint16_t)mlid,
				   .slid = (uint16_t)slid};
	ib0.grh.ipver = UMC_GRH_IPVER;
	ib0.grh.next_hdr = UMC_GRH_NXTHDR_IBA;
	ud0.bth = (struct umc_bth){.opcode = UMC_OP_UD_SEND_ONLY_IMM, .pkey = 0xffff,
				   .dest_qpn = MCAST_QPN};
	ud0.deth = (struct umc_deth){.qkey = QKEY, .src_qpn = (uint32_t)srcqpn};
	ud0.imm_be = htonl((uint32_t)srcqpn);

	f = fopen(argv[1], "rb");
	if (!f) {
		fprintf(stderr, "ib_capture_check: cannot open %s\n", argv[1]);
		return 2;
	}
	while (fread(rec, 1, sizeof(rec), f) == sizeof(rec)) {
		unsigned type = rec[8] & 0x7f, rlen = (unsigned)rec[10] << 8 | rec[11];
		unsigned wlen = (unsigned)rec[14] << 8 | rec[15], body, ext = 0;
		uint8_t e[8];

		if (rlen < ERF_HDR) {
			fprintf(stderr, "ib_capture_check: record with rlen %u\n", rlen);
			return 2;
		}
		body = rlen - ERF_HDR;
		/* Extension headers: 8 bytes each while the top bit says another follows. */
		for (int more = rec[8] & 0x80; more; more = e[0] & 0x80) {
			if (body < 8 || fread(e, 1, 8, f) != 8) {
				fprintf(stderr, "ib_capture_check: truncated extension header\n");
				return 2;
			}
			body -= 8;
			ext++;
		}
		if (body > sizeof(got) || fread(got, 1, body, f) != body) {
			fprintf(stderr, "ib_capture_check: truncated record\n");
			return 2;
		}
		if (type != ERF_TYPE_INFINIBAND) {
			FAIL("record %u: ERF type %u, not 21 (INFINIBAND)", n, type);
			n++;
			continue;
		}
		if (wlen > body)
			FAIL("record %u: wlen %u but %u bytes captured", n, wlen, body);
		size_t glen = wlen < body ? wlen : body;

		if (n >= count) {
			FAIL("record %u: more than %lu packets", n, count);
			n++;
			continue;
		}
		struct umc_ib_hdr ib = ib0;
		struct umc_ud_hdr ud = ud0;

		ud.bth.psn = n;
		size_t wl = build(want, n, size, &ib, &ud);

		print_fields(want, wl, &ib, &ud, size);
		if (glen != wl || memcmp(got, want, wl) != 0) {
			FAIL("packet %u differs from what the encoders build", n);
			hexdump("captured", got, glen);
			hexdump("rebuilt", want, wl);
		}
		n++;
	}
	fclose(f);
	if (n != count)
		FAIL("%u packets in %s, expected %lu", n, argv[1], count);
	if (!fails)
		fprintf(stderr, "ok: %u InfiniBand packets identical to the encoders' output\n", n);
	return fails ? 1 : 0;
}
