// SPDX-License-Identifier: MIT
/*
 * capture_check - compare the RoCEv2 datagrams in a pcap byte for byte
 * with what the wire encoders (src/wire) build from the expected field
 * values (test_capture.sh).
 *
 *   capture_check PCAP GROUP SRC SPORT SRCQPN
 *
 * For every IPv4/UDP frame of the capture to GROUP:4791 (in capture
 * order; anything else in the file is ignored), message i of
 * capture_msgs.h is rebuilt independently of the sender:
 *   IPv4 header  umc_ip_hdr_encode: SRC -> GROUP, TOS 0, ID 0, DF, TTL 64
 *   UDP header   umc_udp_hdr_encode: SPORT -> 4791, checksum 0
 *   BTH + DETH   umc_ud_hdr_encode: opcode 0x64/0x65, SE 0, M 0, PadCnt,
 *                TVer 0, P_Key 0xFFFF, DestQP 0xFFFFFF, A 0, PSN i,
 *                Q_Key 0x01234567, SrcQP SRCQPN, ImmDt
 *   payload      cap_byte(i, j), then PadCnt zero bytes
 *   ICRC         umc_icrc_compute over the rebuilt datagram
 * and the whole IP datagram must equal the captured one.  The encoders
 * themselves are checked against the shared vectors by test_wire.
 * Exactly CAP_N such frames must be present.  Exit 0 when all match.
 *
 * The pcap reader handles classic pcap (both byte orders, micro- and
 * nanosecond magic) with link types Ethernet (1), raw IP (101), Linux
 * cooked v1 (113) and v2 (276): tshark -F pcap on lo writes Ethernet.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_msgs.h"
#include "wire/wire.h"

static int fails;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		printf("FAIL: " __VA_ARGS__);                                                      \
		printf("\n");                                                                      \
		fails++;                                                                           \
	} while (0)

static uint32_t rd32(const uint8_t *p, bool swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

static void hexdump(const char *what, const uint8_t *p, size_t n)
{
	printf("  %s (%zu bytes):", what, n);
	for (size_t i = 0; i < n; i++)
		printf("%s%02x", i % 32 ? "" : "\n    ", p[i]);
	printf("\n");
}

/* Build message @i as the IP datagram the encoders say must be on the wire. */
static size_t build(uint8_t *out, unsigned i, const uint8_t src[4], const uint8_t grp[4],
		    uint16_t sport, uint32_t srcqpn)
{
	const struct cap_msg *m = &cap_msgs[i];
	struct umc_ip_ctx c = {
		.family = 4, .sport = sport, .dport = 4791, .ip_id = 0, .df = true,
		.tclass = 0, .hop_limit = 64,
	};
	struct umc_ud_hdr h = {
		.bth = {
			.opcode = m->imm ? UMC_OP_UD_SEND_ONLY_IMM : UMC_OP_UD_SEND_ONLY,
			.pad_cnt = (uint8_t)umc_ud_pad(m->len),
			.pkey = 0xffff,
			.dest_qpn = 0xffffff,
			.psn = i,
		},
		.deth = {.qkey = 0x01234567u, .src_qpn = srcqpn},
		.imm_be = htonl(m->imm_host),
	};
	uint8_t ud[UMC_UD_HDR_MAX];
	size_t hl = umc_ud_hdr_encode(ud, &h), pad = umc_ud_pad(m->len);
	size_t udp_len = hl + m->len + pad + UMC_ICRC_LEN;
	uint8_t *p;

	memcpy(c.src, src, 4);
	memcpy(c.dst, grp, 4);
	p = out + umc_ip_hdr_encode(out, &c, udp_len);
	umc_udp_hdr_encode(p, &c, udp_len, 0);
	p += UMC_UDP_HLEN;
	memcpy(p, ud, hl);
	for (size_t j = 0; j < m->len; j++)
		p[hl + j] = cap_byte(i, j);
	memset(p + hl + m->len, 0, pad);
	umc_icrc_put(p + udp_len - UMC_ICRC_LEN, umc_icrc_compute(&c, p, udp_len));
	return UMC_IPV4_HLEN + UMC_UDP_HLEN + udp_len;
}

int main(int argc, char **argv)
{
	uint8_t src[4], grp[4], gh[24], rh[16], frame[65536 + 64], want[2048];
	unsigned long sport, srcqpn;
	uint32_t linktype, caplen;
	unsigned n = 0, frames = 0;
	bool swap;
	FILE *f;

	if (argc != 6 || inet_pton(AF_INET, argv[2], grp) != 1 ||
	    inet_pton(AF_INET, argv[3], src) != 1) {
		fprintf(stderr, "usage: capture_check PCAP GROUP SRC SPORT SRCQPN\n");
		return 2;
	}
	sport = strtoul(argv[4], NULL, 0);
	srcqpn = strtoul(argv[5], NULL, 0);
	f = fopen(argv[1], "rb");
	if (!f || fread(gh, 1, sizeof(gh), f) != sizeof(gh)) {
		fprintf(stderr, "capture_check: cannot read %s\n", argv[1]);
		return 2;
	}
	uint32_t magic;

	memcpy(&magic, gh, 4);
	if (magic == 0xa1b2c3d4u || magic == 0xa1b23c4du)
		swap = false;
	else if (magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u)
		swap = true;
	else {
		fprintf(stderr, "capture_check: not a classic pcap file (magic %08x)\n", magic);
		return 2;
	}
	linktype = rd32(gh + 20, swap) & 0x0fffffff;

	while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
		caplen = rd32(rh + 8, swap);
		uint32_t origlen = rd32(rh + 12, swap);

		if (caplen > sizeof(frame) || fread(frame, 1, caplen, f) != caplen) {
			fprintf(stderr, "capture_check: truncated file\n");
			return 2;
		}
		frames++;
		const uint8_t *ip = frame;
		size_t len = caplen;
		uint16_t etype = 0x0800;

		switch (linktype) {
		case 1: /* Ethernet */
			if (len < 14)
				continue;
			etype = (uint16_t)(frame[12] << 8 | frame[13]);
			ip += 14, len -= 14;
			break;
		case 113: /* Linux cooked v1 */
			if (len < 16)
				continue;
			etype = (uint16_t)(frame[14] << 8 | frame[15]);
			ip += 16, len -= 16;
			break;
		case 276: /* Linux cooked v2 */
			if (len < 20)
				continue;
			etype = (uint16_t)(frame[0] << 8 | frame[1]);
			ip += 20, len -= 20;
			break;
		case 101: /* raw IP */
			break;
		default:
			fprintf(stderr, "capture_check: link type %u not handled\n", linktype);
			return 2;
		}
		if (etype != 0x0800 || len < 28 || ip[0] >> 4 != 4 || ip[9] != 17 ||
		    memcmp(ip + 16, grp, 4) != 0 || (ip[22] << 8 | ip[23]) != 4791)
			continue;
		if (caplen != origlen) {
			FAIL("frame %u: captured %u of %u bytes (snaplen too small)", frames, caplen,
			     origlen);
			continue;
		}
		/* Trailing Ethernet padding is not part of the datagram. */
		size_t dlen = (size_t)(ip[2] << 8 | ip[3]);

		if (dlen > len) {
			FAIL("frame %u: IP total length %zu > %zu captured", frames, dlen, len);
			continue;
		}
		if (n >= CAP_N) {
			FAIL("frame %u: more than %d datagrams to the group", frames, (int)CAP_N);
			n++;
			continue;
		}
		size_t wlen = build(want, n, src, grp, (uint16_t)sport, (uint32_t)srcqpn);

		if (dlen != wlen || memcmp(ip, want, wlen) != 0) {
			size_t k = 0;

			while (k < dlen && k < wlen && ip[k] == want[k])
				k++;
			FAIL("frame %u (message %u, %u-byte payload): differs from the encoder at "
			     "datagram byte %zu (IP 0..19, UDP 20..27, BTH 28..39, DETH 40..47)",
			     frames, n, cap_msgs[n].len, k);
			hexdump("captured", ip, dlen < 96 ? dlen : 96);
			hexdump("expected", want, wlen < 96 ? wlen : 96);
		} else {
			printf("ok: frame %u = message %u (%zu bytes, ICRC %02x%02x%02x%02x)\n", frames,
			       n, wlen, want[wlen - 4], want[wlen - 3], want[wlen - 2],
			       want[wlen - 1]);
		}
		n++;
	}
	fclose(f);
	if (n != CAP_N)
		FAIL("%u datagrams to the group in %u frames, expected %d", n, frames, (int)CAP_N);
	printf("%s: %d of %d datagrams byte-identical to the encoder\n", fails ? "FAIL" : "PASS",
	       fails ? (int)CAP_N - fails : (int)CAP_N, (int)CAP_N);
	return fails ? 1 : 0;
}
