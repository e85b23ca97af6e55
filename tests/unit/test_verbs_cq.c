// SPDX-License-Identifier: MIT
/*
 * test_verbs_cq.c - completion channels with many CQs.
 *
 * Reference: ibv_get_cq_event(3) / libibverbs: the channel fd is readable
 * while a CQ event is waiting on the channel, so an application may
 * poll(2) it and then call ibv_get_cq_event without blocking; this holds
 * for any number of CQs sharing one channel.
 *
 * The events are raised without datagrams: each CQ's QP has one receive
 * posted and is moved to the error state, which completes that receive
 * with IBV_WC_WR_FLUSH_ERR on the armed CQ (IBA 10.3.1, error state).
 */
#include "verbs_util.h"

enum { NCQ = 1000 };

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = poll(&p, 1, 0);

	assert_true(n >= 0);
	return n == 1 && (p.revents & POLLIN);
}

static void test_thousand_cqs_one_channel(void **state)
{
	struct t_env e;
	struct ibv_comp_channel *ch;
	static struct ibv_cq *cq[NCQ];
	static struct ibv_qp *qp[NCQ];
	static bool seen[NCQ];
	static uint8_t buf[64];
	struct ibv_mr *mr;

	t_env_open(&e, 0, false);
	ch = ibv_create_comp_channel(e.ctx);
	assert_non_null(ch);
	mr = ibv_reg_mr(e.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_false(readable(ch->fd));
	for (int i = 0; i < NCQ; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_UD,
			.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
				.max_recv_sge = 1},
		};
		struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = T_QKEY};
		struct ibv_sge sge = {(uintptr_t)buf, sizeof(buf), mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;

		cq[i] = ibv_create_cq(e.ctx, 2, &seen[i], ch, 0);
		assert_non_null(cq[i]);
		ia.send_cq = ia.recv_cq = cq[i];
		qp[i] = ibv_create_qp(e.pd, &ia);
		assert_non_null(qp[i]);
		assert_int_equal(ibv_modify_qp(qp[i], &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
								    IBV_QP_PORT | IBV_QP_QKEY),
				 0);
		assert_int_equal(ibv_post_recv(qp[i], &wr, &bad), 0);
		assert_int_equal(ibv_req_notify_cq(cq[i], 0), 0);
	}
	assert_false(readable(ch->fd));
	/* One event per CQ: each flush completes on an armed CQ. */
	for (int i = 0; i < NCQ; i++) {
		struct ibv_qp_attr qa = {.qp_state = IBV_QPS_ERR};

		assert_int_equal(ibv_modify_qp(qp[i], &qa, IBV_QP_STATE), 0);
		assert_true(readable(ch->fd));
	}
	/* Readable before every retrieval, each CQ's event exactly once. */
	for (int got = 0; got < NCQ; got++) {
		struct ibv_cq *ev_cq = NULL;
		void *ctx = NULL;

		if (!readable(ch->fd))
			fail_msg("fd not readable with %d of %d events left", NCQ - got, NCQ);
		alarm(10);
		assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ctx), 0);
		alarm(0);
		assert_non_null(ctx);
		assert_false(*(bool *)ctx);
		*(bool *)ctx = true;
		assert_ptr_equal(ev_cq->cq_context, ctx);
		ibv_ack_cq_events(ev_cq, 1);
	}
	for (int i = 0; i < NCQ; i++)
		assert_true(seen[i]);
	/* All taken: not readable, and a non-blocking get says EAGAIN. */
	assert_false(readable(ch->fd));
	assert_int_equal(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	{
		struct ibv_cq *ev_cq;
		void *ctx;

		errno = 0;
		assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ctx), -1);
		assert_int_equal(errno, EAGAIN);
	}
	/* Each CQ holds its flushed receive. */
	for (int i = 0; i < NCQ; i++) {
		struct ibv_wc wc[2];

		assert_int_equal(ibv_poll_cq(cq[i], 2, wc), 1);
		assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[0].wr_id, (uint64_t)i);
	}
	/* Re-armed, one more event makes it readable again, and only until it is taken. */
	{
		struct ibv_qp_attr qa = {.qp_state = IBV_QPS_ERR};
		struct ibv_sge sge = {(uintptr_t)buf, sizeof(buf), mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
		struct ibv_cq *ev_cq;
		struct ibv_wc wc;
		void *ctx;

		assert_int_equal(ibv_req_notify_cq(cq[7], 0), 0);
		assert_int_equal(ibv_modify_qp(qp[7], &qa, IBV_QP_STATE), 0);
		assert_false(readable(ch->fd)); /* armed, nothing completed yet */
		assert_int_equal(ibv_post_recv(qp[7], &wr, &bad), 0); /* flushed at once */
		assert_true(readable(ch->fd));
		assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ctx), 0);
		assert_ptr_equal(ev_cq, cq[7]);
		ibv_ack_cq_events(ev_cq, 1);
		assert_false(readable(ch->fd));
		assert_int_equal(ibv_poll_cq(cq[7], 1, &wc), 1);
		assert_int_equal(wc.wr_id, 1);
	}
	for (int i = 0; i < NCQ; i++) {
		assert_int_equal(ibv_destroy_qp(qp[i]), 0);
		assert_int_equal(ibv_destroy_cq(cq[i]), 0);
	}
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	t_env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thousand_cqs_one_channel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
