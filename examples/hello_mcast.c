/* SPDX-License-Identifier: MIT */
/*
 * hello_mcast.c - the smallest complete RDMA CM multicast program: the
 * README's example.  Written against librdmacm's API only; it builds
 * unchanged against rdma-core or umcast.
 *
 *   hello_mcast recv 127.0.0.1 239.1.2.3        # waits for one message
 *   hello_mcast send 127.0.0.1 239.1.2.3 hello  # send-only member, sends one
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define CHECK(x)                                                                                   \
	do {                                                                                       \
		if (x) {                                                                           \
			perror(#x);                                                                \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "send") && strcmp(argv[1], "recv"))) {
		fprintf(stderr, "usage: %s recv|send LOCAL_IP GROUP [MESSAGE]\n", argv[0]);
		return 2;
	}
	int sender = !strcmp(argv[1], "send");
	struct sockaddr_in src = {.sin_family = AF_INET}, grp = {.sin_family = AF_INET};

	CHECK(inet_pton(AF_INET, argv[2], &src.sin_addr) != 1);
	CHECK(inet_pton(AF_INET, argv[3], &grp.sin_addr) != 1);

	/* An id bound to a local address is bound to that address's device. */
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	CHECK(!ch);
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	CHECK(rdma_bind_addr(id, (struct sockaddr *)&src));

	/* A UD QP in RTS; the CM makes its CQs and completion channels. */
	struct ibv_qp_init_attr qpa = {
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
		.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	};
	CHECK(rdma_create_qp(id, NULL, &qpa));

	/* Receives start with the 40-byte GRH, then the message. */
	static char buf[40 + 1024];
	struct ibv_mr *mr = rdma_reg_msgs(id, buf, sizeof(buf));

	CHECK(!mr);
	if (!sender)
		CHECK(rdma_post_recv(id, NULL, buf, sizeof(buf), mr));

	/* A receiver joins as a full member, a sender as a send-only member. */
	struct rdma_cm_join_mc_attr_ex join = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = sender ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
				     : RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)&grp,
	};
	CHECK(rdma_join_multicast_ex(id, &join, NULL));

	struct rdma_cm_event *ev;

	CHECK(rdma_get_cm_event(ch, &ev));
	if (ev->event != RDMA_CM_EVENT_MULTICAST_JOIN) {
		fprintf(stderr, "%s, status %d\n", rdma_event_str(ev->event), ev->status);
		return 1;
	}
	struct rdma_ud_param ud = ev->param.ud; /* ah_attr, qp_num 0xFFFFFF, qkey */
	char mgid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, ud.ah_attr.grh.dgid.raw, mgid, sizeof(mgid));
	printf("joined %s (MGID %s, Q_Key 0x%x)\n", argv[3], mgid, ud.qkey);
	fflush(stdout);
	CHECK(rdma_ack_cm_event(ev));

	struct ibv_wc wc;

	if (sender) {
		struct ibv_ah *ah = ibv_create_ah(id->pd, &ud.ah_attr);
		size_t len = argc > 4 ? strlen(argv[4]) : 0;

		CHECK(!ah);
		memcpy(buf, argc > 4 ? argv[4] : "", len);
		CHECK(rdma_post_ud_send(id, NULL, buf, len, mr, 0, ah, ud.qp_num));
		CHECK(rdma_get_send_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS);
		printf("sent %zu bytes\n", len);
		ibv_destroy_ah(ah);
	} else {
		CHECK(rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS);
		printf("received %u bytes from QP 0x%x: %.*s\n", wc.byte_len - 40, wc.src_qp,
		       (int)(wc.byte_len - 40), buf + 40);
	}

	CHECK(rdma_leave_multicast(id, (struct sockaddr *)&grp));
	rdma_dereg_mr(mr);
	rdma_destroy_qp(id);
	CHECK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	return 0;
}
