// SPDX-License-Identifier: MIT
/*
 * test_sm_fwd.c - umc-sm's multicast forwarding (sm/fwd.c) through
 * umc_sm_handle() and umc_sm_tick() on a fake clock: SUBSCRIBE answered
 * with the MLID's forwarding, new versions at each change of the
 * receiving members (FullMember, NonMember; never send-only), SA replies
 * held until every subscriber acknowledged, the hold's time limit and
 * lagging subscribers, resends and the RENEW that revives them, segments,
 * caps, a squatted MLID switched to unicast, and subscribers that go.
 * The messages are src/wire/sm_proto.h's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "test_sm_util.h"
#include "wire/be.h"

#define MGID "ff12:4001:ffff::e000:101"

static int setup_unicast(void **state)
{
	struct umc_sm_config cfg;

	umc_sm_config_default(&cfg);
	cfg.unicast_fwd = true;
	*state = fx_new(&cfg);
	return 0;
}

static int setup_multicast(void **state)
{
	*state = fx_new(NULL);
	return 0;
}

static int teardown(void **state)
{
	fx_free(*state);
	return 0;
}

/* Send @m from fixture port @i (its LID and the epoch written in) through the handler. */
static void from(struct fx *f, unsigned i, struct umc_sm_msg *m)
{
	struct sockaddr_in src = fx_ep(i);
	uint8_t buf[UMC_SM_MAX_MSG];
	size_t n;

	m->hdr.lid = f->port[i]->lid;
	m->hdr.epoch = f->sm->epoch;
	n = umc_sm_msg_encode(buf, m);
	assert_true(n > 0);
	umc_sm_handle(f->sm, f->now, &src, NULL, buf, n);
	while (umc_sm_work(f->sm, f->now))
		;
}

static void subscribe(struct fx *f, unsigned i, uint16_t mlid)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_SUBSCRIBE, .tid = 0x51 }, .mlid = mlid };

	from(f, i, &m);
}

static void ack(struct fx *f, unsigned i, uint16_t mlid, uint32_t version)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_FWD_ACK, .tid = 0x52 },
				.ack = { mlid, version } };

	from(f, i, &m);
}

/* A Set or Delete of MGID by port @i with JoinState @js through the handler. */
static void mcm(struct fx *f, unsigned i, uint8_t method, uint8_t js)
{
	struct umc_mcmember r = fx_rec(f, i, MGID, js);
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_SA, .tid = 0x60 + i } };
	uint8_t mad[UMC_MAD_SIZE];

	mad_build(mad, method, UMC_SA_ATTR_MCMEMBER_RECORD,
		  method == UMC_MAD_METHOD_SET ? UMC_MCM_CREATE_MASK : UMC_MCM_JOIN_MASK, 0, &r);
	m.mad = mad;
	from(f, i, &m);
}

static void flush(struct fx *f)
{
	umc_sm_tick(f->sm, f->now, f->now);
}

/* How many datagrams of @type went to port @i since datagram @since. */
static unsigned count_to(struct fx *f, size_t since, unsigned i, uint8_t type)
{
	struct sockaddr_in ep = fx_ep(i);
	unsigned n = 0;

	for (size_t k = since; k < f->nout; k++)
		if (f->out[k].to.sin_port == ep.sin_port && f->out[k].buf[5] == type)
			n++;
	return n;
}

/* The last FORWARD to port @i (it must exist), decoded; its entries' LIDs in @lids. */
static struct umc_sm_fwd last_fwd(struct fx *f, unsigned i, uint16_t *lids)
{
	struct sockaddr_in ep = fx_ep(i);
	struct umc_sm_msg m;

	for (size_t k = f->nout; k-- > 0;) {
		if (f->out[k].to.sin_port != ep.sin_port || f->out[k].buf[5] != UMC_SM_FORWARD)
			continue;
		assert_int_equal(umc_sm_msg_decode(f->out[k].buf, f->out[k].len, &m), 0);
		assert_int_equal(m.hdr.status, UMC_SM_OK);
		for (unsigned e = 0; lids && e < m.fwd.count; e++) {
			struct umc_sm_fwd_entry en;

			umc_sm_fwd_entry_get(&m.fwd, e, &en);
			lids[e] = en.lid;
			/* the port's registered data endpoint (fx_new) */
			assert_int_equal(en.addr, 0x7f000001);
			assert_int_equal(en.port, 5000 + en.lid - 2);
		}
		return m.fwd;
	}
	fail_msg("no FORWARD to port %u", i);
	return m.fwd;
}

/*
 * Port 2's @method of the MLID's group (a full member) is answered only
 * once port 3, its sender, acknowledged the FORWARD it brings.
 */
static void expect_held_until_ack(struct fx *f, uint8_t method, uint16_t mlid)
{
	size_t mark = f->nout;

	mcm(f, 2, method, UMC_JOIN_FULL);
	assert_int_equal(count_to(f, mark, 2, UMC_SM_SA_REPLY), 0);
	flush(f);
	ack(f, 3, mlid, last_fwd(f, 3, NULL).version);
	assert_int_equal(count_to(f, mark, 2, UMC_SM_SA_REPLY), 1);
}

static uint16_t mlid_of_group(struct fx *f)
{
	uint8_t mgid[16];

	gid_parse(MGID, mgid);
	assert_non_null(umc_sm_group_by_mgid(f->sm, mgid));
	return umc_sm_group_by_mgid(f->sm, mgid)->rec.mlid;
}

/* Port 0 creates the group as a full member; port 3 subscribes and acknowledges. */
static uint16_t group_with_sender(struct fx *f)
{
	uint16_t mlid, lids[4];
	struct umc_sm_fwd fw;

	mcm(f, 0, UMC_MAD_METHOD_SET, UMC_JOIN_FULL);
	assert_int_equal(count_to(f, 0, 0, UMC_SM_SA_REPLY), 1); /* nobody to wait for */
	mlid = mlid_of_group(f);
	subscribe(f, 3, mlid);
	fw = last_fwd(f, 3, lids);
	assert_int_equal(fw.mlid, mlid);
	assert_int_equal(fw.kind, UMC_SM_FWD_UNICAST);
	assert_int_equal(fw.total, 1);
	assert_int_equal(lids[0], 2);
	assert_int_equal(f->out[f->nout - 1].buf[20 + 3], 0x51); /* the SUBSCRIBE's tid */
	ack(f, 3, mlid, fw.version);
	return mlid;
}

/*
 * A join of a receiving member: a new version to the subscriber, the
 * joiner's reply held until the subscriber acknowledged it.
 */
static void test_join_held_until_acknowledged(void **state)
{
	struct fx *f = *state;
	uint16_t mlid = group_with_sender(f), lids[4];
	struct umc_sm_fwd fw;
	uint32_t v0 = last_fwd(f, 3, NULL).version;
	size_t mark = f->nout;

	mcm(f, 1, UMC_MAD_METHOD_SET, UMC_JOIN_FULL);
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 0); /* held */
	flush(f);
	fw = last_fwd(f, 3, lids);
	assert_int_equal(fw.version, v0 + 1);
	assert_int_equal(fw.total, 2);
	assert_true((lids[0] == 2 && lids[1] == 3) || (lids[0] == 3 && lids[1] == 2));
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 0);
	ack(f, 3, mlid, v0); /* an older version: still waiting */
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 0);
	ack(f, 3, mlid, fw.version);
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 1);
	assert_int_equal(f->sm->cnt.fwd_held, 1);
	assert_int_equal(f->sm->cnt.fwd_hold_expired, 0);
	/* A version never sent is no acknowledgment. */
	ack(f, 3, mlid, fw.version + 5);
	assert_int_equal(f->sm->cnt.fwd_stale, 1);
}

/* A leave: the Delete's reply waits until the leaver is out of every list. */
static void test_leave_held_until_acknowledged(void **state)
{
	struct fx *f = *state;
	uint16_t mlid = group_with_sender(f), lids[4];
	struct umc_sm_fwd fw;
	size_t mark;

	mcm(f, 1, UMC_MAD_METHOD_SET, UMC_JOIN_FULL);
	flush(f);
	ack(f, 3, mlid, last_fwd(f, 3, NULL).version);
	mark = f->nout;
	mcm(f, 1, UMC_SA_METHOD_DELETE, UMC_JOIN_FULL);
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 0);
	flush(f);
	fw = last_fwd(f, 3, lids);
	assert_int_equal(fw.total, 1);
	assert_int_equal(lids[0], 2);
	ack(f, 3, mlid, fw.version);
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 1);
}

/* Send-only members receive nothing: not listed, nothing held; NonMember is listed. */
static void test_sendonly_not_listed(void **state)
{
	struct fx *f = *state;
	uint16_t mlid = group_with_sender(f), lids[4];
	size_t mark = f->nout;
	uint32_t v = last_fwd(f, 3, NULL).version;

	mcm(f, 2, UMC_MAD_METHOD_SET, UMC_JOIN_SENDONLY_FULL);
	assert_int_equal(count_to(f, mark, 2, UMC_SM_SA_REPLY), 1);
	flush(f);
	assert_int_equal(last_fwd(f, 3, NULL).version, v);
	mcm(f, 2, UMC_MAD_METHOD_SET, UMC_JOIN_NON); /* 0x8 | 0x2: now it receives */
	flush(f);
	assert_int_equal(last_fwd(f, 3, lids).total, 2);
	assert_true(lids[0] == 4 || lids[1] == 4);
	ack(f, 3, mlid, last_fwd(f, 3, NULL).version);
	assert_int_equal(count_to(f, mark, 2, UMC_SM_SA_REPLY), 2);
}

/*
 * A subscriber that never acknowledges: the reply goes after
 * UMC_SM_FWD_HOLD_MS, the subscriber is lagging and holds the next reply
 * no more, until it acknowledges again.
 */
static void test_hold_time_limit_and_lagging(void **state)
{
	struct fx *f = *state;
	uint16_t mlid = group_with_sender(f);
	size_t mark = f->nout;

	mcm(f, 1, UMC_MAD_METHOD_SET, UMC_JOIN_FULL);
	f->now += UMC_SM_FWD_HOLD_MS - 1;
	flush(f);
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 0);
	f->now += 1;
	flush(f);
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 1);
	assert_int_equal(f->sm->cnt.fwd_hold_expired, 1);
	assert_int_equal(f->sm->cnt.fwd_lagging, 1);
	mark = f->nout;
	mcm(f, 2, UMC_MAD_METHOD_SET, UMC_JOIN_FULL); /* the lagging one holds nothing */
	assert_int_equal(count_to(f, mark, 2, UMC_SM_SA_REPLY), 1);
	flush(f);
	ack(f, 3, mlid, last_fwd(f, 3, NULL).version); /* back in step */
	expect_held_until_ack(f, UMC_SA_METHOD_DELETE, mlid);
}

/* Not acknowledged: resent every UMC_SM_FWD_RESEND_MS, UMC_SM_FWD_TRIES in all, then at RENEW. */
static void test_resend_then_renew(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg renew = { .hdr = { .type = UMC_SM_RENEW } };
	uint16_t mlid;
	size_t mark;

	mcm(f, 0, UMC_MAD_METHOD_SET, UMC_JOIN_FULL);
	mlid = mlid_of_group(f);
	mark = f->nout;
	subscribe(f, 3, mlid);
	for (int t = 0; t < 2 * UMC_SM_FWD_TRIES; t++) {
		f->now += UMC_SM_FWD_RESEND_MS;
		flush(f);
	}
	assert_int_equal(count_to(f, mark, 3, UMC_SM_FORWARD), UMC_SM_FWD_TRIES);
	assert_int_equal(f->sm->cnt.fwd_resent, UMC_SM_FWD_TRIES - 1);
	assert_int_equal(f->port[3]->nstale, 1);
	mark = f->nout;
	from(f, 3, &renew);
	assert_int_equal(count_to(f, mark, 3, UMC_SM_FORWARD), 1);
	ack(f, 3, mlid, last_fwd(f, 3, NULL).version);
	assert_int_equal(f->port[3]->nstale, 0);
	f->now += 10 * UMC_SM_FWD_RESEND_MS;
	flush(f);
	assert_int_equal(count_to(f, mark, 3, UMC_SM_FORWARD), 1);
}

/* A list longer than a segment travels in UMC_SM_FWD_SEG-entry segments. */
static void test_segments(void **state)
{
	struct fx *f = *state;
	enum { EXTRA = UMC_SM_FWD_SEG + 10 };
	struct umc_mcmember r;
	uint16_t mlid;
	size_t mark;
	unsigned segs = 0, total = 0;

	mcm(f, 0, UMC_MAD_METHOD_SET, UMC_JOIN_FULL);
	mlid = mlid_of_group(f);
	for (unsigned i = 0; i < EXTRA; i++) {
		struct umc_sm_register reg = { .data_addr = 0x0a000000 + i, .data_port = 6000,
					       .nonce = 9000 + i };
		struct sockaddr_in ep = fx_ep(200 + i);
		struct umc_sm_port *p;
		uint8_t mad[UMC_MAD_SIZE];
		struct umc_sm_sa_reply out;

		assert_int_equal(umc_sm_port_register(f->sm, f->now, &ep, umc_sm_host_key(f->sm, &ep, NULL),
						      &reg, &p), UMC_SM_OK);
		uint8_t mgid[16], pgid[16];

		gid_parse(MGID, mgid);
		umc_sm_port_gid(f->sm, p, pgid);
		sa_rec_init(&r, mgid, pgid, UMC_JOIN_FULL);
		mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_CREATE_MASK, 0,
			  &r);
		umc_sm_sa_process(f->sm, p, mad, f->now, &out);
		assert_int_equal(get_be16(out.mad + 4), 0); /* MAD Status */
	}
	mark = f->nout;
	subscribe(f, 3, mlid);
	for (size_t k = mark; k < f->nout; k++) {
		struct umc_sm_msg m;

		assert_int_equal(umc_sm_msg_decode(f->out[k].buf, f->out[k].len, &m), 0);
		if (m.hdr.type != UMC_SM_FORWARD)
			continue;
		assert_int_equal(m.fwd.total, EXTRA + 1);
		assert_int_equal(m.fwd.offset, segs * UMC_SM_FWD_SEG);
		segs++;
		total += m.fwd.count;
	}
	assert_int_equal(segs, 2);
	assert_int_equal(total, EXTRA + 1);
}

/* Caps and refusals: beyond the map INVALID, beyond --max-groups-per-port NO_RESOURCES. */
static void test_caps(void **state)
{
	struct umc_sm_config cfg;
	struct fx *f;
	struct umc_sm_msg m;

	(void)state;
	umc_sm_config_default(&cfg);
	cfg.unicast_fwd = true;
	cfg.max_groups_per_port = 2;
	cfg.mlid_max = 0xC00F;
	f = fx_new(&cfg);
	subscribe(f, 0, 0xC001);
	subscribe(f, 0, 0xC002);
	subscribe(f, 0, 0xC002); /* again: answered again, no new subscription */
	assert_int_equal(f->port[0]->nsubs, 2);
	subscribe(f, 0, 0xC003);
	assert_int_equal(umc_sm_msg_decode(f->out[f->nout - 1].buf, f->out[f->nout - 1].len, &m), 0);
	assert_int_equal(m.hdr.type, UMC_SM_FORWARD);
	assert_int_equal(m.hdr.status, UMC_SM_NO_RESOURCES);
	subscribe(f, 1, 0xC010);
	assert_int_equal(umc_sm_msg_decode(f->out[f->nout - 1].buf, f->out[f->nout - 1].len, &m), 0);
	assert_int_equal(m.hdr.status, UMC_SM_INVALID);
	assert_int_equal(f->sm->cnt.fwd_refused, 2);
	/* Unsubscribing makes room. */
	m = (struct umc_sm_msg){ .hdr = { .type = UMC_SM_UNSUBSCRIBE }, .mlid = 0xC001 };
	from(f, 0, &m);
	assert_int_equal(f->port[0]->nsubs, 1);
	assert_int_equal(count_to(f, 0, 0, UMC_SM_UNSUBSCRIBE_REPLY), 1);
	subscribe(f, 0, 0xC003);
	assert_int_equal(f->port[0]->nsubs, 2);
	fx_free(f);
}

/* A subscriber that goes lets the replies it held go; a member that goes leaves the list. */
static void test_ports_that_go(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg unreg = { .hdr = { .type = UMC_SM_UNREGISTER } };
	uint16_t mlid = group_with_sender(f), lids[4];
	size_t mark = f->nout;

	mcm(f, 1, UMC_MAD_METHOD_SET, UMC_JOIN_FULL);
	flush(f);
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 0);
	subscribe(f, 2, mlid); /* a second subscriber, in step at once */
	ack(f, 2, mlid, last_fwd(f, 2, NULL).version);
	from(f, 3, &unreg); /* the one it waited for goes */
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 1);
	mark = f->nout;
	from(f, 1, &unreg); /* a member goes: out of port 2's list */
	flush(f);
	assert_int_equal(last_fwd(f, 2, lids).total, 1);
	assert_int_equal(lids[0], 2);
}

/*
 * Multicast mode: an MLID is its IP group until a receiving member says
 * it cannot bind it; then its list, for good.  Non-members cannot say so.
 */
static void test_squatted(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_SQUATTED, .tid = 0x53 } };
	uint16_t mlid, lids[4];
	struct umc_sm_fwd fw;
	size_t mark;

	mcm(f, 0, UMC_MAD_METHOD_SET, UMC_JOIN_FULL);
	mlid = mlid_of_group(f);
	subscribe(f, 3, mlid);
	fw = last_fwd(f, 3, NULL);
	assert_int_equal(fw.kind, UMC_SM_FWD_MULTICAST);
	{
		struct umc_sm_fwd_entry e;

		umc_sm_fwd_entry_get(&fw, 0, &e);
		assert_int_equal(e.addr, UMC_SM_MCAST_BASE + (mlid - 0xC000));
		assert_int_equal(e.port, UMC_IB_DATA_PORT);
	}
	ack(f, 3, mlid, fw.version);
	mark = f->nout;
	mcm(f, 1, UMC_MAD_METHOD_SET, UMC_JOIN_FULL); /* multicast: nothing to wait for */
	assert_int_equal(count_to(f, mark, 1, UMC_SM_SA_REPLY), 1);
	m.mlid = mlid;
	from(f, 2, &m); /* not a member */
	assert_int_equal(umc_sm_msg_decode(f->out[f->nout - 1].buf, f->out[f->nout - 1].len, &m), 0);
	assert_int_equal(m.hdr.type, UMC_SM_SQUATTED_REPLY);
	assert_int_equal(m.hdr.status, UMC_SM_INVALID);
	m = (struct umc_sm_msg){ .hdr = { .type = UMC_SM_SQUATTED, .tid = 0x54 }, .mlid = mlid };
	from(f, 1, &m);
	assert_int_equal(f->sm->cnt.fwd_squatted, 1);
	flush(f);
	fw = last_fwd(f, 3, lids);
	assert_int_equal(fw.kind, UMC_SM_FWD_UNICAST);
	assert_int_equal(fw.total, 2);
	from(f, 1, &m); /* again: nothing changes */
	assert_int_equal(f->sm->cnt.fwd_squatted, 1);
	ack(f, 3, mlid, fw.version);
	expect_held_until_ack(f, UMC_MAD_METHOD_SET, mlid); /* unicast now: held */
}

/* A restart (failover) forgets every subscription; a new subscription starts at version 1. */
static void test_failover(void **state)
{
	struct fx *f = *state;

	group_with_sender(f);
	assert_int_equal(umc_sm_failover(f->sm), 0);
	assert_null(f->sm->fwd.held_head);
	assert_int_equal(f->sm->fwd.subs.count, 0);
	f->port[0] = NULL; /* gone with the epoch */
}

#define T(name, setup) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_join_held_until_acknowledged, setup_unicast),
		T(test_leave_held_until_acknowledged, setup_unicast),
		T(test_sendonly_not_listed, setup_unicast),
		T(test_hold_time_limit_and_lagging, setup_unicast),
		T(test_resend_then_renew, setup_unicast),
		T(test_segments, setup_unicast),
		cmocka_unit_test(test_caps),
		T(test_ports_that_go, setup_unicast),
		T(test_squatted, setup_multicast),
		T(test_failover, setup_unicast),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
