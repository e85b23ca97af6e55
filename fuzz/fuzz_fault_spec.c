// SPDX-License-Identifier: MIT
/*
 * fuzz_fault_spec.c - libFuzzer target for the SPEC parser of injected
 * faults (src/fault/spec.c), which reads UMC_FAULTS and what umc-ctl
 * sends.
 *
 * Whatever the text, umc_fault_spec_parse() must neither crash nor read
 * past its NUL.  A SPEC it refuses gets one line of error, and its rules
 * are left as they were.  A SPEC it accepts is written back as canonical
 * text that parses to the same rules and is written the same way again;
 * its rules then decide for a few datagrams without trouble.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fault/fault.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char a[8192], b[8192];
	struct umc_fault_spec spec, spec2;
	char err[UMC_FAULT_ERR_MAX];
	char *text = malloc(size + 1);
	int rc;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	memset(&spec, 0x5a, sizeof(spec));
	rc = umc_fault_spec_parse(text, &spec, err);
	CHECK(rc == 0 || rc == -EINVAL || rc == -E2BIG);
	if (rc) {
		CHECK(err[0] && strlen(err) < UMC_FAULT_ERR_MAX && !strchr(err, '\n'));
		for (size_t i = 0; i < sizeof(spec); i++)
			CHECK(((uint8_t *)&spec)[i] == 0x5a);
		free(text);
		return 0;
	}
	CHECK(spec.nrules >= 0 && spec.nrules <= UMC_FAULT_MAX_RULES);
	CHECK(umc_fault_spec_format(&spec, false, a, sizeof(a)) < sizeof(a));
	CHECK(umc_fault_spec_parse(a, &spec2, err) == 0);
	CHECK(spec2.nrules == spec.nrules && spec2.has_seed == spec.has_seed);
	CHECK(!spec.has_seed || spec2.seed == spec.seed);
	CHECK(!memcmp(spec2.rule, spec.rule, (size_t)spec.nrules * sizeof(spec.rule[0])));
	umc_fault_spec_format(&spec2, false, b, sizeof(b));
	CHECK(!strcmp(a, b));
	for (int i = 0; i < spec.nrules; i++) {
		struct umc_fault_stream s;
		struct umc_fault_verdict v;
		const struct umc_fault_rule *r = &spec.rule[i];
		uint8_t mgid[16] = {[10] = 0xff, [11] = 0xff};
		int m;

		/* A datagram of the rule's own group, device and QP: it or an earlier rule. */
		memcpy(r->group_v4 ? mgid + 12 : mgid, r->group, r->group_v4 ? 4 : 16);
		CHECK(umc_fault_group_match(r, mgid));
		m = umc_fault_match(&spec, r->dir, r->words & UMC_FW_DEV ? r->dev : "umc_x", mgid,
				    r->qpn);
		CHECK(m >= 0 && m <= i);
		umc_fault_stream_init(&s, spec.seed, i, spec.rule[i].dev);
		for (int k = 0; k < 8; k++) {
			umc_fault_decide(&spec.rule[i], &s, &v);
			CHECK(v.fate <= UMC_FAULT_TIMEOUT);
			CHECK(!(v.hold && v.release));
		}
	}
	free(text);
	return 0;
}
