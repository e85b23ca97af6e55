// SPDX-License-Identifier: MIT
/*
 * test_fault_decide.c - which rule selects a datagram and what it does to
 * it (src/fault/decide.c): exact sequences for drop_nth, burst, dup and
 * reorder's depth, the draws of the probabilities, and the seed's
 * repeatability.
 *
 * Sources of truth: splitmix64's published first output for state 0
 * (Java's SplittableRandom(0).nextLong(), -2152535657050944081), the
 * kernel's IP-to-MGID mappings (cma_set_mgid, ip_ib_mc_map) for group=,
 * and umc-faults(7) for each action's sequence.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fault/fault.h"

enum { N = 20000 };

static struct umc_fault_rule rule(const char *text)
{
	struct umc_fault_spec spec;
	char err[UMC_FAULT_ERR_MAX];

	if (umc_fault_spec_parse(text, &spec, err) || spec.nrules != 1)
		fail_msg("\"%s\": %s", text, err);
	return spec.rule[0];
}

/* The fates of @n datagrams under @text with @seed on "umc_lo", as one letter each. */
static void fates(const char *text, uint64_t seed, int n, char *out)
{
	struct umc_fault_rule r = rule(text);
	struct umc_fault_stream s;
	struct umc_fault_verdict v;

	umc_fault_stream_init(&s, seed, 0, "umc_lo");
	for (int i = 0; i < n; i++) {
		umc_fault_decide(&r, &s, &v);
		out[i] = "pdnbcrt"[v.fate];
		if (v.fate == UMC_FAULT_PASS && v.dup)
			out[i] = 'D';
		if (v.fate == UMC_FAULT_PASS && v.hold)
			out[i] = 'H';
		if (v.fate == UMC_FAULT_PASS && v.release)
			out[i] = 'R';
	}
	out[n] = 0;
}

static void test_splitmix64(void **state)
{
	struct umc_fault_stream s = {.rng = 0};

	(void)state;
	assert_true(umc_fault_rand(&s) == 0xe220a8397b1dcdafULL);
	assert_true(s.rng == 0x9e3779b97f4a7c15ULL);
}

static void test_drop_nth(void **state)
{
	char f[32];

	(void)state;
	fates("rx drop_nth=3", 1, 12, f);
	assert_string_equal(f, "ppnppnppnppn");
	fates("rx drop_nth=1", 1, 4, f);
	assert_string_equal(f, "nnnn");
	/* drop_nth draws no random number: every seed gives the same. */
	fates("rx drop_nth=5", 99, 10, f);
	assert_string_equal(f, "ppppnppppn");
}

static void test_certain_actions(void **state)
{
	char f[32];

	(void)state;
	fates("rx drop=1", 3, 5, f);
	assert_string_equal(f, "ddddd");
	fates("rx drop=0", 3, 5, f);
	assert_string_equal(f, "ppppp");
	fates("tx corrupt=1", 3, 3, f);
	assert_string_equal(f, "ccc");
	fates("rx dup=1", 3, 3, f);
	assert_string_equal(f, "DDD");
	fates("sa reject=denied", 3, 2, f);
	assert_string_equal(f, "rr");
	fates("sa timeout", 3, 2, f);
	assert_string_equal(f, "tt");
	/* A burst that always starts loses everything, in runs of LEN. */
	fates("rx burst=1:3", 3, 7, f);
	assert_string_equal(f, "bbbbbbb");
	/* drop_nth comes first, then the burst; the burst's count goes on. */
	fates("rx drop_nth=2 burst=1:3", 3, 6, f);
	assert_string_equal(f, "bnbnbn");
}

/* reorder=1:DEPTH holds one, passes DEPTH, releases it after the DEPTH-th, and so on. */
static void test_reorder_depth(void **state)
{
	char f[32];

	(void)state;
	fates("rx reorder=1:1", 5, 8, f);
	assert_string_equal(f, "HRHRHRHR");
	fates("rx reorder=1:3", 5, 9, f);
	assert_string_equal(f, "HppRHppRH");
	/* Dropped datagrams do not pass the held one. */
	fates("rx drop_nth=2 reorder=1:2", 5, 8, f);
	assert_string_equal(f, "HnpnRnHn");
}

/* The delay is on every datagram that passes. */
static void test_delay(void **state)
{
	struct umc_fault_rule r = rule("tx delay=2500 drop_nth=2");
	struct umc_fault_stream s;
	struct umc_fault_verdict v;

	(void)state;
	umc_fault_stream_init(&s, 0, 0, "umc_lo");
	umc_fault_decide(&r, &s, &v);
	assert_int_equal(v.fate, UMC_FAULT_PASS);
	assert_int_equal(v.delay_us, 2500);
	umc_fault_decide(&r, &s, &v);
	assert_int_equal(v.fate, UMC_FAULT_DROP_NTH);
	assert_int_equal(v.delay_us, 0);
}

/*
 * A probability P loses P of the datagrams, and each draw is one number of
 * the rule's stream: the verdicts follow the stream exactly.
 */
static void test_drop_draws(void **state)
{
	struct umc_fault_rule r = rule("rx drop=0.3");
	struct umc_fault_stream s, model;
	struct umc_fault_verdict v;
	int lost = 0;

	(void)state;
	umc_fault_stream_init(&s, 7, 0, "umc_lo");
	model = s;
	for (int i = 0; i < N; i++) {
		bool hit = umc_fault_rand(&model) % UMC_FAULT_PPB < 300000000;

		umc_fault_decide(&r, &s, &v);
		assert_int_equal(v.fate, hit ? UMC_FAULT_DROP : UMC_FAULT_PASS);
		lost += hit;
	}
	assert_in_range(lost, N * 3 / 10 - 300, N * 3 / 10 + 300);
}

/* Bursts: runs of LEN (runs may join), started with probability P where none runs. */
static void test_burst_runs(void **state)
{
	static char f[N + 1];
	int starts = 0, lost = 0, free_slots = 0;

	(void)state;
	fates("rx burst=0.05:4", 11, N, f);
	for (int i = 0; i < N;) {
		int run = 0;

		while (i < N && f[i] == 'b')
			run++, i++;
		if (run) {
			if (i < N)
				assert_int_equal(run % 4, 0);
			starts += (run + 3) / 4;
			lost += run;
		}
		while (i < N && f[i] == 'p')
			i++, free_slots++;
	}
	assert_true(lost > 0);
	/* Starts happen on a twentieth of the datagrams that found no burst running. */
	assert_in_range(starts, (free_slots + starts) / 20 - 60, (free_slots + starts) / 20 + 60);
}

static void test_dup_rate(void **state)
{
	static char f[N + 1];
	int dups = 0;

	(void)state;
	fates("rx dup=0.25", 13, N, f);
	for (int i = 0; i < N; i++)
		dups += f[i] == 'D';
	assert_in_range(dups, N / 4 - 250, N / 4 + 250);
}

/* The same seed, rule and device: the same verdicts; any other: others. */
static void test_seed_repeatability(void **state)
{
	const char *text = "rx drop=0.2 burst=0.01:5 dup=0.1 reorder=0.1:2 corrupt=0.05";
	static char a[N + 1], b[N + 1];
	struct umc_fault_rule r = rule(text);
	struct umc_fault_stream s1, s2;
	struct umc_fault_verdict v1, v2;

	(void)state;
	fates(text, 42, N, a);
	fates(text, 42, N, b);
	assert_string_equal(a, b);
	fates(text, 43, N, b);
	assert_string_not_equal(a, b);
	/* Another rule number or device has its own stream. */
	umc_fault_stream_init(&s1, 42, 0, "umc_lo");
	umc_fault_stream_init(&s2, 42, 1, "umc_lo");
	assert_true(s1.rng != s2.rng);
	umc_fault_stream_init(&s2, 42, 0, "umc_ib0");
	assert_true(s1.rng != s2.rng);
	umc_fault_stream_init(&s2, 42, 0, "umc_lo");
	for (int i = 0; i < 1000; i++) {
		umc_fault_decide(&r, &s1, &v1);
		umc_fault_decide(&r, &s2, &v2);
		assert_memory_equal(&v1, &v2, sizeof(v1));
	}
}

static void mgid(const char *text, uint8_t out[16])
{
	assert_int_equal(inet_pton(AF_INET6, text, out), 1);
}

static void test_group_match(void **state)
{
	struct umc_fault_rule v4 = rule("rx group=239.1.2.3 drop=1");
	struct umc_fault_rule v6 = rule("rx group=ff15::1:2 drop=1");
	struct umc_fault_rule all = rule("rx drop=1");
	uint8_t m[16];

	(void)state;
	mgid("::ffff:239.1.2.3", m); /* RoCEv2 */
	assert_true(umc_fault_group_match(&v4, m));
	assert_true(umc_fault_group_match(&all, m));
	assert_false(umc_fault_group_match(&v6, m));
	mgid("::ffff:239.1.2.4", m);
	assert_false(umc_fault_group_match(&v4, m));
	/* IB: ff1S:401b:PPPP::(ip & 0x0fffffff), RDMA_PS_UDP writes 4001. */
	mgid("ff12:401b:ffff::f01:203", m);
	assert_true(umc_fault_group_match(&v4, m));
	mgid("ff15:4001:8001::f01:203", m);
	assert_true(umc_fault_group_match(&v4, m));
	mgid("ff12:401c:ffff::f01:203", m);
	assert_false(umc_fault_group_match(&v4, m));
	mgid("ff12:401b:ffff:0:1::f01:203", m);
	assert_false(umc_fault_group_match(&v4, m));
	/* IPv6: the address itself (RoCEv2), or ff1S:601b:PPPP + its bytes 6..15. */
	mgid("ff15::1:2", m);
	assert_true(umc_fault_group_match(&v6, m));
	mgid("ff12:601b:ffff::1:2", m);
	assert_true(umc_fault_group_match(&v6, m));
	mgid("ff12:601b:ffff::1:3", m);
	assert_false(umc_fault_group_match(&v6, m));
	/* Unicast datagrams: only rules without group=. */
	assert_false(umc_fault_group_match(&v4, NULL));
	assert_true(umc_fault_group_match(&all, NULL));
}

/* The first rule of the direction that selects the datagram decides. */
static void test_first_match(void **state)
{
	struct umc_fault_spec spec;
	char err[UMC_FAULT_ERR_MAX];
	uint8_t g1[16], g2[16];

	(void)state;
	assert_int_equal(umc_fault_spec_parse("tx drop=1; rx group=239.0.0.1 dev=umc_lo drop=1;"
					      "rx qpn=0x12 dup=1; rx drop_nth=2; sa timeout",
					      &spec, err),
			 0);
	mgid("::ffff:239.0.0.1", g1);
	mgid("::ffff:239.0.0.2", g2);
	assert_int_equal(umc_fault_match(&spec, UMC_FAULT_RX, "umc_lo", g1, 0x11), 1);
	assert_int_equal(umc_fault_match(&spec, UMC_FAULT_RX, "umc_eth0", g1, 0x11), 3);
	assert_int_equal(umc_fault_match(&spec, UMC_FAULT_RX, "umc_lo", g2, 0x12), 2);
	assert_int_equal(umc_fault_match(&spec, UMC_FAULT_RX, "umc_lo", NULL, 0x13), 3);
	assert_int_equal(umc_fault_match(&spec, UMC_FAULT_TX, "umc_lo", g1, 0x11), 0);
	assert_int_equal(umc_fault_match(&spec, UMC_FAULT_SA, "umc_ib0", g2, 0), 4);
	assert_int_equal(umc_fault_spec_parse("rx group=239.0.0.1 drop=1", &spec, err), 0);
	assert_int_equal(umc_fault_match(&spec, UMC_FAULT_RX, "umc_lo", g2, 0x11), -1);
	assert_int_equal(umc_fault_match(&spec, UMC_FAULT_TX, "umc_lo", g1, 0x11), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_splitmix64),	   cmocka_unit_test(test_drop_nth),
		cmocka_unit_test(test_certain_actions),	   cmocka_unit_test(test_reorder_depth),
		cmocka_unit_test(test_delay),		   cmocka_unit_test(test_drop_draws),
		cmocka_unit_test(test_burst_runs),	   cmocka_unit_test(test_dup_rate),
		cmocka_unit_test(test_seed_repeatability), cmocka_unit_test(test_group_match),
		cmocka_unit_test(test_first_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
