/* SPDX-License-Identifier: MIT */
/*
 * test_cm_util.h - helpers shared by the CM unit tests (test_cm_*.c).
 *
 * Every test binds to or sources from 127.0.0.1 and joins groups in
 * 239.0.0.0/8 only, so nothing is ever routed to another interface.
 */
#ifndef TEST_CM_UTIL_H
#define TEST_CM_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>

#include "verbs/verbs_int.h"

#define LOOPBACK "127.0.0.1"

static inline struct sockaddr_in tcm_sin(const char *ip, uint16_t port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	assert_int_equal(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	return sin;
}

static inline struct sockaddr_in6 tcm_sin6(const char *ip)
{
	struct sockaddr_in6 sin6;

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, ip, &sin6.sin6_addr), 1);
	return sin6;
}

#define SA(x) ((struct sockaddr *)(x))

/* Is an event waiting on @ch within @ms milliseconds? */
static inline bool tcm_readable(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

/* The next event of @ch, failing the test if none comes within 2 s. */
static inline struct rdma_cm_event *tcm_event(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev = NULL;

	assert_true(tcm_readable(ch, 2000));
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	assert_non_null(ev);
	return ev;
}

/* The next event of @ch must be @type; returns it (not acked). */
static inline struct rdma_cm_event *tcm_expect(struct rdma_event_channel *ch,
					       enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = tcm_event(ch);

	if (ev->event != type)
		fail_msg("got %s (status %d), expected %s", rdma_event_str(ev->event), ev->status,
			 rdma_event_str(type));
	return ev;
}

/* An async UD id on @ch bound to 127.0.0.1. */
static inline struct rdma_cm_id *tcm_bound_id(struct rdma_event_channel *ch, void *ctx,
					      enum rdma_port_space ps)
{
	struct sockaddr_in lo = tcm_sin(LOOPBACK, 0);
	struct rdma_cm_id *id = NULL;

	assert_int_equal(rdma_create_id(ch, &id, ctx, ps), 0);
	assert_int_equal(rdma_bind_addr(id, SA(&lo)), 0);
	return id;
}

/* The loopback device and the GID index of 127.0.0.1. */
static inline struct umc_device *tcm_lo_dev(int *gid_index)
{
	struct sockaddr_in lo = tcm_sin(LOOPBACK, 0);
	struct umc_device *dev = NULL;
	int gi = -1;

	assert_int_equal(umc_dev_by_addr(SA(&lo), &dev, &gi), 0);
	if (gid_index)
		*gid_index = gi;
	return dev;
}

/* Full-member references the device holds on group @ip (0 if none). */
static inline int tcm_members(const char *ip)
{
	struct sockaddr_in g = tcm_sin(ip, 0);
	struct umc_device *dev = tcm_lo_dev(NULL);
	union ibv_gid mgid;
	struct umc_mcg *mcg;
	int n;

	umc_gid_from_sockaddr(&mgid, SA(&g));
	pthread_mutex_lock(&dev->lock);
	mcg = __umc_mcg_find(dev, &mgid);
	n = mcg ? mcg->members : 0;
	pthread_mutex_unlock(&dev->lock);
	return n;
}

/* Is @qp attached to group @ip (verbs view)? */
static inline bool tcm_attached(struct ibv_qp *ibqp, const char *ip)
{
	struct sockaddr_in g = tcm_sin(ip, 0);
	struct umc_qp *qp = to_uqp(ibqp);
	union ibv_gid mgid;
	bool found = false;

	umc_gid_from_sockaddr(&mgid, SA(&g));
	pthread_mutex_lock(&qp->dev->lock);
	for (struct umc_attach *a = qp->attached; a; a = a->next)
		if (!memcmp(&a->gid, &mgid, sizeof(mgid)))
			found = true;
	pthread_mutex_unlock(&qp->dev->lock);
	return found;
}

/* A UD QP's init attributes: @wr send and @wr receive WRs, one SGE each. */
static inline struct ibv_qp_init_attr tcm_ud_attr(uint32_t wr)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = wr;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_UD;
	return attr;
}

/* A UD QP made by the CM (CM-created CQs). */
static inline void tcm_create_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = tcm_ud_attr(4);

	assert_int_equal(rdma_create_qp(id, NULL, &attr), 0);
	assert_non_null(id->qp);
}

static inline int tcm_join(struct rdma_cm_id *id, const char *ip, uint32_t flags, void *ctx)
{
	struct sockaddr_in g = tcm_sin(ip, 0);
	struct rdma_cm_join_mc_attr_ex attr = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = flags,
		.addr = SA(&g),
	};

	return rdma_join_multicast_ex(id, &attr, ctx);
}

static inline int tcm_leave(struct rdma_cm_id *id, const char *ip)
{
	struct sockaddr_in g = tcm_sin(ip, 0);

	return rdma_leave_multicast(id, SA(&g));
}

#endif /* TEST_CM_UTIL_H */
