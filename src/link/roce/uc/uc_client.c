// SPDX-License-Identifier: MIT
/*
 * uc_client.c - RoCEv2 unicast: this process as a client of the
 * demultiplexer of each address of its ports (connecting, or standing for
 * demultiplexer when nobody is, registering, claiming and releasing QPNs),
 * and the port's calls that need it: a QP's claim as it is made and its
 * release as it is destroyed, and the barrier of tests and diagnostics.
 * The design, threads and locks: uc_int.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "link/roce/uc/uc_int.h"
#include "sa/sa_trust.h"

static void uc_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------- */
/* This process as a client of an address's demultiplexer.                  */

/*
 * Send a request on d->ctl with @nfd descriptors @fds along; returns its
 * seq, or 0 when the connection failed.
 */
static uint32_t uc_dom_send(struct uc_dom *d, uint16_t op, const uint32_t *qpn, int n,
			    const int *fds, int nfd)
{
	struct roce_uc_msg m = {.magic = ROCE_UC_MAGIC,
				.version = ROCE_UC_VERSION,
				.op = op,
				.seq = ++d->seq ? d->seq : ++d->seq,
				.count = (uint16_t)n};

	if (n)
		memcpy(m.qpn, qpn, (size_t)n * sizeof(*qpn));
	return roce_send_fds(d->ctl, &m, ROCE_UC_MSG_LEN(n), fds, nfd) ? m.seq : 0;
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

/*
 * Send a request where connected (a claim with the descriptors @fds that
 * hold its QPNs); returns its seq, 0 if not sent (then lost).
 */
static uint32_t uc_dom_request(struct uc_dom *d, uint16_t op, const uint32_t *qpn,
			       const int *fds, int n)
{
	uint32_t seq = d->ctl >= 0 ? uc_dom_send(d, op, qpn, n, fds, fds ? n : 0) : 0;

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

	umc_mutex_lock(&d->steer_lock, UMC_LOCK_UC_STEER);
	own = d->own_idx >= 0 ? (uint32_t)d->own_idx : 0;
	umc_mutex_unlock(&d->steer_lock);
	d->ctl = fd;
	/* With the index of our socket in the group we hold, if any. */
	if (!uc_dom_send(d, ROCE_UC_HELLO, &own, own ? 1 : 0, &uc->data_tx, 1))
		ret = -ENOTCONN;
	umc_mutex_lock(&uc->qset_lock, UMC_LOCK_UC_QSET);
	for (int i = 0; !ret && i < uc->nqpn; i += UMC_UC_MSG_QPNS) {
		int n = uc->nqpn - i < UMC_UC_MSG_QPNS ? uc->nqpn - i : UMC_UC_MSG_QPNS;

		if (!uc_dom_send(d, ROCE_UC_CLAIM, uc->qpns + i, n, uc->qfds + i, n))
			ret = -ENOTCONN;
	}
	umc_mutex_unlock(&uc->qset_lock);
	d->tag = (struct uc_tag){UC_T_CTL, d};
	/* The agent only watches for the hang-up, once; answers are read by callers. */
	ret = ret ?: roce_uc_ep_add(fd, EPOLLRDHUP | EPOLLONESHOT, &d->tag);
	if (ret)
		d->ctl = -1;
	return ret;
}

/*
 * Is the demultiplexer at the other end of new connection @fd to be
 * trusted with this port's unicast: is its process of a user that
 * umc_trusted_uid() trusts (SO_PEERCRED: the kernel's record of who
 * listens)?  Any process can bind the name first; one of another user
 * would be given our claims and input and decide what reaches us.  An
 * untrusted one is named on stderr once per address, counted
 * (uc_demux_untrusted), and asked again after UMC_UC_RETRY_SLOW_MS.
 */
static bool uc_dom_trusted(struct uc_dom *d, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	if (umc_trusted_uid(cred.uid, false))
		return true;
	CNT(&d->uc->rp->dev, uc_demux_untrusted);
	atomic_store(&d->retry_at, uc_now_ms() + UMC_UC_RETRY_SLOW_MS);
	if (!d->untrusted_warned)
		fprintf(stderr,
			"umcast: the unicast demultiplexer %s is process %d of uid %u, a user this "
			"process does not trust: unicast to this address cannot be received here; "
			"UMC_TRUST_UIDS=%u trusts it\n",
			d->name.sun_path + 1, (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.uid);
	d->untrusted_warned = true;
	return false;
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
			if (!uc_dom_trusted(d, fd)) {
				/* Nothing of ours goes to it: unicast waits for a trusted one. */
				umc_fd_close(fd);
				atomic_store(&d->reconnect, true);
				atomic_store(&roce_uc_ag.pending, true);
				return -EACCES;
			}
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

/*
 * The agent's tick: connect @d anew after its demultiplexer was lost, if
 * no caller holds its ctl_lock (the agent only try-locks it).
 */
void roce_uc_dom_retry(struct uc_dom *d)
{
	if (umc_mutex_trylock(&d->ctl_lock, UMC_LOCK_UC_CTL) == 0) {
		if (d->ctl >= 0)
			uc_dom_lost(d);
		uc_dom_connect(d, false);
		umc_mutex_unlock(&d->ctl_lock);
	}
}

/*
 * Our demultiplexer hung up (one-shot): reconnect from the tick.  Its
 * group goes on steering (no socket of it closed), so keep reading ours.
 */
void roce_uc_dom_hup(struct uc_dom *d)
{
	atomic_store(&d->lost_at, uc_now_ms());
	atomic_store(&d->reconnect, true);
	atomic_store(&roce_uc_ag.pending, true);
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
	ret = ret ?: roce_uc_agent_start();
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
		roce_uc_agent_add_dom(d);
		uc->dom[uc->ndom++] = d;
	}
}

/* Add @qpn, held by descriptor @fd (qpn.c), to the port's QPNs.  Returns 0 or -ENOMEM. */
static int uc_qset_add(struct roce_uc *uc, uint32_t qpn, int fd)
{
	int ret = 0;

	umc_mutex_lock(&uc->qset_lock, UMC_LOCK_UC_QSET);
	if (uc->nqpn == uc->qcap) {
		int cap = uc->qcap ? 2 * uc->qcap : 16;
		uint32_t *grown = realloc(uc->qpns, (size_t)cap * sizeof(*grown));
		int *fds = grown ? realloc(uc->qfds, (size_t)cap * sizeof(*fds)) : NULL;

		if (grown)
			uc->qpns = grown;
		if (fds) {
			uc->qfds = fds;
			uc->qcap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret) {
		uc->qfds[uc->nqpn] = fd;
		uc->qpns[uc->nqpn++] = qpn;
	}
	umc_mutex_unlock(&uc->qset_lock);
	return ret;
}

static void uc_qset_del(struct roce_uc *uc, uint32_t qpn)
{
	umc_mutex_lock(&uc->qset_lock, UMC_LOCK_UC_QSET);
	for (int i = 0; i < uc->nqpn; i++) {
		if (uc->qpns[i] == qpn) {
			uc->qpns[i] = uc->qpns[--uc->nqpn];
			uc->qfds[i] = uc->qfds[uc->nqpn];
			break;
		}
	}
	umc_mutex_unlock(&uc->qset_lock);
}

/*
 * Send request @op (@qpn, @n; a claim with the descriptors @fds that hold
 * them, NULL for none) to every address's demultiplexer, then wait
 * until @deadline for all the answers.  The ctl_locks are taken in address
 * order (the agent only try-locks them).  Returns -EADDRINUSE if any
 * refused, else 0; *@answered (if given) counts the answers.
 */
static int uc_ask_all(struct roce_uc *uc, uint16_t op, const uint32_t *qpn, const int *fds,
		      int n, uint64_t deadline, int *answered)
{
	uint32_t seq[UMC_MAX_GIDS];
	int ret = 0, ok = 0;

	for (int i = 0; i < uc->ndom; i++) {
		umc_mutex_lock_nested(&uc->dom[i]->ctl_lock, UMC_LOCK_UC_CTL);
		seq[i] = uc_dom_request(uc->dom[i], op, qpn, fds, n);
	}
	for (int i = 0; i < uc->ndom; i++) {
		int r = uc_dom_wait(uc->dom[i], seq[i], deadline);

		ok += r == 0;
		if (r == -EADDRINUSE)
			ret = r;
	}
	for (int i = uc->ndom - 1; i >= 0; i--)
		umc_mutex_unlock(&uc->dom[i]->ctl_lock);
	if (answered)
		*answered = ok;
	return ret;
}

/*
 * Claim @qpn (@n of them), each proven by the descriptor in @fds that
 * holds it (qpn.c), everywhere, waiting for the answers (uc_ask_all).
 */
static int uc_claim_all(struct roce_uc *uc, const uint32_t *qpn, const int *fds, int n,
			uint64_t deadline, int *answered)
{
	int ret = uc_ask_all(uc, ROCE_UC_CLAIM, qpn, fds, n, deadline, answered);

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
	uc_ask_all(uc, ROCE_UC_RELEASE, &qpn, NULL, 1, uc_now_ms() + UMC_UC_REPLY_MS, NULL);
}

/* Connect to every address's demultiplexer not connected yet, or leave it to the agent. */
static void uc_connect_all(struct roce_uc *uc)
{
	for (int i = 0; i < uc->ndom; i++) {
		struct uc_dom *d = uc->dom[i];

		umc_mutex_lock(&d->ctl_lock, UMC_LOCK_UC_CTL);
		if (d->ctl < 0 && uc_dom_connect(d, true))
			roce_uc_agent_wake();
		umc_mutex_unlock(&d->ctl_lock);
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
	ret = uc_qset_add(uc, qpn, qp->qpn_fd);
	if (ret)
		return ret;
	ret = uc_claim_all(uc, &qpn, &qp->qpn_fd, 1, uc_now_ms() + UMC_UC_REPLY_MS, NULL);
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
	uc_claim_all(uc, NULL, NULL, 0, deadline, &info->connected);
	info->addrs = uc->ndom;
	if (uc->ndom) {
		struct uc_dom *d = uc->dom[0];

		umc_mutex_lock(&d->ctl_lock, UMC_LOCK_UC_CTL);
		info->leader_pid = d->leader_pid;
		info->port_held = d->ctl >= 0 && d->leader_port;
		umc_mutex_unlock(&d->ctl_lock);
		/* The agent's: read for a diagnosis, without its lock. */
		l = atomic_load(&d->lead);
		info->steering = l && __atomic_load_n(&l->steer, __ATOMIC_RELAXED);
		info->clients = l ? __atomic_load_n(&l->ncl, __ATOMIC_RELAXED) : 0;
	}
	return info->connected == info->addrs ? 0 : -EAGAIN;
}
