/* SPDX-License-Identifier: MIT */
/*
 * uc.h - RoCEv2 unicast as the rest of the RoCE link and the tests see it:
 * a QP's number held on the host and claimed at the demultiplexer of each
 * address of its port (tx.c, as the QP is made and destroyed), what a
 * demultiplexer sends the port's input (rx.c), and a barrier for tests
 * and diagnostics.  The design, threads and locks: uc_int.h.
 */
#ifndef UMC_LINK_ROCE_UC_H
#define UMC_LINK_ROCE_UC_H

#include "link/roce/roce.h"
#include "link/roce/uc/uc_proto.h"

/* qpn.c */
/*
 * roce_qpn_hold - hold @qp's QPN on the host (its network namespace) for
 * as long as the QP lives.  Returns 0, -EADDRINUSE (another process holds
 * it: counted as uc_qpn_taken; the core tries the next number), or the
 * socket's -errno (-EMFILE, -ENFILE, -ENOMEM).
 */
int roce_qpn_hold(struct roce_qp *qp);
/* roce_qpn_release - let the QPN go; safe if roce_qpn_hold failed or never ran. */
void roce_qpn_release(struct roce_qp *qp);

/* uc_client.c */
/*
 * roce_uc_qp_add - claim @qp's QPN at the demultiplexer of every address
 * of its port (connecting to it, or becoming it, first), so that unicast
 * datagrams for it reach this process.  Context: qp_init (dev->rx_lock
 * and dev->lock held).  Waits at most UMC_UC_CONNECT_MS + UMC_UC_REPLY_MS
 * per address for another process.  Returns 0 (also when the
 * demultiplexer could not answer in time: the claim stands and is sent
 * again after a hand-over; and when a process of an untrusted user holds
 * the demultiplexer's name: nothing is sent to it, and the claim is made
 * when a trusted one is found), -EADDRINUSE when the demultiplexer has the
 * QPN for another process (one that exited, its hang-up not yet read), or
 * -ENOMEM / -EMFILE.
 */
int roce_uc_qp_add(struct roce_qp *qp);
/* roce_uc_qp_del - release the QPN claimed by roce_uc_qp_add.  Context: no lock held. */
void roce_uc_qp_del(struct roce_qp *qp);
/* The state of a port's unicast reception (umc_roce_uc_sync), for tests and diagnostics. */
struct umc_roce_uc_info {
	int addrs;	  /* addresses (GIDs) of the port with a demultiplexer */
	int connected;	  /* ... to which this process is connected and registered */
	int leading;	  /* ... whose demultiplexer is this process */
	pid_t leader_pid; /* the demultiplexer of GID index 0, or 0 */
	bool port_held;	  /* ... and it holds addr:4791 */
	bool steering;	  /* ... steers by DestQP (this process leading it: else unknown) */
	int clients;	  /* ... the processes registered with it (this process leading it) */
};

/*
 * umc_roce_uc_sync - a barrier with the demultiplexer of every address of
 * @dev's port: (re)connect where needed, then wait until each has handled
 * every claim this process sent it so far (at most @timeout_ms in all).
 * Fills @info.  Returns 0 when every address answered, -EAGAIN otherwise,
 * -ENODEV when the port has no unicast reception (no QP yet).
 */
int umc_roce_uc_sync(struct umc_device *dev, struct umc_roce_uc_info *info, int timeout_ms);



/* uc_steer.c */
/*
 * roce_uc_ctl_input - act on control message @c from a demultiplexer,
 * read on the port's input with descriptor @fd (-1 if none, else
 * recorded for fork already, ours to keep or to umc_fd_close):
 * ROCE_UC_CTL_SOCK with ROCE_UC_CTL_OWN: receive from @fd (a
 * ROCE_EP_UC_SOCK endpoint in the port's unicast set) in place of the
 * earlier one; without: hold @fd at its index; ROCE_UC_CTL_FRESH: close
 * every socket of the old group.  A descriptor that is not a datagram
 * socket bound to c->dst:4791, an index outside the group (past its size,
 * a size past UMC_UC_GROUP_MAX, index 0 as the port's own), or a message
 * for an address of no domain is dropped and counted (rx_malformed).
 * Context: dev->rx_lock held (the engine, reading the input).
 */
void roce_uc_ctl_input(struct roce_port *rp, const struct roce_uc_ctl *c, int fd);
/*
 * roce_uc_reap - free the steered endpoints that control messages retired
 * (roce_uc_ctl_input) since the last call: at the start of a burst of the
 * port's unicast set, when no event of an earlier epoll_wait names them.
 * Context: dev->rx_lock held.
 */
void roce_uc_reap(struct roce_port *rp);

#endif /* UMC_LINK_ROCE_UC_H */
