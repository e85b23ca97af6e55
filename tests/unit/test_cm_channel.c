/* SPDX-License-Identifier: MIT */
/*
 * test_cm_channel.c - event channels: rdma_event_str, poll(2) on the fd,
 * O_NONBLOCK, NULL arguments, events consumed by a second thread.
 */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "test_cm_util.h"

static void test_event_str(void **state)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED",	   "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED",	   "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST",   "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR",	   "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED",	   "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED",	   "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN",	   "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE",	   "RDMA_CM_EVENT_TIMEWAIT_EXIT",
		"RDMA_CM_EVENT_ADDRINFO_RESOLVED", "RDMA_CM_EVENT_ADDRINFO_ERROR",
	};

	for (int i = 0; i < 18; i++)
		assert_string_equal(rdma_event_str(i), names[i]);
	assert_int_equal(RDMA_CM_EVENT_MULTICAST_JOIN, 12);
	assert_string_equal(rdma_event_str(RDMA_CM_EVENT_USER), "UNKNOWN EVENT");
	assert_string_equal(rdma_event_str(RDMA_CM_EVENT_INTERNAL), "UNKNOWN EVENT");
	assert_string_equal(rdma_event_str(20), "UNKNOWN EVENT");
	assert_string_equal(rdma_event_str(1000), "UNKNOWN EVENT");
	assert_string_equal(rdma_event_str((enum rdma_cm_event_type)-1), "UNKNOWN EVENT");
}

static void test_null_args(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;

	assert_non_null(ch);
	errno = 0;
	assert_int_equal(rdma_get_cm_event(ch, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_get_cm_event(NULL, &ev), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_ack_cm_event(NULL), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(NULL);
}

static void test_poll_and_nonblock(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev = NULL;
	struct rdma_cm_id *id;

	assert_non_null(ch);
	assert_true(ch->fd >= 0);
	assert_false(tcm_readable(ch, 0));

	assert_int_equal(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(rdma_get_cm_event(ch, &ev), -1);
	assert_int_equal(errno, EAGAIN);

	/* Two joins: readable until both events are retrieved. */
	id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	assert_int_equal(tcm_join(id, "239.1.0.1", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	assert_int_equal(tcm_join(id, "239.1.0.2", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	assert_true(tcm_readable(ch, 0));
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	assert_int_equal(ev->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_true(tcm_readable(ch, 0));
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_false(tcm_readable(ch, 0));
	errno = 0;
	assert_int_equal(rdma_get_cm_event(ch, &ev), -1);
	assert_int_equal(errno, EAGAIN);

	/* A leave discards the undelivered event and its readiness. */
	assert_int_equal(tcm_join(id, "239.1.0.3", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	assert_true(tcm_readable(ch, 0));
	assert_int_equal(tcm_leave(id, "239.1.0.3"), 0);
	assert_false(tcm_readable(ch, 0));

	assert_int_equal(tcm_leave(id, "239.1.0.1"), 0);
	assert_int_equal(tcm_leave(id, "239.1.0.2"), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* Many events queued at once: every one is delivered, in order. */
static void test_many_events(void **state)
{
	enum { N = 2000 };
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	struct rdma_cm_event *ev;

	for (uintptr_t i = 0; i < N; i++)
		assert_int_equal(tcm_join(id, "239.1.0.9", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
					  (void *)(i + 1)),
				 0);
	for (uintptr_t i = 0; i < N; i++) {
		ev = tcm_expect(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
		assert_ptr_equal(ev->param.ud.private_data, (void *)(i + 1));
		assert_int_equal(rdma_ack_cm_event(ev), 0);
	}
	assert_false(tcm_readable(ch, 0));
	for (int i = 0; i < N; i++)
		assert_int_equal(tcm_leave(id, "239.1.0.9"), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

struct getter {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *counted;
	int want, got;
};

static void *getter_main(void *arg)
{
	struct getter *g = arg;
	struct rdma_cm_event *ev;

	while (g->got < g->want) {
		if (rdma_get_cm_event(g->ch, &ev))
			break;
		if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN && ev->id == g->counted)
			g->got++;
		rdma_ack_cm_event(ev);
	}
	return NULL;
}

/* mckey's shape: a thread blocked in rdma_get_cm_event while the main
 * thread joins, leaves and destroys. */
static void test_blocked_getter_thread(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	struct rdma_cm_id *b = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	struct getter g = {.ch = ch, .counted = b, .want = 100};
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, getter_main, &g), 0);
	for (int i = 0; i < g.want; i++) {
		assert_int_equal(tcm_join(a, "239.1.0.4", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
		assert_int_equal(tcm_join(b, "239.1.0.4", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
		/* Events not yet retrieved are discarded by the leave; rejoin. */
		while (tcm_leave(a, "239.1.0.4") == 0)
			;
		assert_int_equal(tcm_join(a, "239.1.0.4", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	}
	/* b's joins are never left: each of their events is delivered. */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(g.got, g.want);
	assert_int_equal(rdma_destroy_id(a), 0);
	assert_int_equal(rdma_destroy_id(b), 0);
	assert_int_equal(tcm_members("239.1.0.4"), 0);
	rdma_destroy_event_channel(ch);
}

/* An id outliving its channel: later events are dropped, nothing leaks. */
static void test_channel_destroyed_first(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);

	assert_int_equal(tcm_join(id, "239.1.0.5", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	rdma_destroy_event_channel(ch);
	assert_int_equal(tcm_join(id, "239.1.0.6", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_str),
		cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_poll_and_nonblock),
		cmocka_unit_test(test_many_events),
		cmocka_unit_test(test_blocked_getter_thread),
		cmocka_unit_test(test_channel_destroyed_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
