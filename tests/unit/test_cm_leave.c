/* SPDX-License-Identifier: MIT */
/*
 * test_cm_leave.c - rdma_leave_multicast and rdma_destroy_id
 * (docs/design.md, "Observed on rxe" 4 and 5; the kernel's cma_leave_mc_groups()),
 * including the cases where librdmacm hangs or double-frees and umcast
 * must not (docs/design.md, "Departures from Linux").
 */
#include "test_cm_util.h"

struct fixture {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
};

static int setup(void **state)
{
	static struct fixture f;

	f.ch = rdma_create_event_channel();
	if (!f.ch)
		return -1;
	f.id = tcm_bound_id(f.ch, NULL, RDMA_PS_UDP);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->id)
		assert_int_equal(rdma_destroy_id(f->id), 0);
	assert_false(tcm_readable(f->ch, 0));
	rdma_destroy_event_channel(f->ch);
	return 0;
}

/* Never joined: EADDRNOTAVAIL, also on an unbound id and for 0.0.0.0. */
static void test_leave_not_joined(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_id *id;

	errno = 0;
	assert_int_equal(tcm_leave(f->id, "239.3.0.1"), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	errno = 0;
	assert_int_equal(tcm_leave(f->id, "0.0.0.0"), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_int_equal(rdma_create_id(f->ch, &id, NULL, RDMA_PS_UDP), 0);
	errno = 0;
	assert_int_equal(tcm_leave(id, "239.3.0.1"), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_int_equal(rdma_destroy_id(id), 0);
	/* A bad address is EINVAL. */
	errno = 0;
	assert_int_equal(rdma_leave_multicast(f->id, NULL), -1);
	assert_int_equal(errno, EINVAL);
}

/* The address is compared byte for byte: another port is another address. */
static void test_leave_memcmp(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in g = tcm_sin("239.3.0.2", 0), gp = tcm_sin("239.3.0.2", 4791);

	assert_int_equal(rdma_join_multicast(f->id, SA(&g), NULL), 0);
	assert_int_equal(rdma_ack_cm_event(tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN)), 0);
	errno = 0;
	assert_int_equal(rdma_leave_multicast(f->id, SA(&gp)), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_int_equal(rdma_leave_multicast(f->id, SA(&g)), 0);
	assert_int_equal(tcm_members("239.3.0.2"), 0);
}

/* Leave before the JOIN event was read: the event is discarded (observed on rxe, 5). */
static void test_leave_before_event(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_event *ev;

	tcm_create_qp(f->id);
	assert_int_equal(tcm_join(f->id, "239.3.0.3", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	assert_int_equal(tcm_members("239.3.0.3"), 1);
	assert_int_equal(tcm_leave(f->id, "239.3.0.3"), 0);
	assert_int_equal(tcm_members("239.3.0.3"), 0);
	assert_false(tcm_readable(f->ch, 50));
	assert_false(tcm_attached(f->id->qp, "239.3.0.3"));

	/* Only the left join's event goes: another one stays. */
	assert_int_equal(tcm_join(f->id, "239.3.0.4", RDMA_MC_JOIN_FLAG_FULLMEMBER, f), 0);
	assert_int_equal(tcm_join(f->id, "239.3.0.3", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	assert_int_equal(tcm_leave(f->id, "239.3.0.3"), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_ptr_equal(ev->param.ud.private_data, f);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_false(tcm_readable(f->ch, 50));
	assert_int_equal(tcm_leave(f->id, "239.3.0.4"), 0);
	rdma_destroy_qp(f->id);
}

/* Leave while the JOIN event is held unacked: librdmacm blocks forever
 * (observed on rxe, 5); umcast returns at once and the event stays valid. */
static void test_leave_with_held_event(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_event *ev;
	int ctx;

	tcm_create_qp(f->id);
	assert_int_equal(tcm_join(f->id, "239.3.0.5", RDMA_MC_JOIN_FLAG_FULLMEMBER, &ctx), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_true(tcm_attached(f->id->qp, "239.3.0.5"));
	assert_int_equal(tcm_leave(f->id, "239.3.0.5"), 0);
	assert_false(tcm_attached(f->id->qp, "239.3.0.5"));
	assert_int_equal(tcm_members("239.3.0.5"), 0);
	assert_ptr_equal(ev->id, f->id);
	assert_ptr_equal(ev->param.ud.private_data, &ctx);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	rdma_destroy_qp(f->id);
}

/* Destroy without leave: memberships dropped, the QP detached, pending
 * events discarded (the kernel's cma_leave_mc_groups()). */
static void test_destroy_leaves_groups(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_id *other = tcm_bound_id(f->ch, NULL, RDMA_PS_UDP);
	struct ibv_comp_channel *sch, *rch;
	struct ibv_cq *scq, *rcq;
	struct rdma_cm_event *ev;
	struct ibv_qp *qp;

	tcm_create_qp(f->id);
	qp = f->id->qp;
	scq = f->id->send_cq;
	rcq = f->id->recv_cq;
	sch = f->id->send_cq_channel;
	rch = f->id->recv_cq_channel;
	assert_int_equal(tcm_join(f->id, "239.3.0.6", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	assert_int_equal(rdma_ack_cm_event(tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN)), 0);
	assert_true(tcm_attached(qp, "239.3.0.6"));
	assert_int_equal(tcm_join(f->id, "239.3.0.7", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	assert_int_equal(tcm_join(other, "239.3.0.7", RDMA_MC_JOIN_FLAG_FULLMEMBER, other), 0);
	assert_int_equal(tcm_members("239.3.0.7"), 2);

	/* The QP outlives the id here: the id's destroy detaches it. */
	assert_int_equal(rdma_destroy_id(f->id), 0);
	f->id = NULL;
	assert_false(tcm_attached(qp, "239.3.0.6"));
	assert_int_equal(tcm_members("239.3.0.6"), 0);
	assert_int_equal(tcm_members("239.3.0.7"), 1);
	/* Only the other id's event is left. */
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_ptr_equal(ev->id, other);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_false(tcm_readable(f->ch, 50));
	/* What the CM made for the QP is the application's now (as librdmacm). */
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(scq), 0);
	assert_int_equal(ibv_destroy_cq(rcq), 0);
	assert_int_equal(ibv_destroy_comp_channel(sch), 0);
	assert_int_equal(ibv_destroy_comp_channel(rch), 0);
	assert_int_equal(rdma_destroy_id(other), 0);
	assert_int_equal(tcm_members("239.3.0.7"), 0);
}

/* Destroy while the application holds unacked events of the id: the
 * events stay readable until acked; no crash, no leak (ASan). */
static void test_destroy_with_held_events(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_event *ev1, *ev2;
	int c1, c2;

	assert_int_equal(tcm_join(f->id, "239.3.0.8", RDMA_MC_JOIN_FLAG_FULLMEMBER, &c1), 0);
	assert_int_equal(tcm_join(f->id, "239.3.0.9", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, &c2),
			 0);
	ev1 = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	ev2 = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_int_equal(rdma_destroy_id(f->id), 0);
	f->id = NULL;
	assert_int_equal(tcm_members("239.3.0.8"), 0);
	/* The id the events point to is still readable memory. */
	assert_ptr_equal(ev1->id, ev2->id);
	assert_int_equal(ev1->id->ps, RDMA_PS_UDP);
	assert_ptr_equal(ev1->param.ud.private_data, &c1);
	assert_ptr_equal(ev2->param.ud.private_data, &c2);
	assert_int_equal(rdma_ack_cm_event(ev2), 0);
	assert_int_equal(rdma_ack_cm_event(ev1), 0);
}

/* Two ids on one group: id1 full member, id2 send-only (observed on rxe, 5). */
static void test_two_ids_membership(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_id *id2 = tcm_bound_id(f->ch, NULL, RDMA_PS_UDP);

	assert_int_equal(tcm_join(f->id, "239.3.0.10", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	assert_int_equal(tcm_join(id2, "239.3.0.10", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL),
			 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(rdma_ack_cm_event(tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN)),
				 0);
	assert_int_equal(tcm_members("239.3.0.10"), 1);
	assert_int_equal(rdma_destroy_id(id2), 0);
	assert_int_equal(tcm_members("239.3.0.10"), 1);
	assert_int_equal(tcm_leave(f->id, "239.3.0.10"), 0);
	assert_int_equal(tcm_members("239.3.0.10"), 0);
}

/* A QP created after the JOIN event was read is not attached; the
 * application attaches it itself, and the leave detaches it (librdmacm). */
static void test_manual_attach(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_event *ev;

	assert_int_equal(tcm_join(f->id, "239.3.0.11", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	tcm_create_qp(f->id);
	assert_false(tcm_attached(f->id->qp, "239.3.0.11"));
	assert_int_equal(ibv_attach_mcast(f->id->qp, &ev->param.ud.ah_attr.grh.dgid,
					  ev->param.ud.ah_attr.dlid),
			 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_true(tcm_attached(f->id->qp, "239.3.0.11"));
	assert_int_equal(tcm_leave(f->id, "239.3.0.11"), 0);
	assert_false(tcm_attached(f->id->qp, "239.3.0.11"));
	rdma_destroy_qp(f->id);
}

/* rdma_destroy_qp on an attached QP detaches it first (docs/design.md). */
static void test_destroy_qp_attached(void **state)
{
	struct fixture *f = *state;

	tcm_create_qp(f->id);
	assert_int_equal(tcm_join(f->id, "239.3.0.12", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	assert_int_equal(rdma_ack_cm_event(tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN)), 0);
	assert_true(tcm_attached(f->id->qp, "239.3.0.12"));
	rdma_destroy_qp(f->id);
	assert_null(f->id->qp);
	assert_null(f->id->send_cq);
	assert_null(f->id->recv_cq);
	/* The join is still there; its leave drops the membership. */
	assert_int_equal(tcm_members("239.3.0.12"), 1);
	assert_int_equal(tcm_leave(f->id, "239.3.0.12"), 0);
	assert_int_equal(tcm_members("239.3.0.12"), 0);
}

/* ---- synchronous ids (librdmacm's ucma_complete(), rdma_destroy_id()) ---- */

static struct rdma_cm_id *sync_joined(const char *group)
{
	struct sockaddr_in lo = tcm_sin(LOOPBACK, 0);
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(id, SA(&lo)), 0);
	assert_int_equal(tcm_join(id, group, RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	assert_non_null(id->event);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	return id;
}

/* Case 11: the application acks id->event and clears it. */
static void test_sync_case11(void **state)
{
	struct rdma_cm_id *id = sync_joined("239.3.1.11");

	assert_int_equal(rdma_ack_cm_event(id->event), 0);
	id->event = NULL;
	assert_int_equal(tcm_leave(id, "239.3.1.11"), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(tcm_members("239.3.1.11"), 0);
}

/* Case 16: leave without acking id->event (librdmacm hangs forever). */
static void test_sync_case16(void **state)
{
	struct rdma_cm_id *id = sync_joined("239.3.1.16");

	assert_int_equal(tcm_leave(id, "239.3.1.16"), 0);
	assert_int_equal(tcm_members("239.3.1.16"), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
}

/* Case 17: destroy without leave, event unacked. */
static void test_sync_case17(void **state)
{
	struct rdma_cm_id *id = sync_joined("239.3.1.17");

	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(tcm_members("239.3.1.17"), 0);
}

/* Case 18: the application acks id->event but leaves the pointer
 * (librdmacm double-frees in destroy). */
static void test_sync_case18(void **state)
{
	struct rdma_cm_id *id = sync_joined("239.3.1.18");
	struct rdma_cm_event *ev = id->event;

	assert_int_equal(rdma_ack_cm_event(ev), 0);
	id->event = ev; /* stale pointer left behind, as the program did */
	assert_int_equal(tcm_leave(id, "239.3.1.18"), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
}

/* A second blocking call acks the previous id->event itself. */
static void test_sync_next_call_acks(void **state)
{
	struct rdma_cm_id *id = sync_joined("239.3.1.20");

	assert_int_equal(tcm_join(id, "239.3.1.21", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, id), 0);
	assert_ptr_equal(id->event->param.ud.private_data, id);
	assert_int_equal(tcm_leave(id, "239.3.1.20"), 0);
	assert_int_equal(tcm_leave(id, "239.3.1.21"), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_leave_not_joined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leave_memcmp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leave_before_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leave_with_held_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_leaves_groups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_with_held_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_ids_membership, setup, teardown),
		cmocka_unit_test_setup_teardown(test_manual_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_qp_attached, setup, teardown),
		cmocka_unit_test(test_sync_case11),
		cmocka_unit_test(test_sync_case16),
		cmocka_unit_test(test_sync_case17),
		cmocka_unit_test(test_sync_case18),
		cmocka_unit_test(test_sync_next_call_acks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
