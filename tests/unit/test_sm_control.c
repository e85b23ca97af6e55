// SPDX-License-Identifier: MIT
/*
 * test_sm_control.c - umc-sm's faults on demand (sm/control.c), as umc-ctl
 * asks for them: a failover forgets every port and group under a new
 * epoch, silence answers nothing until it ends, and a rejected group's
 * joins get the chosen MAD status (matched as umc-faults(7)'s group=) until
 * turned off; requests for a library process are refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "test_sm_util.h"

static int setup(void **state)
{
	*state = fx_new(NULL);
	return 0;
}

static int teardown(void **state)
{
	fx_free(*state);
	return 0;
}

/* The reply of umc-sm to @op with @arg and @text, at the fixture's time. */
static struct umc_ctl_msg ctl(struct fx *f, uint8_t op, uint32_t arg, const char *text)
{
	struct umc_ctl_msg req, rep;

	memset(&req, 0, sizeof(req));
	memset(&rep, 0, sizeof(rep));
	req.op = op;
	req.arg = arg;
	umc_ctl_set_text(&req, text);
	rep.op = op | UMC_CTL_REPLY;
	umc_sm_control(f->sm, f->now, &req, &rep);
	return rep;
}

/* A RENEW from fixture port @i with the LID and epoch it registered with: the status. */
static uint16_t renew(struct fx *f, unsigned i, uint16_t lid, uint64_t epoch)
{
	struct umc_sm_msg m, r;
	struct sockaddr_in src = fx_ep(i);
	uint8_t buf[UMC_SM_MAX_MSG];
	size_t n, before = f->nout;

	memset(&m, 0, sizeof(m));
	m.hdr.type = UMC_SM_RENEW;
	m.hdr.lid = lid;
	m.hdr.epoch = epoch;
	n = umc_sm_msg_encode(buf, &m);
	umc_sm_handle(f->sm, f->now, &src, NULL, buf, n);
	if (f->nout == before)
		return 0xffff; /* no answer */
	assert_int_equal(umc_sm_msg_decode(f->out[f->nout - 1].buf, f->out[f->nout - 1].len, &r), 0);
	return r.hdr.status;
}

static void test_failover(void **state)
{
	struct fx *f = *state;
	struct umc_ctl_msg rep;
	char want[128];
	uint64_t epoch = f->sm->epoch;

	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::f01:101", UMC_JOIN_FULL), 0);
	assert_int_equal(f->sm->groups.count, 2);
	rep = ctl(f, UMC_CTL_SM_FAILOVER, 0, "");
	assert_int_equal(rep.status, 0);
	assert_true(f->sm->epoch != epoch);
	snprintf(want, sizeof(want), "failed over: epoch 0x%016llx, no ports, no groups",
		 (unsigned long long)f->sm->epoch);
	assert_string_equal(rep.text, want);
	assert_int_equal(f->sm->cnt.failovers, 1);
	/* Every port is unknown now: its next request says so, and it registers again. */
	assert_int_equal(f->sm->ports.count, 0);
	assert_int_equal(renew(f, 0, 2, epoch), UMC_SM_UNKNOWN_PORT);
	/* Only the IPoIB broadcast group is left, as at start. */
	assert_int_equal(f->sm->groups.count, 1);
	assert_non_null(umc_sm_group_by_mlid(f->sm, UMC_SM_MLID_BASE));
	assert_int_equal(f->sm->cnt.groups_created, 1);
	/* Registered again, the port joins a group anew with the first free MLID. */
	struct umc_sm_register reg = {.data_addr = 0x7f000001, .data_port = 5000, .nonce = 7};
	struct sockaddr_in ep = fx_ep(0);

	assert_int_equal(umc_sm_port_register(f->sm, f->now, &ep, umc_sm_host_key(f->sm, &ep, NULL),
					      &reg, &f->port[0]),
			 UMC_SM_OK);
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::f01:101", UMC_JOIN_FULL), 0);
	assert_int_equal(f->sm->groups.count, 2);
	f->port[1] = f->port[2] = f->port[3] = NULL;
}

static void test_silent(void **state)
{
	struct fx *f = *state;
	struct umc_ctl_msg rep = ctl(f, UMC_CTL_SM_SILENT, 2, "");

	assert_int_equal(rep.status, 0);
	assert_string_equal(rep.text, "silent for 2 s");
	f->now += 1999;
	assert_int_equal(renew(f, 0, 2, TEST_EPOCH), 0xffff);
	assert_int_equal(f->sm->cnt.silent_dropped, 1);
	f->now += 1;
	assert_int_equal(renew(f, 0, 2, TEST_EPOCH), UMC_SM_OK);
	/* 0 ends it at once. */
	ctl(f, UMC_CTL_SM_SILENT, 60, "");
	assert_int_equal(renew(f, 0, 2, TEST_EPOCH), 0xffff);
	rep = ctl(f, UMC_CTL_SM_SILENT, 0, "");
	assert_string_equal(rep.text, "answering again");
	assert_int_equal(renew(f, 0, 2, TEST_EPOCH), UMC_SM_OK);
	rep = ctl(f, UMC_CTL_SM_SILENT, UMC_CTL_MAX_SECS + 1, "");
	assert_int_equal(rep.status, -EINVAL);
	assert_int_equal(renew(f, 0, 2, TEST_EPOCH), UMC_SM_OK);
}

static void test_reject(void **state)
{
	struct fx *f = *state;
	struct umc_ctl_msg rep = ctl(f, UMC_CTL_SM_REJECT, UMC_SA_STATUS_INSUF_COMPS, "239.1.1.1");

	assert_int_equal(rep.status, 0);
	assert_string_equal(rep.text, "joins of 239.1.1.1 are rejected with status 0x0600 "
				      "(ERR_REQ_INSUFFICIENT_COMPONENTS)");
	/* The IPv4 group's InfiniBand MGIDs, whatever the port space. */
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::f01:101", UMC_JOIN_FULL),
			 UMC_SA_STATUS_INSUF_COMPS);
	assert_int_equal(fx_join(f, 1, "ff15:4001:8001::f01:101", UMC_JOIN_SENDONLY_FULL),
			 UMC_SA_STATUS_INSUF_COMPS);
	assert_int_equal(f->sm->cnt.sa_fault_rejected, 2);
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::f01:102", UMC_JOIN_FULL), 0);
	/* A second group, by MGID; the first one's status changed. */
	assert_int_equal(ctl(f, UMC_CTL_SM_REJECT, 0x0700, "ff12:4001:ffff::f01:102").status, 0);
	assert_int_equal(ctl(f, UMC_CTL_SM_REJECT, 0x0100, "239.1.1.1").status, 0);
	assert_int_equal(f->sm->faults.nreject, 2);
	assert_int_equal(fx_join(f, 2, "ff12:4001:ffff::f01:102", UMC_JOIN_FULL), 0x0700);
	assert_int_equal(fx_join(f, 2, "ff12:4001:ffff::f01:101", UMC_JOIN_FULL), 0x0100);
	/* Leaves are not rejected: port 0 still leaves what it joined. */
	assert_int_equal(fx_leave(f, 0, "ff12:4001:ffff::f01:102", UMC_JOIN_FULL), 0);
	/* off: answered again. */
	rep = ctl(f, UMC_CTL_SM_REJECT, 0, "239.1.1.1");
	assert_string_equal(rep.text, "joins of 239.1.1.1 are answered again");
	assert_int_equal(f->sm->faults.nreject, 1);
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::f01:101", UMC_JOIN_FULL), 0);
	/* Not a group. */
	rep = ctl(f, UMC_CTL_SM_REJECT, 0x0200, "10.0.0.1");
	assert_int_equal(rep.status, -EINVAL);
	assert_string_equal(rep.text, "10.0.0.1: not a group (an IPv4 or IPv6 multicast address, "
				      "or an MGID)");
	assert_int_equal(ctl(f, UMC_CTL_SM_REJECT, 0x0200, "239.1.1.1 reject=1").status, -EINVAL);
	assert_int_equal(ctl(f, UMC_CTL_SM_REJECT, 0x10000, "239.1.1.1").status, -EINVAL);
	assert_int_equal(f->sm->faults.nreject, 1);
}

static void test_reject_full(void **state)
{
	struct fx *f = *state;
	char g[32];

	for (int i = 0; i < UMC_SM_REJECT_MAX; i++) {
		snprintf(g, sizeof(g), "239.2.0.%d", i);
		assert_int_equal(ctl(f, UMC_CTL_SM_REJECT, 0x0200, g).status, 0);
	}
	assert_int_equal(ctl(f, UMC_CTL_SM_REJECT, 0x0200, "239.3.0.0").status, -ENOSPC);
	assert_int_equal(ctl(f, UMC_CTL_SM_REJECT, 0x0300, "239.2.0.0").status, 0); /* a change */
}

static void test_not_for_sm(void **state)
{
	struct fx *f = *state;
	struct umc_ctl_msg rep = ctl(f, UMC_CTL_FAULTS, 0, "rx drop=1");

	assert_int_equal(rep.status, -EOPNOTSUPP);
	assert_string_equal(rep.text, "faults is not for umc-sm: it takes failover, silent and reject");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_failover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reject, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reject_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_for_sm, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
