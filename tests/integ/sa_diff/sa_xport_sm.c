// SPDX-License-Identifier: MIT
/*
 * sa_xport_sm.c - SA MADs to umc-sm over its datagram protocol
 * (src/wire/sm_proto.h): each node is a port of its own, registered from
 * its own UDP socket (its control endpoint is what umc-sm knows it by),
 * with no data plane.  The SA MADs travel in SA datagrams, unchanged.
 *
 * A GetTable reply of several RMPP segments is compared on its first
 * segment, as through ibsim; the transfer is then ended with an RMPP STOP
 * (status "resources exhausted"), as a receiver that cannot take more does
 * (IBA 13.6.3.3).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sa/sa_addr.h"
#include "umc_param.h"
#include "wire/sm_proto.h"

#include "sa_client.h"

struct sm_node {
	int fd;
	uint64_t epoch;
	uint32_t tid;
};

static int send_msg(struct sm_node *s, const struct umc_sm_msg *m)
{
	uint8_t buf[UMC_SM_MAX_MSG];
	size_t len = umc_sm_msg_encode(buf, m);

	if (!len)
		return -EINVAL;
	return send(s->fd, buf, len, 0) == (ssize_t)len ? 0 : -errno;
}

/*
 * The reply of type @type to header TID @tid within @deadline; other
 * datagrams (late replies) are skipped.  @buf keeps the datagram, which
 * m->mad points into.
 */
static int recv_reply(struct sm_node *s, uint8_t type, uint32_t tid, int64_t deadline,
		      uint8_t *buf, struct umc_sm_msg *m)
{
	for (;;) {
		struct pollfd pfd = { .fd = s->fd, .events = POLLIN };
		int64_t left = deadline - sa_now_ms();
		ssize_t len;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		if (!(pfd.revents & POLLIN))
			continue;
		len = recv(s->fd, buf, UMC_SM_MAX_MSG, 0);
		if (len < 0)
			continue; /* e.g. ECONNREFUSED from an earlier datagram */
		if (umc_sm_msg_decode(buf, (size_t)len, m) || m->hdr.type != type ||
		    m->hdr.tid != tid)
			continue;
		return 0;
	}
}

static int sm_open(struct sa_xport *x, struct sa_node *n)
{
	struct sm_node *s = calloc(1, sizeof(*s));
	struct umc_sm_msg m = { .hdr.type = UMC_SM_REGISTER };
	uint8_t buf[UMC_SM_MAX_MSG];
	struct sockaddr_in sa;
	int rc;

	if (!s)
		return -ENOMEM;
	n->priv = s;
	s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		return -errno;
	rc = umc_sa_parse_endpoint(x->sm_addr, UMC_SM_UDP_PORT, &sa);
	if (rc)
		return rc;
	if (connect(s->fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -errno;
	if (getrandom(&m.reg.nonce, sizeof(m.reg.nonce), 0) != sizeof(m.reg.nonce))
		m.reg.nonce = (uint64_t)sa_now_ms() ^ (uint64_t)getpid() << 32;
	s->tid = (uint32_t)m.reg.nonce;
	m.hdr.tid = ++s->tid;
	rc = send_msg(s, &m);
	if (!rc)
		rc = recv_reply(s, UMC_SM_REGISTER_REPLY, m.hdr.tid, sa_now_ms() + SA_DEFAULT_TIMEOUT_MS,
				buf, &m);
	if (rc)
		return rc;
	if (m.hdr.status != UMC_SM_OK)
		return -ECONNREFUSED;
	s->epoch = m.hdr.epoch;
	n->lid = m.port.lid;
	n->sm_lid = m.port.sm_lid;
	n->prefix = m.port.subnet_prefix;
	n->guid = m.port.port_guid;
	return 0;
}

/* End a multi-segment transfer after its first segment: RMPP STOP. */
static void stop_transfer(struct sm_node *s, const struct sa_node *n, const uint8_t *seg)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_SA, .epoch = s->epoch, .lid = n->lid } };
	uint8_t stop[SA_MAD_SIZE] = { 0 };

	memcpy(stop, seg, SA_HDR_LEN);
	stop[3] &= 0x7f; /* the receiver's control MADs carry the request method */
	stop[25] = SA_RMPP_TYPE_STOP;
	stop[26] = (uint8_t)(stop[26] & ~7) | SA_RMPP_ACTIVE;
	stop[27] = SA_RMPP_STATUS_RESX;
	memset(stop + 28, 0, 8); /* SegmentNumber, PayloadLength */
	m.hdr.tid = ++s->tid;
	m.mad = stop;
	send_msg(s, &m);
}

static int sm_xact(struct sa_xport *x, struct sa_node *n, const uint8_t *req, uint8_t *rep,
		   int timeout_ms)
{
	struct sm_node *s = n->priv;
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_SA, .epoch = s->epoch, .lid = n->lid } };
	int64_t deadline = sa_now_ms() + timeout_ms;
	uint8_t buf[UMC_SM_MAX_MSG];
	int rc;

	m.hdr.tid = ++s->tid;
	m.mad = req;
	rc = send_msg(s, &m);
	while (!rc) {
		rc = recv_reply(s, UMC_SM_SA_REPLY, m.hdr.tid, deadline, buf, &m);
		if (rc)
			break;
		if (m.hdr.status == UMC_SM_UNKNOWN_PORT)
			return -ENETRESET; /* the lease ended, or umc-sm restarted */
		if (m.hdr.status != UMC_SM_OK || memcmp(m.mad + 8, req + 8, 8))
			continue; /* not this MAD's reply */
		memcpy(rep, m.mad, SA_MAD_SIZE);
		if ((rep[26] & SA_RMPP_ACTIVE) && rep[25] == SA_RMPP_TYPE_DATA &&
		    !(rep[26] & SA_RMPP_LAST))
			stop_transfer(s, n, rep);
		return 0;
	}
	return rc;
}

static void sm_close(struct sa_xport *x, struct sa_node *n)
{
	struct sm_node *s = n->priv;

	if (!s)
		return;
	if (s->fd >= 0) {
		struct umc_sm_msg m = { .hdr = { .type = UMC_SM_UNREGISTER, .epoch = s->epoch,
						 .lid = n->lid } };
		uint8_t buf[UMC_SM_MAX_MSG];

		/* Leave the subnet now rather than when the lease ends. */
		m.hdr.tid = ++s->tid;
		if (n->lid && !send_msg(s, &m))
			recv_reply(s, UMC_SM_UNREGISTER_REPLY, m.hdr.tid,
				   sa_now_ms() + SA_DEFAULT_TIMEOUT_MS, buf, &m);
		close(s->fd);
	}
	free(s);
	n->priv = NULL;
}

const struct sa_xport_ops sa_xport_sm = {
	.name = "umc-sm",
	.open = sm_open,
	.xact = sm_xact,
	.close = sm_close,
};
