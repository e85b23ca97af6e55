/* SPDX-License-Identifier: MIT */
/*
 * perf_common.c - the options, the four roles' loops and the output that
 * umc-perf, udp-perf and fi-perf share (perf_common.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_common.h"

static const char *prog = "perf";

void perf_die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

/*
 * A number with an optional k/M/G suffix (powers of 1000); exits 2 outside
 * [min, max], or when @whole and it has a fraction left (-S 8.5, -n 1.5).
 */
static double parse_num(const char *opt, const char *s, double min, double max, bool whole)
{
	double v, scale = 1;
	char *end;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && *end) {
		switch (*end) {
		case 'k': case 'K': scale = 1e3; end++; break;
		case 'm': case 'M': scale = 1e6; end++; break;
		case 'g': case 'G': scale = 1e9; end++; break;
		}
	}
	v *= scale;
	/* !(in range), not (out of range): a NaN ("nan") is neither. */
	if (errno || end == s || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "%s: invalid value '%s' for %s (%.15g..%.15g)\n", prog, s, opt, min,
			max);
		exit(2);
	}
	/*
	 * In range, so the casts are defined (every bound of a whole option
	 * is in [0, 2^63)).  A suffix multiplies in binary: 1.001k is
	 * 1000.9999999999999, so a scaled value within a few ulps of a whole
	 * number is that number.
	 */
	if (whole && scale != 1) {
		double r = (double)(long long)(v + 0.5);

		if ((v > r ? v - r : r - v) <= 4 * DBL_EPSILON * v)
			v = r;
	}
	if (whole && v != (double)(long long)v) {
		fprintf(stderr, "%s: invalid value '%s' for %s (not a whole number)\n", prog, s,
			opt);
		exit(2);
	}
	return v;
}

struct in_addr perf_parse_v4(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "%s: not an IPv4 address: %s\n", prog, s);
		exit(2);
	}
	return a;
}

struct in_addr perf_next_group(struct in_addr a)
{
	a.s_addr = htonl(ntohl(a.s_addr) + 1);
	return a;
}

/* The usage on stderr, exit 2: a usage error. */
static void __attribute__((noreturn)) usage_error(const struct perf_transport *t)
{
	t->usage(stderr);
	exit(2);
}

void perf_parse_args(const struct perf_transport *t, int argc, char **argv)
{
	enum { OPT_VERSION = 256 };
	static const struct option long_opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	struct perf_opts *o = t->o;
	int op;

#define NUM(opt, min, max) parse_num(opt, optarg, min, max, true)
#define REAL(opt, min, max) parse_num(opt, optarg, min, max, false)
	prog = t->prog;
	*o = (struct perf_opts){
		.bind = "127.0.0.1",
		.port = t->port,
		.size = 64,
		.qps = 1,
		.batch = 32,
		.depth = 2048,
		.ready_fd = -1,
		.idle_ms = 1000,
		.timeout_ms = 30000,
		.warmup = 1000,
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((op = getopt_long(argc, argv, t->optstring, long_opts, NULL)) != -1) {
		switch (op) {
		case 'm': o->group = optarg; break;
		case 'g': o->group2 = optarg; break;
		case 'b': o->bind = optarg; break;
		case 'p': o->port = (int)NUM("-p", 1, 65535); break;
		case 's': o->sender = true; break;
		case 'c': o->connected = true; break;
		case 'o': o->send_only = true; break;
		case 'L':
			if (!strcmp(optarg, "ping"))
				o->mode = PERF_MODE_PING;
			else if (!strcmp(optarg, "pong"))
				o->mode = PERF_MODE_PONG;
			else
				usage_error(t);
			break;
		/* Every message carries its sequence number (perf_put_seq):
		 * loss, the end marker and ping's match all need it. */
		case 'S': o->size = (uint32_t)NUM("-S", sizeof(uint64_t), t->size_max); break;
		case 'n': o->count = (uint64_t)NUM("-n", 1, 1e15); break;
		case 'D': o->duration = REAL("-D", 0.001, 3600); break;
		case 'r': o->rate = REAL("-r", 1, 1e10); break;
		case 'B': o->batch = (int)NUM("-B", 1, t->batch_max); break;
		case 'd': o->depth = (int)NUM("-d", 1, 16384); break;
		case 'q': o->qps = (int)NUM("-q", 1, PERF_MAX_QPS); break;
		case 'e': o->events = true; break;
		case 'E': o->events = o->epoll_set = true; break;
		case 'G': o->roce_shape = true; break;
		case 'V': o->roce_shape = o->roce_work = true; break;
		case 'O': o->dump = optarg; break;
		case 'w': o->warmup = (uint64_t)NUM("-w", 0, 1e9); break;
		case 'R': o->ready_fd = (int)NUM("-R", 0, INT_MAX); break;
		case 'I': o->idle_ms = (int)NUM("-I", 1, INT_MAX); break;
		/* -t as umc-mckey and umc-sa spell it; -T, the first spelling, too. */
		case 't': o->timeout_ms = (int)NUM("-t", 1, INT_MAX); break;
		case 'T': o->timeout_ms = (int)NUM("-T", 1, INT_MAX); break;
		case 'h':
			t->usage(stdout);
			exit(0);
		case OPT_VERSION:
			printf("%s (umcast) %s\n", t->prog, UMC_VERSION);
			exit(0);
		default: usage_error(t);
		}
	}
#undef NUM
#undef REAL
	if (optind < argc || !o->group)
		usage_error(t);
	if (o->batch > o->depth)
		o->batch = o->depth;
	if (o->sender && !o->count && !o->duration)
		o->count = 1000000;
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

static void print_rate(const struct perf_result *r, uint64_t msgs, int64_t span_ns,
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
static void dump_samples(const char *path, const int64_t *ns, size_t n)
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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted @v[n]; @p in (0, 100]. */
static int64_t pct(const int64_t *v, size_t n, double p)
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

/* Sorts @ns in place. */
static void print_lat(const struct perf_result *r, int64_t *ns, size_t n, uint64_t lost)
{
	double sum = 0;

	qsort(ns, n, sizeof(*ns), cmp_i64);
	for (size_t i = 0; i < n; i++)
		sum += (double)ns[i];
#define US(x) ((double)(x) / 1e3)
	printf("# %s %s: %zu round trips of %u bytes, %llu lost: min %.2f us, p50 %.2f us, "
	       "p99 %.2f us, p99.9 %.2f us, max %.2f us\n",
	       r->transport, r->role, n, r->size, (unsigned long long)lost,
	       US(n ? ns[0] : 0), US(pct(ns, n, 50)), US(pct(ns, n, 99)),
	       US(pct(ns, n, 99.9)), US(n ? ns[n - 1] : 0));
	printf("result transport=%s role=%s size=%u iters=%zu lost=%llu min_us=%.3f "
	       "p50_us=%.3f p99_us=%.3f p999_us=%.3f max_us=%.3f mean_us=%.3f\n",
	       r->transport, r->role, r->size, n, (unsigned long long)lost, US(n ? ns[0] : 0),
	       US(pct(ns, n, 50)), US(pct(ns, n, 99)), US(pct(ns, n, 99.9)),
	       US(n ? ns[n - 1] : 0), n ? US(sum / (double)n) : 0);
#undef US
	fflush(stdout);
}

/* ------------------------------------------------------------------------- */
/* The roles.                                                                */

/* Tell the bench script that we are joined and ready: one byte on @fd. */
static void signal_ready(int fd)
{
	char c = 'R';

	if (fd < 0)
		return;
	while (write(fd, &c, 1) < 0 && errno == EINTR)
		;
	close(fd);
}

/* Whether to give up waiting: nothing for -I ms since the last message
 * once there was one (@any), nothing at all for -T ms before. */
static bool quiet(const struct perf_opts *o, bool any, int64_t last, int64_t start, int64_t now)
{
	return any ? now - last > o->idle_ms * 1000000ll : now - start > o->timeout_ms * 1000000ll;
}

/* -e: sleep in t->wait() for at most what is left of quiet()'s span. */
static void sleep_quiet(const struct perf_transport *t, bool any)
{
	if (t->o->events && t->wait)
		t->wait(any ? t->o->idle_ms : t->o->timeout_ms);
}

/* Pacing: -r msgs/s, enforced per batch by busy-waiting on the clock. */
struct pace {
	double ns_per_msg; /* 0: no pacing */
	int64_t next;
};

static void pace_init(struct pace *p, double rate)
{
	p->ns_per_msg = rate > 0 ? 1e9 / rate : 0;
	p->next = perf_now_ns();
}

static void pace_wait(struct pace *p, int msgs)
{
	if (!p->ns_per_msg)
		return;
	while (perf_now_ns() < p->next)
		;
	p->next += (int64_t)(p->ns_per_msg * msgs);
}

static bool run_sender(const struct perf_transport *t)
{
	const struct perf_opts *o = t->o;
	struct perf_result r = {t->name, "send", o->size, o->batch, 1};
	struct pace pace;
	uint64_t seq = 0;
	int64_t start, end, stop_at;

	signal_ready(o->ready_fd);
	pace_init(&pace, o->rate);
	start = perf_now_ns();
	stop_at = o->duration > 0 ? start + (int64_t)(o->duration * 1e9) : INT64_MAX;
	for (;;) {
		uint64_t left = o->count ? o->count - seq : UINT64_MAX;
		int nb = left < (uint64_t)o->batch ? (int)left : o->batch;

		if (!nb || perf_now_ns() >= stop_at)
			break;
		if (t->reserve)
			t->reserve(seq, nb);
		pace_wait(&pace, nb);
		t->send(seq, nb);
		seq += nb;
	}
	end = perf_now_ns();
	/* The end marker, repeated for a while: a full socket buffer drops some. */
	for (int64_t now = perf_now_ns(), until = now + PERF_FIN_SPAN_NS; now < until;
	     now = perf_now_ns()) {
		t->send_fin(seq);
		while (perf_now_ns() < now + PERF_FIN_GAP_NS)
			;
		if (t->fin_gap)
			t->fin_gap();
	}
	print_rate(&r, seq, end - start, 0, false);
	return true;
}

static bool all_done(const struct perf_transport *t)
{
	for (int q = 0; q < t->o->qps; q++)
		if (!t->acct(q)->done)
			return false;
	return true;
}

static uint64_t rx_expected(const struct perf_rx *r)
{
	return r->fin ? r->fin_total : r->max_next;
}

static bool run_receiver(const struct perf_transport *t)
{
	const struct perf_opts *o = t->o;
	struct perf_result r = {t->name, "recv", o->size, o->batch, o->qps};
	int64_t start, now, last = 0, first = INT64_MAX, lastrx = 0;
	uint64_t total = 0, expected = 0;
	bool got_any = false;

	signal_ready(o->ready_fd);
	start = perf_now_ns();
	while (!all_done(t)) {
		if (t->recv(&now)) {
			last = now;
			got_any = true;
			continue;
		}
		if (t->recv_idle)
			t->recv_idle();
		now = perf_now_ns();
		if (quiet(o, got_any, last, start, now))
			break;
		sleep_quiet(t, got_any);
	}
	for (int q = 0; q < o->qps; q++) {
		const struct perf_rx *a = t->acct(q);

		total += a->received;
		expected += rx_expected(a);
		if (a->received) {
			if (a->first_ns < first)
				first = a->first_ns;
			if (a->last_ns > lastrx)
				lastrx = a->last_ns;
		}
		if (o->qps > 1 && t->queue_name) {
			char name[64];

			t->queue_name(q, name, sizeof(name));
			printf("# %s: received %llu of %llu\n", name,
			       (unsigned long long)a->received,
			       (unsigned long long)rx_expected(a));
		}
	}
	if (o->count && expected < o->count * (uint64_t)o->qps)
		expected = o->count * (uint64_t)o->qps;
	if (!total)
		fprintf(stderr, "%s: no message received\n", prog);
	print_rate(&r, total, total ? lastrx - first : 0, expected, true);
	if (t->recv_end)
		t->recv_end();
	return total > 0;
}

static bool run_ping(const struct perf_transport *t)
{
	const struct perf_opts *o = t->o;
	struct perf_result r = {t->name, "ping", o->size, 1, 1};
	uint64_t iters = o->count ? o->count : 10000, lost = 0, n_ok = 0;
	int64_t *samples = malloc(iters * sizeof(*samples));

	if (!samples)
		perf_die("malloc");
	signal_ready(o->ready_fd);
	for (uint64_t i = 0; i < o->warmup + iters; i++) {
		bool got = false;
		int64_t t0, t1;

		t->ping_prepare(i);
		t0 = perf_now_ns();
		t->ping_send();
		while (!got) {
			int n = t->ping_recv(i, &got);
			int64_t waited;

			if (n || got)
				continue;
			waited = perf_now_ns() - t0;
			if (waited > o->idle_ms * 1000000ll)
				break;
			/* -e: sleep until the echo may be there, as the pong side does. */
			if (o->events && t->wait)
				t->wait((int)(o->idle_ms - waited / 1000000) + 1);
		}
		t1 = perf_now_ns();
		if (!got)
			lost++;
		else if (i >= o->warmup)
			samples[n_ok++] = t1 - t0;
		if (t->ping_after)
			t->ping_after();
	}
	/* Tell the pong side to stop. */
	for (int k = 0; k < 8; k++) {
		t->ping_prepare(PERF_FIN | (o->warmup + iters));
		t->ping_send();
	}
	dump_samples(o->dump, samples, n_ok);
	print_lat(&r, samples, n_ok, lost);
	free(samples);
	return n_ok > 0;
}

static bool run_pong(const struct perf_transport *t)
{
	const struct perf_opts *o = t->o;
	struct perf_result r = {t->name, "pong", o->size, 1, 1};
	struct perf_echo e = {0};
	int64_t start;
	bool stop = false;

	signal_ready(o->ready_fd);
	start = perf_now_ns();
	while (!stop) {
		if (t->pong(&e, &stop))
			continue;
		if (quiet(o, e.echoed, e.last, start, perf_now_ns()))
			break;
		sleep_quiet(t, e.echoed);
	}
	print_rate(&r, e.echoed, e.last - e.first, 0, false);
	return true;
}

void perf_run(const struct perf_transport *t)
{
	const struct perf_opts *o = t->o;
	enum perf_role role = o->mode == PERF_MODE_PING	  ? PERF_ROLE_PING
			      : o->mode == PERF_MODE_PONG ? PERF_ROLE_PONG
			      : o->sender		  ? PERF_ROLE_SEND
							  : PERF_ROLE_RECV;
	bool ok = false;

	if (t->open)
		t->open(role);
	switch (role) {
	case PERF_ROLE_SEND: ok = run_sender(t); break;
	case PERF_ROLE_RECV: ok = run_receiver(t); break;
	case PERF_ROLE_PING: ok = run_ping(t); break;
	case PERF_ROLE_PONG: ok = run_pong(t); break;
	}
	if (t->close)
		t->close();
	if (!ok)
		exit(3);
}
