// SPDX-License-Identifier: MIT
/*
 * uc_agent.c - RoCEv2 unicast: the agent, one thread per process for every
 * port and address.  Its loop, at the bottom of this file, waits on one
 * epoll set and hands each event to the file that owns what it names (as
 * libuv's uv__io_poll dispatches to each watcher's callback): a hang-up of
 * this process's demultiplexer to the client (uc_client.c), a connection,
 * a request or a datagram on addr:4791 to the demultiplexer (uc_demux.c);
 * its tick runs what waits for a time: reconnects (uc_client.c), binding
 * addr:4791 (uc_demux.c), the end of a group's adoption (uc_steer.c).
 * Those files add their descriptors to the set (roce_uc_ep_add) and wake
 * the loop (roce_uc_agent_wake).  The design, threads and locks: uc_int.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "link/roce/uc/uc_int.h"

#define UMC_UC_THREAD_NAME "umc-ucast" /* the agent, as ps -L and gdb show it */

/* The process's agent. */
struct uc_agent roce_uc_ag = {.epfd = -1, .wake = -1};

/* Adding to roce_uc_ag.doms and starting the agent; never held with another process-wide lock. */
static pthread_mutex_t uc_ag_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * A child of fork(2) is a new HCA (verbs/fork.c): it never touches its
 * parent's ports, the descriptor registry closes what the parent's agent
 * held (the port 4791 socket included, which the child must not keep), and
 * its first QP starts an agent of its own.
 */
static void uc_forked(void)
{
	atomic_store(&roce_uc_ag.doms, NULL);
	roce_uc_ag.epfd = roce_uc_ag.wake = -1;
	roce_uc_ag.running = false;
	atomic_store(&roce_uc_ag.pending, false);
}

UMC_ATFORK_MUTEX(uc_ag_lock, UMC_LOCK_UC_AGENT, uc_forked)

void roce_uc_agent_wake(void)
{
	atomic_store(&roce_uc_ag.pending, true);
	if (roce_uc_ag.wake >= 0)
		eventfd_write(roce_uc_ag.wake, 1);
}

void roce_uc_ep_del(int fd)
{
	if (roce_uc_ag.epfd >= 0)
		epoll_ctl(roce_uc_ag.epfd, EPOLL_CTL_DEL, fd, NULL);
}

int roce_uc_ep_add(int fd, uint32_t events, struct uc_tag *tag)
{
	struct epoll_event ev = {.events = events, .data.ptr = tag};

	return epoll_ctl(roce_uc_ag.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

void roce_uc_agent_add_dom(struct uc_dom *d)
{
	umc_mutex_lock(&uc_ag_lock, UMC_LOCK_UC_AGENT);
	d->next = atomic_load(&roce_uc_ag.doms);
	atomic_store(&roce_uc_ag.doms, d);
	umc_mutex_unlock(&uc_ag_lock);
}

static void *uc_agent_main(void *arg);

/*
 * Start the agent thread once.  Its descriptors are made and recorded
 * before uc_ag_lock is taken, which takes no other lock (UMC_LOCK_UC_AGENT).
 */
int roce_uc_agent_start(void)
{
	int epfd, wake, ret = 0;

	if (__atomic_load_n(&roce_uc_ag.running, __ATOMIC_ACQUIRE))
		return 0;
	epfd = UMC_FD_NEW(epoll_create1(EPOLL_CLOEXEC), false);
	wake = UMC_FD_NEW(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), false);
	if (epfd < 0 || wake < 0)
		ret = -errno;
	umc_mutex_lock(&uc_ag_lock, UMC_LOCK_UC_AGENT);
	if (!ret && !roce_uc_ag.running) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &roce_uc_ag.wake_tag};

		roce_uc_ag.wake_tag = (struct uc_tag){UC_T_WAKE, NULL};
		ret = epoll_ctl(epfd, EPOLL_CTL_ADD, wake, &ev) ? -errno : 0;
		roce_uc_ag.epfd = epfd;
		roce_uc_ag.wake = wake;
		ret = ret ?: umc_thread_start(NULL, true, uc_agent_main, NULL, UMC_UC_THREAD_NAME);
		if (!ret) {
			__atomic_store_n(&roce_uc_ag.running, true, __ATOMIC_RELEASE);
			epfd = wake = -1; /* the agent's now */
		} else {
			roce_uc_ag.epfd = roce_uc_ag.wake = -1;
		}
	}
	umc_mutex_unlock(&uc_ag_lock);
	umc_fd_close(epfd);
	umc_fd_close(wake);
	return ret;
}

/* Pending work: reconnects and port binds.  Returns the epoll timeout. */
static int uc_agent_tick(void)
{
	uint64_t now = uc_now_ms();
	int timeout = -1;

	if (!atomic_exchange(&roce_uc_ag.pending, false))
		return -1;
	/* The list only grows and is published at its head: no lock to walk it. */
	for (struct uc_dom *d = atomic_load(&roce_uc_ag.doms); d; d = d->next) {
		struct uc_leader *l = atomic_load(&d->lead);

		if (l && l->adopting) {
			if (now >= l->adopt_until)
				roce_uc_steer_adopted(l);
			else
				timeout = timeout < 0 || (int)(l->adopt_until - now) < timeout
						  ? (int)(l->adopt_until - now)
						  : timeout;
		}
		if (l && l->udp < 0) {
			if (now >= l->bind_at)
				roce_uc_lead_bind(l);
			if (l->udp < 0) {
				int ms = l->bind_at > now ? (int)(l->bind_at - now) : 0;

				timeout = timeout < 0 || ms < timeout ? ms : timeout;
			}
		}
		if (atomic_load(&d->reconnect)) {
			uint64_t at = atomic_load(&d->retry_at);
			int ms;

			if (now >= at)
				roce_uc_dom_retry(d);
			at = atomic_load(&d->retry_at);
			ms = at > now ? (int)(at - now) : UMC_UC_RETRY_MS;
			if (atomic_load(&d->reconnect))
				timeout = timeout < 0 || ms < timeout ? ms : timeout;
		}
	}
	if (timeout >= 0)
		atomic_store(&roce_uc_ag.pending, true);
	return timeout;
}

static void *uc_agent_main(void *arg)
{
	struct epoll_event ev[16];

	for (;;) {
		int n = epoll_wait(roce_uc_ag.epfd, ev, 16, uc_agent_tick());
		struct uc_leader *rounds[16];
		int nr = 0;

		for (int i = 0; i < n; i++) {
			struct uc_tag *t = ev[i].data.ptr;
			struct uc_client *cl;
			struct uc_leader *l = NULL;
			eventfd_t v;

			switch (t->kind) {
			case UC_T_WAKE:
				eventfd_read(roce_uc_ag.wake, &v);
				break;
			case UC_T_CTL:
				roce_uc_dom_hup(t->obj);
				break;
			case UC_T_LISTEN:
				l = t->obj;
				roce_uc_lead_accept(l);
				break;
			case UC_T_UDP:
				l = t->obj;
				roce_uc_lead_forward(l);
				break;
			case UC_T_CLIENT:
				cl = t->obj;
				l = cl->lead;
				roce_uc_lead_client(l, cl);
				break;
			}
			if (l && l->dead && nr < 16)
				rounds[nr++] = l;
		}
		/* Clients dropped in this round: no event of it names them any more. */
		for (int i = 0; i < nr; i++) {
			while (rounds[i]->dead) {
				struct uc_client *c = rounds[i]->dead;

				rounds[i]->dead = c->dead_next;
				free(c);
			}
		}
	}
	return arg;
}
