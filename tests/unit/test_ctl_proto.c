// SPDX-License-Identifier: MIT
/*
 * test_ctl_proto.c - the run-time control messages (src/wire/ctl_proto.c)
 * against the layout documented in ctl_proto.h: known bytes, round trips,
 * and every malformed message refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/ctl_proto.h"

static void test_layout(void **state)
{
	static const uint8_t want[] = {
		0x55, 0x4d, 0x43, 0x43, 1, 0x03, 0, 0, /* magic, version, PORT_DOWN */
		0xff, 0xff, 0xff, 0x9c,		       /* status -100 */
		0, 0, 0x01, 0x2c,		       /* arg 300 */
		0, 7, 0, 0,			       /* len 7 */
		'u', 'm', 'c', '_', 'i', 'b', '0',
	};
	struct umc_ctl_msg m = {.op = UMC_CTL_PORT_DOWN, .status = -100, .arg = 300}, d;
	uint8_t buf[UMC_CTL_MAX_MSG];

	(void)state;
	umc_ctl_set_text(&m, "umc_ib0");
	assert_int_equal(m.len, 7);
	assert_int_equal(umc_ctl_encode(buf, &m), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(umc_ctl_decode(buf, sizeof(want), &d), 0);
	assert_int_equal(d.version, UMC_CTL_VERSION);
	assert_int_equal(d.op, UMC_CTL_PORT_DOWN);
	assert_int_equal(d.status, -100);
	assert_int_equal(d.arg, 300);
	assert_int_equal(d.len, 7);
	assert_string_equal(d.text, "umc_ib0");
}

static void test_round_trips(void **state)
{
	static const uint8_t ops[] = {
		UMC_CTL_FAULTS,	     UMC_CTL_REREGISTER, UMC_CTL_PORT_DOWN,
		UMC_CTL_SM_FAILOVER, UMC_CTL_SM_SILENT,	 UMC_CTL_SM_REJECT,
		UMC_CTL_FAULTS | UMC_CTL_REPLY,
	};
	static const char *const names[] = {"faults", "reregister", "port-down", "failover",
					    "silent", "reject", "faults"};
	static struct umc_ctl_msg m, d;
	static uint8_t buf[UMC_CTL_MAX_MSG];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(ops); i++) {
		m.op = ops[i];
		m.arg = (uint32_t)i;
		umc_ctl_set_text(&m, i % 2 ? "" : "rx drop=0.5; seed=1");
		n = umc_ctl_encode(buf, &m);
		assert_int_equal(umc_ctl_decode(buf, n, &d), 0);
		assert_int_equal(d.op, ops[i]);
		assert_int_equal(d.arg, i);
		assert_string_equal(d.text, m.text);
		assert_string_equal(umc_ctl_op_str(ops[i]), names[i]);
	}
	assert_string_equal(umc_ctl_op_str(0x7f), "?");
	/* The longest text, and a longer one cut to it. */
	memset(m.text, 'x', UMC_CTL_TEXT_MAX);
	m.text[UMC_CTL_TEXT_MAX] = 0;
	umc_ctl_set_text(&m, m.text);
	assert_int_equal(m.len, UMC_CTL_TEXT_MAX);
	assert_int_equal(umc_ctl_encode(buf, &m), UMC_CTL_MAX_MSG);
	assert_int_equal(umc_ctl_decode(buf, UMC_CTL_MAX_MSG, &d), 0);
	assert_int_equal(strlen(d.text), UMC_CTL_TEXT_MAX);
}

static void test_malformed(void **state)
{
	struct umc_ctl_msg m = {.op = UMC_CTL_FAULTS}, d;
	uint8_t buf[UMC_CTL_MAX_MSG + 1], bad[UMC_CTL_MAX_MSG + 1];
	size_t n;

	(void)state;
	umc_ctl_set_text(&m, "rx drop=1");
	n = umc_ctl_encode(buf, &m);
	assert_int_equal(umc_ctl_decode(buf, UMC_CTL_HDR_LEN - 1, &d), -EBADMSG);
	assert_int_equal(umc_ctl_decode(buf, n - 1, &d), -EBADMSG); /* truncated text */
	assert_int_equal(umc_ctl_decode(buf, n + 1, &d), -EBADMSG); /* trailing byte */
	static const struct {
		size_t at;
		uint8_t val;
		int rc;
	} cases[] = {
		{0, 0x56, -EBADMSG},	       /* magic */
		{4, 2, -EPROTONOSUPPORT},      /* version */
		{5, 0x04, -EBADMSG},	       /* op */
		{5, 0x00, -EBADMSG},	       /* op */
		{6, 1, -EBADMSG},	       /* reserved */
		{19, 1, -EBADMSG},	       /* reserved */
		{17, 10, -EBADMSG},	       /* len */
		{UMC_CTL_HDR_LEN + 2, 0, -EBADMSG}, /* NUL in the text */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(bad, buf, n);
		bad[cases[i].at] = cases[i].val;
		assert_int_equal(umc_ctl_decode(bad, n, &d), cases[i].rc);
	}
	/* Another version: its version and op are told, so the server can answer. */
	memcpy(bad, buf, n);
	bad[4] = 9;
	assert_int_equal(umc_ctl_decode(bad, n, &d), -EPROTONOSUPPORT);
	assert_int_equal(d.version, 9);
	assert_int_equal(d.op, UMC_CTL_FAULTS);
	/* A length above the limit, with the bytes to match. */
	memset(bad, 'a', sizeof(bad));
	memcpy(bad, buf, UMC_CTL_HDR_LEN);
	bad[16] = (UMC_CTL_TEXT_MAX + 1) >> 8;
	bad[17] = (UMC_CTL_TEXT_MAX + 1) & 0xff;
	assert_int_equal(umc_ctl_decode(bad, UMC_CTL_MAX_MSG + 1, &d), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
