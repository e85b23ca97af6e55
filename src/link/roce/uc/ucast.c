// SPDX-License-Identifier: MIT
/*
 * ucast.c - RoCEv2 unicast: a datagram sent to one of the host's addresses
 * reaches the process that owns its DestQP.  This file: this process as a
 * client of each address's demultiplexer, the agent thread and the port's
 * calls; the demultiplexer is uc_demux.c, its steering uc_steer.c, the
 * objects they share uc_int.h.
 *
 * Every umcast process is an HCA of its own with its own QPNs, yet all of
 * them share the host's addresses and UDP port 4791, where RoCEv2 peers
 * send.  A unicast datagram is given to one socket only, so per address one
 * process, the demultiplexer, owns addr:4791 and brings each datagram to
 * the process that claimed its DestQP:
 *
 *   - Rendezvous: an abstract AF_UNIX SOCK_SEQPACKET name made of the
 *     address (ROCE_UC_NAME_FMT).  Abstract names belong to the network
 *     namespace, as the UDP port does, need no file system and vanish with
 *     their process, even one killed by SIGKILL.  The process that binds
 *     the name is the demultiplexer; every process (the demultiplexer too,
 *     through its own listener) connects to it.
 *   - Registration: HELLO hands over, with SCM_RIGHTS, the sending end of a
 *     SOCK_DGRAM socketpair whose other end is the port's unicast input in
 *     the process's receive engine (rx.c); then CLAIM names its QPNs.  Each
 *     QPN is already this process's alone on the host (qpn.c); one that
 *     another client still has in the table (it exited, its hang-up not yet
 *     read) is refused (-EADDRINUSE), and QP creation takes the next number.
 *   - Data, steered: the demultiplexer makes every socket of addr:4791's
 *     SO_REUSEPORT group itself, in a known order, hands one to each
 *     process, and attaches a classic BPF program mapping DestQP to the
 *     index of the owner's socket, so the kernel delivers each datagram
 *     straight to its owner (uc_steer.c says why the order can be
 *     trusted).  No privilege is needed.
 *   - Data, passed on: what reaches index 0, the demultiplexer's own
 *     socket, its agent thread sends on to the owner's input (uc_demux.c).
 *     Nothing is allocated per datagram on either path.
 *   - Exit: a process that exits or is killed closes its connection; the
 *     demultiplexer forgets its QPNs and keeps its socket for the next one.
 *     When the demultiplexer itself goes, every connection to it hangs up;
 *     steered datagrams keep reaching their owners (each process holds the
 *     whole group, so none of its sockets left it); each process's agent
 *     thread connects or binds the name anew (one wins, a holder of the
 *     whole group first), the winner takes the group over, and every
 *     process registers again.  Datagrams passed on meanwhile are lost (UD
 *     is unreliable); no process needs a restart.
 *
 * Claims at QP creation and releases at its destruction wait for the
 * answer (UMC_UC_REPLY_MS at most); registrations after a hand-over are not
 * waited for.
 * docs/design.md "Unicast" weighs the alternatives and gives the costs.
 *
 * Threads and locks: one agent thread per process (for every port and
 * address) does the demultiplexer's work and the reconnects; it never takes
 * a device lock and never waits for an answer.  Per address, ctl_lock
 * serialises the use of the connection to the demultiplexer and
 * steer_lock guards the port's hold on the reuseport group (its own socket,
 * the others, the group's size); per port, qset_lock guards the list of the
 * port's QPNs.  Order: dev->rx_lock, dev->lock, ctl_lock, steer_lock,
 * qset_lock; the agent thread only try-locks ctl_lock.
 * uc_ag_lock (process-wide, fork-safe) is taken alone.  Every descriptor
 * is recorded as it is made (UMC_FD_NEW), so a child of fork closes them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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

UMC_ATFORK_MUTEX(uc_ag_lock, UMC_GL_UC_AGENT, uc_forked)

static void uc_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

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

/* ------------------------------------------------------------------------- */
/* This process as a client of an address's demultiplexer.                  */

/* Send a request on d->ctl; returns its seq, or 0 when the connection failed. */
static uint32_t uc_dom_send(struct uc_dom *d, uint16_t op, const uint32_t *qpn, int n, int fd)
{
	struct roce_uc_msg m = {.magic = ROCE_UC_MAGIC,
				.version = ROCE_UC_VERSION,
				.op = op,
				.seq = ++d->seq ? d->seq : ++d->seq,
				.count = (uint16_t)n};

	if (n)
		memcpy(m.qpn, qpn, (size_t)n * sizeof(*qpn));
	return roce_send_fd(d->ctl, &m, ROCE_UC_MSG_LEN(n), fd) ? m.seq : 0;
}

/* The connection to the demultiplexer is gone: the agent makes a new one. */
static void uc_dom_lost(struct uc_dom *d)
{
	if (d->ctl >= 0) {
		roce_uc_ep_del(d->ctl);
		umc_fd_close(d->ctl);
	}
	d->ctl = -1;
	d->leader_pid = 0;
	d->leader_port = false;
	atomic_store(&d->reconnect, true);
	roce_uc_agent_wake();
}

/*
 * Note an answer: to the request being waited for (@awaited: its caller
 * counts a refusal), or to an earlier one nobody waited for (a refused
 * QPN is counted here: a registration sent again after a hand-over).
 */
static void uc_dom_reply(struct uc_dom *d, const struct roce_uc_msg *r, size_t len, bool awaited)
{
	if (r->status == -EPROTONOSUPPORT) {
		if (!d->proto_warned)
			fprintf(stderr,
				"umcast: the unicast demultiplexer of this host speaks another "
				"protocol version: unicast cannot be received on %s\n",
				d->name.sun_path + 1);
		d->proto_warned = true;
		return;
	}
	if (len < ROCE_UC_MSG_LEN(0))
		return;
	d->leader_pid = (pid_t)r->pid;
	d->leader_port = r->flags & ROCE_UC_F_PORT;
	if (r->status == -EADDRINUSE && !awaited)
		CNTN(&d->uc->rp->dev, uc_qpn_taken, r->count);
}

/*
 * Wait until @deadline for the answer to request @seq.  Returns its status,
 * -ETIMEDOUT (the request stands), or -ENOTCONN (the connection was lost:
 * the agent registers everything again).  Context: d->ctl_lock held.
 */
static int uc_dom_wait(struct uc_dom *d, uint32_t seq, uint64_t deadline)
{
	if (!seq || d->ctl < 0)
		return -ENOTCONN;
	for (;;) {
		struct roce_uc_msg r;
		ssize_t len = recv(d->ctl, &r, sizeof(r), MSG_DONTWAIT);
		struct pollfd p = {.fd = d->ctl, .events = POLLIN};
		int64_t left;

		if (len >= (ssize_t)offsetof(struct roce_uc_msg, pid) && r.magic == ROCE_UC_MAGIC &&
		    r.op == ROCE_UC_REPLY) {
			uc_dom_reply(d, &r, (size_t)len, r.seq == seq);
			if (r.seq == seq)
				return r.status;
			continue;
		}
		if (len > 0 || (len < 0 && errno == EINTR))
			continue;
		if (len == 0 || errno != EAGAIN) {
			uc_dom_lost(d);
			return -ENOTCONN;
		}
		left = (int64_t)(deadline - uc_now_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		poll(&p, 1, (int)left);
	}
}

/* Send a request where connected; returns its seq, 0 if not sent (then lost). */
static uint32_t uc_dom_request(struct uc_dom *d, uint16_t op, const uint32_t *qpn, int n)
{
	uint32_t seq = d->ctl >= 0 ? uc_dom_send(d, op, qpn, n, -1) : 0;

	if (!seq && d->ctl >= 0)
		uc_dom_lost(d);
	return seq;
}

/* HELLO and every QPN of the port, on a new connection @fd (nothing waited for). */
static int uc_dom_register(struct uc_dom *d, int fd)
{
	struct roce_uc *uc = d->uc;
	int ret = 0;

	uint32_t own;

	pthread_mutex_lock(&d->steer_lock);
	own = d->own_idx >= 0 ? (uint32_t)d->own_idx : 0;
	pthread_mutex_unlock(&d->steer_lock);
	d->ctl = fd;
	/* With the index of our socket in the group we hold, if any. */
	if (!uc_dom_send(d, ROCE_UC_HELLO, &own, own ? 1 : 0, uc->data_tx))
		ret = -ENOTCONN;
	pthread_mutex_lock(&uc->qset_lock);
	for (int i = 0; !ret && i < uc->nqpn; i += UMC_UC_MSG_QPNS) {
		int n = uc->nqpn - i < UMC_UC_MSG_QPNS ? uc->nqpn - i : UMC_UC_MSG_QPNS;

		if (!uc_dom_send(d, ROCE_UC_CLAIM, uc->qpns + i, n, -1))
			ret = -ENOTCONN;
	}
	pthread_mutex_unlock(&uc->qset_lock);
	d->tag = (struct uc_tag){UC_T_CTL, d};
	/* The agent only watches for the hang-up, once; answers are read by callers. */
	ret = ret ?: roce_uc_ep_add(fd, EPOLLRDHUP | EPOLLONESHOT, &d->tag);
	if (ret)
		d->ctl = -1;
	return ret;
}

/*
 * May this port stand for demultiplexer of @d's address now?  After a
 * hang-up, a port that does not hold the whole group waits
 * UMC_UC_ADOPT_DELAY_MS, so that one that does can take it over and keep
 * it steering, rather than make a new one (which every process must let go
 * of the old for).
 */
static bool uc_dom_may_lead(struct uc_dom *d)
{
	uint64_t lost = atomic_load(&d->lost_at);

	return !lost || roce_uc_dom_whole(d) || uc_now_ms() >= lost + UMC_UC_ADOPT_DELAY_MS;
}

/*
 * Connect to the demultiplexer of @d's address, becoming it first if
 * nobody is, and register.  @wait: retry while an election is under way
 * (up to UMC_UC_CONNECT_MS); otherwise one attempt (the agent comes back).
 * Context: d->ctl_lock held, d->ctl < 0.  Returns 0 or -errno.
 */
static int uc_dom_connect(struct uc_dom *d, bool wait)
{
	uint64_t deadline = uc_now_ms() + UMC_UC_CONNECT_MS;

	for (;;) {
		int fd = UMC_FD_NEW(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0),
				    false);
		int err;

		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&d->name, d->name_len) == 0) {
			if (uc_dom_register(d, fd) == 0) {
				atomic_store(&d->reconnect, false);
				atomic_store(&d->lost_at, 0);
				return 0;
			}
			err = ECONNRESET;
		} else {
			err = errno;
		}
		umc_fd_close(fd);
		if ((err == ECONNREFUSED || err == ENOENT) && uc_dom_may_lead(d)) {
			/* Nobody listens: become the demultiplexer (or lose the race to). */
			int ret = roce_uc_lead_start(d);

			if (ret == 0)
				continue;
			if (ret != -EADDRINUSE)
				return ret;
		} else if (err == ECONNREFUSED || err == ENOENT) {
			/* Another process holds the whole group: let it take it over first. */
		} else if (err != EAGAIN && err != ECONNRESET && err != EINTR) {
			return -err;
		}
		if (!wait || uc_now_ms() >= deadline)
			return -EAGAIN;
		uc_sleep_ms(1);
	}
}

/* ------------------------------------------------------------------------- */
/* The agent thread.                                                         */

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
			if (pthread_mutex_trylock(&d->ctl_lock) == 0) {
				if (d->ctl >= 0)
					uc_dom_lost(d);
				uc_dom_connect(d, false);
				pthread_mutex_unlock(&d->ctl_lock);
			}
			if (atomic_load(&d->reconnect))
				timeout = timeout < 0 || UMC_UC_RETRY_MS < timeout ? UMC_UC_RETRY_MS
										   : timeout;
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
			struct uc_dom *d;
			struct uc_leader *l = NULL;
			eventfd_t v;

			switch (t->kind) {
			case UC_T_WAKE:
				eventfd_read(roce_uc_ag.wake, &v);
				break;
			case UC_T_CTL:
				/*
				 * Our demultiplexer hung up (one-shot): reconnect from
				 * the tick.  Its group goes on steering (no socket of it
				 * closed), so keep reading ours.
				 */
				d = t->obj;
				atomic_store(&d->lost_at, uc_now_ms());
				atomic_store(&d->reconnect, true);
				atomic_store(&roce_uc_ag.pending, true);
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

/*
 * Start the agent thread once.  Its descriptors are made and recorded
 * before uc_ag_lock is taken, which is taken alone (enum umc_global_lock).
 */
static int uc_agent_start(void)
{
	int epfd, wake, ret = 0;

	if (__atomic_load_n(&roce_uc_ag.running, __ATOMIC_ACQUIRE))
		return 0;
	epfd = UMC_FD_NEW(epoll_create1(EPOLL_CLOEXEC), false);
	wake = UMC_FD_NEW(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), false);
	if (epfd < 0 || wake < 0)
		ret = -errno;
	pthread_mutex_lock(&uc_ag_lock);
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
	pthread_mutex_unlock(&uc_ag_lock);
	umc_fd_close(epfd);
	umc_fd_close(wake);
	return ret;
}

/* ------------------------------------------------------------------------- */
/* Ports and QPs.                                                            */

/* The port's unicast reception, made on first use.  Context: dev->rx_lock held. */
static int uc_port_get(struct roce_port *rp, struct roce_uc **ucp)
{
	struct roce_uc *uc = rp->uc;
	int sv[2] = {-1, -1}, ret, buf = UMC_RX_SOCKBUF;
	struct epoll_event ev = {.events = EPOLLIN};

	*ucp = uc;
	if (uc)
		return 0;
	uc = calloc(1, sizeof(*uc));
	if (!uc)
		return -ENOMEM;
	/*
	 * The port's unicast sockets (the input, one steered socket per
	 * address) wait in an epoll of their own, one endpoint for the engine:
	 * an idle port costs a busy-polling receiver one epoll_wait, not a
	 * recvmmsg per socket.
	 */
	uc->set.ep.fd = UMC_FD_NEW(epoll_create1(EPOLL_CLOEXEC), false);
	uc->set.kind = ROCE_EP_UC_SET;
	ret = uc->set.ep.fd < 0 ? -errno
				: umc_fd_socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, sv,
						    false);
	if (ret) {
		umc_fd_close(uc->set.ep.fd);
		free(uc);
		return ret;
	}
	/* The demultiplexer's sends are charged to this end: give it room. */
	if (setsockopt(sv[1], SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)))
		setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	uc->rp = rp;
	uc->ep.ep.fd = sv[0];
	uc->ep.kind = ROCE_EP_UC_INPUT;
	uc->data_tx = sv[1];
	pthread_mutex_init(&uc->qset_lock, NULL);
	ev.data.ptr = &uc->ep;
	ret = epoll_ctl(uc->set.ep.fd, EPOLL_CTL_ADD, sv[0], &ev) ? -errno : 0;
	ret = ret ?: uc_agent_start();
	ret = ret ?: umc_rx_add(&rp->dev, &uc->set.ep);
	if (ret) {
		umc_fd_close(sv[0]);
		umc_fd_close(sv[1]);
		umc_fd_close(uc->set.ep.fd);
		free(uc);
		return ret;
	}
	rp->uc = uc;
	*ucp = uc;
	return 0;
}

/* A demultiplexer domain for every GID of the port that has none yet. */
static void uc_port_doms(struct roce_uc *uc)
{
	struct umc_device *dev = &uc->rp->dev;

	while (uc->ndom < dev->gid_count) {
		struct uc_dom *d = calloc(1, sizeof(*d));
		char text[INET6_ADDRSTRLEN + 16];
		const void *a;

		if (!d)
			return;
		d->uc = uc;
		d->gid_index = uc->ndom;
		d->ctl = -1;
		pthread_mutex_init(&d->ctl_lock, NULL);
		pthread_mutex_init(&d->steer_lock, NULL);
		d->own_idx = -1;
		d->addr_len = roce_gid_sockaddr(dev, d->gid_index, UMC_ROCEV2_UDP_PORT, &d->addr);
		if (d->addr.ss_family == AF_INET)
			a = &((struct sockaddr_in *)&d->addr)->sin_addr;
		else
			a = &((struct sockaddr_in6 *)&d->addr)->sin6_addr;
		inet_ntop(d->addr.ss_family, a, text, INET6_ADDRSTRLEN);
		if (d->addr.ss_family == AF_INET6 &&
		    ((struct sockaddr_in6 *)&d->addr)->sin6_scope_id)
			snprintf(text + strlen(text), 16, "%%%u",
				 ((struct sockaddr_in6 *)&d->addr)->sin6_scope_id);
		d->name_len = roce_abstract_name(&d->name, ROCE_UC_NAME_FMT, text);
		pthread_mutex_lock(&uc_ag_lock);
		d->next = atomic_load(&roce_uc_ag.doms);
		atomic_store(&roce_uc_ag.doms, d);
		pthread_mutex_unlock(&uc_ag_lock);
		uc->dom[uc->ndom++] = d;
	}
}

static int uc_qset_add(struct roce_uc *uc, uint32_t qpn)
{
	int ret = 0;

	pthread_mutex_lock(&uc->qset_lock);
	if (uc->nqpn == uc->qcap) {
		int cap = uc->qcap ? 2 * uc->qcap : 16;
		uint32_t *grown = realloc(uc->qpns, (size_t)cap * sizeof(*grown));

		if (grown) {
			uc->qpns = grown;
			uc->qcap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		uc->qpns[uc->nqpn++] = qpn;
	pthread_mutex_unlock(&uc->qset_lock);
	return ret;
}

static void uc_qset_del(struct roce_uc *uc, uint32_t qpn)
{
	pthread_mutex_lock(&uc->qset_lock);
	for (int i = 0; i < uc->nqpn; i++) {
		if (uc->qpns[i] == qpn) {
			uc->qpns[i] = uc->qpns[--uc->nqpn];
			break;
		}
	}
	pthread_mutex_unlock(&uc->qset_lock);
}

/*
 * Send request @op (@qpn, @n) to every address's demultiplexer, then wait
 * until @deadline for all the answers.  The ctl_locks are taken in address
 * order (the agent only try-locks them).  Returns -EADDRINUSE if any
 * refused, else 0; *@answered (if given) counts the answers.
 */
static int uc_ask_all(struct roce_uc *uc, uint16_t op, const uint32_t *qpn, int n,
		      uint64_t deadline, int *answered)
{
	uint32_t seq[UMC_MAX_GIDS];
	int ret = 0, ok = 0;

	for (int i = 0; i < uc->ndom; i++) {
		pthread_mutex_lock(&uc->dom[i]->ctl_lock);
		seq[i] = uc_dom_request(uc->dom[i], op, qpn, n);
	}
	for (int i = 0; i < uc->ndom; i++) {
		int r = uc_dom_wait(uc->dom[i], seq[i], deadline);

		ok += r == 0;
		if (r == -EADDRINUSE)
			ret = r;
	}
	for (int i = uc->ndom - 1; i >= 0; i--)
		pthread_mutex_unlock(&uc->dom[i]->ctl_lock);
	if (answered)
		*answered = ok;
	return ret;
}

/* Claim @qpn (@n of them) everywhere, waiting for the answers (uc_ask_all). */
static int uc_claim_all(struct roce_uc *uc, const uint32_t *qpn, int n, uint64_t deadline,
			int *answered)
{
	int ret = uc_ask_all(uc, ROCE_UC_CLAIM, qpn, n, deadline, answered);

	if (ret)
		CNTN(&uc->rp->dev, uc_qpn_taken, (unsigned long)n);
	return ret;
}

/*
 * Tell every address's demultiplexer that @qpn is no longer ours, and wait
 * (UMC_UC_REPLY_MS at most) until each has stopped steering it here: when
 * the QP's destruction returns, the host's steering no longer names it.
 */
static void uc_release(struct roce_uc *uc, uint32_t qpn)
{
	uc_ask_all(uc, ROCE_UC_RELEASE, &qpn, 1, uc_now_ms() + UMC_UC_REPLY_MS, NULL);
}

/* Connect to every address's demultiplexer not connected yet, or leave it to the agent. */
static void uc_connect_all(struct roce_uc *uc)
{
	for (int i = 0; i < uc->ndom; i++) {
		struct uc_dom *d = uc->dom[i];

		pthread_mutex_lock(&d->ctl_lock);
		if (d->ctl < 0 && uc_dom_connect(d, true))
			roce_uc_agent_wake();
		pthread_mutex_unlock(&d->ctl_lock);
	}
}

int roce_uc_qp_add(struct roce_qp *qp)
{
	struct roce_port *rp = to_roce_port(qp->qp.dev);
	uint32_t qpn = qp->qp.ibqp.qp_num;
	struct roce_uc *uc;
	int ret = uc_port_get(rp, &uc);

	if (ret)
		return ret;
	uc_port_doms(uc);
	/* Connect first (registering the QPNs the port has) ... */
	uc_connect_all(uc);
	/* ... then claim the new one everywhere at once, and wait for every answer. */
	ret = uc_qset_add(uc, qpn);
	if (ret)
		return ret;
	ret = uc_claim_all(uc, &qpn, 1, uc_now_ms() + UMC_UC_REPLY_MS, NULL);
	if (ret == -EADDRINUSE) {
		uc_qset_del(uc, qpn);
		uc_release(uc, qpn);
		return -EADDRINUSE;
	}
	qp->uc_claimed = true;
	return 0;
}

void roce_uc_qp_del(struct roce_qp *qp)
{
	struct roce_uc *uc = to_roce_port(qp->qp.dev)->uc;

	if (!qp->uc_claimed || !uc)
		return;
	uc_qset_del(uc, qp->qp.ibqp.qp_num);
	uc_release(uc, qp->qp.ibqp.qp_num);
	qp->uc_claimed = false;
}

int umc_roce_uc_sync(struct umc_device *dev, struct umc_roce_uc_info *info, int timeout_ms)
{
	struct roce_uc *uc =
	    dev->link->link_layer == IBV_LINK_LAYER_ETHERNET ? to_roce_port(dev)->uc : NULL;
	uint64_t deadline = uc_now_ms() + (uint64_t)timeout_ms;
	struct uc_leader *l;

	memset(info, 0, sizeof(*info));
	if (!uc)
		return -ENODEV;
	uc_connect_all(uc);
	for (int i = 0; i < uc->ndom; i++)
		info->leading += atomic_load(&uc->dom[i]->lead) != NULL;
	/* A claim of nothing: answered after everything sent before it. */
	uc_claim_all(uc, NULL, 0, deadline, &info->connected);
	info->addrs = uc->ndom;
	if (uc->ndom) {
		struct uc_dom *d = uc->dom[0];

		pthread_mutex_lock(&d->ctl_lock);
		info->leader_pid = d->leader_pid;
		info->port_held = d->ctl >= 0 && d->leader_port;
		pthread_mutex_unlock(&d->ctl_lock);
		/* The agent's: read for a diagnosis, without its lock. */
		l = atomic_load(&d->lead);
		info->steering = l && __atomic_load_n(&l->steer, __ATOMIC_RELAXED);
		info->clients = l ? __atomic_load_n(&l->ncl, __ATOMIC_RELAXED) : 0;
	}
	return info->connected == info->addrs ? 0 : -EAGAIN;
}

/* The domain of @uc whose address is @dst (of @family 4 or 6), or NULL. */
static struct uc_dom *uc_dom_by_addr(struct roce_uc *uc, int family, const uint8_t *dst)
{
	for (int i = 0; i < uc->ndom; i++) {
		const struct sockaddr_storage *a = &uc->dom[i]->addr;

		if (family == 4 && a->ss_family == AF_INET &&
		    !memcmp(&((const struct sockaddr_in *)a)->sin_addr, dst, 4))
			return uc->dom[i];
		if (family == 6 && a->ss_family == AF_INET6 &&
		    !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, dst, 16))
			return uc->dom[i];
	}
	return NULL;
}

/* Is @fd a datagram socket bound to @d's addr:4791? */
static bool uc_fd_is_group_socket(const struct uc_dom *d, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss), tl = sizeof(int);
	int type = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_DGRAM ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) || ss.ss_family != d->addr.ss_family)
		return false;
	if (ss.ss_family == AF_INET)
		return !memcmp(&ss, &d->addr, sizeof(struct sockaddr_in));
	return ((struct sockaddr_in6 *)&ss)->sin6_port == ((struct sockaddr_in6 *)&d->addr)->sin6_port &&
	       !memcmp(&((struct sockaddr_in6 *)&ss)->sin6_addr,
		       &((struct sockaddr_in6 *)&d->addr)->sin6_addr, 16);
}

/*
 * Retire steered endpoint @ep: its socket leaves the set, then closes.
 * Closing alone would not take it out: the demultiplexer and the other
 * processes of the group hold the same socket, and epoll drops an item
 * only when the last descriptor of its file closes (epoll(7)), so its
 * datagrams would go on naming @ep.  (After a hang-up the descriptor is
 * a placeholder that roce_uc_dom_steer_drop() took out already.)
 * Retiring happens in the engine, while it reads the input
 * (roce_uc_ctl_input), and an event of the same epoll_wait may still name
 * @ep, or an endpoint retired before it in the same batch of control
 * messages: each reads fd -1 (EBADF) until the set's next burst frees
 * them all (roce_uc_reap).
 */
static void uc_ep_retire(struct roce_uc *uc, struct roce_ep *ep)
{
	(void)epoll_ctl(uc->set.ep.fd, EPOLL_CTL_DEL, ep->ep.fd, NULL);
	umc_fd_close(ep->ep.fd);
	ep->ep.fd = -1;
	ep->retired_next = uc->retired;
	uc->retired = ep;
}

UMC_HOT
void roce_uc_reap(struct roce_port *rp)
{
	struct roce_uc *uc = rp->uc;

	while (uc && uc->retired) {
		struct roce_ep *ep = uc->retired;

		uc->retired = ep->retired_next;
		free(ep);
	}
}

/* Read @fd, our socket of @d's group at @idx, in place of the one we had.  steer_lock held. */
static void uc_dom_own(struct roce_uc *uc, struct uc_dom *d, int fd, uint32_t idx)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct roce_ep *ep = calloc(1, sizeof(*ep)), *old = d->steer_ep;

	if (!ep) {
		umc_fd_close(fd);
		return;
	}
	ep->ep.fd = fd;
	ep->kind = ROCE_EP_UC_SOCK;
	umc_gid_from_sockaddr(&ep->dst, (struct sockaddr *)&d->addr);
	ev.data.ptr = ep;
	if (epoll_ctl(uc->set.ep.fd, EPOLL_CTL_ADD, fd, &ev)) {
		umc_fd_close(fd);
		free(ep);
		return;
	}
	d->steer_ep = ep;
	d->own_idx = (int)idx;
	if (old)
		uc_ep_retire(uc, old);
}

/* Hold @fd, another socket of @d's group, at @idx.  steer_lock held. */
static void uc_dom_hold(struct uc_dom *d, int fd, uint32_t idx)
{
	if (idx >= d->grpcap) {
		uint32_t cap = d->grpcap ? d->grpcap : 8;
		int *grown;

		while (cap <= idx)
			cap *= 2;
		grown = idx < UMC_UC_GROUP_MAX ? realloc(d->grp, cap * sizeof(*grown)) : NULL;
		if (!grown) {
			umc_fd_close(fd);
			return;
		}
		for (uint32_t i = d->grpcap; i < cap; i++)
			grown[i] = -1;
		d->grp = grown;
		d->grpcap = cap;
	}
	umc_fd_close(d->grp[idx]);
	d->grp[idx] = fd;
}

void roce_uc_ctl_input(struct roce_port *rp, const struct roce_uc_ctl *c, int fd)
{
	struct roce_uc *uc = rp->uc;
	struct uc_dom *d = uc ? uc_dom_by_addr(uc, c->addr_family, c->dst) : NULL;
	/* A socket of the group it describes; index 0 is the demultiplexer's own. */
	bool in_group = c->size <= UMC_UC_GROUP_MAX && c->index < c->size &&
			(c->index > 0 || !(c->flags & ROCE_UC_CTL_OWN));

	if (!d || (c->op == ROCE_UC_CTL_SOCK &&
		   (fd < 0 || !in_group || !uc_fd_is_group_socket(d, fd)))) {
		CNT(&rp->dev, rx_malformed);
		umc_fd_close(fd);
		return;
	}
	pthread_mutex_lock(&d->steer_lock);
	if (c->op == ROCE_UC_CTL_SOCK) {
		if (c->size > d->gsize)
			d->gsize = c->size;
		if (c->flags & ROCE_UC_CTL_OWN)
			uc_dom_own(uc, d, fd, c->index);
		else
			uc_dom_hold(d, fd, c->index);
	} else if (c->op == ROCE_UC_CTL_FRESH) {
		/* Close ours outright (we are the engine): the placeholder is for the agent. */
		if (d->steer_ep)
			uc_ep_retire(uc, d->steer_ep);
		d->steer_ep = NULL;
		for (uint32_t i = 0; i < d->grpcap; i++) {
			umc_fd_close(d->grp[i]);
			d->grp[i] = -1;
		}
		d->own_idx = -1;
		d->gsize = 0;
		umc_fd_close(fd);
	} else {
		CNT(&rp->dev, rx_malformed); /* no such operation */
		umc_fd_close(fd);
	}
	pthread_mutex_unlock(&d->steer_lock);
}
