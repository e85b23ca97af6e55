/* SPDX-License-Identifier: MIT */
/*
 * umc-mckey - join an RDMA CM multicast group, then send or receive UD
 * datagrams on it.
 *
 * The options, the output lines and the exit status follow rdma-core's
 * mckey(1) (librdmacm/examples/mckey.c and librdmacm/man/mckey.1), so
 * that a run of umc-mckey can be compared line by line with
 * a run of mckey on real hardware.  The deliberate differences (listed in
 * umc-mckey.1.md, "DIFFERENCES FROM mckey(1)") are all about making the tool
 * usable in tests:
 *
 *  - the pause before sending is an option (-w msec, 3000 by default, as
 *    mckey's sleep(3)); receivers do not pause at all;
 *  - every wait is bounded (-t msec): a lost datagram or a missing CM event
 *    makes the tool report and fail instead of hanging;
 *  - every completion is checked (status, opcode, GRH flag, length,
 *    immediate data) and a final line gives the count; a payload that
 *    starts with umc-mckey's marker is checked against its pattern, any
 *    other (mckey's own sends an unfilled buffer) is accepted and counted,
 *    unless -P says only umc-mckey senders are expected;
 *  - the exit status is non-zero on every failure;
 *  - stdout is line buffered, so "mckey: joined dgid: ..." can be waited
 *    for through a pipe.
 *
 * Structure: each connection (-c) is a "node": one rdma_cm_id, with its own
 * PD, completion channel, CQ, UD QP and a registered buffer of `depth`
 * slots, one slot per outstanding work request.  All ids share one CM event
 * channel.  Nothing runs in the background: the main loop polls the CM
 * channel's fd together with the completion channels' fds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define GRH_LEN ((int)sizeof(struct ibv_grh))
/*
 * A umc-mckey sender's payload: "UMCK", the message number (big-endian 32
 * bits), then the pattern.  Shorter payloads carry the pattern alone.
 */
#define MARKER "UMCK"
#define MARKER_LEN 4
#define HEADER_LEN (MARKER_LEN + 4)
#define POLL_BATCH 16
#define MAX_BAD_REPORTS 10
#define RESOLVE_TIMEOUT_MS 2000

struct node {
	int index;
	struct rdma_cm_id *cma_id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint8_t *mem;		/* depth slots of slot_len bytes */
	int depth;		/* work requests kept outstanding */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	bool join_requested;	/* rdma_join_multicast_ex() succeeded */
	bool connected;		/* MULTICAST_JOIN processed */
	int posted;		/* work requests posted so far */
	int good;		/* completions that passed every check */
	int bad;		/* completions that failed a check */
	int foreign;		/* good receives without umc-mckey's marker */
};

static struct {
	struct rdma_event_channel *channel;
	struct node *nodes;
	int connects_left;
	struct sockaddr_storage dst_in;
	struct sockaddr_storage src_in;
	struct sockaddr *dst_addr;
	struct sockaddr *src_addr;
	int cm_error;		/* first error reported by a CM event */
	int bad_reports;
} test;

static int connections = 1;
static int message_size = 100;
static int message_count = 10;
static bool is_sender;
static bool send_only;
static bool loopback = true;
static bool require_marker;	/* -P: every payload must be umc-mckey's */
static bool unmapped_addr;
static char *dst_name;
static char *src_name;
static enum rdma_port_space port_space = RDMA_PS_UDP;
static int wait_ms = 3000;
static int timeout_ms = 10000;

static int slot_len(void)
{
	return message_size + GRH_LEN;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline, for poll(); -1 means no deadline. */
static int remaining_ms(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	if (left < 0)
		return 0;
	return left > INT_MAX ? INT_MAX : (int)left;
}

static int64_t deadline_after(int ms)
{
	return ms ? now_ms() + ms : -1;
}

/*
 * poll(2) @pfd[0..nfds) until @deadline.  Returns how many are ready (0:
 * the deadline passed), -EINTR when interrupted (look again), or another
 * -errno after saying so.
 */

/* perror(@what), then -errno as it was before perror (which may change it), or -1. */
static int perror_ret(const char *what)
{
	int err = errno;

	perror(what);
	return err ? -err : -1;
}

static int poll_until(struct pollfd *pfd, int nfds, int64_t deadline)
{
	int n = poll(pfd, (nfds_t)nfds, remaining_ms(deadline));

	if (n >= 0)
		return n;
	if (errno == EINTR)
		return -EINTR;
	return perror_ret("mckey: poll");
}

static void report_bad(struct node *node, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The payload of message `index`: the marker and `index` when there is room
 * for them, and in every other byte i the value (index + i) mod 256.
 */
static void fill_payload(uint8_t *buf, int len, int index)
{
	int i = 0;

	if (len >= HEADER_LEN) {
		memcpy(buf, MARKER, MARKER_LEN);
		buf[4] = (uint8_t)(index >> 24);
		buf[5] = (uint8_t)(index >> 16);
		buf[6] = (uint8_t)(index >> 8);
		buf[7] = (uint8_t)index;
		i = HEADER_LEN;
	}
	for (; i < len; i++)
		buf[i] = (uint8_t)(index + i);
}

/*
 * Check a received payload.  Returns 1 when it is umc-mckey's and correct,
 * 0 when it is not umc-mckey's (not checked), -1 after reporting a wrong
 * one.
 */
static int check_payload(struct node *node, const uint8_t *data, int len)
{
	uint32_t index;

	if (len < HEADER_LEN || memcmp(data, MARKER, MARKER_LEN))
		return 0;
	index = (uint32_t)data[4] << 24 | (uint32_t)data[5] << 16 | (uint32_t)data[6] << 8 | data[7];
	for (int i = HEADER_LEN; i < len; i++) {
		uint8_t want = (uint8_t)(index + (uint32_t)i);

		if (data[i] != want) {
			report_bad(node, "payload byte %d of message %u is 0x%02x, expected 0x%02x",
				   i, index, data[i], want);
			return -1;
		}
	}
	return 1;
}

static void report_bad(struct node *node, const char *fmt, ...)
{
	va_list ap;

	node->bad++;
	if (test.bad_reports++ >= MAX_BAD_REPORTS)
		return;
	printf("mckey: bad completion on qp 0x%x: ",
	       node->cma_id->qp ? node->cma_id->qp->qp_num : 0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static struct rdma_event_channel *create_event_channel(void)
{
	struct rdma_event_channel *channel;

	channel = rdma_create_event_channel();
	if (!channel) {
		if (errno == ENODEV)
			fprintf(stderr, "No RDMA devices were detected\n");
		else
			perror("failed to create RDMA CM event channel");
	}
	return channel;
}

static int verify_test_params(struct node *node)
{
	struct ibv_port_attr port_attr;
	int ret, mtu;

	ret = ibv_query_port(node->cma_id->verbs, node->cma_id->port_num,
			     &port_attr);
	if (ret)
		return ret > 0 ? -ret : ret;

	mtu = 1 << (port_attr.active_mtu + 7);
	if (message_count && message_size > mtu) {
		printf("mckey: message_size %d is larger than active mtu %d\n",
		       message_size, mtu);
		return -EINVAL;
	}
	return 0;
}

/*
 * How many work requests a node keeps outstanding: the whole run when the
 * device allows it (as mckey), else the device's limit.  A receiver reposts
 * each slot as soon as its completion has been checked.
 */
static int queue_depth(struct ibv_context *verbs)
{
	struct ibv_device_attr attr;
	int depth = message_count ? message_count : 1;

	if (ibv_query_device(verbs, &attr))
		return depth;
	if (attr.max_qp_wr > 0 && depth > attr.max_qp_wr)
		depth = attr.max_qp_wr;
	if (attr.max_cqe > 1 && depth > attr.max_cqe / 2)
		depth = attr.max_cqe / 2;
	return depth;
}

static int create_message(struct node *node)
{
	size_t len;

	if (!message_count)
		return 0;

	len = (size_t)node->depth * slot_len();
	node->mem = calloc(1, len);
	if (!node->mem) {
		printf("failed message allocation\n");
		return -ENOMEM;
	}
	node->mr = ibv_reg_mr(node->pd, node->mem, len, IBV_ACCESS_LOCAL_WRITE);
	if (!node->mr) {
		printf("failed to reg MR\n");
		free(node->mem);
		node->mem = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int create_qp(struct node *node)
{
	struct ibv_qp_init_attr_ex attr_ex;
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = node->depth;
	attr.cap.max_recv_wr = node->depth;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_context = node;
	attr.sq_sig_all = 0;
	attr.qp_type = IBV_QPT_UD;
	attr.send_cq = node->cq;
	attr.recv_cq = node->cq;

	/* Only -l needs the extended call, as in mckey. */
	if (loopback)
		return rdma_create_qp(node->cma_id, node->pd, &attr);

	memset(&attr_ex, 0, sizeof(attr_ex));
	attr_ex.cap = attr.cap;
	attr_ex.qp_context = node;
	attr_ex.sq_sig_all = 0;
	attr_ex.qp_type = IBV_QPT_UD;
	attr_ex.send_cq = node->cq;
	attr_ex.recv_cq = node->cq;
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = node->pd;
	attr_ex.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	return rdma_create_qp_ex(node->cma_id, &attr_ex);
}

static int init_node(struct node *node)
{
	struct ibv_context *verbs = node->cma_id->verbs;
	int ret, flags;

	node->depth = queue_depth(verbs);

	node->pd = ibv_alloc_pd(verbs);
	if (!node->pd) {
		printf("mckey: unable to allocate PD\n");
		return -ENOMEM;
	}

	node->chan = ibv_create_comp_channel(verbs);
	if (!node->chan) {
		printf("mckey: unable to create completion channel\n");
		return -ENOMEM;
	}
	flags = fcntl(node->chan->fd, F_GETFL);
	if (flags < 0 || fcntl(node->chan->fd, F_SETFL, flags | O_NONBLOCK)) {
		return perror_ret("mckey: completion channel fd");
	}

	node->cq = ibv_create_cq(verbs, node->depth * 2, node, node->chan, 0);
	if (!node->cq) {
		printf("mckey: unable to create CQ\n");
		return -ENOMEM;
	}

	if (create_qp(node)) {
		return perror_ret("mckey: unable to create QP");
	}

	ret = create_message(node);
	if (ret) {
		printf("mckey: failed to create messages: %d\n", ret);
		return ret;
	}
	return 0;
}

static uint8_t *slot_buf(struct node *node, int slot)
{
	return node->mem + (size_t)slot * slot_len();
}

/*
 * Post slot @slot's work request: a receiver's receive, or a sender's send
 * of message number node->posted, free again at its completion (every send
 * is signaled, so the sender can count them).
 */
static int post_slot(struct node *node, int slot)
{
	uint8_t *buf = slot_buf(node, slot);
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf,
		.length = is_sender ? (uint32_t)message_size : (uint32_t)slot_len(),
		.lkey = node->mr->lkey,
	};
	int ret;

	if (is_sender) {
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)slot,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = htobe32(node->cma_id->qp->qp_num),
			.wr.ud = {
				.ah = node->ah,
				.remote_qpn = node->remote_qpn,
				.remote_qkey = node->remote_qkey,
			},
		}, *bad_wr;

		fill_payload(buf, message_size, node->posted);
		ret = ibv_post_send(node->cma_id->qp, &wr, &bad_wr);
	} else {
		struct ibv_recv_wr wr = {
			.wr_id = (uint64_t)slot,
			.sg_list = &sge,
			.num_sge = 1,
		}, *bad_wr;

		ret = ibv_post_recv(node->cma_id->qp, &wr, &bad_wr);
	}
	if (ret) {
		printf("failed to post %s: %d\n", is_sender ? "sends" : "receives", ret);
		return ret > 0 ? -ret : ret;
	}
	node->posted++;
	return 0;
}

/* Fill every slot: a receiver's before its join, a sender's once joined. */
static int post_slots(struct node *node)
{
	int ret = 0;

	if (!message_count || (is_sender && !node->connected))
		return 0;
	for (int slot = 0; slot < node->depth && !ret; slot++)
		ret = post_slot(node, slot);
	return ret;
}

static void check_recv(struct node *node, const struct ibv_wc *wc)
{
	const uint8_t *data;
	uint32_t imm;

	if (wc->status != IBV_WC_SUCCESS) {
		report_bad(node, "status %s (%d)",
			   ibv_wc_status_str(wc->status), wc->status);
		return;
	}
	if (wc->opcode != IBV_WC_RECV) {
		report_bad(node, "opcode %d, expected IBV_WC_RECV",
			   wc->opcode);
		return;
	}
	if (!(wc->wc_flags & IBV_WC_GRH)) {
		report_bad(node, "IBV_WC_GRH not set");
		return;
	}
	if (!(wc->wc_flags & IBV_WC_WITH_IMM)) {
		report_bad(node, "IBV_WC_WITH_IMM not set");
		return;
	}
	imm = be32toh(wc->imm_data);
	if (imm != wc->src_qp) {
		report_bad(node, "imm_data 0x%x, expected the source QPN 0x%x",
			   imm, wc->src_qp);
		return;
	}
	if (wc->byte_len != (uint32_t)slot_len()) {
		report_bad(node, "byte_len %u, expected %d", wc->byte_len,
			   slot_len());
		return;
	}
	data = slot_buf(node, (int)wc->wr_id) + GRH_LEN;
	switch (check_payload(node, data, message_size)) {
	case 1:
		node->good++;
		break;
	case 0:
		if (require_marker) {
			report_bad(node, "no umc-mckey marker in the payload");
			break;
		}
		node->good++;
		node->foreign++;
		break;
	default:
		break;
	}
}

static void check_send(struct node *node, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		report_bad(node, "status %s (%d)",
			   ibv_wc_status_str(wc->status), wc->status);
	else if (wc->opcode != IBV_WC_SEND)
		report_bad(node, "opcode %d, expected IBV_WC_SEND", wc->opcode);
	else
		node->good++;
}

static bool node_done(const struct node *node)
{
	return !node->connected || node->good + node->bad >= message_count;
}

/*
 * Take every completion queued on the node's CQ, check it and reuse its
 * slot for the next message.  Returns the number of completions taken or a
 * negative errno.
 */
static int drain_cq(struct node *node)
{
	struct ibv_wc wc[POLL_BATCH];
	int n, total = 0, ret;

	while (!node_done(node)) {
		n = ibv_poll_cq(node->cq, POLL_BATCH, wc);
		if (n < 0) {
			printf("mckey: failed polling CQ: %d\n", n);
			return n;
		}
		if (n == 0)
			break;
		for (int i = 0; i < n; i++) {
			int slot = (int)wc[i].wr_id;

			if (slot < 0 || slot >= node->depth) {
				report_bad(node, "unknown wr_id %llu",
					   (unsigned long long)wc[i].wr_id);
				continue;
			}
			if (is_sender)
				check_send(node, &wc[i]);
			else
				check_recv(node, &wc[i]);
			if (node->posted >= message_count)
				continue;
			ret = post_slot(node, slot);
			if (ret)
				return ret;
		}
		total += n;
	}
	return total;
}

/*
 * Consume (and ack) every CQ event queued on the node's channel.  The fd is
 * non-blocking: a wake-up that produced no event (a datagram for no posted
 * receive, say) ends with EAGAIN instead of blocking.
 */
static int take_cq_events(struct node *node)
{
	struct ibv_cq *cq;
	void *ctx;

	while (ibv_get_cq_event(node->chan, &cq, &ctx) == 0)
		ibv_ack_cq_events(cq, 1);
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return 0;
	return perror_ret("mckey: ibv_get_cq_event");
}

/* Events that arrive after the joins (mckey's background thread). */
static void handle_async_event(void)
{
	struct rdma_cm_event *event;

	if (rdma_get_cm_event(test.channel, &event)) {
		int err = perror_ret("rdma_get_cm_event");

		if (!test.cm_error)
			test.cm_error = err == -1 ? -EIO : err;
		return;
	}
	switch (event->event) {
	case RDMA_CM_EVENT_MULTICAST_ERROR:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (!test.cm_error)
			test.cm_error = event->status ? event->status : -EIO;
		/* fall through */
	case RDMA_CM_EVENT_ADDR_CHANGE:
		printf("mckey: event: %s, status: %d\n",
		       rdma_event_str(event->event), event->status);
		break;
	default:
		break;
	}
	rdma_ack_cm_event(event);
}

/* The sender's pause before sending (-w), watching the CM channel. */
static int pause_before_sending(void)
{
	struct pollfd pfd = { .fd = test.channel->fd, .events = POLLIN };
	int64_t deadline = now_ms() + wait_ms;
	int n;

	while (!test.cm_error && remaining_ms(deadline) > 0) {
		n = poll_until(&pfd, 1, deadline);
		if (n < 0 && n != -EINTR)
			return n;
		if (n > 0)
			handle_async_event();
	}
	return test.cm_error;
}

/*
 * The data phase: post, then loop taking completions until every node has
 * `message_count` of them.  Sleeps in poll(2) on the completion channels and
 * the CM channel; fails with -ETIMEDOUT when nothing completes for
 * timeout_ms.
 */
static int transfer(void)
{
	struct pollfd pfd[connections + 1];
	int64_t deadline = deadline_after(timeout_ms);
	int ret, n, nfds, progress;
	bool all_done;

	if (is_sender) {
		for (int i = 0; i < connections; i++) {
			ret = post_slots(&test.nodes[i]);
			if (ret)
				return ret;
		}
	}

	for (;;) {
		progress = 0;
		all_done = true;
		for (int i = 0; i < connections; i++) {
			ret = drain_cq(&test.nodes[i]);
			if (ret < 0)
				return ret;
			progress += ret;
			all_done &= node_done(&test.nodes[i]);
		}
		if (all_done)
			return 0;
		if (test.cm_error)
			return test.cm_error;
		if (progress) {
			deadline = deadline_after(timeout_ms);
			continue;
		}

		/* Arm, then look once more: a completion may have slipped in. */
		for (int i = 0; i < connections; i++) {
			struct node *node = &test.nodes[i];

			if (node_done(node))
				continue;
			ret = ibv_req_notify_cq(node->cq, 0);
			if (ret) {
				printf("mckey: failed to arm CQ: %d\n", ret);
				return ret > 0 ? -ret : ret;
			}
			ret = drain_cq(node);
			if (ret < 0)
				return ret;
			progress += ret;
		}
		if (progress) {
			deadline = deadline_after(timeout_ms);
			continue;
		}

		nfds = 0;
		for (int i = 0; i < connections; i++) {
			pfd[nfds].fd = test.nodes[i].chan->fd;
			pfd[nfds++].events = POLLIN;
		}
		pfd[nfds].fd = test.channel->fd;
		pfd[nfds++].events = POLLIN;

		n = poll_until(pfd, nfds, deadline);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return n;
		if (n == 0) {
			int done = 0, want = 0;

			for (int i = 0; i < connections; i++) {
				done += test.nodes[i].good + test.nodes[i].bad;
				want += message_count;
			}
			printf("mckey: timeout: no completion for %d ms "
			       "(%d of %d %s)\n", timeout_ms, done, want,
			       is_sender ? "sent" : "received");
			return -ETIMEDOUT;
		}
		for (int i = 0; i < connections; i++) {
			if (pfd[i].revents & POLLIN) {
				ret = take_cq_events(&test.nodes[i]);
				if (ret)
					return ret;
			}
		}
		if (pfd[nfds - 1].revents & POLLIN)
			handle_async_event();
	}
}

static int addr_handler(struct node *node)
{
	struct rdma_cm_join_mc_attr_ex mc_attr;
	int ret;

	ret = verify_test_params(node);
	if (ret)
		goto err;

	ret = init_node(node);
	if (ret)
		goto err;

	/* Receives are posted before the join, so no datagram finds the
	 * receive queue empty once the QP is attached. */
	if (!is_sender) {
		ret = post_slots(node);
		if (ret)
			goto err;
	}

	memset(&mc_attr, 0, sizeof(mc_attr));
	mc_attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
			    RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	mc_attr.addr = test.dst_addr;
	mc_attr.join_flags = send_only ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
				       : RDMA_MC_JOIN_FLAG_FULLMEMBER;
	ret = rdma_join_multicast_ex(node->cma_id, &mc_attr, node);
	if (ret) {
		ret = perror_ret("mckey: failure joining");
		goto err;
	}
	node->join_requested = true;
	return 0;
err:
	test.connects_left--;
	return ret;
}

static int join_handler(struct node *node, struct rdma_ud_param *param)
{
	char buf[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, param->ah_attr.grh.dgid.raw, buf, sizeof(buf));
	printf("mckey: joined dgid: %s mlid 0x%x sl %d\n", buf,
	       param->ah_attr.dlid, param->ah_attr.sl);
	fflush(stdout);

	node->remote_qpn = param->qp_num;
	node->remote_qkey = param->qkey;
	node->ah = ibv_create_ah(node->pd, &param->ah_attr);
	test.connects_left--;
	if (!node->ah) {
		printf("mckey: failure creating address handle\n");
		return -1;
	}
	node->connected = true;
	return 0;
}

static int cma_handler(struct rdma_cm_event *event)
{
	struct node *node = event->id->context;

	switch (event->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return addr_handler(node);
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		return join_handler(node, &event->param.ud);
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		printf("mckey: event: %s, error: %d\n",
		       rdma_event_str(event->event), event->status);
		test.connects_left--;
		return event->status ? event->status : -EIO;
	default:
		/* DEVICE_REMOVAL: cleanup happens after the test, as mckey. */
		return 0;
	}
}

/* Process CM events until every node has joined or one has failed. */
static int connect_events(void)
{
	struct pollfd pfd = { .fd = test.channel->fd, .events = POLLIN };
	struct rdma_cm_event *event;
	int64_t deadline = deadline_after(timeout_ms);
	int ret = 0, n;

	while (test.connects_left > 0 && !ret) {
		n = poll_until(&pfd, 1, deadline);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return n;
		if (n == 0) {
			printf("mckey: timeout: no CM event for %d ms "
			       "(%d of %d not joined)\n", timeout_ms,
			       test.connects_left, connections);
			return -ETIMEDOUT;
		}
		if (rdma_get_cm_event(test.channel, &event)) {
			return perror_ret("rdma_get_cm_event");
		}
		ret = cma_handler(event);
		rdma_ack_cm_event(event);
		deadline = deadline_after(timeout_ms);
	}
	return ret;
}

static int get_addr(const char *name, struct sockaddr *addr)
{
	struct addrinfo *res;
	int ret;

	ret = getaddrinfo(name, NULL, NULL, &res);
	if (ret) {
		printf("getaddrinfo failed (%s) - invalid hostname or IP address\n",
		       gai_strerror(ret));
		return ret;
	}
	memcpy(addr, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static int get_dst_addr(const char *name, struct sockaddr *addr)
{
	struct sockaddr_ib *sib;

	if (!unmapped_addr)
		return get_addr(name, addr);

	/* An MGID given directly; like mckey, an unparsable one is zero. */
	sib = (struct sockaddr_ib *)addr;
	memset(sib, 0, sizeof(*sib));
	sib->sib_family = AF_IB;
	if (name)
		inet_pton(AF_INET6, name, &sib->sib_addr);
	return 0;
}

static int alloc_nodes(void)
{
	test.nodes = calloc(connections, sizeof(*test.nodes));
	if (!test.nodes) {
		printf("mckey: unable to allocate memory for test nodes\n");
		return -ENOMEM;
	}
	for (int i = 0; i < connections; i++) {
		test.nodes[i].index = i;
		if (rdma_create_id(test.channel, &test.nodes[i].cma_id,
				   &test.nodes[i], port_space)) {
			perror("mckey: unable to create id");
			while (--i >= 0)
				rdma_destroy_id(test.nodes[i].cma_id);
			free(test.nodes);
			test.nodes = NULL;
			return -1;
		}
	}
	return 0;
}

static void destroy_node(struct node *node)
{
	if (!node->cma_id)
		return;
	if (node->ah)
		ibv_destroy_ah(node->ah);
	if (node->cma_id->qp)
		rdma_destroy_qp(node->cma_id);
	if (node->cq)
		ibv_destroy_cq(node->cq);
	if (node->chan)
		ibv_destroy_comp_channel(node->chan);
	if (node->mr)
		ibv_dereg_mr(node->mr);
	free(node->mem);
	if (node->pd)
		ibv_dealloc_pd(node->pd);
	/* The id goes last, after every device resource. */
	rdma_destroy_id(node->cma_id);
}

static void destroy_nodes(void)
{
	for (int i = 0; i < connections; i++)
		destroy_node(&test.nodes[i]);
	free(test.nodes);
}

static int run(void)
{
	int ret, leave_ret;

	printf("mckey: starting %s\n", is_sender ? "client" : "server");
	if (src_name) {
		ret = get_addr(src_name, test.src_addr);
		if (ret)
			return ret;
	}
	ret = get_dst_addr(dst_name, test.dst_addr);
	if (ret)
		return ret;

	printf("mckey: joining\n");
	for (int i = 0; i < connections; i++) {
		struct node *node = &test.nodes[i];

		if (src_name && rdma_bind_addr(node->cma_id, test.src_addr)) {
			perror("mckey: addr bind failure");
			ret = -1;
			goto out;
		}
		if (unmapped_addr)
			ret = addr_handler(node);
		else
			ret = rdma_resolve_addr(node->cma_id, test.src_addr,
						test.dst_addr,
						RESOLVE_TIMEOUT_MS);
		if (ret) {
			/* mckey prints this line for both paths too */
			perror("mckey: resolve addr failure");
			ret = -1;
			goto out;
		}
	}

	ret = connect_events();
	if (ret)
		goto out;

	if (message_count) {
		if (is_sender) {
			if (wait_ms) {
				ret = pause_before_sending();
				if (ret)
					goto out;
			}
			printf("initiating data transfers\n");
		} else {
			printf("receiving data transfers\n");
		}
		ret = transfer();
		if (ret)
			goto out;
		printf("data transfers complete\n");
	}
out:
	/* Leave what was joined; a leave failure fails a run that had not
	 * failed yet, but never hides an earlier error. */
	for (int i = 0; i < connections; i++) {
		if (!test.nodes[i].join_requested)
			continue;
		leave_ret = rdma_leave_multicast(test.nodes[i].cma_id,
						 test.dst_addr);
		if (leave_ret) {
			perror("mckey: failure leaving");
			if (!ret)
				ret = -1;
		}
	}
	return ret;
}

/*
 * "mckey: sent N messages" or "mckey: received N messages[, M bad]", then
 * for a receiver how many payloads were not umc-mckey's.
 */
static int print_counts(void)
{
	const char *verb = is_sender ? "sent" : "received";
	int good = 0, bad = 0, foreign = 0;

	for (int i = 0; test.nodes && i < connections; i++) {
		struct node *node = &test.nodes[i];

		if (connections > 1) {
			printf("mckey: qp 0x%x: %s %d messages",
			       node->cma_id->qp ? node->cma_id->qp->qp_num : 0,
			       verb, node->good + node->bad);
			if (node->bad)
				printf(", %d bad", node->bad);
			putchar('\n');
		}
		good += node->good;
		bad += node->bad;
		foreign += node->foreign;
	}
	printf("mckey: %s %d messages", verb, good + bad);
	if (bad)
		printf(", %d bad", bad);
	putchar('\n');
	if (foreign)
		printf("mckey: %d messages not from umc-mckey: payload not checked\n", foreign);
	return bad;
}

/* mckey's usage text, on stdout; exit 1 after a usage error, as mckey. */
static void usage(const char *argv0, int status)
{
	printf("usage: %s\n", argv0);
	printf("\t-m multicast_address\n");
	printf("\t[-M unmapped_multicast_address]\n"
	       "\t replaces -m and requires -b\n");
	printf("\t[-s(ender)]\n");
	printf("\t[-b bind_address]\n");
	printf("\t[-c connections]\n");
	printf("\t[-C message_count]\n");
	printf("\t[-S message_size]\n");
	printf("\t[-p port_space - %#x for UDP (default), %#x for IPOIB]\n",
	       RDMA_PS_UDP, RDMA_PS_IPOIB);
	printf("\t[-o join as a send-only full-member]\n");
	printf("\t[-l join without multicast loopback]\n");
	printf("\t[-w msec - sender's pause before sending "
	       "(default 3000, 0 = none)]\n");
	printf("\t[-t msec - give up when no event or completion arrives "
	       "for msec (default 10000, 0 = never)]\n");
	printf("\t[-P expect umc-mckey senders only: a payload without "
	       "their marker is bad]\n");
	printf("\t[-h, --help this text] [--version umcast's version]\n");
	exit(status);
}

/* A decimal number in [min, max]; anything else is a usage error. */
static int parse_int(const char *arg, int base, long min, long max,
		     const char *argv0)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, base);
	if (errno || end == arg || *end || v < min || v > max) {
		printf("mckey: invalid number '%s'\n", arg);
		usage(argv0, 1);
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	static const struct option long_opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const long size_max = INT_MAX / 2;
	int op, ret, status;

	/* Line buffered even into a pipe: tests wait for "joined" lines. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	while ((op = getopt_long(argc, argv, "m:M:sb:c:C:S:p:olw:t:Ph", long_opts, NULL)) != -1) {
		switch (op) {
		case 'm':
			dst_name = optarg;
			break;
		case 'M':
			unmapped_addr = true;
			dst_name = optarg;
			break;
		case 's':
			is_sender = true;
			break;
		case 'b':
			src_name = optarg;
			test.src_addr = (struct sockaddr *)&test.src_in;
			break;
		case 'c':
			connections = parse_int(optarg, 10, 1, 1 << 16, argv[0]);
			break;
		case 'C':
			message_count = parse_int(optarg, 10, 0, size_max, argv[0]);
			break;
		case 'S':
			message_size = parse_int(optarg, 10, 0, size_max, argv[0]);
			break;
		case 'p':
			port_space = parse_int(optarg, 0, 0, 0xffff, argv[0]);
			break;
		case 'o':
			send_only = true;
			break;
		case 'l':
			loopback = false;
			break;
		case 'w':
			wait_ms = parse_int(optarg, 10, 0, INT_MAX, argv[0]);
			break;
		case 't':
			timeout_ms = parse_int(optarg, 10, 0, INT_MAX, argv[0]);
			break;
		case 'P':
			require_marker = true;
			break;
		case 'h':
			usage(argv[0], 0);
			break;
		case 'V':
			printf("umc-mckey (umcast) %s\n", UMC_VERSION);
			exit(0);
		default:
			usage(argv[0], 1);
		}
	}
	if (optind < argc) {
		printf("mckey: unexpected argument '%s'\n", argv[optind]);
		usage(argv[0], 1);
	}
	if (unmapped_addr && !src_name) {
		printf("unmapped multicast address requires binding "
		       "to source address\n");
		exit(1);
	}
	/* A message of 0 bytes means no data phase, as in mckey. */
	if (!message_size)
		message_count = 0;
	if (require_marker && message_count && message_size < HEADER_LEN) {
		printf("mckey: -P needs messages of at least %d bytes (-S)\n", HEADER_LEN);
		usage(argv[0], 1);
	}

	test.dst_addr = (struct sockaddr *)&test.dst_in;
	test.connects_left = connections;

	test.channel = create_event_channel();
	if (!test.channel)
		exit(1);
	if (alloc_nodes())
		exit(1);

	ret = run();
	if (print_counts() && !ret)
		ret = -EBADMSG;

	printf("test complete\n");
	destroy_nodes();
	rdma_destroy_event_channel(test.channel);
	printf("return status %d\n", ret);

	/* The low 8 bits of ret, as mckey, but never 0 for a failure. */
	status = ret & 0xff;
	if (ret && !status)
		status = 1;
	return status;
}
