// SPDX-License-Identifier: MIT
/*
 * capture_sender - send the messages of capture_msgs.h to a group, as a
 * librdmacm program would: public API only (<rdma/rdma_cma.h>,
 * <infiniband/verbs.h>), linked with the shared libumcast.
 *
 *   capture_sender GROUP [SRC]     (SRC defaults to 127.0.0.1)
 *
 * rdma_bind_addr(SRC), rdma_join_multicast_ex(SENDONLY_FULLMEMBER), the
 * MULTICAST_JOIN event's ah_attr/qp_num/qkey for the sends, rdma_create_qp
 * (RTS at SQ PSN 0), one signalled send at a time, each completion
 * checked.  Prints "qpn 0x..", "sent N" and exits 0, or prints the failure
 * and exits 1.  Every wait is bounded (poll(2) with a timeout).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "capture_msgs.h"

#define DIE(...)                                                                                   \
	do {                                                                                       \
		fprintf(stderr, "capture_sender: " __VA_ARGS__);                                   \
		fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno));                       \
		exit(1);                                                                           \
	} while (0)

static struct rdma_cm_event *get_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1)
		DIE("no CM event within %d ms", ms);
	if (rdma_get_cm_event(ch, &ev))
		DIE("rdma_get_cm_event");
	return ev;
}

static void wait_send(struct ibv_cq *cq, uint64_t wr_id)
{
	struct ibv_wc wc;

	for (int i = 0; i < 5000; i++) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			DIE("ibv_poll_cq %d", n);
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_SEND ||
			    wc.wr_id != wr_id)
				DIE("send %llu completed with %s, wr_id %llu", (unsigned long long)wr_id,
				    ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
			return;
		}
		poll(NULL, 0, 1);
	}
	DIE("no send completion for %llu", (unsigned long long)wr_id);
}

int main(int argc, char **argv)
{
	struct sockaddr_in src = {.sin_family = AF_INET}, grp = {.sin_family = AF_INET};
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER,
		.addr = (struct sockaddr *)&grp,
	};
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 8, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
	};
	static uint8_t buf[CAP_MAX_LEN];
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_ah_attr ah_attr;
	uint32_t rqpn, rqkey;
	struct ibv_ah *ah;
	struct ibv_mr *mr;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: capture_sender GROUP [SRC]\n");
		return 2;
	}
	if (inet_pton(AF_INET, argv[1], &grp.sin_addr) != 1 ||
	    inet_pton(AF_INET, argc > 2 ? argv[2] : "127.0.0.1", &src.sin_addr) != 1)
		DIE("bad address");

	ch = rdma_create_event_channel();
	if (!ch)
		DIE("rdma_create_event_channel");
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP))
		DIE("rdma_create_id");
	if (rdma_bind_addr(id, (struct sockaddr *)&src))
		DIE("rdma_bind_addr");
	if (rdma_create_qp(id, NULL, &qa))
		DIE("rdma_create_qp");
	printf("qpn 0x%x\n", id->qp->qp_num);
	if (rdma_join_multicast_ex(id, &ja, &grp))
		DIE("rdma_join_multicast_ex");
	ev = get_event(ch, 5000);
	if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN || ev->status != 0)
		DIE("event %s status %d", rdma_event_str(ev->event), ev->status);
	if (ev->param.ud.private_data != (void *)&grp)
		DIE("join context not returned");
	ah_attr = ev->param.ud.ah_attr;
	rqpn = ev->param.ud.qp_num;
	rqkey = ev->param.ud.qkey;
	rdma_ack_cm_event(ev);
	if (rqpn != 0xffffff || rqkey != 0x01234567 || !ah_attr.is_global ||
	    ah_attr.grh.hop_limit != 64)
		DIE("join event: qp_num 0x%x qkey 0x%x is_global %d hop_limit %d", rqpn, rqkey,
		    ah_attr.is_global, ah_attr.grh.hop_limit);

	ah = ibv_create_ah(id->pd, &ah_attr);
	if (!ah)
		DIE("ibv_create_ah");
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), 0);
	if (!mr)
		DIE("ibv_reg_mr");
	for (unsigned i = 0; i < CAP_N; i++) {
		const struct cap_msg *m = &cap_msgs[i];
		struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = m->len, .lkey = mr->lkey};
		struct ibv_send_wr wr = {
			.wr_id = i,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = m->imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			.imm_data = htonl(m->imm_host),
			.wr.ud = {.ah = ah, .remote_qpn = rqpn, .remote_qkey = rqkey},
		}, *bad;

		for (size_t j = 0; j < m->len; j++)
			buf[j] = cap_byte(i, j);
		if (ibv_post_send(id->qp, &wr, &bad))
			DIE("ibv_post_send %u", i);
		wait_send(id->send_cq, i);
	}
	printf("sent %d\n", (int)CAP_N);
	if (rdma_leave_multicast(id, (struct sockaddr *)&grp))
		DIE("rdma_leave_multicast");
	ibv_destroy_ah(ah);
	ibv_dereg_mr(mr);
	rdma_destroy_qp(id);
	if (rdma_destroy_id(id))
		DIE("rdma_destroy_id");
	rdma_destroy_event_channel(ch);
	return 0;
}
