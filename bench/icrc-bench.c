/* SPDX-License-Identifier: MIT */
/*
 * icrc-bench - ICRC throughput on one core: umc_icrc_compute() over a real
 * RoCEv2 UD SEND with a -S byte payload (4096 by default), in a loop, for
 * about -t seconds.  Prints GB/s over the bytes the ICRC covers per packet
 * (the UDP payload: BTH, DETH, payload, ICRC) and, for scale, the bare
 * CRC-32 routines underneath (ISA-L's crc32_gzip_refl, zlib's crc32) over
 * the same bytes, in alternating 10 ms slices so that their ratio is that
 * of one moment.  Also the ICRC of a stream of such packets as the send and
 * receive paths compute it, the PSN counting up and the prefix answered by
 * an ICRC memo (umc_icrc_start_memo).  Linked with umcast_static for the
 * internal wire API.
 *
 *   result transport=icrc size=4096 udp_len=4124 iters=... secs=... gbps=...
 *   result transport=icrc_stream size=4096 udp_len=4124 gbps=... ns_per_pkt=...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/crc.h>
#include <zlib.h>

#include "wire/be.h"
#include "wire/wire.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile uint32_t sink;

/* The ICRC of the next packet of a stream: PSN + 1, the prefix from @m. */
static uint32_t icrc_stream(struct umc_icrc_memo *m, const struct umc_ip_ctx *ip, uint8_t *pkt,
			    size_t hl, size_t udp_len)
{
	put_be24(pkt + 9, (get_be24(pkt + 9) + 1) & 0xffffff); /* BTH bytes 9-11 */
	return umc_icrc_update(umc_icrc_start_memo(m, ip, udp_len, pkt, hl), pkt + hl,
			       udp_len - hl - UMC_ICRC_LEN);
}

/*
 * Add one slice of about @slice seconds of @expr to *@secs and *@iters.
 * The three routines run in alternating slices, so a slow phase of the
 * machine (other guests, frequency changes) hits all of them alike and
 * their ratio holds even when the absolute speed drifts.
 */
#define SLICE(slice, secs, iters, expr)                                         \
	do {                                                                    \
		double t0 = now_s(), t1;                                        \
		do {                                                            \
			for (int k = 0; k < 256; k++)                           \
				sink ^= (expr);                                 \
			*(iters) += 256;                                        \
			t1 = now_s();                                           \
		} while (t1 - t0 < (slice));                                    \
		*(secs) += t1 - t0;                                             \
	} while (0)

int main(int argc, char **argv)
{
	size_t size = 4096;
	double secs = 1.0;
	struct umc_ip_ctx ip = {
		.family = 4,
		.sport = 0xC123,
		.dport = 4791,
		.df = true,
		.hop_limit = 64,
	};
	struct umc_ud_hdr h = {
		.bth = {.opcode = UMC_OP_UD_SEND_ONLY, .pkey = 0xffff, .dest_qpn = 0xffffff},
		.deth = {.qkey = 0x01234567, .src_qpn = 0x11},
	};
	uint64_t iters;
	uint8_t *pkt;
	size_t hl, udp_len;
	double bps;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-S") && i + 1 < argc)
			size = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			secs = strtod(argv[++i], NULL);
		else {
			fprintf(stderr, "usage: %s [-S payload_bytes] [-t seconds]\n", argv[0]);
			return 2;
		}
	}
	memcpy(ip.src, (uint8_t[]){127, 0, 0, 1}, 4);
	memcpy(ip.dst, (uint8_t[]){239, 1, 1, 1}, 4);
	h.bth.pad_cnt = umc_ud_pad(size);
	pkt = aligned_alloc(64, (UMC_UD_HDR_MAX + size + 8 + 63) & ~(size_t)63);
	if (!pkt)
		return 1;
	hl = umc_ud_hdr_encode(pkt, &h);
	for (size_t i = 0; i < size; i++)
		pkt[hl + i] = (uint8_t)(i * 7);
	udp_len = hl + size + h.bth.pad_cnt + UMC_ICRC_LEN;
	memset(pkt + hl + size, 0, h.bth.pad_cnt);
	umc_icrc_put(pkt + udp_len - UMC_ICRC_LEN, umc_icrc_compute(&ip, pkt, udp_len));

	/* Warm up, then measure in alternating slices of 10 ms. */
	double t_icrc = 0, t_isal = 0, t_zlib = 0, t_strm = 0;
	uint64_t n_icrc = 0, n_isal = 0, n_zlib = 0, n_strm = 0;
	struct umc_icrc_memo memo = {0};

	SLICE(0.1, &t_icrc, &n_icrc, umc_icrc_compute(&ip, pkt, udp_len));
	t_icrc = 0;
	n_icrc = 0;
	while (t_icrc < secs) {
		SLICE(0.01, &t_icrc, &n_icrc, umc_icrc_compute(&ip, pkt, udp_len));
		SLICE(0.01, &t_isal, &n_isal, crc32_gzip_refl(0, pkt, udp_len));
		SLICE(0.005, &t_zlib, &n_zlib, (uint32_t)crc32(0, pkt, (uInt)udp_len));
		SLICE(0.01, &t_strm, &n_strm, icrc_stream(&memo, &ip, pkt, hl, udp_len));
	}
	iters = n_icrc;
	bps = (double)udp_len * (double)n_icrc / t_icrc;
	printf("# umc_icrc_compute over a %zu-byte UD SEND (%zu bytes covered): %.2f GB/s, "
	       "%.1f ns per packet\n",
	       size, udp_len, bps / 1e9, 1e9 * udp_len / bps);
	printf("result transport=icrc size=%zu udp_len=%zu iters=%llu gbps=%.3f ns_per_pkt=%.1f\n",
	       size, udp_len, (unsigned long long)iters, bps / 1e9, 1e9 * udp_len / bps);

	double isal = (double)udp_len * (double)n_isal / t_isal;
	double zl = (double)udp_len * (double)n_zlib / t_zlib;

	printf("# for scale, the same %zu bytes: ISA-L crc32_gzip_refl %.2f GB/s, zlib crc32 "
	       "%.2f GB/s\n",
	       udp_len, isal / 1e9, zl / 1e9);
	printf("result transport=crc32 size=%zu isal_gbps=%.3f zlib_gbps=%.3f\n", udp_len,
	       isal / 1e9, zl / 1e9);

	double strm = (double)udp_len * (double)n_strm / t_strm;

	printf("# a stream of them, PSN counting up, the prefix from an ICRC memo: %.2f GB/s, "
	       "%.1f ns per packet\n",
	       strm / 1e9, 1e9 * udp_len / strm);
	printf("result transport=icrc_stream size=%zu udp_len=%zu gbps=%.3f ns_per_pkt=%.1f\n", size,
	       udp_len, strm / 1e9, 1e9 * udp_len / strm);
	free(pkt);
	return 0;
}
