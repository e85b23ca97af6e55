/* SPDX-License-Identifier: MIT */
/*
 * test_cm_id.c - rdma_create_id, rdma_bind_addr, rdma_resolve_addr,
 * rdma_create_qp(_ex)/rdma_destroy_qp, rdma_get_devices
 * (librdmacm/cma.c rdma_create_qp_ex(), rdma_bind_addr(), rdma_resolve_addr(),
 * rdma_get_devices()).
 */
#include <fcntl.h>
#include <unistd.h>

#include "test_cm_util.h"

static void test_create_id(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	int ctx;

	assert_int_equal(rdma_create_id(ch, &id, &ctx, RDMA_PS_UDP), 0);
	assert_ptr_equal(id->channel, ch);
	assert_ptr_equal(id->context, &ctx);
	assert_int_equal(id->ps, RDMA_PS_UDP);
	assert_int_equal(id->qp_type, IBV_QPT_UD);
	assert_null(id->verbs);
	assert_null(id->qp);
	assert_null(id->pd);
	assert_null(id->event);
	assert_int_equal(rdma_destroy_id(id), 0);

	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_IPOIB), 0);
	assert_int_equal(id->qp_type, IBV_QPT_UD);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(id->qp_type, IBV_QPT_RC);
	assert_int_equal(rdma_destroy_id(id), 0);

	errno = 0;
	assert_int_equal(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x1234), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_create_id(ch, NULL, NULL, RDMA_PS_UDP), -1);
	assert_int_equal(errno, EINVAL);

	/* Synchronous id: a private channel of its own. */
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), 0);
	assert_non_null(id->channel);
	assert_ptr_not_equal(id->channel, ch);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_bind(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in lo = tcm_sin(LOOPBACK, 0), other = tcm_sin("198.51.100.77", 0);
	struct sockaddr_in any = tcm_sin("0.0.0.0", 0);
	struct sockaddr_storage unix_addr = {.ss_family = AF_UNIX};
	struct umc_device *dev;
	struct rdma_cm_id *id;
	int gi;

	dev = tcm_lo_dev(&gi);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	errno = 0;
	assert_int_equal(rdma_bind_addr(id, NULL), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_bind_addr(id, SA(&unix_addr)), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_bind_addr(id, SA(&other)), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_null(id->verbs);

	assert_int_equal(rdma_bind_addr(id, SA(&lo)), 0);
	assert_non_null(id->verbs);
	assert_ptr_equal(ctx_dev(id->verbs), dev);
	assert_non_null(id->pd);
	assert_ptr_equal(id->pd->context, id->verbs);
	assert_int_equal(id->port_num, 1);
	assert_memory_equal(&id->route.addr.src_sin, &lo, sizeof(lo));
	assert_memory_equal(id->route.addr.addr.ibaddr.sgid.raw, dev->gids[gi].raw, 16);
	assert_int_equal(id->route.addr.addr.ibaddr.pkey, 0xffff);
	assert_false(tcm_readable(ch, 0)); /* bind is synchronous: no event */
	/* Twice: EINVAL (kernel: not IDLE). */
	errno = 0;
	assert_int_equal(rdma_bind_addr(id, SA(&lo)), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(id), 0);

	/* Wildcard: bound, no device. */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(id, SA(&any)), 0);
	assert_null(id->verbs);
	assert_null(id->pd);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_resolve(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in lo = tcm_sin(LOOPBACK, 0), grp = tcm_sin("239.4.0.1", 0);
	struct sockaddr_in6 grp6 = tcm_sin6("ff05::239:4:1");
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int gi;

	tcm_lo_dev(&gi);
	/* Argument checks. */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	errno = 0;
	assert_int_equal(rdma_resolve_addr(id, SA(&lo), NULL, 2000), -1);
	assert_int_equal(errno, EINVAL);
	struct sockaddr_storage unix_addr = {.ss_family = AF_UNIX};
	errno = 0;
	assert_int_equal(rdma_resolve_addr(id, SA(&unix_addr), SA(&grp), 2000), -1);
	assert_int_equal(errno, EINVAL);
	assert_false(tcm_readable(ch, 0));

	/* mckey's way: resolve(src, group). dst is copied at once; the
	 * device fields are set when the event is retrieved. */
	assert_int_equal(rdma_resolve_addr(id, SA(&lo), SA(&grp), 2000), 0);
	assert_memory_equal(&id->route.addr.dst_sin, &grp, sizeof(grp));
	ev = tcm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(ev->status, 0);
	assert_ptr_equal(ev->id, id);
	assert_non_null(id->verbs);
	assert_non_null(id->pd);
	assert_int_equal(id->port_num, 1);
	assert_int_equal(id->route.addr.src_sin.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	assert_int_equal(id->route.addr.addr.ibaddr.dgid.raw[12], 239);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	/* A second resolve: EINVAL. */
	errno = 0;
	assert_int_equal(rdma_resolve_addr(id, SA(&lo), SA(&grp), 2000), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(id), 0);

	/* pyverbs' way: bind, then resolve with the same source. */
	id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	assert_int_equal(rdma_resolve_addr(id, SA(&lo), SA(&grp), 2000), 0);
	assert_int_equal(rdma_ack_cm_event(tcm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED)), 0);
	assert_int_equal(rdma_destroy_id(id), 0);

	/* Bound, then resolve without a source: the bound device is kept. */
	id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	assert_int_equal(rdma_resolve_addr(id, NULL, SA(&grp), 2000), 0);
	assert_int_equal(rdma_ack_cm_event(tcm_expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED)), 0);
	assert_int_equal(id->route.addr.src_sin.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	assert_int_equal(rdma_destroy_id(id), 0);

	/* Source and destination families differ: EINVAL. */
	id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	errno = 0;
	assert_int_equal(rdma_resolve_addr(id, NULL, SA(&grp6), 2000), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(id), 0);

	/* A source that is not local: EADDRNOTAVAIL at once. */
	struct sockaddr_in other = tcm_sin("198.51.100.77", 0);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	errno = 0;
	assert_int_equal(rdma_resolve_addr(id, SA(&other), SA(&grp), 2000), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_int_equal(rdma_destroy_id(id), 0);

	/* Destroy with the ADDR_RESOLVED event still queued: discarded. */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_resolve_addr(id, SA(&lo), SA(&grp), 2000), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	assert_false(tcm_readable(ch, 50));

	/* Synchronous id: resolve waits, the event is in id->event. */
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_resolve_addr(id, SA(&lo), SA(&grp), 2000), 0);
	assert_non_null(id->event);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_non_null(id->verbs);
	assert_int_equal(tcm_join(id, "239.4.0.1", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_int_equal(id->event->param.ud.ah_attr.grh.sgid_index, gi);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_create_qp(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id, *unbound;
	struct ibv_qp_init_attr attr;
	struct ibv_qp_init_attr qattr;
	struct ibv_qp_attr qpa;
	struct ibv_context *ctx2;
	struct ibv_pd *pd2;

	/* No device yet: EINVAL. */
	assert_int_equal(rdma_create_id(ch, &unbound, NULL, RDMA_PS_UDP), 0);
	attr = tcm_ud_attr(2);
	errno = 0;
	assert_int_equal(rdma_create_qp(unbound, NULL, &attr), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(unbound), 0);

	id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	/* A PD of another context: EINVAL. */
	ctx2 = ibv_open_device(id->verbs->device);
	assert_non_null(ctx2);
	pd2 = ibv_alloc_pd(ctx2);
	assert_non_null(pd2);
	errno = 0;
	assert_int_equal(rdma_create_qp(id, pd2, &attr), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(id->qp);
	assert_null(id->send_cq);

	/* Default PD, CM-made CQs and channels with cq_context = id. */
	assert_int_equal(rdma_create_qp(id, NULL, &attr), 0);
	assert_non_null(id->qp);
	assert_ptr_equal(id->qp->pd, id->pd);
	assert_non_null(id->send_cq);
	assert_non_null(id->recv_cq);
	assert_ptr_not_equal(id->send_cq, id->recv_cq);
	assert_non_null(id->send_cq_channel);
	assert_non_null(id->recv_cq_channel);
	assert_ptr_equal(id->send_cq->cq_context, id);
	assert_ptr_equal(id->recv_cq->cq_context, id);
	assert_ptr_equal(id->recv_cq->channel, id->recv_cq_channel);
	assert_ptr_equal(attr.send_cq, id->send_cq); /* written back */
	assert_ptr_equal(attr.recv_cq, id->recv_cq);
	assert_true(attr.cap.max_recv_wr >= 2);
	/* In RTS with RDMA_UDP_QKEY, P_Key index 0, port 1, SQ PSN 0. */
	memset(&qpa, 0, sizeof(qpa));
	assert_int_equal(ibv_query_qp(id->qp, &qpa,
				      IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_SQ_PSN,
				      &qattr),
			 0);
	assert_int_equal(qpa.qp_state, IBV_QPS_RTS);
	assert_int_equal(qpa.qkey, RDMA_UDP_QKEY);
	assert_int_equal(qpa.pkey_index, 0);
	assert_int_equal(qpa.port_num, 1);
	assert_int_equal(qpa.sq_psn, 0);
	/* One QP per id. */
	errno = 0;
	assert_int_equal(rdma_create_qp(id, NULL, &attr), -1);
	assert_int_equal(errno, EINVAL);
	rdma_destroy_qp(id);
	assert_null(id->qp);
	assert_null(id->send_cq);
	assert_null(id->recv_cq);
	assert_null(id->send_cq_channel);
	assert_null(id->recv_cq_channel);
	rdma_destroy_qp(id); /* no QP: nothing happens */

	/* _ex with the application's own CQ and PD: nothing made by the CM. */
	struct ibv_cq *cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	struct ibv_qp_init_attr_ex ax;

	assert_non_null(cq);
	assert_non_null(pd);
	memset(&ax, 0, sizeof(ax));
	ax.send_cq = ax.recv_cq = cq;
	ax.cap = attr.cap;
	ax.qp_type = IBV_QPT_UD;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	assert_int_equal(rdma_create_qp_ex(id, &ax), 0);
	assert_ptr_equal(id->pd, pd);
	assert_null(id->send_cq);
	assert_null(id->recv_cq_channel);
	rdma_destroy_qp(id);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);

	assert_int_equal(rdma_destroy_id(id), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	assert_int_equal(ibv_close_device(ctx2), 0);
	rdma_destroy_event_channel(ch);
}

/* Is @fd an open descriptor? */
static bool fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

/*
 * rdma_destroy_qp while the application holds an unacked event of the
 * CM-made receive CQ: ibv_destroy_cq would be EBUSY, so the CQ and its
 * channel go when that event is acked (nothing leaks; LeakSanitizer and
 * valgrind check the rest).  The send CQ, with no event out, goes at once.
 */
static void test_destroy_qp_unacked_cq_event(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	struct ibv_qp_init_attr attr = tcm_ud_attr(2);
	static uint8_t buf[64];
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_ERR};
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	int rfd, sfd;

	assert_int_equal(rdma_create_qp(id, NULL, &attr), 0);
	struct ibv_mr *mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = {(uintptr_t)buf, sizeof(buf), mr ? mr->lkey : 0};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;

	assert_non_null(mr);
	rfd = id->recv_cq_channel->fd;
	sfd = id->send_cq_channel->fd;
	/* One event on the receive CQ: a flushed receive. */
	assert_int_equal(ibv_req_notify_cq(id->recv_cq, 0), 0);
	assert_int_equal(ibv_post_recv(id->qp, &wr, &bad), 0);
	assert_int_equal(ibv_modify_qp(id->qp, &qa, IBV_QP_STATE), 0);
	alarm(10);
	assert_int_equal(ibv_get_cq_event(id->recv_cq_channel, &ev_cq, &ev_ctx), 0);
	alarm(0);
	assert_ptr_equal(ev_cq, id->recv_cq);
	assert_ptr_equal(ev_ctx, id);

	rdma_destroy_qp(id);
	assert_null(id->qp);
	assert_null(id->recv_cq);
	assert_null(id->recv_cq_channel);
	assert_null(id->send_cq_channel);
	assert_false(fd_open(sfd)); /* the send side went at once */
	assert_true(fd_open(rfd));  /* the receive CQ waits for its event's ack */
	ibv_ack_cq_events(ev_cq, 1);
	assert_false(fd_open(rfd));

	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* RDMA_PS_IPOIB on RoCE: no IPoIB broadcast group gives a Q_Key (kernel
 * cma_set_default_qkey), so the QP cannot be made (ENODEV); the join works
 * and its event carries Q_Key 0. */
static void test_ipoib_on_roce(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = tcm_bound_id(ch, NULL, RDMA_PS_IPOIB);
	struct ibv_qp_init_attr attr;
	struct rdma_cm_event *ev;

	attr = tcm_ud_attr(2);
	errno = 0;
	assert_int_equal(rdma_create_qp(id, NULL, &attr), -1);
	assert_int_equal(errno, ENODEV);
	assert_null(id->qp);
	assert_null(id->send_cq);
	assert_int_equal(tcm_join(id, "239.4.0.2", RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, NULL), 0);
	ev = tcm_expect(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_int_equal(ev->param.ud.qkey, 0);
	assert_int_equal(rdma_ack_cm_event(ev), 0);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

static void test_get_devices(void **state)
{
	struct umc_device **devs;
	struct ibv_context **list;
	int n = -1, ndev = umc_devices(&devs);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = tcm_bound_id(ch, NULL, RDMA_PS_UDP);
	bool found = false;

	list = rdma_get_devices(&n);
	assert_non_null(list);
	assert_int_equal(n, ndev);
	for (int i = 0; i < n; i++) {
		assert_non_null(list[i]);
		if (list[i] == id->verbs) /* the same shared context ids use */
			found = true;
	}
	assert_null(list[n]);
	assert_true(found);
	rdma_free_devices(list);
	list = rdma_get_devices(NULL);
	assert_non_null(list);
	rdma_free_devices(list);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_id),  cmocka_unit_test(test_bind),
		cmocka_unit_test(test_resolve),	   cmocka_unit_test(test_create_qp),
		cmocka_unit_test(test_ipoib_on_roce), cmocka_unit_test(test_get_devices),
		cmocka_unit_test(test_destroy_qp_unacked_cq_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
