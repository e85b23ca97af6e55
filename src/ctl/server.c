// SPDX-License-Identifier: MIT
/*
 * server.c - the library's side of umc-ctl(1) and umc-stat(1): at the
 * process's first use of a device, the private run directory, the counters
 * file (stat/objects.h), the rules of UMC_FAULTS, and the control thread.
 *
 * The control thread ("umc-ctl") answers the control socket RUNDIR/PID.ctl
 * (faults, reregister, port-down) and releases the datagrams the fault
 * stages hold back when they are due (fault/stage.h), which nothing else
 * would do in a program that sleeps or only sends.  It is a thread of its
 * own because no other thread exists in every process: the SA client's
 * only on InfiniBand, the receive thread only with a group socket, and
 * neither may be delayed by a slow peer of the socket.  It sleeps in
 * poll(2) on the socket and an eventfd, with the next release as its
 * timeout; on the data path it costs nothing.
 *
 * A child of fork(2) is a new process: at its first use of a device it
 * makes its own file, socket and thread (the parent's thread does not
 * exist in it).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "ctl/server.h"
#include "fault/stage.h"
#include "sa/sa_client.h"
#include "stat/objects.h"
#include "stat/rundir.h"
#include "verbs/verbs_int.h"

static struct {
	unsigned gen;	 /* umc_fork_gen of the process that started: a child starts again */
	bool started;
	int lfd;	 /* the control socket, or -1 */
	char path[UMC_RUNDIR_MAX + 32];
	struct umc_event_handler *handlers; /* one per device, for its port events */
} umc_ctl;

/* ------------------------------------------------------------------------- */
/* Requests.                                                                 */

static void do_faults(const struct umc_ctl_msg *req, struct umc_ctl_msg *rep)
{
	char canon[UMC_CTL_TEXT_MAX], err[UMC_FAULT_ERR_MAX];
	int ret = umc_fault_set(req->text, true, canon, sizeof(canon), err);

	rep->status = ret;
	if (ret == -ENOMEM) {
		umc_ctl_set_text(rep, "out of memory: the rules are unchanged");
	} else if (ret) {
		umc_ctl_set_text(rep, err);
	} else {
		umc_stat_faults_set(canon);
		umc_ctl_set_text(rep, canon[0] ? canon : "none");
	}
}

/*
 * The InfiniBand devices a request names: @name, or every one when it is
 * empty.  Calls @fn on each; the reply says which, or why none.
 */
static void each_ib_port(const char *name, struct umc_ctl_msg *rep, const char *what,
			 int (*fn)(struct umc_device *dev, struct umc_sa_client *sa, unsigned arg),
			 unsigned arg)
{
	struct umc_device **devs;
	char line[UMC_CTL_TEXT_MAX];
	int n = umc_devices(&devs), done = 0, ret = 0;
	size_t len = 0;

	line[0] = 0;
	for (int i = 0; i < n; i++) {
		struct umc_device *dev = devs[i];
		struct umc_sa_client *sa = dev->link->sa(dev);

		if (name[0] ? strcmp(name, dev->ibdev.name) : !sa)
			continue;
		if (!sa) {
			rep->status = -EOPNOTSUPP;
			snprintf(line, sizeof(line), "%s: %s is for InfiniBand ports", name, what);
			umc_ctl_set_text(rep, line);
			return;
		}
		ret = fn(dev, sa, arg);
		if (ret)
			break;
		len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s", done ? ", " : "",
					dev->ibdev.name);
		done++;
	}
	if (ret) {
		rep->status = ret;
		snprintf(line, sizeof(line), "%s: %s", what, strerror(-ret));
	} else if (!done) {
		rep->status = -ENODEV;
		snprintf(line, sizeof(line), name[0] ? "no device %s" : "no InfiniBand device%s",
			 name);
	} else {
		snprintf(line + len, sizeof(line) - len, ": %s", what);
	}
	umc_ctl_set_text(rep, line);
}

static int reregister(struct umc_device *dev, struct umc_sa_client *sa, unsigned unused)
{
	(void)dev;
	(void)unused;
	return umc_sa_reregister(sa);
}

static int port_down(struct umc_device *dev, struct umc_sa_client *sa, unsigned secs)
{
	/* Nothing in or out from now; the port comes up by itself (ctl_port_event). */
	umc_fault_port_down(dev, true);
	return umc_sa_port_down(sa, secs * 1000);
}

static void handler(void *ctx, const struct umc_ctl_msg *req, struct umc_ctl_msg *rep)
{
	char what[64];

	(void)ctx;
	switch (req->op) {
	case UMC_CTL_FAULTS:
		return do_faults(req, rep);
	case UMC_CTL_REREGISTER:
		return each_ib_port(req->text, rep, "reregistered", reregister, 0);
	case UMC_CTL_PORT_DOWN:
		if (!req->arg || req->arg > UMC_CTL_MAX_SECS) {
			rep->status = -EINVAL;
			umc_ctl_set_text(rep, "port-down takes 1 to 3600 seconds");
			return;
		}
		snprintf(what, sizeof(what), "down for %u s", req->arg);
		return each_ib_port(req->text, rep, what, port_down, req->arg);
	default:
		rep->status = -EOPNOTSUPP;
		snprintf(what, sizeof(what), "%s is for umc-sm", umc_ctl_op_str(req->op));
		umc_ctl_set_text(rep, what);
	}
}

/* ------------------------------------------------------------------------- */
/* The thread.                                                               */

static void *ctl_thread(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[2] = {{.fd = umc_ctl.lfd, .events = POLLIN},
				      {.fd = umc_fault_wake_fd(), .events = POLLIN}};
		uint64_t now = umc_fault_now_us(), next = umc_fault_tick(now), v;
		int timeout = next == UINT64_MAX ? -1
			      : next <= now	  ? 0
						  : (int)((next - now + 999) / 1000);

		if (poll(p, 2, timeout) < 0)
			continue; /* EINTR */
		if (p[0].revents & POLLIN)
			umc_ctl_serve(umc_ctl.lfd, handler, NULL);
		if ((p[1].revents & POLLIN) && read(p[1].fd, &v, sizeof(v)) < 0) {
			/* EAGAIN: another reader took it */
		}
	}
	return NULL;
}

/*
 * Port events of every device: the counters file shows the port as it is
 * now, and a port that comes up again after port-down sends and receives.
 */
static void ctl_port_event(struct umc_event_handler *h, enum umc_event_type ev)
{
	if (ev == UMC_EVENT_PORT_ACTIVE)
		umc_fault_port_down(h->dev, false);
	umc_stat_dev_port(h->dev);
}

void umc_ctl_dev_added(struct umc_device *dev)
{
	struct umc_event_handler *h = calloc(1, sizeof(*h));

	umc_stat_dev_port(dev);
	if (!h)
		return;
	h->dev = dev;
	h->handler = ctl_port_event;
	umc_dev_event_register(h);
}

static void ctl_exit(void)
{
	if (umc_forked(umc_ctl.gen))
		return; /* the parent's */
	if (umc_ctl.lfd >= 0)
		unlink(umc_ctl.path);
	umc_stat_lib_exit();
}

void umc_ctl_lib_start(void)
{
	static bool atexit_done; /* atexit handlers are inherited: register once */
	char dir[UMC_RUNDIR_MAX], why[256], err[UMC_FAULT_ERR_MAX];
	const char *spec = getenv("UMC_FAULTS");
	int ret;

	if (umc_ctl.started && !umc_forked(umc_ctl.gen))
		return;
	/* Files, a socket and a thread, made under the device list's lock: no cancel in between. */
	int cs = umc_cancel_off();

	umc_ctl.started = true;
	umc_ctl.gen = umc_fork_gen;
	umc_ctl.lfd = -1;
	ret = umc_rundir_make(dir, sizeof(dir), why, sizeof(why));
	if (ret)
		fprintf(stderr, "umcast: no counters file and no control socket: %s\n",
			why[0] ? why : strerror(-ret));
	umc_stat_lib_init(ret ? NULL : dir);
	if (spec) {
		char canon[UMC_CTL_TEXT_MAX];

		/* Not in force until it parses: a malformed SPEC injects nothing. */
		if (umc_fault_set(spec, false, canon, sizeof(canon), err))
			fprintf(stderr, "umcast: UMC_FAULTS: %s\n", err);
		else
			umc_stat_faults_set(canon);
	}
	if (!ret && !umc_ctl_path(dir, getpid(), umc_ctl.path, sizeof(umc_ctl.path)))
		umc_ctl.lfd = UMC_FD_NEW(umc_ctl_listen(umc_ctl.path), false);
	if (!atexit_done)
		atexit_done = atexit(ctl_exit) == 0;
	if (umc_thread_start(NULL, true, ctl_thread, NULL, "umc-ctl") && umc_ctl.lfd >= 0) {
		umc_fd_close(umc_ctl.lfd);
		unlink(umc_ctl.path);
		umc_ctl.lfd = -1;
	}
	umc_cancel_restore(cs);
}
