// SPDX-License-Identifier: MIT
/*
 * sock.c - both ends of the run-time control socket (ctl.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl/ctl.h"

int umc_ctl_path(const char *rundir, pid_t pid, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%d.ctl", rundir, (int)pid);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static int ctl_addr(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	strcpy(a->sun_path, path);
	return 0;
}

int umc_ctl_listen(const char *path)
{
	struct sockaddr_un a;
	int fd, ret = ctl_addr(path, &a);

	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A socket left by a dead process with our PID; bind makes it 0600 at once. */
	if (unlink(path) && errno != ENOENT) {
		ret = -errno;
		goto err;
	}
	mode_t old = umask(0177);

	ret = bind(fd, (struct sockaddr *)&a, sizeof(a)) ? -errno : 0;
	umask(old);
	if (!ret && listen(fd, 8))
		ret = -errno;
	if (!ret)
		return fd;
	unlink(path);
err:
	close(fd);
	return ret;
}

/* Wait up to @ms for @events on @fd; true if they came. */
static bool wait_for(int fd, short events, int ms)
{
	struct pollfd p = {.fd = fd, .events = events};
	int n;

	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	return n > 0;
}

static void send_reply(int fd, const struct umc_ctl_msg *rep)
{
	uint8_t buf[UMC_CTL_MAX_MSG];
	size_t n = umc_ctl_encode(buf, rep);

	if (wait_for(fd, POLLOUT, UMC_CTL_IO_MS) && send(fd, buf, n, MSG_NOSIGNAL) < 0) {
		/* the peer went: nothing to tell it */
	}
}

/* One connection: its request, who sent it, our reply.  @req, @rep: the caller's room. */
static void serve_one(int fd, umc_ctl_handler handler, void *ctx, struct umc_ctl_msg *req,
		      struct umc_ctl_msg *rep)
{
	uint8_t buf[UMC_CTL_MAX_MSG + 1];
	struct ucred cred;
	socklen_t len = sizeof(cred);
	ssize_t n;
	int rc;

	if (!wait_for(fd, POLLIN, UMC_CTL_IO_MS))
		return;
	n = recv(fd, buf, sizeof(buf), MSG_TRUNC | MSG_DONTWAIT);
	if (n <= 0)
		return;
	rc = umc_ctl_decode(buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf), req);
	if ((rc && rc != -EPROTONOSUPPORT) || (req->op & UMC_CTL_REPLY) || req->status)
		return; /* not a request: closed without a reply */
	memset(rep, 0, offsetof(struct umc_ctl_msg, text) + 1);
	rep->op = req->op | UMC_CTL_REPLY;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		rep->status = -EPERM;
		umc_ctl_set_text(rep, "refused: not this process's user");
	} else if (rc) {
		rep->status = rc;
	} else {
		handler(ctx, req, rep);
	}
	send_reply(fd, rep);
}

int umc_ctl_serve(int lfd, umc_ctl_handler handler, void *ctx)
{
	struct umc_ctl_msg req, rep;
	int served = 0;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return served; /* EAGAIN: none left; others: try at the next wake-up */
		}
		serve_one(fd, handler, ctx, &req, &rep);
		close(fd);
		served++;
	}
}

int umc_ctl_call(const char *path, const struct umc_ctl_msg *req, struct umc_ctl_msg *rep,
		 int timeout_ms)
{
	uint8_t buf[UMC_CTL_MAX_MSG + 1];
	struct sockaddr_un a;
	int fd, ret = ctl_addr(path, &a);
	ssize_t n;

	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		ret = -errno;
		goto out;
	}
	n = (ssize_t)umc_ctl_encode(buf, req);
	if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) < 0) {
		ret = -errno;
		goto out;
	}
	if (!wait_for(fd, POLLIN, timeout_ms)) {
		ret = -ETIMEDOUT;
		goto out;
	}
	n = recv(fd, buf, sizeof(buf), MSG_TRUNC);
	if (n < 0)
		ret = -errno;
	else if (n == 0)
		ret = -ECONNRESET;
	else
		ret = umc_ctl_decode(buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf), rep);
	if (!ret && rep->op != (req->op | UMC_CTL_REPLY))
		ret = -EBADMSG;
out:
	close(fd);
	return ret;
}
