// SPDX-License-Identifier: MIT
/*
 * sa_io.c - the SA client's transport, beneath both the port
 * (sa_client.c: registration, lease, LID resolution) and the MAD
 * transactions (sa_txn.c): the clock, the SM-protocol tids, a message sent
 * to umc-sm as this port, and the thread's wake-up.  As the kernel's
 * sa_query.c sends through mad.c, which owns the wire, neither file calls
 * up into the other: sa_client.c drives sa_txn.c, and both send here.
 */
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sa/sa_int.h"

uint64_t umc_sa_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint32_t umc_sa_ptid(struct umc_sa_client *c)
{
	if (!++c->next_ptid)
		++c->next_ptid;
	return c->next_ptid;
}

/* A datagram the kernel refuses is not retried here: every sender has a timer that sends again. */
void umc_sa_xmit(struct umc_sa_client *c, struct umc_sm_msg *m)
{
	uint8_t buf[UMC_SM_MAX_MSG];
	size_t n;

	m->hdr.lid = c->attr.active ? c->attr.info.lid : 0;
	m->hdr.epoch = c->attr.active ? c->attr.epoch : 0;
	if (!m->hdr.tid)
		m->hdr.tid = umc_sa_ptid(c);
	n = umc_sm_msg_encode(buf, m);
	if (n && send(c->fd, buf, n, MSG_DONTWAIT) < 0) {
		/* ECONNREFUSED (SM down), EAGAIN: the timers resend */
	}
}

void umc_sa_wake(struct umc_sa_client *c)
{
	uint64_t one = 1;

	if (c->wake_fd >= 0 && write(c->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the thread is awake anyway */
	}
}
