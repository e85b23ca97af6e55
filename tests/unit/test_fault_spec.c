// SPDX-License-Identifier: MIT
/*
 * test_fault_spec.c - the SPEC grammar of injected faults (src/fault/spec.c):
 * every word parsed into its rule, the canonical text it is written back
 * as, and every malformed SPEC refused with the one line that says where
 * (the column) and why, leaving the caller's rules untouched.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fault/fault.h"
#include "wire/ib_mad.h"

static struct umc_fault_spec parse_ok(const char *text)
{
	struct umc_fault_spec spec;
	char err[UMC_FAULT_ERR_MAX];
	int rc = umc_fault_spec_parse(text, &spec, err);

	if (rc)
		fail_msg("\"%s\": %d %s", text, rc, err);
	return spec;
}

static void test_every_word(void **state)
{
	struct umc_fault_spec s = parse_ok(
		"rx group=239.1.2.3 qpn=0x11 dev=umc_lo drop=0.25 drop_nth=10 burst=0.01:5 "
		"dup=0.5 reorder=0.125:3 corrupt=1; tx group=ff0e::1 delay=2500 ;"
		"sa dev=umc_ib0 group=ff12:401b:ffff::1 reject=no_records ; sa timeout");
	uint8_t v6[16];

	(void)state;
	assert_false(s.has_seed);
	assert_int_equal(s.nrules, 4);
	assert_int_equal(s.rule[0].dir, UMC_FAULT_RX);
	assert_true(s.rule[0].group_v4);
	assert_memory_equal(s.rule[0].group, "\xef\x01\x02\x03", 4);
	assert_int_equal(s.rule[0].qpn, 0x11);
	assert_string_equal(s.rule[0].dev, "umc_lo");
	assert_int_equal(s.rule[0].drop, 250000000);
	assert_int_equal(s.rule[0].drop_nth, 10);
	assert_int_equal(s.rule[0].burst, 10000000);
	assert_int_equal(s.rule[0].burst_len, 5);
	assert_int_equal(s.rule[0].dup, 500000000);
	assert_int_equal(s.rule[0].reorder, 125000000);
	assert_int_equal(s.rule[0].reorder_depth, 3);
	assert_int_equal(s.rule[0].corrupt, UMC_FAULT_PPB);
	assert_int_equal(s.rule[0].words,
			 UMC_FW_GROUP | UMC_FW_QPN | UMC_FW_DEV | UMC_FW_DROP | UMC_FW_DROP_NTH |
				 UMC_FW_BURST | UMC_FW_DUP | UMC_FW_REORDER | UMC_FW_CORRUPT);
	assert_int_equal(s.rule[1].dir, UMC_FAULT_TX);
	inet_pton(AF_INET6, "ff0e::1", v6);
	assert_false(s.rule[1].group_v4);
	assert_memory_equal(s.rule[1].group, v6, 16);
	assert_int_equal(s.rule[1].delay_us, 2500);
	assert_int_equal(s.rule[1].words, UMC_FW_GROUP | UMC_FW_DELAY);
	assert_int_equal(s.rule[2].dir, UMC_FAULT_SA);
	assert_int_equal(s.rule[2].reject, UMC_SA_STATUS_NO_RECORDS);
	assert_int_equal(s.rule[3].words, UMC_FW_TIMEOUT);
}

static void test_empty_and_seed(void **state)
{
	struct umc_fault_spec s;

	(void)state;
	s = parse_ok("");
	assert_int_equal(s.nrules, 0);
	assert_false(s.has_seed);
	s = parse_ok(" ;\t;\n; ");
	assert_int_equal(s.nrules, 0);
	s = parse_ok("seed=42");
	assert_int_equal(s.nrules, 0);
	assert_true(s.has_seed);
	assert_true(s.seed == 42);
	s = parse_ok("rx drop=0.1 seed=0xffffffffffffffff;");
	assert_int_equal(s.nrules, 1);
	assert_true(s.seed == UINT64_MAX);
	s = parse_ok("seed=7; rx drop=.5");
	assert_true(s.seed == 7);
	assert_int_equal(s.rule[0].drop, 500000000);
}

static void test_probabilities(void **state)
{
	static const struct {
		const char *text;
		uint32_t ppb;
	} ok[] = {
		{"rx drop=0", 0},		{"rx drop=1", UMC_FAULT_PPB},
		{"rx drop=1.000", UMC_FAULT_PPB}, {"rx drop=0.000000001", 1},
		{"rx drop=.75", 750000000},	{"rx drop=00.5", 500000000},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(parse_ok(ok[i].text).rule[0].drop, ok[i].ppb);
}

static void test_sa_status(void **state)
{
	(void)state;
	assert_int_equal(umc_fault_sa_status("denied", 6), UMC_SA_STATUS_DENIED);
	assert_int_equal(umc_fault_sa_status("no_resources", 12), UMC_SA_STATUS_NO_RESOURCES);
	assert_int_equal(umc_fault_sa_status("0x0200", 6), 0x0200);
	assert_int_equal(umc_fault_sa_status("512", 3), 512);
	assert_int_equal(umc_fault_sa_status("0", 1), 0);
	assert_int_equal(umc_fault_sa_status("0x10000", 7), 0);
	assert_int_equal(umc_fault_sa_status("deny", 4), 0);
	assert_int_equal(parse_ok("sa reject=insufficient_components").rule[0].reject,
			 UMC_SA_STATUS_INSUF_COMPS);
}

/* The canonical text parses back to the same rules, and is written so. */
static void test_format(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"", ""},
		{"  rx   drop=0.50 ", "rx drop=0.5"},
		{"tx corrupt=1 qpn=17 group=239.0.0.1 dev=umc_lo",
		 "tx group=239.0.0.1 qpn=0x11 dev=umc_lo corrupt=1"},
		{"rx reorder=0.5:4 dup=0.000000001 burst=0:1 drop_nth=3 drop=1",
		 "rx drop=1 drop_nth=3 burst=0:1 dup=0.000000001 reorder=0.5:4"},
		{"sa reject=512; seed=9; sa group=FF12:401B::1 timeout",
		 "seed=9; sa reject=0x0200; sa group=ff12:401b::1 timeout"},
		{"tx delay=10000000", "tx delay=10000000"},
	};
	char buf[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct umc_fault_spec s = parse_ok(cases[i].in), s2;
		size_t n = umc_fault_spec_format(&s, false, buf, sizeof(buf));

		assert_string_equal(buf, cases[i].out);
		assert_int_equal(n, strlen(cases[i].out));
		s2 = parse_ok(buf);
		assert_int_equal(s2.nrules, s.nrules);
		assert_memory_equal(s2.rule, s.rule, (size_t)s.nrules * sizeof(s.rule[0]));
	}
	/* seed_always: the seed the caller chose is written too. */
	struct umc_fault_spec s = parse_ok("rx drop=1");

	s.seed = 1234;
	umc_fault_spec_format(&s, true, buf, sizeof(buf));
	assert_string_equal(buf, "seed=1234; rx drop=1");
	/* A short buffer is cut, NUL-terminated, and the whole length returned. */
	assert_int_equal(umc_fault_spec_format(&s, true, buf, 8), strlen("seed=1234; rx drop=1"));
	assert_string_equal(buf, "seed=12");
}

static void expect_error(const char *text, int rc, const char *msg)
{
	struct umc_fault_spec s;
	char err[UMC_FAULT_ERR_MAX];

	memset(&s, 0x5a, sizeof(s));
	assert_int_equal(umc_fault_spec_parse(text, &s, err), rc);
	assert_string_equal(err, msg);
	assert_null(strchr(err, '\n'));
	/* Nothing is written on failure. */
	for (size_t i = 0; i < sizeof(s); i++)
		assert_int_equal(((uint8_t *)&s)[i], 0x5a);
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("rx drop=1.5", -EINVAL,
		     "column 4 (\"drop=1.5\"): a probability is a decimal number from 0 to 1, "
		     "at most 9 digits after the point");
	expect_error("rx drop=0.1234567891", -EINVAL,
		     "column 4 (\"drop=0.1234567891\"): a probability is a decimal number from "
		     "0 to 1, at most 9 digits after the point");
	expect_error("rx drop=1e-3", -EINVAL,
		     "column 4 (\"drop=1e-3\"): a probability is a decimal number from 0 to 1, "
		     "at most 9 digits after the point");
	expect_error("rx drop=", -EINVAL,
		     "column 4 (\"drop=\"): a probability is a decimal number from 0 to 1, "
		     "at most 9 digits after the point");
	expect_error("rx drop=0.1; rc drop=1", -EINVAL,
		     "column 14 (\"rc\"): a rule starts with rx, tx or sa");
	expect_error("drop=1", -EINVAL, "column 1 (\"drop=1\"): a rule starts with rx, tx or sa");
	expect_error("seed=1 rx drop=1", -EINVAL,
		     "column 8 (\"rx\"): a rule starts with rx, tx or sa");
	expect_error("rx dorp=0.1", -EINVAL,
		     "column 4 (\"dorp=0.1\"): unknown word; a rule takes group=, qpn=, dev=, "
		     "drop=, drop_nth=, burst=, dup=, reorder=, delay=, corrupt=, reject=, "
		     "timeout, seed=");
	expect_error("rx reject=denied", -EINVAL,
		     "column 4 (\"reject=denied\"): reject= is for sa rules only");
	expect_error("sa dup=1", -EINVAL,
		     "column 4 (\"dup=1\"): dup= is for rx and tx rules only");
	expect_error("tx timeout", -EINVAL,
		     "column 4 (\"timeout\"): timeout is for sa rules only");
	expect_error("sa timeout=3", -EINVAL, "column 4 (\"timeout=3\"): timeout takes no value");
	expect_error("rx drop", -EINVAL, "column 4 (\"drop\"): expected KEY=VALUE");
	expect_error("rx drop=1 drop=0", -EINVAL,
		     "column 11 (\"drop=0\"): drop is given twice in this rule");
	expect_error("rx group=239.1.1.1", -EINVAL,
		     "column 1 (\"rx group=239.1.1.1\"): the rule has no action (drop=, "
		     "drop_nth=, burst=, dup=, reorder=, delay=, corrupt=)");
	expect_error("sa  dev=umc_ib0 ; tx drop=1", -EINVAL,
		     "column 1 (\"sa  dev=umc_ib0\"): the rule has no action (reject=, timeout, "
		     "drop=, drop_nth=)");
	expect_error("sa timeout drop=1", -EINVAL,
		     "column 1 (\"sa timeout drop=1\"): an sa rule takes one action: reject=, "
		     "timeout, drop= or drop_nth=");
	expect_error("rx reorder=1:2 delay=5", -EINVAL,
		     "column 1 (\"rx reorder=1:2 delay=5\"): reorder= and delay= exclude each "
		     "other in one rule");
	expect_error("rx group=10.0.0.1 drop=1", -EINVAL,
		     "column 4 (\"group=10.0.0.1\"): group= is a multicast address: IPv4 "
		     "(224.0.0.0/4), IPv6 or an MGID (ff00::/8)");
	expect_error("rx group=fe80::1 drop=1", -EINVAL,
		     "column 4 (\"group=fe80::1\"): group= is a multicast address: IPv4 "
		     "(224.0.0.0/4), IPv6 or an MGID (ff00::/8)");
	expect_error("rx qpn=0xffffff drop=1", -EINVAL,
		     "column 4 (\"qpn=0xffffff\"): qpn= is a QP number from 0 to 0xfffffe");
	expect_error("rx qpn=-1 drop=1", -EINVAL,
		     "column 4 (\"qpn=-1\"): qpn= is a QP number from 0 to 0xfffffe");
	expect_error("rx dev=a/b drop=1", -EINVAL,
		     "column 4 (\"dev=a/b\"): dev= is a device name such as umc_lo or umc_ib0 "
		     "(letters, digits, '_', '-', '.'; at most 63)");
	expect_error("rx drop_nth=0", -EINVAL,
		     "column 4 (\"drop_nth=0\"): drop_nth= is a count from 1 to 1000000");
	expect_error("rx burst=0.5", -EINVAL,
		     "column 4 (\"burst=0.5\"): burst= is P:LEN, a probability from 0 to 1 and a "
		     "count from 1 to 1000000");
	expect_error("tx reorder=0.5:0", -EINVAL,
		     "column 4 (\"reorder=0.5:0\"): reorder= is P:DEPTH, a probability from 0 to "
		     "1 and a count from 1 to 1000000");
	expect_error("tx delay=0", -EINVAL,
		     "column 4 (\"delay=0\"): delay= is microseconds, from 1 to 10000000");
	expect_error("sa reject=0", -EINVAL,
		     "column 4 (\"reject=0\"): reject= is a MAD status other than 0 (0x0200, 512) "
		     "or no_resources, req_invalid, no_records, too_many_records, invalid_gid, "
		     "insufficient_components, denied");
	expect_error("seed=1; rx drop=1 seed=1", -EINVAL,
		     "column 19 (\"seed=1\"): seed= is given twice");
	expect_error("seed=18446744073709551616", -EINVAL,
		     "column 1 (\"seed=18446744073709551616\"): seed= is a number from 0 to "
		     "2^64-1");
	expect_error("rx group=ff0e:0000:0000:0000:0000:0000:0000:0000:1 drop=1", -EINVAL,
		     "column 4 (\"group=ff0e:0000:0000:0000:0000:0000:0...\"): group= is a "
		     "multicast address: IPv4 (224.0.0.0/4), IPv6 or an MGID (ff00::/8)");
}

static void test_limits(void **state)
{
	char text[UMC_FAULT_SPEC_MAX + 2];
	size_t n = 0;

	(void)state;
	for (int i = 0; i < UMC_FAULT_MAX_RULES; i++)
		n += (size_t)sprintf(text + n, "rx drop=0;");
	parse_ok(text);
	strcpy(text + n, "tx drop=1");
	expect_error(text, -E2BIG, "column 161 (\"tx\"): more than 16 rules");
	memset(text, ' ', UMC_FAULT_SPEC_MAX);
	text[UMC_FAULT_SPEC_MAX] = 0;
	assert_int_equal(parse_ok(text).nrules, 0);
	text[UMC_FAULT_SPEC_MAX] = ' ';
	text[UMC_FAULT_SPEC_MAX + 1] = 0;
	expect_error(text, -E2BIG, "longer than 4095 bytes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_word),    cmocka_unit_test(test_empty_and_seed),
		cmocka_unit_test(test_probabilities), cmocka_unit_test(test_sa_status),
		cmocka_unit_test(test_format),	      cmocka_unit_test(test_errors),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
