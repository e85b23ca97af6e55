// SPDX-License-Identifier: MIT
/*
 * test_verbs_delivery.c - multicast delivery through the verbs alone, on
 * the loopback device: what a receive completion and its buffer hold,
 * which datagrams are dropped (and counted) and which are not, the path
 * MTU rule, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, detach, and completion
 * channels.
 *
 * The host becomes a member of each test's group through
 * umc_dev_member(dev, mgid, +1), which is what a CM full-member join does.
 *
 * References:
 *   rxe_recv.c rxe_rcv_mcast_pkt() and check_keys() (every attached QP
 *     with a matching Q_Key gets its own copy; Q_Key violations are
 *     skipped and counted; no sender exclusion);
 *   rxe_resp.c and union rdma_network_hdr (byte_len = 40 + payload,
 *     IBV_WC_GRH, the GRH area = 20 zero bytes + the IPv4 header with a
 *     valid checksum, imm_data as on the wire);
 *   IBA 9.2 (PSN +1 per packet, SE from IBV_SEND_SOLICITED) and C10-93.1.1
 *     (a UD message above the path MTU completes successfully, is not
 *     sent and consumes a PSN);
 *   docs/design.md, "RoCEv2 fidelity" (a payload larger than the posted
 *     buffer completes with a local length error, the QP goes to the error
 *     state, the remaining receives are flushed) and "Observed on rxe" 7
 *     (GRH: TOS 0, DF, TTL 64, valid checksum);
 *   docs/design.md, "Departures from Linux" (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB
 *     honoured) and "Counters" (drops counted per reason); completion
 *     channel fds work with poll(2) (ibv_get_cq_event(3)).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include "verbs_util.h"

struct fx {
	struct t_env e; /* the test's group, an AH to it */
	bool member;
	struct t_qp s, a, b; /* sender, two receivers (not attached yet) */
};

static unsigned group_seq;

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	/* A fresh group for every test: no datagram of one test reaches another. */
	t_env_open(&f->e, t_group_ip(++group_seq), true);
	if (!f->e.pd || !f->e.ah)
		return -1;
	t_qp_make(&f->s, f->e.pd, 0, T_QKEY);
	t_qp_make(&f->a, f->e.pd, 0, T_QKEY);
	t_qp_make(&f->b, f->e.pd, 0, T_QKEY);
	if (umc_dev_member(f->e.dev, &f->e.mgid, +1))
		return -1;
	f->member = true;
	*state = f;
	return 0;
}

static void detach_all(struct fx *f, struct t_qp *t)
{
	while (to_uqp(t->qp)->attached) {
		/* A copy: the library frees the entry the pointer would point into. */
		union ibv_gid gid = to_uqp(t->qp)->attached->gid;
		uint16_t mlid = to_uqp(t->qp)->attached->mlid;

		assert_int_equal(ibv_detach_mcast(t->qp, &gid, mlid), 0);
	}
}

static int teardown(void **state)
{
	struct fx *f = *state;

	detach_all(f, &f->s);
	detach_all(f, &f->a);
	detach_all(f, &f->b);
	if (f->member)
		umc_dev_member(f->e.dev, &f->e.mgid, -1);
	t_qp_free(&f->s);
	t_qp_free(&f->a);
	t_qp_free(&f->b);
	t_env_close(&f->e);
	/* Every group of the test is gone with its socket. */
	assert_null(__umc_mcg_find(f->e.dev, &f->e.mgid));
	free(f);
	return 0;
}

static void attach(struct fx *f, struct t_qp *t)
{
	assert_int_equal(ibv_attach_mcast(t->qp, &f->e.mgid, 0), 0);
}

/* Send @len pattern bytes (seed @seed) from @t; wait for its send completion. */
static void send_msg(struct fx *f, struct t_qp *t, uint32_t len, unsigned seed, uint32_t qkey,
		     bool imm, uint32_t imm_be, int flags)
{
	uint8_t data[T_BUF / 2];

	t_fill(data, len, seed);
	assert_int_equal(t_send(t, f->e.ah, data, len, qkey, imm, imm_be, flags, seed), 0);
	t_wait_send(t->cq, seed);
}

/* Wait for the receive of @len bytes with pattern @seed on @t (buffer at @off). */
static void expect_recv(struct t_qp *t, size_t off, uint64_t wr_id, uint32_t len, unsigned seed,
			uint32_t src_qp, struct ibv_wc *out)
{
	uint8_t want[T_BUF / 2];
	struct ibv_wc wc;

	assert_int_equal(t_wait_wc(t->cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.qp_num, t->qp->qp_num);
	assert_int_equal(wc.src_qp, src_qp);
	assert_int_equal(wc.byte_len, 40 + len);
	assert_true(wc.wc_flags & IBV_WC_GRH);
	t_fill(want, len, seed);
	assert_memory_equal(t->buf + off + 40, want, len);
	if (out)
		*out = wc;
}

/* The 40-byte GRH area: 20 zero bytes, then the IPv4 header as received. */
static void check_grh(const struct fx *f, const uint8_t *g, uint32_t len, bool imm)
{
	static const uint8_t zero[20];
	uint32_t udp_len = 12 + 8 + (imm ? 4 : 0) + len + ((-len) & 3) + 4;
	const uint8_t *ip = g + 20;

	assert_memory_equal(g, zero, 20);
	assert_int_equal(ip[0], 0x45);			      /* version 4, IHL 5 */
	assert_int_equal(ip[1], 0);			      /* TOS = AH traffic class */
	assert_int_equal(ip[2] << 8 | ip[3], 20 + 8 + udp_len); /* total length */
	assert_int_equal(ip[4] << 8 | ip[5], 0);	      /* ID 0 */
	assert_int_equal(ip[6] << 8 | ip[7], 0x4000);	      /* DF, offset 0 */
	assert_int_equal(ip[8], 64);			      /* TTL = AH hop limit */
	assert_int_equal(ip[9], 17);			      /* UDP */
	assert_int_equal(t_ipv4_csum(ip), 0);		      /* valid checksum */
	assert_memory_equal(ip + 12, "\x7f\x00\x00\x01", 4);
	uint32_t dst = htonl(f->e.gip);

	assert_memory_equal(ip + 16, &dst, 4);
}

/* ------------------------------------------------------------------------- */

static void test_two_qps_both_get_copy(void **state)
{
	struct fx *f = *state;
	static const uint32_t lens[] = {100, 13, 0, 1};
	struct ibv_wc wa, wb;
	unsigned long deliv0 = T_CNT(f->e.dev, rx_delivered);

	attach(f, &f->a);
	attach(f, &f->b);
	for (unsigned i = 0; i < 4; i++) {
		uint32_t len = lens[i], imm = htonl(0xdead0000u | i);
		bool with_imm = i % 2 == 0;

		memset(f->a.buf, 0xee, 4096);
		memset(f->b.buf, 0xee, 4096);
		assert_int_equal(t_post_recv(&f->a, 0, 2048, 10 + i), 0);
		assert_int_equal(t_post_recv(&f->b, 0, 2048, 20 + i), 0);
		send_msg(f, &f->s, len, 7 + i, T_QKEY, with_imm, imm, 0);
		expect_recv(&f->a, 0, 10 + i, len, 7 + i, f->s.qp->qp_num, &wa);
		expect_recv(&f->b, 0, 20 + i, len, 7 + i, f->s.qp->qp_num, &wb);
		for (int k = 0; k < 2; k++) {
			struct ibv_wc *w = k ? &wb : &wa;

			if (with_imm) {
				assert_int_equal(w->wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
				assert_int_equal(w->imm_data, imm); /* network order both */
			} else {
				assert_int_equal(w->wc_flags, IBV_WC_GRH);
			}
			assert_int_equal(w->pkey_index, 0);
		}
		check_grh(f, f->a.buf, len, with_imm);
		check_grh(f, f->b.buf, len, with_imm);
		/*
		 * Nothing written past 40 + payload into the copy; the first QP's
		 * receive, where the datagram landed, holds at most its tail there.
		 */
		for (size_t k = 40 + len; k < 2048; k++)
			assert_int_equal(f->b.buf[k], 0xee);
		for (size_t k = 40 + len + UMC_RX_TAIL_MAX; k < 2048; k++)
			assert_int_equal(f->a.buf[k], 0xee);
		t_assert_cq_empty(f->a.cq);
		t_assert_cq_empty(f->b.cq);
	}
	assert_int_equal(T_CNT(f->e.dev, rx_delivered), deliv0 + 8);

	/* The GRH answers the sender: its address, GID index 0. */
	struct ibv_ah_attr aa;

	assert_int_equal(ibv_init_ah_from_wc(f->e.ctx, 1, &wa, (struct ibv_grh *)f->a.buf, &aa), 0);
	assert_int_equal(aa.is_global, 1);
	assert_memory_equal(aa.grh.dgid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x7f\0\0\1", 16);
	assert_int_equal(aa.grh.sgid_index, 0);
}

/* GRH and payload scattered over several SGEs. */
static void test_scatter_sges(void **state)
{
	struct fx *f = *state;
	uint8_t *p = f->a.buf, want[300];
	struct ibv_sge sge[3] = {
		{(uintptr_t)p, 40, f->a.mr->lkey},
		{(uintptr_t)p + 1000, 100, f->a.mr->lkey},
		{(uintptr_t)p + 2000, 500, f->a.mr->lkey},
	};
	struct ibv_recv_wr wr = {.wr_id = 5, .sg_list = sge, .num_sge = 3}, *bad;
	struct ibv_wc wc;

	attach(f, &f->a);
	assert_int_equal(ibv_post_recv(f->a.qp, &wr, &bad), 0);
	send_msg(f, &f->s, 300, 3, T_QKEY, false, 0, 0);
	assert_int_equal(t_wait_wc(f->a.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 340);
	check_grh(f, p, 300, false);
	t_fill(want, 300, 3);
	assert_memory_equal(p + 1000, want, 100);
	assert_memory_equal(p + 2000, want + 100, 200);
}

/* A gather list, an inline send (no MR needed) and a send without SGEs. */
static void test_gather_inline_empty(void **state)
{
	struct fx *f = *state;
	uint8_t *src = f->s.buf + 100, want[64], stack_data[24];
	struct ibv_sge g[3] = {
		{(uintptr_t)src, 10, f->s.mr->lkey},
		{(uintptr_t)src + 500, 0, f->s.mr->lkey},
		{(uintptr_t)src + 1000, 30, f->s.mr->lkey},
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = g, .num_sge = 3, .opcode = IBV_WR_SEND,
		.wr.ud = {.ah = f->e.ah, .remote_qpn = 0xffffff, .remote_qkey = T_QKEY},
	}, *bad;
	struct ibv_wc wc;

	attach(f, &f->a);
	for (int i = 0; i < 3; i++)
		assert_int_equal(t_post_recv(&f->a, (size_t)i * 2048, 2048, (uint64_t)i), 0);
	t_fill(want, 40, 9);
	memcpy(src, want, 10);
	memcpy(src + 1000, want + 10, 30);
	assert_int_equal(ibv_post_send(f->s.qp, &wr, &bad), 0);
	t_wait_send(f->s.cq, 1);

	/* Inline: the data is copied at post time, the lkey is not looked at. */
	t_fill(stack_data, sizeof(stack_data), 4);
	struct ibv_sge in = {(uintptr_t)stack_data, sizeof(stack_data), 0xdeadbeef};

	wr = (struct ibv_send_wr){
		.wr_id = 2, .sg_list = &in, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE,
		.wr.ud = {.ah = f->e.ah, .remote_qpn = 0xffffff, .remote_qkey = T_QKEY},
	};
	assert_int_equal(ibv_post_send(f->s.qp, &wr, &bad), 0);
	memset(stack_data, 0, sizeof(stack_data)); /* reusable at once */
	t_wait_send(f->s.cq, 2);

	/* No SGE at all: a 0-byte message. */
	wr = (struct ibv_send_wr){
		.wr_id = 3, .num_sge = 0, .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htonl(3),
		.wr.ud = {.ah = f->e.ah, .remote_qpn = 0xffffff, .remote_qkey = T_QKEY},
	};
	assert_int_equal(ibv_post_send(f->s.qp, &wr, &bad), 0);
	t_wait_send(f->s.cq, 3);

	assert_int_equal(t_wait_wc(f->a.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 40 + 40);
	assert_memory_equal(f->a.buf + 40, want, 40);
	expect_recv(&f->a, 2048, 1, sizeof(stack_data), 4, f->s.qp->qp_num, NULL);
	assert_int_equal(t_wait_wc(f->a.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.byte_len, 40);
	assert_int_equal(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	assert_int_equal(wc.imm_data, htonl(3));
	t_assert_cq_empty(f->a.cq);
}

/* rxe_recv.c check_type_state(): a QP receives from RTR on, not in INIT. */
static void test_receive_needs_rtr(void **state)
{
	struct fx *f = *state;
	struct t_qp r;
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = T_QKEY};
	unsigned long bad0 = T_CNT(f->e.dev, rx_bad_state);

	memset(&r, 0, sizeof(r));
	r.cq = ibv_create_cq(f->e.ctx, 64, NULL, NULL, 0);
	r.qp = t_create_qp(f->e.pd, r.cq, 0);
	r.buf = calloc(1, T_BUF);
	r.mr = ibv_reg_mr(f->e.pd, r.buf, T_BUF, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(r.mr);
	assert_int_equal(ibv_modify_qp(r.qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
							   IBV_QP_QKEY), 0);
	assert_int_equal(ibv_attach_mcast(r.qp, &f->e.mgid, 0), 0);
	attach(f, &f->a); /* the marker's receiver */
	assert_int_equal(t_post_recv(&r, 0, 2048, 1), 0);
	assert_int_equal(t_post_recv(&r, 2048, 2048, 2), 0);
	assert_int_equal(t_post_recv(&f->a, 0, 2048, 3), 0);
	assert_int_equal(t_post_recv(&f->a, 2048, 2048, 4), 0);

	send_msg(f, &f->s, 15, 1, T_QKEY, false, 0, 0);
	expect_recv(&f->a, 0, 3, 15, 1, f->s.qp->qp_num, NULL);
	t_assert_cq_empty(r.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_bad_state), bad0 + 1);

	qa.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(r.qp, &qa, IBV_QP_STATE), 0);
	send_msg(f, &f->s, 16, 2, T_QKEY, false, 0, 0);
	expect_recv(&f->a, 2048, 4, 16, 2, f->s.qp->qp_num, NULL);
	expect_recv(&r, 0, 1, 16, 2, f->s.qp->qp_num, NULL);
	assert_int_equal(ibv_detach_mcast(r.qp, &f->e.mgid, 0), 0);
	t_qp_free(&r);
}

/* rxe_rcv_mcast_pkt(): no sender exclusion; the sender's attached QP gets a copy. */
static void test_sender_attached_gets_copy(void **state)
{
	struct fx *f = *state;

	attach(f, &f->s);
	assert_int_equal(t_post_recv(&f->s, 0, 2048, 1), 0);
	assert_int_equal(t_send(&f->s, f->e.ah, "hello", 5, T_QKEY, false, 0, 0, 99), 0);
	/* Send completion (wr 99) and receive completion (wr 1) on the shared CQ. */
	struct ibv_wc wc;
	bool sent = false, got = false;

	for (int i = 0; i < 2; i++) {
		assert_int_equal(t_wait_wc(f->s.cq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_SEND) {
			assert_int_equal(wc.wr_id, 99);
			sent = true;
		} else {
			assert_int_equal(wc.opcode, IBV_WC_RECV);
			assert_int_equal(wc.wr_id, 1);
			assert_int_equal(wc.src_qp, f->s.qp->qp_num);
			assert_int_equal(wc.byte_len, 45);
			assert_memory_equal(f->s.buf + 40, "hello", 5);
			got = true;
		}
	}
	assert_true(sent && got);
}

/* ib_uverbs_attach_mcast(): a duplicate attach is a no-op: still ONE copy. */
static void test_duplicate_attach_one_copy(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;

	attach(f, &f->a);
	attach(f, &f->a);
	for (int i = 0; i < 3; i++)
		assert_int_equal(t_post_recv(&f->a, (size_t)i * 2048, 2048, (uint64_t)i), 0);
	send_msg(f, &f->s, 64, 1, T_QKEY, false, 0, 0);
	send_msg(f, &f->s, 32, 2, T_QKEY, false, 0, 0); /* marker */
	expect_recv(&f->a, 0, 0, 64, 1, f->s.qp->qp_num, NULL);
	/* The next completion is the marker, not a second copy of message 1. */
	expect_recv(&f->a, 2048, 1, 32, 2, f->s.qp->qp_num, &wc);
	t_assert_cq_empty(f->a.cq);
}

/* rxe_recv.c check_keys(): a Q_Key mismatch is skipped and counted. */
static void test_qkey_mismatch(void **state)
{
	struct fx *f = *state;
	struct t_qp c;
	unsigned long viol0 = T_CNT(f->e.dev, rx_qkey_viol), deliv0;
	struct ibv_wc wc;

	t_qp_make(&c, f->e.pd, 0, 0x42); /* attached, another Q_Key */
	attach(f, &f->a);
	assert_int_equal(ibv_attach_mcast(c.qp, &f->e.mgid, 0), 0);
	assert_int_equal(t_post_recv(&f->a, 0, 2048, 1), 0);
	assert_int_equal(t_post_recv(&f->a, 2048, 2048, 2), 0);
	assert_int_equal(t_post_recv(&c, 0, 2048, 3), 0);
	deliv0 = T_CNT(f->e.dev, rx_delivered);

	send_msg(f, &f->s, 50, 1, 0x0badbeef, false, 0, 0); /* nobody's Q_Key */
	send_msg(f, &f->s, 20, 2, T_QKEY, false, 0, 0);	     /* A's: the marker */
	expect_recv(&f->a, 0, 1, 20, 2, f->s.qp->qp_num, NULL);
	t_assert_cq_empty(f->a.cq);
	t_assert_cq_empty(c.cq);
	/* Message 1: A and C violated; message 2: C violated. */
	assert_int_equal(T_CNT(f->e.dev, rx_qkey_viol), viol0 + 3);
	assert_int_equal(T_CNT(f->e.dev, rx_delivered), deliv0 + 1);

	/* C's own Q_Key reaches C only. */
	send_msg(f, &f->s, 8, 3, 0x42, false, 0, 0);
	assert_int_equal(t_wait_wc(c.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.byte_len, 48);
	t_assert_cq_empty(f->a.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_qkey_viol), viol0 + 4);
	assert_int_equal(ibv_detach_mcast(c.qp, &f->e.mgid, 0), 0);
	t_qp_free(&c);
}

/*
 * ibv_modify_qp while datagrams arrive (ThreadSanitizer: the receive path
 * reads the QP's state and Q_Key while the modify writes them).  A thread
 * keeps polling A's CQ, which runs the receive engine, and reposts; the
 * main thread sends, sets A's Q_Key after every datagram (to another value
 * one time in four) and takes A through ERR and RESET back to RTS now and
 * then.  Every completion is a
 * whole datagram or a flush, and afterwards A receives normally.
 */
enum { MOD_N = 300, MOD_SLOTS = 8 };

struct modfx {
	struct fx *f;
	atomic_bool stop;
	atomic_int ok, flushed;
	atomic_ulong rounds; /* poller iterations */
};

static void *mod_poller(void *arg)
{
	struct modfx *m = arg;
	struct t_qp *a = &m->f->a;

	while (!atomic_load(&m->stop)) {
		struct ibv_wc wc[MOD_SLOTS];
		int n = ibv_poll_cq(a->cq, MOD_SLOTS, wc);

		atomic_fetch_add(&m->rounds, 1);
		for (int i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == 40 + 24)
				atomic_fetch_add(&m->ok, 1);
			else if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
				atomic_fetch_add(&m->flushed, 1);
			else
				atomic_store(&m->ok, -1000000); /* anything else fails the test */
			/* May be refused (RESET, full): the main thread tops up after RTS. */
			(void)t_post_recv(a, (size_t)wc[i].wr_id * 1024, 1024, wc[i].wr_id);
		}
		if (!n)
			t_poll_rx(m->f->e.dev, 1);
	}
	return NULL;
}

static void top_up(struct t_qp *a)
{
	for (uint64_t k = 0; k < MOD_SLOTS; k++)
		(void)t_post_recv(a, (size_t)k * 1024, 1024, k);
}

static void test_modify_while_receiving(void **state)
{
	struct fx *f = *state;
	struct modfx m = {.f = f};
	struct ibv_qp_attr qa;
	pthread_t th;

	attach(f, &f->a);
	top_up(&f->a);
	assert_int_equal(pthread_create(&th, NULL, mod_poller, &m), 0);
	for (int i = 0; i < MOD_N; i++) {
		unsigned long r = atomic_load(&m.rounds);
		uint64_t until = t_now_ms() + 100;

		send_msg(f, &f->s, 24, (unsigned)i, T_QKEY, false, 0, 0);
		/* Give the poller a turn (bounded: the outcome does not depend on it). */
		while (atomic_load(&m.rounds) == r && t_now_ms() < until)
			sched_yield();
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_RTS;
		qa.qkey = i % 4 == 3 ? T_QKEY ^ 1 : T_QKEY;
		assert_int_equal(ibv_modify_qp(f->a.qp, &qa, IBV_QP_STATE | IBV_QP_QKEY), 0);
		if (i % 50 == 49) {
			qa.qp_state = IBV_QPS_ERR;
			assert_int_equal(ibv_modify_qp(f->a.qp, &qa, IBV_QP_STATE), 0);
			qa.qp_state = IBV_QPS_RESET;
			assert_int_equal(ibv_modify_qp(f->a.qp, &qa, IBV_QP_STATE), 0);
			assert_int_equal(t_qp_rts(f->a.qp, T_QKEY, 0), 0);
			top_up(&f->a);
		}
	}
	atomic_store(&m.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	print_message("delivered %d, flushed %d of %d sent\n", atomic_load(&m.ok),
		      atomic_load(&m.flushed), MOD_N);
	assert_true(atomic_load(&m.ok) >= 0);
	assert_true(atomic_load(&m.ok) <= MOD_N);

	/*
	 * Settled: with its own Q_Key, A gets the next datagram.  On loopback a
	 * datagram is in the group socket when its send completes, so one pass
	 * of the engine while A is in RESET takes every earlier one away.
	 */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RESET;
	assert_int_equal(ibv_modify_qp(f->a.qp, &qa, IBV_QP_STATE), 0);
	(void)T_CNT(f->e.dev, rx_packets);
	assert_int_equal(t_qp_rts(f->a.qp, T_QKEY, 0), 0);
	while (ibv_poll_cq(f->a.cq, 1, &(struct ibv_wc){0}) == 1)
		;
	assert_int_equal(t_post_recv(&f->a, 0, 2048, 77), 0);
	send_msg(f, &f->s, 30, 9999, T_QKEY, false, 0, 0);
	expect_recv(&f->a, 0, 77, 30, 9999, f->s.qp->qp_num, NULL);
}

/* No receive posted: dropped and counted; a receive posted later does not get it. */
static void test_no_recv_dropped(void **state)
{
	struct fx *f = *state;
	unsigned long none0 = T_CNT(f->e.dev, rx_no_recv);

	attach(f, &f->a);
	send_msg(f, &f->s, 77, 1, T_QKEY, false, 0, 0);
	assert_true(t_wait_counter(f->e.dev, &f->e.dev->cnt->rx_no_recv, none0 + 1, T_WAIT_MS));
	t_assert_cq_empty(f->a.cq);
	assert_int_equal(t_post_recv(&f->a, 0, 2048, 1), 0);
	t_assert_cq_empty(f->a.cq); /* message 1 is gone, not queued */
	send_msg(f, &f->s, 33, 2, T_QKEY, false, 0, 0);
	expect_recv(&f->a, 0, 1, 33, 2, f->s.qp->qp_num, NULL);
	t_assert_cq_empty(f->a.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_no_recv), none0 + 1);
}

/*
 * docs/design.md, "RoCEv2 fidelity": a payload larger than the posted
 * buffer completes with a local length error, the QP goes to ERR, the
 * remaining receives flush.
 */
static void test_short_buffer_loc_len_err(void **state)
{
	struct fx *f = *state;
	enum { P = 200 };
	unsigned long long0 = T_CNT(f->e.dev, rx_too_long), bad0;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;

	attach(f, &f->a);
	attach(f, &f->b);
	assert_int_equal(t_post_recv(&f->a, 0, 40 + P - 1, 1), 0); /* one byte short */
	assert_int_equal(t_post_recv(&f->a, 2048, 2048, 2), 0);
	assert_int_equal(t_post_recv(&f->a, 4096, 2048, 3), 0);
	assert_int_equal(t_post_recv(&f->b, 0, 40 + P, 4), 0); /* exactly enough */
	send_msg(f, &f->s, P, 1, T_QKEY, false, 0, 0);

	assert_int_equal(t_wait_wc(f->a.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(ibv_query_qp(f->a.qp, &qa, IBV_QP_STATE, &qia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_ERR);
	for (uint64_t id = 2; id <= 3; id++) {
		assert_int_equal(t_wait_wc(f->a.cq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.wr_id, id);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	}
	t_assert_cq_empty(f->a.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_too_long), long0 + 1);
	/* The exact fit succeeded. */
	expect_recv(&f->b, 0, 4, P, 1, f->s.qp->qp_num, NULL);

	/* A QP in ERR takes nothing more; B still does. */
	bad0 = T_CNT(f->e.dev, rx_bad_state);
	assert_int_equal(t_post_recv(&f->b, 0, 2048, 5), 0);
	send_msg(f, &f->s, 10, 2, T_QKEY, false, 0, 0);
	expect_recv(&f->b, 0, 5, 10, 2, f->s.qp->qp_num, NULL);
	t_assert_cq_empty(f->a.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_bad_state), bad0 + 1);
}

/* The wire view of one datagram: BTH fields. */
struct wire {
	ssize_t len;
	uint8_t opcode, flags;
	uint32_t psn, srcqp;
};

static struct wire sniff(int fd)
{
	uint8_t buf[9216];
	struct wire w = {.len = t_sniff_recv(fd, buf, sizeof(buf), T_WAIT_MS)};

	if (w.len >= 28) {
		w.opcode = buf[0];
		w.flags = buf[1];
		w.psn = (uint32_t)buf[9] << 16 | buf[10] << 8 | buf[11];
		w.srcqp = (uint32_t)buf[17] << 16 | buf[18] << 8 | buf[19];
	}
	return w;
}

/*
 * IBA C10-93.1.1, docs/design.md, "Observed on rxe" 7: above the path MTU a UD send
 * completes successfully, nothing goes on the wire, the PSN is consumed.
 */
static void test_send_above_mtu(void **state)
{
	struct fx *f = *state;
	struct ibv_port_attr pa;
	struct t_qp s;
	int sn = t_sniff_open(f->e.gip);
	unsigned long long0 = T_CNT(f->e.dev, tx_too_long), tx0;
	struct wire w;

	assert_int_equal(ibv_query_port(f->e.ctx, 1, &pa), 0);
	uint32_t mtu = 128u << pa.active_mtu;

	assert_true(mtu + 1 <= T_BUF / 2);
	/* A sender starting at PSN 100. */
	memset(&s, 0, sizeof(s));
	s.cq = ibv_create_cq(f->e.ctx, 64, NULL, NULL, 0);
	s.qp = t_create_qp(f->e.pd, s.cq, 0);
	assert_int_equal(t_qp_rts(s.qp, T_QKEY, 100), 0);
	s.buf = calloc(1, T_BUF);
	s.mr = ibv_reg_mr(f->e.pd, s.buf, T_BUF, 0);
	assert_non_null(s.mr);

	attach(f, &f->a);
	assert_int_equal(t_post_recv(&f->a, 0, 4096, 0), 0);
	assert_int_equal(t_post_recv(&f->a, 4096, 8192, 1), 0);
	assert_int_equal(t_post_recv(&f->a, 12288, 4096, 2), 0);
	tx0 = T_CNT(f->e.dev, tx_packets);
	send_msg(f, &s, 64, 1, T_QKEY, false, 0, 0);	/* PSN 100 */
	send_msg(f, &s, mtu + 1, 2, T_QKEY, false, 0, 0); /* PSN 101: not sent */
	assert_int_equal(T_CNT(f->e.dev, tx_too_long), long0 + 1);
	send_msg(f, &s, mtu, 3, T_QKEY, false, 0, 0);	/* PSN 102: exactly the MTU */
	assert_int_equal(T_CNT(f->e.dev, tx_packets), tx0 + 2);

	w = sniff(sn);
	assert_int_equal(w.len, 12 + 8 + 64 + 4);
	assert_int_equal(w.psn, 100);
	w = sniff(sn);
	assert_int_equal(w.len, 12 + 8 + mtu + 4);
	assert_int_equal(w.psn, 102);
	assert_int_equal(w.srcqp, s.qp->qp_num);

	expect_recv(&f->a, 0, 0, 64, 1, s.qp->qp_num, NULL);
	expect_recv(&f->a, 4096, 1, mtu, 3, s.qp->qp_num, NULL);
	t_assert_cq_empty(f->a.cq);
	/* The QP is still usable. */
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;

	assert_int_equal(ibv_query_qp(s.qp, &qa, IBV_QP_STATE, &qia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	close(sn);
	t_qp_free(&s);
}

/*
 * One ibv_post_send with a chain longer than the library's send batch:
 * every WR goes out once, in order, with consecutive PSNs, and completes
 * in order; a bad WR deep in the chain stops it there with bad_wr set,
 * everything before it having been sent.
 */
static void test_long_send_chain(void **state)
{
	struct fx *f = *state;
	enum { N = 150, BAD = 140, CH = 64 };
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.cap = {.max_send_wr = 256, .max_recv_wr = 256, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_cq *scq = ibv_create_cq(f->e.ctx, 512, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(f->e.ctx, 512, NULL, NULL, 0);
	struct ibv_send_wr *wr = calloc(N, sizeof(*wr)), *bad = NULL;
	struct ibv_sge *sge = calloc(N, sizeof(*sge));
	uint8_t *sbuf = calloc(N, CH), *rbuf = calloc(N, 2 * CH + 40);
	struct ibv_mr *smr = ibv_reg_mr(f->e.pd, sbuf, (size_t)N * CH, 0);
	struct ibv_mr *rmr = ibv_reg_mr(f->e.pd, rbuf, (size_t)N * (2 * CH + 40), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *sqp, *rqp;
	int sn = t_sniff_open(f->e.gip);
	uint8_t pkt[2048];
	struct ibv_wc wc;

	ia.send_cq = ia.recv_cq = scq;
	sqp = ibv_create_qp(f->e.pd, &ia);
	ia.send_cq = ia.recv_cq = rcq;
	rqp = ibv_create_qp(f->e.pd, &ia);
	assert_non_null(sqp);
	assert_non_null(rqp);
	assert_int_equal(t_qp_rts(sqp, T_QKEY, 1000), 0);
	assert_int_equal(t_qp_rts(rqp, T_QKEY, 0), 0);
	assert_int_equal(ibv_attach_mcast(rqp, &f->e.mgid, 0), 0);
	for (int i = 0; i < N; i++) {
		struct ibv_sge rs = {(uintptr_t)rbuf + (size_t)i * (2 * CH + 40), 2 * CH + 40,
				     rmr->lkey};
		struct ibv_recv_wr rw = {.wr_id = (uint64_t)i, .sg_list = &rs, .num_sge = 1}, *rb;

		assert_int_equal(ibv_post_recv(rqp, &rw, &rb), 0);
	}
	for (int i = 0; i < N; i++) {
		t_fill(sbuf + (size_t)i * CH, CH, 100 + (unsigned)i);
		sge[i] = (struct ibv_sge){(uintptr_t)sbuf + (size_t)i * CH, CH, smr->lkey};
		wr[i] = (struct ibv_send_wr){
			.wr_id = (uint64_t)i, .next = i + 1 < N ? &wr[i + 1] : NULL,
			.sg_list = &sge[i], .num_sge = 1, .opcode = IBV_WR_SEND,
			.wr.ud = {.ah = f->e.ah, .remote_qpn = 0xffffff, .remote_qkey = T_QKEY},
		};
	}
	sge[BAD].lkey ^= 0x100; /* no such MR */
	assert_int_equal(ibv_post_send(sqp, wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr[BAD]);

	for (int i = 0; i < BAD; i++) {
		assert_int_equal(t_wait_wc(scq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, (uint64_t)i);
	}
	assert_int_equal(ibv_poll_cq(scq, 1, &wc), 0);
	for (int i = 0; i < BAD; i++) {
		ssize_t n = t_sniff_recv(sn, pkt, sizeof(pkt), T_WAIT_MS);

		assert_int_equal(n, 12 + 8 + CH + 4);
		assert_int_equal(pkt[9] << 16 | pkt[10] << 8 | pkt[11], 1000 + i);
	}
	assert_int_equal(t_sniff_recv(sn, pkt, sizeof(pkt), 0), -1);
	for (int i = 0; i < BAD; i++) {
		uint8_t want[CH];

		assert_int_equal(t_wait_wc(rcq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, (uint64_t)i);
		assert_int_equal(wc.byte_len, 40 + CH);
		t_fill(want, CH, 100 + (unsigned)i);
		assert_memory_equal(rbuf + (size_t)i * (2 * CH + 40) + 40, want, CH);
	}
	t_assert_cq_empty(rcq);

	close(sn);
	assert_int_equal(ibv_detach_mcast(rqp, &f->e.mgid, 0), 0);
	assert_int_equal(ibv_destroy_qp(sqp), 0);
	assert_int_equal(ibv_destroy_qp(rqp), 0);
	assert_int_equal(ibv_destroy_cq(scq), 0);
	assert_int_equal(ibv_destroy_cq(rcq), 0);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	free(wr);
	free(sge);
	free(sbuf);
	free(rbuf);
}

/* After ibv_detach_mcast nothing more arrives at that QP. */
static void test_detach_stops_delivery(void **state)
{
	struct fx *f = *state;
	int sn = t_sniff_open(f->e.gip);
	unsigned long nog0;

	attach(f, &f->a);
	attach(f, &f->b);
	assert_int_equal(t_post_recv(&f->a, 0, 2048, 1), 0);
	assert_int_equal(t_post_recv(&f->b, 0, 2048, 2), 0);
	assert_int_equal(t_post_recv(&f->b, 2048, 2048, 3), 0);
	send_msg(f, &f->s, 16, 1, T_QKEY, false, 0, 0);
	expect_recv(&f->a, 0, 1, 16, 1, f->s.qp->qp_num, NULL);
	expect_recv(&f->b, 0, 2, 16, 1, f->s.qp->qp_num, NULL);
	assert_true(sniff(sn).len > 0);

	assert_int_equal(t_post_recv(&f->a, 0, 2048, 4), 0);
	assert_int_equal(ibv_detach_mcast(f->a.qp, &f->e.mgid, 0), 0);
	send_msg(f, &f->s, 17, 2, T_QKEY, false, 0, 0);
	expect_recv(&f->b, 2048, 3, 17, 2, f->s.qp->qp_num, NULL);
	t_assert_cq_empty(f->a.cq);
	assert_true(sniff(sn).len > 0);

	/* Last QP gone, membership kept: the datagram arrives and is counted. */
	assert_int_equal(ibv_detach_mcast(f->b.qp, &f->e.mgid, 0), 0);
	nog0 = T_CNT(f->e.dev, rx_no_group);
	send_msg(f, &f->s, 18, 3, T_QKEY, false, 0, 0);
	assert_true(sniff(sn).len > 0);
	assert_true(t_wait_counter(f->e.dev, &f->e.dev->cnt->rx_no_group, nog0 + 1, T_WAIT_MS));
	t_assert_cq_empty(f->a.cq);
	t_assert_cq_empty(f->b.cq);
	close(sn);
}

/* ------------------------------------------------------------------------- */
/* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, with a receiver in a second process.   */

static const char *self_exe = "/proc/self/exe";

struct child_report {
	int got;
	int status;
	uint32_t byte_len, src_qp, qp_num;
	int payload_ok;
	int extra; /* completions after the first */
};

/*
 * Child: attach a QP to the group, post receives, say "R"; then report the
 * first completion (pattern seed 11, 600 bytes) and whether a second
 * message (the parent's "done" marker, seed 12) came after it.
 */
static int child_main(uint32_t gip, int rfd, int wfd)
{
	struct t_env e;
	struct child_report rep = {0};
	uint8_t want[600];
	struct ibv_wc wc;
	struct t_qp r;
	char c;

	t_env_open(&e, gip, false);
	t_qp_make(&r, e.pd, 0, T_QKEY);
	assert_int_equal(t_post_recv(&r, 0, 2048, 1), 0);
	assert_int_equal(t_post_recv(&r, 2048, 2048, 2), 0);
	assert_int_equal(ibv_attach_mcast(r.qp, &e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(e.dev, &e.mgid, +1), 0);
	if (write(wfd, "R", 1) != 1)
		return 2;
	if (t_wait_wc(r.cq, &wc, T_WAIT_MS) == 1) {
		rep.got = 1;
		rep.status = wc.status;
		rep.byte_len = wc.byte_len;
		rep.src_qp = wc.src_qp;
		rep.qp_num = r.qp->qp_num;
		t_fill(want, sizeof(want), 11);
		rep.payload_ok = memcmp(r.buf + 40, want, sizeof(want)) == 0;
		/* The parent's second message: the marker. */
		if (t_wait_wc(r.cq, &wc, T_WAIT_MS) == 1)
			rep.extra = 1 + (wc.byte_len == 40 + 5);
	}
	if (write(wfd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		return 2;
	/* Stay until the parent has read the report. */
	(void)!t_read_full(rfd, &c, 1, 10 * T_WAIT_MS);
	ibv_detach_mcast(r.qp, &e.mgid, 0);
	umc_dev_member(e.dev, &e.mgid, -1);
	t_qp_free(&r);
	t_env_close(&e);
	return 0;
}

static pid_t spawn_child(uint32_t gip, int *to_child, int *from_child)
{
	int down[2], up[2];
	char a1[32], a2[16], a3[16];
	pid_t pid;

	assert_int_equal(pipe(down), 0);
	assert_int_equal(pipe(up), 0);
	snprintf(a1, sizeof(a1), "%u", gip);
	snprintf(a2, sizeof(a2), "%d", down[0]);
	snprintf(a3, sizeof(a3), "%d", up[1]);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		unsetenv("UMC_QPN_BASE");
		execl(self_exe, "test_verbs_delivery", "--child", a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	close(down[0]);
	close(up[1]);
	*to_child = down[1];
	*from_child = up[0];
	return pid;
}

static void test_block_self_mcast_lb(void **state)
{
	struct fx *f = *state;
	struct t_qp blk;
	struct child_report rep;
	unsigned long blocked0 = T_CNT(f->e.dev, rx_self_blocked);
	int to_child, from_child;
	char c = 0;

	t_qp_make(&blk, f->e.pd, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, T_QKEY);
	assert_int_equal(ibv_attach_mcast(blk.qp, &f->e.mgid, 0), 0);
	assert_int_equal(t_post_recv(&blk, 0, 2048, 1), 0);
	assert_int_equal(t_post_recv(&blk, 2048, 2048, 2), 0);

	pid_t pid = spawn_child(f->e.gip, &to_child, &from_child);

	assert_true(t_read_full(from_child, &c, 1, 10 * T_WAIT_MS));
	assert_int_equal(c, 'R');

	send_msg(f, &blk, 600, 11, T_QKEY, false, 0, 0);
	/* The sender's own QP: blocked and counted. */
	assert_true(t_wait_counter(f->e.dev, &f->e.dev->cnt->rx_self_blocked, blocked0 + 1, T_WAIT_MS));
	/* A marker from another QP of this process reaches the blocked QP ... */
	send_msg(f, &f->s, 5, 12, T_QKEY, false, 0, 0);
	struct ibv_wc wc;

	assert_int_equal(t_wait_wc(blk.cq, &wc, T_WAIT_MS), 1);
	/* ... and is the first thing it receives: message 1 never arrived. */
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.src_qp, f->s.qp->qp_num);
	assert_int_equal(wc.byte_len, 45);
	t_assert_cq_empty(blk.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_self_blocked), blocked0 + 1);

	/* The other process got message 1, intact, then the marker. */
	assert_true(t_read_full(from_child, &rep, sizeof(rep), 10 * T_WAIT_MS));
	assert_int_equal(write(to_child, "x", 1), 1);
	assert_int_equal(t_reap(pid, 10 * T_WAIT_MS), 0);
	close(to_child);
	close(from_child);
	assert_int_equal(rep.got, 1);
	assert_int_equal(rep.status, IBV_WC_SUCCESS);
	assert_int_equal(rep.byte_len, 640);
	assert_int_equal(rep.src_qp, blk.qp->qp_num);
	assert_true(rep.payload_ok);
	assert_int_equal(rep.extra, 2);

	assert_int_equal(ibv_detach_mcast(blk.qp, &f->e.mgid, 0), 0);
	t_qp_free(&blk);
}

/* ------------------------------------------------------------------------- */
/* Completion channels.                                                      */

struct chfx {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq; /* replaces A's CQ */
	struct ibv_qp *qp;
};

static int cq_ctx_marker;

/* A receiver QP whose CQ reports to a completion channel. */
static void ch_make(struct fx *f, struct chfx *c)
{
	c->ch = ibv_create_comp_channel(f->e.ctx);
	assert_non_null(c->ch);
	c->cq = ibv_create_cq(f->e.ctx, 64, &cq_ctx_marker, c->ch, 0);
	assert_non_null(c->cq);
	assert_ptr_equal(c->cq->channel, c->ch);
	c->qp = t_create_qp(f->e.pd, c->cq, 0);
	assert_non_null(c->qp);
	assert_int_equal(t_qp_rts(c->qp, T_QKEY, 0), 0);
	assert_int_equal(ibv_attach_mcast(c->qp, &f->e.mgid, 0), 0);
	for (int i = 0; i < 4; i++) {
		struct ibv_sge sge = {(uintptr_t)f->a.buf + (size_t)i * 2048, 2048, f->a.mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1}, *bad;

		assert_int_equal(ibv_post_recv(c->qp, &wr, &bad), 0);
	}
}

static void ch_free(struct fx *f, struct chfx *c)
{
	assert_int_equal(ibv_detach_mcast(c->qp, &f->e.mgid, 0), 0);
	assert_int_equal(ibv_destroy_qp(c->qp), 0);
	/* The channel is busy while a CQ uses it. */
	assert_int_equal(ibv_destroy_comp_channel(c->ch), EBUSY);
	assert_int_equal(ibv_destroy_cq(c->cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(c->ch), 0);
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

static int poll_in(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms);
}

/* Nonblocking ibv_get_cq_event until an event (0) or @ms pass (-1/EAGAIN). */
static int get_event_within(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx, int ms)
{
	uint64_t deadline = t_now_ms() + (uint64_t)ms;

	for (;;) {
		errno = 0;
		if (ibv_get_cq_event(ch, cq, ctx) == 0)
			return 0;
		assert_int_equal(errno, EAGAIN);
		if (t_now_ms() > deadline)
			return -1;
		poll_in(ch->fd, 10);
	}
}

/* No event is waiting on @ch (non-blocking): -1 with EAGAIN. */
static void assert_no_event(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;

	errno = 0;
	assert_int_equal(ibv_get_cq_event(ch, &cq, &ctx), -1);
	assert_int_equal(errno, EAGAIN);
}

static void test_channel_wakes_on_datagram(void **state)
{
	struct fx *f = *state;
	struct chfx c;
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	struct ibv_wc wc;

	ch_make(f, &c);
	assert_int_equal(ibv_req_notify_cq(c.cq, 0), 0);
	/* Nothing yet: poll(2) times out at once. */
	assert_int_equal(poll_in(c.ch->fd, 0), 0);

	send_msg(f, &f->s, 21, 1, T_QKEY, true, htonl(0x01020304), 0);
	assert_int_equal(poll_in(c.ch->fd, T_WAIT_MS), 1);
	/* Blocking ibv_get_cq_event: bounded by an alarm, must return now. */
	alarm(10);
	assert_int_equal(ibv_get_cq_event(c.ch, &ev_cq, &ev_ctx), 0);
	alarm(0);
	assert_ptr_equal(ev_cq, c.cq);
	assert_ptr_equal(ev_ctx, &cq_ctx_marker);
	ibv_ack_cq_events(ev_cq, 1);
	assert_int_equal(ibv_poll_cq(c.cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 61);
	assert_int_equal(wc.imm_data, htonl(0x01020304));
	assert_int_equal(ibv_poll_cq(c.cq, 1, &wc), 0);

	/* The event was consumed: the channel is quiet again. */
	set_nonblock(c.ch->fd);
	assert_no_event(c.ch);

	/* Re-armed, the next datagram raises the next event. */
	assert_int_equal(ibv_req_notify_cq(c.cq, 0), 0);
	send_msg(f, &f->s, 22, 2, T_QKEY, false, 0, 0);
	assert_int_equal(get_event_within(c.ch, &ev_cq, &ev_ctx, T_WAIT_MS), 0);
	assert_ptr_equal(ev_cq, c.cq);
	ibv_ack_cq_events(ev_cq, 1);
	assert_int_equal(ibv_poll_cq(c.cq, 1, &wc), 1);
	assert_int_equal(wc.byte_len, 62);
	ch_free(f, &c);
}

static void test_channel_nonblock_eagain(void **state)
{
	struct fx *f = *state;
	struct chfx c;
	struct ibv_wc wc;

	ch_make(f, &c);
	set_nonblock(c.ch->fd);
	/* Nothing pending, not armed. */
	assert_no_event(c.ch);
	/* Armed, nothing pending. */
	assert_int_equal(ibv_req_notify_cq(c.cq, 0), 0);
	assert_no_event(c.ch);
	assert_int_equal(poll_in(c.ch->fd, 0), 0);
	ch_free(f, &c);

	/*
	 * Not armed: a completion arrives but raises no event.  An event is
	 * raised when the completion is added, so once the completion is
	 * there the answer is final.
	 */
	ch_make(f, &c);
	set_nonblock(c.ch->fd);
	send_msg(f, &f->s, 9, 1, T_QKEY, false, 0, 0);
	assert_int_equal(t_wait_wc(c.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.byte_len, 49);
	assert_no_event(c.ch);
	ch_free(f, &c);
}

/*
 * Events go to the channel of the CQ they complete on, as armed: C is armed
 * for solicited events only, D for any.  An unsolicited datagram raises
 * D's event and not C's; C's fd may wake for it (both channels watch the
 * device's sockets while a CQ of theirs is armed: umcast(7)), but a
 * non-blocking ibv_get_cq_event on C finds no event, whichever channel
 * receives the datagram first.  Then a solicited one raises C's event and
 * not D's, which is not armed any more.
 */
static void test_channel_events_per_channel(void **state)
{
	struct fx *f = *state;
	struct chfx c, d;
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;

	ch_make(f, &c);
	ch_make(f, &d);
	set_nonblock(c.ch->fd);
	set_nonblock(d.ch->fd);
	assert_int_equal(ibv_req_notify_cq(c.cq, 1), 0); /* solicited only */
	assert_int_equal(ibv_req_notify_cq(d.cq, 0), 0); /* any completion */

	send_msg(f, &f->s, 16, 1, T_QKEY, false, 0, 0);
	assert_int_equal(get_event_within(d.ch, &ev_cq, &ev_ctx, T_WAIT_MS), 0);
	assert_ptr_equal(ev_cq, d.cq);
	ibv_ack_cq_events(ev_cq, 1);
	assert_no_event(c.ch);
	/* D is not armed any more: the next datagram raises only C's event. */
	send_msg(f, &f->s, 17, 2, T_QKEY, true, htonl(5), IBV_SEND_SOLICITED);
	assert_int_equal(get_event_within(c.ch, &ev_cq, &ev_ctx, T_WAIT_MS), 0);
	assert_ptr_equal(ev_cq, c.cq);
	ibv_ack_cq_events(ev_cq, 1);
	assert_no_event(d.ch);
	/* Nothing queued, nothing waiting: both fds quiet. */
	assert_int_equal(poll_in(c.ch->fd, 0), 0);
	assert_int_equal(poll_in(d.ch->fd, 0), 0);

	/* Both QPs got both datagrams. */
	struct ibv_wc wc[4];

	assert_int_equal(t_wait_wc(c.cq, &wc[0], T_WAIT_MS), 1);
	assert_int_equal(t_wait_wc(c.cq, &wc[1], T_WAIT_MS), 1);
	assert_int_equal(t_wait_wc(d.cq, &wc[2], T_WAIT_MS), 1);
	assert_int_equal(t_wait_wc(d.cq, &wc[3], T_WAIT_MS), 1);
	assert_int_equal(wc[0].byte_len, 56);
	assert_int_equal(wc[1].byte_len, 57);
	assert_int_equal(wc[2].byte_len, 56);
	assert_int_equal(wc[3].byte_len, 57);
	ch_free(f, &c);
	ch_free(f, &d);
}

/* ibv_destroy_cq is EBUSY while an event it returned is not acked (umcast(7)). */
static void test_destroy_cq_with_unacked_event(void **state)
{
	struct fx *f = *state;
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	struct ibv_wc wc;
	struct chfx c;

	ch_make(f, &c);
	assert_int_equal(ibv_req_notify_cq(c.cq, 0), 0);
	send_msg(f, &f->s, 8, 1, T_QKEY, false, 0, 0);
	alarm(10);
	assert_int_equal(ibv_get_cq_event(c.ch, &ev_cq, &ev_ctx), 0);
	alarm(0);
	assert_int_equal(ibv_poll_cq(c.cq, 1, &wc), 1);
	assert_int_equal(ibv_detach_mcast(c.qp, &f->e.mgid, 0), 0);
	assert_int_equal(ibv_destroy_qp(c.qp), 0);
	assert_int_equal(ibv_destroy_cq(c.cq), EBUSY);
	ibv_ack_cq_events(ev_cq, 1);
	assert_int_equal(ibv_destroy_cq(c.cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(c.ch), 0);
}

static void test_solicited_only(void **state)
{
	struct fx *f = *state;
	int sn = t_sniff_open(f->e.gip);
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;
	struct wire w;
	struct chfx c;

	ch_make(f, &c);
	set_nonblock(c.ch->fd);
	assert_int_equal(ibv_req_notify_cq(c.cq, 1), 0);

	/* Not solicited: completes, no event. */
	send_msg(f, &f->s, 10, 1, T_QKEY, false, 0, 0);
	w = sniff(sn);
	assert_int_equal(w.len, 12 + 8 + 10 + 2 + 4);
	assert_int_equal(w.flags & 0x80, 0); /* BTH SE clear */
	assert_int_equal(t_wait_wc(c.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.byte_len, 50);
	assert_no_event(c.ch);

	/* Solicited: SE on the wire, and the event fires. */
	send_msg(f, &f->s, 11, 2, T_QKEY, true, htonl(7), IBV_SEND_SOLICITED);
	w = sniff(sn);
	assert_int_equal(w.opcode, 0x65);
	assert_int_equal(w.flags & 0x80, 0x80); /* BTH SE set */
	assert_int_equal(get_event_within(c.ch, &ev_cq, &ev_ctx, T_WAIT_MS), 0);
	assert_ptr_equal(ev_cq, c.cq);
	ibv_ack_cq_events(ev_cq, 1);
	assert_int_equal(ibv_poll_cq(c.cq, 1, &wc), 1);
	assert_int_equal(wc.byte_len, 51);
	assert_int_equal(wc.imm_data, htonl(7));

	/* Fired once: a further solicited message raises nothing until re-armed. */
	send_msg(f, &f->s, 12, 3, T_QKEY, false, 0, IBV_SEND_SOLICITED);
	assert_true(sniff(sn).len > 0);
	assert_int_equal(t_wait_wc(c.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.byte_len, 52);
	assert_no_event(c.ch);
	ch_free(f, &c);
	close(sn);
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "--child") == 0)
		return child_main((uint32_t)strtoul(argv[2], NULL, 10), atoi(argv[3]),
				  atoi(argv[4]));

	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_two_qps_both_get_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scatter_sges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gather_inline_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receive_needs_rtr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sender_attached_gets_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_attach_one_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qkey_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modify_while_receiving, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_recv_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_buffer_loc_len_err, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_above_mtu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_send_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_detach_stops_delivery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_self_mcast_lb, setup, teardown),
		cmocka_unit_test_setup_teardown(test_channel_wakes_on_datagram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_channel_nonblock_eagain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_channel_events_per_channel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_cq_with_unacked_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_solicited_only, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
