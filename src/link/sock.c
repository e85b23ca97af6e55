// SPDX-License-Identifier: MIT
/*
 * sock.c - the UDP socket work every link does the same way: opening a
 * socket when descriptors run short, sizing a receive buffer, and sending
 * a batch.
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "link/driver.h"

static int umc_link_socket_raise(int family, int type)
{
	int fd = socket(family, type, 0);
	struct rlimit rl;

	if (fd >= 0 || errno != EMFILE || getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return fd < 0 ? -errno : fd;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return -EMFILE;
	fd = socket(family, type, 0);
	return fd < 0 ? -errno : fd;
}

int umc_link_socket(int family, int type)
{
	return UMC_FD_NEW(umc_link_socket_raise(family, type), false);
}

void umc_link_rcvbuf(int fd)
{
	int buf = UMC_RX_SOCKBUF, one = 1;

	/* A bigger buffer than rmem_max needs privilege; fall back quietly. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	/* Its drops, on the datagrams after them (umc_rx_sock_drops). */
	setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
}

uint32_t umc_link_sock_drops(struct msghdr *mh, uint32_t seen)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL &&
		    c->cmsg_len >= CMSG_LEN(sizeof(seen)))
			memcpy(&seen, CMSG_DATA(c), sizeof(seen));
	return seen;
}

UMC_HOT
void umc_link_sendmmsg(struct umc_device *dev, int fd, struct mmsghdr *msg, int from, int to)
{
	while (from < to) {
		int n = umc_sys_sendmmsg(fd, &msg[from], (unsigned)(to - from), 0);

		if (n > 0) {
			CNTN(dev, tx_packets, n);
			from += n;
		} else if (errno != EINTR) {
			CNT(dev, tx_errors);
			from++;
		}
	}
}
