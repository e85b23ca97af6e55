// SPDX-License-Identifier: MIT
/*
 * test_verbs_destqp.c - only datagrams addressed to the multicast QPN
 * 0xFFFFFF are fanned out to the QPs attached to the group.
 *
 * rxe (drivers/infiniband/sw/rxe/rxe_recv.c): rxe_rcv hands a
 * packet to rxe_rcv_mcast_pkt, which looks the group up by destination IP
 * and gives every attached QP a copy, only when BTH DestQP is 0xFFFFFF;
 * any other DestQP is a unicast QP lookup (hdr_check), and a QPN that does
 * not exist drops the packet: only a packet to DestQP 0xFFFFFF is
 * delivered, as a separate copy, to every QP attached.  A
 * program whose sends carry a wrong remote_qpn therefore receives nothing
 * on rxe or a NIC, and must receive nothing on umcast either.
 */
#include "verbs_util.h"

static void test_non_multicast_destqp_not_fanned_out(void **state)
{
	struct t_env e;
	struct t_qp s, r;
	uint8_t pkt[2048], data[16];
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	ssize_t n;
	int sn;

	t_env_open(&e, t_group_ip(1), true);
	t_qp_make(&s, e.pd, 0, T_QKEY);
	t_qp_make(&r, e.pd, 0, T_QKEY);
	assert_int_equal(ibv_attach_mcast(r.qp, &e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(e.dev, &e.mgid, +1), 0);
	sn = t_sniff_open(e.gip);
	assert_int_equal(t_post_recv(&r, 0, 2048, 1), 0);
	assert_int_equal(t_post_recv(&r, 2048, 2048, 2), 0);

	/* DestQP 0x000123: no such QP anywhere. */
	t_fill(data, sizeof(data), 1);
	memcpy(s.buf, data, sizeof(data));
	sge = (struct ibv_sge){(uintptr_t)s.buf, sizeof(data), s.mr->lkey};
	wr = (struct ibv_send_wr){
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.wr.ud = {.ah = e.ah, .remote_qpn = 0x000123, .remote_qkey = T_QKEY},
	};
	assert_int_equal(ibv_post_send(s.qp, &wr, &bad), 0);
	t_wait_send(s.cq, 1);
	/* It went out as asked: DestQP 0x000123 in the BTH. */
	n = t_sniff_recv(sn, pkt, sizeof(pkt), T_WAIT_MS);
	assert_true(n >= 28);
	assert_int_equal(pkt[5] << 16 | pkt[6] << 8 | pkt[7], 0x000123);

	/* The marker, to the multicast QPN. */
	assert_int_equal(t_send(&s, e.ah, "marker", 6, T_QKEY, false, 0, 0, 2), 0);
	t_wait_send(s.cq, 2);
	n = t_sniff_recv(sn, pkt, sizeof(pkt), T_WAIT_MS);
	assert_true(n >= 28);
	assert_int_equal(pkt[5] << 16 | pkt[6] << 8 | pkt[7], 0xffffff);

	/* The attached QP's first receive must be the marker. */
	assert_int_equal(t_wait_wc(r.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	print_message("first receive: %u bytes (16-byte DestQP 0x123 message: 56, marker: 46)\n",
		      wc.byte_len);
	assert_int_equal(wc.byte_len, 46);
	assert_memory_equal(r.buf + 40, "marker", 6);
	t_assert_cq_empty(r.cq);

	close(sn);
	assert_int_equal(ibv_detach_mcast(r.qp, &e.mgid, 0), 0);
	umc_dev_member(e.dev, &e.mgid, -1);
	t_qp_free(&s);
	t_qp_free(&r);
	t_env_close(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_non_multicast_destqp_not_fanned_out),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
