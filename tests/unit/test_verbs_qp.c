// SPDX-License-Identifier: MIT
/*
 * test_verbs_qp.c - the UD QP state machine and the checks made when a
 * work request is posted.
 *
 * References: IBA 10.3.1 / the kernel's qp_state_table for UD (required
 * and optional attributes of each transition: RESET->INIT needs
 * PKEY_INDEX|PORT|QKEY, INIT->RTR takes PKEY_INDEX|QKEY, RTR->RTS needs
 * SQ_PSN and takes CUR_STATE|QKEY; anything else is EINVAL); ibv_post_send
 * needs RTS, ibv_post_recv is refused in RESET; an SGE must lie inside a
 * live MR of the QP's PD (a receive needs local write), and *bad_wr is the
 * first WR not posted (ibv_post_send(3), ibv_post_recv(3)).
 */
#include "verbs_util.h"

/* The QP in RESET, an AH to group 1, a registered 4096-byte buffer. */
static int setup(void **state)
{
	return t_fx_setup(state, t_group_ip(1), true);
}

static enum ibv_qp_state qstate(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	assert_int_equal(a.qp_state, qp->state);
	return a.qp_state;
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s, int extra_mask, struct ibv_qp_attr *a)
{
	struct ibv_qp_attr dflt = {.port_num = 1, .qkey = T_QKEY};

	if (!a)
		a = &dflt;
	a->qp_state = s;
	return ibv_modify_qp(qp, a, IBV_QP_STATE | extra_mask);
}

enum { INIT_MASK = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY };

/* ibv_dealloc_pd(3): EBUSY while a QP, an MR or an AH still uses the PD. */
static void test_dealloc_pd_busy(void **state)
{
	struct ibv_context *ctx = t_open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	static uint8_t buf[64];
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;

	assert_non_null(pd);
	assert_non_null(cq);
	qp = t_create_qp(pd, cq, 0);
	assert_non_null(qp);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	ah = t_ipv4_ah(pd, t_group_ip(77));
	assert_non_null(ah);

	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY); /* the MR and the AH */
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY); /* the AH */
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void test_create_defaults(void **state)
{
	struct t_fx *f = *state;
	struct ibv_qp *qp2 = t_create_qp(f->e.pd, f->cq, 0);
	struct ibv_qp_init_attr bad = {
		.send_cq = f->cq, .recv_cq = f->cq, .qp_type = IBV_QPT_UD, .cap = {1, 1, 1, 1},
	};

	assert_non_null(qp2);
	assert_int_equal(f->qp->state, IBV_QPS_RESET);
	assert_int_equal(qstate(f->qp), IBV_QPS_RESET);
	assert_int_equal(f->qp->qp_type, IBV_QPT_UD);
	/* QPN 0 and 1 are special, 0xFFFFFF is the multicast QPN. */
	assert_true(f->qp->qp_num >= 2 && f->qp->qp_num < 0xffffff);
	assert_true(qp2->qp_num >= 2 && qp2->qp_num < 0xffffff);
	assert_int_not_equal(f->qp->qp_num, qp2->qp_num);
	assert_int_equal(ibv_destroy_qp(qp2), 0);

	/* Only UD exists; an RC QP is refused, the CQs are required. */
	bad.qp_type = IBV_QPT_RC;
	assert_null(ibv_create_qp(f->e.pd, &bad));
	bad.qp_type = IBV_QPT_UD;
	bad.send_cq = NULL;
	errno = 0;
	assert_null(ibv_create_qp(f->e.pd, &bad));
	assert_int_equal(errno, EINVAL);
}

static void test_valid_path(void **state)
{
	struct t_fx *f = *state;
	struct ibv_qp_attr a = {.pkey_index = 0, .port_num = 1, .qkey = 0x11223344}, q;
	struct ibv_qp_init_attr ia;

	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, &a), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_INIT);
	assert_int_equal(ibv_query_qp(f->qp, &q, IBV_QP_QKEY | IBV_QP_PORT, &ia), 0);
	assert_int_equal(q.qkey, 0x11223344);
	assert_int_equal(q.port_num, 1);

	/* INIT -> INIT may change the Q_Key. */
	a.qkey = T_QKEY;
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, IBV_QP_QKEY, &a), 0);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTR, 0, NULL), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_RTR);

	a.sq_psn = 0x123456;
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_SQ_PSN, &a), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_RTS);
	assert_int_equal(ibv_query_qp(f->qp, &q, IBV_QP_SQ_PSN | IBV_QP_QKEY, &ia), 0);
	assert_int_equal(q.sq_psn, 0x123456);
	assert_int_equal(q.qkey, T_QKEY);

	/* RTS -> RTS with a new Q_Key; RTS -> ERR -> RESET -> INIT again. */
	a.qkey = 0x55;
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_QKEY, &a), 0);
	assert_int_equal(ibv_query_qp(f->qp, &q, IBV_QP_QKEY, &ia), 0);
	assert_int_equal(q.qkey, 0x55);
	assert_int_equal(to_state(f->qp, IBV_QPS_ERR, 0, NULL), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_ERR);
	assert_int_equal(to_state(f->qp, IBV_QPS_RESET, 0, NULL), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_RESET);
	assert_int_equal(t_qp_rts(f->qp, T_QKEY, 7), 0);
	assert_int_equal(qstate(f->qp), IBV_QPS_RTS);
}

static void test_missing_attrs(void **state)
{
	struct t_fx *f = *state;
	static const int required[] = {IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_QKEY};

	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK & ~required[i], NULL), EINVAL);
		assert_int_equal(qstate(f->qp), IBV_QPS_RESET);
	}
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, NULL), 0);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTR, 0, NULL), 0);
	/* RTR -> RTS requires SQ_PSN. */
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, 0, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_QKEY, NULL), EINVAL);
	assert_int_equal(qstate(f->qp), IBV_QPS_RTR);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_SQ_PSN, NULL), 0);
}

static void test_extra_attrs(void **state)
{
	struct t_fx *f = *state;

	/* RESET -> INIT takes nothing beyond its three. */
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK | IBV_QP_SQ_PSN, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK | IBV_QP_AV, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK | IBV_QP_DEST_QPN, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK | IBV_QP_PATH_MTU, NULL), EINVAL);
	assert_int_equal(qstate(f->qp), IBV_QPS_RESET);
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, NULL), 0);
	/* INIT -> RTR: no port, no PSN, no path for UD. */
	assert_int_equal(to_state(f->qp, IBV_QPS_RTR, IBV_QP_PORT, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTR, IBV_QP_SQ_PSN, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTR, IBV_QP_AV, NULL), EINVAL);
	assert_int_equal(qstate(f->qp), IBV_QPS_INIT);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTR, IBV_QP_QKEY | IBV_QP_PKEY_INDEX, NULL), 0);
	/* RTR -> RTS: no port, no pkey index, no timeout. */
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_SQ_PSN | IBV_QP_PORT, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_SQ_PSN | IBV_QP_PKEY_INDEX, NULL),
			 EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT, NULL),
			 EINVAL);
	assert_int_equal(qstate(f->qp), IBV_QPS_RTR);
}

static void test_invalid_transitions(void **state)
{
	struct t_fx *f = *state;
	struct ibv_qp_attr a = {.port_num = 2, .qkey = T_QKEY};

	assert_int_equal(to_state(f->qp, IBV_QPS_RTR, 0, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_SQ_PSN, NULL), EINVAL);
	assert_int_equal(to_state(f->qp, IBV_QPS_SQD, 0, NULL), EINVAL);
	assert_int_equal(qstate(f->qp), IBV_QPS_RESET);
	/* Bad port and P_Key index. */
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, &a), EINVAL);
	a.port_num = 1;
	a.pkey_index = 64;
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, &a), EINVAL);
	assert_int_equal(qstate(f->qp), IBV_QPS_RESET);
	/* CUR_STATE must match the current state. */
	assert_int_equal(t_qp_rts(f->qp, T_QKEY, 0), 0);
	a.pkey_index = 0;
	a.cur_qp_state = IBV_QPS_RTR;
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_CUR_STATE, &a), EINVAL);
	a.cur_qp_state = IBV_QPS_RTS;
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_CUR_STATE, &a), 0);
	/* INIT -> RTS skips RTR. */
	assert_int_equal(to_state(f->qp, IBV_QPS_RESET, 0, NULL), 0);
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, NULL), 0);
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_SQ_PSN, NULL), EINVAL);
	assert_int_equal(qstate(f->qp), IBV_QPS_INIT);
}

static void send_wr(struct t_fx *f, struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t id)
{
	memset(wr, 0, sizeof(*wr));
	*sge = (struct ibv_sge){.addr = (uintptr_t)f->buf, .length = 64, .lkey = f->mr->lkey};
	wr->wr_id = id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->wr.ud.ah = f->e.ah;
	wr->wr.ud.remote_qpn = 0xffffff;
	wr->wr.ud.remote_qkey = T_QKEY;
}

static void test_post_send_before_rts(void **state)
{
	struct t_fx *f = *state;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	unsigned long tx0 = T_CNT(f->e.dev, tx_packets);
	struct ibv_wc wc;

	send_wr(f, &wr, &sge, 1);
	for (int s = IBV_QPS_RESET; s <= IBV_QPS_RTR; s++) {
		if (s == IBV_QPS_INIT)
			assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, NULL), 0);
		if (s == IBV_QPS_RTR)
			assert_int_equal(to_state(f->qp, IBV_QPS_RTR, 0, NULL), 0);
		assert_int_equal(qstate(f->qp), s);
		bad = NULL;
		assert_int_equal(ibv_post_send(f->qp, &wr, &bad), EINVAL);
		assert_ptr_equal(bad, &wr);
	}
	assert_int_equal(T_CNT(f->e.dev, tx_packets), tx0);
	assert_int_equal(ibv_poll_cq(f->cq, 1, &wc), 0);
	/* In RTS the same WR goes out. */
	assert_int_equal(to_state(f->qp, IBV_QPS_RTS, IBV_QP_SQ_PSN, NULL), 0);
	bad = NULL;
	assert_int_equal(ibv_post_send(f->qp, &wr, &bad), 0);
	assert_null(bad);
	assert_int_equal(T_CNT(f->e.dev, tx_packets), tx0 + 1);
	t_wait_send(f->cq, 1);
}

static void recv_wr(struct t_fx *f, struct ibv_recv_wr *wr, struct ibv_sge *sge, uint64_t id)
{
	memset(wr, 0, sizeof(*wr));
	*sge = (struct ibv_sge){.addr = (uintptr_t)f->buf, .length = 1024, .lkey = f->mr->lkey};
	wr->wr_id = id;
	wr->sg_list = sge;
	wr->num_sge = 1;
}

/* Move to ERR and collect the flushed receives' wr_ids. */
static int flushed_ids(struct t_fx *f, uint64_t *ids, int max)
{
	struct ibv_wc wc;
	int n = 0;

	assert_int_equal(to_state(f->qp, IBV_QPS_ERR, 0, NULL), 0);
	while (ibv_poll_cq(f->cq, 1, &wc) == 1) {
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc.qp_num, f->qp->qp_num);
		assert_true(n < max);
		ids[n++] = wc.wr_id;
	}
	return n;
}

static void test_post_recv_reset(void **state)
{
	struct t_fx *f = *state;
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;
	uint64_t ids[4];

	recv_wr(f, &wr, &sge, 77);
	assert_int_equal(ibv_post_recv(f->qp, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	/* Allowed from INIT on. */
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, NULL), 0);
	bad = NULL;
	assert_int_equal(ibv_post_recv(f->qp, &wr, &bad), 0);
	assert_null(bad);
	/* Exactly one receive was queued: the RESET attempt left nothing. */
	assert_int_equal(flushed_ids(f, ids, 4), 1);
	assert_int_equal(ids[0], 77);
}

static void test_post_send_bad_sge(void **state)
{
	struct t_fx *f = *state;
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge[2];
	struct ibv_wc wc;
	unsigned long tx0;
	uint8_t *other = calloc(1, 4096);
	struct ibv_pd *pd2 = ibv_alloc_pd(f->e.ctx);
	struct ibv_mr *mr2 = ibv_reg_mr(pd2, other, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *dead = ibv_reg_mr(f->e.pd, other, 4096, 0);
	uint32_t dead_lkey = dead->lkey;

	assert_int_equal(ibv_dereg_mr(dead), 0);
	assert_int_equal(t_qp_rts(f->qp, T_QKEY, 0), 0);
	struct {
		uint64_t addr;
		uint32_t len, lkey;
	} cases[] = {
		{(uintptr_t)f->buf, 64, f->mr->lkey ^ 0x100},	  /* unknown lkey */
		{(uintptr_t)f->buf, 64, dead_lkey},		  /* deregistered MR */
		{(uintptr_t)other, 64, mr2->lkey},		  /* MR of another PD */
		{(uintptr_t)f->buf + 4096, 1, f->mr->lkey},	  /* starts past the end */
		{(uintptr_t)f->buf + 4000, 97, f->mr->lkey},	  /* runs past the end */
		{(uintptr_t)f->buf - 1, 2, f->mr->lkey},	  /* starts before */
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tx0 = T_CNT(f->e.dev, tx_packets);
		send_wr(f, &wr[0], &sge[0], 100 + i);
		send_wr(f, &wr[1], &sge[1], 200 + i);
		wr[0].next = &wr[1];
		sge[1] = (struct ibv_sge){cases[i].addr, cases[i].len, cases[i].lkey};
		bad = NULL;
		assert_int_equal(ibv_post_send(f->qp, &wr[0], &bad), EINVAL);
		assert_ptr_equal(bad, &wr[1]);
		/* The first WR was posted and sent, the second was not. */
		assert_int_equal(T_CNT(f->e.dev, tx_packets), tx0 + 1);
		assert_int_equal(ibv_poll_cq(f->cq, 1, &wc), 1);
		assert_int_equal(wc.wr_id, 100 + i);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(ibv_poll_cq(f->cq, 1, &wc), 0);
	}
	/* The last byte of the MR exactly: fine. */
	send_wr(f, &wr[0], &sge[0], 300);
	sge[0] = (struct ibv_sge){(uintptr_t)f->buf + 4095, 1, f->mr->lkey};
	assert_int_equal(ibv_post_send(f->qp, &wr[0], &bad), 0);
	t_wait_send(f->cq, 300);
	/* More SGEs than max_send_sge (4). */
	struct ibv_sge many[5];

	for (int i = 0; i < 5; i++)
		many[i] = (struct ibv_sge){(uintptr_t)f->buf + i * 8, 8, f->mr->lkey};
	send_wr(f, &wr[0], &sge[0], 301);
	wr[0].sg_list = many;
	wr[0].num_sge = 5;
	bad = NULL;
	assert_int_equal(ibv_post_send(f->qp, &wr[0], &bad), EINVAL);
	assert_ptr_equal(bad, &wr[0]);
	/* Not a UD opcode. */
	send_wr(f, &wr[0], &sge[0], 302);
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	bad = NULL;
	assert_int_equal(ibv_post_send(f->qp, &wr[0], &bad), EINVAL);
	assert_ptr_equal(bad, &wr[0]);
	assert_int_equal(ibv_poll_cq(f->cq, 1, &wc), 0);

	ibv_dereg_mr(mr2);
	ibv_dealloc_pd(pd2);
	free(other);
}

static void test_post_recv_bad_sge(void **state)
{
	struct t_fx *f = *state;
	struct ibv_recv_wr wr[2], *bad;
	struct ibv_sge sge[2];
	uint64_t ids[8];
	struct ibv_mr *ro = ibv_reg_mr(f->e.pd, f->buf, 4096, 0); /* no local write */

	assert_non_null(ro);
	assert_int_equal(to_state(f->qp, IBV_QPS_INIT, INIT_MASK, NULL), 0);
	struct {
		uint64_t addr;
		uint32_t len, lkey;
	} cases[] = {
		{(uintptr_t)f->buf, 64, f->mr->lkey + 0x10000}, /* unknown lkey */
		{(uintptr_t)f->buf, 64, ro->lkey},		/* MR without local write */
		{(uintptr_t)f->buf + 4000, 200, f->mr->lkey},	/* runs past the end */
	};
	int n = (int)(sizeof(cases) / sizeof(cases[0]));

	for (int i = 0; i < n; i++) {
		recv_wr(f, &wr[0], &sge[0], 10 + i);
		recv_wr(f, &wr[1], &sge[1], 20 + i);
		wr[0].next = &wr[1];
		sge[1] = (struct ibv_sge){cases[i].addr, cases[i].len, cases[i].lkey};
		bad = NULL;
		assert_int_equal(ibv_post_recv(f->qp, &wr[0], &bad), EINVAL);
		assert_ptr_equal(bad, &wr[1]);
	}
	/* Too many SGEs (max_recv_sge 4). */
	struct ibv_sge many[5];

	for (int i = 0; i < 5; i++)
		many[i] = (struct ibv_sge){(uintptr_t)f->buf + i * 8, 8, f->mr->lkey};
	recv_wr(f, &wr[0], &sge[0], 99);
	wr[0].sg_list = many;
	wr[0].num_sge = 5;
	bad = NULL;
	assert_int_equal(ibv_post_recv(f->qp, &wr[0], &bad), EINVAL);
	assert_ptr_equal(bad, &wr[0]);

	/* Exactly the good first WR of each chain was queued, in order. */
	assert_int_equal(flushed_ids(f, ids, 8), n);
	for (int i = 0; i < n; i++)
		assert_int_equal(ids[i], 10 + i);
	assert_int_equal(ibv_dereg_mr(ro), 0);
}

/* A QP in ERR completes new receives at once with WR_FLUSH_ERR. */
static void test_post_recv_in_err(void **state)
{
	struct t_fx *f = *state;
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge;
	struct ibv_wc wc;

	assert_int_equal(to_state(f->qp, IBV_QPS_ERR, 0, NULL), 0);
	recv_wr(f, &wr, &sge, 5);
	assert_int_equal(ibv_post_recv(f->qp, &wr, &bad), 0);
	assert_int_equal(ibv_poll_cq(f->cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
}

/* The receive queue holds max_recv_wr WRs; one more is ENOMEM (ibv_post_recv(3)). */
static void test_post_recv_queue_full(void **state)
{
	struct t_fx *f = *state;
	struct ibv_qp_init_attr ia = {
		.send_cq = f->cq, .recv_cq = f->cq, .qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = 4, .max_recv_wr = 5, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(f->e.pd, &ia);
	struct ibv_qp_attr qa = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = T_QKEY};
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t cap;
	int n = 0;

	assert_non_null(qp);
	cap = ia.cap.max_recv_wr; /* granted, at least 5 */
	assert_true(cap >= 5);
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_STATE | INIT_MASK), 0);
	recv_wr(f, &wr, &sge, 0);
	for (uint32_t i = 0; i < cap; i++) {
		wr.wr_id = i;
		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
	}
	wr.wr_id = cap;
	bad = NULL;
	assert_int_equal(ibv_post_recv(qp, &wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr);
	qa.qp_state = IBV_QPS_ERR;
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
	while (ibv_poll_cq(f->cq, 1, &wc) == 1) {
		assert_int_equal(wc.wr_id, (uint64_t)n);
		n++;
	}
	assert_int_equal(n, (int)cap);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

/* With sq_sig_all 0 only IBV_SEND_SIGNALED sends complete. */
static void test_unsignaled_send(void **state)
{
	struct t_fx *f = *state;
	struct ibv_qp_init_attr ia = {
		.send_cq = f->cq, .recv_cq = f->cq, .qp_type = IBV_QPT_UD, .sq_sig_all = 0,
		.cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(f->e.pd, &ia);
	struct ibv_send_wr wr[3], *bad;
	struct ibv_sge sge[3];
	struct ibv_wc wc;

	assert_non_null(qp);
	assert_int_equal(t_qp_rts(qp, T_QKEY, 0), 0);
	for (int i = 0; i < 3; i++) {
		send_wr(f, &wr[i], &sge[i], (uint64_t)i);
		if (i)
			wr[i - 1].next = &wr[i];
	}
	wr[1].send_flags = IBV_SEND_SIGNALED;
	assert_int_equal(ibv_post_send(qp, &wr[0], &bad), 0);
	t_wait_send(f->cq, 1);
	assert_int_equal(ibv_poll_cq(f->cq, 1, &wc), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

/* ------------------------------------------------------------------------- */
/* Queue depths (mlx5, rxe): a send WQE holds its slot until its completion  */
/* is reaped by ibv_poll_cq, an unsignaled one until a later signaled        */
/* completion of its QP is; a receive WQE until its completion is reaped.    */
/* A WR past the depth is ENOMEM with *bad_wr at it.                         */

/* A QP of @depth send WRs (@sig_all) on its own CQ of @cqe entries, in RTS. */
static struct ibv_qp *depth_qp(struct t_fx *f, uint32_t sdepth, uint32_t rdepth, int sig_all,
			       struct ibv_cq **cq, int cqe)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD, .sq_sig_all = sig_all,
		.cap = {.max_send_wr = sdepth, .max_recv_wr = rdepth, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp *qp;

	*cq = ibv_create_cq(f->e.ctx, cqe, NULL, NULL, 0);
	assert_non_null(*cq);
	ia.send_cq = ia.recv_cq = *cq;
	qp = ibv_create_qp(f->e.pd, &ia);
	assert_non_null(qp);
	/* The depth granted is the depth asked for, and the depth enforced. */
	assert_int_equal(ia.cap.max_send_wr, sdepth);
	assert_int_equal(ia.cap.max_recv_wr, rdepth);
	assert_int_equal(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qia), 0);
	assert_int_equal(qa.cap.max_send_wr, sdepth);
	assert_int_equal(qia.cap.max_recv_wr, rdepth);
	assert_int_equal(t_qp_rts(qp, T_QKEY, 0), 0);
	return qp;
}

/* @n send WRs chained, wr_id = @id0 + i, flags @flags. */
static void send_chain(struct t_fx *f, struct ibv_send_wr *wr, struct ibv_sge *sge, int n,
		       uint64_t id0, int flags)
{
	for (int i = 0; i < n; i++) {
		send_wr(f, &wr[i], &sge[i], id0 + (uint64_t)i);
		wr[i].send_flags = (unsigned)flags;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
}

/* Poll @cq empty; returns how many completions it held, checking wr_ids from @id0 on. */
static int reap(struct ibv_cq *cq, uint64_t id0, enum ibv_wc_status st)
{
	struct ibv_wc wc;
	int n = 0;

	while (ibv_poll_cq(cq, 1, &wc) == 1) {
		assert_int_equal(wc.status, st);
		assert_int_equal(wc.wr_id, id0 + (uint64_t)n);
		n++;
	}
	return n;
}

static void test_send_queue_depth(void **state)
{
	struct t_fx *f = *state;
	enum { N = 64 };
	static struct ibv_send_wr wr[N];
	static struct ibv_sge sge[N];
	struct ibv_send_wr *bad = NULL;
	unsigned long tx0 = T_CNT(f->e.dev, tx_packets), ovf0 = T_CNT(f->e.dev, cq_overflow);
	struct ibv_cq *cq;
	struct ibv_qp *qp = depth_qp(f, 4, 4, 1, &cq, 256);
	struct ibv_wc wc;

	send_chain(f, wr, sge, N, 0, 0);
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[4]);
	assert_int_equal(T_CNT(f->e.dev, tx_packets), tx0 + 4);
	/* Still full until something is reaped. */
	bad = NULL;
	assert_int_equal(ibv_post_send(qp, &wr[4], &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[4]);
	assert_int_equal(T_CNT(f->e.dev, tx_packets), tx0 + 4);
	/* Reaping one completion frees one slot. */
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 0);
	assert_int_equal(ibv_post_send(qp, &wr[4], &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[5]);
	/* Reaping all frees all. */
	assert_int_equal(reap(cq, 1, IBV_WC_SUCCESS), 4);
	assert_int_equal(ibv_post_send(qp, &wr[5], &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[9]);
	assert_int_equal(reap(cq, 5, IBV_WC_SUCCESS), 4);
	assert_int_equal(T_CNT(f->e.dev, tx_packets), tx0 + 9);
	assert_int_equal(T_CNT(f->e.dev, cq_overflow), ovf0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

/* Unsignaled WQEs keep their slots until a later signaled completion is reaped. */
static void test_unsignaled_hold_slots(void **state)
{
	struct t_fx *f = *state;
	struct ibv_send_wr wr[8], *bad = NULL;
	struct ibv_sge sge[8];
	struct ibv_cq *cq;
	struct ibv_qp *qp = depth_qp(f, 4, 4, 0, &cq, 16);
	struct ibv_wc wc;

	/* 3 unsignaled + 1 signaled: full. */
	send_chain(f, wr, sge, 5, 0, 0);
	wr[3].send_flags = IBV_SEND_SIGNALED;
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[4]);
	/* The one completion frees all four. */
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	send_chain(f, wr, sge, 5, 10, IBV_SEND_SIGNALED);
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[4]);
	assert_int_equal(reap(cq, 10, IBV_WC_SUCCESS), 4);

	/* Two unsignaled: no completion, and their slots stay taken. */
	send_chain(f, wr, sge, 2, 20, 0);
	assert_int_equal(ibv_post_send(qp, wr, &bad), 0);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	send_chain(f, wr, sge, 3, 30, IBV_SEND_SIGNALED);
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[2]);
	/* The first signaled completion retires the two unsignaled WQEs before it too. */
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 30);
	send_chain(f, wr, sge, 4, 40, IBV_SEND_SIGNALED);
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[3]); /* 31 still holds one slot */
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(reap(cq, 40, IBV_WC_SUCCESS), 3);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

/* sq_sig_all: every WR is signaled whatever its flags, each completion frees its own slot. */
static void test_sq_sig_all_depth(void **state)
{
	struct t_fx *f = *state;
	struct ibv_send_wr wr[6], *bad = NULL;
	struct ibv_sge sge[6];
	struct ibv_cq *cq;
	struct ibv_qp *qp = depth_qp(f, 2, 1, 1, &cq, 8);
	struct ibv_wc wc;

	send_chain(f, wr, sge, 3, 0, 0);
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[2]);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 0);
	assert_int_equal(ibv_post_send(qp, &wr[2], &bad), 0);
	assert_int_equal(reap(cq, 1, IBV_WC_SUCCESS), 2);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

/*
 * A CQ with room for both queues never overflows: the QP sends to a group
 * it is attached to (it gets a copy of each datagram, as rxe's
 * rxe_rcv_mcast_pkt() gives), and however much the application posts without polling, the CQ
 * holds every completion.
 */
static void test_cq_sized_for_queues(void **state)
{
	struct t_fx *f = *state;
	enum { SD = 3, RD = 4, CH = 16 };
	struct ibv_send_wr wr[CH], *bad;
	struct ibv_sge sge[CH];
	struct ibv_cq *cq;
	/* ibv_create_cq may give more than asked: ask for exactly SD + RD. */
	struct ibv_qp *qp = depth_qp(f, SD, RD, 1, &cq, SD + RD);
	unsigned long ovf0 = T_CNT(f->e.dev, cq_overflow);
	unsigned long del0 = T_CNT(f->e.dev, rx_delivered);
	int sends = 0, recvs = 0, got_s = 0, got_r = 0;

	assert_int_equal(umc_dev_member(f->e.dev, &f->e.mgid, +1), 0);
	assert_int_equal(ibv_attach_mcast(qp, &f->e.mgid, 0), 0);
	for (int round = 0; round < 3; round++) {
		for (int k = 0; k < CH; k++) {
			struct ibv_recv_wr rw, *rb;
			struct ibv_sge rs;

			recv_wr(f, &rw, &rs, (uint64_t)(100 + recvs));
			rs.addr = (uintptr_t)f->buf + 2048;
			rs.length = 2048;
			if (ibv_post_recv(qp, &rw, &rb))
				break;
			recvs++;
		}
		bad = NULL;
		send_chain(f, wr, sge, CH, (uint64_t)sends, 0);
		int ret = ibv_post_send(qp, wr, &bad);

		if (round == 0) {
			assert_int_equal(ret, ENOMEM);
			assert_ptr_equal(bad, &wr[SD]);
		}
		sends += ret ? (int)(bad - wr) : CH;
		/* Let every datagram sent so far be received (or find no receive). */
		assert_true(t_wait_counter(f->e.dev, &f->e.dev->cnt->rx_delivered,
					   del0 + (unsigned long)(sends < recvs ? sends : recvs),
					   T_WAIT_MS));
		assert_int_equal(T_CNT(f->e.dev, cq_overflow), ovf0);
	}
	/* Only the first round could post: nothing was reaped in between. */
	assert_int_equal(sends, SD);
	assert_int_equal(recvs, RD);
	struct ibv_wc wc;

	while (ibv_poll_cq(cq, 1, &wc) == 1) {
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_SEND)
			got_s++;
		else
			got_r++;
	}
	assert_int_equal(got_s, SD);
	assert_int_equal(got_r, SD);
	assert_int_equal(T_CNT(f->e.dev, cq_overflow), ovf0);
	assert_int_equal(ibv_detach_mcast(qp, &f->e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(f->e.dev, &f->e.mgid, -1), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

/*
 * Completions outlive their QP's reset and destruction: they stay in the
 * CQ (as on rxe) and free nothing when reaped; RESET empties both queues.
 */
static void test_completions_outlive_qp(void **state)
{
	struct t_fx *f = *state;
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sge[4];
	struct ibv_cq *cq;
	struct ibv_qp *qp = depth_qp(f, 2, 2, 1, &cq, 16);
	uint32_t qpn = qp->qp_num;
	struct ibv_wc wc[2];

	send_chain(f, wr, sge, 2, 0, 0);
	assert_int_equal(ibv_post_send(qp, wr, &bad), 0);
	/* RESET: the queues are empty again, the completions stay. */
	assert_int_equal(to_state(qp, IBV_QPS_RESET, 0, NULL), 0);
	assert_int_equal(t_qp_rts(qp, T_QKEY, 0), 0);
	send_chain(f, wr, sge, 3, 10, 0);
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[2]);
	assert_int_equal(ibv_poll_cq(cq, 2, wc), 2);
	assert_int_equal(wc[0].wr_id, 0);
	assert_int_equal(wc[1].wr_id, 1);
	/* Reaping the pre-reset completions freed nothing. */
	assert_int_equal(ibv_post_send(qp, &wr[2], &bad), ENOMEM);
	/* Destroyed with its completions in the CQ: they are still there, intact. */
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_poll_cq(cq, 2, wc), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(wc[i].wr_id, 10 + i);
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].qp_num, qpn);
	}
	assert_int_equal(ibv_poll_cq(cq, 1, wc), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

/*
 * IBA 10.3.1 (error state) and rxe: a send posted to a QP in the error
 * state is accepted and completes with IBV_WC_WR_FLUSH_ERR, signaled or
 * not; nothing is sent and no PSN is used.  It holds its slot like any WR.
 */
static void test_post_send_in_err(void **state)
{
	struct t_fx *f = *state;
	struct ibv_send_wr wr[4], *bad = NULL;
	struct ibv_sge sge[4];
	struct ibv_cq *cq;
	struct ibv_qp *qp = depth_qp(f, 3, 1, 0, &cq, 16);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	unsigned long tx0 = T_CNT(f->e.dev, tx_packets);
	struct ibv_wc wc;

	assert_int_equal(to_state(qp, IBV_QPS_ERR, 0, NULL), 0);
	send_chain(f, wr, sge, 4, 0, 0);
	wr[1].send_flags = IBV_SEND_SIGNALED;
	wr[2].opcode = IBV_WR_SEND_WITH_IMM;
	assert_int_equal(ibv_post_send(qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[3]);
	for (uint64_t id = 0; id < 3; id++) {
		assert_int_equal(ibv_poll_cq(cq, 1, &wc), 1);
		assert_int_equal(wc.wr_id, id);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc.qp_num, qp->qp_num);
	}
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	assert_int_equal(T_CNT(f->e.dev, tx_packets), tx0);
	assert_int_equal(ibv_query_qp(qp, &qa, IBV_QP_SQ_PSN, &qia), 0);
	assert_int_equal(qa.sq_psn, 0);
	/* A malformed WR is still refused at once. */
	send_wr(f, &wr[0], &sge[0], 9);
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	assert_int_equal(ibv_post_send(qp, wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr[0]);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

/* RoCE AHs need a GRH, port 1 and an SGID index inside the table. */
static void test_create_ah_checks(void **state)
{
	struct t_fx *f = *state;
	struct ibv_port_attr pa;
	struct ibv_ah_attr a = {
		.grh = {.dgid = t_group_gid(9), .sgid_index = 0, .hop_limit = 64},
		.is_global = 1,
		.port_num = 1,
	};
	struct ibv_ah *ah;

	assert_int_equal(ibv_query_port(f->e.ctx, 1, &pa), 0);
	ah = ibv_create_ah(f->e.pd, &a);
	assert_non_null(ah);
	assert_ptr_equal(ah->pd, f->e.pd);
	assert_int_equal(ibv_destroy_ah(ah), 0);
	a.is_global = 0;
	errno = 0;
	assert_null(ibv_create_ah(f->e.pd, &a));
	assert_int_equal(errno, EINVAL);
	a.is_global = 1;
	a.port_num = 2;
	errno = 0;
	assert_null(ibv_create_ah(f->e.pd, &a));
	assert_int_equal(errno, EINVAL);
	a.port_num = 1;
	a.grh.sgid_index = (uint8_t)pa.gid_tbl_len;
	errno = 0;
	assert_null(ibv_create_ah(f->e.pd, &a));
	assert_int_equal(errno, EINVAL);
}

/* Destroying a CQ that a QP uses is EBUSY. */
static void test_cq_busy(void **state)
{
	struct t_fx *f = *state;

	assert_int_equal(ibv_destroy_cq(f->cq), EBUSY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dealloc_pd_busy),
		cmocka_unit_test_setup_teardown(test_create_defaults, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_valid_path, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_missing_attrs, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_extra_attrs, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_invalid_transitions, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_post_send_before_rts, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_post_recv_reset, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_post_send_bad_sge, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_post_recv_bad_sge, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_post_recv_in_err, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_post_recv_queue_full, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_unsignaled_send, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_send_queue_depth, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_unsignaled_hold_slots, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_sq_sig_all_depth, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_cq_sized_for_queues, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_completions_outlive_qp, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_post_send_in_err, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_create_ah_checks, setup, t_fx_teardown),
		cmocka_unit_test_setup_teardown(test_cq_busy, setup, t_fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
