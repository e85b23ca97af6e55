// SPDX-License-Identifier: MIT
/*
 * qpn.c - RoCEv2: a QPN held by one process of the host at a time.
 *
 * Every umcast process is an HCA of its own, yet the processes of one
 * network namespace share its addresses, and a unicast datagram names its
 * QP by DestQP alone (IBA 9.2 BTH): two of them must never hold one QPN,
 * as one rxe device never hands a number out twice.
 *
 * A QP holds its number by binding the abstract AF_UNIX name
 * "\0" ROCE_QPN_NAME_FMT.  The kernel gives a name to one socket of the
 * network namespace at a time and takes it back when the socket is
 * closed, also when its process is killed, so the hold needs no
 * coordinator.  The demultiplexer's table (uc_demux.c) cannot do this alone:
 * it is rebuilt from the survivors after a hand-over, and a survivor that
 * has not registered again yet (stopped, or merely slow) would see its
 * numbers handed to a newcomer.  The socket never listens: a connect to
 * the name is refused, and nothing can be queued on it.
 */
#include <errno.h>
#include <sys/socket.h>

#include "link/roce/uc/uc.h"

int roce_qpn_hold(struct roce_qp *qp)
{
	struct umc_device *dev = qp->qp.dev;
	struct sockaddr_un a;
	socklen_t len = roce_abstract_name(&a, ROCE_QPN_NAME_FMT, qp->qp.ibqp.qp_num);
	/* One per QP: up to UMC_MAX_QP of them, so the soft RLIMIT_NOFILE may be raised. */
	int fd = umc_link_socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC);

	if (fd < 0)
		return fd;
	if (bind(fd, (struct sockaddr *)&a, len)) {
		int err = errno;

		umc_fd_close(fd);
		if (err == EADDRINUSE)
			CNT(dev, uc_qpn_taken);
		return -err;
	}
	qp->qpn_fd = fd;
	qp->qpn_held = true;
	return 0;
}

void roce_qpn_release(struct roce_qp *qp)
{
	if (!qp->qpn_held)
		return;
	umc_fd_close(qp->qpn_fd);
	qp->qpn_held = false;
}
