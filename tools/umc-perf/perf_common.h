/* SPDX-License-Identifier: MIT */
/*
 * perf_common.h - what umc-perf and the bench/ baselines (udp-perf,
 * fi-perf) share, so that the three measure and print exactly alike:
 *
 *   - the payload's first 8 bytes: the message's sequence number, or the
 *     end-of-run marker PERF_FIN | messages sent;
 *   - receive accounting (received, expected from the sequence numbers or
 *     the end marker, loss, the first and last arrival);
 *   - latency samples and their percentiles (nearest rank);
 *   - pacing (-r) and the time source (CLOCK_MONOTONIC);
 *   - the machine-readable "result ..." line and the human lines.
 *
 * Header only (static functions): each program is one C file plus this.
 */
#ifndef UMC_PERF_COMMON_H
#define UMC_PERF_COMMON_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* End-of-run marker: the sender sends it, with its count, after the data. */
#define PERF_FIN (1ull << 63)
/* Datagram overhead of a RoCEv2 UD SEND (BTH 12 + DETH 8 + ICRC 4) plus
 * 8 bytes, as the brief fixes for the baselines: they send size + 32 bytes. */
#define PERF_ROCE_OVERHEAD 32
/* How long the end marker is repeated (a full socket buffer may drop some). */
#define PERF_FIN_SPAN_NS (50 * 1000000ll)
#define PERF_FIN_GAP_NS (2 * 1000000ll)

static inline int64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static inline void perf_put_seq(void *payload, uint32_t size, uint64_t seq)
{
	if (size >= sizeof(seq))
		memcpy(payload, &seq, sizeof(seq));
}

static inline uint64_t perf_get_seq(const void *payload, uint32_t size)
{
	uint64_t seq = 0;

	if (size >= sizeof(seq))
		memcpy(&seq, payload, sizeof(seq));
	return seq;
}

/* A number with an optional k/M/G suffix (powers of 1000). */
static inline double perf_parse_num(const char *prog, const char *opt, const char *s,
				    double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && *end) {
		switch (*end) {
		case 'k': case 'K': v *= 1e3; end++; break;
		case 'm': case 'M': v *= 1e6; end++; break;
		case 'g': case 'G': v *= 1e9; end++; break;
		}
	}
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "%s: invalid value '%s' for %s (%g..%g)\n", prog, s, opt, min, max);
		exit(2);
	}
	return v;
}

/* Tell the bench script that we are joined and ready: one byte on @fd. */
static inline void perf_signal_ready(int fd)
{
	char c = 'R';

	if (fd < 0)
		return;
	while (write(fd, &c, 1) < 0 && errno == EINTR)
		;
	close(fd);
}

/* ------------------------------------------------------------------------- */
/* Pacing: -r msgs/s, enforced per batch by busy-waiting on the clock.        */

struct perf_pace {
	double ns_per_msg; /* 0: no pacing */
	int64_t next;
};

static inline void perf_pace_init(struct perf_pace *p, double rate)
{
	p->ns_per_msg = rate > 0 ? 1e9 / rate : 0;
	p->next = perf_now_ns();
}

static inline void perf_pace_wait(struct perf_pace *p, int msgs)
{
	if (!p->ns_per_msg)
		return;
	while (perf_now_ns() < p->next)
		;
	p->next += (int64_t)(p->ns_per_msg * msgs);
}

/* ------------------------------------------------------------------------- */
/* Receive accounting.                                                        */

struct perf_rx {
	uint64_t received;  /* data messages */
	uint64_t max_next;  /* highest sequence number seen + 1 */
	uint64_t fin_total; /* from the end marker */
	bool fin;
	int64_t first_ns, last_ns;
};

/* Account one message; returns true if it was the end marker. */
static inline bool perf_rx_account(struct perf_rx *r, uint64_t seq, int64_t now)
{
	if (seq & PERF_FIN) {
		if (!r->fin) {
			r->fin = true;
			r->fin_total = seq & ~PERF_FIN;
		}
		return true;
	}
	if (!r->received)
		r->first_ns = now;
	r->last_ns = now;
	r->received++;
	if (seq + 1 > r->max_next)
		r->max_next = seq + 1;
	return false;
}

static inline uint64_t perf_rx_expected(const struct perf_rx *r)
{
	return r->fin ? r->fin_total : r->max_next;
}

/* ------------------------------------------------------------------------- */
/* Latency samples.                                                          */

static int perf_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted @v[n]; @p in (0, 100]. */
static inline int64_t perf_pct(const int64_t *v, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)((p / 100.0) * (double)n + 0.999999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

/* ------------------------------------------------------------------------- */
/* Output: one "result" line (key=value, stable) and human lines.             */

struct perf_result {
	const char *transport; /* umcast, udp, libfabric */
	const char *role;      /* send, recv, ping, pong */
	uint32_t size;
	int batch;
	int qps;
};

static inline void perf_print_rate(const struct perf_result *r, uint64_t msgs, int64_t span_ns,
				   uint64_t expected, bool show_loss)
{
	double secs = span_ns > 0 ? span_ns / 1e9 : 0;
	double rate = secs > 0 ? msgs / secs : 0;
	double mbps = rate * r->size * 8 / 1e6;
	uint64_t lost = expected > msgs ? expected - msgs : 0;
	double loss = expected ? (double)lost / (double)expected : 0;

	printf("# %s %s: %llu messages of %u bytes in %.3f s: %.0f msg/s, %.1f MB/s payload",
	       r->transport, r->role, (unsigned long long)msgs, r->size, secs, rate,
	       rate * r->size / 1e6);
	if (show_loss)
		printf(", expected %llu, lost %llu (%.2f%%)", (unsigned long long)expected,
		       (unsigned long long)lost, 100 * loss);
	printf("\n");
	printf("result transport=%s role=%s size=%u batch=%d qps=%d msgs=%llu secs=%.6f "
	       "rate=%.0f mbps=%.1f",
	       r->transport, r->role, r->size, r->batch, r->qps, (unsigned long long)msgs, secs,
	       rate, mbps);
	if (show_loss)
		printf(" expected=%llu lost=%llu loss=%.6f", (unsigned long long)expected,
		       (unsigned long long)lost, loss);
	printf("\n");
	fflush(stdout);
}

/* Write the samples, in the order taken, one per line in ns (-O file). */
static inline void perf_dump_samples(const char *path, const int64_t *ns, size_t n)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%lld\n", (long long)ns[i]);
	fclose(f);
}

/* Sorts @ns in place. */
static inline void perf_print_lat(const struct perf_result *r, int64_t *ns, size_t n,
				  uint64_t lost)
{
	double sum = 0;

	qsort(ns, n, sizeof(*ns), perf_cmp_i64);
	for (size_t i = 0; i < n; i++)
		sum += (double)ns[i];
#define US(x) ((double)(x) / 1e3)
	printf("# %s %s: %zu round trips of %u bytes, %llu lost: min %.2f us, p50 %.2f us, "
	       "p99 %.2f us, p99.9 %.2f us, max %.2f us\n",
	       r->transport, r->role, n, r->size, (unsigned long long)lost,
	       US(n ? ns[0] : 0), US(perf_pct(ns, n, 50)), US(perf_pct(ns, n, 99)),
	       US(perf_pct(ns, n, 99.9)), US(n ? ns[n - 1] : 0));
	printf("result transport=%s role=%s size=%u iters=%zu lost=%llu min_us=%.3f "
	       "p50_us=%.3f p99_us=%.3f p999_us=%.3f max_us=%.3f mean_us=%.3f\n",
	       r->transport, r->role, r->size, n, (unsigned long long)lost, US(n ? ns[0] : 0),
	       US(perf_pct(ns, n, 50)), US(perf_pct(ns, n, 99)), US(perf_pct(ns, n, 99.9)),
	       US(n ? ns[n - 1] : 0), n ? US(sum / (double)n) : 0);
#undef US
	fflush(stdout);
}

#endif /* UMC_PERF_COMMON_H */
