// SPDX-License-Identifier: MIT
/*
 * test_verbs_coldpoll.c - a busy poll does not pay a syscall per poll for
 * an endpoint that brings nothing (progress.c "Cold endpoints").
 *
 * A QP attached to a group has two receive endpoints on its device: the
 * group's socket and the port's unicast input.  A program that busy-polls
 * for multicast used to read both on every empty ibv_poll_cq, one syscall
 * each, twice what a raw UDP receiver does.  Counted here, per endpoint
 * (each read is one recvmmsg or epoll_wait): while nothing arrives every
 * endpoint is read on every poll; once the group has delivered
 * UMC_RX_COLD_AFTER packets without the unicast input, the input is read
 * only every UMC_RX_COLD_STRIDE-th poll, and the group's socket still on
 * every one; a pass that is not a busy poll reads both.  A unicast
 * datagram to the cold input is still received and makes it hot again
 * (in a network namespace of the test's own, where this process is the
 * demultiplexer of 127.0.0.1; skipped without one).  A thread woken in
 * ibv_get_cq_event by a group datagram reads the group's socket only; a
 * unicast datagram to the cold input still raises its event.  The first
 * busy poll after such a woken read spares the endpoint it emptied
 * (progress.c "Woken drains"): a datagram that arrived meanwhile comes with
 * the poll after it, and a thread that waits again is woken by it at once.
 * The background receive thread is off (UMC_RX_THREAD=0), so the test's
 * thread makes every read counted.
 */
#include "verbs_util.h"

#include <fcntl.h>
#include <poll.h>

#include "isolate.h"

enum { NPOLL = 100 * UMC_RX_COLD_STRIDE };

static bool isolated;

struct rig {
	struct t_env e;
	struct t_qp s, r;
	struct ibv_comp_channel *ch; /* r's CQ's, or NULL */
	struct umc_rx_ep *grp, *uc;  /* the group's socket, the unicast input */
};

/* The receiver: as t_qp_make, its CQ on a completion channel if @ch. */
static void rig_receiver(struct rig *g, bool ch)
{
	if (ch) {
		g->ch = ibv_create_comp_channel(g->e.ctx);
		assert_non_null(g->ch);
	}
	t_qp_make_ch(&g->r, g->e.pd, 0, T_QKEY, g->ch);
}

static void rig_up(struct rig *g, unsigned group, bool ch)
{
	memset(g, 0, sizeof(*g));
	t_env_open(&g->e, t_group_ip(group), true);
	t_qp_make(&g->s, g->e.pd, 0, T_QKEY);
	rig_receiver(g, ch);
	assert_int_equal(ibv_attach_mcast(g->r.qp, &g->e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(g->e.dev, &g->e.mgid, +1), 0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(t_post_recv(&g->r, (size_t)i * 256, 256, (uint64_t)i), 0);
	assert_int_equal(g->e.dev->rx_nep, 2);
	/* The group's is a socket bound to the group; the input, an epoll set. */
	for (int i = 0; i < 2; i++) {
		struct umc_rx_ep *ep = g->e.dev->rx_eps[i];
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);

		if (getsockname(ep->fd, (struct sockaddr *)&sa, &sl) == 0 &&
		    sa.sin_family == AF_INET && sa.sin_addr.s_addr == htonl(g->e.gip))
			g->grp = ep;
		else
			g->uc = ep;
	}
	assert_non_null(g->grp);
	assert_non_null(g->uc);
}

static void rig_down(struct rig *g)
{
	assert_int_equal(umc_dev_member(g->e.dev, &g->e.mgid, -1), 0);
	assert_int_equal(ibv_detach_mcast(g->r.qp, &g->e.mgid, 0), 0);
	t_qp_free(&g->r);
	t_qp_free(&g->s);
	if (g->ch)
		assert_int_equal(ibv_destroy_comp_channel(g->ch), 0);
	t_env_close(&g->e);
}

/* @n empty busy polls of the receiving CQ; *@grp and *@uc: the reads they made. */
static void busy_polls(struct rig *g, int n, unsigned long *grp, unsigned long *uc)
{
	unsigned long g0 = g->grp->reads, u0 = g->uc->reads;
	struct ibv_wc wc;

	for (int i = 0; i < n; i++)
		assert_int_equal(ibv_poll_cq(g->r.cq, 1, &wc), 0);
	*grp = g->grp->reads - g0;
	*uc = g->uc->reads - u0;
}

/* Send UMC_RX_COLD_AFTER datagrams to the group and receive them all. */
static void group_traffic(struct rig *g)
{
	struct ibv_wc wc;

	for (int i = 0; i < UMC_RX_COLD_AFTER; i++) {
		assert_int_equal(t_send(&g->s, g->e.ah, "cold", 4, T_QKEY, false, 0, 0, 100 + i), 0);
		t_wait_send(g->s.cq, 100 + (uint64_t)i);
		assert_int_equal(t_wait_wc(g->r.cq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV);
		assert_int_equal(wc.wr_id, (uint64_t)i);
	}
}

/* A SEND of "unicast" from the sender to the receiver's QPN at 127.0.0.1; the AH. */
static struct ibv_ah *send_unicast(struct rig *g)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_ah *ah = t_ipv4_ah(g->e.pd, INADDR_LOOPBACK);

	assert_non_null(ah);
	memcpy(g->s.buf, "unicast", 7);
	sge = (struct ibv_sge){(uintptr_t)g->s.buf, 7, g->s.mr->lkey};
	wr = (struct ibv_send_wr){
		.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.wr.ud = {.ah = ah, .remote_qpn = g->r.qp->qp_num, .remote_qkey = T_QKEY},
	};
	assert_int_equal(ibv_post_send(g->s.qp, &wr, &bad), 0);
	t_wait_send(g->s.cq, 7);
	return ah;
}

/* @wc is the receive of send_unicast()'s datagram. */
static void assert_unicast_wc(const struct rig *g, const struct ibv_wc *wc)
{
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RECV);
	assert_int_equal(wc->src_qp, g->s.qp->qp_num);
	assert_int_equal(wc->byte_len, 40 + 7);
	assert_memory_equal(g->r.buf + (size_t)wc->wr_id * 256 + 40, "unicast", 7);
}

/* Wait (bounded) until @fd is readable: the datagram is in the kernel. */
static void wait_readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	assert_int_equal(poll(&p, 1, T_WAIT_MS), 1);
}

/* One blocking ibv_get_cq_event for the receiver's CQ, acked. */
static void get_event(struct rig *g)
{
	struct ibv_cq *cq;
	void *ctx;

	assert_int_equal(ibv_get_cq_event(g->ch, &cq, &ctx), 0);
	assert_ptr_equal(cq, g->r.cq);
	ibv_ack_cq_events(cq, 1);
}

/*
 * Send @len bytes of @msg to the group as @id and wait until the
 * receiver's socket holds it.  No pass of the device runs meanwhile: the
 * send's completion is on its CQ when ibv_post_send returns, so
 * t_wait_send's first poll takes it without running the engine.
 */
static void send_group(struct rig *g, const char *msg, uint32_t len, uint64_t id)
{
	assert_int_equal(t_send(&g->s, g->e.ah, msg, len, T_QKEY, false, 0, 0, id), 0);
	t_wait_send(g->s.cq, id);
	wait_readable(g->grp->fd);
}

/* The next completion is the receive of a @len-byte datagram. */
static void assert_recv(struct ibv_cq *cq, uint32_t len)
{
	struct ibv_wc wc;

	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 40 + len);
}

static void test_cold_input_read_in_its_turn(void **state)
{
	struct rig g;
	unsigned long grp, uc;

	(void)state;
	rig_up(&g, 70, false);
	/* Nothing arrived yet: every endpoint on every poll. */
	busy_polls(&g, NPOLL, &grp, &uc);
	assert_int_equal(grp, NPOLL);
	assert_int_equal(uc, NPOLL);

	group_traffic(&g);
	/* The input brought nothing meanwhile: one read per stride, the group's on every poll. */
	busy_polls(&g, NPOLL, &grp, &uc);
	assert_int_equal(grp, NPOLL);
	assert_int_equal(uc, NPOLL / UMC_RX_COLD_STRIDE);

	/* A pass that is not a busy poll reads both. */
	grp = g.grp->reads;
	uc = g.uc->reads;
	umc_progress(g.e.dev, true);
	assert_int_equal(g.grp->reads - grp, 1);
	assert_int_equal(g.uc->reads - uc, 1);
	rig_down(&g);
}

static void test_cold_input_still_receives(void **state)
{
	struct rig g;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	unsigned long grp, uc;
	uint64_t deadline;
	int n = 0;

	(void)state;
	if (!isolated)
		skip();
	rig_up(&g, 71, false);
	group_traffic(&g);
	busy_polls(&g, UMC_RX_COLD_STRIDE, &grp, &uc);
	assert_int_equal(uc, 1); /* cold */

	ah = send_unicast(&g);
	/* Busy polls only: the cold input is read in its turn. */
	deadline = t_now_ms() + T_WAIT_MS;
	while (n == 0 && t_now_ms() < deadline)
		n = ibv_poll_cq(g.r.cq, 1, &wc);
	assert_int_equal(n, 1);
	assert_unicast_wc(&g, &wc);
	/* It brought a packet: hot again, read on every poll. */
	busy_polls(&g, UMC_RX_COLD_STRIDE, &grp, &uc);
	assert_int_equal(uc, UMC_RX_COLD_STRIDE);
	ibv_destroy_ah(ah);
	rig_down(&g);
}

static void test_woken_reads_hot_endpoints_first(void **state)
{
	struct rig g;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	unsigned long grp, uc;

	(void)state;
	rig_up(&g, 72, true);
	group_traffic(&g);
	/* A group datagram wakes the waiter: only the group's socket is read. */
	assert_int_equal(ibv_req_notify_cq(g.r.cq, 0), 0);
	send_group(&g, "woken", 5, 200);
	grp = g.grp->reads;
	uc = g.uc->reads;
	get_event(&g);
	assert_int_equal(g.grp->reads - grp, 1);
	assert_int_equal(g.uc->reads - uc, 0);
	assert_recv(g.r.cq, 5);

	/* A unicast datagram on the cold input still raises its event. */
	if (isolated) {
		assert_int_equal(ibv_req_notify_cq(g.r.cq, 0), 0);
		ah = send_unicast(&g);
		wait_readable(g.uc->fd);
		get_event(&g);
		assert_int_equal(ibv_poll_cq(g.r.cq, 1, &wc), 1);
		assert_unicast_wc(&g, &wc);
		ibv_destroy_ah(ah);
	}
	rig_down(&g);
}

static void test_woken_drain_spares_one_poll(void **state)
{
	struct rig g;
	struct ibv_wc wc;
	unsigned long grp;

	(void)state;
	rig_up(&g, 73, true);
	group_traffic(&g);
	assert_int_equal(ibv_req_notify_cq(g.r.cq, 0), 0);
	send_group(&g, "first", 5, 300);
	get_event(&g);
	assert_recv(g.r.cq, 5);

	/* Arrived after the woken read: the empty poll spares the socket, the next reads it. */
	send_group(&g, "second", 6, 301);
	grp = g.grp->reads;
	assert_int_equal(ibv_poll_cq(g.r.cq, 1, &wc), 0);
	assert_int_equal(g.grp->reads - grp, 0);
	assert_recv(g.r.cq, 6);
	assert_int_equal(g.grp->reads - grp, 1);
	/* Only once: every busy poll reads it again. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(ibv_poll_cq(g.r.cq, 1, &wc), 0);
	assert_int_equal(g.grp->reads - grp, 4);

	/* Spared, then waiting again: the datagram that came meanwhile is the event at once. */
	assert_int_equal(ibv_req_notify_cq(g.r.cq, 0), 0);
	send_group(&g, "third", 5, 302);
	get_event(&g);
	assert_recv(g.r.cq, 5);
	assert_int_equal(ibv_req_notify_cq(g.r.cq, 0), 0);
	send_group(&g, "fourth", 6, 303);
	assert_int_equal(ibv_poll_cq(g.r.cq, 1, &wc), 0);
	/* Non-blocking: the event is there at once, without a sleep. */
	int fl = fcntl(g.ch->fd, F_GETFL);

	assert_int_equal(fcntl(g.ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	get_event(&g);
	assert_int_equal(fcntl(g.ch->fd, F_SETFL, fl), 0);
	assert_recv(g.r.cq, 6);
	rig_down(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_input_read_in_its_turn),
		cmocka_unit_test(test_cold_input_still_receives),
		cmocka_unit_test(test_woken_reads_hot_endpoints_first),
		cmocka_unit_test(test_woken_drain_spares_one_poll),
	};

	setenv("UMC_RX_THREAD", "0", 1);
	isolated = t_isolate_netns();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
