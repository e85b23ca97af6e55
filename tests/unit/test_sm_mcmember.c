// SPDX-License-Identifier: MIT
/*
 * test_sm_mcmember.c - umc-sm's SA rules (sm/sa.c, mcmember.c, groups.c,
 * cpi.c) driven through umc_sm_sa_process(), the pure entry point.
 *
 * Source of truth: OpenSM 3.3.23's rules and statuses
 * (opensm/osm_sa_mcmember_record.c) and the answers it gave on ibsim (the
 * test letters A..X below are the steps of tests/integ/sa_diff/matrix.seq),
 * minus OpenSM's defects, which have tests of their own here.
 * Every SA status the rules can produce is asserted at least once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "test_sm_util.h"

#define MGID_B "ff12:4001:ffff::e000:101"
#define MGID_C "ff12:4001:ffff::e000:102"
#define BCAST "ff12:401b:ffff::ffff:ffff"

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

/* The IPoIB broadcast group exists from the start, with OpenSM's defaults (B). */
static void test_broadcast_group(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, BCAST, 0);
	uint8_t mad[UMC_MAD_SIZE], mgid[16];
	struct sa_res res;

	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_COMP_MGID, 0, &r);
	res = fx_sa(f, 0, mad);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.h.mad.method, UMC_MAD_METHOD_GET_RESP);
	gid_parse(BCAST, mgid);
	assert_memory_equal(res.rec.mgid, mgid, 16);
	assert_int_equal(res.rec.mlid, 0xC000);
	assert_int_equal(res.rec.qkey, 0x0B1B);
	assert_int_equal(res.rec.pkey, 0xFFFF);
	assert_int_equal(res.mad[UMC_SA_HDR_LEN + 38], 0x84); /* MTU sel 2, 2048 */
	assert_int_equal(res.mad[UMC_SA_HDR_LEN + 42], 0x83); /* rate sel 2, 10 Gb/s */
	assert_int_equal(res.mad[UMC_SA_HDR_LEN + 43], 0x92); /* PacketLifeTime sel 2, 18 */
	assert_int_equal(res.rec.scope, 2);
	assert_int_equal(res.rec.join_state, 0);
	/* it is never deleted: the last full member leaving keeps it */
	r = fx_rec(f, 0, BCAST, UMC_JOIN_FULL);
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID); /* Q_Key 0x01234567 is not the group's */
	r.qkey = UMC_IPOIB_QKEY;
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r).h.mad.status, 0);
	assert_int_equal(fx_leave(f, 0, BCAST, UMC_JOIN_FULL), 0);
	assert_non_null(umc_sm_group_by_mgid(f->sm, mgid));
}

/* B: create; the reply carries the group's values, echoes TID and PortGID. */
static void test_create_reply(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, MGID_B, UMC_JOIN_FULL);
	struct sa_res res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);

	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.h.mad.method, UMC_MAD_METHOD_GET_RESP); /* Set -> 0x81 */
	assert_true(res.h.mad.tid == 0x1122334455667788ULL);
	assert_int_equal(res.h.sm_key, 0);
	assert_int_equal(res.h.attr_offset, 7);
	assert_int_equal(res.h.comp_mask, UMC_MCM_CREATE_MASK);
	assert_memory_equal(res.rec.mgid, r.mgid, 16);
	assert_memory_equal(res.rec.port_gid, r.port_gid, 16);
	assert_int_equal(res.rec.mlid, 0xC001);
	assert_int_equal(res.rec.qkey, 0x01234567);
	assert_int_equal(res.rec.mtu_sel, 2);
	assert_int_equal(res.rec.mtu, UMC_SM_PORT_MTU); /* the port's, not asked for */
	assert_int_equal(res.rec.rate_sel, 2);
	assert_int_equal(res.rec.rate, UMC_SM_PORT_RATE);
	assert_int_equal(res.rec.pkt_life_sel, 2);
	assert_int_equal(res.rec.join_state, UMC_JOIN_FULL);
	assert_false(res.rec.proxy_join);
	assert_int_equal(f->sm->cnt.groups_created, 1);
}

/* C, D: a NonMember joins with the join mask only; OR-ing gives 0xA. */
static void test_join_or(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r;
	struct sa_res res;

	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	r = fx_rec(f, 1, MGID_B, UMC_JOIN_NON);
	r.qkey = 0; /* not in the mask: the group's comes back */
	res = fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, &r);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.rec.qkey, 0x01234567);
	assert_int_equal(res.rec.mlid, 0xC001);
	assert_int_equal(res.rec.join_state, UMC_JOIN_NON);
	r.join_state = UMC_JOIN_SENDONLY_FULL;
	res = fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, &r);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.rec.join_state, 0xA);
	assert_int_equal(fx_member_state(f, MGID_B, 1), 0xA);
	assert_int_equal(umc_sm_group_by_mlid(f->sm, 0xC001)->full_members, 2);
}

/* E, F, L, N: statuses of malformed joins; an error reply echoes the request. */
static void test_join_errors(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, MGID_B, UMC_JOIN_NON);
	struct sa_res res;
	uint8_t mad[UMC_MAD_SIZE];

	/* E: NonMember cannot create */
	mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_CREATE_MASK, 1, &r);
	res = fx_sa(f, 0, mad);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(res.h.mad.method, UMC_MAD_METHOD_GET_RESP);
	assert_int_equal(res.h.sm_key, 0); /* C15-0.1.5: never returned */
	assert_memory_equal(res.mad + UMC_SA_HDR_LEN, mad + UMC_SA_HDR_LEN, UMC_SA_DATA_LEN);
	assert_int_equal(f->sm->groups.count, 1);
	/* F: creation needs 0x130C7 */
	r.join_state = UMC_JOIN_FULL;
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_INSUF_COMPS);
	/* N: a Set and a Delete need MGID|PortGID|JoinState */
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_INSUF_COMPS);
	res = fx_mcm(f, 0, UMC_SA_METHOD_DELETE, UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_INSUF_COMPS);
	assert_int_equal(res.h.mad.method, UMC_SA_METHOD_DELETE_RESP);
	/* L: JoinState 0 on an existing group */
	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, 0), UMC_SA_STATUS_REQ_INVALID);
	/* invalid P_Key (base 0) */
	r = fx_rec(f, 0, MGID_C, UMC_JOIN_FULL);
	r.pkey = 0x8000;
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_REQ_INVALID);
	/* PortGID of no port */
	r = fx_rec(f, 0, MGID_C, UMC_JOIN_FULL);
	r.port_gid[15] ^= 0x80;
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(f->sm->groups.count, 2);
	assert_true(f->sm->cnt.sa_rejected >= 7);
}

/* M: PortGID prefix other than the subnet's: ERR_REQ_INVALID_GID, Set and Delete. */
static void test_bad_prefix(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, MGID_B, UMC_JOIN_FULL);
	struct sa_res res;

	r.port_gid[7] = 1; /* fe80:0:0:1:... */
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_INVALID_GID);
	res = fx_mcm(f, 0, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_INVALID_GID);
}

/* H, I, J and the signatures that are valid. */
static void test_mgid_validation(void **state)
{
	struct fx *f = *state;

	assert_int_equal(fx_join(f, 0, "1234::1", UMC_JOIN_FULL), UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_join(f, 0, "ff12:a01b::1", UMC_JOIN_FULL), UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_join(f, 0, "ff32:4001:ffff::1", UMC_JOIN_FULL),
			 UMC_SA_STATUS_REQ_INVALID);
	/* 0xA01B with another scope, and RDMA CM's 0x4001 are ordinary MGIDs */
	assert_int_equal(fx_join(f, 0, "ff15:a01b::1", UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(f->sm->groups.count, 3);
}

/* IPoIB-signed MGIDs must agree with their partition's broadcast group. */
static void test_ipoib_mgid(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, "ff12:401b:ffff::e000:101", UMC_JOIN_FULL);
	struct sa_res res;

	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r); /* Q_Key 0x01234567 */
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_REQ_INVALID);
	r.qkey = UMC_IPOIB_QKEY;
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);
	assert_int_equal(res.h.mad.status, 0);
	/* partition 0x8001 has no broadcast group */
	r = fx_rec(f, 0, "ff12:401b:8001::e000:101", UMC_JOIN_FULL);
	r.qkey = UMC_IPOIB_QKEY;
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_REQ_INVALID);
}

/* K and the other fields an existing group checks. */
static void test_field_mismatch(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r;
	uint64_t mask = UMC_MCM_CREATE_MASK | UMC_MCM_COMP_HOP;
	int i;

	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	for (i = 0; i < 6; i++) {
		r = fx_rec(f, 1, MGID_B, UMC_JOIN_FULL);
		switch (i) {
		case 0: r.qkey ^= 1; break;
		case 1: r.tclass = 1; break;
		case 2: r.sl = 1; break;
		case 3: r.flow_label = 5; break;
		case 4: r.hop_limit = 3; break;
		case 5: r.pkey = 0x7ffe; break;
		}
		assert_int_equal(fx_mcm(f, 1, UMC_MAD_METHOD_SET, mask, &r).h.mad.status,
				 UMC_SA_STATUS_REQ_INVALID);
	}
	/* the limited P_Key 0x7FFF joins a full 0xFFFF group */
	r = fx_rec(f, 1, MGID_B, UMC_JOIN_FULL);
	r.pkey = 0x7fff;
	assert_int_equal(fx_mcm(f, 1, UMC_MAD_METHOD_SET, mask, &r).h.mad.status, 0);
	/* two limited P_Keys do not */
	r = fx_rec(f, 0, MGID_C, UMC_JOIN_FULL);
	r.pkey = 0x7fff;
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, mask, &r).h.mad.status, 0);
	r = fx_rec(f, 1, MGID_C, UMC_JOIN_FULL);
	r.pkey = 0x7fff;
	assert_int_equal(fx_mcm(f, 1, UMC_MAD_METHOD_SET, mask, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	/* a group in a partition the port lacks */
	r = fx_rec(f, 0, "ff12:4001:8001::1", UMC_JOIN_FULL);
	r.pkey = 0x8001;
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, mask, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
}

/* MTU and rate: codes, selectors, realisability and port capabilities. */
static void test_mtu_rate(void **state)
{
	struct fx *f = *state;
	uint64_t mtu = UMC_MCM_COMP_MTU | UMC_MCM_COMP_MTU_SEL;
	uint64_t rate = UMC_MCM_COMP_RATE | UMC_MCM_COMP_RATE_SEL;
	struct umc_mcmember r = fx_rec(f, 0, MGID_B, UMC_JOIN_FULL);
	struct sa_res res;

	r.mtu_sel = 2, r.mtu = 6; /* no such code */
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | mtu, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	r.mtu = 5; /* exactly 4096: realisable, but above the port's 2048 */
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | mtu, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	r.mtu_sel = 0, r.mtu = 4; /* greater than 2048: not on this port */
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | mtu, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	r.mtu = 0;
	r.rate_sel = 2, r.rate = 1; /* no such code */
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | rate, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	r.rate_sel = 0, r.rate = 3; /* greater than the port's 10 Gb/s */
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | rate, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(f->sm->groups.count, 1);
	/* less than 2048 -> 1024; less than 10 Gb/s -> 5 Gb/s (code 5) */
	r.mtu_sel = 1, r.mtu = 4, r.rate_sel = 1, r.rate = 3;
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | mtu | rate, &r);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.rec.mtu, 3);
	assert_int_equal(res.rec.rate, 5);
	assert_int_equal(res.rec.mtu_sel, 2);
	/* joining it with "exactly 2048" fails the selector; "largest" is fine */
	r = fx_rec(f, 1, MGID_B, UMC_JOIN_FULL);
	r.mtu_sel = 2, r.mtu = 4;
	assert_int_equal(fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK | mtu, &r).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	r.mtu_sel = 3;
	assert_int_equal(fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK | mtu, &r).h.mad.status, 0);
}

/* P, Q, W: Delete removes exactly the bits asked, and only bits held. */
static void test_subset_leave(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r;
	struct sa_res res;

	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_NON), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_SENDONLY_FULL), 0);
	assert_int_equal(fx_leave(f, 1, MGID_B, UMC_JOIN_SENDONLY_NON), UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_leave(f, 0, MGID_B, UMC_JOIN_FULL | UMC_JOIN_NON),
			 UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_leave(f, 1, MGID_B, 0), UMC_SA_STATUS_REQ_INVALID);
	r = fx_rec(f, 1, MGID_B, UMC_JOIN_SENDONLY_FULL);
	res = fx_mcm(f, 1, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, &r);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.h.mad.method, UMC_SA_METHOD_DELETE_RESP);
	assert_int_equal(res.h.attr_offset, 7);
	assert_int_equal(res.rec.join_state, UMC_JOIN_NON);
	assert_int_equal(res.rec.mlid, 0); /* an echo: OpenSM does not fill it */
	assert_int_equal(fx_member_state(f, MGID_B, 1), UMC_JOIN_NON);
	/* deleting from a group that does not exist, and a non-member */
	assert_int_equal(fx_leave(f, 0, MGID_C, UMC_JOIN_FULL), UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_leave(f, 2, MGID_B, UMC_JOIN_FULL), UMC_SA_STATUS_REQ_INVALID);
}

/* R, S: the last full member leaving deletes the group with its NonMembers; the MLID is reused. */
static void test_last_full_leaves(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, MGID_B, UMC_JOIN_FULL);
	struct sa_res res;

	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_NON), 0);
	assert_int_equal(fx_join(f, 0, MGID_C, UMC_JOIN_FULL), 0); /* 0xC002 */
	res = fx_mcm(f, 0, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, &r);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.rec.join_state, 0);
	assert_int_equal(fx_member_state(f, MGID_B, 1), -UMC_SA_STATUS_NO_RECORDS);
	assert_int_equal(f->port[1]->nmembers, 0);
	assert_int_equal(f->sm->cnt.groups_deleted, 1);
	/* the freed 0xC001 goes to the next group */
	r = fx_rec(f, 2, "ff12:4001:ffff::e000:103", UMC_JOIN_FULL);
	res = fx_mcm(f, 2, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);
	assert_int_equal(res.rec.mlid, 0xC001);
}

/* G: SendOnlyFull creates a group, and keeps it when the FullMember leaves. */
static void test_sendonly_full(void **state)
{
	struct fx *f = *state;

	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_SENDONLY_FULL), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_leave(f, 1, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_member_state(f, MGID_B, 0), UMC_JOIN_SENDONLY_FULL);
	assert_int_equal(fx_leave(f, 0, MGID_B, UMC_JOIN_SENDONLY_FULL), 0);
	assert_int_equal(fx_member_state(f, MGID_B, 0), -UMC_SA_STATUS_NO_RECORDS);
}

/*
 * The OpenSM 3.3.23 defect: a 0x9 creator clearing 0x1 lost its record
 * and leaked the group.  Here it keeps 0x8, and the group goes with it.
 */
static void test_partial_leave_0x9(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, MGID_B, UMC_JOIN_FULL);
	struct sa_res res;

	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL | UMC_JOIN_SENDONLY_FULL), 0);
	res = fx_mcm(f, 0, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, &r);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.rec.join_state, UMC_JOIN_SENDONLY_FULL);
	assert_int_equal(fx_member_state(f, MGID_B, 0), UMC_JOIN_SENDONLY_FULL);
	assert_int_equal(umc_sm_group_by_mlid(f->sm, 0xC001)->full_members, 1);
	assert_int_equal(fx_leave(f, 0, MGID_B, UMC_JOIN_SENDONLY_FULL), 0);
	assert_null(umc_sm_group_by_mlid(f->sm, 0xC001));
	assert_int_equal(f->sm->groups.count, 1);
}

/* --no-sendonly: JoinState 0x8 refused; ClassPortInfo without bit 12. */
static void test_no_sendonly(void **state)
{
	struct umc_sm_config cfg;
	struct umc_class_port_info cpi;
	uint8_t mad[UMC_MAD_SIZE];
	struct fx *f;
	struct sa_res res;

	(void)state;
	umc_sm_config_default(&cfg);
	cfg.sendonly = false;
	f = fx_new(&cfg);
	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_SENDONLY_FULL), UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_SENDONLY_FULL | UMC_JOIN_NON),
			 UMC_SA_STATUS_REQ_INVALID);
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	res = fx_sa(f, 0, mad);
	assert_int_equal(res.h.mad.status, 0);
	umc_cpi_decode(res.mad + UMC_SA_HDR_LEN, &cpi);
	assert_int_equal(cpi.cap_mask2 & UMC_SA_CAP2_SENDONLY_FULL, 0);
	assert_int_equal(cpi.cap_mask, UMC_SA_CAP_UD_MCAST);
	fx_free(f);
}

/* X: ClassPortInfo of the default SA. */
static void test_class_port_info(void **state)
{
	struct fx *f = *state;
	struct umc_class_port_info cpi;
	uint8_t mad[UMC_MAD_SIZE];
	struct sa_res res;

	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	res = fx_sa(f, 0, mad);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.h.mad.method, UMC_MAD_METHOD_GET_RESP);
	umc_cpi_decode(res.mad + UMC_SA_HDR_LEN, &cpi);
	assert_int_equal(cpi.base_version, 1);
	assert_int_equal(cpi.class_version, 2);
	assert_int_equal(cpi.cap_mask2, UMC_SA_CAP2_SENDONLY_FULL);
	assert_int_equal(res.mad[UMC_SA_HDR_LEN + 5] & 0x02, 0x02); /* word bit 17 */
	assert_int_equal(cpi.resp_time, 16);
	assert_int_equal(cpi.redir_qp, 1);
	assert_int_equal(cpi.redir_qkey, UMC_GSI_QKEY);
	/* ClassPortInfo is Get only */
	mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	assert_int_equal(fx_sa(f, 0, mad).h.mad.status, UMC_MAD_STATUS_UNSUP_METHOD_ATTR);
}

/* Common MAD statuses and what is dropped without a reply. */
static void test_dispatch_statuses(void **state)
{
	struct fx *f = *state;
	uint8_t mad[UMC_MAD_SIZE];
	struct sa_res res;

	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_PATH_RECORD, 0, 0, NULL);
	assert_int_equal(fx_sa(f, 0, mad).h.mad.status, UMC_MAD_STATUS_UNSUP_METHOD_ATTR);
	mad_build(mad, UMC_MAD_METHOD_REPORT, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	assert_int_equal(fx_sa(f, 0, mad).h.mad.status, UMC_MAD_STATUS_UNSUP_METHOD_ATTR);
	mad_build(mad, 0x7f, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	res = fx_sa(f, 0, mad);
	assert_int_equal(res.h.mad.status, UMC_MAD_STATUS_UNSUP_METHOD);
	assert_int_equal(res.h.mad.method, 0xff);
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	mad[2] = 1; /* ClassVersion */
	assert_int_equal(fx_sa(f, 0, mad).h.mad.status, UMC_MAD_STATUS_BAD_VERSION);
	mad[2] = 2;
	mad[0] = 2; /* BaseVersion */
	assert_int_equal(fx_sa(f, 0, mad).h.mad.status, UMC_MAD_STATUS_BAD_VERSION);
	assert_int_equal(f->sm->cnt.sa_bad_version, 2);
	assert_int_equal(f->sm->cnt.sa_unsupported, 3);
	/* dropped: another class, a response, a wrong SM_Key */
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	mad[1] = 0x01;
	assert_int_equal(fx_sa(f, 0, mad).kind, UMC_SM_SA_NO_REPLY);
	mad_build(mad, UMC_MAD_METHOD_GET_RESP, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	assert_int_equal(fx_sa(f, 0, mad).kind, UMC_SM_SA_NO_REPLY);
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 2, NULL);
	assert_int_equal(fx_sa(f, 0, mad).kind, UMC_SM_SA_NO_REPLY);
	assert_int_equal(f->sm->cnt.sa_bad_class, 1);
	assert_int_equal(f->sm->cnt.sa_response, 1);
	assert_int_equal(f->sm->cnt.sa_bad_smkey, 1);
}

/* O: untrusted queries zero PortGID/JoinState/ProxyJoin; Get statuses 0x0300, 0x0400. */
static void test_queries(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, MGID_B, 0);
	uint8_t mad[UMC_MAD_SIZE], gid1[16];
	struct sa_res res;

	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_NON), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_SENDONLY_FULL), 0);
	fx_gid(f, 1, gid1);
	memcpy(r.port_gid, gid1, 16);
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		  UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, 0, &r);
	res = fx_sa(f, 2, mad);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.rec.join_state, 0);
	assert_true(res.rec.port_gid[0] == 0 && res.rec.port_gid[15] == 0);
	assert_int_equal(res.rec.mlid, 0xC001);
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		  UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, 1, &r);
	res = fx_sa(f, 2, mad);
	assert_int_equal(res.rec.join_state, 0xA);
	assert_memory_equal(res.rec.port_gid, gid1, 16);
	/* trusted, MGID only: one record per member -> Get has too many */
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_COMP_MGID, 1, &r);
	assert_int_equal(fx_sa(f, 2, mad).h.mad.status, UMC_SA_STATUS_TOO_MANY_RECORDS);
	/* untrusted, MGID only: one record for the group */
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_COMP_MGID, 0, &r);
	assert_int_equal(fx_sa(f, 2, mad).h.mad.status, 0);
	/* no such group */
	gid_parse(MGID_C, r.mgid);
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_COMP_MGID, 0, &r);
	assert_int_equal(fx_sa(f, 2, mad).h.mad.status, UMC_SA_STATUS_NO_RECORDS);
	/* a query with an invalid MTU code */
	r.mtu_sel = 2, r.mtu = 7;
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		  UMC_MCM_COMP_MTU | UMC_MCM_COMP_MTU_SEL, 0, &r);
	assert_int_equal(fx_sa(f, 2, mad).h.mad.status, UMC_SA_STATUS_REQ_INVALID);
}

/* GetTable: untrusted one record per group, trusted one per member, MGID order. */
static void test_get_table(void **state)
{
	struct fx *f = *state;
	uint8_t mad[UMC_MAD_SIZE];
	struct umc_mcmember a, b;
	struct sa_res res;
	uint32_t i;

	assert_int_equal(fx_join(f, 0, MGID_C, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_NON), 0);
	mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	res = fx_sa(f, 3, mad);
	assert_int_equal(res.kind, UMC_SM_SA_REPLY_TABLE);
	assert_int_equal(res.h.mad.method, UMC_SA_METHOD_GET_TABLE_RESP);
	assert_int_equal(res.h.attr_offset, 7);
	assert_int_equal(res.nrecords, 3); /* C, B and the broadcast group */
	for (i = 1; i < res.nrecords; i++)
		assert_true(memcmp(res.table + (i - 1) * 56, res.table + i * 56, 16) < 0);
	mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 1, NULL);
	res = fx_sa(f, 3, mad);
	assert_int_equal(res.nrecords, 3); /* three memberships; the empty broadcast group none */
	umc_mcmember_decode(res.table, &a);
	umc_mcmember_decode(res.table + 56, &b);
	assert_memory_equal(a.mgid, b.mgid, 16); /* B's two members first, by PortGID */
	assert_int_equal(a.join_state, UMC_JOIN_FULL);
	assert_int_equal(b.join_state, UMC_JOIN_NON);
	/* JoinState in the mask filters members */
	b = fx_rec(f, 0, NULL, UMC_JOIN_NON);
	mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_COMP_JOIN_STATE,
		  1, &b);
	assert_int_equal(fx_sa(f, 3, mad).nrecords, 1);
	/* none match: success with no records and AttributeOffset 0 */
	b.qkey = 0x42;
	mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_COMP_QKEY, 0, &b);
	res = fx_sa(f, 3, mad);
	assert_int_equal(res.h.mad.status, 0);
	assert_int_equal(res.nrecords, 0);
	assert_int_equal(res.h.attr_offset, 0);
}

/* A fixture whose umc-sm was started with --sm-key KEY_GIVEN. */
enum { KEY_GIVEN = 0x5ec7e7 };

static struct fx *fx_keyed(void)
{
	struct umc_sm_config cfg;

	umc_sm_config_default(&cfg);
	cfg.sm_key = KEY_GIVEN;
	cfg.sm_key_set = true;
	return fx_new(&cfg);
}

/*
 * T, U, V with the SM key: proxy joins (the SA decides from the requester),
 * ProxyJoin emitted as 0x80, and OpenSM's rules (o15-0.2.1) on top.
 */
static void test_proxy(void **state)
{
	struct fx *f = fx_keyed();
	struct umc_mcmember r;
	struct sa_res res;
	uint8_t mad[UMC_MAD_SIZE];

	(void)state;
	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	r = fx_rec(f, 1, MGID_B, UMC_JOIN_NON); /* port 1's GID, sent by port 0 */
	res = fx_mcm_key(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, KEY_GIVEN, &r);
	assert_int_equal(res.h.mad.status, 0);
	assert_true(res.rec.proxy_join);
	assert_int_equal(res.mad[UMC_SA_HDR_LEN + 49], 0x80);
	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		  UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, KEY_GIVEN, &r);
	assert_true(fx_sa(f, 2, mad).rec.proxy_join);
	/* U: the proxied port deletes its membership itself */
	assert_int_equal(fx_leave(f, 1, MGID_B, UMC_JOIN_NON), 0);
	/* V: after a self join, another port's Delete is refused, key or not ... */
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_NON), 0);
	res = fx_mcm_key(f, 0, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, KEY_GIVEN, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_member_state(f, MGID_B, 1), UMC_JOIN_NON);
	/* ... and so is its Set on that membership, and a ProxyJoin bit in the request */
	r.join_state = UMC_JOIN_SENDONLY_NON;
	res = fx_mcm_key(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, KEY_GIVEN, &r);
	assert_int_equal(res.h.mad.status, UMC_SA_STATUS_REQ_INVALID);
	r = fx_rec(f, 2, MGID_B, UMC_JOIN_NON);
	r.proxy_join = true; /* ignored: port 2 joins itself */
	res = fx_mcm(f, 2, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, &r);
	assert_int_equal(res.h.mad.status, 0);
	assert_false(res.rec.proxy_join);
	fx_free(f);
}

/* fx_member_get(): the ProxyJoin of a membership the state holds. */
static bool fx_member_proxy(struct fx *f, const char *mgid, unsigned j)
{
	struct sa_res res = fx_member_get(f, mgid, j);

	assert_int_equal(res.h.mad.status, 0);
	return res.rec.proxy_join;
}

/*
 * Only the port itself changes its membership (issue 32, defect 4): a
 * proxy Set or another port's Delete is refused with ERR_REQ_DENIED unless
 * it carries the SM key umc-sm was started with; the default key (1,
 * OpenSM's, known to all) grants no such right.
 */
static void test_only_the_port_changes_its_membership(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember v = fx_rec(f, 0, MGID_B, UMC_JOIN_FULL);
	uint16_t mlid;

	/* the defect: port 1 proxy-joins the victim, port 0, before port 0 joins */
	assert_int_equal(fx_join(f, 2, MGID_B, UMC_JOIN_FULL), 0);
	mlid = umc_sm_group_by_mgid(f->sm, fx_rec(f, 0, MGID_B, 0).mgid)->rec.mlid;
	assert_int_equal(fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, &v).h.mad.status,
			 UMC_SA_STATUS_DENIED);
	assert_int_equal(fx_mcm_key(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK,
				    UMC_SM_DEFAULT_SM_KEY, &v)
				 .h.mad.status,
			 UMC_SA_STATUS_DENIED);
	assert_int_equal(fx_member_state(f, MGID_B, 0), -UMC_SA_STATUS_NO_RECORDS);
	/* the victim joins, and the other port's Delete of it is refused */
	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_false(fx_member_proxy(f, MGID_B, 0));
	assert_int_equal(fx_leave(f, 2, MGID_B, UMC_JOIN_FULL), 0); /* the creator leaves */
	assert_int_equal(fx_mcm(f, 1, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, &v).h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_mcm_key(f, 1, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK,
				    UMC_SM_DEFAULT_SM_KEY, &v)
				 .h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_member_state(f, MGID_B, 0), UMC_JOIN_FULL);
	assert_int_equal(umc_sm_group_by_mgid(f->sm, v.mgid)->rec.mlid, mlid);
}

/*
 * With --sm-key: a proxy membership made with the key is the port's own
 * once the port joins it itself (ProxyJoin cleared); until then another
 * port's Delete needs the key.
 */
static void test_own_join_takes_a_proxy_membership_over(void **state)
{
	struct fx *f = fx_keyed();
	struct umc_mcmember v = fx_rec(f, 0, MGID_B, UMC_JOIN_NON);
	struct sa_res res;

	(void)state;
	assert_int_equal(fx_join(f, 2, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, &v).h.mad.status,
			 UMC_SA_STATUS_DENIED);
	res = fx_mcm_key(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, KEY_GIVEN, &v);
	assert_int_equal(res.h.mad.status, 0);
	assert_true(res.rec.proxy_join);
	/* another port's Delete of the proxy membership: only with the key */
	assert_int_equal(fx_mcm(f, 3, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, &v).h.mad.status,
			 UMC_SA_STATUS_DENIED);
	assert_int_equal(fx_mcm_key(f, 3, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, KEY_GIVEN, &v)
				 .h.mad.status,
			 0);
	assert_int_equal(fx_member_state(f, MGID_B, 0), -UMC_SA_STATUS_NO_RECORDS);
	/* proxied again, then the port's own join takes the membership over */
	assert_int_equal(fx_mcm_key(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, KEY_GIVEN, &v)
				 .h.mad.status,
			 0);
	assert_true(fx_member_proxy(f, MGID_B, 0));
	v.join_state = UMC_JOIN_FULL;
	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, &v);
	assert_int_equal(res.h.mad.status, 0);
	assert_false(res.rec.proxy_join);
	assert_int_equal(res.rec.join_state, UMC_JOIN_FULL | UMC_JOIN_NON);
	assert_false(fx_member_proxy(f, MGID_B, 0));
	/* now the key no longer lets another port delete it (o15-0.2.1) */
	assert_int_equal(fx_mcm_key(f, 1, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, KEY_GIVEN, &v)
				 .h.mad.status,
			 UMC_SA_STATUS_REQ_INVALID);
	assert_int_equal(fx_member_state(f, MGID_B, 0), UMC_JOIN_FULL | UMC_JOIN_NON);
	fx_free(f);
}

/* SA-assigned MGIDs for MGID 0: ff12:a01b:<prefix> + counter, each a new group. */
static void test_sa_assigned_mgid(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, NULL, UMC_JOIN_FULL);
	uint8_t first[16], second[16];
	struct sa_res res;

	res = fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);
	assert_int_equal(res.h.mad.status, 0);
	gid_parse("ff12:a01b:fe80::", first);
	assert_memory_equal(res.rec.mgid, first, 16);
	assert_int_equal(res.rec.mlid, 0xC001);
	r = fx_rec(f, 1, NULL, UMC_JOIN_FULL);
	res = fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);
	gid_parse("ff12:a01b:fe80::100:0:0", second);
	assert_memory_equal(res.rec.mgid, second, 16);
	assert_int_equal(res.rec.mlid, 0xC002);
	/* the Scope component picks the scope */
	r.scope = UMC_MGID_SCOPE_SITE;
	res = fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | UMC_MCM_COMP_SCOPE, &r);
	assert_int_equal(res.rec.mgid[1], 0x15);
	assert_int_equal(f->sm->groups.count, 4);
}

/* ERR_NO_RESOURCES: every candidate MGID taken; no MLID left. */
static void test_no_resources(void **state)
{
	struct umc_sm_config cfg;
	struct umc_mcmember r;
	struct fx *f = *state;
	char mgid[64];
	unsigned i;

	for (i = 0; i < UMC_SM_MGID_TRIES; i++) {
		/* ff15:a01b:fe80:: with counter i least significant byte first at bytes 10..13 */
		snprintf(mgid, sizeof(mgid), "ff15:a01b:fe80::%x:%x:0", (i & 0xff) << 8 | (i >> 8 & 0xff),
			 (i >> 16 & 0xff) << 8 | i >> 24);
		assert_int_equal(fx_join(f, 0, mgid, UMC_JOIN_FULL), 0);
	}
	r = fx_rec(f, 0, NULL, UMC_JOIN_FULL);
	r.scope = UMC_MGID_SCOPE_SITE;
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | UMC_MCM_COMP_SCOPE, &r)
				 .h.mad.status,
			 UMC_SA_STATUS_NO_RESOURCES);
	r.scope = UMC_MGID_SCOPE_LINK; /* ff12 candidates are free */
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK | UMC_MCM_COMP_SCOPE, &r)
				 .h.mad.status,
			 0);

	umc_sm_config_default(&cfg);
	cfg.mlid_max = 0xC002;
	f = fx_new(&cfg);
	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 0, MGID_C, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::e000:103", UMC_JOIN_FULL),
			 UMC_SA_STATUS_NO_RESOURCES);
	assert_int_equal(fx_leave(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::e000:103", UMC_JOIN_FULL), 0);
	fx_free(f);
}

/* A requested free MLID is used even without its component bit (OpenSM get_new_mlid). */
static void test_requested_mlid(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r = fx_rec(f, 0, MGID_B, UMC_JOIN_FULL);

	r.mlid = 0xC123;
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r).rec.mlid, 0xC123);
	r = fx_rec(f, 0, MGID_C, UMC_JOIN_FULL);
	r.mlid = 0xC000; /* taken by the broadcast group */
	assert_int_equal(fx_mcm(f, 0, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r).rec.mlid, 0xC001);
}

/* A port that goes away leaves every group as by Delete 0xF. */
static void test_port_removal(void **state)
{
	struct fx *f = *state;
	struct umc_mcmember r;

	assert_int_equal(fx_join(f, 0, MGID_B, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 1, MGID_B, UMC_JOIN_NON), 0);
	assert_int_equal(fx_join(f, 1, MGID_C, UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 0, MGID_C, UMC_JOIN_NON), 0);
	r = fx_rec(f, 1, BCAST, UMC_JOIN_FULL);
	assert_int_equal(fx_mcm(f, 1, UMC_MAD_METHOD_SET, UMC_MCM_JOIN_MASK, &r).h.mad.status, 0);
	umc_sm_port_remove(f->sm, f->port[1], "test");
	f->port[1] = NULL;
	assert_int_equal(fx_member_state(f, MGID_B, 0), UMC_JOIN_FULL);
	assert_null(umc_sm_group_by_mlid(f->sm, 0xC002)); /* C lost its only full member */
	assert_int_equal(f->port[0]->nmembers, 1);
	assert_int_equal(umc_sm_group_by_mlid(f->sm, 0xC000)->nmembers, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_broadcast_group), T(test_create_reply), T(test_join_or),
		T(test_join_errors),	 T(test_bad_prefix),   T(test_mgid_validation),
		T(test_ipoib_mgid),	 T(test_field_mismatch), T(test_mtu_rate),
		T(test_subset_leave),	 T(test_last_full_leaves), T(test_sendonly_full),
		T(test_partial_leave_0x9), T(test_no_sendonly), T(test_class_port_info),
		T(test_dispatch_statuses), T(test_queries),    T(test_get_table),
		T(test_proxy),		 T(test_only_the_port_changes_its_membership),
		T(test_own_join_takes_a_proxy_membership_over),
		T(test_sa_assigned_mgid), T(test_no_resources),
		T(test_requested_mlid),	 T(test_port_removal),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
