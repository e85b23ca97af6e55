/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - the run-time control socket: RUNDIR/PID.ctl (stat/rundir.h), a
 * Unix SOCK_SEQPACKET socket that umc-ctl(1) sends one request to and
 * reads one reply from (wire/ctl_proto.h has the messages).  Both ends
 * are here: the server's (the library's control thread, umc-sm's loop) and
 * the client's (umc-ctl, tests).
 *
 * Who may talk to it: the directory is private (0700), the socket 0600,
 * and the server also refuses a peer whose uid (SO_PEERCRED) is neither
 * its own effective uid nor root, in case the socket is reached another
 * way.  A peer gets at most UMC_CTL_IO_MS to send its request; a message
 * that does not decode closes the connection without a reply; one of
 * another version is answered -EPROTONOSUPPORT.
 */
#ifndef UMC_CTL_H
#define UMC_CTL_H

#include <stdbool.h>
#include <sys/types.h>

#include "wire/ctl_proto.h"

enum { UMC_CTL_IO_MS = 1000 }; /* a peer's time to send its request, and ours to answer */

/*
 * A server's answer to one request: fill @rep's status, text and arg (its
 * op is set).  Runs on the server's thread.
 */
typedef void (*umc_ctl_handler)(void *ctx, const struct umc_ctl_msg *req,
				struct umc_ctl_msg *rep);

/**
 * umc_ctl_listen - the control socket at @path (a stale one of a dead
 * process with this PID is replaced), mode 0600, non-blocking, close on
 * exec.  Returns: the listening fd, or -errno (socket(2), bind(2),
 * listen(2)'s; -ENAMETOOLONG).
 */
int umc_ctl_listen(const char *path);

/**
 * umc_ctl_serve - answer every connection waiting on listening socket
 * @lfd, one after another, each with @handler(@ctx, ...).
 * Context: blocks at most UMC_CTL_IO_MS per connection.
 * Returns: the number of requests answered.
 */
int umc_ctl_serve(int lfd, umc_ctl_handler handler, void *ctx);

/**
 * umc_ctl_call - send @req to the control socket at @path and wait at most
 * @timeout_ms for the reply.
 * Returns: 0 with @rep filled (its status is the server's answer), or
 * -errno: connect(2)'s (-ENOENT: no such socket, -EACCES: another user's,
 * -ECONNREFUSED: its process is gone), -ETIMEDOUT, -ECONNRESET (closed
 * without a reply), -EBADMSG (a reply that does not decode),
 * -EPROTONOSUPPORT (the server speaks another version).
 */
int umc_ctl_call(const char *path, const struct umc_ctl_msg *req, struct umc_ctl_msg *rep,
		 int timeout_ms);

/* umc_ctl_path - RUNDIR/PID.ctl into @buf; 0 or -ENAMETOOLONG. */
int umc_ctl_path(const char *rundir, pid_t pid, char *buf, size_t size);

#endif /* UMC_CTL_H */
