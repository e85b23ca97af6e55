// SPDX-License-Identifier: MIT
/*
 * uc_demux.c - RoCEv2 unicast: this process as the demultiplexer of one
 * address, which owns addr:4791 and brings each datagram to the process
 * that claimed its DestQP: its QPN table, its clients, the datagrams it
 * passes on, taking addr:4791.  Its steering is uc_steer.c; the design,
 * threads and locks: uc_int.h.
 *
 * Data, passed on: what reaches index 0, the demultiplexer's own socket (a
 * DestQP missing from the program, a race with its update, everything
 * when UMC_UC_STEER=0), its agent thread reads with recvmmsg, looks DestQP
 * (BTH bytes 5-7) up in an open-addressing table and sends on, behind a
 * struct roce_uc_fwd with the IP context, to the owner's input with
 * sendmmsg (MSG_DONTWAIT: a full queue drops, as a NIC's full buffer
 * does).  The owner checks it as any other datagram.
 *
 * A demultiplexer that finds no owner for a DestQP first reads every
 * pending connection and claim, so a claim sent before a peer could have
 * learnt the QPN is seen.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71 /* Linux 5.14, asm-generic/socket.h */
#endif

#include "link/roce/uc/uc_int.h"

/* ------------------------------------------------------------------------- */
/* The demultiplexer's QPN table.                                            */

static uint32_t uc_home(const struct uc_leader *l, uint32_t qpn)
{
	return (qpn * 0x9E3779B1u) >> l->tshift;
}

static struct uc_client *uc_tab_find(const struct uc_leader *l, uint32_t qpn)
{
	for (uint32_t i = uc_home(l, qpn);; i = (i + 1) & l->tmask) {
		if (!l->tab[i].cl)
			return NULL;
		if (l->tab[i].qpn == qpn)
			return l->tab[i].cl;
	}
}

static void uc_tab_put(struct uc_slot *tab, uint32_t mask, uint32_t home, uint32_t qpn,
		       struct uc_client *cl)
{
	uint32_t i = home;

	while (tab[i].cl)
		i = (i + 1) & mask;
	tab[i] = (struct uc_slot){qpn, cl};
}

static int uc_tab_alloc(struct uc_leader *l, uint32_t size)
{
	struct uc_slot *tab = calloc(size, sizeof(*tab)), *old = l->tab;
	uint32_t omask = l->tmask, shift = 32;

	if (!tab)
		return -ENOMEM;
	for (uint32_t s = size; s > 1; s >>= 1)
		shift--;
	l->tab = tab;
	l->tmask = size - 1;
	l->tshift = shift;
	for (uint32_t i = 0; old && i <= omask; i++)
		if (old[i].cl)
			uc_tab_put(tab, l->tmask, uc_home(l, old[i].qpn), old[i].qpn, old[i].cl);
	free(old);
	return 0;
}

static int uc_tab_insert(struct uc_leader *l, uint32_t qpn, struct uc_client *cl)
{
	if (2 * (l->tcount + 1) > l->tmask + 1 && uc_tab_alloc(l, 2 * (l->tmask + 1)))
		return -ENOMEM;
	uc_tab_put(l->tab, l->tmask, uc_home(l, qpn), qpn, cl);
	l->tcount++;
	return 0;
}

/* Empty slot @i, moving later entries of its probe run back (no tombstones). */
static void uc_tab_del_at(struct uc_leader *l, uint32_t i)
{
	for (uint32_t j = (i + 1) & l->tmask; l->tab[j].cl; j = (j + 1) & l->tmask) {
		uint32_t k = uc_home(l, l->tab[j].qpn);

		/* Entry j may move to i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			l->tab[i] = l->tab[j];
			i = j;
		}
	}
	l->tab[i].cl = NULL;
	l->tcount--;
}

static void uc_tab_del(struct uc_leader *l, uint32_t qpn, const struct uc_client *cl)
{
	for (uint32_t i = uc_home(l, qpn); l->tab[i].cl; i = (i + 1) & l->tmask) {
		if (l->tab[i].qpn == qpn) {
			if (l->tab[i].cl == cl)
				uc_tab_del_at(l, i);
			return;
		}
	}
}

/* ------------------------------------------------------------------------- */
/* The demultiplexer: clients.                                               */

static void uc_client_drop(struct uc_leader *l, struct uc_client *cl)
{
	if (cl->ctl < 0)
		return;
	roce_uc_ep_del(cl->ctl);
	umc_fd_close(cl->ctl);
	cl->ctl = -1;
	if (cl->data >= 0)
		umc_fd_close(cl->data);
	cl->data = -1;
	/* One pass suffices: uc_tab_del_at only moves entries back to slot i. */
	for (uint32_t i = 0; i <= l->tmask; i++)
		while (l->tab[i].cl == cl)
			uc_tab_del_at(l, i);
	if (cl->sidx > 0) {
		roce_uc_steer_program(l);
		roce_uc_steer_drain(l, l->socks[cl->sidx]);
		l->sock_state[cl->sidx] = UC_SOCK_SPARE;
		cl->sidx = -1;
	}
	for (int i = 0; i < l->ncl; i++) {
		if (l->cl[i] == cl) {
			l->cl[i] = l->cl[--l->ncl];
			break;
		}
	}
	/* An event or a batch may still name it: freed after the agent's round. */
	cl->dead_next = l->dead;
	l->dead = cl;
}

/* The effective uid of the process at the other end of connection @fd, or -1. */
static uid_t uc_peer_uid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ? (uid_t)-1 : cred.uid;
}

/*
 * May a connection of a process of @uid be kept?  Those of our own user
 * always (it could signal or trace us anyway); another user's up to
 * UMC_UC_USER_CONNS at once, so that no user can take every descriptor of
 * this process (then nobody could register, and the listener, readable
 * with nothing accepted, would keep the agent spinning).
 */
static bool uc_user_may_connect(struct uc_leader *l, uid_t uid)
{
	int n = 0;

	if (uid == geteuid())
		return true;
	for (int i = 0; i < l->ncl; i++)
		n += l->cl[i]->uid == uid;
	return n < UMC_UC_USER_CONNS;
}

void roce_uc_lead_accept(struct uc_leader *l)
{
	for (;;) {
		int fd = UMC_FD_NEW(accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), false);
		struct uc_client *cl;
		uid_t uid;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		uid = uc_peer_uid(fd);
		if (!uc_user_may_connect(l, uid)) {
			CNT(&l->dom->uc->rp->dev, uc_conn_refused);
			umc_fd_close(fd);
			continue;
		}
		if (l->ncl == l->clcap) {
			int cap = l->clcap ? 2 * l->clcap : 8;
			struct uc_client **grown = realloc(l->cl, (size_t)cap * sizeof(*grown));

			if (!grown) {
				umc_fd_close(fd);
				continue;
			}
			l->cl = grown;
			l->clcap = cap;
		}
		cl = calloc(1, sizeof(*cl));
		if (!cl) {
			umc_fd_close(fd);
			continue;
		}
		cl->tag = (struct uc_tag){UC_T_CLIENT, cl};
		cl->lead = l;
		cl->ctl = fd;
		cl->data = -1;
		cl->sidx = -1;
		cl->uid = uid;
		/*
		 * Only a process of our effective uid is given sockets of
		 * addr:4791's reuseport group (uc_steer.c): the kernel lets
		 * only sockets of one effective uid share a port with
		 * SO_REUSEPORT (socket(7)), so that no other user can read
		 * the group's datagrams or attach a program that steers them
		 * away, and handing a socket over must not undo that.  A
		 * process of another user is served all the same, its
		 * datagrams passed on through its input.
		 */
		cl->same_user = uid == geteuid();
		if (roce_uc_ep_add(fd, EPOLLIN | EPOLLRDHUP, &cl->tag)) {
			umc_fd_close(fd);
			free(cl);
			continue;
		}
		l->cl[l->ncl++] = cl;
	}
}

/* Is @fd a datagram socket of AF_UNIX (the only thing HELLO may carry)? */
static bool uc_fd_is_dgram_unix(int fd)
{
	int type = 0, domain = 0;
	socklen_t len = sizeof(int);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len))
		return false;
	len = sizeof(int);
	return !getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) && domain == AF_UNIX &&
	       type == SOCK_DGRAM;
}

/*
 * Does descriptor @fd prove that its sender holds @qpn: is it a socket
 * bound to exactly the abstract name that holds it (qpn.c) in this
 * network namespace?  The kernel gives a name to one socket of a
 * namespace at a time, and only its holder can pass it on, so a claim
 * with this proof cannot be forged.  The namespace matters: a process
 * that can make one (unshare(2)) could bind the name there and pass that
 * socket here; SO_NETNS_COOKIE (Linux 5.14) tells them apart, an older
 * kernel (netns_cookie 0) does not.
 */
static bool uc_qpn_proven(const struct uc_leader *l, uint32_t qpn, int fd)
{
	struct sockaddr_un want, got;
	socklen_t wlen = roce_abstract_name(&want, ROCE_QPN_NAME_FMT, qpn), glen = sizeof(got);
	uint64_t cookie = 0;
	socklen_t clen = sizeof(cookie);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&got, &glen) || glen != wlen ||
	    memcmp(&got, &want, wlen))
		return false;
	return !l->netns_cookie ||
	       (!getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &clen) &&
		cookie == l->netns_cookie);
}

/* Do descriptors @a and @b name the same socket? */
static bool uc_same_socket(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void uc_fds_close(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			umc_fd_close(fds[i]);
}

/*
 * Answer request @m of @cl, which came with @nfd descriptors @fds: each is
 * kept or closed before the answer goes, so that none is left when the
 * sender learns it was handled.
 */
static void uc_lead_request(struct uc_leader *l, struct uc_client *cl, const struct roce_uc_msg *m,
			    int *fds, int nfd)
{
	struct roce_uc_msg r = {
	    .magic = ROCE_UC_MAGIC,
	    .version = ROCE_UC_VERSION,
	    .op = ROCE_UC_REPLY,
	    .seq = m->seq,
	    .pid = (uint32_t)getpid(),
	    .flags = l->udp >= 0 ? ROCE_UC_F_PORT : 0,
	};

	switch (m->op) {
	case ROCE_UC_HELLO:
		if (nfd < 1 || !uc_fd_is_dgram_unix(fds[0])) {
			r.status = -EINVAL;
			break;
		}
		if (cl->data >= 0)
			umc_fd_close(cl->data);
		cl->data = fds[0];
		fds[0] = -1;
		cl->self = uc_same_socket(cl->data, l->dom->uc->data_tx);
		/* qpn[0]: the index of its socket in the group it still holds. */
		if (m->count == 1)
			roce_uc_steer_return(l, cl, m->qpn[0]);
		roce_uc_steer_give(l, cl);
		break;
	case ROCE_UC_CLAIM:
		for (int i = 0; i < m->count; i++) {
			uint32_t q = m->qpn[i];
			struct uc_client *owner;
			int err = 0;

			if (q > 0xffffff || q == UMC_MCAST_QPN) {
				err = -EINVAL;
			} else if (!uc_qpn_proven(l, q, i < nfd ? fds[i] : -1)) {
				/* Not its QPN's socket: the QPN may be a live process's. */
				CNT(&l->dom->uc->rp->dev, uc_claim_refused);
				err = -EPERM;
			} else if ((owner = uc_tab_find(l, q)) == cl) {
				continue;
			} else {
				err = owner ? -EADDRINUSE : uc_tab_insert(l, q, cl);
			}
			if (err) {
				r.status = err;
				r.qpn[r.count++] = q;
			}
		}
		/* Steered before the answer: whoever learns the QPN from us finds it. */
		if (m->count && cl->sidx > 0)
			roce_uc_steer_program(l);
		break;
	case ROCE_UC_RELEASE:
		for (int i = 0; i < m->count; i++)
			uc_tab_del(l, m->qpn[i], cl);
		if (m->count && cl->sidx > 0)
			roce_uc_steer_program(l);
		break;
	default:
		r.status = -EINVAL;
		break;
	}
	uc_fds_close(fds, nfd);
	send(cl->ctl, &r, ROCE_UC_MSG_LEN(r.count), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Read and answer everything @cl sent; drop it on hang-up or nonsense. */
void roce_uc_lead_client(struct uc_leader *l, struct uc_client *cl)
{
	while (cl->ctl >= 0) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(UMC_UC_MSG_QPNS * sizeof(int))];
		} cb;
		struct roce_uc_msg m;
		struct iovec iov = {&m, sizeof(m)};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = cb.b,
				    .msg_controllen = sizeof(cb.b)};
		ssize_t n;
		int fds[UMC_UC_MSG_QPNS], nfd = 0;

		umc_fd_begin(); /* the descriptors passed with it are made here */
		n = recvmsg(cl->ctl, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n > 0)
			nfd = roce_take_fds(&mh, fds, UMC_UC_MSG_QPNS);
		for (int i = 0; i < nfd; i++)
			umc_fd_record(fds[i]);
		umc_fd_end(-1, false);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n >= (ssize_t)offsetof(struct roce_uc_msg, pid) && m.magic == ROCE_UC_MAGIC &&
		    m.version != ROCE_UC_VERSION) {
			struct roce_uc_msg r = {.magic = ROCE_UC_MAGIC,
						.version = ROCE_UC_VERSION,
						.op = ROCE_UC_REPLY,
						.seq = m.seq,
						.status = -EPROTONOSUPPORT};

			send(cl->ctl, &r, offsetof(struct roce_uc_msg, pid),
			     MSG_DONTWAIT | MSG_NOSIGNAL);
			n = 0;
		}
		if (n < (ssize_t)ROCE_UC_MSG_LEN(0) || m.magic != ROCE_UC_MAGIC ||
		    m.count > UMC_UC_MSG_QPNS || (size_t)n != ROCE_UC_MSG_LEN(m.count)) {
			uc_fds_close(fds, nfd);
			uc_client_drop(l, cl);
			return;
		}
		uc_lead_request(l, cl, &m, fds, nfd);
	}
}

/* Take every pending connection and claim: before a DestQP is declared unknown. */
static void uc_lead_drain(struct uc_leader *l)
{
	roce_uc_lead_accept(l);
	/* Backwards: a drop moves the last client into the hole. */
	for (int i = l->ncl - 1; i >= 0; i--)
		if (i < l->ncl)
			roce_uc_lead_client(l, l->cl[i]);
}

/* ------------------------------------------------------------------------- */
/* The demultiplexer: datagrams.                                             */

/*
 * sendmmsg a run of datagrams to one owner.  What a full queue does not
 * take is dropped (uc_fwd_dropped); an owner that is gone (its process died
 * before its hang-up was read) is dropped with its QPNs, and its datagrams
 * count as rx_no_qp, as after the hang-up.
 */
static void uc_send_run(struct uc_leader *l, struct uc_client *cl, struct mmsghdr *m, int n)
{
	struct umc_device *dev = &l->dom->uc->rp->dev;

	while (n > 0) {
		int r = cl->data >= 0
			    ? sendmmsg(cl->data, m, (unsigned)n, MSG_DONTWAIT | MSG_NOSIGNAL)
			    : (errno = ENOTCONN, -1);

		if (r > 0) {
			CNTN(dev, uc_forwarded, (unsigned long)r);
			m += r;
			n -= r;
		} else if (r < 0 && errno == EINTR) {
			continue;
		} else if (r < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
			CNTN(dev, uc_fwd_dropped, (unsigned long)n);
			return;
		} else {
			uc_client_drop(l, cl);
			CNTN(dev, rx_no_qp, (unsigned long)n);
			return;
		}
	}
}

/* Datagram @i of the batch, for @cl, into out slot @k. */
static void uc_lead_stage(struct uc_leader *l, int i, int k, struct uc_client *cl)
{
	struct umc_ip_ctx ip = {0};
	struct roce_uc_fwd *f = &l->fwd[k];

	umc_ip_ctx_from_msg(&l->rq.msg[i].msg_hdr, &ip, NULL);
	*f = l->fwd0;
	f->tclass = ip.tclass;
	f->hop_limit = ip.hop_limit;
	f->sport = ip.sport;
	f->flow_label = ip.flow_label;
	memcpy(f->src, ip.src, sizeof(f->src));
	l->siov[k][0] = (struct iovec){f, sizeof(*f)};
	l->siov[k][1] = (struct iovec){l->rq.buf[i], l->rq.msg[i].msg_len};
	l->smsg[k].msg_hdr = (struct msghdr){.msg_iov = l->siov[k], .msg_iovlen = 2};
	l->sdst[k] = cl;
}

void roce_uc_lead_forward(struct uc_leader *l)
{
	struct umc_device *dev = &l->dom->uc->rp->dev;

	for (int burst = 0; burst < 4; burst++) {
		bool drained = false;
		int n, k = 0;

		n = recvmmsg(l->udp, l->rq.msg, UMC_RX_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			const uint8_t *p = l->rq.buf[i];
			struct uc_client *cl;
			uint32_t qpn;

			if (umc_unlikely(l->rq.msg[i].msg_hdr.msg_flags & MSG_TRUNC)) {
				CNT(dev, rx_too_long);
				continue;
			}
			if (umc_unlikely(l->rq.msg[i].msg_len <
					 UMC_BTH_LEN + UMC_DETH_LEN + UMC_ICRC_LEN)) {
				CNT(dev, rx_malformed);
				continue;
			}
			qpn = (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
			if (umc_unlikely(qpn == UMC_MCAST_QPN)) {
				/* rxe: the multicast QPN to a unicast address finds no group. */
				CNT(dev, rx_no_group);
				continue;
			}
			cl = uc_tab_find(l, qpn);
			if (umc_unlikely(!cl) && !drained) {
				uc_lead_drain(l);
				drained = true;
				cl = uc_tab_find(l, qpn);
			}
			if (umc_unlikely(!cl)) {
				CNT(dev, rx_no_qp);
				continue;
			}
			uc_lead_stage(l, i, k++, cl);
		}
		for (int s = 0, e; s < k; s = e) {
			for (e = s + 1; e < k && l->sdst[e] == l->sdst[s]; e++)
				;
			uc_send_run(l, l->sdst[s], &l->smsg[s], e - s);
		}
		roce_rxq_reset(&l->rq, 0, n);
		if (n < UMC_RX_BATCH)
			return;
	}
}

/* Try to take addr:4791; on failure try again later (a closing predecessor, or rxe). */
void roce_uc_lead_bind(struct uc_leader *l)
{
	int fd = -1;

	if (roce_uc_steer_wanted())
		fd = roce_uc_steer_adopt(l);
	if (fd < 0) {
		/* Not all of a group here: a new one, once every process let go of the old. */
		roce_uc_dom_steer_drop(l->dom);
		fd = roce_uc_steer_wanted() ? roce_uc_steer_start(l)
					    : roce_uc_port_socket(l->dom, false);
	}

	if (fd >= 0 && !roce_uc_ep_add(fd, EPOLLIN, &l->tag_u)) {
		__atomic_store_n(&l->udp, fd, __ATOMIC_RELEASE);
		return;
	}
	if (fd >= 0) {
		/* An adopted group goes with its sockets: whoever comes next makes a new one. */
		for (int i = 1; i < l->nsock; i++)
			umc_fd_close(l->socks[i]);
		umc_fd_close(fd);
		l->udp = -1;
		l->adopting = false;
		roce_uc_steer_reset(l);
	}
	/* Refused for a second (not a predecessor closing): say so, once. */
	if (++l->bind_fails == UMC_UC_RETRY_SLOW_MS / UMC_UC_RETRY_MS && fd == -EADDRINUSE)
		roce_port_held((const struct sockaddr *)&l->dom->addr,
			       "unicast to this address cannot be received here");
	l->bind_at = uc_now_ms() + (l->bind_fails < UMC_UC_RETRY_SLOW_MS / UMC_UC_RETRY_MS
					? UMC_UC_RETRY_MS
					: UMC_UC_RETRY_SLOW_MS);
	atomic_store(&roce_uc_ag.pending, true);
}

/*
 * Become the demultiplexer of @d's address: bind the name (-EADDRINUSE:
 * another process has), listen, try addr:4791, publish to the agent.
 * Context: d->ctl_lock held.
 */
int roce_uc_lead_start(struct uc_dom *d)
{
	int lfd = UMC_FD_NEW(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), false);
	struct uc_leader *l;
	socklen_t clen;
	int ret;

	if (lfd < 0)
		return -errno;
	if (bind(lfd, (struct sockaddr *)&d->name, d->name_len) || listen(lfd, UMC_UC_BACKLOG)) {
		ret = -errno;
		umc_fd_close(lfd);
		return ret;
	}
	l = calloc(1, sizeof(*l));
	if (!l || uc_tab_alloc(l, UMC_UC_TABLE_MIN)) {
		free(l);
		umc_fd_close(lfd);
		return -ENOMEM;
	}
	l->dom = d;
	l->lfd = lfd;
	clen = sizeof(l->netns_cookie);
	if (getsockopt(lfd, SOL_SOCKET, SO_NETNS_COOKIE, &l->netns_cookie, &clen))
		l->netns_cookie = 0; /* before Linux 5.14: claims are checked by name only */
	l->udp = -1;
	l->tag_l = (struct uc_tag){UC_T_LISTEN, l};
	l->tag_u = (struct uc_tag){UC_T_UDP, l};
	l->fwd0.family = d->addr.ss_family == AF_INET ? 4 : 6;
	if (d->addr.ss_family == AF_INET)
		memcpy(l->fwd0.dst, &((struct sockaddr_in *)&d->addr)->sin_addr, 4);
	else
		memcpy(l->fwd0.dst, &((struct sockaddr_in6 *)&d->addr)->sin6_addr, 16);
	roce_rxq_init(&l->rq);
	/* Complete before the agent can see it: clients are served from the listener on. */
	roce_uc_lead_bind(l);
	ret = roce_uc_ep_add(lfd, EPOLLIN, &l->tag_l);
	if (ret) {
		if (l->udp >= 0) {
			roce_uc_ep_del(l->udp);
			for (int i = 1; i < l->nsock; i++)
				umc_fd_close(l->socks[i]);
			umc_fd_close(l->udp);
		}
		roce_uc_steer_reset(l);
		free(l->tab);
		free(l);
		umc_fd_close(lfd);
		return ret;
	}
	atomic_store(&d->lead, l);
	roce_uc_agent_wake();
	return 0;
}
