/* SPDX-License-Identifier: MIT */
/*
 * test_cm_join.c - rdma_join_multicast(_ex): the errno table of
 * docs/design.md, "Observed on rxe" 1 and 3 (librdmacm/cma.c
 * rdma_join_multicast_ex(); the kernel's rdma_join_multicast() and
 * cma_iboe_join_multicast()) and the JOIN event's fields (item 2 there).
 */
#include <unistd.h>

#include "test_cm_util.h"
#include "link/roce/roce.h"

struct fixture {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id; /* UD, bound to 127.0.0.1 */
};

static int setup(void **state)
{
	static struct fixture f;

	f.ch = rdma_create_event_channel();
	if (!f.ch)
		return -1;
	f.id = tcm_bound_id(f.ch, &f, RDMA_PS_UDP);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(rdma_destroy_id(f->id), 0);
	assert_false(tcm_readable(f->ch, 0));
	rdma_destroy_event_channel(f->ch);
	return 0;
}

static void expect_join_ex(struct rdma_cm_id *id, uint32_t mask, uint32_t flags,
			   struct sockaddr *addr, int err)
{
	struct rdma_cm_join_mc_attr_ex attr = {.comp_mask = mask, .join_flags = flags, .addr = addr};

	errno = 0;
	assert_int_equal(rdma_join_multicast_ex(id, &attr, NULL), -1);
	assert_int_equal(errno, err);
}

/* Observed on rxe, 1: argument checks, in order, with no event and no state. */
static void test_join_ex_arg_checks(void **state)
{
	struct fixture *f = *state;
	const uint32_t both = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	struct sockaddr_in g = tcm_sin("239.2.0.1", 0);
	struct rdma_cm_event *ev;

	/* Unknown comp_mask bits first, even with bad flags and no address. */
	expect_join_ex(f->id, 0x7, 0, SA(&g), EOPNOTSUPP);
	expect_join_ex(f->id, 0xffffffff, 0, SA(&g), EOPNOTSUPP);
	expect_join_ex(f->id, 0x4, 7, NULL, EOPNOTSUPP);
	assert_int_equal(EOPNOTSUPP, 95);
	/* Missing mask bits. */
	expect_join_ex(f->id, 0, 0, SA(&g), EINVAL);
	expect_join_ex(f->id, RDMA_CM_JOIN_MC_ATTR_ADDRESS, 0, SA(&g), EINVAL);
	expect_join_ex(f->id, RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS, 0, SA(&g), EINVAL);
	/* Reserved or unknown join flags. */
	expect_join_ex(f->id, both, 5, SA(&g), EINVAL);
	expect_join_ex(f->id, both, RDMA_MC_JOIN_FLAG_RESERVED, SA(&g), EINVAL);
	expect_join_ex(f->id, both, 0xffff, SA(&g), EINVAL);
	/* NULL address or unknown family. */
	expect_join_ex(f->id, both, 0, NULL, EINVAL);
	struct sockaddr_storage unix_addr = {.ss_family = AF_UNIX};
	expect_join_ex(f->id, both, 0, SA(&unix_addr), EINVAL);

	assert_false(tcm_readable(f->ch, 50));
	errno = 0;
	assert_int_equal(tcm_leave(f->id, "239.2.0.1"), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);

	/* The id can still join afterwards (observed on rxe, 1). */
	assert_int_equal(tcm_join(f->id, "239.2.0.1", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(tcm_leave(f->id, "239.2.0.1"), 0);

	/* Legacy call: only the address check. */
	errno = 0;
	assert_int_equal(rdma_join_multicast(f->id, NULL, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_join_multicast(f->id, SA(&unix_addr), NULL), -1);
	assert_int_equal(errno, EINVAL);
}

/* Observed on rxe, 3: a fresh (unbound) id, and an id bound to the wildcard. */
static void test_join_unbound(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in g = tcm_sin("239.2.0.2", 0), any = tcm_sin("0.0.0.0", 0);
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(f->ch, &id, NULL, RDMA_PS_UDP), 0);
	for (int pass = 0; pass < 2; pass++) {
		errno = 0;
		assert_int_equal(tcm_join(id, "239.2.0.2", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(tcm_join(id, "239.2.0.2", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL),
				 -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(rdma_join_multicast(id, SA(&g), NULL), -1);
		assert_int_equal(errno, EINVAL);
		errno = 0;
		assert_int_equal(tcm_leave(id, "239.2.0.2"), -1);
		assert_int_equal(errno, EADDRNOTAVAIL);
		/* Second pass: bound to 0.0.0.0, still no device. */
		if (pass == 0) {
			assert_int_equal(rdma_bind_addr(id, SA(&any)), 0);
			assert_null(id->verbs);
		}
	}
	assert_false(tcm_readable(f->ch, 50));
	assert_int_equal(rdma_destroy_id(id), 0);
}

static void test_join_bad_groups(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_ib sib;
	struct rdma_cm_event *ev;

	/* 0.0.0.0 and the rest of 0.0.0.0/8 (cma_zero_addr). */
	errno = 0;
	assert_int_equal(tcm_join(f->id, "0.0.0.0", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(tcm_join(f->id, "0.1.2.3", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL),
			 -1);
	assert_int_equal(errno, EINVAL);

	/* AF_IB on RoCE: the kernel's ENOTSUPP, 524. */
	memset(&sib, 0, sizeof(sib));
	sib.sib_family = AF_IB;
	sib.sib_addr.sib_addr8[0] = 0xff;
	sib.sib_addr.sib_addr8[1] = 0x12;
	sib.sib_addr.sib_addr8[15] = 1;
	errno = 0;
	assert_int_equal(rdma_join_multicast(f->id, SA(&sib), NULL), -1);
	assert_int_equal(errno, 524);
	/* An all-zero AF_IB address is the zero address: EINVAL first. */
	memset(&sib.sib_addr, 0, sizeof(sib.sib_addr));
	errno = 0;
	assert_int_equal(rdma_join_multicast(f->id, SA(&sib), NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_false(tcm_readable(f->ch, 50));

	/* Netdev MTU too small for RoCE headers + IB MTU 256 (iboe_get_mtu): EINVAL. */
	struct umc_device *dev = tcm_lo_dev(NULL);
	unsigned mtu = to_roce_port(dev)->netdev_mtu;

	to_roce_port(dev)->netdev_mtu = 351;
	errno = 0;
	assert_int_equal(tcm_join(f->id, "239.2.0.13", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL),
			 -1);
	assert_int_equal(errno, EINVAL);
	to_roce_port(dev)->netdev_mtu = 352;
	assert_int_equal(tcm_join(f->id, "239.2.0.13", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL),
			 0);
	to_roce_port(dev)->netdev_mtu = mtu;
	assert_int_equal(rdma_ack_cm_event(tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN)), 0);
	assert_int_equal(tcm_leave(f->id, "239.2.0.13"), 0);

	/* A unicast "group": the join succeeds; with a QP the attach at
	 * retrieval fails and the event becomes MULTICAST_ERROR, status -1,
	 * errno EINVAL, ud fields still filled (observed on rxe, 3). */
	tcm_create_qp(f->id);
	assert_int_equal(tcm_join(f->id, "127.0.0.99", RDMA_MC_JOIN_FLAG_FULLMEMBER, f), 0);
	assert_true(tcm_readable(f->ch, 2000));
	errno = 0;
	assert_int_equal(rdma_get_cm_event(f->ch, &ev), 0);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ev->event, RDMA_CM_EVENT_MULTICAST_ERROR);
	assert_int_equal(ev->status, -1);
	assert_ptr_equal(ev->param.ud.private_data, f);
	assert_int_equal(ev->param.ud.qp_num, 0xffffff);
	assert_int_equal(ev->param.ud.qkey, RDMA_UDP_QKEY);
	assert_int_equal(ev->param.ud.ah_attr.grh.dgid.raw[15], 99);
	assert_int_equal(ev->param.ud.ah_attr.grh.dgid.raw[10], 0xff);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	/* The mc stays listed: the leave succeeds. */
	assert_int_equal(tcm_leave(f->id, "127.0.0.99"), 0);
	rdma_destroy_qp(f->id);
}

/* Observed on rxe, 3: an RDMA_PS_TCP (RC) id cannot join. */
static void test_join_ps_tcp(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_id *id = tcm_bound_id(f->ch, NULL, RDMA_PS_TCP);

	assert_int_equal(id->qp_type, IBV_QPT_RC);
	errno = 0;
	assert_int_equal(tcm_join(id, "239.2.0.3", RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(id), 0);
}

/* After rdma_resolve_addr the id has a device even before the event is read. */
static void test_join_after_resolve_call(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in src = tcm_sin(LOOPBACK, 0), dst = tcm_sin("239.2.0.4", 0);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(f->ch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_resolve_addr(id, SA(&src), SA(&dst), 2000), 0);
	assert_int_equal(tcm_join(id, "239.2.0.4", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
}

/* Check every field of a RoCE JOIN event (observed on rxe, 2). */
static void check_join_event(struct rdma_cm_event *ev, struct rdma_cm_id *id, void *ctx,
			     const char *group, int sgid_index)
{
	struct sockaddr_in g = tcm_sin(group, 0);
	const struct rdma_ud_param *ud = &ev->param.ud;
	union ibv_gid mgid;

	umc_gid_from_sockaddr(&mgid, SA(&g));
	assert_int_equal(ev->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_int_equal(ev->status, 0);
	assert_ptr_equal(ev->id, id);
	assert_null(ev->listen_id);
	assert_ptr_equal(ud->private_data, ctx);
	assert_int_equal(ud->private_data_len, 0);
	assert_int_equal(ud->qp_num, 0xffffff);
	assert_int_equal(ud->qkey, 0x01234567);
	assert_int_equal(ud->ah_attr.is_global, 1);
	assert_memory_equal(ud->ah_attr.grh.dgid.raw, mgid.raw, 16);
	assert_int_equal(ud->ah_attr.grh.sgid_index, sgid_index);
	assert_int_equal(ud->ah_attr.grh.hop_limit, 64);
	assert_int_equal(ud->ah_attr.grh.traffic_class, 0);
	assert_int_equal(ud->ah_attr.grh.flow_label, 0);
	assert_int_equal(ud->ah_attr.dlid, 0);
	assert_int_equal(ud->ah_attr.sl, 0);
	assert_int_equal(ud->ah_attr.src_path_bits, 0);
	assert_int_equal(ud->ah_attr.static_rate, 0);
	assert_int_equal(ud->ah_attr.port_num, 1);
}

/* MGID of 239.2.1.1 is ::ffff:239.2.1.1. */
static void test_mgid_mapping(void **state)
{
	static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 2, 1, 1};
	struct fixture *f = *state;
	struct rdma_cm_event *ev;

	assert_int_equal(tcm_join(f->id, "239.2.1.1", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL),
			 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_memory_equal(ev->param.ud.ah_attr.grh.dgid.raw, want, 16);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(tcm_leave(f->id, "239.2.1.1"), 0);
}

/* Full member and send-only on a bound id, with and without a QP. */
static void test_event_fields_bound(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_event *ev;
	int gi;

	tcm_lo_dev(&gi);
	assert_non_null(f->id->verbs);
	assert_non_null(f->id->pd);
	assert_int_equal(f->id->port_num, 1);

	for (int qp = 0; qp < 2; qp++) {
		if (qp)
			tcm_create_qp(f->id);
		assert_int_equal(tcm_join(f->id, "239.2.0.5", RDMA_MC_JOIN_FLAG_FULLMEMBER, &gi), 0);
		/* The membership is taken by the call, the attach waits for the event. */
		assert_int_equal(tcm_members("239.2.0.5"), 1);
		if (qp)
			assert_false(tcm_attached(f->id->qp, "239.2.0.5"));
		ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
		check_join_event(ev, f->id, &gi, "239.2.0.5", gi);
		if (qp)
			assert_true(tcm_attached(f->id->qp, "239.2.0.5"));
		assert_int_equal(rdma_ack_cm_event(ev), 0);

		assert_int_equal(
			tcm_join(f->id, "239.2.0.6", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, f), 0);
		assert_int_equal(tcm_members("239.2.0.6"), 0);
		ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
		check_join_event(ev, f->id, f, "239.2.0.6", gi);
		if (qp)
			assert_false(tcm_attached(f->id->qp, "239.2.0.6"));
		assert_int_equal(rdma_ack_cm_event(ev), 0);

		assert_int_equal(tcm_leave(f->id, "239.2.0.5"), 0);
		assert_int_equal(tcm_leave(f->id, "239.2.0.6"), 0);
		assert_int_equal(tcm_members("239.2.0.5"), 0);
		if (qp)
			assert_false(tcm_attached(f->id->qp, "239.2.0.5"));
	}
	rdma_destroy_qp(f->id);
}

/* The mckey way: resolve(src, group), ADDR_RESOLVED, QP, join. */
static void test_event_fields_resolved(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in src = tcm_sin(LOOPBACK, 0), dst = tcm_sin("239.2.0.7", 0);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int gi;

	tcm_lo_dev(&gi);
	for (uint32_t flags = 0; flags < 2; flags++) {
		assert_int_equal(rdma_create_id(f->ch, &id, NULL, RDMA_PS_UDP), 0);
		assert_int_equal(rdma_resolve_addr(id, SA(&src), SA(&dst), 2000), 0);
		ev = tcm_expect(f->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
		assert_int_equal(ev->status, 0);
		assert_int_equal(rdma_ack_cm_event(ev), 0);
		tcm_create_qp(id);
		assert_int_equal(tcm_join(id, "239.2.0.7", flags, id), 0);
		ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
		check_join_event(ev, id, id, "239.2.0.7", gi);
		assert_int_equal(tcm_attached(id->qp, "239.2.0.7"),
				 flags == RDMA_MC_JOIN_FLAG_FULLMEMBER);
		assert_int_equal(rdma_ack_cm_event(ev), 0);
		assert_int_equal(tcm_leave(id, "239.2.0.7"), 0);
		assert_false(tcm_attached(id->qp, "239.2.0.7"));
		rdma_destroy_qp(id);
		assert_int_equal(rdma_destroy_id(id), 0);
	}
}

/* Bound to ::1, joining an IPv4 group: sgid_index is ::1's (observed on rxe, 2). */
static void test_event_sgid_index_v6_source(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in6 lo6 = tcm_sin6("::1");
	struct umc_device *dev;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int gi;

	if (umc_dev_by_addr(SA(&lo6), &dev, &gi))
		skip();
	assert_int_equal(rdma_create_id(f->ch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(id, SA(&lo6)), 0);
	assert_int_equal(tcm_join(id, "239.2.0.8", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	check_join_event(ev, id, NULL, "239.2.0.8", gi);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
}

/*
 * IPv6 groups: a documented extension (Linux RoCEv2 gives 524).  Loopback
 * has no IPv6 multicast route, so the join fails with ENODEV rather than
 * every send vanishing (delivery is tested in integ/netns_ipv6).
 */
static void test_join_ipv6_extension(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_in6 g6 = tcm_sin6("ff05::239:2:9");
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
		.addr = SA(&g6),
	};
	struct rdma_cm_event *ev;
	union ibv_gid mgid;

	struct sockaddr_in lo = tcm_sin(LOOPBACK, 0); /* the fixture's id is bound to it */
	struct umc_device *dev;
	int gi;

	memcpy(mgid.raw, &g6.sin6_addr, 16);
	assert_int_equal(umc_dev_by_addr(SA(&lo), &dev, &gi), 0);
	if (dev->link->mcast_route(dev, &mgid)) {
		errno = 0;
		assert_int_equal(rdma_join_multicast_ex(f->id, &attr, f), -1);
		assert_int_equal(errno, ENODEV);
		errno = 0;
		assert_int_equal(rdma_leave_multicast(f->id, SA(&g6)), -1);
		assert_int_equal(errno, EADDRNOTAVAIL);
		return;
	}
	assert_int_equal(rdma_join_multicast_ex(f->id, &attr, f), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_memory_equal(ev->param.ud.ah_attr.grh.dgid.raw, &g6.sin6_addr, 16);
	assert_int_equal(ev->param.ud.ah_attr.is_global, 1);
	assert_int_equal(ev->param.ud.qp_num, 0xffffff);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_leave_multicast(f->id, SA(&g6)), 0);
	errno = 0;
	assert_int_equal(rdma_leave_multicast(f->id, SA(&g6)), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
}

/* Observed on rxe, 4: the same address twice; two events in join order. */
static void test_join_twice(void **state)
{
	struct fixture *f = *state;
	struct rdma_cm_event *ev;
	int c1, c2;

	tcm_create_qp(f->id);
	assert_int_equal(tcm_join(f->id, "239.2.0.10", RDMA_MC_JOIN_FLAG_FULLMEMBER, &c1), 0);
	assert_int_equal(tcm_join(f->id, "239.2.0.10", RDMA_MC_JOIN_FLAG_FULLMEMBER, &c2), 0);
	assert_int_equal(tcm_members("239.2.0.10"), 2);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_ptr_equal(ev->param.ud.private_data, &c1);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	ev = tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_ptr_equal(ev->param.ud.private_data, &c2);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_true(tcm_attached(f->id->qp, "239.2.0.10"));

	/* Deliberate: the QP stays attached until the last join leaves. */
	assert_int_equal(tcm_leave(f->id, "239.2.0.10"), 0);
	assert_int_equal(tcm_members("239.2.0.10"), 1);
	assert_true(tcm_attached(f->id->qp, "239.2.0.10"));
	assert_int_equal(tcm_leave(f->id, "239.2.0.10"), 0);
	assert_int_equal(tcm_members("239.2.0.10"), 0);
	assert_false(tcm_attached(f->id->qp, "239.2.0.10"));
	errno = 0;
	assert_int_equal(tcm_leave(f->id, "239.2.0.10"), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);

	/* FULLMEMBER then SENDONLY: leave #1 removes the send-only join (LIFO). */
	assert_int_equal(tcm_join(f->id, "239.2.0.11", RDMA_MC_JOIN_FLAG_FULLMEMBER, &c1), 0);
	assert_int_equal(tcm_join(f->id, "239.2.0.11", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, &c2),
			 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(rdma_ack_cm_event(tcm_expect(f->ch, RDMA_CM_EVENT_MULTICAST_JOIN)),
				 0);
	assert_int_equal(tcm_members("239.2.0.11"), 1);
	assert_int_equal(tcm_leave(f->id, "239.2.0.11"), 0);
	assert_int_equal(tcm_members("239.2.0.11"), 1);
	assert_true(tcm_attached(f->id->qp, "239.2.0.11"));
	assert_int_equal(tcm_leave(f->id, "239.2.0.11"), 0);
	assert_int_equal(tcm_members("239.2.0.11"), 0);
	assert_false(tcm_attached(f->id->qp, "239.2.0.11"));
	rdma_destroy_qp(f->id);
}

/* Synchronous id: join waits for the event and leaves it in id->event. */
static void test_join_sync_id(void **state)
{
	struct sockaddr_in lo = tcm_sin(LOOPBACK, 0);
	struct rdma_cm_id *id;
	int gi, ctx;

	tcm_lo_dev(&gi);
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), 0);
	assert_non_null(id->channel);
	assert_int_equal(rdma_bind_addr(id, SA(&lo)), 0);
	tcm_create_qp(id);
	assert_int_equal(tcm_join(id, "239.2.0.12", RDMA_MC_JOIN_FLAG_FULLMEMBER, &ctx), 0);
	assert_non_null(id->event);
	check_join_event(id->event, id, &ctx, "239.2.0.12", gi);
	assert_true(tcm_attached(id->qp, "239.2.0.12"));
	/* A unicast group: the attach fails; librdmacm's ucma_complete turns
	 * status -1 into errno 1 (EPERM). */
	errno = 0;
	assert_int_equal(tcm_join(id, "127.0.0.98", RDMA_MC_JOIN_FLAG_FULLMEMBER, &ctx), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_MULTICAST_ERROR);
	assert_int_equal(tcm_leave(id, "127.0.0.98"), 0);
	assert_int_equal(tcm_leave(id, "239.2.0.12"), 0);
	rdma_destroy_qp(id);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(tcm_members("239.2.0.12"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_join_ex_arg_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_unbound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_bad_groups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_ps_tcp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_after_resolve_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mgid_mapping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_fields_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_fields_resolved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_sgid_index_v6_source, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_ipv6_extension, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join_twice, setup, teardown),
		cmocka_unit_test(test_join_sync_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
